/*
 * Exact restart of a stream replica over its file store (lib/stream/fsm.h "Restart", store.h
 * "Marks"): the stream state machine as it lives on a node, crashed at random points.
 *
 * Per seed: a random log of stream entries (publishes with msg ids and every expectation,
 * rollups, deletes and erasures, purges, ticks, config changes of limits, discard policy and
 * duplicate window, batches) is produced against a reference replica that never crashes. The
 * replica under test (a file store on memfs with small blocks) applies the same entries, syncs
 * (marks) and takes snapshots at random points, and crashes at random points — power loss with
 * or without torn writes, sometimes after a sticky I/O failure that fails the replica mid-way
 * (in a publish, a block rotation, a mark, a block removal...). After each crash it reopens as a
 * node would restart it: open (with the first or the latest config), restore the last local
 * snapshot (older than the mark: ignored), sometimes install a newer snapshot of a lagging peer
 * and pull its chunks (the peer sometimes moving on meanwhile, then completing with its
 * snapshot where the last chunk was read, as the node does), then apply the log after its
 * index. Checked:
 *  - it reopens exactly at its last durable mark, with the digest the reference had there;
 *  - every entry it applies again decides exactly as it did on the reference (status, seq,
 *    duplicate, purged), op by op;
 *  - at the end its digest (config, clock, dedup window, state, delete ranges, every message)
 *    equals the reference's.
 * Seeds: STREAM_RESTART_SEEDS (default 1500) from STREAM_RESTART_FIRST (default 1); the 'soak'
 * suite passes a larger count as argv[1]. A failure names the seed and the entry; replay one
 * seed with STREAM_RESTART_FIRST=<seed> STREAM_RESTART_SEEDS=1 (STREAM_RESTART_DEBUG=1 traces).
 *
 * (It lives with the store tests because it is the store's crash test as the stream uses it.)
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/config.h"
#include "stream/fsm.h"
#include "util/rand.h"
#include "vfs/memfs.h"

#define SEC 1000000000LL
#define MAXENT 1200 /* entries per seed, at most */
#define MAXOPS 6    /* ops per batch */

static const char *const subjects[] = {"orders.>"};
static const char *const gen_subjects[] = {"orders.a", "orders.b", "orders.c.x", "orders.d",
                                           "orders.e"};

typedef struct replica {
    jr_vfs *vfs;
    jr__stream_fsm *f;
} replica;

typedef struct entry {
    uint8_t *p;
    size_t n;
    uint32_t nres;
    jr__stream_result res[MAXOPS]; /* as the reference decided */
} entry;

typedef struct run {
    uint64_t seed;
    jr__rand r;
    jr_stream_config first, latest; /* configs: at the first entry, and the newest */
    char latest_subj[1][16];
    replica ref, rep, lag;
    entry e[MAXENT];
    size_t n; /* entries in the log */
    uint64_t digest_at[MAXENT + 1];
    uint8_t have_digest[MAXENT + 1];
    int64_t ts;
    uint64_t counter;
    char data[MAXOPS][200];
    char ids[MAXOPS][2][24];
    uint8_t *snap; /* the replica's last local snapshot (the node's snapshot file) */
    size_t snap_len;
    uint64_t snap_index;
    uint64_t last_mark; /* index of the last sync that completed */
    uint64_t attempt;   /* index of a sync that failed (it may have reached the disk) */
    int debug;
    /* counters, for the summary */
    uint64_t crashes, torn, failures, installs, moving, replayed, marks;
} run;

static int dbg(const run *x)
{
    return x->debug;
}

static void fail_run(const run *x, const char *what)
{
    ck_abort_msg("seed %" PRIu64 ": %s (replay: STREAM_RESTART_FIRST=%" PRIu64
                 " STREAM_RESTART_SEEDS=1)",
                 x->seed, what, x->seed);
}

#define EXPECT(x, cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            char m_[512];                                                                          \
            snprintf(m_, sizeof m_, __VA_ARGS__);                                                  \
            fail_run(x, m_);                                                                       \
        }                                                                                          \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * Replicas
 */

static jr__stream_fsm *open_fsm(run *x, replica *rp, const jr_stream_config *c)
{
    jr__stream_fsm_config fc;
    memset(&fc, 0, sizeof fc);
    fc.stream = c;
    fc.vfs = rp->vfs;
    fc.dir = "/store";
    fc.block_bytes = 2048 + 1024 * (x->seed % 3); /* small: rotation, sealing, block removal */
    fc.dedup_max = 64;
    jr__stream_fsm *f;
    char err[256];
    int rc = jr__stream_fsm_open(&fc, &f, err, sizeof err);
    EXPECT(x, rc == 0, "open: %s (%s)", jr_strerror(rc), err);
    return f;
}

static void replica_init(run *x, replica *rp, uint64_t seed)
{
    ck_assert_int_eq(jr__memfs_new(NULL, seed, &rp->vfs), 0);
    ck_assert_int_eq(rp->vfs->mkdir(rp->vfs->ctx, "/store"), 0);
    rp->f = open_fsm(x, rp, &x->first);
}

static void replica_done(replica *rp)
{
    if (rp->f) jr__stream_fsm_abandon(rp->f);
    rp->f = NULL;
    jr__memfs_free(rp->vfs);
}

static uint64_t digest(run *x, jr__stream_fsm *f)
{
    uint64_t d;
    int rc = jr__stream_fsm_digest(f, &d);
    EXPECT(x, rc == 0, "digest: %s", jr_strerror(rc));
    return d;
}

typedef struct collect {
    uint32_t n;
    jr__stream_result r[MAXOPS];
} collect;

static void collect_fn(void *arg, uint32_t i, const jr__stream_result *r)
{
    collect *c = arg;
    if (i < MAXOPS) c->r[i] = *r;
    c->n = i + 1;
}

/* Applies entry i (0-based, index i + 1) to f. Returns the apply result; *c gets the results. */
static int apply(run *x, jr__stream_fsm *f, size_t i, collect *c)
{
    memset(c, 0, sizeof *c);
    return jr__stream_fsm_apply(f, i + 1, x->e[i].p, x->e[i].n, collect_fn, c);
}

/* Applies entry i to the replica under test; the results must be the reference's. */
static int apply_checked(run *x, size_t i)
{
    collect c;
    int rc = apply(x, x->rep.f, i, &c);
    if (rc) return rc;
    const entry *e = &x->e[i];
    EXPECT(x, c.n == e->nres, "entry %zu: %u results, the reference had %u", i + 1, c.n, e->nres);
    for (uint32_t k = 0; k < c.n; k++) {
        const jr__stream_result *a = &c.r[k], *b = &e->res[k];
        EXPECT(x,
               a->type == b->type && a->status == b->status && a->seq == b->seq &&
                   a->duplicate == b->duplicate && a->purged == b->purged,
               "entry %zu op %u: decided %s seq %" PRIu64 " dup %d purged %" PRIu64
               ", the reference %s seq %" PRIu64 " dup %d purged %" PRIu64,
               i + 1, k, jr_err_name(a->status), a->seq, a->duplicate, a->purged,
               jr_err_name(b->status), b->seq, b->duplicate, b->purged);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The log
 */

static jr_stream_config base_config(void)
{
    jr_stream_config c;
    jr_stream_config_init(&c);
    c.name = "ORDERS";
    c.subjects = subjects;
    c.nsubjects = 1;
    c.storage = JR_STORAGE_FILE;
    return c;
}

/* Random limits, discard policy and duplicate window. */
static void random_limits(run *x, jr_stream_config *c)
{
    jr__rand *r = &x->r;
    static const int64_t msgs[] = {-1, 12, 40};
    static const int64_t bytes[] = {-1, 2500, 7000};
    static const int64_t per[] = {-1, 2, 6};
    static const uint64_t age[] = {0, 4 * SEC, 15 * SEC};
    static const uint64_t win[] = {0, 2 * SEC, 8 * SEC, 40 * SEC};
    c->max_msgs = msgs[jr__rand_below(r, 3)];
    c->max_bytes = bytes[jr__rand_below(r, 3)];
    c->max_msgs_per_subject = per[jr__rand_below(r, 3)];
    c->max_age_ns = age[jr__rand_below(r, 3)];
    c->duplicate_window_ns = win[jr__rand_below(r, 4)];
    if (c->max_age_ns && c->duplicate_window_ns > c->max_age_ns)
        c->duplicate_window_ns = c->max_age_ns;
    c->discard = jr__rand_below(r, 3) == 0 ? JR_DISCARD_NEW : JR_DISCARD_OLD;
    c->allow_rollup = jr__rand_below(r, 2);
    c->deny_delete = jr__rand_below(r, 12) == 0;
    c->deny_purge = jr__rand_below(r, 12) == 0;
    if (c->deny_purge) c->allow_rollup = 0; /* roll-ups purge */
}

/* One random op (not a batch) chosen against the reference's state. slot: its buffers. */
static jr__stream_op gen_op(run *x, int slot, jr__buf *cfgbuf)
{
    jr__rand *r = &x->r;
    jr__stream_op op;
    memset(&op, 0, sizeof op);
    jr__store *st = jr__stream_fsm_store(x->ref.f);
    jr__store_state s;
    jr__store_state_get(st, &s);
    uint64_t k = jr__rand_below(r, 100);
    if (jr__rand_below(r, 4) == 0) x->ts += (int64_t)jr__rand_below(r, SEC);
    if (k < 62) {
        const char *subj = gen_subjects[jr__rand_below(r, 5)];
        char *d = x->data[slot];
        size_t dl = (size_t)jr__rand_below(r, 150);
        snprintf(d, sizeof x->data[slot], "%" PRIu64 ":", ++x->counter);
        size_t pre = strlen(d);
        for (size_t i = pre; i < dl; i++) d[i] = (char)('a' + jr__rand_below(r, 26));
        if (dl < pre) dl = pre;
        d[dl] = 0;
        op.type = JR__OP_PUBLISH;
        op.u.pub.subject = subj;
        op.u.pub.subject_len = strlen(subj);
        op.u.pub.data = (const uint8_t *)d;
        op.u.pub.data_len = dl;
        jr__pub_opts *o = &op.u.pub.opts;
        if (jr__rand_below(r, 5) < 2) {
            snprintf(x->ids[slot][0], sizeof x->ids[slot][0], "id-%" PRIu64, jr__rand_below(r, 70));
            o->flags |= JR__PUB_MSG_ID;
            o->msg_id = x->ids[slot][0];
            o->msg_id_len = strlen(o->msg_id);
        }
        switch (jr__rand_below(r, 14)) {
        case 0:
            o->flags |= JR__PUB_EXPECT_LAST_SEQ;
            o->expected_last_seq = s.last_seq - (s.last_seq ? jr__rand_below(r, 2) : 0);
            break;
        case 1:
        case 2: {
            jr__store_msg m;
            uint64_t last = 0;
            if (jr__store_get_last(st, subj, strlen(subj), &m) == 0) last = m.seq;
            o->flags |= JR__PUB_EXPECT_LAST_SUBJ_SEQ;
            o->expected_last_subject_seq = last + (jr__rand_below(r, 3) == 0);
            break;
        }
        case 3: {
            const char *id;
            size_t len;
            jr__stream_fsm_last_msg_id(x->ref.f, &id, &len);
            if (len && len < sizeof x->ids[slot][1] && jr__rand_below(r, 2)) {
                memcpy(x->ids[slot][1], id, len);
            } else {
                strcpy(x->ids[slot][1], "nope");
                len = 4;
            }
            o->flags |= JR__PUB_EXPECT_LAST_MSG_ID;
            o->expected_last_msg_id = x->ids[slot][1];
            o->expected_last_msg_id_len = len;
            break;
        }
        case 4:
            o->flags |= jr__rand_below(r, 6) ? JR__PUB_ROLLUP_SUB : JR__PUB_ROLLUP_ALL;
            break;
        default:
            break;
        }
    } else if (k < 74) {
        op.type = JR__OP_DELETE;
        op.u.del.seq = 1 + jr__rand_below(r, s.last_seq + 2);
        op.u.del.erase = jr__rand_below(r, 3) == 0;
    } else if (k < 77) {
        op.type = JR__OP_PURGE;
        uint64_t v = jr__rand_below(r, 4);
        if (v) {
            op.u.purge.filter = v == 1 ? "orders.a" : v == 2 ? "orders.*" : "orders.c.>";
            op.u.purge.filter_len = strlen(op.u.purge.filter);
        }
        if (jr__rand_below(r, 2))
            op.u.purge.keep = jr__rand_below(r, 5);
        else
            op.u.purge.seq = s.last_seq > 3 ? s.last_seq - jr__rand_below(r, 5) : 0;
    } else if (k < 80 && cfgbuf) {
        jr_stream_config c = x->latest;
        random_limits(x, &c);
        jr__buf_reset(cfgbuf);
        if (jr__stream_config_validate(&c, NULL, 0) == 0 &&
            jr__stream_config_encode(&c, cfgbuf) == 0) {
            op.type = JR__OP_CONFIG;
            op.u.config.cfg = cfgbuf->data;
            op.u.config.len = cfgbuf->len;
            x->latest = c;
        } else {
            op.type = JR__OP_TICK;
        }
    } else {
        op.type = JR__OP_TICK;
        x->ts += (int64_t)jr__rand_below(r, 4 * SEC);
    }
    op.ts = x->ts;
    return op;
}

/* Appends one random entry to the log and applies it to the reference. */
static void gen_entry(run *x)
{
    jr__buf b, cfgbuf;
    jr__buf_init(&b, NULL);
    jr__buf_init(&cfgbuf, NULL);
    jr__stream_op ops[MAXOPS];
    size_t nops = jr__rand_below(&x->r, 8) == 0 ? 2 + jr__rand_below(&x->r, MAXOPS - 1) : 1;
    /* ops of a batch are generated against the state before it: expectations may fail more */
    for (size_t i = 0; i < nops; i++) ops[i] = gen_op(x, (int)i, i == 0 ? &cfgbuf : NULL);
    int rc = nops == 1 ? jr__op_encode(&ops[0], &b) : jr__op_encode_batch(ops, nops, &b);
    ck_assert_int_eq(rc, 0);
    entry *e = &x->e[x->n];
    e->p = malloc(b.len);
    memcpy(e->p, b.data, b.len);
    e->n = b.len;
    jr__buf_free(&b);
    jr__buf_free(&cfgbuf);
    collect c;
    rc = apply(x, x->ref.f, x->n, &c);
    EXPECT(x, rc == 0, "reference: entry %zu: %s", x->n + 1, jr_strerror(rc));
    e->nres = c.n;
    memcpy(e->res, c.r, sizeof e->res);
    x->n++;
}

/* ---------------------------------------------------------------------------------------------
 * Crashes and restarts
 */

/* Moves the lagging peer forward to index `to` (at most n). */
static void peer_advance(run *x, uint64_t to)
{
    replica *L = &x->lag;
    for (uint64_t i = jr__stream_fsm_applied(L->f); i < to && i < x->n; i++) {
        collect c;
        int rc = apply(x, L->f, i, &c);
        EXPECT(x, rc == 0, "peer: entry %" PRIu64 ": %s", i + 1, jr_strerror(rc));
    }
}

static void peer_snapshot(run *x, jr__buf *snap, uint64_t *index)
{
    jr__buf_reset(snap);
    int rc = jr__stream_fsm_snapshot(x->lag.f, snap);
    EXPECT(x, rc == 0, "peer snapshot: %s", jr_strerror(rc));
    *index = jr__stream_fsm_applied(x->lag.f);
}

/* The lagging peer moves to a random index after the replica's and hands it its snapshot and
 * chunks, as a leader does for a replica too far behind. Half the time the peer goes on
 * applying entries while the chunks travel (a source that moves on); as the node does, the last
 * chunk of a round then comes with the peer's snapshot where it was read, and the replica
 * restores that one. Either way it must end exactly in the peer's state. */
static void install_from_peer(run *x)
{
    replica *L = &x->lag;
    uint64_t mine = jr__stream_fsm_applied(x->rep.f);
    uint64_t at = jr__stream_fsm_applied(L->f);
    uint64_t lo = at > mine ? at : mine; /* mostly newer than the replica */
    if (lo < x->n) peer_advance(x, lo + 1 + jr__rand_below(&x->r, x->n - lo));
    int moving = jr__rand_below(&x->r, 2) == 0;
    jr__buf snap;
    jr__buf_init(&snap, NULL);
    uint64_t k, need;
    peer_snapshot(x, &snap, &k);
    int rc = jr__stream_fsm_restore(x->rep.f, k, snap.data, snap.len, &need);
    EXPECT(x, rc == 0, "restore of the peer's snapshot at %" PRIu64 ": %s", k, jr_strerror(rc));
    if (k <= mine) {
        EXPECT(x, need == 0 && jr__stream_fsm_applied(x->rep.f) == mine,
               "an older snapshot (%" PRIu64 " <= %" PRIu64 ") was not ignored", k, mine);
        jr__buf_free(&snap);
        return;
    }
    size_t chunk = 200 + (size_t)jr__rand_below(&x->r, 3000);
    for (int rounds = 0; need; rounds++) {
        EXPECT(x, rounds < 10000, "catch-up does not end");
        if (moving && jr__rand_below(&x->r, 2))
            peer_advance(x, jr__stream_fsm_applied(L->f) + 1 + jr__rand_below(&x->r, 4));
        jr__buf ch;
        jr__buf_init(&ch, NULL);
        uint64_t next;
        rc = jr__stream_fsm_read_chunk(L->f, need, chunk, &ch, &next);
        jr__stream_fsm_info li;
        jr__stream_fsm_info_get(L->f, &li);
        if (rc == JR_ENOTFOUND) {
            rc = 0;
            next = li.last_seq + 1;
        }
        EXPECT(x, rc == 0, "peer chunk: %s", jr_strerror(rc));
        rc = jr__stream_fsm_apply_chunk(x->rep.f, ch.data, ch.len, next);
        jr__buf_free(&ch);
        EXPECT(x, rc == 0, "apply chunk: %s", jr_strerror(rc));
        if (next > li.last_seq && jr__stream_fsm_applied(L->f) != k)
            peer_snapshot(x, &snap, &k); /* the last chunk of a round: the peer's state there */
        rc = jr__stream_fsm_restore(x->rep.f, k, snap.data, snap.len, &need);
        EXPECT(x, rc == 0, "restore after a chunk: %s", jr_strerror(rc));
    }
    jr__buf_free(&snap);
    EXPECT(x, jr__stream_fsm_applied(x->rep.f) == k, "installed at %" PRIu64 ", not %" PRIu64,
           jr__stream_fsm_applied(x->rep.f), k);
    EXPECT(x, jr__stream_fsm_applied(L->f) == k || moving, "the peer moved");
    if (jr__stream_fsm_applied(L->f) == k)
        EXPECT(x, digest(x, x->rep.f) == digest(x, L->f),
               "installed from the peer at %" PRIu64 ": digests differ", k);
    x->installs++;
    x->moving += (uint64_t)moving;
}

/* Power loss of the replica under test, and its restart as a node would do it. */
static void crash_and_restart(run *x)
{
    replica *R = &x->rep;
    int torn = (int)jr__rand_below(&x->r, 2);
    jr__stream_fsm_abandon(R->f);
    R->f = NULL;
    jr__memfs_crash(R->vfs, torn);
    jr__memfs_fail_clear(R->vfs);
    x->crashes++;
    x->torn += (uint64_t)torn;
    /* the config the node has: the first (exact when there is no mark), or the latest */
    const jr_stream_config *c = x->last_mark && jr__rand_below(&x->r, 2) ? &x->latest : &x->first;
    R->f = open_fsm(x, R, c);
    uint64_t at = jr__stream_fsm_applied(R->f);
    if (dbg(x))
        fprintf(stderr,
                "  crash (torn %d): reopened at %" PRIu64 " (last mark %" PRIu64
                ", attempted %" PRIu64 ", log %zu)\n",
                torn, at, x->last_mark, x->attempt, x->n);
    EXPECT(x, at == x->last_mark || (x->attempt && at == x->attempt),
           "reopened at %" PRIu64 ", the last durable mark is %" PRIu64 " (attempted %" PRIu64 ")",
           at, x->last_mark, x->attempt);
    if (at == x->attempt) x->last_mark = at;
    x->attempt = 0;
    if (at && x->have_digest[at])
        EXPECT(x, digest(x, R->f) == x->digest_at[at],
               "reopened at %" PRIu64 " with another state than the reference had there", at);
    if (!at) {
        jr__store_state s;
        jr__store_state_get(jr__stream_fsm_store(R->f), &s);
        EXPECT(x, s.last_seq == 0 && s.msgs == 0, "no mark, yet the store is not empty");
    }
    /* the node's last snapshot: never after the mark, so ignored */
    if (x->snap) {
        uint64_t need;
        int rc = jr__stream_fsm_restore(R->f, x->snap_index, x->snap, x->snap_len, &need);
        EXPECT(x, rc == 0 && need == 0 && jr__stream_fsm_applied(R->f) == at,
               "restore of the local snapshot at %" PRIu64 ": %s", x->snap_index, jr_strerror(rc));
    }
    /* sometimes a peer's newer snapshot arrives first (a leader catching the replica up) */
    if (jr__rand_below(&x->r, 4) == 0) install_from_peer(x);
    /* then the log after the index it is at */
    uint64_t from = jr__stream_fsm_applied(R->f);
    for (size_t i = from; i < x->n; i++) {
        int rc = apply_checked(x, i);
        EXPECT(x, rc == 0, "replay of entry %zu after the restart: %s", i + 1, jr_strerror(rc));
        x->replayed++;
    }
}

/* Records the reference's digest at the replica's index (both are there). */
static void note_digest(run *x)
{
    uint64_t at = jr__stream_fsm_applied(x->rep.f);
    if (at != jr__stream_fsm_applied(x->ref.f) || x->have_digest[at]) return;
    x->digest_at[at] = digest(x, x->ref.f);
    x->have_digest[at] = 1;
}

static const int fail_ops[] = {JR__MEMFS_PWRITE,   JR__MEMFS_SYNC, JR__MEMFS_RENAME,
                               JR__MEMFS_REMOVE,   JR__MEMFS_OPEN, JR__MEMFS_SYNC_DIR,
                               JR__MEMFS_TRUNCATE, JR__MEMFS_PREAD};

static void run_seed(uint64_t seed, run *x)
{
    memset(x, 0, sizeof *x);
    x->seed = seed;
    x->debug = getenv("STREAM_RESTART_DEBUG") != NULL;
    jr__rand_seed(&x->r, seed ^ 0x5eedULL);
    x->first = base_config();
    random_limits(x, &x->first);
    x->latest = x->first;
    x->ts = 1000 * SEC;
    replica_init(x, &x->ref, seed * 3);
    replica_init(x, &x->rep, seed * 3 + 1);
    replica_init(x, &x->lag, seed * 3 + 2);
    size_t total = 150 + (size_t)jr__rand_below(&x->r, 250);
    int failing = 0; /* a sticky I/O failure is scheduled on the replica's memfs */
    while (x->n < total) {
        gen_entry(x);
        replica *R = &x->rep;
        int rc = apply_checked(x, x->n - 1);
        uint64_t ev = jr__rand_below(&x->r, 1000);
        if (!rc && ev < 60) {
            uint64_t at = jr__stream_fsm_applied(R->f);
            note_digest(x);
            rc = jr__stream_fsm_sync(R->f);
            if (rc == 0) {
                x->last_mark = at;
                x->marks++;
            } else {
                x->attempt = at; /* it may have reached the disk */
            }
        } else if (!rc && ev < 80) {
            jr__buf snap;
            jr__buf_init(&snap, NULL);
            uint64_t at = jr__stream_fsm_applied(R->f);
            note_digest(x);
            rc = jr__stream_fsm_snapshot(R->f, &snap);
            if (rc == 0) {
                /* the node writes the file; a crash may still come before that: keep it
                 * only sometimes later */
                free(x->snap);
                x->snap = malloc(snap.len);
                memcpy(x->snap, snap.data, snap.len);
                x->snap_len = snap.len;
                x->snap_index = at;
                x->last_mark = at;
            } else {
                x->attempt = at;
            }
            jr__buf_free(&snap);
        } else if (!rc && !failing && ev < 95) {
            /* the machine will die at its next I/O error, somewhere ahead */
            jr__memfs_fail(R->vfs, fail_ops[jr__rand_below(&x->r, 8)],
                           1 + jr__rand_below(&x->r, 40), JR_EIO, 1, NULL);
            failing = 1;
            x->failures++;
        }
        if (rc || ev >= 975 || (failing && ev >= 960)) {
            if (dbg(x))
                fprintf(stderr, "  entry %zu: %s\n", x->n, rc ? jr_strerror(rc) : "power loss");
            crash_and_restart(x);
            failing = 0;
        }
    }
    /* the end: caught up, the replica is the reference */
    jr__memfs_fail_clear(x->rep.vfs);
    if (jr__rand_below(&x->r, 2)) crash_and_restart(x);
    EXPECT(x, jr__stream_fsm_applied(x->rep.f) == x->n, "not caught up");
    EXPECT(x, digest(x, x->rep.f) == digest(x, x->ref.f), "the replica differs at the end");
    jr__stream_fsm_info a, b;
    jr__stream_fsm_info_get(x->rep.f, &a);
    jr__stream_fsm_info_get(x->ref.f, &b);
    EXPECT(x, a.dedup_ids == b.dedup_ids && a.clock == b.clock && a.last_seq == b.last_seq,
           "info differs");
    replica_done(&x->ref);
    replica_done(&x->rep);
    replica_done(&x->lag);
    for (size_t i = 0; i < x->n; i++) free(x->e[i].p);
    free(x->snap);
}

START_TEST(restart_is_exact)
{
    const char *e = getenv("STREAM_RESTART_SEEDS");
    const char *fs = getenv("STREAM_RESTART_FIRST");
    uint64_t n = e ? strtoull(e, NULL, 10) : 1500;
    uint64_t first = fs ? strtoull(fs, NULL, 10) : 1;
    static run x;
    uint64_t crashes = 0, torn = 0, failures = 0, installs = 0, moving = 0, replayed = 0, marks = 0,
             entries = 0;
    for (uint64_t seed = first; seed < first + n; seed++) {
        run_seed(seed, &x);
        crashes += x.crashes;
        torn += x.torn;
        failures += x.failures;
        installs += x.installs;
        moving += x.moving;
        replayed += x.replayed;
        marks += x.marks;
        entries += x.n;
    }
    fprintf(stderr,
            "stream restart: %" PRIu64 " seeds, %" PRIu64 " entries, %" PRIu64 " marks, %" PRIu64
            " crashes (%" PRIu64 " torn, %" PRIu64 " after I/O failures), %" PRIu64
            " peer installs (%" PRIu64 " from a peer that moved on), %" PRIu64
            " entries replayed; 0 divergences\n",
            n, entries, marks, crashes, torn, failures, installs, moving, replayed);
    ck_assert_uint_gt(crashes, n); /* crashes happened */
}
END_TEST

int main(int argc, char **argv)
{
    if (argc > 1) setenv("STREAM_RESTART_SEEDS", argv[1], 0);
    Suite *s = suite_create("stream-restart");
    TCase *tc = tcase_create("restart");
    tcase_set_timeout(tc, 7200);
    tcase_add_test(tc, restart_is_exact);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
