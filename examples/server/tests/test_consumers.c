/*
 * test_consumers.c — nats.c (libnats) consumers against a 3-process jetraft-server cluster.
 *
 * Creates ORDERS (R3), publishes, then uses the consumer API as nats.c applications do: a
 * durable pull subscription (js_PullSubscribe: stream lookup by subject, consumer info, durable
 * create; then again, binding to it), natsSubscription_Fetch in batches with natsMsg_Ack until
 * every message came exactly once in stream order, consumer info (config echoed, delivered, ack
 * floor, pending counts), a fetch with nothing to deliver (it ends with NATS_TIMEOUT, not an
 * error), a NAK (redelivered with a delivery count of 2), a NAK with a delay, a TERM (never
 * redelivered), AckSync and InProgress, consumer names and list, the consumer leader stepped down
 * and then killed with SIGKILL while messages keep coming (every one still delivered and
 * acknowledged), delete (then info says 10014), and a durable push consumer (js_SubscribeSync) that
 * delivers every message in order to its deliver subject. Finally SIGTERM stops every server, which
 * must exit 0. An alarm bounds the whole run; on expiry every server is killed and the test fails.
 *
 * The servers link in plain mode (insecure_cluster): peer security is server-secure's test.
 *
 * Usage: test_server_consumers PATH/TO/jetraft-server
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nats/nats.h>

#include "natsclient.h"
#include "procs.h"

#define NSERVERS 3
#define NMSGS 300
#define RUN_LIMIT_S 240

static int client_port[NSERVERS], cluster_port[NSERVERS];
static const char *names[NSERVERS] = {"n1", "n2", "n3"};

/* Plain links (insecure_cluster); each server's WAL and store under base/<name>. */
static void write_configs(void)
{
    for (int i = 0; i < NSERVERS; i++) {
        char fields[800];
        snprintf(
            fields, sizeof fields,
            "\"wal_dir\":\"%s/%s/wal\",\"store_dir\":\"%s/%s/store\",\"insecure_cluster\":true,",
            base, names[i], base, names[i]);
        write_config(names[i], names[i], client_port[i], cluster_port[i], fields, names,
                     cluster_port, NSERVERS);
    }
}

static void publish(jsCtx *js, int id)
{
    char subj[64], data[64];
    snprintf(subj, sizeof subj, "orders.%d", id % 5);
    int n = snprintf(data, sizeof data, "order %d", id);
    /* with a message id: a publish retried after a lost ack is stored once */
    char mid[32];
    snprintf(mid, sizeof mid, "m-%d", id);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = mid;
    po.MaxWait = 5000;
    for (int attempt = 0;; attempt++) {
        jsPubAck *pa = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_Publish(&pa, js, subj, data, n, &po, &jerr);
        if (s == NATS_OK && pa->Sequence != (uint64_t)id)
            die("msg %d stored at seq %llu", id, (unsigned long long)pa->Sequence);
        jsPubAck_Destroy(pa);
        if (s == NATS_OK) return;
        if (attempt > 100) die("publish %d: %s (err_code %d)", id, natsStatus_GetText(s), jerr);
        usleep(100000);
    }
}

static jsConsumerInfo *consumer_info(jsCtx *js, const char *name)
{
    for (int attempt = 0;; attempt++) {
        jsConsumerInfo *ci = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_GetConsumerInfo(&ci, js, "ORDERS", name, NULL, &jerr);
        if (s == NATS_OK) return ci;
        if (attempt > 100)
            die("consumer info %s: %s (err_code %d)", name, natsStatus_GetText(s), jerr);
        usleep(100000);
    }
}

/* Waits until the consumer's state shows every delivery up to stream seq `last` acknowledged. */
static jsConsumerInfo *wait_acked(jsCtx *js, uint64_t last)
{
    for (int attempt = 0;; attempt++) {
        jsConsumerInfo *ci = consumer_info(js, "dur1");
        if (ci->NumAckPending == 0 && ci->AckFloor.Stream == last) return ci;
        if (attempt > 100)
            die("consumer dur1: ack floor %llu (want %llu), %lld ack pending",
                (unsigned long long)ci->AckFloor.Stream, (unsigned long long)last,
                (long long)ci->NumAckPending);
        jsConsumerInfo_Destroy(ci);
        usleep(100000);
    }
}

static void meta_of(natsMsg *m, uint64_t *sseq, uint64_t *delivered);

/* Fetches and acknowledges redeliveries (acks sent while the consumer had no leader are lost,
 * as in JetStream) until every delivery up to stream seq `last` is acknowledged. */
static jsConsumerInfo *settle(natsSubscription *sub, jsCtx *js, uint64_t last)
{
    for (int attempt = 0;; attempt++) {
        jsConsumerInfo *ci = consumer_info(js, "dur1");
        if (ci->NumAckPending == 0 && ci->AckFloor.Stream == last) return ci;
        if (attempt > 60)
            die("consumer dur1 did not settle: ack floor %llu (want %llu), %lld ack pending",
                (unsigned long long)ci->AckFloor.Stream, (unsigned long long)last,
                (long long)ci->NumAckPending);
        jsConsumerInfo_Destroy(ci);
        natsMsgList list = {0};
        natsSubscription_Fetch(&list, sub, 10, 1000, NULL);
        for (int i = 0; i < list.Count; i++) {
            uint64_t sseq, dc;
            meta_of(list.Msgs[i], &sseq, &dc);
            if (sseq > last) die("delivered seq %llu", (unsigned long long)sseq);
            natsMsg_Ack(list.Msgs[i], NULL);
        }
        natsMsgList_Destroy(&list);
    }
}

/* The stream seq and delivery count of a delivery (from its ack subject). */
static void meta_of(natsMsg *m, uint64_t *sseq, uint64_t *delivered)
{
    jsMsgMetaData *md = NULL;
    if (natsMsg_GetMetaData(&md, m) != NATS_OK)
        die("a delivery without JetStream metadata (reply %s)", natsMsg_GetReply(m));
    if (strcmp(md->Stream, "ORDERS") || strcmp(md->Consumer, "dur1"))
        die("a delivery names %s > %s", md->Stream, md->Consumer);
    *sseq = md->Sequence.Stream;
    *delivered = md->NumDelivered;
    jsMsgMetaData_Destroy(md);
}

/* Fetches one message (retrying through failovers), checked to be stream seq `want`. */
static natsMsg *fetch_one(natsSubscription *sub, uint64_t want, uint64_t want_delivered)
{
    for (int attempt = 0; attempt < 60; attempt++) {
        natsMsgList list = {0};
        jsErrCode jerr = 0;
        natsStatus s = natsSubscription_Fetch(&list, sub, 1, 2000, &jerr);
        if (s == NATS_OK && list.Count == 1) {
            natsMsg *m = list.Msgs[0];
            list.Msgs[0] = NULL;
            natsMsgList_Destroy(&list);
            uint64_t sseq, dc;
            meta_of(m, &sseq, &dc);
            if (sseq != want || dc != want_delivered)
                die("fetched seq %llu (delivery %llu), expected seq %llu (delivery %llu)",
                    (unsigned long long)sseq, (unsigned long long)dc, (unsigned long long)want,
                    (unsigned long long)want_delivered);
            return m;
        }
        natsMsgList_Destroy(&list);
    }
    die("no delivery of seq %llu", (unsigned long long)want);
}

/* Fetches and acknowledges until every stream seq in (from, to] came at least once. */
static void drain(natsSubscription *sub, uint64_t from, uint64_t to, int batch, int exactly_once)
{
    static char seen[NMSGS + 200];
    memset(seen, 0, sizeof seen);
    uint64_t got = 0;
    for (int rounds = 0; got < to - from; rounds++) {
        if (rounds > 400)
            die("only %llu of %llu delivered", (unsigned long long)got,
                (unsigned long long)(to - from));
        natsMsgList list = {0};
        jsErrCode jerr = 0;
        natsStatus s = natsSubscription_Fetch(&list, sub, batch, 3000, &jerr);
        if (s != NATS_OK && s != NATS_TIMEOUT && rounds % 10 == 9)
            fprintf(stderr, "  fetch: %s (err_code %d)\n", natsStatus_GetText(s), (int)jerr);
        for (int i = 0; i < list.Count; i++) {
            uint64_t sseq, dc;
            meta_of(list.Msgs[i], &sseq, &dc);
            if (sseq <= from && !exactly_once && sseq > 0) {
                /* a redelivery of an earlier message whose ack the killed leader lost */
                natsMsg_Ack(list.Msgs[i], NULL);
                continue;
            }
            if (sseq <= from || sseq > to) die("delivered seq %llu", (unsigned long long)sseq);
            char want[64];
            int wl = snprintf(want, sizeof want, "order %llu", (unsigned long long)sseq);
            if (natsMsg_GetDataLength(list.Msgs[i]) != wl ||
                memcmp(natsMsg_GetData(list.Msgs[i]), want, (size_t)wl))
                die("seq %llu holds the wrong message", (unsigned long long)sseq);
            if (seen[sseq] && exactly_once)
                die("seq %llu delivered twice", (unsigned long long)sseq);
            if (exactly_once && dc != 1)
                die("seq %llu: delivery count %llu", (unsigned long long)sseq,
                    (unsigned long long)dc);
            if (!seen[sseq]++) got++;
            if (natsMsg_Ack(list.Msgs[i], NULL) != NATS_OK) die("ack failed");
        }
        natsMsgList_Destroy(&list);
    }
}

static void request_ok(natsConnection *nc, const char *subject, const char *body, const char *want)
{
    for (int attempt = 0; attempt < 30; attempt++) {
        natsMsg *reply = NULL;
        natsStatus s = natsConnection_RequestString(&reply, nc, subject, body, 5000);
        int ok = s == NATS_OK && strstr(natsMsg_GetData(reply), want);
        if (s == NATS_OK && !ok && attempt == 29)
            die("%s: %.*s", subject, natsMsg_GetDataLength(reply), natsMsg_GetData(reply));
        natsMsg_Destroy(reply);
        if (ok) return;
        usleep(300000);
    }
    die("%s: no answer with %s", subject, want);
}

int main(int argc, char **argv)
{
    procs_init(argc, argv, "consumers", RUN_LIMIT_S);
    pick_cluster_ports(client_port, cluster_port, NSERVERS);
    write_configs();
    for (int i = 0; i < NSERVERS; i++) server_start(i, names[i]);

    natsOptions *opts = NULL;
    natsConnection *nc = connect_cluster(client_port, NSERVERS, 1, &opts);
    jsCtx *js = NULL;
    if (natsConnection_JetStream(&js, nc, NULL) != NATS_OK) die("no JetStream context");

    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "ORDERS";
    const char *subjects[] = {"orders.>"};
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Replicas = 3;
    double t0 = now_s();
    for (;;) {
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_AddStream(&si, js, &sc, NULL, &jerr);
        jsStreamInfo_Destroy(si);
        if (s == NATS_OK) break;
        if (now_s() - t0 > 60) die("js_AddStream: %s (err_code %d)", natsStatus_GetText(s), jerr);
        usleep(250000);
    }
    for (int id = 1; id <= NMSGS; id++) publish(js, id);
    printf("ORDERS R3: %d messages published\n", NMSGS);

    /* A durable pull subscription as nats.c binds it: the stream found by subject, the consumer
     * looked up (not found), then created with the subscription's subject as its filter. */
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.MaxAckPending = 500;
    so.Config.AckWait = 2000000000; /* acks lost with a killed leader: redelivered soon */
    natsSubscription *sub = NULL;
    for (int attempt = 0;; attempt++) {
        jsErrCode jerr = 0;
        natsStatus s = js_PullSubscribe(&sub, js, "orders.>", "dur1", NULL, &so, &jerr);
        if (s == NATS_OK) break;
        if (attempt > 50)
            die("js_PullSubscribe: %s (err_code %d): %s", natsStatus_GetText(s), (int)jerr,
                nats_GetLastError(NULL));
        usleep(200000);
    }
    /* Subscribing again with the same options binds to the durable: nats.c compares every
     * field it set with the config the server echoes. */
    {
        natsSubscription *again = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_PullSubscribe(&again, js, "orders.>", "dur1", NULL, &so, &jerr);
        if (s != NATS_OK)
            die("binding to dur1 again: %s (err_code %d): %s", natsStatus_GetText(s), (int)jerr,
                nats_GetLastError(NULL));
        natsSubscription_Destroy(again);
    }
    t0 = now_s();
    drain(sub, 0, NMSGS, 50, 1);
    printf("fetched and acknowledged %d, each once and first time (%.1f s)\n", NMSGS, now_s() - t0);

    jsConsumerInfo *ci = wait_acked(js, NMSGS);
    if (strcmp(ci->Stream, "ORDERS") || strcmp(ci->Name, "dur1") || !ci->Config ||
        !ci->Config->Durable || strcmp(ci->Config->Durable, "dur1") ||
        ci->Config->AckPolicy != js_AckExplicit || ci->Config->MaxAckPending != 500 ||
        !ci->Config->FilterSubject || strcmp(ci->Config->FilterSubject, "orders.>") ||
        ci->Config->AckWait != 2000000000LL || ci->Config->MaxWaiting != 512)
        die("consumer info: wrong config");
    if (ci->Delivered.Stream != NMSGS || ci->Delivered.Consumer != NMSGS ||
        ci->AckFloor.Consumer != NMSGS || ci->NumPending != 0 || ci->NumRedelivered != 0 ||
        ci->Created <= 0)
        die("consumer info: delivered %llu/%llu, floor %llu, pending %llu, redelivered %lld",
            (unsigned long long)ci->Delivered.Stream, (unsigned long long)ci->Delivered.Consumer,
            (unsigned long long)ci->AckFloor.Consumer, (unsigned long long)ci->NumPending,
            (long long)ci->NumRedelivered);
    if (!ci->Cluster || !ci->Cluster->Leader || ci->Cluster->ReplicasLen != NSERVERS - 1)
        die("consumer info: no cluster block with a leader and %d replicas", NSERVERS - 1);
    printf("consumer info: delivered %llu, ack floor %llu, leader %s\n",
           (unsigned long long)ci->Delivered.Stream, (unsigned long long)ci->AckFloor.Stream,
           ci->Cluster->Leader);
    jsConsumerInfo_Destroy(ci);

    /* Nothing to deliver: the fetch ends with a timeout status, not an error. */
    {
        natsMsgList list = {0};
        natsStatus s = natsSubscription_Fetch(&list, sub, 10, 500, NULL);
        if (s != NATS_TIMEOUT || list.Count != 0)
            die("an empty fetch gave %s with %d messages", natsStatus_GetText(s), list.Count);
        natsMsgList_Destroy(&list);
    }

    /* NAK, TERM, AckSync, InProgress, NAK with a delay. */
    uint64_t seq = NMSGS;
    for (int id = NMSGS + 1; id <= NMSGS + 4; id++) publish(js, id);
    natsMsg *a = fetch_one(sub, seq + 1, 1), *b = fetch_one(sub, seq + 2, 1),
            *c = fetch_one(sub, seq + 3, 1);
    if (natsMsg_Nak(a, NULL) != NATS_OK) die("nak");
    if (natsMsg_Term(b, NULL) != NATS_OK) die("term");
    if (natsMsg_InProgress(c, NULL) != NATS_OK) die("in progress");
    jsErrCode jerr = 0;
    if (natsMsg_AckSync(c, NULL, &jerr) != NATS_OK) die("ack sync: err_code %d", (int)jerr);
    natsMsg_Destroy(b);
    natsMsg_Destroy(c);
    natsMsg_Destroy(a);
    a = fetch_one(sub, seq + 1, 2); /* the NAK: first, before the next new message */
    ci = consumer_info(js, "dur1");
    if (ci->NumRedelivered != 1 || ci->NumAckPending != 1)
        die("after a redelivery: num_redelivered %lld, num_ack_pending %lld (want 1, 1)",
            (long long)ci->NumRedelivered, (long long)ci->NumAckPending);
    jsConsumerInfo_Destroy(ci);
    if (natsMsg_AckSync(a, NULL, &jerr) != NATS_OK) die("ack sync of a redelivery");
    natsMsg_Destroy(a);
    a = fetch_one(sub, seq + 4, 1); /* the TERM'd seq + 2 never comes back */
    if (natsMsg_NakWithDelay(a, 300, NULL) != NATS_OK) die("nak with delay");
    natsMsg_Destroy(a);
    a = fetch_one(sub, seq + 4, 2);
    natsMsg_Ack(a, NULL);
    natsMsg_Destroy(a);
    seq += 4;
    ci = wait_acked(js, seq);
    if (ci->NumRedelivered != 0) /* counted while pending, as JetStream */
        die("num_redelivered %lld once acknowledged", (long long)ci->NumRedelivered);
    jsConsumerInfo_Destroy(ci);
    printf("nak, term, ack sync, in progress, nak with delay: ok\n");

    /* Names and list. */
    {
        jsConsumerNamesList *nl = NULL;
        jsConsumerInfoList *il = NULL;
        if (js_ConsumerNames(&nl, js, "ORDERS", NULL, &jerr) != NATS_OK || nl->Count != 1 ||
            strcmp(nl->List[0], "dur1"))
            die("consumer names");
        if (js_Consumers(&il, js, "ORDERS", NULL, &jerr) != NATS_OK || il->Count != 1 ||
            strcmp(il->List[0]->Name, "dur1"))
            die("consumer list");
        jsConsumerNamesList_Destroy(nl);
        jsConsumerInfoList_Destroy(il);
    }

    /* The consumer's leadership moves, then its leader's process is killed while messages
     * keep coming: the consumer goes on from its replicated state. */
    ci = consumer_info(js, "dur1");
    char leader[64];
    snprintf(leader, sizeof leader, "%s", ci->Cluster->Leader);
    jsConsumerInfo_Destroy(ci);
    request_ok(nc, "$JS.API.CONSUMER.LEADER.STEPDOWN.ORDERS.dur1", "", "\"success\":true");
    for (int attempt = 0;; attempt++) {
        ci = consumer_info(js, "dur1");
        int moved = ci->Cluster && ci->Cluster->Leader && strcmp(ci->Cluster->Leader, leader);
        if (moved) snprintf(leader, sizeof leader, "%s", ci->Cluster->Leader);
        jsConsumerInfo_Destroy(ci);
        if (moved) break;
        if (attempt > 50) die("the consumer's leadership did not move");
        usleep(100000);
    }
    for (int id = (int)seq + 1; id <= (int)seq + 20; id++) publish(js, id);
    drain(sub, seq, seq + 20, 7, 1);
    seq += 20;
    printf("after a stepdown to %s: 20 more, each once\n", leader);
    int victim = name_index(names, NSERVERS, leader);
    if (victim < 0) die("unknown consumer leader %s", leader);
    server_kill(victim);
    for (int id = (int)seq + 1; id <= (int)seq + 20; id++) publish(js, id);
    drain(sub, seq, seq + 20, 7, 0); /* at least once: a delivery may be in flight at the kill */
    seq += 20;
    ci = settle(sub, js, seq);
    printf("after SIGKILL to the consumer leader %s: 20 more delivered, ack floor %llu (leader "
           "%s)\n",
           leader, (unsigned long long)ci->AckFloor.Stream,
           ci->Cluster && ci->Cluster->Leader ? ci->Cluster->Leader : "?");
    jsConsumerInfo_Destroy(ci);
    server_start(victim, names[victim]);

    /* nats.c deletes the durable it created when the subscription unsubscribes; then it is
     * gone (10014) and another delete is refused. */
    if (natsSubscription_Unsubscribe(sub) != NATS_OK) die("unsubscribe (consumer delete)");
    natsSubscription_Destroy(sub);
    ci = NULL;
    natsStatus s = js_GetConsumerInfo(&ci, js, "ORDERS", "dur1", NULL, &jerr);
    if (s != NATS_NOT_FOUND || jerr != 10014)
        die("info after delete: %s, err_code %d", natsStatus_GetText(s), (int)jerr);
    s = js_DeleteConsumer(js, "ORDERS", "dur1", NULL, &jerr);
    if (s != NATS_NOT_FOUND || jerr != 10014)
        die("a second delete: %s, err_code %d", natsStatus_GetText(s), (int)jerr);
    printf("deleted; info and delete answer 10014\n");

    /* A durable push consumer (js_SubscribeSync): every message comes to the deliver subject
     * once, in order, with its ack subject; acknowledged, the consumer's floor reaches the end. */
    {
        jsSubOptions po;
        jsSubOptions_Init(&po);
        po.Config.Durable = "push1";
        po.Config.AckPolicy = js_AckExplicit;
        natsSubscription *ps = NULL;
        for (int attempt = 0;; attempt++) {
            s = js_SubscribeSync(&ps, js, "orders.>", NULL, &po, &jerr);
            if (s == NATS_OK) break;
            if (attempt > 50)
                die("js_SubscribeSync: %s (err_code %d): %s", natsStatus_GetText(s), (int)jerr,
                    nats_GetLastError(NULL));
            usleep(200000);
        }
        for (uint64_t want = 1; want <= seq; want++) {
            natsMsg *m = NULL;
            for (;;) {
                s = natsSubscription_NextMsg(&m, ps, 10000);
                if (s != NATS_OK) die("push: no message for seq %llu", (unsigned long long)want);
                if (natsMsg_GetReply(m)) break;
                natsMsg_Destroy(m); /* an idle heartbeat or another status */
            }
            jsMsgMetaData *md = NULL;
            if (natsMsg_GetMetaData(&md, m) != NATS_OK) die("push: no metadata");
            if (md->Sequence.Stream != want || strcmp(md->Consumer, "push1"))
                die("push: got seq %llu of %s, want %llu", (unsigned long long)md->Sequence.Stream,
                    md->Consumer, (unsigned long long)want);
            jsMsgMetaData_Destroy(md);
            natsMsg_Ack(m, NULL);
            natsMsg_Destroy(m);
        }
        for (int attempt = 0;; attempt++) {
            ci = consumer_info(js, "push1");
            int done = ci->NumAckPending == 0 && ci->AckFloor.Stream == seq && ci->Config &&
                       ci->Config->DeliverSubject;
            jsConsumerInfo_Destroy(ci);
            if (done) break;
            if (attempt > 100) die("push1: not every delivery acknowledged");
            usleep(100000);
        }
        natsSubscription_Unsubscribe(ps);
        natsSubscription_Destroy(ps);
        printf("push consumer: %llu messages in order to its deliver subject, all acknowledged\n",
               (unsigned long long)seq);
    }

    /* With two of the three servers gone the consumer has no quorum: a pull request still gets
     * its answer at its expiry (408 with what it still wanted), never silence. */
    {
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        cc.Durable = "lonely";
        cc.AckPolicy = js_AckExplicit;
        for (int attempt = 0;; attempt++) {
            jsConsumerInfo *li = NULL;
            s = js_AddConsumer(&li, js, "ORDERS", &cc, NULL, &jerr);
            jsConsumerInfo_Destroy(li);
            if (s == NATS_OK) break;
            if (attempt > 50)
                die("add consumer lonely: %s (err_code %d)", natsStatus_GetText(s), jerr);
            usleep(200000);
        }
        char url[64];
        natsConnection_GetConnectedUrl(nc, url, sizeof url);
        const char *colon = strrchr(url, ':');
        int port = colon ? atoi(colon + 1) : 0, here = -1;
        for (int i = 0; i < NSERVERS; i++)
            if (client_port[i] == port) here = i;
        if (here < 0) die("connected to %s, not one of the servers", url);
        for (int i = 0; i < NSERVERS; i++) {
            if (i != here) server_kill(i);
        }
        natsSubscription *inbox = NULL;
        if (natsConnection_SubscribeSync(&inbox, nc, "_INBOX.lonely") != NATS_OK)
            die("subscribe the lonely inbox");
        /* A request the leader held when it lost its quorum ends with 409 Leadership Change;
         * the next one finds no leader and ends with 408 at its expiry. */
        int timed_out = 0;
        for (int attempt = 0; attempt < 5 && !timed_out; attempt++) {
            natsConnection_PublishRequestString(nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.lonely",
                                                "_INBOX.lonely",
                                                "{\"batch\":3,\"expires\":1500000000}");
            natsMsg *st = NULL;
            if (natsSubscription_NextMsg(&st, inbox, 15000) != NATS_OK)
                die("a pull on a consumer without quorum was never answered");
            const char *code = NULL, *desc = NULL, *pending = NULL;
            natsMsgHeader_Get(st, "Status", &code);
            natsMsgHeader_Get(st, "Description", &desc);
            natsMsgHeader_Get(st, "Nats-Pending-Messages", &pending);
            if (code && !strcmp(code, "408") && pending && !strcmp(pending, "3"))
                timed_out = 1;
            else if (!code || strcmp(code, "409") || !desc || strcmp(desc, "Leadership Change"))
                die("a pull on a consumer without quorum: status %s %s, pending %s",
                    code ? code : "-", desc ? desc : "-", pending ? pending : "-");
            natsMsg_Destroy(st);
        }
        if (!timed_out) die("pulls on a consumer without quorum never ended with 408");
        natsSubscription_Destroy(inbox);
        printf("two servers killed: a pull on a consumer without quorum ends with 408 at its "
               "expiry\n");
    }

    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(opts);
    servers_stop_all();
    printf("the remaining server exited 0 on SIGTERM\n");
    nats_Close();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
    return 0;
}
