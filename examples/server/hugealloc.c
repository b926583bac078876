/* hugealloc.c — the library's allocator in jetraft-server (see hugealloc.h). */
#include "hugealloc.h"

#include <stdlib.h>
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

static void *huge_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (n < HUGEALLOC_MIN) return malloc(n);
    /* aligned to a huge page, so that every huge page the block spans is whole in it */
    size_t r = (n + HUGEALLOC_PAGE - 1) & ~(HUGEALLOC_PAGE - 1);
    if (r < n) return NULL;
    void *p = aligned_alloc(HUGEALLOC_PAGE, r);
    if (p) advise(p, r);
    return p;
}

static void *huge_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    void *q = realloc(p, n);
    /* realloc keeps no alignment: the advice covers the huge pages that fall whole inside */
    if (q && n >= HUGEALLOC_MIN) advise(q, n);
    return q;
}

static void huge_free(void *ctx, void *p)
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
                                   huge_free};

const jr_allocator *hugealloc_get(int on)
{
    return on ? &huge : &plain;
}

void hugealloc_stats_get(hugealloc_stats *out)
{
    *out = stats;
}
