#include "alloc.h"

#include <stdlib.h>
#include <string.h>

void *jr__malloc(const jr_allocator *a, size_t n)
{
    if (n == 0) n = 1;
    return a ? a->malloc(a->ctx, n) : malloc(n);
}

void *jr__calloc(const jr_allocator *a, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    size_t total = n * size;
    if (!a) return calloc(total ? total : 1, 1); /* knows when fresh memory is already zero */
    void *p = jr__malloc(a, total);
    if (p) memset(p, 0, total ? total : 1);
    return p;
}

void *jr__realloc(const jr_allocator *a, void *p, size_t n)
{
    if (n == 0) {
        jr__free(a, p);
        return NULL;
    }
    if (!p) return jr__malloc(a, n);
    return a ? a->realloc(a->ctx, p, n) : realloc(p, n);
}

void jr__free(const jr_allocator *a, void *p)
{
    if (!p) return;
    if (a)
        a->free(a->ctx, p);
    else
        free(p);
}

char *jr__strdup(const jr_allocator *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = jr__malloc(a, n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Counts one allocation call; 1 if it must fail. */
static int fa_fails(jr__falloc *f)
{
    f->calls++;
    if (!f->fail_at || f->calls < f->fail_at || (f->calls > f->fail_at && !f->sticky)) return 0;
    f->failures++;
    return 1;
}

static void *fa_malloc(void *ctx, size_t n)
{
    jr__falloc *f = ctx;
    if (fa_fails(f)) return NULL;
    void *p = malloc(n);
    if (p) f->live++;
    return p;
}

static void *fa_realloc(void *ctx, void *p, size_t n)
{
    jr__falloc *f = ctx;
    if (fa_fails(f)) return NULL;
    void *q = realloc(p, n);
    if (q && !p) f->live++;
    return q;
}

static void fa_free(void *ctx, void *p)
{
    jr__falloc *f = ctx;
    if (!p) return;
    f->live--;
    free(p);
}

void jr__falloc_init(jr__falloc *f)
{
    memset(f, 0, sizeof *f);
    f->a.version = JR_ALLOCATOR_VERSION;
    f->a.ctx = f;
    f->a.malloc = fa_malloc;
    f->a.realloc = fa_realloc;
    f->a.free = fa_free;
}

void jr__falloc_arm(jr__falloc *f, uint64_t nth, int sticky)
{
    f->fail_at = nth ? f->calls + nth : 0;
    f->sticky = sticky;
}
