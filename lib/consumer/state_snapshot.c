/*
 * state_snapshot.c — the consumer state's canonical snapshot and its strict, all-or-nothing
 * restore (format in state.h).
 */
#include <string.h>

#include "consumer/state.h"
#include "consumer/state_int.h"
#include "util/alloc.h"
#include "util/checksum.h"

int jr__cstate_snapshot(const jr__cstate *st, jr__buf *out)
{
    if (jr__buf_reserve(out, 64 + st->npending * 48)) return out->err;
    size_t start = out->len;
    jr__buf_u8(out, JR__CSTATE_VERSION);
    jr__buf_varint(out, st->delivered.consumer_seq);
    jr__buf_varint(out, st->delivered.stream_seq);
    jr__buf_varint(out, st->delivered.last_active_ns);
    jr__buf_varint(out, st->floor_last_ns);
    jr__buf_varint(out, st->npending);
    uint64_t ps = 0, pd = 0;
    for (size_t i = st->head; i < st->tail; i++) {
        const jr__cpend *e = &st->pend[i];
        if (!e->dc) continue;
        jr__buf_varint(out, e->sseq - ps);
        jr__buf_varint(out, e->dseq - pd);
        jr__buf_varint(out, e->dc);
        jr__buf_varint(out, e->ts);
        jr__buf_u8(out, e->nak);
        if (e->nak) jr__buf_varint(out, e->nak_deadline);
        ps = e->sseq;
        pd = e->dseq;
    }
    if (out->err) return out->err;
    jr__buf_u64(out, jr__xxh3(out->data + start, out->len - start));
    return out->err;
}

/* prev + a varint distance >= 1, without wrapping; fails the reader otherwise. */
static uint64_t next_seq(jr__rd *rd, uint64_t prev)
{
    uint64_t delta = jr__rd_varint(rd);
    if (rd->err) return 0;
    if (delta == 0 || delta > UINT64_MAX - prev) {
        jr__rd_fail(rd);
        return 0;
    }
    return prev + delta;
}

int jr__cstate_restore(jr__cstate *st, const void *data, size_t len)
{
    if (!data || len < 1 + 8) return JR_ECORRUPT;
    const uint8_t *p = (const uint8_t *)data;
    if (jr__get_u64(p + len - 8) != jr__xxh3(p, len - 8)) return JR_ECORRUPT;
    if (p[0] != JR__CSTATE_VERSION) return JR_EVERSION;
    jr__rd rd;
    jr__rd_init(&rd, p + 1, len - 9);
    jr__cseqs d;
    d.consumer_seq = jr__rd_varint(&rd);
    d.stream_seq = jr__rd_varint(&rd);
    d.last_active_ns = jr__rd_varint(&rd);
    uint64_t floor_last = jr__rd_varint(&rd);
    uint64_t n = jr__rd_varint(&rd);
    /* an entry takes at least 5 bytes: a bound before allocating */
    if (rd.err || n > jr__rd_left(&rd) / 5) return JR_ECORRUPT;
    if (n && st->policy.ack_policy == JR_ACK_NONE) return JR_ECORRUPT;
    size_t cap = 0;
    jr__cpend *pend = NULL;
    uint64_t *tree = NULL;
    if (n) {
        cap = JR__CSTATE_MIN;
        while (cap < n) cap *= 2;
        pend = jr__calloc(st->alloc, cap, sizeof *pend);
        tree = pend ? jr__calloc(st->alloc, 2 * cap, sizeof *tree) : NULL;
        if (!tree) {
            jr__free(st->alloc, pend);
            return JR_ENOMEM;
        }
    }
    uint64_t ps = 0, pd = 0, redel = 0;
    for (uint64_t i = 0; i < n && !rd.err; i++) {
        jr__cpend *e = &pend[i];
        e->sseq = ps = next_seq(&rd, ps);
        e->dseq = pd = next_seq(&rd, pd);
        uint64_t dc = jr__rd_varint(&rd);
        e->ts = jr__rd_varint(&rd);
        uint8_t nak = jr__rd_u8(&rd);
        if (nak == 1) e->nak_deadline = jr__rd_varint(&rd);
        if (rd.err) break;
        if (dc == 0 || dc > UINT32_MAX || nak > 1) {
            jr__rd_fail(&rd);
            break;
        }
        e->dc = (uint32_t)dc;
        e->nak = nak;
        redel += dc > 1;
    }
    /* every pending pair at or below delivered: their floor is then below it too */
    if (!rd.err && jr__rd_left(&rd)) jr__rd_fail(&rd);
    if (!rd.err && n && (ps > d.stream_seq || pd > d.consumer_seq)) jr__rd_fail(&rd);
    if (rd.err) {
        jr__free(st->alloc, pend);
        jr__free(st->alloc, tree);
        return JR_ECORRUPT;
    }
    if (n) jr__cstate_tree_build(st, pend, tree, cap, (size_t)n);
    jr__free(st->alloc, st->pend);
    jr__free(st->alloc, st->tree);
    st->pend = pend;
    st->tree = tree;
    st->cap = cap;
    st->head = 0;
    st->tail = (size_t)n;
    st->npending = (size_t)n;
    st->nredelivered = redel;
    st->delivered = d;
    st->floor_last_ns = floor_last;
    return 0;
}
