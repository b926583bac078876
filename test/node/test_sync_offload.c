/*
 * The WAL's sync run by the host (jr_host.sync_start, flush.c "sync_start"/"sync_done"): a
 * flush writes its batch and hands the host a job; the node goes on until jr_node_synced.
 *  - no message flagged JR__MF_DURABLE (an append acknowledgement, a vote, a vote request)
 *    leaves a node while it has a job out, except inside the jr_node_synced that reports the
 *    job it vouches for; checked on every frame of every test here, through elections;
 *  - a follower acknowledges exactly what the reported sync covers: entries it received while
 *    the sync ran are written after it (not during it) and acknowledged after their own sync;
 *  - a node that crashes with a job out loses that write (the memfs drops unsynced writes),
 *    never acknowledged it, and the cluster keeps every acknowledged proposal;
 *  - with jobs completed late and in any order, proposals flow and every replica applies the
 *    same entries.
 * Raw groups on memfs under a counting vfs, frames delivered by hand, on a manual clock.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "node/node.h"
#include "raft/raft.h"
#include "vfs/memfs.h"
#include "wire/frame.h"

#define MS 1000000ull
#define GROUP 7

static const char *const abc[] = {"a", "b", "c"};

typedef struct node_fx {
    t_host h;
    t_cvfs c;
    t_fsm fsm;
    jr_group *g;
    jr_sync_job *job;      /* handed out, not yet reported */
    int manual;            /* the test reports this node's jobs itself */
    uint64_t acked;        /* highest index of a successful APPEND_RESP it sent */
    uint64_t durable_sent; /* JR__MF_DURABLE messages it sent */
} node_fx;

static node_fx fx[3];
static int (*t_send)(void *ctx, const char *to, const jr_iovec *iov, int iovcnt);

static node_fx *fx_of(void *ctx)
{
    for (unsigned i = 0; i < 3; i++)
        if (ctx == &fx[i].h) return &fx[i];
    ck_abort_msg("unknown host");
    return NULL;
}

static void on_sync_start(void *ctx, jr_sync_job *job)
{
    node_fx *f = fx_of(ctx);
    ck_assert_msg(f->job == NULL, "a second job while one is out");
    f->job = job;
}

/* Every frame a node sends: no JR__MF_DURABLE message while it has a job out. */
static int checked_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt)
{
    node_fx *f = fx_of(ctx);
    ck_assert_int_eq(iovcnt, 1);
    jr__frame fr;
    jr__msg m;
    jr__entry scratch[64];
    int got;
    ck_assert_int_eq(jr__frame_open(&fr, iov[0].base, iov[0].len, 1u << 24), 0);
    while (jr__frame_next(&fr, &m, scratch, 64, &got) == 0 && got) {
        if (!(m.flags & JR__MF_DURABLE)) continue;
        ck_assert_msg(f->job == NULL, "%s sent a durable message (type %d) with its sync out",
                      f->h.host.ctx == &fx[0].h   ? "a"
                      : f->h.host.ctx == &fx[1].h ? "b"
                                                  : "c",
                      (int)m.type);
        f->durable_sent++;
        if (m.type == JR__MSG_APPEND_RESP && m.u.append_resp.success &&
            m.u.append_resp.index > f->acked)
            f->acked = m.u.append_resp.index;
    }
    return t_send(ctx, to, iov, iovcnt);
}

static void fx_open(unsigned i)
{
    node_fx *f = &fx[i];
    t_host_init(&f->h);
    t_send = f->h.host.send;
    f->h.host.version = JR_HOST_VERSION;
    f->h.host.send = checked_send;
    f->h.host.sync_start = on_sync_start;
    t_cvfs_wrap(&f->c, &f->h);
    ck_assert_int_eq(t_open(&f->h, abc[i], abc, 3, NULL), 0);
    t_fsm_init(&f->fsm);
    ck_assert_int_eq(t_group(&f->h, GROUP, abc, 3, &f->fsm, &f->g), 0);
}

static void setup(void)
{
    memset(fx, 0, sizeof fx);
    for (unsigned i = 0; i < 3; i++) fx_open(i);
}

static void teardown(void)
{
    for (unsigned i = 0; i < 3; i++) {
        fx[i].job = NULL; /* a job never reported: the close syncs in its place */
        t_host_free(&fx[i].h);
    }
}

/* Reports node i's job (run now). */
static void complete(unsigned i)
{
    node_fx *f = &fx[i];
    ck_assert_ptr_nonnull(f->job);
    jr_sync_job *job = f->job;
    int rc = jr_sync_job_run(job);
    ck_assert_int_eq(rc, 0);
    f->job = NULL; /* what it vouches for may leave inside the call */
    ck_assert_int_eq(jr_node_synced(f->h.node, job, rc), 0);
}

static void tick(unsigned i)
{
    ck_assert_int_eq(jr_node_tick(fx[i].h.node), 0);
}

/* Delivers the frames node i sent (to nodes not in `cut`, a bit mask; others are dropped). */
static int deliver_from(unsigned i, unsigned cut)
{
    t_host *h = &fx[i].h;
    int moved = 0;
    while (h->nframes) {
        t_frame fr = h->frames[0];
        memmove(h->frames, h->frames + 1, --h->nframes * sizeof *h->frames);
        unsigned to = (unsigned)(fr.to[0] - 'a');
        ck_assert_uint_lt(to, 3);
        if (!(cut & (1u << i)) && !(cut & (1u << to)))
            ck_assert_int_eq(jr_node_recv(fx[to].h.node, abc[i], fr.data, fr.len), 0);
        free(fr.data);
        moved = 1;
    }
    return moved;
}

/* Ticks due nodes, delivers frames and reports the jobs of nodes not manual (each with
 * probability 1/late, 1: at once) until nothing moves. */
static void pump_cut(unsigned late, unsigned cut)
{
    for (int round = 0; round < 100000; round++) {
        int moved = 0;
        for (unsigned i = 0; i < 3; i++) {
            if (!fx[i].h.node) continue;
            if (jr_node_deadline(fx[i].h.node) <= fx[i].h.now) {
                tick(i);
                moved = 1;
            }
            moved |= deliver_from(i, cut);
            if (fx[i].job && !fx[i].manual && (late <= 1 || (unsigned)rand() % late == 0)) {
                complete(i);
                moved = 1;
            } else if (fx[i].job && !fx[i].manual) {
                moved = 1;
            }
        }
        if (!moved) return;
    }
    ck_abort_msg("the cluster never went quiet");
}

static void pump(void)
{
    pump_cut(1, 0);
}

static void advance_cut(uint64_t ns, unsigned late, unsigned cut)
{
    for (uint64_t t = 0; t < ns; t += 5 * MS) {
        for (unsigned i = 0; i < 3; i++) fx[i].h.now += 5 * MS;
        pump_cut(late, cut);
    }
}

static int leader(void)
{
    int l = -1;
    uint64_t term = 0;
    for (unsigned i = 0; i < 3; i++)
        if (fx[i].h.node && jr__raft_role(jr__group_raft(fx[i].g)) == JR_LEADER &&
            jr__raft_term(jr__group_raft(fx[i].g)) >= term) {
            term = jr__raft_term(jr__group_raft(fx[i].g));
            l = (int)i;
        }
    return l;
}

static int elect(void)
{
    pump();
    for (int t = 0; t < 300 && leader() < 0; t++) advance_cut(10 * MS, 1, 0);
    int l = leader();
    ck_assert_int_ge(l, 0);
    advance_cut(10 * MS, 1, 0);
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

START_TEST(a_follower_acknowledges_only_what_its_reported_sync_covers)
{
    setup();
    int l = elect();
    unsigned f = (unsigned)(l + 1) % 3, o = (unsigned)(l + 2) % 3;
    node_fx *F = &fx[f];
    jr__raft *fr = jr__group_raft(F->g);
    uint64_t a0 = jr__raft_last_index(fr);
    ck_assert_uint_eq(F->acked, a0);
    F->manual = 1;

    /* P1 reaches the follower: it writes it and hands out a job, and acknowledges nothing */
    prop p1 = {0}, p2 = {0};
    ck_assert_int_eq(jr_group_propose(fx[l].g, "one", 3, on_prop, &p1), 0);
    tick((unsigned)l);
    deliver_from((unsigned)l, 0);
    uint64_t w0 = F->c.wal_writes, s0 = F->c.wal_syncs;
    tick(f);
    ck_assert_uint_eq(F->c.wal_writes, w0 + 1);
    ck_assert_ptr_nonnull(F->job);
    ck_assert_uint_eq(F->c.wal_syncs, s0); /* the node made no sync of its own */
    ck_assert_uint_eq(F->acked, a0);

    /* P2 arrives while the sync runs: not written, not acknowledged */
    ck_assert_int_eq(jr_group_propose(fx[l].g, "two", 3, on_prop, &p2), 0);
    if (fx[l].job) complete((unsigned)l);
    tick((unsigned)l);
    deliver_from((unsigned)l, 1u << o); /* the other follower sees nothing: no commit yet */
    tick(f);
    ck_assert_uint_eq(F->c.wal_writes, w0 + 1);
    ck_assert_uint_eq(F->acked, a0);
    ck_assert_uint_eq(jr__raft_last_index(fr), a0 + 2);

    /* the sync is reported: P1 acknowledged (not P2), and P2 written with the next job */
    complete(f);
    ck_assert_uint_eq(F->acked, a0 + 1);
    ck_assert_uint_eq(F->c.wal_writes, w0 + 2);
    ck_assert_ptr_nonnull(F->job);
    ck_assert_uint_eq(F->c.wal_syncs, s0 + 1);

    complete(f);
    ck_assert_uint_eq(F->acked, a0 + 2);
    F->manual = 0;
    pump();
    ck_assert(p1.done && p1.status == 0 && p1.index == a0 + 1);
    ck_assert(p2.done && p2.status == 0 && p2.index == a0 + 2);
    advance_cut(50 * MS, 1, 0); /* the followers learn the commit */
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(fx[i].fsm.applied, 2);
        ck_assert_uint_eq(fx[i].fsm.last, a0 + 2);
    }
    teardown();
}
END_TEST

START_TEST(a_leader_counts_itself_only_once_its_sync_is_reported)
{
    setup();
    int l = elect();
    node_fx *L = &fx[l];
    L->manual = 1;
    uint64_t c0 = jr__raft_commit_index(jr__group_raft(L->g));
    prop p = {0};
    ck_assert_int_eq(jr_group_propose(L->g, "x", 1, on_prop, &p), 0);
    /* one follower is cut off: the leader's own durable copy is needed for a quorum */
    unsigned cut = 1u << ((unsigned)(l + 1) % 3);
    tick((unsigned)l);
    ck_assert_ptr_nonnull(L->job);
    pump_cut(1, cut);
    ck_assert_uint_eq(jr__raft_commit_index(jr__group_raft(L->g)), c0);
    ck_assert(!p.done);
    complete((unsigned)l);
    pump_cut(1, cut);
    ck_assert_uint_eq(jr__raft_commit_index(jr__group_raft(L->g)), c0 + 1);
    ck_assert(p.done && p.status == 0);
    L->manual = 0;
    teardown();
}
END_TEST

START_TEST(a_crash_with_a_job_out_loses_that_write_and_no_acknowledged_entry)
{
    setup();
    int l = elect();
    unsigned f = (unsigned)(l + 1) % 3;
    node_fx *F = &fx[f];
    uint64_t a0 = jr__raft_last_index(jr__group_raft(F->g));
    F->manual = 1;
    prop p = {0};
    ck_assert_int_eq(jr_group_propose(fx[l].g, "lost-here", 9, on_prop, &p), 0);
    tick((unsigned)l);
    deliver_from((unsigned)l, 0);
    tick(f);
    ck_assert_ptr_nonnull(F->job);
    /* the crash: the node is gone without a close, the unsynced write with it */
    jr__node_close_noflush(F->h.node);
    F->h.node = NULL;
    F->job = NULL;
    F->manual = 0;
    jr__memfs_crash(F->c.inner, 0);
    pump(); /* the leader and the other follower commit P1 without it */
    ck_assert(p.done && p.status == 0);
    ck_assert_uint_eq(F->acked, a0);

    /* restart: its WAL ends where it last synced; it catches up from the leader */
    t_fsm_init(&F->fsm);
    ck_assert_int_eq(t_open(&F->h, abc[f], abc, 3, NULL), 0);
    ck_assert_int_eq(t_group(&F->h, GROUP, abc, 3, &F->fsm, &F->g), 0);
    ck_assert_uint_eq(jr__raft_last_index(jr__group_raft(F->g)), a0);
    advance_cut(200 * MS, 1, 0);
    for (unsigned i = 0; i < 3; i++) ck_assert_uint_eq(fx[i].fsm.last, fx[l].fsm.last);
    ck_assert_uint_ge(jr__raft_last_index(jr__group_raft(F->g)), a0 + 1);
    teardown();
}
END_TEST

START_TEST(late_jobs_and_elections_keep_every_replica_the_same)
{
    setup();
    srand(15);
    elect();
    int acked = 0, sent = 0;
    prop ps[200];
    memset(ps, 0, sizeof ps);
    for (int round = 0; round < 20; round++) {
        int l = leader();
        if (l >= 0)
            for (int k = 0; k < 10; k++, sent++) {
                char buf[16];
                int len = snprintf(buf, sizeof buf, "p%d", sent);
                ck_assert_int_eq(jr_group_propose(fx[l].g, buf, (size_t)len, on_prop, &ps[sent]),
                                 0);
            }
        /* every fourth round the leader is cut off long enough for an election */
        unsigned cut = (round % 4 == 3 && l >= 0) ? 1u << l : 0;
        advance_cut(cut ? 600 * MS : 20 * MS, 3, cut);
    }
    advance_cut(600 * MS, 3, 0);
    for (int i = 0; i < sent; i++) acked += ps[i].done && ps[i].status == 0;
    ck_assert_int_gt(acked, 0);
    uint64_t applied = fx[0].fsm.applied;
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(fx[i].fsm.applied, applied);
        ck_assert_uint_eq(fx[i].fsm.last, fx[0].fsm.last);
        ck_assert_uint_gt(fx[i].durable_sent, 0);
    }
    teardown();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sync_offload");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_follower_acknowledges_only_what_its_reported_sync_covers);
    tcase_add_test(tc, a_leader_counts_itself_only_once_its_sync_is_reported);
    tcase_add_test(tc, a_crash_with_a_job_out_loses_that_write_and_no_acknowledged_entry);
    tcase_add_test(tc, late_jobs_and_elections_keep_every_replica_the_same);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
