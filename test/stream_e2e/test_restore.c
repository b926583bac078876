/*
 * A stream snapshot installed on a replica (stream_replica.c, the group's restore callback):
 *  - one whose stream index is past the group index it comes with (its source's store was
 *    ahead of its log when it was taken: a state of committed entries only) installs, and the
 *    replica converges with the others;
 *  - one that cannot be restored stops the replica: it applies no later entry onto its old
 *    state (which would diverge from every other replica); it is rebuilt from its group's
 *    snapshot and log and its peers, and converges with the others;
 *  - a leader catching up applies its queued entries within the state a peer sent it, whose
 *    index is past them: a publish whose entry it skips so is of unknown outcome there, never
 *    "not stored"; with a msg_id it is asked again and acknowledged with its seq.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"

static e2e c;

/* A 3-node cluster with stream S (R3, file storage) holding 20 messages; returns its leader. */
static int setup_stream(void)
{
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 41, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
    const char *subj[] = {"s.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "S", subj, 1, 3);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    int l = e2e_wait_stream(&c, 0, "S", 2, 10 * SEC);
    ck_assert_int_ge(l, 0);
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(e2e_publish(&c, (unsigned)l, "s.a", "m", 1, NULL, &r), 0);
    return l;
}

/* Publishes n more through the leader while follower f is cut off. */
static void publish_without(int l, unsigned f, int n)
{
    jr_sim_partition(c.sim, &f, 1);
    e2e_res r;
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(e2e_publish(&c, (unsigned)l, "s.b", "n", 1, NULL, &r), 0);
}

START_TEST(a_snapshot_past_its_group_index_installs_exactly)
{
    int l = setup_stream();
    unsigned f = (unsigned)(l + 1) % 3;
    publish_without(l, f, 30);
    ck_assert_int_eq(e2e_restore_from(&c, (unsigned)l, f, "S", 3, 0), 0);
    jr_sim_heal(c.sim);
    uint64_t want = 0, got = 0;
    for (int t = 0; t < 200; t++) {
        jr_sim_run_for(c.sim, 50 * MS);
        if (e2e_digest(&c, (unsigned)l, "S", &want) == 0 && e2e_digest(&c, f, "S", &got) == 0 &&
            want == got)
            break;
    }
    ck_assert_uint_eq(got, want);
    jr_stream_state st;
    ck_assert_int_eq(e2e_state(&c, f, "S", &st), 0);
    ck_assert_uint_eq(st.msgs, 50);
    e2e_free(&c);
}
END_TEST

START_TEST(a_snapshot_that_cannot_be_restored_rebuilds_the_replica)
{
    int l = setup_stream();
    unsigned f = (unsigned)(l + 1) % 3;
    publish_without(l, f, 30);
    uint64_t before = e2e_fsm_applied(&c, f, "S");
    ck_assert_int_lt(e2e_restore_from(&c, (unsigned)l, f, "S", 0, 1), 0);
    /* stopped: nothing more is applied onto the state the snapshot did not replace */
    ck_assert_uint_eq(e2e_fsm_applied(&c, f, "S"), before);
    char d[512];
    e2e_describe(&c, f, "S", d, sizeof d);
    ck_assert_msg(!strstr(d, "rep_failed 0"), "%s", d);
    jr_sim_heal(c.sim);
    e2e_res r;
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(e2e_publish(&c, (unsigned)l, "s.c", "o", 1, NULL, &r), 0);
    /* rebuilt from its peers: the leader's state, every message */
    uint64_t want = 0, got = 0;
    for (int t = 0; t < 200; t++) {
        jr_sim_run_for(c.sim, 50 * MS);
        if (e2e_digest(&c, (unsigned)l, "S", &want) == 0 && e2e_digest(&c, f, "S", &got) == 0 &&
            want == got)
            break;
    }
    e2e_describe(&c, f, "S", d, sizeof d);
    ck_assert_msg(got == want, "not rebuilt: %s", d);
    jr_stream_state st;
    ck_assert_int_eq(e2e_state(&c, f, "S", &st), 0);
    ck_assert_uint_eq(st.msgs, 60);
    e2e_free(&c);
}
END_TEST

START_TEST(a_publish_applied_within_a_fetched_state_learns_its_seq)
{
    int l = setup_stream();
    unsigned f = (unsigned)(l + 1) % 3;
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 8);
    e2e_res r;
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(e2e_publish(&c, (unsigned)l, "s.a", "m", 1, NULL, &r), 0);
    uint64_t snap = e2e_snapshot_index(&c, f, "S");
    ck_assert_uint_gt(snap, 0);
    /* a message of f's snapshot removed after it: f's catch-up goes on to its source's end */
    ck_assert_int_eq(e2e_msg_delete(&c, (unsigned)l, "S", 3, &r), 0);
    /* f's replica fails and is rebuilt; its first source, the other follower, does not answer
     * (its frames to f are lost), so the catch-up waits */
    unsigned o = (unsigned)(l + 2) % 3;
    ck_assert_int_eq(jr_sim_cut(c.sim, o, f), 0);
    ck_assert_int_lt(e2e_restore_from(&c, (unsigned)l, f, "S", 0, 1), 0);
    for (int t = 0; t < 100 && !e2e_catching_up(&c, f, "S"); t++) jr_sim_run_for(c.sim, 5 * MS);
    ck_assert(e2e_catching_up(&c, f, "S"));
    /* f leads while it catches up, and takes a publish with a msg_id: its entry commits with
     * the old leader's acknowledgement, and f's catch-up, which then asks the old leader, ends at
     * that peer's state past the entry, so f skips it when it drains its queue */
    ck_assert_msg(e2e_stepdown(&c, (unsigned)l, "S", jr_sim_name(c.sim, f), &r) == 0,
                  "stepdown: %s", r.msg);
    ck_assert_int_eq(e2e_replica_leader(&c, f, "S"), (int)f);
    ck_assert(e2e_catching_up(&c, f, "S"));
    e2e_res p;
    e2e_publish(&c, f, "s.z", "z", 1, "z-1", &p);
    /* the outcome f could not tell is asked again and found in the duplicate window: stored
     * once, acknowledged with its seq (never JR_EDAMAGED, "not stored") */
    ck_assert_msg(p.status == 0, "publish: %s", p.msg);
    ck_assert_int_eq(p.duplicate, 0);
    ck_assert_int_eq(e2e_msg_get(&c, f, "S", p.seq, &r), 0);
    ck_assert_str_eq(r.subject, "s.z");
    jr_stream_state st;
    ck_assert_int_eq(e2e_state(&c, f, "S", &st), 0);
    ck_assert_uint_eq(st.last_seq, p.seq);
    ck_assert_uint_eq(st.msgs, 39 + 1);
    jr_sim_heal(c.sim);
    uint64_t want = 0, got = 0;
    for (int t = 0; t < 200; t++) {
        jr_sim_run_for(c.sim, 50 * MS);
        if (e2e_digest(&c, f, "S", &want) == 0 && e2e_digest(&c, o, "S", &got) == 0 && want == got)
            break;
    }
    ck_assert_uint_eq(got, want);
    e2e_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_restore");
    TCase *tc = tcase_create("restore");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_snapshot_past_its_group_index_installs_exactly);
    tcase_add_test(tc, a_snapshot_that_cannot_be_restored_rebuilds_the_replica);
    tcase_add_test(tc, a_publish_applied_within_a_fetched_state_learns_its_seq);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
