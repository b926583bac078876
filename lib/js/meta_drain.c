/*
 * meta_drain — servers draining (jr_server_evacuate, jr_server_evacuate_cancel) and the meta
 * leader's re-placement of every replica on a server that holds no placement any more: one that
 * drains, or one removed from the cluster while no replacement qualified (jr_server_peer_remove
 * then leaves the stream under-replicated).
 *
 * The drain itself is one meta op (SERVER_DRAIN, meta_servers.c): a flag of the server in the
 * meta state, so it survives restarts, snapshots and meta leader failovers. Everything else is
 * recomputed from the state by the meta leader on its meta timer (jr__drain_tick), never
 * remembered: for each stream that has a peer on a leaving server (removed ones first) and
 * whose group and consumers are not mid-change, it picks a replacement by the stream's placement
 * rules (jr__move_place; draining servers never qualify) and proposes a PEER_MOVE evacuate, the
 * same op jr_stream_evacuate ends in — so the replacement joins and catches up before the old
 * peer leaves, and the stream's consumers follow it; a stream whose every peer was removed has
 * nobody to copy from and starts again, empty, on new servers (a reseed, meta_move.h). A
 * stream no server qualifies for stays; its consumers on the leaving server still move within
 * the stream's other peers. Groups mid-change are skipped: one change per group at a time,
 * every other group in the same pass.
 * A new leader, any server op (info, join, remove, drain) and any peer change applied or
 * converged make the next tick look again; while something could not be placed it also looks
 * every few election timeouts, since a server coming back online is no op. The leader proposes
 * nothing more until its last proposal applied, so a pass never works from a state that lags
 * its own proposals; a proposal that no longer fits when it applies is refused there (the
 * apply re-checks), and the next pass sees the state as it is.
 */
#include <stdio.h>
#include <string.h>

#include "js/js.h"
#include "meta/meta_move.h"
#include "util/deadline.h"

/* PEER_MOVEs one pass proposes at most (the rest follow once they applied). */
#define DRAIN_BATCH 64
/* While something cannot be placed, another pass every this many election timeouts. */
#define DRAIN_RETRY_ELECTIONS 4

/* The peer of a stream (or consumer) peer set to move off first: a removed server (its group
 * runs short), else a draining one; NULL when none. */
static const char *leaving_peer(const jr__meta_state *st, const char *const *peers, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (jr__meta_server_removed(st, peers[i])) return peers[i];
    for (size_t i = 0; i < n; i++)
        if (jr__meta_server_draining(st, peers[i])) return peers[i];
    return NULL;
}

static int consumers_busy(const jr__meta_stream *s)
{
    for (size_t i = 0; i < s->nconsumers; i++)
        if (jr__meta_consumer_busy(s->consumers[i])) return 1;
    return 0;
}

static void move_op(jr__meta_op *op, const jr__meta_stream *s, const jr__meta_consumer *c,
                    const char *gone)
{
    memset(op, 0, sizeof *op);
    op->type = JR__META_PEER_MOVE;
    op->stream = s->name;
    op->consumer = c ? c->name : NULL;
    op->action = JR__META_MOVE_EVACUATE;
    op->peer = gone;
}

/* Places and proposes the evacuation of `gone` from s (or its consumer c). 1 if proposed, 0 if no
 * server qualifies, JR_ENOMEM or a propose error otherwise. */
static int propose_move(jr__js *js, const jr__meta_stream *s, const jr__meta_consumer *c,
                        const char *gone)
{
    jr__meta_op op;
    move_op(&op, s, c, gone);
    const char *peers[JR_MAX_REPLICAS];
    size_t np = 0;
    char msg[JR__JS_MSG_MAX];
    int rc = jr__move_place(js, &op, peers, &np, msg, sizeof msg);
    if (rc == JR_EPEERREMAP || rc == JR_ENOTFOUND) return 0;
    if (rc) return rc;
    op.peers = peers;
    op.npeers = np;
    jr__buf_reset(&js->scratch);
    rc = jr__meta_op_encode(&op, &js->scratch);
    uint64_t index = 0, term = 0;
    if (rc == 0)
        rc = jr__group_propose(js->meta, js->scratch.data, js->scratch.len, NULL, NULL, &index,
                               &term);
    if (rc) return rc;
    js->drain_wait = index;
    const char *to = peers[0];
    for (size_t i = 0; i < np; i++)
        if (!(c ? jr__meta_consumer_has_peer(c, peers[i]) : jr__meta_stream_has_peer(s, peers[i])))
            to = peers[i];
    jr__node_log(js->n, JR_LOG_INFO, "meta leader: moving %s%s%s off server '%s' (to %s)", s->name,
                 c ? "/" : "", c ? c->name : "", gone, to);
    return 1;
}

/* 1 if a peer of s that neither drains nor was removed is offline. */
static int stays_offline(jr__js *js, const jr__meta_stream *s)
{
    for (size_t p = 0; p < s->npeers; p++) {
        const jr__meta_server *sv = jr__meta_server_find(&js->st, s->peers[p]);
        if (sv && !sv->draining && !jr__mnode_online(js, s->peers[p], NULL)) return 1;
    }
    return 0;
}

/* One pass over the streams. */
static void drain_pass(jr__js *js)
{
    jr__meta_state *st = &js->st;
    size_t proposed = 0;
    int stuck = 0;
    for (size_t i = 0; i < st->nstreams; i++) {
        const jr__meta_stream *s = st->streams[i];
        const char *gone = leaving_peer(st, s->peers, s->npeers);
        if (!gone) continue;
        if (proposed >= DRAIN_BATCH) {
            js->drain_dirty = 1; /* the rest after these applied */
            break;
        }
        /* one change per group: the stream, or any of its consumers, mid-change waits (its
         * convergence makes the next pass) */
        if (jr__meta_stream_busy(s) || consumers_busy(s)) continue;
        /* off a removed server: a peer that stays and is down may not have created the group
         * yet; after the change it would join rather than bootstrap, and nobody could add it
         * (the removed server takes no part): looked at again once it is online */
        if (!jr__meta_server_find(st, gone) && stays_offline(js, s)) {
            stuck = 1;
            continue;
        }
        /* a stream whose every replica went with removed servers is reseeded: it starts
         * again, empty, on new servers (meta_move.h) */
        int rc = propose_move(js, s, NULL, gone);
        if (rc == 1) {
            proposed++;
            continue;
        }
        if (rc) { /* out of memory, or no longer the leader: the next tick tries again */
            js->drain_dirty = 1;
            return;
        }
        stuck = 1;
        /* the stream stays; its consumers on leaving servers may still go to its other peers */
        for (size_t k = 0; k < s->nconsumers && proposed < DRAIN_BATCH; k++) {
            const jr__meta_consumer *c = s->consumers[k];
            const char *cg = leaving_peer(st, c->peers, c->npeers);
            if (!cg) continue;
            rc = propose_move(js, s, c, cg);
            if (rc < 0) {
                js->drain_dirty = 1;
                return;
            }
            proposed += (size_t)rc;
        }
    }
    if (stuck)
        js->drain_next = jr__deadline(jr__node_now(js->n), DRAIN_RETRY_ELECTIONS * js->election_ns);
}

void jr__drain_tick(jr__js *js)
{
    int self;
    if (!js->meta || js->removed || js->closing || !jr__mnode_leader(js, &self) || !self) return;
    const jr__raft *raft = jr__group_consensus(js->meta);
    if (!jr__raft_ready(raft) || jr__raft_transferring(raft) || !jr__mnode_replayed(js) ||
        !jr__mnode_current(js))
        return;
    uint64_t term = jr__raft_term(raft), now = jr__node_now(js->n);
    if (term != js->drain_term) {
        /* A new leadership looks at everything once — after two election timeouts, when its
         * view of who is online (jr__mnode_online) no longer counts a server that died before
         * the election, such as the leader it replaces: a move onto it would wait for it. */
        js->drain_term = term;
        js->drain_wait = 0;
        js->drain_dirty = 1;
        js->drain_from = jr__deadline(now, 2 * js->election_ns);
    }
    if (now < js->drain_from) return;
    if (js->drain_wait > js->st.applied) return; /* this leader's last move has not applied */
    if (!js->drain_dirty && (!js->drain_next || now < js->drain_next)) return;
    js->drain_dirty = 0;
    js->drain_next = 0;
    /* the usual case costs no walk over the streams: nobody drains and nobody was removed */
    int leaving = js->st.nremoved > 0;
    for (size_t i = 0; i < js->st.nservers && !leaving; i++) leaving = js->st.servers[i]->draining;
    if (leaving) drain_pass(js);
}

void jr__drain_note(jr__js *js, const jr__meta_result *res)
{
    if (!res->changed) return;
    switch (res->type) {
    case JR__META_SERVER_INFO:
    case JR__META_SERVER_JOIN:
    case JR__META_SERVER_REMOVE:
    case JR__META_SERVER_DRAIN:
    case JR__META_STREAM_UPDATE:
    case JR__META_STREAM_CONVERGED:
    case JR__META_PEER_MOVE:
        js->drain_dirty = 1;
        break;
    default:
        break;
    }
}

/* Cluster info -------------------------------------------------------------------------------*/

/* Appends "stream" or "stream/consumer" as a str. */
static void put_asset(jr__buf *b, const jr__meta_stream *s, const jr__meta_consumer *c)
{
    char name[JR_STREAM_NAME_MAX + JR_CONSUMER_NAME_MAX + 2];
    snprintf(name, sizeof name, "%s%s%s", s->name, c ? "/" : "", c ? c->name : "");
    jr__meta_put_str(b, name);
}

/* 1 if s (c) has a replica on `server` that could not be moved now: no change in flight and no
 * server qualifies (the meta leader's placement, which only the leader's view of liveness
 * makes exact). */
static int unplaced(jr__js *js, const jr__meta_stream *s, const jr__meta_consumer *c,
                    const char *server)
{
    if (jr__meta_stream_busy(s) || (c && jr__meta_consumer_busy(c))) return 0;
    jr__meta_op op;
    move_op(&op, s, c, server);
    const char *peers[JR_MAX_REPLICAS];
    size_t np;
    char msg[JR__JS_MSG_MAX];
    return jr__move_place(js, &op, peers, &np, msg, sizeof msg) == JR_EPEERREMAP;
}

/* Walks the replicas on `server` in name order: each stream, then its consumers. With `only` set,
 * only the unplaced ones. Writes at most JR_DRAIN_LIST_MAX as a list<str>. */
static void put_assets(jr__js *js, const char *server, int only, jr__buf *b)
{
    const jr__meta_state *st = &js->st;
    size_t n = 0;
    size_t at = b->len;
    jr__buf_varint(b, 0); /* patched below: a count below 128 is one byte */
    for (size_t i = 0; i < st->nstreams && n < JR_DRAIN_LIST_MAX; i++) {
        const jr__meta_stream *s = st->streams[i];
        int on = jr__meta_stream_has_peer(s, server);
        int stream_stuck = on && only ? unplaced(js, s, NULL, server) : 0;
        if (on && (!only || stream_stuck)) {
            put_asset(b, s, NULL);
            n++;
        }
        for (size_t k = 0; k < s->nconsumers && n < JR_DRAIN_LIST_MAX; k++) {
            const jr__meta_consumer *c = s->consumers[k];
            if (!jr__meta_consumer_has_peer(c, server)) continue;
            if (only && !(stream_stuck && unplaced(js, s, c, server))) continue;
            put_asset(b, s, c);
            n++;
        }
    }
    if (!b->err) b->data[at] = (uint8_t)n;
}

void jr__drain_report(jr__js *js, const char *server, jr__buf *b)
{
    put_assets(js, server, 0, b);
    put_assets(js, server, 1, b);
}

void jr__drain_report_under(jr__js *js, jr__buf *b)
{
    const jr__meta_state *st = &js->st;
    size_t n = 0;
    size_t at = b->len;
    jr__buf_varint(b, 0);
    for (size_t i = 0; i < st->nstreams && st->nremoved && n < JR_DRAIN_LIST_MAX; i++) {
        const jr__meta_stream *s = st->streams[i];
        int short_peer = 0;
        for (size_t p = 0; p < s->npeers && !short_peer; p++)
            short_peer = jr__meta_server_removed(st, s->peers[p]);
        if (short_peer) {
            put_asset(b, s, NULL);
            n++;
        }
        for (size_t k = 0; k < s->nconsumers && n < JR_DRAIN_LIST_MAX; k++) {
            const jr__meta_consumer *c = s->consumers[k];
            int cs = 0;
            for (size_t p = 0; p < c->npeers && !cs; p++)
                cs = jr__meta_server_removed(st, c->peers[p]);
            if (!cs) continue;
            put_asset(b, s, c);
            n++;
        }
    }
    if (!n && !b->err)
        b->len = at; /* none: the report ends as it did before the list existed */
    else if (!b->err)
        b->data[at] = (uint8_t)n;
}

/* Public -------------------------------------------------------------------------------------*/

static int drain_request(jr_node *n, const char *server, uint8_t kind, jr_meta_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb != NULL && server != NULL);
    if (rc) return rc;
    if (!jr__meta_name_ok(server, strlen(server)))
        return jr__node_err(n, JR_EINVAL,
                            "server: not a valid server name (1..255 bytes, no whitespace or "
                            "control characters)");
    jr__node_enter(n);
    jr__js *js = jr__js_of(n);
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_SERVER_DRAIN;
    op.server.name = server;
    op.action = kind;
    /* answered as an update (cb.admin) once the op applied: a meta request like any other */
    jr__req *r = jr__mnode_send_internal(js, JR__REQ_UPDATE, &op);
    if (!r) {
        rc = jr__node_err(n, JR_ENOMEM, "out of memory");
    } else {
        r->deadline = jr__deadline(jr__node_now(n), js->timeout_ns);
        r->cb.admin = cb;
        r->arg = arg;
        r->kind = JR__RPC_META;
        snprintf(r->stream, sizeof r->stream, "%s", server);
        jr__mnode_send(r);
    }
    jr__node_leave(n);
    return rc;
}

int jr_server_evacuate(jr_node *n, const char *server, jr_meta_cb cb, void *arg)
{
    return drain_request(n, server, JR__META_DRAIN_START, cb, arg);
}

int jr_server_evacuate_cancel(jr_node *n, const char *server, jr_meta_cb cb, void *arg)
{
    return drain_request(n, server, JR__META_DRAIN_CANCEL, cb, arg);
}
