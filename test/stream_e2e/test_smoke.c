/* First light: a 3-node cluster elects a meta leader, learns every server, creates an R3
 * stream, publishes through a follower and the leader, and reports stream info. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"

START_TEST(three_nodes_create_publish_info)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 7, 2000), 0);
    int ml = e2e_wait_meta(&c, 3, 10 * SEC);
    ck_assert_int_ge(ml, 0);
    const char *subj[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 3);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 1, &cfg, &r) == 0, "add: %s", r.msg);
    int sl = e2e_wait_stream(&c, 0, "ORDERS", 2, 10 * SEC);
    ck_assert_int_ge(sl, 0);
    for (unsigned i = 0; i < 3; i++) {
        char data[32];
        snprintf(data, sizeof data, "order %u", i);
        ck_assert_msg(e2e_publish(&c, i, "orders.new", data, strlen(data), NULL, &r) == 0,
                      "publish via n%u: %s %s", i, jr_strerror(r.status), r.msg);
        ck_assert_uint_eq(r.seq, i + 1);
        ck_assert_str_eq(r.stream, "ORDERS");
    }
    ck_assert_int_eq(e2e_info(&c, 2, "ORDERS", &r), 0);
    ck_assert_uint_eq(r.state.msgs, 3);
    fprintf(stderr, "%s", r.text);
    e2e_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_smoke");
    TCase *tc = tcase_create("smoke");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, three_nodes_create_publish_info);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
