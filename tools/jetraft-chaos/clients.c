/*
 * clients.c — the publishers (Jepsen's queue workload on libnats) and the history they write.
 *
 * Each publisher process is a thread with its own connection that knows every server (libnats
 * moves it to another when its server dies, pauses or stops answering pings). It publishes
 * unique values v<id> one at a time to stream D0 (subjects d0.0-d0.3, payloads of 16-176
 * bytes), as jetraft-sim's publishers do: half carry a Nats-Msg-Id, and a publish whose outcome
 * is unknown is sent again with the same id, up to three times; 8% expect the highest seq seen
 * acknowledged as the stream's last (a definite 10071 or stored right after it), 3% expect
 * another stream's name (a definite 10060, never stored).
 *
 * Outcomes, Jepsen's three: ok (a PubAck: its seq and duplicate flag), fail (definitely not
 * stored: JetStream's 10071 or 10060, or the 503 no-responders status of a server that knows
 * no stream for the subject), info (anything else: a timeout, a lost connection, 10008
 * "temporarily unavailable", which the server also gives for a request whose leader was lost
 * after proposing it).
 *
 * The consumers' fetch loops are consumers.c's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nats/nats.h>

#include "chaos.h"

static pthread_t threads[MAXPROCS];
static char urls[MAXN][64];

static const char *status_name(natsStatus s, int jerr, char *buf, size_t cap)
{
    if (s == NATS_NO_RESPONDERS) return "NO_RESPONDERS"; /* libnats also sets 10076 */
    if (jerr) {
        snprintf(buf, cap, "JS%d", jerr);
        return buf;
    }
    switch (s) {
    case NATS_OK:
        return "OK";
    case NATS_TIMEOUT:
        return "TIMEOUT";
    case NATS_NO_RESPONDERS:
        return "NO_RESPONDERS";
    case NATS_CONNECTION_CLOSED:
        return "CONNECTION_CLOSED";
    case NATS_CONNECTION_DISCONNECTED:
        return "DISCONNECTED";
    default:
        snprintf(buf, cap, "NATS%d", (int)s);
        return buf;
    }
}

/* Writes one operation's line (hmu held). */
void history_op(const op *o, int completion)
{
    if (!C.hist) return;
    FILE *f = C.hist;
    static const char *const evn[] = {"invoke", "ok", "fail", "info"};
    fprintf(f, "{\"t\":%llu,\"ev\":\"%s\",\"op\":%zu,\"f\":\"publish\",\"proc\":%d,",
            (unsigned long long)((completion ? o->complete_ns : o->invoke_ns) - C.t0),
            evn[completion ? o->outcome : 0], (size_t)(o - C.ops), o->proc);
    if (o->node >= 0)
        fprintf(f, "\"node\":\"%s\"", C.names[o->node]);
    else
        fputs("\"node\":null", f);
    fprintf(f, ",\"stream\":\"%s\",\"value\":%u,\"msg_id\":%s", STREAM, o->value,
            o->msg_id ? "true" : "false");
    if (o->exp_last) fprintf(f, ",\"expected_last_seq\":%llu", (unsigned long long)o->exp_last);
    if (o->exp_wrong) fputs(",\"expected_stream_wrong\":true", f);
    if (completion) {
        fprintf(f, ",\"seq\":%llu,\"duplicate\":%s,\"status\":\"%s\",\"msg\":",
                (unsigned long long)o->seq, o->duplicate ? "true" : "false", o->status);
        json_str(f, o->msg);
    }
    fputs("}\n", f);
}

static op *new_op(void)
{
    if (C.nops == C.capops) {
        size_t cap = C.capops ? 2 * C.capops : 4096;
        op *n = realloc(C.ops, cap * sizeof *n);
        if (!n) die("out of memory");
        C.ops = n;
        C.capops = cap;
    }
    op *o = &C.ops[C.nops++];
    memset(o, 0, sizeof *o);
    return o;
}

static int node_of(natsConnection *nc)
{
    char url[128];
    if (natsConnection_GetConnectedUrl(nc, url, sizeof url) != NATS_OK || !url[0]) return -1;
    const char *colon = strrchr(url, ':');
    int port = colon ? atoi(colon + 1) : 0;
    for (int i = 0; i < C.n; i++)
        if (C.client_port[i] == port) return i;
    return -1;
}

natsConnection *clients_connect(const char **list, int n, int in_order, int retry)
{
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    natsOptions_Create(&o);
    natsOptions_SetServers(o, list, n);
    if (in_order) natsOptions_SetNoRandomize(o, true);
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 100);
    natsOptions_SetTimeout(o, 1000);
    natsOptions_SetPingInterval(o, 1000);
    natsOptions_SetMaxPingsOut(o, 2);
    if (retry) natsOptions_SetRetryOnFailedConnect(o, true, NULL, NULL);
    natsStatus s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    return s == NATS_OK ? nc : NULL;
}

/* A connection to every server, the list rotated by k so that clients spread out. */
static natsConnection *connect_all(int k, int retry)
{
    const char *list[MAXN];
    for (int i = 0; i < C.n; i++) list[i] = urls[(i + k) % C.n];
    return clients_connect(list, C.n, 1, retry);
}

static void *publisher(void *arg)
{
    int p = (int)(intptr_t)arg;
    uint64_t r = C.seed * 0x9e3779b97f4a7c15ull + (uint64_t)p * 1000003u + 5;
    natsConnection *nc = connect_all(p, 1);
    jsCtx *js = NULL;
    if (!nc || natsConnection_JetStream(&js, nc, NULL) != NATS_OK)
        die("publisher %d: no connection", p);
    for (;;) {
        pthread_mutex_lock(&C.hmu);
        int phase = C.phase, done = C.phase == 1 && C.progress_acks[p] >= 3;
        uint32_t value = phase < 2 && !done ? ++C.next_value : 0;
        uint64_t last = C.max_acked_seq;
        pthread_mutex_unlock(&C.hmu);
        if (phase >= 2) break;
        if (done) {
            usleep(50000);
            continue;
        }
        double u = rng_unit(&r);
        int msg_id = rng_below(&r, 2);
        uint64_t exp_last = phase == 0 && u < 0.08 ? last : 0;
        int exp_wrong = phase == 0 && u >= 0.08 && u < 0.11;
        int pad = 16 + rng_below(&r, 161);
        char data[256], mid[32], subj[32];
        int len = snprintf(data, sizeof data, "v%u ", value);
        while (len < pad) data[len++] = (char)('a' + value % 26);
        snprintf(mid, sizeof mid, "m%u", value);
        snprintf(subj, sizeof subj, "d0.%u", value % 4);
        for (int attempt = 0; attempt < 4; attempt++) {
            jsPubOptions po;
            jsPubOptions_Init(&po);
            po.MaxWait = 3000;
            if (msg_id) po.MsgId = mid;
            if (exp_last) po.ExpectLastSeq = exp_last;
            if (exp_wrong) po.ExpectStream = "OTHER";
            op inv = {.value = value,
                      .proc = p,
                      .node = node_of(nc),
                      .msg_id = msg_id,
                      .exp_last = exp_last,
                      .exp_wrong = exp_wrong};
            pthread_mutex_lock(&C.hmu);
            op *o = new_op();
            *o = inv;
            o->invoke_ns = now_ns();
            history_op(o, 0);
            size_t idx = (size_t)(o - C.ops);
            pthread_mutex_unlock(&C.hmu);

            jsPubAck *pa = NULL;
            jsErrCode jerr = 0;
            natsStatus s = js_Publish(&pa, js, subj, data, len, &po, &jerr);
            char sbuf[24];
            pthread_mutex_lock(&C.hmu);
            o = &C.ops[idx];
            o->complete_ns = now_ns();
            snprintf(o->status, sizeof o->status, "%s",
                     status_name(s, (int)jerr, sbuf, sizeof sbuf));
            if (s == NATS_OK && pa) {
                o->outcome = OUT_OK;
                o->seq = pa->Sequence;
                o->duplicate = pa->Duplicate;
                if (o->seq > C.max_acked_seq) C.max_acked_seq = o->seq;
                if (C.phase == 1) C.progress_acks[p]++;
            } else if (jerr == 10071 || jerr == 10060 || s == NATS_NO_RESPONDERS) {
                o->outcome = OUT_FAIL;
            } else {
                o->outcome = OUT_INFO;
            }
            if (s != NATS_OK) snprintf(o->msg, sizeof o->msg, "%s", nats_GetLastError(NULL));
            history_op(o, 1);
            int again = o->outcome == OUT_INFO && msg_id;
            pthread_mutex_unlock(&C.hmu);
            jsPubAck_Destroy(pa);
            /* a server that knows no such stream (its meta state is behind) answers at once:
             * wait a little rather than spin */
            if (s == NATS_NO_RESPONDERS) usleep(50000);
            if (!again) break;
            usleep(100000);
        }
    }
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return NULL;
}

int stream_create(void)
{
    for (int i = 0; i < C.n; i++)
        snprintf(urls[i], sizeof urls[i], "nats://127.0.0.1:%d", C.client_port[i]);
    natsConnection *nc = connect_all(0, 1);
    jsCtx *js = NULL;
    if (!nc || natsConnection_JetStream(&js, nc, NULL) != NATS_OK) return -1;
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = STREAM;
    const char *subjects[] = {"d0.*"};
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Replicas = C.replicas;
    sc.Storage = js_FileStorage;
    sc.AllowDirect = true;
    int rc = -1;
    for (uint64_t t0 = now_ns(); now_ns() - t0 < 60000000000ull;) {
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        if (js_AddStream(&si, js, &sc, NULL, &jerr) == NATS_OK) {
            note("stream %s R%d created, leader %s", STREAM, C.replicas,
                 si->Cluster && si->Cluster->Leader ? si->Cluster->Leader : "?");
            jsStreamInfo_Destroy(si);
            rc = 0;
            break;
        }
        for (int i = 0; i < C.n; i++)
            if (waitpid(C.pid[i], NULL, WNOHANG) == C.pid[i]) {
                C.pid[i] = 0;
                die("%s exited at its start (its log: %s/%s.log)", C.names[i], C.base, C.names[i]);
            }
        usleep(250000);
    }
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return rc;
}

void clients_start(void)
{
    for (int p = 0; p < C.nprocs; p++)
        if (pthread_create(&threads[p], NULL, publisher, (void *)(intptr_t)p))
            die("cannot start publisher %d", p);
}

void clients_progress(double limit_s)
{
    pthread_mutex_lock(&C.hmu);
    C.phase = 1;
    memset(C.progress_acks, 0, sizeof C.progress_acks);
    pthread_mutex_unlock(&C.hmu);
    uint64_t t0 = now_ns();
    for (;;) {
        int all = 1;
        pthread_mutex_lock(&C.hmu);
        for (int p = 0; p < C.nprocs; p++) all &= C.progress_acks[p] >= 3;
        int acks[MAXPROCS];
        memcpy(acks, C.progress_acks, sizeof acks);
        pthread_mutex_unlock(&C.hmu);
        if (all) {
            note("progress: every publisher got 3 acknowledgements in %.1f s",
                 (double)(now_ns() - t0) / 1e9);
            return;
        }
        if ((double)(now_ns() - t0) / 1e9 > limit_s) {
            for (int p = 0; p < C.nprocs; p++)
                if (acks[p] < 3)
                    violation("liveness",
                              "publisher %d got %d of 3 acknowledgements in %.0f s "
                              "after the heal",
                              p, acks[p], limit_s);
            return;
        }
        usleep(50000);
    }
}

void clients_stop(void)
{
    pthread_mutex_lock(&C.hmu);
    C.phase = 2;
    pthread_mutex_unlock(&C.hmu);
    for (int p = 0; p < C.nprocs; p++) pthread_join(threads[p], NULL);
}
