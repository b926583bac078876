/*
 * jsapi_stream.c — the JetStream API for streams: create, update, delete, info, names, list,
 * purge, message get and delete, direct get, leader stepdown; each mapped onto the library's
 * jr_stream_* call and answered from its callback.
 */
#include "jsapi_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "client.h"
#include "jsjson.h"

/* ---- stream info, create, update ------------------------------------------------------------ */

static void on_info(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    req *r = arg;
    if (status) {
        jsr_status_error(r, status, msg);
    } else {
        json_t *j = js_stream_info_json(info, jsr_wall_ns());
        if (r->did_create) json_object_set_new(j, "did_create", json_true());
        /* An update is committed by the meta group before the stream's own replicas apply it,
         * so the info read right after it may still show the old values of what changed: the
         * reply shows the committed ones. */
        if (r->patch) json_object_update_existing(json_object_get(j, "config"), r->patch);
        jsr_send_json(r->s, r->reply, r->type, j);
    }
    jsr_free(r);
}

/* Create and update answer with the stream's info, read once the change is committed. */
static void on_changed(void *arg, int status, const char *msg)
{
    req *r = arg;
    if (status) {
        jsr_status_error(r, status, msg);
        jsr_free(r);
        return;
    }
    if (!r->reply[0] || jr_stream_info_get(r->s->node, r->name, on_info, r) != 0) jsr_free(r);
}

/* A create answers did_create only when this request created the stream: the same config again
 * gets the same info without it. */
static void on_created(void *arg, int status, const char *msg, int created)
{
    req *r = arg;
    r->did_create = created != 0;
    on_changed(arg, status, msg);
}

static void stream_change(req *r, const void *data, size_t len, int update)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    js_stream_cfg cfg;
    int code, err_code;
    char desc[400];
    if (js_stream_cfg_parse(j, &cfg, &code, &err_code, desc, sizeof desc)) {
        jsr_send_error(r->s, r->reply, r->type, code, err_code, desc);
        goto out;
    }
    if (cfg.c.name && strcmp(cfg.c.name, r->name)) {
        jsr_send_error(r->s, r->reply, r->type, 400, 10056,
                       "stream name in subject does not match request");
        goto out;
    }
    cfg.c.name = r->name;
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
                    : jr_stream_create(r->s->node, &cfg.c, on_created, r);
    if (rc) {
        jsr_status_error(r, rc, NULL);
        goto out;
    }
    r = NULL; /* the callback owns it */
out:
    js_stream_cfg_free(&cfg);
    json_decref(j);
    jsr_free(r);
}

/* ---- stream info with details ---------------------------------------------------------------- */

/* At most this many subjects in one info reply, as nats-server (JSMaxSubjectDetails): a client
 * asks again from an offset for more. */
#define SUBJECTS_MAX 100000
/* At most this many deleted seqs in one info reply (JetStream lists them all; a stream with
 * more interior deletes than this lists the first ones, num_deleted counts them all). */
#define DELETED_MAX 100000

/* A STREAM.INFO asking for subjects_filter or deleted_details: the info, then the subjects
 * page by page from the asked offset, then the deleted ranges expanded to seqs, then one reply. */
typedef struct info_details {
    req *r;
    json_t *info;
    char *filter;     /* NULL: no subjects asked */
    uint64_t offset;  /* the asked offset */
    uint64_t total;   /* subjects the filter matches */
    json_t *subjects; /* subject -> messages */
    int deleted;      /* deleted_details */
    json_t *dels;     /* the deleted seqs */
} info_details;

static void details_free(info_details *d)
{
    json_decref(d->info);
    json_decref(d->subjects);
    json_decref(d->dels);
    free(d->filter);
    jsr_free(d->r);
    free(d);
}

static void details_fail(info_details *d, int status, const char *msg)
{
    jsr_status_error(d->r, status, msg);
    details_free(d);
}

static void details_finish(info_details *d)
{
    json_t *state = json_object_get(d->info, "state");
    if (d->filter && d->total) {
        json_object_set(state, "subjects", d->subjects);
        json_object_set_new(d->info, "total", json_integer((json_int_t)d->total));
        json_object_set_new(d->info, "offset", json_integer((json_int_t)d->offset));
        json_object_set_new(d->info, "limit", json_integer(SUBJECTS_MAX));
    }
    if (d->deleted && json_array_size(d->dels)) json_object_set(state, "deleted", d->dels);
    jsr_send_json(d->r->s, d->r->reply, d->r->type, d->info);
    d->info = NULL; /* sent (stolen) */
    details_free(d);
}

static void on_deleted(void *arg, int status, const char *msg, const jr_deleted_page *page);

static void next_deleted(info_details *d, uint64_t after)
{
    int rc = jr_stream_deleted(d->r->s->node, d->r->name, after, on_deleted, d);
    if (rc) details_fail(d, JR_ECLOSED, NULL);
}

static void on_deleted(void *arg, int status, const char *msg, const jr_deleted_page *page)
{
    info_details *d = arg;
    if (status) {
        details_fail(d, status, msg);
        return;
    }
    uint64_t last = 0;
    for (size_t i = 0; i < page->nranges && json_array_size(d->dels) < DELETED_MAX; i++) {
        for (uint64_t q = page->ranges[i].first;
             q <= page->ranges[i].last && json_array_size(d->dels) < DELETED_MAX; q++)
            json_array_append_new(d->dels, json_integer((json_int_t)q));
        last = page->ranges[i].last;
    }
    if (page->nranges && json_array_size(d->dels) < DELETED_MAX)
        next_deleted(d, last);
    else
        details_finish(d);
}

static void after_subjects(info_details *d)
{
    if (d->deleted)
        next_deleted(d, 0);
    else
        details_finish(d);
}

static void on_subjects(void *arg, int status, const char *msg, const jr_subjects_page *page);

static void next_subjects(info_details *d, uint64_t offset)
{
    int rc = jr_stream_subjects(d->r->s->node, d->r->name, d->filter, offset, on_subjects, d);
    if (rc) details_fail(d, JR_ECLOSED, NULL);
}

static void on_subjects(void *arg, int status, const char *msg, const jr_subjects_page *page)
{
    info_details *d = arg;
    if (status) {
        details_fail(d, status, msg);
        return;
    }
    d->total = page->total;
    for (size_t i = 0; i < page->nsubjects && json_object_size(d->subjects) < SUBJECTS_MAX; i++)
        json_object_set_new(d->subjects, page->subjects[i].subject,
                            json_integer((json_int_t)page->subjects[i].msgs));
    uint64_t next = page->offset + page->nsubjects;
    if (page->nsubjects && next < page->total && json_object_size(d->subjects) < SUBJECTS_MAX)
        next_subjects(d, next);
    else
        after_subjects(d);
}

static void on_info_details(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    info_details *d = arg;
    if (status) {
        details_fail(d, status, msg);
        return;
    }
    d->info = js_stream_info_json(info, jsr_wall_ns());
    if (d->filter)
        next_subjects(d, d->offset);
    else
        after_subjects(d);
}

/* STREAM.INFO: the info alone, or with the details its body asks for. */
static void stream_info(req *r, const void *data, size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    json_t *f = json_object_get(j, "subjects_filter"), *dd = json_object_get(j, "deleted_details");
    const char *filter = json_is_string(f) && json_string_length(f) ? json_string_value(f) : NULL;
    int deleted = json_is_true(dd);
    if (!filter && !deleted) {
        json_decref(j);
        if (jr_stream_info_get(r->s->node, r->name, on_info, r) != 0) {
            jsr_status_error(r, JR_ECLOSED, NULL);
            jsr_free(r);
        }
        return;
    }
    info_details *d = calloc(1, sizeof *d);
    if (d) {
        d->r = r;
        d->filter = filter ? strdup(filter) : NULL;
        d->offset = jsr_offset(j);
        d->deleted = deleted;
        d->subjects = json_object();
        d->dels = json_array();
    }
    json_decref(j);
    if (!d || (filter && !d->filter) || !d->subjects || !d->dels) {
        if (d) {
            d->r = NULL;
            details_free(d);
        }
        jsr_status_error(r, JR_ENOMEM, NULL);
        jsr_free(r);
        return;
    }
    int rc = jr_stream_info_get(r->s->node, r->name, on_info_details, d);
    if (rc) details_fail(d, JR_ECLOSED, NULL); /* as a plain info that could not start */
}

/* ---- names and list ------------------------------------------------------------------------- */

static void on_names(void *arg, int status, const char *msg, const jr_names *page)
{
    jsr_names_reply(arg, status, msg, page, "streams", 1);
}

static void on_list(void *arg, int status, const char *msg, const jr_stream_page *page)
{
    req *r = arg;
    if (status) {
        jsr_status_error(r, status, msg);
    } else {
        json_t *j = jsr_page_json(page->total, page->offset, page->limit);
        json_t *a = json_array();
        uint64_t now = jsr_wall_ns();
        for (size_t i = 0; i < page->nstreams; i++)
            json_array_append_new(a, js_stream_info_json(page->streams[i], now));
        json_object_set_new(j, "streams", a);
        jsr_set_missing(j, page->missing, page->nmissing);
        jsr_send_json(r->s, r->reply, r->type, j);
    }
    jsr_free(r);
}

static void names_or_list(req *r, const void *data, size_t len, int list)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    json_t *sv = json_object_get(j, "subject");
    const char *subject =
        json_is_string(sv) && json_string_length(sv) ? json_string_value(sv) : NULL;
    uint64_t off = jsr_offset(j);
    int rc = list ? jr_stream_list(r->s->node, subject, off, on_list, r)
                  : jr_stream_names(r->s->node, subject, off, on_names, r);
    json_decref(j);
    jsr_fail(r, rc);
}

/* ---- purge, messages, stepdown -------------------------------------------------------------- */

static void on_purged(void *arg, int status, const char *msg, uint64_t purged)
{
    req *r = arg;
    if (status) {
        jsr_status_error(r, status, msg);
    } else {
        json_t *j = json_object();
        json_object_set_new(j, "success", json_true());
        json_object_set_new(j, "purged", json_integer((json_int_t)purged));
        jsr_send_json(r->s, r->reply, r->type, j);
    }
    jsr_free(r);
}

static void purge(req *r, const void *data, size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
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
    jsr_fail(r, rc);
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
        jsr_status_error(r, status, msg);
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
        jsr_send_json(r->s, r->reply, r->type, j);
    }
    jsr_free(r);
}

static void msg_get(req *r, const void *data, size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    json_t *seq = json_object_get(j, "seq"), *last = json_object_get(j, "last_by_subj"),
           *next = json_object_get(j, "next_by_subj");
    int rc;
    if (json_is_string(last) && json_string_length(last)) {
        rc = jr_stream_get_last(r->s->node, r->name, json_string_value(last), on_msg, r);
    } else if (json_is_string(next) && json_string_length(next)) {
        /* the first message at or after seq on a subject, read at the leader */
        uint64_t from = json_is_integer(seq) && json_integer_value(seq) > 0
                            ? (uint64_t)json_integer_value(seq)
                            : 1;
        rc = jr_stream_get_next(r->s->node, r->name, from, json_string_value(next), on_msg, r);
    } else if (json_is_integer(seq) && json_integer_value(seq) > 0) {
        rc = jr_stream_msg_get(r->s->node, r->name, (uint64_t)json_integer_value(seq), on_msg, r);
    } else {
        jsr_send_error(r->s, r->reply, r->type, 400, 10003, "bad request");
        json_decref(j);
        jsr_free(r);
        return;
    }
    json_decref(j);
    jsr_fail(r, rc);
}

static void msg_delete(req *r, const void *data, size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    json_t *seq = json_object_get(j, "seq");
    int no_erase = json_is_true(json_object_get(j, "no_erase"));
    int rc;
    if (!json_is_integer(seq) || json_integer_value(seq) <= 0) {
        jsr_send_error(r->s, r->reply, r->type, 400, 10003, "bad request");
        json_decref(j);
        jsr_free(r);
        return;
    }
    rc = jr_stream_msg_delete(r->s->node, r->name, (uint64_t)json_integer_value(seq), !no_erase,
                              jsr_done, r);
    json_decref(j);
    jsr_fail(r, rc);
}

static void stepdown(req *r, const void *data, size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    const char *peer = jsr_preferred(j);
    int rc = jr_stream_stepdown(r->s->node, r->name, peer, jsr_done, r);
    json_decref(j);
    jsr_fail(r, rc);
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
    jsr_free(r);
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
            jsr_free(r);
            return;
        }
    }
    int rc = jr_stream_direct_get(r->s->node, r->name, seq, subject, on_direct, r);
    json_decref(j);
    if (rc) {
        direct_status(r, "503");
        jsr_free(r);
    }
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

int jsapi_stream(server *s, const char *api, const char *reply, const void *data, size_t len)
{
    if (!strncmp(api, "DIRECT.GET.", 11)) {
        const char *name = api + 11, *dot = strchr(name, '.');
        size_t nl = dot ? (size_t)(dot - name) : strlen(name);
        char sname[JR_STREAM_NAME_MAX + 1];
        if (nl == 0 || nl > JR_STREAM_NAME_MAX) return 1;
        memcpy(sname, name, nl);
        sname[nl] = 0;
        req *r = jsr_new(s, reply, 'g', "", sname);
        if (r) direct_get(r, dot ? dot + 1 : NULL, data, len);
        return 1;
    }
    if (!strcmp(api, "STREAM.NAMES") || !strcmp(api, "STREAM.LIST")) {
        int list = api[7] == 'L';
        req *r =
            jsr_new(s, reply, 'n', list ? "stream_list_response" : "stream_names_response", NULL);
        if (r) names_or_list(r, data, len, list);
        return 1;
    }
    for (size_t i = 0; i < sizeof stream_apis / sizeof *stream_apis; i++) {
        size_t pl = strlen(stream_apis[i].prefix);
        if (strncmp(api, stream_apis[i].prefix, pl)) continue;
        const char *name = api + pl;
        if (!*name || strchr(name, '.') || strlen(name) > JR_STREAM_NAME_MAX) {
            jsr_send_error(s, reply, stream_apis[i].type, 400, 10003, "bad request");
            return 1;
        }
        req *r = jsr_new(s, reply, stream_apis[i].op, stream_apis[i].type, name);
        if (!r) return 1;
        switch (stream_apis[i].op) {
        case 'c':
        case 'u':
            stream_change(r, data, len, stream_apis[i].op == 'u');
            return 1;
        case 'd':
            if (jr_stream_delete(s->node, name, jsr_done, r) != 0) {
                jsr_status_error(r, JR_ECLOSED, NULL);
                jsr_free(r);
            }
            return 1;
        case 'i':
            stream_info(r, data, len);
            return 1;
        case 'p':
            purge(r, data, len);
            return 1;
        case 'g':
            msg_get(r, data, len);
            return 1;
        case 'x':
            msg_delete(r, data, len);
            return 1;
        case 's':
            stepdown(r, data, len);
            return 1;
        }
    }
    return 0;
}
