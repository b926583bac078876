/*
 * jetraft/consumer.h — consumers with JetStream semantics: durable or ephemeral cursors over a
 * stream, each replicated by its own Raft group on a subset of its stream's servers.
 *
 * Available on nodes opened with jr_node_config.streams = 1.
 * Part of the public ABI; users include <jetraft.h>, which includes every part.
 */
#ifndef JETRAFT_CONSUMER_H
#define JETRAFT_CONSUMER_H

#include "jetraft/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------------------------------
 * Consumer config. Field by field what JetStream's ConsumerConfig holds, with its defaults and
 * refusals (an invalid field is JR_EINVAL and the message is JetStream's text for it). Durations
 * are signed nanoseconds so that a negative value is refused as JetStream refuses it; times are
 * ns since the Unix epoch, 0 meaning none.
 */
enum jr_deliver_policy {
    JR_DELIVER_ALL = 0,
    JR_DELIVER_LAST = 1,
    JR_DELIVER_NEW = 2,
    JR_DELIVER_BY_START_SEQ = 3,
    JR_DELIVER_BY_START_TIME = 4,
    JR_DELIVER_LAST_PER_SUBJECT = 5
};
enum jr_ack_policy { JR_ACK_NONE = 0, JR_ACK_ALL = 1, JR_ACK_EXPLICIT = 2 };
enum jr_replay_policy { JR_REPLAY_INSTANT = 0, JR_REPLAY_ORIGINAL = 1 };
enum jr_priority_policy {
    JR_PRIORITY_NONE = 0,
    JR_PRIORITY_OVERFLOW = 1,      /* requests with min_pending/min_ack_pending wait for those */
    JR_PRIORITY_PINNED_CLIENT = 2, /* one client is served; the others stand by */
    JR_PRIORITY_PRIORITIZED = 3    /* requests served by their priority, 0 first */
};

#define JR_CONSUMER_NAME_MAX 255

typedef struct jr_consumer_config {
    size_t size;              /* sizeof(jr_consumer_config) (jr_consumer_config_init sets it) */
    const char *name;         /* NULL with durable_name NULL: an ephemeral with a generated name */
    const char *durable_name; /* set: a durable consumer (equal to name if both are set) */
    const char *description;  /* at most 4 KiB */
    const jr_kv *metadata;    /* keys and values at most 128 KiB together */
    size_t nmetadata;
    int deliver_policy;         /* enum jr_deliver_policy; default JR_DELIVER_ALL */
    uint64_t opt_start_seq;     /* with JR_DELIVER_BY_START_SEQ only */
    uint64_t opt_start_time_ns; /* with JR_DELIVER_BY_START_TIME only */
    int ack_policy;            /* enum jr_ack_policy; default JR_ACK_EXPLICIT (what clients send) */
    int64_t ack_wait_ns;       /* 0: 30 s when acks are on; backoff[0] when backoff is set */
    int64_t max_deliver;       /* 0 or below -1: -1, unlimited */
    const int64_t *backoff_ns; /* redelivery delays; the last one repeats */
    size_t nbackoff;
    const char *filter_subject;         /* a subject or pattern; not with filter_subjects */
    const char *const *filter_subjects; /* several, not overlapping each other */
    size_t nfilter_subjects;
    int replay_policy;           /* enum jr_replay_policy; default JR_REPLAY_INSTANT */
    uint64_t rate_limit_bps;     /* push only */
    const char *sample_freq;     /* "N%" or "N"; NULL none */
    int64_t max_waiting;         /* pull: queued fetches, default 512; push: must be 0 */
    int64_t max_ack_pending;     /* default 1000 when acks are on; -1 unlimited */
    int headers_only;            /* deliver headers and Nats-Msg-Size, no body */
    int64_t max_batch;           /* pull caps; 0: none */
    int64_t max_expires_ns;      /* 0: none; else at least 1 ms */
    int64_t max_bytes;           /* 0: none */
    const char *deliver_subject; /* set: a push consumer (delivery through a callback) */
    const char *deliver_group;
    int64_t idle_heartbeat_ns;     /* push only; at least 100 ms */
    int flow_control;              /* push only; needs idle_heartbeat_ns */
    int64_t inactive_threshold_ns; /* ephemeral: 5 s when 0; durable: 0 = never removed */
    int num_replicas;              /* 0: the stream's; never more */
    int mem_storage;               /* state in memory even on a file stream */
    uint64_t pause_until_ns;       /* paused until then (create only; then the pause calls) */

    /* Priority groups (JetStream 2.11), pull consumers only: every pull request names a group. */
    const char *const *priority_groups; /* each 1..16 of A-Z a-z 0-9 - _ / = */
    size_t npriority_groups;
    int priority_policy;         /* enum jr_priority_policy; groups needed unless NONE */
    int64_t priority_timeout_ns; /* pinned client: unpin after this idle (0: 2 min) */
} jr_consumer_config;

/* Fills cfg with JetStream's defaults (and cfg->size); the caller then sets the name, filters...
 * Writes only the first `size` bytes (the macro passes the caller's sizeof). */
JR_API void jr_consumer_config_init_size(jr_consumer_config *cfg, size_t size);
#define jr_consumer_config_init(cfg) jr_consumer_config_init_size((cfg), sizeof *(cfg))

/* ----------------------------------------------------------------------------------------------
 * Consumers API. Every function may be called on any server of the cluster; create, update and
 * delete go to the meta leader, which checks the config against the stream (JR_EINVAL with
 * JetStream's text), places the consumer's replicas on a subset of its stream's servers
 * (num_replicas of them; 0: as many as the stream has) and commits the assignment; info goes
 * to the consumer's leader. The contract of the stream API (stream.h: exactly-once callbacks
 * from the node's loop, bounded waits, JR_ENOLEADER / JR_ENOQUORUM / JR_ETIMEDOUT) holds here
 * too. A consumer of a stream that does not exist is JR_ENOSTREAM; deleting a stream deletes
 * its consumers.
 */

/* Completion of a create or update: `name` is the consumer's (generated for an ephemeral one;
 * borrowed for the call; NULL when status is not 0). */
typedef void (*jr_consumer_cb)(void *arg, int status, const char *msg, const char *name);

/* Creates the consumer cfg describes on `stream`, or updates it if it exists (JetStream's
 * create-or-update; cfg is copied). An identical config is idempotent. An update may change only
 * what JetStream lets change: anything else is JR_EINVAL naming the field ("ack policy can not
 * be updated"). JR_ELIMIT when the stream's max_consumers is reached. */
JR_API int jr_consumer_add(jr_node *node, const char *stream, const jr_consumer_config *cfg,
                           jr_consumer_cb cb, void *arg);
/* As jr_consumer_add, but an existing consumer with another config is JR_EEXIST ("consumer
 * already exists"). */
JR_API int jr_consumer_create(jr_node *node, const char *stream, const jr_consumer_config *cfg,
                              jr_consumer_cb cb, void *arg);
/* As jr_consumer_add, but a missing consumer is JR_ENOTFOUND ("consumer does not exist"). */
JR_API int jr_consumer_update(jr_node *node, const char *stream, const jr_consumer_config *cfg,
                              jr_consumer_cb cb, void *arg);
/* Pauses consumer `name` until pause_until_ns (stream time, ns since the Unix epoch; 0 or a past
 * time resumes it): its leader delivers nothing meanwhile (pull requests wait and expire as
 * usual). The pause is part of the consumer's config (jr_consumer_info.config->pause_until_ns);
 * an update keeps it, only this call changes it. JR_ENOTFOUND if unknown. */
JR_API int jr_consumer_pause(jr_node *node, const char *stream, const char *name,
                             uint64_t pause_until_ns, jr_stream_cb cb, void *arg);
/* Deletes a consumer and its state on every replica. JR_ENOTFOUND if unknown; status 0 when an
 * earlier attempt of this very request deleted it (as jr_stream_delete). */
JR_API int jr_consumer_delete(jr_node *node, const char *stream, const char *name, jr_stream_cb cb,
                              void *arg);
/* Moves consumer `name`'s replica off server `peer` onto a peer of its stream that does not hold
 * it (as jr_stream_evacuate: the replacement joins and catches up through the consumer's group
 * first; the replica count stays). JR_EPEERREMAP "peer remap failed" when every peer of the
 * stream holds the consumer already, JR_ENOTMEMBER, JR_ENOSTREAM, JR_ENOTFOUND, JR_EBUSY (the
 * consumer's or its stream's peer change in progress). */
JR_API int jr_consumer_evacuate(jr_node *node, const char *stream, const char *name,
                                const char *peer, jr_stream_cb cb, void *arg);
/* Returns the consumer's peer change in progress to its origin (as jr_stream_cancel_move).
 * JR_ENOCHANGE "consumer reconfiguration not in progress"; JR_EBUSY while the origin is no
 * longer within the stream's peers. */
JR_API int jr_consumer_cancel_move(jr_node *node, const char *stream, const char *name,
                                   jr_stream_cb cb, void *arg);

/* A pair of sequences (frozen: it never grows, so it is embedded by value). */
typedef struct jr_consumer_seq {
    uint64_t consumer_seq;
    uint64_t stream_seq;
    uint64_t last_active_ns; /* ns since the Unix epoch (stream time); 0: never */
} jr_consumer_seq;

/* Consumer info, computed on the consumer's leader (everything borrowed for the callback). */
typedef struct jr_consumer_info {
    size_t size; /* sizeof(jr_consumer_info) as built into the library */
    const char *stream;
    const char *name;
    uint64_t created_ns;              /* the placing meta leader's wall clock; 0 unknown */
    const jr_consumer_config *config; /* normal form: defaults filled in */
    jr_consumer_seq delivered;        /* the last delivered pair */
    jr_consumer_seq ack_floor;        /* the highest contiguous acknowledged pair */
    uint64_t num_ack_pending;         /* delivered, not yet acknowledged */
    uint64_t num_redelivered;         /* distinct messages delivered more than once */
    uint64_t num_waiting;             /* pull requests waiting */
    uint64_t num_pending;             /* matching messages not yet delivered */
    const jr_cluster_info *cluster;
} jr_consumer_info;

/* Renders info as the nats CLI prints `nats consumer info` into buf (always NUL-terminated when
 * len > 0; buf may be NULL when len is 0): the "Information for Consumer" header, the
 * Configuration rows that are set, the Cluster Information block (and, while the consumer's
 * peer set changes, the Migration Information section as jr_stream_info_format prints it) and
 * the State rows. now_ns
 * (ns since the Unix epoch, the clock info's times come from) dates the "... ago" parts and a
 * pause's time left; 0 leaves them out. Times are shown in UTC; a created_ns of 0 leaves out
 * "created ...". Reads info, its config and its cluster only up to their `size`; a NULL config or
 * cluster (or a cluster without a name) leaves out its block. Returns the full length it needs
 * (excluding the NUL), like snprintf, or JR_EINVAL (info NULL or too small to hold its name, buf
 * NULL with len > 0, a malformed cluster block). No allocation. */
JR_API int jr_consumer_info_format(const jr_consumer_info *info, uint64_t now_ns, char *buf,
                                   size_t len);

typedef void (*jr_consumer_info_cb)(void *arg, int status, const char *msg,
                                    const jr_consumer_info *info);
/* The consumer's info from its leader. JR_ENOSTREAM, JR_ENOTFOUND. */
JR_API int jr_consumer_info_get(jr_node *node, const char *stream, const char *name,
                                jr_consumer_info_cb cb, void *arg);

/* The names of the consumers of `stream`, from the meta leader (paged as jr_stream_names,
 * stream.h). JR_ENOSTREAM if the stream does not exist. */
JR_API int jr_consumer_names(jr_node *node, const char *stream, uint64_t offset, jr_names_cb cb,
                             void *arg);

/* A page of consumer infos (everything borrowed for the callback). */
typedef struct jr_consumer_page {
    size_t size;                   /* sizeof(jr_consumer_page) as built into the library */
    uint64_t total, offset, limit; /* as in jr_names (limit JR_LIST_LIMIT) */
    const jr_consumer_info *const *consumers; /* in name order */
    size_t nconsumers;
    const char *const *missing; /* consumers whose leader did not answer in time */
    size_t nmissing;
} jr_consumer_page;
typedef void (*jr_consumer_page_cb)(void *arg, int status, const char *msg,
                                    const jr_consumer_page *page);

/* The info of each consumer of a page, as JetStream's CONSUMER.LIST: names from the meta
 * leader, then each consumer's info from its leader (as jr_consumer_info_get, all asked at
 * once); a consumer deleted meanwhile is left out, one whose leader did not answer in time is
 * named in `missing`. JR_ENOSTREAM if the stream does not exist. */
JR_API int jr_consumer_list(jr_node *node, const char *stream, uint64_t offset,
                            jr_consumer_page_cb cb, void *arg);

/* ----------------------------------------------------------------------------------------------
 * Pull delivery and acknowledgements.
 *
 * A fetch asks the consumer's leader (routed from any server) for up to `batch` messages. The
 * leader hands a message out only once its delivery is recorded on a quorum of the consumer's
 * group, so a leader that fails over never hands out a message its successor does not know was
 * delivered (at-least-once with exact delivery counts). Expired deliveries (ack_wait, backoff,
 * a NAK) are redelivered first, ahead of new messages; while max_ack_pending messages wait for
 * an ack nothing new is delivered.
 */

/* A delivered message (everything borrowed for the callback). */
typedef struct jr_consumer_msg {
    size_t size; /* sizeof(jr_consumer_msg) as built into the library */
    const char *stream;
    const char *consumer;
    const char *subject;
    const void *hdr; /* NATS header block, or NULL */
    size_t hdr_len;
    const void *data;
    size_t len;
    uint64_t stream_seq;
    uint64_t consumer_seq; /* grows with every delivery, redeliveries included */
    uint32_t delivered;    /* delivery count: 1 the first time */
    uint64_t pending;      /* matching messages after this one still to deliver */
    uint64_t ts;           /* stream time it was stored */
    /* JetStream's ack subject
     * ($JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>): give it to
     * jr_consumer_ack on any server */
    const char *ack_token;
    const char *pin_id; /* pinned client: the pin id of the client served (NULL: none) */
} jr_consumer_msg;

typedef struct jr_fetch_opts {
    size_t size;               /* sizeof(jr_fetch_opts) */
    int64_t batch;             /* messages wanted; default 1 */
    int64_t max_bytes;         /* 0: no cap; else the batch ends before a message would pass it */
    int64_t expires_ns;        /* 0: the node's request_timeout_ms; the fetch ends then */
    int no_wait;               /* end at once (404 No Messages) when nothing is available */
    int64_t idle_heartbeat_ns; /* 0: none; else the callback gets an idle heartbeat (status 0,
                                  m and end NULL) whenever the leader held the request that long
                                  without a message for it; at most half of expires_ns */
    /* Priority groups (a consumer with a priority_policy; every request names one of its
     * groups): */
    const char *group;
    int64_t min_pending;     /* overflow: served only while num_pending >= it ... */
    int64_t min_ack_pending; /* ... or num_ack_pending >= it (0: no condition) */
    const char *id;          /* pinned client: the pin id this client was given (NULL: none; a
                                request without one stands by while another client is pinned) */
    int priority;            /* prioritized: 0 (first) to 9 */
} jr_fetch_opts;
JR_API void jr_fetch_opts_init_size(jr_fetch_opts *opts, size_t size);
#define jr_fetch_opts_init(opts) jr_fetch_opts_init_size((opts), sizeof *(opts))

/* How a fetch ended, as JetStream's status line says it: code 0 (the batch was filled), 404
 * "No Messages", 408 "Request Timeout", 409 "Exceeded MaxWaiting", "Exceeded MaxRequestBatch of
 * <n>", "Message Size Exceeds MaxBytes", "Leadership Change", "Consumer Deleted", "Consumer is
 * push based"; with the messages and bytes the request still wanted. */
typedef struct jr_fetch_end {
    size_t size; /* sizeof(jr_fetch_end) as built into the library */
    int code;
    const char *text;
    uint64_t pending_msgs;
    uint64_t pending_bytes;
} jr_fetch_end;

/* Called once per message (status 0, m set, end NULL) and, with idle_heartbeat_ns, for each idle
 * heartbeat (status 0, m and end NULL); then once more at the end: status 0
 * with m NULL and `end` saying why it ended, or a negative status (JR_ENOSTREAM, JR_ENOTFOUND
 * for an unknown consumer, JR_ENOLEADER, JR_ENOQUORUM, JR_ECLOSED...) with m and end NULL and
 * msg saying what happened. */
typedef void (*jr_fetch_cb)(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                            const jr_fetch_end *end);
/* Fetches from a pull consumer (opts NULL: one message, waiting up to request_timeout_ms). */
JR_API int jr_consumer_fetch(jr_node *node, const char *stream, const char *consumer,
                             const jr_fetch_opts *opts, jr_fetch_cb cb, void *arg);

/* What an acknowledgement says (JetStream's +ACK, -NAK, +WPI, +TERM). */
enum jr_ack_kind { JR_ACK_ACK = 0, JR_ACK_NAK = 1, JR_ACK_PROGRESS = 2, JR_ACK_TERM = 3 };

/* Acknowledges the delivery `ack_token` names (jr_consumer_msg.ack_token), on any server.
 * kind NAK redelivers after delay_ns (0: at once); PROGRESS restarts the ack wait; TERM never
 * redelivers (reason, may be NULL, goes to the log). With ack policy all an ACK covers every
 * message up to this one. cb NULL: fire and forget. With cb the call is confirmed: status 0 once
 * the ack is replicated on a quorum of the consumer's group; JR_ENOTFOUND when the message is
 * not pending (never delivered, already acknowledged or terminated: nothing changes);
 * JR_EINVAL for a malformed token. Any delivery's token acknowledges the message. */
JR_API int jr_consumer_ack(jr_node *node, const char *ack_token, int kind, int64_t delay_ns,
                           const char *reason, jr_stream_cb cb, void *arg);

/* Resets consumer `name` to deliver from stream seq `seq` on (0: the message after its ack floor),
 * as JetStream 2.14's reset: pending acknowledgements and redelivery counts are dropped,
 * delivered and ack floor become {0, seq - 1}, consumer sequences start again at 1. Allowed for
 * deliver all (any seq), by start sequence (seq >= opt_start_seq) and by start time (seq at or
 * after the first message of opt_start_time); else JR_EINVAL ("invalid reset: not allowed",
 * "invalid reset: below start seq", "invalid reset: below start time"). Status 0 once the
 * reset is replicated. */
JR_API int jr_consumer_reset(jr_node *node, const char *stream, const char *name, uint64_t seq,
                             jr_stream_cb cb, void *arg);

/* Moves the consumer's leadership to server `peer` (a caught-up voter of the consumer's group),
 * or to the best one if peer is NULL; pull requests waiting at the old leader end with 409
 * Leadership Change. JR_ENOTVOTER, JR_ETRANSFER, JR_ETIMEDOUT, as jr_stream_stepdown. */
JR_API int jr_consumer_stepdown(jr_node *node, const char *stream, const char *name,
                                const char *peer, jr_stream_cb cb, void *arg);

/* Clears the pin of priority group `group` of a pinned-client consumer (JetStream's UNPIN): the
 * next request without an id is pinned. JR_ENOTFOUND for a group the consumer lacks. */
JR_API int jr_consumer_unpin(jr_node *node, const char *stream, const char *name, const char *group,
                             jr_stream_cb cb, void *arg);

/* JetStream's +NXT: acknowledges the delivery ack_token names (fire and forget, as
 * jr_consumer_ack with JR_ACK_ACK and no callback) and fetches from the same consumer with opts
 * (as jr_consumer_fetch). Returns the first error of the two; cb then never runs. */
JR_API int jr_consumer_ack_next(jr_node *node, const char *ack_token, const jr_fetch_opts *opts,
                                jr_fetch_cb cb, void *arg);

/* ----------------------------------------------------------------------------------------------
 * Push delivery. A push consumer (deliver_subject set) delivers to a subscription: the callback
 * gets each message as its leader hands it out (quorum before delivery, as a fetch), at most
 * max_ack_pending unacknowledged at a time; with idle_heartbeat_ns set, status 0 and m NULL
 * when nothing came for that long (an idle heartbeat). The subscription ends with a negative
 * status and m NULL (JR_ENOTFOUND: the consumer was deleted; JR_ECLOSED: the node closes);
 * after that last call, or after jr_subscription_close, the callback never runs again. One
 * subscription per push consumer at a time is what JetStream users expect; more share its
 * messages.
 */
typedef struct jr_subscription jr_subscription;
typedef void (*jr_push_cb)(void *arg, int status, const jr_consumer_msg *m);
/* Subscribes to push consumer `consumer`: *out gets the subscription. JR_EINVAL, JR_ENOTSUP,
 * JR_ECLOSED, JR_ENOMEM; a pull consumer or an unknown one ends the subscription through the
 * callback (JR_EINVAL, JR_ENOTFOUND). */
JR_API int jr_consumer_subscribe(jr_node *node, const char *stream, const char *consumer,
                                 jr_push_cb cb, void *arg, jr_subscription **out);
/* Ends sub: its callback never runs again (a message handed to it meanwhile is redelivered
 * after its ack wait). */
JR_API void jr_subscription_close(jr_subscription *sub);

/* ----------------------------------------------------------------------------------------------
 * Advisories: what JetStream publishes on $JS.EVENT.ADVISORY.CONSUMER.*, as a callback on the
 * server that leads the consumer when it happens. Best effort, as JetStream's: the leader that
 * recorded the event reports it once; an event recorded by a leader that failed before it
 * applied it is not reported.
 */
enum jr_advisory_kind {
    JR_ADVISORY_MAX_DELIVERIES = 1, /* delivered max_deliver times, never acknowledged: no more
                                       deliveries (MAX_DELIVERIES) */
    JR_ADVISORY_TERMINATED = 2,     /* acknowledged with TERM (MSG_TERMINATED) */
    JR_ADVISORY_NAKED = 3,          /* negatively acknowledged (MSG_NAKED) */
    JR_ADVISORY_ACK_SAMPLE = 4,     /* an acknowledgement sampled by sample_freq, with its
                                       latency ($JS.EVENT.METRIC.CONSUMER.ACK) */
    JR_ADVISORY_PINNED = 5,         /* pinned client: a client was pinned (PINNED) */
    JR_ADVISORY_UNPINNED = 6,       /* pinned client: unpinned, reason "timeout" or "admin" */
};
typedef struct jr_consumer_advisory {
    size_t size; /* sizeof(jr_consumer_advisory) as built into the library */
    int kind;    /* enum jr_advisory_kind */
    const char *stream;
    const char *consumer;
    uint64_t stream_seq;
    uint64_t consumer_seq; /* of the message's first delivery */
    uint32_t deliveries;
    uint64_t ack_latency_ns; /* JR_ADVISORY_ACK_SAMPLE: from its last delivery to the ack */
    const char *group;       /* PINNED, UNPINNED: the priority group */
    const char *pin_id;      /* PINNED: the new pin; UNPINNED: the reason */
} jr_consumer_advisory;
typedef void (*jr_advisory_cb)(void *arg, const jr_consumer_advisory *adv);
/* Sets node's advisory callback (NULL: none); it runs inside jr_node_recv or jr_node_tick. */
JR_API int jr_consumer_advisories(jr_node *node, jr_advisory_cb cb, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_CONSUMER_H */
