/*
 * heap — a binary min-heap of timers, keyed by deadline.
 *
 * The node keeps one heap for every timer of every group, so the host arms one timer (the
 * earliest deadline) and a tick touches only what is due: O(log n) per insert/remove/update,
 * nothing per idle group. Entries are intrusive (jr__timer embedded in the owner); each knows its
 * slot, so removal and re-keying need no search.
 *
 * Invariants: heap[i]->slot == i for every entry; a timer not in the heap has slot == SIZE_MAX;
 * deadline(heap[parent]) <= deadline(heap[child]); ties keep no particular order.
 */
#ifndef JR_UTIL_HEAP_H
#define JR_UTIL_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

typedef struct jr__timer {
    uint64_t deadline;
    size_t slot; /* SIZE_MAX when not armed */
} jr__timer;

typedef struct jr__heap {
    jr__timer **items;
    size_t len;
    size_t cap;
    const jr_allocator *alloc;
} jr__heap;

void jr__heap_init(jr__heap *h, const jr_allocator *a);
void jr__heap_free(jr__heap *h);
static inline void jr__timer_init(jr__timer *t)
{
    t->deadline = 0;
    t->slot = SIZE_MAX;
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
    return h->len ? h->items[0] : NULL;
}
/* Removes and returns the earliest timer if its deadline <= now, else NULL. */
jr__timer *jr__heap_pop_due(jr__heap *h, uint64_t now);

#endif
