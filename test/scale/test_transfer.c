/*
 * Leadership transfer targets (jr_group_transfer) on the simulated cluster, 3 nodes and one R3
 * raw group: a transfer is refused with JR_ENOTVOTER exactly when the leader reports its target
 * not current (jr_group_peer: heard from within an election timeout and holding everything
 * committed); with no target named it picks a current voter.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"

#define N 3
#define GID 1
#define MS 1000000ull
#define ET (150 * MS)

typedef struct done_rec {
    int calls, status;
} done_rec;

static void on_done(void *arg, int status)
{
    done_rec *d = arg;
    d->calls++;
    d->status = status;
}

static int done_called(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((done_rec *)arg)->calls > 0;
}

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
    return sg_ready_leader(sim, N, GID) >= 0;
}

static jr_group *grp(jr_sim *sim, unsigned i)
{
    return jr_node_group(jr_sim_node(sim, i), GID);
}

/* jr_group_peer's `current` of peer `name` on node l (the leader), and its lag. */
static int peer_current(jr_sim *sim, unsigned l, const char *name, uint64_t *lag)
{
    jr_group_status st = {.size = sizeof st};
    ck_assert_int_eq(jr_group_status_get(grp(sim, l), &st), 0);
    for (size_t i = 0; i < st.npeers; i++) {
        jr_peer_status ps = {.size = sizeof ps};
        ck_assert_int_eq(jr_group_peer(grp(sim, l), i, &ps), 0);
        if (ps.name && strcmp(ps.name, name) == 0) {
            *lag = ps.lag;
            return ps.current;
        }
    }
    ck_abort_msg("no peer %s", name);
    return 0;
}

START_TEST(transfer_requires_a_voter_the_leader_reports_current)
{
    jr_sim *sim = sg_new(N, 13);
    static jr_fsm fsms[N];
    for (unsigned i = 0; i < N; i++) sg_open(sim, N, i, GID, &fsms[i], NULL, ignore);
    ck_assert_int_eq(jr_sim_run_until(sim, led, NULL, 40 * ET), 0);
    jr_sim_run_for(sim, 100 * MS);
    unsigned l = (unsigned)sg_ready_leader(sim, N, GID);
    unsigned behind = (l + 1) % N, other = (l + 2) % N;
    const char *bname = jr_sim_name(sim, behind), *oname = jr_sim_name(sim, other);

    /* `behind` misses 20 entries, but was heard from just now */
    unsigned side[1] = {behind};
    ck_assert_int_eq(jr_sim_partition(sim, side, 1), 0);
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(jr_group_propose(grp(sim, l), "x", 1, NULL, NULL), 0);
    jr_sim_run_for(sim, 20 * MS);
    uint64_t lag = 0;
    ck_assert_int_eq(peer_current(sim, l, bname, &lag), 0);
    ck_assert_uint_eq(lag, 20);
    ck_assert_int_eq(jr_group_transfer(grp(sim, l), bname, NULL, NULL), JR_ENOTVOTER);
    ck_assert_ptr_nonnull(strstr(jr_node_errmsg(jr_sim_node(sim, l)), "caught-up"));
    ck_assert(!jr__raft_transferring(sg_raft(sim, l, GID)));
    ck_assert_int_eq(jr_group_propose(grp(sim, l), "y", 1, NULL, NULL), 0); /* still accepting */

    /* with no target named the current one is picked */
    ck_assert_int_eq(peer_current(sim, l, oname, &lag), 1);
    done_rec tr = {0};
    ck_assert_int_eq(jr_group_transfer(grp(sim, l), NULL, on_done, &tr), 0);
    ck_assert_int_eq(jr_sim_run_until(sim, done_called, &tr, 2000 * MS), 0);
    ck_assert_int_eq(tr.status, 0);
    ck_assert_str_eq(jr_group_leader(grp(sim, other)), oname);

    /* at the new leader `behind`, cut off for over an election timeout now, is not current */
    jr_sim_run_for(sim, 200 * MS);
    ck_assert_int_eq(peer_current(sim, other, bname, &lag), 0);
    ck_assert_int_eq(jr_group_transfer(grp(sim, other), bname, NULL, NULL), JR_ENOTVOTER);

    /* healed, `behind` catches up, is current, and takes the lead */
    jr_sim_heal(sim);
    jr_sim_run_for(sim, 300 * MS);
    ck_assert_int_eq(peer_current(sim, other, bname, &lag), 1);
    ck_assert_uint_eq(lag, 0);
    done_rec tr2 = {0};
    ck_assert_int_eq(jr_group_transfer(grp(sim, other), bname, on_done, &tr2), 0);
    ck_assert_int_eq(jr_sim_run_until(sim, done_called, &tr2, 2000 * MS), 0);
    ck_assert_int_eq(tr2.status, 0);
    ck_assert_str_eq(jr_group_leader(grp(sim, behind)), bname);
    jr_sim_free(sim);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("transfer");
    TCase *tc = tcase_create("transfer");
    tcase_add_test(tc, transfer_requires_a_voter_the_leader_reports_current);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
