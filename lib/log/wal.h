/*
 * wal — the node's shared Raft write-ahead log: one segmented, checksummed, group-committed log
 * for every group on the node (ARCHITECTURE §2, §4).
 *
 * Records: entries {group, term, index, type, payload}, per-group hard state {term, vote,
 * commit}, per-group compaction markers, per-group truncations, and group drops. Appends are
 * staged in memory; jr__wal_flush() writes everything staged with one write and covers it with
 * one sync, so one fsync serves every group. Nothing that depends on a record (a vote, an append
 * response, a publish ack) may leave the node before the flush that covers it returns.
 *
 * Recovery (jr__wal_open) scans every segment, verifies every checksum, truncates a torn tail,
 * and replays records to the caller in log order. An entry record for (group, index) supersedes
 * every earlier entry of that group with index >= index (that is how a follower's truncated
 * suffix is recorded when new entries replace it). A truncation {group, from} voids every
 * earlier entry of that group with index >= from without writing a new one (how a cut with
 * nothing after it is recorded: a snapshot install that discarded a conflicting log). Both
 * take effect at their place in the log: entries recorded after them are live. A truncation
 * at or below the compaction marker voids everything above the marker; one beyond the last
 * index voids nothing. A bad record that is not at the tail is corruption: the groups it could
 * belong to are reported damaged (on_damaged, with file and offset), every other group is
 * recovered normally.
 *
 * A segment is deleted only when every group with entries in it has compacted past them
 * (entries a durable truncation voided do not count).
 *
 * Replay (what jr__wal_open reports, in this order; implementation notes by lib/log's owner):
 *  1. on_damaged for every damaged group (message names the file and offset of the damage);
 *  2. for every live group, ascending by id: on_compact (its last marker) if any, then
 *     on_hardstate (its last hard state) if any; on_drop for groups whose last record is a drop;
 *  3. on_entry for the log as it stands after every supersession, truncation and compaction:
 *     each index once, ascending per group and contiguous from the marker (or 1), interleaved
 *     across groups in log order; on_truncate for each truncation record of a live group at its
 *     place among them. Entries a truncation voids are never replayed (not even before it), so
 *     on_truncate finds nothing at or above `from` to drop; it is reported so that a consumer
 *     applying raw log order (supersession and truncation by itself) gives the same result
 *     and works unchanged.
 *  For a damaged group, entries written after the damage are not replayed (its hard state and
 *  marker are). A group stays damaged across restarts (the flag is kept in checkpoints) until
 *  it is repaired: jr__wal_drop() and then its new state (marker, hard state, entries).
 *
 * Everything replayed is durable when jr__wal_open returns (each kept segment is synced, and
 * a new segment, opened with a checkpoint of the recovered state, receives the next writes).
 *
 * Torn tail: invalid bytes at the end of the last segment (with no valid record after them)
 * are the unsynced part of the last write and are cut off silently. A damaged region with
 * valid records after it, or anywhere in an older segment, or a missing segment, is damage.
 * Limitation: a group created after the last checkpoint whose every record lies in a damaged
 * region is invisible to recovery (nothing names it); the node's meta state must catch that.
 */
#ifndef JR_LOG_WAL_H
#define JR_LOG_WAL_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "raft/raft.h"

typedef struct jr__wal jr__wal;

/* Callbacks during recovery, in log order. Returning non-zero aborts jr__wal_open with that code.
 * Pointers are borrowed for the call. */
typedef struct jr__wal_replay {
    void *ctx;
    int (*on_entry)(void *ctx, uint64_t group, const jr__entry *e);
    int (*on_hardstate)(void *ctx, uint64_t group, const jr__hardstate *hs);
    int (*on_compact)(void *ctx, uint64_t group, uint64_t index, uint64_t term);
    int (*on_drop)(void *ctx, uint64_t group);
    /* group == 0: the damage cannot be attributed; every group must be treated as damaged. */
    int (*on_damaged)(void *ctx, uint64_t group, const char *why);
    /* A truncation record: entries of group with index >= from replayed before it are void
     * (none are: see step 3 of the replay order). May be NULL. */
    int (*on_truncate)(void *ctx, uint64_t group, uint64_t from);
} jr__wal_replay;

typedef struct jr__wal_config {
    jr_vfs *vfs;
    const char *dir;
    const jr_allocator *alloc;
    uint64_t segment_bytes;    /* default 64 MiB */
    int sync_policy;           /* enum jr_sync_policy */
    uint64_t sync_interval_ns; /* with JR_SYNC_INTERVAL */
    /* NULL: a plaintext WAL. Else the 32-byte node key: the WAL is encrypted at rest (entry data
     * sealed under a key derived from it, atrest.h), and jr__wal_open refuses with JR_EAUTH,
     * before it changes anything, a directory whose segments are plaintext or were written
     * under another key (and, without a key, one whose segments are encrypted). */
    const uint8_t *key;
    /* 0: segments grow by exactly what each flush writes. Else the current segment is kept
     * zero-filled this many bytes ahead of its end (never past segment_bytes): the zeros go out
     * in the same write as the records that cross the filled end, so a flush that stays within
     * the filled part changes neither the file's size nor its allocation and its sync is the
     * data's alone (no size or allocation change for an fdatasync to write). A zero tail reads as
     * the end of the records: recovery cuts it like a torn tail, and a rotation cuts the old
     * segment to its records (and syncs that) before the new one exists, so only the last segment
     * ever has one. */
    uint64_t prealloc_bytes;
} jr__wal_config;

/* Opens (creating if needed) the WAL in cfg->dir and replays it through `replay`. */
int jr__wal_open(const jr__wal_config *cfg, const jr__wal_replay *replay, jr__wal **out);
void jr__wal_close(jr__wal *w);

/* Staging (in memory; JR_ENOMEM is the only failure, and a failed call stages nothing). */
int jr__wal_append(jr__wal *w, uint64_t group, const jr__entry *e);
int jr__wal_hardstate(jr__wal *w, uint64_t group, const jr__hardstate *hs);
/* Entries of group up to index (whose term is `term`) are no longer needed. */
int jr__wal_compact(jr__wal *w, uint64_t group, uint64_t index, uint64_t term);
/* Entries of group with index >= from (> 0) staged or written before this call are void; later
 * ones are not. Used for a cut that no entry record follows (a follower's snapshot install
 * that discarded a conflicting log: from = snapshot index + 1), or ahead of the entries that
 * replace a suffix. It is one record, so it and what is staged with it are written by the
 * same flush: stage it before the compaction marker and the entries of the same change, and
 * a torn flush that keeps any of them keeps the truncation too. Nothing is staged (0) for a
 * group with no record in its current incarnation. JR_EINVAL for from == 0, JR_EIO after a
 * failure, JR_ENOMEM. */
int jr__wal_truncate(jr__wal *w, uint64_t group, uint64_t from);
/* The group is gone from this node; its records are garbage. */
int jr__wal_drop(jr__wal *w, uint64_t group);
/* A stage mark: jr__wal_rollback() unstages every record staged after the last jr__wal_mark()
 * (and before the next jr__wal_flush), restoring each group's record numbering, so that a batch
 * of records that could not be staged whole (JR_ENOMEM part-way) or not written (a flush that
 * failed with JR_ENOMEM) can be staged again later without any record written twice. Records
 * staged before the mark stay. Neither call allocates or fails. */
void jr__wal_mark(jr__wal *w);
void jr__wal_rollback(jr__wal *w);

/* Writes everything staged (one write) and syncs it according to the policy, at time now:
 * at most one write and one sync of the current segment per call (a rotation writes the new
 * segment instead, with one write and one sync of it, after syncing the old one if it has
 * unsynced writes). Nothing staged: no write, and a sync only when an interval sync is due.
 * *durable gets 1 if everything written so far is durable (always, under JR_SYNC_ALWAYS).
 * JR_ENOMEM: nothing was written, everything stays staged and the WAL stays usable (the memory
 * the bookkeeping of a write needs is reserved before it). On an I/O error nothing staged is
 * reported durable and the WAL refuses further appends (JR_EIO). */
int jr__wal_flush(jr__wal *w, uint64_t now, int *durable);
/* jr__wal_flush without the sync of the batch (a rotation still syncs the old segment and the
 * new one): the caller has the file synced elsewhere (jr__wal_file) and reports it with
 * jr__wal_synced, with no write in between. *durable gets 1 if nothing written is unsynced (a
 * rotation covered it, or nothing was staged). Errors as jr__wal_flush. */
int jr__wal_write(jr__wal *w, uint64_t now, int *durable);
/* The file whose sync makes everything written so far durable (the current segment), or NULL
 * if nothing written is unsynced, and in *vfs the vfs it belongs to. Valid until the next
 * write or jr__wal_close. */
jr_file *jr__wal_file(const jr__wal *w, jr_vfs **vfs);
/* The sync of jr__wal_file() ended with result rc: with 0 everything written before it started
 * is durable (as after jr__wal_sync, old segments may be deleted now); otherwise the WAL fails
 * as on any I/O error and refuses further appends. Returns 0 or the error (JR_EIO if it had
 * failed already). */
int jr__wal_synced(jr__wal *w, uint64_t now, int rc);
/* Makes everything written so far durable now, whatever the policy (a no-op when nothing is
 * unsynced). The node calls it under JR_SYNC_INTERVAL when a flush carries a term or vote change:
 * the interval policy may lose acknowledged writes on power loss, never election safety.
 * 0, or JR_EIO after which the WAL refuses further appends. */
int jr__wal_sync(jr__wal *w, uint64_t now);
/* With JR_SYNC_INTERVAL: when the next interval sync is due (UINT64_MAX if nothing is pending). */
uint64_t jr__wal_deadline(const jr__wal *w);

/* 1 if the WAL holds group damaged: a restart would replay none of the entries it wrote since
 * the damage (see "Replay" above) until jr__wal_drop() and its new state were written. */
int jr__wal_damaged(const jr__wal *w, uint64_t group);
/* Bytes staged and not yet written. */
size_t jr__wal_pending(const jr__wal *w);
/* Segment files now (the last one is the current segment). */
size_t jr__wal_segments(const jr__wal *w);
/* The groups that keep the oldest segment alive: live groups with an entry there past their
 * compaction point (an idle group that never compacts pins every segment after it too, since
 * segments go oldest first). Writes up to max of them to groups and returns how many there are
 * in all (0 when only the current segment exists). Compacting them — a snapshot — lets the
 * segment go. */
size_t jr__wal_pins(const jr__wal *w, uint64_t *groups, size_t max);
const char *jr__wal_errmsg(const jr__wal *w);
/* The error that failed the WAL (a write, sync or rotation): from then on it refuses every
 * write until it is opened again. 0 while it is usable. */
int jr__wal_failed(const jr__wal *w);

/* Counters (additive to the lead's contract). */
typedef struct jr__wal_stats {
    uint64_t flushes; /* jr__wal_flush calls that wrote something */
    uint64_t writes;  /* pwrite calls */
    uint64_t syncs;   /* file syncs (directory syncs not counted) */
    uint64_t bytes_written;
    uint64_t records;  /* records written */
    uint64_t segments; /* segment files now */
    uint64_t segments_created;
    uint64_t segments_deleted;
    uint64_t extends; /* writes that zero-filled the current segment further (prealloc_bytes) */
} jr__wal_stats;
void jr__wal_stats_get(const jr__wal *w, jr__wal_stats *out);

#endif
