/*
 * jsapi_impl.h — what the JetStream API's files share: a request waiting for the node's answer
 * (its reply subject and the reply's type) and the helpers that answer it with JetStream's JSON.
 * jsapi.c dispatches a request by subject to the file of its area (jsapi_stream.c for streams,
 * jsapi_consumer.c for consumers, jsapi_cluster.c for peer removal, evacuation and moves,
 * jsapi_sys.c for the $SYS.REQ.SERVER.PING server reports, jsapi_admin.c for the account purge
 * and the meta rescue; jsdeliver.c delivers consumers' messages
 * and takes the acks).
 */
#ifndef SRV_JSAPI_IMPL_H
#define SRV_JSAPI_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "jsapi.h"

#define TYPE_PREFIX "io.nats.jetstream.api.v1."

/* A request handed to the node; the callback that completes it frees it (jsr_free). Requests
 * in flight count toward max_inflight (clients_request_done). */
typedef struct req {
    server *s;
    int op;           /* as js_map_error's op (consumers: js_map_consumer_error's) */
    const char *type; /* reply type without TYPE_PREFIX */
    int consumer_api; /* a consumer request: errors mapped by js_map_consumer_error */
    int did_create;   /* stream create: the reply says so; consumer create: a push consumer */
    json_t *patch;    /* stream update: the requested fields, normal form (see on_info);
                         consumer pause: the pause_until asked for */
    char name[JR_STREAM_NAME_MAX + 1];
    char consumer[JR_CONSUMER_NAME_MAX + 1]; /* consumer requests: the consumer's name */
    char reply[];                            /* "" when the request has no reply subject */
} req;

/* A request answering on reply (NULL or "": carried out, unanswered); NULL when out of memory. */
req *jsr_new(server *s, const char *reply, int op, const char *type, const char *name);
void jsr_free(req *r);
/* Publishes j (stolen) with its "type" to the reply subject. */
void jsr_send_json(server *s, const char *reply, const char *type, json_t *j);
/* {"error":{code, err_code, description}} */
void jsr_send_error(server *s, const char *reply, const char *type, int code, int err_code,
                    const char *desc);
/* The error for a library status (js_map_error; a consumer request's by
 * js_map_consumer_error). */
void jsr_status_error(req *r, int status, const char *msg);
/* jr_names_cb's answer, then the request is freed: the error, or the page with the names
 * under key (null instead of an empty array when null_if_empty). */
void jsr_names_reply(req *r, int status, const char *msg, const jr_names *page, const char *key,
                     int null_if_empty);
/* {"success":true} */
void jsr_success(req *r);
/* jr_stream_cb / jr_meta_cb / consumer callbacks answering success or the error, then freeing
 * the request. */
void jsr_done(void *arg, int status, const char *msg);
/* The request's body as a JSON object (empty: {}); NULL after answering invalid JSON and
 * freeing the request. */
json_t *jsr_body(req *r, const void *data, size_t len);
/* A call that did not start (rc not 0): answers its error (as jsr_status_error) and frees the
 * request. */
void jsr_fail(req *r, int rc);
/* The body's placement.preferred peer, or NULL. */
const char *jsr_preferred(json_t *body);
/* The body's "offset" of a names or list page (absent or negative: 0). */
uint64_t jsr_offset(json_t *body);
/* {"total","offset","limit"} of a names or list reply. */
json_t *jsr_page_json(uint64_t total, uint64_t offset, uint64_t limit);
/* Sets j's "missing" to the n names, unless n is 0. */
void jsr_set_missing(json_t *j, const char *const *missing, size_t n);
/* Splits api at its dots into buf (cap bytes), tok[i] pointing at each token: how many, or -1
 * if api does not fit in buf, has more than max tokens, or a token is empty or longer than
 * maxlen. */
int jsr_split(const char *api, char *buf, size_t cap, char **tok, int max, size_t maxlen);
/* Wall clock, ns since the Unix epoch. */
uint64_t jsr_wall_ns(void);

/* Serves api (the subject after "$JS.API.") if it is a stream request: 1, else 0. */
int jsapi_stream(server *s, const char *api, const char *reply, const void *data, size_t len);
/* Serves api if it is a consumer request (CONSUMER.*): 1, else 0. nr: the requester asked for
 * no-responders statuses. */
int jsapi_consumer(server *s, const char *api, const char *reply, const void *data, size_t len,
                   int nr);

/* Serves api if it is a cluster operation (jsapi_cluster.c: stream and consumer peer removal,
 * evacuation and moves, server removal and drain): 1, else 0. */
int jsapi_cluster(server *s, const char *api, const char *reply, const void *data, size_t len);

/* Serves api if it is a system operation (jsapi_admin.c: ACCOUNT.PURGE.<account>, META.RESCUE):
 * 1, else 0. */
int jsapi_admin(server *s, const char *api, const char *reply, const void *data, size_t len);

/* jsdeliver.c: starts a pull request on consumer `consumer` of `stream` (a MSG.NEXT body, or the
 * request after +NXT) answering on reply (dropped without one, or without a subscriber to it
 * here); nr: the requester asked for no-responders statuses. */
void jsdeliver_pull(server *s, const char *stream, const char *consumer, const char *reply,
                    const void *data, size_t len, int nr);
/* jsdeliver.c: serves push consumer `consumer` from this server to the subscribers of its
 * deliver subject here (again, with a new deliver subject). */
void jsdeliver_push(server *s, const char *stream, const char *consumer, const char *deliver);

#endif
