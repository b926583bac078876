/* harness — see harness.h. */
#include "harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

void h_failf(h_cluster *h, const char *fmt, ...)
{
    if (h->fail[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->fail, sizeof h->fail, fmt, ap);
    va_end(ap);
}

static uint64_t chain_next(uint64_t chain, uint64_t index, const void *data, size_t len)
{
    uint64_t k[2] = {chain, index};
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, k, sizeof k);
    XXH3_64bits_update(&st, data, len);
    return XXH3_64bits_digest(&st);
}

static void fsm_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    h_fsm *f = ctx;
    if (index <= f->last)
        h_failf(f->h, "node %u group %u applied index %llu after %llu", f->node, f->group,
                (unsigned long long)index, (unsigned long long)f->last);
    f->last = index;
    f->chain = chain_next(f->chain, index, data, len);
    f->count++;
}

static int fsm_snapshot(void *ctx, jr_snapshot_writer *w)
{
    h_fsm *f = ctx;
    uint64_t s[3] = {f->last, f->chain, f->count};
    return jr_snapshot_write(w, s, sizeof s);
}

static int fsm_restore(void *ctx, uint64_t index, const void *data, size_t len)
{
    h_fsm *f = ctx;
    uint64_t s[3];
    if (len != sizeof s) {
        h_failf(f->h, "node %u: restore of %zu bytes", f->node, len);
        return JR_ECORRUPT;
    }
    memcpy(s, data, sizeof s);
    if (s[0] > index)
        h_failf(f->h, "node %u: snapshot at %llu holds %llu", f->node, (unsigned long long)index,
                (unsigned long long)s[0]);
    f->last = s[0];
    f->chain = s[1];
    f->count = s[2];
    return 0;
}

static void on_apply(void *arg, unsigned node, uint64_t group, uint64_t index, uint64_t term,
                     const void *data, size_t len)
{
    h_cluster *h = arg;
    if (group < H_GROUP0 || group >= H_GROUP0 + h->ngroups) return;
    h_table *t = &h->table[group - H_GROUP0];
    if (index >= t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (cap <= index) cap *= 2;
        t->applied = realloc(t->applied, cap * sizeof *t->applied);
        memset(t->applied + t->cap, 0, (cap - t->cap) * sizeof *t->applied);
        t->cap = cap;
    }
    uint64_t hash = XXH3_64bits(data, len);
    h_applied *a = &t->applied[index];
    if (!a->set) {
        a->set = 1;
        a->term = term;
        a->hash = hash;
        if (index > t->max_applied) t->max_applied = index;
    } else if (a->term != term || a->hash != hash) {
        h_failf(h,
                "state machine safety: node %u applied index %llu of group %llu in term "
                "%llu, another node applied term %llu there",
                node, (unsigned long long)index, (unsigned long long)group,
                (unsigned long long)term, (unsigned long long)a->term);
    }
}

static int open_groups(h_cluster *h, unsigned i, int join);

int h_open(h_cluster *h, unsigned i)
{
    return open_groups(h, i, 0);
}

int h_join(h_cluster *h, unsigned i)
{
    return open_groups(h, i, 1);
}

static int open_groups(h_cluster *h, unsigned i, int join)
{
    jr_node *n = jr_sim_node(h->sim, i);
    if (!n) return JR_EINVAL;
    const char *voters[H_MAX];
    for (unsigned k = 0; k < h->n; k++) voters[k] = jr_sim_name(h->sim, k);
    for (unsigned k = 0; k < h->ngroups; k++) {
        h_fsm *f = &h->fsm[i][k];
        memset(f, 0, sizeof *f);
        f->h = h;
        f->node = i;
        f->group = k;
        jr_fsm *ops = &h->ops[i][k];
        ops->version = JR_FSM_VERSION;
        ops->ctx = f;
        ops->apply = fsm_apply;
        ops->snapshot = fsm_snapshot;
        ops->restore = fsm_restore;
        jr_group_config gc;
        jr_group_config_init(&gc);
        gc.id = H_GROUP0 + k;
        if (!join) {
            gc.voters = voters;
            gc.nvoters = h->n;
        }
        gc.fsm = ops;
        if (h->snapshot_entries) gc.snapshot_entries = h->snapshot_entries;
        int rc = jr_group_open(n, &gc, &h->g[i][k]);
        if (rc != 0) return rc;
    }
    return 0;
}

int h_new(h_cluster *h, jr_sim_config *cfg, unsigned n, unsigned ngroups, uint64_t snapshot_entries)
{
    memset(h, 0, sizeof *h);
    h->n = n;
    h->ngroups = ngroups;
    h->snapshot_entries = snapshot_entries;
    cfg->nodes = n;
    cfg->arg = h;
    cfg->on_apply = on_apply;
    int rc = jr_sim_new(cfg, &h->sim);
    if (rc != 0) return rc;
    for (unsigned i = 0; i < n; i++) {
        rc = h_open(h, i);
        if (rc != 0) return rc;
    }
    return 0;
}

void h_free(h_cluster *h)
{
    jr_sim_free(h->sim);
    for (unsigned k = 0; k < H_GROUPS; k++) free(h->table[k].applied);
    memset(h->table, 0, sizeof h->table);
    h->sim = NULL;
}

jr_group *h_group(h_cluster *h, unsigned i, unsigned k)
{
    jr_node *n = jr_sim_node(h->sim, i);
    return n ? jr_node_group(n, H_GROUP0 + k) : NULL;
}

int h_leader(h_cluster *h, unsigned k)
{
    int best = -1;
    uint64_t term = 0;
    for (unsigned i = 0; i < h->n; i++) {
        jr_group *g = h_group(h, i, k);
        if (!g) continue;
        jr_group_status st = {.size = sizeof st};
        jr_group_status_get(g, &st);
        if (st.role == JR_LEADER && st.term >= term) {
            best = (int)i;
            term = st.term;
        }
    }
    return best;
}

static int has_leader(void *arg, jr_sim *sim)
{
    (void)sim;
    return h_leader(arg, 0) >= 0;
}

int h_wait_leader(h_cluster *h, uint64_t max_ns)
{
    return jr_sim_run_until(h->sim, has_leader, h, max_ns);
}

int h_start(h_cluster *h, uint64_t seed, unsigned ngroups, uint64_t snapshot_entries,
            void (*configure)(void *arg, unsigned i, jr_node_config *cfg))
{
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.seed = seed;
    cfg.configure = configure;
    int rc = h_new(h, &cfg, 3, ngroups, snapshot_entries);
    if (rc == 0) rc = h_wait_leader(h, 5000 * 1000000ull);
    return rc == 0 ? h_leader(h, 0) : rc;
}

void h_small_segments(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    (void)i;
    cfg->wal_segment_bytes = 16 << 10;
}

void h_propose_fill(h_cluster *h, int l, unsigned count, size_t len, char fill)
{
    char data[1024];
    if (len > sizeof data) len = sizeof data;
    memset(data, fill, len);
    for (unsigned i = 0; i < count; i++) jr_group_propose(h->g[l][0], data, len, NULL, NULL);
}
