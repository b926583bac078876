/*
 * fsm — the FSM extension's payload (type 129; layout in frame.h): a follower tells the leader
 * of each group it names whether its replica's state machine is whole, failed or being rebuilt,
 * which the leader's progress keeps for its reports (raft.h jr__raft_fsm_report). Group ids are
 * delta-coded as in the node heartbeats, so a report costs a few bytes per group.
 *
 * The frame decoder reads every extension as length-prefixed bytes, so an older node skips this
 * type whole; jr__fsm_open checks the payload before any item of it is used, and a payload of
 * another version (a later release's) is skipped on its own.
 */
#include <stdlib.h>

#include "wire/codec.h"

/* An item is at least three bytes: two one-byte varints and the state. */
#define ITEM_MIN 3
#define ITEM_BOUND (2 * JR__VARINT_MAX + 1)
/* type, mflags, payload length varint, version, count varint */
#define FSM_FIXED_BOUND (2 + JR__VARINT_MAX + 1 + JR__VARINT_MAX)

static int items_ok(const jr__fsm_item *items, size_t n)
{
    if (n == 0 || !items) return 0;
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        if (items[i].group <= prev || items[i].term == 0 || items[i].state > JR__FSM_REBUILDING)
            return 0;
        prev = items[i].group;
    }
    return 1;
}

/* Bytes of the payload (version, count, items). */
static size_t payload_len(const jr__fsm_item *items, size_t n)
{
    size_t len = 1 + jr__varint_len(n);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        len += jr__varint_len(items[i].group - prev - 1) + jr__varint_len(items[i].term) + 1;
        prev = items[i].group;
    }
    return len;
}

void jr__frame_add_fsm(jr__buf *b, const jr__fsm_item *items, size_t n)
{
    if (b->err) return;
    if (b->len < JR__FRAME_HEADER || !items_ok(items, n) ||
        n > (JR__RPC_MAX_PAYLOAD - 1 - JR__VARINT_MAX) / ITEM_BOUND) {
        b->err = JR_EINVAL;
        return;
    }
    size_t len = payload_len(items, n);
    if (jr__buf_reserve(b, 2 + JR__VARINT_MAX + len)) return;
    uint8_t *p = b->data + b->len;
    *p++ = JR__EXT_FSM;
    *p++ = 0;
    p = jr__wput_varint(p, len);
    *p++ = JR__FSM_VERSION;
    p = jr__wput_varint(p, n);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        p = jr__wput_varint(p, items[i].group - prev - 1);
        p = jr__wput_varint(p, items[i].term);
        *p++ = items[i].state;
        prev = items[i].group;
    }
    b->len = (size_t)(p - b->data);
}

size_t jr__frame_fsm_len(const jr__fsm_item *items, size_t n)
{
    size_t len = payload_len(items, n);
    return 2 + jr__varint_len(len) + len;
}

size_t jr__frame_fsm_fit(size_t room)
{
    return room > FSM_FIXED_BOUND ? (room - FSM_FIXED_BOUND) / ITEM_BOUND : 0;
}

static int cmp_item(const void *a, const void *b)
{
    uint64_t x = ((const jr__fsm_item *)a)->group, y = ((const jr__fsm_item *)b)->group;
    return (x > y) - (x < y);
}

void jr__fsm_sort(jr__fsm_item *items, size_t n)
{
    if (n > 1) qsort(items, n, sizeof *items, cmp_item);
}

/* Reads one item after group `prev`; 0 on success. */
static int get_item(jr__rd *r, uint64_t prev, jr__fsm_item *out)
{
    uint64_t gap = jr__wget_varint(r);
    out->term = jr__wget_varint(r);
    out->state = jr__wget_u8(r);
    if (r->err || out->term == 0 || out->state > JR__FSM_REBUILDING) return jr__rd_fail(r);
    if (gap >= UINT64_MAX - prev) return jr__rd_fail(r); /* prev + gap + 1 overflows */
    out->group = prev + gap + 1;
    return 0;
}

int jr__fsm_open(const jr__ext_view *x, jr__fsm_view *v)
{
    memset(v, 0, sizeof *v);
    if (x->type != JR__EXT_FSM || x->flags != 0 || x->len == 0 || !x->payload) return JR_ECORRUPT;
    jr__rd r;
    jr__rd_init(&r, x->payload, x->len);
    if (jr__wget_u8(&r) != JR__FSM_VERSION) return JR_EVERSION;
    uint64_t n = jr__wget_varint(&r);
    if (r.err || n == 0 || n > jr__rd_left(&r) / ITEM_MIN) return JR_ECORRUPT;
    const uint8_t *start = r.p;
    jr__fsm_item it = {0, 0, 0};
    for (uint64_t i = 0; i < n; i++)
        if (get_item(&r, it.group, &it)) return JR_ECORRUPT;
    if (jr__rd_left(&r) != 0) return JR_ECORRUPT; /* trailing bytes: not this version's */
    v->n = (uint32_t)n;
    jr__rd_init(&v->items, start, (size_t)(r.p - start));
    return 0;
}

int jr__fsm_next(jr__fsm_view *v, jr__fsm_item *out)
{
    if (v->n == 0) return 0;
    if (get_item(&v->items, v->group, out)) {
        v->n = 0;
        return 0;
    }
    v->n--;
    v->group = out->group;
    return 1;
}
