/* harness — an in-test cluster of pure Raft groups (see harness.h). */
#include "harness.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/checksum.h"

struct h_msg {
    jr__msg m;
    jr__entry *ents;
    uint8_t *buf;
    uint64_t at, seq;
    h_msg *next;
};

struct h_key {
    uint64_t index, term, hash, pterm;
};

#define FAIL(h, ...)                                                                               \
    ck_abort_msg("seed %llu step %llu: %s (replay: RAFT_SEED=%llu)",                               \
                 (unsigned long long)(h)->seed, (unsigned long long)(h)->steps,                    \
                 fmt_msg(__VA_ARGS__), (unsigned long long)(h)->seed)

#define CHECK_RC(h, call)                                                                          \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != 0) FAIL(h, "%s returned %s", #call, jr_err_name(rc_));                          \
    } while (0)

static const char *fmt_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt_msg(const char *fmt, ...)
{
    static char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

static void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s ? s : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

static uint64_t entry_hash(uint8_t type, const void *data, uint32_t len)
{
    return jr__xxh3_2(&type, 1, data, len);
}

static uint64_t chain_mix(uint64_t prev, uint64_t term, uint64_t eh)
{
    uint64_t v[3] = {prev, term, eh};
    return jr__xxh3(v, sizeof v);
}

static void live_sync(harness *h, h_node *nd);
static void copy_free(h_copy *c);

/* Messages ------------------------------------------------------------------------------------*/

static h_msg *copy_msg(const jr__msg *m)
{
    h_msg *c = xcalloc(1, sizeof *c);
    c->m = *m;
    size_t bytes = 0;
    if (m->type == JR__MSG_APPEND) {
        for (uint32_t i = 0; i < m->u.append.n; i++) bytes += m->u.append.entries[i].len;
        c->ents = xcalloc(m->u.append.n, sizeof *c->ents);
        c->buf = xcalloc(bytes, 1);
        size_t off = 0;
        for (uint32_t i = 0; i < m->u.append.n; i++) {
            c->ents[i] = m->u.append.entries[i];
            if (c->ents[i].len) memcpy(c->buf + off, c->ents[i].data, c->ents[i].len);
            c->ents[i].data = c->buf + off;
            off += c->ents[i].len;
        }
        c->m.u.append.entries = c->ents;
    } else if (m->type == JR__MSG_SNAP) {
        c->buf = xcalloc(m->u.snap.conf_len + m->u.snap.len, 1);
        memcpy(c->buf, m->u.snap.conf, m->u.snap.conf_len);
        if (m->u.snap.len) memcpy(c->buf + m->u.snap.conf_len, m->u.snap.data, m->u.snap.len);
        c->m.u.snap.conf = c->buf;
        c->m.u.snap.data = c->buf + m->u.snap.conf_len;
    } else if (m->type == JR__MSG_VOUCH_RESP) {
        c->buf = xcalloc(m->u.vouch_resp.conf_len + m->u.vouch_resp.cconf_len + 1, 1);
        memcpy(c->buf, m->u.vouch_resp.conf, m->u.vouch_resp.conf_len);
        c->m.u.vouch_resp.conf = c->buf;
        if (m->u.vouch_resp.cconf_len)
            memcpy(c->buf + m->u.vouch_resp.conf_len, m->u.vouch_resp.cconf,
                   m->u.vouch_resp.cconf_len);
        c->m.u.vouch_resp.cconf = c->buf + m->u.vouch_resp.conf_len;
    }
    return c;
}

static h_msg *dup_msg(const h_msg *o)
{
    return copy_msg(&o->m);
}

static void free_msg(h_msg *c)
{
    free(c->ents);
    free(c->buf);
    free(c);
}

static void enqueue(harness *h, h_msg *c)
{
    int from = (int)c->m.from - 1, to = (int)c->m.to - 1;
    h->sent++;
    if (to < 0 || to >= h->n || from < 0 || from >= h->n || h->cut[from][to] ||
        (h->filter && !h->filter(h, &c->m, h->filter_arg)) ||
        (h->drop_pct && jr__rand_below(&h->rng, 100) < h->drop_pct)) {
        h->dropped++;
        free_msg(c);
        return;
    }
    int copies = h->dup_pct && jr__rand_below(&h->rng, 100) < h->dup_pct ? 2 : 1;
    for (int k = 0; k < copies; k++) {
        h_msg *x = k ? dup_msg(c) : c;
        x->seq = h->seq++;
        x->at = h->now + (h->delay_max ? jr__rand_below(&h->rng, h->delay_max + 1) : 0);
        if (h->qn == h->qcap) {
            h->qcap = h->qcap ? h->qcap * 2 : 64;
            h->q = xrealloc(h->q, h->qcap * sizeof *h->q);
        }
        h->q[h->qn++] = x;
    }
}

static h_msg **queue(const harness *h)
{
    return h->q;
}

/* Index of the next message to deliver: earliest (at, seq), at <= limit; or -1. */
static long next_msg(const harness *h, uint64_t limit, int ignore_time)
{
    long best = -1;
    for (size_t i = 0; i < h->qn; i++) {
        const h_msg *x = queue(h)[i];
        if (!ignore_time && x->at > limit) continue;
        if (best < 0) {
            best = (long)i;
            continue;
        }
        const h_msg *b = queue(h)[best];
        if (ignore_time ? x->seq < b->seq : (x->at < b->at || (x->at == b->at && x->seq < b->seq)))
            best = (long)i;
    }
    return best;
}

size_t h_queued(const harness *h, int type, int from, int to)
{
    size_t n = 0;
    for (size_t i = 0; i < h->qn; i++) {
        const jr__msg *m = &queue(h)[i]->m;
        if ((type == 0 || m->type == type) && (from < 0 || (int)m->from - 1 == from) &&
            (to < 0 || (int)m->to - 1 == to))
            n++;
    }
    return n;
}

/* io callbacks -------------------------------------------------------------------------------*/

static void io_send(void *ctx, jr__raft *r, const jr__msg *m)
{
    h_node *nd = ctx;
    (void)r;
    if (m->type == JR__MSG_HEARTBEAT) nd->h->raft_heartbeats++;
    /* what depends on durable state says so (the node holds it until the sync) */
    if ((m->type == JR__MSG_VOTE_RESP && !(m->flags & JR__MF_PREVOTE)) ||
        (m->type == JR__MSG_VOTE && !(m->flags & JR__MF_PREVOTE)) ||
        (m->type == JR__MSG_APPEND_RESP && m->u.append_resp.success))
        if (!(m->flags & JR__MF_DURABLE))
            FAIL(nd->h, "node %d sent type %d without JR__MF_DURABLE", nd->idx, m->type);
    h_msg *c = copy_msg(m);
    if (m->flags & JR__MF_DURABLE) { /* held until the flush makes its state durable */
        *nd->held_tail = c;
        nd->held_tail = &c->next;
        return;
    }
    enqueue(nd->h, c);
}

static void io_notify(void *ctx, jr__raft *r)
{
    h_node *nd = ctx;
    (void)r;
    ck_assert_msg(!nd->notified, "notify twice before ready_done");
    nd->notified = 1;
}

static uint8_t snap_byte(const h_node *nd, uint64_t k)
{
    uint64_t hdr[2] = {nd->snap_sm_index, nd->snap_sm_hash};
    if (k < 16) return (uint8_t)(hdr[k / 8] >> (8 * (k % 8)));
    return (uint8_t)((nd->snap_sm_hash >> (8 * (k % 8))) ^ k);
}

static int io_snap_read(void *ctx, jr__raft *r, uint64_t index, uint64_t offset, void *buf,
                        size_t cap, size_t *n)
{
    h_node *nd = ctx;
    (void)r;
    if (!nd->has_snap || nd->snap_index != index) return JR_ENOTFOUND;
    size_t size = nd->h->snap_size;
    *n = 0;
    for (uint64_t k = offset; k < size && *n < cap; k++)
        ((uint8_t *)buf)[(*n)++] = snap_byte(nd, k);
    return 0;
}

static int io_snap_write(void *ctx, jr__raft *r, uint64_t index, uint64_t offset, const void *data,
                         size_t len)
{
    h_node *nd = ctx;
    (void)r;
    (void)index;
    if (offset == 0) nd->rlen = 0;
    if (offset != nd->rlen) return JR_EINVAL;
    if (nd->rlen + len > nd->rcap) {
        nd->rcap = (nd->rlen + len) * 2;
        nd->rbuf = xrealloc(nd->rbuf, nd->rcap);
    }
    if (len) memcpy(nd->rbuf + nd->rlen, data, len);
    nd->rlen += len;
    return 0;
}

static void disk_drop_upto(h_node *nd, uint64_t index);

static int io_snap_install(void *ctx, jr__raft *r, uint64_t index, uint64_t term,
                           const jr__conf *conf)
{
    h_node *nd = ctx;
    harness *h = nd->h;
    (void)r;
    if (nd->refuse_snaps) {
        nd->snaps_refused++;
        return JR_EBUSY;
    }
    if (nd->rlen != h->snap_size || nd->rlen < 16) FAIL(h, "snapshot of %zu bytes", nd->rlen);
    uint64_t smi = jr__get_u64(nd->rbuf), smh = jr__get_u64(nd->rbuf + 8);
    if (smi != index)
        FAIL(h, "snapshot for index %llu claims %llu", (unsigned long long)index,
             (unsigned long long)smi);
    if (index < h->ccap && h->chain[index] && h->chain[index] != smh)
        FAIL(h, "node %d: snapshot at %llu differs from the applied log", nd->idx,
             (unsigned long long)index);
    nd->has_snap = 1;
    nd->snap_index = index;
    nd->snap_term = term;
    nd->snap_conf = *conf;
    nd->snap_sm_index = smi;
    nd->snap_sm_hash = smh;
    for (uint64_t k = 16; k < nd->rlen; k++)
        if (nd->rbuf[k] != snap_byte(nd, k))
            FAIL(h, "snapshot byte %llu corrupt", (unsigned long long)k);
    nd->sm_index = smi;
    nd->sm_hash = smh;
    disk_drop_upto(nd, index);
    h->installs++;
    return 0;
}

/* Disk ----------------------------------------------------------------------------------------*/

static uint64_t disk_last(const h_node *nd)
{
    return nd->dfirst + nd->dn - 1;
}

static void disk_drop_upto(h_node *nd, uint64_t index)
{
    if (index < nd->dfirst) return;
    uint64_t k = index - nd->dfirst + 1;
    if (k > nd->dn) k = nd->dn;
    for (uint64_t i = 0; i < k; i++) free(nd->dlog[i].data);
    if (nd->dn > k) memmove(nd->dlog, nd->dlog + k, (nd->dn - k) * sizeof *nd->dlog);
    nd->dn -= k;
    nd->dfirst = index + 1;
}

static void disk_truncate(h_node *nd, uint64_t from)
{
    while (nd->dn && disk_last(nd) >= from) free(nd->dlog[--nd->dn].data);
    if (nd->dn == 0 && nd->dfirst > from) nd->dfirst = from;
}

static void disk_append(h_node *nd, const jr__entry *e)
{
    if (nd->dn == 0) nd->dfirst = e->index;
    ck_assert_uint_eq(e->index, disk_last(nd) + 1);
    if (nd->dn == nd->dcap) {
        nd->dcap = nd->dcap ? nd->dcap * 2 : 64;
        nd->dlog = xrealloc(nd->dlog, nd->dcap * sizeof *nd->dlog);
    }
    h_disk_ent *d = &nd->dlog[nd->dn++];
    d->term = e->term;
    d->type = e->type;
    d->len = e->len;
    d->data = xcalloc(e->len, 1);
    if (e->len) memcpy(d->data, e->data, e->len);
}

/* Invariants ----------------------------------------------------------------------------------*/

static void grow_committed(harness *h, uint64_t index)
{
    if (index < h->ccap) return;
    size_t cap = h->ccap ? h->ccap : 1024;
    while (cap <= index) cap *= 2;
    h->ctrm = xrealloc(h->ctrm, cap * sizeof *h->ctrm);
    h->chash = xrealloc(h->chash, cap * sizeof *h->chash);
    h->chain = xrealloc(h->chain, cap * sizeof *h->chain);
    memset(h->ctrm + h->ccap, 0, (cap - h->ccap) * sizeof *h->ctrm);
    memset(h->chash + h->ccap, 0, (cap - h->ccap) * sizeof *h->chash);
    memset(h->chain + h->ccap, 0, (cap - h->ccap) * sizeof *h->chain);
    h->ccap = cap;
}

static void check_leader(harness *h, h_node *nd)
{
    jr__raft *r = nd->r;
    if (jr__raft_role(r) != JR_LEADER) return;
    uint64_t t = jr__raft_term(r);
    if (t >= h->leader_cap) {
        size_t cap = h->leader_cap ? h->leader_cap : 64;
        while (cap <= t) cap *= 2;
        h->leader_of = xrealloc(h->leader_of, cap * sizeof *h->leader_of);
        memset(h->leader_of + h->leader_cap, 0, (cap - h->leader_cap) * sizeof *h->leader_of);
        h->leader_cap = cap;
    }
    if (h->leader_of[t] && h->leader_of[t] != nd->id)
        FAIL(h, "election safety: nodes %llu and %llu both lead term %llu",
             (unsigned long long)h->leader_of[t], (unsigned long long)nd->id,
             (unsigned long long)t);
    h->leader_of[t] = nd->id;
    if (nd->was_leader_term == (int)t) return;
    nd->was_leader_term = (int)t;
    h->elections++;
    if (getenv("RAFT_TRACE"))
        fprintf(stderr, "t=%llums node %d leads term %llu (last %llu commit %llu)\n",
                (unsigned long long)(h->now / H_MS), nd->idx, (unsigned long long)t,
                (unsigned long long)jr__raft_last_index(r),
                (unsigned long long)jr__raft_commit_index(r));
    /* leader completeness: every entry committed so far is in the new leader's log */
    jr__entry e;
    for (uint64_t i = jr__raft_first_index(r); i <= h->max_commit; i++) {
        if (jr__raft_entry(r, i, &e))
            FAIL(h, "leader completeness: node %d (term %llu) lacks committed %llu", nd->idx,
                 (unsigned long long)t, (unsigned long long)i);
        if (h->ctrm[i] && h->ctrm[i] != e.term)
            FAIL(h, "leader completeness: node %d has term %llu at committed %llu (term %llu)",
                 nd->idx, (unsigned long long)e.term, (unsigned long long)i,
                 (unsigned long long)h->ctrm[i]);
    }
}

static struct h_key *key_slot(harness *h, uint64_t index, uint64_t term)
{
    if ((h->kn + 1) * 2 > h->kcap) {
        size_t ncap = h->kcap ? h->kcap * 2 : 4096;
        struct h_key *nk = xcalloc(ncap, sizeof *nk);
        for (size_t i = 0; i < h->kcap; i++) {
            if (!h->keys[i].term) continue;
            uint64_t x = h->keys[i].index * 0x9e3779b97f4a7c15ULL ^ h->keys[i].term;
            size_t s = jr__splitmix64(&x) & (ncap - 1);
            while (nk[s].term) s = (s + 1) & (ncap - 1);
            nk[s] = h->keys[i];
        }
        free(h->keys);
        h->keys = nk;
        h->kcap = ncap;
    }
    uint64_t x = index * 0x9e3779b97f4a7c15ULL ^ term;
    size_t s = jr__splitmix64(&x) & (h->kcap - 1);
    while (h->keys[s].term && !(h->keys[s].index == index && h->keys[s].term == term))
        s = (s + 1) & (h->kcap - 1);
    return &h->keys[s];
}

/* Log matching, checked on every entry as it is written to a disk. */
static void check_written(harness *h, h_node *nd, const jr__entry *e, uint64_t pterm)
{
    uint64_t eh = entry_hash(e->type, e->data, e->len);
    struct h_key *k = key_slot(h, e->index, e->term);
    if (!k->term) {
        *k = (struct h_key){e->index, e->term, eh, pterm};
        h->kn++;
        return;
    }
    if (k->hash != eh || (pterm && k->pterm && k->pterm != pterm))
        FAIL(h, "log matching: node %d holds a different entry at index %llu term %llu", nd->idx,
             (unsigned long long)e->index, (unsigned long long)e->term);
    if (!k->pterm) k->pterm = pterm;
}

static void record_commits(harness *h, h_node *nd)
{
    jr__raft *r = nd->r;
    uint64_t c = jr__raft_commit_index(r);
    if (c < nd->last_commit)
        FAIL(h, "node %d commit went back from %llu to %llu", nd->idx,
             (unsigned long long)nd->last_commit, (unsigned long long)c);
    grow_committed(h, c + 1);
    jr__entry e;
    for (uint64_t i = nd->last_commit + 1; i <= c; i++) {
        if (jr__raft_entry(r, i, &e)) continue; /* came with a snapshot */
        uint64_t eh = entry_hash(e.type, e.data, e.len);
        if (!h->ctrm[i]) {
            h->ctrm[i] = e.term;
            h->chash[i] = eh;
        } else if (h->ctrm[i] != e.term || h->chash[i] != eh) {
            FAIL(h, "state-machine safety: node %d committed a different entry at %llu", nd->idx,
                 (unsigned long long)i);
        }
        if (i > h->max_commit) h->max_commit = i;
    }
    nd->last_commit = c;
    if (jr__raft_applied_index(r) > c) FAIL(h, "node %d applied beyond commit", nd->idx);
}

static void apply(harness *h, h_node *nd)
{
    jr__raft *r = nd->r;
    uint64_t c = jr__raft_commit_index(r);
    jr__entry e;
    while (nd->sm_index < c) {
        uint64_t i = nd->sm_index + 1;
        if (jr__raft_entry(r, i, &e))
            FAIL(h, "node %d cannot read committed %llu", nd->idx, (unsigned long long)i);
        uint64_t eh = entry_hash(e.type, e.data, e.len);
        if (h->ctrm[i] && (h->ctrm[i] != e.term || h->chash[i] != eh))
            FAIL(h, "state-machine safety: node %d applies a different entry at %llu", nd->idx,
                 (unsigned long long)i);
        nd->sm_hash = chain_mix(nd->sm_hash, e.term, eh);
        nd->sm_index = i;
        nd->applied_count++;
        if (!h->chain[i])
            h->chain[i] = nd->sm_hash;
        else if (h->chain[i] != nd->sm_hash)
            FAIL(h, "state-machine safety: node %d state differs after %llu", nd->idx,
                 (unsigned long long)i);
    }
    jr__raft_applied(r, nd->sm_index);
}

static void maybe_snapshot(harness *h, h_node *nd)
{
    if (!h->snap_every || nd->sm_index < (nd->has_snap ? nd->snap_index : 0) + h->snap_every)
        return;
    jr__raft *r = nd->r;
    if (jr__raft_snapshot_taken(r, nd->sm_index, h->snap_trailing)) return;
    nd->has_snap = 1;
    nd->snap_index = jr__raft_snapshot_index(r);
    nd->snap_term = jr__raft_snapshot_term(r);
    jr__raft_snapshot_conf(r, &nd->snap_conf);
    nd->snap_sm_index = nd->sm_index;
    nd->snap_sm_hash = nd->sm_hash;
    disk_drop_upto(nd, nd->snap_index);
}

/* The node's flush: the ready cycle of raft.h. */
void h_flush(h_node *nd)
{
    harness *h = nd->h;
    for (int guard = 0; nd->up && nd->notified && nd->hold != 1; guard++) {
        if (guard > 100) FAIL(h, "node %d notifies forever", nd->idx);
        nd->notified = 0;
        jr__raft *r = nd->r;
        jr__raft_flush(r, h->now);
        uint64_t from, to;
        jr__hardstate hs;
        int changed = jr__raft_unpersisted(r, &from, &to, &hs);
        if (nd->hold == 2) to = from - 1;      /* slow entry writes: only the hard state lands */
        if (nd->dn && from <= disk_last(nd)) { /* even with nothing to write */
            disk_truncate(nd, from);
            h->truncations++;
        }
        if (from <= to) {
            jr__entry e, p;
            for (uint64_t i = from; i <= to; i++) {
                CHECK_RC(h, jr__raft_entry(r, i, &e));
                uint64_t pterm = i > 1 && jr__raft_entry(r, i - 1, &p) == 0 ? p.term : 0;
                check_written(h, nd, &e, pterm);
                h->config_entries += e.type == JR__ENTRY_CONFIG;
                disk_append(nd, &e);
            }
        }
        if (changed) {
            nd->term = hs.term;
            nd->vote = hs.vote;
            nd->commit = hs.commit;
            if (nd->hs_n == H_HS_HIST) {
                memmove(nd->hs_hist, nd->hs_hist + 1, (H_HS_HIST - 1) * sizeof nd->hs_hist[0]);
                nd->hs_n--;
            }
            nd->hs_hist[nd->hs_n][0] = hs.term;
            nd->hs_hist[nd->hs_n][1] = hs.vote;
            nd->hs_hist[nd->hs_n][2] = hs.commit;
            nd->hs_n++;
        }
        jr__raft_persisted(r, h->now, to, changed != 0);
        while (nd->held) {
            h_msg *c = nd->held;
            nd->held = c->next;
            c->next = NULL;
            enqueue(h, c);
        }
        nd->held_tail = &nd->held;
        record_commits(h, nd);
        apply(h, nd);
        maybe_snapshot(h, nd);
        check_leader(h, nd);
        jr__raft_ready_done(r);
        if (nd->hold == 2) break; /* it would ask again at once: entries are still pending */
    }
    /* the group's only voter: what it commits now no other voter holds, so a copy from before
     * is one a rollback would take to a sole voter's loss (h_rollback) */
    if (nd->up && nd->saved.valid) {
        const jr__conf *c = jr__raft_conf(nd->r);
        const jr__member *me = jr__conf_find(c, nd->id);
        if (me && me->voter && jr__conf_voters(c) == 1) copy_free(&nd->saved);
    }
    live_sync(h, nd);
}

/* Lifecycle -----------------------------------------------------------------------------------*/

void h_init(harness *h, int n, uint64_t seed)
{
    ck_assert_int_le(n, H_MAX);
    memset(h, 0, sizeof *h);
    h->n = n;
    h->seed = seed;
    jr__rand_seed(&h->rng, seed);
    h->now = 1000 * H_MS;
    h->cfg.group = 7;
    h->cfg.election_timeout = 100 * H_MS;
    h->cfg.heartbeat_interval = 20 * H_MS;
    h->snap_size = 100;
    h->no_vouch = getenv("RAFT_NO_VOUCH") && atoi(getenv("RAFT_NO_VOUCH"));
    for (int i = 0; i < n; i++) {
        h_node *nd = &h->nodes[i];
        nd->h = h;
        nd->idx = i;
        nd->id = (jr__id)i + 1;
        nd->held_tail = &nd->held;
        nd->dfirst = 1;
        nd->was_leader_term = -1;
    }
}

static void live_reset(harness *h, h_node *nd);

static void node_open(harness *h, h_node *nd)
{
    jr__raft_config cfg = h->cfg;
    cfg.self = nd->id;
    cfg.seed = h->seed * 31 + (uint64_t)nd->idx;
    jr__raft_io io = {nd, io_send, io_notify, io_snap_read, io_snap_write, io_snap_install};
    CHECK_RC(h, jr__raft_new(&cfg, &io, &nd->r));
    nd->up = 1;
    nd->notified = 0;
    live_reset(h, nd);
}

void h_start(harness *h, int nmembers, int nvoters)
{
    jr__conf c = {0};
    for (int i = 0; i < nmembers; i++) c.m[c.n++] = (jr__member){(jr__id)i + 1, i < nvoters};
    for (int i = 0; i < h->n; i++) {
        h_node *nd = &h->nodes[i];
        node_open(h, nd);
        if (i < nmembers) CHECK_RC(h, jr__raft_bootstrap(nd->r, &c));
        CHECK_RC(h, jr__raft_start(nd->r, h->now));
        h_flush(nd);
    }
}

static void drop_held(h_node *nd)
{
    while (nd->held) {
        h_msg *c = nd->held;
        nd->held = c->next;
        free_msg(c);
    }
    nd->held_tail = &nd->held;
}

void h_crash(harness *h, int i)
{
    h_node *nd = &h->nodes[i];
    if (!nd->up) return;
    jr__raft_free(nd->r);
    nd->r = NULL;
    nd->up = 0;
    nd->notified = 0;
    drop_held(nd);
    (void)h;
}

void h_restart(harness *h, int i)
{
    h_node *nd = &h->nodes[i];
    if (nd->up || nd->released) return;
    node_open(h, nd);
    h->restarts++;
    jr__raft *r = nd->r;
    CHECK_RC(h, jr__raft_load_hardstate(r, nd->term, nd->vote, nd->commit));
    nd->sm_index = nd->sm_hash = 0;
    if (nd->has_snap) {
        CHECK_RC(h, jr__raft_load_snapshot(r, nd->snap_index, nd->snap_term, &nd->snap_conf));
        nd->sm_index = nd->snap_sm_index;
        nd->sm_hash = nd->snap_sm_hash;
    }
    for (uint64_t k = 0; k < nd->dn; k++) {
        uint64_t index = nd->dfirst + k;
        if (nd->has_snap && index <= nd->snap_index) continue;
        h_disk_ent *d = &nd->dlog[k];
        jr__entry e = {d->term, index, d->type, d->len, d->data};
        if (jr__raft_load_entry(r, &e))
            FAIL(h,
                 "node %d: cannot load entry %llu term %llu after %llu term %llu (snapshot %llu)",
                 i, (unsigned long long)index, (unsigned long long)d->term,
                 (unsigned long long)jr__raft_last_index(r),
                 (unsigned long long)jr__raft_last_term(r),
                 (unsigned long long)(nd->has_snap ? nd->snap_index : 0));
    }
    /* every replica restarted from disk starts unvouched, as the node's are (vouch.c) */
    if (!h->no_vouch && (nd->dn || nd->has_snap || nd->term))
        CHECK_RC(h, jr__raft_load_unvouched(r, nd->restart_damaged));
    CHECK_RC(h, jr__raft_start(r, h->now));
    nd->last_commit = jr__raft_commit_index(r);
    nd->was_leader_term = -1;
    h_flush(nd);
}

/* 1 if the configuration a replica restarted from these files would hold (the last
 * configuration entry among the first n entries of its log, else its snapshot's) has `self` as
 * its only voter. */
static int sole_voter(const h_disk_ent *dlog, uint64_t n, int has_snap, const jr__conf *snap,
                      jr__id self)
{
    jr__conf c;
    const jr__conf *k = NULL;
    for (uint64_t i = n; i-- > 0 && !k;)
        if (dlog[i].type == JR__ENTRY_CONFIG && jr__conf_decode(&c, dlog[i].data, dlog[i].len) == 0)
            k = &c;
    if (!k && has_snap) k = snap;
    if (!k || jr__conf_voters(k) != 1) return 0;
    const jr__member *m = jr__conf_find(k, self);
    return m && m->voter;
}

int h_restart_lost(harness *h, int i, uint64_t cut, int old_hs)
{
    h_node *nd = &h->nodes[i];
    /* the bootstrap entry stays: a replica that lost its whole log would not know its group
     * (the node knows it from the group's configuration) */
    uint64_t floor = nd->has_snap ? nd->snap_index : 1;
    uint64_t last = nd->dn ? disk_last(nd) : nd->dfirst - 1;
    uint64_t from = last >= floor + cut ? last - cut + 1 : floor + 1;
    uint64_t keep = from <= nd->dfirst           ? 0
                    : from - nd->dfirst < nd->dn ? from - nd->dfirst
                                                 : nd->dn;
    if (sole_voter(nd->dlog, keep, nd->has_snap, &nd->snap_conf, nd->id)) {
        if (getenv("RAFT_TRACE"))
            fprintf(stderr, "t=%llums node %d keeps its log: the cut would leave it sole voter\n",
                    (unsigned long long)(h->now / H_MS), i);
        return 0;
    }
    h_crash(h, i);
    if (nd->dn && from <= last) disk_truncate(nd, from);
    if (old_hs > 0 && nd->hs_n > 1) {
        int k = nd->hs_n - 1 - old_hs;
        if (k < 0) k = 0;
        nd->term = nd->hs_hist[k][0];
        nd->vote = nd->hs_hist[k][1];
        nd->commit = nd->hs_hist[k][2];
        nd->hs_n = k + 1;
    }
    h->lost_tails++;
    if (getenv("RAFT_TRACE"))
        fprintf(stderr,
                "t=%llums node %d restarts with its log cut at %llu, hard state term %llu "
                "vote %llu commit %llu\n",
                (unsigned long long)(h->now / H_MS), i, (unsigned long long)(from - 1),
                (unsigned long long)nd->term, (unsigned long long)nd->vote,
                (unsigned long long)nd->commit);
    h_restart(h, i);
    return 1;
}

static void copy_free(h_copy *c)
{
    for (uint64_t k = 0; k < c->dn; k++) free(c->dlog[k].data);
    free(c->dlog);
    memset(c, 0, sizeof *c);
}

static void copy_log(h_disk_ent **to, const h_disk_ent *from, uint64_t n)
{
    *to = xcalloc(n, sizeof **to);
    for (uint64_t k = 0; k < n; k++) {
        (*to)[k] = from[k];
        (*to)[k].data = xcalloc(from[k].len, 1);
        if (from[k].len) memcpy((*to)[k].data, from[k].data, from[k].len);
    }
}

void h_save(harness *h, int i)
{
    h_node *nd = &h->nodes[i];
    h_copy *c = &nd->saved;
    (void)h;
    copy_free(c);
    c->term = nd->term;
    c->vote = nd->vote;
    c->commit = nd->commit;
    copy_log(&c->dlog, nd->dlog, nd->dn);
    c->dfirst = nd->dfirst;
    c->dn = nd->dn;
    c->snap_index = nd->snap_index;
    c->snap_term = nd->snap_term;
    c->snap_sm_index = nd->snap_sm_index;
    c->snap_sm_hash = nd->snap_sm_hash;
    c->snap_conf = nd->snap_conf;
    c->has_snap = nd->has_snap;
    c->valid = 1;
}

int h_rollback(harness *h, int i)
{
    h_node *nd = &h->nodes[i];
    h_copy *c = &nd->saved;
    if (!c->valid) return 0;
    /* A copy from before the replica held anything is not put back: with no file of its group
     * left, the node opens the group as a joiner held to its join floor, or (its WAL lost) as
     * damaged, which this harness does not play; restarted as a new member, it would forget
     * the votes it granted. */
    if (!c->dn && !c->has_snap && !c->term && (nd->dn || nd->has_snap || nd->term)) return 0;
    if (sole_voter(c->dlog, c->dn, c->has_snap, &c->snap_conf, nd->id)) {
        if (getenv("RAFT_TRACE"))
            fprintf(stderr, "t=%llums node %d is not rolled back: its copy has it sole voter\n",
                    (unsigned long long)(h->now / H_MS), i);
        return 0;
    }
    h_crash(h, i);
    for (uint64_t k = 0; k < nd->dn; k++) free(nd->dlog[k].data);
    free(nd->dlog);
    nd->term = c->term;
    nd->vote = c->vote;
    nd->commit = c->commit;
    nd->hs_n = 0;
    copy_log(&nd->dlog, c->dlog, c->dn);
    nd->dn = nd->dcap = c->dn;
    nd->dfirst = c->dfirst;
    nd->snap_index = c->snap_index;
    nd->snap_term = c->snap_term;
    nd->snap_sm_index = c->snap_sm_index;
    nd->snap_sm_hash = c->snap_sm_hash;
    nd->snap_conf = c->snap_conf;
    nd->has_snap = c->has_snap;
    copy_free(c);
    h->rollbacks++;
    if (getenv("RAFT_TRACE"))
        fprintf(stderr, "t=%llums node %d restarts rolled back to last %llu, term %llu vote %llu\n",
                (unsigned long long)(h->now / H_MS), i,
                (unsigned long long)(nd->dn ? disk_last(nd) : nd->dfirst - 1),
                (unsigned long long)nd->term, (unsigned long long)nd->vote);
    h_restart(h, i);
    return 1;
}

void h_release(harness *h, int i)
{
    h_node *nd = &h->nodes[i];
    h_crash(h, i);
    for (uint64_t k = 0; k < nd->dn; k++) free(nd->dlog[k].data);
    nd->dn = 0;
    nd->dfirst = 1;
    nd->has_snap = 0;
    nd->term = nd->vote = nd->commit = 0;
    nd->hs_n = 0;
    nd->sm_index = nd->sm_hash = 0;
    copy_free(&nd->saved);
    nd->released = 1;
    h->releases++;
    if (getenv("RAFT_TRACE"))
        fprintf(stderr, "t=%llums node %d releases its replica\n",
                (unsigned long long)(h->now / H_MS), i);
}

void h_lose(harness *h, int i)
{
    h_node *nd = &h->nodes[i];
    h_release(h, i);
    h->releases--;
    h->losses++;
    nd->lost_all = 1;
    if (getenv("RAFT_TRACE"))
        fprintf(stderr, "t=%llums node %d lost its whole storage\n",
                (unsigned long long)(h->now / H_MS), i);
}

/* A released node's answer to a VOUCH: it holds nothing of the group (after a lost disk,
 * possibly as a faulty replica: unfloored). */
static void vouch_released(harness *h, h_node *nd, const jr__msg *q)
{
    static const uint8_t none[1] = {0};
    jr__msg a = {.type = JR__MSG_VOUCH_RESP, .group = q->group, .from = nd->id, .to = q->from};
    a.term = 1;
    a.u.vouch_resp.unfloored = nd->lost_all && !h->lost_floored;
    a.u.vouch_resp.conf = none;
    a.u.vouch_resp.conf_len = sizeof none;
    h->released_vouches++;
    enqueue(h, copy_msg(&a));
}

void h_free(harness *h)
{
    for (int i = 0; i < h->n; i++) {
        h_node *nd = &h->nodes[i];
        if (nd->up) jr__raft_free(nd->r);
        drop_held(nd);
        for (uint64_t k = 0; k < nd->dn; k++) free(nd->dlog[k].data);
        free(nd->dlog);
        free(nd->rbuf);
        copy_free(&nd->saved);
    }
    for (size_t i = 0; i < h->qn; i++) free_msg(queue(h)[i]);
    free(h->q);
    free(h->leader_of);
    free(h->keys);
    free(h->ctrm);
    free(h->chash);
    free(h->chain);
    memset(h, 0, sizeof *h);
}

/* Node-level liveness (h->quiesce) ------------------------------------------------------------
 * The node's heartbeats for this one group (lib/node/liveness.c): H_NHB carries the node's
 * seq (u.append_resp.index; incarnation in its high 32 bits) and at most one item (flags 1:
 * listing with term and u.append_resp.hint_index = commit; flags 2: tombstone); H_NHB_RESP
 * echoes it (index = seq echoed, flags 1 if it echoes an item, hint_term = the responder's
 * term, hint_index = its last durable index). */
#define H_NHB 64
#define H_NHB_RESP 65

static void live_reset(harness *h, h_node *nd)
{
    for (int j = 0; j < h->n; j++) {
        nd->heard[j] = h->now;
        nd->lost[j] = 0;
        nd->inc_seen[j] = 0;
        memset(&nd->pend[j], 0, sizeof nd->pend[j]);
        memset(&nd->owe[j], 0, sizeof nd->owe[j]);
    }
    nd->was_ql = 0;
    nd->was_lead = 0;
    nd->seq = 0;
    if (!h->quiesce) return;
    /* nodes' heartbeat phases differ, as their clocks would */
    nd->nhb_next = h->now + 1 + jr__rand_below(&h->rng, h->cfg.heartbeat_interval);
    nd->inc = 1 + jr__rand_below(&h->rng, 0x7fffffff);
}

uint64_t h_stagger(harness *h, int self_idx, int lost_idx)
{
    h_node *nd = &h->nodes[self_idx];
    const jr__conf *c = jr__raft_conf(nd->r);
    uint64_t rank = 0, live = 0;
    for (uint32_t k = 0; k < c->n; k++) {
        int j = (int)c->m[k].id - 1;
        if (!c->m[k].voter || j == lost_idx || (j != self_idx && nd->lost[j])) continue;
        live++;
        if (j != self_idx && jr__raft_ahead(h->cfg.group, c->m[k].id, nd->id)) rank++;
    }
    uint64_t hb = h->cfg.heartbeat_interval;
    uint64_t w = h->cfg.election_timeout / 4 / (live > 1 ? live - 1 : 1);
    return hb + rank * (w + 2 * hb) + jr__rand_below(&h->rng, w + 1);
}

static int quiet_leader(const h_node *nd)
{
    return jr__raft_quiet(nd->r) && jr__raft_role(nd->r) == JR_LEADER;
}

static int quiet_follower_of(const h_node *nd, int j)
{
    return jr__raft_quiet(nd->r) && jr__raft_role(nd->r) != JR_LEADER &&
           jr__raft_leader(nd->r) == (jr__id)j + 1;
}

/* Tells peer j the group is quiet here (again). */
static void relist(h_node *nd, int j)
{
    uint64_t term, commit;
    if (nd->was_ql && jr__raft_hb_item(nd->r, (jr__id)j + 1, &term, &commit))
        nd->pend[j] = (struct h_pend){1, term, commit, 0};
}

/* The node's sync after a flush: the group became leader here (its members on lost nodes are
 * reported lost, as jr__live_leads does), or quiet, or stopped being. */
static void live_sync(harness *h, h_node *nd)
{
    if (!h->quiesce || !nd->up) return;
    int lead = jr__raft_role(nd->r) == JR_LEADER;
    if (lead && !nd->was_lead)
        for (int j = 0; j < h->n; j++)
            if (j != nd->idx && nd->lost[j]) jr__raft_peer_lost(nd->r, h->now, (jr__id)j + 1, 0);
    nd->was_lead = lead;
    int ql = quiet_leader(nd);
    if (ql == nd->was_ql) return;
    nd->was_ql = ql;
    const jr__conf *c = jr__raft_conf(nd->r);
    for (uint32_t k = 0; k < c->n; k++) {
        int j = (int)c->m[k].id - 1;
        if (j == nd->idx || j < 0 || j >= h->n) continue;
        if (ql)
            relist(nd, j);
        else
            nd->pend[j] = (struct h_pend){2, 0, 0, 0};
    }
}

static void send_node_msg(harness *h, int from, int to, int type, int flags, uint64_t term,
                          uint64_t seq, uint64_t hint_index, uint64_t hint_term)
{
    jr__msg m = {.type = (uint8_t)type, .flags = (uint8_t)flags, .group = h->cfg.group};
    m.from = (jr__id)from + 1;
    m.to = (jr__id)to + 1;
    m.term = term;
    m.u.append_resp.index = seq;
    m.u.append_resp.hint_index = hint_index;
    m.u.append_resp.hint_term = hint_term;
    enqueue(h, copy_msg(&m));
}

static uint64_t durable_last(const h_node *nd)
{
    return nd->dn ? disk_last(nd) : nd->dfirst - 1;
}

/* A node's heartbeat tick: peers silent for an election timeout are lost, peers heard again
 * are alive (and told again); then one heartbeat to every peer it has a reason to talk to. */
static void nhb_tick(harness *h, int i)
{
    h_node *nd = &h->nodes[i];
    nd->nhb_next = h->now + h->cfg.heartbeat_interval;
    h->steps++;
    for (int j = 0; j < h->n; j++) {
        if (j == i) continue;
        int silent = h->now - nd->heard[j] >= h->cfg.election_timeout;
        if (silent && !nd->lost[j]) {
            nd->lost[j] = 1;
            h->peers_lost++;
            int was_quiet = jr__raft_quiet(nd->r);
            jr__raft_peer_lost(nd->r, h->now, (jr__id)j + 1, h_stagger(h, i, j));
            if (was_quiet && !jr__raft_quiet(nd->r)) h->quiet_wakes++;
        } else if (!silent && nd->lost[j]) {
            nd->lost[j] = 0;
            jr__raft_peer_alive(nd->r, h->now, (jr__id)j + 1);
            relist(nd, j);
        }
    }
    h_flush(nd);
    for (int j = 0; j < h->n; j++) {
        if (j == i) continue;
        struct h_pend *pe = &nd->pend[j];
        struct h_owe *ow = &nd->owe[j];
        if (!nd->was_ql && !quiet_follower_of(nd, j) && !pe->kind && !ow->owe) continue;
        uint64_t seq = nd->inc << 32 | ++nd->seq;
        send_node_msg(h, i, j, H_NHB, pe->kind, pe->term, seq, pe->commit, 0);
        if (pe->kind && !pe->sent_seq) pe->sent_seq = seq;
        if (ow->owe)
            send_node_msg(h, i, j, H_NHB_RESP, ow->has, ow->term ? ow->term : 1, ow->seq, ow->index,
                          ow->term);
        memset(ow, 0, sizeof *ow);
    }
}

static void deliver_node_msg(harness *h, h_node *nd, const jr__msg *m)
{
    jr__raft *r = nd->r;
    int j = (int)m->from - 1;
    int was_quiet = jr__raft_quiet(r);
    uint64_t seq = m->u.append_resp.index;
    if (m->type == H_NHB) {
        uint64_t inc = seq >> 32;
        struct h_owe *ow = &nd->owe[j];
        if (nd->inc_seen[j] != inc) {
            if (nd->inc_seen[j]) {
                /* it restarted: its leaderships are gone, its replicas want telling again */
                if (jr__raft_role(r) == JR_LEADER) {
                    jr__raft_peer_alive(r, h->now, (jr__id)j + 1);
                    relist(nd, j);
                } else {
                    jr__raft_peer_lost(r, h->now, (jr__id)j + 1, h_stagger(h, nd->idx, j));
                }
            }
            nd->inc_seen[j] = inc;
            ow->owe = 1; /* our incarnation, in return */
        }
        if (m->flags) {
            h->nhb_items++;
            if (m->flags == 1)
                jr__raft_hb_recv(r, h->now, m->from, m->term, m->u.append_resp.hint_index);
            else if (quiet_follower_of(nd, j))
                jr__raft_wake(r, h->now);
            *ow = (struct h_owe){1, 1, seq, jr__raft_term(r), durable_last(nd)};
        }
    } else if (m->flags) {
        struct h_pend *pe = &nd->pend[j];
        if (pe->kind && pe->sent_seq && seq >> 32 == nd->inc && pe->sent_seq <= seq)
            memset(pe, 0, sizeof *pe); /* it has it */
        jr__raft_hb_resp(r, h->now, m->from, m->u.append_resp.hint_term,
                         m->u.append_resp.hint_index);
    }
    if (was_quiet && !jr__raft_quiet(r)) h->quiet_wakes++;
    h_flush(nd);
}

/* Driving ---------------------------------------------------------------------------------------*/

static void deliver(harness *h, long qi)
{
    h_msg *c = queue(h)[qi];
    queue(h)[qi] = queue(h)[--h->qn];
    h_node *nd = &h->nodes[c->m.to - 1];
    h->steps++;
    static int trace = -1;
    if (trace < 0) trace = getenv("RAFT_TRACE") && atoi(getenv("RAFT_TRACE")) > 1;
    if (trace)
        fprintf(stderr, "t=%llu.%03llums %llu->%llu type %d flags %d term %llu%s\n",
                (unsigned long long)(h->now / H_MS), (unsigned long long)(h->now % H_MS / 1000),
                (unsigned long long)c->m.from, (unsigned long long)c->m.to, c->m.type, c->m.flags,
                (unsigned long long)c->m.term, nd->up ? "" : " (down)");
    if (nd->up) {
        h->delivered++;
        int from = (int)c->m.from - 1;
        nd->heard[from] = h->now; /* any frame from a node tells its node is alive */
        if (c->m.type >= H_NHB) {
            deliver_node_msg(h, nd, &c->m);
        } else {
            int was_quiet = jr__raft_quiet(nd->r);
            jr__raft_step(nd->r, h->now, &c->m);
            if (was_quiet && !jr__raft_quiet(nd->r)) h->quiet_wakes++;
            h_flush(nd);
        }
    } else if (nd->released && c->m.type == JR__MSG_VOUCH && !(nd->lost_all && h->lost_silent)) {
        vouch_released(h, nd, &c->m);
    }
    free_msg(c);
}

void h_deliver_all(harness *h)
{
    long qi;
    for (long guard = 0; (qi = next_msg(h, 0, 1)) >= 0; guard++) {
        ck_assert_msg(guard < 10000000, "seed %llu: messages never stop",
                      (unsigned long long)h->seed);
        deliver(h, qi);
    }
}

static void tick_due(harness *h)
{
    for (int i = 0; i < h->n; i++) {
        h_node *nd = &h->nodes[i];
        if (h->quiesce && nd->up && nd->nhb_next <= h->now) nhb_tick(h, i);
        if (!nd->up || jr__raft_deadline(nd->r) > h->now) continue;
        h->steps++;
        if (getenv("RAFT_TRACE") && atoi(getenv("RAFT_TRACE")) > 2)
            fprintf(stderr, "t=%llums tick node %d role %d\n", (unsigned long long)(h->now / H_MS),
                    i, jr__raft_role(nd->r));
        int was_quiet = jr__raft_quiet(nd->r);
        jr__raft_tick(nd->r, h->now);
        if (!was_quiet && jr__raft_quiet(nd->r)) h->quiesced++;
        h_flush(nd);
    }
}

void h_run(harness *h, uint64_t dt)
{
    uint64_t end = h->now + dt;
    for (;;) {
        long qi;
        while ((qi = next_msg(h, h->now, 0)) >= 0) deliver(h, qi);
        tick_due(h);
        if (next_msg(h, h->now, 0) >= 0) continue;
        uint64_t next = end;
        for (size_t i = 0; i < h->qn; i++)
            if (queue(h)[i]->at < next) next = queue(h)[i]->at;
        for (int i = 0; i < h->n; i++) {
            if (!h->nodes[i].up) continue;
            uint64_t d = jr__raft_deadline(h->nodes[i].r);
            if (d < next) next = d;
            if (h->quiesce && h->nodes[i].nhb_next < next) next = h->nodes[i].nhb_next;
        }
        if (next <= h->now) continue;
        if (next >= end) {
            h->now = end;
            tick_due(h);
            while ((qi = next_msg(h, h->now, 0)) >= 0) deliver(h, qi);
            return;
        }
        h->now = next;
    }
}

void h_timeout(harness *h, int i)
{
    h_node *nd = &h->nodes[i];
    uint64_t d = jr__raft_deadline(nd->r);
    if (d != UINT64_MAX && d > h->now) h->now = d;
    h->steps++;
    jr__raft_tick(nd->r, h->now);
    h_flush(nd);
    h_deliver_all(h);
}

int h_leader(const harness *h)
{
    int best = -1;
    for (int i = 0; i < h->n; i++) {
        const h_node *nd = &h->nodes[i];
        if (!nd->up || jr__raft_role(nd->r) != JR_LEADER) continue;
        if (best < 0 || jr__raft_term(nd->r) > jr__raft_term(h->nodes[best].r)) best = i;
    }
    return best;
}

int h_wait_leader(harness *h, uint64_t dt)
{
    uint64_t end = h->now + dt;
    while (h->now < end) {
        int l = h_leader(h);
        if (l >= 0 && jr__raft_ready(h->nodes[l].r)) return l;
        h_run(h, 5 * H_MS);
    }
    return -1;
}

void h_elect(harness *h, int i)
{
    h_timeout(h, i);
    h_run(h, 10 * H_MS);
    ck_assert_int_eq(jr__raft_role(h->nodes[i].r), JR_LEADER);
    ck_assert_msg(jr__raft_ready(h->nodes[i].r), "leader %d not ready", i);
}

uint64_t h_propose_n(harness *h, int l, int n, const char *tag)
{
    char s[32];
    uint64_t idx = 0;
    for (int k = 0; k < n; k++) {
        snprintf(s, sizeof s, "%s-%d", tag, k);
        ck_assert_int_eq(h_propose(h, l, s, &idx), 0);
    }
    h_run(h, 5 * H_MS);
    return idx;
}

void h_change(harness *h, int l, int op, jr__id peer)
{
    uint64_t idx = 0;
    ck_assert_int_eq(jr__raft_change(h->nodes[l].r, h->now, op, peer, &idx), 0);
    for (int k = 0; k < 200 && h_commit(h, l) < idx; k++) h_run(h, 5 * H_MS);
    ck_assert_msg(h_commit(h, l) >= idx, "seed %llu: change %d of %llu did not commit",
                  (unsigned long long)h->seed, op, (unsigned long long)peer);
}

int h_propose(harness *h, int i, const char *s, uint64_t *index)
{
    h_node *nd = &h->nodes[i];
    if (!nd->up) return JR_ENOTLEADER;
    int rc = jr__raft_propose(nd->r, h->now, s, strlen(s), index);
    h_flush(nd);
    return rc;
}

void h_isolate(harness *h, int i)
{
    for (int j = 0; j < h->n; j++) {
        if (j == i) continue;
        h->cut[i][j] = h->cut[j][i] = 1;
    }
}

void h_heal(harness *h)
{
    memset(h->cut, 0, sizeof h->cut);
}

const char *h_entry_str(const harness *h, int i, uint64_t index, char *buf, size_t cap)
{
    jr__entry e;
    buf[0] = 0;
    if (jr__raft_entry(h->nodes[i].r, index, &e) || e.type != JR__ENTRY_NORMAL) return buf;
    size_t n = e.len < cap - 1 ? e.len : cap - 1;
    memcpy(buf, e.data, n);
    buf[n] = 0;
    return buf;
}

int h_inject(harness *h, int i, const jr__msg *m)
{
    h_node *nd = &h->nodes[i];
    int rc = jr__raft_step(nd->r, h->now, m);
    h_flush(nd);
    return rc;
}

void h_check_all(harness *h)
{
    for (int i = 0; i < h->n; i++) {
        h_node *nd = &h->nodes[i];
        if (!nd->up) continue;
        jr__raft *r = nd->r;
        jr__entry e;
        for (uint64_t k = jr__raft_first_index(r); k <= jr__raft_last_index(r); k++) {
            ck_assert_int_eq(jr__raft_entry(r, k, &e), 0);
            struct h_key *key = key_slot(h, k, e.term);
            if (!key->term) continue; /* not yet written (unpersisted) */
            if (key->hash != entry_hash(e.type, e.data, e.len))
                FAIL(h, "log matching: node %d index %llu", i, (unsigned long long)k);
        }
        if (jr__raft_applied_index(r) > jr__raft_commit_index(r)) FAIL(h, "applied > commit");
    }
}

void h_preload(harness *h, int i, int voters, uint64_t term, const uint64_t *terms, size_t n)
{
    h_node *nd = &h->nodes[i];
    h_crash(h, i);
    for (uint64_t k = 0; k < nd->dn; k++) free(nd->dlog[k].data);
    nd->dn = 0;
    nd->dfirst = 1;
    nd->has_snap = 0;
    jr__conf c = {0};
    for (int v = 0; v < voters; v++) c.m[c.n++] = (jr__member){(jr__id)v + 1, 1};
    uint8_t buf[16 + JR__MAX_MEMBERS * 9];
    jr__entry e = {1, 1, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c, buf), buf};
    disk_append(nd, &e);
    char s[32];
    for (size_t k = 0; k < n; k++) {
        snprintf(s, sizeof s, "%zu:%llu", k + 2, (unsigned long long)terms[k]);
        e = (jr__entry){terms[k], k + 2, JR__ENTRY_NORMAL, (uint32_t)strlen(s), (const uint8_t *)s};
        disk_append(nd, &e);
    }
    nd->term = term;
    nd->vote = 0;
    nd->commit = 0;
    nd->sm_index = nd->sm_hash = 0;
    nd->last_commit = 0;
    /* the scenario defines this disk as what the replica acknowledged: nothing to vouch for */
    int nv = h->no_vouch;
    h->no_vouch = 1;
    h_restart(h, i);
    h->no_vouch = nv;
}
