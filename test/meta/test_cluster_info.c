/* The "Cluster Information" block, compared with what the nats CLI prints in the seeds. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jetraft.h"
#include "meta/cluster_info.h"

#define MS 1000000ULL
#define SEC 1000000000ULL

static char out[4096];

static const char *render(const jr__cluster_view *v, int width)
{
    int n = jr__cluster_view_format(v, width, out, sizeof out);
    ck_assert_int_ge(n, 0);
    ck_assert_int_lt(n, (int)sizeof out);
    ck_assert_uint_eq(strlen(out), (size_t)n);
    return out;
}

/* shared/seeds/001: `nats stream info ORDERS` on the three-server cluster "east". */
START_TEST(seed_001_walkthrough)
{
    jr__replica_view r[] = {
        {"n3-east", 1, 0, 0, 0, 312 * 1000ULL, 0, 0, 0, 0, 0}, /* 312µs: "0.00s" */
        {"n2-east", 1, 0, 0, 0, 4 * MS, 0, 0, 0, 0, 0},
    };
    jr__cluster_view v = {"east", "S-R3F-xK2p9aLm", "n1-east", r, 2};
    ck_assert_str_eq(render(&v, 0), "Cluster Information:\n"
                                    "\n"
                                    "                 Name: east\n"
                                    "        Cluster Group: S-R3F-xK2p9aLm\n"
                                    "               Leader: n1-east\n"
                                    "              Replica: n3-east, current, seen 0.00s ago\n"
                                    "              Replica: n2-east, current, seen 0.00s ago\n"
                                    "\n");
}
END_TEST

/* shared/seeds/004: a fourth replica catching up (that page's longest label is 18 bytes). */
START_TEST(seed_004_catch_up)
{
    jr__replica_view r[] = {
        {"n2-east", 1, 0, 0, 0, 120 * MS, 0, 0, 0, 0, 0},
        {"n3-east", 1, 0, 0, 0, 203 * MS, 0, 0, 0, 0, 0},
        {"n4-east", 0, 0, 0, 0, 180 * MS, 14231, 0, 0, 0, 0},
    };
    jr__cluster_view v = {"east", NULL, "n1-east", r, 3};
    ck_assert_str_eq(render(&v, 18),
                     "Cluster Information:\n"
                     "\n"
                     "                Name: east\n"
                     "              Leader: n1-east\n"
                     "             Replica: n2-east, current, seen 0.12s ago\n"
                     "             Replica: n3-east, current, seen 0.20s ago\n"
                     "             Replica: n4-east, outdated, seen 0.18s ago, 14,231 operations "
                     "behind\n"
                     "\n");
}
END_TEST

START_TEST(markers)
{
    jr__replica_view r[] = {
        {"a", 0, 1, 0, 0, 75 * SEC, 1, 0, 0, 0, 0},         /* offline, one operation */
        {"b", 0, 0, 1, 0, UINT64_MAX, 1000, 0, 0, 0, 0},    /* observer never heard from */
        {"c", 0, 0, 0, 1, 2 * SEC + 5 * MS, 0, 0, 0, 0, 0}, /* pending */
        {"d", 1, 0, 0, 0, 0, 0, 0, 0, 0, 0},                /* heard from this instant */
    };
    jr__cluster_view v = {"east", "", NULL, r, 4};
    ck_assert_str_eq(render(&v, 0), "Cluster Information:\n"
                                    "\n"
                                    "                 Name: east\n"
                                    "               Leader: \n"
                                    "              Replica: a, outdated, OFFLINE, seen 1m15s ago, "
                                    "1 operation behind\n"
                                    "              Replica: b, outdated, observer, not seen, 1,000 "
                                    "operations behind\n"
                                    "              Replica: c (pending), outdated, seen 2.00s ago\n"
                                    "              Replica: d, current, seen 0.00s ago\n"
                                    "\n");
}
END_TEST

/* A replica whose server told the leader its state machine failed, or is being rebuilt: never
 * current, whatever the view says, and named so beside the other marks. */
START_TEST(state_machine_marks)
{
    jr__replica_view r[] = {
        {"a", 1, 0, 0, 0, 5 * MS, 0, 0, 0, 1, 0}, /* failed */
        {"b", 1, 0, 0, 0, 5 * MS, 3, 0, 0, 1, 1}, /* rebuilding */
    };
    jr__cluster_view v = {"east", "", "l", r, 2};
    ck_assert_str_eq(render(&v, 0), "Cluster Information:\n"
                                    "\n"
                                    "                 Name: east\n"
                                    "               Leader: l\n"
                                    "              Replica: a, outdated, state machine failed, "
                                    "seen 0.01s ago\n"
                                    "              Replica: b, outdated, state machine rebuilding, "
                                    "seen 0.01s ago, 3 operations behind\n"
                                    "\n");
}
END_TEST

static const char *seen(uint64_t ns, uint64_t lag)
{
    jr__replica_view r = {"p", 1, 0, 0, 0, ns, lag, 0, 0, 0, 0};
    jr__cluster_view v = {"c", NULL, "l", &r, 1};
    render(&v, 13);
    /* the text after "Replica: p, current, " up to the newline */
    char *p = strstr(out, "current, ") + 9;
    *strchr(p, '\n') = '\0';
    return p;
}

START_TEST(durations_and_lags)
{
    ck_assert_str_eq(seen(4 * MS, 0), "seen 0.00s ago");
    ck_assert_str_eq(seen(5 * MS + 1, 0), "seen 0.01s ago");
    ck_assert_str_eq(seen(59 * SEC + 994 * MS, 0), "seen 59.99s ago");
    ck_assert_str_eq(seen(59 * SEC + 996 * MS, 0), "seen 60.00s ago"); /* as the CLI rounds */
    ck_assert_str_eq(seen(60 * SEC, 0), "seen 1m0s ago");
    ck_assert_str_eq(seen(3661 * SEC + 999 * MS, 0), "seen 1h1m1s ago");
    ck_assert_str_eq(seen(90061 * SEC, 0), "seen 1d1h1m1s ago");
    ck_assert_str_eq(seen((365 * 86400ULL + 90061) * SEC, 0), "seen 1y1d1h1m1s ago");
    ck_assert_str_eq(seen((uint64_t)INT64_MAX, 0), "not seen");
    ck_assert_str_eq(seen(0, 999), "seen 0.00s ago, 999 operations behind");
    ck_assert_str_eq(seen(0, 1234567), "seen 0.00s ago, 1,234,567 operations behind");
    ck_assert_str_eq(seen(0, 100000), "seen 0.00s ago, 100,000 operations behind");
    ck_assert_str_eq(seen(0, UINT64_MAX), "seen 0.00s ago, 18446744073709551615 operations behind");
}
END_TEST

/* Like snprintf: the return value is the full length; what fits is written and terminated. */
START_TEST(snprintf_semantics)
{
    jr__replica_view r[] = {{"n3-east", 1, 0, 0, 0, 1, 0, 0, 0, 0, 0},
                            {"n2-east", 0, 0, 0, 0, 1, 7, 0, 0, 0, 0}};
    jr__cluster_view v = {"east", "S-R3F-xK2p9aLm", "n1-east", r, 2};
    char full[1024];
    int n = jr__cluster_view_format(&v, 0, full, sizeof full);
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(jr__cluster_view_format(&v, 0, NULL, 0), n);
    for (size_t len = 1; len <= (size_t)n + 1; len++) {
        char *b = malloc(len);
        ck_assert_int_eq(jr__cluster_view_format(&v, 0, b, len), n);
        ck_assert_uint_eq(strlen(b), len - 1 < (size_t)n ? len - 1 : (size_t)n);
        ck_assert(strncmp(b, full, strlen(b)) == 0);
        free(b);
    }
}
END_TEST

START_TEST(not_clustered_and_bad_input)
{
    jr__cluster_view v = {NULL, "g", "l", NULL, 0};
    char b[8] = "junk";
    ck_assert_int_eq(jr__cluster_view_format(&v, 0, b, sizeof b), 0);
    ck_assert_str_eq(b, "");
    v.cluster = "";
    ck_assert_int_eq(jr__cluster_view_format(&v, 0, b, sizeof b), 0);
    v.cluster = "east";
    ck_assert_int_eq(jr__cluster_view_format(NULL, 0, b, sizeof b), JR_EINVAL);
    ck_assert_int_eq(jr__cluster_view_format(&v, 0, NULL, 5), JR_EINVAL);
    ck_assert_int_eq(jr__cluster_view_format(&v, 12, b, sizeof b), JR_EINVAL);
    ck_assert_int_eq(jr__cluster_view_format(&v, 65, b, sizeof b), JR_EINVAL);
    v.nreplicas = 1;
    ck_assert_int_eq(jr__cluster_view_format(&v, 0, b, sizeof b), JR_EINVAL);
    jr__replica_view nameless = {NULL, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    v.replicas = &nameless;
    ck_assert_int_eq(jr__cluster_view_format(&v, 0, b, sizeof b), JR_EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cluster_info");
    TCase *tc = tcase_create("cluster_info");
    tcase_add_test(tc, seed_001_walkthrough);
    tcase_add_test(tc, seed_004_catch_up);
    tcase_add_test(tc, markers);
    tcase_add_test(tc, state_machine_marks);
    tcase_add_test(tc, durations_and_lags);
    tcase_add_test(tc, snprintf_semantics);
    tcase_add_test(tc, not_clustered_and_bad_input);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
