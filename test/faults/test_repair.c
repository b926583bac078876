/*
 * Damaged replicas are repaired from their peers: each test damages the simulated disk of one
 * (or two) servers of a three-server cluster while it is down — bits flipped, a range zeroed, a
 * tail cut, a file deleted — in WAL segments, store blocks or snapshot files, restarts it, and
 * checks the outcome through the public API and jetraft/sim.h:
 *
 *  - one replica of three (stream or consumer): it reports damaged or unvouched, is never shown
 *    current or leading until repaired, is repaired by its peers (snapshot and catch-up) and
 *    reports whole, and holds every acknowledged message at its seq (checker.h); a consumer's
 *    replica converges to its leader's state and a confirmed ack is never redelivered, even
 *    once the repaired replica leads;
 *  - a store whose block is damaged while its server runs: no read returns the damaged bytes,
 *    the replica is rebuilt from the group's snapshot and log and its peers, health reports its
 *    state machine failed meanwhile (not damaged: its group's log is whole); a consumer whose
 * leader's store cannot read a message never terminates it; a consumer replica whose state machine
 * failed is rebuilt;
 *  - a corrupt or deleted snapshot file of the meta group: the server keeps its streams;
 *  - the same damage on two of three replicas: no read returns wrong data as if good, health
 *    says so, and nothing a whole copy holds is lost;
 *  - two voters, one damaged: R2 recovers by itself; R3 with one server gone for good stays
 *    without a leader (and says so) until jr_node_rescue declares it gone, then loses nothing the
 *    whole voter holds.
 *
 * JR_SEEDS=first:count runs every scenario with count seeds (default: one, the fixed ones);
 * JR_E2E_LOG=1 prints the nodes' log lines, JR_REPAIR_TRACE=1 the failed reads.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"
#include "js/js.h"
#include "node/node.h"

#define STREAM "R"
#define CONSUMER "D"

/* Files ------------------------------------------------------------------------------------*/

enum target { T_WAL, T_NEWEST_WAL, T_BLOCK, T_SNAP, T_META_SNAP, T_CONSUMER_SNAP };
enum kind { K_FLIP, K_ZERO, K_CUT, K_DELETE, K_DELETE_ALL };

typedef struct pick {
    enum target t;
    char prefix[64]; /* snapshot files: "/wal/snap/<group hex>-" */
    char path[160];
    uint64_t size;
    int n; /* matches seen */
} pick;

static int is_wal_segment(const char *path)
{
    size_t k = strlen(path);
    return !strncmp(path, "/wal/", 5) && !strchr(path + 5, '/') && k > 9 &&
           !strcmp(path + k - 4, ".wal");
}

static int pick_cb(void *arg, const char *path, uint64_t size)
{
    pick *p = arg;
    size_t k = strlen(path);
    int match = 0;
    switch (p->t) {
    case T_WAL: /* the oldest segment holding something */
        match = is_wal_segment(path) && size > 0 && !p->n;
        break;
    case T_NEWEST_WAL:
        match = is_wal_segment(path) && size > 0;
        break;
    case T_BLOCK: /* the first block file: sealed and synced */
        match = !strncmp(path, "/store/" STREAM "/", 9) && k > 4 && !strcmp(path + k - 4, ".blk") &&
                !p->n;
        break;
    default: /* the group's newest snapshot */
        match =
            !strncmp(path, p->prefix, strlen(p->prefix)) && k > 5 && !strcmp(path + k - 5, ".snap");
        break;
    }
    if (match) {
        snprintf(p->path, sizeof p->path, "%s", path);
        p->size = size;
        p->n++;
    }
    return 0;
}

static void find_file(jr_sim *sim, unsigned i, enum target t, uint64_t group, pick *p)
{
    memset(p, 0, sizeof *p);
    p->t = t;
    if (group)
        snprintf(p->prefix, sizeof p->prefix, "/wal/snap/%016llx-", (unsigned long long)group);
    ck_assert_int_eq(jr_sim_files(sim, i, pick_cb, p), 0);
}

typedef struct seglist {
    char path[64][160];
    int n;
} seglist;

static int seg_cb(void *arg, const char *path, uint64_t size)
{
    seglist *l = arg;
    (void)size;
    if (is_wal_segment(path) && l->n < 64) snprintf(l->path[l->n++], sizeof l->path[0], "%s", path);
    return 0;
}

static void damage(jr_sim *sim, unsigned i, const pick *p, enum kind kind)
{
    if (kind == K_DELETE_ALL) { /* every WAL segment: the node's whole log */
        static seglist l;
        memset(&l, 0, sizeof l);
        ck_assert_int_eq(jr_sim_files(sim, i, seg_cb, &l), 0);
        ck_assert_int_gt(l.n, 0);
        for (int j = 0; j < l.n; j++) ck_assert_int_eq(jr_sim_remove_file(sim, i, l.path[j]), 0);
        return;
    }
    ck_assert_msg(p->path[0], "n%u has no file of target %d to damage", i, p->t);
    switch (kind) {
    case K_FLIP:
        ck_assert_int_eq(jr_sim_flip_bits(sim, i, p->path, p->size / 3, p->size / 3 + 1, 24), 0);
        break;
    case K_ZERO:
        ck_assert_int_eq(jr_sim_zero(sim, i, p->path, p->size / 2, 4096), 0);
        break;
    case K_CUT:
        ck_assert_int_eq(jr_sim_cut_tail(sim, i, p->path, p->size / 2 + 1), 0);
        break;
    default:
        ck_assert_int_eq(jr_sim_remove_file(sim, i, p->path), 0);
        break;
    }
}

/* Cluster ----------------------------------------------------------------------------------*/

static uint64_t g_seg_bytes = 128u << 10;
/* JR_SEEDS=first:count runs every scenario with `count` seeds, the run's own seed + first + i
 * (default 0:1: the fixed scenarios) */
static uint64_t first_seed = 0, nseeds = 1, g_off;

/* A test that runs the scenario `call` once per seed of the loop (its index _i). */
#define SEEDED_TEST(name, call)                                                                    \
    START_TEST(name)                                                                               \
    {                                                                                              \
        g_off = first_seed + (uint64_t)_i;                                                         \
        call;                                                                                      \
    }                                                                                              \
    END_TEST

/* Adds a test of a case table to TCase tc, once per seed. */
#define ADD_SEEDED_TO_t2(name, call) tcase_add_loop_test(t2, name, 0, (int)nseeds);
#define ADD_SEEDED_TO_t5(name, call) tcase_add_loop_test(t5, name, 0, (int)nseeds);
#define ADD_SEEDED_TO_tc(name, call) tcase_add_loop_test(tc, name, 0, (int)nseeds);
#define ADD_SEEDED_TO_tr(name, call) tcase_add_loop_test(tr, name, 0, (int)nseeds);

static void small_files(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    (void)i;
    cfg->store_block_bytes = JR_STORE_BLOCK_MIN;
    cfg->wal_segment_bytes = g_seg_bytes;
}

/* Three servers with small files (seed offset by the loop's), the meta group up. */
static void servers(e2e *c, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->configure_more = small_files;
    ck_assert_int_eq(e2e_new(c, 3, seed + g_off, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(c, 3, 20 * SEC), 0);
}

/* Stream `name` on `subject` with `replicas` replicas, added through n0; with wait, until its
 * followers (replicas - 1 of them) are up. */
static void add_stream(e2e *c, const char *name, const char *subject, int replicas, int wait)
{
    const char *subjects[] = {subject};
    jr_stream_config cfg;
    e2e_config(&cfg, name, subjects, 1, replicas);
    e2e_res r;
    ck_assert_msg(e2e_add(c, 0, &cfg, &r) == 0, "add %s: %s", name, r.msg);
    if (wait) ck_assert_int_ge(e2e_wait_stream(c, 0, name, replicas - 1, 20 * SEC), 0);
}

/* The usual shape: three servers, their stream groups snapshotting every 300 entries, and the
 * R3 stream STREAM on r.> with its followers up. */
static void cluster(e2e *c, uint64_t seed)
{
    servers(c, seed);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(c, i, 300);
    add_stream(c, STREAM, "r.>", 3, 1);
}

static int stream_leader(e2e *c)
{
    for (unsigned i = 0; i < 3; i++) {
        jr_group *g = e2e_group(c, i, STREAM);
        if (!g) continue;
        jr_group_status st;
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        if (jr_group_status_get(g, &st) == 0 && st.role == JR_LEADER) return (int)i;
    }
    return -1;
}

/* Starts checker k on the stream, every replica required whole after healing, and has n
 * messages acknowledged through n0. */
static void fill(fchk *k, e2e *c, size_t n)
{
    fchk_init(k, c, STREAM, "r", 0);
    k->require_whole = 1;
    ck_assert_uint_eq(fchk_publish_n(k, 0, n, 64, -1, 60 * SEC), n);
}

/* 200 more publishes through via, then the checker's final pass over nodes[0..n-1] (dumped if
 * it failed; the caller asserts k->fail). */
static void publish_and_final(fchk *k, const unsigned *nodes, size_t n, unsigned via)
{
    fchk_publish_n(k, via, 200, 32, -1, 30 * SEC);
    fchk_final(k, nodes, n, via, 30 * SEC);
    if (k->fail[0]) fchk_dump(k, nodes, n);
}

/* Damages the file of target t (a log or store file, not a group's snapshot) on down node i;
 * p is the file picked. */
static void damage_file(e2e *c, unsigned i, enum target t, enum kind kind, pick *p)
{
    find_file(c->sim, i, t, 0, p);
    damage(c->sim, i, p, kind);
}

/* One replica of a stream --------------------------------------------------------------------*/

static void one_stream_replica(enum target t, enum kind kind, int victim_leads)
{
    e2e c;
    cluster(&c, 7);
    fchk k;
    fchk_init(&k, &c, STREAM, "r", 0);
    k.require_whole = 1;
    k.grace_ns = 2 * MS;
    k.unflagged_ns = 31 * MS;
    k.current_samples = 2;
    ck_assert_uint_eq(fchk_publish_n(&k, 0, 1500, 64, -1, 60 * SEC), 1500);
    int l = stream_leader(&c);
    ck_assert_int_ge(l, 0);
    unsigned v = victim_leads ? (unsigned)l : (unsigned)(l + 1) % 3;
    unsigned other = (v + 1) % 3 == (unsigned)l ? (v + 2) % 3 : (v + 1) % 3;
    if (victim_leads) other = (v + 1) % 3;
    ck_assert_int_eq(jr_sim_crash(c.sim, v), 0);
    pick p;
    find_file(c.sim, v, t, t == T_SNAP ? e2e_group(&c, other, STREAM)->id : 0, &p);
    damage(c.sim, v, &p, kind);
    k.strict = kind != K_CUT || t != T_WAL;
    fchk_fault(&k, v);
    /* the others go on meanwhile */
    fchk_publish_n(&k, other, 300, 32, -1, 30 * SEC);
    ck_assert_int_eq(e2e_restart(&c, v), 0);
    fchk_restarted(&k);
    ck_assert_msg(fchk_damaged(&k, v) == 1, "n%u restarted from a damaged disk reports whole", v);
    fchk_watch(&k, other);
    fchk_publish_n(&k, other, 300, 32, (int)other, 30 * SEC);
    const unsigned all[] = {0, 1, 2};
    fchk_final(&k, all, 3, other, 30 * SEC);
    if (k.fail[0]) fchk_dump(&k, all, 3);
    ck_assert_msg(k.fail[0] == 0, "%s (n%u): %s", p.path, v, k.fail);
    ck_assert_msg(k.damaged_seen, "n%u was never reported damaged or unvouched", v);
    fchk_free(&k);
    e2e_free(&c);
}

/* One replica of the stream damaged, in the order they run: (test, scenario). */
#define STREAM_REPLICA_CASES(X)                                                                    \
    X(stream_follower_wal_flip, one_stream_replica(T_WAL, K_FLIP, 0))                              \
    X(stream_follower_wal_deleted, one_stream_replica(T_WAL, K_DELETE, 0))                         \
    X(stream_follower_wal_tail_cut, one_stream_replica(T_NEWEST_WAL, K_CUT, 0))                    \
    X(stream_follower_block_zeroed, one_stream_replica(T_BLOCK, K_ZERO, 0))                        \
    X(stream_follower_block_deleted, one_stream_replica(T_BLOCK, K_DELETE, 0))                     \
    X(stream_follower_snapshot_flip, one_stream_replica(T_SNAP, K_FLIP, 0))                        \
    X(stream_follower_snapshot_deleted, one_stream_replica(T_SNAP, K_DELETE, 0))                   \
    X(stream_leader_wal_zeroed, one_stream_replica(T_WAL, K_ZERO, 1))                              \
    X(stream_leader_block_flip, one_stream_replica(T_BLOCK, K_FLIP, 1))
STREAM_REPLICA_CASES(SEEDED_TEST)

/* Consumers ----------------------------------------------------------------------------------*/

typedef struct cres {
    int done, status;
    char msg[256];
} cres;

static void consumer_cb(void *arg, int status, const char *msg, const char *name)
{
    cres *r = arg;
    (void)name;
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "");
}

static void admin_cb(void *arg, int status, const char *msg)
{
    consumer_cb(arg, status, msg, NULL);
}

static int cres_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((cres *)arg)->done;
}

#define MAXD 4096

typedef struct fetched {
    int done, status;
    size_t n;
    uint64_t seq[MAXD];
    char token[MAXD][160];
    uint64_t sum[MAXD]; /* xxh3-free checksum of the payload: its length and first bytes */
    char head[MAXD][24];
} fetched;

static void fetch_cb(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                     const jr_fetch_end *end)
{
    fetched *f = arg;
    (void)msg;
    if (m) {
        if (f->n < MAXD) {
            f->seq[f->n] = m->stream_seq;
            snprintf(f->token[f->n], sizeof f->token[0], "%s", m->ack_token);
            f->sum[f->n] = m->len;
            size_t h = m->len < sizeof f->head[0] - 1 ? m->len : sizeof f->head[0] - 1;
            memcpy(f->head[f->n], m->data, h);
            f->head[f->n][h] = 0;
            f->n++;
        }
        return;
    }
    if (!end && status == 0) return; /* idle heartbeat */
    f->done = 1;
    f->status = status;
}

static int fetched_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((fetched *)arg)->done;
}

/* Fetches up to batch messages through node via; returns how many came. */
static size_t fetch_some(e2e *c, unsigned via, int64_t batch, fetched *f)
{
    memset(f, 0, sizeof *f);
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = batch;
    o.expires_ns = (int64_t)(500 * MS);
    ck_assert_int_eq(jr_consumer_fetch(e2e_node(c, via), STREAM, CONSUMER, &o, fetch_cb, f), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, fetched_done, f, 30 * SEC), 0);
    return f->n;
}

/* Acks every message of f, confirmed; fails the test on an error. */
static void ack_all(e2e *c, unsigned via, const fetched *f)
{
    for (size_t i = 0; i < f->n; i++) {
        cres r;
        memset(&r, 0, sizeof r);
        ck_assert_int_eq(
            jr_consumer_ack(e2e_node(c, via), f->token[i], JR_ACK_ACK, 0, NULL, admin_cb, &r), 0);
        ck_assert_int_eq(jr_sim_run_until(c->sim, cres_done, &r, 30 * SEC), 0);
        ck_assert_msg(r.status == 0, "ack of seq %llu: %s", (unsigned long long)f->seq[i], r.msg);
    }
}

/* Creates durable consumer CONSUMER on the stream via n0 (ack_wait_ns 0: the default). */
static void create_consumer(e2e *c, int64_t ack_wait_ns)
{
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.durable_name = CONSUMER;
    cc.ack_wait_ns = ack_wait_ns;
    cres cr;
    memset(&cr, 0, sizeof cr);
    ck_assert_int_eq(jr_consumer_create(e2e_node(c, 0), STREAM, &cc, consumer_cb, &cr), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, cres_done, &cr, 30 * SEC), 0);
    ck_assert_msg(cr.status == 0, "consumer: %s", cr.msg);
}

static int consumer_leader(e2e *c)
{
    for (unsigned i = 0; i < 3; i++)
        if (e2e_node(c, i) && e2e_consumer_leader(c, i, STREAM, CONSUMER) == (int)i) return (int)i;
    return -1;
}

static int consumer_damaged(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    uint64_t gid = e2e_consumer_group(c, i, STREAM, CONSUMER);
    if (!n || !gid) return -1;
    jr_group *g = jr_node_group(n, gid);
    if (!g) return -1;
    jr_group_status st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    if (jr_group_status_get(g, &st) != 0) return -1;
    return st.damaged || st.unvouched;
}

static void one_consumer_replica(enum target t, enum kind kind)
{
    e2e c;
    cluster(&c, 11);
    e2e_res er;
    for (int i = 0; i < 400; i++) {
        char data[32];
        snprintf(data, sizeof data, "m%d", i);
        ck_assert_int_eq(e2e_publish(&c, (unsigned)i % 3, "r.x", data, strlen(data), NULL, &er), 0);
    }
    create_consumer(&c, 0);
    static fetched f;
    /* 300 deliveries and acks, one fetch of 10 at a time: snapshots of the consumer group */
    uint64_t next = 1;
    while (next <= 300) {
        size_t got = fetch_some(&c, 0, 10, &f);
        ck_assert_uint_gt(got, 0);
        for (size_t i = 0; i < got; i++) ck_assert_uint_eq(f.seq[i], next++);
        ack_all(&c, 1, &f);
    }
    int l = consumer_leader(&c);
    ck_assert_int_ge(l, 0);
    unsigned v = (unsigned)(l + 1) % 3, other = (unsigned)(l + 2) % 3;
    uint64_t gid = e2e_consumer_group(&c, v, STREAM, CONSUMER);
    ck_assert_uint_ne(gid, 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, v), 0);
    pick p;
    find_file(c.sim, v, t, t == T_CONSUMER_SNAP ? gid : 0, &p);
    damage(c.sim, v, &p, kind);
    /* 50 more delivered and acked without it */
    while (next <= 350) {
        size_t got = fetch_some(&c, other, 10, &f);
        ck_assert_uint_gt(got, 0);
        for (size_t i = 0; i < got; i++) ck_assert_uint_eq(f.seq[i], next++);
        ack_all(&c, other, &f);
    }
    ck_assert_int_eq(e2e_restart(&c, v), 0);
    ck_assert_msg(consumer_damaged(&c, v) != 0, "n%u's consumer replica reports whole at once", v);
    /* repaired: whole, and its state the leader's */
    int ok = 0;
    for (int s = 0; s < 300 && !ok; s++) {
        jr_sim_run_for(c.sim, 100 * MS);
        int lead = consumer_leader(&c);
        uint64_t dv = 0, dl = 0, av = 0, al = 0;
        ok = lead >= 0 && consumer_damaged(&c, v) == 0 &&
             e2e_consumer_digest(&c, v, STREAM, CONSUMER, &dv, &av) == 0 &&
             e2e_consumer_digest(&c, (unsigned)lead, STREAM, CONSUMER, &dl, &al) == 0 && dv == dl;
    }
    char line[512];
    e2e_consumer_describe(&c, v, STREAM, CONSUMER, line, sizeof line);
    ck_assert_msg(ok, "n%u's consumer replica was not repaired (%s): %s", v, p.path, line);
    /* it leads now: what was acknowledged is never delivered again */
    int lead = consumer_leader(&c);
    if (lead != (int)v) {
        cres cr;
        memset(&cr, 0, sizeof cr);
        ck_assert_int_eq(jr_consumer_stepdown(e2e_node(&c, (unsigned)lead), STREAM, CONSUMER,
                                              jr_sim_name(c.sim, v), admin_cb, &cr),
                         0);
        ck_assert_int_eq(jr_sim_run_until(c.sim, cres_done, &cr, 30 * SEC), 0);
        ck_assert_msg(cr.status == 0, "stepdown to n%u: %s", v, cr.msg);
    }
    while (next <= 400) {
        size_t got = fetch_some(&c, v, 25, &f);
        ck_assert_uint_gt(got, 0);
        for (size_t i = 0; i < got; i++)
            ck_assert_msg(f.seq[i] == next, "delivered seq %llu, expected %llu",
                          (unsigned long long)f.seq[i], (unsigned long long)next),
                next++;
        ack_all(&c, v, &f);
    }
    ck_assert_uint_eq(fetch_some(&c, v, 5, &f), 0);
    e2e_free(&c);
}

/* One replica of a consumer damaged, in the order they run: (test, scenario). */
#define CONSUMER_REPLICA_CASES(X)                                                                  \
    X(consumer_follower_wal_flip, one_consumer_replica(T_NEWEST_WAL, K_FLIP))                      \
    X(consumer_follower_wal_deleted, one_consumer_replica(T_NEWEST_WAL, K_DELETE))                 \
    X(consumer_follower_snapshot_zeroed, one_consumer_replica(T_CONSUMER_SNAP, K_ZERO))            \
    X(consumer_follower_snapshot_deleted, one_consumer_replica(T_CONSUMER_SNAP, K_DELETE))
CONSUMER_REPLICA_CASES(SEEDED_TEST)

/* The meta group's snapshot ------------------------------------------------------------------*/

/* With quiet = 1 nothing happens after the restart for a while (the meta group is idle and
 * quiet): the meta leader still learns of the replica that lost its configuration with the
 * snapshot (the answer to its node's listing shows it holds nothing; the replica also asks
 * every server its node knows of, raft/vouch.c) and repairs it unprompted. */
static void meta_snapshot_q(enum kind kind, int quiet)
{
    e2e c;
    cluster(&c, 13);
    /* the meta group snapshots often: its newest snapshot holds the stream */
    for (unsigned i = 0; i < 3; i++)
        jr__group_set_snapshot_entries(jr__js_of(e2e_node(&c, i))->meta, 2);
    add_stream(&c, "S2", "s2.>", 3, 0);
    fchk k;
    fill(&k, &c, 500);
    jr_sim_run_for(c.sim, 1 * SEC);
    unsigned v = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, v), 0);
    pick p;
    find_file(c.sim, v, T_META_SNAP, JR_GROUP_ID_HOST_MAX + 1, &p);
    ck_assert_msg(p.path[0], "n1 has no meta snapshot");
    damage(c.sim, v, &p, kind);
    ck_assert_int_eq(e2e_restart(&c, v), 0);
    if (quiet) {
        jr_sim_run_for(c.sim, 10 * SEC);
        ck_assert_msg(e2e_meta_has(&c, v, "S2") && e2e_meta_has(&c, v, STREAM),
                      "n1's meta state lacks the streams 10 s after its restart");
    }
    fchk_publish_n(&k, 0, 200, 32, -1, 30 * SEC);
    const unsigned all[] = {0, 1, 2};
    fchk_final(&k, all, 3, 0, 30 * SEC);
    ck_assert_msg(k.fail[0] == 0, "%s: %s", p.path, k.fail);
    ck_assert_msg(e2e_has_replica(&c, v, "S2"), "n1 dropped stream S2");
    ck_assert_msg(e2e_meta_has(&c, v, "S2") && e2e_meta_has(&c, v, STREAM),
                  "n1's meta state lacks the streams");
    fchk_free(&k);
    e2e_free(&c);
}

static void meta_snapshot(enum kind kind)
{
    meta_snapshot_q(kind, 0);
}

/* The meta group's snapshot damaged, in the order they run: (test, scenario). */
#define META_SNAPSHOT_CASES(X)                                                                     \
    X(meta_snapshot_corrupt, meta_snapshot(K_FLIP))                                                \
    X(meta_snapshot_deleted, meta_snapshot(K_DELETE))                                              \
    X(meta_snapshot_deleted_quiet, meta_snapshot_q(K_DELETE, 1))
META_SNAPSHOT_CASES(SEEDED_TEST)

/* A store damaged while its server runs ------------------------------------------------------*/

/* Zeroes len bytes at off of node i's file path while the node runs (the medium failing under
 * it: the simulator's damage calls need the node down). */
static void zero_running(e2e *c, unsigned i, const char *path, uint64_t off, size_t len)
{
    jr_vfs *v = jr_sim_vfs(c->sim, i);
    jr_file *f;
    ck_assert_int_eq(v->open(v->ctx, path, 0, &f), 0);
    static const char zeros[8192];
    ck_assert_uint_le(len, sizeof zeros);
    ck_assert_int_eq(v->pwrite(v->ctx, f, zeros, len, off), 0);
    ck_assert_int_eq(v->sync(v->ctx, f), 0);
    v->close(v->ctx, f);
}

typedef struct hres {
    int done, status, healthy;
    size_t ngroups;
    int damaged, fsm_failed;
    char text[256];
} hres;

static void health_cb(void *arg, int status, const char *msg, const jr_node_health_info *h)
{
    hres *r = arg;
    (void)msg;
    r->done = 1;
    r->status = status;
    if (!h) return;
    r->healthy = h->healthy;
    r->ngroups = h->ngroups;
    for (size_t i = 0; i < h->ngroups; i++) {
        if (h->groups[i]->damaged) r->damaged = 1;
        if (h->groups[i]->fsm_failed) r->fsm_failed = 1;
        snprintf(r->text, sizeof r->text, "%s", h->groups[i]->text);
    }
}

static int hres_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((hres *)arg)->done;
}

static void node_health(e2e *c, unsigned i, hres *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_node_health(e2e_node(c, i), health_cb, r), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, hres_done, r, 10 * SEC), 0);
}

/* Node i's health reports a damaged store and the node not healthy: the replica's state machine
 * failed (or is rebuilt from its peers), in its flag and its text; its group's log is whole. */
static void assert_reports_damaged(e2e *c, unsigned i)
{
    hres h;
    node_health(c, i, &h);
    ck_assert_msg(h.fsm_failed && !h.healthy, "n%u's health does not report its damaged store", i);
    ck_assert_msg(strstr(h.text, "state machine") != NULL,
                  "n%u's health does not name its state machine: %s", i, h.text);
}

/* Reads acknowledged seqs [from, to] through node via: every answer with data must be the
 * acknowledged message; returns how many answered with it. */
static size_t read_back(fchk *k, unsigned via, uint64_t from, uint64_t to)
{
    size_t good = 0;
    for (uint64_t q = from; q <= to; q++) {
        size_t idx = k->by_seq[q - 1];
        if (!idx) continue;
        e2e_res r;
        int rc = e2e_msg_get(k->c, via, STREAM, q, &r);
        if (rc != 0) {
            if (getenv("JR_REPAIR_TRACE"))
                fprintf(stderr, "read seq %llu via n%u: %s %s\n", (unsigned long long)q, via,
                        jr_err_name(rc), r.msg);
            continue;
        }
        char want[256];
        size_t len = fchk_payload(idx - 1, want, sizeof want);
        ck_assert_msg(r.len == len && !memcmp(r.data, want, len),
                      "seq %llu read through n%u returned other bytes than acknowledged",
                      (unsigned long long)q, via);
        good++;
    }
    return good;
}

static void block_damaged_running(int victim_leads)
{
    e2e c;
    cluster(&c, 17);
    fchk k;
    fill(&k, &c, 1500);
    jr_sim_run_for(c.sim, 3 * SEC); /* idle: the stores drop what they cached */
    int l = stream_leader(&c);
    ck_assert_int_ge(l, 0);
    unsigned v = victim_leads ? (unsigned)l : (unsigned)(l + 1) % 3;
    unsigned other = victim_leads ? (unsigned)(l + 1) % 3 : (unsigned)(l + 2) % 3;
    pick p;
    find_file(c.sim, v, T_BLOCK, 0, &p);
    ck_assert_msg(p.path[0] && p.size > 8192, "n%u has no sealed block", v);
    zero_running(&c, v, p.path, p.size / 2, 4096);
    if (!victim_leads) {
        e2e_res r;
        e2e_stepdown(&c, (unsigned)l, STREAM, jr_sim_name(c.sim, v), &r);
        jr_sim_run_for(c.sim, 500 * MS);
    }
    /* reads never return the damaged bytes; the replica finds the damage, and health reports
     * it until it is rebuilt */
    uint64_t q = 1;
    while (q <= 300 && read_back(&k, other, q, q) == 1) q++;
    ck_assert_msg(q <= 300, "n%u served every message from its damaged block", v);
    hres h;
    assert_reports_damaged(&c, v);
    read_back(&k, v, 1, 300);
    /* repaired: the stream serves every acknowledged message again, from every replica */
    int ok = 0;
    for (int s = 0; s < 100 && !ok; s++) {
        jr_sim_run_for(c.sim, 100 * MS);
        ok = read_back(&k, other, 1, 300) == 300;
    }
    ck_assert_msg(ok, "the stream does not serve every acknowledged message again");
    const unsigned all[] = {0, 1, 2};
    publish_and_final(&k, all, 3, other);
    ck_assert_msg(k.fail[0] == 0, "%s (n%u): %s", p.path, v, k.fail);
    node_health(&c, v, &h);
    ck_assert_msg(h.healthy, "n%u not healthy after the repair: %s", v, h.text);
    fchk_free(&k);
    e2e_free(&c);
}

/* A block damaged while its server runs, in the order they run: (test, scenario). */
#define RUNNING_CASES(X)                                                                           \
    X(block_damaged_running_follower, block_damaged_running(0))                                    \
    X(block_damaged_running_leader, block_damaged_running(1))
RUNNING_CASES(SEEDED_TEST)

/* Two replicas of three damaged ----------------------------------------------------------------*/

/* Follower-only damage on both followers (whole leader) or on the leader and one follower. Every
 * read answered with data is the acknowledged message; the whole copy's messages survive. */
static void two_of_three(enum target t, enum kind kind, int with_leader)
{
    e2e c;
    cluster(&c, 19);
    fchk k;
    fill(&k, &c, 1500);
    int l = stream_leader(&c);
    ck_assert_int_ge(l, 0);
    unsigned a = with_leader ? (unsigned)l : (unsigned)(l + 1) % 3;
    unsigned b = (unsigned)(l + 2) % 3;
    unsigned whole = 3 - a - b;
    ck_assert_int_eq(jr_sim_crash(c.sim, a), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, b), 0);
    pick p;
    damage_file(&c, a, t, kind, &p);
    damage_file(&c, b, t, kind, &p);
    ck_assert_int_eq(e2e_restart(&c, a), 0);
    ck_assert_int_eq(e2e_restart(&c, b), 0);
    /* reads through every server: never other bytes than acknowledged */
    for (int s = 0; s < 3; s++) {
        jr_sim_run_for(c.sim, 300 * MS);
        for (unsigned i = 0; i < 3; i++)
            read_back(&k, i, 1 + 97 * (uint64_t)s, 40 + 97 * (uint64_t)s);
    }
    const unsigned all[] = {0, 1, 2};
    publish_and_final(&k, all, 3, whole);
    ck_assert_msg(k.fail[0] == 0, "%s (n%u, n%u): %s", p.path, a, b, k.fail);
    fchk_free(&k);
    e2e_free(&c);
}

/* Two replicas of three damaged, in the order they run: (test, scenario). */
#define TWO_OF_THREE_CASES(X)                                                                      \
    X(two_followers_block_zeroed, two_of_three(T_BLOCK, K_ZERO, 0))                                \
    X(leader_and_follower_block_deleted, two_of_three(T_BLOCK, K_DELETE, 1))                       \
    X(two_followers_wal_tail_cut, two_of_three(T_NEWEST_WAL, K_CUT, 0))                            \
    X(leader_and_follower_wal_tail_cut, two_of_three(T_NEWEST_WAL, K_CUT, 1))                      \
    X(leader_and_follower_wal_flip, two_of_three(T_NEWEST_WAL, K_FLIP, 1))                         \
    X(leader_and_follower_wal_lost, two_of_three(T_NEWEST_WAL, K_DELETE_ALL, 1))
TWO_OF_THREE_CASES(SEEDED_TEST)

/* Two of five ------------------------------------------------------------------------------*/

/* Five servers, the meta group R5, and the R5 stream STREAM on r.> with its followers up. */
static void cluster5(e2e *c, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->configure_more = small_files;
    ck_assert_int_eq(e2e_new(c, 5, seed + g_off, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(c, 5, 20 * SEC), 0);
    for (unsigned i = 0; i < 5; i++) e2e_snapshot_every(c, i, 300);
    add_stream(c, STREAM, "r.>", 5, 1);
}

/* Two replicas of five (a minority, the leader among them or not) crash with the same damage on
 * their disks — which also hold their meta replicas' records — while the three others commit on;
 * restarted, the two are repaired from the whole ones: every acknowledged message is there,
 * once, reads never return other bytes, and the stream is not deleted. */
static void two_of_five(enum target t, enum kind kind, int with_leader)
{
    e2e c;
    cluster5(&c, 29);
    fchk k;
    fill(&k, &c, 1500);
    int l = -1;
    for (unsigned i = 0; i < 5 && l < 0; i++) {
        jr_group *g = e2e_group(&c, i, STREAM);
        jr_group_status st;
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        if (g && jr_group_status_get(g, &st) == 0 && st.role == JR_LEADER) l = (int)i;
    }
    ck_assert_int_ge(l, 0);
    unsigned a = with_leader ? (unsigned)l : (unsigned)(l + 1) % 5;
    unsigned b = (unsigned)(l + 2) % 5, whole = (unsigned)(l + 3) % 5;
    ck_assert_int_eq(jr_sim_crash(c.sim, a), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, b), 0);
    pick p;
    damage_file(&c, a, t, kind, &p);
    damage_file(&c, b, t, kind, &p);
    ck_assert_uint_eq(fchk_publish_n(&k, whole, 200, 32, -1, 30 * SEC), 200);
    ck_assert_int_eq(e2e_restart(&c, a), 0);
    ck_assert_int_eq(e2e_restart(&c, b), 0);
    for (int s = 0; s < 3; s++) {
        jr_sim_run_for(c.sim, 300 * MS);
        for (unsigned i = 0; i < 5; i++)
            read_back(&k, i, 1 + 97 * (uint64_t)s, 40 + 97 * (uint64_t)s);
    }
    const unsigned all[] = {0, 1, 2, 3, 4};
    publish_and_final(&k, all, 5, whole);
    ck_assert_msg(k.fail[0] == 0, "%s (n%u, n%u): %s", p.path, a, b, k.fail);
    fchk_free(&k);
    e2e_free(&c);
}

/* Two replicas of five damaged, in the order they run: (test, scenario). */
#define TWO_OF_FIVE_CASES(X)                                                                       \
    X(five_two_followers_wal_tail_cut, two_of_five(T_NEWEST_WAL, K_CUT, 0))                        \
    X(five_leader_and_follower_wal_flip, two_of_five(T_NEWEST_WAL, K_FLIP, 1))                     \
    X(five_leader_and_follower_wal_lost, two_of_five(T_NEWEST_WAL, K_DELETE_ALL, 1))               \
    X(five_two_followers_block_zeroed, two_of_five(T_BLOCK, K_ZERO, 0))                            \
    X(five_two_followers_snapshot_deleted, two_of_five(T_SNAP, K_DELETE, 0))
TWO_OF_FIVE_CASES(SEEDED_TEST)

/* Both other copies' stores damaged while the whole copy is down: the two elect a leader (their
 * logs are whole) but cannot fetch the messages their stores lost from anyone. No read returns
 * a message they lack as missing or other bytes as good, their health says their state machines
 * failed (their stores are rebuilt),
 * and once the whole copy is back everything is there again. */
static void stores_damaged_whole_copy_down(void)
{
    e2e c;
    cluster(&c, 23);
    fchk k;
    fill(&k, &c, 1500);
    int l = stream_leader(&c);
    ck_assert_int_ge(l, 0);
    unsigned a = (unsigned)l, b = (unsigned)(l + 1) % 3, w = (unsigned)(l + 2) % 3;
    ck_assert_int_eq(jr_sim_crash(c.sim, w), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, a), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, b), 0);
    pick p;
    damage_file(&c, a, T_BLOCK, K_DELETE, &p);
    damage_file(&c, b, T_BLOCK, K_DELETE, &p);
    ck_assert_int_eq(e2e_restart(&c, a), 0);
    ck_assert_int_eq(e2e_restart(&c, b), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    /* the first messages are on neither: never answered as missing or other bytes */
    for (uint64_t q = 1; q <= 20; q++)
        for (unsigned i = 0; i < 3; i++) {
            if (i == w) continue;
            e2e_res r;
            int rc = e2e_msg_get(&c, i, STREAM, q, &r);
            if (getenv("JR_REPAIR_TRACE"))
                fprintf(stderr, "read seq %llu via n%u: %s %s\n", (unsigned long long)q, i,
                        jr_err_name(rc), r.msg);
            ck_assert_msg(rc != JR_ENOTFOUND, "seq %llu (acknowledged) read as missing through n%u",
                          (unsigned long long)q, i);
            if (rc == 0) read_back(&k, i, q, q);
        }
    assert_reports_damaged(&c, a);
    assert_reports_damaged(&c, b);
    /* the whole copy is back: nothing lost */
    ck_assert_int_eq(e2e_restart(&c, w), 0);
    const unsigned all[] = {0, 1, 2};
    publish_and_final(&k, all, 3, w);
    ck_assert_msg(k.fail[0] == 0, "%s", k.fail);
    fchk_free(&k);
    e2e_free(&c);
}

SEEDED_TEST(two_stores_damaged_whole_copy_down, stores_damaged_whole_copy_down())

/* Two voters, one damaged ----------------------------------------------------------------------*/

static int has_leader(void *arg, jr_sim *sim)
{
    e2e *c = arg;
    (void)sim;
    return stream_leader(c) >= 0;
}

/* An R2 stream whose leader loses its WAL (or a record of it), or its snapshot (t = T_SNAP: with
 * the records below it gone, its replica restarts without a configuration, and its node names
 * the servers it knows of to ask, raft/vouch.c): the whole follower must be able to lead again,
 * with everything acknowledged. */
static void r2_one_damaged_t(enum target t, enum kind kind)
{
    e2e c;
    servers(&c, 29);
    add_stream(&c, STREAM, "r.>", 2, 1);
    fchk k;
    fill(&k, &c, 1000);
    int l = stream_leader(&c);
    ck_assert_int_ge(l, 0);
    unsigned peers[3];
    int np = e2e_meta_peers(&c, 0, STREAM, peers, 3);
    ck_assert_int_eq(np, 2);
    unsigned other = peers[0] == (unsigned)l ? peers[1] : peers[0];
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)l), 0);
    pick p;
    damage_file(&c, (unsigned)l, t, kind, &p);
    ck_assert_int_eq(e2e_restart(&c, (unsigned)l), 0);
    ck_assert_msg(jr_sim_run_until(c.sim, has_leader, &c, 10 * SEC) == 0,
                  "R2 with one damaged voter elects nobody");
    const unsigned both[] = {(unsigned)l, other};
    publish_and_final(&k, both, 2, other);
    ck_assert_msg(k.fail[0] == 0, "%s", k.fail);
    fchk_free(&k);
    e2e_free(&c);
}

static void r2_one_damaged(enum kind kind)
{
    r2_one_damaged_t(T_NEWEST_WAL, kind);
}

/* An R2 stream with one voter damaged, in the order they run: (test, scenario). */
#define TWO_VOTER_CASES(X)                                                                         \
    X(r2_leader_wal_lost, r2_one_damaged(K_DELETE_ALL))                                            \
    X(r2_leader_wal_flip, r2_one_damaged(K_FLIP))                                                  \
    X(r2_leader_snapshot_lost, r2_one_damaged_t(T_SNAP, K_DELETE))
TWO_VOTER_CASES(SEEDED_TEST)

/* A server whose whole WAL was lost opens every group it held unvouched and damaged, but a
 * stream created after it was back (its meta replica whole again) is new there: an R1 stream
 * placed on it is whole at once, not damaged for good with nobody to vouch for it. */
START_TEST(a_stream_created_after_a_lost_wal_is_not_damaged)
{
    e2e c;
    cluster(&c, 41);
    fchk k;
    fill(&k, &c, 100);
    unsigned v = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, v), 0);
    damage(c.sim, v, NULL, K_DELETE_ALL);
    ck_assert_int_eq(e2e_restart(&c, v), 0);
    jr_sim_run_for(c.sim, 5 * SEC); /* its meta replica repaired by the meta leader */
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 20 * SEC), 0);
    char name[16], subj[16];
    int placed = 0;
    for (int i = 0; i < 12 && !placed; i++) {
        snprintf(name, sizeof name, "ONE%d", i);
        snprintf(subj, sizeof subj, "one%d.>", i);
        add_stream(&c, name, subj, 1, 0);
        jr_sim_run_for(c.sim, 500 * MS);
        placed = e2e_has_replica(&c, v, name);
    }
    ck_assert_msg(placed, "no R1 stream was placed on n%u", v);
    jr_group *g = e2e_group(&c, v, name);
    ck_assert_ptr_nonnull(g);
    jr_group_status gs;
    gs.size = sizeof gs;
    ck_assert_int_eq(jr_group_status_get(g, &gs), 0);
    ck_assert_msg(!gs.damaged && !gs.unvouched, "%s on n%u: damaged %d unvouched %d", name, v,
                  gs.damaged, gs.unvouched);
    ck_assert_int_eq(gs.role, JR_LEADER);
    fchk_free(&k);
    e2e_free(&c);
}
END_TEST

/* Voters of node i's replica of the stream (its latest configuration). */
static int voters_of(e2e *c, unsigned i, const char *name)
{
    unsigned idx[8];
    int voter[8];
    int n = e2e_members(c, i, name, idx, voter, 8);
    int v = 0;
    for (int k = 0; k < n; k++) v += voter[k] != 0;
    return v;
}

typedef struct on_node {
    e2e *c;
    unsigned v;
} on_node;

static int three_voters(void *arg, jr_sim *sim)
{
    on_node *t = arg;
    (void)sim;
    return voters_of(t->c, t->v, STREAM) >= 3;
}

/* An R1 stream grows to R5 while one new peer is paused, so its first peer change has not
 * converged when its only original peer v loses its whole WAL: three voters now hold the
 * group's configuration of five. Restarted, v must not bootstrap the creation's peer set ({v}
 * alone: a lone voter that leads at once, forking the group's log in a term it used) but join,
 * damaged, and be repaired by their leader (lib/js stream_replica.c jr__js_origin_lost;
 * jetraft-sim seed 648). Its replica never leads while damaged, and once the paused peer is
 * back every replica is whole with every acknowledged message. */
START_TEST(a_lone_origin_that_lost_its_wal_does_not_lead_the_group_it_grew)
{
    e2e c;
    memset(&c, 0, sizeof c);
    c.configure_more = small_files;
    ck_assert_int_eq(e2e_new(&c, 5, 648, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 5, 20 * SEC), 0);
    add_stream(&c, STREAM, "r.>", 1, 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, STREAM, 0, 10 * SEC), 0);
    unsigned peers[5];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, STREAM, peers, 5), 1);
    unsigned v = peers[0], p = (v + 1) % 5, via = (v + 2) % 5;
    fchk k;
    fchk_init(&k, &c, STREAM, "r", 0);
    k.require_whole = 1;
    ck_assert_uint_eq(fchk_publish_n(&k, via, 200, 32, -1, 30 * SEC), 200);
    ck_assert_int_eq(jr_sim_pause(c.sim, p, 20 * SEC), 0); /* never promoted meanwhile */
    const char *subjects[] = {"r.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, STREAM, subjects, 1, 5);
    e2e_res r;
    ck_assert_msg(e2e_update(&c, via, &cfg, &r) == 0, "grow: %s", r.msg);
    on_node t = {&c, v};
    ck_assert_int_eq(jr_sim_run_until(c.sim, three_voters, &t, 10 * SEC), 0);
    ck_assert_uint_eq(fchk_publish_n(&k, via, 100, 32, -1, 30 * SEC), 100);
    ck_assert_int_eq(e2e_meta_busy(&c, via, STREAM), 1);
    ck_assert_int_eq(jr_sim_crash(c.sim, v), 0);
    damage(c.sim, v, NULL, K_DELETE_ALL);
    ck_assert_int_eq(e2e_restart(&c, v), 0);
    for (int step = 0; step < 1000; step++) {
        jr_sim_run_for(c.sim, 10 * MS);
        jr_group *g = e2e_group(&c, v, STREAM);
        jr_group_status gs;
        memset(&gs, 0, sizeof gs);
        gs.size = sizeof gs;
        if (!g || jr_group_status_get(g, &gs) != 0) continue;
        ck_assert_msg(!(gs.role == JR_LEADER && gs.damaged),
                      "n%u leads %s while damaged (term %llu, %.2f s after its restart)", v, STREAM,
                      (unsigned long long)gs.term, (step + 1) * 0.01);
    }
    jr_sim_run_for(c.sim, 15 * SEC); /* p is back: the grow converges */
    const unsigned all[] = {0, 1, 2, 3, 4};
    publish_and_final(&k, all, 5, via);
    ck_assert_msg(k.fail[0] == 0, "%s", k.fail);
    fchk_free(&k);
    e2e_free(&c);
}
END_TEST

/* An R1 stream placed on a server that never hears of it (cut off here; down in jetraft-sim
 * seed 3610), which then restarts with its WAL lost: its replica opens damaged, and stays so. Its
 * node cannot tell the stream from one its lost WAL held: the meta entry that placed it committed
 * before this life began (the meta replica, repaired by its leader, holds it below the index it was
 * vouched for at), and the life before may have applied it — a crash after the commit, or cut off
 * from the meta leader one way — created the group, been its only voter and committed writes nobody
 * else holds. Opening it whole would hide that loss; the group's id names one creation (the meta
 * state's counter), but not whether the life before saw it. It is not stuck: its only voter leads,
 * damaged (its proposals fail with JR_EDAMAGED), as a lone voter's loss is reported
 * (docs/internals.md "Which recoveries are automatic"). */
START_TEST(an_r1_stream_placed_on_a_server_down_with_its_wal_lost_is_damaged)
{
    e2e c;
    cluster(&c, 43);
    fchk k;
    fill(&k, &c, 50);
    /* a server that is not the meta leader (the streams are added through n0) */
    unsigned v = e2e_meta_leader(&c) == 2 ? 1 : 2, on_v[1];
    /* cut off first, so that the meta leader still takes it for online and places streams on
     * it that it never hears of; then it crashes and loses its WAL */
    for (unsigned j = 0; j < 3; j++)
        if (j != v) {
            ck_assert_int_eq(jr_sim_cut(c.sim, v, j), 0);
            ck_assert_int_eq(jr_sim_cut(c.sim, j, v), 0);
        }
    char name[16], subj[16];
    int placed = 0;
    for (int i = 0; i < 12 && !placed; i++) {
        snprintf(name, sizeof name, "DOWN%d", i);
        snprintf(subj, sizeof subj, "down%d.>", i);
        add_stream(&c, name, subj, 1, 0);
        jr_sim_run_for(c.sim, 20 * MS);
        placed = e2e_meta_peers(&c, 0, name, on_v, 1) == 1 && on_v[0] == v;
    }
    ck_assert_msg(placed, "no R1 stream was placed on n%u while it was cut off", v);
    ck_assert(!e2e_meta_has(&c, v, name));
    ck_assert_int_eq(jr_sim_crash(c.sim, v), 0);
    damage(c.sim, v, NULL, K_DELETE_ALL);
    jr_sim_heal(c.sim);
    ck_assert_int_eq(e2e_restart(&c, v), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 20 * SEC), 0);
    for (int i = 0; i < 100 && !e2e_has_replica(&c, v, name); i++) jr_sim_run_for(c.sim, 100 * MS);
    jr_group *g = e2e_group(&c, v, name);
    ck_assert_ptr_nonnull(g);
    jr_sim_run_for(c.sim, 2 * SEC);
    jr_group_status gs;
    gs.size = sizeof gs;
    ck_assert_int_eq(jr_group_status_get(g, &gs), 0);
    ck_assert_msg(gs.damaged, "%s on n%u: damaged %d", name, v, gs.damaged);
    ck_assert_int_eq(gs.role, JR_LEADER);
    fchk_free(&k);
    e2e_free(&c);
}
END_TEST

/* An R3 stream with `fill_n` messages whose third server `gone` is then down for good, `more`
 * messages later, and whose leader `d` then loses its WAL and restarts: the two left, {whole,
 * damaged}, are stuck, which this asserts (no leader within 5 s). */
static void two_voters_one_damaged(e2e *c, uint64_t seed, fchk *k, size_t fill_n, size_t more,
                                   unsigned *d, unsigned *gone, unsigned *whole)
{
    cluster(c, seed);
    fill(k, c, fill_n);
    int l = stream_leader(c);
    ck_assert_int_ge(l, 0);
    *d = (unsigned)l;
    *gone = (unsigned)(l + 1) % 3;
    *whole = (unsigned)(l + 2) % 3;
    ck_assert_int_eq(jr_sim_crash(c->sim, *gone), 0);
    ck_assert_uint_eq(fchk_publish_n(k, *whole, more, 32, -1, 30 * SEC), more);
    ck_assert_int_eq(jr_sim_crash(c->sim, *d), 0);
    pick p;
    damage_file(c, *d, T_NEWEST_WAL, K_DELETE_ALL, &p);
    ck_assert_int_eq(e2e_restart(c, *d), 0);
    ck_assert_msg(jr_sim_run_until(c->sim, has_leader, c, 5 * SEC) != 0,
                  "{whole, damaged} elected a leader without the gone server's word");
}

/* The end of a rescue test: publish_and_final through `whole` over {d, whole}, its verdict
 * asserted, then the checker and the fixture freed. */
static void finish_on_two(e2e *c, fchk *k, unsigned d, unsigned whole)
{
    const unsigned two[] = {d, whole};
    publish_and_final(k, two, 2, whole);
    ck_assert_msg(k->fail[0] == 0, "%s", k->fail);
    fchk_free(k);
    e2e_free(c);
}

/* R3 whose third server is gone for good, and whose leader then loses its WAL: the two left,
 * {whole, damaged}, cannot elect (the damaged one waits for the gone one's answer, the whole one
 * needs its vote) until an operator rescues the damaged server (jr_node_rescue); then the whole
 * one leads, repairs the other, and nothing the whole one held is lost. */
START_TEST(rescue_two_voters_one_damaged)
{
    g_off = first_seed + (uint64_t)_i;
    e2e c;
    fchk k;
    unsigned d, gone, whole;
    two_voters_one_damaged(&c, 31, &k, 1000, 300, &d, &gone, &whole);
    /* stuck, and says so */
    e2e_res r;
    int rc = e2e_msg_get(&c, whole, STREAM, 1, &r);
    ck_assert_msg(rc == JR_ENOQUORUM || rc == JR_ENOLEADER || rc == JR_ETIMEDOUT,
                  "a read without a leader: %s", jr_err_name(rc));
    hres h;
    node_health(&c, d, &h);
    ck_assert_msg(!h.healthy, "n%u reports healthy while it waits", d);
    /* the rescue: the gone server is declared gone on the damaged one */
    ck_assert_int_eq(jr_node_rescue(e2e_node(&c, d), jr_sim_name(c.sim, gone)), 0);
    ck_assert_int_eq(jr_node_rescue(e2e_node(&c, d), jr_sim_name(c.sim, d)), JR_EINVAL);
    ck_assert_int_eq(jr_node_rescue(e2e_node(&c, d), "nobody"), JR_ENOTFOUND);
    ck_assert_msg(jr_sim_run_until(c.sim, has_leader, &c, 20 * SEC) == 0,
                  "no leader after the rescue");
    finish_on_two(&c, &k, d, whole);
}
END_TEST

/* The rescue outlives a restart: after rescue_two_voters_one_damaged's rescue (declared on
 * both servers left, as the operator does on every live server whose groups may wait), both
 * crash and restart. Their groups reopen from disk unvouched and would wait again for the gone
 * server's answer; the declaration is on disk (wal_dir/rescued), so they elect, and nothing
 * acknowledged is lost. */
START_TEST(rescue_survives_a_restart_of_both_servers)
{
    g_off = first_seed + (uint64_t)_i;
    e2e c;
    fchk k;
    unsigned d, gone, whole;
    two_voters_one_damaged(&c, 41, &k, 600, 200, &d, &gone, &whole);
    ck_assert_int_eq(jr_node_rescue(e2e_node(&c, d), jr_sim_name(c.sim, gone)), 0);
    int rc = jr_node_rescue(e2e_node(&c, whole), jr_sim_name(c.sim, gone));
    ck_assert_msg(rc == 0 || rc == JR_ENOCHANGE, "%s", jr_err_name(rc));
    ck_assert_msg(jr_sim_run_until(c.sim, has_leader, &c, 20 * SEC) == 0,
                  "no leader after the rescue");
    ck_assert_uint_eq(fchk_publish_n(&k, whole, 100, 32, -1, 30 * SEC), 100);
    /* both restart: without the declaration on disk each would wait for `gone` again */
    ck_assert_int_eq(jr_sim_crash(c.sim, d), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, whole), 0);
    ck_assert_int_eq(e2e_restart(&c, d), 0);
    ck_assert_int_eq(e2e_restart(&c, whole), 0);
    ck_assert_msg(jr_sim_run_until(c.sim, has_leader, &c, 20 * SEC) == 0,
                  "no leader after both rescued servers restarted");
    finish_on_two(&c, &k, d, whole);
}
END_TEST

/* A raw group's rescue refuses what it cannot do: a whole replica waits for nobody. */
START_TEST(rescue_refusals)
{
    g_off = first_seed + (uint64_t)_i;
    e2e c;
    cluster(&c, 37);
    jr_group *g = e2e_group(&c, 1, STREAM);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(jr_group_rescue(g, "n0"), JR_ENOCHANGE);
    ck_assert_int_eq(jr_group_rescue(g, "n1"), JR_EINVAL);
    ck_assert_int_eq(jr_group_rescue(g, "zz"), JR_ENOTFOUND);
    ck_assert_int_eq(jr_group_rescue(NULL, "n0"), JR_EINVAL);
    ck_assert_int_eq(jr_node_rescue(NULL, "n0"), JR_EINVAL);
    ck_assert_int_eq(jr_node_rescue(e2e_node(&c, 1), "n0"), JR_ENOCHANGE);
    e2e_free(&c);
}
END_TEST

/* A consumer replica whose state machine fails while its server runs (here: told so, as an
 * apply that ran out of memory or a snapshot that did not restore would) is rebuilt from its
 * group's snapshot and log, and follows its leader again. */
START_TEST(consumer_failed_replica_is_rebuilt)
{
    g_off = first_seed + (uint64_t)_i;
    e2e c;
    cluster(&c, 41);
    e2e_res er;
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(e2e_publish(&c, (unsigned)i % 3, "r.x", "m", 1, NULL, &er), 0);
    create_consumer(&c, 0);
    static fetched f;
    ck_assert_uint_eq(fetch_some(&c, 0, 30, &f), 30);
    ack_all(&c, 0, &f);
    int l = consumer_leader(&c);
    ck_assert_int_ge(l, 0);
    unsigned v = (unsigned)(l + 1) % 3;
    jr__js *js = jr__js_of(e2e_node(&c, v));
    jr__crep *r = jr__crep_find(js, e2e_consumer_group(&c, v, STREAM, CONSUMER));
    ck_assert_ptr_nonnull(r);
    r->failed = JR_ENOMEM;
    r->failed_at = jr_sim_now(c.sim);
    js->converge_failed = 1;
    ck_assert_uint_eq(fetch_some(&c, (unsigned)l, 30, &f), 30);
    ack_all(&c, (unsigned)l, &f);
    int ok = 0;
    for (int s = 0; s < 100 && !ok; s++) {
        jr_sim_run_for(c.sim, 100 * MS);
        uint64_t dv = 0, dl = 0, av = 0, al = 0;
        ok = e2e_consumer_digest(&c, v, STREAM, CONSUMER, &dv, &av) == 0 &&
             e2e_consumer_digest(&c, (unsigned)l, STREAM, CONSUMER, &dl, &al) == 0 && dv == dl;
    }
    char line[512];
    e2e_consumer_describe(&c, v, STREAM, CONSUMER, line, sizeof line);
    ck_assert_msg(ok, "n%u's failed consumer replica was not rebuilt: %s", v, line);
    e2e_free(&c);
}
END_TEST

/* A block of the consumer leader's stream replica is damaged while it runs: its deliveries never
 * carry other bytes, a message it cannot read is never terminated (it stays pending and is
 * redelivered after its ack wait, from the rebuilt replica), and every message is delivered. */
START_TEST(consumer_leader_block_damaged_running)
{
    g_off = first_seed + (uint64_t)_i;
    e2e c;
    cluster(&c, 43);
    fchk k;
    fchk_init(&k, &c, STREAM, "r", 0);
    ck_assert_uint_eq(fchk_publish_n(&k, 0, 1500, 64, -1, 60 * SEC), 1500);
    create_consumer(&c, 2 * SEC);   /* a delivery its replica could not read is redelivered soon */
    jr_sim_run_for(c.sim, 3 * SEC); /* idle: the stores drop what they cached */
    int cl = consumer_leader(&c);
    ck_assert_int_ge(cl, 0);
    pick p;
    find_file(c.sim, (unsigned)cl, T_BLOCK, 0, &p);
    ck_assert_msg(p.path[0] && p.size > 8192, "n%d has no sealed block", cl);
    zero_running(&c, (unsigned)cl, p.path, p.size / 2, 4096);
    static fetched f;
    static uint8_t seen[1501];
    memset(seen, 0, sizeof seen);
    size_t nseen = 0;
    for (int round = 0; round < 400 && nseen < 400; round++) {
        int lead = consumer_leader(&c);
        fetch_some(&c, lead >= 0 ? (unsigned)lead : 0, 50, &f);
        for (size_t i = 0; i < f.n; i++) {
            uint64_t q = f.seq[i];
            ck_assert_uint_le(q, 1500);
            size_t idx = k.by_seq[q - 1];
            ck_assert_uint_gt(idx, 0);
            char want[256];
            size_t len = fchk_payload(idx - 1, want, sizeof want);
            ck_assert_msg(f.sum[i] == len && !strncmp(f.head[i], want, strlen(f.head[i])),
                          "seq %llu delivered with other bytes", (unsigned long long)q);
            if (q <= 400 && !seen[q]) seen[q] = 1, nseen++;
        }
        ack_all(&c, lead >= 0 ? (unsigned)lead : 0, &f);
    }
    uint64_t next = 1;
    while (next <= 400 && seen[next]) next++;
    ck_assert_msg(next > 400, "seq %llu was never delivered (not lost: still pending?)",
                  (unsigned long long)next);
    fchk_free(&k);
    e2e_free(&c);
}
END_TEST

int main(void)
{
    if (e2e_seeds(&first_seed, &nseeds) && first_seed) first_seed--; /* JR_SEEDS=1:n: offsets 0.. */
    Suite *su = suite_create("repair");
    TCase *tc = tcase_create("one_replica");
    tcase_set_timeout(tc, 120);
    STREAM_REPLICA_CASES(ADD_SEEDED_TO_tc)
    CONSUMER_REPLICA_CASES(ADD_SEEDED_TO_tc)
    META_SNAPSHOT_CASES(ADD_SEEDED_TO_tc)
    suite_add_tcase(su, tc);
    TCase *tr = tcase_create("running");
    tcase_set_timeout(tr, 120);
    RUNNING_CASES(ADD_SEEDED_TO_tr)
    tcase_add_loop_test(tr, consumer_failed_replica_is_rebuilt, 0, (int)nseeds);
    tcase_add_loop_test(tr, consumer_leader_block_damaged_running, 0, (int)nseeds);
    suite_add_tcase(su, tr);
    TCase *t2 = tcase_create("two_of_three");
    tcase_set_timeout(t2, 120);
    TWO_OF_THREE_CASES(ADD_SEEDED_TO_t2)
    tcase_add_loop_test(t2, two_stores_damaged_whole_copy_down, 0, (int)nseeds);
    suite_add_tcase(su, t2);
    TCase *t25 = tcase_create("two_of_five");
    tcase_set_timeout(t25, 120);
#define ADD_SEEDED_TO_t25(name, call) tcase_add_loop_test(t25, name, 0, (int)nseeds);
    TWO_OF_FIVE_CASES(ADD_SEEDED_TO_t25)
    suite_add_tcase(su, t25);
    TCase *t5 = tcase_create("two_voters");
    tcase_set_timeout(t5, 120);
    TWO_VOTER_CASES(ADD_SEEDED_TO_t5)
    tcase_add_test(t5, a_stream_created_after_a_lost_wal_is_not_damaged);
    tcase_add_test(t5, a_lone_origin_that_lost_its_wal_does_not_lead_the_group_it_grew);
    tcase_add_test(t5, an_r1_stream_placed_on_a_server_down_with_its_wal_lost_is_damaged);
    tcase_add_loop_test(t5, rescue_two_voters_one_damaged, 0, (int)nseeds);
    tcase_add_loop_test(t5, rescue_survives_a_restart_of_both_servers, 0, (int)nseeds);
    tcase_add_loop_test(t5, rescue_refusals, 0, (int)nseeds);
    suite_add_tcase(su, t5);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
