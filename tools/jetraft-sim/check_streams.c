/*
 * check_streams.c — the final reads of the data streams after healing, and the publish
 * checkers over them and the history.
 *
 * Final reads: the stream's info from its leader (state and replicas), then every seq from
 * first to last + 1 read linearizably (jr_stream_msg_get) and, through each replica's own
 * server, with a direct get (jr_stream_direct_get: that server's replica answers when it is
 * current, and after the heal and the settle every replica is).
 *
 * Checkers:
 *  - present: every acknowledged publish is in the stream exactly once, at its acknowledged
 *    seq (unless a message delete or purge that may have taken effect covers it);
 *  - definite: a value whose every publish failed definitely (JR_ENOQUORUM, an expectation,
 *    a validation error...) is not in the stream;
 *  - unexpected: the stream holds nothing that was never published;
 *  - unique-seq: no seq is acknowledged for two values;
 *  - order: seqs follow the real-time order of acknowledgements: if A's ack came before B was
 *    first published, A's seq is below B's;
 *  - converge: every replica holds the same message at every seq, and nothing after the last;
 *  - lost writes, classified per process as Jepsen does (prefix: before the first value of
 *    the process read, middle: between its first and last read, postfix: after the last
 *    read), overall and per replica (lost-on-node).
 */
#include <stdlib.h>
#include <string.h>

#include "jsim.h"

typedef struct rd {
    int done, status;
    int64_t value; /* -1 not found, -2 unreadable, -3 foreign */
} rd;

static void rd_cb(void *arg, int status, const char *msg, const jr_stored_msg *m)
{
    (void)msg;
    rd *r = arg;
    world *w = g_w;
    r->done = 1;
    r->status = status;
    if (status == 0 && m) {
        r->value = payload_value(w, m->data, m->len);
        char subject[32];
        if (r->value >= 0)
            snprintf(subject, sizeof subject, "d%d.%u", w->vals[r->value].ds,
                     w->vals[r->value].subj);
        if (r->value < 0 || !m->subject || strcmp(m->subject, subject) != 0) r->value = -3;
    } else {
        r->value = status == JR_ENOTFOUND ? -1 : -2;
    }
}

typedef struct info_res {
    int done, status;
    char leader[16];
    char reps[MAXN][16];
    size_t nreps;
    uint64_t first, last, msgs;
    unsigned current;
} info_res;

static void info_cb(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    (void)msg;
    info_res *r = arg;
    r->done = 1;
    r->status = status;
    if (status != 0 || !info) return;
    r->first = info->state->first_seq;
    r->last = info->state->last_seq;
    r->msgs = info->state->msgs;
    if (info->cluster && info->cluster->leader)
        snprintf(r->leader, sizeof r->leader, "%s", info->cluster->leader);
    for (size_t i = 0; info->cluster && i < info->cluster->nreplicas && r->nreps < MAXN; i++) {
        /* a removed server left among the peers (not re-placed) holds no copy to check */
        int x = jr_sim_index(g_w->sim, info->cluster->replicas[i]->name);
        if (x >= 0 && g_w->removed[x]) continue;
        snprintf(r->reps[r->nreps], sizeof r->reps[0], "%s", info->cluster->replicas[i]->name);
        r->current += info->cluster->replicas[i]->current != 0;
        r->nreps++;
    }
}

/* The stream's info through a random node, until it has a leader and every replica current
 * (or max_ns passed: then with a leader, any replicas, and *all_current 0): 0 or JR_ETIMEDOUT. */
static int stream_settled(world *w, const char *name, info_res *out, uint64_t max_ns,
                          int *all_current)
{
    uint64_t end = now_ns(w) + max_ns, hard = end + 30 * SEC;
    *all_current = 1;
    while (now_ns(w) < hard) {
        int node = pick_node(w);
        if (node >= 0) {
            info_res *r = calloc(1, sizeof *r);
            if (!r) exit(3);
            if (jr_stream_info_get(jr_sim_node(w->sim, (unsigned)node), name, info_cb, r) == 0) {
                wait_flag(w, &r->done, 30 * SEC);
                if (!r->done) return JR_ETIMEDOUT; /* r stays allocated: it may still answer */
                if (r->status == 0 && r->leader[0] &&
                    (r->current == r->nreps || now_ns(w) >= end)) {
                    *all_current = r->current == r->nreps;
                    *out = *r;
                    free(r);
                    return 0;
                }
            }
            free(r);
        }
        jr_sim_run_for(w->sim, 100 * MS);
    }
    return JR_ETIMEDOUT;
}

/* Reads seqs [1, n] of stream `name` through node `via` (direct: its replica; else
 * linearizably, at the leader) into out[seq - 1], retrying errors. 0, or JR_ETIMEDOUT if a read
 * never completed (out then stays allocated, as a callback may still come). */
static int read_all(world *w, const char *name, uint64_t n, int direct, unsigned via, int64_t *out)
{
    const size_t window = 64;
    rd *r = calloc(n, sizeof *r);
    uint8_t *state = calloc(n, 1); /* 0 to issue, 1 in flight, 2 read */
    unsigned *tries = calloc(n, sizeof *tries);
    if (!r || !state || !tries) exit(3);
    uint64_t done = 0, cursor = 0, end = now_ns(w) + 300 * SEC;
    size_t inflight = 0;
    while (done < n && now_ns(w) < end) {
        for (uint64_t scanned = 0; inflight < window && scanned < n; scanned++) {
            uint64_t s = cursor;
            cursor = (cursor + 1) % n;
            if (state[s] != 0) continue;
            /* JR_ENOTFOUND also means "no such stream" on a server whose meta state lacks it
             * (a damaged meta replica), so the linearizable reads go through the leader's
             * server (they are forwarded if it lost the leadership), the direct ones through
             * the replica's own */
            int node = (int)via;
            if (!direct && !node_up(w, via)) node = pick_node(w);
            if (node < 0 || !node_up(w, (unsigned)node)) break;
            memset(&r[s], 0, sizeof r[s]);
            state[s] = 1;
            tries[s]++;
            inflight++;
            jr_node *nd = jr_sim_node(w->sim, (unsigned)node);
            int rc = direct ? jr_stream_direct_get(nd, name, s + 1, NULL, rd_cb, &r[s])
                            : jr_stream_msg_get(nd, name, s + 1, rd_cb, &r[s]);
            if (rc != 0) rd_cb(&r[s], rc, NULL, NULL);
        }
        jr_sim_run_for(w->sim, MS);
        for (uint64_t s = 0; s < n; s++) {
            if (state[s] != 1 || !r[s].done) continue;
            inflight--;
            if (r[s].value == -2 && tries[s] < 5) {
                state[s] = 0; /* an error (a timeout, no leader): read it again */
                continue;
            }
            state[s] = 2;
            out[s] = r[s].value;
            done++;
        }
    }
    free(state);
    free(tries);
    if (done < n) return JR_ETIMEDOUT; /* r stays allocated: a read may still answer */
    free(r);
    return 0;
}

/* Rounds of the final read before differences are reported: a difference in an earlier round is
 * taken as the stream still changing, and read again a second later. */
#define FINAL_ROUNDS 3

/* Round `round` (from 1) of the final read of stream d: its settled info, every seq up to last + 1
 * at the leader (linearizable) into d->at, then each holder's replica (direct) compared with it. 0
 * with *ndiff the holders that differ (their violations reported only in the last round; before it
 * the round is taken again: an op of unknown outcome still in flight when the workload stopped, a
 * publish its requester gave up on, may commit between the leader's read and a holder's), or
 * JR_ETIMEDOUT after a liveness violation. */
static int final_round(world *w, dstream *d, int round, size_t *ndiff)
{
    int report = round == FINAL_ROUNDS;
    *ndiff = 0;
    info_res info;
    int all_current;
    if (stream_settled(w, d->name, &info, 60 * SEC, &all_current) != 0) {
        violation(w, "liveness", d->name, -1, 0, -1, "no leader within 90 s of the heal");
        return JR_ETIMEDOUT;
    }
    if (!all_current && round == 1)
        violation(w, "repair", d->name, -1, 0, -1, "%u of %zu replicas current 60 s after the heal",
                  info.current, info.nreps);
    d->first_seq = info.first;
    d->last_seq = info.last;
    d->msgs = info.msgs;
    d->nholders = 0;
    int li = jr_sim_index(w->sim, info.leader);
    if (li >= 0) d->holders[d->nholders++] = (unsigned)li;
    for (size_t i = 0; i < info.nreps; i++) {
        int x = jr_sim_index(w->sim, info.reps[i]);
        if (x >= 0 && d->nholders < MAXN) d->holders[d->nholders++] = (unsigned)x;
    }
    /* every seq up to last + 1 (which must not exist) */
    uint64_t n = d->last_seq + 1;
    free(d->at);
    d->at = malloc(n * sizeof *d->at);
    if (!d->at) exit(3);
    if (read_all(w, d->name, n, 0, d->nholders ? d->holders[0] : 0, d->at) != 0) {
        violation(w, "liveness", d->name, -1, 0, -1, "a linearizable read never completed");
        return JR_ETIMEDOUT;
    }
    if (d->at[n - 1] != -1) {
        ++*ndiff;
        if (report)
            violation(w, "converge", d->name, -1, n, -1,
                      "the leader's read of seq %llu (after last_seq) found a message",
                      (unsigned long long)n);
    }
    int64_t *node_at = malloc(n * sizeof *node_at);
    if (!node_at) exit(3);
    for (size_t h = 0; h < d->nholders; h++) {
        unsigned x = d->holders[h];
        if (read_all(w, d->name, n, 1, x, node_at) != 0) {
            violation(w, "liveness", d->name, -1, 0, -1, "a direct get through n%u never completed",
                      x);
            return JR_ETIMEDOUT;
        }
        uint64_t lost_on_node = 0, diff = 0, first_diff = 0;
        for (uint64_t s = 0; s < n; s++) {
            if (node_at[s] == d->at[s]) continue;
            diff++;
            if (!first_diff) first_diff = s + 1;
            if (d->at[s] >= 0 && node_at[s] == -1) lost_on_node++;
        }
        if (diff) {
            ++*ndiff;
            int64_t v = d->at[first_diff - 1] >= 0 ? d->at[first_diff - 1] : -1;
            if (report)
                violation(w, "converge", d->name, v, first_diff, -1,
                          "replica on n%u differs from the leader at %llu seqs (first seq %llu: "
                          "leader %lld, n%u %lld; %llu messages lost on the node)",
                          x, (unsigned long long)diff, (unsigned long long)first_diff,
                          (long long)d->at[first_diff - 1], x, (long long)node_at[first_diff - 1],
                          (unsigned long long)lost_on_node);
        }
    }
    free(node_at);
    return 0;
}

int streams_final_read(world *w)
{
    for (unsigned k = 0; k < w->nds; k++) {
        dstream *d = &w->ds[k];
        size_t ndiff = 0;
        for (int round = 1;; round++) {
            int rc = final_round(w, d, round, &ndiff);
            if (rc != 0) return rc;
            if (!ndiff || round == FINAL_ROUNDS) break;
            jr_sim_run_for(w->sim, SEC);
        }
        uint64_t n = d->last_seq + 1;
        if (w->hist)
            for (uint64_t s = 0; s < n; s++)
                if (d->at[s] != -1)
                    fprintf(w->hist,
                            "{\"t\":%llu,\"ev\":\"final\",\"stream\":\"%s\",\"seq\":%llu,"
                            "\"value\":%lld}\n",
                            (unsigned long long)(now_ns(w) - w->t0), d->name,
                            (unsigned long long)(s + 1), (long long)d->at[s]);
    }
    return 0;
}

/* Checkers
 * ---------------------------------------------------------------------------------------*/

static int by_ok(const void *a, const void *b)
{
    const value *x = *(value *const *)a, *y = *(value *const *)b;
    return x->ok_ns < y->ok_ns ? -1 : x->ok_ns > y->ok_ns;
}

static int by_invoke(const void *a, const void *b)
{
    const value *x = *(value *const *)a, *y = *(value *const *)b;
    return x->first_invoke_ns < y->first_invoke_ns ? -1 : x->first_invoke_ns > y->first_invoke_ns;
}

static void check_order(world *w, unsigned k)
{
    size_t m = 0;
    value **a = malloc((w->nvals + 1) * sizeof *a), **b = malloc((w->nvals + 1) * sizeof *b);
    if (!a || !b) exit(3);
    for (size_t i = 0; i < w->nvals; i++)
        if (w->vals[i].ds == (int)k && w->vals[i].ok) a[m] = b[m] = &w->vals[i], m++;
    qsort(a, m, sizeof *a, by_ok);
    qsort(b, m, sizeof *b, by_invoke);
    size_t j = 0;
    const value *maxv = NULL;
    for (size_t i = 0; i < m; i++) {
        while (j < m && a[j]->ok_ns < b[i]->first_invoke_ns) {
            if (!maxv || a[j]->ok_seq > maxv->ok_seq) maxv = a[j];
            j++;
        }
        if (maxv && maxv->ok_seq >= b[i]->ok_seq) {
            violation(w, "order", w->ds[k].name, b[i] - w->vals, b[i]->ok_seq, -1,
                      "v%lld was acknowledged at seq %llu (%.3f s) before v%lld was first "
                      "published (%.3f s), which got seq %llu",
                      (long long)(maxv - w->vals), (unsigned long long)maxv->ok_seq,
                      rel_s(w, maxv->ok_ns), (long long)(b[i] - w->vals),
                      rel_s(w, b[i]->first_invoke_ns), (unsigned long long)b[i]->ok_seq);
            break;
        }
    }
    free(a);
    free(b);
}

void check_streams(world *w)
{
    uint64_t lost[3] = {0}, nacked = 0, nlost = 0, unknown_stored = 0;
    for (unsigned k = 0; k < w->nds; k++) {
        dstream *d = &w->ds[k];
        if (!d->at) continue;
        uint64_t n = d->last_seq + 1;
        for (size_t v = 0; v < w->nvals; v++) w->vals[v].found = 0;
        for (uint64_t s = 0; s < n; s++) {
            int64_t v = d->at[s];
            if (v == -3)
                violation(w, "unexpected", d->name, -1, s + 1, -1,
                          "seq %llu holds a message no client published (or a damaged one)",
                          (unsigned long long)(s + 1));
            if (v == -2)
                violation(w, "liveness", d->name, -1, s + 1, -1, "seq %llu is unreadable",
                          (unsigned long long)(s + 1));
            if (v < 0) continue;
            value *x = &w->vals[v];
            if (x->ds != (int)k)
                violation(w, "unexpected", d->name, v, s + 1, -1,
                          "v%lld (published to D%d) is in %s at seq %llu", (long long)v, x->ds,
                          d->name, (unsigned long long)(s + 1));
            x->found++;
            x->found_seq = s + 1;
            if (x->found == 2)
                violation(w, "present", d->name, v, s + 1, -1,
                          "v%lld is stored twice (again at seq %llu)", (long long)v,
                          (unsigned long long)(s + 1));
        }
        /* unique seqs */
        uint64_t maxseq = 0;
        for (size_t v = 0; v < w->nvals; v++)
            if (w->vals[v].ds == (int)k && w->vals[v].ok && w->vals[v].ok_seq > maxseq)
                maxseq = w->vals[v].ok_seq;
        int64_t *acked_at = malloc((maxseq + 1) * sizeof *acked_at);
        if (!acked_at) exit(3);
        for (uint64_t s = 0; s <= maxseq; s++) acked_at[s] = -1;
        for (size_t v = 0; v < w->nvals; v++) {
            value *x = &w->vals[v];
            if (x->ds != (int)k || x->proc < 0) continue;
            if (x->ok) {
                nacked++;
                if (acked_at[x->ok_seq] >= 0)
                    violation(w, "unique-seq", d->name, (int64_t)v, x->ok_seq, -1,
                              "seq %llu acknowledged for v%lld and for v%zu",
                              (unsigned long long)x->ok_seq, (long long)acked_at[x->ok_seq], v);
                acked_at[x->ok_seq] = (int64_t)v;
            }
            if (x->ok && x->found && x->found_seq != x->ok_seq)
                violation(w, "present", d->name, (int64_t)v, x->ok_seq, -1,
                          "v%zu acknowledged at seq %llu is stored at seq %llu", v,
                          (unsigned long long)x->ok_seq, (unsigned long long)x->found_seq);
            if (!x->ok && x->found && x->attempts && x->definite == x->attempts)
                violation(w, "definite", d->name, (int64_t)v, x->found_seq, -1,
                          "v%zu is stored at seq %llu although every publish of it failed "
                          "definitely",
                          v, (unsigned long long)x->found_seq);
            if (!x->ok && x->found) unknown_stored++;
        }
        free(acked_at);
        /* lost writes per process, classified by the process's reads */
        for (unsigned p = 0; p < w->nprocs; p++) {
            int64_t first = -1, last = -1;
            for (size_t v = 0; v < w->nvals; v++) {
                value *x = &w->vals[v];
                if (x->ds != (int)k || x->proc != (int)p || !x->found) continue;
                if (first < 0 || x->counter < first) first = x->counter;
                if ((int64_t)x->counter > last) last = x->counter;
            }
            for (size_t v = 0; v < w->nvals; v++) {
                value *x = &w->vals[v];
                if (x->ds != (int)k || x->proc != (int)p || !x->ok || x->found || x->excluded)
                    continue;
                int cls = first < 0 || (int64_t)x->counter < first ? 0
                          : (int64_t)x->counter > last             ? 2
                                                                   : 1;
                lost[cls]++;
                nlost++;
                static const char *const cn[] = {"prefix", "middle", "postfix"};
                violation(w, "present", d->name, (int64_t)v, x->ok_seq, -1,
                          "v%zu (process %u, #%u) acknowledged at seq %llu is lost (lost-%s: "
                          "the process's reads span #%lld..#%lld)",
                          v, p, x->counter, (unsigned long long)x->ok_seq, cn[cls],
                          (long long)first, (long long)last);
            }
        }
        check_order(w, k);
    }
    snprintf(w->lost_summary, sizeof w->lost_summary,
             "%llu acknowledged, %llu lost (prefix %llu, middle %llu, postfix %llu), %llu of "
             "unknown outcome stored",
             (unsigned long long)nacked, (unsigned long long)nlost, (unsigned long long)lost[0],
             (unsigned long long)lost[1], (unsigned long long)lost[2],
             (unsigned long long)unknown_stored);
}

/* Stream list
 * ------------------------------------------------------------------------------------*/

typedef struct names_res {
    int done, status;
    char names[16][16];
    size_t n;
} names_res;

static void names_cb(void *arg, int status, const char *msg, const jr_names *page)
{
    (void)msg;
    names_res *r = arg;
    r->done = 1;
    r->status = status;
    for (size_t i = 0; status == 0 && page && i < page->nnames && r->n < 16; i++)
        snprintf(r->names[r->n++], sizeof r->names[0], "%s", page->names[i]);
}

static int listed(const names_res *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->names[i], name)) return 1;
    return 0;
}

void check_stream_list(world *w)
{
    names_res *r = NULL;
    for (int attempt = 0; attempt < 10; attempt++) {
        int node = pick_node(w);
        if (node < 0) break;
        r = calloc(1, sizeof *r);
        if (!r) exit(3);
        if (jr_stream_names(jr_sim_node(w->sim, (unsigned)node), NULL, 0, names_cb, r) != 0) {
            free(r);
            r = NULL;
            continue;
        }
        wait_flag(w, &r->done, 30 * SEC);
        if (!r->done) return; /* left allocated: it may still answer */
        if (r->status == 0) break;
        free(r);
        r = NULL;
        jr_sim_run_for(w->sim, 200 * MS);
    }
    if (!r) {
        violation(w, "liveness", "", -1, 0, -1, "the stream list never answered after the heal");
        return;
    }
    for (unsigned k = 0; k < w->nds; k++)
        if (!listed(r, w->ds[k].name))
            violation(w, "stream-kept", w->ds[k].name, -1, 0, -1,
                      "data stream %s is not listed after the heal", w->ds[k].name);
    for (unsigned k = 0; k < MAX_CHURN; k++) {
        const churn *c = &w->cs[k];
        if (c->state == 1 && !listed(r, c->name))
            violation(w, "stream-kept", c->name, -1, 0, -1,
                      "stream %s, created and never deleted, is not listed", c->name);
        if (c->state == 0 && c->gen >= 0 && listed(r, c->name)) {
            /* deleted (or never created) and still listed: only wrong after an acked delete */
            int acked_delete = 0;
            for (size_t i = w->nops; i-- > 0;) {
                const op *o = &w->ops[i];
                if (strcmp(o->stream, c->name) != 0) continue;
                if (o->kind == OP_STREAM_ADD && op_outcome(o) != OUT_FAIL) break;
                if (o->kind == OP_STREAM_DELETE && op_outcome(o) == OUT_OK) {
                    acked_delete = 1;
                    break;
                }
            }
            if (acked_delete)
                violation(w, "stream-kept", c->name, -1, 0, -1,
                          "stream %s is listed after its delete was acknowledged", c->name);
        }
    }
    free(r);
}
