#include "map.h"

#include "alloc.h"

static size_t map_hash(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

void jr__map_init(jr__map *m, const jr_allocator *a)
{
    m->slots = NULL;
    m->cap = m->len = 0;
    m->alloc = a;
}

void jr__map_free(jr__map *m)
{
    jr__free(m->alloc, m->slots);
    jr__map_init(m, m->alloc);
}

void *jr__map_get(const jr__map *m, uint64_t key)
{
    if (!m->cap || !key) return NULL;
    for (size_t i = map_hash(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key) return m->slots[i].val;
        if (!m->slots[i].key) return NULL;
    }
}

static void map_insert(jr__map_slot *slots, size_t cap, uint64_t key, void *val)
{
    size_t i = map_hash(key, cap);
    while (slots[i].key && slots[i].key != key) i = (i + 1) & (cap - 1);
    slots[i].key = key;
    slots[i].val = val;
}

int jr__map_put(jr__map *m, uint64_t key, void *val)
{
    if (!key) return JR_EINVAL;
    if ((m->len + 1) * 4 > m->cap * 3) { /* load at most 3/4 */
        size_t cap = m->cap ? m->cap * 2 : 16;
        jr__map_slot *s = jr__calloc(m->alloc, cap, sizeof *s);
        if (!s) return JR_ENOMEM;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].key) map_insert(s, cap, m->slots[i].key, m->slots[i].val);
        jr__free(m->alloc, m->slots);
        m->slots = s;
        m->cap = cap;
    }
    size_t i = map_hash(key, m->cap);
    while (m->slots[i].key && m->slots[i].key != key) i = (i + 1) & (m->cap - 1);
    if (!m->slots[i].key) m->len++;
    m->slots[i].key = key;
    m->slots[i].val = val;
    return 0;
}

void *jr__map_del(jr__map *m, uint64_t key)
{
    if (!m->cap || !key) return NULL;
    size_t mask = m->cap - 1, i = map_hash(key, m->cap);
    while (m->slots[i].key != key) {
        if (!m->slots[i].key) return NULL;
        i = (i + 1) & mask;
    }
    void *val = m->slots[i].val;
    /* backward-shift deletion keeps every probe chain unbroken */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t home = map_hash(m->slots[j].key, m->cap);
        /* move j into the hole if its home is not cyclically within (hole, j] */
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].key = 0;
    m->slots[hole].val = NULL;
    m->len--;
    return val;
}
