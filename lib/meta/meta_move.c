/*
 * meta_move — PEER_MOVE: evacuating a replica and cancelling a peer change (meta_move.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "meta/meta_move.h"
#include "util/alloc.h"

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
refuse(jr__meta_result *res, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->msg, sizeof res->msg, fmt, ap);
    va_end(ap);
    res->status = status;
    return 1;
}

static int in_list(const char *const *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0) return 1;
    return 0;
}

/* 1 if `peers` is `cur` with `gone` replaced by one name not in cur that ok() accepts. */
static int one_replaced(const char *const *cur, size_t ncur, const char *gone,
                        const char *const *peers, size_t npeers, const jr__meta_state *st,
                        const jr__meta_stream *within)
{
    if (npeers != ncur) return 0;
    size_t fresh = 0;
    for (size_t i = 0; i < npeers; i++) {
        if (strcmp(peers[i], gone) == 0) return 0;
        if (in_list(cur, ncur, peers[i])) continue;
        if (!jr__meta_server_find(st, peers[i])) return 0;
        if (within && !jr__meta_stream_has_peer(within, peers[i])) return 0;
        fresh++;
    }
    return fresh == 1;
}

/* 1 if every name of v is a removed server: the group has no member left. */
static int all_removed(const jr__meta_state *st, const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!jr__meta_server_removed(st, v[i])) return 0;
    return n > 0;
}

/* A reseed's peer set: n distinct servers the state knows, none of cur (for a consumer: peers
 * of its stream `within`). */
static int all_fresh(const char *const *cur, size_t ncur, const char *const *peers, size_t npeers,
                     const jr__meta_state *st, const jr__meta_stream *within)
{
    if (npeers != ncur) return 0;
    for (size_t i = 0; i < npeers; i++) {
        if (in_list(cur, ncur, peers[i]) || !jr__meta_server_find(st, peers[i])) return 0;
        if (within && !jr__meta_stream_has_peer(within, peers[i])) return 0;
        for (size_t k = 0; k < i; k++)
            if (strcmp(peers[k], peers[i]) == 0) return 0;
    }
    return 1;
}

int jr__meta_move_reseeds(const jr__meta_state *st, const jr__meta_stream *s,
                          const jr__meta_consumer *c)
{
    return c ? all_removed(st, c->peers, c->npeers) : all_removed(st, s->peers, s->npeers);
}

int jr__meta_move_validate(const jr__meta_state *st, const jr__meta_op *op, int need_peers,
                           jr__meta_result *res, jr__meta_stream **sp, jr__meta_consumer **cp)
{
    *sp = NULL;
    *cp = NULL;
    const char *cname = op->consumer && *op->consumer ? op->consumer : NULL;
    snprintf(res->stream, sizeof res->stream, "%s", op->stream ? op->stream : "");
    if (cname) snprintf(res->cname, sizeof res->cname, "%s", cname);
    jr__meta_stream *s =
        op->stream ? (jr__meta_stream *)jr__meta_stream_find(st, op->stream) : NULL;
    if (!s)
        return cname ? refuse(res, JR_ENOSTREAM, "stream not found")
                     : refuse(res, JR_ENOTFOUND, "stream '%s' not found",
                              op->stream ? op->stream : "");
    jr__meta_consumer *c = NULL;
    if (cname) {
        c = (jr__meta_consumer *)jr__meta_consumer_find(s, cname);
        if (!c) return refuse(res, JR_ENOTFOUND, "consumer not found");
    }
    *sp = s;
    *cp = c;
    const char *what = c ? "consumer" : "stream";
    const char *const *cur = c ? c->peers : s->peers;
    size_t ncur = c ? c->npeers : s->npeers;
    int busy = c ? jr__meta_consumer_busy(c) : jr__meta_stream_busy(s);
    if (op->action == JR__META_MOVE_CANCEL) {
        int has_origin = c ? c->origin != NULL : s->origin != NULL;
        if (!busy || !has_origin)
            return refuse(res, JR_ENOCHANGE, "%s reconfiguration not in progress", what);
        if (c) {
            if (c->origin->npeers != (size_t)jr__meta_consumer_replicas(s, &c->cfg->c))
                return refuse(res, JR_EBUSY,
                              "cluster member change is in progress (the consumer's replica "
                              "count changed since its move started: cancel its stream's)");
            for (size_t i = 0; i < c->origin->npeers; i++)
                if (!jr__meta_stream_has_peer(s, c->origin->peers[i]))
                    return refuse(res, JR_EBUSY,
                                  "cluster member change is in progress (the stream no longer "
                                  "holds the consumer's origin peer '%s')",
                                  c->origin->peers[i]);
        }
        return 0;
    }
    if (op->action != JR__META_MOVE_EVACUATE || !op->peer)
        return refuse(res, JR_EINVAL, "peer move: unknown kind %u", op->action);
    if (!in_list(cur, ncur, op->peer)) return refuse(res, JR_ENOTMEMBER, "peer not a member");
    if (busy || (c && jr__meta_stream_busy(s)))
        return refuse(res, JR_EBUSY,
                      "cluster member change is in progress (%s '%s' has not converged to its "
                      "peer set of meta index %llu yet)",
                      busy ? what : "stream", busy && c ? c->name : s->name,
                      (unsigned long long)(busy && c ? c->peers_at : s->peers_at));
    if (!op->npeers) return need_peers ? refuse(res, JR_EINVAL, "peers: missing") : 0;
    if (jr__meta_move_reseeds(st, s, c)) {
        if (!all_fresh(cur, ncur, op->peers, op->npeers, st, c ? s : NULL))
            return refuse(res, JR_EINVAL,
                          "peers: every peer was removed: must be %zu servers, none of them a "
                          "current peer",
                          ncur);
        return 0;
    }
    if (!one_replaced(cur, ncur, op->peer, op->peers, op->npeers, st, c ? s : NULL))
        return refuse(res, JR_EINVAL,
                      "peers: must be the current peers with '%s' replaced by one other server",
                      op->peer);
    return 0;
}

static int move_apply(jr__meta_state *st, uint64_t index, const jr__meta_op *op, jr__meta_stream *s,
                      jr__meta_consumer *c, jr__meta_result *res);

/* A stream config as s's with the replica count and placement of version o (a cancel). */
static int origin_config(const jr__meta_stream *s, const jr__meta_asgn *o, const jr_allocator *a,
                         jr__stream_cfg **out)
{
    jr_stream_config c = s->cfg->c;
    c.replicas = o->cfg->c.replicas;
    c.placement = o->cfg->c.placement;
    return jr__stream_cfg_new(&c, a, out, NULL, 0);
}

/* Consumers of s after a cancel: the stream's consumer follow rules, except that a consumer
 * whose own origin lies within the stream's new peers returns to it. */
static int cancel_consumers(jr__meta_state *st, jr__meta_stream *s, const jr__meta_asgn *to,
                            jr__meta_casgn ***out)
{
    int rc =
        jr__meta_consumers_follow_prepare(st, s, to->peers, to->npeers, to->cfg->c.replicas, out);
    if (rc || !s->nconsumers) return rc;
    if (!*out) return 0;
    for (size_t i = 0; i < s->nconsumers; i++) {
        const jr__meta_consumer *c = s->consumers[i];
        if (!c->origin) continue;
        /* only to an origin of the replica count the consumer has after the cancel (its
         * config may have changed since the origin was recorded) */
        size_t want = (*out)[i] ? (*out)[i]->npeers : c->npeers;
        if (c->origin->npeers != want) continue;
        int within = 1;
        for (size_t k = 0; within && k < c->origin->npeers; k++)
            within = in_list(to->peers, to->npeers, c->origin->peers[k]);
        if (!within) continue;
        int same = c->origin->npeers == c->npeers;
        for (size_t k = 0; same && k < c->npeers; k++)
            same = in_list(c->origin->peers, c->origin->npeers, c->peers[k]);
        jr__meta_casgn *v = NULL;
        if (!same) {
            v = jr__meta_casgn_new(st->alloc, jr__consumer_cfg_ref(c->cfg), c->origin->peers,
                                   c->origin->npeers);
            if (!v) {
                jr__consumer_cfg_free(c->cfg);
                jr__meta_consumers_follow_commit(st, s, *out, 0);
                *out = NULL;
                return JR_ENOMEM;
            }
        }
        jr__meta_casgn_put((*out)[i]);
        (*out)[i] = v;
    }
    return 0;
}

/* A reseed (every peer of the group was removed): the group starts afresh, empty, under a new
 * id on its new peers — bootstrapped by them (created = peers_at = index), converged, no
 * origin. For a stream, each of its consumers too (their peers were among the stream's). The
 * new ids are entered in the maps first, so running out of memory changes nothing. */
static int reseed_reserve(jr__meta_state *st, jr__meta_stream *s, jr__meta_consumer *c)
{
    size_t n = c ? 1 : 1 + s->nconsumers;
    if (st->next_group == 0 || st->next_group + n < st->next_group) return JR_ERANGE;
    for (size_t i = 0; i < n; i++) {
        uint64_t id = st->next_group + i;
        int rc = c || i ? jr__map_put(&st->by_cgroup, id, c ? c : s->consumers[i - 1])
                        : jr__map_put(&st->by_group, id, s);
        if (rc) {
            for (size_t k = 0; k < i; k++) {
                if (c || k)
                    jr__map_del(&st->by_cgroup, st->next_group + k);
                else
                    jr__map_del(&st->by_group, st->next_group + k);
            }
            return rc;
        }
    }
    return 0;
}

static void reseed_consumer(jr__meta_state *st, jr__meta_consumer *c, uint64_t index)
{
    jr__map_del(&st->by_cgroup, c->group);
    c->group = st->next_group++;
    c->created = c->peers_at = c->converged_at = c->updated = index;
    jr__meta_casgn_put(c->origin);
    c->origin = NULL;
}

static void reseed_commit(jr__meta_state *st, jr__meta_stream *s, jr__meta_consumer *c,
                          uint64_t index)
{
    if (c) {
        reseed_consumer(st, c, index);
        return;
    }
    jr__map_del(&st->by_group, s->group);
    s->group = st->next_group++;
    s->created = s->peers_at = s->converged_at = s->updated = index;
    s->floor_term = s->floor_commit_term = s->floor_commit = 0;
    jr__meta_asgn_put(s->origin);
    s->origin = NULL;
    for (size_t i = 0; i < s->nconsumers; i++) reseed_consumer(st, s->consumers[i], index);
}

int jr__meta_move_apply(jr__meta_state *st, uint64_t index, const jr__meta_op *op,
                        jr__meta_stream *s, jr__meta_consumer *c, jr__meta_result *res)
{
    int reseed = op->action == JR__META_MOVE_EVACUATE && jr__meta_move_reseeds(st, s, c);
    if (reseed) {
        int rc = reseed_reserve(st, s, c);
        if (rc == JR_ERANGE) {
            refuse(res, JR_ERANGE, "no group ids left");
            return 0;
        }
        if (rc) return rc;
        rc = move_apply(st, index, op, s, c, res);
        if (rc) { /* nothing changed: take the reserved ids out again */
            size_t n = c ? 1 : 1 + s->nconsumers;
            for (size_t i = 0; i < n; i++) {
                if (c || i)
                    jr__map_del(&st->by_cgroup, st->next_group + i);
                else
                    jr__map_del(&st->by_group, st->next_group + i);
            }
            return rc;
        }
        reseed_commit(st, s, c, index);
        res->group = c ? c->group : s->group;
        return 0;
    }
    return move_apply(st, index, op, s, c, res);
}

static int move_apply(jr__meta_state *st, uint64_t index, const jr__meta_op *op, jr__meta_stream *s,
                      jr__meta_consumer *c, jr__meta_result *res)
{
    const jr_allocator *a = st->alloc;
    if (c) {
        jr__meta_casgn *as;
        if (op->action == JR__META_MOVE_CANCEL)
            as = jr__meta_casgn_new(a, jr__consumer_cfg_ref(c->cfg), c->origin->peers,
                                    c->origin->npeers);
        else
            as = jr__meta_casgn_new(a, jr__consumer_cfg_ref(c->cfg), op->peers, op->npeers);
        if (!as) {
            jr__consumer_cfg_free(c->cfg);
            return JR_ENOMEM;
        }
        jr__meta_casgn *origin = c->origin;
        c->origin = NULL;
        jr__meta_consumer_install(c, as, index);
        if (op->action == JR__META_MOVE_CANCEL)
            jr__meta_casgn_put(origin); /* back where it started: no origin any more */
        else if (!c->origin)
            c->origin = origin;
        else
            jr__meta_casgn_put(origin);
        res->group = c->group;
        res->consumer = c;
        res->consumers_gone = 1; /* converge every replica: the consumer's are among them */
        res->changed = 1;
        return 0;
    }
    jr__stream_cfg *cfg;
    jr__meta_asgn *as;
    if (op->action == JR__META_MOVE_CANCEL) {
        int rc = origin_config(s, s->origin, a, &cfg);
        if (rc == JR_ENOMEM) return rc;
        if (rc) { /* the current config does not take the origin's replicas or placement */
            refuse(res, JR_EINVAL, "cannot return to the origin's replicas and placement: %s",
                   jr_strerror(rc));
            return 0;
        }
        as = jr__meta_asgn_new(a, cfg, s->origin->peers, s->origin->npeers);
    } else {
        cfg = jr__stream_cfg_ref(s->cfg);
        as = jr__meta_asgn_new(a, cfg, op->peers, op->npeers);
    }
    if (!as) {
        jr__stream_cfg_free(cfg);
        return JR_ENOMEM;
    }
    jr__meta_casgn **follow = NULL;
    int rc = op->action == JR__META_MOVE_CANCEL
                 ? cancel_consumers(st, s, as, &follow)
                 : jr__meta_consumers_follow_prepare(st, s, as->peers, as->npeers,
                                                     as->cfg->c.replicas, &follow);
    if (rc) {
        jr__meta_asgn_put(as);
        return rc;
    }
    jr__meta_asgn *origin = s->origin;
    s->origin = NULL;
    jr__meta_stream_install(st, s, as, index);
    if (op->action == JR__META_MOVE_CANCEL) {
        jr__meta_asgn_put(origin);
        jr__meta_asgn_put(s->origin); /* install saw a change from a converged state: none */
        s->origin = NULL;
    } else if (!s->origin) {
        s->origin = origin;
    } else {
        jr__meta_asgn_put(origin);
    }
    /* A cancel's consumers keep no origin: those mid change lose theirs here, and those that
     * follow_commit finds converged (it records one) lose it below. */
    if (follow && op->action == JR__META_MOVE_CANCEL) {
        for (size_t i = 0; i < s->nconsumers; i++) {
            jr__meta_consumer *k = s->consumers[i];
            if (!follow[i]) continue;
            jr__meta_casgn_put(k->origin);
            k->origin = NULL;
        }
    }
    int cancel = op->action == JR__META_MOVE_CANCEL;
    if (follow) {
        jr__meta_consumers_follow_commit(st, s, follow, index);
        if (cancel)
            for (size_t i = 0; i < s->nconsumers; i++)
                if (s->consumers[i]->peers_at == index && s->consumers[i]->origin) {
                    jr__meta_casgn_put(s->consumers[i]->origin);
                    s->consumers[i]->origin = NULL;
                }
    }
    res->assignment = s;
    res->group = s->group;
    res->consumers_gone = 1;
    res->changed = 1;
    return 0;
}
