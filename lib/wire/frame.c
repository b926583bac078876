/*
 * frame — the frame header, the message loop and validation (layout in frame.h). Message
 * payloads are in msg.c (Raft), hb.c (heartbeats) and rpc.c (requests, responses,
 * extensions).
 */
#include "util/checksum.h"
#include "wire/codec.h"

static const uint8_t magic[2] = {'J', 'R'};

void jr__frame_begin(jr__buf *b, jr__id from, jr__id to)
{
    jr__buf_reset(b);
    if (jr__buf_reserve(b, JR__FRAME_HEADER)) return;
    uint8_t *h = b->data;
    memset(h, 0, JR__FRAME_HEADER);
    memcpy(h + JR__FH_MAGIC, magic, 2);
    h[JR__FH_VERSION] = JR__FRAME_VERSION;
    jr__put_u64(h + JR__FH_FROM, from);
    jr__put_u64(h + JR__FH_TO, to);
    b->len = JR__FRAME_HEADER;
    if (from == 0 || to == 0 || from == to) b->err = JR_EINVAL;
}

void jr__frame_add(jr__buf *b, const jr__msg *m)
{
    if (b->err) return;
    size_t bound;
    if (b->len < JR__FRAME_HEADER || m->from != jr__get_u64(b->data + JR__FH_FROM) ||
        m->to != jr__get_u64(b->data + JR__FH_TO) || jr__wire_msg_check(m, &bound)) {
        b->err = JR_EINVAL;
        return;
    }
    if (jr__buf_reserve(b, bound)) return;
    b->len = (size_t)(jr__wire_msg_put(b->data + b->len, m) - b->data);
}

void jr__wire_finish(uint8_t *h, size_t body_len)
{
    jr__put_u32(h + JR__FH_LEN, (uint32_t)body_len);
    jr__put_u64(h + JR__FH_CHECK, jr__xxh3_2(h, JR__FH_CHECK, h + JR__FRAME_HEADER, body_len));
}

int jr__frame_end(jr__buf *b)
{
    if (b->err) return b->err;
    if (b->len < JR__FRAME_HEADER) return b->err = JR_EINVAL;
    if (b->len - JR__FRAME_HEADER > UINT32_MAX) return b->err = JR_EMSGSIZE;
    jr__wire_finish(b->data, b->len - JR__FRAME_HEADER);
    return 0;
}

int jr__wire_hdr_basic(const uint8_t *d, size_t len, size_t max)
{
    if (len < JR__FRAME_HEADER || memcmp(d + JR__FH_MAGIC, magic, 2) != 0) return JR_ECORRUPT;
    if (d[JR__FH_VERSION] != JR__FRAME_VERSION) return JR_EVERSION;
    if (len > max || (uint64_t)jr__get_u32(d + JR__FH_LEN) > max - JR__FRAME_HEADER)
        return JR_EMSGSIZE;
    return 0;
}

int jr__wire_hdr_rest(jr__frame *f, const uint8_t *d, size_t len)
{
    size_t body_len = len - JR__FRAME_HEADER;
    if (jr__get_u32(d + JR__FH_LEN) != body_len) return JR_ECORRUPT; /* truncated or trailing */
    f->flags = d[JR__FH_FLAGS];
    f->from = jr__get_u64(d + JR__FH_FROM);
    f->to = jr__get_u64(d + JR__FH_TO);
    if (f->flags & ~JR__FRAME_SEALED) return JR_ECORRUPT;
    if (f->from == 0 || f->to == 0 || f->from == f->to) return JR_ECORRUPT;
    uint64_t sum = jr__xxh3_2(d, JR__FH_CHECK, d + JR__FRAME_HEADER, body_len);
    if (sum != jr__get_u64(d + JR__FH_CHECK)) return JR_ECORRUPT;
    f->max_entry = JR__FRAME_MAX_ENTRY;
    memset(&f->hb, 0, sizeof f->hb);
    f->max_rpc = JR__RPC_MAX_PAYLOAD;
    memset(&f->rpc, 0, sizeof f->rpc);
    memset(&f->ext, 0, sizeof f->ext);
    return 0;
}

int jr__frame_open(jr__frame *f, const void *data, size_t len, size_t max)
{
    const uint8_t *d = data;
    int rc = jr__wire_hdr_basic(d, len, max);
    if (!rc) rc = jr__wire_hdr_rest(f, d, len);
    if (rc) return rc;
    if (f->flags & JR__FRAME_SEALED) return JR_EAUTH;
    jr__rd_init(&f->body, d + JR__FRAME_HEADER, len - JR__FRAME_HEADER);
    return 0;
}

int jr__frame_next(jr__frame *f, jr__msg *m, jr__entry *scratch, size_t cap, int *got)
{
    jr__rd *r = &f->body;
    *got = 0;
    if (r->err) return r->err;
    if (r->p == r->end) return 0;
    memset(m, 0, sizeof *m);
    m->from = f->from;
    m->to = f->to;
    m->type = jr__wget_u8(r);
    m->flags = jr__wget_u8(r);
    int rc;
    if (r->err) {
        rc = JR_ECORRUPT;
    } else if (m->type >= 1 && m->type <= JR__MSG_TYPE_MAX) {
        rc = (m->flags & ~JR__MF_ALL) ? JR_ECORRUPT
                                      : jr__wire_msg_get(r, m, scratch, cap, f->max_entry);
    } else if (m->type == JR__MSG_NODE_HB || m->type == JR__MSG_NODE_HB_RESP) {
        rc = m->flags ? JR_ECORRUPT : jr__wire_hb_get(r, m->type, &f->hb);
    } else if (m->type == JR__MSG_NODE_REQUEST || m->type == JR__MSG_NODE_RESPONSE) {
        rc = m->flags ? JR_ECORRUPT : jr__wire_rpc_get(r, m->type, &f->rpc, f->max_rpc);
    } else if (m->type >= JR__MSG_EXT_FIRST) {
        f->ext.type = m->type;
        f->ext.flags = m->flags;
        m->flags = 0;
        rc = jr__wire_ext_get(r, &f->ext, f->max_rpc);
    } else {
        rc = JR_ECORRUPT; /* unknown or reserved type */
    }
    if (rc) {
        r->p = r->end;
        r->err = rc;
        return rc;
    }
    *got = 1;
    return 0;
}

int jr__frame_check(const jr__frame *f, size_t scratch_cap)
{
    jr__frame w = *f;
    jr__msg m;
    int rc, got;
    while (!(rc = jr__frame_next(&w, &m, NULL, scratch_cap, &got)) && got) continue;
    return rc;
}

int jr__frame_validate(const void *data, size_t len, size_t max, size_t scratch_cap)
{
    jr__frame f;
    int rc = jr__frame_open(&f, data, len, max);
    return rc ? rc : jr__frame_check(&f, scratch_cap);
}
