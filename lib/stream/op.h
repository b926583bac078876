/*
 * op — the operations a stream's Raft log carries, and their binary encoding.
 *
 * The stream leader turns every request (publish, delete, purge, config change, the passage of
 * time) into one encoded op and proposes it; every replica decodes the committed entry and hands
 * it to the state machine (fsm.h), which decides it from the op and its prior state alone. So an
 * op carries everything a decision needs — notably its timestamp, read from the leader's clock
 * when proposing: the state machine never reads a clock.
 *
 * Kinds
 *   PUBLISH  {ts, subject, headers, payload, options: msg_id, expected_stream,
 *             expected_last_seq, expected_last_subject_seq, expected_last_msg_id, rollup,
 *             request token}
 *   DELETE   {ts, seq, erase}
 *   PURGE    {ts, filter (optional), seq, keep}
 *   CONFIG   {ts, stream config in the lib/stream/config.h encoding}
 *   TICK     {ts}: only moves the stream's clock (expiry by max_age, dedup window)
 *   BATCH    {count, ops}: 1..JR__OP_BATCH_MAX ops of the other kinds (no nested batch) applied
 *            one after the other, each with its own result; one log entry for many requests.
 *   REMOVE   {ts, from, to}: interest or work-queue retention removes the live messages of
 *            [from, to] that every interested consumer acknowledged (decided by the leader from
 *            the consumers' replicated states; never refused by deny_delete or sealed, which
 *            guard what users do).
 *
 * Encoding, version 1 (integers little-endian; varint = unsigned LEB128, canonical):
 *   entry  = version:u8 type:u8 body xxh3:u64          (xxh3 of every byte before it)
 *   PUBLISH body = ts:u64 flags:varint subject:bytes hdr:bytes data:bytes
 *                  [msg_id:bytes] [expected_stream:bytes] [expected_last_seq:varint]
 *                  [expected_last_subject_seq:varint] [expected_last_msg_id:bytes]
 *                  [token:u64]
 *                  (each optional field present iff its flag is set, in this order)
 *   DELETE  body = ts:u64 seq:varint erase:u8
 *   PURGE   body = ts:u64 has_filter:u8 [filter:bytes] seq:varint keep:varint
 *   CONFIG  body = ts:u64 config:bytes
 *   TICK    body = ts:u64
 *   BATCH   body = count:varint then count times (type:u8 body)
 *   REMOVE  body = ts:u64 from:varint to:varint (1 <= from <= to)
 *   bytes  = length:varint then the bytes
 *
 * Strictness: the encoder refuses (JR_EINVAL, nothing appended) any op the decoder would not
 * accept, and the decoder accepts exactly what the encoder produces: it bounds-checks every read,
 * requires the checksum, rejects what a later release may write — another version, a type above
 * REMOVE, an unknown publish flag bit — with JR_EVERSION (for an intact entry), and with
 * JR_ECORRUPT type 0, a nested batch, both rollup flags together, a token without a msg_id or
 * equal to 0, seq and keep together, erase other than 0/1,
 * negative timestamps, zero sequences where a sequence is required, lengths over the limits
 * below, and trailing bytes (JR_ECORRUPT). A batch is validated completely before it is
 * returned, so an entry is either entirely usable or entirely refused.
 *
 * Semantics are not the codec's business: whether a subject is a valid literal subject, a
 * header block well formed, a filter a valid pattern — the state machine checks those and
 * refuses with JR_EINVAL, so that the proposer learns why.
 *
 * Decoded ops borrow: every pointer points into the entry given to the decoder.
 */
#ifndef JR_STREAM_OP_H
#define JR_STREAM_OP_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "util/buf.h"
#include "util/subject.h"

#define JR__OP_VERSION 1

/* Limits enforced by the codec. */
#define JR__OP_SUBJECT_MAX JR__SUBJECT_MAX /* subject or purge filter: the grammar's limit */
#define JR__OP_MSG_ID_MAX 1024             /* msg_id and expected_last_msg_id */
#define JR__OP_MSG_MAX (64u * 1024 * 1024) /* headers + payload of one message */
#define JR__OP_CONFIG_MAX (1u << 20)       /* encoded stream config */
#define JR__OP_BATCH_MAX 65536             /* ops in one batch */

enum jr__op_type {
    JR__OP_PUBLISH = 1,
    JR__OP_DELETE = 2,
    JR__OP_PURGE = 3,
    JR__OP_CONFIG = 4,
    JR__OP_TICK = 5,
    JR__OP_BATCH = 6,
    JR__OP_REMOVE = 7,
};

/* Which publish options are set (jr__pub_opts.flags). */
enum jr__pub_flag {
    JR__PUB_MSG_ID = 1u << 0,
    JR__PUB_EXPECT_STREAM = 1u << 1,
    JR__PUB_EXPECT_LAST_SEQ = 1u << 2,
    JR__PUB_EXPECT_LAST_SUBJ_SEQ = 1u << 3,
    JR__PUB_EXPECT_LAST_MSG_ID = 1u << 4,
    JR__PUB_ROLLUP_SUB = 1u << 5,  /* after storing, purge the subject's older messages */
    JR__PUB_ROLLUP_ALL = 1u << 6,  /* after storing, purge every older message */
    JR__PUB_TOKEN = 1u << 7,       /* the request's token (with a msg_id only) */
    JR__PUB_NO_INTEREST = 1u << 8, /* set by the leader of an interest stream when no consumer's
                                      filter matches the subject: the message takes its seq and
                                      is acknowledged, but is not stored */
};
#define JR__PUB_FLAGS_ALL 0x1ffu

/* The options of a publish, as JetStream's Nats-* headers express them (headers.h maps a header
 * block to these). A string field is meaningful only when its flag is set; when set it is
 * non-empty. expected_last_seq / expected_last_subject_seq may be 0 ("no message yet").
 * token names the request a publish with a msg_id came from, the same in every attempt the
 * requesting server makes of it (api_stream.c sends it again to the next leader after a failover);
 * the duplicate window keeps it beside the msg_id, so an attempt that finds its own earlier
 * attempt stored is answered as that first attempt was (fsm.h). Non-zero when its flag is set. */
typedef struct jr__pub_opts {
    uint32_t flags; /* enum jr__pub_flag */
    const char *msg_id;
    size_t msg_id_len;
    const char *expected_stream;
    size_t expected_stream_len;
    uint64_t expected_last_seq;
    uint64_t expected_last_subject_seq;
    const char *expected_last_msg_id;
    size_t expected_last_msg_id_len;
    uint64_t token;
} jr__pub_opts;

typedef struct jr__op_publish {
    const char *subject;
    size_t subject_len;
    const uint8_t *hdr; /* NATS header block, or NULL/0 */
    size_t hdr_len;
    const uint8_t *data;
    size_t data_len;
    jr__pub_opts opts;
} jr__op_publish;

typedef struct jr__op_delete {
    uint64_t seq; /* >= 1 */
    int erase;    /* 0 or 1 */
} jr__op_delete;

typedef struct jr__op_purge {
    const char *filter; /* NULL/0: every subject */
    size_t filter_len;
    uint64_t seq;  /* non-zero: only messages below seq */
    uint64_t keep; /* non-zero: keep the newest `keep` matching messages; not with seq */
} jr__op_purge;

typedef struct jr__op_config {
    const uint8_t *cfg; /* jr__stream_config_encode() output (validated by the fsm) */
    size_t len;
} jr__op_config;

typedef struct jr__op_remove {
    uint64_t from, to; /* 1 <= from <= to */
} jr__op_remove;

typedef struct jr__op_batch {
    uint32_t count;     /* 1..JR__OP_BATCH_MAX */
    const uint8_t *ops; /* the inner ops (read with jr__op_batch_next) */
    size_t len;
} jr__op_batch;

typedef struct jr__stream_op {
    int type;   /* enum jr__op_type */
    int64_t ts; /* ns, >= 0; assigned by the leader (0 for a batch: its ops carry their own) */
    union {
        jr__op_publish pub;
        jr__op_delete del;
        jr__op_purge purge;
        jr__op_config config;
        jr__op_batch batch;
        jr__op_remove remove;
    } u;
} jr__stream_op;

/* Appends the encoding of op to out. Requires nothing; checks everything the decoder checks.
 * 0; JR_EINVAL (op not encodable, e.g. a length over a limit, unknown flags, a batch op: use
 * jr__op_encode_batch; nothing appended); JR_ENOMEM (out->err set). */
int jr__op_encode(const jr__stream_op *op, jr__buf *out);

/* Appends one BATCH entry holding ops[0..n) (none of them a batch), 1 <= n <= JR__OP_BATCH_MAX.
 * 0, JR_EINVAL (nothing appended) or JR_ENOMEM. */
int jr__op_encode_batch(const jr__stream_op *ops, size_t n, jr__buf *out);

/* Decodes exactly len bytes into *op (borrowing from data). 0; JR_ECORRUPT for anything
 * malformed (see Strictness); JR_EVERSION for an intact entry of another version. On failure
 * *op is zeroed. */
int jr__op_decode(const void *data, size_t len, jr__stream_op *op);

/* Iterates over the ops of a decoded batch. */
typedef struct jr__op_iter {
    jr__rd rd;
    uint32_t left;
} jr__op_iter;

void jr__op_batch_iter(const jr__stream_op *batch, jr__op_iter *it);
/* Decodes the next op of the batch: 0 with *got 1 and *op set, 0 with *got 0 at the end. A
 * batch that passed jr__op_decode (which validated every op in it, so they are not validated
 * again here) always iterates to its count; a failure (only possible on a hand-made iterator)
 * returns JR_ECORRUPT with *got 0. */
int jr__op_batch_next(jr__op_iter *it, jr__stream_op *op, int *got);

#endif
