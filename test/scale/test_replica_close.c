/*
 * Replicas closed on a live node (issue 5, liveness.h "Replicas closed on a live node"), on the
 * simulated cluster: 3 nodes, a few R3 raw groups, all quiet, so that the leaders know their
 * members only through the nodes' coalesced heartbeats, which keep flowing.
 *
 *  - a follower's node closes its replica: the quiet leader stops counting it (wakes, reports
 *    it not current), goes quiet again without it, and still takes writes with the other one;
 *  - both followers close theirs: the quiet leader steps down (check-quorum);
 *  - the closed replica is reopened: it catches up and counts again, without an election;
 *  - a node restarts without reopening one of its groups: that group's leader stops counting it
 *    (the node answers its listing saying it does not host the group), the others do not;
 *  - a member's node opens its replica, empty, only after the quiet leader listed the group to
 *    it: the leader brings it up to date without a write to wake the group.
 * No other group moves meanwhile.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"

#define N 3
#define G 12
#define MS 1000000ull
#define ET (150 * MS) /* the fixture's default election timeout */
#define HB (30 * MS)  /* and heartbeat interval */

typedef struct rep {
    uint64_t gid;
    uint64_t applied; /* entries applied */
} rep;

typedef struct cluster {
    jr_sim *sim;
    rep reps[N][G + 1];
    jr_fsm fsms[N][G + 1];
    uint64_t acked, rejected;
} cluster;

static void apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    rep *r = ctx;
    (void)index;
    (void)data;
    (void)len;
    r->applied++;
}

static jr_node *node(cluster *c, unsigned i)
{
    return jr_sim_node(c->sim, i);
}

static jr_group *grp(cluster *c, unsigned i, uint64_t gid)
{
    jr_node *n = node(c, i);
    return n ? jr_node_group(n, gid) : NULL;
}

static jr__raft *raft(cluster *c, unsigned i, uint64_t gid)
{
    return sg_raft(c->sim, i, gid);
}

static void open_group(cluster *c, unsigned i, uint64_t gid)
{
    rep *r = &c->reps[i][gid];
    memset(r, 0, sizeof *r);
    r->gid = gid;
    sg_open(c->sim, N, i, gid, &c->fsms[i][gid], r, apply);
}

static int ready_leader(cluster *c, uint64_t gid)
{
    return sg_ready_leader(c->sim, N, gid);
}

static int all_led(void *arg, jr_sim *sim)
{
    cluster *c = arg;
    (void)sim;
    for (uint64_t gid = 1; gid <= G; gid++)
        if (ready_leader(c, gid) < 0) return 0;
    return 1;
}

/* Every open replica quiet. */
static int all_quiet(void *arg, jr_sim *sim)
{
    cluster *c = arg;
    (void)sim;
    for (unsigned i = 0; i < N; i++)
        for (uint64_t gid = 1; gid <= G; gid++) {
            jr__raft *r = raft(c, i, gid);
            if (r && !jr__raft_quiet(r)) return 0;
        }
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

static uint64_t want;
static int acked(void *arg, jr_sim *sim)
{
    cluster *c = arg;
    (void)sim;
    return c->acked + c->rejected >= want;
}

/* Proposes one write to gid at its ready leader and runs until it is answered; returns its
 * status (0: committed). */
static int write1(cluster *c, uint64_t gid)
{
    int l = ready_leader(c, gid);
    ck_assert_int_ge(l, 0);
    c->acked = c->rejected = 0;
    want = 1;
    uint64_t v = gid;
    ck_assert_int_eq(jr_group_propose(grp(c, (unsigned)l, gid), &v, sizeof v, on_ack, c), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, acked, c, 20 * ET), 0);
    return c->rejected ? -1 : 0;
}

/* A cluster whose groups all have a leader, took one write each, and are quiet. */
static void setup(cluster *c, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->sim = sg_new(N, seed);
    for (unsigned i = 0; i < N; i++)
        for (uint64_t gid = 1; gid <= G; gid++) open_group(c, i, gid);
    ck_assert_int_eq(jr_sim_run_until(c->sim, all_led, c, 40 * ET), 0);
    for (uint64_t gid = 1; gid <= G; gid++) ck_assert_int_eq(write1(c, gid), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, all_quiet, c, 20 * ET), 0);
}

/* What leader node l reports about member m of gid (jr_group_peer). */
static jr_peer_status peer_status(cluster *c, unsigned l, uint64_t gid, unsigned m)
{
    jr_group *g = grp(c, l, gid);
    ck_assert_ptr_nonnull(g);
    jr_group_status st = {.size = sizeof st};
    ck_assert_int_eq(jr_group_status_get(g, &st), 0);
    for (size_t i = 0; i < st.npeers; i++) {
        jr_peer_status ps = {.size = sizeof ps};
        ck_assert_int_eq(jr_group_peer(g, i, &ps), 0);
        if (ps.name && strcmp(ps.name, jr_sim_name(c->sim, m)) == 0) return ps;
    }
    ck_abort_msg("member not found");
    return (jr_peer_status){0};
}

static uint64_t term_of(cluster *c, unsigned i, uint64_t gid)
{
    jr__raft *r = raft(c, i, gid);
    return r ? jr__raft_term(r) : 0;
}

/* Sum of the terms of every group but `except` on every node (must not move). */
static uint64_t other_terms(cluster *c, uint64_t except)
{
    uint64_t t = 0;
    for (unsigned i = 0; i < N; i++)
        for (uint64_t gid = 1; gid <= G; gid++)
            if (gid != except) t += term_of(c, i, gid);
    return t;
}

/* Others quiet: every replica of every group but `except`. */
static int others_quiet(cluster *c, uint64_t except)
{
    for (unsigned i = 0; i < N; i++)
        for (uint64_t gid = 1; gid <= G; gid++) {
            jr__raft *r = raft(c, i, gid);
            if (gid != except && r && !jr__raft_quiet(r)) return 0;
        }
    return 1;
}

typedef struct quiet_at {
    cluster *c;
    unsigned node;
    uint64_t gid;
} quiet_at;

static int is_quiet(void *arg, jr_sim *sim)
{
    quiet_at *q = arg;
    (void)sim;
    jr__raft *r = raft(q->c, q->node, q->gid);
    return r && jr__raft_quiet(r);
}

START_TEST(a_follower_closing_its_replica_is_noticed_by_the_quiet_leader)
{
    cluster c;
    setup(&c, 1);
    const uint64_t gid = 1;
    unsigned l = (unsigned)ready_leader(&c, gid), f = (l + 1) % N, o = (l + 2) % N;
    uint64_t terms = other_terms(&c, gid), term = term_of(&c, l, gid);
    ck_assert(peer_status(&c, l, gid, f).current);

    jr_group_close(grp(&c, f, gid));
    jr_sim_run_for(c.sim, 2 * HB);
    /* told at the next heartbeat: the leader woke and no longer counts the follower */
    ck_assert_uint_eq(node(&c, f)->live.stats.gone_sent, 1);
    ck_assert_uint_eq(node(&c, l)->live.stats.gone_wakes, 1);
    ck_assert_int_eq(jr__raft_role(raft(&c, l, gid)), JR_LEADER);
    jr_sim_run_for(c.sim, 2 * ET);
    jr_peer_status ps = peer_status(&c, l, gid, f);
    ck_assert_msg(!ps.current && ps.last_seen_ns >= ET,
                  "closed replica still current (seen %llu ms ago)",
                  (unsigned long long)(ps.last_seen_ns / MS));
    ck_assert(peer_status(&c, l, gid, o).current);

    /* the group goes quiet again without it, and says so; it still takes writes */
    quiet_at q = {&c, l, gid};
    ck_assert_int_eq(jr_sim_run_until(c.sim, is_quiet, &q, 20 * ET), 0);
    jr_sim_run_for(c.sim, 5 * ET);
    ck_assert(jr__raft_quiet(raft(&c, l, gid)));
    ps = peer_status(&c, l, gid, f);
    ck_assert_msg(!ps.current && ps.last_seen_ns >= ET,
                  "closed replica current again once quiet (seen %llu ms ago)",
                  (unsigned long long)(ps.last_seen_ns / MS));
    ck_assert(peer_status(&c, l, gid, o).current);
    /* woken by the news, and once more if it went quiet before the member's silence showed in
     * its progress; then left alone */
    uint64_t wakes = node(&c, l)->live.stats.gone_wakes;
    ck_assert_uint_le(wakes, 3);
    jr_sim_run_for(c.sim, 10 * ET);
    ck_assert_uint_eq(node(&c, l)->live.stats.gone_wakes, wakes);
    ck_assert(jr__raft_quiet(raft(&c, l, gid)));
    ck_assert_int_eq(write1(&c, gid), 0);
    ck_assert_uint_eq(term_of(&c, l, gid), term);
    /* nobody else moved */
    ck_assert_uint_eq(other_terms(&c, gid), terms);
    ck_assert(others_quiet(&c, gid));
    jr_sim_free(c.sim);
}
END_TEST

static int leads_not(void *arg, jr_sim *sim)
{
    quiet_at *q = arg;
    (void)sim;
    jr__raft *r = raft(q->c, q->node, q->gid);
    return !r || jr__raft_role(r) != JR_LEADER;
}

START_TEST(a_quiet_leader_whose_followers_closed_their_replicas_steps_down)
{
    cluster c;
    setup(&c, 2);
    const uint64_t gid = 2;
    unsigned l = (unsigned)ready_leader(&c, gid);
    uint64_t terms = other_terms(&c, gid);
    jr_group_close(grp(&c, (l + 1) % N, gid));
    jr_group_close(grp(&c, (l + 2) % N, gid));
    quiet_at q = {&c, l, gid};
    uint64_t t0 = jr_sim_now(c.sim);
    /* the first news wakes it, and its check-quorum runs as for any awake leader: it steps
     * down within two election timeouts of the wake */
    ck_assert_int_eq(jr_sim_run_until(c.sim, leads_not, &q, 2 * ET + 4 * HB), 0);
    fprintf(stderr,
            "replica_close: both followers closed: the quiet leader stepped down after "
            "%llu ms\n",
            (unsigned long long)((jr_sim_now(c.sim) - t0) / MS));
    ck_assert_uint_eq(other_terms(&c, gid), terms);
    jr_sim_run_for(c.sim, 3 * ET);
    ck_assert(others_quiet(&c, gid));
    ck_assert_uint_eq(other_terms(&c, gid), terms);
    jr_sim_free(c.sim);
}
END_TEST

typedef struct back {
    cluster *c;
    unsigned l, f;
    uint64_t gid, applied;
} back;

static int caught_up_and_current(void *arg, jr_sim *sim)
{
    back *b = arg;
    (void)sim;
    return b->c->reps[b->f][b->gid].applied >= b->applied &&
           peer_status(b->c, b->l, b->gid, b->f).current;
}

START_TEST(a_reopened_replica_catches_up_and_counts_again_without_an_election)
{
    cluster c;
    setup(&c, 3);
    const uint64_t gid = 3;
    unsigned l = (unsigned)ready_leader(&c, gid), f = (l + 1) % N;
    uint64_t terms = other_terms(&c, gid), term = term_of(&c, l, gid);
    jr_group_close(grp(&c, f, gid));
    quiet_at q = {&c, l, gid};
    jr_sim_run_for(c.sim, 3 * HB);
    ck_assert_int_eq(jr_sim_run_until(c.sim, is_quiet, &q, 20 * ET), 0);
    ck_assert(!peer_status(&c, l, gid, f).current);
    ck_assert_int_eq(write1(&c, gid), 0); /* committed by the leader and the other follower */
    ck_assert_int_eq(jr_sim_run_until(c.sim, is_quiet, &q, 20 * ET), 0);
    jr_sim_run_for(c.sim, 2 * ET);
    ck_assert(jr__raft_quiet(raft(&c, l, gid)));

    /* reopened while the leader is quiet and takes it for down: it applies its log again,
     * wakes, and its first pre-vote request wakes the leader, which brings it up to date */
    open_group(&c, f, gid);
    back b = {&c, l, f, gid, c.reps[l][gid].applied};
    uint64_t t0 = jr_sim_now(c.sim);
    ck_assert_int_eq(jr_sim_run_until(c.sim, caught_up_and_current, &b, 10 * ET), 0);
    fprintf(stderr, "replica_close: reopened replica current again after %llu ms\n",
            (unsigned long long)((jr_sim_now(c.sim) - t0) / MS));
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_quiet, &c, 20 * ET), 0);
    jr_sim_run_for(c.sim, 5 * ET);
    ck_assert(peer_status(&c, l, gid, f).current); /* counted while quiet again */
    ck_assert_uint_eq(term_of(&c, l, gid), term);
    ck_assert_int_eq(ready_leader(&c, gid), (int)l);
    ck_assert_uint_eq(other_terms(&c, gid), terms);
    jr_sim_free(c.sim);
}
END_TEST

START_TEST(a_node_restarted_without_one_of_its_groups_is_not_counted_in_that_group)
{
    cluster c;
    setup(&c, 4);
    /* a group that f follows, and another one led by the same node that f will reopen */
    unsigned f = 0;
    uint64_t gid = 0, other = 0;
    for (uint64_t k = 1; k <= G && !other; k++) {
        int l = ready_leader(&c, k);
        if (l == (int)f) continue;
        if (!gid)
            gid = k;
        else if (l == ready_leader(&c, gid))
            other = k;
    }
    ck_assert(gid && other);
    unsigned l = (unsigned)ready_leader(&c, gid);
    ck_assert_int_eq(jr_sim_crash(c.sim, f), 0);
    jr_sim_run_for(c.sim, 20 * MS);
    ck_assert_int_eq(jr_sim_restart(c.sim, f), 0);
    for (uint64_t k = 1; k <= G; k++)
        if (k != gid) open_group(&c, f, k);
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_led, &c, 20 * ET), 0);
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_quiet, &c, 40 * ET), 0);
    jr_sim_run_for(c.sim, 5 * ET);
    ck_assert_int_eq(ready_leader(&c, gid), (int)l);
    jr_peer_status ps = peer_status(&c, l, gid, f);
    ck_assert_msg(!ps.current, "a replica its node does not host counts (seen %llu ms ago)",
                  (unsigned long long)(ps.last_seen_ns / MS));
    ck_assert(peer_status(&c, l, other, f).current);
    jr_sim_free(c.sim);
}
END_TEST

/* Opens gid on node i as a joiner: its server is not among the voters it is given (the other
 * nodes), so the replica starts empty and learns the group from its leader. */
static void open_joiner(cluster *c, unsigned i, uint64_t gid)
{
    rep *r = &c->reps[i][gid];
    memset(r, 0, sizeof *r);
    r->gid = gid;
    const char *voters[N - 1];
    size_t nv = 0;
    for (unsigned k = 0; k < N; k++)
        if (k != i) voters[nv++] = jr_sim_name(c->sim, k);
    c->fsms[i][gid] = (jr_fsm){.version = JR_FSM_VERSION, .ctx = r, .apply = apply};
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = gid;
    gc.voters = voters;
    gc.nvoters = nv;
    gc.fsm = &c->fsms[i][gid];
    jr_group *g;
    ck_assert_int_eq(jr_group_open(node(c, i), &gc, &g), 0);
}

/* A member's server that had not opened its replica when the group went quiet (it applied the
 * assignment late) answers the leader's listing as not hosting the group; the listing is
 * repeated until it does, so the empty replica it opens later hears from its quiet leader and
 * is brought up to date without a write to wake the group. */
START_TEST(a_replica_opened_after_its_quiet_leader_listed_it_is_brought_up_to_date)
{
    cluster c;
    memset(&c, 0, sizeof c);
    c.sim = sg_new(N, 5);
    const unsigned f = 2;
    const uint64_t gid = 5;
    for (unsigned i = 0; i < N; i++)
        for (uint64_t k = 1; k <= G; k++)
            if (i != f || k != gid) open_group(&c, i, k);
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_led, &c, 40 * ET), 0);
    for (uint64_t k = 1; k <= G; k++) ck_assert_int_eq(write1(&c, k), 0);
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_quiet, &c, 20 * ET), 0);
    jr_sim_run_for(c.sim, 5 * ET);
    unsigned l = (unsigned)ready_leader(&c, gid);
    ck_assert(jr__raft_quiet(raft(&c, l, gid)));
    ck_assert(!peer_status(&c, l, gid, f).current);
    uint64_t terms = other_terms(&c, gid), term = term_of(&c, l, gid);

    open_joiner(&c, f, gid);
    back b = {&c, l, f, gid, c.reps[l][gid].applied};
    uint64_t t0 = jr_sim_now(c.sim);
    ck_assert_int_eq(jr_sim_run_until(c.sim, caught_up_and_current, &b, 10 * ET), 0);
    fprintf(stderr, "replica_close: replica opened late current after %llu ms\n",
            (unsigned long long)((jr_sim_now(c.sim) - t0) / MS));
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_quiet, &c, 20 * ET), 0);
    ck_assert_uint_eq(term_of(&c, l, gid), term);
    ck_assert_uint_eq(other_terms(&c, gid), terms);
    jr_sim_free(c.sim);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("replica_close");
    TCase *tc = tcase_create("replica_close");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_follower_closing_its_replica_is_noticed_by_the_quiet_leader);
    tcase_add_test(tc, a_quiet_leader_whose_followers_closed_their_replicas_steps_down);
    tcase_add_test(tc, a_reopened_replica_catches_up_and_counts_again_without_an_election);
    tcase_add_test(tc, a_node_restarted_without_one_of_its_groups_is_not_counted_in_that_group);
    tcase_add_test(tc, a_replica_opened_after_its_quiet_leader_listed_it_is_brought_up_to_date);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
