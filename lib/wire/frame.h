/*
 * frame — the peer wire format: one frame carries many groups' Raft messages from one node to
 * another (ARCHITECTURE §3, §4).
 *
 * A frame is a fixed header followed by a body of messages:
 *   header: magic "JR" (2) | version u8 | flags u8 | body length u32 | from id u64 | to id u64 |
 *           xxh3-64 of header bytes 0..24 and the body (u64)            (all little-endian)
 *   body:   a sequence of messages, each: type u8 | flags u8 | varint fields (see frame.c)
 * Entries inside an APPEND are decoded without copying: their data points into the frame.
 *
 * Decoding is strict and total: jr__frame_open() checks magic, version, lengths against the
 * limit, and the checksum; jr__frame_next() bounds-checks every field and rejects unknown types,
 * overlong varints, counts that cannot fit the remaining bytes, and trailing garbage. Callers
 * validate a whole frame (jr__frame_validate) before acting on any of it.
 */
#ifndef JR_WIRE_FRAME_H
#define JR_WIRE_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "raft/raft.h"
#include "util/buf.h"

#define JR__FRAME_VERSION 1
#define JR__FRAME_HEADER 32

/* Encoding. A frame under construction lives in a jr__buf. */
void jr__frame_begin(jr__buf *b, jr__id from, jr__id to);
/* Appends one message. */
void jr__frame_add(jr__buf *b, const jr__msg *m);
/* Fills in the length and checksum. Returns 0, or b->err. */
int jr__frame_end(jr__buf *b);
/* Encoded size of m in a frame body (exact). */
size_t jr__frame_msg_len(const jr__msg *m);

/* Decoding. */
typedef struct jr__frame {
    jr__id from;
    jr__id to;
    uint8_t flags;
    jr__rd body;
} jr__frame;

/* Checks the header and checksum; JR_ECORRUPT, JR_EVERSION, JR_EMSGSIZE (len > max). */
int jr__frame_open(jr__frame *f, const void *data, size_t len, size_t max);
/* Decodes the next message into *m; entries go to scratch (capacity cap; an APPEND with more
 * entries than cap is JR_EMSGSIZE). Returns 1 for a message, 0 at the end of the body, or a
 * negative error. */
int jr__frame_next(jr__frame *f, jr__msg *m, jr__entry *scratch, size_t cap);
/* Walks the whole frame without acting on it; 0 if every message decodes. */
int jr__frame_validate(const void *data, size_t len, size_t max, size_t scratch_cap);

#endif
