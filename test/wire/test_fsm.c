/* The FSM extension (type 129, wire/frame.h JR__EXT_FSM): a follower's word on its state
 * machines round-trips exactly in a frame with other messages, a frame without it decodes as
 * before, the frame decoder takes it as any extension (so an older node skips it), and its
 * payload decoder enforces every rule: version, count, ascending groups, non-zero terms, known
 * states, no trailing byte, no truncation; the encoder refuses what it would drop. */
#include <string.h>

#include "wire_test.h"

static const jr__fsm_item three[] = {
    {5, 3, JR__FSM_FAILED},
    {6, 1, JR__FSM_REBUILDING},
    {70000, UINT64_MAX, JR__FSM_WHOLE},
};

/* A frame of a node heartbeat, an FSM message of items and a request. */
static void sample(jr__buf *b, const jr__fsm_item *items, size_t n)
{
    jr__hb_item hb[] = {{9, 2, 40}};
    jr__frame_begin(b, TW_FROM, TW_TO);
    jr__frame_add_hb(b, JR__MSG_NODE_HB, 1, hb, 1);
    size_t before = b->len;
    jr__frame_add_fsm(b, items, n);
    ck_assert_int_eq(b->err, 0);
    ck_assert_uint_eq(b->len - before, jr__frame_fsm_len(items, n));
    jr__frame_add_request(b, 7, JR__RPC_STREAM_INFO, "x", 1);
    ck_assert_int_eq(jr__frame_end(b), 0);
}

/* Decodes the frame in b; returns the FSM payload it holds (the extension view) in *x and the
 * number of messages; asserts the other two are there. */
static int walk(const jr__buf *b, jr__ext_view *x)
{
    jr__frame f;
    ck_assert_int_eq(jr__frame_open(&f, b->data, b->len, TW_MAX), 0);
    ck_assert_int_eq(jr__frame_check(&f, TW_CAP), 0);
    static jr__entry scratch[TW_CAP];
    jr__msg m;
    int k = 0, got_fsm = 0;
    while (tw_next(&f, &m, scratch, TW_CAP) == 1) {
        k++;
        if (m.type == JR__EXT_FSM) {
            *x = f.ext;
            got_fsm = 1;
        }
    }
    return got_fsm ? k : -k;
}

START_TEST(items_round_trip_beside_other_messages)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    sample(&b, three, 3);
    jr__ext_view x;
    ck_assert_int_eq(walk(&b, &x), 3);
    ck_assert_uint_eq(x.type, JR__EXT_FSM);
    ck_assert_uint_eq(x.flags, 0);
    /* zero copy: the payload points into the frame */
    ck_assert(x.payload > b.data && x.payload < b.data + b.len);
    jr__fsm_view v;
    ck_assert_int_eq(jr__fsm_open(&x, &v), 0);
    jr__fsm_item it;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(jr__fsm_next(&v, &it), 1);
        ck_assert_uint_eq(it.group, three[i].group);
        ck_assert_uint_eq(it.term, three[i].term);
        ck_assert_uint_eq(it.state, three[i].state);
    }
    ck_assert_int_eq(jr__fsm_next(&v, &it), 0);
    /* decode then re-encode gives the same bytes (the generic extension path) */
    ck_assert_int_eq(tw_check_canonical(b.data, b.len), 0);
    jr__buf_free(&b);
}
END_TEST

/* What a node of an earlier release sends — the same messages without the FSM one — decodes as
 * before: the receiver finds no report in it. */
START_TEST(a_frame_without_the_report_decodes_as_before)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__hb_item hb[] = {{9, 2, 40}};
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add_hb(&b, JR__MSG_NODE_HB, 1, hb, 1);
    jr__frame_add_request(&b, 7, JR__RPC_STREAM_INFO, "x", 1);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    jr__ext_view x;
    ck_assert_int_eq(walk(&b, &x), -2);
    ck_assert_int_eq(tw_check_canonical(b.data, b.len), 0);
    jr__buf_free(&b);
}
END_TEST

/* An earlier release's decoder knows nothing of type 129: to it the message is an extension of
 * a later release, length-prefixed, so it skips it and keeps the rest of the frame. The frame
 * decoder here takes it the same way, whatever its payload: only jr__fsm_open judges that. */
START_TEST(the_frame_decoder_takes_any_payload_of_the_type_as_an_extension)
{
    static const uint8_t junk[] = {9, 9, 9};
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add_ext(&b, JR__EXT_FSM, 3, junk, sizeof junk);
    jr__frame_add_request(&b, 7, JR__RPC_STREAM_INFO, "x", 1);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    jr__ext_view x;
    ck_assert_int_eq(walk(&b, &x), 2);
    jr__fsm_view v;
    ck_assert_int_eq(jr__fsm_open(&x, &v), JR_ECORRUPT); /* flags 3 */
    jr__buf_free(&b);
}
END_TEST

/* Payloads (after the extension's length) and what jr__fsm_open says of them. */
static const struct {
    const char *why;
    uint8_t len;
    uint8_t p[20];
    int rc;
} payloads[] = {
    {"one item", 5, {1, 1, 4, 2, 1}, 0},
    {"two items, ids 1 and 3", 8, {1, 2, 0, 1, 0, 1, 1, 2}, 0},
    {"a later version", 5, {2, 1, 4, 2, 1}, JR_EVERSION},
    {"version only, a later one", 1, {7}, JR_EVERSION},
    {"empty", 0, {0}, JR_ECORRUPT},
    {"no count", 1, {1}, JR_ECORRUPT},
    {"no item", 2, {1, 0}, JR_ECORRUPT},
    {"count past the bytes", 5, {1, 2, 4, 2, 1}, JR_ECORRUPT},
    {"term 0", 5, {1, 1, 4, 0, 1}, JR_ECORRUPT},
    {"unknown state", 5, {1, 1, 4, 2, 3}, JR_ECORRUPT},
    {"trailing byte", 6, {1, 1, 4, 2, 1, 0}, JR_ECORRUPT},
    {"non-canonical varint", 6, {1, 1, 0x84, 0x00, 2, 1}, JR_ECORRUPT},
    /* group 1, then a gap of 2^64 - 2: past the largest id */
    {"group id overflows",
     17,
     {1, 2, 0, 1, 1, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1, 1},
     JR_ECORRUPT},
};

START_TEST(each_payload_rule_is_enforced)
{
    int i = _i;
    jr__ext_view x = {JR__EXT_FSM, 0, payloads[i].len, payloads[i].len ? payloads[i].p : NULL};
    /* a copy of exactly its size, so that a read past its end is caught under ASan */
    uint8_t *copy = malloc(payloads[i].len ? payloads[i].len : 1);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, payloads[i].p, payloads[i].len);
    if (payloads[i].len) x.payload = copy;
    jr__fsm_view v;
    ck_assert_msg(jr__fsm_open(&x, &v) == payloads[i].rc, "%s", payloads[i].why);
    if (payloads[i].rc == 0) {
        jr__fsm_item it;
        size_t k = 0;
        while (jr__fsm_next(&v, &it)) k++;
        ck_assert_uint_eq(k, payloads[i].p[1]);
    }
    free(copy);
}
END_TEST

START_TEST(every_truncation_is_rejected)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add_fsm(&b, three, 3);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    jr__ext_view x;
    ck_assert_int_eq(walk(&b, &x), 1);
    for (uint32_t len = 0; len < x.len; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        ck_assert_ptr_nonnull(copy);
        memcpy(copy, x.payload, len);
        jr__ext_view t = {JR__EXT_FSM, 0, len, len ? copy : NULL};
        jr__fsm_view v;
        ck_assert_msg(jr__fsm_open(&t, &v) == JR_ECORRUPT, "cut at %u", len);
        free(copy);
    }
    jr__buf_free(&b);
}
END_TEST

START_TEST(encoder_refuses_what_the_decoder_would_drop_and_writes_nothing)
{
    const jr__fsm_item unsorted[] = {{6, 1, 1}, {5, 1, 1}};
    const jr__fsm_item dup[] = {{5, 1, 1}, {5, 1, 2}};
    const jr__fsm_item zero_group[] = {{0, 1, 1}};
    const jr__fsm_item zero_term[] = {{5, 0, 1}};
    const jr__fsm_item bad_state[] = {{5, 1, 3}};
    const struct {
        const jr__fsm_item *items;
        size_t n;
    } bad[] = {{three, 0},      {NULL, 1},      {unsorted, 2}, {dup, 2},
               {zero_group, 1}, {zero_term, 1}, {bad_state, 1}};
    jr__buf b;
    jr__buf_init(&b, NULL);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jr__frame_begin(&b, TW_FROM, TW_TO);
        size_t before = b.len;
        jr__frame_add_fsm(&b, bad[i].items, bad[i].n);
        ck_assert_msg(b.err == JR_EINVAL, "case %zu", i);
        ck_assert_uint_eq(b.len, before);
    }
    jr__buf_free(&b);
}
END_TEST

/* jr__frame_fsm_fit(room) items of the largest encoding fit in room bytes. */
START_TEST(what_fits_fits)
{
    static jr__fsm_item items[512];
    for (size_t i = 0; i < 512; i++)
        items[i] = (jr__fsm_item){(uint64_t)1 << 62 | (uint64_t)i << 40, UINT64_MAX, 2};
    for (size_t room = 0; room < 4096; room += 37) {
        size_t k = jr__frame_fsm_fit(room);
        if (k == 0) continue;
        ck_assert_uint_le(k, 512);
        ck_assert_uint_le(jr__frame_fsm_len(items, k), room);
    }
    jr__fsm_sort(items, 0);
    jr__fsm_item rev[] = {{9, 1, 0}, {3, 1, 1}, {5, 1, 2}};
    jr__fsm_sort(rev, 3);
    ck_assert_uint_eq(rev[0].group, 3);
    ck_assert_uint_eq(rev[1].group, 5);
    ck_assert_uint_eq(rev[2].group, 9);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("wire fsm");
    TCase *tc = tcase_create("fsm");
    tcase_add_test(tc, items_round_trip_beside_other_messages);
    tcase_add_test(tc, a_frame_without_the_report_decodes_as_before);
    tcase_add_test(tc, the_frame_decoder_takes_any_payload_of_the_type_as_an_extension);
    tcase_add_loop_test(tc, each_payload_rule_is_enforced, 0,
                        (int)(sizeof payloads / sizeof payloads[0]));
    tcase_add_test(tc, every_truncation_is_rejected);
    tcase_add_test(tc, encoder_refuses_what_the_decoder_would_drop_and_writes_nothing);
    tcase_add_test(tc, what_fits_fits);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
