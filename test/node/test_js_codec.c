/* The stream layer's info and server-report payloads (lib/js/codec.h): what the leader encodes
 * is what the requester decodes, every struct with its size and lists as arrays of pointers;
 * a damaged replica or server arrives damaged and is never current. */
#include <check.h>
#include <string.h>

#include "js/codec.h"
#include "js/js.h"

START_TEST(info_round_trip_keeps_damaged_and_never_current)
{
    jr_stream_config cfg;
    jr_stream_config_init(&cfg);
    cfg.name = "S";
    cfg.replicas = 3;
    jr_stream_state st = {.size = sizeof st, .msgs = 4, .last_seq = 4};
    jr_peer_info a = {.size = sizeof a, .name = "n2", .current = 1, .active_ns = 5};
    jr_peer_info b = {.size = sizeof b, .name = "n3", .current = 1, .damaged = 1, .lag = 2};
    const jr_peer_info *reps[] = {&a, &b};
    jr_cluster_info ci = {.size = sizeof ci,
                          .name = "c",
                          .group = "G",
                          .leader = "n1",
                          .replicas = reps,
                          .nreplicas = 2};
    jr_stream_info in = {
        .size = sizeof in, .config = &cfg, .created_ns = 9, .state = &st, .cluster = &ci};
    jr__buf buf;
    jr__buf_init(&buf, NULL);
    ck_assert_int_eq(jr__info_encode(&buf, &in), 0);
    jr__info_dec d;
    ck_assert_int_eq(jr__info_decode(buf.data, buf.len, NULL, &d), 0);
    const jr_stream_info *out = &d.info;
    ck_assert_uint_eq(out->size, sizeof *out);
    ck_assert_uint_eq(out->config->size, sizeof *out->config);
    ck_assert_str_eq(out->config->name, "S");
    ck_assert_ptr_null(out->config->placement);
    ck_assert_uint_eq(out->state->size, sizeof *out->state);
    ck_assert_uint_eq(out->state->msgs, 4);
    ck_assert_uint_eq(out->cluster->size, sizeof *out->cluster);
    ck_assert_str_eq(out->cluster->leader, "n1");
    ck_assert_uint_eq(out->cluster->nreplicas, 2);
    const jr_peer_info *pa = out->cluster->replicas[0], *pb = out->cluster->replicas[1];
    ck_assert_uint_eq(pa->size, sizeof *pa);
    ck_assert_int_eq(pa->current, 1);
    ck_assert_int_eq(pa->damaged, 0);
    ck_assert_uint_eq(pa->active_ns, 5);
    ck_assert_int_eq(pb->damaged, 1);
    ck_assert_int_eq(pb->current, 0); /* the sender said current: a damaged one never is */
    ck_assert_uint_eq(pb->lag, 2);
    jr__info_dec_free(&d);
    jr__buf_free(&buf);
}
END_TEST

/* A replica whose state machine failed (its server's word to the leader, flag bits 64 and 128)
 * arrives so and never current; rebuilding without failed is no encoding the leader writes. */
START_TEST(info_round_trip_keeps_a_failed_state_machine)
{
    jr_stream_config cfg;
    jr_stream_config_init(&cfg);
    cfg.name = "S";
    cfg.replicas = 3;
    jr_stream_state st = {.size = sizeof st};
    jr_peer_info a = {.size = sizeof a, .name = "n2", .current = 1, .fsm_failed = 1};
    jr_peer_info b = {
        .size = sizeof b, .name = "n3", .current = 1, .fsm_failed = 1, .fsm_rebuilding = 1};
    const jr_peer_info *reps[] = {&a, &b};
    jr_cluster_info ci = {.size = sizeof ci,
                          .name = "c",
                          .group = "G",
                          .leader = "n1",
                          .replicas = reps,
                          .nreplicas = 2};
    jr_stream_info in = {
        .size = sizeof in, .config = &cfg, .created_ns = 9, .state = &st, .cluster = &ci};
    jr__buf buf;
    jr__buf_init(&buf, NULL);
    ck_assert_int_eq(jr__info_encode(&buf, &in), 0);
    jr__info_dec d;
    ck_assert_int_eq(jr__info_decode(buf.data, buf.len, NULL, &d), 0);
    const jr_peer_info *pa = d.info.cluster->replicas[0], *pb = d.info.cluster->replicas[1];
    ck_assert_int_eq(pa->fsm_failed, 1);
    ck_assert_int_eq(pa->fsm_rebuilding, 0);
    ck_assert_int_eq(pa->current, 0);
    ck_assert_int_eq(pb->fsm_failed, 1);
    ck_assert_int_eq(pb->fsm_rebuilding, 1);
    ck_assert_int_eq(pb->current, 0);
    jr__info_dec_free(&d);
    /* the flags byte of n2's line (after its name): 128 without 64 is refused */
    const uint8_t *at = NULL;
    for (size_t i = 0; i + 3 < buf.len; i++)
        if (buf.data[i] == 2 && buf.data[i + 1] == 'n' && buf.data[i + 2] == '2') at = buf.data + i;
    ck_assert_ptr_nonnull(at);
    size_t off = (size_t)(at - buf.data) + 3;
    ck_assert_uint_eq(buf.data[off], 64 | 1); /* as given: the decoder hides current */
    buf.data[off] = 128 | 1;
    ck_assert_int_eq(jr__info_decode(buf.data, buf.len, NULL, &d), JR_ECORRUPT);
    jr__info_dec_free(&d);
    jr__buf_free(&buf);
}
END_TEST

/* A move travels with the cluster block only while there is one; a stable info's bytes are
 * what the codec wrote before moves existed; malformed moves are refused either way. */
START_TEST(info_and_consumer_info_carry_the_move)
{
    jr_stream_config cfg;
    jr_stream_config_init(&cfg);
    cfg.name = "S";
    cfg.replicas = 3;
    jr_stream_state st = {.size = sizeof st};
    jr_peer_info a = {.size = sizeof a, .name = "n2", .pending = 1};
    const jr_peer_info *reps[] = {&a};
    const char *target[] = {"n1", "n3", "n4"}, *origin[] = {"n1", "n2", "n3"};
    jr_move_info m = {.size = sizeof m,
                      .target = target,
                      .ntarget = 3,
                      .origin = origin,
                      .norigin = 3,
                      .status = JR_MOVE_CATCHUP,
                      .description = "waiting for peers to catch up",
                      .error = NULL};
    jr_cluster_info ci = {.size = sizeof ci,
                          .name = "c",
                          .group = "G",
                          .leader = "n1",
                          .replicas = reps,
                          .nreplicas = 1};
    jr_stream_info in = {.size = sizeof in, .config = &cfg, .state = &st, .cluster = &ci};
    jr__buf stable, moving;
    jr__buf_init(&stable, NULL);
    jr__buf_init(&moving, NULL);
    ck_assert_int_eq(jr__info_encode(&stable, &in), 0);
    ci.move = &m;
    ck_assert_int_eq(jr__info_encode(&moving, &in), 0);
    ck_assert_uint_gt(moving.len, stable.len);
    ck_assert(memcmp(moving.data, stable.data, stable.len) == 0); /* appended only */
    jr__info_dec d;
    ck_assert_int_eq(jr__info_decode(stable.data, stable.len, NULL, &d), 0);
    ck_assert_ptr_null(d.info.cluster->move);
    jr__info_dec_free(&d);
    ck_assert_int_eq(jr__info_decode(moving.data, moving.len, NULL, &d), 0);
    const jr_move_info *om = d.info.cluster->move;
    ck_assert_ptr_nonnull(om);
    ck_assert_uint_eq(om->size, sizeof *om);
    ck_assert_int_eq(om->status, JR_MOVE_CATCHUP);
    ck_assert_str_eq(om->description, "waiting for peers to catch up");
    ck_assert_ptr_null(om->error);
    ck_assert_uint_eq(om->ntarget, 3);
    ck_assert_str_eq(om->target[2], "n4");
    ck_assert_uint_eq(om->norigin, 3);
    ck_assert_str_eq(om->origin[1], "n2");
    ck_assert_int_eq(d.info.cluster->replicas[0]->pending, 1);
    jr__info_dec_free(&d);
    /* every truncation inside the move, and a bad status, is refused */
    for (size_t cut = stable.len + 1; cut < moving.len; cut++) {
        ck_assert_int_eq(jr__info_decode(moving.data, cut, NULL, &d), JR_ECORRUPT);
        jr__info_dec_free(&d);
    }
    m.status = 0;
    jr__buf bad;
    jr__buf_init(&bad, NULL);
    ck_assert_int_eq(jr__info_encode(&bad, &in), JR_EINVAL);
    m.status = JR_MOVE_UNAVAILABLE;
    m.error = "unknown server n9";
    /* the same block in a consumer info */
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.name = cc.durable_name = "C";
    jr_consumer_info ciq = {
        .size = sizeof ciq, .stream = "S", .name = "C", .config = &cc, .cluster = &ci};
    ck_assert_int_eq(jr__cinfo_encode(&bad, &ciq), 0);
    jr__cinfo_dec cd;
    ck_assert_int_eq(jr__cinfo_decode(bad.data, bad.len, NULL, &cd), 0);
    ck_assert_ptr_nonnull(cd.info.cluster->move);
    ck_assert_str_eq(cd.info.cluster->move->error, "unknown server n9");
    ck_assert_int_eq(cd.info.cluster->move->status, JR_MOVE_UNAVAILABLE);
    jr__cinfo_dec_free(&cd);
    jr__buf_free(&bad);
    jr__buf_free(&stable);
    jr__buf_free(&moving);
}
END_TEST

/* A server report as the meta leader writes it (meta_replica.c): two servers, one damaged. */
START_TEST(server_report_round_trip_keeps_damaged)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__buf_bytes(&b, "c", 1);
    jr__buf_bytes(&b, "n1", 2);
    jr__buf_varint(&b, 0); /* streams */
    jr__buf_varint(&b, 2); /* servers */
    const char *names[] = {"n1", "n2"};
    for (int i = 0; i < 2; i++) {
        jr__buf_bytes(&b, names[i], 2);
        jr__buf_bytes(&b, "c", 1);
        jr__buf_varint(&b, 0);                             /* tags */
        jr__buf_u8(&b, (uint8_t)(i == 0 ? 1 | 2 : 2 | 8)); /* n2: current and damaged */
        jr__buf_varint(&b, 0);
        jr__buf_varint(&b, 0);
        jr__buf_varint(&b, 0);
    }
    jr__servers_dec d;
    ck_assert_int_eq(jr__servers_decode(b.data, b.len, NULL, &d), 0);
    ck_assert_uint_eq(d.info.nservers, 2);
    const jr_server_info *s0 = d.info.servers[0], *s1 = d.info.servers[1];
    ck_assert_uint_eq(s0->size, sizeof *s0);
    ck_assert_int_eq(s0->leader, 1);
    ck_assert_int_eq(s0->current, 1);
    ck_assert_int_eq(s0->damaged, 0);
    ck_assert_int_eq(s1->damaged, 1);
    ck_assert_int_eq(s1->current, 0);
    jr__servers_dec_free(&d);
    /* an unknown flag bit is still refused */
    b.data[b.len - 4] |= 32;
    ck_assert_int_eq(jr__servers_decode(b.data, b.len, NULL, &d), JR_ECORRUPT);
    jr__servers_dec_free(&d);
    jr__buf_free(&b);
}
END_TEST

/* A draining server's lists (bit 4 of its flags) and the trailing under-replicated list. */
START_TEST(server_report_carries_the_drain_lists)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__buf_bytes(&b, "c", 1);
    jr__buf_bytes(&b, "n1", 2);
    jr__buf_varint(&b, 2); /* streams */
    jr__buf_varint(&b, 1); /* servers */
    jr__buf_bytes(&b, "n1", 2);
    jr__buf_bytes(&b, "c", 1);
    jr__buf_varint(&b, 0);
    jr__buf_u8(&b, 1 | 2 | 16); /* leader, current, draining */
    jr__buf_varint(&b, 0);
    jr__buf_varint(&b, 0);
    jr__buf_varint(&b, 1);
    jr__buf_varint(&b, 2); /* remaining */
    jr__buf_bytes(&b, "A", 1);
    jr__buf_bytes(&b, "A/C", 3);
    jr__buf_varint(&b, 1); /* unplaced */
    jr__buf_bytes(&b, "A", 1);
    size_t no_under = b.len;
    jr__buf_varint(&b, 1); /* under-replicated */
    jr__buf_bytes(&b, "B", 1);
    jr__servers_dec d;
    ck_assert_int_eq(jr__servers_decode(b.data, b.len, NULL, &d), 0);
    const jr_server_info *s0 = d.info.servers[0];
    ck_assert_int_eq(s0->draining, 1);
    ck_assert_uint_eq(s0->nremaining, 2);
    ck_assert_str_eq(s0->remaining[1], "A/C");
    ck_assert_uint_eq(s0->nunplaced, 1);
    ck_assert_str_eq(s0->unplaced[0], "A");
    ck_assert_uint_eq(d.info.nunder_replicated, 1);
    ck_assert_str_eq(d.info.under_replicated[0], "B");
    jr__servers_dec_free(&d);
    /* without the trailing list: none under-replicated */
    ck_assert_int_eq(jr__servers_decode(b.data, no_under, NULL, &d), 0);
    ck_assert_uint_eq(d.info.nunder_replicated, 0);
    ck_assert_ptr_null(d.info.under_replicated);
    jr__servers_dec_free(&d);
    /* every truncation inside the lists, and a count above JR_DRAIN_LIST_MAX: corrupt */
    for (size_t len = no_under - 9; len < no_under; len++) {
        ck_assert_int_eq(jr__servers_decode(b.data, len, NULL, &d), JR_ECORRUPT);
        jr__servers_dec_free(&d);
    }
    b.data[no_under] = JR_DRAIN_LIST_MAX + 1;
    ck_assert_int_eq(jr__servers_decode(b.data, b.len, NULL, &d), JR_ECORRUPT);
    jr__servers_dec_free(&d);
    jr__buf_free(&b);
}
END_TEST

/* Pages of subjects and deleted ranges (details.c): a well-formed one decodes; every prefix of
 * it, a trailing byte and each malformed field are refused. */
static void subjects_payload(jr__buf *b, uint64_t total, uint64_t n, const char *const *subj)
{
    jr__buf_reset(b);
    jr__buf_varint(b, total);
    jr__buf_varint(b, 1); /* offset */
    jr__buf_varint(b, n);
    for (uint64_t i = 0; i < n; i++) {
        jr__buf_bytes(b, subj[i], strlen(subj[i]) + (subj[i][0] == 'z')); /* 'z': its NUL too */
        jr__buf_varint(b, 7 + i);
    }
}

START_TEST(subjects_and_deleted_pages_decode_or_are_refused)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    static const char *const ok[] = {"a.b", "a.c"};
    subjects_payload(&b, 5, 2, ok);
    jr__subjects_dec sd;
    ck_assert_int_eq(jr__subjects_decode(b.data, b.len, NULL, &sd), 0);
    ck_assert_uint_eq(sd.page.total, 5);
    ck_assert_uint_eq(sd.page.offset, 1);
    ck_assert_uint_eq(sd.page.nsubjects, 2);
    ck_assert_str_eq(sd.page.subjects[1].subject, "a.c");
    ck_assert_uint_eq(sd.page.subjects[1].msgs, 8);
    jr__subjects_dec_free(&sd);
    for (size_t k = 0; k < b.len; k++) {
        ck_assert_int_eq(jr__subjects_decode(b.data, k, NULL, &sd), JR_ECORRUPT);
        jr__subjects_dec_free(&sd);
    }
    jr__buf_u8(&b, 0);
    ck_assert_int_eq(jr__subjects_decode(b.data, b.len, NULL, &sd), JR_ECORRUPT);
    subjects_payload(&b, 1, 2, ok); /* more than the total */
    ck_assert_int_eq(jr__subjects_decode(b.data, b.len, NULL, &sd), JR_ECORRUPT);
    static const char *const nul[] = {"a.b", "z"};
    subjects_payload(&b, 2, 2, nul);
    ck_assert_int_eq(jr__subjects_decode(b.data, b.len, NULL, &sd), JR_ECORRUPT);
    static const char *const empty[] = {"", "a.b"};
    subjects_payload(&b, 2, 2, empty);
    ck_assert_int_eq(jr__subjects_decode(b.data, b.len, NULL, &sd), JR_ECORRUPT);
    subjects_payload(&b, 0, 0, ok); /* past the end: an empty page */
    ck_assert_int_eq(jr__subjects_decode(b.data, b.len, NULL, &sd), 0);
    ck_assert_uint_eq(sd.page.nsubjects, 0);
    jr__subjects_dec_free(&sd);

    /* ranges: [3,4] and [7,7] */
    jr__buf_reset(&b);
    jr__buf_varint(&b, 3);
    jr__buf_varint(&b, 2);
    jr__buf_varint(&b, 3);
    jr__buf_varint(&b, 1);
    jr__buf_varint(&b, 7);
    jr__buf_varint(&b, 0);
    jr__deleted_dec dd;
    ck_assert_int_eq(jr__deleted_decode(b.data, b.len, NULL, &dd), 0);
    ck_assert_uint_eq(dd.page.total, 3);
    ck_assert_uint_eq(dd.page.nranges, 2);
    ck_assert(dd.page.ranges[0].first == 3 && dd.page.ranges[0].last == 4);
    ck_assert(dd.page.ranges[1].first == 7 && dd.page.ranges[1].last == 7);
    jr__deleted_dec_free(&dd);
    for (size_t k = 0; k < b.len; k++) {
        ck_assert_int_eq(jr__deleted_decode(b.data, k, NULL, &dd), JR_ECORRUPT);
        jr__deleted_dec_free(&dd);
    }
    b.data[4] = 4; /* the second range starts inside the first */
    ck_assert_int_eq(jr__deleted_decode(b.data, b.len, NULL, &dd), JR_ECORRUPT);
    jr__buf_reset(&b);
    jr__buf_varint(&b, 1);
    jr__buf_varint(&b, 1);
    jr__buf_varint(&b, UINT64_MAX - 1);
    jr__buf_varint(&b, 2); /* last past UINT64_MAX */
    ck_assert_int_eq(jr__deleted_decode(b.data, b.len, NULL, &dd), JR_ECORRUPT);
    jr__buf_reset(&b);
    jr__buf_varint(&b, 1);
    jr__buf_varint(&b, 1);
    jr__buf_varint(&b, 0); /* seqs start at 1 */
    jr__buf_varint(&b, 0);
    ck_assert_int_eq(jr__deleted_decode(b.data, b.len, NULL, &dd), JR_ECORRUPT);
    jr__buf_free(&b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("js_codec");
    TCase *tc = tcase_create("js_codec");
    tcase_add_test(tc, info_round_trip_keeps_damaged_and_never_current);
    tcase_add_test(tc, info_round_trip_keeps_a_failed_state_machine);
    tcase_add_test(tc, server_report_round_trip_keeps_damaged);
    tcase_add_test(tc, server_report_carries_the_drain_lists);
    tcase_add_test(tc, info_and_consumer_info_carry_the_move);
    tcase_add_test(tc, subjects_and_deleted_pages_decode_or_are_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
