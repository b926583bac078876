/*
 * The cost of a flush, counted at the vfs (ARCHITECTURE §3 "one WAL write + one fsync"): on the
 * path of proposals every jr_node_recv and jr_node_tick makes at most one WAL write and at most
 * one sync, and a flush that only moves a commit index writes nothing (flush.c stage(): the
 * commit rides along with the group's next record). Proposals go one at a time, so nothing
 * batches them:
 *  - R1: exactly one write and one sync per acknowledged proposal;
 *  - R3: the leader and each follower exactly one write and one sync per acknowledged proposal
 *    (the commit a follower learns after its append costs it nothing);
 *  - a group that applies only durable commits (jr__group_durable_apply, the meta group) pays a
 *    second write and sync for its commit (in the same call) and never applies beyond its
 *    durable commit index;
 *  - what the lagging durable commit index leaves out is applied again after a restart;
 *  - a snapshot taken while proposals flow costs no WAL write or sync of its own: its compaction
 *    marker rides along with the group's next record, or is written alone once it has waited a
 *    heartbeat interval with nothing else to write;
 *  - R3, proposals one at a time: the leader sends one frame per follower per proposal (the
 *    APPEND, which carries the commit of the proposal before it) and each follower one (its
 *    acknowledgement); the commits cost no frame of their own;
 *  - the leader's tick that counts the acknowledgements writes nothing and sends nothing but
 *    what the completion callbacks queue (a forwarded publish's ack, in the same tick); the
 *    commit waits for the next APPEND, and goes out alone only once it has waited the commit
 *    delay (heartbeat / JR__COMMIT_DELAY_DIV);
 *  - what the layer above proposes in its before-flush hook (a stream leader's batch) leaves
 *    with that tick's flush, and the tick asks the host for no second one.
 * Raw groups on memfs under a counting vfs, frames delivered by hand, on a manual clock.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "node/node.h"
#include "node/rpc.h"
#include "raft/raft.h"
#include "wire/frame.h"

#define MS 1000000ull
#define N 100
#define GROUP 7
#define TURN 32 /* APPEND frames a follower receives in one loop turn */

static const char *const only_a[] = {"a"};
static const char *const abc[] = {"a", "b", "c"};

typedef struct node_fx {
    t_host h;
    t_cvfs c;
    t_fsm fsm;
    jr_group *g;
    uint64_t calls;  /* jr_node_recv and jr_node_tick calls */
    uint64_t frames; /* frames sent, delivered by pump() */
} node_fx;

static node_fx fx[3];
static unsigned nfx;
static uint64_t max_per_call = 1; /* WAL writes and syncs one call may make */

/* One call into node i, checked: at most one WAL write and one WAL sync (a snapshot's own file
 * is written and synced apart). */
#define CALL(i, expr)                                                                              \
    do {                                                                                           \
        node_fx *f_ = &fx[i];                                                                      \
        uint64_t w_ = f_->c.wal_writes, s_ = f_->c.wal_syncs;                                      \
        int rc_ = (expr);                                                                          \
        ck_assert_int_eq(rc_, 0);                                                                  \
        f_->calls++;                                                                               \
        ck_assert_msg(f_->c.wal_writes - w_ <= max_per_call, "node %u: %llu writes in one call",   \
                      (unsigned)(i), (unsigned long long)(f_->c.wal_writes - w_));                 \
        ck_assert_msg(f_->c.wal_syncs - s_ <= max_per_call, "node %u: %llu syncs in one call",     \
                      (unsigned)(i), (unsigned long long)(f_->c.wal_syncs - s_));                  \
    } while (0)

static void fx_open(unsigned i, const char *const *peers, size_t npeers)
{
    node_fx *f = &fx[i];
    ck_assert_int_eq(t_open(&f->h, peers[i], peers, npeers, NULL), 0);
    t_fsm_init(&f->fsm);
    ck_assert_int_eq(t_group(&f->h, GROUP, peers, npeers, &f->fsm, &f->g), 0);
}

static int snap_write(void *ctx, jr_snapshot_writer *w)
{
    t_fsm *f = ctx;
    return jr_snapshot_write(w, &f->last, sizeof f->last);
}

static int snap_restore(void *ctx, uint64_t index, const void *data, size_t len)
{
    t_fsm *f = ctx;
    if (len != sizeof f->last) return JR_ECORRUPT;
    memcpy(&f->last, data, len);
    f->applied = index;
    return 0;
}

/* As fx_open, with an fsm that takes a snapshot every `every` applied entries. */
static void fx_open_snap(unsigned i, const char *const *peers, size_t npeers, uint64_t every)
{
    node_fx *f = &fx[i];
    ck_assert_int_eq(t_open(&f->h, peers[i], peers, npeers, NULL), 0);
    t_fsm_init(&f->fsm);
    f->fsm.ops.snapshot = snap_write;
    f->fsm.ops.restore = snap_restore;
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = GROUP;
    gc.voters = peers;
    gc.nvoters = npeers;
    gc.fsm = &f->fsm.ops;
    gc.snapshot_entries = every;
    ck_assert_int_eq(jr_group_open(f->h.node, &gc, &f->g), 0);
}

/* n nodes; snapshot_every 0: the counting fsm without snapshots */
static void setup_snap(unsigned n, uint64_t snapshot_every)
{
    memset(fx, 0, sizeof fx);
    nfx = n;
    max_per_call = 1;
    const char *const *peers = n == 1 ? only_a : abc;
    for (unsigned i = 0; i < n; i++) {
        t_host_init(&fx[i].h);
        t_cvfs_wrap(&fx[i].c, &fx[i].h);
        if (snapshot_every)
            fx_open_snap(i, peers, n, snapshot_every);
        else
            fx_open(i, peers, n);
    }
}

static void setup(unsigned n)
{
    setup_snap(n, 0);
}

static void teardown(void)
{
    for (unsigned i = 0; i < nfx; i++) t_host_free(&fx[i].h);
    nfx = 0;
}

/* Delivers every frame sent, and ticks every node that is due, until nothing moves. */
static void pump(void)
{
    for (int round = 0; round < 10000; round++) {
        int moved = 0;
        for (unsigned i = 0; i < nfx; i++) {
            t_host *h = &fx[i].h;
            if (jr_node_deadline(h->node) <= h->now) {
                CALL(i, jr_node_tick(h->node));
                moved = 1;
            }
            while (h->nframes) {
                t_frame fr = h->frames[0];
                memmove(h->frames, h->frames + 1, --h->nframes * sizeof *h->frames);
                unsigned to = (unsigned)(fr.to[0] - 'a');
                ck_assert_uint_lt(to, nfx);
                fx[i].frames++;
                CALL(to, jr_node_recv(fx[to].h.node, abc[i], fr.data, fr.len));
                free(fr.data);
                moved = 1;
            }
        }
        if (!moved) return;
    }
    ck_abort_msg("the cluster never went quiet");
}

/* Moves the clock by ns in steps of 5 ms (below the heartbeat interval: no election). */
static void advance(uint64_t ns)
{
    for (uint64_t t = 0; t < ns; t += 5 * MS) {
        for (unsigned i = 0; i < nfx; i++) fx[i].h.now += 5 * MS;
        pump();
    }
}

static int leader(void)
{
    for (unsigned i = 0; i < nfx; i++)
        if (jr__raft_role(jr__group_raft(fx[i].g)) == JR_LEADER) return (int)i;
    return -1;
}

static int elect(void)
{
    pump();
    for (int t = 0; t < 300 && leader() < 0; t++) advance(10 * MS);
    int l = leader();
    ck_assert_int_ge(l, 0);
    advance(10 * MS); /* its election's entry committed everywhere */
    return l;
}

typedef struct prop {
    int done, status;
    uint64_t index;
} prop;

static void on_prop(void *arg, int status, uint64_t index)
{
    prop *p = arg;
    p->done = 1;
    p->status = status;
    p->index = index;
}

/* Proposes one entry on node l and delivers until it is acknowledged, without moving the clock
 * (no timer is involved: nothing but the proposal moves). */
static uint64_t propose_one(int l, int k)
{
    char buf[32];
    int len = snprintf(buf, sizeof buf, "entry-%d", k);
    prop p = {0};
    ck_assert_int_eq(jr_group_propose(fx[l].g, buf, (size_t)len, on_prop, &p), 0);
    pump();
    ck_assert_msg(p.done, "proposal %d not acknowledged without a timer", k);
    ck_assert_int_eq(p.status, 0);
    return p.index;
}

START_TEST(r1_one_write_and_one_sync_per_acknowledged_proposal)
{
    setup(1);
    elect();
    uint64_t w0 = fx[0].c.writes, s0 = fx[0].c.syncs;
    uint64_t last = 0;
    for (int k = 0; k < N; k++) {
        uint64_t w = fx[0].c.writes, s = fx[0].c.syncs;
        last = propose_one(0, k);
        ck_assert_uint_eq(fx[0].c.writes - w, 1);
        ck_assert_uint_eq(fx[0].c.syncs - s, 1);
        ck_assert_uint_eq(fx[0].fsm.last, last);
    }
    ck_assert_uint_eq(fx[0].c.writes - w0, N);
    ck_assert_uint_eq(fx[0].c.syncs - s0, N);
    /* Idle: the last commit waits for the next record, and no timer writes it. */
    uint64_t w = fx[0].c.writes;
    advance(2000 * MS);
    ck_assert_uint_eq(fx[0].c.writes, w);
    ck_assert_uint_lt(jr__raft_durable_commit(jr__group_raft(fx[0].g)), last);

    /* The durable commit index lags: after a restart the entries it does not cover are
     * applied again once the group committed them again. */
    jr_node_close(fx[0].h.node);
    fx[0].h.node = NULL;
    fx_open(0, only_a, 1);
    ck_assert_uint_lt(fx[0].fsm.last, last);
    elect();
    ck_assert_uint_ge(fx[0].fsm.last, last);
    teardown();
}
END_TEST

START_TEST(r3_leader_and_followers_one_write_and_one_sync_per_acknowledged_proposal)
{
    setup(3);
    int l = elect();
    uint64_t w0[3], s0[3], f0[3];
    for (unsigned i = 0; i < 3; i++) {
        w0[i] = fx[i].c.writes;
        s0[i] = fx[i].c.syncs;
        f0[i] = fx[i].frames;
    }
    uint64_t last = 0;
    for (int k = 0; k < N; k++) last = propose_one(l, k);
    for (unsigned i = 0; i < 3; i++) {
        uint64_t w = fx[i].c.writes - w0[i], s = fx[i].c.syncs - s0[i];
        ck_assert_msg(w == N && s == N, "node %u (%s): %llu writes and %llu syncs for %d proposals",
                      i, (int)i == l ? "leader" : "follower", (unsigned long long)w,
                      (unsigned long long)s, N);
        /* the leader an APPEND per follower, a follower its acknowledgement: no frame for a
         * commit (each APPEND carries the one before it) */
        uint64_t f = fx[i].frames - f0[i];
        ck_assert_msg(f == ((int)i == l ? 2 * N : N), "node %u (%s): %llu frames for %d proposals",
                      i, (int)i == l ? "leader" : "follower", (unsigned long long)f, N);
    }
    ck_assert_uint_eq(fx[l].fsm.last, last);
    /* The followers learn the last commit without writing it, and apply it. */
    advance(200 * MS);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(fx[i].fsm.last, last);
        ck_assert_uint_eq(fx[i].c.writes - w0[i], N);
    }
    teardown();
}
END_TEST

/* Proposals one at a time, each made by the completion of the one before (as a publisher with
 * one message in flight does). */
typedef struct chain {
    jr_group *g;
    int left, acked, failed;
} chain;

static void on_chain(void *arg, int status, uint64_t index)
{
    chain *c = arg;
    (void)index;
    c->acked++;
    if (status) c->failed++;
    if (c->left > 0) {
        c->left--;
        if (jr_group_propose(c->g, "chained", 7, on_chain, c)) c->failed++;
    }
}

static uint64_t snapshot_index(unsigned i)
{
    jr_group_status st = {.size = sizeof st};
    ck_assert_int_eq(jr_group_status_get(fx[i].g, &st), 0);
    return st.snapshot_index;
}

START_TEST(snapshots_taken_while_proposals_flow_cost_no_wal_write_of_their_own)
{
    unsigned n = _i ? 3 : 1;
    setup_snap(n, 10);
    int l = elect();
    uint64_t w0[3], s0[3];
    for (unsigned i = 0; i < n; i++) {
        w0[i] = fx[i].c.wal_writes;
        s0[i] = fx[i].c.wal_syncs;
    }
    chain c = {fx[l].g, N - 1, 0, 0};
    ck_assert_int_eq(jr_group_propose(c.g, "chained", 7, on_chain, &c), 0);
    pump();
    ck_assert_int_eq(c.acked, N);
    ck_assert_int_eq(c.failed, 0);
    for (unsigned i = 0; i < n; i++) {
        uint64_t w = fx[i].c.wal_writes - w0[i], s = fx[i].c.wal_syncs - s0[i];
        ck_assert_msg(snapshot_index(i) >= N - 20, "node %u took no snapshot (at %llu)", i,
                      (unsigned long long)snapshot_index(i));
        /* a follower writes the last entry's commit with no entry: the snapshot it takes after
         * applying it waits, and so does nothing else */
        ck_assert_msg(
            w == N && s == N, "node %u (%s): %llu WAL writes and %llu syncs for %d proposals", i,
            (int)i == l ? "leader" : "follower", (unsigned long long)w, (unsigned long long)s, N);
    }
    /* A few more, one at a time, until the leader's last apply took a snapshot: its marker
     * waits. */
    int extra = 0;
    while (!fx[l].g->marker_pending && extra < 20) propose_one(l, extra++);
    ck_assert(fx[l].g->marker_pending);
    int pending[3];
    for (unsigned i = 0; i < n; i++) {
        pending[i] = fx[i].g->marker_pending;
        ck_assert_uint_eq(fx[i].c.wal_writes - w0[i], (uint64_t)(N + extra));
    }
    /* Idle: a waiting marker is written alone within a heartbeat interval, once. A follower
     * may take one more snapshot when a heartbeat brings it the last commit: its marker is
     * written alone too. Then nothing more. */
    advance(200 * MS);
    uint64_t idle[3];
    for (unsigned i = 0; i < n; i++) {
        idle[i] = fx[i].c.wal_writes - w0[i];
        ck_assert(!fx[i].g->marker_pending);
        uint64_t want = (uint64_t)(N + extra + pending[i]);
        ck_assert_msg((int)i == l ? idle[i] == want : idle[i] == want || idle[i] == want + 1,
                      "node %u: %llu WAL writes once idle, %llu expected", i,
                      (unsigned long long)idle[i], (unsigned long long)want);
    }
    advance(200 * MS);
    for (unsigned i = 0; i < n; i++) ck_assert_uint_eq(fx[i].c.wal_writes - w0[i], idle[i]);
    /* the node's own count is the syncs its WAL made, as the vfs saw them */
    for (unsigned i = 0; i < n; i++) {
        jr_node_stats st = {.size = sizeof st};
        ck_assert_int_eq(jr_node_stats_get(fx[i].h.node, &st), 0);
        ck_assert_uint_eq(st.wal_syncs, fx[i].c.wal_syncs);
    }
    teardown();
}
END_TEST

/* Group commit on a follower: APPENDs that arrive in one loop turn (fed by jr_node_recv before
 * the next jr_node_tick) cost that tick one WAL write and one sync, and the acknowledgement of
 * all of them leaves after that sync in one frame, never before it. */
START_TEST(appends_received_in_one_turn_cost_a_follower_one_write_and_one_sync)
{
    setup(3);
    int l = elect();
    unsigned f = (unsigned)(l + 1) % 3;
    const char *fname = abc[f];
    prop p[TURN];
    memset(p, 0, sizeof p);
    /* TURN proposals, each flushed by a tick of its own: TURN APPEND frames to each follower
     * (fewer than the leader's window of messages in flight) */
    for (int k = 0; k < TURN; k++) {
        ck_assert_int_eq(jr_group_propose(fx[l].g, "x", 1, on_prop, &p[k]), 0);
        CALL(l, jr_node_tick(fx[l].h.node));
    }
    t_host *lh = &fx[l].h;
    unsigned appends = 0;
    for (unsigned i = 0; i < lh->nframes; i++) appends += !strcmp(lh->frames[i].to, fname);
    ck_assert_uint_eq(appends, TURN);
    uint64_t w = fx[f].c.wal_writes, sy = fx[f].c.wal_syncs;
    /* one loop turn: every frame for f goes in, nothing is written or answered yet */
    for (unsigned i = 0; i < lh->nframes;) {
        if (strcmp(lh->frames[i].to, fname)) {
            i++;
            continue;
        }
        t_frame fr = lh->frames[i];
        memmove(lh->frames + i, lh->frames + i + 1, (--lh->nframes - i) * sizeof *lh->frames);
        CALL(f, jr_node_recv(fx[f].h.node, abc[l], fr.data, fr.len));
        free(fr.data);
    }
    ck_assert_uint_eq(fx[f].c.wal_writes, w);
    ck_assert_uint_eq(fx[f].c.wal_syncs, sy);
    ck_assert_uint_eq(fx[f].h.nframes, 0); /* no acknowledgement before the sync */
    ck_assert_uint_le(jr_node_deadline(fx[f].h.node), fx[f].h.now); /* the tick is due now */
    /* the end of the turn: one write, one sync, one frame acknowledging all of them */
    CALL(f, jr_node_tick(fx[f].h.node));
    ck_assert_uint_eq(fx[f].c.wal_writes - w, 1);
    ck_assert_uint_eq(fx[f].c.wal_syncs - sy, 1);
    ck_assert_uint_eq(fx[f].h.nframes, 1);
    ck_assert_str_eq(fx[f].h.frames[0].to, abc[l]);
    ck_assert_uint_eq(fx[f].g->persisted, jr__raft_last_index(jr__group_raft(fx[l].g)));
    pump();
    for (int k = 0; k < TURN; k++) {
        ck_assert_msg(p[k].done, "proposal %d not acknowledged", k);
        ck_assert_int_eq(p[k].status, 0);
    }
    teardown();
}
END_TEST

START_TEST(a_durable_apply_group_writes_its_commit_before_applying)
{
    setup(1);
    elect();
    jr__group_durable_apply(fx[0].g);
    max_per_call = 2; /* the entry, and after the commit it makes, that commit */
    const jr__raft *r = jr__group_raft(fx[0].g);
    for (int k = 0; k < 10; k++) {
        uint64_t s = fx[0].c.syncs;
        uint64_t index = propose_one(0, k);
        ck_assert_uint_eq(fx[0].c.syncs - s, 2); /* the entry, then its commit */
        ck_assert_uint_eq(fx[0].fsm.last, index);
        ck_assert_uint_ge(jr__raft_durable_commit(r), index);
    }
    teardown();
}
END_TEST

/* Delivers the frames node i has sent, each to its addressee (jr_node_recv only, no tick). */
static void deliver_from(unsigned i)
{
    t_host *h = &fx[i].h;
    for (size_t k = 0; k < h->nframes; k++) {
        unsigned to = (unsigned)(h->frames[k].to[0] - 'a');
        ck_assert_uint_lt(to, nfx);
        CALL(to, jr_node_recv(fx[to].h.node, abc[i], h->frames[k].data, h->frames[k].len));
    }
    t_frames_clear(h);
}

#define ANSWER_ID 4242

/* A proposal whose completion answers a request of another server, as the stream leader does
 * for a publish forwarded to it. */
typedef struct answering {
    jr_node *n;
    const char *to;
    int done, status;
} answering;

static void on_answering(void *arg, int status, uint64_t index)
{
    answering *a = arg;
    (void)index;
    a->done++;
    a->status = status;
    static const char ack[] = "ack";
    jr_iovec iov = {ack, sizeof ack - 1};
    ck_assert_int_eq(jr__rpc_respond(a->n, jr__peer_id(a->to), ANSWER_ID, 0, &iov, 1), 0);
}

/* The messages of a plain frame: *groups of them for GROUP, *answers the response ANSWER_ID. */
static void frame_holds(const t_frame *fr, int *groups, int *answers)
{
    jr__frame f;
    jr__msg m;
    jr__entry scratch[4];
    int got;
    *groups = *answers = 0;
    ck_assert_int_eq(jr__frame_open(&f, fr->data, fr->len, 1u << 24), 0);
    while (jr__frame_next(&f, &m, scratch, 4, &got) == 0 && got) {
        if (m.group == GROUP) (*groups)++;
        if (m.type == JR__MSG_NODE_RESPONSE && f.rpc.id == ANSWER_ID) (*answers)++;
    }
}

START_TEST(the_tick_counting_acks_sends_only_the_answer_and_the_next_append_the_commit)
{
    setup(3);
    int l = elect();
    unsigned b = (unsigned)(l + 1) % 3, c = (unsigned)(l + 2) % 3;
    jr_node *ln = fx[l].h.node;
    uint64_t delay = ln->heartbeat_ns / JR__COMMIT_DELAY_DIV;
    ck_assert_uint_gt(delay, 0);
    answering a = {.n = ln, .to = abc[b]};
    uint64_t first = 0;
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(jr_group_propose(fx[l].g, "x", 1, on_answering, &a), 0);
        CALL(l, jr_node_tick(ln)); /* the APPENDs */
        ck_assert_uint_eq(fx[l].h.nframes, 2);
        deliver_from((unsigned)l);
        CALL(b, jr_node_tick(fx[b].h.node)); /* each follower writes, syncs and acknowledges */
        CALL(c, jr_node_tick(fx[c].h.node));
        /* the second APPEND carried the first commit: applied once the acknowledgement left */
        ck_assert_uint_eq(fx[b].fsm.last, first);
        ck_assert_uint_eq(fx[c].fsm.last, first);
        ck_assert_uint_eq(fx[b].h.nframes, 1);
        ck_assert_uint_eq(fx[c].h.nframes, 1);
        deliver_from(b);
        deliver_from(c);
        ck_assert_int_eq(a.done, round);
        uint64_t w = fx[l].c.wal_writes, s = fx[l].c.wal_syncs;
        CALL(l, jr_node_tick(ln)); /* commits, applies, completes */
        ck_assert_int_eq(a.done, round + 1);
        ck_assert_int_eq(a.status, 0);
        ck_assert_uint_eq(fx[l].c.wal_writes, w);
        ck_assert_uint_eq(fx[l].c.wal_syncs, s);
        /* no frame for the commit: the answer alone */
        ck_assert_uint_eq(fx[l].h.nframes, 1);
        int groups, answers;
        frame_holds(&fx[l].h.frames[0], &groups, &answers);
        ck_assert_int_eq(groups, 0);
        ck_assert_int_eq(answers, 1);
        ck_assert_str_eq(fx[l].h.frames[0].to, abc[b]);
        deliver_from((unsigned)l);
        first = fx[l].fsm.last;
        ck_assert_uint_lt(fx[b].fsm.last, first);
        /* the commit waits for the next APPEND, at most the commit delay */
        ck_assert_uint_eq(jr_node_deadline(ln), fx[l].h.now + delay);
    }
    /* no APPEND came within the delay: a HEARTBEAT tells each follower */
    for (unsigned i = 0; i < 3; i++) fx[i].h.now += delay;
    CALL(l, jr_node_tick(ln));
    ck_assert_uint_eq(fx[l].h.nframes, 2);
    ck_assert_str_ne(fx[l].h.frames[0].to, fx[l].h.frames[1].to);
    pump();
    for (unsigned i = 0; i < 3; i++) ck_assert_uint_eq(fx[i].fsm.last, first);
    teardown();
}
END_TEST

/* A layer above the node (services.h jr__upper) that proposes one entry from its before-flush
 * hook, as a stream leader proposes the publishes it batched since the last flush. */
typedef struct staging {
    jr_group *g;
    int pending, proposed;
    prop p;
} staging;

static void staging_before_flush(void *upper)
{
    staging *st = upper;
    if (!st->pending) return;
    st->pending = 0;
    uint64_t index, term;
    ck_assert_int_eq(jr__group_propose(st->g, "staged", 6, on_prop, &st->p, &index, &term), 0);
    st->proposed++;
}

static void staging_role_changed(void *upper, uint64_t group)
{
    (void)upper;
    (void)group;
}

static void staging_request(void *upper, jr__id from, uint64_t id, uint8_t kind, const uint8_t *p,
                            size_t len)
{
    (void)upper, (void)from, (void)id, (void)kind, (void)p, (void)len;
}

static void staging_close(void *upper, int flush)
{
    (void)upper;
    (void)flush;
}

static const jr__upper staging_tab = {
    .before_flush = staging_before_flush,
    .role_changed = staging_role_changed,
    .request = staging_request,
    .close = staging_close,
};

/* What the layer above proposes in its before-flush hook leaves with that tick's flush (the
 * APPENDs, one write, one sync), and the tick asks the host for no other at once: a leader's
 * would run before it reads the acknowledgements its followers sent while it synced, with
 * nothing to do. */
START_TEST(a_proposal_from_the_before_flush_hook_asks_for_no_second_tick)
{
    setup(3);
    int l = elect();
    jr_node *ln = fx[l].h.node;
    staging st = {.g = fx[l].g};
    jr__node_set_upper(ln, &staging_tab, &st);
    for (int round = 0; round < 3; round++) {
        memset(&st.p, 0, sizeof st.p);
        st.pending = 1;
        uint64_t w = fx[l].c.wal_writes, s = fx[l].c.wal_syncs;
        CALL(l, jr_node_tick(ln));
        ck_assert_int_eq(st.proposed, round + 1);
        ck_assert_uint_eq(fx[l].c.wal_writes - w, 1);
        ck_assert_uint_eq(fx[l].c.wal_syncs - s, 1);
        ck_assert_uint_eq(fx[l].h.nframes, 2); /* an APPEND to each follower */
        ck_assert_uint_gt(jr_node_deadline(ln), fx[l].h.now);
        pump();
        ck_assert_int_eq(st.p.done, 1);
        ck_assert_int_eq(st.p.status, 0);
        for (unsigned i = 0; i < 3; i++) ck_assert_uint_le(fx[i].fsm.last, st.p.index);
        ck_assert_uint_eq(fx[l].fsm.last, st.p.index);
    }
    jr__node_set_upper(ln, NULL, NULL);
    teardown();
}
END_TEST

/* A commit a reader on a follower waits for (a read barrier's) goes to the followers at the next
 * tick, without waiting the commit delay for an APPEND (jr__group_commit_now). */
START_TEST(a_commit_told_at_once_leaves_at_the_next_tick)
{
    setup(3);
    int l = elect();
    jr_node *ln = fx[l].h.node;
    uint64_t idx = propose_one(l, 0);
    for (unsigned i = 0; i < 3; i++)
        if ((int)i != l) ck_assert_uint_lt(fx[i].fsm.last, idx);
    ck_assert_uint_gt(jr_node_deadline(ln), fx[l].h.now);
    jr__group_commit_now(fx[l].g);
    ck_assert_uint_eq(jr_node_deadline(ln), fx[l].h.now);
    CALL(l, jr_node_tick(ln));
    ck_assert_uint_eq(fx[l].h.nframes, 2); /* a HEARTBEAT to each follower */
    pump();
    for (unsigned i = 0; i < 3; i++) ck_assert_uint_eq(fx[i].fsm.last, idx);
    teardown();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fsync");
    TCase *t = tcase_create("fsync");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, r1_one_write_and_one_sync_per_acknowledged_proposal);
    tcase_add_test(t, r3_leader_and_followers_one_write_and_one_sync_per_acknowledged_proposal);
    tcase_add_test(t, a_durable_apply_group_writes_its_commit_before_applying);
    tcase_add_test(t, appends_received_in_one_turn_cost_a_follower_one_write_and_one_sync);
    tcase_add_test(t, the_tick_counting_acks_sends_only_the_answer_and_the_next_append_the_commit);
    tcase_add_test(t, a_commit_told_at_once_leaves_at_the_next_tick);
    tcase_add_test(t, a_proposal_from_the_before_flush_hook_asks_for_no_second_tick);
    tcase_add_loop_test(t, snapshots_taken_while_proposals_flow_cost_no_wal_write_of_their_own, 0,
                        2);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
