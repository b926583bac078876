/*
 * api_stream — the public stream API (jetraft.h "Streams API") and the routing of each request
 * to the server that can answer it.
 *
 * Every function checks its arguments, takes a request record (js.c) and returns 0; from then
 * on the request completes exactly once through its callback, from the node's completion queue.
 * Local checks that need no leader (an invalid config field, a subject no stream captures, a
 * malformed header block, an oversize message) complete it at once — still through the queue,
 * never inside the call.
 *
 * Routing (stream requests: publish, info, purge, messages, stepdown). The request goes to the
 * stream's leader: executed right here if this server leads the stream; else sent to the leader
 * this server knows of (its own replica's view, or a hint learned from an earlier answer), else
 * to the stream's peers in turn. A server that is not the leader answers JR_ENOTLEADER with the
 * leader it knows, and the request follows it (it provably never reached a log); with no leader
 * anywhere the request waits, re-trying every heartbeat, until its deadline: JR_ENOQUORUM (it
 * reached no log: nothing took effect).
 * Reads (info, get) may be re-sent at any time; a leader serves one once an entry of its term
 * that it proposed after the read arrived is applied (stream_requests.c), so a read that lost
 * that entry (JR_ELEADERLOST, or a timeout of the leader's) is asked again until its deadline.
 *
 * Writes that reached a leader (publish, purge, message delete). The leader answers when the op
 * is applied, JR_ELEADERLOST when it lost its leadership first, or JR_ETIMEDOUT after its own
 * timeout (the op is in its log: the outcome is unknown); the requester waits for that verdict
 * (past its own deadline if need be: the RPC's timeout adds the leader's) while watching that the
 * leader is alive: every election timeout without a frame from it, it pings it (STREAM_ADMIN PING);
 * two election timeouts without one, the leader is lost. Then, and on JR_ELEADERLOST:
 *  - a publish with a msg_id is sent again, to the next leader, while within its deadline: the
 *    duplicate window makes that safe, and every attempt carries the request's token (op.h), so
 *    an attempt that did commit is reported as it would have been (its seq, duplicate = 0); only
 *    another publish of the same msg_id is a duplicate. A leader given up for lost is not asked
 *    again unless heard from since;
 *  - any other write ends with JR_ELEADERLOST and a message saying which leader was lost and
 *    that the outcome is unknown (it may be stored: sending it again could store it twice).
 * The final message of a request that failed over names the leaders lost on the way. Admin
 * requests (add, update, delete) go to the meta leader (meta_replica.c).
 */
#include <stdio.h>
#include <string.h>

#include "js/js.h"
#include "js/codec.h"
#include "stream/headers.h"
#include "util/subject.h"
#include "util/abi.h"
#include "util/alloc.h"
#include "util/deadline.h"

/* Copies a NUL-terminated name into dst (cap bytes), truncating. */
static void copy_name(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* Entry -------------------------------------------------------------------------------------*/

int jr__js_entry(jr_node *n, int ok)
{
    if (!n || !ok) return JR_EINVAL;
    if (jr__node_closing(n)) return JR_ECLOSED;
    jr__js *js = jr__js_of(n);
    if (!js) return jr__node_err(n, JR_ENOTSUP, "streams are not enabled on this node");
    if (js->removed || js->leaving)
        return jr__node_err(n, JR_EREMOVED,
                            "server '%s' was removed from the cluster: it takes no part", js->name);
    return 0;
}

/* A request record; on failure nothing is started and the error is returned. */
static jr__req *begin(jr_node *n, uint8_t what, uint64_t timeout_ns, int *rc)
{
    jr__js *js = jr__js_of(n);
    jr__req *r = jr__req_new(js, what);
    if (!r) {
        *rc = jr__node_err(n, JR_ENOMEM, "out of memory");
        return NULL;
    }
    jr__req_start(r, timeout_ns ? timeout_ns : js->timeout_ns);
    *rc = 0;
    return r;
}

/* Attempt timeout of one send: reads may be re-sent, so they give up on a silent server after
 * two election timeouts; writes wait for the leader's own verdict (its timeout, plus slack). */
static uint64_t attempt_timeout(const jr__req *r)
{
    jr_node *n = r->js->n;
    uint64_t left = r->deadline > jr__node_now(n) ? r->deadline - jr__node_now(n) : 0;
    if (r->resend) {
        uint64_t a = 2 * r->js->election_ns;
        return left < a ? left : a;
    }
    return jr__deadline(jr__deadline(left, r->js->timeout_ns), r->js->election_ns);
}

/* Routing -----------------------------------------------------------------------------------*/

/* 1 if peer p was given up for lost by r and not heard from since. */
static int lost_peer(const jr__req *r, const jr__peer *p)
{
    return r->lost && jr__peer_get_id(p) == r->lost && jr__peer_heard(p) <= r->lost_at;
}

static void on_rpc(jr_node *n, void *arg, int status, int answered, const uint8_t *p, size_t len)
{
    jr__req *r = arg;
    (void)n;
    r->rpc_id = 0;
    r->unanswered = !answered;
    jr__req_response(r, status, p, len);
}

static void wait_retry(jr__req *r)
{
    jr_node *n = r->js->n;
    uint64_t at = jr__deadline(jr__node_now(n), r->js->heartbeat_ns);
    jr__js_timer_arm(r->js, &r->timer, at < r->deadline ? at : r->deadline);
}

/* Waits for a leader as wait_retry, unless this server's replica g of r's group has been
 * leaderless long enough (jr__js_leaderless): r then ends now, as at its deadline. */
static void wait_leader(jr__req *r, jr_group *g)
{
    if (!jr__js_leaderless(r->js, g)) {
        wait_retry(r);
        return;
    }
    r->deadline = jr__node_now(r->js->n);
    jr__req_timer(r);
}

/* 1 if this server's meta state is as new as it can know: replayed, a meta leader known, and
 * everything it knows committed applied. Then a stream it does not know does not exist (for
 * all a server can tell without asking the meta leader). */
static int meta_settled(jr__js *js)
{
    return js->meta && jr__mnode_replayed(js) && jr__mnode_current(js);
}

/* Looks up the group of a stream request started while this server's meta state did not know
 * the stream, and writes it into the payload's head ([sub byte] varint group, the group 0 until
 * now). 1 when found; 0 to look again later (the state is still behind); -1 when the request
 * ended (the stream does not exist, or memory ran out). */
static int stream_resolve(jr__req *r)
{
    jr__js *js = r->js;
    const jr__meta_stream *s = jr__meta_stream_find(&js->st, r->stream);
    if (!s) {
        if (!meta_settled(js)) return 0;
        jr__req_finish(r, JR_ENOTFOUND, "stream '%s' not found", r->stream);
        return -1;
    }
    size_t head = r->kind == JR__RPC_STREAM_ADMIN ? 2 : 1; /* sub byte, varint 0 */
    jr__buf nb;
    jr__buf_init(&nb, js->alloc);
    if (head == 2) jr__buf_u8(&nb, r->payload.data[0]);
    jr__buf_varint(&nb, s->group);
    jr__buf_put(&nb, r->payload.data + head, r->payload.len - head);
    if (nb.err) {
        jr__buf_free(&nb);
        jr__req_finish(r, JR_ENOMEM, "out of memory");
        return -1;
    }
    jr__buf_free(&r->payload);
    r->payload = nb;
    r->group = s->group;
    return 1;
}

void jr__req_route(jr__req *r)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    if (r->done) return;
    if (jr__node_now(n) >= r->deadline) {
        jr__req_timer(r);
        return;
    }
    const char *const *peers;
    size_t npeers;
    int local, leads;
    jr__peer *p;
    jr_group *lg;                        /* this server's replica of the group, if any */
    if (r->group == JR__META_GROUP_ID) { /* the meta group's stepdown: to its leader */
        int self;
        const char *leader = jr__mnode_leader(js, &self);
        jr__peer *mp = leader && !self ? jr__peer_find_name(n, leader) : NULL;
        if (self) {
            r->saw_leader = 1;
            r->sent = 1;
            r->target = js->self;
            jr__route rt = jr__route_local(r);
            jr__js_timer_arm_queued(js, &r->timer, r->deadline, r->span);
            jr__stream_exec(js, r->kind, &rt, r->payload.data, r->payload.len);
            return;
        }
        if (!mp || lost_peer(r, mp)) {
            wait_leader(r, leader ? NULL : js->meta);
            return;
        }
        r->saw_leader = 1;
        r->tries++;
        r->target = jr__peer_get_id(mp);
        jr_iovec iov = {r->payload.data, r->payload.len};
        if (jr__rpc_call(js->n, r->target, r->kind, &iov, 1, attempt_timeout(r), on_rpc, r,
                         &r->rpc_id) != 0) {
            wait_retry(r);
            return;
        }
        r->sent_at = jr__node_now(n);
        jr__js_timer_arm_queued(js, &r->timer, jr__deadline(jr__node_now(n), js->election_ns),
                                js->election_ns);
        return;
    }
    if (r->kind == JR__RPC_CONSUMER) {
        int known = jr__consumer_resolve(r);
        if (known < 0) return;
        if (!known) {
            wait_retry(r);
            return;
        }
        const jr__meta_consumer *c = jr__meta_consumer_by_group(&js->st, r->group);
        if (!c) {
            jr__req_finish(r, JR_ENOTFOUND, "consumer '%s > %s' was deleted", r->stream,
                           r->consumer);
            return;
        }
        peers = c->peers;
        npeers = c->npeers;
        jr__crep *cr = jr__crep_find(js, r->group);
        local = cr != NULL;
        lg = cr ? cr->g : NULL;
        leads = jr__crep_is_leader(cr) && cr->lead;
        p = jr__crep_leader_peer(js, r->group);
    } else {
        if (r->group == 0) {
            int known = stream_resolve(r);
            if (known < 0) return;
            if (!known) {
                wait_retry(r);
                return;
            }
        }
        const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, r->group);
        if (!s) {
            jr__req_finish(r, r->what == JR__REQ_PUBLISH ? JR_ENOSTREAM : JR_ENOTFOUND,
                           "stream '%s' was deleted", r->stream);
            return;
        }
        peers = s->peers;
        npeers = s->npeers;
        jr__srep *rep = jr__srep_find(js, r->group);
        local = rep != NULL;
        lg = rep ? rep->g : NULL;
        leads = rep && jr__srep_is_leader(rep);
        p = jr__srep_leader_peer(js, r->group);
    }
    if (leads) {
        r->saw_leader = 1;
        r->sent = 1;
        r->target = js->self;
        jr__route rt = jr__route_local(r);
        /* The leader's answer comes through jr__req_response; arm the deadline meanwhile (on
         * its timeout's queue: a publish at its stream's leader costs no heap operation). */
        jr__js_timer_arm_queued(js, &r->timer, r->deadline, r->span);
        if (r->kind == JR__RPC_CONSUMER)
            jr__consumer_exec(js, &rt, r->payload.data, r->payload.len);
        else
            jr__stream_exec(js, r->kind, &rt, r->payload.data, r->payload.len);
        return;
    }
    if (p && jr__peer_get_id(p) != js->self && !lost_peer(r, p)) {
        r->saw_leader = 1;
    } else {
        p = NULL;
        if (!local && npeers) {
            /* Not a replica and no hint: ask the peers in turn (they redirect), those heard
             * from lately first (a crashed one would hold the request for two election
             * timeouts). */
            uint64_t now = jr__node_now(n), recent = 2 * js->election_ns;
            for (int pass = 0; pass < 2 && !p; pass++) {
                for (size_t k = 0; k < npeers && !p; k++) {
                    jr__peer *q = jr__peer_find_name(n, peers[(r->tries + k) % npeers]);
                    if (!q || jr__peer_get_id(q) == js->self || lost_peer(r, q)) continue;
                    if (pass == 0 && now - jr__peer_heard(q) > recent) continue;
                    p = q;
                }
            }
        }
    }
    if (!p) {
        wait_leader(r, lg);
        return;
    }
    r->tries++;
    r->target = jr__peer_get_id(p);
    jr_iovec iov = {r->payload.data, r->payload.len};
    int rc = jr__rpc_call(js->n, jr__peer_get_id(p), r->kind, &iov, 1, attempt_timeout(r), on_rpc,
                          r, &r->rpc_id);
    if (rc == JR_EMSGSIZE) {
        jr__req_finish(r, JR_EMSGSIZE, "request does not fit in a frame (max_frame_bytes)");
        return;
    }
    if (rc != 0) {
        wait_retry(r);
        return;
    }
    r->sent_at = jr__node_now(n);
    if (r->resend)
        jr__js_timer_cancel(js, &r->timer); /* the call's own timeout bounds the wait now */
    else
        jr__js_timer_arm_queued(js, &r->timer, jr__deadline(jr__node_now(n), js->election_ns),
                                js->election_ns); /* watch the leader */
}

/* Names the leaders r lost on its way, for its final message ("" if none). */
static const char *lost_note(const jr__req *r, char *buf, size_t cap)
{
    const char *l = r->lost ? jr__js_peer_name(r->js, r->lost) : NULL;
    if (!r->failovers || !l)
        buf[0] = 0;
    else if (r->failovers == 1)
        snprintf(buf, cap, " (after leader %s was lost)", l);
    else
        snprintf(buf, cap, " (after %u lost leaders, the last %s)", r->failovers, l);
    return buf;
}

static const char *what_name(const jr__req *r)
{
    switch (r->what) {
    case JR__REQ_PUBLISH:
        return "publish";
    case JR__REQ_PURGE:
        return "purge";
    case JR__REQ_MSG_DELETE:
        return "message delete";
    case JR__REQ_FETCH:
        return "fetch";
    default:
        return "request";
    }
}

/* The leader r waited for is gone (silent, or it lost its leadership before the op committed,
 * or it cannot tell the op's outcome: why, its text, else NULL): a publish with a msg_id goes
 * to the next leader while within its deadline; anything else ends with JR_ELEADERLOST, its
 * outcome unknown. silent: gone silent (else it said so itself). */
static void leader_gone(jr__req *r, int silent, const char *why)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    const char *t = jr__js_peer_name(js, r->target);
    if (!t) t = "?";
    char how[160];
    if (silent)
        snprintf(how, sizeof how, "went silent");
    else if (why && why[0])
        snprintf(how, sizeof how, "cannot tell the outcome (%s)", why);
    else
        snprintf(how, sizeof how, "lost its leadership");
    if (r->rpc_id) {
        jr__rpc_cancel(js->n, r->rpc_id); /* a late answer from it is not waited for */
        r->rpc_id = 0;
    }
    if (r->failovers < UINT8_MAX) r->failovers++;
    if (r->target != js->self) {
        jr__peer *hp = jr__map_get(&js->hints, r->group);
        if (hp && jr__peer_get_id(hp) == r->target) jr__map_del(&js->hints, r->group);
    }
    r->lost = r->target; /* not asked again before it is heard from */
    r->lost_at = jr__node_now(n);
    if (r->idempotent && jr__node_now(n) < r->deadline) {
        jr__node_log(n, JR_LOG_INFO,
                     "stream '%s': leader %s %s; the %s goes to the next leader (%s)", r->stream, t,
                     how, what_name(r),
                     r->what == JR__REQ_FETCH ? "what the lost one handed out is redelivered"
                                              : "its msg_id makes that safe");
        jr__req_route(r);
        return;
    }
    if (r->idempotent)
        jr__req_finish(r, JR_ELEADERLOST,
                       "stream '%s': leader %s %s before the publish committed, and its deadline "
                       "passed: it may or may not be stored (publishing again with the same "
                       "msg_id is safe)",
                       r->stream, t, silent ? "was lost (silent for two election timeouts)" : how);
    else
        jr__req_finish(r, JR_ELEADERLOST,
                       "stream '%s': leader %s %s before the %s committed: it may or may not "
                       "have taken effect (not retried: %s)",
                       r->stream, t, silent ? "was lost (silent for two election timeouts)" : how,
                       what_name(r),
                       r->what == JR__REQ_PUBLISH
                           ? "only a publish with a msg_id is safe to send again"
                           : "it is not idempotent");
}

static void on_ping(jr_node *n, void *arg, int status, int answered, const uint8_t *p, size_t len)
{
    /* The answer's frame was the point (it refreshed the peer's last_heard). */
    (void)n, (void)arg, (void)status, (void)answered, (void)p, (void)len;
}

/* r's attempt is out at a remote leader: checks that the leader is alive (see the header). */
static void watch(jr__req *r)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    jr__peer *p = jr__peer_find(n, r->target);
    uint64_t seen = p && jr__peer_heard(p) > r->sent_at ? jr__peer_heard(p) : r->sent_at;
    uint64_t e = js->election_ns;
    if (jr__node_now(n) < jr__deadline(seen, e)) {
        jr__js_timer_arm(js, &r->timer, jr__deadline(seen, e));
        return;
    }
    if (p && jr__node_now(n) < jr__deadline(seen, 2 * e)) {
        if (r->pinged_at < seen) {
            uint8_t b[16];
            jr__buf pl = {b, 0, sizeof b, 0, NULL};
            jr__buf_u8(&pl, JR__ADM_PING);
            jr__buf_varint(&pl, r->group);
            jr_iovec iov = {pl.data, pl.len};
            if (jr__rpc_call(js->n, jr__peer_get_id(p), JR__RPC_STREAM_ADMIN, &iov, 1, e, on_ping,
                             NULL, NULL) == 0)
                r->pinged_at = jr__node_now(n);
        }
        jr__js_timer_arm(js, &r->timer, jr__deadline(seen, 2 * e));
        return;
    }
    leader_gone(r, 1, NULL);
}

/* Copies a text payload into r->msg. */
static void take_msg(jr__req *r, const uint8_t *p, size_t len)
{
    size_t k = len < sizeof r->msg - 1 ? len : sizeof r->msg - 1;
    if (k && p) memcpy(r->msg, p, k);
    r->msg[k] = 0;
    if (memchr(r->msg, 0, k)) r->msg[0] = 0; /* not text */
}

static void meta_info_route(jr__req *r);

/* A request the meta group decides (meta_replica.c runs its answers and timer). */
static int meta_write(const jr__req *r)
{
    return r->what == JR__REQ_ADD || r->what == JR__REQ_UPDATE || r->what == JR__REQ_DELETE ||
           r->what == JR__REQ_SERVER_INFO || r->what == JR__REQ_CONVERGED ||
           r->what == JR__REQ_CONSUMER_ADD || r->what == JR__REQ_CONSUMER_DELETE ||
           r->what == JR__REQ_CONSUMER_PAUSE || r->what == JR__REQ_CONSUMER_EXPIRE ||
           r->what == JR__REQ_SERVER_REMOVE || r->what == JR__REQ_SERVER_JOIN;
}

void jr__req_response(jr__req *r, int status, const uint8_t *p, size_t len)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    if (r->done) return;
    if (jr__lists_owns(r)) {
        jr__lists_response(r, status, p, len);
        return;
    }
    if (meta_write(r)) {
        jr__mnode_on_reply(r, status, p, len);
        return;
    }
    switch (r->what) {
    case JR__REQ_META_INFO:
        if (status == JR_ENOTLEADER || (r->unanswered && status == JR_ETIMEDOUT)) {
            wait_retry(r);
            return;
        }
        if (status == 0 || status == JR_ENOLEADER) {
            jr__buf_reset(&r->result);
            jr__buf_put(&r->result, p, len);
            if (r->result.err) status = JR_ENOMEM;
        }
        if ((js->removed || js->leaving) && (status == 0 || status == JR_ENOLEADER)) {
            jr__req_finish(r, JR_EREMOVED, "server '%s' was removed from the cluster", js->name);
            return;
        }
        jr__req_finish(r, status, status == JR_ENOLEADER ? "no meta leader" : "");
        return;
    default:
        break;
    }
    if (status == JR_ENOTLEADER) {
        /* Not proposed anywhere: safe to send again, to the leader named if any. */
        r->sent = 0;
        js->not_leader_resends++;
        char hint[JR__META_NAME_MAX + 1];
        size_t k = len < sizeof hint - 1 ? len : sizeof hint - 1;
        if (k) memcpy(hint, p, k);
        hint[k] = 0;
        jr__peer *hp = hint[0] ? jr__peer_find_name(n, hint) : NULL;
        int local = r->kind == JR__RPC_CONSUMER ? jr__crep_find(js, r->group) != NULL
                                                : jr__srep_find(js, r->group) != NULL;
        if (hp && jr__peer_get_id(hp) != js->self && !local)
            jr__map_put(&js->hints, r->group, hp);
        else if (!hp)
            jr__map_del(&js->hints, r->group);
        if (hp && jr__peer_get_id(hp) != r->target && jr__peer_get_id(hp) != js->self)
            jr__req_route(r);
        else
            wait_retry(r);
        return;
    }
    if (r->unanswered && status == JR_ETIMEDOUT) {
        if (r->resend && jr__node_now(n) < r->deadline) {
            jr__map_del(&js->hints, r->group);
            jr__req_route(r);
            return;
        }
        const char *t = jr__js_peer_name(js, r->target);
        char note[128];
        jr__req_finish(r, JR_ETIMEDOUT,
                       "no answer from stream leader %s in time%s: the outcome is unknown",
                       t ? t : "?", lost_note(r, note, sizeof note));
        return;
    }
    int read = jr__req_leader_read(r->what) || r->what == JR__REQ_CONSUMER_INFO;
    if (read && jr__node_now(n) < r->deadline &&
        (status == JR_ELEADERLOST || status == JR_ETRANSFER ||
         (status == JR_ETIMEDOUT && !r->unanswered))) {
        /* the leader's read entry was lost or did not commit in time: a read has no effect,
         * so it is asked again (of the next leader) */
        r->sent = 0;
        wait_retry(r);
        return;
    }
    if (status == JR_ELEADERLOST && !read && r->what != JR__REQ_STEPDOWN &&
        r->what != JR__REQ_CONSUMER_STEPDOWN) {
        char why[96];
        size_t k = len < sizeof why - 1 ? len : sizeof why - 1;
        if (k) memcpy(why, p, k);
        why[k] = 0;
        leader_gone(r, 0, memchr(why, 0, k) ? NULL : why);
        return;
    }
    switch (r->what) {
    case JR__REQ_PUBLISH: {
        jr__rd rd;
        jr__rd_init(&rd, p, len);
        if (len) {
            r->seq = jr__rd_varint(&rd);
            r->duplicate = jr__rd_u8(&rd);
            if (rd.err) {
                r->seq = 0;
                r->duplicate = 0;
            }
        }
        /* a refusal's detail (an answer from a server of an earlier release has none) */
        size_t wn = 0;
        const uint8_t *why =
            status && !rd.err && jr__rd_left(&rd) ? jr__rd_bytes(&rd, &wn, JR__PUB_WHY_MAX) : NULL;
        jr__buf_reset(&r->result);
        if (why && status == JR_EWRONGLASTMSGID) {
            /* kept for the ack's last_msg_id, NUL-terminated; an id with a NUL is cut there */
            jr__buf_put(&r->result, why, wn);
            jr__buf_u8(&r->result, 0);
            if (r->result.err) jr__buf_reset(&r->result);
        }
        if (status == JR_ETIMEDOUT) {
            const char *t = jr__js_peer_name(js, r->target);
            jr__req_finish(r, status,
                           "stream '%s': leader %s did not commit the publish in time: it may "
                           "or may not be stored",
                           r->stream, t ? t : "?");
        } else if (why && wn && status == JR_ELIMIT && !memchr(why, 0, wn)) {
            jr__req_finish(r, status, "%.*s", (int)wn, (const char *)why);
        } else {
            jr__req_finish(r, status, NULL);
        }
        return;
    }
    case JR__REQ_PURGE:
        if (status == 0) {
            jr__rd rd;
            jr__rd_init(&rd, p, len);
            r->seq = jr__rd_varint(&rd);
        } else {
            take_msg(r, p, len);
        }
        jr__req_finish(r, status, NULL);
        return;
    case JR__REQ_INFO:
    case JR__REQ_MSG_GET:
    case JR__REQ_GET_LAST:
    case JR__REQ_GET_NEXT:
    case JR__REQ_SUBJECTS:
    case JR__REQ_DELETED:
    case JR__REQ_CONSUMER_INFO:
    case JR__REQ_FETCH:
        if (status == 0) {
            jr__buf_reset(&r->result);
            jr__buf_put(&r->result, p, len);
            if (r->result.err) status = JR_ENOMEM;
        } else {
            take_msg(r, p, len);
        }
        jr__req_finish(r, status, NULL);
        return;
    default:
        if (status != 0) take_msg(r, p, len);
        jr__req_finish(r, status, NULL);
        return;
    }
}

void jr__req_timer(jr__req *r)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    if (r->done) return;
    if (jr__lists_owns(r)) {
        jr__lists_timer(r);
        return;
    }
    if (meta_write(r)) {
        jr__mnode_timer(r);
        return;
    }
    switch (r->what) {
    case JR__REQ_META_INFO:
        if (jr__node_now(n) < r->deadline) {
            meta_info_route(r);
        } else {
            /* No meta leader: this server's own view. */
            jr__route rt = jr__route_local(r);
            jr__mnode_cluster_info(js, &rt);
        }
        return;
    default:
        break;
    }
    if (r->rpc_id) { /* a write out at a remote leader: its watch (reads cancel the timer) */
        watch(r);
        return;
    }
    if (jr__node_now(n) < r->deadline) {
        jr__req_route(r);
        return;
    }
    char note[128];
    lost_note(r, note, sizeof note);
    if (r->failovers) {
        /* it reached a leader once: its outcome is unknown, not merely "nothing happened" */
        const char *l = r->lost ? jr__js_peer_name(js, r->lost) : NULL;
        jr__req_finish(r, JR_ELEADERLOST,
                       "stream '%s': leader %s was lost before the %s committed, and no other "
                       "leader answered in time: it may or may not be stored%s",
                       r->stream, l ? l : "(its leader)", what_name(r),
                       r->idempotent ? " (publishing again with the same msg_id is safe)" : "");
    } else if (r->sent && r->target == js->self)
        /* staged or proposed here, this server still leading: it may still commit */
        jr__req_finish(r, JR_ETIMEDOUT,
                       "stream '%s': the %s did not commit in time (no quorum): it may or may "
                       "not have taken effect%s",
                       r->stream, what_name(r), note);
    else /* it reached no log */
        jr__req_finish(r, JR_ENOQUORUM, "stream '%s' has no leader (no quorum)%s", r->stream, note);
}

/* Delivery ----------------------------------------------------------------------------------*/

void jr__req_deliver_msg(jr__req *r, int st, const char *msg)
{
    if (st != 0) {
        r->cb.msg(r->arg, st, msg, NULL);
        return;
    }
    jr__msg_dec d;
    int rc = jr__msg_decode(r->result.data, r->result.len, r->js->alloc, &d);
    d.m.stream = r->stream;
    if (rc == 0)
        r->cb.msg(r->arg, 0, "", &d.m);
    else
        r->cb.msg(r->arg, rc, "message does not decode", NULL);
    jr__msg_dec_free(&d);
}

void jr__req_deliver(jr__req *r)
{
    jr__js *js = r->js;
    const jr_allocator *a = js->alloc;
    const char *msg = r->msg[0] ? r->msg : (r->status ? jr_strerror(r->status) : "");
    int st = r->status;
    switch (r->what) {
    case JR__REQ_ADD:
        if (r->report_created) {
            r->cb.create(r->arg, st, msg, st == 0 && r->created);
            return;
        }
        r->cb.admin(r->arg, st, msg);
        return;
    case JR__REQ_UPDATE:
    case JR__REQ_DELETE:
    case JR__REQ_MSG_DELETE:
    case JR__REQ_STEPDOWN:
    case JR__REQ_CONSUMER_DELETE:
    case JR__REQ_CONSUMER_PAUSE:
    case JR__REQ_SERVER_REMOVE:
        r->cb.admin(r->arg, st, msg);
        return;
    case JR__REQ_SERVER_JOIN: /* internal: the member that forwarded it answers the joiner */
        if (r->cb.admin) r->cb.admin(r->arg, st, msg);
        return;
    case JR__REQ_CONSUMER_ADD:
        r->cb.consumer(r->arg, st, msg, st == 0 ? r->consumer : NULL);
        return;
    case JR__REQ_PUBLISH: {
        const char *last_id = st == JR_EWRONGLASTMSGID && r->result.len
                                  ? (const char *)r->result.data
                                  : (st == JR_EWRONGLASTMSGID ? "" : NULL);
        jr_pub_ack ack = {sizeof ack, r->stream, r->seq, r->duplicate, st ? msg : "", last_id};
        r->cb.pub(r->arg, st, &ack);
        return;
    }
    case JR__REQ_PURGE:
        r->cb.purge(r->arg, st, msg, st == 0 ? r->seq : 0);
        return;
    case JR__REQ_INFO: {
        if (st != 0) {
            r->cb.info(r->arg, st, msg, NULL);
            return;
        }
        jr__info_dec d;
        int rc = jr__info_decode(r->result.data, r->result.len, a, &d);
        if (rc == 0)
            r->cb.info(r->arg, 0, "", &d.info);
        else
            r->cb.info(r->arg, rc, "stream info does not decode", NULL);
        jr__info_dec_free(&d);
        return;
    }
    case JR__REQ_MSG_GET:
    case JR__REQ_GET_LAST:
    case JR__REQ_GET_NEXT:
        jr__req_deliver_msg(r, st, msg);
        return;
    case JR__REQ_SUBJECTS:
        jr__subjects_deliver(r, st, msg);
        return;
    case JR__REQ_DELETED:
        jr__deleted_deliver(r, st, msg);
        return;
    case JR__REQ_META_INFO: {
        if (st != 0 && st != JR_ENOLEADER && st != JR_EREMOVED) {
            r->cb.meta(r->arg, st, msg, NULL);
            return;
        }
        jr__servers_dec d;
        int rc = jr__servers_decode(r->result.data, r->result.len, a, &d);
        d.info.removed = js->removed || js->leaving; /* this node's own view */
        if (rc == 0)
            r->cb.meta(r->arg, st, st ? msg : "", &d.info);
        else
            r->cb.meta(r->arg, rc, "server report does not decode", NULL);
        jr__servers_dec_free(&d);
        return;
    }
    case JR__REQ_CONSUMER_INFO:
    case JR__REQ_FETCH:
    case JR__REQ_ACK:
    case JR__REQ_CONSUMER_RESET:
    case JR__REQ_CONSUMER_STEPDOWN:
    case JR__REQ_CONSUMER_UNPIN:
        jr__consumer_deliver(r);
        return;
    case JR__REQ_STREAM_NAMES:
    case JR__REQ_STREAM_LIST:
    case JR__REQ_CONSUMER_NAMES:
    case JR__REQ_CONSUMER_LIST:
    case JR__REQ_DIRECT_GET:
        jr__lists_deliver(r);
        return;
    default: /* internal (SERVER_INFO): nobody to call */
        return;
    }
}

/* Admin (meta) ------------------------------------------------------------------------------*/

/* A full-size copy of the caller's config (fields it did not know keep their defaults; its
 * placement, still the caller's, is read by its own size). 0, or JR_EINVAL with a message if
 * the caller's size cannot even hold the size field. */
static int copy_config(const jr_stream_config *in, jr_stream_config *out, char *msg, size_t len)
{
    jr_stream_config_init(out);
    if (!in || jr__abi_read(out, sizeof *out, in) != 0) {
        snprintf(msg, len, "size: %zu is too small", in ? jr__abi_size(in) : (size_t)0);
        return JR_EINVAL;
    }
    return 0;
}

/* A stream add, update or delete; cb is cb.create when report_created (jr_stream_create), else
 * cb.admin. */
static int meta_request(jr_node *n, uint8_t what, const jr_stream_config *cfg_in, const char *name,
                        jr__req_cb cb, int report_created, void *arg)
{
    int have_cb = report_created ? cb.create != NULL : cb.admin != NULL;
    int rc = jr__js_entry(n, have_cb && (cfg_in || name));
    if (rc) return rc;
    jr__node_enter(n);
    jr__js *js = jr__js_of(n);
    jr__req *r = begin(n, what, 0, &rc);
    if (!r) goto out;
    r->cb = cb;
    r->report_created = (uint8_t)report_created;
    r->arg = arg;
    r->kind = JR__RPC_META;
    jr_stream_config cfg;
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.origin = js->name;
    if (what == JR__REQ_DELETE) {
        op.type = JR__META_STREAM_DELETE;
        op.stream = name;
        if (!*name || strlen(name) > JR_STREAM_NAME_MAX) {
            jr__req_finish(r, JR_EINVAL, "name: must be 1..%d bytes", JR_STREAM_NAME_MAX);
            goto out;
        }
        snprintf(r->stream, sizeof r->stream, "%s", name);
    } else {
        char msg[JR__JS_MSG_MAX];
        int bad = copy_config(cfg_in, &cfg, msg, sizeof msg);
        if (!bad)
            bad = what == JR__REQ_ADD ? jr__stream_config_check_add(&cfg, msg, sizeof msg)
                                      : jr__stream_config_validate(&cfg, msg, sizeof msg);
        if (bad) {
            jr__req_finish(r, JR_EINVAL, "%s", msg);
            goto out;
        }
        op.type = what == JR__REQ_ADD ? JR__META_STREAM_ADD : JR__META_STREAM_UPDATE;
        op.config = &cfg;
        snprintf(r->stream, sizeof r->stream, "%s", cfg.name);
    }
    int erc = jr__mnode_file(js, r, &op);
    if (erc != 0) {
        jr__req_finish(r, erc, "cannot encode the request: %s", jr_strerror(erc));
        goto out;
    }
    jr__mnode_send(r);
out:
    jr__node_leave(n);
    return rc;
}

int jr_stream_add(jr_node *n, const jr_stream_config *cfg, jr_stream_cb cb, void *arg)
{
    return meta_request(n, JR__REQ_ADD, cfg, NULL, (jr__req_cb){.admin = cb}, 0, arg);
}

int jr_stream_create(jr_node *n, const jr_stream_config *cfg, jr_stream_create_cb cb, void *arg)
{
    return meta_request(n, JR__REQ_ADD, cfg, NULL, (jr__req_cb){.create = cb}, 1, arg);
}

int jr_stream_update(jr_node *n, const jr_stream_config *cfg, jr_stream_cb cb, void *arg)
{
    return meta_request(n, JR__REQ_UPDATE, cfg, NULL, (jr__req_cb){.admin = cb}, 0, arg);
}

int jr_stream_delete(jr_node *n, const char *name, jr_stream_cb cb, void *arg)
{
    return meta_request(n, JR__REQ_DELETE, NULL, name, (jr__req_cb){.admin = cb}, 0, arg);
}

/* Stream requests ---------------------------------------------------------------------------*/

/* Starts a request to the leader of stream `name` with callback cb: its payload gets the
 * admin sub-kind (kind STREAM_ADMIN) and the stream's group. Returns the record; NULL with *rc
 * set (nothing started) or with the request already completed (unknown stream; *rc 0). */
static jr__req *stream_request(jr_node *n, uint8_t what, uint8_t kind, uint8_t sub,
                               const char *name, jr__req_cb cb, void *arg, int *rc)
{
    jr__js *js = jr__js_of(n);
    jr__req *r = begin(n, what, 0, rc);
    if (!r) return NULL;
    r->cb = cb;
    r->arg = arg;
    r->kind = kind;
    r->resend = jr__req_leader_read(what);
    snprintf(r->stream, sizeof r->stream, "%s", name);
    const jr__meta_stream *s = jr__meta_stream_find(&js->st, name);
    if (!s && meta_settled(js)) {
        jr__req_finish(r, JR_ENOTFOUND, "stream '%s' not found", name);
        return NULL;
    }
    /* A stream this server's meta state does not know while that state is behind (just
     * restarted, or cut off from the meta leader) is looked up again when the request is routed
     * (stream_resolve); its group stays 0 in the payload until then. */
    r->group = s ? s->group : 0;
    if (kind == JR__RPC_STREAM_ADMIN) jr__buf_u8(&r->payload, sub);
    jr__buf_varint(&r->payload, r->group);
    return r;
}

/* Sends r unless building its payload failed. */
static void send_or_fail(jr__req *r)
{
    if (r->payload.err)
        jr__req_finish(r, r->payload.err, "out of memory");
    else
        jr__req_route(r);
}

int jr_stream_info_get(jr_node *n, const char *name, jr_stream_info_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb && name);
    if (rc) return rc;
    jr__node_enter(n);
    jr__req_cb c = {.info = cb};
    jr__req *r = stream_request(n, JR__REQ_INFO, JR__RPC_STREAM_INFO, 0, name, c, arg, &rc);
    if (r) send_or_fail(r);
    jr__node_leave(n);
    return rc;
}

/* Appends an op (timestamp 0: the leader stamps it) to r's payload; finishes r on failure. */
static int put_op(jr__req *r, const jr__stream_op *op)
{
    int rc = jr__op_encode(op, &r->payload);
    if (rc != 0) {
        jr__req_finish(r, rc == JR_EINVAL ? JR_EINVAL : rc,
                       rc == JR_EINVAL ? "invalid request (a field is over its limit)"
                                       : "out of memory");
        return rc;
    }
    return 0;
}

void jr_purge_opts_init_size(jr_purge_opts *o, size_t size)
{
    jr_purge_opts d;
    memset(&d, 0, sizeof d);
    jr__abi_init(o, size, &d, sizeof d);
}

int jr_stream_purge(jr_node *n, const char *name, const jr_purge_opts *opts_in, jr_purge_cb cb,
                    void *arg)
{
    int rc = jr__js_entry(n, cb && name);
    if (rc) return rc;
    jr_purge_opts o;
    jr_purge_opts_init(&o);
    if (opts_in) memcpy(&o, opts_in, opts_in->size < sizeof o ? opts_in->size : sizeof o);
    jr__node_enter(n);
    jr__req_cb c = {.purge = cb};
    jr__req *r =
        stream_request(n, JR__REQ_PURGE, JR__RPC_STREAM_ADMIN, JR__ADM_PURGE, name, c, arg, &rc);
    if (r) {
        if (o.keep && o.seq) {
            jr__req_finish(r, JR_EINVAL, "keep and seq can not be combined");
        } else if (o.subject && !jr__subject_valid_pattern(o.subject)) {
            jr__req_finish(r, JR_EINVAL, "subject: '%s' is not a valid subject", o.subject);
        } else {
            jr__stream_op op;
            memset(&op, 0, sizeof op);
            op.type = JR__OP_PURGE;
            op.u.purge.filter = o.subject;
            op.u.purge.filter_len = o.subject ? strlen(o.subject) : 0;
            op.u.purge.seq = o.seq;
            op.u.purge.keep = o.keep;
            if (put_op(r, &op) == 0) send_or_fail(r);
        }
    }
    jr__node_leave(n);
    return rc;
}

int jr_stream_msg_delete(jr_node *n, const char *name, uint64_t seq, int erase, jr_stream_cb cb,
                         void *arg)
{
    int rc = jr__js_entry(n, cb && name);
    if (rc) return rc;
    jr__node_enter(n);
    jr__req_cb c = {.admin = cb};
    jr__req *r = stream_request(n, JR__REQ_MSG_DELETE, JR__RPC_STREAM_ADMIN, JR__ADM_MSG_DELETE,
                                name, c, arg, &rc);
    if (r) {
        if (seq == 0) {
            jr__req_finish(r, JR_EINVAL, "seq: must be at least 1");
        } else {
            jr__stream_op op;
            memset(&op, 0, sizeof op);
            op.type = JR__OP_DELETE;
            op.u.del.seq = seq;
            op.u.del.erase = erase ? 1 : 0;
            if (put_op(r, &op) == 0) send_or_fail(r);
        }
    }
    jr__node_leave(n);
    return rc;
}

int jr_stream_msg_get(jr_node *n, const char *name, uint64_t seq, jr_msg_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb && name);
    if (rc) return rc;
    jr__node_enter(n);
    jr__req_cb c = {.msg = cb};
    jr__req *r = stream_request(n, JR__REQ_MSG_GET, JR__RPC_STREAM_ADMIN, JR__ADM_MSG_GET, name, c,
                                arg, &rc);
    if (r) {
        if (seq == 0) {
            jr__req_finish(r, JR_EINVAL, "seq: must be at least 1");
        } else {
            jr__buf_varint(&r->payload, seq);
            send_or_fail(r);
        }
    }
    jr__node_leave(n);
    return rc;
}

/* A read at a stream's leader (get last, get next, subjects) whose payload is an optional varint
 * (with_num) then a subject pattern, checked here (JR_EINVAL naming `field`). have_cb: the
 * caller's callback in c is set. */
static int pattern_read(jr_node *n, uint8_t what, uint8_t sub, const char *name, jr__req_cb c,
                        int have_cb, void *arg, int with_num, uint64_t num, const char *field,
                        const char *pattern)
{
    int rc = jr__js_entry(n, have_cb && name && pattern);
    if (rc) return rc;
    jr__node_enter(n);
    jr__req *r = stream_request(n, what, JR__RPC_STREAM_ADMIN, sub, name, c, arg, &rc);
    if (r) {
        if (!jr__subject_valid_pattern(pattern)) {
            jr__req_finish(r, JR_EINVAL, "%s: '%s' is not a valid subject", field, pattern);
        } else {
            if (with_num) jr__buf_varint(&r->payload, num);
            jr__buf_bytes(&r->payload, pattern, strlen(pattern));
            send_or_fail(r);
        }
    }
    jr__node_leave(n);
    return rc;
}

int jr_stream_get_last(jr_node *n, const char *name, const char *subject, jr_msg_cb cb, void *arg)
{
    return pattern_read(n, JR__REQ_GET_LAST, JR__ADM_GET_LAST, name, (jr__req_cb){.msg = cb},
                        cb != NULL, arg, 0, 0, "subject", subject);
}

int jr_stream_get_next(jr_node *n, const char *name, uint64_t seq, const char *subject,
                       jr_msg_cb cb, void *arg)
{
    return pattern_read(n, JR__REQ_GET_NEXT, JR__ADM_GET_NEXT, name, (jr__req_cb){.msg = cb},
                        cb != NULL, arg, 1, seq ? seq : 1, "subject", subject);
}

int jr_stream_subjects(jr_node *n, const char *name, const char *filter, uint64_t offset,
                       jr_subjects_cb cb, void *arg)
{
    return pattern_read(n, JR__REQ_SUBJECTS, JR__ADM_SUBJECTS, name, (jr__req_cb){.subjects = cb},
                        cb != NULL, arg, 1, offset, "filter", filter && *filter ? filter : ">");
}

int jr_stream_deleted(jr_node *n, const char *name, uint64_t after, jr_deleted_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb && name);
    if (rc) return rc;
    jr__node_enter(n);
    jr__req_cb c = {.deleted = cb};
    jr__req *r = stream_request(n, JR__REQ_DELETED, JR__RPC_STREAM_ADMIN, JR__ADM_DELETED, name, c,
                                arg, &rc);
    if (r) {
        jr__buf_varint(&r->payload, after);
        send_or_fail(r);
    }
    jr__node_leave(n);
    return rc;
}

int jr_stream_stepdown(jr_node *n, const char *name, const char *peer, jr_stream_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb && name);
    if (rc) return rc;
    jr__node_enter(n);
    jr__req_cb c = {.admin = cb};
    jr__req *r = stream_request(n, JR__REQ_STEPDOWN, JR__RPC_STREAM_ADMIN, JR__ADM_STEPDOWN, name,
                                c, arg, &rc);
    if (r) {
        if (peer && !jr__peer_find_name(n, peer)) {
            jr__req_finish(r, JR_ENOTFOUND, "peer: '%s' is not a known server", peer);
        } else {
            jr__buf_bytes(&r->payload, peer ? peer : "", peer ? strlen(peer) : 0);
            send_or_fail(r);
        }
    }
    jr__node_leave(n);
    return rc;
}

/* Publish -----------------------------------------------------------------------------------*/

int jr_meta_stepdown(jr_node *n, const char *peer, jr_meta_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb != NULL);
    if (rc) return rc;
    if (peer && strlen(peer) > JR__META_NAME_MAX)
        return jr__node_err(n, JR_EINVAL, "stepdown: peer name too long");
    jr__node_enter(n);
    jr__js *js = jr__js_of(n);
    jr__req *r = begin(n, JR__REQ_STEPDOWN, 0, &rc);
    if (r) {
        r->cb.admin = cb;
        r->arg = arg;
        r->kind = JR__RPC_STREAM_ADMIN;
        r->group = JR__META_GROUP_ID;
        snprintf(r->stream, sizeof r->stream, "%s", "$meta");
        if (peer && !jr__peer_find_name(n, peer)) {
            jr__req_finish(r, JR_ENOTFOUND, "peer: '%s' is not a known server", peer);
        } else {
            jr__buf_u8(&r->payload, JR__ADM_STEPDOWN);
            jr__buf_varint(&r->payload, r->group);
            jr__buf_bytes(&r->payload, peer ? peer : "", peer ? strlen(peer) : 0);
            send_or_fail(r);
        }
    }
    (void)js;
    jr__node_leave(n);
    return rc;
}

void jr_pub_opts_init_size(jr_pub_opts *o, size_t size)
{
    jr_pub_opts d;
    memset(&d, 0, sizeof d);
    d.expected_last_seq = JR_SEQ_NONE;
    d.expected_last_subject_seq = JR_SEQ_NONE;
    jr__abi_init(o, size, &d, sizeof d);
}

/* Largest headers + data of a message: the node's max_payload (the core leaves room
 * for it in every stream entry). */
static size_t max_payload(const jr__js *js)
{
    return js->facts.max_payload;
}

/* An optional string option of a publish: absent (NULL: 0, *out untouched) or 1..max bytes
 * (0, *out and *out_len set). On a bad length r finishes with JR_EINVAL naming the option, and
 * JR_EINVAL is returned. */
static int opt_string(jr__req *r, const char *what, const char *v, size_t max, const char **out,
                      size_t *out_len)
{
    if (!v) return 0;
    size_t l = strlen(v);
    if (l == 0 || l > max) {
        jr__req_finish(r, JR_EINVAL, "%s: must be 1..%zu bytes", what, max);
        return JR_EINVAL;
    }
    *out = v;
    *out_len = l;
    return 0;
}

/* Fills po from the header block and opts (opts win). 0 or JR_EINVAL with r finished. */
static int pub_options(jr__req *r, const void *hdr, size_t hdr_len, const jr_pub_opts *opts,
                       jr__pub_opts *po)
{
    if (jr__headers_validate(hdr, hdr_len) != 0) {
        jr__req_finish(r, JR_EINVAL, "headers: malformed NATS header block");
        return JR_EINVAL;
    }
    if (jr__headers_pub_opts(hdr, hdr_len, po) != 0) {
        jr__req_finish(r, JR_EINVAL, "headers: invalid JetStream publish header value");
        return JR_EINVAL;
    }
    if (!opts) return 0;
    jr_pub_opts o;
    jr_pub_opts_init(&o);
    memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
    int rc = opt_string(r, "msg_id", o.msg_id, JR__OP_MSG_ID_MAX, &po->msg_id, &po->msg_id_len);
    if (rc == 0)
        rc = opt_string(r, "expected_stream", o.expected_stream, JR_STREAM_NAME_MAX,
                        &po->expected_stream, &po->expected_stream_len);
    if (rc == 0)
        rc = opt_string(r, "expected_last_msg_id", o.expected_last_msg_id, JR__OP_MSG_ID_MAX,
                        &po->expected_last_msg_id, &po->expected_last_msg_id_len);
    if (rc != 0) return rc;
    if (o.msg_id) po->flags |= JR__PUB_MSG_ID;
    if (o.expected_stream) po->flags |= JR__PUB_EXPECT_STREAM;
    if (o.expected_last_msg_id) po->flags |= JR__PUB_EXPECT_LAST_MSG_ID;
    if (o.expected_last_seq != JR_SEQ_NONE) {
        po->flags |= JR__PUB_EXPECT_LAST_SEQ;
        po->expected_last_seq = o.expected_last_seq;
    }
    if (o.expected_last_subject_seq != JR_SEQ_NONE) {
        po->flags |= JR__PUB_EXPECT_LAST_SUBJ_SEQ;
        po->expected_last_subject_seq = o.expected_last_subject_seq;
    }
    return 0;
}

int jr_publish(jr_node *n, const char *subject, const void *hdr, size_t hdr_len, const void *data,
               size_t len, const jr_pub_opts *opts, jr_publish_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb && subject && (hdr || !hdr_len) && (data || !len));
    if (rc) return rc;
    jr__node_enter(n);
    jr__js *js = jr__js_of(n);
    uint64_t timeout = opts && opts->size >= offsetof(jr_pub_opts, timeout_ms) + sizeof(uint32_t)
                           ? (uint64_t)opts->timeout_ms * 1000000u
                           : 0;
    jr__req *r = begin(n, JR__REQ_PUBLISH, timeout, &rc);
    if (!r) goto out;
    r->cb.pub = cb;
    r->arg = arg;
    r->kind = JR__RPC_PUBLISH;
    const char *why = NULL;
    if (jr__subject_classify(subject, &why) != JR__SUBJECT_LITERAL) {
        jr__req_finish(r, JR_EINVAL, "subject: '%s' %s", subject,
                       why ? why : "is not a literal subject (wildcards)");
        goto out;
    }
    jr__pub_opts po;
    if (pub_options(r, hdr, hdr_len, opts, &po) != 0) goto out;
    const jr__meta_stream *s = jr__meta_stream_for_subject(&js->st, subject);
    if (!s) {
        jr__req_finish(r, JR_ENOSTREAM, "no stream matches subject '%s'", subject);
        goto out;
    }
    copy_name(r->stream, sizeof r->stream, s->name); /* the hot path: no snprintf */
    r->group = s->group;
    r->idempotent = (po.flags & JR__PUB_MSG_ID) != 0; /* the option or a Nats-Msg-Id header */
    if (r->idempotent) { /* every attempt carries it: a resend that finds its first attempt
                            stored is answered as that attempt (not as a duplicate) */
        if (++js->next_token == 0) js->next_token = 1;
        po.flags |= JR__PUB_TOKEN;
        po.token = js->next_token;
    }
    int32_t mms = s->cfg->c.max_msg_size;
    if ((mms >= 0 && hdr_len + len > (size_t)mms) || hdr_len + len > max_payload(js)) {
        jr__req_finish(r, JR_EMSGSIZE, "message of %zu bytes exceeds the %s (%zu bytes)",
                       hdr_len + len,
                       mms >= 0 && hdr_len + len > (size_t)mms ? "stream's max_msg_size"
                                                               : "server's max_payload",
                       mms >= 0 && hdr_len + len > (size_t)mms ? (size_t)mms : max_payload(js));
        goto out;
    }
    jr__stream_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__OP_PUBLISH;
    op.u.pub.subject = subject;
    op.u.pub.subject_len = strlen(subject);
    op.u.pub.hdr = hdr;
    op.u.pub.hdr_len = hdr_len;
    op.u.pub.data = data;
    op.u.pub.data_len = len;
    op.u.pub.opts = po;
    jr__buf_varint(&r->payload, r->group);
    if (put_op(r, &op) == 0) send_or_fail(r);
out:
    jr__node_leave(n);
    return rc;
}

/* Server report -----------------------------------------------------------------------------*/

static void meta_info_route(jr__req *r)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    if (r->done || r->rpc_id) return;
    int self;
    const char *leader = jr__mnode_leader(js, &self);
    if (self) {
        jr__route rt = jr__route_local(r);
        jr__mnode_cluster_info(js, &rt);
        return;
    }
    jr__peer *p = leader ? jr__peer_find_name(n, leader) : NULL;
    if (!p || jr__rpc_call(js->n, jr__peer_get_id(p), JR__RPC_CLUSTER_INFO, NULL, 0,
                           2 * js->election_ns, on_rpc, r, &r->rpc_id) != 0) {
        wait_leader(r, leader ? NULL : js->meta);
        return;
    }
    jr__js_timer_cancel(js, &r->timer);
}

int jr_meta_info_get(jr_node *n, jr_meta_info_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb != NULL);
    jr__js *js = rc == JR_EREMOVED ? jr__js_of(n) : NULL;
    if (rc && !js) return rc;
    jr__node_enter(n);
    jr__req *r = begin(n, JR__REQ_META_INFO, 0, &rc);
    if (r && js) { /* removed: this node's own view, with removed set */
        r->cb.meta = cb;
        r->arg = arg;
        jr__route rt = jr__route_local(r);
        jr__mnode_cluster_info(js, &rt);
    } else if (r) {
        r->cb.meta = cb;
        r->arg = arg;
        r->kind = JR__RPC_CLUSTER_INFO;
        meta_info_route(r);
    }
    jr__node_leave(n);
    return rc;
}
