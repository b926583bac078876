/*
 * members — peer changes of a live stream as pure decisions (ARCHITECTURE §6 "peer
 * management"; meta_state.h "Peer changes"): which peers stay when a stream shrinks (the meta
 * leader), and which single-server membership change the stream's leader makes next to bring
 * its Raft group's configuration to the assignment's peer set (desired-state convergence).
 *
 * No state, no allocation, no clock: the callers gather the facts (the configuration, each
 * member's progress as the leader sees it, liveness), so the same facts always give the same
 * decision, and a leader that takes over after a failover simply decides again from what it
 * sees — there is no plan to resume.
 *
 * Convergence rules (dissertation §4.1: one server at a time; §4.2.1: a new server joins as a
 * non-voting member until it has caught up, so a grow never lowers the number of failures the
 * group tolerates):
 *   1. a member the assignment does not name and that is an observer is removed (it never
 *      counted toward a quorum), unless the leader stands in for a removed voter of two and
 *      needs its vote (`needed`): that one waits until the pair is gone (a new voter promoted
 *      by rule 3), as the core refuses its removal before;
 *   2. a peer the assignment names that is not a member is added as an observer;
 *   3. an observer the assignment names is promoted once caught up; while one is still
 *      catching up, nothing else changes (voters leave only after the new ones vote);
 *   4. a voter the assignment does not name, other than the leader itself, is removed — one
 *      not live first, then the least caught up — but only if the voters left still have a
 *      live majority (the removal commits on a majority of the configuration it creates:
 *      removing a live member and keeping a dead one could leave a group that can commit
 *      nothing); if none can go now, wait. Live means acknowledging: heard from within an
 *      election timeout and holding durably what the leader had committed a while ago
 *      (jr__ack_floor), since a member whose writes fail is still heard from (it answers
 *      heartbeats) but would never acknowledge the removal;
 *   5. the leader itself, if the assignment does not name it, hands leadership to a caught-up
 *      voter the assignment names (the new leader then removes it by rule 4);
 *   6. otherwise the configuration is the assignment: converged.
 */
#ifndef JR_META_MEMBERS_H
#define JR_META_MEMBERS_H

#include <stddef.h>
#include <stdint.h>

/* One member of the group's latest configuration, as its leader sees it. */
typedef struct jr__memb {
    uint64_t id;       /* non-zero */
    uint8_t voter;     /* 0: observer */
    uint8_t alive;     /* acknowledging: heard from within an election timeout and its match
                          index at least the jr__ack_floor (the leader itself: 1) */
    uint8_t caught_up; /* alive, holds (nearly) the leader's whole log, and (observers, and the
                          next leader) its store is complete; the leader itself: 1 */
    uint8_t needed;    /* an observer whose vote the leader needs while it stands in for a
                          removed voter of two (raft.h jr__raft_stand_in_needs): kept by rule 1 */
} jr__memb;

enum jr__memb_step {
    JR__MEMB_CONVERGED = 0, /* the configuration is the assignment, every peer a voter */
    JR__MEMB_WAIT = 1,      /* nothing to do now (an observer is catching up, or no voter to
                               hand leadership to is caught up) */
    JR__MEMB_ADD = 2,       /* add `peer` as an observer */
    JR__MEMB_PROMOTE = 3,   /* promote observer `peer` to voter */
    JR__MEMB_REMOVE = 4,    /* remove member `peer` */
    JR__MEMB_TRANSFER = 5,  /* hand leadership to voter `peer`, then let it remove us */
};

/* The floor a voter's acknowledgements must reach for rule 4 to count it live: the leader's
 * commit index as it was a while ago. A member whose writes fail still answers what needs
 * nothing durable (heartbeats), so being heard from is not enough: a live voter must also have
 * acknowledged, durably, what the group had committed one period ago (a healthy member trailing
 * by a round trip or a slow disk has). Two samples of the commit index, at least `period`
 * apart: the floor is the older one, so it is at least one period old once the leader has kept
 * sampling for a period, and newer (stricter: a healthy member that has not acknowledged the
 * latest entries yet counts as not live, and rule 4 waits) before. Samples more than two
 * periods old are dropped (the leader stopped sampling), so the floor is never older than two
 * periods. A member whose writes fail after it acknowledged everything it was asked to write
 * cannot be told from a healthy one until the group writes something. Zero-initialised: no
 * samples. */
typedef struct jr__ack_floor {
    uint64_t at[2];     /* when commit[] was sampled: [0] the older */
    uint64_t commit[2]; /* the leader's commit index then */
    uint8_t n;          /* samples held (0: none) */
} jr__ack_floor;

/* Samples commit at now (period > 0) and returns the floor: the older sample's commit index. */
uint64_t jr__ack_floor_update(jr__ack_floor *f, uint64_t now, uint64_t commit, uint64_t period);

/* Levels of online[] for jr__members_shrink as the meta leader sees a peer of a stream: its
 * server is up but the stream's group does not hear from its replica (its store damaged: it
 * cannot open; the first to go), its server is offline (it may come back with its data), or
 * its replica is heard from. */
enum jr__memb_health {
    JR__MEMB_HEALTH_DAMAGED = 0,
    JR__MEMB_HEALTH_OFFLINE = 1,
    JR__MEMB_HEALTH_OK = 2,
};

typedef struct jr__memb_next {
    int step;      /* enum jr__memb_step */
    uint64_t peer; /* the server concerned (0 for CONVERGED and WAIT) */
} jr__memb_next;

/* The next change the leader `self` makes: m[0..n) is the configuration (self among it, ids
 * distinct), want[0..nwant) the ids of the assignment's peers (distinct, non-zero). Follows the
 * rules above; ties go to the first in m (or want) order. */
jr__memb_next jr__members_next(uint64_t self, const jr__memb *m, size_t n, const uint64_t *want,
                               size_t nwant);

/* Which peers stay when a stream of n peers shrinks to `replicas` (1 <= replicas <= n): the
 * leader first (leader < n; n or more: unknown), then the higher online[] level (may be NULL:
 * unknown; 0 offline, 1 online, or any finer scale where more means healthier, such as
 * JR__MEMB_HEALTH_*), then the least lag (lag may be NULL: unknown), then the earlier in
 * placement order. Writes the
 * indexes of the peers that stay to keep[0..replicas), in placement order. Returns replicas, or
 * 0 if the arguments are out of range. */
size_t jr__members_shrink(size_t n, size_t replicas, size_t leader, const int *online,
                          const uint64_t *lag, size_t *keep);

#endif
