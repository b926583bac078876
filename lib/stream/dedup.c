/*
 * dedup.c — the duplicate window (dedup.h).
 */
#include <string.h>

#include "stream/dedup.h"
#include "stream/op.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "util/invariant.h"

void jr__dedup_init(jr__dedup *d, const jr_allocator *a, size_t max)
{
    memset(d, 0, sizeof *d);
    d->alloc = a;
    d->max = max ? max : JR__DEDUP_DEFAULT_MAX;
}

void jr__dedup_clear(jr__dedup *d)
{
    for (size_t i = 0; i < d->count; i++) jr__free(d->alloc, d->ring[(d->head + i) & (d->cap - 1)]);
    if (d->table) memset(d->table, 0, d->tcap * sizeof *d->table);
    d->head = d->count = 0;
    d->bytes = 0;
}

void jr__dedup_free(jr__dedup *d)
{
    jr__dedup_clear(d);
    jr__free(d->alloc, d->ring);
    jr__free(d->alloc, d->table);
    d->ring = NULL;
    d->table = NULL;
    d->cap = d->tcap = 0;
}

static size_t slot_of(const jr__dedup *d, uint64_t hash)
{
    return (size_t)hash & (d->tcap - 1);
}

#if JR__INVARIANTS_ON
/* dedup.h's invariants after a change: count within max and the table's load; entry e (the one
 * just inserted, or NULL) is found by its id and is the ring's newest; a window of at most 64
 * entries is checked whole: the table holds exactly the ring's entries, ids valid and unique,
 * timestamps in ring order, bytes the sum of the id lengths. */
static void check(const jr__dedup *d, const jr__dedup_entry *e)
{
    JR__INVARIANT(d->count <= d->max && d->count <= d->cap && d->count * 2 <= d->tcap);
    if (e) {
        JR__INVARIANT(jr__dedup_find(d, e->id, e->len) == e);
        JR__INVARIANT(jr__dedup_at(d, d->count - 1) == e);
    }
    if (d->count > 64) return;
    uint64_t bytes = 0;
    size_t slots = 0;
    for (size_t i = 0; i < d->count; i++) {
        const jr__dedup_entry *x = jr__dedup_at(d, i);
        JR__INVARIANT(x->len >= 1 && x->len <= JR__OP_MSG_ID_MAX);
        JR__INVARIANT(jr__dedup_find(d, x->id, x->len) == x); /* present, and unique */
        if (i) JR__INVARIANT(jr__dedup_at(d, i - 1)->ts <= x->ts);
        bytes += x->len;
    }
    for (size_t i = 0; i < d->tcap; i++) slots += d->table[i].e != NULL;
    JR__INVARIANT(bytes == d->bytes && slots == d->count);
}
#define CHECK(d, e) check(d, e)
#else
#define CHECK(d, e) ((void)0)
#endif

const jr__dedup_entry *jr__dedup_find(const jr__dedup *d, const char *id, size_t len)
{
    if (!d->count || !len) return NULL;
    uint64_t h = jr__xxh3(id, len);
    for (size_t i = slot_of(d, h);; i = (i + 1) & (d->tcap - 1)) {
        const jr__dedup_slot *sl = &d->table[i];
        if (!sl->e) return NULL;
        if (sl->hash == h && sl->e->len == len && memcmp(sl->e->id, id, len) == 0) return sl->e;
    }
}

static void table_put(jr__dedup_slot *t, size_t tcap, jr__dedup_entry *e)
{
    size_t i = (size_t)e->hash & (tcap - 1);
    while (t[i].e) i = (i + 1) & (tcap - 1);
    t[i].hash = e->hash;
    t[i].e = e;
}

/* Removes e from the table (backward-shift deletion: no tombstones). */
static void table_del(jr__dedup *d, const jr__dedup_entry *e)
{
    size_t mask = d->tcap - 1, i = slot_of(d, e->hash);
    while (d->table[i].e != e) i = (i + 1) & mask;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        const jr__dedup_slot *x = &d->table[j];
        if (!x->e) break;
        size_t k = slot_of(d, x->hash);
        /* x stays if its home k lies cyclically in (i, j] */
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) continue;
        d->table[i] = *x;
        i = j;
    }
    d->table[i].e = NULL;
    d->table[i].hash = 0;
}

static void pop_oldest(jr__dedup *d)
{
    jr__dedup_entry *e = d->ring[d->head];
    table_del(d, e);
    d->head = (d->head + 1) & (d->cap - 1);
    d->count--;
    d->bytes -= e->len;
    jr__free(d->alloc, e);
}

/* Ensures the ring and the table hold one more entry. */
static int grow(jr__dedup *d)
{
    size_t need = d->count + 1;
    if (need > d->cap) {
        size_t ncap = d->cap ? d->cap * 2 : 64;
        jr__dedup_entry **r = jr__calloc(d->alloc, ncap, sizeof *r);
        if (!r) return JR_ENOMEM;
        for (size_t i = 0; i < d->count; i++) r[i] = d->ring[(d->head + i) & (d->cap - 1)];
        jr__free(d->alloc, d->ring);
        d->ring = r;
        d->cap = ncap;
        d->head = 0;
    }
    if (need * 2 > d->tcap) {
        size_t ncap = d->tcap ? d->tcap * 2 : 128;
        jr__dedup_slot *t = jr__calloc(d->alloc, ncap, sizeof *t);
        if (!t) return JR_ENOMEM;
        for (size_t i = 0; i < d->count; i++)
            table_put(t, ncap, d->ring[(d->head + i) & (d->cap - 1)]);
        jr__free(d->alloc, d->table);
        d->table = t;
        d->tcap = ncap;
    }
    return 0;
}

int jr__dedup_prepare(jr__dedup *d, const char *id, size_t len, jr__dedup_entry **tok)
{
    *tok = NULL;
    if (!id || len == 0 || len > JR__OP_MSG_ID_MAX) return JR_EINVAL;
    int rc = grow(d);
    if (rc) return rc;
    jr__dedup_entry *e = jr__malloc(d->alloc, sizeof *e + len);
    if (!e) return JR_ENOMEM;
    e->hash = jr__xxh3(id, len);
    e->seq = 0;
    e->ts = 0;
    e->len = (uint32_t)len;
    memcpy(e->id, id, len);
    *tok = e;
    return 0;
}

void jr__dedup_commit(jr__dedup *d, jr__dedup_entry *e, uint64_t seq, int64_t ts, uint64_t token)
{
    while (d->count >= d->max) pop_oldest(d);
    e->seq = seq;
    e->ts = ts;
    e->token = token;
    d->ring[(d->head + d->count) & (d->cap - 1)] = e;
    d->count++;
    d->bytes += e->len;
    table_put(d->table, d->tcap, e);
    CHECK(d, e);
}

void jr__dedup_abort(jr__dedup *d, jr__dedup_entry *e)
{
    jr__free(d->alloc, e);
}

void jr__dedup_expire(jr__dedup *d, int64_t now, uint64_t window)
{
    if (!window) return;
    while (d->count) {
        const jr__dedup_entry *e = d->ring[d->head];
        if (now < e->ts || (uint64_t)(now - e->ts) < window) break;
        pop_oldest(d);
    }
    CHECK(d, NULL);
}

void jr__dedup_set_max(jr__dedup *d, size_t max)
{
    d->max = max ? max : JR__DEDUP_DEFAULT_MAX;
    while (d->count > d->max) pop_oldest(d);
    CHECK(d, NULL);
}
