/* Peer changes as pure decisions (meta/members.h): the next single-server change a stream's
 * leader makes, driven to convergence from random configurations and peer sets, and which
 * peers stay when a stream shrinks. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta/members.h"
#include "util/rand.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t test_seed(void)
{
    const char *s = getenv("JR_TEST_SEED");
    return s ? strtoull(s, NULL, 0) : 20240612;
}

static jr__memb V(uint64_t id)
{
    jr__memb m = {id, 1, 1, 1, 0};
    return m;
}
static jr__memb O(uint64_t id, int caught_up)
{
    jr__memb m = {id, 0, 1, (uint8_t)caught_up, 0};
    return m;
}
static jr__memb DEAD(uint64_t id)
{
    jr__memb m = {id, 1, 0, 0, 0};
    return m;
}

static void expect(jr__memb_next x, int step, uint64_t peer)
{
    ck_assert_int_eq(x.step, step);
    ck_assert_uint_eq(x.peer, peer);
}

START_TEST(grow_adds_observers_then_promotes_the_caught_up)
{
    const uint64_t want[] = {1, 2, 3};
    jr__memb m[3] = {V(1)};
    expect(jr__members_next(1, m, 1, want, 3), JR__MEMB_ADD, 2);
    m[1] = O(2, 0);
    expect(jr__members_next(1, m, 2, want, 3), JR__MEMB_ADD, 3); /* both catch up at once */
    m[2] = O(3, 0);
    expect(jr__members_next(1, m, 3, want, 3), JR__MEMB_WAIT, 0);
    m[2].caught_up = 1;
    expect(jr__members_next(1, m, 3, want, 3), JR__MEMB_PROMOTE, 3);
    m[2] = V(3);
    expect(jr__members_next(1, m, 3, want, 3), JR__MEMB_WAIT, 0);
    m[1].caught_up = 1;
    expect(jr__members_next(1, m, 3, want, 3), JR__MEMB_PROMOTE, 2);
    m[1] = V(2);
    expect(jr__members_next(1, m, 3, want, 3), JR__MEMB_CONVERGED, 0);
}
END_TEST

START_TEST(an_observer_a_stand_in_needs_stays_until_the_pair_is_gone)
{
    /* leader 1 stands in for removed voter 2 of the pair {1, 2} and needs observer 3's vote;
     * the assignment is {1, 4}: 4 joins and is promoted first, then 3 may go, then 2 */
    const uint64_t want[] = {1, 4};
    jr__memb m[4] = {V(1), DEAD(2), O(3, 1)};
    m[2].needed = 1;
    expect(jr__members_next(1, m, 3, want, 2), JR__MEMB_ADD, 4);
    m[3] = O(4, 0);
    expect(jr__members_next(1, m, 4, want, 2), JR__MEMB_WAIT, 0);
    m[3].caught_up = 1;
    expect(jr__members_next(1, m, 4, want, 2), JR__MEMB_PROMOTE, 4);
    m[3] = V(4);
    m[2].needed = 0; /* three voters: no pair to stand in for */
    expect(jr__members_next(1, m, 4, want, 2), JR__MEMB_REMOVE, 3);
    jr__memb three[3] = {V(1), DEAD(2), V(4)};
    expect(jr__members_next(1, three, 3, want, 2), JR__MEMB_REMOVE, 2);
}
END_TEST

START_TEST(shrink_removes_others_first_then_hands_leadership_over)
{
    /* R3 -> R1 keeping 1, led by 2: remove 3, then transfer to 1 (who then removes 2) */
    const uint64_t want[] = {1};
    jr__memb m[3] = {V(1), V(2), V(3)};
    expect(jr__members_next(2, m, 3, want, 1), JR__MEMB_REMOVE, 3);
    jr__memb two[2] = {V(1), V(2)};
    expect(jr__members_next(2, two, 2, want, 1), JR__MEMB_TRANSFER, 1);
    two[0].caught_up = 0; /* nobody to hand over to yet */
    expect(jr__members_next(2, two, 2, want, 1), JR__MEMB_WAIT, 0);
    two[0].caught_up = 1;
    expect(jr__members_next(1, two, 2, want, 1), JR__MEMB_REMOVE, 2); /* the new leader */
    expect(jr__members_next(1, two, 1, want, 1), JR__MEMB_CONVERGED, 0);
    /* R5 -> R3: the voter least caught up goes first */
    const uint64_t want3[] = {1, 2, 3};
    jr__memb five[5] = {V(1), V(2), V(3), V(4), V(5)};
    five[4].caught_up = 0;
    expect(jr__members_next(1, five, 5, want3, 3), JR__MEMB_REMOVE, 5);
    five[4].caught_up = 1;
    expect(jr__members_next(1, five, 5, want3, 3), JR__MEMB_REMOVE, 4);
    /* an observer nobody wants goes before anything else */
    jr__memb obs[3] = {V(1), V(2), O(7, 0)};
    const uint64_t want12[] = {1, 2, 3};
    expect(jr__members_next(1, obs, 3, want12, 3), JR__MEMB_REMOVE, 7);
}
END_TEST

START_TEST(dead_voters_go_first_and_no_removal_leaves_no_live_majority)
{
    /* R3 -> R1 keeping 1: 3 is down, 2 restarted and lags. Removing 2 would leave {1, 3},
     * whose majority needs the dead 3: 3 goes first, then 2. */
    const uint64_t want[] = {1};
    jr__memb m[3] = {V(1), V(2), DEAD(3)};
    m[1].caught_up = 0;
    expect(jr__members_next(1, m, 3, want, 1), JR__MEMB_REMOVE, 3);
    /* both others dead: any removal leaves {1, dead}: wait for one to come back */
    jr__memb d[3] = {V(1), DEAD(2), DEAD(3)};
    expect(jr__members_next(1, d, 3, want, 1), JR__MEMB_WAIT, 0);
    /* R5 -> R3 with two dead unwanted: each removal keeps 3 live of what is left */
    const uint64_t want3[] = {1, 2, 3};
    jr__memb f[5] = {V(1), V(2), V(3), DEAD(4), DEAD(5)};
    expect(jr__members_next(1, f, 5, want3, 3), JR__MEMB_REMOVE, 4);
    jr__memb g[4] = {V(1), V(2), V(3), DEAD(5)};
    expect(jr__members_next(1, g, 4, want3, 3), JR__MEMB_REMOVE, 5);
}
END_TEST

START_TEST(voters_leave_only_after_new_ones_vote)
{
    /* a replacement: 3 in, 2 out; 2 stays until 3 is a voter */
    const uint64_t want[] = {1, 3};
    jr__memb m[3] = {V(1), V(2), O(3, 0)};
    expect(jr__members_next(1, m, 3, want, 2), JR__MEMB_WAIT, 0);
    m[2].caught_up = 1;
    expect(jr__members_next(1, m, 3, want, 2), JR__MEMB_PROMOTE, 3);
    m[2] = V(3);
    expect(jr__members_next(1, m, 3, want, 2), JR__MEMB_REMOVE, 2);
}
END_TEST

/* Drives random configurations to random peer sets, every member catching up at once. */
START_TEST(every_configuration_converges_one_change_at_a_time)
{
    uint64_t seed = test_seed();
    jr__rand r;
    jr__rand_seed(&r, seed);
    for (int it = 0; it < 20000; it++) {
        jr__memb m[16];
        size_t n = 0;
        uint64_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        for (int i = 7; i > 0; i--) { /* shuffle */
            int j = (int)jr__rand_below(&r, (uint64_t)i + 1);
            uint64_t t = ids[i];
            ids[i] = ids[j];
            ids[j] = t;
        }
        size_t nv = 1 + (size_t)jr__rand_below(&r, 5), no = (size_t)jr__rand_below(&r, 3);
        for (size_t i = 0; i < nv; i++) m[n++] = V(ids[i]);
        for (size_t i = 0; i < no; i++) m[n++] = O(ids[nv + i], (int)jr__rand_below(&r, 2));
        uint64_t leader = m[jr__rand_below(&r, nv)].id;
        for (size_t i = 0; i < n; i++) /* some members down (a leader has a live majority) */
            if (m[i].id != leader && jr__rand_below(&r, 4) == 0) m[i].alive = m[i].caught_up = 0;
        size_t nvoters = 0, nlive = 0;
        for (size_t i = 0; i < n; i++) {
            nvoters += m[i].voter;
            nlive += m[i].voter && m[i].alive;
        }
        if (2 * nlive <= nvoters) continue;
        for (int i = 7; i > 0; i--) {
            int j = (int)jr__rand_below(&r, (uint64_t)i + 1);
            uint64_t t = ids[i];
            ids[i] = ids[j];
            ids[j] = t;
        }
        size_t nw = 1 + (size_t)jr__rand_below(&r, 5);
        uint64_t want[5];
        memcpy(want, ids, nw * sizeof *want);
        int grow_only = 1; /* every voter stays wanted: the voter count must never drop */
        for (size_t i = 0; i < n; i++) {
            int w = 0;
            for (size_t k = 0; k < nw; k++) w |= want[k] == m[i].id;
            if (m[i].voter && !w) grow_only = 0;
        }
        int steps = 0, done = 0;
        while (!done) {
            ck_assert_msg(++steps < 32,
                          "seed %" PRIu64 " (JR_TEST_SEED) iteration %d: no "
                          "convergence",
                          seed, it);
            size_t voters = 0;
            for (size_t i = 0; i < n; i++) voters += m[i].voter;
            jr__memb_next x = jr__members_next(leader, m, n, want, nw);
            size_t at = n;
            for (size_t i = 0; i < n; i++)
                if (m[i].id == x.peer) at = i;
            switch (x.step) {
            case JR__MEMB_CONVERGED:
                ck_assert_uint_eq(n, nw);
                for (size_t i = 0; i < n; i++) ck_assert(m[i].voter);
                done = 1;
                break;
            case JR__MEMB_WAIT: /* members catching up or down: they catch up */
                for (size_t i = 0; i < n; i++) m[i].alive = m[i].caught_up = 1;
                break;
            case JR__MEMB_ADD:
                ck_assert_uint_eq(at, n);
                m[n++] = O(x.peer, 0);
                break;
            case JR__MEMB_PROMOTE:
                ck_assert(at < n && !m[at].voter && m[at].caught_up);
                m[at].voter = 1;
                break;
            case JR__MEMB_REMOVE: {
                ck_assert(at < n && x.peer != leader);
                ck_assert(!grow_only || !m[at].voter);
                ck_assert(voters > 1 || !m[at].voter);
                m[at] = m[--n];
                size_t v2 = 0, l2 = 0; /* what is left can still commit */
                for (size_t i = 0; i < n; i++) {
                    v2 += m[i].voter;
                    l2 += m[i].voter && m[i].alive;
                }
                ck_assert_msg(2 * l2 > v2, "seed %" PRIu64 " iteration %d: no live majority left",
                              seed, it);
                break;
            }
            case JR__MEMB_TRANSFER:
                ck_assert(at < n && m[at].voter && m[at].caught_up && x.peer != leader);
                leader = x.peer;
                break;
            default:
                ck_abort_msg("unknown step %d", x.step);
            }
        }
    }
}
END_TEST

/* The floor a live voter's acknowledgements must reach: the leader's commit index sampled at
 * least one period ago once sampling has gone on that long, never older than two periods. */
START_TEST(the_ack_floor_is_the_commit_index_of_a_period_ago)
{
    const uint64_t P = 100;
    jr__ack_floor f;
    memset(&f, 0, sizeof f);
    ck_assert_uint_eq(jr__ack_floor_update(&f, 1000, 10, P), 10); /* first: now's (strict) */
    ck_assert_uint_eq(jr__ack_floor_update(&f, 1050, 20, P), 10);
    ck_assert_uint_eq(jr__ack_floor_update(&f, 1100, 30, P), 10); /* 10 sampled at 1000 */
    ck_assert_uint_eq(jr__ack_floor_update(&f, 1150, 40, P), 10);
    ck_assert_uint_eq(jr__ack_floor_update(&f, 1200, 50, P), 30); /* 30 sampled at 1100 */
    ck_assert_uint_eq(jr__ack_floor_update(&f, 1299, 60, P), 30);
    ck_assert_uint_eq(jr__ack_floor_update(&f, 1300, 70, P), 50);
    /* not sampled for two periods: the old samples are dropped, now's is the floor */
    ck_assert_uint_eq(jr__ack_floor_update(&f, 1500, 90, P), 90);
    ck_assert_uint_eq(jr__ack_floor_update(&f, 1600, 95, P), 90);
}
END_TEST

/* A voter heard from but not acknowledging (its writes fail) is not live: the leader does not
 * remove a live voter while the voters left would need it for a majority. */
START_TEST(a_voter_that_does_not_acknowledge_counts_as_not_live)
{
    /* five voters, 1 leads; 4 and 5 dropped; 3 is down, 2 answers heartbeats but acknowledges
     * nothing (alive 0 as its leader gathers it) */
    jr__memb m[5] = {V(1), V(2), V(3), V(4), V(5)};
    m[1].alive = 0;
    m[2].alive = 0;
    uint64_t want[3] = {1, 2, 3};
    jr__memb_next x = jr__members_next(1, m, 5, want, 3);
    ck_assert_int_eq(x.step, JR__MEMB_WAIT); /* {1,2,3,5} would have only 1 and 5 live */
    m[1].alive = 1;                          /* 2 acknowledges again */
    x = jr__members_next(1, m, 5, want, 3);
    ck_assert_int_eq(x.step, JR__MEMB_REMOVE);
    ck_assert_uint_eq(x.peer, 4);
}
END_TEST

START_TEST(shrink_keeps_the_leader_then_online_then_least_lag)
{
    size_t keep[5];
    int online[5] = {1, 1, 1, 1, 1};
    /* unknown leader, all alike: the first in placement order */
    ck_assert_uint_eq(jr__members_shrink(3, 1, 3, online, NULL, keep), 1);
    ck_assert_uint_eq(keep[0], 0);
    /* the leader stays */
    ck_assert_uint_eq(jr__members_shrink(3, 1, 2, online, NULL, keep), 1);
    ck_assert_uint_eq(keep[0], 2);
    /* offline peers go first, even before laggards; order of the survivors kept */
    online[0] = 0;
    uint64_t lag[5] = {0, 50, 0, 7, 0};
    ck_assert_uint_eq(jr__members_shrink(5, 3, 4, online, lag, keep), 3);
    ck_assert_uint_eq(keep[0], 2);
    ck_assert_uint_eq(keep[1], 3);
    ck_assert_uint_eq(keep[2], 4);
    /* out of range */
    ck_assert_uint_eq(jr__members_shrink(3, 0, 0, online, NULL, keep), 0);
    ck_assert_uint_eq(jr__members_shrink(3, 4, 0, online, NULL, keep), 0);
    ck_assert_uint_eq(jr__members_shrink(3, 3, 0, NULL, NULL, keep), 3);
}
END_TEST

START_TEST(shrink_removes_damaged_then_offline_then_most_behind)
{
    size_t keep[4];
    /* placement order would keep peer 1; it is damaged (its server up, its replica silent) */
    int h[4] = {JR__MEMB_HEALTH_OK, JR__MEMB_HEALTH_DAMAGED, JR__MEMB_HEALTH_OK,
                JR__MEMB_HEALTH_OFFLINE};
    uint64_t lag[4] = {0, 5000, 0, 0};
    ck_assert_uint_eq(jr__members_shrink(3, 2, 0, h, lag, keep), 2);
    ck_assert_uint_eq(keep[0], 0);
    ck_assert_uint_eq(keep[1], 2);
    /* a damaged member goes before an offline one, an offline one before a healthy one */
    ck_assert_uint_eq(jr__members_shrink(4, 3, 2, h, NULL, keep), 3);
    ck_assert_uint_eq(keep[0], 0);
    ck_assert_uint_eq(keep[1], 2);
    ck_assert_uint_eq(keep[2], 3);
    ck_assert_uint_eq(jr__members_shrink(4, 2, 2, h, NULL, keep), 2);
    ck_assert_uint_eq(keep[0], 0);
    ck_assert_uint_eq(keep[1], 2);
    /* all healthy: the most behind goes, whatever its place */
    int ok[3] = {JR__MEMB_HEALTH_OK, JR__MEMB_HEALTH_OK, JR__MEMB_HEALTH_OK};
    uint64_t behind[3] = {0, 3000, 2};
    ck_assert_uint_eq(jr__members_shrink(3, 2, 2, ok, behind, keep), 2);
    ck_assert_uint_eq(keep[0], 0);
    ck_assert_uint_eq(keep[1], 2);
    /* the leader stays even if it were reported worse */
    ck_assert_uint_eq(jr__members_shrink(3, 1, 1, h, lag, keep), 1);
    ck_assert_uint_eq(keep[0], 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("members");
    TCase *tc = tcase_create("members");
    tcase_add_test(tc, grow_adds_observers_then_promotes_the_caught_up);
    tcase_add_test(tc, shrink_removes_others_first_then_hands_leadership_over);
    tcase_add_test(tc, an_observer_a_stand_in_needs_stays_until_the_pair_is_gone);
    tcase_add_test(tc, voters_leave_only_after_new_ones_vote);
    tcase_add_test(tc, dead_voters_go_first_and_no_removal_leaves_no_live_majority);
    tcase_add_test(tc, every_configuration_converges_one_change_at_a_time);
    tcase_add_test(tc, the_ack_floor_is_the_commit_index_of_a_period_ago);
    tcase_add_test(tc, a_voter_that_does_not_acknowledge_counts_as_not_live);
    tcase_add_test(tc, shrink_keeps_the_leader_then_online_then_least_lag);
    tcase_add_test(tc, shrink_removes_damaged_then_offline_then_most_behind);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
