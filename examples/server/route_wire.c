/*
 * route_wire.c — encoding and strict decoding of route frames (see route_wire.h).
 */
#include "route_wire.h"

#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

static const uint8_t magic[2] = {'J', 'N'};
#define RW_VERSION 1

/* ---- decoding ----------------------------------------------------------------------------- */

typedef struct rd {
    const uint8_t *p, *end;
    int bad;
} rd;

static uint64_t rd_varint(rd *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->p >= r->end) break;
        uint8_t b = *r->p++;
        if (shift == 63 && b > 1) break; /* overflow */
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (shift && b == 0) break; /* a trailing zero group: not canonical */
            return v;
        }
    }
    r->bad = 1;
    return 0;
}

static uint8_t rd_u8(rd *r)
{
    if (r->p < r->end) return *r->p++;
    r->bad = 1;
    return 0;
}

static rw_str rd_str(rd *r)
{
    rw_str s = {NULL, 0};
    uint64_t n = rd_varint(r);
    if (r->bad || n > ROUTE_NAME_MAX || n > (uint64_t)(r->end - r->p)) {
        r->bad = 1;
        return s;
    }
    s.p = (const char *)r->p;
    s.len = (size_t)n;
    r->p += n;
    return s;
}

int rw_subject_valid(const char *s, size_t len, int literal)
{
    if (len == 0 || memchr(s, 0, len)) return 0;
    size_t t = 0;
    for (;;) {
        size_t e = t;
        while (e < len && s[e] != '.') {
            if (s[e] == ' ' || s[e] == '\t' || s[e] == '\r' || s[e] == '\n') return 0;
            e++;
        }
        size_t tl = e - t;
        if (tl == 0) return 0;
        for (size_t q = t; q < e; q++)
            if ((s[q] == '*' || s[q] == '>') && (literal || tl != 1)) return 0;
        if (tl == 1 && s[t] == '>' && e < len) return 0;
        if (e == len) return 1;
        t = e + 1;
        if (t == len) return 0; /* a trailing dot: an empty last token */
    }
}

int rw_is_route(const uint8_t *f, size_t len)
{
    return len >= 2 && f[0] == magic[0] && f[1] == magic[1];
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

int rw_open(const uint8_t *f, size_t len, int *type)
{
    if (len < RW_HDR || !rw_is_route(f, len) || f[2] != RW_VERSION) return -1;
    if (f[3] != RW_INTEREST && f[3] != RW_MSG && f[3] != RW_URL) return -1;
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, f, 4);
    XXH3_64bits_update(&st, f + RW_HDR, len - RW_HDR);
    if (XXH3_64bits_digest(&st) != get_u64(f + 4)) return -1;
    *type = f[3];
    return 0;
}

int rw_interest_next(const uint8_t *f, size_t len, size_t *off, rw_op *op)
{
    if (*off < RW_HDR) *off = RW_HDR;
    if (*off >= len) return 0;
    rd r = {f + *off, f + len, 0};
    uint64_t count = rd_varint(&r);
    op->subject = rd_str(&r);
    op->queue = rd_str(&r);
    if (r.bad || count > ROUTE_COUNT_MAX || !rw_subject_valid(op->subject.p, op->subject.len, 0) ||
        (op->queue.len && !rw_subject_valid(op->queue.p, op->queue.len, 1)))
        return -1;
    op->count = (uint32_t)count;
    *off = (size_t)(r.p - f);
    return 1;
}

int rw_interest_check(const uint8_t *f, size_t len)
{
    size_t off = 0;
    rw_op op;
    int rc, n = 0;
    while ((rc = rw_interest_next(f, len, &off, &op)) == 1) n++;
    return rc == 0 && n > 0 ? 0 : -1;
}

int rw_msg_decode(const uint8_t *f, size_t len, rw_msg *m)
{
    if (len < RW_HDR) return -1;
    rd r = {f + RW_HDR, f + len, 0};
    m->flags = rd_u8(&r);
    m->to = rd_str(&r);
    m->subject = rd_str(&r);
    m->reply = rd_str(&r);
    uint64_t nq = rd_varint(&r);
    if (r.bad || (m->flags & ~RW_PLAIN) || nq > ROUTE_QUEUES_MAX) return -1;
    if (!rw_subject_valid(m->to.p, m->to.len, 1)) return -1;
    if (m->subject.len && !rw_subject_valid(m->subject.p, m->subject.len, 1)) return -1;
    if (m->subject.len == m->to.len && !memcmp(m->subject.p, m->to.p, m->to.len))
        return -1; /* the same subject is sent empty: one encoding per message */
    if (m->reply.len && !rw_subject_valid(m->reply.p, m->reply.len, 1)) return -1;
    m->nq = (size_t)nq;
    for (size_t i = 0; i < m->nq; i++) {
        m->queues[i] = rd_str(&r);
        if (r.bad || !rw_subject_valid(m->queues[i].p, m->queues[i].len, 1)) return -1;
        for (size_t j = 0; j < i; j++)
            if (m->queues[j].len == m->queues[i].len &&
                !memcmp(m->queues[j].p, m->queues[i].p, m->queues[i].len))
                return -1;
    }
    uint64_t hl = rd_varint(&r);
    if (r.bad || hl > (uint64_t)(r.end - r.p)) return -1;
    m->hdr = r.p;
    m->hdr_len = (size_t)hl;
    r.p += hl;
    m->data = r.p;
    m->len = (size_t)(r.end - r.p);
    if (!(m->flags & RW_PLAIN) && m->nq == 0) return -1; /* nobody would get it */
    return 0;
}

/* ---- encoding ----------------------------------------------------------------------------- */

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint8_t *put_str(uint8_t *p, const char *s, size_t n)
{
    p = put_varint(p, n);
    if (n) memcpy(p, s, n);
    return p + n;
}

static void put_hdr(uint8_t *out, int type)
{
    out[0] = magic[0];
    out[1] = magic[1];
    out[2] = RW_VERSION;
    out[3] = (uint8_t)type;
}

void rw_build_init(rw_build *b)
{
    memset(b, 0, sizeof *b);
}

void rw_build_free(rw_build *b)
{
    free(b->buf);
    rw_build_init(b);
}

static int reserve(rw_build *b, size_t more)
{
    if (b->len + more <= b->cap) return 0;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + more) nc *= 2;
    uint8_t *nb = realloc(b->buf, nc);
    if (!nb) return -1;
    b->buf = nb;
    b->cap = nc;
    return 0;
}

int rw_build_start(rw_build *b, int type)
{
    b->len = 0;
    b->nops = 0;
    if (reserve(b, RW_HDR)) return -1;
    put_hdr(b->buf, type);
    memset(b->buf + 4, 0, 8);
    b->len = RW_HDR;
    return 0;
}

int rw_build_op(rw_build *b, const char *subject, const char *queue, uint32_t count)
{
    size_t sl = strlen(subject), ql = queue ? strlen(queue) : 0;
    if (sl > ROUTE_NAME_MAX || ql > ROUTE_NAME_MAX || count > ROUTE_COUNT_MAX) return -1;
    if (reserve(b, 30 + sl + ql)) return -1;
    uint8_t *p = b->buf + b->len;
    p = put_varint(p, count);
    p = put_str(p, subject, sl);
    p = put_str(p, queue, ql);
    b->len = (size_t)(p - b->buf);
    b->nops++;
    return 0;
}

/* 1 if s (len bytes) is a URL a URL frame may carry. */
static int url_valid(const char *s, size_t len)
{
    if (len == 0 || len > ROUTE_URL_MAX) return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f) return 0;
    return 1;
}

int rw_url_decode(const uint8_t *f, size_t len, rw_str *url)
{
    rd r = {f + RW_HDR, f + len, 0};
    *url = rd_str(&r);
    if (r.bad || r.p != r.end || !url_valid(url->p, url->len)) return -1;
    return 0;
}

int rw_build_url(rw_build *b, const char *url)
{
    size_t n = strlen(url);
    if (!url_valid(url, n) || rw_build_start(b, RW_URL) || reserve(b, 10 + n)) return -1;
    b->len = (size_t)(put_str(b->buf + b->len, url, n) - b->buf);
    rw_build_finish(b);
    return 0;
}

void rw_seal(uint8_t *f, size_t len)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, f, 4);
    XXH3_64bits_update(&st, f + RW_HDR, len - RW_HDR);
    put_u64(f + 4, XXH3_64bits_digest(&st));
}

void rw_build_finish(rw_build *b)
{
    rw_seal(b->buf, b->len);
}

static size_t opt_len(const char *s)
{
    return s ? strlen(s) : 0;
}

size_t rw_msg_head_bound(const char *to, const char *subject, const char *reply,
                         const char *const *queues, size_t nq)
{
    size_t n = RW_HDR + 1 + 10 * (5 + nq) + opt_len(to) + opt_len(subject) + opt_len(reply);
    for (size_t i = 0; i < nq; i++) n += strlen(queues[i]);
    return n;
}

int rw_msg_head(uint8_t *out, size_t cap, size_t *out_len, unsigned flags, const char *to,
                const char *subject, const char *reply, const char *const *queues, size_t nq,
                const void *hdr, size_t hdr_len, const void *data, size_t len)
{
    size_t tl = strlen(to), sl = opt_len(subject), rl = opt_len(reply);
    if (subject && !strcmp(subject, to)) sl = 0; /* the same subject: sent once */
    if (tl > ROUTE_NAME_MAX || sl > ROUTE_NAME_MAX || rl > ROUTE_NAME_MAX ||
        nq > ROUTE_QUEUES_MAX || cap < rw_msg_head_bound(to, subject, reply, queues, nq))
        return -1;
    put_hdr(out, RW_MSG);
    uint8_t *p = out + RW_HDR;
    *p++ = (uint8_t)flags;
    p = put_str(p, to, tl);
    p = put_str(p, subject, sl);
    p = put_str(p, reply, rl);
    p = put_varint(p, nq);
    for (size_t i = 0; i < nq; i++) {
        size_t ql = strlen(queues[i]);
        if (ql > ROUTE_NAME_MAX) return -1;
        p = put_str(p, queues[i], ql);
    }
    p = put_varint(p, hdr_len);
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, out, 4);
    XXH3_64bits_update(&st, out + RW_HDR, (size_t)(p - out) - RW_HDR);
    if (hdr_len) XXH3_64bits_update(&st, hdr, hdr_len);
    if (len) XXH3_64bits_update(&st, data, len);
    put_u64(out + 4, XXH3_64bits_digest(&st));
    *out_len = (size_t)(p - out);
    return 0;
}
