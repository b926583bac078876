/*
 * jetraft/group.h — raw Raft groups: a host's own state machine (jr_fsm) replicated by the
 * library, proposals, membership changes, leader transfer and status.
 *
 * Group ids up to JR_GROUP_ID_HOST_MAX are the host's; the JetStream layer uses the ids above.
 * Part of the public ABI; users include <jetraft.h>, which includes every part.
 */
#ifndef JETRAFT_GROUP_H
#define JETRAFT_GROUP_H

#include "jetraft/node.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------------------------------
 * Raw Raft groups: the replication machinery for a host's own state machine.
 */
typedef struct jr_group jr_group;
typedef struct jr_snapshot_writer jr_snapshot_writer;

/* Appends n bytes to the snapshot being taken; valid only inside jr_fsm.snapshot. */
JR_API int jr_snapshot_write(jr_snapshot_writer *w, const void *data, size_t n);

#define JR_FSM_VERSION 1
typedef struct jr_fsm {
    int version; /* JR_FSM_VERSION */
    void *ctx;
    /* Applies the committed entry at `index`, in order, exactly once per node lifetime (after a
     * restart, entries after the last restored snapshot are applied again). Indexes increase
     * but may skip: the group's internal entries (a new leader's no-op, membership changes) are
     * not passed to the fsm. data is borrowed for the call.
     * The fsm's callbacks run on the node's thread inside jr_node_recv()/jr_node_tick(); they may
     * use any API except jr_group_propose/transfer/add_observer/promote/remove on their own
     * group (JR_EMISUSE) — do that from a completion callback instead. */
    void (*apply)(void *ctx, uint64_t index, const void *data, size_t len);
    /* Writes the state as of the last applied index with jr_snapshot_write(). Optional: without
     * it the group never compacts its log. */
    int (*snapshot)(void *ctx, jr_snapshot_writer *w);
    /* Replaces the state with a snapshot taken at `index`. Required if snapshot is given. */
    int (*restore)(void *ctx, uint64_t index, const void *data, size_t len);
} jr_fsm;

/* Group ids 1 .. JR_GROUP_ID_HOST_MAX belong to the host's raw groups; larger ids are the
 * library's own (the meta group, then one per stream and consumer, never reused). */
#define JR_GROUP_ID_HOST_MAX ((UINT64_C(1) << 48) - 1)

/* Where a server joining a group that exists starts: the group's term and one committed entry
 * (its term and index), as jr_group_floor_get() reports them on the leader. */
typedef struct jr_group_floor {
    size_t size; /* sizeof(jr_group_floor); set by the caller of jr_group_floor_get too */
    uint64_t term;
    uint64_t commit_term;
    uint64_t commit_index;
} jr_group_floor;

typedef struct jr_group_config {
    size_t size;               /* sizeof(jr_group_config) */
    uint64_t id;               /* unique in the cluster, 1 .. JR_GROUP_ID_HOST_MAX */
    const char *const *voters; /* initial voting members (server names) */
    size_t nvoters;
    const jr_fsm *fsm;         /* required; copied */
    uint64_t snapshot_entries; /* take a snapshot after this many applied entries; default 8192 */
    /* Joining only (this server not among voters). A server added back after it was removed —
     * its replica deleted, or lost — must not help elect a leader that lacks entries it
     * acknowledged while it was a member. Give it what jr_group_floor_get() returned on the
     * leader after the removal completed (the remove callback reported 0): while its log is
     * older than that committed entry, it judges candidates as if it held it, and it starts at
     * that term, so neither a stale candidate nor a stale leader can use it. Zeros: no floor
     * (right for a server that never was a member). Ignored if this server is among voters;
     * a replica that recovered state of its own is judged by it only while that state is older.
     * JR_EINVAL for a commit_index without its commit_term, or a term older than it, or a
     * floor whose size is 0. NULL: no floor. Read up to join->size; copied. */
    const jr_group_floor *join;
} jr_group_config;

/* Fills cfg with defaults (and cfg->size), writing only its first `size` bytes (the macro
 * passes the caller's sizeof). */
JR_API void jr_group_config_init_size(jr_group_config *cfg, size_t size);
#define jr_group_config_init(cfg) jr_group_config_init_size((cfg), sizeof *(cfg))

/* Creates (or, after a restart, reopens) group cfg->id on this node.
 *  - State this node recovered for the group (its log, hard state, newest snapshot, which is
 *    restored into the fsm first) is loaded; the voter list is then ignored: the log knows the
 *    membership.
 *  - Otherwise, if this server is among cfg->voters, the group is created: every initial voter
 *    must be given the same voter list.
 *  - Otherwise this server joins: its replica starts empty and waits for the leader to add it
 *    (jr_group_add_observer() on the leader) and send it the log or a snapshot.
 * A group closed earlier in this node's life is revived with the new fsm (restored from the
 * newest snapshot, then the log is applied again).
 * The promise on disk faults: one replica's storage losing or damaging what it had synced (a cut
 * tail, files rolled back to an older copy, damaged records, a deleted file) never loses an
 * entry the group committed, as long as the other voters' disks are whole. A group recovered
 * from disk opens unvouched (status unvouched = 1): it may have lost records it acknowledged, so
 * it grants no vote, does not campaign and takes no entries until enough of its peers answered
 * what they know of it — in a group of three, both others, unless the leader answers first.
 * So does a group with nothing on disk opened on a node that ran before (a previous
 * jr_node_open on the same wal_dir): a cut tail may have taken every record of a group it was
 * a member of, which looks just like a group new here; a joiner is then also damaged until
 * its leader has sent it the log. If its recovery found damage it is also damaged (status damaged =
 * 1: proposals fail with JR_EDAMAGED), and the leader reports a member damaged (jr_peer_status)
 * once it answers with less than it had acknowledged; the flags clear once a leader has repaired
 * its log. A group with a single voter can ask nobody and trusts its disk. Errors: JR_EINVAL (id 0
 * or above JR_GROUP_ID_HOST_MAX, no fsm or no apply, snapshot without restore, more than 64 voters
 * or one listed twice), JR_ENOTFOUND (a voter is not a peer of this node), JR_EEXIST (already open
 * here), JR_ENOMEM. */
JR_API int jr_group_open(jr_node *node, const jr_group_config *cfg, jr_group **out);

/* Closes the local replica of a group (the group's data stays on disk; what it had pending is
 * still written). Pending callbacks complete with JR_ECLOSED at the node's next tick (or inside
 * jr_node_close()), not inside this call. g must not be used afterwards. */
JR_API void jr_group_close(jr_group *g);

/* Looks up an open group by id; NULL if absent. */
JR_API jr_group *jr_node_group(jr_node *node, uint64_t id);

/* Completion of a proposal: status 0 and the entry's index once it is committed (durable on a
 * quorum) and applied by this replica's fsm. JR_ELEADERLOST when this replica lost the
 * leadership before the entry committed, or its index now holds another entry: the outcome is
 * then unknown to this replica (the entry may still commit under the next leader). JR_ECLOSED
 * when the group or node closed first. */
typedef void (*jr_propose_cb)(void *arg, int status, uint64_t index);
/* Completion of an administrative operation. */
typedef void (*jr_done_cb)(void *arg, int status);

/* Proposes data (copied) to the group. Fails fast (returned, not via cb) with JR_ENOTLEADER,
 * JR_ETRANSFER, JR_EMSGSIZE, JR_EDAMAGED. cb may be NULL. */
JR_API int jr_group_propose(jr_group *g, const void *data, size_t len, jr_propose_cb cb, void *arg);

/* The current leader's name as this replica knows it (borrowed), or NULL if unknown. */
JR_API const char *jr_group_leader(const jr_group *g);

/* Transfers leadership to `to` (a caught-up voter), or to the most caught-up voter if NULL
 * (dissertation §3.10); proposals fail with JR_ETRANSFER meanwhile. Caught up means what
 * jr_group_peer reports on this leader as `current` (in contact within an election timeout,
 * holding everything committed, not damaged; right after the group wakes from quiet, a member
 * whose node is alive counts before its first answer). Returns JR_ENOTLEADER, JR_ENOTVOTER (`to` is
 * not a caught-up voter, or NULL and there is none), JR_ETRANSFER (one is under way), JR_ENOTFOUND
 * (not a peer). The callback gets 0
 * once `to` (or another voter if NULL) leads, JR_ELEADERLOST if another server became leader,
 * JR_ETIMEDOUT if the transfer was abandoned (after about an election timeout). */
JR_API int jr_group_transfer(jr_group *g, const char *to, jr_done_cb cb, void *arg);

/* Membership changes, one server at a time (dissertation §4.1), on the leader: add a non-voting
 * observer, promote an observer to voter, remove a member. A second change while one is
 * uncommitted, or before the leader committed an entry of its term, is JR_EBUSY ("cluster
 * member change is in progress"); JR_ENOTLEADER on a follower; JR_EINVAL for an impossible
 * change (adding a member, promoting a voter, removing the last voter); JR_ENOTFOUND if peer is
 * not a peer of this node. The callback gets 0 once the change is committed and applied here,
 * JR_ELEADERLOST or JR_ECLOSED as for proposals. A leader that removes itself steps down. */
JR_API int jr_group_add_observer(jr_group *g, const char *peer, jr_done_cb cb, void *arg);
JR_API int jr_group_promote(jr_group *g, const char *peer, jr_done_cb cb, void *arg);
JR_API int jr_group_remove(jr_group *g, const char *peer, jr_done_cb cb, void *arg);

/* Rescue (UNSAFE, an operator's decision, like JetStream's META.RESCUE). A replica restarted from
 * storage that may have lost records (jr_group_status.unvouched) waits for answers from the
 * members of its configuration before it votes again: in a group of three with one server gone
 * for good and another replica damaged, the damaged one waits forever, and the whole one cannot
 * be elected without its vote. This call, on a server whose replica of g is unvouched, takes
 * member `gone` as holding nothing of the group (as a server that released its replica answers),
 * so the replica stops waiting for it and the group can elect its most up-to-date member. An
 * answer `gone` gave before is replaced and any later one ignored: a log it alone holds no
 * longer sets the bar a candidate must reach.
 * Call it on each live server whose replica reports unvouched, for a member that is gone for
 * good (crashed, its disk lost), never for one merely cut off, paused or slow:
 *  - what was committed with the lost acknowledgement of this replica and held only by `gone`
 *    is lost (the replica's quorum may have been {this, gone}), and if `gone` comes back it
 *    gives it up for the new leader's log;
 *  - if `gone` is in fact alive it may have been elected with a vote this replica forgot, in
 *    the term the rescued group elects in: two leaders in one term.
 * A group that can be vouched for safely (every member answers, or the leader of its term does)
 * never needs it: that happens by itself. Returns 0 (logged as a warning), JR_ENOCHANGE (the
 * replica is not unvouched, or `gone` was declared gone for it already), JR_ENOTMEMBER (`gone` is
 * not a member it waits for), JR_ENOTFOUND (not a known server), JR_EINVAL (NULL, or this server),
 * JR_ECLOSED. jr_node_rescue does it for every group of a server (meta, streams, consumers). */
JR_API int jr_group_rescue(jr_group *g, const char *gone);
/* The server-wide rescue (UNSAFE, as jr_group_rescue says): every group of this node that waits
 * for `gone` — the meta group, stream and consumer replicas, raw groups — and every group it
 * opens later in this life (a stream replica created once the rescued meta group told it of
 * the stream) stops waiting for it. This is what a server needs when `gone` is lost for good:
 * its streams' replicas may only be created after its meta group is repaired. Persisted (a
 * small file in wal_dir, written and synced before it takes effect): the groups this server
 * reopens after a restart do not wait for `gone` either, so servers restarted after a rescue
 * need no second call. Returns 0 if at least one group was rescued, JR_ENOCHANGE if none waited
 * for `gone` (it is remembered anyway, for groups opened later and after restarts),
 * JR_ENOTFOUND (not a known server), JR_EINVAL (NULL, this server), JR_ELIMIT (8 servers
 * declared gone already), an I/O error if it cannot be made durable (then nothing changed),
 * JR_ECLOSED. jr_group_rescue, one group's, is not persisted: after a restart, call it again or
 * use this one. A server removed with jr_server_peer_remove needs no call once its removal is
 * committed: each server that applied it (or restores it from its meta state at open) declares
 * the removed server gone for its groups by itself. */
JR_API int jr_node_rescue(jr_node *node, const char *gone);

enum jr_role { JR_FOLLOWER = 0, JR_CANDIDATE = 1, JR_LEADER = 2, JR_OBSERVER = 3 };

typedef struct jr_group_status {
    size_t size; /* sizeof(jr_group_status), set by the caller */
    uint64_t id;
    int role; /* enum jr_role, of this replica */
    uint64_t term;
    uint64_t commit_index;
    uint64_t applied_index;
    uint64_t last_index;
    uint64_t snapshot_index;
    size_t npeers;  /* members, this one included; jr_group_peer() reads each */
    int damaged;    /* 1 if this replica lost data and waits for repair (never a failed fsm:
                       fsm_failed) */
    int unvouched;  /* 1 from a restart until its peers vouched for its storage: it may have lost
                       records it acknowledged (a cut tail, files rolled back), so it grants no
                       vote and takes no leader's entries before their answers; damaged once they
                       show it lost some */
    int fsm_failed; /* 1 once its fsm's restore of a snapshot failed (the snapshot and the log
                       are whole; the state machine is not): like a damaged replica it never
                       votes nor campaigns and proposals fail with JR_EDAMAGED, until the node
                       is reopened; not counted as damaged */
} jr_group_status;

typedef struct jr_peer_status {
    size_t size;      /* sizeof(jr_peer_status), set by the caller */
    const char *name; /* borrowed */
    int voter;        /* 0: observer */
    int current;      /* caught up and heard from within an election timeout (leader's view:
                         a message received since it became leader, never assumed); never
                         while damaged, or restarted and not yet vouched for */
    uint64_t match_index;
    uint64_t lag;          /* entries behind the leader's last index */
    uint64_t last_seen_ns; /* now() minus the last contact received (on the leader; a quiet
                              group: its node's last frame); UINT64_MAX if none since this
                              leader's election */
    int damaged;           /* its replica lost data it had acknowledged: this replica's own
                              flag (jr_group_status.damaged) for itself; for another member,
                              on the leader, what the leader learned (0 elsewhere) */
    int unvouched;         /* as jr_group_status.unvouched: this replica's own flag for itself;
                              for another member, on the leader, a member that restarted and
                              has not yet acknowledged the log it was asked to vouch for */
    int fsm_failed;        /* its state machine failed or is being rebuilt (its log is whole):
                              for this replica itself jr_group_status.fsm_failed or its layer's
                              word (a stream store that failed, rebuilt from its peers); for
                              another member, on the leader, what that member's server reported
                              within an election timeout (it reports every heartbeat interval
                              while not whole); 0 elsewhere. Never current meanwhile */
    int fsm_rebuilding;    /* of fsm_failed: the state machine is being rebuilt from the
                              group's snapshot, log and peers (a stream replica fetching its
                              messages again), not failed and waiting */
} jr_peer_status;

JR_API int jr_group_status_get(const jr_group *g, jr_group_status *out);
/* On the leader: the floor a server joining later starts from (jr_group_config.join): the
 * current term and the commit index with its entry's term, written up to out->size (set by the
 * caller). JR_ENOTLEADER on any other replica (or before the leader knows the term of its
 * commit index); JR_EINVAL for NULL or a size of 0. */
JR_API int jr_group_floor_get(const jr_group *g, jr_group_floor *out);
/* Peer i (0 <= i < npeers) as this replica sees it; progress fields only on the leader.
 * Status structs are written up to out->size (set by the caller), which then says how much. */
JR_API int jr_group_peer(const jr_group *g, size_t i, jr_peer_status *out);

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_GROUP_H */
