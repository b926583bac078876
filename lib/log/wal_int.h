/*
 * wal_int — the WAL's internal state, shared by wal.c (staging, flush, rotation), recovery.c
 * (open-time scan and replay) and gc.c (segment tables and deletion).
 *
 * Invariants:
 *  - segs[0..nsegs) are the segment files on disk, ascending by seq (consecutive unless
 *    recovery found one missing, which damages the groups it held); the last one is the
 *    current segment (open as w->cur, w->cur_size bytes, all of them written, followed by
 *    zeros up to w->cur_alloc when preallocating); every older segment ends at its last record;
 *  - a group that is neither dropped nor damaged has last_index >= cindex when it has a
 *    compaction marker;
 *  - each group's "written" state (gseq, last_index, hs, compaction, damaged, dropped) is the
 *    result of every record written so far, in log order; next_gseq also counts staged ones;
 *  - segs[i].tab maps each live group with entries in segment i to the largest index among
 *    them that no later TRUNCATE has voided; a segment may be deleted once it is the oldest,
 *    not the current one, and every group in its table has a durable compaction index at or
 *    beyond that largest index;
 *  - a group's last_index is the last index of its log as the records so far leave it: an
 *    entry sets it, a compaction raises it to the marker, a truncation lowers it
 *    (jr__wal_cut_last); the checkpoint carries it and recovery recomputes it identically;
 *  - after a write or sync error, failed != 0 and nothing is written again.
 */
#ifndef JR_LOG_WAL_INT_H
#define JR_LOG_WAL_INT_H

#include "log/record.h"
#include "log/atrest.h"
#include "log/segment.h"
#include "log/wal.h"
#include "util/buf.h"
#include "util/map.h"

/* group id -> largest entry index, open addressing (group ids are non-zero). */
typedef struct jr__segtab {
    uint64_t *key;
    uint64_t *val;
    size_t cap, len;
} jr__segtab;

typedef struct jr__walseg {
    uint64_t seq;
    jr__segtab tab;
} jr__walseg;

/* A truncation seen during recovery: an entry or TRUNCATE record that voided index >= idx. */
typedef struct jr__walev {
    uint64_t pos, idx;
} jr__walev;

typedef struct jr__walgrp {
    uint64_t id;
    uint64_t next_gseq; /* gseq of the last staged record of the current incarnation */
    uint64_t gseq;      /* written */
    uint64_t last_index;
    jr__hardstate hs;
    uint64_t cindex, cterm;
    uint8_t has_hs, has_compact, damaged, dropped;
    uint64_t mark_epoch;  /* the stage mark at this group's first record staged after it */
    uint64_t mark_gseq;   /* next_gseq at that point (what jr__wal_rollback restores) */
    struct jr__walrec *r; /* recovery's working state; NULL once the WAL is open */
} jr__walgrp;

/* A group's state while recovery scans the WAL (positions are jr__wal_pos values); freed when
 * jr__wal_open returns, so a group costs only jr__walgrp afterwards. */
typedef struct jr__walrec {
    uint8_t known;        /* seen in a record or checkpoint */
    uint8_t dropped_seen; /* its last record was a drop */
    uint64_t evidence;    /* position of the last record/checkpoint that vouched for it */
    uint64_t start;       /* position of its last drop (records before belong to another life) */
    uint64_t cut;         /* entries at or after this position are not replayed */
    uint64_t emitted;     /* pass 2: last index replayed */
    uint64_t floor;       /* entries up to here were only vouched for by a checkpoint (a
                           * truncation lowers it: the entries it voids are not needed) */
    uint64_t cpmark;      /* checkpoint number that listed it */
    jr__walev *ev;
    size_t nev, capev, evk;
    char *why; /* damage message */
} jr__walrec;

struct jr__wal {
    int recovering; /* inside jr__wal_recover: groups get their jr__walrec */
    jr_vfs *vfs;
    const jr_allocator *alloc;
    char *dir;
    uint64_t segment_bytes;
    int policy;
    uint64_t interval;

    jr__map groups; /* id -> jr__walgrp* */
    jr__walseg *segs;
    size_t nsegs, capsegs;
    jr_file *cur;
    uint64_t cur_size;
    uint64_t cur_base;  /* size of the current segment's header + checkpoint */
    uint64_t cur_alloc; /* bytes of the current segment on disk: cur_size + its zero tail */
    uint64_t prealloc;  /* jr__wal_config.prealloc_bytes */

    jr__buf stage;
    size_t mark_len;     /* stage length at the last jr__wal_mark */
    uint64_t mark_epoch; /* counts jr__wal_mark calls */
    jr__buf scratch;
    int sealed;             /* encrypted at rest: segments version 2, entries SEALED (atrest.h) */
    jr__atrest_key key;     /* the WAL key, when sealed */
    jr__atrest_nonce nonce; /* record nonces: a fresh random prefix at every open */
    jr__buf plain;          /* recovery: the opened data of one sealed entry */
    int failed;             /* first write/sync error, or 0 */
    int unsynced;           /* bytes written since the last sync */
    uint64_t last_sync;
    int gc_wanted; /* a compaction or drop was written since the last GC */
    jr__wal_stats stats;
    char errmsg[512];
};

/* Position of byte off in the segment at index ord of segs (orders records across segments). */
static inline uint64_t jr__wal_pos(size_t ord, uint64_t off)
{
    return (uint64_t)ord << 40 | off;
}

/* A group's last index after TRUNCATE {from}: entries >= from are void, but the log never
 * ends below its compaction marker (the next entry after a marker is marker + 1). Shared by
 * the writer (wal.c) and recovery so that checkpoints and replay agree exactly. */
static inline uint64_t jr__wal_cut_last(uint64_t last, uint64_t from, int has_compact,
                                        uint64_t cindex)
{
    if (from > last) return last; /* voids nothing */
    last = from - 1;
    if (has_compact && cindex > last) last = cindex;
    return last;
}

void jr__wal_seterr(jr__wal *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

jr__walgrp *jr__wal_group(jr__wal *w, uint64_t id, int create);
void jr__wal_group_free(jr__wal *w, jr__walgrp *g);
/* Frees g's recovery state (jr__walrec), if any. */
void jr__wal_group_done(jr__wal *w, jr__walgrp *g);

/* Segment tables (gc.c). */
int jr__segtab_max(const jr_allocator *a, jr__segtab *t, uint64_t group, uint64_t index);
/* Grows t so that `more` new groups can be added by jr__segtab_max without allocating;
 * 0 or JR_ENOMEM. */
int jr__segtab_reserve(const jr_allocator *a, jr__segtab *t, size_t more);
int jr__segtab_has(const jr__segtab *t, uint64_t group);
void jr__segtab_erase(jr__segtab *t, uint64_t group);
void jr__segtab_free(const jr_allocator *a, jr__segtab *t);
/* Appends a segment record for seq; 0 or JR_ENOMEM. */
int jr__wal_seg_push(jr__wal *w, uint64_t seq);
/* Forgets group g in every segment table (its records are garbage after a drop). */
void jr__wal_seg_forget(jr__wal *w, uint64_t group);
/* Lowers group's largest index to at most `max` in the tables of segments [0, upto) (a
 * TRUNCATE voided the entries above it); max == 0 forgets the group there. */
void jr__wal_seg_clamp(jr__wal *w, size_t upto, uint64_t group, uint64_t max);
/* Deletes the oldest segments while allowed (see invariants). Only call when the written
 * state is durable. Errors deleting are recorded in errmsg and stop the pass; never fatal. */
void jr__wal_gc(jr__wal *w);

/* Builds the checkpoint of every live group's written state into b. */
void jr__wal_put_checkpoint(jr__wal *w, jr__buf *b);

/* Recovery (recovery.c): scans cfg->dir, replays, and leaves w with its segments and groups
 * ready for a new segment. */
int jr__wal_recover(jr__wal *w, const jr__wal_replay *rp);

/* Opens a new current segment seq (header + checkpoint + `extra` bytes in one write, then
 * sync of the file and of the directory). */
int jr__wal_rotate(jr__wal *w, const uint8_t *extra, size_t n);

#endif
