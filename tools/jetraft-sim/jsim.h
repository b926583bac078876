/*
 * jsim.h — the shared state of jetraft-sim, the whole-system simulator.
 *
 * One run (one seed) is a `world`: a simulated cluster (include/jetraft/sim.h) with streams on,
 * the clients that use it (publishers, fetch loops, an admin process), the fault scheduler that
 * damages it, and the history every client operation leaves. The program uses the public API
 * only (jetraft.h and jetraft/sim.h), as any user of the library could.
 *
 * Module map (one responsibility each):
 *   vfault.c          a jr_vfs wrapper that makes a node's calls fail with EIO or ENOSPC
 *   cluster.c         the fixture: node configs, picking nodes, waiting for callbacks
 *   history.c         the recorded history: operations, deliveries, nemesis events, JSON lines
 *   clients.c         publishers and consumer fetch/ack loops
 *   admin.c           the admin process (streams, consumers, replica changes, stepdowns,
 *                     server evacuate / evacuate-cancel / peer-remove)
 *   faults.c          the fault scheduler and the heal
 *   check_log.c       applied-entry agreement across nodes (state-machine safety)
 *   check_streams.c   the final reads and the publish checkers
 *   check_consumers.c the consumer checkers
 *   mutate.c          checker self-tests: a history changed the way a bug would change it
 *   main.c            arguments, the phases of a run, seeds, the report
 *
 * Callbacks only record: every decision (the next publish, a retry, an ack) is taken by the
 * main loop between slices of simulated time, so no API call is made from inside a callback and
 * crashes (which complete pending callbacks with JR_ECLOSED) need no special care.
 */
#ifndef JSIM_H
#define JSIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jetraft.h"
#include "jetraft/sim.h"

#define MS 1000000ull
#define SEC (1000 * MS)

#define MAXN 5      /* nodes */
#define MAX_DS 2    /* data streams (checked) */
#define MAX_CHURN 3 /* churn streams (added, updated, deleted) */
#define MAX_PROCS 8 /* publisher processes */
#define MAX_CONS 12 /* consumers over a run (a deleted one is never reused) */
#define MAX_FETCHERS MAX_CONS
#define MAX_VIOL 64
#define REQ_TIMEOUT_MS 2000
#define SYNC_DELAY_NS (2u * 1000 * 1000) /* --sync-offload: a sync job takes 1-2 ms */

/* Fault kinds (--faults). */
enum fault_kind {
    F_PARTITION, /* symmetric, one-way, majority/minority, bridge */
    F_NET,       /* drop, duplicate, reorder, delay */
    F_CRASH,     /* process crash and restart, torn writes */
    F_POWER,     /* coordinated power loss of every node */
    F_PAUSE,     /* stop-the-world pauses */
    F_CLOCK,     /* wall clock jumps per node */
    F_DISK,      /* bit flips, tail cuts, zeroed ranges, deleted files, rollbacks: one victim */
    F_IOERR,     /* EIO / ENOSPC from the vfs on one node, then its restart */
    F_NKINDS
};
extern const char *const fault_names[F_NKINDS];

/* A small deterministic PRNG (splitmix64): the run's own choices, apart from the fixture's. */
typedef struct rng {
    uint64_t s;
} rng;
static inline uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Uniform in [0, n); 0 when n is 0. */
static inline uint64_t rng_below(rng *r, uint64_t n)
{
    return n ? rng_next(r) % n : 0;
}
/* 1 with probability pct/100. */
static inline int rng_pct(rng *r, unsigned pct)
{
    return rng_below(r, 100) < pct;
}

/* History ---------------------------------------------------------------------------------------*/

enum op_kind {
    OP_PUBLISH,
    OP_FETCH,
    OP_ACK,
    OP_MSG_DELETE,
    OP_PURGE,
    OP_STREAM_ADD,
    OP_STREAM_UPDATE,
    OP_STREAM_DELETE,
    OP_CONSUMER_ADD,
    OP_CONSUMER_UPDATE,
    OP_CONSUMER_DELETE,
    OP_STREAM_STEPDOWN,
    OP_CONSUMER_STEPDOWN,
    OP_META_STEPDOWN,
    OP_SERVER_EVACUATE,
    OP_SERVER_EVACUATE_CANCEL,
    OP_SERVER_REMOVE,
    OP_NKINDS
};
extern const char *const op_names[OP_NKINDS];

/* Outcome classes of a completed operation. */
enum outcome { OUT_PENDING, OUT_OK, OUT_FAIL, OUT_UNKNOWN };

/* One client operation: its invocation and its completion. */
typedef struct op {
    int kind;
    int proc; /* publisher process, fetcher, or -1 (admin, acks) */
    int cons; /* consumer index (fetch, ack, consumer admin); -1 none */
    unsigned node;
    char stream[16];
    char consumer[16];
    uint64_t invoke_ns, complete_ns;
    int done, status;
    /* publish */
    uint32_t value;
    int msg_id;           /* published with a msg id */
    uint64_t exp_last;    /* expected_last_seq; JR_SEQ_NONE none */
    int exp_wrong_stream; /* expected_stream names another stream */
    uint64_t seq;         /* ack seq (publish), the seq asked (get, delete, purge floor) */
    int duplicate;
    /* fetch */
    int64_t batch;
    uint32_t received;
    int end_code; /* the fetch's end code (0: filled, 404, 408, 409...) */
    /* ack */
    int ack_kind;
    uint32_t dcount;
    int confirmed; /* an ack with a callback */
    /* admin */
    int replicas;
    char msg[96];
} op;

/* One published value (payload "v<id>"): every publish attempt of it carries the same payload
 * and, with msg ids, the same id. */
typedef struct value {
    int ds; /* data stream index */
    int proc;
    uint32_t counter; /* per process, in invocation order */
    unsigned subj;    /* subject d<ds>.<subj> */
    int msg_id;
    uint32_t attempts, ok, unknown, definite; /* attempts by outcome */
    uint64_t ok_seq;                          /* seq of the first ok */
    uint64_t ok_ns;                           /* completion of the first ok */
    uint64_t first_invoke_ns;
    int ok_dup_mismatch; /* two oks named different seqs */
    /* final state */
    uint32_t found; /* times read in the final scan */
    uint64_t found_seq;
    int excluded; /* a delete or purge may have removed it */
} value;

/* One message delivered to a client by a fetch. */
typedef struct deliv {
    uint32_t fetch; /* op index of the fetch */
    int cons;       /* consumer index */
    uint64_t sseq, cseq;
    uint32_t count;
    int64_t value; /* -1: not one of ours */
    uint64_t ns;
} deliv;

/* A nemesis event, for the history and the minimized history. */
typedef struct nem {
    uint64_t ns;
    char what[160];
} nem;

/* Clients ---------------------------------------------------------------------------------------*/

typedef struct dstream {
    char name[16];
    char subject[16]; /* "d<k>.*" */
    int replicas;
    int busy_change;        /* a replica change is in flight */
    uint64_t last_seq_seen; /* highest acked seq (for expected_last_seq guesses) */
    /* final reads */
    uint64_t first_seq, last_seq, msgs;
    int64_t *at; /* value at seq (index seq - 1): -1 none, -2 unreadable, -3 a foreign payload */
    unsigned holders[MAXN]; /* leader then replicas, from the final info */
    size_t nholders;
} dstream;

typedef struct churn {
    char name[16];
    int state; /* 0 absent, 1 present, 2 unknown (an add or delete whose outcome is unknown) */
    int busy;
    int gen;
} churn;

typedef struct consumer {
    char name[16];
    int ds;
    int filter; /* -1 none, else subject index */
    int state;  /* 1 live, 0 deleted (or a delete of unknown outcome), 2 being created */
    uint64_t created_ns;
    int64_t ack_wait_ns;
} consumer;

typedef struct proc {
    int ds;
    int busy;
    uint64_t next_ns;
    uint32_t counter;
    int64_t retry_value; /* a value to publish again (same msg id); -1 none */
    uint32_t retries;
    uint32_t post_ok; /* ok publishes after the heal */
} proc;

typedef struct fetcher {
    int cons;
    int busy;
    uint32_t op;
    uint64_t next_ns;
} fetcher;

/* An acknowledgement the client will send later. */
typedef struct pending_ack {
    uint64_t at_ns;
    int cons;
    uint64_t sseq;
    uint32_t count;
    int kind; /* enum jr_ack_kind */
    int confirmed;
    int64_t delay_ns;
    char token[160];
} pending_ack;

/* A violation a checker found. */
typedef struct viol {
    char checker[32];
    int waived;
    char text[400];
    char stream[16];
    int64_t value;
    uint64_t seq;
    int cons;
} viol;

/* The vfs wrapper of one node (vfault.c). */
typedef struct vfault {
    jr_vfs vfs;     /* what the node is given */
    jr_vfs *real;   /* the fixture's memfs */
    int active;     /* calls fail while set */
    int err;        /* JR_EIO or JR_ENOSPC */
    uint64_t every; /* a write or sync fails when calls % every == 0 (1: all) */
    uint64_t calls, failed;
} vfault;

typedef struct world {
    /* options */
    uint64_t seed;
    uint64_t seconds;
    unsigned n;
    unsigned faults; /* mask of enum fault_kind */
    FILE *hist;
    int verbose;
    int quiet;
    const char *waive; /* comma-separated checkers whose violations are reported, not failed */
    /* --big: payloads of up to PAYLOAD_BIG_MAX bytes and every catch-up and retention bound of
     * jr_node_config at JR_LOG_BOUND_MIN, so that streams outgrow the bounds within a run */
    int big;
    /* --sync-offload: every node's host runs its WAL sync (jr_host.sync_start), each job
     * completing 1-2 ms of simulated time later (jr_sim_config.sync_delay_ns) */
    int sync_offload;
    int leaderless_fail; /* --leaderless-fail: jr_node_config.leaderless_fail_ms */

    rng r;
    jr_sim *sim;
    vfault vf[MAXN];
    int phase; /* 0 setup, 1 faults, 2 heal and settle, 3 final */
    int mode;  /* clients: 0 the faulty phase, 1 plain publishes only, 2 drain the consumers */
    uint64_t t0;

    dstream ds[MAX_DS];
    unsigned nds;
    churn cs[MAX_CHURN];
    consumer cons[MAX_CONS];
    unsigned ncons;
    proc procs[MAX_PROCS];
    unsigned nprocs;
    fetcher fetchers[MAX_FETCHERS];
    unsigned nfetchers;
    pending_ack *acks;
    size_t nacks, capacks;

    /* admin */
    int admin_busy;
    uint32_t admin_op;
    uint64_t admin_next_ns;
    uint64_t quiet_groups_until; /* no new groups before this (a rollback copy is pending) */
    /* membership: at most one server is peer-removed per run (five servers only); a removal
     * that succeeded or whose outcome is unknown makes the server removed for the checkers: it
     * takes no client operation and no check needs its copy; it may still crash and restart
     * (it must stay removed). Draining servers stay members. */
    int removed[MAXN];
    int removal_sent;   /* a removal is in flight or done (ok or unknown): no other */
    int remove_target;  /* the server of the removal in flight; -1 */
    int draining[MAXN]; /* an evacuate of the server succeeded (or is unknown), not cancelled */
    int server_target;  /* the server of the evacuate or cancel in flight; -1 */

    /* faults */
    int down[MAXN];
    uint64_t restart_at[MAXN];
    uint64_t paused_until[MAXN];
    int victim;              /* node whose disk was damaged, until it reports healthy; -1 */
    uint8_t disk_hit[MAXN];  /* the node's disk was damaged at least once in this run */
    uint64_t lost_alone[16]; /* groups noted as damaged beyond the fault model (faults.c) */
    size_t nlost_alone;
    /* groups whose only voter was the disk nemesis's victim when its disk was damaged: what that
     * voter alone had committed is lost, even once the group has more members */
    uint64_t lone_hit[32];
    size_t nlone_hit;
    uint64_t victim_restart; /* when the victim restarts */
    jr_sim_disk *copy;       /* a saved disk of copy_node for a rollback */
    int copy_node;
    uint64_t rollback_at;
    /* latent damage: a file whose bits were flipped or zeroed stays damaged on the victim's
     * disk until the node removes it (a restart re-reads it), so until then no other node may
     * be damaged: that would be two damaged replicas at once */
    int taint_node; /* -1 none */
    char taint_path[128];
    /* --disk-victims 2 (five nodes): the disk nemesis damages a second node while the first is
     * not whole again, two damaged replicas of every group at once (a minority of five): every
     * data stream R5 and no change to R3, churn streams R1 or R5, no server removal */
    int disk_victims; /* 1 (the default) or 2 */
    int victim2;      /* the second victim (disk_victims 2); -1 */
    int taint2_node;  /* the second node with latent damage (disk_victims 2); -1 */
    char taint2_path[128];
    int ioerr_node; /* node whose vfs fails; -1 */
    uint64_t ioerr_until;
    uint64_t next_fault_ns;
    int partitioned;
    unsigned disk_faults, crashes, power_losses, pauses, clock_jumps, partitions, ioerrs;

    /* history */
    op *ops;
    size_t nops, capops;
    value *vals;
    size_t nvals, capvals;
    deliv *dels;
    size_t ndels, capdels;
    nem *nems;
    size_t nnems, capnems;

    /* applied entries (check_log.c) */
    struct applied *applied;
    size_t napplied, capapplied;
    uint64_t apply_conflicts;
    uint64_t lone_groups[32]; /* groups a single voter relogged: outside the model from then on */
    unsigned nlone;

    viol viol[MAX_VIOL];
    unsigned nviol, nviol_total, nwaived;
    char lost_summary[256];
} world;

/* The one world of the running seed (callbacks find it here; the program is single-threaded). */
extern world *g_w;

/* cluster.c */
int cluster_new(world *w);
void cluster_free(world *w);
int node_up(world *w, unsigned i);
/* A random node that is running, not paused and not removed from the cluster; -1 if none. */
int pick_node(world *w);
/* Runs until *flag is non-zero or max_ns passed; 0 or JR_ETIMEDOUT. */
int wait_flag(world *w, const int *flag, uint64_t max_ns);
/* Runs until every op of [first, first + n) is done or max_ns passed. */
int wait_ops(world *w, size_t first, size_t n, uint64_t max_ns);
uint64_t now_ns(world *w);
/* Seconds since the run started, for messages. */
double rel_s(world *w, uint64_t ns);

/* vfault.c */
void vfault_wrap(vfault *v, jr_vfs *real);
void vfault_set(vfault *v, int err, uint64_t every);
void vfault_clear(vfault *v);

/* history.c */
uint32_t op_new(world *w, int kind, int pr, unsigned node, const char *stream, const char *cname);
void op_done(world *w, uint32_t id, int status, const char *msg);
int op_outcome(const op *o);
uint32_t value_new(world *w, int ds, int pr, unsigned subj, int msg_id);
void deliv_add(world *w, uint32_t fetch, int cons, const jr_consumer_msg *m);
void nem_note(world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void violation(world *w, const char *checker, const char *stream, int64_t val, uint64_t seq,
               int cons, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
void history_write_op(world *w, uint32_t id, int completion);
/* Prints the operations touching the first violation (its value, seq, stream or consumer). */
void history_minimized(world *w, FILE *out);
void history_free(world *w);
/* Value vid's payload into buf (at most cap bytes): "v<id>." and filler to a length of its
 * own, 16-176 bytes, or 16-PAYLOAD_BIG_MAX with --big; returns its length. */
#define PAYLOAD_BIG_MAX (24u << 10)
size_t payload_make(const world *w, uint32_t vid, char *buf, size_t cap);
/* The value id of a payload, -1 unless it is byte for byte one of ours. */
int64_t payload_value(world *w, const void *data, size_t len);

/* clients.c */
void clients_init(world *w);
void clients_step(world *w);
int publish_value(world *w, int p, uint32_t v, unsigned node);
/* After the heal: every process publishes `count` more values; 0 if each got them acknowledged
 * within max_ns. */
int clients_post_publish(world *w, uint32_t count, uint64_t max_ns);
/* Drains every live consumer (every delivery acknowledged, confirmed) until each has delivered
 * every message of the final scan that matches it, or max_ns passed. */
void clients_drain(world *w, uint64_t max_ns);

/* admin.c */
int admin_setup(world *w);
void admin_step(world *w);

/* faults.c */
void faults_init(world *w);
void faults_step(world *w);
void faults_heal(world *w);
/* Every node's health (jr_node_health): 1 if all report healthy. */
int cluster_healthy(world *w, char *why, size_t cap);
/* Every unwell group, as each of its replicas sees itself, into out (for a failure). */
void dump_unwell(world *w, FILE *out);

/* check_log.c */
void applied_record(void *arg, unsigned node, uint64_t group, uint64_t index, uint64_t term,
                    const void *data, size_t len);
void applied_free(world *w);
/* on_restore: traced with JSIM_TRACE_GROUP. */
void applied_on_restore(void *arg, unsigned node, uint64_t group, uint64_t index);
/* Calls fn(w, group) once for every group any node applied an entry of. */
void applied_each_group(world *w, void (*fn)(world *w, uint64_t group, void *arg), void *arg);

/* check_streams.c */
int streams_final_read(world *w);
void check_streams(world *w);
void check_stream_list(world *w);

/* mutate.c */
extern const char *const mutate_names[];
/* Applies mutation `kind` to the history before the checkers run; 0 or JR_ENOTFOUND (nothing
 * to mutate in this run). */
int mutate(world *w, const char *kind);

/* check_consumers.c */
void check_consumers(world *w);

#endif
