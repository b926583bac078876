/*
 * Servers joining and leaving in the meta state (meta_state.h "Servers", meta_op.h
 * SERVER_REMOVE / SERVER_JOIN): the ops' encodings and their strict decoding, the apply rules
 * (tombstones, re-placements, refusals) and the snapshot's removed servers (version 5, and
 * version 4 still read).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_test.h"
#include "util/checksum.h"

#define FIRST_GROUP 100
#define N(a) (sizeof(a) / sizeof(a)[0])

static jr__meta_op op_info(uint8_t type, const char *name)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = type;
    op.server.name = name;
    op.server.cluster = "east";
    return op;
}

/* A SERVER_REMOVE of name with its re-placements rep[0..nrep-1]. */
static jr__meta_op remove_op(const char *name, jr__meta_replace *rep, size_t nrep)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_SERVER_REMOVE;
    op.server.name = name;
    op.replace = rep;
    op.nreplace = nrep;
    return op;
}

/* A stream config of name with one subject filter (*subject) at `replicas`. */
static void stream_config(jr_stream_config *c, const char *name, const char **subject, int replicas)
{
    jr_stream_config_init(c);
    c->name = name;
    c->subjects = subject;
    c->nsubjects = 1;
    c->replicas = replicas;
}

/* n1..n4 registered; ORDERS R3 on n1 n2 n3 (index 10), LOGS R1 on n3 (index 11). */
static void cluster(jr__meta_state *st)
{
    static const char *names[] = {"n1", "n2", "n3", "n4"};
    jr__meta_state_init(st, NULL, FIRST_GROUP);
    jr__meta_result res;
    for (size_t i = 0; i < N(names); i++) {
        jr__meta_op op = op_info(JR__META_SERVER_INFO, names[i]);
        ck_assert_int_eq(mt_apply(st, i + 1, &op, &res), 0);
    }
    static const char *s1[] = {"orders.>"}, *s2[] = {"logs.>"};
    static const char *p3[] = {"n1", "n2", "n3"}, *p1[] = {"n3"};
    jr_stream_config c;
    stream_config(&c, "ORDERS", s1, 3);
    jr__meta_op op = mt_stream_op(JR__META_STREAM_ADD, &c, p3, 3);
    ck_assert_int_eq(mt_apply(st, 10, &op, &res), 0);
    stream_config(&c, "LOGS", s2, 1);
    op = mt_stream_op(JR__META_STREAM_ADD, &c, p1, 1);
    ck_assert_int_eq(mt_apply(st, 11, &op, &res), 0);
}

START_TEST(server_ops_round_trip_canonically)
{
    static const char *pa[] = {"n1", "n2", "n4"}, *pb[] = {"n4"};
    jr__meta_replace rep[2] = {{"LOGS", pb, 1}, {"ORDERS", pa, 3}};
    jr__meta_op op = remove_op("n3", rep, 2);
    op.request_id = 7;
    op.origin = "n1";
    jr__buf a, b;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__meta_op_encode(&op, &a), 0);
    jr__meta_op d;
    ck_assert_int_eq(jr__meta_op_decode(a.data, a.len, NULL, &d), 0);
    ck_assert_uint_eq(d.type, JR__META_SERVER_REMOVE);
    ck_assert_str_eq(d.server.name, "n3");
    ck_assert_uint_eq(d.nreplace, 2);
    ck_assert_str_eq(d.replace[1].stream, "ORDERS");
    ck_assert_uint_eq(d.replace[1].npeers, 3);
    ck_assert_str_eq(d.replace[1].peers[2], "n4");
    ck_assert_int_eq(jr__meta_op_encode(&d, &b), 0);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_int_eq(memcmp(a.data, b.data, a.len), 0);
    jr__meta_op_free(&d);
    /* truncated at every length: refused, never read past the end */
    for (size_t len = 0; len < a.len; len++) {
        uint8_t *cut = malloc(len + 8);
        memcpy(cut, a.data, len);
        ck_assert_int_ne(jr__meta_op_decode(cut, len, NULL, &d), 0);
        if (len >= 10) {
            jr__put_u64(cut + len - 8, jr__xxh3(cut, len - 8)); /* resealed: still refused */
            ck_assert_int_ne(jr__meta_op_decode(cut, len, NULL, &d), 0);
        }
        free(cut);
    }
    /* the encoder refuses what the decoder would: streams out of order, the removed server
     * among the new peers */
    jr__meta_replace bad[2] = {{"ORDERS", pa, 3}, {"LOGS", pb, 1}};
    op.replace = bad;
    jr__buf_reset(&b);
    ck_assert_int_eq(jr__meta_op_encode(&op, &b), JR_EINVAL);
    static const char *pc[] = {"n1", "n3"};
    jr__meta_replace self[1] = {{"ORDERS", pc, 2}};
    op.replace = self;
    op.nreplace = 1;
    ck_assert_int_eq(jr__meta_op_encode(&op, &b), JR_EINVAL);
    /* SERVER_JOIN is SERVER_INFO's body */
    jr__meta_op j = op_info(JR__META_SERVER_JOIN, "n9");
    jr__buf_reset(&a);
    jr__buf_reset(&b);
    ck_assert_int_eq(jr__meta_op_encode(&j, &a), 0);
    ck_assert_int_eq(jr__meta_op_decode(a.data, a.len, NULL, &d), 0);
    ck_assert_uint_eq(d.type, JR__META_SERVER_JOIN);
    ck_assert_str_eq(d.server.cluster, "east");
    ck_assert_int_eq(jr__meta_op_encode(&d, &b), 0);
    ck_assert_int_eq(memcmp(a.data, b.data, a.len), 0);
    jr__meta_op_free(&d);
    /* a type above the last known one: a later release's */
    a.data[1] = JR__META_OP_MAX + 1;
    jr__put_u64(a.data + a.len - 8, jr__xxh3(a.data, a.len - 8));
    ck_assert_int_eq(jr__meta_op_decode(a.data, a.len, NULL, &d), JR_EVERSION);
    jr__buf_free(&a);
    jr__buf_free(&b);
}
END_TEST

START_TEST(remove_tombstones_the_server_and_replaces_its_streams)
{
    jr__meta_state st;
    cluster(&st);
    static const char *pa[] = {"n1", "n2", "n4"};
    jr__meta_replace rep[1] = {{"ORDERS", pa, 3}};
    jr__meta_op op = remove_op("n3", rep, 1);
    jr__meta_result res;
    ck_assert_int_eq(mt_apply(&st, 20, &op, &res), 0);
    ck_assert_int_eq(res.changed, 1);
    ck_assert_msg(strstr(res.msg, "1 stream re-placed") && strstr(res.msg, "LOGS"), "%s", res.msg);
    ck_assert_ptr_null(jr__meta_server_find(&st, "n3"));
    ck_assert(jr__meta_server_removed(&st, "n3"));
    const jr__meta_stream *s = jr__meta_stream_find(&st, "ORDERS");
    ck_assert(jr__meta_stream_has_peer(s, "n4") && !jr__meta_stream_has_peer(s, "n3"));
    ck_assert_uint_eq(s->peers_at, 20);
    ck_assert(jr__meta_stream_busy(s));
    /* LOGS (its only replica on n3) keeps it: under-replicated, never dropped */
    ck_assert(jr__meta_stream_has_peer(jr__meta_stream_find(&st, "LOGS"), "n3"));
    /* the removed server is refused from now on */
    jr__meta_op info = op_info(JR__META_SERVER_INFO, "n3");
    ck_assert_int_eq(mt_apply(&st, 21, &info, &res), JR_EREMOVED);
    info.type = JR__META_SERVER_JOIN;
    ck_assert_int_eq(mt_apply(&st, 22, &info, &res), JR_EREMOVED);
    op.nreplace = 0;
    ck_assert_int_eq(mt_apply(&st, 23, &op, &res), JR_ENOTMEMBER);
    /* an update of LOGS may keep its removed peer (it had it) */
    static const char *s2[] = {"logs.>"}, *p1[] = {"n3"};
    jr_stream_config c;
    stream_config(&c, "LOGS", s2, 1);
    c.max_msgs = 10;
    jr__meta_op up = mt_stream_op(JR__META_STREAM_UPDATE, &c, p1, 1);
    mt_apply(&st, 24, &up, &res);
    ck_assert_msg(res.status == 0, "%s", res.msg);
    /* a join: a new server is recorded; beyond the cap refused */
    jr__meta_op j = op_info(JR__META_SERVER_JOIN, "n9");
    ck_assert_int_eq(mt_apply(&st, 25, &j, &res), 0);
    ck_assert_ptr_nonnull(jr__meta_server_find(&st, "n9"));
    uint64_t idx = 26;
    char name[16];
    for (int i = 0; st.nservers < JR_STREAMS_MAX_SERVERS; i++) {
        snprintf(name, sizeof name, "x%d", i);
        jr__meta_op x = op_info(JR__META_SERVER_JOIN, name);
        ck_assert_int_eq(mt_apply(&st, idx++, &x, &res), 0);
    }
    jr__meta_op x = op_info(JR__META_SERVER_JOIN, "one-too-many");
    ck_assert_int_eq(mt_apply(&st, idx++, &x, &res), JR_ENORESOURCES);
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(re_placements_that_no_longer_fit_are_skipped)
{
    jr__meta_state st;
    cluster(&st);
    /* ORDERS mid-change (an update moved it off n3 meanwhile), and a re-placement naming a
     * stream that does not exist: both skipped, the removal itself goes through */
    static const char *s1[] = {"orders.>"}, *p[] = {"n1", "n2", "n4"}, *q[] = {"n1", "n2", "n4"};
    jr_stream_config c;
    stream_config(&c, "ORDERS", s1, 3);
    jr__meta_op up = mt_stream_op(JR__META_STREAM_UPDATE, &c, p, 3);
    jr__meta_result res;
    ck_assert_int_eq(mt_apply(&st, 20, &up, &res), 0);
    jr__meta_replace rep[2] = {{"NOPE", q, 3}, {"ORDERS", q, 3}};
    jr__meta_op op = remove_op("n3", rep, 2);
    ck_assert_int_eq(mt_apply(&st, 21, &op, &res), 0);
    ck_assert_msg(strstr(res.msg, "0 streams re-placed"), "%s", res.msg);
    const jr__meta_stream *s = jr__meta_stream_find(&st, "ORDERS");
    ck_assert_uint_eq(s->peers_at, 20); /* its own change goes on untouched */
    ck_assert(jr__meta_server_removed(&st, "n3"));
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(the_last_server_cannot_be_removed)
{
    jr__meta_state st;
    jr__meta_state_init(&st, NULL, FIRST_GROUP);
    jr__meta_result res;
    jr__meta_op info = op_info(JR__META_SERVER_INFO, "n1");
    mt_apply(&st, 1, &info, &res);
    jr__meta_op op = remove_op("n1", NULL, 0);
    ck_assert_int_eq(mt_apply(&st, 2, &op, &res), JR_EINVAL);
    ck_assert_ptr_nonnull(jr__meta_server_find(&st, "n1"));
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(snapshot_keeps_the_removed_servers_and_reads_version_4)
{
    jr__meta_state st;
    cluster(&st);
    jr__meta_op op = remove_op("n4", NULL, 0);
    jr__meta_result res;
    ck_assert_int_eq(mt_apply(&st, 20, &op, &res), 0);
    op.server.name = "n2";
    ck_assert_int_eq(mt_apply(&st, 21, &op, &res), 0);
    jr__buf a, b;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__meta_snapshot(&st, &a), 0);
    ck_assert_uint_eq(a.data[4], 7);
    jr__meta_state r;
    jr__meta_state_init(&r, NULL, 1);
    ck_assert_int_eq(jr__meta_restore(&r, a.data, a.len), 0);
    ck_assert_uint_eq(r.nremoved, 2);
    ck_assert_str_eq(r.removed[0], "n2");
    ck_assert(jr__meta_server_removed(&r, "n4"));
    ck_assert_int_eq(jr__meta_snapshot(&r, &b), 0);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_int_eq(memcmp(a.data, b.data, a.len), 0);
    /* a removed server listed among the servers, or out of order: corrupt */
    jr__meta_state_free(&r);
    jr__meta_state_init(&r, NULL, 1);
    size_t tail = a.len - 10; /* the list ends before the (empty) origins: "n2" "n4" */
    ck_assert_uint_eq(a.data[tail - 6], 2);
    a.data[tail - 4] = 'n';
    a.data[tail - 3] = '4';
    a.data[tail - 1] = '2';
    jr__put_u64(a.data + tail + 2, jr__xxh3(a.data, tail + 2)); /* after the draining list */
    ck_assert_int_eq(jr__meta_restore(&r, a.data, a.len), JR_ECORRUPT);
    ck_assert_uint_eq(r.nremoved, 0);
    /* version 4: the same without the list */
    jr__meta_state v4;
    cluster(&v4);
    jr__buf_reset(&a);
    ck_assert_int_eq(jr__meta_snapshot(&v4, &a), 0);
    ck_assert_uint_eq(a.data[a.len - 11], 0); /* no removed servers */
    ck_assert_uint_eq(a.data[a.len - 10], 0); /* no origins */
    ck_assert_uint_eq(a.data[a.len - 9], 0);  /* no draining servers */
    a.data[4] = 4;
    a.len -= 11;
    jr__buf_u64(&a, jr__xxh3(a.data, a.len));
    ck_assert_int_eq(jr__meta_restore(&r, a.data, a.len), 0);
    ck_assert_uint_eq(r.nservers, 4);
    ck_assert_uint_eq(r.nstreams, 2);
    ck_assert_uint_eq(r.nremoved, 0);
    jr__buf_free(&a);
    jr__buf_free(&b);
    jr__meta_state_free(&r);
    jr__meta_state_free(&v4);
    jr__meta_state_free(&st);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("meta_servers");
    TCase *tc = tcase_create("servers");
    tcase_add_test(tc, server_ops_round_trip_canonically);
    tcase_add_test(tc, remove_tombstones_the_server_and_replaces_its_streams);
    tcase_add_test(tc, re_placements_that_no_longer_fit_are_skipped);
    tcase_add_test(tc, the_last_server_cannot_be_removed);
    tcase_add_test(tc, snapshot_keeps_the_removed_servers_and_reads_version_4);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
