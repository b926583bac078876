/*
 * history.c — the recorded history of a run: every client operation (invocation and
 * completion), every delivery a fetch handed to a client, every nemesis event; the violations
 * the checkers found; the history as JSON lines (docs/testing.md, "History format") and the
 * minimized history printed for a failure.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jsim.h"

const char *const op_names[OP_NKINDS] = {"publish",
                                         "fetch",
                                         "ack",
                                         "msg_delete",
                                         "purge",
                                         "stream_add",
                                         "stream_update",
                                         "stream_delete",
                                         "consumer_add",
                                         "consumer_update",
                                         "consumer_delete",
                                         "stream_stepdown",
                                         "consumer_stepdown",
                                         "meta_stepdown",
                                         "server_evacuate",
                                         "server_evacuate_cancel",
                                         "server_remove"};

static const char *const ack_names[] = {"ack", "nak", "progress", "term"};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t c = *cap ? *cap * 2 : 256;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    if (!q) {
        fprintf(stderr, "jetraft-sim: out of memory\n");
        exit(3);
    }
    *cap = c;
    return q;
}

/* A JSON string of s (quoted, escaped) into f. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

uint32_t op_new(world *w, int kind, int pr, unsigned node, const char *stream, const char *cname)
{
    w->ops = grow(w->ops, &w->capops, w->nops + 1, sizeof *w->ops);
    op *o = &w->ops[w->nops];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->proc = pr;
    o->node = node;
    snprintf(o->stream, sizeof o->stream, "%s", stream ? stream : "");
    snprintf(o->consumer, sizeof o->consumer, "%s", cname ? cname : "");
    o->invoke_ns = now_ns(w);
    o->exp_last = JR_SEQ_NONE;
    o->cons = -1;
    return (uint32_t)w->nops++;
}

void op_done(world *w, uint32_t id, int status, const char *msg)
{
    op *o = &w->ops[id];
    if (o->done) {
        violation(w, "callback-once", o->stream, -1, 0, -1, "op %u (%s) completed twice", id,
                  op_names[o->kind]);
        return;
    }
    o->done = 1;
    o->status = status;
    o->complete_ns = now_ns(w);
    snprintf(o->msg, sizeof o->msg, "%s", msg ? msg : "");
}

/* Which failures are definite (nothing took effect) and which leave the outcome unknown: the
 * contract of jetraft/stream.h ("Contract shared by every request function"). */
int op_outcome(const op *o)
{
    if (!o->done) return OUT_PENDING;
    switch (o->status) {
    case 0:
        return OUT_OK;
    case JR_ETIMEDOUT:
    case JR_ELEADERLOST:
    case JR_ECLOSED:
    case JR_ECANCELED:
    case JR_ENOMEM:
    case JR_EIO:
    case JR_ENOSPC:
    case JR_EREMOVED: /* the server learnt of its removal with the request in flight */
        return OUT_UNKNOWN;
    default:
        return OUT_FAIL;
    }
}

uint32_t value_new(world *w, int ds, int pr, unsigned subj, int msg_id)
{
    w->vals = grow(w->vals, &w->capvals, w->nvals + 1, sizeof *w->vals);
    value *v = &w->vals[w->nvals];
    memset(v, 0, sizeof *v);
    v->ds = ds;
    v->proc = pr;
    v->counter = pr >= 0 ? w->procs[pr].counter++ : 0;
    v->subj = subj;
    v->msg_id = msg_id;
    v->first_invoke_ns = now_ns(w);
    return (uint32_t)w->nvals++;
}

size_t payload_make(const world *w, uint32_t vid, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "v%u.", vid);
    /* a length of its own, from its id */
    size_t pad = 16 + (vid * 2654435761u) % (w->big ? PAYLOAD_BIG_MAX - 16 : 160);
    while (len < pad && len < cap - 1) buf[len] = (char)('a' + (len + vid) % 26), len++;
    return len;
}

int64_t payload_value(world *w, const void *data, size_t len)
{
    const char *p = data;
    if (!p || len < 2 || p[0] != 'v') return -1;
    uint64_t v = 0;
    size_t i = 1;
    for (; i < len && p[i] >= '0' && p[i] <= '9'; i++) v = v * 10 + (uint64_t)(p[i] - '0');
    if (i == 1 || v >= w->nvals) return -1;
    /* every byte must be the value's: a damaged payload is not the value */
    static char want[PAYLOAD_BIG_MAX]; /* the simulation runs on one thread */
    size_t n = payload_make(w, (uint32_t)v, want, sizeof want);
    if (n != len || memcmp(want, data, len) != 0) return -1;
    return (int64_t)v;
}

void deliv_add(world *w, uint32_t fetch, int cons, const jr_consumer_msg *m)
{
    w->dels = grow(w->dels, &w->capdels, w->ndels + 1, sizeof *w->dels);
    deliv *d = &w->dels[w->ndels++];
    d->fetch = fetch;
    d->cons = cons;
    d->sseq = m->stream_seq;
    d->cseq = m->consumer_seq;
    d->count = m->delivered;
    d->value = payload_value(w, m->data, m->len);
    d->ns = now_ns(w);
    if (w->hist)
        fprintf(w->hist,
                "{\"t\":%llu,\"ev\":\"deliver\",\"op\":%u,\"stream\":\"%s\",\"consumer\":\"%s\","
                "\"sseq\":%llu,\"cseq\":%llu,\"count\":%u,\"value\":%lld}\n",
                (unsigned long long)(d->ns - w->t0), fetch, w->ds[w->cons[cons].ds].name,
                w->cons[cons].name, (unsigned long long)d->sseq, (unsigned long long)d->cseq,
                d->count, (long long)d->value);
}

void nem_note(world *w, const char *fmt, ...)
{
    w->nems = grow(w->nems, &w->capnems, w->nnems + 1, sizeof *w->nems);
    nem *e = &w->nems[w->nnems++];
    e->ns = now_ns(w);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->what, sizeof e->what, fmt, ap);
    va_end(ap);
    if (w->hist) {
        fprintf(w->hist,
                "{\"t\":%llu,\"ev\":\"nemesis\",\"what\":", (unsigned long long)(e->ns - w->t0));
        json_str(w->hist, e->what);
        fputs("}\n", w->hist);
    }
    if (w->verbose) fprintf(stderr, "[%9.3f] nemesis: %s\n", rel_s(w, e->ns), e->what);
}

void violation(world *w, const char *checker, const char *stream, int64_t val, uint64_t seq,
               int cons, const char *fmt, ...)
{
    int waived = 0;
    if (w->waive) {
        char buf[256];
        snprintf(buf, sizeof buf, ",%s,", w->waive);
        char key[40];
        snprintf(key, sizeof key, ",%s,", checker);
        waived = strstr(buf, key) != NULL;
    }
    w->nviol_total++;
    w->nwaived += (unsigned)waived;
    if (w->nviol >= MAX_VIOL) return;
    viol *v = &w->viol[w->nviol++];
    v->waived = waived;
    snprintf(v->checker, sizeof v->checker, "%s", checker);
    snprintf(v->stream, sizeof v->stream, "%s", stream ? stream : "");
    v->value = val;
    v->seq = seq;
    v->cons = cons;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->text, sizeof v->text, fmt, ap);
    va_end(ap);
    if (w->hist) {
        fprintf(w->hist, "{\"t\":%llu,\"ev\":\"violation\",\"checker\":\"%s\",\"text\":",
                (unsigned long long)(now_ns(w) - w->t0), checker);
        json_str(w->hist, v->text);
        fputs("}\n", w->hist);
    }
}

static const char *ev_of(const op *o)
{
    switch (op_outcome(o)) {
    case OUT_OK:
        return "ok";
    case OUT_FAIL:
        return "fail";
    default:
        return "info";
    }
}

void history_write_op(world *w, uint32_t id, int completion)
{
    if (!w->hist) return;
    FILE *f = w->hist;
    const op *o = &w->ops[id];
    fprintf(f, "{\"t\":%llu,\"ev\":\"%s\",\"op\":%u,\"f\":\"%s\",\"proc\":%d,\"node\":\"n%u\"",
            (unsigned long long)((completion ? o->complete_ns : o->invoke_ns) - w->t0),
            completion ? ev_of(o) : "invoke", id, op_names[o->kind], o->proc, o->node);
    if (o->stream[0]) fprintf(f, ",\"stream\":\"%s\"", o->stream);
    if (o->consumer[0]) fprintf(f, ",\"consumer\":\"%s\"", o->consumer);
    switch (o->kind) {
    case OP_PUBLISH:
        fprintf(f, ",\"value\":%u,\"msg_id\":%s", o->value, o->msg_id ? "true" : "false");
        if (o->exp_last != JR_SEQ_NONE)
            fprintf(f, ",\"expected_last_seq\":%llu", (unsigned long long)o->exp_last);
        if (o->exp_wrong_stream) fputs(",\"expected_stream_wrong\":true", f);
        if (completion)
            fprintf(f, ",\"seq\":%llu,\"duplicate\":%s", (unsigned long long)o->seq,
                    o->duplicate ? "true" : "false");
        break;
    case OP_FETCH:
        fprintf(f, ",\"batch\":%lld", (long long)o->batch);
        if (completion) fprintf(f, ",\"received\":%u,\"end\":%d", o->received, o->end_code);
        break;
    case OP_ACK:
        fprintf(f, ",\"kind\":\"%s\",\"sseq\":%llu,\"count\":%u,\"confirmed\":%s",
                ack_names[o->ack_kind & 3], (unsigned long long)o->seq, o->dcount,
                o->confirmed ? "true" : "false");
        break;
    case OP_MSG_DELETE:
    case OP_PURGE:
        fprintf(f, ",\"seq\":%llu", (unsigned long long)o->seq);
        break;
    case OP_STREAM_ADD:
    case OP_STREAM_UPDATE:
        fprintf(f, ",\"replicas\":%d", o->replicas);
        break;
    default:
        break;
    }
    if (completion) {
        fprintf(f, ",\"status\":\"%s\",\"msg\":", o->status ? jr_err_name(o->status) : "OK");
        json_str(f, o->msg);
    }
    fputs("}\n", f);
}

/* Does op o touch what violation v is about? */
static int touches(world *w, const op *o, const viol *v)
{
    if (v->value >= 0 && o->kind == OP_PUBLISH && (int64_t)o->value == v->value) return 1;
    if (v->stream[0] && strcmp(o->stream, v->stream) != 0) return 0;
    if (v->seq && (o->kind == OP_MSG_DELETE || o->kind == OP_PURGE)) return 1;
    if (v->seq && o->kind == OP_ACK && o->seq == v->seq) return 1;
    if (v->seq && o->kind == OP_PUBLISH && o->done && o->seq == v->seq) return 1;
    if (v->cons >= 0 && o->consumer[0] && !strcmp(o->consumer, w->cons[v->cons].name) &&
        o->kind != OP_FETCH && o->kind != OP_ACK)
        return 1;
    return o->kind >= OP_STREAM_ADD && o->kind != OP_CONSUMER_ADD &&
           o->kind != OP_CONSUMER_UPDATE && o->kind != OP_CONSUMER_DELETE;
}

static void print_op(world *w, FILE *out, uint32_t id)
{
    const op *o = &w->ops[id];
    fprintf(out, "    [%8.3f] op %u %s via n%u", rel_s(w, o->invoke_ns), id, op_names[o->kind],
            o->node);
    if (o->stream[0]) fprintf(out, " %s", o->stream);
    if (o->consumer[0]) fprintf(out, "/%s", o->consumer);
    if (o->kind == OP_PUBLISH)
        fprintf(out, " value v%u (proc %d)%s", o->value, o->proc, o->msg_id ? " msg-id" : "");
    if (o->kind == OP_ACK)
        fprintf(out, " %s sseq %llu count %u%s", ack_names[o->ack_kind & 3],
                (unsigned long long)o->seq, o->dcount, o->confirmed ? " confirmed" : "");
    if (o->kind == OP_MSG_DELETE || o->kind == OP_PURGE)
        fprintf(out, " seq %llu", (unsigned long long)o->seq);
    if (o->kind == OP_STREAM_UPDATE || o->kind == OP_STREAM_ADD) fprintf(out, " R%d", o->replicas);
    if (!o->done) {
        fprintf(out, " -> (never completed)\n");
        return;
    }
    fprintf(out, " -> [%8.3f] %s", rel_s(w, o->complete_ns),
            o->status ? jr_err_name(o->status) : "OK");
    if (o->kind == OP_PUBLISH && o->status == 0)
        fprintf(out, " seq %llu%s", (unsigned long long)o->seq, o->duplicate ? " duplicate" : "");
    if (o->msg[0]) fprintf(out, " \"%s\"", o->msg);
    fputc('\n', out);
}

void history_minimized(world *w, FILE *out)
{
    if (!w->nviol) return;
    const viol *v = &w->viol[0];
    fprintf(out, "  minimized history (operations touching %s%s",
            v->stream[0] ? "stream " : "the cluster", v->stream);
    if (v->value >= 0) fprintf(out, ", value v%lld", (long long)v->value);
    if (v->seq) fprintf(out, ", seq %llu", (unsigned long long)v->seq);
    if (v->cons >= 0) fprintf(out, ", consumer %s", w->cons[v->cons].name);
    fprintf(out, "; admin operations and nemesis events in between):\n");
    size_t printed = 0, ni = 0;
    for (uint32_t id = 0; id < w->nops && printed < 200; id++) {
        const op *o = &w->ops[id];
        if (!touches(w, o, v)) continue;
        while (ni < w->nnems && w->nems[ni].ns <= o->invoke_ns && printed < 200) {
            fprintf(out, "    [%8.3f] nemesis: %s\n", rel_s(w, w->nems[ni].ns), w->nems[ni].what);
            ni++;
            printed++;
        }
        print_op(w, out, id);
        printed++;
    }
    /* deliveries of the seq or value */
    for (size_t i = 0; i < w->ndels && printed < 260; i++) {
        const deliv *d = &w->dels[i];
        if (v->cons >= 0 && d->cons != v->cons) continue;
        if ((v->seq && d->sseq == v->seq && !strcmp(w->ds[w->cons[d->cons].ds].name, v->stream)) ||
            (v->value >= 0 && d->value == v->value)) {
            fprintf(out,
                    "    [%8.3f] delivered by fetch op %u (issued %.3f): %s sseq %llu cseq %llu "
                    "count %u value v%lld\n",
                    rel_s(w, d->ns), d->fetch, rel_s(w, w->ops[d->fetch].invoke_ns),
                    w->cons[d->cons].name, (unsigned long long)d->sseq, (unsigned long long)d->cseq,
                    d->count, (long long)d->value);
            printed++;
        }
    }
    while (ni < w->nnems && printed < 300) {
        fprintf(out, "    [%8.3f] nemesis: %s\n", rel_s(w, w->nems[ni].ns), w->nems[ni].what);
        ni++;
        printed++;
    }
}

void history_free(world *w)
{
    free(w->ops);
    free(w->vals);
    free(w->dels);
    free(w->nems);
    free(w->acks);
    w->ops = NULL;
    w->vals = NULL;
    w->dels = NULL;
    w->nems = NULL;
    w->acks = NULL;
}
