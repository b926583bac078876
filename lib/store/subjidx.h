/*
 * subjidx — the per-subject index of a message store: for every subject with at least one live
 * message, its count, its first and last live sequence.
 *
 * Subjects are interned to small ids (1..) so that a sequence index entry carries 4 bytes instead
 * of a string. An id is valid while its subject has a live message; jr__subjidx_release() frees it
 * for reuse when the count drops to zero. Lookups hash the subject (xxh3) into an open-addressing
 * table (linear probing, backward-shift deletion, load <= 1/2); they never allocate.
 *
 * Invariants: tab holds exactly the ids in use; v[id].name is NUL-terminated and owned; ids in
 * the free list have name == NULL.
 */
#ifndef JR_STORE_SUBJIDX_H
#define JR_STORE_SUBJIDX_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

typedef struct jr__subj {
    char *name; /* NULL when the id is free */
    uint32_t len;
    uint32_t hash;
    uint64_t count; /* live messages */
    uint64_t first; /* lowest live seq */
    uint64_t last;  /* highest live seq */
} jr__subj;

typedef struct jr__subjidx {
    jr__subj *v; /* v[0] unused */
    uint32_t n;  /* ids handed out so far + 1 */
    uint32_t cap;
    uint32_t *freeids;
    uint32_t nfree;
    uint32_t freecap;
    uint32_t *tab; /* ids, 0 = empty */
    uint32_t tcap; /* power of two */
    uint32_t live; /* ids in use */
    const jr_allocator *alloc;
} jr__subjidx;

void jr__subjidx_init(jr__subjidx *x, const jr_allocator *a);
void jr__subjidx_free(jr__subjidx *x);
/* Id of the subject, or 0 if it has no live message. */
uint32_t jr__subjidx_find(const jr__subjidx *x, const char *s, size_t len);
/* Id of the subject, creating it (count 0) if absent. 0 or JR_ENOMEM. */
int jr__subjidx_intern(jr__subjidx *x, const char *s, size_t len, uint32_t *id);
/* Forgets subject id (its count must be 0). */
void jr__subjidx_release(jr__subjidx *x, uint32_t id);
/* Gives back all memory if no subject is in use (ids then start again at 1). */
void jr__subjidx_trim(jr__subjidx *x);
static inline jr__subj *jr__subjidx_get(const jr__subjidx *x, uint32_t id)
{
    return &x->v[id];
}

#endif
