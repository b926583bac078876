/*
 * op.c — encoding and strict decoding of stream operations (op.h).
 */
#include <string.h>

#include "stream/op.h"
#include "util/checksum.h"

/* ---------------------------------------------------------------------------------------------
 * Checks shared by the encoder (refuse) and the decoder (reject)
 */

static int str_ok(const char *p, size_t n, size_t max)
{
    return n >= 1 && n <= max && p != NULL;
}

static int check_publish(const jr__op_publish *p)
{
    const jr__pub_opts *o = &p->opts;
    if (!str_ok(p->subject, p->subject_len, JR__OP_SUBJECT_MAX)) return JR_EINVAL;
    if ((p->hdr_len && !p->hdr) || (p->data_len && !p->data)) return JR_EINVAL;
    if (p->hdr_len > JR__OP_MSG_MAX || p->data_len > JR__OP_MSG_MAX - p->hdr_len) return JR_EINVAL;
    if (o->flags & ~JR__PUB_FLAGS_ALL) return JR_EINVAL;
    if ((o->flags & JR__PUB_ROLLUP_SUB) && (o->flags & JR__PUB_ROLLUP_ALL)) return JR_EINVAL;
    if ((o->flags & JR__PUB_TOKEN) && (!(o->flags & JR__PUB_MSG_ID) || o->token == 0))
        return JR_EINVAL;
    if ((o->flags & JR__PUB_MSG_ID) && !str_ok(o->msg_id, o->msg_id_len, JR__OP_MSG_ID_MAX))
        return JR_EINVAL;
    if ((o->flags & JR__PUB_EXPECT_STREAM) &&
        !str_ok(o->expected_stream, o->expected_stream_len, JR_STREAM_NAME_MAX))
        return JR_EINVAL;
    if ((o->flags & JR__PUB_EXPECT_LAST_MSG_ID) &&
        !str_ok(o->expected_last_msg_id, o->expected_last_msg_id_len, JR__OP_MSG_ID_MAX))
        return JR_EINVAL;
    return 0;
}

static int check_op(const jr__stream_op *op)
{
    if (op->ts < 0) return JR_EINVAL;
    switch (op->type) {
    case JR__OP_PUBLISH:
        return check_publish(&op->u.pub);
    case JR__OP_DELETE:
        return op->u.del.seq >= 1 && (op->u.del.erase == 0 || op->u.del.erase == 1) ? 0 : JR_EINVAL;
    case JR__OP_PURGE: {
        const jr__op_purge *p = &op->u.purge;
        if (p->seq && p->keep) return JR_EINVAL;
        if (p->filter_len && !str_ok(p->filter, p->filter_len, JR__OP_SUBJECT_MAX))
            return JR_EINVAL;
        return 0;
    }
    case JR__OP_CONFIG:
        return op->u.config.len >= 1 && op->u.config.len <= JR__OP_CONFIG_MAX && op->u.config.cfg
                   ? 0
                   : JR_EINVAL;
    case JR__OP_TICK:
        return 0;
    case JR__OP_REMOVE:
        return op->u.remove.from >= 1 && op->u.remove.from <= op->u.remove.to ? 0 : JR_EINVAL;
    default:
        return JR_EINVAL; /* unknown, or a batch where a single op is required */
    }
}

/* ---------------------------------------------------------------------------------------------
 * Encoding
 */

static void put_str(jr__buf *b, const void *p, size_t n)
{
    jr__buf_bytes(b, p, n);
}

/* type:u8 body */
static void put_op(jr__buf *b, const jr__stream_op *op)
{
    jr__buf_u8(b, (uint8_t)op->type);
    jr__buf_u64(b, (uint64_t)op->ts);
    switch (op->type) {
    case JR__OP_PUBLISH: {
        const jr__op_publish *p = &op->u.pub;
        const jr__pub_opts *o = &p->opts;
        jr__buf_varint(b, o->flags);
        put_str(b, p->subject, p->subject_len);
        put_str(b, p->hdr, p->hdr_len);
        put_str(b, p->data, p->data_len);
        if (o->flags & JR__PUB_MSG_ID) put_str(b, o->msg_id, o->msg_id_len);
        if (o->flags & JR__PUB_EXPECT_STREAM)
            put_str(b, o->expected_stream, o->expected_stream_len);
        if (o->flags & JR__PUB_EXPECT_LAST_SEQ) jr__buf_varint(b, o->expected_last_seq);
        if (o->flags & JR__PUB_EXPECT_LAST_SUBJ_SEQ)
            jr__buf_varint(b, o->expected_last_subject_seq);
        if (o->flags & JR__PUB_EXPECT_LAST_MSG_ID)
            put_str(b, o->expected_last_msg_id, o->expected_last_msg_id_len);
        if (o->flags & JR__PUB_TOKEN) jr__buf_u64(b, o->token);
        break;
    }
    case JR__OP_DELETE:
        jr__buf_varint(b, op->u.del.seq);
        jr__buf_u8(b, (uint8_t)op->u.del.erase);
        break;
    case JR__OP_PURGE:
        jr__buf_u8(b, op->u.purge.filter_len ? 1 : 0);
        if (op->u.purge.filter_len) put_str(b, op->u.purge.filter, op->u.purge.filter_len);
        jr__buf_varint(b, op->u.purge.seq);
        jr__buf_varint(b, op->u.purge.keep);
        break;
    case JR__OP_CONFIG:
        put_str(b, op->u.config.cfg, op->u.config.len);
        break;
    case JR__OP_REMOVE:
        jr__buf_varint(b, op->u.remove.from);
        jr__buf_varint(b, op->u.remove.to);
        break;
    default: /* TICK */
        break;
    }
}

static size_t op_size_hint(const jr__stream_op *op)
{
    size_t n = 64;
    if (op->type == JR__OP_PUBLISH) {
        const jr__op_publish *p = &op->u.pub;
        n += p->subject_len + p->hdr_len + p->data_len + p->opts.msg_id_len +
             p->opts.expected_stream_len + p->opts.expected_last_msg_id_len;
    } else if (op->type == JR__OP_PURGE) {
        n += op->u.purge.filter_len;
    } else if (op->type == JR__OP_CONFIG) {
        n += op->u.config.len;
    }
    return n;
}

static int seal(jr__buf *out, size_t start)
{
    if (out->err) return out->err;
    uint64_t h = jr__xxh3(out->data + start, out->len - start);
    jr__buf_u64(out, h);
    return out->err;
}

int jr__op_encode(const jr__stream_op *op, jr__buf *out)
{
    if (!op || check_op(op)) return JR_EINVAL;
    if (jr__buf_reserve(out, op_size_hint(op))) return out->err;
    size_t start = out->len;
    jr__buf_u8(out, JR__OP_VERSION);
    put_op(out, op);
    return seal(out, start);
}

int jr__op_encode_batch(const jr__stream_op *ops, size_t n, jr__buf *out)
{
    if (!ops || n < 1 || n > JR__OP_BATCH_MAX) return JR_EINVAL;
    size_t hint = 16;
    for (size_t i = 0; i < n; i++) {
        if (check_op(&ops[i])) return JR_EINVAL;
        hint += op_size_hint(&ops[i]);
    }
    if (jr__buf_reserve(out, hint)) return out->err;
    size_t start = out->len;
    jr__buf_u8(out, JR__OP_VERSION);
    jr__buf_u8(out, JR__OP_BATCH);
    jr__buf_varint(out, n);
    for (size_t i = 0; i < n; i++) put_op(out, &ops[i]);
    return seal(out, start);
}

/* ---------------------------------------------------------------------------------------------
 * Decoding
 */

/* A string of 1..max bytes. */
static const char *get_str(jr__rd *r, size_t *n, size_t max)
{
    const uint8_t *p = jr__rd_bytes(r, n, max);
    if (!r->err && *n == 0) jr__rd_fail(r);
    return r->err ? NULL : (const char *)p;
}

/* Reads type:u8 body into op; types other than the single-op kinds fail. With check, the op's
 * fields are validated too (what the encoder refuses fails); without, only the framing is (for
 * ops of a batch that jr__op_decode validated whole). */
static void get_op(jr__rd *r, jr__stream_op *op, int check, int *newer)
{
    /* Only the member of the union that the type selects is zeroed: this runs for every
     * message on every replica, and zeroing the whole op costs more than decoding it. */
    op->type = jr__rd_u8(r);
    uint64_t ts = jr__rd_u64(r);
    if (ts > (uint64_t)INT64_MAX) jr__rd_fail(r);
    op->ts = (int64_t)ts;
    switch (op->type) {
    case JR__OP_PUBLISH: {
        jr__op_publish *p = &op->u.pub;
        memset(p, 0, sizeof *p);
        jr__pub_opts *o = &p->opts;
        uint64_t flags = jr__rd_varint(r);
        if (flags & ~(uint64_t)JR__PUB_FLAGS_ALL) {
            if (!r->err && newer) *newer = 1; /* an option of a later release */
            jr__rd_fail(r);
        }
        o->flags = (uint32_t)flags;
        p->subject = get_str(r, &p->subject_len, JR__OP_SUBJECT_MAX);
        p->hdr = jr__rd_bytes(r, &p->hdr_len, JR__OP_MSG_MAX);
        p->data = jr__rd_bytes(r, &p->data_len, JR__OP_MSG_MAX);
        if (o->flags & JR__PUB_MSG_ID) o->msg_id = get_str(r, &o->msg_id_len, JR__OP_MSG_ID_MAX);
        if (o->flags & JR__PUB_EXPECT_STREAM)
            o->expected_stream = get_str(r, &o->expected_stream_len, JR_STREAM_NAME_MAX);
        if (o->flags & JR__PUB_EXPECT_LAST_SEQ) o->expected_last_seq = jr__rd_varint(r);
        if (o->flags & JR__PUB_EXPECT_LAST_SUBJ_SEQ)
            o->expected_last_subject_seq = jr__rd_varint(r);
        if (o->flags & JR__PUB_EXPECT_LAST_MSG_ID)
            o->expected_last_msg_id = get_str(r, &o->expected_last_msg_id_len, JR__OP_MSG_ID_MAX);
        if (o->flags & JR__PUB_TOKEN) o->token = jr__rd_u64(r);
        if (r->err) break;
        if (p->hdr_len == 0) p->hdr = NULL;
        if (p->data_len == 0) p->data = NULL;
        break;
    }
    case JR__OP_DELETE:
        op->u.del.seq = jr__rd_varint(r);
        op->u.del.erase = jr__rd_u8(r);
        break;
    case JR__OP_PURGE: {
        memset(&op->u.purge, 0, sizeof op->u.purge);
        uint8_t has = jr__rd_u8(r);
        if (has > 1) jr__rd_fail(r);
        if (has) op->u.purge.filter = get_str(r, &op->u.purge.filter_len, JR__OP_SUBJECT_MAX);
        op->u.purge.seq = jr__rd_varint(r);
        op->u.purge.keep = jr__rd_varint(r);
        break;
    }
    case JR__OP_CONFIG:
        op->u.config.cfg = (const uint8_t *)get_str(r, &op->u.config.len, JR__OP_CONFIG_MAX);
        break;
    case JR__OP_TICK:
        break;
    case JR__OP_REMOVE:
        op->u.remove.from = jr__rd_varint(r);
        op->u.remove.to = jr__rd_varint(r);
        break;
    default:
        if (!r->err && newer && op->type > JR__OP_REMOVE) *newer = 1; /* a later release's kind */
        jr__rd_fail(r);
        break;
    }
    if (check && !r->err && check_op(op)) jr__rd_fail(r);
}

int jr__op_decode(const void *data, size_t len, jr__stream_op *op)
{
    memset(op, 0, sizeof *op);
    if (!data || len < 2 + 8) return JR_ECORRUPT;
    const uint8_t *p = data;
    if (jr__get_u64(p + len - 8) != jr__xxh3(p, len - 8)) return JR_ECORRUPT;
    if (p[0] != JR__OP_VERSION) return JR_EVERSION;
    jr__rd r;
    jr__rd_init(&r, p + 1, len - 9);
    if (p[1] == JR__OP_BATCH) {
        jr__rd_u8(&r);
        uint64_t count = jr__rd_varint(&r);
        if (r.err || count < 1 || count > JR__OP_BATCH_MAX) return JR_ECORRUPT;
        const uint8_t *start = r.p;
        jr__stream_op inner;
        int newer = 0;
        for (uint64_t i = 0; i < count && !r.err; i++) get_op(&r, &inner, 1, &newer);
        if (r.err || jr__rd_left(&r)) return newer ? JR_EVERSION : JR_ECORRUPT;
        op->type = JR__OP_BATCH;
        op->u.batch.count = (uint32_t)count;
        op->u.batch.ops = start;
        op->u.batch.len = (size_t)(r.p - start);
        return 0;
    }
    int newer = 0;
    get_op(&r, op, 1, &newer);
    if (r.err || jr__rd_left(&r)) {
        memset(op, 0, sizeof *op);
        return newer ? JR_EVERSION : JR_ECORRUPT;
    }
    return 0;
}

void jr__op_batch_iter(const jr__stream_op *batch, jr__op_iter *it)
{
    jr__rd_init(&it->rd, batch->u.batch.ops, batch->u.batch.len);
    it->left = batch->type == JR__OP_BATCH ? batch->u.batch.count : 0;
}

int jr__op_batch_next(jr__op_iter *it, jr__stream_op *op, int *got)
{
    *got = 0;
    if (it->left == 0) return 0;
    get_op(&it->rd, op, 0, NULL); /* jr__op_decode validated every op of the batch */
    if (it->rd.err) {
        it->left = 0;
        return JR_ECORRUPT;
    }
    it->left--;
    *got = 1;
    return 0;
}
