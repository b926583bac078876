/* Stream operations: every kind round-trips through the encoding; the decoder refuses every
 * truncation, every flipped byte, re-checksummed mutations that are not canonical, random bytes,
 * other versions; the encoder refuses what the decoder would refuse. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/op.h"
#include "util/checksum.h"
#include "util/rand.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char hdr[] = "NATS/1.0\r\nNats-Msg-Id: m1\r\n\r\n";

static jr__stream_op publish_all(void)
{
    jr__stream_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__OP_PUBLISH;
    op.ts = 1700000000123456789LL;
    op.u.pub.subject = "orders.eu.new";
    op.u.pub.subject_len = strlen("orders.eu.new");
    op.u.pub.hdr = (const uint8_t *)hdr;
    op.u.pub.hdr_len = strlen(hdr);
    op.u.pub.data = (const uint8_t *)"payload";
    op.u.pub.data_len = 7;
    jr__pub_opts *o = &op.u.pub.opts;
    o->flags = JR__PUB_MSG_ID | JR__PUB_EXPECT_STREAM | JR__PUB_EXPECT_LAST_SEQ |
               JR__PUB_EXPECT_LAST_SUBJ_SEQ | JR__PUB_EXPECT_LAST_MSG_ID | JR__PUB_ROLLUP_SUB |
               JR__PUB_TOKEN;
    o->msg_id = "m1";
    o->msg_id_len = 2;
    o->expected_stream = "ORDERS";
    o->expected_stream_len = 6;
    o->expected_last_seq = 41;
    o->expected_last_subject_seq = 0;
    o->expected_last_msg_id = "m0";
    o->expected_last_msg_id_len = 2;
    o->token = 0x8123456789abcdefULL;
    return op;
}

/* A set of ops covering every kind and every optional field. */
static size_t sample_ops(jr__stream_op *ops)
{
    size_t n = 0;
    ops[n++] = publish_all();
    jr__stream_op p = publish_all();
    p.u.pub.opts.flags = 0;
    p.u.pub.hdr = NULL;
    p.u.pub.hdr_len = 0;
    p.u.pub.data = NULL;
    p.u.pub.data_len = 0;
    p.ts = 0;
    ops[n++] = p;
    p = publish_all();
    p.u.pub.opts.flags = JR__PUB_ROLLUP_ALL | JR__PUB_EXPECT_LAST_SEQ;
    p.u.pub.opts.expected_last_seq = UINT64_MAX;
    ops[n++] = p;
    jr__stream_op d = {.type = JR__OP_DELETE, .ts = 5};
    d.u.del.seq = 7;
    d.u.del.erase = 1;
    ops[n++] = d;
    jr__stream_op pu = {.type = JR__OP_PURGE, .ts = 6};
    pu.u.purge.filter = "orders.*.new";
    pu.u.purge.filter_len = strlen("orders.*.new");
    pu.u.purge.keep = 3;
    ops[n++] = pu;
    jr__stream_op pa = {.type = JR__OP_PURGE, .ts = 6};
    pa.u.purge.seq = 100;
    ops[n++] = pa;
    static const uint8_t cfgbytes[] = {1, 2, 3, 4, 5};
    jr__stream_op c = {.type = JR__OP_CONFIG, .ts = INT64_MAX};
    c.u.config.cfg = cfgbytes;
    c.u.config.len = sizeof cfgbytes;
    ops[n++] = c;
    jr__stream_op t = {.type = JR__OP_TICK, .ts = 99};
    ops[n++] = t;
    jr__stream_op rm = {.type = JR__OP_REMOVE, .ts = 100};
    rm.u.remove.from = 3;
    rm.u.remove.to = 300;
    ops[n++] = rm;
    return n;
}

static int same_bytes(const void *a, size_t an, const void *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

static void assert_same_op(const jr__stream_op *a, const jr__stream_op *b)
{
    ck_assert_int_eq(a->type, b->type);
    ck_assert(a->ts == b->ts);
    switch (a->type) {
    case JR__OP_PUBLISH: {
        const jr__op_publish *x = &a->u.pub, *y = &b->u.pub;
        const jr__pub_opts *o = &x->opts, *q = &y->opts;
        ck_assert(same_bytes(x->subject, x->subject_len, y->subject, y->subject_len));
        ck_assert(same_bytes(x->hdr, x->hdr_len, y->hdr, y->hdr_len));
        ck_assert(same_bytes(x->data, x->data_len, y->data, y->data_len));
        ck_assert_uint_eq(o->flags, q->flags);
        if (o->flags & JR__PUB_MSG_ID)
            ck_assert(same_bytes(o->msg_id, o->msg_id_len, q->msg_id, q->msg_id_len));
        if (o->flags & JR__PUB_EXPECT_STREAM)
            ck_assert(same_bytes(o->expected_stream, o->expected_stream_len, q->expected_stream,
                                 q->expected_stream_len));
        if (o->flags & JR__PUB_EXPECT_LAST_SEQ)
            ck_assert(o->expected_last_seq == q->expected_last_seq);
        if (o->flags & JR__PUB_EXPECT_LAST_SUBJ_SEQ)
            ck_assert(o->expected_last_subject_seq == q->expected_last_subject_seq);
        if (o->flags & JR__PUB_EXPECT_LAST_MSG_ID)
            ck_assert(same_bytes(o->expected_last_msg_id, o->expected_last_msg_id_len,
                                 q->expected_last_msg_id, q->expected_last_msg_id_len));
        if (o->flags & JR__PUB_TOKEN) ck_assert(o->token == q->token);
        break;
    }
    case JR__OP_DELETE:
        ck_assert(a->u.del.seq == b->u.del.seq);
        ck_assert_int_eq(a->u.del.erase, b->u.del.erase);
        break;
    case JR__OP_PURGE:
        ck_assert(same_bytes(a->u.purge.filter, a->u.purge.filter_len, b->u.purge.filter,
                             b->u.purge.filter_len));
        ck_assert(a->u.purge.seq == b->u.purge.seq);
        ck_assert(a->u.purge.keep == b->u.purge.keep);
        break;
    case JR__OP_REMOVE:
        ck_assert_uint_eq(a->u.remove.from, b->u.remove.from);
        ck_assert_uint_eq(a->u.remove.to, b->u.remove.to);
        break;
    case JR__OP_CONFIG:
        ck_assert(same_bytes(a->u.config.cfg, a->u.config.len, b->u.config.cfg, b->u.config.len));
        break;
    default:
        break;
    }
}

START_TEST(every_kind_round_trips)
{
    jr__stream_op ops[16], back;
    size_t n = sample_ops(ops);
    for (size_t i = 0; i < n; i++) {
        jr__buf b;
        jr__buf_init(&b, NULL);
        ck_assert_int_eq(jr__op_encode(&ops[i], &b), 0);
        ck_assert_int_eq(jr__op_decode(b.data, b.len, &back), 0);
        assert_same_op(&ops[i], &back);
        /* decoded ops borrow from the entry */
        if (back.type == JR__OP_PUBLISH)
            ck_assert((const uint8_t *)back.u.pub.subject > b.data &&
                      (const uint8_t *)back.u.pub.subject < b.data + b.len);
        jr__buf_free(&b);
    }
}
END_TEST

START_TEST(batch_round_trips_in_order)
{
    jr__stream_op ops[16], back, inner;
    size_t n = sample_ops(ops);
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__op_encode_batch(ops, n, &b), 0);
    ck_assert_int_eq(jr__op_decode(b.data, b.len, &back), 0);
    ck_assert_int_eq(back.type, JR__OP_BATCH);
    ck_assert_uint_eq(back.u.batch.count, n);
    jr__op_iter it;
    jr__op_batch_iter(&back, &it);
    size_t i = 0;
    int rc, got;
    while (!(rc = jr__op_batch_next(&it, &inner, &got)) && got) assert_same_op(&ops[i++], &inner);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(i, n);
    jr__buf_free(&b);

    /* a batch of one is fine; of zero, or with a batch inside, is refused */
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__op_encode_batch(ops, 1, &b), 0);
    size_t len = b.len;
    ck_assert_int_eq(jr__op_encode_batch(ops, 0, &b), JR_EINVAL);
    jr__stream_op nested = {.type = JR__OP_BATCH};
    ck_assert_int_eq(jr__op_encode_batch(&nested, 1, &b), JR_EINVAL);
    ck_assert_int_eq(jr__op_encode(&nested, &b), JR_EINVAL);
    ck_assert_uint_eq(b.len, len); /* refusals append nothing */
    jr__buf_free(&b);
}
END_TEST

/* Every encoding of the samples, single and batched. */
static void all_encodings(jr__buf *encs, size_t *n)
{
    jr__stream_op ops[16];
    size_t k = sample_ops(ops);
    *n = 0;
    for (size_t i = 0; i < k; i++) {
        jr__buf_init(&encs[*n], NULL);
        ck_assert_int_eq(jr__op_encode(&ops[i], &encs[(*n)++]), 0);
    }
    jr__buf_init(&encs[*n], NULL);
    ck_assert_int_eq(jr__op_encode_batch(ops, k, &encs[(*n)++]), 0);
}

START_TEST(every_truncation_and_flipped_byte_is_rejected)
{
    jr__buf encs[20];
    size_t n;
    all_encodings(encs, &n);
    jr__stream_op op;
    for (size_t e = 0; e < n; e++) {
        const jr__buf *b = &encs[e];
        for (size_t len = 0; len < b->len; len++) {
            /* copy to an exact-size heap block so ASan catches any overread */
            uint8_t *p = malloc(len ? len : 1);
            memcpy(p, b->data, len);
            ck_assert_msg(jr__op_decode(p, len, &op) < 0, "encoding %zu prefix %zu accepted", e,
                          len);
            free(p);
        }
        uint8_t *p = malloc(b->len + 1);
        memcpy(p, b->data, b->len);
        p[b->len] = 0;
        ck_assert_int_eq(jr__op_decode(p, b->len + 1, &op), JR_ECORRUPT); /* trailing byte */
        for (size_t i = 0; i < b->len; i++) {
            for (int bit = 0; bit < 8; bit++) {
                p[i] ^= (uint8_t)(1u << bit);
                ck_assert_int_eq(jr__op_decode(p, b->len, &op), JR_ECORRUPT);
                p[i] ^= (uint8_t)(1u << bit);
            }
        }
        free(p);
        jr__buf_free(&encs[e]);
    }
}
END_TEST

/* Recomputes the checksum of a mutated entry. */
static void reseal(uint8_t *p, size_t len)
{
    jr__put_u64(p + len - 8, jr__xxh3(p, len - 8));
}

START_TEST(resealed_mutations_are_rejected_or_canonical)
{
    jr__buf encs[20];
    size_t n;
    all_encodings(encs, &n);
    jr__stream_op op;
    size_t accepted = 0, rejected = 0;
    for (size_t e = 0; e < n; e++) {
        const jr__buf *b = &encs[e];
        uint8_t *p = malloc(b->len);
        for (size_t i = 0; i + 8 < b->len; i++) {
            static const uint8_t deltas[] = {1, 0x80, 0xff, 0x7f};
            for (size_t d = 0; d < N(deltas); d++) {
                memcpy(p, b->data, b->len);
                p[i] = (uint8_t)(p[i] + deltas[d]);
                reseal(p, b->len);
                int rc = jr__op_decode(p, b->len, &op);
                if (rc) {
                    /* JR_EVERSION: another version, type or flag bit (of a later release) */
                    ck_assert(rc == JR_ECORRUPT || rc == JR_EVERSION);
                    rejected++;
                    continue;
                }
                /* accepted: it must be the canonical encoding of what it decodes to */
                accepted++;
                jr__buf again;
                jr__buf_init(&again, NULL);
                int erc = op.type == JR__OP_BATCH ? 0 : jr__op_encode(&op, &again);
                if (op.type != JR__OP_BATCH) {
                    ck_assert_int_eq(erc, 0);
                    ck_assert_msg(same_bytes(again.data, again.len, p, b->len),
                                  "entry %zu byte %zu: non-canonical encoding accepted", e, i);
                }
                jr__buf_free(&again);
            }
        }
        free(p);
        jr__buf_free(&encs[e]);
    }
    ck_assert_uint_gt(rejected, 0);
    ck_assert_uint_gt(accepted, 0); /* e.g. a changed payload byte is a different valid op */
}
END_TEST

START_TEST(a_zero_token_is_rejected)
{
    jr__stream_op op = publish_all(), back;
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__op_encode(&op, &b), 0);
    ck_assert_int_eq(jr__op_decode(b.data, b.len, &back), 0);
    ck_assert(back.u.pub.opts.token == op.u.pub.opts.token);
    memset(b.data + b.len - 16, 0, 8); /* the token, the last field before the checksum */
    reseal(b.data, b.len);
    ck_assert_int_eq(jr__op_decode(b.data, b.len, &back), JR_ECORRUPT);
    jr__buf_free(&b);
}
END_TEST

START_TEST(other_versions_and_types)
{
    jr__stream_op op = publish_all(), back;
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__op_encode(&op, &b), 0);
    b.data[0] = 2;
    reseal(b.data, b.len);
    ck_assert_int_eq(jr__op_decode(b.data, b.len, &back), JR_EVERSION);
    b.data[0] = JR__OP_VERSION;
    for (int t = 0; t < 256; t++) {
        if (t == JR__OP_PUBLISH) continue;
        b.data[1] = (uint8_t)t;
        reseal(b.data, b.len);
        /* a type of a later release, or a publish body under another type */
        int rc = jr__op_decode(b.data, b.len, &back);
        if (t == JR__OP_BATCH) /* the publish body read as a batch: its bytes decide */
            ck_assert(rc == JR_ECORRUPT || rc == JR_EVERSION);
        else
            ck_assert_msg(rc == (t > JR__OP_REMOVE ? JR_EVERSION : JR_ECORRUPT), "type %d: %s", t,
                          jr_err_name(rc));
    }
    /* an unknown publish flag bit is a later release's option: publish_all's flags take two
     * varint bytes after version, type and ts (the token is bit 7); bit 9 is unassigned */
    b.data[1] = JR__OP_PUBLISH;
    ck_assert_uint_eq(b.data[10], 0x80 | (op.u.pub.opts.flags & 0x7f));
    ck_assert_uint_eq(b.data[11], 0x01);
    b.data[11] = 0x05;
    reseal(b.data, b.len);
    ck_assert_int_eq(jr__op_decode(b.data, b.len, &back), JR_EVERSION);
    ck_assert_int_eq(jr__op_decode(NULL, 0, &back), JR_ECORRUPT);
    jr__buf_free(&b);
}
END_TEST

START_TEST(random_bytes_are_rejected)
{
    jr__rand r;
    uint64_t seed = 0x5eed0000u + (uint64_t)_i;
    jr__rand_seed(&r, seed);
    uint8_t buf[512];
    jr__stream_op op;
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = (size_t)jr__rand_below(&r, sizeof buf);
        for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)jr__rand_next(&r);
        if (iter & 1) {
            /* plausible header and a valid checksum: only the body is random */
            if (len < 10) continue;
            buf[0] = JR__OP_VERSION;
            buf[1] = (uint8_t)(1 + jr__rand_below(&r, 6));
            reseal(buf, len);
        }
        int rc = jr__op_decode(buf, len, &op);
        if (rc == 0 && op.type != JR__OP_BATCH) {
            /* whatever is accepted re-encodes to the same bytes */
            jr__buf b;
            jr__buf_init(&b, NULL);
            ck_assert_int_eq(jr__op_encode(&op, &b), 0);
            ck_assert_msg(same_bytes(b.data, b.len, buf, len), "seed %llu iter %d",
                          (unsigned long long)seed, iter);
            jr__buf_free(&b);
        } else if (rc) {
            ck_assert_msg(rc == JR_ECORRUPT || rc == JR_EVERSION, "seed %llu iter %d rc %d",
                          (unsigned long long)seed, iter, rc);
        }
    }
}
END_TEST

START_TEST(encoder_refuses_what_decoder_rejects)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__stream_op op;
#define REFUSED(mutation)                                                                          \
    do {                                                                                           \
        op = publish_all();                                                                        \
        mutation;                                                                                  \
        ck_assert_msg(jr__op_encode(&op, &b) == JR_EINVAL, "accepted: %s", #mutation);             \
    } while (0)
    REFUSED(op.ts = -1);
    REFUSED(op.type = 0);
    REFUSED(op.type = 99);
    REFUSED(op.u.pub.subject_len = 0);
    REFUSED(op.u.pub.subject = NULL);
    REFUSED(op.u.pub.subject_len = JR__OP_SUBJECT_MAX + 1);
    REFUSED(op.u.pub.opts.flags |= 1u << 9);
    REFUSED((op.type = JR__OP_REMOVE, op.u.remove.from = 0, op.u.remove.to = 1));
    REFUSED((op.type = JR__OP_REMOVE, op.u.remove.from = 5, op.u.remove.to = 4));
    REFUSED(op.u.pub.opts.token = 0);
    REFUSED(op.u.pub.opts.flags &= ~(uint32_t)JR__PUB_MSG_ID);
    REFUSED(op.u.pub.opts.flags |= JR__PUB_ROLLUP_ALL);
    REFUSED(op.u.pub.opts.msg_id_len = 0);
    REFUSED(op.u.pub.opts.msg_id_len = JR__OP_MSG_ID_MAX + 1);
    REFUSED(op.u.pub.opts.expected_stream_len = JR_STREAM_NAME_MAX + 1);
    REFUSED(op.u.pub.opts.expected_last_msg_id = NULL);
    REFUSED(op.u.pub.data = NULL);
    REFUSED(op.u.pub.data_len = JR__OP_MSG_MAX);
    REFUSED((op.type = JR__OP_DELETE, op.u.del.seq = 0, op.u.del.erase = 0));
    REFUSED((op.type = JR__OP_DELETE, op.u.del.seq = 1, op.u.del.erase = 2));
    REFUSED((memset(&op.u, 0, sizeof op.u), op.type = JR__OP_PURGE, op.u.purge.seq = 1,
             op.u.purge.keep = 1));
    REFUSED((memset(&op.u, 0, sizeof op.u), op.type = JR__OP_PURGE, op.u.purge.filter_len = 3));
    REFUSED((memset(&op.u, 0, sizeof op.u), op.type = JR__OP_CONFIG));
#undef REFUSED
    ck_assert_uint_eq(b.len, 0);
    ck_assert_int_eq(jr__op_encode(NULL, &b), JR_EINVAL);
    jr__buf_free(&b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_op");
    TCase *tc = tcase_create("op");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_kind_round_trips);
    tcase_add_test(tc, batch_round_trips_in_order);
    tcase_add_test(tc, every_truncation_and_flipped_byte_is_rejected);
    tcase_add_test(tc, resealed_mutations_are_rejected_or_canonical);
    tcase_add_test(tc, a_zero_token_is_rejected);
    tcase_add_test(tc, other_versions_and_types);
    tcase_add_loop_test(tc, random_bytes_are_rejected, 0, 4);
    tcase_add_test(tc, encoder_refuses_what_decoder_rejects);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
