/*
 * meta_op — the operations of the meta group's log: what the meta leader proposes and every
 * server applies (meta_state.h), in a versioned, strict, checksummed binary encoding.
 *
 * Operations (ARCHITECTURE §6):
 *   SERVER_INFO    a server's placement facts {name, cluster, tags, capacity, max assets}; each
 *                  server proposes its own when they change (idempotent upsert).
 *   STREAM_ADD     {stream config, peer set chosen by the leader's placement}.
 *   STREAM_UPDATE  {new config, peer set}.
 *   STREAM_DELETE  {stream name}.
 *   STREAM_CONVERGED {stream name, group id, peers_at}: the stream's leader reports that its
 *                  group's committed configuration is exactly the peer set the assignment got
 *                  at meta index peers_at (every peer a voter, nobody else): the peer change is
 *                  over (meta_state.h "Peer changes").
 * Every op carries the reply route {request id, origin server}: the server that asked waits for
 * `request_id`; when it applies the op from the log it learns the result (meta_state.h) and
 * completes its caller — also after a meta leader failover, since the result is a function of
 * the log alone. An op nobody waits for has request id 0 and no origin (both or neither).
 *
 * A STREAM_ADD, STREAM_UPDATE or CONSUMER_ADD with no peers is a *request*: what a server forwards
 * to the meta leader (RPC kind JR__RPC_META, wire/frame.h) before placement. The leader checks it
 * (jr__meta_check), places it, and proposes it with the peer set. Applying an op without
 * peers refuses it.
 *
 *   CONSUMER_ADD  {stream name, consumer config, action (create, update or either), peer set
 *                 (a subset of the stream's, chosen by the leader), creation time}: creates or
 *                 updates a consumer of the stream.
 *   CONSUMER_DELETE {stream name, consumer name}.
 *   SERVER_REMOVE {server name, re-placements}: the server leaves the cluster for good (a
 *                 peer-remove): it is tombstoned, and each stream listed gets the peer set the
 *                 meta leader chose for it without the server (meta_state.h "Servers").
 *   SERVER_JOIN   a server's placement facts, as SERVER_INFO: a new server asks to be let into
 *                 the cluster (forwarded by the member it asked); applied, it is a server of
 *                 the meta state and the meta leader adds it to the meta group.
 *   PEER_MOVE     {stream, consumer ("" = the stream), kind, peer, peer set}: evacuates `peer`
 *                 (the meta leader chose the replacement: the peer set is the current one with
 *                 `peer` replaced) or cancels the peer change in progress (back to the
 *                 assignment's origin; no peer, no peer set). Apply rules in meta_move.h.
 *   SERVER_DRAIN  {server name, kind (start or cancel)}: marks a server draining (it takes no
 *                 new placement and the meta leader moves its replicas off, meta_state.h
 *                 "Servers") or ends that.
 * Op types 12.. are reserved; a decoder that meets a type it does not know reports
 * JR_EVERSION, never a silent skip (replicas must not diverge).
 * A stream's peer
 * set changes (grow, shrink) through STREAM_UPDATE with the new peers; the groups converge to
 * it and its leader reports STREAM_CONVERGED.
 *
 * Encoding, versions 1 and 2 (integers little-endian; varints canonical LEB128; "str" = varint
 * length + bytes, no NUL byte; a list is a varint count then its items):
 *
 *   op = u8 version (1 or 2) | u8 type | varint request_id | str origin ("" = none) | body |
 *        u64 xxh3 of every byte before it
 *   SERVER_INFO   str name | str cluster | list<str> tags | varint capacity_bytes |
 *                 varint max_assets (<= UINT32_MAX)
 *   STREAM_ADD,
 *   STREAM_UPDATE varint len | len bytes of jr__stream_config_encode() | list<str> peers
 *                 [version 2, STREAM_ADD only: varint created_ns (!= 0)]
 *   STREAM_DELETE str name
 *   STREAM_CONVERGED str name | varint group (!= 0) | varint peers_at (!= 0) | varint term |
 *                    varint commit_term | varint commit (commit_term <= term)
 *   CONSUMER_ADD  str stream | varint len | len bytes of jr__consumer_config_encode() |
 *                 u8 action (0 either, 1 create, 2 update, 3 pause) | list<str> peers |
 *                 varint created_ns
 *   CONSUMER_DELETE str stream | str consumer
 *   SERVER_REMOVE str name | varint n | n × (str stream | list<str> peers), streams in strictly
 *                 ascending name order, each peer list 1..JR_MAX_REPLICAS distinct names
 *                 without the removed server (n = 0: a request, placed by the leader)
 *   SERVER_JOIN   as SERVER_INFO
 *   PEER_MOVE     str stream | str consumer ("" = the stream) | u8 kind (1 evacuate, 2 cancel) |
 *                 str peer (evacuate: a name; cancel: "") | list<str> peers (cancel: none)
 *   SERVER_DRAIN  str name | u8 kind (0 cancel, 1 start)
 * Version 2 only adds the creation time a meta leader stamps on a STREAM_ADD it places (its
 * host's wall clock). An op is written as version 2 exactly when it carries one, as version 1
 * otherwise, so every value keeps one encoding and logs written before version 2 replay
 * unchanged (their streams' created_ns is 0, "unknown").
 *
 * Names (server, origin, cluster, tags, peers) are 1..JR__META_NAME_MAX bytes without
 * whitespace or control characters; tags of a server are distinct, at most JR__META_MAX_TAGS;
 * peers are distinct, at most JR_MAX_REPLICAS. The decoder checks the checksum first
 * (JR_ECORRUPT), then the version and type (JR_EVERSION), then everything else (JR_ECORRUPT:
 * truncation, trailing bytes, non-canonical varints, invalid names or configs). Every value has
 * one encoding, so decode + encode gives back the same bytes.
 */
#ifndef JR_META_META_OP_H
#define JR_META_META_OP_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "consumer/config.h"
#include "stream/config.h"
#include "util/buf.h"

#define JR__META_OP_VERSION 2 /* the newest written (see Encoding) */
#define JR__META_NAME_MAX 255 /* server, cluster, tag and origin names, in bytes */
#define JR__META_MAX_TAGS 64  /* tags of one server */

enum jr__meta_op_type {
    JR__META_SERVER_INFO = 1,
    JR__META_STREAM_ADD = 2,
    JR__META_STREAM_UPDATE = 3,
    JR__META_STREAM_DELETE = 4,
    JR__META_STREAM_CONVERGED = 5,
    JR__META_CONSUMER_ADD = 6,
    JR__META_CONSUMER_DELETE = 7,
    JR__META_SERVER_REMOVE = 8,
    JR__META_SERVER_JOIN = 9,
    JR__META_PEER_MOVE = 10,
    JR__META_SERVER_DRAIN = 11,
    JR__META_OP_MAX = 11 /* types above are reserved (see the header comment) */
};

/* What a SERVER_DRAIN does. */
enum jr__meta_drain_kind {
    JR__META_DRAIN_CANCEL = 0, /* the server takes placements again */
    JR__META_DRAIN_START = 1,  /* the server takes no placements; its replicas move off */
};

/* What a PEER_MOVE does. */
enum jr__meta_move_kind {
    JR__META_MOVE_EVACUATE = 1, /* replace `peer` by another server (the replica count stays) */
    JR__META_MOVE_CANCEL = 2,   /* return a peer change in progress to its origin */
};

/* SERVER_REMOVE: a stream of the removed server and the peer set it gets without it. */
typedef struct jr__meta_replace {
    const char *stream;
    const char *const *peers;
    size_t npeers;
} jr__meta_replace;

/* What a CONSUMER_ADD may do (JetStream's create request `action`). */
enum jr__meta_consumer_action {
    JR__META_CONSUMER_EITHER = 0, /* create, or update an existing one */
    JR__META_CONSUMER_CREATE = 1, /* create only: an existing one with another config refuses */
    JR__META_CONSUMER_UPDATE = 2, /* update only: a missing one refuses */
    JR__META_CONSUMER_PAUSE = 3,  /* of the config only pause_until_ns counts: the existing
                                     consumer's is set to it (0: resume) */
};

/* A server's placement facts. */
typedef struct jr__meta_server_info {
    const char *name;
    const char *cluster;
    const char *const *tags;
    size_t ntags;
    uint64_t capacity_bytes; /* 0: unknown */
    uint32_t max_assets;     /* 0: no limit */
} jr__meta_server_info;

typedef struct jr__meta_op {
    uint8_t type;        /* enum jr__meta_op_type */
    uint64_t request_id; /* 0: nobody waits */
    const char *origin;  /* server that waits for the result; NULL or "" iff request_id is 0 */
    jr__meta_server_info server;    /* SERVER_INFO */
    const jr_stream_config *config; /* STREAM_ADD, STREAM_UPDATE */
    const char *const *peers;       /* STREAM_ADD, STREAM_UPDATE: server names; none = request */
    size_t npeers;
    uint64_t created_ns; /* STREAM_ADD: the meta leader's wall clock when it placed the stream
                            (ns since the Unix epoch); 0: none (a request, or a version-1 op) */
    const char *stream;  /* STREAM_DELETE, STREAM_CONVERGED, CONSUMER_*: the stream's name */
    const jr_consumer_config *consumer_config; /* CONSUMER_ADD (a request may lack the name of
                                                  an ephemeral: the leader names it) */
    uint8_t action;                            /* CONSUMER_ADD: enum jr__meta_consumer_action */
    const char *consumer; /* CONSUMER_DELETE: the consumer's name; PEER_MOVE: the consumer
                             moved (NULL or "": the stream itself) */
    uint64_t group;       /* STREAM_CONVERGED: the stream's Raft group id */
    uint64_t peers_at;    /* STREAM_CONVERGED: the assignment's peers_at the group reached */
    /* STREAM_CONVERGED: the reporting leader's term, and its commit index with that entry's
     * term — the floor a replica joining later starts from (jr__join_floor); 0: unknown */
    uint64_t term, commit_term, commit;
    /* SERVER_REMOVE: the server is server.name (the other facts unused); replace[0..nreplace)
     * the streams re-placed, in ascending name order. SERVER_JOIN uses `server` as SERVER_INFO
     * does. */
    const jr__meta_replace *replace;
    size_t nreplace;
    /* PEER_MOVE: action is enum jr__meta_move_kind; `peer` the server evacuated (NULL for a
     * cancel); peers the new peer set the meta leader chose (evacuate; none in a request).
     * SERVER_DRAIN: the server is server.name, action is enum jr__meta_drain_kind. */
    const char *peer;
    /* Owned memory of a decoded op (jr__meta_op_decode); all NULL in an op built by hand. */
    jr__stream_cfg *cfg;    /* the decoded config (config == &cfg->c) */
    jr__consumer_cfg *ccfg; /* the decoded consumer config (consumer_config == &ccfg->c) */
    void *block;            /* strings and arrays */
    const jr_allocator *alloc;
} jr__meta_op;

/* 1 if the n bytes at s are a valid name (1..JR__META_NAME_MAX bytes, no byte <= 0x20, no
 * 0x7f), else 0. */
int jr__meta_name_ok(const char *s, size_t n);

/* Appends the encoding of op to out. Checks everything the decoder checks (config valid, names,
 * tag and peer lists, request id/origin pairing); on a violation returns JR_EINVAL and appends
 * nothing. JR_ENOMEM (out->err set) if the buffer cannot grow. */
int jr__meta_op_encode(const jr__meta_op *op, jr__buf *out);

/* Decodes exactly len bytes into *op, which owns its strings, arrays and config until
 * jr__meta_op_free(). 0; JR_ECORRUPT (checksum, truncation, trailing bytes, any invalid field);
 * JR_EVERSION (an intact op of an unknown version or type, or an embedded config of an unknown
 * version); JR_ENOMEM. On failure *op owns nothing (jr__meta_op_free is still safe). */
int jr__meta_op_decode(const void *data, size_t len, const jr_allocator *a, jr__meta_op *op);

/* Frees what a decoded op owns and zeroes it; safe on an op built by hand or already freed. */
void jr__meta_op_free(jr__meta_op *op);

/* Shared with meta_snapshot.c ------------------------------------------------------------------
 * Reads a str of at most max bytes without NUL bytes; returns it borrowed from r (not
 * NUL-terminated), or NULL with r failed. An empty string returns a non-NULL pointer. */
const char *jr__meta_rd_str(jr__rd *r, size_t *n, size_t max);
/* Reads a list count whose items take at least min_item bytes each and are at most max; r fails
 * otherwise. */
size_t jr__meta_rd_count(jr__rd *r, size_t min_item, size_t max);
/* Appends a str (NULL is ""). */
void jr__meta_put_str(jr__buf *b, const char *s);

#endif
