#include "buf.h"

#include "alloc.h"

void jr__buf_init(jr__buf *b, const jr_allocator *a)
{
    memset(b, 0, sizeof *b);
    b->alloc = a;
}

void jr__buf_free(jr__buf *b)
{
    jr__free(b->alloc, b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void jr__buf_release(jr__buf *b, size_t keep)
{
    jr__buf_reset(b);
    if (b->cap > keep) jr__buf_free(b);
}

int jr__buf_reserve(jr__buf *b, size_t n)
{
    if (b->err) return b->err;
    if (n <= b->cap - b->len) return 0;
    if (n > SIZE_MAX / 2 - b->len) return b->err = JR_ENOMEM;
    size_t cap = b->cap ? b->cap : 64;
    while (cap - b->len < n) cap *= 2;
    uint8_t *d = jr__realloc(b->alloc, b->data, cap);
    if (!d) return b->err = JR_ENOMEM;
    b->data = d;
    b->cap = cap;
    return 0;
}

void jr__buf_put(jr__buf *b, const void *p, size_t n)
{
    if (n == 0 || jr__buf_reserve(b, n)) return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void jr__buf_u8(jr__buf *b, uint8_t v)
{
    jr__buf_put(b, &v, 1);
}

void jr__buf_u16(jr__buf *b, uint16_t v)
{
    uint8_t t[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    jr__buf_put(b, t, 2);
}

void jr__buf_u32(jr__buf *b, uint32_t v)
{
    uint8_t t[4];
    jr__put_u32(t, v);
    jr__buf_put(b, t, 4);
}

void jr__buf_u64(jr__buf *b, uint64_t v)
{
    uint8_t t[8];
    jr__put_u64(t, v);
    jr__buf_put(b, t, 8);
}

void jr__buf_varint(jr__buf *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (uint8_t)v;
    jr__buf_put(b, t, n);
}

void jr__buf_bytes(jr__buf *b, const void *p, size_t n)
{
    jr__buf_varint(b, n);
    jr__buf_put(b, p, n);
}

uint16_t jr__rd_u16(jr__rd *r)
{
    const uint8_t *p = jr__rd_take(r, 2);
    return p ? (uint16_t)(p[0] | p[1] << 8) : 0;
}

uint32_t jr__rd_u32(jr__rd *r)
{
    const uint8_t *p = jr__rd_take(r, 4);
    return p ? jr__get_u32(p) : 0;
}

uint64_t jr__rd_varint_long(jr__rd *r)
{
    if (r->err) return 0;
    const uint8_t *p = r->p;
    uint64_t v = 0;
    /* walks the bytes in place (no bounds check per byte beyond p < end): records carry many
     * multi-byte varints (timestamps, sequences) and every replica decodes each of them */
    for (unsigned shift = 0; shift < 70 && p < r->end; shift += 7) {
        uint8_t c = *p++;
        if (shift == 63 && c > 1) break; /* overflows 64 bits */
        if (shift > 0 && c == 0) break;  /* overlong: trailing zero group */
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            r->p = p;
            return v;
        }
    }
    jr__rd_fail(r);
    return 0;
}
