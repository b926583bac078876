/*
 * harness — a cluster of sim nodes running one or more raw groups (ids H_GROUP0, H_GROUP0 + 1,
 * ...) with a checking state machine, shared by the fixture's tests (test_sim.c, test_random.c).
 *
 * Every replica's fsm keeps a hash chain of what it applied (index, data) and checks that
 * indexes strictly increase; snapshots carry the chain, so a restored replica continues it. The
 * fixture's on_apply feeds a cluster-wide table: the first replica to apply index i fixes what
 * i holds (term, data hash); every other replica must apply exactly that (state-machine
 * safety, dissertation §3.6.3). Violations are recorded as text in h->fail (first one wins).
 */
#ifndef JR_TEST_SIM_HARNESS_H
#define JR_TEST_SIM_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "jetraft/sim.h"

#define H_MAX 7
#define H_GROUPS 4
#define H_GROUP0 7

typedef struct h_cluster h_cluster;

typedef struct h_fsm {
    h_cluster *h;
    unsigned node;
    unsigned group; /* index 0..ngroups-1 */
    uint64_t last;  /* last index applied */
    uint64_t chain; /* hash chain over (index, data) */
    uint64_t count;
} h_fsm;

typedef struct h_applied {
    uint64_t term;
    uint64_t hash;
    uint8_t set;
} h_applied;

typedef struct h_table {
    h_applied *applied; /* by index */
    size_t cap;
    uint64_t max_applied;
} h_table;

struct h_cluster {
    jr_sim *sim;
    unsigned n;
    unsigned ngroups;
    uint64_t snapshot_entries;
    h_fsm fsm[H_MAX][H_GROUPS];
    jr_fsm ops[H_MAX][H_GROUPS];
    jr_group *g[H_MAX][H_GROUPS]; /* stale while node i is crashed */
    h_table table[H_GROUPS];
    char fail[512];
};

/* Creates a cluster of n nodes from cfg (cfg->nodes, on_apply, arg are overwritten; on_step is
 * kept and gets arg = h) and opens ngroups groups on every node. */
int h_new(h_cluster *h, jr_sim_config *cfg, unsigned n, unsigned ngroups,
          uint64_t snapshot_entries);
void h_free(h_cluster *h);
/* (Re)opens every group on node i (after jr_sim_restart). */
int h_open(h_cluster *h, unsigned i);
/* Opens every group on node i as a joiner: no voter list, so it starts empty and waits for a
 * leader to add it (or, on a node that ran before, for its peers to vouch for it). */
int h_join(h_cluster *h, unsigned i);
/* The group with index k on node i if node i is up, else NULL. */
jr_group *h_group(h_cluster *h, unsigned i, unsigned k);
/* Index of the node that leads group k with the highest term, or -1. */
int h_leader(h_cluster *h, unsigned k);
/* Runs until group 0 has a leader; 0 or JR_ETIMEDOUT. */
int h_wait_leader(h_cluster *h, uint64_t max_ns);
/* The usual start of a test: a cluster of 3 nodes from seed, each node's config passed through
 * configure (NULL: none), ngroups groups snapshotting every snapshot_entries (0: the default),
 * run until group 0 has a leader. Returns the leader's index, or a negative JR_E* (h_new's
 * failure, or JR_ETIMEDOUT after 5 s). */
int h_start(h_cluster *h, uint64_t seed, unsigned ngroups, uint64_t snapshot_entries,
            void (*configure)(void *arg, unsigned i, jr_node_config *cfg));
/* A configure for h_start: 16 KiB WAL segments, so that a few hundred entries fill several. */
void h_small_segments(void *arg, unsigned i, jr_node_config *cfg);
/* Node l proposes count entries of len bytes `fill` to group 0, not waiting for them. */
void h_propose_fill(h_cluster *h, int l, unsigned count, size_t len, char fill);
/* Records a violation (printf-style) unless one is already recorded. */
void h_failf(h_cluster *h, const char *fmt, ...);

#endif
