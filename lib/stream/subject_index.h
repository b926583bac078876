/*
 * subject_index — which stream captures a subject: a token tree from subject patterns to owners.
 *
 * Each pattern ("orders.*.eu", "tenants.42.>") is stored as a path of tokens from the root; a
 * "*" token is an ordinary child named "*", and a trailing ">" is recorded on the node of the
 * pattern's prefix (its `fwc` slot). Every (parent, token) edge of the whole tree lives in one
 * open-addressing hash table, so a node carries no table of its own: a pattern costs one small
 * node per token it does not share with another pattern (about 80 bytes + the token, plus a
 * table slot).
 *
 * Invariants:
 *  - Patterns of different owners never overlap (no literal subject matches both); insert
 *    refuses a pattern that would break this and names an owner it collides with. Patterns of
 *    the same owner may overlap (a stream's own subjects are checked by config validation).
 *  - Hence a literal subject matches the patterns of at most one owner, and lookup returns it.
 *  - Lookup walks the tree guided by the subject's tokens: at each token it follows at most the
 *    literal child and the "*" child and checks the ">" slot, each an O(1) hash probe. Its cost
 *    depends on the number of tokens (and how many "*" branches share a prefix), never on the
 *    number of streams. Lookup and the overlap search use no recursion and no allocation.
 *  - Nodes that hold no pattern and have no children are freed as soon as they become so.
 *
 * Not thread-safe; one owner (the node) uses it from one thread.
 */
#ifndef JR_STREAM_SUBJECT_INDEX_H
#define JR_STREAM_SUBJECT_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

typedef struct jr__sx_node jr__sx_node;

typedef struct jr__subject_index {
    const jr_allocator *alloc;
    jr__sx_node *root;   /* allocated on first insert */
    jr__sx_node **slots; /* edge table: every non-root node, keyed by (parent, token) */
    size_t cap;          /* 0 or a power of two */
    size_t nnodes;       /* non-root nodes in the table */
    size_t npatterns;    /* patterns stored */
    size_t bytes;        /* heap bytes held (nodes + table) */
    uint64_t star_hash;  /* token hash of "*" */
} jr__subject_index;

/* Initializes an empty index; never fails (memory is allocated on first insert). */
void jr__subject_index_init(jr__subject_index *ix, const jr_allocator *a);

/* Frees every node and the table; ix is empty (and reusable) afterwards. */
void jr__subject_index_free(jr__subject_index *ix);

/* Adds `pattern` for `owner` (non-NULL).
 * Returns 0 on success (also if owner already holds exactly this pattern: no change);
 * JR_EINVAL if pattern is not a valid pattern or owner is NULL;
 * JR_EEXIST if pattern overlaps a pattern of another owner: *conflict (if not NULL) gets that
 *   owner and nothing changes;
 * JR_ENOMEM, and nothing changes. */
int jr__subject_index_insert(jr__subject_index *ix, const char *pattern, void *owner,
                             void **conflict);

/* Adds all n patterns for owner, or none: on any failure (as for insert) every pattern this
 * call added is removed again. Patterns owner already held stay. */
int jr__subject_index_insert_all(jr__subject_index *ix, const char *const *patterns, size_t n,
                                 void *owner, void **conflict);

/* Removes `pattern` of `owner`. 0, or JR_ENOTFOUND if owner does not hold exactly that pattern
 * (nothing changes). Never allocates. */
int jr__subject_index_remove(jr__subject_index *ix, const char *pattern, void *owner);

/* Changes owner's patterns from old[] to new[] (a stream update), all or nothing: on failure
 * (JR_EINVAL, JR_EEXIST with *conflict, JR_ENOMEM) owner keeps exactly its old patterns.
 * Patterns in both lists are untouched. */
int jr__subject_index_replace(jr__subject_index *ix, const char *const *old, size_t nold,
                              const char *const *new_patterns, size_t nnew, void *owner,
                              void **conflict);

/* Whether any two of the n valid patterns v[] overlap (match a common literal subject; equal
 * patterns overlap), without comparing them pairwise: each pattern is checked against a token
 * tree of those before it, so the cost is near-linear in the total length for the subject lists
 * streams have (it grows only with the "*" branches a pattern's wildcards can reach).
 * 0: none overlap. JR_EEXIST: v[*i] is the first pattern that overlaps an earlier one, and
 * v[*j] is the earliest one it overlaps. JR_EINVAL: v[*i] is the first invalid pattern (none
 * before it overlap). The tree is temporary (allocated through a, freed before returning); if
 * memory runs out the patterns are compared pairwise instead, with the same answer, so the
 * result depends on the patterns alone (replicas validating the same config agree). */
int jr__subject_first_overlap(const char *const *v, size_t n, const jr_allocator *a, size_t *i,
                              size_t *j);

/* The owner whose pattern matches the literal subject, or NULL if none does or the subject is
 * not a valid literal subject. Never allocates. */
void *jr__subject_index_lookup(const jr__subject_index *ix, const char *subject);

/* The owner of exactly this pattern (not of an overlapping one), or NULL. */
void *jr__subject_index_exact(const jr__subject_index *ix, const char *pattern);

#endif
