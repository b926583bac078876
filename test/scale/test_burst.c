/*
 * A burst of groups that all need an election at once (issue 5, liveness.h "Paced
 * campaigns"), on the simulated cluster: 3 nodes, BURST_GROUPS raw R3 groups (default 5,000)
 * opened in the same instant on every node — as when they are created together, or when the
 * whole cluster restarts.
 *
 *  - created at once: every group has a ready leader within a bound, and the campaigns stay
 *    near one per group (pre-vote requests counted on the wire, terms counted in the groups):
 *    not a storm of competing candidates;
 *  - with a small window (camp_max 32), the nodes never run more rounds at once than that,
 *    timers that fire meanwhile wait their turn, and the groups still converge with about one
 *    campaign each;
 *  - the whole cluster crashes and restarts with every group: the same holds, and no write
 *    acknowledged before the crash is lost.
 *
 * BURST_GROUPS=n changes the number of groups, BURST_SEED=s the seed (default 1).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"

#define N 3
#define MS 1000000ull
#define ET (150 * MS) /* the fixture's default election timeout */

typedef struct cluster {
    jr_sim *sim;
    uint64_t ngroups, seed;
    jr_fsm *fsms[N];
    uint64_t *applied[N]; /* per group: entries applied */
    uint64_t acked, rejected;
} cluster;

static void apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    uint64_t *count = ctx;
    (void)index;
    (void)data;
    (void)len;
    (*count)++;
}

/* Opens every group on node i in the same instant. */
static void open_groups(cluster *c, unsigned i, uint32_t camp_max)
{
    jr_node *n = jr_sim_node(c->sim, i);
    n->live.camp_max = camp_max;
    for (uint64_t gid = 1; gid <= c->ngroups; gid++) {
        c->applied[i][gid] = 0;
        sg_open(c->sim, N, i, gid, &c->fsms[i][gid], &c->applied[i][gid], apply);
    }
}

static void setup(cluster *c, uint32_t camp_max)
{
    memset(c, 0, sizeof *c);
    c->ngroups = sg_env("BURST_GROUPS", 5000);
    c->seed = sg_env("BURST_SEED", 1);
    c->sim = sg_new(N, c->seed);
    for (unsigned i = 0; i < N; i++) {
        c->fsms[i] = calloc(c->ngroups + 1, sizeof *c->fsms[i]);
        c->applied[i] = calloc(c->ngroups + 1, sizeof *c->applied[i]);
    }
    for (unsigned i = 0; i < N; i++) open_groups(c, i, camp_max);
}

static void teardown(cluster *c)
{
    jr_sim_free(c->sim);
    for (unsigned i = 0; i < N; i++) {
        free(c->fsms[i]);
        free(c->applied[i]);
    }
}

static int ready_leader(cluster *c, uint64_t gid)
{
    return sg_ready_leader(c->sim, N, gid);
}

static uint64_t max_term(cluster *c, uint64_t gid)
{
    return sg_max_term(c->sim, N, gid);
}

static uint64_t cursor; /* all_led: the first group not yet seen led */
static int all_led(cluster *c)
{
    for (; cursor < c->ngroups; cursor++)
        if (ready_leader(c, cursor + 1) < 0) return 0;
    for (uint64_t gid = 1; gid <= c->ngroups; gid++)
        if (ready_leader(c, gid) < 0) {
            cursor = gid - 1;
            return 0;
        }
    return 1;
}

/* Runs until every group has a ready leader; returns the simulated time it took. */
static uint64_t run_until_led(cluster *c, uint64_t max)
{
    uint64_t t0 = jr_sim_now(c->sim);
    cursor = 0;
    while (!all_led(c)) {
        ck_assert_msg(jr_sim_now(c->sim) - t0 < max,
                      "seed %llu: %llu of %llu groups led after %llu ms",
                      (unsigned long long)c->seed, (unsigned long long)cursor,
                      (unsigned long long)c->ngroups, (unsigned long long)(max / MS));
        jr_sim_run_for(c->sim, 10 * MS);
    }
    return jr_sim_now(c->sim) - t0;
}

typedef struct counts {
    uint64_t prevotes, votes, rounds, waits, peak;
} counts;

static counts wire_counts(cluster *c)
{
    counts k = {0, 0, 0, 0, 0};
    for (unsigned i = 0; i < N; i++) {
        const jr__live_stats *s = &jr_sim_node(c->sim, i)->live.stats;
        k.prevotes += s->prevotes;
        k.votes += s->votes;
        k.rounds += s->rounds;
        k.waits += s->waits;
        if (s->camp_peak > k.peak) k.peak = s->camp_peak;
    }
    return k;
}

/* Elects every group of a burst and checks that it took about one campaign per group: each
 * campaign asks both other voters, so pre-vote requests / 2 is the number of campaigns; terms
 * above `base` count the elections that moved a term. */
static void elect_burst(cluster *c, const char *what, uint64_t base)
{
    counts before = wire_counts(c);
    uint64_t t = run_until_led(c, 20 * ET);
    counts after = wire_counts(c);
    uint64_t campaigns = (after.prevotes - before.prevotes) / (N - 1);
    uint64_t elections = 0;
    for (uint64_t gid = 1; gid <= c->ngroups; gid++) elections += max_term(c, gid) - base;
    fprintf(stderr,
            "burst: %s: %llu groups x %d nodes led after %llu ms (election timeout %llu ms); "
            "campaigns %llu, elections %llu, rounds %llu, timers queued %llu, most rounds at "
            "once %llu\n",
            what, (unsigned long long)c->ngroups, N, (unsigned long long)(t / MS),
            (unsigned long long)(ET / MS), (unsigned long long)campaigns,
            (unsigned long long)elections, (unsigned long long)(after.rounds - before.rounds),
            (unsigned long long)(after.waits - before.waits), (unsigned long long)after.peak);
    /* the first campaigns of a burst are spread over a few seconds at most */
    ck_assert_uint_le(t, 20 * ET);
    /* about one campaign and one election per group: no storm */
    ck_assert_uint_ge(elections, c->ngroups);
    ck_assert_uint_le(elections * 100, c->ngroups * 105);
    ck_assert_uint_le(campaigns * 100, c->ngroups * 110);
}

START_TEST(groups_created_at_once_elect_with_about_one_campaign_each)
{
    cluster c;
    setup(&c, 0);
    elect_burst(&c, "created at once", 1); /* a new group starts at term 1 */
    ck_assert_uint_le(wire_counts(&c).peak, JR__LIVE_CAMPAIGNS);
    teardown(&c);
}
END_TEST

START_TEST(a_small_window_queues_the_timers_and_still_converges)
{
    cluster c;
    setup(&c, 32);
    elect_burst(&c, "created at once, window 32", 1);
    counts k = wire_counts(&c);
    ck_assert_uint_le(k.peak, 32); /* never more rounds at once than the window */
    ck_assert_uint_gt(k.waits, 0); /* and timers did wait for one */
    teardown(&c);
}
END_TEST

static void on_ack(void *arg, int status, uint64_t index)
{
    cluster *c = arg;
    (void)index;
    if (status == 0)
        c->acked++;
    else
        c->rejected++;
}

START_TEST(the_whole_cluster_restarts_without_an_election_storm)
{
    cluster c;
    setup(&c, 0);
    run_until_led(&c, 20 * ET);
    /* one write per group, acknowledged (so durable on a quorum) before the crash */
    uint64_t v = 42;
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) {
        int l = ready_leader(&c, gid);
        jr_group *g = jr_node_group(jr_sim_node(c.sim, (unsigned)l), gid);
        ck_assert_int_eq(jr_group_propose(g, &v, sizeof v, on_ack, &c), 0);
    }
    for (int k = 0; k < 200 && c.acked + c.rejected < c.ngroups; k++)
        jr_sim_run_for(c.sim, 10 * MS);
    ck_assert_uint_eq(c.acked, c.ngroups);
    uint64_t terms = 0;
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) terms += max_term(&c, gid);
    for (unsigned i = 0; i < N; i++) ck_assert_int_eq(jr_sim_crash(c.sim, i), 0);
    jr_sim_run_for(c.sim, 10 * MS);
    for (unsigned i = 0; i < N; i++) {
        ck_assert_int_eq(jr_sim_restart(c.sim, i), 0);
        open_groups(&c, i, 0);
    }
    /* every group elects again (its term moves on from where it was) */
    counts before = wire_counts(&c);
    uint64_t t = run_until_led(&c, 20 * ET);
    counts after = wire_counts(&c);
    uint64_t campaigns = (after.prevotes - before.prevotes) / (N - 1), elections = 0;
    for (uint64_t gid = 1; gid <= c.ngroups; gid++) elections += max_term(&c, gid);
    elections -= terms;
    fprintf(stderr,
            "burst: whole-cluster restart: %llu groups led again after %llu ms; campaigns %llu, "
            "elections %llu\n",
            (unsigned long long)c.ngroups, (unsigned long long)(t / MS),
            (unsigned long long)campaigns, (unsigned long long)elections);
    ck_assert_uint_le(elections * 100, c.ngroups * 105);
    ck_assert_uint_le(campaigns * 100, c.ngroups * 110);
    /* no acknowledged write is lost: every group's new leader applies it again */
    for (int k = 0; k < 100; k++) {
        uint64_t missing = 0;
        for (uint64_t gid = 1; gid <= c.ngroups; gid++) {
            int l = ready_leader(&c, gid);
            /* the bootstrap configuration, the first leader's no-op, the write */
            missing += l < 0 || c.applied[l][gid] < 1;
        }
        if (!missing) break;
        ck_assert_msg(k < 99, "%llu groups lost the write", (unsigned long long)missing);
        jr_sim_run_for(c.sim, 10 * MS);
    }
    teardown(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("burst");
    TCase *tc = tcase_create("burst");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, groups_created_at_once_elect_with_about_one_campaign_each);
    tcase_add_test(tc, a_small_window_queues_the_timers_and_still_converges);
    tcase_add_test(tc, the_whole_cluster_restarts_without_an_election_storm);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
