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

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_CONSUMER_H */
