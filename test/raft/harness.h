/*
 * harness — N jr__raft instances wired together in one thread: message queues, a manual clock,
 * an in-memory "disk" per node, a hash-chain state machine, faults, and invariant checkers.
 *
 * The harness plays the node's part of the ready cycle exactly as raft.h describes it: after
 * every input to a node whose group notified, it flushes (jr__raft_flush, unpersisted -> disk,
 * persisted, DURABLE messages released, committed entries applied, ready_done).
 *
 * Invariants checked on every flush (they abort the test through ck_assert with the seed):
 *  - election safety: at most one leader per term;
 *  - log matching: an (index, term) pair always carries the same entry, with the same previous
 *    term, in every log that ever holds it;
 *  - leader completeness: a new leader holds every entry committed anywhere;
 *  - state-machine safety: every node applies the same entry at each index, and a snapshot
 *    install brings the same state as applying the log;
 *  - per node: commit never decreases while it runs; applied <= commit.
 *
 * With h->quiesce set (before h_start), the harness also plays the node's liveness layer of
 * issue 5 (lib/node/liveness.h) for the group, over the same faulty network as everything else:
 * when the group becomes quiet at its leader, the leader's node tells every other member once
 * (a listing, jr__raft_hb_item -> jr__raft_hb_recv), and when it stops being quiet, once more
 * (a tombstone -> jr__raft_wake); both are repeated with every heartbeat until the member's
 * node echoes them (the echo relays its term and last index: jr__raft_hb_resp). Heartbeats go
 * every interval to each peer the node shares the quiet group with, or owes an answer; they
 * carry the node's incarnation, so a restart is noticed at once. A peer heard nothing from (any
 * message) for an election timeout is lost (jr__raft_peer_lost, with the node's staggered
 * delay for followers), and alive again when heard from (jr__raft_peer_alive, listing again).
 */
#ifndef JR_TEST_RAFT_HARNESS_H
#define JR_TEST_RAFT_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "raft/raft.h"
#include "util/rand.h"

#define H_MAX 7
#define H_MS 1000000ULL

typedef struct h_msg h_msg;
typedef struct harness harness;

typedef struct h_disk_ent {
    uint64_t term;
    uint8_t type;
    uint32_t len;
    uint8_t *data;
} h_disk_ent;

/* A copy of a node's disk (h_save / h_rollback). */
typedef struct h_copy {
    uint64_t term, vote, commit;
    h_disk_ent *dlog;
    uint64_t dfirst, dn;
    uint64_t snap_index, snap_term, snap_sm_index, snap_sm_hash;
    jr__conf snap_conf;
    int has_snap, valid;
} h_copy;

#define H_HS_HIST 8

typedef struct h_node {
    harness *h;
    int idx;
    jr__id id;
    jr__raft *r;
    int up;
    int released;        /* h_release: down, answering VOUCH with nothing */
    int lost_all;        /* h_lose: released by a lost disk (its answer says it may be faulty) */
    int restart_damaged; /* h_restart opens it damaged, as a node whose recovery found damage */
    int notified;
    int refuse_snaps; /* its snapshot installs fail (as a node that cannot take one now) */
    int snaps_refused;
    int hold; /* 1: the node does not flush at all; 2: its entry writes are slow (only the hard
                 state becomes durable; used on leaders, whose DURABLE messages are votes) */
    /* the "disk": hard state, entries [dfirst, dfirst + dn), snapshot */
    uint64_t term, vote, commit;
    h_disk_ent *dlog;
    uint64_t dfirst, dn, dcap;
    uint64_t snap_index, snap_term, snap_sm_index, snap_sm_hash;
    jr__conf snap_conf;
    int has_snap;
    /* the hard states it wrote, newest last (a lost tail may take the newest with it) */
    uint64_t hs_hist[H_HS_HIST][3];
    int hs_n;
    h_copy saved; /* an earlier copy of the whole disk (h_save) */
    /* state machine: hash chain over applied entries */
    uint64_t sm_index, sm_hash;
    /* snapshot being received */
    uint8_t *rbuf;
    size_t rlen, rcap;
    /* DURABLE messages waiting for the flush */
    h_msg *held, **held_tail;
    /* checks */
    uint64_t last_commit;
    uint64_t applied_count;
    int was_leader_term; /* term in which we last saw it leader (completeness check) */
    /* node-level liveness (h->quiesce) */
    uint64_t heard[H_MAX]; /* when a message from node j was last delivered here */
    uint8_t lost[H_MAX];   /* node j declared lost */
    uint64_t nhb_next;     /* next coalesced heartbeat */
    uint64_t inc, seq;     /* incarnation (high 32 bits of seq), heartbeat counter */
    uint64_t inc_seen[H_MAX];
    int was_ql;   /* quiet leader at the last sync */
    int was_lead; /* leader at the last sync */
    struct h_pend {
        int kind; /* 0 nothing, 1 listing, 2 tombstone */
        uint64_t term, commit, sent_seq;
    } pend[H_MAX];
    struct h_owe {
        int owe, has;
        uint64_t seq, term, index;
    } owe[H_MAX];
} h_node;

/* Returns 0 to drop the message. */
typedef int (*h_filter_fn)(harness *h, const jr__msg *m, void *arg);

struct harness {
    int n;
    h_node nodes[H_MAX];
    uint64_t now;
    uint64_t seed;
    jr__rand rng;
    jr__raft_config cfg; /* template (group, timeouts, limits, alloc) */
    /* network */
    h_msg **q;
    size_t qn, qcap;
    uint64_t seq;
    uint32_t drop_pct, dup_pct;
    uint64_t delay_max;        /* ns; random delay in [0, delay_max] reorders */
    uint8_t cut[H_MAX][H_MAX]; /* cut[a][b]: a -> b loses everything */
    h_filter_fn filter;
    void *filter_arg;
    /* state machine / snapshots */
    uint64_t snap_every; /* 0: never snapshot */
    uint64_t snap_trailing;
    size_t snap_size; /* bytes of a serialized snapshot (forces chunking) */
    /* invariants */
    jr__id *leader_of; /* by term */
    size_t leader_cap;
    struct h_key *keys; /* (index, term) -> entry hash */
    size_t kcap, kn;
    uint64_t *ctrm, *chash; /* committed entry at index: term, entry hash */
    uint64_t *chain;        /* state-machine hash after applying 1..index */
    size_t ccap;
    uint64_t max_commit;
    uint64_t steps;
    /* Restarts from disk mark the replica unvouched (jr__raft_load_unvouched), as the node
     * does for every group it recovers; no_vouch (RAFT_NO_VOUCH=1) leaves that out, to show
     * what the storage faults do to plain Raft. */
    int no_vouch;
    /* counters (what a run exercised) */
    uint64_t lost_tails, rollbacks; /* storage faults injected (h_restart_lost, h_rollback) */
    uint64_t releases;              /* replicas released (h_release) */
    uint64_t released_vouches;      /* VOUCHes a released node answered with nothing */
    uint64_t losses;                /* replicas whose whole storage was lost (h_lose) */
    /* Broken variants of h_lose's answer, to show the tests that each part matters
     * (test_lost.c): without its unfloored bit, or none at all. */
    int lost_floored, lost_silent;
    uint64_t sent, delivered, dropped;
    uint64_t elections, installs, truncations, restarts, config_entries;
    /* quiescence (node-level heartbeats) */
    int quiesce;
    uint64_t quiesced;        /* a leader went quiet */
    uint64_t quiet_wakes;     /* a quiet group woke */
    uint64_t peers_lost;      /* a node declared another lost */
    uint64_t nhb_items;       /* coalesced heartbeat items delivered */
    uint64_t raft_heartbeats; /* HEARTBEAT messages handed to the network */
};

/* Sets up n nodes (ids 1..n) with a template config (election 100 ms, heartbeat 20 ms unless
 * set by the caller after h_init and before h_start). Nothing runs yet. */
void h_init(harness *h, int n, uint64_t seed);
/* Bootstraps nodes [0, nmembers) with a configuration where the first nvoters are voters and
 * the rest observers, and starts every node. */
void h_start(harness *h, int nmembers, int nvoters);
void h_free(harness *h);

/* Delivers queued messages (ignoring delays) until none are left or max deliveries. */
void h_deliver_all(harness *h);
/* Advances the clock by dt, ticking every node whose deadline passed and delivering whatever
 * becomes due, in steps of at most `step`. */
void h_run(harness *h, uint64_t dt);
/* Fires node i's election timer now (the clock moves to its deadline) and delivers. */
void h_timeout(harness *h, int i);
/* Runs until some node leads (returns its index) or dt passes (-1). */
int h_wait_leader(harness *h, uint64_t dt);
/* The leader with the highest term among running nodes, or -1. */
int h_leader(const harness *h);

int h_propose(harness *h, int i, const char *s, uint64_t *index);
/* Elects node i by firing its election timer and running 10 ms; asserts it leads and is
 * ready. */
void h_elect(harness *h, int i);
/* Node l proposes the n entries "tag-0" .. "tag-(n-1)" (each asserted accepted), then runs
 * 5 ms; the index of the last. */
uint64_t h_propose_n(harness *h, int l, int n, const char *tag);
/* Leader l makes membership change op on peer (asserted accepted) and runs until it commits
 * (at most a second; asserted). */
void h_change(harness *h, int l, int op, jr__id peer);
void h_crash(harness *h, int i);
void h_restart(harness *h, int i);
/* Storage faults. h_restart_lost: node i crashes and its disk loses its last `cut` entries,
 * synced ones included (never below its snapshot, which is another file, nor the bootstrap
 * entry, which tells it its group), and with old_hs also
 * its newest hard states (back to the one written old_hs writes earlier); then it restarts.
 * h_save copies node i's whole disk; h_rollback crashes node i, puts that copy back (all its
 * files rolled back to an earlier copy) and restarts it (0 if there was no copy).
 * Both return 0 and leave the node alone when the files left would make it the only voter of
 * the configuration it restarts with: such a replica vouches for itself (no peer it knows can
 * tell it what it lost), which is the lost synced data of a sole voter, lost for good. For the
 * same reason a node's copy is dropped once it is its group's only voter: the entries it
 * commits alone are held by no other voter, and the voters it later adds learn them from it
 * alone, so a rollback past them is a sole voter's loss too (the copy's configuration names
 * none of those voters to ask). */
int h_restart_lost(harness *h, int i, uint64_t cut, int old_hs);
void h_save(harness *h, int i);
int h_rollback(harness *h, int i);
/* Node i releases its replica, as a server does once a committed configuration left it out
 * (lib/js): it crashes and its disk is wiped (hard state, log, snapshot and saved copy). It
 * stays down for the group (h_restart leaves it down), but answers a VOUCH with no entry and no
 * configuration, as its node does for a group it does not host. */
void h_release(harness *h, int i);
/* Node i loses its whole storage, as a node whose WAL was lost (lib/node/recover.c) that does
 * not open the group again: it crashes and its disk is wiped like h_release's, and its node
 * answers a VOUCH with no entry and no configuration, saying it may come from a faulty replica
 * (unfloored), as lib/node does for a group it does not hold after a lost WAL. It is a faulty
 * replica of every configuration naming it. */
void h_lose(harness *h, int i);
void h_isolate(harness *h, int i);
void h_heal(harness *h);
/* Runs the ready cycle of node i if it notified. */
void h_flush(h_node *nd);

/* Node i's committed & applied index. */
static inline uint64_t h_commit(const harness *h, int i)
{
    return jr__raft_commit_index(h->nodes[i].r);
}
/* Reads node i's entry at index into a NUL-terminated string (or "" for non-NORMAL). */
const char *h_entry_str(const harness *h, int i, uint64_t index, char *buf, size_t cap);
/* Runs every invariant check once over the whole cluster (the per-flush checks are
 * incremental; this one is a full sweep, for tests to call at the end). */
void h_check_all(harness *h);

/* Replaces node i's disk with a log: index 1 is the bootstrap CONFIG entry (`voters` voters
 * 1..voters), then one NORMAL entry per term in terms[0..n) ("<index>:<term>"), hard state
 * term `term`; and (re)starts it from that disk, trusted (not unvouched: the scenario says
 * this is what it acknowledged). */
void h_preload(harness *h, int i, int voters, uint64_t term, const uint64_t *terms, size_t n);

/* Sends a raw message into node i as if from the network (for malformed-input tests). */
int h_inject(harness *h, int i, const jr__msg *m);

/* The staggered campaign delay the node uses when node `self_idx` loses `lost_idx`, the
 * leader of a group with configuration c (liveness.c follows the same rule). */
uint64_t h_stagger(harness *h, int self_idx, int lost_idx);

/* Counts of queued messages of a type (0 = any) from node a (-1 = any) to b (-1 = any). */
size_t h_queued(const harness *h, int type, int from, int to);

#endif
