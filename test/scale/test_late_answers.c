/*
 * Slow links and quiet groups (issue 5, node.c dispatch): on the simulated cluster, 3 nodes and
 * a few R3 raw groups whose links take longer than a heartbeat interval (but far less than an
 * election timeout), so that a leader's last heartbeat before it goes quiet is answered only
 * after it went quiet. Such a late HEARTBEAT_RESP counts as contact, as an answer to the
 * leader's listing would; it does not wake the group (before, every late answer woke it: it
 * heartbeated, went quiet again and was woken by the next late answer, so on a node too busy
 * to answer within an interval idle groups never stayed quiet). Every group goes quiet and
 * stays quiet, with no election.
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

static jr__raft *raft(jr_sim *sim, unsigned i, uint64_t gid)
{
    return sg_raft(sim, i, gid);
}

static int quiet_groups(jr_sim *sim)
{
    int q = 0;
    for (uint64_t gid = 1; gid <= G; gid++) {
        int all = 1;
        for (unsigned i = 0; i < N; i++) all &= jr__raft_quiet(raft(sim, i, gid));
        q += all;
    }
    return q;
}

static uint64_t terms(jr_sim *sim)
{
    uint64_t t = 0;
    for (uint64_t gid = 1; gid <= G; gid++)
        for (unsigned i = 0; i < N; i++) t += jr__raft_term(raft(sim, i, gid));
    return t;
}

START_TEST(late_heartbeat_answers_do_not_wake_quiet_leaders)
{
    jr_sim *sim = sg_new(N, 5);
    static jr_fsm fsms[N][G + 1];
    sg_open_all(sim, N, G, &fsms[0][0]);
    jr_sim_run_for(sim, 20 * ET);
    /* links slower than a heartbeat interval, answers within a third of an election timeout */
    jr_sim_link slow;
    jr_sim_link_init(&slow);
    slow.delay_min_ns = HB + 5 * MS;
    slow.delay_max_ns = HB + 15 * MS;
    for (unsigned a = 0; a < N; a++)
        for (unsigned b = 0; b < N; b++)
            if (a != b) ck_assert_int_eq(jr_sim_set_link(sim, a, b, &slow), 0);
    /* every group wakes (a write), then goes quiet again */
    uint64_t v = 1;
    for (uint64_t gid = 1; gid <= G; gid++)
        for (unsigned i = 0; i < N; i++)
            if (jr__raft_role(raft(sim, i, gid)) == JR_LEADER)
                ck_assert_int_eq(jr_group_propose(jr_node_group(jr_sim_node(sim, i), gid), &v,
                                                  sizeof v, NULL, NULL),
                                 0);
    uint64_t t0 = terms(sim), late0 = 0, late = 0;
    for (unsigned i = 0; i < N; i++) late0 += jr_sim_node(sim, i)->live.stats.late_hb_resps;
    jr_sim_run_for(sim, 10 * ET);
    ck_assert_int_eq(quiet_groups(sim), G);
    /* and they stay quiet */
    jr__live_stats before[N];
    for (unsigned i = 0; i < N; i++) before[i] = jr_sim_node(sim, i)->live.stats;
    for (int k = 0; k < 40; k++) {
        jr_sim_run_for(sim, HB / 2);
        ck_assert_int_eq(quiet_groups(sim), G);
    }
    for (unsigned i = 0; i < N; i++) {
        const jr__live_stats *s = &jr_sim_node(sim, i)->live.stats;
        late += s->late_hb_resps;
        /* no group news: nothing went quiet or woke */
        ck_assert_uint_eq(s->hb_items_sent, before[i].hb_items_sent);
    }
    fprintf(stderr, "late answers: %llu heartbeat answers reached quiet leaders\n",
            (unsigned long long)(late - late0));
    ck_assert_uint_gt(late, late0);    /* the case did happen */
    ck_assert_uint_eq(terms(sim), t0); /* no election */
    jr_sim_free(sim);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("late_answers");
    TCase *tc = tcase_create("late_answers");
    tcase_add_test(tc, late_heartbeat_answers_do_not_wake_quiet_leaders);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
