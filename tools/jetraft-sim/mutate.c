/*
 * mutate.c — checker self-tests: --mutate KIND changes the recorded history (or the final
 * reads) of a run the way a bug of that kind would show in it, just before the checkers run;
 * the run must then fail. The suite runs every kind (should_fail), so a checker that stops
 * seeing its violation fails the build.
 *
 *   ack-seq    the first acknowledged publish is recorded one seq higher than it was acked
 *   lost       the message of an acknowledged publish is missing from the final reads
 *   definite   a stored message's publishes are recorded as definite failures
 *   redeliver  a confirmed ack is recorded as completed just before a fetch that delivered
 *              its message again
 *   count      a delivery is seen twice (the same delivery count twice)
 */
#include <string.h>

#include "jsim.h"

const char *const mutate_names[] = {"ack-seq", "lost", "definite", "redeliver", "count", NULL};

/* The first acknowledged, stored, not excluded value of a data stream; -1 if none. */
static int64_t acked_value(world *w)
{
    for (size_t v = 0; v < w->nvals; v++) {
        const value *x = &w->vals[v];
        const dstream *d = &w->ds[x->ds];
        if (x->ok && !x->excluded && d->at && x->ok_seq <= d->last_seq &&
            d->at[x->ok_seq - 1] == (int64_t)v)
            return (int64_t)v;
    }
    return -1;
}

int mutate(world *w, const char *kind)
{
    int64_t v = acked_value(w);
    if (!strcmp(kind, "ack-seq") && v >= 0) {
        w->vals[v].ok_seq++;
        return 0;
    }
    if (!strcmp(kind, "lost") && v >= 0) {
        w->ds[w->vals[v].ds].at[w->vals[v].ok_seq - 1] = -1;
        return 0;
    }
    if (!strcmp(kind, "definite") && v >= 0) {
        w->vals[v].ok = 0;
        w->vals[v].unknown = 0;
        w->vals[v].definite = w->vals[v].attempts;
        return 0;
    }
    if (!strcmp(kind, "redeliver") && w->ndels) {
        const deliv *x = &w->dels[w->ndels - 1];
        const consumer *c = &w->cons[x->cons];
        uint32_t id = op_new(w, OP_ACK, -1, 0, w->ds[c->ds].name, c->name);
        op *o = &w->ops[id];
        o->cons = x->cons;
        o->seq = x->sseq;
        o->ack_kind = JR_ACK_ACK;
        o->confirmed = 1;
        o->done = 1;
        o->status = 0;
        o->invoke_ns = o->complete_ns = w->ops[x->fetch].invoke_ns - 1;
        return 0;
    }
    if (!strcmp(kind, "count") && w->ndels) {
        deliv copy = w->dels[w->ndels - 1];
        copy.cseq += 1000000;
        /* deliv_add takes a jr_consumer_msg: append the copy directly */
        if (w->ndels < w->capdels) {
            w->dels[w->ndels++] = copy;
            return 0;
        }
    }
    return JR_ENOTFOUND;
}
