/*
 * rpc — node-to-node requests and responses (NODE_REQUEST 66, NODE_RESPONSE 67; layout in
 * frame.h). They share frames with Raft messages and heartbeats, so a node forwards a publish or
 * an admin request in the same per-peer frame that carries replication traffic, and the frame is
 * validated as a whole before any of it is acted on.
 *
 * The wire knows ids, kinds, statuses and payload bytes, nothing about what a payload means: the
 * layer owning a kind (stream, meta) encodes and strictly decodes its payloads. Extension
 * messages (types 128..255) share the encoder: a length-prefixed payload, no id.
 */
#include "wire/codec.h"

_Static_assert(JR__MSG_NODE_RESPONSE <= JR__MSG_NODE_LAST, "node-level types end at 127");
_Static_assert(JR__RPC_KIND_MAX == 10, "a new RPC kind: update frame.h's list and lib/js/js.c");
_Static_assert(JR__MSG_EXT_FIRST == JR__MSG_NODE_LAST + 1, "extensions follow node messages");
_Static_assert(JR__RPC_MAX_PAYLOAD <= UINT32_MAX, "payload lengths fit in jr__rpc_view.len");

/* type, mflags, id, kind-or-status, payload length */
#define RPC_FIXED_BOUND (2 + 3 * JR__VARINT_MAX)

static uint64_t zigzag(int v)
{
    int64_t w = v;
    return w >= 0 ? (uint64_t)w << 1 : (((uint64_t)(-(w + 1))) << 1) | 1;
}

/* Inverse of zigzag for encodings of int32 values (u <= UINT32_MAX). */
static int32_t unzigzag(uint64_t u)
{
    int64_t half = (int64_t)(u >> 1);
    return (int32_t)((u & 1) ? -half - 1 : half);
}

/* Total payload bytes of iov; SIZE_MAX if it overflows or a piece is malformed. */
static size_t iov_total(const jr_iovec *iov, int iovcnt)
{
    if (iovcnt < 0 || (iovcnt > 0 && !iov)) return SIZE_MAX;
    size_t n = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].len && !iov[i].base) return SIZE_MAX;
        if (iov[i].len > SIZE_MAX - 1 - n) return SIZE_MAX;
        n += iov[i].len;
    }
    return n;
}

/* Shared encoder: second is the kind (request), the zigzag status (response), or the mflags
 * (an extension: no id). */
static void add_rpc(jr__buf *b, uint8_t type, uint64_t id, uint64_t second, const jr_iovec *iov,
                    int iovcnt)
{
    if (b->err) return;
    size_t len = iov_total(iov, iovcnt);
    int ext = type >= JR__MSG_EXT_FIRST;
    if (b->len < JR__FRAME_HEADER || (id == 0 && !ext) || len == SIZE_MAX) {
        b->err = JR_EINVAL;
        return;
    }
    if (len > JR__RPC_MAX_PAYLOAD) {
        b->err = JR_EMSGSIZE;
        return;
    }
    if (jr__buf_reserve(b, RPC_FIXED_BOUND + len)) return;
    uint8_t *p = b->data + b->len;
    *p++ = type;
    *p++ = ext ? (uint8_t)second : 0;
    if (!ext) {
        p = jr__wput_varint(p, id);
        if (type == JR__MSG_NODE_REQUEST)
            *p++ = (uint8_t)second;
        else
            p = jr__wput_varint(p, second);
    }
    p = jr__wput_varint(p, len);
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].len) memcpy(p, iov[i].base, iov[i].len);
        p += iov[i].len;
    }
    b->len = (size_t)(p - b->data);
}

void jr__frame_add_requestv(jr__buf *b, uint64_t id, uint8_t kind, const jr_iovec *iov, int iovcnt)
{
    if (b->err) return;
    if (kind == 0) {
        b->err = JR_EINVAL;
        return;
    }
    add_rpc(b, JR__MSG_NODE_REQUEST, id, kind, iov, iovcnt);
}

void jr__frame_add_request(jr__buf *b, uint64_t id, uint8_t kind, const void *payload, size_t len)
{
    jr_iovec v = {payload, len};
    jr__frame_add_requestv(b, id, kind, &v, 1);
}

void jr__frame_add_responsev(jr__buf *b, uint64_t id, int status, const jr_iovec *iov, int iovcnt)
{
    add_rpc(b, JR__MSG_NODE_RESPONSE, id, zigzag(status), iov, iovcnt);
}

void jr__frame_add_response(jr__buf *b, uint64_t id, int status, const void *payload, size_t len)
{
    jr_iovec v = {payload, len};
    jr__frame_add_responsev(b, id, status, &v, 1);
}

void jr__frame_add_ext(jr__buf *b, uint8_t type, uint8_t mflags, const void *payload, size_t len)
{
    if (b->err) return;
    if (type < JR__MSG_EXT_FIRST) {
        b->err = JR_EINVAL;
        return;
    }
    jr_iovec v = {payload, len};
    add_rpc(b, type, 0, mflags, &v, 1);
}

int jr__wire_ext_get(jr__rd *r, jr__ext_view *v, uint32_t max)
{
    uint64_t len = jr__wget_varint(r);
    if (r->err || len > jr__rd_left(r)) return jr__rd_fail(r);
    if (len > max) {
        r->p = r->end;
        return r->err = JR_EMSGSIZE;
    }
    v->len = (uint32_t)len;
    v->payload = len ? r->p : NULL;
    r->p += len;
    return 0;
}

size_t jr__frame_request_len(uint64_t id, size_t len)
{
    return 2 + jr__varint_len(id) + 1 + jr__varint_len(len) + len;
}

size_t jr__frame_response_len(uint64_t id, int status, size_t len)
{
    return 2 + jr__varint_len(id) + jr__varint_len(zigzag(status)) + jr__varint_len(len) + len;
}

int jr__wire_rpc_get(jr__rd *r, uint8_t type, jr__rpc_view *v, uint32_t max)
{
    memset(v, 0, sizeof *v);
    v->type = type;
    v->id = jr__wget_varint(r);
    if (type == JR__MSG_NODE_REQUEST) {
        v->kind = jr__wget_u8(r);
        if (v->kind == 0) return jr__rd_fail(r);
    } else {
        uint64_t z = jr__wget_varint(r);
        if (z > UINT32_MAX) return jr__rd_fail(r); /* outside int32 */
        v->status = unzigzag(z);
    }
    uint64_t len = jr__wget_varint(r);
    if (r->err || v->id == 0 || len > jr__rd_left(r)) return jr__rd_fail(r);
    if (len > max) {
        r->p = r->end;
        return r->err = JR_EMSGSIZE;
    }
    v->len = (uint32_t)len;
    v->payload = len ? r->p : NULL;
    r->p += len;
    return 0;
}
