/*
 * stream_bench — publish throughput and ack latency of a stream, end to end through the public
 * API (issue 4 §8). One JSON line per configuration on stdout.
 *
 *   stream_bench [--vfs mem|posix|all] [--replicas 1,3,5] [--payload 16,128,1024,16384]
 *                [--mode async,sync] [--window N] [--seconds S] [--dir PATH]
 *
 * Each configuration runs a fresh cluster of R in-process nodes over the deterministic
 * fixture's simulated network (include/jetraft/sim.h; 50 us links): every node with the
 * fixture's memory file system (vfs "mem"), or with jr_vfs_posix() on the real disk under
 * --dir (vfs "posix": WAL and stores in per-node directories, JR_SYNC_ALWAYS: nothing is
 * acknowledged before the fsync that covers it on a quorum). One stream on bench.> with R
 * replicas and file storage; the publisher is on the stream leader's node and keeps `window`
 * publishes outstanding (mode async, default 1,000: every ack issues the next publish) or one
 * (mode sync). After a warm-up of `window` messages it measures for --seconds (default 2) or
 * until the message budget of the payload size is spent:
 *   msgs_per_s    acknowledged publishes per second of wall time
 *   p50/p99/p999  ack latency, wall time from jr_publish() to its callback (us), of every 4th
 *                 publish (reading the clock twice for every message is a few % of its cost)
 *   cpu_us_per_msg process CPU time (user + sys, getrusage) per acknowledged publish: every node
 *                 runs in this one thread, so this is the CPU of all R nodes together, plus the
 *                 fixture's simulated network (copying frames) — an upper bound
 *   wal_syncs     WAL fsyncs summed over the nodes during the measurement
 * The simulated network costs no wall time (its delays are simulated), so the numbers are the
 * library's CPU and (posix) disk cost, without a real network's.
 */
#include <errno.h>
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
#include "jetraft/sim.h"

#define MS 1000000ull
#define SEC (1000 * MS)
#define LAT_SAMPLE 4 /* latency of every 4th publish */

typedef struct bench_cfg {
    int posix;
    int replicas;
    size_t payload;
    int window; /* 1: sync */
    double seconds;
    const char *dir;
} bench_cfg;

typedef struct bench {
    bench_cfg cfg;
    jr_sim *sim;
    char root[512];
    char paths[8][2][600];
    jr_node *pub_node;
    uint8_t *data;
    uint64_t issued, acked, failed;
    uint64_t budget;       /* publishes to issue in total */
    uint64_t measure_from; /* acks counted from this publish number on */
    uint64_t *lat;         /* latency per measured publish (ns) */
    uint64_t nlat;
    double t_end;
    int stop;
    int last_err;
} bench;

typedef struct slot {
    bench *b;
    uint64_t no; /* publish number */
    uint64_t t0;
} slot;

static void configure(void *arg, unsigned i, jr_node_config *cfg)
{
    bench *b = arg;
    cfg->streams = 1;
    cfg->cluster = "bench";
    cfg->request_timeout_ms = 30000;
    if (b->cfg.posix) {
        cfg->vfs = jr_vfs_posix();
        cfg->wal_dir = b->paths[i][0];
        cfg->store_dir = b->paths[i][1];
        cfg->sync_policy = JR_SYNC_ALWAYS;
    } else {
        cfg->store_dir = "/store";
    }
}

static void issue(bench *b, slot *s);

static void on_ack(void *arg, int status, const jr_pub_ack *ack)
{
    slot *s = arg;
    bench *b = s->b;
    (void)ack;
    if (status != 0) {
        b->failed++;
        b->last_err = status;
    } else {
        b->acked++;
        if (s->t0 && s->no >= b->measure_from && b->nlat < b->budget)
            b->lat[b->nlat++] = bench_now_ns() - s->t0;
    }
    if (b->stop || b->issued >= b->budget) {
        free(s);
        return;
    }
    if ((b->acked & 1023) == 0 && bench_now_s() > b->t_end) b->stop = 1;
    issue(b, s);
}

static void issue(bench *b, slot *s)
{
    s->no = b->issued++;
    s->t0 = s->no % LAT_SAMPLE == 0 ? bench_now_ns() : 0; /* a clock read costs ~3% a message */
    int rc =
        jr_publish(b->pub_node, "bench.orders", NULL, 0, b->data, b->cfg.payload, NULL, on_ack, s);
    if (rc != 0) {
        fprintf(stderr, "stream_bench: jr_publish: %s\n", jr_strerror(rc));
        exit(1);
    }
}

typedef struct wait_flag {
    int done, status;
    char leader[32];
} wait_flag;

static void admin_cb(void *arg, int status, const char *msg)
{
    wait_flag *w = arg;
    w->done = 1;
    w->status = status;
    if (status) fprintf(stderr, "stream_bench: %s\n", msg);
}

static void info_cb(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    wait_flag *w = arg;
    (void)msg;
    w->done = 1;
    w->status = status;
    w->leader[0] = 0;
    if (status == 0 && info->cluster->leader)
        snprintf(w->leader, sizeof w->leader, "%s", info->cluster->leader);
}

static int flag_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((wait_flag *)arg)->done;
}

static int all_acked(void *arg, jr_sim *sim)
{
    bench *b = arg;
    (void)sim;
    return b->acked + b->failed >= b->issued && (b->stop || b->issued >= b->budget);
}

static void mkdirs(const char *path)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    mkdir(tmp, 0755);
}

static void rm_rf(const char *path)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "stream_bench: could not remove %s\n", path);
}

static uint64_t wal_syncs(bench *b)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < jr_sim_size(b->sim); i++) {
        jr_node_stats st;
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        if (jr_sim_node(b->sim, i) && jr_node_stats_get(jr_sim_node(b->sim, i), &st) == 0)
            s += st.wal_syncs;
    }
    return s;
}

static void run(const bench_cfg *cfg)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.cfg = *cfg;
    unsigned nodes = (unsigned)cfg->replicas;
    if (cfg->posix) {
        snprintf(b.root, sizeof b.root, "%s/jr-stream-bench-%d", cfg->dir, (int)getpid());
        for (unsigned i = 0; i < nodes; i++) {
            snprintf(b.paths[i][0], sizeof b.paths[i][0], "%s/n%u/wal", b.root, i);
            snprintf(b.paths[i][1], sizeof b.paths[i][1], "%s/n%u/store", b.root, i);
            mkdirs(b.paths[i][0]);
            mkdirs(b.paths[i][1]);
        }
    }
    jr_sim_config sc;
    jr_sim_config_init(&sc);
    sc.nodes = nodes;
    sc.seed = 1;
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.delay_min_ns = link.delay_max_ns = 50000;
    sc.link = &link;
    sc.arg = &b;
    sc.configure = configure;
    int rc = jr_sim_new(&sc, &b.sim);
    if (rc) {
        fprintf(stderr, "stream_bench: jr_sim_new: %s\n", jr_strerror(rc));
        exit(1);
    }
    /* a cluster that knows all its servers, then the stream */
    jr_sim_run_for(b.sim, 2 * SEC);
    jr_stream_config scfg;
    bench_stream_config(&scfg, cfg->replicas);
    wait_flag w;
    for (int tries = 0; tries < 50; tries++) {
        memset(&w, 0, sizeof w);
        jr_stream_add(jr_sim_node(b.sim, 0), &scfg, admin_cb, &w);
        jr_sim_run_until(b.sim, flag_done, &w, 30 * SEC);
        if (w.status == 0) break;
        jr_sim_run_for(b.sim, 500 * MS);
    }
    if (w.status) exit(1);
    for (int tries = 0; tries < 100; tries++) {
        memset(&w, 0, sizeof w);
        jr_stream_info_get(jr_sim_node(b.sim, 0), "BENCH", info_cb, &w);
        jr_sim_run_until(b.sim, flag_done, &w, 10 * SEC);
        if (w.status == 0 && w.leader[0]) break;
        jr_sim_run_for(b.sim, 100 * MS);
    }
    int li = jr_sim_index(b.sim, w.leader);
    if (li < 0) {
        fprintf(stderr, "stream_bench: no stream leader\n");
        exit(1);
    }
    b.pub_node = jr_sim_node(b.sim, (unsigned)li);
    jr_sim_run_for(b.sim, 500 * MS);

    b.data = malloc(cfg->payload);
    for (size_t i = 0; i < cfg->payload; i++) b.data[i] = (uint8_t)('a' + i % 26);
    /* budget: at most 256 MiB of payload, at most 2M messages; sync: fewer */
    uint64_t cap = (256ull << 20) / cfg->payload;
    if (cap > 2000000) cap = 2000000;
    if (cfg->window == 1) cap = cfg->posix ? 3000 : 50000;
    uint64_t warm = (uint64_t)cfg->window < 1000 ? 1000 : (uint64_t)cfg->window;
    b.budget = cap + warm;
    b.lat = malloc(b.budget * sizeof *b.lat);

    /* warm-up */
    b.t_end = bench_now_s() + 1e9;
    b.budget = warm;
    for (int k = 0; k < cfg->window && b.issued < b.budget; k++) {
        slot *s = calloc(1, sizeof *s);
        s->b = &b;
        issue(&b, s);
    }
    jr_sim_run_until(b.sim, all_acked, &b, 600 * SEC);
    /* measured run */
    b.budget = cap + warm;
    b.measure_from = b.issued;
    uint64_t acked0 = b.acked, syncs0 = wal_syncs(&b);
    double t0 = bench_now_s(), c0 = bench_cpu_s();
    b.t_end = t0 + cfg->seconds;
    for (int k = 0; k < cfg->window && b.issued < b.budget; k++) {
        slot *s = calloc(1, sizeof *s);
        s->b = &b;
        issue(&b, s);
    }
    jr_sim_run_until(b.sim, all_acked, &b, 3600 * SEC);
    double wall = bench_now_s() - t0, cpu = bench_cpu_s() - c0;
    uint64_t n = b.acked - acked0, syncs = wal_syncs(&b) - syncs0;
    qsort(b.lat, b.nlat, sizeof *b.lat, bench_cmp_u64);
    double p50 = b.nlat ? b.lat[b.nlat / 2] / 1e3 : 0;
    double p99 = b.nlat ? b.lat[(size_t)((double)b.nlat * 0.99)] / 1e3 : 0;
    double p999 = b.nlat ? b.lat[(size_t)((double)b.nlat * 0.999)] / 1e3 : 0;
    printf("{\"bench\":\"stream_publish\",\"vfs\":\"%s\",\"sync\":\"%s\",\"replicas\":%d,"
           "\"payload\":%zu,\"mode\":\"%s\",\"window\":%d,\"msgs\":%llu,\"failed\":%llu,"
           "\"seconds\":%.3f,\"msgs_per_s\":%.0f,\"mb_per_s\":%.2f,\"p50_us\":%.1f,"
           "\"p99_us\":%.1f,\"p999_us\":%.1f,\"cpu_us_per_msg\":%.3f,\"wal_syncs\":%llu}\n",
           cfg->posix ? "posix" : "mem", cfg->posix ? "always" : "n/a", cfg->replicas, cfg->payload,
           cfg->window == 1 ? "sync" : "async", cfg->window, (unsigned long long)n,
           (unsigned long long)b.failed, wall, n / wall,
           (double)n * (double)cfg->payload / wall / 1e6, p50, p99, p999, cpu * 1e6 / (double)n,
           (unsigned long long)syncs);
    fflush(stdout);
    if (b.failed)
        fprintf(stderr, "stream_bench: %llu publishes failed (last: %s)\n",
                (unsigned long long)b.failed, jr_strerror(b.last_err));
    jr_sim_free(b.sim);
    free(b.lat);
    free(b.data);
    if (cfg->posix) rm_rf(b.root);
}

int main(int argc, char **argv)
{
    const char *vfs = "all", *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    long reps[8] = {1, 3, 5}, pays[8] = {16, 128, 1024, 16384};
    int nreps = 3, npays = 4, modes = 3; /* bit 0 async, bit 1 sync */
    int window = 1000;
    double seconds = 2.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--vfs") && v)
            vfs = argv[++i];
        else if (!strcmp(a, "--replicas") && v)
            nreps = bench_parse_list(argv[++i], reps, 8);
        else if (!strcmp(a, "--payload") && v)
            npays = bench_parse_list(argv[++i], pays, 8);
        else if (!strcmp(a, "--mode") && v) {
            i++;
            modes = (strstr(v, "async") ? 1 : 0) |
                    (strstr(v, "sync") == v || strstr(v, ",sync") ? 2 : 0);
        } else if (!strcmp(a, "--window") && v)
            window = atoi(argv[++i]);
        else if (!strcmp(a, "--seconds") && v)
            seconds = atof(argv[++i]);
        else if (!strcmp(a, "--dir") && v)
            dir = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--vfs mem|posix|all] [--replicas 1,3,5] "
                    "[--payload 16,128,1024,16384] [--mode async,sync] [--window N] "
                    "[--seconds S] [--dir PATH]\n",
                    argv[0]);
            return 2;
        }
    }
    if (nreps < 1 || npays < 1) {
        fprintf(stderr, "%s: --replicas and --payload take comma-separated numbers\n", argv[0]);
        return 2;
    }
    for (int pv = 0; pv < 2; pv++) {
        if ((pv == 0 && !strcmp(vfs, "posix")) || (pv == 1 && !strcmp(vfs, "mem"))) continue;
        for (int m = 0; m < 2; m++) {
            if (!(modes & (1 << m))) continue;
            for (int ri = 0; ri < nreps; ri++)
                for (int pi = 0; pi < npays; pi++) {
                    bench_cfg c = {
                        pv, (int)reps[ri], (size_t)pays[pi], m == 0 ? window : 1, seconds, dir};
                    if (c.replicas < 1 || c.replicas > 5 || c.payload == 0) continue;
                    run(&c);
                }
        }
    }
    return 0;
}
