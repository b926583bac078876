/*
 * Fault sweeps of lib/log, in the manner of SQLite's: for n = 1, 2, ... the n-th vfs call (of
 * any kind) or the n-th allocation fails, once or from then on, during WAL open and recovery
 * and during a sequence of flushes, until an n is reached that the operation completes without
 * meeting. Every run must end in a clean error or the right result, leave no file handle open
 * and no block allocated, close nothing twice, and after the fault is removed (and, for
 * flushes, a simulated power loss) the WAL must reopen with every flushed record.
 * All on memfs (lib/vfs/memfs.h) and the counting allocator of lib/util/alloc.h.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "log/segment.h"
#include "util/alloc.h"
#include "vfs/memfs.h"

#define DIR "/wal"
#define SEGMENT 2048
#define BATCHES 12
#define MAX_N 5000 /* a sweep that needs more steps than this has lost its way */

/* ---------------------------------------------------------------------------------------------
 * The workload: BATCHES flushes over three groups, with rotation, compaction (so old segments
 * are deleted), a truncation and a drop.
 */
typedef struct gen {
    uint64_t idx[4];
    uint64_t term;
    uint8_t payload[150];
} gen;

static h_op op_entry(gen *g, uint64_t group)
{
    h_op op = {.kind = H_ENTRY, .group = group};
    uint64_t i = ++g->idx[group];
    memset(g->payload, (int)('a' + (group * 7 + i) % 26), sizeof g->payload);
    op.e = (h_ent){g->term, i, JR__ENTRY_NORMAL, (uint32_t)sizeof g->payload, g->payload};
    return op;
}

/* Stages batch b on w and on the model m. Returns the first staging error. */
static int stage_batch(jr__wal *w, gen *g, int b, h_state *m)
{
    h_op ops[16];
    int n = 0;
    if (b == 7) {
        ops[n++] = (h_op){.kind = H_DROP, .group = 3};
        g->idx[3] = 0;
    }
    for (uint64_t grp = 1; grp <= 3; grp++) {
        ops[n++] = op_entry(g, grp);
        if (grp != 3 || b % 2 == 0) ops[n++] = op_entry(g, grp);
        ops[n++] = (h_op){.kind = H_HS, .group = grp, .hs = {g->term, 1, g->idx[grp] - 1}};
    }
    if (b % 4 == 3)
        for (uint64_t grp = 1; grp <= 2; grp++)
            ops[n++] =
                (h_op){.kind = H_COMPACT, .group = grp, .cidx = g->idx[grp] - 2, .cterm = g->term};
    if (b == 5) {
        ops[n++] = (h_op){.kind = H_TRUNCATE, .group = 2, .from = g->idx[2] - 1};
        g->idx[2] -= 2;
        g->term++;
    }
    for (int i = 0; i < n; i++) {
        int rc = h_stage(w, &ops[i]);
        if (rc) return rc;
        h_apply(m, &ops[i]);
    }
    return 0;
}

/* Runs the workload. On the first failure returns its code; *acked is the model of every flush
 * that returned 0, *tried that plus the batch that failed. */
static int workload(jr__wal *w, h_state *acked, h_state *tried)
{
    gen g;
    memset(&g, 0, sizeof g);
    g.term = 1;
    for (int b = 0; b < BATCHES; b++) {
        h_state_free(tried);
        h_state_copy(tried, acked);
        int rc = stage_batch(w, &g, b, tried);
        int durable = 0;
        if (!rc) rc = jr__wal_flush(w, (uint64_t)b, &durable);
        if (!rc && !durable) rc = JR_EIO; /* JR_SYNC_ALWAYS: a flush that returns is durable */
        if (rc) return rc;
        h_state_free(acked);
        h_state_copy(acked, tried);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Fixture
 */
enum { TAIL_CLEAN, TAIL_TORN, TAIL_EMPTY_SEGMENT };

typedef struct fx {
    jr_vfs *vfs;
    jr__wal_config cfg;
    h_state model;
} fx;

static void check_vfs_clean(jr_vfs *vfs, const char *where, uint64_t n)
{
    jr__memfs_stats st;
    jr__memfs_stats_get(vfs, &st);
    ck_assert_msg(st.handles == 0, "%s n=%llu: %llu file handles left open", where,
                  (unsigned long long)n, (unsigned long long)st.handles);
    ck_assert_msg(st.bad_handles == 0, "%s n=%llu: a file handle was closed twice", where,
                  (unsigned long long)n);
}

static uint64_t last_seq(jr_vfs *vfs)
{
    uint64_t *seqs = NULL, last = 0;
    size_t n = 0;
    ck_assert_int_eq(jr__seg_list(vfs, DIR, NULL, &seqs, &n), 0);
    ck_assert_uint_gt(n, 0);
    last = seqs[n - 1];
    free(seqs);
    return last;
}

static void append_junk(jr_vfs *vfs, uint64_t seq, int create)
{
    char path[256];
    uint8_t junk[100];
    jr_file *f = NULL;
    uint64_t size = 0;
    memset(junk, 0x5a, sizeof junk);
    ck_assert_int_eq(jr__seg_path(path, sizeof path, DIR, seq), 0);
    ck_assert_int_eq(vfs->open(vfs->ctx, path, create ? JR_O_CREATE : JR_O_READ, &f), 0);
    ck_assert_int_eq(vfs->size(vfs->ctx, f, &size), 0);
    ck_assert_int_eq(vfs->pwrite(vfs->ctx, f, junk, sizeof junk, size), 0);
    ck_assert_int_eq(vfs->sync(vfs->ctx, f), 0);
    ck_assert_int_eq(vfs->close(vfs->ctx, f), 0);
    if (create) ck_assert_int_eq(vfs->sync_dir(vfs->ctx, DIR), 0);
}

/* A fresh memfs with the workload flushed and the WAL closed, then the tail damaged as asked. */
static void fx_build(fx *f, int tail)
{
    memset(f, 0, sizeof *f);
    ck_assert_int_eq(jr__memfs_new(NULL, 7, &f->vfs), 0);
    f->cfg.vfs = f->vfs;
    f->cfg.dir = DIR;
    f->cfg.segment_bytes = SEGMENT;
    f->cfg.sync_policy = JR_SYNC_ALWAYS;
    h_state_init(&f->model);
    h_state got, tried;
    h_state_init(&tried);
    jr__wal *w = NULL;
    ck_assert_int_eq(h_open(&f->cfg, &got, &w), 0);
    ck_assert_int_eq(workload(w, &f->model, &tried), 0);
    jr__wal_close(w);
    h_state_free(&got);
    h_state_free(&tried);
    if (tail == TAIL_TORN) append_junk(f->vfs, last_seq(f->vfs), 0);
    if (tail == TAIL_EMPTY_SEGMENT) append_junk(f->vfs, last_seq(f->vfs) + 1, 1);
}

static void fx_free(fx *f)
{
    h_state_free(&f->model);
    jr__memfs_free(f->vfs);
}

/* Opens without faults and checks the result equals want (or, if alt, alt). */
static void reopen_check(fx *f, const h_state *want, const h_state *alt, const char *where,
                         uint64_t n)
{
    char why[600], why2[600];
    h_state got;
    jr__wal *w = NULL;
    int rc = h_open(&f->cfg, &got, &w);
    ck_assert_msg(rc == 0, "%s n=%llu: reopen without faults failed: %s (%s)", where,
                  (unsigned long long)n, jr_strerror(rc), w ? "" : "no wal");
    int bad = h_compare(want, &got, why, sizeof why);
    if (bad && alt) bad = h_compare(alt, &got, why2, sizeof why2);
    ck_assert_msg(!bad, "%s n=%llu: reopened WAL differs: %s", where, (unsigned long long)n, why);
    jr__wal_close(w);
    h_state_free(&got);
    check_vfs_clean(f->vfs, where, n);
}

/* ---------------------------------------------------------------------------------------------
 * The regression the sweep first found: a last segment with no valid record whose removal
 * fails was closed twice.
 */
START_TEST(empty_last_segment_whose_removal_fails_is_closed_once)
{
    fx f;
    fx_build(&f, TAIL_EMPTY_SEGMENT);
    ck_assert_int_eq(jr__memfs_fail(f.vfs, JR__MEMFS_REMOVE, 1, JR_EIO, 0, NULL), 0);
    h_state got;
    jr__wal *w = NULL;
    ck_assert_int_eq(h_open(&f.cfg, &got, &w), JR_EIO);
    ck_assert_ptr_null(w);
    h_state_free(&got);
    jr__memfs_stats st;
    jr__memfs_stats_get(f.vfs, &st);
    ck_assert_uint_eq(st.faults, 1);
    check_vfs_clean(f.vfs, "remove fails", 1);
    reopen_check(&f, &f.model, NULL, "remove fails", 1);
    fx_free(&f);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Recovery sweeps
 */
static void sweep_open_vfs(int tail, int sticky)
{
    const char *where = sticky ? "open, vfs call n and later fail" : "open, vfs call n fails";
    uint64_t n;
    for (n = 1; n < MAX_N; n++) {
        fx f;
        fx_build(&f, tail);
        jr__memfs_stats st0, st1;
        jr__memfs_stats_get(f.vfs, &st0);
        ck_assert_int_eq(
            jr__memfs_fail(f.vfs, JR__MEMFS_ANY, n, (n & 1) ? JR_EIO : JR_ENOSPC, sticky, NULL), 0);
        h_state got;
        jr__wal *w = NULL;
        int rc = h_open(&f.cfg, &got, &w);
        jr__memfs_stats_get(f.vfs, &st1);
        jr__memfs_fail_clear(f.vfs);
        char why[600];
        if (rc == 0) {
            ck_assert_msg(h_compare(&f.model, &got, why, sizeof why) == 0,
                          "%s n=%llu: recovered WAL differs: %s", where, (unsigned long long)n,
                          why);
            jr__wal_close(w);
        } else {
            ck_assert_msg(rc < 0 && !w, "%s n=%llu: rc %d", where, (unsigned long long)n, rc);
        }
        h_state_free(&got);
        check_vfs_clean(f.vfs, where, n);
        reopen_check(&f, &f.model, NULL, where, n);
        int fired = st1.faults > st0.faults;
        fx_free(&f);
        if (!fired) break;
    }
    if (getenv("JR_SWEEP_VERBOSE"))
        fprintf(stderr, "%s: %llu steps\n", where, (unsigned long long)n);
    ck_assert_uint_lt(n, MAX_N);
    ck_assert_uint_gt(n, 10); /* the sweep reached past the first calls */
}

START_TEST(open_survives_a_failing_vfs_call)
{
    sweep_open_vfs(_i, 0);
}
END_TEST

START_TEST(open_survives_a_failing_vfs)
{
    sweep_open_vfs(_i, 1);
}
END_TEST

static void sweep_open_alloc(int tail, int sticky)
{
    const char *where = sticky ? "open, allocation n and later fail" : "open, allocation n fails";
    uint64_t n;
    for (n = 1; n < MAX_N; n++) {
        fx f;
        fx_build(&f, tail);
        jr__falloc fa;
        jr__falloc_init(&fa);
        jr__falloc_arm(&fa, n, sticky);
        jr__wal_config cfg = f.cfg;
        cfg.alloc = &fa.a;
        h_state got;
        jr__wal *w = NULL;
        int rc = h_open(&cfg, &got, &w);
        uint64_t failures = fa.failures;
        jr__falloc_arm(&fa, 0, 0);
        char why[600];
        if (rc == 0) {
            ck_assert_msg(h_compare(&f.model, &got, why, sizeof why) == 0,
                          "%s n=%llu: recovered WAL differs: %s", where, (unsigned long long)n,
                          why);
            jr__wal_close(w);
        } else {
            ck_assert_msg(rc == JR_ENOMEM && !w, "%s n=%llu: rc %s", where, (unsigned long long)n,
                          jr_err_name(rc));
        }
        ck_assert_msg(fa.live == 0, "%s n=%llu: %lld blocks leaked", where, (unsigned long long)n,
                      (long long)fa.live);
        h_state_free(&got);
        check_vfs_clean(f.vfs, where, n);
        reopen_check(&f, &f.model, NULL, where, n);
        fx_free(&f);
        if (!failures) break;
    }
    if (getenv("JR_SWEEP_VERBOSE"))
        fprintf(stderr, "%s: %llu steps\n", where, (unsigned long long)n);
    ck_assert_uint_lt(n, MAX_N);
    ck_assert_uint_gt(n, 10);
}

START_TEST(open_survives_a_failing_allocation)
{
    sweep_open_alloc(_i, 0);
}
END_TEST

START_TEST(open_survives_running_out_of_memory)
{
    sweep_open_alloc(_i, 1);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Flush sweeps: the WAL is opened cleanly, the workload runs with the fault armed; what was
 * acknowledged (a flush that returned 0) must be there after reopening, with or without a
 * power loss in between; the batch that failed may be there whole or not at all.
 */
static void sweep_flush(int use_alloc, int sticky, int crash)
{
    char where[96];
    snprintf(where, sizeof where, "flush, %s n%s fail%s", use_alloc ? "allocation" : "vfs call",
             sticky ? " and later" : "", crash ? ", then power loss" : "");
    uint64_t n;
    for (n = 1; n < MAX_N; n++) {
        fx f;
        memset(&f, 0, sizeof f);
        ck_assert_int_eq(jr__memfs_new(NULL, 9, &f.vfs), 0);
        jr__falloc fa;
        jr__falloc_init(&fa);
        f.cfg.vfs = f.vfs;
        f.cfg.dir = DIR;
        f.cfg.segment_bytes = SEGMENT;
        f.cfg.sync_policy = JR_SYNC_ALWAYS;
        f.cfg.alloc = use_alloc ? &fa.a : NULL;
        h_state got, acked, tried;
        h_state_init(&acked);
        h_state_init(&tried);
        jr__wal *w = NULL;
        ck_assert_int_eq(h_open(&f.cfg, &got, &w), 0);
        h_state_free(&got);
        jr__memfs_stats st0, st1;
        jr__memfs_stats_get(f.vfs, &st0);
        if (use_alloc)
            jr__falloc_arm(&fa, n, sticky);
        else
            ck_assert_int_eq(
                jr__memfs_fail(f.vfs, JR__MEMFS_ANY, n, (n & 1) ? JR_EIO : JR_ENOSPC, sticky, NULL),
                0);
        int rc = workload(w, &acked, &tried);
        jr__memfs_stats_get(f.vfs, &st1);
        int fired = use_alloc ? fa.failures > 0 : st1.faults > st0.faults;
        jr__falloc_arm(&fa, 0, 0);
        jr__memfs_fail_clear(f.vfs);
        ck_assert_msg(rc <= 0, "%s n=%llu: rc %d", where, (unsigned long long)n, rc);
        if (!fired) ck_assert_int_eq(rc, 0);
        jr__wal_close(w);
        if (use_alloc)
            ck_assert_msg(fa.live == 0, "%s n=%llu: %lld blocks leaked", where,
                          (unsigned long long)n, (long long)fa.live);
        check_vfs_clean(f.vfs, where, n);
        if (crash) jr__memfs_crash(f.vfs, 0);
        f.cfg.alloc = NULL;
        reopen_check(&f, &acked, &tried, where, n);
        h_state_free(&acked);
        h_state_free(&tried);
        jr__memfs_free(f.vfs);
        if (!fired) break;
    }
    if (getenv("JR_SWEEP_VERBOSE"))
        fprintf(stderr, "%s: %llu steps\n", where, (unsigned long long)n);
    ck_assert_uint_lt(n, MAX_N);
    ck_assert_uint_gt(n, 10);
}

START_TEST(flush_survives_a_failing_vfs_call)
{
    sweep_flush(0, 0, _i);
}
END_TEST

START_TEST(flush_survives_a_failing_vfs)
{
    sweep_flush(0, 1, _i);
}
END_TEST

START_TEST(flush_survives_a_failing_allocation)
{
    sweep_flush(1, 0, _i);
}
END_TEST

START_TEST(flush_survives_running_out_of_memory)
{
    sweep_flush(1, 1, _i);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wal_sweep");
    TCase *t = tcase_create("sweep");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, empty_last_segment_whose_removal_fails_is_closed_once);
    tcase_add_loop_test(t, open_survives_a_failing_vfs_call, TAIL_CLEAN, TAIL_EMPTY_SEGMENT + 1);
    tcase_add_loop_test(t, open_survives_a_failing_vfs, TAIL_CLEAN, TAIL_EMPTY_SEGMENT + 1);
    tcase_add_loop_test(t, open_survives_a_failing_allocation, TAIL_CLEAN, TAIL_EMPTY_SEGMENT + 1);
    tcase_add_loop_test(t, open_survives_running_out_of_memory, TAIL_CLEAN, TAIL_EMPTY_SEGMENT + 1);
    tcase_add_loop_test(t, flush_survives_a_failing_vfs_call, 0, 2);
    tcase_add_loop_test(t, flush_survives_a_failing_vfs, 0, 2);
    tcase_add_loop_test(t, flush_survives_a_failing_allocation, 0, 2);
    tcase_add_loop_test(t, flush_survives_running_out_of_memory, 0, 2);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
