/*
 * jsapi_admin.c — two system operations (with users, client.c lets only system users send them):
 *
 *   ACCOUNT.PURGE.<account>   none            every stream of the account deleted, with its
 *                                             consumers and messages (jr_stream_names, then
 *                                             jr_stream_delete of each)
 *   META.RESCUE (jetraft's)   {"peer":"n3"}   jr_node_rescue on the server that takes the
 *                                             request
 *
 * ACCOUNT.PURGE answers nats-server's account_purge_response {"initiated":true} once every
 * stream's deletion was handed to the meta leader (as nats-server answers once it proposed
 * them); the deletions complete after the answer, and one that fails is logged with its
 * reason. This server has one account: the account token is accepted whatever it names (as
 * ACCOUNT.STREAM.MOVE's), and the purge takes every stream. A page of names that fails (no meta
 * leader) answers its error and deletes nothing.
 *
 * META.RESCUE is the library's disaster-recovery call, unsafe by design (include/jetraft/
 * group.h): for a server lost for good, it makes this server's groups stop waiting for it. It
 * acts on the server that takes the request only (the operator sends it to each server whose
 * replicas report unvouched, connected to that server), is persisted there, and is logged as a
 * warning. The answer, meta_rescue_response, says {"success":true,"server","waited"} (waited:
 * some group waited for the peer; false: none did, the declaration is remembered for groups
 * opened later) or the error.
 */
#include "jsapi_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsjson.h"
#include "jsjson_impl.h"

/* ---- ACCOUNT.PURGE -------------------------------------------------------------------------- */

typedef struct purge {
    req *r;
    char **names; /* every stream's name, gathered page by page */
    size_t n, cap;
    char account[128];
} purge;

typedef struct purge_one {
    server *s;
    char name[JR_STREAM_NAME_MAX + 1];
} purge_one;

static void purge_free(purge *p)
{
    for (size_t i = 0; i < p->n; i++) free(p->names[i]);
    free(p->names);
    free(p);
}

static void on_purge_deleted(void *arg, int status, const char *msg)
{
    purge_one *o = arg;
    /* an unknown stream: deleted meanwhile by someone else, which is the purge's aim */
    if (status && status != JR_ENOTFOUND && !o->s->closing)
        fprintf(stderr, "[%s] account purge: stream %s was not deleted: %s\n", o->s->cfg.name,
                o->name, msg && *msg ? msg : jr_strerror(status));
    free(o);
}

/* Every name is known: hands each deletion to the node, then answers. */
static void purge_delete_all(purge *p)
{
    req *r = p->r;
    server *s = r->s;
    size_t started = 0;
    for (size_t i = 0; i < p->n; i++) {
        purge_one *o = calloc(1, sizeof *o);
        int rc = o ? 0 : JR_ENOMEM;
        if (o) {
            o->s = s;
            snprintf(o->name, sizeof o->name, "%s", p->names[i]);
            rc = jr_stream_delete(s->node, o->name, on_purge_deleted, o);
            if (rc) free(o);
        }
        if (rc)
            fprintf(stderr, "[%s] account purge: stream %s was not deleted: %s\n", s->cfg.name,
                    p->names[i], jr_strerror(rc));
        else
            started++;
    }
    fprintf(stderr, "[%s] purge request for account %s (streams: %zu, deletions started: %zu)\n",
            s->cfg.name, p->account, p->n, started);
    json_t *j = json_object();
    json_object_set_new(j, "initiated", json_true());
    jsr_send_json(s, r->reply, r->type, j);
    jsr_free(r);
    purge_free(p);
}

static void on_purge_names(void *arg, int status, const char *msg, const jr_names *page)
{
    purge *p = arg;
    req *r = p->r;
    if (status || !r->s->node) {
        jsr_status_error(r, status ? status : JR_ECLOSED, msg);
        jsr_free(r);
        purge_free(p);
        return;
    }
    for (size_t i = 0; i < page->nnames; i++) {
        if (p->n == p->cap) {
            size_t cap = p->cap ? 2 * p->cap : 64;
            char **v = realloc(p->names, cap * sizeof *v);
            if (!v) goto nomem;
            p->names = v;
            p->cap = cap;
        }
        if (!(p->names[p->n] = strdup(page->names[i]))) goto nomem;
        p->n++;
    }
    uint64_t next = page->offset + page->nnames;
    if (page->nnames && next < page->total) {
        int rc = jr_stream_names(r->s->node, NULL, next, on_purge_names, p);
        if (rc) {
            jsr_status_error(r, rc, NULL);
            jsr_free(r);
            purge_free(p);
        }
        return;
    }
    purge_delete_all(p);
    return;
nomem:
    jsr_status_error(r, JR_ENOMEM, NULL);
    jsr_free(r);
    purge_free(p);
}

static void account_purge(server *s, const char *account, const char *reply)
{
    req *r = jsr_new(s, reply, 'n', "account_purge_response", NULL);
    if (!r) return;
    purge *p = calloc(1, sizeof *p);
    if (!p) {
        jsr_status_error(r, JR_ENOMEM, NULL);
        jsr_free(r);
        return;
    }
    p->r = r;
    snprintf(p->account, sizeof p->account, "%s", account);
    int rc = jr_stream_names(s->node, NULL, 0, on_purge_names, p);
    if (rc) {
        jsr_status_error(r, rc, NULL);
        jsr_free(r);
        purge_free(p);
    }
}

/* ---- META.RESCUE ---------------------------------------------------------------------------- */

#define RESCUE_TYPE "meta_rescue_response"

static void meta_rescue(server *s, const char *reply, const void *data, size_t len)
{
    json_error_t je;
    json_t *j = len ? json_loadb(data, len, 0, &je) : NULL;
    if (len && !json_is_object(j)) {
        char d[300];
        snprintf(d, sizeof d, "invalid JSON: %s", j ? "not an object" : je.text);
        json_decref(j);
        jsr_send_error(s, reply, RESCUE_TYPE, 400, 10025, d);
        return;
    }
    json_t *pv = j ? json_object_get(j, "peer") : NULL;
    if (!json_is_string(pv) || !json_string_length(pv)) {
        json_decref(j);
        jsr_send_error(s, reply, RESCUE_TYPE, 400, 10003,
                       "bad request: META.RESCUE needs {\"peer\":\"<server lost for good>\"}");
        return;
    }
    int rc = jr_node_rescue(s->node, json_string_value(pv));
    json_decref(j);
    if (rc == 0 || rc == JR_ENOCHANGE) {
        json_t *ok =
            json_pack("{s:b,s:s,s:b}", "success", 1, "server", s->cfg.name, "waited", rc == 0);
        jsr_send_json(s, reply, RESCUE_TYPE, ok);
        server_kick(s); /* the rescued groups may elect now */
        return;
    }
    int code, err_code;
    char desc[600];
    const char *msg = jr_node_errmsg(s->node);
    msg = msg && *msg ? msg : jr_strerror(rc);
    if (!jsj_unavailable(rc, &code, &err_code, desc, sizeof desc)) {
        if (rc == JR_ENOTFOUND)
            jsj_set_err(&code, &err_code, desc, sizeof desc, 400, 10044, msg);
        else if (rc == JR_EINVAL || rc == JR_ELIMIT)
            jsj_set_err(&code, &err_code, desc, sizeof desc, 400, 10003, msg);
        else /* it could not be made durable: nothing changed */
            jsj_set_err(&code, &err_code, desc, sizeof desc, 500, 10003, msg);
    }
    jsr_send_error(s, reply, RESCUE_TYPE, code, err_code, desc);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

int jsapi_admin(server *s, const char *api, const char *reply, const void *data, size_t len)
{
    if (!strncmp(api, "ACCOUNT.PURGE.", 14)) {
        const char *account = api + 14;
        if (!*account || strpbrk(account, ".*>")) { /* one literal token */
            jsr_send_error(s, reply, "account_purge_response", 400, 10003, "bad request");
            return 1;
        }
        account_purge(s, account, reply);
        return 1;
    }
    if (!strcmp(api, "META.RESCUE")) {
        meta_rescue(s, reply, data, len);
        return 1;
    }
    return 0;
}
