/* memlog — the in-memory Raft log (see memlog.h). */
#include "memlog.h"

#include <string.h>

#include "util/alloc.h"

/* Small minimums: most groups of a busy node are idle and hold a handful of entries; the rings
 * double as soon as a group gets traffic. */
#define MIN_ECAP 4
#define MIN_BCAP 64

void jr__memlog_init(jr__memlog *l, const jr_allocator *a)
{
    memset(l, 0, sizeof *l);
    l->alloc = a;
    l->first = 1;
    l->last = 0;
}

void jr__memlog_free(jr__memlog *l)
{
    jr__free(l->alloc, l->ents);
    jr__free(l->alloc, l->bytes);
    l->ents = NULL;
    l->bytes = NULL;
    l->ecap = l->bcap = 0;
}

static uint64_t count(const jr__memlog *l)
{
    return l->last + 1 - l->first;
}

static uint64_t pow2_at_least(uint64_t n, uint64_t min)
{
    uint64_t c = min;
    while (c < n) c <<= 1;
    return c;
}

/* Moves the entries into a ring of cap slots (a power of two holding them all; 0 only if the
 * log is empty). */
static int move_ents(jr__memlog *l, uint64_t cap)
{
    jr__memlog_ent *e = NULL;
    if (cap) {
        e = jr__malloc(l->alloc, (size_t)cap * sizeof *e);
        if (!e) return JR_ENOMEM;
        for (uint64_t i = l->first; i <= l->last; i++)
            e[i & (cap - 1)] = l->ents[i & (l->ecap - 1)];
    }
    jr__free(l->alloc, l->ents);
    l->ents = e;
    l->ecap = cap;
    return 0;
}

/* Moves the entries into a ring of cap slots (slots are index-addressed, so a plain copy per
 * entry re-homes them). */
static int grow_ents(jr__memlog *l, uint64_t need)
{
    uint64_t cap = pow2_at_least(need, l->ecap ? l->ecap * 2 : MIN_ECAP);
    if (cap > SIZE_MAX / sizeof(jr__memlog_ent)) return JR_ENOMEM;
    return move_ents(l, cap);
}

/* Re-lays the live payloads out contiguously from position 0 of a ring of cap bytes (a power
 * of two holding them all, or 0 if they are all empty). */
static int relayout(jr__memlog *l, uint64_t cap)
{
    uint8_t *b = NULL;
    if (cap) {
        b = jr__malloc(l->alloc, (size_t)cap);
        if (!b) return JR_ENOMEM;
    }
    uint64_t pos = 0;
    for (uint64_t i = l->first; i <= l->last; i++) {
        jr__memlog_ent *e = &l->ents[i & (l->ecap - 1)];
        if (e->len) memcpy(b + pos, l->bytes + (e->pos & (l->bcap - 1)), e->len);
        e->pos = pos;
        pos += e->len;
        l->moved += e->len;
    }
    jr__free(l->alloc, l->bytes);
    l->bytes = b;
    l->bcap = cap;
    l->head = 0;
    l->tail = pos;
    return 0;
}

/* Grows the payload ring to hold at least need bytes, in place: the ring is reallocated (an
 * allocator moves a large block by remapping its pages, not by copying them) and the entries'
 * positions are renumbered to where their bytes now lie. Live bytes that do not wrap around the
 * old ring's end stay where they are; live bytes that wrap are two runs, [head's slot, old end)
 * and [0, tail's slot), of which the shorter one is moved next to the other: the run at the
 * start to just past the old end, or the run at the end to the new ring's end (the live bytes
 * then wrap around the new ring). So growing copies at most half the old ring and usually
 * nothing: a copy of the whole log (hundreds of MiB for a log a leader keeps for a member
 * catching up, or a joiner's own, into pages touched for the first time) would hold up the
 * thread that appends, and with it the group's heartbeats and answers, for about an election
 * timeout. O(entries) for the renumbering, only on doubling. */
static int grow_bytes(jr__memlog *l, uint64_t need)
{
    uint64_t cap = pow2_at_least(need, l->bcap ? l->bcap * 2 : MIN_BCAP);
    if (cap > SIZE_MAX) return JR_ENOMEM;
    if (!l->bcap || l->tail == l->head) return relayout(l, cap); /* no live bytes to keep */
    uint64_t old = l->bcap, h = l->head & (old - 1), lap = (l->head | (old - 1)) + 1;
    uint8_t *b = jr__realloc(l->alloc, l->bytes, (size_t)cap);
    if (!b) return JR_ENOMEM;
    uint64_t a = lap - l->head, t = l->tail > lap ? l->tail - lap : 0;
    /* the new position of a byte at old position pos: A for the run from head to the lap's
     * end, B for the run after it */
    uint64_t base_a = h, base_b = old; /* no wrap, or B moved up to just past the old end */
    if (t && a < t) {                  /* A moved to the new ring's end */
        memcpy(b + cap - a, b + h, (size_t)a);
        base_a = cap - a;
        base_b = cap;
        l->moved += a;
    } else if (t) { /* B moved to just past the old end */
        memcpy(b + old, b, (size_t)t);
        l->moved += t;
    }
    for (uint64_t i = l->first; i <= l->last; i++) {
        jr__memlog_ent *e = &l->ents[i & (l->ecap - 1)];
        e->pos = e->pos < lap ? base_a + (e->pos - l->head) : base_b + (e->pos - lap);
    }
    uint64_t tail = l->tail < lap || !t ? base_a + (l->tail - l->head) : base_b + t;
    l->head = base_a;
    l->tail = tail;
    l->bytes = b;
    l->bcap = cap;
    return 0;
}

void jr__memlog_shrink(jr__memlog *l)
{
    uint64_t n = count(l), live = 0;
    for (uint64_t i = l->first; i <= l->last; i++) live += jr__memlog_at(l, i)->len;
    uint64_t ecap = n ? pow2_at_least(n, MIN_ECAP) : 0;
    uint64_t bcap = live ? pow2_at_least(live, MIN_BCAP) : 0;
    /* only when it at least halves a ring: an idle group is not re-shrunk over and over */
    if (ecap < l->ecap && ecap <= l->ecap / 2) move_ents(l, ecap);
    if (bcap < l->bcap && bcap <= l->bcap / 2) relayout(l, bcap);
}

/* Where a payload of len bytes would go: at tail, or at the next lap if it would wrap. */
static uint64_t place(const jr__memlog *l, uint32_t len)
{
    uint64_t pos = l->tail;
    if (len && l->bcap && (pos & (l->bcap - 1)) + len > l->bcap) pos = (pos | (l->bcap - 1)) + 1;
    return pos;
}

int jr__memlog_append(jr__memlog *l, uint64_t term, uint8_t type, const void *data, uint32_t len)
{
    if (count(l) + 1 > l->ecap) {
        int rc = grow_ents(l, count(l) + 1);
        if (rc) return rc;
    }
    uint64_t pos = place(l, len);
    if (len && (!l->bcap || pos + len - l->head > l->bcap)) {
        int rc = grow_bytes(l, (l->tail - l->head + len) * 2);
        if (rc) return rc;
        pos = place(l, len);
    }
    uint64_t index = l->last + 1;
    jr__memlog_ent *e = &l->ents[index & (l->ecap - 1)];
    e->term = term;
    e->type = type;
    e->len = len;
    e->pos = pos;
    if (len) memcpy(l->bytes + (pos & (l->bcap - 1)), data, len);
    if (count(l) == 0) l->head = pos;
    l->tail = pos + len;
    l->last = index;
    return 0;
}

uint64_t jr__memlog_bytes(const jr__memlog *l, uint64_t lo, uint64_t hi)
{
    if (lo < l->first) lo = l->first;
    if (hi > l->last) hi = l->last;
    if (lo > hi) return 0;
    const jr__memlog_ent *a = jr__memlog_at(l, lo), *b = jr__memlog_at(l, hi);
    return b->pos + b->len - a->pos;
}

void jr__memlog_truncate(jr__memlog *l, uint64_t index)
{
    if (index > l->last) return;
    if (index < l->first) index = l->first;
    l->last = index - 1;
    if (count(l) == 0) {
        l->tail = l->head;
    } else {
        const jr__memlog_ent *e = jr__memlog_at(l, l->last);
        l->tail = e->pos + e->len;
    }
}

void jr__memlog_compact(jr__memlog *l, uint64_t index)
{
    if (index < l->first) return;
    if (index > l->last) index = l->last;
    l->base_term = jr__memlog_term(l, index);
    l->base_index = index;
    l->first = index + 1;
    l->head = count(l) ? jr__memlog_at(l, l->first)->pos : l->tail;
}

void jr__memlog_reset(jr__memlog *l, uint64_t index, uint64_t term)
{
    l->first = index + 1;
    l->last = index;
    l->base_index = index;
    l->base_term = term;
    l->head = l->tail;
}

uint64_t jr__memlog_last_le(const jr__memlog *l, uint64_t lo, uint64_t hi, uint64_t term)
{
    if (lo < l->first) lo = l->first;
    if (hi > l->last) hi = l->last;
    if (lo > hi || jr__memlog_term(l, lo) > term) return lo - 1;
    /* invariant: term_at(lo) <= term; answer in [lo, hi] */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (jr__memlog_term(l, mid) <= term)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}
