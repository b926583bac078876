/*
 * mt_host — the threaded host the benches share: every node on its own thread, the way a host
 * embeds libjetraft (one event loop per node, frames handed between loops through mailboxes).
 *
 * Each loop waits on a mutex/condition-variable mailbox with the node's one timer as the wait
 * deadline (jr_host.arm); jr_host.send copies the frame into the destination's mailbox, in a
 * buffer the destination handled before when it has one (a pool per loop: fresh buffers for
 * every frame cost the host more than the library); each
 * loop feeds what arrived to jr_node_recv and calls jr_node_tick when the deadline passed.
 * Storage: the in-memory file system of the test fixture (one per node), or jr_vfs_posix()
 * under per-node directories of a root with JR_SYNC_ALWAYS. A bench changes anything else of a
 * node's config (its vfs, tags, limits) in the configure hook.
 *
 * Threads: the main thread opens and closes the cluster and hands work to a loop with
 * mt_run_on; a task runs on the loop's thread between frames and may call any jr_* function on
 * that node. The main thread waits for results with an mt_waiter, which a callback on a loop
 * completes. A failure of the host itself (no memory, a node that does not open) ends the
 * program with a message (mt_die).
 */
#ifndef JR_BENCH_MT_HOST_H
#define JR_BENCH_MT_HOST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

#define MT_MAX_NODES 8

typedef struct mt_item mt_item;

typedef struct mt_loop {
    struct mt_cluster *c;
    int idx;
    char name[16];
    jr_node *node;
    jr_host host;
    jr_vfs *vfs; /* the node's memory file system (NULL: posix or the bench's own) */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    mt_item *head, *tail; /* guarded by mu */
    mt_item *pool;        /* frame buffers handled, kept for reuse; guarded by mu */
    size_t npool, pool_bytes;
    int stop;          /* guarded by mu */
    uint64_t deadline; /* node's timer; loop thread only */
    uint64_t *late;    /* with mt_opts.record_late: how late each timer wake-up was (ns),
                          guarded by mu */
    uint64_t nlate;
} mt_loop;

typedef struct mt_opts {
    int nodes;        /* 1..MT_MAX_NODES */
    int posix;        /* jr_vfs_posix() under root/n<i>/{wal,store}, JR_SYNC_ALWAYS */
    const char *root; /* posix: the directory made for the run (removed by mt_cluster_close) */
    int record_late;  /* keep how late timer wake-ups were (mt_late_reset, mt_late_p99_us) */
    int log;          /* print the nodes' log lines up to this level (JR_LOG_*) to stderr with
                         the time since the open; 0: none (errors are not printed either) */
    /* optional: changes node i's config before it opens (vfs, tags, limits, ...) */
    void (*configure)(void *arg, int i, jr_node_config *nc);
    void *arg;
} mt_opts;

typedef struct mt_cluster {
    int n;
    int posix;
    int log;
    uint64_t t_open;
    char root[512];
    mt_loop loops[MT_MAX_NODES];
    const char *names[MT_MAX_NODES]; /* "n0", "n1", ... */
} mt_cluster;

/* Prints "what: error: msg" and exits 1. */
void mt_die(const char *what, int rc, const char *msg);
void mt_sleep_ms(int ms);
/* mkdir -p */
void mt_mkdirs(const char *path);
/* rm -rf */
void mt_rm_rf(const char *path);

/* Opens o->nodes nodes (streams on, cluster "bench", every node a peer, request timeout 30 s)
 * and starts their threads. */
void mt_cluster_open(mt_cluster *c, const mt_opts *o);
/* Closes every node on its own thread, joins the threads, frees the memory file systems and
 * removes a posix root. */
void mt_cluster_close(mt_cluster *c);
/* Runs task(arg, node) on l's thread. */
void mt_run_on(mt_loop *l, void (*task)(void *arg, jr_node *node), void *arg);
/* The index of server `name`; exits if there is none. */
int mt_index(const mt_cluster *c, const char *name);

/* CPU time the loop's thread has used so far (s). */
double mt_loop_cpu_s(mt_loop *l);

/* Forgets the timer wake-ups recorded so far. */
void mt_late_reset(mt_cluster *c);
/* The p99 (and *max_us the maximum) of how late the loops woke for their timers since
 * mt_late_reset, every node (us). */
double mt_late_p99_us(mt_cluster *c, double *max_us);

/* Waiting on the main thread for something a loop does. */
typedef struct mt_waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, status;
    char msg[256];
    char leader[32];
    const void *in; /* a task's input */
} mt_waiter;

void mt_waiter_init(mt_waiter *w, const void *in);
/* Completes w (from any thread); msg may be NULL. */
void mt_waiter_done(mt_waiter *w, int status, const char *msg);
/* Waits for mt_waiter_done and returns its status; w is then spent. */
int mt_waiter_wait(mt_waiter *w);

/* Runs task on node i with a waiter for input `in` (the task completes it), again every 100 ms
 * while it fails (elections), at most `tries` times; exits naming `what` if it never succeeds.
 * leader (NULL or 32 bytes) gets the waiter's leader field. */
void mt_call(mt_cluster *c, int i, void (*task)(void *, jr_node *), const void *in, int tries,
             char *leader, const char *what);

/* Tasks for mt_call: jr_stream_add of the config `in`; jr_stream_info_get of the stream named
 * `in` (completes with its leader, JR_ENOLEADER while there is none). */
void mt_stream_add_task(void *arg, jr_node *node);
void mt_stream_info_task(void *arg, jr_node *node);
/* Completions for the tasks' calls: arg is the mt_waiter. */
void mt_admin_cb(void *arg, int status, const char *msg);
void mt_stream_info_cb(void *arg, int status, const char *msg, const jr_stream_info *info);

/* Creates stream cfg (retrying while the meta group elects) and returns its leader's index. */
int mt_stream_add(mt_cluster *c, const jr_stream_config *cfg);

#endif
