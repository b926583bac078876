/*
 * op.c — encoding and strict decoding of consumer log entries (op.h).
 */
#include <string.h>

#include "consumer/op.h"
#include "util/checksum.h"

/* Which fields each type carries. */
enum { F_DSEQ = 1, F_SSEQ = 2, F_DC = 4, F_TS = 8, F_DELAY = 16 };

static unsigned fields_of(int type)
{
    switch (type) {
    case JR__COP_DELIVERED:
        return F_DSEQ | F_SSEQ | F_DC | F_TS;
    case JR__COP_ACK:
        return F_DSEQ | F_SSEQ | F_TS;
    case JR__COP_NAK:
        return F_SSEQ | F_DELAY | F_TS;
    case JR__COP_PROGRESS:
    case JR__COP_TERM:
        return F_SSEQ | F_TS;
    case JR__COP_SKIP:
    case JR__COP_RESET:
    case JR__COP_MAXDELIV:
        return F_SSEQ;
    default:
        return 0;
    }
}

/* The field checks shared by the encoder (refuse) and the decoder (reject). */
static int check_fields(const jr__crec *r, unsigned f)
{
    if (!(f & F_DSEQ) && r->dseq) return JR_EINVAL;
    if (!(f & F_DC) && r->dc) return JR_EINVAL;
    if (!(f & F_TS) && r->ts) return JR_EINVAL;
    if (!(f & F_DELAY) && r->delay_ns) return JR_EINVAL;
    if (r->sseq == 0) return JR_EINVAL; /* every type names a stream sequence */
    if (r->type == JR__COP_DELIVERED && (r->dseq == 0 || r->dc == 0)) return JR_EINVAL;
    if (r->delay_ns < 0) return JR_EINVAL;
    return 0;
}

int jr__crec_check(const jr__crec *r)
{
    if (!r) return JR_EINVAL;
    unsigned f = fields_of(r->type);
    if (!f) return JR_EINVAL;
    return check_fields(r, f);
}

static size_t rec_len(const jr__crec *r)
{
    unsigned f = fields_of(r->type);
    size_t n = 1 + jr__varint_len(r->sseq);
    if (f & F_DSEQ) n += jr__varint_len(r->dseq);
    if (f & F_DC) n += jr__varint_len(r->dc);
    if (f & F_DELAY) n += jr__varint_len((uint64_t)r->delay_ns);
    if (f & F_TS) n += jr__varint_len(r->ts);
    return n;
}

static void put_rec(jr__buf *b, const jr__crec *r)
{
    unsigned f = fields_of(r->type);
    jr__buf_u8(b, r->type);
    if (f & F_DSEQ) jr__buf_varint(b, r->dseq);
    jr__buf_varint(b, r->sseq);
    if (f & F_DC) jr__buf_varint(b, r->dc);
    if (f & F_DELAY) jr__buf_varint(b, (uint64_t)r->delay_ns);
    if (f & F_TS) jr__buf_varint(b, r->ts);
}

int jr__cop_encode(const jr__crec *recs, size_t n, jr__buf *out)
{
    if (!recs || n < 1 || n > JR__COP_BATCH_MAX) return JR_EINVAL;
    size_t len = 1 + jr__varint_len(n) + 8;
    for (size_t i = 0; i < n; i++) {
        if (jr__crec_check(&recs[i])) return JR_EINVAL;
        len += rec_len(&recs[i]);
    }
    if (jr__buf_reserve(out, len)) return out->err; /* the exact size: one reservation */
    size_t start = out->len;
    jr__buf_u8(out, JR__COP_VERSION);
    jr__buf_varint(out, n);
    for (size_t i = 0; i < n; i++) put_rec(out, &recs[i]);
    if (out->err) return out->err;
    jr__buf_u64(out, jr__xxh3(out->data + start, out->len - start));
    return out->err;
}

/* Reads one record; with check, validates it (newer set for a type of a later release). The
 * reader fails on anything malformed. */
static void get_rec(jr__rd *rd, jr__crec *r, int check, int *newer)
{
    memset(r, 0, sizeof *r);
    r->type = jr__rd_u8(rd);
    unsigned f = fields_of(r->type);
    if (!f) {
        if (!rd->err && newer && r->type > JR__COP_TYPE_LAST) *newer = 1;
        jr__rd_fail(rd);
        return;
    }
    if (f & F_DSEQ) r->dseq = jr__rd_varint(rd);
    r->sseq = jr__rd_varint(rd);
    if (f & F_DC) {
        uint64_t dc = jr__rd_varint(rd);
        if (dc > UINT32_MAX) jr__rd_fail(rd);
        r->dc = (uint32_t)dc;
    }
    if (f & F_DELAY) {
        uint64_t d = jr__rd_varint(rd);
        if (d > (uint64_t)INT64_MAX) jr__rd_fail(rd);
        r->delay_ns = (int64_t)d;
    }
    if (f & F_TS) r->ts = jr__rd_varint(rd);
    if (!rd->err && check && check_fields(r, f)) jr__rd_fail(rd);
}

int jr__cop_iter_init(jr__cop_iter *it, const void *data, size_t len)
{
    memset(it, 0, sizeof *it);
    jr__rd_init(&it->rd, data, 0);
    if (!data || len < 1 + 1 + 8) return JR_ECORRUPT;
    const uint8_t *p = (const uint8_t *)data;
    if (jr__get_u64(p + len - 8) != jr__xxh3(p, len - 8)) return JR_ECORRUPT;
    if (p[0] != JR__COP_VERSION) return JR_EVERSION;
    jr__rd rd;
    jr__rd_init(&rd, p + 1, len - 9);
    uint64_t count = jr__rd_varint(&rd);
    if (rd.err || count < 1 || count > JR__COP_BATCH_MAX) return JR_ECORRUPT;
    const uint8_t *first = rd.p;
    int newer = 0;
    uint32_t firsts = 0;
    for (uint64_t i = 0; i < count && !rd.err; i++) {
        jr__crec r;
        get_rec(&rd, &r, 1, &newer);
        firsts += r.type == JR__COP_DELIVERED && r.dc == 1;
    }
    if (newer) return JR_EVERSION;
    if (rd.err || jr__rd_left(&rd)) return JR_ECORRUPT;
    jr__rd_init(&it->rd, first, (size_t)(rd.end - first));
    it->left = (uint32_t)count;
    it->firsts = firsts;
    return 0;
}

int jr__cop_next(jr__cop_iter *it, jr__crec *rec, int *got)
{
    *got = 0;
    if (it->left == 0) return 0;
    get_rec(&it->rd, rec, 1, NULL);
    if (it->rd.err) {
        it->left = 0;
        return JR_ECORRUPT;
    }
    it->left--;
    *got = 1;
    return 0;
}
