/*
 * consumer_leader — what a consumer's leader does: it queues pull requests, chooses what to
 * deliver (expired deliveries first, then new messages of its stream's local replica that match
 * the filters), records each delivery in the consumer's log, and hands a message to its request
 * only once that record is applied — committed on a quorum — so a successor never misses a
 * delivery it must redeliver, and delivery counts stay exact across failovers. Acks and the
 * other acknowledgements become records of the same batches (one entry per flush); a
 * confirmed one is answered once applied.
 *
 * Readiness. A new leader delivers nothing until it has applied every entry of its log (an
 * entry of its own term included): then its state holds every delivery any earlier leader
 * recorded, and its cursor (next stream seq, next consumer seq) starts after them. A consumer
 * that never delivered fixes its start position with a SKIP record first (deliver new, last,
 * by start sequence or time), so every later leader starts from the same place; it waits for a
 * readable local replica of its stream to do so (its peer change needs only its log applied).
 *
 * Pull requests end as JetStream's do (jr_fetch_end): batch filled (0), 404 No Messages
 * (no_wait), 408 Request Timeout, 409 for limits, leadership change or deletion. A request is
 * answered as soon as it holds messages and no more are to be had at once, as JetStream sends
 * each message when it has it: a push subscription's answer ends its request, a pull's says
 * JR__FETCH_MORE and its requester asks again for what the request still wants, so a client
 * waiting for a batch of 100 sees the 5 messages there are without waiting for the expiry. An
 * answer is sent only once no delivery of the request is in flight, so a 408 never overtakes a
 * delivery.
 *
 * Read barrier. The leader reads messages from its own server's replica of the stream, which
 * may trail the stream's leader: a follower learns of a commit a heartbeat later, and a replica
 * cut off from its group, or on a server the stream no longer names, trails it for as long as
 * that lasts. A message delete or purge acknowledged before a fetch was issued must not be
 * undone by that fetch, so no pull is served before a read barrier sent after it arrived has
 * passed: the stream's leader commits a TICK of its term (a read at the leader,
 * jr__srep_stage_read) and answers that entry's index, and the pull is served once the local
 * replica has applied it. Every stream write acknowledged before the barrier was asked for was
 * committed before the TICK was proposed, so it lies below it in the log (the stream leader
 * that commits the TICK holds every committed entry, §3.6.3), and the local store already
 * reflects it when the leader chooses and when it hands out. One barrier is in flight at a
 * time and serves every pull that arrived before it was sent; a replica that never catches up
 * leaves its pulls waiting until their expiry (408) rather than serving a stale store.
 *
 * The barrier's round trip overlaps the delivery's: while a pull's barrier is in flight and the
 * local replica is not known to trail (barrier_ahead), first deliveries are chosen for it and
 * recorded; one applied before the barrier passed is held on the pull (hold) and handed out
 * once it has (release_held), the message read from the store again then. The guarantee holds
 * because what reaches the client is read after the barrier, exactly as without the overlap;
 * what the overlap adds is only records: a message chosen from the stale store and removed
 * before the barrier is recorded delivered and terminated rather than never recorded.
 * Redeliveries wait for the barrier, so a leader whose barriers do not pass cannot run a
 * message's delivery count up.
 *
 * Invariants (while leading): lead->inflight counts new deliveries proposed and not applied;
 * every pull's inflight counts its deliveries proposed and not yet handed out (held ones
 * included), and a pull with inflight > 0 is never freed; every proposal on
 * prop_head..prop_tail holds one wait per record, in record order.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "js/js.h"
#include "js/codec.h"
#include "meta/cluster_info.h"
#include "util/alloc.h"
#include "util/deadline.h"
#include "util/subject.h"

enum { CODE_DONE = 0 };

static jr__store *stream_store(jr__crep *r)
{
    jr__srep *s = jr__srep_find(r->js, r->stream_group);
    if (!s || s->failed || s->cu || !s->fsm) return NULL;
    return jr__stream_fsm_store(s->fsm);
}

/* The stream index this server's replica of r's stream has applied (0: none, or one whose
 * store is not to be read: failed, catching up). */
static uint64_t stream_applied(jr__crep *r)
{
    jr__srep *s = jr__srep_find(r->js, r->stream_group);
    if (!s || s->failed || s->cu || !s->fsm) return 0;
    return jr__stream_fsm_applied(s->fsm);
}

/* Dirty list ---------------------------------------------------------------------------------*/

void jr__clead_dirty(jr__crep *r)
{
    if (r->dirty || !r->lead) return;
    r->dirty = 1;
    r->dirty_next = r->js->cdirty;
    r->js->cdirty = r;
    jr__node_want_tick(r->js->n);
}

static void undirty(jr__crep *r)
{
    if (!r->dirty) return;
    for (jr__crep **pp = &r->js->cdirty; *pp; pp = &(*pp)->dirty_next) {
        if (*pp == r) {
            *pp = r->dirty_next;
            break;
        }
    }
    r->dirty = 0;
}

/* Pull requests ------------------------------------------------------------------------------*/

static void pull_unlist(jr__clead *l, jr__pull *p)
{
    if (!p->listed) return;
    if (p->prev)
        p->prev->next = p->next;
    else
        l->phead = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        l->ptail = p->prev;
    p->listed = 0;
    l->nwaiting--;
}

/* Answers p (its end decided, nothing in flight) and frees it. */
static void pull_answer(jr__crep *r, jr__pull *p)
{
    jr__js *js = r->js;
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    jr__buf_varint(b, (uint64_t)p->end_code);
    const char *t = p->end_text ? p->end_text : "";
    jr__buf_bytes(b, t, strlen(t));
    jr__buf_varint(b, p->batch > 0 ? (uint64_t)p->batch : 0);
    jr__buf_varint(b, p->max_bytes > 0 ? (uint64_t)p->max_bytes : 0);
    jr__buf_varint(b, p->got);
    jr__buf_put(b, p->buf.data, p->buf.len);
    if (b->err)
        jr__route_reply(js, &p->route, JR_ENOMEM, NULL, 0);
    else
        jr__route_reply(js, &p->route, 0, b->data, b->len);
    if (r->lead) pull_unlist(r->lead, p);
    jr__buf_free(&p->buf);
    jr__free(js->alloc, p->held);
    jr__free(js->alloc, p);
}

/* Decides p's end; it is answered now unless deliveries for it are in flight. */
static void pull_end(jr__crep *r, jr__pull *p, int code, const char *text)
{
    if (!p->ended) {
        p->ended = 1;
        p->end_code = code;
        p->end_text = text;
    }
    if (p->inflight == 0) pull_answer(r, p);
}

/* Staging ------------------------------------------------------------------------------------*/

static int stage(jr__crep *r, const jr__crec *rec, const jr__cwait *w)
{
    jr__clead *l = r->lead;
    if (l->nstage == l->capstage) {
        if (l->nstage >= JR__COP_BATCH_MAX) return JR_EMSGSIZE;
        size_t cap = l->capstage ? l->capstage * 2 : 4;
        jr__crec *nr = jr__realloc(r->js->alloc, l->srec, cap * sizeof *nr);
        if (!nr) return JR_ENOMEM;
        l->srec = nr;
        jr__cwait *nw = jr__realloc(r->js->alloc, l->swait, cap * sizeof *nw);
        if (!nw) return JR_ENOMEM;
        l->swait = nw;
        l->capstage = cap;
    }
    l->srec[l->nstage] = *rec;
    if (w)
        l->swait[l->nstage] = *w;
    else
        memset(&l->swait[l->nstage], 0, sizeof *w);
    l->nstage++;
    jr__clead_dirty(r);
    return 0;
}

/* The in-flight marks of wait w end (applied, or lost). */
static void wait_settled(jr__clead *l, const jr__cwait *w)
{
    if (w->fresh && l->inflight) l->inflight--;
    if (w->rsseq) jr__map_del(&l->redeliv, w->rsseq);
}

/* A wait that will not be applied: its request learns so. */
static void wait_lost(jr__crep *r, const jr__cwait *w, int status)
{
    jr__clead *l = r->lead;
    if (w->pull) {
        w->pull->inflight--;
        w->pull->batch++; /* not delivered: still wanted */
        if (w->pull->ended && w->pull->inflight == 0) pull_answer(r, w->pull);
    }
    if (l) wait_settled(l, w);
    if (w->confirm) {
        static const char why[] = "the consumer's leader lost its leadership before the "
                                  "acknowledgement committed: it may or may not have taken effect";
        jr__route_reply(r->js, &w->route, status, why, sizeof why - 1);
    }
}

/* Leading ------------------------------------------------------------------------------------*/

static void prop_free_all(jr__crep *r, int status)
{
    jr__clead *l = r->lead;
    while (l->prop_head) {
        jr__cprop *p = l->prop_head;
        l->prop_head = p->next;
        for (uint32_t i = 0; i < p->n; i++) wait_lost(r, &p->w[i], status);
        jr__free(r->js->alloc, p);
    }
    l->prop_tail = NULL;
}

void jr__clead_stop(jr__crep *r, int status)
{
    jr__clead *l = r->lead;
    if (!l) return;
    jr__js *js = r->js;
    if (js->cdirty) undirty(r);
    jr__js_timer_cancel(js, &r->timer);
    if (l->bar_rpc) jr__rpc_cancel(js->n, l->bar_rpc);
    /* A pull whose end was decided (408) while deliveries for it were in flight is answered
     * once they are lost below; they may still commit under the next leader without reaching
     * it, so its answer says so as the others' do, rather than that it merely expired. */
    for (jr__pull *p = l->phead; p; p = p->next) {
        if (!p->ended || !p->inflight) continue;
        p->end_code = 409;
        p->end_text = status == JR_ENOTFOUND ? "Consumer Deleted" : "Leadership Change";
    }
    for (size_t i = 0; i < l->nstage; i++) wait_lost(r, &l->swait[i], status);
    l->nstage = 0;
    prop_free_all(r, status);
    while (l->phead) {
        jr__pull *p = l->phead;
        p->inflight = 0; /* held deliveries too: recorded, redelivered after their ack wait */
        p->nheld = 0;
        if (status == JR_ECLOSED) {
            jr__route_reply(js, &p->route, JR_ECLOSED, NULL, 0);
            pull_unlist(l, p);
            jr__buf_free(&p->buf);
            jr__free(js->alloc, p->held);
            jr__free(js->alloc, p);
            continue;
        }
        p->ended = 0;
        pull_end(r, p, 409, status == JR_ENOTFOUND ? "Consumer Deleted" : "Leadership Change");
    }
    jr__free(js->alloc, l->srec);
    jr__free(js->alloc, l->swait);
    jr__map_free(&l->redeliv);
    jr__free(js->alloc, l);
    r->lead = NULL;
}

void jr__clead_role_changed(jr__crep *r)
{
    jr__js *js = r->js;
    if (js->closing) return;
    int leads = jr__crep_is_leader(r);
    uint64_t term = r->g ? jr__raft_term(jr__group_consensus(r->g)) : 0;
    if (r->lead && (!leads || r->lead->term != term)) jr__clead_stop(r, JR_ELEADERLOST);
    if (leads && !r->lead) {
        r->lead = jr__calloc(js->alloc, 1, sizeof *r->lead);
        if (!r->lead) {
            jr__node_log(js->n, JR_LOG_ERROR, "consumer '%s > %s': out of memory to lead it",
                         r->stream, r->name);
            return;
        }
        r->lead->term = term;
        r->lead->active_at = jr__node_now(js->n);
        r->lead->duty_at = 0; /* its peers are checked once it is ready */
        jr__map_init(&r->lead->redeliv, js->alloc);
    }
    if (r->lead) jr__clead_dirty(r);
}

/* 1 once the leader applied its whole log, an entry of its term included. */
/* 1 once r's leader applied its whole log, an entry of its own term included. */
static int log_applied(jr__crep *r)
{
    const jr__raft *c = jr__group_consensus(r->g);
    uint64_t last = jr__raft_last_index(c);
    jr__entry e;
    return jr__group_applied(r->g) >= last && jr__raft_entry(c, last, &e) == 0 &&
           e.term == r->lead->term;
}

static int check_ready(jr__crep *r)
{
    jr__clead *l = r->lead;
    if (l->ready) return 1;
    if (!log_applied(r)) return 0;
    const jr__cseqs *d = jr__cstate_delivered(&r->st);
    jr__store *s = stream_store(r);
    /* The first leader fixes the start position from its stream's store; without a readable
     * local replica (catching up, or none on this server: a consumer whose stream moved on
     * while its change was stalled) it cannot know where the stream ends, and waits. */
    if (!d->consumer_seq && !d->stream_seq && !s) return 0;
    l->next_dseq = d->consumer_seq + 1;
    l->cursor = d->stream_seq + 1;
    l->ready = 1;
    if (d->consumer_seq || d->stream_seq) return 1;
    /* the first leader: fix the start position (every later leader starts after it) */
    const jr_consumer_config *cfg = &r->as->cfg->c;
    jr__store_state ss;
    memset(&ss, 0, sizeof ss);
    if (s) jr__store_state_get(s, &ss);
    uint64_t start = 1;
    switch (cfg->deliver_policy) {
    case JR_DELIVER_NEW:
        start = ss.last_seq + 1;
        break;
    case JR_DELIVER_LAST: { /* the newest message its filters match */
        const char *one = NULL;
        size_t nf = 0;
        const char *const *fs = jr__consumer_filters(cfg, &one, &nf);
        start = ss.last_seq ? ss.last_seq : 1;
        if (nf && s) {
            uint64_t best = 0;
            for (size_t i = 0; i < nf; i++) {
                jr__store_msg m;
                if (jr__store_get_last(s, fs[i], strlen(fs[i]), &m) == 0 && m.seq > best)
                    best = m.seq;
            }
            start = best ? best : ss.last_seq + 1;
        }
        break;
    }
    case JR_DELIVER_BY_START_SEQ:
        start = cfg->opt_start_seq ? cfg->opt_start_seq : 1;
        break;
    case JR_DELIVER_BY_START_TIME: {
        jr__store_msg m;
        start = ss.last_seq + 1;
        for (uint64_t q = ss.first_seq; s && jr__store_next(s, q, NULL, 0, &m) == 0;
             q = m.seq + 1) {
            if ((uint64_t)m.ts >= cfg->opt_start_time_ns) {
                start = m.seq;
                break;
            }
        }
        break;
    }
    default:
        break;
    }
    l->cursor = start;
    if (start > 1) {
        jr__crec rec = {JR__COP_SKIP, 0, start - 1, 0, 0, 0};
        if (stage(r, &rec, NULL) != 0) {
            l->ready = 0; /* try again at the next step */
            return 0;
        }
    }
    return 1;
}

/* The first expired delivery above stream seq `after` (stream order) whose redelivery is not
 * in flight. */
static int next_expired(jr__crep *r, uint64_t now, uint64_t after, uint64_t *sseq, uint32_t *dc)
{
    while (jr__cstate_next_expired_after(&r->st, now, after, sseq, dc) == 0) {
        if (!jr__map_get(&r->lead->redeliv, *sseq)) return 0;
        after = *sseq;
    }
    return JR_ENOTFOUND;
}

/* The stream replica's store failed a read for r (a block that no longer verifies): it is
 * rebuilt (stream_replica.c); meanwhile the message counts as not here, never as gone. */
static int store_failed(jr__crep *r, int rc)
{
    jr__srep *sr = jr__srep_find(r->js, r->stream_group);
    if (rc == JR_ECORRUPT && sr) jr__srep_store_failed(sr, rc, "a store read for a consumer");
    return rc;
}

/* Where the message an expired delivery names is, for its redelivery: 1 in s (*m set); 0 gone
 * from the stream (deleted, purged or over a limit: the local replica holds the stream at or
 * past sseq, and not it); -1 not here yet — the local replica is catching up (s NULL), or has
 * not applied it yet while another server's delivered it, or its store failed to read it
 * (store_failed). A message not here yet is neither redelivered nor terminated now: the
 * replica's next apply makes the leader step again. */
static int find_redelivery(jr__crep *r, jr__store *s, uint64_t sseq, jr__store_msg *m)
{
    if (!s) return -1;
    int rc = jr__store_get(s, sseq, m);
    if (rc == 0) return 1;
    if (rc == JR_ECORRUPT) {
        store_failed(r, rc);
        return -1;
    }
    jr__store_state ss;
    jr__store_state_get(s, &ss);
    return sseq <= ss.last_seq ? 0 : -1;
}

/* Filters: the next matching message at or after from. */
static int next_match(jr__crep *r, jr__store *s, uint64_t from, jr__store_msg *out)
{
    const jr_consumer_config *cfg = &r->as->cfg->c;
    const char *one = NULL;
    size_t nf = 0;
    const char *const *fs = jr__consumer_filters(cfg, &one, &nf);
    if (nf == 0) return jr__store_next(s, from, NULL, 0, out);
    /* one filter: its next match is the message (read once; with several filters each one's
     * candidate is read, then the first of them again, as a read reuses the store's buffer) */
    if (nf == 1) return jr__store_next(s, from, fs[0], strlen(fs[0]), out);
    uint64_t best = 0;
    for (size_t i = 0; i < nf; i++) {
        jr__store_msg m;
        if (jr__store_next(s, from, fs[i], strlen(fs[i]), &m) == 0 && (!best || m.seq < best))
            best = m.seq;
    }
    if (!best) return JR_ENOTFOUND;
    return jr__store_get(s, best, out);
}

/* The next message to deliver at or after from. Deliver last per subject: of the messages
 * stored before the consumer was created (the meta leader's stamp), only the last of each
 * subject; every later one. Decided from the store alone (timestamps and subjects are the same
 * on every replica), so a new leader picks up exactly where its predecessor was. */
static int next_new(jr__crep *r, jr__store *s, uint64_t from, jr__store_msg *out)
{
    const jr_consumer_config *cfg = &r->as->cfg->c;
    for (;;) {
        int rc = store_failed(r, next_match(r, s, from, out));
        if (rc || cfg->deliver_policy != JR_DELIVER_LAST_PER_SUBJECT || !r->created_ns ||
            (uint64_t)out->ts > r->created_ns)
            return rc;
        uint64_t seq = out->seq;
        char subj[JR__SUBJECT_MAX + 1];
        size_t n = out->subject_len < JR__SUBJECT_MAX ? out->subject_len : JR__SUBJECT_MAX;
        memcpy(subj, out->subject, n);
        jr__store_msg later;
        if (jr__store_next(s, seq + 1, subj, n, &later) != 0 || (uint64_t)later.ts > r->created_ns)
            return store_failed(r, jr__store_get(s, seq, out)); /* the last of its subject */
        from = seq + 1;
    }
}

/* The most message bytes one fetch answer carries (it travels in one frame): a batch that would
 * go past it ends early, its answer saying how many messages it still wanted. One message always
 * fits (a message is at most max_payload, which the frame holds). */
static uint64_t answer_cap(const jr__js *js)
{
    uint64_t cap = js->facts.max_frame / 2;
    return cap < (4u << 20) ? cap : (4u << 20);
}

static uint64_t msg_size(const jr__store_msg *m)
{
    return (uint64_t)m->subject_len + m->hdr_len + m->data_len;
}

/* Replay original: new messages go out at the pace they were stored. The first one this leader
 * hands out anchors its timeline (its stored time against now); a later one is due once as much
 * time passed since the anchor as lies between their stored times. 1 if m is due, else 0 with
 * *at the node time it will be. */
static int replay_due(jr__clead *l, const jr__store_msg *m, uint64_t now, uint64_t *at)
{
    uint64_t ts = (uint64_t)m->ts;
    if (!l->replay_now || ts < l->replay_ts) {
        l->replay_now = now;
        l->replay_ts = ts;
        return 1;
    }
    uint64_t due = jr__deadline(l->replay_now, ts - l->replay_ts);
    if (now >= due) return 1;
    *at = due;
    return 0;
}

/* rate_limit_bps (push): a bucket of bytes refilled at the rate, holding at most a second's
 * worth (and always one message). 1 and the bytes taken if a message of sz bytes may go now;
 * else 0 with *at (if earlier) the node time it may. */
static int rate_allows(jr__clead *l, uint64_t bps, uint64_t sz, uint64_t now, uint64_t *at)
{
    uint64_t per_s = bps / 8 ? bps / 8 : 1, cap = per_s > sz ? per_s : sz;
    if (!l->rate_at) {
        l->rate_at = now;
        l->rate_bytes = cap;
    }
    uint64_t dt = now - l->rate_at;
    uint64_t add = dt >= 1000000000ull ? cap : (uint64_t)((double)dt * (double)per_s / 1e9);
    if (add) {
        l->rate_bytes = l->rate_bytes + add > cap ? cap : l->rate_bytes + add;
        l->rate_at = now;
    }
    if (l->rate_bytes >= sz) {
        l->rate_bytes -= sz;
        return 1;
    }
    uint64_t wait = (uint64_t)((double)(sz - l->rate_bytes) * 1e9 / (double)per_s) + 1;
    uint64_t when = jr__deadline(now, wait);
    if (when < *at) *at = when;
    return 0;
}

/* A purge (or limits) removed the stream's messages below its first seq: pending deliveries of
 * them are terminated now rather than at their ack wait, so the consumer moves past what is
 * gone as JetStream's does. Costs nothing while the lowest pending message is still there. */
static void drop_purged(jr__crep *r, jr__store *s, uint64_t wall)
{
    jr__clead *l = r->lead;
    if (!jr__cstate_num_ack_pending(&r->st)) return;
    jr__store_state ss;
    jr__store_state_get(s, &ss);
    uint64_t first = ss.msgs ? ss.first_seq : ss.last_seq + 1, q = 0, sseq;
    uint32_t dc;
    while (jr__cstate_next_expired_after(&r->st, UINT64_MAX, q, &sseq, &dc) == 0 && sseq < first) {
        q = sseq;
        if (jr__map_get(&l->redeliv, sseq)) continue; /* already on its way out */
        jr__crec rec = {JR__COP_TERM, 0, sseq, 0, wall, 0};
        jr__cwait w;
        memset(&w, 0, sizeof w);
        w.rsseq = sseq;
        if (jr__map_put(&l->redeliv, sseq, r) != 0) return;
        if (stage(r, &rec, &w) != 0) {
            jr__map_del(&l->redeliv, sseq);
            return;
        }
    }
}

/* Read barrier (header comment) ---------------------------------------------------------------*/

/* Barrier bar_sent passed at the stream leader: committed at stream index `index`. */
static void barrier_answered(jr__crep *r, uint64_t index)
{
    jr__clead *l = r->lead;
    l->bar_out = 0;
    l->bar_rpc = 0;
    l->bar_hint = 0;
    l->bar_until = 0;
    l->bar_done = l->bar_sent;
    if (index > l->bar_index) l->bar_index = index;
    jr__clead_dirty(r);
}

/* Barrier bar_sent got no answer (no leader known, refused, lost): the next goes a heartbeat
 * later, to `hint` if a refusal named the leader. */
static void barrier_failed(jr__crep *r, jr__id hint)
{
    jr__clead *l = r->lead;
    l->bar_out = 0;
    l->bar_rpc = 0;
    l->bar_hint = hint;
    l->bar_until = jr__deadline(jr__node_now(r->js->n), r->js->heartbeat_ns);
    jr__clead_dirty(r);
}

static void on_barrier(jr_node *n, void *arg, int status, int answered, const uint8_t *p,
                       size_t len)
{
    jr__crep *r = arg;
    jr__clead *l = r->lead;
    if (!l || !l->bar_out) return;
    l->bar_rpc = 0;
    if (status == 0) {
        jr__rd rd;
        jr__rd_init(&rd, p, len);
        uint64_t index = jr__rd_varint(&rd);
        if (!rd.err && !jr__rd_left(&rd)) {
            barrier_answered(r, index);
            return;
        }
    } else if (status == JR_EINVAL && answered) {
        /* a stream leader of an earlier release, which has no barrier: until it is upgraded
         * the leader serves what its replica holds, as that release did */
        barrier_answered(r, 0);
        return;
    }
    jr__id hint = 0;
    if (status == JR_ENOTLEADER && answered && len > 0 && len <= JR__META_NAME_MAX) {
        char name[JR__META_NAME_MAX + 1];
        memcpy(name, p, len);
        name[len] = 0;
        jr__peer *lp = jr__peer_find_name(n, name);
        if (lp) hint = jr__peer_get_id(lp);
    }
    barrier_failed(r, hint == r->js->self ? 0 : hint);
}

void jr__clead_barrier_local(jr__js *js, uint64_t cgroup, uint64_t tag, uint64_t index)
{
    jr__crep *r = jr__crep_find(js, cgroup);
    if (!r || !r->lead || !r->lead->bar_out || r->lead->bar_rpc || r->lead->bar_tag != tag)
        return; /* not the barrier in flight (given up, or a leader since stopped) */
    barrier_answered(r, index);
}

/* Sends barrier bar_sent + 1: to this server's replica if it leads the stream, else to the
 * stream's leader as this server knows it. */
static void barrier_send(jr__crep *r, uint64_t now)
{
    jr__js *js = r->js;
    jr__clead *l = r->lead;
    l->bar_sent++;
    l->bar_out = 1;
    l->bar_rpc = 0;
    l->bar_tag = ++js->next_serial;
    l->bar_until = jr__deadline(now, 2 * js->election_ns);
    jr__srep *s = jr__srep_find(js, r->stream_group);
    if (s && jr__srep_is_leader(s)) {
        jr__route rt; /* nobody on the route: the answer comes by jr__clead_barrier_local */
        memset(&rt, 0, sizeof rt);
        if (jr__srep_stage_read(s, &rt, JR__REQ_BARRIER, r->group, NULL, 0, l->bar_tag) != 0)
            barrier_failed(r, 0);
        return;
    }
    jr__peer *lp = l->bar_hint ? jr__peer_find(js->n, l->bar_hint) : NULL;
    if (!lp) lp = jr__srep_leader_peer(js, r->stream_group);
    if (!lp || jr__peer_get_id(lp) == js->self) {
        barrier_failed(r, 0);
        return;
    }
    uint8_t b[16];
    jr__buf out = {b, 0, sizeof b, 0, NULL};
    jr__buf_u8(&out, JR__ADM_BARRIER);
    jr__buf_varint(&out, r->stream_group);
    jr_iovec iov = {out.data, out.len};
    if (jr__rpc_call(js->n, jr__peer_get_id(lp), JR__RPC_STREAM_ADMIN, &iov, 1, 2 * js->election_ns,
                     on_barrier, r, &l->bar_rpc) != 0) {
        l->bar_rpc = 0;
        barrier_failed(r, 0);
    }
}

/* Sends a barrier when a pull waits for one and none is in flight (or the one in flight is
 * given up); *next is pulled in to when it is given up or may be sent again. */
static void barrier_duty(jr__crep *r, uint64_t now, uint64_t *next)
{
    jr__clead *l = r->lead;
    int wanted = 0;
    for (jr__pull *p = l->phead; p && !wanted; p = p->next)
        wanted = (!p->ended || p->nheld) && p->barrier > l->bar_done;
    if (!wanted) return;
    if (l->bar_out && now >= l->bar_until) {
        if (l->bar_rpc) jr__rpc_cancel(r->js->n, l->bar_rpc);
        l->bar_rpc = 0;
        l->bar_out = 0; /* given up: a later answer names another tag, or is cancelled */
        l->bar_until = 0;
    }
    if (!l->bar_out && now >= l->bar_until) barrier_send(r, now);
    if (l->bar_until > now && l->bar_until < *next) *next = l->bar_until;
}

/* 1 if pull p may be served: its barrier passed and this server's replica of the stream has
 * applied what the barriers named. */
static int barrier_passed(const jr__clead *l, const jr__pull *p, uint64_t applied)
{
    return p->barrier <= l->bar_done && applied >= l->bar_index;
}

/* 1 if first deliveries for pull p may be chosen and recorded ahead of its barrier (held when
 * applied, until it passed): its barrier is the one in flight, and this server's replica of the
 * stream had applied what the barriers before it named, so it is not known to trail. One
 * known to trail waits for the barrier before anything is recorded, so a leader cut off from
 * its stream does not record deliveries it cannot hand out. */
static int barrier_ahead(const jr__clead *l, const jr__pull *p, uint64_t applied)
{
    return l->bar_out && p->barrier == l->bar_sent && applied >= l->bar_index;
}

static void hand_out(jr__crep *r, jr__pull *p, const jr__crec *rec, const jr__store_msg *m);

/* Hands out the deliveries held for pulls whose barrier passed, reading each message from the
 * local store again: it now reflects every removal acknowledged before the pull arrived, so a
 * message still there was removed by none of them, and one gone is not handed out (terminated,
 * as a message deleted between its choice and its apply). A pull that expired meanwhile is
 * answered once its held deliveries are handed out (its barrier is sent again until one
 * passes): a recorded delivery is given up only with the leadership, as one in flight is, so
 * every recorded delivery reaches its request unless that leader is lost. */
static void release_held(jr__crep *r, uint64_t applied)
{
    jr__clead *l = r->lead;
    jr__store *s = stream_store(r);
    for (jr__pull *p = l->phead, *nx; p; p = nx) {
        nx = p->next;
        if (!p->nheld) continue;
        if (!barrier_passed(l, p, applied)) continue;
        for (uint32_t i = 0; i < p->nheld; i++) {
            const jr__crec *rec = &p->held[i];
            jr__store_msg m;
            int where = find_redelivery(r, s, rec->sseq, &m);
            if (where > 0) {
                hand_out(r, p, rec, &m);
                continue;
            }
            p->batch++;
            if (where == 0) {
                jr__crec t = {JR__COP_TERM, 0, rec->sseq, 0, jr__js_wall(r->js), 0};
                stage(r, &t, NULL);
            }
        }
        p->inflight -= p->nheld;
        p->nheld = 0;
        if (p->batch == 0 && p->inflight == 0)
            pull_end(r, p, CODE_DONE, "");
        else if (p->ended && p->inflight == 0)
            pull_answer(r, p);
    }
}

/* Holds delivery rec of pull p until p's barrier passed. 0 or JR_ENOMEM. */
static int hold(jr__crep *r, jr__pull *p, const jr__crec *rec)
{
    if (p->nheld == p->capheld) {
        uint32_t cap = p->capheld ? p->capheld * 2 : 4;
        jr__crec *nh = jr__realloc(r->js->alloc, p->held, cap * sizeof *nh);
        if (!nh) return JR_ENOMEM;
        p->held = nh;
        p->capheld = cap;
    }
    p->held[p->nheld++] = *rec;
    return 0;
}

/* Priority groups ---------------------------------------------------------------------------*/

/* A new pin id: 22 characters of [0-9A-Za-z], as a NATS nuid. */
static void new_pin(jr__js *js, char out[JR__PIN_ID_MAX + 1])
{
    static const char alnum[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for (int i = 0; i < JR__PIN_ID_MAX; i++)
        out[i] = alnum[jr__rand_next(&js->rand) % (sizeof alnum - 1)];
    out[JR__PIN_ID_MAX] = 0;
}

/* The consumer's first priority group (the one a pin belongs to; JetStream pins the first). */
static const char *first_group(const jr_consumer_config *cfg)
{
    return cfg->npriority_groups ? cfg->priority_groups[0] : "";
}

/* 1 if request p may be served now under the consumer's priority policy: overflow, while its
 * conditions hold; pinned client, the pinned client's (a request without an id is pinned when
 * nobody is; others stand by). */
static int eligible(jr__crep *r, jr__pull *p, uint64_t now)
{
    jr__clead *l = r->lead;
    const jr_consumer_config *cfg = &r->as->cfg->c;
    switch (cfg->priority_policy) {
    case JR_PRIORITY_OVERFLOW:
        if (!p->min_pending && !p->min_ack_pending) return 1;
        if (p->min_ack_pending && jr__cstate_num_ack_pending(&r->st) >= p->min_ack_pending)
            return 1;
        return p->min_pending && jr__crep_num_pending(r, l->cursor) >= p->min_pending;
    case JR_PRIORITY_PINNED_CLIENT:
        if (l->pin[0]) {
            if (strcmp(p->id, l->pin) != 0) return 0; /* stands by */
            l->pin_at = now;
            return 1;
        }
        if (p->id[0]) return 0; /* an old pin: ended in step() (423) */
        new_pin(r->js, l->pin);
        l->pin_at = now;
        snprintf(p->id, sizeof p->id, "%s", l->pin);
        jr__clead_advise_pin(r, JR_ADVISORY_PINNED, first_group(cfg), l->pin);
        return 1;
    default:
        return 1;
    }
}

/* The pull to serve next: the first eligible one in arrival order (prioritized: the eligible
 * one of the lowest priority, arrival order among equals) whose read barrier passed or may be
 * gone ahead of (barrier_ahead). */
static jr__pull *open_pull(jr__crep *r, uint64_t now, uint64_t applied)
{
    jr__clead *l = r->lead;
    int prioritized = r->as->cfg->c.priority_policy == JR_PRIORITY_PRIORITIZED;
    jr__pull *best = NULL;
    for (jr__pull *p = l->phead; p; p = p->next) {
        if (p->ended || p->batch <= 0 ||
            (!barrier_passed(l, p, applied) && !barrier_ahead(l, p, applied)) ||
            !eligible(r, p, now))
            continue;
        if (!prioritized) return p;
        if (!best || p->priority < best->priority) best = p;
    }
    return best;
}

/* Pinned client: requests carrying a pin that is not the current one end with 423; the pin goes
 * when no request carried it for priority_timeout (UNPINNED "timeout"). */
static void pin_duty(jr__crep *r, uint64_t now)
{
    jr__clead *l = r->lead;
    const jr_consumer_config *cfg = &r->as->cfg->c;
    if (cfg->priority_policy != JR_PRIORITY_PINNED_CLIENT) return;
    for (jr__pull *p = l->phead, *nx; p; p = nx) {
        nx = p->next;
        if (!p->ended && p->id[0] && strcmp(p->id, l->pin) != 0)
            pull_end(r, p, 423, "Nats-Wrong-Pin-Id");
    }
    uint64_t ttl =
        cfg->priority_timeout_ns > 0 ? (uint64_t)cfg->priority_timeout_ns : 120000000000ull;
    for (jr__pull *p = l->phead; p && l->pin[0]; p = p->next)
        if (!p->ended && strcmp(p->id, l->pin) == 0) l->pin_at = now;
    if (l->pin[0] && now >= jr__deadline(l->pin_at, ttl)) {
        l->pin[0] = 0;
        jr__clead_advise_pin(r, JR_ADVISORY_UNPINNED, first_group(cfg), "timeout");
    }
}

/* Chooses deliveries for the waiting pulls and stages them. */
static void step(jr__crep *r)
{
    jr__js *js = r->js;
    jr__clead *l = r->lead;
    uint64_t now = jr__node_now(js->n), wall = jr__js_wall(js);
    for (jr__pull *p = l->phead, *nx; p; p = nx) {
        nx = p->next;
        if (!p->ended && now >= p->expires_at) pull_end(r, p, 408, "Request Timeout");
    }
    if (r->failed) return;
    uint64_t bar_next = UINT64_MAX;
    barrier_duty(r, now, &bar_next);
    release_held(r, stream_applied(r));
    if (!check_ready(r)) {
        /* its term's first entry applies without passing through the state machine: look
         * again a heartbeat later */
        jr__js_timer_arm(js, &r->timer, jr__deadline(now, js->heartbeat_ns));
        return;
    }
    const jr_consumer_config *cfg = &r->as->cfg->c;
    if (l->phead) l->active_at = now; /* a client waits */
    uint64_t idle_due = UINT64_MAX;
    if (cfg->inactive_threshold_ns > 0 && !l->expiring) {
        idle_due = jr__deadline(l->active_at, (uint64_t)cfg->inactive_threshold_ns);
        if (now >= idle_due) {
            /* nobody pulled or acked for inactive_threshold: the consumer goes (JetStream's
             * ephemeral clean-up; a durable with a threshold too) */
            l->expiring = 1;
            jr__node_log(js->n, JR_LOG_INFO,
                         "consumer '%s > %s': inactive for %" PRId64 " ns, deleting it", r->stream,
                         r->name, cfg->inactive_threshold_ns);
            jr__mnode_expire_consumer(js, r->stream, r->name);
            idle_due = UINT64_MAX;
        }
    }
    if (l->resetting) return; /* the RESET's apply starts leading afresh */
    if (cfg->pause_until_ns > wall) {
        /* paused: nothing is handed out until then; its peers are still looked after (a peer
         * change of its stream waits for the consumer to follow) */
        uint64_t at = jr__deadline(now, cfg->pause_until_ns - wall);
        if (l->duty_at < at) at = l->duty_at;
        for (jr__pull *p = l->phead; p; p = p->next)
            if (!p->ended && p->expires_at < at) at = p->expires_at;
        jr__js_timer_arm(js, &r->timer, at);
        return;
    }
    jr__store *s = stream_store(r);
    if (s) drop_purged(r, s, wall);
    uint64_t applied = stream_applied(r);
    uint64_t scan = 0; /* expired deliveries at or below it were taken care of in this step */
    uint64_t replay_at = UINT64_MAX; /* replay original: when the next message is due */
    pin_duty(r, now);
    for (;;) {
        jr__pull *p = open_pull(r, now, applied);
        if (!p) break;
        uint64_t pending = jr__cstate_num_ack_pending(&r->st) + l->inflight;
        int acks = cfg->ack_policy != JR_ACK_NONE;
        jr__crec rec;
        memset(&rec, 0, sizeof rec);
        jr__store_msg m;
        uint64_t sseq = 0;
        uint32_t dc = 0;
        jr__cwait w;
        memset(&w, 0, sizeof w);
        int ahead = !barrier_passed(l, p, applied); /* first deliveries only, held at apply */
        if (next_expired(r, wall, scan, &sseq, &dc) == 0) {
            if (ahead) break; /* expired ones first, once the barrier passed */
            int at_max = cfg->max_deliver > 0 && dc >= (uint64_t)cfg->max_deliver;
            int where = at_max ? 0 : find_redelivery(r, s, sseq, &m);
            scan = sseq;
            if (where < 0) continue; /* not here yet: left pending */
            w.rsseq = sseq;
            if (jr__map_put(&l->redeliv, sseq, r) != 0) break;
            if (where == 0) {
                /* at max_deliver: no more deliveries; gone (limits, purge, delete): not
                 * redelivered either */
                rec.type = cfg->max_deliver > 0 && dc >= (uint64_t)cfg->max_deliver
                               ? JR__COP_MAXDELIV
                               : JR__COP_TERM;
                rec.sseq = sseq;
                rec.ts = rec.type == JR__COP_TERM ? wall : 0;
                if (stage(r, &rec, &w) != 0) {
                    jr__map_del(&l->redeliv, sseq);
                    break;
                }
                continue;
            }
            rec.dc = dc + 1;
        } else if (acks && cfg->max_ack_pending > 0 && pending >= (uint64_t)cfg->max_ack_pending) {
            break;
        } else if (!s || next_new(r, s, l->cursor, &m) != 0) {
            break;
        } else if (cfg->replay_policy == JR_REPLAY_ORIGINAL &&
                   !replay_due(l, &m, now, &replay_at)) {
            break; /* replayed at the pace it was stored: not yet */
        } else {
            sseq = m.seq;
            rec.dc = 1;
            w.fresh = 1;
        }
        uint64_t sz = msg_size(&m);
        if (cfg->rate_limit_bps && !rate_allows(l, cfg->rate_limit_bps, sz, now, &replay_at)) {
            if (w.rsseq) jr__map_del(&l->redeliv, w.rsseq);
            break; /* over its rate: the timer comes back when the bucket holds it */
        }
        if ((p->capped && sz > (uint64_t)p->max_bytes) ||
            ((p->got || p->inflight) && p->bytes + sz > answer_cap(js))) {
            /* not for this request: it ends (over its max_bytes, or its answer is full) */
            if (w.rsseq) jr__map_del(&l->redeliv, w.rsseq);
            if (p->capped && sz > (uint64_t)p->max_bytes)
                pull_end(r, p, 409, "Message Size Exceeds MaxBytes");
            else
                pull_end(r, p, CODE_DONE, "");
            continue;
        }
        if (p->capped) p->max_bytes -= (int64_t)sz;
        p->bytes += sz;
        rec.type = JR__COP_DELIVERED;
        rec.dseq = l->next_dseq;
        rec.sseq = sseq;
        rec.ts = wall;
        w.pull = p;
        if (stage(r, &rec, &w) != 0) {
            if (w.rsseq) jr__map_del(&l->redeliv, w.rsseq);
            break;
        }
        l->next_dseq++;
        if (w.fresh) {
            l->cursor = sseq + 1;
            l->inflight++;
        }
        p->batch--;
        p->inflight++;
    }
    /* Nothing more to hand out now. */
    for (jr__pull *p = l->phead, *nx; p; p = nx) {
        nx = p->next;
        if (p->ended || p->inflight || !barrier_passed(l, p, applied)) continue;
        if (p->batch == 0)
            pull_end(r, p, CODE_DONE, "");
        else if (p->no_wait)
            pull_end(r, p, 404, "No Messages");
        else if (p->eager && p->got)
            pull_end(r, p, CODE_DONE, ""); /* a push subscription: handed out as they come */
        else if (p->capped && p->max_bytes == 0)
            pull_end(r, p, CODE_DONE, ""); /* took exactly its max_bytes */
        else if (p->got)
            pull_end(r, p, JR__FETCH_MORE, ""); /* the requester asks again for the rest */
        else if (p->hb_ns && now >= p->hb_at)
            pull_end(r, p, JR__FETCH_HEARTBEAT, "Idle Heartbeat"); /* likewise */
    }
    /* Next duty: a pull's expiry, a redelivery deadline, the inactivity threshold, the peers, a
     * replayed message. */
    uint64_t next = idle_due < l->duty_at ? idle_due : l->duty_at;
    if (replay_at < next) next = replay_at;
    if (bar_next < next) next = bar_next;
    if (l->pin[0]) {
        int64_t t = cfg->priority_timeout_ns > 0 ? cfg->priority_timeout_ns : 120000000000ll;
        uint64_t at = jr__deadline(l->pin_at, (uint64_t)t);
        if (at < next) next = at;
    }
    for (jr__pull *p = l->phead; p; p = p->next) {
        if (!p->ended && p->expires_at < next) next = p->expires_at;
        if (!p->ended && p->hb_at < next && barrier_passed(l, p, applied))
            next = p->hb_at; /* a pull waiting for its barrier is not idle yet */
    }
    uint64_t due = jr__cstate_next_deadline(&r->st);
    if (due != UINT64_MAX && l->phead) {
        /* A deadline already past is a message this step could not redeliver (its redelivery
         * in flight, no pull open, not in the local replica yet); what unblocks it makes the
         * leader step (an apply, a new pull). Looking again at once would only tick the node
         * in a loop meanwhile: look again after a heartbeat. */
        uint64_t at =
            due > wall ? jr__deadline(now, due - wall) : jr__deadline(now, js->heartbeat_ns);
        if (at < next) next = at;
    }
    if (next != UINT64_MAX)
        jr__js_timer_arm(js, &r->timer, next);
    else
        jr__js_timer_cancel(js, &r->timer); /* nothing due: an ended pull's expiry is not */
}

void jr__clead_timer(jr__js *js, jr__jtimer *t)
{
    jr__crep *r = (jr__crep *)((char *)t - offsetof(jr__crep, timer));
    if (!r->lead) return;
    /* its peer change needs its whole log applied, not a start position fixed */
    if ((r->lead->ready || log_applied(r)) && jr__node_now(js->n) >= r->lead->duty_at) {
        uint64_t next = UINT64_MAX;
        jr__crep_members_duty(r, &next);
        r->lead->duty_at = next;
    }
    jr__clead_dirty(r); /* its step arms the timer for what is due next */
}

/* Proposes what r's leader staged. */
static void propose(jr__crep *r)
{
    jr__js *js = r->js;
    jr__clead *l = r->lead;
    if (!l->nstage) return;
    jr__buf *b = &js->scratch;
    jr__buf_reset(b);
    int rc = jr__cop_encode(l->srec, l->nstage, b);
    jr__cprop *p = NULL;
    uint64_t index = 0, term = 0;
    if (rc == 0) {
        p = jr__malloc(js->alloc, sizeof *p + l->nstage * sizeof(jr__cwait));
        rc = p ? 0 : JR_ENOMEM;
    }
    if (rc == 0) rc = jr__group_propose(r->g, b->data, b->len, NULL, NULL, &index, &term);
    if (rc != 0) {
        jr__free(js->alloc, p);
        jr__node_log(js->n, JR_LOG_WARN, "consumer '%s > %s': cannot propose %zu records: %s",
                     r->stream, r->name, l->nstage, jr_strerror(rc));
        /* What was staged is lost: the cursor is no longer right. Leading starts afresh once
         * the log is applied. A group that refused the proposal (a leadership transfer in
         * progress) may stay this node's, with nothing applied or proposed to wake the new
         * leading: its timer does, a heartbeat later (r->dirty is still set here,
         * jr__clead_flush_all, so marking it dirty again would not list it). Not at once: the
         * new leading may stage and be refused again, and while the transfer lasts that would
         * go round without the clock moving. */
        jr__clead_stop(r, JR_ELEADERLOST);
        jr__clead_role_changed(r);
        if (r->lead)
            jr__js_timer_arm(js, &r->timer, jr__deadline(jr__node_now(js->n), js->heartbeat_ns));
        return;
    }
    p->next = NULL;
    p->index = index;
    p->term = term;
    p->n = (uint32_t)l->nstage;
    p->w = (jr__cwait *)(p + 1);
    memcpy(p->w, l->swait, l->nstage * sizeof *p->w);
    if (l->prop_tail)
        l->prop_tail->next = p;
    else
        l->prop_head = p;
    l->prop_tail = p;
    l->nstage = 0;
}

void jr__clead_flush_all(jr__js *js)
{
    jr__crep *list = js->cdirty;
    js->cdirty = NULL;
    while (list) {
        jr__crep *r = list;
        list = r->dirty_next;
        /* r->dirty stays set meanwhile: what it stages now is proposed below, not left for
         * another flush (which would keep the node ticking) */
        if (r->lead && !jr__crep_is_leader(r)) jr__clead_stop(r, JR_ELEADERLOST);
        if (r->lead) step(r);
        if (r->lead) propose(r);
        r->dirty = 0;
    }
}

void jr__clead_stream_changed(jr__js *js, uint64_t stream_group)
{
    jr__crep *first_rep = jr__map_get(&js->cons_by_stream, stream_group);
    if (!first_rep) return;
    jr__srep *sr = jr__srep_find(js, stream_group);
    uint64_t first = 0; /* the stream's first seq: pending deliveries below it are gone */
    if (sr && sr->fsm) {
        jr__store_state ss;
        jr__store_state_get(jr__stream_fsm_store(sr->fsm), &ss);
        first = ss.msgs ? ss.first_seq : ss.last_seq + 1;
    }
    for (jr__crep *r = first_rep; r; r = r->sib) {
        if (!r->lead) continue;
        uint64_t low;
        uint32_t dc;
        if (r->lead->phead ||
            (jr__cstate_next_expired_after(&r->st, UINT64_MAX, 0, &low, &dc) == 0 && low < first))
            jr__clead_dirty(r); /* new messages for its requests, or pending ones gone */
    }
}

/* Applying -----------------------------------------------------------------------------------*/

void jr__clead_entry_start(jr__crep *r, uint64_t index, uint64_t term)
{
    jr__clead *l = r->lead;
    r->cur_prop = NULL;
    if (!l) return;
    while (l->prop_head && (l->prop_head->index < index ||
                            (l->prop_head->index == index && l->prop_head->term != term))) {
        jr__cprop *p = l->prop_head;
        l->prop_head = p->next;
        if (!l->prop_head) l->prop_tail = NULL;
        for (uint32_t i = 0; i < p->n; i++) wait_lost(r, &p->w[i], JR_ELEADERLOST);
        jr__free(r->js->alloc, p);
    }
    if (l->prop_head && l->prop_head->index == index) {
        r->cur_prop = l->prop_head;
        l->prop_head = r->cur_prop->next;
        if (!l->prop_head) l->prop_tail = NULL;
    }
}

/* The percentage sample_freq asks for ("N%" or "N"; validated), 0 without one. */
static unsigned sample_percent(const jr_consumer_config *cfg)
{
    const char *f = cfg->sample_freq;
    unsigned v = 0;
    for (; f && *f >= '0' && *f <= '9'; f++) v = v * 10 + (unsigned)(*f - '0');
    return v > 100 ? 100 : v;
}

void jr__clead_before_ack(jr__crep *r, const jr__crec *rec)
{
    jr__clead *l = r->lead;
    if (!l || !r->cur_prop) return; /* only acks this leader proposed are reported */
    l->sample_ts = 0;
    unsigned pct = sample_percent(&r->as->cfg->c);
    if (!pct) return;
    /* a sample chosen from the message's sequence: the same on every leader */
    if ((rec->sseq * 0x9e3779b97f4a7c15ull >> 32) % 100 >= pct) return;
    uint64_t ts = 0;
    if (jr__cstate_pending_get(&r->st, rec->sseq, NULL, NULL, &ts) == 0) l->sample_ts = ts;
}

/* Appends a delivered message to pull p (codec: the fetch response). */
static void hand_out(jr__crep *r, jr__pull *p, const jr__crec *rec, const jr__store_msg *m)
{
    jr__buf *b = &p->buf;
    jr__buf_bytes(b, m->subject, m->subject_len);
    if (r->as->cfg->c.headers_only) {
        /* headers_only: the stored headers plus Nats-Msg-Size, and no body (JetStream's
         * convertToHeadersOnly); a message without headers gets a block of its own */
        char line[48];
        int ln = snprintf(line, sizeof line, "Nats-Msg-Size: %zu\r\n\r\n", m->data_len);
        static const char start[] = "NATS/1.0\r\n";
        size_t keep = m->hdr_len >= 2 ? m->hdr_len - 2 : 0; /* without its closing CRLF */
        size_t head = m->hdr_len ? keep : sizeof start - 1;
        jr__buf_varint(b, head + (size_t)ln);
        if (m->hdr_len)
            jr__buf_put(b, m->hdr, keep);
        else
            jr__buf_put(b, start, sizeof start - 1);
        jr__buf_put(b, line, (size_t)ln);
        jr__buf_bytes(b, NULL, 0);
    } else {
        jr__buf_bytes(b, m->hdr, m->hdr_len);
        jr__buf_bytes(b, m->data, m->data_len);
    }
    jr__buf_varint(b, rec->sseq);
    jr__buf_varint(b, rec->dseq);
    jr__buf_varint(b, rec->dc);
    jr__buf_varint(b, (uint64_t)m->ts);
    jr__buf_varint(b, jr__crep_num_pending(r, rec->sseq + 1));
    jr__buf_bytes(b, p->id, strlen(p->id)); /* the pin it is served under ("": none) */
    p->got++;
    if (p->hb_ns) p->hb_at = jr__deadline(jr__node_now(r->js->n), p->hb_ns);
}

void jr__clead_applied(jr__crep *r, const jr__crec *rec, const jr__capply *out, uint32_t i)
{
    jr__clead *l = r->lead;
    jr__cprop *p = r->cur_prop;
    if (!l || !p || i >= p->n) return;
    jr__cwait *w = &p->w[i];
    wait_settled(l, w);
    if (out->max_delivered)
        jr__clead_advise(r, JR_ADVISORY_MAX_DELIVERIES, rec->sseq, out->dseq, out->dc, 0);
    else if (out->terminated)
        jr__clead_advise(r, JR_ADVISORY_TERMINATED, rec->sseq, out->dseq, out->dc, 0);
    else if (rec->type == JR__COP_NAK && out->applied)
        jr__clead_advise(r, JR_ADVISORY_NAKED, rec->sseq, out->dseq, out->dc, 0);
    else if (rec->type == JR__COP_ACK && out->applied && l->sample_ts)
        jr__clead_advise(r, JR_ADVISORY_ACK_SAMPLE, rec->sseq, out->dseq, out->dc,
                         rec->ts > l->sample_ts ? rec->ts - l->sample_ts : 0);
    l->sample_ts = 0;
    if (rec->type == JR__COP_RESET) {
        /* lead afresh from the reset state: cursor and consumer seq (check_ready) */
        l->resetting = 0;
        l->ready = 0;
        jr__map_free(&l->redeliv);
        jr__map_init(&l->redeliv, r->js->alloc);
    }
    if (w->pull && out->applied && !barrier_passed(l, w->pull, stream_applied(r)) &&
        hold(r, w->pull, rec) == 0) {
        /* recorded ahead of its pull's barrier: handed out once that passed (release_held) */
        jr__clead_dirty(r);
    } else if (w->pull) {
        jr__pull *pl = w->pull;
        pl->inflight--;
        jr__store *s = stream_store(r);
        jr__store_msg m;
        int where = out->applied ? find_redelivery(r, s, rec->sseq, &m) : -1;
        if (where > 0) {
            hand_out(r, pl, rec, &m);
        } else {
            pl->batch++;
            /* not here now (its replica began a catch-up): pending, redelivered later */
            if (where == 0) {
                /* deleted since it was chosen: not redelivered either */
                jr__crec t = {JR__COP_TERM, 0, rec->sseq, 0, jr__js_wall(r->js), 0};
                stage(r, &t, NULL);
            }
        }
        if (pl->batch == 0 && pl->inflight == 0)
            pull_end(r, pl, CODE_DONE, "");
        else if (pl->ended && pl->inflight == 0)
            pull_answer(r, pl);
    }
    if (w->confirm) {
        if (out->applied) {
            jr__route_reply(r->js, &w->route, 0, NULL, 0);
        } else {
            static const char why[] = "message not pending";
            jr__route_reply(r->js, &w->route, JR_ENOTFOUND, why, sizeof why - 1);
        }
    }
}

void jr__clead_entry_end(jr__crep *r)
{
    if (r->cur_prop) {
        jr__free(r->js->alloc, r->cur_prop);
        r->cur_prop = NULL;
    }
    if (r->lead) jr__clead_dirty(r);
}

/* Advisories -----------------------------------------------------------------------------------*/

struct jr__adv {
    struct jr__adv *next;
    jr_consumer_advisory a;
    char names[JR_STREAM_NAME_MAX + JR_CONSUMER_NAME_MAX + 2];
    char group[JR__GROUP_NAME_MAX + 1];
    char what[JR__PIN_ID_MAX + 1];
};

static void adv_effect(jr_node *n, uint64_t arg)
{
    jr__js *js = jr__js_of(n);
    (void)arg;
    if (!js) return;
    while (js->adv_head) {
        struct jr__adv *v = js->adv_head;
        js->adv_head = v->next;
        if (!js->adv_head) js->adv_tail = NULL;
        if (js->adv_cb) js->adv_cb(js->adv_arg, &v->a);
        jr__free(js->alloc, v);
    }
}

/* A new advisory of r (queued for the effect that reports it), or NULL (none wanted, or no
 * memory: logged). */
static struct jr__adv *advisory(jr__crep *r, int kind)
{
    jr__js *js = r->js;
    if (!js->adv_cb) return NULL;
    struct jr__adv *v = jr__calloc(js->alloc, 1, sizeof *v);
    if (!v || (!js->adv_head && jr__node_defer(js->n, adv_effect, 0) != 0)) {
        jr__free(js->alloc, v);
        jr__node_log(js->n, JR_LOG_WARN, "consumer '%s > %s': an advisory was lost: %s", r->stream,
                     r->name, jr_strerror(JR_ENOMEM));
        return NULL;
    }
    size_t sl = strlen(r->stream);
    memcpy(v->names, r->stream, sl + 1);
    memcpy(v->names + sl + 1, r->name, strlen(r->name) + 1);
    v->a.size = sizeof v->a;
    v->a.kind = kind;
    v->a.stream = v->names;
    v->a.consumer = v->names + sl + 1;
    if (js->adv_tail)
        js->adv_tail->next = v;
    else
        js->adv_head = v;
    js->adv_tail = v;
    return v;
}

void jr__clead_advise(jr__crep *r, int kind, uint64_t sseq, uint64_t dseq, uint32_t dc,
                      uint64_t latency_ns)
{
    struct jr__adv *v = advisory(r, kind);
    if (!v) return;
    v->a.stream_seq = sseq;
    v->a.consumer_seq = dseq;
    v->a.deliveries = dc;
    v->a.ack_latency_ns = latency_ns;
}

void jr__clead_advise_pin(jr__crep *r, int kind, const char *group, const char *what)
{
    struct jr__adv *v = advisory(r, kind);
    if (!v) return;
    snprintf(v->group, sizeof v->group, "%s", group);
    snprintf(v->what, sizeof v->what, "%s", what);
    v->a.group = v->group;
    v->a.pin_id = v->what;
}

void jr__clead_advisories_free(jr__js *js)
{
    while (js->adv_head) {
        struct jr__adv *v = js->adv_head;
        js->adv_head = v->next;
        jr__free(js->alloc, v);
    }
    js->adv_tail = NULL;
}

/* Requests -----------------------------------------------------------------------------------*/

static void not_leader(jr__js *js, const jr__route *rt, uint64_t group)
{
    jr__peer *p = jr__crep_leader_peer(js, group);
    const char *name = p && jr__peer_get_id(p) != js->self ? jr__peer_get_name(p) : "";
    jr__route_reply(js, rt, JR_ENOTLEADER, name, strlen(name));
}

/* An immediate end of a fetch (nothing delivered). */
static void fetch_refuse(jr__js *js, const jr__route *rt, int code, const char *text,
                         uint64_t batch, uint64_t bytes)
{
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    jr__buf_varint(b, (uint64_t)code);
    jr__buf_bytes(b, text, strlen(text));
    jr__buf_varint(b, batch);
    jr__buf_varint(b, bytes);
    jr__buf_varint(b, 0);
    jr__route_reply(js, rt, b->err ? JR_ENOMEM : 0, b->err ? NULL : b->data, b->err ? 0 : b->len);
}

/* What JetStream answers a request whose priority fields do not fit the consumer (400 Bad
 * Request - ...), or NULL. */
static const char *priority_refusal(const jr_consumer_config *cfg, const char *group, size_t glen,
                                    uint64_t minp, uint64_t minap, size_t idlen, uint64_t prio)
{
    int policy = cfg->priority_policy;
    if (policy == JR_PRIORITY_NONE) return NULL; /* the fields mean nothing then */
    if ((minp || minap) && policy != JR_PRIORITY_OVERFLOW)
        return "Bad Request - Not a Overflow Priority consumer";
    if (idlen && policy != JR_PRIORITY_PINNED_CLIENT)
        return "Bad Request - Not a Pinned Client Priority consumer";
    if (prio > 9) return "Bad Request - Priority must be between 0 and 9";
    if (!glen) return "Bad Request - Priority Group missing";
    for (size_t i = 0; i < cfg->npriority_groups; i++)
        if (strlen(cfg->priority_groups[i]) == glen &&
            memcmp(cfg->priority_groups[i], group, glen) == 0)
            return NULL;
    return "Bad Request - Invalid Priority Group";
}

static void exec_fetch(jr__js *js, jr__crep *r, const jr__route *rt, jr__rd *rd)
{
    jr_node *n = js->n;
    int64_t batch = (int64_t)jr__rd_varint(rd);
    int64_t max_bytes = (int64_t)jr__rd_varint(rd);
    int64_t expires = (int64_t)jr__rd_varint(rd);
    uint8_t flags = jr__rd_u8(rd);
    uint64_t hb = jr__rd_left(rd) ? jr__rd_varint(rd) : 0;
    size_t glen = 0, idlen = 0;
    const uint8_t *group = NULL, *id = NULL;
    uint64_t minp = 0, minap = 0, prio = 0;
    if (jr__rd_left(rd)) {
        group = jr__rd_bytes(rd, &glen, JR__GROUP_NAME_MAX);
        minp = jr__rd_varint(rd);
        minap = jr__rd_varint(rd);
        id = jr__rd_bytes(rd, &idlen, JR__PIN_ID_MAX);
        prio = jr__rd_u8(rd);
    }
    uint8_t no_wait = flags & JR__FETCH_NO_WAIT;
    if (rd->err || jr__rd_left(rd) || batch <= 0 || max_bytes < 0 || expires < 0 ||
        (flags & ~(JR__FETCH_NO_WAIT | JR__FETCH_PUSH))) {
        static const char why[] = "malformed fetch request";
        jr__route_reply(js, rt, JR_EINVAL, why, sizeof why - 1);
        return;
    }
    const jr_consumer_config *cfg = &r->as->cfg->c;
    char text[96];
    const char *bad = priority_refusal(cfg, (const char *)group, glen, minp, minap, idlen, prio);
    if (bad) {
        fetch_refuse(js, rt, 400, bad, (uint64_t)batch, (uint64_t)max_bytes);
        return;
    }
    if (cfg->priority_policy == JR_PRIORITY_PINNED_CLIENT && idlen && r->lead->pin[0] &&
        (idlen != strlen(r->lead->pin) || memcmp(id, r->lead->pin, idlen) != 0)) {
        fetch_refuse(js, rt, 423, "Nats-Pin-Id mismatch", (uint64_t)batch, (uint64_t)max_bytes);
        return;
    }
    if (!!cfg->deliver_subject != !!(flags & JR__FETCH_PUSH)) {
        if (!cfg->deliver_subject) {
            fetch_refuse(js, rt, 409, "Consumer is pull based", (uint64_t)batch,
                         (uint64_t)max_bytes);
            return;
        }
        fetch_refuse(js, rt, 409, "Consumer is push based", (uint64_t)batch, (uint64_t)max_bytes);
        return;
    }
    if (cfg->max_batch > 0 && batch > cfg->max_batch) {
        snprintf(text, sizeof text, "Exceeded MaxRequestBatch of %" PRId64, cfg->max_batch);
        fetch_refuse(js, rt, 409, text, (uint64_t)batch, (uint64_t)max_bytes);
        return;
    }
    if (cfg->max_bytes > 0 && max_bytes > cfg->max_bytes) {
        snprintf(text, sizeof text, "Exceeded MaxRequestMaxBytes of %" PRId64, cfg->max_bytes);
        fetch_refuse(js, rt, 409, text, (uint64_t)batch, (uint64_t)max_bytes);
        return;
    }
    if (cfg->max_expires_ns > 0 && expires > cfg->max_expires_ns) {
        jr__fmt o = {text, sizeof text, 0};
        jr__fmt_emit(&o, "Exceeded MaxRequestExpires of ");
        jr__fmt_go_duration(&o, cfg->max_expires_ns);
        fetch_refuse(js, rt, 409, text, (uint64_t)batch, (uint64_t)max_bytes);
        return;
    }
    jr__clead *l = r->lead;
    l->active_at = jr__node_now(n);
    if (cfg->max_waiting > 0 && l->nwaiting >= (size_t)cfg->max_waiting) {
        fetch_refuse(js, rt, 409, "Exceeded MaxWaiting", (uint64_t)batch, (uint64_t)max_bytes);
        return;
    }
    jr__pull *p = jr__calloc(js->alloc, 1, sizeof *p);
    if (!p) {
        jr__route_reply(js, rt, JR_ENOMEM, NULL, 0);
        return;
    }
    p->route = *rt;
    p->batch = batch;
    p->max_bytes = max_bytes;
    p->capped = max_bytes > 0;
    p->expires_at = expires ? jr__deadline(jr__node_now(n), (uint64_t)expires) : UINT64_MAX;
    p->no_wait = no_wait != 0;
    p->eager = (flags & JR__FETCH_PUSH) != 0;
    if (glen) memcpy(p->group, group, glen);
    if (idlen) memcpy(p->id, id, idlen);
    p->min_pending = minp;
    p->min_ack_pending = minap;
    p->priority = (uint8_t)prio;
    p->hb_ns = hb < (uint64_t)expires ? hb : 0;
    p->hb_at = p->hb_ns ? jr__deadline(jr__node_now(n), p->hb_ns) : UINT64_MAX;
    p->barrier = l->bar_sent + 1; /* the first barrier sent from now on */
    jr__buf_init(&p->buf, js->alloc);
    p->prev = l->ptail;
    if (l->ptail)
        l->ptail->next = p;
    else
        l->phead = p;
    l->ptail = p;
    p->listed = 1;
    l->nwaiting++;
    jr__clead_dirty(r);
}

static void exec_ack(jr__js *js, jr__crep *r, const jr__route *rt, jr__rd *rd)
{
    uint8_t kind = jr__rd_u8(rd), confirm = jr__rd_u8(rd);
    uint64_t sseq = jr__rd_varint(rd), dseq = jr__rd_varint(rd);
    uint64_t delay = jr__rd_varint(rd);
    if (rd->err || jr__rd_left(rd) || kind > JR_ACK_TERM || sseq == 0 || delay > INT64_MAX) {
        static const char why[] = "malformed acknowledgement";
        jr__route_reply(js, rt, JR_EINVAL, why, sizeof why - 1);
        return;
    }
    const jr_consumer_config *cfg = &r->as->cfg->c;
    r->lead->active_at = jr__node_now(js->n);
    uint64_t pd = 0, ts = 0;
    uint32_t dc = 0;
    int pending = jr__cstate_pending_get(&r->st, sseq, &pd, &dc, &ts) == 0;
    int covers = cfg->ack_policy == JR_ACK_ALL && kind == JR_ACK_ACK &&
                 jr__cstate_num_ack_pending(&r->st) > 0 &&
                 sseq <= jr__cstate_delivered(&r->st)->stream_seq;
    /* A confirmed one is not refused from this state: it may lag the committed one (a leader
     * deposed and not aware yet, or one that has not applied its predecessors' entries yet),
     * and "not pending" would then deny an ack the message needs. Its record is applied or
     * ignored (not pending) alike on every replica, and answered from that. */
    if (!pending && !covers && !confirm) {
        static const char why[] = "message not pending";
        jr__route_reply(js, rt, JR_ENOTFOUND, why, sizeof why - 1);
        return;
    }
    jr__crec rec;
    memset(&rec, 0, sizeof rec);
    rec.sseq = sseq;
    rec.ts = jr__js_wall(js);
    switch (kind) {
    case JR_ACK_ACK:
        rec.type = JR__COP_ACK;
        rec.dseq = pending ? pd : dseq;
        break;
    case JR_ACK_NAK:
        rec.type = JR__COP_NAK;
        rec.delay_ns = (int64_t)delay;
        break;
    case JR_ACK_PROGRESS:
        rec.type = JR__COP_PROGRESS;
        break;
    default:
        rec.type = JR__COP_TERM;
        break;
    }
    jr__cwait w;
    memset(&w, 0, sizeof w);
    w.route = *rt;
    w.confirm = confirm != 0;
    int rc = stage(r, &rec, &w);
    if (rc != 0) {
        jr__route_reply(js, rt, rc, NULL, 0);
        return;
    }
    if (!confirm) jr__route_reply(js, rt, 0, NULL, 0);
}

static void exec_reset(jr__js *js, jr__crep *r, const jr__route *rt, jr__rd *rd)
{
    uint64_t seq = jr__rd_varint(rd);
    if (rd->err || jr__rd_left(rd)) {
        static const char why[] = "malformed reset";
        jr__route_reply(js, rt, JR_EINVAL, why, sizeof why - 1);
        return;
    }
    const jr_consumer_config *cfg = &r->as->cfg->c;
    jr__cseqs floor;
    jr__cstate_ack_floor(&r->st, &floor);
    if (seq == 0) seq = floor.stream_seq + 1;
    const char *why = NULL;
    if (cfg->deliver_policy == JR_DELIVER_BY_START_SEQ && seq < cfg->opt_start_seq) {
        why = "invalid reset: below start seq";
    } else if (cfg->deliver_policy == JR_DELIVER_BY_START_TIME) {
        jr__store *s = stream_store(r);
        jr__store_msg m;
        if (s && jr__store_get(s, seq, &m) == 0 && (uint64_t)m.ts < cfg->opt_start_time_ns)
            why = "invalid reset: below start time";
    } else if (cfg->deliver_policy != JR_DELIVER_ALL &&
               cfg->deliver_policy != JR_DELIVER_BY_START_SEQ) {
        why = "invalid reset: not allowed";
    }
    if (why) {
        jr__route_reply(js, rt, JR_EINVAL, why, strlen(why));
        return;
    }
    jr__crec rec = {JR__COP_RESET, 0, seq, 0, 0, 0};
    jr__cwait w;
    memset(&w, 0, sizeof w);
    w.route = *rt;
    w.confirm = 1;
    int rc = stage(r, &rec, &w);
    if (rc != 0) {
        jr__route_reply(js, rt, rc, NULL, 0);
        return;
    }
    r->lead->resetting = 1;
}

static void exec_info(jr__js *js, jr__crep *r, const jr__route *rt)
{
    jr_consumer_info in;
    jr_cluster_info cluster;
    memset(&in, 0, sizeof in);
    memset(&cluster, 0, sizeof cluster);
    in.size = sizeof in;
    cluster.size = sizeof cluster;
    in.stream = r->stream;
    in.name = r->name;
    in.config = &r->as->cfg->c;
    const jr__meta_consumer *mc = jr__meta_consumer_by_group(&js->st, r->group);
    in.created_ns = mc ? mc->created_ns : 0;
    const jr__cseqs *d = jr__cstate_delivered(&r->st);
    in.delivered.consumer_seq = d->consumer_seq;
    in.delivered.stream_seq = d->stream_seq;
    in.delivered.last_active_ns = d->last_active_ns;
    jr__cseqs f;
    jr__cstate_ack_floor(&r->st, &f);
    in.ack_floor.consumer_seq = f.consumer_seq;
    in.ack_floor.stream_seq = f.stream_seq;
    in.ack_floor.last_active_ns = f.last_active_ns;
    in.num_ack_pending = jr__cstate_num_ack_pending(&r->st);
    in.num_redelivered = jr__cstate_num_redelivered(&r->st);
    in.num_waiting = r->lead ? r->lead->nwaiting : 0;
    uint64_t from = d->stream_seq + 1;
    if (r->lead && r->lead->ready && r->lead->cursor > from) from = r->lead->cursor;
    in.num_pending = jr__crep_num_pending(r, from);
    char gname[48];
    jr__crep_group_name(r, gname, sizeof gname);
    cluster.name = js->cluster;
    cluster.group = gname;
    cluster.leader = js->name;
    jr_peer_info reps[JR__INFO_MAX_REPLICAS];
    const jr_peer_info *rep_ptrs[JR__INFO_MAX_REPLICAS];
    cluster.nreplicas = jr__cluster_replicas(js, r->g, r->as->peers, r->as->npeers, reps, rep_ptrs);
    cluster.replicas = rep_ptrs;
    jr_move_info move;
    if (mc && jr__meta_consumer_busy(mc)) { /* a peer change in progress */
        jr__move_mark_leaving(reps, cluster.nreplicas, mc->peers, mc->npeers);
        jr__move_info_fill(mc->peers, mc->npeers, mc->origin ? mc->origin->peers : NULL,
                           mc->origin ? mc->origin->npeers : 0, &r->note, &move);
        cluster.move = &move;
    }
    in.cluster = &cluster;
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    int rc = jr__cinfo_encode(b, &in);
    jr__route_reply(js, rt, rc, rc ? NULL : b->data, rc ? 0 : b->len);
}

void jr__consumer_exec(jr__js *js, const jr__route *rt, const uint8_t *p, size_t len)
{
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    uint8_t sub = jr__rd_u8(&rd);
    uint64_t group = jr__rd_u64(&rd);
    if (rd.err || sub < JR__CSUB_INFO || sub > JR__CSUB_UNPIN) {
        static const char why[] = "malformed consumer request";
        jr__route_reply(js, rt, JR_EINVAL, why, sizeof why - 1);
        return;
    }
    jr__crep *r = jr__crep_find(js, group);
    if (!r || !jr__crep_is_leader(r) || !r->lead) {
        not_leader(js, rt, group);
        return;
    }
    switch (sub) {
    case JR__CSUB_INFO:
        exec_info(js, r, rt);
        break;
    case JR__CSUB_FETCH:
        exec_fetch(js, r, rt, &rd);
        break;
    case JR__CSUB_RESET:
        exec_reset(js, r, rt, &rd);
        break;
    case JR__CSUB_UNPIN: {
        size_t n;
        const uint8_t *g = jr__rd_bytes(&rd, &n, JR__GROUP_NAME_MAX);
        const jr_consumer_config *cfg = &r->as->cfg->c;
        int known = 0;
        for (size_t i = 0; g && i < cfg->npriority_groups; i++)
            known |=
                strlen(cfg->priority_groups[i]) == n && memcmp(cfg->priority_groups[i], g, n) == 0;
        if (rd.err || jr__rd_left(&rd) || !known) {
            static const char why[] = "consumer does not have this priority group";
            jr__route_reply(js, rt, JR_ENOTFOUND, why, sizeof why - 1);
            break;
        }
        if (r->lead->pin[0]) {
            r->lead->pin[0] = 0;
            jr__clead_advise_pin(r, JR_ADVISORY_UNPINNED, first_group(cfg), "admin");
            jr__clead_dirty(r); /* a standby may be pinned now */
        }
        jr__route_reply(js, rt, 0, NULL, 0);
        break;
    }
    case JR__CSUB_STEPDOWN: {
        size_t n;
        const uint8_t *peer = jr__rd_bytes(&rd, &n, JR__META_NAME_MAX);
        if (rd.err || jr__rd_left(&rd)) {
            static const char why[] = "malformed stepdown";
            jr__route_reply(js, rt, JR_EINVAL, why, sizeof why - 1);
            break;
        }
        jr__stepdown_exec(js, r->g, rt, (const char *)peer, n);
        break;
    }
    default:
        exec_ack(js, r, rt, &rd);
        break;
    }
}
