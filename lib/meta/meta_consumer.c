/*
 * meta_consumer — the consumer assignments of the meta state (meta_state.h): lookups, the
 * decisions of CONSUMER_ADD and CONSUMER_DELETE, and their apply.
 *
 * A consumer belongs to one stream and lives on a subset of its peers; its Raft group id comes
 * from the same counter as the streams' (next_group), so one id names one group of either kind
 * for the cluster's lifetime. As for streams, every decision is made from the state and the op
 * alone (identical on every replica) before anything is allocated.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "meta/meta_state.h"
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
    return status;
}

/* ---------------------------------------------------------------------------------------------
 * Objects
 */
static jr__meta_casgn *casgn_new(const jr_allocator *a, jr__consumer_cfg *cfg,
                                 const jr__meta_name *peers, size_t n)
{
    const char **pv;
    jr__meta_casgn *as = jr__meta_peers_block(a, sizeof(jr__meta_casgn), peers, n, &pv);
    if (!as) return NULL;
    as->refs = 1;
    as->alloc = a;
    as->cfg = cfg;
    as->peers = pv;
    as->npeers = n;
    return as;
}

jr__meta_casgn *jr__meta_casgn_ref(jr__meta_casgn *as)
{
    as->refs++;
    return as;
}

void jr__meta_casgn_put(jr__meta_casgn *as)
{
    if (!as || --as->refs) return;
    jr__consumer_cfg_free(as->cfg);
    jr__free(as->alloc, as);
}

static void consumer_set(jr__meta_consumer *c, jr__meta_casgn *as)
{
    c->asgn = as;
    c->cfg = as->cfg;
    c->name = as->cfg->c.name;
    c->peers = as->peers;
    c->npeers = as->npeers;
}

jr__meta_consumer *jr__meta_consumer_new(const jr_allocator *a, jr__consumer_cfg *cfg,
                                         const jr__meta_name *peers, size_t npeers)
{
    jr__meta_consumer *c = jr__calloc(a, 1, sizeof *c);
    if (!c) return NULL;
    jr__meta_casgn *as = casgn_new(a, cfg, peers, npeers);
    if (!as) {
        jr__free(a, c);
        return NULL;
    }
    consumer_set(c, as);
    return c;
}

jr__meta_casgn *jr__meta_casgn_new(const jr_allocator *a, jr__consumer_cfg *cfg,
                                   const char *const *peers, size_t n)
{
    jr__meta_name names[JR_MAX_REPLICAS];
    if (n > JR_MAX_REPLICAS) return NULL;
    for (size_t i = 0; i < n; i++) names[i] = (jr__meta_name){peers[i], strlen(peers[i])};
    return casgn_new(a, cfg, names, n);
}

void jr__meta_consumer_install(jr__meta_consumer *c, jr__meta_casgn *as, uint64_t index)
{
    int same = as->npeers == c->npeers;
    for (size_t i = 0; same && i < as->npeers; i++)
        same = jr__meta_consumer_has_peer(c, as->peers[i]);
    if (!same) {
        if (!jr__meta_consumer_busy(c) && !c->origin) c->origin = jr__meta_casgn_ref(c->asgn);
        c->peers_at = index;
    }
    jr__meta_casgn_put(c->asgn);
    consumer_set(c, as);
    c->updated = index;
}

void jr__meta_consumer_free(const jr_allocator *a, jr__meta_consumer *c)
{
    if (!c) return;
    jr__meta_casgn_put(c->origin);
    jr__meta_casgn_put(c->asgn);
    jr__free(a, c);
}

/* ---------------------------------------------------------------------------------------------
 * Lookups
 */
static size_t consumer_pos(const jr__meta_stream *s, const char *name, int *found)
{
    return jr__meta_name_pos((void *const *)s->consumers, s->nconsumers, name, found);
}

const jr__meta_consumer *jr__meta_consumer_find(const jr__meta_stream *s, const char *name)
{
    int found;
    if (!s || !name) return NULL;
    size_t i = consumer_pos(s, name, &found);
    return found ? s->consumers[i] : NULL;
}

const jr__meta_consumer *jr__meta_consumer_by_group(const jr__meta_state *st, uint64_t group)
{
    return group ? jr__map_get(&st->by_cgroup, group) : NULL;
}

int jr__meta_consumer_has_peer(const jr__meta_consumer *c, const char *server)
{
    for (size_t i = 0; i < c->npeers; i++)
        if (strcmp(c->peers[i], server) == 0) return 1;
    return 0;
}

int jr__meta_consumer_replicas(const jr__meta_stream *s, const jr_consumer_config *c)
{
    jr__cstream_facts f = {s->cfg->c.retention, s->cfg->c.replicas, s->cfg->c.storage};
    return jr__consumer_replicas(c, &f);
}

static int reserve(const jr_allocator *a, jr__meta_stream *s)
{
    if (s->nconsumers < s->cap_consumers) return 0;
    size_t ncap = s->cap_consumers ? s->cap_consumers * 2 : 4;
    jr__meta_consumer **p = jr__realloc(a, s->consumers, ncap * sizeof *p);
    if (!p) return JR_ENOMEM;
    s->consumers = p;
    s->cap_consumers = ncap;
    return 0;
}

int jr__meta_state_append_consumer(jr__meta_state *st, jr__meta_stream *s, jr__meta_consumer *c)
{
    if (s->nconsumers && strcmp(s->consumers[s->nconsumers - 1]->name, c->name) >= 0)
        return JR_EINVAL;
    if (c->group == 0 || c->group >= st->next_group || jr__map_get(&st->by_group, c->group) ||
        jr__map_get(&st->by_cgroup, c->group))
        return JR_EINVAL;
    if (reserve(st->alloc, s)) return JR_ENOMEM;
    if (jr__map_put(&st->by_cgroup, c->group, c)) return JR_ENOMEM;
    c->stream = s;
    s->consumers[s->nconsumers++] = c;
    st->nconsumers++;
    return 0;
}

void jr__meta_consumers_drop(jr__meta_state *st, jr__meta_stream *s)
{
    for (size_t i = 0; i < s->nconsumers; i++) {
        jr__map_del(&st->by_cgroup, s->consumers[i]->group);
        jr__meta_consumer_free(st->alloc, s->consumers[i]);
    }
    st->nconsumers -= s->nconsumers;
    jr__free(st->alloc, s->consumers);
    s->consumers = NULL;
    s->nconsumers = s->cap_consumers = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Decisions (pure)
 */

/* 1 if c has a filter (filter_subject or filter_subjects). */
static int filtered(const jr_consumer_config *c)
{
    return (c->filter_subject && *c->filter_subject) || c->nfilter_subjects > 0;
}

/* Work-queue rules against the stream's other consumers (JetStream's texts). */
static int check_workqueue(const jr__meta_stream *s, const jr_consumer_config *c,
                           const jr__meta_consumer *self, jr__meta_result *res)
{
    for (size_t i = 0; i < s->nconsumers; i++) {
        const jr__meta_consumer *o = s->consumers[i];
        if (o == self) continue;
        if (!filtered(c))
            return refuse(res, JR_EINVAL,
                          "multiple non-filtered consumers not allowed on workqueue stream");
        if (!filtered(&o->cfg->c) || jr__consumer_filters_overlap(c, &o->cfg->c))
            return refuse(res, JR_EINVAL, "filtered consumer not unique on workqueue stream");
    }
    return 0;
}

/* Peers of a placed CONSUMER_ADD: exactly R distinct peers of the stream. */
static int check_peers(const jr__meta_stream *s, const jr__meta_op *op, int replicas,
                       jr__meta_result *res)
{
    if (op->npeers == 0)
        return refuse(res, JR_EINVAL, "peers: none given (the request was not placed)");
    if (op->npeers != (size_t)replicas || !op->peers)
        return refuse(res, JR_EINVAL, "peers: %zu given for %d replicas", op->npeers, replicas);
    for (size_t i = 0; i < op->npeers; i++) {
        const char *p = op->peers[i];
        if (!p) return refuse(res, JR_EINVAL, "peers: invalid server name");
        for (size_t j = 0; j < i; j++)
            if (strcmp(p, op->peers[j]) == 0)
                return refuse(res, JR_EINVAL, "peers: '%s' given twice", p);
        if (!jr__meta_stream_has_peer(s, p))
            return refuse(res, JR_EINVAL, "peers: '%s' is not a peer of stream '%s'", p, s->name);
    }
    return 0;
}

static int same_peers(const jr__meta_consumer *c, const jr__meta_op *op)
{
    if (c->npeers != op->npeers) return 0;
    for (size_t i = 0; i < c->npeers; i++)
        if (strcmp(c->peers[i], op->peers[i]) != 0) return 0;
    return 1;
}

enum { DECIDED = 1 };

/* The config op gives consumer e (NULL: a new one): an update keeps e's pause (JetStream: only
 * the pause calls change it, and a create sets it for a new consumer only); a PAUSE changes
 * nothing but the pause. */
static void effective(const jr__meta_op *op, const jr__meta_consumer *e, jr_consumer_config *out)
{
    if (op->action == JR__META_CONSUMER_PAUSE && e) {
        *out = e->cfg->c;
        out->pause_until_ns = op->consumer_config->pause_until_ns;
        return;
    }
    *out = *op->consumer_config;
    if (e) out->pause_until_ns = e->cfg->c.pause_until_ns;
}

int jr__meta_consumer_validate(const jr__meta_state *st, const jr__meta_op *op, int need_peers,
                               jr__meta_result *res, jr__meta_stream **stream,
                               jr__meta_consumer **existing)
{
    *stream = NULL;
    *existing = NULL;
    snprintf(res->stream, sizeof res->stream, "%s", op->stream ? op->stream : "");
    jr__meta_stream *s = (jr__meta_stream *)jr__meta_stream_find(st, op->stream);
    if (!s) {
        refuse(res, JR_ENOSTREAM, "stream not found");
        return DECIDED;
    }
    *stream = s;
    if (op->type == JR__META_CONSUMER_DELETE) {
        snprintf(res->cname, sizeof res->cname, "%s", op->consumer ? op->consumer : "");
        *existing = (jr__meta_consumer *)jr__meta_consumer_find(s, op->consumer);
        if (!*existing) {
            refuse(res, JR_ENOTFOUND, "consumer not found");
            return DECIDED;
        }
        return 0;
    }
    if (!op->consumer_config) {
        refuse(res, JR_EINVAL, "config: missing");
        return DECIDED;
    }
    const char *cname = op->consumer_config->name;
    snprintf(res->cname, sizeof res->cname, "%s", cname ? cname : "");
    if (need_peers && (!cname || !*cname)) {
        refuse(res, JR_EINVAL, "name: missing (the request was not placed)");
        return DECIDED;
    }
    if (cname && *cname) *existing = (jr__meta_consumer *)jr__meta_consumer_find(s, cname);
    if (op->action == JR__META_CONSUMER_PAUSE && !*existing) {
        refuse(res, JR_ENOTFOUND, "consumer not found");
        return DECIDED;
    }
    jr_consumer_config eff;
    effective(op, *existing, &eff);
    const jr_consumer_config *c = &eff;
    jr__cstream_facts facts = {s->cfg->c.retention, s->cfg->c.replicas, s->cfg->c.storage};
    jr__cerr err;
    if (jr__consumer_config_validate(c, &facts, &err)) {
        refuse(res, JR_EINVAL, "%s", err.msg);
        return DECIDED;
    }
    jr__meta_consumer *e = *existing;
    if (e) {
        if (jr__consumer_config_equal(&e->cfg->c, c) && (!op->npeers || same_peers(e, op))) {
            res->consumer = e; /* identical: idempotent */
            res->group = e->group;
            return DECIDED;
        }
        if (op->action == JR__META_CONSUMER_CREATE && !jr__consumer_config_equal(&e->cfg->c, c)) {
            refuse(res, JR_EEXIST, "consumer already exists");
            return DECIDED;
        }
        if (jr__consumer_config_check_update(&e->cfg->c, c, &err)) {
            refuse(res, JR_EINVAL, "%s", err.msg);
            return DECIDED;
        }
    } else {
        if (op->action == JR__META_CONSUMER_UPDATE) {
            refuse(res, JR_ENOTFOUND, "consumer does not exist");
            return DECIDED;
        }
        if (s->cfg->c.max_consumers > 0 && s->nconsumers >= (size_t)s->cfg->c.max_consumers) {
            refuse(res, JR_ELIMIT, "maximum consumers limit reached");
            return DECIDED;
        }
        if (st->next_group == 0) {
            refuse(res, JR_ERANGE, "no group ids left");
            return DECIDED;
        }
    }
    if (s->cfg->c.retention == JR_RETAIN_WORKQUEUE && check_workqueue(s, c, e, res)) return DECIDED;
    int r = jr__meta_consumer_replicas(s, c);
    if (r > s->cfg->c.replicas) {
        refuse(res, JR_EINVAL, "consumer config replica count exceeds parent stream");
        return DECIDED;
    }
    if ((need_peers || op->npeers) && check_peers(s, op, r, res)) return DECIDED;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Apply
 */
static void names_of(const char *const *v, size_t n, jr__meta_name *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i].p = v[i];
        out[i].n = strlen(v[i]);
    }
}

static int apply_delete(jr__meta_state *st, jr__meta_stream *s, jr__meta_consumer *c,
                        jr__meta_result *res)
{
    int found;
    size_t pos = consumer_pos(s, c->name, &found);
    memmove(s->consumers + pos, s->consumers + pos + 1,
            (s->nconsumers - pos - 1) * sizeof *s->consumers);
    s->nconsumers--;
    st->nconsumers--;
    jr__map_del(&st->by_cgroup, c->group);
    res->group = c->group;
    res->changed = 1;
    jr__meta_consumer_free(st->alloc, c);
    return 0;
}

int jr__meta_consumer_apply(jr__meta_state *st, uint64_t index, const jr__meta_op *op,
                            jr__meta_stream *s, jr__meta_consumer *existing, jr__meta_result *res)
{
    if (op->type == JR__META_CONSUMER_DELETE) return apply_delete(st, s, existing, res);
    jr_consumer_config eff;
    effective(op, existing, &eff);
    jr__consumer_cfg *cfg;
    int rc = jr__consumer_cfg_new(&eff, st->alloc, &cfg, NULL);
    if (rc) return rc; /* JR_ENOMEM: validate accepted the config */
    jr__meta_name peers[JR_MAX_REPLICAS];
    if (existing && op->action == JR__META_CONSUMER_PAUSE)
        names_of(existing->peers, existing->npeers, peers); /* a pause keeps the placement */
    else
        names_of(op->peers, op->npeers, peers);
    size_t npeers =
        existing && op->action == JR__META_CONSUMER_PAUSE ? existing->npeers : op->npeers;
    if (existing) {
        jr__meta_casgn *as = casgn_new(st->alloc, cfg, peers, npeers);
        if (!as) {
            jr__consumer_cfg_free(cfg);
            return JR_ENOMEM;
        }
        jr__meta_casgn_put(existing->asgn); /* a replica may still hold the old version */
        consumer_set(existing, as);
        existing->updated = index;
        res->consumer = existing;
        res->group = existing->group;
        res->changed = 1;
        return 0;
    }
    jr__meta_consumer *c = jr__meta_consumer_new(st->alloc, cfg, peers, npeers);
    if (!c) {
        jr__consumer_cfg_free(cfg);
        return JR_ENOMEM;
    }
    if (reserve(st->alloc, s) || jr__map_put(&st->by_cgroup, st->next_group, c)) {
        jr__meta_consumer_free(st->alloc, c);
        return JR_ENOMEM;
    }
    c->group = st->next_group++;
    c->created = c->updated = c->peers_at = c->converged_at = index;
    c->created_ns = op->created_ns;
    c->stream = s;
    int found;
    size_t pos = consumer_pos(s, c->name, &found);
    memmove(s->consumers + pos + 1, s->consumers + pos,
            (s->nconsumers - pos) * sizeof *s->consumers);
    s->consumers[pos] = c;
    s->nconsumers++;
    st->nconsumers++;
    res->consumer = c;
    res->group = c->group;
    res->changed = 1;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Following the stream's peers
 */
static int in_list(const char *const *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0) return 1;
    return 0;
}

int jr__meta_consumers_follow_prepare(const jr__meta_state *st, const jr__meta_stream *s,
                                      const char *const *peers, size_t npeers, int replicas,
                                      jr__meta_casgn ***out)
{
    *out = NULL;
    if (!s->nconsumers) return 0;
    jr__meta_casgn **v = jr__calloc(st->alloc, s->nconsumers, sizeof *v);
    if (!v) return JR_ENOMEM;
    for (size_t i = 0; i < s->nconsumers; i++) {
        const jr__meta_consumer *c = s->consumers[i];
        size_t want =
            c->cfg->c.num_replicas > 0 ? (size_t)c->cfg->c.num_replicas : (size_t)replicas;
        if (want > npeers) want = npeers;
        const char *pick[JR_MAX_REPLICAS];
        size_t k = 0;
        for (size_t j = 0; j < c->npeers && k < want; j++)
            if (in_list(peers, npeers, c->peers[j])) pick[k++] = c->peers[j];
        for (size_t j = 0; j < npeers && k < want; j++)
            if (!in_list(pick, k, peers[j])) pick[k++] = peers[j];
        int same = k == c->npeers;
        for (size_t j = 0; same && j < k; j++) same = in_list(c->peers, c->npeers, pick[j]);
        if (same) continue;
        jr__meta_name names[JR_MAX_REPLICAS];
        names_of(pick, k, names);
        v[i] = casgn_new(st->alloc, jr__consumer_cfg_ref(c->cfg), names, k);
        if (!v[i]) {
            jr__consumer_cfg_free(c->cfg); /* the reference taken above */
            for (size_t j = 0; j < i; j++) jr__meta_casgn_put(v[j]);
            jr__free(st->alloc, v);
            return JR_ENOMEM;
        }
    }
    *out = v;
    return 0;
}

void jr__meta_consumers_follow_commit(jr__meta_state *st, jr__meta_stream *s, jr__meta_casgn **v,
                                      uint64_t index)
{
    if (!v) return;
    for (size_t i = 0; i < s->nconsumers; i++) {
        if (!v[i]) continue;
        if (!index) {
            jr__meta_casgn_put(v[i]);
            continue;
        }
        jr__meta_consumer *c = s->consumers[i];
        /* a peer change that starts from a converged state records where it started */
        if (!jr__meta_consumer_busy(c) && !c->origin) c->origin = jr__meta_casgn_ref(c->asgn);
        jr__meta_casgn_put(c->asgn);
        consumer_set(c, v[i]);
        c->peers_at = c->updated = index;
    }
    jr__free(st->alloc, v);
}
