/*
 * state — a consumer's replicated state machine: what was delivered, what waits for an ack, and
 * the ack floor, as JetStream's ConsumerState (consumer.go, and the stores' UpdateDelivered /
 * UpdateAcks), driven by the records of op.h.
 *
 * Owns
 *   delivered    the last delivered pair {consumer seq, stream seq} and when (the record's ts);
 *   pending      stream seq -> {dseq of its first delivery, ts of the last delivery or progress,
 *                delivery count, NAK deadline if any}: the messages that wait for an ack;
 *   ack floor    the highest contiguous acked pair (derived, see below) and when it last moved;
 *   redelivered  how many pending messages were delivered more than once (JetStream's
 *                Redelivered map; a message that leaves pending through MAXDELIV leaves it too);
 *   a copy of the policy (ack policy, ack wait, backoff, max_deliver) for the leader's queries.
 *
 * Pure: no I/O, no clock (every time comes in a record or as `now`), deterministic: the same
 * records applied to the same state give the same state and the same byte-identical snapshot on
 * every replica. What apply decides depends on the record, the state and the ack policy only —
 * never on ack_wait, backoff or max_deliver, which a config update changes at a point of its
 * own that need not be the same log position on every replica; those feed only the leader's
 * queries (deadlines, num_redelivered). JetStream refuses to change the ack policy, and so does
 * jr__cstate_set_policy.
 *
 * The ack floor. JetStream's consumer stores move the floor one ack at a time (UpdateAcks,
 * explicit: to the acked pair when its dseq is floor + 1, then to just below the next pending
 * message; to delivered when nothing is pending; ack all: to the acked pair). Here it is
 * derived, with the same result whenever JetStream's is well defined:
 *   nothing pending: floor = delivered (both sequences);
 *   else, with p the pending message of the lowest stream seq:
 *        floor = {p.dseq - 1, p.sseq - 1}.
 * A pending message keeps the consumer seq of its first delivery, as the leader's own pending
 * map does (consumer.go trackPending updates only the timestamp on a redelivery; the stores'
 * UpdateDelivered overwrites it, which can put the floor's consumer seq above another pending
 * message's). First deliveries come in stream order with growing consumer seqs, so pending
 * dseqs grow with their sseqs and the floor's pair stays below every pending pair.
 * Ack all acks every pending message <= sseq whether or not sseq itself is pending, as the
 * leader's processAckMsg does (the stores want sseq pending).
 *
 * Invariants (jr__cstate_check; asserted after every apply in invariants builds while
 * the arrays hold at most 1024 slots)
 *   floor.stream_seq <= delivered.stream_seq and floor.consumer_seq <= delivered.consumer_seq;
 *   every pending sseq is in (floor.stream_seq, delivered.stream_seq], its dseq in
 *   (floor.consumer_seq, delivered.consumer_seq], its dc >= 1; pending is strictly increasing
 *   in both sseq and dseq; ack policy none: nothing pending; redelivered = #pending with dc > 1;
 *   the deadline index holds exactly the pending messages, each at its deadline.
 *
 * Cost: apply is O(log n) amortized in the pending count (an ack-all O(log n) per message it
 * acks), the queries O(log n) or O(1), nothing scans the whole pending set (but RESET and a
 * policy change, O(n)). Pending lives in one array in stream order (first deliveries always come
 * above every pending seq, so they append) with a min-tree of deadlines over it; acked slots
 * become holes, squeezed out when the array fills (amortized O(1) per delivery, no allocation).
 * Memory is allocated only when the array must grow — never on a steady path whose pending count
 * stays below the largest it has been — and given back when nothing is pending and a burst had
 * grown it past JR__CSTATE_KEEP slots. The first allocation is JR__CSTATE_MIN slots: a consumer
 * that has delivered keeps its arrays while it idles, on every replica (4 slots: 240 bytes of
 * heap; growth doubles, so a busy consumer reaches its size in a few allocations).
 */
#ifndef JR_CONSUMER_STATE_H
#define JR_CONSUMER_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "consumer/op.h"
#include "jetraft.h"
#include "util/buf.h"

#define JR__CSTATE_VERSION 1
#define JR__CPOLICY_BACKOFF_MAX 1024 /* backoff values kept (JetStream sets no limit) */
#define JR__CSTATE_KEEP 4096         /* pending slots kept allocated when nothing is pending */
#define JR__CSTATE_MIN 4             /* pending slots of the first allocation (a power of two) */

/* What the state machine needs of the consumer config (copied in). */
typedef struct jr__cpolicy {
    int ack_policy;            /* enum jr_ack_policy */
    int64_t ack_wait_ns;       /* >= 0 */
    const int64_t *backoff_ns; /* each >= 0; NULL with nbackoff 0 */
    size_t nbackoff;           /* <= JR__CPOLICY_BACKOFF_MAX */
    int64_t max_deliver;       /* <= 0: unlimited */
} jr__cpolicy;

typedef struct jr__cseqs {
    uint64_t consumer_seq;
    uint64_t stream_seq;
    uint64_t last_active_ns; /* 0: never */
} jr__cseqs;

/* One pending message (a slot of the array; dc 0 marks a hole). */
typedef struct jr__cpend {
    uint64_t sseq;
    uint64_t dseq;         /* the consumer seq of its first delivery */
    uint64_t ts;           /* ns of the last delivery or progress */
    uint64_t nak_deadline; /* with nak: redeliver at this time, whatever the ack wait */
    uint32_t dc;           /* deliveries so far, >= 1; 0: a hole */
    uint8_t nak;
} jr__cpend;

typedef struct jr__cstate {
    const jr_allocator *alloc;
    jr__cpolicy policy; /* policy.backoff_ns points to backoff (owned) */
    int64_t *backoff;
    jr__cseqs delivered;
    uint64_t floor_last_ns; /* when an ack last acked something (ack none: the last delivery) */
    /* pending: slots [head, tail) of pend, in increasing sseq, holes included; head is live or
     * head == tail */
    jr__cpend *pend;
    size_t head, tail, cap; /* cap 0 or a power of two */
    size_t npending;
    uint64_t nredelivered;
    /* min-tree of deadlines: tree[1] the root, tree[cap + i] slot i (UINT64_MAX: hole) */
    uint64_t *tree;
} jr__cstate;

/* Why a record was ignored (jr__capply.reason); the same on every replica. */
enum jr__cignore {
    JR__CIGN_NONE = 0,          /* applied */
    JR__CIGN_NO_ACKS = 1,       /* ack policy none: there is nothing pending to act on */
    JR__CIGN_NOT_PENDING = 2,   /* the stream seq is not pending (acked, at/below the floor...) */
    JR__CIGN_NOT_DELIVERED = 3, /* a sequence above delivered */
    JR__CIGN_STALE = 4, /* a delivery at or below delivered, a count not above the last, a skip
                           at or below delivered */
};

/* What one record did. */
typedef struct jr__capply {
    int applied;         /* 1 applied, 0 ignored */
    int reason;          /* enum jr__cignore */
    uint64_t acked_from; /* stream seqs newly acknowledged, for interest and work-queue */
    uint64_t acked_to;   /* retention: [from, to], 0,0 none (ack none: the delivery itself) */
    int max_delivered;   /* MAXDELIV took effect (for the advisory) */
    int terminated;      /* TERM took effect (for the advisory) */
    uint64_t dseq;       /* NAK, TERM, MAXDELIV, explicit ACK: the pending message's dseq */
    uint32_t dc;         /* and its delivery count */
} jr__capply;

/* Initialises st empty with a copy of p. 0; JR_EINVAL (p invalid: st is then empty with ack
 * policy none, still safe to free); JR_ENOMEM (likewise). */
int jr__cstate_init(jr__cstate *st, const jr_allocator *a, const jr__cpolicy *p);
/* Replaces the policy (a config update: ack wait, backoff, max_deliver) and re-keys every
 * deadline, O(n). 0; JR_EINVAL (invalid, or another ack policy); JR_ENOMEM. Nothing changes on
 * failure. */
int jr__cstate_set_policy(jr__cstate *st, const jr__cpolicy *p);
void jr__cstate_free(jr__cstate *st);

/* Applies one record (valid: jr__crec_check). 0 with *out saying whether it was applied or
 * ignored and why; JR_EINVAL for a record the codec would refuse (nothing changed); JR_ENOMEM
 * (nothing changed: the caller retries or stops). Effects, record by record:
 *   DELIVERED dc 1: a first delivery; ignored (STALE) unless sseq > delivered.stream_seq and
 *       dseq > delivered.consumer_seq; delivered = {dseq, sseq, ts}; pending gets sseq with
 *       {dseq, ts, dc 1} — ack none: nothing pending, out acks sseq itself.
 *   DELIVERED dc > 1: a redelivery of a pending sseq (else NOT_PENDING; ack none NO_ACKS);
 *       ignored (STALE) unless dseq > delivered.consumer_seq and dc > its count; then its ts and
 *       count are the record's, its NAK deadline is dropped, delivered.consumer_seq = dseq and
 *       delivered.last_active = ts (delivered.stream_seq stays).
 *   ACK: ignored if sseq > delivered.stream_seq or dseq > delivered.consumer_seq
 *       (NOT_DELIVERED). Explicit: acks sseq if pending (else NOT_PENDING). All: acks every
 *       pending <= sseq (NOT_PENDING if none), out = [floor.stream_seq + 1, sseq] as JetStream
 *       acks the stream from the floor. Ack none: NO_ACKS. The floor's time becomes ts.
 *   NAK: a pending sseq is to be redelivered at ts + delay_ns (saturating; 0: at once) whatever
 *       the ack wait and backoff; its ts stays. (JetStream stores the same deadline as the
 *       timestamp ts - ack_wait + delay, which a backoff then lengthens; here the deadline is
 *       explicit, kept until the next delivery or progress, and survives a policy change.)
 *   PROGRESS: a pending sseq's ts becomes ts (the wait restarts; a NAK deadline is dropped).
 *   TERM: a pending sseq is acked (terminated = 1); the floor's time becomes ts.
 *   SKIP: delivered.stream_seq = sseq if above it (else STALE); no delivery, no consumer seq.
 *   RESET: pending and redelivered cleared, delivered = floor = {0, sseq - 1} (times kept);
 *       always applied.
 *   MAXDELIV: a pending sseq leaves pending without an ack (max_delivered = 1).
 * A NAK, PROGRESS, TERM or MAXDELIV of a non-pending seq is ignored (NOT_PENDING; ack none:
 * NO_ACKS). Allocates only when a first delivery must grow the pending array (and fails only if
 * every slot is live: with a hole left it squeezes instead; jr__cstate_reserve makes room ahead).
 */
int jr__cstate_apply(jr__cstate *st, const jr__crec *r, jr__capply *out);

/* Room for n more pending messages: the next n first deliveries cannot fail (make_room squeezes
 * holes out when it cannot grow). 0 or JR_ENOMEM (nothing changed). */
int jr__cstate_reserve(jr__cstate *st, size_t n);

/* Room for every first delivery of the entry a fresh iterator (jr__cop_iter_init, which counted
 * them while checking the entry) holds: after it, applying those records one by one cannot fail,
 * so a replica that applies an entry record by record (to act on each jr__capply) applies it
 * whole or, on JR_ENOMEM here, not at all. */
int jr__cstate_reserve_entry(jr__cstate *st, const jr__cop_iter *it);

/* Applies every record of an encoded entry in order, all or nothing: jr__cop_iter_init checks
 * the entry first (JR_ECORRUPT, JR_EVERSION), then room is reserved for every first delivery in
 * it (JR_ENOMEM), and then no record can fail. The per-record results are not reported: a
 * caller that needs them (acks for retention, advisories) iterates and applies itself. */
int jr__cstate_apply_entry(jr__cstate *st, const void *data, size_t len);

/* The ack floor (derived, see above). */
void jr__cstate_ack_floor(const jr__cstate *st, jr__cseqs *floor);
static inline const jr__cseqs *jr__cstate_delivered(const jr__cstate *st)
{
    return &st->delivered;
}

/* Leader queries. A pending message's deadline is its NAK deadline if it has one, else
 * ts + wait with wait = backoff[min(dc - 1, nbackoff - 1)] when a backoff is set, else ack_wait
 * (saturating, and at most UINT64_MAX - 1: UINT64_MAX marks a hole in the tree, and a query at
 * now_ns = UINT64_MAX returns every pending message in turn, holes never). Ack policy none:
 * nothing is ever pending. */

/* The lowest stream seq whose deadline is <= now, with its delivery count (the leader redelivers
 * it with dc + 1, or proposes MAXDELIV when dc reached max_deliver). 0; JR_ENOTFOUND. */
int jr__cstate_next_expired(const jr__cstate *st, uint64_t now_ns, uint64_t *sseq, uint32_t *dc);
/* The same among the stream seqs above `after` (the leader walks every expired delivery in
 * stream order, skipping those whose redelivery it has proposed already). */
int jr__cstate_next_expired_after(const jr__cstate *st, uint64_t now_ns, uint64_t after,
                                  uint64_t *sseq, uint32_t *dc);
/* The earliest deadline of any pending message; UINT64_MAX if none. O(1). */
uint64_t jr__cstate_next_deadline(const jr__cstate *st);
/* One pending message: 0; JR_ENOTFOUND. Any out-parameter may be NULL. */
int jr__cstate_pending_get(const jr__cstate *st, uint64_t sseq, uint64_t *dseq, uint32_t *dc,
                           uint64_t *ts);
/* The redelivery deadline of a pending message: 0; JR_ENOTFOUND. */
int jr__cstate_pending_deadline(const jr__cstate *st, uint64_t sseq, uint64_t *deadline);
static inline size_t jr__cstate_num_ack_pending(const jr__cstate *st)
{
    return st->npending;
}
/* Pending messages delivered more than once (JetStream's num_redelivered); 0 when
 * max_deliver is 1, as JetStream reports it. */
uint64_t jr__cstate_num_redelivered(const jr__cstate *st);

/* Snapshot, version 1 (varint canonical; u64 little-endian):
 *   version:u8 delivered.consumer_seq delivered.stream_seq delivered.last_active_ns
 *   floor_last_ns npending:varint then npending times, in increasing sseq:
 *     sseq (the first absolute, then the distance from the previous, >= 1)
 *     dseq (likewise) dc:varint ts:varint nak:u8 [nak_deadline:varint, iff nak is 1]
 *   xxh3:u64 of every byte before it
 * The encoding is canonical: replicas that applied the same records write the same bytes.
 * Appends to out, reserving an upper bound of its size once: 0 or JR_ENOMEM. */
int jr__cstate_snapshot(const jr__cstate *st, jr__buf *out);
/* Replaces st's state (its policy stays) with the snapshot's, all or nothing. Refuses what the
 * encoder would not write, and state that breaks an invariant: JR_ECORRUPT; another version:
 * JR_EVERSION; JR_ENOMEM. On failure st is unchanged. */
int jr__cstate_restore(jr__cstate *st, const void *data, size_t len);

/* Checks every invariant above, O(n): 0 or JR_ECORRUPT. */
int jr__cstate_check(const jr__cstate *st);

#endif
