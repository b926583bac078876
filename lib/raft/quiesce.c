/*
 * quiesce — idle groups stop their timers; the node's liveness layer stands in for them.
 *
 * A Raft group normally costs a heartbeat per follower per interval and an election timer per
 * follower, whether or not anything happens. Most groups of a node hosting thousands of streams
 * are idle, so here a leader that finds its group idle goes quiet (no heartbeats, no timer),
 * and its followers go quiet when the node tells them (jr__raft_hb_recv) that the leader is
 * quiet (no election timer, and the leader lease held). From then on nothing is done per group:
 * contact is a matter of nodes, and the node reports the events that matter (a member's or the
 * leader's node lost or back, the leader no longer quiet).
 *
 * Why safety is unchanged: quiescence only decides *when* a server campaigns or heartbeats and
 * whether the leader lease (§4.2.3: "if a server receives a RequestVote request within the
 * minimum election timeout of hearing from a current leader, it does not update its term or
 * grant its vote") refuses a candidate. Election safety rests on votes (§3.6: "each server will
 * vote for at most one candidate in a given term"), log matching and commitment on the append
 * and commit rules, none of which changes: a coalesced heartbeat item is handled exactly as a
 * HEARTBEAT message of the same term and commit (the commit it carries is never above what the
 * follower is known to hold, and the follower clamps it to its log, as for a HEARTBEAT).
 *
 * Liveness: a quiet follower campaigns when the node reports its leader's node lost
 * (jr__raft_peer_lost) or the leader no longer quiet (jr__raft_wake); a quiet leader keeps its
 * check-quorum (§6.2: "a leader steps down if an election timeout elapses without a successful
 * round of heartbeats to a majority of its cluster") with node-level contact: members whose
 * node the node reports lost no longer count, and once a majority is lost it steps down, so an
 * isolated quiet leader steps down like any other (within an election timeout of the last
 * contact, plus the node's detection granularity).
 */
#include "impl.h"
#include "util/alloc.h"
#include "util/deadline.h"

/* Leader at a heartbeat tick: nothing to send and nobody to bring up to date (see raft.h). A
 * removed voter this replica stands in for counts as caught up, as its acknowledgement counts
 * as given for commits. */
static int leader_idle(const jr__raft *r, uint64_t now)
{
    uint64_t last = r->log.last;
    if (!jr__raft_ready(r) || r->transfer_to || r->send_pending || jr__memb_pending(r) ||
        r->durable != last || r->commit != last)
        return 0;
    uint64_t caught = 0, need;
    int stand = jr__removed_stand_in(r, &need); /* answers through this replica (removed.c) */
    for (uint32_t i = 0; i < r->conf->n; i++) {
        const jr__prog *p = &r->prog[i];
        if (p->id == r->cfg.self || (int)i == stand) {
            caught += p->voter;
            continue;
        }
        /* its node reported lost, or not heard from for an election timeout: down, brought
         * back when it or its node answers */
        if (p->lost || now - p->last_contact >= r->cfg.election_timeout) continue;
        if (p->state != JR__REPLICATE || p->ring_count || p->match != last || p->sent_commit < last)
            return 0;
        caught += p->voter;
    }
    return caught >= jr__raft_quorum(r);
}

int jr__quiet_leader_tick(jr__raft *r, uint64_t now)
{
    if (r->quiet) return 1;
    /* A leader just woken heartbeats at once (its followers are quiet too) before it may go
     * quiet again: whatever woke it, it cannot fall quiet and be woken again at one instant,
     * over and over, leaving the node's deadline at now. */
    if (r->woken) {
        r->woken = 0;
        r->idle_ticks = 0;
        return 0;
    }
    if (!r->cfg.quiesce || !leader_idle(r, now)) {
        r->idle_ticks = 0;
        return 0;
    }
    /* A leader with nothing of its term but its election's no-op has no traffic to wait out:
     * it goes quiet at its first idle tick (a node's takeover of a lost node's thousands of
     * groups then costs one heartbeat round per group, not cfg.quiesce + 1 of them). */
    if (++r->idle_ticks <= r->cfg.quiesce && r->log.last != r->term_start) return 0;
    r->quiet = 1;
    r->idle_ticks = 0;
    r->hb_deadline = UINT64_MAX;
    r->commit_hb_at = UINT64_MAX; /* leader_idle: every member was told the commit */
    /* contact becomes node-level: a member reported lost, or not heard from for T, counts as
     * lost until its node is reported back (jr__raft_peer_alive) or it answers
     * (jr__raft_hb_resp) */
    for (uint32_t i = 0; i < r->conf->n; i++) {
        jr__prog *p = &r->prog[i];
        p->lost =
            p->id != r->cfg.self && (p->lost || now - p->last_contact >= r->cfg.election_timeout);
    }
    /* an idle group keeps no buffers: inflight rings, the APPEND scratch, the snapshot chunk
     * (256 KiB by default), slack in the log rings; all come back on demand */
    jr__prog_release(r);
    jr__raft_free_send_buffers(r);
    jr__memlog_shrink(&r->log);
    return 1;
}

void jr__quiet_leave(jr__raft *r, uint64_t now)
{
    if (!r->quiet) return;
    r->quiet = 0;
    r->idle_ticks = 0;
    if (r->role == ROLE_LEADER) {
        r->hb_deadline = now; /* heartbeat at once: the followers are quiet too */
        r->woken = 1;
        /* per-group contact resumes: the members whose node is alive start a fresh window, on
         * their node's word (heard waits for their answers) */
        for (uint32_t i = 0; i < r->conf->n; i++) {
            jr__prog *p = &r->prog[i];
            if (p->lost) continue;
            p->last_contact = now;
            p->by_node = p->id != r->cfg.self;
        }
        r->cq_deadline = jr__deadline(now, r->cfg.election_timeout);
        jr__prog_restore(r);
    } else {
        /* the node vouched for the leader until now: the lease runs a full T from here */
        r->leader_contact = now;
        jr__elect_reset_timer(r, now);
    }
}

int jr__raft_quiet(const jr__raft *r)
{
    return r->quiet;
}

int jr__raft_hb_item(const jr__raft *r, jr__id peer, uint64_t *term, uint64_t *commit)
{
    if (!r->quiet || r->role != ROLE_LEADER || peer == r->cfg.self) return 0;
    for (uint32_t i = 0; i < r->conf->n; i++) {
        const jr__prog *p = &r->prog[i];
        if (p->id != peer) continue;
        *term = r->term;
        /* only what the follower is known to hold, as for a HEARTBEAT */
        *commit = jr__repl_told(r, p->match);
        return 1;
    }
    return 0;
}

int jr__raft_hb_recv(jr__raft *r, uint64_t now, jr__id from, uint64_t term, uint64_t commit)
{
    if (!r->started || from == 0 || from == r->cfg.self || term == 0 ||
        !jr__raft_wire_ok(r, term, commit))
        return 0;
    if (now > r->now) r->now = now;
    now = r->now;
    const jr__msg as_hb = {.type = JR__MSG_HEARTBEAT, .from = from, .term = term};
    if (jr__vouch_drops(r, &as_hb)) { /* as a HEARTBEAT would be (vouch.c) */
        jr__vouch_dropped(r, &as_hb);
        return 0;
    }
    if (r->quiet && r->role == ROLE_FOLLOWER && r->leader == from && r->term == term &&
        commit <= r->log.last) {
        /* the steady state: the lease lives on, nothing else moves */
        r->leader_contact = now;
        uint64_t c = jr__repl_hb_commit(r, commit);
        if (c > r->commit) {
            r->commit = c;
            jr__raft_notify(r);
        }
        return 1;
    }
    /* §3.3 term rules, as for a HEARTBEAT (raft.c step_term) */
    if (term < r->term) return 0;
    int before_quiet = r->quiet, before_role = r->role;
    jr__id before_leader = r->leader;
    uint64_t before_term = r->term, before_commit = r->commit;
    if (term > r->term) jr__elect_become_follower(r, now, term, from);
    if (r->role == ROLE_LEADER) return 0; /* two leaders in one term cannot happen */
    jr__repl_heard_leader(r, now, from);
    uint64_t c = jr__repl_hb_commit(r, commit);
    if (c > r->commit) r->commit = c;
    /* quiet only once it holds everything the leader committed; otherwise its timer runs and
     * the leader, told our last index by the node's answer, wakes to bring us up to date */
    r->quiet = commit <= r->log.last;
    if (r->quiet && !before_quiet) jr__memlog_shrink(&r->log);
    if (r->quiet != before_quiet || r->role != before_role || r->leader != before_leader ||
        r->term != before_term || r->commit != before_commit)
        jr__raft_notify(r);
    return r->quiet;
}

void jr__raft_hb_resp(jr__raft *r, uint64_t now, jr__id from, uint64_t term, uint64_t index)
{
    if (!r->started || from == 0 || from == r->cfg.self || term == 0 ||
        !jr__raft_wire_ok(r, term, index))
        return;
    if (now > r->now) r->now = now;
    now = r->now;
    if (term > r->term) {
        jr__elect_become_follower(r, now, term, 0);
        jr__raft_notify(r);
        return;
    }
    if (r->role != ROLE_LEADER || term != r->term) return;
    jr__prog *p = jr__prog_find(r, from);
    if (!p || p->id == r->cfg.self) return;
    jr__prog_heard(p, now);
    if (r->quiet && (index < p->match || p->match < r->log.last)) {
        /* it lost entries (damaged storage) or was down while the log grew: wake and probe */
        jr__quiet_leave(r, now);
        jr__prog_probe(p, p->match + 1);
        jr__repl_send_append(r, p, now);
        jr__raft_notify(r);
    }
}

/* Quiet leader: steps down unless the voters whose node is not lost make a quorum (§6.2 with
 * node-level contact); a removed voter this replica stands in for counts as alive, as in
 * jr__elect_check_quorum. */
static void quiet_check_quorum(jr__raft *r, uint64_t now)
{
    uint64_t alive = 0, need;
    int stand = jr__removed_stand_in(r, &need);
    for (uint32_t i = 0; i < r->conf->n; i++) {
        const jr__prog *p = &r->prog[i];
        if (p->voter && (p->id == r->cfg.self || (int)i == stand || !p->lost)) alive++;
    }
    if (alive < jr__raft_quorum(r)) {
        jr__elect_lost_quorum(r, now);
        jr__raft_notify(r);
    }
}

void jr__raft_peer_lost(jr__raft *r, uint64_t now, jr__id peer, uint64_t delay)
{
    if (!r->started || peer == 0 || peer == r->cfg.self) return;
    if (now > r->now) r->now = now;
    now = r->now;
    if (r->role == ROLE_LEADER) {
        jr__prog *p = jr__prog_find(r, peer);
        if (!p) return;
        p->lost = 1;
        p->by_node = 0; /* its node's word no longer stands in for it */
        if (r->quiet) quiet_check_quorum(r, now);
        return;
    }
    if (r->role != ROLE_FOLLOWER || r->leader != peer) return;
    int was_quiet = r->quiet;
    r->quiet = 0;
    r->leader = 0; /* the lease ends: candidates may now be granted (pre-)votes */
    r->leaderless_at = now;
    r->lost_leader = 1;
    uint64_t at = jr__deadline(now, delay);
    /* a quiet follower's timer was stopped: whatever it says is stale */
    if (was_quiet || at < r->election_deadline) r->election_deadline = at;
    jr__raft_notify(r);
}

void jr__raft_peer_alive(jr__raft *r, uint64_t now, jr__id peer)
{
    if (!r->started || r->role != ROLE_LEADER || peer == r->cfg.self) return;
    if (now > r->now) r->now = now;
    jr__prog *p = jr__prog_find(r, peer);
    if (!p) return;
    /* its node is back, not (yet) its replica of this group: counted, not heard */
    p->last_contact = r->now;
    p->lost = 0;
    p->by_node = p->id != r->cfg.self;
}

void jr__raft_wake(jr__raft *r, uint64_t now)
{
    if (!r->started || !r->quiet) return;
    if (now > r->now) r->now = now;
    jr__quiet_leave(r, r->now);
    jr__raft_notify(r);
}

void jr__raft_defer_campaign(jr__raft *r, uint64_t now, uint64_t delay)
{
    if (!r->started || r->role == ROLE_LEADER || r->quiet) return;
    if (now > r->now) r->now = now;
    r->election_deadline = jr__deadline(r->election_deadline, delay);
}
