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
 *   quiesce.c     idle groups: a quiet leader stops heartbeating, quiet followers stop their
 *                 election timer; node-level (coalesced) heartbeats stand in for both
 *   removed.c     a group of two voters whose other voter's server was removed for good:
 *                 when this replica counts that voter's vote and acknowledgement as given
 *   vouch.c       a replica restarted from storage that may have lost records: VOUCH queries,
 *                 the term and log floors it learns, when it is whole again; the leader's side
 *   memlog.c      the in-memory log rings; conf.c the configuration codec; confs.c the
 *                 interned configurations groups share
 *
 * Invariants of struct jr__raft:
 *  - snap_index <= commit <= last index; applied <= commit; log.base_index <= snap_index;
 *    term >= the last entry's term;
 *    commit never decreases, except when a follower with cfg.commit_may_be_lost gives up
 *    committed entries the group lost (replication.c lost_commit);
 *  - durable <= last index (entries above durable are what the node has yet to write);
 *  - conf is the configuration of the latest CONFIG entry in the log, else the snapshot's
 *    (snap_conf); both never NULL after jr__raft_new;
 *    cidx lists every CONFIG entry held in the log (index and configuration), ascending; each
 *    of conf, snap_conf and cidx[].c holds one reference to its interned configuration;
 *  - as leader, prog[i] describes conf.m[i] (same order, same count); a member in replicate
 *    state has an inflight ring unless the group is quiet; prog[] is freed on stepping down;
 *  - notified is 1 from io->notify until jr__raft_ready_done();
 *  - quiet implies role LEADER (hb_deadline == UINT64_MAX, and commit_hb_at too: every member
 *    was told the commit) or role FOLLOWER with a known leader (no election timer runs); any
 *    role change clears it;
 *  - vouch is non-NULL exactly while the replica is unvouched (vouch.c); an unvouched replica is
 *    never LEADER; diverged implies damaged.
 */
#ifndef JR_RAFT_IMPL_H
#define JR_RAFT_IMPL_H

#include "memlog.h"
#include "raft.h"
#include "util/rand.h"

enum { ROLE_FOLLOWER, ROLE_PRECANDIDATE, ROLE_CANDIDATE, ROLE_LEADER };

/* A CONFIG entry held in the log: its index and (a reference to) its configuration. */
typedef struct jr__cidx {
    uint64_t index;
    const jr__conf *c;
} jr__cidx;

typedef struct jr__prog {
    jr__id id;
    uint8_t voter;
    uint8_t state;  /* enum jr__progress_state */
    uint8_t paused; /* probe: a probe is out; snapshot: a chunk is out (retried on heartbeat) */
    uint64_t match; /* highest index known to match the leader's log (durable on the peer) */
    uint64_t next;  /* next index to send */
    /* What check-quorum, quiescence and transfers judge liveness by: the now of its last
     * message, or the grace a leader gives every member at its election and when it wakes from
     * quiet (a full election timeout before one is taken for down), or of the node's word that
     * its node is back (jr__raft_peer_alive). Never reported as contact: see heard. */
    uint64_t last_contact;
    /* The now of the last message this group received from it since we became leader (its
     * granted vote of our election counts, at the start of that round); 0: none yet. What
     * reports of contact use (jr__raft_progress), never raised by any grace. Invariant:
     * heard <= last_contact <= now. */
    uint64_t heard;
    uint64_t hb_match;    /* match at the previous heartbeat tick: no change means stalled */
    uint64_t hb_heard;    /* heard at the previous heartbeat tick: no change means silent */
    uint32_t hb_silent;   /* heartbeat ticks in a row it was silent through (replication.c) */
    uint32_t hb_stuck;    /* an observer's heartbeat ticks in a row with its probe out and its
                             match still (its log capped and full, replication.c) */
    uint64_t sent_commit; /* highest commit index this peer has been sent */
    /* Replicate state: the last index of every APPEND not yet acknowledged, oldest first, and
     * the prev_index of the oldest (so APPEND k went out with prev_index ring_base for k = 0,
     * else ring[k - 1]). */
    uint64_t *ring;
    uint32_t ring_head, ring_count;
    uint64_t ring_base;
    /* Flow control: APPENDs allowed in flight (1..max_inflight). A follower's rejection of an
     * APPEND that arrived ahead of one before it (a reordering network) halves it; it grows
     * back by one per 8 × win acknowledgements that move match (progress.c). */
    uint32_t win, win_acks;
    /* Snapshot state: which snapshot is being sent and the offset the peer wants next;
     * snap_moved: an answer arrived since the last heartbeat tick; snap_silent: heartbeat
     * ticks in a row without one (the chunk is resent after 2, 4, 8, then every 8th).
     * snap_from: the snapshot it was sent first since it needed one (a newer one replaces the
     * one being sent when the leader takes it): it may install any from there on, and its
     * answer that it installed one the log still follows is taken (snapshot.c). */
    uint64_t snap_index, snap_offset, snap_from;
    uint32_t snap_silent;
    uint8_t snap_moved;
    /* Snapshots it was sent since this leader's election once it had acknowledged entries
     * (each a need that began with a match above 0 and above later_match): the log went past
     * it after it had caught on once (jr__progress.later_snaps). later_match: its match when
     * the last one was counted, lowered with the match (jr__vouch_lost: a restarted member that
     * holds less); a snapshot sent again before it moved (refused, or the answer lost) is the
     * same need, not counted again. */
    uint32_t later_snaps;
    uint64_t later_match;
    /* The node reported this member's node lost (or, for a quiet leader, it was not heard from
     * for an election timeout when the group went quiet), and it has not answered since
     * (jr__prog_heard): taken for down, it does not hold quiescence back (quiesce.c) and, while
     * the group is quiet, does not count toward its check-quorum. */
    uint8_t lost;
    /* last_contact is its node's word, not a message of its: a wake from quiet renewed it
     * while its node was alive (quiesce.c), or jr__raft_peer_alive did; cleared by its next
     * message (jr__prog_heard) or when it is taken for lost (jr__raft_peer_lost). The node reports
     * its own contact with the member's node, as of last_contact, until then (jr__live_contact). */
    uint8_t by_node;
    /* It restarted (sent a VOUCH) or answered below what it had acknowledged (vouch.c): it is
     * not current and no transfer target until its match reaches vouch_at, our last index at
     * that time. restarted: a VOUCH came (an answer below the match alone may be a late one
     * that an acknowledgement overtook). damaged: a VOUCH showed it lost entries it had
     * acknowledged; acked is the highest match we counted for it before an answer lowered it
     * (kept while unvouched, so a VOUCH after such an answer still finds the loss). vouch_new:
     * vouch_at is an entry we appended after its VOUCH, which no acknowledgement of its earlier
     * life can reach. */
    uint8_t unvouched, restarted, damaged, vouch_new;
    uint64_t vouch_at, acked;
    /* Its state machine as it last reported it to this leader (jr__raft_fsm_report; enum
     * jr__fsm_state) and the now of that report; 0, 0 since our election. */
    uint8_t fsm;
    uint64_t fsm_at;
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
    /* Follower: the last index an APPEND (or snapshot) of the leader of term lead_match_term
     * proved our log matches. A heartbeat's commit is taken only up to it: the leader's match
     * for us may predate a restart that lost or rolled back what we held, and a stale entry
     * below it must not become committed. */
    uint64_t lead_match, lead_match_term;
    jr__hardstate hs_durable;
    uint64_t durable; /* entries up to here are durable */
    /* a leader tells members no commit index past its durable one (jr__raft_tell_durable_commit) */
    uint8_t tell_durable_commit;

    jr__memlog log;
    uint64_t snap_index, snap_term;
    const jr__conf *snap_conf; /* configuration at snap_index (interned) */
    uint64_t applied;

    /* Membership. Configurations are interned in confs (raft.h): a jr__conf has room for
     * JR__MAX_MEMBERS, and an idle group replica should cost far less than that. */
    jr__confs *confs;
    uint8_t own_confs; /* confs is this group's own (no shared set was given) */
    const jr__conf *conf;
    uint64_t conf_index; /* index of conf's CONFIG entry; snap_index if it came from there */
    jr__cidx *cidx;
    uint32_t ncidx, ccap;

    /* Role and timers. */
    int role;
    jr__id leader;
    uint64_t leader_contact;           /* when we last heard from the leader */
    uint64_t leaderless_at;            /* when it last came to know no leader (or started) */
    uint8_t lost_leader;               /* a leader it knew was lost since it started */
    uint64_t rto;                      /* this round's randomized election timeout */
    uint64_t election_deadline;        /* follower/candidate */
    uint64_t votes_for, votes_against; /* bit i: conf.m[i] answered */
    uint64_t stand_votes;              /* bits of votes_for a stand-in gave (removed.c) */
    uint64_t round_start;              /* when the current (pre-)vote round started */

    /* Leader. */
    jr__prog *prog;
    uint32_t prog_cap;
    uint64_t hb_deadline, cq_deadline;
    uint64_t term_start;  /* index of this leader's no-op */
    uint8_t send_pending; /* entries or commit not yet sent to followers */
    /* when a follower not yet told the commit is told with a HEARTBEAT (cfg.commit_delay);
     * UINT64_MAX: every follower was told, or no flush has found one untold since */
    uint64_t commit_hb_at;
    /* the commit index jr__raft_commit_now last asked to reach the followers at once: a
     * follower that could not take it then (it had not acknowledged it) is told it in the flush
     * that counts its acknowledgement, without waiting commit_hb_at; 0: none this term */
    uint64_t commit_tell;
    jr__id transfer_to;
    uint64_t transfer_deadline;
    uint8_t transfer_sent; /* TIMEOUT_NOW went out */
    jr__entry *scratch;    /* the entries of one APPEND being built */
    uint32_t scratch_cap;
    uint8_t *chunk; /* one snapshot chunk being sent */

    /* Servers removed for good (jr__raft_peer_removed, removed.c), with this replica's term
     * when it was told of each; 0: a free slot. */
    jr__id removed[2];
    uint64_t removed_term[2];

    uint64_t lost_commits; /* follower: times committed entries were given up (raft.h) */
    /* Follower flow control (jr__raft_cap_log): the cap on the log's payload bytes while an
     * observer (0: none), the most held at once under a cap, APPENDs dropped for a full log. */
    uint64_t log_cap, cap_peak, cap_drops;
    uint64_t echoes; /* quiet leader: late HEARTBEAT_RESPs taken as echoes (raft.h) */

    /* Follower: the snapshot being received. */
    uint8_t rs_active;
    uint64_t rs_index, rs_term, rs_offset;

    uint8_t notified;
    uint8_t started;

    /* Quiescence (quiesce.c). */
    uint8_t quiet;
    uint32_t idle_ticks; /* leader: consecutive heartbeat ticks that found the group idle */

    /* Protocol-aware recovery (vouch.c): what an unvouched replica learned from its peers,
     * allocated only while it is unvouched; damaged as jr__raft_damaged() says. */
    struct jr__vouch *vouch;
    uint8_t damaged, diverged;
    uint64_t vouched_last; /* its last index when it last became whole (0: never unvouched) */
    uint8_t woken;         /* leader woken from quiet: its next heartbeat tick sends heartbeats */
    uint8_t held;          /* its host holds its vote (jr__raft_hold): no grant, no campaign */
};

/* invariants.c: checks the invariants above (builds with JR_CHECK_INVARIANTS; else nothing). */
void jr__raft_check(const jr__raft *r);

/* raft.c ------------------------------------------------------------------------------------*/
/* Frees the leader's send buffers (the APPEND scratch and the snapshot chunk); both are
 * allocated again on demand. */
void jr__raft_free_send_buffers(jr__raft *r);
/* Calls io->notify unless it was already called since the last jr__raft_ready_done(). */
void jr__raft_notify(jr__raft *r);
/* Fills in group, from and (if 0) term, then hands m to io->send. */
void jr__raft_send(jr__raft *r, jr__msg *m);
/* This server's entry in the latest configuration, or NULL. */
static inline const jr__member *jr__raft_me(const jr__raft *r)
{
    return jr__conf_find(r->conf, r->cfg.self);
}
static inline int jr__raft_is_voter(const jr__raft *r)
{
    const jr__member *me = jr__raft_me(r);
    return me && me->voter;
}
/* Votes (or matching replicas) needed among the voters of the latest configuration. */
static inline uint64_t jr__raft_quorum(const jr__raft *r)
{
    return jr__conf_voters(r->conf) / 2 + 1;
}

/* removed.c ---------------------------------------------------------------------------------*/
/* The position in conf of the removed voter this replica stands in for (its vote and
 * acknowledgement count as given), or -1; *need: the observers (bits by position in conf)
 * whose real vote and acknowledgement the stand-in needs as well (0: none). */
int jr__removed_stand_in(const jr__raft *r, uint64_t *need);

/* election.c --------------------------------------------------------------------------------*/
/* Draws a new timeout in [T, 2T) and restarts the election timer at now. */
void jr__elect_reset_timer(jr__raft *r, uint64_t now);
/* 1 if this server may campaign: a voter, or removed by an uncommitted configuration. */
int jr__elect_can_campaign(const jr__raft *r);
/* The one place that decides an election timeout elapsed (quiescence hooks in here). */
int jr__elect_due(const jr__raft *r, uint64_t now);
/* 1 while a leader is known to be alive (we lead, or heard from it within T): (pre-)votes of
 * candidates not sent by a transfer are refused. */
int jr__elect_in_lease(const jr__raft *r, uint64_t now);
/* Starts a pre-vote round or (prevote 0) a real election in term+1; transfer marks the requests
 * JR__MF_TRANSFER. No-op if jr__elect_can_campaign() says no. May win at once (single voter). */
void jr__elect_campaign(jr__raft *r, uint64_t now, int prevote, int transfer);
/* Becomes follower of `leader` (0: unknown) in `term` (>= current; a higher one clears the
 * vote); drops any transfer or pending send; restarts the election timer. */
void jr__elect_become_follower(jr__raft *r, uint64_t now, uint64_t term, jr__id leader);
/* Answers a VOTE (pre-vote or real; the term rules already ran). */
void jr__elect_on_vote(jr__raft *r, uint64_t now, const jr__msg *m);
/* Counts a VOTE_RESP of the current round; may start the real election or become leader. */
void jr__elect_on_vote_resp(jr__raft *r, uint64_t now, const jr__msg *m);
/* A follower asked by its leader to campaign now (§3.10). */
void jr__elect_on_timeout_now(jr__raft *r, uint64_t now, const jr__msg *m);
/* Leader: steps down (jr__elect_lost_quorum) unless a majority of voters was heard from within
 * T (§6.2); else the next check is due when that majority's contact turns T old. */
void jr__elect_check_quorum(jr__raft *r, uint64_t now);
/* Leader that lost its quorum: sends TIMEOUT_NOW to the voter holding the most of its log, then
 * steps down. A leader that cannot hear its followers may still reach them (a one-way cut):
 * without the handoff they would keep following it — a quiet follower vouched for by the node
 * that still gets its frames, a busy one under its lease — for up to two more timeouts. */
void jr__elect_lost_quorum(jr__raft *r, uint64_t now);
/* Follower/candidate tick: campaigns (pre-vote first) when the timeout elapsed. */
void jr__elect_tick(jr__raft *r, uint64_t now);

/* progress.c --------------------------------------------------------------------------------*/
/* Ensures prog[] has room for n members (allocates: call outside the hot path).
 * 0, JR_EINVAL (n > JR__MAX_MEMBERS) or JR_ENOMEM. */
int jr__prog_reserve(jr__raft *r, uint32_t n);
/* Lays prog[] out parallel to conf.m[], keeping the state of members that stay. Requires
 * jr__prog_reserve(r, conf.n); cannot fail. */
void jr__prog_rebuild(jr__raft *r);
void jr__prog_free(jr__raft *r);
/* Quiet leader: frees every inflight ring (a member with APPENDs still in flight — one taken for
 * down — goes back to probe first); replicate members keep their state without a ring. */
void jr__prog_release(jr__raft *r);
/* Waking leader: gives replicate members their ring back (probe for any that cannot have one). */
void jr__prog_restore(jr__raft *r);
/* Leader: the progress of member id, or NULL (not leader, not a member). */
jr__prog *jr__prog_find(jr__raft *r, jr__id id);
/* Leader: member p answered (any response): contact now, heard from now, and it is no longer
 * taken for lost. */
static inline void jr__prog_heard(jr__prog *p, uint64_t now)
{
    p->last_contact = now;
    p->heard = now;
    p->lost = 0;
    p->by_node = 0;
}
/* Resets p (keeping id, voter, ring) to probe from our last index + 1. */
void jr__prog_init(jr__raft *r, jr__prog *p);
/* State transitions; each empties the inflight window. probe: next = max(next, match + 1). */
void jr__prog_probe(jr__prog *p, uint64_t next);
/* Replicate (allocating p's ring if it has none): 0, or JR_ENOMEM with p unchanged. */
int jr__prog_replicate(jr__raft *r, jr__prog *p);
void jr__prog_snapshot(jr__prog *p, uint64_t index);
/* Replicate state: 1 if no further APPEND may be sent (messages or bytes in flight). */
int jr__prog_window_full(const jr__raft *r, const jr__prog *p);
/* An APPEND ending at `last` went out (probe: pauses; replicate: advances next, records it). */
void jr__prog_sent(jr__raft *r, jr__prog *p, uint64_t last);
/* The follower holds everything up to index: raises match, frees the APPENDs it covers (and
 * grows the window). */
void jr__prog_acked(const jr__raft *r, jr__prog *p, uint64_t index);
/* Replicate state: the follower refused the APPEND sent with prev_index `rejected` because its
 * log ends at `holds` (< rejected): an APPEND before it was overtaken or lost. Returns 0 if no
 * APPEND in flight went out with that prev_index (a stale answer: nothing changes); else halves
 * the window and moves next back to what the follower needs next (keeping the APPENDs
 * in flight before the rejected one that still carry it), and returns 1. */
int jr__prog_gap(const jr__raft *r, jr__prog *p, uint64_t rejected, uint64_t holds);

/* replication.c -----------------------------------------------------------------------------*/
/* Appends an entry to the local log (a CONFIG entry takes effect at once). 0, JR_ENOMEM, or
 * JR_ECORRUPT for a CONFIG entry that does not decode; the log is unchanged on failure. */
int jr__repl_append_local(jr__raft *r, uint64_t term, uint8_t type, const void *data, uint32_t len);
/* Leader: sends p what its state and window allow (possibly several APPENDs, or a snapshot). */
void jr__repl_send_append(jr__raft *r, jr__prog *p, uint64_t now);
/* Leader: sends every follower what is batched, and commit updates they lack. */
void jr__repl_flush(jr__raft *r, uint64_t now);
/* The one place that decides a heartbeat is due (quiescence hooks in here). */
int jr__repl_heartbeat_due(const jr__raft *r, uint64_t now);
/* Leader: heartbeats every follower and retransmits what looks lost (probe, stalled pipeline,
 * snapshot chunk); re-arms the heartbeat timer. */
void jr__repl_heartbeat(jr__raft *r, uint64_t now);
/* Leader: advances commit to the highest current-term index a quorum of voters holds durably
 * (ourselves up to `durable`); a committed self-removal steps us down. */
void jr__repl_maybe_commit(jr__raft *r, uint64_t now);
/* Structural checks of an APPEND (0 or JR_EINVAL), before anything acts on it. */
int jr__repl_check_append(const jr__raft *r, const jr__msg *m);
/* Follower side of AppendEntries (§3.5 receiver rules, with the conflict hint on reject). */
int jr__repl_on_append(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__repl_on_append_resp(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__repl_on_heartbeat(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__repl_on_heartbeat_resp(jr__raft *r, uint64_t now, const jr__msg *m);
/* Answers a message of an older term with our term (APPEND, HEARTBEAT, pre-vote). */
void jr__repl_reply_stale(jr__raft *r, const jr__msg *m);
/* A message from the current leader: follow it, note the contact, restart the timer. */
void jr__repl_heard_leader(jr__raft *r, uint64_t now, jr__id from);

/* membership.c ------------------------------------------------------------------------------*/
/* A CONFIG entry was appended at index: it becomes the configuration (leader: prog[] follows).
 * 0, JR_ECORRUPT (does not decode) or JR_ENOMEM. */
int jr__memb_appended(jr__raft *r, uint64_t index, const uint8_t *data, uint32_t len);
/* Entries index..last were removed: revert to the latest configuration that remains. */
void jr__memb_truncated(jr__raft *r, uint64_t index);
/* Entries below log.first were dropped: forget their CONFIG indexes. */
void jr__memb_compacted(jr__raft *r);
/* The log restarts after a snapshot whose configuration is c (interned; a reference is taken). */
void jr__memb_reset(jr__raft *r, const jr__conf *c, uint64_t index);
/* The configuration in effect at index (>= snapshot index; interned, borrowed). */
const jr__conf *jr__memb_at(const jr__raft *r, uint64_t index);
/* The commit index advanced: a leader whose removal committed steps down. */
void jr__memb_committed(jr__raft *r, uint64_t now);
/* 1 while the latest configuration is uncommitted. */
int jr__memb_pending(const jr__raft *r);

/* transfer.c --------------------------------------------------------------------------------*/
/* p's match moved: if p is the transfer target and caught up, send it TIMEOUT_NOW (once). */
void jr__xfer_progress(jr__raft *r, jr__prog *p);
/* Abandons a transfer older than an election timeout. */
void jr__xfer_tick(jr__raft *r, uint64_t now);
void jr__xfer_timeout_now(jr__raft *r, jr__prog *p);

/* quiesce.c ---------------------------------------------------------------------------------*/
/* Leader, at a heartbeat tick: counts idle ticks and goes quiet at the cfg.quiesce + 1st (the
 * first, while its log holds nothing of its term but its no-op). Returns 1 if the group is (now)
 * quiet: no heartbeat is to be sent. */
int jr__quiet_leader_tick(jr__raft *r, uint64_t now);
/* Leaves the quiet state (no notification; the caller notifies): a leader heartbeats at once,
 * a follower restarts its election timer. No-op when not quiet. */
void jr__quiet_leave(jr__raft *r, uint64_t now);

/* vouch.c -----------------------------------------------------------------------------------*/
/* Sends a VOUCH to every other member of the configurations it must hear from (vouch.c): before
 * the term floor to those that have not answered, from it on to all of them. */
void jr__vouch_ask(jr__raft *r);
/* At start: an unvouched replica without other members is whole; otherwise it asks them. */
void jr__vouch_start(jr__raft *r);
/* Follower/candidate tick: an unvouched replica asks its peers again an election timeout after
 * it last asked them all, quiet or not, and, if it may not campaign, restarts its election timer
 * (returns 1: no campaign); a diverged one without vouch state (out of memory) tries again at
 * its election timeout (1). 0 if it may campaign, or there was nothing to do. */
int jr__vouch_tick(jr__raft *r, uint64_t now);
/* When an unvouched replica's own timer asks its peers again (UINT64_MAX: whole, or nobody to
 * ask yet). */
uint64_t jr__vouch_deadline(const jr__raft *r);
/* Any replica answers a VOUCH; a leader also takes the asker for restarted (its progress). */
void jr__vouch_on_request(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__vouch_on_resp(jr__raft *r, uint64_t now, const jr__msg *m);
/* 1 if an unvouched replica drops m unread: a leader's message before it knows its term floor
 * (it might be a stale leader its lost state would have refused). */
int jr__vouch_drops(const jr__raft *r, const jr__msg *m);
/* The log grew or was replaced (append, snapshot): an unvouched replica checks whether it now
 * reaches the last entry a leader of its term reported, and is whole if so; one that started
 * without a configuration asks the members of the first one that arrives. */
void jr__vouch_check(jr__raft *r, uint64_t now);
/* An unvouched follower heard from the leader `from` of its term: it asks that leader, once per
 * leader and term, so a leader elected after it asked learns it must be vouched for. */
void jr__vouch_heard_leader(jr__raft *r, jr__id from);
/* m, a leader's message (or a node-level listing, as a HEARTBEAT), was dropped
 * (jr__vouch_drops): the replica asks its sender, once per leader and term, so that leader learns
 * it restarted before the replica has its term floor. */
void jr__vouch_dropped(jr__raft *r, const jr__msg *m);
/* Votes: 1 if an unvouched replica may grant one to a candidate with last entry (lt, li). */
int jr__vouch_may_grant(const jr__raft *r, uint64_t li, uint64_t lt);
/* 1 if an unvouched replica may campaign (every other voter answered; its log reaches the floor).
 */
int jr__vouch_may_campaign(const jr__raft *r);
/* A damaged replica without vouch state (a lone voter's, jr__vouch_start) whose configuration
 * now has another voter: a leader once that configuration committed steps down; either way it
 * becomes unvouched again, asks its members, never campaigns, and is whole only by the word of
 * a leader of its term (vouch.c, "A lone voter's damage"). Nothing otherwise. */
void jr__vouch_regrow(jr__raft *r, uint64_t now);
/* The replica is whole (it became leader, or was vouched for): forgets what it learned. */
void jr__vouch_done(jr__raft *r);
/* An append conflicted with an entry it had committed: diverged and damaged, and unvouched
 * again (it asks the other voters) until a leader's word or every other voter vouches for it. */
void jr__vouch_diverged(jr__raft *r);
/* Frees the vouch state (jr__raft_free); flags stay as they are. */
void jr__vouch_free(jr__raft *r);
/* Leader: member p restarted (`restarted`: its VOUCH) or answered below what it acknowledged
 * (a late answer, or lost storage it has not told us of yet): match drops to `holds` (what it
 * is known to hold: 0 unless log matching proves more) and it is unvouched until it
 * acknowledges our whole log of now; damaged too if a VOUCH shows it holds less than it
 * acknowledged. */
void jr__vouch_lost(jr__raft *r, jr__prog *p, uint64_t holds, int restarted);
/* Leader: p acknowledged an APPEND or a snapshot (its match may not have moved); p is vouched
 * for again once its match reaches vouch_at. */
static inline void jr__vouch_progress(jr__prog *p)
{
    if (p->unvouched && p->match >= p->vouch_at) {
        p->unvouched = p->restarted = p->damaged = 0;
        p->acked = 0;
    }
}

/* The commit index a follower may take from its leader's heartbeat telling `commit`. */
static inline uint64_t jr__repl_hb_commit(const jr__raft *r, uint64_t commit)
{
    uint64_t known = r->lead_match_term == r->term ? r->lead_match : 0;
    if (known > r->log.last) known = r->log.last;
    return commit < known ? commit : known;
}

/* Records that our log matches the current leader's up to index. */
static inline void jr__repl_matched(jr__raft *r, uint64_t index)
{
    if (r->lead_match_term != r->term) {
        r->lead_match_term = r->term;
        r->lead_match = 0;
    }
    if (index > r->lead_match) r->lead_match = index;
}

/* snapshot.c --------------------------------------------------------------------------------*/
/* Leader: sends p the chunk at its offset of the current snapshot (restarting at 0 if a newer
 * snapshot replaced the one being sent); p stays paused until an answer or the next tick. */
void jr__snap_send(jr__raft *r, jr__prog *p, uint64_t now);
/* The state machine is at snapshot (index, term, c): compact or reset the log (§5.3). c is
 * interned (the caller keeps its own reference; the group takes its own). Cannot fail. */
void jr__snap_restore(jr__raft *r, uint64_t index, uint64_t term, const jr__conf *c);
/* Structural checks of a SNAP chunk (0 or JR_EINVAL). */
int jr__snap_check(const jr__msg *m);
void jr__snap_on_snap(jr__raft *r, uint64_t now, const jr__msg *m);
void jr__snap_on_resp(jr__raft *r, uint64_t now, const jr__msg *m);

/* The commit index a leader tells a member whose log matches its own up to `match`: never past
 * what that member holds (etcd's rule: it can take it blindly), nor past what the leader holds
 * durable itself. A quorum of followers can commit an entry before the leader's own write is
 * durable (the host's sync, jr_host.sync_start), and the leader applies only durable entries:
 * told earlier, a member would apply and answer a request (read its own write, create a stream)
 * before the leader, which then judges the next request on a state without it. */
static inline uint64_t jr__repl_told(const jr__raft *r, uint64_t match)
{
    uint64_t c = r->commit < r->durable ? r->commit : r->durable;
    if (r->tell_durable_commit && c > r->hs_durable.commit) c = r->hs_durable.commit;
    return match < c ? match : c;
}

#endif
