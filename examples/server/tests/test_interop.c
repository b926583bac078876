/*
 * test_interop.c — nats.c (libnats) against a 3-process jetraft-server cluster.
 *
 * Starts three jetraft-server processes on free loopback ports in a temporary directory,
 * creates ORDERS (R3) through the JetStream API, publishes 10,000 messages with acks (each with
 * a Nats-Msg-Id), kills the stream leader's process with SIGKILL in the middle, keeps
 * publishing (nats.c reconnects; every publish that failed or timed out is published again with
 * the same id until it is acknowledged), restarts the killed server, and checks that every
 * acknowledged message is stored exactly once at the sequence its ack named: read back by
 * sequence through the leader, then again after moving the leadership to each other replica,
 * then on each server's own replica with direct gets; then a durable pull consumer fetches the
 * whole stream in batches and acks every message.
 * Finally SIGTERM stops every server, which must exit 0. An alarm bounds the whole run; on
 * expiry every server is killed and the test fails.
 *
 * Usage: test_server_interop PATH/TO/jetraft-server
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <nats/nats.h>
#include <sodium.h>

#include "natsclient.h"
#include "procs.h"

#define NSERVERS 3
#define NMSGS 10000
#define KILL_AT 4000
#define RUN_LIMIT_S 360

static int client_port[NSERVERS], cluster_port[NSERVERS];
static const char *names[NSERVERS] = {"n1", "n2", "n3"};

/* Secure links with the keys make_keys makes; each server tagged az:<n>, its WAL and store
 * under base/<name>. */
static void write_configs(void)
{
    make_keys(names, NSERVERS, "C1");
    for (int i = 0; i < NSERVERS; i++) {
        char fields[800];
        snprintf(
            fields, sizeof fields,
            "\"tags\":[\"az:%d\"],\"authority\":\"auth.pub\",\"identity\":\"%s.key\","
            "\"certificate\":\"%s.cert\",\"wal_dir\":\"%s/%s/wal\",\"store_dir\":\"%s/%s/store\",",
            i + 1, names[i], names[i], base, names[i], base, names[i]);
        write_config(names[i], names[i], client_port[i], cluster_port[i], fields, names,
                     cluster_port, NSERVERS);
    }
}

/* ---- publish bookkeeping (the ack handler runs on a libnats thread) ------------------------ */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t acked_seq[NMSGS + 1]; /* 0: not acknowledged */
static int failed[NMSGS + 1];         /* the last attempt ended in an error */
static int outstanding;
static uint64_t ack_errors, duplicates_seen;

static int id_of(natsMsg *m)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, "Nats-Msg-Id", &v) != NATS_OK || !v) return -1;
    int id = atoi(v + 2); /* "m-<id>" */
    return id >= 1 && id <= NMSGS ? id : -1;
}

/* Records an ack; an id acknowledged twice must get the same sequence both times. */
static void record_ack(int id, uint64_t seq, int duplicate)
{
    if (duplicate) duplicates_seen++;
    if (acked_seq[id] && acked_seq[id] != seq)
        die("msg %d acknowledged at seq %llu and at seq %llu", id,
            (unsigned long long)acked_seq[id], (unsigned long long)seq);
    acked_seq[id] = seq;
    failed[id] = 0;
}

static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js;
    (void)closure;
    pthread_mutex_lock(&mu);
    int id = id_of(msg);
    if (id > 0) {
        if (pa)
            record_ack(id, pa->Sequence, pa->Duplicate);
        else {
            failed[id] = 1;
            ack_errors++;
        }
    }
    outstanding--;
    pthread_mutex_unlock(&mu);
    natsMsg_Destroy(msg);
}

static natsMsg *make_msg(int id)
{
    natsMsg *m = NULL;
    char subj[64], data[64], mid[32];
    snprintf(subj, sizeof subj, "orders.%d", id % 17);
    int n = snprintf(data, sizeof data, "order %d", id);
    snprintf(mid, sizeof mid, "m-%d", id);
    if (natsMsg_Create(&m, subj, NULL, data, n) != NATS_OK) die("natsMsg_Create");
    natsMsgHeader_Set(m, "Nats-Msg-Id", mid);
    return m;
}

static void publish_async(jsCtx *js, int id)
{
    natsMsg *m = make_msg(id);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 5000;
    pthread_mutex_lock(&mu);
    outstanding++;
    pthread_mutex_unlock(&mu);
    natsStatus s = js_PublishMsgAsync(js, &m, &po);
    if (s != NATS_OK) {
        /* Not sent (e.g. the window stalled past its wait): published again later. */
        pthread_mutex_lock(&mu);
        outstanding--;
        failed[id] = 1;
        pthread_mutex_unlock(&mu);
        natsMsg_Destroy(m);
    }
}

/* Publishes id synchronously until it is acknowledged (bounded by the run's alarm). */
static void publish_until_acked(jsCtx *js, int id)
{
    for (int attempt = 0;; attempt++) {
        servers_check_alive();
        natsMsg *m = make_msg(id);
        jsPubAck *pa = NULL;
        jsErrCode jerr = 0;
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = 5000;
        natsStatus s = js_PublishMsg(&pa, js, m, &po, &jerr);
        natsMsg_Destroy(m);
        if (s == NATS_OK) {
            pthread_mutex_lock(&mu);
            record_ack(id, pa->Sequence, pa->Duplicate);
            pthread_mutex_unlock(&mu);
            jsPubAck_Destroy(pa);
            return;
        }
        if (attempt % 5 == 4)
            fprintf(stderr, "  msg %d: attempt %d: %s (err_code %d)\n", id, attempt + 1,
                    natsStatus_GetText(s), (int)jerr);
        usleep(100000);
    }
}

static jsStreamInfo *stream_info(jsCtx *js, int tries)
{
    for (int i = 0; i < tries; i++) {
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        if (js_GetStreamInfo(&si, js, "ORDERS", NULL, &jerr) == NATS_OK) return si;
        usleep(200000);
    }
    die("no stream info for ORDERS");
}

/* Checks the message of id found at seq: once, at the sequence its ack named. */
static void check_found(const char *who, int *seen, int id, uint64_t seq)
{
    if (id < 1 || id > NMSGS)
        die("%s: seq %llu holds no valid message", who, (unsigned long long)seq);
    if (seen[id]++)
        die("%s: msg %d stored twice (again at seq %llu)", who, id, (unsigned long long)seq);
    if (acked_seq[id] && acked_seq[id] != seq)
        die("%s: msg %d acknowledged at seq %llu but found at seq %llu", who, id,
            (unsigned long long)acked_seq[id], (unsigned long long)seq);
}

/* Decodes base64 text into buf (NUL-terminated); -1 if it is not valid. */
static int unb64(const char *text, char *buf, size_t cap)
{
    size_t n = 0;
    if (!text || sodium_base642bin((unsigned char *)buf, cap - 1, text, strlen(text), NULL, &n,
                                   NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
        return -1;
    buf[n] = 0;
    return 0;
}

/* One STREAM.MSG.GET reply: 1 (found; *id set), 0 (no such message), -1 (an error to retry). */
static int parse_get_reply(natsMsg *m, int *id)
{
    json_error_t je;
    json_t *j = json_loadb(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), 0, &je);
    int rc = -1;
    json_t *err = json_object_get(j, "error");
    if (err) {
        rc = json_integer_value(json_object_get(err, "err_code")) == 10037 ? 0 : -1;
    } else {
        json_t *msg = json_object_get(j, "message");
        char data[128], hdrs[256];
        if (!unb64(json_string_value(json_object_get(msg, "data")), data, sizeof data) &&
            !unb64(json_string_value(json_object_get(msg, "hdrs")), hdrs, sizeof hdrs) &&
            !strncmp(data, "order ", 6)) {
            *id = atoi(data + 6);
            char want[64];
            snprintf(want, sizeof want, "Nats-Msg-Id: m-%d\r\n", *id);
            rc = strstr(hdrs, want) ? 1 : -2;
        }
    }
    json_decref(j);
    return rc;
}

/* Reads every sequence 1..last through the stream leader and checks each acknowledged id is
 * there once, at its acknowledged sequence. The reads are pipelined (a window of requests on
 * one inbox); one whose reply is an error or does not come is read again with js_GetMsg. */
static void verify_by_sequence(natsConnection *nc, jsCtx *js, const char *who)
{
    jsStreamInfo *si = stream_info(js, 50);
    uint64_t msgs = si->State.Msgs, last = si->State.LastSeq;
    char leader[64];
    snprintf(leader, sizeof leader, "%s",
             si->Cluster && si->Cluster->Leader ? si->Cluster->Leader : "?");
    jsStreamInfo_Destroy(si);
    if (last > 2 * NMSGS)
        die("%s: last seq %llu is far beyond the messages published", who,
            (unsigned long long)last);
    static int seen[NMSGS + 1];
    static char answered[2 * NMSGS + 1];
    memset(seen, 0, sizeof seen);
    memset(answered, 0, sizeof answered);
    double t0 = now_s();
    natsSubscription *sub = NULL;
    if (natsConnection_SubscribeSync(&sub, nc, "_INBOX.verify.*") != NATS_OK)
        die("cannot subscribe the verify inbox");
    natsSubscription_SetPendingLimits(sub, -1, -1);
    int inflight = 0;
    uint64_t next = 1;
    while (next <= last || inflight > 0) {
        if (next <= last && inflight < 256) {
            char reply[64], body[64];
            snprintf(reply, sizeof reply, "_INBOX.verify.%llu", (unsigned long long)next);
            snprintf(body, sizeof body, "{\"seq\":%llu}", (unsigned long long)next);
            natsConnection_PublishRequestString(nc, "$JS.API.STREAM.MSG.GET.ORDERS", reply, body);
            next++;
            inflight++;
            continue;
        }
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, sub, 5000) != NATS_OK) break; /* the rest: slow path */
        inflight--;
        uint64_t seq = strtoull(natsMsg_GetSubject(m) + strlen("_INBOX.verify."), NULL, 10);
        int id = 0, rc = parse_get_reply(m, &id);
        natsMsg_Destroy(m);
        if (seq < 1 || seq > last || answered[seq]) continue;
        if (rc == -2) die("%s: seq %llu holds the wrong headers", who, (unsigned long long)seq);
        if (rc < 0) continue; /* read again below */
        answered[seq] = 1;
        if (rc == 1) check_found(who, seen, id, seq);
    }
    natsSubscription_Destroy(sub);
    int slow = 0;
    for (uint64_t seq = 1; seq <= last; seq++) {
        if (answered[seq]) continue;
        slow++;
        natsMsg *m = NULL;
        jsErrCode jerr = 0;
        natsStatus s = NATS_TIMEOUT;
        for (int attempt = 0; attempt < 50 && s != NATS_OK; attempt++) {
            s = js_GetMsg(&m, js, "ORDERS", seq, NULL, &jerr);
            if (s == NATS_NOT_FOUND) break;
            if (s != NATS_OK) usleep(100000);
        }
        if (s == NATS_NOT_FOUND) continue; /* a gap: never acknowledged as that seq */
        if (s != NATS_OK)
            die("%s: msg get seq %llu: %s", who, (unsigned long long)seq, natsStatus_GetText(s));
        int id = id_of(m);
        char want[64];
        int wl = snprintf(want, sizeof want, "order %d", id);
        if (id < 0 || natsMsg_GetDataLength(m) != wl ||
            memcmp(natsMsg_GetData(m), want, (size_t)wl))
            die("%s: seq %llu holds the wrong message", who, (unsigned long long)seq);
        check_found(who, seen, id, seq);
        natsMsg_Destroy(m);
    }
    int missing = 0;
    for (int id = 1; id <= NMSGS; id++) missing += acked_seq[id] && !seen[id];
    if (missing) die("%s: %d acknowledged messages are missing", who, missing);
    printf("%s (leader %s): %llu messages, last seq %llu, every acknowledged one exactly once "
           "(%.1f s to read, %d read one by one)\n",
           who, leader, (unsigned long long)msgs, (unsigned long long)last, now_s() - t0, slow);
    if (msgs != NMSGS)
        die("%s: the stream holds %llu messages, expected %d", who, (unsigned long long)msgs,
            NMSGS);
}

/* Reads every sequence 1..last with direct gets on a connection to server i only, so that its
 * own replica answers (the stream allows direct reads; every replica is current), and checks
 * it holds every acknowledged message once, at its acknowledged sequence. */
static void verify_replica(int i, uint64_t last)
{
    char url[64];
    snprintf(url, sizeof url, "nats://127.0.0.1:%d", client_port[i]);
    natsConnection *c = NULL;
    if (natsConnection_ConnectTo(&c, url) != NATS_OK) die("cannot connect to %s", names[i]);
    natsSubscription *sub = NULL;
    if (natsConnection_SubscribeSync(&sub, c, "_INBOX.direct.*") != NATS_OK)
        die("cannot subscribe the direct inbox");
    natsSubscription_SetPendingLimits(sub, -1, -1);
    static int seen[NMSGS + 1];
    memset(seen, 0, sizeof seen);
    char who[64];
    snprintf(who, sizeof who, "replica on %s", names[i]);
    double t0 = now_s();
    uint64_t next = 1, got = 0;
    int inflight = 0;
    while (next <= last || inflight > 0) {
        if (next <= last && inflight < 256) {
            char reply[64], body[64];
            snprintf(reply, sizeof reply, "_INBOX.direct.%llu", (unsigned long long)next);
            snprintf(body, sizeof body, "{\"seq\":%llu}", (unsigned long long)next);
            natsConnection_PublishRequestString(c, "$JS.API.DIRECT.GET.ORDERS", reply, body);
            next++;
            inflight++;
            continue;
        }
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, sub, 5000) != NATS_OK)
            die("%s: %d direct gets unanswered", who, inflight);
        inflight--;
        uint64_t seq = strtoull(natsMsg_GetSubject(m) + strlen("_INBOX.direct."), NULL, 10);
        const char *v = NULL;
        if (natsMsgHeader_Get(m, "Nats-Sequence", &v) != NATS_OK || !v) {
            natsMsg_Destroy(m); /* a status: 404 is a gap, never acknowledged as that seq */
            continue;
        }
        if (strtoull(v, NULL, 10) != seq)
            die("%s: asked seq %llu, got %s", who, (unsigned long long)seq, v);
        int id = id_of(m);
        char want[64];
        int wl = snprintf(want, sizeof want, "order %d", id);
        if (id < 0 || natsMsg_GetDataLength(m) != wl ||
            memcmp(natsMsg_GetData(m), want, (size_t)wl))
            die("%s: seq %llu holds the wrong message", who, (unsigned long long)seq);
        check_found(who, seen, id, seq);
        got++;
        natsMsg_Destroy(m);
    }
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(c);
    int missing = 0;
    for (int id = 1; id <= NMSGS; id++) missing += acked_seq[id] && !seen[id];
    if (missing) die("%s: %d acknowledged messages are missing", who, missing);
    printf("%s: %llu messages by direct get, every acknowledged one exactly once (%.1f s)\n", who,
           (unsigned long long)got, now_s() - t0);
}

/* Pull-consumes the whole stream with a durable consumer (batches of 100, each message acked,
 * the last of each batch synchronously): every acknowledged message exactly once, at the
 * sequence its publish ack named, in order; then the consumer's info shows nothing pending. */
static void pull_consume(jsCtx *js, uint64_t msgs, uint64_t last)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "ORDERS";
    so.Config.AckPolicy = js_AckExplicit;
    natsSubscription *sub = NULL;
    jsErrCode jerr = 0;
    natsStatus s = NATS_ERR;
    for (int attempt = 0; attempt < 40 && s != NATS_OK; attempt++)
        if ((s = js_PullSubscribe(&sub, js, "orders.>", "PULL", NULL, &so, &jerr)) != NATS_OK)
            usleep(250000);
    if (s != NATS_OK) die("js_PullSubscribe: %s (err_code %d)", natsStatus_GetText(s), jerr);
    static int seen[NMSGS + 1];
    memset(seen, 0, sizeof seen);
    uint64_t got = 0, prev = 0;
    double t0 = now_s();
    while (got < msgs) {
        if (now_s() - t0 > 120)
            die("pull consumer: %llu of %llu after 120 s", (unsigned long long)got,
                (unsigned long long)msgs);
        natsMsgList list = {0};
        s = natsSubscription_Fetch(&list, sub, 100, 5000, &jerr);
        if (s == NATS_TIMEOUT) continue;
        if (s != NATS_OK) die("fetch: %s (err_code %d)", natsStatus_GetText(s), jerr);
        for (int i = 0; i < list.Count; i++) {
            natsMsg *m = list.Msgs[i];
            jsMsgMetaData *md = NULL;
            if (natsMsg_GetMetaData(&md, m) != NATS_OK) die("a fetched message has no metadata");
            uint64_t seq = md->Sequence.Stream;
            if (md->NumDelivered != 1)
                die("seq %llu delivered %llu times", (unsigned long long)seq,
                    (unsigned long long)md->NumDelivered);
            jsMsgMetaData_Destroy(md);
            if (seq <= prev || seq > last)
                die("pull consumer: seq %llu after %llu (last %llu)", (unsigned long long)seq,
                    (unsigned long long)prev, (unsigned long long)last);
            prev = seq;
            check_found("pull consumer", seen, id_of(m), seq);
            got++;
            s = i == list.Count - 1 ? natsMsg_AckSync(m, NULL, &jerr) : natsMsg_Ack(m, NULL);
            if (s != NATS_OK)
                die("ack of seq %llu: %s", (unsigned long long)seq, natsStatus_GetText(s));
        }
        natsMsgList_Destroy(&list);
    }
    for (int id = 1; id <= NMSGS; id++)
        if (acked_seq[id] && !seen[id]) die("pull consumer: acknowledged msg %d not delivered", id);
    jsConsumerInfo *ci = NULL;
    for (int attempt = 0;; attempt++) {
        if (js_GetConsumerInfo(&ci, js, "ORDERS", "PULL", NULL, &jerr) == NATS_OK &&
            ci->NumAckPending == 0 && ci->AckFloor.Stream == last && ci->NumPending == 0)
            break;
        if (attempt > 50) die("pull consumer info: %s", ci ? "acks not all applied" : "no answer");
        jsConsumerInfo_Destroy(ci);
        ci = NULL;
        usleep(100000);
    }
    jsConsumerInfo_Destroy(ci);
    natsSubscription_Destroy(sub);
    printf("pull consumer: %llu messages fetched in batches of 100 and acked in %.1f s, every "
           "acknowledged one exactly once, in order; ack floor %llu, nothing pending\n",
           (unsigned long long)got, now_s() - t0, (unsigned long long)last);
}

/* Waits until the stream has a leader and every replica is current. */
static void wait_current(jsCtx *js, double limit_s)
{
    double end = now_s() + limit_s;
    while (now_s() < end) {
        servers_check_alive();
        jsStreamInfo *si = stream_info(js, 50);
        int ok = si->Cluster && si->Cluster->Leader && si->Cluster->ReplicasLen == NSERVERS - 1;
        for (int i = 0; ok && i < si->Cluster->ReplicasLen; i++)
            ok = si->Cluster->Replicas[i]->Current;
        jsStreamInfo_Destroy(si);
        if (ok) return;
        usleep(200000);
    }
    die("the stream's replicas did not all become current");
}

static void stepdown_to(natsConnection *nc, const char *peer)
{
    char body[128];
    snprintf(body, sizeof body, "{\"placement\":{\"preferred\":\"%s\"}}", peer);
    for (int attempt = 0; attempt < 30; attempt++) {
        natsMsg *reply = NULL;
        natsStatus s = natsConnection_RequestString(
            &reply, nc, "$JS.API.STREAM.LEADER.STEPDOWN.ORDERS", body, 5000);
        int ok = s == NATS_OK && strstr(natsMsg_GetData(reply), "\"success\":true");
        natsMsg_Destroy(reply);
        if (ok) return;
        usleep(300000);
    }
    die("could not move the leadership of ORDERS to %s", peer);
}

int main(int argc, char **argv)
{
    procs_init(argc, argv, "interop", RUN_LIMIT_S);
    pick_cluster_ports(client_port, cluster_port, NSERVERS);
    write_configs();
    for (int i = 0; i < NSERVERS; i++) server_start(i, names[i]);

    /* A connection that knows every server and reconnects for as long as the test runs. */
    natsOptions *opts = NULL;
    natsConnection *nc = connect_cluster(client_port, NSERVERS, 1, &opts);

    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 1000;
    jo.PublishAsync.AckHandler = on_ack;
    jo.PublishAsync.StallWait = 5000;
    jsCtx *js = NULL;
    if (natsConnection_JetStream(&js, nc, &jo) != NATS_OK) die("no JetStream context");

    /* Create ORDERS R3 once the cluster elected a meta leader. */
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "ORDERS";
    const char *subjects[] = {"orders.>"};
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Replicas = 3;
    sc.Storage = js_FileStorage;
    sc.AllowDirect = true;
    double t0 = now_s();
    for (;;) {
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_AddStream(&si, js, &sc, NULL, &jerr);
        if (s == NATS_OK) {
            if (!si->Cluster || !si->Cluster->Leader) die("the created stream shows no leader");
            printf("ORDERS R3 created in %.1f s, leader %s\n", now_s() - t0, si->Cluster->Leader);
            jsStreamInfo_Destroy(si);
            break;
        }
        if (now_s() - t0 > 60) die("js_AddStream: %s (err_code %d)", natsStatus_GetText(s), jerr);
        usleep(250000);
    }
    /* The same config again is accepted; another config under the name is refused (10058). */
    {
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        if (js_AddStream(&si, js, &sc, NULL, &jerr) != NATS_OK) die("idempotent add failed");
        jsStreamInfo_Destroy(si);
        si = NULL;
        jsStreamConfig other = sc;
        other.MaxMsgs = 5;
        if (js_AddStream(&si, js, &other, NULL, &jerr) == NATS_OK || jerr != 10058)
            die("an add with another config was not refused with 10058 (got %d)", (int)jerr);
    }

    jsStreamInfo *si = stream_info(js, 50);
    char leader[64];
    snprintf(leader, sizeof leader, "%s", si->Cluster->Leader);
    jsStreamInfo_Destroy(si);
    int victim = name_index(names, NSERVERS, leader);
    if (victim < 0) die("unknown leader %s", leader);

    /* The publisher connects to the leader's server first, so that the kill also cuts its
     * connection: it must reconnect to another server and replay what it had buffered. */
    int pub_ports[NSERVERS];
    pub_ports[0] = client_port[victim];
    for (int i = 0, k = 1; i < NSERVERS; i++)
        if (i != victim) pub_ports[k++] = client_port[i];
    natsOptions *popts = NULL;
    natsConnection *pnc = connect_cluster(pub_ports, NSERVERS, 0, &popts);
    jsCtx *pjs = NULL;
    if (natsConnection_JetStream(&pjs, pnc, &jo) != NATS_OK) die("no JetStream context");
    char pub_url[64];
    natsConnection_GetConnectedUrl(pnc, pub_url, sizeof pub_url);

    /* Publish with acks; kill -9 the leader's process in the middle. */
    t0 = now_s();
    for (int id = 1; id <= NMSGS; id++) {
        publish_async(pjs, id);
        if (id == KILL_AT) {
            printf("published %d in %.1f s; SIGKILL to the stream leader %s (pid %d), the "
                   "publisher's server (%s)\n",
                   id, now_s() - t0, leader, (int)pids[victim], pub_url);
            server_kill(victim);
        }
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 30000;
    js_PublishAsyncComplete(pjs, &po);
    for (int wait = 0; wait < 100; wait++) { /* the last callbacks */
        pthread_mutex_lock(&mu);
        int left = outstanding;
        pthread_mutex_unlock(&mu);
        if (left <= 0) break;
        usleep(100000);
    }
    servers_check_alive();
    int retried = 0;
    for (int id = 1; id <= NMSGS; id++) {
        pthread_mutex_lock(&mu);
        int again = !acked_seq[id];
        pthread_mutex_unlock(&mu);
        if (again) {
            publish_until_acked(pjs, id);
            retried++;
        }
    }
    printf("all %d acknowledged in %.1f s (%llu async errors, %d published again, %llu "
           "duplicate acks)\n",
           NMSGS, now_s() - t0, (unsigned long long)ack_errors, retried,
           (unsigned long long)duplicates_seen);

    natsConnection_GetConnectedUrl(pnc, pub_url, sizeof pub_url);
    printf("the publisher is now on %s\n", pub_url);
    jsCtx_Destroy(pjs);
    natsConnection_Destroy(pnc);
    natsOptions_Destroy(popts);
    server_start(victim, names[victim]);
    printf("restarted %s\n", leader);
    wait_current(js, 60);
    verify_by_sequence(nc, js, "after the restart");

    /* Each other replica leads in turn and must hold the same messages. */
    for (int i = 0; i < NSERVERS; i++) {
        si = stream_info(js, 50);
        int cur = name_index(names, NSERVERS, si->Cluster->Leader);
        jsStreamInfo_Destroy(si);
        if (cur == i) continue;
        stepdown_to(nc, names[i]);
        wait_current(js, 60);
        char who[64];
        snprintf(who, sizeof who, "led by %s", names[i]);
        verify_by_sequence(nc, js, who);
    }

    /* And each replica read on its own server. */
    si = stream_info(js, 50);
    uint64_t last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    for (int i = 0; i < NSERVERS; i++) verify_replica(i, last);
    si = stream_info(js, 50);
    uint64_t msgs = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    pull_consume(js, msgs, last);

    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(opts);

    /* SIGTERM: each server shuts down cleanly and exits 0. */
    servers_stop_all();
    printf("every server exited 0 on SIGTERM\n");
    nats_Close();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
    return 0;
}
