/*
 * fuzz_route — jetraft-server's route frames (examples/server/route_wire.h) and interest table
 * (interest.h): any bytes, taken as a frame (and again resealed, so that the decoders behind the
 * checksum are reached), must decode or be refused without reading outside them; what an
 * INTEREST frame decodes to is applied to a table, every applied entry is then found by a
 * subject it matches, and a decoded MSG or URL encodes back to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interest.h"
#include "route_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *cstr(rw_str s)
{
    char *p = malloc(s.len + 1);
    if (!p) abort();
    memcpy(p, s.p, s.len);
    p[s.len] = 0;
    return p;
}

/* A literal subject the pattern matches: each `*` becomes "x", a final `>` becomes "x.y". */
static char *instance(const char *pattern)
{
    size_t n = strlen(pattern);
    char *out = malloc(n + 4);
    if (!out) abort();
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (pattern[i] == '*') {
            out[o++] = 'x';
        } else if (pattern[i] == '>') {
            memcpy(out + o, "x.y", 3);
            o += 3;
        } else {
            out[o++] = pattern[i];
        }
    }
    out[o] = 0;
    return out;
}

typedef struct want {
    const char *subject, *queue;
    int found;
} want;

static int on_match(void *arg, const char *subject, const char *queue, uint32_t count)
{
    want *w = arg;
    (void)count;
    if (!strcmp(subject, w->subject) && (queue ? w->queue && !strcmp(queue, w->queue) : !w->queue))
        w->found = 1;
    return 0;
}

static void check_frame(const uint8_t *f, size_t len)
{
    int type;
    if (rw_open(f, len, &type)) return;
    if (type == RW_INTEREST) {
        if (rw_interest_check(f, len)) return;
        interest *t = interest_new();
        if (!t) abort();
        size_t off = 0;
        rw_op op;
        while (rw_interest_next(f, len, &off, &op) == 1) {
            char *s = cstr(op.subject), *q = cstr(op.queue);
            if (interest_set(t, s, q, op.count)) abort();
            if (op.count) {
                char *lit = instance(s);
                want w = {s, q[0] ? q : NULL, 0};
                interest_match(t, lit, on_match, &w);
                if (!w.found) abort(); /* an entry its own subject does not find */
                free(lit);
            }
            free(s);
            free(q);
        }
        interest_free(t);
        return;
    }
    if (type == RW_URL) {
        rw_str url;
        if (rw_url_decode(f, len, &url)) return;
        char *u = cstr(url);
        rw_build b;
        rw_build_init(&b);
        if (rw_build_url(&b, u) || b.len != len || memcmp(b.buf, f, len))
            abort(); /* decoding and encoding disagree */
        rw_build_free(&b);
        free(u);
        return;
    }
    rw_msg m;
    if (rw_msg_decode(f, len, &m)) return;
    char *to = cstr(m.to), *subject = cstr(m.subject), *reply = cstr(m.reply);
    char *queues[ROUTE_QUEUES_MAX];
    for (size_t i = 0; i < m.nq; i++) queues[i] = cstr(m.queues[i]);
    size_t cap = rw_msg_head_bound(to, subject, reply, (const char *const *)queues, m.nq);
    uint8_t *head = malloc(cap);
    size_t hl = 0;
    if (!head ||
        rw_msg_head(head, cap, &hl, m.flags, to, subject, reply, (const char *const *)queues, m.nq,
                    m.hdr, m.hdr_len, m.data, m.len) ||
        hl + m.hdr_len + m.len != len || memcmp(head, f, hl))
        abort(); /* decoding and encoding disagree */
    free(head);
    for (size_t i = 0; i < m.nq; i++) free(queues[i]);
    free(to);
    free(subject);
    free(reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* as it came (mostly refused by the checksum) */
    uint8_t *f = malloc(size ? size : 1);
    if (!f) abort();
    if (size) memcpy(f, data, size);
    check_frame(f, size);
    free(f);
    /* the first byte picks the type, the rest is the body, sealed with a correct checksum */
    if (size < 1) return 0;
    size_t len = RW_HDR + size - 1;
    f = malloc(len);
    if (!f) abort();
    memcpy(f, "JN\001", 3);
    f[3] = (uint8_t)(data[0] & 1 ? RW_MSG : data[0] & 0x80 ? RW_URL : RW_INTEREST);
    memcpy(f + RW_HDR, data + 1, size - 1);
    rw_seal(f, len);
    check_frame(f, len);
    free(f);
    return 0;
}
