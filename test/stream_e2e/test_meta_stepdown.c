/* The meta group's leadership moves where it is asked to (jr_meta_stepdown), from any server:
 * to a named server, to the best one, and not to a server that is not a member. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"

static int stepdown(e2e *c, unsigned via, const char *peer, e2e_res *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_meta_stepdown(e2e_node(c, via), peer, e2e_admin_cb, r), 0);
    ck_assert_int_eq(e2e_wait(c, r, 60 * SEC), 0);
    return r->status;
}

START_TEST(meta_leadership_moves_where_asked)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 40, 2000), 0);
    int ml = e2e_wait_meta(&c, 3, 10 * SEC);
    ck_assert_int_ge(ml, 0);
    unsigned to = ((unsigned)ml + 1) % 3, via = ((unsigned)ml + 2) % 3;
    char name[8];
    snprintf(name, sizeof name, "n%u", to);
    e2e_res r;
    ck_assert_msg(stepdown(&c, via, name, &r) == 0, "stepdown: %s", r.msg);
    jr_sim_run_for(c.sim, 200 * MS);
    ck_assert_int_eq(e2e_meta_leader(&c), (int)to);
    ck_assert_int_eq(stepdown(&c, via, "nobody", &r), JR_ENOTFOUND);
    ck_assert_int_eq(e2e_meta_leader(&c), (int)to);
    ck_assert_msg(stepdown(&c, to, NULL, &r) == 0, "stepdown to the best: %s", r.msg);
    jr_sim_run_for(c.sim, 200 * MS);
    ck_assert_int_ne(e2e_meta_leader(&c), (int)to);
    /* streams are still created through the new meta leader */
    const char *subj[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 3);
    ck_assert_msg(e2e_add(&c, via, &cfg, &r) == 0, "add: %s", r.msg);
    e2e_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_meta_stepdown");
    TCase *tc = tcase_create("meta_stepdown");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, meta_leadership_moves_where_asked);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
