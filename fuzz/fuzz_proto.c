/*
 * fuzz_proto — libFuzzer target for jetraft-server's NATS client protocol parser
 * (examples/server/proto.h).
 *
 * The first two bytes choose the limits (a control line of 16..527 bytes, a payload of 0..4095
 * bytes, small so that both limits are reached) and how the rest is cut into reads; the rest is
 * what a client sends. For any input: the parser never reads or writes out of bounds, never
 * holds more than one line and one payload (np_buffered), hands out only well-formed operations
 * (a PUB's header size within its total, every token non-empty and free of spaces, the sizes
 * within the limits), and gives the same operations and the same error whether the bytes arrive
 * in one read, in the chosen pieces, or one byte at a time.
 *
 * Build: CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false
 *        ninja -C build-fuzz fuzz/fuzz_proto
 * Run:   build-fuzz/fuzz/fuzz_proto -max_total_time=60 fuzz/corpus/fuzz_proto
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the parser handed out, serialized, to compare the runs. */
typedef struct trace {
    uint8_t *p;
    size_t len, cap;
    size_t max_line, max_payload;
} trace;

static void put(trace *t, const void *p, size_t n)
{
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n) cap *= 2;
        t->p = realloc(t->p, cap);
        if (!t->p) abort();
        t->cap = cap;
    }
    if (n) memcpy(t->p + t->len, p, n);
    t->len += n;
}

static void put_size(trace *t, size_t n)
{
    uint64_t v = n;
    put(t, &v, sizeof v);
}

/* A token: NULL or a non-empty string without spaces or tabs. */
static void put_token(trace *t, const char *s, int required)
{
    if (!s) {
        if (required) __builtin_trap();
        put_size(t, SIZE_MAX);
        return;
    }
    size_t n = strlen(s);
    if (n == 0 || n > t->max_line || strpbrk(s, " \t")) __builtin_trap();
    put_size(t, n);
    put(t, s, n);
}

static int on_op(void *arg, const np_op *op)
{
    trace *t = arg;
    uint8_t k = (uint8_t)op->kind;
    put(t, &k, 1);
    switch (op->kind) {
    case NP_PUB:
    case NP_HPUB:
        put_token(t, op->subject, 1);
        put_token(t, op->reply, 0);
        if ((op->kind == NP_PUB && op->hdr_len) || op->hdr_len + op->data_len > t->max_payload ||
            !op->hdr || !op->data || op->data != op->hdr + op->hdr_len)
            __builtin_trap();
        put_size(t, op->hdr_len);
        put(t, op->hdr, op->hdr_len);
        put_size(t, op->data_len);
        put(t, op->data, op->data_len);
        break;
    case NP_SUB:
        put_token(t, op->subject, 1);
        put_token(t, op->queue, 0);
        put_token(t, op->sid, 1);
        break;
    case NP_UNSUB:
        put_token(t, op->sid, 1);
        if (op->max < -1) __builtin_trap();
        put(t, &op->max, sizeof op->max);
        break;
    case NP_CONNECT:
    case NP_INFO:
        if (!op->arg || strlen(op->arg) != op->arg_len || op->arg_len > t->max_line)
            __builtin_trap();
        put_size(t, op->arg_len);
        put(t, op->arg, op->arg_len);
        break;
    case NP_PING:
    case NP_PONG:
        break;
    default:
        __builtin_trap();
    }
    return 0;
}

/* Feeds data in reads of the sizes cuts gives (0: all that is left; cycling), records every
 * operation and the error (if any) in t. */
static void run(trace *t, const uint8_t *data, size_t size, const uint8_t *cuts, size_t ncuts)
{
    np_parser p;
    if (np_init(&p, t->max_line, t->max_payload)) abort();
    const char *err = NULL;
    int rc = 0;
    size_t off = 0, i = 0;
    while (off < size) {
        size_t n = size - off;
        if (ncuts && cuts[i % ncuts] && cuts[i % ncuts] < n) n = cuts[i % ncuts];
        i++;
        rc = np_feed(&p, data + off, n, on_op, t, &err);
        off += n;
        if (np_buffered(&p) > t->max_line + 1 + t->max_payload + 2) __builtin_trap();
        if (rc) break;
    }
    uint8_t end = rc == NP_EPROTO ? 1 : 0;
    if (rc && rc != NP_EPROTO) __builtin_trap();
    if ((rc == 0) != (err == NULL)) __builtin_trap();
    put(t, &end, 1);
    if (err) put(t, err, strlen(err));
    np_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 65536) return 0;
    size_t max_line = 16 + (size_t)(data[0] & 0x1f) * 16;
    size_t max_payload = (size_t)(data[0] >> 5) * 512 + (data[1] & 0x0f) * 32;
    uint8_t cuts[4] = {(uint8_t)(1 + (data[1] >> 4)), 3, (uint8_t)(7 + data[1]), 1};
    data += 2;
    size -= 2;
    trace whole = {.max_line = max_line, .max_payload = max_payload};
    trace pieces = whole, bytes = whole;
    static const uint8_t one = 1;
    run(&whole, data, size, NULL, 0);
    run(&pieces, data, size, cuts, sizeof cuts);
    run(&bytes, data, size, &one, 1);
    if (whole.len != pieces.len || memcmp(whole.p, pieces.p, whole.len) || whole.len != bytes.len ||
        memcmp(whole.p, bytes.p, whole.len))
        __builtin_trap();
    free(whole.p);
    free(pieces.p);
    free(bytes.p);
    return 0;
}
