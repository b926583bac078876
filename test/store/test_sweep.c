/*
 * Fault sweeps of the file store, in the manner of SQLite's: for n = 1, 2, ... the n-th vfs call
 * (of any kind) or the n-th allocation fails, once or from then on, during store open (recovery
 * of several blocks) and during a sequence of appends, deletes and syncs (or marks), until an n
 * is reached that the operation completes without meeting. Every run must end in a clean error
 * or the right result, leave no file handle open and nothing allocated, and after the fault is
 * removed (and, for writes, a simulated power loss) the store must reopen with everything that
 * was acknowledged (a sync or mark that returned 0) and nothing that never happened.
 * Configurations: plain, encrypted, lz4 + encrypted; each plain (sync) and marked.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "util/alloc.h"
#include "vfs/memfs.h"

#define DIR "/store"
#define NAME "ORDERS"
#define OPS 40
#define MAX_N 20000

static const uint8_t key[32] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6,
                                7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2};

enum { CONF_PLAIN, CONF_ENC, CONF_LZ4_ENC, NCONF };
static const char *const conf_name[NCONF] = {"plain", "encrypted", "lz4+encrypted"};

/* ---------------------------------------------------------------------------------------------
 * The workload: op i (1-based) is an append of seq a(i), a delete, or a sync/mark. The model
 * after k ops is computed from k alone, so any prefix of the workload can be checked.
 */
enum { OP_APPEND, OP_DELETE, OP_COMMIT };

static int op_kind(int i)
{
    if (i % 5 == 0) return OP_COMMIT;
    if (i % 7 == 3) return OP_DELETE;
    return OP_APPEND;
}

typedef struct model {
    uint64_t last;
    uint8_t live[OPS + 1]; /* by seq */
} model;

static void payload(uint64_t seq, uint8_t *buf, size_t *len)
{
    *len = 60 + (size_t)(seq * 37 % 200);
    for (size_t i = 0; i < *len; i++) buf[i] = (uint8_t)(seq * 31 + i);
}

static void model_after(int k, model *m)
{
    memset(m, 0, sizeof *m);
    for (int i = 1; i <= k; i++) {
        if (op_kind(i) == OP_APPEND) m->live[++m->last] = 1;
        if (op_kind(i) == OP_DELETE && m->last >= 2) m->live[m->last - 1] = 0;
    }
}

/* Runs op i on s. */
static int run_op(jr__store *s, int i, int marked)
{
    model m;
    model_after(i - 1, &m);
    switch (op_kind(i)) {
    case OP_APPEND: {
        uint8_t buf[300];
        size_t len;
        char subj[16];
        uint64_t seq = m.last + 1;
        payload(seq, buf, &len);
        snprintf(subj, sizeof subj, "o.%u", (unsigned)(seq % 3));
        return jr__store_append(s, seq, subj, strlen(subj), NULL, 0, buf, len, (int64_t)seq, NULL);
    }
    case OP_DELETE:
        return m.last >= 2 ? jr__store_delete(s, m.last - 1, i % 2) : 0;
    default:
        return marked ? jr__store_mark(s, (uint64_t)i, &i, sizeof i, 0, 0) : jr__store_sync(s);
    }
}

/* 0 if s holds exactly m, else -1 with the difference in why. */
static int store_is(jr__store *s, const model *m, char *why, size_t cap)
{
    jr__store_state st;
    jr__store_state_get(s, &st);
    if (st.last_seq != m->last) {
        snprintf(why, cap, "last seq %llu, want %llu", (unsigned long long)st.last_seq,
                 (unsigned long long)m->last);
        return -1;
    }
    for (uint64_t seq = 1; seq <= m->last; seq++) {
        jr__store_msg msg;
        int rc = jr__store_get(s, seq, &msg);
        if ((rc == 0) != m->live[seq]) {
            snprintf(why, cap, "seq %llu: %s, want %s", (unsigned long long)seq, jr_err_name(rc),
                     m->live[seq] ? "live" : "deleted");
            return -1;
        }
        uint8_t buf[300];
        size_t len;
        payload(seq, buf, &len);
        if (rc == 0 && (msg.data_len != len || memcmp(msg.data, buf, len))) {
            snprintf(why, cap, "seq %llu: wrong payload", (unsigned long long)seq);
            return -1;
        }
    }
    return 0;
}

/* 0 if s holds the model after some k in [lo, hi] ops. */
static int store_is_between(jr__store *s, int lo, int hi, char *why, size_t cap)
{
    for (int k = hi; k >= lo; k--) {
        model m;
        model_after(k, &m);
        if (store_is(s, &m, why, cap) == 0) return 0;
    }
    return -1;
}

/* ---------------------------------------------------------------------------------------------
 * Fixture
 */
typedef struct fx {
    jr_vfs *vfs;
    jr__store_config cfg;
    char err[512];
} fx;

static void fx_new(fx *f, int conf, int marked)
{
    memset(f, 0, sizeof *f);
    ck_assert_int_eq(jr__memfs_new(NULL, 3, &f->vfs), 0);
    ck_assert_int_eq(f->vfs->mkdir(f->vfs->ctx, DIR), 0);
    f->cfg.kind = JR__STORE_FILE;
    f->cfg.name = NAME;
    f->cfg.vfs = f->vfs;
    f->cfg.dir = DIR;
    f->cfg.block_bytes = 1024;
    f->cfg.compress = conf == CONF_LZ4_ENC;
    f->cfg.master_key = conf == CONF_PLAIN ? NULL : key;
    f->cfg.marked = marked;
}

static void check_vfs_clean(jr_vfs *vfs, const char *where, uint64_t n)
{
    jr__memfs_stats st;
    jr__memfs_stats_get(vfs, &st);
    ck_assert_msg(st.handles == 0, "%s n=%llu: %llu file handles left open", where,
                  (unsigned long long)n, (unsigned long long)st.handles);
    ck_assert_msg(st.bad_handles == 0, "%s n=%llu: a file handle was closed twice", where,
                  (unsigned long long)n);
}

/* A store with the whole workload acknowledged, closed. */
static void fx_build(fx *f, int conf, int marked)
{
    fx_new(f, conf, marked);
    jr__store *s = NULL;
    ck_assert_int_eq(jr__store_open(&f->cfg, &s, f->err, sizeof f->err), 0);
    for (int i = 1; i <= OPS; i++) ck_assert_int_eq(run_op(s, i, marked), 0);
    ck_assert_int_eq(jr__store_close(s), 0);
}

/* Opens without faults; the store must hold the model after some k in [lo, hi] ops. */
static void reopen_check(fx *f, int lo, int hi, const char *where, uint64_t n)
{
    char why[256];
    jr__store *s = NULL;
    f->cfg.alloc = NULL;
    int rc = jr__store_open(&f->cfg, &s, f->err, sizeof f->err);
    ck_assert_msg(rc == 0, "%s n=%llu: reopen without faults: %s (%s)", where,
                  (unsigned long long)n, jr_strerror(rc), f->err);
    ck_assert_msg(store_is_between(s, lo, hi, why, sizeof why) == 0,
                  "%s n=%llu: reopened store differs (ops %d..%d): %s", where,
                  (unsigned long long)n, lo, hi, why);
    ck_assert_int_eq(jr__store_close(s), 0);
    check_vfs_clean(f->vfs, where, n);
}

static int last_commit(int k)
{
    while (k > 0 && op_kind(k) != OP_COMMIT) k--;
    return k;
}

/* ---------------------------------------------------------------------------------------------
 * Sweeps. _i encodes the configuration, marked, and the fault mode.
 */
typedef struct mode {
    int conf, marked, alloc, sticky;
} mode;

static mode decode(int i)
{
    mode m = {i % NCONF, (i / NCONF) % 2, (i / (2 * NCONF)) % 2, (i / (4 * NCONF)) % 2};
    return m;
}

static void describe(const mode *m, const char *what, char *out, size_t cap)
{
    snprintf(out, cap, "%s, %s%s store, %s n%s fails", what, conf_name[m->conf],
             m->marked ? " marked" : "", m->alloc ? "allocation" : "vfs call",
             m->sticky ? " and later" : "");
}

/* Arms the fault of mode m at n; returns how to tell whether it fired. */
static void arm(fx *f, jr__falloc *fa, const mode *m, uint64_t n)
{
    jr__falloc_init(fa);
    if (m->alloc) {
        jr__falloc_arm(fa, n, m->sticky);
        f->cfg.alloc = &fa->a;
    } else {
        ck_assert_int_eq(
            jr__memfs_fail(f->vfs, JR__MEMFS_ANY, n, (n & 1) ? JR_EIO : JR_ENOSPC, m->sticky, NULL),
            0);
    }
}

static uint64_t faults(jr_vfs *vfs)
{
    jr__memfs_stats st;
    jr__memfs_stats_get(vfs, &st);
    return st.faults;
}

START_TEST(open_survives_faults)
{
    mode m = decode(_i);
    char where[128];
    describe(&m, "open", where, sizeof where);
    int want = m.marked ? last_commit(OPS) : OPS;
    uint64_t n;
    for (n = 1; n < MAX_N; n++) {
        fx f;
        jr__falloc fa;
        fx_build(&f, m.conf, m.marked);
        uint64_t f0 = faults(f.vfs);
        arm(&f, &fa, &m, n);
        jr__store *s = NULL;
        int rc = jr__store_open(&f.cfg, &s, f.err, sizeof f.err);
        int fired = m.alloc ? fa.failures > 0 : faults(f.vfs) > f0;
        jr__falloc_arm(&fa, 0, 0);
        jr__memfs_fail_clear(f.vfs);
        char why[256];
        if (rc == 0) {
            ck_assert_msg(store_is_between(s, want, want, why, sizeof why) == 0,
                          "%s n=%llu: opened store differs: %s", where, (unsigned long long)n, why);
            rc = jr__store_close(s);
            ck_assert_msg(rc == 0, "%s n=%llu: close: %s", where, (unsigned long long)n,
                          jr_strerror(rc));
        } else {
            ck_assert_msg(rc < 0 && !s, "%s n=%llu: rc %d", where, (unsigned long long)n, rc);
            if (m.alloc)
                ck_assert_msg(rc == JR_ENOMEM, "%s n=%llu: %s (%s)", where, (unsigned long long)n,
                              jr_err_name(rc), f.err);
        }
        ck_assert_msg(fa.live == 0, "%s n=%llu: %lld blocks leaked", where, (unsigned long long)n,
                      (long long)fa.live);
        check_vfs_clean(f.vfs, where, n);
        reopen_check(&f, want, want, where, n);
        jr__memfs_free(f.vfs);
        if (!fired) break;
    }
    if (getenv("JR_SWEEP_VERBOSE"))
        fprintf(stderr, "%s: %llu steps\n", where, (unsigned long long)n);
    ck_assert_uint_lt(n, MAX_N);
    ck_assert_uint_gt(n, 10);
}
END_TEST

START_TEST(writes_survive_faults)
{
    mode m = decode(_i % (4 * NCONF * 2));
    int crash = _i >= 4 * NCONF * 2;
    char where[160];
    describe(&m, crash ? "writes, then power loss" : "writes", where, sizeof where);
    uint64_t n;
    for (n = 1; n < MAX_N; n++) {
        fx f;
        jr__falloc fa;
        fx_new(&f, m.conf, m.marked);
        jr__store *s = NULL;
        ck_assert_int_eq(jr__store_open(&f.cfg, &s, f.err, sizeof f.err), 0);
        ck_assert_int_eq(jr__store_close(s), 0);
        uint64_t f0 = faults(f.vfs);
        arm(&f, &fa, &m, n);
        int rc = jr__store_open(&f.cfg, &s, f.err, sizeof f.err);
        int acked = 0, i = 0;
        for (i = 1; !rc && i <= OPS; i++) {
            rc = run_op(s, i, m.marked);
            if (!rc && op_kind(i) == OP_COMMIT) acked = i;
        }
        int tried = rc ? i - 1 : OPS; /* the op that failed may have taken effect in part */
        int fired = m.alloc ? fa.failures > 0 : faults(f.vfs) > f0;
        if (!fired) ck_assert_int_eq(rc, 0);
        /* the fault stays armed through close: close must still release everything */
        int closed = -1;
        if (s) {
            if (crash)
                jr__store_abandon(s);
            else
                closed = jr__store_close(s);
        }
        jr__falloc_arm(&fa, 0, 0);
        jr__memfs_fail_clear(f.vfs);
        ck_assert_msg(fa.live == 0, "%s n=%llu: %lld blocks leaked", where, (unsigned long long)n,
                      (long long)fa.live);
        check_vfs_clean(f.vfs, where, n);
        if (crash) jr__memfs_crash(f.vfs, 0);
        /* a marked store reopens at a mark; a plain one holds at least what was synced */
        int lo = acked, hi = m.marked ? last_commit(tried) : tried;
        if (!crash && !m.marked && !rc && closed == 0) lo = OPS; /* close synced everything */
        reopen_check(&f, lo, hi, where, n);
        jr__memfs_free(f.vfs);
        if (!fired) break;
    }
    if (getenv("JR_SWEEP_VERBOSE"))
        fprintf(stderr, "%s: %llu steps\n", where, (unsigned long long)n);
    ck_assert_uint_lt(n, MAX_N);
    ck_assert_uint_gt(n, 10);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("store_sweep");
    TCase *t = tcase_create("sweep");
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, open_survives_faults, 0, 8 * NCONF);
    tcase_add_loop_test(t, writes_survive_faults, 0, 16 * NCONF);
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
