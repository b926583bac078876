/*
 * check_consumers.c — the consumer checkers, over the deliveries clients saw and the
 * acknowledgements, deletes and purges they were told about:
 *
 *  - at-least-once: after the drain, every live consumer has delivered every message of its
 *    stream's final scan that matches its filter (max_deliver is unlimited, so nothing may be
 *    given up);
 *  - acked-not-redelivered: once a confirmed ACK or TERM of a message completed with status 0,
 *    no fetch issued afterwards delivers it again (a fetch issued earlier may: the delivery can
 *    have been recorded before the ack and still be on its way);
 *  - counts: per message, no delivery count is seen twice, and a later count comes with a
 *    larger consumer seq; no consumer seq is seen twice;
 *  - deleted-not-delivered: once a message delete (or a purge below seq) completed with status
 *    0, no fetch issued afterwards delivers the message;
 *  - delivery-matches: a delivered message is one that was published to the consumer's stream,
 *    matching its filter, at the seq its publish was acknowledged with.
 */
#include <stdlib.h>
#include <string.h>

#include "jsim.h"

static int by_msg(const void *a, const void *b)
{
    const deliv *x = *(deliv *const *)a, *y = *(deliv *const *)b;
    if (x->sseq != y->sseq) return x->sseq < y->sseq ? -1 : 1;
    if (x->count != y->count) return x->count < y->count ? -1 : 1;
    return x->cseq < y->cseq ? -1 : x->cseq > y->cseq;
}

static int by_cseq(const void *a, const void *b)
{
    const deliv *x = *(deliv *const *)a, *y = *(deliv *const *)b;
    return x->cseq < y->cseq ? -1 : x->cseq > y->cseq;
}

static void check_one(world *w, int c)
{
    consumer *cs = &w->cons[c];
    dstream *d = &w->ds[cs->ds];
    size_t m = 0;
    deliv **v = malloc((w->ndels + 1) * sizeof *v);
    if (!v) exit(3);
    for (size_t i = 0; i < w->ndels; i++)
        if (w->dels[i].cons == c) v[m++] = &w->dels[i];

    /* delivery-matches */
    for (size_t i = 0; i < m; i++) {
        const deliv *x = v[i];
        if (x->value < 0) {
            violation(w, "delivery-matches", d->name, -1, x->sseq, c,
                      "%s delivered seq %llu holding a payload no client published", cs->name,
                      (unsigned long long)x->sseq);
            continue;
        }
        const value *val = &w->vals[x->value];
        if (val->ds != cs->ds || (cs->filter >= 0 && (unsigned)cs->filter != val->subj) ||
            (val->ok && val->ok_seq != x->sseq))
            violation(w, "delivery-matches", d->name, x->value, x->sseq, c,
                      "%s delivered v%lld as seq %llu (published to D%d subject %u, acked at "
                      "seq %llu)",
                      cs->name, (long long)x->value, (unsigned long long)x->sseq, val->ds,
                      val->subj, (unsigned long long)val->ok_seq);
    }

    /* counts */
    qsort(v, m, sizeof *v, by_msg);
    for (size_t i = 1; i < m; i++) {
        const deliv *a = v[i - 1], *b = v[i];
        if (a->sseq != b->sseq) continue;
        if (a->count == b->count)
            violation(w, "counts", d->name, b->value, b->sseq, c,
                      "%s delivered seq %llu twice with delivery count %u (consumer seqs %llu "
                      "and %llu)",
                      cs->name, (unsigned long long)b->sseq, b->count, (unsigned long long)a->cseq,
                      (unsigned long long)b->cseq);
        else if (a->cseq >= b->cseq)
            violation(w, "counts", d->name, b->value, b->sseq, c,
                      "%s delivered seq %llu with count %u at consumer seq %llu, and count %u "
                      "at consumer seq %llu",
                      cs->name, (unsigned long long)b->sseq, a->count, (unsigned long long)a->cseq,
                      b->count, (unsigned long long)b->cseq);
    }
    qsort(v, m, sizeof *v, by_cseq);
    for (size_t i = 1; i < m; i++)
        if (v[i - 1]->cseq == v[i]->cseq)
            violation(w, "counts", d->name, v[i]->value, v[i]->sseq, c,
                      "%s used consumer seq %llu for seq %llu (count %u) and seq %llu (count %u)",
                      cs->name, (unsigned long long)v[i]->cseq, (unsigned long long)v[i - 1]->sseq,
                      v[i - 1]->count, (unsigned long long)v[i]->sseq, v[i]->count);

    /* acked-not-redelivered, deleted-not-delivered: when each seq was last confirmed acked
     * or deleted (the earliest such completion), then one pass over the deliveries */
    uint64_t maxs = 0;
    for (size_t j = 0; j < m; j++)
        if (v[j]->sseq > maxs) maxs = v[j]->sseq;
    uint64_t *acked = malloc((maxs + 1) * sizeof *acked),
             *deleted = malloc((maxs + 1) * sizeof *deleted);
    uint32_t *acked_op = malloc((maxs + 1) * sizeof *acked_op);
    if (!acked || !deleted || !acked_op) exit(3);
    for (uint64_t s = 0; s <= maxs; s++) acked[s] = deleted[s] = UINT64_MAX;
    uint64_t purge_floor = 0, purge_ns = UINT64_MAX;
    for (size_t i = 0; i < w->nops; i++) {
        const op *o = &w->ops[i];
        if (op_outcome(o) != OUT_OK || strcmp(o->stream, d->name) != 0) continue;
        if (o->kind == OP_ACK && o->cons == c && o->confirmed && o->seq <= maxs &&
            (o->ack_kind == JR_ACK_ACK || o->ack_kind == JR_ACK_TERM) &&
            o->complete_ns < acked[o->seq]) {
            acked[o->seq] = o->complete_ns;
            acked_op[o->seq] = (uint32_t)i;
        } else if (o->kind == OP_MSG_DELETE && o->seq <= maxs && o->complete_ns < deleted[o->seq]) {
            deleted[o->seq] = o->complete_ns;
        } else if (o->kind == OP_PURGE && o->seq > purge_floor) {
            /* purges only grow the floor in this workload's use: the highest one, with the
             * time it completed, covers every lower seq from then on */
            purge_floor = o->seq;
            purge_ns = o->complete_ns;
        }
    }
    for (size_t j = 0; j < m; j++) {
        const deliv *x = v[j];
        uint64_t issued = w->ops[x->fetch].invoke_ns;
        if (issued > acked[x->sseq])
            violation(w, "acked-not-redelivered", d->name, x->value, x->sseq, c,
                      "%s delivered seq %llu (count %u) to fetch op %u issued at %.3f s, after "
                      "its confirmed ack (op %u) completed at %.3f s",
                      cs->name, (unsigned long long)x->sseq, x->count, x->fetch, rel_s(w, issued),
                      acked_op[x->sseq], rel_s(w, acked[x->sseq]));
        else if (issued > deleted[x->sseq] || (x->sseq < purge_floor && issued > purge_ns))
            violation(w, "deleted-not-delivered", d->name, x->value, x->sseq, c,
                      "%s delivered seq %llu (count %u) to fetch op %u issued at %.3f s, after "
                      "the message's delete or purge completed",
                      cs->name, (unsigned long long)x->sseq, x->count, x->fetch, rel_s(w, issued));
    }
    free(acked);
    free(deleted);
    free(acked_op);

    /* at-least-once */
    if (cs->state == 1 && d->at) {
        uint8_t *seen = calloc(d->last_seq + 2, 1);
        if (!seen) exit(3);
        for (size_t i = 0; i < m; i++)
            if (v[i]->sseq <= d->last_seq) seen[v[i]->sseq] = 1;
        uint64_t missing = 0, first = 0;
        for (uint64_t s = 1; s <= d->last_seq; s++) {
            int64_t val = d->at[s - 1];
            if (val < 0 || seen[s]) continue;
            if (cs->filter >= 0 && (unsigned)cs->filter != w->vals[val].subj) continue;
            if (!missing) first = s;
            missing++;
        }
        if (missing)
            violation(w, "at-least-once", d->name, d->at[first - 1], first, c,
                      "%s never delivered %llu messages of its stream (first: seq %llu)", cs->name,
                      (unsigned long long)missing, (unsigned long long)first);
        free(seen);
    }
    free(v);
}

void check_consumers(world *w)
{
    for (unsigned c = 0; c < w->ncons; c++) check_one(w, (int)c);
}
