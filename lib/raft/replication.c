/*
 * replication — AppendEntries and heartbeats, both directions, and the commit rule.
 *
 * Leader side: entries are appended to the local log by proposals and sent to followers in
 * batches (up to JR__MAX_APPEND_ENTRIES entries and max_msg_bytes per APPEND) when the node
 * flushes the group, or as soon as an acknowledgement opens a follower's window (§10.2.2
 * pipelining). A follower's rejection carries a conflict hint so the leader skips a whole
 * conflicting term per round trip (§5.3: "the follower can include the term of the conflicting
 * entry and the first index it stores for that term").
 *
 * Commit (§3.6.2, Figure 3.7): an index is committed once a majority of voters hold it durably
 * and it belongs to the leader's current term: "Raft never commits log entries from previous
 * terms by counting replicas". The leader counts itself only up to what it has persisted
 * (§10.2.1: the leader may write in parallel with its followers but "counts itself in the
 * majority only once its own write is durable").
 *
 * Heartbeats are sent in one place, jr__repl_heartbeat(), which also drives retransmission
 * (probe retries, stalled pipelines, snapshot chunks); an idle leader goes quiet there
 * (quiesce.c) and stops sending them. A heartbeat carries the commit index only up to the
 * follower's match, and the follower takes it only up to what an APPEND (or snapshot) of this
 * leader proved its log matches (jr__repl_hb_commit): a match can predate a restart that rolled
 * the follower's files back, and the entry it then holds at that index may be another term's.
 *
 * Capped observers (jr__raft_cap_log). A member joining a group whose state machine cannot
 * snapshot yet (a stream replica still copying its messages) keeps every entry it is sent, and
 * the leader sends at the group's pace, not the member's: without a bound its log grows for as
 * long as the copy takes. While capped and an observer, a follower whose log holds the cap takes
 * no entry: an APPEND's prefix that fits is appended and acknowledged as far as it goes (the
 * leader counts only what is acknowledged, as for a shorter APPEND), and an APPEND that adds
 * nothing — the next entries, or later ones beyond a gap — is dropped unanswered. Why this is
 * the whole mechanism, with no message of its own and nothing new on the leader:
 *  - safety: dropping a message is what the network may do to any message, and acknowledging a
 *    prefix is what the follower does for an APPEND that carries only that prefix; no rule of
 *    §3.5, of the commit rule or of elections depends on either not happening;
 *  - the group's commits: an observer is in no quorum (commit, vote, check-quorum), so nothing
 *    the group decides waits for it; a voter is never capped;
 *  - the leader's cost: the replicate state stalls (nothing acknowledged) and falls back to
 *    probe at the next heartbeat tick, which retries one APPEND after one interval, two, four,
 *    then every fourth while the observer's probes go unanswered (jr__repl_heartbeat), so they
 *    never fill a link its copy needs; once its
 *    log no longer holds what the member needs (its retention judges the member by its
 *    acknowledgements, lib/node/snapshot.c), that probe becomes a snapshot, which is never
 *    capped and resets the member's log — the ordinary path of a lagging follower;
 *  - progress: the cap is lifted (or the log compacted by a snapshot) once the state machine is
 *    whole, and the next probe finds the member taking entries again; heartbeats, answered as
 *    ever, keep it in contact meanwhile;
 *  - mixed versions: the leader needs nothing new, so a leader of an older release paces a
 *    capped member the same way.
 * Bound: the log holds less than the cap before its last entry is appended, so at most the cap
 * plus one entry.
 */
#include "impl.h"
#include "util/alloc.h"
#include "util/deadline.h"

int jr__repl_append_local(jr__raft *r, uint64_t term, uint8_t type, const void *data, uint32_t len)
{
    int rc = jr__memlog_append(&r->log, term, type, data, len);
    if (rc) return rc;
    if (type == JR__ENTRY_CONFIG) {
        rc = jr__memb_appended(r, r->log.last, data, len);
        if (rc) {
            jr__memlog_truncate(&r->log, r->log.last);
            return rc;
        }
    }
    return 0;
}

/* Removes entries index..last: the follower's conflicting suffix (§3.5: "delete the existing
 * entry and all that follow it"). */
static void truncate_from(jr__raft *r, uint64_t index)
{
    jr__memlog_truncate(&r->log, index);
    jr__memb_truncated(r, index);
    if (r->durable >= index) r->durable = index - 1;
}

static int grow_scratch(jr__raft *r, uint32_t n)
{
    if (n <= r->scratch_cap) return 0;
    uint32_t cap = r->scratch_cap ? r->scratch_cap : 16;
    while (cap < n) cap *= 2;
    if (cap > JR__MAX_APPEND_ENTRIES) cap = JR__MAX_APPEND_ENTRIES;
    jr__entry *s = jr__realloc(r->alloc, r->scratch, cap * sizeof *s);
    if (!s) return JR_ENOMEM;
    r->scratch = s;
    r->scratch_cap = cap;
    return 0;
}

/* How many entries from `from` fit one APPEND within `budget` payload bytes (at least one). */
static uint32_t batch_len(const jr__raft *r, uint64_t from, uint64_t budget)
{
    uint64_t avail = r->log.last >= from ? r->log.last - from + 1 : 0;
    uint32_t n = avail > JR__MAX_APPEND_ENTRIES ? JR__MAX_APPEND_ENTRIES : (uint32_t)avail;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        bytes += jr__memlog_at(&r->log, from + i)->len;
        if (i > 0 && bytes > budget) return i;
    }
    return n;
}

/* Sends p one APPEND (or starts a snapshot when p needs compacted entries). Returns 1 if a
 * message went out. */
static int send_one(jr__raft *r, jr__prog *p, uint64_t now)
{
    if (p->id == r->cfg.self || p->state == JR__SNAPSHOT) return 0;
    if (p->state == JR__PROBE && p->paused) return 0;
    uint64_t prev = p->next - 1;
    if (prev < r->log.base_index) {
        /* §5: the entries it needs are gone; send the snapshot instead */
        jr__prog_snapshot(p, r->snap_index);
        jr__snap_send(r, p, now);
        return 1;
    }
    uint64_t budget = r->cfg.max_msg_bytes;
    if (p->state == JR__REPLICATE) {
        if (p->next > r->log.last || jr__prog_window_full(r, p)) return 0;
        uint64_t inflight = jr__memlog_bytes(&r->log, p->match + 1, prev);
        uint64_t room = r->cfg.max_inflight_bytes - inflight; /* window not full: no wrap */
        if (room < budget) budget = room;
    }
    uint32_t n = batch_len(r, p->next, budget);
    if (grow_scratch(r, n)) n = r->scratch_cap;
    if (n == 0 && p->state == JR__REPLICATE) return 0;
    for (uint32_t i = 0; i < n; i++) {
        const jr__memlog_ent *e = jr__memlog_at(&r->log, p->next + i);
        r->scratch[i] =
            (jr__entry){e->term, p->next + i, e->type, e->len, jr__memlog_data(&r->log, e)};
    }
    jr__msg m = {.type = JR__MSG_APPEND, .to = p->id};
    m.u.append.prev_index = prev;
    m.u.append.prev_term = jr__memlog_term(&r->log, prev);
    m.u.append.commit = jr__repl_told(r, UINT64_MAX);
    m.u.append.n = n;
    m.u.append.entries = r->scratch;
    jr__raft_send(r, &m);
    uint64_t told = jr__repl_told(r, prev + n);
    if (told > p->sent_commit) p->sent_commit = told;
    jr__prog_sent(r, p, prev + n);
    return 1;
}

void jr__repl_send_append(jr__raft *r, jr__prog *p, uint64_t now)
{
    /* pipelining: keep sending while the window and the log allow */
    while (send_one(r, p, now) && p->state == JR__REPLICATE && p->next <= r->log.last) {
    }
}

static void send_heartbeat(jr__raft *r, jr__prog *p)
{
    jr__msg m = {.type = JR__MSG_HEARTBEAT, .to = p->id};
    /* only what the follower is known to hold (etcd's rule), so it can commit it blindly */
    m.u.heartbeat.commit = jr__repl_told(r, p->match);
    if (m.u.heartbeat.commit > p->sent_commit) p->sent_commit = m.u.heartbeat.commit;
    jr__raft_send(r, &m);
}

void jr__repl_flush(jr__raft *r, uint64_t now)
{
    r->send_pending = 0;
    int due = !r->cfg.commit_delay || now >= r->commit_hb_at, untold = 0;
    for (uint32_t i = 0; i < r->conf->n; i++) {
        jr__prog *p = &r->prog[i];
        if (p->id == r->cfg.self) continue;
        jr__repl_send_append(r, p, now);
        /* A commit that advanced with nothing new to carry it goes out on its own, once it has
         * waited cfg.commit_delay for an APPEND to carry it (the next proposal's, when they
         * follow each other): the followers learn it late by at most that, and a commit costs
         * no frame and no answer of its own while proposals flow. */
        uint64_t known = jr__repl_told(r, p->match);
        if (p->state == JR__SNAPSHOT || p->sent_commit >= known) continue;
        /* what jr__raft_commit_now asked for goes at once, also to a follower that
         * acknowledged it only after the call */
        uint64_t asked = known < r->commit_tell ? known : r->commit_tell;
        if (due || p->sent_commit < asked)
            send_heartbeat(r, p);
        else
            untold = 1;
    }
    if (!untold)
        r->commit_hb_at = UINT64_MAX;
    else if (r->commit_hb_at == UINT64_MAX)
        r->commit_hb_at = jr__deadline(now, r->cfg.commit_delay);
}

int jr__repl_heartbeat_due(const jr__raft *r, uint64_t now)
{
    return r->role == ROLE_LEADER && now >= r->hb_deadline;
}

void jr__repl_heartbeat(jr__raft *r, uint64_t now)
{
    if (jr__quiet_leader_tick(r, now)) return; /* idle: the node's heartbeats stand in */
    r->hb_deadline = jr__deadline(now, r->cfg.heartbeat_interval);
    r->send_pending = 0;
    for (uint32_t i = 0; i < r->conf->n; i++) {
        jr__prog *p = &r->prog[i];
        if (p->id == r->cfg.self) continue;
        /* Entries in flight are sent again at once only to a follower that answered
         * something (a heartbeat, an older APPEND) during the interval and still did not move:
         * what it was sent is lost. One that said nothing at all, having spoken before, is
         * busy or cut off: what it was sent may still wait for it (a joining replica busy with
         * its catch-up would be sent its window again every interval, only to skip it). It is
         * sent it again after two silent intervals, four, eight, then every eighth (its answers
         * may be what is lost: a one-way cut), and at the next tick once it answers this tick's
         * heartbeat. One never heard from (a new member, whose replica its server may not have
         * created yet) is sent it again every interval. */
        int spoke = p->heard != p->hb_heard;
        p->hb_heard = p->heard;
        p->hb_silent = spoke ? 0 : p->hb_silent + (p->hb_silent < UINT32_MAX);
        uint32_t q = p->hb_silent;
        int retry = spoke || !p->heard || q == 2 || q == 4 || q % 8 == 0;
        if (p->match != p->hb_match)
            p->hb_stuck = 0; /* it took entries: the next cap counts anew */
        if (p->state == JR__PROBE) {
            /* An observer heard from whose probe goes unanswered tick after tick is most likely
             * capped, its log full until its copy ends (above), not lost: its probe, a whole
             * entry, is sent again after one tick, two, four, then every fourth. Sent every
             * tick, probes can fill a link slower than an entry per interval, and the copy's
             * answers that would lift the cap queue behind them for good. */
            int stuck = !p->voter && p->heard && p->paused && p->match == p->hb_match;
            p->hb_stuck = stuck ? p->hb_stuck + (p->hb_stuck < UINT32_MAX) : 0;
            uint32_t k = p->hb_stuck;
            if (k > 2 && k != 4 && k % 4 != 0) retry = 0;
            if (retry) p->paused = 0; /* the probe (or its answer) may have been lost */
        } else if (p->state == JR__REPLICATE && p->ring_count && p->match == p->hb_match) {
            if (retry) jr__prog_probe(p, p->match + 1); /* a whole interval without progress */
        } else if (p->state == JR__SNAPSHOT) {
            /* No answer to the chunk out: it is sent again (from the offset the follower asked
             * for, or the start of a snapshot taken since) after two silent intervals, four,
             * eight, then every eighth. Its answer may still be on its way: the follower syncs
             * and installs the file before it answers the last chunk, and a link's round trip
             * can be longer than an interval. A snapshot sent again once its answer was in
             * flight is a second install for the follower, and the node's state machine may
             * fetch again what the entries between the two held. */
            p->snap_silent = p->snap_moved ? 0 : p->snap_silent + (p->snap_silent < UINT32_MAX);
            uint32_t s = p->snap_silent;
            if (p->paused && (s == 2 || s == 4 || (s && s % 8 == 0))) jr__snap_send(r, p, now);
            p->snap_moved = 0;
        }
        p->hb_match = p->match;
        jr__repl_send_append(r, p, now);
        send_heartbeat(r, p);
    }
    r->commit_hb_at = UINT64_MAX; /* every follower was told the commit it can take */
}

void jr__repl_maybe_commit(jr__raft *r, uint64_t now)
{
    if (r->role != ROLE_LEADER) return;
    uint64_t v[JR__MAX_MEMBERS];
    uint32_t n = 0;
    /* a removed voter of two this replica stands in for holds what it holds (removed.c) */
    uint64_t need;
    int stand = jr__removed_stand_in(r, &need);
    for (uint32_t i = 0; i < r->conf->n; i++) {
        const jr__prog *p = &r->prog[i];
        if (!p->voter) continue;
        uint64_t m = p->id == r->cfg.self || (int)i == stand ? r->durable : p->match;
        uint32_t j = n++;
        for (; j > 0 && v[j - 1] < m; j--) v[j] = v[j - 1]; /* insertion, descending */
        v[j] = m;
    }
    if (n == 0) return;
    uint64_t q = v[jr__raft_quorum(r) - 1];
    /* ... and commits only what the observers it needs hold as well */
    for (uint32_t i = 0; need && i < r->conf->n; i++)
        if (need >> i & 1 && r->prog[i].match < q) q = r->prog[i].match;
    if (q <= r->commit || jr__memlog_term(&r->log, q) != r->term) return;
    r->commit = q;
    r->send_pending = 1;
    jr__memb_committed(r, now);
}

/* Follower side -------------------------------------------------------------------------------*/

int jr__repl_check_append(const jr__raft *r, const jr__msg *m)
{
    uint32_t n = m->u.append.n;
    uint64_t prev = m->u.append.prev_index, pterm = m->u.append.prev_term;
    if (n > JR__MAX_APPEND_ENTRIES || (n && !m->u.append.entries)) return JR_EINVAL;
    if ((prev == 0) != (pterm == 0) || pterm > m->term || prev > UINT64_MAX - n - 1)
        return JR_EINVAL;
    uint64_t t = pterm;
    for (uint32_t i = 0; i < n; i++) {
        const jr__entry *e = &m->u.append.entries[i];
        if (e->index != prev + 1 + i || e->term == 0 || e->term < t || e->term > m->term ||
            e->type > JR__ENTRY_CONFIG || (e->len && !e->data))
            return JR_EINVAL;
        if (e->type == JR__ENTRY_CONFIG) {
            jr__conf c;
            if (jr__conf_decode(&c, e->data, e->len)) return JR_EINVAL;
        }
        t = e->term;
    }
    (void)r;
    return 0;
}

static void reply_append(jr__raft *r, jr__id to, int ok, uint64_t index, uint64_t hint_index,
                         uint64_t hint_term)
{
    jr__msg m = {.type = JR__MSG_APPEND_RESP, .to = to};
    m.flags = ok ? JR__MF_DURABLE : 0; /* success vouches for durable entries */
    m.u.append_resp.success = (uint8_t)ok;
    m.u.append_resp.index = index;
    m.u.append_resp.hint_index = hint_index;
    m.u.append_resp.hint_term = hint_term;
    jr__raft_send(r, &m);
}

static void reject(jr__raft *r, const jr__msg *m)
{
    uint64_t prev = m->u.append.prev_index;
    if (prev > r->log.last) {
        reply_append(r, m->from, 0, prev, r->log.last + 1, 0);
        return;
    }
    /* the first index we hold of the conflicting term (terms are sorted: binary search) */
    uint64_t t = jr__memlog_term(&r->log, prev);
    uint64_t lo = r->commit + 1 > r->log.first ? r->commit + 1 : r->log.first;
    uint64_t first = t ? jr__memlog_last_le(&r->log, lo, prev, t - 1) + 1 : lo;
    reply_append(r, m->from, 0, prev, first, t);
}

void jr__repl_heard_leader(jr__raft *r, uint64_t now, jr__id from)
{
    if (r->role != ROLE_FOLLOWER) jr__elect_become_follower(r, now, r->term, from);
    r->leader = from;
    r->leader_contact = now;
    jr__elect_reset_timer(r, now);
    jr__vouch_heard_leader(r, from); /* unvouched: asks this leader for its word (vouch.c) */
}

/* The first index at or below our commit index where the leader's log, as this APPEND shows it
 * (prev_term at prev_index, then its entries), differs from ours; 0 if none. Only entries we
 * hold in memory above the snapshot are compared. */
static uint64_t committed_conflict(const jr__raft *r, const jr__msg *m)
{
    uint64_t prev = m->u.append.prev_index, hi = r->commit < r->log.last ? r->commit : r->log.last;
    uint64_t lo = r->log.first > r->snap_index + 1 ? r->log.first : r->snap_index + 1;
    if (prev >= lo && prev <= hi && jr__memlog_term(&r->log, prev) != m->u.append.prev_term)
        return prev;
    for (uint32_t i = 0; i < m->u.append.n; i++) {
        uint64_t idx = prev + 1 + i;
        if (idx > hi) break;
        if (idx >= lo && jr__memlog_term(&r->log, idx) != m->u.append.entries[i].term) return idx;
    }
    return 0;
}

/* cfg.commit_may_be_lost (raft.h): entries from `from` on were committed here but the leader
 * of our term holds others there, so the group lost them (acknowledged before a sync, then a
 * power loss of a quorum). Follow the leader: give them up and take the commit index back to
 * the entry before; the node re-applies from there. The leader of the current term is the only
 * source of truth left (§3.6.1 elected it with the log of a quorum). */
static void lost_commit(jr__raft *r, uint64_t from)
{
    truncate_from(r, from);
    r->commit = from - 1;
    if (r->applied > r->commit) r->applied = r->commit;
    r->lost_commits++;
}

int jr__repl_on_append(jr__raft *r, uint64_t now, const jr__msg *m)
{
    if (r->role == ROLE_LEADER) return JR_EINVAL; /* two leaders in a term cannot happen */
    jr__repl_heard_leader(r, now, m->from);
    const jr__entry *ents = m->u.append.entries;
    uint32_t n = m->u.append.n;
    uint64_t prev = m->u.append.prev_index, pterm = m->u.append.prev_term;
    if (r->cfg.commit_may_be_lost && prev <= r->commit) {
        uint64_t c = committed_conflict(r, m);
        if (c) lost_commit(r, c);
    }
    if (prev < r->commit) {
        /* Committed entries are the same in every log: skip them. Log matching makes one
         * comparison enough: the leader's term at our commit index (or at the last index this
         * message covers, if lower) must be ours. If it is not, storage lied (a committed entry
         * was lost and replaced) or the append is no leader's (a forged frame: checksums are
         * no authentication). Either way the append is dropped, and the replica grants no vote
         * and does not campaign until it is vouched for again (vouch.c): a stop for good would
         * let one forged frame per replica leave the group without a leader forever. */
        uint64_t x = prev + n < r->commit ? prev + n : r->commit;
        uint64_t lx = x == prev ? pterm : ents[x - prev - 1].term;
        if (x >= r->log.base_index && jr__memlog_term(&r->log, x) != lx) {
            jr__vouch_diverged(r);
            return 0;
        }
        uint64_t skip = r->commit - prev;
        if (skip >= n) {
            reply_append(r, m->from, 1, r->commit, 0, 0);
            return 0;
        }
        ents += skip;
        n -= (uint32_t)skip;
        prev = r->commit;
        pterm = jr__memlog_term(&r->log, prev);
    }
    if (prev > r->log.last && jr__raft_log_full(r)) {
        r->cap_drops++; /* beyond a gap, and nothing would fit: as if lost (above) */
        return 0;
    }
    if (prev > r->log.last || jr__memlog_term(&r->log, prev) != pterm) {
        reject(r, m);
        return 0;
    }
    uint32_t i = 0;
    while (i < n && ents[i].index <= r->log.last &&
           jr__memlog_term(&r->log, ents[i].index) == ents[i].term)
        i++;
    if (i < n && ents[i].index <= r->log.last) truncate_from(r, ents[i].index);
    for (; i < n; i++) {
        if (jr__raft_log_full(r)) break; /* capped observer (above) */
        int rc = jr__repl_append_local(r, ents[i].term, ents[i].type, ents[i].data, ents[i].len);
        if (rc) return rc; /* what was appended stays; the leader will retry the rest */
    }
    if (r->log_cap && r->log.tail - r->log.head > r->cap_peak)
        r->cap_peak = r->log.tail - r->log.head;
    if (i == 0 && n > 0) {
        r->cap_drops++; /* nothing held or taken of it: as if lost */
        return 0;
    }
    uint64_t match = prev + i;
    jr__repl_matched(r, match);
    uint64_t c = m->u.append.commit < match ? m->u.append.commit : match;
    if (c > r->commit) r->commit = c;
    reply_append(r, m->from, 1, match, 0, 0);
    return 0;
}

/* Where to probe next after a rejection of prev_index `rej` carrying a conflict hint. */
static uint64_t backtrack(const jr__raft *r, const jr__msg *m, uint64_t rej)
{
    uint64_t hint = m->u.append_resp.hint_index, hterm = m->u.append_resp.hint_term;
    uint64_t next = hint;
    if (hterm) {
        /* if we hold entries of the follower's conflicting term, ours and its agree up to our
         * last one of that term; otherwise skip the follower's whole term */
        uint64_t hi = rej < r->log.last ? rej : r->log.last;
        uint64_t j = jr__memlog_last_le(&r->log, r->log.first, hi, hterm);
        if (j >= r->log.first && jr__memlog_term(&r->log, j) == hterm) next = j + 1;
    }
    return next < rej ? next : rej;
}

/* The follower of p answered below what it acknowledged (p->match): its storage lost entries
 * (it restarted from a cut or rolled-back disk, vouch.c), or the answer is a late one that an
 * acknowledgement overtook. Probing from match + 1 would be refused forever in the first case;
 * probe from `next`. Only the leader's view of it goes down, to `holds` (what log matching
 * proves it holds): commit stays, and if the reply was an old one, the next acknowledgement
 * restores match. Its VOUCH, not this answer, marks it restarted or damaged (vouch.c). */
static void lost_entries(jr__raft *r, jr__prog *p, uint64_t now, uint64_t holds, uint64_t next)
{
    jr__vouch_lost(r, p, holds, 0);
    jr__prog_probe(p, next);
    jr__repl_send_append(r, p, now);
}

void jr__repl_on_append_resp(jr__raft *r, uint64_t now, const jr__msg *m)
{
    jr__prog *p = jr__prog_find(r, m->from);
    if (!p) return;
    jr__prog_heard(p, now);
    uint64_t idx = m->u.append_resp.index;
    if (m->u.append_resp.success) {
        if (idx < p->match || idx > r->log.last) return; /* stale, or nonsense */
        uint64_t old = p->match;
        jr__prog_acked(r, p, idx);
        if (p->state != JR__REPLICATE && jr__prog_replicate(r, p) != 0)
            jr__prog_probe(p, p->match + 1); /* no memory for a window: one APPEND at a time */
        /* an acknowledgement at the match it already had vouches for it too: a restarted
         * member whose log held all of ours acknowledges nothing newer */
        jr__vouch_progress(p);
        if (p->match > old) {
            jr__repl_maybe_commit(r, now);
            if (r->role != ROLE_LEADER) return; /* a committed self-removal stepped us down */
            jr__xfer_progress(r, p);
            /* it can now be told a commit index it could not take before: at the next flush */
            if (p->sent_commit < jr__repl_told(r, p->match)) r->send_pending = 1;
        }
    } else {
        uint64_t hint = m->u.append_resp.hint_index;
        if (p->state == JR__SNAPSHOT) return;
        if (p->state == JR__REPLICATE && !m->u.append_resp.hint_term && hint && hint <= idx) {
            /* Its log ends at hint - 1, at or past what it acknowledged but before this
             * APPEND's prev_index: one before it was overtaken (a network that reorders) or
             * lost, and this one was dropped. Only an APPEND still in flight counts (else the
             * answer is stale): resend what the follower cannot get from what is in flight, no
             * probe round (§10.2.1). */
            if (jr__prog_gap(r, p, idx, hint - 1)) jr__repl_send_append(r, p, now);
            return;
        }
        /* Two reasons to refuse (raft.h): its log ends before idx (hint_term 0, hint = its last
         * + 1), or its term at idx conflicts with ours. Only the first, with a log ending below
         * what it acknowledged, is lost storage. A conflict is ordinary backtracking and never
         * lowers an acknowledged match: its hint (the first index of its conflicting term) can
         * lie at or below the match when that term's entries before idx are ours too, and a
         * conflict at or below the match is an old answer (a follower that lost storage says
         * so with a VOUCH when it restarts, vouch.c). */
        if (hint && m->u.append_resp.hint_term == 0 && hint <= p->match && idx >= p->match) {
            lost_entries(r, p, now, 0, hint);
            return;
        }
        if (p->state == JR__REPLICATE && idx <= p->match) return; /* stale */
        if (p->state == JR__PROBE && idx != p->next - 1) return;  /* stale */
        jr__prog_probe(p, backtrack(r, m, idx));
    }
    jr__repl_send_append(r, p, now);
}

void jr__repl_on_heartbeat(jr__raft *r, uint64_t now, const jr__msg *m)
{
    if (r->role == ROLE_LEADER) return;
    jr__repl_heard_leader(r, now, m->from);
    /* the leader sends only what it knows we hold; taken only as far as an APPEND of this
     * leader proved it (jr__repl_hb_commit) */
    uint64_t c = jr__repl_hb_commit(r, m->u.heartbeat.commit);
    if (c > r->commit) r->commit = c;
    jr__msg resp = {.type = JR__MSG_HEARTBEAT_RESP, .to = m->from};
    resp.u.heartbeat_resp.match_hint = r->log.last;
    jr__raft_send(r, &resp);
}

void jr__repl_on_heartbeat_resp(jr__raft *r, uint64_t now, const jr__msg *m)
{
    jr__prog *p = jr__prog_find(r, m->from);
    if (!p) return;
    jr__prog_heard(p, now);
    if (m->u.heartbeat_resp.match_hint < p->match && p->state != JR__SNAPSHOT)
        lost_entries(r, p, now, 0, m->u.heartbeat_resp.match_hint + 1);
}

void jr__repl_reply_stale(jr__raft *r, const jr__msg *m)
{
    jr__msg resp = {.to = m->from};
    switch (m->type) {
    case JR__MSG_APPEND:
        resp.type = JR__MSG_APPEND_RESP;
        resp.u.append_resp.index = m->u.append.prev_index;
        break;
    case JR__MSG_HEARTBEAT:
        resp.type = JR__MSG_HEARTBEAT_RESP;
        resp.u.heartbeat_resp.match_hint = r->log.last;
        break;
    default:
        resp.type = JR__MSG_VOTE_RESP;
        resp.flags = JR__MF_PREVOTE;
        break;
    }
    jr__raft_send(r, &resp);
}
