/*
 * groups — what the scale tests share: raw groups on a simulated cluster whose every node is a
 * voter, and looking at their Raft cores.
 */
#ifndef JR_TEST_SCALE_GROUPS_H
#define JR_TEST_SCALE_GROUPS_H

#include <stdint.h>

#include "jetraft.h"
#include "jetraft/sim.h"
#include "node/node.h"

/* Opens group gid on node i with nodes 0..nodes-1 as its voters and fsm f, which this fills in
 * (f->ctx = ctx, f->apply = apply) and which must outlive the group. Fails the test on error. */
void sg_open(jr_sim *sim, unsigned nodes, unsigned i, uint64_t gid, jr_fsm *f, void *ctx,
             void (*apply)(void *ctx, uint64_t index, const void *data, size_t len));
/* The value of environment variable name (a decimal number), or dflt if it is not set. */
uint64_t sg_env(const char *name, uint64_t dflt);
/* A simulated cluster of `nodes` nodes with the fixture's defaults and `seed`. Fails the test on
 * error. */
jr_sim *sg_new(unsigned nodes, uint64_t seed);
/* Opens groups 1..groups on every node, state machines that ignore what they apply;
 * fsms[i * (groups + 1) + gid] is node i's for gid (nodes * (groups + 1) of them, outliving the
 * groups). */
void sg_open_all(jr_sim *sim, unsigned nodes, uint64_t groups, jr_fsm *fsms);
/* Group gid's Raft core on node i; NULL if the node is down or does not have it open. */
jr__raft *sg_raft(jr_sim *sim, unsigned i, uint64_t gid);
/* The highest term any replica of gid on nodes 0..nodes-1 is in (0 if none is open). */
uint64_t sg_max_term(jr_sim *sim, unsigned nodes, uint64_t gid);
/* The node (of 0..nodes-1) where gid has a leader ready for proposals, or -1. */
int sg_ready_leader(jr_sim *sim, unsigned nodes, uint64_t gid);

#endif
