/* Consumer assignments in the meta state: CONSUMER_ADD and CONSUMER_DELETE round-trip and apply
 * with JetStream's refusals (missing stream, create vs update, update rules, work-queue
 * uniqueness, max_consumers, peers a subset of the stream's); a stream's deletion takes its
 * consumers along; snapshots carry consumers canonically; the desired-state diff creates a
 * consumer's replica after its stream's and removes it when it is gone; and no allocation
 * failure leaves half a consumer op applied. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "meta_test.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define FIRST_GROUP 1000

static const char *peers3[] = {"n1", "n2", "n3"};
static const char *peers2[] = {"n2", "n3"};
static const char *outsider[] = {"n1", "n4"};
static const char *orders_subj[] = {"orders.>"};

static void encode(const jr__meta_op *op, jr__buf *b)
{
    jr__buf_reset(b);
    ck_assert_int_eq(jr__meta_op_encode(op, b), 0);
}

static jr__meta_op op_consumer(const char *stream, const jr_consumer_config *c, uint8_t action,
                               const char *const *peers, size_t npeers)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_CONSUMER_ADD;
    op.stream = stream;
    op.consumer_config = c;
    op.action = action;
    op.peers = peers;
    op.npeers = npeers;
    op.created_ns = 42;
    return op;
}

static jr__meta_op op_cdelete(const char *stream, const char *name)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_CONSUMER_DELETE;
    op.stream = stream;
    op.consumer = name;
    return op;
}

static jr_consumer_config ccfg(const char *name)
{
    jr_consumer_config c;
    jr_consumer_config_init(&c);
    c.durable_name = name;
    return c;
}

/* The config setup() gives stream `name` (retention limits). */
static jr_stream_config stream_cfg(const char *name)
{
    jr_stream_config s;
    jr_stream_config_init(&s);
    s.name = name;
    s.subjects = orders_subj;
    s.nsubjects = 1;
    s.replicas = 3;
    return s;
}

/* Servers n1..n4 and stream `name` (R3 on n1..n3, retention as given) at index 5. */
static void setup(jr__meta_state *st, const char *name, int retention, uint64_t *index)
{
    static const char *names[] = {"n1", "n2", "n3", "n4"};
    jr__meta_state_init(st, NULL, FIRST_GROUP);
    jr__meta_result res;
    uint64_t i = 0;
    for (size_t k = 0; k < N(names); k++) {
        jr__meta_op op = mt_server_op(names[k]);
        ck_assert_int_eq(mt_apply(st, ++i, &op, &res), 0);
    }
    jr_stream_config s = stream_cfg(name);
    s.retention = retention;
    jr__meta_op op = mt_stream_op(JR__META_STREAM_ADD, &s, peers3, 3);
    ck_assert_int_eq(mt_apply(st, ++i, &op, &res), 0);
    *index = i;
}

START_TEST(consumer_ops_round_trip)
{
    jr_consumer_config c = ccfg("dur");
    c.filter_subject = "orders.eu";
    c.ack_wait_ns = 5000000000;
    jr__meta_op ops[] = {
        op_consumer("ORDERS", &c, JR__META_CONSUMER_CREATE, peers3, 3),
        op_consumer("ORDERS", &c, JR__META_CONSUMER_EITHER, NULL, 0),
        op_cdelete("ORDERS", "dur"),
    };
    jr__buf a, b;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    for (size_t i = 0; i < N(ops); i++) {
        encode(&ops[i], &a);
        jr__meta_op d;
        ck_assert_int_eq(jr__meta_op_decode(a.data, a.len, NULL, &d), 0);
        ck_assert_uint_eq(d.type, ops[i].type);
        ck_assert_str_eq(d.stream, "ORDERS");
        encode(&d, &b);
        ck_assert_uint_eq(a.len, b.len);
        ck_assert_int_eq(memcmp(a.data, b.data, a.len), 0);
        /* every truncation is refused */
        for (size_t n = 0; n < a.len; n++) {
            jr__meta_op t;
            ck_assert_int_ne(jr__meta_op_decode(a.data, n, NULL, &t), 0);
            jr__meta_op_free(&t);
        }
        jr__meta_op_free(&d);
    }
    /* an action out of range is refused by the encoder */
    jr__meta_op bad = op_consumer("ORDERS", &c, JR__META_CONSUMER_PAUSE + 1, NULL, 0);
    ck_assert_int_eq(jr__meta_op_encode(&bad, &a), JR_EINVAL);
    jr__buf_free(&a);
    jr__buf_free(&b);
}
END_TEST

START_TEST(add_update_delete_follow_jetstream)
{
    jr__meta_state st;
    uint64_t i;
    setup(&st, "ORDERS", JR_RETAIN_LIMITS, &i);
    jr__meta_result res;
    jr_consumer_config c = ccfg("dur");
    jr__meta_op op = op_consumer("ORDERS", &c, JR__META_CONSUMER_CREATE, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    ck_assert_ptr_nonnull(res.consumer);
    ck_assert_str_eq(res.cname, "dur");
    uint64_t group = res.group;
    ck_assert_uint_eq(group, FIRST_GROUP + 1); /* the stream took FIRST_GROUP */
    const jr__meta_stream *s = jr__meta_stream_find(&st, "ORDERS");
    const jr__meta_consumer *mc = jr__meta_consumer_find(s, "dur");
    ck_assert_ptr_eq(jr__meta_consumer_by_group(&st, group), mc);
    ck_assert_uint_eq(mc->created, i);
    ck_assert_uint_eq(mc->created_ns, 42);
    ck_assert_uint_eq(mc->npeers, 3);
    /* identical: idempotent, nothing changes */
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    ck_assert_int_eq(res.changed, 0);
    ck_assert_ptr_eq(res.consumer, mc);
    /* create-only with another config */
    jr_consumer_config d = c;
    d.description = "other";
    op = op_consumer("ORDERS", &d, JR__META_CONSUMER_CREATE, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_EEXIST);
    ck_assert_str_eq(res.msg, "consumer already exists");
    /* create-or-update changes what may change */
    op = op_consumer("ORDERS", &d, JR__META_CONSUMER_EITHER, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    ck_assert_uint_eq(mc->updated, i);
    ck_assert_str_eq(mc->cfg->c.description, "other");
    /* and refuses what may not, with JetStream's text */
    d.ack_policy = JR_ACK_NONE;
    op = op_consumer("ORDERS", &d, JR__META_CONSUMER_EITHER, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_EINVAL);
    ck_assert_msg(strstr(res.msg, "ack policy can not be updated"), "%s", res.msg);
    /* update-only of a missing one; a missing stream */
    jr_consumer_config e = ccfg("nope");
    op = op_consumer("ORDERS", &e, JR__META_CONSUMER_UPDATE, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_ENOTFOUND);
    ck_assert_str_eq(res.msg, "consumer does not exist");
    op = op_consumer("NOPE", &e, JR__META_CONSUMER_EITHER, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_ENOSTREAM);
    /* peers: the stream's, as many as the replicas */
    op = op_consumer("ORDERS", &e, JR__META_CONSUMER_EITHER, outsider, 2);
    e.num_replicas = 2;
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_EINVAL);
    ck_assert_msg(strstr(res.msg, "not a peer of stream"), "%s", res.msg);
    op = op_consumer("ORDERS", &e, JR__META_CONSUMER_EITHER, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_EINVAL);
    op = op_consumer("ORDERS", &e, JR__META_CONSUMER_EITHER, peers2, 2);
    ck_assert_msg(mt_apply(&st, ++i, &op, &res) == 0, "%s", res.msg);
    ck_assert_uint_eq(st.nconsumers, 2);
    /* a placed op must name its consumer */
    jr_consumer_config eph;
    jr_consumer_config_init(&eph);
    op = op_consumer("ORDERS", &eph, JR__META_CONSUMER_EITHER, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_EINVAL);
    /* delete */
    op = op_cdelete("ORDERS", "dur");
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    ck_assert_uint_eq(res.group, group);
    ck_assert_ptr_null(jr__meta_consumer_by_group(&st, group));
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_ENOTFOUND);
    ck_assert_uint_eq(st.nconsumers, 1);
    /* the stream's deletion takes the rest along */
    jr__meta_op sd;
    memset(&sd, 0, sizeof sd);
    sd.type = JR__META_STREAM_DELETE;
    sd.stream = "ORDERS";
    ck_assert_int_eq(mt_apply(&st, ++i, &sd, &res), 0);
    ck_assert_int_eq(res.consumers_gone, 1);
    ck_assert_uint_eq(st.nconsumers, 0);
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(work_queue_and_limits_refusals)
{
    jr__meta_state st;
    uint64_t i;
    setup(&st, "WQ", JR_RETAIN_WORKQUEUE, &i);
    jr__meta_result res;
    jr_consumer_config a = ccfg("a");
    jr__meta_op op = op_consumer("WQ", &a, 0, peers3, 3);
    ck_assert_msg(mt_apply(&st, ++i, &op, &res) == 0, "%s", res.msg);
    jr_consumer_config b = ccfg("b");
    op = op_consumer("WQ", &b, 0, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_EINVAL);
    ck_assert_str_eq(res.msg, "multiple non-filtered consumers not allowed on workqueue stream");
    /* a filtered one beside an unfiltered one collides too */
    b.filter_subject = "orders.eu";
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_EINVAL);
    ck_assert_str_eq(res.msg, "filtered consumer not unique on workqueue stream");
    op = op_cdelete("WQ", "a");
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    op = op_consumer("WQ", &b, 0, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    jr_consumer_config c = ccfg("c");
    c.filter_subject = "orders.*";
    op = op_consumer("WQ", &c, 0, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_EINVAL);
    ck_assert_str_eq(res.msg, "filtered consumer not unique on workqueue stream");
    c.filter_subject = "orders.us";
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    jr__meta_state_free(&st);

    /* max_consumers */
    setup(&st, "ORDERS", JR_RETAIN_LIMITS, &i);
    jr__meta_stream *s = (jr__meta_stream *)jr__meta_stream_find(&st, "ORDERS");
    s->cfg->c.max_consumers = 1; /* a test shortcut: the limit as a config would set it */
    op = op_consumer("ORDERS", &a, 0, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    op = op_consumer("ORDERS", &b, 0, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), JR_ELIMIT);
    ck_assert_str_eq(res.msg, "maximum consumers limit reached");
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(snapshots_carry_consumers_and_desired_state_lists_them)
{
    jr__meta_state st;
    uint64_t i;
    setup(&st, "ORDERS", JR_RETAIN_LIMITS, &i);
    jr__meta_result res;
    jr_consumer_config a = ccfg("a"), b = ccfg("b");
    b.num_replicas = 2;
    b.filter_subject = "orders.eu";
    jr__meta_op op = op_consumer("ORDERS", &b, 0, peers2, 2);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    uint64_t gb = res.group;
    op = op_consumer("ORDERS", &a, 0, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    uint64_t ga = res.group;
    jr__buf s1, s2;
    jr__buf_init(&s1, NULL);
    jr__buf_init(&s2, NULL);
    ck_assert_int_eq(jr__meta_snapshot(&st, &s1), 0);
    jr__meta_state st2;
    jr__meta_state_init(&st2, NULL, 1);
    ck_assert_int_eq(jr__meta_restore(&st2, s1.data, s1.len), 0);
    ck_assert_int_eq(jr__meta_snapshot(&st2, &s2), 0);
    ck_assert_uint_eq(s1.len, s2.len);
    ck_assert_int_eq(memcmp(s1.data, s2.data, s1.len), 0);
    ck_assert_uint_eq(st2.nconsumers, 2);
    const jr__meta_consumer *rb = jr__meta_consumer_by_group(&st2, gb);
    ck_assert_ptr_nonnull(rb);
    ck_assert_str_eq(rb->name, "b");
    ck_assert_str_eq(rb->cfg->c.filter_subject, "orders.eu");
    /* a consumer's peer outside its stream is corrupt */
    for (size_t k = 0; k + 8 < s1.len; k++) {
        jr__meta_state t;
        jr__meta_state_init(&t, NULL, 1);
        ck_assert_int_ne(jr__meta_restore(&t, s1.data, k), 0);
        jr__meta_state_free(&t);
    }
    /* n1 runs nothing yet: its stream first, then consumer a (b is not on n1) */
    jr__meta_plan plan;
    ck_assert_int_eq(jr__meta_desired(&st2, "n1", NULL, 0, &plan), 0);
    ck_assert_uint_eq(plan.n, 2);
    ck_assert_int_eq(plan.actions[0].kind, JR__META_CREATE);
    ck_assert_ptr_null(plan.actions[0].consumer);
    ck_assert_int_eq(plan.actions[1].kind, JR__META_CREATE);
    ck_assert_uint_eq(plan.actions[1].group, ga);
    ck_assert_ptr_nonnull(plan.actions[1].consumer);
    jr__meta_plan_free(&plan);
    /* n2 runs the stream and b, and a consumer that no longer exists */
    const jr__meta_stream *ms = jr__meta_stream_find(&st2, "ORDERS");
    jr__meta_local local[] = {{ms->group, ms->updated}, {gb, rb->updated}, {4242, 1}};
    ck_assert_int_eq(jr__meta_desired(&st2, "n2", local, 3, &plan), 0);
    ck_assert_uint_eq(plan.n, 2);
    ck_assert_int_eq(plan.actions[0].kind, JR__META_LEAVE);
    ck_assert_uint_eq(plan.actions[0].group, 4242);
    ck_assert_int_eq(plan.actions[1].kind, JR__META_CREATE);
    ck_assert_uint_eq(plan.actions[1].group, ga);
    jr__meta_plan_free(&plan);
    jr__meta_state_free(&st);
    jr__meta_state_free(&st2);
    jr__buf_free(&s1);
    jr__buf_free(&s2);
}
END_TEST

/* A stream's peer change moves its consumers inside the new peer set (busy until their group
 * reports convergence); a STREAM_CONVERGED naming a consumer's group ends that consumer's
 * change; an allocation failure during the move changes nothing. */
START_TEST(consumers_follow_their_stream)
{
    jr__meta_state st;
    uint64_t i;
    setup(&st, "ORDERS", JR_RETAIN_LIMITS, &i);
    jr__meta_result res;
    jr_consumer_config a = ccfg("a"), b = ccfg("b");
    b.num_replicas = 1;
    jr__meta_op op = op_consumer("ORDERS", &a, 0, peers3, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    uint64_t ga = res.group;
    static const char *b_on[] = {"n1"};
    op = op_consumer("ORDERS", &b, 0, b_on, 1);
    ck_assert_int_eq(mt_apply(&st, ++i, &op, &res), 0);
    /* the stream moves from n1,n2,n3 to n2,n3,n4 */
    const jr__meta_stream *s = jr__meta_stream_find(&st, "ORDERS");
    jr_stream_config sc = stream_cfg("ORDERS");
    static const char *moved[] = {"n2", "n3", "n4"};
    jr__meta_op up = mt_stream_op(JR__META_STREAM_UPDATE, &sc, moved, 3);
    ck_assert_int_eq(mt_apply(&st, ++i, &up, &res), 0);
    ck_assert_int_eq(res.consumers_gone, 1);
    const jr__meta_consumer *ca = jr__meta_consumer_find(s, "a");
    const jr__meta_consumer *cb = jr__meta_consumer_find(s, "b");
    ck_assert_uint_eq(ca->npeers, 3);
    ck_assert_str_eq(ca->peers[0], "n2");
    ck_assert_str_eq(ca->peers[1], "n3");
    ck_assert_str_eq(ca->peers[2], "n4");
    ck_assert_uint_eq(cb->npeers, 1);
    ck_assert_str_eq(cb->peers[0], "n2");
    ck_assert(jr__meta_consumer_busy(ca));
    ck_assert(!jr__meta_consumer_bootstraps(ca));
    ck_assert_uint_eq(ca->peers_at, i);
    /* a stale report is refused; the right one ends the change */
    jr__meta_op conv;
    memset(&conv, 0, sizeof conv);
    conv.type = JR__META_STREAM_CONVERGED;
    conv.stream = "ORDERS";
    conv.group = ga;
    conv.peers_at = ca->created;
    ck_assert_int_eq(mt_apply(&st, ++i, &conv, &res), JR_ERANGE);
    conv.peers_at = ca->peers_at;
    ck_assert_int_eq(mt_apply(&st, ++i, &conv, &res), 0);
    ck_assert_int_eq(res.changed, 1);
    ck_assert(!jr__meta_consumer_busy(ca));
    ck_assert(jr__meta_consumer_busy(cb));
    /* a snapshot round trip keeps it all */
    jr__buf s1, s2;
    jr__buf_init(&s1, NULL);
    jr__buf_init(&s2, NULL);
    ck_assert_int_eq(jr__meta_snapshot(&st, &s1), 0);
    jr__meta_state st2;
    jr__meta_state_init(&st2, NULL, 1);
    ck_assert_int_eq(jr__meta_restore(&st2, s1.data, s1.len), 0);
    ck_assert_int_eq(jr__meta_snapshot(&st2, &s2), 0);
    ck_assert_int_eq(memcmp(s1.data, s2.data, s1.len), 0);
    ck_assert(jr__meta_consumer_busy(jr__meta_consumer_by_group(&st2, cb->group)));
    jr__meta_state_free(&st2);
    jr__buf_free(&s1);
    jr__buf_free(&s2);
    /* shrinking the stream to one server (once its own change converged) takes the consumer
     * with num_replicas 0 down to one */
    conv.group = s->group;
    conv.peers_at = s->peers_at;
    ck_assert_int_eq(mt_apply(&st, ++i, &conv, &res), 0);
    sc.replicas = 1;
    static const char *one[] = {"n3"};
    up.peers = one;
    up.npeers = 1;
    ck_assert_int_eq(mt_apply(&st, ++i, &up, &res), 0);
    ck_assert_uint_eq(ca->npeers, 1);
    ck_assert_str_eq(ca->peers[0], "n3");
    ck_assert_str_eq(cb->peers[0], "n3");
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(allocation_failures_never_half_apply_a_consumer_op)
{
    mt_faulty f = {-1};
    jr_allocator fa = mt_faulty_allocator(&f);
    jr__meta_state st;
    uint64_t i;
    setup(&st, "ORDERS", JR_RETAIN_LIMITS, &i);
    st.alloc = &fa;
    jr_consumer_config a = ccfg("a"), a2 = ccfg("a"), b = ccfg("b");
    a2.description = "changed";
    jr_stream_config sc = stream_cfg("ORDERS");
    static const char *moved[] = {"n2", "n3", "n4"};
    jr__meta_op mv = mt_stream_op(JR__META_STREAM_UPDATE, &sc, moved, 3);
    jr__meta_op script[] = {
        op_consumer("ORDERS", &a, 0, peers3, 3),
        op_consumer("ORDERS", &b, 0, peers3, 3),
        op_consumer("ORDERS", &a2, 0, peers3, 3),
        mv,
        op_cdelete("ORDERS", "b"),
    };
    jr__buf enc;
    jr__buf_init(&enc, NULL);
    long failures = 0;
    for (size_t k = 0; k < N(script); k++) {
        encode(&script[k], &enc);
        jr__meta_result res;
        failures += mt_apply_failing_each_allocation(&st, &f, ++i, &enc, &res, k);
        ck_assert_msg(res.status == 0, "op %zu: %s", k, res.msg);
    }
    ck_assert_int_gt(failures, 4);
    jr__meta_state_free(&st);
    jr__buf_free(&enc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("meta_consumers");
    TCase *tc = tcase_create("consumers");
    tcase_add_test(tc, consumer_ops_round_trip);
    tcase_add_test(tc, add_update_delete_follow_jetstream);
    tcase_add_test(tc, work_queue_and_limits_refusals);
    tcase_add_test(tc, snapshots_carry_consumers_and_desired_state_lists_them);
    tcase_add_test(tc, consumers_follow_their_stream);
    tcase_add_test(tc, allocation_failures_never_half_apply_a_consumer_op);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
