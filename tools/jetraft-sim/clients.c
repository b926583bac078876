/*
 * clients.c — the simulated clients: publisher processes and consumer fetch loops.
 *
 * Publishers (Jepsen's queue workload): process p writes to data stream p % nds, one publish at
 * a time through a random running node, unique values v<id> in invocation order, half of them
 * with a msg id (a publish whose outcome is unknown is sent again with the same id, up to three
 * times), some with expectations: an expected_last_seq guessed from the highest seq seen acked
 * (usually wrong under concurrency: a definite JR_EWRONGLASTSEQ, or stored right after it), an
 * expected_stream naming the right stream or another one (which must never be stored).
 *
 * Fetch loops: each serves one live consumer, one fetch at a time through a random node (random
 * batch, expiry, sometimes no_wait); every delivered message gets, a little later and through a
 * random node, an ACK (confirmed with a callback, or fire and forget), a NAK (at once or
 * delayed), an in-progress followed by an ACK, a TERM, or nothing (left to its ack wait).
 * In the drain after the heal every delivery is ACKed, confirmed, at once.
 */
#include <stdlib.h>
#include <string.h>

#include "jsim.h"

void clients_init(world *w)
{
    for (unsigned p = 0; p < w->nprocs; p++) {
        proc *pr = &w->procs[p];
        memset(pr, 0, sizeof *pr);
        pr->ds = (int)(p % w->nds);
        pr->retry_value = -1;
        pr->next_ns = now_ns(w) + rng_below(&w->r, 50) * MS;
    }
    for (unsigned f = 0; f < MAX_FETCHERS; f++) {
        w->fetchers[f].cons = -1;
        w->fetchers[f].busy = 0;
    }
}

/* Publishers
 * -------------------------------------------------------------------------------------*/

static void pub_cb(void *arg, int status, const jr_pub_ack *ack)
{
    world *w = g_w;
    uint32_t id = (uint32_t)(uintptr_t)arg;
    op *o = &w->ops[id];
    op_done(w, id, status, ack ? ack->msg : "");
    if (ack) {
        o->seq = ack->seq;
        o->duplicate = ack->duplicate;
    }
    history_write_op(w, id, 1);
    value *v = &w->vals[o->value];
    proc *pr = &w->procs[o->proc];
    dstream *d = &w->ds[v->ds];
    pr->busy = 0;
    pr->next_ns = now_ns(w) + rng_below(&w->r, 30) * MS;
    pr->retry_value = -1;
    switch (op_outcome(o)) {
    case OUT_OK:
        if (o->exp_wrong_stream)
            violation(w, "expectations", d->name, o->value, o->seq, -1,
                      "publish of v%u with expected_stream naming another stream was stored at "
                      "seq %llu",
                      o->value, (unsigned long long)o->seq);
        if (o->exp_last != JR_SEQ_NONE && !o->duplicate && o->seq != o->exp_last + 1)
            violation(w, "expectations", d->name, o->value, o->seq, -1,
                      "publish of v%u expecting last seq %llu was stored at seq %llu", o->value,
                      (unsigned long long)o->exp_last, (unsigned long long)o->seq);
        if (!v->ok) {
            v->ok_seq = o->seq;
            v->ok_ns = o->complete_ns;
        } else if (o->seq != v->ok_seq) {
            v->ok_dup_mismatch = 1;
            violation(w, "dedup", d->name, o->value, o->seq, -1,
                      "v%u acknowledged at seq %llu and again at seq %llu", o->value,
                      (unsigned long long)v->ok_seq, (unsigned long long)o->seq);
        }
        v->ok++;
        if (o->seq > d->last_seq_seen) d->last_seq_seen = o->seq;
        if (w->mode == 1) pr->post_ok++;
        break;
    case OUT_UNKNOWN:
        v->unknown++;
        if (v->msg_id && pr->retries < 3 && w->mode != 1) {
            pr->retry_value = o->value;
            pr->retries++;
        }
        break;
    default:
        v->definite++;
        /* an expectation's failure tells the actual last seq */
        if ((status == JR_EWRONGLASTSEQ) && o->seq != JR_SEQ_NONE && o->seq > d->last_seq_seen)
            d->last_seq_seen = o->seq;
        break;
    }
    if (pr->retry_value < 0) pr->retries = 0;
}

int publish_value(world *w, int p, uint32_t vid, unsigned node)
{
    value *v = &w->vals[vid];
    dstream *d = &w->ds[v->ds];
    proc *pr = &w->procs[p];
    char subject[32], msgid[32];
    static char data[PAYLOAD_BIG_MAX]; /* the simulation runs on one thread */
    snprintf(subject, sizeof subject, "d%d.%u", v->ds, v->subj);
    size_t len = payload_make(w, vid, data, sizeof data);
    jr_pub_opts opts;
    jr_pub_opts_init(&opts);
    uint32_t id = op_new(w, OP_PUBLISH, p, node, d->name, NULL);
    op *o = &w->ops[id];
    o->value = vid;
    o->msg_id = v->msg_id;
    if (v->msg_id) {
        snprintf(msgid, sizeof msgid, "m%u", vid);
        opts.msg_id = msgid;
    }
    /* expectations only on a value's first attempt, and not in the plain phase */
    if (v->attempts == 0 && w->mode == 0) {
        uint64_t dice = rng_below(&w->r, 100);
        if (dice < 8) {
            o->exp_last = d->last_seq_seen;
            opts.expected_last_seq = o->exp_last;
        } else if (dice < 11) {
            o->exp_wrong_stream = 1;
            opts.expected_stream = "NOPE";
        } else if (dice < 15) {
            opts.expected_stream = d->name;
        }
    }
    v->attempts++;
    history_write_op(w, id, 0);
    int rc = jr_publish(jr_sim_node(w->sim, node), subject, NULL, 0, data, len, &opts, pub_cb,
                        (void *)(uintptr_t)id);
    pr->busy = 1;
    if (rc != 0) pub_cb((void *)(uintptr_t)id, rc, NULL);
    return rc;
}

static void publishers_step(world *w)
{
    uint64_t now = now_ns(w);
    for (unsigned p = 0; p < w->nprocs; p++) {
        proc *pr = &w->procs[p];
        if (pr->busy || now < pr->next_ns) continue;
        int node = pick_node(w);
        if (node < 0) continue;
        uint32_t vid;
        if (pr->retry_value >= 0) {
            vid = (uint32_t)pr->retry_value;
        } else {
            unsigned subj = (unsigned)rng_below(&w->r, 4);
            vid = value_new(w, pr->ds, (int)p, subj, rng_pct(&w->r, 50));
        }
        publish_value(w, (int)p, vid, (unsigned)node);
    }
}

/* Fetches and acks
 * -------------------------------------------------------------------------------*/

static void queue_ack(world *w, int cons, const jr_consumer_msg *m)
{
    if (!m->ack_token) return;
    if (w->nacks == w->capacks) {
        size_t c = w->capacks ? w->capacks * 2 : 256;
        pending_ack *q = realloc(w->acks, c * sizeof *q);
        if (!q) exit(3);
        w->acks = q;
        w->capacks = c;
    }
    pending_ack *a = &w->acks[w->nacks];
    memset(a, 0, sizeof *a);
    a->cons = cons;
    a->sseq = m->stream_seq;
    a->count = m->delivered;
    snprintf(a->token, sizeof a->token, "%s", m->ack_token);
    if (w->mode == 2) {
        a->kind = JR_ACK_ACK;
        a->confirmed = 1;
        a->at_ns = now_ns(w);
    } else {
        uint64_t dice = rng_below(&w->r, 100);
        a->at_ns = now_ns(w) + rng_below(&w->r, 400) * MS;
        if (dice < 45) {
            a->kind = JR_ACK_ACK;
            a->confirmed = 1;
        } else if (dice < 60) {
            a->kind = JR_ACK_ACK;
        } else if (dice < 70) {
            a->kind = JR_ACK_NAK;
            a->confirmed = rng_pct(&w->r, 50);
            a->delay_ns =
                rng_pct(&w->r, 50) ? 0 : (int64_t)(100 + rng_below(&w->r, 400)) * (int64_t)MS;
        } else if (dice < 80) {
            a->kind = JR_ACK_PROGRESS;
            a->confirmed = rng_pct(&w->r, 50);
        } else if (dice < 85) {
            a->kind = JR_ACK_TERM;
            a->confirmed = 1;
        } else {
            return; /* left to its ack wait */
        }
    }
    w->nacks++;
}

static void fetch_cb(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                     const jr_fetch_end *end)
{
    world *w = g_w;
    uint32_t id = (uint32_t)(uintptr_t)arg;
    op *o = &w->ops[id];
    if (status == 0 && m) {
        if (o->done) {
            violation(w, "callback-once", o->stream, -1, m->stream_seq, o->cons,
                      "fetch op %u delivered a message after its end", id);
            return;
        }
        o->received++;
        deliv_add(w, id, o->cons, m);
        queue_ack(w, o->cons, m);
        return;
    }
    if (status == 0 && !end) return; /* an idle heartbeat */
    op_done(w, id, status, end ? end->text : msg);
    if (end) o->end_code = end->code;
    history_write_op(w, id, 1);
    fetcher *f = &w->fetchers[o->proc];
    f->busy = 0;
    f->next_ns = now_ns(w) + rng_below(&w->r, 50) * MS;
}

static void ack_cb(void *arg, int status, const char *msg)
{
    world *w = g_w;
    uint32_t id = (uint32_t)(uintptr_t)arg;
    op_done(w, id, status, msg);
    history_write_op(w, id, 1);
}

static void send_acks(world *w)
{
    uint64_t now = now_ns(w);
    size_t keep = 0;
    for (size_t i = 0; i < w->nacks; i++) {
        pending_ack *a = &w->acks[i];
        int node = a->at_ns <= now ? pick_node(w) : -1;
        if (node < 0) {
            w->acks[keep++] = *a;
            continue;
        }
        consumer *c = &w->cons[a->cons];
        uint32_t id = op_new(w, OP_ACK, -1, (unsigned)node, w->ds[c->ds].name, c->name);
        op *o = &w->ops[id];
        o->cons = a->cons;
        o->seq = a->sseq;
        o->dcount = a->count;
        o->ack_kind = a->kind;
        o->confirmed = a->confirmed;
        history_write_op(w, id, 0);
        int rc = jr_consumer_ack(jr_sim_node(w->sim, (unsigned)node), a->token, a->kind,
                                 a->delay_ns, a->kind == JR_ACK_TERM ? "jetraft-sim" : NULL,
                                 a->confirmed ? ack_cb : NULL, (void *)(uintptr_t)id);
        if (rc != 0 || !a->confirmed) {
            op_done(w, id, rc, rc ? "" : "fire and forget");
            history_write_op(w, id, 1);
        }
        if (a->kind == JR_ACK_PROGRESS && rc == 0) {
            /* in progress, then done a little later */
            pending_ack next = *a;
            next.kind = JR_ACK_ACK;
            next.confirmed = 1;
            next.at_ns = now + rng_below(&w->r, 300) * MS;
            w->acks[keep++] = next;
        }
    }
    w->nacks = keep;
}

/* A live consumer for fetcher f (keeps its own while live); -1 if none. */
static int fetcher_consumer(world *w, unsigned f)
{
    fetcher *fe = &w->fetchers[f];
    if (w->mode == 2) return f < w->ncons && w->cons[f].state == 1 ? (int)f : -1;
    if (fe->cons >= 0 && w->cons[fe->cons].state == 1) return fe->cons;
    int live[MAX_CONS], m = 0;
    for (unsigned c = 0; c < w->ncons; c++)
        if (w->cons[c].state == 1) live[m++] = (int)c;
    fe->cons = m ? live[rng_below(&w->r, (uint64_t)m)] : -1;
    return fe->cons;
}

static void fetchers_step(world *w)
{
    uint64_t now = now_ns(w);
    unsigned nf = w->mode == 2 ? w->ncons : w->nfetchers;
    for (unsigned f = 0; f < nf; f++) {
        fetcher *fe = &w->fetchers[f];
        if (fe->busy || now < fe->next_ns) continue;
        int c = fetcher_consumer(w, f);
        if (c < 0) continue;
        int node = pick_node(w);
        if (node < 0) continue;
        consumer *cs = &w->cons[c];
        uint32_t id = op_new(w, OP_FETCH, (int)f, (unsigned)node, w->ds[cs->ds].name, cs->name);
        op *o = &w->ops[id];
        o->cons = c;
        jr_fetch_opts opts;
        jr_fetch_opts_init(&opts);
        if (w->mode == 2) {
            opts.batch = 64;
            opts.expires_ns = 500 * (int64_t)MS;
        } else {
            opts.batch = 1 + (int64_t)rng_below(&w->r, 16);
            opts.expires_ns = (int64_t)(100 + rng_below(&w->r, 900)) * (int64_t)MS;
            opts.no_wait = rng_pct(&w->r, 15);
        }
        o->batch = opts.batch;
        history_write_op(w, id, 0);
        fe->busy = 1;
        fe->op = id;
        int rc = jr_consumer_fetch(jr_sim_node(w->sim, (unsigned)node), w->ds[cs->ds].name,
                                   cs->name, &opts, fetch_cb, (void *)(uintptr_t)id);
        if (rc != 0) fetch_cb((void *)(uintptr_t)id, rc, jr_strerror(rc), NULL, NULL);
    }
}

void clients_step(world *w)
{
    if (w->mode != 2) publishers_step(w);
    if (w->mode != 1) fetchers_step(w);
    send_acks(w);
}

int clients_post_publish(world *w, uint32_t count, uint64_t max_ns)
{
    w->mode = 1;
    for (unsigned p = 0; p < w->nprocs; p++) {
        w->procs[p].post_ok = 0;
        w->procs[p].retry_value = -1;
    }
    uint64_t end = now_ns(w) + max_ns;
    for (;;) {
        int all = 1;
        for (unsigned p = 0; p < w->nprocs; p++) all &= w->procs[p].post_ok >= count;
        if (all) break;
        if (now_ns(w) >= end) return JR_ETIMEDOUT;
        clients_step(w);
        jr_sim_run_for(w->sim, 2 * MS);
    }
    /* let the last ones finish (their callbacks may still be on the way) */
    for (unsigned p = 0; p < w->nprocs; p++) w->procs[p].next_ns = UINT64_MAX;
    for (int i = 0; i < 5000; i++) {
        int busy = 0;
        for (unsigned p = 0; p < w->nprocs; p++) busy |= w->procs[p].busy;
        if (!busy) break;
        jr_sim_run_for(w->sim, 2 * MS);
    }
    return 0;
}

/* Does consumer c match the message of value v? */
static int matches(world *w, int c, int64_t v)
{
    const consumer *cs = &w->cons[c];
    if (v < 0) return cs->filter < 0;
    return cs->filter < 0 || (unsigned)cs->filter == w->vals[v].subj;
}

/* 1 once every live consumer delivered every message of its stream's final scan it matches. */
static int drained(world *w)
{
    for (unsigned c = 0; c < w->ncons; c++) {
        consumer *cs = &w->cons[c];
        if (cs->state != 1) continue;
        dstream *d = &w->ds[cs->ds];
        if (!d->at || !d->last_seq) continue;
        uint8_t *seen = calloc(d->last_seq + 1, 1);
        if (!seen) exit(3);
        for (size_t i = 0; i < w->ndels; i++)
            if (w->dels[i].cons == (int)c && w->dels[i].sseq <= d->last_seq)
                seen[w->dels[i].sseq] = 1;
        int ok = 1;
        for (uint64_t s = d->first_seq ? d->first_seq : 1; s <= d->last_seq && ok; s++)
            if (d->at[s - 1] >= 0 && !seen[s] && matches(w, (int)c, d->at[s - 1])) ok = 0;
        free(seen);
        if (!ok) return 0;
    }
    return 1;
}

void clients_drain(world *w, uint64_t max_ns)
{
    w->mode = 2;
    /* The admin process's last operation ends first: a consumer it adds is live (drained, and
     * checked by at-least-once) once its add completes, which may come after the heal. */
    for (int i = 0; i < 30000 && w->admin_busy; i++) jr_sim_run_for(w->sim, 2 * MS);
    for (unsigned f = 0; f < MAX_FETCHERS; f++) w->fetchers[f].next_ns = 0;
    /* acks left over from the faulty phase go out now, as they are */
    uint64_t end = now_ns(w) + max_ns;
    int tick = 0;
    while (now_ns(w) < end) {
        if (++tick % 25 == 0 && drained(w)) break;
        clients_step(w);
        jr_sim_run_for(w->sim, 2 * MS);
    }
    /* let outstanding fetches and confirmed acks end */
    for (unsigned f = 0; f < MAX_FETCHERS; f++) w->fetchers[f].next_ns = UINT64_MAX;
    for (int i = 0; i < 3000; i++) {
        int busy = w->nacks != 0;
        for (unsigned f = 0; f < MAX_FETCHERS; f++) busy |= w->fetchers[f].busy;
        for (size_t j = w->nops; j-- > 0 && !busy && w->nops - j < 4096;) busy |= !w->ops[j].done;
        if (!busy) break;
        send_acks(w);
        jr_sim_run_for(w->sim, 2 * MS);
    }
}
