/*
 * Streams end to end on a 3-node cluster (issue 4 §3..§7): deduplication across a leader
 * failover, limits and discard policies enforced identically on every replica, R1 on a
 * cluster, the meta leader failing during a stream's creation (the stream exists exactly once
 * or not at all, and the caller is told which), no meta leader (a bounded, clear error), bad
 * input (JR_EINVAL naming the field, JR_EMSGSIZE, malformed headers; nothing changes), the
 * admin calls, and catch-up of a replica from a snapshot plus message chunks.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "node/node.h"

static e2e c;

static void setup(void)
{
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 1234, 1000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
}

static void teardown(void)
{
    e2e_free(&c);
}

/* Adds stream `name` on `subject` with the given replicas (storage file), waits for a leader
 * with every replica current, returns the leader. */
static int make(const char *name, const char *subject, int replicas, jr_stream_config *tweak)
{
    const char *subj[] = {subject};
    jr_stream_config cfg;
    if (tweak) {
        cfg = *tweak;
    } else {
        jr_stream_config_init(&cfg);
    }
    cfg.name = name;
    cfg.subjects = subj;
    cfg.nsubjects = 1;
    cfg.replicas = replicas;
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add %s: %s", name, r.msg);
    int l = e2e_wait_stream(&c, 0, name, (size_t)replicas - 1, 10 * SEC);
    ck_assert_int_ge(l, 0);
    return l;
}

/* Every live replica of name has the same digest (after letting followers apply). */
static void replicas_identical(const char *name, int expect)
{
    uint64_t d[3];
    int ok = 0;
    for (int tries = 0; tries < 100 && !ok; tries++) {
        int have = 0;
        ok = 1;
        for (unsigned i = 0; i < 3; i++) {
            if (!e2e_node(&c, i) || !e2e_has_replica(&c, i, name)) continue;
            ck_assert_int_eq(e2e_digest(&c, i, name, &d[have]), 0);
            if (have && d[have] != d[0]) ok = 0;
            have++;
        }
        if (have != expect) ok = 0;
        if (!ok) jr_sim_run_for(c.sim, 50 * MS);
    }
    ck_assert_msg(ok, "replicas of %s differ (or %d expected)", name, expect);
}

START_TEST(dedup_across_leader_failover)
{
    int l = make("PAY", "pay.>", 3, NULL);
    int via = (l + 1) % 3;
    e2e_res r;
    ck_assert_int_eq(e2e_publish(&c, (unsigned)via, "pay.in", "10 EUR", 6, "pay-1", &r), 0);
    ck_assert_uint_eq(r.seq, 1);
    ck_assert_int_eq(r.duplicate, 0);
    ck_assert_int_eq(e2e_publish(&c, (unsigned)via, "pay.in", "20 EUR", 6, "pay-2", &r), 0);
    ck_assert_uint_eq(r.seq, 2);
    ck_assert_int_eq(e2e_publish(&c, (unsigned)via, "pay.in", "10 EUR", 6, "pay-1", &r), 0);
    ck_assert_uint_eq(r.seq, 1);
    ck_assert_int_eq(r.duplicate, 1);

    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)l), 0);
    int l2 = e2e_wait_stream(&c, (unsigned)via, "PAY", 1, 10 * SEC);
    ck_assert_int_ge(l2, 0);
    ck_assert_int_ne(l2, l);
    /* the retry of an acknowledged publish, after the failover: the original seq */
    ck_assert_int_eq(e2e_publish(&c, (unsigned)via, "pay.in", "20 EUR", 6, "pay-2", &r), 0);
    ck_assert_uint_eq(r.seq, 2);
    ck_assert_int_eq(r.duplicate, 1);
    ck_assert_int_eq(e2e_publish(&c, (unsigned)via, "pay.in", "30 EUR", 6, "pay-3", &r), 0);
    ck_assert_uint_eq(r.seq, 3);
    ck_assert_int_eq(r.duplicate, 0);
    ck_assert_int_eq(jr_sim_restart(c.sim, (unsigned)l), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, (unsigned)via, "PAY", 2, 10 * SEC), 0);
    replicas_identical("PAY", 3);
    ck_assert_int_eq(e2e_info(&c, (unsigned)l, "PAY", &r), 0);
    ck_assert_uint_eq(r.state.msgs, 3);
}
END_TEST

/* Idle streams cost nothing: once a stream's config is in its log and its stores are synced,
 * no replica keeps a timer; a new leader (a stepdown) is woken by its role change, finds nothing
 * due and goes idle again, and still serves publishes. */
START_TEST(an_idle_replica_keeps_no_timer)
{
    int l = make("IDLE", "idle.>", 3, NULL);
    e2e_res r;
    ck_assert_int_eq(e2e_publish(&c, (unsigned)l, "idle.a", "x", 1, NULL, &r), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_msg(e2e_timer_armed(&c, i, "IDLE") == 0, "replica on node %u has a timer", i);
    unsigned to = (unsigned)(l + 1) % 3;
    ck_assert_int_eq(e2e_stepdown(&c, 0, "IDLE", jr_node_name(e2e_node(&c, to)), &r), 0);
    int l2 = e2e_wait_stream(&c, 0, "IDLE", 2, 10 * SEC);
    ck_assert_int_eq(l2, (int)to);
    jr_sim_run_for(c.sim, 3 * SEC);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_msg(e2e_timer_armed(&c, i, "IDLE") == 0, "replica on node %u has a timer", i);
    ck_assert_int_eq(e2e_publish(&c, to, "idle.a", "y", 1, NULL, &r), 0);
    ck_assert_uint_eq(r.seq, 2);
}
END_TEST

START_TEST(limits_and_discard_are_identical_on_every_replica)
{
    e2e_res r;
    jr_stream_config t;
    jr_stream_config_init(&t);
    t.max_msgs = 100;
    t.max_msgs_per_subject = 10;
    make("OLD", "old.*", 3, &t);
    for (int i = 0; i < 300; i++) {
        char subj[32];
        snprintf(subj, sizeof subj, "old.s%d", i % 20);
        ck_assert_int_eq(e2e_publish(&c, (unsigned)(i % 3), subj, "x", 1, NULL, &r), 0);
        ck_assert_uint_eq(r.seq, (uint64_t)i + 1);
    }
    ck_assert_int_eq(e2e_info(&c, 1, "OLD", &r), 0);
    ck_assert_uint_eq(r.state.msgs, 100);
    ck_assert_uint_eq(r.state.first_seq, 201);
    ck_assert_uint_eq(r.state.last_seq, 300);
    ck_assert_uint_eq(r.state.num_subjects, 20);
    replicas_identical("OLD", 3);

    jr_stream_config_init(&t);
    t.max_msgs = 50;
    t.discard = JR_DISCARD_NEW;
    make("NEW", "new.>", 3, &t);
    for (int i = 0; i < 60; i++) {
        int st = e2e_publish(&c, 2, "new.x", "y", 1, NULL, &r);
        ck_assert_int_eq(st, i < 50 ? 0 : JR_ELIMIT);
        if (st) ck_assert_str_eq(r.msg, "maximum messages exceeded");
    }
    replicas_identical("NEW", 3);
    ck_assert_int_eq(e2e_info(&c, 0, "NEW", &r), 0);
    ck_assert_uint_eq(r.state.msgs, 50);

    /* max_age: idle streams expire too (the leader ticks) */
    jr_stream_config_init(&t);
    t.max_age_ns = 1 * SEC;
    make("AGE", "age.>", 3, &t);
    for (int i = 0; i < 10; i++) ck_assert_int_eq(e2e_publish(&c, 0, "age.x", "z", 1, NULL, &r), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    for (unsigned i = 0; i < 3; i++) {
        jr_stream_state st;
        ck_assert_int_eq(e2e_state(&c, i, "AGE", &st), 0);
        ck_assert_uint_eq(st.msgs, 0);
        ck_assert_uint_eq(st.last_seq, 10);
    }
    replicas_identical("AGE", 3);
}
END_TEST

START_TEST(r1_on_a_cluster)
{
    e2e_res r;
    int l = make("SOLO", "solo.>", 1, NULL);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_msg(e2e_publish(&c, i, "solo.x", "1", 1, NULL, &r) == 0, "via n%u: %s", i, r.msg);
        ck_assert_uint_eq(r.seq, i + 1);
        ck_assert_int_eq(e2e_has_replica(&c, i, "SOLO"), (int)i == l);
    }
    ck_assert_int_eq(e2e_info(&c, (unsigned)(l + 1) % 3, "SOLO", &r), 0);
    ck_assert_str_eq(r.leader, jr_sim_name(c.sim, (unsigned)l));
    ck_assert_uint_eq(r.nreplicas, 0);
    ck_assert_uint_eq(r.state.msgs, 3);
    /* losing another server changes nothing; losing its server stops it */
    int other = (l + 1) % 3;
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)other), 0);
    ck_assert_int_eq(e2e_publish(&c, (unsigned)(l + 2) % 3, "solo.x", "2", 1, NULL, &r), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)l), 0);
    /* the server that forwards does not know the holder died: the request goes there, the
     * holder stays silent and is given up for lost (the request may have been stored:
     * JR_ELEADERLOST, saying so), or no leader is found (JR_ENOQUORUM), bounded */
    uint64_t t0 = jr_sim_now(c.sim);
    int st = e2e_publish(&c, (unsigned)(l + 2) % 3, "solo.x", "3", 1, NULL, &r);
    ck_assert_msg(st == JR_ELEADERLOST || st == JR_ENOQUORUM, "%s", jr_err_name(st));
    if (st == JR_ELEADERLOST) ck_assert_ptr_nonnull(strstr(r.msg, "may or may not"));
    ck_assert_uint_le(jr_sim_now(c.sim) - t0, 3 * SEC);
    t0 = jr_sim_now(c.sim);
    st = e2e_publish(&c, (unsigned)(l + 2) % 3, "solo.x", "4", 1, NULL, &r);
    ck_assert_msg(st == JR_ELEADERLOST || st == JR_ENOQUORUM, "%s", jr_err_name(st));
    ck_assert_uint_le(jr_sim_now(c.sim) - t0, 3 * SEC);
}
END_TEST

/* The meta leader dies at `k` simulation steps after the add was asked on another node. */
static void creation_with_failover(int k)
{
    int ml = e2e_meta_leader(&c);
    ck_assert_int_ge(ml, 0);
    int via = (ml + 1) % 3;
    const char *subj[] = {"ship.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "SHIP", subj, 1, 3);
    e2e_res r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_stream_create(e2e_node(&c, (unsigned)via), &cfg, e2e_create_cb, &r), 0);
    for (int s = 0; s < k && !r.done; s++) jr_sim_step(c.sim);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)ml), 0);
    ck_assert_int_eq(e2e_wait(&c, &r, 20 * SEC), 0);
    fprintf(stderr, "meta leader n%d crashed %d steps into the creation: %s%s%s\n", ml, k,
            jr_err_name(r.status), r.status ? ": " : "", r.status ? r.msg : "");
    jr_sim_run_for(c.sim, 500 * MS);
    ck_assert_int_eq(jr_sim_restart(c.sim, (unsigned)ml), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_msg(e2e_meta_has(&c, i, "SHIP") == (r.status == 0),
                      "k=%d: n%u's meta state disagrees with the caller's status %s (%s)", k, i,
                      jr_err_name(r.status), r.msg);
        ck_assert_uint_eq(e2e_meta_streams(&c, i), r.status == 0 ? 1 : 0);
    }
    if (r.status == 0) {
        /* this request created it, whichever of its attempts committed */
        ck_assert_msg(r.created, "k=%d: a stream created by this request reported as existing", k);
        ck_assert_int_ge(e2e_wait_stream(&c, (unsigned)via, "SHIP", 2, 10 * SEC), 0);
        for (unsigned i = 0; i < 3; i++) ck_assert(e2e_has_replica(&c, i, "SHIP"));
        /* asking again is idempotent, and says the stream existed */
        memset(&r, 0, sizeof r);
        ck_assert_int_eq(jr_stream_create(e2e_node(&c, (unsigned)ml), &cfg, e2e_create_cb, &r), 0);
        ck_assert_int_eq(e2e_wait(&c, &r, 10 * SEC), 0);
        ck_assert_int_eq(r.status, 0);
        ck_assert_int_eq(r.created, 0);
        ck_assert_uint_eq(e2e_meta_streams(&c, 0), 1);
    }
}

/* A server just restarted, whose meta state has not applied its log yet, does not answer "not
 * found" for a stream that exists: it looks the stream up again once its state caught up. A
 * stream nobody created is still "not found", from a server whose meta state is current. */
START_TEST(a_restarted_server_does_not_call_an_existing_stream_unknown)
{
    e2e_res r;
    make("BACK", "back.>", 3, NULL);
    ck_assert_int_eq(e2e_publish(&c, 0, "back.x", "1", 1, NULL, &r), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    ck_assert_int_eq(e2e_restart(&c, 2), 0);
    ck_assert_msg(e2e_info(&c, 2, "BACK", &r) == 0, "%s", r.msg);
    ck_assert_uint_eq(r.state.msgs, 1);
    ck_assert_int_eq(e2e_msg_get(&c, 2, "BACK", 1, &r), 0);
    ck_assert_int_eq(e2e_info(&c, 2, "NOPE", &r), JR_ENOTFOUND);
    ck_assert_str_eq(r.msg, "stream 'NOPE' not found");
}
END_TEST

START_TEST(meta_leader_failover_during_creation)
{
    creation_with_failover(_i);
}
END_TEST

/* JR_ENOQUORUM says nothing took effect: a publish its leader took but cannot commit (its
 * followers are cut off, it has not stepped down yet) ends with JR_ETIMEDOUT, which says the
 * message may still be stored, and the entry is indeed in the leader's log. */
START_TEST(a_publish_the_leader_took_is_never_enoquorum)
{
    int l = make("NQ", "nq.>", 3, NULL);
    jr_node *ln = e2e_node(&c, (unsigned)l);
    jr_group *g = e2e_group(&c, (unsigned)l, "NQ");
    ck_assert_ptr_nonnull(g);
    jr_group_status before = {.size = sizeof before}, after = {.size = sizeof after};
    ck_assert_int_eq(jr_group_status_get(g, &before), 0);
    unsigned side[] = {(unsigned)l};
    ck_assert_int_eq(jr_sim_partition(c.sim, side, 1), 0);
    jr_pub_opts o;
    jr_pub_opts_init(&o);
    o.timeout_ms = 40; /* shorter than the election timeout: the leader still leads */
    e2e_res r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_publish(ln, "nq.a", NULL, 0, "x", 1, &o, e2e_pub_cb, &r), 0);
    ck_assert_int_eq(e2e_wait(&c, &r, 5 * SEC), 0);
    ck_assert_msg(r.status == JR_ETIMEDOUT, "%s: %s", jr_err_name(r.status), r.msg);
    ck_assert_msg(strstr(r.msg, "may or may not"), "%s", r.msg);
    ck_assert_int_eq(jr_group_status_get(g, &after), 0);
    ck_assert_int_eq(after.role, JR_LEADER);
    ck_assert_uint_gt(after.last_index, before.last_index); /* it reached the leader's log */
    ck_assert_uint_eq(after.commit_index, before.commit_index);
    jr_sim_heal(c.sim);
}
END_TEST

/* Publishes in flight, each with its outcome and when its callback ran (simulated time). */
#define BURST 300
static e2e_res burst[BURST];
static uint64_t burst_at[BURST];

static void burst_cb(void *arg, int status, const jr_pub_ack *ack)
{
    e2e_pub_cb(arg, status, ack);
    burst_at[(e2e_res *)arg - burst] = jr_sim_now(c.sim);
}

static int burst_done(void *arg, jr_sim *sim)
{
    (void)sim;
    for (int i = 0; i < *(int *)arg; i++)
        if (!burst[i].done) return 0;
    return 1;
}

/* A publish at its stream's leader waits for its deadline on the deadline queue of its
 * timeout (js.h jr__js_timer_arm_queued), not on the node's timer heap: a burst of publishes
 * arms no heap timer per publish (so their acks cancel none), and every one is acknowledged. */
START_TEST(publishes_at_the_leader_arm_no_heap_timer_each)
{
    int l = make("HQ", "hq.>", 3, NULL);
    jr_node *ln = e2e_node(&c, (unsigned)l);
    memset(burst, 0, sizeof burst);
    uint64_t arms = ln->timers.seq;
    size_t len = ln->timers.len;
    for (int i = 0; i < BURST; i++)
        ck_assert_int_eq(jr_publish(ln, "hq.a", NULL, 0, "x", 1, NULL, burst_cb, &burst[i]), 0);
    ck_assert_msg(ln->timers.seq - arms <= 2, "%" PRIu64 " heap arms for %d publishes",
                  ln->timers.seq - arms, BURST);
    ck_assert_msg(ln->timers.len <= len + 2, "heap grew from %zu to %zu timers", len,
                  ln->timers.len);
    int n = BURST;
    ck_assert_int_eq(jr_sim_run_until(c.sim, burst_done, &n, 10 * SEC), 0);
    for (int i = 0; i < BURST; i++) {
        ck_assert_msg(burst[i].status == 0, "%d: %s", i, burst[i].msg);
        ck_assert_uint_eq(burst[i].seq, (uint64_t)i + 1);
    }
}
END_TEST

/* Deadlines on the queues fire when due, in deadline order, whatever the mix of timeouts: six
 * timeouts (one more than the queues: it goes on the heap), interleaved, at a leader cut off
 * from its followers; each publish ends with JR_ETIMEDOUT within a tick of its deadline. */
START_TEST(queued_deadlines_fire_on_time_in_any_mix_of_timeouts)
{
    int l = make("TQ", "tq.>", 3, NULL);
    jr_node *ln = e2e_node(&c, (unsigned)l);
    unsigned side[] = {(unsigned)l};
    ck_assert_int_eq(jr_sim_partition(c.sim, side, 1), 0);
    static const uint32_t ms[] = {40, 20, 40, 60, 30, 20, 70, 50, 40, 60, 30, 20};
    const int k = (int)(sizeof ms / sizeof ms[0]);
    memset(burst, 0, sizeof burst);
    uint64_t t0 = jr_sim_now(c.sim);
    for (int i = 0; i < k; i++) {
        jr_pub_opts o;
        jr_pub_opts_init(&o);
        o.timeout_ms = ms[i];
        ck_assert_int_eq(jr_publish(ln, "tq.a", NULL, 0, "x", 1, &o, burst_cb, &burst[i]), 0);
    }
    ck_assert_int_eq(jr_sim_run_until(c.sim, burst_done, (void *)&k, 5 * SEC), 0);
    for (int i = 0; i < k; i++) {
        ck_assert_msg(burst[i].status == JR_ETIMEDOUT, "%d: %s: %s", i,
                      jr_err_name(burst[i].status), burst[i].msg);
        uint64_t due = t0 + ms[i] * MS;
        ck_assert_msg(burst_at[i] >= due && burst_at[i] <= due + 5 * MS,
                      "%d (%u ms) ended %" PRId64 " ns after its deadline", i, ms[i],
                      (int64_t)(burst_at[i] - due));
        for (int j = 0; j < k; j++)
            if (ms[j] < ms[i]) ck_assert_uint_le(burst_at[j], burst_at[i]);
    }
    jr_sim_heal(c.sim);
}
END_TEST

START_TEST(no_meta_leader_is_a_bounded_clear_error)
{
    int ml = e2e_meta_leader(&c);
    int a = (ml + 1) % 3, b = (ml + 2) % 3;
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)ml), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)a), 0);
    const char *subj[] = {"x.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "X", subj, 1, 1);
    e2e_res r;
    uint64_t t0 = jr_sim_now(c.sim);
    int st = e2e_add(&c, (unsigned)b, &cfg, &r);
    /* JR_ETIMEDOUT when b asked the dead leader (no answer: as far as b knows it may have
     * proposed the add before it died) */
    ck_assert_msg(st == JR_ENOLEADER || st == JR_ENOQUORUM || st == JR_ETIMEDOUT, "%s: %s",
                  jr_err_name(st), r.msg);
    ck_assert_msg(strstr(r.msg, "meta"), "the message names the cause: %s", r.msg);
    ck_assert_uint_le(jr_sim_now(c.sim) - t0, 4 * SEC);
    ck_assert(!e2e_meta_has(&c, (unsigned)b, "X"));
}
END_TEST

START_TEST(bad_input_changes_nothing)
{
    int l = make("BAD", "bad.>", 3, NULL);
    e2e_res r;
    ck_assert_int_eq(e2e_publish(&c, 0, "bad.ok", "1", 1, "first", &r), 0);
    uint64_t before;
    ck_assert_int_eq(e2e_digest(&c, (unsigned)l, "BAD", &before), 0);

    /* every config field: JR_EINVAL naming it */
    typedef struct bad {
        const char *field;
        jr_stream_config cfg;
    } bad;
    static const char *wild[] = {"a..b"};
    static const char *dup_subj[] = {"q.a", "q.a"};
    static const char *over[] = {"bad.x"};
    static const char *tags_bad[] = {"has space"};
    static char long_desc[5000];
    memset(long_desc, 'd', sizeof long_desc - 1);
    bad b[16];
    size_t nb = 0;
#define BAD(fieldname, stmt)                                                                       \
    do {                                                                                           \
        b[nb].field = fieldname;                                                                   \
        jr_stream_config_init(&b[nb].cfg);                                                         \
        b[nb].cfg.name = "Q";                                                                      \
        {                                                                                          \
            jr_stream_config *x = &b[nb].cfg;                                                      \
            stmt;                                                                                  \
        }                                                                                          \
        nb++;                                                                                      \
    } while (0)
    BAD("name", x->name = "A.B");
    BAD("name", x->name = "has space");
    BAD("name", x->name = "");
    BAD("subjects", (x->subjects = wild, x->nsubjects = 1));
    BAD("subjects", (x->subjects = dup_subj, x->nsubjects = 2));
    BAD("subjects", (x->subjects = over, x->nsubjects = 1)); /* overlaps BAD's */
    BAD("retention", x->retention = 7);
    BAD("discard", x->discard = 3);
    BAD("storage", x->storage = 9);
    BAD("replicas", x->replicas = 6);
    BAD("max_age_ns", x->max_age_ns = 1000);
    BAD("max_msgs", x->max_msgs = -5);
    BAD("description", x->description = long_desc);
    BAD("placement", x->placement = e2e_placement(NULL, tags_bad, 1));
    BAD("compression", x->compression = 4);
    BAD("sealed", x->sealed = 1);
    for (size_t i = 0; i < nb; i++) {
        int st = e2e_add(&c, (unsigned)(i % 3), &b[i].cfg, &r);
        ck_assert_msg(st == JR_EINVAL, "%s: %s (%s)", b[i].field, jr_err_name(st), r.msg);
        ck_assert_msg(strncmp(r.msg, b[i].field, strlen(b[i].field)) == 0,
                      "the message names '%s': %s", b[i].field, r.msg);
    }
    for (unsigned i = 0; i < 3; i++) ck_assert_uint_eq(e2e_meta_streams(&c, i), 1);

    /* publishes that must not change the stream */
    jr_stream_config t;
    jr_stream_config_init(&t);
    t.name = "BAD";
    static const char *bs[] = {"bad.>"};
    t.subjects = bs;
    t.nsubjects = 1;
    t.replicas = 3;
    t.max_msg_size = 100;
    ck_assert_msg(e2e_update(&c, 1, &t, &r) == 0, "update: %s", r.msg);
    jr_sim_run_for(c.sim, 500 * MS);
    ck_assert_int_eq(e2e_digest(&c, (unsigned)l, "BAD", &before), 0);
    char big[101];
    memset(big, 'b', sizeof big);
    ck_assert_int_eq(e2e_publish(&c, 0, "bad.x", big, 101, NULL, &r), JR_EMSGSIZE);
    ck_assert_int_eq(e2e_publish(&c, 0, "bad.x", big, 100, NULL, &r), 0);
    ck_assert_int_eq(e2e_digest(&c, (unsigned)l, "BAD", &before), 0);
    static char huge[2u << 20];
    ck_assert_int_eq(e2e_publish(&c, 1, "bad.x", huge, sizeof huge, NULL, &r), JR_EMSGSIZE);
    ck_assert_int_eq(e2e_publish(&c, 1, "bad.*", "w", 1, NULL, &r), JR_EINVAL);
    ck_assert_int_eq(e2e_publish(&c, 1, "nowhere.x", "n", 1, NULL, &r), JR_ENOSTREAM);
    ck_assert_str_eq(r.stream, "");
    const char hdr_bad[] = "NATS/1.0\r\nNo-Colon-Here\r\n\r\n";
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_publish(e2e_node(&c, 2), "bad.h", hdr_bad, sizeof hdr_bad - 1, "d", 1, NULL,
                                e2e_pub_cb, &r),
                     0);
    ck_assert_int_eq(e2e_wait(&c, &r, 10 * SEC), 0);
    ck_assert_int_eq(r.status, JR_EINVAL);
    const char hdr_ok[] = "NATS/1.0\r\nNats-Msg-Id: hdr-1\r\n\r\n";
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_publish(e2e_node(&c, 2), "bad.h", hdr_ok, sizeof hdr_ok - 1, "d", 1, NULL,
                                e2e_pub_cb, &r),
                     0);
    ck_assert_int_eq(e2e_wait(&c, &r, 10 * SEC), 0);
    ck_assert_int_eq(r.status, 0);
    uint64_t seq = r.seq;
    ck_assert_int_eq(e2e_publish(&c, 0, "bad.h", "d", 1, "hdr-1", &r), 0); /* header id */
    ck_assert_int_eq(r.duplicate, 1);
    ck_assert_uint_eq(r.seq, seq);
    ck_assert_int_eq(e2e_digest(&c, (unsigned)l, "BAD", &before), 0);

    /* expectations fail with distinct errors and store nothing */
    jr_pub_opts o;
    jr_pub_opts_init(&o);
    o.expected_last_seq = 1;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_publish(e2e_node(&c, 1), "bad.e", NULL, 0, "e", 1, &o, e2e_pub_cb, &r), 0);
    ck_assert_int_eq(e2e_wait(&c, &r, 10 * SEC), 0);
    ck_assert_int_eq(r.status, JR_EWRONGLASTSEQ);
    ck_assert_uint_eq(r.seq, seq);
    jr_pub_opts_init(&o);
    o.expected_stream = "OTHER";
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_publish(e2e_node(&c, 1), "bad.e", NULL, 0, "e", 1, &o, e2e_pub_cb, &r), 0);
    ck_assert_int_eq(e2e_wait(&c, &r, 10 * SEC), 0);
    ck_assert_int_eq(r.status, JR_EWRONGSTREAM);
    jr_pub_opts_init(&o);
    o.expected_last_msg_id = "nope";
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_publish(e2e_node(&c, 1), "bad.e", NULL, 0, "e", 1, &o, e2e_pub_cb, &r), 0);
    ck_assert_int_eq(e2e_wait(&c, &r, 10 * SEC), 0);
    ck_assert_int_eq(r.status, JR_EWRONGLASTMSGID);
    ck_assert_str_eq(r.last_msg_id, "hdr-1"); /* the last message's, from its header */
    jr_pub_opts_init(&o);
    o.expected_last_subject_seq = 0; /* bad.x has messages */
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_publish(e2e_node(&c, 1), "bad.x", NULL, 0, "e", 1, &o, e2e_pub_cb, &r), 0);
    ck_assert_int_eq(e2e_wait(&c, &r, 10 * SEC), 0);
    ck_assert_int_eq(r.status, JR_EWRONGLASTSUBJSEQ);
    /* an option string of a bad length ends the publish with JR_EINVAL naming it */
    static const char *const bad_names[] = {"msg_id", "expected_stream", "expected_last_msg_id"};
    char too_long[JR_STREAM_NAME_MAX + 2];
    memset(too_long, 'S', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = 0;
    for (int k = 0; k < 3; k++) {
        jr_pub_opts_init(&o);
        if (k == 0) o.msg_id = "";
        if (k == 1) o.expected_stream = too_long;
        if (k == 2) o.expected_last_msg_id = "";
        memset(&r, 0, sizeof r);
        ck_assert_int_eq(jr_publish(e2e_node(&c, 1), "bad.e", NULL, 0, "e", 1, &o, e2e_pub_cb, &r),
                         0);
        ck_assert_int_eq(e2e_wait(&c, &r, 10 * SEC), 0);
        ck_assert_int_eq(r.status, JR_EINVAL);
        ck_assert_msg(strncmp(r.msg, bad_names[k], strlen(bad_names[k])) == 0 &&
                          strstr(r.msg, ": must be 1..") != NULL,
                      "%s", r.msg);
    }
    jr_sim_run_for(c.sim, 200 * MS);
    jr_stream_state st;
    ck_assert_int_eq(e2e_state(&c, (unsigned)l, "BAD", &st), 0);
    ck_assert_uint_eq(st.last_seq, seq);
    replicas_identical("BAD", 3);

    /* API misuse is refused at once (no callback) */
    ck_assert_int_eq(jr_publish(NULL, "a", NULL, 0, "d", 1, NULL, e2e_pub_cb, &r), JR_EINVAL);
    ck_assert_int_eq(jr_publish(e2e_node(&c, 0), NULL, NULL, 0, "d", 1, NULL, e2e_pub_cb, &r),
                     JR_EINVAL);
    ck_assert_int_eq(jr_stream_add(e2e_node(&c, 0), NULL, e2e_admin_cb, &r), JR_EINVAL);
}
END_TEST

/* The result of jr_stream_subjects or jr_stream_deleted (the first 8 entries). */
typedef struct det_res {
    int done, status;
    uint64_t total, offset;
    size_t n;
    char subj[8][32];
    uint64_t msgs[8];
    jr_seq_range rg[8];
} det_res;

/* Records a details callback's status: 1 if it came with a page (status 0), and only then. */
static int det_status(det_res *d, int status, const void *page)
{
    ck_assert_msg(!d->done, "a callback ran twice");
    d->done = 1;
    d->status = status;
    ck_assert_int_eq(page != NULL, status == 0);
    return page != NULL;
}

static void subjects_cb(void *arg, int status, const char *msg, const jr_subjects_page *p)
{
    det_res *d = arg;
    (void)msg;
    if (!det_status(d, status, p)) return;
    d->total = p->total;
    d->offset = p->offset;
    d->n = p->nsubjects;
    for (size_t i = 0; i < p->nsubjects && i < 8; i++) {
        snprintf(d->subj[i], sizeof d->subj[i], "%s", p->subjects[i].subject);
        d->msgs[i] = p->subjects[i].msgs;
    }
}

static void deleted_cb(void *arg, int status, const char *msg, const jr_deleted_page *p)
{
    det_res *d = arg;
    (void)msg;
    if (!det_status(d, status, p)) return;
    d->total = p->total;
    d->n = p->nranges;
    for (size_t i = 0; i < p->nranges && i < 8; i++) d->rg[i] = p->ranges[i];
}

static int det_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((det_res *)arg)->done;
}

static int subjects(unsigned node, const char *name, const char *filter, uint64_t offset,
                    det_res *d)
{
    memset(d, 0, sizeof *d);
    int rc = jr_stream_subjects(e2e_node(&c, node), name, filter, offset, subjects_cb, d);
    if (rc) return rc;
    ck_assert_int_eq(jr_sim_run_until(c.sim, det_done, d, 10 * SEC), 0);
    return d->status;
}

static int deleted(unsigned node, const char *name, uint64_t after, det_res *d)
{
    memset(d, 0, sizeof *d);
    int rc = jr_stream_deleted(e2e_node(&c, node), name, after, deleted_cb, d);
    if (rc) return rc;
    ck_assert_int_eq(jr_sim_run_until(c.sim, det_done, d, 10 * SEC), 0);
    return d->status;
}

START_TEST(admin_calls)
{
    int l = make("ADM", "adm.>", 3, NULL);
    e2e_res r;
    for (int i = 0; i < 30; i++) {
        char subj[32], data[32];
        snprintf(subj, sizeof subj, "adm.%c", 'a' + i % 3);
        snprintf(data, sizeof data, "m%d", i);
        ck_assert_int_eq(e2e_publish(&c, (unsigned)(i % 3), subj, data, strlen(data), NULL, &r), 0);
    }
    /* get by seq and last by subject, from a non-leader */
    unsigned other = (unsigned)(l + 1) % 3;
    ck_assert_int_eq(e2e_msg_get(&c, other, "ADM", 5, &r), 0);
    ck_assert_str_eq(r.subject, "adm.b");
    ck_assert_int_eq(memcmp(r.data, "m4", 2), 0);
    ck_assert_str_eq(r.stream, "ADM");
    ck_assert_int_eq(e2e_get_last(&c, other, "ADM", "adm.c", &r), 0);
    ck_assert_uint_eq(r.seq, 30);
    ck_assert_int_eq(e2e_msg_get(&c, other, "ADM", 99, &r), JR_ENOTFOUND);
    ck_assert_int_eq(e2e_msg_get(&c, other, "ADM", 0, &r), JR_EINVAL); /* seqs start at 1 */
    ck_assert_str_eq(r.msg, "seq: must be at least 1");
    ck_assert_int_eq(e2e_get_last(&c, other, "ADM", "adm.zzz", &r), JR_ENOTFOUND);
    /* the first at or after a seq on a subject (adm.c is every third, from seq 3) */
    ck_assert_int_eq(e2e_get_next(&c, other, "ADM", 4, "adm.c", &r), 0);
    ck_assert_uint_eq(r.seq, 6);
    ck_assert_int_eq(e2e_get_next(&c, other, "ADM", 0, "adm.*", &r), 0);
    ck_assert_uint_eq(r.seq, 1);
    ck_assert_int_eq(e2e_get_next(&c, other, "ADM", 31, "adm.c", &r), JR_ENOTFOUND);
    ck_assert_int_eq(e2e_get_next(&c, other, "ADM", 1, "adm..x", &r), JR_EINVAL);
    /* delete one, purge a subject, keep the newest 5 */
    ck_assert_int_eq(e2e_msg_delete(&c, other, "ADM", 5, &r), 0);
    ck_assert_int_eq(e2e_msg_get(&c, other, "ADM", 5, &r), JR_ENOTFOUND);
    ck_assert_int_eq(e2e_msg_delete(&c, other, "ADM", 5, &r), JR_ENOTFOUND);
    /* the details: subjects with their counts, sorted, paged by offset; the deleted seqs */
    det_res d;
    ck_assert_int_eq(subjects(other, "ADM", NULL, 0, &d), 0);
    ck_assert_uint_eq(d.total, 3);
    ck_assert_uint_eq(d.n, 3);
    ck_assert_str_eq(d.subj[0], "adm.a");
    ck_assert_str_eq(d.subj[1], "adm.b");
    ck_assert_uint_eq(d.msgs[0], 10);
    ck_assert_uint_eq(d.msgs[1], 9); /* seq 5 went */
    ck_assert_uint_eq(d.msgs[2], 10);
    ck_assert_int_eq(subjects((unsigned)l, "ADM", "adm.b", 0, &d), 0);
    ck_assert_uint_eq(d.total, 1);
    ck_assert_str_eq(d.subj[0], "adm.b");
    ck_assert_int_eq(subjects(other, "ADM", "adm.*", 1, &d), 0);
    ck_assert_uint_eq(d.total, 3);
    ck_assert_uint_eq(d.offset, 1);
    ck_assert_uint_eq(d.n, 2);
    ck_assert_str_eq(d.subj[0], "adm.b");
    ck_assert_int_eq(subjects(other, "ADM", ">", 3, &d), 0);
    ck_assert_uint_eq(d.n, 0);
    ck_assert_int_eq(subjects(other, "ADM", "zzz.>", 0, &d), 0);
    ck_assert_uint_eq(d.total, 0);
    ck_assert_int_eq(subjects(other, "ADM", "adm..x", 0, &d), JR_EINVAL);
    ck_assert_int_eq(subjects(other, "NOPE", NULL, 0, &d), JR_ENOTFOUND);
    ck_assert_int_eq(deleted(other, "ADM", 0, &d), 0);
    ck_assert_uint_eq(d.total, 1);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_uint_eq(d.rg[0].first, 5);
    ck_assert_uint_eq(d.rg[0].last, 5);
    ck_assert_int_eq(deleted((unsigned)l, "ADM", 4, &d), 0);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_int_eq(deleted(other, "ADM", 5, &d), 0);
    ck_assert_uint_eq(d.n, 0);
    jr_purge_opts po;
    jr_purge_opts_init(&po);
    po.subject = "adm.a";
    ck_assert_int_eq(e2e_purge(&c, other, "ADM", &po, &r), 0);
    ck_assert_uint_eq(r.purged, 10);
    jr_purge_opts_init(&po);
    po.keep = 5;
    ck_assert_int_eq(e2e_purge(&c, other, "ADM", &po, &r), 0);
    ck_assert_uint_eq(r.purged, 14);
    ck_assert_int_eq(e2e_info(&c, other, "ADM", &r), 0);
    ck_assert_uint_eq(r.state.msgs, 5);
    replicas_identical("ADM", 3);
    ck_assert_int_eq(e2e_purge(&c, other, "ADM", NULL, &r), 0);
    ck_assert_uint_eq(r.purged, 5);
    ck_assert_int_eq(e2e_purge(&c, other, "NOPE", NULL, &r), JR_ENOTFOUND);

    /* stepdown to a named peer, then to the best one */
    ck_assert_msg(e2e_stepdown(&c, other, "ADM", jr_sim_name(c.sim, other), &r) == 0, "%s", r.msg);
    jr_sim_run_for(c.sim, 300 * MS);
    ck_assert_int_eq(e2e_replica_leader(&c, other, "ADM"), (int)other);
    ck_assert_msg(e2e_stepdown(&c, 0, "ADM", NULL, &r) == 0, "%s", r.msg);
    jr_sim_run_for(c.sim, 300 * MS);
    int l3 = e2e_replica_leader(&c, 0, "ADM");
    ck_assert_int_ge(l3, 0);
    ck_assert_int_ne(l3, (int)other);
    ck_assert_int_eq(e2e_stepdown(&c, 0, "ADM", "nobody", &r), JR_ENOTFOUND);

    /* update: a limit takes effect on every replica; immutable fields are refused by name */
    jr_stream_config t;
    jr_stream_config_init(&t);
    static const char *subj[] = {"adm.>"};
    t.name = "ADM";
    t.subjects = subj;
    t.nsubjects = 1;
    t.replicas = 3;
    t.max_msgs = 3;
    ck_assert_msg(e2e_update(&c, 2, &t, &r) == 0, "%s", r.msg);
    for (int i = 0; i < 10; i++) ck_assert_int_eq(e2e_publish(&c, 1, "adm.z", "z", 1, NULL, &r), 0);
    jr_sim_run_for(c.sim, 300 * MS);
    for (unsigned i = 0; i < 3; i++) {
        jr_stream_state st;
        ck_assert_int_eq(e2e_state(&c, i, "ADM", &st), 0);
        ck_assert_uint_eq(st.msgs, 3);
    }
    t.storage = JR_STORAGE_MEMORY;
    ck_assert_int_eq(e2e_update(&c, 2, &t, &r), JR_EINVAL);
    ck_assert_msg(strncmp(r.msg, "storage", 7) == 0, "%s", r.msg);
    t.storage = JR_STORAGE_FILE;
    static const char *moved[] = {"ssd"};
    t.placement = e2e_placement(NULL, moved, 1);
    t.replicas = 1; /* a move and a replica change at once: refused, as JetStream does */
    ck_assert_int_eq(e2e_update(&c, 2, &t, &r), JR_EINVAL);
    ck_assert_msg(strncmp(r.msg, "placement", 9) == 0, "%s", r.msg);
    t.replicas = 3; /* a move (test_replicas.c) to servers nobody has: refused with reasons */
    ck_assert_int_eq(e2e_update(&c, 2, &t, &r), JR_ENORESOURCES);
    ck_assert_msg(strstr(r.msg, "no suitable peers for placement"), "%s", r.msg);
    t.placement = NULL;
    t.name = "NOPE";
    t.replicas = 3;
    static const char *nope[] = {"nope.>"};
    t.subjects = nope;
    ck_assert_int_eq(e2e_update(&c, 2, &t, &r), JR_ENOTFOUND);

    /* delete: gone everywhere; the name can be used again, for a fresh stream */
    ck_assert_int_eq(e2e_delete(&c, 1, "ADM", &r), 0);
    jr_sim_run_for(c.sim, 300 * MS);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert(!e2e_meta_has(&c, i, "ADM"));
        ck_assert(!e2e_has_replica(&c, i, "ADM"));
    }
    ck_assert_int_eq(e2e_delete(&c, 1, "ADM", &r), JR_ENOTFOUND);
    ck_assert_int_eq(e2e_publish(&c, 0, "adm.a", "x", 1, NULL, &r), JR_ENOSTREAM);
    make("ADM", "adm.>", 3, NULL);
    ck_assert_int_eq(e2e_publish(&c, 0, "adm.a", "x", 1, NULL, &r), 0);
    ck_assert_uint_eq(r.seq, 1);
    ck_assert_int_eq(e2e_info(&c, 1, "ADM", &r), 0);
    ck_assert_uint_eq(r.state.msgs, 1);
    /* deleted seqs as ranges: 3 and 4 adjacent, 7 alone */
    for (int i = 0; i < 9; i++) ck_assert_int_eq(e2e_publish(&c, 1, "adm.d", "y", 1, NULL, &r), 0);
    static const uint64_t gone[] = {3, 7, 4};
    for (size_t i = 0; i < 3; i++) ck_assert_int_eq(e2e_msg_delete(&c, 2, "ADM", gone[i], &r), 0);
    ck_assert_int_eq(deleted(0, "ADM", 0, &d), 0);
    ck_assert_uint_eq(d.total, 3);
    ck_assert_uint_eq(d.n, 2);
    ck_assert(d.rg[0].first == 3 && d.rg[0].last == 4 && d.rg[1].first == 7 && d.rg[1].last == 7);
    ck_assert_int_eq(deleted(0, "ADM", 3, &d), 0); /* 4 is above 3: that range still counts */
    ck_assert_uint_eq(d.n, 2);
    ck_assert_int_eq(deleted(0, "ADM", 4, &d), 0);
    ck_assert(d.n == 1 && d.rg[0].first == 7);
}
END_TEST

START_TEST(catch_up_from_snapshot_and_chunks)
{
    int l = make("LOG", "log.>", 3, NULL);
    int f = (l + 1) % 3, via = (l + 2) % 3;
    e2e_res r;
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(e2e_publish(&c, (unsigned)via, "log.a", "early", 5, NULL, &r), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)f), 0);
    /* one entry per publish: enough entries for the leader to snapshot and compact past what
     * the crashed follower holds */
    char data[200];
    memset(data, 'p', sizeof data);
    for (int i = 0; i < 6000; i++) {
        /* long msg ids: the duplicate window makes the snapshot a catch-up source sends bigger
         * than one answer (it follows in pieces) */
        char id[80];
        snprintf(id, sizeof id, "a-rather-long-message-id-for-the-dedup-window-%08d", i);
        int st =
            e2e_publish(&c, (unsigned)via, i % 2 ? "log.a" : "log.b", data, sizeof data, id, &r);
        ck_assert_msg(st == 0, "%d: %s", i, jr_err_name(st));
    }
    int l2 = e2e_replica_leader(&c, (unsigned)via, "LOG");
    ck_assert_int_ge(l2, 0);
    ck_assert_uint_gt(e2e_snapshot_index(&c, (unsigned)l2, "LOG"), 0); /* the WAL compacted */
    ck_assert_int_eq(jr_sim_restart(c.sim, (unsigned)f), 0);
    /* publishes keep coming while it catches up: it applies them once its messages are in */
    static e2e_res more[300];
    for (int i = 0; i < 300; i++) {
        memset(&more[i], 0, sizeof more[i]);
        ck_assert_int_eq(jr_publish(e2e_node(&c, (unsigned)via), "log.c", NULL, 0, "late", 4, NULL,
                                    e2e_pub_cb, &more[i]),
                         0);
        jr_sim_run_for(c.sim, 1 * MS);
    }
    for (int i = 0; i < 300; i++) {
        ck_assert_int_eq(e2e_wait(&c, &more[i], 10 * SEC), 0);
        ck_assert_int_eq(more[i].status, 0);
    }
    ck_assert_int_ge(e2e_wait_stream(&c, (unsigned)via, "LOG", 2, 30 * SEC), 0);
    replicas_identical("LOG", 3);
    ck_assert_uint_gt(e2e_catchup_chunks(&c, (unsigned)f), 0);
    uint64_t sums[3][200];
    for (unsigned i = 0; i < 3; i++)
        ck_assert_int_eq(e2e_checksums(&c, i, "LOG", sums[i], 200), 6400);
    ck_assert_int_eq(memcmp(sums[0], sums[1], sizeof sums[0]), 0);
    ck_assert_int_eq(memcmp(sums[1], sums[2], sizeof sums[0]), 0);
}
END_TEST

START_TEST(memory_storage_replicas_refill_after_restart)
{
    jr_stream_config t;
    jr_stream_config_init(&t);
    t.storage = JR_STORAGE_MEMORY;
    int l = make("MEM", "mem.>", 3, &t);
    int f = (l + 1) % 3, via = (l + 2) % 3;
    e2e_res r;
    for (int i = 0; i < 5000; i++)
        ck_assert_int_eq(e2e_publish(&c, (unsigned)via, "mem.a", "volatile", 8, NULL, &r), 0);
    /* a memory replica restarts empty and is refilled from its peers (a snapshot and chunks,
     * or the log) */
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)f), 0);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(e2e_publish(&c, (unsigned)via, "mem.b", "more", 4, NULL, &r), 0);
    ck_assert_int_eq(jr_sim_restart(c.sim, (unsigned)f), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, (unsigned)via, "MEM", 2, 30 * SEC), 0);
    replicas_identical("MEM", 3);
    jr_stream_state st;
    ck_assert_int_eq(e2e_state(&c, (unsigned)f, "MEM", &st), 0);
    ck_assert_uint_eq(st.msgs, 5100);
}
END_TEST

/* jr_node_config.leaderless_fail_ms: a request whose group's replica on this server has known
 * no leader for that long ends at once, as at its deadline, instead of waiting for a leader
 * nobody is electing; without it the request waits until its deadline. */
static void fail_leaderless(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    (void)i;
    cfg->leaderless_fail_ms = 1000;
}

static void on_names(void *arg, int status, const char *msg, const jr_names *page)
{
    e2e_res *r = arg;
    (void)page;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "");
    r->done = 1;
}

START_TEST(a_leaderless_group_answers_at_once_with_leaderless_fail_ms)
{
    for (int fast = 0; fast < 2; fast++) {
        e2e lc;
        memset(&lc, 0, sizeof lc);
        if (fast) lc.configure_more = fail_leaderless;
        ck_assert_int_eq(e2e_new(&lc, 3, 4321, 8000), 0);
        int ml = e2e_wait_meta(&lc, 3, 10 * SEC);
        ck_assert_int_ge(ml, 0);
        const char *subj[] = {"ord.>"};
        jr_stream_config cfg;
        e2e_config(&cfg, "ORD", subj, 1, 3);
        e2e_res r;
        ck_assert_msg(e2e_add(&lc, 0, &cfg, &r) == 0, "add: %s", r.msg);
        int sl = e2e_wait_stream(&lc, 0, "ORD", 2, 10 * SEC);
        ck_assert_int_ge(sl, 0);
        ck_assert_int_eq(e2e_publish(&lc, 0, "ord.a", "1", 1, NULL, &r), 0);
        unsigned b = 0; /* neither the meta leader nor the stream's: it leads nothing */
        while ((int)b == ml || (int)b == sl) b++;
        for (unsigned i = 0; i < 3; i++)
            if (i != b) ck_assert_int_eq(jr_sim_crash(lc.sim, i), 0);
        /* b's replicas lose their leaders within two election timeouts, and have been
         * leaderless for one more by then */
        jr_sim_run_for(lc.sim, 3500 * MS);
        uint64_t t0 = jr_sim_now(lc.sim);
        int st = e2e_publish(&lc, b, "ord.b", "2", 1, NULL, &r);
        uint64_t took = jr_sim_now(lc.sim) - t0;
        ck_assert_msg(st == JR_ENOQUORUM, "publish: %s: %s", jr_err_name(st), r.msg);
        if (!fast) { /* the deadline (8 s) ends it */
            ck_assert_uint_ge(took, 7 * SEC);
            e2e_free(&lc);
            continue;
        }
        ck_assert_msg(took <= 300 * MS, "publish answered after %llu ms",
                      (unsigned long long)(took / MS));
        t0 = jr_sim_now(lc.sim);
        st = e2e_info(&lc, b, "ORD", &r);
        ck_assert_msg(st == JR_ENOQUORUM, "info: %s: %s", jr_err_name(st), r.msg);
        ck_assert_uint_le(jr_sim_now(lc.sim) - t0, 300 * MS);
        e2e_config(&cfg, "OTHER", (const char *[]){"other.>"}, 1, 1);
        t0 = jr_sim_now(lc.sim);
        st = e2e_add(&lc, b, &cfg, &r);
        ck_assert_msg(st == JR_ENOLEADER, "add: %s: %s", jr_err_name(st), r.msg);
        ck_assert_uint_le(jr_sim_now(lc.sim) - t0, 300 * MS);
        memset(&r, 0, sizeof r);
        t0 = jr_sim_now(lc.sim);
        ck_assert_int_eq(jr_stream_names(e2e_node(&lc, b), NULL, 0, on_names, &r), 0);
        ck_assert_int_eq(e2e_wait(&lc, &r, 10 * SEC), 0);
        ck_assert_msg(r.status == JR_ENOLEADER, "names: %s: %s", jr_err_name(r.status), r.msg);
        ck_assert_uint_le(jr_sim_now(lc.sim) - t0, 300 * MS);
        /* the servers come back: the same requests succeed again */
        for (unsigned i = 0; i < 3; i++)
            if (i != b) ck_assert_int_eq(jr_sim_restart(lc.sim, i), 0);
        ck_assert_int_ge(e2e_wait_stream(&lc, b, "ORD", 2, 20 * SEC), 0);
        ck_assert_msg(e2e_publish(&lc, b, "ord.c", "3", 1, NULL, &r) == 0, "publish: %s", r.msg);
        e2e_free(&lc);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_streams");
    TCase *tc = tcase_create("streams");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, dedup_across_leader_failover);
    tcase_add_test(tc, an_idle_replica_keeps_no_timer);
    tcase_add_test(tc, limits_and_discard_are_identical_on_every_replica);
    tcase_add_test(tc, r1_on_a_cluster);
    tcase_add_loop_test(tc, meta_leader_failover_during_creation, 0, 24);
    tcase_add_test(tc, no_meta_leader_is_a_bounded_clear_error);
    tcase_add_test(tc, a_publish_the_leader_took_is_never_enoquorum);
    tcase_add_test(tc, publishes_at_the_leader_arm_no_heap_timer_each);
    tcase_add_test(tc, queued_deadlines_fire_on_time_in_any_mix_of_timeouts);
    tcase_add_test(tc, bad_input_changes_nothing);
    tcase_add_test(tc, admin_calls);
    tcase_add_test(tc, catch_up_from_snapshot_and_chunks);
    tcase_add_test(tc, memory_storage_replicas_refill_after_restart);
    tcase_add_test(tc, a_restarted_server_does_not_call_an_existing_stream_unknown);
    suite_add_tcase(s, tc);
    TCase *tl = tcase_create("leaderless");
    tcase_set_timeout(tl, 300);
    tcase_add_test(tl, a_leaderless_group_answers_at_once_with_leaderless_fail_ms);
    suite_add_tcase(s, tl);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
