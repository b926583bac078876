/*
 * sim — the deterministic cluster fixture (contract in include/jetraft/sim.h): lifecycle, the
 * fixture as every node's host, crash and restart, the event loop, and the run digest.
 */
#include <stdio.h>
#include <string.h>

#include "node/node.h"
#include "sim/sim_int.h"
#include "util/abi.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "util/deadline.h"
#include "wire/frame.h"
#include "vfs/memfs.h"

#include <xxhash.h>

#define START_NS 1000000000ull
/* A node that asks to be ticked at the same instant this many times in a row is spinning (a
 * bug, or a fault it cannot get past): its next tick is pushed 1 ms later. */
#define STORM_LIMIT 64

void jr_sim_link_init_size(jr_sim_link *l, size_t size)
{
    jr_sim_link d;
    memset(&d, 0, sizeof d);
    d.delay_min_ns = 100000;
    d.delay_max_ns = 500000;
    jr__abi_init(l, size, &d, sizeof d);
}

void jr_sim_config_init_size(jr_sim_config *cfg, size_t size)
{
    jr_sim_config d;
    memset(&d, 0, sizeof d);
    d.nodes = 3;
    d.seed = 1;
    d.link = NULL; /* the perfect link of jr_sim_link_init */
    d.election_timeout_ms = 150;
    d.heartbeat_ms = 30;
    jr__abi_init(cfg, size, &d, sizeof d);
}

/* Digest --------------------------------------------------------------------------------------*/

/* digest' = xxh3(data, seeded with a mix of the digest so far and the event's words): one
 * one-shot hash per event (the streaming API costs more than the event itself). */
static void digest_add(jr_sim *s, const uint64_t *words, size_t nwords, const void *data,
                       size_t len)
{
    if (s->cfg.no_digest) return;
    uint64_t seed = s->digest;
    for (size_t i = 0; i < nwords; i++) {
        seed ^= words[i] + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
        seed = jr__splitmix64(&seed);
    }
    s->digest = XXH3_64bits_withSeed(data, len, seed);
}

static void hook_applied(void *ctx, jr_node *n, uint64_t group, const jr__entry *e)
{
    jr__sim_node *sn = ctx;
    jr_sim *s = sn->sim;
    (void)n;
    uint64_t w[6] = {0xa991ed, sn->idx, group, e->index, e->term, e->type};
    digest_add(s, w, 6, e->data, e->len);
    if (e->type == JR__ENTRY_NORMAL && s->cfg.on_apply)
        s->cfg.on_apply(s->cfg.arg, sn->idx, group, e->index, e->term, e->data, e->len);
}

static void hook_restored(void *ctx, jr_node *n, uint64_t group, uint64_t index, uint64_t term)
{
    jr__sim_node *sn = ctx;
    jr_sim *s = sn->sim;
    (void)n;
    uint64_t w[5] = {0x5e5704e, sn->idx, group, index, term};
    digest_add(s, w, 5, NULL, 0);
    if (s->cfg.on_restore) s->cfg.on_restore(s->cfg.arg, sn->idx, group, index);
}

uint64_t jr_sim_digest(const jr_sim *s)
{
    return s && !s->cfg.no_digest ? s->digest : 0;
}

/* The fixture as host -------------------------------------------------------------------------*/

/* Counts the JR__MF_DURABLE messages of a frame sent while the node's sync job is out. */
static void check_durable(jr__sim_node *sn, const jr_iovec *iov, int iovcnt)
{
    jr__frame f;
    jr__msg m;
    jr__entry scratch[JR__MAX_APPEND_ENTRIES];
    int got;
    if (!sn->job || iovcnt != 1 || jr__frame_open(&f, iov[0].base, iov[0].len, SIZE_MAX) != 0)
        return;
    while (jr__frame_next(&f, &m, scratch, JR__MAX_APPEND_ENTRIES, &got) == 0 && got)
        if (m.flags & JR__MF_DURABLE) sn->sim->stats.durable_early++;
}

static int host_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt)
{
    jr__sim_node *sn = ctx;
    check_durable(sn, iov, iovcnt);
    int j = jr_sim_index(sn->sim, to);
    if (j < 0) return JR_ENOTFOUND;
    return jr__sim_net_send(sn->sim, sn->idx, (unsigned)j, iov, iovcnt);
}

static uint64_t host_now(void *ctx)
{
    jr__sim_node *sn = ctx;
    return sn->sim->now;
}

static uint64_t host_wall(void *ctx)
{
    jr__sim_node *sn = ctx;
    return sn->sim->now + sn->wall_off;
}

static void host_arm(void *ctx, uint64_t deadline)
{
    jr__sim_node *sn = ctx;
    sn->armed = deadline;
}

static void host_log(void *ctx, int level, const char *msg)
{
    jr__sim_node *sn = ctx;
    if (sn->sim->cfg.on_log) sn->sim->cfg.on_log(sn->sim->cfg.arg, sn->idx, level, msg);
}

static int node_open(jr_sim *s, unsigned i)
{
    jr__sim_node *sn = &s->nodes[i];
    jr_node_config nc;
    jr_node_config_init(&nc);
    nc.name = sn->name;
    nc.peers = s->names;
    nc.npeers = sn->npeers;
    nc.join = sn->join;
    nc.wal_dir = "/wal";
    nc.vfs = sn->vfs;
    nc.host = &sn->host;
    nc.alloc = s->alloc;
    nc.election_timeout_ms = s->cfg.election_timeout_ms;
    nc.heartbeat_ms = s->cfg.heartbeat_ms;
    nc.seed = jr__rand_next(&s->rand) | 1;
    if (s->cfg.configure) s->cfg.configure(s->cfg.arg, i, &nc);
    sn->armed = UINT64_MAX;
    sn->same_instant = 0;
    int rc = jr_node_open(&nc, &sn->node);
    if (rc != 0) {
        sn->node = NULL;
        return rc;
    }
    jr__node_hooks h = {sn, hook_applied, hook_restored};
    jr__node_set_hooks(sn->node, &h);
    return 0;
}

/* Lifecycle -----------------------------------------------------------------------------------*/

static int link_ok(const jr_sim_link *l)
{
    return l->drop >= 0 && l->drop <= 1 && l->duplicate >= 0 && l->duplicate <= 1 &&
           l->reorder >= 0 && l->reorder <= 1 && l->delay_min_ns <= l->delay_max_ns;
}

/* jr_host.sync_start (jr_sim_config.sync_delay_ns): the job completes later, as an event. */
static void host_sync_start(void *ctx, jr_sync_job *job)
{
    jr__sim_node *sn = ctx;
    jr_sim *s = sn->sim;
    uint64_t d = s->cfg.sync_delay_ns;
    sn->job = job;
    sn->sync_at = s->now + d / 2 + jr__rand_next(&s->rand) % (d - d / 2 + 1);
}

int jr_sim_new(const jr_sim_config *cfg_in, jr_sim **out)
{
    if (!out) return JR_EINVAL;
    *out = NULL;
    if (!cfg_in || cfg_in->size == 0) return JR_EINVAL;
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    memcpy(&cfg, cfg_in, cfg_in->size < sizeof cfg ? cfg_in->size : sizeof cfg);
    jr_sim_link link;
    jr_sim_link_init(&link);
    if (cfg.link && jr__abi_read(&link, sizeof link, cfg.link) != 0) return JR_EINVAL;
    cfg.link = NULL; /* borrowed for this call only; `link` is the copy */
    if (cfg.nodes < 1 || cfg.nodes > JR_SIM_MAX_NODES || !link_ok(&link)) return JR_EINVAL;
    if (cfg.alloc && (!cfg.alloc->malloc || !cfg.alloc->realloc || !cfg.alloc->free))
        return JR_EINVAL;
    jr_sim *s = jr__calloc(cfg.alloc, 1, sizeof *s);
    if (!s) return JR_ENOMEM;
    s->cfg = cfg;
    s->alloc = cfg.alloc;
    s->n = cfg.nodes;
    s->now = START_NS;
    jr__rand_seed(&s->rand, cfg.seed);
    s->digest = jr__xxh3(&cfg.seed, sizeof cfg.seed);
    s->stats.size = sizeof s->stats;
    s->link0 = link;
    int rc = 0;
    for (unsigned i = 0; i < s->n; i++) {
        jr__sim_node *sn = &s->nodes[i];
        sn->npeers = s->n;
        sn->sim = s;
        sn->idx = i;
        snprintf(sn->name, sizeof sn->name, "n%u", i);
        s->names[i] = sn->name;
        sn->host.version = JR_HOST_VERSION;
        sn->host.ctx = sn;
        sn->host.send = host_send;
        sn->host.now = host_now;
        sn->host.arm = host_arm;
        sn->host.log = host_log;
        sn->host.wall = host_wall;
        if (cfg.sync_delay_ns) sn->host.sync_start = host_sync_start;
        sn->wall_off = JR_SIM_WALL_START_NS - START_NS;
        sn->armed = UINT64_MAX;
        for (unsigned j = 0; j < s->n; j++) s->links[i][j] = link;
        if (rc == 0) rc = jr__memfs_new(s->alloc, jr__rand_next(&s->rand), &sn->vfs);
        if (rc != 0) sn->vfs = NULL;
    }
    for (unsigned i = 0; i < s->n && rc == 0; i++) rc = node_open(s, i);
    if (rc != 0) {
        jr_sim_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int jr_sim_add_node(jr_sim *s, int join, unsigned *index)
{
    if (!s || s->n >= JR_SIM_MAX_NODES) return JR_EINVAL;
    unsigned i = s->n;
    jr__sim_node *sn = &s->nodes[i];
    memset(sn, 0, sizeof *sn);
    sn->sim = s;
    sn->idx = i;
    sn->npeers = i + 1; /* every node before it, and itself */
    sn->join = join;
    snprintf(sn->name, sizeof sn->name, "n%u", i);
    s->names[i] = sn->name;
    sn->host.version = JR_HOST_VERSION;
    sn->host.ctx = sn;
    sn->host.send = host_send;
    sn->host.now = host_now;
    sn->host.arm = host_arm;
    sn->host.log = host_log;
    sn->host.wall = host_wall;
    if (s->cfg.sync_delay_ns) sn->host.sync_start = host_sync_start;
    sn->wall_off = JR_SIM_WALL_START_NS - START_NS;
    sn->armed = UINT64_MAX;
    for (unsigned j = 0; j <= i; j++) {
        s->links[i][j] = s->link0;
        s->links[j][i] = s->link0;
        s->cut[i][j] = s->cut[j][i] = 0;
        s->busy_until[i][j] = s->busy_until[j][i] = 0;
    }
    int rc = jr__memfs_new(s->alloc, jr__rand_next(&s->rand), &sn->vfs);
    if (rc != 0) {
        sn->vfs = NULL;
        return rc;
    }
    s->n++; /* reachable from now on (jr_sim_index), so its open may already talk */
    rc = node_open(s, i);
    if (rc != 0) {
        s->n--;
        jr__memfs_free(sn->vfs);
        memset(sn, 0, sizeof *sn);
        s->names[i] = NULL;
        return rc;
    }
    if (index) *index = i;
    return 0;
}

void jr_sim_free(jr_sim *s)
{
    if (!s) return;
    for (unsigned i = 0; i < s->n; i++) {
        jr_node_close(s->nodes[i].node);
        s->nodes[i].node = NULL;
    }
    for (unsigned i = 0; i < s->n; i++) jr__memfs_free(s->nodes[i].vfs);
    jr__sim_net_free(s);
    jr__free(s->alloc, s);
}

/* Accessors -----------------------------------------------------------------------------------*/

unsigned jr_sim_size(const jr_sim *s)
{
    return s ? s->n : 0;
}

jr_node *jr_sim_node(jr_sim *s, unsigned i)
{
    return s && i < s->n ? s->nodes[i].node : NULL;
}

const char *jr_sim_name(const jr_sim *s, unsigned i)
{
    return s && i < s->n ? s->nodes[i].name : NULL;
}

int jr_sim_index(const jr_sim *s, const char *name)
{
    if (!s || !name || name[0] != 'n') return -1;
    unsigned v = 0;
    const char *p = name + 1;
    if (!*p || (*p == '0' && p[1])) return -1;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || v > JR_SIM_MAX_NODES) return -1;
        v = v * 10 + (unsigned)(*p - '0');
    }
    return v < s->n ? (int)v : -1;
}

jr_vfs *jr_sim_vfs(jr_sim *s, unsigned i)
{
    return s && i < s->n ? s->nodes[i].vfs : NULL;
}

uint64_t jr_sim_now(const jr_sim *s)
{
    return s ? s->now : 0;
}

uint64_t jr_sim_wall(const jr_sim *s, unsigned i)
{
    return s && i < s->n ? s->now + s->nodes[i].wall_off : 0;
}

int jr_sim_set_wall(jr_sim *s, unsigned i, uint64_t wall_ns)
{
    if (!s || i >= s->n) return JR_EINVAL;
    s->nodes[i].wall_off = wall_ns - s->now;
    return 0;
}

int jr_sim_stats_get(const jr_sim *s, jr_sim_stats *out)
{
    if (!s || !out || out->size == 0) return JR_EINVAL;
    size_t sz = out->size < sizeof s->stats ? out->size : sizeof s->stats;
    memcpy(out, &s->stats, sz);
    out->size = sz;
    return 0;
}

/* Network control -----------------------------------------------------------------------------*/

int jr_sim_set_link(jr_sim *s, unsigned from, unsigned to, const jr_sim_link *l)
{
    if (!s || !l || from >= s->n || to >= s->n) return JR_EINVAL;
    jr_sim_link c;
    jr_sim_link_init(&c);
    if (jr__abi_read(&c, sizeof c, l) != 0 || !link_ok(&c)) return JR_EINVAL;
    s->links[from][to] = c;
    return 0;
}

int jr_sim_cut(jr_sim *s, unsigned from, unsigned to)
{
    if (!s || from >= s->n || to >= s->n) return JR_EINVAL;
    s->cut[from][to] = 1;
    return 0;
}

int jr_sim_partition(jr_sim *s, const unsigned *side, size_t n)
{
    if (!s || (n && !side)) return JR_EINVAL;
    uint8_t in[JR_SIM_MAX_NODES] = {0};
    for (size_t k = 0; k < n; k++) {
        if (side[k] >= s->n) return JR_EINVAL;
        in[side[k]] = 1;
    }
    for (unsigned a = 0; a < s->n; a++)
        for (unsigned b = 0; b < s->n; b++)
            if (in[a] != in[b]) s->cut[a][b] = 1;
    return 0;
}

void jr_sim_heal(jr_sim *s)
{
    if (s) memset(s->cut, 0, sizeof s->cut);
}

/* Crash and restart ---------------------------------------------------------------------------*/

int jr_sim_crash(jr_sim *s, unsigned i)
{
    if (!s || i >= s->n || !s->nodes[i].node) return JR_EINVAL;
    jr__sim_node *sn = &s->nodes[i];
    /* Power goes first: whatever the node would still write is lost with its unsynced data. */
    jr__memfs_crash(sn->vfs, s->cfg.torn_writes);
    jr_node *n = sn->node;
    sn->node = NULL;
    sn->armed = UINT64_MAX;
    sn->paused_until = 0;
    sn->job = NULL; /* never run: what it covered is gone with the power */
    jr__node_close_noflush(n);
    return 0;
}

int jr_sim_pause(jr_sim *s, unsigned i, uint64_t ns)
{
    if (!s || i >= s->n || !s->nodes[i].node) return JR_EINVAL;
    uint64_t until = ns < UINT64_MAX - s->now ? s->now + ns : UINT64_MAX - 1;
    if (until > s->nodes[i].paused_until) s->nodes[i].paused_until = until;
    return 0;
}

int jr_sim_restart(jr_sim *s, unsigned i)
{
    if (!s || i >= s->n || s->nodes[i].node) return JR_EINVAL;
    return node_open(s, i);
}

/* The event loop ------------------------------------------------------------------------------*/

/* When node sn's timer runs: its deadline, or the end of its pause if later. */
static uint64_t tick_at(const jr__sim_node *sn)
{
    return sn->armed > sn->paused_until ? sn->armed : sn->paused_until;
}

/* When node sn's sync job completes: its time, or the end of its pause if later. */
static uint64_t sync_at(const jr__sim_node *sn)
{
    return sn->sync_at > sn->paused_until ? sn->sync_at : sn->paused_until;
}

/* Runs the earliest event if it is due at or before limit. */
static int step_until(jr_sim *s, uint64_t limit)
{
    jr__sim_node *tn = NULL;
    for (unsigned i = 0; i < s->n; i++) {
        jr__sim_node *sn = &s->nodes[i];
        if (sn->node && sn->armed != UINT64_MAX && (!tn || tick_at(sn) < tick_at(tn))) tn = sn;
    }
    jr__sim_node *yn = NULL; /* the earliest sync job to complete */
    for (unsigned i = 0; i < s->n; i++) {
        jr__sim_node *sn = &s->nodes[i];
        if (sn->node && sn->job && (!yn || sync_at(sn) < sync_at(yn))) yn = sn;
    }
    jr__sim_frame *f = jr__sim_net_top(s);
    uint64_t ft = f ? (f->at > s->now ? f->at : s->now) : UINT64_MAX;
    uint64_t tt = tn ? (tick_at(tn) > s->now ? tick_at(tn) : s->now) : UINT64_MAX;
    uint64_t yt = yn ? (sync_at(yn) > s->now ? sync_at(yn) : s->now) : UINT64_MAX;
    if (ft == UINT64_MAX && tt == UINT64_MAX && yt == UINT64_MAX) return 0;
    if (yt < ft && yt < tt) {
        if (yt > limit) return 0;
        s->now = yt;
        jr_sync_job *job = yn->job;
        yn->job = NULL;
        jr_node_synced(yn->node, job, jr_sync_job_run(job));
    } else if (ft <= tt) {
        if (ft > limit) return 0;
        jr__sim_net_pop(s);
        s->now = ft;
        jr__sim_node *dst = &s->nodes[f->to];
        if (dst->node && dst->paused_until > ft) {
            /* the receiver is paused: it reads the frame after its first tick back */
            if (jr__sim_net_requeue(s, f, dst->paused_until + 1) != 0) s->stats.frames_dropped++;
            return 1;
        }
        if (!dst->node) {
            s->stats.frames_dropped++;
        } else {
            s->stats.frames_delivered++;
            s->stats.bytes_delivered += f->len;
            uint64_t w[3] = {s->now, f->from, f->to};
            digest_add(s, w, 3, f->data, f->len);
            jr_node_recv(dst->node, s->nodes[f->from].name, f->data, f->len);
        }
        jr__sim_net_recycle(s, f);
    } else {
        if (tt > limit) return 0;
        s->now = tt;
        if (tn->last_tick == s->now) {
            if (++tn->same_instant >= STORM_LIMIT) {
                tn->same_instant = 0;
                tn->armed = s->now + 1000000;
                return 1;
            }
        } else {
            tn->same_instant = 0;
        }
        tn->last_tick = s->now;
        tn->armed = UINT64_MAX;
        jr_node_tick(tn->node);
    }
    s->stats.events++;
    if (s->cfg.on_step) s->cfg.on_step(s->cfg.arg, s);
    return 1;
}

int jr_sim_step(jr_sim *s)
{
    return s ? step_until(s, UINT64_MAX) : 0;
}

void jr_sim_run_for(jr_sim *s, uint64_t ns)
{
    if (!s) return;
    uint64_t end = jr__deadline(s->now, ns);
    while (step_until(s, end)) {
    }
    if (s->now < end) s->now = end;
}

int jr_sim_run_until(jr_sim *s, int (*pred)(void *arg, jr_sim *sim), void *arg, uint64_t max_ns)
{
    if (!s || !pred) return JR_EINVAL;
    uint64_t end = jr__deadline(s->now, max_ns);
    for (;;) {
        if (pred(arg, s)) return 0;
        if (!step_until(s, end)) break;
    }
    if (s->now < end) s->now = end;
    return pred(arg, s) ? 0 : JR_ETIMEDOUT;
}
