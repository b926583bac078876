/* heap — the timer heap of heap.h. */
#include "heap.h"

#include "alloc.h"
#include "invariant.h"

void jr__heap_init(jr__heap *h, const jr_allocator *a)
{
    h->items = NULL;
    h->len = h->cap = 0;
    h->seq = 0;
    h->alloc = a;
}

void jr__heap_free(jr__heap *h)
{
    for (size_t i = 0; i < h->len; i++) h->items[i].t->slot = SIZE_MAX;
    jr__free(h->alloc, h->items);
    jr__heap_init(h, h->alloc);
}

#define ARITY 4

/* a before b: an earlier deadline, or the same one armed earlier */
static inline int before(const jr__heap_item *a, const jr__heap_item *b)
{
    return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void heap_set(jr__heap *h, size_t i, jr__heap_item it)
{
    h->items[i] = it;
    it.t->slot = i;
}

#if JR__INVARIANTS_ON
/* heap.h's invariants at slot i (where a change came to rest): its timer knows its slot and
 * deadline, its seq was drawn, it is not before its parent and no child is before it; a small
 * heap is checked whole. */
static void check_at(const jr__heap *h, size_t i)
{
    const jr__heap_item *it = &h->items[i];
    JR__INVARIANT(it->t->slot == i && it->t->deadline == it->deadline && it->seq < h->seq);
    if (i > 0) JR__INVARIANT(!before(it, &h->items[(i - 1) / ARITY]));
    for (size_t c = ARITY * i + 1; c < h->len && c <= ARITY * i + ARITY; c++)
        JR__INVARIANT(!before(&h->items[c], it));
}

static void check(const jr__heap *h, size_t i)
{
    if (h->len <= 64) {
        for (size_t k = 0; k < h->len; k++) check_at(h, k);
    } else if (i < h->len) {
        check_at(h, i);
    }
}
#define CHECK(h, i) check(h, i)
#else
#define CHECK(h, i) ((void)0)
#endif

static void heap_up(jr__heap *h, size_t i)
{
    jr__heap_item it = h->items[i];
    while (i > 0) {
        size_t p = (i - 1) / ARITY;
        if (!before(&it, &h->items[p])) break;
        heap_set(h, i, h->items[p]);
        i = p;
    }
    heap_set(h, i, it);
    CHECK(h, i);
}

static void heap_down(jr__heap *h, size_t i)
{
    jr__heap_item it = h->items[i];
    for (;;) {
        size_t c = ARITY * i + 1, end = c + ARITY;
        if (c >= h->len) break;
        if (end > h->len) end = h->len;
        size_t m = c;
        for (size_t k = c + 1; k < end; k++)
            if (before(&h->items[k], &h->items[m])) m = k;
        if (!before(&h->items[m], &it)) break;
        heap_set(h, i, h->items[m]);
        i = m;
    }
    heap_set(h, i, it);
    CHECK(h, i);
}

int jr__heap_arm(jr__heap *h, jr__timer *t, uint64_t deadline)
{
    if (jr__timer_armed(t)) {
        if (deadline == t->deadline) return 0; /* armed for that deadline already: keeps its turn */
        /* re-keyed: (deadline, a new arming number) is before the old key only if the deadline
         * moved earlier */
        size_t i = t->slot;
        int up = deadline < t->deadline;
        t->deadline = deadline;
        h->items[i].deadline = deadline;
        h->items[i].seq = h->seq++;
        if (up)
            heap_up(h, i);
        else
            heap_down(h, i);
        return 0;
    }
    if (h->len == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        jr__heap_item *n = jr__realloc(h->alloc, h->items, cap * sizeof *n);
        if (!n) return JR_ENOMEM;
        h->items = n;
        h->cap = cap;
    }
    t->deadline = deadline;
    heap_set(h, h->len++, (jr__heap_item){deadline, h->seq++, t});
    heap_up(h, t->slot);
    return 0;
}

void jr__heap_cancel(jr__heap *h, jr__timer *t)
{
    if (!jr__timer_armed(t)) return;
    size_t i = t->slot;
    t->slot = SIZE_MAX;
    h->len--;
    if (i == h->len) {
        CHECK(h, 0);
        return;
    }
    jr__heap_item last = h->items[h->len];
    heap_set(h, i, last);
    if (i > 0 && before(&last, &h->items[(i - 1) / ARITY]))
        heap_up(h, i);
    else
        heap_down(h, i);
}

jr__timer *jr__heap_pop_due(jr__heap *h, uint64_t now)
{
    if (!h->len || h->items[0].deadline > now) return NULL;
    jr__timer *t = h->items[0].t;
    jr__heap_cancel(h, t);
    return t;
}
