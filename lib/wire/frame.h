/*
 * frame — the peer wire format: one frame carries many groups' Raft messages, and node-level
 * messages (coalesced heartbeats, requests and responses), from one node to another
 * (ARCHITECTURE §3, §4).
 *
 * Owns: the byte layout below, its canonical encoding, and strict decoding of it. Invariants:
 *  - every value has exactly one encoding (canonical varints, booleans only 0 or 1, no unknown
 *    bits), so decoding a valid frame and re-encoding its messages gives back the same bytes;
 *  - decoding never reads outside the bytes it was given and never allocates; decoded APPEND
 *    entries, snapshot chunks and heartbeat lists point into the frame (zero copy);
 *  - whatever the encoder accepts the decoder accepts, and the encoder refuses (JR_EINVAL in
 *    jr__buf.err) what the decoder would reject, so a frame is never sent that peers drop.
 *
 * Wire format, version 1. All fixed-width integers little-endian; "varint" is unsigned LEB128,
 * at most 10 bytes, canonical (no trailing zero group, no overflow).
 *
 *   frame  = header (32 bytes) | body (`len` bytes)
 *   header = magic "JR" (2) | version u8 (= 1) | fflags u8 | len u32 | from u64 | to u64 |
 *            check u64
 *            fflags: every bit must be 0, but bit 0 (SEALED) is refused as unauthenticated
 *            (JR_EAUTH): frames are not encrypted one by one; the host's transport protects
 *            the byte stream they travel on (jr_link, include/jetraft/link.h).
 *            from, to: non-zero node ids (xxh3 of the server names), from != to.
 *            check = xxh3-64 of header bytes [0, 24) followed by the `len` body bytes.
 *   body   = message*          (zero or more, up to the end of the body)
 *
 *   message = type u8 | mflags u8 | payload
 *     type 1..63   Raft message of one group (raft.h enum jr__msg_type; today 1..11);
 *                  payload = group varint (!= 0) | term varint | fields below.
 *                  mflags: raft.h enum jr__msg_flags (bits 0..2); other bits rejected.
 *                  The sender and receiver are the frame's from and to (not repeated).
 *     type 64..127 node-level message (group 0); mflags must be 0; today 64..67 (below).
 *     type 128..255 extension: mflags any | len varint | len bytes. The decoder returns it as
 *                  such (jr__frame.ext); the node acts on the one type it knows (LIFE, below)
 *                  and drops and counts any other (jr_node_stats.msgs_unknown_type), so a
 *                  message type added later goes here and an older node skips it instead of
 *                  rejecting the frame.
 *     any other type (0, 12..63 today, 68..127) is rejected: its length is not known.
 *
 *   VOTE (1)           last_index varint | last_term varint
 *   VOTE_RESP (2)      granted u8 (0|1)
 *   APPEND (3)         prev_index varint | prev_term varint | commit varint | n varint |
 *                      n × entry
 *       entry        = etype u8 (0 NORMAL | 1 NOOP | 2 CONFIG) | dterm varint | len varint |
 *                      len bytes of data
 *                      entry i has index prev_index + 1 + i (not sent; must not overflow) and
 *                      term = (term of entry i-1, or prev_term for i = 0) + dterm, so terms never
 *                      decrease (Raft logs are term-monotonic, dissertation §3.5). len is at most
 *                      jr__frame.max_entry (default JR__FRAME_MAX_ENTRY).
 *   APPEND_RESP (4)    success u8 (0|1) | index varint | hint_index varint | hint_term varint
 *   HEARTBEAT (5)      commit varint
 *   HEARTBEAT_RESP (6) match_hint varint
 *   SNAP (7)           index varint | sterm varint | offset varint | total varint | done u8 (0|1) |
 *                      conf_len varint | conf bytes | len varint | data bytes
 *                      conf_len <= JR__FRAME_MAX_CONF; offset + len does not overflow;
 *                      done = 1: offset + len = total; done = 0: total = 0 (size not yet
 *                      known, raft.h) or offset + len <= total.
 *   SNAP_RESP (8)      bits u8 (bit 0 done, bit 1 reject; others 0) | index varint |
 *                      offset varint
 *   TIMEOUT_NOW (9)    (nothing after the term)
 *   VOUCH (10)         last_index varint | last_term varint
 *   VOUCH_RESP (11)    bits u8 (bit 0 leader, bit 1 unfloored, bit 2 committed configuration
 *                      follows; others 0) | last_index varint | last_term varint |
 *                      commit varint | conf_index varint | conf_len varint | conf bytes (the
 *                      answerer's latest configuration, jr__conf_encode(), and the index of its
 *                      entry; conf_len <= JR__FRAME_MAX_CONF) [| cconf_index varint |
 *                      cconf_len varint (>= 1, <= JR__FRAME_MAX_CONF) | cconf bytes: only with
 *                      bit 2, the configuration in effect at its commit index and the index of
 *                      its entry, sent when its latest configuration lies above its commit]. An
 *                      answer without bit 2 decodes as before bit 2 existed; a build that does
 *                      not know bit 2 rejects a frame holding an answer that sets it.
 *
 *   NODE_HB (64)       seq varint | n varint | n × (dgroup varint | term varint | commit varint)
 *   NODE_HB_RESP (65)  seq varint | n varint | n × (dgroup varint | term varint | index varint)
 *       Group ids are strictly ascending: group_0 = dgroup_0 + 1, group_i = group_{i-1} +
 *       dgroup_i + 1 (no overflow), so consecutive ids cost one byte each. A heartbeat lists
 *       (group, leader's term, leader's commit) only for the groups whose quiet state changed
 *       at the sender, their leader (term 0: a tombstone, the group woke or closed), repeated
 *       until echoed (lib/node/liveness.h); the response echoes seq and lists (group, term,
 *       match = last durable index) for those items. An idle cluster's heartbeats list nothing;
 *       an item costs ~5 bytes, so 10,000 groups going quiet at once take ~50 KB.
 *
 *   NODE_REQUEST (66)  id varint (!= 0) | kind u8 (!= 0) | len varint | len bytes of payload
 *   NODE_RESPONSE (67) id varint (!= 0) | status zigzag varint (an int32: 0 or a JR_E* code) |
 *                      len varint | len bytes of payload
 *       Node-to-node request/response (rpc.c): forwarded publishes to a stream leader, admin
 *       requests to the meta leader, and their replies. id is chosen by the requester, unique
 *       among its outstanding requests, and echoed by the response; kind says what the payload
 *       is (its format belongs to the layer that owns the kind; a kind the receiving node
 *       does not know, one added by a later release, is answered JR_ENOTSUP on its own,
 *       lib/js/js.c, never fatal to the frame). zigzag: v >= 0 is sent as 2v,
 *       v < 0 as -2v - 1, so small error codes take one byte; a value outside int32 is
 *       rejected. len is at most jr__frame.max_rpc (default JR__RPC_MAX_PAYLOAD); more is
 *       JR_EMSGSIZE. The payload points into the frame (zero copy).
 *
 * Counts are checked against the bytes left before anything is decoded (an entry or heartbeat
 * item is at least 3 bytes), and the body must end exactly after its last message.
 *
 * Extension FSM (129): a follower's word on its state machines; its payload is below
 * (JR__EXT_FSM) and checked by jr__fsm_open, not by the frame decoder, which takes every
 * extension as length-prefixed bytes.
 *
 * Use. Sender: jr__frame_begin, then jr__frame_add / jr__frame_add_hb per message, then
 * jr__frame_end. Receiver: jr__frame_open, jr__frame_check to walk the whole frame before
 * acting on any of it, then jr__frame_next in a loop. jr__frame_validate does open + check.
 */
#ifndef JR_WIRE_FRAME_H
#define JR_WIRE_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "raft/raft.h"
#include "util/buf.h"

#define JR__FRAME_VERSION 1
#define JR__FRAME_HEADER 32

/* Header flags (fflags): the one bit defined marks a frame encrypted on its own, which no
 * node accepts (JR_EAUTH); any other bit is JR_ECORRUPT. */
#define JR__FRAME_SEALED 0x01

/* Default largest entry (data bytes) accepted in an APPEND; see jr__frame.max_entry. */
#define JR__FRAME_MAX_ENTRY (64u << 20)
/* Largest snapshot configuration blob accepted (jr__conf_encode of JR__MAX_MEMBERS members fits
 * with room to spare). */
#define JR__FRAME_MAX_CONF (16u + JR__MAX_MEMBERS * 32u)

/* Message types outside raft.h: node-level messages (group 0) use 64..127. */
#define JR__MSG_GROUP_LAST 63
#define JR__MSG_NODE_FIRST 64
#define JR__MSG_NODE_HB 64       /* coalesced heartbeat: groups the sender leads */
#define JR__MSG_NODE_HB_RESP 65  /* its answer: groups the responder follows */
#define JR__MSG_NODE_REQUEST 66  /* node-to-node request (rpc.c) */
#define JR__MSG_NODE_RESPONSE 67 /* its reply */
#define JR__MSG_NODE_LAST 127
#define JR__MSG_EXT_FIRST 128 /* length-prefixed extensions: 128..255 */

/* LIFE (extension 128, mflags 0, len 16): sender_life u64 | receiver_life u64, little-endian.
 * A node's life is a random non-zero number drawn at each open. The first message of a frame,
 * while the sender announces its own life (sender_life != 0: it restarted less than a second
 * ago, node/rpc.h "After a restart") or knows the receiver's from such an announcement
 * (receiver_life != 0), so the requests the frame carries say which life of the receiver they
 * were sent to. An older node skips it as an unknown extension. */
#define JR__EXT_LIFE 128
#define JR__EXT_LIFE_LEN 16

/* FSM (extension 129, mflags 0): a follower's word on its replicas' state machines, to the
 * leader of each group it names (lib/node/fsmreport.c):
 *   version u8 (= 1) | n varint (>= 1) | n × (dgroup varint | term varint | state u8)
 * Group ids strictly ascending and delta-coded as in NODE_HB (group_0 = dgroup_0 + 1, group_i =
 * group_{i-1} + dgroup_i + 1, no overflow); term (>= 1) is the sender's term in that group;
 * state is enum jr__fsm_state (raft.h: 0 whole, 1 failed, 2 rebuilding; others rejected). The
 * payload must end after its last item. A later release that needs more says so with another
 * version, which this one skips and counts like an unknown extension; an older node skips the
 * whole type. The frame's checksum covers it like every message. */
#define JR__EXT_FSM 129
#define JR__FSM_VERSION 1

/* Encoding ---------------------------------------------------------------------------------
 * A frame under construction occupies the whole of a jr__buf (from offset 0). Every encoder
 * records its first failure in b->err (JR_ENOMEM, or JR_EINVAL for a message the decoder would
 * reject) and then does nothing; check the result of jr__frame_end. A failed jr__frame_add or
 * jr__frame_add_hb writes nothing (b->len is unchanged), so a caller may clear b->err and go on
 * with the other messages. The buffer's capacity is reused from frame to frame, so
 * steady-state encoding does not allocate. */

/* Resets b and writes a header for a frame from `from` to `to` (non-zero, distinct: else
 * b->err = JR_EINVAL). */
void jr__frame_begin(jr__buf *b, jr__id from, jr__id to);
/* Appends one Raft message. Requires m->from and m->to to be the frame's ids, m->group != 0, a
 * known type and flags, entries at consecutive indexes prev_index+1.. with non-decreasing terms
 * from prev_term, entry types known and lengths <= JR__FRAME_MAX_ENTRY, snapshot chunks as in
 * the format above, conf_len <= JR__FRAME_MAX_CONF; otherwise b->err = JR_EINVAL. Booleans are sent
 * as 0/1. Entry data and snapshot bytes are copied into b. */
void jr__frame_add(jr__buf *b, const jr__msg *m);
/* Fills in the length and checksum. Returns 0, b->err, or JR_EMSGSIZE (body > UINT32_MAX). */
int jr__frame_end(jr__buf *b);
/* Encoded size of m in a frame body: exact if m is valid for jr__frame_add; never crashes on
 * an invalid m (the result is then meaningless). */
size_t jr__frame_msg_len(const jr__msg *m);

/* Node-level heartbeat (coalesced per peer pair, node/liveness.h). One item per group. */
typedef struct jr__hb_item {
    uint64_t group; /* non-zero */
    uint64_t term;
    uint64_t index; /* NODE_HB: the leader's commit; NODE_HB_RESP: the follower's match index */
} jr__hb_item;

/* Appends a NODE_HB or NODE_HB_RESP (type) with sequence number seq and n items, which must be
 * sorted by strictly ascending, non-zero group id (jr__hb_sort does it); otherwise b->err =
 * JR_EINVAL. The items are only read. */
void jr__frame_add_hb(jr__buf *b, uint8_t type, uint64_t seq, const jr__hb_item *items, size_t n);
/* Encoded size of such a message (exact; items valid as above). */
size_t jr__frame_hb_len(uint64_t seq, const jr__hb_item *items, size_t n);
/* Sorts items by group id, in place, without allocating. */
void jr__hb_sort(jr__hb_item *items, size_t n);

/* Extension messages (types JR__MSG_EXT_FIRST..255) ----------------------------------------
 * Appends one: type >= JR__MSG_EXT_FIRST (else b->err = JR_EINVAL), any mflags, payload of len
 * bytes (copied; NULL only with len 0), len <= JR__RPC_MAX_PAYLOAD (else JR_EMSGSIZE). This
 * version sends none; tests and later releases do. */
void jr__frame_add_ext(jr__buf *b, uint8_t type, uint8_t mflags, const void *payload, size_t len);

/* A decoded extension message (jr__frame.ext after jr__frame_next returned one). */
typedef struct jr__ext_view {
    uint8_t type;  /* JR__MSG_EXT_FIRST..255 */
    uint8_t flags; /* its mflags, uninterpreted */
    uint32_t len;
    const uint8_t *payload; /* borrowed from the frame's bytes (NULL when len is 0) */
} jr__ext_view;

/* FSM extension payloads (fsm.c) -----------------------------------------------------------*/

/* One group's item: the group (non-zero), the sender's term in it (non-zero), its state. */
typedef struct jr__fsm_item {
    uint64_t group;
    uint64_t term;
    uint8_t state; /* enum jr__fsm_state */
} jr__fsm_item;

/* Appends an FSM extension message with n >= 1 items sorted by strictly ascending group id
 * (jr__fsm_sort), each with a term >= 1 and a known state; otherwise b->err = JR_EINVAL (nothing
 * written). The items are only read. */
void jr__frame_add_fsm(jr__buf *b, const jr__fsm_item *items, size_t n);
/* Encoded size of such a message in a frame body (exact; items valid as above). */
size_t jr__frame_fsm_len(const jr__fsm_item *items, size_t n);
/* Most items one message carries in a frame body of `room` bytes (0 if none fits). */
size_t jr__frame_fsm_fit(size_t room);
/* Sorts items by group id, in place, without allocating. */
void jr__fsm_sort(jr__fsm_item *items, size_t n);

/* A decoded FSM payload: a borrowed view, read with jr__fsm_next. */
typedef struct jr__fsm_view {
    uint32_t n;     /* items not yet returned */
    uint64_t group; /* iteration state: the last group returned (0 before the first) */
    jr__rd items;
} jr__fsm_view;
/* Checks the payload of an extension message x of type JR__EXT_FSM whole (flags 0, version,
 * every item, nothing after the last) and points v at its items. 0; JR_EVERSION for a payload
 * of another version (a later release's: skip it); JR_ECORRUPT for anything else. Never reads
 * outside x's payload and never allocates. */
int jr__fsm_open(const jr__ext_view *x, jr__fsm_view *v);
/* Returns 1 and the next item, or 0 at the end (a view jr__fsm_open did not produce returns 0
 * on any inconsistency). */
int jr__fsm_next(jr__fsm_view *v, jr__fsm_item *out);

/* Node-to-node requests and responses (rpc.c) ------------------------------------------------
 * What a request carries. The wire carries any kind 1..255; these are the ones this version
 * executes (lib/js/js.c answers any other JR_ENOTSUP), so a kind added later reaches an older
 * node as a request it refuses on its own. */
enum jr__rpc_kind {
    JR__RPC_PUBLISH = 1,      /* a publish forwarded to the stream leader; reply: the ack */
    JR__RPC_META = 2,         /* an admin request for the meta leader (a meta op, meta_op.h) */
    JR__RPC_STREAM_INFO = 3,  /* stream info asked of the stream leader */
    JR__RPC_STREAM_ADMIN = 4, /* purge, delete/get message, stepdown at the stream leader */
    JR__RPC_CATCHUP = 5,      /* a chunk of a stream's messages for a replica catching up */
    JR__RPC_CLUSTER_INFO = 6, /* the meta leader's view of every server */
    JR__RPC_CONSUMER = 7,     /* info, fetch or ack at a consumer's leader */
    JR__RPC_LISTS = 8,        /* stream or consumer names, from the meta leader */
    JR__RPC_JOIN = 9,         /* a server asks a member to let it into the cluster (the only
                                 request a server not in the peer table may send) */
    JR__RPC_REMOVED = 10,     /* to a server the meta group removed: you were removed */
    JR__RPC_KIND_MAX = 10
};
/* Largest RPC payload the encoder accepts and the decoder's default limit (jr__frame.max_rpc). */
#define JR__RPC_MAX_PAYLOAD (64u << 20)

/* Appends a NODE_REQUEST: id != 0, kind != 0 (else b->err = JR_EINVAL),
 * payload of len bytes (copied; NULL only with len 0), len <= JR__RPC_MAX_PAYLOAD (else
 * b->err = JR_EMSGSIZE). As for every encoder here, a failure writes nothing. */
void jr__frame_add_request(jr__buf *b, uint64_t id, uint8_t kind, const void *payload, size_t len);
/* As jr__frame_add_request with the payload gathered from iovcnt pieces (iovcnt >= 0; a piece
 * of len 0 may have base NULL), so a caller need not assemble it first. */
void jr__frame_add_requestv(jr__buf *b, uint64_t id, uint8_t kind, const jr_iovec *iov, int iovcnt);
/* Appends a NODE_RESPONSE: id != 0 (else JR_EINVAL), any status (0 or a JR_E* code by
 * convention), payload as for requests. */
void jr__frame_add_response(jr__buf *b, uint64_t id, int status, const void *payload, size_t len);
void jr__frame_add_responsev(jr__buf *b, uint64_t id, int status, const jr_iovec *iov, int iovcnt);
/* Exact encoded sizes of such messages in a frame body. */
size_t jr__frame_request_len(uint64_t id, size_t len);
size_t jr__frame_response_len(uint64_t id, int status, size_t len);

/* A decoded request or response (jr__frame.rpc after jr__frame_next returned one). */
typedef struct jr__rpc_view {
    uint8_t type;           /* JR__MSG_NODE_REQUEST or JR__MSG_NODE_RESPONSE */
    uint8_t kind;           /* request: 1..255 (enum jr__rpc_kind, or unknown); response: 0 */
    int32_t status;         /* response: the status; request: 0 */
    uint64_t id;            /* non-zero */
    uint32_t len;           /* payload bytes */
    const uint8_t *payload; /* borrowed from the frame's bytes (NULL when len is 0) */
} jr__rpc_view;

/* Decoding --------------------------------------------------------------------------------*/

/* A decoded heartbeat: a borrowed view of the encoded list, read with jr__hb_next (copy the
 * struct to iterate again). Valid while the frame's bytes are. */
typedef struct jr__hb_view {
    uint8_t type; /* JR__MSG_NODE_HB or JR__MSG_NODE_HB_RESP */
    uint64_t seq;
    uint32_t n;     /* items not yet returned by jr__hb_next */
    uint64_t group; /* iteration state: last group id returned (0 before the first) */
    jr__rd items;   /* the encoded items */
} jr__hb_view;

/* Returns 1 and the next item, or 0 when the list is exhausted. The list was validated when the
 * message was decoded, so it cannot fail; a view that was not produced by jr__frame_next
 * returns 0 on any inconsistency (never reads out of bounds). */
int jr__hb_next(jr__hb_view *v, jr__hb_item *out);

typedef struct jr__frame {
    jr__id from;
    jr__id to;
    uint8_t flags;      /* header fflags */
    uint32_t max_entry; /* largest entry length accepted; JR__FRAME_MAX_ENTRY after open, the
                           caller may lower it before decoding */
    jr__rd body;        /* the (plaintext) messages not yet decoded */
    jr__hb_view hb;     /* the last heartbeat returned by jr__frame_next */
    uint32_t max_rpc;   /* largest RPC payload accepted; JR__RPC_MAX_PAYLOAD after open, the
                           caller may lower it before decoding (more is JR_EMSGSIZE) */
    jr__rpc_view rpc;   /* the last request/response returned by jr__frame_next */
    jr__ext_view ext;   /* the last extension message returned by jr__frame_next */
} jr__frame;

/* Checks the header and checksum of a plain frame of len bytes. Errors: JR_ECORRUPT (short,
 * bad magic, length field not equal to the bytes given, unknown flag, zero or equal ids, bad
 * checksum), JR_EVERSION, JR_EMSGSIZE (len or the length field above max), JR_EAUTH (the frame
 * is flagged SEALED). On success f->body covers the messages, borrowed from
 * data. */
int jr__frame_open(jr__frame *f, const void *data, size_t len, size_t max);
/* Decodes the next message into *m (m->from, m->to from the header). Raft messages: entries of
 * an APPEND go to scratch (capacity cap; more than cap entries is JR_EMSGSIZE), their data and
 * snapshot bytes point into the frame. Node-level and extension messages: m->type is
 * JR__MSG_NODE_* or >= JR__MSG_EXT_FIRST, m->group 0, every other field 0, and f->hb
 * (heartbeats), f->rpc (requests, responses) or f->ext (extensions) holds the message.
 * Returns 0 with *got 1 for a message, 0 with *got 0 at the end of the body, or a negative error
 * (JR_ECORRUPT, JR_EMSGSIZE; *got 0), after which it keeps returning that error. *m is
 * unspecified unless *got is 1. */
int jr__frame_next(jr__frame *f, jr__msg *m, jr__entry *scratch, size_t cap, int *got);
/* Walks every message of an opened frame without consuming it (f is not modified): 0 if
 * jr__frame_next would decode all of them with a scratch of cap entries, else its error. */
int jr__frame_check(const jr__frame *f, size_t scratch_cap);
/* jr__frame_open + jr__frame_check on a plain frame: 0 if every message decodes. */
int jr__frame_validate(const void *data, size_t len, size_t max, size_t scratch_cap);

#endif
