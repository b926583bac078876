/*
 * fuzz_wal — libFuzzer target for WAL recovery (lib/log/recovery.c, record.c, segment.c).
 *
 * The input becomes WAL segment files on a memfs, and jr__wal_open recovers them. Two modes,
 * chosen by the first byte:
 *  - raw: the rest of the input is split into one to three segment files (the split points
 *    come from the input too), so arbitrary bytes reach the segment and record decoders;
 *  - structured: a valid multi-group, multi-segment WAL is built from operations the input
 *    describes (appends with truncations, truncation records, hard states, compactions,
 *    drops, flushes), then the remaining input is applied as corruption (xor, zero, truncate,
 *    remove), so the fuzzer reaches damage attribution deep inside well-formed logs.
 * The second bit of the first byte opens every WAL with a node key (encrypted at rest: sealed
 * entries, version 2 segments). Every replay is checked: per group, the compaction marker and hard
 * state come before its entries and entries are contiguous and ascending. After recovery the WAL
 * must accept a write, and a second recovery must succeed too. Any violation traps.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/segment.h"
#include "log/wal.h"
#include "util/map.h"
#include "vfs/memfs.h"

#define DIR "/w"
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) __builtin_trap();                                                                \
    } while (0)

/* The node key of this input's WALs, or NULL (plaintext). */
static const uint8_t *g_key;

typedef struct gstate {
    uint64_t last; /* last replayed index, or the marker */
    int started;   /* entries replayed */
    int has_compact;
} gstate;

typedef struct replay_ctx {
    jr__map groups; /* id -> gstate* */
} replay_ctx;

static gstate *gs(replay_ctx *c, uint64_t id)
{
    CHECK(id != 0);
    gstate *g = jr__map_get(&c->groups, id);
    if (!g) {
        g = calloc(1, sizeof *g);
        CHECK(g && jr__map_put(&c->groups, id, g) == 0);
    }
    return g;
}

static int on_entry(void *ctx, uint64_t group, const jr__entry *e)
{
    gstate *g = gs(ctx, group);
    uint64_t want = g->started || g->has_compact ? g->last + 1 : 1;
    CHECK(e->index == want);
    CHECK(e->len == 0 || e->data != NULL);
    volatile uint8_t sink = 0;
    for (uint32_t i = 0; i < e->len; i++) sink ^= e->data[i]; /* touch every byte */
    (void)sink;
    g->last = e->index;
    g->started = 1;
    return 0;
}

static int on_hardstate(void *ctx, uint64_t group, const jr__hardstate *hs)
{
    (void)hs;
    CHECK(!gs(ctx, group)->started);
    return 0;
}

static int on_compact(void *ctx, uint64_t group, uint64_t index, uint64_t term)
{
    (void)term;
    gstate *g = gs(ctx, group);
    CHECK(!g->started && index > 0);
    g->last = index;
    g->has_compact = 1;
    return 0;
}

static int on_drop(void *ctx, uint64_t group)
{
    CHECK(group != 0);
    (void)ctx;
    return 0;
}

/* Entries a truncation voids are never replayed, not even before it: nothing replayed so far
 * is at or above `from`. */
static int on_truncate(void *ctx, uint64_t group, uint64_t from)
{
    gstate *g = gs(ctx, group);
    CHECK(from > 0);
    CHECK(!g->started || g->last < from);
    return 0;
}

static int on_damaged(void *ctx, uint64_t group, const char *why)
{
    (void)ctx;
    (void)group;
    CHECK(why && strlen(why) > 0);
    return 0;
}

static void ctx_free(replay_ctx *c)
{
    for (size_t i = 0; i < c->groups.cap; i++)
        if (c->groups.slots[i].key) free(c->groups.slots[i].val);
    jr__map_free(&c->groups);
}

/* Opens, checks the replay, writes one record, closes. Returns the open result. */
static int recover(jr_vfs *vfs, uint64_t segment_bytes)
{
    replay_ctx c;
    jr__map_init(&c.groups, NULL);
    jr__wal_replay rp = {&c, on_entry, on_hardstate, on_compact, on_drop, on_damaged, on_truncate};
    jr__wal_config cfg = {vfs, DIR, NULL, segment_bytes, JR_SYNC_ALWAYS, 0, g_key, 0};
    jr__wal *w = NULL;
    int rc = jr__wal_open(&cfg, &rp, &w);
    ctx_free(&c);
    if (rc) {
        CHECK(w == NULL && rc < 0);
        return rc;
    }
    jr__entry e = {1, 1, 0, 3, (const uint8_t *)"abc"};
    CHECK(jr__wal_append(w, 77, &e) == 0);
    int durable = 0;
    CHECK(jr__wal_flush(w, 0, &durable) == 0 && durable == 1);
    jr__wal_close(w);
    return 0;
}

static void put_file(jr_vfs *v, uint64_t seq, const uint8_t *d, size_t n)
{
    char path[64];
    jr_file *f;
    jr__seg_path(path, sizeof path, DIR, seq);
    CHECK(v->open(v->ctx, path, JR_O_CREATE, &f) == 0);
    if (n) CHECK(v->pwrite(v->ctx, f, d, n, 0) == 0);
    v->sync(v->ctx, f);
    v->close(v->ctx, f);
}

/* A tiny cursor over the input. */
typedef struct in {
    const uint8_t *p;
    size_t n;
} in;

static uint64_t take(in *s, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes && s->n; i++, s->p++, s->n--) v |= (uint64_t)s->p[0] << (8 * i);
    return v;
}

static void raw_mode(jr_vfs *v, in *s)
{
    uint64_t first = 1 + take(s, 1) % 4;
    int nseg = 1 + (int)(take(s, 1) % 3);
    for (int k = 0; k < nseg; k++) {
        size_t len = k + 1 == nseg ? s->n : (size_t)(take(s, 2) % (s->n + 1));
        if (len > s->n) len = s->n;
        put_file(v, first + (uint64_t)k, s->p, len);
        s->p += len;
        s->n -= len;
    }
    v->sync_dir(v->ctx, DIR);
    if (recover(v, 4096) == 0) CHECK(recover(v, 4096) == 0);
}

static void structured_mode(jr_vfs *v, in *s)
{
    uint64_t segment_bytes = 512 + take(s, 1) * 16;
    jr__wal_replay none = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    jr__wal_config cfg = {v, DIR, NULL, segment_bytes, JR_SYNC_ALWAYS, 0, g_key, 0};
    jr__wal *w;
    CHECK(jr__wal_open(&cfg, &none, &w) == 0);
    uint64_t last[8] = {0}, term = 1;
    uint8_t data[256];
    int nops = (int)(take(s, 1) % 64);
    for (int i = 0; i < nops && s->n; i++) {
        uint8_t op = (uint8_t)take(s, 1);
        uint64_t g = 1 + (op >> 5);
        switch (op & 7) {
        case 0:
        case 1:
        case 2: { /* append 1..4 entries, sometimes rewriting a suffix */
            uint64_t start = last[g - 1] + 1;
            if ((op & 24) == 24 && last[g - 1] > 1) start = 1 + take(s, 1) % last[g - 1];
            uint32_t len = (uint32_t)(take(s, 1) % sizeof data);
            memset(data, (int)op, len);
            for (uint64_t k = 0; k < 1 + (op & 3u); k++) {
                jr__entry e = {term, start + k, 0, len, data};
                CHECK(jr__wal_append(w, g, &e) == 0);
            }
            last[g - 1] = start + (op & 3u);
            break;
        }
        case 3: {
            jr__hardstate hs = {++term, g, last[g - 1]};
            CHECK(jr__wal_hardstate(w, g, &hs) == 0);
            break;
        }
        case 4:
            if (last[g - 1]) CHECK(jr__wal_compact(w, g, 1 + take(s, 1) % last[g - 1], term) == 0);
            break;
        case 5:
            if (op & 8) { /* a truncation, as after a snapshot install or before a rewrite */
                uint64_t from = 1 + take(s, 1) % (last[g - 1] + 2);
                CHECK(jr__wal_truncate(w, g, from) == 0);
                if (from <= last[g - 1]) last[g - 1] = from - 1;
                break;
            }
            CHECK(jr__wal_drop(w, g) == 0);
            last[g - 1] = 0;
            break;
        default: {
            int d;
            CHECK(jr__wal_flush(w, 0, &d) == 0);
        }
        }
    }
    int d;
    CHECK(jr__wal_flush(w, 0, &d) == 0);
    jr__wal_close(w);

    /* corruption: up to 8 edits to the segment files */
    uint64_t *seqs;
    size_t n;
    CHECK(jr__seg_list(v, DIR, NULL, &seqs, &n) == 0);
    for (int k = 0; k < 8 && s->n >= 4 && n; k++) {
        uint8_t kind = (uint8_t)take(s, 1);
        char path[64];
        jr__seg_path(path, sizeof path, DIR, seqs[kind % n]);
        uint64_t off = take(s, 2), len = take(s, 1) + 1;
        switch ((kind >> 4) & 3) {
        case 0: /* xor bytes from the input */
            for (uint64_t b = 0; b < len && s->n; b++) {
                uint8_t x = (uint8_t)take(s, 1);
                uint8_t *all;
                size_t flen;
                if (jr__memfs_read_all(v, path, &all, &flen) != 0) break;
                if (off + b < flen) {
                    jr_file *f;
                    uint8_t y = all[off + b] ^ x;
                    if (v->open(v->ctx, path, JR_O_READ, &f) == 0) {
                        v->pwrite(v->ctx, f, &y, 1, off + b);
                        v->sync(v->ctx, f);
                        v->close(v->ctx, f);
                    }
                }
                jr__memfs_release(v, all);
            }
            break;
        case 1:
            jr__memfs_zero(v, path, off, len * 16);
            break;
        case 2:
            jr__memfs_truncate(v, path, off);
            break;
        case 3:
            if (kind & 0x40)
                v->remove(v->ctx, path);
            else
                jr__memfs_flip_bits(v, path, 0, 0, 1 + (kind & 7));
            break;
        }
    }
    free(seqs);
    if (recover(v, segment_bytes) == 0) CHECK(recover(v, segment_bytes) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    jr_vfs *v;
    CHECK(jr__memfs_new(NULL, size, &v) == 0);
    CHECK(v->mkdir(v->ctx, DIR) == 0);
    jr__memfs_set_capacity(v, (uint64_t)64 << 20);
    in s = {data + 1, size - 1};
    static const uint8_t key[32] = "fuzz_wal: the node key of a run";
    g_key = data[0] & 2 ? key : NULL;
    if (data[0] & 1)
        structured_mode(v, &s);
    else
        raw_mode(v, &s);
    jr__memfs_free(v);
    return 0;
}
