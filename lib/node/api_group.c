/*
 * api_group — the public raw-group API (jetraft.h "Raw Raft groups").
 *
 * Every function validates its handle, brackets its work with jr__node_enter/leave, and never
 * flushes: work it queues is flushed by the tick it requests (so a burst of proposals shares one
 * WAL write and one frame per peer) and its callback can only run later, inside jr_node_recv or
 * jr_node_tick. Failures are returned, never reported through the callback.
 */
#include <string.h>

#include "node/node.h"
#include "util/abi.h"
#include "util/alloc.h"
#include "util/deadline.h"

void jr_group_config_init_size(jr_group_config *cfg, size_t size)
{
    jr_group_config d;
    memset(&d, 0, sizeof d);
    d.snapshot_entries = 8192;
    jr__abi_init(cfg, size, &d, sizeof d);
}

int jr_group_open(jr_node *n, const jr_group_config *cfg, jr_group **out)
{
    if (!out) return JR_EINVAL;
    *out = NULL;
    if (!n || !cfg || cfg->size < offsetof(jr_group_config, fsm) + sizeof(void *)) return JR_EINVAL;
    if (n->closing) return JR_ECLOSED;
    if (cfg->id > JR_GROUP_ID_HOST_MAX)
        return jr__node_err(n, JR_EINVAL, "group id above JR_GROUP_ID_HOST_MAX is reserved");
    /* the join floor, if the caller's struct has it and set it */
    jr__join_floor floor = {0, 0, 0};
    if (cfg->size >= offsetof(jr_group_config, join) + sizeof cfg->join && cfg->join) {
        jr_group_floor j = {0};
        if (jr__abi_read(&j, sizeof j, cfg->join) != 0)
            return jr__node_err(n, JR_EINVAL, "join: size 0");
        floor = (jr__join_floor){j.term, j.commit_term, j.commit_index};
    }
    if ((floor.last_index && !floor.last_term) || floor.last_term > floor.term)
        return jr__node_err(n, JR_EINVAL,
                            "a join floor needs commit_term with commit_index, "
                            "and a term no older than commit_term");
    jr__node_enter(n);
    int rc = jr__group_create(n, cfg, floor.term || floor.last_index ? &floor : NULL, 0, out);
    if (rc == 0) jr__node_want_tick(n);
    jr__node_leave(n);
    return rc;
}

void jr_group_close(jr_group *g)
{
    if (!g || g->closed) return;
    jr_node *n = g->node;
    if (n->closing) return; /* the node's close takes care of it */
    jr__node_enter(n);
    jr__group_detach(g, JR_ECLOSED);
    jr__node_want_tick(n);
    jr__node_leave(n);
}

jr_group *jr_node_group(jr_node *n, uint64_t id)
{
    if (!n || n->closing) return NULL;
    jr_group *g = jr__map_get(&n->groups, id);
    return g && !g->closed ? g : NULL;
}

/* Common checks of the request functions. */
static int usable(const jr_group *g)
{
    if (!g) return JR_EINVAL;
    if (g->closed || g->node->closing) return JR_ECLOSED;
    if (g->in_fsm) return JR_EMISUSE; /* from inside this group's own fsm callback */
    return 0;
}

int jr_group_propose(jr_group *g, const void *data, size_t len, jr_propose_cb cb, void *arg)
{
    int rc = usable(g);
    if (rc != 0) return rc;
    if (!data && len) return JR_EINVAL;
    if (jr__group_damaged(g)) return JR_EDAMAGED;
    jr_node *n = g->node;
    jr__node_enter(n);
    uint64_t index, term;
    rc = jr__group_propose(g, data, len, cb, arg, &index, &term);
    if (rc != 0)
        jr__node_err(n, rc, "group %llu: propose: %s", (unsigned long long)g->id, jr_strerror(rc));
    jr__node_leave(n);
    return rc;
}

const char *jr_group_leader(const jr_group *g)
{
    if (!g || g->closed) return NULL;
    jr__id id = jr__raft_leader(g->raft);
    if (!id) return NULL;
    jr__peer *p = jr__peer_find(g->node, id);
    return p ? p->name : NULL;
}

int jr_group_transfer(jr_group *g, const char *to, jr_done_cb cb, void *arg)
{
    int rc = usable(g);
    if (rc != 0) return rc;
    jr_node *n = g->node;
    jr__id id = 0;
    if (to) {
        jr__peer *p = jr__peer_find_name(n, to);
        if (!p) return jr__node_err(n, JR_ENOTFOUND, "transfer: '%s' is not a known server", to);
        id = p->id;
    }
    if (g->transfer) return jr__node_err(n, JR_ETRANSFER, "a transfer is already under way");
    jr__node_enter(n);
    jr__op *op = jr__op_get(n);
    if (!op) {
        rc = jr__node_err(n, JR_ENOMEM, "out of memory");
        goto out;
    }
    op->kind = JR__OP_DONE;
    op->cb.done = cb;
    op->arg = arg;
    if (id == n->self && jr__raft_role(g->raft) == JR_LEADER) {
        jr__op_complete(n, op, 0, 0); /* already there; reported at the next tick */
        jr__node_want_tick(n);
        goto out;
    }
    rc = jr__raft_transfer(g->raft, n->now, id);
    if (rc != 0) {
        jr__op_put(n, op);
        if (rc == JR_ENOTVOTER)
            jr__node_err(n, rc, "group %llu: transfer: %s is not a caught-up voter",
                         (unsigned long long)g->id, to ? to : "there");
        else
            jr__node_err(n, rc, "group %llu: transfer: %s", (unsigned long long)g->id,
                         jr_strerror(rc));
        goto out;
    }
    g->transfer = op;
    g->transfer_to = id;
    g->op_deadline = jr__deadline(n->now, 2 * n->election_ns);
    jr__group_rearm(g);
    jr__group_ready(g);
    jr__node_want_tick(n);
out:
    jr__node_leave(n);
    return rc;
}

int jr_group_rescue(jr_group *g, const char *gone)
{
    int rc = usable(g);
    if (rc != 0) return rc;
    jr_node *n = g->node;
    if (!gone) return JR_EINVAL;
    jr__peer *p = jr__peer_find_name(n, gone);
    if (!p) return jr__node_err(n, JR_ENOTFOUND, "rescue: '%s' is not a known server", gone);
    if (p->id == n->self) return jr__node_err(n, JR_EINVAL, "rescue: '%s' is this server", gone);
    jr__node_enter(n);
    rc = jr__raft_vouch_gone(g->raft, p->id, n->now);
    if (rc == 0) {
        jr__node_log(n, JR_LOG_WARN,
                     "group %llu: RESCUE: '%s' is taken to hold nothing of the group; what only "
                     "it held is lost, and if it is alive two leaders may share a term",
                     (unsigned long long)g->id, gone);
        jr__group_ready(g);
        jr__node_want_tick(n);
    } else if (rc == JR_ENOCHANGE) {
        jr__node_err(n, rc, "group %llu: rescue: this replica does not wait for '%s'",
                     (unsigned long long)g->id, gone);
    } else if (rc == JR_ENOTMEMBER) {
        jr__node_err(n, rc, "group %llu: rescue: '%s' is not a member it waits for",
                     (unsigned long long)g->id, gone);
    }
    jr__node_leave(n);
    return rc;
}

/* Every open group of n that waits for server `gone` stops waiting for it (the core takes it
 * as holding nothing of the group). Returns how many did. */
static size_t rescue_all(jr_node *n, jr__id gone)
{
    size_t rescued = 0;
    for (size_t i = 0; i < n->groups.cap; i++) {
        jr_group *g = n->groups.slots[i].val;
        if (!n->groups.slots[i].key || g->closed || jr__raft_vouch_gone(g->raft, gone, n->now) != 0)
            continue;
        rescued++;
        jr__group_ready(g);
    }
    return rescued;
}

/* A committed server removal (jr_server_peer_remove) is the operator's statement that the
 * server is gone for good, so it counts as jr_node_rescue's declaration without the call. It
 * is safe where the operator's rescue of a server that is merely unreachable is not: once the
 * removal is committed the server refuses to take part as soon as it learns of it and every
 * peer that applied it refuses its frames, so its vouch answer, which an unvouched replica
 * waits for, may never come. Not waiting for it changes the outcome only if it held entries
 * that this replica acknowledged and then silently lost (an undetected rollback of its disk):
 * the removed server's loss and that rollback are two faults in one group, outside the fault
 * model. Without a disk fault the replica's log and vote are intact, and vouching adds
 * nothing. A removed server that is still alive may answer (before it learns of its removal),
 * but the declaration replaces its answer: with the entries it alone held as the bar, no
 * remaining member might be elected. */
int jr__node_peer_gone(jr_node *n, const char *name)
{
    int rc = jr__node_peer_learn(n, name);
    if (rc) return rc;
    jr__peer *p = jr__peer_find_name(n, name);
    if (!p || p->id == n->self || p->gone) return 0;
    p->gone = 1;
    size_t rescued = rescue_all(n, p->id);
    if (rescued) {
        jr__node_log(n, JR_LOG_INFO,
                     "server '%s' was removed from the cluster: %zu groups no longer wait for "
                     "its answer",
                     name, rescued);
        jr__node_want_tick(n);
    }
    return 0;
}

int jr_node_rescue(jr_node *n, const char *gone)
{
    if (!n || !gone) return JR_EINVAL;
    if (n->closing) return JR_ECLOSED;
    jr__peer *p = jr__peer_find_name(n, gone);
    if (!p) return jr__node_err(n, JR_ENOTFOUND, "rescue: '%s' is not a known server", gone);
    if (p->id == n->self) return jr__node_err(n, JR_EINVAL, "rescue: '%s' is this server", gone);
    uint8_t k = 0;
    while (k < n->nrescued && n->rescued[k] != p->id) k++;
    jr__node_enter(n);
    if (k == n->nrescued) {
        if (n->nrescued == sizeof n->rescued / sizeof n->rescued[0]) {
            int rc = jr__node_err(n, JR_ELIMIT, "rescue: too many servers declared gone");
            jr__node_leave(n);
            return rc;
        }
        /* durable before it takes effect: a restart keeps it (recover.c) */
        n->rescued[n->nrescued++] = p->id;
        int rc = jr__rescued_write(n);
        if (rc != 0) {
            n->nrescued--;
            jr__node_leave(n);
            return rc;
        }
    }
    size_t rescued = rescue_all(n, p->id);
    jr__node_log(n, JR_LOG_WARN,
                 "RESCUE: server '%s' is taken to hold nothing (%zu groups waited for it); what "
                 "only it held is lost, and if it is alive two leaders may share a term",
                 gone, rescued);
    jr__node_want_tick(n);
    jr__node_leave(n);
    return rescued ? 0 : JR_ENOCHANGE;
}

static int change(jr_group *g, int kind, const char *peer, jr_done_cb cb, void *arg)
{
    int rc = usable(g);
    if (rc != 0) return rc;
    jr_node *n = g->node;
    jr__peer *p = jr__peer_find_name(n, peer);
    if (!p)
        return jr__node_err(n, JR_ENOTFOUND, "'%s' is not a known server", peer ? peer : "(null)");
    jr__node_enter(n);
    jr__op *op = jr__op_get(n);
    if (!op) {
        rc = jr__node_err(n, JR_ENOMEM, "out of memory");
        goto out;
    }
    uint64_t index = 0;
    rc = jr__raft_change(g->raft, n->now, kind, p->id, &index);
    if (rc != 0) {
        jr__op_put(n, op);
        jr__node_err(n, rc, "group %llu: membership change for %s: %s", (unsigned long long)g->id,
                     p->name, jr_strerror(rc));
        goto out;
    }
    op->kind = JR__OP_DONE;
    op->cb.done = cb;
    op->arg = arg;
    op->index = index;
    op->term = jr__raft_term(g->raft);
    jr__opq_push(&g->pending, op);
    jr__group_ready(g);
    jr__node_want_tick(n);
out:
    jr__node_leave(n);
    return rc;
}

int jr_group_add_observer(jr_group *g, const char *peer, jr_done_cb cb, void *arg)
{
    return change(g, JR__ADD_OBSERVER, peer, cb, arg);
}

int jr_group_promote(jr_group *g, const char *peer, jr_done_cb cb, void *arg)
{
    return change(g, JR__PROMOTE, peer, cb, arg);
}

int jr_group_remove(jr_group *g, const char *peer, jr_done_cb cb, void *arg)
{
    return change(g, JR__REMOVE, peer, cb, arg);
}

int jr_group_status_get(const jr_group *g, jr_group_status *out)
{
    if (!g || !out || out->size == 0) return JR_EINVAL;
    const jr__raft *r = g->raft;
    jr_group_status s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.id = g->id;
    s.role = jr__raft_role(r);
    s.term = jr__raft_term(r);
    s.commit_index = jr__raft_commit_index(r);
    s.applied_index = g->applied;
    s.last_index = jr__raft_last_index(r);
    s.snapshot_index = g->snap_index;
    s.npeers = jr__raft_conf(r)->n;
    s.damaged = jr__group_lost(g);
    s.fsm_failed = g->fsm_failed;
    s.unvouched = jr__raft_unvouched(r);
    size_t sz = out->size < sizeof s ? out->size : sizeof s;
    memcpy(out, &s, sz);
    out->size = sz;
    return 0;
}

int jr_group_floor_get(const jr_group *g, jr_group_floor *out)
{
    if (!g || !out || jr__abi_size(out) < sizeof out->size) return JR_EINVAL;
    jr__join_floor f;
    if (g->closed || jr__raft_role(g->raft) != JR_LEADER || jr__group_floor(g, &f) != 0)
        return JR_ENOTLEADER;
    jr_group_floor fl = {sizeof fl, f.term, f.last_term, f.last_index};
    jr__abi_write(out, &fl, sizeof fl);
    return 0;
}

int jr_group_peer(const jr_group *g, size_t i, jr_peer_status *out)
{
    if (!g || !out || out->size == 0) return JR_EINVAL;
    const jr__raft *r = g->raft;
    const jr__conf *c = jr__raft_conf(r);
    if (i >= c->n) return JR_ERANGE;
    jr_node *n = g->node;
    jr__peer *p = jr__peer_find(n, c->m[i].id);
    jr_peer_status s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.name = p ? p->name : NULL;
    s.voter = c->m[i].voter;
    s.last_seen_ns = UINT64_MAX;
    if (c->m[i].id == n->self) {
        s.damaged = jr__group_lost(g);
        s.fsm_failed = jr__group_fsm(g) != JR__FSM_WHOLE;
        s.fsm_rebuilding = jr__group_fsm(g) == JR__FSM_REBUILDING;
        s.unvouched = jr__raft_unvouched(r);
    } else {
        s.damaged = jr__group_peer_damaged(g, c->m[i].id);
    }
    jr__progress pr;
    if (jr__raft_role(r) == JR_LEADER && jr__raft_progress(r, (uint32_t)i, &pr) == 0) {
        /* contact received (quiet: node-level), never check-quorum's grace */
        int closed;
        uint64_t seen = jr__live_contact(g, &pr, &closed);
        uint64_t last = jr__raft_last_index(r);
        uint64_t now = n->host.now(n->host.ctx);
        s.match_index = pr.match;
        s.lag = last > pr.match ? last - pr.match : 0;
        if (pr.id == n->self) {
            s.last_seen_ns = 0;
            s.current = 1;
        } else {
            s.unvouched = pr.unvouched;
            /* its node's word on its state machine (fsmreport.c), renewed every heartbeat
             * interval while not whole: one older than an election timeout is none */
            if (pr.fsm != JR__FSM_WHOLE &&
                (now <= pr.fsm_at || now - pr.fsm_at <= n->election_ns)) {
                s.fsm_failed = 1;
                s.fsm_rebuilding = pr.fsm == JR__FSM_REBUILDING;
            }
        }
        if (pr.id != n->self && seen) {
            s.last_seen_ns = now > seen ? now - seen : 0;
            /* unconfirmed: an answer below its match (late, or a restart whose VOUCH has not
             * come) not yet followed by an acknowledgement of our log of then; not current,
             * not shown as restarted either; closed: its replica closed (the news woke this
             * quiet leader) and has not answered since */
            s.current = s.last_seen_ns <= n->election_ns && pr.match >= jr__raft_commit_index(r) &&
                        !pr.unvouched && !pr.unconfirmed && !closed;
        }
    }
    if (s.damaged || s.fsm_failed || s.unvouched) s.current = 0;
    size_t sz = out->size < sizeof s ? out->size : sizeof s;
    memcpy(out, &s, sz);
    out->size = sz;
    return 0;
}
