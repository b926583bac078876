/*
 * Placement on a 5-node tagged cluster (issue 4 §2): the meta leader puts replicas on servers
 * that carry every required tag and none of the excluded ones, never two on the same unique tag
 * value ("az:"), and only on servers that are online; an impossible placement is refused with
 * JR_ENORESOURCES and a reason per server, and nothing is created.
 *
 *   n0 az:1 ssd     n1 az:1     n2 az:2 ssd     n3 az:3 ssd     n4 az:2 hdd
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"

static e2e c;

static void setup(void)
{
    memset(&c, 0, sizeof c);
    static const char *t0[] = {"az:1", "ssd"}, *t1[] = {"az:1"}, *t2[] = {"az:2", "ssd"},
                      *t3[] = {"az:3", "ssd"}, *t4[] = {"az:2", "hdd"};
    const char *const *tags[] = {t0, t1, t2, t3, t4};
    size_t ntags[] = {2, 1, 2, 2, 2};
    for (unsigned i = 0; i < 5; i++) {
        for (size_t k = 0; k < ntags[i]; k++) c.tags[i][k] = tags[i][k];
        c.ntags[i] = ntags[i];
    }
    c.unique_tag = "az:";
    ck_assert_int_eq(e2e_new(&c, 5, 99, 1000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 5, 10 * SEC), 0);
}

static void teardown(void)
{
    e2e_free(&c);
}

/* Bitmask of the nodes that hold a replica of name (after letting every node converge). */
static unsigned holders(const char *name)
{
    jr_sim_run_for(c.sim, 200 * MS);
    unsigned m = 0;
    for (unsigned i = 0; i < 5; i++)
        if (e2e_node(&c, i) && e2e_has_replica(&c, i, name)) m |= 1u << i;
    return m;
}

static int add(const char *name, const char *subject, int replicas, const char *const *tags,
               size_t ntags, e2e_res *r)
{
    const char *subj[] = {subject};
    jr_stream_config cfg;
    e2e_config(&cfg, name, subj, 1, replicas);
    cfg.placement = e2e_placement(NULL, tags, ntags);
    return e2e_add(&c, 4, &cfg, r);
}

static void nothing_created(const char *name)
{
    jr_sim_run_for(c.sim, 200 * MS);
    for (unsigned i = 0; i < 5; i++) {
        if (!e2e_node(&c, i)) continue;
        ck_assert(!e2e_meta_has(&c, i, name));
        ck_assert(!e2e_has_replica(&c, i, name));
    }
    e2e_res r;
    ck_assert_int_eq(e2e_info(&c, 1, name, &r), JR_ENOTFOUND);
}

START_TEST(required_tags_and_unique_az)
{
    e2e_res r;
    const char *ssd[] = {"ssd"};
    ck_assert_msg(add("FAST", "fast.>", 3, ssd, 1, &r) == 0, "%s", r.msg);
    ck_assert_uint_eq(holders("FAST"), (1u << 0) | (1u << 2) | (1u << 3)); /* az:1, az:2, az:3 */
    ck_assert_int_ge(e2e_wait_stream(&c, 1, "FAST", 2, 10 * SEC), 0);
    ck_assert_int_eq(e2e_publish(&c, 1, "fast.x", "1", 1, NULL, &r), 0);
}
END_TEST

START_TEST(excluded_tag)
{
    e2e_res r;
    const char *not_ssd[] = {"!ssd"};
    ck_assert_msg(add("BULK", "bulk.>", 2, not_ssd, 1, &r) == 0, "%s", r.msg);
    ck_assert_uint_eq(holders("BULK"), (1u << 1) | (1u << 4));
}
END_TEST

START_TEST(impossible_placement_is_refused_with_reasons)
{
    e2e_res r;
    /* ssd in az:1: only n0 qualifies (pinning az:1 lifts the unique-az rule) */
    const char *pinned[] = {"ssd", "az:1"};
    ck_assert_int_eq(add("PINNED", "pinned.>", 3, pinned, 2, &r), JR_ENORESOURCES);
    ck_assert_msg(strstr(r.msg, "no suitable peers for placement"), "%s", r.msg);
    fprintf(stderr, "refused: %s\n", r.msg);
    ck_assert_msg(strstr(r.msg, "n1") && strstr(r.msg, "n4"), "reasons per server: %s", r.msg);
    nothing_created("PINNED");

    /* four replicas, but only three distinct az values */
    ck_assert_int_eq(add("WIDE", "wide.>", 4, NULL, 0, &r), JR_ENORESOURCES);
    ck_assert_msg(strstr(r.msg, "unique"), "%s", r.msg);
    nothing_created("WIDE");

    /* more replicas than JetStream allows */
    ck_assert_int_eq(add("HUGE", "huge.>", 6, NULL, 0, &r), JR_EINVAL);
    ck_assert_msg(strncmp(r.msg, "replicas", 8) == 0, "%s", r.msg);
    nothing_created("HUGE");

    /* a tag nobody has */
    const char *gpu[] = {"gpu"};
    ck_assert_int_eq(add("GPU", "gpu.>", 1, gpu, 1, &r), JR_ENORESOURCES);
    ck_assert_msg(strstr(r.msg, "gpu"), "%s", r.msg);
    nothing_created("GPU");
}
END_TEST

START_TEST(offline_servers_are_not_chosen)
{
    e2e_res r;
    ck_assert_int_eq(jr_sim_crash(c.sim, 3), 0); /* the only ssd server in az:3 */
    jr_sim_run_for(c.sim, 2 * SEC);
    const char *ssd[] = {"ssd"};
    int st = add("FAST2", "fast2.>", 3, ssd, 1, &r);
    ck_assert_msg(st == JR_ENORESOURCES, "%s: %s", jr_err_name(st), r.msg);
    ck_assert_msg(strstr(r.msg, "offline"), "%s", r.msg);
    nothing_created("FAST2");
    /* two replicas still fit (n0 az:1, n2 az:2) */
    ck_assert_msg(add("FAST2", "fast2.>", 2, ssd, 1, &r) == 0, "%s", r.msg);
    ck_assert_uint_eq(holders("FAST2"), (1u << 0) | (1u << 2));
}
END_TEST

START_TEST(r1_streams_are_placed_and_spread)
{
    e2e_res r;
    unsigned all = 0;
    for (int i = 0; i < 5; i++) {
        char name[16], subj[16];
        snprintf(name, sizeof name, "ONE%d", i);
        snprintf(subj, sizeof subj, "one%d.>", i);
        ck_assert_msg(add(name, subj, 1, NULL, 0, &r) == 0, "%s", r.msg);
        unsigned h = holders(name);
        ck_assert_uint_eq(__builtin_popcount(h), 1);
        all |= h;
    }
    ck_assert_uint_eq(all, 0x1f); /* fewest assets first: one on each server */
}
END_TEST

typedef struct got {
    int done, status;
    char leader[16];
    size_t nservers;
    char names[8][16];
    size_t ntags[8];
    int offline[8];
} got;

static void meta_cb(void *arg, int status, const char *msg, const jr_meta_info *info)
{
    got *g = arg;
    (void)msg;
    g->done = 1;
    g->status = status;
    if (!info) return;
    snprintf(g->leader, sizeof g->leader, "%s", info->leader ? info->leader : "");
    g->nservers = info->nservers;
    for (size_t i = 0; i < info->nservers && i < 8; i++) {
        snprintf(g->names[i], sizeof g->names[i], "%s", info->servers[i]->name);
        g->ntags[i] = info->servers[i]->ntags;
        g->offline[i] = info->servers[i]->offline;
    }
}

static int got_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((got *)arg)->done;
}

START_TEST(meta_info_reports_every_server)
{
    got g;
    memset(&g, 0, sizeof g);
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    ck_assert_int_eq(jr_meta_info_get(e2e_node(&c, 4), meta_cb, &g), 0);
    ck_assert(!g.done);
    ck_assert_int_eq(jr_sim_run_until(c.sim, got_done, &g, 10 * SEC), 0);
    ck_assert_int_eq(g.status, 0);
    ck_assert_uint_eq(g.nservers, 5);
    ck_assert(g.leader[0]);
    for (size_t i = 0; i < 5; i++) {
        ck_assert_str_eq(g.names[i], jr_sim_name(c.sim, (unsigned)i));
        ck_assert_int_eq(g.offline[i], i == 2);
    }
    ck_assert_uint_eq(g.ntags[0], 2);
    ck_assert_uint_eq(g.ntags[1], 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_placement");
    TCase *tc = tcase_create("placement");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, required_tags_and_unique_az);
    tcase_add_test(tc, excluded_tag);
    tcase_add_test(tc, impossible_placement_is_refused_with_reasons);
    tcase_add_test(tc, offline_servers_are_not_chosen);
    tcase_add_test(tc, r1_streams_are_placed_and_spread);
    tcase_add_test(tc, meta_info_reports_every_server);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
