/*
 * test_powervfs.c — the test-only power-loss vfs (powervfs.c): after a power cut every file
 * holds exactly what its last completed sync covered, except a torn prefix of its newest
 * write; renames and removes stay done; a file the cut finds clean is untouched. Injected I/O
 * errors (the control file's `eio`, `enospc`, `sync`) fail the calls they name, change nothing
 * on the disk, and a failed sync covers nothing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "powervfs.h"

static jr_vfs *v;
static char dir[64], ioerr_file[128];

static void setup(void)
{
    if (v) return;
    snprintf(dir, sizeof dir, "/tmp/jetraft-powervfs-XXXXXX");
    if (!mkdtemp(dir)) abort();
    snprintf(ioerr_file, sizeof ioerr_file, "%s/ioerr", dir);
    setenv("JETRAFT_TEST_POWERLOSS", "7", 1);
    setenv("JETRAFT_TEST_IOERR_FILE", ioerr_file, 1);
    v = powervfs_open(uv_default_loop(), "test");
}

/* Writes the control file's word and has the vfs read it. */
static void set_ioerr(const char *word, int mode)
{
    FILE *f = fopen(ioerr_file, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", word);
    fclose(f);
    ck_assert_int_eq(powervfs_poll_ioerr(v), mode);
}

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static jr_file *open_file(const char *name, int flags)
{
    char p[128];
    path_of(p, sizeof p, name);
    jr_file *f = NULL;
    ck_assert_int_eq(v->open(v->ctx, p, flags, &f), 0);
    return f;
}

static void put(jr_file *f, uint64_t off, char c, size_t len)
{
    char buf[4096];
    memset(buf, c, len);
    ck_assert_int_eq(v->pwrite(v->ctx, f, buf, len, off), 0);
}

/* A new file `name` holding `len` bytes `c`, synced. */
static jr_file *synced_file(const char *name, char c, size_t len)
{
    jr_file *f = open_file(name, JR_O_CREATE);
    put(f, 0, c, len);
    ck_assert_int_eq(v->sync(v->ctx, f), 0);
    return f;
}

/* The file's bytes, read through the POSIX vfs (what a restarted server would see). */
static size_t slurp(const char *name, char *buf, size_t cap)
{
    char p[128];
    path_of(p, sizeof p, name);
    jr_vfs *px = jr_vfs_posix();
    jr_file *f = NULL;
    ck_assert_int_eq(px->open(px->ctx, p, JR_O_READ, &f), 0);
    size_t n = 0;
    ck_assert_int_eq(px->pread(px->ctx, f, buf, cap, 0, &n), 0);
    px->close(px->ctx, f);
    return n;
}

/* slurp of a file whose newest write may be torn: asserts its length is in [synced, whole). */
static size_t slurp_torn(const char *name, char *buf, size_t cap, size_t synced, size_t whole)
{
    size_t n = slurp(name, buf, cap);
    ck_assert_uint_ge(n, synced);
    ck_assert_uint_lt(n, whole);
    return n;
}

static void assert_run(const char *buf, size_t from, size_t to, char c)
{
    for (size_t i = from; i < to; i++)
        ck_assert_msg(buf[i] == c, "byte %zu is %c, not %c", i, buf[i], c);
}

START_TEST(unsynced_appends_and_overwrites_are_lost)
{
    setup();
    ck_assert_ptr_nonnull(v);
    jr_file *f = synced_file("a", 'A', 100);
    put(f, 10, 'X', 10);   /* overwrite, unsynced */
    put(f, 100, 'B', 100); /* append, unsynced: the newest write, maybe torn */
    ck_assert_int_eq(powervfs_roll_back(v), 1);
    char buf[400];
    size_t n = slurp_torn("a", buf, sizeof buf, 100, 200);
    assert_run(buf, 0, 100, 'A');
    assert_run(buf, 100, n, 'B');
    v->close(v->ctx, f);
}
END_TEST

START_TEST(a_synced_file_is_untouched)
{
    setup();
    jr_file *f = synced_file("b", 'S', 300);
    v->close(v->ctx, f);
    ck_assert_int_eq(powervfs_roll_back(v), 0);
    char buf[400];
    ck_assert_uint_eq(slurp("b", buf, sizeof buf), 300);
    assert_run(buf, 0, 300, 'S');
}
END_TEST

START_TEST(an_unsynced_truncate_is_undone)
{
    setup();
    jr_file *f = synced_file("c", 'C', 200);
    ck_assert_int_eq(v->truncate(v->ctx, f, 50), 0);
    v->close(v->ctx, f); /* closing does not sync */
    ck_assert_int_eq(powervfs_roll_back(v), 1);
    char buf[400];
    ck_assert_uint_eq(slurp("c", buf, sizeof buf), 200);
    assert_run(buf, 0, 200, 'C');
}
END_TEST

START_TEST(open_truncate_of_a_synced_file_is_undone)
{
    setup();
    jr_file *f = synced_file("d", 'D', 100);
    v->close(v->ctx, f);
    f = open_file("d", JR_O_CREATE | JR_O_TRUNCATE);
    put(f, 0, 'N', 40); /* the newest write: a prefix may survive */
    ck_assert_int_eq(powervfs_roll_back(v), 1);
    char buf[400];
    ck_assert_uint_eq(slurp("d", buf, sizeof buf), 100);
    size_t k = 0;
    while (k < 40 && buf[k] == 'N') k++;
    assert_run(buf, k, 100, 'D');
    v->close(v->ctx, f);
}
END_TEST

START_TEST(a_rename_is_durable_and_carries_unsynced_state)
{
    setup();
    char from[128], to[128];
    path_of(from, sizeof from, "e.tmp");
    path_of(to, sizeof to, "e");
    jr_file *f = synced_file("e.tmp", 'T', 64);
    put(f, 64, 'U', 64); /* unsynced when renamed */
    ck_assert_int_eq(v->rename(v->ctx, from, to), 0);
    ck_assert_int_eq(powervfs_roll_back(v), 1);
    char buf[400];
    size_t n = slurp_torn("e", buf, sizeof buf, 64, 128);
    assert_run(buf, 0, 64, 'T');
    assert_run(buf, 64, n, 'U');
    ck_assert_int_eq(access(from, F_OK), -1);
    v->close(v->ctx, f);
}
END_TEST

START_TEST(a_removed_file_stays_removed)
{
    setup();
    char p[128];
    path_of(p, sizeof p, "f");
    jr_file *f = open_file("f", JR_O_CREATE);
    put(f, 0, 'F', 10);
    v->close(v->ctx, f);
    ck_assert_int_eq(v->remove(v->ctx, p), 0);
    ck_assert_int_eq(powervfs_roll_back(v), 0);
    ck_assert_int_eq(access(p, F_OK), -1);
}
END_TEST

START_TEST(eio_fails_every_change_and_leaves_the_disk_as_it_was)
{
    setup();
    char p[128], q[128];
    path_of(p, sizeof p, "g");
    path_of(q, sizeof q, "g2");
    jr_file *f = synced_file("g", 'G', 100);
    set_ioerr("eio", 1);
    char buf[400];
    memset(buf, 'X', 50);
    ck_assert_int_eq(v->pwrite(v->ctx, f, buf, 50, 10), JR_EIO);
    ck_assert_int_eq(v->pwrite(v->ctx, f, buf, 50, 100), JR_EIO);
    ck_assert_int_eq(v->truncate(v->ctx, f, 10), JR_EIO);
    ck_assert_int_eq(v->sync(v->ctx, f), JR_EIO);
    ck_assert_int_eq(v->rename(v->ctx, p, q), JR_EIO);
    ck_assert_int_eq(v->remove(v->ctx, p), JR_EIO);
    jr_file *g = NULL;
    ck_assert_int_eq(v->open(v->ctx, q, JR_O_CREATE, &g), JR_EIO);
    size_t n = 0;
    ck_assert_int_eq(v->pread(v->ctx, f, buf, sizeof buf, 0, &n), 0); /* reads succeed */
    ck_assert_uint_eq(n, 100);
    set_ioerr("none", 0);
    ck_assert_uint_eq(slurp("g", buf, sizeof buf), 100);
    assert_run(buf, 0, 100, 'G');
    ck_assert_int_eq(access(q, F_OK), -1);
    put(f, 100, 'H', 10); /* the fault cleared: calls succeed again */
    ck_assert_int_eq(v->sync(v->ctx, f), 0);
    ck_assert_uint_eq(slurp("g", buf, sizeof buf), 110);
    v->close(v->ctx, f);
}
END_TEST

START_TEST(enospc_fails_only_what_grows_a_file)
{
    setup();
    jr_file *f = synced_file("h", 'A', 100);
    set_ioerr("enospc", 2);
    char buf[400];
    memset(buf, 'B', 50);
    ck_assert_int_eq(v->pwrite(v->ctx, f, buf, 50, 80), JR_ENOSPC); /* past the end */
    ck_assert_int_eq(v->truncate(v->ctx, f, 200), JR_ENOSPC);
    ck_assert_int_eq(v->pwrite(v->ctx, f, buf, 50, 10), 0); /* in place */
    ck_assert_int_eq(v->truncate(v->ctx, f, 90), 0);
    ck_assert_int_eq(v->sync(v->ctx, f), 0);
    set_ioerr("none", 0);
    ck_assert_uint_eq(slurp("h", buf, sizeof buf), 90);
    assert_run(buf, 0, 10, 'A');
    assert_run(buf, 10, 60, 'B');
    assert_run(buf, 60, 90, 'A');
    v->close(v->ctx, f);
}
END_TEST

START_TEST(a_failed_sync_covers_nothing)
{
    setup();
    jr_file *f = synced_file("i", 'S', 100);
    set_ioerr("sync", 3);
    put(f, 0, 'W', 100);
    put(f, 100, 'W', 100);
    ck_assert_int_eq(v->sync(v->ctx, f), JR_EIO);
    set_ioerr("unknown-word", 0);
    /* The writes its failed sync was for are lost at a power cut (no torn prefix: the newest
     * write keeps at most a prefix of 'W's past the synced 100 bytes). */
    ck_assert_int_eq(powervfs_roll_back(v), 1);
    char buf[400];
    slurp_torn("i", buf, sizeof buf, 100, 200);
    assert_run(buf, 0, 100, 'S');
    v->close(v->ctx, f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("powervfs");
    TCase *tc = tcase_create("cut");
    tcase_add_test(tc, unsynced_appends_and_overwrites_are_lost);
    tcase_add_test(tc, a_synced_file_is_untouched);
    tcase_add_test(tc, an_unsynced_truncate_is_undone);
    tcase_add_test(tc, open_truncate_of_a_synced_file_is_undone);
    tcase_add_test(tc, a_rename_is_durable_and_carries_unsynced_state);
    tcase_add_test(tc, a_removed_file_stays_removed);
    tcase_add_test(tc, eio_fails_every_change_and_leaves_the_disk_as_it_was);
    tcase_add_test(tc, enospc_fails_only_what_grows_a_file);
    tcase_add_test(tc, a_failed_sync_covers_nothing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* one vfs for the process: the cases share it */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (dir[0] && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return failed ? 1 : 0;
}
