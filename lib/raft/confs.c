/*
 * confs — interned configurations (raft.h): the groups of a node mostly share a handful of
 * memberships (every stream replica on the same three servers has the same one), so a group
 * holds a counted reference to one shared, immutable jr__conf instead of its own copy — a
 * jr__conf has room for JR__MAX_MEMBERS and is most of an idle replica's core otherwise.
 *
 * A chained hash table of entries {refs, hash, conf}; an entry is freed when its last
 * reference goes. The table only grows (doubling when it holds as many entries as buckets).
 */
#include <stddef.h>
#include <string.h>

#include "raft.h"
#include "util/alloc.h"
#include "util/checksum.h"

typedef struct centry {
    struct centry *next;
    uint64_t hash;
    uint64_t refs;
    jr__conf c;
} centry;

struct jr__confs {
    const jr_allocator *alloc;
    centry **b;
    size_t nb, n;
};

static centry *entry_of(const jr__conf *c)
{
    return (centry *)(void *)((char *)(uintptr_t)c - offsetof(centry, c));
}

static uint64_t hash_conf(const jr__conf *c)
{
    uint8_t buf[16 + JR__MAX_MEMBERS * 9]; /* the canonical bytes: no struct padding */
    return jr__xxh3(buf, jr__conf_encode(c, buf));
}

static int same(const jr__conf *a, const jr__conf *b)
{
    if (a->n != b->n) return 0;
    for (uint32_t i = 0; i < a->n; i++)
        if (a->m[i].id != b->m[i].id || a->m[i].voter != b->m[i].voter) return 0;
    return 1;
}

int jr__confs_new(const jr_allocator *a, jr__confs **out)
{
    jr__confs *p = jr__calloc(a, 1, sizeof *p);
    if (!p) return JR_ENOMEM;
    p->alloc = a;
    p->nb = 16;
    p->b = jr__calloc(a, p->nb, sizeof *p->b);
    if (!p->b) {
        jr__free(a, p);
        return JR_ENOMEM;
    }
    *out = p;
    return 0;
}

void jr__confs_free(jr__confs *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->nb; i++) {
        while (p->b[i]) {
            centry *e = p->b[i];
            p->b[i] = e->next;
            jr__free(p->alloc, e);
        }
    }
    jr__free(p->alloc, p->b);
    jr__free(p->alloc, p);
}

static void grow(jr__confs *p)
{
    size_t nb = p->nb * 2;
    centry **b = jr__calloc(p->alloc, nb, sizeof *b);
    if (!b) return; /* longer chains, still correct */
    for (size_t i = 0; i < p->nb; i++) {
        while (p->b[i]) {
            centry *e = p->b[i];
            p->b[i] = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    }
    jr__free(p->alloc, p->b);
    p->b = b;
    p->nb = nb;
}

const jr__conf *jr__confs_get(jr__confs *p, const jr__conf *c)
{
    uint64_t h = hash_conf(c);
    for (centry *e = p->b[h & (p->nb - 1)]; e; e = e->next) {
        if (e->hash == h && same(&e->c, c)) {
            e->refs++;
            return &e->c;
        }
    }
    /* only the members in use are copied: the rest of m[] is never read */
    centry *e = jr__malloc(p->alloc, sizeof *e);
    if (!e) return NULL;
    e->hash = h;
    e->refs = 1;
    e->c.n = c->n;
    memcpy(e->c.m, c->m, c->n * sizeof c->m[0]);
    if (p->n >= p->nb) grow(p);
    e->next = p->b[h & (p->nb - 1)];
    p->b[h & (p->nb - 1)] = e;
    p->n++;
    return &e->c;
}

const jr__conf *jr__confs_ref(const jr__conf *c)
{
    if (c) entry_of(c)->refs++;
    return c;
}

void jr__confs_put(jr__confs *p, const jr__conf *c)
{
    if (!c) return;
    centry *e = entry_of(c);
    if (--e->refs) return;
    centry **pp = &p->b[e->hash & (p->nb - 1)];
    while (*pp != e) pp = &(*pp)->next;
    *pp = e->next;
    p->n--;
    jr__free(p->alloc, e);
}

size_t jr__confs_count(const jr__confs *p)
{
    return p->n;
}
