/*
 * members — the decisions of a stream's peer changes (rules in members.h).
 */
#include "meta/members.h"

static int wanted(uint64_t id, const uint64_t *want, size_t nwant)
{
    for (size_t i = 0; i < nwant; i++)
        if (want[i] == id) return 1;
    return 0;
}

static int member(uint64_t id, const jr__memb *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].id == id) return 1;
    return 0;
}

/* Removal order of unwanted voters: not live, then not caught up, then the rest. */
static int rank(const jr__memb *m)
{
    return !m->alive ? 0 : !m->caught_up ? 1 : 2;
}

static jr__memb_next step(int kind, uint64_t peer)
{
    jr__memb_next x = {kind, peer};
    return x;
}

jr__memb_next jr__members_next(uint64_t self, const jr__memb *m, size_t n, const uint64_t *want,
                               size_t nwant)
{
    /* 1. observers nobody wants */
    for (size_t i = 0; i < n; i++)
        if (!m[i].voter && !m[i].needed && m[i].id != self && !wanted(m[i].id, want, nwant))
            return step(JR__MEMB_REMOVE, m[i].id);
    /* 2. wanted peers that are not members yet */
    for (size_t i = 0; i < nwant; i++)
        if (!member(want[i], m, n)) return step(JR__MEMB_ADD, want[i]);
    /* 3. wanted observers: promote the caught-up, wait for the others */
    int catching_up = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].voter || !wanted(m[i].id, want, nwant)) continue;
        if (m[i].caught_up) return step(JR__MEMB_PROMOTE, m[i].id);
        catching_up = 1;
    }
    if (catching_up) return step(JR__MEMB_WAIT, 0);
    /* 4. voters nobody wants, other than this leader: the not live (not heard from, or not
     * acknowledging), then the least caught up, as long as the voters left keep a live
     * majority */
    size_t voters = 0, live = 0, pick = n, unwanted = 0;
    for (size_t i = 0; i < n; i++) {
        voters += m[i].voter;
        live += m[i].voter && m[i].alive;
    }
    for (size_t i = 0; i < n; i++) {
        if (!m[i].voter || m[i].id == self || wanted(m[i].id, want, nwant)) continue;
        unwanted = 1;
        size_t live_left = live - m[i].alive;
        if (2 * live_left <= voters - 1) continue; /* no live majority would be left */
        if (pick == n || rank(&m[i]) < rank(&m[pick])) pick = i;
    }
    if (pick < n) return step(JR__MEMB_REMOVE, m[pick].id);
    if (unwanted) return step(JR__MEMB_WAIT, 0);
    /* 5. this leader is not wanted: hand over to a caught-up wanted voter */
    if (member(self, m, n) && !wanted(self, want, nwant)) {
        for (size_t i = 0; i < n; i++)
            if (m[i].voter && m[i].id != self && m[i].caught_up && wanted(m[i].id, want, nwant))
                return step(JR__MEMB_TRANSFER, m[i].id);
        return step(JR__MEMB_WAIT, 0);
    }
    return step(JR__MEMB_CONVERGED, 0);
}

uint64_t jr__ack_floor_update(jr__ack_floor *f, uint64_t now, uint64_t commit, uint64_t period)
{
    if (f->n && now - f->at[1] >= 2 * period) f->n = 0; /* not sampled lately: start again */
    if (!f->n) {
        f->at[0] = f->at[1] = now;
        f->commit[0] = f->commit[1] = commit;
        f->n = 1;
    } else if (now - f->at[1] >= period) {
        f->at[0] = f->at[1];
        f->commit[0] = f->commit[1];
        f->at[1] = now;
        f->commit[1] = commit;
        f->n = 2;
    }
    return f->commit[0];
}

/* 1 if peer a should stay rather than peer b (the order of members.h). */
static int better(size_t a, size_t b, size_t leader, const int *online, const uint64_t *lag)
{
    if ((a == leader) != (b == leader)) return a == leader;
    if (online && online[a] != online[b]) return online[a] > online[b];
    if (lag && lag[a] != lag[b]) return lag[a] < lag[b];
    return a < b;
}

size_t jr__members_shrink(size_t n, size_t replicas, size_t leader, const int *online,
                          const uint64_t *lag, size_t *keep)
{
    if (replicas == 0 || replicas > n || !keep) return 0;
    /* selection by rank: peer i stays if fewer than `replicas` peers are better than it */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t above = 0;
        for (size_t j = 0; j < n; j++)
            if (j != i && better(j, i, leader, online, lag)) above++;
        if (above < replicas) keep[k++] = i;
    }
    return k;
}
