/*
 * Wall-clock time end to end (jetraft.h "Stream time", lib/stream/clock.h): a stream's creation
 * time is the meta leader's wall clock and every server reports the same one, also after
 * restarts; messages carry the stream leader's wall clock, identical on every replica; wall
 * clocks that jump — forwards or backwards, on the leader or on every server, with a failover
 * meanwhile — neither expire a stream's messages at once nor reorder timestamps nor stop
 * expiry; a host without a wall clock falls back to its monotonic clock. A monotonic clock
 * that runs in the last minutes before 2^64 wraps no deadline (util/deadline.h): a publish with
 * a timeout far past 2^64 neither times out at once nor stalls, and one with a timeout that
 * fits times out at its deadline, not before it and not never.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define MIN (60 * SEC)
#define HOUR (60 * MIN)

static e2e c;

static void start(int no_wall)
{
    memset(&c, 0, sizeof c);
    c.no_wall = no_wall;
    ck_assert_int_eq(e2e_new(&c, 3, 777, 1000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
}

static void teardown(void)
{
    e2e_free(&c);
}

/* Adds stream name on subject (R3, max_age age_ns) and waits for all replicas current. */
static int make(const char *name, const char *subject, uint64_t age_ns)
{
    const char *subj[] = {subject};
    jr_stream_config cfg;
    e2e_config(&cfg, name, subj, 1, 3);
    cfg.max_age_ns = age_ns;
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add %s: %s", name, r.msg);
    int l = e2e_wait_stream(&c, 0, name, 2, 10 * SEC);
    ck_assert_int_ge(l, 0);
    return l;
}

static uint64_t ts_of(unsigned via, const char *name, uint64_t seq)
{
    e2e_res r;
    ck_assert_int_eq(e2e_msg_get(&c, via, name, seq, &r), 0);
    return r.ts;
}

static void set_all_walls(int64_t delta)
{
    for (unsigned i = 0; i < 3; i++)
        jr_sim_set_wall(c.sim, i, jr_sim_wall(c.sim, i) + (uint64_t)delta);
}

START_TEST(creation_time_is_the_meta_leaders_wall_clock_everywhere)
{
    start(0);
    /* servers whose clocks disagree a little: the meta leader's is the one */
    jr_sim_set_wall(c.sim, 1, jr_sim_wall(c.sim, 1) + 3 * SEC);
    jr_sim_set_wall(c.sim, 2, jr_sim_wall(c.sim, 2) - 2 * SEC);
    int m = e2e_meta_leader(&c);
    ck_assert_int_ge(m, 0);
    uint64_t before = jr_sim_wall(c.sim, (unsigned)m);
    make("ORDERS", "orders.>", 0);
    e2e_res r;
    ck_assert_int_eq(e2e_info(&c, 0, "ORDERS", &r), 0);
    uint64_t created = r.created_ns;
    ck_assert_uint_ge(created, before);
    ck_assert_uint_le(created, before + SEC); /* placed within a second of the call */
    for (unsigned i = 1; i < 3; i++) {
        ck_assert_int_eq(e2e_info(&c, i, "ORDERS", &r), 0);
        ck_assert_uint_eq(r.created_ns, created);
    }
    /* an identical re-add is the same stream, created then */
    jr_sim_run_for(c.sim, 5 * SEC);
    const char *subj[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 3);
    ck_assert_int_eq(e2e_add(&c, 2, &cfg, NULL), 0);
    ck_assert_int_eq(e2e_info(&c, 2, "ORDERS", &r), 0);
    ck_assert_uint_eq(r.created_ns, created);
    /* every server restarted: the meta log replays the time */
    for (unsigned i = 0; i < 3; i++) ck_assert_int_eq(jr_sim_crash(c.sim, i), 0);
    for (unsigned i = 0; i < 3; i++) ck_assert_int_eq(e2e_restart(&c, i), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 20 * SEC), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 1, "ORDERS", 2, 20 * SEC), 0);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_int_eq(e2e_info(&c, i, "ORDERS", &r), 0);
        ck_assert_uint_eq(r.created_ns, created);
    }
}
END_TEST

START_TEST(messages_carry_the_leaders_wall_clock_on_every_replica)
{
    start(0);
    int l = make("ORDERS", "orders.>", 0);
    unsigned via = (unsigned)(l + 1) % 3;
    /* the followers' clocks are off a little; the leader's decides */
    jr_sim_set_wall(c.sim, via, jr_sim_wall(c.sim, via) + 400 * MS);
    uint64_t before = jr_sim_wall(c.sim, (unsigned)l);
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(e2e_publish(&c, via, "orders.new", "x", 1, NULL, NULL), 0);
        jr_sim_run_for(c.sim, 100 * MS);
    }
    uint64_t after = jr_sim_wall(c.sim, (unsigned)l);
    uint64_t prev = 0;
    for (uint64_t seq = 1; seq <= 20; seq++) {
        uint64_t ts = ts_of(via, "ORDERS", seq);
        ck_assert_uint_ge(ts, before);
        ck_assert_uint_le(ts, after);
        ck_assert_uint_gt(ts, prev); /* 100 ms apart */
        prev = ts;
    }
    e2e_res r;
    ck_assert_int_eq(e2e_info(&c, 0, "ORDERS", &r), 0);
    ck_assert_uint_eq(r.state.first_ts, ts_of(0, "ORDERS", 1));
    ck_assert_uint_eq(r.state.last_ts, prev);
    /* every replica stores the same timestamps (the checksums cover them) */
    jr_sim_run_for(c.sim, SEC);
    uint64_t sums[3][20];
    for (unsigned i = 0; i < 3; i++)
        ck_assert_int_eq(e2e_checksums(&c, i, "ORDERS", sums[i], 20), 20);
    ck_assert_int_eq(memcmp(sums[0], sums[1], sizeof sums[0]), 0);
    ck_assert_int_eq(memcmp(sums[0], sums[2], sizeof sums[0]), 0);
}
END_TEST

/* Publishes n messages on node via, 1 s apart. */
static void publish_n(unsigned via, int n)
{
    for (int i = 0; i < n; i++) {
        e2e_res r;
        ck_assert_int_eq(e2e_publish(&c, via, "ev.x", "x", 1, NULL, &r), 0);
        jr_sim_run_for(c.sim, SEC);
    }
}

static uint64_t msgs_on(unsigned i)
{
    jr_stream_state st;
    ck_assert_int_eq(e2e_state(&c, i, "EV", &st), 0);
    return st.msgs;
}

START_TEST(a_forward_jump_on_the_leader_does_not_expire_everything)
{
    start(0);
    int l = make("EV", "ev.>", MIN);
    unsigned via = (unsigned)(l + 1) % 3;
    publish_n(via, 10);
    uint64_t last_before = ts_of(via, "EV", 10);
    /* the leader's wall clock jumps an hour ahead */
    jr_sim_set_wall(c.sim, (unsigned)l, jr_sim_wall(c.sim, (unsigned)l) + (uint64_t)HOUR);
    publish_n(via, 1);
    uint64_t ts = ts_of(via, "EV", 11);
    ck_assert_uint_gt(ts, last_before);
    ck_assert_uint_lt(ts, last_before + 2 * SEC); /* not an hour later */
    ck_assert_uint_eq(msgs_on((unsigned)l), 11);
    /* half a max_age later nothing expired on any replica (stream time ran at most 17/16) */
    jr_sim_run_for(c.sim, 25 * SEC);
    for (unsigned i = 0; i < 3; i++) ck_assert_uint_eq(msgs_on(i), 11);
    /* expiry still happens, at (nearly) the real rate: all gone a little after max_age */
    jr_sim_run_for(c.sim, 50 * SEC);
    for (unsigned i = 0; i < 3; i++) ck_assert_uint_eq(msgs_on(i), 0);
}
END_TEST

START_TEST(a_backward_jump_keeps_timestamps_ordered_and_expiry_going)
{
    start(0);
    int l = make("EV", "ev.>", MIN);
    unsigned via = (unsigned)(l + 1) % 3;
    publish_n(via, 5);
    uint64_t last_before = ts_of(via, "EV", 5);
    set_all_walls(-(int64_t)HOUR); /* every server steps back an hour */
    publish_n(via, 5);
    uint64_t prev = last_before;
    for (uint64_t seq = 6; seq <= 10; seq++) {
        uint64_t ts = ts_of(via, "EV", seq);
        ck_assert_uint_gt(ts, prev); /* later, not an hour earlier */
        prev = ts;
    }
    ck_assert_uint_lt(prev, last_before + 6 * SEC);
    /* messages expire anyway, at 15/16 of the real rate: gone 80 s after the last one */
    jr_sim_run_for(c.sim, 80 * SEC);
    for (unsigned i = 0; i < 3; i++) ck_assert_uint_eq(msgs_on(i), 0);
}
END_TEST

START_TEST(a_failover_after_a_cluster_wide_jump_keeps_absorbing_it)
{
    start(0);
    int l = make("EV", "ev.>", MIN);
    unsigned via = (unsigned)(l + 1) % 3;
    publish_n(via, 10);
    set_all_walls((int64_t)HOUR); /* an NTP step on every server */
    publish_n(via, 2);
    /* the leader fails; a follower takes over with the anchor it kept */
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)l), 0);
    int l2 = e2e_wait_stream(&c, via, "EV", 1, 20 * SEC);
    ck_assert_int_ge(l2, 0);
    ck_assert_int_ne(l2, l);
    publish_n(via, 1);
    uint64_t ts = ts_of(via, "EV", 13);
    ck_assert_uint_lt(ts, ts_of(via, "EV", 12) + 10 * SEC); /* not an hour later */
    ck_assert_uint_eq(msgs_on(via), 13);
    /* the old leader comes back with its clock two hours behind; made leader, it cannot take
     * stream time back */
    ck_assert_int_eq(e2e_restart(&c, (unsigned)l), 0);
    jr_sim_set_wall(c.sim, (unsigned)l, jr_sim_wall(c.sim, (unsigned)l) - 2 * (uint64_t)HOUR);
    ck_assert_int_ge(e2e_wait_stream(&c, via, "EV", 2, 20 * SEC), 0);
    e2e_res r;
    ck_assert_msg(e2e_stepdown(&c, via, "EV", jr_sim_name(c.sim, (unsigned)l), &r) == 0,
                  "stepdown: %s", r.msg);
    ck_assert_int_eq(e2e_replica_leader(&c, via, "EV"), l);
    publish_n(via, 1);
    ck_assert_uint_ge(ts_of(via, "EV", 14), ts);
    ck_assert_uint_eq(msgs_on((unsigned)l), 14);
}
END_TEST

START_TEST(a_host_without_a_wall_clock_uses_its_monotonic_clock)
{
    start(1);
    uint64_t before = jr_sim_now(c.sim);
    int l = make("EV", "ev.>", 0);
    unsigned via = (unsigned)(l + 1) % 3;
    publish_n(via, 1);
    uint64_t after = jr_sim_now(c.sim);
    uint64_t ts = ts_of(via, "EV", 1);
    ck_assert_uint_ge(ts, before);
    ck_assert_uint_le(ts, after);
    e2e_res r;
    ck_assert_int_eq(e2e_info(&c, 0, "EV", &r), 0);
    ck_assert_uint_ge(r.created_ns, before);
    ck_assert_uint_le(r.created_ns, after);
}
END_TEST

/* Hosts whose monotonic clock is the fixture's plus END_OFF: at the fixture's start (1 s) every
 * node's now() is END_LEFT before 2^64. arm() takes the node's deadlines back to the fixture's
 * clock ("never" stays never). The other fields pass through. */
#define END_LEFT (120 * SEC)
#define END_OFF (UINT64_MAX - END_LEFT - SEC)

static jr_host end_inner[3], end_host[3];

static uint64_t end_now(void *ctx)
{
    const jr_host *h = ctx;
    return h->now(h->ctx) + END_OFF;
}

static void end_arm(void *ctx, uint64_t deadline)
{
    const jr_host *h = ctx;
    h->arm(h->ctx, deadline == UINT64_MAX ? UINT64_MAX
                   : deadline > END_OFF   ? deadline - END_OFF
                                          : 0);
}

static int end_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt)
{
    const jr_host *h = ctx;
    return h->send(h->ctx, to, iov, iovcnt);
}

static void end_log(void *ctx, int level, const char *msg)
{
    const jr_host *h = ctx;
    h->log(h->ctx, level, msg);
}

static uint64_t end_wall(void *ctx)
{
    const jr_host *h = ctx;
    return h->wall(h->ctx);
}

static void near_end(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    end_inner[i] = *cfg->host;
    end_host[i] = end_inner[i];
    end_host[i].ctx = &end_inner[i];
    end_host[i].now = end_now;
    end_host[i].arm = end_arm;
    end_host[i].send = end_send;
    end_host[i].log = end_inner[i].log ? end_log : NULL;
    end_host[i].wall = end_inner[i].wall ? end_wall : NULL;
    cfg->host = &end_host[i];
}

/* Node i's monotonic clock now. */
static uint64_t end_clock(unsigned i)
{
    return end_now(&end_inner[i]);
}

/* Opens the cluster with the clock END_LEFT before 2^64 and request_timeout_ms timeout_ms; adds
 * an R3 stream END on end.> and returns a server that does not lead it. */
static unsigned start_near_end(uint32_t timeout_ms)
{
    memset(&c, 0, sizeof c);
    c.configure_more = near_end;
    ck_assert_int_eq(e2e_new(&c, 3, 778, timeout_ms), 0);
    ck_assert_uint_ge(end_clock(0), UINT64_MAX - END_LEFT);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
    int l = make("END", "end.>", 0);
    return (unsigned)(l + 1) % 3;
}

/* Publishes through via with timeout_ms (0: the node's) and waits up to 10 s; its status. */
static int publish_timeout(unsigned via, const char *subject, uint32_t timeout_ms, e2e_res *r)
{
    jr_pub_opts o;
    jr_pub_opts_init(&o);
    o.timeout_ms = timeout_ms;
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_publish(e2e_node(&c, via), subject, NULL, 0, "x", 1, &o, e2e_pub_cb, r), 0);
    ck_assert_int_eq(e2e_wait(&c, r, 10 * SEC), 0);
    return r->status;
}

/* Three seconds before 2^64, a publish with a timeout of two seconds from server via, cut off
 * from the others, ends at its deadline: not before it, and not never. */
static void times_out_at_its_deadline(unsigned via)
{
    uint64_t left = UINT64_MAX - end_clock(via);
    ck_assert_uint_gt(left, 3 * SEC);
    jr_sim_run_for(c.sim, left - 3 * SEC);
    unsigned side[] = {via};
    ck_assert_int_eq(jr_sim_partition(c.sim, side, 1), 0);
    jr_pub_opts o;
    jr_pub_opts_init(&o);
    o.timeout_ms = 2000;
    o.msg_id = "end-2"; /* may be sent again to another leader: it waits for its deadline */
    e2e_res r;
    memset(&r, 0, sizeof r);
    uint64_t t0 = end_clock(via);
    ck_assert_int_eq(jr_publish(e2e_node(&c, via), "end.b", NULL, 0, "y", 1, &o, e2e_pub_cb, &r),
                     0);
    jr_sim_run_for(c.sim, 1900 * MS);
    ck_assert_msg(!r.done, "ended %" PRIu64 " ms after it started, status %d: %s",
                  (uint64_t)((end_clock(via) - t0) / MS), r.status, r.msg);
    ck_assert_int_eq(e2e_wait(&c, &r, 600 * MS), 0);
    ck_assert_msg(r.status == JR_ELEADERLOST || r.status == JR_ETIMEDOUT ||
                      r.status == JR_ENOLEADER,
                  "status %d: %s", r.status, r.msg);
    ck_assert_uint_lt(end_clock(via), UINT64_MAX - 400 * MS);
}

START_TEST(a_request_timeout_past_2_64_does_not_fire_at_once)
{
    /* request_timeout_ms of an hour: every request's default deadline (the add, the publish,
     * the leader's wait for its proposal) lies past 2^64 */
    unsigned via = start_near_end(3600u * 1000u);
    e2e_res r;
    ck_assert_msg(publish_timeout(via, "end.a", 0, &r) == 0, "publish: %d %s", r.status, r.msg);
    ck_assert_uint_eq(r.seq, 1);
    times_out_at_its_deadline(via);
}
END_TEST

START_TEST(a_publish_timeout_past_2_64_does_not_fire_at_once)
{
    unsigned via = start_near_end(1000);
    /* a timeout of 49 days: its deadline is "never", and it is stored like any other */
    e2e_res r;
    ck_assert_msg(publish_timeout(via, "end.a", UINT32_MAX, &r) == 0, "publish: %d %s", r.status,
                  r.msg);
    ck_assert_uint_eq(r.seq, 1);
    times_out_at_its_deadline(via);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream time");
    TCase *tc = tcase_create("time");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, creation_time_is_the_meta_leaders_wall_clock_everywhere);
    tcase_add_test(tc, messages_carry_the_leaders_wall_clock_on_every_replica);
    tcase_add_test(tc, a_forward_jump_on_the_leader_does_not_expire_everything);
    tcase_add_test(tc, a_backward_jump_keeps_timestamps_ordered_and_expiry_going);
    tcase_add_test(tc, a_failover_after_a_cluster_wide_jump_keeps_absorbing_it);
    tcase_add_test(tc, a_host_without_a_wall_clock_uses_its_monotonic_clock);
    tcase_add_test(tc, a_request_timeout_past_2_64_does_not_fire_at_once);
    tcase_add_test(tc, a_publish_timeout_past_2_64_does_not_fire_at_once);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
