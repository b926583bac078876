/*
 * One replica's disk fault must not lose an acknowledged message: the three steps of an
 * operator's bad day, on the simulated disk, with the public API and jetraft/sim.h only.
 *
 *  1. Stream ORDERS, R3, on n0 (leader), n1, n2. n2 is partitioned away; 3,024 publishes are
 *     acknowledged by n0 + n1.
 *  2. n1 crashes and its disk loses synced data — the newest WAL segment's last 255 KB
 *     (wal_tail_cut), all of its files go back to a copy taken after the first 1,000
 *     publishes (rolled_back_disk), or 4 KiB in the middle of its stream store's first block
 *     file are zeroed (store_block_zeroed: the store no longer opens; the replica rebuilds it
 *     from its group's snapshot and log).
 *  3. The partition heals, n0 pauses for 5 s and n1 restarts meanwhile: n1 and n2 are a
 *     majority without n0, and publishing goes on through n2.
 *
 * Then (checker.h): n1 is reported damaged within 3 s of its restart and, until repaired, never
 * shown current; more publishes (through n2) never reuse a seq; after healing, the replicas
 * not reported damaged hold identical stores with every acknowledged message, and no replica
 * holds other bytes at an acknowledged seq.
 *
 * JR_SEEDS=first:count picks the seeds (default 1:2); a failure prints its replay command.
 * JR_E2E_LOG=1 prints the nodes' log lines.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"

#define PUBLISHES 3024
#define CUT_BYTES (255u << 10)
#define BLOCK_ZERO_BYTES (4u << 10)

enum fault { WAL_TAIL_CUT, ROLLED_BACK_DISK, STORE_BLOCK_ZEROED };

typedef struct newest {
    char path[128];
} newest;

static int keep_newest_segment(void *arg, const char *path, uint64_t size)
{
    newest *n = arg;
    size_t k = strlen(path);
    (void)size;
    /* "/wal/<16 hex digits>.wal": paths come in order, so the last one is the newest */
    if (!strncmp(path, "/wal/", 5) && !strchr(path + 5, '/') && k > 9 &&
        !strcmp(path + k - 4, ".wal"))
        snprintf(n->path, sizeof n->path, "%s", path);
    return 0;
}

/* The first block file of the stream's store. */
static int keep_first_block(void *arg, const char *path, uint64_t size)
{
    newest *n = arg;
    size_t k = strlen(path);
    (void)size;
    if (!n->path[0] && !strncmp(path, "/store/ORDERS/", 14) && k > 4 &&
        !strcmp(path + k - 4, ".blk"))
        snprintf(n->path, sizeof n->path, "%s", path);
    return 0;
}

static uint64_t file_size(jr_sim *sim, unsigned i, const char *path)
{
    jr_vfs *v = jr_sim_vfs(sim, i);
    jr_file *f;
    uint64_t size = 0;
    ck_assert_int_eq(v->open(v->ctx, path, 0, &f), 0);
    ck_assert_int_eq(v->size(v->ctx, f, &size), 0);
    v->close(v->ctx, f);
    return size;
}

static void small_blocks(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    (void)i;
    cfg->store_block_bytes = JR_STORE_BLOCK_MIN;
}

/* Makes n0 the stream's leader. */
static void lead_on_n0(e2e *c, uint64_t seed)
{
    for (int tries = 0; tries < 10; tries++) {
        int l = e2e_wait_stream(c, 0, "ORDERS", 2, 20 * SEC);
        ck_assert_msg(l >= 0, "seed %llu: ORDERS has no leader", (unsigned long long)seed);
        if (l == 0) return;
        e2e_res r;
        e2e_stepdown(c, (unsigned)l, "ORDERS", "n0", &r);
        jr_sim_run_for(c->sim, 500 * MS);
    }
    ck_abort_msg("seed %llu: n0 never became ORDERS' leader", (unsigned long long)seed);
}

static void run(uint64_t seed, enum fault fault)
{
    const char *what = fault == WAL_TAIL_CUT       ? "wal_tail_cut"
                       : fault == ROLLED_BACK_DISK ? "rolled_back_disk"
                                                   : "store_block_zeroed";
    e2e c;
    memset(&c, 0, sizeof c);
    /* small store blocks: full ones are sealed and synced, so n1's disk holds them at its crash */
    if (fault == STORE_BLOCK_ZEROED) c.configure_more = small_blocks;
    ck_assert_int_eq(e2e_new(&c, 3, seed, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 20 * SEC), 0);
    const char *subjects[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subjects, 1, 3);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "seed %llu: add: %s", (unsigned long long)seed,
                  r.msg);
    lead_on_n0(&c, seed);
    fchk k;
    fchk_init(&k, &c, "ORDERS", "orders", 0);
    k.strict = 1; /* n1 surely loses acknowledged records */

    /* 1. n2 is cut off; n0 + n1 acknowledge the publishes */
    unsigned n2 = 2;
    ck_assert_int_eq(jr_sim_partition(c.sim, &n2, 1), 0);
    jr_sim_disk *copy = NULL;
    size_t acked = 0;
    if (fault == ROLLED_BACK_DISK) {
        acked += fchk_publish_n(&k, 0, 1000, 64, -1, 60 * SEC);
        ck_assert_int_eq(jr_sim_disk_save(c.sim, 1, &copy), 0);
    }
    acked += fchk_publish_n(&k, 0, PUBLISHES - acked, 64, -1, 120 * SEC);
    ck_assert_msg(acked == PUBLISHES, "seed %llu: only %zu of %d publishes acknowledged",
                  (unsigned long long)seed, acked, PUBLISHES);
    ck_assert_msg(k.fail[0] == 0, "seed %llu %s: %s", (unsigned long long)seed, what, k.fail);

    /* 2. n1 loses synced data and restarts */
    ck_assert_int_eq(jr_sim_crash(c.sim, 1), 0);
    if (fault == WAL_TAIL_CUT) {
        newest seg = {""};
        ck_assert_int_eq(jr_sim_files(c.sim, 1, keep_newest_segment, &seg), 0);
        ck_assert_str_ne(seg.path, "");
        uint64_t size = file_size(c.sim, 1, seg.path);
        ck_assert_uint_gt(size, 2 * CUT_BYTES); /* the cut takes records, not the segment */
        ck_assert_int_eq(jr_sim_cut_tail(c.sim, 1, seg.path, CUT_BYTES), 0);
    } else if (fault == ROLLED_BACK_DISK) {
        ck_assert_int_eq(jr_sim_disk_restore(c.sim, 1, copy), 0);
    } else {
        newest blk = {""};
        ck_assert_int_eq(jr_sim_files(c.sim, 1, keep_first_block, &blk), 0);
        ck_assert_str_ne(blk.path, "");
        uint64_t size = file_size(c.sim, 1, blk.path);
        ck_assert_uint_gt(size, 3 * BLOCK_ZERO_BYTES);
        ck_assert_int_eq(jr_sim_zero(c.sim, 1, blk.path, size / 2, BLOCK_ZERO_BYTES), 0);
    }
    fchk_fault(&k, 1);

    /* 3. the partition heals and n0 stalls for 5 s as n1 comes back; publishing goes on
     * through n2 */
    jr_sim_heal(c.sim);
    ck_assert_int_eq(jr_sim_pause(c.sim, 0, 5 * SEC), 0);
    ck_assert_int_eq(e2e_restart(&c, 1), 0);
    fchk_expect_damaged(&k, 2, 3 * SEC);
    fchk_publish_n(&k, 2, 200, 16, 2, 40 * SEC);

    const unsigned all[] = {0, 1, 2};
    fchk_final(&k, all, 3, 2, 30 * SEC);
    if (k.fail[0]) fchk_dump(&k, all, 3);
    fprintf(stderr,
            "disk faults seed %llu %s: %llu acks of %zu messages, %llu public reads; n1 damaged "
            "%s%s\n",
            (unsigned long long)seed, what, (unsigned long long)k.acks, k.nitems,
            (unsigned long long)k.reads, k.damaged_seen ? "reported" : "never reported",
            k.repaired ? ", then repaired" : "");
    ck_assert_msg(k.fail[0] == 0, "seed %llu %s: %s\n  replay: JR_SEEDS=%llu:1 %s",
                  (unsigned long long)seed, what, k.fail, (unsigned long long)seed,
                  "build/test/faults/test_disk_faults");
    fchk_free(&k);
    jr_sim_disk_free(copy);
    e2e_free(&c);
}

static uint64_t first_seed = 1, nseeds = 2;

START_TEST(wal_tail_cut)
{
    run(first_seed + (uint64_t)_i, WAL_TAIL_CUT);
}
END_TEST

START_TEST(rolled_back_disk)
{
    run(first_seed + (uint64_t)_i, ROLLED_BACK_DISK);
}
END_TEST

START_TEST(store_block_zeroed)
{
    run(first_seed + (uint64_t)_i, STORE_BLOCK_ZEROED);
}
END_TEST

int main(void)
{
    e2e_seeds(&first_seed, &nseeds);
    Suite *su = suite_create("disk_faults");
    TCase *tc = tcase_create("scenario");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, wal_tail_cut, 0, (int)nseeds);
    tcase_add_loop_test(tc, rolled_back_disk, 0, (int)nseeds);
    tcase_add_loop_test(tc, store_block_zeroed, 0, (int)nseeds);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
