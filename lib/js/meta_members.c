/*
 * meta_members — servers joining and leaving a running cluster (contract in js.h
 * "meta_members.c"): the joiner's requests, the member that forwards them, the meta leader's
 * decisions (SERVER_JOIN, SERVER_REMOVE with the re-placement of the removed server's streams)
 * and its membership duty over the meta group's own configuration, the peer table following
 * the meta state, and a removed server stopping.
 *
 * Dissertation §4.1: the meta group's configuration changes one server at a time; §4.2.1: a new
 * server joins as a non-voting member and is promoted only once it holds the log, so a join
 * never lowers the number of failures the meta group tolerates. The duty is recomputed from the
 * configuration and the meta state on every visit (lib/meta/members.h), so a meta leader that
 * takes over mid-change resumes it.
 */
#include <stdio.h>
#include <string.h>

#include "meta/members.h"
#include "meta/placement.h"
#include "js/js.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "util/deadline.h"

/* Entries a new member may trail the meta leader's log and still be promoted. */
#define MM_SLACK 64
/* A server not heard from for longer is taken as possibly down by the removal's re-placement:
 * three heartbeats (the meta leader hears from every member each one). */
#define QUIET_NS(js) (3 * (js)->heartbeat_ns)

/* Peers and stopping -----------------------------------------------------------------------*/

void jr__mm_stop(jr__js *js, const char *why)
{
    jr_node *n = js->n;
    if (js->removed || js->closing) return;
    js->removed = 1;
    jr__node_log(n, JR_LOG_ERROR,
                 "server '%s' was removed from the cluster (%s): it takes no further part, and "
                 "every request on it fails with JR_EREMOVED",
                 js->name, why);
    jr__js_timer_cancel(js, &js->meta_timer);
    while (js->reqs)
        jr__req_finish(js->reqs, JR_EREMOVED, "server '%s' was removed from the cluster", js->name);
    jr__node_set_removed(n);
}

static int in_conf(jr__js *js, jr__id id);

/* The removed servers other than this one: marked removed in the peer table (their frames
 * refused from now on) once the meta group's configuration no longer lists them. Until then a
 * removed server may still be handing over its leaderships (jr__mm_leave), which needs its
 * frames taken; the meta leader's duty takes it out of the configuration next. */
static void mark_removed(jr__js *js)
{
    jr_node *n = js->n;
    const jr__meta_state *st = &js->st;
    js->mark_pending = 0;
    for (size_t i = 0; i < st->nremoved; i++) {
        const char *name = st->removed[i];
        if (strcmp(name, js->name) == 0) continue;
        jr__peer *p = jr__peer_find_name(n, name);
        if (p && jr__peer_removed(p)) continue;
        if (p && in_conf(js, jr__peer_get_id(p))) {
            js->mark_pending = 1; /* jr__mm_tick looks again */
            continue;
        }
        jr__node_peer_set_removed(n, name);
    }
}

void jr__mm_sync_peers(jr__js *js)
{
    jr_node *n = js->n;
    const jr__meta_state *st = &js->st;
    for (size_t i = 0; i < st->nservers; i++) {
        const char *name = st->servers[i]->name;
        if (strcmp(name, js->name) == 0) continue;
        int rc = jr__node_peer_learn(n, name);
        if (rc)
            jr__node_log(n, JR_LOG_WARN, "peer table: server '%s' not added: %s", name,
                         jr_strerror(rc));
    }
    if (st->nremoved > js->mm_nremoved)
        js->mm_grace = jr__deadline(jr__node_now(n), JR__MM_LEAVE_ELECTIONS * js->election_ns);
    js->mm_nremoved = st->nremoved;
    /* a committed removal declares the server gone for this node's groups (jr__node_peer_gone) */
    for (size_t i = 0; i < st->nremoved; i++) {
        int rc = jr__node_peer_gone(n, st->removed[i]);
        if (rc)
            jr__node_log(n, JR_LOG_WARN, "peer table: removed server '%s' not added: %s",
                         st->removed[i], jr_strerror(rc));
    }
    mark_removed(js);
    if (jr__meta_server_removed(st, js->name)) jr__mm_leave(js);
}

/* Leaving ----------------------------------------------------------------------------------*/

/* 1 if this replica of g leads it and another voter could take over. */
static int leads_shared(jr__js *js, const jr_group *g)
{
    const jr__raft *r = g ? jr__group_consensus(g) : NULL;
    if (!r || jr__raft_role(r) != JR_LEADER) return 0;
    const jr__conf *c = jr__raft_conf(r);
    for (uint32_t i = 0; c && i < c->n; i++)
        if (c->m[i].voter && c->m[i].id != js->self) return 1;
    return 0;
}

/* 1 if this server is still a voter of g's configuration beside others: the group converges
 * to an assignment without it (its replacement catches up, is promoted, then it is removed;
 * or the meta leader re-places it later, once its other peers are online), and may need its
 * vote until then (an R2 group needs both old voters until the new one votes). */
static int needed(jr__js *js, const jr_group *g)
{
    const jr__raft *r = g ? jr__group_consensus(g) : NULL;
    const jr__conf *c = r ? jr__raft_conf(r) : NULL;
    const jr__member *me = c ? jr__conf_find(c, js->self) : NULL;
    if (!me || !me->voter) return 0;
    for (uint32_t i = 0; i < c->n; i++)
        if (c->m[i].voter && c->m[i].id != js->self) return 1;
    return 0;
}

/* Starts the transfer of g's leadership, if this replica leads it, to a caught-up voter (the
 * core's choice). None caught up yet: asked again at the next visit. Returns 1 while this
 * replica still leads g and another voter could take over. */
static int hand_over(jr__js *js, jr_group *g, const char *what)
{
    if (!leads_shared(js, g)) return 0;
    if (!jr__raft_transferring(jr__group_consensus(g)) &&
        jr_group_transfer(g, NULL, NULL, NULL) == 0)
        jr__node_log(js->n, JR_LOG_INFO, "removed: hands the leadership of %s over", what);
    return 1;
}

void jr__mm_leave(jr__js *js)
{
    if (js->removed || js->closing || js->leaving) return;
    js->leaving = 1;
    js->leave_until = jr__deadline(jr__node_now(js->n), JR__MM_LEAVE_ELECTIONS * js->election_ns);
    /* from now on it serves no request (jr__js_entry says JR_EREMOVED): its groups only hand
     * their leadership over and replicate until they converged without it (leave_step) */
    jr__node_log(js->n, JR_LOG_WARN,
                 "server '%s' was removed from the cluster: it hands the leadership of its "
                 "groups over, then stops",
                 js->name);
    while (js->reqs)
        jr__req_finish(js->reqs, JR_EREMOVED, "server '%s' was removed from the cluster", js->name);
    jr__js_timer_arm(js, &js->meta_timer, jr__node_now(js->n)); /* leave_step, outside apply */
}

/* The meta timer while leaving: every group this server leads with other voters is handed
 * over (consumers and streams first), and it stays a member (a voter that replicates, serving
 * no request) of each group that converges to an assignment without it until that group
 * removed it; it stops once neither is left, or at leave_until. The meta group's leader keeps
 * it in the meta configuration while it is heard from (duty), so its peers take its frames
 * meanwhile. */
static void leave_step(jr__js *js)
{
    char what[96];
    int leads = 0;
    for (jr__crep *r = js->crep_list; r; r = r->next) {
        snprintf(what, sizeof what, "consumer '%s' > '%s'", r->stream, r->name);
        leads |= hand_over(js, r->g, what);
        leads |= needed(js, r->g);
    }
    for (jr__srep *r = js->rep_list; r; r = r->next) {
        snprintf(what, sizeof what, "stream '%s'", r->name);
        leads |= hand_over(js, r->g, what);
        leads |= needed(js, r->g);
    }
    leads |= hand_over(js, js->meta, "the meta group");
    if (!leads || jr__node_now(js->n) >= js->leave_until) {
        jr__mm_stop(js, "the meta group's log says so");
        return;
    }
    jr__js_timer_arm(js, &js->meta_timer, jr__deadline(jr__node_now(js->n), js->heartbeat_ns));
}

void jr__mm_learn_pending(jr__js *js)
{
    if (!js->meta) return;
    const jr__raft *r = jr__group_consensus(js->meta);
    uint64_t last = jr__raft_last_index(r);
    for (uint64_t i = jr__group_applied(js->meta) + 1; i <= last; i++) {
        jr__entry e;
        if (jr__raft_entry(r, i, &e) != 0 || e.type != JR__ENTRY_NORMAL) continue;
        jr__meta_op op;
        if (jr__meta_op_decode(e.data, e.len, js->alloc, &op) != 0) continue;
        if (op.type == JR__META_SERVER_JOIN && !jr__meta_server_removed(&js->st, op.server.name) &&
            strcmp(op.server.name, js->name) != 0)
            jr__node_peer_learn(js->n, op.server.name);
        jr__meta_op_free(&op);
    }
}

void jr__mm_removed_request(jr__js *js, jr__id from, uint64_t rpc_id, const uint8_t *p, size_t len)
{
    jr__peer *fp = jr__peer_find(js->n, from);
    if (len == strlen(js->name) && memcmp(p, js->name, len) == 0 && fp) {
        char why[320];
        snprintf(why, sizeof why, "server '%s' refused its frames", jr__peer_get_name(fp));
        jr__rpc_respond(js->n, from, rpc_id, 0, NULL, 0);
        jr__mm_stop(js, why);
        return;
    }
    jr__rpc_respond(js->n, from, rpc_id, JR_EINVAL, NULL, 0);
}

/* The meta group's configuration ---------------------------------------------------------*/

static const jr__conf *meta_conf(jr__js *js)
{
    return js->meta ? jr__raft_conf(jr__group_consensus(js->meta)) : NULL;
}

static int in_conf(jr__js *js, jr__id id)
{
    const jr__conf *c = meta_conf(js);
    return c && jr__conf_find(c, id) != NULL;
}

int jr__mm_joining(jr__js *js)
{
    return js->join && !jr__node_group_known(js->n, JR__META_GROUP_ID);
}

/* The ids the meta group's configuration should hold: its members that were not removed, and
 * every server of the meta state. Returns their number. */
static size_t wanted(jr__js *js, uint64_t *want, size_t cap)
{
    jr_node *n = js->n;
    size_t nw = 0;
    const jr__conf *c = meta_conf(js);
    for (uint32_t i = 0; c && i < c->n && nw < cap; i++) {
        jr__peer *p = jr__peer_find(n, c->m[i].id);
        if (p && (jr__peer_removed(p) || jr__meta_server_removed(&js->st, jr__peer_get_name(p))))
            continue;
        want[nw++] = c->m[i].id;
    }
    for (size_t i = 0; i < js->st.nservers && nw < cap; i++) {
        jr__peer *p = jr__peer_find_name(n, js->st.servers[i]->name);
        if (!p) continue;
        int have = 0;
        for (size_t k = 0; k < nw && !have; k++) have = want[k] == jr__peer_get_id(p);
        if (!have) want[nw++] = jr__peer_get_id(p);
    }
    return nw;
}

/* 1 while a membership change of the meta group is in progress (a server joins or leaves),
 * other than one of server `except` (0: none): a server that joined but never caught up (it
 * died, or never was what it claimed) would otherwise block its own removal for good. */
static int busy(jr__js *js, jr__id except)
{
    if (js->mm_serial || js->mm_proposed > js->st.applied) return 1;
    const jr__conf *c = meta_conf(js);
    if (!c) return 1;
    uint64_t want[JR__MAX_MEMBERS];
    size_t nw = wanted(js, want, JR__MAX_MEMBERS);
    size_t voters = 0, members = 0;
    for (size_t k = 0; k < nw; k++) {
        if (want[k] == except) continue;
        const jr__member *m = jr__conf_find(c, want[k]);
        if (!m || !m->voter) return 1;
        voters++;
    }
    for (uint32_t i = 0; i < c->n; i++) members += c->m[i].id != except;
    return voters != members;
}

static void mm_done(void *arg, int status)
{
    jr__js *js = arg;
    (void)status;
    js->mm_serial = 0;
    if (!js->closing && !js->removed)
        jr__js_timer_arm(js, &js->meta_timer, jr__node_now(js->n)); /* the next step */
}

/* The meta leader's duty: one single-server change toward the wanted configuration. */
static void duty(jr__js *js)
{
    jr_node *n = js->n;
    int self;
    if (!js->meta || !jr__mnode_leader(js, &self) || !self) return;
    const jr__raft *raft = jr__group_consensus(js->meta);
    uint64_t floor = jr__ack_floor_update(&js->mm_acks, jr__node_now(n),
                                          jr__raft_commit_index(raft), js->election_ns);
    if (js->mm_serial) return;
    if (!jr__raft_ready(raft) || jr__raft_transferring(raft) || !jr__mnode_replayed(js)) return;
    uint64_t want[JR__MAX_MEMBERS];
    size_t nw = wanted(js, want, JR__MAX_MEMBERS);
    const jr__conf *c = jr__raft_conf(raft);
    jr__memb m[JR__MAX_MEMBERS];
    uint8_t heard[JR__MAX_MEMBERS];
    int lagging = 0;
    uint64_t needed = jr__raft_stand_in_needs(raft); /* observers a stand-in needs (raft.h) */
    for (uint32_t i = 0; i < c->n; i++) {
        m[i].id = c->m[i].id;
        m[i].voter = c->m[i].voter;
        m[i].needed = (uint8_t)(needed >> i & 1);
        m[i].alive = m[i].caught_up = heard[i] = c->m[i].id == js->self;
        jr_peer_status ps;
        ps.size = sizeof ps;
        if (m[i].caught_up || jr_group_peer(js->meta, i, &ps) != 0) continue;
        heard[i] = ps.last_seen_ns != UINT64_MAX && ps.last_seen_ns <= 2 * js->election_ns;
        /* live (rule 4): heard from and acknowledging, since one whose writes fail is still
         * heard from (members.h jr__ack_floor) */
        m[i].alive = (uint8_t)(heard[i] && ps.match_index >= floor);
        /* as a stream's members (stream_peers.c): the latest configuration held durably */
        m[i].caught_up = heard[i] && ps.lag <= MM_SLACK &&
                         ps.match_index >= jr__raft_conf_index(raft) && !ps.damaged &&
                         !ps.unvouched;
        lagging |= !m[i].voter && !m[i].caught_up;
    }
    jr__memb_next x = jr__members_next(js->self, m, c->n, want, nw);
    if (x.step == JR__MEMB_CONVERGED) return;
    if (x.step == JR__MEMB_WAIT) {
        /* A quiet group sends nothing a new member could answer: an idempotent entry (this
         * server's own facts again) wakes it so the member is probed. */
        if (lagging && jr__raft_quiet(raft)) {
            jr__meta_op op;
            memset(&op, 0, sizeof op);
            op.type = JR__META_SERVER_INFO;
            op.server.name = js->name;
            op.server.cluster = js->cluster;
            op.server.tags = (const char *const *)js->tags;
            op.server.ntags = js->ntags;
            op.server.capacity_bytes = js->capacity;
            op.server.max_assets = js->max_assets;
            jr__buf_reset(&js->scratch);
            uint64_t index, term;
            if (jr__meta_op_encode(&op, &js->scratch) == 0)
                jr__group_propose(js->meta, js->scratch.data, js->scratch.len, NULL, NULL, &index,
                                  &term);
        }
        return;
    }
    jr__peer *p = jr__peer_find(n, x.peer);
    if (!p) return;
    const char *name = jr__peer_get_name(p);
    if (x.step == JR__MEMB_REMOVE && jr__meta_server_removed(&js->st, name) &&
        jr__node_now(n) < js->mm_grace) {
        /* a removed server still heard from is left in the configuration for a while: it
         * learns of its removal from the log and hands its leaderships over first
         * (jr__mm_leave), which its peers take only while it is a member */
        for (uint32_t i = 0; i < c->n; i++)
            if (m[i].id == x.peer && heard[i]) {
                jr__js_timer_arm(js, &js->meta_timer, js->mm_grace);
                return;
            }
    }
    int rc;
    const char *what;
    switch (x.step) {
    case JR__MEMB_ADD:
        rc = jr_group_add_observer(js->meta, name, mm_done, js);
        what = "adds observer";
        break;
    case JR__MEMB_PROMOTE:
        rc = jr_group_promote(js->meta, name, mm_done, js);
        what = "promotes";
        break;
    case JR__MEMB_REMOVE:
        rc = jr_group_remove(js->meta, name, mm_done, js);
        what = "removes";
        break;
    default:
        rc = jr_group_transfer(js->meta, name, mm_done, js);
        what = "hands leadership to";
        break;
    }
    if (rc != 0) return; /* JR_EBUSY and the like: the next visit tries again */
    js->mm_serial = ++js->next_serial;
    jr__node_log(n, JR_LOG_INFO, "meta group: %s %s", what, name);
}

/* Removals waiting for the configuration: answered once it no longer lists the server. */
static void answer_removals(jr__js *js)
{
    jr_node *n = js->n;
    for (int again = 1; again;) {
        again = 0;
        for (jr__req *r = js->reqs; r; r = r->next) {
            if (r->what != JR__REQ_SERVER_REMOVE || r->state != 3 || r->done) continue;
            jr__peer *p = jr__peer_find_name(n, r->stream);
            if (p && in_conf(js, jr__peer_get_id(p))) continue;
            jr__req_finish(r, 0, NULL); /* r->msg holds what the apply said */
            again = 1;
            break;
        }
    }
}

/* Joining ---------------------------------------------------------------------------------*/

static void put_info(jr__js *js, jr__meta_op *op, uint8_t type)
{
    memset(op, 0, sizeof *op);
    op->type = type;
    op->server.name = js->name;
    op->server.cluster = js->cluster;
    op->server.tags = (const char *const *)js->tags;
    op->server.ntags = js->ntags;
    op->server.capacity_bytes = js->capacity;
    op->server.max_assets = js->max_assets;
}

static void on_join_answer(jr_node *n, void *arg, int status, int answered, const uint8_t *p,
                           size_t len)
{
    jr__js *js = arg;
    js->join_rpc = 0;
    if (!answered || js->closing || js->removed) return; /* asked again at join_next */
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    size_t cnt = jr__meta_rd_count(&rd, 2, 2 * JR__MAX_MEMBERS);
    char name[JR__META_NAME_MAX + 1];
    for (size_t i = 0; i < cnt && !rd.err; i++) {
        size_t nl;
        const char *s = jr__meta_rd_str(&rd, &nl, JR__META_NAME_MAX);
        if (!s || !jr__meta_name_ok(s, nl)) break;
        memcpy(name, s, nl);
        name[nl] = 0;
        if (strcmp(name, js->name) != 0) jr__node_peer_learn(n, name); /* the cluster's servers */
    }
    size_t ml = 0;
    const char *msg = rd.err ? NULL : jr__meta_rd_str(&rd, &ml, JR__JS_MSG_MAX);
    char text[JR__JS_MSG_MAX + 1];
    snprintf(text, sizeof text, "%.*s", (int)(msg ? ml : 0), msg ? msg : "");
    if (status == JR_EREMOVED) {
        jr__mm_stop(js, "its join was refused");
        return;
    }
    if (status == 0)
        jr__node_log(n, JR_LOG_INFO, "join accepted: waiting to be added to the meta group");
    else
        jr__node_log(n, JR_LOG_WARN, "join refused: %s (%s); asking again", jr_strerror(status),
                     text);
}

/* The joiner's side: a join request to the next seed every election timeout, until the meta
 * group's configuration names this server. */
static void join_tick(jr__js *js)
{
    jr_node *n = js->n;
    if (!js->join || js->removed || js->join_rpc || in_conf(js, js->self)) return;
    uint64_t now = jr__node_now(n);
    if (now < js->join_next) return;
    js->join_next = jr__deadline(now, js->election_ns);
    size_t np = jr__node_npeers(n);
    jr__peer *to = NULL;
    for (size_t k = 0; k < np && !to; k++) {
        size_t i = (js->join_seed + k) % np;
        jr__peer *p = jr__node_peer(n, i);
        if (jr__peer_get_id(p) == js->self || jr__peer_removed(p)) continue;
        to = p;
        js->join_seed = i + 1;
    }
    if (!to) return;
    jr__meta_op op;
    put_info(js, &op, JR__META_SERVER_JOIN);
    jr__buf_reset(&js->scratch);
    if (jr__meta_op_encode(&op, &js->scratch) != 0) return;
    jr_iovec iov = {js->scratch.data, js->scratch.len};
    jr__rpc_call(n, jr__peer_get_id(to), JR__RPC_JOIN, &iov, 1, 2 * js->election_ns, on_join_answer,
                 js, &js->join_rpc);
}

/* The member's side: the forwarded join completed; answer the joiner with the outcome and the
 * names of the cluster's servers. */
static void join_forwarded(void *arg, int status, const char *msg)
{
    struct jr__mm_join *slot = arg;
    jr__js *js = slot->js;
    slot->used = 0;
    slot->req = NULL;
    if (js->closing || js->removed) return;
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    const jr__conf *c = meta_conf(js);
    size_t cnt = 0;
    const char *names[2 * JR__MAX_MEMBERS];
    for (size_t i = 0; i < js->st.nservers && cnt < JR__MAX_MEMBERS; i++)
        names[cnt++] = js->st.servers[i]->name;
    for (uint32_t i = 0; c && i < c->n; i++) {
        jr__peer *p = jr__peer_find(js->n, c->m[i].id);
        if (p && !jr__meta_server_find(&js->st, jr__peer_get_name(p)))
            names[cnt++] = jr__peer_get_name(p);
    }
    jr__buf_varint(b, cnt);
    for (size_t i = 0; i < cnt; i++) jr__meta_put_str(b, names[i]);
    jr__meta_put_str(b, msg);
    if (b->err) return;
    jr_iovec iov = {b->data, b->len};
    jr__rpc_respond_stranger(js->n, slot->name, slot->rpc_id, status, &iov, 1);
}

static void refuse_join(jr__js *js, const char *from, uint64_t rpc_id, int status, const char *text)
{
    uint8_t b[JR__JS_MSG_MAX + 16];
    jr__buf out = {b, 0, sizeof b, 0, NULL};
    jr__buf_varint(&out, 0);
    jr__meta_put_str(&out, text);
    jr_iovec iov = {out.data, out.len};
    jr__rpc_respond_stranger(js->n, from, rpc_id, status, &iov, 1);
}

void jr__mm_join_request(jr__js *js, const char *from, uint64_t rpc_id, const uint8_t *p,
                         size_t len)
{
    if (js->removed || js->closing) return;
    jr__meta_op op;
    if (jr__meta_op_decode(p, len, js->alloc, &op) != 0) {
        refuse_join(js, from, rpc_id, JR_EINVAL, "join request does not decode");
        return;
    }
    if (op.type != JR__META_SERVER_JOIN || op.request_id || strcmp(op.server.name, from) != 0) {
        jr__meta_op_free(&op);
        refuse_join(js, from, rpc_id, JR_EINVAL, "join request is not a SERVER_JOIN of its sender");
        return;
    }
    struct jr__mm_join *slot = NULL;
    for (size_t i = 0; i < JR__MM_JOINS && !slot; i++)
        if (js->mm_joins[i].used && strcmp(js->mm_joins[i].name, from) == 0)
            slot = &js->mm_joins[i];
    if (slot) { /* asked again: the answer goes to the newest request */
        slot->rpc_id = rpc_id;
        jr__meta_op_free(&op);
        return;
    }
    for (size_t i = 0; i < JR__MM_JOINS && !slot; i++)
        if (!js->mm_joins[i].used) slot = &js->mm_joins[i];
    if (!slot) {
        jr__meta_op_free(&op);
        refuse_join(js, from, rpc_id, JR_EBUSY, "too many joins in progress here; ask again");
        return;
    }
    op.request_id = 0;
    op.origin = NULL;
    jr__req *r = jr__mnode_send_internal(js, JR__REQ_SERVER_JOIN, &op);
    jr__meta_op_free(&op);
    if (!r) {
        refuse_join(js, from, rpc_id, JR_ENOMEM, "out of memory");
        return;
    }
    slot->js = js;
    slot->used = 1;
    slot->rpc_id = rpc_id;
    slot->req = r;
    snprintf(slot->name, sizeof slot->name, "%s", from);
    r->cb.admin = join_forwarded;
    r->arg = slot;
    jr__node_log(js->n, JR_LOG_INFO, "server '%s' asks to join: forwarded to the meta leader",
                 from);
    jr__mnode_send(r);
}

/* The meta leader's decisions --------------------------------------------------------------*/

static void reply_text(jr__js *js, const jr__route *rt, int status, const char *text)
{
    jr__route_reply(js, rt, status, text, strlen(text));
}

/* New peer sets for the streams of server `gone` (name order), placed without it: its other
 * peers stay and placement picks one more. A stream whose only replica it holds, or that is
 * mid-change, is left as it is, and so is one placement finds no server for. *out (allocated;
 * free with jr__free, names borrowed from the state) and the count. 0 or JR_ENOMEM. */
static int replace_all(jr__js *js, const char *gone, jr__meta_replace **out, size_t *nout,
                       const char ***names_out)
{
    jr__meta_state *st = &js->st;
    size_t cnt = 0;
    for (size_t i = 0; i < st->nstreams; i++) cnt += jr__meta_stream_has_peer(st->streams[i], gone);
    *out = NULL;
    *nout = 0;
    *names_out = NULL;
    if (!cnt) return 0;
    size_t ns = st->nservers;
    jr__meta_replace *rep = jr__calloc(js->alloc, cnt, sizeof *rep);
    const char **names = jr__calloc(js->alloc, cnt * JR_MAX_REPLICAS, sizeof *names);
    jr__place_server *servers = jr__calloc(js->alloc, ns ? ns : 1, sizeof *servers);
    if (!rep || !names || !servers) {
        jr__free(js->alloc, rep);
        jr__free(js->alloc, names);
        jr__free(js->alloc, servers);
        return JR_ENOMEM;
    }
    jr__meta_place_servers(st, servers, ns);
    for (size_t i = 0; i < ns; i++) servers[i].online = jr__mnode_online(js, servers[i].name, NULL);
    size_t k = 0;
    for (size_t i = 0; i < st->nstreams; i++) {
        const jr__meta_stream *s = st->streams[i];
        if (!jr__meta_stream_has_peer(s, gone) || s->npeers < 2 || jr__meta_stream_busy(s))
            continue;
        const char *keep[JR_MAX_REPLICAS];
        size_t nkeep = 0, offline = 0;
        for (size_t p = 0; p < s->npeers; p++)
            if (strcmp(s->peers[p], gone) != 0) {
                keep[nkeep++] = s->peers[p];
                uint64_t seen;
                jr__mnode_online(js, s->peers[p], &seen);
                offline += seen > QUIET_NS(js);
            }
        /* a peer not heard from lately may be down and not have created the group yet: after
         * this change, which records no origin, it would join rather than bootstrap, and
         * nobody could add it; the drain re-places the stream instead once its peers are
         * online, with an origin (meta_drain.c, stream_replica.c origin_kept) */
        if (offline) continue;
        const jr_stream_config *c = &s->cfg->c;
        const char *cluster = jr__stream_placement_cluster(c);
        if (!cluster || !*cluster) {
            const jr__meta_server *o = jr__meta_server_find(st, keep[0]);
            cluster = o ? o->cluster : js->cluster;
        }
        jr__place_request req;
        memset(&req, 0, sizeof req);
        req.replicas = c->replicas;
        req.cluster = cluster;
        req.tags = jr__stream_placement_tags(c, &req.ntags);
        req.max_bytes = c->max_bytes;
        req.unique_tag = js->unique_tag;
        req.seed = jr__xxh3(c->name, strlen(c->name));
        req.keep = keep;
        req.nkeep = nkeep;
        req.avoid = &gone;
        req.navoid = 1;
        jr__place_result res;
        if (jr__placement_select(servers, ns, &req, &res, NULL, NULL, 0) != 0) continue;
        const char **pv = names + k * JR_MAX_REPLICAS;
        for (size_t p = 0; p < res.npeers; p++) pv[p] = servers[res.peers[p]].name;
        rep[k].stream = s->name;
        rep[k].peers = pv;
        rep[k].npeers = res.npeers;
        k++;
    }
    jr__free(js->alloc, servers);
    *out = rep;
    *nout = k;
    *names_out = names;
    return 0;
}

static void propose_op(jr__js *js, const jr__route *rt, const jr__meta_op *op)
{
    uint64_t index = 0, term = 0;
    jr__buf_reset(&js->scratch);
    int rc = jr__meta_op_encode(op, &js->scratch);
    if (rc == 0)
        rc = jr__group_propose(js->meta, js->scratch.data, js->scratch.len, NULL, NULL, &index,
                               &term);
    if (rc != 0) {
        char msg[JR__JS_MSG_MAX];
        snprintf(msg, sizeof msg, "meta leader could not propose: %s", jr_strerror(rc));
        reply_text(js, rt, rc, msg);
        return;
    }
    js->mm_proposed = index;
    jr__mnode_reply_proposed(js, rt, index, term);
}

static void handle_remove(jr__js *js, const jr__route *rt, const jr__meta_op *op)
{
    jr_node *n = js->n;
    const char *name = op->server.name;
    char msg[JR__JS_MSG_MAX];
    jr__peer *tp = jr__peer_find_name(n, name);
    if (!jr__meta_server_find(&js->st, name) && !(tp && in_conf(js, jr__peer_get_id(tp)))) {
        snprintf(msg, sizeof msg, "server is not a member of the cluster: '%s' is unknown", name);
        reply_text(js, rt, JR_ENOTMEMBER, msg);
        return;
    }
    if (busy(js, tp ? jr__peer_get_id(tp) : 0)) {
        reply_text(js, rt, JR_EBUSY,
                   "cluster member change is in progress: a server joins or leaves the meta "
                   "group; ask again once it is done");
        return;
    }
    /* The voters left must still have an online majority, or nothing could commit the
     * removal's configuration change (nor anything after it). */
    const jr__conf *c = meta_conf(js);
    size_t left = 0, up = 0;
    for (uint32_t i = 0; c && i < c->n; i++) {
        if (!c->m[i].voter || (tp && c->m[i].id == jr__peer_get_id(tp))) continue;
        left++;
        jr__peer *p = jr__peer_find(n, c->m[i].id);
        up += c->m[i].id == js->self || (p && jr__mnode_online(js, jr__peer_get_name(p), NULL));
    }
    if (left == 0) {
        snprintf(msg, sizeof msg, "server '%s' is the last voter of the meta group", name);
        reply_text(js, rt, JR_EINVAL, msg);
        return;
    }
    if (up < left / 2 + 1) {
        snprintf(msg, sizeof msg,
                 "removing server '%s' would leave the meta group without a quorum: %zu of the "
                 "%zu servers left are online, %zu needed",
                 name, up, left, left / 2 + 1);
        reply_text(js, rt, JR_ENOQUORUM, msg);
        return;
    }
    jr__meta_replace *rep;
    const char **names;
    size_t nrep;
    if (replace_all(js, name, &rep, &nrep, &names) != 0) {
        reply_text(js, rt, JR_ENOMEM, "meta leader out of memory");
        return;
    }
    jr__meta_op x = *op;
    x.replace = rep;
    x.nreplace = nrep;
    jr__node_log(n, JR_LOG_INFO, "meta leader: removing server '%s' (%zu stream%s re-placed)", name,
                 nrep, nrep == 1 ? "" : "s");
    propose_op(js, rt, &x);
    jr__free(js->alloc, rep);
    jr__free(js->alloc, names);
}

void jr__mm_handle(jr__js *js, const jr__route *rt, const jr__meta_op *op, const uint8_t *p,
                   size_t len)
{
    (void)p;
    (void)len;
    jr__meta_result res;
    int rc = jr__meta_check(&js->st, op, &res);
    if (rc != 0) {
        reply_text(js, rt, rc, "meta leader out of memory");
        return;
    }
    if (res.status != 0) {
        reply_text(js, rt, res.status, res.msg);
        return;
    }
    if (op->type == JR__META_SERVER_REMOVE) {
        handle_remove(js, rt, op);
        return;
    }
    /* SERVER_JOIN: a server already admitted is recorded again (idempotent); a new one waits
     * for any membership change in progress and for room */
    if (!jr__meta_server_find(&js->st, op->server.name)) {
        if (busy(js, 0)) {
            reply_text(js, rt, JR_EBUSY,
                       "cluster member change is in progress: ask again once it is done");
            return;
        }
        uint64_t want[JR__MAX_MEMBERS];
        if (wanted(js, want, JR__MAX_MEMBERS) >= JR_STREAMS_MAX_SERVERS) {
            char msg[JR__JS_MSG_MAX];
            snprintf(msg, sizeof msg, "cluster is full: at most %d servers",
                     JR_STREAMS_MAX_SERVERS);
            reply_text(js, rt, JR_ENORESOURCES, msg);
            return;
        }
    }
    propose_op(js, rt, op);
}

void jr__mm_tick(jr__js *js)
{
    if (js->removed || js->closing) return;
    if (js->mark_pending) mark_removed(js);
    if (js->leaving) {
        leave_step(js); /* it takes no new part: only its handovers finish */
        return;
    }
    join_tick(js);
    duty(js);
    answer_removals(js);
}

/* Public ----------------------------------------------------------------------------------*/

int jr_server_peer_remove(jr_node *n, const char *server, jr_meta_cb cb, void *arg)
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
    op.type = JR__META_SERVER_REMOVE;
    op.server.name = server;
    jr__req *r = jr__mnode_send_internal(js, JR__REQ_SERVER_REMOVE, &op);
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
