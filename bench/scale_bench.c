/*
 * scale_bench — what many raw R3 groups cost (issue 5): 3 in-process nodes on one thread, a
 * real clock, an in-process network (frames are copied and delivered in order, no delay) and
 * the POSIX vfs in a fresh directory under /dev/shm (tmpfs: syncs are cheap and the WAL's bytes
 * are not process memory). Node defaults: election timeout 1000 ms, heartbeat 100 ms.
 *
 * One JSON line per configuration (number of groups):
 *   create_ms         wall time of the jr_group_open calls (all groups, all three nodes)
 *   elect_ms          then until every group has a ready leader (the elections run in real
 *                     time: at least one election timeout). Above 20,000 groups they are
 *                     created in batches of 10,000 (create_batch), each batch elected before
 *                     the next: 100,000 groups created in the same instant make 300,000
 *                     campaigns within a few seconds, more than the one thread running all
 *                     three nodes can serve before they time out (3 real nodes have 3 cores)
 *   quiet_ms          then (after one write per group, proposed 2,000 groups per 50 ms) until
 *                     every replica is quiet
 *   bytes_per_replica RSS growth from before the groups were created to the idle cluster,
 *                     divided by the replicas (3 x groups); also sizeof the node's group, raft
 *                     core and WAL bookkeeping are printed as struct_bytes for reference
 *   idle_cpu_pct_node CPU time spent inside each node's calls (jr_node_tick/recv, measured with
 *                     the thread CPU clock around each call) during 10 s of wall time at idle,
 *                     as % of one core: max over the three nodes, and the mean
 *   idle_loop_cpu_pct the whole process over the same 10 s (the nodes, the bench's network and
 *                     its sleeping loop), % of one core
 *   idle_frames_per_s frames handed to the network per second at idle (all nodes)
 *   idle_bytes_per_s  their bytes
 *   pub_per_s         committed proposals per second with 1% of the groups active (each with
 *                     8 proposals of 128 bytes outstanding), run flat out for 3 s
 *   failover_ms       wall time from the moment the node leading the most groups stops (it is
 *                     no longer ticked, and frames to and from it are dropped) until every one
 *                     of its groups has a ready leader on a survivor; failover_groups is how
 *                     many; target: within two election timeouts (2000 ms)
 *
 * Usage: scale_bench [groups...]        (default: 1000 10000; e.g. scale_bench 100000 for the
 *        big one, which needs ~1.5 GB and a few minutes, mostly its elections and catch-up)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jetraft.h"
#include "node/node.h"

#define N 3
#define MS 1000000ull
#define ENTRY 128
#define WINDOW 8
#define BATCH 10000

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t process_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
        fclose(f);
    }
    return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The in-process network ----------------------------------------------------------------------*/

typedef struct frame {
    unsigned from, to;
    size_t len;
    uint8_t *data;
} frame;

typedef struct cluster cluster;

typedef struct hnode {
    cluster *c;
    unsigned idx;
    jr_node *node;
    jr_host host;
    uint64_t armed;
    int dead;
    uint64_t cpu; /* thread CPU spent inside this node's calls */
} hnode;

struct cluster {
    hnode n[N];
    frame *q;
    size_t qhead, qlen, qcap;
    uint64_t frames, bytes;
    uint64_t groups;
    uint64_t acked, failed;
    char dir[256];
};

static const char *names[N] = {"n0", "n1", "n2"};

static int name_idx(const char *s)
{
    for (unsigned i = 0; i < N; i++)
        if (strcmp(s, names[i]) == 0) return (int)i;
    return -1;
}

static int h_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt)
{
    hnode *hn = ctx;
    cluster *c = hn->c;
    int t = name_idx(to);
    if (t < 0) return -1;
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].len;
    c->frames++;
    c->bytes += len;
    if (c->qhead + c->qlen == c->qcap) {
        if (c->qhead) {
            memmove(c->q, c->q + c->qhead, c->qlen * sizeof *c->q);
            c->qhead = 0;
        } else {
            c->qcap = c->qcap ? c->qcap * 2 : 1024;
            c->q = realloc(c->q, c->qcap * sizeof *c->q);
        }
    }
    frame *f = &c->q[c->qhead + c->qlen++];
    f->from = hn->idx;
    f->to = (unsigned)t;
    f->len = len;
    f->data = malloc(len ? len : 1);
    size_t off = 0;
    for (int i = 0; i < iovcnt; i++) {
        memcpy(f->data + off, iov[i].base, iov[i].len);
        off += iov[i].len;
    }
    return 0;
}

static uint64_t h_now(void *ctx)
{
    (void)ctx;
    return wall_ns();
}

static void h_arm(void *ctx, uint64_t deadline)
{
    ((hnode *)ctx)->armed = deadline;
}

static void tick(hnode *hn)
{
    uint64_t t0 = thread_cpu_ns();
    hn->armed = UINT64_MAX;
    jr_node_tick(hn->node);
    hn->cpu += thread_cpu_ns() - t0;
}

/* Delivers the frames queued so far (not those sent meanwhile: the clock must get a look in);
 * ticks the nodes that are due. */
static void pump(cluster *c)
{
    for (size_t todo = c->qlen; todo && c->qlen; todo--) {
        frame f = c->q[c->qhead++];
        c->qlen--;
        if (!c->qlen) c->qhead = 0;
        hnode *dst = &c->n[f.to];
        if (!dst->dead && !c->n[f.from].dead) {
            uint64_t t0 = thread_cpu_ns();
            jr_node_recv(dst->node, names[f.from], f.data, f.len);
            dst->cpu += thread_cpu_ns() - t0;
        }
        free(f.data);
    }
    uint64_t now = wall_ns();
    for (unsigned i = 0; i < N; i++)
        if (!c->n[i].dead && c->n[i].armed <= now) tick(&c->n[i]);
}

/* Runs in real time for ns, sleeping until the next deadline when there is nothing to do. */
static void run_for(cluster *c, uint64_t ns)
{
    uint64_t end = wall_ns() + ns;
    for (;;) {
        pump(c);
        uint64_t now = wall_ns(), next = end;
        if (now >= end) return;
        if (c->qlen) continue;
        for (unsigned i = 0; i < N; i++)
            if (!c->n[i].dead && c->n[i].armed < next) next = c->n[i].armed;
        if (next > now) {
            uint64_t d = next - now;
            struct timespec ts = {(time_t)(d / 1000000000ull), (long)(d % 1000000000ull)};
            nanosleep(&ts, NULL);
        }
    }
}

/* Groups --------------------------------------------------------------------------------------*/

static void fsm_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    (void)ctx;
    (void)index;
    (void)data;
    (void)len;
}
static jr_fsm the_fsm = {JR_FSM_VERSION, NULL, fsm_apply, NULL, NULL};

static jr__raft *raft_of(cluster *c, unsigned i, uint64_t gid)
{
    if (c->n[i].dead) return NULL;
    jr_group *g = jr_node_group(c->n[i].node, gid);
    return g ? jr__group_raft(g) : NULL;
}

static int ready_leader(cluster *c, uint64_t gid)
{
    for (unsigned i = 0; i < N; i++) {
        jr__raft *r = raft_of(c, i, gid);
        if (r && jr__raft_role(r) == JR_LEADER && jr__raft_ready(r)) return (int)i;
    }
    return -1;
}

static int all_led(cluster *c, const uint8_t *only)
{
    for (uint64_t gid = 1; gid <= c->groups; gid++)
        if ((!only || only[gid]) && ready_leader(c, gid) < 0) return 0;
    return 1;
}

static int all_quiet(cluster *c)
{
    for (unsigned i = 0; i < N; i++)
        for (uint64_t gid = 1; gid <= c->groups; gid++) {
            jr__raft *r = raft_of(c, i, gid);
            if (r && !jr__raft_quiet(r)) return 0;
        }
    return 1;
}

/* Runs until pred holds (checked every 20 ms); returns the wall time it took, or 0 on timeout. */
static uint64_t run_until(cluster *c, int (*pred)(cluster *, const uint8_t *), const uint8_t *arg,
                          uint64_t max)
{
    uint64_t t0 = wall_ns();
    while (!pred(c, arg)) {
        if (wall_ns() - t0 > max) return 0;
        run_for(c, 20 * MS);
    }
    return wall_ns() - t0;
}

static int quiet_pred(cluster *c, const uint8_t *arg)
{
    (void)arg;
    return all_quiet(c);
}

static void on_ack(void *arg, int status, uint64_t index)
{
    cluster *c = arg;
    (void)index;
    if (status == 0)
        c->acked++;
    else
        c->failed++;
}

typedef struct pub {
    cluster *c;
    uint64_t gid;
    int outstanding;
} pub;

static void pub_ack(void *arg, int status, uint64_t index)
{
    pub *p = arg;
    on_ack(p->c, status, index);
    p->outstanding--;
}

static void open_cluster(cluster *c)
{
    snprintf(c->dir, sizeof c->dir, "%s/scale_bench.%d",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", c->dir, c->dir);
    if (system(cmd) != 0) exit(1);
    for (unsigned i = 0; i < N; i++) {
        hnode *hn = &c->n[i];
        hn->c = c;
        hn->idx = i;
        hn->armed = UINT64_MAX;
        hn->host = (jr_host){JR_HOST_VERSION, hn, h_send, h_now, h_arm, NULL};
        char wal[300];
        snprintf(wal, sizeof wal, "%s/%s", c->dir, names[i]);
        snprintf(cmd, sizeof cmd, "mkdir -p %s", wal);
        if (system(cmd) != 0) exit(1);
        jr_node_config cfg;
        jr_node_config_init(&cfg);
        cfg.name = names[i];
        cfg.peers = names;
        cfg.npeers = N;
        cfg.wal_dir = wal;
        cfg.host = &hn->host;
        cfg.seed = 1000 + i;
        int rc = jr_node_open(&cfg, &hn->node);
        if (rc) {
            fprintf(stderr, "jr_node_open: %s\n", jr_strerror(rc));
            exit(1);
        }
    }
}

static void close_cluster(cluster *c)
{
    /* Closing a node frees its groups one by one, and each takes itself off the node's ready
     * list by walking it (group.c): O(groups^2), minutes at 100,000. Above 2 BATCH groups the
     * bench leaves the nodes to the process's exit (their files are removed below). */
    if (c->groups <= 2 * BATCH)
        for (unsigned i = 0; i < N; i++) jr_node_close(c->n[i].node);
    for (size_t k = 0; k < c->qlen; k++) free(c->q[c->qhead + k].data);
    free(c->q);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", c->dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", c->dir);
}

/* stderr: where a configuration is (its phases can take a while with 100,000 groups). */
static void progress(cluster *c, const char *phase)
{
    uint64_t led = 0, quiet = 0;
    for (uint64_t gid = 1; gid <= c->groups; gid++) led += ready_leader(c, gid) >= 0;
    for (unsigned i = 0; i < N; i++)
        for (uint64_t gid = 1; gid <= c->groups; gid++) {
            jr__raft *r = raft_of(c, i, gid);
            quiet += r && jr__raft_quiet(r);
        }
    fprintf(stderr,
            "scale_bench %" PRIu64 " groups: %s: %" PRIu64 " led, %" PRIu64
            " replicas quiet, %" PRIu64 " frames so far\n",
            c->groups, phase, led, quiet, c->frames);
}

static void run_config(uint64_t groups)
{
    cluster *c = calloc(1, sizeof *c);
    c->groups = groups;
    open_cluster(c);
    run_for(c, 50 * MS);
    uint64_t rss0 = rss_bytes();

    /* create: all at once, or in batches of BATCH groups (each elected before the next) above
     * 2 * BATCH groups */
    uint64_t t0 = wall_ns(), create_ns = 0, elect_ns = 0;
    uint64_t batch = groups > 2 * BATCH ? BATCH : groups;
    for (uint64_t first = 1; first <= groups; first += batch) {
        uint64_t last = first + batch - 1 < groups ? first + batch - 1 : groups;
        uint64_t b0 = wall_ns();
        for (unsigned i = 0; i < N; i++)
            for (uint64_t gid = first; gid <= last; gid++) {
                jr_group_config gc;
                jr_group_config_init(&gc);
                gc.id = gid;
                gc.voters = names;
                gc.nvoters = N;
                gc.fsm = &the_fsm;
                jr_group *g;
                uint64_t c0 = thread_cpu_ns();
                int rc = jr_group_open(c->n[i].node, &gc, &g);
                c->n[i].cpu += thread_cpu_ns() - c0;
                if (rc) {
                    fprintf(stderr, "jr_group_open: %s\n", jr_strerror(rc));
                    exit(1);
                }
            }
        create_ns += wall_ns() - b0;
        c->groups = last; /* the predicates look at the groups created so far */
        uint64_t e = run_until(c, all_led, NULL, 120000 * MS);
        elect_ns = e ? elect_ns + e : 0;
        if (!e) break;
    }
    (void)t0;
    c->groups = groups;
    progress(c, "elected");

    /* one write per group, then idle until everything is quiet */
    uint8_t data[ENTRY] = {0};
    for (uint64_t gid = 1; gid <= groups; gid++) {
        int l = ready_leader(c, gid);
        if (l >= 0)
            jr_group_propose(jr_node_group(c->n[l].node, gid), data, sizeof data, on_ack, c);
        /* paced: 100,000 proposals at once on the one thread that runs all three nodes take
         * longer than an election timeout to replicate, and check-quorum deposes the leaders */
        if (gid % 2000 == 0) run_for(c, 50 * MS);
    }
    uint64_t quiet_ns = run_until(c, quiet_pred, NULL, 120000 * MS);
    progress(c, "quiet");
    run_for(c, 500 * MS);
    uint64_t rss1 = rss_bytes();

    /* idle: 10 s of wall time */
    uint64_t cpu0[N], f0 = c->frames, b0 = c->bytes, p0 = process_cpu_ns();
    for (unsigned i = 0; i < N; i++) cpu0[i] = c->n[i].cpu;
    uint64_t w0 = wall_ns();
    run_for(c, 10000 * MS);
    uint64_t wall = wall_ns() - w0, pcpu = process_cpu_ns() - p0;
    double cpu_max = 0, cpu_mean = 0;
    for (unsigned i = 0; i < N; i++) {
        double pct = 100.0 * (double)(c->n[i].cpu - cpu0[i]) / (double)wall;
        if (pct > cpu_max) cpu_max = pct;
        cpu_mean += pct / N;
    }
    double fps = (double)(c->frames - f0) * 1e9 / (double)wall;
    double bps = (double)(c->bytes - b0) * 1e9 / (double)wall;
    int still_quiet = all_quiet(c);

    /* publish: 1% of the groups active, flat out for 3 s */
    uint64_t nactive = groups / 100 ? groups / 100 : 1;
    pub *pubs = calloc(nactive, sizeof *pubs);
    for (uint64_t k = 0; k < nactive; k++) {
        pubs[k].c = c;
        pubs[k].gid = 1 + k * (groups / nactive);
    }
    c->acked = c->failed = 0;
    uint64_t pub_t0 = wall_ns(), pub_end = pub_t0 + 3000 * MS;
    while (wall_ns() < pub_end) {
        for (uint64_t k = 0; k < nactive; k++) {
            pub *p = &pubs[k];
            int l = ready_leader(c, p->gid);
            if (l < 0) continue;
            jr_group *g = jr_node_group(c->n[l].node, p->gid);
            while (p->outstanding < WINDOW) {
                if (jr_group_propose(g, data, sizeof data, pub_ack, p) != 0) break;
                p->outstanding++;
            }
        }
        pump(c);
    }
    uint64_t pub_wall = wall_ns() - pub_t0;
    double pub_rate = (double)c->acked * 1e9 / (double)pub_wall;
    /* let the outstanding proposals finish, then idle again */
    run_for(c, 300 * MS);
    free(pubs);
    run_until(c, quiet_pred, NULL, 60000 * MS);

    /* failover: the node leading the most groups stops */
    uint64_t led[N] = {0};
    for (uint64_t gid = 1; gid <= groups; gid++) {
        int l = ready_leader(c, gid);
        if (l >= 0) led[l]++;
    }
    unsigned dead = 0;
    for (unsigned i = 1; i < N; i++)
        if (led[i] > led[dead]) dead = i;
    uint8_t *lost = calloc(groups + 1, 1);
    for (uint64_t gid = 1; gid <= groups; gid++) lost[gid] = ready_leader(c, gid) == (int)dead;
    c->n[dead].dead = 1;
    t0 = wall_ns();
    while (!all_led(c, lost) && wall_ns() - t0 < 20000 * MS) run_for(c, 5 * MS);
    uint64_t failover_ns = all_led(c, lost) ? wall_ns() - t0 : 0;
    free(lost);

    printf("{\"bench\":\"scale\",\"nodes\":%d,\"replicas\":%d,\"groups\":%" PRIu64
           ",\"create_batch\":%" PRIu64
           ",\"create_ms\":%.1f,\"elect_ms\":%.1f,\"quiet_ms\":%.1f,\"bytes_per_replica\":%.0f,"
           "\"struct_bytes\":{\"group\":%zu,\"raft\":%zu},\"idle_cpu_pct_node_max\":%.3f,"
           "\"idle_cpu_pct_node_mean\":%.3f,\"idle_loop_cpu_pct\":%.3f,\"idle_frames_per_s\":%.1f,"
           "\"idle_bytes_per_s\":%.0f,\"idle_stayed_quiet\":%s,\"pub_active_groups\":%" PRIu64
           ",\"pub_per_s\":%.0f,\"pub_failed\":%" PRIu64 ",\"failover_groups\":%" PRIu64
           ",\"failover_ms\":%.1f,\"election_timeout_ms\":1000}\n",
           N, N, groups, batch, create_ns / 1e6, elect_ns / 1e6, quiet_ns / 1e6,
           (double)(rss1 - rss0) / (double)(N * groups), sizeof(struct jr_group), jr__raft_sizeof(),
           cpu_max, cpu_mean, 100.0 * (double)pcpu / (double)wall, fps, bps,
           still_quiet ? "true" : "false", nactive, pub_rate, c->failed, led[dead],
           failover_ns / 1e6);
    fflush(stdout);
    close_cluster(c);
    free(c);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        for (int i = 1; i < argc; i++) run_config(strtoull(argv[i], NULL, 10));
    } else {
        run_config(1000);
        run_config(10000);
    }
    return 0;
}
