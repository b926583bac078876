/* Placement: a 5-node cluster with tags. Tags, exclusions and unique_tag are honoured; impossible
 * placements are refused with a reason per server; load spreads by asset count; bad requests
 * are JR_EINVAL. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta/placement.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define GiB (1024ULL * 1024 * 1024)

static const char *t1[] = {"az:1", "ssd"};
static const char *t2[] = {"az:2", "ssd"};
static const char *t3[] = {"az:3", "SSD"}; /* tags compare case-insensitively */
static const char *t4[] = {"az:1", "hdd"};
static const char *t5[] = {"az:2", "hdd", "slow"};
static const char *tw[] = {"az:9", "ssd"};

/* n1..n5 in cluster east, w1..w3 in west; equal load unless a test changes it. */
static jr__place_server cluster[8];

static void setup(void)
{
    const char *names[] = {"n1", "n2", "n3", "n4", "n5", "w1", "w2", "w3"};
    const char **tags[] = {t1, t2, t3, t4, t5, tw, tw, tw};
    size_t ntags[] = {2, 2, 2, 2, 3, 2, 2, 2};
    for (size_t i = 0; i < N(cluster); i++) {
        cluster[i] = (jr__place_server){
            names[i], i < 5 ? "east" : "west", tags[i], ntags[i], 1, 100 * GiB, 10 * GiB, 0, 0, 0};
    }
}

static jr__place_request req(int replicas)
{
    jr__place_request r;
    memset(&r, 0, sizeof r);
    r.replicas = replicas;
    r.cluster = "east";
    r.seed = 1;
    return r;
}

static char msg[2048];

static int place(const jr__place_request *r, jr__place_result *out, int *reasons)
{
    return jr__placement_select(cluster, N(cluster), r, out, reasons, msg, sizeof msg);
}

static const char *name(const jr__place_result *out, size_t k)
{
    return cluster[out->peers[k]].name;
}

static int chose(const jr__place_result *out, const char *n)
{
    for (size_t k = 0; k < out->npeers; k++)
        if (strcmp(name(out, k), n) == 0) return 1;
    return 0;
}

#define ASSERT_HAS(text, needle)                                                                   \
    ck_assert_msg(strstr(text, needle), "missing \"%s\" in: %s", needle, text)

START_TEST(r3_spreads_over_unique_zones)
{
    jr__place_request r = req(3);
    r.unique_tag = "az:";
    jr__place_result out;
    int reasons[8];
    ck_assert_msg(place(&r, &out, reasons) == 0, "%s", msg);
    ck_assert_uint_eq(out.npeers, 3);
    /* three distinct zones, all in east */
    char seen[3] = {0};
    for (size_t k = 0; k < 3; k++) {
        const jr__place_server *s = &cluster[out.peers[k]];
        ck_assert_str_eq(s->cluster, "east");
        int az = s->tags[0][3] - '1';
        ck_assert(!seen[az]);
        seen[az] = 1;
    }
    for (size_t i = 5; i < 8; i++) ck_assert_int_eq(reasons[i], JR__PLACE_OTHER_CLUSTER);
    ASSERT_HAS(msg, "placed in cluster 'east' on ");
}
END_TEST

START_TEST(required_tags)
{
    static const char *ssd[] = {"ssd"};
    jr__place_request r = req(3);
    r.tags = ssd;
    r.ntags = 1;
    r.unique_tag = "az:";
    jr__place_result out;
    int reasons[8];
    ck_assert_msg(place(&r, &out, reasons) == 0, "%s", msg);
    ck_assert(chose(&out, "n1") && chose(&out, "n2") && chose(&out, "n3"));
    ck_assert_int_eq(reasons[3], JR__PLACE_MISSING_TAG);
    ck_assert_int_eq(reasons[4], JR__PLACE_MISSING_TAG);

    static const char *hdd[] = {"HDD"};
    r = req(2);
    r.tags = hdd;
    r.ntags = 1;
    ck_assert_msg(place(&r, &out, NULL) == 0, "%s", msg);
    ck_assert(chose(&out, "n4") && chose(&out, "n5"));
    r.replicas = 3;
    ck_assert_int_eq(place(&r, &out, reasons), JR_ENORESOURCES);
    ck_assert_uint_eq(out.npeers, 0);
    ASSERT_HAS(msg, "no suitable peers for placement, tags not matched ['HDD']");
    ASSERT_HAS(msg, "cluster 'east' has 2 of the 3 peers needed");
    ASSERT_HAS(msg, "n1: lacks tag 'HDD'");
    ASSERT_HAS(msg, "n4: qualifies");
    ck_assert(!strstr(msg, "w1")); /* other clusters are not listed */
    ck_assert_int_eq(reasons[0], JR__PLACE_MISSING_TAG);
    ck_assert_int_eq(reasons[3], JR__PLACE_SPARE); /* nothing placed */
}
END_TEST

START_TEST(exclusions)
{
    static const char *notslow[] = {"!slow"};
    jr__place_request r = req(4);
    r.tags = notslow;
    r.ntags = 1;
    jr__place_result out;
    int reasons[8];
    ck_assert_msg(place(&r, &out, reasons) == 0, "%s", msg);
    ck_assert(!chose(&out, "n5"));
    ck_assert_int_eq(reasons[4], JR__PLACE_EXCLUDED_TAG);
    r.replicas = 5;
    ck_assert_int_eq(place(&r, &out, NULL), JR_ENORESOURCES);
    ASSERT_HAS(msg, "tags excluded ['slow']");
    ASSERT_HAS(msg, "n5: has excluded tag 'slow'");
    /* required and excluded together */
    static const char *ssd_notaz1[] = {"ssd", "!az:1"};
    r = req(2);
    r.tags = ssd_notaz1;
    r.ntags = 2;
    ck_assert_msg(place(&r, &out, NULL) == 0, "%s", msg);
    ck_assert(chose(&out, "n2") && chose(&out, "n3"));
}
END_TEST

START_TEST(unique_tag_is_never_shared)
{
    jr__place_request r = req(4); /* east has only three zones */
    r.unique_tag = "az:";
    jr__place_result out;
    int reasons[8];
    ck_assert_int_eq(place(&r, &out, reasons), JR_ENORESOURCES);
    ASSERT_HAS(msg, "no suitable peers for placement, server tag not unique");
    ASSERT_HAS(msg, "has 3 of the 4 peers needed");
    ASSERT_HAS(msg, "already used by");
    int taken = 0;
    for (size_t i = 0; i < 5; i++) taken += reasons[i] == JR__PLACE_UNIQUE_TAKEN;
    ck_assert_int_eq(taken, 2);

    /* a server without any az: tag can not take part */
    static const char *plain[] = {"ssd"};
    cluster[2].tags = plain;
    cluster[2].ntags = 1;
    r.replicas = 3;
    ck_assert_int_eq(place(&r, &out, reasons), JR_ENORESOURCES);
    ck_assert_int_eq(reasons[2], JR__PLACE_NO_UNIQUE_TAG);
    ASSERT_HAS(msg, "n3: no 'az:' tag");

    /* pinning a zone with a required tag turns the uniqueness off (as JetStream does) */
    setup();
    static const char *az1[] = {"az:1"};
    r = req(2);
    r.unique_tag = "az:";
    r.tags = az1;
    r.ntags = 1;
    ck_assert_msg(place(&r, &out, NULL) == 0, "%s", msg);
    ck_assert(chose(&out, "n1") && chose(&out, "n4"));
}
END_TEST

START_TEST(offline_capacity_and_asset_limits)
{
    static const char *ssd[] = {"ssd"};
    jr__place_request r = req(3);
    r.tags = ssd;
    r.ntags = 1;
    jr__place_result out;
    int reasons[8];
    cluster[1].online = 0;                /* n2 */
    cluster[2].capacity_bytes = 20 * GiB; /* n3: 10 GiB free */
    cluster[0].max_assets = 4;            /* n1 at its limit */
    cluster[0].assets = 4;
    r.max_bytes = (int64_t)(16 * GiB);
    ck_assert_int_eq(place(&r, &out, reasons), JR_ENORESOURCES);
    ck_assert_int_eq(reasons[0], JR__PLACE_MAX_ASSETS);
    ck_assert_int_eq(reasons[1], JR__PLACE_OFFLINE);
    ck_assert_int_eq(reasons[2], JR__PLACE_NO_SPACE);
    ASSERT_HAS(msg, "no suitable peers for placement, peer offline, insufficient storage, "
                    "asset limit reached, tags not matched ['ssd']");
    ASSERT_HAS(msg, "n1: asset limit reached (4 of 4)");
    ASSERT_HAS(msg, "n2: offline");
    ASSERT_HAS(msg, "n3: insufficient storage (needs 17179869184 bytes, 10737418240 free)");
    ASSERT_HAS(msg, "has 0 of the 3 peers needed");
    /* room again: n3 fits a smaller stream; unknown capacity never runs out */
    r.max_bytes = (int64_t)(8 * GiB);
    r.replicas = 1;
    cluster[3].capacity_bytes = 0;
    ck_assert_msg(place(&r, &out, reasons) == 0, "%s", msg);
    ck_assert_str_eq(name(&out, 0), "n3");
    /* used beyond capacity counts as no space */
    cluster[2].used_bytes = 30 * GiB;
    ck_assert_int_eq(place(&r, &out, reasons), JR_ENORESOURCES);
    ASSERT_HAS(msg, "0 free");
}
END_TEST

START_TEST(exact_message)
{
    static const char *a_tags[] = {"az:1", "ssd"};
    jr__place_server s[3] = {
        {"a", "east", a_tags, 2, 1, 0, 0, 1, 0, 0},
        {"b", "east", a_tags, 2, 1, 0, 0, 2, 0, 0},
        {"c", "east", a_tags, 2, 0, 0, 0, 0, 0, 0},
    };
    static const char *ssd[] = {"ssd"};
    jr__place_request r = req(3);
    r.tags = ssd;
    r.ntags = 1;
    r.unique_tag = "az:";
    jr__place_result out;
    ck_assert_int_eq(jr__placement_select(s, 3, &r, &out, NULL, msg, sizeof msg), JR_ENORESOURCES);
    ck_assert_str_eq(msg, "no suitable peers for placement, peer offline, server tag not unique: "
                          "cluster 'east' has 1 of the 3 peers needed (a: qualifies; b: 'az:1' "
                          "already used by a; c: offline)");
    /* a short buffer gets a truncated, terminated prefix */
    char tiny[16];
    ck_assert_int_eq(jr__placement_select(s, 3, &r, &out, NULL, tiny, sizeof tiny),
                     JR_ENORESOURCES);
    ck_assert_str_eq(tiny, "no suitable pee");
    ck_assert_int_eq(jr__placement_select(s, 3, &r, &out, NULL, NULL, 0), JR_ENORESOURCES);
}
END_TEST

START_TEST(fewest_assets_then_most_free)
{
    jr__place_request r = req(3);
    jr__place_result out;
    cluster[0].assets = 5;
    cluster[1].assets = 5;
    ck_assert_msg(place(&r, &out, NULL) == 0, "%s", msg);
    ck_assert(chose(&out, "n3") && chose(&out, "n4") && chose(&out, "n5"));
    setup();
    cluster[2].used_bytes = 90 * GiB; /* least free */
    cluster[4].used_bytes = 0;        /* most free */
    ck_assert_msg(place(&r, &out, NULL) == 0, "%s", msg);
    ck_assert_str_eq(name(&out, 0), "n5"); /* best first */
    ck_assert(!chose(&out, "n3"));
}
END_TEST

/* 100 R3 streams on 5 equal servers: every server ends with 60 replicas. */
START_TEST(spreads_by_asset_count)
{
    jr__place_request r = req(3);
    for (int k = 0; k < 100; k++) {
        jr__place_result out;
        r.seed = (uint64_t)k;
        ck_assert_msg(place(&r, &out, NULL) == 0, "%s", msg);
        for (size_t j = 0; j < out.npeers; j++) cluster[out.peers[j]].assets++;
        uint32_t lo = UINT32_MAX, hi = 0;
        for (size_t i = 0; i < 5; i++) {
            if (cluster[i].assets < lo) lo = cluster[i].assets;
            if (cluster[i].assets > hi) hi = cluster[i].assets;
        }
        ck_assert_uint_le(hi - lo, 1);
    }
    for (size_t i = 0; i < 5; i++) ck_assert_uint_eq(cluster[i].assets, 60);
    for (size_t i = 5; i < 8; i++) ck_assert_uint_eq(cluster[i].assets, 0);
}
END_TEST

START_TEST(seed_breaks_ties_reproducibly)
{
    jr__place_request r = req(1);
    jr__place_result a, b;
    int firsts[5] = {0};
    for (uint64_t seed = 0; seed < 200; seed++) {
        r.seed = seed;
        ck_assert_int_eq(place(&r, &a, NULL), 0);
        ck_assert_int_eq(place(&r, &b, NULL), 0);
        ck_assert_uint_eq(a.peers[0], b.peers[0]); /* same seed, same answer */
        firsts[a.peers[0]]++;
    }
    for (size_t i = 0; i < 5; i++) ck_assert_int_gt(firsts[i], 10); /* ties are spread */
}
END_TEST

START_TEST(keep_and_avoid)
{
    jr__place_request r = req(3);
    r.unique_tag = "az:";
    jr__place_result out;
    /* evacuate n1 from {n1, n2, n3}: the replacement must avoid n1 and the zones of n2, n3 */
    static const char *keep[] = {"n2", "n3"};
    static const char *avoid[] = {"n1"};
    r.keep = keep;
    r.nkeep = 2;
    r.avoid = avoid;
    r.navoid = 1;
    int reasons[8];
    ck_assert_msg(place(&r, &out, reasons) == 0, "%s", msg);
    ck_assert_uint_eq(out.npeers, 3);
    ck_assert_str_eq(name(&out, 0), "n2");
    ck_assert_str_eq(name(&out, 1), "n3");
    ck_assert_str_eq(name(&out, 2), "n4"); /* the only other az:1 server */
    ck_assert_int_eq(reasons[0], JR__PLACE_AVOIDED);
    ck_assert_int_eq(reasons[1], JR__PLACE_KEPT);
    ck_assert_int_eq(reasons[3], JR__PLACE_CHOSEN);
    ck_assert_int_eq(reasons[4], JR__PLACE_UNIQUE_TAKEN);
    /* nowhere to go: nothing moves ("peer remap failed" upstream) */
    cluster[3].online = 0;
    ck_assert_int_eq(place(&r, &out, reasons), JR_ENORESOURCES);
    ASSERT_HAS(msg, "n1: excluded by the request");
    ASSERT_HAS(msg, "n2: kept");
    ASSERT_HAS(msg, "n4: offline");
    ASSERT_HAS(msg, "n5: 'az:2' already used by n2");
    /* grow R3 to R4: the kept peers stay, one more joins */
    setup();
    static const char *three[] = {"n1", "n2", "n3"};
    r = req(4);
    r.keep = three;
    r.nkeep = 3;
    cluster[3].assets = 1;
    ck_assert_msg(place(&r, &out, NULL) == 0, "%s", msg);
    ck_assert_str_eq(name(&out, 3), "n5");
    /* shrink to R1: the first kept peer stays */
    r.replicas = 1;
    ck_assert_int_eq(place(&r, &out, NULL), 0);
    ck_assert_uint_eq(out.npeers, 1);
    ck_assert_str_eq(name(&out, 0), "n1");
}
END_TEST

START_TEST(draining_servers_are_never_chosen_but_may_stay)
{
    jr__place_request r = req(3);
    jr__place_result out;
    int reasons[8];
    /* n1 and n2 drain: a new R3 takes the three others */
    cluster[0].draining = 1;
    cluster[1].draining = 1;
    ck_assert_msg(place(&r, &out, reasons) == 0, "%s", msg);
    ck_assert(!chose(&out, "n1") && !chose(&out, "n2"));
    ck_assert_int_eq(reasons[0], JR__PLACE_DRAINING);
    ck_assert_str_eq(jr__place_reason_str(JR__PLACE_DRAINING), "draining");
    /* a draining peer that a group keeps stays (its replica moves off later, one at a time) */
    static const char *keep[] = {"n1", "n3"};
    r.keep = keep;
    r.nkeep = 2;
    ck_assert_msg(place(&r, &out, reasons) == 0, "%s", msg);
    ck_assert_str_eq(name(&out, 0), "n1");
    ck_assert_int_eq(reasons[0], JR__PLACE_KEPT);
    ck_assert(!chose(&out, "n2"));
    /* R5 needs both: refused, and the message says why */
    r = req(5);
    ck_assert_int_eq(place(&r, &out, reasons), JR_ENORESOURCES);
    ASSERT_HAS(msg, "peer draining");
    ASSERT_HAS(msg, "n2: draining");
}
END_TEST

START_TEST(bad_requests_are_einval)
{
    jr__place_result out;
    int bad_replicas[] = {0, -1, 6, 100};
    for (size_t i = 0; i < N(bad_replicas); i++) {
        jr__place_request r = req(bad_replicas[i]);
        ck_assert_int_eq(place(&r, &out, NULL), JR_EINVAL);
        ck_assert_msg(strncmp(msg, "replicas: must be 1..5", 22) == 0, "%s", msg);
        ck_assert_uint_eq(out.npeers, 0);
    }
    jr__place_request r = req(4);
    r.cluster = "west";
    ck_assert_int_eq(place(&r, &out, NULL), JR_EINVAL);
    ck_assert_str_eq(msg, "replicas: 4 requested but cluster 'west' has 3 servers");
    r.cluster = "north";
    ck_assert_int_eq(place(&r, &out, NULL), JR_EINVAL);
    ck_assert_str_eq(msg, "cluster: no servers in cluster 'north'");
    r.cluster = NULL;
    ck_assert_int_eq(place(&r, &out, NULL), JR_EINVAL);
    ck_assert_str_eq(msg, "cluster: required");
    r = req(1);
    static const char *empty_tag[] = {"!"};
    r.tags = empty_tag;
    r.ntags = 1;
    ck_assert_int_eq(place(&r, &out, NULL), JR_EINVAL);
    r = req(1);
    static const char *ghost[] = {"n9"};
    r.keep = ghost;
    r.nkeep = 1;
    ck_assert_int_eq(place(&r, &out, NULL), JR_EINVAL);
    ck_assert_str_eq(msg, "keep[0]: unknown server 'n9'");
    r = req(1);
    cluster[1].name = "n1";
    ck_assert_int_eq(place(&r, &out, NULL), JR_EINVAL);
    ck_assert_str_eq(msg, "servers[1]: duplicate name 'n1'");
    cluster[1].name = NULL;
    ck_assert_int_eq(place(&r, &out, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__placement_select(cluster, N(cluster), NULL, &out, NULL, msg, sizeof msg),
                     JR_EINVAL);
    ck_assert_int_eq(jr__placement_select(cluster, N(cluster), &r, NULL, NULL, msg, sizeof msg),
                     JR_EINVAL);
}
END_TEST

START_TEST(fits_checks_cluster_and_tags_only)
{
    static const char *ssd[] = {"SSD"}, *not_slow[] = {"!slow"}, *both[] = {"hdd", "!slow"};
    /* n1: az:1 ssd; n5: az:2 hdd slow; w1: west */
    ck_assert_int_eq(jr__placement_fits(&cluster[0], "east", ssd, 1), 1); /* case-insensitive */
    ck_assert_int_eq(jr__placement_fits(&cluster[4], "east", ssd, 1), 0);
    ck_assert_int_eq(jr__placement_fits(&cluster[4], "east", not_slow, 1), 0);
    ck_assert_int_eq(jr__placement_fits(&cluster[3], "east", both, 2), 1);
    ck_assert_int_eq(jr__placement_fits(&cluster[4], "east", both, 2), 0);
    ck_assert_int_eq(jr__placement_fits(&cluster[5], "east", ssd, 1), 0); /* other cluster */
    ck_assert_int_eq(jr__placement_fits(&cluster[5], "west", NULL, 0), 1);
    cluster[0].online = 0; /* liveness, capacity and limits are not its business */
    cluster[0].max_assets = 1;
    cluster[0].assets = 1;
    ck_assert_int_eq(jr__placement_fits(&cluster[0], "east", ssd, 1), 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("placement");
    TCase *tc = tcase_create("placement");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, r3_spreads_over_unique_zones);
    tcase_add_test(tc, required_tags);
    tcase_add_test(tc, exclusions);
    tcase_add_test(tc, unique_tag_is_never_shared);
    tcase_add_test(tc, offline_capacity_and_asset_limits);
    tcase_add_test(tc, exact_message);
    tcase_add_test(tc, fewest_assets_then_most_free);
    tcase_add_test(tc, spreads_by_asset_count);
    tcase_add_test(tc, seed_breaks_ties_reproducibly);
    tcase_add_test(tc, keep_and_avoid);
    tcase_add_test(tc, draining_servers_are_never_chosen_but_may_stay);
    tcase_add_test(tc, bad_requests_are_einval);
    tcase_add_test(tc, fits_checks_cluster_and_tags_only);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
