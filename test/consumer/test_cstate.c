/* The consumer state machine: each record's effect and the cases it ignores, the three ack
 * policies, the ack floor under out-of-order acks, redelivery deadlines (ack wait, backoff, NAK
 * delays, progress), max_deliver, reset, snapshots (canonical, strict, all or nothing), a
 * comparison with a plain reference model over many seeds, and allocation failures at every
 * point leaving the state unchanged. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer/state.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "util/rand.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define SEC 1000000000ULL

static jr__cpolicy policy(int ack, int64_t wait)
{
    jr__cpolicy p;
    memset(&p, 0, sizeof p);
    p.ack_policy = ack;
    p.ack_wait_ns = wait;
    p.max_deliver = -1;
    return p;
}

static jr__cstate st;
static jr__capply out;
static int checking = 1; /* apply() checks every invariant after each record */

static void init(int ack)
{
    jr__cpolicy p = policy(ack, 30 * SEC);
    ck_assert_int_eq(jr__cstate_init(&st, NULL, &p), 0);
}

static int apply(uint8_t type, uint64_t dseq, uint64_t sseq, uint32_t dc, uint64_t ts,
                 int64_t delay)
{
    jr__crec r;
    memset(&r, 0, sizeof r);
    r.type = type;
    r.dseq = dseq;
    r.sseq = sseq;
    r.dc = dc;
    r.ts = ts;
    r.delay_ns = delay;
    ck_assert_int_eq(jr__cstate_apply(&st, &r, &out), 0);
    if (checking) ck_assert_int_eq(jr__cstate_check(&st), 0);
    return out.applied;
}

static int deliver(uint64_t dseq, uint64_t sseq, uint32_t dc, uint64_t ts)
{
    return apply(JR__COP_DELIVERED, dseq, sseq, dc, ts, 0);
}
static int ack(uint64_t dseq, uint64_t sseq, uint64_t ts)
{
    return apply(JR__COP_ACK, dseq, sseq, 0, ts, 0);
}
static int one(uint8_t type, uint64_t sseq, uint64_t ts)
{
    if (type == JR__COP_SKIP || type == JR__COP_RESET || type == JR__COP_MAXDELIV) ts = 0;
    return apply(type, 0, sseq, 0, ts, 0);
}

static void floor_is(uint64_t dseq, uint64_t sseq)
{
    jr__cseqs f;
    jr__cstate_ack_floor(&st, &f);
    ck_assert_uint_eq(f.consumer_seq, dseq);
    ck_assert_uint_eq(f.stream_seq, sseq);
}
static void delivered_is(uint64_t dseq, uint64_t sseq)
{
    ck_assert_uint_eq(jr__cstate_delivered(&st)->consumer_seq, dseq);
    ck_assert_uint_eq(jr__cstate_delivered(&st)->stream_seq, sseq);
}
static void acked_is(uint64_t from, uint64_t to)
{
    ck_assert_uint_eq(out.acked_from, from);
    ck_assert_uint_eq(out.acked_to, to);
}

START_TEST(a_first_delivery_is_pending_until_acked)
{
    init(JR_ACK_EXPLICIT);
    floor_is(0, 0);
    delivered_is(0, 0);
    ck_assert(deliver(1, 10, 1, 100));
    delivered_is(1, 10);
    ck_assert_uint_eq(jr__cstate_delivered(&st)->last_active_ns, 100);
    floor_is(0, 9);
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 1);
    uint64_t dseq, ts;
    uint32_t dc;
    ck_assert_int_eq(jr__cstate_pending_get(&st, 10, &dseq, &dc, &ts), 0);
    ck_assert_uint_eq(dseq, 1);
    ck_assert_uint_eq(dc, 1);
    ck_assert_uint_eq(ts, 100);
    ck_assert_int_eq(jr__cstate_pending_get(&st, 9, NULL, NULL, NULL), JR_ENOTFOUND);
    ck_assert(ack(1, 10, 200));
    acked_is(10, 10);
    ck_assert_uint_eq(out.dseq, 1);
    floor_is(1, 10);
    jr__cseqs f;
    jr__cstate_ack_floor(&st, &f);
    ck_assert_uint_eq(f.last_active_ns, 200);
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 0);
    jr__cstate_free(&st);
}
END_TEST

START_TEST(stale_and_unknown_records_are_ignored)
{
    init(JR_ACK_EXPLICIT);
    ck_assert(deliver(1, 1, 1, 1));
    ck_assert(deliver(2, 2, 1, 2));
    /* deliveries at or below delivered */
    ck_assert(!deliver(3, 2, 1, 3));
    ck_assert_int_eq(out.reason, JR__CIGN_STALE);
    ck_assert(!deliver(2, 3, 1, 3));
    ck_assert_int_eq(out.reason, JR__CIGN_STALE);
    /* acks above delivered */
    ck_assert(!ack(1, 3, 5));
    ck_assert_int_eq(out.reason, JR__CIGN_NOT_DELIVERED);
    ck_assert(!ack(3, 1, 5));
    ck_assert_int_eq(out.reason, JR__CIGN_NOT_DELIVERED);
    acked_is(0, 0);
    /* a redelivery of a seq not pending, or not above its count, or below delivered */
    ck_assert(!deliver(3, 5, 2, 3));
    ck_assert_int_eq(out.reason, JR__CIGN_NOT_PENDING);
    ck_assert(!deliver(3, 1, 1, 3));
    ck_assert_int_eq(out.reason, JR__CIGN_STALE);
    ck_assert(!deliver(2, 1, 2, 3));
    ck_assert_int_eq(out.reason, JR__CIGN_STALE);
    /* ack twice; ack at or below the floor */
    ck_assert(ack(1, 1, 5));
    ck_assert(!ack(1, 1, 6));
    ck_assert_int_eq(out.reason, JR__CIGN_NOT_PENDING);
    floor_is(1, 1);
    /* NAK, progress, term, max deliveries of what is not pending */
    uint8_t types[] = {JR__COP_NAK, JR__COP_PROGRESS, JR__COP_TERM, JR__COP_MAXDELIV};
    for (size_t i = 0; i < N(types); i++) {
        ck_assert(!one(types[i], 1, 7));
        ck_assert_int_eq(out.reason, JR__CIGN_NOT_PENDING);
        ck_assert(!one(types[i], 9, 7));
    }
    /* a skip at or below delivered */
    ck_assert(!one(JR__COP_SKIP, 2, 0));
    ck_assert_int_eq(out.reason, JR__CIGN_STALE);
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 1);
    delivered_is(2, 2);
    /* an invalid record is refused, not ignored */
    jr__crec bad = {0};
    bad.type = JR__COP_ACK;
    ck_assert_int_eq(jr__cstate_apply(&st, &bad, &out), JR_EINVAL);
    jr__cstate_free(&st);
}
END_TEST

START_TEST(the_floor_follows_out_of_order_acks)
{
    init(JR_ACK_EXPLICIT);
    for (uint64_t i = 1; i <= 5; i++) ck_assert(deliver(i, i * 2, 1, i));
    floor_is(0, 1);
    ck_assert(ack(3, 6, 10)); /* a hole: the floor stays below 2 */
    floor_is(0, 1);
    ck_assert(ack(2, 4, 10));
    floor_is(0, 1);
    ck_assert(ack(1, 2, 10)); /* 2, 4, 6 acked: below 8 */
    floor_is(3, 7);
    ck_assert(ack(5, 10, 10));
    floor_is(3, 7);
    ck_assert(ack(4, 8, 10)); /* nothing pending: delivered */
    floor_is(5, 10);
    jr__cstate_free(&st);
}
END_TEST

START_TEST(ack_all_acks_everything_below)
{
    init(JR_ACK_ALL);
    for (uint64_t i = 1; i <= 5; i++) ck_assert(deliver(i, i + 10, 1, i));
    ck_assert(ack(3, 13, 20));
    acked_is(11, 13);
    floor_is(3, 13);
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 2);
    ck_assert(!ack(2, 12, 21)); /* below the floor */
    ck_assert_int_eq(out.reason, JR__CIGN_NOT_PENDING);
    ck_assert(!ack(3, 13, 21));
    /* TERM acks only that one, even under ack all */
    ck_assert(one(JR__COP_TERM, 15, 22));
    ck_assert(out.terminated);
    acked_is(15, 15);
    floor_is(3, 13);
    ck_assert(deliver(6, 20, 1, 30)); /* 16..19 filtered out */
    ck_assert(ack(6, 20, 31));
    acked_is(14, 20); /* from the floor, as JetStream acks the stream */
    floor_is(6, 20);
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 0);
    jr__cstate_free(&st);
}
END_TEST

START_TEST(ack_none_acks_on_delivery)
{
    init(JR_ACK_NONE);
    ck_assert(deliver(1, 3, 1, 10));
    acked_is(3, 3);
    floor_is(1, 3);
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 0);
    jr__cseqs f;
    jr__cstate_ack_floor(&st, &f);
    ck_assert_uint_eq(f.last_active_ns, 10);
    ck_assert(!ack(1, 3, 11));
    ck_assert_int_eq(out.reason, JR__CIGN_NO_ACKS);
    ck_assert(!deliver(2, 3, 2, 11));
    ck_assert_int_eq(out.reason, JR__CIGN_NO_ACKS);
    uint8_t types[] = {JR__COP_NAK, JR__COP_PROGRESS, JR__COP_TERM, JR__COP_MAXDELIV};
    for (size_t i = 0; i < N(types); i++) {
        ck_assert(!one(types[i], 3, 12));
        ck_assert_int_eq(out.reason, JR__CIGN_NO_ACKS);
    }
    ck_assert(one(JR__COP_SKIP, 7, 0));
    floor_is(1, 7);
    ck_assert_uint_eq(jr__cstate_next_deadline(&st), UINT64_MAX);
    jr__cstate_free(&st);
}
END_TEST

START_TEST(a_redelivery_keeps_the_first_consumer_seq)
{
    init(JR_ACK_EXPLICIT);
    ck_assert(deliver(1, 1, 1, 10));
    ck_assert(deliver(2, 2, 1, 11));
    ck_assert(deliver(3, 1, 2, 50));
    delivered_is(3, 2);
    ck_assert_uint_eq(jr__cstate_delivered(&st)->last_active_ns, 50);
    uint64_t dseq, ts;
    uint32_t dc;
    ck_assert_int_eq(jr__cstate_pending_get(&st, 1, &dseq, &dc, &ts), 0);
    ck_assert_uint_eq(dseq, 1);
    ck_assert_uint_eq(dc, 2);
    ck_assert_uint_eq(ts, 50);
    ck_assert_uint_eq(jr__cstate_num_redelivered(&st), 1);
    floor_is(0, 0);
    ck_assert(deliver(4, 1, 3, 60));
    ck_assert_uint_eq(jr__cstate_num_redelivered(&st), 1); /* distinct messages */
    ck_assert(ack(4, 1, 70));
    ck_assert_uint_eq(out.dc, 3);
    ck_assert_uint_eq(jr__cstate_num_redelivered(&st), 0);
    floor_is(1, 1);
    jr__cstate_free(&st);
}
END_TEST

START_TEST(num_redelivered_is_zero_with_max_deliver_one)
{
    jr__cpolicy p = policy(JR_ACK_EXPLICIT, SEC);
    p.max_deliver = 1;
    ck_assert_int_eq(jr__cstate_init(&st, NULL, &p), 0);
    ck_assert(deliver(1, 1, 1, 10));
    ck_assert(deliver(2, 1, 2, 20)); /* the state records it whatever the limit */
    ck_assert_uint_eq(jr__cstate_num_redelivered(&st), 0);
    p.max_deliver = 5;
    ck_assert_int_eq(jr__cstate_set_policy(&st, &p), 0);
    ck_assert_uint_eq(jr__cstate_num_redelivered(&st), 1);
    jr__cstate_free(&st);
}
END_TEST

static uint64_t deadline_of(uint64_t sseq)
{
    uint64_t d;
    ck_assert_int_eq(jr__cstate_pending_deadline(&st, sseq, &d), 0);
    return d;
}

START_TEST(the_ack_wait_sets_the_deadline)
{
    init(JR_ACK_EXPLICIT); /* 30 s */
    uint64_t sseq;
    uint32_t dc;
    ck_assert_uint_eq(jr__cstate_next_deadline(&st), UINT64_MAX);
    ck_assert_int_eq(jr__cstate_next_expired(&st, UINT64_MAX, &sseq, &dc), JR_ENOTFOUND);
    ck_assert(deliver(1, 1, 1, 5 * SEC));
    ck_assert(deliver(2, 2, 1, 1 * SEC)); /* times come from records, in any order */
    ck_assert_uint_eq(jr__cstate_next_deadline(&st), 31 * SEC);
    ck_assert_int_eq(jr__cstate_next_expired(&st, 31 * SEC - 1, &sseq, &dc), JR_ENOTFOUND);
    ck_assert_int_eq(jr__cstate_next_expired(&st, 31 * SEC, &sseq, &dc), 0);
    ck_assert_uint_eq(sseq, 2);
    ck_assert_uint_eq(dc, 1);
    /* both expired: the lowest stream seq first, not the earliest deadline */
    ck_assert_int_eq(jr__cstate_next_expired(&st, 35 * SEC, &sseq, &dc), 0);
    ck_assert_uint_eq(sseq, 1);
    /* a deadline near the end of time saturates, below UINT64_MAX (a hole's mark) */
    ck_assert(deliver(3, 3, 1, UINT64_MAX - 5));
    ck_assert_uint_eq(deadline_of(3), UINT64_MAX - 1);
    jr__cstate_free(&st);
}
END_TEST

START_TEST(the_backoff_schedule_repeats_its_last_value)
{
    int64_t backoff[] = {1 * SEC, 5 * SEC, 20 * SEC};
    jr__cpolicy p = policy(JR_ACK_EXPLICIT, 1 * SEC);
    p.backoff_ns = backoff;
    p.nbackoff = N(backoff);
    p.max_deliver = 10;
    ck_assert_int_eq(jr__cstate_init(&st, NULL, &p), 0);
    backoff[0] = 99; /* copied in */
    ck_assert(deliver(1, 1, 1, 100 * SEC));
    ck_assert_uint_eq(deadline_of(1), 101 * SEC);
    uint64_t want[] = {0, 1, 5, 20, 20, 20};
    for (uint32_t dc = 2; dc <= 5; dc++) {
        ck_assert(deliver(dc, 1, dc, 100 * SEC));
        ck_assert_uint_eq(deadline_of(1), 100 * SEC + want[dc] * SEC);
    }
    ck_assert_uint_eq(jr__cstate_next_deadline(&st), 120 * SEC);
    /* a config update re-keys every deadline */
    int64_t b2[] = {2 * SEC};
    p.backoff_ns = b2;
    p.nbackoff = 1;
    ck_assert_int_eq(jr__cstate_set_policy(&st, &p), 0);
    ck_assert_int_eq(jr__cstate_check(&st), 0);
    ck_assert_uint_eq(deadline_of(1), 102 * SEC);
    p.nbackoff = 0;
    p.ack_wait_ns = 7 * SEC;
    ck_assert_int_eq(jr__cstate_set_policy(&st, &p), 0);
    ck_assert_uint_eq(jr__cstate_next_deadline(&st), 107 * SEC);
    /* the ack policy cannot change; invalid policies are refused */
    p.ack_policy = JR_ACK_ALL;
    ck_assert_int_eq(jr__cstate_set_policy(&st, &p), JR_EINVAL);
    p.ack_policy = JR_ACK_EXPLICIT;
    p.ack_wait_ns = -1;
    ck_assert_int_eq(jr__cstate_set_policy(&st, &p), JR_EINVAL);
    p.ack_wait_ns = 1;
    int64_t neg[] = {-1};
    p.backoff_ns = neg;
    p.nbackoff = 1;
    ck_assert_int_eq(jr__cstate_set_policy(&st, &p), JR_EINVAL);
    p.backoff_ns = NULL;
    ck_assert_int_eq(jr__cstate_set_policy(&st, &p), JR_EINVAL);
    ck_assert_uint_eq(jr__cstate_next_deadline(&st), 107 * SEC);
    jr__cstate_free(&st);
}
END_TEST

START_TEST(a_nak_sets_an_explicit_deadline)
{
    int64_t backoff[] = {10 * SEC, 60 * SEC};
    jr__cpolicy p = policy(JR_ACK_EXPLICIT, 10 * SEC);
    p.backoff_ns = backoff;
    p.nbackoff = N(backoff);
    ck_assert_int_eq(jr__cstate_init(&st, NULL, &p), 0);
    ck_assert(deliver(1, 1, 1, 100 * SEC));
    ck_assert(deliver(2, 2, 1, 100 * SEC));
    ck_assert(apply(JR__COP_NAK, 0, 2, 0, 101 * SEC, 3 * (int64_t)SEC));
    ck_assert_uint_eq(out.dseq, 2);
    ck_assert_uint_eq(out.dc, 1);
    ck_assert_uint_eq(deadline_of(2), 104 * SEC);
    uint64_t sseq, ts;
    uint32_t dc;
    ck_assert_int_eq(jr__cstate_next_expired(&st, 104 * SEC, &sseq, &dc), 0);
    ck_assert_uint_eq(sseq, 2);
    ck_assert_int_eq(jr__cstate_pending_get(&st, 2, NULL, NULL, &ts), 0);
    ck_assert_uint_eq(ts, 100 * SEC);
    /* a NAK without a delay: now */
    ck_assert(apply(JR__COP_NAK, 0, 1, 0, 102 * SEC, 0));
    ck_assert_uint_eq(jr__cstate_next_deadline(&st), 102 * SEC);
    ck_assert_int_eq(jr__cstate_next_expired(&st, 102 * SEC, &sseq, &dc), 0);
    ck_assert_uint_eq(sseq, 1);
    /* the redelivery drops the NAK deadline: backoff[1] from the delivery */
    ck_assert(deliver(3, 1, 2, 103 * SEC));
    ck_assert_uint_eq(deadline_of(1), 163 * SEC);
    /* a NAK survives a policy change */
    p.nbackoff = 0;
    ck_assert_int_eq(jr__cstate_set_policy(&st, &p), 0);
    ck_assert_uint_eq(deadline_of(2), 104 * SEC);
    ck_assert_uint_eq(deadline_of(1), 113 * SEC);
    jr__cstate_free(&st);
}
END_TEST

/* A query at now = UINT64_MAX walks every pending message, and never a hole: slots left by
 * acked messages keep their stream seqs, before the pending ones and after them (what was
 * pending once everything was acked leaves its slots behind when the array starts again at its
 * front), and a hole is no pending message. Taking one for one made the consumer leader's walk
 * over the messages a purge removed (drop_purged) go round for ever: after the last pending
 * one it found a hole of a lower seq and started again. A NAK whose deadline saturates stays a
 * pending message too. */
START_TEST(a_walk_over_every_pending_message_skips_holes)
{
    init(JR_ACK_EXPLICIT);
    for (uint64_t k = 1; k <= 4; k++) ck_assert(deliver(k, 20 + k, 1, 100));
    for (uint64_t k = 1; k <= 4; k++) ck_assert(ack(k, 20 + k, 200));
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 0);
    ck_assert(deliver(5, 49, 1, 300));
    ck_assert(deliver(6, 50, 1, 300));
    ck_assert(deliver(7, 51, 1, 300));
    ck_assert(ack(6, 50, 400)); /* a hole between the pending ones */
    ck_assert(apply(JR__COP_NAK, 0, 51, 0, 400, INT64_MAX));
    uint64_t want[] = {49, 51}, q = 0, sseq;
    uint32_t dc;
    size_t n = 0;
    while (jr__cstate_next_expired_after(&st, UINT64_MAX, q, &sseq, &dc) == 0) {
        ck_assert_uint_lt(n, N(want));
        ck_assert_uint_eq(sseq, want[n]);
        n++;
        q = sseq;
    }
    ck_assert_uint_eq(n, N(want));
    ck_assert_int_eq(jr__cstate_next_expired(&st, UINT64_MAX, &sseq, &dc), 0);
    ck_assert_uint_eq(sseq, 49);
    ck_assert(ack(5, 49, 500));
    ck_assert(ack(7, 51, 500));
    ck_assert_int_eq(jr__cstate_next_expired_after(&st, UINT64_MAX, 0, &sseq, &dc), JR_ENOTFOUND);
    ck_assert_int_eq(jr__cstate_next_expired(&st, UINT64_MAX, &sseq, &dc), JR_ENOTFOUND);
    jr__cstate_free(&st);
}
END_TEST

START_TEST(progress_restarts_the_ack_wait)
{
    init(JR_ACK_EXPLICIT);
    ck_assert(deliver(1, 1, 1, 10 * SEC));
    ck_assert(one(JR__COP_PROGRESS, 1, 25 * SEC));
    ck_assert_uint_eq(deadline_of(1), 55 * SEC);
    uint64_t ts;
    ck_assert_int_eq(jr__cstate_pending_get(&st, 1, NULL, NULL, &ts), 0);
    ck_assert_uint_eq(ts, 25 * SEC);
    ck_assert(apply(JR__COP_NAK, 0, 1, 0, 26 * SEC, (int64_t)SEC));
    ck_assert_uint_eq(deadline_of(1), 27 * SEC);
    ck_assert(one(JR__COP_PROGRESS, 1, 26 * SEC)); /* in progress after all */
    ck_assert_uint_eq(deadline_of(1), 56 * SEC);
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 1);
    jr__cstate_free(&st);
}
END_TEST

START_TEST(max_deliveries_leave_pending_without_an_ack)
{
    jr__cpolicy p = policy(JR_ACK_EXPLICIT, SEC);
    p.max_deliver = 2;
    ck_assert_int_eq(jr__cstate_init(&st, NULL, &p), 0);
    ck_assert(deliver(1, 1, 1, 0));
    ck_assert(deliver(2, 2, 1, 0));
    ck_assert(deliver(3, 1, 2, 2 * SEC));
    uint64_t sseq;
    uint32_t dc;
    ck_assert_int_eq(jr__cstate_next_expired(&st, 3 * SEC, &sseq, &dc), 0);
    ck_assert_uint_eq(sseq, 1);
    ck_assert_uint_eq(dc, 2); /* = max_deliver: the leader proposes MAXDELIV */
    ck_assert(one(JR__COP_MAXDELIV, 1, 0));
    ck_assert(out.max_delivered);
    ck_assert_uint_eq(out.dc, 2);
    acked_is(0, 0);
    floor_is(1, 1);
    ck_assert_uint_eq(jr__cstate_num_redelivered(&st), 0);
    ck_assert(!one(JR__COP_MAXDELIV, 1, 0)); /* once */
    ck_assert(!ack(3, 1, 0));
    jr__cstate_free(&st);
}
END_TEST

START_TEST(skip_moves_delivered_without_a_delivery)
{
    init(JR_ACK_EXPLICIT);
    ck_assert(one(JR__COP_SKIP, 99, 0)); /* a start position */
    delivered_is(0, 99);
    floor_is(0, 99);
    ck_assert(deliver(1, 100, 1, 1));
    floor_is(0, 99);
    ck_assert(one(JR__COP_SKIP, 105, 0)); /* filtered out */
    delivered_is(1, 105);
    floor_is(0, 99);
    ck_assert(ack(1, 100, 2));
    floor_is(1, 105);
    ck_assert(!deliver(2, 104, 1, 3));
    ck_assert(deliver(2, 106, 1, 3));
    jr__cstate_free(&st);
}
END_TEST

START_TEST(reset_clears_pending_and_restarts)
{
    init(JR_ACK_EXPLICIT);
    for (uint64_t i = 1; i <= 40; i++) ck_assert(deliver(i, i, 1, i));
    ck_assert(deliver(41, 3, 2, 50));
    ck_assert(one(JR__COP_RESET, 20, 0));
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 0);
    ck_assert_uint_eq(jr__cstate_num_redelivered(&st), 0);
    delivered_is(0, 19);
    floor_is(0, 19);
    ck_assert_uint_eq(jr__cstate_next_deadline(&st), UINT64_MAX);
    ck_assert(deliver(1, 20, 1, 60));
    floor_is(0, 19);
    ck_assert(one(JR__COP_RESET, 1, 0)); /* backwards too */
    delivered_is(0, 0);
    ck_assert(deliver(1, 1, 1, 70));
    jr__cstate_free(&st);
}
END_TEST

START_TEST(an_entry_applies_in_order)
{
    init(JR_ACK_EXPLICIT);
    jr__crec r[3];
    memset(r, 0, sizeof r);
    r[0].type = JR__COP_DELIVERED;
    r[0].dseq = r[0].sseq = r[0].dc = 1;
    r[1] = r[0];
    r[1].dseq = r[1].sseq = 2;
    r[2].type = JR__COP_ACK;
    r[2].dseq = r[2].sseq = 1;
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__cop_encode(r, 3, &b), 0);
    ck_assert_int_eq(jr__cstate_apply_entry(&st, b.data, b.len), 0);
    floor_is(1, 1);
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 1);
    b.data[3] ^= 1;
    ck_assert_int_eq(jr__cstate_apply_entry(&st, b.data, b.len), JR_ECORRUPT);
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 1);
    jr__buf_free(&b);
    jr__cstate_free(&st);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Snapshots
 */

static void snap(const jr__cstate *s, jr__buf *b)
{
    jr__buf_init(b, NULL);
    ck_assert_int_eq(jr__cstate_snapshot(s, b), 0);
}

static void busy_state(int acks)
{
    init(acks);
    ck_assert(one(JR__COP_SKIP, 4, 0));
    for (uint64_t i = 1; i <= 30; i++) ck_assert(deliver(i, 4 + i * 3, 1, 1000 * i));
    if (acks == JR_ACK_NONE) return;
    if (acks == JR_ACK_ALL)
        ck_assert(ack(5, 19, 50000));
    else
        for (uint64_t i = 1; i <= 30; i += 4) ck_assert(ack(i, 4 + i * 3, 50000 + i));
    ck_assert(deliver(31, 22, 2, 60000));
    ck_assert(apply(JR__COP_NAK, 0, 25, 0, 61000, 5000));
    ck_assert(one(JR__COP_PROGRESS, 28, 62000));
}

START_TEST(a_snapshot_round_trips_byte_for_byte)
{
    int acks[] = {JR_ACK_NONE, JR_ACK_ALL, JR_ACK_EXPLICIT};
    for (size_t k = 0; k < N(acks); k++) {
        busy_state(acks[k]);
        jr__buf a, b;
        snap(&st, &a);
        jr__cstate r;
        jr__cpolicy p = policy(acks[k], 30 * SEC);
        ck_assert_int_eq(jr__cstate_init(&r, NULL, &p), 0);
        ck_assert_int_eq(jr__cstate_restore(&r, a.data, a.len), 0);
        ck_assert_int_eq(jr__cstate_check(&r), 0);
        snap(&r, &b);
        ck_assert_uint_eq(a.len, b.len);
        ck_assert_mem_eq(a.data, b.data, a.len);
        ck_assert_uint_eq(jr__cstate_num_ack_pending(&r), jr__cstate_num_ack_pending(&st));
        ck_assert_uint_eq(jr__cstate_num_redelivered(&r), jr__cstate_num_redelivered(&st));
        ck_assert_uint_eq(jr__cstate_next_deadline(&r), jr__cstate_next_deadline(&st));
        jr__cseqs f1, f2;
        jr__cstate_ack_floor(&st, &f1);
        jr__cstate_ack_floor(&r, &f2);
        ck_assert_mem_eq(&f1, &f2, sizeof f1);
        /* the same records from here give the same bytes again */
        jr__crec rec = {0};
        rec.type = JR__COP_DELIVERED;
        rec.dseq = 100;
        rec.sseq = 1000;
        rec.dc = 1;
        rec.ts = 7;
        jr__capply o1, o2;
        ck_assert_int_eq(jr__cstate_apply(&st, &rec, &o1), 0);
        ck_assert_int_eq(jr__cstate_apply(&r, &rec, &o2), 0);
        ck_assert_mem_eq(&o1, &o2, sizeof o1);
        jr__buf_free(&a);
        jr__buf_free(&b);
        snap(&st, &a);
        snap(&r, &b);
        ck_assert_uint_eq(a.len, b.len);
        ck_assert_mem_eq(a.data, b.data, a.len);
        /* restoring an empty state over a busy one */
        jr__cstate e;
        ck_assert_int_eq(jr__cstate_init(&e, NULL, &p), 0);
        jr__buf_free(&a);
        snap(&e, &a);
        ck_assert_int_eq(jr__cstate_restore(&r, a.data, a.len), 0);
        ck_assert_uint_eq(jr__cstate_num_ack_pending(&r), 0);
        ck_assert_int_eq(jr__cstate_check(&r), 0);
        jr__cstate_free(&e);
        jr__buf_free(&a);
        jr__buf_free(&b);
        jr__cstate_free(&r);
        jr__cstate_free(&st);
    }
}
END_TEST

/* A snapshot is written with one allocation into an empty buffer, whatever its values. */
START_TEST(a_snapshot_allocates_once)
{
    init(JR_ACK_EXPLICIT);
    ck_assert(one(JR__COP_SKIP, UINT64_MAX / 2, 0));
    for (uint64_t i = 1; i <= 100; i++)
        ck_assert(deliver(UINT64_MAX / 2 + i, UINT64_MAX / 2 + i * 1000, 1, UINT64_MAX - 1));
    for (uint64_t i = 1; i <= 100; i++)
        ck_assert(deliver(UINT64_MAX / 2 + 100 + i, UINT64_MAX / 2 + i * 1000, UINT32_MAX,
                          UINT64_MAX - 1));
    for (uint64_t i = 1; i <= 100; i++)
        ck_assert(apply(JR__COP_NAK, 0, UINT64_MAX / 2 + i * 1000, 0, UINT64_MAX - 1, INT64_MAX));
    jr__falloc fa;
    jr__falloc_init(&fa);
    jr__buf b;
    jr__buf_init(&b, &fa.a);
    ck_assert_int_eq(jr__cstate_snapshot(&st, &b), 0);
    ck_assert_uint_eq(fa.calls, 1);
    jr__buf_free(&b);
    jr__cstate_free(&st);
}
END_TEST

START_TEST(restore_refuses_damage_and_changes_nothing)
{
    busy_state(JR_ACK_EXPLICIT);
    jr__buf a, before, after;
    snap(&st, &a);
    jr__cstate r;
    jr__cpolicy p = policy(JR_ACK_EXPLICIT, 30 * SEC);
    ck_assert_int_eq(jr__cstate_init(&r, NULL, &p), 0);
    ck_assert(apply(JR__COP_SKIP, 0, 1, 0, 0, 0) || 1);
    ck_assert_int_eq(jr__cstate_restore(&r, a.data, a.len), 0);
    snap(&r, &before);
    for (size_t len = 0; len < a.len; len++)
        ck_assert_msg(jr__cstate_restore(&r, a.data, len) == JR_ECORRUPT, "length %zu", len);
    for (size_t i = 0; i < a.len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            a.data[i] ^= (uint8_t)(1u << bit);
            ck_assert_msg(jr__cstate_restore(&r, a.data, a.len) == JR_ECORRUPT, "byte %zu bit %d",
                          i, bit);
            a.data[i] ^= (uint8_t)(1u << bit);
        }
    }
    /* another version, re-checksummed */
    a.data[0] = 2;
    jr__put_u64(a.data + a.len - 8, jr__xxh3(a.data, a.len - 8));
    ck_assert_int_eq(jr__cstate_restore(&r, a.data, a.len), JR_EVERSION);
    snap(&r, &after);
    ck_assert_uint_eq(before.len, after.len);
    ck_assert_mem_eq(before.data, after.data, before.len);
    /* pending state into an ack-none consumer */
    jr__cstate n;
    jr__cpolicy pn = policy(JR_ACK_NONE, 0);
    ck_assert_int_eq(jr__cstate_init(&n, NULL, &pn), 0);
    ck_assert_int_eq(jr__cstate_restore(&n, before.data, before.len), JR_ECORRUPT);
    jr__cstate_free(&n);
    jr__buf_free(&a);
    jr__buf_free(&before);
    jr__buf_free(&after);
    jr__cstate_free(&r);
    jr__cstate_free(&st);
}
END_TEST

/* A snapshot written by hand: delivered (c, s), one pending entry. */
static int forged_restore(const uint64_t *v, size_t n, uint8_t nak_byte_at, uint8_t nak)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__buf_u8(&b, JR__CSTATE_VERSION);
    for (size_t i = 0; i < n; i++) {
        if (i == nak_byte_at)
            jr__buf_u8(&b, nak);
        else
            jr__buf_varint(&b, v[i]);
    }
    jr__buf_u64(&b, jr__xxh3(b.data, b.len));
    jr__cstate r;
    jr__cpolicy p = policy(JR_ACK_EXPLICIT, 30 * SEC);
    ck_assert_int_eq(jr__cstate_init(&r, NULL, &p), 0);
    int rc = jr__cstate_restore(&r, b.data, b.len);
    if (rc == 0) ck_assert_int_eq(jr__cstate_check(&r), 0);
    jr__cstate_free(&r);
    jr__buf_free(&b);
    return rc;
}

START_TEST(restore_refuses_state_that_breaks_an_invariant)
{
    /* dcseq dsseq dlast flast n | sseq dseq dc ts nak */
    const uint64_t ok[] = {5, 9, 1, 1, 1, 9, 5, 1, 3, 0};
    ck_assert_int_eq(forged_restore(ok, N(ok), 9, 0), 0);
    const uint64_t above_s[] = {5, 9, 1, 1, 1, 10, 5, 1, 3, 0};
    ck_assert_int_eq(forged_restore(above_s, N(above_s), 9, 0), JR_ECORRUPT);
    const uint64_t above_d[] = {5, 9, 1, 1, 1, 9, 6, 1, 3, 0};
    ck_assert_int_eq(forged_restore(above_d, N(above_d), 9, 0), JR_ECORRUPT);
    const uint64_t dc0[] = {5, 9, 1, 1, 1, 9, 5, 0, 3, 0};
    ck_assert_int_eq(forged_restore(dc0, N(dc0), 9, 0), JR_ECORRUPT);
    const uint64_t sseq0[] = {5, 9, 1, 1, 1, 0, 5, 1, 3, 0};
    ck_assert_int_eq(forged_restore(sseq0, N(sseq0), 9, 0), JR_ECORRUPT);
    ck_assert_int_eq(forged_restore(ok, N(ok), 9, 2), JR_ECORRUPT); /* nak byte 2 */
    const uint64_t nak[] = {5, 9, 1, 1, 1, 9, 5, 1, 3, 1, 77};
    ck_assert_int_eq(forged_restore(nak, N(nak), 9, 1), 0);
    const uint64_t two_same[] = {5, 9, 1, 1, 2, 8, 4, 1, 3, 0, 0, 1, 1, 3, 0};
    ck_assert_int_eq(forged_restore(two_same, N(two_same), 9, 0), JR_ECORRUPT);
    const uint64_t count_big[] = {5, 9, 1, 1, 3, 9, 5, 1, 3, 0};
    ck_assert_int_eq(forged_restore(count_big, N(count_big), 9, 0), JR_ECORRUPT);
    const uint64_t trailing[] = {5, 9, 1, 1, 0, 0};
    ck_assert_int_eq(forged_restore(trailing, N(trailing), 99, 0), JR_ECORRUPT);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * A reference model: arrays and linear scans, the rules as state.h states them.
 */

typedef struct model_pend {
    uint64_t sseq, dseq, ts, nakdl;
    uint32_t dc;
    int nak;
} model_pend;

typedef struct model {
    int ack;
    int64_t wait;
    int64_t maxd;
    int64_t backoff[4];
    size_t nbackoff;
    uint64_t dc_seq, ds_seq, dlast, flast;
    model_pend p[4096];
    size_t n; /* sorted by sseq */
} model;

static int m_find(const model *m, uint64_t sseq)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->p[i].sseq == sseq) return (int)i;
    return -1;
}

static void m_del(model *m, int i)
{
    memmove(&m->p[i], &m->p[i + 1], (m->n - (size_t)i - 1) * sizeof m->p[0]);
    m->n--;
}

static uint64_t m_deadline(const model *m, const model_pend *e)
{
    if (e->nak) return e->nakdl;
    uint64_t w = (uint64_t)m->wait;
    if (m->nbackoff)
        w = (uint64_t)m->backoff[e->dc - 1 < m->nbackoff ? e->dc - 1 : m->nbackoff - 1];
    return e->ts > UINT64_MAX - w ? UINT64_MAX : e->ts + w;
}

static void m_apply(model *m, const jr__crec *r, jr__capply *o)
{
    memset(o, 0, sizeof *o);
    o->applied = 1;
    int i = m_find(m, r->sseq);
    int none = m->ack == JR_ACK_NONE;
    switch (r->type) {
    case JR__COP_DELIVERED:
        if (r->dc == 1) {
            if (r->sseq <= m->ds_seq || r->dseq <= m->dc_seq) {
                o->applied = 0;
                o->reason = JR__CIGN_STALE;
                return;
            }
            if (none) {
                m->flast = r->ts;
                o->acked_from = o->acked_to = r->sseq;
            } else {
                model_pend e = {r->sseq, r->dseq, r->ts, 0, 1, 0};
                m->p[m->n++] = e;
            }
            m->dc_seq = r->dseq;
            m->ds_seq = r->sseq;
            m->dlast = r->ts;
            return;
        }
        if (none || i < 0 || r->dseq <= m->dc_seq || r->dc <= m->p[i].dc) {
            o->applied = 0;
            o->reason = none ? JR__CIGN_NO_ACKS : i < 0 ? JR__CIGN_NOT_PENDING : JR__CIGN_STALE;
            return;
        }
        m->p[i].dc = r->dc;
        m->p[i].ts = r->ts;
        m->p[i].nak = 0;
        m->p[i].nakdl = 0;
        m->dc_seq = r->dseq;
        m->dlast = r->ts;
        return;
    case JR__COP_ACK:
        if (none || r->sseq > m->ds_seq || r->dseq > m->dc_seq) {
            o->applied = 0;
            o->reason = none ? JR__CIGN_NO_ACKS : JR__CIGN_NOT_DELIVERED;
            return;
        }
        if (m->ack == JR_ACK_ALL) {
            if (!m->n || m->p[0].sseq > r->sseq) {
                o->applied = 0;
                o->reason = JR__CIGN_NOT_PENDING;
                return;
            }
            o->acked_from = m->p[0].sseq;
            o->acked_to = r->sseq;
            while (m->n && m->p[0].sseq <= r->sseq) m_del(m, 0);
        } else {
            if (i < 0) {
                o->applied = 0;
                o->reason = JR__CIGN_NOT_PENDING;
                return;
            }
            o->dseq = m->p[i].dseq;
            o->dc = m->p[i].dc;
            o->acked_from = o->acked_to = r->sseq;
            m_del(m, i);
        }
        m->flast = r->ts;
        return;
    case JR__COP_SKIP:
        if (r->sseq <= m->ds_seq) {
            o->applied = 0;
            o->reason = JR__CIGN_STALE;
        } else {
            m->ds_seq = r->sseq;
        }
        return;
    case JR__COP_RESET:
        m->n = 0;
        m->dc_seq = 0;
        m->ds_seq = r->sseq - 1;
        return;
    default:
        if (none || i < 0) {
            o->applied = 0;
            o->reason = none ? JR__CIGN_NO_ACKS : JR__CIGN_NOT_PENDING;
            return;
        }
        o->dseq = m->p[i].dseq;
        o->dc = m->p[i].dc;
        if (r->type == JR__COP_NAK) {
            m->p[i].nak = 1;
            uint64_t d = (uint64_t)r->delay_ns;
            m->p[i].nakdl = r->ts > UINT64_MAX - d ? UINT64_MAX : r->ts + d;
        } else if (r->type == JR__COP_PROGRESS) {
            m->p[i].ts = r->ts;
            m->p[i].nak = 0;
            m->p[i].nakdl = 0;
        } else if (r->type == JR__COP_TERM) {
            m_del(m, i);
            o->terminated = 1;
            o->acked_from = o->acked_to = r->sseq;
            m->flast = r->ts;
        } else {
            m_del(m, i);
            o->max_delivered = 1;
        }
        return;
    }
}

static void compare(const model *m, const jr__cstate *s, uint64_t now, const char *where)
{
    ck_assert_msg(jr__cstate_check(s) == 0, "%s: invariants", where);
    ck_assert_msg(s->delivered.consumer_seq == m->dc_seq && s->delivered.stream_seq == m->ds_seq &&
                      s->delivered.last_active_ns == m->dlast,
                  "%s: delivered", where);
    jr__cseqs f;
    jr__cstate_ack_floor(s, &f);
    uint64_t fc = m->n ? m->p[0].dseq - 1 : m->dc_seq, fs = m->n ? m->p[0].sseq - 1 : m->ds_seq;
    ck_assert_msg(f.consumer_seq == fc && f.stream_seq == fs && f.last_active_ns == m->flast,
                  "%s: floor", where);
    ck_assert_msg(jr__cstate_num_ack_pending(s) == m->n, "%s: pending count", where);
    uint64_t redel = 0, first = UINT64_MAX, exp = 0;
    for (size_t i = 0; i < m->n; i++) {
        const model_pend *e = &m->p[i];
        uint64_t dseq, ts, dl;
        uint32_t dc;
        ck_assert_msg(jr__cstate_pending_get(s, e->sseq, &dseq, &dc, &ts) == 0, "%s: %llu pending",
                      where, (unsigned long long)e->sseq);
        ck_assert_msg(dseq == e->dseq && dc == e->dc && ts == e->ts, "%s: pending %llu", where,
                      (unsigned long long)e->sseq);
        ck_assert_int_eq(jr__cstate_pending_deadline(s, e->sseq, &dl), 0);
        uint64_t want = m_deadline(m, e);
        ck_assert_msg(dl == want, "%s: deadline of %llu", where, (unsigned long long)e->sseq);
        if (want < first) first = want;
        if (!exp && want <= now) exp = e->sseq;
        redel += e->dc > 1;
    }
    if (m->maxd == 1) redel = 0;
    ck_assert_msg(jr__cstate_num_redelivered(s) == redel, "%s: redelivered", where);
    ck_assert_msg(jr__cstate_next_deadline(s) == first, "%s: next deadline", where);
    uint64_t sseq = 0;
    uint32_t dc;
    int rc = jr__cstate_next_expired(s, now, &sseq, &dc);
    ck_assert_msg(exp ? rc == 0 && sseq == exp : rc == JR_ENOTFOUND, "%s: next expired", where);
}

static jr__crec random_rec(jr__rand *g, const model *m, uint64_t *now)
{
    jr__crec r;
    memset(&r, 0, sizeof r);
    *now += jr__rand_below(g, 3 * SEC);
    uint64_t ts = *now - jr__rand_below(g, SEC); /* leaders' clocks differ */
    /* a seq near what matters: a pending one, or anything around delivered */
    uint64_t near = m->n && jr__rand_below(g, 4) ? m->p[jr__rand_below(g, m->n)].sseq
                                                 : jr__rand_below(g, m->ds_seq + 4) + 1;
    uint64_t x = jr__rand_below(g, 100);
    if (x < 35) {
        r.type = JR__COP_DELIVERED;
        r.dc = 1;
        r.sseq = m->ds_seq + 1 + jr__rand_below(g, 3);
        r.dseq = m->dc_seq + 1;
        if (jr__rand_below(g, 20) == 0) r.sseq = near; /* stale */
        if (jr__rand_below(g, 20) == 0) r.dseq = jr__rand_below(g, m->dc_seq + 1) + 1;
        r.ts = ts;
    } else if (x < 50) {
        r.type = JR__COP_DELIVERED;
        r.sseq = near;
        int k = m_find(m, near);
        r.dc = (k >= 0 ? m->p[k].dc : 1) + (uint32_t)jr__rand_below(g, 2) + 1;
        if (jr__rand_below(g, 10) == 0) r.dc = (uint32_t)jr__rand_below(g, 3) + 1;
        r.dseq = m->dc_seq + (jr__rand_below(g, 10) ? 1 : 0);
        if (!r.dseq) r.dseq = 1;
        r.ts = ts;
    } else if (x < 72) {
        r.type = JR__COP_ACK;
        r.sseq = near;
        r.dseq = jr__rand_below(g, 10) ? jr__rand_below(g, m->dc_seq + 1) : m->dc_seq + 1;
        r.ts = ts;
    } else if (x < 80) {
        r.type = JR__COP_NAK;
        r.sseq = near;
        r.delay_ns = jr__rand_below(g, 3) ? (int64_t)jr__rand_below(g, 10 * SEC) : 0;
        if (jr__rand_below(g, 50) == 0) r.delay_ns = INT64_MAX;
        r.ts = ts;
    } else if (x < 86) {
        r.type = JR__COP_PROGRESS;
        r.sseq = near;
        r.ts = ts;
    } else if (x < 90) {
        r.type = JR__COP_TERM;
        r.sseq = near;
        r.ts = ts;
    } else if (x < 95) {
        r.type = JR__COP_MAXDELIV;
        r.sseq = near;
    } else if (x < 99) {
        r.type = JR__COP_SKIP;
        r.sseq = m->ds_seq + jr__rand_below(g, 4);
        if (!r.sseq) r.sseq = 1;
    } else {
        r.type = JR__COP_RESET;
        r.sseq = jr__rand_below(g, m->ds_seq + 3) + 1;
    }
    return r;
}

static void random_policy(jr__rand *g, model *m, jr__cpolicy *p)
{
    m->wait = (int64_t)(jr__rand_below(g, 20) * SEC);
    m->nbackoff = jr__rand_below(g, 2) ? (size_t)jr__rand_below(g, N(m->backoff) + 1) : 0;
    for (size_t i = 0; i < m->nbackoff; i++) m->backoff[i] = (int64_t)(jr__rand_below(g, 30) * SEC);
    *p = policy(m->ack, m->wait);
    p->backoff_ns = m->backoff;
    p->nbackoff = m->nbackoff;
    p->max_deliver = m->maxd = (int64_t)jr__rand_below(g, 5) - 1;
}

START_TEST(random_records_agree_with_a_reference_model)
{
    static model m;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        jr__rand g;
        jr__rand_seed(&g, seed);
        memset(&m, 0, sizeof m);
        m.ack = (int)jr__rand_below(&g, 3);
        jr__cpolicy p;
        random_policy(&g, &m, &p);
        jr__cstate s;
        ck_assert_int_eq(jr__cstate_init(&s, NULL, &p), 0);
        uint64_t now = 1000 * SEC;
        for (int step = 0; step < 600; step++) {
            char where[64];
            snprintf(where, sizeof where, "seed %llu step %d", (unsigned long long)seed, step);
            if (m.n > 3000) break;
            jr__crec r = random_rec(&g, &m, &now);
            jr__capply got, want;
            ck_assert_msg(jr__cstate_apply(&s, &r, &got) == 0, "%s: apply", where);
            m_apply(&m, &r, &want);
            ck_assert_msg(
                memcmp(&got, &want, sizeof got) == 0,
                "%s: type %d sseq %llu: applied %d/%d reason %d/%d acked %llu-%llu/%llu-%llu",
                where, r.type, (unsigned long long)r.sseq, got.applied, want.applied, got.reason,
                want.reason, (unsigned long long)got.acked_from, (unsigned long long)got.acked_to,
                (unsigned long long)want.acked_from, (unsigned long long)want.acked_to);
            uint64_t x = jr__rand_below(&g, 100);
            if (x == 0) {
                random_policy(&g, &m, &p);
                ck_assert_int_eq(jr__cstate_set_policy(&s, &p), 0);
            } else if (x == 1) {
                /* a replica that restarts from a snapshot continues identically */
                jr__buf a, b;
                snap(&s, &a);
                jr__cstate t;
                ck_assert_int_eq(jr__cstate_init(&t, NULL, &p), 0);
                ck_assert_int_eq(jr__cstate_restore(&t, a.data, a.len), 0);
                snap(&t, &b);
                ck_assert_msg(a.len == b.len && memcmp(a.data, b.data, a.len) == 0, "%s: snapshot",
                              where);
                jr__cstate_free(&s);
                s = t;
                jr__buf_free(&a);
                jr__buf_free(&b);
            }
            compare(&m, &s, now - jr__rand_below(&g, 30 * SEC), where);
        }
        jr__cstate_free(&s);
    }
}
END_TEST

/* Two replicas with different histories of memory layout (one restarted from snapshots, one
 * grown and squeezed in place) write the same snapshot bytes. */
START_TEST(replicas_write_identical_snapshots)
{
    static model m;
    jr__rand g;
    jr__rand_seed(&g, 7);
    memset(&m, 0, sizeof m);
    m.ack = JR_ACK_EXPLICIT;
    jr__cpolicy p = policy(JR_ACK_EXPLICIT, 5 * SEC);
    jr__cstate a, b;
    ck_assert_int_eq(jr__cstate_init(&a, NULL, &p), 0);
    ck_assert_int_eq(jr__cstate_init(&b, NULL, &p), 0);
    uint64_t now = 0;
    for (int step = 0; step < 5000; step++) {
        jr__crec r = random_rec(&g, &m, &now);
        jr__capply o1, o2, o3;
        ck_assert_int_eq(jr__cstate_apply(&a, &r, &o1), 0);
        ck_assert_int_eq(jr__cstate_apply(&b, &r, &o2), 0);
        m_apply(&m, &r, &o3);
        if (step % 97 == 0) {
            jr__buf x;
            snap(&b, &x);
            jr__cstate t;
            ck_assert_int_eq(jr__cstate_init(&t, NULL, &p), 0);
            ck_assert_int_eq(jr__cstate_restore(&t, x.data, x.len), 0);
            jr__cstate_free(&b);
            b = t;
            jr__buf_free(&x);
        }
    }
    jr__buf x, y;
    snap(&a, &x);
    snap(&b, &y);
    ck_assert_uint_eq(x.len, y.len);
    ck_assert_mem_eq(x.data, y.data, x.len);
    jr__buf_free(&x);
    jr__buf_free(&y);
    jr__cstate_free(&a);
    jr__cstate_free(&b);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Allocation failures
 */

/* Fails the n-th allocation, for every n, through a run of records that grows pending well past
 * its first arrays: every JR_ENOMEM leaves the state as it was (same snapshot, same answers),
 * and retrying the record then succeeds. */
START_TEST(a_failed_allocation_changes_nothing)
{
    int apply_failures = 0;
    uint64_t nth;
    for (nth = 1;; nth++) {
        jr__falloc fa;
        jr__falloc_init(&fa);
        jr__cpolicy p = policy(JR_ACK_EXPLICIT, SEC);
        int64_t backoff[] = {SEC, 2 * SEC};
        p.backoff_ns = backoff;
        p.nbackoff = 2;
        jr__falloc_arm(&fa, nth, 0);
        jr__cstate s;
        int rc = jr__cstate_init(&s, &fa.a, &p);
        if (rc) {
            ck_assert_int_eq(rc, JR_ENOMEM);
            jr__cstate_free(&s);
            ck_assert_int_eq(fa.live, 0);
            continue;
        }
        jr__rand g;
        jr__rand_seed(&g, 3);
        static model m;
        memset(&m, 0, sizeof m);
        m.ack = JR_ACK_EXPLICIT;
        m.wait = p.ack_wait_ns;
        m.maxd = p.max_deliver;
        m.nbackoff = 2;
        memcpy(m.backoff, backoff, sizeof backoff);
        uint64_t now = 0;
        int failed = 0;
        for (int step = 0; step < 400; step++) {
            jr__crec r = random_rec(&g, &m, &now);
            if (r.type == JR__COP_RESET) continue;
            jr__capply o, want;
            jr__buf before, after;
            snap(&s, &before);
            rc = jr__cstate_apply(&s, &r, &o);
            if (rc == JR_ENOMEM) {
                failed = 1;
                apply_failures++;
                ck_assert_int_eq(jr__cstate_check(&s), 0);
                snap(&s, &after);
                ck_assert_msg(
                    before.len == after.len && memcmp(before.data, after.data, before.len) == 0,
                    "allocation %llu: a failed apply changed the state", (unsigned long long)nth);
                jr__buf_free(&after);
                rc = jr__cstate_apply(&s, &r, &o);
            }
            ck_assert_int_eq(rc, 0);
            m_apply(&m, &r, &want);
            ck_assert(memcmp(&o, &want, sizeof o) == 0);
            jr__buf_free(&before);
            if (step % 50 == 0) {
                /* set_policy and restore fail whole too */
                jr__buf x;
                snap(&s, &x);
                if (jr__cstate_set_policy(&s, &p) == JR_ENOMEM) failed = 1;
                if (jr__cstate_restore(&s, x.data, x.len) == JR_ENOMEM) failed = 1;
                jr__buf y;
                snap(&s, &y);
                ck_assert(x.len == y.len && memcmp(x.data, y.data, x.len) == 0);
                jr__buf_free(&x);
                jr__buf_free(&y);
            }
        }
        compare(&m, &s, now, "after the failures");
        jr__cstate_free(&s);
        ck_assert_int_eq(fa.live, 0);
        if (!failed && fa.failures == 0) break; /* nth is past every allocation of the run */
    }
    ck_assert_int_ge(apply_failures, 4); /* the pending arrays grew, and failed to, 4 times */
    ck_assert_uint_ge(nth, 10);
}
END_TEST

/* An entry of many records, among them more first deliveries than the arrays hold, applies
 * whole or not at all when the n-th allocation fails, for every n; a failed growth inside
 * apply squeezes holes out instead when there are some. */
START_TEST(an_entry_applies_whole_or_not_at_all)
{
    static model m;
    int total = 0;
    for (uint64_t nth = 1;; nth++) {
        jr__falloc fa;
        jr__falloc_init(&fa);
        jr__cpolicy p = policy(JR_ACK_EXPLICIT, SEC);
        ck_assert_int_eq(jr__cstate_init(&st, &fa.a, &p), 0);
        memset(&m, 0, sizeof m);
        m.ack = JR_ACK_EXPLICIT;
        m.wait = (int64_t)SEC;
        m.maxd = -1;
        jr__rand g;
        jr__rand_seed(&g, 5);
        uint64_t now = 0;
        jr__falloc_arm(&fa, nth, 0);
        int failures = 0;
        for (int e = 0; e < 20; e++) {
            jr__crec recs[64];
            model before_m = m;
            for (size_t i = 0; i < N(recs); i++) {
                recs[i] = random_rec(&g, &m, &now);
                jr__capply o;
                m_apply(&m, &recs[i], &o);
            }
            jr__buf b, before, after;
            jr__buf_init(&b, NULL);
            ck_assert_int_eq(jr__cop_encode(recs, N(recs), &b), 0);
            snap(&st, &before);
            int rc = jr__cstate_apply_entry(&st, b.data, b.len);
            if (rc == JR_ENOMEM) {
                failures++;
                snap(&st, &after);
                ck_assert_msg(
                    before.len == after.len && memcmp(before.data, after.data, before.len) == 0,
                    "allocation %llu: a failed entry changed the state", (unsigned long long)nth);
                jr__buf_free(&after);
                compare(&before_m, &st, now, "after a failed entry");
                rc = jr__cstate_apply_entry(&st, b.data, b.len);
            }
            ck_assert_int_eq(rc, 0);
            compare(&m, &st, now, "after an entry");
            jr__buf_free(&b);
            jr__buf_free(&before);
        }
        jr__cstate_free(&st);
        ck_assert_int_eq(fa.live, 0);
        total += failures;
        if (!failures && fa.failures == 0) break;
    }
    ck_assert_int_ge(total, 3);
}
END_TEST

/* After jr__cstate_reserve_entry, an entry's records apply one by one with no memory at all. */
START_TEST(a_reserved_entry_applies_without_memory)
{
    jr__falloc fa;
    jr__falloc_init(&fa);
    jr__cpolicy p = policy(JR_ACK_EXPLICIT, SEC);
    ck_assert_int_eq(jr__cstate_init(&st, &fa.a, &p), 0);
    jr__crec recs[300];
    memset(recs, 0, sizeof recs);
    for (size_t i = 0; i < N(recs); i++) {
        recs[i].type = JR__COP_DELIVERED;
        recs[i].dseq = recs[i].sseq = i + 1;
        recs[i].dc = 1;
    }
    recs[100].type = JR__COP_ACK;
    recs[100].dc = 0;
    recs[100].dseq = recs[100].sseq = 50;
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__cop_encode(recs, N(recs), &b), 0);
    jr__cop_iter it;
    ck_assert_int_eq(jr__cop_iter_init(&it, b.data, b.len), 0);
    jr__falloc_arm(&fa, 1, 1);
    ck_assert_int_eq(jr__cstate_reserve_entry(&st, &it), JR_ENOMEM);
    jr__falloc_arm(&fa, 0, 0);
    ck_assert_int_eq(jr__cstate_reserve_entry(&st, &it), 0);
    ck_assert_uint_eq(jr__cop_iter_left(&it), N(recs)); /* not advanced */
    jr__falloc_arm(&fa, 1, 1);
    jr__crec r;
    int got;
    while (jr__cop_next(&it, &r, &got) == 0 && got)
        ck_assert_int_eq(jr__cstate_apply(&st, &r, &out), 0);
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 298);
    ck_assert_int_eq(jr__cstate_check(&st), 0);
    jr__falloc_arm(&fa, 0, 0);
    jr__buf_free(&b);
    jr__cstate_free(&st);
    ck_assert_int_eq(fa.live, 0);
}
END_TEST

/* A growth that fails while holes are left squeezes them out instead: the delivery applies. */
START_TEST(a_failed_growth_squeezes_instead)
{
    jr__falloc fa;
    jr__falloc_init(&fa);
    jr__cpolicy p = policy(JR_ACK_EXPLICIT, SEC);
    ck_assert_int_eq(jr__cstate_init(&st, &fa.a, &p), 0);
    for (uint64_t i = 1; i <= 16; i++) ck_assert(deliver(i, i, 1, 1));
    ck_assert(ack(3, 3, 2)); /* 15 of 16 live: growing is the first choice */
    jr__falloc_arm(&fa, 1, 1);
    ck_assert(deliver(17, 17, 1, 3));
    ck_assert_uint_eq(fa.failures, 1);
    ck_assert_uint_eq(jr__cstate_num_ack_pending(&st), 16);
    /* full now: the next one fails and changes nothing */
    jr__crec r = {0};
    r.type = JR__COP_DELIVERED;
    r.dseq = r.sseq = 18;
    r.dc = 1;
    ck_assert_int_eq(jr__cstate_apply(&st, &r, &out), JR_ENOMEM);
    ck_assert_int_eq(out.applied, 0);
    delivered_is(17, 17);
    ck_assert_int_eq(jr__cstate_reserve(&st, 1), JR_ENOMEM);
    jr__falloc_arm(&fa, 0, 0);
    ck_assert_int_eq(jr__cstate_reserve(&st, 100), 0);
    uint64_t calls = fa.calls;
    for (uint64_t i = 18; i < 118; i++) ck_assert(deliver(i, i, 1, 4));
    ck_assert_uint_eq(fa.calls, calls);
    jr__cstate_free(&st);
    ck_assert_int_eq(fa.live, 0);
}
END_TEST

/* The cost sentence of state.h: a steady flow (deliveries, acks out of order, redeliveries,
 * NAKs) whose pending count stays bounded allocates nothing once the array has grown, holes
 * being squeezed out in place; a burst's arrays are given back when nothing is pending. */
START_TEST(the_steady_path_allocates_nothing)
{
    jr__falloc fa;
    jr__falloc_init(&fa);
    jr__cpolicy p = policy(JR_ACK_EXPLICIT, SEC);
    ck_assert_int_eq(jr__cstate_init(&st, &fa.a, &p), 0);
    jr__rand g;
    jr__rand_seed(&g, 11);
    uint64_t d = 0, s = 0, calls = 0;
    checking = 0;
    for (int i = 0; i < 200000; i++) {
        if (i == 1000) calls = fa.calls; /* warmed up */
        ck_assert(deliver(++d, ++s, 1, (uint64_t)i));
        if (jr__rand_below(&g, 4) == 0) apply(JR__COP_NAK, 0, s, 0, (uint64_t)i, 5);
        uint64_t sseq;
        uint32_t dc;
        if (jr__cstate_next_expired(&st, (uint64_t)i, &sseq, &dc) == 0 && dc < 3)
            deliver(++d, sseq, dc + 1, (uint64_t)i);
        /* keep about 100 pending, acking a random one of the oldest */
        while (jr__cstate_num_ack_pending(&st) > 100) {
            jr__cseqs f;
            jr__cstate_ack_floor(&st, &f);
            uint64_t a = f.stream_seq + 1 + jr__rand_below(&g, 8);
            ack(d, a, (uint64_t)i);
        }
    }
    ck_assert_uint_eq(fa.calls, calls);
    ck_assert_int_eq(jr__cstate_check(&st), 0);
    /* a burst, then everything acked: the arrays go back */
    for (int i = 0; i < 5000; i++) ck_assert(deliver(++d, ++s, 1, 1));
    ck_assert_int_eq(fa.live, 2); /* pending and its tree, grown past JR__CSTATE_KEEP */
    ck_assert_int_eq(jr__cstate_check(&st), 0);
    ck_assert(ack(d, s, 2));
    jr__cseqs f;
    jr__cstate_ack_floor(&st, &f);
    while (jr__cstate_num_ack_pending(&st)) {
        jr__cstate_ack_floor(&st, &f);
        ck_assert(ack(d, f.stream_seq + 1, 3));
    }
    ck_assert_int_eq(fa.live, 0);
    checking = 1;
    ck_assert_int_eq(jr__cstate_check(&st), 0);
    jr__cstate_free(&st);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("consumer_state");
    TCase *tc = tcase_create("cstate");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, a_first_delivery_is_pending_until_acked);
    tcase_add_test(tc, stale_and_unknown_records_are_ignored);
    tcase_add_test(tc, the_floor_follows_out_of_order_acks);
    tcase_add_test(tc, ack_all_acks_everything_below);
    tcase_add_test(tc, ack_none_acks_on_delivery);
    tcase_add_test(tc, a_redelivery_keeps_the_first_consumer_seq);
    tcase_add_test(tc, num_redelivered_is_zero_with_max_deliver_one);
    tcase_add_test(tc, the_ack_wait_sets_the_deadline);
    tcase_add_test(tc, the_backoff_schedule_repeats_its_last_value);
    tcase_add_test(tc, a_nak_sets_an_explicit_deadline);
    tcase_add_test(tc, a_walk_over_every_pending_message_skips_holes);
    tcase_add_test(tc, progress_restarts_the_ack_wait);
    tcase_add_test(tc, max_deliveries_leave_pending_without_an_ack);
    tcase_add_test(tc, skip_moves_delivered_without_a_delivery);
    tcase_add_test(tc, reset_clears_pending_and_restarts);
    tcase_add_test(tc, an_entry_applies_in_order);
    tcase_add_test(tc, a_snapshot_round_trips_byte_for_byte);
    tcase_add_test(tc, a_snapshot_allocates_once);
    tcase_add_test(tc, restore_refuses_damage_and_changes_nothing);
    tcase_add_test(tc, restore_refuses_state_that_breaks_an_invariant);
    tcase_add_test(tc, random_records_agree_with_a_reference_model);
    tcase_add_test(tc, replicas_write_identical_snapshots);
    tcase_add_test(tc, a_failed_allocation_changes_nothing);
    tcase_add_test(tc, the_steady_path_allocates_nothing);
    tcase_add_test(tc, an_entry_applies_whole_or_not_at_all);
    tcase_add_test(tc, a_failed_growth_squeezes_instead);
    tcase_add_test(tc, a_reserved_entry_applies_without_memory);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
