/* NATS header blocks: a table of valid and malformed blocks, case-sensitive lookup of the first
 * value, trimming, status lines, and the JetStream publish headers mapped to options. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/headers.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Runs the check on an exact-size heap copy, so ASan sees any read past the end. */
static int validate(const char *s, size_t n)
{
    char *p = malloc(n ? n : 1);
    memcpy(p, s, n);
    int rc = jr__headers_validate(n ? p : NULL, n);
    free(p);
    return rc;
}

static const struct {
    const char *block;
    const char *why;
} valid[] = {
    {"", "no headers"},
    {"NATS/1.0\r\n\r\n", "version line only"},
    {"NATS/1.0\r\nA: b\r\n\r\n", "one header"},
    {"NATS/1.0\r\nA:b\r\n\r\n", "no space after the colon"},
    {"NATS/1.0\r\nA:\r\n\r\n", "empty value"},
    {"NATS/1.0\r\nA: \t \r\n\r\n", "whitespace-only value"},
    {"NATS/1.0\r\nA: x\r\nA: y\r\nB: z\r\n\r\n", "repeated key"},
    {"NATS/1.0\r\nA: with: colons: inside\r\n\r\n", "colons in the value"},
    {"NATS/1.0\r\nA: tab\there\r\n\r\n", "tab in the value"},
    {"NATS/1.0\r\nA: caf\xc3\xa9\r\n\r\n", "UTF-8 (obs-text) in the value"},
    {"NATS/1.0\r\n!#$%&'*+-.^_`|~09azAZ: v\r\n\r\n", "every kind of key character"},
    {"NATS/1.0 503\r\n\r\n", "status"},
    {"NATS/1.0 100 Idle Heartbeat\r\n\r\n", "status and description"},
    {"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 1\r\n\r\n", "status and header"},
    {"NATS/1.0 404 \r\n\r\n", "status with an empty description"},
};

static const struct {
    const char *block;
    const char *why;
} invalid[] = {
    {"NATS/1.0\r\n", "no final empty line"},
    {"NATS/1.0", "no line end"},
    {"NATS/1.0\n\n", "bare LF"},
    {"NATS/1.0\r\nA: b\n\r\n", "bare LF after a header"},
    {"NATS/1.0\r\nA: b\r\r\n\r\n", "CR inside a value"},
    {"NATS/1.1\r\n\r\n", "other version"},
    {"nats/1.0\r\n\r\n", "lower-case version"},
    {"HTTP/1.1\r\n\r\n", "not NATS"},
    {"NATS/1.0 50\r\n\r\n", "two-digit status"},
    {"NATS/1.0 5030\r\n\r\n", "four-digit status"},
    {"NATS/1.0 abc\r\n\r\n", "non-numeric status"},
    {"NATS/1.0  503\r\n\r\n", "two spaces before the status"},
    {"NATS/1.0 \r\n\r\n", "space without status"},
    {"NATS/1.0\r\nA b: c\r\n\r\n", "space in the key"},
    {"NATS/1.0\r\nA : c\r\n\r\n", "space before the colon"},
    {"NATS/1.0\r\n: c\r\n\r\n", "empty key"},
    {"NATS/1.0\r\nA\r\n\r\n", "no colon"},
    {"NATS/1.0\r\nA: b\r\n", "no final empty line after a header"},
    {"NATS/1.0\r\nA: b\r\n\r\nX", "bytes after the final empty line"},
    {"NATS/1.0\r\n\r\n\r\n", "second empty line"},
    {"NATS/1.0\r\nA: b\x01\r\n\r\n", "control character in the value"},
    {"NATS/1.0\r\nA: b\x7f\r\n\r\n", "DEL in the value"},
    {"NATS/1.0\r\nA\x80: b\r\n\r\n", "non-ASCII key"},
    {"NATS/1.0\r\n A: b\r\n\r\n", "folded (leading-space) line"},
    {"\r\n\r\n", "no version line"},
};

START_TEST(valid_blocks)
{
    const char *b = valid[_i].block;
    ck_assert_msg(validate(b, strlen(b)) == 0, "rejected: %s", valid[_i].why);
}
END_TEST

START_TEST(invalid_blocks)
{
    const char *b = invalid[_i].block;
    ck_assert_msg(validate(b, strlen(b)) == JR_EINVAL, "accepted: %s", invalid[_i].why);
}
END_TEST

START_TEST(nul_byte_is_invalid)
{
    static const char b[] = "NATS/1.0\r\nA: x\0y\r\n\r\n";
    ck_assert_int_eq(validate(b, sizeof b - 1), JR_EINVAL);
}
END_TEST

START_TEST(every_prefix_of_a_valid_block_is_invalid)
{
    const char *b = "NATS/1.0 100 Idle\r\nNats-Msg-Id: abc\r\nX-Y:  z \r\n\r\n";
    size_t n = strlen(b);
    for (size_t len = 1; len < n; len++)
        ck_assert_msg(validate(b, len) == JR_EINVAL, "prefix %zu accepted", len);
    ck_assert_int_eq(validate(b, n), 0);
}
END_TEST

START_TEST(lookup_is_exact_first_value_trimmed)
{
    const char *b = "NATS/1.0\r\nContent-Type:  text/plain \t\r\ncontent-type: other\r\n"
                    "Content-Type: second\r\nEmpty:\r\n\r\n";
    size_t n = strlen(b);
    const char *v;
    size_t vl;
    ck_assert_int_eq(jr__headers_get(b, n, "Content-Type", &v, &vl), 0);
    ck_assert_uint_eq(vl, strlen("text/plain"));
    ck_assert(memcmp(v, "text/plain", vl) == 0);
    ck_assert_int_eq(jr__headers_get(b, n, "content-type", &v, &vl), 0);
    ck_assert(vl == 5 && memcmp(v, "other", 5) == 0);
    ck_assert_int_eq(jr__headers_get(b, n, "CONTENT-TYPE", &v, &vl), JR_ENOTFOUND);
    ck_assert_int_eq(jr__headers_get(b, n, "Content", &v, &vl), JR_ENOTFOUND);
    ck_assert_int_eq(jr__headers_get(b, n, "Empty", &v, &vl), 0);
    ck_assert_uint_eq(vl, 0);
    ck_assert_int_eq(jr__headers_get(b, n - 1, "Empty", &v, &vl), JR_EINVAL);
    ck_assert_int_eq(jr__headers_get(NULL, 0, "Empty", &v, &vl), JR_ENOTFOUND);

    /* iteration sees every line in order */
    jr__hdr_iter it;
    ck_assert_int_eq(jr__headers_iter(b, n, &it), 0);
    const char *k;
    size_t kl, count = 0;
    while (jr__headers_next(&it, &k, &kl, &v, &vl)) count++;
    ck_assert_uint_eq(count, 4);
}
END_TEST

START_TEST(status_line)
{
    int code;
    const char *d;
    size_t dl;
    const char *b = "NATS/1.0 100 Idle Heartbeat\r\n\r\n";
    ck_assert_int_eq(jr__headers_status(b, strlen(b), &code, &d, &dl), 0);
    ck_assert_int_eq(code, 100);
    ck_assert(dl == strlen("Idle Heartbeat") && memcmp(d, "Idle Heartbeat", dl) == 0);
    b = "NATS/1.0 503\r\n\r\n";
    ck_assert_int_eq(jr__headers_status(b, strlen(b), &code, &d, &dl), 0);
    ck_assert_int_eq(code, 503);
    ck_assert_uint_eq(dl, 0);
    b = "NATS/1.0\r\nA: b\r\n\r\n";
    ck_assert_int_eq(jr__headers_status(b, strlen(b), &code, &d, &dl), 0);
    ck_assert_int_eq(code, 0);
    ck_assert_int_eq(jr__headers_status(b, 0, &code, &d, &dl), JR_EINVAL);
}
END_TEST

START_TEST(jetstream_headers_become_options)
{
    const char *b = "NATS/1.0\r\n"
                    "Nats-Msg-Id: order-7\r\n"
                    "Nats-Expected-Stream: ORDERS\r\n"
                    "Nats-Expected-Last-Sequence: 41\r\n"
                    "Nats-Expected-Last-Subject-Sequence: 0\r\n"
                    "Nats-Expected-Last-Msg-Id:  order-6 \r\n"
                    "Nats-Rollup: SUB\r\n"
                    "Nats-Msg-Id: ignored-second-value\r\n"
                    "nats-msg-id: other-case-is-another-header\r\n"
                    "\r\n";
    jr__pub_opts o;
    ck_assert_int_eq(jr__headers_pub_opts(b, strlen(b), &o), 0);
    ck_assert_uint_eq(o.flags, JR__PUB_MSG_ID | JR__PUB_EXPECT_STREAM | JR__PUB_EXPECT_LAST_SEQ |
                                   JR__PUB_EXPECT_LAST_SUBJ_SEQ | JR__PUB_EXPECT_LAST_MSG_ID |
                                   JR__PUB_ROLLUP_SUB);
    ck_assert(o.msg_id_len == 7 && memcmp(o.msg_id, "order-7", 7) == 0);
    ck_assert(o.expected_stream_len == 6 && memcmp(o.expected_stream, "ORDERS", 6) == 0);
    ck_assert(o.expected_last_seq == 41);
    ck_assert(o.expected_last_subject_seq == 0);
    ck_assert(o.expected_last_msg_id_len == 7 && memcmp(o.expected_last_msg_id, "order-6", 7) == 0);

    b = "NATS/1.0\r\nNats-Rollup: all\r\nNats-Msg-Id:\r\n\r\n";
    ck_assert_int_eq(jr__headers_pub_opts(b, strlen(b), &o), 0);
    ck_assert_uint_eq(o.flags, JR__PUB_ROLLUP_ALL); /* an empty msg id is no msg id */

    ck_assert_int_eq(jr__headers_pub_opts(NULL, 0, &o), 0);
    ck_assert_uint_eq(o.flags, 0);
    b = "NATS/1.0\r\nX: y\r\n\r\n";
    ck_assert_int_eq(jr__headers_pub_opts(b, strlen(b), &o), 0);
    ck_assert_uint_eq(o.flags, 0);
}
END_TEST

static const char *const bad_values[] = {
    "NATS/1.0\r\nNats-Expected-Last-Sequence: -1\r\n\r\n",
    "NATS/1.0\r\nNats-Expected-Last-Sequence: +1\r\n\r\n",
    "NATS/1.0\r\nNats-Expected-Last-Sequence: 1 2\r\n\r\n",
    "NATS/1.0\r\nNats-Expected-Last-Sequence: 0x10\r\n\r\n",
    "NATS/1.0\r\nNats-Expected-Last-Sequence: 18446744073709551616\r\n\r\n",
    "NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: abc\r\n\r\n",
    "NATS/1.0\r\nNats-Rollup: subject\r\n\r\n",
    "NATS/1.0\r\nNats-Rollup: none\r\n\r\n",
    "NATS/1.0\r\nNats-Msg-Id: ok\r\nbroken line\r\n\r\n",
};

START_TEST(bad_jetstream_values_are_invalid)
{
    jr__pub_opts o;
    memset(&o, 0xab, sizeof o);
    ck_assert_int_eq(jr__headers_pub_opts(bad_values[_i], strlen(bad_values[_i]), &o), JR_EINVAL);
    ck_assert_uint_eq(o.flags, 0);
}
END_TEST

START_TEST(limits_on_ids)
{
    char b[4096];
    char id[JR__OP_MSG_ID_MAX + 2];
    memset(id, 'x', sizeof id);
    id[JR__OP_MSG_ID_MAX] = 0;
    snprintf(b, sizeof b, "NATS/1.0\r\nNats-Msg-Id: %s\r\n\r\n", id);
    jr__pub_opts o;
    ck_assert_int_eq(jr__headers_pub_opts(b, strlen(b), &o), 0);
    ck_assert_uint_eq(o.msg_id_len, JR__OP_MSG_ID_MAX);
    id[JR__OP_MSG_ID_MAX] = 'x';
    id[JR__OP_MSG_ID_MAX + 1] = 0;
    snprintf(b, sizeof b, "NATS/1.0\r\nNats-Msg-Id: %s\r\n\r\n", id);
    ck_assert_int_eq(jr__headers_pub_opts(b, strlen(b), &o), JR_EINVAL);
    ck_assert_uint_eq(o.flags, 0);
    /* 20 digits that fit */
    const char *mx = "NATS/1.0\r\nNats-Expected-Last-Sequence: 18446744073709551615\r\n\r\n";
    ck_assert_int_eq(jr__headers_pub_opts(mx, strlen(mx), &o), 0);
    ck_assert(o.expected_last_seq == UINT64_MAX);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_headers");
    TCase *tc = tcase_create("headers");
    tcase_add_loop_test(tc, valid_blocks, 0, (int)N(valid));
    tcase_add_loop_test(tc, invalid_blocks, 0, (int)N(invalid));
    tcase_add_test(tc, nul_byte_is_invalid);
    tcase_add_test(tc, every_prefix_of_a_valid_block_is_invalid);
    tcase_add_test(tc, lookup_is_exact_first_value_trimmed);
    tcase_add_test(tc, status_line);
    tcase_add_test(tc, jetstream_headers_become_options);
    tcase_add_loop_test(tc, bad_jetstream_values_are_invalid, 0, (int)N(bad_values));
    tcase_add_test(tc, limits_on_ids);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
