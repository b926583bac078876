/*
 * sync_bench — what one synchronous publish costs on a real disk: one publish in flight at a
 * time, the POSIX vfs under --dir, JR_SYNC_ALWAYS, R1 and R3, every node on its own thread (the
 * host of mt_host.h: one event loop per node, frames handed between loops through
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
#include "mt_host.h"

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

static int c_writeback(void *ctx, jr_file *f, uint64_t off, uint64_t len)
{
    cvfs *c = ctx;
    return c->inner->writeback(c->inner->ctx, f, off, len);
}

static cvfs *cvfs_new(void)
{
    cvfs *c = calloc(1, sizeof *c);
    if (!c || !(c->sync_ns = malloc(MAX_SYNC_SAMPLES * sizeof *c->sync_ns)))
        die("malloc", JR_ENOMEM);
    c->inner = jr_vfs_posix();
    c->vfs = (jr_vfs){.version = JR_VFS_VERSION,
                      .ctx = c,
                      .open = c_open,
                      .close = c_close,
                      .pread = c_pread,
                      .pwrite = c_pwrite,
                      .sync = c_sync,
                      .size = c_size,
                      .truncate = c_truncate,
                      .rename = c_rename,
                      .remove = c_remove,
                      .mkdir = c_mkdir,
                      .list = c_list,
                      .sync_dir = c_sync_dir,
                      .writeback = c_writeback};
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

typedef struct bench_cfg {
    int replicas;
    size_t payload;
    double seconds;
    const char *dir;
} bench_cfg;

/* The cluster: mt_host's, each node's WAL and store on a counting vfs over jr_vfs_posix(). */
typedef struct cluster {
    mt_cluster mt;
    int n;
    cvfs *cf[MAX_NODES];
} cluster;

static void configure(void *arg, int i, jr_node_config *nc)
{
    cluster *c = arg;
    c->cf[i] = cvfs_new();
    nc->vfs = &c->cf[i]->vfs;
}

static int cluster_open(cluster *c, const bench_cfg *cfg, const char *root)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/c", root);
    memset(c, 0, sizeof *c);
    c->n = cfg->replicas;
    mt_opts mo = {
        .nodes = cfg->replicas, .posix = 1, .root = dir, .configure = configure, .arg = c};
    mt_cluster_open(&c->mt, &mo);
    jr_stream_config scfg;
    bench_stream_config(&scfg, cfg->replicas);
    return mt_stream_add(&c->mt, &scfg);
}

static void cluster_close(cluster *c)
{
    mt_cluster_close(&c->mt);
    for (int i = 0; i < c->n; i++) {
        free(c->cf[i]->sync_ns);
        free(c->cf[i]);
    }
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
    mt_waiter done;
} pubber;

static void take(cluster *c, snap *s)
{
    for (int i = 0; i < c->n; i++) {
        cvfs *v = c->cf[i];
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
        mt_waiter_done(&p->done, 0, NULL);
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
    int leader = cluster_open(&c, cfg, root);
    mt_sleep_ms(300);

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
    mt_waiter_init(&p.done, NULL);
    mt_run_on(&c.mt.loops[leader], start_task, &p);
    mt_waiter_wait(&p.done);
    mt_sleep_ms(50); /* the last ack's follower commits are in; the threads are idle */

    /* the WAL syncs timed during the measurement, every node */
    uint64_t nws = 0;
    for (int i = 0; i < c.n; i++) nws += p.s1.nsync[i] - p.s0.nsync[i];
    uint64_t *ws = malloc((nws ? nws : 1) * sizeof *ws), k = 0;
    if (!ws) die("malloc", JR_ENOMEM);
    for (int i = 0; i < c.n; i++)
        for (uint64_t j = p.s0.nsync[i]; j < p.s1.nsync[i]; j++) ws[k++] = c.cf[i]->sync_ns[j];
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
