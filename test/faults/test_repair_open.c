/*
 * Damaged replicas that are never repaired today: each case is a scenario jetraft-sim found,
 * replayed deterministically on five servers, and registered as an expected failure
 * (test/faults/meson.build, should_fail), one test per case (CK_RUN_CASE), so the default
 * suite stays green and a case that starts to pass shows up as an unexpected pass. Each asserts
 * what the cluster should do; docs/testing.md ("Library findings") has the diagnosis.
 *
 *  - lone_origin_that_lost_its_wal_does_not_lead_the_group_it_grew (jetraft-sim seed 648,
 *    `--nodes 5 --disk-victims 2`): an R1 stream grows to R5 while one new peer is paused, so
 *    the first peer change since its creation has not converged when its original peer v loses
 *    its whole WAL. Restarted, v opens its replica as the origin-peer rule says (lib/js
 *    stream_replica.c boot_peers: the creation's peer set, {v} alone); the node opens it
 *    damaged (nothing recovered after a lost WAL), and the core, whose only configuration is
 *    that bootstrap entry with no other member, takes it for a lone voter that trusts its disk
 *    (raft/vouch.c jr__vouch_start, "no peer could know more than we do"): it campaigns alone
 *    and leads the group again, damaged, in a term the group already used, while the other
 *    voters hold the configuration of five that names it.
 *  - stream_placed_on_a_server_whose_wal_was_lost_is_whole_once_grown (jetraft-sim seed 965,
 *    `--nodes 5`): an R1 stream is placed on v while v is down with its WAL lost; v restarts,
 *    opens the replica damaged (it cannot know the stream is new to it) as a lone voter whose
 *    damage stays (the same jr__vouch_start rule), leads it, and the stream grows to R2. The
 *    new peer leads in time, v follows with the leader's whole log, and still reports damaged
 *    for good: only a vouch that completes clears a replica's damage, and a lone voter's was
 *    never pending.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"

#define STREAM "R"

static void small_files(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    (void)i;
    cfg->store_block_bytes = JR_STORE_BLOCK_MIN;
    cfg->wal_segment_bytes = 128u << 10;
}

/* Five servers with small files, the meta group up. */
static void servers5(e2e *c, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->configure_more = small_files;
    ck_assert_int_eq(e2e_new(c, 5, seed, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(c, 5, 20 * SEC), 0);
}

static int add_stream(e2e *c, unsigned via, const char *name, const char *subject, int replicas)
{
    const char *subjects[] = {subject};
    jr_stream_config cfg;
    e2e_config(&cfg, name, subjects, 1, replicas);
    e2e_res r;
    return e2e_add(c, via, &cfg, &r);
}

static void update_replicas(e2e *c, unsigned via, const char *name, const char *subject,
                            int replicas)
{
    const char *subjects[] = {subject};
    jr_stream_config cfg;
    e2e_config(&cfg, name, subjects, 1, replicas);
    e2e_res r;
    ck_assert_msg(e2e_update(c, via, &cfg, &r) == 0, "update %s: %s", name, r.msg);
}

typedef struct seglist {
    char path[64][160];
    int n;
} seglist;

static int seg_cb(void *arg, const char *path, uint64_t size)
{
    seglist *l = arg;
    size_t k = strlen(path);
    (void)size;
    if (!strncmp(path, "/wal/", 5) && !strchr(path + 5, '/') && k > 9 &&
        !strcmp(path + k - 4, ".wal") && l->n < 64)
        snprintf(l->path[l->n++], sizeof l->path[0], "%s", path);
    return 0;
}

/* Node i, crashed, loses every WAL segment (its mark stays: the node knows its WAL was lost). */
static void lose_wal(e2e *c, unsigned i)
{
    static seglist l;
    memset(&l, 0, sizeof l);
    ck_assert_int_eq(jr_sim_files(c->sim, i, seg_cb, &l), 0);
    ck_assert_int_gt(l.n, 0);
    for (int j = 0; j < l.n; j++) ck_assert_int_eq(jr_sim_remove_file(c->sim, i, l.path[j]), 0);
}

static int group_status(e2e *c, unsigned i, const char *name, jr_group_status *gs)
{
    jr_group *g = e2e_group(c, i, name);
    if (!g) return -1;
    memset(gs, 0, sizeof *gs);
    gs->size = sizeof *gs;
    return jr_group_status_get(g, gs);
}

static int voters_of(e2e *c, unsigned i, const char *name)
{
    unsigned idx[8];
    int voter[8];
    int n = e2e_members(c, i, name, idx, voter, 8);
    int v = 0;
    for (int k = 0; k < n; k++) v += voter[k] != 0;
    return v;
}

typedef struct three {
    e2e *c;
    unsigned v;
    const char *name;
} three;

static int grew_to_three_voters(void *arg, jr_sim *sim)
{
    three *t = arg;
    (void)sim;
    return voters_of(t->c, t->v, t->name) >= 3;
}

START_TEST(lone_origin_that_lost_its_wal_does_not_lead_the_group_it_grew)
{
    e2e c;
    servers5(&c, 648);
    ck_assert_int_eq(add_stream(&c, 0, STREAM, "r.>", 1), 0);
    unsigned peers[5];
    ck_assert_int_ge(e2e_wait_stream(&c, 0, STREAM, 0, 10 * SEC), 0);
    ck_assert_int_eq(e2e_meta_peers(&c, 0, STREAM, peers, 5), 1);
    unsigned v = peers[0], p = (v + 1) % 5;
    fchk k;
    fchk_init(&k, &c, STREAM, "r", 0);
    k.require_whole = 1;
    ck_assert_uint_eq(fchk_publish_n(&k, (v + 2) % 5, 200, 32, -1, 30 * SEC), 200);
    /* the grow to R5 cannot converge while p is paused: p is never promoted */
    ck_assert_int_eq(jr_sim_pause(c.sim, p, 20 * SEC), 0);
    update_replicas(&c, (v + 2) % 5, STREAM, "r.>", 5);
    three t = {&c, v, STREAM};
    ck_assert_int_eq(jr_sim_run_until(c.sim, grew_to_three_voters, &t, 10 * SEC), 0);
    ck_assert_uint_eq(fchk_publish_n(&k, (v + 2) % 5, 100, 32, -1, 30 * SEC), 100);
    ck_assert_int_eq(e2e_meta_busy(&c, (v + 2) % 5, STREAM), 1);
    ck_assert_int_eq(jr_sim_crash(c.sim, v), 0);
    lose_wal(&c, v);
    ck_assert_int_eq(e2e_restart(&c, v), 0);
    /* v's replica never leads while damaged, whatever its node and meta replica go through */
    for (int step = 0; step < 1000; step++) {
        jr_sim_run_for(c.sim, 10 * MS);
        jr_group_status gs;
        if (group_status(&c, v, STREAM, &gs) != 0) continue;
        ck_assert_msg(!(gs.role == JR_LEADER && gs.damaged),
                      "n%u leads %s while damaged (term %llu, %.2f s after its restart)", v, STREAM,
                      (unsigned long long)gs.term, (step + 1) * 0.01);
    }
    /* p back: the grow converges, v is repaired, nothing acknowledged is lost */
    jr_sim_run_for(c.sim, 15 * SEC);
    const unsigned all[] = {0, 1, 2, 3, 4};
    fchk_publish_n(&k, (v + 2) % 5, 100, 32, -1, 30 * SEC);
    fchk_final(&k, all, 5, (v + 2) % 5, 30 * SEC);
    if (k.fail[0]) fchk_dump(&k, all, 5);
    ck_assert_msg(k.fail[0] == 0, "%s", k.fail);
    fchk_free(&k);
    e2e_free(&c);
}
END_TEST

static int whole_on(void *arg, jr_sim *sim)
{
    three *t = arg;
    (void)sim;
    jr_group_status gs;
    return group_status(t->c, t->v, t->name, &gs) == 0 && !gs.damaged && !gs.unvouched;
}

START_TEST(stream_placed_on_a_server_whose_wal_was_lost_is_whole_once_grown)
{
    e2e c;
    servers5(&c, 965);
    unsigned v = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, v), 0);
    lose_wal(&c, v);
    /* R1 streams placed while v is down, before the meta leader finds it lost */
    char name[16], subj[16];
    int placed = 0;
    for (int i = 0; i < 12 && !placed; i++) {
        snprintf(name, sizeof name, "ONE%d", i);
        snprintf(subj, sizeof subj, "one%d.>", i);
        if (add_stream(&c, 0, name, subj, 1) != 0) continue;
        unsigned peers[5];
        placed = e2e_meta_peers(&c, 0, name, peers, 5) == 1 && peers[0] == v;
    }
    ck_assert_msg(placed, "no R1 stream was placed on n%u while it was down", v);
    ck_assert_int_eq(e2e_restart(&c, v), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    update_replicas(&c, 0, name, subj, 2);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, name, 1, 20 * SEC), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    three t = {&c, v, name};
    int whole = jr_sim_run_until(c.sim, whole_on, &t, 30 * SEC) == 0;
    jr_group_status gs;
    ck_assert_int_eq(group_status(&c, v, name, &gs), 0);
    int l = e2e_replica_leader(&c, v, name);
    ck_assert_msg(whole, "%s on n%u (leader n%d): role %d, last %llu, damaged %d, unvouched %d",
                  name, v, l, gs.role, (unsigned long long)gs.last_index, gs.damaged, gs.unvouched);
    e2e_free(&c);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("repair_open");
    TCase *a = tcase_create("lone_origin_that_lost_its_wal_does_not_lead_the_group_it_grew");
    tcase_set_timeout(a, 120);
    tcase_add_test(a, lone_origin_that_lost_its_wal_does_not_lead_the_group_it_grew);
    suite_add_tcase(su, a);
    TCase *b = tcase_create("stream_placed_on_a_server_whose_wal_was_lost_is_whole_once_grown");
    tcase_set_timeout(b, 120);
    tcase_add_test(b, stream_placed_on_a_server_whose_wal_was_lost_is_whole_once_grown);
    suite_add_tcase(su, b);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
