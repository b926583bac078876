/*
 * jetraft/sim.h — the deterministic cluster fixture.
 *
 * Runs N libjetraft nodes in one thread over a simulated clock, a simulated network and one
 * simulated file system per node, so that whole clusters can be tested (and a host's own state
 * machines with them) reproducibly: every random choice — network delays, drops, duplicates,
 * reordering, torn writes at a crash, the nodes' election timeouts — comes from one PRNG seeded
 * by jr_sim_config.seed. The same seed and the same calls give the same run, bit for bit;
 * jr_sim_digest() summarises a run (every delivered frame and every applied entry, in order)
 * so two runs can be compared.
 *
 * Model
 *  - Nodes are named "n0", "n1", ... and numbered 0..N-1; each is a real jr_node whose host is
 *    the fixture (send goes to the simulated network, now() is the simulated clock, wall() the
 *    node's simulated wall clock, arm() schedules its tick). The nodes of jr_sim_new list each
 *    other as peers (jr_node_config.peers); a node added later (jr_sim_add_node) lists the
 *    nodes before it and itself, and every restart opens a node with the same list.
 *  - Time only moves inside jr_sim_run_for / jr_sim_run_until / jr_sim_step: the fixture
 *    repeatedly takes the earliest event (a frame arriving, a node's armed deadline), advances
 *    the clock to it and runs it (jr_node_recv / jr_node_tick). Ties: frames before timers,
 *    frames in the order they were sent, nodes in index order. Between runs the caller may use
 *    the nodes freely (open groups, propose, ...); the clock stands still meanwhile.
 *  - The network: each directed link (a -> b) has its own jr_sim_link: a frame is lost with
 *    probability `drop`, delivered twice with probability `duplicate`, delayed uniformly in
 *    [delay_min_ns, delay_max_ns], and with probability `reorder` held back by up to twice the
 *    maximal delay (plus 1 ms) so that later frames overtake it. A cut link (jr_sim_cut,
 *    jr_sim_partition) loses everything sent over it until jr_sim_heal; frames already in
 *    flight are still delivered.
 *  - Storage: each node has its own simulated file system (memfs, see jr_sim_vfs). Crashing a
 *    node (jr_sim_crash) is power loss: everything it had not synced is lost (with
 *    jr_sim_config.torn_writes, a random prefix of the unsynced writes survives, the last one
 *    torn), the node is closed without flushing anything (callbacks of its pending requests
 *    complete with JR_ECLOSED), and frames sent to it while down are lost. jr_sim_restart
 *    reopens it over what survived; its groups must be opened again by the caller.
 *  - Disk faults: between a crash and the restart, a node's disk can be damaged the ways a
 *    failing disk, a bad controller or a restored VM image damage one — a file's tail cut
 *    (synced bytes included), bits flipped, a range zeroed, a file deleted, or every file rolled
 *    back to a copy saved earlier (jr_sim_disk_save). These hit the medium: nothing about them
 *    is a torn write, and the node meets them when it restarts.
 *
 * Everything allocated by the fixture goes through jr_sim_config.alloc, as do the nodes'
 * allocations. A fixture is single-threaded like the nodes it runs.
 */
#ifndef JETRAFT_SIM_H
#define JETRAFT_SIM_H

#include "jetraft.h"

#ifdef __cplusplus
extern "C" {
#endif

#define JR_SIM_MAX_NODES 16

typedef struct jr_sim jr_sim;

/* Behaviour of one directed link. Probabilities are in [0, 1]. */
typedef struct jr_sim_link {
    size_t size;           /* sizeof(jr_sim_link) */
    double drop;           /* a frame is lost */
    double duplicate;      /* a frame is delivered twice (independent delays) */
    double reorder;        /* a frame is held back so later ones overtake it */
    uint64_t delay_min_ns; /* delivery delay, uniform in [min, max] */
    uint64_t delay_max_ns;
    uint64_t bytes_per_sec; /* the link's bandwidth: a frame leaves once the frames sent before
                               it on the link left, taking len / bytes_per_sec, and then
                               travels its delay (0: unlimited, frames leave at once) */
} jr_sim_link;

/* A perfect link with a delay of 100..500 µs. Writes only the first `size` bytes (the macro
 * passes the caller's sizeof). */
JR_API void jr_sim_link_init_size(jr_sim_link *link, size_t size);
#define jr_sim_link_init(link) jr_sim_link_init_size((link), sizeof *(link))

typedef struct jr_sim_config {
    size_t size;                  /* sizeof(jr_sim_config) */
    unsigned nodes;               /* 1..JR_SIM_MAX_NODES; default 3 */
    uint64_t seed;                /* the run's only source of randomness */
    const jr_sim_link *link;      /* every directed link starts like this (copied, read up to
                                     link->size); NULL: jr_sim_link_init's perfect link */
    uint32_t election_timeout_ms; /* for every node; default 150 */
    uint32_t heartbeat_ms;        /* default 30 */
    int torn_writes; /* crashes tear the last unsynced write instead of dropping all of it */
    const jr_allocator *alloc; /* the fixture's and the nodes' allocator; NULL: malloc */
    void *arg;                 /* passed to the callbacks below */
    /* Optional: adjusts node i's config before each open (first open and every restart).
     * name, peers, wal_dir, vfs, host, alloc and seed are set by the fixture; changing them is
     * allowed but on the caller's head. */
    void (*configure)(void *arg, unsigned i, jr_node_config *cfg);
    /* Optional: called after every event the fixture runs (a frame delivery, a tick), e.g. to
     * check invariants on every step. It may call into the nodes and the fixture, except
     * jr_sim_free. */
    void (*on_step)(void *arg, jr_sim *sim);
    /* Optional: every normal entry applied by any node's group, in order (what its jr_fsm's
     * apply sees, plus the entry's term). data is borrowed for the call. */
    void (*on_apply)(void *arg, unsigned node, uint64_t group, uint64_t index, uint64_t term,
                     const void *data, size_t len);
    /* Optional: a node's group replaced its state by a snapshot taken at index (installed from
     * the leader, or loaded when the group was opened after a restart). */
    void (*on_restore)(void *arg, unsigned node, uint64_t group, uint64_t index);
    /* Non-zero: do not compute the run digest (jr_sim_digest then returns 0); benchmarks use it
     * to leave the fixture's own hashing out of their numbers. */
    int no_digest;
    /* Optional: the nodes' log messages (jr_host.log), with the node's index. */
    void (*on_log)(void *arg, unsigned node, int level, const char *msg);
    /* Non-zero: every node's host runs the WAL's sync (jr_host.sync_start): a job completes
     * (jr_sync_job_run, then jr_node_synced) a random delay in [sync_delay_ns / 2,
     * sync_delay_ns] of simulated time after it was handed out, as one more event (after the
     * end of a pause); a crash before then loses what it covers. 0: the nodes sync in place. */
    uint64_t sync_delay_ns;
} jr_sim_config;

/* Fills cfg with defaults (3 nodes, seed 1, a perfect link, 150 ms / 30 ms timers), writing
 * only its first `size` bytes (the macro passes the caller's sizeof). */
JR_API void jr_sim_config_init_size(jr_sim_config *cfg, size_t size);
#define jr_sim_config_init(cfg) jr_sim_config_init_size((cfg), sizeof *(cfg))

/* Creates the fixture and opens its nodes (no groups yet). 0, JR_EINVAL, JR_ENOMEM, or the
 * first node's open error. On failure *out is NULL. */
JR_API int jr_sim_new(const jr_sim_config *cfg, jr_sim **out);
/* Closes every node (flushing, as jr_node_close does) and frees everything. Safe on NULL. */
JR_API void jr_sim_free(jr_sim *sim);

/* Number of nodes. */
JR_API unsigned jr_sim_size(const jr_sim *sim);
/* Node i, or NULL while it is crashed (or i is out of range). */
JR_API jr_node *jr_sim_node(jr_sim *sim, unsigned i);
/* Name of node i ("n<i>"), or NULL if out of range. */
JR_API const char *jr_sim_name(const jr_sim *sim, unsigned i);
/* Index of the node called name, or -1. */
JR_API int jr_sim_index(const jr_sim *sim, const char *name);
/* Node i's simulated file system (it survives crashes), or NULL if out of range. */
JR_API jr_vfs *jr_sim_vfs(jr_sim *sim, unsigned i);

/* The simulated clock, nanoseconds (starts at 1 s). It is every node's monotonic clock
 * (jr_host.now). */
JR_API uint64_t jr_sim_now(const jr_sim *sim);

/* Wall clocks (jr_host.wall, ns since the Unix epoch). Each node has its own, which advances
 * with the simulated clock; all start at JR_SIM_WALL_START_NS when the fixture is created. A
 * test may set one to any value at any time — a clock jump forwards or backwards, or skew
 * between servers — and it keeps advancing from there; a node's wall clock survives its
 * crashes (it is the machine's). */
#define JR_SIM_WALL_START_NS 1704067200000000000ull /* 2024-01-01T00:00:00Z */
/* Node i's wall clock now; 0 if i is out of range. */
JR_API uint64_t jr_sim_wall(const jr_sim *sim, unsigned i);
/* Sets node i's wall clock to wall_ns (now). 0, or JR_EINVAL if i is out of range. */
JR_API int jr_sim_set_wall(jr_sim *sim, unsigned i, uint64_t wall_ns);
/* Runs the earliest pending event. Returns 1 if one ran, 0 if nothing is pending. */
JR_API int jr_sim_step(jr_sim *sim);
/* Runs every event due in the next ns nanoseconds, then sets the clock to now + ns. */
JR_API void jr_sim_run_for(jr_sim *sim, uint64_t ns);
/* Runs events until pred(arg, sim) returns non-zero (checked before the first event and after
 * each), or until max_ns of simulated time passed. 0 if pred became true, else JR_ETIMEDOUT. */
JR_API int jr_sim_run_until(jr_sim *sim, int (*pred)(void *arg, jr_sim *sim), void *arg,
                            uint64_t max_ns);

/* Sets the directed link from -> to (a copy is taken). JR_EINVAL for bad indexes/values. */
JR_API int jr_sim_set_link(jr_sim *sim, unsigned from, unsigned to, const jr_sim_link *link);
/* Cuts the directed link from -> to (asymmetric partition) until jr_sim_heal. */
JR_API int jr_sim_cut(jr_sim *sim, unsigned from, unsigned to);
/* Cuts both directions between the n nodes of side and every other node. */
JR_API int jr_sim_partition(jr_sim *sim, const unsigned *side, size_t n);
/* Removes every cut (links keep their jr_sim_link settings). */
JR_API void jr_sim_heal(jr_sim *sim);

/* Pauses node i's process for ns of simulated time, as a stop-the-world collection, a
 * suspended VM or a starved host would: it gets no ticks and no frames until then (it sends
 * nothing either). When it resumes, its overdue tick runs first, then the frames sent to it
 * meanwhile, in their order. JR_EINVAL if i is out of range or node i is down. A crash ends the
 * pause. */
JR_API int jr_sim_pause(jr_sim *sim, unsigned i, uint64_t ns);

/* Adds a node to the running fixture: index jr_sim_size() before the call (into *index, may be
 * NULL), named "n<index>", with a new empty disk, every link to and from it like the fixture's
 * initial ones, and its config's peers the nodes before it and itself; join sets its config's
 * join (jr_node_config.join: it joins the running cluster through them). It is opened at once
 * (jr_sim_config.configure applies as to the others) and is then like any other node: crash,
 * restart, partitions, disk faults. 0; JR_EINVAL (NULL, or JR_SIM_MAX_NODES reached), JR_ENOMEM
 * or the open's error (nothing added). */
JR_API int jr_sim_add_node(jr_sim *sim, int join, unsigned *index);

/* Power loss of node i (see Model). JR_EINVAL if out of range or already down. */
JR_API int jr_sim_crash(jr_sim *sim, unsigned i);
/* Reopens crashed node i over its surviving storage. Returns jr_node_open's result. */
JR_API int jr_sim_restart(jr_sim *sim, unsigned i);

/* Disk faults -------------------------------------------------------------------------------
 * Paths are node i's own, as jr_sim_files lists them: the WAL under "/wal" (segments, snapshots
 * in "/wal/snap"), stores under the node's store_dir (the caller's choice, e.g. "/store"). The
 * calls that damage a disk require node i to be crashed (between jr_sim_crash and
 * jr_sim_restart) and return 0, JR_EINVAL if i is out of range or node i is running, or
 * JR_ENOTFOUND if path names no file. None of them draws from the run's PRNG except
 * jr_sim_flip_bits, which draws from node i's disk's own (seeded from the run's seed), so a
 * run with the same calls replays exactly. */

/* Calls cb(arg, path, size) for every file of node i (running or not), in strcmp order of the
 * paths, with its size; a negative return from cb stops the walk and is returned. 0, JR_EINVAL,
 * JR_ENOMEM, or cb's value. */
JR_API int jr_sim_files(jr_sim *sim, unsigned i,
                        int (*cb)(void *arg, const char *path, uint64_t size), void *arg);
/* Cuts the last n bytes of the file (all of it if n >= its size), synced bytes included. */
JR_API int jr_sim_cut_tail(jr_sim *sim, unsigned i, const char *path, uint64_t n);
/* Flips nbits bits at random positions of [off, off + len) of the file (len 0: to its end;
 * a range past the end flips nothing). */
JR_API int jr_sim_flip_bits(jr_sim *sim, unsigned i, const char *path, uint64_t off, uint64_t len,
                            unsigned nbits);
/* Overwrites [off, off + len) of the file (clipped to its size) with zeros. */
JR_API int jr_sim_zero(jr_sim *sim, unsigned i, const char *path, uint64_t off, uint64_t len);
/* Deletes the file. */
JR_API int jr_sim_remove_file(jr_sim *sim, unsigned i, const char *path);

/* A saved copy of one node's disk (every file and directory), owned by the caller. */
typedef struct jr_sim_disk jr_sim_disk;
/* Saves node i's disk into *out, running or crashed: what a power loss at this moment would
 * leave (every file as of its last sync, no torn write) — a crash-consistent VM snapshot. 0,
 * JR_EINVAL (i out of range, out NULL) or JR_ENOMEM; on failure *out is NULL. */
JR_API int jr_sim_disk_save(jr_sim *sim, unsigned i, jr_sim_disk **out);
/* Rolls crashed node i's disk back to disk (normally saved from node i): every file and
 * directory not in it is removed, the others get its bytes, durable at once. 0, JR_EINVAL (i
 * out of range, node i running, disk NULL) or JR_ENOMEM (nothing changed). disk stays valid. */
JR_API int jr_sim_disk_restore(jr_sim *sim, unsigned i, const jr_sim_disk *disk);
/* Frees a saved copy (it does not depend on the fixture: it may outlive it). Safe on NULL. */
JR_API void jr_sim_disk_free(jr_sim_disk *disk);

/* Digest of the run so far: xxh3 chained over every delivered frame (time, endpoints, bytes)
 * and every applied entry and restored snapshot (node, group, index, term, type, data). */
JR_API uint64_t jr_sim_digest(const jr_sim *sim);

/* Counters of the simulated network. */
typedef struct jr_sim_stats {
    size_t size;          /* sizeof(jr_sim_stats), set by the caller */
    uint64_t frames_sent; /* handed to the network by the nodes */
    uint64_t frames_delivered;
    uint64_t frames_dropped; /* lost by drop probability, cuts, or a crashed receiver */
    uint64_t frames_duplicated;
    uint64_t bytes_delivered;
    uint64_t events; /* deliveries + ticks run */
    /* With sync_delay_ns: messages vouching for durable state (a vote, an append
     * acknowledgement) a node sent while its sync job was out (outside the jr_node_synced
     * that reported it). The library's contract makes it 0; the fixture counts to check it. */
    uint64_t durable_early;
} jr_sim_stats;

JR_API int jr_sim_stats_get(const jr_sim *sim, jr_sim_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_SIM_H */
