/* subject_index — token tree from subject patterns to owners (see subject_index.h). */
#include "subject_index.h"

#include <stdbool.h>
#include <string.h>

#include "util/subject.h"
#include "util/alloc.h"
#include "util/checksum.h"

struct jr__sx_node {
    jr__sx_node *parent;
    jr__sx_node *child;       /* first child */
    jr__sx_node *prev, *next; /* siblings */
    void *owner;              /* owner of the pattern ending at this node */
    void *fwc;                /* owner of the pattern "<this node's path>.>" */
    uint64_t hash;            /* edge hash of (parent, token): the table key */
    uint32_t len;             /* token length */
    char tok[];               /* token bytes, not NUL-terminated */
};

#define TABLE_MIN 16

/* ---------------------------------------------------------------------------------------------
 * Tokens of a subject held as [pos, end): pos is the start of a token, or end once consumed.
 */
static size_t tok_len(const char *pos, const char *end)
{
    const char *dot = memchr(pos, '.', (size_t)(end - pos));
    return dot ? (size_t)(dot - pos) : (size_t)(end - pos);
}

static const char *tok_after(const char *pos, size_t len, const char *end)
{
    return pos + len == end ? end : pos + len + 1;
}

/* Start of the token just before pos (pos is a token start or end; s is the subject start). */
static const char *tok_before(const char *s, const char *pos, const char *end)
{
    const char *e = pos == end ? end : pos - 1; /* one past the previous token */
    const char *b = e;
    while (b > s && b[-1] != '.') b--;
    return b;
}

static bool is_star(const char *t, size_t n)
{
    return n == 1 && t[0] == '*';
}

static bool is_fwc(const char *t, size_t n)
{
    return n == 1 && t[0] == '>';
}

static bool node_is_star(const jr__sx_node *n)
{
    return is_star(n->tok, n->len);
}

/* ---------------------------------------------------------------------------------------------
 * The edge table: open addressing over node pointers, linear probing, backward-shift deletion.
 */
static uint64_t tok_hash(const char *t, size_t n)
{
    return jr__xxh3(t, n);
}

static uint64_t edge_hash(const jr__sx_node *parent, uint64_t th)
{
    uint64_t k = th ^ ((uint64_t)(uintptr_t)parent * 0x9e3779b97f4a7c15ULL);
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

static jr__sx_node *edge_get(const jr__subject_index *ix, const jr__sx_node *parent, const char *t,
                             size_t n, uint64_t th)
{
    if (!ix->cap) return NULL;
    uint64_t h = edge_hash(parent, th);
    size_t mask = ix->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        jr__sx_node *c = ix->slots[i];
        if (!c) return NULL;
        if (c->hash == h && c->parent == parent && c->len == n && memcmp(c->tok, t, n) == 0)
            return c;
    }
}

static jr__sx_node *star_child(const jr__subject_index *ix, const jr__sx_node *parent)
{
    return edge_get(ix, parent, "*", 1, ix->star_hash);
}

static void table_put(jr__sx_node **slots, size_t cap, jr__sx_node *node)
{
    size_t i = (size_t)node->hash & (cap - 1);
    while (slots[i]) i = (i + 1) & (cap - 1);
    slots[i] = node;
}

/* Moves the table to a new capacity; JR_ENOMEM leaves it as it was. */
static int table_resize(jr__subject_index *ix, size_t cap)
{
    jr__sx_node **s = jr__calloc(ix->alloc, cap, sizeof *s);
    if (!s) return JR_ENOMEM;
    for (size_t i = 0; i < ix->cap; i++)
        if (ix->slots[i]) table_put(s, cap, ix->slots[i]);
    jr__free(ix->alloc, ix->slots);
    ix->bytes = ix->bytes - ix->cap * sizeof *s + cap * sizeof *s;
    ix->slots = s;
    ix->cap = cap;
    return 0;
}

static void table_del(jr__subject_index *ix, const jr__sx_node *node)
{
    size_t mask = ix->cap - 1, i = (size_t)node->hash & mask;
    while (ix->slots[i] != node) i = (i + 1) & mask;
    size_t hole = i;
    for (size_t j = (i + 1) & mask; ix->slots[j]; j = (j + 1) & mask) {
        size_t home = (size_t)ix->slots[j]->hash & mask;
        /* move j into the hole unless its home lies cyclically in (hole, j] */
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            ix->slots[hole] = ix->slots[j];
            hole = j;
        }
    }
    ix->slots[hole] = NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Nodes
 */
static size_t node_size(size_t len)
{
    return offsetof(jr__sx_node, tok) + len;
}

static jr__sx_node *node_alloc(jr__subject_index *ix, const char *t, size_t n)
{
    jr__sx_node *node = jr__malloc(ix->alloc, node_size(n));
    if (!node) return NULL;
    memset(node, 0, offsetof(jr__sx_node, tok));
    memcpy(node->tok, t, n);
    node->len = (uint32_t)n;
    ix->bytes += node_size(n);
    return node;
}

/* Creates the child `t` of parent (which has none). NULL on JR_ENOMEM (nothing changed). */
static jr__sx_node *node_add(jr__subject_index *ix, jr__sx_node *parent, const char *t, size_t n,
                             uint64_t th)
{
    if ((ix->nnodes + 1) * 2 > ix->cap && table_resize(ix, ix->cap ? ix->cap * 2 : TABLE_MIN))
        return NULL;
    jr__sx_node *c = node_alloc(ix, t, n);
    if (!c) return NULL;
    c->parent = parent;
    c->hash = edge_hash(parent, th);
    c->next = parent->child;
    if (c->next) c->next->prev = c;
    parent->child = c;
    table_put(ix->slots, ix->cap, c);
    ix->nnodes++;
    return c;
}

static void node_del(jr__subject_index *ix, jr__sx_node *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        c->parent->child = c->next;
    if (c->next) c->next->prev = c->prev;
    table_del(ix, c);
    ix->nnodes--;
    ix->bytes -= node_size(c->len);
    jr__free(ix->alloc, c);
}

/* Frees n and its ancestors while they hold nothing; the root stays. May shrink the table
 * (best effort: a failed shrink changes nothing). */
static void prune(jr__subject_index *ix, jr__sx_node *n)
{
    while (n != ix->root && !n->owner && !n->fwc && !n->child) {
        jr__sx_node *p = n->parent;
        node_del(ix, n);
        n = p;
    }
    if (ix->cap > TABLE_MIN && ix->nnodes * 8 < ix->cap) (void)table_resize(ix, ix->cap / 2);
}

/* ---------------------------------------------------------------------------------------------
 * Searches
 */
static bool conflicts(const void *o, const void *me)
{
    return o && o != me;
}

/* A pattern of another owner anywhere strictly below n, or NULL. */
static void *subtree_conflict(const jr__sx_node *n, const void *me)
{
    const jr__sx_node *c = n->child;
    while (c) {
        if (conflicts(c->owner, me)) return c->owner;
        if (conflicts(c->fwc, me)) return c->fwc;
        if (c->child) {
            c = c->child;
            continue;
        }
        while (c != n && !c->next) c = c->parent;
        if (c == n) break;
        c = c->next;
    }
    return NULL;
}

/* The first child of n that can hold patterns overlapping pattern token t. */
static jr__sx_node *first_candidate(const jr__subject_index *ix, const jr__sx_node *n,
                                    const char *t, size_t tl)
{
    if (is_star(t, tl)) return n->child;
    jr__sx_node *c = edge_get(ix, n, t, tl, tok_hash(t, tl));
    return c ? c : star_child(ix, n);
}

/* The candidate after child c of p for pattern token t (see first_candidate). */
static jr__sx_node *next_candidate(const jr__subject_index *ix, const jr__sx_node *p,
                                   const jr__sx_node *c, const char *t, size_t tl)
{
    if (is_star(t, tl)) return c->next;
    if (node_is_star(c)) return NULL;
    return star_child(ix, p); /* c was the literal child t */
}

/* An owner other than `me` with a pattern overlapping `pattern`, or NULL. A depth-first walk of
 * the nodes whose paths can overlap pattern, using parent and sibling links instead of a stack:
 * node n is visited with pos at the pattern token its children must match. */
static void *find_conflict(const jr__subject_index *ix, const char *pattern, const void *me)
{
    const char *end = pattern + strlen(pattern);
    const jr__sx_node *n = ix->root;
    const char *pos = pattern;
    for (;;) {
        /* enter n */
        bool leave = true;
        if (pos == end) {
            if (conflicts(n->owner, me)) return n->owner;
        } else {
            if (conflicts(n->fwc, me)) return n->fwc; /* covers every remaining tail */
            size_t tl = tok_len(pos, end);
            if (is_fwc(pos, tl)) {
                void *o = subtree_conflict(n, me);
                if (o) return o;
            } else {
                const jr__sx_node *c = first_candidate(ix, n, pos, tl);
                if (c) {
                    n = c;
                    pos = tok_after(pos, tl, end);
                    leave = false;
                }
            }
        }
        if (!leave) continue;
        /* leave n: the next candidate sibling, else climb */
        for (;;) {
            if (n == ix->root) return NULL;
            const jr__sx_node *p = n->parent;
            const char *ppos = tok_before(pattern, pos, end);
            size_t tl = tok_len(ppos, end);
            const jr__sx_node *c = next_candidate(ix, p, n, ppos, tl);
            if (c) {
                n = c; /* a sibling consumes the same token: pos is unchanged */
                break;
            }
            n = p;
            pos = ppos;
        }
    }
}

void *jr__subject_index_lookup(const jr__subject_index *ix, const char *subject)
{
    if (!ix->root || !jr__subject_valid_literal(subject)) return NULL;
    const char *end = subject + strlen(subject);
    const jr__sx_node *n = ix->root;
    const char *pos = subject;
    for (;;) {
        bool leave = true;
        if (pos == end) {
            if (n->owner) return n->owner;
        } else {
            if (n->fwc) return n->fwc;
            size_t tl = tok_len(pos, end);
            const jr__sx_node *c = edge_get(ix, n, pos, tl, tok_hash(pos, tl));
            if (!c) c = star_child(ix, n);
            if (c) {
                n = c;
                pos = tok_after(pos, tl, end);
                leave = false;
            }
        }
        if (!leave) continue;
        /* backtrack: after a literal child comes its "*" sibling */
        for (;;) {
            if (n == ix->root) return NULL;
            const jr__sx_node *p = n->parent;
            if (!node_is_star(n)) {
                const jr__sx_node *s = star_child(ix, p);
                if (s) {
                    n = s;
                    break;
                }
            }
            pos = tok_before(subject, pos, end);
            n = p;
        }
    }
}

/* The node holding pattern (its prefix node for a trailing ">"), or NULL; *fwc says which. */
static jr__sx_node *find_exact(const jr__subject_index *ix, const char *pattern, bool *fwc)
{
    const char *end = pattern + strlen(pattern);
    jr__sx_node *n = ix->root;
    *fwc = false;
    for (const char *pos = pattern; n && pos != end;) {
        size_t tl = tok_len(pos, end);
        if (is_fwc(pos, tl)) {
            *fwc = true;
            break;
        }
        n = edge_get(ix, n, pos, tl, tok_hash(pos, tl));
        pos = tok_after(pos, tl, end);
    }
    return n;
}

void *jr__subject_index_exact(const jr__subject_index *ix, const char *pattern)
{
    if (!ix->root || !jr__subject_valid_pattern(pattern)) return NULL;
    bool fwc;
    const jr__sx_node *n = find_exact(ix, pattern, &fwc);
    return n ? (fwc ? n->fwc : n->owner) : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Changes
 */
void jr__subject_index_init(jr__subject_index *ix, const jr_allocator *a)
{
    memset(ix, 0, sizeof *ix);
    ix->alloc = a;
    ix->star_hash = tok_hash("*", 1);
}

void jr__subject_index_free(jr__subject_index *ix)
{
    for (size_t i = 0; i < ix->cap; i++) jr__free(ix->alloc, ix->slots[i]);
    jr__free(ix->alloc, ix->slots);
    jr__free(ix->alloc, ix->root);
    jr__subject_index_init(ix, ix->alloc);
}

int jr__subject_index_insert(jr__subject_index *ix, const char *pattern, void *owner,
                             void **conflict)
{
    if (!owner || !jr__subject_valid_pattern(pattern)) return JR_EINVAL;
    if (!ix->root && !(ix->root = node_alloc(ix, "", 0))) return JR_ENOMEM;
    void *other = find_conflict(ix, pattern, owner);
    if (other) {
        if (conflict) *conflict = other;
        return JR_EEXIST;
    }
    const char *end = pattern + strlen(pattern);
    jr__sx_node *n = ix->root;
    bool fwc = false;
    for (const char *pos = pattern; pos != end;) {
        size_t tl = tok_len(pos, end);
        if (is_fwc(pos, tl)) {
            fwc = true;
            break;
        }
        uint64_t th = tok_hash(pos, tl);
        jr__sx_node *c = edge_get(ix, n, pos, tl, th);
        if (!c && !(c = node_add(ix, n, pos, tl, th))) {
            prune(ix, n);
            return JR_ENOMEM;
        }
        n = c;
        pos = tok_after(pos, tl, end);
    }
    void **slot = fwc ? &n->fwc : &n->owner;
    if (*slot == owner) return 0;
    *slot = owner; /* was NULL: another owner here would have been a conflict */
    ix->npatterns++;
    return 0;
}

int jr__subject_index_remove(jr__subject_index *ix, const char *pattern, void *owner)
{
    if (!owner || !ix->root || !jr__subject_valid_pattern(pattern)) return JR_ENOTFOUND;
    bool fwc;
    jr__sx_node *n = find_exact(ix, pattern, &fwc);
    void **slot = n ? (fwc ? &n->fwc : &n->owner) : NULL;
    if (!slot || *slot != owner) return JR_ENOTFOUND;
    *slot = NULL;
    ix->npatterns--;
    prune(ix, n);
    return 0;
}

int jr__subject_index_insert_all(jr__subject_index *ix, const char *const *patterns, size_t n,
                                 void *owner, void **conflict)
{
    if (n == 0) return 0;
    if (!patterns || !owner) return JR_EINVAL;
    bool *added = jr__calloc(ix->alloc, n, sizeof *added);
    if (!added) return JR_ENOMEM;
    int rc = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        added[i] = jr__subject_index_exact(ix, patterns[i]) != owner;
        rc = jr__subject_index_insert(ix, patterns[i], owner, conflict);
        if (rc) break;
    }
    if (rc) {
        while (i-- > 0)
            if (added[i]) (void)jr__subject_index_remove(ix, patterns[i], owner);
    }
    jr__free(ix->alloc, added);
    return rc;
}

int jr__subject_index_replace(jr__subject_index *ix, const char *const *old, size_t nold,
                              const char *const *new_patterns, size_t nnew, void *owner,
                              void **conflict)
{
    if (!owner || (nold && !old)) return JR_EINVAL;
    /* Adding first keeps the old patterns in place on failure; the owner's own old patterns
     * never conflict with its new ones. */
    int rc = jr__subject_index_insert_all(ix, new_patterns, nnew, owner, conflict);
    if (rc) return rc;
    for (size_t i = 0; i < nold; i++) {
        bool kept = false;
        for (size_t j = 0; j < nnew && !kept; j++) kept = strcmp(old[i], new_patterns[j]) == 0;
        if (!kept) (void)jr__subject_index_remove(ix, old[i], owner);
    }
    return 0;
}

/* The first k whose pattern overlaps an earlier one, by the token tree: 0 (none), JR_EEXIST
 * (*i = k), JR_EINVAL (*i = k) or JR_ENOMEM. */
static int first_overlap_tree(const char *const *v, size_t n, const jr_allocator *a, size_t *i)
{
    jr__subject_index ix;
    jr__subject_index_init(&ix, a);
    int rc = 0;
    size_t k;
    for (k = 0; k < n && !rc; k++) {
        /* owner k + 1: every earlier pattern belongs to another owner, so any overlap conflicts */
        rc = jr__subject_index_exact(&ix, v[k])
                 ? JR_EEXIST
                 : jr__subject_index_insert(&ix, v[k], (void *)(uintptr_t)(k + 1), NULL);
    }
    if (rc) *i = k - 1;
    jr__subject_index_free(&ix);
    return rc;
}

int jr__subject_first_overlap(const char *const *v, size_t n, const jr_allocator *a, size_t *i,
                              size_t *j)
{
    size_t k = 0;
    int rc = first_overlap_tree(v, n, a, &k);
    if (rc == JR_ENOMEM) {
        /* the same answer without memory: pairwise */
        rc = 0;
        for (k = 0; k < n && !rc; k++) {
            if (!jr__subject_valid_pattern(v[k])) rc = JR_EINVAL;
            for (size_t m = 0; m < k && !rc; m++)
                if (jr__subject_overlap(v[k], v[m])) rc = JR_EEXIST;
        }
        if (rc) k--;
    }
    if (!rc) return 0;
    *i = k;
    if (rc == JR_EEXIST) {
        size_t m = 0;
        while (!jr__subject_overlap(v[k], v[m])) m++; /* the earliest it overlaps */
        *j = m;
    }
    return rc;
}
