/*
 * rpc — node-to-node requests and responses (contract in rpc.h).
 */
#include <string.h>

#include "js/rpc.h"
#include "util/alloc.h"

typedef struct call {
    jr__jtimer timer; /* first: the timer callback finds the call */
    jr__js *js;
    uint64_t id;
    jr__id peer;
    jr__rpc_cb cb;
    void *arg;
} call;

static size_t iov_len(const jr_iovec *iov, int iovcnt)
{
    size_t n = 0;
    for (int i = 0; i < iovcnt; i++) n += iov[i].len;
    return n;
}

/* Appends one request (is_req) or response to peer `to`'s frame. */
static int put(jr__js *js, jr__id to, int is_req, uint64_t id, int kind_or_status,
               const jr_iovec *iov, int iovcnt)
{
    jr_node *n = js->n;
    jr__peer *p = jr__peer_find(n, to);
    if (!p || p->id == n->self) return JR_ENOTFOUND;
    size_t len = iov_len(iov, iovcnt);
    size_t need = is_req ? jr__frame_request_len(id, len)
                         : jr__frame_response_len(id, kind_or_status, len);
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
    jr__node_want_tick(n);
    return 0;
}

static void on_timeout(jr__js *js, jr__jtimer *t)
{
    call *c = (call *)t;
    jr__map_del(&js->calls, c->id);
    jr__rpc_cb cb = c->cb;
    void *arg = c->arg;
    jr__free(js->n->alloc, c);
    cb(js, arg, JR__RPC_NO_ANSWER, NULL, 0);
}

int jr__rpc_call(jr__js *js, jr__id peer, uint8_t kind, const jr_iovec *iov, int iovcnt,
                 uint64_t timeout_ns, jr__rpc_cb cb, void *arg, uint64_t *id)
{
    jr_node *n = js->n;
    call *c = jr__calloc(n->alloc, 1, sizeof *c);
    if (!c) return JR_ENOMEM;
    c->js = js;
    c->id = ++js->next_rpc;
    c->peer = peer;
    c->cb = cb;
    c->arg = arg;
    jr__js_timer_init(&c->timer, on_timeout);
    int rc = jr__map_put(&js->calls, c->id, c);
    if (rc == 0) {
        rc = put(js, peer, 1, c->id, kind, iov, iovcnt);
        if (rc) jr__map_del(&js->calls, c->id);
    }
    if (rc) {
        jr__free(n->alloc, c);
        return rc;
    }
    jr__js_timer_arm(js, &c->timer, n->now + timeout_ns);
    if (id) *id = c->id;
    return 0;
}

void jr__rpc_cancel(jr__js *js, uint64_t id)
{
    if (!id) return;
    call *c = jr__map_del(&js->calls, id);
    if (!c) return;
    jr__js_timer_cancel(js, &c->timer);
    jr__free(js->n->alloc, c);
}

int jr__rpc_respond(jr__js *js, jr__id to, uint64_t id, int status, const jr_iovec *iov,
                    int iovcnt)
{
    int rc = put(js, to, 0, id, status, iov, iovcnt);
    if (rc)
        jr__node_log(js->n, JR_LOG_WARN, "response %llu to %s lost: %s", (unsigned long long)id,
                     jr__js_peer_name(js, to) ? jr__js_peer_name(js, to) : "?", jr_strerror(rc));
    return rc;
}

void jr__rpc_on_response(jr__js *js, jr__id from, const jr__rpc_view *v)
{
    call *c = jr__map_get(&js->calls, v->id);
    if (!c || c->peer != from) return; /* late, or not ours */
    jr__map_del(&js->calls, c->id);
    jr__js_timer_cancel(js, &c->timer);
    jr__rpc_cb cb = c->cb;
    void *arg = c->arg;
    jr__free(js->n->alloc, c);
    cb(js, arg, v->status > 0 ? JR_ECORRUPT : v->status, v->payload, v->len);
}

void jr__rpc_close(jr__js *js)
{
    /* Collect first: callbacks may touch the table. */
    for (;;) {
        call *c = NULL;
        for (size_t i = 0; i < js->calls.cap && !c; i++)
            if (js->calls.slots[i].key) c = js->calls.slots[i].val;
        if (!c) break;
        jr__map_del(&js->calls, c->id);
        jr__js_timer_cancel(js, &c->timer);
        jr__rpc_cb cb = c->cb;
        void *arg = c->arg;
        jr__free(js->n->alloc, c);
        cb(js, arg, JR_ECLOSED, NULL, 0);
    }
    jr__map_free(&js->calls);
}
