/*
 * seqidx — the sequence index of a message store: one entry per live message, keyed by seq.
 *
 * Sparse: deleted messages have no entry, so its memory follows the live messages, not the span
 * of sequences between the oldest and the newest (a key-value shaped stream, where one key is
 * updated millions of times and another never, holds two entries). Entries sit in seq order in
 * leaves of at most JR__SEQIDX_LEAF entries; a directory (a growable array) holds the leaves in
 * seq order. A lookup is a binary search over the directory and one in a leaf: O(log n).
 * Appends go to the last leaf. A removal shifts at most half a leaf (a leaf keeps a head offset,
 * so removing its first entry, as discard-old limits do, shifts nothing); a leaf left empty is
 * freed, one left sparse is merged into a neighbour, and a leaf's capacity halves when it is a
 * quarter full, so every leaf but the two ends of a sparse pair is at least a quarter full of
 * its capacity.
 *
 * Entry pointers and cursors are valid until the next push or remove.
 *
 * Invariants: seqs strictly increase over the directory's leaves in order; no leaf is empty;
 * dir[i].first is leaf i's first seq; count is the number of entries.
 */
#ifndef JR_STORE_SEQIDX_H
#define JR_STORE_SEQIDX_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

#define JR__SEQIDX_LEAF 128 /* entries per full leaf (6 KiB) */

typedef struct jr__ent {
    uint64_t seq;
    int64_t ts;
    uint64_t prev; /* previous live seq of the same subject, 0: none */
    uint64_t next; /* next live seq of the same subject, 0: none */
    uint32_t blk;  /* block id */
    uint32_t off;  /* offset of the record in the block's plaintext */
    uint32_t len;  /* record length */
    uint32_t subj; /* subject id */
} jr__ent;

typedef struct jr__seqleaf jr__seqleaf;

typedef struct jr__seqdir {
    uint64_t first; /* the leaf's first seq */
    jr__seqleaf *leaf;
} jr__seqdir;

typedef struct jr__seqidx {
    const jr_allocator *alloc;
    jr__seqdir *dir; /* dir[dhead .. dhead + nleaves) */
    size_t dhead, nleaves, dcap;
    uint64_t count; /* entries */
} jr__seqidx;

/* A position: leaf li (0 = the first leaf) and entry i in it. */
typedef struct jr__seqcur {
    size_t li;
    uint32_t i;
} jr__seqcur;

void jr__seqidx_init(jr__seqidx *x, const jr_allocator *a);
void jr__seqidx_free(jr__seqidx *x);

/* Appends e, whose seq must exceed every seq held. 0 or JR_ENOMEM (nothing changed). */
int jr__seqidx_push(jr__seqidx *x, const jr__ent *e);

/* The entry of seq, or NULL. */
jr__ent *jr__seqidx_find(const jr__seqidx *x, uint64_t seq);

/* The entry of seq and a cursor at it, or NULL. */
jr__ent *jr__seqidx_find_cur(const jr__seqidx *x, uint64_t seq, jr__seqcur *c);

/* Removes the entry of seq (which must be held), or the one at cursor c. Never fails: merging
 * and shrinking are best effort (a failed allocation leaves a leaf as it is). */
void jr__seqidx_remove(jr__seqidx *x, uint64_t seq);
void jr__seqidx_remove_at(jr__seqidx *x, const jr__seqcur *c);

/* The first and the last entry, or NULL when empty. */
jr__ent *jr__seqidx_first(const jr__seqidx *x);
jr__ent *jr__seqidx_last(const jr__seqidx *x);

/* Cursor at the first entry with seq >= seq (1), or at the last entry with seq <= seq (2).
 * NULL if there is none, else the entry. */
jr__ent *jr__seqidx_ceil(const jr__seqidx *x, uint64_t seq, jr__seqcur *c);
jr__ent *jr__seqidx_floor(const jr__seqidx *x, uint64_t seq, jr__seqcur *c);
/* Moves the cursor to the next (previous) entry: NULL at the end. */
jr__ent *jr__seqidx_next(const jr__seqidx *x, jr__seqcur *c);
jr__ent *jr__seqidx_prev(const jr__seqidx *x, jr__seqcur *c);

/* Gives back directory and leaf capacity beyond twice what is held (best effort). */
void jr__seqidx_shrink(jr__seqidx *x);

/* Heap bytes the index holds (for tests and benchmarks). */
size_t jr__seqidx_bytes(const jr__seqidx *x);

#endif
