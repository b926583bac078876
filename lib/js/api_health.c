/*
 * api_health — health checks: jr_stream_check and jr_consumer_check judge the cluster block of
 * a stream's or consumer's info from its leader as the nats CLI's `server check stream` does;
 * jr_node_health judges this node's meta replica and local stream and consumer replicas on
 * their own state (JetStream's /healthz).
 *
 * The checks are built on the public info requests: their callbacks run from the node's loop,
 * so the check's does too. jr_node_health reserves a completion record and computes when it
 * fires, so its callback sees the state of that moment and never runs inside the call.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "js/js.h"
#include "meta/info_format.h"
#include "util/alloc.h"

#define CHECK_MAX_PROBLEMS 12
#define CHECK_TEXT_MAX 160

void jr_check_opts_init_size(jr_check_opts *opts, size_t size)
{
    if (!opts || size == 0) return;
    jr_check_opts d;
    memset(&d, 0, sizeof d);
    d.size = size < sizeof d ? size : sizeof d;
    memcpy(opts, &d, d.size);
}

/* Checks ------------------------------------------------------------------------------------*/

typedef struct check_ctx {
    jr_node *n;
    const jr_allocator *alloc;
    jr_check_opts opts;
    jr_check_cb cb;
    void *arg;
    char *stream, *consumer; /* in this allocation */
} check_ctx;

typedef struct check_build {
    jr_check_result res;
    jr_check_problem p[CHECK_MAX_PROBLEMS];
    const jr_check_problem *pp[CHECK_MAX_PROBLEMS];
    char text[CHECK_MAX_PROBLEMS][CHECK_TEXT_MAX];
} check_build;

static void problem(check_build *b, int kind, int severity, uint32_t count, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void problem(check_build *b, int kind, int severity, uint32_t count, const char *fmt, ...)
{
    size_t i = b->res.nproblems;
    if (i == CHECK_MAX_PROBLEMS) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->text[i], sizeof b->text[i], fmt, ap);
    va_end(ap);
    b->p[i] = (jr_check_problem){.size = sizeof(jr_check_problem),
                                 .kind = kind,
                                 .severity = severity,
                                 .count = count,
                                 .text = b->text[i]};
    b->pp[i] = &b->p[i];
    b->res.nproblems = i + 1;
    if (severity > b->res.status) b->res.status = severity;
}

static void build_init(check_build *b, const check_ctx *c)
{
    memset(b, 0, sizeof *b);
    b->res.size = sizeof b->res;
    b->res.status = JR_CHECK_OK;
    b->res.stream = c->stream;
    b->res.consumer = c->consumer;
    b->res.lag_critical = c->opts.lag_critical;
    b->res.seen_critical_ns = c->opts.seen_critical_ns;
    b->res.problems = b->pp;
}

/* The info request failed: a request that found no leader to answer is the CLI's "No leader",
 * anything else its "could not load info". */
static void judge_error(check_build *b, int status, const char *msg, uint32_t expected)
{
    b->res.expected = expected;
    if (status == JR_ENOQUORUM || status == JR_ENOLEADER || status == JR_ETIMEDOUT)
        problem(b, JR_CHECK_NO_LEADER, JR_CHECK_CRITICAL, 0, "No leader");
    else
        problem(b, JR_CHECK_UNAVAILABLE, JR_CHECK_CRITICAL, 0, "could not load info: %s",
                msg && *msg ? msg : jr_strerror(status));
}

static const char *move_type(int status)
{
    static const char *const t[] = {"meta",   "membership", "snapshot",   "catchup",
                                    "quorum", "blocked",    "unavailable"};
    return status >= JR_MOVE_META && status <= JR_MOVE_UNAVAILABLE ? t[status - 1] : "unknown";
}

/* Peers a move's target names among the leader and listed replicas (what the peer count
 * checks while a peer change runs: its leaving members are not expected). */
static uint32_t target_members(const jr_move_info *m, const jr__cluster_view *v)
{
    uint32_t k = 0;
    for (size_t t = 0; t < m->ntarget; t++) {
        const char *name = m->target[t];
        if (!name) continue;
        int in = v->leader && strcmp(v->leader, name) == 0;
        for (size_t i = 0; i < v->nreplicas && !in; i++)
            in = strcmp(v->replicas[i].name, name) == 0;
        k += (uint32_t)in;
    }
    return k;
}

/* The cluster block, judged: criticals in the CLI's order (leader, peer count, offline, lagged,
 * inactive), then libjetraft's own (damaged, state machine failed), then the warnings (not
 * current, rebuilding, unvouched, peer change, move stuck). */
static void judge_cluster(check_build *b, const check_ctx *c, const jr_cluster_info *ci,
                          uint32_t configured)
{
    jr__replica_view reps[JR__INFO_MAX_REPLICAS];
    jr__cluster_view v;
    uint32_t expected = c->opts.peer_expect > 0 ? (uint32_t)c->opts.peer_expect : configured;
    b->res.expected = expected;
    if (!ci) {
        problem(b, JR_CHECK_UNAVAILABLE, JR_CHECK_CRITICAL, 0, "Stream is not clustered");
        return;
    }
    if (jr__cluster_view_from_info(ci, reps, &v) != 0) {
        problem(b, JR_CHECK_UNAVAILABLE, JR_CHECK_CRITICAL, 0,
                "could not load info: malformed cluster block");
        return;
    }
    b->res.leader = v.leader;
    if (!v.leader) {
        problem(b, JR_CHECK_NO_LEADER, JR_CHECK_CRITICAL, 0, "No leader");
        return;
    }
    uint32_t peers = 1 + (uint32_t)v.nreplicas, current = 1;
    const jr_move_info *mv = JR__HAS(ci->size, jr_cluster_info, move) && ci->move &&
                                     JR__HAS(ci->move->size, jr_move_info, error)
                                 ? ci->move
                                 : NULL;
    if (mv) peers = target_members(mv, &v); /* members on their way out do not count */
    uint32_t offline = 0, lagged = 0, inactive = 0, damaged = 0, stale = 0, unvouched = 0;
    uint32_t observers = 0, pending = 0, fsm_failed = 0, rebuilding = 0;
    for (size_t i = 0; i < v.nreplicas; i++) {
        const jr__replica_view *r = &v.replicas[i];
        if (r->current) current++;
        if (r->lag > b->res.lag_max) b->res.lag_max = r->lag;
        if (c->opts.lag_critical && r->lag > c->opts.lag_critical) lagged++;
        if (c->opts.seen_critical_ns && r->seen_ns > c->opts.seen_critical_ns) inactive++;
        if (r->offline) offline++;
        if (r->damaged) damaged++;
        if (r->observer) observers++;
        if (r->pending) pending++;
        if (r->unvouched && !r->damaged) unvouched++;
        if (r->fsm_failed && !r->damaged && !r->offline) {
            if (r->fsm_rebuilding)
                rebuilding++;
            else
                fsm_failed++;
        }
        if (!r->current && !r->offline && !r->damaged && !r->unvouched && !r->fsm_failed &&
            !r->observer && !r->pending)
            stale++;
    }
    b->res.peers = peers;
    b->res.current = current;
    if (peers != expected)
        problem(b, JR_CHECK_PEER_COUNT, JR_CHECK_CRITICAL, peers, "Expected %u replicas got %u",
                (unsigned)expected, (unsigned)peers);
    if (offline)
        problem(b, JR_CHECK_OFFLINE, JR_CHECK_CRITICAL, offline, "%u replicas offline",
                (unsigned)offline);
    if (lagged)
        problem(b, JR_CHECK_LAGGED, JR_CHECK_CRITICAL, lagged, "%u replicas lagged",
                (unsigned)lagged);
    if (inactive)
        problem(b, JR_CHECK_INACTIVE, JR_CHECK_CRITICAL, inactive, "%u replicas inactive",
                (unsigned)inactive);
    if (damaged)
        problem(b, JR_CHECK_DAMAGED, JR_CHECK_CRITICAL, damaged, "%u replicas damaged",
                (unsigned)damaged);
    if (fsm_failed)
        problem(b, JR_CHECK_FSM_FAILED, JR_CHECK_CRITICAL, fsm_failed,
                "%u replicas state machine failed", (unsigned)fsm_failed);
    if (stale)
        problem(b, JR_CHECK_NOT_CURRENT, JR_CHECK_WARNING, stale, "%u replicas not current",
                (unsigned)stale);
    if (rebuilding)
        problem(b, JR_CHECK_REBUILDING, JR_CHECK_WARNING, rebuilding, "%u replicas rebuilding",
                (unsigned)rebuilding);
    if (unvouched)
        problem(b, JR_CHECK_UNVOUCHED, JR_CHECK_WARNING, unvouched, "%u replicas unvouched",
                (unsigned)unvouched);
    if (observers || pending)
        problem(b, JR_CHECK_PEER_CHANGE, JR_CHECK_WARNING, observers + pending,
                "peer change in progress: %u observers, %u pending", (unsigned)observers,
                (unsigned)pending);
    if (mv && (mv->error || mv->status == JR_MOVE_QUORUM || mv->status == JR_MOVE_BLOCKED ||
               mv->status == JR_MOVE_UNAVAILABLE))
        problem(b, JR_CHECK_MOVE_STUCK, mv->error ? JR_CHECK_CRITICAL : JR_CHECK_WARNING, 1,
                "move stuck: %s: %s%s%s", move_type(mv->status),
                mv->description ? mv->description : "", mv->error ? ": " : "",
                mv->error ? mv->error : "");
}

static void check_done(check_ctx *c, int status, const char *msg, const check_build *b)
{
    c->cb(c->arg, status, msg ? msg : "", b ? &b->res : NULL);
    jr__free(c->alloc, c);
}

static void on_stream_info(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    check_ctx *c = arg;
    if (status == JR_ECLOSED || status == JR_ENOMEM) {
        check_done(c, status, msg, NULL);
        return;
    }
    check_build b;
    build_init(&b, c);
    if (status != 0 || !info) {
        judge_error(&b, status ? status : JR_EINVAL, msg,
                    c->opts.peer_expect > 0 ? (uint32_t)c->opts.peer_expect : 0);
    } else {
        uint32_t configured = 0;
        if (JR__HAS(info->size, jr_stream_info, config) && info->config)
            configured = (uint32_t)info->config->replicas;
        judge_cluster(&b, c, JR__HAS(info->size, jr_stream_info, cluster) ? info->cluster : NULL,
                      configured);
    }
    check_done(c, status, msg, &b);
}

/* The replicas a consumer is configured with: its own num_replicas, else its stream's (from
 * this server's meta state; 0 if it does not know the stream). */
static uint32_t consumer_replicas(const check_ctx *c, const jr_consumer_info *info)
{
    if (info && info->config && info->config->num_replicas > 0)
        return (uint32_t)info->config->num_replicas;
    jr__js *js = jr__js_of(c->n);
    const jr__meta_stream *s = js ? jr__meta_stream_find(&js->st, c->stream) : NULL;
    return s && s->cfg ? (uint32_t)s->cfg->c.replicas : 0;
}

static void on_consumer_info(void *arg, int status, const char *msg, const jr_consumer_info *info)
{
    check_ctx *c = arg;
    if (status == JR_ECLOSED || status == JR_ENOMEM) {
        check_done(c, status, msg, NULL);
        return;
    }
    check_build b;
    build_init(&b, c);
    if (status != 0 || !info)
        judge_error(&b, status ? status : JR_EINVAL, msg,
                    c->opts.peer_expect > 0 ? (uint32_t)c->opts.peer_expect
                                            : consumer_replicas(c, NULL));
    else
        judge_cluster(&b, c, JR__HAS(info->size, jr_consumer_info, cluster) ? info->cluster : NULL,
                      consumer_replicas(c, info));
    check_done(c, status, msg, &b);
}

static check_ctx *check_new(jr_node *n, const char *stream, const char *consumer,
                            const jr_check_opts *opts, jr_check_cb cb, void *arg, int *rc)
{
    jr__node_facts f;
    jr__node_facts_get(n, &f);
    size_t ls = strlen(stream) + 1, lc = consumer ? strlen(consumer) + 1 : 0;
    check_ctx *c = jr__malloc(f.alloc, sizeof *c + ls + lc);
    if (!c) {
        *rc = jr__node_err(n, JR_ENOMEM, "out of memory");
        return NULL;
    }
    memset(c, 0, sizeof *c);
    c->n = n;
    c->alloc = f.alloc;
    jr_check_opts_init(&c->opts);
    if (opts) memcpy(&c->opts, opts, opts->size < sizeof c->opts ? opts->size : sizeof c->opts);
    c->opts.size = sizeof c->opts;
    c->cb = cb;
    c->arg = arg;
    c->stream = (char *)(c + 1);
    memcpy(c->stream, stream, ls);
    if (consumer) {
        c->consumer = c->stream + ls;
        memcpy(c->consumer, consumer, lc);
    }
    *rc = 0;
    return c;
}

int jr_stream_check(jr_node *node, const char *stream, const jr_check_opts *opts, jr_check_cb cb,
                    void *arg)
{
    if (opts && opts->size == 0) return JR_EINVAL;
    int rc = jr__js_entry(node, stream && cb);
    if (rc) return rc;
    check_ctx *c = check_new(node, stream, NULL, opts, cb, arg, &rc);
    if (!c) return rc;
    rc = jr_stream_info_get(node, stream, on_stream_info, c);
    if (rc) jr__free(c->alloc, c);
    return rc;
}

int jr_consumer_check(jr_node *node, const char *stream, const char *consumer,
                      const jr_check_opts *opts, jr_check_cb cb, void *arg)
{
    if (opts && opts->size == 0) return JR_EINVAL;
    int rc = jr__js_entry(node, stream && consumer && cb);
    if (rc) return rc;
    check_ctx *c = check_new(node, stream, consumer, opts, cb, arg, &rc);
    if (!c) return rc;
    rc = jr_consumer_info_get(node, stream, consumer, on_consumer_info, c);
    if (rc) jr__free(c->alloc, c);
    return rc;
}

/* Node health -------------------------------------------------------------------------------*/

typedef struct health_ctx {
    jr_node *n;
    const jr_allocator *alloc;
    jr_node_health_cb cb;
    void *arg;
} health_ctx;

typedef struct group_verdict {
    jr_group_health h;
    int failed;              /* its state machine's failure code (0: none) */
    int peers_rebuilding;    /* of h.peers_fsm_failed, those being rebuilt */
    const char *peer_failed; /* the first of them (borrowed from the node's peer table) */
    char text[JR_STREAM_NAME_MAX * 2 + 200];
} group_verdict;

/* 1 if the node of server `name` sent a valid frame within `within` ns. */
static int heard_within(jr_node *n, const char *name, uint64_t within)
{
    jr__peer *p = name ? jr__peer_find_name(n, name) : NULL;
    if (!p) return 0;
    uint64_t at = jr__peer_heard(p), now = jr__node_now(n);
    return at && now - at <= within;
}

/* Judges one local replica; 1 (and *out filled) if it is unwell. `failed` is its state
 * machine's failure code (0: none); the group's own damage and its state machine's failure are
 * reported apart, from the one jr_group_status read here. */
static int judge_group(jr__js *js, jr_group *g, int failed, group_verdict *out)
{
    jr_group_status st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    memset(&out->h, 0, sizeof out->h);
    out->h.size = sizeof out->h;
    out->failed = failed;
    if (!g || jr_group_status_get(g, &st) != 0) {
        out->h.no_leader = 1;
        out->h.fsm_failed = failed != 0;
        return 1;
    }
    out->h.group = st.id;
    out->h.role = st.role;
    out->h.damaged = st.damaged;
    out->h.fsm_failed = st.fsm_failed || failed != 0;
    out->h.unvouched = st.unvouched;
    const char *leader = jr_group_leader(g);
    if (!leader) {
        out->h.no_leader = 1;
    } else if (st.role == JR_LEADER) {
        /* Raft §3.4: the leader needs a majority of the voters to commit. A member whose state
         * machine failed is not current, but its log may be: it counts toward the quorum. */
        size_t voters = 0, current = 0;
        for (size_t i = 0; i < st.npeers; i++) {
            jr_peer_status ps;
            memset(&ps, 0, sizeof ps);
            ps.size = sizeof ps;
            if (jr_group_peer(g, i, &ps) != 0) continue;
            int self = ps.name && strcmp(ps.name, leader) == 0;
            if (ps.fsm_failed && !self) {
                if (!out->h.peers_fsm_failed++) out->peer_failed = ps.name;
                out->peers_rebuilding += ps.fsm_rebuilding;
            }
            if (!ps.voter) continue;
            voters++;
            int log_current = ps.fsm_failed && !ps.damaged && !ps.unvouched &&
                              ps.last_seen_ns <= js->election_ns &&
                              ps.match_index >= st.commit_index;
            if (ps.current || self || log_current) current++;
        }
        out->h.no_quorum = current < voters / 2 + 1;
    } else {
        out->h.no_quorum = !heard_within(js->n, leader, js->election_ns);
    }
    return out->h.no_leader || out->h.no_quorum || out->h.damaged || out->h.fsm_failed ||
           out->h.unvouched || out->h.peers_fsm_failed;
}

/* The verdict's one line: the worst of its problems, a lost replica first. A state machine
 * being refilled from its peers after its store was discarded (JR_EDAMAGED) is "rebuilding"; one
 * the library's replica does not know failed is its group's (jr_group_status.fsm_failed: a
 * snapshot that did not restore). */
static void verdict_text(group_verdict *v)
{
    char fsm[96];
    if (!v->failed)
        snprintf(fsm, sizeof fsm, "state machine failed: a snapshot did not restore");
    else if (v->failed == JR_EDAMAGED)
        snprintf(fsm, sizeof fsm, "state machine rebuilding from its peers");
    else
        snprintf(fsm, sizeof fsm, "state machine failed: %s", jr_strerror(v->failed));
    /* a member's failure, as it told this leader: the replica named, or how many */
    char peers[JR_STREAM_NAME_MAX + 96];
    int np = v->h.peers_fsm_failed, nr = v->peers_rebuilding;
    if (np == 1)
        snprintf(peers, sizeof peers, "replica %s: state machine %s",
                 v->peer_failed ? v->peer_failed : "?",
                 nr ? "rebuilding from its peers" : "failed");
    else
        snprintf(peers, sizeof peers, "%d replicas' state machines failed (%d rebuilding)", np, nr);
    const char *what = v->h.damaged      ? "damaged"
                       : v->h.fsm_failed ? fsm
                       : v->h.no_leader  ? "no leader"
                       : v->h.no_quorum  ? "no quorum"
                       : v->h.unvouched  ? "unvouched"
                                         : peers;
    if (v->h.consumer)
        snprintf(v->text, sizeof v->text, "consumer %s > %s: %s", v->h.stream, v->h.consumer, what);
    else
        snprintf(v->text, sizeof v->text, "stream %s: %s", v->h.stream, what);
    v->h.text = v->text;
}

static void health_fire(void *arg, int status)
{
    health_ctx *c = arg;
    /* a node closing drains its completions after detaching its groups: nothing to judge */
    jr__js *js = status == 0 && !jr__node_closing(c->n) ? jr__js_of(c->n) : NULL;
    if (status == 0 && !js) status = JR_ECLOSED;
    if (status != 0) {
        c->cb(c->arg, status, jr_strerror(status), NULL);
        jr__free(c->alloc, c);
        return;
    }
    size_t nrep = 0, ncrep = 0;
    for (jr__srep *r = js->rep_list; r; r = r->next) nrep++;
    for (jr__crep *r = js->crep_list; r; r = r->next) ncrep++;
    size_t cap = nrep + ncrep;
    group_verdict *v = cap ? jr__calloc(c->alloc, cap, sizeof *v) : NULL;
    const jr_group_health **pv = cap ? jr__calloc(c->alloc, cap, sizeof *pv) : NULL;
    if (cap && (!v || !pv)) {
        jr__free(c->alloc, v);
        jr__free(c->alloc, (void *)pv);
        c->cb(c->arg, JR_ENOMEM, "out of memory", NULL);
        jr__free(c->alloc, c);
        return;
    }
    size_t nv = 0;
    for (jr__srep *r = js->rep_list; r; r = r->next) {
        if (!judge_group(js, r->g, jr__srep_damage(r), &v[nv])) continue;
        v[nv].h.group = r->group;
        v[nv].h.stream = r->name;
        verdict_text(&v[nv]);
        pv[nv] = &v[nv].h;
        nv++;
    }
    for (jr__crep *r = js->crep_list; r; r = r->next) {
        if (!judge_group(js, r->g, r->failed, &v[nv])) continue;
        v[nv].h.group = r->group;
        v[nv].h.stream = r->stream;
        v[nv].h.consumer = r->name;
        verdict_text(&v[nv]);
        pv[nv] = &v[nv].h;
        nv++;
    }

    jr_node_health_info h;
    memset(&h, 0, sizeof h);
    h.size = sizeof h;
    h.nstreams = nrep;
    h.nconsumers = ncrep;
    h.groups = pv;
    h.ngroups = nv;
    for (jr__srep *r = js->rep_list; r; r = r->next) {
        if (!r->fsm) continue;
        jr__stream_fsm_info fi;
        jr__stream_fsm_info_get(r->fsm, &fi);
        const jr_stream_config *sc = jr__stream_fsm_config_get(r->fsm);
        h.msgs += fi.store.msgs;
        if (sc && sc->storage == JR_STORAGE_MEMORY)
            h.memory_bytes += fi.store.bytes;
        else
            h.file_bytes += fi.store.bytes;
    }
    jr_group_status ms;
    memset(&ms, 0, sizeof ms);
    ms.size = sizeof ms;
    const char *ml = js->meta ? jr_group_leader(js->meta) : NULL;
    h.meta_leader = ml;
    if (js->meta && jr_group_status_get(js->meta, &ms) == 0) {
        h.meta_lag = ms.commit_index > ms.applied_index ? ms.commit_index - ms.applied_index : 0;
        int heard = ms.role == JR_LEADER || heard_within(c->n, ml, js->election_ns);
        h.meta_current = ml && heard && !ms.damaged && !ms.fsm_failed && !ms.unvouched &&
                         !js->meta_failed && h.meta_lag == 0;
    }
    /* A node whose WAL failed makes nothing durable until it is reopened: its replicas may
     * look current (their logs and leaders are as they were) but can take no entry, so the
     * node is unhealthy until its host reopens it. */
    jr__node_facts f;
    jr__node_facts_get(c->n, &f);
    if (f.wal_failed) h.meta_current = 0;
    /* After a restart the node's stream and consumer replicas get their votes back only once
     * its meta state holds everything committed before (meta_replica.c, release_held): until
     * then a group one of them belongs to loses its quorum with the loss of one more server,
     * which is what a health check is asked before taking one down. */
    int held = h.meta_current && !js->meta_caught_up;
    if (held) h.meta_current = 0;
    h.meta_text = f.wal_failed     ? "JetStream's WAL failed: nothing is stored until the node is "
                                     "reopened"
                  : h.meta_current ? ""
                  : !ml            ? "JetStream has not established contact with a meta leader"
                  : held           ? "JetStream is catching up with the meta state"
                                   : "JetStream is not current with the meta leader";
    /* A group listed only for a member's failed state machine (peers_fsm_failed) leaves this
     * node healthy: that member's own server reports it, as JetStream's /healthz judges each
     * server by its own replicas, and a load balancer must not take the leader out for it. */
    size_t own = 0;
    for (size_t i = 0; i < nv; i++)
        own += v[i].h.no_leader || v[i].h.no_quorum || v[i].h.damaged || v[i].h.fsm_failed ||
               v[i].h.unvouched;
    h.healthy = h.meta_current && own == 0;
    c->cb(c->arg, 0, "", &h);
    jr__free(c->alloc, v);
    jr__free(c->alloc, (void *)pv);
    jr__free(c->alloc, c);
}

int jr_node_health(jr_node *node, jr_node_health_cb cb, void *arg)
{
    int rc = jr__js_entry(node, cb != NULL);
    if (rc) return rc;
    jr__node_facts f;
    jr__node_facts_get(node, &f);
    health_ctx *c = jr__malloc(f.alloc, sizeof *c);
    if (!c) return jr__node_err(node, JR_ENOMEM, "out of memory");
    *c = (health_ctx){node, f.alloc, cb, arg};
    jr__node_enter(node);
    jr__op *op = jr__op_reserve(node, health_fire, c);
    if (!op) {
        jr__free(f.alloc, c);
        rc = jr__node_err(node, JR_ENOMEM, "out of memory");
    } else {
        jr__op_complete(node, op, 0, 0);
        jr__node_want_tick(node);
    }
    jr__node_leave(node);
    return rc;
}
