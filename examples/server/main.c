/*
 * main.c — jetraft-server: one libjetraft node per process, hosted on a libuv loop.
 *
 * The loop owns every socket and timer: the node's transport is peer.c, its one timer a
 * uv_timer set to jr_node_deadline(), its clock uv_hrtime() (read once per client read while
 * that read's requests run: server_clock_hold). Clients speak the NATS protocol
 * (client.c) and the JetStream API (jsapi.c); core messages reach the clients of the other
 * servers over the same peer links (route.c). SIGTERM or SIGINT closes the node (which flushes
 * what is pending), the links and the clients, and exits 0; after SIGKILL a restart with the
 * same wal_dir recovers everything acknowledged (JR_SYNC_ALWAYS: no ack before its fsync).
 * When the node's WAL fails (an fsync or write error: the library then stores nothing until the
 * node is reopened), the server closes the node and reopens it from disk by itself, after a
 * jittered backoff that grows to a bound and while the open keeps failing; clients and peer
 * links stay connected meanwhile and JetStream requests get 503 (server_node_failed). An open
 * error no retry mends (server_open_permanent: a wrong data key, another server's wal_dir, an
 * invalid setting) is not retried: at start the server exits with EXIT_PERMANENT, after a WAL
 * failure it logs it once and stays up with its node closed.
 *
 * Usage: jetraft-server -c CONFIG.json, or one of the key tool modes (keytool.h).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "client.h"
#include "hugealloc.h"
#include "keytool.h"
#include "monitor.h"
#include "peer.h"
#include "powervfs.h"
#include "route.h"
#include "testclock.h"
#include "server.h"
#include "sublist.h"

/* The exit status of a start refused for a permanent open error (sysexits.h's EX_CONFIG). */
#define EXIT_PERMANENT 78

static uint64_t host_now(void *ctx)
{
    const server *s = ctx;
    return s && s->clock_held ? s->held_now : uv_hrtime();
}

static uint64_t wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
           (uint64_t)testclock_offset_ns(); /* 0 unless a test moves this clock */
}

static uint64_t host_wall(void *ctx)
{
    const server *s = ctx;
    return s && s->clock_held ? s->held_wall : wall_now();
}

void server_clock_hold(server *s)
{
    if (s->clock_held++) return;
    s->held_now = uv_hrtime();
    s->held_wall = wall_now();
}

void server_clock_release(server *s)
{
    if (s->clock_held) s->clock_held--;
}

static void on_tick(uv_timer_t *t);

/* Sets the uv timer to the node's deadline, rounded up to the loop's millisecond clock. */
static void arm_at(server *s, uint64_t deadline)
{
    if (s->closing) return;
    if (deadline == UINT64_MAX) {
        uv_timer_stop(&s->tick);
        s->armed = UINT64_MAX;
        return;
    }
    if (deadline == s->armed && uv_is_active((uv_handle_t *)&s->tick)) return;
    /* The timer is due already (it fires at the loop's next timer phase) and the new deadline
     * is due too, as after every publish (the node asks for a tick "now"): arming again would
     * fire it at that same phase, so it stays as it is. */
    if (deadline >= s->armed && uv_is_active((uv_handle_t *)&s->tick) &&
        uv_timer_get_due_in(&s->tick) == 0 && deadline <= uv_hrtime())
        return;
    /* libuv counts the timeout from its cached loop time: refresh it, so that a timer armed
     * late in a long loop turn does not fire early. */
    uv_update_time(s->loop);
    uint64_t now = uv_hrtime();
    uint64_t ms = deadline > now ? (deadline - now + 999999u) / 1000000u : 0;
    s->armed = deadline;
    uv_timer_start(&s->tick, on_tick, ms, 0);
}

static void host_arm(void *ctx, uint64_t deadline)
{
    arm_at(ctx, deadline);
}

static void host_log(void *ctx, int level, const char *msg)
{
    server *s = ctx;
    static const char *const names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    if (level > JR_LOG_INFO) return;
    /* A reopen retried while the disk still fails: the first attempt said why. */
    if (s->quiet_open && level == JR_LOG_ERROR) return;
    fprintf(stderr, "[%s] %s %s\n", s->cfg.name, names[level & 3], msg);
}

/* jr_host.sync_start: the node wrote a batch; its fdatasync runs on libuv's threadpool while
 * the loop goes on reading clients and peers, and on_sync_done reports it to the node. */
static void on_sync_work(uv_work_t *req)
{
    server *s = req->data;
    s->sync_rc = jr_sync_job_run(s->sync_job);
}

static void shutdown_server(server *s);

static void on_sync_done(uv_work_t *req, int status)
{
    server *s = req->data;
    jr_sync_job *job = s->sync_job;
    s->sync_job = NULL;
    int rc = status ? JR_EIO : s->sync_rc;
    if (s->sync_shutdown) { /* jr_node_close covers what the job did not report */
        shutdown_server(s);
        return;
    }
    if (!s->node) return;
    rc = jr_node_synced(s->node, job, rc);
    if (rc && rc != JR_ENOMEM) server_node_failed(s, rc);
}

static void host_sync_start(void *ctx, jr_sync_job *job)
{
    server *s = ctx;
    s->sync_job = job;
    s->sync_req.data = s;
    /* fails only without a work callback (libuv uv_queue_work) */
    (void)uv_queue_work(s->loop, &s->sync_req, on_sync_work, on_sync_done);
}

/* Ticks the node; an error other than JR_ENOMEM (which the next tick retries) is the WAL's
 * end. */
static void tick_node(server *s)
{
    int rc = jr_node_tick(s->node);
    if (rc && rc != JR_ENOMEM) server_node_failed(s, rc);
}

void server_kick(server *s)
{
    if (s->closing || !s->node || s->wal_failed) return;
    if (uv_hrtime() >= jr_node_deadline(s->node)) tick_node(s);
    if (!s->wal_failed) arm_at(s, jr_node_deadline(s->node));
}

static void on_tick(uv_timer_t *t)
{
    server *s = t->data;
    s->armed = UINT64_MAX;
    if (s->closing || !s->node || s->wal_failed) return;
    tick_node(s);
    if (!s->wal_failed) arm_at(s, jr_node_deadline(s->node));
}

/* ---- a failed WAL: close the node, reopen it from disk ------------------------------------- */

#define REOPEN_FIRST_MS 200u
#define REOPEN_MAX_MS 5000u
/* A reopened node that fails again within this is the same episode (a disk still failing):
 * the backoff keeps growing and nothing more is logged until the episode ends. */
#define REOPEN_STEADY_MS 10000u

static void on_reopen(uv_timer_t *t);

/* The next open after a wait drawn from [d/2, d] (servers that failed together do not retry
 * in step); d doubles up to REOPEN_MAX_MS. */
static void reopen_later(server *s)
{
    uint32_t d = s->reopen_backoff_ms;
    uint32_t wait = d / 2 + randombytes_uniform(d / 2 + 1);
    s->reopen_backoff_ms = d >= REOPEN_MAX_MS / 2 ? REOPEN_MAX_MS : 2 * d;
    uv_timer_start(&s->reopen, on_reopen, wait, 0);
}

static double episode_s(const server *s)
{
    return (double)(uv_hrtime() - s->failed_ns) / 1e9;
}

void server_node_failed(server *s, int rc)
{
    if (s->closing || !s->node || s->wal_failed) return;
    s->wal_failed = 1;
    s->stats.wal_failures++;
    s->episode_failures++;
    if (!s->episode) {
        s->episode = 1;
        s->episode_failures = 1;
        s->episode_reopened = 0;
        s->failed_ns = uv_hrtime();
        s->reopen_attempts = 0;
        s->reopen_backoff_ms = REOPEN_FIRST_MS;
        fprintf(stderr,
                "[%s] node: the WAL failed (%s: %s): nothing more is stored; closing the node "
                "and reopening it from disk\n",
                s->cfg.name, jr_strerror(rc), jr_node_errmsg(s->node));
    }
    /* No more ticks: each would only repeat the failure. The close waits for the next loop
     * turn, since this may run inside a node call (a callback's kick), where jr_node_close
     * would only be deferred. */
    uv_timer_stop(&s->tick);
    s->armed = UINT64_MAX;
    uv_timer_start(&s->reopen, on_reopen, 0, 0);
}

/* REOPEN_STEADY_MS after a reopen with no failure since: the episode is over. */
static void on_steady(uv_timer_t *t)
{
    server *s = t->data;
    if (s->closing || s->wal_failed || !s->episode) return;
    fprintf(stderr,
            "[%s] node: steady again: the WAL failed %" PRIu64 " time%s, %" PRIu64
            " open%s tried, over %.1f s\n",
            s->cfg.name, s->episode_failures, s->episode_failures == 1 ? "" : "s",
            s->reopen_attempts, s->reopen_attempts == 1 ? "" : "s",
            episode_s(s) - REOPEN_STEADY_MS / 1e3);
    s->episode = 0;
}

int server_open_permanent(int rc)
{
    return rc != JR_EIO && rc != JR_ENOSPC && rc != JR_ENOMEM;
}

/* Why an open error is permanent, for its log line. */
static const char *permanent_why(int rc)
{
    switch (rc) {
    case JR_EAUTH:
        return "the WAL and snapshot files were not written with this data key (another key, or "
               "with or without one)";
    case JR_EINVAL:
        return "the configuration or the directories are invalid for this server";
    case JR_EVERSION:
        return "the files are of a format this version does not know";
    case JR_ECORRUPT:
        return "the files are damaged beyond what recovery repairs";
    default:
        return "retrying would fail the same way";
    }
}

#define NODE_COUNTERS(X)                                                                           \
    X(frames_sent)                                                                                 \
    X(frames_received)                                                                             \
    X(frames_rejected)                                                                             \
    X(bytes_sent)                                                                                  \
    X(bytes_received)                                                                              \
    X(wal_syncs)                                                                                   \
    X(wal_bytes)                                                                                   \
    X(msgs_unknown_group)                                                                          \
    X(msgs_unroutable)                                                                             \
    X(send_failures)                                                                               \
    X(msgs_unknown_type)

void server_node_stats(const server *s, jr_node_stats *out)
{
    jr_node_stats cur;
    memset(&cur, 0, sizeof cur);
    cur.size = sizeof cur;
    if (s->node) jr_node_stats_get(s->node, &cur);
    memset(out, 0, sizeof *out);
    out->size = sizeof *out;
    out->groups = cur.groups;
#define ADD(f) out->f = s->node_base.f + cur.f;
    NODE_COUNTERS(ADD)
#undef ADD
}

/* Before a close: the node's counters join those of the nodes closed before it. */
static void keep_node_stats(server *s)
{
    jr_node_stats cur;
    memset(&cur, 0, sizeof cur);
    cur.size = sizeof cur;
    if (jr_node_stats_get(s->node, &cur) != 0) return;
#define ADD(f) s->node_base.f += cur.f;
    NODE_COUNTERS(ADD)
#undef ADD
}

static void on_reopen(uv_timer_t *t)
{
    server *s = t->data;
    if (s->closing || !s->wal_failed) return;
    if (s->node && s->sync_job) { /* the node is closed once its sync job is back */
        uv_timer_start(&s->reopen, on_reopen, 1, 0);
        return;
    }
    if (s->node) {
        /* Every pending request completes inside the close with JR_ECLOSED, which the clients
         * get as 503 (never an ack: nothing it covers was made durable). The node stays in
         * s->node during the close, as at shutdown: a callback's further call gets JR_ECLOSED. */
        keep_node_stats(s);
        jr_node_close(s->node);
        s->node = NULL;
        uv_timer_stop(&s->tick);
        s->armed = UINT64_MAX;
        reopen_later(s);
        return;
    }
    s->reopen_attempts++;
    s->stats.node_open_attempts++;
    jr_node *n = NULL;
    s->quiet_open = s->reopen_attempts > 1;
    int rc = jr_node_open(&s->nc, &n);
    s->quiet_open = 0;
    if (rc && server_open_permanent(rc)) {
        /* No retry mends it: say so once and stay closed (503 to JetStream requests, /healthz
         * unavailable with this reason) until an operator fixes it and restarts the server. */
        s->open_given_up = 1;
        snprintf(s->open_error, sizeof s->open_error, "%s (%s: %s)", s->errbuf, jr_err_name(rc),
                 permanent_why(rc));
        fprintf(stderr,
                "[%s] node: cannot reopen it: %s; a permanent error: not retrying; JetStream "
                "requests get 503 until the server is restarted\n",
                s->cfg.name, s->open_error);
        return;
    }
    if (rc) {
        if (s->reopen_attempts == 1) /* once per episode: on_steady counts them */
            fprintf(stderr, "[%s] node: cannot reopen it: %s; retrying with backoff\n", s->cfg.name,
                    s->errbuf);
        reopen_later(s);
        return;
    }
    s->node = n;
    s->wal_failed = 0;
    s->stats.node_reopens++;
    if (!s->episode_reopened) /* once per episode: on_steady counts the rest */
        fprintf(stderr,
                "[%s] node: reopened from disk %.1f s after its WAL failed (%" PRIu64
                " open%s tried)\n",
                s->cfg.name, episode_s(s), s->reopen_attempts, s->reopen_attempts == 1 ? "" : "s");
    s->episode_reopened = 1;
    uv_timer_start(&s->reopen, on_steady, REOPEN_STEADY_MS, 0);
    server_kick(s);
}

void server_deliver(server *s, const char *subject, const void *hdr, size_t hdr_len,
                    const void *data, size_t len)
{
    clients_deliver(s, NULL, subject, NULL, hdr, hdr_len, data, len);
}

static void shutdown_server(server *s)
{
    if (s->closing) return;
    if (s->sync_job) { /* on_sync_done comes back here once the job ran */
        s->sync_shutdown = 1;
        return;
    }
    fprintf(stderr, "[%s] shutting down\n", s->cfg.name);
    /* The node first: its close flushes the WAL and the frames it still owes, and completes
     * every pending request (answered to clients that are still connected). */
    jr_node_close(s->node);
    s->node = NULL;
    s->closing = 1;
    uv_timer_stop(&s->reopen);
    uv_close((uv_handle_t *)&s->reopen, NULL);
    monitor_stop(s);
    clients_stop(s);
    peers_stop(s);
    route_stop(s);
    uv_timer_stop(&s->tick);
    uv_close((uv_handle_t *)&s->tick, NULL);
    uv_close((uv_handle_t *)&s->sigterm, NULL);
    uv_close((uv_handle_t *)&s->sigint, NULL);
}

static void on_signal(uv_signal_t *h, int signum)
{
    (void)signum;
    shutdown_server(h->data);
}

static void usage(void)
{
    fprintf(stderr, "usage: jetraft-server -c CONFIG.json\n"
                    "       jetraft-server --keygen authority|identity|data PREFIX\n"
                    "       jetraft-server --sign --authority A.key --identity ID.pub --name NAME "
                    "[--cluster C] --out CERT\n"
                    "       jetraft-server --verify --authority A.pub --certificate CERT "
                    "[--cluster C] [--name NAME]\n"
                    "       jetraft-server --hash-password < password\n");
}

int main(int argc, char **argv)
{
    int tool = keytool_main(argc, argv);
    if (tool >= 0) return tool;
    const char *cfgpath = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "c:h")) != -1) {
        if (opt == 'c') {
            cfgpath = optarg;
        } else {
            usage();
            return opt == 'h' ? 0 : 2;
        }
    }
    if (!cfgpath) {
        usage();
        return 2;
    }
    static server srv;
    server *s = &srv;
    char err[600];
    if (srv_config_load(cfgpath, &s->cfg, err, sizeof err)) {
        fprintf(stderr, "jetraft-server: config: %s\n", err);
        return 1;
    }
    if (sodium_init() < 0) return 1;
    /* A write to a connection its peer closed must fail with EPIPE, not end the process. */
    signal(SIGPIPE, SIG_IGN);
    srand((unsigned)(uv_hrtime() ^ (uint64_t)getpid()));
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    for (int i = 0; i < 22; i++) s->server_id[i] = alphabet[randombytes_uniform(32)];
    s->server_id[0] = 'N';
    /* The URL other servers' clients may reconnect to: as configured, else the listen address
     * unless it is a wildcard one (which names no host a client could dial). */
    const char *h = s->cfg.client_host;
    if (s->cfg.client_advertise)
        snprintf(s->advertise, sizeof s->advertise, "%s", s->cfg.client_advertise);
    else if (strcmp(h, "0.0.0.0") && strcmp(h, "::") && strcmp(h, "[::]") && *h)
        snprintf(s->advertise, sizeof s->advertise, strchr(h, ':') ? "[%s]:%d" : "%s:%d", h,
                 s->cfg.client_port);
    s->started_ns = host_wall(NULL);
    s->armed = UINT64_MAX;
    s->loop = uv_default_loop();
    testclock_open(s->loop);
    s->subs = sublist_new();
    if (!s->subs) return 1;

    memset(&s->host, 0, sizeof s->host);
    s->host.version = JR_HOST_VERSION;
    s->host.ctx = s;
    s->host.send = peers_send;
    s->host.now = host_now;
    s->host.arm = host_arm;
    s->host.log = host_log;
    s->host.wall = host_wall;
    if (s->cfg.sync_offload) s->host.sync_start = host_sync_start;

    const char **peer_names = calloc(s->cfg.npeers, sizeof *peer_names);
    if (!peer_names) return 1;
    for (size_t i = 0; i < s->cfg.npeers; i++) peer_names[i] = s->cfg.peers[i].name;
    jr_node_config nc;
    jr_node_config_init(&nc);
    nc.name = s->cfg.name;
    nc.cluster = s->cfg.cluster;
    nc.tags = (const char *const *)s->cfg.tags;
    nc.ntags = s->cfg.ntags;
    nc.peers = peer_names;
    nc.npeers = s->cfg.npeers;
    nc.wal_dir = s->cfg.wal_dir;
    nc.store_dir = s->cfg.store_dir;
    jr_vfs *base = powervfs_open(s->loop, s->cfg.name); /* NULL (POSIX) unless a test asks */
    if (base) s->host.sync_start = NULL;                /* the power-loss vfs is the loop's alone */
    nc.vfs = timedvfs_init(&s->tvfs, base ? base : jr_vfs_posix());
    nc.host = &s->host;
    nc.election_timeout_ms = s->cfg.election_timeout_ms;
    nc.heartbeat_ms = s->cfg.heartbeat_ms;
    nc.sync_policy = s->cfg.sync_interval ? JR_SYNC_INTERVAL : JR_SYNC_ALWAYS;
    if (s->cfg.has_data_key) { /* encryption at rest: WAL, stores, snapshot files */
        nc.key = s->cfg.data_key;
        nc.key_len = sizeof s->cfg.data_key;
    }
    nc.sync_interval_ms = s->cfg.sync_interval_ms;
    nc.max_frame_bytes = s->cfg.max_frame_bytes;
    nc.unique_tag = s->cfg.unique_tag;
    nc.max_store_bytes = s->cfg.max_store_bytes;
    nc.max_assets = s->cfg.max_assets;
    nc.streams = 1;
    nc.request_timeout_ms = s->cfg.request_timeout_ms;
    /* a group leaderless for an election timeout answers 10008 at once, as JetStream does */
    nc.leaderless_fail_ms = s->cfg.election_timeout_ms;
    nc.max_payload = s->cfg.max_payload;
    nc.alloc = s->cfg.huge_pages ? hugealloc_get(1) : NULL; /* NULL: the malloc family */
    nc.errbuf = s->errbuf;
    nc.errbuf_len = sizeof s->errbuf;
    s->nc = nc; /* a reopen after a WAL failure opens the node the same way */

    /* Handles the node may use (the timer through arm, peers through send) exist before it. */
    uv_timer_init(s->loop, &s->tick);
    s->tick.data = s;
    uv_timer_init(s->loop, &s->reopen);
    s->reopen.data = s;
    int rc = jr_node_open(&s->nc, &s->node);
    if (rc && server_open_permanent(rc)) {
        /* EX_CONFIG: a supervisor that restarts on failure can be told not to (systemd's
         * RestartPreventExitStatus=78); a restart would fail the same way. */
        fprintf(stderr, "jetraft-server: cannot open the node: %s (%s: %s); not starting\n",
                s->errbuf, jr_err_name(rc), permanent_why(rc));
        return EXIT_PERMANENT;
    }
    if (rc) {
        fprintf(stderr, "jetraft-server: cannot open the node: %s (%s); not starting\n", s->errbuf,
                jr_err_name(rc));
        return 1;
    }
    if ((rc = route_start(s)) != 0) {
        fprintf(stderr, "jetraft-server: %s\n", uv_strerror(rc));
        jr_node_close(s->node);
        return 1;
    }
    if ((rc = peers_start(s)) != 0) {
        fprintf(stderr, "jetraft-server: cluster_listen %s:%d: %s\n", s->cfg.cluster_host,
                s->cfg.cluster_port, uv_strerror(rc));
        jr_node_close(s->node);
        return 1;
    }
    if ((rc = clients_start(s)) != 0) {
        fprintf(stderr, "jetraft-server: listen %s:%d: %s\n", s->cfg.client_host,
                s->cfg.client_port, uv_strerror(rc));
        jr_node_close(s->node);
        return 1;
    }
    if (s->cfg.http_host && (rc = monitor_start(s)) != 0) {
        fprintf(stderr, "jetraft-server: http_listen %s:%d: cannot listen\n", s->cfg.http_host,
                s->cfg.http_port);
        jr_node_close(s->node);
        return 1;
    }
    uv_signal_init(s->loop, &s->sigterm);
    uv_signal_init(s->loop, &s->sigint);
    s->sigterm.data = s->sigint.data = s;
    uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    uv_signal_start(&s->sigint, on_signal, SIGINT);
    fprintf(stderr, "[%s] ready: clients on %s:%d%s, cluster on %s:%d (%s)\n", s->cfg.name,
            s->cfg.client_host, s->cfg.client_port,
            s->cfg.nusers ? " (users and passwords)" : " (no authentication)", s->cfg.cluster_host,
            s->cfg.cluster_port,
            s->cfg.insecure_cluster ? "insecure: plain links, no authentication" : "secure links");
    server_kick(s);
    uv_run(s->loop, UV_RUN_DEFAULT);
    uv_loop_close(s->loop);
    peers_free(s);
    clients_free(s);
    route_free(s);
    sublist_free(s->subs);
    free(peer_names);
    srv_config_free(&s->cfg);
    return 0;
}
