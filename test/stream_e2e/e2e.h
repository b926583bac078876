/*
 * e2e — a harness for end-to-end stream tests over the deterministic cluster fixture
 * (include/jetraft/sim.h): nodes with streams enabled, synchronous wrappers around the
 * asynchronous Streams API (each runs the simulation until the callback fired), and read-only
 * access to each node's replicas (lib/node/js.h) to compare what every replica holds.
 *
 * JR_E2E_LOG=1 prints every node's log lines (with the simulated time) to stderr.
 * JR_E2E_KEY=1 gives every server a node key of its own (encryption at rest).
 */
#ifndef JR_TEST_E2E_H
#define JR_TEST_E2E_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "jetraft/sim.h"

#define MS 1000000ull
#define SEC (1000 * MS)
#define E2E_MAX 16

typedef struct e2e {
    jr_sim *sim;
    unsigned n;
    const char *tags[E2E_MAX][4];
    size_t ntags[E2E_MAX];
    const char *unique_tag;
    uint32_t timeout_ms;
    int torn_writes; /* crashes tear the last unsynced write (jr_sim_config.torn_writes) */
    /* optional: jr_sim_config.on_apply (arg: the e2e) */
    void (*on_apply)(void *arg, unsigned node, uint64_t group, uint64_t index, uint64_t term,
                     const void *data, size_t len);
    int no_wall; /* the nodes' hosts are version 1: no wall clock (jr_host.wall) */
    /* optional: adjusts node i's config further (after the harness's settings) */
    void (*configure_more)(void *arg, unsigned i, jr_node_config *cfg);
    jr_host hosts[E2E_MAX];
    uint64_t snap_every[E2E_MAX];
    int log;
} e2e;

/* Creates an n-node cluster "east" (streams on, request timeout timeout_ms) with the tags set
 * in c before the call (c->tags/ntags/unique_tag; zero them for none). */
/* The seeds a randomized test runs: JR_SEEDS=first:count, when set and well formed, into *first
 * and *count (left as they are otherwise). 1 if JR_SEEDS is set. */
int e2e_seeds(uint64_t *first, uint64_t *count);
/* main of a suite whose tests add *seed_shift to their seeds: runs the suite once with shift 0,
 * or with JR_SEEDS=first:count up to count times with shifts first, first + 1, ..., stopping at
 * the first run with a failure (its shift said on stderr). Returns the exit status. */
struct Suite;
int e2e_run_shifted(struct Suite *(*make)(void), uint64_t *seed_shift);
int e2e_new(e2e *c, unsigned n, uint64_t seed, uint32_t timeout_ms);
void e2e_free(e2e *c);
jr_node *e2e_node(e2e *c, unsigned i);

/* Makes node i's stream and consumer groups snapshot (and compact their log) every `entries`
 * applied entries instead of 4,096 — existing replicas and those created later — so that
 * catch-up from snapshots happens in short tests. Call again after a restart. */
void e2e_snapshot_every(e2e *c, unsigned i, uint64_t entries);
/* Restarts crashed node i (and re-applies e2e_snapshot_every if it was used). */
int e2e_restart(e2e *c, unsigned i);

/* Runs until every live node's meta view has a leader and nservers servers; returns the meta
 * leader's index, or -1 on timeout. */
int e2e_wait_meta(e2e *c, size_t nservers, uint64_t max_ns);
/* Index of the meta leader as node i sees it (-1: none). */
int e2e_meta_leader(e2e *c);

/* The result of one asynchronous call. */
typedef struct e2e_res {
    int done;
    int status;
    char msg[1024];
    uint64_t seq;
    int duplicate;
    char last_msg_id[300]; /* a publish refused with JR_EWRONGLASTMSGID: the ack's */
    int created;           /* jr_stream_create: this request created the stream */
    uint64_t purged;
    char stream[256];
    /* info */
    char leader[64];
    size_t nreplicas;
    struct {
        char name[64];
        int current, offline, observer, pending, damaged, unvouched, fsm_failed, fsm_rebuilding;
        uint64_t lag;
        uint64_t active_ns; /* since the leader last heard from it; UINT64_MAX: never */
    } reps[8];
    jr_stream_state state;
    int replicas_cfg;
    uint64_t created_ns;
    uint64_t max_age_ns;
    char text[2048]; /* jr_stream_info_format output */
    /* message */
    char subject[256];
    char data[1024];
    size_t len;
    uint64_t ts;
} e2e_res;

/* jr_stream_create's callback: as e2e_admin_cb, and r->created. */
void e2e_create_cb(void *arg, int status, const char *msg, int created);

/* Runs until r->done or max_ns passed; 0 or JR_ETIMEDOUT. */
int e2e_wait(e2e *c, e2e_res *r, uint64_t max_ns);

/* Synchronous wrappers: run until the callback fired (they fail the test if it does not within
 * a minute of simulated time) and return its status; r (may be NULL) gets the details. */
int e2e_add(e2e *c, unsigned node, const jr_stream_config *cfg, e2e_res *r);
int e2e_update(e2e *c, unsigned node, const jr_stream_config *cfg, e2e_res *r);
int e2e_delete(e2e *c, unsigned node, const char *name, e2e_res *r);
int e2e_info(e2e *c, unsigned node, const char *name, e2e_res *r);
int e2e_publish(e2e *c, unsigned node, const char *subject, const void *data, size_t len,
                const char *msg_id, e2e_res *r);
/* Asynchronously publishes order i of the ORDERS workloads through node n: subject
 * "orders.<i % 5>", data "order <i>", msg id "o-<i>"; jr_publish's result (cb as it says). */
int e2e_publish_order(jr_node *n, int i, jr_publish_cb cb, void *arg);
int e2e_purge(e2e *c, unsigned node, const char *name, const jr_purge_opts *o, e2e_res *r);
int e2e_msg_get(e2e *c, unsigned node, const char *name, uint64_t seq, e2e_res *r);
int e2e_get_last(e2e *c, unsigned node, const char *name, const char *subject, e2e_res *r);
int e2e_get_next(e2e *c, unsigned node, const char *name, uint64_t seq, const char *subject,
                 e2e_res *r);
int e2e_msg_delete(e2e *c, unsigned node, const char *name, uint64_t seq, e2e_res *r);
int e2e_stepdown(e2e *c, unsigned node, const char *name, const char *peer, e2e_res *r);

/* Callbacks that fill an e2e_res (for asynchronous use). */
void e2e_admin_cb(void *arg, int status, const char *msg);
void e2e_pub_cb(void *arg, int status, const jr_pub_ack *ack);
/* jr_stream_info_get's callback filling the e2e_res (arg) as e2e_info does. */
void e2e_info_cb(void *arg, int status, const char *msg, const jr_stream_info *info);
void e2e_msg_cb(void *arg, int status, const char *msg, const jr_stored_msg *m);

/* Runs until stream `name` has a leader that reports `current` current replicas (asked on
 * node `via`); returns the leader's index or -1. */
int e2e_wait_stream(e2e *c, unsigned via, const char *name, size_t current, uint64_t max_ns);
/* Zeroes c, starts n servers (seed, request timeout 2000 ms), waits for the meta group, adds
 * stream cfg through server 0 and waits until its leader reports every other replica current
 * (each step asserted, within 10 s): the stream leader's index. */
int e2e_new_with_stream(e2e *c, unsigned n, uint64_t seed, const jr_stream_config *cfg);
/* Zeroes c, starts n servers (seed, request timeout 3000 ms), the first nssd tagged "ssd" and
 * the others "hdd", and waits (asserted, within 30 s) for the meta group. */
void e2e_new_ssd(e2e *c, unsigned n, unsigned nssd, uint64_t seed);

/* Replicas ----------------------------------------------------------------------------------*/

/* 1 if node i holds a replica of the stream. */
int e2e_has_replica(e2e *c, unsigned i, const char *name);
/* Node i's replica group of the stream (borrowed; NULL: no replica, or node i is down). */
jr_group *e2e_group(e2e *c, unsigned i, const char *name);
/* The replica's fsm digest (jr__stream_fsm_digest). 0 or an error (no replica: JR_ENOTFOUND). */
int e2e_digest(e2e *c, unsigned i, const char *name, uint64_t *out);
/* Hands node `to`'s replica of the stream a snapshot of node `from`'s replica (its stream
 * state at its applied index A) as its group would install one taken at group index A - behind
 * (a source whose store was ahead of its log), damaged in one byte if corrupt. The restore
 * callback's result. */
int e2e_restore_from(e2e *c, unsigned from, unsigned to, const char *name, uint64_t behind,
                     int corrupt);
/* Per-seq checksums of the replica's live messages, seq 1..cap (0 where none). Returns last_seq
 * or a negative error. */
int64_t e2e_checksums(e2e *c, unsigned i, const char *name, uint64_t *out, size_t cap);
/* The replica's store state. */
int e2e_state(e2e *c, unsigned i, const char *name, jr_stream_state *out);
/* A placement in the cluster (NULL: none) requiring `tags`, for a jr_stream_config about to be
 * added or updated (the call copies it): static storage, reused from the 16th call on. */
const jr_placement *e2e_placement(const char *cluster, const char *const *tags, size_t ntags);
/* Leader index of the stream as node i's replica sees it (-1: none / not a replica). */
int e2e_replica_leader(e2e *c, unsigned i, const char *name);
/* Snapshot index of node i's replica group (0: none). */
uint64_t e2e_snapshot_index(e2e *c, unsigned i, const char *name);
/* Streams in node i's meta state. */
size_t e2e_meta_streams(e2e *c, unsigned i);
/* The replica's fsm applied index (0: none). */
uint64_t e2e_fsm_applied(e2e *c, unsigned i, const char *name);
/* A line describing node i's replica (fsm applied/durable/failed/restoring, group state). */
void e2e_describe(e2e *c, unsigned i, const char *name, char *buf, size_t cap);
/* 1 if node i's replica of the stream is restoring a snapshot (fetching messages). */
int e2e_catching_up(e2e *c, unsigned i, const char *name);
/* 1 if node i's replica of the stream has its duty timer armed (stream_replica.c: only while a
 * duty is due), 0 if not, -1 if node i has no such replica. */
int e2e_timer_armed(e2e *c, unsigned i, const char *name);
/* The leader's progress of every member of node i's replica group (debugging). */
void e2e_progress(e2e *c, unsigned i, const char *name, char *buf, size_t cap);
/* Chunks node i's replicas fetched in catch-ups. */
uint64_t e2e_catchup_chunks(e2e *c, unsigned i);
/* Server i's catch-up queues: entry bytes applied from them, the batches (node turns) that
 * applied them, and the most bytes one batch applied past its budget. */
void e2e_catchup_drain(e2e *c, unsigned i, uint64_t *bytes, uint64_t *turns, uint64_t *over);
/* Snapshots server i's restoring replicas had installed meanwhile and restored after the
 * entries queued before them; message bytes its catch-ups fetched. */
uint64_t e2e_catchup_later(e2e *c, unsigned i);
uint64_t e2e_catchup_bytes(e2e *c, unsigned i);
/* Queued entry bytes server i's restoring replicas dropped for a later snapshot (catchup.c
 * jr__catchup_later: their messages are fetched again). */
uint64_t e2e_catchup_dropped(e2e *c, unsigned i);
/* Entry bytes that waited in the log of server i's restoring replicas and were queued before
 * a later snapshot replaced that log (catchup.c take_waiting). */
uint64_t e2e_catchup_taken(e2e *c, unsigned i);
/* Node i's stream leaders' publish holds for a joining peer's copy (js/hold.c): how many, their
 * total length, and the times they gave a copy up. */
void e2e_catchup_holds(e2e *c, unsigned i, uint64_t *holds, uint64_t *held_ns, uint64_t *giveups);
/* Later snapshots that armed server i's holds for a joiner (js/hold.c). */
uint64_t e2e_catchup_hold_arms(e2e *c, unsigned i);
/* Server i's replica of stream `name`, leading: the later snapshots its group's members began
 * to need (jr__progress.later_snaps, summed); 0 when it does not lead. */
uint64_t e2e_leader_later_snaps(e2e *c, unsigned i, const char *name);
/* Server i's replica of stream `name`: the ops it has staged and whether a hold keeps them. 0, or
 * -1 without such a replica. */
int e2e_stage(e2e *c, unsigned i, const char *name, uint32_t *nstage, int *holding);
/* Group snapshots server i's stream replicas were handed (installed from a leader, or loaded at
 * open). */
uint64_t e2e_snap_restores(e2e *c, unsigned i);
/* Server i's bounds on the log its groups keep behind a snapshot as a leader, for followers
 * and for members catching up (node.h keep_bytes, join_keep_bytes; until a restart), and the
 * most log bytes a snapshot of its groups left behind it so far. */
void e2e_keep_bytes(e2e *c, unsigned i, uint64_t keep, uint64_t join_keep);
uint64_t e2e_kept_max(e2e *c, unsigned i);
/* 1 if the group of stream `name` on node i holds a table of members catching up it watches
 * (node.h jr_group.joiners: allocated only while its leader watches any). */
int e2e_joiners_watched(e2e *c, unsigned i, const char *name);
/* Server i's bound on what a catch-up queue holds copied (js.h catchup_queue_max; until a
 * restart); the most bytes a queue of its held copied at once; the queued entry bytes it applied
 * from their groups' logs, never copied (catchup_in_log). */
void e2e_catchup_queue_max(e2e *c, unsigned i, uint64_t max);
uint64_t e2e_catchup_queue_peak(e2e *c, unsigned i);
uint64_t e2e_catchup_in_log(e2e *c, unsigned i);
/* Node i's replica of stream `name`: the most entry bytes its group's log held at once while
 * capped during a catch-up, and the APPENDs it dropped for a full log (raft.h
 * jr__raft_capped_peak, jr__raft_capped_drops; this life of the replica). -1 if none. */
int e2e_capped_log(e2e *c, unsigned i, const char *name, uint64_t *peak, uint64_t *drops);
/* Server i's catch-up steps followed by a pause (the group was busy with proposals) and the
 * pauses' total length. */
void e2e_catchup_paced(e2e *c, unsigned i, uint64_t *steps, uint64_t *paused_ns);
/* What node i's replica's catch-up does (E2E_CU_*, as jr__catchup_phase), -1 if it is not
 * catching up. */
enum { E2E_CU_WAITING = 0, E2E_CU_FETCHING, E2E_CU_PAUSED, E2E_CU_DRAINING };
int e2e_catchup_phase(e2e *c, unsigned i, const char *name);
/* Reads message seq from node i's replica store: 0 with subject and data copied (NUL-terminated,
 * truncated to the buffers), JR_ENOTFOUND, or another error. */
int e2e_local_get(e2e *c, unsigned i, const char *name, uint64_t seq, char *subject,
                  size_t subject_cap, char *data, size_t data_cap);
/* 1 if node i's meta state holds the stream. */
int e2e_meta_has(e2e *c, unsigned i, const char *name);
/* The stream's peers in node i's meta state, as node indexes into out (placement order);
 * returns their number, or -1 if node i is down or does not know the stream. */
int e2e_meta_peers(e2e *c, unsigned i, const char *name, unsigned *out, size_t cap);
/* 1 if node i's meta state has the stream mid peer change (not converged), 0 if not, -1 if
 * unknown. */
int e2e_meta_busy(e2e *c, unsigned i, const char *name);
/* Members of node i's replica group as its Raft core sees them (its latest configuration):
 * node indexes into idx, voter flags into voter; returns their number or -1 (no replica). */
int e2e_members(e2e *c, unsigned i, const char *name, unsigned *idx, int *voter, size_t cap);

/* Consumer replicas --------------------------------------------------------------------------*/

/* The consumer's Raft group id in node i's meta state (0: node i is down or does not know it). */
uint64_t e2e_consumer_group(e2e *c, unsigned i, const char *stream, const char *name);
/* Node i's replica of the consumer: the xxh3 of its state's snapshot encoding
 * (jr__cstate_snapshot: canonical, so replicas that applied the same records agree) and the
 * index it applied. 0; JR_ENOTFOUND (no replica, or node i is down); the replica's failure code
 * if its state machine failed; JR_ENOMEM. */
int e2e_consumer_digest(e2e *c, unsigned i, const char *stream, const char *name, uint64_t *digest,
                        uint64_t *applied);
/* Leader index of the consumer as node i's replica sees it (-1: none / not a replica). */
int e2e_consumer_leader(e2e *c, unsigned i, const char *stream, const char *name);
/* A line describing node i's consumer replica (state, group, leader state) for a failure. */
void e2e_consumer_describe(e2e *c, unsigned i, const char *stream, const char *name, char *buf,
                           size_t cap);

/* A stream config with JetStream's defaults, name, one subject and replicas. */
void e2e_config(jr_stream_config *cfg, const char *name, const char *const *subjects,
                size_t nsubjects, int replicas);

/* ---- a workload ----------------------------------------------------------------------------- */

/* Publishes with msg ids to `stream` (e2e_publish_order: "order <i>" on orders.<i>), one each
 * 5 ms of simulated time through the live servers not in skip, in turn; and a durable pull
 * consumer PROC of the stream that fetches (batches of 20, 200 ms expiry) through such a
 * server and acknowledges every delivery. */
typedef struct e2e_work {
    e2e *c;
    const char *stream;
    int n, issued; /* publishes to make, and made */
    e2e_res *res;  /* n: each publish's outcome */
    uint8_t *got;  /* stream seqs the consumer received (index seq), got_cap of them */
    size_t got_cap;
    int fetching; /* a fetch is in flight (set by hand: no fetches) */
    uint64_t fetches, delivered;
    unsigned skip[E2E_MAX]; /* nodes not to use (removed, or about to be) */
} e2e_work;

/* A workload of n publishes to stream (n 0: the loop only runs the cluster). */
void e2e_work_init(e2e_work *w, e2e *c, const char *stream, int n);
void e2e_work_free(e2e_work *w);
/* Runs the cluster for ns with the workload going: a publish every 5 ms, a fetch whenever none
 * is in flight. */
void e2e_work_run(e2e_work *w, uint64_t ns);
/* jr_sim_run_until's condition (arg: the workload): every publish made has its outcome. */
int e2e_work_answered(void *arg, jr_sim *sim);
/* Waits for every publish (60 s at most); checks each was acknowledged (status 0; or cut short
 * by its own server's crash or removal, JR_ECLOSED / JR_EREMOVED; or, for a few, an unknown
 * outcome after their stream leader crashed) and that every acknowledged message is in the
 * stream, read back through node via (e2e_msg_get). Returns how many were acknowledged. */
int e2e_work_check(e2e_work *w, unsigned via);

#endif
