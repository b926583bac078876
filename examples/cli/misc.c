/*
 * misc.c — `jetraft pub`, `jetraft sub` and `jetraft server ...` (cli.h).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t handled = PTHREAD_COND_INITIALIZER;
static int64_t acked, failed;
static char first_error[256];

/* Counts an ack once its message is freed: js_PublishAsyncComplete returns when nothing is
 * pending, possibly before the handler of the last ack has run to its end, so the publisher
 * waits for the counts (wait_handled) before it tears the connection down. */
static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js;
    (void)pa;
    (void)closure;
    char err[sizeof first_error] = "";
    if (pae)
        snprintf(err, sizeof err, "%s", pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err));
    natsMsg_Destroy(msg);
    pthread_mutex_lock(&mu);
    if (pae) {
        if (!failed++) snprintf(first_error, sizeof first_error, "%s", err);
    } else {
        acked++;
    }
    pthread_cond_broadcast(&handled);
    pthread_mutex_unlock(&mu);
}

/* Waits up to ms for `count` acks to have been handled; with mu held on return. */
static void wait_handled(int64_t count, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&mu);
    while (acked + failed < count && pthread_cond_timedwait(&handled, &mu, &until) == 0) {
    }
}

/* `pub SUBJECT [BODY] [--count N] [--size B]`: JetStream publishes, each acknowledged. One
 * message prints its ack; a count prints a progress line and the rate. */
int cmd_pub(cli *c, args *a)
{
    const char *subject = arg_pos(a, 0), *body = arg_pos(a, 1);
    if (!subject) {
        fprintf(stderr, "jetraft: pub needs a subject\n");
        return 2;
    }
    int64_t count = arg_int(a, "count", 1), size = arg_int(a, "size", -1);
    if (count < 1 || size > 64 * 1024 * 1024) {
        fprintf(stderr, "jetraft: --count must be at least 1 and --size at most 64M\n");
        return 2;
    }
    char *data = NULL;
    size_t len = body ? strlen(body) : 0;
    if (size >= 0) {
        len = (size_t)size;
        data = malloc(len ? len : 1);
        for (size_t i = 0; i < len; i++) data[i] = (char)('a' + i % 26);
    } else {
        data = strdup(body ? body : "");
    }
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = c->timeout_ms;
    jo.PublishAsync.MaxPending = 1000;
    jo.PublishAsync.AckHandler = on_ack;
    jsCtx *js = NULL;
    if (natsConnection_JetStream(&js, c->nc, &jo) != NATS_OK) {
        fprintf(stderr, "jetraft: error: no JetStream context\n");
        free(data);
        return 1;
    }
    int rc = 0;
    if (count == 1) {
        jsPubAck *pa = NULL;
        jsErrCode je = 0;
        natsStatus s = js_Publish(&pa, js, subject, data, (int)len, NULL, &je);
        if (s != NATS_OK) {
            fprintf(stderr, "jetraft: error: %s (err_code %d)\n", nats_GetLastError(NULL), (int)je);
            rc = 1;
        } else if (c->json) {
            printf("{\"stream\":\"%s\",\"seq\":%" PRIu64 "%s}\n", pa->Stream, pa->Sequence,
                   pa->Duplicate ? ",\"duplicate\":true" : "");
        } else {
            printf("Published %zu bytes to \"%s\": stored in %s as seq %" PRIu64 "%s\n", len,
                   subject, pa->Stream, pa->Sequence, pa->Duplicate ? " (duplicate)" : "");
        }
        jsPubAck_Destroy(pa);
    } else {
        double t0 = now_s(), shown = t0;
        int64_t sent = 0;
        for (int64_t i = 0; i < count && rc == 0; i++) {
            if (js_PublishAsync(js, subject, data, (int)len, NULL) != NATS_OK) {
                fprintf(stderr, "\njetraft: error: %s\n", nats_GetLastError(NULL));
                rc = 1;
            } else {
                sent++;
            }
            if (!c->json && now_s() - shown >= 0.5) {
                shown = now_s();
                pthread_mutex_lock(&mu);
                fprintf(stderr, "\r%" PRId64 " / %" PRId64 " acknowledged", acked, count);
                pthread_mutex_unlock(&mu);
            }
        }
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = c->timeout_ms * 4;
        js_PublishAsyncComplete(js, &po);
        double dt = now_s() - t0;
        wait_handled(sent, c->timeout_ms);
        int64_t ok = acked, bad = failed;
        pthread_mutex_unlock(&mu);
        if (c->json)
            printf("{\"published\":%" PRId64 ",\"acknowledged\":%" PRId64 ",\"failed\":%" PRId64
                   ",\"seconds\":%.3f,\"msgs_per_sec\":%.0f}\n",
                   count, ok, bad, dt, (double)ok / dt);
        else
            fprintf(stderr,
                    "\r%" PRId64 " / %" PRId64 " acknowledged in %.2fs: %.0f msgs/s, %.2f "
                    "MB/s\n",
                    ok, count, dt, (double)ok / dt, (double)ok * (double)len / dt / 1e6);
        if (bad) fprintf(stderr, "jetraft: %" PRId64 " refused, first: %s\n", bad, first_error);
        if (ok != count) rc = 1;
    }
    jsCtx_Destroy(js);
    free(data);
    return rc;
}

/* `sub SUBJECT [--count N]`: prints messages as they come (core NATS). */
int cmd_sub(cli *c, args *a)
{
    const char *subject = arg_pos(a, 0);
    if (!subject) {
        fprintf(stderr, "jetraft: sub needs a subject\n");
        return 2;
    }
    int64_t count = arg_int(a, "count", 0);
    natsSubscription *sub = NULL;
    if (natsConnection_SubscribeSync(&sub, c->nc, subject) != NATS_OK) {
        fprintf(stderr, "jetraft: error: cannot subscribe %s\n", subject);
        return 1;
    }
    natsConnection_Flush(c->nc);
    if (!c->json) fprintf(stderr, "Subscribing on %s\n", subject);
    for (int64_t got = 0; !count || got < count;) {
        natsMsg *m = NULL;
        natsStatus s = natsSubscription_NextMsg(&m, sub, 60000);
        if (s == NATS_TIMEOUT) continue;
        if (s != NATS_OK) break;
        got++;
        if (c->json) {
            json_t *j = json_pack("{s:s,s:s%}", "subject", natsMsg_GetSubject(m), "data",
                                  natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m));
            char *txt = json_dumps(j, JSON_COMPACT);
            if (txt) puts(txt);
            free(txt);
            json_decref(j);
        } else {
            printf("[#%" PRId64 "] Received on \"%s\"\n%.*s\n\n", got, natsMsg_GetSubject(m),
                   natsMsg_GetDataLength(m), natsMsg_GetData(m));
        }
        fflush(stdout);
        natsMsg_Destroy(m);
    }
    natsSubscription_Destroy(sub);
    return 0;
}

/* `server check stream --stream NAME --peer-expect N`: the nats CLI's check line, exit 2 when
 * critical (no leader, another replica count, a replica not current or offline). */
static int check_stream(cli *c, args *a)
{
    const char *name = arg_flag(a, "stream");
    int64_t expect = arg_int(a, "peer-expect", 0);
    if (!name || expect < 1) {
        fprintf(stderr, "jetraft: server check stream needs --stream NAME --peer-expect N\n");
        return 2;
    }
    char subj[300];
    snprintf(subj, sizeof subj, "STREAM.INFO.%s", name);
    json_t *info = api(c, subj, NULL);
    if (!info) {
        printf("CRITICAL %s: stream info failed\n", name);
        return 2;
    }
    const json_t *cl = json_object_get(info, "cluster");
    const char *leader = json_string_value(json_object_get(cl, "leader"));
    const json_t *reps = json_object_get(cl, "replicas");
    int64_t peers = (leader ? 1 : 0) + (int64_t)json_array_size(reps);
    int64_t notcur = 0, offline = 0;
    size_t i;
    json_t *r;
    json_array_foreach(reps, i, r)
    {
        notcur += !json_is_true(json_object_get(r, "current"));
        offline += json_is_true(json_object_get(r, "offline"));
    }
    char reasons[4][96];
    int nr = 0;
    if (!leader) snprintf(reasons[nr++], sizeof reasons[0], "No leader");
    if (peers != expect)
        snprintf(reasons[nr++], sizeof reasons[0], "Expected %" PRId64 " replicas got %" PRId64,
                 expect, peers);
    if (offline)
        snprintf(reasons[nr++], sizeof reasons[0], "%" PRId64 " replicas offline", offline);
    if (notcur)
        snprintf(reasons[nr++], sizeof reasons[0], "%" PRId64 " replicas not current", notcur);
    json_decref(info);
    if (c->json) { /* the nats CLI's --format json result */
        char okmsg[64];
        snprintf(okmsg, sizeof okmsg, "%" PRId64 " peers", peers);
        json_t *crit = json_array(), *ok = json_array();
        for (int q = 0; q < nr; q++) json_array_append_new(crit, json_string(reasons[q]));
        if (!nr) json_array_append_new(ok, json_string(okmsg));
        json_t *j =
            json_pack("{s:s,s:s,s:s,s:o,s:o,s:[{s:s,s:I}]}", "name", name, "status",
                      nr ? "CRITICAL" : "OK", "check_suite", "stream", "ok", ok, "criticals", crit,
                      "perf_data", "name", "peers", "value", (json_int_t)peers);
        char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
        if (txt) puts(txt);
        free(txt);
        json_decref(j);
        return nr ? 2 : 0;
    }
    if (nr) {
        printf("CRITICAL %s CRITICAL:", name);
        for (int q = 0; q < nr; q++) printf(" %s", reasons[q]);
        printf(" | peers=%" PRId64 "\n", peers);
        return 2;
    }
    printf("OK %s OK:%" PRId64 " peers OK:0 sources | sources=0\n", name, peers);
    return 0;
}

/* Sends a $SYS.REQ.SERVER.PING request (subj) and gathers the answers (one a server;
 * jetraft-server's connected server answers for all of them) until `expect` of them came (0:
 * until none came for a moment after the first), or the timeout: a JSON array, or NULL (after
 * printing why none came unless quiet). */
static json_t *ping(cli *c, const char *subj, int64_t expect, int quiet)
{
    natsInbox *inbox = NULL;
    natsSubscription *sub = NULL;
    if (natsInbox_Create(&inbox) != NATS_OK ||
        natsConnection_SubscribeSync(&sub, c->nc, inbox) != NATS_OK ||
        natsConnection_PublishRequestString(c->nc, subj, inbox, "") != NATS_OK) {
        fprintf(stderr, "jetraft: error: cannot send %s: %s\n", subj, nats_GetLastError(NULL));
        natsSubscription_Destroy(sub);
        natsInbox_Destroy(inbox);
        return NULL;
    }
    json_t *all = json_array();
    natsStatus st = NATS_OK;
    while (expect <= 0 || (int64_t)json_array_size(all) < expect) {
        natsMsg *m = NULL;
        int64_t wait = json_array_size(all) && expect <= 0 ? 300 : c->timeout_ms;
        st = natsSubscription_NextMsg(&m, sub, wait);
        if (st != NATS_OK) break;
        json_t *j = json_loadb(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), 0, NULL);
        natsMsg_Destroy(m);
        if (json_is_object(json_object_get(j, "server")))
            json_array_append_new(all, j);
        else
            json_decref(j);
    }
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    if (!json_array_size(all)) {
        if (!quiet) request_failed(c, subj, st);
        json_decref(all);
        return NULL;
    }
    return all;
}

/* `server report jetstream`: the account's totals ($JS.API.INFO) and, for a system user, the
 * meta group as nats CLI's "RAFT Meta Group Information" ($SYS.REQ.SERVER.PING.JSZ). */
static int report(cli *c)
{
    json_t *r = api(c, "INFO", NULL);
    if (!r) return 1;
    /* A user that may not ping gets the account part alone. */
    int64_t keep = c->timeout_ms;
    c->timeout_ms = keep < 2000 ? keep : 2000;
    json_t *jsz = ping(c, "$SYS.REQ.SERVER.PING.JSZ", 0, 1);
    c->timeout_ms = keep;
    const json_t *meta =
        json_object_get(json_object_get(json_array_get(jsz, 0), "data"), "meta_cluster");
    if (c->json) {
        json_t *out = json_pack("{s:O}", "account", r);
        if (jsz) json_object_set(out, "servers", jsz);
        print_json(out);
        json_decref(out);
    } else {
        char n[48];
        printf("JetStream account information:\n\n");
        fmt_int(n, sizeof n, (int64_t)json_integer_value(json_object_get(r, "streams")));
        printf("%21s: %s\n", "Streams", n);
        fmt_int(n, sizeof n, (int64_t)json_integer_value(json_object_get(r, "consumers")));
        printf("%21s: %s\n", "Consumers", n);
        fmt_bytes(n, sizeof n, (uint64_t)json_integer_value(json_object_get(r, "storage")));
        printf("%21s: %s\n", "File Storage", n);
        fmt_bytes(n, sizeof n, (uint64_t)json_integer_value(json_object_get(r, "memory")));
        printf("%21s: %s\n", "Memory Storage", n);
        if (json_is_object(meta)) {
            const char *leader = json_string_value(json_object_get(meta, "leader"));
            printf("\nRAFT Meta Group Information\n\n");
            printf("%-12s %-8s %-8s %-8s %-12s %s\n", "Name", "Leader", "Current", "Online",
                   "Active", "Lag");
            if (leader)
                printf("%-12s %-8s %-8s %-8s %-12s %d\n", leader, "yes", "true", "true", "0.00s",
                       0);
            size_t i;
            json_t *p;
            json_array_foreach(json_object_get(meta, "replicas"), i, p)
            {
                char act[32] = "never";
                json_t *a = json_object_get(p, "active");
                if (json_is_integer(a))
                    fmt_duration(act, sizeof act, (int64_t)json_integer_value(a));
                printf("%-12s %-8s %-8s %-8s %-12s %" JSON_INTEGER_FORMAT "\n",
                       json_string_value(json_object_get(p, "name")), "",
                       json_is_true(json_object_get(p, "current")) ? "true" : "false",
                       json_is_true(json_object_get(p, "offline")) ? "false" : "true", act,
                       json_integer_value(json_object_get(p, "lag")));
            }
        }
    }
    json_decref(jsz);
    json_decref(r);
    return 0;
}

/* `server list [--expect N]`: every server of the cluster (ping above): name, cluster, tags,
 * meta role, current, offline, lag, replicas placed on it, draining. */
static int server_list(cli *c, args *a)
{
    json_t *all = ping(c, "$SYS.REQ.SERVER.PING", arg_int(a, "expect", 0), 0);
    if (!all) return 1;
    size_t n = json_array_size(all);
    if (c->json) {
        print_json(all);
    } else {
        const char *by = NULL, *leader = NULL;
        printf("%-12s %-10s %-20s %-9s %-8s %-8s %6s %7s %s\n", "Name", "Cluster", "Tags", "Meta",
               "Current", "Offline", "Lag", "Assets", "Draining");
        size_t i;
        json_t *j;
        json_array_foreach(all, i, j)
        {
            const json_t *srv = json_object_get(j, "server"), *jr = json_object_get(j, "jetraft");
            char tags[128] = "";
            size_t k = 0, t;
            json_t *tag;
            json_array_foreach(json_object_get(srv, "tags"), t, tag) k += (size_t)snprintf(
                tags + k, k < sizeof tags ? sizeof tags - k : 0, "%s%s", t ? "," : "",
                json_string_value(tag) ? json_string_value(tag) : "");
            const char *role = json_string_value(json_object_get(jr, "meta_role"));
            const json_t *cur = json_object_get(jr, "current"),
                         *off = json_object_get(jr, "offline");
            if (role && !strcmp(role, "leader"))
                leader = json_string_value(json_object_get(srv, "name"));
            if (!by) by = json_string_value(json_object_get(jr, "reported_by"));
            char assets[24] = "-", lag[24] = "-";
            if (json_is_integer(json_object_get(jr, "assets")))
                fmt_int(assets, sizeof assets,
                        (int64_t)json_integer_value(json_object_get(jr, "assets")));
            if (json_is_integer(json_object_get(jr, "lag")))
                fmt_int(lag, sizeof lag, (int64_t)json_integer_value(json_object_get(jr, "lag")));
            printf("%-12s %-10s %-20s %-9s %-8s %-8s %6s %7s %s\n",
                   json_string_value(json_object_get(srv, "name")),
                   json_string_value(json_object_get(srv, "cluster")), tags, role ? role : "?",
                   !cur                ? "?"
                   : json_is_true(cur) ? "yes"
                                       : "no",
                   !off                ? "?"
                   : json_is_true(off) ? "yes"
                                       : "no",
                   lag, assets, json_is_true(json_object_get(jr, "draining")) ? "yes" : "no");
        }
        printf("\n%zu server%s, meta leader %s%s%s\n", n, n == 1 ? "" : "s",
               leader ? leader : "none", by ? ", as reported by " : "", by ? by : "");
    }
    json_decref(all);
    return 0;
}

/* `server evacuate NAME [--cancel]`: drains NAME (every replica moves off it; it takes no new
 * placement) or ends the drain. jetraft-server's $JS.API.SERVER.EVACUATE (nats-server 2.15's)
 * and SERVER.EVACUATE.CANCEL (jetraft's own). */
static int server_evacuate(cli *c, args *a)
{
    const char *peer = arg_pos(a, 0);
    if (!peer) {
        fprintf(stderr, "jetraft: server evacuate needs the server's name\n");
        return 2;
    }
    int cancel = arg_bool(a, "cancel");
    json_t *body = json_pack("{s:s}", "peer", peer);
    json_t *r = api(c, cancel ? "SERVER.EVACUATE.CANCEL" : "SERVER.EVACUATE", body);
    json_decref(body);
    if (!r) return 1;
    const char *d = json_string_value(json_object_get(r, "description"));
    if (c->json)
        print_json(r);
    else if (cancel)
        printf("Ended the evacuation of %s%s%s\n", peer, d ? ": " : "", d ? d : "");
    else
        printf("Evacuating %s%s%s\n", peer, d ? ": " : "", d ? d : "");
    json_decref(r);
    return 0;
}

int cmd_server(cli *c, const char *verb, args *a)
{
    if (!strcmp(verb, "list") || !strcmp(verb, "ls")) return server_list(c, a);
    if (!strcmp(verb, "evacuate")) return server_evacuate(c, a);
    const char *what = arg_pos(a, 0);
    if (!strcmp(verb, "check") && what && !strcmp(what, "stream")) return check_stream(c, a);
    if (!strcmp(verb, "report") && what && !strcmp(what, "jetstream")) return report(c);
    if (!strcmp(verb, "cluster") && what && !strcmp(what, "step-down")) {
        json_t *r = api(c, "META.LEADER.STEPDOWN", NULL);
        if (!r) return 1;
        if (c->json)
            print_json(r);
        else
            printf("Requested a new meta leader\n");
        json_decref(r);
        return 0;
    }
    if (!strcmp(verb, "cluster") && what && !strcmp(what, "peer-remove")) {
        const char *peer = arg_pos(a, 1);
        if (!peer) {
            fprintf(stderr, "jetraft: server cluster peer-remove needs the server's name\n");
            return 2;
        }
        json_t *body = json_pack("{s:s}", "peer", peer);
        json_t *r = api(c, "SERVER.REMOVE", body);
        json_decref(body);
        if (!r) return 1;
        const char *d = json_string_value(json_object_get(r, "description"));
        if (c->json)
            print_json(r);
        else
            printf("Removed %s from the cluster%s%s\n", peer, d ? ": " : "", d ? d : "");
        json_decref(r);
        return 0;
    }
    fprintf(stderr, "jetraft: unknown server command (list, check stream, report jetstream, "
                    "evacuate, cluster step-down, cluster peer-remove)\n");
    return 2;
}
