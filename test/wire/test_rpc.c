/* Node-to-node requests and responses on the wire (NODE_REQUEST, NODE_RESPONSE): they round-trip
 * exactly, share frames with Raft messages and heartbeats, every truncation and every broken
 * decoding rule is refused, the payload limit holds, and the encoder refuses what the decoder
 * would drop. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "wire_test.h"

static uint8_t big[1u << 20];

/* One request or response to put in a frame. */
typedef struct rpc {
    uint8_t type;
    uint64_t id;
    uint8_t kind;
    int status;
    const uint8_t *payload;
    size_t len;
} rpc;

static void add(jr__buf *b, const rpc *r)
{
    size_t before = b->len;
    if (r->type == JR__MSG_NODE_REQUEST) {
        jr__frame_add_request(b, r->id, r->kind, r->payload, r->len);
        ck_assert_int_eq(b->err, 0);
        ck_assert_uint_eq(b->len - before, jr__frame_request_len(r->id, r->len));
    } else {
        jr__frame_add_response(b, r->id, r->status, r->payload, r->len);
        ck_assert_int_eq(b->err, 0);
        ck_assert_uint_eq(b->len - before, jr__frame_response_len(r->id, r->status, r->len));
    }
}

static void assert_rpc(const jr__frame *f, const jr__msg *m, const rpc *want, const jr__buf *frame)
{
    ck_assert_uint_eq(m->type, want->type);
    ck_assert_uint_eq(m->group, 0);
    ck_assert_uint_eq(m->term, 0);
    ck_assert_uint_eq(m->flags, 0);
    ck_assert_uint_eq(m->from, TW_FROM);
    ck_assert_uint_eq(m->to, TW_TO);
    ck_assert_uint_eq(f->rpc.type, want->type);
    ck_assert_uint_eq(f->rpc.id, want->id);
    if (want->type == JR__MSG_NODE_REQUEST) {
        ck_assert_uint_eq(f->rpc.kind, want->kind);
        ck_assert_int_eq(f->rpc.status, 0);
    } else {
        ck_assert_uint_eq(f->rpc.kind, 0);
        ck_assert_int_eq(f->rpc.status, want->status);
    }
    ck_assert_uint_eq(f->rpc.len, want->len);
    if (want->len) {
        ck_assert_int_eq(memcmp(f->rpc.payload, want->payload, want->len), 0);
        /* zero copy: the payload points into the frame */
        ck_assert(f->rpc.payload > frame->data && f->rpc.payload < frame->data + frame->len);
    } else {
        ck_assert_ptr_null(f->rpc.payload);
    }
}

/* Encodes rs into one frame, validates, decodes and compares, checks canonical re-encoding. */
static void roundtrip(const rpc *rs, size_t n)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    for (size_t i = 0; i < n; i++) add(&b, &rs[i]);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    ck_assert_int_eq(jr__frame_validate(b.data, b.len, TW_MAX, TW_CAP), 0);
    jr__frame f;
    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, TW_MAX), 0);
    ck_assert_uint_eq(f.max_rpc, JR__RPC_MAX_PAYLOAD);
    jr__msg m;
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(tw_next(&f, &m, NULL, 0), 1);
        assert_rpc(&f, &m, &rs[i], &b);
    }
    ck_assert_int_eq(tw_next(&f, &m, NULL, 0), 0);
    ck_assert_int_eq(tw_check_canonical(b.data, b.len), 0);
    jr__buf_free(&b);
}

START_TEST(requests_and_responses_round_trip)
{
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 31 + 7);
    static const uint8_t hello[] = "publish orders.new";
    const rpc rs[] = {
        {JR__MSG_NODE_REQUEST, 1, JR__RPC_PUBLISH, 0, hello, sizeof hello},
        {JR__MSG_NODE_RESPONSE, 1, 0, 0, NULL, 0},
        {JR__MSG_NODE_REQUEST, UINT64_MAX, JR__RPC_META, 0, NULL, 0},
        {JR__MSG_NODE_REQUEST, 127, JR__RPC_STREAM_INFO, 0, big, 128},
        {JR__MSG_NODE_REQUEST, 128, JR__RPC_STREAM_ADMIN, 0, big, 1},
        {JR__MSG_NODE_RESPONSE, UINT64_MAX, 0, JR_ENOTLEADER, hello, 5},
        {JR__MSG_NODE_RESPONSE, 2, 0, JR_EDENIED, big, 300},
        {JR__MSG_NODE_RESPONSE, 3, 0, INT32_MIN, NULL, 0},
        {JR__MSG_NODE_RESPONSE, 4, 0, INT32_MAX, NULL, 0},
        {JR__MSG_NODE_RESPONSE, 5, 0, 1, NULL, 0},
        {JR__MSG_NODE_RESPONSE, 6, 0, -64, NULL, 0},
        {JR__MSG_NODE_RESPONSE, 7, 0, 64, big, sizeof big},
    };
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) roundtrip(&rs[i], 1);
    roundtrip(rs, sizeof rs / sizeof rs[0]);
}
END_TEST

START_TEST(small_statuses_take_one_byte)
{
    /* type, flags, id, status, len: every JR_E* code is one zigzag byte */
    ck_assert_uint_eq(jr__frame_response_len(1, 0, 0), 5);
    ck_assert_uint_eq(jr__frame_response_len(1, JR_EDENIED, 0), 5);
    ck_assert_uint_eq(jr__frame_response_len(1, -64, 0), 5);
    ck_assert_uint_eq(jr__frame_response_len(1, -65, 0), 6);
    ck_assert_uint_eq(jr__frame_response_len(1, INT32_MIN, 0), 9);
    ck_assert_uint_eq(jr__frame_request_len(1, 0), 5);
    ck_assert_uint_eq(jr__frame_request_len(300, 200), 2 + 2 + 1 + 2 + 200);
}
END_TEST

START_TEST(gathered_payload_encodes_like_a_contiguous_one)
{
    static const uint8_t whole[] = "subject|headers|data";
    jr_iovec iov[4] = {{whole, 8}, {NULL, 0}, {whole + 8, 8}, {whole + 16, sizeof whole - 16}};
    jr__buf a, b;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    jr__frame_begin(&a, TW_FROM, TW_TO);
    jr__frame_add_request(&a, 42, JR__RPC_PUBLISH, whole, sizeof whole);
    jr__frame_add_response(&a, 42, JR_EWRONGLASTSEQ, whole, sizeof whole);
    jr__frame_add_request(&a, 43, JR__RPC_META, NULL, 0);
    ck_assert_int_eq(jr__frame_end(&a), 0);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add_requestv(&b, 42, JR__RPC_PUBLISH, iov, 4);
    jr__frame_add_responsev(&b, 42, JR_EWRONGLASTSEQ, iov, 4);
    jr__frame_add_requestv(&b, 43, JR__RPC_META, NULL, 0);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_int_eq(memcmp(a.data, b.data, a.len), 0);
    jr__buf_free(&a);
    jr__buf_free(&b);
}
END_TEST

/* A frame mixing every Raft message, both heartbeats, requests and responses. */
static size_t mixed_frame(jr__buf *b)
{
    size_t ends[16];
    jr__buf sample;
    jr__buf_init(&sample, NULL);
    size_t n = tw_sample_frame(&sample, ends, 16);
    ck_assert_uint_le(n, 16);
    static const uint8_t pay[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    jr__frame_begin(b, TW_FROM, TW_TO);
    /* interleave: request, the first half of the sample, response, the rest, request */
    jr__frame_add_request(b, 9, JR__RPC_PUBLISH, pay, sizeof pay);
    size_t half = ends[4];
    jr__buf_put(b, sample.data + JR__FRAME_HEADER, half);
    jr__frame_add_response(b, 9, 0, pay, 3);
    jr__buf_put(b, sample.data + JR__FRAME_HEADER + half, sample.len - JR__FRAME_HEADER - half);
    jr__frame_add_request(b, 10, JR__RPC_META, NULL, 0);
    ck_assert_int_eq(jr__frame_end(b), 0);
    jr__buf_free(&sample);
    return n + 3;
}

START_TEST(mixed_frame_validates_and_decodes_in_order)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    size_t n = mixed_frame(&b);
    ck_assert_int_eq(jr__frame_validate(b.data, b.len, TW_MAX, TW_CAP), 0);
    ck_assert_int_eq(tw_check_canonical(b.data, b.len), 0);
    jr__frame f;
    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, TW_MAX), 0);
    jr__entry scratch[8];
    jr__msg m;
    uint8_t types[32];
    size_t k = 0;
    int rc;
    while ((rc = tw_next(&f, &m, scratch, 8)) == 1) {
        ck_assert_uint_lt(k, 32);
        types[k++] = m.type;
        if (k == 1) ck_assert_uint_eq(f.rpc.len, 9);
        if (k == 7) ck_assert_uint_eq(f.rpc.len, 3);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(k, n);
    ck_assert_uint_eq(types[0], JR__MSG_NODE_REQUEST);
    ck_assert_uint_eq(types[1], JR__MSG_VOTE);
    ck_assert_uint_eq(types[5], JR__MSG_HEARTBEAT);
    ck_assert_uint_eq(types[6], JR__MSG_NODE_RESPONSE);
    ck_assert_uint_eq(types[7], JR__MSG_HEARTBEAT_RESP);
    ck_assert_uint_eq(types[k - 3], JR__MSG_NODE_HB);
    ck_assert_uint_eq(types[k - 2], JR__MSG_NODE_HB_RESP);
    ck_assert_uint_eq(types[k - 1], JR__MSG_NODE_REQUEST);
    jr__buf_free(&b);
}
END_TEST

/* What a later release may add: a request of a kind this version does not execute and a
 * message type it does not know, between Raft messages. The frame validates; the decoder hands
 * both over on their own, with every Raft message around them. */
START_TEST(unknown_kinds_and_extension_types_do_not_fail_the_frame)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    static const uint8_t pay[] = {1, 2, 3};
    jr__msg hb = tw_msg(JR__MSG_HEARTBEAT, 7, 3);
    hb.u.heartbeat.commit = 11;
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add(&b, &hb);
    jr__frame_add_request(&b, 5, JR__RPC_KIND_MAX + 1, pay, sizeof pay);
    jr__frame_add_ext(&b, 200, 0x33, pay, sizeof pay);
    jr__frame_add_ext(&b, 255, 0, NULL, 0);
    hb.group = 8;
    jr__frame_add(&b, &hb);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    ck_assert_int_eq(tw_check_canonical(b.data, b.len), 0);
    jr__frame f;
    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, TW_MAX), 0);
    jr__entry scratch[4];
    jr__msg m;
    ck_assert_int_eq(tw_next(&f, &m, scratch, 4), 1);
    ck_assert_uint_eq(m.group, 7);
    ck_assert_int_eq(tw_next(&f, &m, scratch, 4), 1);
    ck_assert_uint_eq(m.type, JR__MSG_NODE_REQUEST);
    ck_assert_uint_eq(f.rpc.kind, JR__RPC_KIND_MAX + 1);
    ck_assert_uint_eq(f.rpc.len, 3);
    ck_assert_int_eq(tw_next(&f, &m, scratch, 4), 1);
    ck_assert_uint_eq(m.type, 200);
    ck_assert_uint_eq(m.group, 0);
    ck_assert_uint_eq(f.ext.flags, 0x33);
    ck_assert_uint_eq(f.ext.len, 3);
    ck_assert_int_eq(memcmp(f.ext.payload, pay, 3), 0);
    ck_assert_int_eq(tw_next(&f, &m, scratch, 4), 1);
    ck_assert_uint_eq(m.type, 255);
    ck_assert_uint_eq(f.ext.len, 0);
    ck_assert_ptr_null(f.ext.payload);
    ck_assert_int_eq(tw_next(&f, &m, scratch, 4), 1);
    ck_assert_uint_eq(m.type, JR__MSG_HEARTBEAT);
    ck_assert_uint_eq(m.group, 8);
    ck_assert_int_eq(tw_next(&f, &m, scratch, 4), 0);
    jr__buf_free(&b);
}
END_TEST

START_TEST(one_bad_rpc_fails_the_whole_mixed_frame)
{
    jr__buf b, t;
    jr__buf_init(&b, NULL);
    jr__buf_init(&t, NULL);
    mixed_frame(&b);
    /* the last message is a request with kind META: make its kind 0 (never valid) */
    const uint8_t *body = b.data + JR__FRAME_HEADER;
    size_t blen = b.len - JR__FRAME_HEADER;
    uint8_t *copy = malloc(blen);
    memcpy(copy, body, blen);
    ck_assert_uint_eq(copy[blen - 5], JR__MSG_NODE_REQUEST);
    ck_assert_uint_eq(copy[blen - 1], 0);
    copy[blen - 2] = 0;
    tw_raw_frame(&t, copy, blen);
    ck_assert_int_eq(jr__frame_validate(t.data, t.len, TW_MAX, TW_CAP), JR_ECORRUPT);
    /* and the decoder reports the error after the good messages, and keeps reporting it */
    jr__frame f;
    ck_assert_int_eq(jr__frame_open(&f, t.data, t.len, TW_MAX), 0);
    jr__entry scratch[8];
    jr__msg m;
    int rc, good = 0;
    while ((rc = tw_next(&f, &m, scratch, 8)) == 1) good++;
    ck_assert_int_eq(rc, JR_ECORRUPT);
    ck_assert_int_gt(good, 10);
    ck_assert_int_eq(tw_next(&f, &m, scratch, 8), JR_ECORRUPT);
    free(copy);
    jr__buf_free(&b);
    jr__buf_free(&t);
}
END_TEST

START_TEST(every_truncation_is_rejected)
{
    jr__buf b, t;
    jr__buf_init(&b, NULL);
    jr__buf_init(&t, NULL);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add_request(&b, 300, JR__RPC_PUBLISH, big, 200);
    jr__frame_add_response(&b, 70000, JR_ENOQUORUM, big, 130);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    size_t first = jr__frame_request_len(300, 200);
    size_t blen = b.len - JR__FRAME_HEADER;
    /* the frame itself cut at every length */
    for (size_t len = 0; len < b.len; len++) {
        uint8_t *d = malloc(len ? len : 1);
        memcpy(d, b.data, len);
        ck_assert_msg(jr__frame_validate(d, len, TW_MAX, TW_CAP) < 0, "cut at %zu", len);
        free(d);
    }
    /* the body cut at every length, inside a valid header: only the message boundaries are
     * well-formed frames */
    for (size_t cut = 0; cut < blen; cut++) {
        tw_raw_frame(&t, b.data + JR__FRAME_HEADER, cut);
        int rc = tw_check_canonical(t.data, t.len);
        if (cut == 0 || cut == first)
            ck_assert_msg(rc == 0, "cut at %zu: %d", cut, rc);
        else
            ck_assert_msg(rc == JR_ECORRUPT, "cut at %zu: %d", cut, rc);
    }
    jr__buf_free(&b);
    jr__buf_free(&t);
}
END_TEST

#define MAXV 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 /* UINT64_MAX */

struct body_case {
    const char *what;
    uint8_t bytes[32];
    size_t len;
    int want;
};
#define BODY(what, want, ...)                                                                      \
    {                                                                                              \
        what, {__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__}), want                                \
    }

/* Hand-made bodies, each next to a well-formed control case. */
static const struct body_case bodies[] = {
    BODY("request", 0, 66, 0, 1, 1, 2, 'h', 'i'),
    BODY("request, empty payload", 0, 66, 0, 1, 4, 0),
    BODY("request, id UINT64_MAX", 0, 66, 0, MAXV, 1, 0),
    BODY("request, id 0", JR_ECORRUPT, 66, 0, 0, 1, 0),
    BODY("request, kind 0", JR_ECORRUPT, 66, 0, 1, 0, 0),
    BODY("request, a kind of a later release", 0, 66, 0, 1, JR__RPC_KIND_MAX + 1, 0),
    BODY("request, kind 255", 0, 66, 0, 1, 255, 0),
    BODY("request, flags", JR_ECORRUPT, 66, 1, 1, 1, 0),
    BODY("request, high flag bit", JR_ECORRUPT, 66, 0x80, 1, 1, 0),
    BODY("request, overlong id", JR_ECORRUPT, 66, 0, 0x81, 0x00, 1, 0),
    BODY("request, overlong length", JR_ECORRUPT, 66, 0, 1, 1, 0x80, 0x00),
    BODY("request, payload longer than the bytes left", JR_ECORRUPT, 66, 0, 1, 1, 3, 'h', 'i'),
    BODY("request, huge length", JR_ECORRUPT, 66, 0, 1, 1, MAXV),
    BODY("request, trailing byte", JR_ECORRUPT, 66, 0, 1, 1, 1, 'h', 'i'),
    BODY("request, cut after the kind", JR_ECORRUPT, 66, 0, 1, 1),
    BODY("request, cut after the type", JR_ECORRUPT, 66),
    BODY("response", 0, 67, 0, 1, 0, 1, 'x'),
    BODY("response, status -1", 0, 67, 0, 1, 1, 0),
    BODY("response, status INT32_MIN", 0, 67, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0),
    BODY("response, status INT32_MAX", 0, 67, 0, 1, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0),
    BODY("response, status beyond int32", JR_ECORRUPT, 67, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 0),
    BODY("response, status UINT64_MAX", JR_ECORRUPT, 67, 0, 1, MAXV, 0),
    BODY("response, overlong status", JR_ECORRUPT, 67, 0, 1, 0x81, 0x00, 0),
    BODY("response, id 0", JR_ECORRUPT, 67, 0, 0, 0, 0),
    BODY("response, flags", JR_ECORRUPT, 67, 2, 1, 0, 0),
    BODY("response, payload longer than the bytes left", JR_ECORRUPT, 67, 0, 1, 0, 2, 'x'),
    BODY("node type 68 is not defined", JR_ECORRUPT, 68, 0, 1, 1, 0),
    BODY("node type 127 is not defined", JR_ECORRUPT, 127, 0, 1, 1, 0),
    BODY("request then heartbeat then response", 0, 66, 0, 1, 2, 0, 64, 0, 0, 0, 67, 0, 1, 0, 0),
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

START_TEST(payload_limit_is_enforced)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add_request(&b, 1, JR__RPC_PUBLISH, big, 1000);
    jr__frame_add_response(&b, 1, 0, big, 10);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    jr__frame f;
    jr__msg m;
    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, TW_MAX), 0);
    f.max_rpc = 1000;
    ck_assert_int_eq(jr__frame_check(&f, 0), 0);
    f.max_rpc = 999;
    ck_assert_int_eq(jr__frame_check(&f, 0), JR_EMSGSIZE);
    ck_assert_int_eq(tw_next(&f, &m, NULL, 0), JR_EMSGSIZE);
    ck_assert_int_eq(tw_next(&f, &m, NULL, 0), JR_EMSGSIZE); /* sticky */
    f.max_rpc = 10;
    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, TW_MAX), 0);
    ck_assert_uint_eq(f.max_rpc, JR__RPC_MAX_PAYLOAD); /* open resets the limit */

    /* the encoder refuses a payload above the wire's ceiling, without reading it */
    size_t len = b.len;
    jr__buf_reset(&b);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    len = b.len;
    jr__frame_add_request(&b, 1, JR__RPC_PUBLISH, big, (size_t)JR__RPC_MAX_PAYLOAD + 1);
    ck_assert_int_eq(b.err, JR_EMSGSIZE);
    ck_assert_uint_eq(b.len, len);
    b.err = 0;
    jr__frame_add_response(&b, 1, 0, big, (size_t)JR__RPC_MAX_PAYLOAD + 1);
    ck_assert_int_eq(b.err, JR_EMSGSIZE);
    ck_assert_uint_eq(b.len, len);
    jr__buf_free(&b);
}
END_TEST

START_TEST(the_largest_payload_round_trips)
{
    uint8_t *p = malloc(JR__RPC_MAX_PAYLOAD);
    for (size_t i = 0; i < JR__RPC_MAX_PAYLOAD; i += 4096) p[i] = (uint8_t)(i >> 12);
    p[JR__RPC_MAX_PAYLOAD - 1] = 0xab;
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add_response(&b, 5, 0, p, JR__RPC_MAX_PAYLOAD);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    jr__frame f;
    jr__msg m;
    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, (size_t)128 << 20), 0);
    ck_assert_int_eq(tw_next(&f, &m, NULL, 0), 1);
    ck_assert_uint_eq(f.rpc.len, JR__RPC_MAX_PAYLOAD);
    ck_assert_uint_eq(f.rpc.payload[JR__RPC_MAX_PAYLOAD - 1], 0xab);
    ck_assert_int_eq(tw_next(&f, &m, NULL, 0), 0);
    free(p);
    jr__buf_free(&b);
}
END_TEST

START_TEST(encoder_refuses_what_the_decoder_would_drop_and_writes_nothing)
{
    static const uint8_t x[4] = {1, 2, 3, 4};
    jr_iovec bad_piece[2] = {{x, 4}, {NULL, 3}};
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, TW_FROM, TW_TO);
    jr__frame_add_request(&b, 1, JR__RPC_PUBLISH, x, 4);
    size_t len = b.len;
    struct {
        const char *what;
        int type; /* 0 request, 1 response, 2 requestv, 3 responsev */
        uint64_t id;
        uint8_t kind;
        const void *p;
        size_t n;
        const jr_iovec *iov;
        int iovcnt;
    } cases[] = {
        {"request id 0", 0, 0, JR__RPC_PUBLISH, x, 4, NULL, 0},
        {"kind 0", 0, 1, 0, x, 4, NULL, 0},
        {"extension with a type below 128", 4, 0, JR__MSG_NODE_REQUEST, x, 4, NULL, 0},
        {"extension with a NULL payload and a length", 4, 0, JR__MSG_EXT_FIRST, NULL, 4, NULL, 0},
        {"NULL payload with a length", 0, 1, JR__RPC_PUBLISH, NULL, 4, NULL, 0},
        {"response id 0", 1, 0, 0, x, 4, NULL, 0},
        {"response NULL payload with a length", 1, 1, 0, NULL, 1, NULL, 0},
        {"negative iovcnt", 2, 1, JR__RPC_PUBLISH, NULL, 0, bad_piece, -1},
        {"NULL iov with pieces", 3, 1, 0, NULL, 0, NULL, 2},
        {"a NULL piece with a length", 2, 1, JR__RPC_PUBLISH, NULL, 0, bad_piece, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        switch (cases[i].type) {
        case 0:
            jr__frame_add_request(&b, cases[i].id, cases[i].kind, cases[i].p, cases[i].n);
            break;
        case 1:
            jr__frame_add_response(&b, cases[i].id, 0, cases[i].p, cases[i].n);
            break;
        case 2:
            jr__frame_add_requestv(&b, cases[i].id, cases[i].kind, cases[i].iov, cases[i].iovcnt);
            break;
        case 4:
            jr__frame_add_ext(&b, cases[i].kind, 0, cases[i].p, cases[i].n);
            break;
        default:
            jr__frame_add_responsev(&b, cases[i].id, 0, cases[i].iov, cases[i].iovcnt);
        }
        ck_assert_msg(b.err == JR_EINVAL, "%s: err %d", cases[i].what, b.err);
        ck_assert_msg(b.len == len, "%s wrote bytes", cases[i].what);
        /* every later write is a no-op until the caller clears the error */
        jr__frame_add_response(&b, 1, 0, x, 4);
        ck_assert_uint_eq(b.len, len);
        b.err = 0;
    }
    /* after clearing, the frame goes on and is well formed */
    jr__frame_add_response(&b, 1, JR_ENOTFOUND, x, 2);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    ck_assert_int_eq(tw_check_canonical(b.data, b.len), 0);
    /* no header: refused */
    jr__buf_reset(&b);
    jr__frame_add_request(&b, 1, JR__RPC_PUBLISH, x, 4);
    ck_assert_int_eq(b.err, JR_EINVAL);
    jr__buf_free(&b);
}
END_TEST

static uint64_t test_seed(void)
{
    const char *s = getenv("JR_TEST_SEED");
    return s ? strtoull(s, NULL, 0) : 0x5eed4a11;
}

/* Random mutations of a frame of RPCs: whatever validates decodes and re-encodes to the same
 * bytes; everything else is an error. */
START_TEST(mutated_rpc_bodies_decode_canonically_or_fail)
{
    uint64_t seed = test_seed();
    jr__rand r;
    jr__rand_seed(&r, seed);
    jr__buf sample, t;
    jr__buf_init(&sample, NULL);
    jr__buf_init(&t, NULL);
    jr__frame_begin(&sample, TW_FROM, TW_TO);
    jr__frame_add_request(&sample, 3, JR__RPC_PUBLISH, big, 20);
    jr__frame_add_response(&sample, 3, JR_EWRONGLASTMSGID, big, 7);
    jr__frame_add_request(&sample, 200, JR__RPC_STREAM_ADMIN, NULL, 0);
    jr__frame_add_response(&sample, 200, 0, NULL, 0);
    ck_assert_int_eq(jr__frame_end(&sample), 0);
    const uint8_t *sbody = sample.data + JR__FRAME_HEADER;
    size_t slen = sample.len - JR__FRAME_HEADER;
    uint8_t body[256];
    int valid = 0, invalid = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(body, sbody, slen);
        size_t len = slen;
        int muts = 1 + (int)jr__rand_below(&r, 3);
        for (int k = 0; k < muts && len > 0; k++) {
            size_t at = (size_t)jr__rand_below(&r, len);
            switch (jr__rand_below(&r, 4)) {
            case 0:
                body[at] ^= (uint8_t)(1u << jr__rand_below(&r, 8));
                break;
            case 1:
                body[at] = (uint8_t)jr__rand_below(&r, 70);
                break;
            case 2:
                len = at;
                break;
            default:
                memmove(body + at + 1, body + at, len - at);
                len++;
            }
        }
        tw_raw_frame(&t, body, len);
        int rc = tw_check_canonical(t.data, t.len);
        ck_assert_msg(rc == 0 || rc == JR_ECORRUPT,
                      "seed %" PRIu64 " (JR_TEST_SEED) iteration %d: rc %d", seed, it, rc);
        valid += rc == 0;
        invalid += rc != 0;
    }
    ck_assert_int_gt(valid, 0);
    ck_assert_int_gt(invalid, 0);
    jr__buf_free(&sample);
    jr__buf_free(&t);
}
END_TEST

static Suite *rpc_suite(void)
{
    Suite *s = suite_create("wire rpc");
    TCase *tc = tcase_create("rpc");
    tcase_add_test(tc, requests_and_responses_round_trip);
    tcase_add_test(tc, small_statuses_take_one_byte);
    tcase_add_test(tc, gathered_payload_encodes_like_a_contiguous_one);
    tcase_add_test(tc, mixed_frame_validates_and_decodes_in_order);
    tcase_add_test(tc, unknown_kinds_and_extension_types_do_not_fail_the_frame);
    tcase_add_test(tc, one_bad_rpc_fails_the_whole_mixed_frame);
    tcase_add_test(tc, every_truncation_is_rejected);
    tcase_add_loop_test(tc, each_decoding_rule_is_enforced, 0,
                        (int)(sizeof bodies / sizeof bodies[0]));
    tcase_add_test(tc, payload_limit_is_enforced);
    tcase_add_test(tc, the_largest_payload_round_trips);
    tcase_add_test(tc, encoder_refuses_what_the_decoder_would_drop_and_writes_nothing);
    tcase_add_test(tc, mutated_rpc_bodies_decode_canonically_or_fail);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rpc_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
