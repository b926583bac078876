/*
 * codec — payloads of the stream layer's RPCs that carry structures: stream info (the
 * leader's answer to JR__RPC_STREAM_INFO), the meta leader's server report
 * (JR__RPC_CLUSTER_INFO) and a stored message (get, get last).
 *
 * Encoding (varint = canonical LEB128, str = varint length + bytes, integers little-endian):
 *   info    = str config (jr__stream_config_encode) | varint created_ns |
 *             varint msgs | varint bytes | varint first_seq | varint first_ts | varint last_seq |
 *             varint last_ts | varint num_subjects | varint num_deleted | varint consumers |
 *             str cluster | str group | str leader ("" none) | varint n (<= 16) |
 *             n × (str name | u8 flags (1 current, 2 offline, 4 observer, 8 pending,
 *                  16 damaged, 32 unvouched, 64 fsm failed, 128 fsm rebuilding: only with
 *                  64) | varint active_ns | varint lag); a decoder of a release before 64 and
 *                  128 ignores them (its replica shows as the other bits say: not current)
 *   servers = str cluster | str leader | varint nstreams | varint n |
 *             n × (str name | str cluster | varint ntags | ntags × str | u8 flags (1 leader,
 *                  2 current, 4 offline, 8 damaged, 16 draining) | varint active_ns |
 *                  varint lag | varint assets | [draining: names remaining | names unplaced]) |
 *             [names under_replicated, absent when there are none]
 *             where names = varint k (<= JR_DRAIN_LIST_MAX) | k × str
 *   message = varint seq | u64 ts | str subject | str headers | str data
 *   cinfo   = str config (jr__consumer_config_encode) | str stream | varint created_ns |
 *             varint × 3 delivered {consumer_seq, stream_seq, last_active_ns} | varint × 3
 *             ack floor | varint num_ack_pending | varint num_redelivered |
 *             varint num_waiting | varint num_pending | the cluster block as in info
 * The cluster block (last in info and cinfo) ends, only while a peer change is in progress,
 * with the move:
 *   move    = u8 1 | varint ntarget (<= 16) | ntarget × str | varint norigin (<= 16) |
 *             norigin × str | u8 status (1..7, enum jr_move_status) | str description |
 *             str error ("" none)
 * so a stable group's info is encoded as before the move existed (a server of that release
 * reads it); a decoder of that release refuses one carrying a move (trailing bytes).
 * Decoders bounds-check every read, reject trailing bytes and unknown flag bits, and copy what
 * they return into memory the decoded value owns (strings NUL-terminated).
 */
#ifndef JR_NODE_JS_CODEC_H
#define JR_NODE_JS_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "consumer/config.h"
#include "store/store.h"
#include "stream/config.h"
#include "util/buf.h"

#define JR__INFO_MAX_REPLICAS 16

/* Appends the info encoding of a full-size info built by the library (every struct it points
 * to full size too). 0, JR_EINVAL (config, or too many replicas), JR_ENOMEM. */
int jr__info_encode(jr__buf *b, const jr_stream_info *info);

/* A decoded info: `info` borrows from the rest (every struct full size, sizes set). */
/* A decoded move (codec.h "move"): `move` borrows the arrays. */
typedef struct jr__move_dec {
    jr_move_info move;
    const char *target[JR__INFO_MAX_REPLICAS];
    const char *origin[JR__INFO_MAX_REPLICAS];
} jr__move_dec;

typedef struct jr__info_dec {
    jr_stream_info info;
    jr_stream_state state;
    jr_cluster_info cluster;
    jr__move_dec move;
    jr__stream_cfg *cfg;
    jr_peer_info reps[JR__INFO_MAX_REPLICAS];
    const jr_peer_info *rep_ptrs[JR__INFO_MAX_REPLICAS];
    char *strings; /* cluster, group, leader and replica names */
    const jr_allocator *alloc;
} jr__info_dec;

/* 0, JR_ECORRUPT, JR_ENOMEM. Free with jr__info_dec_free (also after an error). */
int jr__info_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__info_dec *out);
void jr__info_dec_free(jr__info_dec *d);

/* A decoded server report (every struct full size, sizes set). */
typedef struct jr__servers_dec {
    jr_meta_info info;
    jr_server_info *servers;
    const jr_server_info **server_ptrs; /* info.servers: &servers[i] */
    const char **tags;                  /* every server's tags, one array */
    char *strings;
    const jr_allocator *alloc;
} jr__servers_dec;

int jr__servers_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__servers_dec *out);
void jr__servers_dec_free(jr__servers_dec *d);

/* Consumer info, as stream info. */
int jr__cinfo_encode(jr__buf *b, const jr_consumer_info *info);
typedef struct jr__cinfo_dec {
    jr_consumer_info info;
    jr_cluster_info cluster;
    jr__move_dec move;
    jr__consumer_cfg *cfg;
    jr_peer_info reps[JR__INFO_MAX_REPLICAS];
    const jr_peer_info *rep_ptrs[JR__INFO_MAX_REPLICAS];
    char *strings;
    const jr_allocator *alloc;
} jr__cinfo_dec;
int jr__cinfo_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__cinfo_dec *out);
void jr__cinfo_dec_free(jr__cinfo_dec *d);

/* Appends the message encoding. */
void jr__msg_encode(jr__buf *b, const jr__store_msg *m);

/* A decoded message: fields of `m` point into `block`. */
typedef struct jr__msg_dec {
    jr_stored_msg m;
    char *block;
    const jr_allocator *alloc;
} jr__msg_dec;

int jr__msg_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__msg_dec *out);
void jr__msg_dec_free(jr__msg_dec *d);

#endif
