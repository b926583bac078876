/* checker — the disk-fault tests' publisher and checks (checker.h). */
#include "checker.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITEMS_MAX 16384
#define SAMPLE_NS (100 * MS)

void fchk_init(fchk *k, e2e *c, const char *stream, const char *prefix, int lossy)
{
    memset(k, 0, sizeof *k);
    k->c = c;
    k->stream = stream;
    k->prefix = prefix;
    k->lossy = lossy;
    k->faulty = -1;
    k->cap = ITEMS_MAX; /* fixed: callbacks hold pointers into it */
    k->items = calloc(k->cap, sizeof *k->items);
    k->by_seq_cap = 4 * ITEMS_MAX;
    k->by_seq = calloc(k->by_seq_cap, sizeof *k->by_seq);
    ck_assert_ptr_nonnull(k->items);
    ck_assert_ptr_nonnull(k->by_seq);
}

void fchk_free(fchk *k)
{
    free(k->items);
    free(k->by_seq);
    k->items = NULL;
    k->by_seq = NULL;
}

void fchk_failf(fchk *k, const char *fmt, ...)
{
    char msg[sizeof k->fail];
    int n = snprintf(msg, sizeof msg, "[t=%.3fs] ", (double)jr_sim_now(k->c->sim) / 1e9);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    /* the first one fails the test; the next few are printed, so one run shows what else broke */
    if (k->nfail++ < 12) fprintf(stderr, "  violation: %s\n", msg);
    if (!k->fail[0]) memcpy(k->fail, msg, sizeof msg);
}

size_t fchk_payload(size_t i, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "msg %zu ", i);
    size_t len = (size_t)n;
    for (size_t j = 0; len + 1 < cap && len < 200; j++)
        buf[len++] = (char)('a' + (i * 7 + j * 3) % 26);
    buf[len] = 0;
    return len;
}

static void subject_of(const fchk *k, size_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s.%zu", k->prefix, i % 17);
}

/* Publishing -----------------------------------------------------------------------------------*/

static void on_ack(void *arg, int status, const jr_pub_ack *ack)
{
    fchk_item *it = arg;
    if (it->done) fchk_failf(it->k, "message %zu: a publish callback ran twice", it->i);
    it->done = 1;
    it->status = status;
    it->seq = ack ? ack->seq : 0;
}

int fchk_publish(fchk *k, unsigned via, size_t i)
{
    ck_assert_uint_le(i, k->nitems);
    ck_assert_uint_lt(i, k->cap);
    fchk_item *it = &k->items[i];
    ck_assert_msg(!it->inflight, "message %zu is in flight already", i);
    jr_node *n = e2e_node(k->c, via);
    if (!n) return JR_EINVAL;
    char subject[64], data[256], id[32];
    subject_of(k, i, subject, sizeof subject);
    size_t len = fchk_payload(i, data, sizeof data);
    snprintf(id, sizeof id, "m-%zu", i);
    jr_pub_opts o;
    jr_pub_opts_init(&o);
    o.msg_id = id;
    it->k = k;
    it->i = i;
    it->done = 0;
    it->status = 0;
    it->seq = 0;
    int rc = jr_publish(n, subject, NULL, 0, data, len, &o, on_ack, it);
    if (rc == 0) it->inflight = 1;
    if (i == k->nitems && rc == 0) k->nitems++;
    return rc;
}

static void record_ack(fchk *k, fchk_item *it, uint64_t seq)
{
    if (seq == 0) {
        fchk_failf(k, "message %zu acknowledged at seq 0", it->i);
        return;
    }
    if (it->acked && it->acked != seq && !k->lossy)
        fchk_failf(k, "message %zu acknowledged at seq %llu and at seq %llu", it->i,
                   (unsigned long long)it->acked, (unsigned long long)seq);
    if (!it->acked) it->acked = seq;
    k->acks++;
    if (seq > k->by_seq_cap) {
        fchk_failf(k, "seq %llu beyond what the checker tracks", (unsigned long long)seq);
        return;
    }
    size_t *slot = &k->by_seq[seq - 1];
    if (*slot && *slot != it->i + 1 && !k->lossy && k->reused++ == 0)
        fchk_failf(k, "seq %llu reused: acknowledged for message %zu, then for message %zu",
                   (unsigned long long)seq, *slot - 1, it->i);
    if (!*slot || k->lossy) *slot = it->i + 1;
}

size_t fchk_collect(fchk *k)
{
    size_t idle = 0;
    for (size_t i = 0; i < k->nitems; i++) {
        fchk_item *it = &k->items[i];
        if (it->inflight && it->done) {
            it->inflight = 0;
            if (it->status == 0) record_ack(k, it, it->seq);
        }
        if (!it->inflight && !it->acked) idle++;
    }
    return idle;
}

static size_t acked_count(const fchk *k)
{
    size_t n = 0;
    for (size_t i = 0; i < k->nitems; i++) n += k->items[i].acked != 0;
    return n;
}

size_t fchk_publish_n(fchk *k, unsigned via, size_t count, size_t window, int watch_via,
                      uint64_t max_ns)
{
    size_t base = acked_count(k), target = k->nitems + count;
    uint64_t end = jr_sim_now(k->c->sim) + max_ns, next_watch = 0;
    while (acked_count(k) < base + count && jr_sim_now(k->c->sim) < end) {
        size_t out = 0;
        for (size_t i = 0; i < k->nitems; i++) out += k->items[i].inflight;
        /* re-send what failed first, then new messages */
        for (size_t i = 0; i < k->nitems && out < window; i++) {
            fchk_item *it = &k->items[i];
            if (it->inflight || it->acked) continue;
            if (fchk_publish(k, via, i) == 0) out++;
        }
        while (out < window && k->nitems < target && k->nitems < k->cap) {
            if (fchk_publish(k, via, k->nitems) != 0) break;
            out++;
        }
        jr_sim_run_for(k->c->sim, 5 * MS);
        fchk_collect(k);
        if (watch_via >= 0 && jr_sim_now(k->c->sim) >= next_watch) {
            fchk_watch(k, (unsigned)watch_via);
            next_watch = jr_sim_now(k->c->sim) + SAMPLE_NS;
        }
    }
    return acked_count(k) - base;
}

/* Damage reporting -----------------------------------------------------------------------------*/

void fchk_fault(fchk *k, unsigned node)
{
    k->faulty = (int)node;
    k->damaged_seen = 0;
    k->repaired = 0;
    k->fault_at = jr_sim_now(k->c->sim);
    k->restart_at = k->fault_at;
}

void fchk_restarted(fchk *k)
{
    k->restart_at = jr_sim_now(k->c->sim);
}

int fchk_damaged(fchk *k, unsigned i)
{
    jr_group *g = e2e_group(k->c, i, k->stream);
    if (!g) return -1;
    jr_group_status st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    if (jr_group_status_get(g, &st) != 0) return -1;
    return st.damaged || st.unvouched;
}

/* The "Replica: <name>, ..." line of the info text into line (empty if none). */
static void replica_line(const char *text, const char *name, char *line, size_t cap)
{
    char key[80];
    snprintf(key, sizeof key, "Replica: %s", name);
    line[0] = 0;
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
        char after = p[strlen(key)];
        if (after != ',' && after != ' ') continue; /* "n1" must not match "n10" */
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(line, cap, "%.*s", (int)n, p);
        return;
    }
}

void fchk_leaders(fchk *k)
{
    for (unsigned i = 0; i < k->c->n; i++) {
        jr_group *g = e2e_node(k->c, i) ? e2e_group(k->c, i, k->stream) : NULL;
        jr_group_status st;
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        if (!g || jr_group_status_get(g, &st) != 0) continue;
        if (st.role == JR_LEADER && st.damaged && k->damaged_leads++ == 0)
            fchk_failf(k,
                       "n%u reports itself leader of the stream's group while damaged (term %llu)",
                       i, (unsigned long long)st.term);
    }
}

void fchk_watch(fchk *k, unsigned via)
{
    fchk_leaders(k);
    if (k->faulty < 0) return;
    unsigned f = (unsigned)k->faulty;
    int d = fchk_damaged(k, f);
    if (d == 1) k->damaged_seen = 1;
    if (d == 0 && k->damaged_seen) k->repaired = 1;
    if (!e2e_node(k->c, via)) return;
    e2e_res r;
    if (e2e_info(k->c, via, k->stream, &r) != 0 || !r.leader[0]) return;
    d = fchk_damaged(k, f); /* the info call ran the simulation */
    if (d == 1) k->damaged_seen = 1;
    if (d == 0 && k->damaged_seen) k->repaired = 1;
    if (k->repaired || (!k->damaged_seen && d != 1 && !k->strict)) return;
    uint64_t now = jr_sim_now(k->c->sim), since = k->restart_at + k->grace_ns;
    if (now < since) return;
    const char *name = jr_sim_name(k->c->sim, f);
    int leading = !strcmp(r.leader, name);
    if (leading && k->shown_current++ == 0)
        fchk_failf(k,
                   "stream info asked on n%u shows the faulty replica %s leading (group damaged = "
                   "%d, %.3f s after the fault):\n%s",
                   via, name, d, (double)(now - k->fault_at) / 1e9, r.text);
    if (leading) return;
    int rep = -1;
    for (size_t i = 0; i < r.nreplicas && i < 8; i++)
        if (!strcmp(r.reps[i].name, name)) rep = (int)i;
    /* The contact rule: the leader learns of the restart from the replica's VOUCH, so a leader
     * that has not heard from it since (its last contact, now - active_ns, is no later than the
     * restart and the grace) cannot know yet; such a sample does not count and breaks a run. */
    uint64_t active = rep >= 0 ? r.reps[rep].active_ns : UINT64_MAX;
    if (active > now || now - active < since) {
        k->current_run = k->unflagged_run = 0;
        return;
    }
    /* current from the current_samples-th sample in a row */
    k->current_run = r.reps[rep].current ? k->current_run + 1 : 0;
    unsigned need_current = k->current_samples ? k->current_samples : 1;
    if (r.reps[rep].current && k->current_run >= need_current && k->shown_current++ == 0)
        fchk_failf(k,
                   "stream info asked on n%u shows the faulty replica %s current (group damaged = "
                   "%d, %.3f s after the fault, last heard from %.3f s after its restart, %u "
                   "samples in a row):\n%s",
                   via, name, d, (double)(now - k->fault_at) / 1e9,
                   ((double)(now - active) - (double)k->restart_at) / 1e9, k->current_run, r.text);
    char line[256];
    replica_line(r.text, name, line, sizeof line);
    int unflagged = d == 1 && line[0] && !strstr(line, "damaged") && !strstr(line, "unvouched");
    if (!unflagged || strcmp(r.leader, k->unflagged_leader)) k->unflagged_run = 0;
    snprintf(k->unflagged_leader, sizeof k->unflagged_leader, "%s", r.leader);
    if (unflagged && k->unflagged_run++ == 0) k->unflagged_since = now;
    if (unflagged && now - k->unflagged_since >= k->unflagged_ns && k->unflagged++ == 0)
        fchk_failf(k,
                   "%s's group is damaged or unvouched, its replica line in the info asked on n%u "
                   "(leader %s) says neither (%u samples in a row, %.3f s): '%s'",
                   name, via, r.leader, k->unflagged_run, (double)(now - k->unflagged_since) / 1e9,
                   line);
}

static int watch_damaged(fchk *k, unsigned via, uint64_t max_ns)
{
    uint64_t end = jr_sim_now(k->c->sim) + max_ns;
    for (;;) {
        fchk_watch(k, via);
        if (k->damaged_seen) return 0;
        if (jr_sim_now(k->c->sim) >= end) return JR_ETIMEDOUT;
        jr_sim_run_for(k->c->sim, SAMPLE_NS);
    }
}

int fchk_expect_damaged(fchk *k, unsigned via, uint64_t max_ns)
{
    ck_assert_int_ge(k->faulty, 0);
    int rc = watch_damaged(k, via, max_ns);
    if (rc != 0)
        fchk_failf(k,
                   "n%d lost synced records but its group was not reported damaged within "
                   "%.1f s of the fault (group status damaged = %d)",
                   k->faulty, (double)max_ns / 1e9, fchk_damaged(k, (unsigned)k->faulty));
    return rc;
}

/* Final checks ---------------------------------------------------------------------------------*/

/* Replicas not reported damaged, their digests; 1 if they all agree and every node is up with a
 * replica. */
static int agree(fchk *k, const unsigned *nodes, size_t n, uint64_t *digest)
{
    int ok = 1;
    uint64_t first = 0;
    int have = 0;
    for (size_t j = 0; j < n; j++) {
        digest[j] = 0;
        if (!e2e_node(k->c, nodes[j]) || !e2e_has_replica(k->c, nodes[j], k->stream)) {
            ok = 0;
            continue;
        }
        if (fchk_damaged(k, nodes[j]) == 1) continue;
        if (e2e_digest(k->c, nodes[j], k->stream, &digest[j]) != 0) ok = 0;
        if (!have) first = digest[j];
        have = 1;
        if (digest[j] != first) ok = 0;
    }
    return ok && have;
}

static void check_stores(fchk *k, const unsigned *nodes, size_t n)
{
    size_t cap = k->by_seq_cap;
    uint64_t *ref = calloc(cap, sizeof *ref), *sums = calloc(cap, sizeof *sums);
    ck_assert_ptr_nonnull(ref);
    ck_assert_ptr_nonnull(sums);
    int64_t ref_last = -1;
    unsigned ref_node = 0;
    int bad = 0;
    for (size_t j = 0; j < n && !bad; j++) {
        if (fchk_damaged(k, nodes[j]) != 0) continue;
        int64_t last = e2e_checksums(k->c, nodes[j], k->stream, sums, cap);
        if (last < 0) {
            fchk_failf(k, "n%u: cannot read its store: %s", nodes[j], jr_err_name((int)last));
            bad = 1;
            break;
        }
        if (ref_last < 0) {
            memcpy(ref, sums, cap * sizeof *ref);
            ref_last = last;
            ref_node = nodes[j];
            continue;
        }
        if (last != ref_last) {
            fchk_failf(k, "stores differ: n%u's last seq is %lld, n%u's %lld", ref_node,
                       (long long)ref_last, nodes[j], (long long)last);
            bad = 1;
        }
        for (size_t q = 0; q < cap && !bad; q++)
            if (sums[q] != ref[q] && (bad = 1) != 0)
                fchk_failf(k, "stores differ at seq %zu: n%u %s, n%u %s", q + 1, ref_node,
                           ref[q] ? "holds a message" : "holds none", nodes[j],
                           sums[q] ? (ref[q] ? "another one" : "holds one") : "holds none");
    }
    free(ref);
    free(sums);
}

static void check_acked(fchk *k, const unsigned *nodes, size_t n, unsigned via)
{
    uint64_t lost[E2E_MAX] = {0}, other[E2E_MAX] = {0}, first_lost[E2E_MAX] = {0},
             first_other[E2E_MAX] = {0}, total = 0, bad_reads = 0;
    int errs[E2E_MAX] = {0};
    size_t checked = 0;
    for (size_t q = 0; q < k->by_seq_cap; q++) {
        if (!k->by_seq[q]) continue;
        size_t i = k->by_seq[q] - 1;
        uint64_t seq = q + 1;
        char want[256], want_subject[64];
        fchk_payload(i, want, sizeof want);
        subject_of(k, i, want_subject, sizeof want_subject);
        total++;
        for (size_t j = 0; j < n; j++) {
            char subject[64], data[256];
            int damaged = fchk_damaged(k, nodes[j]) == 1;
            int rc = e2e_local_get(k->c, nodes[j], k->stream, seq, subject, sizeof subject, data,
                                   sizeof data);
            /* a damaged replica not yet repaired may lack it, or report its damage */
            if (damaged && (rc == JR_ENOTFOUND || rc == JR_ECORRUPT)) continue;
            if (rc != 0) {
                if (!lost[j]++) first_lost[j] = seq;
                errs[j] = rc;
            } else if (strcmp(data, want) || strcmp(subject, want_subject)) {
                if (!other[j]++) first_other[j] = seq;
            }
        }
        /* and a sample through the public read path */
        if (checked++ % 37 == 0 && e2e_node(k->c, via)) {
            e2e_res r;
            int st = e2e_msg_get(k->c, via, k->stream, seq, &r);
            k->reads++;
            if (st != 0 || r.len != strlen(want) || memcmp(r.data, want, r.len)) {
                if (!bad_reads++)
                    fchk_failf(k, "reading acknowledged seq %llu through n%u: %s",
                               (unsigned long long)seq, via, st ? jr_err_name(st) : "other bytes");
            }
        }
    }
    for (size_t j = 0; j < n; j++) {
        if (lost[j])
            fchk_failf(k, "n%u lost %llu of %llu acknowledged messages (first at seq %llu: %s)",
                       nodes[j], (unsigned long long)lost[j], (unsigned long long)total,
                       (unsigned long long)first_lost[j], jr_err_name(errs[j]));
        if (other[j])
            fchk_failf(k, "n%u holds other bytes at %llu of %llu acknowledged seqs (first: %llu)",
                       nodes[j], (unsigned long long)other[j], (unsigned long long)total,
                       (unsigned long long)first_other[j]);
    }
    if (bad_reads)
        fchk_failf(k, "%llu of %zu public reads of acknowledged seqs failed or differed",
                   (unsigned long long)bad_reads, (size_t)k->reads);
}

/* The first of the n nodes whose replica group reports damaged or unvouched (or has none, or is
 * down); -1 if every one reports whole. */
static int first_unwhole(fchk *k, const unsigned *nodes, size_t n)
{
    for (size_t j = 0; j < n; j++)
        if (fchk_damaged(k, nodes[j]) != 0) return (int)j;
    return -1;
}

void fchk_final(fchk *k, const unsigned *nodes, size_t n, unsigned via, uint64_t settle_ns)
{
    uint64_t digest[E2E_MAX];
    uint64_t end = jr_sim_now(k->c->sim) + settle_ns;
    int ok = 0;
    for (;;) {
        fchk_collect(k);
        fchk_watch(k, via);
        if ((ok = agree(k, nodes, n, digest)) != 0 &&
            (!k->require_whole || first_unwhole(k, nodes, n) < 0))
            break;
        if (jr_sim_now(k->c->sim) >= end) break;
        jr_sim_run_for(k->c->sim, SAMPLE_NS);
    }
    /* a few more samples once they agree: the damaged replica stays visible */
    for (int s = 0; s < 5; s++) {
        jr_sim_run_for(k->c->sim, SAMPLE_NS);
        fchk_collect(k);
        fchk_watch(k, via);
    }
    ok = agree(k, nodes, n, digest);
    if (!ok) {
        char buf[512];
        size_t m = 0;
        for (size_t j = 0; j < n && m < sizeof buf; j++)
            m += (size_t)snprintf(buf + m, sizeof buf - m, " n%u %016llx%s", nodes[j],
                                  (unsigned long long)digest[j],
                                  fchk_damaged(k, nodes[j]) == 1 ? " (damaged)" : "");
        fchk_failf(k, "replicas did not converge within %.0f s of healing:%s",
                   (double)settle_ns / 1e9, buf);
    }
    int u = k->require_whole ? first_unwhole(k, nodes, n) : -1;
    if (u >= 0) {
        char line[512];
        e2e_describe(k->c, nodes[u], k->stream, line, sizeof line);
        fchk_failf(k, "n%u is not whole %.0f s after healing (%s): %s", nodes[u],
                   (double)settle_ns / 1e9,
                   fchk_damaged(k, nodes[u]) < 0 ? "no replica" : "damaged or unvouched", line);
    }
    size_t open = 0;
    for (size_t i = 0; i < k->nitems; i++)
        if (k->items[i].inflight && !open++)
            fchk_failf(k, "the publish of message %zu never completed", i);
    if (k->reused > 1) fchk_failf(k, "%llu seqs reused in all", (unsigned long long)k->reused);
    if (k->shown_current > 1)
        fchk_failf(k, "the faulty replica was shown current or leading in %llu samples",
                   (unsigned long long)k->shown_current);
    if (k->unflagged > 1)
        fchk_failf(k, "the damaged replica's line lacked \"damaged\" in %llu samples",
                   (unsigned long long)k->unflagged);
    if (ok) check_stores(k, nodes, n);
    if (!k->lossy) check_acked(k, nodes, n, via);
}

void fchk_dump(fchk *k, const unsigned *nodes, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        char line[512];
        e2e_describe(k->c, nodes[j], k->stream, line, sizeof line);
        fprintf(stderr, "  %s\n", line);
    }
}
