/*
 * jetraft/cluster.h — the cluster as the meta group sees it: servers and the meta leader
 * (jr_meta_info_get), and the cluster block (leader, replicas) of a stream's info.
 *
 * Everything handed to a callback (the structs, their arrays and strings) is borrowed for the
 * duration of the callback. Each struct starts with its size as built into the library; arrays
 * of structs are arrays of pointers, so a struct that grows changes no caller's stride.
 * Part of the public ABI; users include <jetraft.h>, which includes every part.
 */
#ifndef JETRAFT_CLUSTER_H
#define JETRAFT_CLUSTER_H

#include "jetraft/node.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One replica of a stream as its leader sees it. */
typedef struct jr_peer_info {
    size_t size;        /* sizeof(jr_peer_info) as built into the library */
    const char *name;   /* borrowed */
    int current;        /* caught up and heard from within an election timeout; never while
                           damaged, nor (a joining observer) before its store holds every
                           message */
    int offline;        /* not heard from recently */
    int observer;       /* non-voting member still catching up */
    int pending;        /* in the assignment, not (yet) a member of the Raft group; or, while a
                           peer change runs (jr_cluster_info.move), a member on its way out */
    uint64_t active_ns; /* since the last contact received (leader's view); UINT64_MAX: none
                           since that leader's election */
    uint64_t lag;       /* operations behind the leader */
    int damaged;        /* its replica lost data and waits for repair (jr_group_status.damaged) */
    int unvouched;      /* restarted, its storage not yet vouched for (jr_peer_status.unvouched);
                           never current */
    int fsm_failed;     /* its state machine failed or is being rebuilt, as its server told the
                           leader (jr_peer_status.fsm_failed; its log is whole); never current */
    int fsm_rebuilding; /* of fsm_failed: being rebuilt from the group's snapshot, log and peers
                           (jr_peer_status.fsm_rebuilding) */
} jr_peer_info;

/* What a peer change in progress waits on (JetStream 2.15's desired-state status types). */
enum jr_move_status {
    JR_MOVE_META = 1,       /* the meta group must record or acknowledge something ("reporting
                               the new peer set to the meta leader") */
    JR_MOVE_MEMBERSHIP = 2, /* a membership change must commit ("adding peer n4") */
    JR_MOVE_SNAPSHOT = 3,   /* a joining peer's store is still being filled (snapshot and
                               message catch-up) */
    JR_MOVE_CATCHUP = 4,    /* peers must catch up before the next change ("waiting for peers to
                               catch up") */
    JR_MOVE_QUORUM = 5,     /* more peers must be heard from before a change is safe */
    JR_MOVE_BLOCKED = 6,    /* another asset must move first ("waiting for consumer 'X' to
                               migrate") */
    JR_MOVE_UNAVAILABLE = 7 /* nothing can be done here (no leader, an unknown server, ...) */
};

/* A peer change in progress (a grow, shrink, placement move or evacuation) as the group's leader
 * sees it. Borrowed like the rest of the info. */
typedef struct jr_move_info {
    size_t size;               /* sizeof(jr_move_info) as built into the library */
    const char *const *target; /* the peer set the change converges to (the assignment's) */
    size_t ntarget;
    const char *const *origin; /* the peer set it started from (a cancel returns there); none
                                  (norigin 0) when not recorded, e.g. while a cancel returns */
    size_t norigin;
    int status;              /* enum jr_move_status */
    const char *description; /* one sentence: what it waits on now */
    const char *error;       /* a fault that persisted over several attempts; NULL: none */
} jr_move_info;

typedef struct jr_cluster_info {
    size_t size;                         /* sizeof(jr_cluster_info) as built into the library */
    const char *name;                    /* cluster */
    const char *group;                   /* the stream's Raft group name, e.g. "S-R3F-xK2p9aLm" */
    const char *leader;                  /* NULL while there is no leader */
    const jr_peer_info *const *replicas; /* every member but the leader, in display order */
    size_t nreplicas;
    /* The peer change in progress, NULL when the group is stable (its configuration is the
     * assignment's peer set and the meta group knows it). While it runs, a replica that is in
     * the target but not yet a voting member, or a member on its way out, has pending = 1. */
    const jr_move_info *move;
} jr_cluster_info;

/* One server as the meta leader sees it. */
typedef struct jr_server_info {
    size_t size; /* sizeof(jr_server_info) as built into the library */
    const char *name;
    const char *cluster;
    const char *const *tags;
    size_t ntags;
    int leader;         /* the meta leader */
    int current;        /* holds the meta log and was heard from within an election timeout;
                           never while damaged */
    int offline;        /* not heard from recently */
    uint64_t active_ns; /* since last contact; UINT64_MAX: never */
    uint64_t lag;       /* meta log entries behind the leader */
    uint32_t assets;    /* stream replicas placed on it */
    int damaged;        /* its meta replica lost data and waits for repair */
    /* 1 while the server drains (jr_server_evacuate): it takes no new placement and the meta
     * leader moves its replicas off. */
    int draining;
    /* Draining: the replicas still on it, streams as "ORDERS" and consumers as "ORDERS/C1"
     * (names in order, at most JR_DRAIN_LIST_MAX), and of those the ones no qualifying server
     * can take now (they stay, under-replicated in their placement's eyes, until one can).
     * None when not draining. */
    const char *const *remaining;
    size_t nremaining;
    const char *const *unplaced;
    size_t nunplaced;
} jr_server_info;

/* Most names jr_server_info.remaining, .unplaced and jr_meta_info.under_replicated list. */
#define JR_DRAIN_LIST_MAX 64

typedef struct jr_meta_info {
    size_t size;                          /* sizeof(jr_meta_info) as built into the library */
    const char *cluster;                  /* this node's cluster */
    const char *leader;                   /* the meta leader; NULL if none */
    const jr_server_info *const *servers; /* every server known to the meta group, by name */
    size_t nservers;
    size_t nstreams; /* streams in the meta state */
    /* 1 if this server was removed from the cluster (jr_server_peer_remove): it takes no part
     * any more and every request on it fails with JR_EREMOVED; the callback then gets
     * JR_EREMOVED with this node's own, last view. */
    int removed;
    /* Streams ("ORDERS") and consumers ("ORDERS/C1") with a replica on a server removed from
     * the cluster (jr_server_peer_remove found no replacement then): the meta leader re-places
     * them as soon as a qualifying server is available (a server joins, comes back online, or
     * stops draining). In name order, at most JR_DRAIN_LIST_MAX. */
    const char *const *under_replicated;
    size_t nunder_replicated;
} jr_meta_info;
typedef void (*jr_meta_info_cb)(void *arg, int status, const char *msg, const jr_meta_info *info);
/* The cluster as the meta leader sees it (the JetStream "server report"): the meta leader and
 * every server with its tags, current/offline, lag and seen-ago. Without a meta leader the
 * callback gets JR_ENOLEADER and this node's own view (leader NULL, liveness unknown). (Named
 * jr_meta_info_get: jr_cluster_info is the stream info's cluster block.) */
JR_API int jr_meta_info_get(jr_node *node, jr_meta_info_cb cb, void *arg);
/* Moves the meta group's leadership to server `peer` (a caught-up voter of the meta group), or
 * to the best one if peer is NULL; called on any server. JR_ENOTFOUND (peer is no server this
 * node knows), JR_ENOTVOTER, JR_ETRANSFER, JR_ETIMEDOUT as jr_stream_stepdown; JR_ENOQUORUM
 * without a meta leader in time. */
typedef void (*jr_meta_cb)(void *arg, int status, const char *msg);
JR_API int jr_meta_stepdown(jr_node *node, const char *peer, jr_meta_cb cb, void *arg);

/* Removes server `server` from the cluster for good (JetStream's SERVER.REMOVE): for a server
 * that is gone and will not come back; called on any server. The meta leader re-places each
 * stream and consumer replica the server held on a server that qualifies (the stream's
 * placement: cluster, tags, unique tag, capacity), as a peer change the stream's group then
 * converges to; a stream it cannot re-place keeps running under-replicated (the removed server
 * stays among its peers, shown offline in its info and listed in jr_meta_info.under_replicated)
 * — never dropped — and the meta leader re-places it by itself as soon as a server qualifies
 * (one joins, comes back online or stops draining). A stream whose only replica the server
 * held lost its data with the server: it starts again, empty, on a server that qualifies (as
 * in JetStream), with its consumers. The meta group removes the server from its configuration, and
 * the server is tombstoned: if it is running it serves no request from then on (JR_EREMOVED,
 * also for requests in flight, whose outcome is then unknown; jr_meta_info.removed), hands the
 * leadership of its groups to caught-up voters, stays a voter of its groups until they
 * converged without it (at most 20 election timeouts), then stops and says why (an error in
 * its log); if it comes back it is refused, never re-added. One change at a time. cb gets,
 * after the removal committed and the meta group's configuration no longer lists the server
 * (a running server's leave first), 0 with a message naming what was re-placed and the
 * streams left under-replicated, or: JR_ENOTMEMBER ("server is not a member of the cluster":
 * unknown, or removed already), JR_EBUSY ("cluster member change is in progress": a server
 * joins or leaves), JR_EINVAL (the last server of the cluster; NULL or empty name),
 * JR_ENOQUORUM (the servers left online would not be a majority of the meta group: bring one
 * back first), JR_ENOLEADER / JR_ETIMEDOUT as for other meta requests; called on the server
 * removed, JR_EREMOVED once it stops. Returns 0 (cb will run) or JR_EINVAL, JR_ECLOSED,
 * JR_EREMOVED, JR_ENOTSUP, JR_ENOMEM (cb will not run). */
JR_API int jr_server_peer_remove(jr_node *node, const char *server, jr_meta_cb cb, void *arg);

/* Drains server `server` (JetStream's SERVER.EVACUATE), for a server that stays in the cluster
 * (maintenance, decommissioning before jr_server_peer_remove); called on any server. The meta
 * group records that the server is draining (it survives restarts and meta leader failovers):
 * from then on no placement picks it, and the meta leader moves every stream and consumer
 * replica off it, best effort — each as jr_stream_evacuate does (the replacement joins and
 * catches up while the replica on `server` keeps serving, so nothing acknowledged is lost and
 * an R1 stream keeps its data), one change at a time per group, many groups at once. A replica
 * no qualifying server can take stays where it is (never dropped) and is listed as unplaced in
 * jr_meta_info_get (jr_server_info.draining, .remaining, .unplaced); it moves as soon as a
 * server qualifies. A move whose replacement fails before it caught up waits for it, as
 * jr_stream_evacuate's does; jr_stream_cancel_move ends it, and the drain then tries another
 * server. cb gets, once the drain committed (moves follow), 0 with a message counting
 * the replicas to move (also when the server drains already), or JR_ENOTMEMBER ("server is not
 * a member of the cluster": unknown or removed), JR_ENOLEADER / JR_ETIMEDOUT / JR_ENOQUORUM as
 * for other meta requests. Returns 0 (cb will run) or JR_EINVAL (NULL node, server or cb; a
 * name that is not a valid server name), JR_ECLOSED, JR_EREMOVED, JR_ENOTSUP, JR_ENOMEM (cb
 * will not run). */
JR_API int jr_server_evacuate(jr_node *node, const char *server, jr_meta_cb cb, void *arg);
/* Ends the drain of `server`: it takes placements again. Replicas already moved stay where they
 * went; moves in flight complete (cancel one with jr_stream_cancel_move). cb: 0, JR_ENOCHANGE
 * ("server 'X' is not draining"), JR_ENOTMEMBER, or the meta request errors above. */
JR_API int jr_server_evacuate_cancel(jr_node *node, const char *server, jr_meta_cb cb, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_CLUSTER_H */
