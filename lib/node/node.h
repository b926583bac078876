/*
 * node — one server: owns the shared WAL, routes peer frames to groups, coalesces outgoing
 * traffic into one frame per peer per flush, keeps one timer heap for every group, and runs
 * the flush cycle that turns the groups' pending work into one WAL write + sync and one frame
 * per peer (ARCHITECTURE §3 "Work is batched", §4). Consensus logic lives in lib/raft only.
 *
 * Files of this module:
 *   node.c      public node API (open, recv, tick, deadline, close, stats), entry/exit
 *   peer.c      the peer table (name <-> id) and the per-peer outgoing frames
 *   recover.c   WAL replay into per-group recovery stashes
 *   group.c     group lifecycle (create, load or bootstrap, free) and the raft io callbacks
 *   flush.c     the flush cycle: stage, one WAL flush, persisted, send, apply, complete
 *   ops.c       completion records (pooled) and the node's completion queue
 *   snapshot.c  taking, storing, sending, receiving and installing snapshots
 *               (the snapshot file format is lib/log/snapfile.h)
 *   rpc.c       node-to-node requests and responses for the layer above (rpc.h)
 *   retire.c    destroying a group for the layer above (services.h "Group destruction")
 *   api_group.c the public raw-group API (jr_group_*)
 *   fsmreport.c a follower's word on its state machines to their leaders (failed, rebuilding)
 *   services.h  the seam with the layer above: the table it registers and the core's services
 *               to it (groups, effects, timers, completions, RPCs, facts and peers)
 *
 * Invariants:
 *  - every group ever opened on this node stays in node->groups until close; a closed group
 *    (g->closed) keeps its raft core dormant (no inputs, no timer) so that its durable state can
 *    be flushed after the close and a later jr_group_open reuses it; messages for it are dropped;
 *  - g->in_ready iff g is on node->ready (an intrusive singly linked list, LIFO order is fine:
 *    groups are independent) or, during a flush, on node->held (flush.c hold_markers);
 *  - g->timer is armed in node->timers at min(jr__raft_deadline, g->op_deadline) whenever that
 *    is finite, re-keyed after every flush that processed g;
 *  - a message that the raft core flagged JR__MF_DURABLE never leaves before the WAL flush that
 *    follows its creation: a peer's frames holding one are sent only right after a successful
 *    flush; frames without one may leave before the flush's write; when the host runs the
 *    sync (jr_host.sync_start), only after the sync that covers the write that follows its
 *    creation (jr__peer_seal_all);
 *  - user callbacks (jr_propose_cb, jr_done_cb) only run from jr__node_drain(), which runs
 *    inside jr_node_recv / jr_node_tick / close, never inside the call that started them;
 *    jr_fsm callbacks run inside the flush (apply) or inside recv (snapshot install) with
 *    g->in_fsm set, and may not call jr_group_* on their own group (JR_EMISUSE).
 *
 * Built for many groups per node:
 *  - one timer heap for every group (g->timer) and one host timer (the earliest deadline); a
 *    tick touches only the groups whose timers are due;
 *  - one ready list: a flush visits only the groups that have work, never all groups;
 *  - one frame per peer per flush, whatever the number of groups; groups are named on the wire
 *    by their compact numeric id;
 *  - an idle group holds no buffers of its own: frames, receive scratch, snapshot buffers and
 *    completion records belong to the node and are reused.
 * Liveness (liveness.h): coalesced heartbeats are node-level messages (JR__MSG_NODE_HB in
 * wire/frame.h), one frame per peer per interval, naming a group only when it goes quiet or
 * stops being quiet; contact is per peer and stands in for every quiet group the two share
 * (jr__live_contact); a quiescent group's timer leaves the heap (jr__raft_deadline() ==
 * UINT64_MAX) and the node-level heartbeat timer stands in for it.
 */
#ifndef JR_NODE_NODE_H
#define JR_NODE_NODE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "log/atrest.h"
#include "log/wal.h"
#include "node/liveness.h"
#include "node/services.h"
#include "raft/raft.h"
#include "util/buf.h"
#include "util/heap.h"
#include "util/map.h"
#include "util/rand.h"
#include "wire/frame.h"

#define JR__JOINERS 4 /* members catching up a leader watches per group */

/* A member catching up that a group's leader watches (snapshot.c catching_up): the acknowledged
 * index seen last and when it last moved; the lag when the current window of an election
 * timeout began, and how many windows in a row (up to 2) the lag grew over; id 0 marks a free
 * slot. */
struct jr__joiner {
    jr__id id;
    uint64_t match, moved_at, window_at, window_lag;
    uint8_t grew;
};
/* A group's leader lets a commit wait up to heartbeat_ns / JR__COMMIT_DELAY_DIV (1.5625 ms at the
 * default 100 ms) for the next APPEND to carry it to the followers before it sends it alone
 * (raft.h commit_delay): a publisher that waits for each ack makes the next APPEND within it,
 * so its commits cost no frames; an idle group's followers learn the last commit that much
 * later (a read barrier's commit goes at once: jr__group_commit_now). */
#define JR__COMMIT_DELAY_DIV 64

/* ---------------------------------------------------------------------------------------------
 * Peers (peer.c)
 */
struct jr__peer {
    char *name;
    jr__id id;
    jr__buf *frames;     /* outgoing frames, frames[0..nframes) in use; buffers are reused */
    uint32_t nframes;    /* 0: nothing pending */
    uint32_t cap;        /* allocated jr__buf slots */
    uint32_t frame_base; /* bytes of the last frame before its first message: header, LIFE */
    struct jr__peer *dirty_next;
    uint8_t dirty;       /* on node->dirty_peers */
    uint8_t held;        /* a queued message is JR__MF_DURABLE: send only after the WAL sync */
    uint32_t sealed;     /* frames[0..sealed) wait for the sync in flight (jr_host.sync_start):
                            they hold a JR__MF_DURABLE message it vouches for; later messages
                            go to later frames, and held speaks of those */
    uint64_t last_heard; /* now() of the last valid frame from this peer; 0 never */
    uint64_t life;       /* its life as it last announced it (JR__EXT_LIFE; 0: none) ... */
    uint64_t life_at;    /* ... at this now() */
    jr__plive live;      /* heartbeats and quiet followers of this peer (liveness.h) */
    /* Cluster membership (peer.c "Membership"): the meta group removed this server; its frames
     * are refused with JR_EREMOVED and it is told so (a REMOVED request) at most once per
     * election timeout, from removed_told on. */
    uint8_t removed;
    uint64_t removed_told;
    /* The meta state holds its removal (jr__node_peer_gone): no unvouched group of this node
     * waits for its answer, as if an operator had declared it gone (jr_node_rescue). */
    uint8_t gone;
};

/* ---------------------------------------------------------------------------------------------
 * Completion records (ops.c). Pooled: steady state allocates nothing.
 */
enum jr__op_kind { JR__OP_PROPOSE = 1, JR__OP_DONE = 2 };

struct jr__op {
    struct jr__op *next;
    uint64_t index; /* entry index the op waits for (0: not tied to an entry) */
    uint64_t term;  /* term the entry was appended in */
    int status;     /* filled in at completion */
    uint8_t kind;   /* enum jr__op_kind */
    union {
        jr_propose_cb propose;
        jr_done_cb done;
    } cb;
    void *arg;
};

typedef struct jr__opq {
    jr__op *head, *tail;
} jr__opq;

/* ---------------------------------------------------------------------------------------------
 * Recovery stash (recover.c): what the WAL replay found for one group, until jr_group_open.
 */
typedef struct jr__stash_ent {
    uint64_t term;
    uint64_t index;
    uint64_t off; /* of the payload in the stash arena */
    uint32_t len;
    uint8_t type;
} jr__stash_ent;

typedef struct jr__stash {
    uint64_t group;
    jr__hardstate hs;
    uint8_t has_hs;
    uint8_t damaged;
    uint64_t compact_index, compact_term; /* last compaction marker (0: none) */
    uint64_t snap_index;                  /* newest snapshot file found (0: none) */
    jr__stash_ent *ents;
    size_t nents, ecap;
    uint8_t *arena;
    size_t alen, acap;
} jr__stash;

/* ---------------------------------------------------------------------------------------------
 * Groups (group.c, api_group.c)
 */
struct jr_snapshot_writer {
    jr__buf *buf;
    int err;
};

struct jr_group {
    jr_node *node;
    uint64_t id;
    jr__raft *raft;
    jr__timer timer; /* in node->timers */
    struct jr_group *ready_next;
    struct jr_group *flush_next; /* the batch a flush iteration is processing */
    uint64_t stage_to;           /* flush: last index durable once this iteration's write is */
    uint8_t hs_staged;           /* flush: the hard state was staged in this iteration */
    uint8_t marker_staged;       /* flush: the pending compaction marker was staged */
    uint64_t cut_from;           /* flush: a log cut staged and not yet written (0: none) */
    uint8_t durable_apply;       /* applies only what a durable commit index covers
                                    (jr__group_durable_apply) */
    uint8_t conf_stale;          /* conf_bytes could not follow a CONFIG entry (no snapshots) */
    uint8_t marker_pending;      /* the WAL must learn of snapshot marker_index before any later
                                    record of this group (see jr__group_mark_snapshot) */
    uint64_t marker_index, marker_term;
    uint64_t marker_at; /* when marker_pending was set: a marker alone waits for a write, at most
                           a heartbeat interval (flush.c hold_markers) */
    uint8_t in_ready;
    uint8_t closed;
    uint8_t damaged;        /* never votes, never campaigns (see group.c): set at open for
                               damage recovery found (handed to the raft core there), and while
                               running when the fsm's restore failed (fsm_failed) */
    uint8_t fsm_failed;     /* its fsm's restore of a durable snapshot failed (snapshot.c): the
                               log and the snapshot are whole, the state machine is not */
    uint8_t wal_damaged;    /* the WAL holds this group damaged: once whole, its records are
                               written again as a new incarnation (flush.c stage_rewrite) */
    uint8_t rewrite_staged; /* flush: that rewrite was staged in this iteration */
    /* A write whose sync the host runs (jr_host.sync_start): the group is on node->syncing
     * from the write until jr_node_synced; stage_to, hs_staged, marker_staged, rewrite_staged
     * and sync_hs then describe what the write holds, sync_term the term of entry stage_to
     * (jr_node_synced vouches for it only if the entry is still there, flush.c sync_done). */
    struct jr_group *sync_next;
    uint8_t in_sync;
    uint64_t sync_term;
    jr__hardstate sync_hs; /* the hard state staged (when hs_staged) */
    uint64_t sync_marker;  /* the compaction marker staged (when marker_staged) */
    uint8_t in_fsm;        /* inside a jr_fsm callback of this group */
    uint8_t was_leader;    /* role seen at the last flush (a change is told to the layer
                              above: jr__upper.role_changed) */
    jr_fsm fsm;
    uint64_t snapshot_entries;
    uint64_t applied;      /* last index applied to the fsm (or restored from a snapshot) */
    uint64_t lost_commits; /* jr__raft_lost_commits() as apply last saw it (flush.c) */
    uint64_t persisted;    /* last index known durable in the WAL */
    uint64_t leader_term;  /* term of the leadership pending ops belong to */
    jr__opq pending;       /* proposals and membership changes, by ascending index */
    jr__op *transfer;      /* pending leadership transfer (at most one) */
    jr__id transfer_to;    /* 0: best peer */
    uint64_t op_deadline;  /* transfer timeout; UINT64_MAX none */
    /* snapshots (snapshot.c) */
    uint64_t snap_index, snap_term; /* newest durable snapshot file (0: none) */
    uint64_t snap_retry;            /* after a failed attempt: do not try again before this index */
    uint8_t snap_wanted; /* the WAL needs this group compacted: snapshot at the next chance */
    uint8_t *conf_bytes; /* jr__conf_encode of the configuration at `applied` */
    uint32_t conf_len;
    jr_file *snap_file; /* leader: open handle of the file at snap_index (lazy) */
    jr_file *in_file;   /* follower: incoming snapshot being received */
    uint64_t in_index, in_size;
    jr__sealf_writer *in_seal; /* with a node key: seals in_file as it arrives (lazy) */
    jr__glive live;            /* quiet-group lists it is on (liveness.h) */
    /* Its state machine as the layer above says (jr__group_set_fsm_state; enum
     * jr__fsm_state), told to its leader while listed (fsmreport.c): fsm_listed iff on
     * node->fsm_list (linked by fsm_next); fsm_clears: reports of "whole" still to send. */
    uint8_t fsm_state;
    uint8_t fsm_listed;
    uint8_t fsm_clears;
    struct jr_group *fsm_next;
    /* leader: the members catching up whose progress it watches (snapshot.c catching_up), an
     * array of JR__JOINERS allocated while any is watched, NULL otherwise (most groups never
     * have a joiner, and an idle group's memory is what many-stream nodes pay for) */
    struct jr__joiner *joiners;
};

/* ---------------------------------------------------------------------------------------------
 * The node
 */
typedef struct jr__node_hooks {
    void *ctx;
    /* Every committed entry applied by a group (internal ones too), in order. */
    void (*applied)(void *ctx, jr_node *n, uint64_t group, const jr__entry *e);
    /* A group's state was replaced by a snapshot at index (install or load at open). */
    void (*restored)(void *ctx, jr_node *n, uint64_t group, uint64_t index, uint64_t term);
} jr__node_hooks;

struct jr_node {
    const jr_allocator *alloc;
    jr_host host;
    jr_vfs *vfs;
    char *name;
    jr__id self;
    char *wal_dir;
    char *snap_dir;
    uint64_t election_ns, heartbeat_ns;
    uint32_t max_frame;
    uint32_t max_msg_bytes; /* entry bytes per Raft message of every group (group.c) */
    /* max_msg_bytes leaves room for one entry of max_payload bytes of message plus
     * JR__NODE_ENTRY_FRAMING (the layer above asserts its framing fits) plus 1024. */
    uint32_t max_payload;       /* headers + data of a published message (api_stream.c) */
    uint64_t store_block_bytes; /* file stores' block size; 0: the store's default */
    int sync_policy;
    uint64_t seed;
    jr__rand rand;

    /* peers */
    jr__peer **peers; /* by insertion; peers[i]->id unique */
    size_t npeers, peers_cap;
    jr__map peer_by_id;
    jr__peer *dirty_peers;

    /* groups */
    jr__map groups;      /* id -> jr_group* (open and closed) */
    uint64_t ngroups;    /* open groups */
    jr__heap timers;     /* the node's one timer heap: every group's, and the upper layer's */
    jr_group *ready;     /* groups with work for the next flush */
    jr_group *held;      /* during a flush: ready groups whose only write is a compaction
                            marker not due yet (flush.c hold_markers; still in_ready) */
    jr__map stashes;     /* id -> jr__stash* (recovered, not yet opened) */
    jr__map released;    /* id -> jr__released*: what a replica released here knew of its
                            group, answered to VOUCH (released.c) */
    uint8_t all_damaged; /* the WAL reported damage it could not attribute */
    uint8_t reborn;      /* an earlier life ran here: the mark or a WAL segment was found */
    uint8_t wal_lost;    /* the node's mark is in wal_dir but no WAL segment is (recover.c):
                            every group it opens starts unvouched and damaged */
    jr__id rescued[8];   /* servers an operator declared gone (jr_node_rescue): every unvouched
                            group of this node, open or opened later, stops waiting for them;
                            kept in wal_dir/rescued (recover.c), so a restart keeps it */
    uint8_t nrescued;
    /* wal_dir/released is behind n->released: written at the start of the next flush, before
     * any WAL DROP waiting for it (released.c) */
    uint8_t released_dirty;

    jr__wal *wal;
    uint64_t flush_gen;
    /* The WAL's sync run by the host (jr_host.sync_start, flush.c): the job handed out, set
     * while it is in flight, and the groups whose write it covers (g->sync_next). */
    struct jr_sync_job {
        jr_node *node;
        jr_vfs *vfs;
        jr_file *file;
    } sync_job;
    uint8_t sync_inflight;
    jr_group *syncing;
    jr__confs *confs;  /* raft configurations, interned for every group (raft.h) */
    size_t unpin_segs; /* WAL segment count when groups were last asked to unpin */
    /* Log a leader keeps behind a snapshot (snapshot.c trailing_for): at most keep_bytes for the
     * followers it replicates to, at most join_keep_bytes for a member catching up (an observer
     * that moves and does not keep falling behind: snapshot.c catching_up). Each member's share
     * is what it still needs; the bounds keep the core's in-memory log from growing without
     * limit for a member that never gets there. Set at open from jr_node_config's keep_bytes
     * and join_keep_bytes. kept_max: the most log bytes a snapshot of any group of this node
     * left behind it. */
    uint64_t keep_bytes, join_keep_bytes, kept_max;

    /* completion records */
    jr__op *op_free;
    void *op_chunks; /* list of pool chunks */
    jr__opq done;    /* completed, callbacks not yet run */
    int draining;

    /* receive scratch */
    jr__entry *scratch;
    size_t scratch_cap;

    /* snapshot scratch (reused) */
    jr__buf snap_raw;
    jr__buf snap_enc;

    /* entry/exit */
    int depth;               /* nesting of public entry points */
    uint8_t want_tick;       /* work is pending: deadline is now */
    uint64_t retry_at;       /* ready work waits until then: after a failed flush, or when
                                only held compaction markers are ready (flush.c) */
    uint8_t close_requested; /* jr_node_close called from inside a callback */
    uint8_t closing;
    uint8_t flushing;      /* a flush iteration walks its batch (jr__node_flush's loop) */
    uint8_t closing_drain; /* the flush's last drain runs: what its callbacks queue for peers
                              leaves right after it (rpc.c asks for no tick to carry it) */
    uint64_t now;          /* host->now() at the current entry point */
    uint64_t armed;        /* last value given to host->arm (UINT64_MAX: none) */
    int rearm;             /* a tick consumed the host's timer: arm again on leaving */

    jr__node_hooks hooks;
    jr_node_stats stats;
    uint64_t msgs_unknown_group; /* dropped: group not open here */
    uint64_t msgs_invalid;       /* dropped: refused by the group's core (jr__raft_step) */
    uint64_t msgs_unknown_type;  /* skipped: an extension type, or a request kind, not known */
    uint64_t msgs_unroutable;    /* dropped: peer unknown or frame would overflow */
    uint64_t send_failures;      /* host->send returned non-zero */
    char errmsg[256];
    /* node-to-node requests (rpc.h) */
    jr__map rpc_calls;        /* call id -> outstanding call */
    uint64_t rpc_next;        /* the last call id given */
    jr__map rpc_origins;      /* peer id -> its recent requests executed here ("At most once") */
    uint64_t rpc_dups;        /* requests that arrived again (not executed again) */
    uint64_t rpc_stale;       /* requests too old to tell from a duplicate (dropped) */
    uint64_t life;            /* this open's random non-zero life (JR__EXT_LIFE) */
    uint64_t rpc_wary_until;  /* until then a request may be one an earlier life of this
                                 server executed (rpc.h "After a restart"); 0: first start */
    uint8_t rpc_unsure;       /* in the request hook: the request may be such a duplicate */
    uint64_t rpc_wary_writes; /* writes refused for that (JR_ELEADERLOST) */
    /* The layer above the core, if one attached at open (services.h "The seam"): its table
     * and its pointer, which the core only hands back. */
    const jr__upper *upper_tab;
    void *upper;
    uint64_t *retiring; /* groups destroyed whose WAL DROP waits for memory (retire.c) */
    size_t nretiring, retiring_cap;
    struct jr__effect *effects; /* deferred by applies, run after the flush loop (flush.c) */
    size_t neffects, effects_cap;
    jr__live live; /* coalesced heartbeats, peer liveness (liveness.h) */
    /* Groups whose state machine is not whole, or was not lately (fsmreport.c), the next
     * report to their leaders (meaningful while the list is not empty) and the items buffer. */
    jr_group *fsm_list;
    uint64_t fsmr_next;
    jr__fsm_item *fsmr_items;
    size_t fsmr_cap;
    /* Cluster membership (peer.c "Membership"). */
    uint8_t removed;      /* this server was removed from the cluster: it takes no part */
    uint64_t stranger_at; /* when a frame of an unknown server was last handed over (a join) */
    uint64_t strangers_refused; /* frames of unknown servers refused (counted in frames_rejected) */
    /* Encryption at rest (jr_node_config.key): the node key, from which the WAL derives its
     * key and each file store its stream's, and the snapshot files' key (atrest.h). */
    uint8_t has_key;
    uint8_t node_key[JR_NODE_KEY_BYTES];
    jr__atrest_key snap_key;
};

/* The seam to the layer above: services.h (the table it registers, and every service of the
 * core it may use; the layer includes nothing else of lib/node). Declared there and defined
 * here: groups, their destruction (retire.c), effects (flush.c), timers and completions. */

/* A queued effect (services.h "Effects"). */
struct jr__effect {
    jr__effect_fn fn;
    uint64_t arg;
};
/* Runs the queued effects, after the flush loop. */
void jr__node_run_effects(jr_node *n);
/* Writes the released records if they changed (jr__released_save), then stages the WAL DROPs
 * of destroyed groups that waited for them or for memory (the start of jr__node_flush). If the
 * records cannot be written, no DROP is staged (logged; tried again at the next flush). */
void jr__node_retry_drops(jr_node *n);
/* Stages the WAL DROP of retiring group id now, if it waits (for the released records or for
 * memory) and no flush iteration runs: for a group whose record was forgotten (deleted), whose
 * DROP need not wait for the file. Nothing changes on JR_ENOMEM. */
void jr__node_retire_now(jr_node *n, uint64_t id);
/* What a replica this node released last knew of its group: its commit index and latest
 * configuration (entry index, jr__conf_encode bytes). A VOUCH for the group is answered with it
 * (node.c vouch_unhosted): an asker whose own record of the configurations since is lost learns
 * of them and asks their members (raft/vouch.c). Kept in wal_dir/released (released.c: format,
 * order against the WAL DROP, bound), so a restart keeps it; dropped when the group is created
 * here again or the layer above says it was deleted (jr__node_released_forget, _sweep). */
typedef struct jr__released {
    uint64_t commit, conf_index;
    uint32_t conf_len;
    uint8_t conf[];
} jr__released;
/* Bytes of the largest jr__conf_encode (JR__MAX_MEMBERS members: a one-byte count, 9 each). */
#define JR__RELEASED_CONF_MAX (1 + JR__MAX_MEMBERS * 9)
/* Bytes of the smallest record of the file (no member: a one-byte configuration). */
#define JR__RELEASED_RECORD_MIN (8 + 8 + 8 + 4 + 1)
/* The largest record of the file. */
#define JR__RELEASED_RECORD_MAX (8 + 8 + 8 + 4 + JR__RELEASED_CONF_MAX)
/* One record as the file holds it (conf borrows the bytes decoded). */
typedef struct jr__released_item {
    uint64_t group, commit, conf_index;
    uint32_t conf_len;
    const uint8_t *conf;
} jr__released_item;
typedef int (*jr__released_fn)(void *ctx, const jr__released_item *it);

/* released.c --------------------------------------------------------------------------------*/

/* Keeps what g's replica knew (its commit index and latest configuration), replacing any
 * earlier record of g's id; the file follows at the next flush (jr__released_save). Out of
 * memory nothing changes (logged). */
void jr__released_remember(jr_node *n, jr_group *g);
/* The same for a group released as a recovery stash, never opened in this life (a crash before
 * its record was durable, or its replica left while this server was down): the commit index
 * and latest configuration a raft core loaded from s would hold (group.c group_load: the
 * hard state's commit, within the log; the newest readable snapshot file, whose header gives
 * the configuration at its index; the CONFIG entries of jr__stash_span after it). Reads the
 * snapshot file, so call it before the group's snapshot files are removed. A record already
 * kept for the group that knew more (a higher commit index, or the same with a later
 * configuration) stays: a stash left by a crash after the record was durable, whose snapshot
 * files were removed, knows less than the record. 0; JR_ENOMEM or an I/O error reading the
 * snapshot file (nothing changed: the caller keeps the stash and tries again later). A stash
 * from which nothing can be known (no configuration: a snapshot that does not decode with the
 * log compacted past it) changes nothing and is 0. */
int jr__released_remember_stash(jr_node *n, const jr__stash *s);
/* Appends the file's bytes for the records of m (released.c has the format). 0 or JR_ENOMEM. */
int jr__released_encode(const jr__map *m, jr__buf *b);
/* Decodes the file's bytes p[0..len), calling each for every record in order (a non-zero
 * return stops and is returned). Checks the checksum before anything, then every bound: 0, or
 * JR_ECORRUPT for anything malformed (each may have been called for the records before). */
int jr__released_decode(const uint8_t *p, size_t len, jr__released_fn each, void *ctx);
/* Writes the records to wal_dir/released (temporary file, sync, rename) if they changed since
 * it was last written or read. 0 (then released_dirty is 0) or the I/O error (logged). */
int jr__released_save(jr_node *n);
/* Reads wal_dir/released into n->released (jr_node_open). No file: nothing. A damaged file is
 * logged and none of it used (0); an I/O error or JR_ENOMEM is returned. */
int jr__released_load(jr_node *n);
void jr__node_released_free(jr_node *n);

/* node.c ------------------------------------------------------------------------------------*/

/* The earliest time the node needs jr_node_tick(). */
uint64_t jr__node_next_deadline(const jr_node *n);
/* Closes without flushing anything (a simulated crash): pending callbacks still complete with
 * JR_ECLOSED; nothing more is written or sent. */
void jr__node_close_noflush(jr_node *n);
/* Installs observation hooks (the simulation fixture's digest and checkers). */
void jr__node_set_hooks(jr_node *n, const jr__node_hooks *h);

/* peer.c ------------------------------------------------------------------------------------*/

/* Adds a peer by name (id = jr__xxh3 of the name). 0, JR_EEXIST (same name), JR_EINVAL (id 0 or
 * an id collision with another name), JR_ENOMEM. */
int jr__peer_add(jr_node *n, const char *name);
/* The id a name maps to (never 0 for a valid peer; 0 if the hash is 0). */
jr__id jr__peer_id(const char *name);
/* A frame of a server not in the peer table (jr_node_recv): refused with JR_EAUTH unless it is
 * a join request the layer above may take (peer.c "Membership"); 0 if it was handed over. */
int jr__peer_stranger(jr_node *n, const char *from, const void *frame, size_t len);
/* A valid frame from removed peer p: tells p (rate-limited) and returns JR_EREMOVED. */
int jr__peer_refuse_removed(jr_node *n, jr__peer *p);
/* Queues m (m->from must be n->self) in the peer's current frame, starting a new frame if it
 * would exceed max_frame. Unknown peer or a message too big for any frame: dropped, counted. */
void jr__peer_queue(jr_node *n, const jr__msg *m);
/* Sends queued frames through host->send and resets the buffers: all of them, or with
 * include_held == 0 only those of peers without a JR__MF_DURABLE message queued. */
void jr__peer_send_all(jr_node *n, int include_held);
/* Drops every queued frame (e.g. after a failed WAL flush). */
void jr__peer_discard_all(jr_node *n);
/* A write whose sync the host runs was made: every peer holding a JR__MF_DURABLE message seals
 * its frames (they leave with jr__peer_send_sealed once that sync is done); a peer with sealed
 * frames sends nothing before them. */
void jr__peer_seal_all(jr_node *n);
/* The sync in flight is done: every peer's sealed frames leave. */
void jr__peer_send_sealed(jr_node *n);
/* Room in peer p's frame for a message of `need` bytes: the open frame, or a new one when there
 * is none or the message would take it past max_frame; p goes on the node's dirty list (its
 * frames leave with the next jr__peer_send_all). The one place that starts frames, so that
 * every kind of message (group messages, RPCs, heartbeats) batches the same way. Requires need
 * <= max_frame - JR__FRAME_HEADER. NULL on JR_ENOMEM (nothing changed but p's dirty mark).
 * Invariant: a peer's frames each hold at least one message once the writer that asked for
 * room has appended (or undone) its message. */
jr__buf *jr__peer_frame(jr_node *n, jr__peer *p, size_t need);
/* After an append to b (from jr__peer_frame) failed: restores b to its `before` length, clears
 * its error, and drops the frame again if it holds nothing but its header. */
void jr__peer_frame_undo(jr__peer *p, jr__buf *b, size_t before);
void jr__peer_free_all(jr_node *n);

/* ops.c -------------------------------------------------------------------------------------*/

/* A zeroed record from the pool; NULL on JR_ENOMEM. */
jr__op *jr__op_get(jr_node *n);
void jr__op_pool_free(jr_node *n);
static inline void jr__opq_push(jr__opq *q, jr__op *op)
{
    op->next = NULL;
    if (q->tail)
        q->tail->next = op;
    else
        q->head = op;
    q->tail = op;
}
static inline jr__op *jr__opq_pop(jr__opq *q)
{
    jr__op *op = q->head;
    if (op) {
        q->head = op->next;
        if (!q->head) q->tail = NULL;
        op->next = NULL;
    }
    return op;
}
/* Completes every op of q with status (index 0). */
void jr__opq_fail_all(jr_node *n, jr__opq *q, int status);

/* recover.c ---------------------------------------------------------------------------------*/

/* Opens the WAL and replays it into n->stashes; lists snapshot files; reads the servers
 * declared gone (n->rescued). 0 or an error. */
int jr__recover_open(jr_node *n, uint64_t segment_bytes, uint32_t sync_interval_ms);
/* Replaces file `path` by one holding b[0..len): written to `tmp`, synced, then renamed over
 * `path` (durable when rename returns, the jr_vfs contract), so that path holds its old bytes or
 * all the new ones, never a part. 0, or the error (logged). */
int jr__node_write_replacing(jr_node *n, const char *tmp, const char *path, const uint8_t *b,
                             size_t len);
/* Writes n->rescued to wal_dir/rescued (temporary file, sync, rename). 0 or an I/O error. */
int jr__rescued_write(jr_node *n);
void jr__stash_free(jr_node *n, jr__stash *s);
void jr__stash_free_all(jr_node *n);
/* The entries of s that a raft core loads after a snapshot at (si, st) (si 0: none): indexes
 * [*from, return) of s->ents, contiguous from si + 1 with terms that never go down. None when
 * the WAL's entry at si has another term (an abandoned history) or when the log does not resume
 * at si + 1 (then *resumes is the index it resumes at, else 0: the group is damaged). The one
 * rule for opening a stash (group.c) and for what a released stash knew (released.c). */
size_t jr__stash_span(const jr__stash *s, uint64_t si, uint64_t st, size_t *from,
                      uint64_t *resumes);

/* group.c -----------------------------------------------------------------------------------*/

/* Frees g and its raft core (node close, or through jr__group_release). */
void jr__group_free(jr_group *g);
/* Forgets a detached group for good: removes it from n->groups and frees it. Only outside a
 * flush iteration (the flush walks the groups it took off the ready list). */
void jr__group_release(jr_group *g);
/* Puts g on the ready list (idempotent). */
void jr__group_ready(jr_group *g);
/* Re-keys g's timer to min(raft deadline, op deadline). */
void jr__group_rearm(jr_group *g);
/* Runs g's due timers at n->now. */
void jr__group_tick(jr_group *g);
/* p's server was removed for good and its frames are refused (p->removed): g's core is told
 * (raft/removed.c), so a whole replica of a group whose voters are it and p alone counts p's
 * vote and acknowledgement as given; the log says whether it does, and why not. */
void jr__group_peer_removed(jr_group *g, const jr__peer *p);
/* The raft core of g (tests and the simulation fixture inspect it). */
jr__raft *jr__group_raft(const jr_group *g);
/* This replica cannot serve: its fsm's restore failed while running (fsm_failed), or it lost
 * data and waits for repair (jr__group_lost). Such a replica takes no proposal. */
int jr__group_damaged(const jr_group *g);
/* This replica lost data and waits for repair: what its raft core holds (found at recovery, or
 * a divergence). What jr_group_status.damaged reports; a failed fsm is reported apart. */
int jr__group_lost(const jr_group *g);

/* fsmreport.c -------------------------------------------------------------------------------
 * A follower's word on its state machines, to their leaders (the wire's FSM extension). */

/* This replica's state machine as reported (enum jr__fsm_state): failed when its fsm's restore
 * failed (g->fsm_failed), else the layer's word (g->fsm_state). */
uint8_t jr__group_fsm(const jr_group *g);
/* g's reported state may have changed: it is told to g's leader at the next tick (and every
 * heartbeat interval while not whole). */
void jr__fsmr_changed(jr_group *g);
/* g is freed: off the list. */
void jr__fsmr_forget(jr_group *g);
/* Sends the reports due (jr_node_tick, before the flush that carries them). */
void jr__fsmr_tick(jr_node *n);
/* When jr__fsmr_tick has work: UINT64_MAX while no group is listed. */
uint64_t jr__fsmr_deadline(const jr_node *n);
/* An FSM extension from peer p: each item goes to its group's core (raft.h
 * jr__raft_fsm_report); a payload of another version is counted as an unknown type, a malformed
 * one as invalid, and skipped. */
void jr__fsmr_recv(jr_node *n, jr__peer *p, const jr__ext_view *x);
/* Empties the list and frees the items buffer (close). */
void jr__fsmr_free(jr_node *n);

/* flush.c -----------------------------------------------------------------------------------*/

/* The flush cycle (see flush.c). callbacks == 0 persists and sends but applies nothing (used at
 * close). Returns 0 or the first error (WAL I/O: nothing was sent). */
int jr__node_flush(jr_node *n, int callbacks);
/* The sync the host ran (jr_host.sync_start) ended with rc: what its write covers is durable
 * (flush.c); 0, or the WAL's error. jr_node_synced runs a flush after it. */
int jr__node_sync_done(jr_node *n, int rc);

/* snapshot.c --------------------------------------------------------------------------------*/

/* Takes a snapshot of g's fsm at g->applied if it has one and enough entries were applied
 * (or the WAL asked for one: snap_wanted). */
int jr__snap_maybe_take(jr_group *g);
/* Asks the groups that keep the WAL's oldest segment alive for a snapshot, so that a group that
 * went idle before reaching its snapshot threshold cannot keep the WAL from being reclaimed.
 * Checked whenever the segment count changed; called after a successful WAL flush. */
void jr__snap_unpin_wal(jr_node *n);
/* Loads g's snapshot file at index `want` and restores the fsm from it; index, term and conf
 * receive what the file holds. 0, JR_ENOMEM, or an error that makes the snapshot unusable
 * (JR_ECORRUPT, JR_EIO, JR_ENOTFOUND, JR_ENOTSUP without fsm.restore, the fsm's own error). */
int jr__snap_load(jr_group *g, uint64_t want, uint64_t *index, uint64_t *term, jr__conf *conf);
/* Reads the header of group's snapshot file at index `want` (the whole file is read and
 * checked, not decompressed; nothing is restored): its term and configuration. 0, JR_ENOMEM,
 * JR_ENOTFOUND, an I/O error, or JR_ECORRUPT / JR_EVERSION / JR_EAUTH for a file that is not a
 * usable snapshot of (group, want). */
int jr__snap_peek(jr_node *n, uint64_t group, uint64_t want, uint64_t *term, jr__conf *conf);
/* raft io callbacks */
int jr__snap_read(void *ctx, jr__raft *r, uint64_t index, uint64_t offset, void *buf, size_t cap,
                  size_t *n);
int jr__snap_write(void *ctx, jr__raft *r, uint64_t index, uint64_t offset, const void *data,
                   size_t len);
int jr__snap_install(void *ctx, jr__raft *r, uint64_t index, uint64_t term, const jr__conf *conf);
/* Releases g's open snapshot handles. */
void jr__snap_close_files(jr_group *g);
/* Frees the table of members catching up g's leader watches (snapshot.c catching_up). */
void jr__group_forget_joiners(jr_group *g);
/* Path of g's snapshot file at index into buf (cap bytes). */
void jr__snap_path(const jr_node *n, uint64_t group, uint64_t index, const char *suffix, char *buf,
                   size_t cap);
/* Records that g's log now starts after a durable snapshot at (index, term): the WAL's
 * compaction marker is staged by the next flush before any other record of g, so the WAL never
 * sees g's log resume past entries it still holds without the marker (it would report a gap). */
void jr__group_mark_snapshot(jr_group *g, uint64_t index, uint64_t term);
/* Sets g->conf_bytes to the encoding of c. 0 or JR_ENOMEM. */
int jr__group_set_conf(jr_group *g, const jr__conf *c);

#endif
