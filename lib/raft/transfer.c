/*
 * transfer — leadership transfer (§3.10).
 *
 * "1. The prior leader stops accepting new client requests. 2. The prior leader fully updates
 * the target server's log to match its own ... 3. The prior leader sends a TimeoutNow request to
 * the target server." The target campaigns at once (no pre-vote; its requests carry
 * JR__MF_TRANSFER so the others' leader lease does not refuse them), and its higher term makes
 * us step down. "If the transfer does not complete within about one election timeout, the
 * prior leader aborts the transfer and resumes accepting client requests."
 */
#include "impl.h"
#include "util/deadline.h"

void jr__xfer_timeout_now(jr__raft *r, jr__prog *p)
{
    jr__msg m = {.type = JR__MSG_TIMEOUT_NOW, .to = p->id};
    jr__raft_send(r, &m);
}

void jr__xfer_progress(jr__raft *r, jr__prog *p)
{
    if (r->transfer_to != p->id || r->transfer_sent) return;
    if (p->match == r->log.last) {
        r->transfer_sent = 1;
        jr__xfer_timeout_now(r, p);
    }
}

void jr__xfer_tick(jr__raft *r, uint64_t now)
{
    if (r->transfer_to && now >= r->transfer_deadline) r->transfer_to = 0;
}

/* A voter other than us that is current: in contact within an election timeout as
 * check-quorum counts it (last_contact, which a wake from quiet renews for the members whose
 * node is alive: a quiet leader's contact is node-level, a member its node has not reported
 * lost), holding everything committed (its match is of this term: an acknowledgement since
 * our election), and vouched (an unvouched member, restarted and not yet
 * caught up since, would not campaign: vouch.c). Anything less is not "caught up" (§3.10 step 2
 * would first have to replicate what it lacks, and a silent target would let the transfer time
 * out). */
static int current(const jr__raft *r, const jr__prog *p, uint64_t now)
{
    if (p->id == r->cfg.self || !p->voter || p->unvouched || p->match < r->commit) return 0;
    if (r->quiet) return !p->lost;
    return now - p->last_contact <= r->cfg.election_timeout;
}

/* The current voter that holds the most of our log (ties: the first in conf order), or NULL. */
static jr__prog *best_voter(jr__raft *r, uint64_t now)
{
    jr__prog *best = NULL;
    for (uint32_t i = 0; i < r->conf->n; i++) {
        jr__prog *p = &r->prog[i];
        if (!current(r, p, now)) continue;
        if (!best || p->match > best->match) best = p;
    }
    return best;
}

int jr__raft_transfer(jr__raft *r, uint64_t now, jr__id to)
{
    if (!r->started || r->role != ROLE_LEADER) return JR_ENOTLEADER;
    if (r->transfer_to) return JR_ETRANSFER;
    if (now > r->now) r->now = now;
    jr__prog *p = to ? jr__prog_find(r, to) : best_voter(r, r->now);
    if (!p || !current(r, p, r->now)) return JR_ENOTVOTER;
    jr__quiet_leave(r, r->now);
    r->transfer_to = p->id;
    r->transfer_deadline = jr__deadline(r->now, r->cfg.election_timeout);
    r->transfer_sent = 0;
    jr__repl_send_append(r, p, r->now); /* bring it up to date first */
    jr__xfer_progress(r, p);
    jr__raft_notify(r);
    return 0;
}
