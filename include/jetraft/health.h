/*
 * jetraft/health.h — health checks: a stream's or a consumer's replicas judged as the nats CLI's
 * `nats server check stream --peer-expect N` judges them (Nagios-style OK / WARNING / CRITICAL,
 * with a one-line rendering), and a node's own health (JetStream's /healthz: current with the
 * meta leader, every local stream and consumer replica led, with a quorum, undamaged, its state
 * machine whole, and on a group's leader its members' state machines as they report them).
 *
 * Everything handed to a callback (the structs, their arrays and strings) is borrowed for the
 * duration of the callback. Each struct starts with its size as built into the library; arrays
 * of structs are arrays of pointers.
 * Part of the public ABI; users include <jetraft.h>, which includes every part.
 */
#ifndef JETRAFT_HEALTH_H
#define JETRAFT_HEALTH_H

#include "jetraft/node.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The outcome of a check, with the Nagios exit codes the nats CLI uses. */
enum jr_check_status {
    JR_CHECK_OK = 0,
    JR_CHECK_WARNING = 1,
    JR_CHECK_CRITICAL = 2,
    JR_CHECK_UNKNOWN = 3,
};

/* What a problem of a check is about. */
enum jr_check_kind {
    JR_CHECK_UNAVAILABLE = 1, /* the info could not be had: "could not load info: <why>" */
    JR_CHECK_NO_LEADER,       /* "No leader" */
    JR_CHECK_PEER_COUNT,      /* "Expected N replicas got M" (leader and listed replicas) */
    JR_CHECK_OFFLINE,         /* "N replicas offline" */
    JR_CHECK_LAGGED,          /* "N replicas lagged": lag above lag_critical */
    JR_CHECK_INACTIVE,        /* "N replicas inactive": not seen for longer than seen_critical */
    JR_CHECK_DAMAGED,         /* "N replicas damaged": lost data, waiting for repair (as the
                                 leader knows its members: jr_peer_info.damaged; a replica whose
                                 state machine failed has a whole log and is not counted here
                                 but as JR_CHECK_FSM_FAILED or JR_CHECK_REBUILDING) */
    JR_CHECK_NOT_CURRENT,     /* "N replicas not current": online, not caught up (warning) */
    JR_CHECK_UNVOUCHED,       /* "N replicas unvouched": restarted, storage not yet vouched for
                                 (warning) */
    JR_CHECK_PEER_CHANGE,     /* "peer change in progress: N observers, M pending" (warning) */
    JR_CHECK_MOVE_STUCK,      /* "move stuck: <type>: <what it waits on>[: <error>]" — a peer
                                 change (jr_move_info) waiting on quorum, another asset or
                                 nothing it can do (warning), or with a persistent error
                                 (critical) */
    JR_CHECK_FSM_FAILED,      /* "N replicas state machine failed": its server told the leader
                                 its state machine failed and is not being rebuilt
                                 (jr_peer_info.fsm_failed; critical) */
    JR_CHECK_REBUILDING,      /* "N replicas rebuilding": a state machine rebuilt from the
                                 group's snapshot, log and peers (jr_peer_info.fsm_rebuilding;
                                 warning) */
};

typedef struct jr_check_opts {
    size_t size;               /* sizeof(jr_check_opts) */
    int peer_expect;           /* peers expected, leader included; 0: the configured replicas
                                  (a consumer's num_replicas, or its stream's when that is 0) */
    uint64_t lag_critical;     /* a replica more operations behind than this is critical; 0: not
                                  checked (--peer-lag-critical) */
    uint64_t seen_critical_ns; /* a replica not heard from for longer than this is critical; 0:
                                  not checked (--peer-seen-critical) */
} jr_check_opts;
JR_API void jr_check_opts_init_size(jr_check_opts *opts, size_t size);
#define jr_check_opts_init(opts) jr_check_opts_init_size((opts), sizeof *(opts))

/* One problem a check found. */
typedef struct jr_check_problem {
    size_t size;      /* sizeof(jr_check_problem) as built into the library */
    int kind;         /* enum jr_check_kind */
    int severity;     /* JR_CHECK_WARNING or JR_CHECK_CRITICAL */
    uint32_t count;   /* replicas concerned (PEER_COUNT: the peers found) */
    const char *text; /* as the nats CLI words it, e.g. "1 replicas offline" */
} jr_check_problem;

/* The result of jr_stream_check / jr_consumer_check. */
typedef struct jr_check_result {
    size_t size;           /* sizeof(jr_check_result) as built into the library */
    int status;            /* enum jr_check_status: the worst severity of the problems */
    const char *stream;    /* the stream checked */
    const char *consumer;  /* the consumer checked; NULL for a stream check */
    const char *leader;    /* NULL: no leader */
    uint32_t expected;     /* peers expected (opts.peer_expect or the configured replicas) */
    uint32_t peers;        /* peers found: the leader and the replicas its info lists */
    uint32_t current;      /* of them the leader and the current replicas */
    uint64_t lag_critical; /* the thresholds it was checked with (0: not checked) */
    uint64_t seen_critical_ns;
    const jr_check_problem *const *problems; /* criticals first, in the CLI's order */
    size_t nproblems;
    /* the most entries a replica's log is behind the leader's (its catch-up lag; an offline
     * replica's as of when the leader last heard from it), 0 without replicas or a leader */
    uint64_t lag_max;
} jr_check_result;

/* The callback of a check: status 0 when the info was had (the result judges it), else the
 * error of the info request (JR_ENOTFOUND, JR_ENOSTREAM, JR_ENOQUORUM, ...), with msg; in both
 * cases res is non-NULL (an error is a critical result: "No leader" when the stream or consumer
 * has no leader to answer, "could not load info: <msg>" otherwise), unless the error is
 * JR_ECLOSED or JR_ENOMEM (res NULL). */
typedef void (*jr_check_cb)(void *arg, int status, const char *msg, const jr_check_result *res);

/* Checks a stream's replicas on its info from its leader (jr_stream_info_get): a leader, the
 * expected number of peers, none offline, lagging past opts->lag_critical, unseen past
 * opts->seen_critical_ns, damaged or with a failed state machine (critical), none rebuilding
 * its state machine, unvouched, otherwise not current, or
 * joining as observer or pending member while the peer set changes (warning), and a peer
 * change (jr_cluster_info.move) stuck on quorum, another asset or nothing it can do (warning)
 * or with a persistent error (critical), saying why. While a peer change runs, the peer count
 * counts the members of its target only. opts NULL: the
 * defaults (jr_check_opts_init). Returns as jr_stream_info_get (JR_EINVAL for a NULL node, name
 * or cb, or an opts whose size is 0); the callback runs once, from the node's loop. */
JR_API int jr_stream_check(jr_node *node, const char *stream, const jr_check_opts *opts,
                           jr_check_cb cb, void *arg);
/* The same for a consumer, on its info's cluster block (jr_consumer_info_get). */
JR_API int jr_consumer_check(jr_node *node, const char *stream, const char *consumer,
                             const jr_check_opts *opts, jr_check_cb cb, void *arg);

/* Renders res (of a stream or a consumer check) as the nats CLI's Nagios line (no newline), e.g.
 *   "OK ORDERS OK:3 peers OK:0 sources | sources=0"
 *   "CRITICAL ORDERS Crit:1 replicas offline OK:3 peers OK:0 sources | sources=0"
 * "STATUS NAME", then "Crit:" each critical, "Warn:" each warning, "OK:" each passed check; a
 * stream check ends with the CLI's sources check (libjetraft streams have none) and its perf
 * data. A consumer is named "STREAM_CONSUMER" as the CLI names its consumer check. Into buf
 * (always NUL-terminated when len > 0; buf may be NULL when len is 0); returns the full length
 * it needs, like snprintf, or JR_EINVAL (res NULL or without a stream name, buf NULL with
 * len > 0). Reads res and its problems only up to their size. No allocation. */
JR_API int jr_stream_check_format(const jr_check_result *res, char *buf, size_t len);

/* A local stream or consumer replica that is unwell: its own state, or, on its group's leader,
 * a member whose state machine failed or is being rebuilt (peers_fsm_failed). */
typedef struct jr_group_health {
    size_t size;          /* sizeof(jr_group_health) as built into the library */
    uint64_t group;       /* its Raft group id */
    const char *stream;   /* the stream */
    const char *consumer; /* the consumer; NULL: a stream replica */
    int role;             /* enum jr_role of this replica */
    int no_leader;        /* it knows no leader (an election goes on or cannot succeed) */
    int no_quorum;        /* leader: fewer voters current than a majority; follower: its leader
                             not heard from within an election timeout */
    int damaged;          /* its Raft replica lost data and waits for repair from its peers
                             (jr_group_status.damaged): it never votes nor leads */
    int unvouched;        /* restarted, its peers have not vouched for its storage yet */
    const char *text;     /* e.g. "stream ORDERS: no leader", "stream ORDERS: damaged",
                             "stream ORDERS: state machine failed: <why>" */
    int fsm_failed;       /* its state machine failed (a stream store that failed a read, a
                             sync, an apply or a snapshot restore, or was found damaged at open;
                             a consumer state that failed an apply or a restore;
                             jr_group_status.fsm_failed) and applies nothing until it is
                             rebuilt from the group's snapshot, log and peers, which includes
                             fetching the stream's messages again. Its Raft log is whole: such
                             a stream or consumer replica may still vote, and lead for a while
                             (a stream leader whose store failed hands its leadership over); a
                             group whose snapshot did not restore votes no more */
    int peers_fsm_failed; /* on the leader: other members whose server told it their state
                             machine failed or is being rebuilt (jr_peer_status.fsm_failed);
                             such a group is listed (its text names them) until they are whole
                             again. 0 elsewhere */
} jr_group_health;

/* A node's health as JetStream's /healthz sees it, computed locally. */
typedef struct jr_node_health_info {
    size_t size;             /* sizeof(jr_node_health_info) as built into the library */
    int healthy;             /* meta_current and no unwell group of its own: a group listed
                                only for a member's failed state machine (peers_fsm_failed)
                                does not count, that member's server reports it */
    const char *meta_leader; /* the meta leader this node knows; NULL: none */
    int meta_current;        /* a meta leader known (and, on a follower, heard from within an
                                election timeout), this meta replica applied what it knows
                                committed, neither damaged nor unvouched, and the node's WAL
                                has not failed */
    uint64_t meta_lag;       /* meta entries known committed, not yet applied here */
    const char *meta_text;   /* "" when current, else /healthz's words: "JetStream has not
                                established contact with a meta leader" or "JetStream is not
                                current with the meta leader"; or, once the node's WAL failed
                                (JR_EIO from jr_node_tick), "JetStream's WAL failed: nothing is
                                stored until the node is reopened" */
    size_t nstreams;         /* local stream replicas checked */
    size_t nconsumers;       /* local consumer replicas checked */
    const jr_group_health *const *groups; /* the unwell ones: streams, then consumers */
    size_t ngroups;
    /* What this server's stream replicas store (JetStream's per-server usage in /jsz):
     * messages, and bytes in memory and in files. */
    uint64_t msgs;
    uint64_t memory_bytes;
    uint64_t file_bytes;
} jr_node_health_info;
typedef void (*jr_node_health_cb)(void *arg, int status, const char *msg,
                                  const jr_node_health_info *h);
/* This node's health, computed on its own state (nothing is asked of other servers) when the
 * callback runs, from the node's loop. status 0 with h, or JR_ECLOSED / JR_ENOMEM with h NULL.
 * Returns 0, JR_EINVAL (NULL node or cb), JR_ENOTSUP (streams not enabled), JR_ECLOSED,
 * JR_ENOMEM. */
JR_API int jr_node_health(jr_node *node, jr_node_health_cb cb, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_HEALTH_H */
