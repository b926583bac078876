/*
 * jsjson.c — JetStream's stream JSON (see jsjson.h).
 */
#include "jsjson.h"
#include "jsjson_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void js_time(char *buf, size_t len, uint64_t ns)
{
    if (ns == 0) {
        snprintf(buf, len, "0001-01-01T00:00:00Z");
        return;
    }
    time_t t = (time_t)(ns / 1000000000u);
    struct tm tm;
    gmtime_r(&t, &tm);
    char d[32];
    strftime(d, sizeof d, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%09" PRIu64 "Z", d, ns % 1000000000u);
}

json_t *js_error_json(int code, int err_code, const char *desc)
{
    return json_pack("{s:i,s:i,s:s}", "code", code, "err_code", err_code, "description", desc);
}

void jsj_set_err(int *code, int *err_code, char *desc, size_t desclen, int c, int e,
                 const char *text)
{
    *code = c;
    *err_code = e;
    snprintf(desc, desclen, "%s", text);
}

int jsj_unavailable(int status, int *code, int *err_code, char *desc, size_t desclen)
{
    switch (status) {
    case JR_ENOLEADER:
    case JR_ENOQUORUM:
    case JR_ETIMEDOUT:
    case JR_ELEADERLOST:
    case JR_ECLOSED:
    case JR_EDAMAGED:
        jsj_set_err(code, err_code, desc, desclen, 503, 10008,
                    "JetStream system temporarily unavailable");
        return 1;
    default:
        return 0;
    }
}

/* nats-server's words for the library's refusals of a stream update it has its own text for
 * ("storage: can not be changed"); any other message as the library gives it. */
static const char *update_text(const char *msg)
{
    static const struct {
        const char *lib, *nats;
    } texts[] = {
        {"storage: can not be changed", "stream configuration update can not change storage type"},
        {"max_consumers: can not be changed",
         "stream configuration update can not change max consumers"},
        {"retention: can not change from", "stream configuration update can not change retention "
                                           "policy to/from workqueue"},
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (!strncmp(msg, texts[i].lib, strlen(texts[i].lib))) return texts[i].nats;
    return msg;
}

void js_map_error(int status, const char *msg, int op, int *code, int *err_code, char *desc,
                  size_t desclen)
{
    char buf[600];
    msg = msg && *msg ? msg : jr_strerror(status);
    if (jsj_unavailable(status, code, err_code, desc, desclen)) return;
    switch (status) {
    case JR_ENOTFOUND:
        if (op == 's' && !strncmp(msg, "peer: '", 7)) {
            /* a step-down's preferred server: the library says "peer: 'NAME' is not ..." */
            const char *name = msg + 7, *end = strchr(name, '\'');
            int nl = end ? (int)(end - name) : (int)strlen(name);
            snprintf(buf, sizeof buf, "preferred server \"%.*s\" not known", nl, name);
            jsj_set_err(code, err_code, desc, desclen, 400, 10005, buf);
        } else if ((op == 'g' || op == 'x') && !strncmp(msg, "stream '", 8)) {
            jsj_set_err(code, err_code, desc, desclen, 404, 10059, "stream not found");
        } else if (op == 'g') {
            jsj_set_err(code, err_code, desc, desclen, 404, 10037, "no message found");
        } else if (op == 'x') { /* nats-server: the delete failed, and why */
            jsj_set_err(code, err_code, desc, desclen, 500, 10057, "no message found");
        } else
            jsj_set_err(code, err_code, desc, desclen, 404, 10059, "stream not found");
        return;
    case JR_EEXIST:
        jsj_set_err(code, err_code, desc, desclen, 400, 10058,
                    "stream name already in use with a different configuration");
        return;
    case JR_EINVAL:
        if (strstr(msg, "overlap"))
            jsj_set_err(code, err_code, desc, desclen, 400, 10065,
                        "subjects overlap with an existing stream");
        else if (op == 'c' || op == 'u')
            jsj_set_err(code, err_code, desc, desclen, 500, 10052, update_text(msg));
        else
            jsj_set_err(code, err_code, desc, desclen, 400, 10003, msg);
        return;
    case JR_ENORESOURCES:
        if (!strncmp(msg, "no suitable peers", 17))
            jsj_set_err(code, err_code, desc, desclen, 400, 10005, msg);
        else
            jsj_set_err(code, err_code, desc, desclen, 503, 10023, "insufficient resources");
        return;
    case JR_EBUSY:
        jsj_set_err(code, err_code, desc, desclen, 400, 10202,
                    "cluster member change is in progress");
        return;
    case JR_EMSGSIZE:
        jsj_set_err(code, err_code, desc, desclen, 400, 10054,
                    "message size exceeds maximum allowed");
        return;
    case JR_EWRONGSTREAM:
        jsj_set_err(code, err_code, desc, desclen, 400, 10060, "expected stream does not match");
        return;
    case JR_EWRONGLASTSEQ:
    case JR_EWRONGLASTSUBJSEQ:
        jsj_set_err(code, err_code, desc, desclen, 400, 10071, "wrong last sequence");
        return;
    case JR_ESEALED:
        jsj_set_err(code, err_code, desc, desclen, 400, 10109,
                    "invalid operation on sealed stream");
        return;
    case JR_EWRONGLASTMSGID:
        jsj_set_err(code, err_code, desc, desclen, 400, 10070, "wrong last msg ID");
        return;
    case JR_ELIMIT:
        snprintf(buf, sizeof buf, "%s", msg);
        jsj_set_err(code, err_code, desc, desclen, 503, 10077, buf);
        return;
    case JR_ENOTVOTER:
    case JR_ETRANSFER:
        jsj_set_err(code, err_code, desc, desclen, 500, 10041, msg);
        return;
    default:
        if (op == 's')
            jsj_set_err(code, err_code, desc, desclen, 500, 10041, msg);
        else if (op == 'x')
            jsj_set_err(code, err_code, desc, desclen, 500, 10057, msg);
        else
            jsj_set_err(code, err_code, desc, desclen, 500, 10051, msg);
        return;
    }
}

int jsj_bad(int *code, int *err_code, char *desc, size_t desclen, const char *field,
            const char *what)
{
    *code = 400;
    *err_code = 10025;
    snprintf(desc, desclen, "invalid JSON: %s %s", field, what);
    return -1;
}

/* Reads an optional integer field; absent or null leaves *out unchanged. */
int jsj_int(json_t *j, const char *f, int64_t *out, int *code, int *err_code, char *desc, size_t dl)
{
    json_t *v = json_object_get(j, f);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) return jsj_bad(code, err_code, desc, dl, f, "must be an integer");
    *out = (int64_t)json_integer_value(v);
    return 0;
}

int jsj_bool(json_t *j, const char *f, int *out, int *code, int *err_code, char *desc, size_t dl)
{
    json_t *v = json_object_get(j, f);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return jsj_bad(code, err_code, desc, dl, f, "must be a boolean");
    *out = json_is_true(v);
    return 0;
}

/* An enum given as a string among names (index = value). */
int jsj_enum(json_t *j, const char *f, const char *const *names, int n, int *out, int *code,
             int *err_code, char *desc, size_t dl)
{
    json_t *v = json_object_get(j, f);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_string(v)) return jsj_bad(code, err_code, desc, dl, f, "must be a string");
    for (int i = 0; i < n; i++)
        if (names[i] && !strcmp(json_string_value(v), names[i])) {
            *out = i;
            return 0;
        }
    return jsj_bad(code, err_code, desc, dl, f, "has an unknown value");
}

static const char *const retention_names[] = {"limits", "interest", "workqueue"};
static const char *const discard_names[] = {"old", "new"};
static const char *const storage_names[] = {"file", "memory"};
/* JetStream compresses with s2; this server's stores compress with lz4 under the same switch. */
static const char *const compression_names[] = {"none", "s2"};

int js_stream_cfg_parse(json_t *j, js_stream_cfg *o, int *code, int *err_code, char *desc,
                        size_t dl)
{
    memset(o, 0, sizeof *o);
    jr_stream_config_init(&o->c);
    if (!json_is_object(j))
        return jsj_bad(code, err_code, desc, dl, "request", "must be an object");
    static const char *const unsupported[] = {"mirror", "sources", "republish",
                                              "subject_transform"};
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
        json_t *v = json_object_get(j, unsupported[i]);
        if (v && !json_is_null(v) && !(json_is_array(v) && json_array_size(v) == 0)) {
            *code = 400;
            *err_code = 10003;
            snprintf(desc, dl, "%s is not supported by this server", unsupported[i]);
            return -1;
        }
    }
    json_t *v = json_object_get(j, "name");
    if (v && !json_is_string(v))
        return jsj_bad(code, err_code, desc, dl, "name", "must be a string");
    o->c.name = v ? json_string_value(v) : NULL;
    v = json_object_get(j, "description");
    if (v && json_is_string(v)) o->c.description = json_string_value(v);
    v = json_object_get(j, "subjects");
    if (v && !json_is_null(v)) {
        if (!json_is_array(v))
            return jsj_bad(code, err_code, desc, dl, "subjects", "must be an array");
        size_t n = json_array_size(v);
        o->subjects = calloc(n ? n : 1, sizeof *o->subjects);
        if (!o->subjects) return jsj_bad(code, err_code, desc, dl, "subjects", "out of memory");
        for (size_t i = 0; i < n; i++) {
            json_t *s = json_array_get(v, i);
            if (!json_is_string(s))
                return jsj_bad(code, err_code, desc, dl, "subjects", "must hold strings");
            o->subjects[i] = json_string_value(s);
        }
        if (n) {
            o->c.subjects = o->subjects;
            o->c.nsubjects = n;
        }
    }
    int64_t i64;
    uint64_t ns;
    if (jsj_enum(j, "retention", retention_names, 3, &o->c.retention, code, err_code, desc, dl) ||
        jsj_enum(j, "discard", discard_names, 2, &o->c.discard, code, err_code, desc, dl) ||
        jsj_enum(j, "storage", storage_names, 2, &o->c.storage, code, err_code, desc, dl) ||
        jsj_enum(j, "compression", compression_names, 2, &o->c.compression, code, err_code, desc,
                 dl) ||
        jsj_int(j, "max_consumers", &o->c.max_consumers, code, err_code, desc, dl) ||
        jsj_int(j, "max_msgs", &o->c.max_msgs, code, err_code, desc, dl) ||
        jsj_int(j, "max_bytes", &o->c.max_bytes, code, err_code, desc, dl) ||
        jsj_int(j, "max_msgs_per_subject", &o->c.max_msgs_per_subject, code, err_code, desc, dl))
        return -1;
    i64 = o->c.max_msg_size;
    if (jsj_int(j, "max_msg_size", &i64, code, err_code, desc, dl)) return -1;
    if (i64 < INT32_MIN || i64 > INT32_MAX)
        return jsj_bad(code, err_code, desc, dl, "max_msg_size", "is out of range");
    o->c.max_msg_size = (int32_t)i64;
    /* JetStream writes 0 for "no limit" in these two as nats.c sends them. */
    if (o->c.max_msgs_per_subject == 0) o->c.max_msgs_per_subject = -1;
    if (o->c.max_msg_size == 0) o->c.max_msg_size = -1;
    i64 = 0;
    if (jsj_int(j, "max_age", &i64, code, err_code, desc, dl)) return -1;
    if (i64 < 0) return jsj_bad(code, err_code, desc, dl, "max_age", "must not be negative");
    o->c.max_age_ns = (uint64_t)i64;
    i64 = 0;
    if (jsj_int(j, "duplicate_window", &i64, code, err_code, desc, dl)) return -1;
    if (i64 < 0)
        return jsj_bad(code, err_code, desc, dl, "duplicate_window", "must not be negative");
    ns = (uint64_t)i64;
    o->c.duplicate_window_ns = ns;
    i64 = 1;
    if (jsj_int(j, "num_replicas", &i64, code, err_code, desc, dl)) return -1;
    if (i64 == 0) i64 = 1;
    if (i64 < 0 || i64 > 1000)
        return jsj_bad(code, err_code, desc, dl, "num_replicas", "is out of range");
    o->c.replicas = (int)i64;
    if (jsj_bool(j, "sealed", &o->c.sealed, code, err_code, desc, dl) ||
        jsj_bool(j, "deny_delete", &o->c.deny_delete, code, err_code, desc, dl) ||
        jsj_bool(j, "deny_purge", &o->c.deny_purge, code, err_code, desc, dl) ||
        jsj_bool(j, "allow_rollup_hdrs", &o->c.allow_rollup, code, err_code, desc, dl) ||
        jsj_bool(j, "allow_direct", &o->c.allow_direct, code, err_code, desc, dl))
        return -1;
    v = json_object_get(j, "placement");
    if (v && !json_is_null(v)) {
        if (!json_is_object(v))
            return jsj_bad(code, err_code, desc, dl, "placement", "must be an object");
        jr_placement_init(&o->placement);
        json_t *cl = json_object_get(v, "cluster");
        if (cl && json_is_string(cl) && json_string_length(cl)) {
            o->placement.cluster = json_string_value(cl);
        } else if (cl && !json_is_null(cl) && !json_is_string(cl)) {
            return jsj_bad(code, err_code, desc, dl, "placement.cluster", "must be a string");
        }
        json_t *tags = json_object_get(v, "tags");
        if (tags && !json_is_null(tags)) {
            if (!json_is_array(tags))
                return jsj_bad(code, err_code, desc, dl, "placement.tags", "must be an array");
            size_t n = json_array_size(tags);
            o->tags = calloc(n ? n : 1, sizeof *o->tags);
            if (!o->tags) return jsj_bad(code, err_code, desc, dl, "placement", "out of memory");
            for (size_t i = 0; i < n; i++) {
                json_t *t = json_array_get(tags, i);
                if (!json_is_string(t))
                    return jsj_bad(code, err_code, desc, dl, "placement.tags", "must hold strings");
                o->tags[i] = json_string_value(t);
            }
            o->placement.tags = o->tags;
            o->placement.ntags = n;
        }
        if (o->placement.cluster || o->placement.ntags) o->c.placement = &o->placement;
    }
    v = json_object_get(j, "metadata");
    if (v && json_is_object(v) && json_object_size(v)) {
        size_t n = json_object_size(v), i = 0;
        o->metadata = calloc(n, sizeof *o->metadata);
        if (!o->metadata) return jsj_bad(code, err_code, desc, dl, "metadata", "out of memory");
        const char *k;
        json_t *mv;
        json_object_foreach(v, k, mv)
        {
            if (!json_is_string(mv))
                return jsj_bad(code, err_code, desc, dl, "metadata", "values must be strings");
            o->metadata[i].key = k;
            o->metadata[i].value = json_string_value(mv);
            i++;
        }
        o->c.metadata = o->metadata;
        o->c.nmetadata = n;
    }
    return 0;
}

void js_stream_cfg_free(js_stream_cfg *o)
{
    free(o->subjects);
    free(o->tags);
    free(o->metadata);
    memset(o, 0, sizeof *o);
}

json_t *js_stream_config_json(const jr_stream_config *c)
{
    json_t *j = json_object();
    json_t *subs = json_array();
    for (size_t i = 0; i < c->nsubjects; i++)
        json_array_append_new(subs, json_string(c->subjects[i]));
    json_object_set_new(j, "name", json_string(c->name));
    if (c->description && *c->description)
        json_object_set_new(j, "description", json_string(c->description));
    json_object_set_new(j, "subjects", subs);
    json_object_set_new(j, "retention", json_string(retention_names[c->retention % 3]));
    json_object_set_new(j, "max_consumers", json_integer(c->max_consumers));
    json_object_set_new(j, "max_msgs", json_integer(c->max_msgs));
    json_object_set_new(j, "max_bytes", json_integer(c->max_bytes));
    json_object_set_new(j, "max_age", json_integer((json_int_t)c->max_age_ns));
    json_object_set_new(j, "max_msgs_per_subject", json_integer(c->max_msgs_per_subject));
    json_object_set_new(j, "max_msg_size", json_integer(c->max_msg_size));
    json_object_set_new(j, "discard", json_string(discard_names[c->discard % 2]));
    json_object_set_new(j, "storage", json_string(storage_names[c->storage % 2]));
    json_object_set_new(j, "num_replicas", json_integer(c->replicas));
    json_object_set_new(j, "duplicate_window", json_integer((json_int_t)c->duplicate_window_ns));
    json_object_set_new(j, "compression", json_string(compression_names[c->compression % 2]));
    if (c->placement && (c->placement->cluster || c->placement->ntags)) {
        json_t *p = json_object();
        if (c->placement->cluster)
            json_object_set_new(p, "cluster", json_string(c->placement->cluster));
        if (c->placement->ntags) {
            json_t *t = json_array();
            for (size_t i = 0; i < c->placement->ntags; i++)
                json_array_append_new(t, json_string(c->placement->tags[i]));
            json_object_set_new(p, "tags", t);
        }
        json_object_set_new(j, "placement", p);
    }
    json_object_set_new(j, "sealed", json_boolean(c->sealed));
    json_object_set_new(j, "deny_delete", json_boolean(c->deny_delete));
    json_object_set_new(j, "deny_purge", json_boolean(c->deny_purge));
    json_object_set_new(j, "allow_rollup_hdrs", json_boolean(c->allow_rollup));
    json_object_set_new(j, "allow_direct", json_boolean(c->allow_direct));
    json_object_set_new(j, "mirror_direct", json_false());
    if (c->nmetadata) {
        json_t *m = json_object();
        for (size_t i = 0; i < c->nmetadata; i++)
            json_object_set_new(m, c->metadata[i].key, json_string(c->metadata[i].value));
        json_object_set_new(j, "metadata", m);
    }
    return j;
}

json_t *js_time_json(uint64_t ns)
{
    char buf[48];
    js_time(buf, sizeof buf, ns);
    return json_string(buf);
}

static json_t *peer_names_json(const char *const *names, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:s,s:s}", "name", names[i], "peer", names[i]));
    return a;
}

/* JetStream 2.15's "desired" block of a peer change in progress: the group, the peer set it
 * converges to, where it started (origin: its replica count and peers; absent when not
 * recorded) and what it waits on (status). */
static json_t *desired_json(const jr_cluster_info *ci)
{
    static const char *const types[] = {"",        "meta",   "membership", "snapshot",
                                        "catchup", "quorum", "blocked",    "unavailable"};
    const jr_move_info *m = ci->move;
    json_t *d = json_object();
    json_object_set_new(d, "name", json_string(ci->group ? ci->group : ""));
    if (m->ntarget) json_object_set_new(d, "replicas", peer_names_json(m->target, m->ntarget));
    if (m->norigin)
        json_object_set_new(d, "origin",
                            json_pack("{s:I,s:o}", "replicas", (json_int_t)m->norigin, "peers",
                                      peer_names_json(m->origin, m->norigin)));
    json_t *st = json_pack(
        "{s:s,s:s}", "description", m->description ? m->description : "", "type",
        m->status > 0 && m->status < (int)(sizeof types / sizeof *types) ? types[m->status] : "");
    if (m->error) json_object_set_new(st, "err", json_string(m->error));
    json_object_set_new(d, "status", st);
    return d;
}

json_t *js_cluster_json(const jr_cluster_info *ci)
{
    json_t *c = json_object();
    json_object_set_new(c, "name", json_string(ci->name ? ci->name : ""));
    if (ci->group) json_object_set_new(c, "raft_group", json_string(ci->group));
    if (ci->leader) json_object_set_new(c, "leader", json_string(ci->leader));
    if (ci->nreplicas) {
        json_t *r = json_array();
        for (size_t i = 0; i < ci->nreplicas; i++) {
            const jr_peer_info *p = ci->replicas[i];
            json_t *pj = json_object();
            json_object_set_new(pj, "name", json_string(p->name));
            json_object_set_new(pj, "current", json_boolean(p->current));
            if (p->offline) json_object_set_new(pj, "offline", json_true());
            /* not heard from since this leader's election: no time to give (0 would read as
             * "seen just now") */
            if (p->active_ns != UINT64_MAX)
                json_object_set_new(pj, "active", json_integer((json_int_t)p->active_ns));
            if (p->lag) json_object_set_new(pj, "lag", json_integer((json_int_t)p->lag));
            if (p->observer) json_object_set_new(pj, "observer", json_true());
            json_object_set_new(pj, "peer", json_string(p->name));
            if (p->pending) json_object_set_new(pj, "pending", json_true());
            /* jetraft's own: a replica that lost data and waits for repair (damaged), one
             * restarted whose storage no peer has vouched for yet (unvouched), one whose state
             * machine failed or is being rebuilt (its log is whole). nats' fields show each only
             * as not current. Left out when false; nats clients skip fields they do not know. */
            if (p->damaged) json_object_set_new(pj, "damaged", json_true());
            if (p->unvouched) json_object_set_new(pj, "unvouched", json_true());
            if (p->fsm_failed) {
                json_object_set_new(pj, "fsm_failed", json_true());
                if (p->fsm_rebuilding) json_object_set_new(pj, "fsm_rebuilding", json_true());
            }
            json_array_append_new(r, pj);
        }
        json_object_set_new(c, "replicas", r);
    }
    if (ci->move) json_object_set_new(c, "desired", desired_json(ci));
    return c;
}

json_t *js_stream_info_json(const jr_stream_info *info, uint64_t now_ns)
{
    json_t *j = json_object();
    json_object_set_new(j, "config", js_stream_config_json(info->config));
    json_object_set_new(j, "created", js_time_json(info->created_ns));
    const jr_stream_state *st = info->state;
    json_t *s = json_object();
    json_object_set_new(s, "messages", json_integer((json_int_t)st->msgs));
    json_object_set_new(s, "bytes", json_integer((json_int_t)st->bytes));
    /* a stream that never held a message starts at 0, as in nats-server */
    json_object_set_new(s, "first_seq",
                        json_integer((json_int_t)(st->last_seq ? st->first_seq : 0)));
    json_object_set_new(s, "first_ts", js_time_json(st->first_ts));
    json_object_set_new(s, "last_seq", json_integer((json_int_t)st->last_seq));
    json_object_set_new(s, "last_ts", js_time_json(st->last_ts));
    if (st->num_subjects)
        json_object_set_new(s, "num_subjects", json_integer((json_int_t)st->num_subjects));
    if (st->num_deleted)
        json_object_set_new(s, "num_deleted", json_integer((json_int_t)st->num_deleted));
    json_object_set_new(s, "consumer_count", json_integer((json_int_t)st->consumers));
    json_object_set_new(j, "state", s);
    if (info->cluster) json_object_set_new(j, "cluster", js_cluster_json(info->cluster));
    json_object_set_new(j, "ts", js_time_json(now_ns));
    return j;
}
