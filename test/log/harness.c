/* harness — reference model and replay collector for the WAL tests (see harness.h). */
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void h_state_init(h_state *s)
{
    memset(s, 0, sizeof *s);
}

static void group_clear(h_group *g)
{
    for (size_t i = 0; i < g->n; i++) free(g->e[i].data);
    g->n = 0;
}

void h_state_free(h_state *s)
{
    for (size_t i = 0; i < s->n; i++) {
        group_clear(&s->g[i]);
        free(s->g[i].e);
    }
    free(s->g);
    memset(s, 0, sizeof *s);
}

static void push_ent(h_group *g, const h_ent *e)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 16;
        g->e = realloc(g->e, g->cap * sizeof *g->e);
    }
    h_ent *d = &g->e[g->n++];
    *d = *e;
    d->data = malloc(e->len ? e->len : 1);
    if (e->len) memcpy(d->data, e->data, e->len);
}

void h_state_copy(h_state *dst, const h_state *src)
{
    h_state_init(dst);
    for (size_t i = 0; i < src->n; i++) {
        h_group *g = h_state_group(dst, src->g[i].id, 1);
        h_ent *keep = g->e;
        size_t cap = g->cap;
        *g = src->g[i];
        g->e = keep;
        g->cap = cap;
        g->n = 0;
        for (size_t k = 0; k < src->g[i].n; k++) push_ent(g, &src->g[i].e[k]);
    }
}

h_group *h_state_group(h_state *s, uint64_t id, int create)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->g[i].id == id) return &s->g[i];
    if (!create) return NULL;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->g = realloc(s->g, s->cap * sizeof *s->g);
    }
    h_group *g = &s->g[s->n++];
    memset(g, 0, sizeof *g);
    g->id = id;
    return g;
}

static uint64_t last_index(const h_group *g)
{
    if (g->n) return g->e[g->n - 1].index;
    return g->has_compact ? g->cidx : 0;
}

void h_apply(h_state *s, const h_op *op)
{
    h_group *g = h_state_group(s, op->group, 1);
    switch (op->kind) {
    case H_ENTRY: {
        if (g->has_compact && op->e.index <= g->cidx) break;
        g->live = 1;
        while (g->n && g->e[g->n - 1].index >= op->e.index) {
            g->n--;
            free(g->e[g->n].data);
        }
        push_ent(g, &op->e);
        break;
    }
    case H_HS:
        g->live = 1;
        g->hs = op->hs;
        g->has_hs = 1;
        break;
    case H_COMPACT: {
        g->live = 1;
        if (g->has_compact && op->cidx <= g->cidx) break;
        size_t k = 0;
        while (k < g->n && g->e[k].index <= op->cidx) free(g->e[k++].data);
        if (k) memmove(g->e, g->e + k, (g->n - k) * sizeof *g->e);
        g->n -= k;
        g->cidx = op->cidx;
        g->cterm = op->cterm;
        g->has_compact = 1;
        break;
    }
    case H_TRUNCATE:
        /* the WAL writes nothing for a group with no record in its current incarnation; a
         * truncation changes nothing else, so the model needs no such case */
        while (g->n && g->e[g->n - 1].index >= op->from) {
            g->n--;
            free(g->e[g->n].data);
        }
        break;
    case H_DROP:
        group_clear(g);
        g->live = 0;
        g->has_hs = g->has_compact = 0;
        g->cidx = g->cterm = 0;
        memset(&g->hs, 0, sizeof g->hs);
        break;
    }
    (void)last_index;
}

int h_stage(jr__wal *w, const h_op *op)
{
    switch (op->kind) {
    case H_ENTRY: {
        jr__entry e = {op->e.term, op->e.index, op->e.type, op->e.len, op->e.data};
        return jr__wal_append(w, op->group, &e);
    }
    case H_HS:
        return jr__wal_hardstate(w, op->group, &op->hs);
    case H_COMPACT:
        return jr__wal_compact(w, op->group, op->cidx, op->cterm);
    case H_DROP:
        return jr__wal_drop(w, op->group);
    case H_TRUNCATE:
        return jr__wal_truncate(w, op->group, op->from);
    }
    return JR_EINVAL;
}

void h_op_free(h_op *op)
{
    if (op->kind == H_ENTRY) free(op->e.data);
    op->e.data = NULL;
}

/* --- collector ------------------------------------------------------------------------------*/
static int c_entry(void *ctx, uint64_t group, const jr__entry *e)
{
    h_group *g = h_state_group(ctx, group, 1);
    uint64_t want = g->n ? g->e[g->n - 1].index + 1 : (g->has_compact ? g->cidx + 1 : 1);
    if (e->index != want) g->order_errors++;
    h_ent he = {e->term, e->index, e->type, e->len, (uint8_t *)e->data};
    push_ent(g, &he);
    g->live = 1;
    return 0;
}

static int c_hs(void *ctx, uint64_t group, const jr__hardstate *hs)
{
    h_group *g = h_state_group(ctx, group, 1);
    g->hs = *hs;
    g->has_hs = 1;
    g->live = 1;
    return 0;
}

static int c_compact(void *ctx, uint64_t group, uint64_t index, uint64_t term)
{
    h_group *g = h_state_group(ctx, group, 1);
    if (g->n) g->order_errors++; /* markers come before entries */
    g->cidx = index;
    g->cterm = term;
    g->has_compact = 1;
    g->live = 1;
    return 0;
}

static int c_drop(void *ctx, uint64_t group)
{
    h_group *g = h_state_group(ctx, group, 1);
    g->dropped = 1;
    return 0;
}

static int c_damaged(void *ctx, uint64_t group, const char *why)
{
    h_group *g = h_state_group(ctx, group, 1);
    g->damaged = 1;
    snprintf(g->why, sizeof g->why, "%s", why ? why : "");
    return 0;
}

/* Applies the truncation as a raw-order consumer would, counting what it had to drop. */
static int c_truncate(void *ctx, uint64_t group, uint64_t from)
{
    h_group *g = h_state_group(ctx, group, 1);
    if (from == 0) g->order_errors++;
    g->truncates++;
    while (g->n && g->e[g->n - 1].index >= from) {
        g->n--;
        free(g->e[g->n].data);
        g->trunc_removed++;
    }
    return 0;
}

jr__wal_replay h_collector(h_state *s)
{
    jr__wal_replay rp = {s, c_entry, c_hs, c_compact, c_drop, c_damaged, c_truncate};
    return rp;
}

int h_open(const jr__wal_config *cfg, h_state *got, jr__wal **w)
{
    h_state_init(got);
    jr__wal_replay rp = h_collector(got);
    /* JR_WAL_KEY set: every WAL of the run is encrypted at rest (the same tests, sealed) */
    static const uint8_t key[32] = "harness: JR_WAL_KEY's node key.";
    const char *env = getenv("JR_WAL_KEY");
    if (env && *env && !cfg->key) {
        jr__wal_config sealed = *cfg;
        sealed.key = key;
        return jr__wal_open(&sealed, &rp, w);
    }
    return jr__wal_open(cfg, &rp, w);
}

/* --- comparison -----------------------------------------------------------------------------*/
static int has_data(const h_group *g)
{
    return g->live && (g->n || g->has_hs || g->has_compact);
}

int h_compare(const h_state *want, const h_state *got, char *why, size_t cap)
{
    for (size_t i = 0; i < got->n; i++) {
        const h_group *r = &got->g[i];
        if (r->damaged) {
            snprintf(why, cap, "group %" PRIu64 " reported damaged: %s", r->id, r->why);
            return -1;
        }
        if (r->order_errors) {
            snprintf(why, cap, "group %" PRIu64 ": replay out of order", r->id);
            return -1;
        }
        if (r->trunc_removed) {
            snprintf(why, cap, "group %" PRIu64 ": %d voided entries replayed before a truncation",
                     r->id, r->trunc_removed);
            return -1;
        }
        const h_group *m = h_state_group((h_state *)want, r->id, 0);
        if (has_data(r) && (!m || !has_data(m))) {
            snprintf(why, cap, "group %" PRIu64 " recovered but not in the model", r->id);
            return -1;
        }
    }
    for (size_t i = 0; i < want->n; i++) {
        const h_group *m = &want->g[i];
        if (!has_data(m)) continue;
        const h_group *r = h_state_group((h_state *)got, m->id, 0);
        if (!r || !has_data(r)) {
            snprintf(why, cap, "group %" PRIu64 " missing after recovery", m->id);
            return -1;
        }
        if (m->has_hs != r->has_hs || (m->has_hs && memcmp(&m->hs, &r->hs, sizeof m->hs) != 0)) {
            snprintf(why, cap,
                     "group %" PRIu64 ": hard state differs (term %" PRIu64 " vs %" PRIu64 ")",
                     m->id, m->hs.term, r->hs.term);
            return -1;
        }
        if (m->has_compact != r->has_compact ||
            (m->has_compact && (m->cidx != r->cidx || m->cterm != r->cterm))) {
            snprintf(why, cap, "group %" PRIu64 ": compaction differs (%" PRIu64 " vs %" PRIu64 ")",
                     m->id, m->cidx, r->cidx);
            return -1;
        }
        if (m->n != r->n) {
            snprintf(why, cap, "group %" PRIu64 ": %zu entries expected, %zu recovered", m->id,
                     m->n, r->n);
            return -1;
        }
        for (size_t k = 0; k < m->n; k++) {
            const h_ent *a = &m->e[k], *b = &r->e[k];
            if (a->index != b->index || a->term != b->term || a->type != b->type ||
                a->len != b->len || (a->len && memcmp(a->data, b->data, a->len) != 0)) {
                snprintf(why, cap, "group %" PRIu64 ": entry %" PRIu64 " differs", m->id, a->index);
                return -1;
            }
        }
    }
    return 0;
}
