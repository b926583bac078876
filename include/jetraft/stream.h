/*
 * jetraft/stream.h — streams with JetStream semantics: config, info, publish and
 * acknowledgements, message reads, purge and delete, stepdown.
 *
 * Available on nodes opened with jr_node_config.streams = 1.
 * Part of the public ABI; users include <jetraft.h>, which includes every part.
 */
#ifndef JETRAFT_STREAM_H
#define JETRAFT_STREAM_H

#include "jetraft/cluster.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------------------------------
 * Streams (JetStream semantics; see shared seeds). Config is validated on any node and by the
 * meta leader; an invalid field is JR_EINVAL and the node's errmsg names the field.
 */
enum jr_retention { JR_RETAIN_LIMITS = 0, JR_RETAIN_INTEREST = 1, JR_RETAIN_WORKQUEUE = 2 };
enum jr_discard { JR_DISCARD_OLD = 0, JR_DISCARD_NEW = 1 };
enum jr_storage { JR_STORAGE_FILE = 0, JR_STORAGE_MEMORY = 1 };
enum jr_compression { JR_COMPRESS_NONE = 0, JR_COMPRESS_LZ4 = 1 };

typedef struct jr_placement {
    size_t size;             /* sizeof(jr_placement) (jr_placement_init sets it) */
    const char *cluster;     /* NULL: the cluster of the node the request lands on */
    const char *const *tags; /* every tag required; "!tag" excludes servers carrying tag */
    size_t ntags;
} jr_placement;

/* Fills p with no placement (and p->size); the caller then sets cluster and tags. */
JR_API void jr_placement_init_size(jr_placement *p, size_t size);
#define jr_placement_init(p) jr_placement_init_size((p), sizeof *(p))

/* A key and its value. Frozen: it never grows, so arrays of it are safe across versions. */
typedef struct jr_kv {
    const char *key;
    const char *value;
} jr_kv;

#define JR_STREAM_NAME_MAX 255
#define JR_MAX_REPLICAS 5

typedef struct jr_stream_config {
    size_t size;                 /* sizeof(jr_stream_config) */
    const char *name;            /* no whitespace, '.', '*', '>', '/', '\\'; 1..255 bytes */
    const char *description;     /* optional */
    const char *const *subjects; /* default: { name } */
    size_t nsubjects;
    int retention;                /* enum jr_retention; default JR_RETAIN_LIMITS */
    int64_t max_consumers;        /* -1 unlimited (default) */
    int64_t max_msgs;             /* -1 unlimited (default) */
    int64_t max_bytes;            /* -1 unlimited (default) */
    uint64_t max_age_ns;          /* 0 unlimited (default) */
    int64_t max_msgs_per_subject; /* -1 unlimited (default) */
    int32_t max_msg_size;         /* -1 unlimited (default) */
    int discard;                  /* enum jr_discard; default JR_DISCARD_OLD */
    int storage;                  /* enum jr_storage; default JR_STORAGE_FILE */
    int replicas;                 /* 1..5; default 1 */
    uint64_t duplicate_window_ns; /* default 2 minutes; 0: the default */
    /* NULL: no placement; else read up to placement->size, and copied */
    const jr_placement *placement;
    int sealed; /* no more writes or deletes; only by update */
    int deny_delete;
    int deny_purge;
    int allow_rollup;
    int compression; /* enum jr_compression; default JR_COMPRESS_NONE */
    const jr_kv *metadata;
    size_t nmetadata;
    int allow_direct; /* any current replica answers jr_stream_direct_get (default 0); may be
                         changed by update */
} jr_stream_config;

/* Fills cfg with JetStream's defaults (and cfg->size); the caller then sets name, subjects...
 * Writes only the first `size` bytes (the macro passes the caller's sizeof). */
JR_API void jr_stream_config_init_size(jr_stream_config *cfg, size_t size);
#define jr_stream_config_init(cfg) jr_stream_config_init_size((cfg), sizeof *(cfg))

typedef struct jr_stream_state {
    size_t size; /* sizeof(jr_stream_state) as built into the library */
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

/* Everything it points to is borrowed for the callback, like the struct itself. */
typedef struct jr_stream_info {
    size_t size;                    /* sizeof(jr_stream_info) as built into the library */
    const jr_stream_config *config; /* normal form: defaults filled in */
    uint64_t created_ns;            /* when the meta leader created the stream: its host's wall
                                       clock (ns since the Unix epoch; see jr_host.wall); 0 if
                                       unknown */
    const jr_stream_state *state;
    const jr_cluster_info *cluster;
} jr_stream_info;

/* Renders the "Cluster Information" block of info as the nats CLI prints it into buf (always
 * NUL-terminated when len > 0), a replica joining the group or on its way out marked
 * " (pending)", followed while a peer change runs (info->cluster->move) by a "Migration
 * Information" section: Status (meta, membership, snapshot, catchup, quorum, blocked,
 * unavailable), Description, Error (when set), Target Peers, Origin Peers (when recorded), then
 * an empty line. Returns the full length it needs, like snprintf, or JR_EINVAL. */
JR_API int jr_stream_info_format(const jr_stream_info *info, char *buf, size_t len);

/* ----------------------------------------------------------------------------------------------
 * Streams API. Available on nodes opened with jr_node_config.streams = 1: every such
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
 *    JR_ENOQUORUM (no leader took it: nothing took effect, a definite failure); a request a
 *    leader took (proposed) but could not commit in time ends with JR_ETIMEDOUT instead, its
 *    outcome unknown (it may still take effect). A write that reached a stream leader (publish,
 * purge, message delete) waits for that leader's verdict while the leader is alive (silent for two
 *    election timeouts, it is lost); if the leader is lost, or loses its leadership, before
 *    the write committed: a publish with a msg_id is sent again to the next leader within its
 *    timeout (the duplicate window makes that safe: if the first attempt was stored, the ack
 *    has its seq and duplicate = 0, as for the first attempt; duplicate = 1 means another
 *    publish stored the msg_id), anything else ends with JR_ELEADERLOST, its message naming
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
 * the replicas (JR_ENORESOURCES with a reason per server, and nothing is created; while servers
 * of the cluster have not registered with a new meta leader yet, placement waits for them until
 * the request's deadline, then JR_ENOQUORUM) and commits the assignment; status 0 means the stream
 * exists once, on the servers chosen. Adding a stream that exists with an identical config succeeds
 * (idempotent); with another config it is JR_EEXIST. If the meta leader fails meanwhile the request
 * is re-sent to its successor, so the stream is created at most once and the status says whether it
 * was; only after JR_ETIMEDOUT (the request may have been proposed: "may still take effect") is the
 * outcome unknown. */
JR_API int jr_stream_add(jr_node *node, const jr_stream_config *cfg, jr_stream_cb cb, void *arg);
/* Completion of jr_stream_create: created is 1 when this request created the stream, 0 when the
 * stream already existed with an identical config, and 0 with any status but 0. */
typedef void (*jr_stream_create_cb)(void *arg, int status, const char *msg, int created);
/* As jr_stream_add, and says whether this request created the stream (JetStream's did_create).
 * A request re-sent after a meta leader failed is judged by its first attempt's entry when that
 * one committed, so it reports created 1 for the stream it created; only a meta leader that no
 * longer remembers that attempt (it restored a snapshot over it) judges it anew: created 0. */
JR_API int jr_stream_create(jr_node *node, const jr_stream_config *cfg, jr_stream_create_cb cb,
                            void *arg);
/* Changes the config of the stream cfg->name to cfg (the fields JetStream allows to change;
 * others are JR_EINVAL naming the field). JR_ENOTFOUND for an unknown stream.
 * A different `replicas` or `placement` changes the stream's peer set (not both in one update:
 * JR_EINVAL naming placement, as JetStream):
 *  - growing, the meta leader keeps the current peers and places the others by the usual rules
 *    (JR_ENORESOURCES with a reason per server, and nothing changes, if too few qualify); each
 *    new replica joins as a non-voting observer, catches up (from the log, or a snapshot and
 *    the missing messages) and becomes a voter only then, so a grow never lowers the number of
 *    failures the stream tolerates;
 *  - shrinking, the stream's leader stays (as far as the meta leader knows it), then healthy
 *    peers (as the stream's leader sees them: a replica its group does not hear from while its
 *    server is up, such as one whose store is damaged, leaves first, then one whose server is
 *    offline), then the most caught up; the others are removed one at a time, a removed leader
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
JR_API int jr_stream_update(jr_node *node, const jr_stream_config *cfg, jr_stream_cb cb, void *arg);
/* Deletes a stream and its messages on every replica. JR_ENOTFOUND if unknown. A request sent
 * again to the meta leader after an attempt without an answer says whether this request deleted
 * the stream: status 0 when its earlier attempt did. */
JR_API int jr_stream_delete(jr_node *node, const char *name, jr_stream_cb cb, void *arg);

typedef struct jr_purge_opts {
    size_t size;         /* sizeof(jr_purge_opts) */
    const char *subject; /* NULL: every subject; else a subject or pattern to purge */
    uint64_t keep;       /* non-zero: keep the newest `keep` matching messages */
    uint64_t seq;        /* non-zero: purge matching messages below seq (not with keep) */
} jr_purge_opts;
JR_API void jr_purge_opts_init_size(jr_purge_opts *opts, size_t size);
#define jr_purge_opts_init(opts) jr_purge_opts_init_size((opts), sizeof *(opts))

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
    size_t size; /* sizeof(jr_stored_msg) as built into the library */
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
/* Reads message seq at the stream leader, linearizably: the leader serves it at a point of the
 * committed log of its term, so a read issued after a publish was acknowledged sees it.
 * JR_ENOTFOUND if it is not live; JR_EINVAL for seq 0 (sequences start at 1), through the
 * callback like every other outcome. */
JR_API int jr_stream_msg_get(jr_node *node, const char *name, uint64_t seq, jr_msg_cb cb,
                             void *arg);
/* Reads the newest message whose subject matches `subject` (a subject or pattern) at the stream
 * leader, linearizably as jr_stream_msg_get. JR_ENOTFOUND if none. */
JR_API int jr_stream_get_last(jr_node *node, const char *name, const char *subject, jr_msg_cb cb,
                              void *arg);
/* Reads the first message at or after seq (0 counts as 1) whose subject matches `subject` (a
 * subject or pattern) at the stream leader, linearizably as jr_stream_msg_get (JetStream's
 * STREAM.MSG.GET with next_by_subj, which needs no allow_direct). JR_ENOTFOUND if none. */
JR_API int jr_stream_get_next(jr_node *node, const char *name, uint64_t seq, const char *subject,
                              jr_msg_cb cb, void *arg);
/* Moves the stream's leadership to server `peer` (a caught-up voter of the stream), or to the
 * best one if peer is NULL. JR_ENOTFOUND (no such stream, or peer is no server this node knows:
 * the message says which), JR_ENOTVOTER, JR_ETRANSFER, JR_ETIMEDOUT. */
JR_API int jr_stream_stepdown(jr_node *node, const char *name, const char *peer, jr_stream_cb cb,
                              void *arg);

/* Moves the stream's replica off server `peer` without lowering the replica count (JetStream's
 * STREAM.PEER.EVACUATE). The meta leader picks a replacement by the stream's placement rules
 * (cluster and tags, unique_tag, capacity and asset limits, online; never a current peer nor
 * `peer` itself) and commits the new peer set; the replacement then joins as a non-voting
 * observer and catches up (from the log, or a snapshot and the missing messages) while `peer`
 * keeps serving, and only once it is a caught-up voter does `peer` leave the group (its
 * leadership handed to a caught-up peer that stays first). So an R1 stream keeps its data: its
 * group grows to two members and shrinks back. The stream's consumers on `peer` follow (their
 * replica moves to the replacement). Status 0 means the new peer set is committed; stream info
 * shows the move (jr_cluster_info.move) until it converges. Refusals, nothing moved:
 * JR_EPEERREMAP "peer remap failed" (no server qualifies), JR_ENOTMEMBER "peer not a member",
 * JR_ENOTFOUND (unknown stream), JR_EBUSY (a peer change of the stream is in progress:
 * "cluster member change is in progress"). NULL node, stream, peer or cb: JR_EINVAL returned. */
JR_API int jr_stream_evacuate(jr_node *node, const char *stream, const char *peer, jr_stream_cb cb,
                              void *arg);
/* Cancels the stream's peer change in progress, whatever started it (a grow, shrink, placement
 * move or evacuation), returning its peer set — and its replica count and placement — to where
 * the change started (the move's origin, jr_move_info.origin); the rest of the config stays.
 * The group converges back one membership change at a time, and the servers the cancelled
 * change added destroy their replica and store once the group no longer counts them. The
 * stream's consumers return to their own origin where it lies within the stream's, otherwise
 * follow the stream as on any peer change. JR_ENOCHANGE "stream reconfiguration not in
 * progress" when nothing is in flight (or a cancel already returns it), JR_ENOTFOUND. */
JR_API int jr_stream_cancel_move(jr_node *node, const char *stream, jr_stream_cb cb, void *arg);

/* Stream info, computed on the stream leader: config (normal form), state and the cluster
 * block (leader; every other replica: current, offline, active, lag, observer, pending).
 * While the peer set changes (jr_stream_update, jr_stream_evacuate, jr_stream_cancel_move),
 * the cluster block lists the members of the stream's group as its leader sees them — a
 * joining replica as an observer that is not yet current, a peer of the new assignment the
 * group has not added yet as pending, a removed one as pending until its removal is done —
 * config.replicas is the new count, and cluster->move says where the change goes, where it
 * started and what it waits on (jr_move_info; NULL once the group is stable).
 * (Named _get: jr_stream_info is the struct.) */
typedef void (*jr_stream_info_cb)(void *arg, int status, const char *msg,
                                  const jr_stream_info *info);
JR_API int jr_stream_info_get(jr_node *node, const char *name, jr_stream_info_cb cb, void *arg);

/* A stream's details beyond its info, read at its leader as linearizably as a message get
 * (JetStream's STREAM.INFO with subjects_filter and deleted_details). Each answers one page;
 * ask again from where it ended for the rest. */

/* A subject and how many messages the stream holds on it. Frozen: it never grows. */
typedef struct jr_subject_count {
    const char *subject;
    uint64_t msgs;
} jr_subject_count;
typedef struct jr_subjects_page {
    size_t size;                      /* sizeof(jr_subjects_page) as built into the library */
    uint64_t total;                   /* subjects with messages that the filter matches */
    uint64_t offset;                  /* how many of them sort before this page's first */
    const jr_subject_count *subjects; /* sorted bytewise by subject */
    size_t nsubjects; /* at most JR_SUBJECTS_LIMIT, fewer when the names are long: 0 only past
                         the end */
} jr_subjects_page;
#define JR_SUBJECTS_LIMIT 10000
typedef void (*jr_subjects_cb)(void *arg, int status, const char *msg,
                               const jr_subjects_page *page);
/* The subjects of stream `name` matching filter (a subject or pattern; NULL or "" for ">") with
 * their message counts, from `offset` in bytewise order. JR_EINVAL for a filter that is not a
 * valid pattern; otherwise as jr_stream_info_get. */
JR_API int jr_stream_subjects(jr_node *node, const char *name, const char *filter, uint64_t offset,
                              jr_subjects_cb cb, void *arg);

/* An inclusive range of sequences. Frozen. */
typedef struct jr_seq_range {
    uint64_t first, last;
} jr_seq_range;
typedef struct jr_deleted_page {
    size_t size;                /* sizeof(jr_deleted_page) as built into the library */
    uint64_t total;             /* deleted seqs between the first and last seq (num_deleted) */
    const jr_seq_range *ranges; /* sorted, disjoint; at most JR_DELETED_LIMIT */
    size_t nranges;             /* 0 only past the end */
} jr_deleted_page;
#define JR_DELETED_LIMIT 2000
typedef void (*jr_deleted_cb)(void *arg, int status, const char *msg, const jr_deleted_page *page);
/* The seqs of stream `name` deleted between its first and last message (JetStream's deleted
 * details), as ranges whose last seq is above `after` (0: from the start). */
JR_API int jr_stream_deleted(jr_node *node, const char *name, uint64_t after, jr_deleted_cb cb,
                             void *arg);

/* Reads a message at any current replica of a stream with allow_direct (JetStream's direct
 * get, $JS.API.DIRECT.GET): seq >= 1 and subject NULL, message seq; seq 0 and a subject (or
 * pattern), the newest message on it; both, the first message at or after seq on it. The
 * replica on this server answers when it holds a current one (it knows a live leader, applied
 * everything it knows committed, is not restoring or damaged); otherwise the stream's other
 * replicas are asked in turn. Not linearizable, as in JetStream: a follower may lag its leader
 * by what it has not applied yet, so a message acknowledged a moment ago may be JR_ENOTFOUND
 * here, and one deleted a moment ago may still be returned; use jr_stream_msg_get to read
 * your own writes. A stream without allow_direct is JR_EDENIED (JetStream answers no
 * responders), decided on this server's view of the config; JR_ENOTFOUND for no such message
 * (or stream), JR_EINVAL for neither seq nor subject, JR_ETIMEDOUT when no current replica
 * answered within request_timeout_ms. */
JR_API int jr_stream_direct_get(jr_node *node, const char *name, uint64_t seq, const char *subject,
                                jr_msg_cb cb, void *arg);

/* ----------------------------------------------------------------------------------------------
 * Listing streams and consumers (JetStream's STREAM.NAMES, STREAM.LIST, CONSUMER.NAMES,
 * CONSUMER.LIST). Names come from the meta leader's meta state (only the meta leader answers
 * these in JetStream), so a stream or consumer whose add or delete was acknowledged is
 * listed accordingly. Pages: names sorted bytewise; `offset` skips that many (past the end:
 * an empty page whose offset is total); at most JR_NAMES_LIMIT names or JR_LIST_LIMIT infos a
 * page. Without a meta leader within request_timeout_ms: JR_ENOLEADER.
 */
#define JR_NAMES_LIMIT 1024 /* names a page holds (JetStream's JSApiNamesLimit) */
#define JR_LIST_LIMIT 256   /* infos a page holds (JetStream's JSApiListLimit) */

/* A page of names (everything borrowed for the callback). */
typedef struct jr_names {
    size_t size;              /* sizeof(jr_names) as built into the library */
    uint64_t total;           /* names that match, over every page */
    uint64_t offset;          /* index of names[0] among them */
    uint64_t limit;           /* the most a page holds */
    const char *const *names; /* nnames of them (NULL when none) */
    size_t nnames;
} jr_names;
typedef void (*jr_names_cb)(void *arg, int status, const char *msg, const jr_names *page);

/* The names of the streams, or with a subject filter (a subject or pattern; NULL: every
 * stream) of those with a subject that overlaps it (some subject both match), as JetStream's
 * STREAM.NAMES {"subject"}. JR_EINVAL for an invalid filter. */
JR_API int jr_stream_names(jr_node *node, const char *subject, uint64_t offset, jr_names_cb cb,
                           void *arg);

/* A page of stream infos (everything borrowed for the callback). */
typedef struct jr_stream_page {
    size_t size;                          /* sizeof(jr_stream_page) as built into the library */
    uint64_t total, offset, limit;        /* as in jr_names, of the streams that match */
    const jr_stream_info *const *streams; /* in name order */
    size_t nstreams;
    const char *const *missing; /* streams of this page whose leader did not answer in time */
    size_t nmissing;
} jr_stream_page;
typedef void (*jr_stream_page_cb)(void *arg, int status, const char *msg,
                                  const jr_stream_page *page);

/* The full info of each stream of a page (filtered as jr_stream_names), as JetStream's
 * STREAM.LIST: the page's names from the meta leader, then each stream's info from its leader
 * (as jr_stream_info_get, all asked at once). A stream deleted meanwhile is left out; one
 * whose leader did not answer within request_timeout_ms is named in `missing` (JetStream's
 * "missing"). The callback runs once every stream of the page answered or failed. */
JR_API int jr_stream_list(jr_node *node, const char *subject, uint64_t offset, jr_stream_page_cb cb,
                          void *arg);

/* Publish options (JetStream's Nats-* headers in the header block count too; a field set here
 * overrides the header). */
#define JR_SEQ_NONE UINT64_MAX
typedef struct jr_pub_opts {
    size_t size;                 /* sizeof(jr_pub_opts) */
    const char *msg_id;          /* deduplication id within the duplicate window; NULL none */
    const char *expected_stream; /* JR_EWRONGSTREAM unless the subject's stream has this name */
    uint64_t expected_last_seq;  /* JR_EWRONGLASTSEQ unless the stream's last seq is this;
                                    JR_SEQ_NONE: no expectation (0 = an empty stream) */
    uint64_t expected_last_subject_seq; /* same for the subject's last seq; JR_SEQ_NONE: none */
    const char *expected_last_msg_id;   /* JR_EWRONGLASTMSGID unless the last msg id is this */
    uint32_t timeout_ms;                /* bounded wait; 0: the node's request_timeout_ms */
} jr_pub_opts;
JR_API void jr_pub_opts_init_size(jr_pub_opts *opts, size_t size);
#define jr_pub_opts_init(opts) jr_pub_opts_init_size((opts), sizeof *(opts))

/* The acknowledgement of a publish. */
typedef struct jr_pub_ack {
    size_t size;        /* sizeof(jr_pub_ack) as built into the library */
    const char *stream; /* the stream that captured the subject ("" if none) */
    uint64_t seq;       /* the message's seq (a duplicate: the original's); with
                           JR_EWRONGLASTSEQ / JR_EWRONGLASTSUBJSEQ the actual last seq */
    int duplicate;      /* 1 if another publish stored msg_id within the duplicate window:
                           nothing stored (this publish's own earlier attempt, stored before a
                           failover, is acknowledged with duplicate 0) */
    const char *msg;    /* "" on success, else what happened (e.g. which leader was lost and
                           whether the message may be stored; with JR_ELIMIT the limit:
                           "maximum messages exceeded", "maximum bytes exceeded" or "maximum
                           messages per subject exceeded"); borrowed for the callback */
    /* with JR_EWRONGLASTMSGID: the msg_id of the stream's last message ("" if it had none;
     * its first 255 bytes), borrowed for the callback; NULL otherwise */
    const char *last_msg_id;
} jr_pub_ack;
typedef void (*jr_publish_cb)(void *arg, int status, const jr_pub_ack *ack);

/* Publishes a message (subject, header block and data are copied) to the stream whose subjects
 * capture `subject`. The callback gets status 0 only once the message is committed — durable on
 * a quorum of the stream's replicas under the sync policy — and applied; never before. Errors:
 * JR_ENOSTREAM (no stream captures the subject), JR_EINVAL (subject not a literal subject,
 * malformed header block), JR_EMSGSIZE (over the stream's max_msg_size or the largest entry),
 * the expectation errors, JR_ELIMIT (discard new), JR_ESEALED, JR_ENOQUORUM (no leader took the
 * message within the timeout: nothing took effect, it is not stored), JR_ELEADERLOST (the
 * leader was lost, lost its leadership before the entry committed, or applied it within a
 * state fetched from a peer and so cannot tell its result, and the publish had no msg_id or its
 * timeout passed: it may still be stored; ack->msg says which leader),
 * JR_ETIMEDOUT (a leader that stayed alive took it but did not commit it in time, e.g. without
 * a quorum: it may still be stored), JR_EDAMAGED (the leader's store holds a later state than its
 * log, whose records were lost: the publish is not stored and never will be). With a msg_id
 * (option or Nats-Msg-Id header) a publish survives the loss of its leader (see above). */
JR_API int jr_publish(jr_node *node, const char *subject, const void *hdr, size_t hdr_len,
                      const void *data, size_t len, const jr_pub_opts *opts, jr_publish_cb cb,
                      void *arg);

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_STREAM_H */
