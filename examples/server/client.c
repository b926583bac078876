/*
 * client.c — NATS client connections over libuv TCP (see client.h).
 */
#include "client.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "decimal.h"
#include "jsapi.h"
#include "proto.h"
#include "route.h"

#define MAX_SUBS_PER_CLIENT 65536
/* A client's output buffer stays allocated after a flush, so that a busy connection reuses it
 * each loop turn instead of growing a new one from nothing (a publisher with a window of a
 * thousand acks has tens to hundreds of KiB of them per turn). One larger than OUT_KEEP is
 * released by the first flush that writes at most OUT_QUIET bytes: the connection went quiet
 * (at the latest, the server's next PING to it is such a flush). */
#define OUT_KEEP (64u << 10)
#define OUT_QUIET (4u << 10)
#define AUTH_TIMEOUT_MS 2000 /* nats-server's default auth_timeout */

/* Client authentication, with users in the configuration: a connection must send CONNECT
 * first, with a user and password; its password is checked against the user's hash on the
 * loop's thread pool (crypto_pwhash_str_verify takes tens of milliseconds and tens of MiB by
 * design), and the connection is not read meanwhile. */
enum { AUTH_OPEN = 0, AUTH_WAIT_CONNECT, AUTH_CHECKING };

typedef struct auth_job {
    uv_work_t req;
    client *c; /* NULL once the client closed while its password was being checked */
    char hash[crypto_pwhash_STRBYTES];
    char *pass;
    size_t pass_len;
    int system;
    int ok;
    const char *refuse; /* why the connection is refused whatever the check says, or NULL */
    char user[128];
} auth_job;

struct client {
    uv_tcp_t tcp;
    server *s;
    uint64_t id;
    np_parser parser;
    int verbose, pedantic, headers, no_responders, echo;
    sub *subs;
    size_t nsubs;
    char *out; /* output not yet written; the buffer is kept between loop turns (OUT_KEEP) */
    size_t out_len, out_cap;
    size_t inflight; /* bytes in uv_write requests not completed */
    int closing;
    int flushing;         /* on the flush list */
    int paused;           /* not read while too many requests are in flight */
    int pings_out;        /* server PINGs not answered */
    uint64_t accepted_ms; /* loop time at accept */
    client *prev, *next;
    client *flush_next;
    char ip[64];
    int auth;      /* AUTH_*: AUTH_OPEN once authenticated, or without users */
    int system;    /* a system user's connection (the cluster operations) */
    auth_job *job; /* the password check under way */
    uint8_t *held; /* bytes read after CONNECT, fed once the password checked out */
    size_t held_len;
};

struct clients {
    server *s;
    uv_tcp_t listener;
    uv_check_t flush;
    uv_prepare_t late; /* writes what timers and other callbacks queued since the check */
    uv_timer_t ping;
    uv_timer_t auth_timer; /* with users: closes connections that did not send CONNECT in time */
    client *head;
    client *flush_head;
    int kick; /* a read handed work to the node: tick it once, before the output leaves */
    size_t count;
    uint64_t next_id;
};

typedef struct wreq {
    uv_write_t req;
    client *c;
    size_t len;
    char buf[];
} wreq;

static void client_close(client *c, const char *err);

static void on_write(uv_write_t *req, int status)
{
    wreq *w = (wreq *)req;
    w->c->inflight -= w->len;
    free(w);
    (void)status;
}

/* Writes the client's buffered output: at once as far as the socket takes it (uv_try_write,
 * which writes nothing while earlier writes are queued, so the order holds), the rest through
 * one uv_write of a copy. The buffer itself is kept for the next turn unless it grew past
 * OUT_KEEP and this flush was a quiet one (OUT_QUIET). A write error drops the output (the read
 * side sees the broken connection and closes it), as does a failed allocation for the rest. */
static void flush_one(client *c)
{
    if (!c->out_len || c->closing > 1) return;
    size_t len = c->out_len, done = 0;
    c->out_len = 0;
    c->s->stats.client_bytes_out += len;
    uv_buf_t b = uv_buf_init(c->out, (unsigned)len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n >= 0)
        done = (size_t)n;
    else if (n != UV_EAGAIN)
        done = len;
    if (done < len) {
        wreq *w = malloc(sizeof *w + (len - done));
        if (w) {
            w->c = c;
            w->len = len - done;
            memcpy(w->buf, c->out + done, w->len);
            b = uv_buf_init(w->buf, (unsigned)w->len);
            if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write) == 0)
                c->inflight += w->len;
            else
                free(w);
        }
    }
    if (c->out_cap > OUT_KEEP && len <= OUT_QUIET) {
        free(c->out);
        c->out = NULL;
        c->out_cap = 0;
    }
}

static void flush_all(clients *cs)
{
    while (cs->flush_head) {
        client *c = cs->flush_head;
        cs->flush_head = c->flush_next;
        c->flushing = 0;
        flush_one(c);
    }
}

static void on_flush(uv_check_t *h)
{
    clients *cs = h->data;
    /* Every read of this loop turn is in: the publishes they made are proposed (or forwarded)
     * as one batch, and what completes at once is answered with this flush. */
    if (cs->kick) {
        cs->kick = 0;
        server_kick(cs->s);
    }
    flush_all(cs);
}

/* Output queued after the check ran (a node tick from its timer, a retry or push timer, a write
 * or route callback) is written before the loop waits for I/O again: waiting first would hold it
 * until the next socket event or timer, which on an otherwise quiet server is the node's next
 * heartbeat. */
static void on_late(uv_prepare_t *h)
{
    flush_all(h->data);
}

/* Makes room for n more bytes of output at c->out + c->out_len (the caller writes them and adds
 * n to out_len) and puts the client on the flush list; past the pending bound the client is a
 * slow consumer and is dropped. */
static int out_reserve(client *c, size_t n)
{
    if (c->closing) return -1;
    if (c->out_len + c->inflight + n > c->s->cfg.client_max_pending) {
        c->s->stats.slow_consumers++;
        fprintf(stderr, "[%s] client %" PRIu64 " (%s): slow consumer, disconnected\n",
                c->s->cfg.name, c->id, c->ip);
        client_close(c, NULL);
        return -1;
    }
    if (c->out_len + n > c->out_cap) {
        size_t nc = c->out_cap ? c->out_cap : 4096;
        while (nc < c->out_len + n) nc *= 2;
        char *nb = realloc(c->out, nc);
        if (!nb) {
            client_close(c, NULL);
            return -1;
        }
        c->s->stats.client_out_allocs++;
        c->out = nb;
        c->out_cap = nc;
    }
    if (!c->flushing) {
        clients *cs = c->s->clients;
        c->flushing = 1;
        c->flush_next = cs->flush_head;
        cs->flush_head = c;
    }
    return 0;
}

/* Appends output (see out_reserve). */
static int out_append(client *c, const void *p, size_t n)
{
    if (out_reserve(c, n)) return -1;
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
    return 0;
}

static void out_str(client *c, const char *s)
{
    out_append(c, s, strlen(s));
}

static void send_err(client *c, const char *err)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf, "-ERR '%s'\r\n", err);
    out_append(c, buf, (size_t)n);
}

static void unlink_flush(client *c)
{
    clients *cs = c->s->clients;
    if (!c->flushing) return;
    for (client **pp = &cs->flush_head; *pp; pp = &(*pp)->flush_next)
        if (*pp == c) {
            *pp = c->flush_next;
            break;
        }
    c->flushing = 0;
}

static void free_sub(sub *s)
{
    free(s->subject);
    free(s->queue);
    free(s->sid);
    free(s);
}

static void on_closed(uv_handle_t *h)
{
    client *c = h->data;
    np_free(&c->parser);
    free(c->out);
    free(c->held);
    free(c);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    client *c = req->data;
    free(req);
    (void)status;
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

/* Closes a connection: its subscriptions go at once; with err, "-ERR 'err'" is written first
 * (the socket is shut down after the output drains), otherwise it is closed at once. */
static void client_close(client *c, const char *err)
{
    if (c->closing) return;
    clients *cs = c->s->clients;
    if (c->job) {
        c->job->c = NULL;
        c->job = NULL;
    }
    for (sub *s = c->subs, *next; s; s = next) {
        next = s->c_next;
        route_sub_removed(c->s, s);
        sublist_remove(c->s->subs, s);
        free_sub(s);
    }
    c->subs = NULL;
    c->nsubs = 0;
    if (c->prev)
        c->prev->next = c->next;
    else
        cs->head = c->next;
    if (c->next) c->next->prev = c->prev;
    cs->count--;
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (err) {
        send_err(c, err);
        unlink_flush(c);
        flush_one(c);
        c->closing = 1;
        uv_shutdown_t *req = malloc(sizeof *req);
        if (req) {
            req->data = c;
            if (uv_shutdown(req, (uv_stream_t *)&c->tcp, on_shutdown) == 0) return;
            free(req);
        }
    }
    c->closing = 2;
    unlink_flush(c);
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

size_t clients_count(const server *s)
{
    return s->clients ? s->clients->count : 0;
}

#define MAX_MSG_LINE 1200 /* a delivery's control line, CRLF included, is shorter */

static size_t digits(size_t v)
{
    size_t k = 1;
    while (v >= 10) {
        v /= 10;
        k++;
    }
    return k;
}

static char *put_str(char *out, const char *s, size_t n)
{
    memcpy(out, s, n);
    return out + n;
}

/* Writes "MSG subject sid [reply] len" or "HMSG subject sid [reply] hdr_len total", the
 * payload and CRLF, reserved at once and formatted in place (this is every PubAck's path). */
static int deliver_one(sub *sb, const char *subject, const char *reply, const void *hdr,
                       size_t hdr_len, const void *data, size_t len)
{
    client *c = sb->c;
    if (hdr_len && !c->headers) {
        hdr_len = 0; /* a client without headers gets the data only, as nats-server does */
        hdr = NULL;
    }
    size_t subl = strlen(subject), sidl = strlen(sb->sid), rl = reply ? strlen(reply) : 0;
    size_t line = (hdr_len ? 5 : 4) + subl + 1 + sidl + 1 + (reply ? rl + 1 : 0) +
                  (hdr_len ? digits(hdr_len) + 1 : 0) + digits(hdr_len + len) + 2;
    if (line >= MAX_MSG_LINE) return -1;
    if (out_reserve(c, line + hdr_len + len + 2)) return -1;
    char *o = c->out + c->out_len;
    o = hdr_len ? put_str(o, "HMSG ", 5) : put_str(o, "MSG ", 4);
    o = put_str(o, subject, subl);
    *o++ = ' ';
    o = put_str(o, sb->sid, sidl);
    *o++ = ' ';
    if (reply) {
        o = put_str(o, reply, rl);
        *o++ = ' ';
    }
    if (hdr_len) {
        o = put_decimal(o, hdr_len);
        *o++ = ' ';
    }
    o = put_decimal(o, hdr_len + len);
    o = put_str(o, "\r\n", 2);
    if (hdr_len) o = put_str(o, hdr, hdr_len);
    if (len) o = put_str(o, data, len);
    o = put_str(o, "\r\n", 2);
    c->out_len = (size_t)(o - c->out);
    c->s->stats.client_msgs_out++;
    return 0;
}

static void sub_remove(client *c, sub *s)
{
    for (sub **pp = &c->subs; *pp; pp = &(*pp)->c_next)
        if (*pp == s) {
            *pp = s->c_next;
            break;
        }
    c->nsubs--;
    route_sub_removed(c->s, s);
    sublist_remove(c->s->subs, s);
    free_sub(s);
}

size_t clients_deliver(server *s, client *except, const char *subject, const char *reply,
                       const void *hdr, size_t hdr_len, const void *data, size_t len)
{
    return clients_deliver_as(s, except, subject, subject, reply, hdr, hdr_len, data, len);
}

/* Delivers to the subscriptions v (n of them, from sublist_match; the array may be the list's
 * own): each gets the message unless it is except's or its client is closing. */
static size_t deliver_list(client *except, sub *const *v, size_t n, const char *subject,
                           const char *reply, const void *hdr, size_t hdr_len, const void *data,
                           size_t len)
{
    size_t got = 0;
    /* Delivery may close a slow consumer and free its subscriptions: take stable copies first
     * by marking, then deliver, skipping closed clients. */
    sub *local[64];
    sub **list = n <= 64 ? local : malloc(n * sizeof *list);
    if (!list) return 0;
    memcpy(list, v, n * sizeof *list);
    for (size_t i = 0; i < n; i++) {
        sub *sb = list[i];
        if (!sb) continue;
        client *c = sb->c;
        if (c == except || c->closing) continue;
        if (deliver_one(sb, subject, reply, hdr, hdr_len, data, len) != 0) {
            /* the client was closed: later entries of it are freed too */
            for (size_t j = i + 1; j < n; j++)
                if (list[j] && list[j]->c == c) list[j] = NULL;
            continue;
        }
        got++;
        sb->delivered++;
        if (sb->max >= 0 && sb->delivered >= (uint64_t)sb->max) sub_remove(c, sb);
    }
    if (list != local) free(list);
    return got;
}

size_t clients_deliver_as(server *s, client *except, const char *to, const char *subject,
                          const char *reply, const void *hdr, size_t hdr_len, const void *data,
                          size_t len)
{
    sub **v;
    size_t n = sublist_match(s->subs, to, &v);
    /* The peers first: what they are offered depends on which queue groups are served here. */
    size_t fwd = route_forward(s, to, subject, reply, hdr, hdr_len, data, len, v, n);
    if (n == 0) return fwd; /* v may be NULL then */
    return fwd + deliver_list(except, v, n, subject, reply, hdr, hdr_len, data, len);
}

size_t clients_deliver_remote(server *s, const char *to, const char *subject, const char *reply,
                              const void *hdr, size_t hdr_len, const void *data, size_t len,
                              int plain, int (*want_queue)(void *arg, const char *queue), void *arg)
{
    sub **v;
    size_t n = sublist_match(s->subs, to, &v), k = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i]->queue ? want_queue(arg, v[i]->queue) : plain) v[k++] = v[i];
    if (k == 0) return 0;
    return deliver_list(NULL, v, k, subject, reply, hdr, hdr_len, data, len);
}

int clients_interest(const server *s, const char *subject)
{
    sub **v;
    return sublist_match(s->subs, subject, &v) > 0 || route_interest(s, subject);
}

static void auth_violation(client *c, const char *user, const char *why)
{
    fprintf(stderr, "[%s] client %" PRIu64 " (%s): authorization violation (user \"%.64s\": %s)\n",
            c->s->cfg.name, c->id, c->ip, user ? user : "", why);
    client_close(c, "Authorization Violation");
}

static void auth_work(uv_work_t *req)
{
    auth_job *j = req->data;
    j->ok = crypto_pwhash_str_verify(j->hash, j->pass, j->pass_len) == 0;
}

static void feed_done(client *c, int rc, const char *err);
static int on_op(void *arg, const np_op *op);
static void on_alloc(uv_handle_t *h, size_t sz, uv_buf_t *buf);
static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);

/* The password check completed: the connection is admitted (what it sent after CONNECT is fed
 * now, and it is read again) or closed with 'Authorization Violation'. */
static void auth_done(uv_work_t *req, int status)
{
    auth_job *j = req->data;
    client *c = j->c;
    sodium_memzero(j->pass, j->pass_len);
    free(j->pass);
    if (!c) {
        sodium_memzero(j, sizeof *j);
        free(j);
        return;
    }
    c->job = NULL;
    if (status != 0 || !j->ok || j->refuse) {
        auth_violation(c, j->user, j->refuse ? j->refuse : "wrong password");
    } else {
        c->auth = AUTH_OPEN;
        c->system = j->system;
        if (c->verbose) out_str(c, "+OK\r\n");
        const char *err = NULL;
        int rc = 0;
        if (c->held_len) rc = np_feed(&c->parser, c->held, c->held_len, on_op, c, &err);
        free(c->held);
        c->held = NULL;
        c->held_len = 0;
        feed_done(c, rc, err);
        if (!c->closing && !c->paused) uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    }
    sodium_memzero(j, sizeof *j);
    free(j);
}

/* CONNECT on a server with users: looks the user up and starts the password check. Returns 1
 * (the check is under way: nothing more is read until it completes) or -1 (refused, closed).
 * A missing or unknown user and a missing password are refused only after a check against a
 * configured user's hash, so the answer takes as long as a wrong password's and its timing does
 * not tell which user names exist. */
static int auth_start(client *c, json_t *j)
{
    const char *user = json_string_value(json_object_get(j, "user"));
    json_t *pj = json_object_get(j, "pass");
    const srv_user *u = NULL;
    for (size_t i = 0; user && i < c->s->cfg.nusers; i++)
        if (!strcmp(c->s->cfg.users[i].user, user)) u = &c->s->cfg.users[i];
    const char *refuse = !user ? "no user" : !u ? "unknown user" : NULL;
    if (!refuse && !json_is_string(pj)) refuse = "no password";
    const char *pass = json_is_string(pj) ? json_string_value(pj) : "";
    size_t pass_len = json_is_string(pj) ? json_string_length(pj) : 0;
    if (!u) u = &c->s->cfg.users[0];
    auth_job *job = calloc(1, sizeof *job);
    if (job) job->pass = malloc(pass_len + 1);
    if (!job || !job->pass) {
        free(job);
        client_close(c, NULL);
        return -1;
    }
    job->pass_len = pass_len;
    memcpy(job->pass, pass, pass_len + 1);
    job->refuse = refuse;
    snprintf(job->hash, sizeof job->hash, "%s", u->hash);
    snprintf(job->user, sizeof job->user, "%s", user ? user : "");
    job->system = u->system;
    job->c = c;
    job->req.data = job;
    if (uv_queue_work(c->s->loop, &job->req, auth_work, auth_done) != 0) {
        sodium_memzero(job->pass, job->pass_len);
        free(job->pass);
        free(job);
        client_close(c, NULL);
        return -1;
    }
    c->job = job;
    c->auth = AUTH_CHECKING;
    uv_read_stop((uv_stream_t *)&c->tcp);
    return 1;
}

/* The cluster operations, for system users only when users are configured (as JetStream keeps
 * them in the system account). */
static int system_subject(const char *subject)
{
    return !strncmp(subject, "$JS.API.META.", 13) || !strncmp(subject, "$JS.API.SERVER.", 15) ||
           !strncmp(subject, "$JS.API.ACCOUNT.", 16) || !strncmp(subject, "$SYS.", 5);
}

static int on_connect_op(client *c, const np_op *op)
{
    json_error_t je;
    json_t *j = json_loadb(op->arg, op->arg_len, 0, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        client_close(c, "Invalid Connection Request");
        return -1;
    }
    c->verbose = json_is_true(json_object_get(j, "verbose"));
    c->pedantic = json_is_true(json_object_get(j, "pedantic"));
    c->headers = json_is_true(json_object_get(j, "headers"));
    c->no_responders = json_is_true(json_object_get(j, "no_responders"));
    json_t *echo = json_object_get(j, "echo");
    c->echo = echo ? json_is_true(echo) : 1;
    if (c->no_responders && !c->headers) {
        json_decref(j);
        client_close(c, "no_responders requires headers support");
        return -1;
    }
    int rc = c->auth == AUTH_WAIT_CONNECT ? auth_start(c, j) : 0;
    json_decref(j);
    return rc;
}

static void on_pub(client *c, const np_op *op)
{
    server *s = c->s;
    s->stats.client_msgs_in++;
    if (s->cfg.nusers && !c->system && system_subject(op->subject)) {
        /* nats-server's answer to a publish the user may not make: the connection stays. */
        char buf[320];
        int n = snprintf(buf, sizeof buf,
                         "-ERR 'Permissions Violation for Publish to \"%.200s\"'\r\n", op->subject);
        out_append(c, buf, (size_t)n);
        fprintf(stderr, "[%s] client %" PRIu64 " (%s): not a system user: refused %.200s\n",
                s->cfg.name, c->id, c->ip, op->subject);
        return;
    }
    /* A consumer create names its filter in the subject, wildcards included
     * ($JS.API.CONSUMER.CREATE.ORDERS.c1.orders.*): API subjects may hold them. */
    int api_pattern = !strncmp(op->subject, "$JS.API.", 8) && subject_valid(op->subject, 0);
    if ((!api_pattern && !subject_valid(op->subject, 1)) ||
        (op->reply && !subject_valid(op->reply, 1))) {
        /* nats-server checks publish subjects only in pedantic mode; a wildcard subject never
         * reaches a subscriber or a stream either way. */
        if (c->pedantic) send_err(c, "Invalid Publish Subject");
        return;
    }
    if (!strncmp(op->subject, "$JS.API.", 8)) {
        jsapi_request(s, op->subject, op->reply, op->hdr, op->hdr_len, op->data, op->data_len,
                      c->no_responders);
        return;
    }
    if (!strncmp(op->subject, "$JS.ACK.", 8)) {
        jsapi_ack(s, op->subject, op->reply, op->data, op->data_len);
        return;
    }
    if (!strncmp(op->subject, "$SYS.REQ.SERVER.", 16) && jsapi_sys(s, op->subject, op->reply))
        return;
    size_t got = clients_deliver(s, c->echo ? NULL : c, op->subject, op->reply, op->hdr,
                                 op->hdr_len, op->data, op->data_len);
    if (!strncmp(op->subject, "$SYS.", 5)) {
        /* Other system subjects (but the server pings above) are not served, and no stream
         * takes them. Other subjects under '$' are a stream's like any ($KV.<bucket>.>, the
         * key-value buckets clients build on streams; $JS.EVENT.> advisories). */
        if (!got && op->reply && c->no_responders) jsapi_no_responders(s, op->reply);
        return;
    }
    jsapi_publish(s, op->subject, op->reply, op->hdr, op->hdr_len, op->data, op->data_len,
                  got == 0 && c->no_responders);
}

static int on_sub(client *c, const np_op *op)
{
    if (!subject_valid(op->subject, 0) || (op->queue && !subject_valid(op->queue, 1))) {
        send_err(c, "Invalid Subject");
        return 0;
    }
    if (c->nsubs >= MAX_SUBS_PER_CLIENT) {
        send_err(c, "Maximum Subscriptions Exceeded");
        return 0;
    }
    sub *sb = calloc(1, sizeof *sb);
    if (!sb) return -1;
    sb->c = c;
    sb->subject = strdup(op->subject);
    sb->queue = op->queue ? strdup(op->queue) : NULL;
    sb->sid = strdup(op->sid);
    sb->max = -1;
    if (!sb->subject || !sb->sid || (op->queue && !sb->queue)) {
        free_sub(sb);
        return -1;
    }
    sb->c_next = c->subs;
    c->subs = sb;
    c->nsubs++;
    sublist_insert(c->s->subs, sb);
    route_sub_added(c->s, sb);
    return 0;
}

static void on_unsub(client *c, const np_op *op)
{
    for (sub *sb = c->subs; sb; sb = sb->c_next) {
        if (strcmp(sb->sid, op->sid)) continue;
        if (op->max > 0 && sb->delivered < (uint64_t)op->max)
            sb->max = op->max;
        else
            sub_remove(c, sb);
        return;
    }
}

static int on_op(void *arg, const np_op *op)
{
    client *c = arg;
    if (c->auth == AUTH_WAIT_CONNECT && op->kind != NP_CONNECT) {
        /* nats-server: with authentication, anything before CONNECT is a violation */
        auth_violation(c, NULL, "an operation before CONNECT");
        return 1;
    }
    switch (op->kind) {
    case NP_CONNECT:
        if (on_connect_op(c, op)) return 1;
        break;
    case NP_PUB:
    case NP_HPUB:
        if (op->kind == NP_HPUB && !c->headers) {
            /* nats-server accepts HPUB only from a client that said it speaks headers */
            client_close(c, "Unknown Protocol Operation");
            return 1;
        }
        on_pub(c, op);
        break;
    case NP_SUB:
        if (on_sub(c, op)) {
            client_close(c, NULL);
            return 1;
        }
        break;
    case NP_UNSUB:
        on_unsub(c, op);
        break;
    case NP_PING:
        out_str(c, "PONG\r\n");
        break;
    case NP_PONG:
        c->pings_out = 0;
        break;
    default:
        break;
    }
    if (c->closing) return 1;
    if (c->verbose && op->kind != NP_PING && op->kind != NP_PONG) out_str(c, "+OK\r\n");
    return c->closing ? 1 : 0;
}

static void on_alloc(uv_handle_t *h, size_t sz, uv_buf_t *buf)
{
    static char slab[64 << 10]; /* one thread: each read is consumed before the next */
    (void)h;
    (void)sz;
    *buf = uv_buf_init(slab, sizeof slab);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    client *c = st->data;
    if (n < 0) {
        client_close(c, NULL);
        return;
    }
    if (n == 0 || c->closing) return;
    c->s->stats.client_bytes_in += (uint64_t)n;
    const char *err = NULL;
    const uint8_t *p = (const uint8_t *)buf->base;
    size_t len = (size_t)n;
    int rc = 0;
    /* Before CONNECT, one line at a time: a CONNECT starts the password check, and what follows
     * it waits in c->held for the outcome. */
    while (c->auth == AUTH_WAIT_CONNECT && len && rc == 0 && !c->closing) {
        const uint8_t *nl = memchr(p, '\n', len);
        size_t first = nl ? (size_t)(nl - p) + 1 : len;
        rc = np_feed(&c->parser, p, first, on_op, c, &err);
        p += first;
        len -= first;
    }
    if (c->auth == AUTH_CHECKING && len && !c->closing) {
        c->held = malloc(len);
        if (!c->held) {
            client_close(c, NULL);
            return;
        }
        memcpy(c->held, p, len);
        c->held_len = len;
    }
    if (rc == 0 && len && c->auth == AUTH_OPEN && !c->closing) {
        server *s = c->s;
        server_clock_hold(s); /* one clock reading for every publish of this read */
        rc = np_feed(&c->parser, p, len, on_op, c, &err);
        server_clock_release(s);
    }
    feed_done(c, rc, err);
}

/* After a feed: a protocol error closes the connection; too many requests in flight pause
 * reading. */
static void feed_done(client *c, int rc, const char *err)
{
    if (rc == NP_EPROTO) {
        c->s->stats.proto_errors++;
        client_close(c, err);
    }
    server *s = c->s;
    if (!c->closing && s->js_inflight >= s->cfg.max_inflight) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->paused = 1;
    }
    clients_kick_later(s); /* on_flush, once the loop turn's reads are in */
}

void clients_kick_later(server *s)
{
    if (s->clients)
        s->clients->kick = 1;
    else
        server_kick(s);
}

void clients_request_done(server *s)
{
    if (s->js_inflight > s->cfg.max_inflight / 2 || !s->clients) return;
    for (client *c = s->clients->head; c; c = c->next)
        if (c->paused && !c->closing) {
            c->paused = 0;
            uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
        }
}

/* Every ping_interval_ms: a client with two PINGs unanswered is closed, every other one gets a
 * PING (nats-server's stale connection check). */
static void on_ping(uv_timer_t *t)
{
    clients *cs = t->data;
    for (client *c = cs->head, *next; c; c = next) {
        next = c->next;
        if (c->pings_out >= 2) {
            client_close(c, "Stale Connection");
            continue;
        }
        c->pings_out++;
        out_str(c, "PING\r\n");
    }
}

/* Every second, with users: a connection that sent no CONNECT within AUTH_TIMEOUT_MS is closed
 * with 'Authentication Timeout', as nats-server does. */
static void on_auth_timer(uv_timer_t *t)
{
    clients *cs = t->data;
    uint64_t now = uv_now(cs->s->loop);
    for (client *c = cs->head, *next; c; c = next) {
        next = c->next;
        if (c->auth == AUTH_WAIT_CONNECT && now - c->accepted_ms >= AUTH_TIMEOUT_MS) {
            fprintf(stderr, "[%s] client %" PRIu64 " (%s): no CONNECT within %d ms\n",
                    cs->s->cfg.name, c->id, c->ip, AUTH_TIMEOUT_MS);
            client_close(c, "Authentication Timeout");
        }
    }
}

static void send_info(client *c)
{
    server *s = c->s;
    json_t *j =
        json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:i,s:b,s:I,s:b,s:I,s:s,s:s}", "server_id",
                  s->server_id, "server_name", s->cfg.name, "version", "2.9.10", "proto", 1, "go",
                  "jetraft", "host", s->cfg.client_host, "port", s->cfg.client_port, "headers", 1,
                  "max_payload", (json_int_t)s->cfg.max_payload, "jetstream", 1, "client_id",
                  (json_int_t)c->id, "client_ip", c->ip, "cluster", s->cfg.cluster);
    if (j && s->cfg.nusers) json_object_set_new(j, "auth_required", json_true());
    /* every server a client may reconnect to: this one and those of the links up */
    const char *urls[64];
    size_t n = route_urls(s, urls, sizeof urls / sizeof urls[0]);
    if (j && (n || s->advertise[0])) {
        json_t *a = json_array();
        if (s->advertise[0]) json_array_append_new(a, json_string(s->advertise));
        for (size_t i = 0; i < n; i++) json_array_append_new(a, json_string(urls[i]));
        json_object_set_new(j, "connect_urls", a);
    }
    char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!txt) {
        client_close(c, NULL);
        return;
    }
    out_str(c, "INFO ");
    out_str(c, txt);
    out_str(c, " \r\n");
    free(txt);
}

static void on_accept(uv_stream_t *srv, int status)
{
    server *s = srv->data;
    clients *cs = s->clients;
    if (status < 0) return;
    client *c = calloc(1, sizeof *c);
    if (!c) return;
    c->s = s;
    c->echo = 1;
    c->auth = s->cfg.nusers ? AUTH_WAIT_CONNECT : AUTH_OPEN;
    c->accepted_ms = uv_now(s->loop);
    c->id = ++cs->next_id;
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(srv, (uv_stream_t *)&c->tcp) != 0 ||
        np_init(&c->parser, s->cfg.max_control_line, s->cfg.max_payload) != 0) {
        c->closing = 2;
        uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    struct sockaddr_storage sa;
    int salen = sizeof sa;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&sa, &salen) == 0) {
        if (sa.ss_family == AF_INET)
            uv_ip4_name((struct sockaddr_in *)&sa, c->ip, sizeof c->ip);
        else
            uv_ip6_name((struct sockaddr_in6 *)&sa, c->ip, sizeof c->ip);
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_tcp_keepalive(&c->tcp, 1, 60);
    c->next = cs->head;
    if (cs->head) cs->head->prev = c;
    cs->head = c;
    cs->count++;
    s->stats.client_conns++;
    send_info(c);
    if (cs->count > s->cfg.max_connections) {
        client_close(c, "maximum connections exceeded");
        return;
    }
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

int clients_start(server *s)
{
    clients *cs = calloc(1, sizeof *cs);
    if (!cs) return UV_ENOMEM;
    cs->s = s;
    s->clients = cs;
    uv_check_init(s->loop, &cs->flush);
    cs->flush.data = cs;
    uv_check_start(&cs->flush, on_flush);
    uv_prepare_init(s->loop, &cs->late);
    cs->late.data = cs;
    uv_prepare_start(&cs->late, on_late);
    uv_timer_init(s->loop, &cs->ping);
    cs->ping.data = cs;
    uv_timer_start(&cs->ping, on_ping, s->cfg.ping_interval_ms, s->cfg.ping_interval_ms);
    uv_timer_init(s->loop, &cs->auth_timer);
    cs->auth_timer.data = cs;
    if (s->cfg.nusers) uv_timer_start(&cs->auth_timer, on_auth_timer, 1000, 1000);
    uv_tcp_init(s->loop, &cs->listener);
    cs->listener.data = s;
    struct sockaddr_storage sa;
    int rc = uv_ip4_addr(s->cfg.client_host, s->cfg.client_port, (struct sockaddr_in *)&sa);
    if (rc) rc = uv_ip6_addr(s->cfg.client_host, s->cfg.client_port, (struct sockaddr_in6 *)&sa);
    if (rc) return rc;
    rc = uv_tcp_bind(&cs->listener, (struct sockaddr *)&sa, 0);
    if (!rc) rc = uv_listen((uv_stream_t *)&cs->listener, 511, on_accept);
    return rc;
}

void clients_stop(server *s)
{
    clients *cs = s->clients;
    if (!cs) return;
    on_flush(&cs->flush);
    while (cs->head) client_close(cs->head, NULL);
    uv_check_stop(&cs->flush);
    uv_close((uv_handle_t *)&cs->flush, NULL);
    uv_prepare_stop(&cs->late);
    uv_close((uv_handle_t *)&cs->late, NULL);
    uv_close((uv_handle_t *)&cs->ping, NULL);
    uv_close((uv_handle_t *)&cs->auth_timer, NULL);
    uv_close((uv_handle_t *)&cs->listener, NULL);
}

void clients_free(server *s)
{
    free(s->clients);
    s->clients = NULL;
}
