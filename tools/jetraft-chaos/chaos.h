/*
 * chaos.h — jetraft-chaos: real jetraft-server processes on loopback under real faults, checked
 * from the clients' side (docs/testing.md, "jetraft-chaos").
 *
 * One run: N servers (3 or 5) as child processes, their peer links through a fault-injecting
 * proxy (proxy.c, a libuv loop on its own thread), publishers on libnats (clients.c), fetch
 * loops on two consumers when the server serves the consumer API (consumers.c), a nemesis
 * applying a fault schedule drawn from the seed (nemesis.c), then a heal, final reads, a drain
 * of the consumers and the checkers (check.c, consumers.c). The history is written as JSON lines in
 * jetraft-sim's format.
 *
 * Threads: main (phases, final reads, checkers), the nemesis, the proxy's loop, one per
 * publisher and per fetch loop (plus libnats' own). Shared state is guarded: servers by `smu`, link
 * faults by `lmu`, the history and the operation records by `hmu`. Every child is killed on any
 * exit of the harness (normal, failure or the alarm).
 */
#ifndef CHAOS_H
#define CHAOS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <nats/nats.h>

#define MAXN 5
#define MAXPROCS 8
#define STREAM "D0"

enum fault_kind {
    F_KILL = 1 << 0,
    F_PAUSE = 1 << 1,
    F_PARTITION = 1 << 2,
    F_NET = 1 << 3,
    F_POWER = 1 << 4,
    F_RESET = 1 << 5,
    F_CLOCK = 1 << 6,
    F_PAUSEKILL = 1 << 7, /* Jepsen's pause-kill, as a pause, a power cut and a pause */
    F_PARTKILL = 1 << 8,  /* Jepsen's part-kill, with partitions in place of the pauses */
    F_DISK = 1 << 9,      /* damage to one server's synced files (one victim per run, or two) */
    F_IOERR = 1 << 10,    /* EIO / ENOSPC / failing fsyncs from a server's vfs, then a restart */
    F_ROLLBACK = 1 << 11, /* the disk victim restarted on an older copy of its data directory */
    F_MEMBERS = 1 << 12,  /* membership changes: stream peer removal, evacuation, server removal */
};
#define NKINDS 13
#define F_ALL                                                                                      \
    (F_KILL | F_PAUSE | F_PARTITION | F_NET | F_POWER | F_RESET | F_CLOCK | F_PAUSEKILL |          \
     F_PARTKILL | F_DISK | F_IOERR | F_ROLLBACK)
/* `all` leaves out F_MEMBERS, which changes the stream's replica count on five servers (R3, so
 * that a replacement can join) and every seed's schedule: `--faults all,members` adds it. */
/* The kinds' names, by bit (main.c). */
extern const char *const fault_names[NKINDS];

/* The faults on one directed peer link (frames from one server to another). */
typedef struct link_fault {
    int cut;        /* > 0: every frame is dropped (count of partitions cutting it) */
    int drop_pct;   /* each frame dropped with this probability (percent) */
    int delay_ms;   /* each frame held this long ... */
    int jitter_ms;  /* ... plus up to this much (order kept, as TCP keeps it) */
    unsigned owner; /* the net event that set drop/delay (its end clears only its own) */
} link_fault;

/* One publish attempt (an operation of the history). */
typedef struct op {
    uint32_t value;
    int proc;
    int node; /* the server the client was connected to at the invoke (-1: none) */
    int msg_id;
    uint64_t exp_last; /* expected last seq, 0: none */
    int exp_wrong;     /* expects another stream's name */
    uint64_t invoke_ns, complete_ns;
    int outcome; /* 0 pending, OK_, FAIL_ or INFO_ */
    uint64_t seq;
    int duplicate;
    char status[24];
    char msg[96];
} op;
enum { OUT_OK = 1, OUT_FAIL = 2, OUT_INFO = 3 };

typedef struct chaos {
    /* the run */
    const char *server_bin;
    uint64_t seed;
    int seconds;
    int n;
    int replicas; /* the stream's: n, or 3 on five servers with F_MEMBERS (not disk_victims 2) */
    int disk_victims; /* 1, or 2 (five servers): the disk nemesis's victims in a run */
    unsigned faults;
    int nprocs;
    int verbose;
    int keep;
    int sync_offload;   /* each server runs its WAL's sync on libuv's threadpool ("sync_offload") */
    const char *mutate; /* a checker self-test: lost, ack-seq, definite, converge, peers */
    char base[256];
    FILE *hist;
    uint64_t t0; /* CLOCK_MONOTONIC ns at the start */

    /* servers (smu) */
    pthread_mutex_t smu;
    char names[MAXN][16];
    int client_port[MAXN], cluster_port[MAXN], http_port[MAXN];
    int proxy_port[MAXN][MAXN]; /* [a][b], a < b: where a dials b */
    pid_t pid[MAXN];            /* 0: down */
    int paused[MAXN];
    int expected_exit[MAXN]; /* the harness killed it: its exit is no finding */
    int starts[MAXN];
    int ioerr_on[MAXN];   /* ioerr events in force on the server (their files say so) */
    int ioerr_down[MAXN]; /* it could not open under them: started again when they end */
    int ioerr_hit[MAXN];  /* left running after I/O errors: the supervisor watches it */
    int removed[MAXN];    /* removed from the cluster for good (members.c): never started again */
    uint64_t env_seed;

    /* links (lmu) */
    pthread_mutex_t lmu;
    link_fault links[MAXN][MAXN];
    uint64_t frames_fwd, frames_dropped;

    /* history and operations (hmu) */
    pthread_mutex_t hmu;
    op *ops;
    size_t nops, capops;
    uint32_t next_value;
    uint64_t max_acked_seq;
    int phase;                   /* 0 faulty, 1 progress, 2 stopped */
    int progress_acks[MAXPROCS]; /* acknowledgements in the progress phase */
    int nviol;
    int nemesis_events;
} chaos;

extern chaos C;

/* history.c-like helpers (main.c) */
uint64_t now_ns(void);
double rel_s(uint64_t ns);
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void nemesis_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void violation(const char *checker, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void json_str(FILE *f, const char *s);
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
uint64_t rng_next(uint64_t *s);
double rng_unit(uint64_t *s);
int rng_below(uint64_t *s, int n);

/* procs.c */
void procs_setup(void);
void server_start(int i);
void kill_all_servers(void);
int server_healthy(int i, char *why, size_t cap);
/* Server i's answer to GET path (at most max bytes, a 200 read to its end): its body, to free;
 * NULL if none. */
char *http_fetch(int i, const char *path, size_t max);
/* Saves server i's answer to GET path as <dir>/<name>.<ext>. */
void http_save(int i, const char *path, const char *ext);
void procs_reap(void);
void clock_set(int i, long long offset_ms);
/* Sets server i's injected I/O errors: "none", "eio", "enospc" or "sync" (powervfs.h). */
void ioerr_set(int i, const char *mode);
/* How many lines of server i's log (every life) contain needle. */
int log_count(int i, const char *needle);
/* The sum of the numbers that follow needle in server i's log. */
long long log_sum(int i, const char *needle);

/* proxy.c */
int proxy_start(void);
void proxy_reset_node(int i);
void proxy_stop(void);

/* nemesis.c */
void nemesis_start(void);
/* Prints the seed's fault schedule (times from the start of the faulty phase). */
void nemesis_print_plan(void);
void nemesis_stop_and_heal(void);
/* The supervisor: a server left running after I/O errors whose /healthz says its WAL failed is
 * restarted (kill -9), as a host restarts a node that cannot store anything. */
void supervise(void);

/* members.c: the membership changes, each on a thread of its own (requests wait for answers
 * while the nemesis goes on). variant 0 removes a peer of the stream, 1 evacuates a server and
 * cancels the drain after dur_ms, 2 stops a server and removes it from the cluster. pick seeds
 * the choice of the peer or server. */
void members_start(int variant, int dur_ms, uint64_t pick);
/* Waits for every membership change in flight (a drain still in force is cancelled at once). */
void members_join(void);

/* clients.c */
/* A connection to the n servers of list (tried in that order if in_order, else shuffled) that
 * reconnects without end 100 ms apart, times out after 1 s, pings every second and counts the
 * connection lost after two pings unanswered; retry: a first connect that fails goes on trying
 * in the background. NULL if the connect failed. */
natsConnection *clients_connect(const char **list, int n, int in_order, int retry);
int stream_create(void);
void clients_start(void);
void clients_progress(double limit_s);
void clients_stop(void);
void history_op(const op *o, int completion);

/* consumers.c */
int consumers_setup(void);
void consumers_start(void);
void consumers_drain_and_check(const long long *final, uint64_t upto);
void consumers_stop(void);

/* check.c */
void check_run(void);

/* watch.c: the damaged-leads checker, sampling every running server's own report (/jsz)
 * through the run, from the stream's creation to the end of the final reads. */
void watch_start(void);
void watch_stop(void);

#endif
