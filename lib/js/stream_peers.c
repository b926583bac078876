/*
 * stream_peers — a stream leader's peer changes (leader duty of stream_replica.c's timer, which
 * calls jr__srep_members_duty; meta_state.h "Peer changes", meta/members.h).
 *
 * When the assignment
 * names other peers than the group's configuration holds, the leader makes one single-server
 * change at a time (§4.1) until the two agree: it adds a new peer as an observer (the peer's
 * server joined the group empty; it catches up from the log, or from a snapshot and catch-up
 * chunks), promotes it once it is caught up and its store is complete (it says so when asked:
 * JR__ADM_READY), removes the peers the assignment dropped, and, dropped itself, hands its
 * leadership to a caught-up remaining voter whose meta state has the same assignment (that
 * leader then removes it). Everything is recomputed from configuration and assignment on each
 * visit, so a failover of the stream or meta leader mid-change just resumes. Once the committed
 * configuration is the assignment, the leader reports STREAM_CONVERGED to the meta group; the
 * servers the change removed release their replicas when they apply that (meta_replica.c).
 *
 * Owns the replica's jr__membwork (r->mw: allocated only while a change is in progress) and
 * the membership operations and JR__ADM_READY questions in flight for it.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "meta/members.h"
#include "js/js.h"
#include "util/alloc.h"
#include "util/deadline.h"

/* Entries a member may trail the leader's log and still count as caught up (a window in
 * flight). */
#define MEMB_SLACK 64

/* 1 if a member's log counts as caught up: trailing the leader by MEMB_SLACK entries at most,
 * and holding (acknowledged, so durably) the latest configuration. The second part matters in
 * a short log, where the slack covers every entry: a joiner that acknowledged nothing (its
 * writes failing, say) would be promoted and the peer it replaces removed, and after a restart
 * it holds nothing, a joiner on a restarted server and so damaged, while the group's
 * configuration needs its vote. */
static int log_caught_up(const jr__raft *raft, const jr_peer_status *ps)
{
    return ps->lag <= MEMB_SLACK && ps->match_index >= jr__raft_conf_index(raft);
}

/* A membership change or transfer in flight: its completion finds the replica by group. */
typedef struct memb_op {
    jr__js *js;
    uint64_t group;
    uint64_t serial;
} memb_op;

void jr__srep_memb_free(jr__srep *r)
{
    jr__srep_hold_free(r);
    if (!r->mw) return;
    jr__rpc_cancel(r->js->n, r->mw->rpc_id);
    jr__free(r->js->alloc, r->mw);
    r->mw = NULL;
}

static void memb_done(void *arg, int status)
{
    memb_op *o = arg;
    jr__js *js = o->js;
    jr__srep *r = jr__srep_find(js, o->group);
    if (r && r->mw && r->mw->serial == o->serial) {
        r->mw->serial = 0;
        if (status == 0) {
            r->mw->fails = 0;
            r->mw->note.err[0] = 0;
        } else if (++r->mw->fails >= 3) {
            snprintf(r->mw->note.err, sizeof r->mw->note.err,
                     "membership change failed %u times in a row: %s", (unsigned)r->mw->fails,
                     jr_strerror(status));
        }
        if (!js->closing)
            jr__srep_due(r, jr__deadline(jr__node_now(js->n), status == 0 ? 0 : js->heartbeat_ns));
    }
    jr__free(js->alloc, o);
}

static jr__memb_probe *probe_find(jr__membwork *w, jr__id id)
{
    for (size_t i = 0; i < w->nprobes; i++)
        if (w->probes[i].id == id) return &w->probes[i];
    return NULL;
}

/* The probe of member id, made (empty) if there is none; with every slot taken, the last one
 * is forgotten. */
static jr__memb_probe *probe_get(jr__membwork *w, jr__id id)
{
    jr__memb_probe *pr = probe_find(w, id);
    if (pr) return pr;
    if (w->nprobes == JR__MEMB_PROBES) w->nprobes--;
    pr = &w->probes[w->nprobes++];
    memset(pr, 0, sizeof *pr);
    pr->id = id;
    return pr;
}

static void on_ready(jr_node *n, void *arg, int status, int answered, const uint8_t *p, size_t len)
{
    (void)answered;
    jr__srep *r = arg;
    jr__membwork *w = r->mw;
    if (!w) return;
    w->rpc_id = 0;
    if (status != 0) return; /* asked again at the next visit */
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    uint8_t ready = jr__rd_u8(&rd);
    uint64_t peers_at = jr__rd_varint(&rd);
    uint64_t left = jr__rd_left(&rd) ? jr__rd_varint(&rd) : 0;
    if (rd.err) return; /* fields after these are a later release's: ignored */
    jr__memb_probe *pr = probe_get(w, w->asked);
    pr->at = jr__node_now(n);
    pr->ready = ready;
    pr->log_ok = w->asked_log_ok;
    pr->peers_at = peers_at;
    pr->left = ready ? 0 : left;
    if (pr->log_ok) pr->floor = 0;    /* what it said now covers its store */
    jr__srep_due(r, jr__node_now(n)); /* ready: promoted; not yet: asked again */
}

/* 1 if member id, its log caught up (log_ok), said lately — asked while its log was caught up
 * — that its replica is complete and it knows the peer set of peers_at; otherwise asks it (one
 * question at a time) and returns 0. A member whose log still trails is asked too, for what its
 * store has left to copy (stream info's lag); that answer never makes it ready, since a snapshot
 * may still come and start a catch-up. Each answer brings the next question at once (on_ready),
 * so the count follows the copy chunk by chunk: one small request in flight per joining member,
 * and only while a peer change waits on it. */
static int member_ready(jr__srep *r, jr__id id, uint64_t peers_at, int log_ok)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    jr__membwork *w = r->mw;
    jr__memb_probe *pr = probe_find(w, id);
    uint64_t now = jr__node_now(n);
    if (log_ok && pr && pr->ready && pr->log_ok && pr->peers_at >= peers_at &&
        now <= jr__deadline(pr->at, js->election_ns))
        return 1;
    if (w->rpc_id) return 0;
    uint8_t b[24];
    jr__buf out = {b, 0, sizeof b, 0, NULL};
    jr__buf_u8(&out, JR__ADM_READY);
    jr__buf_varint(&out, r->group);
    jr_iovec iov = {out.data, out.len};
    w->asked = id;
    w->asked_log_ok = (uint8_t)log_ok;
    /* a short wait: a member that does not answer must not hold up the questions to others */
    if (jr__rpc_call(js->n, id, JR__RPC_STREAM_ADMIN, &iov, 1, 2 * js->heartbeat_ns, on_ready, r,
                     &w->rpc_id) != 0)
        w->rpc_id = 0;
    return 0;
}

/* 1 if this node heard frames of any kind from server id within an election timeout. */
static int node_online(jr__js *js, jr__id id)
{
    jr__peer *pp = jr__peer_find(js->n, id);
    return pp && jr__peer_heard(pp) && jr__node_now(js->n) - jr__peer_heard(pp) <= js->election_ns;
}

/* 1 if the group and the node of leader r heard from member id (group index i) within an
 * election timeout: messages received by the group (a new leader has not heard from a member
 * until it answers or voted for it) and frames of any kind by the node. */
static int member_alive(jr__srep *r, const jr_peer_status *ps, jr__id id)
{
    return ps->last_seen_ns <= r->js->election_ns && node_online(r->js, id);
}

size_t jr__srep_health(jr__srep *r, jr__peer_health *h, size_t max)
{
    if (!r->g || jr__group_closed(r->g) || !jr__srep_is_leader(r)) return 0;
    const jr__conf *c = jr__raft_conf(jr__group_consensus(r->g));
    size_t k = 0;
    for (uint32_t i = 0; i < c->n && k < max; i++) {
        jr_peer_status ps;
        ps.size = sizeof ps;
        if (jr_group_peer(r->g, i, &ps) != 0 || !ps.name) continue;
        int self = c->m[i].id == r->js->self;
        h[k].name = ps.name;
        h[k].alive = (uint8_t)(self || member_alive(r, &ps, c->m[i].id));
        h[k].lag = self ? 0 : ps.lag;
        k++;
    }
    return k;
}

/* 1 if the group's configuration is s's peer set with every peer a voter. */
static int conf_is(const jr__srep *r, const jr__meta_stream *s)
{
    const jr__conf *c = jr__raft_conf(jr__group_consensus(r->g));
    if (c->n != s->npeers) return 0;
    for (size_t i = 0; i < s->npeers; i++) {
        jr__peer *p = jr__peer_find_name(r->js->n, s->peers[i]);
        const jr__member *m = p ? jr__conf_find(c, jr__peer_get_id(p)) : NULL;
        if (!m || !m->voter) return 0;
    }
    return 1;
}

/* Records what the change waits on now (stream info's move status). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
note(jr__membwork *w, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    w->note.status = (uint8_t)status;
    vsnprintf(w->note.desc, sizeof w->note.desc, fmt, ap);
    va_end(ap);
}

/* Adds to the note that the publishes are paced to a joiner's copy (hold.c: the group outran
 * it, and its leader admits ops only while that joiner keeps up) — `its` when that joiner is
 * the one the note names (id) — so an operator who sees the publishers slow down during a move
 * reads why there. */
static void hold_note(jr__srep *r, jr__membwork *w, jr__id id)
{
    size_t len = strlen(w->note.desc);
    if (jr__srep_hold_armed(w, id)) {
        snprintf(w->note.desc + len, sizeof w->note.desc - len,
                 "; publishes are paced to its copy");
        return;
    }
    jr__id other = jr__srep_hold_any(w);
    if (!other) return;
    const char *name = jr__js_peer_name(r->js, other);
    snprintf(w->note.desc + len, sizeof w->note.desc - len,
             "; publishes are paced to peer %s's copy", name ? name : "?");
}

/* A consumer of s whose own peer change is still in progress (NULL: none). The stream leaves
 * a peer only once its consumers moved: a consumer's leader reads its server's stream replica,
 * and a consumer replica may still sit on the server the stream leaves. Except a consumer
 * whose change cannot progress now (jr__crep_change_stalled: a majority of its group offline,
 * so no leader to move it): waiting for it would hold the stream's move for as long as those
 * servers are down, and what it waits for is only that consumer's leader finding its stream's
 * replica where it runs. The stream moves on (*stalled names the first such consumer, *who one
 * of its offline servers); the consumer keeps its replicas and its busy assignment, and its
 * leader completes its change once its servers are back (a replica there runs while the change
 * is not over, with or without a replica of the stream). Nothing is dropped: the stream's
 * messages are on its new peers, the consumer's state in its own group. */
static const jr__meta_consumer *consumer_moving(jr__js *js, const jr__meta_stream *s,
                                                const jr__meta_consumer **stalled, const char **who)
{
    *stalled = NULL;
    *who = NULL;
    for (size_t i = 0; i < s->nconsumers; i++) {
        const jr__meta_consumer *c = s->consumers[i];
        const char *off;
        if (!jr__meta_consumer_busy(c)) continue;
        if (!jr__crep_change_stalled(js, c, &off)) return c;
        if (!*stalled) {
            *stalled = c;
            *who = off;
        }
    }
    return NULL;
}

static const char *step_name(int step)
{
    switch (step) {
    case JR__MEMB_ADD:
        return "adding peer";
    case JR__MEMB_PROMOTE:
        return "promoting peer";
    case JR__MEMB_REMOVE:
        return "removing peer";
    default:
        return "stepping down to";
    }
}

/* Why jr__members_next said WAIT (members.h rules 3-5), for the move status: an observer the
 * assignment names still catching up (its log, or its store: the READY probe), or a dropped
 * voter that cannot leave without a live (acknowledging) majority, or no caught-up voter to hand
 * over to. A member is said to wait for its server to come online only when this node has not heard
 * from that server for an election timeout: one whose server is up but whose replica the group
 * has not heard from yet (just added: its first answer to the log or snapshot sent to it is on
 * its way) is starting to catch up, and one heard from says how far behind it is. */
static void wait_note(jr__srep *r, jr__membwork *w, const jr__memb *m, size_t n,
                      const uint64_t *want, size_t nw)
{
    jr__js *js = r->js;
    /* joining observers first: they are what a move waits on most of the time */
    for (size_t j = 0; j < 2 * n; j++) {
        size_t i = j % n;
        if ((j < n) == (m[i].voter != 0)) continue;
        int wanted = 0;
        for (size_t k = 0; k < nw; k++) wanted |= want[k] == m[i].id;
        if (!wanted || m[i].caught_up) continue;
        const char *name = jr__js_peer_name(js, m[i].id);
        jr_peer_status ps;
        ps.size = sizeof ps;
        int known = jr_group_peer(r->g, (uint32_t)i, &ps) == 0;
        int heard = known && member_alive(r, &ps, m[i].id);
        if (!heard && !node_online(js, m[i].id)) {
            note(w, JR_MOVE_QUORUM, "waiting for peer %s to come online", name ? name : "?");
        } else if (!heard && known && ps.last_seen_ns == UINT64_MAX) {
            /* added, its first answer to the log or snapshot sent to it on its way: how far
             * behind it is is not known yet */
            note(w, JR_MOVE_CATCHUP, "waiting for peer %s to start catching up", name ? name : "?");
        } else if (heard && log_caught_up(jr__group_consensus(r->g), &ps)) {
            const jr__memb_probe *pr = probe_find(w, m[i].id);
            if (pr && pr->left)
                note(w, JR_MOVE_SNAPSHOT, "waiting for peer %s to copy %llu more messages",
                     name ? name : "?", (unsigned long long)pr->left);
            else
                note(w, JR_MOVE_SNAPSHOT, "waiting for peer %s to confirm its store is complete",
                     name ? name : "?");
        } else {
            /* the lag stream info shows for it: its log's, or what its store still copies */
            const jr__memb_probe *pr = probe_find(w, m[i].id);
            uint64_t lag = jr_group_peer(r->g, (uint32_t)i, &ps) == 0 ? ps.lag : 0;
            if (pr && pr->left > lag)
                note(w, JR_MOVE_CATCHUP, "waiting for peer %s to copy %llu more messages",
                     name ? name : "?", (unsigned long long)pr->left);
            else
                note(w, JR_MOVE_CATCHUP,
                     "waiting for peers to catch up (%s is %llu operations behind)",
                     name ? name : "?", (unsigned long long)lag);
        }
        hold_note(r, w, m[i].id);
        return;
    }
    note(w, JR_MOVE_QUORUM, "waiting for a majority of current peers before the next change");
}

void jr__srep_members_duty(jr__srep *r, const jr__meta_stream *s, uint64_t *next)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    uint64_t soon = jr__deadline(jr__node_now(n), js->heartbeat_ns);
    int busy = jr__meta_stream_busy(s);
    if (!busy && conf_is(r, s)) {
        jr__srep_memb_free(r);
        return;
    }
    if (soon < *next) *next = soon;
    if (!r->mw && !(r->mw = jr__calloc(js->alloc, 1, sizeof *r->mw))) return;
    jr__membwork *w = r->mw;
    /* sampled on every visit (a heartbeat apart while a change is in progress) */
    uint64_t floor =
        jr__ack_floor_update(&w->acks, jr__node_now(n),
                             jr__raft_commit_index(jr__group_consensus(r->g)), js->election_ns);
    /* only on a meta state that can be taken for the newest assignment: a leader acting on an
     * older one would undo a change (it converges again once it catches up, but meanwhile
     * churns) */
    if (!jr__mnode_current(js)) {
        note(w, JR_MOVE_META, "waiting for this server's meta state to be current");
        return;
    }
    const jr__raft *raft = jr__group_consensus(r->g);
    if (w->serial) return; /* the note says which change is in flight */
    if (jr__raft_transferring(raft)) {
        note(w, JR_MOVE_MEMBERSHIP, "stepping down");
        return;
    }
    if (!jr__raft_ready(raft)) {
        note(w, JR_MOVE_MEMBERSHIP, "waiting for the group's configuration to commit");
        return;
    }
    /* wanted: the assignment's peers */
    uint64_t want[JR_MAX_REPLICAS];
    size_t nw = 0;
    int self_wanted = 0;
    for (size_t i = 0; i < s->npeers; i++) {
        jr__peer *p = jr__peer_find_name(n, s->peers[i]);
        if (!p) { /* not a server this node knows: nothing sensible to do */
            note(w, JR_MOVE_UNAVAILABLE, "peer %s is not a server this node knows", s->peers[i]);
            snprintf(w->note.err, sizeof w->note.err, "unknown server %s", s->peers[i]);
            return;
        }
        want[nw++] = jr__peer_get_id(p);
        self_wanted |= jr__peer_get_id(p) == js->self;
    }
    /* the configuration as this leader sees it */
    const jr__conf *c = jr__raft_conf(raft);
    jr__memb m[JR__MAX_MEMBERS];
    uint64_t needed = jr__raft_stand_in_needs(raft); /* observers a stand-in needs (raft.h) */
    for (uint32_t i = 0; i < c->n; i++) {
        jr_peer_status ps;
        ps.size = sizeof ps;
        m[i].id = c->m[i].id;
        m[i].voter = c->m[i].voter;
        m[i].needed = (uint8_t)(needed >> i & 1);
        m[i].alive = m[i].caught_up = c->m[i].id == js->self;
        if (m[i].caught_up || jr_group_peer(r->g, i, &ps) != 0) continue;
        int wanted = 0;
        for (size_t k = 0; k < nw; k++) wanted |= want[k] == m[i].id;
        int heard = member_alive(r, &ps, m[i].id);
        /* live (rule 4): heard from and acknowledging, since one whose writes fail is still
         * heard from */
        m[i].alive = (uint8_t)(heard && ps.match_index >= floor);
        int log_ok = heard && log_caught_up(raft, &ps);
        /* A joiner's log may catch up by a snapshot, which says nothing of its store: until it
         * answers a question asked after that, stream info shows it at least as far behind as
         * its log was when last seen trailing. */
        if (wanted && !m[i].voter && !log_ok) probe_get(w, m[i].id)->floor = ps.lag;
        /* a new voter (or the next leader) must also hold every message and the assignment;
         * a joining member is asked while its log still trails too, so that stream info shows
         * what its store has left to copy */
        if (heard && wanted && (!m[i].voter || !self_wanted))
            log_ok = member_ready(r, m[i].id, s->peers_at, log_ok);
        m[i].caught_up = (uint8_t)log_ok;
    }
    jr__memb_next x = jr__members_next(js->self, m, c->n, want, nw);
    const jr__meta_consumer *mc = NULL, *stalled = NULL;
    const char *off = NULL;
    if ((x.step == JR__MEMB_REMOVE || x.step == JR__MEMB_TRANSFER) &&
        (mc = consumer_moving(js, s, &stalled, &off))) {
        note(w, JR_MOVE_BLOCKED, "waiting for consumer '%s' to migrate", mc->name);
        return;
    }
    if (x.step == JR__MEMB_WAIT) {
        wait_note(r, w, m, c->n, want, nw);
        /* A quiet group counts nobody it did not hear from when it went quiet, and an empty
         * new member never speaks first: if the node of a member still catching up is heard
         * from while the group is quiet, wake the group (any entry does) so it probes it. */
        if (jr__raft_quiet(raft) && jr__node_now(n) >= jr__deadline(w->woken_at, js->election_ns)) {
            for (uint32_t i = 0; i < c->n; i++) {
                jr__peer *pp = jr__peer_find(n, m[i].id);
                if (m[i].caught_up || !pp || !jr__peer_heard(pp) ||
                    jr__node_now(n) - jr__peer_heard(pp) > js->election_ns)
                    continue;
                w->woken_at = jr__node_now(n);
                jr__srep_stage_tick(r);
                break;
            }
        }
        return;
    }
    if (x.step == JR__MEMB_CONVERGED) {
        /* the committed configuration is the assignment (ready: the entries of earlier terms,
         * configurations included, are committed; ours completed before serial cleared) */
        note(w, JR_MOVE_META, "reporting the new peer set to the meta leader");
        if (busy && (!w->reported_at ||
                     jr__node_now(n) >= jr__deadline(w->reported_at, 2 * js->election_ns))) {
            w->reported_at = jr__node_now(n);
            /* with the floor a replica joining later starts from: this term and the commit
             * (an entry every later leader holds) */
            jr__join_floor f;
            if (jr__group_floor(r->g, &f) != 0) f.last_index = 0; /* not known here: no floor */
            jr__mnode_report_converged(js, s, &f);
        }
        return;
    }
    jr__peer *p = jr__peer_find(n, x.peer);
    memb_op *o = jr__malloc(js->alloc, sizeof *o);
    if (!p || !o) {
        jr__free(js->alloc, o);
        return;
    }
    o->js = js;
    o->group = r->group;
    o->serial = ++js->next_serial;
    int rc;
    switch (x.step) {
    case JR__MEMB_ADD:
        rc = jr_group_add_observer(r->g, jr__peer_get_name(p), memb_done, o);
        break;
    case JR__MEMB_PROMOTE:
        rc = jr_group_promote(r->g, jr__peer_get_name(p), memb_done, o);
        break;
    case JR__MEMB_REMOVE:
        rc = jr_group_remove(r->g, jr__peer_get_name(p), memb_done, o);
        break;
    default:
        rc = jr_group_transfer(r->g, jr__peer_get_name(p), memb_done, o);
        break;
    }
    if (rc != 0) {
        jr__free(js->alloc, o); /* JR_EBUSY and the like: the next visit tries again */
        return;
    }
    w->serial = o->serial;
    if (stalled)
        note(w, JR_MOVE_MEMBERSHIP,
             "%s %s; consumer '%s' stays under-replicated until %s is back online",
             step_name(x.step), jr__peer_get_name(p), stalled->name, off ? off : "its peers");
    else
        note(w, JR_MOVE_MEMBERSHIP, "%s %s", step_name(x.step), jr__peer_get_name(p));
    jr__node_log(n, JR_LOG_INFO, "stream '%s': peer change: %s %s", r->name, step_name(x.step),
                 jr__peer_get_name(p));
}

void jr__move_info_fill(const char *const *target, size_t ntarget, const char *const *origin,
                        size_t norigin, const jr__move_note *nt, jr_move_info *out)
{
    memset(out, 0, sizeof *out);
    out->size = sizeof *out;
    out->target = target;
    out->ntarget = ntarget;
    out->origin = norigin ? origin : NULL;
    out->norigin = norigin;
    if (nt && nt->status) {
        out->status = nt->status;
        out->description = nt->desc;
        out->error = nt->err[0] ? nt->err : NULL;
    } else {
        out->status = JR_MOVE_META;
        out->description = "waiting for the group's leader to start the change";
    }
}

void jr__move_mark_leaving(jr_peer_info *reps, size_t nr, const char *const *target, size_t ntarget)
{
    for (size_t i = 0; i < nr; i++) {
        int in = 0;
        for (size_t k = 0; k < ntarget && !in; k++) in = strcmp(reps[i].name, target[k]) == 0;
        if (!in) reps[i].pending = 1; /* on its way out */
    }
}
