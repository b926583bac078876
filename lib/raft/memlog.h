/*
 * memlog — one group's in-memory Raft log: entries from a base point (the snapshot, or where the
 * log was last compacted) to the last index.
 *
 * Storage is two rings that grow by doubling and are otherwise reused, so a log that is
 * compacted regularly allocates nothing in the steady state:
 *  - an entry ring of {term, pos, len, type}, slot = index & (ecap - 1);
 *  - a payload byte ring addressed by absolute, ever-increasing byte positions; slot = pos &
 *    (bcap - 1). A payload never wraps around the physical end (the writer skips to the next
 *    lap instead), so every entry's data is one contiguous borrowed pointer.
 *
 * Invariants:
 *  - first <= last + 1 (empty when first == last + 1); base_index == first - 1;
 *  - last - first + 1 <= ecap; tail - head <= bcap;
 *  - pos of consecutive entries is non-decreasing; head == pos(first) (or tail when empty);
 *  - term_at() is non-decreasing in the index.
 * Data pointers handed out stay valid until the next append, truncate or compact.
 */
#ifndef JR_RAFT_MEMLOG_H
#define JR_RAFT_MEMLOG_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

typedef struct jr__memlog_ent {
    uint64_t term;
    uint64_t pos; /* absolute byte position of the payload */
    uint32_t len;
    uint8_t type;
} jr__memlog_ent;

typedef struct jr__memlog {
    const jr_allocator *alloc;
    jr__memlog_ent *ents;
    uint64_t ecap; /* 0 or a power of two */
    uint8_t *bytes;
    uint64_t bcap; /* 0 or a power of two */
    uint64_t first, last;
    uint64_t base_index, base_term; /* the entry just before first (0/0 at the very start) */
    uint64_t head, tail;            /* live payload bytes are [head, tail) */
    uint64_t moved;                 /* payload bytes copied to re-lay or grow the ring, ever */
} jr__memlog;

void jr__memlog_init(jr__memlog *l, const jr_allocator *a);
void jr__memlog_free(jr__memlog *l);

/* Appends the entry at index last+1. Copies data. 0 or JR_ENOMEM (log unchanged). */
int jr__memlog_append(jr__memlog *l, uint64_t term, uint8_t type, const void *data, uint32_t len);

/* Term of the entry at index: base_term at base_index, 0 if not held (or index 0). */
static inline uint64_t jr__memlog_term(const jr__memlog *l, uint64_t index)
{
    if (index >= l->first && index <= l->last) return l->ents[index & (l->ecap - 1)].term;
    if (index == l->base_index) return l->base_term;
    return 0;
}
/* The held entry at index (first <= index <= last required). */
static inline const jr__memlog_ent *jr__memlog_at(const jr__memlog *l, uint64_t index)
{
    return &l->ents[index & (l->ecap - 1)];
}
static inline const uint8_t *jr__memlog_data(const jr__memlog *l, const jr__memlog_ent *e)
{
    return e->len ? l->bytes + (e->pos & (l->bcap - 1)) : (const uint8_t *)"";
}
/* Payload bytes (padding included) held by entries lo..hi, clamped to what is held. */
uint64_t jr__memlog_bytes(const jr__memlog *l, uint64_t lo, uint64_t hi);

/* Removes entries index..last (index > base_index). */
void jr__memlog_truncate(jr__memlog *l, uint64_t index);
/* Removes entries first..index (index <= last); the base becomes index. */
void jr__memlog_compact(jr__memlog *l, uint64_t index);
/* Drops everything; the log restarts after (index, term). */
void jr__memlog_reset(jr__memlog *l, uint64_t index, uint64_t term);
/* Releases ring memory an idle group does not need: each ring is re-allocated at the smallest
 * size that holds what is live (nothing if the log or its payloads are empty) when that at
 * least halves it. O(entries held): for idle groups only. A failed allocation leaves that ring
 * as it was. Data pointers handed out before are invalidated. */
void jr__memlog_shrink(jr__memlog *l);
/* Largest held index i in [lo, hi] with term_at(i) <= term (terms are sorted), or lo - 1. */
uint64_t jr__memlog_last_le(const jr__memlog *l, uint64_t lo, uint64_t hi, uint64_t term);

#endif
