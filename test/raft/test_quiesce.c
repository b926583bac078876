/*
 * Quiescence of idle groups (issue 5) on the pure core, with the harness playing the node's
 * coalesced heartbeats and peer liveness (harness.h, h->quiesce): an idle group stops
 * heartbeating and its followers stop their timers; it wakes on a proposal or a message; an
 * isolated quiet leader steps down; the followers of a lost or abdicated leader elect a new one
 * within two election timeouts; a one-way cut does not depose a live leader; a returning
 * follower is brought up to date; the coalesced-heartbeat inputs follow the term rules.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MS H_MS
#define ET (100 * MS)
#define HB (20 * MS)

static jr__raft *R(harness *h, int i)
{
    return h->nodes[i].r;
}

/* Three voters, quiescence after one idle tick, node 0 elected and one entry committed. */
static void setup(harness *h, uint64_t seed)
{
    h_init(h, 3, seed);
    h->quiesce = 1;
    h->cfg.quiesce = 1;
    h_start(h, 3, 3);
    h_timeout(h, 0);
    ck_assert_int_eq(jr__raft_role(R(h, 0)), JR_LEADER);
    uint64_t idx;
    ck_assert_int_eq(h_propose(h, 0, "first", &idx), 0);
    h_run(h, 5 * MS);
    ck_assert_uint_eq(h_commit(h, 1), idx);
}

static int all_quiet(harness *h)
{
    for (int i = 0; i < h->n; i++)
        if (h->nodes[i].up && !jr__raft_quiet(R(h, i))) return 0;
    return 1;
}

/* Runs until every running node is quiet; fails after max. */
static void run_until_quiet(harness *h, uint64_t max)
{
    uint64_t end = h->now + max;
    while (!all_quiet(h)) {
        ck_assert_msg(h->now < end, "the group did not go quiet");
        h_run(h, MS);
    }
}

/* Runs until a node other than `not` leads a term above `term` and is ready; returns it. */
static int run_until_new_leader(harness *h, int not, uint64_t term, uint64_t max)
{
    uint64_t end = h->now + max;
    for (;;) {
        int l = h_leader(h);
        if (l >= 0 && l != not &&jr__raft_term(R(h, l)) > term && jr__raft_ready(R(h, l))) return l;
        if (h->now >= end) return -1;
        h_run(h, MS);
    }
}

START_TEST(idle_group_goes_quiet_sends_no_heartbeats_and_holds_no_elections)
{
    harness h;
    setup(&h, 1);
    run_until_quiet(&h, 10 * HB);
    ck_assert_uint_eq(jr__raft_deadline(R(&h, 1)), UINT64_MAX); /* no election timer */
    ck_assert_uint_eq(jr__raft_deadline(R(&h, 2)), UINT64_MAX);
    /* nor a heartbeat timer: its check-quorum runs in the ticks of the node's heartbeats */
    ck_assert_uint_eq(jr__raft_deadline(R(&h, 0)), UINT64_MAX);
    uint64_t hbs = h.raft_heartbeats, term = jr__raft_term(R(&h, 0)), el = h.elections;
    uint64_t items = h.nhb_items;
    h_run(&h, 50 * ET);
    ck_assert_uint_eq(h.raft_heartbeats, hbs);
    ck_assert_uint_eq(h.elections, el);
    ck_assert_uint_eq(jr__raft_term(R(&h, 1)), term);
    ck_assert_int_eq(jr__raft_role(R(&h, 0)), JR_LEADER);
    ck_assert(all_quiet(&h));
    /* the node told each follower once (when it went quiet; repeated only until the answer
     * came back), not once per interval */
    ck_assert_uint_le(h.nhb_items - items, 2);
    h_free(&h);
}
END_TEST

START_TEST(quiet_group_wakes_on_proposal_and_quiesces_again)
{
    harness h;
    setup(&h, 2);
    run_until_quiet(&h, 10 * HB);
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, 0, "wake", &idx), 0);
    ck_assert(!jr__raft_quiet(R(&h, 0)));
    h_run(&h, 5 * MS);
    for (int i = 0; i < 3; i++) ck_assert_uint_eq(h_commit(&h, i), idx);
    ck_assert(!jr__raft_quiet(R(&h, 1))); /* the APPEND woke it */
    run_until_quiet(&h, 10 * HB);
    ck_assert_uint_eq(jr__raft_term(R(&h, 1)), jr__raft_term(R(&h, 0)));
    h_free(&h);
}
END_TEST

/* A wake renews every member's last_contact (check-quorum's fresh window) on its node's word:
 * the progress says so (by_node) and keeps heard, the last message received, until the member
 * answers; a member taken for lost gets neither. */
START_TEST(a_woken_leader_counts_members_on_their_node_s_word_until_they_answer)
{
    harness h;
    setup(&h, 3);
    run_until_quiet(&h, 10 * HB);
    h_run(&h, 5 * ET);                         /* quiet for a while: heard ages */
    jr__raft_peer_lost(R(&h, 0), h.now, 3, 0); /* node 2's node is taken for lost */
    ck_assert(jr__raft_quiet(R(&h, 0)));
    jr__progress before[3], p;
    for (uint32_t i = 0; i < 3; i++)
        ck_assert_int_eq(jr__raft_progress(R(&h, 0), i, &before[i]), 0);
    h_crash(&h, 1); /* so that node 1 does not answer the wake's heartbeat */
    jr__raft_wake(R(&h, 0), h.now);
    ck_assert(!jr__raft_quiet(R(&h, 0)));
    uint64_t woke = h.now;
    ck_assert_int_eq(jr__raft_progress(R(&h, 0), 1, &p), 0);
    ck_assert_uint_eq(p.last_contact, woke);
    ck_assert_int_eq(p.by_node, 1);
    ck_assert_uint_eq(p.heard, before[1].heard);
    ck_assert_uint_lt(p.heard, woke - 4 * ET);
    ck_assert_int_eq(jr__raft_progress(R(&h, 0), 2, &p), 0); /* lost: no renewal */
    ck_assert_int_eq(p.by_node, 0);
    ck_assert_uint_eq(p.last_contact, before[2].last_contact);
    /* node 2 answers the wake's heartbeat: heard, no longer on its node's word */
    h_run(&h, 5 * MS);
    ck_assert_int_eq(jr__raft_progress(R(&h, 0), 2, &p), 0);
    ck_assert_int_eq(p.by_node, 0);
    ck_assert_uint_ge(p.heard, woke);
    ck_assert_int_eq(jr__raft_progress(R(&h, 0), 1, &p), 0); /* down: still its node's word */
    ck_assert_int_eq(p.by_node, 1);
    ck_assert_uint_eq(p.heard, before[1].heard);
    h_free(&h);
}
END_TEST

START_TEST(isolated_quiet_leader_steps_down_and_the_others_elect_within_two_timeouts)
{
    harness h;
    setup(&h, 3);
    run_until_quiet(&h, 10 * HB);
    uint64_t term = jr__raft_term(R(&h, 0)), t0 = h.now;
    h_isolate(&h, 0);
    int l = run_until_new_leader(&h, 0, term, 2 * ET);
    ck_assert_msg(l == 1 || l == 2, "no new leader within two election timeouts");
    ck_assert_uint_eq(jr__raft_term(R(&h, l)), term + 1); /* staggered: no split vote */
    /* check-quorum, fed only by real contact, deposes the isolated leader */
    while (jr__raft_role(R(&h, 0)) == JR_LEADER) {
        ck_assert_uint_lt(h.now, t0 + 2 * ET + HB);
        h_run(&h, MS);
    }
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, l, "after", &idx), 0);
    h_run(&h, 5 * MS);
    ck_assert_uint_eq(h_commit(&h, 3 - l), idx);
    h_heal(&h);
    h_run(&h, 10 * ET);
    ck_assert_uint_eq(h_commit(&h, 0), idx);
    ck_assert_int_eq(h_leader(&h), l);
    ck_assert(all_quiet(&h));
    h_free(&h);
}
END_TEST

START_TEST(crashed_quiet_leader_is_replaced_within_two_timeouts)
{
    for (uint64_t seed = 10; seed < 40; seed++) {
        harness h;
        setup(&h, seed);
        run_until_quiet(&h, 10 * HB);
        h_run(&h, jr__rand_below(&h.rng, HB)); /* crash at any phase of the heartbeats */
        uint64_t term = jr__raft_term(R(&h, 0));
        h_crash(&h, 0);
        int l = run_until_new_leader(&h, 0, term, 2 * ET);
        ck_assert_msg(l >= 0, "seed %llu: no new leader within two election timeouts",
                      (unsigned long long)seed);
        ck_assert_uint_eq(jr__raft_term(R(&h, l)), term + 1);
        h_free(&h);
    }
}
END_TEST

/* The leader's node stays reachable, but the leader hears nobody: check-quorum makes it give
 * up, its heartbeats stop listing the group, and the followers elect another leader. */
START_TEST(followers_of_a_leader_that_gave_up_elect_while_its_node_lives)
{
    harness h;
    setup(&h, 4);
    run_until_quiet(&h, 10 * HB);
    uint64_t term = jr__raft_term(R(&h, 0));
    h.cut[1][0] = h.cut[2][0] = 1;
    int l = run_until_new_leader(&h, 0, term, 5 * ET);
    ck_assert_msg(l == 1 || l == 2, "no new leader");
    h_heal(&h);
    h_run(&h, 10 * ET);
    ck_assert_int_eq(h_leader(&h), l);
    ck_assert_int_eq(jr__raft_role(R(&h, 0)), JR_FOLLOWER);
    h_free(&h);
}
END_TEST

/* Node 1 stops hearing node 0 (one-way cut); node 2 still hears it: 1 campaigns, but the lease
 * of node 2 (kept alive by node 0's heartbeats) and the leader itself refuse, so no term moves. */
START_TEST(one_way_cut_does_not_depose_a_live_quiet_leader)
{
    harness h;
    setup(&h, 5);
    run_until_quiet(&h, 10 * HB);
    uint64_t term = jr__raft_term(R(&h, 0)), lost = h.peers_lost;
    h.cut[0][1] = 1;
    h_run(&h, 20 * ET);
    ck_assert_uint_gt(h.peers_lost, lost); /* node 1 lost node 0 */
    ck_assert_int_eq(h_leader(&h), 0);
    for (int i = 0; i < 3; i++) ck_assert_uint_eq(jr__raft_term(R(&h, i)), term);
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, 0, "still", &idx), 0);
    h_run(&h, 5 * MS);
    ck_assert_uint_eq(h_commit(&h, 2), idx);
    h_heal(&h);
    h_run(&h, 10 * ET);
    ck_assert_uint_eq(h_commit(&h, 1), idx);
    ck_assert(all_quiet(&h));
    h_free(&h);
}
END_TEST

/* A follower that was down while the (quiet again) group moved on answers the coalesced
 * heartbeat with its last index: the leader wakes and brings it up to date; no election. */
START_TEST(returning_follower_is_caught_up_by_the_quiet_leader)
{
    harness h;
    setup(&h, 6);
    run_until_quiet(&h, 10 * HB);
    h_crash(&h, 2);
    uint64_t idx = 0;
    for (int k = 0; k < 5; k++) {
        char s[16];
        snprintf(s, sizeof s, "e%d", k);
        ck_assert_int_eq(h_propose(&h, 0, s, &idx), 0);
    }
    h_run(&h, 3 * ET); /* node 2 is taken for down: the group goes quiet without it */
    ck_assert(jr__raft_quiet(R(&h, 0)));
    uint64_t term = jr__raft_term(R(&h, 0));
    h_restart(&h, 2);
    h_run(&h, 5 * ET);
    /* and the blank entry the leader appended on its VOUCH (vouch.c) */
    ck_assert_uint_eq(h_commit(&h, 2), idx + 1);
    ck_assert_uint_eq(jr__raft_term(R(&h, 2)), term);
    ck_assert_int_eq(h_leader(&h), 0);
    run_until_quiet(&h, 10 * HB);
    h_free(&h);
}
END_TEST

/* The leader's node is lost: the new leader counts that member lost from its election on (the
 * node says so), and with nothing of its term but its no-op it goes quiet at its first idle
 * tick, not an election timeout later (a survivor taking over thousands of groups would
 * otherwise heartbeat each of them that long). A leader with traffic of its term still waits
 * out cfg.quiesce + 1 idle ticks; the lost member, back, is brought up to date. */
START_TEST(a_new_leader_goes_quiet_at_once_without_waiting_for_a_lost_member)
{
    harness h;
    h_init(&h, 3, 8);
    h.quiesce = 1;
    h.cfg.quiesce = 3;
    h_start(&h, 3, 3);
    h_timeout(&h, 0);
    ck_assert_int_eq(jr__raft_role(R(&h, 0)), JR_LEADER);
    run_until_quiet(&h, 20 * HB);
    uint64_t term = jr__raft_term(R(&h, 0));
    h_crash(&h, 0);
    int l = run_until_new_leader(&h, 0, term, 2 * ET);
    ck_assert_int_ge(l, 1);
    uint64_t ready = h.now, hbs = h.raft_heartbeats;
    run_until_quiet(&h, 3 * HB);
    /* one heartbeat tick carries the commit index, the next finds the group idle */
    ck_assert_uint_le(h.raft_heartbeats - hbs, 2 * 2);
    ck_assert_uint_le(h.now - ready, 3 * HB);

    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, l, "traffic", &idx), 0);
    h_run(&h, 5 * MS);
    ck_assert_uint_eq(h_commit(&h, 3 - l), idx);
    h_run(&h, 2 * HB); /* committed and told: idle, but not yet for cfg.quiesce + 1 ticks */
    ck_assert(!jr__raft_quiet(R(&h, l)));
    run_until_quiet(&h, 3 * HB);

    h_restart(&h, 0);
    h_run(&h, 5 * ET);
    /* and the blank entry the leader appended on its VOUCH (vouch.c) */
    ck_assert_uint_eq(h_commit(&h, 0), idx + 1);
    ck_assert_int_eq(h_leader(&h), l);
    run_until_quiet(&h, 10 * HB);
    h_free(&h);
}
END_TEST

START_TEST(coalesced_heartbeat_inputs_follow_the_term_rules)
{
    harness h;
    setup(&h, 7);
    run_until_quiet(&h, 10 * HB);
    uint64_t term = jr__raft_term(R(&h, 1)), commit = h_commit(&h, 1);
    /* a stale term changes nothing (the answer carries our term) */
    ck_assert_int_eq(jr__raft_hb_recv(R(&h, 1), h.now, 3, term - 1, commit + 5), 0);
    ck_assert_uint_eq(jr__raft_term(R(&h, 1)), term);
    ck_assert_uint_eq(jr__raft_leader(R(&h, 1)), 1);
    ck_assert(jr__raft_quiet(R(&h, 1)));
    /* a commit beyond the log is clamped, and without the entries the follower is not quiet */
    ck_assert_int_eq(jr__raft_hb_recv(R(&h, 1), h.now, 1, term, commit + 5), 0);
    ck_assert_uint_eq(h_commit(&h, 1), commit);
    ck_assert(!jr__raft_quiet(R(&h, 1)));
    h_flush(&h.nodes[1]);
    ck_assert_int_eq(jr__raft_hb_recv(R(&h, 1), h.now, 1, term, commit), 1);
    ck_assert(jr__raft_quiet(R(&h, 1)));
    h_flush(&h.nodes[1]);
    /* malformed: sender 0, self, term 0 */
    ck_assert_int_eq(jr__raft_hb_recv(R(&h, 1), h.now, 0, term, commit), 0);
    ck_assert_int_eq(jr__raft_hb_recv(R(&h, 1), h.now, 2, term, commit), 0);
    ck_assert_int_eq(jr__raft_hb_recv(R(&h, 1), h.now, 1, 0, commit), 0);
    /* an item only for other members of a quiet leader's group */
    uint64_t t, c;
    ck_assert_int_eq(jr__raft_hb_item(R(&h, 0), 2, &t, &c), 1);
    ck_assert_uint_eq(t, term);
    ck_assert_uint_eq(c, commit);
    ck_assert_int_eq(jr__raft_hb_item(R(&h, 0), 1, &t, &c), 0);
    ck_assert_int_eq(jr__raft_hb_item(R(&h, 0), 9, &t, &c), 0);
    ck_assert_int_eq(jr__raft_hb_item(R(&h, 1), 3, &t, &c), 0);
    /* an answer of a newer term deposes the leader */
    jr__raft_hb_resp(R(&h, 0), h.now, 3, term + 3, 0);
    h_flush(&h.nodes[0]);
    ck_assert_int_eq(jr__raft_role(R(&h, 0)), JR_FOLLOWER);
    ck_assert_uint_eq(jr__raft_term(R(&h, 0)), term + 3);
    /* peer_lost about someone else than the leader does nothing */
    int l = run_until_new_leader(&h, -1, term, 10 * ET);
    ck_assert_int_ge(l, 0);
    int f = (l + 1) % 3;
    uint64_t d = jr__raft_deadline(R(&h, f));
    jr__raft_peer_lost(R(&h, f), h.now, (jr__id)((l + 2) % 3) + 1, 0);
    ck_assert_uint_eq(jr__raft_deadline(R(&h, f)), d);
    ck_assert_uint_eq(jr__raft_leader(R(&h, f)), (jr__id)l + 1);
    h_free(&h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("raft-quiesce");
    TCase *tc = tcase_create("quiesce");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, idle_group_goes_quiet_sends_no_heartbeats_and_holds_no_elections);
    tcase_add_test(tc, quiet_group_wakes_on_proposal_and_quiesces_again);
    tcase_add_test(tc, isolated_quiet_leader_steps_down_and_the_others_elect_within_two_timeouts);
    tcase_add_test(tc, crashed_quiet_leader_is_replaced_within_two_timeouts);
    tcase_add_test(tc, followers_of_a_leader_that_gave_up_elect_while_its_node_lives);
    tcase_add_test(tc, one_way_cut_does_not_depose_a_live_quiet_leader);
    tcase_add_test(tc, returning_follower_is_caught_up_by_the_quiet_leader);
    tcase_add_test(tc, coalesced_heartbeat_inputs_follow_the_term_rules);
    tcase_add_test(tc, a_new_leader_goes_quiet_at_once_without_waiting_for_a_lost_member);
    tcase_add_test(tc, a_woken_leader_counts_members_on_their_node_s_word_until_they_answer);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
