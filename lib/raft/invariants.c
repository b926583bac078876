/*
 * invariants — the checks of the invariants impl.h states for struct jr__raft, run at the end
 * of every call that changes a started group, in builds with JR_CHECK_INVARIANTS
 * (util/invariant.h); elsewhere jr__raft_check is empty.
 */
#include "impl.h"
#include "util/invariant.h"

void jr__raft_check(const jr__raft *r)
{
#if JR__INVARIANTS_ON
    if (!r->started) return;
    const jr__memlog *l = &r->log;
    JR__INVARIANT(l->first == l->base_index + 1 && l->first <= l->last + 1);
    JR__INVARIANT(r->snap_index <= r->commit && r->commit <= l->last);
    JR__INVARIANT(r->applied <= r->commit);
    JR__INVARIANT(l->base_index <= r->snap_index);
    JR__INVARIANT(r->durable <= l->last);
    JR__INVARIANT(r->conf && r->snap_conf);
    JR__INVARIANT(r->conf_index <= l->last);
    JR__INVARIANT(r->term >= jr__memlog_term(l, l->last));
    for (uint32_t i = 1; i < r->ncidx; i++) JR__INVARIANT(r->cidx[i - 1].index < r->cidx[i].index);
    if (r->role == ROLE_LEADER) {
        JR__INVARIANT(r->leader == r->cfg.self && r->vote == r->cfg.self);
        JR__INVARIANT(r->vouch == NULL);
        JR__INVARIANT(r->prog != NULL);
        /* contact received is never later than contact judged (which adds only grace) */
        for (uint32_t i = 0; i < r->conf->n; i++)
            JR__INVARIANT(r->prog[i].heard <= r->prog[i].last_contact &&
                          r->prog[i].last_contact <= r->now);
    }
    if (r->quiet) JR__INVARIANT(r->role == ROLE_LEADER || (r->role == ROLE_FOLLOWER && r->leader));
    if (r->quiet && r->role == ROLE_LEADER) JR__INVARIANT(r->commit_hb_at == UINT64_MAX);
    if (r->diverged) JR__INVARIANT(r->damaged);
#else
    (void)r;
#endif
}
