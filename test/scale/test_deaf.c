/*
 * A deaf leader (it can send but hears nothing: every link into its node is cut one way), on the
 * simulated cluster: 3 nodes, a few R3 raw groups led from every node. The groups it leads get
 * a new leader elsewhere within two election timeouts of the cut, as after a crash, whether
 * they were quiet (contact is node-level, and the deaf node's heartbeat frames keep arriving),
 * idle but not yet quiet, or busy (proposals keep arriving at the deaf leader, whose
 * heartbeats and APPENDs keep reaching the followers). Groups led elsewhere keep their leader.
 * Many seeds: the cut falls at a different point of every timer.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"

#define N 3
#define G 9
#define MS 1000000ull
#define ET (150 * MS) /* the fixture's default election timeout */
#define HB (30 * MS)  /* and heartbeat interval */

enum mode { QUIET, IDLE, BUSY };

typedef struct cluster {
    jr_sim *sim;
    jr_fsm fsms[N][G + 1];
    unsigned deaf;
    uint64_t term0[G + 1];
    int led_deaf[G + 1];
    int busy;
    uint64_t next_write;
    uint64_t acked, rejected;
} cluster;

static void ignore(void *ctx, uint64_t index, const void *data, size_t len)
{
    (void)ctx;
    (void)index;
    (void)data;
    (void)len;
}

static int all_led(void *arg, jr_sim *sim)
{
    (void)arg;
    for (uint64_t gid = 1; gid <= G; gid++)
        if (sg_ready_leader(sim, N, gid) < 0) return 0;
    return 1;
}

static int all_quiet(void *arg, jr_sim *sim)
{
    (void)arg;
    for (unsigned i = 0; i < N; i++)
        for (uint64_t gid = 1; gid <= G; gid++)
            if (!jr__raft_quiet(sg_raft(sim, i, gid))) return 0;
    return 1;
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

/* Busy mode: one write every 2 ms to every group at whichever replica thinks it leads (the deaf
 * one included, until it steps down). */
static void write_all(cluster *c)
{
    uint64_t now = jr_sim_now(c->sim);
    if (!c->busy || now < c->next_write) return;
    c->next_write = now + 2 * MS;
    for (uint64_t gid = 1; gid <= G; gid++)
        for (unsigned i = 0; i < N; i++) {
            jr__raft *r = sg_raft(c->sim, i, gid);
            if (!r || jr__raft_role(r) != JR_LEADER) continue;
            jr_group_propose(jr_node_group(jr_sim_node(c->sim, i), gid), "w", 1, on_ack, c);
        }
}

/* Every group the deaf node led has a ready leader on another node, in a newer term. */
static int failed_over(void *arg, jr_sim *sim)
{
    cluster *c = arg;
    write_all(c);
    for (uint64_t gid = 1; gid <= G; gid++) {
        if (!c->led_deaf[gid]) continue;
        int l = sg_ready_leader(sim, N, gid);
        if (l < 0 || l == (int)c->deaf) return 0;
    }
    return 1;
}

static void run(enum mode mode, uint64_t seed)
{
    cluster *c = calloc(1, sizeof *c);
    c->sim = sg_new(N, seed);
    for (unsigned i = 0; i < N; i++)
        for (uint64_t gid = 1; gid <= G; gid++)
            sg_open(c->sim, N, i, gid, &c->fsms[i][gid], NULL, ignore);
    ck_assert_int_eq(jr_sim_run_until(c->sim, all_led, NULL, 40 * ET), 0);
    if (mode == QUIET) {
        ck_assert_int_eq(jr_sim_run_until(c->sim, all_quiet, NULL, 40 * ET), 0);
        jr_sim_run_for(c->sim, ET + (seed * 7919 % 1000) * (ET / 1000));
    } else {
        /* an idle leader goes quiet at its first idle heartbeat tick: cut before that */
        jr_sim_run_for(c->sim, (seed * 7919 % 1000) * (HB / 1000));
    }
    /* the node leading the most groups goes deaf */
    unsigned led[N] = {0};
    for (uint64_t gid = 1; gid <= G; gid++) {
        int l = sg_ready_leader(c->sim, N, gid);
        if (l >= 0) led[l]++;
    }
    for (unsigned i = 1; i < N; i++)
        if (led[i] > led[c->deaf]) c->deaf = i;
    unsigned nlost = 0;
    for (uint64_t gid = 1; gid <= G; gid++) {
        c->led_deaf[gid] = sg_ready_leader(c->sim, N, gid) == (int)c->deaf;
        nlost += c->led_deaf[gid];
        c->term0[gid] = sg_max_term(c->sim, N, gid);
    }
    ck_assert_uint_gt(nlost, 0);
    c->busy = mode == BUSY;
    for (unsigned i = 0; i < N; i++)
        if (i != c->deaf) ck_assert_int_eq(jr_sim_cut(c->sim, i, c->deaf), 0);
    uint64_t t0 = jr_sim_now(c->sim);
    int rc = jr_sim_run_until(c->sim, failed_over, c, 10 * ET);
    uint64_t t = jr_sim_now(c->sim) - t0;
    fprintf(stderr, "deaf: mode %d seed %llu: n%u led %u group(s); new leaders after %llu ms\n",
            (int)mode, (unsigned long long)seed, c->deaf, nlost, (unsigned long long)(t / MS));
    ck_assert_msg(rc == 0, "seed %llu: no new leader within 10 election timeouts",
                  (unsigned long long)seed);
    ck_assert_msg(t <= 2 * ET, "seed %llu: new leaders only after %llu ms (election timeout %llu)",
                  (unsigned long long)seed, (unsigned long long)(t / MS),
                  (unsigned long long)(ET / MS));
    /* the groups led elsewhere did not move */
    for (uint64_t gid = 1; gid <= G; gid++)
        if (!c->led_deaf[gid]) ck_assert_uint_eq(sg_max_term(c->sim, N, gid), c->term0[gid]);
    /* healed, everything settles: a leader everywhere, quiet again */
    c->busy = 0;
    jr_sim_heal(c->sim);
    ck_assert_int_eq(jr_sim_run_until(c->sim, all_led, NULL, 20 * ET), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, all_quiet, NULL, 40 * ET), 0);
    jr_sim_free(c->sim);
    free(c);
}

START_TEST(a_deaf_leader_of_quiet_groups_is_replaced_within_two_timeouts)
{
    run(QUIET, 100 + (uint64_t)_i);
}
END_TEST

START_TEST(a_deaf_leader_of_idle_groups_is_replaced_within_two_timeouts)
{
    run(IDLE, 200 + (uint64_t)_i);
}
END_TEST

START_TEST(a_deaf_leader_of_busy_groups_is_replaced_within_two_timeouts)
{
    run(BUSY, 300 + (uint64_t)_i);
}
END_TEST

int main(void)
{
    int seeds = (int)sg_env("DEAF_SEEDS", 25);
    Suite *s = suite_create("deaf");
    TCase *tc = tcase_create("deaf");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, a_deaf_leader_of_quiet_groups_is_replaced_within_two_timeouts, 0,
                        seeds);
    tcase_add_loop_test(tc, a_deaf_leader_of_idle_groups_is_replaced_within_two_timeouts, 0, seeds);
    tcase_add_loop_test(tc, a_deaf_leader_of_busy_groups_is_replaced_within_two_timeouts, 0, seeds);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
