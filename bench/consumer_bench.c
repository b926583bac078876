/*
 * consumer_bench — pull consumption through the public API: fetch + explicit ack throughput,
 * publish-to-delivery latency and the accuracy of ack-wait redelivery. One JSON line per
 * configuration on stdout.
 *
 *   consumer_bench [--vfs mem|posix|all] [--replicas 1,3] [--batch 1,100,1000]
 *                  [--ack ff,confirmed] [--test throughput,latency,redelivery]
 *                  [--msgs N] [--payload B] [--max-ack-pending N] [--samples N]
 *                  [--seconds S] [--dir PATH] [--host sim|mt|all]
 *
 * The cluster is stream_bench's: R in-process nodes over the deterministic fixture's simulated
 * network (include/jetraft/sim.h; 50 us links), every node in this one thread, with the
 * fixture's memory file system (vfs "mem") or jr_vfs_posix() on the real disk under --dir
 * (vfs "posix": per-node directories, JR_SYNC_ALWAYS). One cluster per (vfs, R): a stream on
 * bench.> with R replicas and file storage, and consumers of R replicas (num_replicas 0: the
 * stream's). The client runs on the consumer leader's node; the publisher on the stream
 * leader's.
 *
 * throughput (bench "consumer_fetch_ack"): --msgs messages (default 400,000 mem, 20,000 posix)
 * of --payload bytes (default 128) are published first, before anything is measured. Then for
 * each batch size and ack mode a fresh durable consumer (deliver all, ack explicit, JetStream's
 * defaults otherwise: max_ack_pending 1,000 unless --max-ack-pending) is consumed by one fetch
 * at a time of `batch` messages (expires 5 s); every delivered message is acked from the fetch
 * callback, fire and forget (ack "ff": jr_consumer_ack with no callback) or confirmed (ack
 * "confirmed": a callback, status 0 once the ack is replicated); the next fetch is issued when
 * the previous one ends. The first max(batch, 1,000) messages (at most a quarter of --msgs and
 * of --seconds) are a warm-up; the measurement
 * runs for --seconds (default 2) or until the stream is consumed, and it ends only once every
 * ack is applied at the consumer's leader (confirmed: every callback ran; ff: consumer info
 * reports no ack pending) — an ack that has not taken effect is not counted as done.
 *   msgs_per_s      messages delivered and acknowledged per second of wall time
 *   sim_msgs_per_s  the same per second of the fixture's simulated clock: what the protocol's
 *                   round trips over 50 us links allow, whatever the CPU (null when under 1 ms
 *                   of simulated time passed: R1 has no network round trips)
 *   cpu_us_per_msg  process CPU (user + sys) per message: every node of the cluster and the
 *                   fixture's network together, in this one thread
 *   msgs_per_cpu_s  messages per second of that CPU time: the rate with a core to itself, less
 *                   sensitive than msgs_per_s to other processes sharing the machine
 *   wal_syncs       WAL fsyncs summed over the nodes during the measurement
 *   fetches         fetches issued during the measurement
 * The consumer is deleted afterwards; the next configuration's consumer starts at seq 1 again.
 *
 * latency (bench "consumer_latency"): a consumer delivering new messages; --samples rounds
 * (default 2,000 mem, 100 posix) of: a fetch of batch 1 (expires 5 s) reaches the consumer's
 * leader and waits, then one message is published; the time from jr_publish() to the fetch's
 * message callback, in the fixture's clock (sim_p50/p99_us: the cluster's own clock, which
 * moves with the simulated network) and in wall time (wall_p50/p99_us: the CPU and, posix, the
 * fsyncs on the way, every node's in this one thread, one after another; the simulated network
 * costs no wall time). Each message is acked (ff).
 *
 * redelivery (bench "consumer_redelivery"): ack_wait 100 ms; --samples rounds (default 200 mem,
 * 50 posix): a fetch of batch 1 gets one newly published message, which is not acked; a second
 * fetch of batch 1 (expires 5 s) waits for its redelivery; the delay between the two deliveries as
 * the client saw them, in the clock the cluster runs on (the fixture's simulated clock) — ack_wait
 * plus the leader's timer and recording slack: p50/p99/max_ms. The message is then acked.
 *
 * --host mt (or all) also runs latency and redelivery on stream_mt_bench's host instead:
 * every node on its own thread, frames copied between mailboxes at once, the real monotonic
 * clock (jr_host.now) and the fixture's memory file system per node (mem) or jr_vfs_posix()
 * (posix). Benches "consumer_latency_mt" (p50/p99/max_us from jr_publish() on the stream
 * leader's thread to the fetch's message callback on the consumer leader's; --samples default
 * 1,000 mem, 100 posix) and "consumer_redelivery_mt" (as above, in that clock, with the host's
 * timer wake-ups in it; default 100 mem, 50 posix; timer_late_p99_us / _max_us: how late the
 * host's threads woke from a wait for the nodes' timers during the test, every node — the
 * machine's scheduling slack, which the delays include). Throughput is measured over the fixture
 * only.
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
#include "jetraft/sim.h"
#include "mt_host.h"

#define MS 1000000ull
#define SEC (1000 * MS)
#define US 1000ull
#define MAX_LIST 8
#define MAX_NODES 5

enum { TEST_THROUGHPUT = 1, TEST_LATENCY = 2, TEST_REDELIVERY = 4 };
enum { ACK_FF = 1, ACK_CONFIRMED = 2 };

static void die(const char *what, int rc, const char *msg)
{
    fprintf(stderr, "consumer_bench: %s: %s%s%s\n", what, jr_strerror(rc), msg && *msg ? ": " : "",
            msg ? msg : "");
    exit(1);
}

typedef struct opts {
    int posix;
    int replicas;
    long batches[MAX_LIST];
    int nbatches;
    int acks;  /* ACK_FF | ACK_CONFIRMED */
    int tests; /* TEST_* */
    uint64_t msgs;
    size_t payload;
    int64_t max_ack_pending; /* 0: JetStream's default */
    uint64_t samples;        /* 0: the test's default */
    double seconds;
    const char *dir;
    int mt; /* --host mt */
} opts;

/* ---------------------------------------------------------------------------------------------
 * The cluster (as stream_bench's)
 */
typedef struct cluster {
    const opts *o;
    jr_sim *sim;
    char root[512];
    char paths[8][2][600];
    unsigned pub_idx; /* the stream leader */
    uint8_t *data;
} cluster;

static void configure(void *arg, unsigned i, jr_node_config *cfg)
{
    cluster *c = arg;
    cfg->streams = 1;
    cfg->cluster = "bench";
    cfg->request_timeout_ms = 30000;
    if (c->o->posix) {
        cfg->vfs = jr_vfs_posix();
        cfg->wal_dir = c->paths[i][0];
        cfg->store_dir = c->paths[i][1];
        cfg->sync_policy = JR_SYNC_ALWAYS;
    } else {
        cfg->store_dir = "/store";
    }
}

typedef struct wait_flag {
    int done, status;
    char msg[256];
    char leader[32];
    uint64_t ack_pending;
    uint64_t ack_floor;
    int64_t max_ack_pending;
} wait_flag;

static int flag_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((wait_flag *)arg)->done;
}

static void admin_cb(void *arg, int status, const char *msg)
{
    wait_flag *w = arg;
    w->done = 1;
    w->status = status;
    snprintf(w->msg, sizeof w->msg, "%s", msg ? msg : "");
}

static void consumer_cb(void *arg, int status, const char *msg, const char *name)
{
    (void)name;
    admin_cb(arg, status, msg);
}

static void stream_info_cb(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    wait_flag *w = arg;
    admin_cb(w, status, msg);
    w->leader[0] = 0;
    if (status == 0 && info->cluster->leader)
        snprintf(w->leader, sizeof w->leader, "%s", info->cluster->leader);
}

static void consumer_info_cb(void *arg, int status, const char *msg, const jr_consumer_info *info)
{
    wait_flag *w = arg;
    admin_cb(w, status, msg);
    w->leader[0] = 0;
    if (status) return;
    if (info->cluster->leader) snprintf(w->leader, sizeof w->leader, "%s", info->cluster->leader);
    w->ack_pending = info->num_ack_pending;
    w->ack_floor = info->ack_floor.stream_seq;
    w->max_ack_pending = info->config->max_ack_pending;
}

static void wait_for(cluster *c, wait_flag *w, uint64_t max_ns)
{
    if (jr_sim_run_until(c->sim, flag_done, w, max_ns) != 0) die("wait", JR_ETIMEDOUT, NULL);
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
    if (system(cmd) != 0) fprintf(stderr, "consumer_bench: could not remove %s\n", path);
}

static uint64_t wal_syncs(cluster *c)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < jr_sim_size(c->sim); i++) {
        jr_node_stats st;
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        if (jr_sim_node(c->sim, i) && jr_node_stats_get(jr_sim_node(c->sim, i), &st) == 0)
            s += st.wal_syncs;
    }
    return s;
}

static void cluster_open(cluster *c, const opts *o)
{
    memset(c, 0, sizeof *c);
    c->o = o;
    unsigned nodes = (unsigned)o->replicas;
    if (o->posix) {
        snprintf(c->root, sizeof c->root, "%s/jr-consumer-bench-%d", o->dir, (int)getpid());
        for (unsigned i = 0; i < nodes; i++) {
            snprintf(c->paths[i][0], sizeof c->paths[i][0], "%s/n%u/wal", c->root, i);
            snprintf(c->paths[i][1], sizeof c->paths[i][1], "%s/n%u/store", c->root, i);
            mkdirs(c->paths[i][0]);
            mkdirs(c->paths[i][1]);
        }
    }
    jr_sim_config sc;
    jr_sim_config_init(&sc);
    sc.nodes = nodes;
    sc.seed = 1;
    sc.no_digest = 1;
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.delay_min_ns = link.delay_max_ns = 50000;
    sc.link = &link;
    sc.arg = c;
    sc.configure = configure;
    int rc = jr_sim_new(&sc, &c->sim);
    if (rc) die("jr_sim_new", rc, NULL);
    /* a cluster that knows all its servers, then the stream */
    jr_sim_run_for(c->sim, 2 * SEC);
    jr_stream_config scfg;
    bench_stream_config(&scfg, o->replicas);
    wait_flag w;
    for (int tries = 0; tries < 50; tries++) {
        memset(&w, 0, sizeof w);
        jr_stream_add(jr_sim_node(c->sim, 0), &scfg, admin_cb, &w);
        wait_for(c, &w, 30 * SEC);
        if (w.status == 0) break;
        jr_sim_run_for(c->sim, 500 * MS);
    }
    if (w.status) die("jr_stream_add", w.status, w.msg);
    for (int tries = 0; tries < 100; tries++) {
        memset(&w, 0, sizeof w);
        jr_stream_info_get(jr_sim_node(c->sim, 0), "BENCH", stream_info_cb, &w);
        wait_for(c, &w, 10 * SEC);
        if (w.status == 0 && w.leader[0]) break;
        jr_sim_run_for(c->sim, 100 * MS);
    }
    int li = jr_sim_index(c->sim, w.leader);
    if (li < 0) die("stream leader", JR_ENOLEADER, NULL);
    c->pub_idx = (unsigned)li;
    jr_sim_run_for(c->sim, 500 * MS);
    c->data = malloc(o->payload);
    if (!c->data) die("malloc", JR_ENOMEM, NULL);
    for (size_t i = 0; i < o->payload; i++) c->data[i] = (uint8_t)('a' + i % 26);
}

static void cluster_close(cluster *c)
{
    jr_sim_free(c->sim);
    free(c->data);
    if (c->o->posix) rm_rf(c->root);
}

/* ---------------------------------------------------------------------------------------------
 * Publishing: the whole budget before any consumption is measured, `window` in flight
 */
typedef struct pubber {
    cluster *c;
    uint64_t issued, acked, failed, budget;
    int last_err;
} pubber;

static void pub_issue(pubber *p);

static void pub_ack(void *arg, int status, const jr_pub_ack *ack)
{
    pubber *p = arg;
    (void)ack;
    if (status) {
        p->failed++;
        p->last_err = status;
    } else {
        p->acked++;
    }
    if (p->issued < p->budget) pub_issue(p);
}

static void pub_issue(pubber *p)
{
    p->issued++;
    int rc = jr_publish(jr_sim_node(p->c->sim, p->c->pub_idx), "bench.orders", NULL, 0, p->c->data,
                        p->c->o->payload, NULL, pub_ack, p);
    if (rc) die("jr_publish", rc, NULL);
}

static int pub_done(void *arg, jr_sim *sim)
{
    pubber *p = arg;
    (void)sim;
    return p->acked + p->failed >= p->budget;
}

static void prepublish(cluster *c, uint64_t n)
{
    pubber p = {c, 0, 0, 0, n, 0};
    for (int k = 0; k < 1000 && p.issued < n; k++) pub_issue(&p);
    if (jr_sim_run_until(c->sim, pub_done, &p, 3600 * SEC) || p.failed)
        die("pre-publish", p.failed ? p.last_err : JR_ETIMEDOUT, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Consumers
 */
static void consumer_make(cluster *c, jr_consumer_config *cfg, unsigned *leader)
{
    wait_flag w;
    for (int tries = 0; tries < 50; tries++) {
        memset(&w, 0, sizeof w);
        int rc = jr_consumer_add(jr_sim_node(c->sim, 0), "BENCH", cfg, consumer_cb, &w);
        if (rc) die("jr_consumer_add", rc, NULL);
        wait_for(c, &w, 60 * SEC);
        if (w.status == 0) break;
        jr_sim_run_for(c->sim, 500 * MS);
    }
    if (w.status) die("jr_consumer_add", w.status, w.msg);
    for (int tries = 0; tries < 100; tries++) {
        memset(&w, 0, sizeof w);
        jr_consumer_info_get(jr_sim_node(c->sim, 0), "BENCH", cfg->durable_name, consumer_info_cb,
                             &w);
        wait_for(c, &w, 10 * SEC);
        if (w.status == 0 && w.leader[0]) break;
        jr_sim_run_for(c->sim, 100 * MS);
    }
    int li = jr_sim_index(c->sim, w.leader);
    if (li < 0) die("consumer leader", JR_ENOLEADER, w.msg);
    *leader = (unsigned)li;
    jr_sim_run_for(c->sim, 200 * MS);
}

static void consumer_info(cluster *c, unsigned node, const char *name, wait_flag *w)
{
    memset(w, 0, sizeof *w);
    int rc = jr_consumer_info_get(jr_sim_node(c->sim, node), "BENCH", name, consumer_info_cb, w);
    if (rc) die("jr_consumer_info_get", rc, NULL);
    wait_for(c, w, 60 * SEC);
    if (w->status) die("jr_consumer_info_get", w->status, w->msg);
}

static void consumer_drop(cluster *c, const char *name)
{
    wait_flag w;
    memset(&w, 0, sizeof w);
    int rc = jr_consumer_delete(jr_sim_node(c->sim, 0), "BENCH", name, admin_cb, &w);
    if (rc) die("jr_consumer_delete", rc, NULL);
    wait_for(c, &w, 60 * SEC);
    if (w.status) die("jr_consumer_delete", w.status, w.msg);
}

/* ---------------------------------------------------------------------------------------------
 * Throughput: one fetch at a time, every message acked from the fetch callback
 */
typedef struct puller {
    cluster *c;
    jr_node *node;
    const char *name;
    int64_t batch;
    int confirmed;
    uint64_t avail;     /* messages the stream holds for this consumer */
    uint64_t delivered; /* first deliveries */
    uint64_t redelivered;
    uint64_t acks_sent, acks_done, acks_failed;
    uint64_t fetches, fetch_errors, odd_ends;
    uint64_t last_sseq;
    uint64_t limit; /* stop issuing fetches once this many were delivered */
    double t_end;   /* ... or after this wall time */
    int in_fetch, stop;
    int last_err;
    char last_msg[200];
} puller;

static void fetch_issue(puller *p);

static void ack_cb(void *arg, int status, const char *msg)
{
    puller *p = arg;
    if (status) {
        p->acks_failed++;
        p->last_err = status;
        snprintf(p->last_msg, sizeof p->last_msg, "ack: %s", msg ? msg : "");
    } else {
        p->acks_done++;
    }
}

static void fetch_cb(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                     const jr_fetch_end *end)
{
    puller *p = arg;
    if (m) {
        if (m->delivered == 1)
            p->delivered++;
        else
            p->redelivered++;
        if (m->stream_seq > p->last_sseq) p->last_sseq = m->stream_seq;
        int rc = jr_consumer_ack(p->node, m->ack_token, JR_ACK_ACK, 0, NULL,
                                 p->confirmed ? ack_cb : NULL, p);
        if (rc) die("jr_consumer_ack", rc, NULL);
        p->acks_sent++;
        return;
    }
    p->in_fetch = 0;
    if (status) {
        p->fetch_errors++;
        p->last_err = status;
        snprintf(p->last_msg, sizeof p->last_msg, "fetch: %s", msg ? msg : "");
    } else if (end->code != 0) {
        p->odd_ends++; /* 408 with the stream drained, or a limit */
        snprintf(p->last_msg, sizeof p->last_msg, "fetch ended %d %s", end->code, end->text);
    }
    if (bench_now_s() > p->t_end) p->stop = 1;
    if (!p->stop && p->delivered < p->limit && p->fetch_errors < 100) fetch_issue(p);
}

static void fetch_issue(puller *p)
{
    jr_fetch_opts fo;
    jr_fetch_opts_init(&fo);
    uint64_t left = p->avail - p->delivered;
    fo.batch = (uint64_t)p->batch < left ? p->batch : (int64_t)left;
    fo.expires_ns = (int64_t)(5 * SEC);
    p->fetches++;
    p->in_fetch = 1;
    int rc = jr_consumer_fetch(p->node, "BENCH", p->name, &fo, fetch_cb, p);
    if (rc) die("jr_consumer_fetch", rc, NULL);
}

static int puller_idle(void *arg, jr_sim *sim)
{
    puller *p = arg;
    (void)sim;
    return !p->in_fetch && (!p->confirmed || p->acks_done + p->acks_failed >= p->acks_sent);
}

/* Runs until no fetch is in flight and every ack took effect at the consumer's leader. */
static void puller_settle(puller *p, unsigned node)
{
    if (jr_sim_run_until(p->c->sim, puller_idle, p, 600 * SEC)) die("drain", JR_ETIMEDOUT, NULL);
    if (p->confirmed) return;
    for (int tries = 0; tries < 100000; tries++) {
        wait_flag w;
        consumer_info(p->c, node, p->name, &w);
        if (w.ack_pending == 0 && w.ack_floor >= p->last_sseq) return;
    }
    die("fire-and-forget acks never applied", JR_ETIMEDOUT, NULL);
}

static void run_throughput(cluster *c, int64_t batch, int confirmed, int seq)
{
    const opts *o = c->o;
    char name[32];
    snprintf(name, sizeof name, "T%d", seq);
    jr_consumer_config cfg;
    jr_consumer_config_init(&cfg);
    cfg.durable_name = name;
    cfg.ack_policy = JR_ACK_EXPLICIT;
    if (o->max_ack_pending) cfg.max_ack_pending = o->max_ack_pending;
    unsigned leader;
    consumer_make(c, &cfg, &leader);
    wait_flag w;
    consumer_info(c, leader, name, &w);

    puller p;
    memset(&p, 0, sizeof p);
    p.c = c;
    p.node = jr_sim_node(c->sim, leader);
    p.name = name;
    p.batch = batch;
    p.confirmed = confirmed;
    p.avail = o->msgs;
    /* warm-up */
    uint64_t warm = (uint64_t)batch < 1000 ? 1000 : (uint64_t)batch;
    if (warm > o->msgs / 4) warm = o->msgs / 4;
    p.limit = warm;
    p.t_end = bench_now_s() + o->seconds / 4;
    if (warm) {
        fetch_issue(&p);
        puller_settle(&p, leader);
    }
    p.stop = 0;
    /* measured */
    uint64_t d0 = p.delivered, f0 = p.fetches, s0 = wal_syncs(c), sim0 = jr_sim_now(c->sim);
    double t0 = bench_now_s(), c0 = bench_cpu_s();
    p.limit = o->msgs;
    p.t_end = t0 + o->seconds;
    if (p.delivered < p.avail) fetch_issue(&p);
    puller_settle(&p, leader);
    double wall = bench_now_s() - t0, cpu = bench_cpu_s() - c0;
    double sim_s = (double)(jr_sim_now(c->sim) - sim0) * 1e-9;
    uint64_t n = p.delivered - d0, syncs = wal_syncs(c) - s0;
    consumer_info(c, leader, name, &w);
    char sim_rate[32] = "null";
    if (sim_s >= 1e-3) snprintf(sim_rate, sizeof sim_rate, "%.0f", (double)n / sim_s);
    printf("{\"bench\":\"consumer_fetch_ack\",\"vfs\":\"%s\",\"sync\":\"%s\",\"replicas\":%d,"
           "\"payload\":%zu,\"batch\":%lld,\"ack\":\"%s\",\"max_ack_pending\":%lld,"
           "\"msgs\":%llu,\"redelivered\":%llu,\"ack_failed\":%llu,\"fetch_errors\":%llu,"
           "\"seconds\":%.3f,\"msgs_per_s\":%.0f,\"sim_seconds\":%.3f,\"sim_msgs_per_s\":%s,"
           "\"cpu_us_per_msg\":%.3f,\"msgs_per_cpu_s\":%.0f,\"wal_syncs\":%llu,\"fetches\":%llu,"
           "\"same_leader\":%d}\n",
           o->posix ? "posix" : "mem", o->posix ? "always" : "n/a", o->replicas, o->payload,
           (long long)batch, confirmed ? "confirmed" : "ff", (long long)w.max_ack_pending,
           (unsigned long long)n, (unsigned long long)p.redelivered,
           (unsigned long long)p.acks_failed, (unsigned long long)p.fetch_errors, wall,
           (double)n / wall, sim_s, sim_rate, cpu * 1e6 / (double)n,
           cpu > 0 ? (double)n / cpu : 0.0, (unsigned long long)syncs,
           (unsigned long long)(p.fetches - f0), leader == c->pub_idx);
    fflush(stdout);
    if (p.fetch_errors || p.acks_failed || w.ack_pending)
        fprintf(stderr, "consumer_bench: %s (last: %s; ack pending %llu)\n", name, p.last_msg,
                (unsigned long long)w.ack_pending);
    consumer_drop(c, name);
}

/* ---------------------------------------------------------------------------------------------
 * Latency and redelivery: one message at a time
 */
typedef struct probe {
    cluster *c;
    jr_node *node;
    const char *name;
    int done, pub_done, status, ack;
    uint32_t delivered;
    uint64_t sim_at, wall_at;
    char token[600];
} probe;

static void probe_fetch_cb(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                           const jr_fetch_end *end)
{
    probe *q = arg;
    (void)msg;
    if (m) {
        q->wall_at = bench_now_ns();
        q->sim_at = jr_sim_now(q->c->sim);
        q->delivered = m->delivered;
        snprintf(q->token, sizeof q->token, "%s", m->ack_token);
        if (q->ack) jr_consumer_ack(q->node, m->ack_token, JR_ACK_ACK, 0, NULL, NULL, NULL);
        return;
    }
    q->done = 1;
    q->status = status ? status : end->code;
}

static void probe_pub_cb(void *arg, int status, const jr_pub_ack *ack)
{
    probe *q = arg;
    (void)ack;
    q->pub_done = 1;
    if (status) die("jr_publish", status, ack ? ack->msg : NULL);
}

static int probe_done(void *arg, jr_sim *sim)
{
    probe *q = arg;
    (void)sim;
    return q->done && q->pub_done;
}

static void probe_fetch(probe *q)
{
    jr_fetch_opts fo;
    jr_fetch_opts_init(&fo);
    fo.batch = 1;
    fo.expires_ns = (int64_t)(5 * SEC);
    q->done = 0;
    q->delivered = 0;
    int rc = jr_consumer_fetch(q->node, "BENCH", q->name, &fo, probe_fetch_cb, q);
    if (rc) die("jr_consumer_fetch", rc, NULL);
}

static double pct_us(const uint64_t *v, uint64_t n, double q)
{
    return n ? (double)v[(size_t)((double)n * q)] / 1e3 : 0;
}

static void run_latency(cluster *c, uint64_t samples)
{
    const opts *o = c->o;
    jr_consumer_config cfg;
    jr_consumer_config_init(&cfg);
    cfg.durable_name = "LAT";
    cfg.deliver_policy = JR_DELIVER_NEW;
    unsigned leader;
    consumer_make(c, &cfg, &leader);
    probe q;
    memset(&q, 0, sizeof q);
    q.c = c;
    q.node = jr_sim_node(c->sim, leader);
    q.name = "LAT";
    q.ack = 1;
    uint64_t *sim_lat = malloc(samples * sizeof *sim_lat),
             *wall_lat = malloc(samples * sizeof *wall_lat);
    if (!sim_lat || !wall_lat) die("malloc", JR_ENOMEM, NULL);
    uint64_t n = 0, bad = 0;
    for (uint64_t i = 0; i < samples; i++) {
        probe_fetch(&q);
        jr_sim_run_for(c->sim, 1 * MS); /* the pull waits at the leader */
        q.pub_done = 0;
        uint64_t s0 = jr_sim_now(c->sim), w0 = bench_now_ns();
        int rc = jr_publish(jr_sim_node(c->sim, c->pub_idx), "bench.lat", NULL, 0, c->data,
                            o->payload, NULL, probe_pub_cb, &q);
        if (rc) die("jr_publish", rc, NULL);
        if (jr_sim_run_until(c->sim, probe_done, &q, 30 * SEC)) die("latency", JR_ETIMEDOUT, NULL);
        if (q.status != 0 || q.delivered != 1) {
            bad++;
            continue;
        }
        sim_lat[n] = q.sim_at - s0;
        wall_lat[n++] = q.wall_at - w0;
    }
    qsort(sim_lat, n, sizeof *sim_lat, bench_cmp_u64);
    qsort(wall_lat, n, sizeof *wall_lat, bench_cmp_u64);
    printf("{\"bench\":\"consumer_latency\",\"vfs\":\"%s\",\"sync\":\"%s\",\"replicas\":%d,"
           "\"payload\":%zu,\"msgs\":%llu,\"failed\":%llu,\"sim_p50_us\":%.1f,\"sim_p99_us\":%.1f,"
           "\"wall_p50_us\":%.1f,\"wall_p99_us\":%.1f,\"same_leader\":%d}\n",
           o->posix ? "posix" : "mem", o->posix ? "always" : "n/a", o->replicas, o->payload,
           (unsigned long long)n, (unsigned long long)bad, pct_us(sim_lat, n, 0.5),
           pct_us(sim_lat, n, 0.99), pct_us(wall_lat, n, 0.5), pct_us(wall_lat, n, 0.99),
           leader == c->pub_idx);
    fflush(stdout);
    free(sim_lat);
    free(wall_lat);
    consumer_drop(c, "LAT");
}

static int fetch_done(void *arg, jr_sim *sim)
{
    probe *q = arg;
    (void)sim;
    return q->done;
}

static void run_redelivery(cluster *c, uint64_t samples)
{
    const opts *o = c->o;
    const int64_t ack_wait = (int64_t)(100 * MS);
    jr_consumer_config cfg;
    jr_consumer_config_init(&cfg);
    cfg.durable_name = "RED";
    cfg.deliver_policy = JR_DELIVER_NEW;
    cfg.ack_wait_ns = ack_wait;
    unsigned leader;
    consumer_make(c, &cfg, &leader);
    probe q;
    memset(&q, 0, sizeof q);
    q.c = c;
    q.node = jr_sim_node(c->sim, leader);
    q.name = "RED";
    uint64_t *delay = malloc(samples * sizeof *delay);
    if (!delay) die("malloc", JR_ENOMEM, NULL);
    uint64_t n = 0, bad = 0;
    for (uint64_t i = 0; i < samples; i++) {
        probe_fetch(&q);
        jr_sim_run_for(c->sim, 1 * MS);
        q.pub_done = 0;
        int rc = jr_publish(jr_sim_node(c->sim, c->pub_idx), "bench.red", NULL, 0, c->data,
                            o->payload, NULL, probe_pub_cb, &q);
        if (rc) die("jr_publish", rc, NULL);
        if (jr_sim_run_until(c->sim, probe_done, &q, 30 * SEC))
            die("redelivery", JR_ETIMEDOUT, NULL);
        if (q.status != 0 || q.delivered != 1) {
            bad++;
            continue;
        }
        uint64_t first = q.sim_at;
        probe_fetch(&q); /* waits for the redelivery */
        if (jr_sim_run_until(c->sim, fetch_done, &q, 30 * SEC))
            die("redelivery", JR_ETIMEDOUT, NULL);
        if (q.status != 0 || q.delivered != 2) {
            bad++;
            continue;
        }
        delay[n++] = q.sim_at - first;
        wait_flag w;
        memset(&w, 0, sizeof w);
        rc = jr_consumer_ack(q.node, q.token, JR_ACK_ACK, 0, NULL, admin_cb, &w);
        if (rc) die("jr_consumer_ack", rc, NULL);
        wait_for(c, &w, 30 * SEC);
        if (w.status) die("jr_consumer_ack", w.status, w.msg);
    }
    qsort(delay, n, sizeof *delay, bench_cmp_u64);
    printf("{\"bench\":\"consumer_redelivery\",\"vfs\":\"%s\",\"sync\":\"%s\",\"replicas\":%d,"
           "\"ack_wait_ms\":%.0f,\"msgs\":%llu,\"failed\":%llu,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
           "\"max_ms\":%.3f,\"clock\":\"sim\"}\n",
           o->posix ? "posix" : "mem", o->posix ? "always" : "n/a", o->replicas,
           (double)ack_wait / 1e6, (unsigned long long)n, (unsigned long long)bad,
           pct_us(delay, n, 0.5) / 1e3, pct_us(delay, n, 0.99) / 1e3,
           n ? (double)delay[n - 1] / 1e6 : 0.0);
    fflush(stdout);
    free(delay);
    consumer_drop(c, "RED");
}

/* ---------------------------------------------------------------------------------------------
 * --host mt: latency and redelivery with every node on its own thread and the real monotonic
 * clock (mt_host.h: a mailbox per node, frames copied between loops)
 */
typedef struct mt_bench {
    const opts *o;
    mt_cluster mt;
    int pub_idx;
    uint8_t *data;
} mt_bench;

static void mt_consumer_cb(void *arg, int status, const char *msg, const char *name)
{
    (void)name;
    mt_waiter_done(arg, status, msg);
}

static void mt_consumer_add_task(void *arg, jr_node *node)
{
    int rc = jr_consumer_add(node, "BENCH", ((mt_waiter *)arg)->in, mt_consumer_cb, arg);
    if (rc) mt_waiter_done(arg, rc, NULL);
}

static void mt_consumer_info_cb(void *arg, int status, const char *msg,
                                const jr_consumer_info *info)
{
    mt_waiter *w = arg;
    if (status == 0 && info->cluster->leader)
        snprintf(w->leader, sizeof w->leader, "%s", info->cluster->leader);
    mt_waiter_done(w, status ? status : (w->leader[0] ? 0 : JR_ENOLEADER), msg);
}

static void mt_consumer_info_task(void *arg, jr_node *node)
{
    int rc = jr_consumer_info_get(node, "BENCH", ((mt_waiter *)arg)->in, mt_consumer_info_cb, arg);
    if (rc) mt_waiter_done(arg, rc, NULL);
}

static void mt_consumer_delete_task(void *arg, jr_node *node)
{
    int rc = jr_consumer_delete(node, "BENCH", ((mt_waiter *)arg)->in, mt_admin_cb, arg);
    if (rc) mt_waiter_done(arg, rc, NULL);
}

static void mt_bench_open(mt_bench *c, const opts *o)
{
    memset(c, 0, sizeof *c);
    c->o = o;
    char root[512] = "";
    if (o->posix) snprintf(root, sizeof root, "%s/jr-consumer-bench-%d", o->dir, (int)getpid());
    mt_opts mo = {.nodes = o->replicas, .posix = o->posix, .root = root, .record_late = 1};
    mt_cluster_open(&c->mt, &mo);
    jr_stream_config scfg;
    bench_stream_config(&scfg, o->replicas);
    c->pub_idx = mt_stream_add(&c->mt, &scfg);
    c->data = malloc(o->payload);
    if (!c->data) die("malloc", JR_ENOMEM, NULL);
    for (size_t i = 0; i < o->payload; i++) c->data[i] = (uint8_t)('a' + i % 26);
    mt_sleep_ms(300);
}

static void mt_bench_close(mt_bench *c)
{
    mt_cluster_close(&c->mt);
    free(c->data);
}

/* Creates consumer cfg and returns its leader's index. */
static int mt_consumer_make(mt_bench *c, const jr_consumer_config *cfg)
{
    mt_call(&c->mt, 0, mt_consumer_add_task, cfg, 100, NULL, "jr_consumer_add");
    char leader[32];
    mt_call(&c->mt, 0, mt_consumer_info_task, cfg->durable_name, 200, leader, "consumer leader");
    mt_sleep_ms(200);
    return mt_index(&c->mt, leader);
}

/* One message through a consumer: the fetch runs on the consumer leader's thread, the publish
 * on the stream leader's; the main thread waits for both. Times are bench_now_ns(), the
 * clock the nodes run on (jr_host.now). */
typedef struct mt_probe {
    mt_bench *c;
    jr_node *node; /* the consumer leader's */
    const char *name;
    int ack;              /* ack (ff) from the fetch callback */
    mt_waiter fetch, pub; /* the fetch's end, the publish's ack */
    uint64_t t_pub, t_at; /* jr_publish() called; the message delivered */
    uint32_t delivered;
    int end_code;
    char token[600];
} mt_probe;

static void mt_fetch_cb(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                        const jr_fetch_end *end)
{
    mt_probe *q = arg;
    if (m) {
        q->t_at = bench_now_ns();
        q->delivered = m->delivered;
        snprintf(q->token, sizeof q->token, "%s", m->ack_token);
        if (q->ack) jr_consumer_ack(q->node, m->ack_token, JR_ACK_ACK, 0, NULL, NULL, NULL);
        return;
    }
    mt_waiter_done(&q->fetch, status ? status : end->code, msg);
}

static void mt_fetch_task(void *arg, jr_node *node)
{
    mt_probe *q = arg;
    jr_fetch_opts fo;
    jr_fetch_opts_init(&fo);
    fo.batch = 1;
    fo.expires_ns = (int64_t)(5 * SEC);
    int rc = jr_consumer_fetch(node, "BENCH", q->name, &fo, mt_fetch_cb, q);
    if (rc) mt_waiter_done(&q->fetch, rc, NULL);
}

static void mt_pub_cb(void *arg, int status, const jr_pub_ack *ack)
{
    mt_probe *q = arg;
    mt_waiter_done(&q->pub, status, ack ? ack->msg : NULL);
}

static void mt_pub_task(void *arg, jr_node *node)
{
    mt_probe *q = arg;
    q->t_pub = bench_now_ns();
    int rc =
        jr_publish(node, "bench.lat", NULL, 0, q->c->data, q->c->o->payload, NULL, mt_pub_cb, q);
    if (rc) mt_waiter_done(&q->pub, rc, NULL);
}

static void mt_ack_task(void *arg, jr_node *node)
{
    mt_probe *q = arg;
    int rc = jr_consumer_ack(node, q->token, JR_ACK_ACK, 0, NULL, mt_admin_cb, &q->pub);
    if (rc) mt_waiter_done(&q->pub, rc, NULL);
}

/* Publishes one message while a fetch of batch 1 waits at the consumer's leader: 0 if it was
 * delivered (q->t_pub, q->t_at, q->delivered set). */
static int mt_one(mt_probe *q, int leader)
{
    mt_bench *c = q->c;
    mt_waiter_init(&q->fetch, NULL);
    mt_waiter_init(&q->pub, NULL);
    q->delivered = 0;
    mt_run_on(&c->mt.loops[leader], mt_fetch_task, q);
    mt_sleep_ms(1); /* the pull waits at the leader */
    mt_run_on(&c->mt.loops[c->pub_idx], mt_pub_task, q);
    int rc = mt_waiter_wait(&q->pub);
    if (rc) die("jr_publish", rc, q->pub.msg);
    rc = mt_waiter_wait(&q->fetch);
    return rc || q->delivered != 1 ? -1 : 0;
}

static void mt_drop(mt_bench *c, const char *name)
{
    mt_call(&c->mt, 0, mt_consumer_delete_task, name, 1, NULL, "jr_consumer_delete");
}

static void run_mt(const opts *o)
{
    mt_bench c;
    mt_bench_open(&c, o);
    const char *vfs = o->posix ? "posix" : "mem", *sync = o->posix ? "always" : "n/a";
    if (o->tests & TEST_LATENCY) {
        uint64_t samples = o->samples ? o->samples : o->posix ? 100 : 1000;
        jr_consumer_config cfg;
        jr_consumer_config_init(&cfg);
        cfg.durable_name = "LAT";
        cfg.deliver_policy = JR_DELIVER_NEW;
        int leader = mt_consumer_make(&c, &cfg);
        mt_probe q;
        memset(&q, 0, sizeof q);
        q.c = &c;
        q.node = c.mt.loops[leader].node;
        q.name = "LAT";
        q.ack = 1;
        uint64_t *lat = malloc(samples * sizeof *lat), n = 0, bad = 0;
        if (!lat) die("malloc", JR_ENOMEM, NULL);
        for (uint64_t i = 0; i < samples; i++) {
            if (mt_one(&q, leader)) {
                bad++;
                continue;
            }
            lat[n++] = q.t_at - q.t_pub;
        }
        qsort(lat, n, sizeof *lat, bench_cmp_u64);
        printf("{\"bench\":\"consumer_latency_mt\",\"vfs\":\"%s\",\"sync\":\"%s\","
               "\"replicas\":%d,\"payload\":%zu,\"msgs\":%llu,\"failed\":%llu,\"p50_us\":%.1f,"
               "\"p99_us\":%.1f,\"max_us\":%.1f,\"same_leader\":%d,\"clock\":\"monotonic\"}\n",
               vfs, sync, o->replicas, o->payload, (unsigned long long)n, (unsigned long long)bad,
               pct_us(lat, n, 0.5), pct_us(lat, n, 0.99), n ? (double)lat[n - 1] / 1e3 : 0.0,
               leader == c.pub_idx);
        fflush(stdout);
        free(lat);
        mt_drop(&c, "LAT");
    }
    if (o->tests & TEST_REDELIVERY) {
        uint64_t samples = o->samples ? o->samples : o->posix ? 50 : 100;
        const int64_t ack_wait = (int64_t)(100 * MS);
        jr_consumer_config cfg;
        jr_consumer_config_init(&cfg);
        cfg.durable_name = "RED";
        cfg.deliver_policy = JR_DELIVER_NEW;
        cfg.ack_wait_ns = ack_wait;
        int leader = mt_consumer_make(&c, &cfg);
        mt_probe q;
        memset(&q, 0, sizeof q);
        q.c = &c;
        q.node = c.mt.loops[leader].node;
        q.name = "RED";
        uint64_t *delay = malloc(samples * sizeof *delay), n = 0, bad = 0;
        if (!delay) die("malloc", JR_ENOMEM, NULL);
        mt_late_reset(&c.mt);
        for (uint64_t i = 0; i < samples; i++) {
            if (mt_one(&q, leader)) {
                bad++;
                continue;
            }
            uint64_t first = q.t_at;
            mt_waiter_init(&q.fetch, NULL);
            mt_run_on(&c.mt.loops[leader], mt_fetch_task, &q); /* waits for the redelivery */
            if (mt_waiter_wait(&q.fetch) || q.delivered != 2) {
                bad++;
                continue;
            }
            delay[n++] = q.t_at - first;
            mt_waiter_init(&q.pub, NULL);
            mt_run_on(&c.mt.loops[leader], mt_ack_task, &q);
            int rc = mt_waiter_wait(&q.pub);
            if (rc) die("jr_consumer_ack", rc, q.pub.msg);
        }
        qsort(delay, n, sizeof *delay, bench_cmp_u64);
        double late_max, late_p99 = mt_late_p99_us(&c.mt, &late_max);
        printf("{\"bench\":\"consumer_redelivery_mt\",\"vfs\":\"%s\",\"sync\":\"%s\","
               "\"replicas\":%d,\"ack_wait_ms\":%.0f,\"msgs\":%llu,\"failed\":%llu,"
               "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,\"timer_late_p99_us\":%.1f,"
               "\"timer_late_max_us\":%.1f,\"clock\":\"monotonic\"}\n",
               vfs, sync, o->replicas, (double)ack_wait / 1e6, (unsigned long long)n,
               (unsigned long long)bad, pct_us(delay, n, 0.5) / 1e3, pct_us(delay, n, 0.99) / 1e3,
               n ? (double)delay[n - 1] / 1e6 : 0.0, late_p99, late_max);
        fflush(stdout);
        free(delay);
        mt_drop(&c, "RED");
    }
    mt_bench_close(&c);
}

/* ---------------------------------------------------------------------------------------------
 */
static void run(const opts *o)
{
    cluster c;
    cluster_open(&c, o);
    if (o->tests & TEST_THROUGHPUT) {
        prepublish(&c, o->msgs);
        int seq = 0;
        for (int bi = 0; bi < o->nbatches; bi++)
            for (int a = 0; a < 2; a++)
                if (o->acks & (1 << a)) run_throughput(&c, o->batches[bi], a == 1, seq++);
    }
    if (o->tests & TEST_LATENCY) run_latency(&c, o->samples ? o->samples : o->posix ? 100 : 2000);
    if (o->tests & TEST_REDELIVERY)
        run_redelivery(&c, o->samples ? o->samples : o->posix ? 50 : 200);
    cluster_close(&c);
}

int main(int argc, char **argv)
{
    const char *vfs = "all", *host = "sim";
    long reps[MAX_LIST] = {1, 3};
    int nreps = 2;
    opts o;
    memset(&o, 0, sizeof o);
    o.batches[0] = 1;
    o.batches[1] = 100;
    o.batches[2] = 1000;
    o.nbatches = 3;
    o.acks = ACK_FF | ACK_CONFIRMED;
    o.tests = TEST_THROUGHPUT | TEST_LATENCY | TEST_REDELIVERY;
    o.payload = 128;
    o.seconds = 2.0;
    o.dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    uint64_t msgs = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--vfs") && v)
            vfs = argv[++i];
        else if (!strcmp(a, "--replicas") && v)
            nreps = bench_parse_list(argv[++i], reps, MAX_LIST);
        else if (!strcmp(a, "--batch") && v)
            o.nbatches = bench_parse_list(argv[++i], o.batches, MAX_LIST);
        else if (!strcmp(a, "--ack") && v) {
            i++;
            o.acks = (strstr(v, "ff") ? ACK_FF : 0) | (strstr(v, "confirmed") ? ACK_CONFIRMED : 0);
        } else if (!strcmp(a, "--test") && v) {
            i++;
            o.tests = (strstr(v, "throughput") ? TEST_THROUGHPUT : 0) |
                      (strstr(v, "latency") ? TEST_LATENCY : 0) |
                      (strstr(v, "redelivery") ? TEST_REDELIVERY : 0);
        } else if (!strcmp(a, "--msgs") && v)
            msgs = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--payload") && v)
            o.payload = (size_t)atol(argv[++i]);
        else if (!strcmp(a, "--max-ack-pending") && v)
            o.max_ack_pending = atol(argv[++i]);
        else if (!strcmp(a, "--samples") && v)
            o.samples = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--seconds") && v)
            o.seconds = atof(argv[++i]);
        else if (!strcmp(a, "--dir") && v)
            o.dir = argv[++i];
        else if (!strcmp(a, "--host") && v)
            host = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--vfs mem|posix|all] [--replicas 1,3] [--batch 1,100,1000] "
                    "[--ack ff,confirmed] [--test throughput,latency,redelivery] [--msgs N] "
                    "[--payload B] [--max-ack-pending N] [--samples N] [--seconds S] "
                    "[--dir PATH] [--host sim|mt|all]\n",
                    argv[0]);
            return 2;
        }
    }
    if (nreps < 1 || o.nbatches < 1 || !o.acks || !o.tests || o.payload == 0) {
        fprintf(stderr, "%s: bad --replicas, --batch, --ack, --test or --payload\n", argv[0]);
        return 2;
    }
    for (int bi = 0; bi < o.nbatches; bi++)
        if (o.batches[bi] < 1) return 2;
    for (int pv = 0; pv < 2; pv++) {
        if ((pv == 0 && !strcmp(vfs, "posix")) || (pv == 1 && !strcmp(vfs, "mem"))) continue;
        for (int ri = 0; ri < nreps; ri++) {
            if (reps[ri] < 1 || reps[ri] > 5) continue;
            o.posix = pv;
            o.replicas = (int)reps[ri];
            o.msgs = msgs ? msgs : pv ? 20000 : 400000;
            if (strcmp(host, "mt")) run(&o);
            if (strcmp(host, "sim") && (o.tests & (TEST_LATENCY | TEST_REDELIVERY))) run_mt(&o);
        }
    }
    return 0;
}
