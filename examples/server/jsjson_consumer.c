/*
 * jsjson_consumer.c — JetStream's consumer JSON and the text consumers' clients send: pull
 * requests, ack payloads, ack subjects (see jsjson.h).
 */
#include "jsjson.h"
#include "jsjson_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- times and durations -------------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Reads exactly n digits at *p. */
static int digits(const char **p, int n, int64_t *out)
{
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

int js_parse_time(const char *s, uint64_t *ns)
{
    int64_t Y, M, D, h, mi, se, frac = 0, off = 0;
    const char *p = s;
    if (!s || strlen(s) < 20) return -1;
    if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' || digits(&p, 2, &D))
        return -1;
    if (*p != 'T' && *p != 't') return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' || digits(&p, 2, &se))
        return -1;
    if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || mi > 59 || se > 60) return -1;
    if (*p == '.') {
        p++;
        int n = 0;
        while (*p >= '0' && *p <= '9') {
            if (n < 9) frac = frac * 10 + (*p - '0');
            n++;
            p++;
        }
        if (n == 0) return -1;
        for (; n < 9; n++) frac *= 10;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int neg = *p++ == '-';
        int64_t oh, om;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
            return -1;
        off = (oh * 60 + om) * 60 * (neg ? -1 : 1);
    } else {
        return -1;
    }
    if (*p) return -1;
    int64_t secs = days_from_civil(Y, M, D) * 86400 + h * 3600 + mi * 60 + se - off;
    if (secs <= 0) { /* the zero time (year 1) and anything before the epoch: none */
        *ns = 0;
        return 0;
    }
    if (secs > INT64_MAX / 1000000000 - 1) return -1;
    *ns = (uint64_t)secs * 1000000000u + (uint64_t)frac;
    return 0;
}

int js_parse_duration(const char *s, size_t len, int64_t *ns)
{
    static const struct {
        const char *unit;
        int64_t ns;
    } units[] = {{"ns", 1},         {"us", 1000},       {"\xc2\xb5s", 1000}, {"ms", 1000000},
                 {"s", 1000000000}, {"m", 60000000000}, {"h", 3600000000000}};
    const char *p = s, *end = s + len;
    double total = 0;
    if (len == 0) return -1;
    if (len == 1 && *p == '0') {
        *ns = 0;
        return 0;
    }
    while (p < end) {
        double v = 0, scale = 1;
        int any = 0;
        while (p < end && *p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0'), any = 1;
        if (p < end && *p == '.') {
            p++;
            while (p < end && *p >= '0' && *p <= '9') {
                scale /= 10;
                v += (*p++ - '0') * scale;
                any = 1;
            }
        }
        if (!any) return -1;
        size_t best = 0;
        int64_t mult = 0;
        for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
            size_t ul = strlen(units[i].unit);
            /* the longest unit that matches: "ms" rather than "m" */
            if (ul > best && (size_t)(end - p) >= ul && !memcmp(p, units[i].unit, ul)) {
                best = ul;
                mult = units[i].ns;
            }
        }
        if (!best) return -1;
        p += best;
        total += v * (double)mult;
        if (total > 9.2e18) return -1;
    }
    *ns = (int64_t)total;
    return 0;
}

/* ---- ConsumerConfig in ---------------------------------------------------------------------- */

static const char *const deliver_names[] = {
    "all", "last", "new", "by_start_sequence", "by_start_time", "last_per_subject"};
static const char *const ack_names[] = {"none", "all", "explicit"};
static const char *const replay_names[] = {"instant", "original"};
static const char *const priority_names[] = {"none", "overflow", "pinned_client", "prioritized"};

#define ERR code, err_code, desc, dl

static int get_uint(json_t *j, const char *f, uint64_t *out, int *code, int *err_code, char *desc,
                    size_t dl)
{
    int64_t v = 0;
    if (jsj_int(j, f, &v, ERR)) return -1;
    if (v < 0) return jsj_bad(ERR, f, "must not be negative");
    if (json_object_get(j, f)) *out = (uint64_t)v;
    return 0;
}

/* A string field; "" counts as absent (Go's omitempty zero value). */
static int get_str(json_t *j, const char *f, const char **out, int *code, int *err_code, char *desc,
                   size_t dl)
{
    json_t *v = json_object_get(j, f);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_string(v)) return jsj_bad(ERR, f, "must be a string");
    if (json_string_length(v)) *out = json_string_value(v);
    return 0;
}

static int get_time(json_t *j, const char *f, uint64_t *out, int *code, int *err_code, char *desc,
                    size_t dl)
{
    json_t *v = json_object_get(j, f);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_string(v) || js_parse_time(json_string_value(v), out))
        return jsj_bad(ERR, f, "must be an RFC 3339 time");
    return 0;
}

/* An array of strings (NULL entries are refused). */
static int get_strings(json_t *j, const char *f, const char ***arr, size_t *n, int *code,
                       int *err_code, char *desc, size_t dl)
{
    json_t *v = json_object_get(j, f);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_array(v)) return jsj_bad(ERR, f, "must be an array");
    size_t k = json_array_size(v);
    *arr = calloc(k ? k : 1, sizeof **arr);
    if (!*arr) return jsj_bad(ERR, f, "out of memory");
    for (size_t i = 0; i < k; i++) {
        json_t *s = json_array_get(v, i);
        if (!json_is_string(s)) return jsj_bad(ERR, f, "must hold strings");
        (*arr)[i] = json_string_value(s);
    }
    *n = k;
    return 0;
}

int js_consumer_cfg_parse(json_t *j, js_consumer_cfg *o, int *code, int *err_code, char *desc,
                          size_t dl)
{
    memset(o, 0, sizeof *o);
    jr_consumer_config_init(&o->c);
    jr_consumer_config *c = &o->c;
    if (!json_is_object(j)) return jsj_bad(ERR, "config", "must be an object");
    c->ack_policy = JR_ACK_NONE; /* JetStream: a missing ack_policy is the zero value */
    if (get_str(j, "name", &c->name, ERR) || get_str(j, "durable_name", &c->durable_name, ERR) ||
        get_str(j, "description", &c->description, ERR) ||
        jsj_enum(j, "deliver_policy", deliver_names, 6, &c->deliver_policy, ERR) ||
        get_uint(j, "opt_start_seq", &c->opt_start_seq, ERR) ||
        get_time(j, "opt_start_time", &c->opt_start_time_ns, ERR) ||
        jsj_enum(j, "ack_policy", ack_names, 3, &c->ack_policy, ERR) ||
        jsj_int(j, "ack_wait", &c->ack_wait_ns, ERR) ||
        jsj_int(j, "max_deliver", &c->max_deliver, ERR) ||
        get_str(j, "filter_subject", &c->filter_subject, ERR) ||
        jsj_enum(j, "replay_policy", replay_names, 2, &c->replay_policy, ERR) ||
        get_uint(j, "rate_limit_bps", &c->rate_limit_bps, ERR) ||
        get_str(j, "sample_freq", &c->sample_freq, ERR) ||
        jsj_int(j, "max_waiting", &c->max_waiting, ERR) ||
        jsj_int(j, "max_ack_pending", &c->max_ack_pending, ERR) ||
        jsj_bool(j, "headers_only", &c->headers_only, ERR) ||
        jsj_int(j, "max_batch", &c->max_batch, ERR) ||
        jsj_int(j, "max_expires", &c->max_expires_ns, ERR) ||
        jsj_int(j, "max_bytes", &c->max_bytes, ERR) ||
        get_str(j, "deliver_subject", &c->deliver_subject, ERR) ||
        get_str(j, "deliver_group", &c->deliver_group, ERR) ||
        jsj_int(j, "idle_heartbeat", &c->idle_heartbeat_ns, ERR) ||
        jsj_bool(j, "flow_control", &c->flow_control, ERR) ||
        jsj_int(j, "inactive_threshold", &c->inactive_threshold_ns, ERR) ||
        jsj_bool(j, "mem_storage", &c->mem_storage, ERR) ||
        get_time(j, "pause_until", &c->pause_until_ns, ERR) ||
        jsj_enum(j, "priority_policy", priority_names, 4, &c->priority_policy, ERR) ||
        jsj_int(j, "priority_timeout", &c->priority_timeout_ns, ERR) ||
        get_strings(j, "filter_subjects", &o->filters, &c->nfilter_subjects, ERR) ||
        get_strings(j, "priority_groups", &o->groups, &c->npriority_groups, ERR))
        return -1;
    int64_t r = 0;
    if (jsj_int(j, "num_replicas", &r, ERR)) return -1;
    if (r < -1000 || r > 1000) return jsj_bad(ERR, "num_replicas", "is out of range");
    c->num_replicas = (int)r;
    if (c->nfilter_subjects) c->filter_subjects = o->filters;
    if (c->npriority_groups) c->priority_groups = o->groups;
    json_t *v = json_object_get(j, "backoff");
    if (v && !json_is_null(v)) {
        if (!json_is_array(v)) return jsj_bad(ERR, "backoff", "must be an array");
        size_t n = json_array_size(v);
        o->backoff = calloc(n ? n : 1, sizeof *o->backoff);
        if (!o->backoff) return jsj_bad(ERR, "backoff", "out of memory");
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(v, i);
            if (!json_is_integer(e)) return jsj_bad(ERR, "backoff", "must hold integers");
            o->backoff[i] = (int64_t)json_integer_value(e);
        }
        if (n) {
            c->backoff_ns = o->backoff;
            c->nbackoff = n;
        }
    }
    v = json_object_get(j, "metadata");
    if (v && !json_is_null(v)) {
        if (!json_is_object(v)) return jsj_bad(ERR, "metadata", "must be an object");
        size_t n = json_object_size(v), i = 0;
        o->metadata = calloc(n ? n : 1, sizeof *o->metadata);
        if (!o->metadata) return jsj_bad(ERR, "metadata", "out of memory");
        const char *k;
        json_t *mv;
        json_object_foreach(v, k, mv)
        {
            if (!json_is_string(mv)) return jsj_bad(ERR, "metadata", "values must be strings");
            o->metadata[i].key = k;
            o->metadata[i].value = json_string_value(mv);
            i++;
        }
        if (n) {
            c->metadata = o->metadata;
            c->nmetadata = n;
        }
    }
    return 0;
}

void js_consumer_cfg_free(js_consumer_cfg *o)
{
    free(o->filters);
    free(o->backoff);
    free(o->metadata);
    free(o->groups);
    memset(o, 0, sizeof *o);
}

/* ---- ConsumerConfig and ConsumerInfo out ---------------------------------------------------- */

static void set_int(json_t *j, const char *k, int64_t v)
{
    json_object_set_new(j, k, json_integer((json_int_t)v));
}

json_t *js_consumer_config_json(const jr_consumer_config *c)
{
    json_t *j = json_object();
    if (c->durable_name) json_object_set_new(j, "durable_name", json_string(c->durable_name));
    if (c->name) json_object_set_new(j, "name", json_string(c->name));
    if (c->description && *c->description)
        json_object_set_new(j, "description", json_string(c->description));
    json_object_set_new(j, "deliver_policy",
                        json_string(deliver_names[(unsigned)c->deliver_policy % 6]));
    if (c->opt_start_seq) set_int(j, "opt_start_seq", (int64_t)c->opt_start_seq);
    if (c->opt_start_time_ns)
        json_object_set_new(j, "opt_start_time", js_time_json(c->opt_start_time_ns));
    json_object_set_new(j, "ack_policy", json_string(ack_names[(unsigned)c->ack_policy % 3]));
    if (c->ack_wait_ns) set_int(j, "ack_wait", c->ack_wait_ns);
    if (c->max_deliver) set_int(j, "max_deliver", c->max_deliver);
    if (c->nbackoff) {
        json_t *a = json_array();
        for (size_t i = 0; i < c->nbackoff; i++)
            json_array_append_new(a, json_integer((json_int_t)c->backoff_ns[i]));
        json_object_set_new(j, "backoff", a);
    }
    if (c->filter_subject && *c->filter_subject)
        json_object_set_new(j, "filter_subject", json_string(c->filter_subject));
    if (c->nfilter_subjects) {
        json_t *a = json_array();
        for (size_t i = 0; i < c->nfilter_subjects; i++)
            json_array_append_new(a, json_string(c->filter_subjects[i]));
        json_object_set_new(j, "filter_subjects", a);
    }
    json_object_set_new(j, "replay_policy",
                        json_string(replay_names[(unsigned)c->replay_policy % 2]));
    if (c->rate_limit_bps) set_int(j, "rate_limit_bps", (int64_t)c->rate_limit_bps);
    if (c->sample_freq && *c->sample_freq)
        json_object_set_new(j, "sample_freq", json_string(c->sample_freq));
    if (c->max_waiting) set_int(j, "max_waiting", c->max_waiting);
    if (c->max_ack_pending) set_int(j, "max_ack_pending", c->max_ack_pending);
    if (c->idle_heartbeat_ns) set_int(j, "idle_heartbeat", c->idle_heartbeat_ns);
    if (c->flow_control) json_object_set_new(j, "flow_control", json_true());
    if (c->headers_only) json_object_set_new(j, "headers_only", json_true());
    if (c->max_batch) set_int(j, "max_batch", c->max_batch);
    if (c->max_expires_ns) set_int(j, "max_expires", c->max_expires_ns);
    if (c->max_bytes) set_int(j, "max_bytes", c->max_bytes);
    if (c->deliver_subject && *c->deliver_subject)
        json_object_set_new(j, "deliver_subject", json_string(c->deliver_subject));
    if (c->deliver_group && *c->deliver_group)
        json_object_set_new(j, "deliver_group", json_string(c->deliver_group));
    if (c->inactive_threshold_ns) set_int(j, "inactive_threshold", c->inactive_threshold_ns);
    set_int(j, "num_replicas", c->num_replicas);
    if (c->mem_storage) json_object_set_new(j, "mem_storage", json_true());
    if (c->nmetadata) {
        json_t *m = json_object();
        for (size_t i = 0; i < c->nmetadata; i++)
            json_object_set_new(m, c->metadata[i].key, json_string(c->metadata[i].value));
        json_object_set_new(j, "metadata", m);
    }
    if (c->pause_until_ns) json_object_set_new(j, "pause_until", js_time_json(c->pause_until_ns));
    if (c->npriority_groups) {
        json_t *a = json_array();
        for (size_t i = 0; i < c->npriority_groups; i++)
            json_array_append_new(a, json_string(c->priority_groups[i]));
        json_object_set_new(j, "priority_groups", a);
    }
    if (c->priority_policy)
        json_object_set_new(j, "priority_policy",
                            json_string(priority_names[(unsigned)c->priority_policy % 4]));
    if (c->priority_timeout_ns) set_int(j, "priority_timeout", c->priority_timeout_ns);
    return j;
}

static json_t *seq_json(const jr_consumer_seq *s)
{
    json_t *j = json_object();
    set_int(j, "consumer_seq", (int64_t)s->consumer_seq);
    set_int(j, "stream_seq", (int64_t)s->stream_seq);
    if (s->last_active_ns) json_object_set_new(j, "last_active", js_time_json(s->last_active_ns));
    return j;
}

json_t *js_consumer_info_json(const jr_consumer_info *info, uint64_t now_ns)
{
    json_t *j = json_object();
    json_object_set_new(j, "stream_name", json_string(info->stream));
    json_object_set_new(j, "name", json_string(info->name));
    json_object_set_new(j, "created", js_time_json(info->created_ns));
    if (info->config) json_object_set_new(j, "config", js_consumer_config_json(info->config));
    json_object_set_new(j, "delivered", seq_json(&info->delivered));
    json_object_set_new(j, "ack_floor", seq_json(&info->ack_floor));
    set_int(j, "num_ack_pending", (int64_t)info->num_ack_pending);
    set_int(j, "num_redelivered", (int64_t)info->num_redelivered);
    set_int(j, "num_waiting", (int64_t)info->num_waiting);
    set_int(j, "num_pending", (int64_t)info->num_pending);
    if (info->cluster) json_object_set_new(j, "cluster", js_cluster_json(info->cluster));
    if (info->config && info->config->pause_until_ns > now_ns) {
        json_object_set_new(j, "paused", json_true());
        set_int(j, "pause_remaining", (int64_t)(info->config->pause_until_ns - now_ns));
    }
    json_object_set_new(j, "ts", js_time_json(now_ns));
    return j;
}

/* ---- errors --------------------------------------------------------------------------------- */

/* The library's texts for a refused config and JetStream's codes for them (errors.json). */
static const struct {
    const char *prefix;
    int code, err_code;
} config_errors[] = {
    {"consumer name can not be updated", 500, 10012},
    {"deliver policy can not be updated", 500, 10012},
    {"storage type can not be updated", 500, 10012},
    {"start sequence can not be updated", 500, 10012},
    {"start time can not be updated", 500, 10012},
    {"ack policy can not be updated", 500, 10012},
    {"replay policy can not be updated", 500, 10012},
    {"heart beats can not be updated", 500, 10012},
    {"flow control can not be updated", 500, 10012},
    {"can not update p", 500, 10012},
    {"max waiting can not be updated", 500, 10012},
    {"consumer deliver subject has wildcards", 400, 10079},
    {"consumer in push mode can not set max waiting", 400, 10080},
    {"consumer deliver subject forms a cycle", 400, 10081},
    {"consumer requires ack policy for max ack pending", 400, 10082},
    {"consumer idle heartbeat needs to be >= 100ms", 400, 10083},
    {"consumer in pull mode requires", 400, 10084},
    {"consumer in pull mode can not have rate limit set", 400, 10086},
    {"consumer max waiting needs to be positive", 400, 10087},
    {"consumer idle heartbeat requires a push based consumer", 400, 10088},
    {"consumer flow control requires a push based consumer", 400, 10089},
    {"consumer delivery policy", 400, 10094},
    {"failed to parse consumer sampling configuration", 400, 10095},
    {"workqueue stream requires explicit ack", 400, 10098},
    {"multiple non-filtered consumers not allowed on workqueue stream", 400, 10099},
    {"filtered consumer not unique on workqueue stream", 400, 10100},
    {"consumer must be deliver all on workqueue stream", 400, 10101},
    {"consumer name is too long", 400, 10102},
    {"consumer description is too long", 400, 10107},
    {"consumer with flow control also needs heartbeats", 400, 10108},
    {"invalid push consumer deliver subject", 400, 10112},
    {"consumer max request batch needs to be > 0", 400, 10114},
    {"consumer max request expires needs to be >= 1ms", 400, 10115},
    {"max deliver is required to be > length of backoff values", 400, 10116},
    {"consumer max ack pending exceeds system limit", 400, 10121},
    {"consumer max request batch exceeds server limit", 400, 10125},
    {"consumer config replica count exceeds parent stream", 400, 10126},
    {"Consumer Durable and Name have to be equal", 400, 10132},
    {"replicas count cannot be negative", 400, 10133},
    {"consumer config replicas must match", 400, 10134},
    {"consumer metadata exceeds maximum size", 400, 10135},
    {"consumer cannot have both FilterSubject and FilterSubjects", 400, 10136},
    {"consumer subject filters cannot overlap", 400, 10138},
    {"consumer filter in FilterSubjects cannot be empty", 400, 10139},
    {"consumer inactive threshold exceeds system limit", 400, 10153},
    {"Setting PriorityPolicy requires", 400, 10159},
    {"Group name cannot be an empty string", 400, 10161},
    {"Valid priority group name", 400, 10162},
    {"priority groups can not be used with push consumers", 400, 10178},
    {"consumer ack policy invalid", 400, 10181},
    {"consumer replay policy invalid", 400, 10182},
    {"consumer ack wait needs to be positive", 400, 10183},
    {"consumer backoff needs to be positive", 400, 10184},
    {"consumer can not have priority groups when policy is none", 400, 10196},
    {"PinnedTTL cannot be set when PriorityPolicy is none", 400, 10197},
};

void js_map_consumer_error(int status, const char *msg, int op, int *code, int *err_code,
                           char *desc, size_t dl)
{
    msg = msg && *msg ? msg : jr_strerror(status);
    if (jsj_unavailable(status, code, err_code, desc, dl)) return;
    switch (status) {
    case JR_ENOSTREAM:
        jsj_set_err(code, err_code, desc, dl, 404, 10059, "stream not found");
        return;
    case JR_ENOTFOUND:
        if (strstr(msg, "stream not found"))
            jsj_set_err(code, err_code, desc, dl, 404, 10059, "stream not found");
        else if (op == 'u')
            jsj_set_err(code, err_code, desc, dl, 400, 10149, "consumer does not exist");
        else
            jsj_set_err(code, err_code, desc, dl, 404, 10014, "consumer not found");
        return;
    case JR_EEXIST:
        if (strstr(msg, "name already in use"))
            jsj_set_err(code, err_code, desc, dl, 400, 10013, "consumer name already in use");
        else
            jsj_set_err(code, err_code, desc, dl, 400, 10148, "consumer already exists");
        return;
    case JR_EINVAL:
        for (size_t i = 0; i < sizeof config_errors / sizeof *config_errors; i++)
            if (!strncmp(msg, config_errors[i].prefix, strlen(config_errors[i].prefix))) {
                jsj_set_err(code, err_code, desc, dl, config_errors[i].code,
                            config_errors[i].err_code, msg);
                return;
            }
        if (op == 's')
            jsj_set_err(code, err_code, desc, dl, 500, 10041, msg);
        else if (op == 'c' || op == 'u')
            jsj_set_err(code, err_code, desc, dl, 500, 10012, msg);
        else
            jsj_set_err(code, err_code, desc, dl, 400, 10003, msg);
        return;
    case JR_ELIMIT:
        jsj_set_err(code, err_code, desc, dl, 400, 10026, "maximum consumers limit reached");
        return;
    case JR_ENORESOURCES:
        jsj_set_err(code, err_code, desc, dl, 503, 10023, "insufficient resources");
        return;
    case JR_ENOTVOTER:
    case JR_ETRANSFER:
        jsj_set_err(code, err_code, desc, dl, 500, 10041, msg);
        return;
    default:
        if (op == 's')
            jsj_set_err(code, err_code, desc, dl, 500, 10041, msg);
        else if (op == 'c' || op == 'u')
            jsj_set_err(code, err_code, desc, dl, 500, 10012, msg);
        else
            jsj_set_err(code, err_code, desc, dl, 500, 10003, msg);
        return;
    }
}

/* ---- pull requests, acks, ack subjects ------------------------------------------------------ */

int js_pull_parse(const void *data, size_t len, js_pull *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->batch = 1;
    const char *p = data;
    while (len && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++, len--;
    while (len &&
           (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r' || p[len - 1] == '\n'))
        len--;
    if (len == 0) return 0;
    if (*p != '{') { /* a bare batch size */
        int64_t v = 0;
        for (size_t i = 0; i < len; i++) {
            if (p[i] < '0' || p[i] > '9' || v > INT64_MAX / 10 - 10) {
                snprintf(err, errlen, "invalid character '%c' looking for beginning of value",
                         p[i]);
                return -1;
            }
            v = v * 10 + (p[i] - '0');
        }
        o->batch = v > 0 ? v : 1;
        return 0;
    }
    json_error_t je;
    json_t *j = json_loadb(p, len, 0, &je);
    if (!json_is_object(j)) {
        snprintf(err, errlen, "%s", j ? "not an object" : je.text);
        json_decref(j);
        return -1;
    }
    int code, err_code;
    char desc[200];
    int64_t pri = 0;
    const char *group = NULL, *id = NULL;
    int rc =
        jsj_int(j, "batch", &o->batch, &code, &err_code, desc, sizeof desc) ||
        jsj_int(j, "max_bytes", &o->max_bytes, &code, &err_code, desc, sizeof desc) ||
        jsj_int(j, "expires", &o->expires_ns, &code, &err_code, desc, sizeof desc) ||
        jsj_int(j, "idle_heartbeat", &o->heartbeat_ns, &code, &err_code, desc, sizeof desc) ||
        jsj_bool(j, "no_wait", &o->no_wait, &code, &err_code, desc, sizeof desc) ||
        jsj_int(j, "min_pending", &o->min_pending, &code, &err_code, desc, sizeof desc) ||
        jsj_int(j, "min_ack_pending", &o->min_ack_pending, &code, &err_code, desc, sizeof desc) ||
        jsj_int(j, "priority", &pri, &code, &err_code, desc, sizeof desc) ||
        get_str(j, "group", &group, &code, &err_code, desc, sizeof desc) ||
        get_str(j, "id", &id, &code, &err_code, desc, sizeof desc);
    if (!rc && ((group && strlen(group) >= sizeof o->group) || (id && strlen(id) >= sizeof o->id)))
        rc = snprintf(desc, sizeof desc, "invalid JSON: group or id too long") > 0;
    if (!rc) {
        snprintf(o->group, sizeof o->group, "%s", group ? group : "");
        snprintf(o->id, sizeof o->id, "%s", id ? id : "");
    }
    json_decref(j);
    if (rc) {
        snprintf(err, errlen, "%s", desc);
        return -1;
    }
    if (pri < 0 || pri > 9) {
        snprintf(err, errlen, "Priority must be between 0 and 9");
        return -1;
    }
    o->priority = (int)pri;
    if (o->batch <= 0) o->batch = 1;
    if (o->max_bytes < 0) o->max_bytes = 0;
    if (o->expires_ns < 0) o->expires_ns = 0;
    if (o->min_pending < 0) o->min_pending = 0;
    if (o->min_ack_pending < 0) o->min_ack_pending = 0;
    if (o->heartbeat_ns < 0) o->heartbeat_ns = 0;
    if (o->heartbeat_ns > 0) {
        if (o->expires_ns == 0) {
            snprintf(err, errlen, "heartbeat requires request expiration");
            return -1;
        }
        if (o->heartbeat_ns > o->expires_ns / 2) {
            snprintf(err, errlen, "heartbeat value too large");
            return -1;
        }
    }
    return 0;
}

static int has_verb(const char *p, size_t len, const char *verb)
{
    size_t vl = strlen(verb);
    return len >= vl && !memcmp(p, verb, vl) && (len == vl || p[vl] == ' ');
}

void js_ack_parse(const void *data, size_t len, js_ack *o)
{
    const char *p = data;
    memset(o, 0, sizeof *o);
    o->kind = -1;
    if (len == 0 || (len == 4 && !memcmp(p, "+ACK", 4)) || (len == 3 && !memcmp(p, "+OK", 3))) {
        o->kind = JR_ACK_ACK;
        return;
    }
    if (len == 4 && !memcmp(p, "+WPI", 4)) {
        o->kind = JR_ACK_PROGRESS;
        return;
    }
    int nxt = has_verb(p, len, "+NXT"), nak = has_verb(p, len, "-NAK"),
        term = has_verb(p, len, "+TERM");
    if (!nxt && !nak && !term) return;
    size_t vl = term ? 5 : 4;
    if (len > vl) {
        o->rest = p + vl + 1;
        o->rest_len = len - vl - 1;
    }
    if (nxt) {
        o->kind = JR_ACK_ACK;
        o->next = 1;
    } else if (term) {
        o->kind = JR_ACK_TERM;
    } else {
        o->kind = JR_ACK_NAK;
        /* -NAK {"delay":ns} or -NAK <Go duration>; anything else is a plain NAK */
        const char *r = o->rest;
        size_t rl = o->rest_len;
        if (rl && *r == '{') {
            json_error_t je;
            json_t *j = json_loadb(r, rl, 0, &je);
            json_t *d = json_object_get(j, "delay");
            if (json_is_integer(d) && json_integer_value(d) > 0)
                o->delay_ns = (int64_t)json_integer_value(d);
            json_decref(j);
        } else if (rl) {
            int64_t d;
            if (js_parse_duration(r, rl, &d) == 0) o->delay_ns = d;
        }
    }
}

int js_ack_subject_parse(const char *subject, char *stream, size_t stream_len, char *consumer,
                         size_t consumer_len)
{
    static const char prefix[] = "$JS.ACK.";
    if (!subject || strncmp(subject, prefix, sizeof prefix - 1)) return -1;
    const char *tok[16];
    size_t tl[16], nt = 0;
    const char *p = subject + sizeof prefix - 1, *end = p + strlen(p);
    while (nt < 16) {
        const char *d = memchr(p, '.', (size_t)(end - p));
        tok[nt] = p;
        tl[nt++] = (size_t)((d ? d : end) - p);
        if (!d) break;
        p = d + 1;
    }
    if (nt != 7 && (nt < 9 || nt == 16)) return -1;
    size_t b = nt == 7 ? 0 : 2;
    if (!tl[b] || tl[b] >= stream_len || !tl[b + 1] || tl[b + 1] >= consumer_len) return -1;
    for (size_t i = b + 2; i < b + 7; i++) {
        if (!tl[i]) return -1;
        for (size_t k = 0; k < tl[i]; k++)
            if (tok[i][k] < '0' || tok[i][k] > '9') return -1;
    }
    memcpy(stream, tok[b], tl[b]);
    stream[tl[b]] = 0;
    memcpy(consumer, tok[b + 1], tl[b + 1]);
    consumer[tl[b + 1]] = 0;
    return 0;
}
