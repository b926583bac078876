/*
 * mem.c — the memory store's backend: records live in in-memory blocks (growable buffers of up
 * to block_bytes, or one larger record), freed as soon as none of their messages is live.
 * Nothing is persistent; there are no tombstones and nothing to recover.
 *
 * Memory follows the live messages: a block of at least COMPACT_MIN bytes (or half a block) of
 * which three quarters or more are dead records is compacted (its live records copied into a
 * buffer of their size, their entries' offsets updated). Each compaction copies at most a third of
 * the bytes that died since the block was last this size, so its cost is amortized over the
 * removals; a key-value shaped store (one key updated over and over, one never) holds about
 * COMPACT_MIN bytes, not two blocks of dead updates.
 */
#include <string.h>

#include "store_int.h"
#include "util/alloc.h"

typedef struct mblk {
    uint8_t *data;
    size_t len, cap;
} mblk;

static int mem_reserve(jr__store *s, size_t len, uint8_t **p, uint32_t *blk, uint32_t *off)
{
    mblk *b = s->nblks ? s->blks[s->nblks - 1].bk : NULL;
    if (!b || (b->len && b->len + len > s->block_bytes)) {
        uint32_t id = s->nblks ? s->blks[s->nblks - 1].id + 1 : 1;
        b = jr__calloc(s->alloc, 1, sizeof *b);
        if (!b) return JR_ENOMEM;
        int rc = jr__store_blk_add(s, id);
        if (rc) {
            jr__free(s->alloc, b);
            return rc;
        }
        s->blks[s->nblks - 1].bk = b;
    }
    if (b->cap - b->len < len) {
        /* the first block grows from small (many small streams stay small); later ones are
         * allocated whole, so appends never copy blocks around */
        size_t ncap = b->cap ? b->cap : (s->nblks > 1 ? s->block_bytes : 4096);
        while (ncap - b->len < len) ncap *= 2;
        if (ncap > s->block_bytes && b->len + len <= s->block_bytes) ncap = s->block_bytes;
        uint8_t *d = jr__realloc(s->alloc, b->data, ncap);
        if (!d) return JR_ENOMEM;
        b->data = d;
        b->cap = ncap;
    }
    *p = b->data + b->len;
    *blk = s->blks[s->nblks - 1].id;
    *off = (uint32_t)b->len;
    return 0;
}

static int mem_commit(jr__store *s, uint8_t *p, size_t len)
{
    mblk *b = s->blks[s->nblks - 1].bk;
    (void)p;
    b->len += len;
    return 0;
}

static int mem_read(jr__store *s, uint32_t blk, uint32_t off, uint32_t len, const uint8_t **out)
{
    size_t i = jr__store_blk_find(s, blk);
    if (i == SIZE_MAX) return jr__store_fail(s, JR_ECORRUPT, "block %u missing", blk);
    mblk *b = s->blks[i].bk;
    if ((size_t)off + len > b->len) return jr__store_fail(s, JR_ECORRUPT, "bad offset");
    *out = b->data + off;
    return 0;
}

static int mem_drop(jr__store *s, size_t i)
{
    mblk *b = s->blks[i].bk;
    jr__free(s->alloc, b->data);
    jr__free(s->alloc, b);
    s->blks[i].bk = NULL;
    return 0;
}

#define COMPACT_MIN (64 * 1024)

static int mem_compact(jr__store *s, size_t i)
{
    jr__blk *b = &s->blks[i];
    mblk *m = b->bk;
    size_t min = COMPACT_MIN < s->block_bytes / 2 ? COMPACT_MIN : s->block_bytes / 2;
    if (!m || m->len < min || b->live_bytes * 4 > m->len) return 0;
    /* the active block goes on taking appends: room to grow from */
    int active = i + 1 == s->nblks;
    size_t cap = b->live_bytes;
    if (active && cap < 4096) cap = 4096;
    uint8_t *d = jr__malloc(s->alloc, cap);
    if (!d) return JR_ENOMEM;
    size_t off = 0;
    jr__seqcur c;
    /* seqs increase with block ids: the block's live messages are the entries in its range */
    for (jr__ent *e = jr__seqidx_ceil(&s->idx, b->first, &c); e && e->seq <= b->last;
         e = jr__seqidx_next(&s->idx, &c)) {
        if (e->blk != b->id) continue;
        memcpy(d + off, m->data + e->off, e->len);
        e->off = (uint32_t)off;
        off += e->len;
    }
    jr__free(s->alloc, m->data);
    m->data = d;
    m->len = off;
    m->cap = cap;
    return 0;
}

static int mem_carry(jr__store *s, size_t i)
{
    (void)s;
    (void)i;
    return 0; /* no tombstones */
}

static int mem_erase(jr__store *s, uint32_t blk, uint32_t off, uint32_t len)
{
    size_t i = jr__store_blk_find(s, blk);
    if (i == SIZE_MAX) return JR_ECORRUPT;
    mblk *b = s->blks[i].bk;
    jr__srec_erase(b->data + off, len);
    return 0;
}

static int mem_flush(jr__store *s, int sync)
{
    (void)s;
    (void)sync;
    return 0;
}

/* jr__store_trim: the last block (never dropped, as the one appends go to) gives its bytes
 * back once none of its messages is live (deleted entries are never read). */
static int mem_trim(jr__store *s)
{
    jr__blk *t = s->nblks ? &s->blks[s->nblks - 1] : NULL;
    if (!t || t->live || !t->bk) return 0;
    mblk *b = t->bk;
    jr__free(s->alloc, b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    return 0;
}

static void mem_close(jr__store *s)
{
    for (size_t i = 0; i < s->nblks; i++)
        if (s->blks[i].bk) mem_drop(s, i);
}

static const jr__store_backend mem_backend = {
    .persistent = 0,
    .reserve = mem_reserve,
    .commit = mem_commit,
    .read = mem_read,
    .drop = mem_drop,
    .carry = mem_carry,
    .compact = mem_compact,
    .unlink = mem_drop,
    .erase = mem_erase,
    .flush = mem_flush,
    .trim = mem_trim,
    .close = mem_close,
};

int jr__store_mem_open(jr__store *s, const jr__store_config *cfg)
{
    s->bk = &mem_backend;
    s->block_bytes = cfg->block_bytes ? cfg->block_bytes : (1u << 20);
    return 0;
}
