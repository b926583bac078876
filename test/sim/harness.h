/*
 * harness — a cluster of sim nodes running one raw group with a checking state machine, shared
 * by the fixture's tests (test_sim.c, test_random.c) and the node tests.
 *
 * Every replica's fsm keeps a hash chain of what it applied (index, data) and checks that
 * indexes strictly increase; snapshots carry the chain, so a restored replica continues it. The
 * fixture's on_apply feeds a cluster-wide table: the first replica to apply index i fixes what
 * i holds (term, data hash); every other replica must apply exactly that (state-machine
 * safety, dissertation §3.6.3). Violations are recorded as text in h->fail (first one wins).
 */
#ifndef JR_TEST_SIM_HARNESS_H
#define JR_TEST_SIM_HARNESS_H

#include <stdint.h>

#include "jetraft.h"
#include "jetraft/sim.h"

#define H_MAX 7

typedef struct h_cluster h_cluster;

typedef struct h_fsm {
    h_cluster *h;
    unsigned node;
    uint64_t last;  /* last index applied */
    uint64_t chain; /* hash chain over (index, data) */
    uint64_t count;
} h_fsm;

typedef struct h_applied {
    uint64_t term;
    uint64_t hash;
    uint8_t set;
} h_applied;

struct h_cluster {
    jr_sim *sim;
    unsigned n;
    uint64_t group;
    uint64_t snapshot_entries;
    h_fsm fsm[H_MAX];
    jr_fsm ops[H_MAX];
    jr_group *g[H_MAX];
    h_applied *applied; /* by index */
    size_t applied_cap;
    uint64_t max_applied;
    char fail[512];
};

/* Creates a cluster of n nodes from cfg (cfg->nodes, on_apply, arg are overwritten) and opens
 * the group on every node. */
int h_new(h_cluster *h, jr_sim_config *cfg, unsigned n, uint64_t snapshot_entries);
void h_free(h_cluster *h);
/* (Re)opens the group on node i (after jr_sim_restart). */
int h_open(h_cluster *h, unsigned i);
/* Index of the node that is leader of the group with the highest term, or -1. */
int h_leader(h_cluster *h);
/* Runs until some node leads (ready to take proposals); 0 or JR_ETIMEDOUT. */
int h_wait_leader(h_cluster *h, uint64_t max_ns);
/* Records a violation (printf-style) unless one is already recorded. */
void h_failf(h_cluster *h, const char *fmt, ...);

#endif
