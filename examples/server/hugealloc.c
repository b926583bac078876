/* hugealloc.c — the library's allocator in jetraft-server (see hugealloc.h). */
#include "hugealloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

#define HEAP_TUNABLE "glibc.malloc.hugetlb"

int hugealloc_heap_env(const char *cur, char *out, size_t len)
{
    /* GLIBC_TUNABLES is a colon-separated list of name=value */
    for (const char *p = cur; p && *p;) {
        size_t n = strcspn(p, ":");
        if (n > sizeof HEAP_TUNABLE - 1 && !strncmp(p, HEAP_TUNABLE "=", sizeof HEAP_TUNABLE))
            return -EALREADY;
        p += n;
        if (*p) p++;
    }
    int w = cur && *cur ? snprintf(out, len, "%s:" HEAP_TUNABLE "=1", cur)
                        : snprintf(out, len, HEAP_TUNABLE "=1");
    return w < 0 || (size_t)w >= len ? -ENOSPC : 0;
}

/* 1 if the kernel gives transparent huge pages to a region advised MADV_HUGEPAGE. */
static int thp_offered(void)
{
    char line[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return 0;
    if (!fgets(line, sizeof line, f)) line[0] = 0;
    fclose(f);
    return strstr(line, "[always]") || strstr(line, "[madvise]");
}

void hugealloc_heap_reexec(char **argv)
{
    char v[1024], was[1024];
    const char *cur = getenv("GLIBC_TUNABLES");
    if (!thp_offered() || hugealloc_heap_env(cur, v, sizeof v)) return;
    if (cur && snprintf(was, sizeof was, "%s", cur) >= (int)sizeof was) return;
    if (setenv("GLIBC_TUNABLES", v, 1)) return;
    execv("/proc/self/exe", argv);
    /* exec failed: this process goes on with the heap as it is, and its environment as it was
     * (a child started later must not think the tunable in force here) */
    if (cur)
        setenv("GLIBC_TUNABLES", was, 1);
    else
        unsetenv("GLIBC_TUNABLES");
}
