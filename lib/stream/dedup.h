/*
 * dedup — a stream's duplicate window: which msg ids were stored recently, as which seq, and by
 * which request (the publish op's token, op.h; 0: none).
 *
 * Entries {msg_id, seq, ts, token} are kept in insertion order (a ring) and indexed by a hash table
 * (open addressing on the id's xxh3, linear probing, backward-shift deletion, load <= 1/2).
 * The stream state machine inserts with its clock, which never goes backwards, so the ring is
 * also in timestamp order and forgetting old entries only ever pops its front.
 *
 * Bounds: an entry lives while now - ts < window (jr__dedup_expire), and at most `max` entries
 * are kept — when full, inserting forgets the oldest. Both rules depend only on the entries'
 * timestamps and order, so every replica that inserts and expires the same way holds the same
 * window. Memory is O(entries + total id bytes).
 *
 * Insertion is two-phase so that a caller can make every allocation before it changes anything
 * else (the state machine prepares before appending to the store, and commits after, when
 * nothing may fail any more): jr__dedup_prepare() allocates, jr__dedup_commit() cannot fail,
 * jr__dedup_abort() undoes a prepare.
 *
 * Invariants: count <= max; table holds exactly the ring's entries; ids are 1..JR__OP_MSG_ID_MAX
 * bytes, unique within the window.
 */
#ifndef JR_STREAM_DEDUP_H
#define JR_STREAM_DEDUP_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

#define JR__DEDUP_DEFAULT_MAX ((size_t)1 << 22) /* 4 Mi ids */

typedef struct jr__dedup_entry {
    uint64_t hash;
    uint64_t seq;
    int64_t ts;
    uint64_t token; /* of the request that stored it (0: none) */
    uint32_t len;
    char id[]; /* len bytes, not NUL-terminated */
} jr__dedup_entry;

/* A table slot: the entry's hash inline, so that probing touches no entry (e NULL: empty). */
typedef struct jr__dedup_slot {
    uint64_t hash;
    jr__dedup_entry *e;
} jr__dedup_slot;

typedef struct jr__dedup {
    const jr_allocator *alloc;
    size_t max;
    jr__dedup_entry **ring; /* cap entries; oldest at head */
    size_t head, count, cap;
    jr__dedup_slot *table; /* tcap slots (power of two) */
    size_t tcap;
    uint64_t bytes; /* sum of id lengths */
} jr__dedup;

/* Initializes an empty window keeping at most max entries (0: JR__DEDUP_DEFAULT_MAX). */
void jr__dedup_init(jr__dedup *d, const jr_allocator *a, size_t max);
/* Frees every entry and the tables. The window is empty (and reusable) afterwards. */
void jr__dedup_free(jr__dedup *d);
/* Forgets every entry (keeps the tables). */
void jr__dedup_clear(jr__dedup *d);

static inline size_t jr__dedup_count(const jr__dedup *d)
{
    return d->count;
}

/* The entry for id, or NULL. */
const jr__dedup_entry *jr__dedup_find(const jr__dedup *d, const char *id, size_t len);

/* The i-th entry, oldest first (0 <= i < count). */
static inline const jr__dedup_entry *jr__dedup_at(const jr__dedup *d, size_t i)
{
    return d->ring[(d->head + i) & (d->cap - 1)];
}

/* Phase one of an insert: allocates an entry for id (1..JR__OP_MSG_ID_MAX bytes, not present)
 * and room for it in the ring and the table. 0 with *tok set, JR_EINVAL or JR_ENOMEM (nothing
 * changed). */
int jr__dedup_prepare(jr__dedup *d, const char *id, size_t len, jr__dedup_entry **tok);
/* Phase two: inserts the prepared entry e with seq, ts (>= every ts inserted before) and the
 * token of the request that stored it (0: none). If the window is full the oldest entry is
 * forgotten first. Never fails. */
void jr__dedup_commit(jr__dedup *d, jr__dedup_entry *e, uint64_t seq, int64_t ts, uint64_t token);
/* Drops a prepared entry that will not be committed. */
void jr__dedup_abort(jr__dedup *d, jr__dedup_entry *tok);

/* Forgets every entry with now - ts >= window (window 0: forgets nothing). */
void jr__dedup_expire(jr__dedup *d, int64_t now, uint64_t window);

/* Lowers (or raises) the most entries kept; forgets the oldest beyond it. */
void jr__dedup_set_max(jr__dedup *d, size_t max);

#endif
