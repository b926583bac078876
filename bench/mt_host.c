/* mt_host — the benches' threaded host (mt_host.h). */
#include "mt_host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_util.h"
#include "vfs/memfs.h"

#define MAX_LATE (1u << 16)
/* Frame buffers a loop keeps for reuse once handled: at most POOL_ITEMS of them, POOL_BYTES in
 * all (a frame bigger than POOL_BYTES / 4 is freed). A buffer malloc'd and freed per frame lets
 * the allocator hand big ones back to the system and fault them in again, page by page, on
 * every frame: the host's copies, not the library, would then fill a node's profile. */
#define POOL_ITEMS 64
#define POOL_BYTES (64u << 20)

struct mt_item {
    struct mt_item *next;
    int from; /* frame: sender index; -1: a task */
    void (*task)(void *arg, jr_node *node);
    void *arg;
    size_t len;
    size_t cap; /* bytes of data[] (frames) */
    uint8_t data[];
};

void mt_die(const char *what, int rc, const char *msg)
{
    fprintf(stderr, "bench: %s: %s%s%s\n", what, jr_strerror(rc), msg && *msg ? ": " : "",
            msg ? msg : "");
    exit(1);
}

void mt_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

void mt_mkdirs(const char *path)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) mt_die("mkdir", JR_EIO, path);
}

void mt_rm_rf(const char *path)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "bench: could not remove %s\n", path);
}

static void post(mt_loop *l, mt_item *it)
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

/* A buffer for a frame of len bytes to loop l: one l handled earlier, or a new one. */
static mt_item *pool_take(mt_loop *l, size_t len)
{
    mt_item *it = NULL;
    pthread_mutex_lock(&l->mu);
    for (mt_item **pp = &l->pool; *pp; pp = &(*pp)->next)
        if ((*pp)->cap >= len) {
            it = *pp;
            *pp = it->next;
            l->npool--;
            l->pool_bytes -= it->cap;
            break;
        }
    pthread_mutex_unlock(&l->mu);
    if (it) return it;
    size_t cap = len < 4096 ? 4096 : len;
    it = malloc(sizeof *it + cap);
    if (it) it->cap = cap;
    return it;
}

/* Keeps the handled frame buffer `it` of loop l for reuse, or frees it. */
static void pool_give(mt_loop *l, mt_item *it)
{
    if (it->from < 0 || it->cap > POOL_BYTES / 4) {
        free(it);
        return;
    }
    pthread_mutex_lock(&l->mu);
    if (l->npool < POOL_ITEMS && l->pool_bytes + it->cap <= POOL_BYTES) {
        it->next = l->pool;
        l->pool = it;
        l->npool++;
        l->pool_bytes += it->cap;
        it = NULL;
    }
    pthread_mutex_unlock(&l->mu);
    free(it);
}

void mt_run_on(mt_loop *l, void (*task)(void *, jr_node *), void *arg)
{
    mt_item *it = malloc(sizeof *it);
    if (!it) mt_die("malloc", JR_ENOMEM, NULL);
    it->from = -1;
    it->task = task;
    it->arg = arg;
    it->len = 0;
    post(l, it);
}

static int host_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt)
{
    mt_loop *l = ctx;
    mt_cluster *c = l->c;
    int dst = -1;
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->names[i], to)) dst = i;
    if (dst < 0) return -1;
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].len;
    mt_item *it = pool_take(&c->loops[dst], len);
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
    ((mt_loop *)ctx)->deadline = deadline;
}

static void host_log(void *ctx, int level, const char *msg)
{
    mt_loop *l = ctx;
    if (level > l->c->log) return;
    fprintf(stderr, "%9.3f ms %s: %s\n", (double)(bench_now_ns() - l->c->t_open) / 1e6, l->name,
            msg);
}

static void *loop_main(void *arg)
{
    mt_loop *l = arg;
    pthread_setname_np(pthread_self(), l->name); /* profilers name the node */
    for (;;) {
        pthread_mutex_lock(&l->mu);
        int slept = 0; /* blocked waiting for the timer */
        while (!l->head && !l->stop && bench_now_ns() < l->deadline) {
            if (l->deadline == UINT64_MAX) {
                pthread_cond_wait(&l->cv, &l->mu);
            } else {
                slept = 1;
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
        uint64_t now = bench_now_ns();
        if (l->late && slept && !l->head && now >= l->deadline && l->nlate < MAX_LATE)
            l->late[l->nlate++] = now - l->deadline;
        mt_item *it = l->head;
        l->head = l->tail = NULL;
        int stop = l->stop;
        pthread_mutex_unlock(&l->mu);
        if (stop) {
            while (it) {
                mt_item *next = it->next;
                free(it);
                it = next;
            }
            return NULL;
        }
        /* once close_task closed the node (l->node NULL), what other nodes still send it and
         * any later task are dropped, and it is never ticked again: the loop waits for stop */
        while (it) {
            mt_item *next = it->next;
            if (!l->node)
                ;
            else if (it->from < 0)
                it->task(it->arg, l->node);
            else
                jr_node_recv(l->node, l->c->names[it->from], it->data, it->len);
            pool_give(l, it);
            it = next;
        }
        if (!l->node) {
            l->deadline = UINT64_MAX;
            continue;
        }
        if (bench_now_ns() >= l->deadline) jr_node_tick(l->node);
        l->deadline = jr_node_deadline(l->node);
    }
}

void mt_cluster_open(mt_cluster *c, const mt_opts *o)
{
    memset(c, 0, sizeof *c);
    if (o->nodes < 1 || o->nodes > MT_MAX_NODES) mt_die("nodes", JR_EINVAL, NULL);
    c->n = o->nodes;
    c->posix = o->posix;
    c->log = o->log;
    c->t_open = bench_now_ns();
    if (o->posix) snprintf(c->root, sizeof c->root, "%s", o->root);
    for (int i = 0; i < c->n; i++) {
        mt_loop *l = &c->loops[i];
        l->c = c;
        l->idx = i;
        snprintf(l->name, sizeof l->name, "n%d", i);
        c->names[i] = l->name;
    }
    for (int i = 0; i < c->n; i++) {
        mt_loop *l = &c->loops[i];
        char wal[600], store[600];
        if (o->record_late) {
            l->late = malloc(MAX_LATE * sizeof *l->late);
            if (!l->late) mt_die("malloc", JR_ENOMEM, NULL);
        }
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
        if (o->log) l->host.log = host_log;
        jr_node_config nc;
        jr_node_config_init(&nc);
        nc.name = l->name;
        nc.cluster = "bench";
        nc.peers = c->names;
        nc.npeers = (size_t)c->n;
        nc.host = &l->host;
        nc.streams = 1;
        nc.request_timeout_ms = 30000;
        if (o->posix) {
            snprintf(wal, sizeof wal, "%s/n%d/wal", c->root, i);
            snprintf(store, sizeof store, "%s/n%d/store", c->root, i);
            mt_mkdirs(wal);
            mt_mkdirs(store);
            nc.vfs = jr_vfs_posix();
            nc.sync_policy = JR_SYNC_ALWAYS;
        } else {
            int rc = jr__memfs_new(NULL, (uint64_t)i + 1, &l->vfs);
            if (rc) mt_die("memfs", rc, NULL);
            snprintf(wal, sizeof wal, "/wal");
            snprintf(store, sizeof store, "/store");
            nc.vfs = l->vfs;
        }
        nc.wal_dir = wal;
        nc.store_dir = store;
        if (o->configure) o->configure(o->arg, i, &nc);
        int rc = jr_node_open(&nc, &l->node);
        if (rc) mt_die("jr_node_open", rc, NULL);
        l->deadline = jr_node_deadline(l->node);
    }
    for (int i = 0; i < c->n; i++)
        pthread_create(&c->loops[i].thread, NULL, loop_main, &c->loops[i]);
}

/* A close request: the loop whose node to close, and the waiter told once it is closed. */
typedef struct closing {
    mt_loop *l;
    mt_waiter w;
} closing;

/* Closes the node on its own thread; the loop then leaves it alone (loop_main). */
static void close_task(void *arg, jr_node *node)
{
    closing *k = arg;
    jr_node_close(node);
    k->l->node = NULL;
    mt_waiter_done(&k->w, 0, NULL);
}

/* Closes every node first, then stops every loop, then frees what the loops held: a node still
 * open sends to the others (host_send takes from the receiver's pool under its lock), so no
 * loop's pool, queue or lock may go before every node is closed and every thread joined. */
void mt_cluster_close(mt_cluster *c)
{
    closing k[MT_MAX_NODES];
    for (int i = 0; i < c->n; i++) {
        k[i].l = &c->loops[i];
        mt_waiter_init(&k[i].w, NULL);
        mt_run_on(&c->loops[i], close_task, &k[i]);
    }
    for (int i = 0; i < c->n; i++) mt_waiter_wait(&k[i].w);
    for (int i = 0; i < c->n; i++) {
        mt_loop *l = &c->loops[i];
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
    }
    for (int i = 0; i < c->n; i++) {
        mt_loop *l = &c->loops[i];
        for (mt_item *it = l->head, *next; it; it = next) { /* sent after its thread stopped */
            next = it->next;
            free(it);
        }
        l->head = l->tail = NULL;
        if (l->vfs) jr__memfs_free(l->vfs);
        while (l->pool) {
            mt_item *next = l->pool->next;
            free(l->pool);
            l->pool = next;
        }
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        free(l->late);
    }
    if (c->posix) mt_rm_rf(c->root);
}

int mt_index(const mt_cluster *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->names[i], name)) return i;
    mt_die("no such server", JR_ENOTFOUND, name);
    return -1;
}

double mt_loop_cpu_s(mt_loop *l)
{
    clockid_t id;
    struct timespec ts;
    if (pthread_getcpuclockid(l->thread, &id) != 0 || clock_gettime(id, &ts) != 0) return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void mt_late_reset(mt_cluster *c)
{
    for (int i = 0; i < c->n; i++) {
        pthread_mutex_lock(&c->loops[i].mu);
        c->loops[i].nlate = 0;
        pthread_mutex_unlock(&c->loops[i].mu);
    }
}

double mt_late_p99_us(mt_cluster *c, double *max_us)
{
    uint64_t *all = malloc((size_t)c->n * MAX_LATE * sizeof *all), n = 0;
    if (!all) mt_die("malloc", JR_ENOMEM, NULL);
    for (int i = 0; i < c->n; i++) {
        pthread_mutex_lock(&c->loops[i].mu);
        if (c->loops[i].late) memcpy(all + n, c->loops[i].late, c->loops[i].nlate * sizeof *all);
        n += c->loops[i].late ? c->loops[i].nlate : 0;
        pthread_mutex_unlock(&c->loops[i].mu);
    }
    qsort(all, n, sizeof *all, bench_cmp_u64);
    *max_us = n ? (double)all[n - 1] / 1e3 : 0;
    double p99 = n ? (double)all[(size_t)((double)n * 0.99)] / 1e3 : 0;
    free(all);
    return p99;
}

void mt_waiter_init(mt_waiter *w, const void *in)
{
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->in = in;
}

void mt_waiter_done(mt_waiter *w, int status, const char *msg)
{
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    w->status = status;
    snprintf(w->msg, sizeof w->msg, "%s", msg ? msg : "");
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int mt_waiter_wait(mt_waiter *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    return w->status;
}

void mt_call(mt_cluster *c, int i, void (*task)(void *, jr_node *), const void *in, int tries,
             char *leader, const char *what)
{
    mt_waiter w;
    int rc = JR_ENOLEADER;
    for (int k = 0; k < tries && rc; k++) {
        mt_waiter_init(&w, in);
        mt_run_on(&c->loops[i], task, &w);
        rc = mt_waiter_wait(&w);
        if (rc) mt_sleep_ms(100);
    }
    if (rc) mt_die(what, rc, w.msg);
    if (leader) snprintf(leader, 32, "%s", w.leader);
}

void mt_admin_cb(void *arg, int status, const char *msg)
{
    mt_waiter_done(arg, status, msg);
}

void mt_stream_add_task(void *arg, jr_node *node)
{
    int rc = jr_stream_add(node, ((mt_waiter *)arg)->in, mt_admin_cb, arg);
    if (rc) mt_waiter_done(arg, rc, NULL);
}

void mt_stream_info_cb(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    mt_waiter *w = arg;
    if (status == 0 && info->cluster->leader)
        snprintf(w->leader, sizeof w->leader, "%s", info->cluster->leader);
    mt_waiter_done(w, status ? status : (w->leader[0] ? 0 : JR_ENOLEADER), msg);
}

void mt_stream_info_task(void *arg, jr_node *node)
{
    int rc = jr_stream_info_get(node, ((mt_waiter *)arg)->in, mt_stream_info_cb, arg);
    if (rc) mt_waiter_done(arg, rc, NULL);
}

int mt_stream_add(mt_cluster *c, const jr_stream_config *cfg)
{
    mt_call(c, 0, mt_stream_add_task, cfg, 100, NULL, "jr_stream_add");
    char leader[32];
    mt_call(c, 0, mt_stream_info_task, cfg->name, 200, leader, "stream leader");
    return mt_index(c, leader);
}
