/*
 * jetraft.h — the public C ABI of libjetraft.
 *
 * libjetraft is an embeddable replicated-log library: durable streams and raw Raft groups, each
 * replicated by its own Raft group, many groups per node, all driven from the host's own event
 * loop. The host owns every thread, socket and timer; the library never creates a thread, never
 * opens a socket, never sleeps, and keeps no global mutable state.
 *
 * ABI conventions
 *  - Every public symbol starts with `jr_`; every macro with `JR_`.
 *  - Handles are opaque. Config structs start with a `size` field that the caller sets to
 *    sizeof(struct) (the *_init() functions do it): fields are only ever appended, so an older
 *    caller keeps working against a newer library.
 *  - Plug-in tables (jr_host, jr_vfs, jr_allocator) carry a `version` field; fields are only ever
 *    appended, and the library reads only those that the version declares.
 *  - Functions return 0 or a negative JR_E* code (see jr_strerror(), jr_err_name()); a node keeps a
 *    human-readable message for its last error (jr_node_errmsg()).
 *  - Asynchronous results arrive through callbacks that run inside jr_node_recv() or
 *    jr_node_tick() on the node's thread, never synchronously inside the call that started them.
 *    Pointers passed to a callback are borrowed for the duration of the callback.
 *  - A node is driven by one thread at a time; distinct nodes are independent.
 */
#ifndef JETRAFT_H
#define JETRAFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define JR_API
#elif defined(__GNUC__) && __GNUC__ >= 4
#define JR_API __attribute__((visibility("default")))
#else
#define JR_API
#endif

/* ----------------------------------------------------------------------------------------------
 * Version
 */
#define JR_VERSION_MAJOR 0
#define JR_VERSION_MINOR 1
#define JR_VERSION_PATCH 0
#define JR_VERSION_NUMBER (JR_VERSION_MAJOR * 10000 + JR_VERSION_MINOR * 100 + JR_VERSION_PATCH)

/* Returns the library's version as "MAJOR.MINOR.PATCH"; never NULL. */
JR_API const char *jr_version(void);
/* Returns JR_VERSION_NUMBER of the library actually linked. */
JR_API int jr_version_number(void);

/* ----------------------------------------------------------------------------------------------
 * Errors. Values are stable: a code is never renumbered or reused. New codes are appended.
 */
#define JR_ERRNO_MAP(X)                                                                            \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(EIO, -3, "I/O error")                                                                        \
    X(ECORRUPT, -4, "data is corrupt")                                                             \
    X(ENOSPC, -5, "no space left on device")                                                       \
    X(EBUSY, -6, "cluster member change is in progress")                                           \
    X(ENOTLEADER, -7, "not the leader")                                                            \
    X(ENOLEADER, -8, "no leader")                                                                  \
    X(ENOQUORUM, -9, "no quorum")                                                                  \
    X(ELEADERLOST, -10, "leadership lost before the entry committed")                             \
    X(ETRANSFER, -11, "leadership transfer in progress")                                           \
    X(ETIMEDOUT, -12, "timed out")                                                                 \
    X(ECANCELED, -13, "operation canceled")                                                        \
    X(ECLOSED, -14, "node or group is closing")                                                    \
    X(ENOTFOUND, -15, "not found")                                                                 \
    X(EEXIST, -16, "already exists")                                                               \
    X(EVERSION, -17, "unsupported format version")                                                 \
    X(EAUTH, -18, "authentication failed")                                                         \
    X(EMSGSIZE, -19, "message too large")                                                          \
    X(EMISUSE, -20, "API misuse")                                                                  \
    X(ENOTSUP, -21, "not supported")                                                               \
    X(EDAMAGED, -22, "group is damaged and awaiting repair from its peers")                        \
    X(ENORESOURCES, -23, "insufficient resources")                                                 \
    X(ENOSTREAM, -24, "no stream matches subject")                                                 \
    X(ENOTVOTER, -25, "peer is not a caught-up voter")                                             \
    X(ECOMPACTED, -26, "entry compacted away")                                                     \
    X(ERANGE, -27, "value out of range")                                                           \
    X(EWRONGSTREAM, -28, "expected stream does not match")                                         \
    X(EWRONGLASTSEQ, -29, "wrong last sequence")                                                   \
    X(EWRONGLASTSUBJSEQ, -30, "wrong last sequence for subject")                                   \
    X(EWRONGLASTMSGID, -31, "wrong last msg id")                                                   \
    X(ELIMIT, -32, "stream limit reached and discard policy is new")                             \
    X(ESEALED, -33, "stream is sealed")                                                            \
    X(EDENIED, -34, "operation denied by stream configuration")

enum jr_errno {
#define JR__ERR_ENUM(name, value, text) JR_##name = value,
    JR_ERRNO_MAP(JR__ERR_ENUM)
#undef JR__ERR_ENUM
};

/* Returns a static, human-readable description of `err` ("unknown error" for unknown codes). */
JR_API const char *jr_strerror(int err);
/* Returns the code's name without the JR_ prefix, e.g. "EBUSY"; "UNKNOWN" for unknown codes. */
JR_API const char *jr_err_name(int err);

/* ----------------------------------------------------------------------------------------------
 * Allocator hooks (optional). All three functions must be given. realloc(ptr, 0) is never called;
 * free(NULL) may be. A NULL jr_allocator pointer anywhere means the C library's malloc family.
 */
#define JR_ALLOCATOR_VERSION 1
typedef struct jr_allocator {
    int version; /* JR_ALLOCATOR_VERSION */
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*realloc)(void *ctx, void *ptr, size_t size);
    void (*free)(void *ctx, void *ptr);
} jr_allocator;

/* ----------------------------------------------------------------------------------------------
 * Virtual file system. The only way the library touches files. jr_vfs_posix() gives the POSIX
 * implementation; include/jetraft/sim.h gives a simulated one. A host may supply its own.
 *
 * All functions return 0 or a negative JR_E* code (JR_EIO, JR_ENOSPC, JR_ENOTFOUND, ...).
 * Paths are '/'-separated strings, as given by the library (prefixed with wal_dir/store_dir).
 */
typedef struct jr_file jr_file; /* defined by each vfs implementation */

#define JR_VFS_VERSION 1
enum jr_open_flags {
    JR_O_READ = 0,     /* open an existing file for reading and writing */
    JR_O_CREATE = 1,   /* create if missing */
    JR_O_EXCL = 2,     /* with JR_O_CREATE: fail with JR_EEXIST if it exists */
    JR_O_TRUNCATE = 4, /* truncate to zero length on open */
};

typedef struct jr_vfs {
    int version; /* JR_VFS_VERSION */
    void *ctx;
    int (*open)(void *ctx, const char *path, int flags, jr_file **out);
    int (*close)(void *ctx, jr_file *f);
    /* Reads up to len bytes at off; *nread < len only at end of file. */
    int (*pread)(void *ctx, jr_file *f, void *buf, size_t len, uint64_t off, size_t *nread);
    /* Writes all of buf at off (extending the file as needed). Durable only after sync. */
    int (*pwrite)(void *ctx, jr_file *f, const void *buf, size_t len, uint64_t off);
    /* Makes every completed write to f durable (fdatasync). */
    int (*sync)(void *ctx, jr_file *f);
    int (*size)(void *ctx, jr_file *f, uint64_t *out);
    int (*truncate)(void *ctx, jr_file *f, uint64_t size);
    /* Atomically replaces `to` with `from`; durable once it returns (directory synced). */
    int (*rename)(void *ctx, const char *from, const char *to);
    /* Removes a file; durable once it returns. JR_ENOTFOUND if missing. */
    int (*remove)(void *ctx, const char *path);
    /* Creates a directory and any missing parents; 0 if it already exists. */
    int (*mkdir)(void *ctx, const char *path);
    /* Calls cb once per entry of dir (not "." or ".."), in no defined order. A non-zero return
     * from cb stops the listing and is returned. */
    int (*list)(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg);
    /* Makes the creation, removal and renaming of entries in dir durable. */
    int (*sync_dir)(void *ctx, const char *dir);
} jr_vfs;

/* Returns the process-wide POSIX vfs (stateless, never freed). */
JR_API jr_vfs *jr_vfs_posix(void);

/* ----------------------------------------------------------------------------------------------
 * Host interface: how a node reaches the outside world. ARCHITECTURE §3.
 */
typedef struct jr_iovec {
    const void *base;
    size_t len;
} jr_iovec;

enum jr_log_level { JR_LOG_ERROR = 0, JR_LOG_WARN = 1, JR_LOG_INFO = 2, JR_LOG_DEBUG = 3 };

#define JR_HOST_VERSION 2
typedef struct jr_host {
    int version; /* JR_HOST_VERSION (1: the fields up to `log`; 2: `wall` too) */
    void *ctx;
    /* Delivers one frame (the concatenation of iov) to server `to`. May copy or queue it; must
     * not call back into the node. A non-zero return counts as a dropped frame (Raft retries). */
    int (*send)(void *ctx, const char *to, const jr_iovec *iov, int iovcnt);
    /* Monotonic time in nanoseconds. */
    uint64_t (*now)(void *ctx);
    /* Asks the host to call jr_node_tick() at or after `deadline` (a now() value; one at or
     * before now means "as soon as possible", UINT64_MAX means "no tick needed"). Replaces any
     * earlier request: the node needs one timer, whatever its number of groups. Called on the
     * node's thread at the end of a node or group API call, never re-entrantly. Optional: hosts
     * that poll use jr_node_deadline() instead. */
    void (*arm)(void *ctx, uint64_t deadline);
    /* Optional log sink; msg is borrowed for the call. */
    void (*log)(void *ctx, int level, const char *msg);
    /* Version 2. Optional: wall-clock time in nanoseconds since the Unix epoch (e.g.
     * CLOCK_REALTIME). Stream leaders stamp messages with it and the meta leader stamps a
     * stream's creation time; it may jump (forwards or backwards), and stream time follows it
     * without ever going backwards and without mass expiry (see "Stream time" below). Without
     * it (NULL, or a version-1 host) the node uses now() instead: timestamps then count from
     * the host's monotonic epoch, are consistent within a cluster only if every server's now()
     * shares that epoch, and say nothing about the calendar. */
    uint64_t (*wall)(void *ctx);
} jr_host;

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
    size_t size;               /* sizeof(jr_node_config) */
    const char *name;          /* server name, unique in the cluster; required */
    const char *cluster;       /* cluster name; default "jetraft" */
    const char *const *tags;   /* placement tags of this server, e.g. "az:1", "ssd" */
    size_t ntags;
    const char *const *peers;  /* every server of the cluster (this one included) */
    size_t npeers;
    const char *wal_dir;       /* directory of the node's shared Raft WAL; required */
    const char *store_dir;     /* directory of message stores; default wal_dir */
    jr_vfs *vfs;               /* NULL: jr_vfs_posix() */
    const jr_host *host;       /* required */
    const jr_allocator *alloc; /* NULL: malloc family */
    uint32_t election_timeout_ms; /* base election timeout; default 1000 */
    uint32_t heartbeat_ms;        /* leader heartbeat interval; default 100 */
    int sync_policy;              /* enum jr_sync_policy; default JR_SYNC_ALWAYS */
    uint32_t sync_interval_ms;    /* with JR_SYNC_INTERVAL; default 100 */
    uint64_t seed;                /* randomness for timeouts; 0: derived from name and now() */
    uint32_t max_frame_bytes;     /* largest frame sent or accepted; default 8 MiB */
    uint64_t wal_segment_bytes;   /* WAL segment size; default 64 MiB */
    const char *unique_tag;       /* tag prefix no two replicas may share, e.g. "az:"; NULL none */
    uint64_t max_store_bytes;     /* this server's capacity for placement; 0: unknown */
    uint32_t max_assets;          /* replicated assets this server accepts; 0: no limit */
    /* Streams ("Streams API" below). */
    int streams;                  /* 1: this server joins the meta group (every server of `peers`
                                     must set it too) and hosts stream replicas; default 0 */
    uint32_t request_timeout_ms;  /* bounded wait of a stream request (admin, info, a publish
                                     without its own timeout) for a leader and a quorum; 0: 5000 */
} jr_node_config;

/* Fills cfg with defaults (and cfg->size). The caller then sets name, peers, wal_dir, host. */
JR_API void jr_node_config_init(jr_node_config *cfg);

/* Opens a node: validates cfg, recovers its WAL (and snapshot files) into per-group state that
 * jr_group_open() loads when the host reopens each group. On success *out is a node that must be
 * closed with jr_node_close(). On failure *out is NULL and nothing is left open. Errors:
 * JR_EINVAL (missing name, wal_dir or host, heartbeat_ms >= election_timeout_ms,
 * max_frame_bytes below 64 KiB, two peer names with the same id), JR_ENOMEM, and the vfs's or
 * the WAL's errors (JR_EIO, JR_ECORRUPT, ...). */
JR_API int jr_node_open(const jr_node_config *cfg, jr_node **out);

/* Feeds one frame received from server `from`. The frame is fully validated before any of it
 * is applied: a malformed, truncated, oversized, wrong-version or wrong-checksum frame returns
 * an error (JR_ECORRUPT, JR_EVERSION, JR_EMSGSIZE), as does a frame from a server that is not a
 * peer or that claims another sender (JR_EAUTH) or one addressed to another server (JR_EINVAL);
 * a rejected frame changes no state (only frames_rejected counts it). Messages of a valid frame
 * for groups not open here are dropped and counted. Then the call flushes what the frame caused
 * (one WAL write + sync, one frame per peer) and runs the callbacks that completed. The frame is
 * borrowed for the call. JR_ECLOSED after jr_node_close() was requested. */
JR_API int jr_node_recv(jr_node *node, const char *from, const void *frame, size_t len);

/* Runs timers due at now(), then flushes pending work (one WAL write + sync, one frame per peer)
 * and runs the callbacks that completed. Calling it early is harmless. Returns 0, or the
 * flush's error: JR_ENOMEM (retried at the next tick), JR_EIO (the WAL failed: nothing more is
 * acknowledged, the groups this node leads step down; reopen the node). */
JR_API int jr_node_tick(jr_node *node);

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

/* Counters for observability; fields are only ever appended. */
typedef struct jr_node_stats {
    size_t size;                 /* sizeof(jr_node_stats), set by the caller */
    uint64_t frames_sent;
    uint64_t frames_received;
    uint64_t frames_rejected;    /* failed decoding or authentication */
    uint64_t bytes_sent;
    uint64_t bytes_received;
    uint64_t wal_syncs;
    uint64_t wal_bytes;
    uint64_t groups;             /* open groups */
    uint64_t msgs_unknown_group; /* received messages for groups not open here (dropped) */
    uint64_t msgs_unroutable;    /* outgoing messages dropped: unknown peer, or too large */
    uint64_t send_failures;      /* host->send returned non-zero */
} jr_node_stats;

JR_API int jr_node_stats_get(const jr_node *node, jr_node_stats *out);

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
    uint64_t term;
    uint64_t commit_term;
    uint64_t commit_index;
} jr_group_floor;

typedef struct jr_group_config {
    size_t size;                /* sizeof(jr_group_config) */
    uint64_t id;                /* unique in the cluster, 1 .. JR_GROUP_ID_HOST_MAX */
    const char *const *voters;  /* initial voting members (server names) */
    size_t nvoters;
    const jr_fsm *fsm;          /* required; copied */
    uint64_t snapshot_entries;  /* take a snapshot after this many applied entries; default 8192 */
    /* Joining only (this server not among voters). A server added back after it was removed —
     * its replica deleted, or lost — must not help elect a leader that lacks entries it
     * acknowledged while it was a member. Give it what jr_group_floor_get() returned on the
     * leader after the removal completed (the remove callback reported 0): while its log is
     * older than that committed entry, it judges candidates as if it held it, and it starts at
     * that term, so neither a stale candidate nor a stale leader can use it. Zeros: no floor
     * (right for a server that never was a member). Ignored if this server is among voters;
     * a replica that recovered state of its own is judged by it only while that state is older.
     * JR_EINVAL for a commit_index without its commit_term, or a term older than it. */
    jr_group_floor join;
} jr_group_config;

JR_API void jr_group_config_init(jr_group_config *cfg);

/* Creates (or, after a restart, reopens) group cfg->id on this node.
 *  - State this node recovered for the group (its log, hard state, newest snapshot, which is
 *    restored into the fsm first) is loaded; the voter list is then ignored: the log knows the
 *    membership.
 *  - Otherwise, if this server is among cfg->voters, the group is created: every initial voter
 *    must be given the same voter list.
 *  - Otherwise this server joins: its replica starts empty and waits for the leader to add it
 *    (jr_group_add_observer() on the leader) and send it the log or a snapshot.
 * A group closed earlier in this node's life is revived with the new fsm (restored from the
 * newest snapshot, then the log is applied again). If the group's data was reported damaged by
 * recovery, it opens damaged (status damaged = 1): it follows the leader but never votes or
 * campaigns, and proposals fail with JR_EDAMAGED; repair is removing the server from the group
 * and adding it again. Errors: JR_EINVAL (id 0 or above JR_GROUP_ID_HOST_MAX, no fsm or no
 * apply, snapshot without restore, more than 64 voters or one listed twice), JR_ENOTFOUND (a
 * voter is not a peer of this node), JR_EEXIST (already open here), JR_ENOMEM. */
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
JR_API int jr_group_propose(jr_group *g, const void *data, size_t len, jr_propose_cb cb,
                            void *arg);

/* The current leader's name as this replica knows it (borrowed), or NULL if unknown. */
JR_API const char *jr_group_leader(const jr_group *g);

/* Transfers leadership to `to` (a caught-up voter), or to the most caught-up voter if NULL
 * (dissertation §3.10); proposals fail with JR_ETRANSFER meanwhile. Caught up means what
 * jr_group_peer reports on this leader as `current` (heard from within an election timeout,
 * holding everything committed). Returns JR_ENOTLEADER, JR_ENOTVOTER (`to` is not a caught-up
 * voter, or NULL and there is none), JR_ETRANSFER (one is under way), JR_ENOTFOUND (not a peer). The callback gets 0
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

enum jr_role { JR_FOLLOWER = 0, JR_CANDIDATE = 1, JR_LEADER = 2, JR_OBSERVER = 3 };

typedef struct jr_group_status {
    size_t size; /* sizeof(jr_group_status), set by the caller */
    uint64_t id;
    int role;    /* enum jr_role, of this replica */
    uint64_t term;
    uint64_t commit_index;
    uint64_t applied_index;
    uint64_t last_index;
    uint64_t snapshot_index;
    size_t npeers; /* members, this one included; jr_group_peer() reads each */
    int damaged;   /* 1 if this replica lost data and waits for repair */
} jr_group_status;

typedef struct jr_peer_status {
    size_t size; /* sizeof(jr_peer_status), set by the caller */
    const char *name;   /* borrowed */
    int voter;          /* 0: observer */
    int current;        /* caught up and heard from within an election timeout (leader's view) */
    uint64_t match_index;
    uint64_t lag;       /* entries behind the leader's last index */
    uint64_t last_seen_ns; /* now() minus last contact; UINT64_MAX if never */
} jr_peer_status;

JR_API int jr_group_status_get(const jr_group *g, jr_group_status *out);
/* On the leader: the floor a server joining later starts from (jr_group_config.join): the
 * current term and the commit index with its entry's term. JR_ENOTLEADER on any other replica
 * (or before the leader knows the term of its commit index); JR_EINVAL for NULL. */
JR_API int jr_group_floor_get(const jr_group *g, jr_group_floor *out);
/* Peer i (0 <= i < npeers) as this replica sees it; progress fields only on the leader. */
JR_API int jr_group_peer(const jr_group *g, size_t i, jr_peer_status *out);

/* ----------------------------------------------------------------------------------------------
 * Streams (JetStream semantics; see shared seeds). Config is validated on any node and by the
 * meta leader; an invalid field is JR_EINVAL and the node's errmsg names the field.
 */
enum jr_retention { JR_RETAIN_LIMITS = 0, JR_RETAIN_INTEREST = 1, JR_RETAIN_WORKQUEUE = 2 };
enum jr_discard { JR_DISCARD_OLD = 0, JR_DISCARD_NEW = 1 };
enum jr_storage { JR_STORAGE_FILE = 0, JR_STORAGE_MEMORY = 1 };
enum jr_compression { JR_COMPRESS_NONE = 0, JR_COMPRESS_LZ4 = 1 };

typedef struct jr_placement {
    const char *cluster;     /* NULL: the cluster of the node the request lands on */
    const char *const *tags; /* every tag required; "!tag" excludes servers carrying tag */
    size_t ntags;
} jr_placement;

typedef struct jr_kv {
    const char *key;
    const char *value;
} jr_kv;

#define JR_STREAM_NAME_MAX 255
#define JR_MAX_REPLICAS 5

typedef struct jr_stream_config {
    size_t size;                   /* sizeof(jr_stream_config) */
    const char *name;              /* no whitespace, '.', '*', '>', '/', '\\'; 1..255 bytes */
    const char *description;       /* optional */
    const char *const *subjects;   /* default: { name } */
    size_t nsubjects;
    int retention;                 /* enum jr_retention; default JR_RETAIN_LIMITS */
    int64_t max_consumers;         /* -1 unlimited (default) */
    int64_t max_msgs;              /* -1 unlimited (default) */
    int64_t max_bytes;             /* -1 unlimited (default) */
    uint64_t max_age_ns;           /* 0 unlimited (default) */
    int64_t max_msgs_per_subject;  /* -1 unlimited (default) */
    int32_t max_msg_size;          /* -1 unlimited (default) */
    int discard;                   /* enum jr_discard; default JR_DISCARD_OLD */
    int storage;                   /* enum jr_storage; default JR_STORAGE_FILE */
    int replicas;                  /* 1..5; default 1 */
    uint64_t duplicate_window_ns;  /* default 2 minutes; 0: the default */
    jr_placement placement;
    int sealed;                    /* no more writes or deletes; only by update */
    int deny_delete;
    int deny_purge;
    int allow_rollup;
    int compression;               /* enum jr_compression; default JR_COMPRESS_NONE */
    const jr_kv *metadata;
    size_t nmetadata;
} jr_stream_config;

/* Fills cfg with JetStream's defaults (and cfg->size); the caller then sets name, subjects... */
JR_API void jr_stream_config_init(jr_stream_config *cfg);

typedef struct jr_stream_state {
    uint64_t msgs;
    uint64_t bytes;
    uint64_t first_seq;
    uint64_t first_ts; /* ns since the Unix epoch */
    uint64_t last_seq;
    uint64_t last_ts;
    uint64_t num_subjects;
    uint64_t num_deleted;
    uint64_t consumers;
} jr_stream_state;

typedef struct jr_peer_info {
    const char *name;   /* borrowed */
    int current;        /* caught up and heard from within an election timeout */
    int offline;        /* not heard from recently */
    int observer;       /* non-voting member still catching up */
    int pending;        /* in the assignment, not (yet) a member of the Raft group */
    uint64_t active_ns; /* since last contact (leader's view); UINT64_MAX: never */
    uint64_t lag;       /* operations behind the leader */
} jr_peer_info;

typedef struct jr_cluster_info {
    const char *name;             /* cluster */
    const char *group;            /* the stream's Raft group name, e.g. "S-R3F-xK2p9aLm" */
    const char *leader;           /* NULL while there is no leader */
    const jr_peer_info *replicas; /* every member but the leader, in display order */
    size_t nreplicas;
} jr_cluster_info;

typedef struct jr_stream_info {
    size_t size;             /* sizeof(jr_stream_info) as built into the library */
    jr_stream_config config; /* normal form: defaults filled in */
    uint64_t created_ns;     /* when the meta leader created the stream: its host's wall clock
                                (ns since the Unix epoch; see jr_host.wall); 0 if unknown */
    jr_stream_state state;
    jr_cluster_info cluster;
} jr_stream_info;

/* Renders the "Cluster Information" block of info as the nats CLI prints it into buf (always
 * NUL-terminated when len > 0); returns the full length it needs, like snprintf, or JR_EINVAL. */
JR_API int jr_stream_info_format(const jr_stream_info *info, char *buf, size_t len);

/* ----------------------------------------------------------------------------------------------
 * Streams API (issue 4). Available on nodes opened with jr_node_config.streams = 1: every such
 * server belongs to the cluster's meta group, which decides where each stream lives; each stream
 * is replicated by its own Raft group on `replicas` servers. Every function below may be called
 * on any server of the cluster — a request is forwarded to the meta leader (stream add, update,
 * delete) or to the stream's leader (publish, info, purge, messages, stepdown) as needed.
 *
 * Contract shared by every request function:
 *  - It returns 0 when the request was accepted: its callback then runs exactly once, later,
 *    inside jr_node_recv() or jr_node_tick() on this node's thread — never inside the call that
 *    started it — or inside jr_node_close() with JR_ECLOSED. Otherwise it returns a negative code
 *    and the callback never runs: JR_EINVAL (a NULL node, name or callback), JR_ENOTSUP (the node
 *    does not run streams), JR_ECLOSED (the node is closing), JR_ENOMEM.
 *  - Every other outcome arrives through the callback: a status (0 or a JR_E* code) and, where
 *    the callback has one, a human-readable message (borrowed for the call; "" on success) that
 *    names the offending field ("max_age_ns: must be 0 or at least 100ms"), the placement reasons
 *    per server ("no suitable peers for placement ..."), or the cause of a failure ("no meta
 *    leader", "stream 'ORDERS' has no leader").
 *  - Waits are bounded: without a leader or a quorum a request fails after request_timeout_ms of
 *    the node config (a publish: jr_pub_opts.timeout_ms) with JR_ENOLEADER (no meta leader) or
 *    JR_ENOQUORUM (nothing took effect). A write that reached a stream leader (publish, purge,
 *    message delete) waits for that leader's verdict while the leader is alive (silent for two
 *    election timeouts, it is lost); if the leader is lost, or loses its leadership, before
 *    the write committed: a publish with a msg_id is sent again to the next leader within its
 *    timeout (the duplicate window makes that safe: if the first attempt was stored, the ack
 *    has its seq and duplicate = 1), anything else ends with JR_ELEADERLOST, its message naming
 *    the leader and saying the write may or may not have taken effect. JR_ETIMEDOUT means a
 *    leader that stayed alive did not answer in time: the outcome is unknown too.
 *  - Structures passed to a callback are borrowed for its duration; copy what you keep.
 *
 * Stream time. A stream's leader stamps every message (jr_stored_msg.ts, first_ts/last_ts) and
 * every other op it logs; max_age and duplicate_window measure that stream time, identically
 * on every replica. It follows the leader's wall clock (jr_host.wall) with two guards: it never
 * goes backwards, and a wall clock that jumps by more than a second from what the leader's
 * monotonic now() says has passed is not followed at once — stream time then runs 1/16 faster
 * (clock ahead) or slower (behind) than real time until it meets the wall clock again. So a
 * clock jump forwards expires messages at most 1/16 early instead of all at once, and a jump
 * backwards keeps timestamps in order and expiry going. A server taking over leadership (or
 * just restarted) starts from its own wall clock, never below the stream's time: keep the
 * servers' clocks synchronized. Without jr_host.wall, stream time is the hosts' now().
 */

/* Completion of stream add, update, delete, message delete and leader stepdown. */
typedef void (*jr_stream_cb)(void *arg, int status, const char *msg);

/* Creates a stream as cfg says (copied). The meta leader validates the config (JR_EINVAL
 * naming the field), refuses subjects overlapping another stream's (JR_EINVAL naming it), places
 * the replicas (JR_ENORESOURCES with a reason per server, and nothing is created) and commits the
 * assignment; status 0 means the stream exists once, on the servers chosen. Adding a stream that
 * exists with an identical config succeeds (idempotent); with another config it is JR_EEXIST. If
 * the meta leader fails meanwhile the request is re-sent to its successor, so the stream is
 * created at most once and the status says whether it was; only after JR_ENOQUORUM for a request
 * that had been proposed ("may still take effect") is the outcome unknown. */
JR_API int jr_stream_add(jr_node *node, const jr_stream_config *cfg, jr_stream_cb cb, void *arg);
/* Changes the config of the stream cfg->name to cfg (the fields JetStream allows to change;
 * others are JR_EINVAL naming the field). JR_ENOTFOUND for an unknown stream.
 * A different `replicas` or `placement` changes the stream's peer set (not both in one update:
 * JR_EINVAL naming placement, as JetStream):
 *  - growing, the meta leader keeps the current peers and places the others by the usual rules
 *    (JR_ENORESOURCES with a reason per server, and nothing changes, if too few qualify); each
 *    new replica joins as a non-voting observer, catches up (from the log, or a snapshot and
 *    the missing messages) and becomes a voter only then, so a grow never lowers the number of
 *    failures the stream tolerates;
 *  - shrinking, the stream's leader stays (as far as the meta leader knows it), then online
 *    peers, then the most caught up; the others are removed one at a time, a removed leader
 *    handing its leadership to a remaining caught-up peer first; a removed server deletes its
 *    replica only once the stream's group no longer counts it;
 *  - moving (new placement tags or cluster), the peers that fit the new placement stay and the
 *    others are replaced (JR_ENORESOURCES, nothing changed, if too few servers fit): the new
 *    replicas join and catch up as in a grow, and only then do the old ones leave as in a
 *    shrink.
 * Status 0 means the new peer set is committed; the replicas then converge to it in the
 * background (stream info shows a joining replica as observer, or pending, and not current),
 * also across failovers of the stream's or the meta leader. Publishes go on meanwhile (a
 * leader handing over refuses them briefly; requests go to the next leader). Another change
 * of the peer set before that convergence is JR_EBUSY ("cluster member change is in
 * progress"); other config changes are accepted meanwhile. */
JR_API int jr_stream_update(jr_node *node, const jr_stream_config *cfg, jr_stream_cb cb,
                            void *arg);
/* Deletes a stream and its messages on every replica. JR_ENOTFOUND if unknown. */
JR_API int jr_stream_delete(jr_node *node, const char *name, jr_stream_cb cb, void *arg);

typedef struct jr_purge_opts {
    size_t size;         /* sizeof(jr_purge_opts) */
    const char *subject; /* NULL: every subject; else a subject or pattern to purge */
    uint64_t keep;       /* non-zero: keep the newest `keep` matching messages */
    uint64_t seq;        /* non-zero: purge matching messages below seq (not with keep) */
} jr_purge_opts;
JR_API void jr_purge_opts_init(jr_purge_opts *opts);

/* Completion of a purge: `purged` messages were removed. */
typedef void (*jr_purge_cb)(void *arg, int status, const char *msg, uint64_t purged);
/* Purges a stream (opts NULL: everything). JR_EDENIED (deny_purge), JR_ESEALED, JR_EINVAL. */
JR_API int jr_stream_purge(jr_node *node, const char *name, const jr_purge_opts *opts,
                           jr_purge_cb cb, void *arg);
/* Deletes message seq (erase = 1 also overwrites its bytes). JR_ENOTFOUND if it is not live,
 * JR_EDENIED (deny_delete), JR_ESEALED. */
JR_API int jr_stream_msg_delete(jr_node *node, const char *name, uint64_t seq, int erase,
                                jr_stream_cb cb, void *arg);

/* A stored message (everything borrowed for the callback). */
typedef struct jr_stored_msg {
    const char *stream;
    uint64_t seq;
    uint64_t ts;         /* stream time when it was stored (ns since the Unix epoch with a
                            host wall clock; see "Stream time") */
    const char *subject; /* NUL-terminated */
    const void *hdr;     /* NATS header block, or NULL */
    size_t hdr_len;
    const void *data;
    size_t len;
} jr_stored_msg;
typedef void (*jr_msg_cb)(void *arg, int status, const char *msg, const jr_stored_msg *m);
/* Reads message seq at the stream leader. JR_ENOTFOUND if it is not live. */
JR_API int jr_stream_msg_get(jr_node *node, const char *name, uint64_t seq, jr_msg_cb cb,
                             void *arg);
/* Reads the newest message whose subject matches `subject` (a subject or pattern) at the stream
 * leader. JR_ENOTFOUND if none. */
JR_API int jr_stream_get_last(jr_node *node, const char *name, const char *subject, jr_msg_cb cb,
                              void *arg);
/* Moves the stream's leadership to server `peer` (a caught-up voter of the stream), or to the
 * best one if peer is NULL. JR_ENOTVOTER, JR_ETRANSFER, JR_ETIMEDOUT. */
JR_API int jr_stream_stepdown(jr_node *node, const char *name, const char *peer, jr_stream_cb cb,
                              void *arg);

/* Stream info, computed on the stream leader: config (normal form), state and the cluster
 * block (leader; every other replica: current, offline, active, lag, observer, pending).
 * While the replica count changes (jr_stream_update), the cluster block lists the members of
 * the stream's group as its leader sees them — a joining replica as an observer that is not
 * yet current, a peer of the new assignment the group has not added yet as pending, a removed
 * one until its removal is done — and config.replicas is the new count.
 * (Named _get: jr_stream_info is the struct.) */
typedef void (*jr_stream_info_cb)(void *arg, int status, const char *msg,
                                  const jr_stream_info *info);
JR_API int jr_stream_info_get(jr_node *node, const char *name, jr_stream_info_cb cb, void *arg);

/* Publish options (JetStream's Nats-* headers in the header block count too; a field set here
 * overrides the header). */
#define JR_SEQ_NONE UINT64_MAX
typedef struct jr_pub_opts {
    size_t size;                       /* sizeof(jr_pub_opts) */
    const char *msg_id;                /* deduplication id within the duplicate window; NULL none */
    const char *expected_stream;       /* JR_EWRONGSTREAM unless the subject's stream has this name */
    uint64_t expected_last_seq;        /* JR_EWRONGLASTSEQ unless the stream's last seq is this;
                                          JR_SEQ_NONE: no expectation (0 = an empty stream) */
    uint64_t expected_last_subject_seq;/* same for the subject's last seq; JR_SEQ_NONE: none */
    const char *expected_last_msg_id;  /* JR_EWRONGLASTMSGID unless the last msg id is this */
    uint32_t timeout_ms;               /* bounded wait; 0: the node's request_timeout_ms */
} jr_pub_opts;
JR_API void jr_pub_opts_init(jr_pub_opts *opts);

/* The acknowledgement of a publish. */
typedef struct jr_pub_ack {
    const char *stream; /* the stream that captured the subject ("" if none) */
    uint64_t seq;       /* the message's seq (a duplicate: the original's); with
                           JR_EWRONGLASTSEQ / JR_EWRONGLASTSUBJSEQ the actual last seq */
    int duplicate;      /* 1 if msg_id was seen within the duplicate window: nothing stored */
    const char *msg;    /* "" on success, else what happened (e.g. which leader was lost and
                           whether the message may be stored); borrowed for the callback */
} jr_pub_ack;
typedef void (*jr_publish_cb)(void *arg, int status, const jr_pub_ack *ack);

/* Publishes a message (subject, header block and data are copied) to the stream whose subjects
 * capture `subject`. The callback gets status 0 only once the message is committed — durable on
 * a quorum of the stream's replicas under the sync policy — and applied; never before. Errors:
 * JR_ENOSTREAM (no stream captures the subject), JR_EINVAL (subject not a literal subject,
 * malformed header block), JR_EMSGSIZE (over the stream's max_msg_size or the largest entry),
 * the expectation errors, JR_ELIMIT (discard new), JR_ESEALED, JR_ENOQUORUM (no leader or no
 * quorum within the timeout: nothing was acknowledged), JR_ELEADERLOST (the leader was lost or
 * lost its leadership before the entry committed, and the publish had no msg_id or its timeout
 * passed: it may still be stored; ack->msg says which leader), JR_ETIMEDOUT. With a msg_id
 * (option or Nats-Msg-Id header) a publish survives the loss of its leader (see above). */
JR_API int jr_publish(jr_node *node, const char *subject, const void *hdr, size_t hdr_len,
                      const void *data, size_t len, const jr_pub_opts *opts, jr_publish_cb cb,
                      void *arg);

/* One server as the meta leader sees it. */
typedef struct jr_server_info {
    const char *name;
    const char *cluster;
    const char *const *tags;
    size_t ntags;
    int leader;         /* the meta leader */
    int current;        /* holds the meta log and was heard from within an election timeout */
    int offline;        /* not heard from recently */
    uint64_t active_ns; /* since last contact; UINT64_MAX: never */
    uint64_t lag;       /* meta log entries behind the leader */
    uint32_t assets;    /* stream replicas placed on it */
} jr_server_info;

typedef struct jr_meta_info {
    size_t size;            /* sizeof(jr_meta_info) as built into the library */
    const char *cluster;    /* this node's cluster */
    const char *leader;     /* the meta leader; NULL if none */
    const jr_server_info *servers; /* every server known to the meta group, by name */
    size_t nservers;
    size_t nstreams;        /* streams in the meta state */
} jr_meta_info;
typedef void (*jr_meta_info_cb)(void *arg, int status, const char *msg, const jr_meta_info *info);
/* The cluster as the meta leader sees it (the JetStream "server report"): the meta leader and
 * every server with its tags, current/offline, lag and seen-ago. Without a meta leader the
 * callback gets JR_ENOLEADER and this node's own view (leader NULL, liveness unknown). (Named
 * jr_meta_info_get: jr_cluster_info is the stream info's cluster block.) */
JR_API int jr_meta_info_get(jr_node *node, jr_meta_info_cb cb, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_H */
