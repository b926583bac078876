/* jr_stream_info_format(): the public renderer gives the nats CLI's Cluster Information block. */
#include <check.h>
#include <string.h>

#include "jetraft.h"

START_TEST(renders_seed_block)
{
    jr_peer_info reps[2] = {
        {.name = "n3-east", .current = 1, .active_ns = 0},
        {.name = "n2-east", .current = 1, .active_ns = 0},
    };
    jr_stream_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    info.cluster = (jr_cluster_info){.name = "east", .group = "S-R3F-xK2p9aLm",
                                     .leader = "n1-east", .replicas = reps, .nreplicas = 2};
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

START_TEST(rejects_misuse)
{
    jr_stream_info info;
    memset(&info, 0, sizeof info);
    char buf[64];
    ck_assert_int_eq(jr_stream_info_format(NULL, buf, sizeof buf), JR_EINVAL);
    ck_assert_int_eq(jr_stream_info_format(&info, buf, sizeof buf), JR_EINVAL); /* size unset */
    info.size = sizeof info;
    info.cluster.nreplicas = 1; /* without a replica array */
    ck_assert_int_eq(jr_stream_info_format(&info, buf, sizeof buf), JR_EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("info_format");
    TCase *tc = tcase_create("info_format");
    tcase_add_test(tc, renders_seed_block);
    tcase_add_test(tc, rejects_misuse);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
