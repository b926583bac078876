/*
 * retention — interest and work-queue retention (JetStream 2.11's rule: removals go through the
 * stream's log, so every replica removes the same messages).
 *
 * Interest and work-queue streams have every consumer on every stream peer (their replica
 * counts are equal: consumer/config.h), so the server leading such a stream holds a replica of
 * each of its consumers and decides from their replicated states whether any consumer still
 * needs a message: its filters match the subject, and the message is above its ack floor and
 * either pending or not yet delivered. One that nobody needs is removed by a REMOVE op the
 * stream's leader logs. The decision runs when a consumer replica on the leader's server
 * applies acknowledgements (whichever consumer is the last to have acknowledged a message
 * there triggers its removal), and as a sweep over the whole stream when a server starts
 * leading it (acknowledgements applied while another server led) and when a consumer goes away
 * or changes its filters. A consumer whose replica this server lacks counts as needing
 * everything its filters match, so nothing is removed on a guess.
 *
 * Interest streams store only messages some consumer's filters match: the leader marks a
 * publish nobody matches NO_INTEREST (stream/op.h), which takes a seq and stores nothing.
 */
#include <string.h>

#include "js/js.h"
#include "util/subject.h"

int jr__retention_no_interest(jr__js *js, const jr__meta_stream *s, const char *subject, size_t len)
{
    (void)js;
    char subj[JR__SUBJECT_MAX + 1];
    if (len > JR__SUBJECT_MAX) return 0;
    memcpy(subj, subject, len);
    subj[len] = 0;
    for (size_t i = 0; i < s->nconsumers; i++)
        if (jr__consumer_filter_matches(&s->consumers[i]->cfg->c, subj)) return 0;
    return 1;
}

/* 1 if consumer c still needs message m. */
static int needed(jr__js *js, const jr__meta_consumer *c, const jr__store_msg *m, const char *subj)
{
    if (!jr__consumer_filter_matches(&c->cfg->c, subj)) return 0;
    jr__crep *cr = jr__crep_find(js, c->group);
    if (!cr || cr->failed) return 1;
    jr__cseqs floor;
    jr__cstate_ack_floor(&cr->st, &floor);
    if (m->seq <= floor.stream_seq) return 0;
    if (jr__cstate_pending_get(&cr->st, m->seq, NULL, NULL, NULL) == 0) return 1;
    return m->seq > jr__cstate_delivered(&cr->st)->stream_seq;
}

/* Stages REMOVE of [from, to]. */
static void remove_run(jr__srep *r, uint64_t from, uint64_t to)
{
    jr__stream_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__OP_REMOVE;
    op.u.remove.from = from;
    op.u.remove.to = to;
    if (jr__srep_stage_internal(r, &op) != 0 && !r->sweep_next)
        r->sweep_next = from; /* no memory: the leader's sweep comes back for them */
}

/* Checks the live messages of [from, to] (at most max of them) and removes the runs nobody
 * needs. Returns the seq after the last one checked (to + 1 when all were). */
static uint64_t check(jr__srep *r, const jr__meta_stream *s, uint64_t from, uint64_t to, size_t max)
{
    jr__js *js = r->js;
    jr__store *st = jr__stream_fsm_store(r->fsm);
    uint64_t run_from = 0, run_to = 0, q = from;
    jr__store_msg m;
    for (size_t k = 0; k < max && q <= to && jr__store_next(st, q, NULL, 0, &m) == 0; k++) {
        if (m.seq > to) break;
        q = m.seq + 1;
        char subj[JR__SUBJECT_MAX + 1];
        size_t n = m.subject_len < JR__SUBJECT_MAX ? m.subject_len : JR__SUBJECT_MAX;
        memcpy(subj, m.subject, n);
        subj[n] = 0;
        int keep = 0;
        for (size_t i = 0; i < s->nconsumers && !keep; i++)
            keep = needed(js, s->consumers[i], &m, subj);
        if (keep) {
            if (run_from) remove_run(r, run_from, run_to);
            run_from = 0;
        } else {
            if (!run_from) run_from = m.seq;
            run_to = m.seq;
        }
    }
    if (run_from) remove_run(r, run_from, run_to);
    return q > to || jr__store_next(st, q, NULL, 0, &m) != 0 || m.seq > to ? to + 1 : q;
}

void jr__retention_acked(jr__js *js, uint64_t stream_group, uint64_t from, uint64_t to)
{
    jr__srep *r = jr__srep_find(js, stream_group);
    if (!r || r->failed || r->cu || !jr__srep_is_leader(r)) return;
    if (r->as->cfg->c.retention == JR_RETAIN_LIMITS) return;
    const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, stream_group);
    if (!s || !from || to < from) return;
    uint64_t next = check(r, s, from, to, SIZE_MAX);
    (void)next;
}

uint64_t jr__retention_sweep(jr__srep *r, uint64_t from, size_t max)
{
    jr__js *js = r->js;
    if (r->as->cfg->c.retention == JR_RETAIN_LIMITS) return 0;
    const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, r->group);
    if (!s) return 0;
    uint64_t next = check(r, s, from, UINT64_MAX - 1, max);
    return next >= UINT64_MAX - 1 ? 0 : next;
}

void jr__retention_recheck(jr__js *js, uint64_t stream_group)
{
    jr__srep *r = jr__srep_find(js, stream_group);
    if (!r || r->as->cfg->c.retention == JR_RETAIN_LIMITS || !jr__srep_is_leader(r)) return;
    r->sweep_next = 1;
    jr__srep_due(r, jr__node_now(js->n));
}
