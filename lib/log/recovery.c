/*
 * recovery — jr__wal_open's scan of the WAL directory and replay (wal.h).
 *
 * Pass 1 reads every segment in order, verifies every record, and rebuilds each group's state:
 * record numbers (gseq), last index, hard state, compaction marker, truncations (by entry
 * records that replace a suffix and by TRUNCATE records), and which segment holds which
 * group's live entries. A region that does not verify is handled in one of two
 * ways:
 *  - at the end of the last segment, with no valid record after it: a torn tail, the unsynced
 *    part of the last write; the file is cut there (a last segment with no valid record at all
 *    is removed);
 *  - anywhere else (including a missing segment number): damage. The region is skipped and
 *    recovery resynchronises on the next record that verifies. Which groups lost records is
 *    decided by evidence after the region: a group's next record or the next checkpoint must
 *    continue its record count exactly (gseq), else the group is damaged; a group with no
 *    evidence after the last damaged region is damaged too (it may have written there); a
 *    header that still verifies names its group directly.
 * Pass 2 reads the segments again and replays the surviving log (see wal.h for the order).
 * Nothing is trusted before its checksum verifies; no read goes beyond what the file holds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/wal_int.h"
#include "util/alloc.h"

#define MAX_OFF (((uint64_t)1 << 40) - 1)

typedef struct region {
    size_t ord;
    uint64_t start, end; /* byte offsets in segment ord; start == end for missing segments */
    uint64_t missing_from, missing_to; /* seqs of missing segments, or 0 */
    int benign;                        /* lost nothing but a segment header or a checkpoint */
    int exact; /* lost exactly one record whose header (and so its group) verifies */
} region;

typedef struct rctx {
    jr__wal *w;
    const jr__wal_replay *rp;
    region *rg;
    size_t nrg, caprg;
    uint64_t ncp;
    char path[4096];
} rctx;

static const char *seg_name(rctx *c, size_t ord)
{
    if (jr__seg_path(c->path, sizeof c->path, c->w->dir, c->w->segs[ord].seq)) return "?";
    return c->path;
}

static uint64_t region_end_pos(const region *r)
{
    return jr__wal_pos(r->ord, r->end);
}

static int add_region(rctx *c, size_t ord, uint64_t start, uint64_t end, uint64_t mfrom,
                      uint64_t mto)
{
    if (c->nrg == c->caprg) {
        size_t nc = c->caprg ? c->caprg * 2 : 8;
        region *r = jr__realloc(c->w->alloc, c->rg, nc * sizeof *r);
        if (!r) return JR_ENOMEM;
        c->rg = r;
        c->caprg = nc;
    }
    c->rg[c->nrg++] = (region){ord, start, end, mfrom, mto, 0, 0};
    return 0;
}

/* Describes the latest damaged region ending at or before pos into buf. */
static void describe(rctx *c, uint64_t pos, char *buf, size_t cap)
{
    const region *best = NULL;
    for (size_t i = 0; i < c->nrg; i++)
        if (!c->rg[i].benign && region_end_pos(&c->rg[i]) <= pos) best = &c->rg[i];
    if (!best) {
        size_t ord = (size_t)(pos >> 40);
        snprintf(buf, cap, "records missing before %s offset %" PRIu64,
                 ord < c->w->nsegs ? seg_name(c, ord) : "?", pos & MAX_OFF);
    } else if (best->missing_from) {
        snprintf(buf, cap, "segment(s) %016" PRIx64 "..%016" PRIx64 ".wal missing before %s",
                 best->missing_from, best->missing_to, seg_name(c, best->ord));
    } else {
        snprintf(buf, cap, "damaged data in %s at offset %" PRIu64 " (%" PRIu64 " bytes)",
                 seg_name(c, best->ord), best->start, best->end - best->start);
    }
}

/* Marks g damaged (first cause wins); entries at or after cut are not replayed. */
static int damage(rctx *c, jr__walgrp *g, uint64_t cut, uint64_t at, const char *what)
{
    char where[4600], msg[4800];
    if (cut < g->r->cut) g->r->cut = cut;
    if (g->damaged && g->r->why) return 0;
    g->damaged = 1;
    describe(c, at, where, sizeof where);
    snprintf(msg, sizeof msg, "wal: group %" PRIu64 " %s: %s", g->id, what, where);
    jr__free(c->w->alloc, g->r->why);
    g->r->why = jr__strdup(c->w->alloc, msg);
    return g->r->why ? 0 : JR_ENOMEM;
}

static void reset_group(jr__wal *w, jr__walgrp *g)
{
    jr__wal_seg_forget(w, g->id);
    g->gseq = 0;
    g->last_index = 0;
    g->has_hs = g->has_compact = 0;
    memset(&g->hs, 0, sizeof g->hs);
    g->cindex = g->cterm = 0;
    g->damaged = 0;
    g->r->cut = UINT64_MAX;
    g->r->nev = 0;
    g->r->emitted = 0;
    jr__free(w->alloc, g->r->why);
    g->r->why = NULL;
}

static int push_event(jr__wal *w, jr__walgrp *g, uint64_t pos, uint64_t idx)
{
    if (g->r->nev == g->r->capev) {
        size_t nc = g->r->capev ? g->r->capev * 2 : 4;
        jr__walev *e = jr__realloc(w->alloc, g->r->ev, nc * sizeof *e);
        if (!e) return JR_ENOMEM;
        g->r->ev = e;
        g->r->capev = nc;
    }
    g->r->ev[g->r->nev++] = (jr__walev){pos, idx};
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Pass 1
 */

/* Takes a hard state g wrote at pos. Past g's damage cut its term and vote are taken (they only
 * grow, and the vote must be kept), but not its commit index: the entries replayed are those
 * written before the cut, and one written since in the lost region (after a truncation that was
 * lost with it) may hold another entry at an index the later commit covers. Taking it would make
 * a stale entry look committed, and a follower refuses to let its leader replace committed
 * entries, so the replica could never be repaired (jetraft-sim seed 3957). The commit index as
 * of the cut covers only entries that were committed when they were replayed here. */
static void take_hardstate(jr__walgrp *g, const jr__hardstate *hs, uint64_t pos)
{
    uint64_t commit = g->has_hs ? g->hs.commit : 0;
    g->hs = *hs;
    if (pos >= g->r->cut && g->hs.commit > commit) g->hs.commit = commit;
    g->has_hs = 1;
}
static int on_checkpoint(rctx *c, const jr__rec *r, uint64_t pos)
{
    jr__wal *w = c->w;
    int rc;
    c->ncp++;
    for (uint32_t i = 0; i < r->ncp; i++) {
        jr__rec_cpitem it;
        jr__rec_cpitem_at(r, i, &it);
        jr__walgrp *g = jr__wal_group(w, it.group, 1);
        if (!g) return JR_ENOMEM;
        g->r->cpmark = c->ncp;
        if (!g->r->known) {
            /* first sight: the checkpoint is the baseline (older records were deleted) */
            g->r->known = 1;
            g->gseq = it.gseq;
            g->last_index = it.last_index;
            g->r->floor = it.last_index;
        } else if (g->gseq != it.gseq ||
                   (!g->damaged && !g->r->dropped_seen && g->last_index != it.last_index)) {
            if ((rc = damage(c, g, pos, pos, "lost records")) != 0) return rc;
            g->gseq = it.gseq;
        }
        g->dropped = 0;
        g->r->dropped_seen = 0;
        if (it.flags & JR__CP_HAS_HS) take_hardstate(g, &it.hs, pos);
        if ((it.flags & JR__CP_HAS_COMPACT) && (!g->has_compact || it.cindex > g->cindex)) {
            g->cindex = it.cindex;
            g->cterm = it.cterm;
            g->has_compact = 1;
        }
        if ((it.flags & JR__CP_DAMAGED) &&
            (rc = damage(c, g, g->damaged ? UINT64_MAX : pos, pos, "was damaged earlier")) != 0)
            return rc;
        g->r->evidence = pos;
    }
    /* a live group the checkpoint does not list was dropped (its drop record is lost) */
    for (size_t i = 0; i < w->groups.cap; i++) {
        jr__walgrp *g = w->groups.slots[i].val;
        if (!w->groups.slots[i].key || g->r->cpmark == c->ncp || g->dropped || !g->r->known)
            continue;
        reset_group(w, g);
        g->dropped = g->r->dropped_seen = 1;
        g->r->start = pos;
        g->r->evidence = pos;
    }
    return 0;
}

static int on_record(rctx *c, size_t ord, const jr__rec *r, uint64_t pos)
{
    jr__wal *w = c->w;
    int rc;
    if (r->type == JR__REC_CHECKPOINT) return on_checkpoint(c, r, pos);
    jr__walgrp *g = jr__wal_group(w, r->group, 1);
    if (!g) return JR_ENOMEM;
    if (!g->r->known && r->gseq != 1) {
        if ((rc = damage(c, g, pos, pos, "has no record before this one")) != 0) return rc;
    } else if (g->r->known && r->gseq != g->gseq + 1) {
        if ((rc = damage(c, g, pos, pos, "lost records")) != 0) return rc;
    }
    g->r->known = 1;
    g->gseq = r->gseq;
    g->r->evidence = pos;
    g->dropped = 0;
    g->r->dropped_seen = 0;
    switch (r->type) {
    case JR__REC_ENTRY: {
        uint64_t idx = r->e.index;
        if (pos >= g->r->cut) break;
        if (g->has_compact && idx <= g->cindex) break; /* behind a snapshot: garbage */
        if (idx > g->last_index + 1) {
            if ((rc = damage(c, g, pos, pos, "has a gap in its log")) != 0) return rc;
            break;
        }
        if (idx <= g->last_index && (rc = push_event(w, g, pos, idx)) != 0) return rc;
        g->last_index = idx;
        if ((rc = jr__segtab_max(w->alloc, &w->segs[ord].tab, g->id, idx)) != 0) return rc;
        break;
    }
    case JR__REC_HARDSTATE:
        take_hardstate(g, &r->hs, pos);
        break;
    case JR__REC_COMPACT:
        if (!g->has_compact || r->cindex > g->cindex) {
            g->cindex = r->cindex;
            g->cterm = r->cterm;
            g->has_compact = 1;
        }
        if (r->cindex > g->last_index) g->last_index = r->cindex;
        break;
    case JR__REC_TRUNCATE: {
        /* Applied even after a damage cut: it only voids entries, and they are void. */
        uint64_t from = r->tfrom;
        if (from <= g->last_index && (rc = push_event(w, g, pos, from)) != 0) return rc;
        g->last_index = jr__wal_cut_last(g->last_index, from, g->has_compact, g->cindex);
        if (g->r->floor >= from) g->r->floor = from - 1; /* those entries are not needed any more */
        jr__wal_seg_clamp(w, ord + 1, g->id, from - 1);
        break;
    }
    case JR__REC_DROP:
        reset_group(w, g);
        g->r->floor = 0;
        g->dropped = g->r->dropped_seen = 1;
        g->r->start = pos;
        break;
    }
    return 0;
}

static const uint32_t *keycheck(const jr__wal *w)
{
    return w->sealed ? &w->key.check : NULL;
}

/* Why segment `path` was refused: rc is JR_EVERSION or JR_EAUTH. */
static void key_refused(jr__wal *w, const char *path, int rc)
{
    if (rc == JR_EVERSION)
        jr__wal_seterr(w, "wal: %s has an unsupported format version", path);
    else if (w->sealed)
        jr__wal_seterr(w, "wal: %s is not encrypted under this key (another key, or none)", path);
    else
        jr__wal_seterr(w, "wal: %s is encrypted and no key was given", path);
}

/* Before anything is changed (a torn tail cut, an empty segment removed): every segment whose
 * header verifies must be of this WAL's kind and key, else the open is refused (JR_EAUTH, or
 * JR_EVERSION). Headers that do not verify are left to pass 1. */
static int check_keys(rctx *c, const uint64_t *seqs, size_t n)
{
    jr__wal *w = c->w;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        if (jr__seg_path(path, sizeof path, w->dir, seqs[i]) != 0) return JR_EINVAL;
        jr_file *f = NULL;
        int rc = w->vfs->open(w->vfs->ctx, path, JR_O_READ, &f);
        if (rc) {
            jr__wal_seterr(w, "wal: cannot read %s: %s", path, jr_strerror(rc));
            return rc;
        }
        uint8_t h[JR__SEG_HDR];
        size_t got = 0;
        rc = w->vfs->pread(w->vfs->ctx, f, h, sizeof h, 0, &got);
        w->vfs->close(w->vfs->ctx, f);
        if (rc) {
            jr__wal_seterr(w, "wal: cannot read %s: %s", path, jr_strerror(rc));
            return rc;
        }
        rc = jr__seg_header_check(h, got, seqs[i], keycheck(w));
        if (rc == JR_EAUTH || rc == JR_EVERSION) {
            key_refused(w, path, rc);
            return rc;
        }
    }
    return 0;
}

/* Reads and verifies the record at off. 0 and *total, or JR_ECORRUPT; other errors are I/O. */
static int read_record(jr__segrd *rd, uint64_t off, jr__rec *r, uint64_t *total)
{
    uint64_t group;
    const uint8_t *p = jr__segrd_at(rd, off, JR__REC_HDR, NULL);
    if (!p) return rd->err ? rd->err : JR_ECORRUPT;
    if (!jr__rec_header_ok(p, rd->size - off, &group, total)) return JR_ECORRUPT;
    p = jr__segrd_at(rd, off, *total, NULL);
    if (!p) return rd->err ? rd->err : JR_ECORRUPT;
    return jr__rec_decode(p, *total, r);
}

/* The first offset after `from` where a record verifies, or UINT64_MAX. */
static int resync(jr__segrd *rd, uint64_t from, uint64_t *found)
{
    jr__rec r;
    uint64_t total, group;
    *found = UINT64_MAX;
    for (uint64_t p = from; p + JR__REC_HDR <= rd->size; p++) {
        uint64_t avail;
        const uint8_t *h = jr__segrd_at(rd, p, JR__REC_HDR, &avail);
        if (!h) return rd->err ? rd->err : 0;
        /* cheap filter before the header checksum */
        if (h[12] < JR__REC_ENTRY || h[12] > JR__REC_TYPE_MAX) continue;
        if (!jr__rec_header_ok(h, rd->size - p, &group, &total)) continue;
        int rc = read_record(rd, p, &r, &total);
        if (rc == 0) {
            *found = p;
            return 0;
        }
        if (rc != JR_ECORRUPT) return rc;
    }
    return 0;
}

/* Scans segment ord. *tail gets the offset of a torn tail (UINT64_MAX if none) and *valid
 * whether any record verified. */
static int scan(rctx *c, size_t ord, jr__segrd *rd, int last, uint64_t *tail, int *valid)
{
    uint64_t off = 0;
    int rc;
    *tail = UINT64_MAX;
    *valid = 0;
    const uint8_t *h = jr__segrd_at(rd, 0, JR__SEG_HDR, NULL);
    if (!h && rd->err) return rd->err;
    rc =
        h ? jr__seg_header_check(h, JR__SEG_HDR, c->w->segs[ord].seq, keycheck(c->w)) : JR_ECORRUPT;
    if (rc == JR_EVERSION || rc == JR_EAUTH) {
        key_refused(c->w, seg_name(c, ord), rc);
        return rc;
    }
    int bad = rc != 0;
    if (!bad) off = JR__SEG_HDR;
    while (off < rd->size) {
        jr__rec r;
        uint64_t total = 0, next;
        if (!bad) {
            rc = read_record(rd, off, &r, &total);
            if (rc == 0) {
                *valid = 1;
                if ((rc = on_record(c, ord, &r, jr__wal_pos(ord, off))) != 0) return rc;
                off += total;
                continue;
            }
            if (rc != JR_ECORRUPT) return rc;
        }
        bad = 0;
        /* Facts from the header at off, if it still verifies (copied: p may not outlive the
         * reads below). */
        uint64_t group = 0, t2 = 0, hseq = 0;
        const uint8_t *p = jr__segrd_at(rd, off, JR__REC_HDR, NULL);
        int hdr_ok = p && jr__rec_header_ok(p, rd->size - off, &group, &t2);
        if (hdr_ok) hseq = jr__get_u64(p + 24);
        if (rd->err) return rd->err;
        /* a damaged payload under a header that verifies: try the record after it first */
        next = UINT64_MAX;
        if (hdr_ok) {
            jr__rec r2;
            uint64_t t3;
            if (off + t2 == rd->size) {
                next = last ? UINT64_MAX : off + t2; /* at the end: a torn tail if last */
            } else {
                int rc2 = read_record(rd, off + t2, &r2, &t3);
                if (rc2 == 0)
                    next = off + t2;
                else if (rc2 != JR_ECORRUPT)
                    return rc2;
            }
        }
        if (next == UINT64_MAX && (rc = resync(rd, off + 1, &next)) != 0) return rc;
        if (next == UINT64_MAX) {
            if (last) {
                *tail = off;
                return 0;
            }
            next = rd->size;
        }
        /* Benign: only a segment header, or only a checkpoint (its header verifies and the
         * next record starts right after it) was lost. Neither holds anything that is not also
         * elsewhere, so no group becomes suspect; pass 2 still needs to skip the bytes. */
        int benign =
            (off == 0 && next == JR__SEG_HDR) || (hdr_ok && group == 0 && next == off + t2);
        if ((rc = add_region(c, ord, off, next, 0, 0)) != 0) return rc;
        c->rg[c->nrg - 1].benign = benign;
        c->rg[c->nrg - 1].exact = hdr_ok && group != 0 && next == off + t2;
        if (hdr_ok && group != 0) {
            /* the header verifies, so this group certainly lost a record here */
            jr__walgrp *g = jr__wal_group(c->w, group, 1);
            if (!g) return JR_ENOMEM;
            if ((rc = damage(c, g, jr__wal_pos(ord, off), jr__wal_pos(ord, next),
                             "lost a record")) != 0)
                return rc;
            g->r->known = 1;
            if (g->gseq < hseq) g->gseq = hseq;
        }
        off = next;
    }
    return 0;
}

static int open_segment(rctx *c, size_t ord, jr_file **f, uint64_t *size)
{
    jr__wal *w = c->w;
    const char *path = seg_name(c, ord);
    int rc = w->vfs->open(w->vfs->ctx, path, JR_O_READ, f);
    if (!rc) rc = w->vfs->size(w->vfs->ctx, *f, size);
    if (!rc && *size > MAX_OFF) rc = JR_ECORRUPT;
    if (rc) {
        jr__wal_seterr(w, "wal: cannot read %s: %s", path, jr_strerror(rc));
        if (*f) w->vfs->close(w->vfs->ctx, *f);
        *f = NULL;
    }
    return rc;
}

/* Handles the end of the last segment: cut a torn tail, or remove a segment with nothing.
 * Removal closes the file first (*f becomes NULL, whatever the outcome) and drops the segment
 * from w->segs; *removed says whether that happened. */
static int fix_tail(rctx *c, size_t ord, jr_file **f, uint64_t tail, int valid, int *removed)
{
    jr__wal *w = c->w;
    int rc;
    *removed = 0;
    if (!valid) {
        const char *path = seg_name(c, ord);
        w->vfs->close(w->vfs->ctx, *f);
        *f = NULL;
        rc = w->vfs->remove(w->vfs->ctx, path);
        if (rc && rc != JR_ENOTFOUND) {
            jr__wal_seterr(w, "wal: cannot remove the empty torn segment %s: %s", path,
                           jr_strerror(rc));
            return rc;
        }
        jr__segtab_free(w->alloc, &w->segs[ord].tab);
        w->nsegs--;
        while (c->nrg && c->rg[c->nrg - 1].ord == ord) c->nrg--; /* its missing-seq gap */
        *removed = 1;
        return 0;
    }
    rc = w->vfs->truncate(w->vfs->ctx, *f, tail);
    if (!rc) rc = w->vfs->sync(w->vfs->ctx, *f);
    if (rc)
        jr__wal_seterr(w, "wal: cannot cut the torn tail of %s: %s", seg_name(c, ord),
                       jr_strerror(rc));
    return rc;
}

static int pass1(rctx *c, const uint64_t *seqs, size_t n)
{
    jr__wal *w = c->w;
    int rc;
    for (size_t i = 0; i < n; i++) {
        size_t ord = w->nsegs;
        if ((rc = jr__wal_seg_push(w, seqs[i])) != 0) return rc;
        if (ord > 0 && seqs[i] != w->segs[ord - 1].seq + 1 &&
            (rc = add_region(c, ord, 0, 0, w->segs[ord - 1].seq + 1, seqs[i] - 1)) != 0)
            return rc;
        jr_file *f = NULL;
        uint64_t size = 0, tail;
        int valid;
        if ((rc = open_segment(c, ord, &f, &size)) != 0) return rc;
        jr__segrd rd;
        jr__segrd_init(&rd, w->vfs, f, size, w->alloc);
        rc = scan(c, ord, &rd, i + 1 == n, &tail, &valid);
        jr__segrd_free(&rd);
        if (rc == 0 && tail != UINT64_MAX) {
            int removed;
            rc = fix_tail(c, ord, &f, tail, valid, &removed);
            if (rc == 0 && removed) continue;
        }
        /* What was read may so far live only in the page cache (a restart, not a crash, under
         * JR_SYNC_INTERVAL): make it durable before anything (a vote, segment deletion)
         * depends on it. */
        if (rc == 0 && (rc = w->vfs->sync(w->vfs->ctx, f)) != 0)
            jr__wal_seterr(w, "wal: cannot sync %s: %s", seg_name(c, ord), jr_strerror(rc));
        if (f) w->vfs->close(w->vfs->ctx, f);
        if (rc) {
            if (rc == JR_ENOMEM) jr__wal_seterr(w, "wal: out of memory during recovery");
            return rc;
        }
    }
    /* Groups with no evidence after the last damaged region whose owner is unknown may have
     * lost records there; a
     * baseline checkpoint that promised entries we never saw means they are lost too. */
    uint64_t last_end = 0;
    for (size_t i = 0; i < c->nrg; i++)
        if (!c->rg[i].benign && !c->rg[i].exact && region_end_pos(&c->rg[i]) > last_end)
            last_end = region_end_pos(&c->rg[i]);
    for (size_t i = 0; i < w->groups.cap; i++) {
        jr__walgrp *g = w->groups.slots[i].val;
        if (!w->groups.slots[i].key || g->dropped) continue;
        if (last_end && g->r->evidence < last_end &&
            (rc = damage(c, g, UINT64_MAX, last_end, "may have lost records")) != 0)
            return rc;
        /* entries (marker, floor] are gone: nothing after them can be replayed contiguously */
        if (g->r->floor > (g->has_compact ? g->cindex : 0) &&
            (rc = damage(c, g, 0, g->r->evidence, "lost entries")) != 0)
            return rc;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Pass 2
 */
static int cmp_grp(const void *a, const void *b)
{
    uint64_t x = (*(jr__walgrp *const *)a)->id, y = (*(jr__walgrp *const *)b)->id;
    return x < y ? -1 : x > y;
}

static int replay_entry(rctx *c, const jr__rec *r, uint64_t pos)
{
    jr__walgrp *g = jr__map_get(&c->w->groups, r->group);
    uint64_t idx = r->e.index;
    if (!g || g->dropped || pos < g->r->start || pos >= g->r->cut) return 0;
    if (g->has_compact && idx <= g->cindex) return 0;
    while (g->r->evk < g->r->nev && g->r->ev[g->r->evk].pos <= pos) g->r->evk++;
    if (g->r->evk < g->r->nev && g->r->ev[g->r->evk].idx <= idx) return 0; /* superseded later */
    uint64_t want = g->r->emitted ? g->r->emitted + 1 : (g->has_compact ? g->cindex + 1 : 1);
    if (idx != want) {
        /* cannot happen if pass 1 is right; never hand out a log with a hole */
        char msg[4400];
        g->r->cut = pos;
        g->damaged = 1;
        snprintf(msg, sizeof msg,
                 "wal: group %" PRIu64 " has a hole before entry %" PRIu64
                 " in %s at offset %" PRIu64,
                 g->id, idx, seg_name(c, (size_t)(pos >> 40)), pos & MAX_OFF);
        return c->rp->on_damaged ? c->rp->on_damaged(c->rp->ctx, g->id, msg) : 0;
    }
    g->r->emitted = idx;
    if (!c->rp->on_entry) return 0;
    if (!r->sealed) return c->rp->on_entry(c->rp->ctx, g->id, &r->e);
    /* a sealed entry: its checksum verified, so a tag that does not is no damage but a forgery
     * (or a record sealed under another key): refuse the open, change nothing */
    jr__rec open = *r;
    int rc = c->w->sealed
                 ? jr__atrest_open_entry(&c->w->key, r->payload - JR__REC_HDR, &open, &c->w->plain)
                 : JR_EAUTH;
    if (rc == JR_EAUTH)
        jr__wal_seterr(c->w,
                       "wal: entry %" PRIu64 " of group %" PRIu64 " in %s at offset %" PRIu64
                       " does not authenticate under this key",
                       idx, g->id, seg_name(c, (size_t)(pos >> 40)), pos & MAX_OFF);
    if (rc) return rc;
    rc = c->rp->on_entry(c->rp->ctx, g->id, &open.e);
    jr__buf_release(&c->w->plain, JR__SCRATCH_KEEP);
    return rc;
}

/* A truncation of a live group, at its place in the log (pass 1 already kept the entries it
 * voids from being replayed; this is for consumers that apply raw order themselves). */
static int replay_truncate(rctx *c, const jr__rec *r, uint64_t pos)
{
    jr__walgrp *g = jr__map_get(&c->w->groups, r->group);
    if (!g || g->dropped || pos < g->r->start || !c->rp->on_truncate) return 0;
    return c->rp->on_truncate(c->rp->ctx, g->id, r->tfrom);
}

static int replay_segment(rctx *c, size_t ord)
{
    jr__wal *w = c->w;
    jr_file *f = NULL;
    uint64_t size = 0, off = 0;
    int rc = open_segment(c, ord, &f, &size);
    if (rc) return rc;
    jr__segrd rd;
    jr__segrd_init(&rd, w->vfs, f, size, w->alloc);
    const uint8_t *h = jr__segrd_at(&rd, 0, JR__SEG_HDR, NULL);
    if (h && jr__seg_header_check(h, JR__SEG_HDR, w->segs[ord].seq, keycheck(w)) == 0)
        off = JR__SEG_HDR;
    size_t k = 0;
    while (k < c->nrg && c->rg[k].ord < ord) k++;
    while (off < size && !rc) {
        jr__rec r;
        uint64_t total;
        rc = read_record(&rd, off, &r, &total);
        if (rc == 0) {
            if (r.type == JR__REC_ENTRY)
                rc = replay_entry(c, &r, jr__wal_pos(ord, off));
            else if (r.type == JR__REC_TRUNCATE)
                rc = replay_truncate(c, &r, jr__wal_pos(ord, off));
            off += total;
            continue;
        }
        if (rc != JR_ECORRUPT) break;
        rc = 0;
        while (k < c->nrg && c->rg[k].ord == ord &&
               (c->rg[k].start < off || c->rg[k].end <= c->rg[k].start))
            k++;
        if (k < c->nrg && c->rg[k].ord == ord && c->rg[k].start == off)
            off = c->rg[k].end;
        else
            break; /* cannot happen: pass 1 classified every byte */
    }
    jr__segrd_free(&rd);
    w->vfs->close(w->vfs->ctx, f);
    return rc;
}

static int pass2(rctx *c)
{
    jr__wal *w = c->w;
    const jr__wal_replay *rp = c->rp;
    int rc = 0;
    size_t n = 0;
    jr__walgrp **v = jr__calloc(w->alloc, w->groups.len ? w->groups.len : 1, sizeof *v);
    if (!v) return JR_ENOMEM;
    for (size_t i = 0; i < w->groups.cap; i++)
        if (w->groups.slots[i].key) v[n++] = w->groups.slots[i].val;
    qsort(v, n, sizeof *v, cmp_grp);
    for (size_t i = 0; i < n && !rc; i++) {
        jr__walgrp *g = v[i];
        /* suffix minima: ev[k].idx becomes the smallest idx of events k.. (by position) */
        for (size_t k = g->r->nev; k-- > 1;)
            if (g->r->ev[k].idx < g->r->ev[k - 1].idx) g->r->ev[k - 1].idx = g->r->ev[k].idx;
        if (g->damaged && !g->dropped && rp->on_damaged)
            rc = rp->on_damaged(rp->ctx, g->id, g->r->why ? g->r->why : "wal: damaged");
    }
    for (size_t i = 0; i < n && !rc; i++) {
        jr__walgrp *g = v[i];
        if (g->dropped) {
            if (g->r->dropped_seen && rp->on_drop) rc = rp->on_drop(rp->ctx, g->id);
            continue;
        }
        if (g->has_compact && rp->on_compact)
            rc = rp->on_compact(rp->ctx, g->id, g->cindex, g->cterm);
        if (!rc && g->has_hs && rp->on_hardstate) rc = rp->on_hardstate(rp->ctx, g->id, &g->hs);
    }
    jr__free(w->alloc, v);
    for (size_t ord = 0; ord < w->nsegs && !rc; ord++) rc = replay_segment(c, ord);
    return rc;
}

/* Leaves only live groups, with staging continuing their record numbers. */
static void settle(jr__wal *w)
{
    for (size_t i = 0; i < w->groups.cap;) {
        jr__walgrp *g = w->groups.slots[i].val;
        if (w->groups.slots[i].key && (g->dropped || !g->r->known)) {
            jr__map_del(&w->groups, g->id); /* backward shift may move another key into i */
            jr__wal_seg_forget(w, g->id);
            jr__wal_group_free(w, g);
            continue;
        }
        if (w->groups.slots[i].key) {
            jr__free(w->alloc, g->r->ev);
            g->r->ev = NULL;
            g->r->nev = g->r->capev = g->r->evk = 0;
            jr__free(w->alloc, g->r->why);
            g->r->why = NULL;
            g->next_gseq = g->gseq;
            g->r->cut = UINT64_MAX;
            g->r->evidence = g->r->start = g->r->emitted = 0;
        }
        i++;
    }
}

int jr__wal_recover(jr__wal *w, const jr__wal_replay *rp)
{
    uint64_t *seqs = NULL;
    size_t n = 0;
    rctx c;
    memset(&c, 0, sizeof c);
    c.w = w;
    c.rp = rp;
    int rc = jr__seg_list(w->vfs, w->dir, w->alloc, &seqs, &n);
    if (rc) {
        jr__wal_seterr(w, "wal: cannot list %s: %s", w->dir, jr_strerror(rc));
        return rc;
    }
    w->recovering = 1;
    rc = check_keys(&c, seqs, n);
    if (!rc) rc = pass1(&c, seqs, n);
    jr__free(w->alloc, seqs);
    if (!rc) rc = pass2(&c);
    jr__free(w->alloc, c.rg);
    if (!rc) settle(w);
    /* the scan's per-group state is not needed any more */
    w->recovering = 0;
    for (size_t i = 0; i < w->groups.cap; i++)
        if (w->groups.slots[i].key) jr__wal_group_done(w, w->groups.slots[i].val);
    return rc;
}
