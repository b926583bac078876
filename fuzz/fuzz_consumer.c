/*
 * fuzz_consumer — libFuzzer target for the consumer's replicated state (lib/consumer): log
 * entries (op.h), snapshots (state.h), and the state machine under arbitrary record sequences.
 * The first byte picks the mode; the rest is its input. Entries and snapshots are tried as given
 * and with a valid checksum appended, so the fuzzer reaches past the checksum. Decoders must
 * refuse malformed input with an error, never read out of bounds, never leak; whatever is
 * accepted must keep every invariant (jr__cstate_check) and snapshot back to the same bytes.
 *
 *   CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false
 *   ninja -C build-fuzz fuzz/fuzz_consumer && build-fuzz/fuzz/fuzz_consumer -max_total_time=60
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "consumer/op.h"
#include "consumer/state.h"
#include "util/buf.h"
#include "util/checksum.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(int cond)
{
    if (!cond) abort();
}

static void policy_from(uint8_t b, jr__cpolicy *p, int64_t *backoff)
{
    memset(p, 0, sizeof *p);
    p->ack_policy = b % 3;
    p->ack_wait_ns = (int64_t)(b >> 2) * 1000;
    p->max_deliver = (int64_t)(b >> 5) - 1;
    if (b & 0x80) {
        backoff[0] = 10;
        backoff[1] = 5000;
        p->backoff_ns = backoff;
        p->nbackoff = 2;
    }
}

/* Snapshot, restore into a fresh state, snapshot again: the same bytes. */
static void round_trip(const jr__cstate *st, const jr__cpolicy *p)
{
    jr__buf a, b;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    must(jr__cstate_snapshot(st, &a) == 0);
    jr__cstate t;
    must(jr__cstate_init(&t, NULL, p) == 0);
    must(jr__cstate_restore(&t, a.data, a.len) == 0);
    must(jr__cstate_check(&t) == 0);
    must(jr__cstate_snapshot(&t, &b) == 0);
    must(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    jr__cstate_free(&t);
    jr__buf_free(&a);
    jr__buf_free(&b);
}

static uint64_t take(const uint8_t **p, const uint8_t *end, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes && *p < end; i++) v = v << 8 | *(*p)++;
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    int64_t backoff[2];
    jr__cpolicy p;
    policy_from(data[1], &p, backoff);
    const uint8_t *in = data + 2;
    size_t n = size - 2;
    jr__cstate st;
    must(jr__cstate_init(&st, NULL, &p) == 0);
    jr__buf sealed;
    jr__buf_init(&sealed, NULL);
    jr__buf_put(&sealed, in, n);
    jr__buf_u64(&sealed, jr__xxh3(in, n));
    switch (data[0] % 3) {
    case 0: { /* an entry */
        jr__cop_iter it;
        (void)jr__cop_iter_init(&it, in, n);
        if (jr__cop_iter_init(&it, sealed.data, sealed.len) == 0) {
            jr__crec recs[256];
            size_t k = 0;
            int got;
            while (k < 256 && jr__cop_next(&it, &recs[k], &got) == 0 && got) k++;
            if (k < 256) {
                jr__buf e;
                jr__buf_init(&e, NULL);
                must(jr__cop_encode(recs, k, &e) == 0);
                must(e.len == sealed.len && memcmp(e.data, sealed.data, e.len) == 0);
                jr__buf_free(&e);
            }
            must(jr__cstate_apply_entry(&st, sealed.data, sealed.len) == 0);
            must(jr__cstate_check(&st) == 0);
        }
        break;
    }
    case 1: { /* a snapshot */
        (void)jr__cstate_restore(&st, in, n);
        if (jr__cstate_restore(&st, sealed.data, sealed.len) == 0) {
            must(jr__cstate_check(&st) == 0);
            jr__buf b;
            jr__buf_init(&b, NULL);
            must(jr__cstate_snapshot(&st, &b) == 0);
            must(b.len == sealed.len && memcmp(b.data, sealed.data, b.len) == 0);
            jr__buf_free(&b);
        }
        break;
    }
    default: { /* records: type byte, then small fields */
        const uint8_t *q = in, *end = in + n;
        while (q < end) {
            jr__crec r;
            memset(&r, 0, sizeof r);
            r.type = (uint8_t)(*q++ % 8 + 1);
            r.sseq = take(&q, end, 1) + 1;
            if (r.type == JR__COP_DELIVERED || r.type == JR__COP_ACK) r.dseq = take(&q, end, 1) + 1;
            if (r.type == JR__COP_DELIVERED) r.dc = (uint32_t)take(&q, end, 1) % 4 + 1;
            if (r.type == JR__COP_NAK) r.delay_ns = (int64_t)take(&q, end, 2);
            if (r.type <= JR__COP_TERM) r.ts = take(&q, end, 2);
            jr__capply out;
            must(jr__cstate_apply(&st, &r, &out) == 0);
            must(jr__cstate_check(&st) == 0);
            uint64_t s;
            uint32_t dc;
            int rc = jr__cstate_next_expired(&st, 30000, &s, &dc);
            must(rc == 0 || rc == JR_ENOTFOUND);
            if (rc == 0) must(jr__cstate_pending_get(&st, s, NULL, NULL, NULL) == 0);
        }
        round_trip(&st, &p);
        break;
    }
    }
    jr__buf_free(&sealed);
    jr__cstate_free(&st);
    return 0;
}
