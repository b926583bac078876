/*
 * rpc — node-to-node requests and responses (contract in rpc.h), and the executing side's
 * record of recent requests that makes each take effect at most once (rpc.h "At most once").
 */
#include <string.h>

#include "node/rpc.h"
#include "util/alloc.h"
#include "util/deadline.h"

typedef struct call {
    jr__timer timer; /* first: the timer callback finds the call */
    uint64_t id;
    jr__id peer;
    jr__rpc_cb cb;
    void *arg;
} call;

static const char *peer_name(const jr_node *n, jr__id id)
{
    const jr__peer *p = jr__peer_find(n, id);
    return p ? p->name : "?";
}

static size_t iov_len(const jr_iovec *iov, int iovcnt)
{
    size_t n = 0;
    for (int i = 0; i < iovcnt; i++) n += iov[i].len;
    return n;
}

/* Appends one request (is_req) or response to peer `to`'s frame. */
static int put(jr_node *n, jr__id to, int is_req, uint64_t id, int kind_or_status,
               const jr_iovec *iov, int iovcnt)
{
    jr__peer *p = jr__peer_find(n, to);
    if (!p || p->id == n->self) return JR_ENOTFOUND;
    size_t len = iov_len(iov, iovcnt);
    size_t need =
        is_req ? jr__frame_request_len(id, len) : jr__frame_response_len(id, kind_or_status, len);
    if (len > JR__RPC_MAX_PAYLOAD || need > (size_t)n->max_frame - JR__FRAME_HEADER)
        return JR_EMSGSIZE;
    jr__buf *b = jr__peer_frame(n, p, need);
    if (!b) return JR_ENOMEM;
    size_t before = b->len;
    if (is_req)
        jr__frame_add_requestv(b, id, (uint8_t)kind_or_status, iov, iovcnt);
    else
        jr__frame_add_responsev(b, id, kind_or_status, iov, iovcnt);
    if (b->err) {
        int err = b->err;
        jr__peer_frame_undo(p, b, before);
        return err;
    }
    if (!n->closing_drain) jr__node_want_tick(n); /* the frame leaves with the next flush */
    return 0;
}

static void on_timeout(void *ctx, jr__timer *t)
{
    jr_node *n = ctx;
    call *c = (call *)t;
    jr__map_del(&n->rpc_calls, c->id);
    jr__rpc_cb cb = c->cb;
    void *arg = c->arg;
    jr__free(n->alloc, c);
    cb(n, arg, JR_ETIMEDOUT, 0, NULL, 0);
}

int jr__rpc_call(jr_node *n, jr__id peer, uint8_t kind, const jr_iovec *iov, int iovcnt,
                 uint64_t timeout_ns, jr__rpc_cb cb, void *arg, uint64_t *id)
{
    call *c = jr__calloc(n->alloc, 1, sizeof *c);
    if (!c) return JR_ENOMEM;
    c->id = ++n->rpc_next;
    c->peer = peer;
    c->cb = cb;
    c->arg = arg;
    jr__timer_init(&c->timer, on_timeout);
    int rc = jr__map_put(&n->rpc_calls, c->id, c);
    if (rc == 0) {
        rc = put(n, peer, 1, c->id, kind, iov, iovcnt);
        if (rc) jr__map_del(&n->rpc_calls, c->id);
    }
    if (rc) {
        jr__free(n->alloc, c);
        return rc;
    }
    jr__node_timer_arm(n, &c->timer, jr__deadline(n->now, timeout_ns));
    if (id) *id = c->id;
    return 0;
}

void jr__rpc_cancel(jr_node *n, uint64_t id)
{
    if (!id) return;
    call *c = jr__map_del(&n->rpc_calls, id);
    if (!c) return;
    jr__node_timer_cancel(n, &c->timer);
    jr__free(n->alloc, c);
}

/* At most once ---------------------------------------------------------------------------*/

enum { SLOT_RUNNING = 1, SLOT_ANSWERED, SLOT_GONE /* answered; too large to keep */ };

#define INLINE 16 /* answer bytes kept in the slot itself (a publish ack fits) */

typedef struct slot {
    uint64_t id;
    uint64_t at; /* when it arrived (now()) */
    int32_t status;
    uint32_t len;
    uint8_t state;
    uint8_t inl[INLINE];
    uint8_t *heap; /* the answer's payload when longer than INLINE */
} slot;

/* The recent requests of one origin, in arrival order: arrival numbers [first, next) sit at
 * ring[number & (cap - 1)]; ids maps a request id to its arrival number + 1. */
typedef struct origin {
    uint64_t floor; /* the highest id forgotten (0: none) */
    uint64_t first, next;
    size_t cap; /* 0 or a power of two */
    slot *ring;
    jr__map ids;
} origin;

static slot *slot_of(origin *o, uint64_t number)
{
    return &o->ring[number & (o->cap - 1)];
}

static void slot_clear(jr_node *n, slot *s)
{
    jr__free(n->alloc, s->heap);
    memset(s, 0, sizeof *s);
}

/* Forgets the oldest request of o; its id and every lower one not still recorded are then too
 * old to tell apart from a new request. */
static void forget_oldest(jr_node *n, origin *o)
{
    slot *s = slot_of(o, o->first++);
    jr__map_del(&o->ids, s->id);
    if (s->id > o->floor) o->floor = s->id;
    slot_clear(n, s);
}

/* Gives back the ring and the id table of an origin with nothing recorded. */
static void origin_shrink(jr_node *n, origin *o)
{
    jr__free(n->alloc, o->ring);
    o->ring = NULL;
    o->cap = 0;
    jr__map_free(&o->ids);
    jr__map_init(&o->ids, n->alloc);
}

static void origin_reset(jr_node *n, origin *o)
{
    while (o->first != o->next) forget_oldest(n, o);
    o->floor = 0;
}

static void origin_free(jr_node *n, origin *o)
{
    origin_reset(n, o);
    jr__map_free(&o->ids);
    jr__free(n->alloc, o->ring);
    jr__free(n->alloc, o);
}

/* Room for one more request: the ring doubles up to JR__RPC_RECENT, then the oldest goes. */
static int make_room(jr_node *n, origin *o)
{
    if (o->next - o->first < o->cap) return 0;
    if (o->cap < JR__RPC_RECENT) {
        size_t cap = o->cap ? 2 * o->cap : 16;
        slot *ring = jr__calloc(n->alloc, cap, sizeof *ring);
        if (ring) {
            for (uint64_t k = o->first; k != o->next; k++) ring[k & (cap - 1)] = *slot_of(o, k);
            jr__free(n->alloc, o->ring);
            o->ring = ring;
            o->cap = cap;
            return 0;
        }
        if (!o->cap) return JR_ENOMEM;
    }
    forget_oldest(n, o);
    return 0;
}

int jr__rpc_admit(jr_node *n, jr__id from, uint64_t id, int *fresh)
{
    *fresh = 0;
    origin *o = jr__map_get(&n->rpc_origins, from);
    if (!o) {
        o = jr__calloc(n->alloc, 1, sizeof *o);
        if (!o) goto nomem;
        jr__map_init(&o->ids, n->alloc);
        if (jr__map_put(&n->rpc_origins, from, o) != 0) {
            jr__map_free(&o->ids);
            jr__free(n->alloc, o);
            goto nomem;
        }
    }
    uintptr_t at = (uintptr_t)jr__map_get(&o->ids, id);
    if (at) {
        slot *s = slot_of(o, at - 1);
        n->rpc_dups++;
        if (s->state == SLOT_ANSWERED) {
            jr_iovec iov = {s->len > INLINE ? s->heap : s->inl, s->len};
            put(n, from, 0, id, s->status, &iov, s->len ? 1 : 0); /* lost like a frame if not */
        }
        return 0; /* running: its answer is on its way; too large: it was sent */
    }
    if (id <= o->floor) {
        if (o->floor - id < JR__RPC_LIFE_GAP) {
            n->rpc_stale++; /* too old to tell: never executed twice, so not at all */
            return 0;
        }
        origin_reset(n, o); /* ids of another life of the origin (they start at random) */
    }
    if (make_room(n, o) != 0) goto nomem;
    uint64_t number = o->next;
    if (jr__map_put(&o->ids, id, (void *)(uintptr_t)(number + 1)) != 0) goto nomem;
    o->next++;
    slot *s = slot_of(o, number);
    memset(s, 0, sizeof *s);
    s->id = id;
    s->at = n->now;
    s->state = SLOT_RUNNING;
    *fresh = 1;
    return 0;
nomem:
    jr__node_log(n, JR_LOG_WARN, "request %llu from %s dropped: out of memory",
                 (unsigned long long)id, peer_name(n, from));
    return JR_ENOMEM;
}

/* Keeps the answer to request id of origin `to` for its duplicates. */
static void remember(jr_node *n, jr__id to, uint64_t id, int status, const jr_iovec *iov,
                     int iovcnt)
{
    origin *o = jr__map_get(&n->rpc_origins, to);
    uintptr_t at = o ? (uintptr_t)jr__map_get(&o->ids, id) : 0;
    if (!at) return; /* forgotten already, or not a request of it */
    slot *s = slot_of(o, at - 1);
    if (s->state != SLOT_RUNNING) return;
    size_t len = iov_len(iov, iovcnt);
    s->state = SLOT_GONE;
    if (len > JR__RPC_KEEP) return;
    uint8_t *ans = s->inl;
    if (len > INLINE) {
        ans = s->heap = jr__malloc(n->alloc, len);
        if (!ans) return;
    }
    size_t off = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].len) memcpy(ans + off, iov[i].base, iov[i].len);
        off += iov[i].len;
    }
    s->len = (uint32_t)len;
    s->status = status;
    s->state = SLOT_ANSWERED;
}

void jr__rpc_recent_expire(jr_node *n)
{
    for (size_t i = 0; i < n->rpc_origins.cap; i++) {
        origin *o = n->rpc_origins.slots[i].val;
        if (!n->rpc_origins.slots[i].key || !o->cap) continue;
        while (o->first != o->next &&
               jr__deadline(slot_of(o, o->first)->at, JR__RPC_KEEP_NS) <= n->now)
            forget_oldest(n, o);
        if (o->first == o->next) origin_shrink(n, o);
    }
}

int jr__rpc_unsure(const jr_node *n)
{
    return n->rpc_unsure;
}

int jr__rpc_life_due(const jr_node *n, const jr__peer *p, uint64_t *mine, uint64_t *theirs)
{
    *mine = n->now < n->rpc_wary_until ? n->life : 0;
    *theirs = p->life && n->now < jr__deadline(p->life_at, JR__RPC_KEEP_NS) ? p->life : 0;
    return *mine || *theirs;
}

void jr__rpc_on_life(jr_node *n, jr__peer *p, uint64_t sender_life)
{
    if (!sender_life) return;
    p->life = sender_life;
    p->life_at = n->now;
}

size_t jr__rpc_recent(const jr_node *n, jr__id from, size_t *cap)
{
    const origin *o = jr__map_get(&n->rpc_origins, from);
    if (cap) *cap = o ? o->cap : 0;
    return o ? (size_t)(o->next - o->first) : 0;
}

int jr__rpc_respond(jr_node *n, jr__id to, uint64_t id, int status, const jr_iovec *iov, int iovcnt)
{
    remember(n, to, id, status, iov, iovcnt);
    int rc = put(n, to, 0, id, status, iov, iovcnt);
    if (rc)
        jr__node_log(n, JR_LOG_WARN, "response %llu to %s lost: %s", (unsigned long long)id,
                     peer_name(n, to), jr_strerror(rc));
    return rc;
}

void jr__rpc_on_response(jr_node *n, jr__id from, const jr__rpc_view *v)
{
    call *c = jr__map_get(&n->rpc_calls, v->id);
    if (!c || c->peer != from) return; /* late, or not ours */
    jr__map_del(&n->rpc_calls, c->id);
    jr__node_timer_cancel(n, &c->timer);
    jr__rpc_cb cb = c->cb;
    void *arg = c->arg;
    jr__free(n->alloc, c);
    cb(n, arg, v->status > 0 ? JR_ECORRUPT : v->status, 1, v->payload, v->len);
}

void jr__rpc_on_request(jr_node *n, jr__id from, const jr__rpc_view *v, int for_me)
{
    int fresh;
    jr__rpc_admit(n, from, v->id, &fresh);
    if (!fresh) return; /* a duplicate (answered again if it was), or too old to tell */
    if (n->upper_tab && n->upper_tab->request) {
        n->rpc_unsure = n->now < n->rpc_wary_until && !for_me;
        n->upper_tab->request(n->upper, from, v->id, v->kind, v->payload, v->len);
        n->rpc_unsure = 0;
        return;
    }
    static const char why[] = "no layer on this server takes requests";
    jr_iovec iov = {why, sizeof why - 1};
    jr__rpc_respond(n, from, v->id, JR_ENOTSUP, &iov, 1);
}

void jr__rpc_init(jr_node *n)
{
    jr__map_init(&n->rpc_calls, n->alloc);
    jr__map_init(&n->rpc_origins, n->alloc);
}

void jr__rpc_seed(jr_node *n)
{
    /* A random start: a late answer to a call of this server's previous life must not be taken
     * for the answer to a new call with the same id. */
    n->rpc_next = jr__rand_next(&n->rand) >> 2;
    do n->life = jr__rand_next(&n->rand);
    while (!n->life);
}

/* Takes every outstanding call out of the table, running each callback with JR_ECLOSED if
 * fail is set. */
static void drop_calls(jr_node *n, int fail)
{
    /* Collect first: callbacks may touch the table. */
    for (;;) {
        call *c = NULL;
        for (size_t i = 0; i < n->rpc_calls.cap && !c; i++)
            if (n->rpc_calls.slots[i].key) c = n->rpc_calls.slots[i].val;
        if (!c) break;
        jr__map_del(&n->rpc_calls, c->id);
        jr__node_timer_cancel(n, &c->timer);
        jr__rpc_cb cb = c->cb;
        void *arg = c->arg;
        jr__free(n->alloc, c);
        if (fail) cb(n, arg, JR_ECLOSED, 0, NULL, 0);
    }
    jr__map_free(&n->rpc_calls);
}

void jr__rpc_close(jr_node *n)
{
    drop_calls(n, 1);
}

void jr__rpc_free(jr_node *n)
{
    drop_calls(n, 0);
    for (size_t i = 0; i < n->rpc_origins.cap; i++)
        if (n->rpc_origins.slots[i].key) origin_free(n, n->rpc_origins.slots[i].val);
    jr__map_free(&n->rpc_origins);
}
