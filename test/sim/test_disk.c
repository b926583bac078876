/*
 * The fixture's disk faults (include/jetraft/sim.h, "Disk faults"): listing a node's files,
 * cutting a file's tail with its synced bytes, flipping bits, zeroing a range, deleting a
 * file, and saving a node's disk to roll it back later — each on a crashed node only, each
 * seen by the node when it restarts.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MS ((uint64_t)1000000)

/* Writes len bytes of pattern `c` to path on node i's disk at off; sync: fdatasync it. The
 * parent directory must exist. */
static void put(jr_sim *sim, unsigned i, const char *path, uint64_t off, const char *bytes,
                size_t len, int sync)
{
    jr_vfs *v = jr_sim_vfs(sim, i);
    jr_file *f;
    ck_assert_int_eq(v->open(v->ctx, path, JR_O_CREATE, &f), 0);
    ck_assert_int_eq(v->pwrite(v->ctx, f, bytes, len, off), 0);
    if (sync) ck_assert_int_eq(v->sync(v->ctx, f), 0);
    ck_assert_int_eq(v->close(v->ctx, f), 0);
}

/* Reads the whole file at path on node i's disk into buf (cap bytes); returns its size, or -1
 * if there is no such file. */
static long get(jr_sim *sim, unsigned i, const char *path, char *buf, size_t cap)
{
    jr_vfs *v = jr_sim_vfs(sim, i);
    jr_file *f;
    if (v->open(v->ctx, path, 0, &f) != 0) return -1;
    uint64_t size = 0;
    ck_assert_int_eq(v->size(v->ctx, f, &size), 0);
    ck_assert_uint_le(size, cap);
    size_t n = 0;
    ck_assert_int_eq(v->pread(v->ctx, f, buf, (size_t)size, 0, &n), 0);
    ck_assert_uint_eq(n, size);
    ck_assert_int_eq(v->close(v->ctx, f), 0);
    return (long)size;
}

typedef struct listing {
    char path[16][64];
    uint64_t size[16];
    int n;
    int wal; /* "/wal/<seq>.wal" segments seen */
} listing;

static int collect(void *arg, const char *path, uint64_t size)
{
    listing *l = arg;
    size_t k = strlen(path);
    if (!strncmp(path, "/wal/", 5) && k > 4 && !strcmp(path + k - 4, ".wal")) l->wal++;
    if (l->n < 16) {
        snprintf(l->path[l->n], sizeof l->path[l->n], "%s", path);
        l->size[l->n] = size;
    }
    l->n++;
    return 0;
}

static int stop_at_second(void *arg, const char *path, uint64_t size)
{
    (void)path;
    (void)size;
    return ++*(int *)arg == 2 ? JR_ECANCELED : 0;
}

static jr_sim *new_sim(uint64_t seed)
{
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.seed = seed;
    jr_sim *sim;
    ck_assert_int_eq(jr_sim_new(&cfg, &sim), 0);
    jr_vfs *v = jr_sim_vfs(sim, 1);
    ck_assert_int_eq(v->mkdir(v->ctx, "/t"), 0);
    return sim;
}

START_TEST(files_are_listed_in_path_order_with_their_sizes)
{
    jr_sim *sim = new_sim(3);
    put(sim, 1, "/t/b", 0, "bbbb", 4, 1);
    put(sim, 1, "/t/a", 0, "aaaaaaa", 7, 0);
    listing l;
    memset(&l, 0, sizeof l);
    ck_assert_int_eq(jr_sim_files(sim, 1, collect, &l), 0); /* running nodes may be listed */
    ck_assert_int_ge(l.wal, 1);                             /* the node's own WAL segment */
    ck_assert_int_le(l.n, 16);
    int a = -1, b = -1;
    for (int k = 0; k < l.n; k++) {
        if (k) ck_assert_int_lt(strcmp(l.path[k - 1], l.path[k]), 0);
        if (!strcmp(l.path[k], "/t/a")) a = k;
        if (!strcmp(l.path[k], "/t/b")) b = k;
    }
    ck_assert_int_ge(a, 0);
    ck_assert_int_eq(b, a + 1);
    ck_assert_uint_eq(l.size[a], 7);
    ck_assert_uint_eq(l.size[b], 4);
    int calls = 0;
    ck_assert_int_eq(jr_sim_files(sim, 1, stop_at_second, &calls), JR_ECANCELED);
    ck_assert_int_eq(calls, 2);
    /* a crash loses /t/a and /t/b (their names were never made durable) */
    ck_assert_int_eq(jr_sim_crash(sim, 1), 0);
    memset(&l, 0, sizeof l);
    ck_assert_int_eq(jr_sim_files(sim, 1, collect, &l), 0);
    ck_assert_int_ge(l.wal, 1);
    for (int k = 0; k < l.n; k++) ck_assert_int_ne(strncmp(l.path[k], "/t/", 3), 0);
    ck_assert_int_eq(jr_sim_files(sim, 3, collect, &l), JR_EINVAL);
    ck_assert_int_eq(jr_sim_files(sim, 1, NULL, NULL), JR_EINVAL);
    jr_sim_free(sim);
}
END_TEST

/* Makes /t durable with f in it: sync_dir, as a real node does after creating a file. */
static void sync_dir(jr_sim *sim, unsigned i)
{
    jr_vfs *v = jr_sim_vfs(sim, i);
    ck_assert_int_eq(v->sync_dir(v->ctx, "/t"), 0);
}

START_TEST(damage_needs_a_crashed_node)
{
    jr_sim *sim = new_sim(4);
    put(sim, 1, "/t/f", 0, "0123456789", 10, 1);
    sync_dir(sim, 1);
    ck_assert_int_eq(jr_sim_cut_tail(sim, 1, "/t/f", 3), JR_EINVAL);
    ck_assert_int_eq(jr_sim_flip_bits(sim, 1, "/t/f", 0, 0, 1), JR_EINVAL);
    ck_assert_int_eq(jr_sim_zero(sim, 1, "/t/f", 0, 2), JR_EINVAL);
    ck_assert_int_eq(jr_sim_remove_file(sim, 1, "/t/f"), JR_EINVAL);
    jr_sim_disk *d;
    ck_assert_int_eq(jr_sim_disk_save(sim, 1, &d), 0);
    ck_assert_int_eq(jr_sim_disk_restore(sim, 1, d), JR_EINVAL);
    char buf[64];
    ck_assert_int_eq(get(sim, 1, "/t/f", buf, sizeof buf), 10); /* nothing changed */
    ck_assert_int_eq(jr_sim_crash(sim, 1), 0);
    ck_assert_int_eq(jr_sim_cut_tail(sim, 1, "/t/nope", 3), JR_ENOTFOUND);
    ck_assert_int_eq(jr_sim_flip_bits(sim, 1, "/t/nope", 0, 0, 1), JR_ENOTFOUND);
    ck_assert_int_eq(jr_sim_zero(sim, 1, "/t/nope", 0, 1), JR_ENOTFOUND);
    ck_assert_int_eq(jr_sim_remove_file(sim, 1, "/t/nope"), JR_ENOTFOUND);
    ck_assert_int_eq(jr_sim_cut_tail(sim, 9, "/t/f", 3), JR_EINVAL);
    ck_assert_int_eq(jr_sim_cut_tail(sim, 1, NULL, 3), JR_EINVAL);
    ck_assert_int_eq(jr_sim_disk_restore(sim, 1, NULL), JR_EINVAL);
    jr_sim_disk_free(d);
    ck_assert_int_eq(jr_sim_disk_save(sim, 9, &d), JR_EINVAL); /* and sets d to NULL */
    ck_assert_ptr_null(d);
    ck_assert_int_eq(jr_sim_disk_save(sim, 1, NULL), JR_EINVAL);
    jr_sim_free(sim);
}
END_TEST

START_TEST(cut_tail_takes_synced_bytes)
{
    jr_sim *sim = new_sim(5);
    put(sim, 1, "/t/f", 0, "0123456789", 10, 1);
    put(sim, 1, "/t/g", 0, "abc", 3, 1);
    sync_dir(sim, 1);
    ck_assert_int_eq(jr_sim_crash(sim, 1), 0);
    ck_assert_int_eq(jr_sim_cut_tail(sim, 1, "/t/f", 4), 0);
    ck_assert_int_eq(jr_sim_cut_tail(sim, 1, "/t/g", 99), 0);
    ck_assert_int_eq(jr_sim_restart(sim, 1), 0);
    char buf[64];
    ck_assert_int_eq(get(sim, 1, "/t/f", buf, sizeof buf), 6);
    ck_assert_int_eq(memcmp(buf, "012345", 6), 0);
    ck_assert_int_eq(get(sim, 1, "/t/g", buf, sizeof buf), 0);
    /* the cut is on the medium: a later crash does not bring the bytes back */
    ck_assert_int_eq(jr_sim_crash(sim, 1), 0);
    ck_assert_int_eq(get(sim, 1, "/t/f", buf, sizeof buf), 6);
    jr_sim_free(sim);
}
END_TEST

static int popcount_diff(const char *a, const char *b, size_t n, size_t *first, size_t *last)
{
    int bits = 0;
    *first = n;
    *last = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned x = (unsigned char)a[k] ^ (unsigned char)b[k];
        if (!x) continue;
        if (*first == n) *first = k;
        *last = k;
        bits += __builtin_popcount(x);
    }
    return bits;
}

START_TEST(flip_bits_and_zero_change_exactly_their_range)
{
    jr_sim *sim = new_sim(6);
    char orig[256], buf[256];
    for (size_t k = 0; k < sizeof orig; k++) orig[k] = (char)(0x55 ^ k);
    put(sim, 1, "/t/f", 0, orig, sizeof orig, 1);
    put(sim, 1, "/t/z", 0, orig, sizeof orig, 1);
    sync_dir(sim, 1);
    ck_assert_int_eq(jr_sim_crash(sim, 1), 0);
    ck_assert_int_eq(jr_sim_flip_bits(sim, 1, "/t/f", 100, 50, 1), 0);
    ck_assert_int_eq(jr_sim_flip_bits(sim, 1, "/t/f", 1000, 0, 5), 0); /* past the end */
    ck_assert_int_eq(jr_sim_zero(sim, 1, "/t/z", 200, 1000), 0);       /* clipped */
    ck_assert_int_eq(jr_sim_restart(sim, 1), 0);
    size_t first, last;
    ck_assert_int_eq(get(sim, 1, "/t/f", buf, sizeof buf), 256);
    ck_assert_int_eq(popcount_diff(orig, buf, sizeof buf, &first, &last), 1);
    ck_assert_uint_ge(first, 100);
    ck_assert_uint_lt(last, 150);
    ck_assert_int_eq(get(sim, 1, "/t/z", buf, sizeof buf), 256);
    ck_assert_int_eq(memcmp(buf, orig, 200), 0);
    for (size_t k = 200; k < 256; k++) ck_assert_int_eq(buf[k], 0);
    jr_sim_free(sim);
}
END_TEST

START_TEST(removed_file_stays_gone)
{
    jr_sim *sim = new_sim(7);
    put(sim, 1, "/t/f", 0, "x", 1, 1);
    sync_dir(sim, 1);
    ck_assert_int_eq(jr_sim_crash(sim, 1), 0);
    ck_assert_int_eq(jr_sim_remove_file(sim, 1, "/t/f"), 0);
    ck_assert_int_eq(jr_sim_remove_file(sim, 1, "/t/f"), JR_ENOTFOUND);
    ck_assert_int_eq(jr_sim_restart(sim, 1), 0);
    char buf[8];
    ck_assert_int_eq(get(sim, 1, "/t/f", buf, sizeof buf), -1);
    ck_assert_int_eq(jr_sim_crash(sim, 1), 0);
    ck_assert_int_eq(get(sim, 1, "/t/f", buf, sizeof buf), -1);
    jr_sim_free(sim);
}
END_TEST

/* A copy taken while the node runs holds what a power loss then would have left: synced bytes
 * of durable names. Restoring it removes whatever came later, directories included. */
START_TEST(disk_rolls_back_to_a_saved_copy)
{
    jr_sim *sim = new_sim(8);
    jr_vfs *v = jr_sim_vfs(sim, 1);
    put(sim, 1, "/t/a", 0, "aaaa", 4, 1);
    put(sim, 1, "/t/c", 0, "cccc", 4, 1);
    sync_dir(sim, 1);
    put(sim, 1, "/t/c", 4, "CC", 2, 0);   /* unsynced: not in the copy */
    put(sim, 1, "/t/b", 0, "bbbb", 4, 1); /* synced, but its name is not durable */
    {
        jr_file *f; /* a truncate since the last sync is undone in the copy too */
        put(sim, 1, "/t/e", 0, "eeeeee", 6, 1);
        ck_assert_int_eq(v->sync_dir(v->ctx, "/t"), 0);
        ck_assert_int_eq(v->open(v->ctx, "/t/e", 0, &f), 0);
        ck_assert_int_eq(v->truncate(v->ctx, f, 2), 0);
        ck_assert_int_eq(v->pwrite(v->ctx, f, "E", 1, 1), 0);
        ck_assert_int_eq(v->close(v->ctx, f), 0);
        ck_assert_int_eq(v->remove(v->ctx, "/t/b"), 0); /* b again: created after e's sync_dir */
        put(sim, 1, "/t/b", 0, "bbbb", 4, 1);
    }
    jr_sim_disk *d;
    ck_assert_int_eq(jr_sim_disk_save(sim, 1, &d), 0);
    jr_sim_run_for(sim, 200 * MS); /* the node goes on writing its WAL meanwhile */
    put(sim, 1, "/t/a", 0, "AAAAAAAA", 8, 1);
    ck_assert_int_eq(v->mkdir(v->ctx, "/t/new"), 0);
    put(sim, 1, "/t/new/d", 0, "dd", 2, 1);
    ck_assert_int_eq(v->sync_dir(v->ctx, "/t/new"), 0);
    ck_assert_int_eq(v->sync_dir(v->ctx, "/t"), 0);
    ck_assert_int_eq(jr_sim_crash(sim, 1), 0);
    ck_assert_int_eq(jr_sim_disk_restore(sim, 1, d), 0);
    ck_assert_int_eq(jr_sim_restart(sim, 1), 0);
    char buf[64];
    ck_assert_int_eq(get(sim, 1, "/t/a", buf, sizeof buf), 4);
    ck_assert_int_eq(memcmp(buf, "aaaa", 4), 0);
    ck_assert_int_eq(get(sim, 1, "/t/c", buf, sizeof buf), 4);
    ck_assert_int_eq(memcmp(buf, "cccc", 4), 0);
    ck_assert_int_eq(get(sim, 1, "/t/e", buf, sizeof buf), 6);
    ck_assert_int_eq(memcmp(buf, "eeeeee", 6), 0);
    ck_assert_int_eq(get(sim, 1, "/t/b", buf, sizeof buf), -1);
    ck_assert_int_eq(get(sim, 1, "/t/new/d", buf, sizeof buf), -1);
    jr_file *f;
    ck_assert_int_eq(v->open(v->ctx, "/t/new/x", JR_O_CREATE, &f), JR_ENOTFOUND); /* dir gone */
    /* restored files are durable: a crash right away keeps them; the copy can be used again */
    ck_assert_int_eq(jr_sim_crash(sim, 1), 0);
    ck_assert_int_eq(get(sim, 1, "/t/a", buf, sizeof buf), 4);
    ck_assert_int_eq(jr_sim_disk_restore(sim, 1, d), 0);
    ck_assert_int_eq(jr_sim_restart(sim, 1), 0);
    jr_sim_free(sim);
    jr_sim_disk_free(d); /* a copy outlives its fixture */
    jr_sim_disk_free(NULL);
}
END_TEST

/* A node rolled back to an earlier copy of its disk restarts with the older log: the fixture
 * really puts the old WAL back (what the group does about it is the recovery's business). */
START_TEST(rolled_back_node_restarts_with_its_older_log)
{
    h_cluster h;
    int l = h_start(&h, 9, 1, 0, h_small_segments);
    ck_assert_int_ge(l, 0);
    unsigned d = (unsigned)(l + 1) % 3;
    h_propose_fill(&h, l, 50, 100, 'r');
    jr_sim_run_for(h.sim, 300 * MS);
    jr_group_status st = {.size = sizeof st};
    ck_assert_int_eq(jr_group_status_get(h.g[d][0], &st), 0);
    uint64_t saved_last = st.last_index;
    jr_sim_disk *copy;
    ck_assert_int_eq(jr_sim_disk_save(h.sim, d, &copy), 0);
    h_propose_fill(&h, l, 300, 100, 'r');
    jr_sim_run_for(h.sim, 500 * MS);
    ck_assert_int_eq(jr_group_status_get(h.g[d][0], &st), 0);
    ck_assert_uint_gt(st.last_index, saved_last + 250);
    listing now;
    memset(&now, 0, sizeof now);
    ck_assert_int_eq(jr_sim_files(h.sim, d, collect, &now), 0);
    ck_assert_int_gt(now.wal, 1); /* segments were added since the copy */

    ck_assert_int_eq(jr_sim_crash(h.sim, d), 0);
    ck_assert_int_eq(jr_sim_disk_restore(h.sim, d, copy), 0);
    listing then;
    memset(&then, 0, sizeof then);
    ck_assert_int_eq(jr_sim_files(h.sim, d, collect, &then), 0);
    ck_assert_int_lt(then.wal, now.wal);
    /* cut the isolated node off, so the group cannot repair it before we look */
    unsigned side = d;
    ck_assert_int_eq(jr_sim_partition(h.sim, &side, 1), 0);
    ck_assert_int_eq(jr_sim_restart(h.sim, d), 0);
    ck_assert_int_eq(h_open(&h, d), 0);
    ck_assert_int_eq(jr_group_status_get(h.g[d][0], &st), 0);
    ck_assert_uint_le(st.last_index, saved_last);
    jr_sim_disk_free(copy);
    h_free(&h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_disk");
    TCase *tc = tcase_create("disk");
    tcase_add_test(tc, files_are_listed_in_path_order_with_their_sizes);
    tcase_add_test(tc, damage_needs_a_crashed_node);
    tcase_add_test(tc, cut_tail_takes_synced_bytes);
    tcase_add_test(tc, flip_bits_and_zero_change_exactly_their_range);
    tcase_add_test(tc, removed_file_stays_gone);
    tcase_add_test(tc, disk_rolls_back_to_a_saved_copy);
    tcase_add_test(tc, rolled_back_node_restarts_with_its_older_log);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
