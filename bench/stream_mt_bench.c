/*
 * stream_mt_bench — stream publish throughput with every node on its own thread, the way a host
 * embeds libjetraft: one event loop per node, frames handed between loops through mailboxes.
 * One JSON line per configuration on stdout (issue 4 §8; compare stream_bench, which runs every
 * node on one thread over the deterministic fixture).
 *
 *   stream_mt_bench [--replicas 1,3,5] [--payload 16,128,1024,16384] [--window N]
 *                   [--seconds S] [--vfs mem|posix] [--dir PATH]
 *
 * The host here is ~200 lines: a thread per node waiting on a mutex/condition-variable mailbox
 * with the node's one timer as the wait deadline (jr_host.arm); jr_host.send copies the frame
 * into the destination's mailbox; each loop feeds what arrived to jr_node_recv and calls
 * jr_node_tick when the deadline passed. Storage: the in-memory file system of the test fixture
 * (vfs "mem", one per node) or jr_vfs_posix() under --dir with JR_SYNC_ALWAYS (vfs "posix").
 * One stream on bench.> with R replicas and file storage; the publisher runs on the stream
 * leader's thread and keeps `window` publishes outstanding (every ack issues the next one).
 * After a warm-up of max(window, 20,000) messages it measures for --seconds (default 2):
 *   msgs_per_s     acknowledged publishes per second of wall time
 *   p50/p99/p999   ack latency, jr_publish() to its callback (us), of every 4th publish
 *   cpu_us_per_msg process CPU time (user + sys over every thread) per acknowledged publish
 *   cores          process CPU time / wall time (how much parallelism the nodes found)
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "jetraft.h"
#include "vfs/memfs.h"

#define MAX_NODES 5
#define LAT_SAMPLE 4 /* latency of every 4th publish */

static void die(const char *what, int rc)
{
    fprintf(stderr, "stream_mt_bench: %s: %s\n", what, jr_strerror(rc));
    exit(1);
}

/* ---------------------------------------------------------------------------------------------
 * The host: one thread per node, a mailbox of frames and tasks
 */
typedef struct item {
    struct item *next;
    int from; /* frame: sender index; -1: a task */
    void (*task)(void *arg, jr_node *node);
    void *arg;
    size_t len;
    uint8_t data[];
} item;

typedef struct loop {
    struct cluster *c;
    int idx;
    char name[16];
    jr_node *node;
    jr_host host;
    jr_vfs *vfs;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    item *head, *tail; /* guarded by mu */
    int stop;          /* guarded by mu */
    uint64_t deadline; /* node's timer; loop thread only */
} loop;

typedef struct cluster {
    int n;
    loop loops[MAX_NODES];
    const char *names[MAX_NODES];
} cluster;

static void post(loop *l, item *it)
{
    it->next = NULL;
    pthread_mutex_lock(&l->mu);
    if (l->tail)
        l->tail->next = it;
    else
        l->head = it;
    l->tail = it;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/* Runs task(arg, node) on l's thread. */
static void run_on(loop *l, void (*task)(void *, jr_node *), void *arg)
{
    item *it = malloc(sizeof *it);
    if (!it) die("malloc", JR_ENOMEM);
    it->from = -1;
    it->task = task;
    it->arg = arg;
    it->len = 0;
    post(l, it);
}

static int host_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt)
{
    loop *l = ctx;
    cluster *c = l->c;
    int dst = -1;
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->names[i], to)) dst = i;
    if (dst < 0) return -1;
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].len;
    item *it = malloc(sizeof *it + len);
    if (!it) return -1;
    it->from = l->idx;
    it->task = NULL;
    it->len = len;
    size_t off = 0;
    for (int i = 0; i < iovcnt; i++) {
        memcpy(it->data + off, iov[i].base, iov[i].len);
        off += iov[i].len;
    }
    post(&c->loops[dst], it);
    return 0;
}

static uint64_t host_now(void *ctx)
{
    (void)ctx;
    return bench_now_ns();
}

static uint64_t host_wall(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void host_arm(void *ctx, uint64_t deadline)
{
    ((loop *)ctx)->deadline = deadline;
}

static void *loop_main(void *arg)
{
    loop *l = arg;
    for (;;) {
        pthread_mutex_lock(&l->mu);
        while (!l->head && !l->stop && bench_now_ns() < l->deadline) {
            if (l->deadline == UINT64_MAX) {
                pthread_cond_wait(&l->cv, &l->mu);
            } else {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                uint64_t wait = l->deadline - bench_now_ns();
                if (wait > 1000000000u) wait = 1000000000u;
                uint64_t ns = (uint64_t)ts.tv_nsec + wait;
                ts.tv_sec += (time_t)(ns / 1000000000u);
                ts.tv_nsec = (long)(ns % 1000000000u);
                pthread_cond_timedwait(&l->cv, &l->mu, &ts);
            }
        }
        item *it = l->head;
        l->head = l->tail = NULL;
        int stop = l->stop;
        pthread_mutex_unlock(&l->mu);
        if (stop) {
            while (it) {
                item *next = it->next;
                free(it);
                it = next;
            }
            return NULL;
        }
        while (it) {
            item *next = it->next;
            if (it->from < 0)
                it->task(it->arg, l->node);
            else
                jr_node_recv(l->node, l->c->names[it->from], it->data, it->len);
            free(it);
            it = next;
        }
        if (bench_now_ns() >= l->deadline) jr_node_tick(l->node);
        l->deadline = jr_node_deadline(l->node);
    }
}

typedef struct bench_cfg {
    int posix;
    int replicas;
    size_t payload;
    int window;
    double seconds;
    const char *dir;
} bench_cfg;

static void cluster_open(cluster *c, const bench_cfg *cfg, const char *root)
{
    memset(c, 0, sizeof *c);
    c->n = cfg->replicas;
    for (int i = 0; i < c->n; i++) {
        loop *l = &c->loops[i];
        l->c = c;
        l->idx = i;
        snprintf(l->name, sizeof l->name, "n%d", i);
        c->names[i] = l->name;
    }
    for (int i = 0; i < c->n; i++) {
        loop *l = &c->loops[i];
        char wal[600], store[600];
        pthread_mutex_init(&l->mu, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&l->cv, &ca);
        pthread_condattr_destroy(&ca);
        memset(&l->host, 0, sizeof l->host);
        l->host.version = JR_HOST_VERSION;
        l->host.ctx = l;
        l->host.send = host_send;
        l->host.now = host_now;
        l->host.arm = host_arm;
        l->host.wall = host_wall;
        jr_node_config nc;
        jr_node_config_init(&nc);
        nc.name = l->name;
        nc.cluster = "bench";
        nc.peers = c->names;
        nc.npeers = (size_t)c->n;
        nc.host = &l->host;
        nc.streams = 1;
        nc.request_timeout_ms = 30000;
        if (cfg->posix) {
            snprintf(wal, sizeof wal, "%s/n%d/wal", root, i);
            snprintf(store, sizeof store, "%s/n%d/store", root, i);
            char cmd[1400];
            snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s'", wal, store);
            if (system(cmd) != 0) die("mkdir", JR_EIO);
            nc.vfs = jr_vfs_posix();
            nc.sync_policy = JR_SYNC_ALWAYS;
        } else {
            int rc = jr__memfs_new(NULL, (uint64_t)i + 1, &l->vfs);
            if (rc) die("memfs", rc);
            snprintf(wal, sizeof wal, "/wal");
            snprintf(store, sizeof store, "/store");
            nc.vfs = l->vfs;
        }
        nc.wal_dir = wal;
        nc.store_dir = store;
        int rc = jr_node_open(&nc, &l->node);
        if (rc) die("jr_node_open", rc);
        l->deadline = jr_node_deadline(l->node);
    }
    for (int i = 0; i < c->n; i++)
        pthread_create(&c->loops[i].thread, NULL, loop_main, &c->loops[i]);
}

static void close_task(void *arg, jr_node *node)
{
    (void)arg;
    jr_node_close(node);
}

static void cluster_close(cluster *c)
{
    for (int i = 0; i < c->n; i++) {
        loop *l = &c->loops[i];
        run_on(l, close_task, NULL);
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
        if (l->vfs) jr__memfs_free(l->vfs);
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Waiting on the main thread for something a loop does
 */
typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, status;
    int replicas; /* add_task's input */
    char leader[32];
} waiter;

static void waiter_init(waiter *w)
{
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

static void waiter_done(waiter *w, int status)
{
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    w->status = status;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static int waiter_wait(waiter *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    return w->status;
}

static void admin_cb(void *arg, int status, const char *msg)
{
    (void)msg;
    waiter_done(arg, status);
}

static void add_task(void *arg, jr_node *node)
{
    waiter *w = arg;
    static const char *subj[] = {"bench.>"};
    jr_stream_config scfg;
    jr_stream_config_init(&scfg);
    scfg.name = "BENCH";
    scfg.subjects = subj;
    scfg.nsubjects = 1;
    scfg.replicas = w->replicas;
    int rc = jr_stream_add(node, &scfg, admin_cb, w);
    if (rc) waiter_done(w, rc);
}

static void info_cb(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    waiter *w = arg;
    (void)msg;
    if (status == 0 && info->cluster->leader)
        snprintf(w->leader, sizeof w->leader, "%s", info->cluster->leader);
    waiter_done(w, status ? status : (w->leader[0] ? 0 : JR_ENOLEADER));
}

static void info_task(void *arg, jr_node *node)
{
    int rc = jr_stream_info_get(node, "BENCH", info_cb, arg);
    if (rc) waiter_done(arg, rc);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Creates the stream (retrying while the meta group elects) and returns its leader's index. */
static int add_stream(cluster *c, int replicas)
{
    int rc = JR_ENOLEADER;
    for (int tries = 0; tries < 100 && rc; tries++) {
        waiter w;
        waiter_init(&w);
        w.replicas = replicas;
        run_on(&c->loops[0], add_task, &w);
        rc = waiter_wait(&w);
        if (rc) sleep_ms(100);
    }
    if (rc) die("jr_stream_add", rc);
    for (int tries = 0; tries < 200; tries++) {
        waiter w;
        waiter_init(&w);
        run_on(&c->loops[0], info_task, &w);
        if (waiter_wait(&w) == 0)
            for (int i = 0; i < c->n; i++)
                if (!strcmp(c->names[i], w.leader)) return i;
        sleep_ms(50);
    }
    die("no stream leader", JR_ENOLEADER);
    return -1;
}

/* ---------------------------------------------------------------------------------------------
 * The publisher (on the leader's thread)
 */
typedef struct pubber {
    const bench_cfg *cfg;
    jr_node *node;
    uint8_t *data;
    uint64_t issued, acked, failed, outstanding;
    uint64_t measure_from, warm;
    uint64_t *lat, nlat, cap;
    uint64_t t_end;
    uint64_t t0, t1;
    double c0, c1;
    int stop;
    waiter done;
} pubber;

typedef struct slot {
    pubber *p;
    uint64_t no, t0;
} slot;

static void issue(pubber *p, slot *s);

static void on_ack(void *arg, int status, const jr_pub_ack *ack)
{
    slot *s = arg;
    pubber *p = s->p;
    (void)ack;
    p->outstanding--;
    if (status != 0)
        p->failed++;
    else
        p->acked++;
    int timed = (p->acked & 1023) == 0 || (p->acked == p->warm && !p->measure_from);
    uint64_t t = s->t0 || timed ? bench_now_ns() : 0;
    if (status == 0 && s->t0 && s->no >= p->measure_from && p->nlat < p->cap)
        p->lat[p->nlat++] = t - s->t0;
    if (p->acked == p->warm && !p->measure_from) {
        /* warm-up done: measure from the next publish on */
        p->measure_from = p->issued;
        p->t0 = t;
        p->c0 = bench_cpu_s();
        p->t_end = t + (uint64_t)(p->cfg->seconds * 1e9);
        p->acked = p->failed = 0;
    }
    if (p->measure_from && !p->stop && (p->acked & 1023) == 0 && t >= p->t_end) {
        p->stop = 1;
        p->t1 = t;
        p->c1 = bench_cpu_s();
    }
    if (!p->stop) {
        issue(p, s);
        return;
    }
    free(s);
    if (p->outstanding == 0) waiter_done(&p->done, 0);
}

static void issue(pubber *p, slot *s)
{
    s->no = p->issued++;
    s->t0 = s->no % LAT_SAMPLE == 0 ? bench_now_ns() : 0; /* a clock read costs ~3% a message */
    p->outstanding++;
    int rc =
        jr_publish(p->node, "bench.orders", NULL, 0, p->data, p->cfg->payload, NULL, on_ack, s);
    if (rc) die("jr_publish", rc);
}

static void start_task(void *arg, jr_node *node)
{
    pubber *p = arg;
    p->node = node;
    for (int k = 0; k < p->cfg->window; k++) {
        slot *s = calloc(1, sizeof *s);
        if (!s) die("calloc", JR_ENOMEM);
        s->p = p;
        issue(p, s);
    }
}

static void run(const bench_cfg *cfg)
{
    char root[512] = "";
    if (cfg->posix) snprintf(root, sizeof root, "%s/jr-mt-bench-%d", cfg->dir, (int)getpid());
    cluster c;
    cluster_open(&c, cfg, root);
    int leader = add_stream(&c, cfg->replicas);
    sleep_ms(300);

    pubber p;
    memset(&p, 0, sizeof p);
    p.cfg = cfg;
    p.data = malloc(cfg->payload);
    for (size_t i = 0; i < cfg->payload; i++) p.data[i] = (uint8_t)('a' + i % 26);
    p.warm = cfg->window < 20000 ? 20000 : (uint64_t)cfg->window;
    p.cap = 8u << 20;
    p.lat = malloc(p.cap * sizeof *p.lat);
    if (!p.data || !p.lat) die("malloc", JR_ENOMEM);
    waiter_init(&p.done);
    run_on(&c.loops[leader], start_task, &p);
    waiter_wait(&p.done);

    double wall = (double)(p.t1 - p.t0) * 1e-9, cpu = p.c1 - p.c0;
    qsort(p.lat, p.nlat, sizeof *p.lat, bench_cmp_u64);
    double p50 = p.nlat ? (double)p.lat[p.nlat / 2] / 1e3 : 0;
    double p99 = p.nlat ? (double)p.lat[(size_t)((double)p.nlat * 0.99)] / 1e3 : 0;
    double p999 = p.nlat ? (double)p.lat[(size_t)((double)p.nlat * 0.999)] / 1e3 : 0;
    printf("{\"bench\":\"stream_publish_mt\",\"vfs\":\"%s\",\"sync\":\"%s\",\"replicas\":%d,"
           "\"payload\":%zu,\"window\":%d,\"msgs\":%llu,\"failed\":%llu,\"seconds\":%.3f,"
           "\"msgs_per_s\":%.0f,\"mb_per_s\":%.2f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
           "\"p999_us\":%.1f,\"cpu_us_per_msg\":%.3f,\"cores\":%.2f}\n",
           cfg->posix ? "posix" : "mem", cfg->posix ? "always" : "n/a", cfg->replicas, cfg->payload,
           cfg->window, (unsigned long long)p.acked, (unsigned long long)p.failed, wall,
           (double)p.acked / wall, (double)p.acked * (double)cfg->payload / wall / 1e6, p50, p99,
           p999, cpu * 1e6 / (double)p.acked, cpu / wall);
    fflush(stdout);
    cluster_close(&c);
    free(p.data);
    free(p.lat);
    if (cfg->posix) {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        if (system(cmd) != 0) fprintf(stderr, "stream_mt_bench: could not remove %s\n", root);
    }
}

int main(int argc, char **argv)
{
    long reps[8] = {3}, pays[8] = {128};
    int nreps = 1, npays = 1;
    bench_cfg cfg = {0, 3, 128, 1000, 2.0, "/tmp"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--replicas") && v) {
            nreps = bench_parse_list(v, reps, 8);
            i++;
        } else if (!strcmp(a, "--payload") && v) {
            npays = bench_parse_list(v, pays, 8);
            i++;
        } else if (!strcmp(a, "--window") && v) {
            cfg.window = atoi(v);
            i++;
        } else if (!strcmp(a, "--seconds") && v) {
            cfg.seconds = atof(v);
            i++;
        } else if (!strcmp(a, "--vfs") && v) {
            cfg.posix = !strcmp(v, "posix");
            i++;
        } else if (!strcmp(a, "--dir") && v) {
            cfg.dir = v;
            i++;
        } else {
            fprintf(stderr,
                    "usage: %s [--replicas 1,3,5] [--payload 16,128,1024,16384] [--window N] "
                    "[--seconds S] [--vfs mem|posix] [--dir PATH]\n",
                    argv[0]);
            return 2;
        }
    }
    if (nreps < 1 || npays < 1 || cfg.window < 1) return 2;
    for (int r = 0; r < nreps; r++)
        for (int k = 0; k < npays; k++) {
            if (reps[r] < 1 || reps[r] > MAX_NODES || pays[k] < 1) return 2;
            cfg.replicas = (int)reps[r];
            cfg.payload = (size_t)pays[k];
            run(&cfg);
        }
    return 0;
}
