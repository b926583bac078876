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
 * Several observers may join at once (a grow by two): each has its own state — the later
 * snapshots seen, whether the group outran it, its give-ups and the time held for it since — and
 * the publishes wait for the one that trails furthest among those the group outran.
 *
 * State: the group's peer-change work (jr__membwork hold, hold_by, hold_since), present on its
 * leader while a change is in progress, which is the only time the group has a joiner;
 * r->holding. Counters: js->catchup_holds, catchup_held_ns, catchup_hold_giveups,
 * catchup_hold_arms.
 */
#include <inttypes.h>
#include <string.h>

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

static jr__hold_member *member_find(jr__membwork *w, jr__id id)
{
    for (size_t i = 0; i < JR__HOLD_MEMBERS; i++)
        if (w->hold[i].id == id) return &w->hold[i];
    return NULL;
}

/* Ends r's hold (if any) and accounts for its time to the member it was for. */
static void hold_end(jr__srep *r)
{
    jr__membwork *w = r->mw;
    if (!w || !w->hold_since) return;
    jr__js *js = r->js;
    uint64_t now = jr__node_now(js->n);
    uint64_t held = now > w->hold_since ? now - w->hold_since : 0;
    js->catchup_held_ns += held;
    jr__hold_member *m = member_find(w, w->hold_by);
    if (m) m->total += held;
    w->hold_since = 0;
    w->hold_by = 0;
    jr__node_log(js->n, JR_LOG_DEBUG, "stream '%s': publishes go on after %" PRIu64 " us held",
                 r->name, held / 1000u);
}

/* A bound was reached while m's lag held ops back: holds for m's copy are given up (see the
 * top) until its next later snapshot, or for good after GIVEUPS_MAX. */
static void give_up(jr__srep *r, jr__hold_member *m, const char *why)
{
    jr__js *js = r->js;
    hold_end(r);
    m->giveups++;
    m->armed = 0;
    js->catchup_hold_giveups++;
    jr__node_log(js->n, JR_LOG_WARN,
                 "stream '%s': peer %s copies slower than the publishers append (%s): its "
                 "publishes are no longer held%s",
                 r->name, peer_name(js, m->id), why,
                 m->giveups >= GIVEUPS_MAX ? " while this change lasts"
                                           : " until its next later snapshot");
}

void jr__srep_hold_free(jr__srep *r)
{
    hold_end(r);
}

int jr__srep_hold_armed(const jr__membwork *w, jr__id id)
{
    for (size_t i = 0; w && id && i < JR__HOLD_MEMBERS; i++)
        if (w->hold[i].id == id) return w->hold[i].armed;
    return 0;
}

jr__id jr__srep_hold_any(const jr__membwork *w)
{
    for (size_t i = 0; w && i < JR__HOLD_MEMBERS; i++)
        if (w->hold[i].id && w->hold[i].armed) return w->hold[i].id;
    return 0;
}

/* Takes in observer p's later snapshots, counted by this leader in `term`: a new one (the
 * group outran its copy) arms its holds unless they were given up on it for good. Each
 * leadership counts from zero (its Raft progress starts anew, while this peer-change work may
 * outlast a leadership lost and won back between two visits of the replica), so a count of
 * another term than the one last seen is compared with zero; a lower count in the same term (the
 * member removed and added again) is taken as the new base, arming nothing. The member's slot,
 * NULL when all are taken (its publishes are then not held: more joiners than slots at once is
 * not a change the meta leader makes). */
int jr__hold_note(jr__hold_member *m, uint32_t later_snaps, uint64_t term)
{
    uint32_t before = m->term == term ? m->seen : 0;
    m->seen = later_snaps;
    m->term = term;
    return later_snaps > before;
}

static jr__hold_member *observe(jr__srep *r, const jr__progress *p, uint64_t term)
{
    jr__membwork *w = r->mw;
    jr__hold_member *m = member_find(w, p->id);
    if (!m) {
        m = member_find(w, 0);
        if (!m) return NULL;
        memset(m, 0, sizeof *m);
        m->id = p->id;
    }
    if (!jr__hold_note(m, p->later_snaps, term) || m->giveups >= GIVEUPS_MAX) return m;
    jr__node_log(r->js->n, m->armed ? JR_LOG_DEBUG : JR_LOG_INFO,
                 "stream '%s': the group outran peer %s's copy (a later snapshot): its publishes "
                 "wait whenever that peer trails the log by %" PRIu64 " bytes",
                 r->name, peer_name(r->js, p->id), r->js->keep_bytes / 2);
    m->armed = 1;
    m->total = 0;
    r->js->catchup_hold_arms++;
    return m;
}

/* The bounds on what waits (see the top), checked whenever ops stay staged: m's holds are given
 * up when the oldest staged op waited half the request timeout, when the stage reached
 * HOLD_STAGE_MAX, or when the holds for m took EPISODE_TIMEOUTS request timeouts. 1 if they
 * were. */
static int bounded(jr__srep *r, jr__hold_member *m, uint64_t now)
{
    jr__js *js = r->js;
    jr__membwork *w = r->mw;
    uint64_t oldest = r->whead ? r->whead->staged_at : now;
    if (now > oldest && now - oldest >= js->timeout_ns / 2) {
        give_up(r, m, "an op waited half the request timeout");
        return 1;
    }
    if (r->stage.len - r->stage_off >= HOLD_STAGE_MAX) {
        give_up(r, m, "the held ops reached their bound");
        return 1;
    }
    uint64_t held = w->hold_since && now > w->hold_since ? now - w->hold_since : 0;
    if (m->total + held >= EPISODE_TIMEOUTS * js->timeout_ns) {
        give_up(r, m, "holds since its later snapshot reached their time bound");
        return 1;
    }
    return 0;
}

uint64_t jr__srep_admit(jr__srep *r)
{
    jr__membwork *w = r->mw;
    if (!w || !r->g || jr__group_closed(r->g)) return UINT64_MAX;
    jr__js *js = r->js;
    const jr__raft *raft = jr__group_consensus(r->g);
    const jr__conf *c = jr__raft_conf(raft);
    uint64_t now = jr__node_now(js->n), last = jr__raft_last_index(raft);
    uint8_t present[JR__HOLD_MEMBERS] = {0};
    jr__hold_member *by = NULL; /* the armed observer in contact that trails furthest */
    uint64_t lag = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        jr__progress p;
        if (jr__raft_progress(raft, i, &p) != 0 || p.voter || p.id == jr__raft_self(raft)) continue;
        jr__hold_member *m = observe(r, &p, jr__raft_term(raft));
        if (!m) continue;
        present[m - w->hold] = 1;
        /* out of contact: holding would not help it */
        if (!m->armed || p.last_contact + js->election_ns < now) continue;
        uint64_t from = p.state == JR__SNAPSHOT ? p.snap_from : p.match;
        uint64_t l = from < last ? jr__raft_log_bytes(raft, from + 1, last) : 0;
        if (!by || l > lag) by = m, lag = l;
    }
    for (size_t k = 0; k < JR__HOLD_MEMBERS; k++) /* promoted, removed, or gone */
        if (!present[k]) w->hold[k].id = 0;
    if (!by) {
        hold_end(r);
        return UINT64_MAX;
    }
    uint64_t limit = js->keep_bytes / 2;
    if (lag < limit) {
        hold_end(r);
        return bounded(r, by, now) ? UINT64_MAX : limit - lag;
    }
    if (w->hold_since && w->hold_by != by->id) hold_end(r); /* another joiner trails further */
    if (!w->hold_since) {
        w->hold_since = now ? now : 1;
        w->hold_by = by->id;
        js->catchup_holds++;
        jr__node_log(js->n, JR_LOG_DEBUG, "stream '%s': publishes wait, %" PRIu64 " bytes behind",
                     r->name, lag);
    }
    return bounded(r, by, now) ? UINT64_MAX : 0;
}
