/*
 * jsapi.c — JetStream API requests and stream publishes (see jsapi.h).
 *
 * Streams are served; consumer subjects ($JS.API.CONSUMER.*) are answered with a clear
 * "not supported" error until consumers are hosted (their handlers belong in the table below).
 */
#include "jsapi.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sodium.h>

#include "client.h"
#include "jsjson.h"

#define TYPE_PREFIX "io.nats.jetstream.api.v1."

typedef struct req {
    server *s;
    int op;           /* as js_map_error's op */
    const char *type; /* reply type without TYPE_PREFIX */
    int did_create;
    json_t *patch; /* update: the requested fields, normal form (see on_info) */
    char name[JR_STREAM_NAME_MAX + 1];
    char reply[]; /* "" when the request has no reply subject */
} req;

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Requests in flight count toward max_inflight (see clients_request_done). */
static void req_free(req *r)
{
    if (!r) return;
    server *s = r->s;
    json_decref(r->patch);
    free(r);
    s->js_inflight--;
    clients_request_done(s);
}

static req *req_new(server *s, const char *reply, int op, const char *type, const char *name)
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
static void send_json(server *s, const char *reply, const char *type, json_t *j)
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

static void send_error(server *s, const char *reply, const char *type, int code, int err_code,
                       const char *desc)
{
    s->stats.js_api_errors++;
    json_t *j = json_object();
    json_object_set_new(j, "error", js_error_json(code, err_code, desc));
    send_json(s, reply, type, j);
}

static void send_status_error(req *r, int status, const char *msg)
{
    int code, err_code;
    char desc[600];
    js_map_error(status, msg, r->op, &code, &err_code, desc, sizeof desc);
    send_error(r->s, r->reply, r->type, code, err_code, desc);
}

static void send_success(req *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "success", json_true());
    send_json(r->s, r->reply, r->type, j);
}

void jsapi_no_responders(server *s, const char *reply)
{
    static const char hdr[] = "NATS/1.0 503\r\n\r\n";
    clients_deliver(s, NULL, reply, NULL, hdr, sizeof hdr - 1, NULL, 0);
}

/* ---- stream info, create, update ------------------------------------------------------------ */

static void on_info(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    req *r = arg;
    if (status) {
        send_status_error(r, status, msg);
    } else {
        json_t *j = js_stream_info_json(info, wall_ns());
        if (r->did_create) json_object_set_new(j, "did_create", json_true());
        /* An update is committed by the meta group before the stream's own replicas apply it,
         * so the info read right after it may still show the old values of what changed: the
         * reply shows the committed ones. */
        if (r->patch) json_object_update_existing(json_object_get(j, "config"), r->patch);
        send_json(r->s, r->reply, r->type, j);
    }
    req_free(r);
}

/* Create and update answer with the stream's info, read once the change is committed. */
static void on_changed(void *arg, int status, const char *msg)
{
    req *r = arg;
    if (status) {
        send_status_error(r, status, msg);
        req_free(r);
        return;
    }
    if (!r->reply[0] || jr_stream_info_get(r->s->node, r->name, on_info, r) != 0) req_free(r);
}

static void on_done(void *arg, int status, const char *msg)
{
    req *r = arg;
    if (status)
        send_status_error(r, status, msg);
    else
        send_success(r);
    req_free(r);
}

/* Parses the body as JSON (empty: an empty object); NULL after answering the error. */
static json_t *parse_body(req *r, const void *data, size_t len)
{
    if (len == 0) return json_object();
    json_error_t je;
    json_t *j = json_loadb(data, len, 0, &je);
    if (!j || !json_is_object(j)) {
        char d[300];
        snprintf(d, sizeof d, "invalid JSON: %s", j ? "not an object" : je.text);
        json_decref(j);
        send_error(r->s, r->reply, r->type, 400, 10025, d);
        return NULL;
    }
    return j;
}

static void stream_change(req *r, const void *data, size_t len, int update)
{
    json_t *j = parse_body(r, data, len);
    if (!j) {
        req_free(r);
        return;
    }
    js_stream_cfg cfg;
    int code, err_code;
    char desc[400];
    if (js_stream_cfg_parse(j, &cfg, &code, &err_code, desc, sizeof desc)) {
        send_error(r->s, r->reply, r->type, code, err_code, desc);
        goto out;
    }
    if (cfg.c.name && strcmp(cfg.c.name, r->name)) {
        send_error(r->s, r->reply, r->type, 400, 10056,
                   "stream name in subject does not match request");
        goto out;
    }
    cfg.c.name = r->name;
    r->did_create = !update;
    if (update) {
        json_t *all = js_stream_config_json(&cfg.c), *patch = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v)
        {
            json_t *nv = json_object_get(all, k);
            if (nv && strcmp(k, "duplicate_window")) json_object_set(patch, k, nv);
        }
        json_decref(all);
        r->patch = patch;
    }
    int rc = update ? jr_stream_update(r->s->node, &cfg.c, on_changed, r)
                    : jr_stream_add(r->s->node, &cfg.c, on_changed, r);
    if (rc) {
        send_status_error(r, rc, NULL);
        goto out;
    }
    r = NULL; /* the callback owns it */
out:
    js_stream_cfg_free(&cfg);
    json_decref(j);
    req_free(r);
}

/* ---- names and list ------------------------------------------------------------------------- */

static void on_names(void *arg, int status, const char *msg, const jr_names *page)
{
    req *r = arg;
    if (status) {
        send_status_error(r, status, msg);
    } else {
        json_t *j = json_object();
        json_object_set_new(j, "total", json_integer((json_int_t)page->total));
        json_object_set_new(j, "offset", json_integer((json_int_t)page->offset));
        json_object_set_new(j, "limit", json_integer((json_int_t)page->limit));
        json_t *a = page->nnames ? json_array() : json_null();
        for (size_t i = 0; i < page->nnames; i++)
            json_array_append_new(a, json_string(page->names[i]));
        json_object_set_new(j, "streams", a);
        send_json(r->s, r->reply, r->type, j);
    }
    req_free(r);
}

static void on_list(void *arg, int status, const char *msg, const jr_stream_page *page)
{
    req *r = arg;
    if (status) {
        send_status_error(r, status, msg);
    } else {
        json_t *j = json_object();
        json_object_set_new(j, "total", json_integer((json_int_t)page->total));
        json_object_set_new(j, "offset", json_integer((json_int_t)page->offset));
        json_object_set_new(j, "limit", json_integer((json_int_t)page->limit));
        json_t *a = json_array();
        uint64_t now = wall_ns();
        for (size_t i = 0; i < page->nstreams; i++)
            json_array_append_new(a, js_stream_info_json(page->streams[i], now));
        json_object_set_new(j, "streams", a);
        if (page->nmissing) {
            json_t *m = json_array();
            for (size_t i = 0; i < page->nmissing; i++)
                json_array_append_new(m, json_string(page->missing[i]));
            json_object_set_new(j, "missing", m);
        }
        send_json(r->s, r->reply, r->type, j);
    }
    req_free(r);
}

static void names_or_list(req *r, const void *data, size_t len, int list)
{
    json_t *j = parse_body(r, data, len);
    if (!j) {
        req_free(r);
        return;
    }
    json_t *sv = json_object_get(j, "subject"), *ov = json_object_get(j, "offset");
    const char *subject =
        json_is_string(sv) && json_string_length(sv) ? json_string_value(sv) : NULL;
    json_int_t off = json_is_integer(ov) ? json_integer_value(ov) : 0;
    if (off < 0) off = 0;
    int rc = list ? jr_stream_list(r->s->node, subject, (uint64_t)off, on_list, r)
                  : jr_stream_names(r->s->node, subject, (uint64_t)off, on_names, r);
    json_decref(j);
    if (rc) {
        send_status_error(r, rc, NULL);
        req_free(r);
    }
}

/* ---- purge, messages, stepdown -------------------------------------------------------------- */

static void on_purged(void *arg, int status, const char *msg, uint64_t purged)
{
    req *r = arg;
    if (status) {
        send_status_error(r, status, msg);
    } else {
        json_t *j = json_object();
        json_object_set_new(j, "success", json_true());
        json_object_set_new(j, "purged", json_integer((json_int_t)purged));
        send_json(r->s, r->reply, r->type, j);
    }
    req_free(r);
}

static void purge(req *r, const void *data, size_t len)
{
    json_t *j = parse_body(r, data, len);
    if (!j) {
        req_free(r);
        return;
    }
    jr_purge_opts po;
    jr_purge_opts_init(&po);
    json_t *f = json_object_get(j, "filter"), *seq = json_object_get(j, "seq"),
           *keep = json_object_get(j, "keep");
    if (json_is_string(f) && json_string_length(f)) po.subject = json_string_value(f);
    if (json_is_integer(seq) && json_integer_value(seq) > 0)
        po.seq = (uint64_t)json_integer_value(seq);
    if (json_is_integer(keep) && json_integer_value(keep) > 0)
        po.keep = (uint64_t)json_integer_value(keep);
    int rc = jr_stream_purge(r->s->node, r->name, &po, on_purged, r);
    json_decref(j);
    if (rc) {
        send_status_error(r, rc, NULL);
        req_free(r);
    }
}

static json_t *b64(const void *p, size_t len)
{
    size_t cap = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
    char *buf = malloc(cap);
    if (!buf) return json_null();
    sodium_bin2base64(buf, cap, p, len, sodium_base64_VARIANT_ORIGINAL);
    json_t *s = json_string(buf);
    free(buf);
    return s;
}

static void on_msg(void *arg, int status, const char *msg, const jr_stored_msg *m)
{
    req *r = arg;
    if (status) {
        send_status_error(r, status, msg);
    } else {
        json_t *mj = json_object();
        json_object_set_new(mj, "subject", json_string(m->subject));
        json_object_set_new(mj, "seq", json_integer((json_int_t)m->seq));
        if (m->hdr_len) json_object_set_new(mj, "hdrs", b64(m->hdr, m->hdr_len));
        if (m->len) json_object_set_new(mj, "data", b64(m->data, m->len));
        char t[48];
        js_time(t, sizeof t, m->ts);
        json_object_set_new(mj, "time", json_string(t));
        json_t *j = json_object();
        json_object_set_new(j, "message", mj);
        send_json(r->s, r->reply, r->type, j);
    }
    req_free(r);
}

static void msg_get(req *r, const void *data, size_t len)
{
    json_t *j = parse_body(r, data, len);
    if (!j) {
        req_free(r);
        return;
    }
    json_t *seq = json_object_get(j, "seq"), *last = json_object_get(j, "last_by_subj"),
           *next = json_object_get(j, "next_by_subj");
    int rc;
    if (json_is_string(last) && json_string_length(last)) {
        rc = jr_stream_get_last(r->s->node, r->name, json_string_value(last), on_msg, r);
    } else if (json_is_string(next) && json_string_length(next)) {
        /* The first message at or after seq on a subject: the direct read gives it (served by
         * any current replica of a stream with allow_direct). */
        uint64_t from = json_is_integer(seq) && json_integer_value(seq) > 0
                            ? (uint64_t)json_integer_value(seq)
                            : 1;
        rc = jr_stream_direct_get(r->s->node, r->name, from, json_string_value(next), on_msg, r);
    } else if (json_is_integer(seq) && json_integer_value(seq) > 0) {
        rc = jr_stream_msg_get(r->s->node, r->name, (uint64_t)json_integer_value(seq), on_msg, r);
    } else {
        send_error(r->s, r->reply, r->type, 400, 10003, "bad request");
        json_decref(j);
        req_free(r);
        return;
    }
    json_decref(j);
    if (rc) {
        send_status_error(r, rc, NULL);
        req_free(r);
    }
}

static void msg_delete(req *r, const void *data, size_t len)
{
    json_t *j = parse_body(r, data, len);
    if (!j) {
        req_free(r);
        return;
    }
    json_t *seq = json_object_get(j, "seq");
    int no_erase = json_is_true(json_object_get(j, "no_erase"));
    int rc;
    if (!json_is_integer(seq) || json_integer_value(seq) <= 0) {
        send_error(r->s, r->reply, r->type, 400, 10003, "bad request");
        json_decref(j);
        req_free(r);
        return;
    }
    rc = jr_stream_msg_delete(r->s->node, r->name, (uint64_t)json_integer_value(seq), !no_erase,
                              on_done, r);
    json_decref(j);
    if (rc) {
        send_status_error(r, rc, NULL);
        req_free(r);
    }
}

static void stepdown(req *r, const void *data, size_t len)
{
    json_t *j = parse_body(r, data, len);
    if (!j) {
        req_free(r);
        return;
    }
    json_t *pl = json_object_get(j, "placement");
    json_t *pref = json_is_object(pl) ? json_object_get(pl, "preferred") : NULL;
    const char *peer =
        json_is_string(pref) && json_string_length(pref) ? json_string_value(pref) : NULL;
    int rc = jr_stream_stepdown(r->s->node, r->name, peer, on_done, r);
    json_decref(j);
    if (rc) {
        send_status_error(r, rc, NULL);
        req_free(r);
    }
}

/* META.LEADER.STEPDOWN: {} or {"placement":{"preferred":"n2"}}. */
static void meta_stepdown(req *r, const void *data, size_t len)
{
    json_t *j = parse_body(r, data, len);
    if (!j) {
        req_free(r);
        return;
    }
    json_t *pl = json_object_get(j, "placement");
    json_t *pref = json_is_object(pl) ? json_object_get(pl, "preferred") : NULL;
    const char *peer =
        json_is_string(pref) && json_string_length(pref) ? json_string_value(pref) : NULL;
    int rc = jr_meta_stepdown(r->s->node, peer, on_done, r);
    json_decref(j);
    if (rc) {
        send_status_error(r, rc, NULL);
        req_free(r);
    }
}

/* ---- direct get ----------------------------------------------------------------------------- */

/* DIRECT.GET answers with the message itself, its place in the stream in headers (as JetStream:
 * Nats-Stream, Nats-Subject, Nats-Sequence, Nats-Time-Stamp, then the message's own headers),
 * or a status line: 404 Message Not Found, 408 Bad Request, 503 when the stream does not allow
 * direct reads (JetStream has no responder then). */
static void direct_status(req *r, const char *status)
{
    char hdr[128];
    int n = snprintf(hdr, sizeof hdr, "NATS/1.0 %s\r\n\r\n", status);
    if (r->reply[0]) clients_deliver(r->s, NULL, r->reply, NULL, hdr, (size_t)n, NULL, 0);
}

static void on_direct(void *arg, int status, const char *msg, const jr_stored_msg *m)
{
    req *r = arg;
    (void)msg;
    if (status == JR_ENOTFOUND) {
        direct_status(r, "404 Message Not Found");
    } else if (status == JR_EDENIED) {
        direct_status(r, "503");
    } else if (status == JR_EINVAL) {
        direct_status(r, "408 Bad Request");
    } else if (status) {
        direct_status(r, "503");
    } else if (r->reply[0]) {
        char t[48];
        js_time(t, sizeof t, m->ts);
        /* the message's own header lines: its block without the NATS/1.0 line and the final
         * empty line */
        const char *own = "";
        size_t own_len = 0;
        if (m->hdr_len >= 4) {
            const char *h = m->hdr, *end = h + m->hdr_len;
            const char *nl = memchr(h, '\n', m->hdr_len);
            if (nl && end - (nl + 1) >= 2) {
                own = nl + 1;
                own_len = (size_t)(end - own) - 2;
            }
        }
        char *hdr = NULL;
        int n = asprintf(&hdr,
                         "NATS/1.0\r\nNats-Stream: %s\r\nNats-Subject: %s\r\nNats-Sequence: "
                         "%" PRIu64 "\r\nNats-Time-Stamp: %s\r\n%.*s\r\n",
                         m->stream, m->subject, m->seq, t, (int)own_len, own);
        if (n > 0) clients_deliver(r->s, NULL, r->reply, NULL, hdr, (size_t)n, m->data, m->len);
        free(hdr);
    }
    req_free(r);
}

/* $JS.API.DIRECT.GET.<stream> with {"seq"}, {"last_by_subj"} or {"seq","next_by_subj"}; or
 * $JS.API.DIRECT.GET.<stream>.<subject...> for the last message on a subject. */
static void direct_get(req *r, const char *last_subject, const void *data, size_t len)
{
    uint64_t seq = 0;
    const char *subject = last_subject;
    json_t *j = NULL;
    if (!subject) {
        json_error_t je;
        j = len ? json_loadb(data, len, 0, &je) : NULL;
        json_t *sv = json_object_get(j, "seq"), *lv = json_object_get(j, "last_by_subj"),
               *nv = json_object_get(j, "next_by_subj");
        if (json_is_integer(sv) && json_integer_value(sv) > 0)
            seq = (uint64_t)json_integer_value(sv);
        if (json_is_string(lv) && json_string_length(lv)) {
            subject = json_string_value(lv);
            seq = 0;
        } else if (json_is_string(nv) && json_string_length(nv)) {
            subject = json_string_value(nv);
            if (!seq) seq = 1;
        }
        if (!seq && !subject) {
            direct_status(r, "408 Bad Request");
            json_decref(j);
            req_free(r);
            return;
        }
    }
    int rc = jr_stream_direct_get(r->s->node, r->name, seq, subject, on_direct, r);
    json_decref(j);
    if (rc) {
        direct_status(r, "503");
        req_free(r);
    }
}

/* ---- account info --------------------------------------------------------------------------- */

static void on_account_names(void *arg, int status, const char *msg, const jr_names *page)
{
    req *r = arg;
    server *s = r->s;
    if (status) {
        send_status_error(r, status, msg);
        req_free(r);
        return;
    }
    json_t *j = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b},s:{s:I,s:I,s:I}}", "memory",
        (json_int_t)0, "storage", (json_int_t)0, "reserved_memory", (json_int_t)0,
        "reserved_storage", (json_int_t)0, "streams", (json_int_t)page->total, "consumers",
        (json_int_t)0, "limits", "max_memory", (json_int_t)-1, "max_storage", (json_int_t)-1,
        "max_streams", (json_int_t)-1, "max_consumers", (json_int_t)-1, "max_ack_pending",
        (json_int_t)-1, "memory_max_stream_bytes", (json_int_t)-1, "storage_max_stream_bytes",
        (json_int_t)-1, "max_bytes_required", 0, "api", "level", (json_int_t)0, "total",
        (json_int_t)s->stats.js_api_requests, "errors", (json_int_t)s->stats.js_api_errors);
    send_json(s, r->reply, r->type, j);
    req_free(r);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

/* The API subjects with one stream name token after their prefix. */
static const struct {
    const char *prefix;
    const char *type;
    int op;
} stream_apis[] = {
    {"STREAM.CREATE.", "stream_create_response", 'c'},
    {"STREAM.UPDATE.", "stream_update_response", 'u'},
    {"STREAM.DELETE.", "stream_delete_response", 'd'},
    {"STREAM.INFO.", "stream_info_response", 'i'},
    {"STREAM.PURGE.", "stream_purge_response", 'p'},
    {"STREAM.MSG.GET.", "stream_msg_get_response", 'g'},
    {"STREAM.MSG.DELETE.", "stream_msg_delete_response", 'x'},
    {"STREAM.LEADER.STEPDOWN.", "stream_leader_stepdown_response", 's'},
};

void jsapi_request(server *s, const char *subject, const char *reply, const void *hdr,
                   size_t hdr_len, const void *data, size_t len, int no_responders)
{
    (void)hdr;
    (void)hdr_len;
    (void)no_responders;
    s->stats.js_api_requests++;
    const char *api = subject + strlen("$JS.API.");
    if (!strcmp(api, "INFO")) {
        req *r = req_new(s, reply, 'n', "account_info_response", NULL);
        if (r && jr_stream_names(s->node, NULL, 0, on_account_names, r) != 0) {
            send_status_error(r, JR_ENOLEADER, NULL);
            req_free(r);
        }
        return;
    }
    if (!strncmp(api, "DIRECT.GET.", 11)) {
        const char *name = api + 11, *dot = strchr(name, '.');
        size_t nl = dot ? (size_t)(dot - name) : strlen(name);
        char sname[JR_STREAM_NAME_MAX + 1];
        if (nl == 0 || nl > JR_STREAM_NAME_MAX) return;
        memcpy(sname, name, nl);
        sname[nl] = 0;
        req *r = req_new(s, reply, 'g', "", sname);
        if (r) direct_get(r, dot ? dot + 1 : NULL, data, len);
        return;
    }
    if (!strcmp(api, "META.LEADER.STEPDOWN")) {
        /* JetStream allows it only to the system account; this server has no accounts yet. */
        req *r = req_new(s, reply, 's', "meta_leader_stepdown_response", NULL);
        if (r) meta_stepdown(r, data, len);
        return;
    }
    if (!strcmp(api, "STREAM.NAMES") || !strcmp(api, "STREAM.LIST")) {
        int list = api[7] == 'L';
        req *r =
            req_new(s, reply, 'n', list ? "stream_list_response" : "stream_names_response", NULL);
        if (r) names_or_list(r, data, len, list);
        return;
    }
    for (size_t i = 0; i < sizeof stream_apis / sizeof *stream_apis; i++) {
        size_t pl = strlen(stream_apis[i].prefix);
        if (strncmp(api, stream_apis[i].prefix, pl)) continue;
        const char *name = api + pl;
        if (!*name || strchr(name, '.') || strlen(name) > JR_STREAM_NAME_MAX) {
            send_error(s, reply, stream_apis[i].type, 400, 10003, "bad request");
            return;
        }
        req *r = req_new(s, reply, stream_apis[i].op, stream_apis[i].type, name);
        if (!r) return;
        switch (stream_apis[i].op) {
        case 'c':
        case 'u':
            stream_change(r, data, len, stream_apis[i].op == 'u');
            return;
        case 'd':
            if (jr_stream_delete(s->node, name, on_done, r) != 0) {
                send_status_error(r, JR_ECLOSED, NULL);
                req_free(r);
            }
            return;
        case 'i':
            if (jr_stream_info_get(s->node, name, on_info, r) != 0) {
                send_status_error(r, JR_ECLOSED, NULL);
                req_free(r);
            }
            return;
        case 'p':
            purge(r, data, len);
            return;
        case 'g':
            msg_get(r, data, len);
            return;
        case 'x':
            msg_delete(r, data, len);
            return;
        case 's':
            stepdown(r, data, len);
            return;
        }
    }
    /* Consumers, peer removal and the meta operations are not served yet: answer at once
     * rather than leave the client to time out. */
    char desc[300];
    snprintf(desc, sizeof desc, "%.200s is not supported by this server", api);
    send_error(s, reply, "error_response", 501, 10003, desc);
}

/* ---- publish -------------------------------------------------------------------------------- */

typedef struct pubreq {
    server *s;
    int nr;
    char reply[];
} pubreq;

/* 1 if s can stand in a JSON string as it is (the PubAck's hot path formats it directly). */
static int json_plain(const char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) return 0;
    return 1;
}

static void on_ack(void *arg, int status, const jr_pub_ack *ack)
{
    pubreq *p = arg;
    server *s = p->s;
    if (status == 0) {
        s->stats.js_acks++;
        if (p->reply[0] && json_plain(ack->stream)) {
            char buf[400];
            int n = snprintf(buf, sizeof buf, "{\"stream\":\"%s\",\"seq\":%" PRIu64 "%s}",
                             ack->stream, ack->seq, ack->duplicate ? ",\"duplicate\":true" : "");
            clients_deliver(s, NULL, p->reply, NULL, NULL, 0, buf, (size_t)n);
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
    free(p);
    s->js_inflight--;
    clients_request_done(s);
}

void jsapi_publish(server *s, const char *subject, const char *reply, const void *hdr,
                   size_t hdr_len, const void *data, size_t len, int nr)
{
    size_t rl = reply ? strlen(reply) : 0;
    pubreq *p = malloc(sizeof *p + rl + 1);
    if (!p) return;
    p->s = s;
    s->js_inflight++;
    p->nr = nr;
    memcpy(p->reply, reply ? reply : "", rl + 1);
    s->stats.js_publishes++;
    int rc =
        jr_publish(s->node, subject, hdr_len ? hdr : NULL, hdr_len, data, len, NULL, on_ack, p);
    if (rc) {
        jr_pub_ack ack = {sizeof ack, "", 0, 0, jr_strerror(rc)};
        on_ack(p, rc, &ack);
    }
}
