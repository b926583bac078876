/*
 * api_lists — listing streams and consumers (jetraft.h "Listing streams and consumers":
 * JetStream's STREAM.NAMES, STREAM.LIST, CONSUMER.NAMES, CONSUMER.LIST) and direct get
 * (jr_stream_direct_get, JetStream's DIRECT.GET).
 *
 * Names. Only the meta leader answers them, as in JetStream: its meta state is the one that
 * decided every acknowledged add and delete, so a stream or consumer whose creation was
 * acknowledged is listed, wherever the list is asked. A new meta leader answers only once an
 * entry of its term is committed and everything committed is applied (before that it could
 * still miss an acknowledged change). The request (JR__RPC_LISTS) goes to the
 * meta leader this server knows (executed right here if it is this server); an answer
 * JR_ENOTLEADER, or silence, sends it again after a heartbeat, until the request's deadline
 * (JR_ENOLEADER). Reading names changes nothing, so sending again is always safe.
 *
 * Lists. A list first asks the meta leader for a page of names (at most JR_LIST_LIMIT), then
 * asks every stream (consumer) of the page for its info at its leader, all at once, through
 * the same calls as jr_stream_info_get / jr_consumer_info_get (each bounded by the node's
 * request timeout; the list's own wait ends when the last of them did). The page's infos are
 * kept encoded (codec.h) until the list's callback, which gets them decoded. An info that
 * failed with JR_ENOTFOUND / JR_ENOSTREAM is left out (deleted in between) once this server's
 * meta state has applied the meta index the names were read at; before that it only means
 * this server does not know the stream (consumer) yet, and it is asked again every heartbeat
 * (at most a request timeout, then it is missing). Any other failure names the stream or
 * consumer in `missing`, as JetStream's list does.
 *
 * Direct get. Any current replica of a stream with allow_direct answers from its own store,
 * without a log round: this server's replica when it holds a current one, else the stream's
 * other peers in turn (one attempt each, two election timeouts at most), then again every
 * heartbeat until the deadline. A replica is current when it leads, or when it knows a leader
 * it heard from within two election timeouts, has applied everything it knows committed, and
 * is neither restoring, catching up, damaged nor unvouched. Freshness: a follower answers from
 * what it applied, which may be behind its leader's last acknowledged write (not linearizable,
 * like JetStream's direct get).
 *
 * Payloads (varint = canonical LEB128, str = varint length + bytes):
 *   LISTS         u8 what (1 stream names, 2 consumer names) | str filter (streams: a subject
 *                 filter, "" none) or stream (consumers) | varint offset | varint limit
 *                 → varint total | varint offset | varint applied (the meta index the names
 *                 are of) | varint n | n × str name
 *                 (JR_ENOTLEADER with the meta leader's name, maybe "", from another server;
 *                 JR_ENOSTREAM for the consumers of an unknown stream)
 *   STREAM_ADMIN DIRECT_GET  u8 sub | varint group | varint seq | str subject ("" none)
 *                 → message (codec.h); JR_EBUSY when this server holds no current replica
 *                 (the requester asks another), JR_EDENIED without allow_direct,
 *                 JR_ENOTFOUND for no such message
 */
#include <stdio.h>
#include <string.h>

#include "js/js.h"
#include "js/codec.h"
#include "util/alloc.h"
#include "util/container.h"
#include "util/deadline.h"
#include "util/subject.h"

enum { LS_STREAMS = 1, LS_CONSUMERS = 2 };

#define MAX_NAME 4096u /* longest string a names request or answer carries */

/* Meta leader side ----------------------------------------------------------------------------*/

/* 1 if stream s has a subject that overlaps filter. */
static int stream_matches(const jr__meta_stream *s, const char *filter)
{
    const jr_stream_config *c = &s->cfg->c;
    for (size_t i = 0; i < c->nsubjects; i++)
        if (jr__subject_overlap(filter, c->subjects[i])) return 1;
    return 0;
}

static void put_name(jr__buf *b, const char *s)
{
    jr__buf_bytes(b, s, strlen(s));
}

void jr__lists_serve(jr__js *js, const jr__route *rt, const uint8_t *p, size_t len)
{
    int self;
    const char *leader = jr__mnode_leader(js, &self);
    const jr__raft *mr = js->meta ? jr__group_consensus(js->meta) : NULL;
    if (!self || !mr || !jr__raft_ready(mr) ||
        jr__group_applied(js->meta) < jr__raft_commit_index(mr)) {
        /* not the leader, or a new one that has not applied everything committed before its
         * term yet (it could miss an acknowledged add or delete): asked again shortly */
        const char *l = leader && !self ? leader : "";
        jr__route_reply(js, rt, JR_ENOTLEADER, l, strlen(l));
        return;
    }
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    uint8_t what = jr__rd_u8(&rd);
    size_t alen;
    const uint8_t *a = jr__rd_bytes(&rd, &alen, MAX_NAME);
    uint64_t offset = jr__rd_varint(&rd);
    uint64_t limit = jr__rd_varint(&rd);
    char arg[MAX_NAME + 1];
    if (rd.err || jr__rd_left(&rd) || (what != LS_STREAMS && what != LS_CONSUMERS) || limit == 0 ||
        limit > JR_NAMES_LIMIT || (alen && memchr(a, 0, alen))) {
        jr__route_reply(js, rt, JR_EINVAL, NULL, 0);
        return;
    }
    memcpy(arg, a, alen);
    arg[alen] = 0;
    const jr__meta_state *st = &js->st;
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    if (what == LS_STREAMS) {
        if (alen && !jr__subject_valid_pattern(arg)) {
            static const char t[] = "subject: not a valid subject filter";
            jr__route_reply(js, rt, JR_EINVAL, t, sizeof t - 1);
            return;
        }
        uint64_t total = 0;
        for (size_t i = 0; i < st->nstreams; i++)
            if (!alen || stream_matches(st->streams[i], arg)) total++;
        if (offset > total) offset = total;
        uint64_t n = total - offset < limit ? total - offset : limit;
        jr__buf_varint(b, total);
        jr__buf_varint(b, offset);
        jr__buf_varint(b, st->applied);
        jr__buf_varint(b, n);
        uint64_t k = 0;
        for (size_t i = 0; i < st->nstreams && k < offset + n; i++) {
            if (alen && !stream_matches(st->streams[i], arg)) continue;
            if (k++ >= offset) put_name(b, st->streams[i]->name);
        }
    } else {
        const jr__meta_stream *s = jr__meta_stream_find(st, arg);
        if (!s) {
            char t[JR_STREAM_NAME_MAX + 32];
            int k = snprintf(t, sizeof t, "stream '%s' not found", arg);
            jr__route_reply(js, rt, JR_ENOSTREAM, t, (size_t)k < sizeof t ? (size_t)k : 0);
            return;
        }
        uint64_t total = s->nconsumers;
        if (offset > total) offset = total;
        uint64_t n = total - offset < limit ? total - offset : limit;
        jr__buf_varint(b, total);
        jr__buf_varint(b, offset);
        jr__buf_varint(b, st->applied);
        jr__buf_varint(b, n);
        for (uint64_t i = offset; i < offset + n; i++) put_name(b, s->consumers[i]->name);
    }
    if (b->err) {
        jr__route_reply(js, rt, JR_ENOMEM, NULL, 0);
        return;
    }
    jr__route_reply(js, rt, 0, b->data, b->len);
}

/* A decoded page of names: names[] point into one block. */
typedef struct names_dec {
    uint64_t total, offset;
    uint64_t applied; /* the meta index the names are of */
    size_t n;
    const char **names;
} names_dec;

/* 0, JR_ECORRUPT or JR_ENOMEM; free d->names (one block) with the allocator. */
static int names_decode(const uint8_t *p, size_t len, const jr_allocator *a, names_dec *d)
{
    memset(d, 0, sizeof *d);
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    d->total = jr__rd_varint(&rd);
    d->offset = jr__rd_varint(&rd);
    d->applied = jr__rd_varint(&rd);
    uint64_t n = jr__rd_varint(&rd);
    if (rd.err || n > JR_NAMES_LIMIT || n > jr__rd_left(&rd)) return JR_ECORRUPT;
    /* the strings take at most the bytes left, plus a NUL each */
    size_t bytes = (size_t)n * sizeof(char *) + jr__rd_left(&rd) + (size_t)n + 1;
    char *block = jr__malloc(a, bytes);
    if (!block) return JR_ENOMEM;
    d->names = (const char **)(void *)block;
    char *at = block + (size_t)n * sizeof(char *);
    for (uint64_t i = 0; i < n; i++) {
        size_t l;
        const uint8_t *s = jr__rd_bytes(&rd, &l, MAX_NAME);
        if (!s || rd.err || memchr(s, 0, l)) {
            jr__free(a, block);
            d->names = NULL;
            return JR_ECORRUPT;
        }
        memcpy(at, s, l);
        at[l] = 0;
        d->names[i] = at;
        at += l + 1;
    }
    if (jr__rd_left(&rd)) {
        jr__free(a, block);
        d->names = NULL;
        return JR_ECORRUPT;
    }
    d->n = (size_t)n;
    return 0;
}

/* Origin side: names ---------------------------------------------------------------------------*/

/* A list's fan-out: one slot per name of its page. Freed once its request was delivered and
 * every slot's info request called back (refs). */
typedef struct job job;
enum { SLOT_WAITING = 1, SLOT_AGAIN = 2 };
typedef struct slot {
    job *j;
    int status;  /* SLOT_WAITING, SLOT_AGAIN (asked again at the timer), or the outcome */
    jr__buf enc; /* the info, encoded (codec.h) */
} slot;
struct job {
    jr__js *js;
    const jr_allocator *alloc;
    jr__req *req; /* the list's request until it was delivered (NULL after) */
    uint64_t serial;
    int consumers;
    uint32_t refs;     /* the request until delivered, each info request out, the timer armed */
    size_t pending;    /* slots without an outcome */
    uint64_t deadline; /* slots are asked again until then */
    jr__jtimer timer;  /* asks the SLOT_AGAIN slots again */
    uint8_t armed;
    names_dec names;
    slot *slots;
    char stream[JR_STREAM_NAME_MAX + 1];
};

static void job_put(job *j)
{
    if (--j->refs) return;
    for (size_t i = 0; i < j->names.n; i++) jr__buf_free(&j->slots[i].enc);
    jr__free(j->alloc, j->slots);
    jr__free(j->alloc, (void *)j->names.names);
    jr__free(j->alloc, j);
}

static int is_names(const jr__req *r)
{
    return r->what == JR__REQ_STREAM_NAMES || r->what == JR__REQ_STREAM_LIST ||
           r->what == JR__REQ_CONSUMER_NAMES || r->what == JR__REQ_CONSUMER_LIST;
}

static void on_rpc(jr_node *n, void *arg, int status, int answered, const uint8_t *p, size_t len)
{
    jr__req *r = arg;
    (void)n;
    r->rpc_id = 0;
    r->unanswered = !answered;
    jr__req_response(r, status, p, len);
}

/* Tries again after a heartbeat (or at the deadline, which ends r). */
static void retry_later(jr__req *r)
{
    jr__js *js = r->js;
    uint64_t at = jr__deadline(jr__node_now(js->n), js->heartbeat_ns);
    jr__js_timer_arm(js, &r->timer, at < r->deadline ? at : r->deadline);
}

/* Remaining time of r, at most cap. */
static uint64_t left(const jr__req *r, uint64_t cap)
{
    uint64_t now = jr__node_now(r->js->n);
    uint64_t l = r->deadline > now ? r->deadline - now : 0;
    return l < cap ? l : cap;
}

static void names_route(jr__req *r)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    if (r->done || r->rpc_id) return;
    int self;
    const char *leader = jr__mnode_leader(js, &self);
    if (self) {
        jr__route rt = jr__route_local(r);
        jr__js_timer_arm(js, &r->timer, r->deadline);
        jr__lists_serve(js, &rt, r->payload.data, r->payload.len);
        return;
    }
    jr__peer *p = leader ? jr__peer_find_name(n, leader) : NULL;
    jr_iovec iov = {r->payload.data, r->payload.len};
    if (!leader && jr__js_leaderless(js, js->meta)) {
        jr__req_finish(r, JR_ENOLEADER, "no meta leader");
        return;
    }
    if (!p || jr__rpc_call(n, jr__peer_get_id(p), JR__RPC_LISTS, &iov, 1,
                           left(r, 2 * js->election_ns), on_rpc, r, &r->rpc_id) != 0) {
        retry_later(r);
        return;
    }
    r->target = jr__peer_get_id(p);
    jr__js_timer_cancel(js, &r->timer); /* the call's own timeout bounds the wait */
}

static void fan_out(jr__req *r, names_dec *d);

static void names_response(jr__req *r, int status, const uint8_t *p, size_t len)
{
    jr__js *js = r->js;
    if (status == JR_ENOTLEADER || status == JR_ENOTSUP ||
        (r->unanswered && (status == JR_ETIMEDOUT || status == JR_ECLOSED))) {
        /* not the meta leader (any more), an older server, or no answer: ask again */
        if (jr__node_now(js->n) < r->deadline)
            retry_later(r);
        else
            jr__req_finish(r, JR_ENOLEADER, "no meta leader answered in time");
        return;
    }
    if (status != 0) {
        size_t k = len < sizeof r->msg - 1 ? len : sizeof r->msg - 1;
        if (k && p) memcpy(r->msg, p, k);
        r->msg[k] = 0;
        if (memchr(r->msg, 0, k)) r->msg[0] = 0;
        jr__req_finish(r, status, NULL);
        return;
    }
    if (r->what == JR__REQ_STREAM_NAMES || r->what == JR__REQ_CONSUMER_NAMES) {
        jr__buf_reset(&r->result);
        jr__buf_put(&r->result, p, len);
        jr__req_finish(r, r->result.err ? JR_ENOMEM : 0, NULL);
        return;
    }
    names_dec d;
    int rc = names_decode(p, len, js->alloc, &d);
    if (rc != 0) {
        jr__req_finish(r, rc, rc == JR_ENOMEM ? "out of memory" : "names do not decode");
        return;
    }
    fan_out(r, &d);
}

/* Origin side: lists -------------------------------------------------------------------------*/

/* One stream's or consumer's info arrived (or failed): kept encoded in its slot; the last
 * one completes the list. */
static int ask(slot *s);

static void slot_done(slot *s, int status)
{
    job *j = s->j;
    jr__js *js = j->js;
    int live = j->req && !j->req->done && j->req->serial == j->serial;
    if (live && (status == JR_ENOTFOUND || status == JR_ENOSTREAM) &&
        js->st.applied < j->names.applied) {
        /* not known here yet (this server's meta state is behind the names): not deleted */
        if (jr__node_now(js->n) < j->deadline) {
            s->status = SLOT_AGAIN;
            if (!j->armed) {
                j->armed = 1;
                j->refs++;
                jr__js_timer_arm(js, &j->timer,
                                 jr__deadline(jr__node_now(js->n), js->heartbeat_ns));
            }
            job_put(j);
            return;
        }
        status = JR_ETIMEDOUT; /* missing */
    }
    s->status = status;
    if (--j->pending == 0 && live) jr__req_finish(j->req, 0, NULL);
    job_put(j);
}

static void job_timer(jr__js *js, jr__jtimer *t)
{
    job *j = JR__CONTAINER_OF(t, job, timer);
    (void)js;
    j->armed = 0;
    int live = j->req && !j->req->done && j->req->serial == j->serial;
    for (size_t i = 0; i < j->names.n && live; i++)
        if (j->slots[i].status == SLOT_AGAIN && ask(&j->slots[i]) != 0) j->pending--;
    if (j->pending == 0 && live) jr__req_finish(j->req, 0, NULL);
    job_put(j);
}

static void on_stream_info(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    slot *s = arg;
    (void)msg;
    if (status == 0) status = jr__info_encode(&s->enc, info);
    slot_done(s, status);
}

static void on_consumer_info(void *arg, int status, const char *msg, const jr_consumer_info *info)
{
    slot *s = arg;
    (void)msg;
    if (status == 0) status = jr__cinfo_encode(&s->enc, info);
    slot_done(s, status);
}

/* Sends slot s's info request (a reference of the job for it). 0, or the error with s's
 * status set to it (no outcome to wait for). */
static int ask(slot *s)
{
    job *j = s->j;
    size_t i = (size_t)(s - j->slots);
    s->status = SLOT_WAITING;
    j->refs++;
    int rc = j->consumers
                 ? jr_consumer_info_get(j->js->n, j->stream, j->names.names[i], on_consumer_info, s)
                 : jr_stream_info_get(j->js->n, j->names.names[i], on_stream_info, s);
    if (rc != 0) {
        s->status = rc;
        j->refs--;
    }
    return rc;
}

/* Asks every name of the page d (taken) for its info. */
static void fan_out(jr__req *r, names_dec *d)
{
    jr__js *js = r->js;
    job *j = jr__calloc(js->alloc, 1, sizeof *j);
    slot *slots = d->n ? jr__calloc(js->alloc, d->n, sizeof *slots) : NULL;
    if (!j || (d->n && !slots)) {
        jr__free(js->alloc, j);
        jr__free(js->alloc, slots);
        jr__free(js->alloc, (void *)d->names);
        jr__req_finish(r, JR_ENOMEM, "out of memory");
        return;
    }
    j->js = js;
    j->alloc = js->alloc;
    j->req = r;
    j->serial = r->serial;
    j->consumers = r->what == JR__REQ_CONSUMER_LIST;
    j->refs = 1;
    j->names = *d;
    j->slots = slots;
    snprintf(j->stream, sizeof j->stream, "%s", r->stream);
    j->deadline = jr__deadline(jr__node_now(js->n), js->timeout_ns);
    jr__js_timer_init(&j->timer, job_timer);
    r->job = j;
    jr__js_timer_cancel(js, &r->timer); /* the info requests bound the wait */
    for (size_t i = 0; i < j->names.n; i++) {
        slots[i].j = j;
        jr__buf_init(&slots[i].enc, js->alloc);
    }
    j->pending = j->names.n;
    for (size_t i = 0; i < j->names.n; i++)
        if (ask(&slots[i]) != 0) j->pending--;
    if (j->pending == 0) jr__req_finish(r, 0, NULL);
}

/* Calls the list's callback with the page its slots hold. */
static void deliver_list(jr__req *r, job *j)
{
    const jr_allocator *a = r->js->alloc;
    size_t n = j->names.n, got = 0, miss = 0;
    int consumers = j->consumers;
    jr__info_dec *sd = NULL;
    jr__cinfo_dec *cd = NULL;
    const void **ptrs = NULL;
    const char **missing = NULL;
    if (n) {
        if (consumers)
            cd = jr__calloc(a, n, sizeof *cd);
        else
            sd = jr__calloc(a, n, sizeof *sd);
        ptrs = jr__calloc(a, n, sizeof *ptrs);
        missing = jr__calloc(a, n, sizeof *missing);
    }
    int rc = 0;
    if (n && ((!cd && !sd) || !ptrs || !missing)) rc = JR_ENOMEM;
    for (size_t i = 0; i < n && rc == 0; i++) {
        slot *s = &j->slots[i];
        if (s->status == JR_ENOTFOUND || s->status == JR_ENOSTREAM) continue; /* deleted */
        if (s->status != 0) {
            missing[miss++] = j->names.names[i];
            continue;
        }
        int drc = consumers ? jr__cinfo_decode(s->enc.data, s->enc.len, a, &cd[got])
                            : jr__info_decode(s->enc.data, s->enc.len, a, &sd[got]);
        if (drc != 0) {
            if (consumers)
                jr__cinfo_dec_free(&cd[got]);
            else
                jr__info_dec_free(&sd[got]);
            missing[miss++] = j->names.names[i];
            continue;
        }
        ptrs[got] = consumers ? (const void *)&cd[got].info : (const void *)&sd[got].info;
        got++;
    }
    if (rc != 0) {
        if (consumers)
            r->cb.cpage(r->arg, rc, "out of memory", NULL);
        else
            r->cb.spage(r->arg, rc, "out of memory", NULL);
    } else if (consumers) {
        jr_consumer_page pg = {sizeof pg,
                               j->names.total,
                               j->names.offset,
                               JR_LIST_LIMIT,
                               (const jr_consumer_info *const *)ptrs,
                               got,
                               missing,
                               miss};
        r->cb.cpage(r->arg, 0, "", &pg);
    } else {
        jr_stream_page pg = {sizeof pg,
                             j->names.total,
                             j->names.offset,
                             JR_LIST_LIMIT,
                             (const jr_stream_info *const *)ptrs,
                             got,
                             missing,
                             miss};
        r->cb.spage(r->arg, 0, "", &pg);
    }
    for (size_t i = 0; i < got; i++) {
        if (consumers)
            jr__cinfo_dec_free(&cd[i]);
        else
            jr__info_dec_free(&sd[i]);
    }
    jr__free(a, cd);
    jr__free(a, sd);
    jr__free(a, ptrs);
    jr__free(a, missing);
}

/* Origin side: direct get ----------------------------------------------------------------------*/

static void direct_route(jr__req *r)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    if (r->done || r->rpc_id) return;
    if (jr__node_now(n) >= r->deadline) {
        jr__req_finish(r, JR_ETIMEDOUT, "no current replica of stream '%s' answered in time",
                       r->stream);
        return;
    }
    const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, r->group);
    if (!s) {
        jr__req_finish(r, JR_ENOTFOUND, "stream '%s' was deleted", r->stream);
        return;
    }
    /* a round: this server's replica (if any), then every other peer once */
    size_t others = 0;
    for (size_t i = 0; i < s->npeers; i++)
        if (strcmp(s->peers[i], js->name) != 0) others++;
    unsigned t = r->tries++;
    if (t == 0) {
        if (jr__srep_find(js, r->group)) {
            jr__route rt = jr__route_local(r);
            jr__stream_exec(js, JR__RPC_STREAM_ADMIN, &rt, r->payload.data, r->payload.len);
            return;
        }
        t = r->tries++;
    }
    if (t - 1 >= others) { /* everyone was asked: again after a heartbeat */
        r->tries = 0;
        retry_later(r);
        return;
    }
    /* the round starts at a peer that depends on the request, spreading the reads */
    size_t k = (size_t)((r->serial + (t - 1)) % others);
    jr__peer *p = NULL;
    for (size_t i = 0, m = 0; i < s->npeers; i++) {
        if (strcmp(s->peers[i], js->name) == 0) continue;
        if (m++ == k) p = jr__peer_find_name(n, s->peers[i]);
    }
    jr_iovec iov = {r->payload.data, r->payload.len};
    if (!p || jr__rpc_call(n, jr__peer_get_id(p), JR__RPC_STREAM_ADMIN, &iov, 1,
                           left(r, 2 * js->election_ns), on_rpc, r, &r->rpc_id) != 0) {
        direct_route(r); /* the next one */
        return;
    }
    r->target = jr__peer_get_id(p);
    jr__js_timer_cancel(js, &r->timer);
}

static void direct_response(jr__req *r, int status, const uint8_t *p, size_t len)
{
    if (status == 0) {
        jr__buf_reset(&r->result);
        jr__buf_put(&r->result, p, len);
        jr__req_finish(r, r->result.err ? JR_ENOMEM : 0, NULL);
        return;
    }
    if (status == JR_ENOTFOUND || status == JR_EDENIED || status == JR_EINVAL ||
        status == JR_ENOMEM) {
        size_t k = len < sizeof r->msg - 1 ? len : sizeof r->msg - 1;
        if (k && p) memcpy(r->msg, p, k);
        r->msg[k] = 0;
        if (memchr(r->msg, 0, k)) r->msg[0] = 0;
        jr__req_finish(r, status, NULL);
        return;
    }
    direct_route(r); /* not current there, silent, closing, or an older server: the next */
}

/* Responder side: direct get --------------------------------------------------------------------*/

/* 1 if replica r may answer a direct get (see the header). */
static int replica_current(jr__js *js, jr__srep *r)
{
    if (!r->g || jr__group_closed(r->g) || r->cu || r->failed) return 0;
    jr__stream_fsm_info fi;
    jr__stream_fsm_info_get(r->fsm, &fi);
    if (fi.restoring || fi.failed) return 0;
    if (jr__srep_is_leader(r)) return 1;
    jr_group_status gs;
    memset(&gs, 0, sizeof gs);
    gs.size = sizeof gs;
    if (jr_group_status_get(r->g, &gs) != 0 || gs.damaged || gs.unvouched ||
        gs.applied_index < gs.commit_index)
        return 0;
    const char *l = jr_group_leader(r->g);
    jr__peer *p = l ? jr__peer_find_name(js->n, l) : NULL;
    if (!p || jr__peer_get_id(p) == js->self) return 0;
    uint64_t now = jr__node_now(js->n), heard = jr__peer_heard(p);
    return heard && now - (heard < now ? heard : now) <= 2 * js->election_ns;
}

void jr__direct_exec(jr__js *js, const jr__route *rt, uint64_t group, const uint8_t *p, size_t len)
{
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    uint64_t seq = jr__rd_varint(&rd);
    size_t sl;
    const uint8_t *subj = jr__rd_bytes(&rd, &sl, JR__SUBJECT_MAX);
    if (rd.err || jr__rd_left(&rd) || (!seq && !sl)) {
        jr__route_reply(js, rt, JR_EINVAL, NULL, 0);
        return;
    }
    const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, group);
    const char *why = NULL;
    int rc = JR_EBUSY;
    jr__srep *r = jr__srep_find(js, group);
    if (!s)
        why = "stream not known here";
    else if (!s->cfg->c.allow_direct)
        rc = JR_EDENIED, why = "stream does not allow direct get";
    else if (!r || !replica_current(js, r))
        why = "no current replica here";
    if (why) {
        jr__route_reply(js, rt, rc, why, strlen(why));
        return;
    }
    jr__store *st = jr__stream_fsm_store(r->fsm);
    jr__store_msg m;
    if (!sl)
        rc = jr__store_get(st, seq, &m);
    else if (!seq)
        rc = jr__store_get_last(st, (const char *)subj, sl, &m);
    else
        rc = jr__store_next(st, seq, (const char *)subj, sl, &m);
    if (rc != 0) {
        const char *t = rc == JR_ENOTFOUND ? "no message found" : "store read failed";
        if (rc == JR_ECORRUPT) jr__srep_store_failed(r, rc, "a store read");
        jr__route_reply(js, rt, rc == JR_ENOTFOUND ? rc : JR_EBUSY, t, strlen(t));
        return;
    }
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    jr__msg_encode(b, &m);
    jr__route_reply(js, rt, b->err, b->err ? NULL : b->data, b->err ? 0 : b->len);
}

/* Hooks of api_stream.c ------------------------------------------------------------------------*/

int jr__lists_owns(const jr__req *r)
{
    return is_names(r) || r->what == JR__REQ_DIRECT_GET;
}

void jr__lists_response(jr__req *r, int status, const uint8_t *p, size_t len)
{
    if (r->done) return;
    if (r->what == JR__REQ_DIRECT_GET)
        direct_response(r, status, p, len);
    else
        names_response(r, status, p, len);
}

void jr__lists_timer(jr__req *r)
{
    if (r->done) return;
    if (r->what == JR__REQ_DIRECT_GET) {
        direct_route(r);
        return;
    }
    if (jr__node_now(r->js->n) >= r->deadline)
        jr__req_finish(r, JR_ENOLEADER, "no meta leader answered in time");
    else
        names_route(r);
}

void jr__lists_deliver(jr__req *r)
{
    const jr_allocator *a = r->js->alloc;
    const char *msg = r->msg[0] ? r->msg : (r->status ? jr_strerror(r->status) : "");
    int st = r->status;
    job *j = r->job;
    r->job = NULL;
    if (j) {
        j->req = NULL;
        if (j->armed) { /* delivered early (the node closes): nothing is asked again */
            j->armed = 0;
            jr__js_timer_cancel(r->js, &j->timer);
            j->refs--; /* the timer's; the request's is dropped below */
        }
    }
    switch (r->what) {
    case JR__REQ_STREAM_NAMES:
    case JR__REQ_CONSUMER_NAMES: {
        names_dec d;
        if (st == 0 && (st = names_decode(r->result.data, r->result.len, a, &d)) != 0)
            msg = "names do not decode";
        if (st != 0) {
            r->cb.names(r->arg, st, msg, NULL);
            break;
        }
        jr_names pg = {sizeof pg, d.total, d.offset, JR_NAMES_LIMIT, d.n ? d.names : NULL, d.n};
        r->cb.names(r->arg, 0, "", &pg);
        jr__free(a, (void *)d.names);
        break;
    }
    case JR__REQ_STREAM_LIST:
    case JR__REQ_CONSUMER_LIST:
        if (st != 0 || !j) {
            if (r->what == JR__REQ_STREAM_LIST)
                r->cb.spage(r->arg, st ? st : JR_ENOMEM, msg, NULL);
            else
                r->cb.cpage(r->arg, st ? st : JR_ENOMEM, msg, NULL);
        } else {
            deliver_list(r, j);
        }
        break;
    case JR__REQ_DIRECT_GET:
        jr__req_deliver_msg(r, st, msg);
        break;
    default:
        break;
    }
    if (j) job_put(j);
}

/* Public API --------------------------------------------------------------------------------*/

/* Starts a names request (what) for arg (a filter or a stream; NULL: "") from offset. */
static int names_request(jr_node *n, uint8_t what, const char *arg, uint64_t offset, jr__req_cb cb,
                         void *cb_arg)
{
    jr__js *js = jr__js_of(n);
    int rc = 0;
    jr__node_enter(n);
    jr__req *r = jr__req_new(js, what);
    if (!r) {
        rc = jr__node_err(n, JR_ENOMEM, "out of memory");
        goto out;
    }
    jr__req_start(r, js->timeout_ns);
    r->cb = cb;
    r->arg = cb_arg;
    r->kind = JR__RPC_LISTS;
    int consumers = what == JR__REQ_CONSUMER_NAMES || what == JR__REQ_CONSUMER_LIST;
    int list = what == JR__REQ_STREAM_LIST || what == JR__REQ_CONSUMER_LIST;
    const char *a = arg ? arg : "";
    if (consumers) {
        if (!*a || strlen(a) > JR_STREAM_NAME_MAX) {
            jr__req_finish(r, JR_EINVAL, "stream: must be 1..%d bytes", JR_STREAM_NAME_MAX);
            goto out;
        }
        snprintf(r->stream, sizeof r->stream, "%s", a);
    } else if (*a && !jr__subject_valid_pattern(a)) {
        jr__req_finish(r, JR_EINVAL, "subject: '%s' is not a valid subject filter", a);
        goto out;
    }
    jr__buf_u8(&r->payload, consumers ? LS_CONSUMERS : LS_STREAMS);
    jr__buf_bytes(&r->payload, a, strlen(a));
    jr__buf_varint(&r->payload, offset);
    jr__buf_varint(&r->payload, list ? JR_LIST_LIMIT : JR_NAMES_LIMIT);
    if (r->payload.err) {
        jr__req_finish(r, JR_ENOMEM, "out of memory");
        goto out;
    }
    names_route(r);
out:
    jr__node_leave(n);
    return rc;
}

int jr_stream_names(jr_node *n, const char *subject, uint64_t offset, jr_names_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb != NULL);
    if (rc) return rc;
    jr__req_cb c = {.names = cb};
    return names_request(n, JR__REQ_STREAM_NAMES, subject, offset, c, arg);
}

int jr_stream_list(jr_node *n, const char *subject, uint64_t offset, jr_stream_page_cb cb,
                   void *arg)
{
    int rc = jr__js_entry(n, cb != NULL);
    if (rc) return rc;
    jr__req_cb c = {.spage = cb};
    return names_request(n, JR__REQ_STREAM_LIST, subject, offset, c, arg);
}

int jr_consumer_names(jr_node *n, const char *stream, uint64_t offset, jr_names_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb && stream);
    if (rc) return rc;
    jr__req_cb c = {.names = cb};
    return names_request(n, JR__REQ_CONSUMER_NAMES, stream, offset, c, arg);
}

int jr_consumer_list(jr_node *n, const char *stream, uint64_t offset, jr_consumer_page_cb cb,
                     void *arg)
{
    int rc = jr__js_entry(n, cb && stream);
    if (rc) return rc;
    jr__req_cb c = {.cpage = cb};
    return names_request(n, JR__REQ_CONSUMER_LIST, stream, offset, c, arg);
}

int jr_stream_direct_get(jr_node *n, const char *name, uint64_t seq, const char *subject,
                         jr_msg_cb cb, void *arg)
{
    int rc = jr__js_entry(n, cb && name);
    if (rc) return rc;
    jr__js *js = jr__js_of(n);
    jr__node_enter(n);
    jr__req *r = jr__req_new(js, JR__REQ_DIRECT_GET);
    if (!r) {
        rc = jr__node_err(n, JR_ENOMEM, "out of memory");
        goto out;
    }
    jr__req_start(r, js->timeout_ns);
    r->cb.msg = cb;
    r->arg = arg;
    r->kind = JR__RPC_STREAM_ADMIN;
    r->resend = 1;
    snprintf(r->stream, sizeof r->stream, "%s", name);
    const jr__meta_stream *s = jr__meta_stream_find(&js->st, name);
    if (!s) {
        jr__req_finish(r, JR_ENOTFOUND, "stream '%s' not found", name);
        goto out;
    }
    if (!seq && !subject) {
        jr__req_finish(r, JR_EINVAL, "seq: must be at least 1 without a subject");
        goto out;
    }
    if (subject && !jr__subject_valid_pattern(subject)) {
        jr__req_finish(r, JR_EINVAL, "subject: '%s' is not a valid subject", subject);
        goto out;
    }
    if (!s->cfg->c.allow_direct) {
        jr__req_finish(r, JR_EDENIED, "stream '%s' does not allow direct get (allow_direct)", name);
        goto out;
    }
    r->group = s->group;
    jr__buf_u8(&r->payload, JR__ADM_DIRECT_GET);
    jr__buf_varint(&r->payload, r->group);
    jr__buf_varint(&r->payload, seq);
    jr__buf_bytes(&r->payload, subject ? subject : "", subject ? strlen(subject) : 0);
    if (r->payload.err) {
        jr__req_finish(r, JR_ENOMEM, "out of memory");
        goto out;
    }
    direct_route(r);
out:
    jr__node_leave(n);
    return rc;
}
