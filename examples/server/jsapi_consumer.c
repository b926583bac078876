/*
 * jsapi_consumer.c — the JetStream API for consumers, mapped onto the library's jr_consumer_*
 * calls: create (CONSUMER.CREATE.<s>[.<c>[.<filter>]], CONSUMER.DURABLE.CREATE.<s>.<d>),
 * info, names, list, delete, leader stepdown, pause, reset, unpin. Pull requests
 * (CONSUMER.MSG.NEXT) go to jsdeliver.c, which also serves push consumers and acks.
 */
#include "jsapi_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsjson.h"

/* ---- answers -------------------------------------------------------------------------------- */

/* A consumer request: its errors are mapped as consumers' (js_map_consumer_error). */
static req *cnew(server *s, const char *reply, int op, const char *type, const char *stream)
{
    req *r = jsr_new(s, reply, op, type, stream);
    if (r) r->consumer_api = 1;
    return r;
}

/* ---- info, create ---------------------------------------------------------------------------- */

static void on_cinfo(void *arg, int status, const char *msg, const jr_consumer_info *info)
{
    req *r = arg;
    if (status) {
        jsr_status_error(r, status, msg);
    } else {
        const jr_consumer_config *c = info->config;
        if (r->did_create && c && c->deliver_subject && *c->deliver_subject)
            jsdeliver_push(r->s, r->name, info->name, c->deliver_subject);
        json_t *j = js_consumer_info_json(info, jsr_wall_ns());
        if (r->op == 'r') /* reset: the sequence it starts from */
            json_object_set_new(j, "reset_seq",
                                json_integer((json_int_t)info->delivered.stream_seq + 1));
        jsr_send_json(r->s, r->reply, r->type, j);
    }
    jsr_free(r);
}

static void on_created(void *arg, int status, const char *msg, const char *name)
{
    req *r = arg;
    if (status) {
        jsr_status_error(r, status, msg);
        jsr_free(r);
        return;
    }
    snprintf(r->consumer, sizeof r->consumer, "%s", name);
    /* the info answers the request; a push consumer's info also starts serving it here */
    if ((!r->reply[0] && !r->did_create) ||
        jr_consumer_info_get(r->s->node, r->name, r->consumer, on_cinfo, r) != 0)
        jsr_free(r);
}

/* CONSUMER.CREATE.<s>[.<name>[.<filter>]] (durable_api 0) or CONSUMER.DURABLE.CREATE.<s>.<d>
 * (durable_api 1): the body is {"stream_name","config","action","pedantic"}. */
static void create(req *r, const char *name, const char *filter, int durable_api, const void *data,
                   size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    js_consumer_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    int code = 400, err_code = 0;
    char desc[400] = "";
    json_t *sn = json_object_get(j, "stream_name"), *cj = json_object_get(j, "config"),
           *act = json_object_get(j, "action");
    json_t *empty = NULL;
    if (!cj || json_is_null(cj)) cj = empty = json_object();
    const char *action = json_is_string(act) ? json_string_value(act) : "";
    if (json_is_string(sn) && json_string_length(sn) && strcmp(json_string_value(sn), r->name)) {
        err_code = 10056;
        snprintf(desc, sizeof desc, "stream name in subject does not match request");
    } else if (js_consumer_cfg_parse(cj, &cfg, &code, &err_code, desc, sizeof desc)) {
        /* desc says why */
    } else if (cfg.c.flow_control) {
        err_code = 10003;
        snprintf(desc, sizeof desc, "push consumer flow control is not supported by this server");
    } else if (strcmp(action, "") && strcmp(action, "create") && strcmp(action, "update")) {
        code = 400;
        err_code = 10025;
        snprintf(desc, sizeof desc, "invalid JSON: unknown consumer action %.100s", action);
    } else if (durable_api) {
        if (!cfg.c.durable_name) {
            err_code = 10018;
            snprintf(desc, sizeof desc,
                     "consumer expected to be durable but a durable name was not set");
        } else if (strcmp(cfg.c.durable_name, name)) {
            err_code = 10017;
            snprintf(desc, sizeof desc,
                     "consumer name in subject does not match durable name in request");
        }
    } else if (name) {
        if ((cfg.c.durable_name && strcmp(cfg.c.durable_name, name)) ||
            (cfg.c.name && strcmp(cfg.c.name, name))) {
            err_code = 10017;
            snprintf(desc, sizeof desc,
                     "consumer name in subject does not match durable name in request");
        } else if (filter && cfg.c.nfilter_subjects) {
            err_code = 10137;
            snprintf(desc, sizeof desc,
                     "consumer with multiple subject filters cannot use subject based API");
        } else if (filter && (!cfg.c.filter_subject || strcmp(cfg.c.filter_subject, filter))) {
            err_code = 10131;
            snprintf(desc, sizeof desc,
                     "Consumer create request did not match filtered subject from create "
                     "subject");
        } else {
            cfg.c.name = name;
        }
    } else if (cfg.c.durable_name) {
        err_code = 10020;
        snprintf(desc, sizeof desc,
                 "consumer expected to be ephemeral but a durable name was set in request");
    }
    if (err_code) {
        jsr_send_error(r->s, r->reply, r->type, code, err_code, desc);
        jsr_free(r);
    } else {
        int rc;
        r->op = !strcmp(action, "update") ? 'u' : 'c';
        r->did_create = cfg.c.deliver_subject != NULL; /* a push consumer: served from here */
        if (!strcmp(action, "create"))
            rc = jr_consumer_create(r->s->node, r->name, &cfg.c, on_created, r);
        else if (r->op == 'u')
            rc = jr_consumer_update(r->s->node, r->name, &cfg.c, on_created, r);
        else
            rc = jr_consumer_add(r->s->node, r->name, &cfg.c, on_created, r);
        jsr_fail(r, rc);
    }
    js_consumer_cfg_free(&cfg);
    json_decref(empty);
    json_decref(j);
}

/* ---- names, list ---------------------------------------------------------------------------- */

static void on_cnames(void *arg, int status, const char *msg, const jr_names *page)
{
    jsr_names_reply(arg, status, msg, page, "consumers", 0);
}

static void on_clist(void *arg, int status, const char *msg, const jr_consumer_page *page)
{
    req *r = arg;
    if (status) {
        jsr_status_error(r, status, msg);
    } else {
        json_t *j = jsr_page_json(page->total, page->offset, page->limit), *a = json_array();
        uint64_t now = jsr_wall_ns();
        for (size_t i = 0; i < page->nconsumers; i++)
            json_array_append_new(a, js_consumer_info_json(page->consumers[i], now));
        json_object_set_new(j, "consumers", a);
        jsr_set_missing(j, page->missing, page->nmissing);
        jsr_send_json(r->s, r->reply, r->type, j);
    }
    jsr_free(r);
}

static void names_or_list(req *r, const void *data, size_t len, int list)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    uint64_t off = jsr_offset(j);
    json_decref(j);
    jsr_fail(r, list ? jr_consumer_list(r->s->node, r->name, off, on_clist, r)
                     : jr_consumer_names(r->s->node, r->name, off, on_cnames, r));
}

/* ---- stepdown, pause, reset, unpin ---------------------------------------------------------- */

static void stepdown(req *r, const void *data, size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    const char *peer = jsr_preferred(j);
    int rc = jr_consumer_stepdown(r->s->node, r->name, r->consumer, peer, jsr_done, r);
    json_decref(j);
    jsr_fail(r, rc);
}

static void on_paused(void *arg, int status, const char *msg)
{
    req *r = arg;
    if (status) {
        jsr_status_error(r, status, msg);
    } else {
        uint64_t until = r->patch ? (uint64_t)json_integer_value(r->patch) : 0, now = jsr_wall_ns();
        json_t *j = json_object();
        json_object_set_new(j, "paused", json_boolean(until > now));
        json_object_set_new(j, "pause_until", js_time_json(until));
        if (until > now)
            json_object_set_new(j, "pause_remaining", json_integer((json_int_t)(until - now)));
        jsr_send_json(r->s, r->reply, r->type, j);
    }
    jsr_free(r);
}

/* {"pause_until":"<RFC 3339>"}; empty body or the zero time resumes. */
static void pause_consumer(req *r, const void *data, size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    uint64_t until = 0;
    json_t *pu = json_object_get(j, "pause_until");
    if (pu && !json_is_null(pu) &&
        (!json_is_string(pu) || js_parse_time(json_string_value(pu), &until))) {
        jsr_send_error(r->s, r->reply, r->type, 400, 10025,
                       "invalid JSON: pause_until must be an RFC 3339 time");
        json_decref(j);
        jsr_free(r);
        return;
    }
    json_decref(j);
    r->patch = json_integer((json_int_t)until); /* kept for the reply */
    jsr_fail(r, jr_consumer_pause(r->s->node, r->name, r->consumer, until, on_paused, r));
}

static void on_reset(void *arg, int status, const char *msg)
{
    req *r = arg;
    if (status) {
        jsr_status_error(r, status, msg);
        jsr_free(r);
        return;
    }
    if (!r->reply[0] || jr_consumer_info_get(r->s->node, r->name, r->consumer, on_cinfo, r) != 0)
        jsr_free(r);
}

/* {"seq":N}; empty: the message after the ack floor. */
static void reset_consumer(req *r, const void *data, size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    json_t *sv = json_object_get(j, "seq");
    uint64_t seq =
        json_is_integer(sv) && json_integer_value(sv) > 0 ? (uint64_t)json_integer_value(sv) : 0;
    json_decref(j);
    jsr_fail(r, jr_consumer_reset(r->s->node, r->name, r->consumer, seq, on_reset, r));
}

static void on_unpinned(void *arg, int status, const char *msg)
{
    req *r = arg;
    if (status == JR_ENOTFOUND && !strstr(msg ? msg : "", "consumer"))
        jsr_send_error(r->s, r->reply, r->type, 400, 10160, "Invalid Priority Group");
    else if (status)
        jsr_status_error(r, status, msg);
    else
        jsr_send_json(r->s, r->reply, r->type, json_object());
    jsr_free(r);
}

static void unpin(req *r, const void *data, size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    json_t *g = json_object_get(j, "group");
    if (!json_is_string(g) || !json_string_length(g)) {
        jsr_send_error(r->s, r->reply, r->type, 400, 10160, "Invalid Priority Group");
        json_decref(j);
        jsr_free(r);
        return;
    }
    int rc =
        jr_consumer_unpin(r->s->node, r->name, r->consumer, json_string_value(g), on_unpinned, r);
    json_decref(j);
    jsr_fail(r, rc);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

#define MAX_TOKENS 16

static const struct {
    const char *verb; /* the tokens after CONSUMER. before <stream>.<consumer> */
    const char *type;
    int op;
} consumer_apis[] = {
    {"INFO", "consumer_info_response", 'i'},
    {"DELETE", "consumer_delete_response", 'd'},
    {"LEADER.STEPDOWN", "consumer_leader_stepdown_response", 's'},
    {"PAUSE", "consumer_pause_response", 'p'},
    {"RESET", "consumer_reset_response", 'r'},
    {"UNPIN", "consumer_unpin_response", 'U'},
};

int jsapi_consumer(server *s, const char *api, const char *reply, const void *data, size_t len,
                   int nr)
{
    if (strncmp(api, "CONSUMER.", 9)) return 0;
    char buf[1024], *tok[MAX_TOKENS];
    int n = jsr_split(api, buf, sizeof buf, tok, MAX_TOKENS, JR_STREAM_NAME_MAX);
    if (n < 0) {
        jsr_send_error(s, reply, "error_response", 400, 10003, "bad request");
        return 1;
    }
    /* MSG.NEXT.<s>.<c> */
    if (n == 5 && !strcmp(tok[1], "MSG") && !strcmp(tok[2], "NEXT")) {
        jsdeliver_pull(s, tok[3], tok[4], reply, data, len, nr);
        return 1;
    }
    /* CREATE.<s>[.<name>[.<filter...>]] */
    if (n >= 3 && !strcmp(tok[1], "CREATE")) {
        req *r = cnew(s, reply, 'c', "consumer_create_response", tok[2]);
        if (!r) return 1;
        const char *name = n >= 4 ? tok[3] : NULL, *filter = NULL;
        if (n >= 5) filter = api + (tok[4] - buf); /* the rest of the subject, dots included */
        create(r, name, filter, 0, data, len);
        return 1;
    }
    if (n == 5 && !strcmp(tok[1], "DURABLE") && !strcmp(tok[2], "CREATE")) {
        req *r = cnew(s, reply, 'c', "consumer_create_response", tok[3]);
        if (r) create(r, tok[4], NULL, 1, data, len);
        return 1;
    }
    if (n == 4 && !strcmp(tok[1], "DURABLE") && !strcmp(tok[2], "CREATE")) {
        jsr_send_error(s, reply, "consumer_create_response", 400, 10016,
                       "consumer name in subject is missing");
        return 1;
    }
    if (n == 3 && (!strcmp(tok[1], "NAMES") || !strcmp(tok[1], "LIST"))) {
        int list = tok[1][0] == 'L';
        req *r = cnew(s, reply, 'n', list ? "consumer_list_response" : "consumer_names_response",
                      tok[2]);
        if (r) names_or_list(r, data, len, list);
        return 1;
    }
    for (size_t i = 0; i < sizeof consumer_apis / sizeof *consumer_apis; i++) {
        const char *verb = consumer_apis[i].verb;
        int vt = strchr(verb, '.') ? 2 : 1; /* tokens in the verb */
        size_t vl = strlen(verb);
        if (n != 1 + vt + 2 || strncmp(api + 9, verb, vl) || api[9 + vl] != '.') continue;
        const char *stream = tok[1 + vt], *cons = tok[2 + vt];
        req *r = cnew(s, reply, consumer_apis[i].op, consumer_apis[i].type, stream);
        if (!r) return 1;
        snprintf(r->consumer, sizeof r->consumer, "%s", cons);
        switch (consumer_apis[i].op) {
        case 'i':
            jsr_fail(r, jr_consumer_info_get(s->node, stream, cons, on_cinfo, r));
            break;
        case 'd':
            jsr_fail(r, jr_consumer_delete(s->node, stream, cons, jsr_done, r));
            break;
        case 's':
            stepdown(r, data, len);
            break;
        case 'p':
            pause_consumer(r, data, len);
            break;
        case 'r':
            reset_consumer(r, data, len);
            break;
        case 'U':
            unpin(r, data, len);
            break;
        }
        return 1;
    }
    return 0;
}
