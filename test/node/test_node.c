/*
 * The node's contract with its host and the raw-group API: one timer armed at the earliest
 * deadline, one frame per peer per flush, callbacks never inside the call that started them,
 * bad frames rejected whole, API errors, close semantics, and allocation failure at every
 * allocation point of open, group open and propose.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "jetraft/sim.h"
#include "node/node.h"
#include "node/rpc.h"
#include "raft/raft.h"

#define MS 1000000ull

static const char *const abc[] = {"a", "b", "c"};

static uint64_t min_group_deadline(jr_node *n, uint64_t first, uint64_t count)
{
    uint64_t d = UINT64_MAX;
    for (uint64_t id = first; id < first + count; id++) {
        jr_group *g = jr_node_group(n, id);
        uint64_t x = jr__raft_deadline(jr__group_raft(g));
        if (x < d) d = x;
    }
    return d;
}

START_TEST(arm_is_the_earliest_deadline_and_one_frame_per_peer)
{
    t_host h;
    t_host_init(&h);
    ck_assert_int_eq(t_open(&h, "a", abc, 3, NULL), 0);
    t_fsm f[50];
    for (uint64_t i = 0; i < 50; i++) {
        jr_group *g;
        t_fsm_init(&f[i]);
        ck_assert_int_eq(t_group(&h, 100 + i, abc, 3, &f[i], &g), 0);
        /* the bootstrap entry waits for a flush: the host is asked to tick now */
        ck_assert_uint_eq(h.armed, h.now);
        ck_assert_uint_eq(jr_node_deadline(h.node), h.now);
    }
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    uint64_t d = min_group_deadline(h.node, 100, 50);
    ck_assert_uint_eq(h.armed, d);
    ck_assert_uint_eq(jr_node_deadline(h.node), d);
    ck_assert_uint_ge(d, h.now + 100 * MS); /* election timeout in [T, 2T) */
    ck_assert_uint_lt(d, h.now + 200 * MS);
    ck_assert_uint_eq(h.nframes, 0);

    /* Ticking early does nothing. */
    h.now = d - 1;
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_uint_eq(h.nframes, 0);
    ck_assert_uint_eq(h.armed, d);

    /* Past every group's election timeout: 50 groups campaign, in one frame per peer. */
    h.now += 200 * MS;
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_uint_eq(h.nframes, 2);
    ck_assert_str_ne(h.frames[0].to, h.frames[1].to);
    ck_assert_uint_eq(h.armed, min_group_deadline(h.node, 100, 50));
    jr_node_stats st = {.size = sizeof st};
    ck_assert_int_eq(jr_node_stats_get(h.node, &st), 0);
    ck_assert_uint_eq(st.groups, 50);
    ck_assert_uint_eq(st.frames_sent, 2);
    t_host_free(&h);
}
END_TEST

static int inside_api;
typedef struct done_rec {
    int calls;
    int status;
    uint64_t index;
} done_rec;

static void on_propose(void *arg, int status, uint64_t index)
{
    done_rec *r = arg;
    ck_assert_msg(!inside_api, "callback ran inside the API call that started it");
    r->calls++;
    r->status = status;
    r->index = index;
}

static void on_done(void *arg, int status)
{
    done_rec *r = arg;
    ck_assert_msg(!inside_api, "callback ran inside the API call that started it");
    r->calls++;
    r->status = status;
}

static const char *const only_a[] = {"a"};

START_TEST(callbacks_never_run_inside_the_call)
{
    t_host h;
    t_host_init(&h);
    ck_assert_int_eq(t_open(&h, "a", only_a, 1, NULL), 0);
    t_fsm f;
    t_fsm_init(&f);
    jr_group *g;
    ck_assert_int_eq(t_group(&h, 1, only_a, 1, &f, &g), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_str_eq(jr_group_leader(g), "a"); /* a lone voter leads at once */

    done_rec p = {0}, t = {0};
    inside_api = 1;
    ck_assert_int_eq(jr_group_propose(g, "x", 1, on_propose, &p), 0);
    ck_assert_int_eq(jr_group_transfer(g, "a", on_done, &t), 0); /* already there */
    inside_api = 0;
    ck_assert_int_eq(p.calls, 0);
    ck_assert_int_eq(t.calls, 0);
    ck_assert_uint_eq(h.armed, h.now); /* work is pending */
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_int_eq(p.calls, 1);
    ck_assert_int_eq(p.status, 0);
    ck_assert_uint_eq(p.index, f.last);
    ck_assert_uint_eq(f.applied, 1);
    ck_assert_int_eq(t.calls, 1);
    ck_assert_int_eq(t.status, 0);
    t_host_free(&h);
}
END_TEST

START_TEST(close_completes_pending_callbacks_with_ECLOSED)
{
    t_host h;
    t_host_init(&h);
    ck_assert_int_eq(t_open(&h, "a", only_a, 1, NULL), 0);
    t_fsm f1, f2;
    t_fsm_init(&f1);
    t_fsm_init(&f2);
    jr_group *g1, *g2;
    ck_assert_int_eq(t_group(&h, 1, only_a, 1, &f1, &g1), 0);
    ck_assert_int_eq(t_group(&h, 2, only_a, 1, &f2, &g2), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);

    done_rec r[4] = {{0}};
    ck_assert_int_eq(jr_group_propose(g1, "x", 1, on_propose, &r[0]), 0);
    ck_assert_int_eq(jr_group_propose(g1, "y", 1, on_propose, &r[1]), 0);
    inside_api = 1;
    jr_group_close(g1);
    inside_api = 0;
    ck_assert_ptr_null(jr_node_group(h.node, 1));
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_int_eq(r[0].calls, 1);
    ck_assert_int_eq(r[0].status, JR_ECLOSED);
    ck_assert_int_eq(r[1].status, JR_ECLOSED);
    ck_assert_uint_eq(f1.applied, 0);

    /* node close: callbacks complete before jr_node_close returns */
    ck_assert_int_eq(jr_group_propose(g2, "z", 1, on_propose, &r[2]), 0);
    ck_assert_int_eq(jr_group_propose(g2, "w", 1, on_propose, &r[3]), 0);
    jr_node_close(h.node);
    h.node = NULL;
    ck_assert_int_eq(r[2].calls, 1);
    ck_assert_int_eq(r[2].status, JR_ECLOSED);
    ck_assert_int_eq(r[3].status, JR_ECLOSED);
    t_host_free(&h);
}
END_TEST

/* Destroying a group for the layer above (services.h "Group destruction") releases it at once,
 * outside a flush iteration; from inside one (an apply) it is refused with JR_EMISUSE and
 * changes nothing, as is destroying a group still open. */
static struct {
    jr_node *n;
    uint64_t victim;
    int rc, calls;
} in_apply;

static void destroying_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    (void)ctx, (void)index, (void)data, (void)len;
    if (!in_apply.victim) return; /* not yet asked to */
    in_apply.rc = jr__node_group_destroy(in_apply.n, in_apply.victim);
    in_apply.calls++;
}

START_TEST(a_group_is_destroyed_at_once_and_never_inside_a_flush)
{
    t_host h;
    t_host_init(&h);
    ck_assert_int_eq(t_open(&h, "a", only_a, 1, NULL), 0);
    t_fsm f1, f2;
    t_fsm_init(&f1);
    t_fsm_init(&f2);
    f1.ops.apply = destroying_apply;
    memset(&in_apply, 0, sizeof in_apply);
    in_apply.n = h.node;
    jr_group *g1, *g2;
    ck_assert_int_eq(t_group(&h, 1, only_a, 1, &f1, &g1), 0);
    ck_assert_int_eq(t_group(&h, 2, only_a, 1, &f2, &g2), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_int_eq(jr_group_propose(g2, "x", 1, NULL, NULL), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_uint_eq(f2.applied, 1);
    jr__group_detach(g2, JR_ECLOSED);
    ck_assert_int_eq(jr__node_group_destroy(h.node, 1), JR_EMISUSE); /* open */

    in_apply.victim = 2;
    ck_assert_int_eq(jr_group_propose(g1, "y", 1, NULL, NULL), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_int_eq(in_apply.calls, 1);
    ck_assert_int_eq(in_apply.rc, JR_EMISUSE);
    ck_assert_int_eq(jr__node_group_known(h.node, 2), 1);

    ck_assert_int_eq(jr__node_group_destroy(h.node, 2), 0);
    ck_assert_int_eq(jr__node_group_known(h.node, 2), 0);
    /* its DROP waits for what the replica knew to be on disk (wal_dir/released): the next
     * flush writes that, then stages and writes the DROP */
    ck_assert_int_eq(jr__node_group_retiring(h.node, 2), 1);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_int_eq(jr__node_group_retiring(h.node, 2), 0);
    ck_assert_int_eq(h.node->released_dirty, 0);
    t_host_free(&h);
}
END_TEST

/* A group closed and opened again in the same node lifetime keeps its log. */
START_TEST(reopened_group_keeps_its_log)
{
    t_host h;
    t_host_init(&h);
    ck_assert_int_eq(t_open(&h, "a", only_a, 1, NULL), 0);
    t_fsm f;
    t_fsm_init(&f);
    jr_group *g;
    ck_assert_int_eq(t_group(&h, 1, only_a, 1, &f, &g), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    for (int i = 0; i < 10; i++) ck_assert_int_eq(jr_group_propose(g, "e", 1, NULL, NULL), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_uint_eq(f.applied, 10);
    jr_group_close(g);
    ck_assert_ptr_null(jr_node_group(h.node, 1));
    t_fsm f2;
    t_fsm_init(&f2);
    ck_assert_int_eq(t_group(&h, 1, only_a, 1, &f2, &g), 0);
    ck_assert_int_eq(t_group(&h, 1, only_a, 1, &f2, &g), JR_EEXIST);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_uint_eq(f2.applied, 10); /* a fresh fsm gets the log again */
    ck_assert_uint_eq(f2.last, f.last);
    t_host_free(&h);
}
END_TEST

/* Bad frames ---------------------------------------------------------------------------------*/

typedef struct snapshot_state {
    jr_node_stats st;
    jr_group_status gs;
    uint64_t deadline;
    unsigned sends, narm;
} snapshot_state;

static void capture(t_host *h, jr_group *g, snapshot_state *s)
{
    memset(s, 0, sizeof *s);
    s->st.size = sizeof s->st;
    s->gs.size = sizeof s->gs;
    jr_node_stats_get(h->node, &s->st);
    jr_group_status_get(g, &s->gs);
    s->deadline = jr_node_deadline(h->node);
    s->sends = h->sends;
    s->narm = h->narm;
}

static void expect_rejected(t_host *h, jr_group *g, const char *from, const void *p, size_t len,
                            int want)
{
    snapshot_state before, after;
    capture(h, g, &before);
    int rc = jr_node_recv(h->node, from, p, len);
    ck_assert_int_lt(rc, 0);
    if (want) ck_assert_int_eq(rc, want);
    ck_assert_str_ne(jr_node_errmsg(h->node), "");
    capture(h, g, &after);
    ck_assert_uint_eq(after.st.frames_rejected, before.st.frames_rejected + 1);
    after.st.frames_rejected = before.st.frames_rejected;
    ck_assert_int_eq(memcmp(&before.st, &after.st, sizeof before.st), 0);
    ck_assert_int_eq(memcmp(&before.gs, &after.gs, sizeof before.gs), 0);
    ck_assert_uint_eq(before.deadline, after.deadline);
    ck_assert_uint_eq(before.sends, after.sends);
}

START_TEST(bad_frames_are_rejected_and_change_nothing)
{
    t_host ha, hb, hc;
    t_host_init(&ha);
    t_host_init(&hb);
    t_host_init(&hc);
    ck_assert_int_eq(t_open(&ha, "a", abc, 3, NULL), 0);
    ck_assert_int_eq(t_open(&hb, "b", abc, 3, NULL), 0);
    ck_assert_int_eq(t_open(&hc, "c", abc, 3, NULL), 0);
    t_fsm fa, fb, fc;
    t_fsm_init(&fa);
    t_fsm_init(&fb);
    t_fsm_init(&fc);
    jr_group *ga, *gb, *gc;
    ck_assert_int_eq(t_group(&ha, 5, abc, 3, &fa, &ga), 0);
    ck_assert_int_eq(t_group(&hb, 5, abc, 3, &fb, &gb), 0);
    ck_assert_int_eq(t_group(&hc, 5, abc, 3, &fc, &gc), 0);
    jr_node_tick(ha.node);
    jr_node_tick(hb.node);
    jr_node_tick(hc.node);
    /* a campaigns: its pre-vote to b is our valid frame */
    ha.now += 300 * MS;
    ck_assert_int_eq(jr_node_tick(ha.node), 0);
    const t_frame *fr = NULL;
    for (unsigned i = 0; i < ha.nframes; i++)
        if (strcmp(ha.frames[i].to, "b") == 0) fr = &ha.frames[i];
    ck_assert_ptr_nonnull(fr);
    size_t len = fr->len;
    uint8_t *buf = malloc(len);

    /* truncated */
    expect_rejected(&hb, gb, "a", fr->data, len - 1, JR_ECORRUPT);
    expect_rejected(&hb, gb, "a", fr->data, 10, JR_ECORRUPT);
    expect_rejected(&hb, gb, "a", fr->data, 0, JR_ECORRUPT);
    /* oversized */
    size_t big = (8u << 20) + 1;
    uint8_t *huge = calloc(1, big);
    memcpy(huge, fr->data, len);
    expect_rejected(&hb, gb, "a", huge, big, JR_EMSGSIZE);
    free(huge);
    /* wrong version */
    memcpy(buf, fr->data, len);
    buf[2] = 2;
    expect_rejected(&hb, gb, "a", buf, len, JR_EVERSION);
    /* wrong checksum: one flipped bit anywhere */
    for (size_t i = 0; i < len; i += 3) {
        memcpy(buf, fr->data, len);
        buf[i] ^= 0x10;
        expect_rejected(&hb, gb, "a", buf, len, 0);
    }
    /* random bytes */
    srand(7);
    for (int k = 0; k < 200; k++) {
        size_t n = (size_t)(rand() % 200);
        for (size_t i = 0; i < n; i++) buf[i % len] = (uint8_t)rand();
        expect_rejected(&hb, gb, "a", buf, n < len ? n : len, 0);
    }
    /* a valid frame from a, handed over as if from c, or from a stranger */
    expect_rejected(&hb, gb, "c", fr->data, len, JR_EAUTH);
    expect_rejected(&hb, gb, "mallory", fr->data, len, JR_EAUTH);
    /* a valid frame for b, delivered to c */
    expect_rejected(&hc, gc, "a", fr->data, len, JR_EINVAL);
    /* and the real thing is accepted */
    jr_node_stats st = {.size = sizeof st};
    ck_assert_int_eq(jr_node_recv(hb.node, "a", fr->data, len), 0);
    ck_assert_int_eq(jr_node_stats_get(hb.node, &st), 0);
    ck_assert_uint_eq(st.frames_received, 1);
    ck_assert_uint_eq(hb.nframes, 0);    /* the answer waits for the flush of the next tick, */
    ck_assert_uint_eq(hb.armed, hb.now); /* which the node asked for at once */
    ck_assert_int_eq(jr_node_tick(hb.node), 0);
    ck_assert_uint_eq(hb.nframes, 1); /* b answered a's pre-vote */
    free(buf);
    t_host_free(&ha);
    t_host_free(&hb);
    t_host_free(&hc);
}
END_TEST

/* Node-to-node requests are a service of the core (node/rpc.h): a node with no layer above to
 * serve them answers each one JR_ENOTSUP, once, and the caller's callback runs once. */
typedef struct rpc_answer {
    int calls, status, answered;
} rpc_answer;

static void on_rpc_answer(jr_node *n, void *arg, int status, int answered, const uint8_t *p,
                          size_t len)
{
    rpc_answer *a = arg;
    (void)n, (void)p, (void)len;
    a->calls++;
    a->status = status;
    a->answered = answered;
}

/* Delivers every frame `from` recorded for `to` to `to`'s node `times` times, then forgets
 * them. */
static void deliver(t_host *from, const char *from_name, t_host *to, const char *to_name, int times)
{
    for (int k = 0; k < times; k++)
        for (unsigned i = 0; i < from->nframes; i++)
            if (!strcmp(from->frames[i].to, to_name))
                ck_assert_int_eq(
                    jr_node_recv(to->node, from_name, from->frames[i].data, from->frames[i].len),
                    0);
    t_frames_clear(from);
}

START_TEST(a_node_without_a_layer_above_refuses_requests)
{
    static const char *const peers[] = {"a", "b"};
    t_host ha, hb;
    t_host_init(&ha);
    t_host_init(&hb);
    ck_assert_int_eq(t_open(&ha, "a", peers, 2, NULL), 0);
    ck_assert_int_eq(t_open(&hb, "b", peers, 2, NULL), 0);
    rpc_answer a = {0, 0, 0};
    static const uint8_t pay[] = {1, 2, 3};
    jr_iovec iov = {pay, sizeof pay};
    uint64_t id = 0;
    ck_assert_int_eq(
        jr__rpc_call(ha.node, hb.node->self, 1, &iov, 1, 1000000000ull, on_rpc_answer, &a, &id), 0);
    ck_assert_uint_ne(id, 0);
    jr_node_tick(ha.node);          /* the request leaves with the next flush */
    deliver(&ha, "a", &hb, "b", 2); /* twice (the network duplicated it) */
    jr_node_tick(hb.node);
    deliver(&hb, "b", &ha, "a", 1);
    ck_assert_uint_eq(hb.node->rpc_dups, 1); /* the copy was not executed, nor answered again */
    ck_assert_int_eq(a.calls, 1);
    ck_assert_int_eq(a.answered, 1);
    ck_assert_int_eq(a.status, JR_ENOTSUP);
    t_host_free(&ha);
    t_host_free(&hb);
}
END_TEST

/* API errors over a simulated cluster --------------------------------------------------------*/

typedef struct sim_groups {
    jr_sim *sim;
    t_fsm f[4];
    jr_group *g[4];
} sim_groups;

/* Opens group 9 (voters n0..n2) on node i; join: the floor it starts from if it joins (NULL:
 * none). */
static int open_sim_group_from(sim_groups *s, unsigned i, const jr_group_floor *join)
{
    static const char *const voters[] = {"n0", "n1", "n2"};
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = 9;
    gc.voters = voters;
    gc.nvoters = 3;
    t_fsm_init(&s->f[i]);
    gc.fsm = &s->f[i].ops;
    gc.join = join;
    return jr_group_open(jr_sim_node(s->sim, i), &gc, &s->g[i]);
}

static int open_sim_group(sim_groups *s, unsigned i)
{
    return open_sim_group_from(s, i, NULL);
}

static int leader_of(sim_groups *s)
{
    for (unsigned i = 0; i < 3; i++) {
        jr_group_status st = {.size = sizeof st};
        jr_group_status_get(s->g[i], &st);
        if (st.role == JR_LEADER) return (int)i;
    }
    return -1;
}

static int has_leader(void *arg, jr_sim *sim)
{
    (void)sim;
    return leader_of(arg) >= 0;
}

static int done_called(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((done_rec *)arg)->calls > 0;
}

/* Four simulated nodes, group 9 on the first three, until it has a leader. */
static void start_sim_groups(sim_groups *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.nodes = 4;
    cfg.seed = seed;
    ck_assert_int_eq(jr_sim_new(&cfg, &s->sim), 0);
    for (unsigned i = 0; i < 3; i++) ck_assert_int_eq(open_sim_group(s, i), 0);
    ck_assert_int_eq(jr_sim_run_until(s->sim, has_leader, s, 2000 * MS), 0);
}

START_TEST(group_api_errors_and_membership)
{
    sim_groups s;
    start_sim_groups(&s, 11);
    jr_sim_run_for(s.sim, 100 * MS); /* the leader commits its no-op */
    int l = leader_of(&s);
    int f = (l + 1) % 3;

    ck_assert_int_eq(jr_group_propose(s.g[f], "x", 1, NULL, NULL), JR_ENOTLEADER);
    ck_assert_int_eq(jr_group_add_observer(s.g[f], "n3", NULL, NULL), JR_ENOTLEADER);
    ck_assert_int_eq(jr_group_add_observer(s.g[l], "nobody", NULL, NULL), JR_ENOTFOUND);
    ck_assert_str_eq(jr_group_leader(s.g[f]), jr_sim_name(s.sim, (unsigned)l));

    /* one membership change at a time */
    done_rec add = {0}, promote = {0};
    ck_assert_int_eq(jr_group_add_observer(s.g[l], "n3", on_done, &add), 0);
    ck_assert_int_eq(jr_group_promote(s.g[l], "n3", on_done, &promote), JR_EBUSY);
    ck_assert_str_eq(jr_strerror(JR_EBUSY), "cluster member change is in progress");
    ck_assert_ptr_nonnull(strstr(jr_node_errmsg(jr_sim_node(s.sim, (unsigned)l)),
                                 "cluster member change is in progress"));
    ck_assert_int_eq(promote.calls, 0);

    /* n3 joins empty, receives the log as an observer, then is promoted */
    ck_assert_int_eq(open_sim_group(&s, 3), 0);
    ck_assert_int_eq(jr_sim_run_until(s.sim, done_called, &add, 2000 * MS), 0);
    ck_assert_int_eq(add.status, 0);
    jr_group_status st = {.size = sizeof st};
    jr_group_status_get(s.g[l], &st);
    ck_assert_uint_eq(st.npeers, 4);
    for (int i = 0; i < 5; i++) jr_group_propose(s.g[l], "y", 1, NULL, NULL);
    jr_sim_run_for(s.sim, 200 * MS);
    ck_assert_uint_eq(s.f[3].applied, 5);
    jr_group_status_get(s.g[3], &st);
    ck_assert_int_eq(st.role, JR_OBSERVER);
    ck_assert_int_eq(jr_group_promote(s.g[l], "n3", on_done, &promote), 0);
    ck_assert_int_eq(jr_sim_run_until(s.sim, done_called, &promote, 2000 * MS), 0);
    ck_assert_int_eq(promote.status, 0);
    jr_sim_run_for(s.sim, 100 * MS);
    jr_group_status_get(s.g[3], &st);
    ck_assert_int_eq(st.role, JR_FOLLOWER);

    /* per-peer progress on the leader */
    jr_group_status_get(s.g[l], &st);
    for (size_t i = 0; i < st.npeers; i++) {
        jr_peer_status ps = {.size = sizeof ps};
        ck_assert_int_eq(jr_group_peer(s.g[l], i, &ps), 0);
        ck_assert_ptr_nonnull(ps.name);
        ck_assert_int_eq(ps.voter, 1);
        ck_assert_int_eq(ps.current, 1);
        ck_assert_uint_eq(ps.lag, 0);
    }
    jr_peer_status ps = {.size = sizeof ps};
    ck_assert_int_eq(jr_group_peer(s.g[l], st.npeers, &ps), JR_ERANGE);

    /* transfer to a named voter */
    done_rec tr = {0};
    unsigned to = (unsigned)(l + 2) % 3;
    ck_assert_int_eq(jr_group_transfer(s.g[l], jr_sim_name(s.sim, to), on_done, &tr), 0);
    ck_assert_int_eq(jr_group_propose(s.g[l], "z", 1, NULL, NULL), JR_ETRANSFER);
    ck_assert_int_eq(jr_sim_run_until(s.sim, done_called, &tr, 2000 * MS), 0);
    ck_assert_int_eq(tr.status, 0);
    ck_assert_str_eq(jr_group_leader(s.g[l]), jr_sim_name(s.sim, to));
    jr_sim_free(s.sim);
}
END_TEST

/* A server added back to a raw group starts from the floor its leader reported after the removal
 * (jr_group_floor_get -> jr_group_config.join): at that term, judging candidates by that committed
 * entry (the core's side: test_raft's an_empty_joiner_* cases). */
START_TEST(a_joiner_starts_from_the_floor_its_leader_reported)
{
    sim_groups s;
    start_sim_groups(&s, 12);
    int l = leader_of(&s);
    unsigned r = (unsigned)(l + 1) % 3;
    for (int i = 0; i < 5; i++) jr_group_propose(s.g[l], "x", 1, NULL, NULL);
    jr_sim_run_for(s.sim, 200 * MS);

    jr_group_floor fl = {.size = sizeof fl};
    ck_assert_int_eq(jr_group_floor_get(s.g[r], &fl), JR_ENOTLEADER);
    ck_assert_int_eq(jr_group_floor_get(NULL, &fl), JR_EINVAL);
    ck_assert_int_eq(jr_group_floor_get(s.g[l], NULL), JR_EINVAL);

    /* the follower leaves; the floor is taken once its removal completed */
    done_rec rm = {0};
    ck_assert_int_eq(jr_group_remove(s.g[l], jr_sim_name(s.sim, r), on_done, &rm), 0);
    ck_assert_int_eq(jr_sim_run_until(s.sim, done_called, &rm, 2000 * MS), 0);
    ck_assert_int_eq(rm.status, 0);
    jr_group_close(s.g[r]);
    s.g[r] = NULL;
    for (int i = 0; i < 3; i++) jr_group_propose(s.g[l], "y", 1, NULL, NULL);
    jr_sim_run_for(s.sim, 200 * MS);
    jr_group_status st = {.size = sizeof st};
    ck_assert_int_eq(jr_group_status_get(s.g[l], &st), 0);
    ck_assert_int_eq(jr_group_floor_get(s.g[l], &fl), 0);
    ck_assert_uint_eq(fl.term, st.term);
    ck_assert_uint_eq(fl.commit_index, st.commit_index);
    ck_assert_uint_ge(fl.commit_index, 10); /* config, no-op, 5 + removal + 3 */
    ck_assert_uint_ge(fl.commit_term, 1);
    ck_assert_uint_le(fl.commit_term, fl.term);

    /* a replica joining with it (n3: empty) starts at the floor's term */
    jr_group_floor bad = {sizeof bad, fl.term, 0, fl.commit_index}; /* index without its term */
    ck_assert_int_eq(open_sim_group_from(&s, 3, &bad), JR_EINVAL);
    bad = (jr_group_floor){sizeof bad, fl.commit_term - 1, fl.commit_term, fl.commit_index};
    ck_assert_int_eq(open_sim_group_from(&s, 3, &bad), JR_EINVAL); /* older */
    bad = fl;
    bad.size = 0; /* a floor that declares no fields */
    ck_assert_int_eq(open_sim_group_from(&s, 3, &bad), JR_EINVAL);
    ck_assert_int_eq(open_sim_group_from(&s, 3, &fl), 0);
    ck_assert_int_eq(jr_group_status_get(s.g[3], &st), 0);
    ck_assert_uint_eq(st.term, fl.term);
    ck_assert_uint_eq(st.last_index, 0);

    /* and is added, caught up and promoted as usual */
    done_rec add = {0}, promote = {0};
    ck_assert_int_eq(jr_group_add_observer(s.g[l], "n3", on_done, &add), 0);
    ck_assert_int_eq(jr_sim_run_until(s.sim, done_called, &add, 2000 * MS), 0);
    ck_assert_int_eq(add.status, 0);
    jr_sim_run_for(s.sim, 200 * MS);
    ck_assert_int_eq(jr_group_promote(s.g[l], "n3", on_done, &promote), 0);
    ck_assert_int_eq(jr_sim_run_until(s.sim, done_called, &promote, 2000 * MS), 0);
    ck_assert_int_eq(promote.status, 0);
    jr_group_propose(s.g[l], "z", 1, NULL, NULL);
    jr_sim_run_for(s.sim, 200 * MS);
    ck_assert_uint_eq(s.f[3].applied, s.f[l].applied);
    ck_assert_uint_eq(s.f[3].applied, 9);
    ck_assert_int_eq(jr_group_status_get(s.g[3], &st), 0);
    ck_assert_int_eq(st.role, JR_FOLLOWER);
    jr_sim_free(s.sim);
}
END_TEST

/* Allocation failure --------------------------------------------------------------------------*/

typedef struct fail_alloc {
    jr_allocator a;
    long count;   /* allocations attempted (malloc + realloc) */
    long fail_at; /* 0: never */
    long live;
} fail_alloc;

static void *fa_malloc(void *ctx, size_t n)
{
    fail_alloc *f = ctx;
    if (++f->count == f->fail_at) return NULL;
    void *p = malloc(n);
    if (p) f->live++;
    return p;
}

static void *fa_realloc(void *ctx, void *p, size_t n)
{
    fail_alloc *f = ctx;
    if (++f->count == f->fail_at) return NULL;
    void *q = realloc(p, n);
    if (q && !p) f->live++;
    return q;
}

static void fa_free(void *ctx, void *p)
{
    fail_alloc *f = ctx;
    if (p) f->live--;
    free(p);
}

static void fa_init(fail_alloc *f)
{
    memset(f, 0, sizeof *f);
    f->a.version = JR_ALLOCATOR_VERSION;
    f->a.ctx = f;
    f->a.malloc = fa_malloc;
    f->a.realloc = fa_realloc;
    f->a.free = fa_free;
}

START_TEST(allocation_failure_in_open)
{
    long n;
    for (n = 1; n < 10000; n++) {
        fail_alloc fa;
        fa_init(&fa);
        fa.fail_at = n;
        t_host h;
        t_host_init(&h);
        int rc = t_open(&h, "a", abc, 3, &fa.a);
        if (rc == 0) {
            t_host_free(&h);
            ck_assert_int_eq(fa.live, 0);
            break;
        }
        ck_assert_msg(rc == JR_ENOMEM, "allocation %ld: open returned %s", n, jr_err_name(rc));
        ck_assert_ptr_null(h.node);
        ck_assert_msg(fa.live == 0, "allocation %ld: %ld blocks leaked", n, fa.live);
        t_host_free(&h);
    }
    ck_assert_int_gt(n, 3);
}
END_TEST

START_TEST(allocation_failure_in_group_open)
{
    long n;
    for (n = 1; n < 10000; n++) {
        fail_alloc fa;
        fa_init(&fa);
        t_host h;
        t_host_init(&h);
        ck_assert_int_eq(t_open(&h, "a", abc, 3, &fa.a), 0);
        t_fsm f;
        t_fsm_init(&f);
        jr_group *g = NULL;
        fa.fail_at = fa.count + n;
        int rc = t_group(&h, 3, abc, 3, &f, &g);
        fa.fail_at = 0;
        if (rc == 0) {
            ck_assert_int_eq(jr_node_tick(h.node), 0);
            t_host_free(&h);
            ck_assert_int_eq(fa.live, 0);
            break;
        }
        ck_assert_msg(rc == JR_ENOMEM, "allocation %ld: group open returned %s", n,
                      jr_err_name(rc));
        ck_assert_ptr_null(jr_node_group(h.node, 3));
        ck_assert_int_eq(t_group(&h, 3, abc, 3, &f, &g), 0); /* the node is still fine */
        ck_assert_int_eq(jr_node_tick(h.node), 0);
        t_host_free(&h);
        ck_assert_msg(fa.live == 0, "allocation %ld: %ld blocks leaked", n, fa.live);
    }
    ck_assert_int_gt(n, 1);
}
END_TEST

static void count_cb(void *arg, int status, uint64_t index)
{
    int *c = arg;
    (void)status;
    (void)index;
    (*c)++;
}

/* Opens a node with a single-voter group, proposes 3000 entries of varied sizes with ticks in
 * between, failing allocation number `fail` (counted from the first proposal; 0: none). Returns
 * the number of allocations the proposal phase made. Checks that every accepted proposal
 * completes, that failures are JR_ENOMEM only, and that nothing leaks. */
static long propose_run(long fail)
{
    fail_alloc fa;
    fa_init(&fa);
    t_host h;
    t_host_init(&h);
    ck_assert_int_eq(t_open(&h, "a", only_a, 1, &fa.a), 0);
    t_fsm f;
    t_fsm_init(&f);
    jr_group *g;
    ck_assert_int_eq(t_group(&h, 1, only_a, 1, &f, &g), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    long start = fa.count;
    if (fail) fa.fail_at = start + fail;
    int accepted = 0, completed = 0;
    char data[300];
    memset(data, 'p', sizeof data);
    for (int i = 0; i < 3000; i++) {
        int rc = jr_group_propose(g, data, (size_t)(i % 300), count_cb, &completed);
        if (rc == 0)
            accepted++;
        else
            ck_assert_msg(rc == JR_ENOMEM, "failing allocation %ld: propose returned %s", fail,
                          jr_err_name(rc));
        if (i % 500 == 499) {
            int trc = jr_node_tick(h.node);
            ck_assert(trc == 0 || trc == JR_ENOMEM);
        }
    }
    long made = fa.count - start;
    fa.fail_at = 0;
    for (int k = 0; k < 5; k++) {
        h.now += 50 * MS;
        jr_node_tick(h.node);
    }
    ck_assert_int_eq(completed, accepted);
    ck_assert_int_eq(jr_group_propose(g, "ok", 2, NULL, NULL), 0);
    t_host_free(&h);
    ck_assert_msg(fa.live == 0, "failing allocation %ld: %ld blocks leaked", fail, fa.live);
    return made;
}

START_TEST(allocation_failure_in_propose)
{
    long total = propose_run(0); /* how many allocation points the run has */
    ck_assert_int_gt(total, 0);
    for (long n = 1; n <= total; n++) propose_run(n);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("node");
    TCase *tc = tcase_create("host");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, arm_is_the_earliest_deadline_and_one_frame_per_peer);
    tcase_add_test(tc, callbacks_never_run_inside_the_call);
    tcase_add_test(tc, close_completes_pending_callbacks_with_ECLOSED);
    tcase_add_test(tc, reopened_group_keeps_its_log);
    tcase_add_test(tc, a_group_is_destroyed_at_once_and_never_inside_a_flush);
    tcase_add_test(tc, bad_frames_are_rejected_and_change_nothing);
    tcase_add_test(tc, group_api_errors_and_membership);
    tcase_add_test(tc, a_joiner_starts_from_the_floor_its_leader_reported);
    tcase_add_test(tc, allocation_failure_in_open);
    tcase_add_test(tc, allocation_failure_in_group_open);
    tcase_add_test(tc, allocation_failure_in_propose);
    tcase_add_test(tc, a_node_without_a_layer_above_refuses_requests);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
