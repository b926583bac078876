/*
 * op — the records a consumer's Raft log carries, and their binary encoding.
 *
 * The consumer leader turns what happens to its consumer (a message delivered, an ack, a NAK, a
 * message that reached max_deliver, a reset...) into records, batches many of them into one log
 * entry per flush and proposes it; every replica iterates the committed entry and applies the
 * records in order to its state machine (state.h). A record carries everything its effect
 * depends on — notably the time, read from the leader's clock: the state machine never reads a
 * clock. This is the counterpart of JetStream's updateDeliveredOp, updateAcksOp, updateSkipOp and
 * resetSeqOp, with NAK, progress, term and max-deliveries as records of their own.
 *
 * Records (fields not listed are 0)
 *   DELIVERED {dseq >= 1, sseq >= 1, dc >= 1, ts}  a delivery: dc 1 the first, > 1 again
 *   ACK       {dseq, sseq >= 1, ts}     an ack (explicit: that one; all: every one <= sseq)
 *   NAK       {sseq >= 1, delay_ns >= 0, ts}  redeliver at ts + delay_ns (0: now)
 *   PROGRESS  {sseq >= 1, ts}           in progress: the ack wait restarts at ts
 *   TERM      {sseq >= 1, ts}           acked, never redelivered (the reason is not kept)
 *   SKIP      {sseq >= 1}               delivered.stream_seq moves to sseq without a delivery
 *   RESET     {sseq >= 1}               restart at sseq: delivered = floor = {0, sseq - 1}
 *   MAXDELIV  {sseq >= 1}               reached max_deliver: leaves pending, not acked
 *
 * Encoding, version 1 (varint = unsigned LEB128, canonical; u64 little-endian):
 *   entry  = version:u8 count:varint record*count xxh3:u64   (xxh3 of every byte before it)
 *   record = type:u8 then the type's fields above, in the order listed, each a varint
 *            (delay_ns as the varint of a non-negative value)
 *
 * Strictness: the encoder refuses (JR_EINVAL, nothing appended) every record the decoder would
 * not accept — a zero where a field must be >= 1, a negative delay, a non-zero field the type
 * does not carry — so a decoded record is exactly the record that was encoded. The decoder
 * (jr__cop_iter_init) checks the whole entry before the first record is returned: the length,
 * the checksum, the version (another one is JR_EVERSION), every record (a type above MAXDELIV in
 * an intact entry is a later release's record: JR_EVERSION; type 0, a zero where one is
 * required, an overlong varint, a count of 0 or over JR__COP_BATCH_MAX, a record cut short,
 * trailing bytes: JR_ECORRUPT). An entry is thus either entirely usable or entirely refused, and
 * iterating allocates nothing.
 *
 * Semantics are not the codec's business: whether an ack names a pending message is for the
 * state machine to decide (and to ignore identically on every replica).
 */
#ifndef JR_CONSUMER_OP_H
#define JR_CONSUMER_OP_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "util/buf.h"

#define JR__COP_VERSION 1
#define JR__COP_BATCH_MAX 65536 /* records in one entry */

enum jr__cop_type {
    JR__COP_DELIVERED = 1,
    JR__COP_ACK = 2,
    JR__COP_NAK = 3,
    JR__COP_PROGRESS = 4,
    JR__COP_TERM = 5,
    JR__COP_SKIP = 6,
    JR__COP_RESET = 7,
    JR__COP_MAXDELIV = 8,
};
#define JR__COP_TYPE_LAST JR__COP_MAXDELIV

/* One record. Times are ns (the leader's clock); sequences are stream (sseq) and consumer
 * (dseq) sequences; dc is the delivery count. */
typedef struct jr__crec {
    uint8_t type; /* enum jr__cop_type */
    uint64_t dseq;
    uint64_t sseq;
    uint32_t dc;
    uint64_t ts;
    int64_t delay_ns;
} jr__crec;

/* Checks r as the encoder does: 0 or JR_EINVAL. */
int jr__crec_check(const jr__crec *r);

/* Appends one entry holding recs[0..n), 1 <= n <= JR__COP_BATCH_MAX. 0; JR_EINVAL (a record or
 * n refused, nothing appended); JR_ENOMEM (out->err set). */
int jr__cop_encode(const jr__crec *recs, size_t n, jr__buf *out);

/* Iterates over the records of an entry without allocating; borrows the entry's bytes. */
typedef struct jr__cop_iter {
    jr__rd rd;
    uint32_t left;   /* records not yet returned */
    uint32_t firsts; /* DELIVERED records of a first delivery (dc 1) in the entry (what a state
                        machine reserves room for before applying it) */
} jr__cop_iter;

/* Checks the whole entry (see Strictness) and positions it before the first record.
 * 0; JR_ECORRUPT; JR_EVERSION. On failure the iterator returns no record. */
int jr__cop_iter_init(jr__cop_iter *it, const void *data, size_t len);

/* Number of records in the entry (after a successful init: the count, >= 1). */
static inline uint32_t jr__cop_iter_left(const jr__cop_iter *it)
{
    return it->left;
}

/* The next record: 0 with *got 1 and *rec set; 0 with *got 0 at the end. An iterator that
 * passed jr__cop_iter_init always reaches its count; JR_ECORRUPT (with *got 0) is only possible
 * on an iterator not made by it. */
int jr__cop_next(jr__cop_iter *it, jr__crec *rec, int *got);

#endif
