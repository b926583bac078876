/* image — a memfs file's bytes in chunks (see image.h). */
#include "vfs/image.h"

#include <string.h>

#include "util/alloc.h"

#define MIN_CAP0 256

void jr__chunk_pool_init(jr__chunk_pool *p, const jr_allocator *a, size_t max_chunks)
{
    memset(p, 0, sizeof *p);
    p->alloc = a;
    p->max = max_chunks;
}

void jr__chunk_pool_free(jr__chunk_pool *p)
{
    for (size_t i = 0; i < p->n; i++) jr__free(p->alloc, p->spare[i]);
    jr__free(p->alloc, p->spare);
    p->spare = NULL;
    p->n = p->cap = 0;
}

/* A zeroed full-size chunk: a spare one, or a new one. NULL when out of memory. */
static uint8_t *take(jr__chunk_pool *p)
{
    if (p->n) {
        uint8_t *c = p->spare[--p->n];
        memset(c, 0, (size_t)JR__CHUNK);
        return c;
    }
    return jr__calloc(p->alloc, 1, (size_t)JR__CHUNK);
}

/* Keeps a full-size chunk for reuse, or frees it when the pool is full (or cannot grow). */
static void give(jr__chunk_pool *p, uint8_t *c)
{
    if (p->n == p->cap && p->n < p->max) {
        size_t nc = p->cap ? p->cap * 2 : 64;
        if (nc > p->max) nc = p->max;
        uint8_t **s = jr__realloc(p->alloc, p->spare, nc * sizeof *s);
        if (s) {
            p->spare = s;
            p->cap = nc;
        }
    }
    if (p->n < p->cap)
        p->spare[p->n++] = c;
    else
        jr__free(p->alloc, c);
}

static int grow_slots(jr__image *im, const jr__chunk_pool *p, size_t need)
{
    if (need <= im->nchunks) return 0;
    size_t n = im->nchunks ? im->nchunks : 1;
    while (n < need) n *= 2;
    uint8_t **c = jr__realloc(p->alloc, im->chunks, n * sizeof *c);
    if (!c) return JR_ENOMEM;
    memset(c + im->nchunks, 0, (n - im->nchunks) * sizeof *c);
    im->chunks = c;
    im->nchunks = n;
    return 0;
}

/* Makes chunk 0 hold at least `need` bytes (need <= JR__CHUNK). */
static int reserve0(jr__image *im, jr__chunk_pool *p, uint64_t need)
{
    if (im->chunks[0] && im->cap0 >= need) return 0;
    uint64_t cap = im->chunks[0] ? im->cap0 : MIN_CAP0;
    while (cap < need) cap *= 2;
    if (cap > JR__CHUNK) cap = JR__CHUNK;
    uint8_t *c;
    if (!im->chunks[0] && cap == JR__CHUNK) {
        c = take(p);
    } else {
        c = jr__realloc(p->alloc, im->chunks[0], (size_t)cap);
        if (c)
            memset(c + (im->chunks[0] ? im->cap0 : 0), 0,
                   (size_t)(cap - (im->chunks[0] ? im->cap0 : 0)));
    }
    if (!c) return JR_ENOMEM;
    im->chunks[0] = c;
    im->cap0 = cap;
    return 0;
}

int jr__image_reserve(jr__image *im, jr__chunk_pool *p, uint64_t off, uint64_t len)
{
    if (len == 0) return 0;
    uint64_t end = off + len;
    uint64_t hi = (end - 1) / JR__CHUNK;
    if (hi >= SIZE_MAX / sizeof(uint8_t *)) return JR_ENOMEM;
    if (grow_slots(im, p, (size_t)hi + 1)) return JR_ENOMEM;
    for (uint64_t ci = off / JR__CHUNK; ci <= hi; ci++) {
        if (ci == 0) {
            if (reserve0(im, p, end < JR__CHUNK ? end : JR__CHUNK)) return JR_ENOMEM;
        } else if (!im->chunks[ci] && !(im->chunks[ci] = take(p))) {
            return JR_ENOMEM;
        }
    }
    return 0;
}

/* The piece of [off, off + len) inside off's chunk: its length (*n) and how many of its first
 * bytes exist in memory (the return value; 0 for a hole; the rest of a piece past the end of a
 * small chunk 0 is a hole too). *at points at them. */
static uint64_t piece(const jr__image *im, uint64_t off, uint64_t len, uint64_t *n, uint8_t **at)
{
    uint64_t ci = off / JR__CHUNK, co = off % JR__CHUNK;
    *n = JR__CHUNK - co < len ? JR__CHUNK - co : len;
    uint64_t h = ci < im->nchunks && im->chunks[ci] ? (ci == 0 ? im->cap0 : JR__CHUNK) : 0;
    if (h <= co) return 0;
    *at = im->chunks[ci] + co;
    return h - co < *n ? h - co : *n;
}

void jr__image_write(jr__image *im, uint64_t off, const void *buf, uint64_t len)
{
    const uint8_t *s = buf;
    for (uint64_t n; len; s += n, off += n, len -= n) {
        uint8_t *at;
        uint64_t got = piece(im, off, len, &n, &at);
        if (got) memcpy(at, s, (size_t)got);
    }
}

void jr__image_read(const jr__image *im, uint64_t off, void *buf, uint64_t len)
{
    uint8_t *d = buf;
    for (uint64_t n; len; d += n, off += n, len -= n) {
        uint8_t *at;
        uint64_t got = piece(im, off, len, &n, &at);
        if (got) memcpy(d, at, (size_t)got);
        if (got < n) memset(d + got, 0, (size_t)(n - got));
    }
}

void jr__image_zero(jr__image *im, uint64_t off, uint64_t len)
{
    for (uint64_t n; len; off += n, len -= n) {
        uint8_t *at;
        uint64_t got = piece(im, off, len, &n, &at);
        if (got) memset(at, 0, (size_t)got);
    }
}

uint8_t *jr__image_at(jr__image *im, uint64_t off)
{
    return im->chunks[off / JR__CHUNK] + off % JR__CHUNK;
}

void jr__image_release(jr__image *im, jr__chunk_pool *p)
{
    for (size_t i = 0; i < im->nchunks; i++) {
        if (!im->chunks[i]) continue;
        if (i > 0 || im->cap0 == JR__CHUNK)
            give(p, im->chunks[i]);
        else
            jr__free(p->alloc, im->chunks[i]);
    }
    jr__free(p->alloc, im->chunks);
    memset(im, 0, sizeof *im);
}
