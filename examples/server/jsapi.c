/*
 * jsapi.c — the JetStream API's dispatch and its shared replies (see jsapi.h, jsapi_impl.h),
 * account info and the meta leader's stepdown. Streams are in jsapi_stream.c, consumers in
 * jsapi_consumer.c, their deliveries and acks in jsdeliver.c, publishes in jspub.c.
 */
#include "jsapi_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "jsjson.h"

uint64_t jsr_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Requests in flight count toward max_inflight (see clients_request_done). */
void jsr_free(req *r)
{
    if (!r) return;
    server *s = r->s;
    json_decref(r->patch);
    free(r);
    s->js_inflight--;
    clients_request_done(s);
}

req *jsr_new(server *s, const char *reply, int op, const char *type, const char *name)
{
    size_t rl = reply ? strlen(reply) : 0;
    req *r = calloc(1, sizeof *r + rl + 1);
    if (!r) return NULL;
    r->s = s;
    s->js_inflight++;
    r->op = op;
    r->type = type;
    if (name) snprintf(r->name, sizeof r->name, "%s", name);
    if (rl) memcpy(r->reply, reply, rl);
    return r;
}

/* Publishes j (stolen) with its "type" to the reply subject. */
void jsr_send_json(server *s, const char *reply, const char *type, json_t *j)
{
    if (!j) return;
    if (reply && *reply) {
        char t[128];
        snprintf(t, sizeof t, TYPE_PREFIX "%s", type);
        json_object_set_new(j, "type", json_string(t));
        char *txt = json_dumps(j, JSON_COMPACT);
        if (txt) {
            clients_deliver(s, NULL, reply, NULL, NULL, 0, txt, strlen(txt));
            free(txt);
        }
    }
    json_decref(j);
}

void jsr_send_error(server *s, const char *reply, const char *type, int code, int err_code,
                    const char *desc)
{
    s->stats.js_api_errors++;
    json_t *j = json_object();
    json_object_set_new(j, "error", js_error_json(code, err_code, desc));
    jsr_send_json(s, reply, type, j);
}

void jsr_status_error(req *r, int status, const char *msg)
{
    int code, err_code;
    char desc[600];
    if (r->consumer_api)
        js_map_consumer_error(status, msg, r->op, &code, &err_code, desc, sizeof desc);
    else
        js_map_error(status, msg, r->op, &code, &err_code, desc, sizeof desc);
    jsr_send_error(r->s, r->reply, r->type, code, err_code, desc);
}

void jsr_success(req *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "success", json_true());
    jsr_send_json(r->s, r->reply, r->type, j);
}

void jsapi_no_responders(server *s, const char *reply)
{
    static const char hdr[] = "NATS/1.0 503\r\n\r\n";
    clients_deliver(s, NULL, reply, NULL, hdr, sizeof hdr - 1, NULL, 0);
}

void jsr_done(void *arg, int status, const char *msg)
{
    req *r = arg;
    if (status)
        jsr_status_error(r, status, msg);
    else
        jsr_success(r);
    jsr_free(r);
}

/* Parses the body as JSON (empty: an empty object); NULL after answering the error and freeing
 * the request. */
json_t *jsr_body(req *r, const void *data, size_t len)
{
    if (len == 0) return json_object();
    json_error_t je;
    json_t *j = json_loadb(data, len, 0, &je);
    if (!j || !json_is_object(j)) {
        char d[300];
        snprintf(d, sizeof d, "invalid JSON: %s", j ? "not an object" : je.text);
        json_decref(j);
        jsr_send_error(r->s, r->reply, r->type, 400, 10025, d);
        jsr_free(r);
        return NULL;
    }
    return j;
}

void jsr_fail(req *r, int rc)
{
    if (rc) {
        jsr_status_error(r, rc, NULL);
        jsr_free(r);
    }
}

const char *jsr_preferred(json_t *body)
{
    json_t *pl = json_object_get(body, "placement");
    json_t *pref = json_is_object(pl) ? json_object_get(pl, "preferred") : NULL;
    return json_is_string(pref) && json_string_length(pref) ? json_string_value(pref) : NULL;
}

uint64_t jsr_offset(json_t *body)
{
    json_t *ov = json_object_get(body, "offset");
    json_int_t off = json_is_integer(ov) ? json_integer_value(ov) : 0;
    return off > 0 ? (uint64_t)off : 0;
}

json_t *jsr_page_json(uint64_t total, uint64_t offset, uint64_t limit)
{
    json_t *j = json_object();
    json_object_set_new(j, "total", json_integer((json_int_t)total));
    json_object_set_new(j, "offset", json_integer((json_int_t)offset));
    json_object_set_new(j, "limit", json_integer((json_int_t)limit));
    return j;
}

void jsr_names_reply(req *r, int status, const char *msg, const jr_names *page, const char *key,
                     int null_if_empty)
{
    if (status) {
        jsr_status_error(r, status, msg);
    } else {
        json_t *j = jsr_page_json(page->total, page->offset, page->limit);
        json_t *a = null_if_empty && !page->nnames ? json_null() : json_array();
        for (size_t i = 0; i < page->nnames; i++)
            json_array_append_new(a, json_string(page->names[i]));
        json_object_set_new(j, key, a);
        jsr_send_json(r->s, r->reply, r->type, j);
    }
    jsr_free(r);
}

void jsr_set_missing(json_t *j, const char *const *missing, size_t n)
{
    if (!n) return;
    json_t *m = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(m, json_string(missing[i]));
    json_object_set_new(j, "missing", m);
}

int jsr_split(const char *api, char *buf, size_t cap, char **tok, int max, size_t maxlen)
{
    size_t len = strlen(api);
    if (len >= cap) return -1;
    memcpy(buf, api, len + 1);
    int n = 0;
    for (char *p = buf;;) {
        if (n == max) return -1;
        tok[n++] = p;
        char *d = strchr(p, '.');
        if (!d) break;
        *d = 0;
        p = d + 1;
    }
    for (int i = 0; i < n; i++)
        if (!*tok[i] || strlen(tok[i]) > maxlen) return -1;
    return n;
}

/* META.LEADER.STEPDOWN: {} or {"placement":{"preferred":"n2"}}. */
static void meta_stepdown(req *r, const void *data, size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    const char *peer = jsr_preferred(j);
    int rc = jr_meta_stepdown(r->s->node, peer, jsr_done, r);
    json_decref(j);
    jsr_fail(r, rc);
}

/* ---- account info --------------------------------------------------------------------------- */

/* Account info sums the streams' infos (JetStream's memory, storage and consumers), read a
 * page of jr_stream_list at a time; a stream whose leader did not answer in time counts for
 * nothing (the list names it missing). */
typedef struct account_sum {
    req *r;
    uint64_t memory, storage, consumers, offset;
} account_sum;

static void on_account_page(void *arg, int status, const char *msg, const jr_stream_page *page)
{
    account_sum *a = arg;
    req *r = a->r;
    server *s = r->s;
    if (status) {
        jsr_status_error(r, status, msg);
        jsr_free(r);
        free(a);
        return;
    }
    for (size_t i = 0; i < page->nstreams; i++) {
        const jr_stream_info *si = page->streams[i];
        if (si->config->storage == JR_STORAGE_MEMORY)
            a->memory += si->state->bytes;
        else
            a->storage += si->state->bytes;
        a->consumers += si->state->consumers;
    }
    a->offset = page->offset + page->nstreams + page->nmissing;
    if (page->nstreams + page->nmissing && a->offset < page->total && s->node &&
        jr_stream_list(s->node, NULL, a->offset, on_account_page, a) == 0)
        return;
    json_t *j = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b},s:{s:I,s:I,s:I}}", "memory",
        (json_int_t)a->memory, "storage", (json_int_t)a->storage, "reserved_memory", (json_int_t)0,
        "reserved_storage", (json_int_t)0, "streams", (json_int_t)page->total, "consumers",
        (json_int_t)a->consumers, "limits", "max_memory", (json_int_t)-1, "max_storage",
        (json_int_t)-1, "max_streams", (json_int_t)-1, "max_consumers", (json_int_t)-1,
        "max_ack_pending", (json_int_t)-1, "memory_max_stream_bytes", (json_int_t)-1,
        "storage_max_stream_bytes", (json_int_t)-1, "max_bytes_required", 0, "api", "level",
        (json_int_t)0, "total", (json_int_t)s->stats.js_api_requests, "errors",
        (json_int_t)s->stats.js_api_errors);
    jsr_send_json(s, r->reply, r->type, j);
    jsr_free(r);
    free(a);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

void jsapi_request(server *s, const char *subject, const char *reply, const void *hdr,
                   size_t hdr_len, const void *data, size_t len, int no_responders)
{
    (void)hdr;
    (void)hdr_len;
    s->stats.js_api_requests++;
    const char *api = subject + strlen("$JS.API.");
    if (!s->node && !strncmp(api, "CONSUMER.MSG.NEXT.", 18)) {
        /* A pull request's answers are messages: the 503 status is the one clients read. */
        if (reply && *reply) jsapi_no_responders(s, reply);
        return;
    }
    if (!s->node) { /* a failed node is being reopened (server.h): 503, as nats-server says */
        int code, err_code;
        char desc[100];
        js_map_error(JR_ECLOSED, NULL, 'n', &code, &err_code, desc, sizeof desc);
        jsr_send_error(s, reply, "error_response", code, err_code, desc);
        return;
    }
    if (!strcmp(api, "INFO")) {
        req *r = jsr_new(s, reply, 'n', "account_info_response", NULL);
        account_sum *a = r ? calloc(1, sizeof *a) : NULL;
        if (r && !a) jsr_free(r);
        if (!a) return;
        a->r = r;
        int rc = jr_stream_list(s->node, NULL, 0, on_account_page, a);
        if (rc != 0) {
            jsr_status_error(r, rc, NULL);
            jsr_free(r);
            free(a);
        }
        return;
    }
    if (!strcmp(api, "META.LEADER.STEPDOWN")) {
        /* JetStream allows it only to the system account; this server has no accounts yet. */
        req *r = jsr_new(s, reply, 's', "meta_leader_stepdown_response", NULL);
        if (r) meta_stepdown(r, data, len);
        return;
    }
    if (jsapi_cluster(s, api, reply, data, len)) return;
    if (jsapi_admin(s, api, reply, data, len)) return;
    if (jsapi_stream(s, api, reply, data, len)) return;
    if (jsapi_consumer(s, api, reply, data, len, no_responders)) return;
    /* The rest (an ACCOUNT.PURGE without its account, unknown subjects) is not served: answer
     * at once rather than leave the client to time out. */
    char desc[300];
    snprintf(desc, sizeof desc, "%.200s is not supported by this server", api);
    jsr_send_error(s, reply, "error_response", 501, 10003, desc);
}
