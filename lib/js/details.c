/*
 * details — a stream's details beyond its info (stream.h jr_stream_subjects, jr_stream_deleted;
 * JetStream's STREAM.INFO with subjects_filter and deleted_details): the subjects matching a
 * filter with their message counts, and the seqs deleted between the first and the last message.
 *
 * Both are reads at the stream's leader, staged as a TICK op like a message get
 * (jr__srep_stage_read) and served from the store once that op is applied, so they see every
 * write acknowledged before they were asked. Each answers one page, bounded in entries and in
 * encoded bytes so that it fits the smallest frame a node accepts.
 *
 * Payloads (JR__RPC_STREAM_ADMIN; varint = canonical LEB128, str = varint length + bytes):
 *   SUBJECTS  varint offset | str filter (a pattern)
 *             → varint total | varint offset | varint n | n × (str subject | varint msgs),
 *               subjects sorted bytewise
 *   DELETED   varint after
 *             → varint total | varint n | n × (varint first | varint last - first),
 *               ranges sorted, disjoint, each first above the previous last
 * The decoders bounds-check every read, refuse trailing bytes, and copy what they return.
 */
#include <stdlib.h>
#include <string.h>

#include "js/js.h"
#include "util/alloc.h"
#include "util/subject.h"

/* What a page's encoding may take: well inside the smallest frame a node accepts (64 KiB). */
#define PAGE_BYTES (32u << 10)

/* Leader side -----------------------------------------------------------------------------*/

typedef struct subj_ref {
    const char *name;
    size_t len;
    uint64_t msgs;
} subj_ref;

typedef struct collect {
    const char *filter;
    size_t flen;
    subj_ref *v;
    size_t n, cap;
    const jr_allocator *alloc;
} collect;

static int take_subject(void *arg, const char *subject, size_t len, uint64_t count)
{
    collect *c = arg;
    if (!jr__subject_match(c->filter, c->flen, subject, len)) return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        subj_ref *v = jr__realloc(c->alloc, c->v, cap * sizeof *v);
        if (!v) return JR_ENOMEM;
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = (subj_ref){subject, len, count};
    return 0;
}

static int by_name(const void *a, const void *b)
{
    const subj_ref *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

void jr__subjects_exec(jr__js *js, jr__srep *r, const jr__route *rt, const char *filter,
                       size_t flen, uint64_t offset)
{
    jr__store *st = jr__stream_fsm_store(r->fsm);
    collect c = {filter, flen, NULL, 0, 0, js->alloc};
    int rc = jr__store_subjects_each(st, take_subject, &c);
    if (rc) {
        jr__free(js->alloc, c.v);
        jr__route_reply(js, rt, rc, NULL, 0);
        return;
    }
    if (c.n) qsort(c.v, c.n, sizeof *c.v, by_name); /* c.v is NULL when nothing matched */
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    jr__buf_varint(b, c.n);
    jr__buf_varint(b, offset);
    size_t from = offset < c.n ? (size_t)offset : c.n, k = 0, bytes = 0;
    while (from + k < c.n && k < JR_SUBJECTS_LIMIT && bytes + c.v[from + k].len + 20 <= PAGE_BYTES)
        bytes += c.v[from + k++].len + 20;
    jr__buf_varint(b, k);
    for (size_t i = from; i < from + k; i++) {
        jr__buf_bytes(b, c.v[i].name, c.v[i].len);
        jr__buf_varint(b, c.v[i].msgs);
    }
    jr__free(js->alloc, c.v);
    jr__route_reply(js, rt, b->err, b->err ? NULL : b->data, b->err ? 0 : b->len);
}

void jr__deleted_exec(jr__js *js, jr__srep *r, const jr__route *rt, uint64_t after)
{
    jr__store *st = jr__stream_fsm_store(r->fsm);
    jr__store_state ss;
    jr__store_state_get(st, &ss);
    size_t n;
    const jr__seq_range *rg = jr__store_deleted(st, &n);
    size_t i = 0, hi = n; /* the first range ending above `after` (they are sorted) */
    while (i < hi) {
        size_t mid = i + (hi - i) / 2;
        if (rg[mid].hi <= after)
            i = mid + 1;
        else
            hi = mid;
    }
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    jr__buf_varint(b, ss.num_deleted);
    size_t k = 0, bytes = 0;
    while (i + k < n && k < JR_DELETED_LIMIT) {
        size_t e = jr__varint_len(rg[i + k].lo) + jr__varint_len(rg[i + k].hi - rg[i + k].lo);
        if (bytes + e > PAGE_BYTES) break;
        bytes += e;
        k++;
    }
    jr__buf_varint(b, k);
    for (size_t j = i; j < i + k; j++) {
        jr__buf_varint(b, rg[j].lo);
        jr__buf_varint(b, rg[j].hi - rg[j].lo);
    }
    jr__route_reply(js, rt, b->err, b->err ? NULL : b->data, b->err ? 0 : b->len);
}

/* Origin side -----------------------------------------------------------------------------*/

int jr__subjects_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__subjects_dec *out)
{
    memset(out, 0, sizeof *out);
    out->alloc = a;
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    uint64_t total = jr__rd_varint(&rd), offset = jr__rd_varint(&rd);
    size_t n = jr__rd_count(&rd, 2);
    if (rd.err || n > total) return JR_ECORRUPT;
    if (n) {
        out->v = jr__calloc(a, n, sizeof *out->v);
        /* the names, NUL-terminated, in one block no larger than the payload plus n */
        out->names = jr__malloc(a, len + n);
        if (!out->v || !out->names) {
            jr__subjects_dec_free(out);
            return JR_ENOMEM;
        }
    }
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        size_t sl;
        const uint8_t *s = jr__rd_bytes(&rd, &sl, JR__OP_SUBJECT_MAX);
        uint64_t msgs = jr__rd_varint(&rd);
        if (rd.err || sl == 0 || memchr(s, 0, sl)) break;
        memcpy(out->names + used, s, sl);
        out->names[used + sl] = 0;
        out->v[i] = (jr_subject_count){out->names + used, msgs};
        used += sl + 1;
    }
    if (rd.err || jr__rd_left(&rd) || (n && !out->v[n - 1].subject)) {
        jr__subjects_dec_free(out);
        return JR_ECORRUPT;
    }
    out->page = (jr_subjects_page){sizeof out->page, total, offset, out->v, n};
    return 0;
}

void jr__subjects_dec_free(jr__subjects_dec *d)
{
    jr__free(d->alloc, d->v);
    jr__free(d->alloc, d->names);
    d->v = NULL;
    d->names = NULL;
}

int jr__deleted_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__deleted_dec *out)
{
    memset(out, 0, sizeof *out);
    out->alloc = a;
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    uint64_t total = jr__rd_varint(&rd);
    size_t n = jr__rd_count(&rd, 2);
    if (rd.err) return JR_ECORRUPT;
    if (n && !(out->v = jr__calloc(a, n, sizeof *out->v))) return JR_ENOMEM;
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t first = jr__rd_varint(&rd), span = jr__rd_varint(&rd);
        if (rd.err || first <= prev || span > UINT64_MAX - first) {
            jr__rd_fail(&rd);
            break;
        }
        out->v[i] = (jr_seq_range){first, first + span};
        prev = first + span;
    }
    if (rd.err || jr__rd_left(&rd)) {
        jr__deleted_dec_free(out);
        return JR_ECORRUPT;
    }
    out->page = (jr_deleted_page){sizeof out->page, total, out->v, n};
    return 0;
}

void jr__deleted_dec_free(jr__deleted_dec *d)
{
    jr__free(d->alloc, d->v);
    d->v = NULL;
}

static const char *why(int rc, const char *what)
{
    return rc == JR_ENOMEM ? "out of memory" : what;
}

void jr__subjects_deliver(jr__req *r, int st, const char *msg)
{
    if (st != 0) {
        r->cb.subjects(r->arg, st, msg, NULL);
        return;
    }
    jr__subjects_dec d;
    int rc = jr__subjects_decode(r->result.data, r->result.len, r->js->alloc, &d);
    r->cb.subjects(r->arg, rc, rc ? why(rc, "subjects do not decode") : "", rc ? NULL : &d.page);
    jr__subjects_dec_free(&d);
}

void jr__deleted_deliver(jr__req *r, int st, const char *msg)
{
    if (st != 0) {
        r->cb.deleted(r->arg, st, msg, NULL);
        return;
    }
    jr__deleted_dec d;
    int rc = jr__deleted_decode(r->result.data, r->result.len, r->js->alloc, &d);
    r->cb.deleted(r->arg, rc, rc ? why(rc, "deleted seqs do not decode") : "", rc ? NULL : &d.page);
    jr__deleted_dec_free(&d);
}
