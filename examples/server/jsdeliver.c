/*
 * jsdeliver.c — a consumer's messages to its clients and their acks back: pull requests
 * (CONSUMER.MSG.NEXT), push consumers, and the acks clients publish on the deliveries' $JS.ACK
 * reply subjects (see jsapi.h, jsapi_impl.h).
 *
 * A pull request is one jr_consumer_fetch to the consumer's leader, whose deliveries go to the
 * request's reply subject with their ack subject as reply, and whose end becomes JetStream's
 * status message there (404 No Messages, 408 Request Timeout with the pending counts, 409 ...;
 * nothing after a filled batch), as nats-server sends them; idle heartbeats become "100 Idle
 * Heartbeat". A request without an expiry waits in slices (fetches of PULL_SLICE_NS, asked again
 * while its reply subject still has a subscriber), and one that meets a leaderless
 * consumer asks again every PULL_RETRY_MS until it expires, rather than answering an error a
 * client would take for the end of its fetch. A request whose reply subject has no subscriber
 * (here or at a peer) is dropped, as nats-server drops it. The library cannot withdraw a fetch its
 * leader holds: a delivery that finds no subscriber for its reply any more (the client left) is
 * negatively acknowledged at once, so it is redelivered without waiting for its ack wait.
 *
 * A push consumer (deliver_subject) is served by the server that created it, to the
 * subscribers of its deliver subject anywhere in the cluster (route.h forwards its deliveries).
 */
#include "jsapi_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "jsjson.h"
#include "sublist.h"

#define PULL_SLICE_NS 10000000000ll /* a request without expiry: asked for 10 s at a time */
#define PULL_RETRY_MS 250           /* a request that met a leaderless consumer asks again */

/* ---- push consumers -------------------------------------------------------------------------
 * A push consumer created through this server is served from here: while a client of this
 * server or of a peer subscribes to its deliver subject, a library subscription
 * (jr_consumer_subscribe) hands its messages over and they are published to the deliver subject
 * with their ack subjects as reply (and "100 Idle Heartbeat" when it has an idle_heartbeat); while
 * nobody subscribes the subscription is closed, so nothing is handed out. A timer looks for the
 * subscriber every PUSH_CHECK_MS; a message handed over after the subscriber left is negatively
 * acknowledged with a delay of PUSH_NAK_DELAY_NS (one that reaches the closed subscription is
 * redelivered after its ack wait). The consumer's deletion ends it. A push consumer outlives the
 * node's close and reopen after a WAL failure (server.h): the close ends its subscription, and
 * once the node is back the timer subscribes again while its deliver subject has a subscriber;
 * the server's shutdown ends it. */

#define PUSH_CHECK_MS 250
#define PUSH_NAK_DELAY_NS 1000000000ll

typedef struct push {
    server *s;
    uv_timer_t timer;
    jr_subscription *sub; /* NULL while nobody here subscribes (or it ended) */
    int gone;             /* the consumer was deleted: freed once the timer closed */
    uint64_t last_dseq, last_sseq;
    struct push *next;
    char stream[JR_STREAM_NAME_MAX + 1];
    char consumer[JR_CONSUMER_NAME_MAX + 1];
    char deliver[];
} push;

static push *pushes; /* this process's push consumers (one server per process) */

static void on_push_closed(uv_handle_t *h)
{
    free(h->data);
}

static void push_free(push *p)
{
    for (push **pp = &pushes; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    if (p->sub) jr_subscription_close(p->sub);
    p->sub = NULL;
    uv_close((uv_handle_t *)&p->timer, on_push_closed);
}

static void on_push(void *arg, int status, const jr_consumer_msg *m)
{
    push *p = arg;
    server *s = p->s;
    if (m) {
        p->last_dseq = m->consumer_seq;
        p->last_sseq = m->stream_seq;
        size_t got = clients_deliver_as(s, NULL, p->deliver, m->subject, m->ack_token, m->hdr,
                                        m->hdr_len, m->data, m->len);
        /* The subscriber left since the last check: hand it back for later (the delay keeps it
         * from coming straight back before the timer closes the subscription). */
        if (!got && s->node)
            jr_consumer_ack(s->node, m->ack_token, JR_ACK_NAK, PUSH_NAK_DELAY_NS, NULL, NULL, NULL);
        return;
    }
    if (status == 0) { /* an idle heartbeat */
        char hdr[160];
        int n = snprintf(hdr, sizeof hdr,
                         "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: %" PRIu64
                         "\r\nNats-Last-Stream: %" PRIu64 "\r\n\r\n",
                         p->last_dseq, p->last_sseq);
        clients_deliver(s, NULL, p->deliver, NULL, hdr, (size_t)n, NULL, 0);
        return;
    }
    /* The subscription ended (its last call): deleted or a pull consumer end it; the node's
     * close (a shutdown, or a reopen after a WAL failure: the timer ends it at shutdown and
     * subscribes again on the reopened node) and any other cause are retried by the timer. */
    p->sub = NULL;
    if (status == JR_ENOTFOUND || status == JR_EINVAL) p->gone = 1;
}

static int push_interest(push *p)
{
    return clients_interest(p->s, p->deliver);
}

static void on_push_check(uv_timer_t *t)
{
    push *p = t->data;
    server *s = p->s;
    if (s->closing || p->gone) {
        push_free(p);
        return;
    }
    /* The node is closed or failing and about to be: wait for its reopen. */
    if (!s->node || s->wal_failed) return;
    int want = push_interest(p);
    if (want && !p->sub) {
        if (jr_consumer_subscribe(s->node, p->stream, p->consumer, on_push, p, &p->sub) != 0)
            p->sub = NULL;
    } else if (!want && p->sub) {
        jr_subscription_close(p->sub);
        p->sub = NULL;
    }
    server_kick(s); /* a call made outside the node's callbacks and the client reads */
}

void jsdeliver_push(server *s, const char *stream, const char *consumer, const char *deliver)
{
    for (push *p = pushes; p; p = p->next)
        if (!p->gone && !strcmp(p->stream, stream) && !strcmp(p->consumer, consumer)) {
            if (!strcmp(p->deliver, deliver)) return;
            p->gone = 1; /* its deliver subject changed: a new one replaces it */
            if (p->sub) jr_subscription_close(p->sub);
            p->sub = NULL;
            break;
        }
    size_t dl = strlen(deliver);
    push *p = calloc(1, sizeof *p + dl + 1);
    if (!p) return;
    p->s = s;
    memcpy(p->deliver, deliver, dl);
    snprintf(p->stream, sizeof p->stream, "%s", stream);
    snprintf(p->consumer, sizeof p->consumer, "%s", consumer);
    uv_timer_init(s->loop, &p->timer);
    p->timer.data = p;
    uv_timer_start(&p->timer, on_push_check, PUSH_CHECK_MS, PUSH_CHECK_MS);
    p->next = pushes;
    pushes = p;
    on_push_check(&p->timer);
}

/* ---- pull requests -------------------------------------------------------------------------- */

typedef struct pull {
    server *s;
    uv_timer_t timer;  /* the retry after a leaderless answer; its close frees the request */
    int timer_on;      /* the timer was initialised */
    js_pull q;         /* what is still wanted: batch and max_bytes count down */
    uint64_t deadline; /* uv_hrtime at expiry; 0: no expiry */
    uint64_t last_dseq, last_sseq;
    uint64_t last_out; /* uv_hrtime of the last delivery or heartbeat sent */
    int nr;
    char stream[JR_STREAM_NAME_MAX + 1];
    char consumer[JR_CONSUMER_NAME_MAX + 1];
    char reply[];
} pull;

static void pull_issue(pull *p);

static void on_pull_closed(uv_handle_t *h)
{
    free(h->data);
}

static void pull_free(pull *p)
{
    if (p->timer_on)
        uv_close((uv_handle_t *)&p->timer, on_pull_closed);
    else
        free(p);
}

/* 1 while a client of this server or of a peer subscribes to the request's reply subject. */
static int interest(pull *p)
{
    return clients_interest(p->s, p->reply);
}

/* Sends "NATS/1.0 <status>" with optional header lines (each ending in CRLF) and no body. */
static void pull_status(pull *p, const char *status, const char *lines)
{
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr, "NATS/1.0 %s\r\n%s\r\n", status, lines ? lines : "");
    if (n > 0 && (size_t)n < sizeof hdr)
        clients_deliver(p->s, NULL, p->reply, NULL, hdr, (size_t)n, NULL, 0);
}

/* A status with what the request still wanted (408, and 409 Message Size Exceeds MaxBytes). */
static void pull_status_pending(pull *p, const char *status)
{
    char lines[128];
    snprintf(lines, sizeof lines,
             "Nats-Pending-Messages: %" PRId64 "\r\nNats-Pending-Bytes: %" PRId64 "\r\n",
             p->q.batch, p->q.max_bytes);
    pull_status(p, status, lines);
}

static void pull_deliver(pull *p, const jr_consumer_msg *m)
{
    server *s = p->s;
    size_t got = clients_deliver_as(s, NULL, p->reply, m->subject, m->ack_token, m->hdr, m->hdr_len,
                                    m->data, m->len);
    p->last_out = uv_hrtime();
    p->last_dseq = m->consumer_seq;
    p->last_sseq = m->stream_seq;
    if (p->q.batch > 0) p->q.batch--;
    if (p->q.max_bytes > 0) {
        int64_t sz = (int64_t)(strlen(m->subject) + m->hdr_len + m->len);
        p->q.max_bytes = sz >= p->q.max_bytes ? 0 : p->q.max_bytes - sz;
    }
    /* Nobody takes it any more: hand it back at once rather than after its ack wait. */
    if (!got) jr_consumer_ack(s->node, m->ack_token, JR_ACK_NAK, 0, NULL, NULL, NULL);
}

static void on_retry(uv_timer_t *t)
{
    pull *p = t->data;
    if (p->s->closing || !interest(p)) {
        pull_free(p);
        return;
    }
    server *s = p->s;
    pull_issue(p);
    server_kick(s); /* a call made outside the node's callbacks and the client reads */
}

/* Time left before the request expires (ns; INT64_MAX without expiry, 0 once expired). */
static int64_t pull_left(const pull *p)
{
    if (!p->deadline) return INT64_MAX;
    uint64_t now = uv_hrtime();
    return now >= p->deadline ? 0 : (int64_t)(p->deadline - now);
}

static void pull_retry_later(pull *p)
{
    int64_t left = pull_left(p);
    if (left <= (int64_t)PULL_RETRY_MS * 1000000 || p->q.no_wait) {
        pull_status_pending(p, "408 Request Timeout");
        pull_free(p);
        return;
    }
    if (!p->timer_on) {
        uv_timer_init(p->s->loop, &p->timer);
        p->timer.data = p;
        p->timer_on = 1;
    }
    uv_timer_start(&p->timer, on_retry, PULL_RETRY_MS, 0);
}

static void on_pull(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                    const jr_fetch_end *end)
{
    pull *p = arg;
    server *s = p->s;
    if (m) {
        pull_deliver(p, m);
        return;
    }
    if (status == 0 && !end) { /* an idle heartbeat */
        /* The library asks again after each one, with the heartbeat shortened to fit the time
         * left: the client gets one per interval, as nats-server sends them. */
        uint64_t now = uv_hrtime();
        if (now - p->last_out < (uint64_t)p->q.heartbeat_ns / 10 * 9) return;
        p->last_out = now;
        char lines[128];
        snprintf(lines, sizeof lines,
                 "Nats-Last-Consumer: %" PRIu64 "\r\nNats-Last-Stream: %" PRIu64 "\r\n",
                 p->last_dseq, p->last_sseq);
        pull_status(p, "100 Idle Heartbeat", lines);
        return;
    }
    if (s->closing || status == JR_ECLOSED) {
        pull_free(p);
        return;
    }
    if (status) {
        if (status == JR_ENOTFOUND || status == JR_ENOSTREAM) {
            /* nats-server has no responder for an unknown consumer's MSG.NEXT */
            if (p->nr) jsapi_no_responders(s, p->reply);
            pull_free(p);
        } else if (status == JR_EINVAL) {
            char st[300];
            snprintf(st, sizeof st, "400 Bad Request - %.200s", msg ? msg : "invalid request");
            pull_status(p, st, NULL);
            pull_free(p);
        } else if (!interest(p)) {
            pull_free(p);
        } else {
            pull_retry_later(p); /* leaderless, no quorum, timed out: ask again */
        }
        return;
    }
    char st[200];
    snprintf(st, sizeof st, "%d %s", end->code, end->text ? end->text : "");
    switch (end->code) {
    case 0: /* the batch is filled (or its max_bytes taken exactly) */
        break;
    case 408:
        /* a slice of a request without expiry, or a leader that fell silent before the
         * expiry: ask again while the client still listens */
        if (!p->q.no_wait && p->q.batch > 0 && pull_left(p) > 20000000 && interest(p)) {
            pull_issue(p);
            return;
        }
        if (interest(p)) pull_status_pending(p, st);
        break;
    case 409:
        if (!strcmp(end->text ? end->text : "", "Message Size Exceeds MaxBytes"))
            pull_status_pending(p, st);
        else
            pull_status(p, st, NULL);
        break;
    default:
        pull_status(p, st, NULL);
        break;
    }
    pull_free(p);
}

static void pull_issue(pull *p)
{
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = p->q.batch;
    o.max_bytes = p->q.max_bytes;
    o.no_wait = p->q.no_wait;
    int64_t left = pull_left(p);
    if (left == 0) {
        pull_status_pending(p, "408 Request Timeout");
        pull_free(p);
        return;
    }
    /* no_wait without expiry: the library's default, it ends at once anyway */
    o.expires_ns = p->q.no_wait && !p->deadline ? 0 : left < PULL_SLICE_NS ? left : PULL_SLICE_NS;
    o.idle_heartbeat_ns = p->q.heartbeat_ns;
    if (o.expires_ns && o.idle_heartbeat_ns > o.expires_ns / 2)
        o.idle_heartbeat_ns = o.expires_ns / 2 >= 1000000 ? o.expires_ns / 2 : 0;
    o.group = p->q.group[0] ? p->q.group : NULL;
    o.id = p->q.id[0] ? p->q.id : NULL;
    o.min_pending = p->q.min_pending;
    o.min_ack_pending = p->q.min_ack_pending;
    o.priority = p->q.priority;
    int rc = jr_consumer_fetch(p->s->node, p->stream, p->consumer, &o, on_pull, p);
    if (rc) on_pull(p, rc, jr_strerror(rc), NULL, NULL);
}

void jsdeliver_pull(server *s, const char *stream, const char *consumer, const char *reply,
                    const void *data, size_t len, int nr)
{
    if (!reply || !*reply || !s->node) return; /* a request without a reply is dropped */
    js_pull q;
    char err[300];
    size_t rl = strlen(reply);
    pull *p = calloc(1, sizeof *p + rl + 1);
    if (!p) return;
    p->s = s;
    p->nr = nr;
    memcpy(p->reply, reply, rl);
    snprintf(p->stream, sizeof p->stream, "%s", stream);
    snprintf(p->consumer, sizeof p->consumer, "%s", consumer);
    if (js_pull_parse(data, len, &q, err, sizeof err)) {
        char st[400];
        snprintf(st, sizeof st, "400 Bad Request - %s", err);
        pull_status(p, st, NULL);
        free(p);
        return;
    }
    p->q = q;
    if (!interest(p)) { /* nobody would get its messages: dropped, as nats-server drops it */
        free(p);
        return;
    }
    p->last_out = uv_hrtime();
    if (q.expires_ns) p->deadline = p->last_out + (uint64_t)q.expires_ns;
    pull_issue(p);
}

/* ---- acks ----------------------------------------------------------------------------------- */

typedef struct ackreq {
    server *s;
    char reply[];
} ackreq;

/* AckSync: the empty reply once the ack is replicated (or the message was not pending any more:
 * acknowledged before, or terminated). */
static void on_acked(void *arg, int status, const char *msg)
{
    ackreq *a = arg;
    (void)msg;
    if ((status == 0 || status == JR_ENOTFOUND) && !a->s->closing)
        clients_deliver(a->s, NULL, a->reply, NULL, NULL, 0, NULL, 0);
    free(a);
}

void jsapi_ack(server *s, const char *subject, const char *reply, const void *data, size_t len)
{
    if (!s->node) return;
    js_ack a;
    js_ack_parse(data, len, &a);
    char stream[JR_STREAM_NAME_MAX + 1], consumer[JR_CONSUMER_NAME_MAX + 1];
    if (js_ack_subject_parse(subject, stream, sizeof stream, consumer, sizeof consumer)) return;
    if (a.kind < 0) { /* ignored, but an AckSync is still answered */
        if (reply && *reply) clients_deliver(s, NULL, reply, NULL, NULL, 0, NULL, 0);
        return;
    }
    char reason[256] = "";
    if (a.kind == JR_ACK_TERM && a.rest_len)
        snprintf(reason, sizeof reason, "%.*s", (int)a.rest_len, a.rest);
    int sync = reply && *reply && !a.next;
    ackreq *ar = NULL;
    if (sync) {
        size_t rl = strlen(reply);
        ar = malloc(sizeof *ar + rl + 1);
        if (ar) {
            ar->s = s;
            memcpy(ar->reply, reply, rl + 1);
        }
    }
    int rc = jr_consumer_ack(s->node, subject, a.kind, a.delay_ns, reason[0] ? reason : NULL,
                             ar ? on_acked : NULL, ar);
    if (rc) free(ar);
    if (a.next && reply && *reply)
        jsdeliver_pull(s, stream, consumer, reply, a.rest, a.rest_len, 0);
}
