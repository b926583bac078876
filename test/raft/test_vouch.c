/*
 * Protocol-aware recovery in the Raft core (lib/raft/vouch.c), on the in-test harness: what a
 * replica restarted from a disk that may have lost records may do, how it is vouched for
 * (a: a leader's word; b: every other voter's word), and the leader's side (lost storage told
 * apart from a term conflict, unvouched members refused as transfer targets). Each scenario
 * runs over many seeds; RAFT_NO_VOUCH=1 runs them as plain Raft (restarted replicas trusted),
 * which is how the first one shows what the rules prevent: it then fails on leader
 * completeness.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MS H_MS
#define ET (100 * MS)
#define SEEDS 40

static jr__raft *R(harness *h, int i)
{
    return h->nodes[i].r;
}

/* Counts what a node sends toward an election: VOTE requests and granted VOTE_RESPs. */
static struct {
    jr__id watch;
    uint64_t votes, grants;
} elect_count;

static int count_election_msgs(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    (void)arg;
    if (m->from == elect_count.watch && m->type == JR__MSG_VOTE) elect_count.votes++;
    if (m->from == elect_count.watch && m->type == JR__MSG_VOTE_RESP && m->u.vote_resp.granted)
        elect_count.grants++;
    return 1;
}

/* The three steps, on the core: ORDERS-like R3 on n0 (leader), n1, n2. n2 is cut off
 * while n0 + n1 commit entries; n1 restarts with its last entries gone (synced ones included)
 * and older hard state; then n2 is back and n0 is away. n1 and n2 are a majority, but n1 cannot
 * vouch for what it acknowledged: it neither votes for n2 (which lacks the committed entries)
 * nor campaigns, so nobody leads until n0 returns, and then nothing committed is lost (the
 * harness checks leader completeness on every election). */
START_TEST(a_replica_that_lost_acknowledged_entries_elects_nobody_without_them)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        harness h;
        h_init(&h, 3, seed);
        h_start(&h, 3, 3);
        h_elect(&h, 0);
        h_isolate(&h, 2);
        uint64_t last = h_propose_n(&h, 0, 20, "acked");
        h_run(&h, ET / 2);
        ck_assert_uint_ge(h_commit(&h, 0), last);
        ck_assert(h_restart_lost(&h, 1, 12, 2));
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 1)), !h.no_vouch);
        h_heal(&h);
        h_isolate(&h, 0);
        elect_count.watch = 2; /* node 1's id */
        elect_count.votes = elect_count.grants = 0;
        h.filter = count_election_msgs;
        h_run(&h, 20 * ET);
        ck_assert_msg(elect_count.votes == 0 && elect_count.grants == 0,
                      "seed %llu: unvouched n1 sent %llu vote requests, %llu grants",
                      (unsigned long long)seed, (unsigned long long)elect_count.votes,
                      (unsigned long long)elect_count.grants);
        ck_assert_msg(jr__raft_role(R(&h, 2)) != JR_LEADER,
                      "seed %llu: n2 leads without the "
                      "acknowledged entries",
                      (unsigned long long)seed);
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 1)), !h.no_vouch);
        h.filter = NULL;
        h_heal(&h);
        int l = h_wait_leader(&h, 20 * ET);
        ck_assert_int_ge(l, 0);
        h_run(&h, 5 * ET);
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 1)), 0);
        ck_assert_uint_ge(h_commit(&h, 1), last);
        h_check_all(&h);
        h_free(&h);
    }
}
END_TEST

/* Two of five: n3 and n4 are cut off while n0 (leader), n1 and n2 commit entries; n1 and n2
 * then restart with their last entries gone (synced ones included) and older hard state, the
 * two faulty replicas of five at once. With n0 away, n1..n4 are four of five, but neither
 * damaged one votes for n3 or n4 (which lack the committed entries) nor campaigns, so nobody
 * leads; once n0 is back a leader holding every committed entry is elected and repairs both
 * (the harness checks leader completeness on every election). */
START_TEST(two_replicas_of_five_that_lost_acknowledged_entries_elect_nobody_without_them)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        harness h;
        h_init(&h, 5, seed);
        h_start(&h, 5, 5);
        h_elect(&h, 0);
        h_isolate(&h, 3);
        h_isolate(&h, 4);
        uint64_t last = h_propose_n(&h, 0, 20, "acked");
        h_run(&h, ET / 2);
        ck_assert_uint_ge(h_commit(&h, 0), last);
        ck_assert(h_restart_lost(&h, 1, 12, 2));
        ck_assert(h_restart_lost(&h, 2, 12, 2));
        h_heal(&h);
        h_isolate(&h, 0);
        h_run(&h, 20 * ET);
        for (int i = 1; i < 5; i++)
            ck_assert_msg(jr__raft_role(R(&h, i)) != JR_LEADER,
                          "seed %llu: n%d leads without the acknowledged entries",
                          (unsigned long long)seed, i);
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 1)), !h.no_vouch);
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 2)), !h.no_vouch);
        h_heal(&h);
        int l = h_wait_leader(&h, 20 * ET);
        ck_assert_int_ge(l, 0);
        h_run(&h, 5 * ET);
        for (int i = 1; i < 3; i++) {
            ck_assert_int_eq(jr__raft_unvouched(R(&h, i)), 0);
            ck_assert_uint_ge(h_commit(&h, i), last);
        }
        h_check_all(&h);
        h_free(&h);
    }
}
END_TEST

/* (a) A leader's word: R5 with n4 down, n3 restarts with a lost tail. The three others answer
 * (its term floor), the leader's answer names its last entry, and once n3's log holds it n3
 * is whole, although n4 never answered. It then votes: with n0 gone too, n1, n2 and n3 elect a
 * leader (three of five: n3's vote is needed). */
START_TEST(a_leaders_word_vouches_while_a_voter_is_down)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        harness h;
        h_init(&h, 5, seed);
        h_start(&h, 5, 5);
        h_elect(&h, 0);
        uint64_t last = h_propose_n(&h, 0, 10, "a");
        h_run(&h, ET / 2);
        h_crash(&h, 4);
        ck_assert(h_restart_lost(&h, 3, 6, 1));
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 3)), 1);
        h_run(&h, 3 * ET);
        ck_assert_msg(jr__raft_unvouched(R(&h, 3)) == 0, "seed %llu: n3 still unvouched",
                      (unsigned long long)seed);
        ck_assert_uint_ge(jr__raft_last_index(R(&h, 3)), last);
        h_crash(&h, 0);
        int l = h_wait_leader(&h, 30 * ET);
        ck_assert_msg(l >= 1 && l <= 3, "seed %llu: no leader among n1..n3",
                      (unsigned long long)seed);
        h_propose_n(&h, l, 3, "after");
        h_run(&h, 2 * ET);
        h_check_all(&h);
        h_free(&h);
    }
}
END_TEST

/* (b) Every voter's word: the whole cluster restarts after a power loss (every replica
 * unvouched, one of them with a lost tail). Each learns every other voter's last entry, the most
 * up-to-date one campaigns, and a leader holding every committed entry is elected within a few
 * election timeouts. */
START_TEST(a_whole_cluster_restart_elects_the_most_up_to_date_server)
{
    uint64_t worst = 0;
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        harness h;
        h_init(&h, 3 + (int)(seed % 2) * 2, seed);
        h_start(&h, h.n, h.n);
        h_elect(&h, 0);
        uint64_t last = h_propose_n(&h, 0, 15, "b");
        h_run(&h, ET / 2);
        for (int i = 0; i < h.n; i++) h_crash(&h, i);
        for (int i = 0; i < h.n; i++) {
            if (i == 1)
                ck_assert(h_restart_lost(&h, i, 5, 1));
            else
                h_restart(&h, i);
            ck_assert_int_eq(jr__raft_unvouched(R(&h, i)), 1);
        }
        uint64_t t0 = h.now;
        int l = h_wait_leader(&h, 30 * ET);
        ck_assert_msg(l >= 0, "seed %llu: no leader after a whole-cluster restart",
                      (unsigned long long)seed);
        if (h.now - t0 > worst) worst = h.now - t0;
        ck_assert_msg(h.now - t0 <= 6 * ET, "seed %llu: a leader only after %llu ms",
                      (unsigned long long)seed, (unsigned long long)((h.now - t0) / MS));
        ck_assert_uint_ge(jr__raft_last_index(R(&h, l)), last);
        h_propose_n(&h, l, 2, "after");
        h_run(&h, 3 * ET);
        for (int i = 0; i < h.n; i++)
            ck_assert_msg(jr__raft_unvouched(R(&h, i)) == 0, "seed %llu: n%d still unvouched",
                          (unsigned long long)seed, i);
        h_check_all(&h);
        h_free(&h);
    }
    fprintf(stderr, "whole-cluster restart: a leader within %llu ms (election timeout %llu ms)\n",
            (unsigned long long)(worst / MS), (unsigned long long)(ET / MS));
}
END_TEST

/* Changes node l (leader) makes to the configuration, each run until committed everywhere. */
static void change(harness *h, int l, int op, jr__id peer)
{
    uint64_t idx = 0;
    ck_assert_int_eq(jr__raft_change(R(h, l), h->now, op, peer, &idx), 0);
    h_flush(&h->nodes[l]);
    h_run(h, ET);
    ck_assert_uint_ge(h_commit(h, l), idx);
}

/* A replica rolled back to a copy from before the group changed asks the members of the
 * configuration that copy holds, and must also hear from those of the newer configuration its
 * answers name. Group {1,2,3}; server 3 (n2) keeps a copy of its files; the group becomes
 * {2,3,5} (5 added and promoted, leadership handed to 5, 1 removed); with 2 cut off, 5 and 3
 * commit entries only they hold. Then 3 restarts from its copy ({1,2,3}) and 5 goes down:
 * 1 and 2 answer, neither holds the entries, and 2's answer names {2,3,5}, committed. 3 waits
 * for 5 instead of voting for 2 (which would lead without the entries: the harness stops on
 * leader completeness); once 5 is back a leader holding them is elected. */
START_TEST(a_replica_rolled_back_to_an_older_configuration_hears_from_the_newer_one)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        harness h;
        h_init(&h, 5, seed);
        h_start(&h, 3, 3);
        h_elect(&h, 0);
        h_propose_n(&h, 0, 5, "old");
        h_run(&h, ET / 2);
        h_save(&h, 2);
        change(&h, 0, JR__ADD_OBSERVER, 5);
        change(&h, 0, JR__PROMOTE, 5);
        ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 5), 0);
        h_flush(&h.nodes[0]);
        h_run(&h, ET);
        ck_assert_int_eq(jr__raft_role(R(&h, 4)), JR_LEADER);
        h_propose_n(&h, 4, 1, "term");
        h_run(&h, ET / 2);
        change(&h, 4, JR__REMOVE, 1);
        h_run(&h, ET / 2);
        ck_assert_uint_eq(jr__conf_voters(jr__raft_conf(R(&h, 1))), 3);
        ck_assert_ptr_null(jr__conf_find(jr__raft_conf(R(&h, 1)), 1));
        h_isolate(&h, 1);
        uint64_t last = h_propose_n(&h, 4, 6, "new");
        h_run(&h, ET / 2);
        ck_assert_uint_ge(h_commit(&h, 4), last);
        ck_assert_uint_lt(jr__raft_last_index(R(&h, 1)), last);
        ck_assert(h_rollback(&h, 2));
        ck_assert_ptr_nonnull(jr__conf_find(jr__raft_conf(R(&h, 2)), 1)); /* {1,2,3} */
        h_crash(&h, 4);
        h_heal(&h);
        h_run(&h, 20 * ET);
        ck_assert_msg(h_leader(&h) < 0, "seed %llu: n%d leads without 5's entries",
                      (unsigned long long)seed, h_leader(&h));
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 2)), 1);
        h_restart(&h, 4);
        int l = h_wait_leader(&h, 30 * ET);
        ck_assert_msg(l >= 0, "seed %llu: no leader once 5 is back", (unsigned long long)seed);
        ck_assert_uint_ge(jr__raft_last_index(R(&h, l)), last);
        h_propose_n(&h, l, 2, "after");
        h_run(&h, 3 * ET);
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 2)), 0);
        ck_assert_uint_ge(h_commit(&h, 2), last);
        h_check_all(&h);
        h_free(&h);
    }
}
END_TEST

/* Acknowledgements from n1 to n0 held back (to re-deliver late). */
static struct {
    jr__msg held[64];
    int n, hold;
} late;

static int hold_acks(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    (void)arg;
    if (late.hold && m->from == 2 && m->to == 1 && m->type == JR__MSG_APPEND_RESP &&
        m->u.append_resp.success && late.n < 64) {
        late.held[late.n++] = *m;
        return 0;
    }
    return 1;
}

/* The late stale acknowledgement: n1 acknowledges entries n0 has not yet counted, crashes,
 * loses them, restarts; then its old acknowledgements arrive and n0 commits with them. n1 must
 * not be vouched for by the commit index (the entries are above it when it asks): it is whole
 * only once its log reaches n0's last entry of the time of its VOUCH, which holds them. With
 * n0 then away, n1 and n2 elect a leader that holds the entries. */
START_TEST(a_late_acknowledgement_from_before_the_restart_is_covered)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        harness h;
        h_init(&h, 3, seed);
        h_start(&h, 3, 3);
        h_elect(&h, 0);
        h_propose_n(&h, 0, 3, "base");
        h_run(&h, ET / 2);
        h.cut[0][2] = h.cut[2][0] = 1; /* n2 cut off: commits need n1 */
        late.n = 0;
        late.hold = 1;
        h.filter = hold_acks;
        uint64_t last = h_propose_n(&h, 0, 6, "late");
        h_run(&h, 5 * MS);
        ck_assert_int_gt(late.n, 0);
        ck_assert_uint_lt(h_commit(&h, 0), last);
        late.hold = 0;
        ck_assert(h_restart_lost(&h, 1, 6, 0));
        for (int k = 0; k < late.n; k++) h_inject(&h, 0, &late.held[k]);
        ck_assert_uint_ge(h_commit(&h, 0), last); /* committed by the late acknowledgements */
        h.filter = NULL;
        h_run(&h, 3 * ET);
        /* n0's word covered its last entry of then, which holds the late-committed ones */
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 1)), 0);
        ck_assert_uint_ge(jr__raft_last_index(R(&h, 1)), last);
        h_heal(&h);
        h_isolate(&h, 0);
        h_run(&h, 5 * ET); /* n0 steps down (check-quorum); n1, n2 elect */
        int l = h_wait_leader(&h, 30 * ET);
        if (l != 1 && l != 2)
            for (int i = 0; i < 3; i++)
                fprintf(stderr, "n%d role %d term %llu last %llu/%llu commit %llu unvouched %d\n",
                        i, jr__raft_role(R(&h, i)), (unsigned long long)jr__raft_term(R(&h, i)),
                        (unsigned long long)jr__raft_last_index(R(&h, i)),
                        (unsigned long long)jr__raft_last_term(R(&h, i)),
                        (unsigned long long)h_commit(&h, i), jr__raft_unvouched(R(&h, i)));
        ck_assert_msg(l == 1 || l == 2, "seed %llu: no leader among n1, n2",
                      (unsigned long long)seed);
        h_check_all(&h);
        h_free(&h);
    }
}
END_TEST

/* The leader's marks on a member: not confirmed since an answer below its match, restarted
 * (its VOUCH seen), holding less than it had acknowledged. */
#define ck_assert_marks(p, unconfirmed_, unvouched_, damaged_)                                     \
    do {                                                                                           \
        ck_assert_int_eq((p).unconfirmed, (unconfirmed_));                                         \
        ck_assert_int_eq((p).unvouched, (unvouched_));                                             \
        ck_assert_int_eq((p).damaged, (damaged_));                                                 \
    } while (0)

static jr__progress progress_of(harness *h, int l, jr__id id)
{
    const jr__conf *c = jr__raft_conf(R(h, l));
    jr__progress p;
    memset(&p, 0, sizeof p);
    for (uint32_t i = 0; i < c->n; i++)
        if (c->m[i].id == id) ck_assert_int_eq(jr__raft_progress(R(h, l), i, &p), 0);
    return p;
}

/* A rejection for a term conflict is backtracking, never lost storage: its hint (the first
 * index of the follower's conflicting term) may lie at or below the acknowledged match. A
 * rejection saying the follower's log ends below its match may be lost storage or a late
 * answer: the match drops and the member is neither current nor a transfer target until it
 * acknowledges the leader's log again (unconfirmed), but it is not reported restarted or
 * damaged; its VOUCH would say so. */
START_TEST(a_conflict_rejection_keeps_the_acknowledged_match)
{
    harness h;
    h_init(&h, 3, 7);
    h_start(&h, 3, 3);
    h_elect(&h, 0);
    uint64_t last = h_propose_n(&h, 0, 8, "c");
    h_run(&h, ET / 2);
    jr__progress p = progress_of(&h, 0, 2);
    ck_assert_uint_eq(p.match, last);
    uint64_t t = jr__raft_term(R(&h, 0));
    jr__msg m = {.type = JR__MSG_APPEND_RESP, .group = h.cfg.group, .from = 2, .to = 1, .term = t};
    m.u.append_resp.index = last + 1;
    m.u.append_resp.hint_index = 2; /* its term at last + 1 begins at 2: below the match */
    m.u.append_resp.hint_term = t;
    ck_assert_int_eq(h_inject(&h, 0, &m), 0);
    p = progress_of(&h, 0, 2);
    ck_assert_uint_eq(p.match, last);
    ck_assert_int_eq(p.damaged, 0);
    ck_assert_int_eq(p.unvouched, 0);
    /* its log ends at 3, below the match of `last`: lost storage, or a late answer */
    h.filter = NULL;
    h.cut[0][1] = 1; /* keep it from repairing at once */
    m.u.append_resp.index = last;
    m.u.append_resp.hint_index = 4;
    m.u.append_resp.hint_term = 0;
    ck_assert_int_eq(h_inject(&h, 0, &m), 0);
    p = progress_of(&h, 0, 2);
    ck_assert_uint_lt(p.match, last);
    ck_assert_marks(p, 1, 0, 0);
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 2), JR_ENOTVOTER);
    h_heal(&h);
    h_run(&h, 2 * ET);
    p = progress_of(&h, 0, 2);
    ck_assert_uint_ge(p.match, last);
    ck_assert_marks(p, 0, 0, 0);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* A heartbeat answer sent before the acknowledgement that raised the match, delivered after it
 * (the network reorders): it shows a log below the match. The leader stops counting the member
 * current and probes it, but does not report it restarted or damaged, and its next
 * acknowledgement confirms it again. */
START_TEST(a_late_heartbeat_answer_marks_no_member_damaged)
{
    harness h;
    h_init(&h, 3, 11);
    h_start(&h, 3, 3);
    h_elect(&h, 0);
    uint64_t before = h_propose_n(&h, 0, 4, "a");
    h_run(&h, ET / 2);
    uint64_t last = h_propose_n(&h, 0, 6, "b");
    h_run(&h, ET / 2);
    jr__progress p = progress_of(&h, 0, 2);
    ck_assert_uint_eq(p.match, last);
    jr__msg m = {.type = JR__MSG_HEARTBEAT_RESP, .group = h.cfg.group, .from = 2, .to = 1};
    m.term = jr__raft_term(R(&h, 0));
    m.u.heartbeat_resp.match_hint = before; /* its log when it answered, before "b" came */
    ck_assert_int_eq(h_inject(&h, 0, &m), 0);
    p = progress_of(&h, 0, 2);
    ck_assert_uint_lt(p.match, last); /* counts toward no commit until it acknowledges again */
    ck_assert_marks(p, 1, 0, 0);
    h_run(&h, ET);
    p = progress_of(&h, 0, 2);
    ck_assert_uint_eq(p.match, last);
    ck_assert_marks(p, 0, 0, 0);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* Lost storage whose first sign is an answer below the match (its VOUCH to the leader was
 * lost, say): the answer lowers the match, and the VOUCH that follows still shows the member
 * holds less than it had acknowledged — restarted and damaged — until it acknowledges the
 * leader's log of then. */
START_TEST(a_vouch_after_a_low_answer_still_finds_the_loss)
{
    harness h;
    h_init(&h, 3, 13);
    h_start(&h, 3, 3);
    h_elect(&h, 0);
    uint64_t last = h_propose_n(&h, 0, 8, "c");
    h_run(&h, ET / 2);
    ck_assert_uint_eq(progress_of(&h, 0, 2).match, last);
    h.cut[0][1] = 1; /* the leader's answers and appends do not reach n2 meanwhile */
    uint64_t t = jr__raft_term(R(&h, 0));
    jr__msg hb = {.type = JR__MSG_HEARTBEAT_RESP, .group = h.cfg.group, .from = 2, .to = 1};
    hb.term = t;
    hb.u.heartbeat_resp.match_hint = 3;
    ck_assert_int_eq(h_inject(&h, 0, &hb), 0);
    jr__progress p = progress_of(&h, 0, 2);
    ck_assert_int_eq(p.unconfirmed, 1);
    ck_assert_int_eq(p.damaged, 0);
    jr__msg v = {.type = JR__MSG_VOUCH, .group = h.cfg.group, .from = 2, .to = 1, .term = t};
    v.u.vouch.last_index = 3;
    v.u.vouch.last_term = t;
    ck_assert_int_eq(h_inject(&h, 0, &v), 0);
    p = progress_of(&h, 0, 2);
    ck_assert_marks(p, 0, 1, 1);
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 2), JR_ENOTVOTER);
    h_heal(&h);
    h_run(&h, 2 * ET);
    p = progress_of(&h, 0, 2);
    ck_assert_int_eq(p.unvouched, 0);
    ck_assert_int_eq(p.damaged, 0);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

static int drop_appends_to_2(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    (void)arg;
    return !(m->to == 2 && (m->type == JR__MSG_APPEND || m->type == JR__MSG_SNAP));
}

/* A member that restarted (its VOUCH reached the leader) is unvouched at the leader until it
 * acknowledges the leader's log of then: not a transfer target (JR_ENOTVOTER, not a timeout),
 * and shown as unvouched in its progress; it is damaged too when it lost what it had
 * acknowledged. */
START_TEST(a_restarted_member_is_no_transfer_target_until_caught_up)
{
    harness h;
    h_init(&h, 3, 3);
    h_start(&h, 3, 3);
    h_elect(&h, 0);
    uint64_t last = h_propose_n(&h, 0, 8, "t");
    h_run(&h, ET / 2);
    h.filter = drop_appends_to_2;
    ck_assert(h_restart_lost(&h, 1, 4, 0));
    h_run(&h, ET);
    jr__progress p = progress_of(&h, 0, 2);
    ck_assert_int_eq(p.unvouched, 1);
    ck_assert_int_eq(p.damaged, 1);
    ck_assert_uint_lt(p.match, last);
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 2), JR_ENOTVOTER);
    /* the best target leaves it out: n2 is chosen */
    ck_assert_int_eq(jr__raft_unvouched(R(&h, 1)), 1);
    h.filter = NULL;
    h_run(&h, 2 * ET);
    p = progress_of(&h, 0, 2);
    ck_assert_int_eq(p.unvouched, 0);
    ck_assert_int_eq(p.damaged, 0);
    ck_assert_int_eq(jr__raft_unvouched(R(&h, 1)), 0);
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 2), 0);
    h_run(&h, 2 * ET);
    ck_assert_int_eq(jr__raft_role(R(&h, 1)), JR_LEADER);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* A member that restarts with its whole log (a damaged store, say: the log lost nothing) tells
 * the leader so with its VOUCH, whose last entry is the leader's last: the leader marks it
 * unvouched anyway, and only an acknowledgement clears the mark, one at the match it already had
 * included (the leader's log does not grow here). Until it acknowledges, the member reports
 * itself unvouched or not, but the leader does not count it current. */
/* An acknowledgement n1 sent before its crash, held up in the network, reaches the leader after
 * n1's VOUCH: it is for the leader's whole log of then, and must not clear the mark n1 has not
 * earned (n1 takes nothing yet). The leader appended a blank entry on the VOUCH, which no
 * acknowledgement of n1's earlier life can cover; only n1's acknowledgement of it, after its
 * floor, clears the mark. */
START_TEST(an_acknowledgement_from_before_the_restart_does_not_vouch)
{
    harness h;
    h_init(&h, 3, 7);
    h_start(&h, 3, 3);
    h_elect(&h, 0);
    uint64_t last = h_propose_n(&h, 0, 6, "w");
    h_run(&h, ET / 2);
    ck_assert_uint_eq(progress_of(&h, 0, 2).match, last);
    h.filter = drop_appends_to_2;
    h_crash(&h, 1);
    h_restart(&h, 1);
    h_run(&h, ET);
    ck_assert_int_eq(progress_of(&h, 0, 2).unvouched, 1);
    jr__msg ack = {.type = JR__MSG_APPEND_RESP, .group = h.cfg.group, .from = 2, .to = 1};
    ack.term = jr__raft_term(R(&h, 0));
    ack.u.append_resp.success = 1;
    ack.u.append_resp.index = last;
    ck_assert_int_eq(h_inject(&h, 0, &ack), 0);
    ck_assert_msg(progress_of(&h, 0, 2).unvouched == 1,
                  "an acknowledgement from before the restart vouched for n1");
    h.filter = NULL;
    h_run(&h, 2 * ET);
    ck_assert_int_eq(progress_of(&h, 0, 2).unvouched, 0);
    ck_assert_int_eq(jr__raft_unvouched(R(&h, 1)), 0);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

START_TEST(a_vouch_showing_the_whole_log_is_no_acknowledgement)
{
    harness h;
    h_init(&h, 3, 5);
    h_start(&h, 3, 3);
    h_elect(&h, 0);
    uint64_t last = h_propose_n(&h, 0, 6, "w");
    h_run(&h, ET / 2);
    ck_assert_uint_eq(progress_of(&h, 0, 2).match, last);
    h.filter = drop_appends_to_2;
    h_crash(&h, 1);
    h_restart(&h, 1);
    ck_assert_int_eq(jr__raft_unvouched(R(&h, 1)), 1);
    h_run(&h, ET);
    jr__progress p = progress_of(&h, 0, 2);
    ck_assert_msg(p.unvouched == 1, "the leader took n1's VOUCH for an acknowledgement");
    ck_assert_int_eq(p.damaged, 0);
    /* the leader appended one blank entry on the VOUCH, which n1 must acknowledge */
    last++;
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 0)), last);
    h.filter = NULL;
    h_run(&h, 2 * ET);
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 0)), last);
    p = progress_of(&h, 0, 2);
    ck_assert_msg(p.unvouched == 0,
                  "n1 acknowledged the leader's whole log and is still unvouched");
    ck_assert_int_eq(jr__raft_unvouched(R(&h, 1)), 0);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* Quiet groups: a replica restarted while its group is quiet is vouched for by the leader,
 * which its VOUCH wakes, without any election; the group goes quiet again. */
START_TEST(a_quiet_group_vouches_a_restarted_replica_without_an_election)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        harness h;
        h_init(&h, 3, seed);
        h.quiesce = 1;
        h.cfg.quiesce = 1;
        h_start(&h, 3, 3);
        h_elect(&h, 0);
        h_propose_n(&h, 0, 4, "q");
        h_run(&h, 10 * ET);
        ck_assert_int_eq(jr__raft_quiet(R(&h, 0)), 1);
        uint64_t elections = h.elections;
        h_crash(&h, 2);
        h_restart(&h, 2);
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 2)), 1);
        h_run(&h, 10 * ET);
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 2)), 0);
        ck_assert_uint_eq(h.elections, elections);
        ck_assert_int_eq(jr__raft_role(R(&h, 0)), JR_LEADER);
        ck_assert_int_eq(jr__raft_quiet(R(&h, 0)), 1);
        h_check_all(&h);
        h_free(&h);
    }
}
END_TEST

/* Drops the answers the leader (server 1) sends server 5, while armed. */
static int drop_leader_answers;
static int lose_leader_answers(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    (void)arg;
    return !(drop_leader_answers && m->type == JR__MSG_VOUCH_RESP && m->from == 1 && m->to == 5);
}

/* R5, n4 restarted: the three others give it its term floor, so it takes the leader's messages
 * and acknowledges them, and the leader counts it current; but every answer of the leader, its
 * word, is lost. Once answers get through again it is asked for its word again and the replica
 * is whole, whether the leader keeps heartbeating (quiet = 0) or the group goes quiet, after
 * which nothing of the leader reaches the replica (quiet = 1: the replica asks on a timer of its
 * own, which quiescence does not stop; each VOUCH wakes the group). */
static void lost_leader_answers(int quiet)
{
    for (uint64_t seed = 1; seed <= SEEDS / 4; seed++) {
        harness h;
        h_init(&h, 5, seed);
        h.quiesce = quiet;
        h.cfg.quiesce = (uint32_t)quiet;
        h_start(&h, 5, 5);
        h_elect(&h, 0);
        h_propose_n(&h, 0, 4, "w");
        h_run(&h, 2 * ET);
        drop_leader_answers = 1;
        h.filter = lose_leader_answers;
        h_crash(&h, 4);
        h_restart(&h, 4);
        h_run(&h, 10 * ET);
        ck_assert_msg(jr__raft_unvouched(R(&h, 4)) == 1, "seed %llu: vouched without the word",
                      (unsigned long long)seed);
        jr__progress pr;
        ck_assert_int_eq(jr__raft_progress(R(&h, 0), 4, &pr), 0);
        ck_assert_uint_eq(pr.id, 5);
        ck_assert_msg(!pr.unvouched, "seed %llu: the leader does not count n4 current",
                      (unsigned long long)seed);
        drop_leader_answers = 0;
        h_run(&h, 3 * ET);
        ck_assert_msg(jr__raft_unvouched(R(&h, 4)) == 0,
                      "seed %llu: n4 still unvouched after the answers got through again",
                      (unsigned long long)seed);
        ck_assert_int_eq(jr__raft_role(R(&h, 0)), JR_LEADER);
        if (quiet) { /* and the group is idle again */
            h_run(&h, 3 * ET);
            ck_assert_int_eq(jr__raft_quiet(R(&h, 0)), 1);
            ck_assert_int_eq(jr__raft_quiet(R(&h, 4)), 1);
        }
        h.filter = NULL;
        h_check_all(&h);
        h_free(&h);
    }
}

START_TEST(a_replica_whose_leaders_answers_were_lost_asks_again_while_heartbeats_come)
{
    lost_leader_answers(0);
}
END_TEST

START_TEST(a_quiet_replica_whose_leaders_answers_were_lost_asks_again)
{
    lost_leader_answers(1);
}
END_TEST

/* A group whose only voter restarts needs nobody's word; a replica with no durable state is not
 * marked at all. */
START_TEST(a_single_voter_is_whole_at_once)
{
    harness h;
    h_init(&h, 1, 1);
    h_start(&h, 1, 1);
    h_run(&h, ET);
    h_propose_n(&h, 0, 3, "s");
    h_crash(&h, 0);
    h_restart(&h, 0);
    ck_assert_int_eq(jr__raft_unvouched(R(&h, 0)), 0);
    ck_assert_int_eq(jr__raft_role(R(&h, 0)), JR_LEADER);
    h_free(&h);
}
END_TEST

/* Divergence, on a bare core (the harness would itself flag the lie): a replica whose disk says
 * index 3 of term 2 is committed gets an append from a leader whose index 3 has term 3. It is
 * damaged and diverged, the append neither applied nor acknowledged, and it is unvouched again:
 * it asks both other voters, grants no vote and does not campaign at its election timeout. The
 * append was no leader's (a forged frame): the leader's word, a last entry its log holds,
 * makes it whole again. */
static int bare_sent, bare_acks, bare_grants, bare_votes, bare_vouches;
static int bare_vouch_to[8]; /* VOUCHes sent to server i */
static struct {
    uint8_t type;
    jr__id to;
} bare_log[32]; /* the first messages sent since bare_nlog was reset, in order */
static int bare_nlog;
static void bare_send(void *ctx, jr__raft *r, const jr__msg *m)
{
    (void)ctx;
    (void)r;
    bare_sent++;
    if (m->type == JR__MSG_APPEND_RESP && m->u.append_resp.success) bare_acks++;
    if (m->type == JR__MSG_VOTE_RESP && m->u.vote_resp.granted) bare_grants++;
    if (m->type == JR__MSG_VOTE) bare_votes++;
    if (m->type == JR__MSG_VOUCH) bare_vouches++;
    if (m->type == JR__MSG_VOUCH && m->to < 8) bare_vouch_to[m->to]++;
    if (bare_nlog < 32) {
        bare_log[bare_nlog].type = m->type;
        bare_log[bare_nlog++].to = m->to;
    }
}
static void bare_notify(void *ctx, jr__raft *r)
{
    (void)ctx;
    (void)r;
}

/* An APPEND of group 7 from server 1 to server 2. */
static jr__msg bare_append(uint64_t term, uint64_t prev, uint64_t prev_term, uint64_t commit,
                           const jr__entry *entries, uint32_t n)
{
    jr__msg m = {.type = JR__MSG_APPEND, .group = 7, .from = 1, .to = 2, .term = term};
    m.u.append.prev_index = prev;
    m.u.append.prev_term = prev_term;
    m.u.append.commit = commit;
    m.u.append.n = n;
    m.u.append.entries = entries;
    return m;
}

/* A bare core of group 7 as server 2, sending through bare_send. */
static jr__raft *bare_new(void)
{
    jr__raft_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.group = 7;
    cfg.self = 2;
    cfg.election_timeout = ET;
    cfg.heartbeat_interval = 20 * MS;
    jr__raft_io io = {NULL, bare_send, bare_notify, NULL, NULL, NULL};
    jr__raft *r;
    ck_assert_int_eq(jr__raft_new(&cfg, &io, &r), 0);
    return r;
}

START_TEST(an_append_over_a_committed_entry_leaves_the_replica_unvouched)
{
    jr__raft *r = bare_new();
    jr__conf c = {3, {{1, 1}, {2, 1}, {3, 1}}};
    uint8_t buf[64];
    jr__entry e = {1, 1, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c, buf), buf};
    ck_assert_int_eq(jr__raft_load_hardstate(r, 2, 0, 3), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e), 0);
    jr__entry e2 = {2, 2, JR__ENTRY_NORMAL, 1, (const uint8_t *)"x"};
    ck_assert_int_eq(jr__raft_load_entry(r, &e2), 0);
    jr__entry e3 = {2, 3, JR__ENTRY_NORMAL, 1, (const uint8_t *)"y"};
    ck_assert_int_eq(jr__raft_load_entry(r, &e3), 0);
    ck_assert_int_eq(jr__raft_start(r, 1000 * MS), 0);
    ck_assert_uint_eq(jr__raft_commit_index(r), 3);
    jr__entry le[2] = {{3, 3, JR__ENTRY_NORMAL, 1, (const uint8_t *)"z"},
                       {3, 4, JR__ENTRY_NOOP, 0, NULL}};
    jr__msg m = bare_append(3, 2, 2, 4, le, 2);
    bare_sent = bare_acks = bare_grants = 0;
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &m), 0);
    ck_assert_int_eq(jr__raft_diverged(r), 1);
    ck_assert_int_eq(jr__raft_damaged(r), 1);
    ck_assert_int_eq(bare_acks, 0);
    ck_assert_uint_eq(jr__raft_last_index(r), 3);
    ck_assert_uint_eq(jr__raft_commit_index(r), 3);
    jr__entry got;
    ck_assert_int_eq(jr__raft_entry(r, 3, &got), 0);
    ck_assert_uint_eq(got.term, 2);
    /* a candidate with a newer log gets no vote from it, and it never campaigns */
    jr__msg v = {.type = JR__MSG_VOTE, .group = 7, .from = 3, .to = 2, .term = 5};
    v.u.vote.last_index = 10;
    v.u.vote.last_term = 4;
    ck_assert_int_eq(jr__raft_step(r, 1500 * MS, &v), 0);
    ck_assert_int_eq(bare_grants, 0);
    ck_assert_int_eq(jr__raft_unvouched(r), 1);
    ck_assert_int_eq(bare_vouches, 2);
    uint64_t d = jr__raft_deadline(r);
    ck_assert_uint_lt(d, UINT64_MAX);
    jr__raft_tick(r, d);
    ck_assert_int_eq(bare_votes, 0);
    ck_assert_int_eq(bare_vouches, 4);
    /* both answer; the leader of term 3 holds (term 2, index 3) as its last entry */
    jr__msg a = {.type = JR__MSG_VOUCH_RESP, .group = 7, .from = 3, .to = 2, .term = 3};
    a.u.vouch_resp.last_index = 3;
    a.u.vouch_resp.last_term = 2;
    a.u.vouch_resp.commit = 3;
    a.u.vouch_resp.conf_index = 1;
    a.u.vouch_resp.conf = buf;
    a.u.vouch_resp.conf_len = e.len;
    ck_assert_int_eq(jr__raft_step(r, d + MS, &a), 0);
    ck_assert_int_eq(jr__raft_diverged(r), 1);
    a.from = 1;
    a.u.vouch_resp.leader = 1;
    ck_assert_int_eq(jr__raft_step(r, d + 2 * MS, &a), 0);
    ck_assert_int_eq(jr__raft_unvouched(r), 0);
    ck_assert_int_eq(jr__raft_diverged(r), 0);
    ck_assert_int_eq(jr__raft_damaged(r), 0);
    jr__raft_free(r);
}
END_TEST

/* A VOUCH_RESP of group 7 to server 2 naming configuration c (encoded into buf). */
static jr__msg vouch_resp(jr__id from, uint64_t term, uint64_t li, uint64_t lt, uint64_t commit,
                          uint64_t conf_index, const jr__conf *c, uint8_t *buf)
{
    jr__msg a = {.type = JR__MSG_VOUCH_RESP, .group = 7, .from = from, .to = 2, .term = term};
    a.u.vouch_resp.last_index = li;
    a.u.vouch_resp.last_term = lt;
    a.u.vouch_resp.commit = commit;
    a.u.vouch_resp.conf_index = conf_index;
    a.u.vouch_resp.conf_len = (uint32_t)jr__conf_encode(c, buf);
    a.u.vouch_resp.conf = buf;
    return a;
}

/* Server 2, restarted unvouched with {1,2,3} and entries 1..2 (commit 2); bare_* counters reset;
 * it asked 1 and 3. */
static jr__raft *bare_restarted(uint8_t *b3)
{
    jr__raft *r = bare_new();
    jr__conf c3 = {3, {{1, 1}, {2, 1}, {3, 1}}};
    jr__entry e1 = {1, 1, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c3, b3), b3};
    jr__entry e2 = {1, 2, JR__ENTRY_NORMAL, 1, (const uint8_t *)"x"};
    ck_assert_int_eq(jr__raft_load_hardstate(r, 1, 0, 2), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e1), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e2), 0);
    ck_assert_int_eq(jr__raft_load_unvouched(r, 0), 0);
    bare_sent = bare_grants = bare_votes = bare_vouches = 0;
    ck_assert_int_eq(jr__raft_start(r, 1000 * MS), 0);
    ck_assert_int_eq(bare_vouches, 2);
    return r;
}

/* 1 if r grants candidate 3 of `term` with last entry (lt, li). */
static int grants(jr__raft *r, uint64_t now, uint64_t term, uint64_t li, uint64_t lt)
{
    int before = bare_grants;
    jr__msg v = {.type = JR__MSG_VOTE, .group = 7, .from = 3, .to = 2, .term = term};
    v.u.vote.last_index = li;
    v.u.vote.last_term = lt;
    ck_assert_int_eq(jr__raft_step(r, now, &v), 0);
    return bare_grants > before;
}

/* Server 2 restarts with {1,2,3}. 3 answers that {2,3} (1 removed at 6) is committed (its commit
 * is 8): the configurations to hear from are {2,3} alone, so 1 — a server that may have
 * released its replica — is neither waited for nor asked again, and 2 takes 3's last entry as
 * its floor. With the removal not known committed (3's commit 5, below 11), 1 stays among those
 * asked (an entry committed with 2's lost acknowledgement may be held by 1 alone), and an
 * answer from 1 that it holds nothing (the node's answer for a group it left) counts. */
START_TEST(members_a_committed_configuration_removed_are_not_waited_for)
{
    jr__conf c2 = {2, {{2, 1}, {3, 1}}}, none = {0};
    uint8_t b3[64], b2[64], b0[8];
    jr__raft *r = bare_restarted(b3);
    jr__msg a = vouch_resp(3, 5, 10, 5, 8, 6, &c2, b2);
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &a), 0);
    ck_assert_uint_eq(jr__raft_term(r), 5); /* the term floor: 3 is {2,3}'s other voter */
    ck_assert(!grants(r, 1002 * MS, 6, 9, 5));
    ck_assert(grants(r, 1003 * MS, 7, 10, 5));
    uint64_t d = jr__raft_deadline(r);
    ck_assert_uint_lt(d, UINT64_MAX);
    jr__raft_tick(r, d);
    ck_assert_int_eq(bare_vouches, 3); /* all answered: it asks them again, 3 alone */
    jr__raft_free(r);

    r = bare_restarted(b3);
    a = vouch_resp(3, 5, 12, 5, 5, 11, &c2, b2);
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &a), 0);
    ck_assert_uint_eq(jr__raft_term(r), 1); /* {1,2,3} needs 1 and 3 */
    d = jr__raft_deadline(r);
    jr__raft_tick(r, d);
    ck_assert_int_eq(bare_vouches, 3); /* 1 again */
    ck_assert_int_eq(bare_votes, 0);
    a = vouch_resp(1, 1, 0, 0, 0, 0, &none, b0);
    ck_assert_int_eq(jr__raft_step(r, d + MS, &a), 0);
    ck_assert_uint_eq(jr__raft_term(r), 5);
    ck_assert(!grants(r, d + 2 * MS, 6, 11, 5)); /* below the floor (5, 12) */
    ck_assert(grants(r, d + 3 * MS, 7, 12, 5));
    jr__raft_free(r);
}
END_TEST

/* Server 2, restarted unvouched with {1,2,3,4,5} and entries 1..2 of term 1 (commit 2);
 * bare_* counters reset; it asked the four others. */
static jr__raft *bare_restarted5(uint8_t *b5, const jr__conf *c5)
{
    jr__raft *r = bare_new();
    jr__entry e1 = {1, 1, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(c5, b5), b5};
    jr__entry e2 = {1, 2, JR__ENTRY_NORMAL, 1, (const uint8_t *)"x"};
    ck_assert_int_eq(jr__raft_load_hardstate(r, 1, 0, 2), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e1), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e2), 0);
    ck_assert_int_eq(jr__raft_load_unvouched(r, 0), 0);
    bare_sent = bare_grants = bare_votes = bare_vouches = 0;
    memset(bare_vouch_to, 0, sizeof bare_vouch_to);
    ck_assert_int_eq(jr__raft_start(r, 1000 * MS), 0);
    ck_assert_int_eq(bare_vouches, 4);
    return r;
}

/* Two faulty replicas of five. Server 1 was elected in term 6 by {1, 2, 3}; 2 and 3 then lost
 * their disks' last records (the vote and term 6 with them) and restarted. 5 still leads term 5,
 * cut off, and 4 follows it. 2 hears from 3 (unfloored: restarted, no floor yet, term 1), 4 and
 * 5 (term 5, 5 leading): three answers, w of five, but the one of {1, 2, 3} among them is 3,
 * which forgot term 6 as 2 did. Counting it, 2 took term 5 as its floor and 5's word made it
 * whole: it would vote in term 6 again (a second leader of term 6) and acknowledge the deposed
 * leader's appends (5 commits with {5, 4, 2} what 1 overwrites). An unfloored answer counts
 * only past the one other faulty replica five voters allow: 2 takes no floor, asks 3 again, and
 * with 1's answer takes term 6, where 5's word no longer vouches for it. After a power loss of
 * all five (every answer unfloored) it takes its floor once all four answered. */
START_TEST(a_replica_of_five_takes_its_floor_past_another_faulty_one)
{
    jr__conf c5 = {5, {{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}}};
    uint8_t b5[64], bb[64];
    jr__raft *r = bare_restarted5(b5, &c5);
    jr__msg a = vouch_resp(3, 1, 2, 1, 2, 1, &c5, bb);
    a.u.vouch_resp.unfloored = 1;
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &a), 0);
    a = vouch_resp(4, 5, 2, 1, 2, 1, &c5, bb);
    ck_assert_int_eq(jr__raft_step(r, 1002 * MS, &a), 0);
    a = vouch_resp(5, 5, 2, 1, 2, 1, &c5, bb);
    a.u.vouch_resp.leader = 1;
    ck_assert_int_eq(jr__raft_step(r, 1003 * MS, &a), 0);
    ck_assert_uint_eq(jr__raft_term(r), 1); /* no floor */
    ck_assert_int_eq(jr__raft_unvouched(r), 1);
    ck_assert(!grants(r, 1004 * MS, 6, 2, 1));
    /* its asking timeout: 1, which has not answered, and 3, whose answer was unfloored */
    uint64_t d = jr__raft_deadline(r);
    ck_assert_uint_lt(d, UINT64_MAX);
    jr__raft_tick(r, d);
    ck_assert_int_eq(bare_vouch_to[1], 2);
    ck_assert_int_eq(bare_vouch_to[3], 2);
    ck_assert_int_eq(bare_vouch_to[4], 1);
    ck_assert_int_eq(bare_vouch_to[5], 1);
    a = vouch_resp(1, 6, 3, 6, 2, 1, &c5, bb);
    a.u.vouch_resp.leader = 1;
    ck_assert_int_eq(jr__raft_step(r, d + MS, &a), 0);
    ck_assert_uint_eq(jr__raft_term(r), 6);     /* 1, 4, 5: the floor */
    ck_assert_int_eq(jr__raft_unvouched(r), 1); /* it lacks 1's (6, 3) */
    ck_assert(!grants(r, d + 2 * MS, 6, 3, 6)); /* voted in 6 (for itself) */
    jr__raft_free(r);

    r = bare_restarted5(b5, &c5);
    for (jr__id id = 1; id <= 5; id++) {
        if (id == 2) continue;
        a = vouch_resp(id, 3, 2, 1, 2, 1, &c5, bb);
        a.u.vouch_resp.unfloored = 1;
        ck_assert_uint_eq(jr__raft_term(r), 1); /* three unfloored answers are not enough */
        ck_assert_int_eq(jr__raft_step(r, 1001 * MS + id * MS, &a), 0);
    }
    ck_assert_uint_eq(jr__raft_term(r), 3);
    jr__raft_free(r);
}
END_TEST

/* A bare core restarted (term 2) from storage whose recovery found damage and no configuration
 * at all. */
static jr__raft *bare_confless(void)
{
    jr__raft *r = bare_new();
    ck_assert_int_eq(jr__raft_load_hardstate(r, 2, 0, 0), 0);
    ck_assert_int_eq(jr__raft_load_unvouched(r, 1), 0);
    ck_assert_int_eq(jr__raft_start(r, 1000 * MS), 0);
    return r;
}

/* R2 {1, 2}: server 2's recovery lost its snapshot, and with it the configuration; server 1
 * holds the group's log (entries 1..3, term 2, all committed) but cannot be elected without 2's
 * vote, so no leader will ever repair 2. Its node names the servers it knows of
 * (jr__raft_vouch_hint): it asks them all, and again at its asking timeout. An answer naming no
 * configuration (server 3 hosts nothing of the group) tells it nothing; server 1's answer names
 * the configuration it committed, {1, 2}, whose every other member has then answered: 2 takes
 * its floor and grants its vote to a candidate at or above server 1's last entry, only. */
START_TEST(a_replica_that_lost_its_configuration_asks_the_servers_its_node_names)
{
    jr__raft *r = bare_confless();
    memset(bare_vouch_to, 0, sizeof bare_vouch_to);
    bare_grants = 0;
    jr__id ids[] = {1, 2, 3};
    ck_assert_int_eq(jr__raft_vouch_hint(r, ids, 3), 0);
    ck_assert_int_eq(bare_vouch_to[1], 1);
    ck_assert_int_eq(bare_vouch_to[3], 1);
    ck_assert_int_eq(bare_vouch_to[2], 0);
    uint64_t d = jr__raft_deadline(r);
    ck_assert_uint_lt(d, UINT64_MAX);
    jr__raft_tick(r, d); /* nobody answered: asked again */
    ck_assert_int_eq(bare_vouch_to[1], 2);
    ck_assert_int_eq(bare_vouch_to[3], 2);
    /* 3 holds nothing of the group */
    static const uint8_t none[1] = {0};
    jr__msg a = {.type = JR__MSG_VOUCH_RESP, .group = 7, .from = 3, .to = 2, .term = 1};
    a.u.vouch_resp.conf = none;
    a.u.vouch_resp.conf_len = sizeof none;
    ck_assert_int_eq(jr__raft_step(r, d + MS, &a), 0);
    ck_assert_int_eq(grants(r, d + 2 * MS, 3, 3, 2), 0);
    /* 1 answers: {1, 2} committed at its index 1, commit 3, last entry (3, term 2) */
    jr__conf c2 = {2, {{1, 1}, {2, 1}}};
    uint8_t buf[64];
    a = vouch_resp(1, 2, 3, 2, 3, 1, &c2, buf);
    ck_assert_int_eq(jr__raft_step(r, d + 3 * MS, &a), 0);
    ck_assert_int_eq(jr__raft_unvouched(r), 1);
    ck_assert_uint_ge(jr__raft_term(r), 2);              /* at its floor or above */
    ck_assert_int_eq(grants(r, d + 4 * MS, 3, 2, 2), 0); /* below server 1's last entry */
    jr__msg v = {.type = JR__MSG_VOTE, .group = 7, .from = 1, .to = 2, .term = 3};
    v.u.vote.last_index = 3;
    v.u.vote.last_term = 2;
    int before = bare_grants;
    ck_assert_int_eq(jr__raft_step(r, d + 5 * MS, &v), 0);
    ck_assert_int_eq(bare_grants, before + 1);
    jr__raft_free(r);
}
END_TEST

/* R3 {1, 2, 3} just created: server 1 wrote the bootstrap configuration (index 1, term 1) and
 * elected nobody yet (commit 0); 2 and 3 hold nothing of the group (their nodes lost power
 * before they created their replicas, and after the group's peer set changed they open as
 * joiners: unvouched, damaged, without a configuration). No configuration is committed
 * anywhere, and 1 cannot win without one of their votes. The bootstrap configuration is in
 * every log of the group, never a dead branch, so 1's answer naming it starts the chain of
 * configurations as a committed one would: once every other member of it answered, 2 takes
 * its floor and votes for a candidate at or above the most up-to-date answer. A later
 * configuration its sender has not committed still starts no chain. */
START_TEST(a_replica_without_a_configuration_learns_the_bootstrap_one)
{
    static const uint8_t none[1] = {0};
    jr__conf c3 = {3, {{1, 1}, {2, 1}, {3, 1}}};
    uint8_t buf[64];

    /* an uncommitted configuration above index 1 tells it nothing */
    jr__raft *r = bare_confless();
    jr__msg a = vouch_resp(1, 4, 6, 4, 3, 5, &c3, buf);
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &a), 0);
    a = (jr__msg){.type = JR__MSG_VOUCH_RESP, .group = 7, .from = 3, .to = 2, .term = 1};
    a.u.vouch_resp.conf = none;
    a.u.vouch_resp.conf_len = sizeof none;
    ck_assert_int_eq(jr__raft_step(r, 1002 * MS, &a), 0);
    ck_assert_int_eq(grants(r, 1003 * MS, 5, 6, 4), 0);
    jr__raft_free(r);

    /* the bootstrap configuration does */
    r = bare_confless();
    bare_grants = 0;
    a = vouch_resp(1, 1, 1, 1, 0, 1, &c3, buf);
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &a), 0);
    ck_assert_int_eq(grants(r, 1002 * MS, 3, 1, 1), 0); /* 3 has not answered */
    a = (jr__msg){.type = JR__MSG_VOUCH_RESP, .group = 7, .from = 3, .to = 2, .term = 1};
    a.u.vouch_resp.conf = none;
    a.u.vouch_resp.conf_len = sizeof none;
    ck_assert_int_eq(jr__raft_step(r, 1003 * MS, &a), 0);
    ck_assert_int_eq(jr__raft_unvouched(r), 1);
    ck_assert_int_eq(jr__raft_damaged(r), 1);
    ck_assert_int_eq(grants(r, 1004 * MS, 3, 0, 0), 0); /* below 1's last entry (1, term 1) */
    jr__msg v = {.type = JR__MSG_VOTE, .group = 7, .from = 1, .to = 2, .term = 3};
    v.u.vote.last_index = 1;
    v.u.vote.last_term = 1;
    v.flags = JR__MF_DURABLE;
    ck_assert_int_eq(jr__raft_step(r, 1005 * MS, &v), 0);
    ck_assert_int_eq(bare_grants, 1);
    jr__raft_free(r);
}
END_TEST

/* A replica whose recovery found damage and no configuration (neither its snapshot nor a
 * configuration entry survived) knows no peer to ask, which is not being a lone voter: it stays
 * unvouched and damaged, grants no vote, never campaigns, takes a leader's append that brings
 * it a configuration, and then asks the members it names. */
START_TEST(a_replica_that_lost_its_configuration_is_not_a_lone_voter)
{
    jr__raft *r = bare_confless();
    ck_assert_int_eq(jr__raft_unvouched(r), 1);
    ck_assert_int_eq(jr__raft_damaged(r), 1);
    bare_sent = bare_grants = bare_votes = bare_vouches = 0;
    jr__msg v = {.type = JR__MSG_VOTE, .group = 7, .from = 3, .to = 2, .term = 3};
    v.u.vote.last_index = 1;
    v.u.vote.last_term = 1;
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &v), 0);
    ck_assert_int_eq(bare_grants, 0);
    uint64_t d = jr__raft_deadline(r);
    if (d != UINT64_MAX) jr__raft_tick(r, d);
    ck_assert_int_eq(bare_votes, 0);
    ck_assert_int_eq(bare_vouches, 0); /* nobody to ask yet */
    /* the leader of term 3 sends its log from the start: a configuration of three */
    jr__conf c = {3, {{1, 1}, {2, 1}, {3, 1}}};
    uint8_t buf[64];
    jr__entry le[1] = {{1, 1, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c, buf), buf}};
    jr__msg m = bare_append(3, 0, 0, 1, le, 1);
    uint64_t t = d != UINT64_MAX ? d + MS : 1002 * MS;
    ck_assert_int_eq(jr__raft_step(r, t, &m), 0);
    ck_assert_uint_eq(jr__raft_last_index(r), 1);
    ck_assert_int_eq(jr__raft_unvouched(r), 1); /* still: its members have not answered */
    ck_assert_int_eq(jr__raft_damaged(r), 1);
    d = jr__raft_deadline(r);
    ck_assert_uint_lt(d, UINT64_MAX);
    jr__raft_tick(r, d + ET);
    ck_assert_int_ge(bare_vouches, 2); /* it asks both other members */
    ck_assert_int_eq(bare_votes, 0);
    jr__raft_free(r);
}
END_TEST

/* Server 2 of {1, .., n} restarted from its disk, unvouched; its VOUCHes went out at start. */
static jr__raft *bare_restarted_n(uint32_t n)
{
    jr__raft *r = bare_new();
    jr__conf c = {n, {{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}}};
    uint8_t buf[64];
    jr__entry e1 = {1, 1, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c, buf), buf};
    jr__entry e2 = {2, 2, JR__ENTRY_NORMAL, 1, (const uint8_t *)"a"};
    ck_assert_int_eq(jr__raft_load_hardstate(r, 2, 0, 1), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e1), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e2), 0);
    ck_assert_int_eq(jr__raft_load_unvouched(r, 0), 0);
    bare_vouches = 0;
    memset(bare_vouch_to, 0, sizeof bare_vouch_to);
    ck_assert_int_eq(jr__raft_start(r, 1000 * MS), 0);
    for (jr__id i = 1; i <= n; i++) ck_assert_int_eq(bare_vouch_to[i], i != 2);
    return r;
}

/* A leader elected after the VOUCHes went out never heard of them, and the replica, without its
 * term floor (here server 3 answered, server 1 not yet: two of three are needed), drops the
 * leader's messages unread. It asks that leader, once per leader and term, whether its message
 * is an APPEND, a HEARTBEAT or the node's listing of a quiet group; a VOTE is no leader's. */
START_TEST(a_leader_whose_messages_are_dropped_is_asked)
{
    jr__raft *r = bare_restarted_n(3);
    jr__msg a = {.type = JR__MSG_VOUCH_RESP, .group = 7, .from = 3, .to = 2, .term = 2};
    a.u.vouch_resp.last_index = 2;
    a.u.vouch_resp.last_term = 2;
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &a), 0);
    ck_assert_int_eq(jr__raft_unvouched(r), 1);
    jr__msg v = {.type = JR__MSG_VOTE, .group = 7, .from = 1, .to = 2, .term = 3};
    v.u.vote.last_index = 2;
    v.u.vote.last_term = 2;
    ck_assert_int_eq(jr__raft_step(r, 1002 * MS, &v), 0);
    ck_assert_int_eq(bare_vouch_to[1], 1);
    jr__entry le[1] = {{3, 3, JR__ENTRY_NOOP, 0, NULL}};
    jr__msg m = bare_append(3, 2, 2, 1, le, 1);
    bare_acks = 0;
    ck_assert_int_eq(jr__raft_step(r, 1003 * MS, &m), 0);
    ck_assert_int_eq(bare_acks, 0); /* dropped */
    ck_assert_uint_eq(jr__raft_last_index(r), 2);
    ck_assert_msg(bare_vouch_to[1] == 2, "the leader of term 3 was not asked (%d VOUCHes to it)",
                  bare_vouch_to[1]);
    jr__msg hb = {.type = JR__MSG_HEARTBEAT, .group = 7, .from = 1, .to = 2, .term = 3};
    ck_assert_int_eq(jr__raft_step(r, 1004 * MS, &hb), 0);
    ck_assert_int_eq(jr__raft_step(r, 1005 * MS, &m), 0);
    ck_assert_int_eq(bare_vouch_to[1], 2); /* once per leader and term */
    /* the node's listing of a quiet group in a later term, as a HEARTBEAT */
    ck_assert_int_eq(jr__raft_hb_recv(r, 1006 * MS, 1, 4, 1), 0);
    ck_assert_int_eq(bare_vouch_to[1], 3);
    ck_assert_int_eq(bare_vouch_to[3], 1);
    /* the leader's answer gives the floor (term 4) and its word: the replica is whole */
    a.from = 1;
    a.term = 4;
    a.u.vouch_resp.leader = 1;
    ck_assert_int_eq(jr__raft_step(r, 1007 * MS, &a), 0);
    ck_assert_int_eq(jr__raft_unvouched(r), 0);
    ck_assert_uint_eq(jr__raft_term(r), 4);
    jr__raft_free(r);
}
END_TEST

/* Past its term floor the replica takes its leader's messages, which keep its election timer
 * from running out: a VOUCH to that leader (or its answer) lost in the network is asked again
 * once an election timeout passed, as the leader's messages come, instead of leaving the
 * replica unvouched for as long as that leader leads. */
START_TEST(a_leader_whose_answer_was_lost_is_asked_again)
{
    jr__raft *r = bare_restarted_n(3);
    jr__msg a = {.type = JR__MSG_VOUCH_RESP, .group = 7, .from = 3, .to = 2, .term = 3};
    a.u.vouch_resp.last_index = 2;
    a.u.vouch_resp.last_term = 2;
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &a), 0);
    a.from = 1; /* server 1 answers too, not yet leading: the floor (term 3), no leader's word */
    ck_assert_int_eq(jr__raft_step(r, 1002 * MS, &a), 0);
    ck_assert_int_eq(jr__raft_unvouched(r), 1);
    memset(bare_vouch_to, 0, sizeof bare_vouch_to);
    /* 1 leads term 3: its heartbeats are taken; it is asked for its word once ... */
    jr__msg hb = {.type = JR__MSG_HEARTBEAT, .group = 7, .from = 1, .to = 2, .term = 3};
    uint64_t t = 1003 * MS;
    ck_assert_int_eq(jr__raft_step(r, t, &hb), 0);
    ck_assert_int_eq(bare_vouch_to[1], 1);
    /* ... that VOUCH is lost; the heartbeats go on, one per heartbeat interval, for ten
     * election timeouts */
    for (int k = 1; k <= 50; k++) {
        t += 20 * MS;
        ck_assert_int_eq(jr__raft_step(r, t, &hb), 0);
    }
    ck_assert_int_eq(jr__raft_unvouched(r), 1);
    ck_assert_msg(bare_vouch_to[1] >= 2, "the leader was not asked again (%d VOUCHes to it)",
                  bare_vouch_to[1]);
    ck_assert_msg(bare_vouch_to[1] <= 11, "asked more than once per election timeout (%d)",
                  bare_vouch_to[1]);
    /* its answer makes the replica whole */
    a.u.vouch_resp.leader = 1;
    ck_assert_int_eq(jr__raft_step(r, t + MS, &a), 0);
    ck_assert_int_eq(jr__raft_unvouched(r), 0);
    jr__raft_free(r);
}
END_TEST

/* R5: servers 1, 3 and 4 answer (three: the term floor), none of them leading; 5 is down. Then
 * 1 becomes leader of term 3 and its group is quiet, so nothing of it reaches the replica. At
 * its election timeout the replica asks every member again, not only 5, which has not answered:
 * the new leader learns it restarted, and its answer and APPEND make the replica whole. */
START_TEST(a_replica_with_its_floor_asks_every_member_again)
{
    jr__raft *r = bare_restarted_n(5);
    jr__msg a = {.type = JR__MSG_VOUCH_RESP, .group = 7, .to = 2, .term = 2};
    a.u.vouch_resp.last_index = 2;
    a.u.vouch_resp.last_term = 2;
    jr__id from[] = {1, 3, 4};
    for (int k = 0; k < 3; k++) {
        a.from = from[k];
        ck_assert_int_eq(jr__raft_step(r, 1001 * MS + (uint64_t)k, &a), 0);
    }
    ck_assert_int_eq(jr__raft_unvouched(r), 1); /* no leader's word, 5 has not answered */
    memset(bare_vouch_to, 0, sizeof bare_vouch_to);
    uint64_t d = jr__raft_deadline(r);
    ck_assert_uint_lt(d, UINT64_MAX);
    jr__raft_tick(r, d);
    ck_assert_int_eq(bare_vouch_to[5], 1);
    for (jr__id i = 1; i <= 4; i++)
        ck_assert_msg(bare_vouch_to[i] == (i != 2),
                      "server %d, which answered, was not asked again after the floor", (int)i);
    a.from = 1;
    a.term = 3;
    a.u.vouch_resp.leader = 1;
    ck_assert_int_eq(jr__raft_step(r, d + MS, &a), 0);
    jr__entry le[1] = {{3, 3, JR__ENTRY_NOOP, 0, NULL}};
    jr__msg m = bare_append(3, 2, 2, 1, le, 1);
    bare_acks = 0;
    ck_assert_int_eq(jr__raft_step(r, d + 2 * MS, &m), 0);
    ck_assert_int_eq(bare_acks, 1);
    ck_assert_int_eq(jr__raft_unvouched(r), 0);
    jr__raft_free(r);
}
END_TEST

/* The replica that lost its configuration takes the leader's repair, and acknowledges it: the
 * leader may take that for an acknowledgement of its whole log and clear its mark. Once the
 * repair brought a configuration the replica asks its members at once, its VOUCH to the leader
 * after that acknowledgement (so the leader marks it unvouched again), and drops the leader's
 * messages until its term floor. */
START_TEST(a_replica_that_lost_its_configuration_asks_once_a_repair_brings_one)
{
    jr__raft *r = bare_confless();
    jr__conf c = {3, {{1, 1}, {2, 1}, {3, 1}}};
    uint8_t buf[64];
    jr__entry le[2] = {{1, 1, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c, buf), buf},
                       {3, 2, JR__ENTRY_NOOP, 0, NULL}};
    jr__msg m = bare_append(3, 0, 0, 2, le, 2);
    bare_nlog = 0;
    memset(bare_vouch_to, 0, sizeof bare_vouch_to);
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &m), 0);
    ck_assert_uint_eq(jr__raft_last_index(r), 2);
    int ack = -1, after = 0;
    for (int k = 0; k < bare_nlog; k++) {
        if (bare_log[k].type == JR__MSG_APPEND_RESP && bare_log[k].to == 1) ack = k;
        if (ack >= 0 && bare_log[k].type == JR__MSG_VOUCH && bare_log[k].to == 1) after = 1;
    }
    ck_assert_int_ge(ack, 0);
    ck_assert_msg(after, "no VOUCH to the leader after the acknowledgement of its repair");
    ck_assert_int_eq(bare_vouch_to[3], 1);
    ck_assert_int_eq(jr__raft_unvouched(r), 1);
    ck_assert_int_eq(jr__raft_damaged(r), 1);
    /* from now on it drops the leader's messages until its floor */
    jr__entry le2[1] = {{3, 3, JR__ENTRY_NORMAL, 1, (const uint8_t *)"x"}};
    jr__msg m2 = bare_append(3, 2, 3, 2, le2, 1);
    ck_assert_int_eq(jr__raft_step(r, 1002 * MS, &m2), 0);
    ck_assert_uint_eq(jr__raft_last_index(r), 2);
    jr__raft_free(r);
}
END_TEST

/* A follower takes a commit index from its leader's heartbeat only as far as an APPEND of that
 * leader proved its log matches: the leader's match for it may predate a restart that rolled
 * its files back, and the entry it holds at that index may then be another term's. Here index 3
 * is a stale entry of term 1, the leader of term 3 believes the follower holds its 3 and says
 * commit 3: nothing is committed until an APPEND replaces the entry. */
START_TEST(a_heartbeat_commits_only_what_an_append_of_its_leader_proved)
{
    jr__raft *r = bare_new();
    jr__conf c = {3, {{1, 1}, {2, 1}, {3, 1}}};
    uint8_t buf[64];
    jr__entry e1 = {1, 1, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c, buf), buf};
    jr__entry e2 = {1, 2, JR__ENTRY_NORMAL, 1, (const uint8_t *)"a"};
    jr__entry e3 = {1, 3, JR__ENTRY_NORMAL, 1, (const uint8_t *)"stale"};
    ck_assert_int_eq(jr__raft_load_hardstate(r, 2, 0, 2), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e1), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e2), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e3), 0);
    ck_assert_int_eq(jr__raft_start(r, 1000 * MS), 0);
    ck_assert_uint_eq(jr__raft_commit_index(r), 2);
    jr__msg hb = {.type = JR__MSG_HEARTBEAT, .group = 7, .from = 1, .to = 2, .term = 3};
    hb.u.heartbeat.commit = 3;
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &hb), 0);
    ck_assert_uint_eq(jr__raft_commit_index(r), 2); /* the stale 3 is not committed */
    (void)jr__raft_hb_recv(r, 1002 * MS, 1, 3, 3);
    ck_assert_uint_eq(jr__raft_commit_index(r), 2); /* nor through the node's heartbeats */
    jr__entry le[1] = {{3, 3, JR__ENTRY_NOOP, 0, NULL}};
    jr__msg m = bare_append(3, 2, 1, 3, le, 1);
    ck_assert_int_eq(jr__raft_step(r, 1003 * MS, &m), 0);
    ck_assert_uint_eq(jr__raft_commit_index(r), 3);
    jr__entry got;
    ck_assert_int_eq(jr__raft_entry(r, 3, &got), 0);
    ck_assert_uint_eq(got.term, 3);
    jr__raft_free(r);
}
END_TEST

/* A replica its latest, committed configuration removed answers a VOUCH with its last committed
 * entry, not the uncommitted tail it kept from leading: its acknowledgements after its removal
 * count in no commit quorum, and an asker whose configuration still lists it as a voter would
 * otherwise take a floor no remaining voter reaches (none could be elected). Before its removal
 * commits it answers with its last entry (it may still lead, raft.h). */
static uint64_t bare_vouch_li, bare_vouch_lt, bare_vouch_ci;
static jr__conf bare_vouch_cc; /* the configuration at its commit index, if it sent one */
static void vouch_send(void *ctx, jr__raft *r, const jr__msg *m)
{
    (void)ctx;
    (void)r;
    if (m->type != JR__MSG_VOUCH_RESP) return;
    bare_vouch_li = m->u.vouch_resp.last_index;
    bare_vouch_lt = m->u.vouch_resp.last_term;
    bare_vouch_ci = m->u.vouch_resp.cconf_index;
    bare_vouch_cc.n = 0;
    if (m->u.vouch_resp.cconf_len)
        ck_assert_int_eq(
            jr__conf_decode(&bare_vouch_cc, m->u.vouch_resp.cconf, m->u.vouch_resp.cconf_len), 0);
}

static uint64_t removed_answer(uint64_t commit)
{
    jr__raft_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.group = 7;
    cfg.self = 2;
    cfg.election_timeout = ET;
    cfg.heartbeat_interval = 20 * MS;
    jr__raft_io io = {NULL, vouch_send, bare_notify, NULL, NULL, NULL};
    jr__raft *r;
    ck_assert_int_eq(jr__raft_new(&cfg, &io, &r), 0);
    jr__conf c3 = {3, {{1, 1}, {2, 1}, {3, 1}}}, c2 = {2, {{1, 1}, {3, 1}}};
    uint8_t b3[64], b2[64];
    jr__entry e1 = {1, 1, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c3, b3), b3};
    jr__entry e2 = {1, 2, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c2, b2), b2};
    jr__entry e3 = {1, 3, JR__ENTRY_NORMAL, 1, (const uint8_t *)"x"};
    jr__entry e4 = {1, 4, JR__ENTRY_NORMAL, 1, (const uint8_t *)"y"};
    ck_assert_int_eq(jr__raft_load_hardstate(r, 1, 2, commit), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e1), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e2), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e3), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e4), 0);
    ck_assert_int_eq(jr__raft_start(r, 1000 * MS), 0);
    jr__msg q = {.type = JR__MSG_VOUCH, .group = 7, .from = 1, .to = 2, .term = 1};
    q.u.vouch.last_index = 1;
    q.u.vouch.last_term = 1;
    bare_vouch_li = bare_vouch_lt = 0;
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &q), 0);
    ck_assert_uint_eq(bare_vouch_lt, 1);
    jr__raft_free(r);
    return bare_vouch_li;
}

/* Replica 2's log: 1 config {1,2,3}, 2 config {1,3}, 3 and 4 normal entries. Its
 * acknowledgements after entry 2 count in no commit quorum, so it answers with the later of its
 * commit entry and entry 1, whether the removal committed or not. */
START_TEST(a_removed_replica_answers_with_what_its_acknowledgements_could_commit)
{
    ck_assert_uint_eq(removed_answer(3), 3); /* removal committed: its commit, not 4 */
    ck_assert_uint_eq(removed_answer(1), 1); /* removal pending: the entry before it */
    ck_assert_uint_eq(removed_answer(0), 1);
}
END_TEST

/* R2 {1, 2} committed up to index 9; its leader 1 appended an observer addition of server 3
 * ({1, 2, 3 observer}, index 10) just as 2 crashed, so the change never committed; 1 stepped
 * down (no quorum without 2), and 2 restarted with its records of the group lost: no
 * configuration, damaged. 1 and 3 answer with commit 9 and that latest configuration, index 10;
 * servers 4 and 5 hold nothing of the group. An answer from a build that does not send the
 * configuration in effect at its commit index names no configuration its sender committed, so
 * it starts no chain (as before: 2 grants nothing). With it ({1, 2}, index 6, in effect at 9:
 * a leader appends a change only once the one before it committed) the chain starts there:
 * every member of {1, 2} and {1, 2, 3} answered, 2 takes its floor (term 3) and votes for a
 * candidate at or above 1's last entry (12, term 3), and for none below it (jetraft-sim seed
 * 4230). */
static void committed_configuration_answers(jr__raft *r, int with_committed)
{
    static const uint8_t none[1] = {0};
    jr__conf c3 = {3, {{1, 1}, {2, 1}, {3, 0}}}, c2 = {2, {{1, 1}, {2, 1}}};
    uint8_t b1[64], b3[64], bc[64];
    size_t bcl = jr__conf_encode(&c2, bc);
    jr__msg a = vouch_resp(1, 3, 12, 3, 9, 10, &c3, b1);
    if (with_committed) {
        a.u.vouch_resp.cconf_index = 6;
        a.u.vouch_resp.cconf_len = (uint32_t)bcl;
        a.u.vouch_resp.cconf = bc;
    }
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &a), 0);
    a = vouch_resp(3, 3, 9, 3, 9, 10, &c3, b3);
    if (with_committed) {
        a.u.vouch_resp.cconf_index = 6;
        a.u.vouch_resp.cconf_len = (uint32_t)bcl;
        a.u.vouch_resp.cconf = bc;
    }
    ck_assert_int_eq(jr__raft_step(r, 1002 * MS, &a), 0);
    for (jr__id id = 4; id <= 5; id++) {
        a = (jr__msg){.type = JR__MSG_VOUCH_RESP, .group = 7, .from = id, .to = 2, .term = 1};
        a.u.vouch_resp.conf = none;
        a.u.vouch_resp.conf_len = sizeof none;
        a.u.vouch_resp.unfloored = 1;
        ck_assert_int_eq(jr__raft_step(r, 1003 * MS, &a), 0);
    }
}

static int grants_from_1(jr__raft *r, uint64_t now, uint64_t li, uint64_t lt)
{
    int before = bare_grants;
    jr__msg v = {.type = JR__MSG_VOTE, .group = 7, .from = 1, .to = 2, .term = 4};
    v.u.vote.last_index = li;
    v.u.vote.last_term = lt;
    ck_assert_int_eq(jr__raft_step(r, now, &v), 0);
    return bare_grants > before;
}

START_TEST(an_uncommitted_change_does_not_hide_the_committed_configuration)
{
    jr__raft *r = bare_confless();
    committed_configuration_answers(r, 0);
    ck_assert(!grants_from_1(r, 1004 * MS, 12, 3)); /* older answers: no chain, as before */
    jr__raft_free(r);

    r = bare_confless();
    committed_configuration_answers(r, 1);
    ck_assert_int_eq(jr__raft_damaged(r), 1);
    ck_assert(!grants_from_1(r, 1004 * MS, 9, 3));
    ck_assert(grants_from_1(r, 1005 * MS, 12, 3));
    ck_assert_uint_ge(jr__raft_term(r), 3);
    jr__raft_free(r);
}
END_TEST

/* The answering side: a replica whose latest configuration (index 10) lies above its commit
 * index sends the configuration in effect there, and its entry's index; once the change
 * committed it sends none (its latest configuration is the committed one). */
static void answer_with_commit(uint64_t commit)
{
    jr__raft_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.group = 7;
    cfg.self = 2;
    cfg.election_timeout = ET;
    cfg.heartbeat_interval = 20 * MS;
    jr__raft_io io = {NULL, vouch_send, bare_notify, NULL, NULL, NULL};
    jr__raft *r;
    ck_assert_int_eq(jr__raft_new(&cfg, &io, &r), 0);
    jr__conf c2 = {2, {{1, 1}, {2, 1}}}, c3 = {3, {{1, 1}, {2, 1}, {3, 0}}};
    uint8_t b2[64], b3[64];
    jr__entry e1 = {1, 1, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c2, b2), b2};
    jr__entry e2 = {1, 2, JR__ENTRY_NORMAL, 1, (const uint8_t *)"x"};
    jr__entry e3 = {1, 3, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c3, b3), b3};
    ck_assert_int_eq(jr__raft_load_hardstate(r, 1, 2, commit), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e1), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e2), 0);
    ck_assert_int_eq(jr__raft_load_entry(r, &e3), 0);
    ck_assert_int_eq(jr__raft_start(r, 1000 * MS), 0);
    jr__msg q = {.type = JR__MSG_VOUCH, .group = 7, .from = 1, .to = 2, .term = 1};
    q.u.vouch.last_index = 1;
    q.u.vouch.last_term = 1;
    bare_vouch_ci = 99;
    ck_assert_int_eq(jr__raft_step(r, 1001 * MS, &q), 0);
    jr__raft_free(r);
}

START_TEST(an_answer_names_the_configuration_at_its_commit_index)
{
    answer_with_commit(2);
    ck_assert_uint_eq(bare_vouch_ci, 1);
    ck_assert_uint_eq(bare_vouch_cc.n, 2);
    ck_assert_uint_eq(bare_vouch_cc.m[0].id, 1);
    ck_assert_uint_eq(bare_vouch_cc.m[1].id, 2);
    answer_with_commit(3);
    ck_assert_uint_eq(bare_vouch_ci, 0);
    ck_assert_uint_eq(bare_vouch_cc.n, 0);
}
END_TEST

/* A lone voter restarted damaged vouches for itself, keeps its damage and leads (no peer could
 * know more). Its group grows: observer 2 is promoted. Once that change commits the damaged
 * leader steps down, asks 2 as a restarted replica does and never campaigns; 2 is elected with
 * its vote, answers as leader, and 1, holding 2's last entry, is whole (jetraft-sim seed 965). */
START_TEST(a_damaged_lone_voter_is_whole_once_its_group_grew)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        harness h;
        h_init(&h, 2, seed);
        h_start(&h, 1, 1);
        h_elect(&h, 0);
        h_propose_n(&h, 0, 3, "a");
        h_crash(&h, 0);
        h.nodes[0].restart_damaged = 1;
        h_restart(&h, 0);
        ck_assert_int_eq(h_wait_leader(&h, 2 * ET), 0);
        ck_assert_int_eq(jr__raft_damaged(R(&h, 0)), 1);
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 0)), 0);
        h_change(&h, 0, JR__ADD_OBSERVER, 2);
        h_run(&h, ET);
        ck_assert_int_eq(h_leader(&h), 0); /* still its only voter: it leads, damaged */
        ck_assert_int_eq(jr__raft_damaged(R(&h, 0)), 1);
        h_change(&h, 0, JR__PROMOTE, 2);
        h_run(&h, 10 * ET);
        ck_assert_msg(h_leader(&h) == 1, "seed %llu: leader %d", (unsigned long long)seed,
                      h_leader(&h));
        ck_assert_int_eq(jr__raft_damaged(R(&h, 0)), 0);
        ck_assert_int_eq(jr__raft_unvouched(R(&h, 0)), 0);
        ck_assert_uint_eq(jr__raft_last_index(R(&h, 0)), jr__raft_last_index(R(&h, 1)));
        h_check_all(&h);
        h_free(&h);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("raft-vouch");
    TCase *tc = tcase_create("vouch");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_replica_that_lost_acknowledged_entries_elects_nobody_without_them);
    tcase_add_test(tc, a_leaders_word_vouches_while_a_voter_is_down);
    tcase_add_test(tc, a_whole_cluster_restart_elects_the_most_up_to_date_server);
    tcase_add_test(tc, a_late_acknowledgement_from_before_the_restart_is_covered);
    tcase_add_test(tc, a_replica_rolled_back_to_an_older_configuration_hears_from_the_newer_one);
    tcase_add_test(tc, a_conflict_rejection_keeps_the_acknowledged_match);
    tcase_add_test(tc, a_late_heartbeat_answer_marks_no_member_damaged);
    tcase_add_test(tc, a_vouch_after_a_low_answer_still_finds_the_loss);
    tcase_add_test(tc, a_restarted_member_is_no_transfer_target_until_caught_up);
    tcase_add_test(tc, a_vouch_showing_the_whole_log_is_no_acknowledgement);
    tcase_add_test(tc, an_acknowledgement_from_before_the_restart_does_not_vouch);
    tcase_add_test(tc, a_quiet_group_vouches_a_restarted_replica_without_an_election);
    tcase_add_test(tc, a_replica_whose_leaders_answers_were_lost_asks_again_while_heartbeats_come);
    tcase_add_test(tc, a_quiet_replica_whose_leaders_answers_were_lost_asks_again);
    tcase_add_test(tc, a_single_voter_is_whole_at_once);
    tcase_add_test(tc, members_a_committed_configuration_removed_are_not_waited_for);
    tcase_add_test(tc, a_replica_that_lost_its_configuration_is_not_a_lone_voter);
    tcase_add_test(tc, a_replica_that_lost_its_configuration_asks_the_servers_its_node_names);
    tcase_add_test(tc, a_replica_without_a_configuration_learns_the_bootstrap_one);
    tcase_add_test(tc, a_replica_that_lost_its_configuration_asks_once_a_repair_brings_one);
    tcase_add_test(tc, a_heartbeat_commits_only_what_an_append_of_its_leader_proved);
    tcase_add_test(tc, a_leader_whose_messages_are_dropped_is_asked);
    tcase_add_test(tc, a_leader_whose_answer_was_lost_is_asked_again);
    tcase_add_test(tc, a_replica_with_its_floor_asks_every_member_again);
    tcase_add_test(tc, an_append_over_a_committed_entry_leaves_the_replica_unvouched);
    tcase_add_test(tc, a_replica_of_five_takes_its_floor_past_another_faulty_one);
    tcase_add_test(tc,
                   two_replicas_of_five_that_lost_acknowledged_entries_elect_nobody_without_them);
    tcase_add_test(tc, a_removed_replica_answers_with_what_its_acknowledgements_could_commit);
    tcase_add_test(tc, an_uncommitted_change_does_not_hide_the_committed_configuration);
    tcase_add_test(tc, an_answer_names_the_configuration_at_its_commit_index);
    tcase_add_test(tc, a_damaged_lone_voter_is_whole_once_its_group_grew);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
