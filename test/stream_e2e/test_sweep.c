/*
 * Fault sweep of a snapshot install, in the manner of SQLite's: a replica that was down while
 * its peers compacted their logs restarts and must be brought up to date by a snapshot (and
 * the catch-up of the stream's messages); for n = 1, 2, ... the n-th vfs call (of any kind) of
 * that replica's node fails, once or from then on, from the restart on, until an n is reached
 * that the install completes without meeting. Every run must leave the cluster serving, and
 * after the fault is removed and the replica's node loses power and restarts, its replica must
 * hold exactly what the leader holds, every acknowledged message included; no file handle of
 * the faulty node may be closed twice.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "vfs/memfs.h"

#define BEFORE 4 /* messages the replica has before it goes down */
#define WHILE 24 /* messages published while it is down (several snapshots) */
#define MAX_N 5000

static void publish_n(e2e *c, int from, int count, uint64_t *acked)
{
    for (int i = from; i < from + count; i++) {
        char data[32];
        int len = snprintf(data, sizeof data, "m-%d", i);
        e2e_res r;
        int rc = e2e_publish(c, 0, "s.x", data, (size_t)len, NULL, &r);
        ck_assert_msg(rc == 0, "publish %d: %s (%s)", i, jr_err_name(rc), r.msg);
        acked[i] = r.seq;
    }
}

/* _i: sticky. */
START_TEST(snapshot_install_survives_a_failing_vfs)
{
    int sticky = _i;
    const char *where = sticky ? "install, vfs call n and later fail" : "install, vfs call n fails";
    uint64_t n;
    for (n = 1; n < MAX_N; n++) {
        e2e c;
        memset(&c, 0, sizeof c);
        ck_assert_int_eq(e2e_new(&c, 3, 5, 1000), 0);
        ck_assert_int_ge(e2e_wait_meta(&c, 3, 20 * SEC), 0);
        for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 4);
        const char *subj[] = {"s.>"};
        jr_stream_config cfg;
        e2e_config(&cfg, "S", subj, 1, 3);
        e2e_res r;
        ck_assert_int_eq(e2e_add(&c, 0, &cfg, &r), 0);
        ck_assert_int_ge(e2e_wait_stream(&c, 0, "S", 2, 20 * SEC), 0);
        uint64_t acked[BEFORE + WHILE];
        publish_n(&c, 0, BEFORE, acked);
        jr_sim_run_for(c.sim, 200 * MS);
        ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
        jr_sim_run_for(c.sim, 2 * SEC); /* the leader stops keeping its log for the lost one */
        publish_n(&c, BEFORE, WHILE, acked);
        jr_sim_run_for(c.sim, 100 * MS);
        ck_assert_int_eq(e2e_restart(&c, 2), 0);
        jr_vfs *v = jr_sim_vfs(c.sim, 2);
        jr__memfs_stats st0, st1;
        jr__memfs_stats_get(v, &st0);
        ck_assert_int_eq(
            jr__memfs_fail(v, JR__MEMFS_ANY, n, (n & 1) ? JR_EIO : JR_ENOSPC, sticky, NULL), 0);
        uint64_t chunks0 = e2e_catchup_chunks(&c, 2);
        if (getenv("JR_SWEEP_TRACE")) {
            char buf[512];
            e2e_describe(&c, 2, "S", buf, sizeof buf);
            fprintf(stderr, "before: snap %llu %s\n",
                    (unsigned long long)e2e_snapshot_index(&c, 2, "S"), buf);
            e2e_describe(&c, 0, "S", buf, sizeof buf);
            fprintf(stderr, "leader: snap %llu %s\n",
                    (unsigned long long)e2e_snapshot_index(&c, 0, "S"), buf);
        }
        jr_sim_run_for(c.sim, 3 * SEC);
        jr__memfs_stats_get(v, &st1);
        if (getenv("JR_SWEEP_TRACE")) {
            char buf[512];
            e2e_describe(&c, 2, "S", buf, sizeof buf);
            fprintf(stderr, "after: snap %llu chunks %llu %s\n",
                    (unsigned long long)e2e_snapshot_index(&c, 2, "S"),
                    (unsigned long long)e2e_catchup_chunks(&c, 2), buf);
        }
        if (!(st1.faults > st0.faults))
            ck_assert_msg(e2e_catchup_chunks(&c, 2) > chunks0,
                          "%s n=%llu: the replica did not catch up from a snapshot", where,
                          (unsigned long long)n);
        jr__memfs_fail_clear(v);
        int fired = st1.faults > st0.faults;
        ck_assert_msg(st1.bad_handles == 0, "%s n=%llu: a file handle was closed twice", where,
                      (unsigned long long)n);
        /* the faulty node may have given up on its WAL: power loss, restart, catch up again */
        ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
        ck_assert_int_eq(e2e_restart(&c, 2), 0);
        int leader = e2e_wait_stream(&c, 0, "S", 2, 30 * SEC);
        ck_assert_msg(leader >= 0, "%s n=%llu: the stream has no leader with 3 current replicas",
                      where, (unsigned long long)n);
        jr_sim_run_for(c.sim, 1 * SEC);
        uint64_t want[BEFORE + WHILE + 1], got[BEFORE + WHILE + 1];
        int64_t lw = e2e_checksums(&c, (unsigned)leader, "S", want, BEFORE + WHILE + 1);
        int64_t lg = e2e_checksums(&c, 2, "S", got, BEFORE + WHILE + 1);
        ck_assert_msg(lw == BEFORE + WHILE, "%s n=%llu: leader's last seq %lld", where,
                      (unsigned long long)n, (long long)lw);
        ck_assert_msg(lg == lw && !memcmp(want, got, sizeof want),
                      "%s n=%llu: the restored replica differs from the leader (last %lld vs %lld)",
                      where, (unsigned long long)n, (long long)lg, (long long)lw);
        for (int i = 0; i < BEFORE + WHILE; i++) ck_assert_uint_eq(acked[i], (uint64_t)i + 1);
        ck_assert_msg(e2e_snapshot_index(&c, 2, "S") > 0, "%s n=%llu: no snapshot on node 2", where,
                      (unsigned long long)n);
        e2e_free(&c);
        if (!fired) break;
    }
    if (getenv("JR_SWEEP_VERBOSE"))
        fprintf(stderr, "%s: %llu steps\n", where, (unsigned long long)n);
    ck_assert_uint_lt(n, MAX_N);
    ck_assert_uint_gt(n, 10);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("install_sweep");
    TCase *t = tcase_create("sweep");
    tcase_set_timeout(t, 600);
    tcase_add_loop_test(t, snapshot_install_survives_a_failing_vfs, 0, 2);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
