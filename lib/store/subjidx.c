#include "subjidx.h"

#include <string.h>

#include "util/alloc.h"
#include "util/checksum.h"

void jr__subjidx_init(jr__subjidx *x, const jr_allocator *a)
{
    memset(x, 0, sizeof *x);
    x->alloc = a;
    x->n = 1;
}

void jr__subjidx_free(jr__subjidx *x)
{
    for (uint32_t i = 1; i < x->n; i++) jr__free(x->alloc, x->v[i].name);
    jr__free(x->alloc, x->v);
    jr__free(x->alloc, x->freeids);
    jr__free(x->alloc, x->tab);
    jr__subjidx_init(x, x->alloc);
}

static uint32_t hash_of(const char *s, size_t len)
{
    uint32_t h = (uint32_t)jr__xxh3(s, len);
    return h ? h : 1;
}

static uint32_t lookup(const jr__subjidx *x, const char *s, size_t len, uint32_t h, uint32_t *slot)
{
    uint32_t mask = x->tcap - 1;
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t id = x->tab[i];
        if (!id) {
            *slot = i;
            return 0;
        }
        const jr__subj *e = &x->v[id];
        if (e->hash == h && e->len == len && memcmp(e->name, s, len) == 0) {
            *slot = i;
            return id;
        }
    }
}

uint32_t jr__subjidx_find(const jr__subjidx *x, const char *s, size_t len)
{
    if (!x->tcap) return 0;
    uint32_t slot;
    return lookup(x, s, len, hash_of(s, len), &slot);
}

static int grow_tab(jr__subjidx *x)
{
    uint32_t ncap = x->tcap ? x->tcap * 2 : 8; /* most streams have few subjects */
    uint32_t *t = jr__calloc(x->alloc, ncap, sizeof *t);
    if (!t) return JR_ENOMEM;
    for (uint32_t i = 0; i < x->tcap; i++) {
        uint32_t id = x->tab[i];
        if (!id) continue;
        uint32_t j = x->v[id].hash & (ncap - 1);
        while (t[j]) j = (j + 1) & (ncap - 1);
        t[j] = id;
    }
    jr__free(x->alloc, x->tab);
    x->tab = t;
    x->tcap = ncap;
    return 0;
}

int jr__subjidx_intern(jr__subjidx *x, const char *s, size_t len, uint32_t *out)
{
    if ((x->live + 1) * 2 > x->tcap && grow_tab(x)) return JR_ENOMEM;
    uint32_t h = hash_of(s, len), slot;
    uint32_t id = lookup(x, s, len, h, &slot);
    if (id) {
        *out = id;
        return 0;
    }
    if (x->nfree == 0 && x->n >= x->cap) {
        uint32_t ncap = x->cap ? x->cap * 2 : 4;
        jr__subj *v = jr__realloc(x->alloc, x->v, (size_t)ncap * sizeof *v);
        if (!v) return JR_ENOMEM;
        x->v = v;
        x->cap = ncap;
    }
    char *name = jr__malloc(x->alloc, len + 1);
    if (!name) return JR_ENOMEM;
    memcpy(name, s, len);
    name[len] = 0;
    id = x->nfree ? x->freeids[--x->nfree] : x->n++;
    jr__subj *e = &x->v[id];
    e->name = name;
    e->len = (uint32_t)len;
    e->hash = h;
    e->count = e->first = e->last = 0;
    x->tab[slot] = id;
    x->live++;
    *out = id;
    return 0;
}

void jr__subjidx_trim(jr__subjidx *x)
{
    if (!x->live) jr__subjidx_free(x);
}

void jr__subjidx_release(jr__subjidx *x, uint32_t id)
{
    jr__subj *e = &x->v[id];
    uint32_t slot, mask = x->tcap - 1;
    uint32_t found = lookup(x, e->name, e->len, e->hash, &slot);
    (void)found;
    /* backward-shift deletion */
    uint32_t i = slot;
    for (;;) {
        x->tab[i] = 0;
        uint32_t j = i;
        for (;;) {
            j = (j + 1) & mask;
            uint32_t jid = x->tab[j];
            if (!jid) goto done;
            uint32_t home = x->v[jid].hash & mask;
            /* can jid move to i? yes if home is not cyclically in (i, j] */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
                x->tab[i] = jid;
                i = j;
                break;
            }
        }
    }
done:
    jr__free(x->alloc, e->name);
    e->name = NULL;
    x->live--;
    if (x->nfree == x->freecap) {
        uint32_t ncap = x->freecap ? x->freecap * 2 : 16;
        uint32_t *f = jr__realloc(x->alloc, x->freeids, (size_t)ncap * sizeof *f);
        if (!f) return; /* the id simply stays unused */
        x->freeids = f;
        x->freecap = ncap;
    }
    x->freeids[x->nfree++] = id;
}
