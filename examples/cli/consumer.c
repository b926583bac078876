/*
 * consumer.c — `jetraft consumer ...`: add, info, ls, rm and next (a pull), over
 * $JS.API.CONSUMER.* (cli.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : dflt;
}

static int need(const char *v, const char *what)
{
    if (v) return 0;
    fprintf(stderr, "jetraft: %s is required\n", what);
    return 2;
}

static int one_of(const char *v, const char *flag, const char *const *allowed)
{
    for (int i = 0; allowed[i]; i++)
        if (!strcmp(v, allowed[i])) return 0;
    fprintf(stderr, "jetraft: --%s: '%s' is not one of", flag, v);
    for (int i = 0; allowed[i]; i++) fprintf(stderr, " %s", allowed[i]);
    fprintf(stderr, "\n");
    return 2;
}

static void seq_pair(const char *label, const json_t *o)
{
    char a[32], b[32];
    fmt_int(a, sizeof a, (int64_t)json_integer_value(json_object_get(o, "consumer_seq")));
    fmt_int(b, sizeof b, (int64_t)json_integer_value(json_object_get(o, "stream_seq")));
    printf("%21s: Consumer sequence: %s Stream sequence: %s\n", label, a, b);
}

/* The nats CLI's `consumer info` text. */
static void print_info(const json_t *info)
{
    const json_t *cfg = json_object_get(info, "config");
    printf("Information for Consumer %s > %s created %s\n\n", str_or(info, "stream_name", "?"),
           str_or(info, "name", "?"), str_or(info, "created", "?"));
    printf("Configuration:\n\n");
    const char *durable = json_string_value(json_object_get(cfg, "durable_name"));
    if (durable) printf("%21s: %s\n", "Durable Name", durable);
    const char *filter = json_string_value(json_object_get(cfg, "filter_subject"));
    if (filter && *filter) printf("%21s: %s\n", "Filter Subject", filter);
    if (json_string_value(json_object_get(cfg, "deliver_subject")))
        printf("%21s: %s\n", "Delivery Subject", str_or(cfg, "deliver_subject", ""));
    else
        printf("%21s: %s\n", "Pull Mode", "true");
    printf("%21s: %s\n", "Deliver Policy", str_or(cfg, "deliver_policy", "all"));
    printf("%21s: %s\n", "Ack Policy", str_or(cfg, "ack_policy", "explicit"));
    char d[48];
    fmt_duration(d, sizeof d, (int64_t)json_integer_value(json_object_get(cfg, "ack_wait")));
    printf("%21s: %s\n", "Ack Wait", d);
    json_int_t md = json_integer_value(json_object_get(cfg, "max_deliver"));
    if (md > 0)
        printf("%21s: %" JSON_INTEGER_FORMAT "\n", "Maximum Deliveries", md);
    else
        printf("%21s: %s\n", "Maximum Deliveries", "unlimited");
    json_int_t reps = json_integer_value(json_object_get(cfg, "num_replicas"));
    if (reps) printf("%21s: %" JSON_INTEGER_FORMAT "\n", "Replicas", reps);
    printf("\n");
    print_cluster(stdout, json_object_get(info, "cluster"));
    printf("State:\n\n");
    seq_pair("Last Delivered Message", json_object_get(info, "delivered"));
    seq_pair("Acknowledgment Floor", json_object_get(info, "ack_floor"));
    char n[32];
    fmt_int(n, sizeof n, (int64_t)json_integer_value(json_object_get(info, "num_ack_pending")));
    printf("%21s: %s\n", "Outstanding Acks", n);
    fmt_int(n, sizeof n, (int64_t)json_integer_value(json_object_get(info, "num_redelivered")));
    printf("%21s: %s\n", "Redelivered Messages", n);
    fmt_int(n, sizeof n, (int64_t)json_integer_value(json_object_get(info, "num_pending")));
    printf("%21s: %s\n", "Unprocessed Messages", n);
    fmt_int(n, sizeof n, (int64_t)json_integer_value(json_object_get(info, "num_waiting")));
    printf("%21s: %s\n", "Waiting Pulls", n);
}

static int show(cli *c, json_t *info)
{
    if (c->json)
        print_json(info);
    else
        print_info(info);
    json_decref(info);
    return 0;
}

static int consumer_add(cli *c, args *a)
{
    const char *stream = arg_pos(a, 0), *name = arg_pos(a, 1);
    if (need(stream, "the stream name") || need(name, "the consumer name")) return 2;
    json_t *cfg = json_pack("{s:s,s:s,s:s}", "durable_name", name, "ack_policy", "explicit",
                            "deliver_policy", "all");
    const char *v;
    static const char *const acks[] = {"explicit", "none", "all", NULL};
    static const char *const delivers[] = {"all", "new", "last", NULL};
    int rc = 0;
    if (!rc && (v = arg_flag(a, "ack")) && !(rc = one_of(v, "ack", acks)))
        json_object_set_new(cfg, "ack_policy", json_string(v));
    if (!rc && (v = arg_flag(a, "deliver")) && !(rc = one_of(v, "deliver", delivers)))
        json_object_set_new(cfg, "deliver_policy", json_string(v));
    if (!rc && (v = arg_flag(a, "filter")))
        json_object_set_new(cfg, "filter_subject", json_string(v));
    if (!rc && arg_flag(a, "replicas"))
        json_object_set_new(cfg, "num_replicas", json_integer(arg_int(a, "replicas", 0)));
    if (!rc && arg_flag(a, "max-deliver"))
        json_object_set_new(cfg, "max_deliver", json_integer(arg_int(a, "max-deliver", -1)));
    if (!rc && arg_flag(a, "wait"))
        json_object_set_new(cfg, "ack_wait", json_integer(arg_duration(a, "wait", 0)));
    if (rc) {
        json_decref(cfg);
        return rc;
    }
    json_t *body = json_pack("{s:s,s:o}", "stream_name", stream, "config", cfg);
    char subj[400];
    snprintf(subj, sizeof subj, "CONSUMER.DURABLE.CREATE.%s.%s", stream, name);
    json_t *info = api(c, subj, body);
    json_decref(body);
    if (!info) return 1;
    return show(c, info);
}

static int consumer_ls(cli *c, const char *stream)
{
    json_t *all = json_array();
    int rows = 0;
    for (json_int_t offset = 0;;) {
        json_t *body = json_pack("{s:I}", "offset", offset);
        char subj[300];
        snprintf(subj, sizeof subj, "CONSUMER.LIST.%s", stream);
        json_t *page = api(c, subj, body);
        json_decref(body);
        if (!page) {
            json_decref(all);
            return 1;
        }
        json_t *list = json_object_get(page, "consumers");
        size_t i, n = json_array_size(list);
        json_t *ci;
        json_array_foreach(list, i, ci)
        {
            if (c->json) {
                json_array_append(all, ci);
                continue;
            }
            if (rows++ == 0)
                printf("%-24s %12s %12s %14s\n", "Name", "Ack Pending", "Waiting", "Unprocessed");
            char p[32], w[32], u[32];
            fmt_int(p, sizeof p,
                    (int64_t)json_integer_value(json_object_get(ci, "num_ack_pending")));
            fmt_int(w, sizeof w, (int64_t)json_integer_value(json_object_get(ci, "num_waiting")));
            fmt_int(u, sizeof u, (int64_t)json_integer_value(json_object_get(ci, "num_pending")));
            printf("%-24s %12s %12s %14s\n", str_or(ci, "name", "?"), p, w, u);
        }
        json_int_t total = json_integer_value(json_object_get(page, "total"));
        json_decref(page);
        offset += (json_int_t)n;
        if (n == 0 || offset >= total) break;
    }
    if (c->json) print_json(all);
    if (!c->json && rows == 0) printf("No consumers defined\n");
    json_decref(all);
    return 0;
}

/* One pull of up to `count` messages, each printed and (unless no_ack) acknowledged. */
static int consumer_next(cli *c, const char *stream, const char *name, int64_t count, int no_ack)
{
    char subj[400];
    natsInbox *inbox = NULL;
    natsSubscription *sub = NULL;
    if (natsInbox_Create(&inbox) != NATS_OK ||
        natsConnection_SubscribeSync(&sub, c->nc, inbox) != NATS_OK) {
        fprintf(stderr, "jetraft: error: cannot subscribe an inbox\n");
        natsInbox_Destroy(inbox);
        return 1;
    }
    json_t *body = json_pack("{s:I,s:I}", "batch", (json_int_t)count, "expires",
                             (json_int_t)(c->timeout_ms * 1000000 * 9 / 10));
    char *txt = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.MSG.NEXT.%s.%s", stream, name);
    natsConnection_PublishRequestString(c->nc, subj, inbox, txt);
    free(txt);
    int got = 0, rc = 0;
    while (got < count) {
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, sub, c->timeout_ms) != NATS_OK) break;
        const char *status = NULL;
        if (natsMsg_GetDataLength(m) == 0 && natsMsgHeader_Get(m, "Status", &status) == NATS_OK &&
            status) {
            const char *desc = NULL;
            natsMsgHeader_Get(m, "Description", &desc);
            if (strcmp(status, "404") && strcmp(status, "408")) {
                fprintf(stderr, "jetraft: error: %s %s\n", status, desc ? desc : "");
                rc = 1;
            }
            natsMsg_Destroy(m);
            break;
        }
        got++;
        if (c->json) {
            json_t *j = json_pack("{s:s,s:s%}", "subject", natsMsg_GetSubject(m), "data",
                                  natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m));
            if (natsMsg_GetReply(m))
                json_object_set_new(j, "reply", json_string(natsMsg_GetReply(m)));
            print_json(j);
            json_decref(j);
        } else {
            printf("[%d] subject: %s reply: %s\n\n%.*s\n\n", got, natsMsg_GetSubject(m),
                   natsMsg_GetReply(m) ? natsMsg_GetReply(m) : "", natsMsg_GetDataLength(m),
                   natsMsg_GetData(m));
        }
        if (!no_ack && natsMsg_GetReply(m)) {
            natsMsg *ack = NULL;
            /* a request: the server confirms the ack once it is replicated */
            if (natsConnection_RequestString(&ack, c->nc, natsMsg_GetReply(m), "+ACK",
                                             c->timeout_ms) != NATS_OK) {
                fprintf(stderr, "jetraft: error: the ack of message %d was not confirmed\n", got);
                rc = 1;
            } else if (!c->json) {
                printf("Acknowledged message %d\n\n", got);
            }
            natsMsg_Destroy(ack);
        }
        natsMsg_Destroy(m);
    }
    if (!got && !rc && !c->json) printf("No messages available\n");
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    return rc;
}

/* `consumer cluster peer-remove|evacuate STREAM NAME PEER`, `consumer cluster cancel-move
 * STREAM NAME`: the consumer's replica moved off PEER (a replacement catches up first), or its
 * peer change returned to where it started. */
static int consumer_cluster(cli *c, args *a)
{
    const char *sub = arg_pos(a, 0), *stream = arg_pos(a, 1), *name = arg_pos(a, 2);
    if (need(sub, "peer-remove, evacuate or cancel-move") || need(stream, "the stream name") ||
        need(name, "the consumer name"))
        return 2;
    char subj[400];
    json_t *body = NULL;
    if (!strcmp(sub, "peer-remove") || !strcmp(sub, "evacuate")) {
        const char *peer = arg_pos(a, 3);
        if (need(peer, "the peer")) return 2;
        snprintf(subj, sizeof subj, "CONSUMER.PEER.%s.%s.%s", sub[0] == 'p' ? "REMOVE" : "EVACUATE",
                 stream, name);
        body = json_pack("{s:s}", "peer", peer);
    } else if (!strcmp(sub, "cancel-move")) {
        snprintf(subj, sizeof subj, "CONSUMER.CANCEL_MOVE.%s.%s", stream, name);
    } else {
        fprintf(stderr,
                "jetraft: unknown consumer cluster verb '%s' (peer-remove, evacuate, "
                "cancel-move)\n",
                sub);
        return 2;
    }
    json_t *r = api(c, subj, body);
    json_decref(body);
    if (!r) return 1;
    if (c->json)
        print_json(r);
    else if (sub[0] == 'c')
        printf("Cancelled the peer change of consumer %s > %s\n", stream, name);
    else
        printf("Moving consumer %s > %s off %s\n", stream, name, arg_pos(a, 3));
    json_decref(r);
    return 0;
}

int cmd_consumer(cli *c, const char *verb, args *a)
{
    const char *stream = arg_pos(a, 0), *name = arg_pos(a, 1);
    char subj[400];
    if (!strcmp(verb, "add") || !strcmp(verb, "create")) return consumer_add(c, a);
    if (!strcmp(verb, "cluster")) return consumer_cluster(c, a);
    if (need(stream, "the stream name")) return 2;
    if (!strcmp(verb, "ls") || !strcmp(verb, "list")) return consumer_ls(c, stream);
    if (need(name, "the consumer name")) return 2;
    if (!strcmp(verb, "info")) {
        snprintf(subj, sizeof subj, "CONSUMER.INFO.%s.%s", stream, name);
        json_t *info = api(c, subj, NULL);
        return info ? show(c, info) : 1;
    }
    if (!strcmp(verb, "rm") || !strcmp(verb, "delete")) {
        snprintf(subj, sizeof subj, "CONSUMER.DELETE.%s.%s", stream, name);
        json_t *r = api(c, subj, NULL);
        if (!r) return 1;
        if (c->json)
            print_json(r);
        else
            printf("Deleted consumer %s > %s\n", stream, name);
        json_decref(r);
        return 0;
    }
    if (!strcmp(verb, "next")) {
        int64_t count = arg_int(a, "count", 1);
        if (count < 1) {
            fprintf(stderr, "jetraft: --count must be at least 1\n");
            return 2;
        }
        return consumer_next(c, stream, name, count, arg_bool(a, "no-ack"));
    }
    fprintf(stderr, "jetraft: unknown consumer verb '%s' (add, info, ls, rm, next, cluster)\n",
            verb);
    return 2;
}
