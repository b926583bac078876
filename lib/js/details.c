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
    qsort(c.v, c.n, sizeof *c.v, by_name);
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
    size_t i = 0;
    while (i < n && rg[i].hi <= after) i++; /* a few thousand at most: the store merges them */
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    jr__buf_varint(b, ss.num_deleted);
    size_t k = n - i < JR_DELETED_LIMIT ? n - i : JR_DELETED_LIMIT;
    jr__buf_varint(b, k);
    for (size_t j = i; j < i + k; j++) {
        jr__buf_varint(b, rg[j].lo);
        jr__buf_varint(b, rg[j].hi - rg[j].lo);
    }
    jr__route_reply(js, rt, b->err, b->err ? NULL : b->data, b->err ? 0 : b->len);
}

/* Origin side -----------------------------------------------------------------------------*/

void jr__subjects_deliver(jr__req *r, int st, const char *msg)
{
    const jr_allocator *a = r->js->alloc;
    if (st != 0) {
        r->cb.subjects(r->arg, st, msg, NULL);
        return;
    }
    jr__rd rd;
    jr__rd_init(&rd, r->result.data, r->result.len);
    uint64_t total = jr__rd_varint(&rd), offset = jr__rd_varint(&rd);
    size_t n = jr__rd_count(&rd, 2);
    jr_subject_count *v = n ? jr__calloc(a, n, sizeof *v) : NULL;
    /* the names, NUL-terminated, in one block no larger than the payload plus n */
    char *names = n ? jr__malloc(a, r->result.len + n) : NULL;
    int rc = n && (!v || !names) ? JR_ENOMEM : 0;
    size_t used = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        size_t len;
        const uint8_t *s = jr__rd_bytes(&rd, &len, JR__OP_SUBJECT_MAX);
        uint64_t msgs = jr__rd_varint(&rd);
        if (rd.err || len == 0 || memchr(s, 0, len)) {
            rc = JR_ECORRUPT;
            break;
        }
        memcpy(names + used, s, len);
        names[used + len] = 0;
        v[i] = (jr_subject_count){names + used, msgs};
        used += len + 1;
    }
    if (!rc && (rd.err || jr__rd_left(&rd) || n > total)) rc = JR_ECORRUPT;
    if (rc) {
        r->cb.subjects(r->arg, rc, rc == JR_ENOMEM ? "out of memory" : "subjects do not decode",
                       NULL);
    } else {
        jr_subjects_page page = {sizeof page, total, offset, v, n};
        r->cb.subjects(r->arg, 0, "", &page);
    }
    jr__free(a, v);
    jr__free(a, names);
}

void jr__deleted_deliver(jr__req *r, int st, const char *msg)
{
    const jr_allocator *a = r->js->alloc;
    if (st != 0) {
        r->cb.deleted(r->arg, st, msg, NULL);
        return;
    }
    jr__rd rd;
    jr__rd_init(&rd, r->result.data, r->result.len);
    uint64_t total = jr__rd_varint(&rd);
    size_t n = jr__rd_count(&rd, 2);
    jr_seq_range *v = n ? jr__calloc(a, n, sizeof *v) : NULL;
    int rc = n && !v ? JR_ENOMEM : 0;
    uint64_t prev = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        uint64_t first = jr__rd_varint(&rd), span = jr__rd_varint(&rd);
        if (rd.err || first <= prev || span > UINT64_MAX - first) {
            rc = JR_ECORRUPT;
            break;
        }
        v[i] = (jr_seq_range){first, first + span};
        prev = first + span;
    }
    if (!rc && (rd.err || jr__rd_left(&rd))) rc = JR_ECORRUPT;
    if (rc) {
        r->cb.deleted(r->arg, rc, rc == JR_ENOMEM ? "out of memory" : "deleted seqs do not decode",
                      NULL);
    } else {
        jr_deleted_page page = {sizeof page, total, v, n};
        r->cb.deleted(r->arg, 0, "", &page);
    }
    jr__free(a, v);
}
