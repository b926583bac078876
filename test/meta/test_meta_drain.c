/*
 * Draining servers in the meta state (meta_op.h SERVER_DRAIN, meta_state.h "Servers"): the op's
 * encoding and strict decoding, the apply rules (unknown, removed, again, cancel), placement's
 * view of a draining server, and the snapshot's draining servers (version 7, and version 6
 * still read).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_test.h"
#include "meta/meta_move.h"
#include "util/checksum.h"

#define FIRST_GROUP 100
#define N(a) (sizeof(a) / sizeof(a)[0])

static jr__meta_op drain_op(const char *name, uint8_t kind)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_SERVER_DRAIN;
    op.server.name = name;
    op.action = kind;
    return op;
}

/* n1..n4 registered; ORDERS R3 on n1 n2 n3 (index 10) with consumer C on n3, LOGS R1 on n3
 * (index 11). */
static void cluster(jr__meta_state *st)
{
    static const char *names[] = {"n1", "n2", "n3", "n4"};
    jr__meta_state_init(st, NULL, FIRST_GROUP);
    jr__meta_result res;
    for (size_t i = 0; i < N(names); i++) {
        jr__meta_op op = mt_server_op(names[i]);
        ck_assert_int_eq(mt_apply(st, i + 1, &op, &res), 0);
    }
    static const char *s1[] = {"orders.>"}, *s2[] = {"logs.>"};
    static const char *p3[] = {"n1", "n2", "n3"}, *p1[] = {"n3"};
    jr_stream_config c;
    jr_stream_config_init(&c);
    c.name = "ORDERS";
    c.subjects = s1;
    c.nsubjects = 1;
    c.replicas = 3;
    jr__meta_op op = mt_stream_op(JR__META_STREAM_ADD, &c, p3, 3);
    ck_assert_int_eq(mt_apply(st, 10, &op, &res), 0);
    c.name = "LOGS";
    c.subjects = s2;
    c.replicas = 1;
    op = mt_stream_op(JR__META_STREAM_ADD, &c, p1, 1);
    ck_assert_int_eq(mt_apply(st, 11, &op, &res), 0);
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.durable_name = "C";
    cc.num_replicas = 1;
    memset(&op, 0, sizeof op);
    op.type = JR__META_CONSUMER_ADD;
    op.stream = "ORDERS";
    op.consumer_config = &cc;
    op.peers = p1;
    op.npeers = 1;
    op.created_ns = 1;
    ck_assert_int_eq(mt_apply(st, 12, &op, &res), 0);
}

START_TEST(drain_op_round_trips_and_decodes_strictly)
{
    jr__meta_op op = drain_op("n3", JR__META_DRAIN_START);
    op.request_id = 9;
    op.origin = "n1";
    jr__buf a, b;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__meta_op_encode(&op, &a), 0);
    ck_assert_uint_eq(a.data[0], 1); /* version 1: no creation time */
    ck_assert_uint_eq(a.data[1], JR__META_SERVER_DRAIN);
    jr__meta_op d;
    ck_assert_int_eq(jr__meta_op_decode(a.data, a.len, NULL, &d), 0);
    ck_assert_uint_eq(d.type, JR__META_SERVER_DRAIN);
    ck_assert_str_eq(d.server.name, "n3");
    ck_assert_uint_eq(d.action, JR__META_DRAIN_START);
    ck_assert_uint_eq(d.request_id, 9);
    ck_assert_int_eq(jr__meta_op_encode(&d, &b), 0);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_int_eq(memcmp(a.data, b.data, a.len), 0);
    jr__meta_op_free(&d);
    /* truncated at every length, resealed or not: refused */
    for (size_t len = 0; len < a.len; len++) {
        uint8_t *cut = malloc(len + 8);
        memcpy(cut, a.data, len);
        ck_assert_int_ne(jr__meta_op_decode(cut, len, NULL, &d), 0);
        if (len >= 10) {
            jr__put_u64(cut + len - 8, jr__xxh3(cut, len - 8));
            ck_assert_int_ne(jr__meta_op_decode(cut, len, NULL, &d), 0);
        }
        free(cut);
    }
    /* a kind other than start and cancel: corrupt (the kind is the byte before the checksum) */
    a.data[a.len - 9] = 2;
    jr__put_u64(a.data + a.len - 8, jr__xxh3(a.data, a.len - 8));
    ck_assert_int_eq(jr__meta_op_decode(a.data, a.len, NULL, &d), JR_ECORRUPT);
    /* the encoder refuses the same, and a name the log cannot carry */
    jr__buf_reset(&b);
    op.action = 2;
    ck_assert_int_eq(jr__meta_op_encode(&op, &b), JR_EINVAL);
    op = drain_op("bad name", JR__META_DRAIN_CANCEL);
    ck_assert_int_eq(jr__meta_op_encode(&op, &b), JR_EINVAL);
    ck_assert_uint_eq(b.len, 0);
    /* cancel round trips too */
    op = drain_op("n2", JR__META_DRAIN_CANCEL);
    ck_assert_int_eq(jr__meta_op_encode(&op, &b), 0);
    ck_assert_int_eq(jr__meta_op_decode(b.data, b.len, NULL, &d), 0);
    ck_assert_uint_eq(d.action, JR__META_DRAIN_CANCEL);
    jr__meta_op_free(&d);
    jr__buf_free(&a);
    jr__buf_free(&b);
}
END_TEST

START_TEST(drain_marks_the_server_and_keeps_every_assignment)
{
    jr__meta_state st;
    cluster(&st);
    jr__meta_result res;
    const jr__meta_stream *orders = jr__meta_stream_find(&st, "ORDERS");
    uint64_t updated = orders->updated;
    jr__meta_op op = drain_op("n3", JR__META_DRAIN_START);
    ck_assert_int_eq(mt_apply(&st, 20, &op, &res), 0);
    ck_assert_int_eq(res.changed, 1);
    ck_assert(jr__meta_server_draining(&st, "n3"));
    ck_assert(jr__meta_server_leaving(&st, "n3"));
    ck_assert(!jr__meta_server_draining(&st, "n1"));
    ck_assert_msg(strstr(res.msg, "2 stream and 1 consumer replica to move off"), "%s", res.msg);
    /* nothing moved by the op itself: the meta leader moves replicas one group at a time */
    orders = jr__meta_stream_find(&st, "ORDERS");
    ck_assert_uint_eq(orders->updated, updated);
    ck_assert(jr__meta_stream_has_peer(orders, "n3"));
    /* placement never picks it */
    jr__place_server sv[4];
    ck_assert_uint_eq(jr__meta_place_servers(&st, sv, 4), 4);
    ck_assert_int_eq(sv[2].draining, 1);
    ck_assert_int_eq(sv[0].draining, 0);
    /* again: accepted, nothing changes (a request sent twice) */
    ck_assert_int_eq(mt_apply(&st, 21, &op, &res), 0);
    ck_assert_int_eq(res.changed, 0);
    ck_assert_msg(strstr(res.msg, "draining already"), "%s", res.msg);
    /* its SERVER_INFO (a restart, new tags) keeps the flag */
    jr__meta_op info = mt_server_op("n3");
    static const char *tags[] = {"ssd"};
    info.server.tags = tags;
    info.server.ntags = 1;
    ck_assert_int_eq(mt_apply(&st, 22, &info, &res), 0);
    ck_assert_int_eq(res.changed, 1);
    ck_assert(jr__meta_server_draining(&st, "n3"));
    /* cancel: it takes placements again; a second cancel has nothing to undo */
    op = drain_op("n3", JR__META_DRAIN_CANCEL);
    ck_assert_int_eq(mt_apply(&st, 23, &op, &res), 0);
    ck_assert(!jr__meta_server_draining(&st, "n3"));
    ck_assert_msg(strstr(res.msg, "takes placements again"), "%s", res.msg);
    ck_assert_int_eq(mt_apply(&st, 24, &op, &res), JR_ENOCHANGE);
    ck_assert_str_eq(res.msg, "server 'n3' is not draining");
    /* unknown or removed servers: not members */
    op = drain_op("n9", JR__META_DRAIN_START);
    ck_assert_int_eq(mt_apply(&st, 25, &op, &res), JR_ENOTMEMBER);
    jr__meta_op rm;
    memset(&rm, 0, sizeof rm);
    rm.type = JR__META_SERVER_REMOVE;
    rm.server.name = "n4";
    ck_assert_int_eq(mt_apply(&st, 26, &rm, &res), 0);
    op = drain_op("n4", JR__META_DRAIN_START);
    ck_assert_int_eq(mt_apply(&st, 27, &op, &res), JR_ENOTMEMBER);
    ck_assert(jr__meta_server_leaving(&st, "n4"));
    ck_assert(!jr__meta_server_draining(&st, "n4"));
    /* jr__meta_check decides as the apply would, and changes nothing */
    op = drain_op("n1", JR__META_DRAIN_START);
    ck_assert_int_eq(jr__meta_check(&st, &op, &res), 0);
    ck_assert_int_eq(res.status, 0);
    ck_assert(!jr__meta_server_draining(&st, "n1"));
    op = drain_op("n1", JR__META_DRAIN_CANCEL);
    ck_assert_int_eq(jr__meta_check(&st, &op, &res), 0);
    ck_assert_int_eq(res.status, JR_ENOCHANGE);
    jr__meta_state_free(&st);
}
END_TEST

/* Snapshot a (version 7, no draining servers) marked `version`, its last `cut` bytes dropped and
 * resealed: restores to a state whose snapshot is a again. */
static void restores_as_version(const jr__buf *a, size_t cut, uint8_t version)
{
    jr__buf b, c;
    jr__buf_init(&b, NULL);
    jr__buf_init(&c, NULL);
    jr__buf_put(&b, a->data, a->len - cut);
    b.data[4] = version;
    jr__buf_u64(&b, jr__xxh3(b.data, b.len));
    jr__meta_state r;
    jr__meta_state_init(&r, NULL, 1);
    ck_assert_int_eq(jr__meta_restore(&r, b.data, b.len), 0);
    for (size_t i = 0; i < r.nservers; i++) ck_assert_int_eq(r.servers[i]->draining, 0);
    ck_assert_int_eq(jr__meta_snapshot(&r, &c), 0);
    ck_assert_uint_eq(c.len, a->len);
    ck_assert_int_eq(memcmp(c.data, a->data, a->len), 0);
    jr__buf_free(&b);
    jr__buf_free(&c);
    jr__meta_state_free(&r);
}

START_TEST(snapshot_keeps_the_draining_servers_and_reads_version_6)
{
    jr__meta_state st;
    cluster(&st);
    jr__meta_result res;
    jr__buf a, b;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__meta_snapshot(&st, &a), 0);
    ck_assert_uint_eq(a.data[4], JR__META_SNAP_VERSION);
    ck_assert_uint_eq(a.data[4], 7);
    ck_assert_uint_eq(a.data[a.len - 9], 0); /* no draining servers */
    /* version 6 (and 5): the same bytes without the list, nobody draining */
    restores_as_version(&a, 9, 6);
    restores_as_version(&a, 10, 5);
    /* two draining servers: listed in name order, restored, byte-identical again */
    jr__meta_op op = drain_op("n3", JR__META_DRAIN_START);
    ck_assert_int_eq(mt_apply(&st, 20, &op, &res), 0);
    op = drain_op("n1", JR__META_DRAIN_START);
    ck_assert_int_eq(mt_apply(&st, 21, &op, &res), 0);
    jr__buf_reset(&a);
    ck_assert_int_eq(jr__meta_snapshot(&st, &a), 0);
    size_t tail = a.len - 8 - 7; /* the count 2, then "n1", "n3" */
    ck_assert_uint_eq(a.data[tail], 2);
    ck_assert_int_eq(memcmp(a.data + tail + 1, "\x02n1\x02n3", 6), 0);
    jr__meta_state r;
    jr__meta_state_init(&r, NULL, 1);
    ck_assert_int_eq(jr__meta_restore(&r, a.data, a.len), 0);
    ck_assert(jr__meta_server_draining(&r, "n1"));
    ck_assert(!jr__meta_server_draining(&r, "n2"));
    ck_assert(jr__meta_server_draining(&r, "n3"));
    ck_assert_int_eq(jr__meta_snapshot(&r, &b), 0);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_int_eq(memcmp(a.data, b.data, a.len), 0);
    /* out of order, duplicated, or naming no server: corrupt, the state unchanged */
    static const char *bad[] = {"\x02n3\x02n1", "\x02n1\x02n1", "\x02n1\x02n9"};
    for (size_t i = 0; i < N(bad); i++) {
        jr__buf_reset(&b);
        jr__buf_put(&b, a.data, tail + 1);
        jr__buf_put(&b, bad[i], 6);
        jr__buf_u64(&b, jr__xxh3(b.data, b.len));
        ck_assert_int_eq(jr__meta_restore(&r, b.data, b.len), JR_ECORRUPT);
        ck_assert(jr__meta_server_draining(&r, "n3"));
    }
    /* a version 6 snapshot with bytes where the list would be: trailing bytes, corrupt */
    jr__buf_reset(&b);
    jr__buf_put(&b, a.data, a.len - 8);
    b.data[4] = 6;
    jr__buf_u64(&b, jr__xxh3(b.data, b.len));
    ck_assert_int_eq(jr__meta_restore(&r, b.data, b.len), JR_ECORRUPT);
    /* a later version: not read */
    b.data[4] = JR__META_SNAP_VERSION + 1;
    jr__put_u64(b.data + b.len - 8, jr__xxh3(b.data, b.len - 8));
    ck_assert_int_eq(jr__meta_restore(&r, b.data, b.len), JR_EVERSION);
    jr__buf_free(&a);
    jr__buf_free(&b);
    jr__meta_state_free(&r);
    jr__meta_state_free(&st);
}
END_TEST

static jr__meta_op move_op(const char *stream, const char *consumer, const char *peer,
                           const char *const *peers, size_t npeers)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_PEER_MOVE;
    op.stream = stream;
    op.consumer = consumer;
    op.action = JR__META_MOVE_EVACUATE;
    op.peer = peer;
    op.peers = peers;
    op.npeers = npeers;
    return op;
}

/* A group whose every peer was removed is reseeded by an evacuation: a fresh, empty group under
 * a new id on the new peers, which bootstrap it. */
START_TEST(an_evacuation_of_a_group_whose_peers_all_were_removed_reseeds_it)
{
    jr__meta_state st;
    cluster(&st);
    jr__meta_result res;
    jr__meta_op rm;
    memset(&rm, 0, sizeof rm);
    rm.type = JR__META_SERVER_REMOVE;
    rm.server.name = "n3"; /* no re-placements: LOGS (R1) and ORDERS/C (R1) lose their only peer */
    ck_assert_int_eq(mt_apply(&st, 20, &rm, &res), 0);
    const jr__meta_stream *logs = jr__meta_stream_find(&st, "LOGS");
    const jr__meta_stream *orders = jr__meta_stream_find(&st, "ORDERS");
    ck_assert(jr__meta_move_reseeds(&st, logs, NULL));
    ck_assert(!jr__meta_move_reseeds(&st, orders, NULL));
    ck_assert(jr__meta_move_reseeds(&st, orders, jr__meta_consumer_find(orders, "C")));
    uint64_t old_group = logs->group, next = st.next_group;
    /* a peer set that keeps a removed peer, or names an unknown server: refused */
    static const char *p3[] = {"n3"}, *p9[] = {"n9"}, *p4[] = {"n4"}, *p1[] = {"n1"};
    jr__meta_op op = move_op("LOGS", NULL, "n3", p3, 1);
    ck_assert_int_eq(mt_apply(&st, 21, &op, &res), JR_EINVAL);
    op = move_op("LOGS", NULL, "n3", p9, 1);
    ck_assert_int_eq(mt_apply(&st, 22, &op, &res), JR_EINVAL);
    /* onto n4: a new group, created (and converged) at this index, bootstrapped by n4 */
    op = move_op("LOGS", NULL, "n3", p4, 1);
    ck_assert_int_eq(mt_apply(&st, 23, &op, &res), 0);
    logs = jr__meta_stream_find(&st, "LOGS");
    ck_assert_uint_eq(logs->group, next);
    ck_assert_uint_eq(st.next_group, next + 1);
    ck_assert_uint_eq(res.group, logs->group);
    ck_assert_ptr_null(jr__meta_stream_by_group(&st, old_group));
    ck_assert_ptr_eq(jr__meta_stream_by_group(&st, logs->group), logs);
    ck_assert_uint_eq(logs->created, 23);
    ck_assert(!jr__meta_stream_busy(logs));
    ck_assert(jr__meta_stream_bootstraps(logs));
    ck_assert_ptr_null(logs->origin);
    ck_assert_str_eq(logs->peers[0], "n4");
    /* n4's plan creates it */
    jr__meta_plan plan;
    ck_assert_int_eq(jr__meta_desired(&st, "n4", NULL, 0, &plan), 0);
    int creates = 0;
    for (size_t i = 0; i < plan.n; i++)
        creates += plan.actions[i].kind == JR__META_CREATE && plan.actions[i].group == logs->group;
    ck_assert_int_eq(creates, 1);
    jr__meta_plan_free(&plan);
    /* ORDERS's consumer C (R1 on n3): reseeded within the stream's other peers */
    const jr__meta_consumer *cc = jr__meta_consumer_find(orders, "C");
    uint64_t old_c = cc->group;
    op = move_op("ORDERS", "C", "n3", p4, 1); /* n4 does not hold ORDERS */
    ck_assert_int_eq(mt_apply(&st, 24, &op, &res), JR_EINVAL);
    op = move_op("ORDERS", "C", "n3", p1, 1);
    ck_assert_int_eq(mt_apply(&st, 25, &op, &res), 0);
    orders = jr__meta_stream_find(&st, "ORDERS");
    cc = jr__meta_consumer_find(orders, "C");
    ck_assert_uint_ne(cc->group, old_c);
    ck_assert_ptr_null(jr__meta_consumer_by_group(&st, old_c));
    ck_assert_ptr_eq(jr__meta_consumer_by_group(&st, cc->group), cc);
    ck_assert(jr__meta_consumer_bootstraps(cc));
    ck_assert(!jr__meta_consumer_busy(cc));
    ck_assert_str_eq(cc->peers[0], "n1");
    /* the reseeded state snapshots and restores byte for byte */
    jr__buf a, b;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__meta_snapshot(&st, &a), 0);
    jr__meta_state r;
    jr__meta_state_init(&r, NULL, 1);
    ck_assert_int_eq(jr__meta_restore(&r, a.data, a.len), 0);
    ck_assert_int_eq(jr__meta_snapshot(&r, &b), 0);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_int_eq(memcmp(a.data, b.data, a.len), 0);
    jr__buf_free(&a);
    jr__buf_free(&b);
    jr__meta_state_free(&r);
    jr__meta_state_free(&st);
}
END_TEST

/* Out of memory at every allocation of a reseed: either nothing changed (the apply reports
 * JR_ENOMEM) or the whole reseed happened. */
START_TEST(a_reseed_out_of_memory_changes_nothing)
{
    static const char *p4[] = {"n4"};
    for (long fail = 0;; fail++) {
        mt_faulty f = {-1};
        jr_allocator a = mt_faulty_allocator(&f);
        jr__meta_state st;
        cluster(&st);
        jr__meta_result res;
        jr__meta_op rm;
        memset(&rm, 0, sizeof rm);
        rm.type = JR__META_SERVER_REMOVE;
        rm.server.name = "n3";
        ck_assert_int_eq(mt_apply(&st, 20, &rm, &res), 0);
        /* move the state onto the faulty allocator by a snapshot round trip */
        jr__buf b;
        jr__buf_init(&b, NULL);
        ck_assert_int_eq(jr__meta_snapshot(&st, &b), 0);
        jr__meta_state fs;
        jr__meta_state_init(&fs, &a, 1);
        ck_assert_int_eq(jr__meta_restore(&fs, b.data, b.len), 0);
        jr__meta_op op = move_op("LOGS", NULL, "n3", p4, 1);
        f.countdown = fail;
        int rc = jr__meta_apply_op(&fs, 30, &op, &res);
        f.countdown = -1;
        const jr__meta_stream *logs = jr__meta_stream_find(&fs, "LOGS");
        jr__buf c;
        jr__buf_init(&c, NULL);
        ck_assert_int_eq(jr__meta_snapshot(&fs, &c), 0);
        int done = rc == 0;
        if (rc) {
            ck_assert_int_eq(rc, JR_ENOMEM);
            ck_assert_uint_eq(c.len, b.len); /* unchanged, byte for byte */
            ck_assert_int_eq(memcmp(c.data, b.data, b.len), 0);
        } else {
            ck_assert_int_eq(res.status, 0);
            ck_assert_str_eq(logs->peers[0], "n4");
            ck_assert_ptr_eq(jr__meta_stream_by_group(&fs, logs->group), logs);
        }
        jr__buf_free(&b);
        jr__buf_free(&c);
        jr__meta_state_free(&fs);
        jr__meta_state_free(&st);
        if (done) break;
        ck_assert_int_lt(fail, 1000);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("meta_drain");
    TCase *tc = tcase_create("drain");
    tcase_add_test(tc, drain_op_round_trips_and_decodes_strictly);
    tcase_add_test(tc, drain_marks_the_server_and_keeps_every_assignment);
    tcase_add_test(tc, snapshot_keeps_the_draining_servers_and_reads_version_6);
    tcase_add_test(tc, an_evacuation_of_a_group_whose_peers_all_were_removed_reseeds_it);
    tcase_add_test(tc, a_reseed_out_of_memory_changes_nothing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
