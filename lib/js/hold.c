/*
 * hold — a stream leader holds its publishes back while its group outruns a joining peer's copy
 * (docs/internals.md "Catch-up", Convergence).
 *
 * A peer joining a stream's group (a grow or a move) copies the stream's messages while the
 * entries its group commits meanwhile wait, bounded, in its queue and its Raft log; its leader
 * keeps what it needs behind each snapshot, bounded too. A copy slower than the publishers
 * fills every bound, the leader compacts its log past the joiner and sends it a later snapshot,
 * and the joiner fetches the messages of the entries it missed: under publishers that keep
 * outrunning it, one such round follows another and the change never converges.
 *
 * So once the group has outrun a joiner's copy (its leader sent it a later snapshot: a
 * snapshot to an observer that had acknowledged entries), the leader proposes nothing while
 * that joiner is in contact and trails its log by half of keep_bytes or more, which is before
 * its retention would compact past the joiner again (snapshot.c keeps up to keep_bytes for a
 * member in contact). Publishes and every other op wait in the stage meanwhile, in order. The
 * copy gets the time the publishers took; once it ends, the joiner applies its queue and takes
 * entries again, and the group proposes at the pace the joiner acknowledges until it no longer
 * trails that far: the group's entries then reach it as a follower's do, and the change
 * converges with no second later snapshot.
 *
 * Bounds, so that publishers are never held for long and a joiner that cannot keep up does not
 * hold its group to its pace for good: no op waits in the stage more than half the request
 * timeout (a publish held longer would fail at its client), the stage holds at most
 * HOLD_STAGE_MAX bytes, and the holds (stretches with nothing admitted) for one later snapshot
 * take at most EPISODE_TIMEOUTS request timeouts in all. A hold that reaches a bound gives that
 * later snapshot up: holds resume only after another one to that joiner, and after GIVEUPS_MAX
 * give-ups on one joiner, not at all while this leader's change lasts — the change then goes on as
 * without holds (it converges if the publishers slow down).
 *
 * State: the group's peer-change work (jr__membwork hold_*), present on its leader while a
 * change is in progress, which is the only time the group has a joiner; r->holding. Counters:
 * js->catchup_holds, catchup_held_ns, catchup_hold_giveups.
 */
#include <inttypes.h>

#include "js/js.h"
#include "util/deadline.h"

#define HOLD_STAGE_MAX ((size_t)64 << 20) /* op bytes one hold keeps staged, at most */
#define EPISODE_TIMEOUTS 4                /* request timeouts of holds per later snapshot */
#define GIVEUPS_MAX 2                     /* give-ups on one joiner before holds stop */

static const char *peer_name(jr__js *js, jr__id id)
{
    jr__peer *p = jr__peer_find(js->n, id);
    return p ? jr__peer_get_name(p) : "?";
}

/* Ends r's hold (if any) and accounts for its time. */
static void hold_end(jr__srep *r)
{
    jr__membwork *w = r->mw;
    if (!w || !w->hold_since) return;
    jr__js *js = r->js;
    uint64_t now = jr__node_now(js->n);
    uint64_t held = now > w->hold_since ? now - w->hold_since : 0;
    js->catchup_held_ns += held;
    w->hold_total += held;
    w->hold_since = 0;
    jr__node_log(js->n, JR_LOG_DEBUG, "stream '%s': publishes go on after %" PRIu64 " us held",
                 r->name, held / 1000u);
}

/* A hold reached a bound: this later snapshot is given up (see the top). */
static void give_up(jr__srep *r, jr__id joiner, const char *why)
{
    jr__membwork *w = r->mw;
    jr__js *js = r->js;
    hold_end(r);
    w->hold_giveups = w->hold_spent == joiner ? w->hold_giveups + 1 : 1;
    w->hold_spent = joiner;
    w->hold_outrun = 0;
    js->catchup_hold_giveups++;
    jr__node_log(js->n, JR_LOG_WARN,
                 "stream '%s': peer %s copies slower than the publishers append (%s): its "
                 "publishes are no longer held%s",
                 r->name, peer_name(js, joiner), why,
                 w->hold_giveups >= GIVEUPS_MAX ? " while this change lasts"
                                                : " until its next later snapshot");
}

void jr__srep_hold_free(jr__srep *r)
{
    hold_end(r);
}

uint64_t jr__srep_admit(jr__srep *r)
{
    jr__membwork *w = r->mw;
    if (!w || !r->g || jr__group_closed(r->g)) return UINT64_MAX;
    jr__js *js = r->js;
    const jr__raft *raft = jr__group_consensus(r->g);
    const jr__conf *c = jr__raft_conf(raft);
    uint64_t now = jr__node_now(js->n), last = jr__raft_last_index(raft);
    jr__progress joiner = {0};
    for (uint32_t i = 0; i < c->n; i++) {
        jr__progress p;
        if (jr__raft_progress(raft, i, &p) != 0 || p.voter || p.id == jr__raft_self(raft)) continue;
        /* a later snapshot to an observer (one that had taken entries): the group outran its
         * copy, and holds begin again unless they gave that joiner up for good */
        if (p.later_snaps && !(p.id == w->hold_counted && p.later_snaps == w->hold_seen)) {
            w->hold_counted = p.id;
            w->hold_seen = p.later_snaps;
            if (!(w->hold_spent == p.id && w->hold_giveups >= GIVEUPS_MAX)) {
                jr__node_log(js->n, w->hold_outrun == p.id ? JR_LOG_DEBUG : JR_LOG_INFO,
                             "stream '%s': the group outran peer %s's copy (a later snapshot): "
                             "its publishes wait whenever that peer trails the log by %" PRIu64
                             " bytes",
                             r->name, peer_name(js, p.id), js->keep_bytes / 2);
                w->hold_outrun = p.id;
                w->hold_total = 0;
            }
        }
        if (p.id == w->hold_outrun) joiner = p;
    }
    if (!joiner.id) {
        w->hold_outrun = 0; /* no longer an observer: promoted, removed, or gone */
        hold_end(r);
        return UINT64_MAX;
    }
    if (joiner.last_contact + js->election_ns < now) {
        hold_end(r); /* out of contact: holding would not help it */
        return UINT64_MAX;
    }
    uint64_t from = joiner.state == JR__SNAPSHOT ? joiner.snap_from : joiner.match;
    uint64_t lag = from < last ? jr__raft_log_bytes(raft, from + 1, last) : 0;
    uint64_t limit = js->keep_bytes / 2;
    if (lag < limit) {
        hold_end(r);
        return limit - lag;
    }
    if (!w->hold_since) {
        w->hold_since = now ? now : 1;
        js->catchup_holds++;
        jr__node_log(js->n, JR_LOG_DEBUG, "stream '%s': publishes wait, %" PRIu64 " bytes behind",
                     r->name, lag);
    }
    uint64_t held = now > w->hold_since ? now - w->hold_since : 0;
    uint64_t oldest = r->whead ? r->whead->staged_at : now;
    if (now > oldest && now - oldest >= js->timeout_ns / 2) {
        give_up(r, joiner.id, "an op waited half the request timeout");
        return UINT64_MAX;
    }
    if (w->hold_total + held >= EPISODE_TIMEOUTS * js->timeout_ns) {
        give_up(r, joiner.id, "holds since its later snapshot reached their time bound");
        return UINT64_MAX;
    }
    if (r->stage.len - r->stage_off >= HOLD_STAGE_MAX) {
        give_up(r, joiner.id, "the held ops reached their bound");
        return UINT64_MAX;
    }
    return 0;
}
