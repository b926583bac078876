/*
 * meta_replica — the meta group on every server: one Raft group of all servers
 * (JR__META_GROUP_ID, bootstrapped by the configured peers as voters; servers that join later
 * are added by the meta leader, meta_members.c) whose state machine is lib/meta's meta_state.
 * It decides which streams exist and where each one lives.
 *
 * Requests. Stream add/update/delete and every server's SERVER_INFO travel to the meta leader
 * as an encoded meta op (JR__RPC_META) carrying the reply route {request id, origin}. The
 * leader checks the op against its state (jr__meta_check), places the replicas of a new stream
 * (jr__placement_select over jr__meta_place_servers, with liveness from its own view of the
 * meta group), and proposes the op; it answers "proposed at (index, term)" or a refusal. The
 * origin learns the *outcome* only by applying the entry that carries its request id, so the
 * answer is the log's decision, the same on every replica. If the leader fails before the entry
 * commits, the origin sees another entry at that index (or no answer) and re-sends the request
 * to the next leader; a re-sent add of an identical config is idempotent (meta_state), so a
 * stream is created exactly once or not at all.
 *
 * Convergence. After a restore, at open (once the replay is over), for an op that changed no
 * stream and after a failure, the server diffs the replicas it runs against the assignments
 * that name it (jr__meta_desired) and creates, updates or removes local replicas to match — so a
 * restart or a leader failover converges by diffing, not by replaying history. An op that
 * changed one stream (add, update, delete, converged) converges only that stream's replica
 * (jr__mnode_converge_one): a full diff per op would make creating N streams cost N^2. A
 * replica whose stream still exists but no longer names this server (a peer removal) stays
 * until the stream's peer change converged (STREAM_CONVERGED applied) and the meta state
 * replayed what it held at open. No replica is created from a state of that replay either: a
 * past state may show a stream with its original peers, and a server that has since left it
 * (its replica released) would bootstrap the group afresh — a second history at index 1.
 *
 * Peer changes. An update with another replica count or placement gets its new peer set here:
 * a grow keeps the current peers and places the others (placement.c, with them as `keep`), a
 * shrink keeps who members.h says from the stream leader's view of its members (asked first,
 * JR__ADM_HEALTH, when this server does not lead the stream), a move keeps the peers that fit the
 * new placement and places the others; the apply refuses a second change while one converges
 * (JR_EBUSY), and the stream's leader drives the group to the new set (stream_replica.c "Peer
 * changes").
 *
 * Re-sent requests. A request re-sent after an attempt that may have reached the log (no answer,
 * a timeout, a lost leadership) must not be judged against the state that attempt made: a
 * delete would find nothing left to delete and answer JR_ENOTFOUND for a stream it deleted. So
 * every server remembers the last JR__APPLIED_REQS meta ops with a request id that it applied
 * (request id, origin, entry), and the meta leader answers a request whose id it finds there
 * with that entry ("proposed at (index, term)", flagged as applied) instead of checking it
 * again: the origin learns the outcome by applying that entry, as for any proposal. An origin
 * that has applied past that entry without seeing it (it restored a meta snapshot over it) ends
 * the request with JR_ETIMEDOUT: its outcome is not known there. A leader that restored a
 * snapshot over the first attempt (or whose ring moved past it) checks the request as new.
 *
 * No meta leader: requests wait, re-trying every heartbeat, until their deadline (or, with
 * jr_node_config.leaderless_fail_ms, until this server's meta replica has been leaderless that
 * long: jr__js_leaderless), then fail with JR_ENOLEADER ("no meta leader"), or JR_ENOQUORUM when a
 * leader was reachable but refused or could not take every attempt (nothing took effect). When an
 * attempt may have reached the meta log — proposed and not committed, or sent and not answered, or
 * answered with a timeout or a lost leadership — the deadline ends it with JR_ETIMEDOUT: it may
 * still take effect.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta/members.h"
#include "meta/placement.h"
#include "js/js.h"
#include "util/alloc.h"
#include "util/deadline.h"
#include "util/checksum.h"

/* The meta group snapshots every META_SNAPSHOT_ENTRIES entries, or as many as the most streams
 * it held once there are more (or 8 MiB of log, snapshot.c): a snapshot encodes every stream,
 * so its cost per entry stays constant however many streams there are (every 1,024 entries made
 * creating 100,000 streams quadratic). */
#define META_SNAPSHOT_ENTRIES 1024

/* The meta group's state machine -------------------------------------------------------------*/

/* Local replicas follow the meta state, but not from inside an apply: creating or removing a
 * replica changes the node's group table while the flush walks it. An apply queues the
 * convergence as an effect (services.h "Effects"), run after the flush loop; group 0 means every
 * stream. Without memory to queue it, the meta timer converges everything later. */
static void converge_effect(jr_node *n, uint64_t group)
{
    jr__js *js = jr__js_of(n);
    if (!js || js->closing) return;
    if (group) {
        jr__mnode_converge_one(js, group);
    } else {
        js->converge_queued = 0;
        jr__mnode_converge(js);
    }
}

static void defer_converge(jr__js *js, uint64_t group)
{
    if (js->converge_queued) return; /* a full convergence is queued: it covers this one */
    if (jr__node_defer(js->n, converge_effect, group) != 0) {
        js->converge_failed = 1;
        return;
    }
    if (!group) js->converge_queued = 1;
}

/* Re-sent requests (header comment): the ring of applied request ids. */
static void remember_applied(jr__js *js, const jr__meta_result *res, uint64_t index)
{
    jr__entry e;
    if (!js->meta || jr__raft_entry(jr__group_consensus(js->meta), index, &e) != 0) return;
    jr__applied_req *a = &js->applied_reqs[js->applied_next];
    js->applied_next = (js->applied_next + 1) % JR__APPLIED_REQS;
    a->id = res->request_id;
    a->origin = jr__xxh3(res->origin, strlen(res->origin));
    a->index = index;
    a->term = e.term;
}

/* The entry that carried request `id` of `origin`, if this server applied it lately. */
static const jr__applied_req *applied_req(const jr__js *js, uint64_t id, const char *origin)
{
    uint64_t h = jr__xxh3(origin, strlen(origin));
    for (size_t i = 0; i < JR__APPLIED_REQS; i++) {
        const jr__applied_req *a = &js->applied_reqs[i];
        if (a->id == id && a->origin == h) return a;
    }
    return NULL;
}

static void meta_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    jr__js *js = ctx;
    jr_node *n = js->n;
    if (js->meta_failed) return;
    jr__meta_result res;
    int rc = jr__meta_apply(&js->st, index, data, len, &res);
    if (rc != 0) {
        /* Only memory: the op can not be skipped, so this replica stops applying. */
        js->meta_failed = 1;
        jr__node_log(n, JR_LOG_ERROR,
                     "meta: cannot apply entry %llu: %s; the meta replica "
                     "stops",
                     (unsigned long long)index, jr_strerror(rc));
        return;
    }
    if (js->meta && js->st.nstreams > META_SNAPSHOT_ENTRIES &&
        js->st.nstreams > jr__group_snapshot_entries(js->meta))
        jr__group_set_snapshot_entries(js->meta, js->st.nstreams); /* raised only */
    jr__drain_note(js, &res);
    if (res.changed && (res.type == JR__META_SERVER_INFO || res.type == JR__META_SERVER_JOIN ||
                        res.type == JR__META_SERVER_REMOVE)) {
        jr__mm_sync_peers(js); /* the peer table follows the meta state's servers */
        if (res.type != JR__META_SERVER_INFO)
            jr__js_timer_arm(js, &js->meta_timer, jr__node_now(n)); /* membership duty */
    }
    if (res.request_id) remember_applied(js, &res, index);
    if (res.request_id && strcmp(res.origin, js->name) == 0) {
        jr__req *r = jr__map_get(&js->meta_reqs, res.request_id);
        if (r && res.cname[0]) snprintf(r->consumer, sizeof r->consumer, "%s", res.cname);
        /* the entry carrying this request's id decides: a re-sent request whose first attempt
         * committed is answered with that attempt's entry, the one that created the stream */
        if (r && res.type == JR__META_STREAM_ADD) r->created = res.status == 0 && res.changed;
        if (r && res.type == JR__META_SERVER_REMOVE && res.status == 0) {
            /* answered once the meta group's configuration no longer lists the server too
             * (jr__mm_tick), or at the deadline */
            r->state = 3;
            snprintf(r->msg, sizeof r->msg, "%s", res.msg);
            /* a running server leaves the configuration once its groups converged without
             * it (jr__mm_leave): the answer may take that long */
            uint64_t leave =
                jr__deadline(jr__node_now(n), (JR__MM_LEAVE_ELECTIONS + 4) * js->election_ns);
            if (r->deadline < leave) r->deadline = leave;
            jr__js_timer_arm(js, &r->timer, r->deadline);
            jr__js_timer_arm(js, &js->meta_timer, jr__node_now(n));
        } else if (r) {
            jr__req_finish(r, res.status, "%s", res.msg);
        }
    }
    /* Requests proposed at an index that now holds another entry were lost: send them again. */
    for (size_t i = 0; i < js->meta_reqs.cap; i++) {
        jr__req *r = js->meta_reqs.slots[i].val;
        if (js->meta_reqs.slots[i].key && r->state == 2 && r->meta_index <= index) {
            r->state = 0;
            jr__js_timer_arm(js, &r->timer, jr__node_now(n));
        }
    }
    int first = !js->meta_replayed && index >= js->meta_recovered;
    if (first) js->meta_replayed = 1; /* releases held back during the replay may go now */
    if (first || (res.changed && (!res.group || res.consumers_gone)))
        defer_converge(js, 0);
    else if (res.changed)
        defer_converge(js, res.group); /* one stream changed: only its replica */
}

int jr__mnode_current(jr__js *js)
{
    int self;
    if (!js->meta || js->meta_failed || !jr__mnode_leader(js, &self)) return 0;
    return jr__group_applied(js->meta) >= jr__raft_commit_index(jr__group_consensus(js->meta));
}

int jr__mnode_replayed(jr__js *js)
{
    if (!js->meta_replayed && js->meta) {
        /* A tail of the log recovered at open that a leader cut never committed (so nothing of
         * it was applied before): the replay ends at what the log still holds. */
        uint64_t upto = js->meta_recovered,
                 last = jr__raft_last_index(jr__group_consensus(js->meta));
        if (last < upto) upto = last;
        if (jr__group_applied(js->meta) >= upto) js->meta_replayed = 1;
    }
    return js->meta_replayed;
}

int jr__mnode_after_restart(jr__js *js, uint64_t index)
{
    if (!js->meta) return 0;
    const jr__raft *r = jr__group_consensus(js->meta);
    return !jr__raft_unvouched(r) && index > jr__raft_vouched_last(r);
}

int jr__mnode_caught_up(jr__js *js)
{
    if (js->meta_caught_up) return 1;
    if (!js->meta || js->meta_failed || !jr__mnode_replayed(js)) return 0;
    const jr__raft *r = jr__group_consensus(js->meta);
    return !jr__raft_unvouched(r) && jr__group_applied(js->meta) >= jr__raft_vouched_last(r);
}

/* The meta timer: once caught up (jr__mnode_caught_up), a full convergence to that state
 * releases the replicas of groups deleted meanwhile (a creation that fails there is retried as
 * ever, and does not keep the others held); the replicas held until then get their votes back. */
static void release_held(jr__js *js)
{
    if (js->meta_caught_up || !jr__mnode_caught_up(js) || jr__mnode_converge(js) != 0) return;
    js->meta_caught_up = 1;
    for (jr__srep *r = js->rep_list; r; r = r->next)
        if (r->g) jr__group_hold(r->g, 0);
    for (jr__crep *r = js->crep_list; r; r = r->next)
        if (r->g) jr__group_hold(r->g, 0);
}

static int meta_snapshot(void *ctx, jr_snapshot_writer *w)
{
    jr__js *js = ctx;
    if (js->meta_failed) return JR_EIO;
    jr__buf_reset(&js->scratch);
    int rc = jr__meta_snapshot(&js->st, &js->scratch);
    if (rc == 0) rc = jr_snapshot_write(w, js->scratch.data, js->scratch.len);
    return rc;
}

static int meta_restore(void *ctx, uint64_t index, const void *data, size_t len)
{
    jr__js *js = ctx;
    int rc = jr__meta_restore(&js->st, data, len);
    if (rc != 0) return rc;
    /* The state's own index is that of the last op applied: entries after it up to the
     * snapshot's index were Raft's own (no-ops, configurations). */
    if (js->st.applied > index) return JR_ECORRUPT;
    js->meta_failed = 0;
    jr__mm_sync_peers(js);
    defer_converge(js, 0);
    return 0;
}

/* Leader ----------------------------------------------------------------------------------*/

const char *jr__mnode_leader(jr__js *js, int *self)
{
    *self = 0;
    if (!js->meta || js->meta_failed) return NULL;
    const jr__raft *r = jr__group_consensus(js->meta);
    if (jr__raft_role(r) == JR_LEADER) {
        *self = 1;
        return js->name;
    }
    return jr_group_leader(js->meta);
}

int jr__mnode_online(jr__js *js, const char *name, uint64_t *seen_ns)
{
    jr_node *n = js->n;
    uint64_t seen = UINT64_MAX, window = 2 * js->election_ns;
    if (strcmp(name, js->name) == 0) {
        seen = 0;
    } else {
        jr__peer *p = jr__peer_find_name(n, name);
        const jr__raft *r = js->meta ? jr__group_consensus(js->meta) : NULL;
        uint64_t last = p ? jr__peer_heard(p) : 0;
        if (p && r && jr__raft_role(r) == JR_LEADER) {
            const jr__conf *c = jr__raft_conf(r);
            for (uint32_t i = 0; i < c->n; i++) {
                jr__progress pr;
                if (c->m[i].id == jr__peer_get_id(p) && jr__raft_progress(r, i, &pr) == 0)
                    last = pr.heard > last ? pr.heard : last; /* received, not assumed */
            }
        }
        if (last) seen = jr__node_now(n) > last ? jr__node_now(n) - last : 0;
    }
    if (seen_ns) *seen_ns = seen;
    return seen <= window;
}

/* Replies to a meta request: proposed at (index, term), or a refusal with its message. */
void jr__mnode_reply_proposed(jr__js *js, const jr__route *rt, uint64_t index, uint64_t term)
{
    uint8_t b[24];
    jr__buf out = {b, 0, sizeof b, 0, NULL};
    jr__buf_varint(&out, index);
    jr__buf_varint(&out, term);
    jr__route_reply(js, rt, 0, out.data, out.len);
}

static void reply_text(jr__js *js, const jr__route *rt, int status, const char *text)
{
    jr__route_reply(js, rt, status, text, strlen(text));
}

static void reply_not_leader(jr__js *js, const jr__route *rt)
{
    int self;
    const char *l = jr__mnode_leader(js, &self);
    jr__route_reply(js, rt, JR_ENOTLEADER, l ? l : "", l ? strlen(l) : 0);
}

/* Proposes an encoded op to the meta group. */
static int propose(jr__js *js, const uint8_t *p, size_t len, uint64_t *index, uint64_t *term)
{
    return jr__group_propose(js->meta, p, len, NULL, NULL, index, term);
}

/* Proposes op with the peer set the leader decided (borrowed for the call). */
static int propose_placed(jr__js *js, jr__meta_op *op, const char **peers, size_t np,
                          uint64_t *index, uint64_t *term)
{
    op->peers = peers;
    op->npeers = np;
    jr__buf_reset(&js->scratch);
    int rc = jr__meta_op_encode(op, &js->scratch);
    if (rc == 0) rc = propose(js, js->scratch.data, js->scratch.len, index, term);
    op->peers = NULL;
    op->npeers = 0;
    return rc;
}

/* Chooses the peers of a new stream, or (keep: the current peers that stay) of a stream that
 * grows or moves; without a cluster in the config, the replicas go to the cluster of server
 * `home` (the asker for a new stream, a current peer otherwise). 0 with names in peers[] (kept
 * ones first); else the refusal, msg set. */
static int place(jr__js *js, const jr__meta_op *op, const char *home, const char *const *keep,
                 size_t nkeep, const char **peers, size_t *npeers, char *msg, size_t msglen)
{
    jr__meta_state *st = &js->st;
    size_t ns = st->nservers;
    jr__place_server *servers = jr__calloc(js->alloc, ns ? ns : 1, sizeof *servers);
    if (!servers) return JR_ENOMEM;
    jr__meta_place_servers(st, servers, ns);
    for (size_t i = 0; i < ns; i++) servers[i].online = jr__mnode_online(js, servers[i].name, NULL);
    jr__stream_norm norm;
    jr__stream_config_normalize(op->config, &norm);
    const jr_stream_config *c = &norm.c;
    const char *cluster = jr__stream_placement_cluster(c);
    if (!cluster || !*cluster) {
        const jr__meta_server *o = home ? jr__meta_server_find(st, home) : NULL;
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
    jr__place_result res;
    int rc = jr__placement_select(servers, ns, &req, &res, NULL, msg, msglen);
    size_t unknown = 0; /* servers of the cluster's peer list that have not registered yet */
    for (size_t i = 0; rc && i < jr__node_npeers(js->n); i++)
        unknown += !jr__peer_removed(jr__node_peer(js->n, i)) &&
                   !jr__meta_server_find(st, jr__peer_get_name(jr__node_peer(js->n, i)));
    if (unknown) { /* not final: the requester asks again until its deadline (JR_ENOQUORUM) */
        snprintf(msg, msglen, "%zu server%s not registered with the meta leader yet", unknown,
                 unknown == 1 ? " has" : "s have");
        rc = JR_ENOQUORUM;
    }
    if (rc == 0) {
        for (size_t i = 0; i < res.npeers; i++) peers[i] = servers[res.peers[i]].name;
        *npeers = res.npeers;
    }
    jr__free(js->alloc, servers);
    return rc;
}

/* The peers of stream s that stay when it shrinks to `replicas` (members.h: its leader, then
 * the healthiest — a replica its group hears from, then one whose server is offline, last one
 * whose server is up while the group does not hear from its replica (damaged: it cannot open)
 * — then the least lag, then placement order). The health and lag come from the stream
 * leader's view: h[0..nh) as it answered JR__ADM_HEALTH, or this server's own if it leads the
 * stream; with neither, only whether each server is online is known. `leader_name` names the
 * stream's leader as this server knew it when the request came (NULL: not known). */
static void shrink(jr__js *js, const jr__meta_stream *s, size_t replicas, const char *leader_name,
                   const jr__peer_health *h, size_t nh, const char **peers, size_t *npeers)
{
    size_t leader = s->npeers;
    int online[JR_MAX_REPLICAS];
    uint64_t lag[JR_MAX_REPLICAS];
    jr__peer_health own[JR__MAX_MEMBERS];
    jr__srep *local = jr__srep_find(js, s->group);
    if (local && jr__srep_is_leader(local)) { /* progress is known here */
        nh = jr__srep_health(local, own, JR__MAX_MEMBERS);
        h = own;
        leader_name = js->name;
    }
    for (size_t i = 0; i < s->npeers; i++) {
        int up = jr__mnode_online(js, s->peers[i], NULL);
        online[i] = up ? JR__MEMB_HEALTH_OK : JR__MEMB_HEALTH_OFFLINE;
        lag[i] = nh ? UINT64_MAX : 0; /* not a member of the leader's configuration: last */
        for (size_t k = 0; k < nh; k++) {
            if (strcmp(h[k].name, s->peers[i]) != 0) continue;
            lag[i] = h[k].lag;
            /* (the leader's own mark of a member that answered below what it acknowledged is
             * no help here: a late answer sets it until the next one; such a member, if its
             * store did lose entries, trails by them) */
            if (!h[k].alive) online[i] = up ? JR__MEMB_HEALTH_DAMAGED : JR__MEMB_HEALTH_OFFLINE;
        }
        if (nh && lag[i] == UINT64_MAX && up) online[i] = JR__MEMB_HEALTH_DAMAGED;
        if (leader_name && strcmp(leader_name, s->peers[i]) == 0) leader = i;
    }
    size_t keep[JR_MAX_REPLICAS];
    size_t k = jr__members_shrink(s->npeers, replicas, leader, online, lag, keep);
    for (size_t i = 0; i < k; i++) peers[i] = s->peers[keep[i]];
    *npeers = k;
}

/* A shrink waiting for the stream leader's view of its members (JR__ADM_HEALTH): the request
 * as it came and where its answer goes; handled again with the view (or without it, if the
 * leader does not answer in time). */
typedef struct health_ask {
    jr__js *js;
    jr__route rt;
    char leader[JR__META_NAME_MAX + 1]; /* the stream's leader asked */
    size_t len;
    uint8_t p[];
} health_ask;

static void handle(jr__js *js, const jr__route *rt, const uint8_t *p, size_t len,
                   const char *leader, const jr__peer_health *h, size_t nh, int asked);

static void on_health(jr_node *n, void *arg, int status, int answered, const uint8_t *p, size_t len)
{
    (void)n;
    (void)answered;
    health_ask *a = arg;
    jr__js *js = a->js;
    if (js->closing) { /* the requester hears nothing and asks again elsewhere, or times out */
        jr__free(js->alloc, a);
        return;
    }
    jr__peer_health h[JR_MAX_REPLICAS];
    char names[JR_MAX_REPLICAS][JR__META_NAME_MAX + 1];
    size_t nh = 0;
    if (status == 0) {
        jr__rd rd;
        jr__rd_init(&rd, p, len);
        size_t cnt = jr__rd_u8(&rd);
        for (size_t i = 0; i < cnt && !rd.err; i++) {
            size_t nl;
            const uint8_t *name = jr__rd_bytes(&rd, &nl, JR__META_NAME_MAX);
            uint8_t alive = jr__rd_u8(&rd);
            uint64_t lag = jr__rd_varint(&rd);
            if (rd.err || nh == JR_MAX_REPLICAS) break;
            memcpy(names[nh], name, nl);
            names[nh][nl] = 0;
            h[nh].name = names[nh];
            h[nh].alive = alive;
            h[nh].lag = lag;
            nh++;
        }
        if (rd.err) nh = 0;
    }
    handle(js, &a->rt, a->p, a->len, a->leader, h, nh, 1);
    jr__free(js->alloc, a);
}

/* Asks the leader of s (another server) how its members are before a shrink is placed; 1 if
 * the question is out (the request is handled again with the answer), 0 if the shrink is
 * placed now (this server leads the stream, or the leader is not known or not reachable). */
static int ask_health(jr__js *js, const jr__route *rt, const jr__meta_stream *s, const uint8_t *p,
                      size_t len)
{
    jr__srep *local = jr__srep_find(js, s->group);
    if (local && jr__srep_is_leader(local)) return 0;
    jr__peer *lp = jr__srep_leader_peer(js, s->group);
    if (!lp || jr__peer_get_id(lp) == js->self) return 0;
    health_ask *a = jr__malloc(js->alloc, sizeof *a + len);
    if (!a) return 0;
    a->js = js;
    a->rt = *rt;
    snprintf(a->leader, sizeof a->leader, "%s", jr__peer_get_name(lp));
    a->len = len;
    memcpy(a->p, p, len);
    uint8_t b[24];
    jr__buf out = {b, 0, sizeof b, 0, NULL};
    jr__buf_u8(&out, JR__ADM_HEALTH);
    jr__buf_varint(&out, s->group);
    jr_iovec iov = {out.data, out.len};
    uint64_t id;
    if (jr__rpc_call(js->n, jr__peer_get_id(lp), JR__RPC_STREAM_ADMIN, &iov, 1,
                     2 * js->heartbeat_ns, on_health, a, &id) != 0) {
        jr__free(js->alloc, a);
        return 0;
    }
    return 1;
}

/* The peers of stream s under the new placement of op (same replica count): the current
 * peers that fit it stay, placement finds the others. 0 with names in peers[]; else the
 * refusal (JR_ENORESOURCES with the reasons), msg set. */
static int move(jr__js *js, const jr__meta_op *op, const jr__meta_stream *s, const char **peers,
                size_t *npeers, char *msg, size_t msglen)
{
    jr__stream_norm norm;
    jr__stream_config_normalize(op->config, &norm);
    const char *pl_cluster = jr__stream_placement_cluster(&norm.c);
    size_t pl_ntags;
    const char *const *pl_tags = jr__stream_placement_tags(&norm.c, &pl_ntags);
    const char *keep[JR_MAX_REPLICAS];
    size_t nkeep = 0;
    for (size_t i = 0; i < s->npeers; i++) {
        const jr__meta_server *sv = jr__meta_server_find(&js->st, s->peers[i]);
        if (!sv) continue;
        jr__place_server ps;
        memset(&ps, 0, sizeof ps);
        ps.name = sv->name;
        ps.cluster = sv->cluster;
        ps.tags = sv->tags;
        ps.ntags = sv->ntags;
        const char *cluster = pl_cluster && *pl_cluster ? pl_cluster : sv->cluster;
        if (jr__placement_fits(&ps, cluster, pl_tags, pl_ntags)) keep[nkeep++] = s->peers[i];
    }
    return place(js, op, s->peers[0], keep, nkeep, peers, npeers, msg, msglen);
}

static int same_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* 1 if the placements of two normal forms are the same. */
static int same_placement(const jr_stream_config *a, const jr_stream_config *b)
{
    size_t na, nb;
    const char *const *ta = jr__stream_placement_tags(a, &na);
    const char *const *tb = jr__stream_placement_tags(b, &nb);
    if (!same_str(jr__stream_placement_cluster(a), jr__stream_placement_cluster(b)) || na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (!same_str(ta[i], tb[i])) return 0;
    return 1;
}

/* Places consumer cfg (checked by jr__meta_check) on stream `stream`: names an ephemeral one
 * (into gen, which cfg->name then points to), keeps the peers of an existing consumer whose
 * replica count stays, and otherwise takes that many of the stream's peers, online ones first,
 * from a random starting point (so consumers spread over their stream's servers). */
static void place_consumer(jr__js *js, jr_consumer_config *cfg, const char *stream, char gen[16],
                           const char **peers, size_t *np)
{
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const jr__meta_stream *s = jr__meta_stream_find(&js->st, stream);
    if (!cfg->name && cfg->durable_name) cfg->name = cfg->durable_name;
    while (!cfg->name) {
        for (int i = 0; i < 8; i++) gen[i] = alnum[jr__rand_next(&js->rand) % (sizeof alnum - 1)];
        gen[8] = 0;
        if (!jr__meta_consumer_find(s, gen)) cfg->name = gen;
    }
    size_t want = (size_t)jr__meta_consumer_replicas(s, cfg);
    const jr__meta_consumer *c = jr__meta_consumer_find(s, cfg->name);
    *np = 0;
    if (c && c->npeers == want) {
        for (size_t i = 0; i < want; i++) peers[(*np)++] = c->peers[i];
        return;
    }
    size_t start = s->npeers ? (size_t)(jr__rand_next(&js->rand) % s->npeers) : 0;
    for (int pass = 0; pass < 2 && *np < want; pass++) {
        for (size_t k = 0; k < s->npeers && *np < want; k++) {
            const char *p = s->peers[(start + k) % s->npeers];
            int online = jr__mnode_online(js, p, NULL);
            if (online == (pass == 0)) peers[(*np)++] = p;
        }
    }
}

void jr__mnode_handle(jr__js *js, const jr__route *rt, const uint8_t *p, size_t len)
{
    handle(js, rt, p, len, NULL, NULL, 0, 0);
}

/* jr__mnode_handle; once asked (a shrink is placed now, with the answer or without), `leader`
 * is the stream leader asked and h[0..nh) its view of its members. */
static void handle(jr__js *js, const jr__route *rt, const uint8_t *p, size_t len,
                   const char *leader, const jr__peer_health *h, size_t nh, int asked)
{
    int self;
    jr__mnode_leader(js, &self);
    if (!self) {
        reply_not_leader(js, rt);
        return;
    }
    jr__meta_op op;
    int rc = jr__meta_op_decode(p, len, js->alloc, &op);
    if (rc != 0) {
        reply_text(js, rt, rc == JR_ENOMEM ? rc : JR_EINVAL, "meta request does not decode");
        return;
    }
    uint64_t index = 0, term = 0;
    char msg[JR__JS_MSG_MAX];
    if (op.type == JR__META_SERVER_REMOVE || op.type == JR__META_SERVER_JOIN) {
        jr__mm_handle(js, rt, &op, p, len); /* meta_members.c */
        goto out;
    }
    const jr__applied_req *done =
        op.request_id && op.origin ? applied_req(js, op.request_id, op.origin) : NULL;
    if (done) { /* re-sent: its outcome is that entry's (header comment) */
        uint8_t b[24];
        jr__buf ob = {b, 0, sizeof b, 0, NULL};
        jr__buf_varint(&ob, done->index);
        jr__buf_varint(&ob, done->term);
        jr__buf_u8(&ob, 1); /* applied already */
        jr__route_reply(js, rt, 0, ob.data, ob.len);
        goto out;
    }
    if (op.type != JR__META_SERVER_INFO) {
        jr__meta_result res;
        rc = jr__meta_check(&js->st, &op, &res);
        if (rc != 0) {
            reply_text(js, rt, rc, "meta leader out of memory");
            goto out;
        }
        if (res.status != 0) {
            reply_text(js, rt, res.status, res.msg);
            goto out;
        }
        if (op.type == JR__META_STREAM_ADD && !res.assignment) {
            const char *peers[JR_MAX_REPLICAS];
            size_t np = 0;
            rc = place(js, &op, op.origin, NULL, 0, peers, &np, msg, sizeof msg);
            if (rc != 0) {
                reply_text(js, rt, rc, msg);
                goto out;
            }
            /* the stream's creation time: this leader's wall clock, in the log for everyone */
            op.created_ns = jr__js_wall(js);
            if (op.created_ns == 0) op.created_ns = 1; /* 0 means "unknown" */
            rc = propose_placed(js, &op, peers, np, &index, &term);
            goto proposed;
        }
        if (op.type == JR__META_CONSUMER_ADD && !res.consumer) {
            jr_consumer_config cfg = *op.consumer_config;
            char gen[16];
            const char *peers[JR_MAX_REPLICAS];
            size_t np = 0;
            const jr__meta_stream *ms = jr__meta_stream_find(&js->st, op.stream);
            const jr__meta_consumer *mc = ms ? jr__meta_consumer_find(ms, cfg.name) : NULL;
            if (op.action == JR__META_CONSUMER_PAUSE && mc) /* checked: it exists */
                for (size_t k = 0; k < mc->npeers; k++) peers[np++] = mc->peers[k];
            else
                place_consumer(js, &cfg, op.stream, gen, peers, &np);
            op.consumer_config = &cfg;
            op.created_ns = jr__js_wall(js);
            if (op.created_ns == 0) op.created_ns = 1;
            rc = propose_placed(js, &op, peers, np, &index, &term);
            op.consumer_config = &op.ccfg->c;
            goto proposed;
        }
        if (op.type == JR__META_PEER_MOVE && op.action == JR__META_MOVE_EVACUATE) {
            const char *peers[JR_MAX_REPLICAS];
            size_t np = 0;
            rc = jr__move_place(js, &op, peers, &np, msg, sizeof msg);
            if (rc != 0) {
                reply_text(js, rt, rc, msg);
                goto out;
            }
            rc = propose_placed(js, &op, peers, np, &index, &term);
            goto proposed;
        }
        if (op.type == JR__META_STREAM_UPDATE) {
            const jr__meta_stream *s = jr__meta_stream_find(&js->st, op.config->name);
            jr__stream_norm norm;
            jr__stream_config_normalize(op.config, &norm);
            const char *peers[JR_MAX_REPLICAS];
            size_t np = s->npeers, want = (size_t)norm.c.replicas;
            if (!same_placement(&norm.c, &s->cfg->c)) {
                /* a move (never with a replica change: jr__meta_check refused that) */
                rc = move(js, &op, s, peers, &np, msg, sizeof msg);
                if (rc != 0) {
                    reply_text(js, rt, rc, msg);
                    goto out;
                }
            } else if (want > s->npeers) {
                /* grow: the current peers stay, placement finds the others (jr__meta_check
                 * refused the change already if an earlier one has not converged) */
                rc = place(js, &op, s->peers[0], s->peers, s->npeers, peers, &np, msg, sizeof msg);
                if (rc != 0) {
                    reply_text(js, rt, rc, msg);
                    goto out;
                }
            } else if (want < s->npeers) {
                if (!asked && ask_health(js, rt, s, p, len)) goto out; /* answered later */
                jr__peer *lp = asked ? NULL : jr__srep_leader_peer(js, s->group);
                if (lp) leader = jr__peer_get_name(lp);
                shrink(js, s, want, leader, h, nh, peers, &np);
            } else {
                memcpy(peers, s->peers, np * sizeof *peers);
            }
            rc = propose_placed(js, &op, peers, np, &index, &term);
            goto proposed;
        }
    }
    /* SERVER_INFO, DELETE, and an identical re-add: propose as it came (the apply decides). */
    rc = propose(js, p, len, &index, &term);
proposed:
    if (rc != 0) {
        snprintf(msg, sizeof msg, "meta leader could not propose: %s", jr_strerror(rc));
        reply_text(js, rt, rc, msg);
    } else {
        jr__mnode_reply_proposed(js, rt, index, term);
    }
out:
    jr__meta_op_free(&op);
}

/* Origin side -----------------------------------------------------------------------------*/

static void retry_at(jr__req *r, uint64_t when)
{
    jr__js *js = r->js;
    if (when > r->deadline) when = r->deadline;
    jr__js_timer_arm(js, &r->timer, when);
}

static void on_rpc(jr_node *n, void *arg, int status, int answered, const uint8_t *p, size_t len)
{
    jr__req *r = arg;
    (void)n;
    r->rpc_id = 0;
    r->unanswered = !answered;
    jr__mnode_on_reply(r, status, p, len);
}

void jr__mnode_send(jr__req *r)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    if (r->done) return;
    if (jr__node_now(n) >= r->deadline) {
        jr__mnode_timer(r);
        return;
    }
    int self;
    const char *leader = jr__mnode_leader(js, &self);
    if (!leader) {
        r->state = 0;
        if (jr__js_leaderless(js, js->meta)) { /* it ends now, as at its deadline */
            r->deadline = jr__node_now(n);
            jr__mnode_timer(r);
            return;
        }
        retry_at(r, jr__deadline(jr__node_now(n), js->heartbeat_ns));
        return;
    }
    r->saw_leader = 1;
    r->state = 1;
    r->tries++;
    if (self) {
        r->target = js->self;
        jr__route rt = jr__route_local(r);
        jr__mnode_handle(js, &rt, r->payload.data, r->payload.len);
        return;
    }
    jr__peer *p = jr__peer_find_name(n, leader);
    if (!p) {
        r->state = 0;
        retry_at(r, jr__deadline(jr__node_now(n), js->heartbeat_ns));
        return;
    }
    r->target = jr__peer_get_id(p);
    uint64_t left = r->deadline - jr__node_now(n), attempt = 2 * js->election_ns;
    jr_iovec iov = {r->payload.data, r->payload.len};
    int rc = jr__rpc_call(js->n, jr__peer_get_id(p), JR__RPC_META, &iov, 1,
                          left < attempt ? left : attempt, on_rpc, r, &r->rpc_id);
    if (rc != 0) {
        r->state = 0;
        if (rc == JR_EMSGSIZE)
            jr__req_finish(r, rc, "request does not fit in a frame (max_frame_bytes)");
        else
            retry_at(r, jr__deadline(jr__node_now(n), js->heartbeat_ns));
    }
}

void jr__mnode_on_reply(jr__req *r, int status, const uint8_t *p, size_t len)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    if (r->done) return;
    if (status == 0) {
        jr__rd rd;
        jr__rd_init(&rd, p, len);
        uint64_t index = jr__rd_varint(&rd), term = jr__rd_varint(&rd);
        uint8_t applied = jr__rd_left(&rd) ? jr__rd_u8(&rd) : 0;
        if (rd.err || index == 0) {
            r->state = 0;
            retry_at(r, jr__deadline(jr__node_now(n), js->heartbeat_ns));
            return;
        }
        r->sent = 1;
        r->state = 2;
        r->meta_index = index;
        r->meta_term = term;
        /* Wait for the entry; the deadline bounds it (and a lost entry re-sends it). */
        if (js->st.applied >= index && applied) {
            /* an earlier attempt was applied there, and this server passed it without seeing
             * it: it restored a meta snapshot over it */
            jr__req_finish(r, JR_ETIMEDOUT,
                           "the request was applied at meta index %llu, which this server "
                           "restored from a snapshot: its outcome is not known here",
                           (unsigned long long)index);
        } else if (js->st.applied >= index) {
            r->state = 0; /* already applied there, and it was not ours */
            retry_at(r, jr__node_now(n));
        } else {
            jr__js_timer_arm(js, &r->timer, r->deadline);
        }
        return;
    }
    /* A removal sent again that finds the server removed already: the earlier attempt (or
     * another removal) committed it; answered, as any removal, once the configuration no
     * longer lists the server (meta_members.c). */
    if (r->what == JR__REQ_SERVER_REMOVE && status == JR_ENOTMEMBER && r->tries > 1 &&
        jr__meta_removed_already(p, len)) {
        r->state = 3;
        snprintf(r->msg, sizeof r->msg, "server '%s' removed", r->stream);
        jr__js_timer_arm(js, &r->timer, r->deadline);
        jr__js_timer_arm(js, &js->meta_timer, jr__node_now(n));
        return;
    }
    /* a removal refused for the quorum it would cost is final, unlike a placement that waits
     * for servers to register */
    int final_quorum = status == JR_ENOQUORUM && r->what == JR__REQ_SERVER_REMOVE;
    switch (final_quorum ? JR_EINVAL : status) {
    case JR_ENOTLEADER:
    case JR_ENOQUORUM: /* the meta leader waits for servers to register (place) */
    case JR_ETIMEDOUT:
    case JR_ETRANSFER:
    case JR_ELEADERLOST:
    case JR_ENOMEM:
    case JR_ECLOSED:
        /* Not decided yet: ask the (next) leader again (a re-sent request is recognised by
         * its id, so it takes effect at most once). Without an answer, a timeout or a lost
         * leadership, that leader may have proposed it: its deadline can then no longer say
         * that nothing took effect. */
        if (status == JR_ETIMEDOUT || status == JR_ELEADERLOST || status == JR_ECLOSED)
            r->unsure = 1;
        r->state = 0;
        if (status == JR_ECLOSED && js->closing) return;
        retry_at(r, jr__deadline(jr__node_now(n), r->unanswered ? 0 : js->heartbeat_ns));
        return;
    default: {
        /* A refusal by the leader's check or placement: final (JR_EBUSY too: a peer change of
         * the stream is in progress, meta_state.h). */
        size_t k = len < sizeof r->msg - 1 ? len : sizeof r->msg - 1;
        if (k) memcpy(r->msg, p, k);
        r->msg[k] = 0;
        jr__req_finish(r, status, NULL);
    }
    }
}

void jr__mnode_timer(jr__req *r)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    if (r->done) return;
    if (jr__node_now(n) < r->deadline) {
        if (r->state != 1 && r->state != 3) jr__mnode_send(r);
        return;
    }
    const char *what = r->what == JR__REQ_SERVER_INFO       ? "server info"
                       : r->what == JR__REQ_CONSUMER_EXPIRE ? "inactive consumer's deletion"
                       : r->what == JR__REQ_CONVERGED       ? "peer change report"
                       : r->what == JR__REQ_SERVER_REMOVE   ? "server removal"
                       : r->what == JR__REQ_SERVER_JOIN     ? "join"
                                                            : "request";
    int self;
    const char *leader = jr__mnode_leader(js, &self);
    if (r->state == 3)
        jr__req_finish(r, JR_ETIMEDOUT,
                       "server '%s' was removed from the meta state, but the meta group's "
                       "configuration still lists it (no quorum to change it?)",
                       r->stream);
    else if (r->state == 2)
        jr__req_finish(r, JR_ETIMEDOUT,
                       "meta group has no quorum: the %s was proposed at index %llu but did not "
                       "commit in time; it may still take effect",
                       what, (unsigned long long)r->meta_index);
    else if (r->state == 1 || r->unsure) {
        const char *t = r->target == js->self ? js->name : jr__js_peer_name(js, r->target);
        jr__req_finish(r, JR_ETIMEDOUT,
                       "meta leader %s did not answer in time: the %s may still take effect",
                       t ? t : "?", what);
    } else if (!r->saw_leader || !leader)
        jr__req_finish(r, JR_ENOLEADER,
                       "no meta leader: JetStream system temporarily unavailable (%s not sent)",
                       what);
    else
        jr__req_finish(r, JR_ENOQUORUM, "meta leader %s did not take the %s in time (not applied)",
                       leader, what);
}

int jr__mnode_file(jr__js *js, jr__req *r, jr__meta_op *op)
{
    do {
        r->meta_id = jr__rand_next(&js->rand) | 1;
    } while (jr__map_get(&js->meta_reqs, r->meta_id));
    op->request_id = r->meta_id;
    int rc = jr__meta_op_encode(op, &r->payload);
    if (rc == 0) rc = jr__map_put(&js->meta_reqs, r->meta_id, r);
    if (rc != 0) r->meta_id = 0;
    return rc;
}

/* Internal requests (SERVER_INFO, STREAM_CONVERGED) --------------------------------------*/

jr__req *jr__mnode_send_internal(jr__js *js, uint8_t what, jr__meta_op *op)
{
    jr__req *r = jr__req_new(js, what);
    if (!r) return NULL;
    op->origin = js->name; /* completes when applied, like any admin request */
    if (jr__mnode_file(js, r, op) != 0) {
        jr__req_discard(r);
        return NULL;
    }
    jr__req_start(r, 4 * js->election_ns);
    return r;
}

/* Sends op (request id and origin filled in here) to the meta leader as an internal request of
 * kind `what`: it completes silently once applied (or at its deadline). 0 or JR_ENOMEM. */
static int send_internal(jr__js *js, uint8_t what, jr__meta_op *op)
{
    jr__req *r = jr__mnode_send_internal(js, what, op);
    if (!r) return JR_ENOMEM;
    jr__mnode_send(r);
    return 0;
}

void jr__mnode_report_converged(jr__js *js, const jr__meta_stream *s, const jr__join_floor *f)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_STREAM_CONVERGED;
    op.stream = s->name;
    op.group = s->group;
    op.peers_at = s->peers_at;
    op.term = f->term;
    op.commit_term = f->last_index ? f->last_term : 0;
    op.commit = f->last_index;
    send_internal(js, JR__REQ_CONVERGED, &op);
}

void jr__mnode_report_consumer_converged(jr__js *js, const jr__meta_consumer *c,
                                         const jr__join_floor *f)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_STREAM_CONVERGED;
    op.stream = c->stream->name;
    op.group = c->group;
    op.peers_at = c->peers_at;
    op.term = f->term;
    op.commit_term = f->last_index ? f->last_term : 0;
    op.commit = f->last_index;
    send_internal(js, JR__REQ_CONVERGED, &op);
}

void jr__mnode_expire_consumer(jr__js *js, const char *stream, const char *name)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_CONSUMER_DELETE;
    op.stream = stream;
    op.consumer = name;
    send_internal(js, JR__REQ_CONSUMER_EXPIRE, &op);
}

static int facts_current(jr__js *js)
{
    const jr__meta_server *s = jr__meta_server_find(&js->st, js->name);
    if (!s || strcmp(s->cluster, js->cluster) != 0 || s->ntags != js->ntags ||
        s->capacity_bytes != js->capacity || s->max_assets != js->max_assets)
        return 0;
    for (size_t i = 0; i < js->ntags; i++)
        if (strcmp(s->tags[i], js->tags[i]) != 0) return 0;
    return 1;
}

static void send_server_info(jr__js *js)
{
    jr_node *n = js->n;
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_SERVER_INFO;
    op.server.name = js->name;
    op.server.cluster = js->cluster;
    op.server.tags = (const char *const *)js->tags;
    op.server.ntags = js->ntags;
    op.server.capacity_bytes = js->capacity;
    op.server.max_assets = js->max_assets;
    if (send_internal(js, JR__REQ_SERVER_INFO, &op) == 0) js->info_sent = jr__node_now(n);
}

static void meta_tick(jr__js *js, jr__jtimer *t)
{
    jr_node *n = js->n;
    (void)t;
    if (js->meta_failed) return;
    int self;
    if (jr__mnode_leader(js, &self) && !facts_current(js) &&
        (!js->info_sent || jr__node_now(n) >= jr__deadline(js->info_sent, 4 * js->election_ns)))
        send_server_info(js);
    if (js->converge_failed || (!js->meta_replayed && jr__mnode_replayed(js)))
        jr__mnode_converge(js);
    release_held(js);
    jr__mm_tick(js); /* joining, and the meta leader's membership duty (meta_members.c) */
    if (js->removed || js->leaving) return; /* leaving: jr__mm_tick armed the timer */
    jr__drain_tick(js); /* the meta leader's moves off leaving servers (meta_drain.c) */
    jr__js_timer_arm(js, &js->meta_timer, jr__deadline(jr__node_now(n), js->election_ns / 2));
}

/* Convergence -----------------------------------------------------------------------------*/

/* 1 if the meta state says group id was created and is gone: neither a stream's nor a
 * consumer's (ids are never given twice, so a deletion is final). */
static int group_deleted(void *ctx, uint64_t id)
{
    jr__js *js = ctx;
    return id >= JR__FIRST_STREAM_GROUP_ID && id < js->st.next_group &&
           !jr__meta_stream_by_group(&js->st, id) && !jr__meta_consumer_by_group(&js->st, id);
}

/* What a replica of a deleted group knew is forgotten (the node keeps it on disk, and answers
 * VOUCH with it, for groups this server left): also for one it left before the deletion, and
 * after a restart for a forget a crash undid. */
static void forget_deleted(jr__js *js, uint64_t group)
{
    if (group_deleted(js, group)) jr__node_released_forget(js->n, group);
}

/* A consumer's part of a convergence plan. Its peers never change, so a LEAVE means the
 * consumer (or its stream) is gone: its replica and group are released. */
static void converge_consumer(jr__js *js, const jr__meta_action *a, jr__crep *r)
{
    switch (a->kind) {
    case JR__META_LEAVE:
        if (!r) break;
        if (a->consumer && (jr__meta_consumer_busy(a->consumer) || !jr__mnode_replayed(js))) {
            /* moved off this server by a change that has not converged: it may still be a
             * voter its group needs (as a stream's replica, jr__mnode_converge) */
            if (r->updated != a->consumer->updated) jr__crep_update(r, a->consumer);
            break;
        }
        uint64_t sg = r->stream_group, cg = r->group;
        jr__crep_leave(r, 1);
        if (!a->consumer) jr__node_released_forget(js->n, cg); /* deleted: nothing to vouch for */
        jr__retention_recheck(js, sg);                         /* what only it needed can go */
        break;
    case JR__META_UPDATE:
        if (!r) break;
        jr__crep_update(r, a->consumer);
        jr__retention_recheck(js, r->stream_group); /* its filters may have changed */
        break;
    case JR__META_CREATE:
        if (r) break;
        if (!jr__mnode_replayed(js) || !jr__srep_find(js, a->consumer->stream->group)) {
            /* not from a past state of the replay; and after its stream's replica */
            js->converge_failed = 1;
            break;
        }
        if (jr__crep_create(js, a->consumer) != 0) js->converge_failed = 1;
        break;
    default:
        break;
    }
}

int jr__mnode_converge(jr__js *js)
{
    if (js->closing || js->meta_failed || js->removed) return JR_ECLOSED;
    /* consumer replicas whose state machine failed are rebuilt (consumer_replica.c); one that
     * cannot be yet keeps the convergence coming back */
    int again = 0;
    for (jr__crep *r = js->crep_list, *next; r; r = next) {
        next = r->next;
        if (r->failed && r->failed != JR_EVERSION && jr__crep_rebuild(r) != 0) again = 1;
    }
    size_t cnt = 0;
    for (jr__srep *r = js->rep_list; r; r = r->next) cnt++;
    for (jr__crep *r = js->crep_list; r; r = r->next) cnt++;
    jr__meta_local *local = jr__calloc(js->alloc, cnt ? cnt : 1, sizeof *local);
    if (!local) {
        js->converge_failed = 1;
        return JR_ENOMEM;
    }
    size_t k = 0;
    for (jr__srep *r = js->rep_list; r; r = r->next) {
        local[k].group = r->group;
        local[k].updated = r->updated;
        k++;
    }
    for (jr__crep *r = js->crep_list; r; r = r->next) {
        local[k].group = r->group;
        local[k].updated = r->updated;
        k++;
    }
    jr__meta_plan plan;
    int rc = jr__meta_desired(&js->st, js->name, local, k, &plan);
    jr__free(js->alloc, local);
    if (rc != 0) {
        js->converge_failed = 1;
        return rc;
    }
    js->converge_failed = (uint8_t)again;
    for (size_t i = 0; i < plan.n; i++) {
        const jr__meta_action *a = &plan.actions[i];
        jr__crep *cr = jr__crep_find(js, a->group);
        if (cr || a->consumer) {
            converge_consumer(js, a, cr);
            continue;
        }
        jr__srep *r = jr__srep_find(js, a->group);
        switch (a->kind) {
        case JR__META_LEAVE:
            if (!r) break;
            if (a->stream && (jr__meta_stream_busy(a->stream) || !jr__mnode_replayed(js))) {
                /* Removed by a peer change that has not converged: this server may still be
                 * a voter the group needs (a removed member never learns of its removal from
                 * the group itself, dissertation §4.2.2); it goes once the change converged.
                 * (Or a state of the replay at open: a later one may name this server.) */
                if (r->updated != a->stream->updated) jr__srep_update(r, a->stream);
                break;
            }
            jr__srep_leave(r, 1);
            if (!a->stream) jr__node_released_forget(js->n, a->group); /* deleted */
            break;
        case JR__META_UPDATE:
            if (r) jr__srep_update(r, a->stream);
            break;
        case JR__META_CREATE:
            if (r) break;
            if (!jr__mnode_replayed(js)) {
                /* A state of the replay at open is a past one: a replica created from it
                 * could bootstrap a group that has long existed (and that this server left),
                 * forking its log at index 1. Created from the replayed state instead. */
                js->converge_failed = 1;
                break;
            }
            if (jr__srep_create(js, a->stream) != 0) js->converge_failed = 1;
            break;
        default:
            break;
        }
    }
    jr__meta_plan_free(&plan);
    /* streams deleted, or peers removed, while this server was down */
    if (jr__srep_sweep_stashes(js) != 0) js->converge_failed = 1;
    /* and what replicas of groups since deleted knew (kept across restarts by the node) */
    jr__node_released_sweep(js->n, JR__FIRST_STREAM_GROUP_ID, js->st.next_group, group_deleted, js);
    if (jr__srep_sweep_origins(js) != 0) js->converge_failed = 1;
    return 0;
}

void jr__mnode_converge_one(jr__js *js, uint64_t group)
{
    if (js->closing || js->meta_failed || js->removed) return;
    const jr__meta_consumer *mc = jr__meta_consumer_by_group(&js->st, group);
    jr__crep *cr = jr__crep_find(js, group);
    if (mc || cr) {
        jr__meta_action a;
        memset(&a, 0, sizeof a);
        a.group = group;
        a.consumer = mc;
        if (!mc || !jr__meta_consumer_has_peer(mc, js->name))
            a.kind = JR__META_LEAVE;
        else
            a.kind = !cr ? JR__META_CREATE : cr->updated != mc->updated ? JR__META_UPDATE : 0;
        converge_consumer(js, &a, cr);
        forget_deleted(js, group);
        return;
    }
    const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, group);
    jr__srep *r = jr__srep_find(js, group);
    if (s && jr__meta_stream_has_peer(s, js->name)) {
        if (!r) {
            /* as jr__mnode_converge's CREATE: not from a state of the replay at open */
            if (!jr__mnode_replayed(js) || jr__srep_create(js, s) != 0) js->converge_failed = 1;
        } else if (r->updated != s->updated) {
            jr__srep_update(r, s);
        }
    } else if (r) {
        /* as jr__mnode_converge's LEAVE */
        if (s && (jr__meta_stream_busy(s) || !jr__mnode_replayed(js))) {
            if (r->updated != s->updated) jr__srep_update(r, s);
        } else {
            jr__srep_leave(r, 1);
            if (!s) jr__node_released_forget(js->n, group); /* deleted */
        }
    }
    /* as jr__mnode_converge's sweep of original peers, for this stream: a server that applies
     * the creation and a first change that drops it together (cut off meanwhile, no restart
     * in between) never held the group, which may need its vote for a first leader */
    if (s && jr__srep_sweep_origin(js, s) != 0) js->converge_failed = 1;
    forget_deleted(js, group);
    if (jr__srep_sweep_stashes(js) != 0) js->converge_failed = 1;
}

/* Cluster info ----------------------------------------------------------------------------*/

void jr__mnode_cluster_info(jr__js *js, const jr__route *rt)
{
    jr_node *n = js->n;
    int self;
    const char *leader = jr__mnode_leader(js, &self);
    if (rt->to && !self) {
        reply_not_leader(js, rt);
        return;
    }
    jr__meta_state *st = &js->st;
    const jr__raft *mr = jr__group_consensus(js->meta);
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    jr__buf_bytes(b, js->cluster, strlen(js->cluster));
    jr__buf_bytes(b, leader ? leader : "", leader ? strlen(leader) : 0);
    jr__buf_varint(b, st->nstreams);
    jr__buf_varint(b, st->nservers);
    uint64_t last = jr__raft_last_index(mr), commit = jr__raft_commit_index(mr);
    for (size_t i = 0; i < st->nservers; i++) {
        const jr__meta_server *s = st->servers[i];
        uint64_t seen = UINT64_MAX, match = 0;
        int online = jr__mnode_online(js, s->name, &seen);
        jr__peer *p = jr__peer_find_name(n, s->name);
        int damaged = p ? jr__group_peer_damaged(js->meta, jr__peer_get_id(p)) : 0;
        if (self) {
            const jr__conf *c = jr__raft_conf(mr);
            for (uint32_t k = 0; p && k < c->n; k++) {
                jr__progress pr;
                if (c->m[k].id == jr__peer_get_id(p) && jr__raft_progress(mr, k, &pr) == 0)
                    match = pr.match;
            }
        }
        uint32_t assets = 0;
        for (size_t k = 0; k < st->nstreams; k++)
            assets += (uint32_t)jr__meta_stream_has_peer(st->streams[k], s->name);
        int is_leader = leader && strcmp(leader, s->name) == 0;
        int current = self && online && match >= commit && !damaged;
        jr__buf_bytes(b, s->name, strlen(s->name));
        jr__buf_bytes(b, s->cluster, strlen(s->cluster));
        jr__buf_varint(b, s->ntags);
        for (size_t k = 0; k < s->ntags; k++) jr__buf_bytes(b, s->tags[k], strlen(s->tags[k]));
        jr__buf_u8(b, (uint8_t)(is_leader | current << 1 | (!online) << 2 | damaged << 3 |
                                s->draining << 4));
        jr__buf_varint(b, seen);
        jr__buf_varint(b, self && last > match ? last - match : 0);
        jr__buf_varint(b, assets);
        if (s->draining) jr__drain_report(js, s->name, b); /* meta_drain.c */
    }
    jr__drain_report_under(js, b);
    if (b->err) {
        jr__route_reply(js, rt, JR_ENOMEM, NULL, 0);
        return;
    }
    jr__route_reply(js, rt, self ? 0 : JR_ENOLEADER, b->data, b->len);
}

/* Open / close ----------------------------------------------------------------------------*/

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int jr__mnode_open(jr__js *js)
{
    jr_node *n = js->n;
    size_t npeers = jr__node_npeers(n);
    jr__js_timer_init(&js->meta_timer, meta_tick); /* jr__mnode_close cancels it on any path */
    const char **voters = jr__calloc(js->alloc, npeers, sizeof *voters);
    if (!voters) return JR_ENOMEM;
    /* A joining server lists only its seeds: not a voter itself, it opens the group empty and
     * waits for the meta leader to add it (meta_members.c). */
    int joining = jr__mm_joining(js);
    size_t nv = 0;
    for (size_t i = 0; i < npeers; i++) {
        jr__peer *p = jr__node_peer(n, i);
        if (!joining || jr__peer_get_id(p) != js->self) voters[nv++] = jr__peer_get_name(p);
    }
    npeers = nv;
    /* The same voter list, in the same order, on every server: its bootstrap entry must be
     * identical everywhere. */
    qsort(voters, npeers, sizeof *voters, cmp_names);
    jr_fsm fsm = {JR_FSM_VERSION, js, meta_apply, meta_snapshot, meta_restore};
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = JR__META_GROUP_ID;
    gc.voters = voters;
    gc.nvoters = npeers;
    gc.fsm = &fsm;
    gc.snapshot_entries = META_SNAPSHOT_ENTRIES;
    /* Opening the group may apply recovered entries at once: until it returned and the
     * index to replay up to is known, every state applied is one of the replay. */
    js->meta_recovered = UINT64_MAX;
    int rc = jr__group_create(n, &gc, NULL, 0, &js->meta);
    jr__free(js->alloc, voters);
    if (rc != 0) {
        js->meta = NULL;
        return rc;
    }
    /* A meta entry applied here can release a replica and its store: a restart must replay
     * the meta log at least that far, and it replays only up to the recovered commit index. */
    jr__group_durable_apply(js->meta);
    js->meta_recovered = jr__raft_last_index(jr__group_consensus(js->meta));
    jr__mm_learn_pending(js); /* servers its log's configurations may name already */
    jr__js_timer_arm(js, &js->meta_timer, jr__node_now(n));
    return 0;
}

void jr__mnode_close(jr__js *js)
{
    jr__js_timer_cancel(js, &js->meta_timer);
    js->meta = NULL; /* the node owns and frees the group */
}
