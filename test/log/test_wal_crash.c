/*
 * Crash consistency of the WAL, over many seeds: random appends (with truncations), hard
 * states, compactions (some beyond the log, like a snapshot install), truncation records (bare,
 * ahead of the entries that replace a suffix, and with a marker as a follower's conflicting
 * snapshot install writes them), drops and rotations across several groups, flushed under
 * JR_SYNC_ALWAYS or JR_SYNC_INTERVAL, with crashes (losing unsynced writes, sometimes tearing
 * the last one) at random points and I/O errors injected into flushes. After each recovery the
 * replayed state must equal the model of everything durable plus a prefix (in log order) of
 * what was written but not yet synced: every record whose flush reported durable is present
 * exactly once and in order, and nothing appears that was never written, half-written or
 * superseded. Independently of the model, every entry carries a serial number, and no entry
 * recovered at or above a durable truncation point may be older than that truncation.
 *
 * Seeds: JR_WAL_SEED (first, default 1) and JR_WAL_SEEDS (count, default 2000; the 'soak'
 * suite runs more). A failure prints the seed and how to replay it.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "util/buf.h"
#include "util/rand.h"
#include "vfs/memfs.h"

#define DIR "/node/wal"

typedef struct oplist {
    h_op *v;
    size_t n, cap;
} oplist;

static void ol_push(oplist *l, h_op op)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 32;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = op;
}

static void ol_clear(oplist *l)
{
    for (size_t i = 0; i < l->n; i++) h_op_free(&l->v[i]);
    l->n = 0;
}

static void ol_move(oplist *dst, oplist *src)
{
    for (size_t i = 0; i < src->n; i++) ol_push(dst, src->v[i]);
    src->n = 0;
}

static void ol_apply(h_state *s, const oplist *l, size_t upto)
{
    for (size_t i = 0; i < upto; i++) h_apply(s, &l->v[i]);
}

/* A truncation: entries of group at or above from with a serial up to `serial` are void. */
typedef struct cut {
    uint64_t group, from, serial;
} cut;

typedef struct run {
    uint64_t seed;
    jr__rand rng;
    jr_vfs *vfs;
    jr__wal_config cfg;
    jr__wal *w;
    h_state synced;  /* state covered by a completed sync */
    oplist unsynced; /* written (or maybe written) since, in log order */
    oplist pending;  /* staged, not written */
    h_state cur;     /* synced + unsynced + pending: what the generator builds on */
    uint64_t now;
    uint64_t term;
    uint64_t serial; /* of the last entry generated */
    uint64_t noted;  /* of the last entry known durable (note_cuts) */
    cut *cuts;       /* durable truncations */
    size_t ncuts, capcuts;
    int ngroups;
    char fail[1024];
} run;

static uint64_t rnd(run *r, uint64_t n)
{
    return jr__rand_below(&r->rng, n);
}

static uint64_t last_index(const h_group *g)
{
    if (g && g->n) return g->e[g->n - 1].index;
    return g && g->has_compact ? g->cidx : 0;
}

static void stage(run *r, h_op op)
{
    int rc = h_stage(r->w, &op);
    ck_assert_msg(rc == 0, "seed %" PRIu64 ": staging failed: %d", r->seed, rc);
    h_apply(&r->cur, &op);
    ol_push(&r->pending, op);
}

/* Entries at `at` (0: after the last, or now and then a rewrite of a suffix). */
static void gen_entries(run *r, uint64_t gid, uint64_t at)
{
    h_group *g = h_state_group(&r->cur, gid, 0);
    uint64_t last = g && g->live ? last_index(g) : 0;
    uint64_t lo = (g && g->live && g->has_compact ? g->cidx : 0) + 1;
    uint64_t start = rnd(r, 5) ? last + 1 : lo + rnd(r, last + 2 - lo);
    if (at) start = at;
    uint64_t count = 1 + rnd(r, 4);
    r->term += rnd(r, 2);
    for (uint64_t i = 0; i < count; i++) {
        h_op op;
        memset(&op, 0, sizeof op);
        op.kind = H_ENTRY;
        op.group = gid;
        op.e.term = r->term;
        op.e.index = start + i;
        op.e.type = (uint8_t)rnd(r, 3);
        op.e.len = 8 + (uint32_t)(rnd(r, 8) ? rnd(r, 120) : rnd(r, 1500));
        op.e.data = malloc(op.e.len);
        jr__put_u64(op.e.data, ++r->serial);
        for (uint32_t k = 8; k < op.e.len; k++) op.e.data[k] = (uint8_t)rnd(r, 256);
        stage(r, op);
    }
}

/* Truncations, as the node writes them. */
static void gen_truncation(run *r, uint64_t gid)
{
    h_group *g = h_state_group(&r->cur, gid, 0);
    uint64_t last = g && g->live ? last_index(g) : 0;
    uint64_t c = g && g->live && g->has_compact ? g->cidx : 0;
    h_op op;
    memset(&op, 0, sizeof op);
    op.kind = H_TRUNCATE;
    op.group = gid;
    switch (rnd(r, 3)) {
    case 0: /* a conflict: the cut, then the entries that replace the suffix */
        op.from = c + 1 + rnd(r, last + 1 - c);
        stage(r, op);
        if (rnd(r, 3)) gen_entries(r, gid, op.from);
        break;
    case 1: { /* a snapshot install that discards a conflicting log: cut above it + marker */
        uint64_t si = c + 1 + rnd(r, last + 20 - c);
        h_op m;
        memset(&m, 0, sizeof m);
        m.kind = H_COMPACT;
        m.group = gid;
        m.cidx = si;
        m.cterm = ++r->term;
        op.from = si + 1;
        if (rnd(r, 4)) { /* the node's order; the other one must work too */
            stage(r, op);
            stage(r, m);
        } else {
            stage(r, m);
            stage(r, op);
        }
        break;
    }
    default: /* anywhere, including below the marker and beyond the log */
        op.from = 1 + rnd(r, last + 3);
        stage(r, op);
        break;
    }
}

/* Records the truncations among l[0, upto) as durable. Called once for every op that becomes
 * durable, in log order, so r->noted follows the serial of the last durable entry (entries
 * generated but lost in a crash have serials above it, and never appear). */
static void note_cuts(run *r, const oplist *l, size_t upto)
{
    for (size_t i = 0; i < upto; i++) {
        const h_op *op = &l->v[i];
        if (op->kind == H_ENTRY) r->noted = jr__get_u64(op->e.data);
        if (op->kind != H_TRUNCATE) continue;
        if (r->ncuts == r->capcuts) {
            r->capcuts = r->capcuts ? r->capcuts * 2 : 64;
            r->cuts = realloc(r->cuts, r->capcuts * sizeof *r->cuts);
        }
        r->cuts[r->ncuts++] = (cut){op->group, op->from, r->noted};
    }
}

/* No recovered entry at or above a durable truncation point is older than the truncation. */
static int check_cuts(run *r, const h_state *got, char *why, size_t cap)
{
    for (size_t c = 0; c < r->ncuts; c++) {
        const h_group *g = h_state_group((h_state *)got, r->cuts[c].group, 0);
        for (size_t k = 0; g && k < g->n; k++) {
            const h_ent *e = &g->e[k];
            uint64_t serial = jr__get_u64(e->data);
            if (e->index >= r->cuts[c].from && serial <= r->cuts[c].serial) {
                snprintf(why, cap,
                         "group %" PRIu64 ": entry %" PRIu64 " (serial %" PRIu64
                         ") survived the durable truncation at %" PRIu64 " (after serial %" PRIu64
                         ")",
                         g->id, e->index, serial, r->cuts[c].from, r->cuts[c].serial);
                return -1;
            }
        }
    }
    return 0;
}

static void gen_op(run *r)
{
    uint64_t gid = 1 + rnd(r, (uint64_t)r->ngroups);
    uint64_t x = rnd(r, 100);
    h_group *g = h_state_group(&r->cur, gid, 0);
    h_op op;
    memset(&op, 0, sizeof op);
    op.group = gid;
    if (x < 50) {
        gen_entries(r, gid, 0);
    } else if (x < 57) {
        gen_truncation(r, gid);
    } else if (x < 70) {
        op.kind = H_HS;
        op.hs.term = ++r->term;
        op.hs.vote = rnd(r, 5);
        op.hs.commit = last_index(g);
        stage(r, op);
    } else if (x < 80) {
        uint64_t last = g && g->live ? last_index(g) : 0;
        uint64_t c = g && g->live && g->has_compact ? g->cidx : 0;
        op.kind = H_COMPACT;
        if (rnd(r, 6) == 0)
            op.cidx = last + 1 + rnd(r, 20); /* a snapshot from the leader */
        else if (last > c)
            op.cidx = c + 1 + rnd(r, last - c);
        else
            return;
        op.cterm = r->term;
        stage(r, op);
    } else if (x < 82) {
        op.kind = H_DROP;
        stage(r, op);
    } else {
        /* flush, sometimes with an injected I/O error */
        static const int kinds[] = {JR__MEMFS_PWRITE, JR__MEMFS_SYNC, JR__MEMFS_SYNC_DIR,
                                    JR__MEMFS_OPEN};
        int inject = rnd(r, 12) == 0;
        if (inject)
            jr__memfs_fail(r->vfs, kinds[rnd(r, 4)], 1, rnd(r, 2) ? JR_EIO : JR_ENOSPC, 0, NULL);
        int durable = -1;
        r->now += 1 + rnd(r, 40);
        int rc = jr__wal_flush(r->w, r->now, &durable);
        jr__memfs_fail_clear(r->vfs);
        ol_move(&r->unsynced, &r->pending);
        ck_assert_msg(rc != 0 || durable || r->cfg.sync_policy != JR_SYNC_ALWAYS,
                      "seed %" PRIu64 ": a flush under JR_SYNC_ALWAYS was not durable", r->seed);
        if (rc == 0 && durable) {
            ol_apply(&r->synced, &r->unsynced, r->unsynced.n);
            note_cuts(r, &r->unsynced, r->unsynced.n);
            ol_clear(&r->unsynced);
        }
        if (rc != 0) {
            ck_assert_msg(durable == 0, "seed %" PRIu64 ": failed flush reported durable", r->seed);
            /* the WAL now refuses work; the test crashes the node next */
            h_op probe = {H_HS, 1, {0, 0, 0, 0, NULL}, {1, 1, 1}, 0, 0, 0};
            ck_assert_int_eq(h_stage(r->w, &probe), JR_EIO);
            r->now = UINT64_MAX; /* marks "crash now" */
        }
    }
}

/* Crashes, recovers, and checks the replay against every admissible prefix. */
static int crash_and_check(run *r, int round)
{
    int torn = (int)rnd(r, 2);
    jr__memfs_crash(r->vfs, torn);
    jr__wal_close(r->w);
    r->w = NULL;
    ol_clear(&r->pending); /* never written */
    h_state got;
    int rc = h_open(&r->cfg, &got, &r->w);
    if (rc) {
        snprintf(r->fail, sizeof r->fail, "round %d: reopen failed: %s", round, jr_strerror(rc));
        h_state_free(&got);
        return -1;
    }
    char why[600] = "";
    long match = -1;
    for (size_t k = r->unsynced.n + 1; k-- > 0;) {
        h_state cand;
        h_state_copy(&cand, &r->synced);
        ol_apply(&cand, &r->unsynced, k);
        char w2[600];
        if (h_compare(&cand, &got, w2, sizeof w2) == 0) {
            match = (long)k;
            note_cuts(r, &r->unsynced, k);
            h_state_free(&r->synced);
            r->synced = cand;
            break;
        }
        if (k == r->unsynced.n) memcpy(why, w2, sizeof why);
        h_state_free(&cand);
    }
    if (getenv("JR_WAL_DEBUG")) {
        size_t ents = 0;
        for (size_t i = 0; i < got.n; i++) ents += got.g[i].n;
        jr__memfs_stats st;
        jr__memfs_stats_get(r->vfs, &st);
        fprintf(stderr,
                "seed %llu round %d torn %d unsynced %zu match %ld groups %zu entries %zu syncs "
                "%llu files %llu\n",
                (unsigned long long)r->seed, round, torn, r->unsynced.n, match, got.n, ents,
                (unsigned long long)st.syncs, (unsigned long long)st.files);
    }
    char cwhy[600];
    int cut_bad = match >= 0 && check_cuts(r, &got, cwhy, sizeof cwhy) != 0;
    h_state_free(&got);
    if (cut_bad) {
        snprintf(r->fail, sizeof r->fail, "round %d (torn %d): %s", round, torn, cwhy);
        return -1;
    }
    if (match < 0) {
        snprintf(r->fail, sizeof r->fail,
                 "round %d (torn %d, %zu unsynced records): no admissible state matches; "
                 "vs everything written: %s",
                 round, torn, r->unsynced.n, why);
        return -1;
    }
    ol_clear(&r->unsynced);
    h_state_free(&r->cur);
    h_state_copy(&r->cur, &r->synced);
    return 0;
}

static int one_seed(uint64_t seed, char *fail, size_t cap)
{
    run r;
    memset(&r, 0, sizeof r);
    r.seed = seed;
    jr__rand_seed(&r.rng, seed);
    ck_assert_int_eq(jr__memfs_new(NULL, seed, &r.vfs), 0);
    r.cfg.vfs = r.vfs;
    r.cfg.dir = DIR;
    r.cfg.segment_bytes = 768 + rnd(&r, 8192);
    r.cfg.sync_policy = rnd(&r, 4) == 0 ? JR_SYNC_INTERVAL : JR_SYNC_ALWAYS;
    r.cfg.sync_interval_ns = 1 + rnd(&r, 100);
    /* half the seeds keep the segment zero-filled ahead (a crash then finds a zero tail) */
    r.cfg.prealloc_bytes = rnd(&r, 2) ? 64 + rnd(&r, 2048) : 0;
    r.ngroups = 1 + (int)rnd(&r, 6);
    h_state_init(&r.synced);
    h_state_init(&r.cur);
    h_state got;
    int rc = h_open(&r.cfg, &got, &r.w);
    h_state_free(&got);
    ck_assert_int_eq(rc, 0);
    int result = 0;
    for (int round = 0; round < 6 && result == 0; round++) {
        int steps = 10 + (int)rnd(&r, 120);
        for (int s = 0; s < steps && r.now != UINT64_MAX; s++) gen_op(&r);
        r.now = r.now == UINT64_MAX ? 0 : r.now;
        result = crash_and_check(&r, round);
    }
    if (result) snprintf(fail, cap, "%s", r.fail);
    jr__wal_close(r.w);
    ol_clear(&r.unsynced);
    ol_clear(&r.pending);
    free(r.unsynced.v);
    free(r.pending.v);
    free(r.cuts);
    h_state_free(&r.synced);
    h_state_free(&r.cur);
    jr__memfs_free(r.vfs);
    return result;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : dflt;
}

START_TEST(crash_consistency_over_seeds)
{
    uint64_t first = env_u64("JR_WAL_SEED", 1), count = env_u64("JR_WAL_SEEDS", 2000);
    char fail[1024];
    for (uint64_t seed = first; seed < first + count; seed++) {
        if (one_seed(seed, fail, sizeof fail) != 0)
            ck_abort_msg("seed %" PRIu64 ": %s\n  replay: JR_WAL_SEED=%" PRIu64
                         " JR_WAL_SEEDS=1 test_wal_crash",
                         seed, fail, seed);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("wal_crash");
    TCase *t = tcase_create("crash");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, crash_consistency_over_seeds);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
