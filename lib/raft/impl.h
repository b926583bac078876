/*
 * impl — the inside of one Raft group (struct jr__raft) and the functions its modules share.
 *
 * Modules, each a .c file of this folder:
 *   raft.c        lifecycle, recovery, step dispatch and term rules, the ready cycle, queries
 *   election.c    timers, pre-vote and vote, becoming follower/candidate/leader, check-quorum
 *   replication.c append/heartbeat send and receive, fast backtracking, commit
 *   progress.c    per-follower state (probe / replicate / snapshot) and the inflight window
 *   membership.c  configuration entries: take effect on append, revert on truncation
 *   transfer.c    leadership transfer
 *   snapshot.c    snapshots taken by the node, compaction, chunked install
 *   memlog.c      the in-memory log rings; conf.c the configuration codec
 *
 * Invariants of struct jr__raft:
 *  - snap_index <= commit <= last index; applied <= commit; log.base_index <= snap_index;
 *  - durable <= last index (entries above durable are what the node has yet to write);
 *  - conf is the configuration of the latest CONFIG entry in the log, else snap_conf;
 *    cidx lists the indexes of every CONFIG entry held in the log, ascending;
 *  - as leader, prog[i] describes conf.m[i] (same order, same count);
 *  - notified is 1 from io->notify until jr__raft_ready_done().
 */
#ifndef JR_RAFT_IMPL_H
#define JR_RAFT_IMPL_H

#include "memlog.h"
#include "raft.h"
#include "util/rand.h"

enum { ROLE_FOLLOWER, ROLE_PRECANDIDATE, ROLE_CANDIDATE, ROLE_LEADER };

typedef struct jr__prog {
    jr__id id;
    uint8_t voter;
    uint8_t state;  /* enum jr__progress_state */
    uint8_t paused; /* probe: a probe is out; snapshot: a chunk is out (retried on heartbeat) */
    uint64_t match; /* highest index known to match the leader's log (durable on the peer) */
    uint64_t next;  /* next index to send */
    uint64_t last_contact;
    uint64_t hb_match;    /* match at the previous heartbeat tick: no change means stalled */
    uint64_t sent_commit; /* highest commit index this peer has been sent */
    /* Replicate state: the last index of every APPEND not yet acknowledged, oldest first. */
    uint64_t *ring;
    uint32_t ring_head, ring_count;
    /* Snapshot state: which snapshot is being sent and the offset the peer wants next. */
    uint64_t snap_index, snap_offset;
} jr__prog;

struct jr__raft {
    jr__raft_config cfg; /* defaults applied */
    jr__raft_io io;
    const jr_allocator *alloc;
    jr__rand rng;
    uint64_t now; /* latest time passed in */

    /* Persistent state (§3.3, Figure 3.1) and what of it is durable. */
    uint64_t term;
    jr__id vote;
    uint64_t commit;
    jr__hardstate hs_durable;
    uint64_t durable; /* entries up to here are durable */

    jr__memlog log;
    uint64_t snap_index, snap_term;
    jr__conf snap_conf;
    uint64_t applied;

    /* Membership. */
    jr__conf conf;
    uint64_t conf_index; /* index of conf's CONFIG entry; snap_index if it came from there */
    uint64_t *cidx;
    uint32_t ncidx, ccap;

    /* Role and timers. */
    int role;
    jr__id leader;
    uint64_t leader_contact;    /* when we last heard from the leader */
    uint64_t rto;               /* this round's randomized election timeout */
    uint64_t election_deadline; /* follower/candidate */
    uint64_t votes_for, votes_against; /* bit i: conf.m[i] answered */

    /* Leader. */
    jr__prog *prog;
    uint32_t prog_cap;
    uint64_t *ring_pool[JR__MAX_MEMBERS]; /* spare inflight rings */
    uint32_t npool;
    uint64_t hb_deadline, cq_deadline;
    uint64_t term_start;    /* index of this leader's no-op */
    uint8_t send_pending;   /* entries or commit not yet sent to followers */
    jr__id transfer_to;
    uint64_t transfer_deadline;
    uint8_t transfer_sent; /* TIMEOUT_NOW went out */
    jr__entry *scratch;    /* the entries of one APPEND being built */
    uint32_t scratch_cap;
    uint8_t *chunk; /* one snapshot chunk being sent */

    /* Follower: the snapshot being received. */
    uint8_t rs_active;
    uint64_t rs_index, rs_term, rs_offset;

    uint8_t notified;
    uint8_t started;
};

/* raft.c */
void jr__raft_wake(jr__raft *r);
void jr__raft_send(jr__raft *r, jr__msg *m); /* fills group, from, term */
static inline const jr__member *jr__raft_me(const jr__raft *r)
{
    return jr__conf_find(&r->conf, r->cfg.self);
}
static inline int jr__raft_is_voter(const jr__raft *r)
{
    const jr__member *me = jr__raft_me(r);
    return me && me->voter;
}
static inline uint64_t jr__raft_quorum(const jr__raft *r)
{
    return jr__conf_voters(&r->conf) / 2 + 1;
}
static inline uint64_t jr__raft_last(const jr__raft *r)
{
    return r->log.last;
}

/* election.c */
void jr__elect_reset_timer(jr__raft *r, uint64_t now);
int jr__elect_can_campaign(const jr__raft *r);
int jr__elect_due(const jr__raft *r, uint64_t now);
int jr__elect_in_lease(const jr__raft *r, uint64_t now);
void jr__elect_campaign(jr__raft *r, uint64_t now, int prevote, int transfer);
void jr__elect_become_follower(jr__raft *r, uint64_t now, uint64_t term, jr__id leader);
void jr__elect_on_vote(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__elect_on_vote_resp(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__elect_on_timeout_now(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__elect_check_quorum(jr__raft *r, uint64_t now);
void jr__elect_tick(jr__raft *r, uint64_t now);

/* progress.c */
int jr__prog_reserve(jr__raft *r, uint32_t n);
void jr__prog_rebuild(jr__raft *r);
void jr__prog_free(jr__raft *r);
jr__prog *jr__prog_find(jr__raft *r, jr__id id);
void jr__prog_init(jr__raft *r, jr__prog *p);
void jr__prog_probe(jr__prog *p, uint64_t next);
void jr__prog_replicate(jr__prog *p);
void jr__prog_snapshot(jr__prog *p, uint64_t index);
int jr__prog_window_full(const jr__raft *r, const jr__prog *p);
void jr__prog_sent(jr__raft *r, jr__prog *p, uint64_t last);
void jr__prog_acked(const jr__raft *r, jr__prog *p, uint64_t index);

/* replication.c */
int jr__repl_append_local(jr__raft *r, uint64_t term, uint8_t type, const void *data,
                          uint32_t len);
void jr__repl_send_append(jr__raft *r, jr__prog *p, uint64_t now);
void jr__repl_flush(jr__raft *r, uint64_t now);
int jr__repl_heartbeat_due(const jr__raft *r, uint64_t now);
void jr__repl_heartbeat(jr__raft *r, uint64_t now);
void jr__repl_maybe_commit(jr__raft *r, uint64_t now);
int jr__repl_check_append(const jr__raft *r, const jr__msg *m);
int jr__repl_on_append(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__repl_on_append_resp(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__repl_on_heartbeat(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__repl_on_heartbeat_resp(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__repl_reply_stale(jr__raft *r, const jr__msg *m);
void jr__repl_heard_leader(jr__raft *r, uint64_t now, jr__id from);

/* membership.c */
int jr__memb_appended(jr__raft *r, uint64_t index, const uint8_t *data, uint32_t len);
void jr__memb_truncated(jr__raft *r, uint64_t index);
void jr__memb_compacted(jr__raft *r);
void jr__memb_reset(jr__raft *r, const jr__conf *c, uint64_t index);
int jr__memb_at(const jr__raft *r, uint64_t index, jr__conf *out);
void jr__memb_committed(jr__raft *r, uint64_t now);
int jr__memb_pending(const jr__raft *r);

/* transfer.c */
void jr__xfer_progress(jr__raft *r, jr__prog *p);
void jr__xfer_tick(jr__raft *r, uint64_t now);
void jr__xfer_timeout_now(jr__raft *r, jr__prog *p);

/* snapshot.c */
void jr__snap_send(jr__raft *r, jr__prog *p, uint64_t now);
void jr__snap_restore(jr__raft *r, uint64_t index, uint64_t term, const jr__conf *c);
int jr__snap_check(const jr__msg *m);
void jr__snap_on_snap(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__snap_on_resp(jr__raft *r, uint64_t now, const jr__msg *m);

#endif
