/*
 * fsm — the stream state machine: what every replica of a stream applies, in log order, on top
 * of its message store (ARCHITECTURE §2 data flow).
 *
 * A jr__stream_fsm owns the stream's message store (store.h), its current configuration, the
 * duplicate window (dedup.h), the msg id of the last stored message, the stream clock and the
 * index of the last applied log entry. Entries are encoded ops (op.h).
 *
 * Determinism. The outcome of applying an entry depends only on the entry and the state before
 * it — never on a clock, a random number, or which replica applies it — so every replica that
 * applies the same log holds the same messages under the same sequences and reports the same
 * result for each op. The leader reports that result to the publisher.
 *
 * Time. Every op carries the leader's timestamp (stream time, chosen by stream/clock.h from the
 * host's wall clock). The stream clock is the largest timestamp applied so far; applying any
 * decodable op first advances the clock to its timestamp, which expires messages older than
 * max_age and msg ids older than the duplicate window. That is time passing, the same on every
 * replica; beyond it, an op that is refused changes nothing. Stored messages are stamped with
 * the clock (so timestamps never go backwards across leaders, whatever their stamps). The
 * leader should propose a TICK now and then for streams with max_age, so idle streams expire.
 *
 * Limits. The store is opened without limits; the config in force at the applied index sets
 * them — at the first entry applied, or when a snapshot is installed — so a restarted store is
 * never trimmed by a config that is not yet in force. CONFIG entries change limits, flags,
 * subjects and the duplicate window at once; a change of compression only affects stores opened
 * later; name and storage type never change.
 *
 * Publish, checked in this order (the first failing check is the result):
 *   JR_ESEALED        the stream is sealed
 *   JR_EINVAL         subject not a valid literal subject, header block malformed (headers.h)
 *   JR_ENOSTREAM      subject not captured by the stream's subjects
 *   JR_EMSGSIZE       headers + payload over max_msg_size, or the record over max_bytes
 *   duplicate         msg_id seen within the duplicate window: status 0, seq of the original,
 *                     duplicate 1 — or 0 if the op carries the token the original was stored
 *                     with (the same request, sent again: answered as its first attempt was);
 *                     nothing stored
 *   JR_EWRONGSTREAM   expected_stream is not this stream's name
 *   JR_EWRONGLASTSEQ  expected_last_seq != the stream's last seq (result seq = the last seq)
 *   JR_EWRONGLASTMSGID expected_last_msg_id != msg id of the last stored message
 *   JR_EWRONGLASTSUBJSEQ expected_last_subject_seq != seq of the subject's newest message, 0 if
 *                     none (result seq = that seq)
 *   JR_EDENIED        rollup requested but the stream does not allow_rollup, or denies purge
 *   JR_ELIMIT         discard new: max_msgs or max_bytes would be exceeded
 * then the message is stored as last_seq + 1 (discard old makes room), a rollup purges the
 * subject's (sub) or the stream's (all) older messages, and msg_id enters the window.
 * Delete: JR_ESEALED, JR_EDENIED (deny_delete), JR_ENOTFOUND (not a live message).
 * Purge: JR_ESEALED, JR_EDENIED (deny_purge), JR_EINVAL (filter not a valid pattern).
 * Config: JR_ECORRUPT/JR_EVERSION (undecodable), JR_EINVAL (other name or storage type).
 * An entry that does not decode is refused with JR_ECORRUPT and changes nothing (every replica
 * of a release refuses it alike: the leader checked what it proposed). An entry of a later
 * release (JR_EVERSION: op.h) fails the fsm instead: a replica that applied around it would
 * diverge from the replicas that understand it.
 *
 * Local failures are not decisions: if the store fails (I/O, corruption, memory), apply returns
 * that error, the fsm is failed (every later apply returns it again) and the replica must be
 * repaired from its peers (a fresh fsm restored from a snapshot).
 *
 * Snapshots and catch-up (fsm_snapshot.c). A snapshot is the stream's metadata, not its
 * messages: applied index, clock, config, last msg id, the dedup window, the store's state
 * (first/last seq, counters) and its interior-delete ranges. jr__stream_fsm_restore() installs
 * one taken at an index after the applied one by reconciling the local store with it:
 *   - local messages the snapshot says are gone are deleted;
 *   - if the store lacks messages the snapshot has beyond its last seq, restore reports the seq
 *     to fetch from (*need_from): the caller pulls chunks from a peer (jr__stream_fsm_read_chunk
 *     there, jr__stream_fsm_apply_chunk here) and calls restore again, with the same or a newer
 *     snapshot of that peer; until then the fsm is "restoring" and refuses entries. A peer that
 *     moved on sends messages beyond the snapshot's last seq too: while the store is ahead of the
 *     snapshot being restored, restore keeps restoring and asks for the seqs after the store's
 *     last one; it completes with a snapshot of the peer whose last seq the store reaches — the
 *     one taken where the last chunk was read (the node sends it with the last chunk of a
 *     round). Restored that way (chunks read in seq order from one peer, then the peer's
 *     snapshot taken where they end) the replica holds exactly the peer's state at that index:
 *     a message live there was live when its chunk was read, and what was deleted since is
 *     deleted by the reconciliation;
 *   - a message the snapshot has but the store lacks below its last seq is taken as deleted by
 *     a later entry of the log (that is how chunks read after the snapshot miss it). That is
 *     the one inexact case: an entry between the snapshot and that delete whose decision
 *     depends on the missing message (a subject's last seq, a discard-new count, a purge's keep)
 *     may decide otherwise than the leader did. Completing with the peer's snapshot taken where
 *     the chunks end, as above, avoids it.
 * A snapshot at or below the applied index is validated and then ignored (the fsm already holds
 * a later state of the same log; e.g. after a restart, the node's last snapshot is older than
 * the store's last mark).
 *
 * Restart: exact, from the store's last mark. A file store is opened marked (store.h "Marks"):
 * jr__stream_fsm_sync() writes a mark at the applied index carrying everything of the fsm that
 * is not in the store (clock, last seq and ts, last msg id, the config in force, and the msg ids
 * the duplicate window gained since the previous mark — the store keeps the marks whose ids may
 * still be in the window, so the window is rebuilt whole). jr__stream_fsm_open() reopens the
 * store exactly at its last durable mark and the fsm at that mark's index with exactly the state
 * it had there; the caller then applies the log after that index (entries at or below it are
 * ignored, as are snapshots), and every replica that applied the same log is identical to it —
 * no decision is ever re-derived from a store that is ahead of the log. A store with no durable
 * mark opens empty, at index 0. So, for the node:
 *   - the WAL must keep a stream's entries after jr__stream_fsm_durable() (the last durable
 *     mark; a snapshot taken with jr__stream_fsm_snapshot() is never after it);
 *   - jr__stream_fsm_sync() should run regularly (e.g. at every flush, or every N entries): the
 *     store frees blocks emptied by limits or deletes only at marks.
 * A memory store is not persistent: a restarted memory replica starts empty at index 0.
 *
 * Errors: 0 or a negative JR_E* code. Not thread-safe (one node thread drives it).
 */
#ifndef JR_STREAM_FSM_H
#define JR_STREAM_FSM_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "store/store.h"
#include "stream/config.h"
#include "stream/op.h"
#include "util/buf.h"

typedef struct jr__stream_fsm jr__stream_fsm;

typedef struct jr__stream_fsm_config {
    const jr_stream_config *stream; /* required, valid; copied (normal form). Used only when
                                       the store has no mark (index 0: then the config the
                                       stream had at its first log entry is the exact choice;
                                       CONFIG entries replayed update it); a restart at a mark
                                       takes the config in force there from the mark. */
    jr_vfs *vfs;                    /* file storage: where message stores live */
    const char *dir;                /* file storage: store_dir (the store is dir/<name>) */
    const jr_allocator *alloc;      /* NULL: malloc family */
    const uint8_t *master_key;      /* 32 bytes: encryption at rest; NULL: none */
    uint64_t block_bytes;           /* store block size; 0: the store's default */
    size_t dedup_max;               /* most msg ids remembered; 0: JR__DEDUP_DEFAULT_MAX. Must
                                       be the same on every replica of the stream. */
} jr__stream_fsm_config;

/* Opens the stream's store (creating or recovering it) and the fsm: at the store's last durable
 * mark (see "Restart": index, config in force there and state), or at index 0 with cfg->stream
 * if there is none. Store errors are returned as jr__store_open gives them (message copied to
 * errmsg, may be NULL); a mark that does not decode, or names another stream, is JR_ECORRUPT.
 * JR_EINVAL for an invalid config (message names the field). On failure *out is NULL. */
int jr__stream_fsm_open(const jr__stream_fsm_config *cfg, jr__stream_fsm **out, char *errmsg,
                        size_t errmsg_len);

/* Syncs (jr__stream_fsm_sync, unless failed) and closes the store, frees everything. Safe on
 * NULL. Returns the first error of the sync and the store's close. */
int jr__stream_fsm_close(jr__stream_fsm *f);

/* Frees everything without writing anything more (a crash, in tests). Safe on NULL. */
void jr__stream_fsm_abandon(jr__stream_fsm *f);

/* The outcome of one op. */
typedef struct jr__stream_result {
    int type;        /* enum jr__op_type of the op (0 if the entry did not decode) */
    int status;      /* 0, or the refusal reported to the proposer (see above) */
    uint64_t seq;    /* PUBLISH: the message's seq (the original one for a duplicate); for
                        JR_EWRONGLASTSEQ / JR_EWRONGLASTSUBJSEQ the actual last seq. DELETE:
                        the seq. */
    int duplicate;   /* PUBLISH: 1 if msg_id was within the duplicate window, stored by another
                        request (another token, or none) */
    uint64_t purged; /* PURGE and rollup: messages removed */
    /* PUBLISH refused with JR_ELIMIT: the limit ("maximum messages exceeded"); with
     * JR_EWRONGLASTMSGID: the msg id of the stream's last message (empty if it had none).
     * why_len bytes, not NUL-terminated, borrowed for the callback; NULL otherwise. */
    const char *why;
    size_t why_len;
} jr__stream_result;

/* Called once per op of an entry, in order (i = 0 for a single op; 0..count-1 for a batch). */
typedef void (*jr__stream_result_fn)(void *arg, uint32_t i, const jr__stream_result *r);

/* Applies the committed entry at `index`. Requires index > the applied index (an entry at or
 * below it was already applied: ignored, 0 returned, fn not called). fn (may be NULL) receives
 * each op's result. Returns 0 when the entry was decided (refusals included: they are in the
 * results), JR_EDAMAGED while restoring (see above; nothing done), or a local failure (the fsm
 * is then failed; see above). */
int jr__stream_fsm_apply(jr__stream_fsm *f, uint64_t index, const void *entry, size_t len,
                         jr__stream_result_fn fn, void *arg);

/* As jr__stream_fsm_apply, for callers that want one result: *res gets the result of the
 * entry's last op (of its only op unless it is a batch). *res is zeroed when nothing was
 * applied. */
int jr__stream_fsm_apply1(jr__stream_fsm *f, uint64_t index, const void *entry, size_t len,
                          jr__stream_result *res);

/* Makes the state at the applied index durable (file storage; a no-op for memory): writes a
 * store mark at the applied index (see "Restart") if anything was applied since the last one,
 * and syncs. While restoring it only syncs (no mark). 0 or the store's error, which fails the
 * fsm. The node calls it on its own schedule; a snapshot and a close do it too. */
int jr__stream_fsm_sync(jr__stream_fsm *f);

/* Memory: gives back what the store can read again from its files when needed (jr__store_trim);
 * for an idle replica, after jr__stream_fsm_sync. */
void jr__stream_fsm_trim(jr__stream_fsm *f);

/* The index a restart would reopen at: the last durable mark (0: none). Memory storage: the
 * applied index (nothing to replay for it). */
uint64_t jr__stream_fsm_durable(const jr__stream_fsm *f);

/* Reading -------------------------------------------------------------------------------- */

/* The store, for reads only (get, get_last, next, state, deleted): never mutate it directly. */
jr__store *jr__stream_fsm_store(jr__stream_fsm *f);
/* The current configuration (normal form; valid until the next apply/restore). */
const jr_stream_config *jr__stream_fsm_config_get(const jr__stream_fsm *f);
/* Memory: if c (an owned config of the caller's, e.g. the meta state's) equals the current
 * configuration (metadata in the same order too, so every encoding of it stays the same), the
 * fsm drops its own copy and holds a reference to c instead (configs are
 * immutable, so nothing else changes). Call it when either may have changed: after open, an
 * applied CONFIG entry, a restore, or a new c. c NULL: a no-op. */
void jr__stream_fsm_share_config(jr__stream_fsm *f, jr__stream_cfg *c);
/* Index of the last applied entry (the snapshot's after a restore). */
uint64_t jr__stream_fsm_applied(const jr__stream_fsm *f);
/* The stream clock: the largest op timestamp applied (0: none yet). The leader's floor for the
 * next stamp (stream/clock.h). */
int64_t jr__stream_fsm_clock(const jr__stream_fsm *f);
/* 1 while a restore waits for chunks, else 0. */
int jr__stream_fsm_restoring(const jr__stream_fsm *f);

typedef struct jr__stream_fsm_info {
    jr__store_state store; /* msgs, bytes, first/last seq and ts, subjects, interior deletes;
                              store.last_ts is the fsm's own (below), which is known also where
                              the store's is not (a replica caught up over a deleted tail) */
    uint64_t applied;      /* index of the last applied entry */
    int64_t clock;         /* the stream clock (ns) */
    uint64_t last_seq;     /* the last seq assigned, as the applied entries say */
    size_t dedup_ids;      /* msg ids in the duplicate window */
    uint64_t durable;      /* jr__stream_fsm_durable() */
    int restoring;
    int failed; /* 0 or the local failure */
} jr__stream_fsm_info;

void jr__stream_fsm_info_get(const jr__stream_fsm *f, jr__stream_fsm_info *out);

/* Sets *id and *len to the msg id of the last stored message (borrowed; len 0 if it had none). */
void jr__stream_fsm_last_msg_id(const jr__stream_fsm *f, const char **id, size_t *len);

/* A digest of the replicated state: the config, clock, last seq and last msg id, the dedup
 * window (ids, seqs, timestamps, tokens, in order), the store's state and delete ranges, and every
 * live message (seq, ts, subject, headers, payload). Two replicas that applied the same log have
 * the same digest. O(messages): for tests and consistency checks. The applied index is not part of
 * it. 0 with *out set, or a store read error. */
int jr__stream_fsm_digest(jr__stream_fsm *f, uint64_t *out);

/* Snapshots and catch-up (fsm_snapshot.c) ------------------------------------------------ */

#define JR__STREAM_SNAP_VERSION 2 /* the newest written; 1 is read too (fsm_snapshot.c) */

/* Appends a snapshot of the state at the applied index to out, after jr__stream_fsm_sync (so
 * the messages it describes are durable locally, and a restart never reopens before it).
 * JR_EBUSY while restoring, the store's error, or JR_ENOMEM (out->err). Format: see
 * fsm_snapshot.c (versioned, xxh3). */
int jr__stream_fsm_snapshot(jr__stream_fsm *f, jr__buf *out);

/* Installs a snapshot taken (by any replica of this stream) at `index` — see the header comment
 * for the reconciliation. *need_from gets 0 when the fsm is ready to apply entries after index
 * (also when index is at or below the applied index and nothing is being restored: the snapshot
 * is then ignored), or the first seq whose message must be fetched (then the fsm is restoring).
 * The snapshot is validated completely first: JR_ECORRUPT (malformed, checksum, or index
 * mismatch), JR_EVERSION, JR_EINVAL (another stream's snapshot) change nothing; so does
 * JR_ERANGE, a snapshot (after the applied index) whose last seq is below the store's while
 * not restoring (not a state of this replica's log). Store failures fail the fsm. */
int jr__stream_fsm_restore(jr__stream_fsm *f, uint64_t index, const void *snap, size_t len,
                           uint64_t *need_from);

/* The last seq of the stream state snapshot `snap` describes (its messages end there): 0, or
 * JR_ECORRUPT / JR_EVERSION as restore would find them in its header. Reads the header only. */
int jr__stream_fsm_snap_last_seq(const void *snap, size_t len, uint64_t *last_seq);

/* Leader side of catch-up: appends to out the store records of live messages with seq >= from,
 * at most max_bytes (at least one message), and sets *next (last seq + 1 when done). The chunk
 * is checksummed record by record and can travel as is. */
int jr__stream_fsm_read_chunk(jr__stream_fsm *f, uint64_t from, size_t max_bytes, jr__buf *out,
                              uint64_t *next);

/* Follower side: appends a chunk's messages (validated first; JR_ECORRUPT changes nothing),
 * then advances the store's last seq to next - 1, where next is what jr__stream_fsm_read_chunk
 * gave the source with this chunk: a chunk stands for every live message the source had in
 * [from, next), so seqs of that range missing from it are deleted ones (also a deleted tail,
 * which no later chunk would ever bring). Only while restoring (JR_EMISUSE otherwise); limits
 * are suspended until the restore completes, so every message of the chunk is kept. */
int jr__stream_fsm_apply_chunk(jr__stream_fsm *f, const void *chunk, size_t len, uint64_t next);

/* ---------------------------------------------------------------------------------------------
 * Private: the layout shared by fsm.c and fsm_snapshot.c only. Everything else uses the
 * functions above.
 */
#include "stream/dedup.h"

struct jr__stream_fsm {
    const jr_allocator *alloc;
    jr__stream_cfg *cfg; /* current configuration (owned, normal form) */
    jr__store *store;
    jr__dedup dedup;
    size_t dedup_max;
    int64_t clock;      /* largest op timestamp applied */
    uint64_t applied;   /* index of the last applied entry */
    uint64_t last_seq;  /* last seq assigned by the applied entries (= the store's) */
    int64_t last_ts;    /* timestamp of the last stored message (0: none yet) */
    int restoring;      /* a restore waits for chunks: entries refused */
    int limits_pending; /* the store has no limits yet (set at the first apply or restore) */
    int failed;         /* 0 or the local failure that stopped the fsm */
    /* marks (fsm_snapshot.c) */
    int persistent;      /* the store is a file store: marks are written */
    uint64_t marked_seq; /* msg ids of seqs up to this are in the store's marks already */
    /* the msg id of the last message (expected_last_msg_id checks it): on the heap, sized
     * to the longest seen — up to 1 KiB inline would be most of an idle replica's fsm */
    char *last_msg_id;
    size_t last_msg_id_len, last_msg_id_cap;
};

/* Marks (fsm_snapshot.c): writes a mark at the applied index and syncs; after open, installs
 * the state of the store's last mark (0 without one). */
int jr__stream_fsm_mark(jr__stream_fsm *f);
int jr__stream_fsm_load_mark(jr__stream_fsm *f);
/* Store limits for a stream config (normal form). */
void jr__stream_fsm_limits(const jr_stream_config *c, jr__store_limits *out);
/* Marks the fsm failed with rc (a local failure) and returns rc. */
int jr__stream_fsm_fail(jr__stream_fsm *f, int rc);
/* Room for a last msg id of n bytes (0 or JR_ENOMEM, nothing changed). */
int jr__stream_fsm_reserve_id(jr__stream_fsm *f, size_t n);
/* Sets the last msg id (len 0: none); requires jr__stream_fsm_reserve_id(f, len). */
void jr__stream_fsm_set_id(jr__stream_fsm *f, const char *id, size_t len);

#endif
