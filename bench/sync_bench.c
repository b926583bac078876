/*
 * sync_bench — what one synchronous publish costs on a real disk: one publish in flight at a
 * time, the POSIX vfs under --dir, JR_SYNC_ALWAYS, R1 and R3, every node on its own thread (the
 * host of stream_mt_bench: one event loop per node, frames handed between loops through
 * mailboxes). One JSON line per configuration on stdout.
 *
 *   sync_bench [--replicas 1,3] [--payload 128] [--seconds S] [--dir PATH]
 *
 * Beside the publish latency it measures the disk itself in the same run, so the two compare:
 *   p50_us/p99_us       ack latency, jr_publish() to its callback, of every publish
 *   fsync_p50/p99_us    the disk's own latency of one small append + fdatasync (jr_vfs_posix()
 *                       pwrite + sync on a file in --dir), measured just before and just after
 *                       the cluster run, 500 times each
 *   wal_sync_p50_us     the WAL's fdatasync calls as timed during the run (every node)
 *   leader_syncs_per_ack, leader_writes_per_ack, follower_syncs_per_ack (mean over followers):
 *                       WAL file syncs and writes counted at the vfs during the measurement,
 *                       per acknowledged publish (the meta group's own entries included);
 *                       leader_syncs, leader_writes and follower_syncs (summed over followers)
 *                       are the same counts whole, so "exactly one per ack" can be checked
 *                       against msgs without rounding
 *   store_syncs         syncs of message store files (their marks) during the measurement
 *   snap_syncs          syncs of snapshot files (wal_dir/snap/) during the measurement, every
 *                       node: a snapshot's file is synced apart from the WAL
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "jetraft.h"

#define MAX_NODES 5
#define MAX_FILES 256
#define MAX_SYNC_SAMPLES (1u << 20)
#define PROBE 500

static void die(const char *what, int rc)
{
    fprintf(stderr, "sync_bench: %s: %s\n", what, jr_strerror(rc));
    exit(1);
}

/* ---------------------------------------------------------------------------------------------
 * A vfs that counts (and times) the WAL's writes and syncs, over jr_vfs_posix(). Each node's
 * instance is used by its own thread only; the main thread reads the counters while the
 * publisher is idle or between runs (the numbers are statistics, not synchronisation).
 */
typedef struct cvfs {
    jr_vfs vfs;
    jr_vfs *inner;
    jr_file *files[MAX_FILES]; /* the WAL segments and snapshot files open now ... */
    uint8_t kind[MAX_FILES];   /* ... each KIND_WAL or KIND_SNAP */
    uint64_t wal_writes, wal_syncs, store_syncs, snap_syncs;
    uint64_t *sync_ns;
    uint64_t nsync;
} cvfs;

enum { KIND_STORE, KIND_WAL, KIND_SNAP };

static int kind_of(cvfs *c, jr_file *f)
{
    for (int i = 0; i < MAX_FILES; i++)
        if (c->files[i] == f) return c->kind[i];
    return KIND_STORE;
}

static int c_open(void *ctx, const char *path, int flags, jr_file **out)
{
    cvfs *c = ctx;
    int rc = c->inner->open(c->inner->ctx, path, flags, out);
    size_t n = strlen(path);
    int kind = !strstr(path, "/wal/")                       ? KIND_STORE
               : strstr(path, "/wal/snap/")                 ? KIND_SNAP
               : n > 4 && strcmp(path + n - 4, ".wal") == 0 ? KIND_WAL
                                                            : KIND_STORE;
    if (rc == 0 && kind != KIND_STORE)
        for (int i = 0; i < MAX_FILES; i++)
            if (!c->files[i]) {
                c->files[i] = *out;
                c->kind[i] = (uint8_t)kind;
                break;
            }
    return rc;
}
static int c_close(void *ctx, jr_file *f)
{
    cvfs *c = ctx;
    for (int i = 0; i < MAX_FILES; i++)
        if (c->files[i] == f) c->files[i] = NULL;
    return c->inner->close(c->inner->ctx, f);
}
static int c_pread(void *ctx, jr_file *f, void *buf, size_t len, uint64_t off, size_t *nread)
{
    cvfs *c = ctx;
    return c->inner->pread(c->inner->ctx, f, buf, len, off, nread);
}
static int c_pwrite(void *ctx, jr_file *f, const void *buf, size_t len, uint64_t off)
{
    cvfs *c = ctx;
    if (kind_of(c, f) == KIND_WAL) c->wal_writes++;
    return c->inner->pwrite(c->inner->ctx, f, buf, len, off);
}
static int c_sync(void *ctx, jr_file *f)
{
    cvfs *c = ctx;
    int kind = kind_of(c, f);
    if (kind != KIND_WAL) {
        if (kind == KIND_SNAP)
            c->snap_syncs++;
        else
            c->store_syncs++;
        return c->inner->sync(c->inner->ctx, f);
    }
    uint64_t t0 = bench_now_ns();
    int rc = c->inner->sync(c->inner->ctx, f);
    if (c->nsync < MAX_SYNC_SAMPLES) c->sync_ns[c->nsync++] = bench_now_ns() - t0;
    c->wal_syncs++;
    return rc;
}
static int c_size(void *ctx, jr_file *f, uint64_t *out)
{
    cvfs *c = ctx;
    return c->inner->size(c->inner->ctx, f, out);
}
static int c_truncate(void *ctx, jr_file *f, uint64_t size)
{
    cvfs *c = ctx;
    return c->inner->truncate(c->inner->ctx, f, size);
}
static int c_rename(void *ctx, const char *from, const char *to)
{
    cvfs *c = ctx;
    return c->inner->rename(c->inner->ctx, from, to);
}
static int c_remove(void *ctx, const char *path)
{
    cvfs *c = ctx;
    return c->inner->remove(c->inner->ctx, path);
}
static int c_mkdir(void *ctx, const char *path)
{
    cvfs *c = ctx;
    return c->inner->mkdir(c->inner->ctx, path);
}
static int c_list(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg)
{
    cvfs *c = ctx;
    return c->inner->list(c->inner->ctx, dir, cb, arg);
}
static int c_sync_dir(void *ctx, const char *dir)
{
    cvfs *c = ctx;
    return c->inner->sync_dir(c->inner->ctx, dir);
}

static cvfs *cvfs_new(void)
{
    cvfs *c = calloc(1, sizeof *c);
    if (!c || !(c->sync_ns = malloc(MAX_SYNC_SAMPLES * sizeof *c->sync_ns)))
        die("malloc", JR_ENOMEM);
    c->inner = jr_vfs_posix();
    c->vfs =
        (jr_vfs){JR_VFS_VERSION, c,          c_open,   c_close,  c_pread, c_pwrite, c_sync,
                 c_size,         c_truncate, c_rename, c_remove, c_mkdir, c_list,   c_sync_dir};
    return c;
}

/* The disk's own latency of one small append + fdatasync, n times: sorted into out. */
static void probe_fsync(const char *dir, uint64_t *out, int n)
{
    jr_vfs *v = jr_vfs_posix();
    char path[700];
    snprintf(path, sizeof path, "%s/fsync-probe", dir);
    jr_file *f;
    int rc = v->open(v->ctx, path, JR_O_CREATE | JR_O_TRUNCATE, &f);
    if (rc) die("probe open", rc);
    uint8_t buf[128];
    memset(buf, 'p', sizeof buf);
    for (int i = 0; i < n; i++) {
        uint64_t t0 = bench_now_ns();
        rc = v->pwrite(v->ctx, f, buf, sizeof buf, (uint64_t)i * sizeof buf);
        if (!rc) rc = v->sync(v->ctx, f);
        if (rc) die("probe write", rc);
        out[i] = bench_now_ns() - t0;
    }
    v->close(v->ctx, f);
    v->remove(v->ctx, path);
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
    struct cvfs *cf; /* the counting vfs over jr_vfs_posix() */
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
    int replicas;
    size_t payload;
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
        l->cf = cvfs_new();
        jr_node_config nc;
        jr_node_config_init(&nc);
        nc.name = l->name;
        nc.cluster = "bench";
        nc.peers = c->names;
        nc.npeers = (size_t)c->n;
        nc.host = &l->host;
        nc.streams = 1;
        nc.request_timeout_ms = 30000;
        snprintf(wal, sizeof wal, "%s/n%d/wal", root, i);
        snprintf(store, sizeof store, "%s/n%d/store", root, i);
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s'", wal, store);
        if (system(cmd) != 0) die("mkdir", JR_EIO);
        nc.vfs = &l->cf->vfs;
        nc.sync_policy = JR_SYNC_ALWAYS;
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
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        free(l->cf->sync_ns);
        free(l->cf);
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
 * The publisher (on the leader's thread): one publish in flight. The counters of every node are
 * read on the leader's thread when the warm-up ends and when the measurement ends; a follower's
 * counter read then is a statistic, not synchronised with its thread (off by at most the write
 * in progress).
 */
typedef struct snap {
    uint64_t writes[MAX_NODES], syncs[MAX_NODES], store_syncs[MAX_NODES], snap_syncs[MAX_NODES];
    uint64_t nsync[MAX_NODES];
} snap;

typedef struct pubber {
    const bench_cfg *cfg;
    cluster *c;
    jr_node *node;
    uint8_t *data;
    uint64_t issued, acked, failed, warm;
    uint64_t *lat, nlat, cap;
    uint64_t t_start, t_end, t0, t1;
    int measuring, stop;
    snap s0, s1;
    waiter done;
} pubber;

static void take(cluster *c, snap *s)
{
    for (int i = 0; i < c->n; i++) {
        cvfs *v = c->loops[i].cf;
        s->writes[i] = v->wal_writes;
        s->syncs[i] = v->wal_syncs;
        s->store_syncs[i] = v->store_syncs;
        s->snap_syncs[i] = v->snap_syncs;
        s->nsync[i] = v->nsync;
    }
}

static void issue(pubber *p);

static void on_ack(void *arg, int status, const jr_pub_ack *ack)
{
    pubber *p = arg;
    uint64_t t = bench_now_ns();
    (void)ack;
    if (status != 0) {
        p->failed++;
    } else {
        p->acked++;
        if (p->measuring && p->nlat < p->cap) p->lat[p->nlat++] = t - p->t_start;
    }
    if (!p->measuring && p->acked >= p->warm) {
        p->measuring = 1;
        p->acked = p->failed = 0;
        p->t0 = t;
        p->t_end = t + (uint64_t)(p->cfg->seconds * 1e9);
        take(p->c, &p->s0);
    } else if (p->measuring && (t >= p->t_end || p->nlat == p->cap)) {
        p->t1 = t;
        take(p->c, &p->s1);
        waiter_done(&p->done, 0);
        return;
    }
    issue(p);
}

static void issue(pubber *p)
{
    p->issued++;
    p->t_start = bench_now_ns();
    int rc =
        jr_publish(p->node, "bench.orders", NULL, 0, p->data, p->cfg->payload, NULL, on_ack, p);
    if (rc) die("jr_publish", rc);
}

static void start_task(void *arg, jr_node *node)
{
    pubber *p = arg;
    p->node = node;
    issue(p);
}

static double pct(const uint64_t *v, uint64_t n, double q)
{
    return n ? (double)v[(size_t)((double)n * q)] / 1e3 : 0;
}

static void run(const bench_cfg *cfg)
{
    char root[512];
    snprintf(root, sizeof root, "%s/jr-sync-bench-%d", cfg->dir, (int)getpid());
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", root);
    if (system(cmd) != 0) die("mkdir", JR_EIO);
    uint64_t *probe = malloc(2 * PROBE * sizeof *probe);
    if (!probe) die("malloc", JR_ENOMEM);
    probe_fsync(root, probe, PROBE);

    cluster c;
    cluster_open(&c, cfg, root);
    int leader = add_stream(&c, cfg->replicas);
    sleep_ms(300);

    pubber p;
    memset(&p, 0, sizeof p);
    p.cfg = cfg;
    p.c = &c;
    p.data = malloc(cfg->payload);
    p.warm = 200;
    p.cap = 1u << 20;
    p.lat = malloc(p.cap * sizeof *p.lat);
    if (!p.data || !p.lat) die("malloc", JR_ENOMEM);
    for (size_t i = 0; i < cfg->payload; i++) p.data[i] = (uint8_t)('a' + i % 26);
    waiter_init(&p.done);
    run_on(&c.loops[leader], start_task, &p);
    waiter_wait(&p.done);
    sleep_ms(50); /* the last ack's follower commits are in; the threads are idle */

    /* the WAL syncs timed during the measurement, every node */
    uint64_t nws = 0;
    for (int i = 0; i < c.n; i++) nws += p.s1.nsync[i] - p.s0.nsync[i];
    uint64_t *ws = malloc((nws ? nws : 1) * sizeof *ws), k = 0;
    if (!ws) die("malloc", JR_ENOMEM);
    for (int i = 0; i < c.n; i++)
        for (uint64_t j = p.s0.nsync[i]; j < p.s1.nsync[i]; j++)
            ws[k++] = c.loops[i].cf->sync_ns[j];
    qsort(ws, nws, sizeof *ws, bench_cmp_u64);
    double n = p.acked ? (double)p.acked : 1;
    uint64_t lsyncs = p.s1.syncs[leader] - p.s0.syncs[leader];
    uint64_t lwrites = p.s1.writes[leader] - p.s0.writes[leader];
    double lsync = (double)lsyncs / n;
    double lwrite = (double)lwrites / n;
    double fsync_sum = 0;
    uint64_t fsyncs = 0;
    uint64_t store = 0, snaps = 0;
    for (int i = 0; i < c.n; i++) {
        store += p.s1.store_syncs[i] - p.s0.store_syncs[i];
        snaps += p.s1.snap_syncs[i] - p.s0.snap_syncs[i];
        if (i != leader) {
            fsync_sum += (double)(p.s1.syncs[i] - p.s0.syncs[i]) / n;
            fsyncs += p.s1.syncs[i] - p.s0.syncs[i];
        }
    }
    cluster_close(&c);
    probe_fsync(root, probe + PROBE, PROBE);
    qsort(probe, 2 * PROBE, sizeof *probe, bench_cmp_u64);
    qsort(p.lat, p.nlat, sizeof *p.lat, bench_cmp_u64);
    double wall = (double)(p.t1 - p.t0) * 1e-9;
    printf("{\"bench\":\"sync_publish\",\"vfs\":\"posix\",\"sync\":\"always\",\"replicas\":%d,"
           "\"payload\":%zu,\"msgs\":%llu,\"failed\":%llu,\"seconds\":%.3f,\"p50_us\":%.1f,"
           "\"p99_us\":%.1f,\"fsync_p50_us\":%.1f,\"fsync_p99_us\":%.1f,\"wal_sync_p50_us\":%.1f,"
           "\"wal_sync_p99_us\":%.1f,\"leader_syncs_per_ack\":%.3f,\"leader_writes_per_ack\":%.3f,"
           "\"follower_syncs_per_ack\":%.3f,\"leader_syncs\":%llu,\"leader_writes\":%llu,"
           "\"follower_syncs\":%llu,\"store_syncs\":%llu,\"snap_syncs\":%llu}\n",
           cfg->replicas, cfg->payload, (unsigned long long)p.acked, (unsigned long long)p.failed,
           wall, pct(p.lat, p.nlat, 0.5), pct(p.lat, p.nlat, 0.99), pct(probe, 2 * PROBE, 0.5),
           pct(probe, 2 * PROBE, 0.99), pct(ws, nws, 0.5), pct(ws, nws, 0.99), lsync, lwrite,
           c.n > 1 ? fsync_sum / (c.n - 1) : 0.0, (unsigned long long)lsyncs,
           (unsigned long long)lwrites, (unsigned long long)fsyncs, (unsigned long long)store,
           (unsigned long long)snaps);
    fflush(stdout);
    free(ws);
    free(probe);
    free(p.data);
    free(p.lat);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "sync_bench: could not remove %s\n", root);
}

int main(int argc, char **argv)
{
    long reps[8] = {1, 3}, pays[8] = {128};
    int nreps = 2, npays = 1;
    bench_cfg cfg = {1, 128, 2.0, getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--replicas") && v) {
            nreps = bench_parse_list(v, reps, 8);
            i++;
        } else if (!strcmp(a, "--payload") && v) {
            npays = bench_parse_list(v, pays, 8);
            i++;
        } else if (!strcmp(a, "--seconds") && v) {
            cfg.seconds = atof(v);
            i++;
        } else if (!strcmp(a, "--dir") && v) {
            cfg.dir = v;
            i++;
        } else {
            fprintf(stderr,
                    "usage: %s [--replicas 1,3] [--payload 128] [--seconds S] [--dir PATH]\n",
                    argv[0]);
            return 2;
        }
    }
    if (nreps < 1 || npays < 1) return 2;
    for (int r = 0; r < nreps; r++)
        for (int k = 0; k < npays; k++) {
            if (reps[r] < 1 || reps[r] > MAX_NODES || pays[k] < 1) return 2;
            cfg.replicas = (int)reps[r];
            cfg.payload = (size_t)pays[k];
            run(&cfg);
        }
    return 0;
}
