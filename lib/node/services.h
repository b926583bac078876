/*
 * services — the node core's side of the seam with the layer above it: all that layer may use
 * of the core, and all it sees of it (ARCHITECTURE §2, "one seam").
 *
 * The layer above includes this header and no other of lib/node (test/abi/layering.sh holds it
 * to that). It holds handles — jr_node *, jr_group *, jr__peer *, jr__op * — whose structures
 * stay the core's, and calls the functions below. The core, for its part, knows the layer only
 * as the table it registered and an opaque pointer it hands back (jr__upper): no name of the
 * layer appears in lib/node.
 *
 * What the core offers:
 *  - the seam itself: the table of hooks (before flush, role changed, request, close) and the
 *    layer's pointer, registered during open (jr__node_open's attach callback);
 *  - the node's facts (name, id, allocator, timeouts, limits; constant from open on) and its
 *    clock (jr__node_now: the host's now() read once per entry point);
 *  - entry and exit of the layer's public calls, the node's last error and its log;
 *  - peers by id or name, their names and when each was last heard from;
 *  - groups: create, detach, destroy (with their WAL records and snapshot files), propose, and
 *    read their state (role, leader, configuration: jr__group_consensus); the layer's word on
 *    a group's state machine, told to its leader (jr__group_set_fsm_state);
 *  - deferred effects (run after the flush loop, never inside an apply);
 *  - timers on the node's one heap;
 *  - completion records: a user callback reserved when a call is accepted and run from the
 *    node's completion queue;
 *  - node-to-node requests (RPCs; the full contract is rpc.h's);
 *  - the counters the layer bumps (jr__node_count).
 *
 * Invariants the layer may rely on:
 *  - every hook and every callback of these services runs on the node's thread, inside a
 *    jr_node_* or jr_group_* call, never inside the service call that set it up;
 *  - during a hook or a callback, the node's clock (jr__node_now) is the one of the current
 *    entry point;
 *  - once close began (jr__node_closing is 1) the core calls no hook but before_flush, for the
 *    flush that persists what is pending (the layer stages nothing then), and last close;
 *    completions queued before still run (their callbacks get JR_ECLOSED where the work was
 *    cut short). The registration is gone once close returned.
 */
#ifndef JR_NODE_SERVICES_H
#define JR_NODE_SERVICES_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "raft/raft.h"
#include "util/heap.h"

/* Bytes a message of the layer above (a stream entry) may hold beyond the headers and data of
 * the message it carries; the node sizes every group's Raft messages to carry one entry of
 * max_payload bytes of message plus this (node.c set_limits). */
#define JR__NODE_ENTRY_FRAMING 8192u

typedef struct jr__peer jr__peer; /* a server of the cluster (peer.c) */
typedef struct jr__op jr__op;     /* a completion record (ops.c) */

/* The seam -----------------------------------------------------------------------------------
 *
 * The node core knows nothing of streams. A layer above it attaches during open (the attach
 * callback of jr__node_open, which runs after WAL recovery with the normalised config) by
 * registering a static table and its own pointer (jr__node_set_upper); the core calls each hook,
 * with that pointer, at one point:
 *   before_flush  at the start of every flush: stage what the layer batched during the call;
 *   role_changed  in the flush that first sees a group become leader or stop being one;
 *   request       a request of another server that is to run (rpc.h: admitted, not a
 *                 duplicate), kind and payload as sent (the payload borrowed for the call); the
 *                 layer answers it, now or later, with jr__rpc_respond(n, from, id, ...);
 *   close         at close, after the groups were detached and completions drained: fail
 *                 what is outstanding (its RPC calls too: jr__rpc_close; callbacks run before
 *                 it returns) and free the layer. The registration is gone after it.
 */
typedef struct jr__upper {
    void (*before_flush)(void *upper);
    void (*role_changed)(void *upper, uint64_t group);
    void (*request)(void *upper, jr__id from, uint64_t id, uint8_t kind, const uint8_t *p,
                    size_t len);
    void (*close)(void *upper, int flush);
    /* Optional (NULL: none). A join request (RPC kind JR__RPC_JOIN) from `from`, a server the
     * node does not know: the only thing such a server may send (peer.c "Membership"), handed
     * over at most once per heartbeat interval. The layer answers it, now or later, with
     * jr__rpc_respond_stranger. */
    void (*join)(void *upper, const char *from, uint64_t id, const uint8_t *p, size_t len);
    /* Optional (NULL: every replica may). 1 if the layer's assignment of `group` (the servers
     * it places the group on) no longer names this server: its replica may have been removed
     * from the group by a change it never received, so it must not stand in for a removed
     * voter (group.c jr__group_peer_removed, raft/removed.c); 0 otherwise, and for a group the
     * layer does not place. Asked with the layer's state as applied at that moment. */
    int (*unassigned)(void *upper, uint64_t group);
} jr__upper;

/* Opens the node core (jr_node_open's contract). attach, if not NULL, runs after recovery with
 * the normalised config; its error fails the open (*out NULL, nothing left open). */
int jr__node_open(const jr_node_config *cfg, int (*attach)(jr_node *n, const jr_node_config *cfg),
                  jr_node **out);
/* Registers the layer above: tab (static; NULL unregisters) and its pointer, handed to every
 * hook and returned by jr__node_upper. */
void jr__node_set_upper(jr_node *n, const jr__upper *tab, void *upper);
/* The pointer registered with tab (NULL if tab is not the registered table). */
void *jr__node_upper(const jr_node *n, const jr__upper *tab);

/* The node -----------------------------------------------------------------------------------*/

/* What the node was opened with, constant from open on (copy it where it is used often). */
typedef struct jr__node_facts {
    const jr_allocator *alloc;
    const char *name; /* this server's name (lives as long as the node) */
    jr__id self;      /* its id */
    uint64_t election_ns, heartbeat_ns;
    uint32_t max_frame;         /* bytes of one frame to a peer */
    uint32_t max_payload;       /* headers + data of a published message */
    uint32_t max_msg_bytes;     /* entry bytes per Raft message of every group */
    uint64_t store_block_bytes; /* file stores' block size; 0: the store's default */
    const uint8_t *key;         /* the node key (JR_NODE_KEY_BYTES) for file stores; NULL: none */
    uint64_t seed;              /* the node's seed (jr_node_config.seed, or drawn) */
    jr_vfs *vfs;
    uint64_t (*wall)(void *ctx); /* the host's wall clock (jr_host.wall, version 2); NULL: none */
    void *wall_ctx;
    int wal_failed; /* the error that failed the WAL: nothing is durable until a reopen; 0: none */
    int wal_lost;   /* this life began with the WAL lost (the node's mark without a segment,
                       recover.c): whatever the node held of a group it recovered nothing of is
                       gone, and it cannot tell such a group from one it never held */
} jr__node_facts;
void jr__node_facts_get(const jr_node *n, jr__node_facts *out);
/* The host's now() as read at the current entry point (every input of one call sees the same
 * time). */
uint64_t jr__node_now(const jr_node *n);
/* 1 once close began (the node takes no new work). */
int jr__node_closing(const jr_node *n);

/* Public entry points bracket their work with enter/leave. enter refreshes the clock. leave, at
 * the outermost level only, performs a close requested from inside a callback (n is freed then)
 * or re-arms the host; a public entry point calls it last and returns without touching n
 * again. */
void jr__node_enter(jr_node *n);
void jr__node_leave(jr_node *n);
/* Asks for a tick as soon as possible (work was queued outside a flush). */
void jr__node_want_tick(jr_node *n);

/* Records err with a formatted message as the node's last error (jr_node_errmsg); returns err. */
int jr__node_err(jr_node *n, int err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Logs through host->log if the host gave one. */
void jr__node_log(jr_node *n, int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Counters of the node (jr_node_stats) the layer above bumps. */
enum jr__node_counter {
    JR__COUNT_UNKNOWN_TYPE = 1, /* a request of a kind this server does not know: skipped */
    JR__COUNT_WARY_WRITE = 2,   /* a write refused after a restart (rpc.h "After a restart") */
};
void jr__node_count(jr_node *n, enum jr__node_counter which);

/* Peers --------------------------------------------------------------------------------------*/

/* A peer by id or by name; NULL if the node has none such. This server is a peer too. */
jr__peer *jr__peer_find(const jr_node *n, jr__id id);
jr__peer *jr__peer_find_name(const jr_node *n, const char *name);
/* The peers in the order of the node's config: i < jr__node_npeers(n). */
size_t jr__node_npeers(const jr_node *n);
jr__peer *jr__node_peer(const jr_node *n, size_t i);
jr__id jr__peer_get_id(const jr__peer *p);
const char *jr__peer_get_name(const jr__peer *p); /* lives as long as the node */
/* now() of the last valid frame from p; 0: never. */
uint64_t jr__peer_heard(const jr__peer *p);

/* Membership (peer.c "Membership") ------------------------------------------------------------
 *
 * The peer table starts as the config's `peers` (the seed list) and grows with the servers the
 * meta group admits: the layer above adds each server its meta state names, as it applies or
 * restores it, so the table is recovered from the meta group's log and snapshots at every
 * open. A server the meta group removed stays in the table, marked removed: its frames are
 * refused with JR_EREMOVED and it is told so. At most JR__NODE_PEERS_MAX peers.
 *  - jr__node_peer_learn(n, name): adds the server if it is not known. 0, JR_EINVAL (not a
 *    valid name, or its id is another's), JR_ENORESOURCES (the table is full), JR_ENOMEM;
 *  - jr__node_peer_set_removed(n, name): learns it and marks it removed (for good);
 *  - jr__peer_removed(p): 1 if p is marked removed;
 *  - jr__node_peer_gone(n, name): the meta state holds the server's removal (a committed
 *    jr_server_peer_remove, applied or restored): it learns it and declares it gone for every
 *    group of this node, open or opened later in this life, as jr_node_rescue does (api_group.c
 *    says why that is safe). Not persisted: every open restores it from the meta state. 0 or
 *    an error of jr__node_peer_learn;
 *  - jr__node_set_removed(n): this server was removed: from now on it refuses every frame
 *    (JR_EREMOVED), sends nothing, runs no timer and no flush; callbacks already queued run;
 *  - jr__node_removed(n): 1 once it was;
 *  - jr__rpc_respond_stranger(n, to, id, ...): answers a join request of a server that may not
 *    be in the table (one frame of its own, sent at once through the host). 0 or an error. */
#define JR__NODE_PEERS_MAX 1024
int jr__node_peer_learn(jr_node *n, const char *name);
int jr__node_peer_set_removed(jr_node *n, const char *name);
int jr__peer_removed(const jr__peer *p);
int jr__node_peer_gone(jr_node *n, const char *name);
void jr__node_set_removed(jr_node *n);
int jr__node_removed(const jr_node *n);
int jr__rpc_respond_stranger(jr_node *n, const char *to, uint64_t id, int status,
                             const jr_iovec *iov, int iovcnt);

/* Groups -------------------------------------------------------------------------------------*/

/* What a replica joining a group that exists starts from (jr__raft_config.join_*): the term
 * and a committed entry (its term and index) of the group, e.g. as its leader reported them when
 * a peer change converged. Zeros: none. */
typedef struct jr__join_floor {
    uint64_t term, last_term, last_index;
} jr__join_floor;
/* Creates, loads or bootstraps, and registers a group (the body of jr_group_open). floor (may
 * be NULL) applies only if this server joins (it is not among cfg->voters). On a node an earlier
 * life ran on, a group with nothing recovered may be one whose every record was lost (a cut WAL
 * tail, files rolled back): it opens unvouched (a joiner also damaged), unless `fresh` says the
 * caller knows this server was not a member of the group before this life (group.c); on a node
 * whose WAL was lost, a group not `fresh` opens unvouched and damaged. */
int jr__group_create(jr_node *n, const jr_group_config *cfg, const jr__join_floor *floor, int fresh,
                     jr_group **out);
/* The floor a replica joining later starts from: this replica's term and its commit index with
 * that entry's term. JR_ENOTFOUND if the entry's term is not known here (neither in the log nor
 * the snapshot's). Meaningful on the leader (whose commit every later leader holds). */
int jr__group_floor(const jr_group *g, jr__join_floor *out);
/* Holds (on = 1) or releases the replica's vote (jr__raft_hold): no grant, no campaign. */
void jr__group_hold(jr_group *g, int on);
/* Closes the local replica: pending ops complete with `status`, the timer and files are
 * released; the raft core stays (dormant) for the flush of its pending state and for reopening.
 */
void jr__group_detach(jr_group *g, int status);
/* 1 once g was detached (closed). */
int jr__group_closed(const jr_group *g);
/* Proposes data (copied) to g: jr_group_propose without the public-entry checks, returning the
 * entry's index and term; cb (may be NULL) completes as jr_propose_cb says. 0, or JR_EDAMAGED,
 * JR_ENOMEM and the core's refusals (JR_ENOTLEADER, JR_ETRANSFER, JR_EMSGSIZE, ...). */
int jr__group_propose(jr_group *g, const void *data, size_t len, jr_propose_cb cb, void *arg,
                      uint64_t *index, uint64_t *term);
/* The state of g's Raft core (role, term, leader, configuration, progress, log; raft.h), to
 * read only: the core drives it. */
const jr__raft *jr__group_consensus(const jr_group *g);
/* Wakes g if it is quiet (jr__raft_wake: a leader heartbeats every member at once, so one it
 * took for down that now hosts the group answers and is probed). For a leader waiting on a
 * member that never speaks first: an empty joiner whose group went quiet before it opened. */
void jr__group_wake(jr_group *g);
/* Last index applied to g's fsm (or restored from a snapshot). */
uint64_t jr__group_applied(const jr_group *g);
/* The last entry g may apply now: committed, durable and in memory, as the node's applying takes
 * them. For a state machine that takes the entries waiting in g's log itself before a snapshot
 * from the leader replaces them (a catch-up's queue). */
uint64_t jr__group_apply_limit(const jr_group *g);
/* Bounds g's in-memory log at `bytes` of entry payload while this replica is an observer of
 * g (raft.h jr__raft_cap_log: entries beyond it are not taken, and the leader paces g as a
 * lagging follower); 0 lifts the bound. For a replica whose state machine cannot snapshot for
 * a while (a stream replica copying its messages), so nothing else bounds its log. */
void jr__group_cap_log(jr_group *g, uint64_t bytes);
/* Entries g applies between two snapshots (jr_group_config.snapshot_entries); setting it
 * takes effect at g's next apply. */
uint64_t jr__group_snapshot_entries(const jr_group *g);
void jr__group_set_snapshot_entries(jr_group *g, uint64_t entries);
/* 1 if member `peer` of g is known to hold a damaged replica, else 0: this replica's own flag
 * for itself; for another member, on the leader, what the raft core's progress says (it lost
 * entries it had acknowledged); 0 elsewhere. What jr_peer_status.damaged, and the stream and
 * meta info built from it, show. */
int jr__group_peer_damaged(const jr_group *g, jr__id peer);
/* The layer's word on g's state machine (enum jr__fsm_state, raft.h): whole, failed (it applies
 * nothing until rebuilt) or being rebuilt from the group's snapshot, log and peers. The node
 * tells g's leader (the wire's FSM extension, fsmreport.c) at its next tick and every heartbeat
 * interval while not whole, and "whole" a few times once it is again; the leader's
 * jr_group_peer (fsm_failed, fsm_rebuilding) and what is built on it show it. A replica whose
 * fsm restore failed in the core (jr_group_status.fsm_failed) is told failed whatever the layer
 * says. Kept across a detach and reopen of g (a rebuild reopens the same group); a state that
 * does not change, or an unknown one, changes nothing; allocates nothing. */
void jr__group_set_fsm_state(jr_group *g, int state);
/* From now on g applies an entry only once a durable hard state covers its commit (flush.c):
 * for a state machine that acts on what it applied in ways a restart must find again, since at
 * restart a group re-applies its log only up to its recovered commit index. Costs a sync per
 * flush that moves g's commit. */
void jr__group_durable_apply(jr_group *g);
/* g's leader tells every follower its commit index at the next tick, without waiting for an
 * APPEND to carry it (raft.h commit_delay): for an answer whose reader waits for a follower's
 * replica to apply the entry committed (a read barrier). Nothing on a follower or a quiet
 * leader (its followers know the commit). */
void jr__group_commit_now(jr_group *g);

/* Group destruction (retire.c):
 *  - jr__node_group_destroy(n, id): releases the group at once: what its replica knew kept
 *    (answered to VOUCH, released.c; for a recovery stash, what its records and snapshot file
 *    hold), its raft core freed, any recovery stash dropped; its snapshot files are removed and
 *    its WAL DROP staged at the start of the next flush, once that record is on disk (nothing
 *    of the group is written after; meanwhile it is retiring). The caller has detached it
 *    (jr__group_detach) if it was open. Not while a flush iteration walks its batch (from an
 *    apply or the role_changed hook: queue an effect, below); that, or an open group, is
 *    JR_EMISUSE and changes nothing. 0; JR_ENOMEM or an I/O error reading a stash's snapshot
 *    file with nothing changed (the stash stays: destroy it again later); or JR_ENOMEM: the
 *    DROP could not be staged nor queued for later, and the group's records stay in the WAL
 *    until a restart finds them (jr__node_unopened_groups);
 *  - jr__node_group_retiring(n, id): 1 while id's DROP waits for the released record or for
 *    memory (it is staged again at the start of every flush): do not recreate the group yet;
 *  - jr__node_group_known(n, id): 1 if this node holds state of id (open, or recovered and not
 *    yet opened);
 *  - jr__node_unopened_groups(n, lo, hi, &ids, &count): the recovered groups in [lo, hi) that
 *    nothing opened (an array the caller frees with jr__free(alloc, ids); NULL when there are
 *    none); 0 or JR_ENOMEM.
 */
int jr__node_group_destroy(jr_node *n, uint64_t id);
int jr__node_group_retiring(const jr_node *n, uint64_t id);
/* Forgets what a destroyed replica of id knew (released.c; answered to VOUCH, kept on disk):
 * the group was deleted, so nothing committed in it is left to find. The file follows at the
 * next flush; a crash before it keeps the record, so the layer sweeps again after a restart. */
void jr__node_released_forget(jr_node *n, uint64_t id);
/* Forgets every such record of a group id in [lo, hi) for which gone(ctx, id) returns 1 (the
 * layer's state says the group was deleted). O(records). */
void jr__node_released_sweep(jr_node *n, uint64_t lo, uint64_t hi,
                             int (*gone)(void *ctx, uint64_t id), void *ctx);
int jr__node_group_known(const jr_node *n, uint64_t id);
int jr__node_unopened_groups(jr_node *n, uint64_t lo, uint64_t hi, uint64_t **ids, size_t *count);

/* Effects (etcd's Ready shape) ---------------------------------------------------------------
 *
 * What a state machine's apply produces that changes the node's structure — creating or
 * removing a replica, opening or destroying a store — is not done inside the apply, while the
 * flush walks its lists: the apply queues it with jr__node_defer, and the core runs the queue
 * after the flush loop, in queueing order, when no list is walked. An effect may queue more;
 * those run in the same pass. 0 or JR_ENOMEM (nothing queued: the caller's retry path must
 * cover it). */
typedef void (*jr__effect_fn)(jr_node *n, uint64_t arg);
int jr__node_defer(jr_node *n, jr__effect_fn fn, uint64_t arg);

/* Timers -------------------------------------------------------------------------------------
 *
 * On the node's one heap: t->fire(n, t) runs from jr_node_tick once t's deadline has passed
 * (jr__timer_init, util/heap.h, sets fire; ctx is the node). Arming re-keys an armed timer; a
 * deadline in the past is taken as now. Without memory to grow the heap the node ticks again at
 * once instead. jr_node_deadline() covers every armed timer. */
void jr__node_timer_arm(jr_node *n, jr__timer *t, uint64_t deadline);
void jr__node_timer_cancel(jr_node *n, jr__timer *t);

/* Completion records -------------------------------------------------------------------------
 *
 * A call accepted now whose callback must run later, and never fail to: jr__op_reserve takes a
 * record (NULL: JR_ENOMEM) that will run cb(arg, status) from the node's completion queue
 * (jr__node_drain), once jr__op_complete queued it; jr__op_put gives back a record never
 * completed. */
jr__op *jr__op_reserve(jr_node *n, jr_done_cb cb, void *arg);
void jr__op_put(jr_node *n, jr__op *op);
/* Queues op with status (and index, for a proposal's record); its callback runs at the next
 * drain. */
void jr__op_complete(jr_node *n, jr__op *op, int status, uint64_t index);
/* Runs queued callbacks (those queued meanwhile too) until the queue is empty. Not re-entrant:
 * a nested call returns at once. */
void jr__node_drain(jr_node *n);

/* Node-to-node requests (rpc.h has the contract: ids, timeouts, at most once, restarts) -----*/

/* Largest answer payload kept for a duplicate of a request (rpc.h "At most once"): an answer
 * the layer wants repeated to a duplicate — every write's, an error text included — fits. */
#define JR__RPC_KEEP 600u

/* Result of a call: answered = 1 and status from the responder (0 or a JR_E* code; a response
 * with a positive status is taken as JR_ECORRUPT), or answered = 0 and status JR_ETIMEDOUT (no
 * answer within the timeout) or JR_ECLOSED (the layer closes); payload borrowed for the
 * callback (NULL, 0 if none). A responder's own JR_ETIMEDOUT comes with answered = 1. */
typedef void (*jr__rpc_cb)(jr_node *n, void *arg, int status, int answered, const uint8_t *p,
                           size_t len);
/* Sends a request of `kind` with the payload gathered from iov to server `peer`, answered
 * through cb within timeout_ns. *id gets the call's id (cancel with it). 0; JR_ENOTFOUND
 * (unknown peer, or this node itself); JR_EMSGSIZE (does not fit a frame); JR_ENOMEM. On error
 * cb never runs. */
int jr__rpc_call(jr_node *n, jr__id peer, uint8_t kind, const jr_iovec *iov, int iovcnt,
                 uint64_t timeout_ns, jr__rpc_cb cb, void *arg, uint64_t *id);
/* Forgets call id (its callback will not run). A no-op for an unknown id. */
void jr__rpc_cancel(jr_node *n, uint64_t id);
/* Sends the response to request `id` of peer `to`. 0 or an error (the response is lost, like a
 * dropped frame; the requester times out). */
int jr__rpc_respond(jr_node *n, jr__id to, uint64_t id, int status, const jr_iovec *iov,
                    int iovcnt);
/* Inside the request hook: 1 if the request handed over may be a duplicate of one an earlier
 * life of this server executed (rpc.h "After a restart"); the layer above then executes it only
 * if it changes nothing, and answers any other JR_ELEADERLOST. */
int jr__rpc_unsure(const jr_node *n);
/* Fails every outstanding call with JR_ECLOSED (callbacks run before it returns). */
void jr__rpc_close(jr_node *n);

#endif
