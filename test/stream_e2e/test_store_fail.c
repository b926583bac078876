/*
 * A stream replica whose store fails a sync (its WAL still works) while it leads: it gives up
 * the leadership at once, another replica leads within a few election timeouts and publishes
 * are acknowledged again; once its disk works the failed replica is reopened from its store (a
 * failed sync is not damage) and catches up, and every acknowledged message is held, at its
 * seq, by every replica. A follower whose store sync fails once keeps its messages.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "vfs/memfs.h"

#define BEFORE 20
#define AFTER 10
#define ACKED (BEFORE + 1 + AFTER)

typedef struct lead_wait {
    e2e *c;
    unsigned failed;
} lead_wait;

/* Another replica leads, as both the others see it, and the failed one does not lead. */
static int other_leads(void *arg, jr_sim *sim)
{
    (void)sim;
    lead_wait *w = arg;
    int seen = -1;
    for (unsigned i = 0; i < 3; i++) {
        if (i == w->failed) continue;
        int l = e2e_replica_leader(w->c, i, "ORDERS");
        if (l < 0 || (unsigned)l == w->failed || (seen >= 0 && l != seen)) return 0;
        seen = l;
    }
    return 1;
}

START_TEST(a_leader_whose_store_sync_fails_hands_over_and_is_rebuilt)
{
    e2e c;
    const char *subj[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 3);
    unsigned leader = (unsigned)e2e_new_with_stream(&c, 3, 41 + (uint64_t)_i, &cfg);
    unsigned via = (leader + 1) % 3;
    e2e_res r;
    char body[ACKED][16];
    uint64_t seq[ACKED];
    int n = 0;
    for (; n < BEFORE; n++) {
        snprintf(body[n], sizeof body[n], "m-%d", n);
        ck_assert_int_eq(e2e_publish(&c, via, "orders.new", body[n], strlen(body[n]), NULL, &r), 0);
        seq[n] = r.seq;
    }
    jr_sim_run_for(c.sim, 2 * SEC); /* every store synced a mark */

    /* Every sync of the leader's store fails from now on; its WAL syncs as before. */
    ck_assert_int_eq(
        jr__memfs_fail(jr_sim_vfs(c.sim, leader), JR__MEMFS_SYNC, 1, JR_EIO, 1, "/store/ORDERS/"),
        0);
    snprintf(body[n], sizeof body[n], "m-%d", n);
    ck_assert_int_eq(e2e_publish(&c, via, "orders.new", body[n], strlen(body[n]), NULL, &r), 0);
    seq[n++] = r.seq;
    /* its next store mark (within a second) fails; another replica leads soon after */
    lead_wait w = {&c, leader};
    ck_assert_msg(jr_sim_run_until(c.sim, other_leads, &w, 5 * SEC) == 0,
                  "no other replica leads: as %u sees it %d, as %u sees it %d", (leader + 1) % 3,
                  e2e_replica_leader(&c, (leader + 1) % 3, "ORDERS"), (leader + 2) % 3,
                  e2e_replica_leader(&c, (leader + 2) % 3, "ORDERS"));
    unsigned nl = (unsigned)e2e_replica_leader(&c, via, "ORDERS");
    /* Publishes through the new leader for 10 s while the failed replica's store still fails
     * (its rebuilt replicas fail their marks again): every one is acknowledged. */
    for (; n < ACKED; n++) {
        snprintf(body[n], sizeof body[n], "m-%d", n);
        int rc = e2e_publish(&c, nl, "orders.new", body[n], strlen(body[n]), NULL, &r);
        ck_assert_msg(rc == 0, "publish %d via the new leader: %s", n, r.msg);
        seq[n] = r.seq;
        jr_sim_run_for(c.sim, 1 * SEC);
    }

    /* the disk works again: the failed replica is rebuilt and current */
    jr__memfs_fail_clear(jr_sim_vfs(c.sim, leader));
    int cur = e2e_wait_stream(&c, nl, "ORDERS", 2, 60 * SEC);
    ck_assert_int_ge(cur, 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    char desc[512];
    e2e_describe(&c, leader, "ORDERS", desc, sizeof desc);
    ck_assert_msg(e2e_fsm_applied(&c, leader, "ORDERS") == e2e_fsm_applied(&c, nl, "ORDERS"),
                  "the failed replica is not rebuilt: %s", desc);
    uint64_t d0, d;
    ck_assert_int_eq(e2e_digest(&c, nl, "ORDERS", &d0), 0);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_int_eq(e2e_digest(&c, i, "ORDERS", &d), 0);
        ck_assert_msg(d == d0, "replica %u differs", i);
        for (int k = 0; k < ACKED; k++) {
            char s[64], data[64];
            ck_assert_int_eq(e2e_local_get(&c, i, "ORDERS", seq[k], s, sizeof s, data, sizeof data),
                             0);
            ck_assert_str_eq(data, body[k]);
        }
    }
    e2e_free(&c);
}
END_TEST

/* A follower whose store sync fails once (an I/O error, not damage) while it is cut off from its
 * peers is reopened from its store: it holds every message without fetching any. Discarding
 * the store would leave it without messages that, with another replica's store damaged, no
 * replica may hold any more (jetraft-sim seed 3933). */
START_TEST(a_follower_whose_store_sync_fails_keeps_its_store)
{
    e2e c;
    const char *subj[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 3);
    unsigned leader = (unsigned)e2e_new_with_stream(&c, 3, 41 + (uint64_t)_i, &cfg);
    unsigned f = (leader + 1) % 3;
    /* logs compacted behind snapshots: a discarded store could not be rebuilt from f's own log */
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 8);
    e2e_res r;
    char body[ACKED][16];
    uint64_t seq[ACKED];
    for (int n = 0; n < ACKED; n++) {
        snprintf(body[n], sizeof body[n], "m-%d", n);
        ck_assert_int_eq(e2e_publish(&c, leader, "orders.new", body[n], strlen(body[n]), NULL, &r),
                         0);
        seq[n] = r.seq;
        if (n == BEFORE) jr_sim_run_for(c.sim, 2 * SEC); /* every store synced a mark */
    }
    /* f learns the last commit, then is cut off; its next store mark (within a second) fails,
     * and the replica is reopened with no peer to fetch from */
    jr_sim_run_for(c.sim, 300 * MS);
    ck_assert_uint_eq(e2e_fsm_applied(&c, f, "ORDERS"), e2e_fsm_applied(&c, leader, "ORDERS"));
    uint64_t chunks = e2e_catchup_chunks(&c, f);
    jr_sim_partition(c.sim, &f, 1);
    ck_assert_int_eq(
        jr__memfs_fail(jr_sim_vfs(c.sim, f), JR__MEMFS_SYNC, 1, JR_EIO, 0, "/store/ORDERS/"), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    char desc[512];
    e2e_describe(&c, f, "ORDERS", desc, sizeof desc);
    ck_assert_msg(strstr(desc, "rep_failed 0") && strstr(desc, "cu 0"), "%s", desc);
    ck_assert_uint_eq(e2e_catchup_chunks(&c, f), chunks);
    for (int k = 0; k < ACKED; k++) {
        char s[64], data[64];
        int rc = e2e_local_get(&c, f, "ORDERS", seq[k], s, sizeof s, data, sizeof data);
        ck_assert_msg(rc == 0, "seq %llu: %s (%s)", (unsigned long long)seq[k], jr_strerror(rc),
                      desc);
        ck_assert_str_eq(data, body[k]);
    }
    e2e_free(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("store_fail");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, a_leader_whose_store_sync_fails_hands_over_and_is_rebuilt, 0, 4);
    tcase_add_loop_test(tc, a_follower_whose_store_sync_fails_keeps_its_store, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
