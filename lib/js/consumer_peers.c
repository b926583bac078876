/*
 * consumer_peers — a consumer's leader drives its group to its assignment's peer set when the
 * consumer follows its stream to other servers (meta_state.h "Consumers follow their stream"):
 * one single-server change at a time through the group's membership calls — add a missing peer
 * as an observer, promote it once it is current (it caught up through the group's log or
 * snapshot: a consumer's whole state travels in them), remove a member the assignment no longer
 * names (handing the leadership to a current peer first when that member is the leader
 * itself) — and, once the group's configuration is the peer set with every peer a voter,
 * reports STREAM_CONVERGED for the consumer's group, so the meta state ends the change and the
 * servers it removed release their replicas.
 *
 * It runs from the leader's timer (consumer_leader.c jr__clead_timer), a heartbeat apart while
 * work is left; a change still in flight makes the next call JR_EBUSY, which only means "later".
 * It needs the leader's log applied, not a replica of the stream on its server: a consumer left
 * behind by its stream's move (jr__crep_change_stalled, which the stream's leader asks before it
 * stops waiting for the consumer) completes its change from wherever its replicas are.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "js/js.h"
#include "util/deadline.h"

static int named(const jr__meta_consumer *c, const char *name)
{
    return name && jr__meta_consumer_has_peer(c, name);
}

/* 1 if the group's member `name` exists (*voter, *current set, and *seen — the leader's
 * last_seen_ns of it — when seen is not NULL). */
static int member_seen(jr_group *g, const char *name, int *voter, int *current, uint64_t *seen)
{
    jr_group_status gs;
    gs.size = sizeof gs;
    if (jr_group_status_get(g, &gs) != 0) return 0;
    for (size_t i = 0; i < gs.npeers; i++) {
        jr_peer_status ps;
        ps.size = sizeof ps;
        if (jr_group_peer(g, i, &ps) != 0 || !ps.name || strcmp(ps.name, name) != 0) continue;
        *voter = ps.voter;
        *current = ps.current;
        if (seen) *seen = ps.last_seen_ns;
        return 1;
    }
    return 0;
}

static int member(jr_group *g, const char *name, int *voter, int *current)
{
    return member_seen(g, name, voter, current, NULL);
}

/* Records what the change waits on now (consumer info's move status). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
note(jr__crep *r, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->note.status = (uint8_t)status;
    vsnprintf(r->note.desc, sizeof r->note.desc, fmt, ap);
    va_end(ap);
}

void jr__crep_members_duty(jr__crep *r, uint64_t *next)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    const jr__meta_consumer *c = jr__meta_consumer_by_group(&js->st, r->group);
    if (!c || c->updated != r->updated || !jr__crep_is_leader(r)) return;
    uint64_t soon = jr__deadline(jr__node_now(n), js->heartbeat_ns);
    jr_group *g = r->g;
    int voter, current;
    /* 1. a peer of the assignment that is not a member: joins as an observer */
    for (size_t i = 0; i < c->npeers; i++) {
        if (member(g, c->peers[i], &voter, &current)) continue;
        jr_group_add_observer(g, c->peers[i], NULL, NULL); /* JR_EBUSY: one change at a time */
        note(r, JR_MOVE_MEMBERSHIP, "adding peer %s", c->peers[i]);
        *next = soon;
        return;
    }
    /* 2. an observer of the assignment that caught up: becomes a voter */
    for (size_t i = 0; i < c->npeers; i++) {
        uint64_t seen = 0;
        if (!member_seen(g, c->peers[i], &voter, &current, &seen) || voter) continue;
        if (current) {
            jr_group_promote(g, c->peers[i], NULL, NULL);
            note(r, JR_MOVE_MEMBERSHIP, "promoting peer %s", c->peers[i]);
        } else {
            /* a joiner the group has not heard from yet, on a server this node heard from
             * within an election timeout, is catching up: its first answer is on its way */
            jr__peer *pp = jr__peer_find_name(n, c->peers[i]);
            uint64_t heard = pp ? jr__peer_heard(pp) : 0, now = jr__node_now(n);
            int up = heard && now - heard <= js->election_ns;
            if (seen == UINT64_MAX ? !up : seen > 2 * js->election_ns)
                note(r, JR_MOVE_QUORUM, "waiting for peer %s to come online", c->peers[i]);
            else
                note(r, JR_MOVE_CATCHUP, "waiting for peers to catch up (%s)", c->peers[i]);
            /* A quiet group counts nobody it did not hear from when it went quiet, and an
             * empty new member never speaks first (it may have opened its replica only after
             * the group went quiet, taken for down): if the peer's node is heard from, wake
             * the group, at most once an election timeout, so its leader heartbeats, and
             * probes, that member (as stream_peers.c does). */
            if (jr__raft_quiet(jr__group_consensus(g)) && up &&
                now >= jr__deadline(r->woken_at, js->election_ns)) {
                r->woken_at = now;
                jr__group_wake(g);
            }
        }
        *next = soon;
        return;
    }
    /* 3. a member the assignment no longer names: leaves (the leader hands over first) */
    jr_group_status gs;
    gs.size = sizeof gs;
    if (jr_group_status_get(g, &gs) != 0) return;
    for (size_t i = 0; i < gs.npeers; i++) {
        jr_peer_status ps;
        ps.size = sizeof ps;
        if (jr_group_peer(g, i, &ps) != 0 || !ps.name || named(c, ps.name)) continue;
        if (strcmp(ps.name, js->name) == 0) {
            for (size_t k = 0; k < c->npeers; k++) {
                if (member(g, c->peers[k], &voter, &current) && voter && current) {
                    jr_group_transfer(g, c->peers[k], NULL, NULL);
                    note(r, JR_MOVE_MEMBERSHIP, "stepping down to %s", c->peers[k]);
                    break;
                }
                note(r, JR_MOVE_CATCHUP, "waiting for a current peer to step down to");
            }
        } else {
            jr_group_remove(g, ps.name, NULL, NULL);
            note(r, JR_MOVE_MEMBERSHIP, "removing peer %s", ps.name);
        }
        *next = soon;
        return;
    }
    /* 4. the configuration is the peer set: report it (again until the meta state has it) */
    if (!jr__meta_consumer_busy(c)) {
        memset(&r->note, 0, sizeof r->note);
        return;
    }
    note(r, JR_MOVE_META, "reporting the new peer set to the meta leader");
    uint64_t now = jr__node_now(n);
    if (r->reported_at && now < jr__deadline(r->reported_at, 4 * js->election_ns)) {
        *next = soon;
        return;
    }
    jr__join_floor f;
    if (jr__group_floor(g, &f) != 0) {
        *next = soon;
        return;
    }
    r->reported_at = now;
    jr__mnode_report_consumer_converged(js, c, &f);
    *next = soon;
}

int jr__crep_change_stalled(jr__js *js, const jr__meta_consumer *c, const char **who)
{
    /* the voters when the change began: its origin's peers (the peer set the first change
     * left); the current ones when none is recorded (a cancel returning) */
    const char *const *v = c->origin ? c->origin->peers : c->peers;
    size_t nv = c->origin ? c->origin->npeers : c->npeers, up = 0;
    *who = NULL;
    for (size_t i = 0; i < nv; i++) {
        if (jr__mnode_online(js, v[i], NULL))
            up++;
        else if (!*who)
            *who = v[i];
    }
    return nv > 0 && up < nv / 2 + 1;
}
