/*
 * A peer taken for lost only because it had nothing to say (liveness.c send_heartbeats): on the
 * simulated cluster, group 1 has voters n0 and n1; n2 hosts nothing, so its node never speaks to
 * them and they take it for lost. n2 then opens group 1 as a joiner and the leader adds it as an
 * observer while the leader's link to n2 is cut, so the APPENDs are lost; the leader goes quiet
 * (a member not heard from for an election timeout counts as down) and lists the group for n2.
 * Once the link is whole again n2 must catch up: the leader's node sends a lost peer one news
 * item as a probe, which n2 answers, so it is heard again and told the rest. Without the probe
 * both nodes would stay silent for good and the observer would never get an entry (jetraft-sim
 * seed 4412: a consumer moved onto a server that held nothing else with its leader).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "groups.h"

#define N 3
#define MS 1000000ull
#define ET (150 * MS) /* the fixture's default election timeout */

static void ignore(void *ctx, uint64_t index, const void *data, size_t len)
{
    (void)ctx;
    (void)index;
    (void)data;
    (void)len;
}

static int led(void *arg, jr_sim *sim)
{
    (void)arg;
    return sg_ready_leader(sim, 2, 1) >= 0;
}

static int leader_quiet(void *arg, jr_sim *sim)
{
    jr__raft *r = sg_raft(sim, *(unsigned *)arg, 1);
    return r && jr__raft_quiet(r);
}

/* n2's replica holds the leader's whole log. */
static int caught_up(void *arg, jr_sim *sim)
{
    jr__raft *l = sg_raft(sim, *(unsigned *)arg, 1), *o = sg_raft(sim, 2, 1);
    return l && o && jr__raft_last_index(o) == jr__raft_last_index(l) &&
           jr__raft_term(o) == jr__raft_term(l);
}

static void on_done(void *arg, int status)
{
    *(int *)arg = status;
}

START_TEST(a_silent_peer_taken_for_lost_is_probed_and_catches_up)
{
    jr_sim *sim = sg_new(N, 31 + (uint64_t)_i);
    jr_fsm fsms[N];
    for (unsigned i = 0; i < 2; i++) sg_open(sim, 2, i, 1, &fsms[i], NULL, ignore);
    ck_assert_int_eq(jr_sim_run_until(sim, led, NULL, 40 * ET), 0);
    unsigned l = (unsigned)sg_ready_leader(sim, 2, 1);
    ck_assert_int_eq(jr_sim_run_until(sim, leader_quiet, &l, 40 * ET), 0);
    jr_sim_run_for(sim, 3 * ET); /* n2, silent, is taken for lost */

    /* n2 joins group 1; the leader's frames to it are lost while it adds it as an observer */
    const char *voters[] = {jr_sim_name(sim, 0), jr_sim_name(sim, 1)};
    fsms[2] = (jr_fsm){.version = JR_FSM_VERSION, .apply = ignore};
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = 1;
    gc.voters = voters;
    gc.nvoters = 2;
    gc.fsm = &fsms[2];
    jr_group *joiner;
    ck_assert_int_eq(jr_group_open(jr_sim_node(sim, 2), &gc, &joiner), 0);
    ck_assert_int_eq(jr_sim_cut(sim, l, 2), 0);
    int done = 1;
    ck_assert_int_eq(jr_group_add_observer(jr_node_group(jr_sim_node(sim, l), 1),
                                           jr_sim_name(sim, 2), on_done, &done),
                     0);
    jr_sim_run_for(sim, 2 * ET);
    ck_assert_int_eq(done, 0);
    ck_assert_int_eq(jr_sim_run_until(sim, leader_quiet, &l, 40 * ET), 0);
    ck_assert_uint_eq(jr__raft_last_index(sg_raft(sim, 2, 1)), 0);

    /* the link is whole again: n2 is probed, heard, told, and brought up to date */
    jr_sim_heal(sim);
    ck_assert_msg(jr_sim_run_until(sim, caught_up, &l, 20 * ET) == 0,
                  "seed %d: the observer holds %llu of %llu entries", 31 + _i,
                  (unsigned long long)jr__raft_last_index(sg_raft(sim, 2, 1)),
                  (unsigned long long)jr__raft_last_index(sg_raft(sim, l, 1)));
    jr_sim_free(sim);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("silent_peer");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, a_silent_peer_taken_for_lost_is_probed_and_catches_up, 0, 8);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
