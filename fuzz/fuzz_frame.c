/*
 * fuzz_frame — libFuzzer target for the peer frame decoder (lib/wire/frame.h).
 *
 * For any input (Raft messages, heartbeats, requests and responses, extensions): jr__frame_validate
 * and a full decode (jr__frame_next over every message) must agree, never read out of bounds, never
 * crash. If the input validates, every message is re-encoded into a new frame and the bytes
 * must equal the input (the encoding is canonical). An FSM extension's payload is also decoded
 * (jr__fsm_open) and, when accepted, re-encoded to the same bytes.
 * Seeds: a fuzzer that starts from nothing finds the header quickly because
 * the first input bytes steer it; the harness also rewraps the input as a body with a valid
 * header and checksum (first byte odd), so the message decoders are reached on every run.
 *
 * Build: CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false
 *        ninja -C build-fuzz fuzz/fuzz_frame
 * Run:   build-fuzz/fuzz/fuzz_frame -max_total_time=60
 */
#include <stdlib.h>
#include <string.h>

#include "wire/frame.h"

#define MAX_FRAME ((size_t)1 << 20)
#define CAP 1024

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(void)
{
    __builtin_trap();
}

/* An FSM extension's payload: jr__fsm_open never reads outside it, and one it accepts gives
 * back exactly its count of items, which re-encode to the same bytes (canonical). */
static void check_fsm(const jr__ext_view *x)
{
    static jr__fsm_item items[MAX_FRAME / 3 + 1];
    jr__fsm_view v;
    if (jr__fsm_open(x, &v) != 0) return;
    size_t n = 0, want = v.n;
    while (jr__fsm_next(&v, &items[n])) n++;
    if (n != want || n == 0) fail();
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, 0x1234, 0x5678);
    jr__frame_add_fsm(&b, items, n);
    if (b.err) fail(); /* the encoder must accept whatever the decoder produced */
    /* the payload follows the header, the type, the flags and the length varint */
    size_t hdr = JR__FRAME_HEADER + 2;
    if (b.len < hdr + x->len) fail();
    size_t lenlen = b.len - hdr - x->len;
    if (memcmp(b.data + hdr + lenlen, x->payload, x->len) != 0) fail();
    jr__buf_free(&b);
}

/* Decodes everything; if it validated, re-encodes and compares. */
static void decode_all(const uint8_t *d, size_t len, int valid, jr__frame *f)
{
    static jr__entry scratch[CAP];
    static jr__hb_item items[MAX_FRAME / 3 + 1];
    jr__buf out;
    jr__buf_init(&out, NULL);
    jr__frame_begin(&out, f->from, f->to);
    jr__msg m;
    int rc, got;
    while (!(rc = jr__frame_next(f, &m, scratch, CAP, &got)) && got) {
        if (m.type == JR__MSG_NODE_REQUEST) {
            if (m.group != 0 || f->rpc.id == 0) fail();
            jr__frame_add_request(&out, f->rpc.id, f->rpc.kind, f->rpc.payload, f->rpc.len);
        } else if (m.type == JR__MSG_NODE_RESPONSE) {
            if (m.group != 0 || f->rpc.id == 0) fail();
            jr__frame_add_response(&out, f->rpc.id, f->rpc.status, f->rpc.payload, f->rpc.len);
        } else if (m.type >= JR__MSG_EXT_FIRST) {
            if (m.group != 0 || f->ext.type != m.type) fail();
            if (m.type == JR__EXT_FSM) check_fsm(&f->ext);
            jr__frame_add_ext(&out, f->ext.type, f->ext.flags, f->ext.payload, f->ext.len);
        } else if (m.type >= JR__MSG_NODE_FIRST) {
            jr__hb_view v = f->hb;
            size_t n = 0;
            while (jr__hb_next(&v, &items[n])) n++;
            if (n != f->hb.n) fail();
            jr__frame_add_hb(&out, m.type, f->hb.seq, items, n);
        } else {
            if (m.group == 0 || m.from != f->from || m.to != f->to) fail();
            jr__frame_add(&out, &m);
        }
        if (out.err) fail(); /* the encoder must accept whatever the decoder produced */
    }
    if ((rc == 0) != valid) fail(); /* validate and decode must agree */
    if (valid) {
        if (jr__frame_end(&out) != 0) fail();
        if (out.len != len || memcmp(out.data, d, len) != 0) fail();
    }
    jr__buf_free(&out);
}

static void run_plain(const uint8_t *d, size_t len)
{
    int v = jr__frame_validate(d, len, MAX_FRAME, CAP);
    jr__frame f;
    int rc = jr__frame_open(&f, d, len, MAX_FRAME);
    if (rc) {
        if (v == 0) fail();
        return;
    }
    decode_all(d, len, v == 0, &f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_FRAME) return 0;
    /* exactly-sized copy so that any overread is caught */
    uint8_t *d = malloc(size ? size : 1);
    if (!d) return 0;
    if (size) memcpy(d, data, size);

    /* 1. the raw input as a frame */
    run_plain(d, size);

    /* 2. the input (minus a steering byte) as the body of a well-formed header */
    if (size > 0 && (d[0] & 1)) {
        jr__buf b;
        jr__buf_init(&b, NULL);
        jr__frame_begin(&b, 0x1234, 0x5678);
        jr__buf_put(&b, d + 1, size - 1);
        if (jr__frame_end(&b) == 0) {
            uint8_t *w = malloc(b.len);
            if (w) {
                memcpy(w, b.data, b.len);
                run_plain(w, b.len);
                free(w);
            }
        }
        jr__buf_free(&b);
    }
    free(d);
    return 0;
}
