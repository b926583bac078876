/*
 * heap — a 4-ary min-heap of timers, keyed by deadline.
 *
 * The node keeps one heap for every timer of every group, so the host arms one timer (the
 * earliest deadline) and a tick touches only what is due: O(log n) per insert/remove/update,
 * nothing per idle group. Entries are intrusive (jr__timer embedded in the owner); each knows its
 * slot, so removal and re-keying need no search. The array holds each deadline next to its
 * timer, and a node's four children share a cache line: sifting compares without touching the
 * owners (at 100,000 groups each owner is a cache miss), and a 4-ary tree is half as deep.
 *
 * Invariants: items[i].t->slot == i and items[i].deadline == items[i].t->deadline for every
 * entry; a timer not in the heap has slot == SIZE_MAX; items[parent].deadline <=
 * items[child].deadline; ties keep no particular order.
 */
#ifndef JR_UTIL_HEAP_H
#define JR_UTIL_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

typedef struct jr__timer {
    uint64_t deadline;
    size_t slot; /* SIZE_MAX when not armed */
    /* What the heap's owner runs when the timer is due (ctx is the owner's: the node). */
    void (*fire)(void *ctx, struct jr__timer *t);
} jr__timer;

typedef struct jr__heap_item {
    uint64_t deadline;
    jr__timer *t;
} jr__heap_item;

typedef struct jr__heap {
    jr__heap_item *items;
    size_t len;
    size_t cap;
    const jr_allocator *alloc;
} jr__heap;

void jr__heap_init(jr__heap *h, const jr_allocator *a);
void jr__heap_free(jr__heap *h);
static inline void jr__timer_init(jr__timer *t, void (*fire)(void *ctx, jr__timer *t))
{
    t->deadline = 0;
    t->slot = SIZE_MAX;
    t->fire = fire;
}
static inline int jr__timer_armed(const jr__timer *t)
{
    return t->slot != SIZE_MAX;
}
/* Arms t at deadline (re-keys it if already armed). 0 or JR_ENOMEM (t then stays unarmed). */
int jr__heap_arm(jr__heap *h, jr__timer *t, uint64_t deadline);
/* Disarms t; a no-op if not armed. */
void jr__heap_cancel(jr__heap *h, jr__timer *t);
/* The earliest timer, or NULL. */
static inline jr__timer *jr__heap_top(const jr__heap *h)
{
    return h->len ? h->items[0].t : NULL;
}
/* Removes and returns the earliest timer if its deadline <= now, else NULL. */
jr__timer *jr__heap_pop_due(jr__heap *h, uint64_t now);

#endif
