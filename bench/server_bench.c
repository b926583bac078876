/*
 * server_bench — a NATS JetStream client (libnats) timing two running clusters side by side:
 * jetraft-server and nats-server, each three processes on this machine (bench/server_bench.sh
 * starts them). For each case (replicas R1/R3 x payload 128 B / 4 KiB) and round, it runs the
 * same workload against A, then B (so that both see the same machine, interleaved):
 *
 *   - async: one connection publishes `--async` messages with a window of 1,000 acks pending
 *     (js_PublishAsync), timed from the first publish to the last ack: msgs/s and MB/s;
 *   - sync: `--sync` synchronous publishes, each waiting for its ack: p50/p99/p99.9 latency;
 *   - CPU: the servers' user+system time (/proc/PID/stat) and this client's (getrusage) over
 *     both phases, in microseconds per message;
 *   - consume (unless --consume 0): a durable pull consumer reads every message back in
 *     fetches of 100, acknowledging each: msgs/s (not in the CPU figure).
 *
 * Every publish is acknowledged before it counts; an error or a lost ack fails the run. It
 * prints one JSON line per system, case and round, then one "ratio" line per case (A over B, on
 * the medians of the rounds), and first the disk's fdatasync latency measured in --sync-dir
 * (4 KiB written then fdatasync, 200 times), against which a synchronous publish's p50 is read.
 *
 * Usage: server_bench --a NAME=URLS@PIDS [--b NAME=URLS@PIDS] [--rounds N] [--async N]
 *                     [--sync N] [--sizes 128,4096] [--replicas 1,3] [--consume 0|1]
 *                     [--sync-dir DIR]
 *   URLS: comma-separated nats:// URLs; PIDS: comma-separated server process ids.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
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
    natsConnection *nc;
    jsCtx *js;
} target;

typedef struct result {
    double msgs_s, mb_s, p50_us, p99_us, p999_us, cpu_us_per_msg, consume_msgs_s;
} result;

static int async_n = 20000, sync_n = 2000, rounds = 3, consume = 1;

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

/* "name=url1,url2@pid1,pid2" */
static void parse_target(target *t, char *spec)
{
    char *eq = strchr(spec, '='), *at = strchr(spec, '@');
    if (!eq || !at || at < eq) fail("a target is NAME=URLS@PIDS", spec);
    *eq = 0;
    *at = 0;
    t->name = spec;
    for (char *u = strtok(eq + 1, ","); u && t->nurls < MAX_SERVERS; u = strtok(NULL, ","))
        t->urls[t->nurls++] = u;
    for (char *p = strtok(at + 1, ","); p && t->npids < MAX_SERVERS; p = strtok(NULL, ","))
        t->pids[t->npids++] = atoi(p);
    if (!t->nurls || !t->npids) fail("a target needs URLs and pids", t->name);
}

/* The servers' CPU time so far (user + system), in microseconds. */
static double servers_cpu_us(const target *t)
{
    double sum = 0, tick = (double)sysconf(_SC_CLK_TCK);
    for (int i = 0; i < t->npids; i++) {
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

static double client_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void connect_target(target *t)
{
    natsOptions *o = NULL;
    natsOptions_Create(&o);
    natsOptions_SetServers(o, t->urls, t->nurls);
    natsOptions_SetNoRandomize(o, true);
    natsOptions_SetTimeout(o, 5000);
    if (natsConnection_Connect(&t->nc, o) != NATS_OK) fail("cannot connect to", t->name);
    natsOptions_Destroy(o);
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

static void make_js(target *t)
{
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 1000;
    jo.PublishAsync.StallWait = 10000; /* a full window waits for acks, on a loaded machine too */
    jo.PublishAsync.AckHandler = on_ack;
    jo.Wait = 10000;
    if (natsConnection_JetStream(&t->js, t->nc, &jo) != NATS_OK) fail("no JetStream", t->name);
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
static double consume_all(target *t, int total)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Config.AckPolicy = js_AckExplicit;
    natsSubscription *sub = NULL;
    jsErrCode je = 0;
    double t0 = now_s();
    for (;;) { /* the consumer's group elects its leader first */
        if (js_PullSubscribe(&sub, t->js, "bench.>", "BENCHC", NULL, &so, &je) == NATS_OK) break;
        if (now_s() - t0 > 30) fail("cannot create the consumer on", t->name);
        usleep(100000);
    }
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
    natsConnection_Flush(t->nc);
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    return got / dt;
}

static result run_case(target *t, int replicas, int size)
{
    result r;
    memset(&r, 0, sizeof r);
    create_stream(t, replicas);
    char *payload = malloc((size_t)size);
    for (int i = 0; i < size; i++) payload[i] = (char)('a' + i % 26);
    double cpu0 = servers_cpu_us(t), ccpu0 = client_cpu_us();

    /* async: a window of 1,000 */
    acked = ack_errors = 0;
    double t0 = now_s();
    for (int i = 0; i < async_n; i++) {
        natsStatus s = js_PublishAsync(t->js, "bench.a", payload, size, NULL);
        if (s != NATS_OK) {
            fprintf(stderr, "server_bench: %s: publish %d: %s\n", t->name, i,
                    natsStatus_GetText(s));
            fail("async publish failed on", t->name);
        }
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 60000;
    if (js_PublishAsyncComplete(t->js, &po) != NATS_OK) fail("async acks missing on", t->name);
    pthread_mutex_lock(&mu);
    while (acked < async_n) pthread_cond_wait(&cv, &mu);
    int errs = ack_errors;
    pthread_mutex_unlock(&mu);
    double dt = now_s() - t0;
    if (errs) fail("async publishes were refused on", t->name);
    r.msgs_s = async_n / dt;
    r.mb_s = r.msgs_s * size / 1e6;

    /* sync: one at a time */
    double *lat = malloc(sizeof *lat * (size_t)sync_n);
    for (int i = 0; i < sync_n; i++) {
        jsPubAck *pa = NULL;
        double s0 = now_s();
        if (js_Publish(&pa, t->js, "bench.s", payload, size, NULL, NULL) != NATS_OK)
            fail("sync publish failed on", t->name);
        lat[i] = (now_s() - s0) * 1e6;
        jsPubAck_Destroy(pa);
    }
    qsort(lat, (size_t)sync_n, sizeof *lat, cmp_double);
    r.p50_us = pct(lat, sync_n, 0.50);
    r.p99_us = pct(lat, sync_n, 0.99);
    r.p999_us = pct(lat, sync_n, 0.999);
    r.cpu_us_per_msg =
        (servers_cpu_us(t) - cpu0 + client_cpu_us() - ccpu0) / (double)(async_n + sync_n);
    if (consume) r.consume_msgs_s = consume_all(t, async_n + sync_n);
    free(lat);
    free(payload);
    js_DeleteStream(t->js, "BENCH", NULL, NULL);
    return r;
}

/* fdatasync latency of the disk holding dir: p50 of 200 overwrites of 4 KiB, each synced. */
static double fdatasync_p50_us(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/server_bench.sync", dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) fail("cannot create", path);
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    /* allocated and synced first, as a WAL's preallocated segment is: what is timed is the
     * data's sync, not the file system's allocation */
    for (int i = 0; i < 200; i++)
        if (pwrite(fd, buf, sizeof buf, (off_t)i * 4096) != (ssize_t)sizeof buf)
            fail("write failed in", dir);
    if (fsync(fd)) fail("fsync failed in", dir);
    double v[200];
    for (int i = 0; i < 200; i++) {
        double t0 = now_s();
        if (pwrite(fd, buf, sizeof buf, (off_t)i * 4096) != (ssize_t)sizeof buf || fdatasync(fd))
            fail("write or fdatasync failed in", dir);
        v[i] = (now_s() - t0) * 1e6;
    }
    close(fd);
    unlink(path);
    qsort(v, 200, sizeof v[0], cmp_double);
    return v[100];
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void print_result(const target *t, int replicas, int size, int round, const result *r)
{
    printf("{\"system\":\"%s\",\"replicas\":%d,\"size\":%d,\"round\":%d,\"msgs\":%d,"
           "\"msgs_s\":%.0f,\"mb_s\":%.2f,\"sync_msgs\":%d,\"sync_p50_us\":%.0f,"
           "\"sync_p99_us\":%.0f,\"sync_p999_us\":%.0f,\"cpu_us_per_msg\":%.1f,"
           "\"consume_msgs_s\":%.0f}\n",
           t->name, replicas, size, round, async_n, r->msgs_s, r->mb_s, sync_n, r->p50_us,
           r->p99_us, r->p999_us, r->cpu_us_per_msg, r->consume_msgs_s);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    target a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    const char *sizes = "128,4096", *reps = "1,3", *sync_dir = NULL;
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
        else if (!strcmp(argv[i], "--sync-dir"))
            sync_dir = argv[i + 1];
        else
            fail("unknown option", argv[i]);
    }
    if (!a.name) fail("usage: server_bench --a NAME=URLS@PIDS [--b NAME=URLS@PIDS]", 0);
    if (rounds < 1 || rounds > MAX_ROUNDS || async_n < 1 || sync_n < 1) fail("bad counts", 0);
    if (sync_dir)
        printf("{\"fdatasync_4k_p50_us\":%.0f,\"dir\":\"%s\"}\n", fdatasync_p50_us(sync_dir),
               sync_dir);
    connect_target(&a);
    make_js(&a);
    if (b.name) {
        connect_target(&b);
        make_js(&b);
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
            double va[6][MAX_ROUNDS], vb[6][MAX_ROUNDS];
            for (int k = 0; k < rounds; k++) {
                result ra = run_case(&a, replicas, size);
                print_result(&a, replicas, size, k, &ra);
                result rb = ra;
                if (b.name) {
                    rb = run_case(&b, replicas, size);
                    print_result(&b, replicas, size, k, &rb);
                }
                double xa[6] = {ra.msgs_s, ra.cpu_us_per_msg, ra.p50_us,
                                ra.p99_us, ra.mb_s,           ra.consume_msgs_s};
                double xb[6] = {rb.msgs_s, rb.cpu_us_per_msg, rb.p50_us,
                                rb.p99_us, rb.mb_s,           rb.consume_msgs_s};
                for (int m = 0; m < 6; m++) {
                    va[m][k] = xa[m];
                    vb[m][k] = xb[m];
                }
            }
            if (!b.name) continue;
            double ma[6], mb[6];
            for (int m = 0; m < 6; m++) {
                ma[m] = median(va[m], rounds);
                mb[m] = median(vb[m], rounds);
            }
            printf("{\"ratio\":\"%s/%s\",\"replicas\":%d,\"size\":%d,\"rounds\":%d,"
                   "\"msgs_s\":%.2f,\"cpu_us_per_msg\":%.2f,\"sync_p50_us\":%.2f,"
                   "\"sync_p99_us\":%.2f,\"consume_msgs_s\":%.2f}\n",
                   a.name, b.name, replicas, size, rounds, ma[0] / mb[0], ma[1] / mb[1],
                   ma[2] / mb[2], ma[3] / mb[3], mb[5] > 0 ? ma[5] / mb[5] : 0);
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
