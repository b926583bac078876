#include "heap.h"

#include "alloc.h"

void jr__heap_init(jr__heap *h, const jr_allocator *a)
{
    h->items = NULL;
    h->len = h->cap = 0;
    h->alloc = a;
}

void jr__heap_free(jr__heap *h)
{
    for (size_t i = 0; i < h->len; i++) h->items[i]->slot = SIZE_MAX;
    jr__free(h->alloc, h->items);
    jr__heap_init(h, h->alloc);
}

static void heap_set(jr__heap *h, size_t i, jr__timer *t)
{
    h->items[i] = t;
    t->slot = i;
}

static void heap_up(jr__heap *h, size_t i)
{
    jr__timer *t = h->items[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h->items[p]->deadline <= t->deadline) break;
        heap_set(h, i, h->items[p]);
        i = p;
    }
    heap_set(h, i, t);
}

static void heap_down(jr__heap *h, size_t i)
{
    jr__timer *t = h->items[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->len) break;
        if (c + 1 < h->len && h->items[c + 1]->deadline < h->items[c]->deadline) c++;
        if (t->deadline <= h->items[c]->deadline) break;
        heap_set(h, i, h->items[c]);
        i = c;
    }
    heap_set(h, i, t);
}

int jr__heap_arm(jr__heap *h, jr__timer *t, uint64_t deadline)
{
    if (jr__timer_armed(t)) {
        uint64_t old = t->deadline;
        t->deadline = deadline;
        if (deadline < old)
            heap_up(h, t->slot);
        else
            heap_down(h, t->slot);
        return 0;
    }
    if (h->len == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        jr__timer **n = jr__realloc(h->alloc, h->items, cap * sizeof *n);
        if (!n) return JR_ENOMEM;
        h->items = n;
        h->cap = cap;
    }
    t->deadline = deadline;
    heap_set(h, h->len++, t);
    heap_up(h, t->slot);
    return 0;
}

void jr__heap_cancel(jr__heap *h, jr__timer *t)
{
    if (!jr__timer_armed(t)) return;
    size_t i = t->slot;
    t->slot = SIZE_MAX;
    h->len--;
    if (i == h->len) return;
    jr__timer *last = h->items[h->len];
    heap_set(h, i, last);
    if (i > 0 && h->items[(i - 1) / 2]->deadline > last->deadline)
        heap_up(h, i);
    else
        heap_down(h, i);
}

jr__timer *jr__heap_pop_due(jr__heap *h, uint64_t now)
{
    jr__timer *t = jr__heap_top(h);
    if (!t || t->deadline > now) return NULL;
    jr__heap_cancel(h, t);
    return t;
}
