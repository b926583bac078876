/*
 * node.c — the public node API: open, recv, tick, deadline, close, and the entry/exit discipline
 * every public function follows.
 *
 * Entry/exit. Each public entry point calls jr__node_enter (reads the clock once: every input of
 * the call sees the same `now`) and jr__node_leave. Only the outermost leave acts: it performs a
 * close requested from inside a callback, then re-arms the host's timer with the earliest
 * deadline (one timer for the whole node) if that changed. API calls that queue work
 * (a proposal) do not flush: they mark the node as wanting a tick now, so proposals made in a
 * burst share one WAL write and one frame per peer, and no callback can run inside them.
 * jr_node_recv does the same with what a frame caused: every frame the host feeds before its
 * next jr_node_tick shares that tick's one write, one sync and one frame per peer.
 */
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "node/node.h"
#include "node/rpc.h"
#include "util/abi.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "wire/frame.h"

#define DEFAULT_ELECTION_MS 1000u
#define DEFAULT_HEARTBEAT_MS 100u
#define DEFAULT_SYNC_INTERVAL_MS 100u
#define DEFAULT_MAX_FRAME (8u << 20)
#define MIN_MAX_FRAME (64u << 10)
#define DEFAULT_SEGMENT (64ull << 20)

void jr_node_config_init_size(jr_node_config *cfg, size_t size)
{
    jr_node_config d;
    memset(&d, 0, sizeof d);
    d.cluster = "jetraft";
    d.election_timeout_ms = DEFAULT_ELECTION_MS;
    d.heartbeat_ms = DEFAULT_HEARTBEAT_MS;
    d.sync_policy = JR_SYNC_ALWAYS;
    d.sync_interval_ms = DEFAULT_SYNC_INTERVAL_MS;
    d.max_frame_bytes = DEFAULT_MAX_FRAME;
    d.wal_segment_bytes = DEFAULT_SEGMENT;
    d.catchup_queue_bytes = JR_CATCHUP_QUEUE_BYTES_DEFAULT;
    d.catchup_log_bytes = JR_CATCHUP_LOG_BYTES_DEFAULT;
    d.keep_bytes = JR_KEEP_BYTES_DEFAULT;
    d.join_keep_bytes = JR_JOIN_KEEP_BYTES_DEFAULT;
    jr__abi_init(cfg, size, &d, sizeof d);
}

int jr__node_err(jr_node *n, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->errmsg, sizeof n->errmsg, fmt, ap);
    va_end(ap);
    return err;
}

void jr__node_log(jr_node *n, int level, const char *fmt, ...)
{
    if (!n->host.log) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    n->host.log(n->host.ctx, level, msg);
}

void jr__node_want_tick(jr_node *n)
{
    n->want_tick = 1;
}

void jr__node_timer_arm(jr_node *n, jr__timer *t, uint64_t deadline)
{
    /* Never in the past: the node's deadline must stay a time it can reach. */
    if (deadline < n->now) deadline = n->now;
    if (jr__heap_arm(&n->timers, t, deadline) != 0) jr__node_want_tick(n);
}

void jr__node_timer_cancel(jr_node *n, jr__timer *t)
{
    jr__heap_cancel(&n->timers, t);
}

/* The seam's services (services.h) ----------------------------------------------------------*/

void jr__node_set_upper(jr_node *n, const jr__upper *tab, void *upper)
{
    n->upper_tab = tab;
    n->upper = tab ? upper : NULL;
}

void *jr__node_upper(const jr_node *n, const jr__upper *tab)
{
    return n && tab && n->upper_tab == tab ? n->upper : NULL;
}

void jr__node_facts_get(const jr_node *n, jr__node_facts *out)
{
    memset(out, 0, sizeof *out);
    out->alloc = n->alloc;
    out->name = n->name;
    out->self = n->self;
    out->election_ns = n->election_ns;
    out->heartbeat_ns = n->heartbeat_ns;
    out->max_frame = n->max_frame;
    out->max_payload = n->max_payload;
    out->max_msg_bytes = n->max_msg_bytes;
    out->store_block_bytes = n->store_block_bytes;
    out->key = n->has_key ? n->node_key : NULL;
    out->seed = n->seed;
    out->vfs = n->vfs;
    out->wal_failed = n->wal ? jr__wal_failed(n->wal) : 0;
    out->wal_lost = n->wal_lost;
    /* jr_host.wall: open copies it only from a host declaring version 2 */
    if (n->host.wall) {
        out->wall = n->host.wall;
        out->wall_ctx = n->host.ctx;
    }
}

uint64_t jr__node_now(const jr_node *n)
{
    return n->now;
}

int jr__node_closing(const jr_node *n)
{
    return n->closing;
}

void jr__node_count(jr_node *n, enum jr__node_counter which)
{
    switch (which) {
    case JR__COUNT_UNKNOWN_TYPE:
        n->msgs_unknown_type++;
        break;
    case JR__COUNT_WARY_WRITE:
        n->rpc_wary_writes++;
        break;
    }
}

void jr__node_set_hooks(jr_node *n, const jr__node_hooks *h)
{
    if (h)
        n->hooks = *h;
    else
        memset(&n->hooks, 0, sizeof n->hooks);
}

uint64_t jr__node_next_deadline(const jr_node *n)
{
    if (n->want_tick || n->done.head) return n->now;
    if (n->removed) return UINT64_MAX; /* removed from the cluster: no more work */
    uint64_t d = UINT64_MAX;
    /* while the host syncs, what is ready or held waits for jr_node_synced */
    if (!n->sync_inflight && (n->ready || n->dirty_peers))
        d = n->retry_at > n->now ? n->retry_at : n->now;
    jr__timer *t = jr__heap_top(&n->timers);
    if (t && t->deadline < d) d = t->deadline;
    if (jr__live_deadline(n) < d) d = jr__live_deadline(n); /* node heartbeats */
    if (jr__fsmr_deadline(n) < d) d = jr__fsmr_deadline(n); /* state machine reports */
    if (n->wal && !n->sync_inflight) {
        uint64_t w = jr__wal_deadline(n->wal);
        if (w < d) d = w;
    }
    return d;
}

void jr__node_enter(jr_node *n)
{
    if (n->depth++ == 0) n->now = n->host.now(n->host.ctx);
}

static void node_destroy(jr_node *n, int flush);

void jr__node_leave(jr_node *n)
{
    if (--n->depth > 0) return;
    if (n->close_requested && !n->closing) {
        node_destroy(n, 1);
        return;
    }
    uint64_t d = jr__node_next_deadline(n);
    if (n->rearm || d != n->armed) {
        n->rearm = 0;
        n->armed = d;
        if (n->host.arm) n->host.arm(n->host.ctx, d);
    }
}

/* Open / close -----------------------------------------------------------------------------*/

static void node_free_memory(jr_node *n)
{
    /* Everything goes: empty the ready list and the timer heap first, so that freeing each
     * group does not search them (closing 100,000 groups was quadratic). */
    for (jr_group *g = n->ready; g; g = g->ready_next) g->in_ready = 0;
    n->ready = NULL;
    jr__fsmr_free(n); /* before the groups: the list links them */
    jr__rpc_free(n);  /* its calls' timers are on the heap */
    jr__heap_free(&n->timers);
    for (size_t i = 0; i < n->groups.cap; i++)
        if (n->groups.slots[i].key) jr__group_free(n->groups.slots[i].val);
    jr__map_free(&n->groups);
    jr__node_released_free(n);
    jr__confs_free(n->confs); /* after the groups: they hold references */
    n->confs = NULL;
    jr__stash_free_all(n);
    if (n->wal) jr__wal_close(n->wal);
    n->wal = NULL;
    jr__live_free(n); /* liveness lists */
    jr__peer_free_all(n);
    jr__op_pool_free(n);
    jr__free(n->alloc, n->scratch);
    jr__free(n->alloc, n->retiring); /* their groups went with the others */
    jr__free(n->alloc, n->effects);  /* not run: the node is going */
    jr__buf_free(&n->snap_raw);
    jr__buf_free(&n->snap_enc);
    sodium_memzero(n->node_key, sizeof n->node_key);
    jr__atrest_wipe(&n->snap_key);
    jr__free(n->alloc, n->name);
    jr__free(n->alloc, n->wal_dir);
    jr__free(n->alloc, n->snap_dir);
    jr__free(n->alloc, n);
}

/* Reports why an open failed: into the caller's errbuf and the host's log (when given). */
static void open_report(const jr_node_config *cfg, const char *msg)
{
    if (cfg->errbuf && cfg->errbuf_len) snprintf(cfg->errbuf, cfg->errbuf_len, "%s", msg);
    if (cfg->host && cfg->host->version >= 1 && cfg->host->log)
        cfg->host->log(cfg->host->ctx, JR_LOG_ERROR, msg);
}

/* Refuses an open before a node exists: reports the reason and returns rc. */
__attribute__((format(printf, 3, 4))) static int open_refuse(const jr_node_config *cfg, int rc,
                                                             const char *fmt, ...)
{
    char msg[512];
    int k = snprintf(msg, sizeof msg, "jr_node_open: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    va_end(ap);
    open_report(cfg, msg);
    return rc;
}

/* Bytes of a Raft message that carries one stream entry holding `payload` bytes of message. */
static uint64_t msg_bytes_for(uint64_t payload)
{
    return payload + JR__NODE_ENTRY_FRAMING + 1024;
}

/* Message and entry limits: every group's messages fit in half a frame (room for others);
 * 1 MiB unless max_payload needs more; max_payload defaults to what that leaves, up to
 * JR_MAX_PAYLOAD_DEFAULT. check_config has made sure an explicit max_payload fits. */
static void set_limits(jr_node *n, const jr_node_config *c)
{
    uint32_t half = c->max_frame_bytes / 2;
    uint32_t msg = half < (1u << 20) ? half : (1u << 20);
    uint32_t payload = c->max_payload;
    if (!payload) {
        uint64_t room = msg_bytes_for(0) < half ? half - msg_bytes_for(0) : 1;
        payload = room < JR_MAX_PAYLOAD_DEFAULT ? (uint32_t)room : JR_MAX_PAYLOAD_DEFAULT;
    }
    if (msg_bytes_for(payload) > msg) msg = (uint32_t)msg_bytes_for(payload);
    n->max_msg_bytes = msg;
    n->max_payload = payload;
    n->store_block_bytes = c->store_block_bytes;
}

/* The checks that need no node. */
static int check_config(const jr_node_config *c)
{
    if (!c->name || !*c->name) return open_refuse(c, JR_EINVAL, "name: required");
    if (!c->wal_dir || !*c->wal_dir) return open_refuse(c, JR_EINVAL, "wal_dir: required");
    if (!c->host || c->host->version < 1 || !c->host->send || !c->host->now)
        return open_refuse(c, JR_EINVAL, "host: required, with version >= 1, send and now");
    if (c->npeers && !c->peers)
        return open_refuse(c, JR_EINVAL, "peers: NULL with npeers = %zu", c->npeers);
    if (c->alloc &&
        (c->alloc->version < 1 || !c->alloc->malloc || !c->alloc->realloc || !c->alloc->free))
        return open_refuse(c, JR_EINVAL, "alloc: needs version >= 1, malloc, realloc and free");
    const jr_vfs *v = c->vfs;
    if (v && (v->version < 1 || !v->open || !v->close || !v->pread || !v->pwrite || !v->sync ||
              !v->size || !v->truncate || !v->rename || !v->remove || !v->mkdir || !v->list ||
              !v->sync_dir))
        return open_refuse(c, JR_EINVAL,
                           "vfs: needs version >= 1 and every function from open to sync_dir");
    if (c->heartbeat_ms >= c->election_timeout_ms)
        return open_refuse(c, JR_EINVAL, "heartbeat_ms (%u) must be below election_timeout_ms (%u)",
                           c->heartbeat_ms, c->election_timeout_ms);
    if (c->max_frame_bytes < MIN_MAX_FRAME)
        return open_refuse(c, JR_EINVAL, "max_frame_bytes (%u) is below the minimum of %u",
                           c->max_frame_bytes, MIN_MAX_FRAME);
    if (c->sync_policy != JR_SYNC_ALWAYS && c->sync_policy != JR_SYNC_INTERVAL)
        return open_refuse(c, JR_EINVAL, "sync_policy: %d is not a jr_sync_policy", c->sync_policy);
    if (c->max_payload > JR_MAX_PAYLOAD_MAX)
        return open_refuse(c, JR_EINVAL, "max_payload (%u) is above the maximum of %u",
                           c->max_payload, JR_MAX_PAYLOAD_MAX);
    if (c->max_payload && msg_bytes_for(c->max_payload) > c->max_frame_bytes / 2)
        return open_refuse(c, JR_EINVAL,
                           "max_payload (%u) needs max_frame_bytes of at least %llu (it is %u)",
                           c->max_payload, 2 * (unsigned long long)msg_bytes_for(c->max_payload),
                           c->max_frame_bytes);
    if (c->store_block_bytes &&
        (c->store_block_bytes < JR_STORE_BLOCK_MIN || c->store_block_bytes > JR_STORE_BLOCK_MAX))
        return open_refuse(c, JR_EINVAL, "store_block_bytes (%llu) is outside %u..%u",
                           (unsigned long long)c->store_block_bytes, JR_STORE_BLOCK_MIN,
                           JR_STORE_BLOCK_MAX);
    if (c->key && c->key_len != JR_NODE_KEY_BYTES)
        return open_refuse(c, JR_EINVAL, "key_len (%zu) must be %d with a key", c->key_len,
                           JR_NODE_KEY_BYTES);
    if (!c->key && c->key_len)
        return open_refuse(c, JR_EINVAL, "key_len (%zu) must be 0 without a key", c->key_len);
    const struct {
        const char *name;
        uint64_t v;
    } bounds[] = {{"catchup_queue_bytes", c->catchup_queue_bytes},
                  {"catchup_log_bytes", c->catchup_log_bytes},
                  {"keep_bytes", c->keep_bytes},
                  {"join_keep_bytes", c->join_keep_bytes}};
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++)
        if (bounds[i].v < JR_LOG_BOUND_MIN || bounds[i].v > JR_LOG_BOUND_MAX)
            return open_refuse(c, JR_EINVAL, "%s (%llu) is outside %llu..%llu", bounds[i].name,
                               (unsigned long long)bounds[i].v,
                               (unsigned long long)JR_LOG_BOUND_MIN,
                               (unsigned long long)JR_LOG_BOUND_MAX);
    if (c->join_keep_bytes < c->keep_bytes)
        return open_refuse(
            c, JR_EINVAL, "join_keep_bytes (%llu) must be at least keep_bytes (%llu)",
            (unsigned long long)c->join_keep_bytes, (unsigned long long)c->keep_bytes);
    for (size_t i = 0; i < c->npeers; i++)
        if (!c->peers[i] || !*c->peers[i])
            return open_refuse(c, JR_EINVAL, "peers[%zu]: %s name", i,
                               c->peers[i] ? "empty" : "NULL");
    return 0;
}

/* Adds this server and every server of cfg->peers; a name listed twice, or two names with one
 * id, is refused (this server may appear in peers once). */
static int add_peers(jr_node *n, const jr_node_config *cfg)
{
    int rc = jr__peer_add(n, n->name);
    if (rc == JR_EINVAL)
        return jr__node_err(n, rc, "name: '%s' cannot be a server name (its id is 0)", n->name);
    if (rc != 0) return rc;
    int self_listed = 0;
    for (size_t i = 0; i < cfg->npeers; i++) {
        const char *name = cfg->peers[i];
        rc = jr__peer_add(n, name);
        if (rc == JR_EEXIST && strcmp(name, n->name) == 0 && !self_listed) {
            self_listed = 1;
            continue;
        }
        if (rc == JR_EEXIST)
            return jr__node_err(n, JR_EINVAL, "peers[%zu]: '%s' is listed twice", i, name);
        if (rc == JR_EINVAL) {
            const jr__peer *other = jr__peer_find(n, jr__peer_id(name));
            return jr__node_err(n, rc, "peers[%zu]: '%s' has the same id as '%s'", i, name,
                                other ? other->name : "?");
        }
        if (rc != 0) return rc;
    }
    if (cfg->streams && n->npeers > JR_STREAMS_MAX_SERVERS)
        return jr__node_err(n, JR_EINVAL,
                            "peers: %zu servers; with streams on at most %d (every server is a "
                            "voter of the meta group)",
                            n->npeers, JR_STREAMS_MAX_SERVERS);
    if (cfg->streams && cfg->join && n->npeers < 2)
        return jr__node_err(n, JR_EINVAL,
                            "join: peers must name at least one server of the cluster to join");
    return 0;
}

int jr__node_open(const jr_node_config *cfg_in,
                  int (*attach)(jr_node *n, const jr_node_config *cfg), jr_node **out)
{
    if (out) *out = NULL;
    if (!cfg_in || cfg_in->size < offsetof(jr_node_config, wal_dir) + sizeof(const char *))
        return JR_EINVAL; /* too short to hold errbuf or host: nowhere to say why */
    jr_node_config cfg;
    jr_node_config_init(&cfg);
    memcpy(&cfg, cfg_in, cfg_in->size < sizeof cfg ? cfg_in->size : sizeof cfg);
    if (cfg.errbuf && cfg.errbuf_len) cfg.errbuf[0] = 0;
    if (!out) return open_refuse(&cfg, JR_EINVAL, "out: required");
    if (!cfg.election_timeout_ms) cfg.election_timeout_ms = DEFAULT_ELECTION_MS;
    if (!cfg.heartbeat_ms) cfg.heartbeat_ms = DEFAULT_HEARTBEAT_MS;
    if (!cfg.max_frame_bytes) cfg.max_frame_bytes = DEFAULT_MAX_FRAME;
    if (!cfg.wal_segment_bytes) cfg.wal_segment_bytes = DEFAULT_SEGMENT;
    if (!cfg.sync_interval_ms) cfg.sync_interval_ms = DEFAULT_SYNC_INTERVAL_MS;
    if (!cfg.catchup_queue_bytes) cfg.catchup_queue_bytes = JR_CATCHUP_QUEUE_BYTES_DEFAULT;
    if (!cfg.catchup_log_bytes) cfg.catchup_log_bytes = JR_CATCHUP_LOG_BYTES_DEFAULT;
    if (!cfg.keep_bytes) cfg.keep_bytes = JR_KEEP_BYTES_DEFAULT;
    if (!cfg.join_keep_bytes) cfg.join_keep_bytes = JR_JOIN_KEEP_BYTES_DEFAULT;
    int rc = check_config(&cfg);
    if (rc) return rc;

    jr_node *n = jr__calloc(cfg.alloc, 1, sizeof *n);
    if (!n) return open_refuse(&cfg, JR_ENOMEM, "out of memory");
    n->alloc = cfg.alloc;
    memset(&n->host, 0, sizeof n->host);
    n->host.version = cfg.host->version;
    n->host.ctx = cfg.host->ctx;
    n->host.send = cfg.host->send;
    n->host.now = cfg.host->now;
    n->host.arm = cfg.host->arm;
    n->host.log = cfg.host->log;
    if (cfg.host->version >= 2) n->host.wall = cfg.host->wall;
    if (cfg.host->version >= 3) n->host.sync_start = cfg.host->sync_start;
    n->vfs = cfg.vfs ? cfg.vfs : jr_vfs_posix();
    n->election_ns = (uint64_t)cfg.election_timeout_ms * 1000000u;
    n->heartbeat_ns = (uint64_t)cfg.heartbeat_ms * 1000000u;
    n->max_frame = cfg.max_frame_bytes;
    n->keep_bytes = cfg.keep_bytes;
    n->join_keep_bytes = cfg.join_keep_bytes;
    set_limits(n, &cfg);
    n->sync_policy = cfg.sync_policy;
    n->armed = UINT64_MAX;
    jr__map_init(&n->groups, n->alloc);
    jr__map_init(&n->stashes, n->alloc);
    jr__map_init(&n->released, n->alloc);
    jr__map_init(&n->peer_by_id, n->alloc);
    jr__rpc_init(n);
    jr__heap_init(&n->timers, n->alloc);
    jr__buf_init(&n->snap_raw, n->alloc);
    jr__buf_init(&n->snap_enc, n->alloc);
    n->now = n->host.now(n->host.ctx);

    rc = JR_ENOMEM;
    size_t dl = strlen(cfg.wal_dir);
    n->name = jr__strdup(n->alloc, cfg.name);
    n->wal_dir = jr__strdup(n->alloc, cfg.wal_dir);
    n->snap_dir = jr__malloc(n->alloc, dl + sizeof "/snap");
    n->scratch = jr__malloc(n->alloc, JR__MAX_APPEND_ENTRIES * sizeof *n->scratch);
    if (!n->name || !n->wal_dir || !n->snap_dir || !n->scratch) goto fail;
    if (jr__confs_new(n->alloc, &n->confs)) goto fail;
    memcpy(n->snap_dir, cfg.wal_dir, dl);
    memcpy(n->snap_dir + dl, "/snap", sizeof "/snap");
    n->scratch_cap = JR__MAX_APPEND_ENTRIES;
    n->self = jr__peer_id(n->name);
    n->seed = cfg.seed ? cfg.seed : (n->self ^ n->now);
    jr__rand_seed(&n->rand, n->seed);
    jr__rpc_seed(n);

    rc = add_peers(n, &cfg);
    if (rc != 0) goto fail;
    if (cfg.key) {
        memcpy(n->node_key, cfg.key, JR_NODE_KEY_BYTES);
        n->has_key = 1;
        rc = jr__atrest_derive(n->node_key, JR__ATREST_SNAP, &n->snap_key);
        if (rc != 0) {
            jr__node_err(n, rc, "key: libsodium failed to initialise");
            goto fail;
        }
    }
    rc = jr__recover_open(n, cfg.wal_segment_bytes, cfg.sync_interval_ms);
    if (rc != 0) goto fail;
    if (attach) {
        rc = attach(n, &cfg); /* the layer above: the meta group and the stream replicas */
        if (rc != 0) goto fail;
        jr__node_run_effects(n); /* what its replay deferred (no list is walked here) */
        /* What it opened may need ticks from now on: tell the host, as the outermost
         * jr__node_leave would. */
        n->armed = jr__node_next_deadline(n);
        if (n->host.arm) n->host.arm(n->host.ctx, n->armed);
    }
    *out = n;
    return 0;
fail:;
    char msg[sizeof n->errmsg + 32];
    snprintf(msg, sizeof msg, "jr_node_open: %s", n->errmsg[0] ? n->errmsg : jr_strerror(rc));
    open_report(&cfg, msg);
    node_free_memory(n);
    return rc;
}

static void node_destroy(jr_node *n, int flush)
{
    n->closing = 1;
    n->depth++;
    if (flush) {
        n->now = n->host.now(n->host.ctx);
        /* a job the host ran and never reported (jr_host.sync_start): synced here, so that
         * the close's flush (which syncs in place) starts from a WAL with nothing in flight */
        if (n->sync_inflight) jr__node_sync_done(n, jr_sync_job_run(&n->sync_job));
        jr__node_flush(n, 0);
    }
    jr__peer_discard_all(n);
    for (size_t i = 0; i < n->groups.cap; i++)
        if (n->groups.slots[i].key) jr__group_detach(n->groups.slots[i].val, JR_ECLOSED);
    jr__node_drain(n);
    if (n->upper_tab) n->upper_tab->close(n->upper, flush);
    n->upper_tab = NULL;
    n->upper = NULL;
    node_free_memory(n);
}

void jr_node_close(jr_node *n)
{
    if (!n || n->closing) return;
    if (n->depth > 0) {
        n->close_requested = 1; /* from inside a callback: close when the outer call returns */
        return;
    }
    node_destroy(n, 1);
}

void jr__node_close_noflush(jr_node *n)
{
    if (!n || n->closing) return;
    node_destroy(n, 0);
}

/* Receive ----------------------------------------------------------------------------------*/

/* Validates the whole frame; on success *f is positioned at its first message. */
static int check_frame(jr_node *n, jr__peer *p, const void *data, size_t len, jr__frame *f)
{
    int rc = jr__frame_open(f, data, len, n->max_frame);
    if (rc != 0) return jr__node_err(n, rc, "frame from %s rejected: %s", p->name, jr_strerror(rc));
    if (f->from != p->id)
        return jr__node_err(n, JR_EAUTH, "frame from %s claims another sender", p->name);
    if (f->to != n->self)
        return jr__node_err(n, JR_EINVAL, "frame from %s is addressed to another server", p->name);
    /* Every message is decoded once here, without acting on any: a frame is applied whole or
     * not at all. The core never sends more than JR__MAX_APPEND_ENTRIES entries per APPEND. */
    rc = jr__frame_check(f, n->scratch_cap);
    if (rc != 0) return jr__node_err(n, rc, "frame from %s rejected: %s", p->name, jr_strerror(rc));
    return 0;
}

/* A LIFE message (wire/frame.h) from p: 1 if it names this server's life as the receiver's. */
static int on_life(jr_node *n, jr__peer *p, const jr__ext_view *x)
{
    if (x->len != JR__EXT_LIFE_LEN || x->flags != 0) {
        n->msgs_invalid++;
        return 0;
    }
    jr__rpc_on_life(n, p, jr__get_u64(x->payload));
    return jr__get_u64(x->payload + 8) == n->life;
}

/* A VOUCH for a group this server holds nothing of: neither open, closed, retiring nor
 * recovered from disk. It answers for the group that it holds no entry. A server that never
 * joined the group answers no configuration either. One that left it — the layer above
 * releases a replica only once the group's committed configuration no longer names this
 * server, or the group is deleted (lib/js/stream_peers.c) — answers, in the life it released
 * the replica and the lives after it, with the commit index and latest configuration the
 * replica had (released.c, kept in wal_dir/released): the asker may know only an older
 * configuration, its record of the later ones lost, and the answer is how it learns of their
 * members and must hear from them too (raft/vouch.c). Also while its DROP waits for that record
 * to be written (retiring). After a restart it
 * may also be what a disk fault left of a replica this server held: every record of the group cut,
 * or the whole WAL lost, or damaged where it could not say whose records were lost. Then it is the
 * answer of a faulty replica, and says so (unfloored): the asker counts it toward its term floor
 * only as far as its configuration allows faulty replicas besides itself, and toward its log floor
 * as the lowest answer, which a truthful holder of every entry committed with the asker's lost
 * acknowledgement outranks (raft/vouch.c, "Two faulty replicas" and "A member may answer that
 * it holds nothing"). Silence would stop for ever every group whose restarted replicas must
 * hear from this server. A group recovered from disk but not open yet gets no answer: its
 * replica answers once open. */
static void vouch_unhosted(jr_node *n, const jr__msg *m)
{
    const jr__released *rel = jr__map_get(&n->released, m->group);
    if (jr__map_get(&n->stashes, m->group) || (!rel && jr__node_group_retiring(n, m->group)))
        return;
    static const uint8_t none[1] = {0}; /* jr__conf_encode() of no member */
    jr__msg a = {.type = JR__MSG_VOUCH_RESP, .group = m->group, .from = n->self, .to = m->from};
    a.term = 1; /* no message has term 0 */
    /* (a lost WAL leaves the node's mark, so reborn is set with wal_lost, and all_damaged
     * comes from WAL segments that were there) */
    a.u.vouch_resp.unfloored = n->reborn || n->wal_lost || n->all_damaged;
    a.u.vouch_resp.conf = none;
    a.u.vouch_resp.conf_len = sizeof none;
    /* A released replica answers with the commit index and latest configuration it had (no
     * entry): the configuration that left this server out, or one on the way to it, names the
     * members that counted in commits the asker may have lost its record of. */
    if (rel) {
        a.u.vouch_resp.commit = rel->commit;
        a.u.vouch_resp.conf_index = rel->conf_index;
        a.u.vouch_resp.conf = rel->conf;
        a.u.vouch_resp.conf_len = rel->conf_len;
    }
    jr__peer_queue(n, &a);
}

static void dispatch(jr_node *n, jr__peer *p, jr__frame *f)
{
    jr__msg m;
    int rc, got, for_me = 0;
    while (!(rc = jr__frame_next(f, &m, n->scratch, n->scratch_cap, &got)) && got) {
        if (m.type == JR__MSG_NODE_HB || m.type == JR__MSG_NODE_HB_RESP) {
            jr__live_recv(n, f->from, &f->hb); /* coalesced heartbeats (liveness.h) */
            continue;
        }
        if (m.type == JR__EXT_LIFE) {
            for_me = on_life(n, p, &f->ext);
            continue;
        }
        if (m.type == JR__EXT_FSM) { /* a follower's word on its state machines */
            jr__fsmr_recv(n, p, &f->ext);
            continue;
        }
        if (m.type >= JR__MSG_EXT_FIRST) { /* an extension of a later release: skipped alone */
            n->msgs_unknown_type++;
            continue;
        }
        if (m.type == JR__MSG_NODE_REQUEST) {
            jr__rpc_on_request(n, f->from, &f->rpc, for_me);
            continue;
        }
        if (m.type == JR__MSG_NODE_RESPONSE) {
            jr__rpc_on_response(n, f->from, &f->rpc);
            continue;
        }
        jr_group *g = jr__map_get(&n->groups, m.group);
        if (!g || g->closed) {
            n->msgs_unknown_group++;
            if (!g && m.type == JR__MSG_VOUCH) vouch_unhosted(n, &m);
            continue;
        }
        if (g->damaged && m.type == JR__MSG_VOTE) continue; /* never grants a vote */
        if (m.type == JR__MSG_VOTE_RESP && !m.u.vote_resp.granted) jr__live_refused(g);
        /* a late heartbeat answer reaching a quiet leader leaves it quiet (raft.h) */
        uint64_t echoes = jr__raft_echoes(g->raft);
        rc = jr__raft_step(g->raft, n->now, &m);
        n->live.stats.late_hb_resps += jr__raft_echoes(g->raft) - echoes;
        if (rc == JR_EINVAL) n->msgs_invalid++; /* malformed, or a term out of bounds */
    }
    if (rc) jr__node_log(n, JR_LOG_ERROR, "validated frame failed to decode: %s", jr_strerror(rc));
}

int jr_node_recv(jr_node *n, const char *from, const void *frame, size_t len)
{
    if (!n || !from || (!frame && len)) return JR_EINVAL;
    if (n->closing) return JR_ECLOSED;
    jr__node_enter(n);
    int rc;
    jr__peer *p = jr__peer_find_name(n, from);
    jr__frame f;
    if (n->removed) {
        rc = jr__node_err(n, JR_EREMOVED,
                          "frame from %s ignored: this server was removed from "
                          "the cluster",
                          from);
        n->stats.frames_rejected++;
        jr__node_leave(n);
        return rc;
    }
    if (!p) {
        /* a join request is all a server the node does not know may send (peer.c) */
        rc = jr__peer_stranger(n, from, frame, len);
        if (rc == 0) {
            n->stats.frames_received++;
            n->stats.bytes_received += len;
            jr__node_want_tick(n); /* the answer leaves with the next tick's flush */
        } else {
            n->stats.frames_rejected++;
        }
        jr__node_leave(n);
        return rc;
    }
    if (p->id == n->self)
        rc = jr__node_err(n, JR_EAUTH, "frame from unknown server '%s'", from);
    else
        rc = check_frame(n, p, frame, len, &f);
    if (rc == 0 && p->removed) rc = jr__peer_refuse_removed(n, p);
    if (rc != 0) {
        n->stats.frames_rejected++;
        if (rc == JR_EREMOVED) jr__node_want_tick(n); /* the REMOVED request leaves then */
    } else {
        n->stats.frames_received++;
        n->stats.bytes_received += len;
        p->last_heard = n->now;
        dispatch(n, p, &f);
        /* No flush here: the next jr_node_tick, requested now, writes and syncs once for every
         * frame fed before it and sends one frame per peer (group commit across frames). What
         * a frame's messages made unpersisted stays in memory until then, and the answers
         * that vouch for it (JR__MF_DURABLE) wait for that sync. */
        jr__node_want_tick(n);
        rc = 0;
    }
    jr__node_leave(n);
    return rc;
}

/* Timers -----------------------------------------------------------------------------------*/

int jr_node_tick(jr_node *n)
{
    if (!n) return JR_EINVAL;
    if (n->closing) return JR_ECLOSED;
    jr__node_enter(n);
    n->want_tick = 0;
    n->rearm = 1;     /* the host's timer fired (or it polls): always re-arm, whatever the value */
    if (n->removed) { /* it takes no part: nothing runs but callbacks already queued */
        jr__node_drain(n);
        jr__node_leave(n);
        return 0;
    }
    jr__timer *t;
    jr__live_tick(n);      /* node heartbeats and peer liveness */
    jr__live_campaigns(n); /* rounds for groups waiting to campaign */
    jr__fsmr_tick(n);      /* state machines not whole, told to their leaders */
    while ((t = jr__heap_pop_due(&n->timers, n->now)) != NULL) t->fire(n, t);
    jr__node_drain(n); /* completions queued by API calls since the last flush */
    int rc = jr__node_flush(n, 1);
    jr__node_leave(n);
    return rc;
}

uint64_t jr_node_deadline(const jr_node *n)
{
    return n ? jr__node_next_deadline(n) : UINT64_MAX;
}

/* Introspection ----------------------------------------------------------------------------*/

const char *jr_node_name(const jr_node *n)
{
    return n ? n->name : "";
}

const char *jr_node_errmsg(const jr_node *n)
{
    return n ? n->errmsg : "";
}

int jr_node_stats_get(const jr_node *n, jr_node_stats *out)
{
    if (!n || !out || out->size == 0) return JR_EINVAL;
    jr_node_stats s = n->stats;
    s.size = sizeof s;
    s.groups = n->ngroups;
    s.msgs_unknown_group = n->msgs_unknown_group;
    s.msgs_unknown_type = n->msgs_unknown_type;
    s.msgs_unroutable = n->msgs_unroutable;
    s.send_failures = n->send_failures;
    if (n->wal) { /* every file sync the WAL made: flushes, votes, interval syncs, rotations */
        jr__wal_stats ws;
        jr__wal_stats_get(n->wal, &ws);
        s.wal_syncs = ws.syncs;
    }
    size_t sz = out->size < sizeof s ? out->size : sizeof s;
    memcpy(out, &s, sz);
    out->size = sz;
    return 0;
}
