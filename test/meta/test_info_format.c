/* jr_stream_info_format(): the public renderer gives the nats CLI's Cluster Information block. */
#include <check.h>
#include <string.h>

#include "jetraft.h"

START_TEST(renders_seed_block)
{
    jr_peer_info reps[2] = {
        {.size = sizeof reps[0], .name = "n3-east", .current = 1, .active_ns = 0},
        {.size = sizeof reps[0], .name = "n2-east", .current = 1, .active_ns = 0},
    };
    const jr_peer_info *rp[2] = {&reps[0], &reps[1]};
    jr_cluster_info ci = {.size = sizeof ci,
                          .name = "east",
                          .group = "S-R3F-xK2p9aLm",
                          .leader = "n1-east",
                          .replicas = rp,
                          .nreplicas = 2};
    jr_stream_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    info.cluster = &ci;
    char buf[512];
    int n = jr_stream_info_format(&info, buf, sizeof buf);
    ck_assert_int_gt(n, 0);
    ck_assert_int_lt(n, (int)sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "Cluster Information:\n\n"));
    ck_assert_ptr_nonnull(strstr(buf, "               Name: east\n"));
    ck_assert_ptr_nonnull(strstr(buf, "             Leader: n1-east\n"));
    ck_assert_ptr_nonnull(strstr(buf, "            Replica: n3-east, current, seen 0.00s ago\n"));
    /* snprintf semantics: a short buffer gets a truncated, terminated prefix and the full length */
    char small[16];
    ck_assert_int_eq(jr_stream_info_format(&info, small, sizeof small), n);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
}
END_TEST

/* A damaged replica says so, and is never shown current even if `current` is set. */
START_TEST(damaged_replica_is_shown_and_never_current)
{
    jr_peer_info reps[2] = {
        {.size = sizeof reps[0], .name = "n2", .current = 1, .active_ns = 0},
        {.size = sizeof reps[0],
         .name = "n3",
         .current = 1,
         .damaged = 1,
         .active_ns = 0,
         .lag = 3},
    };
    const jr_peer_info *rp[2] = {&reps[0], &reps[1]};
    jr_cluster_info ci = {
        .size = sizeof ci, .name = "c", .leader = "n1", .replicas = rp, .nreplicas = 2};
    jr_stream_info info = {.size = sizeof info, .cluster = &ci};
    char buf[512];
    int n = jr_stream_info_format(&info, buf, sizeof buf);
    ck_assert_int_gt(n, 0);
    ck_assert_ptr_nonnull(strstr(buf, "Replica: n2, current, seen 0.00s ago\n"));
    ck_assert_ptr_nonnull(
        strstr(buf, "Replica: n3, outdated, damaged, seen 0.00s ago, 3 operations behind\n"));
    ck_assert_ptr_null(strstr(buf, "n3, current"));
}
END_TEST

START_TEST(rejects_misuse)
{
    jr_stream_info info;
    memset(&info, 0, sizeof info);
    char buf[64];
    ck_assert_int_eq(jr_stream_info_format(NULL, buf, sizeof buf), JR_EINVAL);
    ck_assert_int_eq(jr_stream_info_format(&info, buf, sizeof buf), JR_EINVAL); /* size unset */
    info.size = sizeof info;
    ck_assert_int_eq(jr_stream_info_format(&info, buf, sizeof buf), JR_EINVAL); /* no cluster */
    jr_cluster_info ci;
    memset(&ci, 0, sizeof ci);
    info.cluster = &ci;
    ck_assert_int_eq(jr_stream_info_format(&info, buf, sizeof buf), JR_EINVAL); /* size unset */
    ci.size = sizeof ci;
    ci.nreplicas = 1; /* without a replica array */
    ck_assert_int_eq(jr_stream_info_format(&info, buf, sizeof buf), JR_EINVAL);
    const jr_peer_info *none[1] = {NULL};
    ci.replicas = none; /* an array holding a NULL line */
    ck_assert_int_eq(jr_stream_info_format(&info, buf, sizeof buf), JR_EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("info_format");
    TCase *tc = tcase_create("info_format");
    tcase_add_test(tc, renders_seed_block);
    tcase_add_test(tc, damaged_replica_is_shown_and_never_current);
    tcase_add_test(tc, rejects_misuse);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
