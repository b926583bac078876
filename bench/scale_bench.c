/*
 * scale_bench — what many idle R3 groups or R3 streams cost (issue 5): 3 in-process nodes on one
 * thread, a real clock, an in-process network (frames are copied and delivered in order, no
 * delay) and the POSIX vfs in a fresh directory under /dev/shm (tmpfs: syncs are cheap and the
 * WAL's and stores' bytes are not process memory). Node defaults: election timeout 1000 ms,
 * heartbeat 100 ms.
 *
 * Usage: scale_bench [--streams | --consumers [--per-stream k]] [--storage file|memory]
 *                    [--batch n] [--heap-sites] [count...]
 *   raw groups (default; counts default 1000 10000), or with --streams R3 streams (counts
 *   default 1000 10000), or with --consumers durable R3 pull consumers (below), file storage by
 *   default. e.g. scale_bench 100000 for the big raw run
 *   (~1 GB, well under a minute on an idle machine). --batch n: raw groups are created n at a
 *   time, each batch elected before the next (default: all at once).
 *   SCALE_CAMP=n sets the nodes' campaign window (jr__live.camp_max; liveness.h "Paced
 *   campaigns"); SCALE_TRACE=1 also traces the failover phase (stderr, every 500 ms);
 *   SCALE_TRACE=2 prints a cheaper line every 50 ms of it instead.
 *
 * One JSON line per configuration:
 *   create_ms         raw: wall time of the jr_group_open calls (all groups, all three nodes);
 *                     streams: from the first jr_stream_add (at most 256 outstanding, sent to the
 *                     meta leader) until every one was acknowledged (created in the meta state)
 *   elect_ms          then until every group (stream) has a ready leader (with --batch, the sum
 *                     over the batches; create_batch says how many at a time). 100,000 groups
 *                     created in the same instant are 300,000 election timers due within a few
 *                     seconds on the one thread running all three nodes: the nodes' paced
 *                     campaigns (liveness.h) make that about one campaign per group
 *   (stderr)          phases that take long print a line every 5 s: groups led, candidates,
 *                     quiet replicas, the sum of the groups' terms, (pre-)vote requests sent,
 *                     heartbeat stalls, and per node the campaign rounds, timers queued, rounds
 *                     whose slot expired or was given back on a refusal
 *   quiet_ms          then until every replica is quiet (raw: after one write per group, proposed
 *                     2,000 groups per 50 ms; streams: as created — a stream's first leader logs
 *                     its config)
 *   bytes_per_replica RSS growth from before the groups were created to the idle cluster,
 *                     divided by the replicas (3 x groups); heap_bytes_per_replica is the same
 *                     for the bytes the nodes hold through their allocator (malloc_usable_size,
 *                     so allocator headers and free memory are excluded); struct_bytes gives
 *                     sizeof the per-replica structures for reference
 *   idle_cpu_pct_node CPU time spent inside each node's calls (jr_node_tick/recv, measured with
 *                     the thread CPU clock around each call) during 10 s of wall time at idle,
 *                     as % of one core: max over the three nodes, and the mean
 *   idle_loop_cpu_pct the whole process over the same 10 s (the nodes, the bench's network and
 *                     its sleeping loop), % of one core
 *   idle_frames_per_s frames handed to the network per second at idle (all nodes)
 *   idle_bytes_per_s  their bytes; idle_ticks_per_s the jr_node_tick calls per second (all nodes)
 *   pub_per_s         raw: committed proposals per second with 1% of the groups active (each
 *                     with 8 proposals of 128 bytes outstanding); streams: acknowledged
 *                     jr_publish calls (128-byte payloads, 8 outstanding per active stream, each
 *                     published on its leader's node), run flat out for 3 s (with no
 *                     per-node CPU accounting meanwhile: two syscalls per call)
 *   failover_ms       wall time from the moment the node leading the most groups stops (it is
 *                     no longer ticked, and frames to and from it are dropped) until every one
 *                     of its groups has a ready leader on a survivor; failover_groups is how
 *                     many; target: within two election timeouts (2000 ms)
 *   failover_cpu_ms   the survivors' CPU time inside jr_node_* calls over failover_ms: the work
 *                     of the takeover, steadier than the wall time on a shared machine
 *
 * --consumers: count durable R3 pull consumers (JetStream's defaults: deliver all, ack explicit)
 * on count / k streams of R3 (--per-stream k, default 100: consumer i on stream (i - 1) / k + 1).
 * A few streams, not one per consumer: the streams are created, elected and quiet before the
 * baseline, so what is measured is the consumers alone, and a stream's fan-out stays what
 * applications have (a per-stream walk over its consumers is not what this measures). Phases:
 * the consumers are added through the meta leader (create_ms, at most 256 outstanding), led
 * (elect_ms), quiet (quiet_ms), then measured idle as above (heap_bytes_per_replica: the
 * heap growth from the baseline divided by 3 x count; heap_parts: what of it the replica's own
 * blocks hold, per replica — crep (jr__crep), its stream name, the backoff copy, the pending
 * arrays (pend and its deadline tree), the leader's jr__clead and staging arrays averaged over
 * every replica, and the meta state's entry, assignment and config block, one copy per node;
 * the rest is the node's group, the Raft core, its log and the maps; leads, and how many
 * consumer timers are armed and leaders dirty when the idle phase starts, and how many timers
 * are still armed when it ends: timers_armed_after). Then each consumer
 * is used once — one message published to each stream, then per consumer a fetch of 1 and a
 * confirmed ack (use_ms, use_failed) — and the idle cluster is measured again (used_*: what
 * a consumer that has delivered keeps). failover_* as for streams, over the consumer groups.
 *
 * Streams with file storage each keep their active block file open, so 10,000 R3 streams in one
 * process want 30,000 descriptors; the bench's vfs (fdcap below) wraps the POSIX one and keeps
 * at most FD_CAP of them open, reopening a file when it is used again (reopens are reported).
 *
 * --heap-sites: streams and consumers (at each idle measurement); also prints to stderr, for the
 * idle cluster, the live heap bytes per replica by allocation site (the first caller outside the
 * allocator; slow: it walks the stack at every allocation, so only the memory numbers of such a
 * run mean anything).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <execinfo.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jetraft.h"
#include "js/js.h"
#include "node/node.h"

#define N 3
#define MS 1000000ull
#define ENTRY 128
#define WINDOW 8
#define BIG 20000 /* above: nodes are left to the process's exit (see close_cluster) */
#define ADD_WINDOW 256
#define FD_CAP 12000

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

/* The nodes' allocator: counts live bytes; with --heap-sites also by allocation site ------------*/

#define SITES 4096
#define DEPTH 6
typedef struct site {
    void *pc[DEPTH]; /* the allocation's callers, innermost first (from jr__malloc & co.) */
    int64_t bytes, count;
} site;

static struct {
    int64_t live;
    int sites_on;
    site sites[SITES]; /* open addressing by the callers */
    size_t nsites;
    /* live allocation -> site index, open addressing by pointer (only with sites_on) */
    void **keys;
    uint32_t *vals;
    size_t cap, used;
} heap;

static size_t ptr_slot(void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 20) & (cap - 1);
}

static void track_put(void *p, uint32_t s);

static void track_grow(void)
{
    void **ok = heap.keys;
    uint32_t *ov = heap.vals;
    size_t oc = heap.cap;
    heap.cap = oc ? oc * 2 : 1 << 20;
    heap.keys = calloc(heap.cap, sizeof *heap.keys);
    heap.vals = calloc(heap.cap, sizeof *heap.vals);
    heap.used = 0;
    for (size_t i = 0; i < oc; i++)
        if (ok[i] && ok[i] != (void *)1) track_put(ok[i], ov[i]);
    free(ok);
    free(ov);
}

static void track_put(void *p, uint32_t s)
{
    if ((heap.used + 1) * 2 > heap.cap) track_grow();
    size_t i = ptr_slot(p, heap.cap);
    while (heap.keys[i] && heap.keys[i] != (void *)1) i = (i + 1) & (heap.cap - 1);
    heap.keys[i] = p;
    heap.vals[i] = s;
    heap.used++;
}

/* Removes p; returns its site index or UINT32_MAX. */
static uint32_t track_take(void *p)
{
    if (!heap.cap) return UINT32_MAX;
    size_t i = ptr_slot(p, heap.cap);
    while (heap.keys[i]) {
        if (heap.keys[i] == p) {
            heap.keys[i] = (void *)1; /* tombstone: keeps later probes' chains */
            return heap.vals[i];
        }
        i = (i + 1) & (heap.cap - 1);
    }
    return UINT32_MAX;
}

/* The allocation's site: its DEPTH innermost callers above the allocator hook. */
static uint32_t site_of(void)
{
    void *bt[DEPTH + 3];
    memset(bt, 0, sizeof bt);
    int n = backtrace(bt, DEPTH + 3); /* site_of, account, a_malloc/a_realloc, then callers */
    void *pc[DEPTH] = {0};
    for (int k = 3; k < n; k++) pc[k - 3] = bt[k];
    uint64_t h = 0;
    for (int k = 0; k < DEPTH; k++) h = (h ^ (uint64_t)(uintptr_t)pc[k]) * 0x100000001b3ull;
    size_t i = (size_t)(h % SITES);
    for (size_t probe = 0; probe < SITES; probe++, i = (i + 1) % SITES) {
        if (!memcmp(heap.sites[i].pc, pc, sizeof pc)) return (uint32_t)i;
        if (!heap.sites[i].pc[0] && heap.nsites + 1 < SITES) {
            memcpy(heap.sites[i].pc, pc, sizeof pc);
            heap.nsites++;
            return (uint32_t)i;
        }
    }
    return 0;
}

static void account(void *p, int sign)
{
    int64_t sz = (int64_t)malloc_usable_size(p);
    heap.live += sign * sz;
    if (!heap.sites_on) return;
    uint32_t s = sign > 0 ? site_of() : track_take(p);
    if (s == UINT32_MAX) return;
    if (sign > 0) track_put(p, s);
    heap.sites[s].bytes += sign * sz;
    heap.sites[s].count += sign;
}

static void *a_malloc(void *ctx, size_t size)
{
    (void)ctx;
    void *p = malloc(size);
    if (p) account(p, 1);
    return p;
}

static void *a_realloc(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    if (ptr) account(ptr, -1);
    void *p = realloc(ptr, size);
    if (p)
        account(p, 1);
    else if (ptr)
        account(ptr, 1);
    return p;
}

static void a_free(void *ctx, void *ptr)
{
    (void)ctx;
    if (ptr) account(ptr, -1);
    free(ptr);
}

static const jr_allocator counting = {JR_ALLOCATOR_VERSION, NULL, a_malloc, a_realloc, a_free};

static int cmp_site(const void *a, const void *b)
{
    const site *x = a, *y = b;
    return (y->bytes > x->bytes) - (y->bytes < x->bytes);
}

/* Resolves pc to "function file:line" with addr2line (static functions included). */
static void resolve(const char *exe, void *pc, char *out, size_t cap)
{
    Dl_info di;
    uintptr_t off = (uintptr_t)pc;
    if (dladdr(pc, &di) && di.dli_fbase) off -= (uintptr_t)di.dli_fbase;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "addr2line -f -s -e %s 0x%lx | paste -sd' '", exe,
             (unsigned long)(off ? off - 1 : 0));
    snprintf(out, cap, "?");
    FILE *p = popen(cmd, "r");
    if (p) {
        if (!fgets(out, (int)cap, p)) snprintf(out, cap, "?");
        pclose(p);
        out[strcspn(out, "\n")] = 0;
    }
}

/* Prints the sites holding the most live bytes (per replica): the chain of callers, without
 * the allocator's own functions. */
static void print_sites(uint64_t replicas)
{
    site *s = malloc(sizeof heap.sites);
    memcpy(s, heap.sites, sizeof heap.sites);
    qsort(s, SITES, sizeof *s, cmp_site);
    char exe[512];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = 0;
    fprintf(stderr, "heap by allocation site (bytes per replica, live blocks per replica):\n");
    for (int k = 0; k < 50 && s[k].bytes > 0; k++) {
        char chain[1024] = "";
        size_t len = 0;
        int shown = 0;
        for (int d = 0; d < DEPTH && s[k].pc[d] && shown < 3; d++) {
            char w[256];
            resolve(exe, s[k].pc[d], w, sizeof w);
            if (!shown && (!strncmp(w, "jr__malloc", 10) || !strncmp(w, "jr__calloc", 10) ||
                           !strncmp(w, "jr__realloc", 11) || !strncmp(w, "jr__strdup", 10) ||
                           !strncmp(w, "jr__buf_", 8) || !strncmp(w, "grow ", 5)))
                continue;
            len += (size_t)snprintf(chain + len, sizeof chain - len, "%s%s", shown ? " < " : "", w);
            if (len >= sizeof chain) len = sizeof chain - 1;
            shown++;
        }
        fprintf(stderr, "  %8.1f B  %6.2f blocks  %s\n", (double)s[k].bytes / (double)replicas,
                (double)s[k].count / (double)replicas, chain);
    }
    free(s);
}

/* fdcap: the POSIX vfs with at most FD_CAP descriptors open (see the header comment) -----------*/

#define FD_BUCKETS 65536

struct jr_file {
    jr_file *in; /* the POSIX handle, NULL while closed */
    char *path;
    jr_file *prev, *next; /* LRU of open handles (front: most recent) */
    jr_file *hnext;       /* every handle, by path (renames follow their file) */
};

static struct {
    jr_vfs v;
    jr_vfs *p;
    jr_file lru; /* sentinel */
    jr_file *by_path[FD_BUCKETS];
    size_t open;
    uint64_t reopens;
} fdv;

static jr_file **bucket(const char *path)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *c = path; *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ull;
    return &fdv.by_path[h % FD_BUCKETS];
}

static void path_unlink(jr_file *f)
{
    for (jr_file **pp = bucket(f->path); *pp; pp = &(*pp)->hnext)
        if (*pp == f) {
            *pp = f->hnext;
            break;
        }
    f->hnext = NULL;
}

static void path_link(jr_file *f)
{
    jr_file **b = bucket(f->path);
    f->hnext = *b;
    *b = f;
}

static void lru_unlink(jr_file *f)
{
    f->prev->next = f->next;
    f->next->prev = f->prev;
    f->prev = f->next = NULL;
}

static void lru_front(jr_file *f)
{
    f->next = fdv.lru.next;
    f->prev = &fdv.lru;
    fdv.lru.next->prev = f;
    fdv.lru.next = f;
}

static void make_room(void)
{
    while (fdv.open >= FD_CAP) {
        jr_file *old = fdv.lru.prev;
        lru_unlink(old);
        fdv.p->close(fdv.p->ctx, old->in);
        old->in = NULL;
        fdv.open--;
    }
}

static int use(jr_file *f, jr_file **in)
{
    if (f->in) {
        lru_unlink(f);
        lru_front(f);
    } else {
        make_room();
        int rc = fdv.p->open(fdv.p->ctx, f->path, JR_O_READ, &f->in);
        if (rc) return rc;
        fdv.reopens++;
        fdv.open++;
        lru_front(f);
    }
    *in = f->in;
    return 0;
}

static int v_open(void *ctx, const char *path, int flags, jr_file **out)
{
    (void)ctx;
    make_room();
    jr_file *f = calloc(1, sizeof *f);
    f->path = strdup(path);
    int rc = fdv.p->open(fdv.p->ctx, path, flags, &f->in);
    if (rc) {
        free(f->path);
        free(f);
        return rc;
    }
    fdv.open++;
    lru_front(f);
    path_link(f);
    *out = f;
    return 0;
}

static int v_close(void *ctx, jr_file *f)
{
    (void)ctx;
    if (!f) return 0;
    int rc = 0;
    if (f->in) {
        lru_unlink(f);
        rc = fdv.p->close(fdv.p->ctx, f->in);
        fdv.open--;
    }
    path_unlink(f);
    free(f->path);
    free(f);
    return rc;
}

static int v_pread(void *ctx, jr_file *f, void *buf, size_t len, uint64_t off, size_t *nread)
{
    jr_file *in;
    int rc = use(f, &in);
    return rc ? rc : fdv.p->pread(ctx, in, buf, len, off, nread);
}

static int v_pwrite(void *ctx, jr_file *f, const void *buf, size_t len, uint64_t off)
{
    jr_file *in;
    int rc = use(f, &in);
    return rc ? rc : fdv.p->pwrite(ctx, in, buf, len, off);
}

static int v_sync(void *ctx, jr_file *f)
{
    jr_file *in;
    int rc = use(f, &in);
    return rc ? rc : fdv.p->sync(ctx, in);
}

static int v_size(void *ctx, jr_file *f, uint64_t *out)
{
    jr_file *in;
    int rc = use(f, &in);
    return rc ? rc : fdv.p->size(ctx, in, out);
}

static int v_truncate(void *ctx, jr_file *f, uint64_t size)
{
    jr_file *in;
    int rc = use(f, &in);
    return rc ? rc : fdv.p->truncate(ctx, in, size);
}

static int v_rename(void *ctx, const char *from, const char *to)
{
    int rc = fdv.p->rename(ctx, from, to);
    if (rc != 0) return rc;
    jr_file *moved = NULL;
    for (jr_file **pp = bucket(from); *pp;) {
        jr_file *f = *pp;
        if (strcmp(f->path, from) != 0) {
            pp = &f->hnext;
            continue;
        }
        *pp = f->hnext;
        f->hnext = moved;
        moved = f;
    }
    while (moved) {
        jr_file *f = moved;
        moved = f->hnext;
        free(f->path);
        f->path = strdup(to);
        path_link(f);
    }
    return 0;
}

static int v_remove(void *ctx, const char *path)
{
    return fdv.p->remove(ctx, path);
}

static int v_mkdir(void *ctx, const char *path)
{
    return fdv.p->mkdir(ctx, path);
}

static int v_list(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg)
{
    return fdv.p->list(ctx, dir, cb, arg);
}

static int v_sync_dir(void *ctx, const char *dir)
{
    return fdv.p->sync_dir(ctx, dir);
}

static jr_vfs *fdcap_vfs(void)
{
    if (!fdv.p) {
        fdv.p = jr_vfs_posix();
        fdv.lru.next = fdv.lru.prev = &fdv.lru;
        memset(fdv.by_path, 0, sizeof fdv.by_path); /* touched now, not in the RSS measured */
        fdv.v = (jr_vfs){.version = JR_VFS_VERSION,
                         .ctx = fdv.p->ctx,
                         .open = v_open,
                         .close = v_close,
                         .pread = v_pread,
                         .pwrite = v_pwrite,
                         .sync = v_sync,
                         .size = v_size,
                         .truncate = v_truncate,
                         .rename = v_rename,
                         .remove = v_remove,
                         .mkdir = v_mkdir,
                         .list = v_list,
                         .sync_dir = v_sync_dir};
    }
    return &fdv.v;
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
    uint64_t cpu;   /* thread CPU spent inside this node's calls */
    uint64_t ticks; /* jr_node_tick calls */
} hnode;

struct cluster {
    hnode n[N];
    frame *q;
    size_t qhead, qlen, qcap;
    uint64_t frames, bytes;
    int streams;    /* 1: stream mode */
    int consumers;  /* 1: consumer mode (streams too) */
    uint64_t *gids; /* the groups measured (raw ids, or the streams' groups) */
    uint64_t ngids;
    uint64_t cursor; /* all_led, all_quiet: where the last check stopped */
    uint64_t acked, failed;
    int last_err;
    char dir[256];
    int unmetered; /* the publish phase: no per-node CPU accounting (two syscalls a call) */
};

static const char *names[N] = {"n0", "n1", "n2"};

/* The thread's CPU clock for per-node accounting, or 0 while unmetered. */
static uint64_t meter(const cluster *c)
{
    return c->unmetered ? 0 : thread_cpu_ns();
}

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
    uint64_t t0 = meter(hn->c);
    hn->armed = UINT64_MAX;
    hn->ticks++;
    jr_node_tick(hn->node);
    hn->cpu += meter(hn->c) - t0;
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
            uint64_t t0 = meter(c);
            jr_node_recv(dst->node, names[f.from], f.data, f.len);
            dst->cpu += meter(c) - t0;
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

/* Every measured group (only[k] set, if only is given) has a ready leader. Checked from where
 * the last check stopped (a walk over 300,000 replicas every 20 ms would be a good part of the
 * thread's time), then once over all of them before saying yes. */
static int all_led(cluster *c, const uint8_t *only)
{
    for (; c->cursor < c->ngids; c->cursor++)
        if ((!only || only[c->cursor]) && ready_leader(c, c->gids[c->cursor]) < 0) return 0;
    for (uint64_t k = 0; k < c->ngids; k++)
        if ((!only || only[k]) && ready_leader(c, c->gids[k]) < 0) {
            c->cursor = k;
            return 0;
        }
    return 1;
}

static int group_quiet(cluster *c, uint64_t gid)
{
    for (unsigned i = 0; i < N; i++) {
        jr__raft *r = raft_of(c, i, gid);
        if (r && !jr__raft_quiet(r)) return 0;
    }
    return 1;
}

static int all_quiet(cluster *c)
{
    for (; c->cursor < c->ngids; c->cursor++)
        if (!group_quiet(c, c->gids[c->cursor])) return 0;
    for (uint64_t k = 0; k < c->ngids; k++)
        if (!group_quiet(c, c->gids[k])) {
            c->cursor = k;
            return 0;
        }
    return 1;
}

/* stderr, every 5 s of a long phase: where the cluster is. */
static void trace(cluster *c, uint64_t t0)
{
    uint64_t led = 0, cand = 0, quiet = 0, terms = 0, prevotes = 0, votes = 0, stalls = 0;
    for (uint64_t k = 0; k < c->ngids; k++) {
        led += ready_leader(c, c->gids[k]) >= 0;
        uint64_t t = 0;
        for (unsigned i = 0; i < N; i++) {
            jr__raft *r = raft_of(c, i, c->gids[k]);
            if (!r) continue;
            cand += jr__raft_role(r) == JR_CANDIDATE;
            quiet += jr__raft_quiet(r);
            if (jr__raft_term(r) > t) t = jr__raft_term(r);
        }
        terms += t;
    }
    for (unsigned i = 0; i < N; i++) {
        if (c->n[i].dead) continue;
        const jr__live_stats *ls = &c->n[i].node->live.stats;
        prevotes += ls->prevotes;
        votes += ls->votes;
        stalls += ls->stalls;
    }
    for (unsigned i = 0; i < N; i++) {
        if (c->n[i].dead) continue;
        const jr__live_stats *ls = &c->n[i].node->live.stats;
        fprintf(stderr,
                "    n%u: items sent %" PRIu64 " tomb_wakes %" PRIu64 " lost_wakes %" PRIu64
                " rounds %" PRIu64 " waits %" PRIu64 " wait_max %" PRIu64 " late %" PRIu64
                " expired %" PRIu64 " refused %" PRIu64 "\n",
                i, ls->hb_items_sent, ls->tomb_wakes, ls->lost_wakes, ls->rounds, ls->waits,
                ls->wait_max, ls->late_hb_resps, ls->expired, ls->refused);
    }
    fprintf(stderr,
            "  t+%.1fs: %" PRIu64 " led, %" PRIu64 " candidates, %" PRIu64
            " replicas quiet, terms %" PRIu64 ", pre-vote/vote requests %" PRIu64 "/%" PRIu64
            ", stalls %" PRIu64 ", %" PRIu64 " frames queued\n",
            (double)(wall_ns() - t0) / 1e9, led, cand, quiet, terms, prevotes, votes, stalls,
            (uint64_t)c->qlen);
}

/* SCALE_TRACE set: when a phase starts, on the clock `perf record -k CLOCK_MONOTONIC` stamps
 * samples with (perf report --time start,end then shows that phase alone). */
static void trace_mark(const char *phase, uint64_t t)
{
    if (getenv("SCALE_TRACE"))
        fprintf(stderr, "  %s from CLOCK_MONOTONIC %.3f s\n", phase, (double)t / 1e9);
}

/* SCALE_TRACE=2: one line every 50 ms of the failover phase, cheap enough not to change it: the
 * process's CPU share over the step, how many of the lost groups have a ready leader, and the
 * survivors' campaign counters. */
static void trace_step(cluster *c, uint64_t t0, const uint8_t *lost, uint64_t *cpu_prev,
                       uint64_t *wall_prev)
{
    uint64_t led = 0, cpu = process_cpu_ns(), now = wall_ns();
    double share = 100.0 * (double)(cpu - *cpu_prev) / (double)(now - *wall_prev);
    for (uint64_t k = 0; k < c->ngids; k++) led += lost[k] && ready_leader(c, c->gids[k]) >= 0;
    uint64_t rounds = 0, waits = 0, expired = 0, refused = 0, lost_peers = 0, stalls = 0;
    for (unsigned i = 0; i < N; i++) {
        if (c->n[i].dead) continue;
        const jr__live_stats *ls = &c->n[i].node->live.stats;
        rounds += ls->rounds;
        waits += ls->waits;
        expired += ls->expired;
        refused += ls->refused;
        lost_peers += ls->peers_lost;
        stalls += ls->stalls;
    }
    fprintf(stderr,
            "  t+%4.0fms cpu %3.0f%% led %6" PRIu64 " rounds %6" PRIu64 " waits %6" PRIu64
            " expired %6" PRIu64 " refused %6" PRIu64 " peers_lost %" PRIu64 " stalls %" PRIu64
            " queued %zu\n",
            (double)(now - t0) / 1e6, share, led, rounds, waits, expired, refused, lost_peers,
            stalls, (size_t)c->qlen);
    *cpu_prev = cpu;
    *wall_prev = now;
}

/* Runs until pred holds (checked every 20 ms); returns the wall time it took, or 0 on timeout. */
static uint64_t run_until(cluster *c, int (*pred)(cluster *, const uint8_t *), const uint8_t *arg,
                          uint64_t max)
{
    uint64_t t0 = wall_ns(), shown = t0;
    c->cursor = 0;
    while (!pred(c, arg)) {
        if (wall_ns() - t0 > max) return 0;
        run_for(c, 20 * MS);
        if (c->ngids > 1000 && wall_ns() - shown > 5000 * MS) {
            shown = wall_ns();
            trace(c, t0);
        }
    }
    return wall_ns() - t0;
}

static int quiet_pred(cluster *c, const uint8_t *arg)
{
    (void)arg;
    return all_quiet(c);
}

static void open_cluster(cluster *c, int storage)
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
        hn->host = (jr_host){
            .version = JR_HOST_VERSION, .ctx = hn, .send = h_send, .now = h_now, .arm = h_arm};
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
        cfg.alloc = &counting;
        if (c->streams) {
            cfg.streams = 1;
            cfg.request_timeout_ms = 30000;
            if (storage == JR_STORAGE_FILE) cfg.vfs = fdcap_vfs();
        }
        int rc = jr_node_open(&cfg, &hn->node);
        if (rc) {
            fprintf(stderr, "jr_node_open: %s\n", jr_strerror(rc));
            exit(1);
        }
        if (getenv("SCALE_CAMP")) hn->node->live.camp_max = (uint32_t)atoi(getenv("SCALE_CAMP"));
    }
}

static void close_cluster(cluster *c)
{
    /* Above BIG groups the bench leaves the nodes to the process's exit (their files are
     * removed below): closing 100,000 groups per node takes a while and measures nothing. */
    if (c->ngids <= BIG)
        for (unsigned i = 0; i < N; i++) jr_node_close(c->n[i].node);
    for (size_t k = 0; k < c->qlen; k++) free(c->q[c->qhead + k].data);
    free(c->q);
    free(c->gids);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", c->dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", c->dir);
}

/* stderr: where a configuration is (its phases can take a while with 100,000 groups). */
static void progress(cluster *c, const char *phase)
{
    uint64_t led = 0, quiet = 0;
    for (uint64_t k = 0; k < c->ngids; k++) led += ready_leader(c, c->gids[k]) >= 0;
    for (unsigned i = 0; i < N; i++)
        for (uint64_t k = 0; k < c->ngids; k++) {
            jr__raft *r = raft_of(c, i, c->gids[k]);
            quiet += r && jr__raft_quiet(r);
        }
    fprintf(stderr,
            "scale_bench %" PRIu64 " %s: %s: %" PRIu64 " led, %" PRIu64 " replicas quiet, %" PRIu64
            " frames so far\n",
            c->ngids,
            c->consumers ? "consumers"
            : c->streams ? "streams"
                         : "groups",
            phase, led, quiet, c->frames);
}

/* Idle and failover phases (both modes) --------------------------------------------------------*/

typedef struct idle_res {
    double cpu_max, cpu_mean, loop, fps, bps, tps;
    int still_quiet;
} idle_res;

/* 10 s of wall time at idle. */
static idle_res measure_idle(cluster *c)
{
    idle_res r;
    uint64_t cpu0[N], t0 = 0, f0 = c->frames, b0 = c->bytes, p0 = process_cpu_ns();
    for (unsigned i = 0; i < N; i++) {
        cpu0[i] = c->n[i].cpu;
        t0 += c->n[i].ticks;
    }
    uint64_t w0 = wall_ns();
    run_for(c, 10000 * MS);
    uint64_t wall = wall_ns() - w0, pcpu = process_cpu_ns() - p0, t1 = 0;
    r.cpu_max = r.cpu_mean = 0;
    for (unsigned i = 0; i < N; i++) {
        double pct = 100.0 * (double)(c->n[i].cpu - cpu0[i]) / (double)wall;
        if (pct > r.cpu_max) r.cpu_max = pct;
        r.cpu_mean += pct / N;
        t1 += c->n[i].ticks;
    }
    r.loop = 100.0 * (double)pcpu / (double)wall;
    r.fps = (double)(c->frames - f0) * 1e9 / (double)wall;
    r.bps = (double)(c->bytes - b0) * 1e9 / (double)wall;
    r.tps = (double)(t1 - t0) * 1e9 / (double)wall;
    c->cursor = 0;
    r.still_quiet = all_quiet(c);
    return r;
}

typedef struct failover_res {
    uint64_t ns;     /* until every group of the dead node has a ready leader (0: not in 20 s) */
    uint64_t groups; /* how many it led */
    uint64_t cpu_ns; /* the survivors' CPU time (in jr_node_* calls) over those ns */
} failover_res;

/* The node leading the most groups stops; how long until every one of its groups has a ready
 * leader on a survivor, and the work that took. */
static failover_res measure_failover(cluster *c)
{
    uint64_t led[N] = {0};
    for (uint64_t k = 0; k < c->ngids; k++) {
        int l = ready_leader(c, c->gids[k]);
        if (l >= 0) led[l]++;
    }
    unsigned dead = 0;
    for (unsigned i = 1; i < N; i++)
        if (led[i] > led[dead]) dead = i;
    uint8_t *lost = calloc(c->ngids, 1);
    for (uint64_t k = 0; k < c->ngids; k++) lost[k] = ready_leader(c, c->gids[k]) == (int)dead;
    c->n[dead].dead = 1;
    uint64_t cpu0 = 0;
    for (unsigned i = 0; i < N; i++) cpu0 += c->n[i].dead ? 0 : c->n[i].cpu;
    uint64_t t0 = wall_ns();
    c->cursor = 0;
    uint64_t shown = t0, cpu_prev = process_cpu_ns(), wall_prev = t0;
    const char *tr = getenv("SCALE_TRACE");
    int fine = tr && strcmp(tr, "2") == 0;
    trace_mark("failover", t0);
    while (!all_led(c, lost) && wall_ns() - t0 < 20000 * MS) {
        run_for(c, 5 * MS);
        if (fine && wall_ns() - shown >= 50 * MS) {
            shown = wall_ns();
            trace_step(c, t0, lost, &cpu_prev, &wall_prev);
        } else if (tr && !fine && wall_ns() - shown > 500 * MS) {
            shown = wall_ns();
            trace(c, t0);
        }
    }
    c->cursor = 0;
    failover_res r = {all_led(c, lost) ? wall_ns() - t0 : 0, led[dead], 0};
    for (unsigned i = 0; i < N; i++) r.cpu_ns += c->n[i].dead ? 0 : c->n[i].cpu;
    r.cpu_ns -= cpu0;
    free(lost);
    return r;
}

/* Raw groups ----------------------------------------------------------------------------------*/

static void fsm_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    (void)ctx;
    (void)index;
    (void)data;
    (void)len;
}
static jr_fsm the_fsm = {.version = JR_FSM_VERSION, .apply = fsm_apply};

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
    char subject[32];
    int outstanding;
} pub;

static void pub_ack(void *arg, int status, uint64_t index)
{
    pub *p = arg;
    on_ack(p->c, status, index);
    p->outstanding--;
}

static uint64_t create_batch; /* --batch: 0 = all groups at once */

static void run_groups(uint64_t groups)
{
    cluster *c = calloc(1, sizeof *c);
    c->gids = malloc(groups * sizeof *c->gids);
    open_cluster(c, 0);
    run_for(c, 50 * MS);
    uint64_t rss0 = rss_bytes();
    int64_t heap0 = heap.live;

    /* create: all at once, or (--batch n) in batches of n groups, each elected before the next */
    uint64_t create_ns = 0, elect_ns = 0;
    uint64_t batch = create_batch && create_batch < groups ? create_batch : groups;
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
                uint64_t c0 = meter(c);
                int rc = jr_group_open(c->n[i].node, &gc, &g);
                c->n[i].cpu += meter(c) - c0;
                if (rc) {
                    fprintf(stderr, "jr_group_open: %s\n", jr_strerror(rc));
                    exit(1);
                }
            }
        create_ns += wall_ns() - b0;
        for (uint64_t gid = first; gid <= last; gid++) c->gids[gid - 1] = gid;
        c->ngids = last; /* the predicates look at the groups created so far */
        uint64_t e = run_until(c, all_led, NULL, 120000 * MS);
        elect_ns = e ? elect_ns + e : 0;
        if (!e) break;
    }
    progress(c, "elected");

    /* one write per group, then idle until everything is quiet */
    uint8_t data[ENTRY] = {0};
    for (uint64_t gid = 1; gid <= c->ngids; gid++) {
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
    int64_t heap1 = heap.live;

    idle_res idle = measure_idle(c);

    /* publish: 1% of the groups active, flat out for 3 s */
    uint64_t nactive = groups / 100 ? groups / 100 : 1;
    pub *pubs = calloc(nactive, sizeof *pubs);
    for (uint64_t k = 0; k < nactive; k++) {
        pubs[k].c = c;
        pubs[k].gid = 1 + k * (groups / nactive);
    }
    c->acked = c->failed = 0;
    uint64_t pub_t0 = wall_ns(), pub_end = pub_t0 + 3000 * MS;
    trace_mark("publish", pub_t0);
    c->unmetered = 1;
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
    c->unmetered = 0;
    double pub_rate = (double)c->acked * 1e9 / (double)pub_wall;
    /* let the outstanding proposals finish, then idle again (pubs stays allocated until the
     * nodes are closed: a proposal of a deposed leader may complete only then) */
    for (int k = 0; k < 200; k++) {
        int out = 0;
        for (uint64_t j = 0; j < nactive && !out; j++) out = pubs[j].outstanding > 0;
        if (!out) break;
        run_for(c, 50 * MS);
    }
    run_until(c, quiet_pred, NULL, 60000 * MS);

    failover_res fo = measure_failover(c);

    uint64_t replicas = (uint64_t)N * groups;
    printf(
        "{\"bench\":\"scale\",\"kind\":\"groups\",\"nodes\":%d,\"replicas\":%d,\"groups\":%" PRIu64
        ",\"create_batch\":%" PRIu64
        ",\"create_ms\":%.1f,\"elect_ms\":%.1f,\"quiet_ms\":%.1f,\"bytes_per_replica\":%.0f,"
        "\"heap_bytes_per_replica\":%.0f,"
        "\"struct_bytes\":{\"group\":%zu,\"raft\":%zu},\"idle_cpu_pct_node_max\":%.3f,"
        "\"idle_cpu_pct_node_mean\":%.3f,\"idle_loop_cpu_pct\":%.3f,\"idle_frames_per_s\":%.1f,"
        "\"idle_bytes_per_s\":%.0f,\"idle_ticks_per_s\":%.1f,\"idle_stayed_quiet\":%s,"
        "\"pub_active_groups\":%" PRIu64 ",\"pub_per_s\":%.0f,\"pub_failed\":%" PRIu64
        ",\"failover_groups\":%" PRIu64 ",\"failover_ms\":%.1f,\"failover_cpu_ms\":%.1f,"
        "\"election_timeout_ms\":1000}\n",
        N, N, groups, batch, create_ns / 1e6, elect_ns / 1e6, quiet_ns / 1e6,
        (double)(rss1 - rss0) / (double)replicas, (double)(heap1 - heap0) / (double)replicas,
        sizeof(struct jr_group), jr__raft_sizeof(), idle.cpu_max, idle.cpu_mean, idle.loop,
        idle.fps, idle.bps, idle.tps, idle.still_quiet ? "true" : "false", nactive, pub_rate,
        c->failed, fo.groups, fo.ns / 1e6, fo.cpu_ns / 1e6);
    fflush(stdout);
    close_cluster(c);
    free(pubs);
    free(c);
}

/* Streams -------------------------------------------------------------------------------------*/

typedef struct adder {
    uint64_t issued, acked, failed;
    uint64_t *retry; /* stream numbers to add again */
    size_t nretry;
    int last_err;
    char last_msg[256];
} adder;

typedef struct add_req {
    adder *a;
    uint64_t no;
} add_req;

static void add_cb(void *arg, int status, const char *msg)
{
    add_req *r = arg;
    adder *a = r->a;
    if (status == 0) {
        a->acked++;
    } else {
        a->failed++;
        a->last_err = status;
        snprintf(a->last_msg, sizeof a->last_msg, "%s", msg ? msg : "");
        a->retry[a->nretry++] = r->no;
    }
    free(r);
}

static void stream_name(char *buf, size_t cap, uint64_t no)
{
    snprintf(buf, cap, "S%07" PRIu64, no);
}

/* The node that leads the meta group (-1: none yet). */
static int meta_leader(cluster *c)
{
    for (unsigned i = 0; i < N; i++) {
        int self;
        if (!c->n[i].dead && jr__mnode_leader(jr__js_of(c->n[i].node), &self) && self)
            return (int)i;
    }
    return -1;
}

static int meta_ready(cluster *c, const uint8_t *arg)
{
    (void)arg;
    if (meta_leader(c) < 0) return 0;
    for (unsigned i = 0; i < N; i++) {
        int self;
        if (!jr__mnode_leader(jr__js_of(c->n[i].node), &self) ||
            jr__js_of(c->n[i].node)->st.nservers < N)
            return 0;
    }
    return 1;
}

static void spub_ack(void *arg, int status, const jr_pub_ack *ack)
{
    pub *p = arg;
    (void)ack;
    if (status == 0) {
        p->c->acked++;
    } else {
        p->c->failed++;
        p->c->last_err = status;
    }
    p->outstanding--;
}

/* Adds `streams` R3 streams through the meta leader, at most ADD_WINDOW outstanding. */
static void add_streams(cluster *c, uint64_t streams, int storage, adder *a)
{
    a->retry = calloc(streams + 1, sizeof *a->retry);
    uint64_t next = 1, t_last = wall_ns();
    while (a->acked < streams) {
        int ml = meta_leader(c);
        while (ml >= 0 && a->issued - a->acked - a->failed < ADD_WINDOW &&
               (next <= streams || a->nretry)) {
            uint64_t no = a->nretry ? a->retry[--a->nretry] : next++;
            char name[32];
            stream_name(name, sizeof name, no);
            jr_stream_config sc;
            jr_stream_config_init(&sc);
            sc.name = name;
            sc.replicas = 3;
            sc.storage = storage;
            add_req *r = malloc(sizeof *r);
            *r = (add_req){a, no};
            uint64_t t0 = thread_cpu_ns();
            int rc = jr_stream_add(c->n[ml].node, &sc, add_cb, r);
            c->n[ml].cpu += thread_cpu_ns() - t0;
            if (rc) {
                fprintf(stderr, "jr_stream_add: %s\n", jr_strerror(rc));
                exit(1);
            }
            a->issued++;
        }
        run_for(c, 1 * MS);
        if (wall_ns() - t_last > 5000 * MS) {
            t_last = wall_ns();
            fprintf(stderr,
                    "scale_bench %" PRIu64 " streams: %" PRIu64 " added, %" PRIu64
                    " refused (last: %s %s)\n",
                    streams, a->acked, a->failed, a->failed ? jr_err_name(a->last_err) : "",
                    a->last_msg);
        }
    }
    free(a->retry);
}

static void run_streams(uint64_t streams, int storage, int sites)
{
    cluster *c = calloc(1, sizeof *c);
    c->streams = 1;
    open_cluster(c, storage);
    if (!run_until(c, meta_ready, NULL, 60000 * MS)) {
        fprintf(stderr, "scale_bench: no meta leader\n");
        exit(1);
    }
    run_for(c, 200 * MS);
    uint64_t rss0 = rss_bytes();
    int64_t heap0 = heap.live;
    heap.sites_on = sites;

    adder a;
    memset(&a, 0, sizeof a);
    uint64_t t0 = wall_ns();
    add_streams(c, streams, storage, &a);
    uint64_t create_ns = wall_ns() - t0;
    /* the groups to watch: every stream of the meta state (the fullest copy: the meta leader
     * may be changing right now) */
    const jr__meta_state *st = &jr__js_of(c->n[0].node)->st;
    for (unsigned i = 1; i < N; i++)
        if (jr__js_of(c->n[i].node)->st.nstreams > st->nstreams) st = &jr__js_of(c->n[i].node)->st;
    c->ngids = st->nstreams;
    c->gids = malloc(c->ngids * sizeof *c->gids);
    for (size_t k = 0; k < st->nstreams; k++) c->gids[k] = st->streams[k]->group;
    uint64_t elect_ns = run_until(c, all_led, NULL, 300000 * MS);
    progress(c, "elected");
    uint64_t quiet_ns = run_until(c, quiet_pred, NULL, 300000 * MS);
    progress(c, "quiet");
    run_for(c, 2500 * MS); /* replica timers that were due soon have run */
    uint64_t rss1 = rss_bytes();
    int64_t heap1 = heap.live;
    uint64_t replicas = (uint64_t)N * streams;
    if (sites) {
        print_sites(replicas);
        heap.sites_on = 0;
    }

    idle_res idle = measure_idle(c);

    /* publish: 1% of the streams active, each on its leader's node, flat out for 3 s */
    uint64_t nactive = streams / 100 ? streams / 100 : 1;
    pub *pubs = calloc(nactive, sizeof *pubs);
    for (uint64_t k = 0; k < nactive; k++) {
        uint64_t no = 1 + k * (streams / nactive);
        pubs[k].c = c;
        stream_name(pubs[k].subject, sizeof pubs[k].subject, no);
        const jr__meta_stream *ms = jr__meta_stream_find(st, pubs[k].subject);
        pubs[k].gid = ms ? ms->group : 0;
    }
    uint8_t data[ENTRY] = {0};
    c->acked = c->failed = 0;
    uint64_t pub_t0 = wall_ns(), pub_end = pub_t0 + 3000 * MS;
    trace_mark("publish", pub_t0);
    c->unmetered = 1;
    while (wall_ns() < pub_end) {
        for (uint64_t k = 0; k < nactive; k++) {
            pub *p = &pubs[k];
            int l = ready_leader(c, p->gid);
            if (l < 0) continue;
            while (p->outstanding < WINDOW) {
                uint64_t c0 = meter(c);
                int rc = jr_publish(c->n[l].node, p->subject, NULL, 0, data, sizeof data, NULL,
                                    spub_ack, p);
                c->n[l].cpu += meter(c) - c0;
                if (rc) break;
                p->outstanding++;
            }
        }
        pump(c);
    }
    uint64_t pub_wall = wall_ns() - pub_t0;
    c->unmetered = 0;
    double pub_rate = (double)c->acked * 1e9 / (double)pub_wall;
    uint64_t pub_failed = c->failed;
    int pub_err = c->last_err;
    /* let the outstanding publishes finish, then idle again */
    for (int k = 0; k < 200; k++) {
        int out = 0;
        for (uint64_t j = 0; j < nactive && !out; j++) out = pubs[j].outstanding > 0;
        if (!out) break;
        run_for(c, 50 * MS);
    }
    run_until(c, quiet_pred, NULL, 60000 * MS);

    failover_res fo = measure_failover(c);

    printf("{\"bench\":\"scale\",\"kind\":\"streams\",\"storage\":\"%s\",\"nodes\":%d,"
           "\"replicas\":%d,\"streams\":%" PRIu64 ",\"create_ms\":%.1f,\"create_refused\":%" PRIu64
           ",\"elect_ms\":%.1f,\"quiet_ms\":%.1f,\"bytes_per_replica\":%.0f,"
           "\"heap_bytes_per_replica\":%.0f,\"struct_bytes\":{\"group\":%zu,\"raft\":%zu,"
           "\"srep\":%zu},\"idle_cpu_pct_node_max\":%.3f,\"idle_cpu_pct_node_mean\":%.3f,"
           "\"idle_loop_cpu_pct\":%.3f,\"idle_frames_per_s\":%.1f,\"idle_bytes_per_s\":%.0f,"
           "\"idle_ticks_per_s\":%.1f,\"idle_stayed_quiet\":%s,\"pub_active_streams\":%" PRIu64
           ",\"pub_per_s\":%.0f,\"pub_failed\":%" PRIu64 ",\"pub_last_error\":\"%s\","
           "\"failover_streams\":%" PRIu64 ",\"failover_ms\":%.1f,\"failover_cpu_ms\":%.1f,"
           "\"fd_reopens\":%" PRIu64 ",\"election_timeout_ms\":1000}\n",
           storage == JR_STORAGE_FILE ? "file" : "memory", N, N, streams, create_ns / 1e6, a.failed,
           elect_ns / 1e6, quiet_ns / 1e6, (double)(rss1 - rss0) / (double)replicas,
           (double)(heap1 - heap0) / (double)replicas, sizeof(struct jr_group), jr__raft_sizeof(),
           sizeof(jr__srep), idle.cpu_max, idle.cpu_mean, idle.loop, idle.fps, idle.bps, idle.tps,
           idle.still_quiet ? "true" : "false", nactive, pub_rate, pub_failed,
           pub_failed ? jr_err_name(pub_err) : "", fo.groups, fo.ns / 1e6, fo.cpu_ns / 1e6,
           fdv.reopens);
    fflush(stdout);
    free(pubs);
    close_cluster(c);
    free(c);
}

/* Consumers -----------------------------------------------------------------------------------*/

static void cadd_cb(void *arg, int status, const char *msg, const char *name)
{
    (void)name;
    add_cb(arg, status, msg); /* an add_req, as for streams */
}

static void consumer_name(char *buf, size_t cap, uint64_t no)
{
    snprintf(buf, cap, "C%07" PRIu64, no);
}

/* Adds `consumers` durable R3 consumers through the meta leader, consumer k on stream
 * 1 + (k - 1) / per_stream, at most ADD_WINDOW outstanding. */
static void add_consumers(cluster *c, uint64_t consumers, uint64_t per_stream, adder *a)
{
    a->retry = calloc(consumers + 1, sizeof *a->retry);
    uint64_t next = 1, t_last = wall_ns();
    while (a->acked < consumers) {
        int ml = meta_leader(c);
        while (ml >= 0 && a->issued - a->acked - a->failed < ADD_WINDOW &&
               (next <= consumers || a->nretry)) {
            uint64_t no = a->nretry ? a->retry[--a->nretry] : next++;
            char sname[32], cname[32];
            stream_name(sname, sizeof sname, 1 + (no - 1) / per_stream);
            consumer_name(cname, sizeof cname, no);
            jr_consumer_config cc;
            jr_consumer_config_init(&cc);
            cc.durable_name = cname;
            cc.num_replicas = 3;
            add_req *r = malloc(sizeof *r);
            *r = (add_req){a, no};
            uint64_t t0 = thread_cpu_ns();
            int rc = jr_consumer_add(c->n[ml].node, sname, &cc, cadd_cb, r);
            c->n[ml].cpu += thread_cpu_ns() - t0;
            if (rc) {
                fprintf(stderr, "jr_consumer_add: %s\n", jr_strerror(rc));
                exit(1);
            }
            a->issued++;
        }
        run_for(c, 1 * MS);
        if (wall_ns() - t_last > 5000 * MS) {
            t_last = wall_ns();
            fprintf(stderr,
                    "scale_bench %" PRIu64 " consumers: %" PRIu64 " added, %" PRIu64
                    " refused (last: %s %s)\n",
                    consumers, a->acked, a->failed, a->failed ? jr_err_name(a->last_err) : "",
                    a->last_msg);
        }
    }
    free(a->retry);
}

/* The heap bytes per consumer replica by structure (sizes as the allocator reports them): the
 * node's group and Raft core are in heap_bytes_per_replica too, not itemised here. */
typedef struct cmem {
    double crep, backoff, pend, lead, cfg_block, casgn, mcons, cstream_name;
} cmem;

static void consumer_parts(cluster *c, cmem *m, uint64_t *leads)
{
    memset(m, 0, sizeof *m);
    *leads = 0;
    uint64_t reps = 0, cons = 0;
    for (unsigned i = 0; i < N; i++) {
        jr__js *js = jr__js_of(c->n[i].node);
        for (jr__crep *r = js->crep_list; r; r = r->next) {
            reps++;
            m->crep += (double)malloc_usable_size(r);
            m->cstream_name += (double)malloc_usable_size(r->stream);
            if (r->st.backoff) m->backoff += (double)malloc_usable_size(r->st.backoff);
            if (r->st.pend) m->pend += (double)malloc_usable_size(r->st.pend);
            if (r->st.tree) m->pend += (double)malloc_usable_size(r->st.tree);
            if (r->lead) {
                (*leads)++;
                m->lead += (double)malloc_usable_size(r->lead);
                if (r->lead->srec) m->lead += (double)malloc_usable_size(r->lead->srec);
                if (r->lead->swait) m->lead += (double)malloc_usable_size(r->lead->swait);
            }
        }
        const jr__meta_state *st = &js->st;
        for (size_t k = 0; k < st->nstreams; k++)
            for (size_t j = 0; j < st->streams[k]->nconsumers; j++) {
                const jr__meta_consumer *mc = st->streams[k]->consumers[j];
                cons++;
                m->mcons += (double)malloc_usable_size((void *)mc);
                m->casgn += (double)malloc_usable_size(mc->asgn);
                m->cfg_block += (double)malloc_usable_size(mc->cfg);
            }
    }
    double d = reps ? (double)reps : 1;
    m->crep /= d;
    m->cstream_name /= d;
    m->backoff /= d;
    m->pend /= d;
    m->lead /= d;
    /* the meta state's entries: one copy per node, i.e. per replica of an R3 consumer */
    d = cons ? (double)cons : 1;
    m->mcons /= d;
    m->casgn /= d;
    m->cfg_block /= d;
}

/* The use phase: one message per stream, then each consumer fetches it and acks it
 * (confirmed), at most ADD_WINDOW consumers at a time. */
typedef struct user {
    cluster *c;
    uint64_t done, failed, inflight;
    int last_err;
} user;

typedef struct use_req {
    user *u;
    jr_node *node;
    int acked; /* the ack was sent (its callback finishes the consumer) */
} use_req;

static void use_ack_cb(void *arg, int status, const char *msg)
{
    use_req *q = arg;
    (void)msg;
    if (status) {
        q->u->failed++;
        q->u->last_err = status;
    }
    q->u->done++;
    q->u->inflight--;
    free(q);
}

static void use_fetch_cb(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                         const jr_fetch_end *end)
{
    use_req *q = arg;
    (void)msg;
    if (status == 0 && m) {
        int rc = jr_consumer_ack(q->node, m->ack_token, JR_ACK_ACK, 0, NULL, use_ack_cb, q);
        if (rc == 0) q->acked = 1;
        return;
    }
    (void)end;
    if (q->acked) return; /* the end of the fetch; the ack's callback finishes */
    q->u->failed++;
    q->u->last_err = status ? status : JR_ENOTFOUND;
    q->u->done++;
    q->u->inflight--;
    free(q);
}

static void use_consumers(cluster *c, uint64_t consumers, uint64_t per_stream, uint64_t nstreams,
                          user *u)
{
    const jr__meta_state *st = &jr__js_of(c->n[0].node)->st;
    pub *pubs = calloc(nstreams, sizeof *pubs);
    uint8_t data[ENTRY] = {0};
    c->acked = c->failed = 0;
    for (uint64_t k = 0; k < nstreams; k++) {
        pubs[k].c = c;
        stream_name(pubs[k].subject, sizeof pubs[k].subject, k + 1);
        const jr__meta_stream *ms = jr__meta_stream_find(st, pubs[k].subject);
        int l = ms ? ready_leader(c, ms->group) : -1;
        if (l < 0) l = 0;
        pubs[k].outstanding = 1;
        if (jr_publish(c->n[l].node, pubs[k].subject, NULL, 0, data, sizeof data, NULL, spub_ack,
                       &pubs[k]) != 0)
            exit(1);
    }
    while (c->acked + c->failed < nstreams) run_for(c, 1 * MS);
    free(pubs);
    memset(u, 0, sizeof *u);
    u->c = c;
    uint64_t next = 1;
    while (u->done < consumers) {
        while (next <= consumers && u->inflight < ADD_WINDOW) {
            char sname[32], cname[32];
            stream_name(sname, sizeof sname, 1 + (next - 1) / per_stream);
            consumer_name(cname, sizeof cname, next);
            const jr__meta_stream *ms = jr__meta_stream_find(st, sname);
            const jr__meta_consumer *mc = ms ? jr__meta_consumer_find(ms, cname) : NULL;
            int l = mc ? ready_leader(c, mc->group) : -1;
            use_req *q = calloc(1, sizeof *q);
            q->u = u;
            q->node = c->n[l < 0 ? 0 : l].node;
            jr_fetch_opts fo;
            jr_fetch_opts_init(&fo);
            fo.batch = 1;
            fo.expires_ns = 5000 * (int64_t)MS;
            uint64_t t0 = thread_cpu_ns();
            int rc = jr_consumer_fetch(q->node, sname, cname, &fo, use_fetch_cb, q);
            c->n[l < 0 ? 0 : l].cpu += thread_cpu_ns() - t0;
            if (rc) {
                fprintf(stderr, "jr_consumer_fetch: %s\n", jr_strerror(rc));
                exit(1);
            }
            u->inflight++;
            next++;
        }
        run_for(c, 1 * MS);
    }
}

/* What an idle cluster of consumers costs: memory per replica, what holds it, and 10 s of idle. */
typedef struct cidle {
    double heap, rss; /* growth per consumer replica since the baseline */
    cmem parts;
    uint64_t leads, armed, dirty, quiet_ms;
    uint64_t armed_after; /* consumer timers still armed after the 10 s */
    idle_res idle;
} cidle;

static void measure_consumers(cluster *c, uint64_t rss0, int64_t heap0, int sites, cidle *out)
{
    uint64_t replicas = (uint64_t)N * c->ngids;
    out->rss = (double)(rss_bytes() - rss0) / (double)replicas;
    out->heap = (double)(heap.live - heap0) / (double)replicas;
    if (sites) print_sites(replicas);
    consumer_parts(c, &out->parts, &out->leads);
    out->armed = out->dirty = 0;
    for (unsigned i = 0; i < N; i++) {
        jr__js *js = jr__js_of(c->n[i].node);
        for (jr__crep *r = js->crep_list; r; r = r->next) out->armed += r->timer.t.slot != SIZE_MAX;
        for (jr__crep *r = js->cdirty; r; r = r->dirty_next) out->dirty++;
    }
    out->idle = measure_idle(c);
    out->armed_after = 0;
    for (unsigned i = 0; i < N; i++)
        for (jr__crep *r = jr__js_of(c->n[i].node)->crep_list; r; r = r->next)
            out->armed_after += r->timer.t.slot != SIZE_MAX;
}

static void print_cidle(const char *prefix, const cidle *m)
{
    const cmem *p = &m->parts;
    printf(",\"%squiet_ms\":%" PRIu64 ",\"%sbytes_per_replica\":%.0f,"
           "\"%sheap_bytes_per_replica\":%.0f,\"%sheap_parts\":{\"crep\":%.0f,"
           "\"stream_name\":%.0f,\"backoff\":%.0f,\"pending\":%.0f,\"lead\":%.0f,"
           "\"meta_consumer\":%.0f,\"meta_casgn\":%.0f,\"cfg\":%.0f},\"%sleads\":%" PRIu64
           ",\"%stimers_armed\":%" PRIu64 ",\"%stimers_armed_after\":%" PRIu64
           ",\"%sdirty\":%" PRIu64
           ",\"%sidle_cpu_pct_node_max\":%.3f,\"%sidle_cpu_pct_node_mean\":%.3f,"
           "\"%sidle_loop_cpu_pct\":%.3f,\"%sidle_frames_per_s\":%.1f,\"%sidle_bytes_per_s\":%.0f,"
           "\"%sidle_ticks_per_s\":%.1f,\"%sidle_stayed_quiet\":%s",
           prefix, m->quiet_ms, prefix, m->rss, prefix, m->heap, prefix, p->crep, p->cstream_name,
           p->backoff, p->pend, p->lead, p->mcons, p->casgn, p->cfg_block, prefix, m->leads, prefix,
           m->armed, prefix, m->armed_after, prefix, m->dirty, prefix, m->idle.cpu_max, prefix,
           m->idle.cpu_mean, prefix, m->idle.loop, prefix, m->idle.fps, prefix, m->idle.bps, prefix,
           m->idle.tps, prefix, m->idle.still_quiet ? "true" : "false");
}

static void run_consumers(uint64_t consumers, uint64_t per_stream, int storage, int sites)
{
    cluster *c = calloc(1, sizeof *c);
    c->streams = 1;
    c->consumers = 1;
    open_cluster(c, storage);
    if (!run_until(c, meta_ready, NULL, 60000 * MS)) {
        fprintf(stderr, "scale_bench: no meta leader\n");
        exit(1);
    }
    uint64_t nstreams = (consumers + per_stream - 1) / per_stream;
    adder sa;
    memset(&sa, 0, sizeof sa);
    add_streams(c, nstreams, storage, &sa);
    /* the streams elected and quiet before the baseline: only the consumers are measured */
    const jr__meta_state *st = &jr__js_of(c->n[0].node)->st;
    for (unsigned i = 1; i < N; i++)
        if (jr__js_of(c->n[i].node)->st.nstreams > st->nstreams) st = &jr__js_of(c->n[i].node)->st;
    c->ngids = st->nstreams;
    c->gids = malloc(c->ngids * sizeof *c->gids);
    for (size_t k = 0; k < st->nstreams; k++) c->gids[k] = st->streams[k]->group;
    if (!run_until(c, all_led, NULL, 300000 * MS) || !run_until(c, quiet_pred, NULL, 300000 * MS)) {
        fprintf(stderr, "scale_bench: streams not led and quiet\n");
        exit(1);
    }
    run_for(c, 2500 * MS);
    free(c->gids);
    c->gids = NULL;
    c->ngids = 0;
    uint64_t rss0 = rss_bytes();
    int64_t heap0 = heap.live;
    heap.sites_on = sites;

    adder a;
    memset(&a, 0, sizeof a);
    uint64_t t0 = wall_ns();
    add_consumers(c, consumers, per_stream, &a);
    uint64_t create_ns = wall_ns() - t0;
    /* the groups to watch: every consumer of the fullest meta state */
    st = &jr__js_of(c->n[0].node)->st;
    for (unsigned i = 1; i < N; i++)
        if (jr__js_of(c->n[i].node)->st.nconsumers > st->nconsumers)
            st = &jr__js_of(c->n[i].node)->st;
    c->gids = malloc(st->nconsumers * sizeof *c->gids);
    for (size_t k = 0; k < st->nstreams; k++)
        for (size_t j = 0; j < st->streams[k]->nconsumers; j++)
            c->gids[c->ngids++] = st->streams[k]->consumers[j]->group;
    uint64_t elect_ns = run_until(c, all_led, NULL, 300000 * MS);
    progress(c, "elected");
    cidle fresh, used;
    fresh.quiet_ms = run_until(c, quiet_pred, NULL, 300000 * MS) / MS;
    progress(c, "quiet");
    run_for(c, 2500 * MS);
    measure_consumers(c, rss0, heap0, sites, &fresh);

    /* used: each consumer delivered one message, acknowledged */
    user u;
    uint64_t use_t0 = wall_ns();
    use_consumers(c, consumers, per_stream, nstreams, &u);
    uint64_t use_ns = wall_ns() - use_t0;
    used.quiet_ms = run_until(c, quiet_pred, NULL, 300000 * MS) / MS;
    progress(c, "used, quiet");
    run_for(c, 2500 * MS);
    measure_consumers(c, rss0, heap0, sites, &used);
    heap.sites_on = 0;

    failover_res fo = measure_failover(c);

    printf("{\"bench\":\"scale\",\"kind\":\"consumers\",\"storage\":\"%s\",\"nodes\":%d,"
           "\"replicas\":%d,\"consumers\":%" PRIu64 ",\"streams\":%" PRIu64
           ",\"create_ms\":%.1f,\"create_refused\":%" PRIu64 ",\"elect_ms\":%.1f",
           storage == JR_STORAGE_FILE ? "file" : "memory", N, N, consumers, nstreams,
           create_ns / 1e6, a.failed, elect_ns / 1e6);
    print_cidle("", &fresh);
    printf(",\"use_ms\":%.1f,\"use_failed\":%" PRIu64 ",\"use_last_error\":\"%s\"", use_ns / 1e6,
           u.failed, u.failed ? jr_err_name(u.last_err) : "");
    print_cidle("used_", &used);
    printf(",\"struct_bytes\":{\"group\":%zu,\"raft\":%zu,\"crep\":%zu,\"cstate\":%zu,"
           "\"clead\":%zu},\"failover_consumers\":%" PRIu64
           ",\"failover_ms\":%.1f,\"failover_cpu_ms\":%.1f,\"election_timeout_ms\":1000}\n",
           sizeof(struct jr_group), jr__raft_sizeof(), sizeof(jr__crep), sizeof(jr__cstate),
           sizeof(jr__clead), fo.groups, fo.ns / 1e6, fo.cpu_ns / 1e6);
    fflush(stdout);
    close_cluster(c);
    free(c);
}

int main(int argc, char **argv)
{
    int streams = 0, consumers = 0, sites = 0, storage = JR_STORAGE_FILE, ncounts = 0;
    uint64_t counts[16], per_stream = 100;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--streams")) {
            streams = 1;
        } else if (!strcmp(argv[i], "--consumers")) {
            consumers = 1;
        } else if (!strcmp(argv[i], "--per-stream") && i + 1 < argc) {
            per_stream = strtoull(argv[++i], NULL, 10);
            if (!per_stream) per_stream = 1;
        } else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            create_batch = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--heap-sites")) {
            sites = 1;
        } else if (!strcmp(argv[i], "--storage") && i + 1 < argc) {
            storage = !strcmp(argv[++i], "memory") ? JR_STORAGE_MEMORY : JR_STORAGE_FILE;
        } else if (argv[i][0] >= '1' && argv[i][0] <= '9' && ncounts < 16) {
            counts[ncounts++] = strtoull(argv[i], NULL, 10);
        } else {
            fprintf(stderr,
                    "usage: %s [--streams | --consumers [--per-stream k]] [--storage "
                    "file|memory] [--batch n] [--heap-sites] [count...]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!ncounts) {
        counts[ncounts++] = 1000;
        counts[ncounts++] = 10000;
    }
    for (int k = 0; k < ncounts; k++) {
        if (consumers)
            run_consumers(counts[k], per_stream, storage, sites);
        else if (streams)
            run_streams(counts[k], storage, sites);
        else
            run_groups(counts[k]);
    }
    return 0;
}
