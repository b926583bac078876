/*
 * Tests of lib/vfs: the same behavioural checks against the POSIX vfs (in a mkdtemp directory)
 * and the simulated memfs, then memfs's own crash, fault-injection and determinism semantics.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vfs/memfs.h"

/* --- fixture: _i == 0 posix, _i == 1 memfs --------------------------------------------------*/
typedef struct env {
    jr_vfs *vfs;
    char dir[256];
    int mem;
} env;

static void env_open(env *e, int which)
{
    memset(e, 0, sizeof *e);
    e->mem = which == 1;
    if (e->mem) {
        ck_assert_int_eq(jr__memfs_new(NULL, 42, &e->vfs), 0);
        snprintf(e->dir, sizeof e->dir, "/t");
        ck_assert_int_eq(e->vfs->mkdir(e->vfs->ctx, e->dir), 0);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(e->dir, sizeof e->dir, "%s/jrvfsXXXXXX", tmp && *tmp ? tmp : "/tmp");
        ck_assert_ptr_nonnull(mkdtemp(e->dir));
        e->vfs = jr_vfs_posix();
    }
}

static int rm_cb(void *arg, const char *name)
{
    env *e = arg;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", e->dir, name);
    e->vfs->remove(e->vfs->ctx, p);
    return 0;
}

static void env_close(env *e)
{
    if (e->mem) {
        jr__memfs_free(e->vfs);
    } else {
        /* the tests create at most one level of subdirectory: files first, then dirs */
        char sub[512];
        snprintf(sub, sizeof sub, "%s/a/b", e->dir);
        rmdir(sub);
        snprintf(sub, sizeof sub, "%s/a", e->dir);
        rmdir(sub);
        e->vfs->list(e->vfs->ctx, e->dir, rm_cb, e);
        rmdir(e->dir);
    }
}

static const char *P(env *e, const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", e->dir, name);
    return buf[k];
}

#define V (e.vfs)
#define C (e.vfs->ctx)

static void write_str(jr_vfs *v, jr_file *f, const char *s, uint64_t off)
{
    ck_assert_int_eq(v->pwrite(v->ctx, f, s, strlen(s), off), 0);
}

static void expect(jr_vfs *v, jr_file *f, uint64_t off, const char *s)
{
    char buf[256];
    size_t n = 0;
    ck_assert_int_eq(v->pread(v->ctx, f, buf, sizeof buf, off, &n), 0);
    ck_assert_uint_eq(n, strlen(s));
    ck_assert(memcmp(buf, s, n) == 0);
}

/* --- behaviour shared by both implementations -----------------------------------------------*/
START_TEST(write_read_roundtrip)
{
    env e;
    env_open(&e, _i);
    jr_file *f;
    ck_assert_int_eq(V->open(C, P(&e, "x"), JR_O_CREATE, &f), 0);
    write_str(V, f, "hello world", 0);
    write_str(V, f, "W", 6);
    expect(V, f, 0, "hello World");
    expect(V, f, 6, "World");
    expect(V, f, 11, "");
    expect(V, f, 1000, "");
    ck_assert_int_eq(V->sync(C, f), 0);
    uint64_t sz;
    ck_assert_int_eq(V->size(C, f, &sz), 0);
    ck_assert_uint_eq(sz, 11);
    ck_assert_int_eq(V->close(C, f), 0);
    /* reopen without create sees the same bytes */
    ck_assert_int_eq(V->open(C, P(&e, "x"), JR_O_READ, &f), 0);
    expect(V, f, 0, "hello World");
    ck_assert_int_eq(V->close(C, f), 0);
    env_close(&e);
}
END_TEST

/* writeback starts writing a range and makes nothing durable: a range past the end or empty is
 * fine, one that overflows is JR_EINVAL; in memfs a crash still loses what it covered. */
START_TEST(writeback_is_a_hint)
{
    env e;
    env_open(&e, _i);
    jr_file *f;
    ck_assert_int_eq(V->open(C, P(&e, "x"), JR_O_CREATE, &f), 0);
    ck_assert_int_ge(V->version, 2);
    write_str(V, f, "written back", 0);
    ck_assert_int_eq(V->writeback(C, f, 0, 12), 0);
    ck_assert_int_eq(V->writeback(C, f, 4096, 4096), 0);
    ck_assert_int_eq(V->writeback(C, f, 0, 0), 0);
    ck_assert_int_eq(V->writeback(C, f, UINT64_MAX - 1, 2), JR_EINVAL);
    expect(V, f, 0, "written back");
    if (e.mem) {
        ck_assert_int_eq(V->sync_dir(C, e.dir), 0);
        jr__memfs_crash(V, 0);
        ck_assert_int_eq(V->writeback(C, f, 0, 12), JR_EIO); /* stale handle */
        ck_assert_int_eq(V->close(C, f), 0);
        ck_assert_int_eq(V->open(C, P(&e, "x"), JR_O_READ, &f), 0);
        expect(V, f, 0, "");
        ck_assert_int_eq(jr__memfs_fail(V, JR__MEMFS_WRITEBACK, 1, JR_ENOSPC, 0, NULL), 0);
        ck_assert_int_eq(V->writeback(C, f, 0, 1), JR_ENOSPC);
        ck_assert_int_eq(V->writeback(C, f, 0, 1), 0);
    }
    ck_assert_int_eq(V->close(C, f), 0);
    env_close(&e);
}
END_TEST

START_TEST(write_past_end_leaves_zero_hole)
{
    env e;
    env_open(&e, _i);
    jr_file *f;
    ck_assert_int_eq(V->open(C, P(&e, "h"), JR_O_CREATE, &f), 0);
    write_str(V, f, "ab", 0);
    write_str(V, f, "z", 10);
    char buf[16];
    size_t n;
    ck_assert_int_eq(V->pread(C, f, buf, sizeof buf, 0, &n), 0);
    ck_assert_uint_eq(n, 11);
    for (int i = 2; i < 10; i++) ck_assert_int_eq(buf[i], 0);
    ck_assert_int_eq(buf[10], 'z');
    ck_assert_int_eq(V->close(C, f), 0);
    env_close(&e);
}
END_TEST

START_TEST(open_flags)
{
    env e;
    env_open(&e, _i);
    jr_file *f;
    ck_assert_int_eq(V->open(C, P(&e, "none"), JR_O_READ, &f), JR_ENOTFOUND);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(V->open(C, P(&e, "nodir/x"), JR_O_CREATE, &f), JR_ENOTFOUND);
    ck_assert_int_eq(V->open(C, P(&e, "f"), JR_O_CREATE | JR_O_EXCL, &f), 0);
    write_str(V, f, "data", 0);
    ck_assert_int_eq(V->close(C, f), 0);
    ck_assert_int_eq(V->open(C, P(&e, "f"), JR_O_CREATE | JR_O_EXCL, &f), JR_EEXIST);
    ck_assert_int_eq(V->open(C, P(&e, "f"), JR_O_CREATE, &f), 0);
    expect(V, f, 0, "data");
    ck_assert_int_eq(V->close(C, f), 0);
    ck_assert_int_eq(V->open(C, P(&e, "f"), JR_O_TRUNCATE, &f), 0);
    expect(V, f, 0, "");
    ck_assert_int_eq(V->close(C, f), 0);
    env_close(&e);
}
END_TEST

START_TEST(truncate_shrinks_and_extends)
{
    env e;
    env_open(&e, _i);
    jr_file *f;
    uint64_t sz;
    ck_assert_int_eq(V->open(C, P(&e, "t"), JR_O_CREATE, &f), 0);
    write_str(V, f, "0123456789", 0);
    ck_assert_int_eq(V->truncate(C, f, 4), 0);
    expect(V, f, 0, "0123");
    ck_assert_int_eq(V->truncate(C, f, 6), 0);
    ck_assert_int_eq(V->size(C, f, &sz), 0);
    ck_assert_uint_eq(sz, 6);
    char buf[8];
    size_t n;
    ck_assert_int_eq(V->pread(C, f, buf, sizeof buf, 4, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert(buf[0] == 0 && buf[1] == 0);
    ck_assert_int_eq(V->close(C, f), 0);
    env_close(&e);
}
END_TEST

static int collect(void *arg, const char *name)
{
    char *acc = arg;
    strcat(acc, name);
    strcat(acc, ",");
    return 0;
}

static int stop_at_two(void *arg, const char *name)
{
    int *n = arg;
    (void)name;
    return ++*n == 2 ? 77 : 0;
}

START_TEST(rename_remove_list_mkdir)
{
    env e;
    env_open(&e, _i);
    jr_file *f;
    ck_assert_int_eq(V->mkdir(C, P(&e, "a/b")), 0);
    ck_assert_int_eq(V->mkdir(C, P(&e, "a/b")), 0); /* exists: fine */
    ck_assert_int_eq(V->mkdir(C, P(&e, "a/b/")), 0);
    ck_assert_int_eq(V->open(C, P(&e, "a/b/one"), JR_O_CREATE, &f), 0);
    write_str(V, f, "1", 0);
    ck_assert_int_eq(V->close(C, f), 0);
    ck_assert_int_eq(V->open(C, P(&e, "a/b/two"), JR_O_CREATE, &f), 0);
    write_str(V, f, "2", 0);
    ck_assert_int_eq(V->close(C, f), 0);
    ck_assert_int_eq(V->mkdir(C, P(&e, "a/b/one")), JR_EEXIST);
    /* rename replaces the target atomically */
    ck_assert_int_eq(V->rename(C, P(&e, "a/b/one"), P(&e, "a/b/two")), 0);
    ck_assert_int_eq(V->open(C, P(&e, "a/b/one"), JR_O_READ, &f), JR_ENOTFOUND);
    ck_assert_int_eq(V->open(C, P(&e, "a/b/two"), JR_O_READ, &f), 0);
    expect(V, f, 0, "1");
    ck_assert_int_eq(V->close(C, f), 0);
    ck_assert_int_eq(V->rename(C, P(&e, "a/b/none"), P(&e, "a/b/x")), JR_ENOTFOUND);
    char acc[256] = "";
    ck_assert_int_eq(V->list(C, P(&e, "a/b"), collect, acc), 0);
    ck_assert_str_eq(acc, "two,");
    acc[0] = 0;
    ck_assert_int_eq(V->list(C, P(&e, "a"), collect, acc), 0);
    ck_assert_str_eq(acc, "b,");
    ck_assert_int_eq(V->list(C, P(&e, "nope"), collect, acc), JR_ENOTFOUND);
    ck_assert_int_eq(V->sync_dir(C, P(&e, "a/b")), 0);
    ck_assert_int_eq(V->remove(C, P(&e, "a/b/two")), 0);
    ck_assert_int_eq(V->remove(C, P(&e, "a/b/two")), JR_ENOTFOUND);
    acc[0] = 0;
    ck_assert_int_eq(V->list(C, P(&e, "a/b"), collect, acc), 0);
    ck_assert_str_eq(acc, "");
    /* a non-zero callback return stops the listing and is returned */
    for (int i = 0; i < 3; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "s%d", i);
        ck_assert_int_eq(V->open(C, P(&e, nm), JR_O_CREATE, &f), 0);
        ck_assert_int_eq(V->close(C, f), 0);
    }
    int cnt = 0;
    ck_assert_int_eq(V->list(C, e.dir, stop_at_two, &cnt), 77);
    ck_assert_int_eq(cnt, 2);
    env_close(&e);
}
END_TEST

START_TEST(large_write_roundtrip)
{
    env e;
    env_open(&e, _i);
    jr_file *f;
    size_t n = 3 << 20;
    uint8_t *a = malloc(n), *b = malloc(n);
    for (size_t i = 0; i < n; i++) a[i] = (uint8_t)(i * 131 + (i >> 9));
    ck_assert_int_eq(V->open(C, P(&e, "big"), JR_O_CREATE, &f), 0);
    ck_assert_int_eq(V->pwrite(C, f, a, n, 4096), 0);
    ck_assert_int_eq(V->sync(C, f), 0);
    size_t got;
    ck_assert_int_eq(V->pread(C, f, b, n, 4096, &got), 0);
    ck_assert_uint_eq(got, n);
    ck_assert(memcmp(a, b, n) == 0);
    ck_assert_int_eq(V->close(C, f), 0);
    free(a);
    free(b);
    env_close(&e);
}
END_TEST

/* --- memfs: crash semantics ----------------------------------------------------------------*/
static jr_vfs *mk(uint64_t seed)
{
    jr_vfs *v;
    ck_assert_int_eq(jr__memfs_new(NULL, seed, &v), 0);
    ck_assert_int_eq(v->mkdir(v->ctx, "/d"), 0);
    return v;
}

static int exists(jr_vfs *v, const char *p)
{
    jr_file *f;
    int rc = v->open(v->ctx, p, JR_O_READ, &f);
    if (rc == 0) v->close(v->ctx, f);
    return rc == 0;
}

static size_t file_len(jr_vfs *v, const char *p)
{
    uint8_t *d;
    size_t n;
    ck_assert_int_eq(jr__memfs_read_all(v, p, &d, &n), 0);
    jr__memfs_release(v, d);
    return n;
}

START_TEST(crash_loses_unsynced_writes_only)
{
    jr_vfs *v = mk(1);
    jr_file *f;
    ck_assert_int_eq(v->open(v->ctx, "/d/f", JR_O_CREATE, &f), 0);
    ck_assert_int_eq(v->sync_dir(v->ctx, "/d"), 0);
    write_str(v, f, "durable", 0);
    ck_assert_int_eq(v->sync(v->ctx, f), 0);
    write_str(v, f, "-lost", 7);
    write_str(v, f, "X", 0); /* overwrite of synced bytes is rolled back too */
    jr__memfs_crash(v, 0);
    /* the old handle is stale; only close works */
    char b[4];
    size_t n;
    ck_assert_int_eq(v->pread(v->ctx, f, b, 1, 0, &n), JR_EIO);
    ck_assert_int_eq(v->pwrite(v->ctx, f, "x", 1, 0), JR_EIO);
    ck_assert_int_eq(v->close(v->ctx, f), 0);
    ck_assert_int_eq(v->open(v->ctx, "/d/f", JR_O_READ, &f), 0);
    expect(v, f, 0, "durable");
    v->close(v->ctx, f);
    jr__memfs_free(v);
}
END_TEST

/* memfs keeps files in 64 KiB chunks (holes read as zeros, chunks of removed files reused):
 * random writes, truncates, syncs and crashes across chunk boundaries, checked against a model
 * of the current and the synced image; files are removed and recreated so recycled chunks are
 * used, and must read as zeros wherever nothing was written. */
START_TEST(chunked_files_match_a_model)
{
    enum { MAXLEN = 300 << 10 };
    jr_vfs *v = mk(9);
    uint8_t *cur = calloc(1, MAXLEN), *dur = calloc(1, MAXLEN), *buf = malloc(MAXLEN);
    uint8_t *data = malloc(MAXLEN);
    size_t cur_len = 0, dur_len = 0;
    uint64_t x = 12345;
    jr_file *f = NULL;
    for (int round = 0; round < 6; round++) {
        ck_assert_int_eq(v->open(v->ctx, "/d/c", JR_O_CREATE, &f), 0);
        ck_assert_int_eq(v->sync_dir(v->ctx, "/d"), 0);
        for (int op = 0; op < 120; op++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            unsigned kind = (unsigned)(x >> 60) % 8;
            size_t off = (size_t)(x >> 20) % (MAXLEN - 70000);
            size_t len = (size_t)(x >> 8) % 70000;
            if (kind < 5) { /* write */
                for (size_t i = 0; i < len; i++) data[i] = (uint8_t)(x + i * 7);
                ck_assert_int_eq(v->pwrite(v->ctx, f, data, len, off), 0);
                memcpy(cur + off, data, len);
                if (off + len > cur_len) cur_len = off + len;
            } else if (kind == 5) { /* truncate (shrink or extend) */
                ck_assert_int_eq(v->truncate(v->ctx, f, off), 0);
                if (off < cur_len) memset(cur + off, 0, cur_len - off);
                cur_len = off;
            } else if (kind == 6) {
                ck_assert_int_eq(v->sync(v->ctx, f), 0);
                memcpy(dur, cur, MAXLEN);
                dur_len = cur_len;
            } else { /* power loss: back to the synced image */
                jr__memfs_crash(v, 0);
                v->close(v->ctx, f);
                ck_assert_int_eq(v->open(v->ctx, "/d/c", JR_O_READ, &f), 0);
                memcpy(cur, dur, MAXLEN);
                cur_len = dur_len;
            }
            size_t got = 0;
            ck_assert_int_eq(v->pread(v->ctx, f, buf, MAXLEN, 0, &got), 0);
            ck_assert_uint_eq(got, cur_len);
            ck_assert_msg(memcmp(buf, cur, cur_len) == 0, "round %d op %d kind %u", round, op,
                          kind);
        }
        v->close(v->ctx, f);
        ck_assert_int_eq(v->remove(v->ctx, "/d/c"), 0);
        memset(cur, 0, MAXLEN);
        memset(dur, 0, MAXLEN);
        cur_len = dur_len = 0;
    }
    free(cur);
    free(dur);
    free(buf);
    free(data);
    jr__memfs_free(v);
}
END_TEST

START_TEST(crash_rolls_back_truncate)
{
    jr_vfs *v = mk(1);
    jr_file *f;
    ck_assert_int_eq(v->open(v->ctx, "/d/f", JR_O_CREATE, &f), 0);
    ck_assert_int_eq(v->sync_dir(v->ctx, "/d"), 0);
    write_str(v, f, "0123456789", 0);
    ck_assert_int_eq(v->sync(v->ctx, f), 0);
    ck_assert_int_eq(v->truncate(v->ctx, f, 3), 0);
    write_str(v, f, "abc", 3);
    jr__memfs_crash(v, 0);
    v->close(v->ctx, f);
    ck_assert_int_eq(v->open(v->ctx, "/d/f", JR_O_READ, &f), 0);
    expect(v, f, 0, "0123456789");
    v->close(v->ctx, f);
    jr__memfs_free(v);
}
END_TEST

START_TEST(create_needs_sync_dir)
{
    jr_vfs *v = mk(1);
    jr_file *f;
    ck_assert_int_eq(v->open(v->ctx, "/d/a", JR_O_CREATE, &f), 0);
    write_str(v, f, "a", 0);
    ck_assert_int_eq(v->sync(v->ctx, f), 0); /* data synced, name not */
    v->close(v->ctx, f);
    ck_assert_int_eq(v->open(v->ctx, "/d/b", JR_O_CREATE, &f), 0);
    v->close(v->ctx, f);
    ck_assert_int_eq(v->sync_dir(v->ctx, "/d"), 0);
    ck_assert_int_eq(v->open(v->ctx, "/d/c", JR_O_CREATE, &f), 0);
    v->close(v->ctx, f);
    jr__memfs_crash(v, 0);
    ck_assert(exists(v, "/d/a"));
    ck_assert(exists(v, "/d/b"));
    ck_assert(!exists(v, "/d/c"));
    ck_assert_uint_eq(file_len(v, "/d/a"), 1);
    jr__memfs_free(v);
}
END_TEST

START_TEST(rename_and_remove_are_durable)
{
    jr_vfs *v = mk(1);
    jr_file *f;
    ck_assert_int_eq(v->open(v->ctx, "/d/tmp", JR_O_CREATE, &f), 0);
    write_str(v, f, "new", 0);
    ck_assert_int_eq(v->sync(v->ctx, f), 0);
    v->close(v->ctx, f);
    ck_assert_int_eq(v->open(v->ctx, "/d/gone", JR_O_CREATE, &f), 0);
    v->close(v->ctx, f);
    ck_assert_int_eq(v->sync_dir(v->ctx, "/d"), 0);
    ck_assert_int_eq(v->rename(v->ctx, "/d/tmp", "/d/final"), 0);
    ck_assert_int_eq(v->remove(v->ctx, "/d/gone"), 0);
    jr__memfs_crash(v, 1);
    ck_assert(exists(v, "/d/final"));
    ck_assert(!exists(v, "/d/tmp"));
    ck_assert(!exists(v, "/d/gone"));
    ck_assert_uint_eq(file_len(v, "/d/final"), 3);
    jr__memfs_free(v);
}
END_TEST

START_TEST(torn_crash_keeps_a_prefix_of_unsynced_writes)
{
    /* over many seeds, the surviving content is always synced bytes + a prefix of the
     * unsynced append stream, and every outcome length is seen at least once in aggregate */
    const char *stream = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    int seen_partial = 0, seen_none = 0, seen_all = 0;
    for (uint64_t seed = 0; seed < 300; seed++) {
        jr_vfs *v = mk(seed);
        jr_file *f;
        ck_assert_int_eq(v->open(v->ctx, "/d/f", JR_O_CREATE, &f), 0);
        ck_assert_int_eq(v->sync_dir(v->ctx, "/d"), 0);
        write_str(v, f, "base", 0);
        ck_assert_int_eq(v->sync(v->ctx, f), 0);
        for (int i = 0; i < 26; i += 13) {
            ck_assert_int_eq(v->pwrite(v->ctx, f, stream + i, 13, 4 + (uint64_t)i), 0);
        }
        jr__memfs_crash(v, 1);
        v->close(v->ctx, f);
        uint8_t *d;
        size_t n;
        ck_assert_int_eq(jr__memfs_read_all(v, "/d/f", &d, &n), 0);
        ck_assert_msg(n >= 4 && n <= 30, "seed %llu: len %zu", (unsigned long long)seed, n);
        ck_assert(memcmp(d, "base", 4) == 0);
        ck_assert_msg(memcmp(d + 4, stream, n - 4) == 0, "seed %llu: not a prefix",
                      (unsigned long long)seed);
        seen_none += n == 4;
        seen_all += n == 30;
        seen_partial += n > 4 && n < 30;
        jr__memfs_release(v, d);
        jr__memfs_free(v);
    }
    ck_assert(seen_none && seen_all && seen_partial);
}
END_TEST

START_TEST(crash_under_prefix_spares_other_files)
{
    jr_vfs *v = mk(1);
    jr_file *a, *b;
    ck_assert_int_eq(v->mkdir(v->ctx, "/d/n1"), 0);
    ck_assert_int_eq(v->mkdir(v->ctx, "/d/n2"), 0);
    ck_assert_int_eq(v->open(v->ctx, "/d/n1/f", JR_O_CREATE, &a), 0);
    ck_assert_int_eq(v->open(v->ctx, "/d/n2/f", JR_O_CREATE, &b), 0);
    write_str(v, a, "one", 0);
    write_str(v, b, "two", 0);
    jr__memfs_crash_under(v, "/d/n1/", 0);
    ck_assert(!exists(v, "/d/n1/f"));
    expect(v, b, 0, "two"); /* still live and unsynced, handle still valid */
    v->close(v->ctx, a);
    v->close(v->ctx, b);
    jr__memfs_free(v);
}
END_TEST

START_TEST(same_seed_same_crash)
{
    size_t lens[2];
    for (int r = 0; r < 2; r++) {
        jr_vfs *v = mk(12345);
        jr_file *f;
        ck_assert_int_eq(v->open(v->ctx, "/d/f", JR_O_CREATE, &f), 0);
        ck_assert_int_eq(v->sync_dir(v->ctx, "/d"), 0);
        for (int i = 0; i < 20; i++) write_str(v, f, "0123456789", (uint64_t)i * 10);
        jr__memfs_crash(v, 1);
        v->close(v->ctx, f);
        lens[r] = file_len(v, "/d/f");
        jr__memfs_free(v);
    }
    ck_assert_uint_eq(lens[0], lens[1]);
}
END_TEST

/* --- memfs: fault injection and counters ----------------------------------------------------*/
START_TEST(scheduled_failures)
{
    jr_vfs *v = mk(1);
    jr_file *f;
    ck_assert_int_eq(v->open(v->ctx, "/d/f", JR_O_CREATE, &f), 0);
    ck_assert_int_eq(jr__memfs_fail(v, JR__MEMFS_PWRITE, 2, JR_ENOSPC, 0, NULL), 0);
    write_str(v, f, "a", 0);                                      /* 1st: ok */
    ck_assert_int_eq(v->pwrite(v->ctx, f, "b", 1, 1), JR_ENOSPC); /* 2nd: fails */
    write_str(v, f, "c", 1);                                      /* 3rd: ok again */
    expect(v, f, 0, "ac");
    /* sticky sync failure: nothing becomes durable */
    ck_assert_int_eq(jr__memfs_fail(v, JR__MEMFS_SYNC, 1, JR_EIO, 1, "/d/"), 0);
    ck_assert_int_eq(v->sync(v->ctx, f), JR_EIO);
    ck_assert_int_eq(v->sync(v->ctx, f), JR_EIO);
    ck_assert_int_eq(v->sync_dir(v->ctx, "/d"), 0);
    jr__memfs_fail_clear(v);
    /* a prefix that does not match never fires */
    ck_assert_int_eq(jr__memfs_fail(v, JR__MEMFS_OPEN, 1, JR_EIO, 1, "/other/"), 0);
    jr_file *g;
    ck_assert_int_eq(v->open(v->ctx, "/d/g", JR_O_CREATE, &g), 0);
    v->close(v->ctx, g);
    jr__memfs_fail_clear(v);
    jr__memfs_crash(v, 0);
    v->close(v->ctx, f);
    ck_assert_uint_eq(file_len(v, "/d/f"), 0); /* the failed syncs made nothing durable */
    jr__memfs_stats st;
    jr__memfs_stats_get(v, &st);
    ck_assert_uint_eq(st.faults, 3);
    ck_assert_uint_eq(st.syncs, 0);
    ck_assert_uint_eq(st.writes, 2);
    ck_assert_uint_eq(st.bytes_written, 2);
    ck_assert_uint_eq(st.dir_syncs, 1);
    ck_assert_uint_eq(st.ops[JR__MEMFS_PWRITE], 3);
    ck_assert_int_eq(jr__memfs_fail(v, JR__MEMFS_NOPS, 1, JR_EIO, 0, NULL), JR_EINVAL);
    jr__memfs_free(v);
}
END_TEST

/* JR__MEMFS_ANY counts calls of every kind; a failed close still closes; a second close of
 * the same handle is refused and counted, and the open-handle count follows opens and closes. */
START_TEST(failures_of_any_call_and_double_close)
{
    jr_vfs *v = mk(1);
    jr_file *f, *g;
    ck_assert_int_eq(jr__memfs_fail(v, JR__MEMFS_ANY, 3, JR_EIO, 0, NULL), 0);
    ck_assert_int_eq(v->open(v->ctx, "/d/f", JR_O_CREATE, &f), 0); /* 1st */
    write_str(v, f, "a", 0);                                       /* 2nd */
    ck_assert_int_eq(v->sync(v->ctx, f), JR_EIO);                  /* 3rd: fails */
    ck_assert_int_eq(v->sync(v->ctx, f), 0);
    ck_assert_int_eq(jr__memfs_fail(v, JR__MEMFS_ANY, 2, JR_EIO, 0, "/d/"), 0);
    ck_assert_int_eq(v->open(v->ctx, "/d/g", JR_O_CREATE, &g), 0);
    jr__memfs_stats st;
    jr__memfs_stats_get(v, &st);
    ck_assert_uint_eq(st.handles, 2);
    ck_assert_int_eq(v->close(v->ctx, g), JR_EIO); /* fails, and closes all the same */
    jr__memfs_stats_get(v, &st);
    ck_assert_uint_eq(st.handles, 1);
    ck_assert_uint_eq(st.faults, 2);
    ck_assert_int_eq(v->close(v->ctx, f), 0);
    ck_assert_int_eq(v->close(v->ctx, f), JR_EINVAL);
    jr__memfs_stats_get(v, &st);
    ck_assert_uint_eq(st.handles, 0);
    ck_assert_uint_eq(st.bad_handles, 1);
    jr__memfs_free(v);
}
END_TEST

START_TEST(bit_flips_zero_and_truncate)
{
    jr_vfs *v = mk(7);
    jr_file *f;
    uint8_t buf[1024], *d;
    size_t n;
    memset(buf, 0x55, sizeof buf);
    ck_assert_int_eq(v->open(v->ctx, "/d/f", JR_O_CREATE, &f), 0);
    ck_assert_int_eq(v->pwrite(v->ctx, f, buf, sizeof buf, 0), 0);
    ck_assert_int_eq(jr__memfs_flip_bits(v, "/d/f", 100, 10, 1), 0);
    ck_assert_int_eq(jr__memfs_read_all(v, "/d/f", &d, &n), 0);
    int diff = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t x = d[i] ^ 0x55;
        if (x) ck_assert(i >= 100 && i < 110);
        diff += __builtin_popcount(x);
    }
    ck_assert_int_eq(diff, 1);
    jr__memfs_release(v, d);
    ck_assert_int_eq(jr__memfs_zero(v, "/d/f", 512, 4096), 0);
    ck_assert_int_eq(jr__memfs_read_all(v, "/d/f", &d, &n), 0);
    ck_assert_uint_eq(n, 1024);
    ck_assert(d[511] == 0x55 && d[512] == 0 && d[1023] == 0);
    jr__memfs_release(v, d);
    ck_assert_int_eq(jr__memfs_truncate(v, "/d/f", 10), 0);
    ck_assert_uint_eq(file_len(v, "/d/f"), 10);
    ck_assert_int_eq(jr__memfs_truncate(v, "/d/none", 10), JR_ENOTFOUND);
    v->close(v->ctx, f);
    jr__memfs_free(v);
}
END_TEST

START_TEST(capacity_gives_enospc)
{
    jr_vfs *v = mk(1);
    jr_file *f;
    char buf[100] = {0};
    jr__memfs_set_capacity(v, 150);
    ck_assert_int_eq(v->open(v->ctx, "/d/f", JR_O_CREATE, &f), 0);
    ck_assert_int_eq(v->pwrite(v->ctx, f, buf, 100, 0), 0);
    ck_assert_int_eq(v->pwrite(v->ctx, f, buf, 100, 100), JR_ENOSPC);
    ck_assert_int_eq(v->pwrite(v->ctx, f, buf, 50, 0), 0); /* overwrite needs no space */
    ck_assert_int_eq(v->pwrite(v->ctx, f, buf, 1, (uint64_t)1 << 50), JR_ENOSPC);
    v->close(v->ctx, f);
    jr__memfs_stats st;
    jr__memfs_stats_get(v, &st);
    ck_assert_uint_eq(st.bytes_stored, 100);
    ck_assert_uint_eq(st.files, 1);
    jr__memfs_free(v);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("vfs");
    TCase *both = tcase_create("both");
    tcase_add_loop_test(both, write_read_roundtrip, 0, 2);
    tcase_add_loop_test(both, writeback_is_a_hint, 0, 2);
    tcase_add_loop_test(both, write_past_end_leaves_zero_hole, 0, 2);
    tcase_add_loop_test(both, open_flags, 0, 2);
    tcase_add_loop_test(both, truncate_shrinks_and_extends, 0, 2);
    tcase_add_loop_test(both, rename_remove_list_mkdir, 0, 2);
    tcase_add_loop_test(both, large_write_roundtrip, 0, 2);
    suite_add_tcase(s, both);
    TCase *crash = tcase_create("memfs_crash");
    tcase_add_test(crash, crash_loses_unsynced_writes_only);
    tcase_add_test(crash, crash_rolls_back_truncate);
    tcase_add_test(crash, chunked_files_match_a_model);
    tcase_add_test(crash, create_needs_sync_dir);
    tcase_add_test(crash, rename_and_remove_are_durable);
    tcase_add_test(crash, torn_crash_keeps_a_prefix_of_unsynced_writes);
    tcase_add_test(crash, crash_under_prefix_spares_other_files);
    tcase_add_test(crash, same_seed_same_crash);
    suite_add_tcase(s, crash);
    TCase *faults = tcase_create("memfs_faults");
    tcase_add_test(faults, scheduled_failures);
    tcase_add_test(faults, failures_of_any_call_and_double_close);
    tcase_add_test(faults, bit_flips_zero_and_truncate);
    tcase_add_test(faults, capacity_gives_enospc);
    suite_add_tcase(s, faults);
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
