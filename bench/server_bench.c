/*
 * server_bench — a NATS JetStream client (libnats) timing two running clusters side by side:
 * jetraft-server and nats-server, each three processes on this machine (bench/server_bench.sh
 * starts them). For each case (replicas R1/R3 x payload 128 B / 4 KiB) and round, it runs the
 * same workload against A, then B (so that both see the same machine, interleaved):
 *
 *   - async: one connection publishes `--async` messages (default 100,000) with a window of
 *     `--window` acks pending (default 1,000), timed from the first publish to the last ack:
 *     msgs/s and MB/s. A server that acknowledges only after an fsync cannot pass window / (the
 *     time a commit takes) messages a second, whatever its CPU. `--client` says how, the same
 *     for both systems (every line names it): "pub" (the default) sends each message as a PUB
 *     with a reply subject of its own under one inbox, all acks arriving on one wildcard
 *     subscription, and checks every ack (no error, stream BENCH, seq strictly increasing from
 *     ack to ack, each message answered once: publish_window); "js" uses js_PublishAsync, whose
 *     per-message bookkeeping (a hash of pending replies, a context lock) costs the client
 *     about half its CPU per message;
 *   - sync: `--sync` synchronous publishes, each waiting for its ack: p50/p99/p99.9 latency;
 *     with --sync-dir, the disk's fdatasync latency is sampled right before and right after
 *     the phase (PROBE_SYNCS each time, as below) and the line carries its p50
 *     (fdatasync_p50_us) and sync_p50_us minus it (sync_over_fdatasync_us): the publish's cost
 *     above one sync of the disk as it was during the phase (a shared disk's sync latency moves
 *     by tens of times within a minute). Two more references, sampled the same way, split the
 *     rest: fdatasync_2of3_p50_us, three threads each syncing 4 KiB of their own file, two of
 *     them starting once the first one's write returned, timed until the second is done (the
 *     disk's share of an R3 commit when all three servers sync the same disk, as here: a sync
 *     that arrives while another one runs waits for it), and ping_p50_us, a
 *     PING/PONG round trip on the publishing connection (the share of this client and the
 *     two hops to its server, with no stream behind it);
 *   - CPU: the servers' user+system time (/proc/PID/stat, whole clock ticks) and this client's
 *     (getrusage), in microseconds per message: for the async phase alone
 *     (cpu_us_per_msg_async: the cost of throughput), for the sync phase alone
 *     (cpu_us_per_msg_sync: mostly the idle cost of a server waiting on fsyncs and timers, per
 *     message), and over both (cpu_us_per_msg); of the async phase's, the part of this client
 *     (cpu_async_client) and of the stream's leader (cpu_async_leader, -1 if unknown);
 *     --sync 0 leaves the phase out (its figures print 0), e.g. to time the consume phase
 *     after the async fill alone;
 *   - consume (unless --consume 0): a durable pull consumer reads every message back in
 *     fetches of 100, acknowledging each: msgs/s (not in the CPU figure); the line names the
 *     consumer's leader ("consumer_leader") as its info said before the first fetch.
 *
 * The publishing connection is pinned to the server that leads the stream (a server elsewhere
 * would relay each publish and its ack over one more hop) when the target names its servers
 * (@NAMES below): the stream info says which one leads, and each case connects to that server's
 * URL alone. Every line says which server led ("leader") and whether the publishing
 * connection's server was it ("on_leader": 1, 0, or -1 when the names are not known).
 *
 * Every publish is acknowledged before it counts; an error or a lost ack fails the run. It
 * prints one JSON line per system, case and round, then one "ratio" line per case (A over B, on
 * the medians of the rounds), and first the disk's fdatasync latency measured in --sync-dir
 * (4 KiB overwritten in a preallocated file then fdatasync, 200 times).
 *
 * Usage: server_bench --a NAME=URLS@PIDS[@NAMES] [--b NAME=URLS@PIDS[@NAMES]] [--rounds N]
 *                     [--async N] [--sync N] [--sizes 128,4096] [--replicas 1,3]
 *                     [--consume 0|1] [--window N] [--only NAME] [--pin 0|1]
 *                     [--sync-dir DIR] [--client pub|js]
 *   URLS: comma-separated nats:// URLs; PIDS: comma-separated server process ids; NAMES: the
 *   servers' names (as the stream info's leader names them), in the order of URLS. --only runs
 *   the target so named alone (to profile one system); --pin 0 keeps the publishing connection
 *   on the first URL that answers.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

#define MAX_SERVERS 8
#define MAX_ROUNDS 16

typedef struct target {
    const char *name;
    const char *urls[MAX_SERVERS];
    int nurls;
    int pids[MAX_SERVERS];
    int npids;
    const char *names[MAX_SERVERS];
    int nnames;
    natsConnection *nc; /* the streams' management: create, delete, info */
    jsCtx *js;
    natsConnection *pub_nc; /* the publishing connection: nc, or one pinned to the leader */
    jsCtx *pub_js;
} target;

typedef struct result {
    double msgs_s, mb_s, p50_us, p99_us, p999_us, cpu_us_per_msg, consume_msgs_s;
    double cpu_async, cpu_sync;                /* microseconds per message of each phase alone */
    double cpu_async_client, cpu_async_leader; /* the async phase's, of the client, the leader */
    char leader[64];
    char cleader[64];    /* the consumer's leader in the consume phase ("?" unknown) */
    int leader_idx;      /* the leader's index in the target's URLs and pids, or -1 */
    int on_leader;       /* the publishing connection's server leads the stream: 1, 0, -1 unknown */
    double fsync_p50_us; /* the disk's fdatasync p50 around the sync phase, -1 without --sync-dir */
    double fsync2of3_p50_us; /* three at once: until the second is done; -1 without --sync-dir */
    double ping_p50_us;      /* a PING/PONG round trip on the publishing connection */
} result;

static int async_n = 100000, sync_n = 2000, rounds = 3, consume = 1, pin = 1, window = 1000;
/* --client: how the async phase publishes (the same for both systems; the lines say which).
 * "pub": PUB with a reply subject of its own per message, on one wildcard inbox subscription;
 * "js": js_PublishAsync. */
static const char *client_mode = "pub";
static const char *sync_dir; /* --sync-dir: where the disk's fdatasync latency is sampled */

/* fdatasync samples taken right before and right after each sync phase */
#define PROBE_SYNCS 50

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "server_bench: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

/* "name=url1,url2@pid1,pid2[@name1,name2]" */
static void parse_target(target *t, char *spec)
{
    char *eq = strchr(spec, '='), *at = strchr(spec, '@');
    if (!eq || !at || at < eq) fail("a target is NAME=URLS@PIDS[@NAMES]", spec);
    char *at2 = strchr(at + 1, '@');
    *eq = 0;
    *at = 0;
    if (at2) *at2 = 0;
    t->name = spec;
    for (char *u = strtok(eq + 1, ","); u && t->nurls < MAX_SERVERS; u = strtok(NULL, ","))
        t->urls[t->nurls++] = u;
    for (char *p = strtok(at + 1, ","); p && t->npids < MAX_SERVERS; p = strtok(NULL, ","))
        t->pids[t->npids++] = atoi(p);
    for (char *n = at2 ? strtok(at2 + 1, ",") : NULL; n && t->nnames < MAX_SERVERS;
         n = strtok(NULL, ","))
        t->names[t->nnames++] = n;
    if (!t->nurls || !t->npids) fail("a target needs URLs and pids", t->name);
    if (t->nnames && t->nnames != t->nurls) fail("a target needs one name per URL", t->name);
}

/* The CPU time so far (user + system) of the servers, in microseconds: of server `only` (an
 * index into the pids), or of them all when only is -1. */
static double servers_cpu_us_of(const target *t, int only)
{
    double sum = 0, tick = (double)sysconf(_SC_CLK_TCK);
    for (int i = 0; i < t->npids; i++) {
        if (only >= 0 && i != only) continue;
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", t->pids[i]);
        FILE *f = fopen(path, "r");
        if (!f) fail("cannot read", path);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        const char *p = strrchr(buf, ')'); /* the command may hold spaces */
        unsigned long long ut = 0, st = 0;
        if (!p ||
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
            fail("cannot parse", path);
        sum += (double)(ut + st) / tick * 1e6;
    }
    return sum;
}

static double servers_cpu_us(const target *t)
{
    return servers_cpu_us_of(t, -1);
}

static double client_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Connects to the first of urls that answers. */
static natsConnection *connect_urls(const target *t, const char **urls, int n)
{
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    natsOptions_Create(&o);
    natsOptions_SetServers(o, urls, n);
    natsOptions_SetNoRandomize(o, true);
    natsOptions_SetTimeout(o, 5000);
    if (natsConnection_Connect(&nc, o) != NATS_OK) fail("cannot connect to", t->name);
    natsOptions_Destroy(o);
    return nc;
}

static void connect_target(target *t)
{
    t->nc = connect_urls(t, t->urls, t->nurls);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int acked, ack_errors;

static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js;
    (void)closure;
    (void)pa;
    pthread_mutex_lock(&mu);
    if (pae) ack_errors++;
    acked++;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    natsMsg_Destroy(msg);
}

/* The async phase of --client pub: a window of at most `window` publishes without their
 * acks, each sent as PUB bench.a with the reply subject INBOX.<i> (i: the message's index), all
 * answered on one subscription to INBOX.*. Every ack is checked as it comes: a JSON object with
 * no "error" field, its stream BENCH, its seq within 1..n and above the seq of every ack
 * before it (strictly increasing), and its index not answered before; the phase ends once all
 * n indexes were answered. Anything else fails the run. */
typedef struct pubwin {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n, inflight, acked, waiting;
    uint64_t last_seq;
    unsigned char *answered; /* per index */
    char bad[512];           /* the first failed check ("" none) */
} pubwin;

static void pubwin_fail(pubwin *w, const char *what, const char *subj, const char *data, int len)
{
    if (!w->bad[0])
        snprintf(w->bad, sizeof w->bad, "%s (reply %s: %.*s)", what, subj, len > 200 ? 200 : len,
                 data ? data : "");
}

static void on_pub_ack(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc;
    (void)sub;
    pubwin *w = closure;
    const char *subj = natsMsg_GetSubject(msg);
    const char *data = natsMsg_GetData(msg);
    int len = natsMsg_GetDataLength(msg);
    const char *dot = strrchr(subj, '.');
    char *end = NULL;
    long idx = dot ? strtol(dot + 1, &end, 10) : -1;
    /* the data is NUL-terminated by libnats */
    const char *sp = data ? strstr(data, "\"stream\":\"") : NULL;
    const char *qp = data ? strstr(data, "\"seq\":") : NULL;
    uint64_t seq = qp ? strtoull(qp + 6, NULL, 10) : 0;
    pthread_mutex_lock(&w->mu);
    if (!dot || !end || *end || idx < 0 || idx >= w->n)
        pubwin_fail(w, "an ack to an unknown reply subject", subj, data, len);
    else if (w->answered[idx])
        pubwin_fail(w, "a second ack", subj, data, len);
    else if (!data || len < 2 || data[0] != '{' || strstr(data, "\"error\""))
        pubwin_fail(w, "an error or no PubAck", subj, data, len);
    else if (!sp || strncmp(sp + 10, "BENCH\"", 6) != 0)
        pubwin_fail(w, "an ack naming another stream", subj, data, len);
    else if (seq < 1 || seq > (uint64_t)w->n || seq <= w->last_seq)
        pubwin_fail(w, "an ack whose seq is not above the one before", subj, data, len);
    if (idx >= 0 && idx < w->n && !w->answered[idx]) {
        w->answered[idx] = 1;
        w->acked++;
        w->inflight--;
    }
    if (seq > w->last_seq) w->last_seq = seq;
    if (w->waiting) pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    natsMsg_Destroy(msg);
}

/* Publishes n messages of `size` bytes as above; fails the run on any failed check, or when
 * the acks are not all in within a minute of the last publish. */
static void publish_window(target *t, const char *payload, int size, int n)
{
    pubwin w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    w.n = n;
    w.answered = calloc((size_t)n, 1);
    natsInbox *inbox = NULL;
    if (!w.answered || natsInbox_Create(&inbox) != NATS_OK) fail("out of memory", NULL);
    char wild[128], reply[160];
    snprintf(wild, sizeof wild, "%s.*", (const char *)inbox);
    natsSubscription *sub = NULL;
    if (natsConnection_Subscribe(&sub, t->pub_nc, wild, on_pub_ack, &w) != NATS_OK ||
        natsSubscription_SetPendingLimits(sub, -1, -1) != NATS_OK ||
        natsConnection_Flush(t->pub_nc) != NATS_OK)
        fail("cannot subscribe to the ack inbox on", t->name);
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&w.mu);
        while (w.inflight >= window && !w.bad[0]) {
            w.waiting = 1;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 60;
            if (pthread_cond_timedwait(&w.cv, &w.mu, &ts) == ETIMEDOUT) break;
        }
        w.waiting = 0;
        int stuck = w.inflight >= window;
        w.inflight++;
        pthread_mutex_unlock(&w.mu);
        if (w.bad[0]) break;
        if (stuck) fail("no ack for a minute on", t->name);
        snprintf(reply, sizeof reply, "%s.%d", (const char *)inbox, i);
        natsStatus st = natsConnection_PublishRequest(t->pub_nc, "bench.a", reply, payload, size);
        if (st != NATS_OK) {
            fprintf(stderr, "server_bench: %s: publish %d: %s\n", t->name, i,
                    natsStatus_GetText(st));
            fail("async publish failed on", t->name);
        }
    }
    natsConnection_Flush(t->pub_nc);
    pthread_mutex_lock(&w.mu);
    double t0 = now_s();
    while (w.acked < n && !w.bad[0] && now_s() - t0 < 60) {
        w.waiting = 1;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&w.cv, &w.mu, &ts);
    }
    int got = w.acked;
    pthread_mutex_unlock(&w.mu);
    /* a stray ack still on its way is checked too (a second one fails the run) */
    if (natsConnection_Flush(t->pub_nc) != NATS_OK || natsSubscription_Drain(sub) != NATS_OK ||
        natsSubscription_WaitForDrainCompletion(sub, 10000) != NATS_OK)
        fail("cannot drain the ack inbox on", t->name);
    natsSubscription_Destroy(sub);
    if (w.bad[0]) {
        fprintf(stderr, "server_bench: %s: %s\n", t->name, w.bad);
        fail("a bad ack on", t->name);
    }
    if (got < n) {
        fprintf(stderr, "server_bench: %s: %d of %d acks\n", t->name, got, n);
        fail("async acks missing on", t->name);
    }
    natsInbox_Destroy(inbox);
    free(w.answered);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
}

static jsCtx *make_js(const target *t, natsConnection *nc)
{
    jsOptions jo;
    jsCtx *js = NULL;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = window;
    jo.PublishAsync.StallWait = 10000; /* a full window waits for acks, on a loaded machine too */
    jo.PublishAsync.AckHandler = on_ack;
    jo.Wait = 10000;
    if (natsConnection_JetStream(&js, nc, &jo) != NATS_OK) fail("no JetStream", t->name);
    return js;
}

/* The URL index of the server named name, or -1. */
static int server_index(const target *t, const char *name)
{
    for (int i = 0; name && i < t->nnames; i++)
        if (!strcmp(t->names[i], name)) return i;
    return -1;
}

/* The URL index of the server the connection nc is on, or -1. */
static int connected_index(const target *t, natsConnection *nc)
{
    char url[256];
    if (natsConnection_GetConnectedUrl(nc, url, sizeof url) != NATS_OK) return -1;
    for (int i = 0; i < t->nurls; i++)
        if (!strcmp(t->urls[i], url)) return i;
    return -1;
}

/* Notes which server leads the stream and opens the publishing connection: to that server when
 * pinning and the servers' names are known, else the management connection. */
static void open_publisher(target *t, result *r)
{
    jsStreamInfo *si = NULL;
    jsErrCode je = 0;
    snprintf(r->leader, sizeof r->leader, "?");
    if (js_GetStreamInfo(&si, t->js, "BENCH", NULL, &je) == NATS_OK && si->Cluster &&
        si->Cluster->Leader)
        snprintf(r->leader, sizeof r->leader, "%s", si->Cluster->Leader);
    jsStreamInfo_Destroy(si);
    int li = server_index(t, r->leader);
    r->leader_idx = li < t->npids ? li : -1;
    t->pub_nc = t->nc;
    if (pin && li >= 0) t->pub_nc = connect_urls(t, &t->urls[li], 1);
    t->pub_js = make_js(t, t->pub_nc);
    int ci = connected_index(t, t->pub_nc);
    r->on_leader = li < 0 || ci < 0 ? -1 : li == ci;
}

static void close_publisher(target *t)
{
    jsCtx_Destroy(t->pub_js);
    t->pub_js = NULL;
    if (t->pub_nc != t->nc) natsConnection_Destroy(t->pub_nc);
    t->pub_nc = NULL;
}

static void create_stream(target *t, int replicas)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "BENCH";
    const char *subj[] = {"bench.>"};
    sc.Subjects = subj;
    sc.SubjectsLen = 1;
    sc.Replicas = replicas;
    sc.Storage = js_FileStorage;
    js_DeleteStream(t->js, "BENCH", NULL, NULL);
    double t0 = now_s();
    for (;;) {
        jsStreamInfo *si = NULL;
        jsErrCode je = 0;
        natsStatus s = js_AddStream(&si, t->js, &sc, NULL, &je);
        if (s == NATS_OK) {
            int ok = replicas == 1 || (si->Cluster && si->Cluster->Leader);
            jsStreamInfo_Destroy(si);
            if (ok) break;
        }
        if (now_s() - t0 > 30) fail("cannot create the stream on", t->name);
        usleep(200000);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, int n, double q)
{
    int i = (int)(q * (n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

/* consume: a pull consumer reads the whole stream in fetches of 100, acknowledging each
 * message (natsMsg_Ack: no wait for the server's confirmation), timed from the first fetch to
 * the last message's ack being handed to the connection: msgs/s. */
static double consume_all(target *t, int total, char *cleader, size_t cleader_len)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Config.AckPolicy = js_AckExplicit;
    natsSubscription *sub = NULL;
    jsErrCode je = 0;
    double t0 = now_s();
    for (;;) { /* the consumer's group elects its leader first */
        if (js_PullSubscribe(&sub, t->pub_js, "bench.>", "BENCHC", NULL, &so, &je) == NATS_OK)
            break;
        if (now_s() - t0 > 30) fail("cannot create the consumer on", t->name);
        usleep(100000);
    }
    snprintf(cleader, cleader_len, "?");
    jsConsumerInfo *ci = NULL;
    if (natsSubscription_GetConsumerInfo(&ci, sub, NULL, &je) == NATS_OK && ci->Cluster &&
        ci->Cluster->Leader)
        snprintf(cleader, cleader_len, "%s", ci->Cluster->Leader);
    jsConsumerInfo_Destroy(ci);
    int got = 0, empty = 0;
    t0 = now_s();
    while (got < total) {
        natsMsgList list = {0};
        natsStatus s = natsSubscription_Fetch(&list, sub, 100, 5000, &je);
        if (s == NATS_TIMEOUT && ++empty < 3) continue;
        if (s != NATS_OK) {
            fprintf(stderr, "server_bench: %s: fetch after %d of %d: %s\n", t->name, got, total,
                    natsStatus_GetText(s));
            fail("consume failed on", t->name);
        }
        for (int i = 0; i < list.Count; i++)
            if (natsMsg_Ack(list.Msgs[i], NULL) != NATS_OK) fail("ack failed on", t->name);
        got += list.Count;
        natsMsgList_Destroy(&list);
    }
    double dt = now_s() - t0;
    natsConnection_Flush(t->pub_nc);
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    return got / dt;
}

/* Appends n fdatasync latencies (µs) of the disk holding dir to v: each a 4 KiB overwrite in
 * a file allocated and synced first, as a WAL's preallocated segment is (what is timed is the
 * data's sync, not the file system's allocation). */
static void fdatasync_samples(const char *dir, int n, double *v)
{
    char path[512];
    snprintf(path, sizeof path, "%s/server_bench.sync", dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) fail("cannot create", path);
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    for (int i = 0; i < n; i++)
        if (pwrite(fd, buf, sizeof buf, (off_t)i * 4096) != (ssize_t)sizeof buf)
            fail("write failed in", dir);
    if (fsync(fd)) fail("fsync failed in", dir);
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        if (pwrite(fd, buf, sizeof buf, (off_t)i * 4096) != (ssize_t)sizeof buf || fdatasync(fd))
            fail("write or fdatasync failed in", dir);
        v[i] = (now_s() - t0) * 1e6;
    }
    close(fd);
    unlink(path);
}

/* Three writers syncing one disk, as the three servers of an R3 stream on one machine do for
 * every publish: each round, a first thread overwrites 4 KiB of its own preallocated file and
 * starts its fdatasync, and the two others, released once its write returned (as followers
 * receive an APPEND while the leader syncs), do the same with theirs; the time from the
 * round's start until the second of the three is done (two durable copies: what an R3 commit
 * waits for). Appends n rounds (µs) to v. */
#define CONC_SYNCS 3
typedef struct conc_sync {
    pthread_barrier_t *start, *done;
    sem_t *go; /* posted by the first thread for the others once its write returned */
    int first, fd, rounds;
    const double *t0; /* the round's start */
    double *end;      /* per round, µs from the round's start, -1 on failure */
} conc_sync;

static void *conc_sync_thread(void *arg)
{
    conc_sync *c = arg;
    char buf[4096];
    memset(buf, 'y', sizeof buf);
    for (int i = 0; i < c->rounds; i++) {
        pthread_barrier_wait(c->start);
        if (!c->first) sem_wait(c->go);
        int ok = pwrite(c->fd, buf, sizeof buf, (off_t)i * 4096) == (ssize_t)sizeof buf;
        if (c->first)
            for (int k = 1; k < CONC_SYNCS; k++) sem_post(c->go);
        ok = ok && fdatasync(c->fd) == 0;
        c->end[i] = ok ? (now_s() - *c->t0) * 1e6 : -1;
        pthread_barrier_wait(c->done);
    }
    return NULL;
}

static void fdatasync_2of3_samples(const char *dir, int n, double *v)
{
    pthread_barrier_t start, done;
    sem_t go;
    double t0 = 0;
    pthread_barrier_init(&start, NULL, CONC_SYNCS + 1);
    pthread_barrier_init(&done, NULL, CONC_SYNCS + 1);
    sem_init(&go, 0, 0);
    conc_sync c[CONC_SYNCS];
    pthread_t th[CONC_SYNCS];
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    for (int k = 0; k < CONC_SYNCS; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/server_bench.sync%d", dir, k);
        c[k].fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
        if (c[k].fd < 0) fail("cannot create", path);
        unlink(path);
        for (int i = 0; i < n; i++)
            if (pwrite(c[k].fd, buf, sizeof buf, (off_t)i * 4096) != (ssize_t)sizeof buf)
                fail("write failed in", dir);
        if (fsync(c[k].fd)) fail("fsync failed in", dir);
        c[k].start = &start;
        c[k].done = &done;
        c[k].go = &go;
        c[k].first = k == 0;
        c[k].t0 = &t0;
        c[k].rounds = n;
        c[k].end = calloc((size_t)n, sizeof(double));
        if (!c[k].end || pthread_create(&th[k], NULL, conc_sync_thread, &c[k]))
            fail("cannot start the sync probe's threads", NULL);
    }
    for (int i = 0; i < n; i++) {
        usleep(500); /* the disk as a publisher finds it: not still busy with the last round */
        t0 = now_s();
        pthread_barrier_wait(&start);
        pthread_barrier_wait(&done);
        double e[CONC_SYNCS];
        for (int k = 0; k < CONC_SYNCS; k++) {
            if (c[k].end[i] < 0) fail("write or fdatasync failed in", dir);
            e[k] = c[k].end[i];
        }
        qsort(e, CONC_SYNCS, sizeof e[0], cmp_double);
        v[i] = e[1];
    }
    for (int k = 0; k < CONC_SYNCS; k++) {
        pthread_join(th[k], NULL);
        close(c[k].fd);
        free(c[k].end);
    }
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&done);
    sem_destroy(&go);
}

/* Appends n round trips (µs) of a PING answered by PONG on nc: the part of any request that is
 * this client's and its server's alone (two hops, the client library's hand-off from its
 * reader thread, the server's parse), with no stream behind it. */
static void ping_samples(natsConnection *nc, int n, double *v)
{
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        if (natsConnection_FlushTimeout(nc, 5000) != NATS_OK) fail("a PING went unanswered", NULL);
        v[i] = (now_s() - t0) * 1e6;
    }
}

static double fdatasync_p50_us(const char *dir)
{
    double v[200];
    fdatasync_samples(dir, 200, v);
    qsort(v, 200, sizeof v[0], cmp_double);
    return v[100];
}

static result run_case(target *t, int replicas, int size)
{
    result r;
    memset(&r, 0, sizeof r);
    create_stream(t, replicas);
    open_publisher(t, &r);
    char *payload = malloc((size_t)size);
    for (int i = 0; i < size; i++) payload[i] = (char)('a' + i % 26);
    double cpu0 = servers_cpu_us(t), ccpu0 = client_cpu_us();
    double lcpu0 = r.leader_idx >= 0 ? servers_cpu_us_of(t, r.leader_idx) : 0;

    /* async: a window of 1,000 */
    double t0 = now_s();
    if (!strcmp(client_mode, "pub")) {
        publish_window(t, payload, size, async_n);
    } else {
        acked = ack_errors = 0;
        for (int i = 0; i < async_n; i++) {
            natsStatus s = js_PublishAsync(t->pub_js, "bench.a", payload, size, NULL);
            if (s != NATS_OK) {
                fprintf(stderr, "server_bench: %s: publish %d: %s\n", t->name, i,
                        natsStatus_GetText(s));
                fail("async publish failed on", t->name);
            }
        }
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = 60000;
        if (js_PublishAsyncComplete(t->pub_js, &po) != NATS_OK)
            fail("async acks missing on", t->name);
        pthread_mutex_lock(&mu);
        while (acked < async_n) pthread_cond_wait(&cv, &mu);
        int errs = ack_errors;
        pthread_mutex_unlock(&mu);
        if (errs) fail("async publishes were refused on", t->name);
    }
    double dt = now_s() - t0;
    r.msgs_s = async_n / dt;
    r.mb_s = r.msgs_s * size / 1e6;
    double cpu1 = servers_cpu_us(t), ccpu1 = client_cpu_us();
    r.cpu_async = (cpu1 - cpu0 + ccpu1 - ccpu0) / (double)async_n;
    r.cpu_async_client = (ccpu1 - ccpu0) / (double)async_n;
    r.cpu_async_leader =
        r.leader_idx >= 0 ? (servers_cpu_us_of(t, r.leader_idx) - lcpu0) / (double)async_n : -1;

    /* sync: one at a time, the disk's sync latency sampled before and after (the sampling's
     * own CPU left out of the client's) */
    double fs[2 * PROBE_SYNCS], f2[2 * PROBE_SYNCS], pg[2 * PROBE_SYNCS], probe_cpu = 0;
    double pc = client_cpu_us();
    ping_samples(t->pub_nc, PROBE_SYNCS, pg);
    if (sync_dir) {
        fdatasync_samples(sync_dir, PROBE_SYNCS, fs);
        fdatasync_2of3_samples(sync_dir, PROBE_SYNCS, f2);
    }
    probe_cpu = client_cpu_us() - pc;
    double *lat = malloc(sizeof *lat * (size_t)(sync_n ? sync_n : 1));
    lat[0] = 0;
    for (int i = 0; i < sync_n; i++) {
        jsPubAck *pa = NULL;
        double s0 = now_s();
        if (js_Publish(&pa, t->pub_js, "bench.s", payload, size, NULL, NULL) != NATS_OK)
            fail("sync publish failed on", t->name);
        lat[i] = (now_s() - s0) * 1e6;
        jsPubAck_Destroy(pa);
    }
    int nlat = sync_n ? sync_n : 1;
    qsort(lat, (size_t)nlat, sizeof *lat, cmp_double);
    r.p50_us = pct(lat, nlat, 0.50);
    r.p99_us = pct(lat, nlat, 0.99);
    r.p999_us = pct(lat, nlat, 0.999);
    double cpu2 = servers_cpu_us(t), ccpu2 = client_cpu_us() - probe_cpu;
    ping_samples(t->pub_nc, PROBE_SYNCS, pg + PROBE_SYNCS);
    qsort(pg, 2 * PROBE_SYNCS, sizeof pg[0], cmp_double);
    r.ping_p50_us = pct(pg, 2 * PROBE_SYNCS, 0.50);
    r.fsync_p50_us = r.fsync2of3_p50_us = -1;
    if (sync_dir) {
        fdatasync_samples(sync_dir, PROBE_SYNCS, fs + PROBE_SYNCS);
        qsort(fs, 2 * PROBE_SYNCS, sizeof fs[0], cmp_double);
        r.fsync_p50_us = pct(fs, 2 * PROBE_SYNCS, 0.50);
        fdatasync_2of3_samples(sync_dir, PROBE_SYNCS, f2 + PROBE_SYNCS);
        qsort(f2, 2 * PROBE_SYNCS, sizeof f2[0], cmp_double);
        r.fsync2of3_p50_us = pct(f2, 2 * PROBE_SYNCS, 0.50);
    }
    r.cpu_sync = sync_n ? (cpu2 - cpu1 + ccpu2 - ccpu1) / (double)sync_n : 0;
    r.cpu_us_per_msg = (cpu2 - cpu0 + ccpu2 - ccpu0) / (double)(async_n + sync_n);
    snprintf(r.cleader, sizeof r.cleader, "?");
    if (consume) r.consume_msgs_s = consume_all(t, async_n + sync_n, r.cleader, sizeof r.cleader);
    close_publisher(t);
    free(lat);
    free(payload);
    js_DeleteStream(t->js, "BENCH", NULL, NULL);
    return r;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void print_result(const target *t, int replicas, int size, int round, const result *r)
{
    printf(
        "{\"system\":\"%s\",\"client\":\"%s\",\"replicas\":%d,\"size\":%d,\"round\":%d,\"msgs\":%d,"
        "\"window\":%d,\"msgs_s\":%.0f,\"mb_s\":%.2f,\"sync_msgs\":%d,\"sync_p50_us\":%.0f,"
        "\"sync_p99_us\":%.0f,\"sync_p999_us\":%.0f,\"cpu_us_per_msg\":%.1f,"
        "\"cpu_us_per_msg_async\":%.1f,\"cpu_us_per_msg_sync\":%.1f,"
        "\"cpu_async_client\":%.1f,\"cpu_async_leader\":%.1f,"
        "\"consume_msgs_s\":%.0f,\"leader\":\"%s\",\"on_leader\":%d,\"consumer_leader\":\"%s\"",
        t->name, client_mode, replicas, size, round, async_n, window, r->msgs_s, r->mb_s, sync_n,
        r->p50_us, r->p99_us, r->p999_us, r->cpu_us_per_msg, r->cpu_async, r->cpu_sync,
        r->cpu_async_client, r->cpu_async_leader, r->consume_msgs_s, r->leader, r->on_leader,
        r->cleader);
    if (r->fsync_p50_us >= 0)
        printf(",\"fdatasync_p50_us\":%.0f,\"sync_over_fdatasync_us\":%.0f", r->fsync_p50_us,
               r->p50_us - r->fsync_p50_us);
    printf(",\"ping_p50_us\":%.0f", r->ping_p50_us);
    if (r->fsync2of3_p50_us >= 0) printf(",\"fdatasync_2of3_p50_us\":%.0f", r->fsync2of3_p50_us);
    printf("}\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    target a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    const char *sizes = "128,4096", *reps = "1,3", *only = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--a"))
            parse_target(&a, argv[i + 1]);
        else if (!strcmp(argv[i], "--b"))
            parse_target(&b, argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--async"))
            async_n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sync"))
            sync_n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sizes"))
            sizes = argv[i + 1];
        else if (!strcmp(argv[i], "--replicas"))
            reps = argv[i + 1];
        else if (!strcmp(argv[i], "--consume"))
            consume = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--window"))
            window = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--only"))
            only = argv[i + 1];
        else if (!strcmp(argv[i], "--pin"))
            pin = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sync-dir"))
            sync_dir = argv[i + 1];
        else if (!strcmp(argv[i], "--client"))
            client_mode = argv[i + 1];
        else
            fail("unknown option", argv[i]);
    }
    if (!a.name) fail("usage: server_bench --a NAME=URLS@PIDS [--b NAME=URLS@PIDS]", 0);
    if (rounds < 1 || rounds > MAX_ROUNDS || async_n < 1 || sync_n < 0 || window < 1)
        fail("bad counts", 0);
    if (strcmp(client_mode, "pub") && strcmp(client_mode, "js")) fail("--client is pub or js", 0);
    if (only && b.name && !strcmp(only, b.name)) {
        a = b;
        memset(&b, 0, sizeof b);
    } else if (only && !strcmp(only, a.name)) {
        memset(&b, 0, sizeof b);
    } else if (only) {
        fail("--only names no target", only);
    }
    if (sync_dir)
        printf("{\"fdatasync_4k_p50_us\":%.0f,\"dir\":\"%s\"}\n", fdatasync_p50_us(sync_dir),
               sync_dir);
    connect_target(&a);
    a.js = make_js(&a, a.nc);
    if (b.name) {
        connect_target(&b);
        b.js = make_js(&b, b.nc);
    }
    char rbuf[64], sbuf[64];
    snprintf(rbuf, sizeof rbuf, "%s", reps);
    char *rsave = NULL;
    for (char *rs = strtok_r(rbuf, ",", &rsave); rs; rs = strtok_r(NULL, ",", &rsave)) {
        int replicas = atoi(rs);
        char *save = NULL;
        snprintf(sbuf, sizeof sbuf, "%s", sizes);
        for (char *ss = strtok_r(sbuf, ",", &save); ss; ss = strtok_r(NULL, ",", &save)) {
            int size = atoi(ss);
            double va[8][MAX_ROUNDS], vb[8][MAX_ROUNDS];
            for (int k = 0; k < rounds; k++) {
                result ra = run_case(&a, replicas, size);
                print_result(&a, replicas, size, k, &ra);
                result rb = ra;
                if (b.name) {
                    rb = run_case(&b, replicas, size);
                    print_result(&b, replicas, size, k, &rb);
                }
                double xa[8] = {ra.msgs_s, ra.cpu_us_per_msg, ra.p50_us,    ra.p99_us,
                                ra.mb_s,   ra.consume_msgs_s, ra.cpu_async, ra.cpu_sync};
                double xb[8] = {rb.msgs_s, rb.cpu_us_per_msg, rb.p50_us,    rb.p99_us,
                                rb.mb_s,   rb.consume_msgs_s, rb.cpu_async, rb.cpu_sync};
                for (int m = 0; m < 8; m++) {
                    va[m][k] = xa[m];
                    vb[m][k] = xb[m];
                }
            }
            if (!b.name) continue;
            double ma[8], mb[8];
            for (int m = 0; m < 8; m++) {
                ma[m] = median(va[m], rounds);
                mb[m] = median(vb[m], rounds);
            }
            printf(
                "{\"ratio\":\"%s/%s\",\"client\":\"%s\",\"replicas\":%d,\"size\":%d,\"rounds\":%d,"
                "\"msgs_s\":%.2f,\"cpu_us_per_msg\":%.2f,\"cpu_us_per_msg_async\":%.2f,"
                "\"cpu_us_per_msg_sync\":%.2f,\"sync_p50_us\":%.2f,"
                "\"sync_p99_us\":%.2f,\"consume_msgs_s\":%.2f}\n",
                a.name, b.name, client_mode, replicas, size, rounds, ma[0] / mb[0], ma[1] / mb[1],
                ma[6] / mb[6], mb[7] > 0 ? ma[7] / mb[7] : 0, mb[2] > 0 ? ma[2] / mb[2] : 0,
                mb[3] > 0 ? ma[3] / mb[3] : 0, mb[5] > 0 ? ma[5] / mb[5] : 0);
            fflush(stdout);
        }
    }
    jsCtx_Destroy(a.js);
    natsConnection_Destroy(a.nc);
    if (b.name) {
        jsCtx_Destroy(b.js);
        natsConnection_Destroy(b.nc);
    }
    nats_Close();
    return 0;
}
