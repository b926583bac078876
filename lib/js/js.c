/*
 * js.c — the stream layer's lifecycle, timers, request records and the hooks the node calls
 * (contract in js.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "js/js.h"
#include "util/alloc.h"
#include "util/deadline.h"
#include "util/checksum.h"
#include "util/container.h"

#define DEFAULT_TIMEOUT_MS 5000u

/* Timers ----------------------------------------------------------------------------------*/

/* The node's heap fires every timer with the node as ctx; a layer timer runs its own fire. */
static void jtimer_fire(void *ctx, jr__timer *t)
{
    jr__js *js = jr__js_of(ctx);
    jr__jtimer *jt = JR__CONTAINER_OF(t, jr__jtimer, t);
    if (js && !js->closing) jt->fire(js, jt);
}

void jr__js_timer_init(jr__jtimer *t, void (*fire)(jr__js *, jr__jtimer *))
{
    jr__timer_init(&t->t, jtimer_fire);
    t->fire = fire;
    t->q = NULL;
    t->qprev = t->qnext = NULL;
    t->qdeadline = 0;
}

static void queue_unlink(jr__jtimer *t)
{
    jr__jqueue *q = t->q;
    if (t->qprev)
        t->qprev->qnext = t->qnext;
    else
        q->head = t->qnext;
    if (t->qnext)
        t->qnext->qprev = t->qprev;
    else
        q->tail = t->qprev;
    t->q = NULL;
    t->qprev = t->qnext = NULL;
}

void jr__js_timer_arm(jr__js *js, jr__jtimer *t, uint64_t deadline)
{
    if (t->q) queue_unlink(t);
    jr__node_timer_arm(js->n, &t->t, deadline);
}

void jr__js_timer_cancel(jr__js *js, jr__jtimer *t)
{
    if (t->q)
        queue_unlink(t);
    else
        jr__node_timer_cancel(js->n, &t->t);
}

int jr__js_timer_armed(const jr__jtimer *t)
{
    return t->q != NULL || jr__timer_armed(&t->t);
}

/* The queue of span: the one holding it, else a free one (or one left empty, taken over). */
static jr__jqueue *queue_for(jr__js *js, uint64_t span)
{
    jr__jqueue *spare = NULL;
    for (size_t i = 0; i < JR__JQUEUES; i++) {
        jr__jqueue *q = &js->queues[i];
        if (q->span == span) return q;
        if (!spare && !q->head) spare = q;
    }
    if (spare) spare->span = span;
    return spare;
}

void jr__js_timer_arm_queued(jr__js *js, jr__jtimer *t, uint64_t deadline, uint64_t span)
{
    if (t->q) queue_unlink(t);
    jr__jqueue *q = span ? queue_for(js, span) : NULL;
    if (!q || (q->tail && q->tail->qdeadline > deadline)) {
        jr__node_timer_arm(js->n, &t->t, deadline);
        return;
    }
    jr__node_timer_cancel(js->n, &t->t);
    t->q = q;
    t->qdeadline = deadline;
    t->qprev = q->tail;
    t->qnext = NULL;
    if (q->tail)
        q->tail->qnext = t;
    else
        q->head = t;
    q->tail = t;
    /* The queue's timer stays where it is while it is armed no later than this deadline (the
     * head's, or one that went since: it then fires early and re-arms at the head). */
    if (!jr__timer_armed(&q->timer.t) || q->timer.t.deadline > deadline)
        jr__node_timer_arm(js->n, &q->timer.t, deadline);
}

/* A queue's heap timer: fires its due timers in order, then stands for the new head. */
static void queue_fire(jr__js *js, jr__jtimer *qt)
{
    jr__jqueue *q = JR__CONTAINER_OF(qt, jr__jqueue, timer);
    uint64_t now = jr__node_now(js->n);
    while (q->head && q->head->qdeadline <= now && !js->closing) {
        jr__jtimer *t = q->head;
        queue_unlink(t);
        t->fire(js, t);
    }
    if (q->head && !jr__timer_armed(&qt->t)) jr__node_timer_arm(js->n, &qt->t, q->head->qdeadline);
}

static void queues_init(jr__js *js)
{
    for (size_t i = 0; i < JR__JQUEUES; i++) {
        memset(&js->queues[i], 0, sizeof js->queues[i]);
        jr__js_timer_init(&js->queues[i].timer, queue_fire);
    }
}

/* Requests --------------------------------------------------------------------------------*/

static void req_fire(void *arg, int status);
static void req_deadline(jr__js *js, jr__jtimer *t);

jr__req *jr__req_new(jr__js *js, uint8_t what)
{
    jr__req *r = js->free_reqs;
    if (r) {
        js->free_reqs = r->next;
    } else {
        r = jr__calloc(js->alloc, 1, sizeof *r);
        if (!r) return NULL;
        jr__buf_init(&r->payload, js->alloc);
        jr__buf_init(&r->result, js->alloc);
    }
    jr__op *op = jr__op_reserve(js->n, req_fire, r);
    if (!op) {
        r->next = js->free_reqs; /* a free record, as it was (or as a new one would be) */
        js->free_reqs = r;
        return NULL;
    }
    jr__buf payload = r->payload, result = r->result;
    memset(r, 0, offsetof(jr__req, stream)); /* the rest are strings: emptied */
    r->stream[0] = 0;
    r->fetch_group[0] = 0;
    r->fetch_id[0] = 0;
    r->consumer[0] = 0;
    r->msg[0] = 0;
    r->payload = payload;
    r->result = result;
    jr__buf_reset(&r->payload);
    jr__buf_reset(&r->result);
    r->js = js;
    r->serial = ++js->next_serial;
    r->what = what;
    r->op = op;
    jr__js_timer_init(&r->timer, req_deadline);
    return r;
}

static void req_unlink(jr__req *r)
{
    jr__js *js = r->js;
    if (r->prev)
        r->prev->next = r->next;
    else if (js->reqs == r)
        js->reqs = r->next;
    if (r->next) r->next->prev = r->prev;
    r->next = r->prev = NULL;
}

static void req_recycle(jr__req *r)
{
    jr__js *js = r->js;
    /* Large buffers are not kept around. */
    if (r->payload.cap > (64u << 10)) jr__buf_free(&r->payload);
    if (r->result.cap > (64u << 10)) jr__buf_free(&r->result);
    r->next = js->free_reqs;
    js->free_reqs = r;
}

void jr__req_start(jr__req *r, uint64_t timeout_ns)
{
    jr__js *js = r->js;
    r->deadline = jr__deadline(jr__node_now(js->n), timeout_ns);
    r->span = timeout_ns;
    r->prev = NULL;
    r->next = js->reqs;
    if (js->reqs) js->reqs->prev = r;
    js->reqs = r;
}

void jr__req_discard(jr__req *r)
{
    jr__op_put(r->js->n, r->op);
    req_recycle(r);
}

void jr__req_finish(jr__req *r, int status, const char *fmt, ...)
{
    if (r->done) return;
    jr__js *js = r->js;
    r->done = 1;
    r->status = status;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->msg, sizeof r->msg, fmt, ap);
        va_end(ap);
    }
    if (r->rpc_id) {
        jr__rpc_cancel(js->n, r->rpc_id);
        r->rpc_id = 0;
    }
    jr__js_timer_cancel(js, &r->timer);
    if (r->meta_id) jr__map_del(&js->meta_reqs, r->meta_id);
    req_unlink(r);
    jr__op_complete(js->n, r->op, status, 0);
}

static void req_fire(void *arg, int status)
{
    jr__req *r = arg;
    (void)status;
    jr__req_deliver(r);
    req_recycle(r);
}

static void req_deadline(jr__js *js, jr__jtimer *t)
{
    (void)js;
    jr__req *r = JR__CONTAINER_OF(t, jr__req, timer);
    jr__req_timer(r);
}

/* Waiters ---------------------------------------------------------------------------------*/

jr__waiter *jr__waiter_get(jr__js *js)
{
    jr__waiter *w = js->free_waiters;
    if (w)
        js->free_waiters = w->next;
    else
        w = jr__malloc(js->alloc, sizeof *w);
    if (w) memset(w, 0, sizeof *w);
    return w;
}

void jr__waiter_put(jr__js *js, jr__waiter *w)
{
    jr__free(js->alloc, w->subject);
    w->subject = NULL;
    w->next = js->free_waiters;
    js->free_waiters = w;
}

void jr__route_reply(jr__js *js, const jr__route *rt, int status, const void *payload, size_t len)
{
    if (rt->local) {
        if (rt->local->serial == rt->rpc_id && !rt->local->done) {
            rt->local->unanswered = 0;
            jr__req_response(rt->local, status, payload, len);
        }
        return;
    }
    if (!rt->to) return; /* internal op: nobody waits */
    jr_iovec iov = {payload, len};
    jr__rpc_respond(js->n, rt->to, rt->rpc_id, status, &iov, len ? 1 : 0);
}

uint64_t jr__js_wall(const jr__js *js)
{
    return js->facts.wall ? js->facts.wall(js->facts.wall_ctx) : jr__node_now(js->n);
}

const char *jr__js_peer_name(const jr__js *js, jr__id id)
{
    jr__peer *p = jr__peer_find(js->n, id);
    return p ? jr__peer_get_name(p) : NULL;
}

/* Receive ---------------------------------------------------------------------------------*/

/* 1 for a request that changes something where it is executed: a publish, any admin request of
 * the meta group, a purge, a message delete, a leadership transfer. Reads, pings, catch-up
 * chunks and readiness questions change nothing; a request that does not decode is refused
 * where it is executed. */
static int changes_state(uint8_t kind, const uint8_t *p, size_t len)
{
    switch (kind) {
    case JR__RPC_PUBLISH:
    case JR__RPC_META:
        return 1;
    case JR__RPC_STREAM_ADMIN:
        return len > 0 &&
               (p[0] == JR__ADM_PURGE || p[0] == JR__ADM_MSG_DELETE || p[0] == JR__ADM_STEPDOWN);
    case JR__RPC_CONSUMER:
        return len > 0 && (p[0] == JR__CSUB_FETCH || p[0] == JR__CSUB_ACK ||
                           p[0] == JR__CSUB_RESET || p[0] == JR__CSUB_STEPDOWN);
    default:
        return 0;
    }
}

void jr__js_request(jr__js *js, jr__id from, uint64_t id, uint8_t kind, const uint8_t *p,
                    size_t len)
{
    jr_node *n = js->n;
    if (js->closing) {
        jr__rpc_respond(n, from, id, JR_ECLOSED, NULL, 0);
        return;
    }
    jr__route rt = {NULL, from, id};
    if (jr__rpc_unsure(n) && changes_state(kind, p, len)) {
        /* it may be a duplicate of a request this server executed before it restarted (rpc.h
         * "After a restart"): not executed, and answered as a lost leader's would be */
        static const char why[] = "the server restarted less than a second ago: what it did "
                                  "with the request before is unknown";
        jr__node_count(n, JR__COUNT_WARY_WRITE);
        jr__route_reply(js, &rt, JR_ELEADERLOST, why, sizeof why - 1);
        return;
    }
    switch (kind) {
    case JR__RPC_META:
        jr__mnode_handle(js, &rt, p, len);
        break;
    case JR__RPC_CLUSTER_INFO:
        jr__mnode_cluster_info(js, &rt);
        break;
    case JR__RPC_PUBLISH:
    case JR__RPC_STREAM_INFO:
    case JR__RPC_STREAM_ADMIN:
        jr__stream_exec(js, kind, &rt, p, len);
        break;
    case JR__RPC_CATCHUP:
        jr__catchup_serve(js, &rt, p, len);
        break;
    case JR__RPC_CONSUMER:
        jr__consumer_exec(js, &rt, p, len);
        break;
    case JR__RPC_LISTS:
        jr__lists_serve(js, &rt, p, len);
        break;
    case JR__RPC_JOIN: { /* a server we know already asks again (meta_members.c) */
        jr__peer *fp = jr__peer_find(n, from);
        if (fp) jr__mm_join_request(js, jr__peer_get_name(fp), id, p, len);
        break;
    }
    case JR__RPC_REMOVED:
        jr__mm_removed_request(js, from, id, p, len);
        break;
    default: /* a kind of a later release (rolling upgrade): refused on its own */
        jr__node_count(n, JR__COUNT_UNKNOWN_TYPE);
        jr__route_reply(js, &rt, JR_ENOTSUP, NULL, 0);
        break;
    }
}

void jr__js_before_flush(jr__js *js)
{
    jr_node *n = js->n;
    if (js->closing || jr__node_closing(n)) return;
    /* A meta snapshot, a catch-up chunk or a busy stream's batches may have grown them to
     * megabytes: given back once a second, so a busy node rebuilds them rarely. While streams
     * build batches in scratch, it keeps what the largest batch needs (they would grow it again
     * within the second); once none did for a second, it gives that back too. */
    if (jr__node_now(n) >= js->scratch_at) {
        jr__buf_release(&js->scratch, js->batched ? JR__BATCH_SCRATCH_KEEP : JR__SCRATCH_KEEP);
        js->batched = 0;
        jr__buf_release(&js->scratch2, JR__SCRATCH_KEEP);
        js->scratch_at = jr__deadline(jr__node_now(n), 1000000000ull);
    }
    jr__clead_flush_all(js);
    jr__srep_flush_all(js);
}

/* Open / close ----------------------------------------------------------------------------*/

static char *dup_or(const jr_allocator *a, const char *s, const char *dflt, int *err)
{
    const char *v = s && *s ? s : dflt;
    if (!v) return NULL;
    char *d = jr__strdup(a, v);
    if (!d) *err = JR_ENOMEM;
    return d;
}

static void js_free(jr__js *js)
{
    const jr_allocator *a = js->alloc;
    for (size_t i = 0; i < js->ntags; i++) jr__free(a, js->tags[i]);
    jr__free(a, js->tags);
    jr__free(a, js->cluster);
    jr__free(a, js->unique_tag);
    jr__free(a, js->store_dir);
    jr__map_free(&js->reps);
    jr__map_free(&js->creps);
    jr__map_free(&js->cons_by_stream);
    jr__map_free(&js->hints);
    jr__map_free(&js->meta_reqs);
    while (js->free_waiters) {
        jr__waiter *w = js->free_waiters;
        js->free_waiters = w->next;
        jr__free(a, w);
    }
    while (js->free_reqs) {
        jr__req *r = js->free_reqs;
        js->free_reqs = r->next;
        jr__buf_free(&r->payload);
        jr__buf_free(&r->result);
        jr__free(a, r);
    }
    jr__buf_free(&js->scratch);
    jr__buf_free(&js->scratch2);
    jr__free(a, js);
}

/* The hooks the node core calls (services.h "The seam"), with the layer's jr__js as upper. */
static void hook_before_flush(void *upper)
{
    jr__js_before_flush(upper);
}

static void hook_role_changed(void *upper, uint64_t group)
{
    jr__js *js = upper;
    jr__crep *c = jr__crep_find(js, group);
    if (c)
        jr__clead_role_changed(c);
    else
        jr__srep_role_changed(js, group);
}

static void hook_request(void *upper, jr__id from, uint64_t id, uint8_t kind, const uint8_t *p,
                         size_t len)
{
    jr__js_request(upper, from, id, kind, p, len);
}

static void hook_close(void *upper, int flush)
{
    jr__js_close(upper, flush);
}

static void hook_join(void *upper, const char *from, uint64_t id, const uint8_t *p, size_t len)
{
    jr__mm_join_request(upper, from, id, p, len);
}

/* A stream's or consumer's replica whose assignment in the meta state no longer names this
 * server: its group's leader may have removed it by a change whose APPEND it never took (a
 * removed member never learns of its removal from the group itself, dissertation §4.2.2).
 * This server applies the meta log in order and marks a removed server only from that
 * removal's apply on (meta_members.c), so a drop committed before the removal is in js->st
 * when the node asks (docs/internals.md "Which recoveries are automatic"). */
static int hook_unassigned(void *upper, uint64_t group)
{
    jr__js *js = upper;
    const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, group);
    if (s) return !jr__meta_stream_has_peer(s, js->name);
    const jr__meta_consumer *c = jr__meta_consumer_by_group(&js->st, group);
    if (c) return !jr__meta_consumer_has_peer(c, js->name);
    return 0;
}

static const jr__upper js_upper = {
    .before_flush = hook_before_flush,
    .role_changed = hook_role_changed,
    .request = hook_request,
    .close = hook_close,
    .join = hook_join,
    .unassigned = hook_unassigned,
};

jr__js *jr__js_of(const jr_node *n)
{
    return jr__node_upper(n, &js_upper);
}

/* Election timeouts a replica that has known no leader since it opened waits beyond
 * leaderless_ns before its requests end at once (jr__js_leaderless). */
#define LEADERLESS_STARTUP_ELECTIONS 4

int jr__js_leaderless(const jr__js *js, jr_group *g)
{
    if (!js->leaderless_ns || !g || jr__group_closed(g)) return 0;
    int since_start;
    uint64_t ns = jr__raft_leaderless_ns(jr__group_consensus(g), jr__node_now(js->n), &since_start);
    uint64_t grace = js->leaderless_ns;
    if (since_start) grace += LEADERLESS_STARTUP_ELECTIONS * js->election_ns;
    return ns && ns >= grace;
}

static int attach(jr_node *n, const jr_node_config *cfg)
{
    return cfg->streams ? jr__js_open(n, cfg) : 0;
}

int jr_node_open(const jr_node_config *cfg, jr_node **out)
{
    return jr__node_open(cfg, attach, out);
}

int jr__js_open(jr_node *n, const jr_node_config *cfg)
{
    jr__node_facts facts;
    jr__node_facts_get(n, &facts);
    const jr_allocator *a = facts.alloc;
    jr__js *js = jr__calloc(a, 1, sizeof *js);
    if (!js) return JR_ENOMEM;
    js->n = n;
    js->facts = facts;
    js->alloc = facts.alloc;
    js->name = facts.name;
    js->self = facts.self;
    js->election_ns = facts.election_ns;
    js->heartbeat_ns = facts.heartbeat_ns;
    queues_init(js);
    jr__map_init(&js->reps, a);
    jr__map_init(&js->creps, a);
    jr__map_init(&js->cons_by_stream, a);
    jr__map_init(&js->hints, a);
    jr__map_init(&js->meta_reqs, a);
    jr__buf_init(&js->scratch, a);
    jr__buf_init(&js->scratch2, a);
    jr__meta_state_init(&js->st, a, JR__FIRST_STREAM_GROUP_ID);
    uint64_t seed = js->facts.seed ^ 0x6a73 /* "js" */;
    jr__rand_seed(&js->rand, jr__splitmix64(&seed));
    /* Publish tokens start at a random point: two servers, or two lives of one, do not give
     * the same token (a resent publish is told from another publish of its msg_id by it,
     * stream/op.h). */
    js->next_token = jr__rand_next(&js->rand);
    js->timeout_ns =
        (uint64_t)(cfg->request_timeout_ms ? cfg->request_timeout_ms : DEFAULT_TIMEOUT_MS) *
        1000000u;
    js->leaderless_ns = (uint64_t)cfg->leaderless_fail_ms * 1000000u;
    js->snapshot_entries = 4096;
    js->catchup_queue_max = cfg->catchup_queue_bytes;
    js->catchup_log_max = cfg->catchup_log_bytes;
    js->keep_bytes = cfg->keep_bytes;
    js->capacity = cfg->max_store_bytes;
    js->join = cfg->join != 0;
    js->max_assets = cfg->max_assets;
    int err = 0;
    js->cluster = dup_or(a, cfg->cluster, "jetraft", &err);
    js->store_dir = dup_or(a, cfg->store_dir, cfg->wal_dir, &err);
    js->unique_tag = dup_or(a, cfg->unique_tag, NULL, &err);
    if (!err && cfg->ntags) {
        if (!cfg->tags) {
            err = jr__node_err(n, JR_EINVAL, "tags: NULL with ntags = %zu", cfg->ntags);
        } else if (cfg->ntags > JR__META_MAX_TAGS) {
            err = jr__node_err(n, JR_EINVAL, "ntags: %zu tags, at most %d", cfg->ntags,
                               JR__META_MAX_TAGS);
        } else {
            js->tags = jr__calloc(a, cfg->ntags, sizeof *js->tags);
            if (!js->tags) err = JR_ENOMEM;
            for (size_t i = 0; !err && i < cfg->ntags; i++) {
                if (!cfg->tags[i] || !jr__meta_name_ok(cfg->tags[i], strlen(cfg->tags[i]))) {
                    err = jr__node_err(n, JR_EINVAL,
                                       "tags[%zu]: not a valid tag (1..255 bytes, no whitespace "
                                       "or control characters)",
                                       i);
                    break;
                }
                js->tags[i] = jr__strdup(a, cfg->tags[i]);
                if (!js->tags[i])
                    err = JR_ENOMEM;
                else
                    js->ntags++;
            }
        }
    }
    if (!err && !jr__meta_name_ok(js->cluster, strlen(js->cluster)))
        err = jr__node_err(n, JR_EINVAL,
                           "cluster: not a valid name with streams on (1..255 bytes, no "
                           "whitespace or control characters)");
    if (!err && !jr__meta_name_ok(js->name, strlen(js->name)))
        err = jr__node_err(n, JR_EINVAL,
                           "name: not a valid server name with streams on (1..255 bytes, no "
                           "whitespace or control characters)");
    if (err) {
        jr__meta_state_free(&js->st);
        js_free(js);
        return err;
    }
    jr__node_set_upper(n, &js_upper, js);
    err = jr__mnode_open(js);
    if (err) {
        jr__js_close(js, 0);
        return err;
    }
    return 0;
}

void jr__js_close(jr__js *js, int flush)
{
    jr_node *n = js->n;
    js->closing = 1;
    jr__rpc_close(n); /* this layer's calls: their callbacks use it */
    while (js->reqs) jr__req_finish(js->reqs, JR_ECLOSED, "node is closing");
    jr__crep_close_all(js);
    jr__srep_close_all(js, flush);
    jr__mnode_close(js);
    jr__node_drain(n); /* every callback queued above runs before the memory goes */
    for (size_t i = 0; i < JR__JQUEUES; i++) jr__js_timer_cancel(js, &js->queues[i].timer);
    jr__clead_advisories_free(js);
    jr__meta_state_free(&js->st);
    jr__node_set_upper(n, NULL, NULL);
    js_free(js);
}
