/*
 * test_print.c — the CLI's text formats (util.c) on fixed JSON: the replica lines of a stream
 * or consumer info's cluster block.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* print_cluster's text for the JSON text js, in a malloc'ed string. */
static char *cluster_text(const char *js)
{
    json_error_t e;
    json_t *cl = json_loads(js, 0, &e);
    ck_assert_msg(cl != NULL, "%s", e.text);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    print_cluster(f, cl);
    fclose(f);
    json_decref(cl);
    return buf;
}

/* A replica whose state machine failed, or is being rebuilt, says so after outdated and
 * before OFFLINE, as the library's jr_stream_info_format does; nats' fields print as before. */
START_TEST(replica_lines_show_a_failed_state_machine)
{
    char *t =
        cluster_text("{\"name\":\"C1\",\"leader\":\"n1\",\"replicas\":["
                     "{\"name\":\"n2\",\"current\":false,\"active\":1500000000,\"fsm_failed\":true,"
                     "\"peer\":\"n2\"},"
                     "{\"name\":\"n3\",\"current\":false,\"offline\":true,\"active\":0,\"lag\":3,"
                     "\"fsm_failed\":true,\"fsm_rebuilding\":true,\"peer\":\"n3\"},"
                     "{\"name\":\"n4\",\"current\":true,\"active\":0,\"peer\":\"n4\"}]}");
    ck_assert_msg(strstr(t, "Replica: n2, outdated, state machine failed, seen 1.50s ago\n"), "%s",
                  t);
    ck_assert_msg(strstr(t, "Replica: n3, outdated, state machine rebuilding, OFFLINE, seen "),
                  "%s", t);
    ck_assert_msg(strstr(t, ", 3 operations behind\n"), "%s", t);
    ck_assert_msg(strstr(t, "Replica: n4, current, seen "), "%s", t);
    ck_assert_msg(!strstr(strstr(t, "n4, current"), "state machine"), "%s", t);
    free(t);
}
END_TEST

/* A damaged and an unvouched replica say so after outdated, as jr_stream_info_format does. */
START_TEST(replica_lines_show_damaged_and_unvouched)
{
    char *t = cluster_text("{\"name\":\"C1\",\"leader\":\"n1\",\"replicas\":["
                           "{\"name\":\"n2\",\"current\":false,\"active\":0,\"damaged\":true,"
                           "\"offline\":true,\"peer\":\"n2\"},"
                           "{\"name\":\"n3\",\"current\":false,\"active\":0,\"unvouched\":true,"
                           "\"peer\":\"n3\"}]}");
    ck_assert_msg(strstr(t, "Replica: n2, outdated, damaged, OFFLINE, seen "), "%s", t);
    ck_assert_msg(strstr(t, "Replica: n3, outdated, unvouched, seen "), "%s", t);
    free(t);
}
END_TEST

/* A name longer than any line buffer prints whole. */
START_TEST(a_long_replica_name_prints_whole)
{
    char name[601], js[800];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = 0;
    snprintf(js, sizeof js,
             "{\"name\":\"C1\",\"replicas\":[{\"name\":\"%s\",\"current\":true,\"active\":0,"
             "\"lag\":2}]}",
             name);
    char *t = cluster_text(js);
    ck_assert_msg(strstr(t, name) && strstr(t, ", current, seen ") && strstr(t, "2 operations"),
                  "%s", t);
    free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_print");
    TCase *tc = tcase_create("print");
    tcase_add_test(tc, replica_lines_show_a_failed_state_machine);
    tcase_add_test(tc, replica_lines_show_damaged_and_unvouched);
    tcase_add_test(tc, a_long_replica_name_prints_whole);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
