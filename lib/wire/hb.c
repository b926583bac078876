/*
 * hb — node-level coalesced heartbeats (NODE_HB, NODE_HB_RESP): one message per peer
 * pair per interval listing (group, term, index) for every group the two share. Group ids are
 * sent as gaps between strictly ascending ids, so a dense range of ids costs one byte each and
 * 10,000 groups fit in one frame of a few tens of kilobytes. Layout in frame.h.
 */
#include <stdlib.h>

#include "wire/codec.h"

/* An item is at least three one-byte varints. */
#define ITEM_MIN 3
#define ITEM_BOUND (3 * JR__VARINT_MAX)
#define HB_FIXED_BOUND (2 + 2 * JR__VARINT_MAX)

static int hb_type(uint8_t type)
{
    return type == JR__MSG_NODE_HB || type == JR__MSG_NODE_HB_RESP;
}

void jr__frame_add_hb(jr__buf *b, uint8_t type, uint64_t seq, const jr__hb_item *items, size_t n)
{
    if (b->err) return;
    if (b->len < JR__FRAME_HEADER || !hb_type(type) || (n && !items) || n > UINT32_MAX) {
        b->err = JR_EINVAL;
        return;
    }
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        if (items[i].group <= prev) {
            b->err = JR_EINVAL; /* zero, unsorted or duplicate group id */
            return;
        }
        prev = items[i].group;
    }
    if (n > (SIZE_MAX - HB_FIXED_BOUND) / ITEM_BOUND) {
        b->err = JR_ENOMEM;
        return;
    }
    if (jr__buf_reserve(b, HB_FIXED_BOUND + n * ITEM_BOUND)) return;
    uint8_t *p = b->data + b->len;
    *p++ = type;
    *p++ = 0;
    p = jr__wput_varint(p, seq);
    p = jr__wput_varint(p, n);
    prev = 0;
    for (size_t i = 0; i < n; i++) {
        p = jr__wput_varint(p, items[i].group - prev - 1);
        p = jr__wput_varint(p, items[i].term);
        p = jr__wput_varint(p, items[i].index);
        prev = items[i].group;
    }
    b->len = (size_t)(p - b->data);
}

size_t jr__frame_hb_len(uint64_t seq, const jr__hb_item *items, size_t n)
{
    size_t len = 2 + jr__varint_len(seq) + jr__varint_len(n);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        len += jr__varint_len(items[i].group - prev - 1) + jr__varint_len(items[i].term) +
               jr__varint_len(items[i].index);
        prev = items[i].group;
    }
    return len;
}

static int cmp_item(const void *a, const void *b)
{
    uint64_t x = ((const jr__hb_item *)a)->group, y = ((const jr__hb_item *)b)->group;
    return (x > y) - (x < y);
}

void jr__hb_sort(jr__hb_item *items, size_t n)
{
    if (n > 1) qsort(items, n, sizeof *items, cmp_item);
}

/* Reads one item after group `prev`; 0 on success. */
static int get_item(jr__rd *r, uint64_t prev, jr__hb_item *out)
{
    uint64_t gap = jr__wget_varint(r);
    out->term = jr__wget_varint(r);
    out->index = jr__wget_varint(r);
    if (r->err) return JR_ECORRUPT;
    if (gap >= UINT64_MAX - prev) return jr__rd_fail(r); /* prev + gap + 1 overflows */
    out->group = prev + gap + 1;
    return 0;
}

int jr__wire_hb_get(jr__rd *r, uint8_t type, jr__hb_view *v)
{
    v->type = type;
    v->seq = jr__wget_varint(r);
    uint64_t n = jr__wget_varint(r);
    if (r->err) return JR_ECORRUPT;
    if (n > jr__rd_left(r) / ITEM_MIN) return jr__rd_fail(r);
    v->n = (uint32_t)n;
    v->group = 0;
    const uint8_t *start = r->p;
    uint64_t g = 0;
    jr__hb_item it;
    for (uint64_t i = 0; i < n; i++) {
        if (get_item(r, g, &it)) return JR_ECORRUPT;
        g = it.group;
    }
    jr__rd_init(&v->items, start, (size_t)(r->p - start));
    return 0;
}

int jr__hb_next(jr__hb_view *v, jr__hb_item *out)
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
