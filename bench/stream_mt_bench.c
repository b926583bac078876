/*
 * stream_mt_bench — stream publish throughput with every node on its own thread, the way a host
 * embeds libjetraft: one event loop per node, frames handed between loops through mailboxes.
 * One JSON line per configuration on stdout (issue 4 §8; compare stream_bench, which runs every
 * node on one thread over the deterministic fixture).
 *
 *   stream_mt_bench [--replicas 1,3,5] [--payload 16,128,1024,16384] [--window N]
 *                   [--seconds S] [--vfs mem|posix] [--dir PATH]
 *
 The host is mt_host.h's: a thread per node waiting on a mutex/condition-variable mailbox with
 * the node's one timer as the wait deadline (jr_host.arm); jr_host.send copies the frame into
 * the destination's mailbox; each loop feeds what arrived to jr_node_recv and calls jr_node_tick
 * when the deadline passed. Storage: the in-memory file system of the test fixture (vfs "mem",
 * one per node) or jr_vfs_posix() under --dir with JR_SYNC_ALWAYS (vfs "posix").
 * One stream on bench.> with R replicas and file storage; the publisher runs on the stream
 * leader's thread and keeps `window` publishes outstanding (every ack issues the next one).
 * After a warm-up of max(window, 20,000) messages it measures for --seconds (default 2):
 *   msgs_per_s     acknowledged publishes per second of wall time
 *   p50/p99/p999   ack latency, jr_publish() to its callback (us), of every 4th publish
 *   cpu_us_per_msg process CPU time (user + sys over every thread) per acknowledged publish
 *   cores          process CPU time / wall time (how much parallelism the nodes found)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "jetraft.h"
#include "mt_host.h"

#define MAX_NODES 5
#define LAT_SAMPLE 4 /* latency of every 4th publish */

static void die(const char *what, int rc)
{
    fprintf(stderr, "stream_mt_bench: %s: %s\n", what, jr_strerror(rc));
    exit(1);
}

typedef struct bench_cfg {
    int posix;
    int replicas;
    size_t payload;
    int window;
    double seconds;
    const char *dir;
} bench_cfg;

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
    mt_waiter done;
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
    if (p->outstanding == 0) mt_waiter_done(&p->done, 0, NULL);
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
    mt_opts mo = {.nodes = cfg->replicas, .posix = cfg->posix, .root = root};
    mt_cluster c;
    mt_cluster_open(&c, &mo);
    jr_stream_config scfg;
    bench_stream_config(&scfg, cfg->replicas);
    int leader = mt_stream_add(&c, &scfg);
    mt_sleep_ms(300);

    pubber p;
    memset(&p, 0, sizeof p);
    p.cfg = cfg;
    p.data = malloc(cfg->payload);
    for (size_t i = 0; i < cfg->payload; i++) p.data[i] = (uint8_t)('a' + i % 26);
    p.warm = cfg->window < 20000 ? 20000 : (uint64_t)cfg->window;
    p.cap = 8u << 20;
    p.lat = malloc(p.cap * sizeof *p.lat);
    if (!p.data || !p.lat) die("malloc", JR_ENOMEM);
    mt_waiter_init(&p.done, NULL);
    mt_run_on(&c.loops[leader], start_task, &p);
    mt_waiter_wait(&p.done);

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
    mt_cluster_close(&c);
    free(p.data);
    free(p.lat);
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
