/* seqidx — the sparse sequence index of a message store (see seqidx.h). */
#include "seqidx.h"

#include <string.h>

#include "util/alloc.h"
#include "util/invariant.h"

struct jr__seqleaf {
    uint32_t head, n, cap; /* entries v[head .. head + n) of cap */
    uint32_t unused;
    jr__ent v[];
};

#define LEAF_MIN 4 /* capacity of a store's first leaf: most streams are small */

static size_t leaf_size(uint32_t cap)
{
    return sizeof(jr__seqleaf) + (size_t)cap * sizeof(jr__ent);
}

static jr__seqleaf *leaf_at(const jr__seqidx *x, size_t li)
{
    return x->dir[x->dhead + li].leaf;
}

static uint64_t leaf_first_seq(const jr__seqleaf *l)
{
    return l->v[l->head].seq;
}

#if JR__INVARIANTS_ON
/* The header's invariants around leaf li (after a change there): it is not empty, fits its
 * capacity, its seqs strictly increase and lie between its neighbours', and its directory
 * entry names its first seq; a small index is checked whole, with its count. */
static void check_leaf(const jr__seqidx *x, size_t li)
{
    const jr__seqleaf *l = leaf_at(x, li);
    JR__INVARIANT(l->n > 0 && l->head + l->n <= l->cap);
    JR__INVARIANT(x->dir[x->dhead + li].first == leaf_first_seq(l));
    for (uint32_t i = 1; i < l->n; i++)
        JR__INVARIANT(l->v[l->head + i - 1].seq < l->v[l->head + i].seq);
    if (li > 0) {
        const jr__seqleaf *p = leaf_at(x, li - 1);
        JR__INVARIANT(p->n > 0 && p->v[p->head + p->n - 1].seq < leaf_first_seq(l));
    }
    if (li + 1 < x->nleaves) {
        const jr__seqleaf *q = leaf_at(x, li + 1);
        JR__INVARIANT(q->n > 0 && l->v[l->head + l->n - 1].seq < leaf_first_seq(q));
    }
}

static void check(const jr__seqidx *x, size_t li)
{
    if (x->nleaves <= 4) {
        uint64_t count = 0;
        for (size_t k = 0; k < x->nleaves; k++) {
            check_leaf(x, k);
            count += leaf_at(x, k)->n;
        }
        JR__INVARIANT(count == x->count);
    } else if (li < x->nleaves) {
        check_leaf(x, li);
    }
}
#define CHECK(x, li) check(x, li)
#else
#define CHECK(x, li) ((void)0)
#endif

void jr__seqidx_init(jr__seqidx *x, const jr_allocator *a)
{
    memset(x, 0, sizeof *x);
    x->alloc = a;
}

void jr__seqidx_free(jr__seqidx *x)
{
    for (size_t li = 0; li < x->nleaves; li++) jr__free(x->alloc, leaf_at(x, li));
    jr__free(x->alloc, x->dir);
    jr__seqidx_init(x, x->alloc);
}

/* The last leaf whose first seq is <= seq, or SIZE_MAX if there is none. Seqs are spread
 * evenly in the common case (a stream appends consecutive seqs), so the search starts at the
 * interpolated leaf and steps a little before falling back to bisection. */
static size_t find_leaf(const jr__seqidx *x, uint64_t seq)
{
    const jr__seqdir *d = x->dir + x->dhead;
    size_t n = x->nleaves;
    if (!n || seq < d[0].first) return SIZE_MAX;
    uint64_t lo_seq = d[0].first, hi_seq = d[n - 1].first;
    if (seq >= hi_seq) return n - 1;
    /* d[0].first <= seq < d[n-1].first: the answer is in [0, n-2] */
    size_t g = (size_t)((double)(seq - lo_seq) / (double)(hi_seq - lo_seq) * (double)(n - 1));
    if (g > n - 2) g = n - 2;
    for (int step = 0; step < 4; step++) {
        if (d[g].first > seq)
            g--;
        else if (d[g + 1].first <= seq)
            g++;
        else
            return g;
    }
    size_t lo = 1, hi = n - 1; /* the first leaf starting after seq lies in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d[mid].first <= seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

/* Index in l of the first entry with seq >= seq (l->n if none): direct in a leaf without holes
 * (the common case), bisection otherwise. */
static uint32_t lower_bound(const jr__seqleaf *l, uint64_t seq)
{
    const jr__ent *v = l->v + l->head;
    uint64_t first = v[0].seq;
    if (seq <= first) return 0;
    if (v[l->n - 1].seq - first == l->n - 1)
        return seq - first < l->n ? (uint32_t)(seq - first) : l->n;
    uint32_t lo = 0, hi = l->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Keeps the directory's copy of leaf li's first seq right. */
static void dir_refresh(jr__seqidx *x, size_t li)
{
    jr__seqdir *d = &x->dir[x->dhead + li];
    d->first = leaf_first_seq(d->leaf);
}

/* Moves l's entries to the start of its array. */
static void compact(jr__seqleaf *l)
{
    if (!l->head) return;
    memmove(l->v, l->v + l->head, (size_t)l->n * sizeof *l->v);
    l->head = 0;
}

/* Reallocates leaf li to capacity cap (>= n). 0 or JR_ENOMEM (the leaf unchanged). */
static int leaf_resize(jr__seqidx *x, size_t li, uint32_t cap)
{
    jr__seqleaf *l = leaf_at(x, li);
    compact(l);
    jr__seqleaf *m = jr__realloc(x->alloc, l, leaf_size(cap));
    if (!m) return JR_ENOMEM;
    m->cap = cap;
    x->dir[x->dhead + li].leaf = m;
    return 0;
}

static void dir_remove(jr__seqidx *x, size_t li)
{
    if (li == 0) {
        x->dhead++;
    } else if (li + 1 < x->nleaves) {
        jr__seqdir *d = x->dir + x->dhead;
        memmove(d + li, d + li + 1, (x->nleaves - li - 1) * sizeof *d);
    }
    if (--x->nleaves == 0) x->dhead = 0;
}

/* Adds an empty leaf of capacity cap at the end of the directory. */
static jr__seqleaf *leaf_append(jr__seqidx *x, uint32_t cap)
{
    if (x->dhead + x->nleaves == x->dcap) {
        if (x->dhead && x->dhead >= x->dcap / 2) {
            memmove(x->dir, x->dir + x->dhead, x->nleaves * sizeof *x->dir);
            x->dhead = 0;
        } else {
            size_t ncap = x->dcap ? x->dcap * 2 : 4;
            jr__seqdir *d = jr__realloc(x->alloc, x->dir, ncap * sizeof *d);
            if (!d) return NULL;
            x->dir = d;
            x->dcap = ncap;
        }
    }
    jr__seqleaf *l = jr__malloc(x->alloc, leaf_size(cap));
    if (!l) return NULL;
    l->head = l->n = 0;
    l->cap = cap;
    l->unused = 0;
    x->dir[x->dhead + x->nleaves++].leaf = l;
    return l;
}

int jr__seqidx_push(jr__seqidx *x, const jr__ent *e)
{
    jr__seqleaf *l = x->nleaves ? leaf_at(x, x->nleaves - 1) : NULL;
    JR__INVARIANT(!l || l->v[l->head + l->n - 1].seq < e->seq);
    if (l && l->head + l->n == l->cap) {
        if (l->n == JR__SEQIDX_LEAF) {
            l = NULL; /* full: a new leaf */
        } else if (l->n * 2 <= l->cap) {
            compact(l);
        } else {
            uint32_t cap = l->cap * 2 < JR__SEQIDX_LEAF ? l->cap * 2 : JR__SEQIDX_LEAF;
            if (leaf_resize(x, x->nleaves - 1, cap)) return JR_ENOMEM;
            l = leaf_at(x, x->nleaves - 1);
        }
    }
    /* after a full leaf the store is growing: the next one is allocated whole */
    if (!l && !(l = leaf_append(x, x->nleaves ? JR__SEQIDX_LEAF : LEAF_MIN))) return JR_ENOMEM;
    l->v[l->head + l->n++] = *e;
    if (l->n == 1) dir_refresh(x, x->nleaves - 1);
    x->count++;
    CHECK(x, x->nleaves - 1);
    return 0;
}

jr__ent *jr__seqidx_find(const jr__seqidx *x, uint64_t seq)
{
    size_t li = find_leaf(x, seq);
    if (li == SIZE_MAX) return NULL;
    jr__seqleaf *l = leaf_at(x, li);
    uint32_t i = lower_bound(l, seq);
    return i < l->n && l->v[l->head + i].seq == seq ? &l->v[l->head + i] : NULL;
}

/* Moves the entries of leaf li + 1 to the end of leaf li and frees it. 0 or JR_ENOMEM (nothing
 * changed). */
static int merge_next(jr__seqidx *x, size_t li)
{
    jr__seqleaf *a = leaf_at(x, li), *b = leaf_at(x, li + 1);
    uint32_t need = a->n + b->n;
    if (a->head + need > a->cap) {
        if (need <= a->cap) {
            compact(a);
        } else {
            uint32_t cap = a->cap;
            while (cap < need) cap *= 2;
            if (leaf_resize(x, li, cap)) return JR_ENOMEM;
            a = leaf_at(x, li);
        }
    }
    memcpy(a->v + a->head + a->n, b->v + b->head, (size_t)b->n * sizeof *b->v);
    a->n = need;
    jr__free(x->alloc, b);
    dir_remove(x, li + 1);
    return 0;
}

jr__ent *jr__seqidx_find_cur(const jr__seqidx *x, uint64_t seq, jr__seqcur *c)
{
    size_t li = find_leaf(x, seq);
    if (li == SIZE_MAX) return NULL;
    jr__seqleaf *l = leaf_at(x, li);
    uint32_t i = lower_bound(l, seq);
    if (i == l->n || l->v[l->head + i].seq != seq) return NULL;
    c->li = li;
    c->i = i;
    return &l->v[l->head + i];
}

void jr__seqidx_remove(jr__seqidx *x, uint64_t seq)
{
    jr__seqcur c;
    jr__ent *e = jr__seqidx_find_cur(x, seq, &c);
    JR__INVARIANT(e != NULL); /* the caller removes only what it holds */
    if (e) jr__seqidx_remove_at(x, &c);
}

void jr__seqidx_remove_at(jr__seqidx *x, const jr__seqcur *c)
{
    size_t li = c->li;
    uint32_t i = c->i;
    jr__seqleaf *l = leaf_at(x, li);
    /* shift the shorter side */
    if (i < l->n / 2) {
        memmove(l->v + l->head + 1, l->v + l->head, (size_t)i * sizeof *l->v);
        l->head++;
    } else {
        memmove(l->v + l->head + i, l->v + l->head + i + 1, (size_t)(l->n - i - 1) * sizeof *l->v);
    }
    l->n--;
    x->count--;
    if (l->n == 0) {
        jr__free(x->alloc, l);
        dir_remove(x, li);
        CHECK(x, li < x->nleaves ? li : li - 1);
        return;
    }
    if (i == 0) dir_refresh(x, li);
    if (l->n < JR__SEQIDX_LEAF / 4) {
        /* sparse: into a neighbour with room (the pair then holds at most 3/4 of a leaf) */
        const uint32_t room = JR__SEQIDX_LEAF * 3 / 4;
        if (li > 0 && leaf_at(x, li - 1)->n + l->n <= room) {
            if (!merge_next(x, li - 1)) {
                CHECK(x, li - 1);
                return;
            }
        } else if (li + 1 < x->nleaves && leaf_at(x, li + 1)->n + l->n <= room) {
            if (!merge_next(x, li)) {
                CHECK(x, li);
                return;
            }
        }
    }
    if (l->cap > LEAF_MIN && l->n * 4 <= l->cap) (void)leaf_resize(x, li, l->cap / 2);
    CHECK(x, li);
}

jr__ent *jr__seqidx_first(const jr__seqidx *x)
{
    if (!x->nleaves) return NULL;
    jr__seqleaf *l = leaf_at(x, 0);
    return &l->v[l->head];
}

jr__ent *jr__seqidx_last(const jr__seqidx *x)
{
    if (!x->nleaves) return NULL;
    jr__seqleaf *l = leaf_at(x, x->nleaves - 1);
    return &l->v[l->head + l->n - 1];
}

static jr__ent *cur_ent(const jr__seqidx *x, const jr__seqcur *c)
{
    jr__seqleaf *l = leaf_at(x, c->li);
    return &l->v[l->head + c->i];
}

jr__ent *jr__seqidx_ceil(const jr__seqidx *x, uint64_t seq, jr__seqcur *c)
{
    if (!x->nleaves) return NULL;
    size_t li = find_leaf(x, seq);
    if (li == SIZE_MAX) {
        c->li = 0;
        c->i = 0;
        return cur_ent(x, c);
    }
    uint32_t i = lower_bound(leaf_at(x, li), seq);
    if (i == leaf_at(x, li)->n) {
        if (li + 1 == x->nleaves) return NULL;
        li++;
        i = 0;
    }
    c->li = li;
    c->i = i;
    return cur_ent(x, c);
}

jr__ent *jr__seqidx_floor(const jr__seqidx *x, uint64_t seq, jr__seqcur *c)
{
    size_t li = find_leaf(x, seq);
    if (li == SIZE_MAX) return NULL;
    jr__seqleaf *l = leaf_at(x, li);
    uint32_t i = lower_bound(l, seq);
    if (i == l->n || l->v[l->head + i].seq != seq) i--; /* the first is <= seq: i >= 1 here */
    c->li = li;
    c->i = i;
    return cur_ent(x, c);
}

jr__ent *jr__seqidx_next(const jr__seqidx *x, jr__seqcur *c)
{
    if (++c->i == leaf_at(x, c->li)->n) {
        if (c->li + 1 == x->nleaves) return NULL;
        c->li++;
        c->i = 0;
    }
    return cur_ent(x, c);
}

jr__ent *jr__seqidx_prev(const jr__seqidx *x, jr__seqcur *c)
{
    if (c->i == 0) {
        if (c->li == 0) return NULL;
        c->li--;
        c->i = leaf_at(x, c->li)->n;
    }
    c->i--;
    return cur_ent(x, c);
}

void jr__seqidx_shrink(jr__seqidx *x)
{
    if (!x->nleaves) {
        jr__free(x->alloc, x->dir);
        x->dir = NULL;
        x->dhead = x->dcap = 0;
        return;
    }
    for (size_t li = 0; li < x->nleaves; li++) {
        jr__seqleaf *l = leaf_at(x, li);
        uint32_t want = LEAF_MIN;
        while (want < l->n) want *= 2;
        if (l->cap > 2 * want) (void)leaf_resize(x, li, want);
    }
    size_t want = 4;
    while (want < x->nleaves) want *= 2;
    if (x->dcap > 2 * want) {
        memmove(x->dir, x->dir + x->dhead, x->nleaves * sizeof *x->dir);
        x->dhead = 0;
        jr__seqdir *d = jr__realloc(x->alloc, x->dir, want * sizeof *d);
        if (d) {
            x->dir = d;
            x->dcap = want;
        }
    }
}

size_t jr__seqidx_bytes(const jr__seqidx *x)
{
    size_t b = x->dcap * sizeof *x->dir;
    for (size_t li = 0; li < x->nleaves; li++) b += leaf_size(leaf_at(x, li)->cap);
    return b;
}
