/* Sealed frames (XChaCha20-Poly1305 with the cluster key) round-trip, and any tampering — even
 * with the xxh3 check recomputed, as an attacker could — fails with JR_EAUTH. */
#include <string.h>

#include "util/checksum.h"
#include "wire_test.h"

static const uint8_t key[JR__FRAME_KEY_BYTES] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                                 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                                 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static const uint8_t nonce[JR__FRAME_NONCE_BYTES] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5};

static void rechecksum(uint8_t *d, size_t len)
{
    jr__put_u64(d + 24, jr__xxh3_2(d, 24, d + JR__FRAME_HEADER, len - JR__FRAME_HEADER));
}

static int open_exact(const uint8_t *data, size_t len, const uint8_t *k, jr__buf *plain)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (len) memcpy(copy, data, len);
    jr__frame f;
    int rc = jr__frame_open_sealed(&f, copy, len, TW_MAX, k, plain);
    if (rc == 0) rc = jr__frame_check(&f, TW_CAP);
    free(copy);
    return rc;
}

START_TEST(sealed_frames_roundtrip)
{
    jr__buf b, plain;
    jr__buf_init(&b, NULL);
    jr__buf_init(&plain, NULL);
    size_t ends[16];
    size_t n = tw_sample_frame(&b, ends, 16);
    size_t body = b.len - JR__FRAME_HEADER;
    uint8_t *clear = malloc(body);
    memcpy(clear, b.data + JR__FRAME_HEADER, body);
    ck_assert_int_eq(jr__frame_end_sealed(&b, key, nonce), 0);
    ck_assert_uint_eq(b.len, JR__FRAME_HEADER + body + JR__FRAME_SEAL_OVERHEAD);
    ck_assert_uint_eq(b.data[3], JR__FRAME_SEALED);
    ck_assert_int_ne(memcmp(b.data + JR__FRAME_HEADER + JR__FRAME_NONCE_BYTES, clear, 16), 0);

    jr__frame f;
    ck_assert_int_eq(jr__frame_open_sealed(&f, b.data, b.len, TW_MAX, key, &plain), 0);
    ck_assert_uint_eq(f.from, TW_FROM);
    ck_assert_uint_eq(f.to, TW_TO);
    ck_assert_uint_eq(jr__rd_left(&f.body), body);
    ck_assert_int_eq(memcmp(f.body.p, clear, body), 0);
    ck_assert_int_eq(jr__frame_check(&f, TW_CAP), 0);
    jr__entry scratch[8];
    jr__msg m;
    size_t got = 0;
    while (tw_next(&f, &m, scratch, 8) == 1) got++;
    ck_assert_uint_eq(got, n);

    /* the plain decoder refuses it, and so does a wrong key */
    ck_assert_int_eq(jr__frame_validate(b.data, b.len, TW_MAX, TW_CAP), JR_EAUTH);
    uint8_t other[JR__FRAME_KEY_BYTES];
    memcpy(other, key, sizeof other);
    other[31] ^= 1;
    ck_assert_int_eq(open_exact(b.data, b.len, other, &plain), JR_EAUTH);
    free(clear);
    jr__buf_free(&b);
    jr__buf_free(&plain);
}
END_TEST

START_TEST(sealed_empty_frame_and_random_nonces)
{
    jr__buf a, b, plain;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    jr__buf_init(&plain, NULL);
    jr__frame_begin(&a, TW_FROM, TW_TO);
    ck_assert_int_eq(jr__frame_end_sealed(&a, key, NULL), 0);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    ck_assert_int_eq(jr__frame_end_sealed(&b, key, NULL), 0);
    ck_assert_uint_eq(a.len, JR__FRAME_HEADER + JR__FRAME_SEAL_OVERHEAD);
    ck_assert_int_ne(
        memcmp(a.data + JR__FRAME_HEADER, b.data + JR__FRAME_HEADER, JR__FRAME_NONCE_BYTES), 0);
    jr__frame f;
    ck_assert_int_eq(jr__frame_open_sealed(&f, a.data, a.len, TW_MAX, key, &plain), 0);
    ck_assert_uint_eq(jr__rd_left(&f.body), 0);
    ck_assert_int_eq(open_exact(b.data, b.len, key, &plain), 0);
    jr__buf_free(&a);
    jr__buf_free(&b);
    jr__buf_free(&plain);
}
END_TEST

START_TEST(every_bit_flip_of_a_sealed_frame_fails_authentication)
{
    jr__buf b, plain;
    jr__buf_init(&b, NULL);
    jr__buf_init(&plain, NULL);
    jr__msg m = tw_msg(JR__MSG_HEARTBEAT, 42, 7);
    m.u.heartbeat.commit = 1234;
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add(&b, &m);
    ck_assert_int_eq(jr__frame_end_sealed(&b, key, nonce), 0);
    ck_assert_int_eq(open_exact(b.data, b.len, key, &plain), 0);
    uint8_t *d = malloc(b.len);
    for (size_t bit = 0; bit < b.len * 8; bit++) {
        size_t byte = bit / 8;
        for (int resum = 0; resum < 2; resum++) {
            memcpy(d, b.data, b.len);
            d[byte] ^= (uint8_t)(1u << (bit % 8));
            if (resum && (byte < 24 || byte >= JR__FRAME_HEADER)) rechecksum(d, b.len);
            int rc = open_exact(d, b.len, key, &plain);
            int want = byte < 2 ? JR_ECORRUPT : byte == 2 ? JR_EVERSION : JR_EAUTH;
            if (byte >= 4 && byte < 8 && rc == JR_EMSGSIZE) continue; /* length above limit */
            ck_assert_msg(rc == want, "bit %zu (resum %d): %d", bit, resum, rc);
        }
    }
    free(d);
    jr__buf_free(&b);
    jr__buf_free(&plain);
}
END_TEST

START_TEST(sealed_frames_truncated_or_short_are_rejected)
{
    jr__buf b, plain;
    jr__buf_init(&b, NULL);
    jr__buf_init(&plain, NULL);
    size_t ends[16];
    tw_sample_frame(&b, ends, 16);
    ck_assert_int_eq(jr__frame_end_sealed(&b, key, nonce), 0);
    for (size_t k = 0; k < b.len; k++) {
        int rc = open_exact(b.data, k, key, &plain);
        ck_assert_msg(rc == (k < JR__FRAME_HEADER ? JR_ECORRUPT : JR_EAUTH), "cut at %zu: %d", k,
                      rc);
    }
    /* a SEALED header around a body too short to hold nonce and tag, checksum valid */
    for (size_t body = 0; body < JR__FRAME_SEAL_OVERHEAD; body++) {
        jr__buf_reset(&b);
        jr__frame_begin(&b, TW_FROM, TW_TO);
        for (size_t i = 0; i < body; i++) jr__buf_u8(&b, (uint8_t)i);
        ck_assert_int_eq(jr__frame_end(&b), 0);
        b.data[3] = JR__FRAME_SEALED;
        rechecksum(b.data, b.len);
        ck_assert_int_eq(open_exact(b.data, b.len, key, &plain), JR_EAUTH);
    }
    jr__buf_free(&b);
    jr__buf_free(&plain);
}
END_TEST

START_TEST(a_keyed_receiver_refuses_plain_frames)
{
    jr__buf b, plain;
    jr__buf_init(&b, NULL);
    jr__buf_init(&plain, NULL);
    size_t ends[16];
    tw_sample_frame(&b, ends, 16);
    ck_assert_int_eq(open_exact(b.data, b.len, key, &plain), JR_EAUTH);
    /* without a key, open_sealed is the plain decoder */
    ck_assert_int_eq(open_exact(b.data, b.len, NULL, &plain), 0);
    /* structural errors keep their codes */
    b.data[2] = 9;
    ck_assert_int_eq(open_exact(b.data, b.len, key, &plain), JR_EVERSION);
    jr__buf_free(&b);
    jr__buf_free(&plain);
}
END_TEST

START_TEST(sealing_and_opening_reuse_their_buffers)
{
    tw_counter c = {0};
    jr_allocator a = tw_counting_allocator(&c);
    jr__buf b, plain;
    jr__buf_init(&b, &a);
    jr__buf_init(&plain, &a);
    static const uint8_t d[128];
    jr__entry e[16];
    for (int i = 0; i < 16; i++)
        e[i] = (jr__entry){.term = 1, .index = 1 + i, .len = 128, .data = d};
    jr__msg m = tw_msg(JR__MSG_APPEND, 5, 1);
    m.u.append.n = 16;
    m.u.append.entries = e;
    for (int round = 0; round < 4; round++) {
        size_t before = c.mallocs + c.reallocs;
        jr__frame_begin(&b, TW_FROM, TW_TO);
        jr__frame_add(&b, &m);
        ck_assert_int_eq(jr__frame_end_sealed(&b, key, NULL), 0);
        jr__frame f;
        ck_assert_int_eq(jr__frame_open_sealed(&f, b.data, b.len, TW_MAX, key, &plain), 0);
        ck_assert_int_eq(jr__frame_check(&f, TW_CAP), 0);
        if (round > 0) ck_assert_uint_eq(c.mallocs + c.reallocs - before, 0);
    }
    jr__buf_free(&b);
    jr__buf_free(&plain);
}
END_TEST

START_TEST(counter_nonces_never_repeat_and_open)
{
    jr__seal_nonce ns;
    ck_assert_int_eq(jr__seal_nonce_init(&ns), 0);
    uint8_t n1[JR__FRAME_NONCE_BYTES], n2[JR__FRAME_NONCE_BYTES];
    jr__seal_nonce_next(&ns, n1);
    jr__seal_nonce_next(&ns, n2);
    ck_assert_int_ne(memcmp(n1, n2, sizeof n1), 0);
    ck_assert_int_eq(memcmp(n1, n2, 16), 0); /* same prefix, next counter */
    jr__buf b, plain;
    jr__buf_init(&b, NULL);
    jr__buf_init(&plain, NULL);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    ck_assert_int_eq(jr__frame_end_sealed(&b, key, n2), 0);
    ck_assert_int_eq(memcmp(b.data + JR__FRAME_HEADER, n2, sizeof n2), 0);
    ck_assert_int_eq(open_exact(b.data, b.len, key, &plain), 0);
    jr__buf_free(&b);
    jr__buf_free(&plain);
}
END_TEST

Suite *tw_seal_suite(void)
{
    Suite *s = suite_create("wire seal");
    TCase *tc = tcase_create("seal");
    tcase_add_test(tc, sealed_frames_roundtrip);
    tcase_add_test(tc, sealed_empty_frame_and_random_nonces);
    tcase_add_test(tc, every_bit_flip_of_a_sealed_frame_fails_authentication);
    tcase_add_test(tc, sealed_frames_truncated_or_short_are_rejected);
    tcase_add_test(tc, a_keyed_receiver_refuses_plain_frames);
    tcase_add_test(tc, sealing_and_opening_reuse_their_buffers);
    tcase_add_test(tc, counter_nonces_never_repeat_and_open);
    suite_add_tcase(s, tc);
    return s;
}
