/*
 * Known limits of the stand-in for a removed voter of two (lib/raft/removed.c), each a case
 * that fails today and is registered as an expected failure (test/raft/meson.build,
 * should_fail), one test per case (CK_RUN_CASE), so the default suite stays green and a case
 * that starts to pass shows up as an unexpected pass. Each asserts what the group should do.
 *
 *  - replica_that_outlived_its_removal: the removed voter n0 removed n1 from the group while n1
 *    was cut off, and committed with a new voter n2; n1's replica was not released and still
 *    holds the pair {n0, n1} as committed. Told of n0's removal, n1 stands in and is elected,
 *    without the entries n0 and n2 committed (the harness's leader-completeness check fails).
 *    removed.c and docs/internals.md name this limit: the rule relies on the JetStream layer
 *    releasing a replica its group removed; the core itself cannot tell. The node guards the
 *    case while n1's server's meta state still drops it from the group's assignment (such a
 *    replica is never told of a removal, node/group.c jr__group_peer_removed); not once that
 *    state placed it on n1's server again (a restored meta state that took it back).
 *  - removal_hidden_by_the_refusal: the same without any cut: n0, leading {n0, n1}, removes
 *    n1 ({n0} commits at once, alone) just before n1's server is told of n0's removal; the
 *    APPEND carrying the removal is then refused with every other frame of n0, so n1 never
 *    learns it was removed and stands in. The refusal the rule starts is what hides the change
 *    from it; its node knows (the placement that dropped its server was applied before the
 *    removal of n0's), the core does not. The node guards it: a stream's or consumer's replica
 *    whose assignment no longer names its server is never told of a removal (node/group.c
 *    jr__group_peer_removed; test_servers.c
 *    a_replica_dropped_from_its_assignment_does_not_stand_in_for_its_removed_peer). The case
 *    stays here, the core alone still stands in, as a raw group's replica would.
 *  - lost_tail_of_the_stand_in: n1's disk lost entries it had acknowledged (JR_SYNC_INTERVAL
 *    and a power loss, or any lost synced tail); it restarts unvouched, n0's server is removed
 *    and declared gone (holding nothing), so n1's vouching allows a campaign and it stands in
 *    without entries the two committed. removed.c and docs/internals.md name this limit (the
 *    removed voter's copy went with its server); the harness's completeness check fails.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define MS H_MS
#define ET (100 * MS)
#define SEEDS 5

static jr__raft *R(harness *h, int i)
{
    return h->nodes[i].r;
}

START_TEST(replica_that_outlived_its_removal)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        harness h;
        h_init(&h, 3, seed);
        h_start(&h, 2, 2); /* n0, n1 voters; n2 not a member yet */
        h_elect(&h, 0);
        h_propose_n(&h, 0, 5, "a");
        h_run(&h, ET / 2);
        h_isolate(&h, 1);
        h_change(&h, 0, JR__REMOVE, 2);
        h_change(&h, 0, JR__ADD_OBSERVER, 3);
        h_run(&h, ET);
        h_change(&h, 0, JR__PROMOTE, 3);
        h_propose_n(&h, 0, 3, "x");
        h_run(&h, ET / 2);
        h_crash(&h, 0);
        h_heal(&h);
        h.cut[0][1] = 1;
        ck_assert_int_eq(jr__raft_peer_removed(R(&h, 1), 1), 0);
        /* what it should do: never stand in (it is no member of the group any more) */
        h_run(&h, 20 * ET);
        ck_assert_msg(jr__raft_role(R(&h, 1)) != JR_LEADER, "seed %llu: n1 leads",
                      (unsigned long long)seed);
        h_check_all(&h);
        h_free(&h);
    }
}
END_TEST

START_TEST(removal_hidden_by_the_refusal)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        harness h;
        h_init(&h, 2, seed);
        h_start(&h, 2, 2);
        h_elect(&h, 0);
        h_propose_n(&h, 0, 5, "a");
        h_run(&h, ET / 2);
        uint64_t idx;
        ck_assert_int_eq(jr__raft_change(R(&h, 0), h.now, JR__REMOVE, 2, &idx), 0);
        h.cut[0][1] = 1; /* n1's server is told of n0's removal before the APPEND arrives */
        ck_assert_int_eq(jr__raft_peer_removed(R(&h, 1), 1), 0);
        h_propose_n(&h, 0, 3, "x");
        h_run(&h, ET / 2);
        ck_assert_uint_ge(h_commit(&h, 0), idx);
        /* what it should do: never stand in (it is no member of the group any more) */
        h_run(&h, 20 * ET);
        ck_assert_msg(jr__raft_role(R(&h, 1)) != JR_LEADER, "seed %llu: n1 leads",
                      (unsigned long long)seed);
        h_check_all(&h);
        h_free(&h);
    }
}
END_TEST

START_TEST(lost_tail_of_the_stand_in)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        harness h;
        h_init(&h, 2, seed);
        h_start(&h, 2, 2);
        h_elect(&h, 0);
        h_propose_n(&h, 0, 10, "a");
        h_run(&h, ET / 2);
        ck_assert_uint_ge(jr__raft_commit_index(R(&h, 0)), 11);
        h_crash(&h, 0);
        ck_assert_int_eq(h_restart_lost(&h, 1, 5, 0), 1);
        ck_assert_int_eq(jr__raft_peer_removed(R(&h, 1), 1), 0);
        (void)jr__raft_vouch_gone(R(&h, 1), 1, h.now);
        /* what it should do: wait, as a damaged replica does */
        h_run(&h, 20 * ET);
        ck_assert_msg(jr__raft_role(R(&h, 1)) != JR_LEADER, "seed %llu: n1 leads",
                      (unsigned long long)seed);
        h_free(&h);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("raft-removed-open");
    TCase *b = tcase_create("replica_that_outlived_its_removal");
    tcase_set_timeout(b, 120);
    tcase_add_test(b, replica_that_outlived_its_removal);
    suite_add_tcase(s, b);
    TCase *d = tcase_create("removal_hidden_by_the_refusal");
    tcase_set_timeout(d, 120);
    tcase_add_test(d, removal_hidden_by_the_refusal);
    suite_add_tcase(s, d);
    TCase *e = tcase_create("lost_tail_of_the_stand_in");
    tcase_set_timeout(e, 120);
    tcase_add_test(e, lost_tail_of_the_stand_in);
    suite_add_tcase(s, e);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
