/*
 * map — an open-addressing hash map from non-zero uint64 keys to pointers.
 *
 * Used for group ids → groups and peer ids → peers. Linear probing with backward-shift deletion
 * (no tombstones), load factor at most 3/4, capacity a power of two. Key 0 marks an empty slot
 * and cannot be stored. Lookups never allocate; inserts allocate only when growing.
 */
#ifndef JR_UTIL_MAP_H
#define JR_UTIL_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

typedef struct jr__map_slot {
    uint64_t key;
    void *val;
} jr__map_slot;

typedef struct jr__map {
    jr__map_slot *slots;
    size_t cap; /* 0 or a power of two */
    size_t len;
    const jr_allocator *alloc;
} jr__map;

void jr__map_init(jr__map *m, const jr_allocator *a);
void jr__map_free(jr__map *m);
void *jr__map_get(const jr__map *m, uint64_t key);
/* Inserts or replaces. 0, JR_EINVAL (key 0) or JR_ENOMEM. */
int jr__map_put(jr__map *m, uint64_t key, void *val);
/* Removes key; returns its value or NULL. */
void *jr__map_del(jr__map *m, uint64_t key);
/* Iteration: for (size_t i = 0; i < m->cap; i++) if (m->slots[i].key) ... (no changes while
 * iterating). */

#endif
