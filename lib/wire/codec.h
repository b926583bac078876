/*
 * codec — private helpers shared by the files of lib/wire (not for other layers).
 *
 * Raw writers store into memory the caller has already reserved (jr__buf_reserve with an upper
 * bound), so an encoder reserves once per message instead of once per field. Readers go through
 * jr__rd and inherit its guarantees (never past the end, canonical varints, sticky failure);
 * the one-byte varint case is inlined because most indexes, terms and lengths on the hot path
 * are deltas or small.
 */
#ifndef JR_WIRE_CODEC_H
#define JR_WIRE_CODEC_H

#include "wire/frame.h"

/* Upper bound of a varint. */
#define JR__VARINT_MAX 10

/* Header field offsets. */
#define JR__FH_MAGIC 0
#define JR__FH_VERSION 2
#define JR__FH_FLAGS 3
#define JR__FH_LEN 4
#define JR__FH_FROM 8
#define JR__FH_TO 16
#define JR__FH_CHECK 24 /* also the number of header bytes the checksum covers */

#define JR__MF_ALL (JR__MF_PREVOTE | JR__MF_TRANSFER | JR__MF_DURABLE)

static inline uint8_t *jr__wput_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *jr__wput_bytes(uint8_t *p, const void *d, size_t n)
{
    p = jr__wput_varint(p, n);
    if (n) memcpy(p, d, n);
    return p + n;
}

static inline uint64_t jr__wget_varint(jr__rd *r)
{
    if (r->p < r->end && *r->p < 0x80) return *r->p++;
    return jr__rd_varint(r);
}

static inline uint8_t jr__wget_u8(jr__rd *r)
{
    if (r->p < r->end) return *r->p++;
    jr__rd_fail(r);
    return 0;
}

/* A boolean byte: 0 or 1, anything else fails the reader. */
static inline uint8_t jr__wget_bool(jr__rd *r)
{
    uint8_t v = jr__wget_u8(r);
    if (v > 1) jr__rd_fail(r);
    return v;
}

/* Internal cross-file functions (frame.c, msg.c, hb.c, rpc.c, fsm.c). -------------------------*/

/* Writes the length field and the checksum of the frame whose header is at h. */
void jr__wire_finish(uint8_t *h, size_t body_len);
/* Header checks that do not depend on the frame's integrity: JR_ECORRUPT (short, bad magic),
 * JR_EVERSION, JR_EMSGSIZE (len or the length field above max). */
int jr__wire_hdr_basic(const uint8_t *d, size_t len, size_t max);
/* The rest (after jr__wire_hdr_basic): length field == len - header, known flags, valid ids,
 * checksum. Fills f's ids, flags, max_entry and clears f->hb. 0 or JR_ECORRUPT. */
int jr__wire_hdr_rest(jr__frame *f, const uint8_t *d, size_t len);

/* Checks m against the rules of jr__frame_add except the ids: 0 and *bound = an upper bound of
 * its encoded size (cheap: no varint lengths computed), or JR_EINVAL. */
int jr__wire_msg_check(const jr__msg *m, size_t *bound);
/* Writes m (valid, room reserved) at p; returns the end. */
uint8_t *jr__wire_msg_put(uint8_t *p, const jr__msg *m);
/* Decodes the payload of a Raft message whose type and flags were read into m. Entries go to
 * scratch (NULL: check only) with capacity cap. Returns 0, JR_ECORRUPT or JR_EMSGSIZE. */
int jr__wire_msg_get(jr__rd *r, jr__msg *m, jr__entry *scratch, size_t cap, uint32_t max_entry);
/* Decodes the payload of a node-level message of type `type` into v (items borrowed from r's
 * bytes). Returns 0 or JR_ECORRUPT. */
int jr__wire_hb_get(jr__rd *r, uint8_t type, jr__hb_view *v);
/* Decodes the payload of a NODE_REQUEST or NODE_RESPONSE (type) into v (payload borrowed from
 * r's bytes). Returns 0, JR_ECORRUPT, or JR_EMSGSIZE (payload longer than max). */
int jr__wire_rpc_get(jr__rd *r, uint8_t type, jr__rpc_view *v, uint32_t max);
/* Decodes the rest of an extension message (after its type and flags) into v. 0, JR_ECORRUPT,
 * or JR_EMSGSIZE (payload longer than max). */
int jr__wire_ext_get(jr__rd *r, jr__ext_view *v, uint32_t max);

#endif
