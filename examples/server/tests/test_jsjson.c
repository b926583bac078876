/*
 * test_jsjson.c — the consumer side of the server's JetStream JSON and text: ConsumerConfig in and
 * out (the defaults and the field forms nats-server writes), ConsumerInfo, the consumer errors,
 * pull request bodies, ack payloads and ack subjects, RFC 3339 times and Go durations, each
 * with the byte patterns nats.c and nats.js send; and the cluster block of an info with a peer
 * change in progress.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsjson.h"

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    ck_assert_msg(j != NULL, "bad test JSON: %s", je.text);
    return j;
}

/* The config as nats.c sends it for a durable pull subscription, echoed as nats-server 2.9.10
 * echoes it once the library filled in its defaults. */
START_TEST(consumer_config_parses_and_echoes_as_nats_server)
{
    json_t *j =
        parse("{\"durable_name\":\"dur1\",\"deliver_policy\":\"all\",\"ack_policy\":"
              "\"explicit\",\"filter_subject\":\"orders.>\",\"replay_policy\":\"instant\"}");
    js_consumer_cfg cfg;
    int code = 0, err_code = 0;
    char desc[300];
    ck_assert_int_eq(js_consumer_cfg_parse(j, &cfg, &code, &err_code, desc, sizeof desc), 0);
    ck_assert_str_eq(cfg.c.durable_name, "dur1");
    ck_assert_ptr_null(cfg.c.name);
    ck_assert_int_eq(cfg.c.ack_policy, JR_ACK_EXPLICIT);
    ck_assert_str_eq(cfg.c.filter_subject, "orders.>");
    /* the library's normal form: what consumer info carries */
    cfg.c.ack_wait_ns = 30000000000;
    cfg.c.max_deliver = -1;
    cfg.c.max_waiting = 512;
    cfg.c.max_ack_pending = 1000;
    json_t *out = js_consumer_config_json(&cfg.c);
    char *txt = json_dumps(out, JSON_COMPACT);
    ck_assert_str_eq(txt, "{\"durable_name\":\"dur1\",\"deliver_policy\":\"all\",\"ack_policy\":"
                          "\"explicit\",\"ack_wait\":30000000000,\"max_deliver\":-1,"
                          "\"filter_subject\":\"orders.>\",\"replay_policy\":\"instant\","
                          "\"max_waiting\":512,\"max_ack_pending\":1000,\"num_replicas\":0}");
    free(txt);
    json_decref(out);
    js_consumer_cfg_free(&cfg);
    json_decref(j);
}
END_TEST

START_TEST(consumer_config_fields_and_refusals)
{
    js_consumer_cfg cfg;
    int code = 0, err_code = 0;
    char desc[300];
    /* every field nats.js may send, with its JSON type */
    json_t *j = parse(
        "{\"name\":\"c1\",\"description\":\"d\",\"deliver_policy\":\"by_start_time\","
        "\"opt_start_time\":\"2026-01-02T03:04:05.5Z\",\"ack_policy\":\"all\",\"ack_wait\":"
        "5000000000,\"max_deliver\":5,\"backoff\":[1000000000,2000000000],\"filter_subjects\":"
        "[\"a.>\",\"b.*\"],\"replay_policy\":\"original\",\"max_waiting\":9,\"max_ack_pending\":"
        "20,\"headers_only\":true,\"max_batch\":10,\"max_expires\":60000000000,\"max_bytes\":"
        "1024,\"inactive_threshold\":7000000000,\"num_replicas\":1,\"mem_storage\":true,"
        "\"metadata\":{\"k\":\"v\"},\"priority_groups\":[\"g\"],\"priority_policy\":"
        "\"pinned_client\",\"priority_timeout\":3000000000}");
    ck_assert_int_eq(js_consumer_cfg_parse(j, &cfg, &code, &err_code, desc, sizeof desc), 0);
    ck_assert_int_eq(cfg.c.deliver_policy, JR_DELIVER_BY_START_TIME);
    ck_assert_uint_eq(cfg.c.opt_start_time_ns, 1767323045500000000ull);
    ck_assert_int_eq(cfg.c.ack_policy, JR_ACK_ALL);
    ck_assert_uint_eq(cfg.c.nbackoff, 2);
    ck_assert_int_eq(cfg.c.backoff_ns[1], 2000000000);
    ck_assert_uint_eq(cfg.c.nfilter_subjects, 2);
    ck_assert_str_eq(cfg.c.filter_subjects[1], "b.*");
    ck_assert_int_eq(cfg.c.replay_policy, JR_REPLAY_ORIGINAL);
    ck_assert_int_eq(cfg.c.headers_only, 1);
    ck_assert_int_eq(cfg.c.mem_storage, 1);
    ck_assert_int_eq(cfg.c.priority_policy, JR_PRIORITY_PINNED_CLIENT);
    ck_assert_uint_eq(cfg.c.nmetadata, 1);
    json_t *out = js_consumer_config_json(&cfg.c);
    ck_assert_str_eq(json_string_value(json_object_get(out, "opt_start_time")),
                     "2026-01-02T03:04:05.500000000Z");
    ck_assert_str_eq(json_string_value(json_object_get(out, "priority_policy")), "pinned_client");
    ck_assert_int_eq(json_array_size(json_object_get(out, "filter_subjects")), 2);
    ck_assert_ptr_null(json_object_get(out, "filter_subject"));
    json_decref(out);
    js_consumer_cfg_free(&cfg);
    json_decref(j);

    /* a missing ack_policy is "none", as Go's zero value */
    j = parse("{}");
    ck_assert_int_eq(js_consumer_cfg_parse(j, &cfg, &code, &err_code, desc, sizeof desc), 0);
    ck_assert_int_eq(cfg.c.ack_policy, JR_ACK_NONE);
    js_consumer_cfg_free(&cfg);
    json_decref(j);

    /* wrong JSON types and unknown enum strings are 400/10025, as a Go decode error */
    static const char *const bad[] = {
        "{\"ack_policy\":\"sometimes\"}", "{\"deliver_policy\":1}", "{\"ack_wait\":\"30s\"}",
        "{\"num_replicas\":\"3\"}",       "{\"backoff\":[\"1s\"]}", "{\"opt_start_time\":123}",
        "{\"metadata\":{\"k\":1}}",       "{\"headers_only\":1}",   "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        j = parse(bad[i]);
        ck_assert_msg(js_consumer_cfg_parse(j, &cfg, &code, &err_code, desc, sizeof desc) == -1,
                      "accepted %s", bad[i]);
        ck_assert_int_eq(code, 400);
        ck_assert_int_eq(err_code, 10025);
        ck_assert_msg(!strncmp(desc, "invalid JSON: ", 14), "%s", desc);
        js_consumer_cfg_free(&cfg);
        json_decref(j);
    }
}
END_TEST

START_TEST(consumer_info_has_the_fields_clients_read)
{
    jr_consumer_config c;
    jr_consumer_config_init(&c);
    c.durable_name = c.name = "dur1";
    jr_peer_info p2 = {sizeof p2, "n2", 1, 0, 0, 0, 1000, 0, 0, 0, 0, 0};
    jr_peer_info p3 = {sizeof p3, "n3", 0, 1, 0, 0, UINT64_MAX, 0, 0, 0, 0, 0};
    const jr_peer_info *reps[] = {&p2, &p3};
    jr_cluster_info ci = {sizeof ci, "C1", "C-R3F-x", "n1", reps, 2, NULL};
    jr_consumer_info info = {sizeof info, "ORDERS", "dur1", 1000000000, &c, {7, 9, 0},
                             {5, 6, 0},   2,        1,      0,          3,  &ci};
    json_t *j = js_consumer_info_json(&info, 2000000000);
    ck_assert_str_eq(json_string_value(json_object_get(j, "stream_name")), "ORDERS");
    ck_assert_str_eq(json_string_value(json_object_get(j, "created")),
                     "1970-01-01T00:00:01.000000000Z");
    json_t *d = json_object_get(j, "delivered"), *f = json_object_get(j, "ack_floor");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "consumer_seq")), 7);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "stream_seq")), 9);
    ck_assert_ptr_null(json_object_get(d, "last_active")); /* never: left out */
    ck_assert_int_eq(json_integer_value(json_object_get(f, "stream_seq")), 6);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "num_ack_pending")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "num_redelivered")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "num_waiting")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "num_pending")), 3);
    json_t *cl = json_object_get(j, "cluster");
    ck_assert_str_eq(json_string_value(json_object_get(cl, "leader")), "n1");
    json_t *r0 = json_array_get(json_object_get(cl, "replicas"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(r0, "name")), "n2");
    ck_assert(json_is_true(json_object_get(r0, "current")));
    ck_assert(json_is_integer(json_object_get(r0, "active")));
    /* not heard from since the leader's election: no "active" (not 0, "seen just now") */
    json_t *r1 = json_array_get(json_object_get(cl, "replicas"), 1);
    ck_assert_str_eq(json_string_value(json_object_get(r1, "name")), "n3");
    ck_assert_ptr_null(json_object_get(r1, "active"));
    ck_assert_ptr_null(json_object_get(j, "paused"));
    json_decref(j);
}
END_TEST

/* A peer change in progress shows as JetStream 2.15's cluster.desired: target peers, origin,
 * and what it waits on; a replica on its way in or out is pending. A stable group has no
 * desired block. */
START_TEST(cluster_shows_a_peer_change_as_desired)
{
    jr_peer_info p2 = {sizeof p2, "n2", 1, 0, 0, 0, 1000, 0, 0, 0, 0, 0};
    jr_peer_info p4 = {sizeof p4, "n4", 0, 0, 1, 1, 1000, 5, 0, 0, 0, 0};
    const jr_peer_info *reps[] = {&p2, &p4};
    const char *target[] = {"n1", "n2", "n4"}, *origin[] = {"n1", "n2", "n3"};
    jr_move_info mv = {
        sizeof mv, target, 3, origin, 3, JR_MOVE_CATCHUP, "waiting for peers to catch up", NULL};
    jr_cluster_info ci = {sizeof ci, "C1", "S-R3F-x", "n1", reps, 2, &mv};
    json_t *cl = js_cluster_json(&ci);
    json_t *r1 = json_array_get(json_object_get(cl, "replicas"), 1);
    ck_assert(json_is_true(json_object_get(r1, "pending")));
    ck_assert(json_is_true(json_object_get(r1, "observer")));
    ck_assert_ptr_null(
        json_object_get(json_array_get(json_object_get(cl, "replicas"), 0), "pending"));
    json_t *d = json_object_get(cl, "desired");
    ck_assert_str_eq(json_string_value(json_object_get(d, "name")), "S-R3F-x");
    json_t *t = json_object_get(d, "replicas");
    ck_assert_int_eq(json_array_size(t), 3);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(t, 2), "name")), "n4");
    json_t *o = json_object_get(d, "origin");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "replicas")), 3);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_array_get(json_object_get(o, "peers"), 2), "name")),
        "n3");
    json_t *st = json_object_get(d, "status");
    ck_assert_str_eq(json_string_value(json_object_get(st, "type")), "catchup");
    ck_assert_str_eq(json_string_value(json_object_get(st, "description")),
                     "waiting for peers to catch up");
    ck_assert_ptr_null(json_object_get(st, "err"));
    json_decref(cl);

    /* a cancel returning: no origin recorded; a persisting fault as err */
    mv.norigin = 0;
    mv.status = JR_MOVE_QUORUM;
    mv.error = "peer n4 unreachable";
    cl = js_cluster_json(&ci);
    d = json_object_get(cl, "desired");
    ck_assert_ptr_null(json_object_get(d, "origin"));
    st = json_object_get(d, "status");
    ck_assert_str_eq(json_string_value(json_object_get(st, "type")), "quorum");
    ck_assert_str_eq(json_string_value(json_object_get(st, "err")), "peer n4 unreachable");
    json_decref(cl);

    ci.move = NULL;
    cl = js_cluster_json(&ci);
    ck_assert_ptr_null(json_object_get(cl, "desired"));
    json_decref(cl);
}
END_TEST

/* A replica whose state machine failed keeps nats' fields and types (not current, active as
 * an integer) and adds fsm_failed, with fsm_rebuilding while it is rebuilt; a healthy replica
 * carries neither. The same object is a stream's and a consumer's cluster block. */
START_TEST(cluster_shows_a_failed_state_machine)
{
    jr_peer_info p2 = {sizeof p2, "n2", 0, 0, 0, 0, 1000, 0, 0, 0, 1, 0};
    jr_peer_info p3 = {sizeof p3, "n3", 0, 0, 0, 0, 2000, 0, 0, 0, 1, 1};
    jr_peer_info p4 = {sizeof p4, "n4", 1, 0, 0, 0, 3000, 0, 0, 0, 0, 0};
    const jr_peer_info *reps[] = {&p2, &p3, &p4};
    jr_cluster_info ci = {sizeof ci, "C1", "S-R5F-x", "n1", reps, 3, NULL};
    json_t *cl = js_cluster_json(&ci);
    json_t *r = json_object_get(cl, "replicas");
    json_t *r2 = json_array_get(r, 0), *r3 = json_array_get(r, 1), *r4 = json_array_get(r, 2);
    ck_assert(json_is_false(json_object_get(r2, "current")));
    ck_assert_int_eq(json_integer_value(json_object_get(r2, "active")), 1000);
    ck_assert_ptr_null(json_object_get(r2, "offline"));
    ck_assert(json_is_true(json_object_get(r2, "fsm_failed")));
    ck_assert_ptr_null(json_object_get(r2, "fsm_rebuilding"));
    ck_assert(json_is_true(json_object_get(r3, "fsm_failed")));
    ck_assert(json_is_true(json_object_get(r3, "fsm_rebuilding")));
    ck_assert(json_is_true(json_object_get(r4, "current")));
    ck_assert_ptr_null(json_object_get(r4, "fsm_failed"));
    ck_assert_ptr_null(json_object_get(r4, "fsm_rebuilding"));
    json_decref(cl);

    /* a rebuilding flag without fsm_failed (the library never sets one alone) is not shown */
    p4.fsm_rebuilding = 1;
    cl = js_cluster_json(&ci);
    r4 = json_array_get(json_object_get(cl, "replicas"), 2);
    ck_assert_ptr_null(json_object_get(r4, "fsm_rebuilding"));
    json_decref(cl);
}
END_TEST

/* A damaged replica and an unvouched one say so in fields of their own, left out when false;
 * nats' current is false for both. */
START_TEST(cluster_shows_damaged_and_unvouched_replicas)
{
    jr_peer_info p2 = {sizeof p2, "n2", 0, 0, 0, 0, 1000, 0, 1, 0, 0, 0};
    jr_peer_info p3 = {sizeof p3, "n3", 0, 0, 0, 0, 2000, 0, 0, 1, 0, 0};
    jr_peer_info p4 = {sizeof p4, "n4", 1, 0, 0, 0, 3000, 0, 0, 0, 0, 0};
    const jr_peer_info *reps[] = {&p2, &p3, &p4};
    jr_cluster_info ci = {sizeof ci, "C1", "S-R3F-x", "n1", reps, 3, NULL};
    json_t *cl = js_cluster_json(&ci);
    json_t *r = json_object_get(cl, "replicas");
    json_t *r2 = json_array_get(r, 0), *r3 = json_array_get(r, 1), *r4 = json_array_get(r, 2);
    ck_assert(json_is_false(json_object_get(r2, "current")));
    ck_assert(json_is_true(json_object_get(r2, "damaged")));
    ck_assert_ptr_null(json_object_get(r2, "unvouched"));
    ck_assert(json_is_false(json_object_get(r3, "current")));
    ck_assert(json_is_true(json_object_get(r3, "unvouched")));
    ck_assert_ptr_null(json_object_get(r3, "damaged"));
    ck_assert_ptr_null(json_object_get(r4, "damaged"));
    ck_assert_ptr_null(json_object_get(r4, "unvouched"));
    json_decref(cl);
}
END_TEST

START_TEST(consumer_errors_have_jetstream_codes)
{
    int code, err_code;
    char desc[300];
    js_map_consumer_error(JR_ENOTFOUND, "consumer not found", 'i', &code, &err_code, desc,
                          sizeof desc);
    ck_assert_int_eq(code, 404);
    ck_assert_int_eq(err_code, 10014);
    ck_assert_str_eq(desc, "consumer not found");
    js_map_consumer_error(JR_ENOSTREAM, NULL, 'c', &code, &err_code, desc, sizeof desc);
    ck_assert_int_eq(err_code, 10059);
    js_map_consumer_error(JR_ENOTFOUND, "consumer does not exist", 'u', &code, &err_code, desc,
                          sizeof desc);
    ck_assert_int_eq(err_code, 10149);
    js_map_consumer_error(JR_EEXIST, "consumer already exists", 'c', &code, &err_code, desc,
                          sizeof desc);
    ck_assert_int_eq(code, 400);
    ck_assert_int_eq(err_code, 10148);
    js_map_consumer_error(JR_EINVAL, "ack policy can not be updated", 'c', &code, &err_code, desc,
                          sizeof desc);
    ck_assert_int_eq(code, 500);
    ck_assert_int_eq(err_code, 10012);
    js_map_consumer_error(JR_EINVAL,
                          "consumer delivery policy is deliver all, but optional "
                          "start sequence is also set",
                          'c', &code, &err_code, desc, sizeof desc);
    ck_assert_int_eq(code, 400);
    ck_assert_int_eq(err_code, 10094);
    js_map_consumer_error(JR_EINVAL, "consumer idle heartbeat needs to be >= 100ms", 'c', &code,
                          &err_code, desc, sizeof desc);
    ck_assert_int_eq(err_code, 10083);
    js_map_consumer_error(JR_ENOLEADER, NULL, 'i', &code, &err_code, desc, sizeof desc);
    ck_assert_int_eq(code, 503);
    ck_assert_int_eq(err_code, 10008);
    ck_assert_str_eq(desc, "JetStream system temporarily unavailable");
}
END_TEST

START_TEST(stream_errors_have_jetstream_codes_and_texts)
{
    int code, err_code;
    char desc[300];
    js_map_error(JR_EINVAL, "storage: can not be changed", 'u', &code, &err_code, desc,
                 sizeof desc);
    ck_assert_int_eq(code, 500);
    ck_assert_int_eq(err_code, 10052);
    ck_assert_str_eq(desc, "stream configuration update can not change storage type");
    js_map_error(JR_EINVAL, "max_age: must be at least 0", 'u', &code, &err_code, desc,
                 sizeof desc);
    ck_assert_str_eq(desc, "max_age: must be at least 0");
    js_map_error(JR_ENOTFOUND, NULL, 'x', &code, &err_code, desc, sizeof desc);
    ck_assert_int_eq(code, 500);
    ck_assert_int_eq(err_code, 10057);
    js_map_error(JR_ENOTFOUND, "stream 'X' not found", 'x', &code, &err_code, desc, sizeof desc);
    ck_assert_int_eq(code, 404);
    ck_assert_int_eq(err_code, 10059);
    js_map_error(JR_ENOTFOUND, NULL, 'g', &code, &err_code, desc, sizeof desc);
    ck_assert_int_eq(err_code, 10037);
    js_map_error(JR_ENOTFOUND, "peer: 'zz' is not a known server", 's', &code, &err_code, desc,
                 sizeof desc);
    ck_assert_int_eq(code, 400);
    ck_assert_int_eq(err_code, 10005);
    ck_assert_str_eq(desc, "preferred server \"zz\" not known");
}
END_TEST

START_TEST(pull_bodies_as_clients_send_them)
{
    js_pull q;
    char err[200];
    /* empty: one message, no expiry */
    ck_assert_int_eq(js_pull_parse("", 0, &q, err, sizeof err), 0);
    ck_assert_int_eq(q.batch, 1);
    ck_assert_int_eq(q.expires_ns, 0);
    /* a bare batch size */
    ck_assert_int_eq(js_pull_parse("10", 2, &q, err, sizeof err), 0);
    ck_assert_int_eq(q.batch, 10);
    /* nats.c Fetch */
    const char *c = "{\"batch\":3,\"expires\":1990000000,\"no_wait\":true}";
    ck_assert_int_eq(js_pull_parse(c, strlen(c), &q, err, sizeof err), 0);
    ck_assert_int_eq(q.batch, 3);
    ck_assert_int_eq(q.expires_ns, 1990000000);
    ck_assert_int_eq(q.no_wait, 1);
    /* nats.js consume */
    const char *js = "{\"batch\":100,\"max_bytes\":0,\"idle_heartbeat\":15000000000,\"expires\":"
                     "30000000000}";
    ck_assert_int_eq(js_pull_parse(js, strlen(js), &q, err, sizeof err), 0);
    ck_assert_int_eq(q.batch, 100);
    ck_assert_int_eq(q.heartbeat_ns, 15000000000);
    ck_assert_int_eq(q.no_wait, 0);
    /* priority group fields */
    const char *pg = "{\"batch\":1,\"group\":\"g1\",\"id\":\"pin\",\"priority\":3,"
                     "\"min_pending\":5}";
    ck_assert_int_eq(js_pull_parse(pg, strlen(pg), &q, err, sizeof err), 0);
    ck_assert_str_eq(q.group, "g1");
    ck_assert_str_eq(q.id, "pin");
    ck_assert_int_eq(q.priority, 3);
    ck_assert_int_eq(q.min_pending, 5);
    /* refusals, with the text that follows "400 Bad Request - " */
    const char *hb = "{\"batch\":5,\"expires\":1000000000,\"idle_heartbeat\":600000000}";
    ck_assert_int_eq(js_pull_parse(hb, strlen(hb), &q, err, sizeof err), -1);
    ck_assert_str_eq(err, "heartbeat value too large");
    const char *hb0 = "{\"batch\":5,\"idle_heartbeat\":600000000}";
    ck_assert_int_eq(js_pull_parse(hb0, strlen(hb0), &q, err, sizeof err), -1);
    ck_assert_str_eq(err, "heartbeat requires request expiration");
    ck_assert_int_eq(js_pull_parse("{\"batch\":", 9, &q, err, sizeof err), -1);
    ck_assert_int_eq(js_pull_parse("{\"batch\":\"x\"}", 13, &q, err, sizeof err), -1);
    ck_assert_int_eq(js_pull_parse("x1", 2, &q, err, sizeof err), -1);
    const char *pr = "{\"priority\":10}";
    ck_assert_int_eq(js_pull_parse(pr, strlen(pr), &q, err, sizeof err), -1);
    ck_assert_str_eq(err, "Priority must be between 0 and 9");
}
END_TEST

START_TEST(ack_payloads)
{
    js_ack a;
    js_ack_parse("", 0, &a);
    ck_assert_int_eq(a.kind, JR_ACK_ACK);
    js_ack_parse("+ACK", 4, &a);
    ck_assert_int_eq(a.kind, JR_ACK_ACK);
    ck_assert_int_eq(a.next, 0);
    js_ack_parse("+OK", 3, &a);
    ck_assert_int_eq(a.kind, JR_ACK_ACK);
    js_ack_parse("-NAK", 4, &a);
    ck_assert_int_eq(a.kind, JR_ACK_NAK);
    ck_assert_int_eq(a.delay_ns, 0);
    const char *nd = "-NAK {\"delay\":500000000}";
    js_ack_parse(nd, strlen(nd), &a);
    ck_assert_int_eq(a.kind, JR_ACK_NAK);
    ck_assert_int_eq(a.delay_ns, 500000000);
    js_ack_parse("-NAK 1m30s", 10, &a);
    ck_assert_int_eq(a.delay_ns, 90000000000);
    js_ack_parse("-NAK soon", 9, &a); /* unparsable: a plain NAK */
    ck_assert_int_eq(a.kind, JR_ACK_NAK);
    ck_assert_int_eq(a.delay_ns, 0);
    js_ack_parse("+WPI", 4, &a);
    ck_assert_int_eq(a.kind, JR_ACK_PROGRESS);
    js_ack_parse("+TERM", 5, &a);
    ck_assert_int_eq(a.kind, JR_ACK_TERM);
    ck_assert_uint_eq(a.rest_len, 0);
    js_ack_parse("+TERM bad data", 14, &a);
    ck_assert_int_eq(a.kind, JR_ACK_TERM);
    ck_assert_uint_eq(a.rest_len, 8);
    ck_assert(!memcmp(a.rest, "bad data", 8));
    js_ack_parse("+NXT", 4, &a);
    ck_assert_int_eq(a.kind, JR_ACK_ACK);
    ck_assert_int_eq(a.next, 1);
    const char *nx = "+NXT {\"batch\":2}";
    js_ack_parse(nx, strlen(nx), &a);
    ck_assert_int_eq(a.next, 1);
    ck_assert_uint_eq(a.rest_len, 11);
    /* what JetStream ignores */
    js_ack_parse("+ACKX", 5, &a);
    ck_assert_int_eq(a.kind, -1);
    js_ack_parse("+WPI ", 5, &a);
    ck_assert_int_eq(a.kind, -1);
    js_ack_parse("hello", 5, &a);
    ck_assert_int_eq(a.kind, -1);
}
END_TEST

START_TEST(ack_subjects)
{
    char s[256], c[256];
    ck_assert_int_eq(js_ack_subject_parse("$JS.ACK.ORDERS.dur1.1.1.1.1795941236748206121.6", s,
                                          sizeof s, c, sizeof c),
                     0);
    ck_assert_str_eq(s, "ORDERS");
    ck_assert_str_eq(c, "dur1");
    /* v2: domain and account hash first, more tokens after */
    ck_assert_int_eq(js_ack_subject_parse("$JS.ACK._.ACCHASH.ORDERS.dur1.1.2.3.4.5.extra", s,
                                          sizeof s, c, sizeof c),
                     0);
    ck_assert_str_eq(s, "ORDERS");
    ck_assert_str_eq(c, "dur1");
    static const char *const bad[] = {
        "$JS.ACK.ORDERS.dur1.1.1.1.17",     "$JS.ACK.ORDERS.dur1.1.x.1.17.6",
        "$JS.ACK.ORDERS.dur1.1.1.1.17.6.7", "$JS.ACK..dur1.1.1.1.17.6",
        "$JS.API.ORDERS.dur1.1.1.1.17.6",   "$JS.ACK"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(js_ack_subject_parse(bad[i], s, sizeof s, c, sizeof c) == -1, "accepted %s",
                      bad[i]);
}
END_TEST

START_TEST(times_and_durations)
{
    uint64_t ns = 1;
    ck_assert_int_eq(js_parse_time("0001-01-01T00:00:00Z", &ns), 0);
    ck_assert_uint_eq(ns, 0);
    ck_assert_int_eq(js_parse_time("1970-01-01T00:00:01Z", &ns), 0);
    ck_assert_uint_eq(ns, 1000000000);
    ck_assert_int_eq(js_parse_time("2026-12-05T21:05:27.055161921Z", &ns), 0);
    char back[48];
    js_time(back, sizeof back, ns);
    ck_assert_str_eq(back, "2026-12-05T21:05:27.055161921Z");
    ck_assert_int_eq(js_parse_time("2026-12-05T22:05:27.055161921+01:00", &ns), 0);
    js_time(back, sizeof back, ns);
    ck_assert_str_eq(back, "2026-12-05T21:05:27.055161921Z");
    ck_assert_int_eq(js_parse_time("2026-12-05 21:05:27Z", &ns), -1);
    ck_assert_int_eq(js_parse_time("2026-13-05T21:05:27Z", &ns), -1);
    ck_assert_int_eq(js_parse_time("2026-12-05T21:05:27", &ns), -1);
    ck_assert_int_eq(js_parse_time("2026-12-05T21:05:27.Z", &ns), -1);
    int64_t d;
    ck_assert_int_eq(js_parse_duration("500ms", 5, &d), 0);
    ck_assert_int_eq(d, 500000000);
    ck_assert_int_eq(js_parse_duration("1.5s", 4, &d), 0);
    ck_assert_int_eq(d, 1500000000);
    ck_assert_int_eq(js_parse_duration("2h45m", 5, &d), 0);
    ck_assert_int_eq(d, (2 * 3600 + 45 * 60) * 1000000000ll);
    ck_assert_int_eq(js_parse_duration("10us", 4, &d), 0);
    ck_assert_int_eq(d, 10000);
    ck_assert_int_eq(js_parse_duration("0", 1, &d), 0);
    ck_assert_int_eq(d, 0);
    ck_assert_int_eq(js_parse_duration("5", 1, &d), -1);
    ck_assert_int_eq(js_parse_duration("-5s", 3, &d), -1);
    ck_assert_int_eq(js_parse_duration("5x", 2, &d), -1);
    ck_assert_int_eq(js_parse_duration("", 0, &d), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("server-json");
    TCase *tc = tcase_create("consumers");
    tcase_add_test(tc, consumer_config_parses_and_echoes_as_nats_server);
    tcase_add_test(tc, consumer_config_fields_and_refusals);
    tcase_add_test(tc, consumer_info_has_the_fields_clients_read);
    tcase_add_test(tc, cluster_shows_a_peer_change_as_desired);
    tcase_add_test(tc, cluster_shows_a_failed_state_machine);
    tcase_add_test(tc, cluster_shows_damaged_and_unvouched_replicas);
    tcase_add_test(tc, consumer_errors_have_jetstream_codes);
    tcase_add_test(tc, stream_errors_have_jetstream_codes_and_texts);
    tcase_add_test(tc, pull_bodies_as_clients_send_them);
    tcase_add_test(tc, ack_payloads);
    tcase_add_test(tc, ack_subjects);
    tcase_add_test(tc, times_and_durations);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
