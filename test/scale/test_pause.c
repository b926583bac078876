/*
 * A paused process (issue 5, liveness.c jr__live_tick): on the simulated cluster, 3 nodes and a
 * few R3 raw groups, all quiet; one node's process is paused (jr_sim_pause: a stop-the-world
 * collection, a suspended VM) for three election timeouts.
 *
 *  - The others take it for lost and its groups fail over, as they must. When it resumes, its
 *    first tick is long overdue and runs before it has read what its peers sent meanwhile: that
 *    tick judges no peer, so the paused node does not take its healthy peers for lost, and no
 *    group led elsewhere holds an election because of it. Its stale leaderships end.
 *  - Paused and cut off, it resumes still cut off: the first tick judges nobody, the next one
 *    does, however late, and it takes both peers for lost.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"

#define N 3
#define G 30
#define MS 1000000ull
#define ET (150 * MS) /* the fixture's default election timeout */
#define HB (30 * MS)  /* and heartbeat interval */
#define PAUSED 1u     /* the node that is paused */

static int all_quiet(jr_sim *sim)
{
    for (uint64_t gid = 1; gid <= G; gid++)
        for (unsigned i = 0; i < N; i++)
            if (!jr__raft_quiet(sg_raft(sim, i, gid))) return 0;
    return 1;
}

/* A cluster whose every group is quiet, led from every node. */
static jr_sim *start(uint64_t seed)
{
    jr_sim *sim = sg_new(N, seed);
    static jr_fsm fsms[N][G + 1];
    sg_open_all(sim, N, G, &fsms[0][0]);
    jr_sim_run_for(sim, 20 * ET);
    ck_assert(all_quiet(sim));
    return sim;
}

static const jr__live_stats *stats(jr_sim *sim, unsigned i)
{
    return &jr_sim_node(sim, i)->live.stats;
}

START_TEST(a_paused_node_resumes_without_taking_its_peers_for_lost)
{
    jr_sim *sim = start(11);
    uint64_t term[G + 1];
    int led_paused[G + 1], nled = 0;
    for (uint64_t gid = 1; gid <= G; gid++) {
        int l = sg_ready_leader(sim, N, gid);
        ck_assert_int_ge(l, 0);
        led_paused[gid] = l == (int)PAUSED;
        nled += led_paused[gid];
        term[gid] = jr__raft_term(sg_raft(sim, (unsigned)l, gid));
    }
    ck_assert_int_gt(nled, 0);
    jr__live_stats before = *stats(sim, PAUSED);

    ck_assert_int_eq(jr_sim_pause(sim, PAUSED, 3 * ET), 0);
    jr_sim_run_for(sim, 3 * ET);
    /* meanwhile the others took it for lost */
    for (unsigned i = 0; i < N; i++)
        if (i != PAUSED) ck_assert_uint_ge(stats(sim, i)->peers_lost, 1);
    jr_sim_run_for(sim, 10 * ET);

    const jr__live_stats *after = stats(sim, PAUSED);
    fprintf(stderr, "pause: n%u resumed: %llu late tick(s), %llu peers taken for lost\n", PAUSED,
            (unsigned long long)(after->stalls - before.stalls),
            (unsigned long long)(after->peers_lost - before.peers_lost));
    ck_assert_uint_ge(after->stalls, before.stalls + 1);
    ck_assert_uint_eq(after->peers_lost, before.peers_lost);
    for (uint64_t gid = 1; gid <= G; gid++) {
        int l = sg_ready_leader(sim, N, gid);
        ck_assert_int_ge(l, 0);
        uint64_t t = jr__raft_term(sg_raft(sim, (unsigned)l, gid));
        if (led_paused[gid]) {
            ck_assert_int_ne(l, (int)PAUSED); /* failed over; the stale leader stepped down */
            ck_assert_uint_gt(t, term[gid]);
        } else {
            ck_assert_uint_eq(t, term[gid]); /* no election because of the paused node */
        }
    }
    ck_assert(all_quiet(sim));
    jr_sim_free(sim);
}
END_TEST

START_TEST(a_paused_node_that_resumes_cut_off_takes_its_peers_for_lost_at_its_next_tick)
{
    jr_sim *sim = start(12);
    jr__live_stats before = *stats(sim, PAUSED);
    unsigned side[1] = {PAUSED};
    ck_assert_int_eq(jr_sim_partition(sim, side, 1), 0);
    ck_assert_int_eq(jr_sim_pause(sim, PAUSED, 3 * ET), 0);
    jr_sim_run_for(sim, 3 * ET);
    ck_assert_uint_eq(stats(sim, PAUSED)->peers_lost, before.peers_lost);
    jr_sim_run_for(sim, 1); /* the overdue tick: it judges nobody */
    ck_assert_uint_ge(stats(sim, PAUSED)->stalls, before.stalls + 1);
    ck_assert_uint_eq(stats(sim, PAUSED)->peers_lost, before.peers_lost);
    jr_sim_run_for(sim, HB + MS); /* the next one does */
    ck_assert_uint_eq(stats(sim, PAUSED)->peers_lost, before.peers_lost + 2);
    jr_sim_heal(sim);
    jr_sim_run_for(sim, 10 * ET);
    for (uint64_t gid = 1; gid <= G; gid++) ck_assert_int_ge(sg_ready_leader(sim, N, gid), 0);
    ck_assert(all_quiet(sim));
    jr_sim_free(sim);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pause");
    TCase *tc = tcase_create("pause");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_paused_node_resumes_without_taking_its_peers_for_lost);
    tcase_add_test(tc,
                   a_paused_node_that_resumes_cut_off_takes_its_peers_for_lost_at_its_next_tick);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
