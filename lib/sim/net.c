/*
 * net — the simulated network of the cluster fixture: per-link loss, duplication, delay and
 * reordering, cuts, and the frames in flight ordered by delivery time (a min-heap on
 * (at, seq)). Frame buffers are recycled, so a steady stream of frames allocates nothing.
 */
#include <string.h>

#include "sim/sim_int.h"
#include "util/alloc.h"

double jr__sim_uniform(jr_sim *s)
{
    return (double)(jr__rand_next(&s->rand) >> 11) * (1.0 / 9007199254740992.0);
}

static int before(const jr__sim_frame *a, const jr__sim_frame *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void heap_up(jr_sim *s, size_t i)
{
    jr__sim_frame *f = s->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(f, s->heap[p])) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = f;
}

static void heap_down(jr_sim *s, size_t i)
{
    jr__sim_frame *f = s->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->hlen) break;
        if (c + 1 < s->hlen && before(s->heap[c + 1], s->heap[c])) c++;
        if (!before(s->heap[c], f)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    s->heap[i] = f;
}

jr__sim_frame *jr__sim_net_top(const jr_sim *s)
{
    return s->hlen ? s->heap[0] : NULL;
}

jr__sim_frame *jr__sim_net_pop(jr_sim *s)
{
    if (!s->hlen) return NULL;
    jr__sim_frame *f = s->heap[0];
    s->hlen--;
    if (s->hlen) {
        s->heap[0] = s->heap[s->hlen];
        heap_down(s, 0);
    }
    return f;
}

void jr__sim_net_recycle(jr_sim *s, jr__sim_frame *f)
{
    f->next_free = s->free_frames;
    s->free_frames = f;
}

/* A frame with room for len bytes (a recycled one if possible). */
static jr__sim_frame *frame_get(jr_sim *s, size_t len)
{
    jr__sim_frame *f = s->free_frames;
    if (f) {
        s->free_frames = f->next_free;
    } else {
        f = jr__calloc(s->alloc, 1, sizeof *f);
        if (!f) return NULL;
    }
    if (f->cap < len) {
        size_t cap = f->cap ? f->cap : 256;
        while (cap < len) cap *= 2;
        uint8_t *d = jr__realloc(s->alloc, f->data, cap);
        if (!d) {
            jr__sim_net_recycle(s, f);
            return NULL;
        }
        f->data = d;
        f->cap = cap;
    }
    f->len = len;
    return f;
}

static int push(jr_sim *s, jr__sim_frame *f)
{
    if (s->hlen == s->hcap) {
        size_t cap = s->hcap ? s->hcap * 2 : 64;
        jr__sim_frame **h = jr__realloc(s->alloc, s->heap, cap * sizeof *h);
        if (!h) return JR_ENOMEM;
        s->heap = h;
        s->hcap = cap;
    }
    s->heap[s->hlen++] = f;
    heap_up(s, s->hlen - 1);
    return 0;
}

int jr__sim_net_requeue(jr_sim *s, jr__sim_frame *f, uint64_t at)
{
    f->at = at;
    f->seq = s->seq++;
    int rc = push(s, f);
    if (rc) jr__sim_net_recycle(s, f);
    return rc;
}

static uint64_t delay(jr_sim *s, const jr_sim_link *l)
{
    uint64_t d = l->delay_min_ns;
    if (l->delay_max_ns > l->delay_min_ns)
        d += jr__rand_below(&s->rand, l->delay_max_ns - l->delay_min_ns + 1);
    if (l->reorder > 0 && jr__sim_uniform(s) < l->reorder)
        d += jr__rand_below(&s->rand, 2 * l->delay_max_ns + 1000000u);
    return d;
}

int jr__sim_net_send(jr_sim *s, unsigned from, unsigned to, const jr_iovec *iov, int iovcnt)
{
    s->stats.frames_sent++;
    const jr_sim_link *l = &s->links[from][to];
    if (s->cut[from][to] || (l->drop > 0 && jr__sim_uniform(s) < l->drop)) {
        s->stats.frames_dropped++;
        return 0; /* lost on the way: the sender cannot tell */
    }
    int copies = 1;
    if (l->duplicate > 0 && jr__sim_uniform(s) < l->duplicate) {
        copies = 2;
        s->stats.frames_duplicated++;
    }
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].len;
    /* a link with a bandwidth sends its frames one after another */
    uint64_t leaves = s->now;
    if (l->bytes_per_sec) {
        uint64_t *busy = &s->busy_until[from][to];
        if (*busy > leaves) leaves = *busy;
        leaves += (uint64_t)((double)len * 1e9 / (double)l->bytes_per_sec);
        *busy = leaves;
    }
    for (int c = 0; c < copies; c++) {
        jr__sim_frame *f = frame_get(s, len);
        if (!f) return JR_ENOMEM;
        size_t off = 0;
        for (int i = 0; i < iovcnt; i++) {
            if (iov[i].len) memcpy(f->data + off, iov[i].base, iov[i].len);
            off += iov[i].len;
        }
        f->from = from;
        f->to = to;
        f->at = leaves + delay(s, l);
        f->seq = s->seq++;
        if (push(s, f) != 0) {
            jr__sim_net_recycle(s, f);
            return JR_ENOMEM;
        }
    }
    return 0;
}

void jr__sim_net_free(jr_sim *s)
{
    for (size_t i = 0; i < s->hlen; i++) jr__sim_net_recycle(s, s->heap[i]);
    s->hlen = 0;
    jr__sim_frame *f = s->free_frames;
    while (f) {
        jr__sim_frame *next = f->next_free;
        jr__free(s->alloc, f->data);
        jr__free(s->alloc, f);
        f = next;
    }
    s->free_frames = NULL;
    jr__free(s->alloc, s->heap);
    s->heap = NULL;
    s->hcap = 0;
}
