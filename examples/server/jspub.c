/*
 * jspub.c — publishes to streams: a client's PUB to a subject no API handles goes to
 * jr_publish, and its PubAck (or JetStream's error) to the reply subject (see jsapi.h).
 */
#include "jsapi_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "decimal.h"
#include "jsjson.h"

/* ---- publish -------------------------------------------------------------------------------- */

typedef struct pubreq {
    server *s;
    uint64_t t0; /* uv_hrtime when handed to the library */
    int nr;
    int pooled; /* of POOL_REPLY bytes of reply, returned to the pool when done */
    struct pubreq *next;
    char reply[];
} pubreq;

/* Publishes in flight each hold a pubreq until their ack; those whose reply subject fits
 * POOL_REPLY bytes come from a free list of at most POOL_MAX (the process runs one server on one
 * thread), so that a stream of publishes does not go through malloc and free per message. */
#define POOL_REPLY 120
#define POOL_MAX 4096

static pubreq *pool;
static size_t pool_n;

const uint64_t pub_lat_bounds_ns[PUB_LAT_BUCKETS - 1] = {
    250000,   500000,   1000000,   2000000,   5000000,    10000000,
    25000000, 50000000, 100000000, 250000000, 1000000000,
};

static pubreq *pubreq_new(size_t reply_len)
{
    if (reply_len + 1 > POOL_REPLY) {
        pubreq *p = malloc(sizeof *p + reply_len + 1);
        if (p) p->pooled = 0;
        return p;
    }
    pubreq *p = pool;
    if (p) {
        pool = p->next;
        pool_n--;
        return p;
    }
    p = malloc(sizeof *p + POOL_REPLY);
    if (p) p->pooled = 1;
    return p;
}

static void pubreq_free(pubreq *p)
{
    if (!p->pooled || pool_n >= POOL_MAX) {
        free(p);
        return;
    }
    p->next = pool;
    pool = p;
    pool_n++;
}

/* 1 if s can stand in a JSON string as it is (the PubAck's hot path formats it directly). */
static int json_plain(const char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) return 0;
    return 1;
}

/* The PubAck {"stream":"NAME","seq":N[,"duplicate":true]} of the hot path, written without a
 * format parser; 0 if the name needs escaping or it does not fit in cap bytes (then jansson
 * writes it). */
static size_t plain_ack(char *buf, size_t cap, const jr_pub_ack *ack)
{
    static const char a[] = "{\"stream\":\"", b[] = "\",\"seq\":", d[] = ",\"duplicate\":true";
    size_t sl = strlen(ack->stream);
    if (!json_plain(ack->stream) || sizeof a + sl + sizeof b + 20 + sizeof d + 1 > cap) return 0;
    char *o = buf;
    memcpy(o, a, sizeof a - 1);
    o += sizeof a - 1;
    memcpy(o, ack->stream, sl);
    o += sl;
    memcpy(o, b, sizeof b - 1);
    o += sizeof b - 1;
    o = put_decimal(o, ack->seq);
    if (ack->duplicate) {
        memcpy(o, d, sizeof d - 1);
        o += sizeof d - 1;
    }
    *o++ = '}';
    return (size_t)(o - buf);
}

static void on_ack(void *arg, int status, const jr_pub_ack *ack)
{
    pubreq *p = arg;
    server *s = p->s;
    if (status == 0) {
        s->stats.js_acks++;
        uint64_t lat = uv_hrtime() - p->t0;
        size_t b = 0;
        while (b < PUB_LAT_BUCKETS - 1 && lat > pub_lat_bounds_ns[b]) b++;
        s->stats.pub_lat_bucket[b]++;
        s->stats.pub_lat_count++;
        s->stats.pub_lat_sum_ns += lat;
        size_t n;
        char buf[400];
        if (p->reply[0] && (n = plain_ack(buf, sizeof buf, ack)) != 0) {
            clients_deliver(s, NULL, p->reply, NULL, NULL, 0, buf, n);
        } else if (p->reply[0]) {
            json_t *j = json_pack("{s:s,s:I}", "stream", ack->stream, "seq", (json_int_t)ack->seq);
            if (j && ack->duplicate) json_object_set_new(j, "duplicate", json_true());
            char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
            json_decref(j);
            if (txt) clients_deliver(s, NULL, p->reply, NULL, NULL, 0, txt, strlen(txt));
            free(txt);
        }
    } else if (status == JR_ENOSTREAM) {
        if (p->nr && p->reply[0]) jsapi_no_responders(s, p->reply);
    } else {
        s->stats.js_pub_errors++;
        if (p->reply[0]) {
            int code, err_code;
            char desc[600];
            js_map_error(status, ack ? ack->msg : NULL, 'P', &code, &err_code, desc, sizeof desc);
            if (status == JR_EWRONGLASTSEQ || status == JR_EWRONGLASTSUBJSEQ)
                snprintf(desc, sizeof desc, "wrong last sequence: %" PRIu64, ack ? ack->seq : 0);
            else if (status == JR_EWRONGLASTMSGID && ack && ack->last_msg_id)
                snprintf(desc, sizeof desc, "wrong last msg ID: %s", ack->last_msg_id);
            json_t *j = json_object();
            json_object_set_new(j, "error", js_error_json(code, err_code, desc));
            json_object_set_new(j, "stream", json_string(ack && ack->stream ? ack->stream : ""));
            json_object_set_new(j, "seq", json_integer(0));
            char *txt = json_dumps(j, JSON_COMPACT);
            json_decref(j);
            if (txt) {
                clients_deliver(s, NULL, p->reply, NULL, NULL, 0, txt, strlen(txt));
                free(txt);
            }
        }
    }
    pubreq_free(p);
    s->js_inflight--;
    clients_request_done(s);
}

void jsapi_publish(server *s, const char *subject, const char *reply, const void *hdr,
                   size_t hdr_len, const void *data, size_t len, int nr)
{
    size_t rl = reply ? strlen(reply) : 0;
    pubreq *p = pubreq_new(rl);
    if (!p) return;
    p->s = s;
    p->t0 = uv_hrtime();
    s->js_inflight++;
    p->nr = nr;
    memcpy(p->reply, reply ? reply : "", rl + 1);
    s->stats.js_publishes++;
    /* While a failed node is reopened (server.h) no stream can be asked whether it takes the
     * subject: a publish nobody else received gets 503 when the client wants an answer. */
    int rc = !s->node ? (nr ? JR_ECLOSED : JR_ENOSTREAM)
                      : jr_publish(s->node, subject, hdr_len ? hdr : NULL, hdr_len, data, len, NULL,
                                   on_ack, p);
    if (rc) {
        jr_pub_ack ack = {sizeof ack, "", 0, 0, jr_strerror(rc), NULL};
        on_ack(p, rc, &ack);
    }
}
