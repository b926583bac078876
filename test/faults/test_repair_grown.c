/*
 * A damaged lone voter is repaired once its group grows (lib/raft/vouch.c, "A lone voter's
 * damage"), replayed deterministically on five servers from jetraft-sim seed 965 (`--nodes 5`;
 * seed 3610 on three servers has the same shape).
 *
 *  - stream_placed_on_a_server_whose_wal_was_lost_is_whole_once_grown: an R1 stream is placed
 *    on v while v is down with its WAL lost. v restarts and opens the replica damaged (nothing
 *    recovered after a lost WAL, and it cannot know the stream is new to it) with the
 *    creation's configuration, itself alone: a lone voter, it vouches for itself, keeps the
 *    damage and leads, damaged (proposals fail with JR_EDAMAGED). The stream grows to R2: once
 *    the promotion of the new peer commits, v steps down, asks its members again as a restarted
 *    replica does, never campaigns, and is whole once the new peer, elected with v's vote,
 *    answers as leader with a last entry v holds. Without the rule v stays damaged for good.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"

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

typedef struct three {
    e2e *c;
    unsigned v;
    const char *name;
} three;

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
    Suite *su = suite_create("repair_grown");
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
