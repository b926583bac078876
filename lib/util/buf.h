/*
 * buf — byte buffers for encoding, and a bounds-checked reader for decoding.
 *
 * jr__buf is a growable byte vector that owns its memory (through a jr_allocator). Writers
 * record the first allocation failure in `err` and turn every later write into a no-op, so an
 * encoder checks once at the end.
 *
 * jr__rd reads from borrowed bytes and never reads past `end`: every read checks the remaining
 * length first, and the first failure sets `err` (JR_ECORRUPT) and makes every later read return
 * zero. A decoder reads all fields, then checks rd.err once. Integers are little-endian;
 * varints are unsigned LEB128 of at most 10 bytes, with overlong or overflowing encodings
 * rejected.
 */
#ifndef JR_UTIL_BUF_H
#define JR_UTIL_BUF_H

#include <stdint.h>
#include <string.h>

#include "jetraft.h"

typedef struct jr__buf {
    uint8_t *data;
    size_t len;
    size_t cap;
    int err; /* 0 or the first error (JR_ENOMEM) */
    const jr_allocator *alloc;
} jr__buf;

void jr__buf_init(jr__buf *b, const jr_allocator *a);
void jr__buf_free(jr__buf *b);
/* Empties b, and frees its memory if its capacity is over keep bytes: a long-lived scratch
 * buffer does not hold on to the largest thing it ever built. */
void jr__buf_release(jr__buf *b, size_t keep);
/* What the node's long-lived scratch buffers keep between uses. */
#define JR__SCRATCH_KEEP ((size_t)64 * 1024)
/* Ensures room for n more bytes; returns 0 or JR_ENOMEM (also recorded in b->err). */
int jr__buf_reserve(jr__buf *b, size_t n);
static inline void jr__buf_reset(jr__buf *b)
{
    b->len = 0;
    b->err = 0;
}
void jr__buf_put(jr__buf *b, const void *p, size_t n);
void jr__buf_u8(jr__buf *b, uint8_t v);
void jr__buf_u16(jr__buf *b, uint16_t v);
void jr__buf_u32(jr__buf *b, uint32_t v);
void jr__buf_u64(jr__buf *b, uint64_t v);
void jr__buf_varint(jr__buf *b, uint64_t v);
/* varint length followed by the bytes */
void jr__buf_bytes(jr__buf *b, const void *p, size_t n);
/* The same for a NUL-terminated string (NULL is ""). */
static inline void jr__buf_str(jr__buf *b, const char *s)
{
    jr__buf_bytes(b, s ? s : "", s ? strlen(s) : 0);
}
/* Signed values as zigzag varints: 0, -1, 1, -2 ... become 0, 1, 2, 3 ... */
static inline uint64_t jr__zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t jr__unzigzag(uint64_t u)
{
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* Fixed-width little-endian stores/loads into raw memory (the caller checked the bounds). */
static inline void jr__put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void jr__put_u64(uint8_t *p, uint64_t v)
{
    jr__put_u32(p, (uint32_t)v);
    jr__put_u32(p + 4, (uint32_t)(v >> 32));
}
static inline uint32_t jr__get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t jr__get_u64(const uint8_t *p)
{
    return (uint64_t)jr__get_u32(p) | (uint64_t)jr__get_u32(p + 4) << 32;
}
/* Number of bytes jr__buf_varint writes for v. */
static inline size_t jr__varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

typedef struct jr__rd {
    const uint8_t *p;
    const uint8_t *end;
    int err; /* 0 or JR_ECORRUPT */
} jr__rd;

static inline void jr__rd_init(jr__rd *r, const void *p, size_t n)
{
    r->p = (const uint8_t *)p;
    r->end = r->p + n;
    r->err = 0;
}
static inline size_t jr__rd_left(const jr__rd *r)
{
    return (size_t)(r->end - r->p);
}
/* Marks the reader failed (e.g. a semantic check failed); returns JR_ECORRUPT. */
static inline int jr__rd_fail(jr__rd *r)
{
    r->err = JR_ECORRUPT;
    r->p = r->end;
    return JR_ECORRUPT;
}
/* Returns a pointer to the next n bytes (borrowed) and advances, or NULL on short input.
 * (The readers are inline: every message and record of the data path is decoded with them.) */
static inline const uint8_t *jr__rd_take(jr__rd *r, size_t n)
{
    if (r->err || jr__rd_left(r) < n) {
        jr__rd_fail(r);
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}
static inline uint8_t jr__rd_u8(jr__rd *r)
{
    const uint8_t *p = jr__rd_take(r, 1);
    return p ? p[0] : 0;
}
uint16_t jr__rd_u16(jr__rd *r);
uint32_t jr__rd_u32(jr__rd *r);
static inline uint64_t jr__rd_u64(jr__rd *r)
{
    const uint8_t *p = jr__rd_take(r, 8);
    return p ? jr__get_u64(p) : 0;
}
/* A varint of more than one byte (jr__rd_varint's slow path). */
uint64_t jr__rd_varint_long(jr__rd *r);
static inline uint64_t jr__rd_varint(jr__rd *r)
{
    if (!r->err && r->p < r->end && *r->p < 0x80) return *r->p++;
    return jr__rd_varint_long(r);
}
/* Reads a varint length then that many bytes; *n gets the length. At most max bytes. */
static inline const uint8_t *jr__rd_bytes(jr__rd *r, size_t *n, size_t max)
{
    uint64_t len = jr__rd_varint(r);
    if (r->err || len > max || len > jr__rd_left(r)) {
        jr__rd_fail(r);
        *n = 0;
        return NULL;
    }
    *n = (size_t)len;
    return jr__rd_take(r, (size_t)len);
}

/* Reads a list's count; every item takes at least min_item bytes of what is left, which bounds
 * the count (a count no input could hold fails r and is 0). */
static inline size_t jr__rd_count(jr__rd *r, size_t min_item)
{
    uint64_t n = jr__rd_varint(r);
    if (n > jr__rd_left(r) / min_item) {
        jr__rd_fail(r);
        return 0;
    }
    return (size_t)n;
}

#endif
