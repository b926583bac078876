/*
 * api_consumer — the public consumer API: create, update and delete travel to the meta leader
 * as meta ops (meta_replica.c places and proposes them; the origin learns the outcome, and an
 * ephemeral consumer's name, from the applied entry).
 *
 * Info, fetch and acks go to the consumer's leader (JR__RPC_CONSUMER, routed like a stream's
 * requests: api_stream.c jr__req_route); an ack token is JetStream's ack subject, so it names
 * stream, consumer and sequences and works on any server.
 *
 * A config is checked here first with the stream-independent rules (a malformed config never
 * leaves the node), then by the meta leader against the stream.
 */
#include <stdio.h>
#include <string.h>

#include "js/codec.h"
#include "js/js.h"
#include "util/abi.h"
#include "util/alloc.h"
#include "util/deadline.h"

/* A full-size copy of the caller's config (fields it did not know keep their defaults). */
static int copy_config(const jr_consumer_config *in, jr_consumer_config *out, char *msg, size_t len)
{
    jr_consumer_config_init(out);
    if (!in || jr__abi_read(out, sizeof *out, in) != 0) {
        snprintf(msg, len, "size: %zu is too small", in ? jr__abi_size(in) : (size_t)0);
        return JR_EINVAL;
    }
    return 0;
}

static int stream_name_ok(const char *s)
{
    jr_stream_config c;
    jr_stream_config_init(&c);
    c.name = s;
    return jr__stream_config_validate(&c, NULL, 0) == 0;
}

/* A consumer admin request (create/update with action, or delete) to the meta leader. */
static int consumer_request(jr_node *n, uint8_t what, uint8_t action, const char *stream,
                            const jr_consumer_config *cfg_in, const char *name, jr__req_cb cb,
                            void *arg)
{
    int rc = jr__js_entry(n, stream && (cfg_in || name) && (cb.consumer || cb.admin));
    if (rc) return rc;
    jr__node_enter(n);
    jr__js *js = jr__js_of(n);
    jr__req *r = jr__req_new(js, what);
    if (!r) {
        rc = jr__node_err(n, JR_ENOMEM, "out of memory");
        goto out;
    }
    jr__req_start(r, js->timeout_ns);
    r->cb = cb;
    r->arg = arg;
    r->kind = JR__RPC_META;
    snprintf(r->stream, sizeof r->stream, "%s", stream);
    if (!stream_name_ok(stream)) {
        jr__req_finish(r, JR_EINVAL, "stream name: invalid");
        goto out;
    }
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.origin = js->name;
    op.stream = stream;
    jr_consumer_config cfg;
    if (what == JR__REQ_CONSUMER_PAUSE) {
        op.type = JR__META_CONSUMER_ADD;
        op.action = JR__META_CONSUMER_PAUSE;
        op.consumer_config = cfg_in; /* name and pause_until_ns (jr_consumer_pause built it) */
        snprintf(r->consumer, sizeof r->consumer, "%s", name);
    } else if (what == JR__REQ_CONSUMER_DELETE) {
        op.type = JR__META_CONSUMER_DELETE;
        op.consumer = name;
        jr_consumer_config_init(&cfg);
        cfg.name = cfg.durable_name = name;
        jr__cerr err;
        if (jr__consumer_config_validate(&cfg, NULL, &err) != 0) {
            jr__req_finish(r, JR_EINVAL, "%s", err.msg);
            goto out;
        }
        snprintf(r->consumer, sizeof r->consumer, "%s", name);
    } else {
        char msg[JR__JS_MSG_MAX];
        if (copy_config(cfg_in, &cfg, msg, sizeof msg) != 0) {
            jr__req_finish(r, JR_EINVAL, "%s", msg);
            goto out;
        }
        jr__cerr err;
        if (jr__consumer_config_validate(&cfg, NULL, &err) != 0) {
            jr__req_finish(r, JR_EINVAL, "%s", err.msg);
            goto out;
        }
        if (action == JR__META_CONSUMER_UPDATE && !(cfg.name || cfg.durable_name)) {
            jr__req_finish(r, JR_ENOTFOUND, "consumer does not exist");
            goto out;
        }
        op.type = JR__META_CONSUMER_ADD;
        op.consumer_config = &cfg;
        op.action = action;
        const char *nm = cfg.name ? cfg.name : cfg.durable_name;
        snprintf(r->consumer, sizeof r->consumer, "%s", nm ? nm : "");
    }
    int erc = jr__mnode_file(js, r, &op);
    if (erc != 0) {
        jr__req_finish(r, erc, "cannot encode the request: %s", jr_strerror(erc));
        goto out;
    }
    jr__mnode_send(r);
out:
    jr__node_leave(n);
    return rc;
}

int jr_consumer_add(jr_node *n, const char *stream, const jr_consumer_config *cfg,
                    jr_consumer_cb cb, void *arg)
{
    jr__req_cb c = {.consumer = cb};
    return consumer_request(n, JR__REQ_CONSUMER_ADD, JR__META_CONSUMER_EITHER, stream, cfg, NULL, c,
                            arg);
}

int jr_consumer_create(jr_node *n, const char *stream, const jr_consumer_config *cfg,
                       jr_consumer_cb cb, void *arg)
{
    jr__req_cb c = {.consumer = cb};
    return consumer_request(n, JR__REQ_CONSUMER_ADD, JR__META_CONSUMER_CREATE, stream, cfg, NULL, c,
                            arg);
}

int jr_consumer_update(jr_node *n, const char *stream, const jr_consumer_config *cfg,
                       jr_consumer_cb cb, void *arg)
{
    jr__req_cb c = {.consumer = cb};
    return consumer_request(n, JR__REQ_CONSUMER_ADD, JR__META_CONSUMER_UPDATE, stream, cfg, NULL, c,
                            arg);
}

int jr_consumer_pause(jr_node *n, const char *stream, const char *name, uint64_t pause_until_ns,
                      jr_stream_cb cb, void *arg)
{
    if (!name) return JR_EINVAL;
    jr_consumer_config cfg;
    jr_consumer_config_init(&cfg);
    cfg.name = cfg.durable_name = name;
    cfg.pause_until_ns = pause_until_ns;
    jr__cerr err;
    if (jr__consumer_config_validate(&cfg, NULL, &err) != 0)
        return n ? jr__node_err(n, JR_EINVAL, "%s", err.msg) : JR_EINVAL;
    jr__req_cb c = {.admin = cb};
    return consumer_request(n, JR__REQ_CONSUMER_PAUSE, JR__META_CONSUMER_PAUSE, stream, &cfg, name,
                            c, arg);
}

int jr_consumer_delete(jr_node *n, const char *stream, const char *name, jr_stream_cb cb, void *arg)
{
    jr__req_cb c = {.admin = cb};
    return consumer_request(n, JR__REQ_CONSUMER_DELETE, 0, stream, NULL, name, c, arg);
}

/* Requests at the consumer's leader ----------------------------------------------------------*/

/* Starts a request of kind JR__RPC_CONSUMER to the leader of consumer `consumer` of `stream`:
 * its payload gets the sub-kind and the consumer's group. Returns the record; NULL with *rc set
 * (nothing started) or with the request already completed (unknown stream or consumer). */
static jr__req *consumer_call(jr_node *n, uint8_t what, uint8_t sub, const char *stream,
                              const char *consumer, uint64_t timeout_ns, jr__req_cb cb, void *arg,
                              int *rc)
{
    jr__js *js = jr__js_of(n);
    jr__req *r = jr__req_new(js, what);
    if (!r) {
        *rc = jr__node_err(n, JR_ENOMEM, "out of memory");
        return NULL;
    }
    *rc = 0;
    jr__req_start(r, timeout_ns ? timeout_ns : js->timeout_ns);
    r->cb = cb;
    r->arg = arg;
    r->kind = JR__RPC_CONSUMER;
    r->resend = what == JR__REQ_CONSUMER_INFO;
    snprintf(r->stream, sizeof r->stream, "%s", stream);
    snprintf(r->consumer, sizeof r->consumer, "%s", consumer);
    /* The group is looked up when the request is routed (jr__consumer_resolve): this server's
     * meta state may not have applied the consumer's creation yet. */
    r->group = 0;
    r->resolve_until = jr__deadline(jr__node_now(n), js->election_ns);
    jr__buf_u8(&r->payload, sub);
    jr__buf_u64(&r->payload, 0);
    return r;
}

int jr__consumer_resolve(jr__req *r)
{
    jr__js *js = r->js;
    if (r->group) return 1;
    const jr__meta_stream *s = jr__meta_stream_find(&js->st, r->stream);
    const jr__meta_consumer *c = s ? jr__meta_consumer_find(s, r->consumer) : NULL;
    if (c) {
        r->group = c->group;
        jr__put_u64(r->payload.data + 1, c->group);
        return 1;
    }
    if (jr__node_now(js->n) < r->resolve_until) return 0; /* its meta state may lag */
    if (!s)
        jr__req_finish(r, JR_ENOSTREAM, "stream not found");
    else
        jr__req_finish(r, JR_ENOTFOUND, "consumer not found");
    return -1;
}

static void send_or_fail(jr__req *r)
{
    if (r->payload.err)
        jr__req_finish(r, r->payload.err, "out of memory");
    else
        jr__req_route(r);
}

int jr_consumer_info_get(jr_node *n, const char *stream, const char *name, jr_consumer_info_cb cb,
                         void *arg)
{
    int rc = jr__js_entry(n, cb && stream && name);
    if (rc) return rc;
    jr__node_enter(n);
    jr__req_cb c = {.cinfo = cb};
    jr__req *r =
        consumer_call(n, JR__REQ_CONSUMER_INFO, JR__CSUB_INFO, stream, name, 0, c, arg, &rc);
    if (r) send_or_fail(r);
    jr__node_leave(n);
    return rc;
}

void jr_fetch_opts_init_size(jr_fetch_opts *o, size_t size)
{
    jr_fetch_opts d;
    memset(&d, 0, sizeof d);
    d.batch = 1;
    jr__abi_init(o, size, &d, sizeof d);
}

/* Starts a fetch (flags: JR__FETCH_*). */
static int fetch_start(jr_node *n, const char *stream, const char *consumer,
                       const jr_fetch_opts *opts_in, uint8_t flags, jr_fetch_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb && stream && consumer);
    if (rc) return rc;
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    if (opts_in && jr__abi_read(&o, sizeof o, opts_in) != 0) return JR_EINVAL;
    if (o.batch == 0) o.batch = 1;
    if (o.batch < 0 || o.max_bytes < 0 || o.expires_ns < 0)
        return jr__node_err(n, JR_EINVAL,
                            "fetch: batch, max_bytes and expires_ns must not be "
                            "negative");
    if (o.no_wait) flags |= JR__FETCH_NO_WAIT;
    jr__js *js = jr__js_of(n);
    uint64_t expires = o.expires_ns ? (uint64_t)o.expires_ns : js->timeout_ns;
    if (o.idle_heartbeat_ns < 0 || (uint64_t)o.idle_heartbeat_ns > expires / 2)
        return jr__node_err(n, JR_EINVAL, "fetch: heartbeat value too large");
    size_t glen = o.group ? strlen(o.group) : 0, idlen = o.id ? strlen(o.id) : 0;
    if (glen > JR__GROUP_NAME_MAX || idlen > JR__PIN_ID_MAX || o.min_pending < 0 ||
        o.min_ack_pending < 0 || o.priority < 0 || o.priority > 255)
        return jr__node_err(n, JR_EINVAL, "fetch: invalid priority group fields");
    jr__node_enter(n);
    jr__req_cb c = {.fetch = cb};
    /* the leader answers by the expiry; the request waits a little longer for that answer */
    jr__req *r = consumer_call(n, JR__REQ_FETCH, JR__CSUB_FETCH, stream, consumer,
                               expires + 2 * js->election_ns, c, arg, &rc);
    if (r) {
        jr__buf_varint(&r->payload, (uint64_t)o.batch);
        jr__buf_varint(&r->payload, (uint64_t)o.max_bytes);
        jr__buf_varint(&r->payload, expires);
        jr__buf_u8(&r->payload, flags);
        jr__buf_varint(&r->payload, (uint64_t)o.idle_heartbeat_ns);
        jr__buf_bytes(&r->payload, o.group ? o.group : "", glen);
        jr__buf_varint(&r->payload, (uint64_t)o.min_pending);
        jr__buf_varint(&r->payload, (uint64_t)o.min_ack_pending);
        jr__buf_bytes(&r->payload, o.id ? o.id : "", idlen);
        jr__buf_u8(&r->payload, (uint8_t)o.priority);
        snprintf(r->fetch_group, sizeof r->fetch_group, "%s", o.group ? o.group : "");
        snprintf(r->fetch_id, sizeof r->fetch_id, "%s", o.id ? o.id : "");
        r->fetch_hb = (uint64_t)o.idle_heartbeat_ns;
        r->fetch_until = jr__deadline(jr__node_now(n), expires);
        send_or_fail(r);
    }
    jr__node_leave(n);
    return rc;
}

int jr_consumer_fetch(jr_node *n, const char *stream, const char *consumer,
                      const jr_fetch_opts *opts, jr_fetch_cb cb, void *arg)
{
    return fetch_start(n, stream, consumer, opts, 0, cb, arg);
}

/* Push subscriptions --------------------------------------------------------------------------
 * A subscription keeps one fetch with JR__FETCH_PUSH outstanding at the consumer's leader,
 * which answers it as soon as it holds messages (or at the idle heartbeat); each answer's
 * messages go to the callback and the next fetch starts at once. It is freed once closed and
 * its fetch came back. */
struct jr_subscription {
    jr_node *n;
    const jr_allocator *alloc;
    jr_push_cb cb;
    void *arg;
    int64_t batch, heartbeat_ns;
    uint8_t closed; /* the user closed it: no callback any more */
    uint8_t busy;   /* its fetch is outstanding */
    uint8_t got;    /* the current fetch handed out a message */
    char stream[JR_STREAM_NAME_MAX + 1];
    char consumer[JR_CONSUMER_NAME_MAX + 1];
};

static void sub_fetch(jr_subscription *s);

static void sub_end(jr_subscription *s, int status)
{
    if (!s->closed) s->cb(s->arg, status, NULL);
    jr__free(s->alloc, s);
}

static void sub_on_fetch(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                         const jr_fetch_end *end)
{
    jr_subscription *s = arg;
    (void)msg;
    if (m) {
        s->got = 1;
        if (!s->closed) s->cb(s->arg, 0, m);
        return;
    }
    s->busy = 0;
    if (s->closed) {
        sub_end(s, 0);
        return;
    }
    if (status != 0) {
        sub_end(s, status);
        return;
    }
    if (end->code == 409 && strcmp(end->text, "Consumer Deleted") == 0) {
        sub_end(s, JR_ENOTFOUND);
        return;
    }
    if (end->code == 409 && strcmp(end->text, "Consumer is pull based") == 0) {
        sub_end(s, JR_EINVAL);
        return;
    }
    if (end->code == 408 && !s->got && s->heartbeat_ns) s->cb(s->arg, 0, NULL); /* idle */
    sub_fetch(s);
}

/* Starts s's next fetch: 0, or the error of jr_consumer_fetch. */
static int sub_start(jr_subscription *s)
{
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = s->batch;
    o.expires_ns = s->heartbeat_ns ? s->heartbeat_ns : 5 * 1000000000ll;
    s->got = 0;
    int rc = fetch_start(s->n, s->stream, s->consumer, &o, JR__FETCH_PUSH, sub_on_fetch, s);
    if (rc == 0) s->busy = 1;
    return rc;
}

static void sub_fetch(jr_subscription *s)
{
    int rc = sub_start(s);
    if (rc != 0) sub_end(s, rc);
}

int jr_consumer_subscribe(jr_node *n, const char *stream, const char *consumer, jr_push_cb cb,
                          void *arg, jr_subscription **out)
{
    int rc = jr__js_entry(n, stream && consumer && cb && out);
    if (rc) return rc;
    if (strlen(stream) > JR_STREAM_NAME_MAX || strlen(consumer) > JR_CONSUMER_NAME_MAX)
        return jr__node_err(n, JR_EINVAL, "subscribe: stream or consumer name too long");
    jr__js *js = jr__js_of(n);
    jr_subscription *s = jr__calloc(js->alloc, 1, sizeof *s);
    if (!s) return jr__node_err(n, JR_ENOMEM, "out of memory");
    s->n = n;
    s->alloc = js->alloc;
    s->cb = cb;
    s->arg = arg;
    snprintf(s->stream, sizeof s->stream, "%s", stream);
    snprintf(s->consumer, sizeof s->consumer, "%s", consumer);
    s->batch = 256;
    const jr__meta_stream *ms = jr__meta_stream_find(&js->st, stream);
    const jr__meta_consumer *mc = ms ? jr__meta_consumer_find(ms, consumer) : NULL;
    if (mc) {
        const jr_consumer_config *c = &mc->cfg->c;
        if (c->max_ack_pending > 0 && c->max_ack_pending < s->batch) s->batch = c->max_ack_pending;
        s->heartbeat_ns = c->idle_heartbeat_ns;
    }
    rc = sub_start(s);
    if (rc != 0) {
        jr__free(js->alloc, s);
        return rc;
    }
    *out = s;
    return 0;
}

void jr_subscription_close(jr_subscription *s)
{
    if (!s || s->closed) return;
    s->closed = 1;
    if (!s->busy) sub_end(s, 0);
}

/* Reads a decimal u64 token of s ending at '.' or at end; advances *s past the dot. */
static int token_u64(const char **s, const char *end, uint64_t *out)
{
    const char *p = *s;
    uint64_t v = 0;
    if (p >= end || *p < '0' || *p > '9') return -1;
    for (; p < end && *p != '.'; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    *s = p < end ? p + 1 : p;
    return 0;
}

/* The parts of an ack subject (v1 "$JS.ACK.<stream>.<consumer>.<n>.<sseq>.<dseq>.<ts>.<pending>",
 * or v2 with "<domain>.<account hash>." before the stream and maybe more tokens after). */
typedef struct ack_token {
    char stream[JR_STREAM_NAME_MAX + 1];
    char consumer[JR_CONSUMER_NAME_MAX + 1];
    uint64_t dc, sseq, dseq;
} ack_token;

static int parse_token(const char *t, ack_token *out)
{
    static const char prefix[] = "$JS.ACK.";
    size_t len = strlen(t);
    if (len > 1024 || strncmp(t, prefix, sizeof prefix - 1) != 0) return -1;
    const char *tok[16];
    size_t tl[16], nt = 0;
    const char *p = t + sizeof prefix - 1, *end = t + len;
    while (p <= end && nt < 16) {
        const char *d = memchr(p, '.', (size_t)(end - p));
        if (!d) d = end;
        tok[nt] = p;
        tl[nt++] = (size_t)(d - p);
        p = d + 1;
    }
    if (nt != 7 && nt < 9) return -1;
    size_t b = nt == 7 ? 0 : 2; /* v2: domain and account hash first */
    if (tl[b] == 0 || tl[b] > JR_STREAM_NAME_MAX || tl[b + 1] == 0 ||
        tl[b + 1] > JR_CONSUMER_NAME_MAX)
        return -1;
    memcpy(out->stream, tok[b], tl[b]);
    out->stream[tl[b]] = 0;
    memcpy(out->consumer, tok[b + 1], tl[b + 1]);
    out->consumer[tl[b + 1]] = 0;
    const char *q = tok[b + 2];
    uint64_t ts, pending;
    if (token_u64(&q, end, &out->dc) || token_u64(&q, end, &out->sseq) ||
        token_u64(&q, end, &out->dseq) || token_u64(&q, end, &ts) || token_u64(&q, end, &pending))
        return -1;
    return out->sseq && out->dseq && out->dc ? 0 : -1;
}

int jr_consumer_ack(jr_node *n, const char *token, int kind, int64_t delay_ns, const char *reason,
                    jr_stream_cb cb, void *arg)
{
    int rc = jr__js_entry(n, token != NULL);
    if (rc) return rc;
    ack_token t;
    if (parse_token(token, &t) != 0)
        return jr__node_err(n, JR_EINVAL, "ack token: not an ack subject of a delivery");
    if (kind < JR_ACK_ACK || kind > JR_ACK_TERM || delay_ns < 0)
        return jr__node_err(n, JR_EINVAL, "ack: unknown kind or negative delay");
    jr__node_enter(n);
    if (kind == JR_ACK_TERM && reason && *reason)
        jr__node_log(n, JR_LOG_INFO, "consumer '%s > %s': message %llu terminated: %s", t.stream,
                     t.consumer, (unsigned long long)t.sseq, reason);
    jr__req_cb c = {.admin = cb};
    jr__req *r = consumer_call(n, JR__REQ_ACK, JR__CSUB_ACK, t.stream, t.consumer, 0, c, arg, &rc);
    if (r) {
        jr__buf_u8(&r->payload, (uint8_t)kind);
        jr__buf_u8(&r->payload, cb ? 1 : 0);
        jr__buf_varint(&r->payload, t.sseq);
        jr__buf_varint(&r->payload, t.dseq);
        jr__buf_varint(&r->payload, (uint64_t)delay_ns);
        send_or_fail(r);
    }
    jr__node_leave(n);
    return rc;
}

int jr_consumer_reset(jr_node *n, const char *stream, const char *name, uint64_t seq,
                      jr_stream_cb cb, void *arg)
{
    int rc = jr__js_entry(n, stream && name && cb);
    if (rc) return rc;
    jr__node_enter(n);
    jr__req_cb c = {.admin = cb};
    jr__req *r =
        consumer_call(n, JR__REQ_CONSUMER_RESET, JR__CSUB_RESET, stream, name, 0, c, arg, &rc);
    if (r) {
        jr__buf_varint(&r->payload, seq);
        send_or_fail(r);
    }
    jr__node_leave(n);
    return rc;
}

int jr_consumer_stepdown(jr_node *n, const char *stream, const char *name, const char *peer,
                         jr_stream_cb cb, void *arg)
{
    int rc = jr__js_entry(n, stream && name && cb);
    if (rc) return rc;
    if (peer && strlen(peer) > JR__META_NAME_MAX)
        return jr__node_err(n, JR_EINVAL, "stepdown: peer name too long");
    jr__node_enter(n);
    jr__req_cb c = {.admin = cb};
    jr__req *r = consumer_call(n, JR__REQ_CONSUMER_STEPDOWN, JR__CSUB_STEPDOWN, stream, name, 0, c,
                               arg, &rc);
    if (r) {
        jr__buf_bytes(&r->payload, peer ? peer : "", peer ? strlen(peer) : 0);
        send_or_fail(r);
    }
    jr__node_leave(n);
    return rc;
}

int jr_consumer_advisories(jr_node *n, jr_advisory_cb cb, void *arg)
{
    int rc = jr__js_entry(n, 1);
    if (rc) return rc;
    jr__js *js = jr__js_of(n);
    js->adv_cb = cb;
    js->adv_arg = arg;
    return 0;
}

int jr_consumer_unpin(jr_node *n, const char *stream, const char *name, const char *group,
                      jr_stream_cb cb, void *arg)
{
    int rc = jr__js_entry(n, stream && name && group && cb);
    if (rc) return rc;
    if (strlen(group) > JR__GROUP_NAME_MAX)
        return jr__node_err(n, JR_EINVAL, "unpin: group name too long");
    jr__node_enter(n);
    jr__req_cb c = {.admin = cb};
    jr__req *r =
        consumer_call(n, JR__REQ_CONSUMER_UNPIN, JR__CSUB_UNPIN, stream, name, 0, c, arg, &rc);
    if (r) {
        jr__buf_bytes(&r->payload, group, strlen(group));
        send_or_fail(r);
    }
    jr__node_leave(n);
    return rc;
}

int jr_consumer_ack_next(jr_node *n, const char *token, const jr_fetch_opts *opts, jr_fetch_cb cb,
                         void *arg)
{
    int rc = jr__js_entry(n, token && cb);
    if (rc) return rc;
    ack_token t;
    if (parse_token(token, &t) != 0)
        return jr__node_err(n, JR_EINVAL, "ack token: not an ack subject of a delivery");
    rc = jr_consumer_ack(n, token, JR_ACK_ACK, 0, NULL, NULL, NULL);
    if (rc) return rc;
    return jr_consumer_fetch(n, t.stream, t.consumer, opts, cb, arg);
}

/* Delivery -----------------------------------------------------------------------------------*/

/* Reads a str into a NUL-terminated copy appended to `strings` (offset in *off). */
static int take(jr__rd *rd, jr__buf *strings, size_t *off, size_t *len)
{
    const uint8_t *p = jr__rd_bytes(rd, len, SIZE_MAX);
    if (!p) return -1;
    *off = strings->len;
    jr__buf_put(strings, p, *len);
    jr__buf_u8(strings, 0);
    return strings->err ? -1 : 0;
}

/* The ack subject of a delivery: "$JS.ACK.<stream>.<consumer>" then five numbers (formatted
 * by hand: a fetch of many messages makes one per message). */
#define TOKEN_MAX (16 + JR_STREAM_NAME_MAX + JR_CONSUMER_NAME_MAX + 5 * 21)

static size_t token_prefix(char *t, const char *stream, const char *consumer)
{
    size_t a = strlen(stream), b = strlen(consumer);
    memcpy(t, "$JS.ACK.", 8);
    memcpy(t + 8, stream, a);
    t[8 + a] = '.';
    memcpy(t + 9 + a, consumer, b);
    return 9 + a + b;
}

/* Writes v in decimal at t (no NUL); returns its length. */
static size_t put_u64(char *t, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) t[i] = tmp[n - 1 - i];
    return n;
}

/* After an idle heartbeat: asks again for what the fetch still wants until its expiry (or
 * ends it with 408 once that passed). */
static void fetch_go_on(jr__req *r, const jr_fetch_end *hb)
{
    jr_node *n = r->js->n;
    uint64_t now = jr__node_now(n);
    jr_fetch_end end = {sizeof end, 408, "Request Timeout", hb->pending_msgs, hb->pending_bytes};
    if (now >= r->fetch_until || !hb->pending_msgs || jr__node_closing(n)) {
        r->cb.fetch(r->arg, 0, "", NULL, &end);
        return;
    }
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = (int64_t)hb->pending_msgs;
    o.max_bytes = (int64_t)hb->pending_bytes;
    o.expires_ns = (int64_t)(r->fetch_until - now);
    o.idle_heartbeat_ns = (int64_t)r->fetch_hb;
    o.group = r->fetch_group[0] ? r->fetch_group : NULL;
    o.id = r->fetch_id[0] ? r->fetch_id : NULL;
    if ((uint64_t)o.idle_heartbeat_ns > (uint64_t)o.expires_ns / 2)
        o.idle_heartbeat_ns = o.expires_ns / 2; /* the last stretch: a heartbeat fits still */
    int rc = fetch_start(n, r->stream, r->consumer, &o, 0, r->cb.fetch, r->arg);
    if (rc != 0) r->cb.fetch(r->arg, rc, jr_strerror(rc), NULL, NULL);
}

static void deliver_fetch(jr__req *r)
{
    jr__js *js = r->js;
    jr_fetch_end end;
    memset(&end, 0, sizeof end);
    end.size = sizeof end;
    if (r->status == JR_ELEADERLOST || r->status == JR_ETIMEDOUT) {
        /* the leader was lost, or fell silent: what it handed out is redelivered later */
        end.code = r->status == JR_ELEADERLOST ? 409 : 408;
        end.text = r->status == JR_ELEADERLOST ? "Leadership Change" : "Request Timeout";
        r->cb.fetch(r->arg, 0, "", NULL, &end);
        return;
    }
    if (r->status != 0) {
        r->cb.fetch(r->arg, r->status, r->msg[0] ? r->msg : jr_strerror(r->status), NULL, NULL);
        return;
    }
    jr__rd rd;
    jr__rd_init(&rd, r->result.data, r->result.len);
    jr__buf strings;
    jr__buf_init(&strings, js->alloc);
    uint64_t code = jr__rd_varint(&rd);
    char text[128];
    size_t text_len = 0;
    const uint8_t *tp = jr__rd_bytes(&rd, &text_len, sizeof text - 1);
    int bad = tp == NULL;
    if (text_len) memcpy(text, tp, text_len);
    text[text_len] = 0;
    end.text = text;
    end.pending_msgs = jr__rd_varint(&rd);
    end.pending_bytes = jr__rd_varint(&rd);
    uint64_t n = jr__rd_varint(&rd);
    end.code = (int)(code > 999 ? 999 : code);
    for (uint64_t i = 0; i < n && !bad && !rd.err; i++) {
        size_t so, sl, ho, hl, dof, dl;
        jr__buf_reset(&strings);
        bad = take(&rd, &strings, &so, &sl) || take(&rd, &strings, &ho, &hl) ||
              take(&rd, &strings, &dof, &dl);
        jr_consumer_msg m;
        memset(&m, 0, sizeof m);
        m.size = sizeof m;
        m.stream_seq = jr__rd_varint(&rd);
        m.consumer_seq = jr__rd_varint(&rd);
        uint64_t dc = jr__rd_varint(&rd);
        m.ts = jr__rd_varint(&rd);
        m.pending = jr__rd_varint(&rd);
        size_t po = 0, pl = 0;
        bad = bad || take(&rd, &strings, &po, &pl);
        if (bad || rd.err || dc > UINT32_MAX) break;
        m.delivered = (uint32_t)dc;
        m.stream = r->stream;
        m.consumer = r->consumer;
        m.subject = (const char *)strings.data + so;
        m.hdr = hl ? strings.data + ho : NULL;
        m.hdr_len = hl;
        m.data = strings.data + dof;
        m.len = dl;
        m.pin_id = pl ? (const char *)strings.data + po : NULL;
        char token[TOKEN_MAX];
        size_t k = token_prefix(token, r->stream, r->consumer);
        uint64_t nums[] = {m.delivered, m.stream_seq, m.consumer_seq, m.ts, m.pending};
        for (size_t j = 0; j < 5; j++) {
            token[k++] = '.';
            k += put_u64(token + k, nums[j]);
        }
        token[k] = 0;
        m.ack_token = token;
        r->cb.fetch(r->arg, 0, "", &m, NULL);
    }
    if (bad || rd.err || jr__rd_left(&rd)) {
        jr__buf_free(&strings);
        r->cb.fetch(r->arg, JR_ECORRUPT, "fetch response does not decode", NULL, NULL);
        return;
    }
    jr__buf_free(&strings);
    if (end.code == JR__FETCH_HEARTBEAT || end.code == JR__FETCH_MORE) {
        /* the request goes on (as one of its own) */
        if (end.code == JR__FETCH_HEARTBEAT) r->cb.fetch(r->arg, 0, "", NULL, NULL);
        fetch_go_on(r, &end);
        return;
    }
    r->cb.fetch(r->arg, 0, "", NULL, &end);
}

void jr__consumer_deliver(jr__req *r)
{
    const char *msg = r->msg[0] ? r->msg : (r->status ? jr_strerror(r->status) : "");
    switch (r->what) {
    case JR__REQ_CONSUMER_INFO: {
        if (r->status != 0) {
            r->cb.cinfo(r->arg, r->status, msg, NULL);
            return;
        }
        jr__cinfo_dec d;
        int rc = jr__cinfo_decode(r->result.data, r->result.len, r->js->alloc, &d);
        if (rc == 0)
            r->cb.cinfo(r->arg, 0, "", &d.info);
        else
            r->cb.cinfo(r->arg, rc, "consumer info does not decode", NULL);
        jr__cinfo_dec_free(&d);
        return;
    }
    case JR__REQ_FETCH:
        deliver_fetch(r);
        return;
    default: /* JR__REQ_ACK, _CONSUMER_RESET, _CONSUMER_STEPDOWN, _CONSUMER_UNPIN */
        if (r->cb.admin) r->cb.admin(r->arg, r->status, msg);
        return;
    }
}
