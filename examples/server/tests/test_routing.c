/*
 * test_routing.c — core NATS across a 3-process jetraft-server cluster, with nats.c (libnats):
 * each connection talks to one server only, so every message below crosses a peer link.
 *
 * Checks, in order: a subscriber on A gets each message published at B and at C exactly once,
 * headers kept; a request made at C is answered by a responder on A (the reply inbox, a wildcard
 * subscription, lives on C); a queue group with members on A and B gets each message once, from
 * C (where the group has no member: both members are picked) and from A (served by A's member);
 * a request nobody anywhere listens to gets the no-responders status at once; a subscription
 * withdrawn on A is withdrawn cluster-wide (B's request then gets no-responders); after A is
 * killed with SIGKILL and restarted, its reconnected subscriber gets B's messages again and a
 * subscriber on B gets A's (both sides announced their interest again); a push consumer created
 * at A delivers to its deliver subject's subscriber on C. Finally SIGTERM stops every server,
 * which must exit 0.
 *
 * Interest travels asynchronously, so each step first publishes probes until one arrives (a
 * bounded number of tries), then checks exact counts. The servers use secure links: route
 * frames travel sealed in jr_link records next to the node's frames.
 *
 * Usage: test_server_routing PATH/TO/jetraft-server
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nats/nats.h>

#include "natsclient.h"
#include "procs.h"

#define NSERVERS 3
#define RUN_LIMIT_S 90
#define NMSGS 20
#define PROBE_TRIES 300 /* about 100 ms apart */

enum { A, B, C };
static int client_port[NSERVERS], cluster_port[NSERVERS];
static const char *names[NSERVERS] = {"n1", "n2", "n3"};

static void write_configs(void)
{
    make_keys(names, NSERVERS, "C1");
    for (int i = 0; i < NSERVERS; i++) {
        char fields[800];
        snprintf(fields, sizeof fields,
                 "\"wal_dir\":\"%s/%s/wal\",\"authority\":\"auth.pub\",\"identity\":\"%s.key\","
                 "\"certificate\":\"%s.cert\",",
                 base, names[i], names[i], names[i]);
        write_config(names[i], names[i], client_port[i], cluster_port[i], fields, names,
                     cluster_port, NSERVERS);
    }
}

/* A connection to server i only. */
static natsConnection *connect_one(int i)
{
    natsOptions *opts = NULL;
    natsConnection *nc = connect_cluster(&client_port[i], 1, 1, &opts);
    natsOptions_Destroy(opts);
    return nc;
}

static void pub(natsConnection *nc, const char *subject, const char *data, const char *id)
{
    natsMsg *m = NULL;
    if (natsMsg_Create(&m, subject, NULL, data, (int)strlen(data)) != NATS_OK)
        die("natsMsg_Create");
    if (id) natsMsgHeader_Set(m, "X-Id", id);
    if (natsConnection_PublishMsg(nc, m) != NATS_OK) die("publish %s", subject);
    natsMsg_Destroy(m);
    natsConnection_Flush(nc);
}

/* Publishes probes on subject from nc until one of the subscriptions receives one, then
 * drains every subscription of what is left (more probes). */
static void wait_route(natsConnection *nc, const char *subject, natsSubscription **subs, int n,
                       const char *what)
{
    for (int t = 0;; t++) {
        if (t == PROBE_TRIES) die("%s: no probe on %s arrived", what, subject);
        pub(nc, subject, "probe", NULL);
        int got = 0;
        for (int i = 0; i < n && !got; i++) {
            natsMsg *m = NULL;
            if (natsSubscription_NextMsg(&m, subs[i], i ? 1 : 100) == NATS_OK) {
                got = 1;
                natsMsg_Destroy(m);
            }
        }
        if (got) break;
    }
    for (int i = 0; i < n; i++) {
        natsMsg *m = NULL;
        while (natsSubscription_NextMsg(&m, subs[i], 300) == NATS_OK) {
            if (strcmp(natsMsg_GetData(m), "probe")) die("%s: an unexpected message", what);
            natsMsg_Destroy(m);
        }
    }
}

/* Receives exactly `want` messages over the subscriptions (probes aside), each with a distinct
 * X-Id header below want and the data "m<id>", then nothing more. Returns how many each
 * subscription got in per (may be NULL). */
static void expect_once(natsSubscription **subs, int n, int want, int *per, const char *what)
{
    char seen[256] = {0};
    int got = 0;
    if (want > (int)sizeof seen) die("expect_once: too many");
    for (int i = 0; i < n; i++)
        if (per) per[i] = 0;
    double until = now_s() + 10;
    while (got < want) {
        if (now_s() > until) die("%s: %d of %d messages arrived", what, got, want);
        for (int i = 0; i < n; i++) {
            natsMsg *m = NULL;
            if (natsSubscription_NextMsg(&m, subs[i], 20) != NATS_OK) continue;
            if (!strcmp(natsMsg_GetData(m), "probe")) { /* a late probe of wait_route */
                natsMsg_Destroy(m);
                continue;
            }
            const char *v = NULL;
            if (natsMsgHeader_Get(m, "X-Id", &v) != NATS_OK || !v)
                die("%s: a message without its header (data \"%s\")", what, natsMsg_GetData(m));
            int id = atoi(v);
            char data[32];
            snprintf(data, sizeof data, "m%d", id);
            if (id < 0 || id >= want || strcmp(natsMsg_GetData(m), data))
                die("%s: message X-Id %s data \"%s\"", what, v, natsMsg_GetData(m));
            if (seen[id]++) die("%s: message %d arrived twice", what, id);
            got++;
            if (per) per[i]++;
            natsMsg_Destroy(m);
        }
    }
    for (int i = 0; i < n; i++) {
        natsMsg *m = NULL;
        while (natsSubscription_NextMsg(&m, subs[i], 300) == NATS_OK) {
            if (strcmp(natsMsg_GetData(m), "probe"))
                die("%s: an extra message (data \"%s\")", what, natsMsg_GetData(m));
            natsMsg_Destroy(m);
        }
    }
}

static void publish_ids(natsConnection *nc, const char *subject, int from, int to)
{
    for (int i = from; i < to; i++) {
        char id[16], data[32];
        snprintf(id, sizeof id, "%d", i);
        snprintf(data, sizeof data, "m%d", i);
        pub(nc, subject, data, id);
    }
}

/* The responder on A: answers "echo:<data>" with the request's X-Id header. */
static void on_request(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)sub;
    (void)closure;
    char out[256];
    snprintf(out, sizeof out, "echo:%.200s", natsMsg_GetData(m));
    natsMsg *r = NULL;
    if (natsMsg_GetReply(m) &&
        natsMsg_Create(&r, natsMsg_GetReply(m), NULL, out, (int)strlen(out)) == NATS_OK) {
        const char *v = NULL;
        if (natsMsgHeader_Get(m, "X-Id", &v) == NATS_OK && v) natsMsgHeader_Set(r, "X-Id", v);
        natsConnection_PublishMsg(nc, r);
        natsMsg_Destroy(r);
    }
    natsMsg_Destroy(m);
}

/* A request with header X-Id = id; returns the status, and the reply in *out. */
static natsStatus request(natsConnection *nc, const char *subject, const char *data, int id,
                          natsMsg **out)
{
    natsMsg *m = NULL;
    natsMsg_Create(&m, subject, NULL, data, (int)strlen(data));
    char v[16];
    snprintf(v, sizeof v, "%d", id);
    natsMsgHeader_Set(m, "X-Id", v);
    natsStatus s = natsConnection_RequestMsg(out, nc, m, 2000);
    natsMsg_Destroy(m);
    return s;
}

/* Requests on subject from nc until the answer is no-responders (interest withdrawn). */
static void wait_no_responders(natsConnection *nc, const char *subject, const char *what)
{
    for (int t = 0;; t++) {
        if (t == PROBE_TRIES) die("%s: requests on %s kept getting answers", what, subject);
        natsMsg *r = NULL;
        natsStatus s = request(nc, subject, "anyone", 0, &r);
        natsMsg_Destroy(r);
        if (s == NATS_NO_RESPONDERS) return;
        usleep(100000);
    }
}

int main(int argc, char **argv)
{
    procs_init(argc, argv, "routing", RUN_LIMIT_S);
    pick_cluster_ports(client_port, cluster_port, NSERVERS);
    write_configs();
    for (int i = 0; i < NSERVERS; i++) server_start(i, names[i]);
    natsConnection *nc[NSERVERS];
    for (int i = 0; i < NSERVERS; i++) nc[i] = connect_one(i);
    double t0 = now_s();

    /* 1. A subscriber on A; publishers on B and C. */
    natsSubscription *sa = NULL;
    if (natsConnection_SubscribeSync(&sa, nc[A], "t1.>") != NATS_OK) die("subscribe t1.>");
    natsConnection_Flush(nc[A]);
    wait_route(nc[B], "t1.x", &sa, 1, "B to A");
    wait_route(nc[C], "t1.y", &sa, 1, "C to A");
    publish_ids(nc[B], "t1.b", 0, NMSGS);
    publish_ids(nc[C], "t1.c", NMSGS, 2 * NMSGS);
    expect_once(&sa, 1, 2 * NMSGS, NULL, "sub on A, pubs on B and C");
    printf("ok: a subscriber on A got each of %d messages from B and C once, with headers "
           "(%.1f s)\n",
           2 * NMSGS, now_s() - t0);

    /* 1b. With its links up, A's INFO lists B and C in connect_urls: a client given A alone
     * learns where to reconnect. */
    {
        natsConnection *late = connect_one(A);
        char **urls = NULL;
        int nurls = 0;
        if (natsConnection_GetDiscoveredServers(late, &urls, &nurls) != NATS_OK)
            die("discovered servers");
        int found = 0;
        for (int i = 0; i < nurls; i++) {
            for (int k = 0; k < NSERVERS; k++) {
                char port[16];
                snprintf(port, sizeof port, ":%d", client_port[k]);
                if (k != A && strstr(urls[i], port)) found++;
            }
            free(urls[i]);
        }
        free(urls);
        if (nurls != NSERVERS - 1 || found != NSERVERS - 1)
            die("A's INFO connect_urls: %d discovered, %d of them B or C", nurls, found);
        natsConnection_Destroy(late);
        printf("ok: A's INFO names B and C in connect_urls\n");
    }

    /* 2. Request at C, responder on A. */
    natsSubscription *resp = NULL;
    if (natsConnection_Subscribe(&resp, nc[A], "svc.echo", on_request, NULL) != NATS_OK)
        die("subscribe svc.echo");
    natsConnection_Flush(nc[A]);
    for (int t = 0;; t++) {
        if (t == PROBE_TRIES) die("request at C: never answered");
        natsMsg *r = NULL;
        natsStatus s = request(nc[C], "svc.echo", "hello", 1, &r);
        natsMsg_Destroy(r);
        if (s == NATS_OK) break;
        usleep(100000);
    }
    for (int i = 0; i < 10; i++) {
        natsMsg *r = NULL;
        char data[32], want[64];
        snprintf(data, sizeof data, "req%d", i);
        snprintf(want, sizeof want, "echo:%s", data);
        natsStatus s = request(nc[C], "svc.echo", data, i, &r);
        if (s != NATS_OK) die("request %d at C: %s", i, natsStatus_GetText(s));
        const char *v = NULL;
        if (strcmp(natsMsg_GetData(r), want) || natsMsgHeader_Get(r, "X-Id", &v) != NATS_OK ||
            atoi(v) != i)
            die("request %d at C: reply \"%s\"", i, natsMsg_GetData(r));
        natsMsg_Destroy(r);
    }
    printf("ok: requests at C answered by the responder on A (%.1f s)\n", now_s() - t0);

    /* 3. A queue group with a member on A and one on B. */
    natsSubscription *q[2] = {NULL, NULL};
    if (natsConnection_QueueSubscribeSync(&q[0], nc[A], "work", "workers") != NATS_OK ||
        natsConnection_QueueSubscribeSync(&q[1], nc[B], "work", "workers") != NATS_OK)
        die("queue subscribe");
    natsConnection_Flush(nc[A]);
    natsConnection_Flush(nc[B]);
    /* C must know both members: probe until each got one. */
    for (int member = 0; member < 2; member++) {
        for (int t = 0;; t++) {
            if (t == PROBE_TRIES) die("queue member %d never picked from C", member);
            pub(nc[C], "work", "probe", NULL);
            natsMsg *m = NULL;
            if (natsSubscription_NextMsg(&m, q[member], 50) == NATS_OK) {
                natsMsg_Destroy(m);
                break;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        natsMsg *m = NULL;
        while (natsSubscription_NextMsg(&m, q[i], 300) == NATS_OK) natsMsg_Destroy(m);
    }
    int per[2];
    publish_ids(nc[C], "work", 0, 100);
    expect_once(q, 2, 100, per, "queue group, pubs on C");
    printf("ok: queue group: 100 messages from C once each (A %d, B %d) (%.1f s)\n", per[0], per[1],
           now_s() - t0);
    publish_ids(nc[A], "work", 0, 50);
    expect_once(q, 2, 50, per, "queue group, pubs on A");
    if (per[0] != 50) die("queue group: A's member got %d of A's 50 messages", per[0]);
    printf("ok: queue group: 50 messages from A once each, served by A's member\n");

    /* 4. No responders anywhere: the 503 status at once. */
    natsMsg *r = NULL;
    natsStatus s = request(nc[B], "nobody.home", "hi", 0, &r);
    if (s != NATS_NO_RESPONDERS) die("request nobody listens to: %s", natsStatus_GetText(s));
    printf("ok: a request nobody listens to gets no-responders\n");

    /* 5. Unsubscribe on A: withdrawn cluster-wide. */
    natsSubscription_Unsubscribe(resp);
    natsSubscription_Destroy(resp);
    natsConnection_Flush(nc[A]);
    wait_no_responders(nc[B], "svc.echo", "unsubscribe on A");
    printf("ok: after A's responder unsubscribed, B's requests get no-responders (%.1f s)\n",
           now_s() - t0);

    /* 6. Kill A and start it again: interest comes back both ways. */
    natsSubscription *sb = NULL;
    if (natsConnection_SubscribeSync(&sb, nc[B], "back.>") != NATS_OK) die("subscribe back.>");
    natsConnection_Flush(nc[B]);
    wait_route(nc[A], "back.1", &sb, 1, "A to B");
    server_kill(A);
    server_start(A, names[A]);
    wait_route(nc[B], "t1.again", &sa, 1, "B to restarted A");
    wait_route(nc[A], "back.2", &sb, 1, "restarted A to B");
    publish_ids(nc[B], "t1.b", 0, NMSGS);
    expect_once(&sa, 1, NMSGS, NULL, "after restart, sub on A");
    publish_ids(nc[A], "back.a", 0, NMSGS);
    expect_once(&sb, 1, NMSGS, NULL, "after restart, sub on B");
    printf("ok: A killed and restarted: its subscriber and B's get every message once again "
           "(%.1f s)\n",
           now_s() - t0);

    /* 7. A push consumer created at A delivering to a subscriber on C. */
    natsSubscription *sp = NULL;
    if (natsConnection_SubscribeSync(&sp, nc[C], "push.deliver") != NATS_OK)
        die("subscribe push.deliver");
    natsConnection_Flush(nc[C]);
    jsCtx *js = NULL;
    if (natsConnection_JetStream(&js, nc[A], NULL) != NATS_OK) die("no JetStream context");
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "EV";
    const char *subjects[] = {"ev.>"};
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Replicas = 3;
    for (int t = 0;; t++) {
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        s = js_AddStream(&si, js, &sc, NULL, &jerr);
        jsStreamInfo_Destroy(si);
        if (s == NATS_OK) break;
        if (t > 60) die("add stream EV: %s (err_code %d)", natsStatus_GetText(s), jerr);
        usleep(250000);
    }
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "pusher";
    cc.DeliverSubject = "push.deliver";
    cc.AckPolicy = js_AckNone;
    for (int t = 0;; t++) {
        jsConsumerInfo *ci = NULL;
        jsErrCode jerr = 0;
        s = js_AddConsumer(&ci, js, "EV", &cc, NULL, &jerr);
        jsConsumerInfo_Destroy(ci);
        if (s == NATS_OK) break;
        if (t > 60) die("add consumer: %s (err_code %d)", natsStatus_GetText(s), jerr);
        usleep(250000);
    }
    for (int i = 0; i < NMSGS; i++) {
        char id[16], data[32];
        snprintf(id, sizeof id, "%d", i);
        snprintf(data, sizeof data, "m%d", i);
        natsMsg *m = NULL;
        natsMsg_Create(&m, "ev.1", NULL, data, (int)strlen(data));
        natsMsgHeader_Set(m, "X-Id", id);
        jsPubAck *pa = NULL;
        jsErrCode jerr = 0;
        s = js_PublishMsg(&pa, js, m, NULL, &jerr);
        natsMsg_Destroy(m);
        jsPubAck_Destroy(pa);
        if (s != NATS_OK) die("js publish %d: %s (err_code %d)", i, natsStatus_GetText(s), jerr);
    }
    expect_once(&sp, 1, NMSGS, NULL, "push consumer at A, subscriber on C");
    printf("ok: a push consumer created at A delivers to its subscriber on C (%.1f s)\n",
           now_s() - t0);
    jsCtx_Destroy(js);

    natsSubscription_Destroy(sa);
    natsSubscription_Destroy(sb);
    natsSubscription_Destroy(sp);
    natsSubscription_Destroy(q[0]);
    natsSubscription_Destroy(q[1]);
    servers_check_alive();
    for (int i = 0; i < NSERVERS; i++) natsConnection_Destroy(nc[i]);
    servers_stop_all();
    printf("ok: every server exited 0 (%.1f s)\n", now_s() - t0);
    nats_Close();
    return 0;
}
