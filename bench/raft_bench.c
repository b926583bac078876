/*
 * raft_bench — replication throughput of raw groups: 3 and 5 in-process nodes over the
 * simulated network (no faults, 10 µs links) and simulated disks, one group, 1,000,000
 * proposals of 128 bytes pipelined with a window of outstanding proposals. Everything runs on
 * one thread, so the numbers are the whole cluster's CPU cost per entry (leader and followers).
 *
 * One JSON line per configuration:
 *   entries_per_sec, mb_per_sec   committed (acknowledged to the proposer) per wall second
 *   cpu_seconds                   CPU time of the run (wall time suffers when the machine is
 *                                 shared; the whole cluster runs on one thread)
 *   latency_p50_us, latency_p99_us  wall time from jr_group_propose to its callback
 *   allocs_per_entry              the nodes' jr_allocator calls (malloc + realloc) per committed
 *                                 entry in the steady state (the second half of the run); the
 *                                 simulated disks and network are not counted
 *
 * Usage: raft_bench [entries] [window]     (defaults 1000000, 4096)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jetraft.h"
#include "jetraft/sim.h"

#define MAX_NODES 5
#define ENTRY_BYTES 128

typedef struct counting {
    jr_allocator a;
    uint64_t calls;
} counting;

static void *c_malloc(void *ctx, size_t n)
{
    ((counting *)ctx)->calls++;
    return malloc(n);
}
static void *c_realloc(void *ctx, void *p, size_t n)
{
    ((counting *)ctx)->calls++;
    return realloc(p, n);
}
static void c_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct bench {
    jr_sim *sim;
    unsigned nodes;
    jr_group *g[MAX_NODES];
    jr_fsm fsm[MAX_NODES];
    uint64_t applied[MAX_NODES];
    uint64_t proposed, committed, failed, outstanding;
    uint64_t *started; /* wall time of each proposal, by sequence */
    uint32_t *lat_us;  /* latency of each committed proposal */
    uint64_t window;
    uint64_t total;
    uint64_t wall; /* wall clock, refreshed after every event of the fixture */
} bench;

static void b_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    (void)index;
    (void)data;
    (void)len;
    (*(uint64_t *)ctx)++;
}

static int b_snapshot(void *ctx, jr_snapshot_writer *w)
{
    return jr_snapshot_write(w, ctx, sizeof(uint64_t));
}

static int b_restore(void *ctx, uint64_t index, const void *data, size_t len)
{
    (void)index;
    if (len != sizeof(uint64_t)) return JR_ECORRUPT;
    memcpy(ctx, data, len);
    return 0;
}

static bench *the;

static void on_commit(void *arg, int status, uint64_t index)
{
    bench *b = the;
    (void)index;
    uint64_t seq = (uint64_t)(uintptr_t)arg;
    b->outstanding--;
    if (status != 0) {
        b->failed++;
        return;
    }
    uint64_t us = (b->wall - b->started[seq]) / 1000;
    b->lat_us[b->committed++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* The nodes allocate through the counting allocator; the simulated disks and network (the
 * fixture itself) do not count. */
/* Reading the clock once per event rather than per entry keeps the measurement out of the
 * measured cost; callbacks run inside events, so their time is that event's. */
static void on_step(void *arg, jr_sim *sim)
{
    (void)arg;
    (void)sim;
    the->wall = wall_ns();
}

static void configure(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)i;
    cfg->alloc = arg;
    cfg->wal_segment_bytes = 16u << 20; /* compacted segments are deleted from the memfs */
}

static int leader(bench *b)
{
    for (unsigned i = 0; i < b->nodes; i++) {
        jr_group_status st = {.size = sizeof st};
        jr_group_status_get(b->g[i], &st);
        if (st.role == JR_LEADER) return (int)i;
    }
    return -1;
}

static int has_leader(void *arg, jr_sim *sim)
{
    (void)sim;
    return leader(arg) >= 0;
}

static int window_open(void *arg, jr_sim *sim)
{
    (void)sim;
    bench *b = arg;
    if (b->proposed < b->total) return b->outstanding <= b->window / 2;
    return b->outstanding == 0; /* the tail: wait for the last acknowledgements */
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int run(unsigned nodes, uint64_t entries, uint64_t window)
{
    counting ca = {{JR_ALLOCATOR_VERSION, NULL, c_malloc, c_realloc, c_free}, 0};
    ca.a.ctx = &ca;
    bench *b = calloc(1, sizeof *b);
    the = b;
    b->nodes = nodes;
    b->window = window;
    b->total = entries;
    b->started = malloc(entries * sizeof *b->started);
    b->lat_us = malloc(entries * sizeof *b->lat_us);
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.nodes = nodes;
    cfg.seed = 1;
    cfg.arg = &ca.a;
    cfg.configure = configure;
    cfg.on_step = on_step;
    cfg.no_digest = 1;
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.delay_min_ns = link.delay_max_ns = 10000;
    cfg.link = &link;
    cfg.election_timeout_ms = 1000;
    cfg.heartbeat_ms = 100;
    int rc = jr_sim_new(&cfg, &b->sim);
    if (rc != 0) {
        fprintf(stderr, "jr_sim_new: %s\n", jr_strerror(rc));
        return 1;
    }
    const char *voters[MAX_NODES];
    for (unsigned i = 0; i < nodes; i++) voters[i] = jr_sim_name(b->sim, i);
    for (unsigned i = 0; i < nodes; i++) {
        b->fsm[i] = (jr_fsm){JR_FSM_VERSION, &b->applied[i], b_apply, b_snapshot, b_restore};
        jr_group_config gc;
        jr_group_config_init(&gc);
        gc.id = 1;
        gc.voters = voters;
        gc.nvoters = nodes;
        gc.fsm = &b->fsm[i];
        rc = jr_group_open(jr_sim_node(b->sim, i), &gc, &b->g[i]);
        if (rc != 0) {
            fprintf(stderr, "jr_group_open: %s\n", jr_strerror(rc));
            return 1;
        }
    }
    if (jr_sim_run_until(b->sim, has_leader, b, 10000000000ull) != 0) {
        fprintf(stderr, "no leader\n");
        return 1;
    }
    jr_sim_run_for(b->sim, 50000000ull);
    int l = leader(b);
    jr_group *lg = b->g[l];
    uint8_t payload[ENTRY_BYTES];
    memset(payload, 'e', sizeof payload);

    uint64_t warm = entries / 2, allocs_at_warm = 0, committed_at_warm = 0;
    uint64_t t0 = wall_ns(), c0 = cpu_ns();
    while (b->committed + b->failed < entries) {
        b->wall = wall_ns();
        while (b->outstanding < window && b->proposed < entries) {
            uint64_t seq = b->proposed;
            memcpy(payload, &seq, sizeof seq);
            b->started[seq] = b->wall;
            rc = jr_group_propose(lg, payload, sizeof payload, on_commit, (void *)(uintptr_t)seq);
            if (rc != 0) {
                fprintf(stderr, "propose: %s\n", jr_strerror(rc));
                return 1;
            }
            b->proposed++;
            b->outstanding++;
        }
        if (jr_sim_run_until(b->sim, window_open, b, 10000000000ull) != 0) {
            fprintf(stderr, "stalled at %" PRIu64 " committed\n", b->committed);
            return 1;
        }
        if (!allocs_at_warm && b->committed >= warm) {
            allocs_at_warm = ca.calls;
            committed_at_warm = b->committed;
        }
    }
    uint64_t t1 = wall_ns(), c1 = cpu_ns();
    uint64_t steady = b->committed - committed_at_warm;
    double allocs = steady ? (double)(ca.calls - allocs_at_warm) / (double)steady : 0;
    double secs = (double)(t1 - t0) / 1e9, cpu = (double)(c1 - c0) / 1e9;
    qsort(b->lat_us, b->committed, sizeof *b->lat_us, cmp_u32);
    uint32_t p50 = b->committed ? b->lat_us[b->committed / 2] : 0;
    uint32_t p99 = b->committed ? b->lat_us[b->committed * 99 / 100] : 0;
    jr_sim_stats ss = {.size = sizeof ss};
    jr_sim_stats_get(b->sim, &ss);
    jr_node_stats ns = {.size = sizeof ns};
    jr_node_stats_get(jr_sim_node(b->sim, (unsigned)l), &ns);
    printf("{\"bench\":\"raft\",\"nodes\":%u,\"entries\":%" PRIu64 ",\"entry_bytes\":%d,"
           "\"window\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"seconds\":%.3f,\"cpu_seconds\":%.3f,"
           "\"entries_per_sec\":%.0f,\"mb_per_sec\":%.1f,\"latency_p50_us\":%u,"
           "\"latency_p99_us\":%u,\"allocs_per_entry\":%.4f,\"frames\":%" PRIu64
           ",\"leader_wal_syncs\":%" PRIu64 "}\n",
           nodes, b->committed, ENTRY_BYTES, window, b->failed, secs, cpu,
           (double)b->committed / secs, (double)b->committed * ENTRY_BYTES / secs / 1e6, p50, p99,
           allocs, ss.frames_delivered, ns.wal_syncs);
    fflush(stdout);
    jr_sim_free(b->sim);
    free(b->started);
    free(b->lat_us);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t entries = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
    uint64_t window = argc > 2 ? strtoull(argv[2], NULL, 0) : 4096;
    if (run(3, entries, window) != 0) return 1;
    if (run(5, entries, window) != 0) return 1;
    return 0;
}
