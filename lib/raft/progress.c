/*
 * progress — the leader's view of each member (§3.5 nextIndex/matchIndex, plus flow control).
 *
 * States:
 *  - PROBE: we do not know where the follower's log matches ours; one APPEND at a time (at
 *    next - 1), retried on the heartbeat tick until an answer arrives;
 *  - REPLICATE: the follower matched; APPENDs are pipelined optimistically (§10.2.1: next
 *    advances on send, and only a rejection or a timeout sends anything again), bounded by a
 *    window of messages (win, at most max_inflight) and max_inflight_bytes of entry payload;
 *  - SNAPSHOT: the follower needs entries we compacted; a snapshot is being sent.
 *
 * The inflight window is a ring of the last index of each unacknowledged APPEND; the bytes in
 * flight are read off the log's payload positions (memlog_bytes), so neither costs a scan.
 * A member's ring is allocated when it enters the replicate state (never in the hot path: a
 * state change), moves with it when the configuration changes, and is freed when it leaves the
 * group, when the leader steps down, and while the group is quiet (quiesce.c): an idle group
 * keeps no inflight memory. A member whose ring cannot be allocated stays in probe.
 */
#include <string.h>

#include "impl.h"
#include "util/alloc.h"

int jr__prog_reserve(jr__raft *r, uint32_t n)
{
    if (n > JR__MAX_MEMBERS) return JR_EINVAL;
    if (r->prog_cap >= n) return 0;
    /* exactly n: membership changes are rare, and most groups are led idle */
    uint32_t cap = n;
    jr__prog *p = jr__realloc(r->alloc, r->prog, cap * sizeof *p);
    if (!p) return JR_ENOMEM;
    memset(p + r->prog_cap, 0, (cap - r->prog_cap) * sizeof *p);
    r->prog = p;
    r->prog_cap = cap;
    return 0;
}

void jr__prog_free(jr__raft *r)
{
    for (uint32_t i = 0; i < r->prog_cap; i++) jr__free(r->alloc, r->prog[i].ring);
    jr__free(r->alloc, r->prog);
    r->prog = NULL;
    r->prog_cap = 0;
}

void jr__prog_release(jr__raft *r)
{
    for (uint32_t i = 0; i < r->prog_cap; i++) {
        jr__prog *p = &r->prog[i];
        if (p->state == JR__REPLICATE && p->ring_count) jr__prog_probe(p, p->match + 1);
        jr__free(r->alloc, p->ring);
        p->ring = NULL;
    }
}

void jr__prog_restore(jr__raft *r)
{
    for (uint32_t i = 0; i < r->conf->n && i < r->prog_cap; i++) {
        jr__prog *p = &r->prog[i];
        if (p->state == JR__REPLICATE && !p->ring && p->id != r->cfg.self &&
            jr__prog_replicate(r, p) != 0)
            jr__prog_probe(p, p->match + 1);
    }
}

jr__prog *jr__prog_find(jr__raft *r, jr__id id)
{
    if (r->role != ROLE_LEADER) return NULL;
    for (uint32_t i = 0; i < r->conf->n; i++)
        if (r->prog[i].id == id) return &r->prog[i];
    return NULL;
}

void jr__prog_init(jr__raft *r, jr__prog *p)
{
    uint64_t *ring = p->ring;
    jr__id id = p->id;
    uint8_t voter = p->voter;
    memset(p, 0, sizeof *p);
    p->id = id;
    p->voter = voter;
    p->ring = ring;
    p->state = JR__PROBE;
    p->next = r->log.last + 1;
    p->last_contact = r->now;
    p->win = r->cfg.max_inflight;
}

/* Re-lays prog[] out parallel to conf.m[], keeping the state of members that stay. Requires a
 * prior jr__prog_reserve(r, conf.n) (so it cannot fail). */
void jr__prog_rebuild(jr__raft *r)
{
    jr__prog neu[JR__MAX_MEMBERS];
    uint8_t kept[JR__MAX_MEMBERS] = {0};
    for (uint32_t i = 0; i < r->conf->n; i++) {
        jr__id id = r->conf->m[i].id;
        uint32_t j = 0;
        while (j < r->prog_cap && (r->prog[j].id != id || kept[j])) j++;
        if (j < r->prog_cap) {
            neu[i] = r->prog[j];
            kept[j] = 1;
        } else {
            memset(&neu[i], 0, sizeof neu[i]);
            neu[i].id = id;
            jr__prog_init(r, &neu[i]);
        }
        neu[i].voter = r->conf->m[i].voter;
    }
    /* rings of members that left are freed; new members start in probe, without one */
    for (uint32_t j = 0; j < r->prog_cap; j++)
        if (!kept[j]) jr__free(r->alloc, r->prog[j].ring);
    memset(r->prog, 0, r->prog_cap * sizeof *r->prog);
    memcpy(r->prog, neu, r->conf->n * sizeof *neu);
}

void jr__prog_probe(jr__prog *p, uint64_t next)
{
    p->state = JR__PROBE;
    p->next = next > p->match ? next : p->match + 1;
    p->paused = 0;
    p->ring_head = p->ring_count = 0;
}

int jr__prog_replicate(jr__raft *r, jr__prog *p)
{
    if (!p->ring) {
        p->ring = jr__malloc(r->alloc, r->cfg.max_inflight * sizeof *p->ring);
        if (!p->ring) return JR_ENOMEM;
    }
    p->state = JR__REPLICATE;
    p->next = p->match + 1;
    p->paused = 0;
    p->ring_head = p->ring_count = 0;
    return 0;
}

void jr__prog_snapshot(jr__prog *p, uint64_t index)
{
    if (p->state != JR__SNAPSHOT) {
        p->snap_from = index;
        if (p->match > p->later_match) {
            p->later_snaps++;
            p->later_match = p->match;
        }
    }
    p->state = JR__SNAPSHOT;
    p->snap_index = index;
    p->snap_offset = 0;
    p->snap_moved = 1;
    p->snap_silent = 0;
    p->paused = 0;
    p->ring_head = p->ring_count = 0;
}

int jr__prog_window_full(const jr__raft *r, const jr__prog *p)
{
    uint32_t win = p->win && p->win < r->cfg.max_inflight ? p->win : r->cfg.max_inflight;
    if (p->ring_count >= win) return 1;
    return p->ring_count &&
           jr__memlog_bytes(&r->log, p->match + 1, p->next - 1) >= r->cfg.max_inflight_bytes;
}

void jr__prog_sent(jr__raft *r, jr__prog *p, uint64_t last)
{
    if (p->state == JR__PROBE) {
        p->paused = 1;
        return;
    }
    if (!p->ring_count) p->ring_base = p->next - 1;
    p->next = last + 1;
    uint32_t slot = (p->ring_head + p->ring_count) % r->cfg.max_inflight;
    p->ring[slot] = last;
    p->ring_count++;
}

void jr__prog_acked(const jr__raft *r, jr__prog *p, uint64_t index)
{
    /* ring entries are increasing: free every APPEND the acknowledgement covers */
    while (p->ring_count && p->ring[p->ring_head] <= index) {
        p->ring_base = p->ring[p->ring_head];
        p->ring_head = (p->ring_head + 1) % r->cfg.max_inflight;
        p->ring_count--;
    }
    if (index > p->match) {
        p->match = index;
        /* additive increase, slowly: one more APPEND in flight per eight windows of
         * acknowledgements without a gap (faster, a reordering network reorders again at once
         * and most of what is in flight is sent twice) */
        if (p->win < r->cfg.max_inflight && ++p->win_acks >= 8u * p->win) {
            p->win++;
            p->win_acks = 0;
        }
    }
}

int jr__prog_gap(const jr__raft *r, jr__prog *p, uint64_t rejected, uint64_t holds)
{
    /* which in-flight APPEND went out with prev_index `rejected` */
    uint32_t k = 0;
    uint64_t prev = p->ring_base;
    while (k < p->ring_count && prev != rejected) {
        prev = p->ring[(p->ring_head + k) % r->cfg.max_inflight];
        k++;
    }
    if (prev != rejected || k >= p->ring_count) return 0; /* not in flight: a stale answer */
    /* Reordering (or a loss) ahead of it: halve the window (TCP's multiplicative decrease).
     * On a network that reorders, gaps keep coming until about one APPEND is in flight, and
     * then stop; on one that only loses a frame now and then, pipelining goes on. */
    p->win = p->win > 1 ? p->win / 2 : 1;
    p->win_acks = 0;
    /* Resend from where the follower's log must continue: right after the APPENDs before
     * the rejected one if one of them still carries what follows `holds` (it is only
     * overtaken), else right after `holds`. Later APPENDs in flight cannot land (they start
     * beyond the rejected one's entries) and are forgotten: their rejections are stale. */
    uint32_t keep = k;
    uint64_t from = rejected + 1;
    uint32_t j = 0;
    while (j < k && p->ring[(p->ring_head + j) % r->cfg.max_inflight] <= holds) j++;
    if (j == k) { /* nothing in flight covers holds + 1 */
        keep = j;
        from = holds + 1;
    }
    p->ring_count = keep;
    p->next = from > p->match ? from : p->match + 1;
    return 1;
}
