/*
 * jetraft/node.h — one server: its config, open/recv/tick/deadline/close, errors and counters.
 *
 * A node is driven by one thread at a time; callbacks run only inside jr_node_recv() and
 * jr_node_tick().
 * Part of the public ABI; users include <jetraft.h>, which includes every part.
 */
#ifndef JETRAFT_NODE_H
#define JETRAFT_NODE_H

#include "jetraft/plugins.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------------------------------
 * Node
 */
typedef struct jr_node jr_node;

enum jr_sync_policy {
    JR_SYNC_ALWAYS = 0,   /* default: nothing is acknowledged before the fsync that covers it */
    JR_SYNC_INTERVAL = 1, /* fsync every sync_interval_ms: an acknowledged write can be lost on
                             power failure of a quorum; for users who accept exactly that. Term
                             and vote records are still synced before they take effect, so
                             election safety holds under either policy. */
};

typedef struct jr_node_config {
    size_t size;             /* sizeof(jr_node_config) */
    const char *name;        /* server name, unique in the cluster; required */
    const char *cluster;     /* cluster name; default "jetraft" */
    const char *const *tags; /* placement tags of this server, e.g. "az:1", "ssd" */
    size_t ntags;
    const char *const *peers; /* the seed list: the servers of the cluster at its founding (this
                                 one included), or some members of it for a server that joins
                                 (`join`); with streams the node learns servers added later from
                                 the meta group */
    size_t npeers;
    const char *wal_dir;          /* directory of the node's shared Raft WAL; required */
    const char *store_dir;        /* directory of message stores; default wal_dir */
    jr_vfs *vfs;                  /* NULL: jr_vfs_posix() */
    const jr_host *host;          /* required */
    const jr_allocator *alloc;    /* NULL: malloc family */
    uint32_t election_timeout_ms; /* base election timeout; default 1000 */
    uint32_t heartbeat_ms;        /* leader heartbeat interval; default 100 */
    int sync_policy;              /* enum jr_sync_policy; default JR_SYNC_ALWAYS */
    uint32_t sync_interval_ms;    /* with JR_SYNC_INTERVAL; default 100 */
    uint64_t seed;                /* randomness; 0: name ^ now(); set: a new one every start */
    uint32_t max_frame_bytes;     /* largest frame sent or accepted; default 8 MiB */
    uint64_t wal_segment_bytes;   /* WAL segment size; default 64 MiB */
    const char *unique_tag;       /* tag prefix no two replicas may share, e.g. "az:"; NULL none */
    uint64_t max_store_bytes;     /* this server's capacity for placement; 0: unknown */
    uint32_t max_assets;          /* replicated assets this server accepts; 0: no limit */
    /* Streams (include/jetraft/stream.h). */
    int streams;                 /* 1: this server joins the meta group (every server of `peers`
                                    must set it too) and hosts stream replicas; default 0 */
    uint32_t request_timeout_ms; /* bounded wait of a stream request (admin, info, a publish
                                    without its own timeout) for a leader and a quorum; 0: 5000 */
    /* Optional: where jr_node_open writes why it failed (NUL-terminated, cut to errbuf_len;
     * "" on success). The same text goes to host->log at JR_LOG_ERROR. NULL: none. */
    char *errbuf;
    size_t errbuf_len;
    /* Largest message (headers + data) a publish may carry, like JetStream's max_payload;
     * 0: JR_MAX_PAYLOAD_DEFAULT, or less if max_frame_bytes leaves less room. At most
     * JR_MAX_PAYLOAD_MAX, and max_frame_bytes must hold two such entries with their framing
     * (JR_EINVAL naming both otherwise). A larger publish fails with JR_EMSGSIZE. Give every
     * server the same value: a replica must accept what its leader logs. */
    uint32_t max_payload;
    /* Block size of this server's file stores (streams with JR_STORAGE_FILE): a block is
     * sealed (and compressed) when the next record would not fit, and removed once none of
     * its messages is live. 0: 8 MiB; else JR_STORE_BLOCK_MIN..JR_STORE_BLOCK_MAX. */
    uint64_t store_block_bytes;
    /* With streams: 1 if this server joins a running cluster instead of forming one. `peers`
     * is then its seed list — some servers of the cluster (this one may be listed too) — which
     * it asks to let it in: the meta leader records the server (its name, cluster, tags and
     * capacity) and adds it to the meta group, first as a non-voting member, then as a voter
     * once it has caught up; no other server restarts. Such a server never bootstraps the meta
     * group. Once admitted, it learns every server of the cluster from the meta group, and at
     * a restart from its own copy of the meta group's log (the flag then changes nothing). A
     * server the cluster removed (jr_server_peer_remove) is refused: it stops and reports
     * JR_EREMOVED. 0 (default): every server of `peers` is a founding member and a voter of
     * the meta group, and all of them must list the same servers. */
    int join;
    /* Encryption at rest: the node key, key_len = 32 bytes chosen by the host (e.g. read from a
     * key file; libsodium's crypto_kdf_keygen makes one), copied at jr_node_open (the node
     * keeps keys derived from it, and wipes them at close). With a key, everything this server
     * writes that holds message data is encrypted (XChaCha20-Poly1305, keys derived per file
     * kind and per stream): the blocks of every file store, the WAL's entry records and the
     * snapshot files; what stays in the clear is structure (sizes, sequence numbers, indexes,
     * terms, group ids, stream names in paths, key checks). Messages in memory and in frames
     * to peers are not: protect links with the host's transport (include/jetraft/link.h).
     * Whether a node's directories are encrypted is decided when they are first written:
     * jr_node_open refuses with JR_EAUTH, before it changes a byte, a WAL written under another
     * key, an encrypted one opened without a key, and a plaintext one opened with a key (to
     * encrypt a server's data, remove the server, clear its directories and let it join again
     * with a key: its peers send it everything); a store block or snapshot file written under
     * another key, or without one, is JR_EAUTH too (not damage: nothing is deleted or rebuilt
     * for it), while damage to encrypted files is damage as without a key (repaired from the
     * peers). Every server may have its own key. NULL (default): nothing is encrypted; key_len must
     * then be 0 (JR_EINVAL naming key_len otherwise). */
    const uint8_t *key;
    size_t key_len;
    /* Memory and log bounds of peer changes (docs/internals.md "Catch-up" and "The shared
     * WAL"). A replica joining a stream's group (a grow or a move) copies the stream's messages
     * from a peer while its leader goes on appending; it cannot apply those entries yet. Each
     * bound is JR_LOG_BOUND_MIN..JR_LOG_BOUND_MAX bytes, 0 taking the default (JR_EINVAL naming
     * the field otherwise). Give every server the same values. */
    uint64_t catchup_queue_bytes; /* the joiner's queue of entries committed meanwhile keeps
                                     them in its Raft log, and copies them only before a later
                                     snapshot replaces that log: copies beyond this many bytes
                                     shrink the log's bound by as much; default 64 MiB */
    uint64_t catchup_log_bytes;   /* the joiner's Raft log (memory and its share of the WAL):
                                     at this many bytes of entries it takes no more from its
                                     leader, falls behind, and is brought up to date like any
                                     lagging follower (a later snapshot, then the messages it
                                     missed); default 256 MiB */
    uint64_t keep_bytes;          /* log a leader keeps behind a snapshot for the followers it
                                     replicates to, at most; default 64 MiB */
    uint64_t join_keep_bytes;     /* the same for a member catching up (an observer that
                                     gains on the log); at least keep_bytes; default 256 MiB */
    /* A stream, consumer or cluster request (publish and reads included) waits for its group's
     * leader until its deadline (request_timeout_ms), asking again every heartbeat. With this
     * set, a request whose group has a replica on this server that has known no leader for
     * this many ms ends at once instead, as at its deadline: JR_ENOLEADER or JR_ENOQUORUM (it
     * reached no log), or the verdict of a write that may have (JR_ELEADERLOST, JR_ETIMEDOUT),
     * as JetStream answers "temporarily unavailable" while a group is leaderless. The time counts
     * from when that replica lost its last leader; a replica that has known none since this node
     * opened it waits four election timeouts more (its first election may wait for the other
     * servers to start). Requests for groups with no replica here wait until their deadline.
     * 0 (default): every request waits until its deadline. */
    uint32_t leaderless_fail_ms;
} jr_node_config;

/* Defaults and limits of jr_node_config's catch-up and retention bounds. */
#define JR_CATCHUP_QUEUE_BYTES_DEFAULT (64ull << 20)
#define JR_CATCHUP_LOG_BYTES_DEFAULT (256ull << 20)
#define JR_KEEP_BYTES_DEFAULT (64ull << 20)
#define JR_JOIN_KEEP_BYTES_DEFAULT (256ull << 20)
#define JR_LOG_BOUND_MIN (1ull << 20)
#define JR_LOG_BOUND_MAX (1ull << 40)

/* Length of jr_node_config.key. */
#define JR_NODE_KEY_BYTES 32

#define JR_MAX_PAYLOAD_DEFAULT (1u << 20)
#define JR_MAX_PAYLOAD_MAX (8u << 20)
#define JR_STORE_BLOCK_MIN (64u << 10)
#define JR_STORE_BLOCK_MAX (256u << 20)

/* With streams on, every server of `peers` is a voter of the meta group: at most this many
 * distinct servers (this one included). Servers that join later count too: the meta leader
 * refuses a join beyond it (JR_ENORESOURCES). */
#define JR_STREAMS_MAX_SERVERS 64

/* Fills cfg with defaults (and cfg->size). The caller then sets name, peers, wal_dir, host.
 * Writes only the first `size` bytes (the macro passes the caller's sizeof). */
JR_API void jr_node_config_init_size(jr_node_config *cfg, size_t size);
#define jr_node_config_init(cfg) jr_node_config_init_size((cfg), sizeof *(cfg))

/* Opens a node: validates cfg, recovers its WAL (and snapshot files) into per-group state that
 * jr_group_open() loads when the host reopens each group. On success *out is a node that must be
 * closed with jr_node_close(). On failure *out is NULL and nothing is left open, and the reason,
 * naming the config field, is written to cfg->errbuf and host->log (when given). Errors:
 * JR_EINVAL (missing name, wal_dir or host; an incomplete host or alloc table;
 * heartbeat_ms >= election_timeout_ms; max_frame_bytes below 64 KiB; an unknown sync_policy; an
 * empty or NULL name in peers, a name listed twice, or two names with the same id; with streams,
 * more than JR_STREAMS_MAX_SERVERS servers, or an invalid name, cluster or tag; a wal_dir (or a
 * directory above it) that exists as a file; max_payload or store_block_bytes out of bounds; a
 * key_len other than JR_NODE_KEY_BYTES with a key, or non-zero without one; a catch-up or
 * retention bound outside JR_LOG_BOUND_MIN..JR_LOG_BOUND_MAX, or join_keep_bytes below
 * keep_bytes), JR_EAUTH (the WAL
 * or a snapshot file was written under another key, with a key when none is given, or without
 * one when one is), JR_ENOMEM, and the vfs's or the WAL's errors (JR_EIO, JR_ECORRUPT, ...). */
JR_API int jr_node_open(const jr_node_config *cfg, jr_node **out);

/* Feeds one frame received from server `from`. The frame is fully validated before any of it
 * is applied: a malformed, truncated, oversized, wrong-version or wrong-checksum frame returns
 * an error (JR_ECORRUPT, JR_EVERSION, JR_EMSGSIZE), as does a frame from a server that is not a
 * peer or that claims another sender (JR_EAUTH) or one addressed to another server (JR_EINVAL);
 * a rejected frame changes no state (only frames_rejected counts it). Messages of a valid frame
 * for groups not open here are dropped and counted. What the frame caused is not flushed here:
 * the call asks for a tick at once (host->arm with the current time; jr_node_deadline() returns
 * it), and that jr_node_tick() flushes it together with every frame fed before it (one WAL
 * write + sync, one frame per peer) and runs the callbacks that completed. So a host that feeds
 * every frame of a loop turn and then ticks once makes one sync for all of them; answers that
 * vouch for written state (append acknowledgements, votes) leave only after it. A WAL failure
 * is therefore reported by that tick. The frame is borrowed for the call. JR_ECLOSED after
 * jr_node_close() was requested. */
JR_API int jr_node_recv(jr_node *node, const char *from, const void *frame, size_t len);

/* Runs timers due at now(), then flushes pending work (one WAL write + sync, one frame per peer)
 * and runs the callbacks that completed. Calling it early is harmless. Returns 0, or the
 * flush's error: JR_ENOMEM (retried at the next tick), JR_EIO (the WAL failed: nothing more is
 * acknowledged, the groups this node leads step down; reopen the node). */
JR_API int jr_node_tick(jr_node *node);

/* Runs the WAL sync a node handed its host (jr_host.sync_start): the vfs's sync of the WAL's
 * file, nothing else. Callable from any thread, once per job. Returns its result (0 or a
 * negative JR_E*), which the host passes to jr_node_synced(). */
JR_API int jr_sync_job_run(jr_sync_job *job);
/* On the node's thread: the job the node last handed to jr_host.sync_start ran with result rc.
 * With rc == 0, what the job covers is durable: the node reports it to its groups, lets the
 * acknowledgements and votes it vouches for leave, applies what is committed, then writes what
 * was staged meanwhile and hands out the next job. A non-zero rc fails the WAL (as a failed
 * sync inside jr_node_tick does: the node's leaders step down, every later flush fails) and is
 * returned. JR_EINVAL if job is not the node's job in flight. Callbacks run inside it, as
 * inside jr_node_tick(). */
JR_API int jr_node_synced(jr_node *node, jr_sync_job *job, int rc);

/* The time (a now() value) at which the node next needs jr_node_tick(); UINT64_MAX if none. */
JR_API uint64_t jr_node_deadline(const jr_node *node);

/* Closes the node: what is pending is flushed (written and sent), then every pending callback
 * completes with JR_ECLOSED before it returns. Safe on NULL. Called from inside a callback, the
 * close happens when the outermost jr_node_recv()/jr_node_tick() returns (the node must not be
 * used after jr_node_close() either way). */
JR_API void jr_node_close(jr_node *node);

/* The node's server name (borrowed, valid until close). */
JR_API const char *jr_node_name(const jr_node *node);

/* A human-readable message for the node's last error (never NULL; "" if none). */
JR_API const char *jr_node_errmsg(const jr_node *node);

/* Counters for observability; fields are only ever appended. jr_node_stats_get writes up to
 * out->size (set by the caller), which then says how much. */
typedef struct jr_node_stats {
    size_t size; /* sizeof(jr_node_stats), set by the caller */
    uint64_t frames_sent;
    uint64_t frames_received;
    uint64_t frames_rejected; /* failed decoding or authentication */
    uint64_t bytes_sent;
    uint64_t bytes_received;
    uint64_t wal_syncs; /* file syncs of the WAL (flushes, vote records, interval syncs and a
                           finished segment's at rotation; directory syncs not counted) */
    uint64_t wal_bytes; /* record bytes written to the WAL */
    uint64_t groups;    /* open groups */
    uint64_t msgs_unknown_group; /* received messages for groups not open here (dropped) */
    uint64_t msgs_unroutable;    /* outgoing messages dropped: unknown peer, or too large */
    uint64_t send_failures;      /* host->send returned non-zero */
    /* received messages of a type, and requests of a kind, this version does not know (sent
     * by a later release during a rolling upgrade): each is skipped on its own (a request is
     * answered JR_ENOTSUP) and the rest of its frame is applied */
    uint64_t msgs_unknown_type;
} jr_node_stats;

JR_API int jr_node_stats_get(const jr_node *node, jr_node_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_NODE_H */
