/* Consumer log entries: every record type round-trips through one entry; the iterator refuses
 * every truncation, every flipped bit, other versions, a later release's record types, and
 * re-checksummed entries that are not canonical; the encoder refuses what the decoder would. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "consumer/op.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "util/rand.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static jr__crec rec(uint8_t type, uint64_t dseq, uint64_t sseq, uint32_t dc, uint64_t ts,
                    int64_t delay)
{
    jr__crec r;
    memset(&r, 0, sizeof r);
    r.type = type;
    r.dseq = dseq;
    r.sseq = sseq;
    r.dc = dc;
    r.ts = ts;
    r.delay_ns = delay;
    return r;
}

static size_t sample(jr__crec *r)
{
    size_t n = 0;
    r[n++] = rec(JR__COP_DELIVERED, 1, 1, 1, 1700000000123456789ULL, 0);
    r[n++] = rec(JR__COP_DELIVERED, UINT64_MAX, UINT64_MAX, UINT32_MAX, UINT64_MAX, 0);
    r[n++] = rec(JR__COP_ACK, 7, 9, 0, 5, 0);
    r[n++] = rec(JR__COP_ACK, 0, 1, 0, 0, 0);
    r[n++] = rec(JR__COP_NAK, 0, 3, 0, 11, 0);
    r[n++] = rec(JR__COP_NAK, 0, 3, 0, 11, INT64_MAX);
    r[n++] = rec(JR__COP_PROGRESS, 0, 4, 0, 12, 0);
    r[n++] = rec(JR__COP_TERM, 0, 5, 0, 13, 0);
    r[n++] = rec(JR__COP_SKIP, 0, 6, 0, 0, 0);
    r[n++] = rec(JR__COP_RESET, 0, 1000, 0, 0, 0);
    r[n++] = rec(JR__COP_MAXDELIV, 0, 8, 0, 0, 0);
    return n;
}

static void encode_sample(jr__buf *b)
{
    jr__crec r[16];
    size_t n = sample(r);
    jr__buf_init(b, NULL);
    ck_assert_int_eq(jr__cop_encode(r, n, b), 0);
}

/* Appends a checksum to raw bytes (a forged but intact entry). */
static void seal(jr__buf *b)
{
    jr__buf_u64(b, jr__xxh3(b->data, b->len));
}

START_TEST(every_type_round_trips)
{
    jr__crec r[16];
    size_t n = sample(r);
    jr__buf b;
    encode_sample(&b);
    jr__cop_iter it;
    ck_assert_int_eq(jr__cop_iter_init(&it, b.data, b.len), 0);
    ck_assert_uint_eq(jr__cop_iter_left(&it), n);
    for (size_t i = 0; i < n; i++) {
        jr__crec got;
        int more;
        ck_assert_int_eq(jr__cop_next(&it, &got, &more), 0);
        ck_assert_int_eq(more, 1);
        ck_assert_int_eq(got.type, r[i].type);
        ck_assert_uint_eq(got.dseq, r[i].dseq);
        ck_assert_uint_eq(got.sseq, r[i].sseq);
        ck_assert_uint_eq(got.dc, r[i].dc);
        ck_assert_uint_eq(got.ts, r[i].ts);
        ck_assert_int_eq(got.delay_ns, r[i].delay_ns);
    }
    jr__crec got;
    int more;
    ck_assert_int_eq(jr__cop_next(&it, &got, &more), 0);
    ck_assert_int_eq(more, 0);
    /* the same records encode to the same bytes */
    jr__buf b2;
    encode_sample(&b2);
    ck_assert_uint_eq(b.len, b2.len);
    ck_assert_mem_eq(b.data, b2.data, b.len);
    jr__buf_free(&b);
    jr__buf_free(&b2);
}
END_TEST

START_TEST(the_encoder_refuses_what_the_decoder_would)
{
    jr__crec bad[] = {
        rec(0, 0, 1, 0, 0, 0),                 /* type 0 */
        rec(9, 0, 1, 0, 0, 0),                 /* unknown type */
        rec(JR__COP_DELIVERED, 0, 1, 1, 0, 0), /* dseq 0 */
        rec(JR__COP_DELIVERED, 1, 0, 1, 0, 0), /* sseq 0 */
        rec(JR__COP_DELIVERED, 1, 1, 0, 0, 0), /* dc 0 */
        rec(JR__COP_DELIVERED, 1, 1, 1, 0, 5), /* a delay it does not carry */
        rec(JR__COP_ACK, 1, 0, 0, 0, 0),       /* sseq 0 */
        rec(JR__COP_ACK, 1, 1, 1, 0, 0),       /* a dc it does not carry */
        rec(JR__COP_NAK, 0, 1, 0, 0, -1),      /* negative delay */
        rec(JR__COP_NAK, 1, 1, 0, 0, 0),       /* a dseq it does not carry */
        rec(JR__COP_PROGRESS, 0, 1, 0, 0, 1),  /* delay */
        rec(JR__COP_TERM, 0, 0, 0, 0, 0),      /* sseq 0 */
        rec(JR__COP_SKIP, 0, 1, 0, 1, 0),      /* ts */
        rec(JR__COP_RESET, 0, 0, 0, 0, 0),     /* sseq 0 */
        rec(JR__COP_RESET, 2, 1, 0, 0, 0),     /* dseq */
        rec(JR__COP_MAXDELIV, 0, 1, 3, 0, 0),  /* dc */
    };
    jr__buf b;
    jr__buf_init(&b, NULL);
    for (size_t i = 0; i < N(bad); i++) {
        jr__crec r[2] = {rec(JR__COP_SKIP, 0, 1, 0, 0, 0), bad[i]};
        ck_assert_msg(jr__cop_encode(r, 2, &b) == JR_EINVAL, "bad record %zu encoded", i);
        ck_assert_uint_eq(b.len, 0);
        ck_assert_int_eq(jr__crec_check(&bad[i]), JR_EINVAL);
    }
    jr__crec ok = rec(JR__COP_SKIP, 0, 1, 0, 0, 0);
    ck_assert_int_eq(jr__cop_encode(&ok, 0, &b), JR_EINVAL);
    ck_assert_int_eq(jr__cop_encode(NULL, 1, &b), JR_EINVAL);
    ck_assert_int_eq(jr__cop_encode(&ok, JR__COP_BATCH_MAX + 1, &b), JR_EINVAL);
    ck_assert_uint_eq(b.len, 0);
    jr__buf_free(&b);
}
END_TEST

START_TEST(a_full_batch_round_trips)
{
    jr__crec *r = calloc(JR__COP_BATCH_MAX, sizeof *r);
    for (size_t i = 0; i < JR__COP_BATCH_MAX; i++)
        r[i] = rec(JR__COP_DELIVERED, i + 1, i + 1, 1, i * 1000, 0);
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__cop_encode(r, JR__COP_BATCH_MAX, &b), 0);
    jr__cop_iter it;
    ck_assert_int_eq(jr__cop_iter_init(&it, b.data, b.len), 0);
    size_t n = 0;
    for (;;) {
        jr__crec got;
        int more;
        ck_assert_int_eq(jr__cop_next(&it, &got, &more), 0);
        if (!more) break;
        ck_assert_uint_eq(got.sseq, n + 1);
        n++;
    }
    ck_assert_uint_eq(n, JR__COP_BATCH_MAX);
    jr__buf_free(&b);
    free(r);
}
END_TEST

START_TEST(every_truncation_is_refused)
{
    jr__buf b;
    encode_sample(&b);
    for (size_t len = 0; len < b.len; len++) {
        jr__cop_iter it;
        ck_assert_msg(jr__cop_iter_init(&it, b.data, len) == JR_ECORRUPT, "length %zu", len);
        jr__crec got;
        int more = 1;
        ck_assert_int_eq(jr__cop_next(&it, &got, &more), 0);
        ck_assert_int_eq(more, 0);
    }
    jr__buf_free(&b);
}
END_TEST

START_TEST(every_flipped_bit_is_refused)
{
    jr__buf b;
    encode_sample(&b);
    for (size_t i = 0; i < b.len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            b.data[i] ^= (uint8_t)(1u << bit);
            jr__cop_iter it;
            ck_assert_msg(jr__cop_iter_init(&it, b.data, b.len) == JR_ECORRUPT, "byte %zu bit %d",
                          i, bit);
            b.data[i] ^= (uint8_t)(1u << bit);
        }
    }
    jr__buf_free(&b);
}
END_TEST

/* Intact (re-checksummed) entries that no encoder of this release writes. */
static int forged(const uint8_t *body, size_t n)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__buf_put(&b, body, n);
    seal(&b);
    jr__cop_iter it;
    int rc = jr__cop_iter_init(&it, b.data, b.len);
    jr__buf_free(&b);
    return rc;
}

START_TEST(forged_entries_are_refused)
{
    /* the reference: SKIP 5 */
    const uint8_t good[] = {1, 1, JR__COP_SKIP, 5};
    ck_assert_int_eq(forged(good, sizeof good), 0);
    const uint8_t v2[] = {2, 1, JR__COP_SKIP, 5};
    ck_assert_int_eq(forged(v2, sizeof v2), JR_EVERSION);
    const uint8_t v0[] = {0, 1, JR__COP_SKIP, 5};
    ck_assert_int_eq(forged(v0, sizeof v0), JR_EVERSION);
    const uint8_t newer_type[] = {1, 2, JR__COP_SKIP, 5, 9, 1};
    ck_assert_int_eq(forged(newer_type, sizeof newer_type), JR_EVERSION);
    const uint8_t type0[] = {1, 1, 0, 5};
    ck_assert_int_eq(forged(type0, sizeof type0), JR_ECORRUPT);
    const uint8_t count0[] = {1, 0};
    ck_assert_int_eq(forged(count0, sizeof count0), JR_ECORRUPT);
    const uint8_t count_over[] = {1, 2, JR__COP_SKIP, 5};
    ck_assert_int_eq(forged(count_over, sizeof count_over), JR_ECORRUPT);
    const uint8_t trailing[] = {1, 1, JR__COP_SKIP, 5, 0};
    ck_assert_int_eq(forged(trailing, sizeof trailing), JR_ECORRUPT);
    const uint8_t overlong[] = {1, 1, JR__COP_SKIP, 0x85, 0x00};
    ck_assert_int_eq(forged(overlong, sizeof overlong), JR_ECORRUPT);
    const uint8_t overlong_count[] = {1, 0x81, 0x00, JR__COP_SKIP, 5};
    ck_assert_int_eq(forged(overlong_count, sizeof overlong_count), JR_ECORRUPT);
    const uint8_t sseq0[] = {1, 1, JR__COP_SKIP, 0};
    ck_assert_int_eq(forged(sseq0, sizeof sseq0), JR_ECORRUPT);
    /* DELIVERED dseq sseq dc ts */
    const uint8_t deliv_ok[] = {1, 1, JR__COP_DELIVERED, 1, 2, 1, 7};
    ck_assert_int_eq(forged(deliv_ok, sizeof deliv_ok), 0);
    const uint8_t deliv_dc0[] = {1, 1, JR__COP_DELIVERED, 1, 2, 0, 7};
    ck_assert_int_eq(forged(deliv_dc0, sizeof deliv_dc0), JR_ECORRUPT);
    const uint8_t deliv_dseq0[] = {1, 1, JR__COP_DELIVERED, 0, 2, 1, 7};
    ck_assert_int_eq(forged(deliv_dseq0, sizeof deliv_dseq0), JR_ECORRUPT);
    /* dc 2^32 */
    const uint8_t deliv_dc_big[] = {1, 1, JR__COP_DELIVERED, 1, 2, 0x80, 0x80, 0x80, 0x80, 0x10, 7};
    ck_assert_int_eq(forged(deliv_dc_big, sizeof deliv_dc_big), JR_ECORRUPT);
    /* NAK sseq delay ts, delay 2^63 */
    const uint8_t nak_big[] = {1,    1,    JR__COP_NAK, 3,    0x80, 0x80, 0x80, 0x80,
                               0x80, 0x80, 0x80,        0x80, 0x80, 0x01, 7};
    ck_assert_int_eq(forged(nak_big, sizeof nak_big), JR_ECORRUPT);
    const uint8_t cut[] = {1, 1, JR__COP_DELIVERED, 1, 2, 1};
    ck_assert_int_eq(forged(cut, sizeof cut), JR_ECORRUPT);
}
END_TEST

START_TEST(random_bytes_are_refused_or_read_whole)
{
    jr__rand r;
    jr__rand_seed(&r, 42);
    uint8_t buf[64];
    for (int i = 0; i < 20000; i++) {
        size_t n = (size_t)jr__rand_below(&r, sizeof buf + 1);
        for (size_t j = 0; j < n; j++) buf[j] = (uint8_t)jr__rand_next(&r);
        if (i & 1 && n > 2) buf[0] = 1; /* a version that passes, to reach the records */
        jr__buf b;
        jr__buf_init(&b, NULL);
        jr__buf_put(&b, buf, n);
        if (i & 1) seal(&b);
        jr__cop_iter it;
        int rc = jr__cop_iter_init(&it, b.data, b.len);
        ck_assert(rc == 0 || rc == JR_ECORRUPT || rc == JR_EVERSION);
        if (rc == 0) {
            /* what is accepted re-encodes to the same bytes */
            jr__crec recs[64];
            size_t k = 0;
            for (;;) {
                int more;
                ck_assert_int_eq(jr__cop_next(&it, &recs[k], &more), 0);
                if (!more) break;
                k++;
            }
            jr__buf e;
            jr__buf_init(&e, NULL);
            ck_assert_int_eq(jr__cop_encode(recs, k, &e), 0);
            ck_assert_uint_eq(e.len, b.len);
            ck_assert_mem_eq(e.data, b.data, b.len);
            jr__buf_free(&e);
        }
        jr__buf_free(&b);
    }
}
END_TEST

/* The encoder reserves the entry's exact size once: one allocation into an empty buffer, and a
 * failed one appends nothing. */
START_TEST(encoding_allocates_once)
{
    jr__crec r[16];
    size_t n = sample(r);
    jr__falloc fa;
    jr__falloc_init(&fa);
    jr__buf b;
    jr__buf_init(&b, &fa.a);
    ck_assert_int_eq(jr__cop_encode(r, n, &b), 0);
    ck_assert_uint_eq(fa.calls, 1);
    jr__buf_free(&b);
    jr__buf_init(&b, &fa.a);
    jr__falloc_arm(&fa, 1, 0);
    ck_assert_int_eq(jr__cop_encode(r, n, &b), JR_ENOMEM);
    ck_assert_uint_eq(b.len, 0);
    jr__buf_free(&b);
    ck_assert_int_eq(fa.live, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("consumer_op");
    TCase *tc = tcase_create("cop");
    tcase_add_test(tc, every_type_round_trips);
    tcase_add_test(tc, the_encoder_refuses_what_the_decoder_would);
    tcase_add_test(tc, a_full_batch_round_trips);
    tcase_add_test(tc, every_truncation_is_refused);
    tcase_add_test(tc, every_flipped_bit_is_refused);
    tcase_add_test(tc, forged_entries_are_refused);
    tcase_add_test(tc, random_bytes_are_refused_or_read_whole);
    tcase_add_test(tc, encoding_allocates_once);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
