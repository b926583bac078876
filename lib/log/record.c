/* record — encoding and strict decoding of WAL records (format in record.h). */
#include "log/record.h"

#include <string.h>

#include "util/checksum.h"

static uint16_t header_sum(const uint8_t *h)
{
    return (uint16_t)jr__xxh3_2(h + 8, 6, h + 16, 16);
}

uint8_t *jr__rec_put_begin(jr__buf *b, uint8_t type, uint8_t etype, uint64_t group, uint64_t gseq,
                           size_t len)
{
    if (len > JR__REC_MAX_LEN) {
        b->err = JR_EMSGSIZE;
        return NULL;
    }
    if (jr__buf_reserve(b, JR__REC_HDR + len)) return NULL;
    uint8_t *h = b->data + b->len;
    jr__put_u32(h + 8, (uint32_t)len);
    h[12] = type;
    h[13] = etype;
    jr__put_u64(h + 16, group);
    jr__put_u64(h + 24, gseq);
    uint16_t hs = header_sum(h);
    h[14] = (uint8_t)hs;
    h[15] = (uint8_t)(hs >> 8);
    return h + JR__REC_HDR;
}

void jr__rec_put_end(jr__buf *b)
{
    uint8_t *h = b->data + b->len;
    size_t len = jr__get_u32(h + 8);
    jr__put_u64(h, jr__xxh3(h + 8, JR__REC_HDR - 8 + len));
    b->len += JR__REC_HDR + len;
}

void jr__rec_put(jr__buf *b, uint8_t type, uint8_t etype, uint64_t group, uint64_t gseq,
                 const void *p1, size_t n1, const void *p2, size_t n2)
{
    if (n1 > JR__REC_MAX_LEN || n2 > JR__REC_MAX_LEN) { /* n1 + n2 cannot wrap below */
        b->err = JR_EMSGSIZE;
        return;
    }
    uint8_t *p = jr__rec_put_begin(b, type, etype, group, gseq, n1 + n2);
    if (!p) return;
    if (n1) memcpy(p, p1, n1);
    if (n2) memcpy(p + n1, p2, n2);
    jr__rec_put_end(b);
}

void jr__rec_put_entry(jr__buf *b, uint64_t group, uint64_t gseq, const jr__entry *e)
{
    uint8_t p[16];
    jr__put_u64(p, e->term);
    jr__put_u64(p + 8, e->index);
    jr__rec_put(b, JR__REC_ENTRY, e->type, group, gseq, p, 16, e->data, e->len);
}

void jr__rec_put_hardstate(jr__buf *b, uint64_t group, uint64_t gseq, const jr__hardstate *hs)
{
    uint8_t p[24];
    jr__put_u64(p, hs->term);
    jr__put_u64(p + 8, hs->vote);
    jr__put_u64(p + 16, hs->commit);
    jr__rec_put(b, JR__REC_HARDSTATE, 0, group, gseq, p, 24, NULL, 0);
}

void jr__rec_put_compact(jr__buf *b, uint64_t group, uint64_t gseq, uint64_t index, uint64_t term)
{
    uint8_t p[16];
    jr__put_u64(p, index);
    jr__put_u64(p + 8, term);
    jr__rec_put(b, JR__REC_COMPACT, 0, group, gseq, p, 16, NULL, 0);
}

void jr__rec_put_drop(jr__buf *b, uint64_t group, uint64_t gseq)
{
    jr__rec_put(b, JR__REC_DROP, 0, group, gseq, NULL, 0, NULL, 0);
}

void jr__rec_put_truncate(jr__buf *b, uint64_t group, uint64_t gseq, uint64_t from)
{
    uint8_t p[8];
    jr__put_u64(p, from);
    jr__rec_put(b, JR__REC_TRUNCATE, 0, group, gseq, p, 8, NULL, 0);
}

static void put_item(uint8_t *p, const jr__rec_cpitem *it)
{
    jr__put_u64(p, it->group);
    jr__put_u64(p + 8, it->gseq);
    jr__put_u64(p + 16, it->last_index);
    jr__put_u64(p + 24, it->hs.term);
    jr__put_u64(p + 32, it->hs.vote);
    jr__put_u64(p + 40, it->hs.commit);
    jr__put_u64(p + 48, it->cindex);
    jr__put_u64(p + 56, it->cterm);
    jr__put_u32(p + 64, it->flags);
}

void jr__rec_put_checkpoint(jr__buf *b, const jr__rec_cpitem *items, uint32_t n)
{
    size_t len = 4 + (size_t)n * JR__REC_CPITEM;
    if (len > JR__REC_MAX_LEN) {
        b->err = JR_EMSGSIZE;
        return;
    }
    /* build the payload in place after the header, then seal it */
    if (jr__buf_reserve(b, JR__REC_HDR + len)) return;
    size_t at = b->len;
    uint8_t *h = b->data + at;
    jr__put_u32(h + JR__REC_HDR, n);
    for (uint32_t i = 0; i < n; i++)
        put_item(h + JR__REC_HDR + 4 + (size_t)i * JR__REC_CPITEM, &items[i]);
    jr__put_u32(h + 8, (uint32_t)len);
    h[12] = JR__REC_CHECKPOINT;
    h[13] = 0;
    jr__put_u64(h + 16, 0);
    jr__put_u64(h + 24, 0);
    uint16_t hs = header_sum(h);
    h[14] = (uint8_t)hs;
    h[15] = (uint8_t)(hs >> 8);
    jr__put_u64(h, jr__xxh3(h + 8, JR__REC_HDR - 8 + len));
    b->len += JR__REC_HDR + len;
}

int jr__rec_header_ok(const uint8_t *p, uint64_t avail, uint64_t *group, uint64_t *total)
{
    if (avail < JR__REC_HDR) return 0;
    uint16_t hs = (uint16_t)(p[14] | p[15] << 8);
    if (hs != header_sum(p)) return 0;
    uint32_t len = jr__get_u32(p + 8);
    uint8_t type = p[12];
    uint64_t g = jr__get_u64(p + 16);
    uint64_t gseq = jr__get_u64(p + 24);
    if (type < JR__REC_ENTRY || type > JR__REC_TYPE_MAX) return 0;
    if (type != JR__REC_ENTRY && type != JR__REC_SEALED && p[13] != 0) return 0;
    if (type == JR__REC_CHECKPOINT ? (g != 0 || gseq != 0) : (g == 0 || gseq == 0)) return 0;
    if (len > JR__REC_MAX_LEN || len > avail - JR__REC_HDR) return 0;
    *group = g;
    *total = JR__REC_HDR + (uint64_t)len;
    return 1;
}

int jr__rec_decode(const uint8_t *p, uint64_t avail, jr__rec *r)
{
    uint64_t group, total;
    if (!jr__rec_header_ok(p, avail, &group, &total)) return JR_ECORRUPT;
    if (jr__get_u64(p) != jr__xxh3(p + 8, (size_t)total - 8)) return JR_ECORRUPT;
    memset(r, 0, sizeof *r);
    r->len = jr__get_u32(p + 8);
    r->type = p[12];
    r->etype = p[13];
    r->group = group;
    r->gseq = jr__get_u64(p + 24);
    r->payload = p + JR__REC_HDR;
    const uint8_t *q = r->payload;
    switch (r->type) {
    case JR__REC_ENTRY:
        if (r->len < 16) return JR_ECORRUPT;
        if (r->etype > JR__ENTRY_CONFIG) return JR_ECORRUPT;
        r->e.term = jr__get_u64(q);
        r->e.index = jr__get_u64(q + 8);
        r->e.type = r->etype;
        r->e.len = r->len - 16;
        r->e.data = q + 16;
        if (r->e.index == 0) return JR_ECORRUPT;
        return 0;
    case JR__REC_SEALED:
        /* an entry whose data is encrypted (atrest.h): decoded as one, data left sealed */
        if (r->len < 16 + JR__REC_SEALED_OVERHEAD) return JR_ECORRUPT;
        if (r->etype > JR__ENTRY_CONFIG) return JR_ECORRUPT;
        r->type = JR__REC_ENTRY;
        r->sealed = 1;
        r->e.term = jr__get_u64(q);
        r->e.index = jr__get_u64(q + 8);
        r->e.type = r->etype;
        r->e.len = r->len - 16 - JR__REC_SEALED_OVERHEAD;
        r->e.data = q + 16 + 24;
        if (r->e.index == 0) return JR_ECORRUPT;
        return 0;
    case JR__REC_HARDSTATE:
        if (r->len != 24) return JR_ECORRUPT;
        r->hs.term = jr__get_u64(q);
        r->hs.vote = jr__get_u64(q + 8);
        r->hs.commit = jr__get_u64(q + 16);
        return 0;
    case JR__REC_COMPACT:
        if (r->len != 16) return JR_ECORRUPT;
        r->cindex = jr__get_u64(q);
        r->cterm = jr__get_u64(q + 8);
        if (r->cindex == 0) return JR_ECORRUPT;
        return 0;
    case JR__REC_DROP:
        return r->len == 0 ? 0 : JR_ECORRUPT;
    case JR__REC_TRUNCATE:
        if (r->len != 8) return JR_ECORRUPT;
        r->tfrom = jr__get_u64(q);
        return r->tfrom == 0 ? JR_ECORRUPT : 0;
    case JR__REC_CHECKPOINT:
        if (r->len < 4) return JR_ECORRUPT;
        r->ncp = jr__get_u32(q);
        if ((uint64_t)r->ncp * JR__REC_CPITEM + 4 != r->len) return JR_ECORRUPT;
        for (uint32_t i = 0; i < r->ncp; i++) {
            const uint8_t *it = q + 4 + (size_t)i * JR__REC_CPITEM;
            if (jr__get_u64(it) == 0 || (jr__get_u32(it + 64) & ~7u)) return JR_ECORRUPT;
        }
        return 0;
    default:
        return JR_ECORRUPT;
    }
}

void jr__rec_cpitem_at(const jr__rec *r, uint32_t i, jr__rec_cpitem *out)
{
    const uint8_t *it = r->payload + 4 + (size_t)i * JR__REC_CPITEM;
    out->group = jr__get_u64(it);
    out->gseq = jr__get_u64(it + 8);
    out->last_index = jr__get_u64(it + 16);
    out->hs.term = jr__get_u64(it + 24);
    out->hs.vote = jr__get_u64(it + 32);
    out->hs.commit = jr__get_u64(it + 40);
    out->cindex = jr__get_u64(it + 48);
    out->cterm = jr__get_u64(it + 56);
    out->flags = jr__get_u32(it + 64);
}
