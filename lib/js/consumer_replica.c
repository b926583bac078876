/*
 * consumer_replica — local consumer replicas: each consumer assignment naming this server gets
 * a Raft group (the consumer's group id, its peers a subset of its stream's) whose state
 * machine is lib/consumer's jr__cstate, applied from batches of consumer records
 * (consumer/op.h) and snapshotted whole (a consumer's state is small: its pending acks).
 *
 * The original peers bootstrap the group with the creation's voters (and so does an original
 * peer that the first, unconverged peer change dropped: jr__crep_origin_peer); a server new to
 * the consumer after a change joins the group its leader grows (consumer_peers.c). Its durable
 * state is the group's log and snapshots in the node's WAL (no store of its own).
 *
 * Invariants: a replica is on js->crep_list and in js->creps under its group id from
 * jr__crep_create until jr__crep_leave (or close); r->as holds one reference to the
 * assignment version it converged to; a replica whose state machine failed (r->failed) applies
 * nothing more until the meta timer's convergence rebuilds it (jr__crep_rebuild).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "consumer/op.h"
#include "js/js.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "util/deadline.h"

jr__crep *jr__crep_find(jr__js *js, uint64_t group)
{
    return group ? jr__map_get(&js->creps, group) : NULL;
}

jr__peer *jr__crep_leader_peer(jr__js *js, uint64_t group)
{
    jr__crep *r = jr__crep_find(js, group);
    if (r && r->g && !jr__group_closed(r->g)) {
        jr__id id = jr__raft_leader(jr__group_consensus(r->g));
        return id ? jr__peer_find(js->n, id) : NULL;
    }
    return jr__map_get(&js->hints, group);
}

uint64_t jr__crep_num_pending(jr__crep *r, uint64_t from)
{
    jr__srep *s = jr__srep_find(r->js, r->stream_group);
    if (!s || !s->fsm) return 0;
    const jr__store *st = jr__stream_fsm_store(s->fsm);
    const char *one = NULL;
    size_t nf = 0;
    const char *const *fs = jr__consumer_filters(&r->as->cfg->c, &one, &nf);
    if (nf == 0) return jr__store_num_pending(st, from, NULL, 0);
    uint64_t n = 0; /* filters do not overlap each other (validated): their counts add up */
    for (size_t i = 0; i < nf; i++) n += jr__store_num_pending(st, from, fs[i], strlen(fs[i]));
    return n;
}

void jr__crep_group_name(const jr__crep *r, char *buf, size_t cap)
{
    static const char b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    uint64_t h = jr__xxh3(r->name, strlen(r->name)) ^ r->group;
    char rev[12];
    size_t k = 0;
    for (; k < 8; k++, h /= 62) rev[k] = b62[h % 62];
    rev[k] = 0;
    snprintf(buf, cap, "C-R%zu%c-%s", r->as->npeers, r->as->cfg->c.mem_storage ? 'M' : 'F', rev);
}

int jr__crep_is_leader(const jr__crep *r)
{
    return r && r->g && !r->failed && !jr__group_closed(r->g) &&
           jr__raft_role(jr__group_consensus(r->g)) == JR_LEADER;
}

/* The consumer's policy (ack, ack wait, backoff, max deliver) as its state machine takes it. */
static void policy_of(const jr_consumer_config *c, jr__cpolicy *p)
{
    memset(p, 0, sizeof *p);
    p->ack_policy = c->ack_policy;
    p->ack_wait_ns = c->ack_wait_ns;
    p->backoff_ns = c->backoff_ns;
    p->nbackoff = c->nbackoff;
    p->max_deliver = c->max_deliver;
}

/* The state machine ------------------------------------------------------------------------*/

void jr__crep_failed(jr__crep *r, int rc, const char *what, uint64_t index)
{
    if (!r->failed) {
        jr__node_log(r->js->n, JR_LOG_ERROR,
                     "consumer '%s > %s': %s at %" PRIu64 ": %s; the replica is rebuilt", r->stream,
                     r->name, what, index, jr_strerror(rc));
        r->failed_at = jr__node_now(r->js->n);
    }
    r->failed = rc;
    r->js->converge_failed = 1; /* the meta timer's convergence rebuilds it (jr__crep_rebuild) */
    if (r->g) jr__group_set_fsm_state(r->g, JR__FSM_FAILED); /* its leader is told */
}

static void crep_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    jr__crep *r = ctx;
    if (r->failed) return;
    uint64_t term = 0;
    jr__entry e;
    if (r->g && jr__raft_entry(jr__group_consensus(r->g), index, &e) == 0) term = e.term;
    jr__clead_entry_start(r, index, term);
    jr__cop_iter it;
    int rc = jr__cop_iter_init(&it, data, len);
    if (rc == 0) rc = jr__cstate_reserve_entry(&r->st, &it); /* the entry applies whole */
    if (rc != 0) {
        jr__crep_failed(r, rc, rc == JR_ENOMEM ? "no memory for entry" : "entry does not decode",
                        index);
        jr__clead_entry_end(r);
        return;
    }
    for (uint32_t i = 0;; i++) {
        jr__crec rec;
        int got = 0;
        rc = jr__cop_next(&it, &rec, &got);
        if (rc != 0 || !got) break;
        jr__capply out;
        if (rec.type == JR__COP_ACK) jr__clead_before_ack(r, &rec);
        rc = jr__cstate_apply(&r->st, &rec, &out);
        if (rc != 0) break;
        if (out.acked_from)
            jr__retention_acked(r->js, r->stream_group, out.acked_from, out.acked_to);
        jr__clead_applied(r, &rec, &out, i);
    }
    if (rc != 0) jr__crep_failed(r, rc, "cannot apply entry", index);
    r->applied = index;
    jr__clead_entry_end(r);
}

static int crep_snapshot(void *ctx, jr_snapshot_writer *w)
{
    jr__crep *r = ctx;
    if (r->failed) return JR_EBUSY;
    jr__buf *b = &r->js->scratch2;
    jr__buf_reset(b);
    int rc = jr__cstate_snapshot(&r->st, b);
    if (rc == 0) rc = jr_snapshot_write(w, b->data, b->len);
    return rc;
}

static int crep_restore(void *ctx, uint64_t gindex, const void *data, size_t len)
{
    jr__crep *r = ctx;
    int rc = jr__cstate_restore(&r->st, data, len);
    if (rc != 0) {
        jr__crep_failed(r, rc, "snapshot not restored", gindex);
        return rc;
    }
    r->applied = gindex;
    return 0;
}

/* Lifecycle --------------------------------------------------------------------------------*/

static void take_assignment(jr__crep *r, const jr__meta_consumer *c)
{
    jr__meta_casgn *old = r->as;
    r->as = jr__meta_casgn_ref(c->asgn);
    jr__meta_casgn_put(old);
    r->name = r->as->cfg->c.name;
    r->updated = c->updated;
    r->created_ns = c->created_ns;
}

static void crep_free(jr__crep *r)
{
    jr__cstate_free(&r->st);
    jr__meta_casgn_put(r->as);
    jr__free(r->js->alloc, r->stream);
    jr__free(r->js->alloc, r);
}

static void crep_unlink(jr__crep *r)
{
    jr__js *js = r->js;
    jr__map_del(&js->creps, r->group);
    jr__crep *h = jr__map_get(&js->cons_by_stream, r->stream_group);
    if (h == r) {
        if (r->sib)
            jr__map_put(&js->cons_by_stream, r->stream_group, r->sib); /* replaces: no memory */
        else
            jr__map_del(&js->cons_by_stream, r->stream_group);
    } else {
        for (; h && h->sib; h = h->sib) {
            if (h->sib == r) {
                h->sib = r->sib;
                break;
            }
        }
    }
    for (jr__crep **pp = &js->crep_list; *pp; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    }
}

int jr__crep_origin_peer(const jr__js *js, const jr__meta_consumer *c)
{
    jr__origin_facts f = {c->origin ? c->origin->peers : NULL,
                          c->origin ? c->origin->npeers : 0,
                          c->created,
                          c->converged_at,
                          jr__meta_consumer_busy(c),
                          jr__meta_consumer_has_peer(c, js->name)};
    return jr__js_origin_peer(js, &f);
}

/* The voters this server's replica of c bootstraps its group with (NULL: it joins), as a stream
 * replica's (stream_replica.c boot_peers): c's peers while they are its creation's, the
 * creation's for an original peer the first change drops (jr__crep_origin_peer) unless that
 * is a lone one that lost its WAL (jr__js_origin_lost). A server the current peer set names
 * joins after any change. */
static const char *const *boot_peers(jr__js *js, const jr__meta_consumer *c, size_t *n)
{
    if (jr__meta_consumer_bootstraps(c)) {
        *n = c->npeers;
        return c->peers;
    }
    if (jr__crep_origin_peer(js, c) &&
        !jr__js_origin_lost(js, c->origin->npeers, c->created, c->group)) {
        *n = c->origin->npeers;
        return c->origin->peers;
    }
    *n = 0;
    return NULL;
}

int jr__crep_create(jr__js *js, const jr__meta_consumer *c)
{
    jr_node *n = js->n;
    if (jr__node_group_retiring(n, c->group)) return JR_EBUSY;
    jr__crep *r = jr__calloc(js->alloc, 1, sizeof *r);
    if (!r) return JR_ENOMEM;
    r->js = js;
    r->group = c->group;
    r->stream_group = c->stream->group;
    size_t sl = strlen(c->stream->name);
    r->stream = jr__malloc(js->alloc, sl + 1);
    if (!r->stream) {
        jr__free(js->alloc, r);
        return JR_ENOMEM;
    }
    memcpy(r->stream, c->stream->name, sl + 1);
    take_assignment(r, c);
    jr__cpolicy pol;
    policy_of(&r->as->cfg->c, &pol);
    jr__js_timer_init(&r->timer, jr__clead_timer);
    int rc = jr__cstate_init(&r->st, js->alloc, &pol);
    if (rc == 0) rc = jr__map_put(&js->creps, r->group, r);
    if (rc == 0) {
        r->sib = jr__map_get(&js->cons_by_stream, r->stream_group);
        rc = jr__map_put(&js->cons_by_stream, r->stream_group, r);
        if (rc != 0) jr__map_del(&js->creps, r->group);
    }
    if (rc != 0) {
        crep_free(r);
        return rc;
    }
    r->next = js->crep_list;
    js->crep_list = r;
    jr_fsm fsm = {JR_FSM_VERSION, r, crep_apply, crep_snapshot, crep_restore};
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = c->group;
    size_t nboot;
    const char *const *boot = boot_peers(js, c, &nboot);
    if (boot) { /* else it joins the group its leader grows */
        gc.voters = boot;
        gc.nvoters = nboot;
    }
    gc.fsm = &fsm;
    gc.snapshot_entries = js->snapshot_entries;
    jr__join_floor floor;
    memset(&floor, 0, sizeof floor);
    /* as a stream replica's (jr__srep_create): new here only as an original peer of a consumer
     * created in this life */
    int fresh = boot && jr__mnode_after_restart(js, c->created);
    rc = jr__group_create(n, &gc, &floor, fresh, &r->g);
    if (rc != 0) {
        jr__node_log(n, JR_LOG_ERROR, "consumer '%s > %s': cannot open group %" PRIu64 ": %s",
                     r->stream, r->name, c->group, jr_strerror(rc));
        r->g = NULL;
        crep_unlink(r);
        crep_free(r);
        return rc;
    }
    jr__map_del(&js->hints, r->group);
    /* as a stream replica's: no vote until the meta state is known current */
    if (!jr__mnode_caught_up(js)) jr__group_hold(r->g, 1);
    /* a rebuilt replica is whole once its group restored and re-applied (or failed again) */
    jr__group_set_fsm_state(r->g, r->failed ? JR__FSM_FAILED : JR__FSM_WHOLE);
    return 0;
}

void jr__crep_update(jr__crep *r, const jr__meta_consumer *c)
{
    take_assignment(r, c);
    jr__cpolicy pol;
    policy_of(&r->as->cfg->c, &pol);
    if (jr__cstate_set_policy(&r->st, &pol) != 0)
        jr__crep_failed(r, JR_ENOMEM, "cannot take its config", 0);
    if (r->lead) {
        r->lead->duty_at = 0; /* its peers may have changed */
        jr__clead_dirty(r);   /* and its limits, filters or pause */
    }
}

void jr__crep_leave(jr__crep *r, int purge)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    crep_unlink(r);
    jr__clead_stop(r, JR_ENOTFOUND);
    if (r->g) jr__group_detach(r->g, JR_ECLOSED);
    if (purge) {
        int rc = jr__node_group_destroy(n, r->group);
        if (rc != 0)
            jr__node_log(n, JR_LOG_WARN,
                         "consumer '%s > %s': its group %" PRIu64
                         " could not be released (%s): its log stays in the WAL until a restart",
                         r->stream, r->name, r->group, jr_strerror(rc));
    }
    crep_free(r);
}

int jr__crep_rebuild(jr__crep *r)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    const jr__meta_consumer *c = jr__meta_consumer_by_group(&js->st, r->group);
    /* a committed entry of a newer release fails every replica alike: it waits for an upgrade */
    if (!r->failed || r->failed == JR_EVERSION || js->closing || !c ||
        !jr__meta_consumer_has_peer(c, js->name) || !r->g || jr__group_closed(r->g))
        return JR_EINVAL;
    if (jr__node_now(n) < jr__deadline(r->failed_at, js->election_ns)) return JR_EBUSY;
    jr__node_log(n, JR_LOG_WARN,
                 "consumer '%s > %s': rebuilding its replica from its group's snapshot and log",
                 r->stream, r->name);
    crep_unlink(r);
    jr__clead_stop(r, JR_ELEADERLOST);
    jr__group_detach(r->g, JR_ECLOSED); /* dormant: reopened with the new replica's fsm */
    crep_free(r);
    return jr__crep_create(js, c);
}

void jr__crep_close_all(jr__js *js)
{
    while (js->crep_list) {
        jr__crep *r = js->crep_list;
        crep_unlink(r);
        jr__clead_stop(r, JR_ECLOSED);
        crep_free(r);
    }
}
