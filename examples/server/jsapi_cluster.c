/*
 * jsapi_cluster.c — the JetStream API's cluster operations, mapped onto the library's peer
 * management (include/jetraft/cluster.h, stream.h, consumer.h):
 *
 *   STREAM.PEER.REMOVE.<s>, STREAM.PEER.EVACUATE.<s>  {"peer"}     jr_stream_evacuate
 *   STREAM.CANCEL_MOVE.<s>                                          jr_stream_cancel_move
 *   CONSUMER.PEER.REMOVE.<s>.<c>, CONSUMER.PEER.EVACUATE.<s>.<c>    jr_consumer_evacuate
 *   CONSUMER.CANCEL_MOVE.<s>.<c>                                    jr_consumer_cancel_move
 *   ACCOUNT.STREAM.MOVE.<a>.<s>  {"server","cluster","tags"}        jr_stream_evacuate, or
 *                                                                   jr_stream_update (placement)
 *   ACCOUNT.STREAM.CANCEL_MOVE.<a>.<s>                              jr_stream_cancel_move
 *   SERVER.REMOVE  {"peer"} or {"peer_id"}                          jr_server_peer_remove
 *   SERVER.EVACUATE  {"peer"}                                       jr_server_evacuate
 *   SERVER.EVACUATE.CANCEL  {"peer"} (jetraft's own)                jr_server_evacuate_cancel
 *
 * A stream peer removal re-places the replica the way an evacuation does (the library has no
 * drop-first removal): the replacement catches up before the old peer leaves, so no
 * acknowledged message is lost and an R1 stream keeps its data. This server has no accounts:
 * the account token of ACCOUNT.* is accepted whatever it says (a lone <s> is taken as the
 * stream). Which users may call what is client.c's business (system_subject): SERVER.* and
 * ACCOUNT.* are system users' only.
 */
#include "jsapi_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsjson.h"
#include "jsjson_impl.h"

/* The kind of request, for its errors (cluster_error). */
enum {
    CL_STREAM = 1,   /* a stream's peer change */
    CL_CONSUMER = 2, /* a consumer's peer change */
    CL_SERVER = 3    /* a server's removal or drain */
};

/* JetStream's error for a library status of a cluster request of kind `kind`. */
static void cluster_error(int status, const char *msg, int kind, int *code, int *err_code,
                          char *desc, size_t dl)
{
    msg = msg && *msg ? msg : jr_strerror(status);
    if (status == JR_ENOQUORUM && kind == CL_SERVER && strstr(msg, "majority")) {
        /* a removal that would leave the cluster without a majority online: final, not a
         * passing unavailability */
        jsj_set_err(code, err_code, desc, dl, 400, 10003, msg);
        return;
    }
    if (jsj_unavailable(status, code, err_code, desc, dl)) return;
    switch (status) {
    case JR_ENOTFOUND:
        if (kind == CL_CONSUMER)
            jsj_set_err(code, err_code, desc, dl, 404, 10014, "consumer not found");
        else
            jsj_set_err(code, err_code, desc, dl, 404, 10059, "stream not found");
        return;
    case JR_ENOSTREAM:
        jsj_set_err(code, err_code, desc, dl, 404, 10059, "stream not found");
        return;
    case JR_ENOTMEMBER:
        if (kind == CL_SERVER)
            jsj_set_err(code, err_code, desc, dl, 400, 10044,
                        "server is not a member of the cluster");
        else
            jsj_set_err(code, err_code, desc, dl, 400, 10040, "peer not a member");
        return;
    case JR_EPEERREMAP:
        jsj_set_err(code, err_code, desc, dl, 503, 10075, "peer remap failed");
        return;
    case JR_EBUSY:
        jsj_set_err(code, err_code, desc, dl, 400, 10202, "cluster member change is in progress");
        return;
    case JR_ENOCHANGE:
        jsj_set_err(code, err_code, desc, dl, 400, 10129,
                    kind == CL_STREAM ? "stream reconfiguration not in progress" : msg);
        return;
    case JR_ENORESOURCES:
        if (!strncmp(msg, "no suitable peers", 17))
            jsj_set_err(code, err_code, desc, dl, 400, 10005, msg);
        else
            jsj_set_err(code, err_code, desc, dl, 503, 10023, "insufficient resources");
        return;
    case JR_EINVAL:
        jsj_set_err(code, err_code, desc, dl, 400, 10003, msg);
        return;
    default:
        jsj_set_err(code, err_code, desc, dl, 500, kind == CL_SERVER ? 10041 : 10051, msg);
        return;
    }
}

/* r->op holds the kind. */
static void cl_status_error(req *r, int status, const char *msg)
{
    int code, err_code;
    char desc[600];
    cluster_error(status, msg, r->op, &code, &err_code, desc, sizeof desc);
    jsr_send_error(r->s, r->reply, r->type, code, err_code, desc);
}

/* A call that did not start: its error, and the request freed. */
static void cl_fail(req *r, int rc)
{
    if (rc) {
        cl_status_error(r, rc, NULL);
        jsr_free(r);
    }
}

static void cl_done(void *arg, int status, const char *msg)
{
    req *r = arg;
    if (status)
        cl_status_error(r, status, msg);
    else
        jsr_success(r);
    jsr_free(r);
}

/* Server operations answer success with the library's message (what was re-placed, what is
 * left under-replicated, how many replicas a drain moves) as "description". */
static void cl_server_done(void *arg, int status, const char *msg)
{
    req *r = arg;
    if (status) {
        cl_status_error(r, status, msg);
    } else {
        json_t *j = json_object();
        json_object_set_new(j, "success", json_true());
        if (msg && *msg) json_object_set_new(j, "description", json_string(msg));
        jsr_send_json(r->s, r->reply, r->type, j);
    }
    jsr_free(r);
}

/* Moves answer as a stream update does: with the stream's info once the change committed. */
static void on_moved_info(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    req *r = arg;
    if (status)
        cl_status_error(r, status, msg);
    else
        jsr_send_json(r->s, r->reply, r->type, js_stream_info_json(info, jsr_wall_ns()));
    jsr_free(r);
}

static void on_moved(void *arg, int status, const char *msg)
{
    req *r = arg;
    if (status) {
        cl_status_error(r, status, msg);
        jsr_free(r);
        return;
    }
    if (!r->reply[0] || jr_stream_info_get(r->s->node, r->name, on_moved_info, r) != 0) jsr_free(r);
}

/* The body's string field f: NULL when absent, null or empty; sets *bad when of another type. */
static const char *body_str(json_t *j, const char *f, int *bad)
{
    json_t *v = json_object_get(j, f);
    if (!v || json_is_null(v)) return NULL;
    if (!json_is_string(v)) {
        *bad = 1;
        return NULL;
    }
    return json_string_length(v) ? json_string_value(v) : NULL;
}

/* The body of a request naming one peer ({"peer":"n2"}; SERVER.REMOVE also {"peer_id"}: a
 * server's name, as the $SYS reports give other servers' ids, or this server's own id, as its
 * INFO gives it): the body (the caller releases it) and the peer, or NULL after answering 400 /
 * 10003 "bad request" (10025 for malformed JSON) and freeing r. */
static json_t *peer_body(req *r, const void *data, size_t len, int with_id, const char **peer)
{
    json_t *j = len ? jsr_body(r, data, len) : NULL;
    if (len && !j) return NULL;
    int bad = 0;
    *peer = j ? body_str(j, "peer", &bad) : NULL;
    if (j && !*peer && with_id) {
        *peer = body_str(j, "peer_id", &bad);
        if (*peer && !strcmp(*peer, r->s->server_id)) *peer = r->s->cfg.name;
    }
    if (!*peer || bad) {
        json_decref(j);
        jsr_send_error(r->s, r->reply, r->type, 400, 10003, "bad request");
        jsr_free(r);
        return NULL;
    }
    return j;
}

/* ---- streams and consumers ------------------------------------------------------------------ */

static void stream_peer(req *r, const void *data, size_t len)
{
    const char *peer;
    json_t *j = peer_body(r, data, len, 0, &peer);
    if (!j) return;
    int rc = jr_stream_evacuate(r->s->node, r->name, peer, cl_done, r);
    json_decref(j);
    cl_fail(r, rc);
}

static void consumer_peer(req *r, const void *data, size_t len)
{
    const char *peer;
    json_t *j = peer_body(r, data, len, 0, &peer);
    if (!j) return;
    int rc = jr_consumer_evacuate(r->s->node, r->name, r->consumer, peer, cl_done, r);
    json_decref(j);
    cl_fail(r, rc);
}

/* ACCOUNT.STREAM.MOVE: {"server"} alone moves the stream's replica off that server (as an
 * evacuation); "cluster" and/or "tags" move the stream to that placement (as a stream update
 * with the new placement: the peers that fit stay, the others are replaced). */
typedef struct move_req {
    req *r;
    json_t *body;
} move_req;

static void on_move_info(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    move_req *m = arg;
    req *r = m->r;
    json_t *j = m->body;
    free(m);
    if (status) {
        cl_status_error(r, status, msg);
        jsr_free(r);
        json_decref(j);
        return;
    }
    int bad = 0;
    const char *cluster = body_str(j, "cluster", &bad);
    json_t *tv = json_object_get(j, "tags");
    size_t ntags = json_is_array(tv) ? json_array_size(tv) : 0;
    const char **tags = ntags ? calloc(ntags, sizeof *tags) : NULL;
    if (ntags && !tags) {
        json_decref(j);
        cl_fail(r, JR_ENOMEM);
        return;
    }
    for (size_t i = 0; i < ntags; i++) tags[i] = json_string_value(json_array_get(tv, i));
    jr_stream_config cfg = *info->config;
    jr_placement pl;
    jr_placement_init(&pl);
    if (cfg.placement) {
        pl.cluster = cfg.placement->cluster;
        pl.tags = cfg.placement->tags;
        pl.ntags = cfg.placement->ntags;
    }
    if (cluster) pl.cluster = cluster;
    if (json_is_array(tv)) {
        pl.tags = tags;
        pl.ntags = ntags;
    }
    cfg.placement = &pl;
    int rc = jr_stream_update(r->s->node, &cfg, on_moved, r);
    free(tags);
    json_decref(j);
    cl_fail(r, rc);
}

static void account_move(req *r, const void *data, size_t len)
{
    json_t *j = jsr_body(r, data, len);
    if (!j) return;
    int bad = 0;
    const char *from = body_str(j, "server", &bad);
    const char *cluster = body_str(j, "cluster", &bad);
    json_t *tv = json_object_get(j, "tags");
    if (tv && !json_is_null(tv)) {
        size_t i;
        json_t *t;
        if (!json_is_array(tv)) bad = 1;
        json_array_foreach(tv, i, t) if (!json_is_string(t) || !json_string_length(t)) bad = 1;
    }
    int placement = cluster || json_array_size(tv);
    if (bad || (!from && !placement)) {
        json_decref(j);
        jsr_send_error(r->s, r->reply, r->type, 400, 10003, "bad request");
        jsr_free(r);
        return;
    }
    if (!placement) {
        int rc = jr_stream_evacuate(r->s->node, r->name, from, on_moved, r);
        json_decref(j);
        cl_fail(r, rc);
        return;
    }
    move_req *m = malloc(sizeof *m);
    if (!m) {
        json_decref(j);
        cl_fail(r, JR_ENOMEM);
        return;
    }
    m->r = r;
    m->body = j;
    int rc = jr_stream_info_get(r->s->node, r->name, on_move_info, m);
    if (rc) {
        free(m);
        json_decref(j);
        cl_fail(r, rc);
    }
}

/* ---- servers -------------------------------------------------------------------------------- */

static void server_op(req *r, const void *data, size_t len, char what)
{
    const char *peer;
    json_t *j = peer_body(r, data, len, what == 'r', &peer);
    if (!j) return;
    jr_node *n = r->s->node;
    int rc = what == 'r'   ? jr_server_peer_remove(n, peer, cl_server_done, r)
             : what == 'e' ? jr_server_evacuate(n, peer, cl_server_done, r)
                           : jr_server_evacuate_cancel(n, peer, cl_server_done, r);
    json_decref(j);
    cl_fail(r, rc);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

#define MAX_TOKENS 8

/* A request on stream `stream` (consumer `cons` or NULL), or NULL after answering the error
 * of a name too long. */
static req *cl_new(server *s, const char *reply, int kind, const char *type, const char *stream,
                   const char *cons)
{
    if (strlen(stream) > JR_STREAM_NAME_MAX || (cons && strlen(cons) > JR_CONSUMER_NAME_MAX)) {
        jsr_send_error(s, reply, type, 400, 10003, "bad request");
        return NULL;
    }
    req *r = jsr_new(s, reply, kind, type, stream);
    if (r && cons) snprintf(r->consumer, sizeof r->consumer, "%s", cons);
    return r;
}

int jsapi_cluster(server *s, const char *api, const char *reply, const void *data, size_t len)
{
    if (!strcmp(api, "SERVER.REMOVE") || !strcmp(api, "SERVER.EVACUATE") ||
        !strcmp(api, "SERVER.EVACUATE.CANCEL")) {
        char what = api[7] == 'R' ? 'r' : api[15] ? 'c' : 'e';
        const char *type = what == 'r'   ? "meta_server_remove_response"
                           : what == 'e' ? "meta_server_evacuate_response"
                                         : "meta_server_evacuate_cancel_response";
        req *r = jsr_new(s, reply, CL_SERVER, type, NULL);
        if (r) server_op(r, data, len, what);
        return 1;
    }
    int stream_api = !strncmp(api, "STREAM.PEER.", 12) || !strncmp(api, "STREAM.CANCEL_MOVE.", 19);
    int consumer_api =
        !strncmp(api, "CONSUMER.PEER.", 14) || !strncmp(api, "CONSUMER.CANCEL_MOVE.", 21);
    int account_api = !strncmp(api, "ACCOUNT.STREAM.", 15);
    if (!stream_api && !consumer_api && !account_api) return 0;
    char buf[512], *tok[MAX_TOKENS];
    int n = jsr_split(api, buf, sizeof buf, tok, MAX_TOKENS, SIZE_MAX); /* name lengths: cl_new */
    req *r = NULL;
    if (stream_api && n == 4 && !strcmp(tok[1], "PEER") &&
        (!strcmp(tok[2], "REMOVE") || !strcmp(tok[2], "EVACUATE"))) {
        const char *type =
            tok[2][0] == 'R' ? "stream_remove_peer_response" : "stream_evacuate_peer_response";
        if ((r = cl_new(s, reply, CL_STREAM, type, tok[3], NULL))) stream_peer(r, data, len);
        return 1;
    }
    if (stream_api && n == 3 && !strcmp(tok[1], "CANCEL_MOVE")) {
        if ((r = cl_new(s, reply, CL_STREAM, "stream_update_response", tok[2], NULL)))
            cl_fail(r, jr_stream_cancel_move(s->node, r->name, on_moved, r));
        return 1;
    }
    if (consumer_api && n == 5 && !strcmp(tok[1], "PEER") &&
        (!strcmp(tok[2], "REMOVE") || !strcmp(tok[2], "EVACUATE"))) {
        const char *type =
            tok[2][0] == 'R' ? "consumer_remove_peer_response" : "consumer_evacuate_peer_response";
        if ((r = cl_new(s, reply, CL_CONSUMER, type, tok[3], tok[4]))) consumer_peer(r, data, len);
        return 1;
    }
    if (consumer_api && n == 4 && !strcmp(tok[1], "CANCEL_MOVE")) {
        if ((r = cl_new(s, reply, CL_CONSUMER, "consumer_cancel_move_response", tok[2], tok[3])))
            cl_fail(r, jr_consumer_cancel_move(s->node, r->name, r->consumer, cl_done, r));
        return 1;
    }
    if (account_api && (n == 4 || n == 5) &&
        (!strcmp(tok[2], "MOVE") || !strcmp(tok[2], "CANCEL_MOVE"))) {
        const char *stream = tok[n - 1]; /* ACCOUNT.STREAM.<verb>[.<account>].<stream> */
        if (!(r = cl_new(s, reply, CL_STREAM, "stream_update_response", stream, NULL))) return 1;
        if (tok[2][0] == 'M')
            account_move(r, data, len);
        else
            cl_fail(r, jr_stream_cancel_move(s->node, r->name, on_moved, r));
        return 1;
    }
    jsr_send_error(s, reply, "error_response", 400, 10003, "bad request");
    return 1;
}
