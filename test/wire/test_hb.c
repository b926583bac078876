/* Node-level coalesced heartbeats (issue 5): one message per peer pair lists every shared
 * group; 10,000 groups round-trip in one compact frame (the size is printed). */
#include <stdio.h>
#include <string.h>

#include "wire_test.h"

/* Encodes a frame holding one heartbeat of `type`, decodes it and compares the items. Returns
 * the frame's size. */
static size_t hb_roundtrip(uint8_t type, uint64_t seq, const jr__hb_item *items, size_t n)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add_hb(&b, type, seq, items, n);
    ck_assert_int_eq(b.err, 0);
    ck_assert_uint_eq(b.len - JR__FRAME_HEADER, jr__frame_hb_len(seq, items, n));
    ck_assert_int_eq(jr__frame_end(&b), 0);
    ck_assert_int_eq(jr__frame_validate(b.data, b.len, TW_MAX, TW_CAP), 0);
    jr__frame f;
    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, TW_MAX), 0);
    jr__msg m;
    ck_assert_int_eq(tw_next(&f, &m, NULL, 0), 1);
    ck_assert_uint_eq(m.type, type);
    ck_assert_uint_eq(m.group, 0);
    ck_assert_uint_eq(m.term, 0);
    ck_assert_uint_eq(m.from, TW_FROM);
    ck_assert_uint_eq(m.to, TW_TO);
    ck_assert_uint_eq(f.hb.type, type);
    ck_assert_uint_eq(f.hb.seq, seq);
    ck_assert_uint_eq(f.hb.n, n);
    jr__hb_view v = f.hb;
    jr__hb_item it;
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(jr__hb_next(&v, &it), 1);
        ck_assert_uint_eq(it.group, items[i].group);
        ck_assert_uint_eq(it.term, items[i].term);
        ck_assert_uint_eq(it.index, items[i].index);
    }
    ck_assert_int_eq(jr__hb_next(&v, &it), 0);
    ck_assert_int_eq(tw_next(&f, &m, NULL, 0), 0);
    ck_assert_int_eq(tw_check_canonical(b.data, b.len), 0);
    size_t len = b.len;
    jr__buf_free(&b);
    return len;
}

START_TEST(heartbeat_with_10000_groups_fits_one_compact_frame)
{
    enum { N = 10000 };
    jr__hb_item *items = malloc(N * sizeof *items);
    jr__rand r;
    jr__rand_seed(&r, 10000);
    /* dense ids (groups numbered from 1 as a meta leader would hand them out) */
    for (size_t i = 0; i < N; i++)
        items[i] = (jr__hb_item){i + 1, 1 + jr__rand_below(&r, 5), jr__rand_below(&r, 1000000)};
    size_t dense = hb_roundtrip(JR__MSG_NODE_HB, 123456, items, N);
    size_t dense_resp = hb_roundtrip(JR__MSG_NODE_HB_RESP, 123456, items, N);
    /* sparse ids: one in ten of 100,000 */
    for (size_t i = 0; i < N; i++) items[i].group = i * 10 + 1 + jr__rand_below(&r, 10);
    size_t sparse = hb_roundtrip(JR__MSG_NODE_HB, 1, items, N);
    printf("wire: NODE_HB, 10000 groups, commits < 1e6: dense ids %zu bytes (%.2f B/group), "
           "response %zu bytes, sparse ids %zu bytes (%.2f B/group)\n",
           dense, (double)dense / N, dense_resp, sparse, (double)sparse / N);
    ck_assert_uint_le(dense, 6 * N);
    ck_assert_uint_le(sparse, 7 * N);
    free(items);
}
END_TEST

START_TEST(heartbeat_edge_values)
{
    jr__hb_item items[3] = {{1, 0, 0}, {2, UINT64_MAX, UINT64_MAX}, {UINT64_MAX, 1, 1}};
    hb_roundtrip(JR__MSG_NODE_HB, 0, NULL, 0);
    hb_roundtrip(JR__MSG_NODE_HB_RESP, UINT64_MAX, items, 3);
    hb_roundtrip(JR__MSG_NODE_HB, 7, items + 2, 1);
}
END_TEST

START_TEST(heartbeat_encoder_refuses_unsorted_duplicate_or_zero_groups)
{
    jr__hb_item bad[][2] = {{{0, 1, 1}, {1, 1, 1}}, {{5, 1, 1}, {5, 1, 1}}, {{6, 1, 1}, {5, 1, 1}}};
    jr__hb_item ok[2] = {{5, 1, 1}, {6, 1, 1}};
    jr__buf b;
    jr__buf_init(&b, NULL);
    for (size_t i = 0; i < 3; i++) {
        jr__frame_begin(&b, TW_FROM, TW_TO);
        jr__frame_add_hb(&b, JR__MSG_NODE_HB, 1, bad[i], 2);
        ck_assert_int_eq(jr__frame_end(&b), JR_EINVAL);
    }
    uint8_t types[] = {0, JR__MSG_HEARTBEAT, 66, 127};
    for (size_t i = 0; i < sizeof types; i++) {
        jr__frame_begin(&b, TW_FROM, TW_TO);
        jr__frame_add_hb(&b, types[i], 1, ok, 2);
        ck_assert_int_eq(jr__frame_end(&b), JR_EINVAL);
    }
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add_hb(&b, JR__MSG_NODE_HB, 1, NULL, 2);
    ck_assert_int_eq(jr__frame_end(&b), JR_EINVAL);
    /* sorting fixes what the encoder refused */
    jr__hb_sort(bad[2], 2);
    ck_assert_uint_eq(bad[2][0].group, 5);
    ck_assert_uint_eq(bad[2][1].group, 6);
    hb_roundtrip(JR__MSG_NODE_HB, 1, bad[2], 2);
    jr__buf_free(&b);
}
END_TEST

START_TEST(heartbeats_and_raft_messages_share_a_frame)
{
    jr__hb_item items[2] = {{10, 3, 100}, {11, 3, 200}};
    jr__msg m[2];
    m[0] = tw_msg(JR__MSG_HEARTBEAT, 12, 3);
    m[0].u.heartbeat.commit = 300;
    m[1] = tw_msg(JR__MSG_TIMEOUT_NOW, 13, 4);
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add(&b, &m[0]);
    jr__frame_add_hb(&b, JR__MSG_NODE_HB, 9, items, 2);
    jr__frame_add(&b, &m[1]);
    jr__frame_add_hb(&b, JR__MSG_NODE_HB_RESP, 8, items, 1);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    ck_assert_int_eq(tw_check_canonical(b.data, b.len), 0);
    jr__frame f;
    jr__msg got;
    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, TW_MAX), 0);
    ck_assert_int_eq(tw_next(&f, &got, NULL, 0), 1);
    tw_assert_msg_eq(&m[0], &got);
    ck_assert_int_eq(tw_next(&f, &got, NULL, 0), 1);
    ck_assert_uint_eq(got.type, JR__MSG_NODE_HB);
    ck_assert_uint_eq(f.hb.seq, 9);
    ck_assert_uint_eq(f.hb.n, 2);
    ck_assert_int_eq(tw_next(&f, &got, NULL, 0), 1);
    tw_assert_msg_eq(&m[1], &got);
    ck_assert_int_eq(tw_next(&f, &got, NULL, 0), 1);
    ck_assert_uint_eq(got.type, JR__MSG_NODE_HB_RESP);
    ck_assert_uint_eq(f.hb.seq, 8);
    jr__hb_item it;
    ck_assert_int_eq(jr__hb_next(&f.hb, &it), 1);
    ck_assert_uint_eq(it.group, 10);
    ck_assert_uint_eq(it.index, 100);
    ck_assert_int_eq(jr__hb_next(&f.hb, &it), 0);
    ck_assert_int_eq(tw_next(&f, &got, NULL, 0), 0);
    jr__buf_free(&b);
}
END_TEST

START_TEST(a_forged_view_never_reads_out_of_bounds)
{
    static const uint8_t junk[] = {0xff, 0xff, 0xff};
    jr__hb_view v;
    memset(&v, 0, sizeof v);
    v.n = 1000;
    jr__rd_init(&v.items, junk, sizeof junk);
    jr__hb_item it;
    ck_assert_int_eq(jr__hb_next(&v, &it), 0);
    ck_assert_int_eq(jr__hb_next(&v, &it), 0);
}
END_TEST

Suite *tw_hb_suite(void)
{
    Suite *s = suite_create("wire heartbeat");
    TCase *tc = tcase_create("hb");
    tcase_add_test(tc, heartbeat_with_10000_groups_fits_one_compact_frame);
    tcase_add_test(tc, heartbeat_edge_values);
    tcase_add_test(tc, heartbeat_encoder_refuses_unsorted_duplicate_or_zero_groups);
    tcase_add_test(tc, heartbeats_and_raft_messages_share_a_frame);
    tcase_add_test(tc, a_forged_view_never_reads_out_of_bounds);
    suite_add_tcase(s, tc);
    return s;
}
