/*
 * consumers.c — fetch loops on durable pull consumers, the drain after the final reads, and
 * the consumer checkers; used when the server serves the consumer API (a server that answers
 * "not supported" runs the publish workload alone).
 *
 * Two consumers of D0: c0 (filter d0.*, every message) and c1 (filter d0.1), explicit acks,
 * ack wait 2 s. One fetch loop per consumer, each on its own connection to every server: one
 * fetch at a time (batch 1-16, expiry 0.1-1 s); each delivery gets at once ACK confirmed (45%),
 * ACK fire-and-forget (15%), NAK (10%), in-progress then ACK confirmed (10%), TERM (5%; libnats
 * sends it without waiting for an answer), or nothing (15%: redelivered after its ack wait). The
 * drain fetches batches of 256 and acks every delivery without waiting, until each consumer has
 * delivered every message of the final reads its filter matches (60 s at most).
 *
 * Checkers (jetraft-sim's): at-least-once, acked-not-redelivered (a confirmed ACK that
 * completed OK at T: no fetch issued after T delivers the message again), counts (no delivery
 * count seen twice for one message, no consumer seq seen twice), delivery-matches (a delivered
 * message is the one the final reads found at its seq, and matches the filter).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nats/nats.h>

#include "chaos.h"

#define NCONS 2

static const char *const cname[NCONS] = {"c0", "c1"};
static const char *const cfilter[NCONS] = {"d0.*", "d0.1"};
static int enabled;
static int cphase; /* 0 faulty, 1 drain, 2 stop (hmu) */
static pthread_t threads[NCONS];
static uint32_t next_op = 1000000000u; /* fetch and ack ops, apart from the publishes' */

typedef struct deliv {
    int cons;
    uint64_t sseq, cseq, count;
    long long value;
    uint64_t fetch_ns; /* when its fetch was issued */
} deliv;

typedef struct done_ack {
    int cons;
    uint64_t sseq, t;
} done_ack;

static deliv *dels;
static size_t ndels, capdels;
static done_ack *acks;
static size_t nacks, capacks;

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return p;
    size_t c = *cap ? 2 * *cap : 1024;
    while (c < need) c *= 2;
    p = realloc(p, c * size);
    if (!p) die("out of memory");
    *cap = c;
    return p;
}

static long long value_of(natsMsg *m)
{
    const char *d = natsMsg_GetData(m);
    int len = natsMsg_GetDataLength(m);
    if (!d || len < 2 || d[0] != 'v') return -1;
    long long v = 0;
    int i = 1;
    for (; i < len && d[i] >= '0' && d[i] <= '9'; i++) v = v * 10 + (d[i] - '0');
    return i > 1 && i < len && d[i] == ' ' ? v : -1;
}

static natsConnection *connect_all(int k)
{
    char u[MAXN][64];
    const char *list[MAXN];
    for (int i = 0; i < C.n; i++) {
        snprintf(u[i], sizeof u[i], "nats://127.0.0.1:%d", C.client_port[(i + k) % C.n]);
        list[i] = u[i];
    }
    return clients_connect(list, C.n, 1, 1);
}

int consumers_setup(void)
{
    natsConnection *nc = connect_all(0);
    jsCtx *js = NULL;
    if (!nc || natsConnection_JetStream(&js, nc, NULL) != NATS_OK) return -1;
    int made = 0;
    for (uint64_t t0 = now_ns(); made < NCONS && now_ns() - t0 < 60000000000ull;) {
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        cc.Durable = cname[made];
        cc.AckPolicy = js_AckExplicit;
        cc.AckWait = 2000000000LL;
        cc.FilterSubject = cfilter[made];
        cc.MaxDeliver = -1;
        jsConsumerInfo *ci = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_AddConsumer(&ci, js, STREAM, &cc, NULL, &jerr);
        if (s == NATS_OK) {
            jsConsumerInfo_Destroy(ci);
            made++;
            continue;
        }
        if (strstr(nats_GetLastError(NULL), "not supported")) break;
        usleep(250000);
    }
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    enabled = made == NCONS;
    if (enabled)
        note("consumers c0 (d0.*) and c1 (d0.1) created");
    else if (made == 0)
        note("the server does not serve the consumer API: publishes only");
    else
        die("consumer c%d could not be created within 60 s", made);
    return 0;
}

/* One op line of a fetch or an ack (hmu held). */
static void op_line(const char *ev, uint32_t id, const char *f, int cons, const char *rest)
{
    if (!C.hist) return;
    fprintf(C.hist,
            "{\"t\":%llu,\"ev\":\"%s\",\"op\":%u,\"f\":\"%s\",\"proc\":%d,\"node\":null,"
            "\"stream\":\"%s\",\"consumer\":\"%s\"%s}\n",
            (unsigned long long)(now_ns() - C.t0), ev, id, f, strcmp(f, "fetch") ? -1 : 100 + cons,
            STREAM, cname[cons], rest);
}

static const char *const ack_kind[] = {"ack", "nak", "progress", "term"};

/* Acks one delivery the way the loop chose; records a confirmed ACK or TERM that completed. */
static void ack_one(int c, natsMsg *m, uint64_t sseq, uint64_t count, int kind, int confirmed)
{
    char rest[200];
    snprintf(rest, sizeof rest, ",\"kind\":\"%s\",\"sseq\":%llu,\"count\":%llu,\"confirmed\":%s",
             ack_kind[kind], (unsigned long long)sseq, (unsigned long long)count,
             confirmed ? "true" : "false");
    pthread_mutex_lock(&C.hmu);
    uint32_t id = next_op++;
    op_line("invoke", id, "ack", c, rest);
    pthread_mutex_unlock(&C.hmu);
    natsStatus s;
    jsErrCode jerr = 0;
    if (kind == 2) {
        natsMsg_InProgress(m, NULL);
        kind = 0;
    }
    if (kind == 3)
        s = natsMsg_Term(m, NULL);
    else if (!confirmed)
        s = kind == 1 ? natsMsg_Nak(m, NULL) : natsMsg_Ack(m, NULL);
    else
        s = natsMsg_AckSync(m, NULL, &jerr);
    char done[300];
    snprintf(done, sizeof done, "%s,\"status\":\"%s\",\"msg\":\"%s\"", rest,
             s == NATS_OK ? "OK" : "ERR", confirmed ? "" : "fire and forget");
    pthread_mutex_lock(&C.hmu);
    op_line(s == NATS_OK ? "ok" : "info", id, "ack", c, done);
    if (s == NATS_OK && confirmed && kind == 0) {
        acks = grow(acks, &capacks, nacks + 1, sizeof *acks);
        acks[nacks++] = (done_ack){c, sseq, now_ns()};
    }
    pthread_mutex_unlock(&C.hmu);
}

static void *fetch_loop(void *arg)
{
    int c = (int)(intptr_t)arg;
    uint64_t r = C.seed * 0x51ed27u + (uint64_t)c * 7777u + 3;
    natsConnection *nc = connect_all(c + 1);
    jsCtx *js = NULL;
    natsSubscription *sub = NULL;
    if (!nc || natsConnection_JetStream(&js, nc, NULL) != NATS_OK)
        die("fetch loop %d: no connection", c);
    for (;;) {
        pthread_mutex_lock(&C.hmu);
        int phase = cphase;
        pthread_mutex_unlock(&C.hmu);
        if (phase >= 2) break;
        if (!sub) {
            jsSubOptions so;
            jsSubOptions_Init(&so);
            so.Stream = STREAM;
            so.Consumer = cname[c];
            jsErrCode jerr = 0;
            if (js_PullSubscribe(&sub, js, cfilter[c], cname[c], NULL, &so, &jerr) != NATS_OK) {
                sub = NULL;
                usleep(200000);
                continue;
            }
        }
        /* the drain fetches big batches, so that it takes seconds however long the run was */
        int batch = phase == 1 ? 256 : 1 + rng_below(&r, 16);
        int64_t expiry = phase == 1 ? 1000 : 100 + rng_below(&r, 900);
        char rest[64];
        snprintf(rest, sizeof rest, ",\"batch\":%d", batch);
        pthread_mutex_lock(&C.hmu);
        uint32_t id = next_op++;
        uint64_t issued = now_ns();
        op_line("invoke", id, "fetch", c, rest);
        pthread_mutex_unlock(&C.hmu);
        natsMsgList list = {0};
        /* FetchRequest with no_wait off: with natsSubscription_Fetch (libnats 3.4.1), which
         * asks with no_wait first and asks again on a 404, three runs in six aborted here
         * freeing the list ("free(): invalid next size") after faults; not seen since */
        jsFetchRequest fr;
        jsFetchRequest_Init(&fr);
        fr.Batch = batch;
        fr.Expires = expiry * 1000000;
        natsStatus s = natsSubscription_FetchRequest(&list, sub, &fr);
        char done[128];
        snprintf(done, sizeof done, ",\"batch\":%d,\"received\":%d,\"end\":%d,\"status\":\"%s\"",
                 batch, list.Count,
                 s == NATS_OK        ? 0
                 : s == NATS_TIMEOUT ? 408
                                     : -1,
                 s == NATS_OK ? "OK" : natsStatus_GetText(s));
        pthread_mutex_lock(&C.hmu);
        op_line(s == NATS_OK || s == NATS_TIMEOUT ? "ok" : "info", id, "fetch", c, done);
        pthread_mutex_unlock(&C.hmu);
        for (int i = 0; i < list.Count; i++) {
            natsMsg *m = list.Msgs[i];
            jsMsgMetaData *md = NULL;
            if (natsMsg_GetMetaData(&md, m) != NATS_OK) continue;
            deliv d = {
                c,     md->Sequence.Stream, md->Sequence.Consumer, md->NumDelivered, value_of(m),
                issued};
            jsMsgMetaData_Destroy(md);
            pthread_mutex_lock(&C.hmu);
            dels = grow(dels, &capdels, ndels + 1, sizeof *dels);
            dels[ndels++] = d;
            if (C.hist)
                fprintf(C.hist,
                        "{\"t\":%llu,\"ev\":\"deliver\",\"op\":%u,\"stream\":\"%s\",\"consumer\":"
                        "\"%s\",\"sseq\":%llu,\"cseq\":%llu,\"count\":%llu,\"value\":%lld}\n",
                        (unsigned long long)(now_ns() - C.t0), id, STREAM, cname[c],
                        (unsigned long long)d.sseq, (unsigned long long)d.cseq,
                        (unsigned long long)d.count, d.value);
            int drain = cphase == 1;
            pthread_mutex_unlock(&C.hmu);
            int u = rng_below(&r, 100);
            if (drain)
                ack_one(c, m, d.sseq, d.count, 0, 0);
            else if (u < 45)
                ack_one(c, m, d.sseq, d.count, 0, 1);
            else if (u < 60)
                ack_one(c, m, d.sseq, d.count, 0, 0);
            else if (u < 70)
                ack_one(c, m, d.sseq, d.count, 1, 0);
            else if (u < 80)
                ack_one(c, m, d.sseq, d.count, 2, 1);
            else if (u < 85)
                ack_one(c, m, d.sseq, d.count, 3, 0); /* libnats has no confirmed TERM */
        }
        int got = list.Count;
        natsMsgList_Destroy(&list);
        /* A fetch that ended short (expired, or an error) may still be answered by the server
         * afterwards, and libnats would hand those messages to the next fetch on this
         * subscription: a delivery sent before an ack would look like one fetched after it.
         * A fresh subscription (a new inbox) after every short fetch keeps each delivery with
         * the fetch that asked for it; late answers go to an inbox nobody reads, and come back
         * after the ack wait. */
        if (s != NATS_OK || got < batch) {
            natsSubscription_Destroy(sub);
            sub = NULL;
            if (s != NATS_OK && s != NATS_TIMEOUT) usleep(100000);
        }
    }
    natsSubscription_Destroy(sub);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return NULL;
}

void consumers_start(void)
{
    if (!enabled) return;
    for (int c = 0; c < NCONS; c++)
        if (pthread_create(&threads[c], NULL, fetch_loop, (void *)(intptr_t)c))
            die("cannot start fetch loop %d", c);
}

static int matches(int c, long long value)
{
    return c == 0 || (value >= 0 && value % 4 == 1);
}

static int cmp_deliv(const void *a, const void *b)
{
    const deliv *x = a, *y = b;
    if (x->cons != y->cons) return x->cons - y->cons;
    if (x->sseq != y->sseq) return x->sseq < y->sseq ? -1 : 1;
    return x->count < y->count ? -1 : x->count > y->count;
}

static int cmp_ack(const void *a, const void *b)
{
    const done_ack *x = a, *y = b;
    if (x->cons != y->cons) return x->cons - y->cons;
    if (x->sseq != y->sseq) return x->sseq < y->sseq ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

static int cmp_cseq(const void *a, const void *b)
{
    const deliv *x = a, *y = b;
    if (x->cons != y->cons) return x->cons - y->cons;
    return x->cseq < y->cseq ? -1 : x->cseq > y->cseq;
}

void consumers_drain_and_check(const long long *final, uint64_t upto)
{
    if (!enabled) return;
    pthread_mutex_lock(&C.hmu);
    cphase = 1;
    pthread_mutex_unlock(&C.hmu);
    /* seen[c][seq]: delivered at least once */
    char *seen[NCONS];
    for (int c = 0; c < NCONS; c++)
        if (!(seen[c] = calloc(upto + 2, 1))) die("out of memory");
    uint64_t t0 = now_ns();
    size_t scanned = 0;
    int missing = 1;
    while (missing && now_ns() - t0 < 60000000000ull) {
        usleep(200000);
        pthread_mutex_lock(&C.hmu);
        for (; scanned < ndels; scanned++)
            if (dels[scanned].sseq <= upto) seen[dels[scanned].cons][dels[scanned].sseq] = 1;
        pthread_mutex_unlock(&C.hmu);
        missing = 0;
        for (int c = 0; c < NCONS; c++)
            for (uint64_t s = 1; s <= upto; s++)
                missing += final[s] >= 0 && matches(c, final[s]) && !seen[c][s];
    }
    pthread_mutex_lock(&C.hmu);
    cphase = 2;
    pthread_mutex_unlock(&C.hmu);
    for (int c = 0; c < NCONS; c++) pthread_join(threads[c], NULL);
    for (; scanned < ndels; scanned++)
        if (dels[scanned].sseq <= upto) seen[dels[scanned].cons][dels[scanned].sseq] = 1;
    note("drain: %zu deliveries in all, %.1f s", ndels, (double)(now_ns() - t0) / 1e9);

    for (int c = 0; c < NCONS; c++) {
        int lost = 0;
        for (uint64_t s = 1; s <= upto; s++)
            if (final[s] >= 0 && matches(c, final[s]) && !seen[c][s] && lost++ < 5)
                violation("at-least-once", "%s never delivered seq %llu (v%lld)", cname[c],
                          (unsigned long long)s, final[s]);
        if (lost) violation("at-least-once", "%s: %d messages never delivered", cname[c], lost);
        free(seen[c]);
    }
    int bad = 0;
    for (size_t i = 0; i < ndels; i++) {
        deliv *d = &dels[i];
        long long want = d->sseq <= upto ? final[d->sseq] : -2;
        if ((want != d->value || !matches(d->cons, d->value)) && bad++ < 5)
            violation("delivery-matches",
                      "%s delivered v%lld at seq %llu, where the stream holds %s%lld",
                      cname[d->cons], d->value, (unsigned long long)d->sseq,
                      want == -2 ? "nothing " : "v", want);
    }
    /* acked-not-redelivered: the completed confirmed acks sorted by (consumer, seq, time); a
     * delivery's earliest ack is the first of its key */
    qsort(acks, nacks, sizeof *acks, cmp_ack);
    bad = 0;
    for (size_t j = 0; j < ndels; j++) {
        deliv *d = &dels[j];
        done_ack key = {d->cons, d->sseq, 0};
        size_t lo = 0, hi = nacks;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cmp_ack(&acks[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < nacks && acks[lo].cons == d->cons && acks[lo].sseq == d->sseq &&
            d->fetch_ns > acks[lo].t && bad++ < 5)
            violation("acked-not-redelivered",
                      "%s delivered seq %llu (count %llu) to a fetch issued %.3f s after its "
                      "confirmed ack completed",
                      cname[d->cons], (unsigned long long)d->sseq, (unsigned long long)d->count,
                      (double)(d->fetch_ns - acks[lo].t) / 1e9);
    }
    qsort(dels, ndels, sizeof *dels, cmp_deliv);
    bad = 0;
    for (size_t i = 1; i < ndels; i++)
        if (!cmp_deliv(&dels[i - 1], &dels[i]) && bad++ < 5)
            violation("counts", "%s delivered seq %llu with count %llu twice", cname[dels[i].cons],
                      (unsigned long long)dels[i].sseq, (unsigned long long)dels[i].count);
    qsort(dels, ndels, sizeof *dels, cmp_cseq);
    for (size_t i = 1; i < ndels; i++)
        if (!cmp_cseq(&dels[i - 1], &dels[i]) && bad++ < 5)
            violation("counts", "%s used consumer seq %llu twice", cname[dels[i].cons],
                      (unsigned long long)dels[i].cseq);
    printf("consumers: %zu deliveries, %zu confirmed acks\n", ndels, nacks);
}

void consumers_stop(void)
{
    if (!enabled) return;
    pthread_mutex_lock(&C.hmu);
    int running = cphase < 2;
    cphase = 2;
    pthread_mutex_unlock(&C.hmu);
    if (running)
        for (int c = 0; c < NCONS; c++) pthread_join(threads[c], NULL);
}
