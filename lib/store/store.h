/*
 * store — the per-stream message store (ARCHITECTURE §2).
 *
 * One opaque type, two implementations selected at open: JR__STORE_MEMORY (records kept in
 * memory) and JR__STORE_FILE (message blocks under <dir>/<name>/ through a jr_vfs). Both share
 * one core (store.c: sequence index, per-subject index, interior-delete ranges, limits, purge)
 * and differ only in a small backend table (mem.c, file.c) that stores record bytes; so the
 * two behave identically by construction, and the same test suite runs against both.
 *
 * Sequences. Messages get consecutive sequences starting at 1 (or at the seq given to
 * jr__store_reset). Appends name the sequence they expect to create, so a replica's store can
 * never drift from its log. Deleted messages leave holes; holes strictly between first_seq and
 * last_seq are "interior deletes" and are tracked as ranges (jr__store_deleted()).
 *
 * Time. The store never reads a clock: every append carries its timestamp (ns) and max_age is
 * enforced against the newest timestamp seen (on append) or an explicit now (jr__store_expire),
 * so every replica applying the same log makes the same decisions.
 *
 * Limits. max_msgs, max_bytes, max_age, max_msgs_per_subject, max_msg_size. With
 * JR__DISCARD_OLD the oldest messages are removed to make room; with JR__DISCARD_NEW an append
 * that would exceed max_msgs or max_bytes is refused with JR__ESTORE_FULL and changes nothing.
 * max_msgs_per_subject removes the subject's oldest message unless discard_new_per_subject is
 * set (then the append is refused with JR__ESTORE_FULL). max_msg_size (headers + payload)
 * refuses with JR_EMSGSIZE. "bytes" of a message is its record size: subject + headers +
 * payload + JR__SREC_MIN (36) bytes.
 *
 * Durability (file store). Appends and deletes are buffered; jr__store_sync() writes and syncs
 * them. jr__store_durable_seq() is the highest seq such that every append up to it has been
 * covered by a completed sync: after a crash the store reopens with at least every message up
 * to it (minus those deleted), and the stream replays its WAL after it. Records reach the disk
 * in the order of the operations that made them, except that discard-old removals of the first
 * messages are recorded lazily, at the next sync or before the next other tombstone: a crash may
 * bring such messages back (only when nothing written after their removal survived but appends;
 * the limits remove them again at open or on the next append), never a message deleted
 * explicitly before a write that survived. A memory store is never persistent; its durable seq
 * is its last seq. A marked store (below) reopens at its last mark instead, exactly: its durable
 * seq is the last seq at that mark, and a sync alone does not move it.
 *
 * Marks (exact reopen). A store opened with cfg.marked = 1 reopens exactly at its last durable
 * mark: jr__store_mark(index, meta) writes a MARK record (the caller's index, its opaque state
 * `meta`, and the store's own state) and syncs; at open, every record written after the last
 * mark that reached the disk is rolled back (later blocks removed, the mark's block cut after
 * it), so the store is the one it was when the mark was written, whatever a crash kept or tore
 * of the writes after it. A marked store that has no durable mark opens empty. The design:
 *   - records are replayed in write order, and the record stream up to a mark describes the
 *     store at the mark exactly (the lazily recorded front removal is written before the mark);
 *   - nothing is ever physically removed or overwritten that a rollback could need: a block left
 *     without live messages is kept until a mark covers its removal (its tombstones that matter
 *     are carried into the active block before the mark, the file is removed after the mark is
 *     durable), and an erase-delete overwrites the bytes only after the next mark is durable
 *     (a crash before that leaves the bytes of that deleted message in its block, unreadable
 *     through the store);
 *   - at open the store checks that the replayed state equals the state the last mark recorded
 *     (last seq, first seq, message and byte counts): JR_ECORRUPT otherwise.
 * Retention by key: a mark may carry key > 0 and every mark carries floor; the store keeps every
 * mark whose key >= the floor of the newest mark (and the blocks that hold them, even without
 * live messages), and at open lets the caller read them (jr__store_marks_next) — for caller
 * state that is written incrementally (a delta per mark) and must be rebuilt whole. Keys and
 * floors should not decrease from mark to mark (the store then keeps the fewest marks).
 * Space: blocks are freed at marks only, so a marked store must be marked regularly.
 *
 * Borrowing. jr__store_msg fields point into store-owned memory valid until the next call on
 * the same store (any call). Copy what you keep.
 *
 * Errors: 0 or a negative JR_E* code; jr__store_errmsg() describes the last error (for
 * corruption: file and offset). A store that hit an I/O error on write (or on reading from the
 * file of a trimmed active block, jr__store_trim) refuses further writes (JR_EIO) until
 * reopened; reads keep working.
 *
 * Memory. An idle store holds little beyond its indexes; jr__store_trim gives back what it can
 * read again from its files when needed.
 */
#ifndef JR_STORE_STORE_H
#define JR_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "util/buf.h"

typedef struct jr__store jr__store;

enum jr__store_kind { JR__STORE_FILE = 0, JR__STORE_MEMORY = 1 };
enum jr__store_discard { JR__DISCARD_OLD = 0, JR__DISCARD_NEW = 1 };

/* Refusals: discard-new limits give the public JR_ELIMIT (what a publisher sees); a wrong
 * expected seq is the store caller's bug, JR_ERANGE. */
#define JR__ESTORE_FULL JR_ELIMIT /* discard new: a limit would be exceeded (public code) */
#define JR__ESTORE_SEQ JR_ERANGE  /* append's expected seq is not last_seq + 1 */

typedef struct jr__store_limits {
    uint64_t max_msgs;             /* 0: unlimited */
    uint64_t max_bytes;            /* 0: unlimited */
    uint64_t max_age_ns;           /* 0: unlimited */
    uint64_t max_msgs_per_subject; /* 0: unlimited */
    uint64_t max_msg_size;         /* headers + payload; 0: unlimited */
    int discard;                   /* enum jr__store_discard */
    int discard_new_per_subject;   /* with max_msgs_per_subject: refuse instead of removing */
} jr__store_limits;

typedef struct jr__store_config {
    int kind;                  /* enum jr__store_kind */
    const char *name;          /* stream name: the directory under dir, and the KDF context */
    jr_vfs *vfs;               /* file store only */
    const char *dir;           /* file store only: store_dir; the store lives in dir/name */
    const jr_allocator *alloc; /* NULL: malloc family */
    jr__store_limits limits;
    uint64_t block_bytes;      /* block size; 0: 8 MiB (file), 1 MiB (memory) */
    int compress;              /* file: lz4-compress blocks when sealed */
    const uint8_t *master_key; /* file: 32 bytes enable encryption at rest; NULL: none */
    int marked;                /* file: reopen exactly at the last durable mark (see Marks) */
} jr__store_config;

typedef struct jr__store_state {
    uint64_t msgs;
    uint64_t bytes;
    uint64_t first_seq; /* lowest live seq; last_seq + 1 when empty */
    int64_t first_ts;   /* 0 when empty */
    uint64_t last_seq;  /* highest seq ever assigned (also after deletes) */
    int64_t last_ts;    /* timestamp of last_seq's message, if known; 0 otherwise */
    uint64_t num_subjects;
    uint64_t num_deleted; /* interior deletes */
} jr__store_state;

typedef struct jr__store_msg {
    uint64_t seq;
    int64_t ts;
    const char *subject; /* not NUL-terminated */
    size_t subject_len;
    const uint8_t *hdr;
    size_t hdr_len;
    const uint8_t *data;
    size_t data_len;
} jr__store_msg;

typedef struct jr__seq_range {
    uint64_t lo, hi; /* inclusive */
} jr__seq_range;

/* Opens (file: creating or recovering) a store. Recovery verifies every record, truncates a torn
 * tail of the last block, removes leftover temporary files, and then enforces the limits. Any
 * other damage is JR_ECORRUPT; the message naming file and offset is copied to errmsg (a caller
 * buffer of errmsg_len bytes; may be NULL). Wrong encryption key, or encrypted blocks without a
 * key: JR_EAUTH, found before anything is cut or removed. On failure *out is NULL and nothing is
 * left open. */
int jr__store_open(const jr__store_config *cfg, jr__store **out, char *errmsg, size_t errmsg_len);

/* Removes the file store of stream `name` under dir (the directory dir/name and every file in
 * it), so that a stream created again under the same name starts empty. The store must not be
 * open. Atomic for readers: a marker file is made durable first, and an open that finds it
 * (after a crash or an I/O error interrupted the removal) finishes the removal and opens an
 * empty store; calling destroy again finishes it too. 0 (also when there is no such store), or
 * the vfs error (JR_EIO...), JR_EINVAL for a bad name. */
int jr__store_destroy(jr_vfs *vfs, const char *dir, const char *name);

/* Syncs (file) and frees everything. Safe on NULL. Returns the sync's result. */
int jr__store_close(jr__store *s);
/* Frees everything without writing anything more (after a fatal error, or to simulate the
 * process dying in tests): what was not synced may or may not be on disk. Safe on NULL. */
void jr__store_abandon(jr__store *s);

/* Appends a message as seq `expect` (must equal last_seq + 1, else JR__ESTORE_SEQ) with
 * timestamp ts (ns). subject must be a valid literal subject (util/subject.h: at most
 * JR__SUBJECT_MAX bytes; JR_EINVAL otherwise). Enforces the limits (see above), then stores.
 * *seq (may be NULL) gets the new seq. */
int jr__store_append(jr__store *s, uint64_t expect, const char *subject, size_t subject_len,
                     const void *hdr, size_t hdr_len, const void *data, size_t data_len, int64_t ts,
                     uint64_t *seq);

/* Message records this store's appends encoded (and checksummed) themselves. A catch-up chunk's
 * records (jr__store_apply_chunk) are verified once and written as they came, so they do not
 * count: a test counts that. */
uint64_t jr__store_encoded(const jr__store *s);

/* Advances last_seq to `upto` without storing messages: seqs last_seq+1..upto become deletes
 * (interior if later messages follow). Used by catch-up to reproduce a leader's gaps. No-op if
 * upto <= last_seq. */
int jr__store_skip(jr__store *s, uint64_t upto);

/* Removes every message and sets the next seq to first_seq (>= 1): for a replica that starts
 * from a leader's snapshot. */
int jr__store_reset(jr__store *s, uint64_t first_seq);

/* The live message seq. JR_ENOTFOUND if none (deleted, never existed). */
int jr__store_get(jr__store *s, uint64_t seq, jr__store_msg *out);

/* The newest live message whose subject matches filter (literal: O(1); wildcards: a backward
 * scan of the live messages). JR_ENOTFOUND if none. */
int jr__store_get_last(jr__store *s, const char *filter, size_t filter_len, jr__store_msg *out);

/* The first live message with seq >= from whose subject matches filter (NULL or ">": any).
 * JR_ENOTFOUND if none. Iterate with from = out->seq + 1. */
int jr__store_next(jr__store *s, uint64_t from, const char *filter, size_t filter_len,
                   jr__store_msg *out);

/* Deletes message seq. erase = 1 also overwrites its bytes (file: the block is rewritten).
 * JR_ENOTFOUND if it is not live. */
int jr__store_delete(jr__store *s, uint64_t seq, int erase);

typedef struct jr__purge {
    const char *filter; /* NULL: every subject */
    size_t filter_len;
    uint64_t seq;  /* non-zero: purge only messages with seq < this */
    uint64_t keep; /* non-zero: keep the newest `keep` (matching) messages */
} jr__purge;

/* Purges matching messages (seq and keep together: JR_EINVAL). *purged (may be NULL) gets the
 * number removed. A purge of everything keeps last_seq: the next append is last_seq + 1. */
int jr__store_purge(jr__store *s, const jr__purge *p, uint64_t *purged);

/* Removes messages older than now - max_age. */
int jr__store_expire(jr__store *s, int64_t now);

/* Replaces the limits and enforces them (discard-new limits only refuse future appends). */
int jr__store_set_limits(jr__store *s, const jr__store_limits *l);

void jr__store_state_get(const jr__store *s, jr__store_state *out);
/* Live messages with seq >= from whose subject matches filter (NULL or len 0: any), from the
 * indexes, without reading messages: no filter costs one step per interior-delete range
 * above from; a literal subject, one step per message of it at or above from (its first and
 * last seq decide at once when from is outside them); a pattern that every subject with live
 * messages matches, one step per subject and then what no filter costs; any other pattern,
 * what a literal costs for every subject matching it. */
uint64_t jr__store_num_pending(const jr__store *s, uint64_t from, const char *filter,
                               size_t filter_len);
/* Messages and seq of one subject (literal). 0 if it has none. */
uint64_t jr__store_subject_count(const jr__store *s, const char *subject, size_t len);
/* Calls fn for every subject with live messages (in no defined order) with its count, while fn
 * returns 0; returns what stopped it, or 0. The subject is borrowed for the call. */
int jr__store_subjects_each(const jr__store *s,
                            int (*fn)(void *arg, const char *subject, size_t len, uint64_t count),
                            void *arg);
/* Interior deletes as sorted, disjoint, non-adjacent ranges (borrowed until the next call). */
const jr__seq_range *jr__store_deleted(const jr__store *s, size_t *n);

/* Writes buffered records and makes them durable (in a marked store they still roll back to the
 * last mark at open). 0 or JR_EIO/JR_ENOSPC. */
int jr__store_sync(jr__store *s);
/* See "Durability" above. */
uint64_t jr__store_durable_seq(const jr__store *s);

/* Frees memory an idle store can do without; for a stream whose group went quiet (it costs a
 * little time when the store is used again: do not call it after every write). Changes
 * nothing on disk nor in what the store does (only how much memory it holds until it is used):
 *  - the capacity of the seq index and of the delete ranges beyond twice what they hold (a
 *    stream that once held many messages and now holds few), the subject index if empty, and
 *    (memory store) the bytes of the last block if none of its messages is live;
 *  - the read state of blocks other than the active one (read handles, a decoded block or
 *    chunk): made again at the next read of such a block;
 *  - file store: the in-memory copy of the active block's records, whatever its size, once
 *    every record of it has been written to its file (nothing buffered: e.g. just after
 *    jr__store_sync or jr__store_mark with no write since). The copy is a window over the
 *    block's tail: it starts again empty at the block's current length, appends go on into it
 *    (and to the file, the same bytes as without trim; with encryption the same frames), and
 *    appends read nothing back. A read of a message or mark before the window reads that one
 *    record from the file and verifies it (checksum, length): without encryption its bytes;
 *    with encryption (per-record frames: a record's place in the file is not its place in the
 *    plaintext) its frame, authenticated, found from a checkpoint that trim keeps every 32
 *    records or 4 KiB of records (8 bytes each), so the read is one pread of at most about
 *    5.5 KiB besides the frame. No operation but the rare ones that need the whole block —
 *    rotation with compression or encryption, erasing in it, carrying its tombstones — reads
 *    more; those read the part before the window back whole and verify it as recovery does
 *    (header, id, record checksums, each frame's authentication, exact length).
 *    If reading from the active block's file fails, the operation that needed it
 *    returns the error (JR_EIO..., or JR_ECORRUPT if the file's bytes changed) and the store is
 *    failed as by a write error (writes refused until reopened; reads of the active block keep
 *    trying): nothing written is lost, a reopen recovers it from the file. JR_ENOMEM there fails
 *    only that operation;
 *  - file store: the active block's file descriptor, if everything written is also synced (so a
 *    store idle after a sync or mark holds none): opened again when next needed (a failure to
 *    open it fails the store as a failed read-back does).
 * A failed store is left as it is; for the active block, nothing happens when the conditions do
 * not hold. Always returns 0. */

int jr__store_trim(jr__store *s);
/* 1 for the file store. */
int jr__store_persistent(const jr__store *s);

/* Marks (see "Marks") ------------------------------------------------------------------ */

/* Writes a mark: the caller's index (any u64, e.g. the applied log index), its opaque state
 * meta[0..meta_len) (at most JR__STORE_MARK_META_MAX bytes), and the retention key and floor;
 * then syncs, so that the store reopens at this mark, and then performs the physical removals
 * and erasures the mark covers. Requires a store opened with cfg.marked (JR_EMISUSE otherwise).
 * A memory store only remembers the index. 0, JR_EINVAL (meta too large), or a write error
 * (JR_EIO/JR_ENOSPC; the store is then failed). */
#define JR__STORE_MARK_META_MAX (((size_t)1 << 30) - 4096) /* one record */
int jr__store_mark(jr__store *s, uint64_t index, const void *meta, size_t meta_len, uint64_t key,
                   uint64_t floor);

/* Index of the last mark written or, after open, of the last durable mark; 0 if none. */
uint64_t jr__store_mark_index(const jr__store *s);

typedef struct jr__store_mark_rec {
    uint64_t index;
    uint64_t key;
    uint64_t floor;
    const uint8_t *meta; /* borrowed until the next call on the store */
    size_t meta_len;
} jr__store_mark_rec;

/* After open, before the first jr__store_mark: the last durable mark. JR_ENOTFOUND if the store
 * opened without one (also: a memory store), JR_ECORRUPT/JR_EIO if it cannot be read. */
int jr__store_last_mark(jr__store *s, jr__store_mark_rec *out);

/* After open, before the first jr__store_mark: iterates over the kept marks (those whose key >=
 * the floor of the last mark), oldest first. Start with *cursor = 0. 0 with *out set,
 * JR_ENOTFOUND at the end, JR_ECORRUPT/JR_EIO if one cannot be read. */
int jr__store_marks_next(jr__store *s, size_t *cursor, jr__store_mark_rec *out);

/* Catch-up. A snapshot of a store is its jr__store_state and jr__store_deleted() ranges, plus
 * its messages read in chunks: jr__store_read_chunk appends to `out` the encoded records of live
 * messages with seq >= from, stopping before max_bytes would be exceeded (at least one message
 * if any), and sets *next to the seq to continue from (last_seq + 1 when done). The chunk is a
 * sequence of checksummed records (record.h), so it can travel and be validated as is. */
int jr__store_read_chunk(jr__store *s, uint64_t from, size_t max_bytes, jr__buf *out,
                         uint64_t *next);
/* Appends every message of a chunk (validated first, all or nothing on malformed input:
 * JR_ECORRUPT), skipping gaps so seqs match the source. Messages at or below last_seq are
 * ignored (a re-sent chunk is harmless). Each record is written as it came, its checksum
 * verified once and not computed again (jr__store_encoded does not count it). */
int jr__store_apply_chunk(jr__store *s, const void *chunk, size_t len);

const char *jr__store_errmsg(const jr__store *s);

#endif
