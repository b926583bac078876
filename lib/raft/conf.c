/*
 * conf — membership configurations: encoding, strict decoding, queries (raft.h).
 *
 * Wire/persisted form: varint n, then n × (u64 little-endian id, u8 voter). The same bytes are
 * the payload of CONFIG entries and the configuration carried by snapshots, so decoding is
 * strict: anything but the canonical form of a valid configuration is JR_ECORRUPT.
 */
#include <string.h>

#include "raft.h"
#include "util/buf.h"

size_t jr__conf_encoded_len(const jr__conf *c)
{
    return jr__varint_len(c->n) + (size_t)c->n * 9;
}

size_t jr__conf_encode(const jr__conf *c, uint8_t *out)
{
    size_t off = 0;
    uint64_t v = c->n;
    while (v >= 0x80) {
        out[off++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[off++] = (uint8_t)v;
    for (uint32_t i = 0; i < c->n; i++) {
        jr__put_u64(out + off, c->m[i].id);
        out[off + 8] = c->m[i].voter;
        off += 9;
    }
    return off;
}

int jr__conf_decode(jr__conf *c, const uint8_t *p, size_t n)
{
    jr__rd rd;
    jr__rd_init(&rd, p, n);
    uint64_t cnt = jr__rd_varint(&rd);
    if (rd.err || cnt > JR__MAX_MEMBERS || jr__rd_left(&rd) != cnt * 9) return JR_ECORRUPT;
    jr__conf tmp;
    tmp.n = 0;
    for (uint64_t i = 0; i < cnt; i++) {
        jr__id id = jr__rd_u64(&rd);
        uint8_t voter = jr__rd_u8(&rd);
        if (rd.err || id == 0 || voter > 1 || jr__conf_find(&tmp, id)) return JR_ECORRUPT;
        tmp.m[tmp.n].id = id;
        tmp.m[tmp.n].voter = voter;
        tmp.n++;
    }
    c->n = tmp.n;
    memcpy(c->m, tmp.m, tmp.n * sizeof tmp.m[0]);
    return 0;
}

const jr__member *jr__conf_find(const jr__conf *c, jr__id id)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (c->m[i].id == id) return &c->m[i];
    return NULL;
}

uint32_t jr__conf_voters(const jr__conf *c)
{
    uint32_t v = 0;
    for (uint32_t i = 0; i < c->n; i++) v += c->m[i].voter;
    return v;
}
