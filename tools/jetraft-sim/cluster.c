/*
 * cluster.c — the simulated cluster of one run: n nodes of cluster "east" with streams on, each
 * over the fault-injecting vfs (vfault.c), small WAL segments and store blocks so that a disk
 * holds several of each for the disk faults to hit; and the helpers that pick a node and run
 * the simulation until callbacks fired.
 */
#include <string.h>

#include "jsim.h"

world *g_w;

static void configure(void *arg, unsigned i, jr_node_config *cfg)
{
    world *w = arg;
    cfg->streams = 1;
    cfg->cluster = "east";
    cfg->request_timeout_ms = REQ_TIMEOUT_MS;
    if (w->leaderless_fail) cfg->leaderless_fail_ms = cfg->election_timeout_ms;
    cfg->store_dir = "/store";
    cfg->wal_segment_bytes = 128u << 10;
    cfg->store_block_bytes = JR_STORE_BLOCK_MIN;
    /* the fixture's memfs, wrapped so that I/O errors can be injected (the wrapper outlives
     * every restart: it lives in the world) */
    vfault_wrap(&w->vf[i], cfg->vfs);
    cfg->vfs = &w->vf[i].vfs;
    if (w->big) {
        cfg->catchup_queue_bytes = JR_LOG_BOUND_MIN;
        cfg->catchup_log_bytes = JR_LOG_BOUND_MIN;
        cfg->keep_bytes = JR_LOG_BOUND_MIN;
        cfg->join_keep_bytes = JR_LOG_BOUND_MIN;
    }
}

static void on_log(void *arg, unsigned node, int level, const char *msg)
{
    world *w = arg;
    if (w->verbose >= 2 || (w->verbose && level <= JR_LOG_WARN))
        fprintf(stderr, "[%9.3f] n%u %d: %s\n", rel_s(w, now_ns(w)), node, level, msg);
}

int cluster_new(world *w)
{
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.nodes = w->n;
    cfg.seed = w->seed;
    cfg.torn_writes = 1;
    cfg.arg = w;
    cfg.configure = configure;
    cfg.on_apply = applied_record;
    cfg.on_restore = applied_on_restore;
    cfg.on_log = on_log;
    cfg.no_digest = 1;
    if (w->sync_offload) cfg.sync_delay_ns = SYNC_DELAY_NS;
    int rc = jr_sim_new(&cfg, &w->sim);
    if (rc == 0) w->t0 = jr_sim_now(w->sim);
    return rc;
}

void cluster_free(world *w)
{
    /* closing the nodes completes their pending callbacks (JR_ECLOSED): the world is alive */
    jr_sim_free(w->sim);
    w->sim = NULL;
    jr_sim_disk_free(w->copy);
    w->copy = NULL;
}

uint64_t now_ns(world *w)
{
    return jr_sim_now(w->sim);
}

double rel_s(world *w, uint64_t ns)
{
    return (double)(ns - w->t0) / 1e9;
}

int node_up(world *w, unsigned i)
{
    return jr_sim_node(w->sim, i) != NULL;
}

int pick_node(world *w)
{
    unsigned cand[MAXN], m = 0;
    uint64_t now = now_ns(w);
    for (unsigned i = 0; i < w->n; i++)
        if (node_up(w, i) && w->paused_until[i] <= now && !w->removed[i]) cand[m++] = i;
    if (!m) return -1;
    return (int)cand[rng_below(&w->r, m)];
}

static int flag_set(void *arg, jr_sim *sim)
{
    (void)sim;
    return *(const int *)arg != 0;
}

int wait_flag(world *w, const int *flag, uint64_t max_ns)
{
    return jr_sim_run_until(w->sim, flag_set, (void *)flag, max_ns);
}

typedef struct ops_wait {
    world *w;
    size_t first, n;
} ops_wait;

static int ops_done(void *arg, jr_sim *sim)
{
    (void)sim;
    ops_wait *o = arg;
    for (size_t i = o->first; i < o->first + o->n; i++)
        if (!o->w->ops[i].done) return 0;
    return 1;
}

int wait_ops(world *w, size_t first, size_t n, uint64_t max_ns)
{
    ops_wait o = {w, first, n};
    return jr_sim_run_until(w->sim, ops_done, &o, max_ns);
}
