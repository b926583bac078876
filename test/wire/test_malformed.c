/* Malformed frames — truncated, corrupted header fields, bad checksums, oversized, random bytes,
 * bit flips, and hand-made bodies breaking each decoding rule — are rejected with an error and
 * never read out of bounds (inputs are copied to exactly-sized heap blocks; CI runs this under
 * ASan). Randomized cases print their seed; replay with WIRE_SEED=<seed>. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/checksum.h"
#include "wire_test.h"

static uint64_t test_seed(void)
{
    const char *s = getenv("WIRE_SEED");
    return s ? strtoull(s, NULL, 0) : 0x5eed0001;
}

/* Validates a copy of data[0, len) that ends exactly at its heap block. */
static int validate_exact(const uint8_t *data, size_t len, size_t max)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (len) memcpy(copy, data, len);
    int rc = jr__frame_validate(copy, len, max, TW_CAP);
    free(copy);
    return rc;
}

static void rechecksum(uint8_t *d, size_t len)
{
    jr__put_u64(d + 24, jr__xxh3_2(d, 24, d + JR__FRAME_HEADER, len - JR__FRAME_HEADER));
}

START_TEST(truncated_at_every_byte_offset_is_rejected)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    size_t ends[16];
    tw_sample_frame(&b, ends, 16);
    ck_assert_int_eq(validate_exact(b.data, b.len, TW_MAX), 0);
    for (size_t k = 0; k < b.len; k++) {
        int rc = validate_exact(b.data, k, TW_MAX);
        ck_assert_msg(rc == JR_ECORRUPT, "truncated to %zu: %d", k, rc);
    }
    jr__buf_free(&b);
}
END_TEST

/* A body cut anywhere except between two messages fails even with a correct header around it. */
START_TEST(body_cut_inside_a_message_is_rejected_even_with_a_valid_header)
{
    jr__buf b, t;
    jr__buf_init(&b, NULL);
    jr__buf_init(&t, NULL);
    size_t ends[16];
    size_t n = tw_sample_frame(&b, ends, 16);
    size_t body = b.len - JR__FRAME_HEADER;
    ck_assert_uint_eq(ends[n - 1], body);
    for (size_t k = 0; k <= body; k++) {
        int boundary = k == 0;
        for (size_t i = 0; i < n; i++) boundary |= ends[i] == k;
        tw_raw_frame(&t, b.data + JR__FRAME_HEADER, k);
        int rc = tw_check_canonical(t.data, t.len);
        if (boundary)
            ck_assert_msg(rc == 0, "cut at %zu: %d", k, rc);
        else
            ck_assert_msg(rc == JR_ECORRUPT, "cut at %zu: %d", k, rc);
    }
    jr__buf_free(&b);
    jr__buf_free(&t);
}
END_TEST

START_TEST(each_header_field_corrupted_is_rejected)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    size_t ends[16];
    tw_sample_frame(&b, ends, 16);
    uint8_t *d = malloc(b.len);
    size_t len = b.len;
    struct {
        size_t off;
        uint8_t val;
        int resum; /* recompute the checksum, so the field's own check is what fails */
        int want;
    } cases[] = {
        {0, 'j', 1, JR_ECORRUPT},   {1, 0, 1, JR_ECORRUPT},    {2, 0, 1, JR_EVERSION},
        {2, 2, 1, JR_EVERSION},     {2, 255, 0, JR_EVERSION},  {3, 0x01, 1, JR_EAUTH},
        {3, 0x02, 1, JR_ECORRUPT},  {3, 0x80, 1, JR_ECORRUPT}, {3, 0x02, 0, JR_ECORRUPT},
        {4, 0, 1, JR_ECORRUPT},     {7, 0x7f, 1, JR_EMSGSIZE}, {8, 0x12, 0, JR_ECORRUPT},
        {16, 0x12, 0, JR_ECORRUPT}, {24, 0, 0, JR_ECORRUPT},   {31, 0x55, 0, JR_ECORRUPT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(d, b.data, len);
        d[cases[i].off] = cases[i].val;
        if (cases[i].resum) rechecksum(d, len);
        int rc = validate_exact(d, len, TW_MAX);
        ck_assert_msg(rc == cases[i].want, "case %zu: %d", i, rc);
    }
    /* length field one more / one less than the bytes given */
    for (int delta = -1; delta <= 1; delta += 2) {
        memcpy(d, b.data, len);
        jr__put_u32(d + 4, (uint32_t)((int64_t)(len - JR__FRAME_HEADER) + delta));
        rechecksum(d, len);
        ck_assert_int_eq(validate_exact(d, len, TW_MAX), JR_ECORRUPT);
    }
    /* ids: zero, or from == to ("from/to mismatch") */
    for (int c = 0; c < 3; c++) {
        memcpy(d, b.data, len);
        if (c == 0) jr__put_u64(d + 8, 0);
        if (c == 1) jr__put_u64(d + 16, 0);
        if (c == 2) memcpy(d + 16, d + 8, 8);
        rechecksum(d, len);
        ck_assert_int_eq(validate_exact(d, len, TW_MAX), JR_ECORRUPT);
    }
    free(d);
    jr__buf_free(&b);
}
END_TEST

START_TEST(oversized_frames_are_rejected)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    size_t ends[16];
    tw_sample_frame(&b, ends, 16);
    ck_assert_int_eq(validate_exact(b.data, b.len, b.len), 0);
    ck_assert_int_eq(validate_exact(b.data, b.len, b.len - 1), JR_EMSGSIZE);
    ck_assert_int_eq(validate_exact(b.data, b.len, 0), JR_EMSGSIZE);
    /* a length field promising more than the limit, whatever was actually received */
    jr__put_u32(b.data + 4, UINT32_MAX);
    rechecksum(b.data, b.len);
    ck_assert_int_eq(validate_exact(b.data, b.len, TW_MAX), JR_EMSGSIZE);
    jr__buf_free(&b);
}
END_TEST

START_TEST(random_bytes_are_rejected)
{
    uint64_t seed = test_seed();
    jr__rand r;
    jr__rand_seed(&r, seed);
    uint8_t buf[400];
    for (int it = 0; it < 20000; it++) {
        size_t len = (size_t)jr__rand_below(&r, sizeof buf);
        for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)jr__rand_next(&r);
        if (it % 2 && len >= 4) { /* a plausible header start */
            buf[0] = 'J';
            buf[1] = 'R';
            buf[2] = JR__FRAME_VERSION;
            buf[3] = 0;
        }
        int rc = validate_exact(buf, len, TW_MAX);
        ck_assert_msg(rc < 0, "seed %" PRIu64 " iteration %d: random bytes validated", seed, it);
    }
}
END_TEST

/* Random bodies and mutations of a valid body, wrapped in a valid header: whatever validates
 * must decode and re-encode to the same bytes; the rest is an error. */
START_TEST(random_bodies_with_valid_header_decode_canonically_or_fail)
{
    uint64_t seed = test_seed() + 1;
    jr__rand r;
    jr__rand_seed(&r, seed);
    jr__buf sample, t;
    jr__buf_init(&sample, NULL);
    jr__buf_init(&t, NULL);
    size_t ends[16];
    tw_sample_frame(&sample, ends, 16);
    const uint8_t *sbody = sample.data + JR__FRAME_HEADER;
    size_t slen = sample.len - JR__FRAME_HEADER;
    uint8_t body[512];
    int valid = 0;
    for (int it = 0; it < 20000; it++) {
        size_t len;
        if (it % 4 == 0) {
            len = (size_t)jr__rand_below(&r, 64);
            for (size_t i = 0; i < len; i++) body[i] = (uint8_t)jr__rand_below(&r, 80);
        } else {
            memcpy(body, sbody, slen);
            len = slen;
            int muts = 1 + (int)jr__rand_below(&r, 3);
            for (int k = 0; k < muts; k++) {
                size_t at = (size_t)jr__rand_below(&r, len);
                switch (jr__rand_below(&r, 4)) {
                case 0:
                    body[at] ^= (uint8_t)(1u << jr__rand_below(&r, 8));
                    break;
                case 1:
                    body[at] = (uint8_t)jr__rand_next(&r);
                    break;
                case 2:
                    len = at;
                    break; /* cut */
                default:   /* duplicate a byte */
                    if (len < sizeof body) {
                        memmove(body + at + 1, body + at, len - at);
                        len++;
                    }
                }
                if (len == 0) break;
            }
        }
        tw_raw_frame(&t, body, len);
        int rc = tw_check_canonical(t.data, t.len);
        ck_assert_msg(rc == 0 || rc == JR_ECORRUPT || rc == JR_EMSGSIZE,
                      "seed %" PRIu64 " iteration %d: rc %d", seed, it, rc);
        valid += rc == 0;
    }
    ck_assert_int_gt(valid, 0);
    jr__buf_free(&sample);
    jr__buf_free(&t);
}
END_TEST

START_TEST(bit_flips_at_every_position_are_rejected)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    size_t ends[16];
    tw_sample_frame(&b, ends, 16);
    uint8_t *d = malloc(b.len);
    for (size_t bit = 0; bit < b.len * 8; bit++) {
        memcpy(d, b.data, b.len);
        d[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        int rc = validate_exact(d, b.len, TW_MAX);
        ck_assert_msg(rc < 0, "flip of bit %zu validated", bit);
        /* with the checksum recomputed, body flips must be caught by the decoder or give
         * another well-formed frame */
        if (bit >= JR__FRAME_HEADER * 8) {
            rechecksum(d, b.len);
            rc = tw_check_canonical(d, b.len);
            ck_assert_msg(rc == 0 || rc == JR_ECORRUPT, "flip of bit %zu: %d", bit, rc);
        }
    }
    free(d);
    jr__buf_free(&b);
}
END_TEST

#define MAXV 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01   /* UINT64_MAX */
#define MAXV_1 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 /* UINT64_MAX - 1 */

struct body_case {
    const char *what;
    uint8_t bytes[48];
    size_t len;
    int want;
};
#define BODY(what, want, ...)                                                                      \
    {                                                                                              \
        what, {__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__}), want                                \
    }

/* Hand-made bodies, each next to a well-formed control case. */
static const struct body_case bodies[] = {
    BODY("heartbeat", 0, 5, 0, 1, 1, 0),
    BODY("type 0", JR_ECORRUPT, 0, 0, 1, 1, 0),
    BODY("type after the last Raft type", JR_ECORRUPT, JR__MSG_TYPE_MAX + 1, 0, 1, 1, 0),
    BODY("type 63", JR_ECORRUPT, 63, 0, 1, 1, 0),
    BODY("node type 66", JR_ECORRUPT, 66, 0, 0, 0),
    BODY("extension type 128", 0, 128, 0, 2, 'a', 'b'),
    BODY("extension type 255 with flags, empty", 0, 255, 0x5a, 0),
    BODY("extension then heartbeat", 0, 130, 0, 1, 'x', 5, 0, 1, 1, 0),
    BODY("extension, payload longer than the bytes left", JR_ECORRUPT, 128, 0, 3, 'a'),
    BODY("extension, overlong length", JR_ECORRUPT, 128, 0, 0x80, 0x00),
    BODY("extension, cut after the type", JR_ECORRUPT, 200),
    BODY("extension, cut after the flags", JR_ECORRUPT, 200, 0),
    BODY("unknown flag bit", JR_ECORRUPT, 5, 8, 1, 1, 0),
    BODY("high flag bit", JR_ECORRUPT, 5, 0x80, 1, 1, 0),
    BODY("known flags", 0, 5, 7, 1, 1, 0),
    BODY("overlong group varint", JR_ECORRUPT, 5, 0, 0x81, 0x00, 1, 0),
    BODY("overlong zero varint", JR_ECORRUPT, 5, 0, 1, 0x80, 0x00, 0),
    BODY("varint of 11 bytes", JR_ECORRUPT, 5, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
         0xff, 0xff, 0xff, 0x01),
    BODY("varint overflowing 64 bits", JR_ECORRUPT, 5, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
         0xff, 0xff, 0xff, 0x02),
    BODY("UINT64_MAX commit", 0, 5, 0, 1, 1, MAXV),
    BODY("zero group", JR_ECORRUPT, 5, 0, 0, 1, 0),
    BODY("message cut after its type", JR_ECORRUPT, 5),
    BODY("trailing byte", JR_ECORRUPT, 5, 0, 1, 1, 0, 5),
    BODY("vote", 0, 1, 1, 1, 1, 2, 3),
    BODY("vote_resp granted", 0, 2, 0, 1, 1, 1),
    BODY("vote_resp boolean 2", JR_ECORRUPT, 2, 0, 1, 1, 2),
    BODY("append_resp boolean 2", JR_ECORRUPT, 4, 0, 1, 1, 2, 0, 0, 0),
    BODY("append, one entry", 0, 3, 0, 1, 1, 0, 0, 0, 1, 2, 0, 1, 'x'),
    BODY("append, count larger than the bytes left", JR_ECORRUPT, 3, 0, 1, 1, 0, 0, 0, 5, 0, 0, 0,
         0, 0, 0),
    BODY("append, huge count", JR_ECORRUPT, 3, 0, 1, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f),
    BODY("append, entry type 3", JR_ECORRUPT, 3, 0, 1, 1, 0, 0, 0, 1, 3, 0, 0),
    BODY("append, entry longer than the bytes left", JR_ECORRUPT, 3, 0, 1, 1, 0, 0, 0, 1, 0, 0, 5,
         'a'),
    BODY("append, term overflows", JR_ECORRUPT, 3, 0, 1, 1, 0, MAXV, 0, 1, 0, 1, 0),
    BODY("append, term UINT64_MAX", 0, 3, 0, 1, 1, 0, MAXV_1, 0, 1, 0, 1, 0),
    BODY("append, index overflows", JR_ECORRUPT, 3, 0, 1, 1, MAXV, 0, 0, 1, 0, 0, 0),
    BODY("append, index UINT64_MAX", 0, 3, 0, 1, 1, MAXV_1, 0, 0, 1, 0, 0, 0),
    BODY("append, zero entries at UINT64_MAX", 0, 3, 0, 1, 1, MAXV, 0, 0, 0),
    BODY("snap", 0, 7, 0, 1, 1, 9, 1, 0, 2, 1, 0, 2, 'a', 'b'),
    BODY("snap, total not yet known", 0, 7, 0, 1, 1, 9, 1, 4, 0, 0, 0, 2, 'a', 'b'),
    BODY("snap, last chunk without total", JR_ECORRUPT, 7, 0, 1, 1, 9, 1, 4, 0, 1, 0, 2, 'a', 'b'),
    BODY("snap, done before the end", JR_ECORRUPT, 7, 0, 1, 1, 9, 1, 0, 3, 1, 0, 2, 'a', 'b'),
    BODY("snap, chunk past total", JR_ECORRUPT, 7, 0, 1, 1, 9, 1, 1, 2, 0, 0, 2, 'a', 'b'),
    BODY("snap, boolean 2", JR_ECORRUPT, 7, 0, 1, 1, 9, 1, 0, 2, 2, 0, 2, 'a', 'b'),
    BODY("snap, conf too large", JR_ECORRUPT, 7, 0, 1, 1, 9, 1, 0, 0, 1, 0xff, 0x7f),
    BODY("snap, conf longer than the bytes left", JR_ECORRUPT, 7, 0, 1, 1, 9, 1, 0, 0, 1, 3, 1),
    BODY("snap, offset + len overflows", JR_ECORRUPT, 7, 0, 1, 1, 9, 1, MAXV, MAXV, 0, 0, 1, 'a'),
    BODY("snap_resp done and reject", 0, 8, 0, 1, 1, 3, 4, 5),
    BODY("snap_resp unknown bit", JR_ECORRUPT, 8, 0, 1, 1, 4, 4, 5),
    BODY("timeout_now", 0, 9, 2, 1, 1),
    BODY("vouch", 0, 10, 0, 1, 1, 4, 2),
    BODY("vouch_resp", 0, 11, 4, 1, 3, 1, 7, 3, 6, 2, 1, 0),
    BODY("vouch_resp, empty configuration", 0, 11, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0),
    BODY("vouch_resp leader and unfloored", 0, 11, 0, 1, 1, 3, 0, 0, 0, 0, 1, 0),
    BODY("vouch_resp unknown bit", JR_ECORRUPT, 11, 0, 1, 1, 8, 0, 0, 0, 0, 1, 0),
    BODY("vouch_resp with the configuration at its commit", 0, 11, 0, 1, 1, 4, 9, 3, 9, 10, 1, 0, 6,
         1, 0),
    BODY("vouch_resp, bit 2 without the configuration at its commit", JR_ECORRUPT, 11, 0, 1, 1, 4,
         0, 0, 0, 0, 1, 0),
    BODY("vouch_resp, bit 2 with an empty configuration at its commit", JR_ECORRUPT, 11, 0, 1, 1, 4,
         0, 0, 0, 0, 1, 0, 0, 0),
    BODY("vouch_resp, configuration at its commit too large", JR_ECORRUPT, 11, 0, 1, 1, 4, 0, 0, 0,
         0, 1, 0, 0, 0xff, 0x7f),
    BODY("vouch_resp, conf too large", JR_ECORRUPT, 11, 0, 1, 1, 0, 0, 0, 0, 0, 0xff, 0x7f),
    BODY("vouch_resp, conf longer than the bytes left", JR_ECORRUPT, 11, 0, 1, 1, 0, 0, 0, 0, 0, 3,
         1),
    BODY("vouch_resp without its configuration", JR_ECORRUPT, 11, 0, 1, 1, 0, 7, 3),
    BODY("node heartbeat, empty", 0, 64, 0, 0, 0),
    BODY("node heartbeat, flags", JR_ECORRUPT, 64, 1, 0, 0),
    BODY("node heartbeat, count larger than the bytes left", JR_ECORRUPT, 64, 0, 0, 5, 0, 0, 0),
    BODY("node heartbeat, group UINT64_MAX", 0, 65, 0, 1, 1, MAXV_1, 1, 1),
    BODY("node heartbeat, group after UINT64_MAX", JR_ECORRUPT, 65, 0, 1, 2, MAXV_1, 1, 1, 0, 1, 1),
    BODY("node heartbeat, first gap overflows", JR_ECORRUPT, 64, 0, 1, 1, MAXV, 1, 1),
    BODY("node heartbeat, cut item", JR_ECORRUPT, 64, 0, 1, 2, 0, 1, 1, 0, 1),
};

START_TEST(each_decoding_rule_is_enforced)
{
    const struct body_case *c = &bodies[_i];
    jr__buf b;
    jr__buf_init(&b, NULL);
    tw_raw_frame(&b, c->bytes, c->len);
    int rc = tw_check_canonical(b.data, b.len);
    ck_assert_msg(rc == c->want, "%s: got %d, want %d", c->what, rc, c->want);
    jr__buf_free(&b);
}
END_TEST

START_TEST(entry_length_limit_and_scratch_capacity)
{
    /* APPEND prev_index 1, three entries (4 bytes, empty, 1 byte at term 2), then a HEARTBEAT */
    static const uint8_t body[] = {3,   0, 1, 1, 1, 0, 0, 3,   0, 0, 4, 'a', 'b', 'c',
                                   'd', 0, 0, 0, 0, 2, 1, 'e', 5, 0, 1, 1,   0};
    jr__buf b;
    jr__buf_init(&b, NULL);
    tw_raw_frame(&b, body, sizeof body);
    jr__frame f;
    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, TW_MAX), 0);
    ck_assert_uint_eq(f.max_entry, JR__FRAME_MAX_ENTRY);
    ck_assert_int_eq(jr__frame_check(&f, 3), 0);
    ck_assert_int_eq(jr__frame_check(&f, 2), JR_EMSGSIZE);
    f.max_entry = 4;
    ck_assert_int_eq(jr__frame_check(&f, 3), 0);
    f.max_entry = 3;
    ck_assert_int_eq(jr__frame_check(&f, 3), JR_ECORRUPT);

    /* errors are sticky: a failed frame never reports a clean end */
    jr__entry scratch[3];
    jr__msg m;
    f.max_entry = JR__FRAME_MAX_ENTRY;
    ck_assert_int_eq(tw_next(&f, &m, scratch, 2), JR_EMSGSIZE);
    ck_assert_int_eq(tw_next(&f, &m, scratch, 3), JR_EMSGSIZE);

    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, TW_MAX), 0);
    ck_assert_int_eq(tw_next(&f, &m, scratch, 3), 1);
    ck_assert_uint_eq(m.u.append.n, 3);
    ck_assert_uint_eq(m.u.append.entries[0].index, 2);
    ck_assert_uint_eq(m.u.append.entries[2].index, 4);
    ck_assert_uint_eq(m.u.append.entries[2].term, 2);
    ck_assert_uint_eq(m.u.append.entries[2].len, 1);
    ck_assert_uint_eq(m.from, TW_FROM);
    ck_assert_uint_eq(m.to, TW_TO);
    ck_assert_int_eq(tw_next(&f, &m, scratch, 3), 1);
    ck_assert_uint_eq(m.type, JR__MSG_HEARTBEAT);
    ck_assert_int_eq(tw_next(&f, &m, scratch, 3), 0);
    jr__buf_free(&b);
}
END_TEST

Suite *tw_malformed_suite(void)
{
    Suite *s = suite_create("wire malformed");
    TCase *tc = tcase_create("malformed");
    tcase_add_test(tc, truncated_at_every_byte_offset_is_rejected);
    tcase_add_test(tc, body_cut_inside_a_message_is_rejected_even_with_a_valid_header);
    tcase_add_test(tc, each_header_field_corrupted_is_rejected);
    tcase_add_test(tc, oversized_frames_are_rejected);
    tcase_add_test(tc, random_bytes_are_rejected);
    tcase_add_test(tc, random_bodies_with_valid_header_decode_canonically_or_fail);
    tcase_add_test(tc, bit_flips_at_every_position_are_rejected);
    tcase_add_loop_test(tc, each_decoding_rule_is_enforced, 0,
                        (int)(sizeof bodies / sizeof bodies[0]));
    tcase_add_test(tc, entry_length_limit_and_scratch_capacity);
    suite_add_tcase(s, tc);
    return s;
}
