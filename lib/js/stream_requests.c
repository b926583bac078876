/*
 * stream_requests — what a stream's leader does with a request that reached it (from this node's
 * API or forwarded by another server): stage a publish, purge or message delete as an op of
 * the next BATCH entry (answered once that entry is applied, stream_replica.c), read a message,
 * compute stream info, or hand leadership over. Message reads (get, get last) are linearizable:
 * each waits for a TICK op of its own in that entry and is served when it is applied, so a
 * leader that may have been deposed (partitioned away while another was elected) never
 * answers from its stale state; it answers JR_ELEADERLOST once its entry is lost.
 *
 * Payloads (js.h lists the kinds; varint = canonical LEB128, str = varint length + bytes):
 *   PUBLISH        varint group | a PUBLISH op (jr__op_encode; its timestamp is replaced by
 *                  stream time, stream/clock.h)          → varint seq | u8 duplicate
 *                                                          [| str why: a refusal's detail]
 *   STREAM_INFO    varint group                          → info (codec.h)
 *   STREAM_ADMIN   u8 sub | varint group | ...
 *     PURGE        a PURGE op                            → varint purged
 *     MSG_DELETE   a DELETE op                           → (nothing)
 *     MSG_GET      varint seq (>= 1)                     → message (codec.h)
 *     GET_LAST     str subject                           → message
 *     STEPDOWN     str peer ("" = the best voter)        → (nothing), once the transfer is done
 *     PING         (nothing)                             → (nothing), at once: a requester
 *                  waiting for this server checks it is alive (api_stream.c)
 *     READY        (nothing)                             → u8 ready | varint peers_at |
 *                  varint left: asked by the stream's leader of a member before promoting it
 *                  or handing it the leadership (stream_peers.c), answered by any server:
 *                  ready = it holds a replica whose store is complete (not restoring, not
 *                  failed); peers_at = the assignment's peers_at in its meta state (0:
 *                  unknown); left = the sequences its catch-up still has to copy (0: none).
 *                  The asker reads the fields it knows and ignores any after them.
 *     DIRECT_GET   varint seq | str subject            → message, from any current replica
 *                  (api_lists.c)
 *     GET_NEXT     varint seq | str subject              → message
 *     SUBJECTS     varint offset | str filter            → a page of subjects (details.c)
 *     DELETED      varint after                          → a page of deleted ranges (details.c)
 * A server that does not lead the stream answers JR_ENOTLEADER with the leader's name (or "")
 * so the requester can go there (READY and DIRECT_GET excepted); a request that does not
 * decode is JR_EINVAL.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "js/js.h"
#include "js/codec.h"
#include "util/alloc.h"
#include "util/subject.h"

static void not_leader(jr__js *js, const jr__route *rt, uint64_t group)
{
    jr__peer *p = jr__srep_leader_peer(js, group);
    const char *name = p && jr__peer_get_id(p) != js->self ? jr__peer_get_name(p) : "";
    jr__route_reply(js, rt, JR_ENOTLEADER, name, strlen(name));
}

/* The stream's Raft group name as the nats CLI shows it: "S-R<replicas><F|M>-<id>". */
static void group_name(const jr__srep *r, char *buf, size_t cap)
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    char id[16];
    size_t k = 0;
    uint64_t v = r->group - JR__FIRST_STREAM_GROUP_ID + 1;
    do {
        id[k++] = digits[v % 62];
        v /= 62;
    } while (v && k < sizeof id);
    char rev[17];
    for (size_t i = 0; i < k; i++) rev[i] = id[k - 1 - i];
    rev[k] = 0;
    snprintf(buf, cap, "S-R%d%c-%s", r->as->cfg->c.replicas,
             r->as->cfg->c.storage == JR_STORAGE_MEMORY ? 'M' : 'F', rev);
}

static int cmp_peer(const void *a, const void *b)
{
    return strcmp(((const jr_peer_info *)a)->name, ((const jr_peer_info *)b)->name);
}

size_t jr__cluster_replicas(jr__js *js, jr_group *g, const char *const *peers, size_t npeers,
                            jr_peer_info *reps, const jr_peer_info **ptrs)
{
    jr_node *n = js->n;
    size_t nr = 0;
    jr_group_status gs;
    gs.size = sizeof gs;
    jr_group_status_get(g, &gs);
    for (size_t i = 0; i < gs.npeers && nr < JR__INFO_MAX_REPLICAS; i++) {
        jr_peer_status ps;
        ps.size = sizeof ps;
        if (jr_group_peer(g, i, &ps) != 0 || !ps.name || strcmp(ps.name, js->name) == 0) continue;
        jr_peer_info *pi = &reps[nr++];
        memset(pi, 0, sizeof *pi);
        pi->size = sizeof *pi;
        pi->name = ps.name;
        pi->observer = !ps.voter;
        pi->lag = ps.lag;
        pi->active_ns = ps.last_seen_ns;
        /* A joining observer the group has not heard from yet, whose server this node heard
         * from within an election timeout, is not offline: its first answer to the log or
         * snapshot sent to it is on its way. A voter a new leader has not heard from is (it
         * may have crashed before the election), until it answers. */
        jr__peer *pp = jr__peer_find_name(n, ps.name);
        uint64_t heard = pp ? jr__peer_heard(pp) : 0, now = jr__node_now(n);
        int joining =
            ps.last_seen_ns == UINT64_MAX && !ps.voter && heard && now - heard <= js->election_ns;
        pi->offline =
            !joining && (ps.last_seen_ns == UINT64_MAX || ps.last_seen_ns > 2 * js->election_ns);
        pi->damaged = ps.damaged;
        pi->unvouched = ps.unvouched;
        pi->fsm_failed = ps.fsm_failed;
        pi->fsm_rebuilding = ps.fsm_rebuilding;
        pi->current =
            ps.current && !pi->offline && !pi->damaged && !pi->unvouched && !pi->fsm_failed;
    }
    /* Peers of the assignment that are not (yet) members of the group. */
    const jr__conf *conf = jr__raft_conf(jr__group_consensus(g));
    for (size_t i = 0; i < npeers && nr < JR__INFO_MAX_REPLICAS; i++) {
        jr__peer *p = jr__peer_find_name(n, peers[i]);
        if (p && jr__conf_find(conf, jr__peer_get_id(p))) continue;
        jr_peer_info *pi = &reps[nr++];
        memset(pi, 0, sizeof *pi);
        pi->size = sizeof *pi;
        pi->name = peers[i];
        pi->pending = 1;
        pi->offline = !jr__mnode_online(js, peers[i], NULL);
        pi->active_ns = UINT64_MAX;
    }
    qsort(reps, nr, sizeof reps[0], cmp_peer);
    for (size_t i = 0; i < nr; i++) ptrs[i] = &reps[i];
    return nr;
}

static void exec_info(jr__js *js, jr__srep *r, const jr__route *rt)
{
    jr_stream_info in;
    jr_stream_state state;
    jr_cluster_info cluster;
    memset(&in, 0, sizeof in);
    memset(&state, 0, sizeof state);
    memset(&cluster, 0, sizeof cluster);
    in.size = sizeof in;
    state.size = sizeof state;
    cluster.size = sizeof cluster;
    in.config = jr__stream_fsm_config_get(r->fsm);
    in.state = &state;
    in.cluster = &cluster;
    const jr__meta_stream *ms = jr__meta_stream_by_group(&js->st, r->group);
    in.created_ns = ms ? ms->created_ns : 0; /* the meta leader's stamp (meta_op.h) */
    state.consumers = ms ? ms->nconsumers : 0;
    jr__stream_fsm_info fi;
    jr__stream_fsm_info_get(r->fsm, &fi);
    state.msgs = fi.store.msgs;
    state.bytes = fi.store.bytes;
    state.first_seq = fi.store.first_seq;
    state.first_ts = (uint64_t)fi.store.first_ts;
    state.last_seq = fi.store.last_seq;
    state.last_ts = (uint64_t)fi.store.last_ts;
    state.num_subjects = fi.store.num_subjects;
    state.num_deleted = fi.store.num_deleted;
    char gname[40];
    group_name(r, gname, sizeof gname);
    const char *cl = jr__stream_placement_cluster(in.config);
    cluster.name = cl && *cl ? cl : js->cluster;
    cluster.group = gname;
    cluster.leader = js->name;
    jr_peer_info reps[JR__INFO_MAX_REPLICAS];
    const jr_peer_info *rep_ptrs[JR__INFO_MAX_REPLICAS];
    /* the meta state's peers: a peer change shows its target even before this replica
     * converged to the new assignment */
    size_t nr = jr__cluster_replicas(js, r->g, ms ? ms->peers : r->as->peers,
                                     ms ? ms->npeers : r->as->npeers, reps, rep_ptrs);
    /* A joining replica's log may be caught up while its store still fetches the messages
     * (catch-up): it is current only once it said its store is complete (the membership duty's
     * READY probe, which also gates its promotion), and its lag counts the sequences it said it
     * still has to copy, or, until it answered since its log caught up, at least what its log
     * trailed by when last seen trailing (a log caught up by a snapshot says nothing of the
     * store). */
    for (size_t i = 0; i < nr; i++) {
        if (!reps[i].observer) continue;
        jr__peer *p = jr__peer_find_name(js->n, reps[i].name);
        const jr__memb_probe *pr = NULL;
        for (size_t k = 0; p && r->mw && k < r->mw->nprobes; k++)
            if (r->mw->probes[k].id == jr__peer_get_id(p)) pr = &r->mw->probes[k];
        if (pr && pr->left > reps[i].lag) reps[i].lag = pr->left;
        if (pr && pr->floor > reps[i].lag) reps[i].lag = pr->floor;
        if (!pr || !pr->ready || !pr->log_ok) reps[i].current = 0;
    }
    cluster.replicas = rep_ptrs;
    cluster.nreplicas = nr;
    jr_move_info move;
    if (ms && jr__meta_stream_busy(ms)) { /* a peer change in progress */
        jr__move_mark_leaving(reps, nr, ms->peers, ms->npeers);
        jr__move_info_fill(ms->peers, ms->npeers, ms->origin ? ms->origin->peers : NULL,
                           ms->origin ? ms->origin->npeers : 0, r->mw ? &r->mw->note : NULL, &move);
        cluster.move = &move;
    }
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    int rc = jr__info_encode(b, &in);
    jr__route_reply(js, rt, rc, rc ? NULL : b->data, rc ? 0 : b->len);
}

static void exec_read(jr__js *js, jr__srep *r, const jr__route *rt, uint8_t what, uint64_t seq,
                      const char *subj, size_t subj_len)
{
    jr__store *st = jr__stream_fsm_store(r->fsm);
    jr__store_msg m;
    int rc = what == JR__REQ_GET_LAST   ? jr__store_get_last(st, subj, subj_len, &m)
             : what == JR__REQ_GET_NEXT ? jr__store_next(st, seq, subj, subj_len, &m)
                                        : jr__store_get(st, seq, &m);
    if (rc != 0) {
        const char *t = rc == JR_ENOTFOUND ? "no message found" : "store read failed";
        if (rc == JR_ECORRUPT) jr__srep_store_failed(r, rc, "a store read");
        jr__route_reply(js, rt, rc, t, strlen(t));
        return;
    }
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    jr__msg_encode(b, &m);
    jr__route_reply(js, rt, b->err, b->err ? NULL : b->data, b->err ? 0 : b->len);
}

/* A stepdown in progress: answered when the transfer completes. */
typedef struct transfer_wait {
    jr__js *js;
    jr__route rt;
} transfer_wait;

static void on_transfer(void *arg, int status)
{
    transfer_wait *t = arg;
    jr__js *js = t->js;
    if (!js->closing) {
        const char *msg = status == 0 ? "" : jr_strerror(status);
        jr__route_reply(js, &t->rt, status, msg, strlen(msg));
    }
    jr__free(js->alloc, t);
}

void jr__stepdown_exec(jr__js *js, jr_group *g, const jr__route *rt, const char *peer, size_t plen)
{
    jr_node *n = js->n;
    char name[JR__META_NAME_MAX + 1];
    if (plen > JR__META_NAME_MAX) plen = JR__META_NAME_MAX;
    memcpy(name, peer, plen);
    name[plen] = 0;
    transfer_wait *t = jr__malloc(js->alloc, sizeof *t);
    if (!t) {
        jr__route_reply(js, rt, JR_ENOMEM, NULL, 0);
        return;
    }
    t->js = js;
    t->rt = *rt;
    int rc = jr_group_transfer(g, plen ? name : NULL, on_transfer, t);
    if (rc != 0) {
        char msg[JR__JS_MSG_MAX];
        snprintf(msg, sizeof msg, "stepdown%s%s: %s", plen ? " to " : "", plen ? name : "",
                 jr_node_errmsg(n));
        jr__free(js->alloc, t);
        jr__route_reply(js, rt, rc, msg, strlen(msg));
    }
}

/* A member's answer to its leader: is this replica complete, and which peer set does this
 * server's meta state give the stream? */
static void exec_ready(jr__js *js, jr__srep *r, const jr__route *rt)
{
    int ready = 0;
    uint64_t peers_at = 0, left = 0;
    if (r) {
        jr__stream_fsm_info info;
        jr__stream_fsm_info_get(r->fsm, &info);
        ready = r->g && !jr__group_closed(r->g) && !r->cu && !r->failed && !info.restoring &&
                !info.failed;
        const jr__meta_stream *ms = jr__meta_stream_by_group(&js->st, r->group);
        peers_at = ms ? ms->peers_at : 0;
        left = r->cu ? jr__catchup_left(r->cu) : 0;
    }
    uint8_t b[32];
    jr__buf out = {b, 0, sizeof b, 0, NULL};
    jr__buf_u8(&out, (uint8_t)ready);
    jr__buf_varint(&out, peers_at);
    jr__buf_varint(&out, left);
    jr__route_reply(js, rt, 0, out.data, out.len);
}

/* The leader's view of its members, for the meta leader placing a shrink (JR__ADM_HEALTH). */
static void exec_health(jr__js *js, jr__srep *r, const jr__route *rt)
{
    jr__peer_health h[JR__MAX_MEMBERS];
    size_t nh = jr__srep_health(r, h, JR__MAX_MEMBERS);
    jr__buf out;
    jr__buf_init(&out, js->alloc);
    jr__buf_u8(&out, (uint8_t)nh);
    for (size_t i = 0; i < nh; i++) {
        size_t len = strlen(h[i].name);
        jr__buf_varint(&out, len);
        jr__buf_put(&out, h[i].name, len);
        jr__buf_u8(&out, h[i].alive);
        jr__buf_varint(&out, h[i].lag);
    }
    jr__route_reply(js, rt, out.err, out.err ? NULL : out.data, out.err ? 0 : out.len);
    jr__buf_free(&out);
}

/* Stages an op (publish, purge, delete) of the request, after checking it decodes as one. */
static void exec_op(jr__js *js, jr__srep *r, const jr__route *rt, const uint8_t *p, size_t len,
                    uint8_t what, int type)
{
    /* An op from another server is checked whole before it goes into the log; this server's
     * own (api_stream.c encoded it a moment ago) is not decoded again. */
    if (!rt->local) {
        jr__stream_op op;
        int rc = jr__op_decode(p, len, &op);
        if (rc == JR_EVERSION) { /* from a server of a later release: not into this log */
            const char *t = "request of a later release (this server cannot apply it)";
            jr__route_reply(js, rt, JR_ENOTSUP, t, strlen(t));
            return;
        }
        if (rc != 0 || op.type != type) {
            const char *t = "request does not decode";
            jr__route_reply(js, rt, JR_EINVAL, t, strlen(t));
            return;
        }
    }
    jr__buf marked; /* its own buffer: staging may flush a batch through the scratch buffers */
    jr__buf_init(&marked, js->alloc);
    if (type == JR__OP_PUBLISH && r->as->cfg->c.retention == JR_RETAIN_INTEREST) {
        /* an interest stream stores what some consumer's filters match: else NO_INTEREST */
        jr__stream_op op;
        const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, r->group);
        if (s && jr__op_decode(p, len, &op) == 0 && op.type == JR__OP_PUBLISH &&
            jr__retention_no_interest(js, s, op.u.pub.subject, op.u.pub.subject_len)) {
            op.u.pub.opts.flags |= JR__PUB_NO_INTEREST;
            if (jr__op_encode(&op, &marked) == 0) {
                p = marked.data;
                len = marked.len;
            }
        }
    }
    int rc = jr__srep_stage(r, p, len, rt, what);
    jr__buf_free(&marked);
    if (rc != 0) {
        const char *t = rc == JR_EMSGSIZE ? "message larger than the largest log entry" : "";
        jr__route_reply(js, rt, rc, t, strlen(t));
    }
}

/* A read at the leader waits for a TICK op of its own to be applied (jr__srep_stage_read). */
static void stage_read(jr__js *js, jr__srep *r, const jr__route *rt, uint8_t what, uint64_t seq,
                       const char *subject, size_t subject_len)
{
    int rc = jr__srep_stage_read(r, rt, what, seq, subject, subject_len, 0);
    if (rc != 0) jr__route_reply(js, rt, rc, NULL, 0);
}

void jr__stream_exec_read(jr__js *js, jr__srep *r, const jr__waiter *w)
{
    if (w->what == JR__REQ_INFO)
        exec_info(js, r, &w->route);
    else if (w->what == JR__REQ_SUBJECTS)
        jr__subjects_exec(js, r, &w->route, w->subject, w->subject_len, w->seq);
    else if (w->what == JR__REQ_DELETED)
        jr__deleted_exec(js, r, &w->route, w->seq);
    else
        exec_read(js, r, &w->route, w->what, w->seq, w->subject, w->subject_len);
}

void jr__stream_exec(jr__js *js, uint8_t kind, const jr__route *rt, const uint8_t *p, size_t len)
{
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    uint8_t sub = kind == JR__RPC_STREAM_ADMIN ? jr__rd_u8(&rd) : 0;
    uint64_t group = jr__rd_varint(&rd);
    if (rd.err) {
        jr__route_reply(js, rt, JR_EINVAL, NULL, 0);
        return;
    }
    jr__srep *r = jr__srep_find(js, group);
    if (kind == JR__RPC_STREAM_ADMIN && sub == JR__ADM_READY) {
        if (jr__rd_left(&rd)) {
            jr__route_reply(js, rt, JR_EINVAL, NULL, 0);
            return;
        }
        exec_ready(js, r, rt);
        return;
    }
    if (kind == JR__RPC_STREAM_ADMIN && sub == JR__ADM_DIRECT_GET) {
        jr__direct_exec(js, rt, group, rd.p, jr__rd_left(&rd)); /* any current replica */
        return;
    }
    if (kind == JR__RPC_STREAM_ADMIN && sub == JR__ADM_STEPDOWN && group == JR__META_GROUP_ID) {
        /* the meta group's stepdown, at its leader */
        size_t n;
        const uint8_t *peer = jr__rd_bytes(&rd, &n, JR__META_NAME_MAX);
        int self;
        const char *leader = jr__mnode_leader(js, &self);
        if (rd.err || jr__rd_left(&rd)) {
            jr__route_reply(js, rt, JR_EINVAL, NULL, 0);
        } else if (!self || !js->meta) {
            jr__route_reply(js, rt, JR_ENOTLEADER, leader ? leader : "",
                            leader ? strlen(leader) : 0);
        } else {
            jr__stepdown_exec(js, js->meta, rt, (const char *)peer, n);
        }
        return;
    }
    if (!r || !jr__srep_is_leader(r)) {
        not_leader(js, rt, group);
        return;
    }
    if (kind == JR__RPC_STREAM_ADMIN && sub == JR__ADM_HEALTH) {
        exec_health(js, r, rt);
        return;
    }
    const uint8_t *rest = rd.p;
    size_t rlen = jr__rd_left(&rd);
    switch (kind) {
    case JR__RPC_PUBLISH:
        exec_op(js, r, rt, rest, rlen, JR__REQ_PUBLISH, JR__OP_PUBLISH);
        return;
    case JR__RPC_STREAM_INFO:
        exec_info(js, r, rt); /* a status report, not a read of the stream's data */
        return;
    default:
        break;
    }
    switch (sub) {
    case JR__ADM_PURGE:
        exec_op(js, r, rt, rest, rlen, JR__REQ_PURGE, JR__OP_PURGE);
        return;
    case JR__ADM_MSG_DELETE:
        exec_op(js, r, rt, rest, rlen, JR__REQ_MSG_DELETE, JR__OP_DELETE);
        return;
    case JR__ADM_MSG_GET: {
        uint64_t seq = jr__rd_varint(&rd);
        if (rd.err || jr__rd_left(&rd) || seq == 0) break; /* sequences start at 1 */
        stage_read(js, r, rt, JR__REQ_MSG_GET, seq, NULL, 0);
        return;
    }
    case JR__ADM_GET_LAST: {
        size_t n;
        const uint8_t *s = jr__rd_bytes(&rd, &n, 4096);
        if (rd.err || jr__rd_left(&rd) || n == 0) break;
        stage_read(js, r, rt, JR__REQ_GET_LAST, 0, (const char *)s, n);
        return;
    }
    case JR__ADM_GET_NEXT: {
        uint64_t seq = jr__rd_varint(&rd);
        size_t n;
        const uint8_t *s = jr__rd_bytes(&rd, &n, 4096);
        if (rd.err || jr__rd_left(&rd) || seq == 0 || n == 0) break;
        stage_read(js, r, rt, JR__REQ_GET_NEXT, seq, (const char *)s, n);
        return;
    }
    case JR__ADM_SUBJECTS: {
        uint64_t offset = jr__rd_varint(&rd);
        size_t n;
        const uint8_t *s = jr__rd_bytes(&rd, &n, JR__OP_SUBJECT_MAX);
        if (rd.err || jr__rd_left(&rd) || !jr__subject_valid((const char *)s, n, 1)) break;
        stage_read(js, r, rt, JR__REQ_SUBJECTS, offset, (const char *)s, n);
        return;
    }
    case JR__ADM_DELETED: {
        uint64_t after = jr__rd_varint(&rd);
        if (rd.err || jr__rd_left(&rd)) break;
        stage_read(js, r, rt, JR__REQ_DELETED, after, NULL, 0);
        return;
    }
    case JR__ADM_BARRIER: /* a consumer leader's: the index of a TICK committed in this term */
        if (jr__rd_left(&rd)) break;
        stage_read(js, r, rt, JR__REQ_BARRIER, 0, NULL, 0);
        return;
    case JR__ADM_PING:
        if (jr__rd_left(&rd)) break;
        jr__route_reply(js, rt, 0, NULL, 0);
        return;
    case JR__ADM_STEPDOWN: {
        size_t n;
        const uint8_t *s = jr__rd_bytes(&rd, &n, JR__META_NAME_MAX);
        if (rd.err || jr__rd_left(&rd)) break;
        jr__stepdown_exec(js, r->g, rt, (const char *)s, n);
        return;
    }
    default:
        break;
    }
    jr__route_reply(js, rt, JR_EINVAL, NULL, 0);
}
