/*
 * state.c — the consumer state machine: applying records, the pending array and its deadline
 * tree, the leader's queries, the invariant check (state.h). Snapshots are in state_snapshot.c.
 */
#include <string.h>

#include "consumer/state.h"
#include "consumer/state_int.h"
#include "util/alloc.h"
#include "util/deadline.h"
#include "util/invariant.h"

/* ---------------------------------------------------------------------------------------------
 * Policy
 */

static int policy_ok(const jr__cpolicy *p)
{
    if (!p) return 0;
    if (p->ack_policy != JR_ACK_NONE && p->ack_policy != JR_ACK_ALL &&
        p->ack_policy != JR_ACK_EXPLICIT)
        return 0;
    if (p->ack_wait_ns < 0 || p->nbackoff > JR__CPOLICY_BACKOFF_MAX) return 0;
    if (p->nbackoff && !p->backoff_ns) return 0;
    for (size_t i = 0; i < p->nbackoff; i++)
        if (p->backoff_ns[i] < 0) return 0;
    return 1;
}

/* Copies p's backoff into a new array (*out NULL when empty). 0 or JR_ENOMEM. */
static int copy_backoff(const jr_allocator *a, const jr__cpolicy *p, int64_t **out)
{
    *out = NULL;
    if (!p->nbackoff) return 0;
    int64_t *b = jr__calloc(a, p->nbackoff, sizeof *b);
    if (!b) return JR_ENOMEM;
    memcpy(b, p->backoff_ns, p->nbackoff * sizeof *b);
    *out = b;
    return 0;
}

static void install_policy(jr__cstate *st, const jr__cpolicy *p, int64_t *backoff)
{
    jr__free(st->alloc, st->backoff);
    st->backoff = backoff;
    st->policy = *p;
    st->policy.backoff_ns = backoff;
}

int jr__cstate_init(jr__cstate *st, const jr_allocator *a, const jr__cpolicy *p)
{
    memset(st, 0, sizeof *st);
    st->alloc = a;
    st->policy.ack_policy = JR_ACK_NONE;
    if (!policy_ok(p)) return JR_EINVAL;
    int64_t *b;
    int rc = copy_backoff(a, p, &b);
    if (rc) return rc;
    install_policy(st, p, b);
    return 0;
}

void jr__cstate_free(jr__cstate *st)
{
    jr__free(st->alloc, st->backoff);
    jr__free(st->alloc, st->pend);
    jr__free(st->alloc, st->tree);
    const jr_allocator *a = st->alloc;
    memset(st, 0, sizeof *st);
    st->alloc = a;
}

/* ---------------------------------------------------------------------------------------------
 * Deadlines and the min-tree over the pending slots
 */

/* A live slot's leaf: its deadline, kept below UINT64_MAX, which marks a hole, so that a query
 * at now = UINT64_MAX ("every pending slot") finds live slots only. */
static uint64_t live_leaf(uint64_t deadline)
{
    return deadline < UINT64_MAX ? deadline : UINT64_MAX - 1;
}

uint64_t jr__cstate_deadline_of(const jr__cstate *st, const jr__cpend *e)
{
    if (e->nak) return live_leaf(e->nak_deadline);
    int64_t wait = st->policy.ack_wait_ns;
    if (st->policy.nbackoff) {
        size_t i = (size_t)e->dc - 1;
        if (i >= st->policy.nbackoff) i = st->policy.nbackoff - 1;
        wait = st->policy.backoff_ns[i];
    }
    return live_leaf(jr__deadline(e->ts, (uint64_t)wait));
}

static inline uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Sets slot i's leaf to v and fixes its ancestors: O(log cap). */
static void tree_set(jr__cstate *st, size_t i, uint64_t v)
{
    size_t j = st->cap + i;
    st->tree[j] = v;
    for (j >>= 1; j >= 1; j >>= 1) st->tree[j] = min64(st->tree[2 * j], st->tree[2 * j + 1]);
}

void jr__cstate_tree_build(const jr__cstate *st, jr__cpend *pend, uint64_t *tree, size_t cap,
                           size_t n)
{
    for (size_t i = 0; i < cap; i++)
        tree[cap + i] = i < n && pend[i].dc ? jr__cstate_deadline_of(st, &pend[i]) : UINT64_MAX;
    for (size_t j = cap - 1; j >= 1; j--) tree[j] = min64(tree[2 * j], tree[2 * j + 1]);
}

/* The slot of a pending sseq, or SIZE_MAX. O(log n). */
static size_t find(const jr__cstate *st, uint64_t sseq)
{
    size_t lo = st->head, hi = st->tail;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->pend[mid].sseq < sseq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < st->tail && st->pend[lo].sseq == sseq && st->pend[lo].dc) return lo;
    return SIZE_MAX;
}

/* With nothing pending, gives back arrays that a burst grew past JR__CSTATE_KEEP slots. */
static void release_if_large(jr__cstate *st)
{
    if (st->cap <= JR__CSTATE_KEEP) return;
    jr__free(st->alloc, st->pend);
    jr__free(st->alloc, st->tree);
    st->pend = NULL;
    st->tree = NULL;
    st->cap = 0;
}

/* Makes slot i a hole. */
static void remove_at(jr__cstate *st, size_t i)
{
    jr__cpend *e = &st->pend[i];
    if (e->dc > 1) st->nredelivered--;
    uint64_t sseq = e->sseq;
    memset(e, 0, sizeof *e);
    e->sseq = sseq; /* a hole keeps its sseq: the slots stay sorted for the binary search */
    tree_set(st, i, UINT64_MAX);
    st->npending--;
    if (st->npending == 0) {
        st->head = st->tail = 0;
        release_if_large(st);
        return;
    }
    while (st->head < st->tail && st->pend[st->head].dc == 0) st->head++;
}

/* Moves the live slots to the front of the arrays, in place. */
static void compact(jr__cstate *st)
{
    size_t n = 0;
    for (size_t i = st->head; i < st->tail; i++)
        if (st->pend[i].dc) st->pend[n++] = st->pend[i];
    memset(st->pend + n, 0, (st->cap - n) * sizeof *st->pend);
    st->head = 0;
    st->tail = n;
    jr__cstate_tree_build(st, st->pend, st->tree, st->cap, n);
}

/* Moves the live slots into new arrays of cap slots (cap >= npending, a power of two).
 * 0 or JR_ENOMEM (nothing changed). */
static int regrow(jr__cstate *st, size_t cap)
{
    if (cap > SIZE_MAX / 2 / sizeof(uint64_t) / 2) return JR_ENOMEM;
    jr__cpend *pend = jr__calloc(st->alloc, cap, sizeof *pend);
    uint64_t *tree = pend ? jr__calloc(st->alloc, 2 * cap, sizeof *tree) : NULL;
    if (!tree) {
        jr__free(st->alloc, pend);
        return JR_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = st->head; i < st->tail; i++)
        if (st->pend[i].dc) pend[n++] = st->pend[i];
    jr__free(st->alloc, st->pend);
    jr__free(st->alloc, st->tree);
    st->pend = pend;
    st->tree = tree;
    st->cap = cap;
    st->head = 0;
    st->tail = n;
    jr__cstate_tree_build(st, pend, tree, cap, n);
    return 0;
}

/* Room for one more slot at the tail: squeezes the holes out when at most half the slots are
 * live (no allocation), else doubles — or, if that allocation fails while a hole is left,
 * squeezes anyway. 0 or JR_ENOMEM (every slot live and no memory; the state unchanged). */
static int make_room(jr__cstate *st)
{
    if (st->tail < st->cap) return 0;
    if (st->cap && st->npending <= st->cap / 2) {
        compact(st);
        return 0;
    }
    int rc = regrow(st, st->cap ? st->cap * 2 : JR__CSTATE_MIN);
    if (rc && st->npending < st->cap) {
        compact(st);
        rc = 0;
    }
    return rc;
}

int jr__cstate_reserve(jr__cstate *st, size_t n)
{
    if (n <= st->cap - st->npending) return 0;
    if (n > SIZE_MAX / 4 - st->npending) return JR_ENOMEM;
    size_t cap = st->cap ? st->cap : JR__CSTATE_MIN;
    while (cap < st->npending + n) cap *= 2;
    return regrow(st, cap);
}

int jr__cstate_set_policy(jr__cstate *st, const jr__cpolicy *p)
{
    if (!policy_ok(p) || p->ack_policy != st->policy.ack_policy) return JR_EINVAL;
    int64_t *b;
    int rc = copy_backoff(st->alloc, p, &b);
    if (rc) return rc;
    install_policy(st, p, b);
    if (st->cap) jr__cstate_tree_build(st, st->pend, st->tree, st->cap, st->tail);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Apply
 */

static int ignore(jr__capply *out, int reason)
{
    out->applied = 0;
    out->reason = reason;
    return 0;
}

static void acked(jr__capply *out, uint64_t from, uint64_t to)
{
    out->acked_from = from;
    out->acked_to = to;
}

static int apply_delivered(jr__cstate *st, const jr__crec *r, jr__capply *out)
{
    jr__cseqs *d = &st->delivered;
    if (r->dc == 1) {
        if (r->sseq <= d->stream_seq || r->dseq <= d->consumer_seq)
            return ignore(out, JR__CIGN_STALE);
        if (st->policy.ack_policy == JR_ACK_NONE) {
            st->floor_last_ns = r->ts;
            acked(out, r->sseq, r->sseq);
        } else {
            int rc = make_room(st);
            if (rc) return rc;
            size_t i = st->tail++;
            jr__cpend *e = &st->pend[i];
            memset(e, 0, sizeof *e);
            e->sseq = r->sseq;
            e->dseq = r->dseq;
            e->ts = r->ts;
            e->dc = 1;
            if (st->npending++ == 0) st->head = i;
            tree_set(st, i, jr__cstate_deadline_of(st, e));
        }
        d->consumer_seq = r->dseq;
        d->stream_seq = r->sseq;
        d->last_active_ns = r->ts;
        return 0;
    }
    if (st->policy.ack_policy == JR_ACK_NONE) return ignore(out, JR__CIGN_NO_ACKS);
    size_t i = find(st, r->sseq);
    if (i == SIZE_MAX) return ignore(out, JR__CIGN_NOT_PENDING);
    jr__cpend *e = &st->pend[i];
    if (r->dseq <= d->consumer_seq || r->dc <= e->dc) return ignore(out, JR__CIGN_STALE);
    if (e->dc == 1) st->nredelivered++;
    e->dc = r->dc;
    e->ts = r->ts;
    e->nak = 0;
    e->nak_deadline = 0;
    tree_set(st, i, jr__cstate_deadline_of(st, e));
    d->consumer_seq = r->dseq;
    d->last_active_ns = r->ts;
    return 0;
}

static int apply_ack(jr__cstate *st, const jr__crec *r, jr__capply *out)
{
    if (st->policy.ack_policy == JR_ACK_NONE) return ignore(out, JR__CIGN_NO_ACKS);
    if (r->sseq > st->delivered.stream_seq || r->dseq > st->delivered.consumer_seq)
        return ignore(out, JR__CIGN_NOT_DELIVERED);
    if (st->policy.ack_policy == JR_ACK_ALL) {
        if (!st->npending || st->pend[st->head].sseq > r->sseq)
            return ignore(out, JR__CIGN_NOT_PENDING);
        acked(out, st->pend[st->head].sseq, r->sseq); /* floor.stream_seq + 1 .. sseq */
        while (st->npending && st->pend[st->head].sseq <= r->sseq) remove_at(st, st->head);
    } else {
        size_t i = find(st, r->sseq);
        if (i == SIZE_MAX) return ignore(out, JR__CIGN_NOT_PENDING);
        out->dseq = st->pend[i].dseq;
        out->dc = st->pend[i].dc;
        remove_at(st, i);
        acked(out, r->sseq, r->sseq);
    }
    st->floor_last_ns = r->ts;
    return 0;
}

/* NAK, PROGRESS, TERM, MAXDELIV: records about one pending message. */
static int apply_one(jr__cstate *st, const jr__crec *r, jr__capply *out)
{
    if (st->policy.ack_policy == JR_ACK_NONE) return ignore(out, JR__CIGN_NO_ACKS);
    size_t i = find(st, r->sseq);
    if (i == SIZE_MAX) return ignore(out, JR__CIGN_NOT_PENDING);
    jr__cpend *e = &st->pend[i];
    out->dseq = e->dseq;
    out->dc = e->dc;
    switch (r->type) {
    case JR__COP_NAK:
        e->nak = 1;
        e->nak_deadline = jr__deadline(r->ts, (uint64_t)r->delay_ns);
        tree_set(st, i, jr__cstate_deadline_of(st, e));
        break;
    case JR__COP_PROGRESS:
        e->ts = r->ts;
        e->nak = 0;
        e->nak_deadline = 0;
        tree_set(st, i, jr__cstate_deadline_of(st, e));
        break;
    case JR__COP_TERM:
        remove_at(st, i);
        out->terminated = 1;
        acked(out, r->sseq, r->sseq);
        st->floor_last_ns = r->ts;
        break;
    default: /* MAXDELIV */
        remove_at(st, i);
        out->max_delivered = 1;
        break;
    }
    return 0;
}

static void apply_reset(jr__cstate *st, const jr__crec *r)
{
    if (st->cap) {
        memset(st->pend, 0, st->cap * sizeof *st->pend);
        for (size_t j = 1; j < 2 * st->cap; j++) st->tree[j] = UINT64_MAX;
    }
    st->head = st->tail = 0;
    st->npending = 0;
    st->nredelivered = 0;
    release_if_large(st);
    st->delivered.consumer_seq = 0;
    st->delivered.stream_seq = r->sseq - 1;
}

int jr__cstate_apply(jr__cstate *st, const jr__crec *r, jr__capply *out)
{
    memset(out, 0, sizeof *out);
    if (jr__crec_check(r)) return JR_EINVAL;
    out->applied = 1;
    int rc = 0;
    switch (r->type) {
    case JR__COP_DELIVERED:
        rc = apply_delivered(st, r, out);
        break;
    case JR__COP_ACK:
        rc = apply_ack(st, r, out);
        break;
    case JR__COP_SKIP:
        if (r->sseq <= st->delivered.stream_seq) {
            ignore(out, JR__CIGN_STALE);
            break;
        }
        st->delivered.stream_seq = r->sseq;
        break;
    case JR__COP_RESET:
        apply_reset(st, r);
        break;
    default:
        rc = apply_one(st, r, out);
        break;
    }
    if (rc) memset(out, 0, sizeof *out);
    /* whole while small (the check is O(n)); the tests check large states themselves */
    if (JR__INVARIANTS_ON && st->cap <= 1024) JR__INVARIANT(jr__cstate_check(st) == 0);
    return rc;
}

int jr__cstate_reserve_entry(jr__cstate *st, const jr__cop_iter *it)
{
    if (st->policy.ack_policy == JR_ACK_NONE) return 0; /* deliveries append nothing */
    return jr__cstate_reserve(st, it->firsts);          /* counted when the entry was checked */
}

int jr__cstate_apply_entry(jr__cstate *st, const void *data, size_t len)
{
    jr__cop_iter it;
    int rc = jr__cop_iter_init(&it, data, len);
    if (rc) return rc;
    /* room for every first delivery first: then no record below can fail */
    rc = jr__cstate_reserve_entry(st, &it);
    if (rc) return rc;
    jr__crec r;
    int got;
    while (!(rc = jr__cop_next(&it, &r, &got)) && got) {
        jr__capply out;
        rc = jr__cstate_apply(st, &r, &out);
        JR__INVARIANT(rc == 0);
        if (rc) break;
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Queries
 */

void jr__cstate_ack_floor(const jr__cstate *st, jr__cseqs *floor)
{
    if (st->npending) {
        const jr__cpend *e = &st->pend[st->head];
        floor->consumer_seq = e->dseq - 1;
        floor->stream_seq = e->sseq - 1;
    } else {
        floor->consumer_seq = st->delivered.consumer_seq;
        floor->stream_seq = st->delivered.stream_seq;
    }
    floor->last_active_ns = st->floor_last_ns;
}

int jr__cstate_next_expired(const jr__cstate *st, uint64_t now_ns, uint64_t *sseq, uint32_t *dc)
{
    if (now_ns == UINT64_MAX) now_ns = UINT64_MAX - 1; /* holes' leaves are UINT64_MAX */
    if (!st->npending || st->tree[1] > now_ns) return JR_ENOTFOUND;
    size_t j = 1;
    while (j < st->cap) j = st->tree[2 * j] <= now_ns ? 2 * j : 2 * j + 1;
    const jr__cpend *e = &st->pend[j - st->cap];
    if (sseq) *sseq = e->sseq;
    if (dc) *dc = e->dc;
    return 0;
}

/* The leftmost leaf at or after position `from` under node (covering leaves [lo, hi)) whose
 * deadline is <= now; SIZE_MAX if none. Subtrees wholly before from or without an expired leaf
 * are skipped, so a descent costs O(log^2 n) at most. */
static size_t leftmost_expired(const jr__cstate *st, size_t node, size_t lo, size_t hi, size_t from,
                               uint64_t now)
{
    if (hi <= from || st->tree[node] > now) return SIZE_MAX;
    if (node >= st->cap) return node - st->cap;
    size_t mid = lo + (hi - lo) / 2;
    size_t r = leftmost_expired(st, 2 * node, lo, mid, from, now);
    return r != SIZE_MAX ? r : leftmost_expired(st, 2 * node + 1, mid, hi, from, now);
}

int jr__cstate_next_expired_after(const jr__cstate *st, uint64_t now_ns, uint64_t after,
                                  uint64_t *sseq, uint32_t *dc)
{
    if (now_ns == UINT64_MAX) now_ns = UINT64_MAX - 1; /* holes' leaves are UINT64_MAX */
    if (!st->npending || st->tree[1] > now_ns) return JR_ENOTFOUND;
    size_t lo = st->head, hi = st->tail; /* the first slot whose sseq > after */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->pend[mid].sseq <= after)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = leftmost_expired(st, 1, 0, st->cap, lo, now_ns);
    if (i == SIZE_MAX) return JR_ENOTFOUND;
    if (sseq) *sseq = st->pend[i].sseq;
    if (dc) *dc = st->pend[i].dc;
    return 0;
}

uint64_t jr__cstate_next_deadline(const jr__cstate *st)
{
    return st->npending ? st->tree[1] : UINT64_MAX;
}

int jr__cstate_pending_get(const jr__cstate *st, uint64_t sseq, uint64_t *dseq, uint32_t *dc,
                           uint64_t *ts)
{
    size_t i = find(st, sseq);
    if (i == SIZE_MAX) return JR_ENOTFOUND;
    if (dseq) *dseq = st->pend[i].dseq;
    if (dc) *dc = st->pend[i].dc;
    if (ts) *ts = st->pend[i].ts;
    return 0;
}

int jr__cstate_pending_deadline(const jr__cstate *st, uint64_t sseq, uint64_t *deadline)
{
    size_t i = find(st, sseq);
    if (i == SIZE_MAX) return JR_ENOTFOUND;
    *deadline = jr__cstate_deadline_of(st, &st->pend[i]);
    return 0;
}

uint64_t jr__cstate_num_redelivered(const jr__cstate *st)
{
    return st->policy.max_deliver == 1 ? 0 : st->nredelivered;
}

/* ---------------------------------------------------------------------------------------------
 * Invariants
 */

int jr__cstate_check(const jr__cstate *st)
{
    const jr__cseqs *d = &st->delivered;
    jr__cseqs f;
    jr__cstate_ack_floor(st, &f);
    if (f.stream_seq > d->stream_seq || f.consumer_seq > d->consumer_seq) return JR_ECORRUPT;
    if (st->policy.ack_policy == JR_ACK_NONE && st->npending) return JR_ECORRUPT;
    if (st->head > st->tail || st->tail > st->cap) return JR_ECORRUPT;
    if (st->cap && (st->cap & (st->cap - 1))) return JR_ECORRUPT;
    if (st->npending && (st->head >= st->tail || !st->pend[st->head].dc)) return JR_ECORRUPT;
    if (!st->npending && (st->head || st->tail)) return JR_ECORRUPT;
    size_t live = 0;
    uint64_t redel = 0, ps = 0, pd = 0;
    for (size_t i = st->head; i < st->tail; i++) {
        const jr__cpend *e = &st->pend[i];
        if (i > st->head && e->sseq < st->pend[i - 1].sseq) return JR_ECORRUPT;
        uint64_t want = UINT64_MAX;
        if (e->dc) {
            if (e->sseq <= ps || e->dseq <= pd) return JR_ECORRUPT;
            if (e->sseq <= f.stream_seq || e->sseq > d->stream_seq) return JR_ECORRUPT;
            if (e->dseq <= f.consumer_seq || e->dseq > d->consumer_seq) return JR_ECORRUPT;
            if (e->nak > 1 || (!e->nak && e->nak_deadline)) return JR_ECORRUPT;
            ps = e->sseq;
            pd = e->dseq;
            live++;
            redel += e->dc > 1;
            want = jr__cstate_deadline_of(st, e);
        }
        if (st->tree[st->cap + i] != want) return JR_ECORRUPT;
    }
    if (live != st->npending || redel != st->nredelivered) return JR_ECORRUPT;
    for (size_t i = 0; i < st->cap; i++) {
        if ((i < st->head || i >= st->tail) && st->tree[st->cap + i] != UINT64_MAX)
            return JR_ECORRUPT;
    }
    for (size_t j = 1; j < st->cap; j++)
        if (st->tree[j] != min64(st->tree[2 * j], st->tree[2 * j + 1])) return JR_ECORRUPT;
    return 0;
}
