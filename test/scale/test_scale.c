/*
 * Many groups per node (issue 5), on the simulated cluster: 3 nodes sharing SCALE_GROUPS raw
 * R3 groups (default 2,000; the soak suite runs 10,000).
 *
 *  - idle: once every group is quiet, each node sends exactly one frame to each peer per
 *    heartbeat interval (a coalesced heartbeat), and nothing else travels;
 *  - failover: the node leading the most groups (about a third) is killed; every one of its
 *    groups has a new, ready leader within two election timeouts, with one election each (the
 *    staggered campaigns do not split votes, also when a small campaign window queues them),
 *    spread over both survivors, and accepts writes;
 *  - restart: the killed node comes back; no group holds an election (no term moves), every
 *    replica catches up, no write is lost, and the cluster goes back to one heartbeat frame per
 *    peer per interval;
 *  - quick restart: the leading node crashes and is back before anyone could call it lost; its
 *    new incarnation makes its groups fail over as after a loss (one election each), nothing
 *    else moves, no write is lost.
 *
 * SCALE_SEED=s changes the seed (default 1).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"

#define N 3
#define MS 1000000ull
#define ET (150 * MS) /* the fixture's default election timeout */
#define HB (30 * MS)  /* and heartbeat interval */

typedef struct rep {
    struct cluster *c;
    unsigned node;
    uint64_t gid;
    uint32_t writes; /* bit k: write k applied */
    uint64_t last;
} rep;

typedef struct cluster {
    jr_sim *sim;
    uint64_t ngroups, seed;
    uint32_t camp_max; /* the nodes' campaign window (0: the default) */
    rep *reps[N];
    jr_fsm *ops[N];
    uint64_t acked, rejected;
    char fail[256];
} cluster;

static void failf(cluster *c, const char *msg, unsigned node, uint64_t gid)
{
    if (!c->fail[0])
        snprintf(c->fail, sizeof c->fail, "seed %llu: node %u group %llu: %s",
                 (unsigned long long)c->seed, node, (unsigned long long)gid, msg);
}

static void apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    rep *r = ctx;
    uint64_t v;
    if (len != sizeof v) {
        failf(r->c, "applied an entry of the wrong size", r->node, r->gid);
        return;
    }
    memcpy(&v, data, sizeof v);
    if (v >> 8 != r->gid) failf(r->c, "applied another group's write", r->node, r->gid);
    if (index <= r->last) failf(r->c, "applied out of order", r->node, r->gid);
    r->last = index;
    r->writes |= 1u << (v & 0xff);
}

static jr_group *grp(cluster *c, unsigned i, uint64_t gid)
{
    jr_node *n = jr_sim_node(c->sim, i);
    return n ? jr_node_group(n, gid) : NULL;
}

static jr__raft *raft(cluster *c, unsigned i, uint64_t gid)
{
    jr_group *g = grp(c, i, gid);
    return g ? jr__group_raft(g) : NULL;
}

static void open_node(cluster *c, unsigned i)
{
    jr_sim_node(c->sim, i)->live.camp_max = c->camp_max;
    for (uint64_t gid = 1; gid <= c->ngroups; gid++) {
        rep *r = &c->reps[i][gid];
        memset(r, 0, sizeof *r);
        r->c = c;
        r->node = i;
        r->gid = gid;
        sg_open(c->sim, N, i, gid, &c->ops[i][gid], r, apply);
    }
}

/* small_window: a campaign window of one round per 250 groups instead of the default. */
static void setup(cluster *c, int small_window)
{
    memset(c, 0, sizeof *c);
    c->ngroups = sg_env("SCALE_GROUPS", 2000);
    c->camp_max = small_window ? (uint32_t)(c->ngroups / 250 + 1) : 0;
    c->seed = sg_env("SCALE_SEED", 1);
    c->sim = sg_new(N, c->seed);
    for (unsigned i = 0; i < N; i++) {
        c->reps[i] = calloc(c->ngroups + 1, sizeof *c->reps[i]);
        c->ops[i] = calloc(c->ngroups + 1, sizeof *c->ops[i]);
        open_node(c, i);
    }
}

static void teardown(cluster *c)
{
    jr_sim_free(c->sim);
    for (unsigned i = 0; i < N; i++) {
        free(c->reps[i]);
        free(c->ops[i]);
    }
}

/* The node that leads gid with the highest term, if it is ready (an entry of its term
 * committed); else -1. */
static int ready_leader(cluster *c, uint64_t gid)
{
    int best = -1;
    uint64_t term = 0;
    for (unsigned i = 0; i < N; i++) {
        jr__raft *r = raft(c, i, gid);
        if (r && jr__raft_role(r) == JR_LEADER && jr__raft_term(r) >= term) {
            best = (int)i;
            term = jr__raft_term(r);
        }
    }
    return best >= 0 && jr__raft_ready(raft(c, (unsigned)best, gid)) ? best : -1;
}

static uint64_t max_term(cluster *c, uint64_t gid)
{
    return sg_max_term(c->sim, N, gid);
}

static int all_led(cluster *c)
{
    for (uint64_t gid = 1; gid <= c->ngroups; gid++)
        if (ready_leader(c, gid) < 0) return 0;
    return 1;
}

static int all_quiet(cluster *c)
{
    for (unsigned i = 0; i < N; i++)
        for (uint64_t gid = 1; gid <= c->ngroups; gid++) {
            jr__raft *r = raft(c, i, gid);
            if (r && !jr__raft_quiet(r)) return 0;
        }
    return 1;
}

/* Runs in steps of `step` until pred holds; returns the simulated time it took. */
static uint64_t run_until(cluster *c, int (*pred)(cluster *), uint64_t max, uint64_t step,
                          const char *what)
{
    uint64_t t0 = jr_sim_now(c->sim);
    while (!pred(c)) {
        ck_assert_msg(jr_sim_now(c->sim) - t0 < max, "seed %llu: %s not reached in %llu ms",
                      (unsigned long long)c->seed, what, (unsigned long long)(max / MS));
        jr_sim_run_for(c->sim, step);
    }
    ck_assert_msg(!c->fail[0], "%s", c->fail);
    return jr_sim_now(c->sim) - t0;
}

static void on_ack(void *arg, int status, uint64_t index)
{
    cluster *c = arg;
    (void)index;
    if (status == 0)
        c->acked++;
    else
        c->rejected++;
}

/* Proposes write k to every group in gids (all if NULL) at its ready leader. */
static uint64_t write_all(cluster *c, const uint8_t *only, uint32_t k)
{
    uint64_t n = 0;
    for (uint64_t gid = 1; gid <= c->ngroups; gid++) {
        if (only && !only[gid]) continue;
        int l = ready_leader(c, gid);
        ck_assert_msg(l >= 0, "group %llu has no leader", (unsigned long long)gid);
        uint64_t v = gid << 8 | k;
        ck_assert_int_eq(jr_group_propose(grp(c, (unsigned)l, gid), &v, sizeof v, on_ack, c), 0);
        n++;
    }
    return n;
}

static uint64_t want_acks;
static int acks_done(cluster *c)
{
    return c->acked + c->rejected >= want_acks;
}

/* Over `intervals` heartbeat intervals at idle: every node sends exactly one frame to each
 * peer per interval, every one of them a coalesced heartbeat, naming no group. */
static void check_idle_traffic(cluster *c, unsigned intervals)
{
    jr_node_stats before[N], after[N];
    jr__live_stats lb[N];
    for (unsigned i = 0; i < N; i++) {
        before[i] = (jr_node_stats){.size = sizeof before[i]};
        jr_node_stats_get(jr_sim_node(c->sim, i), &before[i]);
        lb[i] = jr_sim_node(c->sim, i)->live.stats;
    }
    jr_sim_stats sb = {.size = sizeof sb}, sa = {.size = sizeof sa};
    /* the last news (a group going quiet) is repeated until echoed: let it settle */
    jr_sim_run_for(c->sim, 4 * HB);
    for (unsigned i = 0; i < N; i++) {
        jr_node_stats_get(jr_sim_node(c->sim, i), &before[i]);
        lb[i] = jr_sim_node(c->sim, i)->live.stats;
    }
    jr_sim_stats_get(c->sim, &sb);
    jr_sim_run_for(c->sim, intervals * HB);
    jr_sim_stats_get(c->sim, &sa);
    uint64_t items = 0;
    for (unsigned i = 0; i < N; i++) {
        jr_node *n = jr_sim_node(c->sim, i);
        after[i] = (jr_node_stats){.size = sizeof after[i]};
        jr_node_stats_get(n, &after[i]);
        uint64_t frames = after[i].frames_sent - before[i].frames_sent;
        uint64_t hb = n->live.stats.hb_frames - lb[i].hb_frames;
        ck_assert_msg(frames == (N - 1) * intervals && hb == frames,
                      "node %u sent %llu frames (%llu heartbeats) in %u intervals", i,
                      (unsigned long long)frames, (unsigned long long)hb, intervals);
        items += n->live.stats.hb_items_sent - lb[i].hb_items_sent;
    }
    ck_assert_uint_eq(sa.frames_sent - sb.frames_sent, N * (N - 1) * intervals);
    /* and the heartbeats name no group: a group is named only when it changes */
    ck_assert_uint_eq(items, 0);
}

START_TEST(idle_groups_cost_one_heartbeat_frame_per_peer_per_interval)
{
    cluster c;
    setup(&c, 0);
    uint64_t t = run_until(&c, all_led, 40 * ET, 5 * MS, "a leader for every group");
    fprintf(stderr, "scale: %llu groups x %d nodes: all led after %llu ms\n",
            (unsigned long long)c.ngroups, N, (unsigned long long)(t / MS));
    want_acks = write_all(&c, NULL, 0);
    run_until(&c, acks_done, 20 * ET, 5 * MS, "the first writes acknowledged");
    ck_assert_uint_eq(c.rejected, 0);
    t = run_until(&c, all_quiet, 20 * ET, 5 * MS, "every group quiet");
    fprintf(stderr, "scale: all quiet %llu ms after the writes\n", (unsigned long long)(t / MS));
    check_idle_traffic(&c, 20);
    /* and nothing moves for a long while */
    uint64_t terms = 0;
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) terms += max_term(&c, gid);
    jr_sim_run_for(c.sim, 20 * ET);
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) terms -= max_term(&c, gid);
    ck_assert_uint_eq(terms, 0);
    ck_assert(all_quiet(&c));
    teardown(&c);
}
END_TEST

static uint8_t *lost_set; /* groups the killed node led */
static int lost_groups_led(cluster *c)
{
    for (uint64_t gid = 1; gid <= c->ngroups; gid++)
        if (lost_set[gid] && ready_leader(c, gid) < 0) return 0;
    return 1;
}

/* SCALE_TRACE=1: prints the failover as it happens (400 ms in steps of 5 ms) instead of
 * checking it. */
static void trace_failover(cluster *c)
{
    uint64_t t0 = jr_sim_now(c->sim);
    for (int k = 0; k < 80; k++) {
        jr_sim_run_for(c->sim, 5 * MS);
        uint64_t ok = 0, cand = 0, quiet = 0, lead = 0;
        for (uint64_t gid = 1; gid <= c->ngroups; gid++) {
            if (!lost_set[gid]) continue;
            ok += ready_leader(c, gid) >= 0;
            for (unsigned i = 0; i < N; i++) {
                jr__raft *r = raft(c, i, gid);
                if (!r) continue;
                cand += jr__raft_role(r) == JR_CANDIDATE;
                quiet += jr__raft_quiet(r);
                lead += jr__raft_leader(r) != 0;
            }
        }
        fprintf(stderr, "t+%llums: ready %llu candidates %llu quiet %llu knowing a leader %llu\n",
                (unsigned long long)((jr_sim_now(c->sim) - t0) / MS), (unsigned long long)ok,
                (unsigned long long)cand, (unsigned long long)quiet, (unsigned long long)lead);
    }
}

static int restarted_caught_up(cluster *c)
{
    for (unsigned i = 0; i < N; i++)
        for (uint64_t gid = 1; gid <= c->ngroups; gid++)
            if (c->reps[i][gid].writes != 3) return 0;
    return 1;
}

/* _i = 1: a campaign window of one round per 250 groups (8 at 2,000), so most of the survivors'
 * staggered rounds queue and start late, some alongside the next-ranked survivor's (the pre-vote
 * tie-break keeps those from splitting the vote). */
START_TEST(killed_leader_node_fails_over_within_two_timeouts_and_restarts_without_a_storm)
{
    cluster c;
    setup(&c, _i);
    run_until(&c, all_led, 40 * ET, 5 * MS, "a leader for every group");
    want_acks = write_all(&c, NULL, 0);
    run_until(&c, acks_done, 20 * ET, 5 * MS, "the first writes acknowledged");
    run_until(&c, all_quiet, 20 * ET, 5 * MS, "every group quiet");

    /* the node that leads the most groups (about a third) dies */
    uint64_t led[N] = {0};
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) led[ready_leader(&c, gid)]++;
    unsigned dead = 0;
    for (unsigned i = 1; i < N; i++)
        if (led[i] > led[dead]) dead = i;
    ck_assert_uint_ge(led[dead] * 4, c.ngroups); /* at least a quarter */
    lost_set = calloc(c.ngroups + 1, 1);
    uint64_t *term0 = calloc(c.ngroups + 1, sizeof *term0);
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) {
        lost_set[gid] = ready_leader(&c, gid) == (int)dead;
        term0[gid] = max_term(&c, gid);
    }
    ck_assert_int_eq(jr_sim_crash(c.sim, dead), 0);
    if (getenv("SCALE_TRACE")) trace_failover(&c);
    uint64_t t = run_until(&c, lost_groups_led, 2 * ET + MS, MS, "new leaders for the lost groups");
    uint64_t won[N] = {0}, extra = 0;
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) {
        if (!lost_set[gid]) continue;
        won[ready_leader(&c, gid)]++;
        extra += max_term(&c, gid) - term0[gid] - 1;
    }
    fprintf(stderr,
            "scale: node n%u (leader of %llu groups) killed: all have new leaders after %llu ms "
            "(election timeout %llu ms); won by survivors: %llu / %llu; extra elections: %llu\n",
            dead, (unsigned long long)led[dead], (unsigned long long)(t / MS),
            (unsigned long long)(ET / MS), (unsigned long long)won[(dead + 1) % N],
            (unsigned long long)won[(dead + 2) % N], (unsigned long long)extra);
    ck_assert_uint_le(t, 2 * ET);
    ck_assert_uint_le(extra * 100, led[dead]); /* split votes: under 1% */
    /* spread over the survivors, not all on one */
    ck_assert_uint_ge(won[(dead + 1) % N] * 4, led[dead]);
    ck_assert_uint_ge(won[(dead + 2) % N] * 4, led[dead]);
    /* the new leaders take the dead node for lost from their election on: all quiet again a
     * heartbeat round later, not an election timeout of heartbeats later */
    t = run_until(&c, all_quiet, 20 * ET, MS, "every group quiet after the failover");
    fprintf(stderr, "scale: every group quiet again %llu ms later\n", (unsigned long long)(t / MS));
    ck_assert_uint_le(t, 4 * HB);
    /* every group accepts a write without the dead node */
    c.acked = c.rejected = 0;
    want_acks = write_all(&c, NULL, 1);
    run_until(&c, acks_done, 20 * ET, 5 * MS, "the second writes acknowledged");
    ck_assert_uint_eq(c.rejected, 0);

    /* the node comes back: no elections, every replica catches up, nothing lost */
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) term0[gid] = max_term(&c, gid);
    jr_sim_run_for(c.sim, 5 * ET);
    ck_assert_int_eq(jr_sim_restart(c.sim, dead), 0);
    open_node(&c, dead);
    t = run_until(&c, restarted_caught_up, 40 * ET, 5 * MS, "every replica holding both writes");
    fprintf(stderr, "scale: n%u restarted: every replica holds every write after %llu ms\n", dead,
            (unsigned long long)(t / MS));
    run_until(&c, all_quiet, 40 * ET, 5 * MS, "every group quiet again");
    jr_sim_run_for(c.sim, 10 * ET);
    uint64_t moved = 0;
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) moved += max_term(&c, gid) != term0[gid];
    fprintf(stderr, "scale: groups that held an election after the restart: %llu\n",
            (unsigned long long)moved);
    ck_assert_uint_eq(moved, 0);
    ck_assert_msg(!c.fail[0], "%s", c.fail);
    check_idle_traffic(&c, 20);
    free(lost_set);
    free(term0);
    teardown(&c);
}
END_TEST

/* The node leading the most groups crashes and is back 20 ms later, long before anyone could
 * call it lost: its new incarnation, seen in its first heartbeat, tells the others its
 * leaderships are gone; its groups get new leaders as fast as after a loss, with one election
 * each, and lose no write. */
START_TEST(quick_restart_of_a_leader_node_fails_over_without_a_storm)
{
    cluster c;
    setup(&c, 0);
    run_until(&c, all_led, 40 * ET, 5 * MS, "a leader for every group");
    want_acks = write_all(&c, NULL, 0);
    run_until(&c, acks_done, 20 * ET, 5 * MS, "the first writes acknowledged");
    run_until(&c, all_quiet, 20 * ET, 5 * MS, "every group quiet");
    uint64_t led[N] = {0};
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) led[ready_leader(&c, gid)]++;
    unsigned dead = 0;
    for (unsigned i = 1; i < N; i++)
        if (led[i] > led[dead]) dead = i;
    uint64_t *term0 = calloc(c.ngroups + 1, sizeof *term0);
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) term0[gid] = max_term(&c, gid);
    ck_assert_int_eq(jr_sim_crash(c.sim, dead), 0);
    jr_sim_run_for(c.sim, 20 * MS);
    ck_assert_int_eq(jr_sim_restart(c.sim, dead), 0);
    open_node(&c, dead);
    uint64_t t = run_until(&c, all_led, 2 * ET, MS, "a leader for every group again");
    uint64_t extra = 0, moved = 0;
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) {
        uint64_t d = max_term(&c, gid) - term0[gid];
        moved += d > 0;
        extra += d > 1 ? d - 1 : 0;
    }
    fprintf(stderr,
            "scale: n%u (leader of %llu groups) restarted after 20 ms: every group led again "
            "after %llu ms; %llu groups elected, %llu extra elections\n",
            dead, (unsigned long long)led[dead], (unsigned long long)(t / MS),
            (unsigned long long)moved, (unsigned long long)extra);
    ck_assert_uint_le(moved, led[dead]);       /* only its own groups elected */
    ck_assert_uint_le(extra * 100, led[dead]); /* split votes: under 1% */
    c.acked = c.rejected = 0;
    want_acks = write_all(&c, NULL, 1);
    run_until(&c, acks_done, 20 * ET, 5 * MS, "the second writes acknowledged");
    ck_assert_uint_eq(c.rejected, 0);
    run_until(&c, restarted_caught_up, 40 * ET, 5 * MS, "every replica holding both writes");
    ck_assert_msg(!c.fail[0], "%s", c.fail);
    free(term0);
    teardown(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("scale");
    TCase *tc = tcase_create("scale");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, idle_groups_cost_one_heartbeat_frame_per_peer_per_interval);
    tcase_add_loop_test(
        tc, killed_leader_node_fails_over_within_two_timeouts_and_restarts_without_a_storm, 0, 2);
    tcase_add_test(tc, quick_restart_of_a_leader_node_fails_over_without_a_storm);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
