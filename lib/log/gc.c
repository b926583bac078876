/*
 * gc — which segments hold entries still needed, and deleting those that do not.
 *
 * Each segment keeps a table group -> largest entry index written there (by the live
 * incarnation of the group) and not voided by a later TRUNCATE. A segment can go once it is
 * the oldest and not the current one, and every group in its table is compacted at or past
 * that index. Entries a durable TRUNCATE voided are never needed again, so they do not keep
 * a segment alive. Hard state, compaction
 * markers and record counts of every live group survive the deletion because the current
 * segment opens with a checkpoint written after everything in the older segments.
 */
#include <stdio.h>
#include <string.h>

#include "log/wal_int.h"
#include "util/alloc.h"

static size_t slot_of(const jr__segtab *t, uint64_t k)
{
    /* Fibonacci hashing spreads sequential group ids */
    return (size_t)((k * 0x9e3779b97f4a7c15ULL) >> 7) & (t->cap - 1);
}

static int grow(const jr_allocator *a, jr__segtab *t)
{
    size_t nc = t->cap ? t->cap * 2 : 8;
    uint64_t *k = jr__calloc(a, nc, sizeof *k), *v = jr__calloc(a, nc, sizeof *v);
    if (!k || !v) {
        jr__free(a, k);
        jr__free(a, v);
        return JR_ENOMEM;
    }
    jr__segtab nt = {k, v, nc, 0};
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->key[i]) continue;
        size_t s = slot_of(&nt, t->key[i]);
        while (nt.key[s]) s = (s + 1) & (nc - 1);
        nt.key[s] = t->key[i];
        nt.val[s] = t->val[i];
        nt.len++;
    }
    jr__free(a, t->key);
    jr__free(a, t->val);
    *t = nt;
    return 0;
}

int jr__segtab_max(const jr_allocator *a, jr__segtab *t, uint64_t group, uint64_t index)
{
    if ((t->len + 1) * 2 > t->cap && grow(a, t)) return JR_ENOMEM;
    size_t s = slot_of(t, group);
    while (t->key[s] && t->key[s] != group) s = (s + 1) & (t->cap - 1);
    if (!t->key[s]) {
        t->key[s] = group;
        t->val[s] = index;
        t->len++;
    } else if (index > t->val[s]) {
        t->val[s] = index;
    }
    return 0;
}

int jr__segtab_reserve(const jr_allocator *a, jr__segtab *t, size_t more)
{
    while ((t->len + more) * 2 > t->cap)
        if (grow(a, t)) return JR_ENOMEM;
    return 0;
}

int jr__segtab_has(const jr__segtab *t, uint64_t group)
{
    if (!t->cap) return 0;
    size_t s = slot_of(t, group);
    while (t->key[s] && t->key[s] != group) s = (s + 1) & (t->cap - 1);
    return t->key[s] != 0;
}

void jr__segtab_erase(jr__segtab *t, uint64_t group)
{
    if (!t->cap) return;
    size_t s = slot_of(t, group);
    while (t->key[s] && t->key[s] != group) s = (s + 1) & (t->cap - 1);
    if (!t->key[s]) return;
    /* backward-shift deletion keeps probe chains intact without tombstones */
    size_t hole = s;
    t->key[hole] = 0;
    t->len--;
    for (size_t j = (hole + 1) & (t->cap - 1); t->key[j]; j = (j + 1) & (t->cap - 1)) {
        size_t want = slot_of(t, t->key[j]);
        /* move j into the hole if its home slot is not in (hole, j] (cyclically) */
        int movable = hole <= j ? (want <= hole || want > j) : (want <= hole && want > j);
        if (movable) {
            t->key[hole] = t->key[j];
            t->val[hole] = t->val[j];
            t->key[j] = 0;
            hole = j;
        }
    }
}

/* Lowers group's value in t to at most max (erasing it when max is 0). */
static void segtab_clamp(jr__segtab *t, uint64_t group, uint64_t max)
{
    if (!t->cap) return;
    size_t s = slot_of(t, group);
    while (t->key[s] && t->key[s] != group) s = (s + 1) & (t->cap - 1);
    if (!t->key[s] || t->val[s] <= max) return;
    if (max == 0)
        jr__segtab_erase(t, group);
    else
        t->val[s] = max;
}

void jr__segtab_free(const jr_allocator *a, jr__segtab *t)
{
    jr__free(a, t->key);
    jr__free(a, t->val);
    memset(t, 0, sizeof *t);
}

int jr__wal_seg_push(jr__wal *w, uint64_t seq)
{
    if (w->nsegs == w->capsegs) {
        size_t nc = w->capsegs ? w->capsegs * 2 : 8;
        jr__walseg *s = jr__realloc(w->alloc, w->segs, nc * sizeof *s);
        if (!s) return JR_ENOMEM;
        w->segs = s;
        w->capsegs = nc;
    }
    memset(&w->segs[w->nsegs], 0, sizeof w->segs[w->nsegs]);
    w->segs[w->nsegs++].seq = seq;
    return 0;
}

void jr__wal_seg_forget(jr__wal *w, uint64_t group)
{
    for (size_t i = 0; i < w->nsegs; i++) jr__segtab_erase(&w->segs[i].tab, group);
}

void jr__wal_seg_clamp(jr__wal *w, size_t upto, uint64_t group, uint64_t max)
{
    for (size_t i = 0; i < upto && i < w->nsegs; i++) segtab_clamp(&w->segs[i].tab, group, max);
}

/* Does the group in slot i of s still need an entry of s? */
static int pins(const jr__wal *w, const jr__walseg *s, size_t i)
{
    if (!s->tab.key[i]) return 0;
    const jr__walgrp *g = jr__map_get(&w->groups, s->tab.key[i]);
    return g && !g->dropped && (!g->has_compact || g->cindex < s->tab.val[i]);
}

static int deletable(const jr__wal *w, const jr__walseg *s)
{
    for (size_t i = 0; i < s->tab.cap; i++)
        if (pins(w, s, i)) return 0;
    return 1;
}

int jr__wal_damaged(const jr__wal *w, uint64_t group)
{
    const jr__walgrp *g = jr__map_get(&w->groups, group);
    return g && g->damaged && !g->dropped;
}

size_t jr__wal_segments(const jr__wal *w)
{
    return w->nsegs;
}

size_t jr__wal_pins(const jr__wal *w, uint64_t *groups, size_t max)
{
    size_t n = 0;
    if (w->nsegs < 2) return 0;
    const jr__walseg *s = &w->segs[0];
    for (size_t i = 0; i < s->tab.cap; i++) {
        if (!pins(w, s, i)) continue;
        if (n < max) groups[n] = s->tab.key[i];
        n++;
    }
    return n;
}

void jr__wal_gc(jr__wal *w)
{
    size_t k = 0;
    char path[4096];
    w->gc_wanted = 0;
    while (k + 1 < w->nsegs && deletable(w, &w->segs[k])) {
        if (jr__seg_path(path, sizeof path, w->dir, w->segs[k].seq)) break;
        int rc = w->vfs->remove(w->vfs->ctx, path);
        if (rc && rc != JR_ENOTFOUND) {
            jr__wal_seterr(w, "wal: cannot delete %s: %s", path, jr_strerror(rc));
            w->gc_wanted = 1; /* try again after the next flush */
            break;
        }
        jr__segtab_free(w->alloc, &w->segs[k].tab);
        w->stats.segments_deleted++;
        k++;
    }
    if (k) {
        memmove(w->segs, w->segs + k, (w->nsegs - k) * sizeof *w->segs);
        w->nsegs -= k;
    }
}
