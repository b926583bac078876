/* hugealloc.c — the library's allocator in jetraft-server (see hugealloc.h). */
#include "hugealloc.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static hugealloc_stats stats; /* the node's thread is the only caller */

void hugealloc_range(const void *p, size_t n, uintptr_t *start, size_t *len)
{
    uintptr_t a = (uintptr_t)p, e = a + n;
    uintptr_t s = (a + HUGEALLOC_PAGE - 1) & ~(uintptr_t)(HUGEALLOC_PAGE - 1);
    uintptr_t t = e & ~(uintptr_t)(HUGEALLOC_PAGE - 1);
    *start = s;
    *len = t > s ? (size_t)(t - s) : 0;
}

/* Advises the whole huge pages of a block of n bytes at p. A kernel without transparent huge
 * pages refuses (EINVAL): the block stays an ordinary one. */
static void advise(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    uintptr_t s;
    size_t len;
    hugealloc_range(p, n, &s, &len);
    if (len && madvise((void *)s, len, MADV_HUGEPAGE) == 0) {
        stats.advised++;
        stats.advised_bytes += len;
    }
#else
    (void)p;
    (void)n;
#endif
}

static size_t round_page(size_t n)
{
    size_t r = (n + HUGEALLOC_PAGE - 1) & ~(HUGEALLOC_PAGE - 1);
    return r < n ? 0 : r;
}

/* AddressSanitizer tracks (and leak-checks) only the malloc family's blocks */
#if defined(__SANITIZE_ADDRESS__)
#define HUGE_MAPS 0
#else
#define HUGE_MAPS 1
#endif

#if HUGE_MAPS
/* The blocks of HUGEALLOC_MIN bytes and more: mappings of their own, each a whole number of
 * huge pages at a huge-page boundary, so that realloc can grow one with mremap (its pages move
 * to the larger mapping, in place if the addresses after it are free, without a copy and
 * without faulting them in again). A few dozen at most: a busy stream's log ring and write
 * buffers each. */
typedef struct huge_map {
    void *p;
    size_t len;
} huge_map;
static huge_map *maps;
static size_t nmaps, maps_cap;

static huge_map *map_find(const void *p)
{
    if ((uintptr_t)p & (HUGEALLOC_PAGE - 1)) return NULL; /* not ours: ours are aligned */
    for (size_t i = 0; i < nmaps; i++)
        if (maps[i].p == p) return &maps[i];
    return NULL;
}

/* len bytes (a multiple of HUGEALLOC_PAGE) of address space at a huge-page boundary, with prot;
 * NULL if none. */
static void *map_aligned(size_t len, int prot)
{
    size_t span = len + HUGEALLOC_PAGE;
    if (span < len) return NULL;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (prot == PROT_NONE ? MAP_NORESERVE : 0);
    uint8_t *m = mmap(NULL, span, prot, flags, -1, 0);
    if (m == MAP_FAILED) return NULL;
    uint8_t *a =
        (uint8_t *)(((uintptr_t)m + HUGEALLOC_PAGE - 1) & ~(uintptr_t)(HUGEALLOC_PAGE - 1));
    if (a > m) munmap(m, (size_t)(a - m));
    if (m + span > a + len) munmap(a + len, (size_t)(m + span - (a + len)));
    return a;
}

static void *map_new(size_t n)
{
    size_t len = round_page(n);
    if (!len) return NULL;
    if (nmaps == maps_cap) {
        size_t cap = maps_cap ? maps_cap * 2 : 16;
        huge_map *m = realloc(maps, cap * sizeof *m);
        if (!m) return NULL;
        maps = m;
        maps_cap = cap;
    }
    void *p = map_aligned(len, PROT_READ | PROT_WRITE);
    if (!p) return NULL;
    advise(p, len);
    maps[nmaps++] = (huge_map){p, len};
    return p;
}

static void map_drop(huge_map *m)
{
    munmap(m->p, m->len);
    *m = maps[--nmaps];
}

/* Grows or shrinks the mapping m to n bytes (at least HUGEALLOC_MIN): its pages are kept, moved
 * with mremap when it cannot grow in place. NULL (m as it was) if the address space is short. */
static void *map_resize(huge_map *m, size_t n)
{
    size_t len = round_page(n);
    if (!len) return NULL;
    if (len <= m->len) {
        if (len < m->len) munmap((uint8_t *)m->p + len, m->len - len);
        m->len = len;
        return m->p;
    }
    void *q = mremap(m->p, m->len, len, 0); /* in place */
    if (q == MAP_FAILED) {
        /* a huge-page-aligned range to move to, so the huge pages move whole */
        void *to = map_aligned(len, PROT_NONE);
        if (!to) return NULL;
        q = mremap(m->p, m->len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
        if (q == MAP_FAILED) {
            munmap(to, len);
            return NULL;
        }
    }
    stats.remapped++;
    stats.remapped_bytes += m->len;
    advise(q, len);
    m->p = q;
    m->len = len;
    return q;
}
#endif

static void *huge_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (n < HUGEALLOC_MIN) return malloc(n);
#if HUGE_MAPS
    return map_new(n);
#else
    /* aligned to a huge page, so that every huge page the block spans is whole in it */
    size_t r = round_page(n);
    void *p = r ? aligned_alloc(HUGEALLOC_PAGE, r) : NULL;
    if (p) advise(p, r);
    return p;
#endif
}

static void *huge_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
#if HUGE_MAPS
    if (!p) return huge_malloc(ctx, n);
    huge_map *m = map_find(p);
    if (m && n >= HUGEALLOC_MIN) return map_resize(m, n);
    if (m) { /* shrunk below the bound: back to malloc */
        void *q = malloc(n ? n : 1);
        if (!q) return NULL;
        memcpy(q, p, n);
        map_drop(m);
        return q;
    }
    if (n >= HUGEALLOC_MIN) { /* a malloc block grown past the bound: to a mapping */
        size_t old = malloc_usable_size(p);
        void *q = map_new(n);
        if (!q) return NULL;
        memcpy(q, p, old < n ? old : n);
        free(p);
        return q;
    }
    return realloc(p, n);
#else
    void *q = realloc(p, n);
    /* realloc keeps no alignment: the advice covers the huge pages that fall whole inside */
    if (q && n >= HUGEALLOC_MIN) advise(q, n);
    return q;
#endif
}

static void huge_free(void *ctx, void *p)
{
    (void)ctx;
#if HUGE_MAPS
    huge_map *m = p ? map_find(p) : NULL;
    if (m) {
        map_drop(m);
        return;
    }
#endif
    free(p);
}

static void plain_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static void *plain_malloc(void *ctx, size_t n)
{
    (void)ctx;
    return malloc(n);
}

static void *plain_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    return realloc(p, n);
}

static const jr_allocator huge = {JR_ALLOCATOR_VERSION, NULL, huge_malloc, huge_realloc, huge_free};
static const jr_allocator plain = {JR_ALLOCATOR_VERSION, NULL, plain_malloc, plain_realloc,
                                   plain_free};

const jr_allocator *hugealloc_get(int on)
{
    return on ? &huge : &plain;
}

void hugealloc_stats_get(hugealloc_stats *out)
{
    *out = stats;
}
