/*
 * membership — single-server configuration changes (§4.1), one at a time.
 *
 * §4.1: "a server always uses the latest configuration in its log, regardless of whether the
 * entry is committed". So a CONFIG entry takes effect the moment it is appended, and when a
 * follower's uncommitted suffix is truncated the configuration reverts to the latest one that
 * remains (or the snapshot's). cidx keeps the indexes of the CONFIG entries the log holds, so
 * both are O(number of configurations), never a scan of the log.
 *
 * Rules enforced by jr__raft_change(): a leader accepts a change only once an entry of its own
 * term has committed (§4.1 bug fix: "a leader may not append a new configuration entry until it
 * has committed an entry from its current term"), and only while no change is uncommitted
 * (JR_EBUSY otherwise). §4.2.2: a leader that is removed keeps leading, without counting itself,
 * until the change commits, then steps down.
 */
#include <string.h>

#include "impl.h"
#include "util/alloc.h"

/* Makes c (interned; a reference is taken) the configuration in effect. */
static void set_conf(jr__raft *r, const jr__conf *c, uint64_t index)
{
    const jr__conf *old = r->conf;
    r->conf = jr__confs_ref(c);
    jr__confs_put(r->confs, old);
    r->conf_index = index;
}

int jr__memb_appended(jr__raft *r, uint64_t index, const uint8_t *data, uint32_t len)
{
    jr__conf c;
    if (jr__conf_decode(&c, data, len)) return JR_ECORRUPT;
    if (r->ncidx == r->ccap) {
        uint32_t cap = r->ccap ? r->ccap * 2 : 1; /* most logs hold one CONFIG entry */
        jr__cidx *p = jr__realloc(r->alloc, r->cidx, cap * sizeof *p);
        if (!p) return JR_ENOMEM;
        r->cidx = p;
        r->ccap = cap;
    }
    const jr__conf *ic = jr__confs_get(r->confs, &c);
    if (!ic) return JR_ENOMEM;
    r->cidx[r->ncidx++] = (jr__cidx){index, ic};
    set_conf(r, ic, index);
    if (r->role == ROLE_LEADER) jr__prog_rebuild(r);
    return 0;
}

void jr__memb_truncated(jr__raft *r, uint64_t index)
{
    while (r->ncidx && r->cidx[r->ncidx - 1].index >= index)
        jr__confs_put(r->confs, r->cidx[--r->ncidx].c);
    if (r->conf_index < index) return;
    if (r->ncidx)
        set_conf(r, r->cidx[r->ncidx - 1].c, r->cidx[r->ncidx - 1].index);
    else
        set_conf(r, r->snap_conf, r->snap_index);
}

void jr__memb_compacted(jr__raft *r)
{
    uint32_t k = 0;
    while (k < r->ncidx && r->cidx[k].index < r->log.first) jr__confs_put(r->confs, r->cidx[k++].c);
    if (k == 0) return;
    memmove(r->cidx, r->cidx + k, (r->ncidx - k) * sizeof *r->cidx);
    r->ncidx -= k;
    if (r->ncidx == 0) { /* an idle group's log is often compacted past its last one */
        jr__free(r->alloc, r->cidx);
        r->cidx = NULL;
        r->ccap = 0;
    }
}

void jr__memb_reset(jr__raft *r, const jr__conf *c, uint64_t index)
{
    while (r->ncidx) jr__confs_put(r->confs, r->cidx[--r->ncidx].c);
    set_conf(r, c, index);
}

const jr__conf *jr__memb_at(const jr__raft *r, uint64_t index)
{
    for (uint32_t k = r->ncidx; k > 0; k--)
        if (r->cidx[k - 1].index <= index) return r->cidx[k - 1].c;
    return r->snap_conf;
}

int jr__memb_pending(const jr__raft *r)
{
    return r->conf_index > r->commit;
}

void jr__memb_committed(jr__raft *r, uint64_t now)
{
    if (r->role == ROLE_LEADER && r->conf_index <= r->commit && !jr__raft_is_voter(r))
        jr__raft_stepdown(r, now);
    else if (r->role == ROLE_LEADER && r->damaged)
        jr__vouch_regrow(r, now); /* a damaged lone voter's group grew (vouch.c) */
}

/* Builds the configuration that `op` on `peer` makes of c; JR_EINVAL if impossible. */
static int apply_op(jr__conf *c, int op, jr__id peer)
{
    uint32_t i = 0;
    while (i < c->n && c->m[i].id != peer) i++;
    int found = i < c->n;
    switch (op) {
    case JR__ADD_OBSERVER:
        if (found || c->n >= JR__MAX_MEMBERS) return JR_EINVAL;
        c->m[c->n++] = (jr__member){peer, 0};
        return 0;
    case JR__PROMOTE:
        if (!found || c->m[i].voter) return JR_EINVAL;
        c->m[i].voter = 1;
        return 0;
    case JR__REMOVE:
        if (!found || (c->m[i].voter && jr__conf_voters(c) == 1)) return JR_EINVAL;
        memmove(&c->m[i], &c->m[i + 1], (c->n - i - 1) * sizeof c->m[0]);
        c->n--;
        return 0;
    default:
        return JR_EINVAL;
    }
}

int jr__raft_change(jr__raft *r, uint64_t now, int op, jr__id peer, uint64_t *index)
{
    if (!r->started || r->role != ROLE_LEADER) return JR_ENOTLEADER;
    if (r->transfer_to) return JR_ETRANSFER;
    if (!jr__raft_ready(r) || jr__memb_pending(r)) return JR_EBUSY;
    if (peer == 0) return JR_EINVAL;
    if (now > r->now) r->now = now;
    if (op == JR__REMOVE && r->removed[0]) { /* not an observer its stand-in needs (removed.c) */
        uint64_t need = jr__raft_stand_in_needs(r);
        for (uint32_t i = 0; need && i < r->conf->n; i++)
            if (r->conf->m[i].id == peer && (need >> i & 1)) return JR_EBUSY;
    }
    jr__conf c = *r->conf;
    int rc = apply_op(&c, op, peer);
    if (rc) return rc;
    rc = jr__prog_reserve(r, c.n);
    if (rc) return rc;
    uint8_t buf[16 + JR__MAX_MEMBERS * 9];
    size_t n = jr__conf_encode(&c, buf);
    rc = jr__repl_append_local(r, r->term, JR__ENTRY_CONFIG, buf, (uint32_t)n);
    if (rc) return rc;
    jr__quiet_leave(r, r->now);
    if (index) *index = r->log.last;
    r->send_pending = 1;
    jr__raft_notify(r);
    return 0;
}
