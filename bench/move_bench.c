/*
 * move_bench — how long a stream's peer change takes and what it costs the publishers: growing
 * a stream R3 -> R4 and moving one of its replicas to another server, on a 4-server cluster
 * whose nodes each run on their own thread (mt_host.h). One JSON line per case on stdout.
 *
 *   move_bench [--vfs mem|posix] [--dir PATH] [--size 100M,1G] [--msg-bytes B]
 *              [--case grow,move,none] [--publish 0,1] [--window N] [--steady-seconds S]
 *              [--max-seconds S] [--catchup-log BYTES] [--catchup-queue BYTES] [--limit F]
 *              [--rate R] [--runs N]
 *
 * Each case runs on a fresh cluster: servers n0..n3, server i tagged "s<i>"; one stream BENCH on
 * bench.> with 3 replicas and file storage is filled by a publisher on the stream leader's
 * thread (`window` publishes outstanding, default 256, messages of --msg-bytes, default 1,024)
 * until its state holds --size bytes (default 100M; suffixes K, M, G). Then:
 *   grow  jr_stream_update with replicas 4: the fourth server joins as an observer, restores
 *         the stream snapshot, fetches every message from a peer and is promoted;
 *   move  jr_stream_update with the placement tag "!s<k>" for a follower k of the stream (the
 *         stand-in for evacuating that peer): a server that fits joins and catches up as in a
 *         grow, then k is removed;
 *   none  no change (a control, not run unless asked for): the "during" window is the 3 s that
 *         follow the steady one, so its ratio shows how far the steady rate alone drifts or
 *         swings between windows on this machine; the lines of a change are read against it.
 * The change has converged when stream info (asked every 5 ms) lists exactly the new peer set,
 * every replica current and none an observer or pending; a change that has not converged after
 * --max-seconds (default 30) ends the run with the replicas' state on stderr. --limit F gives
 * BENCH a byte limit of F times the fill size (F > 1.05; default none): once the stream reaches
 * it the oldest messages go as new ones come, as on a stream kept by limits, so the windows
 * measure publishing whose store space is recycled rather than grown (the memory vfs then
 * reuses the chunks of removed blocks instead of faulting in fresh pages for every message);
 * "max_bytes" in the line, 0 without. --rate R (messages per second; default 0, as fast as the
 * window allows) offers the publishes at that rate once the stream is filled, still at most
 * `window` outstanding: the steady window then shows whether the cluster keeps up with that
 * load, and the change whether it still does while a peer joins (a cluster with headroom, as
 * one is run, rather than one saturated by a publisher that takes every core); "rate" in the
 * line. --catchup-log sets
 * every server's jr_node_config.catchup_log_bytes (suffixes K, M, G; default 256M): the bound on
 * a joining replica's Raft log while it copies; --catchup-queue its catchup_queue_bytes (default
 * 64M): the bound on what its queue holds copied meanwhile, beyond which the log's bound shrinks.
 *   bytes            the stream's bytes (its state) when the update was issued
 *   source           the servers whose chunks the joining replica fetched (a follower first:
 *                    the leader keeps its thread for the publishers)
 *   update_s         jr_stream_update to its answer (the meta leader committed the peer set)
 *   seconds          the answer to convergence
 *   catchup_mb_s     bytes / seconds / 1e6
 *   fetched_mb       message bytes the joining replica fetched by catch-up (its node's count)
 *   cpu_s            CPU time of the whole process (every node, the publisher) over those
 *                    seconds; joiner_cpu_s and leader_cpu_s: the joining server's and the
 *                    stream leader's threads alone
 *   mb_per_cpu_s     bytes / cpu_s: the catch-up rate per core the cluster used (without a
 *                    publisher, what a machine with cores to spare would see)
 *   minor_faults     the process's minor page faults over those seconds: memory touched for
 *                    the first time, such as the joining replica's files on a memory vfs whose
 *                    freed chunks (and the C library's freed heap) no earlier run left to reuse
 *   paced, paused_s  the joining replica's chunks followed by a pause and the pauses' total:
 *                    while its group commits proposals, a joining observer's copy takes a
 *                    quarter of the time (docs/internals.md "Catch-up", pacing); 0 when idle
 *   later            snapshots the joining replica installed while restoring (the leader's log
 *                    went past it: it fetches again what the lost entries held)
 *   queued_mb        entry bytes the joining replica queued during its copy and applied after
 *   taken_mb         of those, the entries in its log (queued and left there, or not applied
 *                    yet) copied into its queue before a later snapshot replaced that log
 *   dropped_mb       queued entry bytes a later snapshot made it drop and fetch the messages
 *                    of again (only once it kept 8 later snapshots: docs/internals.md)
 *   queue_peak_mb    the most entry bytes its queue held copied at once (docs/internals.md
 *                    "Catch-up": the queue leaves an entry in its group's log, and copies
 *                    entries only before a later snapshot replaces that log)
 *   kept_mb          the most log bytes a snapshot of the stream leader's node left behind it
 *                    (up to join_keep_bytes, 256 MiB, for a member catching up, keep_bytes,
 *                    64 MiB, for a follower)
 *   log_peak_mb      the most entry bytes the joining replica's Raft log held at once while it
 *                    copied (at most catchup_log_bytes, 256 MiB, and one entry: docs/internals.md
 *                    "Catch-up", Log); log_drops: the APPENDs it refused meanwhile (its log was
 *                    full: it fell behind and its leader probed it, at most once per heartbeat)
 *   holds, held_s    the times a stream leader held its publishes back while the joining
 *                    replica copied (the group had outrun its copy once: docs/internals.md
 *                    "Catch-up", Convergence) and their total length
 *   load1            the machine's load average when the update was issued (other programs
 *                    slow the wall-clock figures; the CPU figures much less)
 * With --publish 1 (both by default) the publisher keeps running through the move:
 *   pub_steady_msgs_s  acknowledged publishes per second over --steady-seconds (default 1)
 *                      just before the update, once every replica is current after the fill
 *                      (stream info asked every 5 ms there too)
 *   pub_during_msgs_s  the same from the update's answer to convergence
 *   pub_after_msgs_s   the same window as pub_steady_msgs_s, right after convergence (the new
 *                      peer set: R4 after a grow)
 *   ratio, ratio_after during / steady and during / after (the target is at least 0.7); on a
 *                      machine of two cores the steady rate swings with how the scheduler
 *                      places the group's three threads, so a ratio whose steady and after
 *                      rates disagree much says little: run it again
 *   pub_failed         publishes that failed from the update to the end of the after
 *                      window; pub_failed_change those that failed before convergence, and
 *                      pub_failed_by all of them by error ("JR_ELEADERLOST:256")
 *   copy_s, pub_copy_msgs_s    the time the joining replica copied messages (fetching, or
 *                      paused between chunks) and the publish rate then (sampled every 5 ms)
 *   drain_s, pub_drain_msgs_s  the same while it applied the entries queued meanwhile
 * and for each window (steady_ before, none during the change, after_ after it):
 *   leader_us_msg      the stream leader's thread CPU time (publisher included) per publish
 *   leader_msgs_write  publishes per WAL write of the leader (its batches: a per-batch cost
 *                      spread over fewer messages shows here)
 *   leader_bytes_msg   bytes the leader sent per publish (each follower's copy, acks, pings)
 *   cores              the process's CPU time per second: on a machine shared with other
 *                      work, a ratio whose cores fell as much is the scheduler's as much as
 *                      the library's
 *   node_us_msg        each node's thread CPU time per publish, n0 first
 *   faults_msg         the process's minor page faults per publish (memory touched for the
 *                      first time: a store or log growing into fresh pages)
 * With --runs N (default 1) each configuration runs N times, each on a fresh cluster, and a
 * line with "summary":true follows the N lines of a publishing case: ratio_median,
 * ratio_after_median, ratio_min and ratio_max over the runs.
 * MOVE_BENCH_PERF_CTL names the control fifo of perf record -D -1 --control fifo:PATH: the
 * profile then covers the change only, or with MOVE_BENCH_PERF_WINDOW=steady the steady window.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "jetraft.h"
#include "js/js.h"
#include "node/node.h"
#include "mt_host.h"

#define NODES 4
#define MAX_LIST 8

enum { CASE_GROW = 1, CASE_MOVE = 2, CASE_NONE = 4 };
#define CONTROL_SECONDS 3.0 /* the "during" window of the control case */

static const char *case_name(int which)
{
    return which == CASE_GROW ? "grow" : which == CASE_MOVE ? "move" : "none";
}

typedef struct opts {
    int posix;
    const char *dir;
    uint64_t size[MAX_LIST]; /* stream bytes to fill before the change */
    int nsizes;
    size_t msg_bytes;
    int cases;
    int publish[2], npublish;
    int window;
    double steady_s;
    double max_s;           /* give up on a change that has not converged by then */
    uint64_t catchup_log;   /* jr_node_config.catchup_log_bytes; 0: the default */
    uint64_t catchup_queue; /* jr_node_config.catchup_queue_bytes; 0: the default */
    double limit;           /* BENCH's max_bytes as a multiple of the fill size; 0: none */
    double rate;            /* publishes offered per second after the fill; 0: unpaced */
    int runs;               /* each configuration this many times, on a fresh cluster each */
} opts;

/* ---------------------------------------------------------------------------------------------
 * The cluster: four servers, server i tagged "s<i>"
 */
static const char *const tag_names[NODES][1] = {{"s0"}, {"s1"}, {"s2"}, {"s3"}};

static void configure(void *arg, int i, jr_node_config *nc)
{
    const opts *o = arg;
    nc->catchup_log_bytes = o->catchup_log;
    nc->catchup_queue_bytes = o->catchup_queue;
    nc->tags = tag_names[i];
    nc->ntags = 1;
}

/* ---------------------------------------------------------------------------------------------
 * The publisher, on the stream leader's thread: `window` publishes outstanding, each ack issues
 * the next one until told to stop. The main thread reads the counters (atomics) and sets stop.
 */
typedef struct pubber {
    const opts *o;
    jr_node *node;
    uint8_t *data;
    uint64_t acked, failed, outstanding; /* acked and failed are read by the main thread */
    uint64_t failed_by[128];             /* failures by -status (read by the main thread) */
    int stop;                            /* set by the main thread */
    mt_waiter done;                      /* completed when stopped and nothing is outstanding */
    int done_sent;
    /* --rate: set by the main thread before the pacer starts, then only the pacer's ticks (on
     * the leader's thread) issue publishes: as many as the rate allows since t0 */
    int paced;
    uint64_t t0_ns, issued, issued0;
    pthread_t pacer;
    mt_loop *loop;
} pubber;

static void issue(pubber *p);

static void on_ack(void *arg, int status, const jr_pub_ack *ack)
{
    pubber *p = arg;
    (void)ack;
    p->outstanding--;
    if (status) {
        __atomic_add_fetch(&p->failed, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&p->failed_by[-status > 0 && -status < 128 ? -status : 0], 1,
                           __ATOMIC_RELAXED);
    } else
        __atomic_add_fetch(&p->acked, 1, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
        if (!p->paced) issue(p);
        return;
    }
    if (p->outstanding == 0 && !p->done_sent) {
        p->done_sent = 1;
        mt_waiter_done(&p->done, 0, NULL);
    }
}

static void issue(pubber *p)
{
    int rc =
        jr_publish(p->node, "bench.orders", NULL, 0, p->data, p->o->msg_bytes, NULL, on_ack, p);
    if (rc) mt_die("jr_publish", rc, NULL);
    p->outstanding++;
    p->issued++;
}

static void pub_start_task(void *arg, jr_node *node)
{
    pubber *p = arg;
    p->node = node;
    for (int k = 0; k < p->o->window; k++) issue(p);
}

/* The pacer's tick, on the leader's thread: issues what the rate allows by now, at most `window`
 * outstanding (a cluster that cannot keep up falls behind the offered load, and the tick after
 * its acks catches up to it); once stopped, completes `done` if nothing is outstanding. */
static void pace_tick(void *arg, jr_node *node)
{
    pubber *p = arg;
    (void)node;
    if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
        if (p->outstanding == 0 && !p->done_sent) {
            p->done_sent = 1;
            mt_waiter_done(&p->done, 0, NULL);
        }
        return;
    }
    double secs = (double)(bench_now_ns() - p->t0_ns) * 1e-9;
    uint64_t allowed = p->issued0 + (uint64_t)(secs * p->o->rate);
    while (p->issued < allowed && p->outstanding < (uint64_t)p->o->window) issue(p);
}

static void *pacer_main(void *arg)
{
    pubber *p = arg;
    while (!__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
        mt_run_on(p->loop, pace_tick, p);
        usleep(1000);
    }
    mt_run_on(p->loop, pace_tick, p); /* sees the stop */
    return NULL;
}

static void pace_set(void *arg, jr_node *node)
{
    pubber *p = arg;
    (void)node;
    p->paced = 1;
    p->t0_ns = bench_now_ns();
    p->issued0 = p->issued;
}

/* From the fill's pace (every ack issues the next) to the offered rate (--rate): pace_set runs
 * on the leader's thread before the pacer's first tick (its tasks run in the order posted). */
static void pub_pace(pubber *p, mt_loop *leader)
{
    p->loop = leader;
    mt_run_on(leader, pace_set, p);
    if (pthread_create(&p->pacer, NULL, pacer_main, p)) mt_die("pthread_create", JR_ENOMEM, NULL);
}

static uint64_t pub_acked(pubber *p)
{
    return __atomic_load_n(&p->acked, __ATOMIC_RELAXED);
}

static void pub_stop(pubber *p)
{
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
    mt_waiter_wait(&p->done);
    if (p->loop) pthread_join(p->pacer, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Stream info, read on the main thread
 */
typedef struct view {
    mt_waiter w;
    uint64_t bytes, msgs;
    char leader[32];
    char peers[NODES][32]; /* every replica but the leader */
    char state[NODES][64]; /* each one's flags and lag, for a message */
    int npeers;
    int settled; /* every replica current, none an observer or pending */
} view;

static void view_cb(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    view *v = arg;
    if (status == 0) {
        v->bytes = info->state->bytes;
        v->msgs = info->state->msgs;
        snprintf(v->leader, sizeof v->leader, "%s",
                 info->cluster->leader ? info->cluster->leader : "");
        v->npeers = 0;
        v->settled = info->cluster->leader != NULL;
        for (size_t i = 0; i < info->cluster->nreplicas && v->npeers < NODES; i++) {
            const jr_peer_info *pi = info->cluster->replicas[i];
            snprintf(v->state[v->npeers], sizeof v->state[0], "%s%s%s%s lag %" PRIu64,
                     pi->current ? "current" : "not current", pi->observer ? " observer" : "",
                     pi->pending ? " pending" : "", pi->offline ? " offline" : "", pi->lag);
            snprintf(v->peers[v->npeers++], sizeof v->peers[0], "%s", pi->name);
            if (!pi->current || pi->observer || pi->pending) v->settled = 0;
        }
    }
    mt_waiter_done(&v->w, status, msg);
}

static void view_task(void *arg, jr_node *node)
{
    int rc = jr_stream_info_get(node, "BENCH", view_cb, arg);
    if (rc) mt_waiter_done(&((view *)arg)->w, rc, NULL);
}

/* Reads stream info through server i: 0 or the request's error. */
static int view_get(mt_cluster *c, int i, view *v)
{
    memset(v, 0, sizeof *v);
    mt_waiter_init(&v->w, NULL);
    mt_run_on(&c->loops[i], view_task, v);
    return mt_waiter_wait(&v->w);
}

static int view_has(const view *v, const char *name)
{
    if (!strcmp(v->leader, name)) return 1;
    for (int i = 0; i < v->npeers; i++)
        if (!strcmp(v->peers[i], name)) return 1;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The update
 */
typedef struct update {
    mt_waiter w;
    jr_stream_config cfg;
    jr_placement pl;
    const char *tags[1];
    char tag[16];
} update;

static void update_task(void *arg, jr_node *node)
{
    update *u = arg;
    int rc = jr_stream_update(node, &u->cfg, mt_admin_cb, &u->w);
    if (rc) mt_waiter_done(&u->w, rc, NULL);
}

/* A node's catch-up counters (js.h), read on its thread. */
typedef struct cu_count {
    mt_waiter w;
    uint64_t bytes, paced, paused_ns, later, drained, served, queue_peak, kept, taken, dropped;
    uint64_t holds, held_ns;      /* the node's stream leaders' publish holds (hold.c) */
    uint64_t log_peak, log_drops; /* BENCH's replica on the node (raft.h jr__raft_capped_*) */
    int phase;                    /* BENCH's catch-up on the node: JR__CU_*, -1 if none */
} cu_count;

static void cu_count_task(void *arg, jr_node *node)
{
    cu_count *f = arg;
    jr__js *js = jr__js_of(node);
    const jr__meta_stream *s = jr__meta_stream_find(&js->st, "BENCH");
    const jr__srep *r = s ? jr__srep_find(js, s->group) : NULL;
    f->phase = r && r->cu ? jr__catchup_phase(r->cu) : -1;
    if (r && r->g) {
        f->log_peak = jr__raft_capped_peak(jr__group_consensus(r->g));
        f->log_drops = jr__raft_capped_drops(jr__group_consensus(r->g));
    }
    f->bytes = js->catchup_bytes;
    f->paced = js->catchup_paced;
    f->paused_ns = js->catchup_paused_ns;
    f->later = js->catchup_later;
    f->taken = js->catchup_taken;
    f->dropped = js->catchup_dropped;
    f->drained = js->catchup_drained;
    f->served = js->catchup_served;
    f->queue_peak = js->catchup_queue_peak;
    f->kept = node->kept_max;
    f->holds = js->catchup_holds;
    f->held_ns = js->catchup_held_ns;
    mt_waiter_done(&f->w, 0, NULL);
}

static cu_count cu_counts(mt_cluster *c, int i)
{
    cu_count f;
    memset(&f, 0, sizeof f);
    if (i < 0) return f;
    mt_waiter_init(&f.w, NULL);
    mt_run_on(&c->loops[i], cu_count_task, &f);
    mt_waiter_wait(&f.w);
    return f;
}

/* The machine's 1-minute load average (/proc/loadavg), or -1: the wall-clock figures of a run
 * on a machine busy with other work are the scheduler's as much as the library's. */
static double load1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

/* With MOVE_BENCH_PERF_CTL naming perf record's control fifo (perf record -D -1 --control
 * fifo:PATH), profiles only from the update to the convergence, or with MOVE_BENCH_PERF_WINDOW
 * "steady" only the steady window before it. */
static void perf_ctl(const char *window, const char *cmd)
{
    const char *path = getenv("MOVE_BENCH_PERF_CTL");
    const char *want = getenv("MOVE_BENCH_PERF_WINDOW");
    if (!path || strcmp(want ? want : "change", window)) return;
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "%s\n", cmd);
    fclose(f);
}

/* A node's stats (jr_node_stats), read on its thread. */
typedef struct stats_read {
    mt_waiter w;
    jr_node_stats st;
} stats_read;

static void stats_task(void *arg, jr_node *node)
{
    stats_read *r = arg;
    r->st.size = sizeof r->st;
    mt_waiter_done(&r->w, jr_node_stats_get(node, &r->st), NULL);
}

static jr_node_stats node_stats(mt_cluster *c, int i)
{
    stats_read r;
    memset(&r, 0, sizeof r);
    mt_waiter_init(&r.w, NULL);
    mt_run_on(&c->loops[i], stats_task, &r);
    mt_waiter_wait(&r.w);
    return r.st;
}

/* What the publishers got over a window, and what it cost: opened by win_open, closed by
 * win_close (the leader's figures are those of node `li`). */
typedef struct window {
    int li;
    uint64_t t0, a0, acked, f0, faults;
    double c0, l0, secs, cores, leader_cpu;
    double n0[NODES], node_cpu[NODES]; /* every node's thread: at the open, then its growth */
    jr_node_stats s0, st;              /* the leader's stats at the open; then their growth */
} window;

static void win_open(window *w, mt_cluster *c, int li, pubber *p)
{
    memset(w, 0, sizeof *w);
    w->li = li;
    w->s0 = node_stats(c, li);
    w->a0 = pub_acked(p);
    w->t0 = bench_now_ns();
    w->c0 = bench_cpu_s();
    w->f0 = bench_minflt();
    w->l0 = mt_loop_cpu_s(&c->loops[li]);
    for (int i = 0; i < NODES; i++) w->n0[i] = mt_loop_cpu_s(&c->loops[i]);
}

static void win_close(window *w, mt_cluster *c, pubber *p)
{
    w->acked = pub_acked(p) - w->a0;
    w->secs = (double)(bench_now_ns() - w->t0) * 1e-9;
    w->cores = w->secs > 0 ? (bench_cpu_s() - w->c0) / w->secs : 0;
    w->faults = bench_minflt() - w->f0;
    w->leader_cpu = mt_loop_cpu_s(&c->loops[w->li]) - w->l0;
    for (int i = 0; i < NODES; i++) w->node_cpu[i] = mt_loop_cpu_s(&c->loops[i]) - w->n0[i];
    jr_node_stats s = node_stats(c, w->li);
    w->st.frames_sent = s.frames_sent - w->s0.frames_sent;
    w->st.bytes_sent = s.bytes_sent - w->s0.bytes_sent;
    w->st.wal_syncs = s.wal_syncs - w->s0.wal_syncs;
}

static double win_rate(const window *w)
{
    return w->secs > 0 ? (double)w->acked / w->secs : 0;
}

/* Publishes for o->steady_s with stream info asked every 5 ms, as while a change converges:
 * both rates pay for it. */
static void steady_window(const opts *o, mt_cluster *c, int li, pubber *p, window *w)
{
    view v;
    perf_ctl("steady", "enable");
    win_open(w, c, li, p);
    while (bench_now_ns() - w->t0 < (uint64_t)(o->steady_s * 1e9)) {
        mt_sleep_ms(5);
        view_get(c, li, &v);
    }
    win_close(w, c, p);
    perf_ctl("steady", "disable");
}

/* Prints a window's figures under `pre` (the leader's CPU per publish, its messages per WAL
 * write and bytes sent per publish: batching). */
static void win_print(const char *pre, const window *w)
{
    double n = w->acked ? (double)w->acked : 1;
    printf(",\"%sleader_us_msg\":%.2f,\"%sleader_msgs_write\":%.1f,"
           "\"%sleader_bytes_msg\":%.0f,\"%scores\":%.2f,\"%sfaults_msg\":%.2f",
           pre, w->leader_cpu * 1e6 / n, pre,
           w->st.wal_syncs ? (double)w->acked / (double)w->st.wal_syncs : 0, pre,
           (double)w->st.bytes_sent / n, pre, w->cores, pre, (double)w->faults / n);
    printf(",\"%snode_us_msg\":[", pre);
    for (int i = 0; i < NODES; i++) printf("%s%.2f", i ? "," : "", w->node_cpu[i] * 1e6 / n);
    printf("]");
}

/* What one run of a case yields for the summary of repeated runs: during / steady and during /
 * after (0 without a publisher). */
typedef struct result {
    double ratio, ratio_after;
} result;

static result run_case(const opts *o, int which, uint64_t size, int publishing)
{
    char root[512] = "";
    if (o->posix) snprintf(root, sizeof root, "%s/jr-move-bench-%d", o->dir, (int)getpid());
    mt_opts mo = {.nodes = NODES,
                  .posix = o->posix,
                  .root = root,
                  .configure = configure,
                  .arg = (void *)o,
                  .log = getenv("MOVE_BENCH_LOG") ? atoi(getenv("MOVE_BENCH_LOG")) : 0};
    mt_cluster c;
    mt_cluster_open(&c, &mo);
    jr_stream_config scfg;
    bench_stream_config(&scfg, 3);
    uint64_t max_bytes = o->limit > 0 ? (uint64_t)((double)size * o->limit) : 0;
    if (max_bytes) scfg.max_bytes = (int64_t)max_bytes;
    int leader = mt_stream_add(&c, &scfg);
    mt_sleep_ms(300);

    /* fill */
    pubber p;
    memset(&p, 0, sizeof p);
    p.o = o;
    p.data = malloc(o->msg_bytes);
    if (!p.data) mt_die("malloc", JR_ENOMEM, NULL);
    for (size_t i = 0; i < o->msg_bytes; i++) p.data[i] = (uint8_t)(i * 131u + (i >> 7) * 7u);
    mt_waiter_init(&p.done, NULL);
    mt_run_on(&c.loops[leader], pub_start_task, &p);
    view v;
    for (;;) {
        mt_sleep_ms(20);
        uint64_t est = pub_acked(&p) * (uint64_t)o->msg_bytes;
        if (est + est / 50 < size) continue;
        if (view_get(&c, leader, &v) == 0 && v.bytes >= size) break;
    }
    window before, during, after;
    memset(&before, 0, sizeof before);
    memset(&after, 0, sizeof after);
    if (!publishing) {
        /* a quiet cluster: every replica has applied the fill, and what it started (snapshots,
         * store marks) is done */
        pub_stop(&p);
        for (int k = 0; k < 1000 && (view_get(&c, leader, &v) != 0 || !v.settled); k++)
            mt_sleep_ms(10);
        mt_sleep_ms(500);
    } else {
        if (o->rate > 0) pub_pace(&p, &c.loops[leader]);
        /* the fill leaves followers behind the leader (it sends them their backlog for a
         * while): the steady window starts once every replica is current again (at most 5 s) */
        for (int k = 0; k < 500 && (view_get(&c, leader, &v) != 0 || !v.settled); k++)
            mt_sleep_ms(10);
        steady_window(o, &c, leader, &p, &before);
    }
    if (view_get(&c, leader, &v) != 0) mt_die("stream info", JR_ENOLEADER, NULL);
    uint64_t bytes = v.bytes;
    char lname[32];
    snprintf(lname, sizeof lname, "%s", v.leader);

    /* the new peer (grow) or the peer moved away from (move) */
    char gone[32] = "";
    update u;
    memset(&u, 0, sizeof u);
    if (which == CASE_GROW) {
        bench_stream_config(&u.cfg, 4);
    } else {
        bench_stream_config(&u.cfg, 3);
    }
    if (max_bytes) u.cfg.max_bytes = (int64_t)max_bytes;
    if (which == CASE_MOVE) {
        snprintf(gone, sizeof gone, "%s", v.peers[0]);
        snprintf(u.tag, sizeof u.tag, "!s%d", mt_index(&c, gone));
        u.tags[0] = u.tag;
        jr_placement_init(&u.pl);
        u.pl.tags = u.tags;
        u.pl.ntags = 1;
        u.cfg.placement = &u.pl;
    }
    int joiner = -1;
    for (int i = 0; i < NODES; i++)
        if (!view_has(&v, c.names[i])) joiner = i;
    cu_count f0 = cu_counts(&c, joiner), s0[NODES];
    for (int i = 0; i < NODES; i++) s0[i] = cu_counts(&c, i);

    uint64_t fail0 = __atomic_load_n(&p.failed, __ATOMIC_RELAXED), by0[128], fail_conv = 0;
    for (int k = 0; k < 128; k++) by0[k] = __atomic_load_n(&p.failed_by[k], __ATOMIC_RELAXED);
    perf_ctl("change", "enable");
    double cpu0 = bench_cpu_s(), tcpu0[NODES];
    uint64_t flt0 = bench_minflt(), faults = 0;
    for (int i = 0; i < NODES; i++) tcpu0[i] = mt_loop_cpu_s(&c.loops[i]);
    double load = load1();
    uint64_t t_call = bench_now_ns();
    if (mo.log) fprintf(stderr, "%9.3f ms update\n", (double)(t_call - c.t_open) / 1e6);
    if (which != CASE_NONE) {
        mt_waiter_init(&u.w, NULL);
        mt_run_on(&c.loops[leader], update_task, &u);
        int rc = mt_waiter_wait(&u.w);
        if (rc) mt_die("jr_stream_update", rc, u.w.msg);
    }
    uint64_t t_answer = bench_now_ns(), a1 = pub_acked(&p);
    uint64_t t_conv = 0, a2 = 0;
    if (publishing) win_open(&during, &c, mt_index(&c, lname), &p);
    double cpu = 0, tcpu[NODES];
    /* publishes acknowledged and time spent while the joiner copied and while it applied its
     * queue, attributed by its phase at the end of each 5 ms step */
    uint64_t t_prev = t_answer, a_prev = a1, copy_ns = 0, copy_acks = 0, drain_ns = 0,
             drain_acks = 0;
    for (;;) {
        mt_sleep_ms(5);
        int phase = cu_counts(&c, joiner).phase;
        uint64_t t_now = bench_now_ns(), a_now = pub_acked(&p);
        if (phase == JR__CU_DRAINING) {
            drain_ns += t_now - t_prev;
            drain_acks += a_now - a_prev;
        } else if (phase >= 0) {
            copy_ns += t_now - t_prev;
            copy_acks += a_now - a_prev;
        }
        t_prev = t_now;
        a_prev = a_now;
        if (bench_now_ns() - t_answer > (uint64_t)(o->max_s * 1e9)) {
            fprintf(stderr, "move_bench: no convergence after %.0f s: leader %s, replicas",
                    o->max_s, v.leader);
            for (int i = 0; i < v.npeers; i++) fprintf(stderr, " %s (%s)", v.peers[i], v.state[i]);
            fprintf(stderr, " (%s)\n", v.settled ? "settled" : "not settled");
            for (int i = 0; i < NODES; i++) {
                cu_count k = cu_counts(&c, i);
                fprintf(
                    stderr,
                    "  %s catch-ups: %" PRIu64 " bytes fetched, %" PRIu64 " paced steps, %.3f s "
                    "paused, %" PRIu64 " later snapshots, %" PRIu64 " queued bytes applied\n",
                    c.names[i], k.bytes, k.paced, (double)k.paused_ns * 1e-9, k.later, k.drained);
            }
            exit(1);
        }
        if (which == CASE_NONE && bench_now_ns() - t_answer < (uint64_t)(CONTROL_SECONDS * 1e9))
            continue;
        if (view_get(&c, leader, &v) != 0) continue;
        int n = 1 + v.npeers;
        if (!v.settled || n != (which == CASE_GROW ? 4 : 3)) continue;
        if (gone[0] && view_has(&v, gone)) continue;
        t_conv = bench_now_ns();
        perf_ctl("change", "disable");
        cpu = bench_cpu_s() - cpu0;
        faults = bench_minflt() - flt0;
        for (int i = 0; i < NODES; i++) tcpu[i] = mt_loop_cpu_s(&c.loops[i]) - tcpu0[i];
        if (mo.log) fprintf(stderr, "%9.3f ms converged\n", (double)(t_conv - c.t_open) / 1e6);
        a2 = pub_acked(&p);
        fail_conv = __atomic_load_n(&p.failed, __ATOMIC_RELAXED) - fail0;
        if (publishing) win_close(&during, &c, &p);
        break;
    }
    cu_count f1 = cu_counts(&c, joiner);
    uint64_t fetched = f1.bytes - f0.bytes;
    char sources[64] = ""; /* the servers that served the joiner's chunks */
    for (int i = 0; i < NODES; i++)
        if (cu_counts(&c, i).served > s0[i].served)
            snprintf(sources + strlen(sources), sizeof sources - strlen(sources), "%s%s",
                     sources[0] ? "," : "", c.names[i]);
    if (publishing) {
        /* the same window as before the change, in the cluster it left: a ratio against a
         * steady rate that the two windows do not agree on is noise */
        if (view_get(&c, leader, &v) == 0 && v.leader[0])
            steady_window(o, &c, mt_index(&c, v.leader), &p, &after);
        pub_stop(&p);
    }
    uint64_t failed = __atomic_load_n(&p.failed, __ATOMIC_RELAXED) - fail0;
    double update_s = (double)(t_answer - t_call) * 1e-9;
    double secs = (double)(t_conv - t_answer) * 1e-9;
    double pub_steady = win_rate(&before), pub_after = win_rate(&after);
    double pub_during = secs > 0 ? (double)(a2 - a1) / secs : 0;
    uint64_t holds = 0, held_ns = 0; /* every server's: a leader elected meanwhile holds too */
    for (int i = 0; i < NODES; i++) {
        cu_count k = cu_counts(&c, i);
        holds += k.holds - s0[i].holds;
        held_ns += k.held_ns - s0[i].held_ns;
    }
    printf("{\"bench\":\"move\",\"case\":\"%s\",\"bytes\":%" PRIu64 ",\"msg_bytes\":%zu,"
           "\"vfs\":\"%s\",\"publishing\":%s,\"leader\":\"%s\",\"joined\":\"%s\","
           "\"left\":\"%s\",\"source\":\"%s\",\"update_s\":%.3f,\"seconds\":%.3f,\"catchup_mb_s\":%"
           ".1f,"
           "\"fetched_mb\":%.1f,\"cpu_s\":%.3f,\"joiner_cpu_s\":%.3f,\"leader_cpu_s\":%.3f,"
           "\"mb_per_cpu_s\":%.1f,\"minor_faults\":%" PRIu64 ",\"paced\":%" PRIu64
           ",\"paused_s\":%.3f,"
           "\"later\":%" PRIu64 ",\"queued_mb\":%.1f,\"taken_mb\":%.1f,\"dropped_mb\":%.1f,"
           "\"queue_peak_mb\":%.1f,"
           "\"kept_mb\":%.1f,\"log_peak_mb\":%.1f,\"log_drops\":%" PRIu64 ",\"holds\":%" PRIu64
           ",\"held_s\":%.3f,\"load1\":%.2f,\"max_bytes\":%" PRIu64 ",\"rate\":%.0f",
           case_name(which), bytes, o->msg_bytes, o->posix ? "posix" : "mem",
           publishing ? "true" : "false", lname, joiner >= 0 ? c.names[joiner] : "", gone, sources,
           update_s, secs, secs > 0 ? (double)bytes / secs / 1e6 : 0, (double)fetched / 1e6, cpu,
           joiner >= 0 ? tcpu[joiner] : 0.0, tcpu[mt_index(&c, lname)],
           cpu > 0 ? (double)bytes / cpu / 1e6 : 0, faults, f1.paced - f0.paced,
           (double)(f1.paused_ns - f0.paused_ns) * 1e-9, f1.later - f0.later,
           (double)(f1.drained - f0.drained) / 1e6, (double)(f1.taken - f0.taken) / 1e6,
           (double)(f1.dropped - f0.dropped) / 1e6, (double)f1.queue_peak / 1e6,
           (double)cu_counts(&c, mt_index(&c, lname)).kept / 1e6, (double)f1.log_peak / 1e6,
           f1.log_drops, holds, (double)held_ns * 1e-9, load, max_bytes, o->rate);
    if (publishing) {
        printf(",\"pub_steady_msgs_s\":%.0f,\"pub_during_msgs_s\":%.0f,\"ratio\":%.2f,"
               "\"pub_after_msgs_s\":%.0f,\"ratio_after\":%.2f,"
               "\"pub_failed\":%" PRIu64 ","
               "\"copy_s\":%.3f,\"pub_copy_msgs_s\":%.0f,\"drain_s\":%.3f,"
               "\"pub_drain_msgs_s\":%.0f",
               pub_steady, pub_during, pub_steady > 0 ? pub_during / pub_steady : 0, pub_after,
               pub_after > 0 ? pub_during / pub_after : 0, failed, (double)copy_ns * 1e-9,
               copy_ns ? (double)copy_acks / ((double)copy_ns * 1e-9) : 0, (double)drain_ns * 1e-9,
               drain_ns ? (double)drain_acks / ((double)drain_ns * 1e-9) : 0);
        printf(",\"pub_failed_change\":%" PRIu64 ",\"pub_failed_by\":\"", fail_conv);
        for (int k = 0, first = 1; k < 128; k++) {
            uint64_t d = __atomic_load_n(&p.failed_by[k], __ATOMIC_RELAXED) - by0[k];
            if (!d) continue;
            printf("%s%s:%" PRIu64, first ? "" : ",", k ? jr_err_name(-k) : "other", d);
            first = 0;
        }
        printf("\"");
        win_print("steady_", &before);
        win_print("", &during);
        win_print("after_", &after);
    }
    printf("}\n");
    fflush(stdout);
    mt_cluster_close(&c);
    free(p.data);
    result res = {pub_steady > 0 ? pub_during / pub_steady : 0,
                  pub_after > 0 ? pub_during / pub_after : 0};
    return res;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorts it). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Parses "100M,1G" (suffixes K, M, G: powers of 1,000) into out: how many, or -1. */
static int parse_sizes(const char *s, uint64_t *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || v <= 0) return -1;
        uint64_t m = 1;
        if (*end == 'K' || *end == 'k')
            m = 1000, end++;
        else if (*end == 'M' || *end == 'm')
            m = 1000 * 1000, end++;
        else if (*end == 'G' || *end == 'g')
            m = 1000ull * 1000 * 1000, end++;
        out[n++] = (uint64_t)(v * (double)m);
        if (*end != ',' && *end) return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static int usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--vfs mem|posix] [--dir PATH] [--size 100M,1G] [--msg-bytes B] "
            "[--case grow,move,none] [--publish 0,1] [--window N] [--steady-seconds S] "
            "[--max-seconds S] [--catchup-log BYTES] [--catchup-queue BYTES] [--limit F]\n"
            "       [--rate R] [--runs N]\n",
            prog);
    return 2;
}

int main(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    o.dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    o.size[0] = 100 * 1000 * 1000;
    o.nsizes = 1;
    o.msg_bytes = 1024;
    o.cases = CASE_GROW | CASE_MOVE;
    o.publish[0] = 0;
    o.publish[1] = 1;
    o.npublish = 2;
    o.window = 256;
    o.steady_s = 1.0;
    o.max_s = 30;
    o.runs = 1;
    for (int i = 1; i < argc; i += 2) { /* --flag value pairs */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage(argv[0]);
        if (!strcmp(a, "--vfs")) {
            if (strcmp(v, "mem") && strcmp(v, "posix")) return usage(argv[0]);
            o.posix = !strcmp(v, "posix");
        } else if (!strcmp(a, "--dir")) {
            o.dir = v;
        } else if (!strcmp(a, "--size")) {
            o.nsizes = parse_sizes(v, o.size, MAX_LIST);
            if (o.nsizes < 1) return usage(argv[0]);
        } else if (!strcmp(a, "--msg-bytes")) {
            o.msg_bytes = (size_t)atol(v);
            if (o.msg_bytes < 1 || o.msg_bytes > 512 * 1024) return usage(argv[0]);
        } else if (!strcmp(a, "--case")) {
            o.cases = (strstr(v, "grow") ? CASE_GROW : 0) | (strstr(v, "move") ? CASE_MOVE : 0) |
                      (strstr(v, "none") ? CASE_NONE : 0);
            if (!o.cases) return usage(argv[0]);
        } else if (!strcmp(a, "--publish")) {
            long l[2];
            o.npublish = bench_parse_list(v, l, 2);
            if (o.npublish < 1) return usage(argv[0]);
            for (int k = 0; k < o.npublish; k++) o.publish[k] = l[k] != 0;
        } else if (!strcmp(a, "--window")) {
            o.window = atoi(v);
            if (o.window < 1) return usage(argv[0]);
        } else if (!strcmp(a, "--steady-seconds")) {
            o.steady_s = atof(v);
            if (o.steady_s <= 0) return usage(argv[0]);
        } else if (!strcmp(a, "--catchup-log")) {
            if (parse_sizes(v, &o.catchup_log, 1) != 1) return usage(argv[0]);
        } else if (!strcmp(a, "--catchup-queue")) {
            if (parse_sizes(v, &o.catchup_queue, 1) != 1) return usage(argv[0]);
        } else if (!strcmp(a, "--limit")) {
            o.limit = atof(v);
            if (!(o.limit > 1.05)) return usage(argv[0]);
        } else if (!strcmp(a, "--rate")) {
            o.rate = atof(v);
            if (!(o.rate >= 0 && o.rate <= 1e8)) return usage(argv[0]);
        } else if (!strcmp(a, "--runs")) {
            o.runs = atoi(v);
            if (o.runs < 1 || o.runs > 100) return usage(argv[0]);
        } else if (!strcmp(a, "--max-seconds")) {
            o.max_s = atof(v);
            if (o.max_s <= 0) return usage(argv[0]);
        } else {
            return usage(argv[0]);
        }
    }
    for (int s = 0; s < o.nsizes; s++)
        for (int which = CASE_GROW; which <= CASE_NONE; which <<= 1) {
            if (!(o.cases & which)) continue;
            for (int k = 0; k < o.npublish; k++) {
                double r[100], ra[100];
                for (int i = 0; i < o.runs; i++) {
                    result res = run_case(&o, which, o.size[s], o.publish[k]);
                    r[i] = res.ratio;
                    ra[i] = res.ratio_after;
                }
                if (o.runs < 2 || !o.publish[k]) continue;
                printf("{\"bench\":\"move\",\"summary\":true,\"case\":\"%s\",\"size\":%" PRIu64
                       ",\"runs\":%d,\"ratio_median\":%.2f,\"ratio_after_median\":%.2f",
                       case_name(which), o.size[s], o.runs, median(r, o.runs), median(ra, o.runs));
                printf(",\"ratio_min\":%.2f,\"ratio_max\":%.2f}\n", r[0], r[o.runs - 1]);
                fflush(stdout);
            }
        }
    return 0;
}
