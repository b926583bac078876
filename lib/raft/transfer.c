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

/* The voter other than us that holds the most of our log (ties: the first in conf order),
 * leaving out unvouched members. */
static jr__prog *best_voter(jr__raft *r)
{
    jr__prog *best = NULL;
    for (uint32_t i = 0; i < r->conf->n; i++) {
        jr__prog *p = &r->prog[i];
        if (p->id == r->cfg.self || !p->voter || p->unvouched) continue;
        if (!best || p->match > best->match) best = p;
    }
    return best;
}

int jr__raft_transfer(jr__raft *r, uint64_t now, jr__id to)
{
    if (!r->started || r->role != ROLE_LEADER) return JR_ENOTLEADER;
    if (r->transfer_to) return JR_ETRANSFER;
    if (now > r->now) r->now = now;
    jr__prog *p = to ? jr__prog_find(r, to) : best_voter(r);
    /* an unvouched member (restarted, not yet caught up since, vouch.c) would not campaign */
    if (!p || !p->voter || p->id == r->cfg.self || p->unvouched) return JR_ENOTVOTER;
    jr__quiet_leave(r, r->now);
    r->transfer_to = p->id;
    r->transfer_deadline = r->now + r->cfg.election_timeout;
    r->transfer_sent = 0;
    jr__repl_send_append(r, p, r->now); /* bring it up to date first */
    jr__xfer_progress(r, p);
    jr__raft_notify(r);
    return 0;
}
