/*
 * route_wire.h — the byte layout of route frames: the host-level frames that carry core NATS
 * interest and messages between servers over the peer links, next to the node's frames.
 *
 * A peer link carries frames of two owners: the node's (jr_node_recv; they start with the
 * library's magic "JR") and the host's route frames, which start with "JN", so the link code
 * tells them apart by their first two bytes and the library never sees a route frame. Both are
 * sealed alike by the session (one jr_link record each on a secure link, one length-prefixed
 * frame on a plain one). Like the node's frames, a route frame carries its own xxh3 checksum,
 * so a frame damaged on a plain link is rejected rather than routed.
 *
 * Format, version 1 (integers little-endian; varint: unsigned LEB128, at most 10 bytes,
 * canonical; a string is len varint | len bytes, no NUL byte inside):
 *
 *   frame  = magic "JN" | version u8 (1) | type u8 | check u64 | body
 *            check = xxh3-64 of bytes [0, 4) followed by the body
 *   INTEREST (1)  body = op+ ; op = count varint | subject string | queue string
 *            the sender's number of local subscriptions on (subject, queue): plain
 *            subscriptions are announced as 1 and 0, a queue group with its member count (its
 *            weight when another server picks a member); 0 withdraws it. subject: a valid
 *            subscription subject (wildcards allowed); queue: empty (none) or a valid literal
 *            token string. count is at most ROUTE_COUNT_MAX.
 *   MSG (2)       body = flags u8 | to string | subject string | reply string | nq varint |
 *                        nq × queue string | hdr string | data (the rest of the body)
 *            flags: bit 0 set: the receiver delivers to its plain subscribers of `to`; no other
 *            bit. Each listed queue group (non-empty, distinct names) gets the message at one
 *            of the receiver's members. to: the literal subject matched against subscriptions;
 *            subject: the subject shown to subscribers, empty when it is `to` (and never equal
 *            to it: one encoding per message; they differ for a consumer's deliveries); reply:
 * empty for none. nq is at most ROUTE_QUEUES_MAX.
 *   URL (3)       body = url string
 *            the sender's client URL (host:port), sent when a link comes up: what the
 *            receiver's clients get in INFO's connect_urls while the link is up. 1 to
 *            ROUTE_URL_MAX bytes of visible ASCII (no space or control character).
 *
 * Decoding is strict and never reads outside the bytes given: a short frame, an unknown magic,
 * version, type or flag, a checksum that does not match, a length past the end, a
 * non-canonical varint, an invalid subject or queue name, an empty INTEREST, or bytes left over
 * where none may be, all fail with -1 before anything is applied.
 */
#ifndef SRV_ROUTE_WIRE_H
#define SRV_ROUTE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define RW_HDR 12
#define RW_INTEREST 1
#define RW_MSG 2
#define RW_URL 3
#define ROUTE_URL_MAX 255   /* longest client URL a server advertises */
#define RW_PLAIN 1u         /* MSG flag: the receiver's plain subscribers get it */
#define ROUTE_NAME_MAX 4096 /* longest subject, reply or queue name carried */
#define ROUTE_COUNT_MAX 1000000000u
#define ROUTE_QUEUES_MAX 64 /* queue groups one MSG names */

typedef struct rw_str {
    const char *p; /* not NUL-terminated */
    size_t len;
} rw_str;

typedef struct rw_op {
    uint32_t count;
    rw_str subject, queue; /* queue.len 0: none */
} rw_op;

typedef struct rw_msg {
    unsigned flags;
    rw_str to, subject, reply;
    size_t nq;
    rw_str queues[ROUTE_QUEUES_MAX];
    const uint8_t *hdr;
    size_t hdr_len;
    const uint8_t *data;
    size_t len;
} rw_msg;

/* 1 if the frame is a route frame (starts with the route magic), else 0: it is the node's. */
int rw_is_route(const uint8_t *f, size_t len);

/* Checks a route frame's header and checksum: 0 and *type, else -1. */
int rw_open(const uint8_t *f, size_t len, int *type);

/* Iterates the ops of a checked INTEREST frame: *off starts at 0. Returns 1 with *op (pointing
 * into f), 0 at the end, -1 if the next op is malformed. */
int rw_interest_next(const uint8_t *f, size_t len, size_t *off, rw_op *op);
/* Checks every op of an INTEREST frame (at least one): 0 or -1. */
int rw_interest_check(const uint8_t *f, size_t len);

/* Decodes a checked MSG frame into m (pointing into f): 0 or -1. */
int rw_msg_decode(const uint8_t *f, size_t len, rw_msg *m);
/* Decodes a checked URL frame into *url (pointing into f): 0 or -1. */
int rw_url_decode(const uint8_t *f, size_t len, rw_str *url);

/* An INTEREST frame under construction: ops are appended, then rw_build_finish writes the
 * header and checksum. The buffer grows as needed (free with rw_build_free). */
typedef struct rw_build {
    uint8_t *buf;
    size_t len, cap;
    size_t nops;
} rw_build;

void rw_build_init(rw_build *b);
void rw_build_free(rw_build *b);
/* Starts a frame of `type` (drops what the builder held). 0 or -1 (out of memory). */
int rw_build_start(rw_build *b, int type);
/* Appends an INTEREST op; queue NULL or "" for none. 0 or -1 (out of memory, name too long). */
int rw_build_op(rw_build *b, const char *subject, const char *queue, uint32_t count);
/* Writes the checksum: the frame is b->buf, b->len bytes. */
void rw_build_finish(rw_build *b);
/* Builds a whole URL frame in b. 0, or -1 (out of memory, or not a valid URL as URL says). */
int rw_build_url(rw_build *b, const char *url);
/* Writes the check field of the len-byte frame f whose bytes [0, 4) and body are in place (any
 * of them, for a test that makes frames a builder would refuse). len is at least RW_HDR. */
void rw_seal(uint8_t *f, size_t len);

/* The head of a MSG frame (everything before hdr's bytes), for an iovec with hdr and data
 * after it: writes into out (cap bytes, at least rw_msg_head_bound) and *out_len. The check
 * field covers hdr and data too. reply/subject NULL or "" for none. -1 if a name is longer
 * than ROUTE_NAME_MAX or there are more than ROUTE_QUEUES_MAX queues. */
size_t rw_msg_head_bound(const char *to, const char *subject, const char *reply,
                         const char *const *queues, size_t nq);
int rw_msg_head(uint8_t *out, size_t cap, size_t *out_len, unsigned flags, const char *to,
                const char *subject, const char *reply, const char *const *queues, size_t nq,
                const void *hdr, size_t hdr_len, const void *data, size_t len);

/* 1 if s (len bytes, no NUL needed) is a valid subject: as subject_valid (sublist.h). */
int rw_subject_valid(const char *s, size_t len, int literal);

#endif
