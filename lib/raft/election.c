/*
 * election — randomized election timers, pre-vote, RequestVote, role changes, check-quorum.
 *
 * §3.4: "Raft uses randomized election timeouts to ensure that split votes are rare": each round
 * draws a timeout uniformly from [T, 2T) with the group's seeded PRNG.
 * §9.6 (pre-vote): "a candidate would first ask other servers whether its log was up-to-date
 * enough to get their vote. Only if the candidate believed it could get votes from a majority
 * of the cluster would it increment its term and start a normal election."
 * §6.2 (check-quorum): "a leader steps down if an election timeout elapses without a successful
 * round of heartbeats to a majority of its cluster".
 * §4.2.3 (leader lease): a server that heard from a current leader within the election timeout
 * refuses (pre-)votes, unless the candidate was asked to campaign by a leadership transfer.
 *
 * The election timeout is checked in one place, jr__elect_due(): followers of a quiet group
 * (quiesce.c) rely on node-level liveness instead. A candidate that is the very server we take
 * for the leader gave its leadership up, so the lease never refuses it.
 */
#include "impl.h"
#include "util/alloc.h"
#include "util/deadline.h"

void jr__elect_reset_timer(jr__raft *r, uint64_t now)
{
    uint64_t t = r->cfg.election_timeout;
    r->rto = jr__deadline(t, jr__rand_below(&r->rng, t)); /* t is the caller's: may be huge */
    r->election_deadline = jr__deadline(now, r->rto);
}

void jr__raft_hold(jr__raft *r, int on)
{
    r->held = (uint8_t)(on != 0);
}

int jr__raft_held(const jr__raft *r)
{
    return r->held;
}

/* jr__elect_can_campaign but for a hold. */
static int may_stand(const jr__raft *r)
{
    if (!jr__vouch_may_campaign(r)) return 0; /* an unvouched or diverged replica (vouch.c) */
    const jr__member *me = jr__raft_me(r);
    if (me) return me->voter; /* observers never campaign */
    /* §4.2.2: a server its latest, uncommitted configuration removes may still have to lead
     * the others to commit it (it may hold the only copy a voter would accept); it counts only
     * the voters of that configuration and steps down once it commits. A server that was never
     * in any configuration (conf_index 0) or whose removal committed stays quiet. */
    return r->conf_index > r->commit && r->conf->n > 0;
}

int jr__elect_can_campaign(const jr__raft *r)
{
    return !r->held && may_stand(r); /* its host may hold its vote (jr__raft_hold) */
}

int jr__elect_due(const jr__raft *r, uint64_t now)
{
    /* a quiet follower's leader is vouched for by the node (quiesce.c) */
    return r->role != ROLE_LEADER && !r->quiet && now >= r->election_deadline &&
           jr__elect_can_campaign(r);
}

int jr__elect_in_lease(const jr__raft *r, uint64_t now)
{
    if (r->role == ROLE_LEADER) return 1;
    /* a quiet follower's leader is vouched for by the node until it says otherwise */
    if (r->quiet) return 1;
    return r->leader != 0 && now < jr__deadline(r->leader_contact, r->cfg.election_timeout);
}

void jr__elect_become_follower(jr__raft *r, uint64_t now, uint64_t term, jr__id leader)
{
    if (r->role == ROLE_LEADER) {
        /* what only a leader needs goes (it is allocated again on the next election won) */
        jr__prog_free(r);
        jr__raft_free_send_buffers(r);
    }
    if (term > r->term) {
        r->term = term;
        r->vote = 0;
    }
    r->role = ROLE_FOLLOWER;
    r->quiet = 0;
    r->idle_ticks = 0;
    if (r->leader && !leader) r->leaderless_at = now, r->lost_leader = 1;
    r->leader = leader;
    if (leader) r->leader_contact = now;
    r->transfer_to = 0;
    r->send_pending = 0;
    r->votes_for = r->votes_against = r->stand_votes = 0;
    jr__elect_reset_timer(r, now);
    if (r->damaged && !r->vouch) jr__vouch_regrow(r, now); /* a lone voter's group grew */
}

static int conf_pos(const jr__raft *r, jr__id id)
{
    for (uint32_t i = 0; i < r->conf->n; i++)
        if (r->conf->m[i].id == id) return (int)i;
    return -1;
}

static void become_leader(jr__raft *r, uint64_t now)
{
    /* Progress memory is allocated here, not in the hot path; without it we cannot lead. */
    if (jr__prog_reserve(r, r->conf->n)) {
        jr__elect_become_follower(r, now, r->term, 0);
        return;
    }
    r->role = ROLE_LEADER;
    r->quiet = 0;
    r->idle_ticks = 0;
    r->leader = r->cfg.self;
    r->transfer_to = 0;
    jr__prog_rebuild(r);
    for (uint32_t i = 0; i < r->conf->n; i++) {
        jr__prog_init(r, &r->prog[i]);
        r->prog[i].last_contact = now; /* a full election timeout of grace for check-quorum */
        /* Contact to report is only what was received: a voter whose vote elected us was heard
         * from after this round started; every other member not yet (heard = 0, as set by
         * jr__prog_init), so a crashed or cut-off member is not shown as recently seen. */
        if (r->votes_for & (1ULL << i) && r->prog[i].id != r->cfg.self)
            r->prog[i].heard = r->round_start;
    }
    r->hb_deadline = jr__deadline(now, r->cfg.heartbeat_interval);
    r->cq_deadline = jr__deadline(now, r->cfg.election_timeout);
    r->commit_hb_at = UINT64_MAX;
    r->commit_tell = 0;
    /* §3.6.2 / §6.4: "each leader commit[s] a blank no-op entry into the log at the start of
     * its term", which also tells us when entries of earlier terms are committed. */
    if (jr__repl_append_local(r, r->term, JR__ENTRY_NOOP, NULL, 0)) {
        jr__elect_become_follower(r, now, r->term, 0);
        return;
    }
    r->term_start = r->log.last;
    r->send_pending = 1;
    jr__vouch_done(r); /* elected with its log at or above every voter's floor (vouch.c) */
    jr__repl_flush(r, now);
    uint64_t need;
    if (jr__conf_voters(r->conf) == 1 || jr__removed_stand_in(r, &need) >= 0)
        jr__repl_maybe_commit(r, now);
}

static int popcount(uint64_t x)
{
    int n = 0;
    for (; x; x &= x - 1) n++;
    return n;
}

/* Acts on the tally: wins go on to the next phase, a lost majority ends the round. */
static void tally(jr__raft *r, uint64_t now)
{
    uint64_t q = jr__raft_quorum(r);
    uint64_t vf = r->votes_for;
    if (r->stand_votes) {
        /* a stand-in's round (removed.c): the removed voter's vote counts while it still stands
         * in, and the round is won only with every observer it needs */
        uint64_t need;
        if (jr__removed_stand_in(r, &need) < 0) {
            vf &= ~r->stand_votes;
        } else if (need) {
            if (r->votes_against & need) {
                jr__elect_become_follower(r, now, r->term, 0);
                return;
            }
            if ((vf & need) != need) return;
        }
    }
    if ((uint64_t)popcount(vf) >= q) {
        if (r->role == ROLE_PRECANDIDATE)
            jr__elect_campaign(r, now, 0, 0);
        else
            become_leader(r, now);
    } else if ((uint64_t)popcount(r->votes_against) > jr__conf_voters(r->conf) - q) {
        jr__elect_become_follower(r, now, r->term, 0);
    }
}

void jr__elect_campaign(jr__raft *r, uint64_t now, int prevote, int transfer)
{
    /* A held replica stands only when its leader hands leadership over (TIMEOUT_NOW): a held
     * one never stands otherwise, so that leader's line of handovers began with an election
     * won by a replica nobody held, and the group is a live one; the others still judge the
     * held one by its log. It never grants a vote (on_vote). */
    if (transfer ? !may_stand(r) : !jr__elect_can_campaign(r)) return;
    int me = conf_pos(r, r->cfg.self); /* -1: a removed server finishing its removal */
    uint64_t vterm = r->term + 1;
    if (prevote) {
        r->role = ROLE_PRECANDIDATE;
    } else {
        r->role = ROLE_CANDIDATE;
        r->term = vterm;
        r->vote = r->cfg.self;
    }
    r->quiet = 0;
    if (r->leader) r->leaderless_at = now, r->lost_leader = 1;
    r->leader = 0;
    r->transfer_to = 0;
    r->votes_for = me >= 0 ? 1ULL << me : 0;
    /* a removed voter of two this replica stands in for has voted for it, and the observers
     * that voter could have promoted are asked as well (removed.c) */
    uint64_t need;
    int stand = jr__removed_stand_in(r, &need);
    r->stand_votes = stand >= 0 ? 1ULL << stand : 0;
    r->votes_for |= r->stand_votes;
    r->votes_against = 0;
    r->round_start = now;
    jr__elect_reset_timer(r, now);
    for (uint32_t i = 0; i < r->conf->n; i++) {
        if ((int)i == me || (!r->conf->m[i].voter && !(need >> i & 1))) continue;
        jr__msg m = {.type = JR__MSG_VOTE, .to = r->conf->m[i].id, .term = vterm};
        /* a real request depends on our durable term and self-vote */
        m.flags = prevote ? JR__MF_PREVOTE : JR__MF_DURABLE;
        if (transfer) m.flags |= JR__MF_TRANSFER;
        m.u.vote.last_index = r->log.last;
        m.u.vote.last_term = jr__memlog_term(&r->log, r->log.last);
        jr__raft_send(r, &m);
    }
    tally(r, now);
}

/* §3.6.1: "Raft determines which of two logs is more up-to-date by comparing the index and
 * term of the last entries in the logs." */
static int up_to_date(const jr__raft *r, const jr__msg *m)
{
    uint64_t li = r->log.last, lt = jr__memlog_term(&r->log, r->log.last);
    /* a joiner's floor (raft.h), a committed entry: while its own log is older than that (empty,
     * or restored from an older snapshot), it judges candidates by the floor */
    uint64_t ft = r->cfg.join_last_term, fi = r->cfg.join_last_index;
    if (fi && (ft > lt || (ft == lt && fi > li))) {
        li = fi;
        lt = ft;
    }
    return m->u.vote.last_term > lt || (m->u.vote.last_term == lt && m->u.vote.last_index >= li);
}

/* The candidate's log is strictly newer than ours (§3.6.1), ignoring any join floor. */
static int newer_log(const jr__raft *r, const jr__msg *m)
{
    uint64_t li = r->log.last, lt = jr__memlog_term(&r->log, r->log.last);
    return m->u.vote.last_term > lt || (m->u.vote.last_term == lt && m->u.vote.last_index > li);
}

void jr__elect_on_vote(jr__raft *r, uint64_t now, const jr__msg *m)
{
    int prevote = (m->flags & JR__MF_PREVOTE) != 0;
    int grant = 0;
    /* §4.1: servers answer requests "without consulting their current configurations". A
     * member whose own (stale) configuration says observer may already be a voter in the
     * candidate's newer one; refusing would deadlock the group. The candidate counts only the
     * voters of its configuration, so an observer's answer never elects anyone. */
    /* A server joining a group that exists with nothing in its log may be a server removed
     * and added back, its earlier replica gone with all it acknowledged: a vote from it could
     * elect a candidate of a configuration from before its removal that lacks entries
     * committed since (a split log). up_to_date() judges such a server by its floor, an entry
     * the group had committed (cfg.join_last_*), not by its empty log. */
    /* an unvouched replica grants nothing until every other voter answered its VOUCH, then only
     * to candidates at or above the floor they gave (vouch.c); a held one nothing at all */
    if (!r->held && up_to_date(r, m) &&
        jr__vouch_may_grant(r, m->u.vote.last_index, m->u.vote.last_term)) {
        if (prevote) {
            int lease =
                !(m->flags & JR__MF_TRANSFER) && m->from != r->leader && jr__elect_in_lease(r, now);
            grant = m->term > r->term && !lease;
            /* two pre-candidates granting each other would both stand and split the vote: with
             * logs alike only the one ranked ahead gets this one's pre-vote (raft.h,
             * jr__raft_ahead). Only while our round may still win: one with a newer log gets it
             * whatever its rank (we could not win its vote), and so does anyone once a voter
             * refused us (one still in the lost leader's lease, say) or our round has run a
             * quarter election timeout (rounds that collide start within a round trip; one still
             * open is missing answers — a voter down, a one-way cut — and must not block a
             * server that can win). */
            if (grant && r->role == ROLE_PRECANDIDATE && !r->votes_against &&
                !jr__raft_ahead(r->cfg.group, m->from, r->cfg.self) && !newer_log(r, m) &&
                now - r->round_start < r->cfg.election_timeout / 4)
                grant = 0;
        } else {
            grant = m->term == r->term && (r->vote == m->from || (r->vote == 0 && r->leader == 0));
        }
    }
    if (grant && !prevote) {
        r->vote = m->from;
        jr__elect_reset_timer(r, now);
    }
    jr__msg resp = {.type = JR__MSG_VOTE_RESP, .to = m->from};
    resp.term = prevote && grant ? m->term : r->term;
    /* A real answer depends on the durable vote record (§3.8: "persist ... votedFor before
     * responding"). */
    resp.flags = prevote ? JR__MF_PREVOTE : JR__MF_DURABLE;
    resp.u.vote_resp.granted = (uint8_t)grant;
    jr__raft_send(r, &resp);
}

void jr__elect_on_vote_resp(jr__raft *r, uint64_t now, const jr__msg *m)
{
    int prevote = (m->flags & JR__MF_PREVOTE) != 0;
    int granted = m->u.vote_resp.granted != 0;
    if (prevote) {
        if (r->role != ROLE_PRECANDIDATE) return;
        if (m->term != (granted ? r->term + 1 : r->term)) return;
    } else {
        if (r->role != ROLE_CANDIDATE || m->term != r->term) return;
        granted = granted && (m->flags & JR__MF_DURABLE); /* only a durable vote counts */
    }
    int pos = conf_pos(r, m->from);
    if (pos < 0) return;
    if (!r->conf->m[pos].voter) { /* counted only as an observer a stand-in needs (removed.c) */
        uint64_t need;
        if (!r->stand_votes || jr__removed_stand_in(r, &need) < 0 || !(need >> pos & 1)) return;
    }
    if (granted)
        r->votes_for |= 1ULL << pos;
    else
        r->votes_against |= 1ULL << pos;
    tally(r, now);
}

void jr__elect_on_timeout_now(jr__raft *r, uint64_t now, const jr__msg *m)
{
    /* §3.10: the target "starts a new election ... without waiting for its election timeout";
     * it skips pre-vote, and its requests carry JR__MF_TRANSFER past the others' lease. */
    if (r->role != ROLE_FOLLOWER || m->from != r->leader) return;
    jr__elect_campaign(r, now, 0, 1);
}

void jr__elect_lost_quorum(jr__raft *r, uint64_t now)
{
    /* The voter that holds the most of our log (ties: by jr__raft_ahead, so the groups of one
     * leader spread their handoffs). */
    const jr__prog *best = NULL;
    for (uint32_t i = 0; i < r->conf->n; i++) {
        const jr__prog *p = &r->prog[i];
        if (p->id == r->cfg.self || !p->voter) continue;
        if (!best || p->match > best->match ||
            (p->match == best->match && jr__raft_ahead(r->cfg.group, p->id, best->id)))
            best = p;
    }
    if (best) {
        jr__msg m = {.type = JR__MSG_TIMEOUT_NOW, .to = best->id};
        jr__raft_send(r, &m);
    }
    jr__elect_become_follower(r, now, r->term, 0);
}

void jr__elect_check_quorum(jr__raft *r, uint64_t now)
{
    /* The quorum-th most recent contact among the voters (ourselves: now). The quorum was heard
     * from within T until that contact is T old, which is exactly when the next check is due:
     * a leader that stops hearing its followers steps down one election timeout after the last
     * answer, not up to two (a check every T would let a contact just before one check count
     * at the next). */
    uint64_t v[JR__MAX_MEMBERS];
    uint32_t n = 0;
    uint64_t need;
    int stand = jr__removed_stand_in(r, &need); /* answers through this replica (removed.c) */
    for (uint32_t i = 0; i < r->conf->n; i++) {
        const jr__prog *p = &r->prog[i];
        if (!p->voter) continue;
        uint64_t c = p->id == r->cfg.self || (int)i == stand ? now : p->last_contact;
        uint32_t j = n++;
        for (; j > 0 && v[j - 1] < c; j--) v[j] = v[j - 1]; /* insertion, descending */
        v[j] = c;
    }
    uint64_t q = jr__raft_quorum(r);
    if (n < q || now - v[q - 1] >= r->cfg.election_timeout) {
        jr__elect_lost_quorum(r, now);
        return;
    }
    r->cq_deadline = jr__deadline(v[q - 1], r->cfg.election_timeout);
}

void jr__elect_tick(jr__raft *r, uint64_t now)
{
    if (jr__vouch_tick(r, now)) return; /* unvouched: asks its peers again instead */
    if (jr__elect_due(r, now)) jr__elect_campaign(r, now, 1, 0);
}
