/*
 * wal — staging, group commit, sync policy and segment rotation of the shared WAL (wal.h).
 *
 * Appends encode records into one staging buffer (memory only). jr__wal_flush writes the whole
 * buffer with one pwrite at the end of the current segment and, under JR_SYNC_ALWAYS, covers
 * it with one sync: one fsync serves every group (ARCHITECTURE §4). With prealloc_bytes the
 * same pwrite carries, now and then, the zeros that keep the segment filled ahead of its end
 * (zero_pad), so most syncs find the file's size and allocation unchanged. When the buffer does not
 * fit in the current segment, a new segment is started instead: header + checkpoint + buffer
 * in one pwrite, then a sync of the file and of the directory. After a successful write the
 * records are applied to each group's written state (the same rules recovery replays), and
 * after a sync the segments nobody needs any more are deleted (gc.c). A TRUNCATE record is
 * applied like the entry records it voids: the group's last index and the segment tables
 * drop to just below its cut.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/wal_int.h"
#include "util/alloc.h"
#include "util/invariant.h"

#define DEFAULT_SEGMENT ((uint64_t)64 << 20)
#define DEFAULT_INTERVAL ((uint64_t)100 * 1000 * 1000)

void jr__wal_seterr(jr__wal *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->errmsg, sizeof w->errmsg, fmt, ap);
    va_end(ap);
}

jr__walgrp *jr__wal_group(jr__wal *w, uint64_t id, int create)
{
    jr__walgrp *g = jr__map_get(&w->groups, id);
    if (g || !create) return g;
    g = jr__calloc(w->alloc, 1, sizeof *g);
    if (!g) return NULL;
    g->id = id;
    if (w->recovering) {
        g->r = jr__calloc(w->alloc, 1, sizeof *g->r);
        if (!g->r) {
            jr__free(w->alloc, g);
            return NULL;
        }
        g->r->cut = UINT64_MAX;
    }
    if (jr__map_put(&w->groups, id, g)) {
        jr__wal_group_free(w, g);
        return NULL;
    }
    return g;
}

void jr__wal_group_done(jr__wal *w, jr__walgrp *g)
{
    if (!g->r) return;
    jr__free(w->alloc, g->r->ev);
    jr__free(w->alloc, g->r->why);
    jr__free(w->alloc, g->r);
    g->r = NULL;
}

void jr__wal_group_free(jr__wal *w, jr__walgrp *g)
{
    if (!g) return;
    jr__wal_group_done(w, g);
    jr__free(w->alloc, g);
}

static int cmp_item(const void *a, const void *b)
{
    uint64_t x = ((const jr__rec_cpitem *)a)->group, y = ((const jr__rec_cpitem *)b)->group;
    return x < y ? -1 : x > y;
}

void jr__wal_put_checkpoint(jr__wal *w, jr__buf *b)
{
    size_t n = 0;
    for (size_t i = 0; i < w->groups.cap; i++) {
        const jr__walgrp *g = w->groups.slots[i].val;
        if (w->groups.slots[i].key && !g->dropped && (g->gseq || g->damaged)) n++;
    }
    jr__rec_cpitem *items = jr__calloc(w->alloc, n ? n : 1, sizeof *items);
    if (!items) {
        b->err = JR_ENOMEM;
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < w->groups.cap; i++) {
        const jr__walgrp *g = w->groups.slots[i].val;
        if (!w->groups.slots[i].key || g->dropped || !(g->gseq || g->damaged)) continue;
        jr__rec_cpitem *it = &items[k++];
        it->group = g->id;
        it->gseq = g->gseq;
        it->last_index = g->last_index;
        it->hs = g->hs;
        it->cindex = g->cindex;
        it->cterm = g->cterm;
        it->flags = (g->has_hs ? JR__CP_HAS_HS : 0) | (g->has_compact ? JR__CP_HAS_COMPACT : 0) |
                    (g->damaged ? JR__CP_DAMAGED : 0);
    }
    qsort(items, n, sizeof *items, cmp_item);
    jr__rec_put_checkpoint(b, items, (uint32_t)n);
    jr__free(w->alloc, items);
}

static int fail(jr__wal *w, int rc, const char *what)
{
    if (!w->failed) w->failed = rc;
    jr__wal_seterr(w, "wal: %s failed in %s: %s; the WAL refuses further writes", what, w->dir,
                   jr_strerror(rc));
    return rc;
}

static int do_sync(jr__wal *w, uint64_t now)
{
    int rc = w->vfs->sync(w->vfs->ctx, w->cur);
    if (rc) return fail(w, rc, "sync");
    w->stats.syncs++;
    w->unsynced = 0;
    w->last_sync = now;
    return 0;
}

/* How many groups the records p[0..n) may add to segment table t: one per run of entry records
 * of a group t does not hold (an upper bound; a drop or truncation may remove a group from t,
 * so a run after one counts again). */
static size_t new_groups(const jr__segtab *t, const uint8_t *p, size_t n)
{
    size_t off = 0, k = 0;
    uint64_t prev = 0;
    while (off + JR__REC_HDR <= n) {
        const uint8_t *h = p + off;
        uint64_t id = jr__get_u64(h + 16);
        if (h[12] == JR__REC_ENTRY || h[12] == JR__REC_SEALED) {
            if (id != prev && !jr__segtab_has(t, id)) k++;
            prev = id;
        } else if (h[12] == JR__REC_DROP || h[12] == JR__REC_TRUNCATE) {
            prev = 0;
        }
        off += JR__REC_HDR + (size_t)jr__get_u32(h + 8);
    }
    return k;
}

/* Makes room in segment table t for every group the records p[0..n) add, so that applying them
 * after they are written cannot fail. 0 or JR_ENOMEM. */
static int reserve_written(jr__wal *w, jr__segtab *t, const uint8_t *p, size_t n)
{
    return jr__segtab_reserve(w->alloc, t, new_groups(t, p, n));
}

int jr__wal_rotate(jr__wal *w, const uint8_t *extra, size_t n)
{
    char path[4096];
    uint64_t seq = w->nsegs ? w->segs[w->nsegs - 1].seq + 1 : 1;
    int rc;
    jr_file *f = NULL;

    /* The old segment ends at its last record (wal_int.h): its zero tail is cut, and the cut
     * is synced with the rest, before the new segment exists. */
    if (w->cur && w->cur_alloc > w->cur_size) {
        if ((rc = w->vfs->truncate(w->vfs->ctx, w->cur, w->cur_size)))
            return fail(w, rc, "cutting the zero tail before rotation");
        w->cur_alloc = w->cur_size;
        w->unsynced = 1;
    }
    if (w->cur && w->unsynced && (rc = w->vfs->sync(w->vfs->ctx, w->cur)))
        return fail(w, rc, "sync before rotation");
    if (w->cur && w->unsynced) w->stats.syncs++;
    w->unsynced = 0;
    if (seq == 0) return fail(w, JR_ECORRUPT, "segment numbering (exhausted)");
    if ((rc = jr__seg_path(path, sizeof path, w->dir, seq))) return fail(w, rc, "segment path");

    jr__buf *b = &w->scratch;
    jr__buf_reset(b);
    uint8_t hdr[JR__SEG_HDR];
    jr__seg_header(hdr, seq, w->sealed ? &w->key.check : NULL);
    jr__buf_put(b, hdr, sizeof hdr);
    jr__wal_put_checkpoint(w, b);
    jr__buf_put(b, extra, n);
    if (b->err) return JR_ENOMEM; /* nothing written: the WAL stays usable */
    if ((rc = jr__wal_seg_push(w, seq))) return rc;
    if (reserve_written(w, &w->segs[w->nsegs - 1].tab, extra, n)) {
        jr__segtab_free(w->alloc, &w->segs[--w->nsegs].tab);
        return JR_ENOMEM;
    }

    rc = w->vfs->open(w->vfs->ctx, path, JR_O_CREATE | JR_O_EXCL, &f);
    if (rc) {
        jr__segtab_free(w->alloc, &w->segs[--w->nsegs].tab);
        return fail(w, rc, "creating a segment");
    }
    rc = w->vfs->pwrite(w->vfs->ctx, f, b->data, b->len, 0);
    if (!rc) rc = w->vfs->sync(w->vfs->ctx, f);
    if (!rc) rc = w->vfs->sync_dir(w->vfs->ctx, w->dir);
    if (rc) {
        w->vfs->close(w->vfs->ctx, f);
        jr__segtab_free(w->alloc, &w->segs[--w->nsegs].tab);
        return fail(w, rc, "writing a new segment");
    }
    if (w->cur) w->vfs->close(w->vfs->ctx, w->cur);
    w->cur = f;
    w->cur_size = b->len;
    w->cur_alloc = b->len;
    w->cur_base = b->len - n;
    w->stats.writes++;
    w->stats.syncs++;
    w->stats.bytes_written += b->len;
    w->stats.segments_created++;
    if (b->cap > ((size_t)1 << 20)) jr__buf_free(b); /* do not pin a large checkpoint buffer */
    return 0;
}

#if JR__INVARIANTS_ON
/* wal_int.h's invariants where the WAL is open and nothing is staged (after open and after a
 * flush that succeeded): segments ascending, the last one current, nothing pending to roll
 * back; for a WAL of at most 256 groups, each group holds no recovery state and, unless dropped
 * or damaged, its log ends at or above its compaction marker. */
static void wal_check(const jr__wal *w)
{
    JR__INVARIANT(!w->failed && !w->recovering && w->nsegs > 0 && w->cur != NULL);
    JR__INVARIANT(w->cur_base <= w->cur_size && w->stage.len == 0 && w->mark_len == 0);
    for (size_t i = 1; i < w->nsegs; i++) JR__INVARIANT(w->segs[i].seq > w->segs[i - 1].seq);
    for (size_t i = 0; i < w->nsegs; i++) JR__INVARIANT(w->segs[i].tab.len <= w->segs[i].tab.cap);
    if (w->groups.len > 256) return;
    for (size_t i = 0; i < w->groups.cap; i++) {
        if (!w->groups.slots[i].key) continue;
        const jr__walgrp *g = w->groups.slots[i].val;
        JR__INVARIANT(g->id == w->groups.slots[i].key && g->r == NULL);
        JR__INVARIANT(!g->has_compact || g->dropped || g->damaged || g->last_index >= g->cindex);
    }
}
#define WAL_CHECK(w) wal_check(w)
#else
#define WAL_CHECK(w) ((void)0)
#endif

int jr__wal_open(const jr__wal_config *cfg, const jr__wal_replay *replay, jr__wal **out)
{
    *out = NULL;
    if (!cfg || !cfg->dir || !replay) return JR_EINVAL;
    jr__wal *w = jr__calloc(cfg->alloc, 1, sizeof *w);
    if (!w) return JR_ENOMEM;
    w->alloc = cfg->alloc;
    w->vfs = cfg->vfs ? cfg->vfs : jr_vfs_posix();
    w->segment_bytes = cfg->segment_bytes ? cfg->segment_bytes : DEFAULT_SEGMENT;
    w->policy = cfg->sync_policy;
    w->interval = cfg->sync_interval_ns ? cfg->sync_interval_ns : DEFAULT_INTERVAL;
    w->prealloc = cfg->prealloc_bytes;
    jr__map_init(&w->groups, w->alloc);
    jr__buf_init(&w->stage, w->alloc);
    jr__buf_init(&w->scratch, w->alloc);
    jr__buf_init(&w->plain, w->alloc);
    size_t dl = strlen(cfg->dir);
    while (dl > 1 && cfg->dir[dl - 1] == '/') dl--;
    w->dir = jr__malloc(w->alloc, dl + 1);
    if (!w->dir) {
        jr__wal_close(w);
        return JR_ENOMEM;
    }
    memcpy(w->dir, cfg->dir, dl);
    w->dir[dl] = 0;
    if (w->policy != JR_SYNC_ALWAYS && w->policy != JR_SYNC_INTERVAL) {
        jr__wal_close(w);
        return JR_EINVAL;
    }
    if (cfg->key) {
        int rc = jr__atrest_derive(cfg->key, JR__ATREST_WAL, &w->key);
        if (rc) {
            jr__wal_seterr(w, "wal: libsodium failed to initialise");
            jr__wal_close(w);
            return rc;
        }
        w->sealed = 1;
        jr__atrest_nonce_init(&w->nonce);
    }
    int rc = w->vfs->mkdir(w->vfs->ctx, w->dir);
    if (!rc) rc = jr__wal_recover(w, replay);
    /* a new segment per open: it starts with a checkpoint of the recovered state */
    if (!rc) rc = jr__wal_rotate(w, NULL, 0);
    if (rc) {
        jr__wal_close(w);
        return rc;
    }
    w->last_sync = 0;
    jr__wal_gc(w);
    WAL_CHECK(w);
    *out = w;
    return 0;
}

void jr__wal_close(jr__wal *w)
{
    if (!w) return;
    /* Best effort: a zero tail left behind is cut by the next open anyway. */
    if (w->cur && !w->failed && w->cur_alloc > w->cur_size)
        (void)w->vfs->truncate(w->vfs->ctx, w->cur, w->cur_size);
    if (w->cur) w->vfs->close(w->vfs->ctx, w->cur);
    for (size_t i = 0; i < w->groups.cap; i++)
        if (w->groups.slots[i].key) jr__wal_group_free(w, w->groups.slots[i].val);
    jr__map_free(&w->groups);
    for (size_t i = 0; i < w->nsegs; i++) jr__segtab_free(w->alloc, &w->segs[i].tab);
    jr__free(w->alloc, w->segs);
    jr__buf_free(&w->stage);
    jr__buf_free(&w->scratch);
    jr__buf_free(&w->plain);
    jr__atrest_wipe(&w->key);
    jr__free(w->alloc, w->dir);
    jr__free(w->alloc, w);
}

/* ---------------------------------------------------------------------------------------------
 * Staging
 */
static int staged(jr__wal *w, jr__walgrp *g, size_t before)
{
    if (w->stage.err) {
        int rc = w->stage.err;
        w->stage.len = before;
        w->stage.err = 0;
        g->next_gseq--;
        return rc;
    }
    return 0;
}

static jr__walgrp *stage_group(jr__wal *w, uint64_t group, int *rc)
{
    *rc = 0;
    if (w->failed) {
        *rc = JR_EIO;
        return NULL;
    }
    if (group == 0) {
        *rc = JR_EINVAL;
        return NULL;
    }
    jr__walgrp *g = jr__wal_group(w, group, 1);
    if (!g) {
        *rc = JR_ENOMEM;
        return NULL;
    }
    if (g->mark_epoch != w->mark_epoch) { /* its first record since the mark */
        g->mark_epoch = w->mark_epoch;
        g->mark_gseq = g->next_gseq;
    }
    return g;
}

void jr__wal_mark(jr__wal *w)
{
    w->mark_len = w->stage.len;
    w->mark_epoch++;
}

void jr__wal_rollback(jr__wal *w)
{
    if (w->mark_len >= w->stage.len) return;
    /* Each group with a record after the mark saved its numbering at its first one. */
    const uint8_t *p = w->stage.data;
    size_t off = w->mark_len, n = w->stage.len;
    while (off + JR__REC_HDR <= n) {
        const uint8_t *h = p + off;
        jr__walgrp *g = jr__map_get(&w->groups, jr__get_u64(h + 16));
        if (g && g->mark_epoch == w->mark_epoch) g->next_gseq = g->mark_gseq;
        off += JR__REC_HDR + (size_t)jr__get_u32(h + 8);
    }
    w->stage.len = w->mark_len;
    w->mark_epoch++;
}

int jr__wal_append(jr__wal *w, uint64_t group, const jr__entry *e)
{
    int rc;
    if (e->index == 0 || e->type > JR__ENTRY_CONFIG) return JR_EINVAL;
    if (e->len > JR__REC_MAX_LEN - 16 - JR__REC_SEALED_OVERHEAD) return JR_EMSGSIZE;
    jr__walgrp *g = stage_group(w, group, &rc);
    if (!g) return rc;
    size_t before = w->stage.len;
    if (w->sealed)
        jr__atrest_put_entry(&w->stage, group, ++g->next_gseq, e, &w->key, &w->nonce);
    else
        jr__rec_put_entry(&w->stage, group, ++g->next_gseq, e);
    return staged(w, g, before);
}

int jr__wal_hardstate(jr__wal *w, uint64_t group, const jr__hardstate *hs)
{
    int rc;
    jr__walgrp *g = stage_group(w, group, &rc);
    if (!g) return rc;
    size_t before = w->stage.len;
    jr__rec_put_hardstate(&w->stage, group, ++g->next_gseq, hs);
    return staged(w, g, before);
}

int jr__wal_compact(jr__wal *w, uint64_t group, uint64_t index, uint64_t term)
{
    int rc;
    if (index == 0) return JR_EINVAL;
    jr__walgrp *g = stage_group(w, group, &rc);
    if (!g) return rc;
    size_t before = w->stage.len;
    jr__rec_put_compact(&w->stage, group, ++g->next_gseq, index, term);
    return staged(w, g, before);
}

int jr__wal_truncate(jr__wal *w, uint64_t group, uint64_t from)
{
    int rc;
    if (from == 0) return JR_EINVAL;
    if (w->failed) return JR_EIO;
    jr__walgrp *g = jr__wal_group(w, group, 0);
    if (!g || g->next_gseq == 0) return 0; /* nothing of its current incarnation to void */
    if (!(g = stage_group(w, group, &rc))) return rc;
    size_t before = w->stage.len;
    jr__rec_put_truncate(&w->stage, group, ++g->next_gseq, from);
    return staged(w, g, before);
}

int jr__wal_drop(jr__wal *w, uint64_t group)
{
    int rc;
    if (w->failed) return JR_EIO;
    jr__walgrp *g = jr__wal_group(w, group, 0);
    if (!g || (g->next_gseq == 0 && g->gseq == 0)) return 0; /* nothing of it on disk */
    if (!(g = stage_group(w, group, &rc))) return rc;
    size_t before = w->stage.len;
    jr__rec_put_drop(&w->stage, group, ++g->next_gseq);
    if ((rc = staged(w, g, before))) return rc;
    g->next_gseq = 0; /* the next record starts a new incarnation */
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Flush
 */

/* Applies the records just written (b, n bytes, all well formed) to the written state. The
 * segment table has room for them (reserve_written), so nothing here allocates. */
static void apply_written(jr__wal *w, const uint8_t *p, size_t n)
{
    jr__walseg *seg = &w->segs[w->nsegs - 1];
    size_t off = 0;
    while (off + JR__REC_HDR <= n) {
        const uint8_t *h = p + off;
        uint32_t len = jr__get_u32(h + 8);
        uint8_t type = h[12];
        uint64_t id = jr__get_u64(h + 16);
        const uint8_t *q = h + JR__REC_HDR;
        off += JR__REC_HDR + (size_t)len;
        w->stats.records++;
        jr__walgrp *g = jr__map_get(&w->groups, id);
        if (!g) continue; /* cannot happen: staging created it */
        g->gseq = jr__get_u64(h + 24);
        g->dropped = 0;
        switch (type) {
        case JR__REC_ENTRY:
        case JR__REC_SEALED: { /* same term and index fields */
            uint64_t idx = jr__get_u64(q + 8);
            g->last_index = idx;
            (void)jr__segtab_max(w->alloc, &seg->tab, id, idx); /* room reserved */
            break;
        }
        case JR__REC_HARDSTATE:
            g->hs.term = jr__get_u64(q);
            g->hs.vote = jr__get_u64(q + 8);
            g->hs.commit = jr__get_u64(q + 16);
            g->has_hs = 1;
            break;
        case JR__REC_COMPACT: {
            uint64_t idx = jr__get_u64(q);
            if (!g->has_compact || idx > g->cindex) {
                g->cindex = idx;
                g->cterm = jr__get_u64(q + 8);
                g->has_compact = 1;
                w->gc_wanted = 1;
            }
            if (idx > g->last_index) g->last_index = idx;
            break;
        }
        case JR__REC_TRUNCATE: {
            uint64_t from = jr__get_u64(q);
            g->last_index = jr__wal_cut_last(g->last_index, from, g->has_compact, g->cindex);
            /* this segment too: the record voids entries written before it in it */
            jr__wal_seg_clamp(w, w->nsegs, id, from - 1);
            w->gc_wanted = 1;
            break;
        }
        case JR__REC_DROP:
            jr__wal_seg_forget(w, id);
            w->gc_wanted = 1;
            if (g->next_gseq == 0) { /* nothing staged after the drop: forget the group */
                jr__map_del(&w->groups, id);
                jr__wal_group_free(w, g);
            } else {
                uint64_t next = g->next_gseq;
                jr__wal_group_done(w, g);
                memset(g, 0, sizeof *g);
                g->id = id;
                g->next_gseq = next;
                g->dropped = 1;
            }
            break;
        }
    }
}

/* The zeros to write after n bytes of records at the end of the current segment: none while
 * they fit in its zero tail; else enough to keep the tail prealloc bytes long (a whole chunk
 * per extension, so one write and one sync in prealloc bytes change the file's size), never
 * past segment_bytes. */
static size_t zero_pad(const jr__wal *w, size_t n)
{
    uint64_t end = w->cur_size + n;
    if (!w->prealloc || end <= w->cur_alloc || end >= w->segment_bytes) return 0;
    uint64_t want = end + w->prealloc;
    if (want > w->segment_bytes) want = w->segment_bytes;
    return (size_t)(want - end);
}

/* jr__wal_flush, or with nosync (jr__wal_write) the same without the policy's sync of the
 * batch: only a rotation syncs then. */
static int flush(jr__wal *w, uint64_t now, int *durable, int nosync)
{
    int rc;
    int dummy;
    if (!durable) durable = &dummy;
    *durable = 0;
    if (w->failed) return JR_EIO;
    size_t n = w->stage.len;
    int synced = 0;
    if (n == 0) {
        if (nosync) return 0;
        if (w->unsynced && now >= w->last_sync + w->interval) {
            if ((rc = do_sync(w, now))) return rc;
            synced = 1;
        }
    } else {
        /* rotate when full, unless the segment holds nothing but its checkpoint (a batch
         * larger than a segment then gets a segment of its own) */
        if (w->cur_size > w->cur_base && w->cur_size + n > w->segment_bytes) {
            rc = jr__wal_rotate(w, w->stage.data, n);
            if (rc) return rc;
            synced = 1;
            w->last_sync = now;
        } else {
            if (reserve_written(w, &w->segs[w->nsegs - 1].tab, w->stage.data, n))
                return JR_ENOMEM; /* nothing written: the WAL stays usable */
            size_t pad = zero_pad(w, n);
            if (pad && jr__buf_reserve(&w->stage, pad)) {
                w->stage.err = 0;
                pad = 0; /* no memory for the zeros: the segment grows by the records only */
            }
            if (pad) memset(w->stage.data + n, 0, pad);
            rc = w->vfs->pwrite(w->vfs->ctx, w->cur, w->stage.data, n + pad, w->cur_size);
            if (rc) return fail(w, rc, "write");
            w->cur_size += n;
            if (w->cur_size + pad > w->cur_alloc) w->cur_alloc = w->cur_size + pad;
            if (pad) w->stats.extends++;
            w->stats.writes++;
            w->stats.bytes_written += n;
            w->unsynced = 1;
        }
        w->stats.flushes++;
        apply_written(w, w->stage.data, n);
        jr__buf_reset(&w->stage);
        w->mark_len = 0;
        w->mark_epoch++; /* nothing staged is left to roll back */
        if (!synced && !nosync &&
            (w->policy == JR_SYNC_ALWAYS || now >= w->last_sync + w->interval)) {
            if ((rc = do_sync(w, now))) return rc;
            synced = 1;
        }
    }
    if (synced && w->gc_wanted) jr__wal_gc(w);
    WAL_CHECK(w);
    *durable = !w->unsynced;
    return 0;
}

int jr__wal_flush(jr__wal *w, uint64_t now, int *durable)
{
    return flush(w, now, durable, 0);
}

int jr__wal_write(jr__wal *w, uint64_t now, int *durable)
{
    return flush(w, now, durable, 1);
}

jr_file *jr__wal_file(const jr__wal *w, jr_vfs **vfs)
{
    *vfs = w->vfs;
    return w->unsynced ? w->cur : NULL;
}

int jr__wal_synced(jr__wal *w, uint64_t now, int rc)
{
    if (w->failed) return JR_EIO;
    if (rc) return fail(w, rc, "sync");
    w->stats.syncs++;
    w->unsynced = 0;
    w->last_sync = now;
    if (w->gc_wanted) jr__wal_gc(w);
    return 0;
}

int jr__wal_sync(jr__wal *w, uint64_t now)
{
    if (w->failed) return JR_EIO;
    if (!w->unsynced) return 0;
    int rc = do_sync(w, now);
    if (rc) return rc;
    if (w->gc_wanted) jr__wal_gc(w);
    return 0;
}

int jr__wal_failed(const jr__wal *w)
{
    return w->failed;
}

uint64_t jr__wal_deadline(const jr__wal *w)
{
    if (w->failed || !w->unsynced) return UINT64_MAX;
    return w->last_sync + w->interval;
}

size_t jr__wal_pending(const jr__wal *w)
{
    return w->stage.len;
}

const char *jr__wal_errmsg(const jr__wal *w)
{
    return w->errmsg;
}

void jr__wal_stats_get(const jr__wal *w, jr__wal_stats *out)
{
    *out = w->stats;
    out->segments = w->nsegs;
}
