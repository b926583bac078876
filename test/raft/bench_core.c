/*
 * bench_core — throughput of the pure Raft core alone: N in-process groups wired by copying
 * message queues (what a node's encoder would cost at least), a "disk" that is durable at once,
 * and the ready cycle of raft.h. The leader proposes batches of 128-byte entries; the node
 * snapshots every 65536 applied entries (trailing 1024) so memory stays bounded.
 *
 * Prints one JSON line per configuration. Not a test. Usage: raft_core_bench [entries]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raft/raft.h"

#define MAXN 5
#define ENTRY 128
#define BATCH 256

typedef struct qmsg {
    jr__msg m;
    size_t ents, data; /* offsets into the queue's arenas */
} qmsg;

typedef struct queue {
    qmsg *msgs;
    size_t n, cap;
    jr__entry *ents;
    size_t ne, ecap;
    uint8_t *bytes;
    size_t nb, bcap;
} queue;

typedef struct bnode {
    jr__raft *r;
    int notified;
    queue in[2]; /* in[cur] receives; the other is being delivered */
    int cur;
    queue held; /* DURABLE messages until the flush */
    uint64_t applied, snap;
} bnode;

static bnode nodes[MAXN];
static int nn;
static uint64_t now_ns = 1;
static uint64_t allocs;

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    p = realloc(p, c * size);
    if (!p) abort();
    *cap = c;
    return p;
}

static void push(queue *q, const jr__msg *m)
{
    q->msgs = grow(q->msgs, &q->cap, q->n + 1, sizeof *q->msgs);
    qmsg *x = &q->msgs[q->n++];
    x->m = *m;
    if (m->type == JR__MSG_APPEND) {
        uint32_t n = m->u.append.n;
        q->ents = grow(q->ents, &q->ecap, q->ne + n, sizeof *q->ents);
        x->ents = q->ne;
        size_t bytes = 0;
        for (uint32_t i = 0; i < n; i++) bytes += m->u.append.entries[i].len;
        q->bytes = grow(q->bytes, &q->bcap, q->nb + bytes, 1);
        x->data = q->nb;
        for (uint32_t i = 0; i < n; i++) {
            jr__entry e = m->u.append.entries[i];
            memcpy(q->bytes + q->nb, e.data, e.len);
            e.data = NULL;
            q->ents[q->ne++] = e;
            q->nb += e.len;
        }
    } else if (m->type == JR__MSG_SNAP) {
        abort(); /* no follower falls behind the trailing entries here */
    }
}

static void io_send(void *ctx, jr__raft *r, const jr__msg *m)
{
    bnode *self = ctx;
    (void)r;
    if (m->flags & JR__MF_DURABLE)
        push(&self->held, m);
    else
        push(&nodes[m->to - 1].in[nodes[m->to - 1].cur], m);
}

static void io_notify(void *ctx, jr__raft *r)
{
    (void)r;
    ((bnode *)ctx)->notified = 1;
}

/* Moves the held messages to their destinations (copying again: simple, and cheap enough). */
static void release(bnode *b)
{
    queue *q = &b->held;
    for (size_t i = 0; i < q->n; i++) {
        jr__msg m = q->msgs[i].m;
        if (m.type == JR__MSG_APPEND) abort();
        push(&nodes[m.to - 1].in[nodes[m.to - 1].cur], &m);
    }
    q->n = q->ne = q->nb = 0;
}

static void flush(bnode *b)
{
    while (b->notified) {
        b->notified = 0;
        jr__raft_flush(b->r, now_ns);
        uint64_t from, to;
        jr__hardstate hs;
        jr__raft_unpersisted(b->r, &from, &to, &hs); /* the "disk" is durable at once */
        jr__raft_persisted(b->r, now_ns, to, 1);
        release(b);
        uint64_t c = jr__raft_commit_index(b->r);
        if (c > b->applied) {
            b->applied = c;
            jr__raft_applied(b->r, c);
            if (c - b->snap >= 65536) {
                jr__raft_snapshot_taken(b->r, c, 1024);
                b->snap = c;
            }
        }
        jr__raft_ready_done(b->r);
    }
}

static int deliver_all(void)
{
    int any = 0;
    for (int i = 0; i < nn; i++) {
        bnode *b = &nodes[i];
        queue *q = &b->in[b->cur];
        if (!q->n) continue;
        b->cur ^= 1;
        for (size_t k = 0; k < q->n; k++) {
            jr__msg m = q->msgs[k].m;
            if (m.type == JR__MSG_APPEND) {
                jr__entry *e = q->ents + q->msgs[k].ents;
                size_t off = q->msgs[k].data;
                for (uint32_t j = 0; j < m.u.append.n; j++) {
                    e[j].data = q->bytes + off;
                    off += e[j].len;
                }
                m.u.append.entries = e;
            }
            jr__raft_step(b->r, now_ns, &m);
            flush(b);
        }
        q->n = q->ne = q->nb = 0;
        any = 1;
    }
    return any;
}

static void *a_malloc(void *ctx, size_t n)
{
    (void)ctx;
    allocs++;
    return malloc(n);
}
static void *a_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    allocs++;
    return realloc(p, n);
}
static void a_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}
static const jr_allocator counting = {JR_ALLOCATOR_VERSION, NULL, a_malloc, a_realloc, a_free};

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run(int n, uint64_t total)
{
    nn = n;
    memset(nodes, 0, sizeof nodes);
    jr__conf c = {0};
    for (int i = 0; i < n; i++) c.m[c.n++] = (jr__member){(jr__id)i + 1, 1};
    for (int i = 0; i < n; i++) {
        jr__raft_config cfg = {.group = 1,
                               .self = (jr__id)i + 1,
                               .alloc = &counting,
                               .election_timeout = 1000000000ULL,
                               .seed = 42};
        jr__raft_io io = {&nodes[i], io_send, io_notify, NULL, NULL, NULL};
        if (jr__raft_new(&cfg, &io, &nodes[i].r) || jr__raft_bootstrap(nodes[i].r, &c) ||
            jr__raft_start(nodes[i].r, now_ns))
            abort();
        flush(&nodes[i]);
    }
    now_ns = jr__raft_deadline(nodes[0].r);
    jr__raft_tick(nodes[0].r, now_ns);
    flush(&nodes[0]);
    while (deliver_all()) {
    }
    if (!jr__raft_ready(nodes[0].r)) abort();
    uint8_t payload[ENTRY];
    memset(payload, 'x', sizeof payload);
    uint64_t start = jr__raft_commit_index(nodes[0].r);
    uint64_t warm = total / 10, a0 = 0;
    double t0 = 0;
    for (uint64_t p = 0; p < total + warm;) {
        if (p >= warm && !t0) {
            t0 = seconds();
            a0 = allocs;
            start = jr__raft_commit_index(nodes[0].r);
        }
        for (int i = 0; i < BATCH; i++, p++)
            if (jr__raft_propose(nodes[0].r, now_ns, payload, sizeof payload, NULL)) abort();
        flush(&nodes[0]);
        deliver_all(); /* one round trip per batch: pipelining keeps the next batch moving */
    }
    while (deliver_all()) {
    }
    double dt = seconds() - t0;
    uint64_t committed = jr__raft_commit_index(nodes[0].r) - start;
    printf("{\"bench\":\"raft_core\",\"nodes\":%d,\"entry_bytes\":%d,\"batch\":%d,"
           "\"committed\":%llu,\"seconds\":%.3f,\"entries_per_s\":%.0f,\"mb_per_s\":%.1f,"
           "\"allocs_per_entry\":%.6f}\n",
           n, ENTRY, BATCH, (unsigned long long)committed, dt, (double)committed / dt,
           (double)committed * ENTRY / dt / 1e6, (double)(allocs - a0) / (double)committed);
    for (int i = 0; i < n; i++) {
        jr__raft_free(nodes[i].r);
        for (int k = 0; k < 2; k++) {
            free(nodes[i].in[k].msgs);
            free(nodes[i].in[k].ents);
            free(nodes[i].in[k].bytes);
        }
        free(nodes[i].held.msgs);
        free(nodes[i].held.ents);
        free(nodes[i].held.bytes);
    }
}

int main(int argc, char **argv)
{
    uint64_t total = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    run(3, total);
    run(5, total);
    return 0;
}
