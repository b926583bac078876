/* The cluster fixture itself: a healthy cluster elects and commits; a seed replays exactly. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "vfs/memfs.h"

#define MS 1000000ull

typedef struct acks {
    int ok, failed;
    uint64_t last_index;
} acks;

static void on_ack(void *arg, int status, uint64_t index)
{
    acks *a = arg;
    if (status == 0) {
        a->ok++;
        a->last_index = index;
    } else {
        a->failed++;
    }
}

static int all_acked(void *arg, jr_sim *sim)
{
    (void)sim;
    acks *a = arg;
    return a->ok + a->failed >= 10;
}

START_TEST(healthy_cluster_elects_and_commits)
{
    h_cluster h;
    int l = h_start(&h, 42, 1, 0, NULL);
    ck_assert_int_ge(l, 0);
    ck_assert_int_ge(l, 0);
    acks a = {0};
    for (int i = 0; i < 10; i++) {
        char msg[32];
        snprintf(msg, sizeof msg, "entry %d", i);
        ck_assert_int_eq(jr_group_propose(h.g[l][0], msg, strlen(msg), on_ack, &a), 0);
    }
    ck_assert_int_eq(a.ok, 0); /* never synchronous */
    ck_assert_int_eq(jr_sim_run_until(h.sim, all_acked, &a, 2000 * MS), 0);
    ck_assert_int_eq(a.ok, 10);
    jr_sim_run_for(h.sim, 500 * MS);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(h.fsm[i][0].count, 10);
        ck_assert_uint_eq(h.fsm[i][0].chain, h.fsm[l][0].chain);
    }
    ck_assert_msg(h.fail[0] == 0, "%s", h.fail);
    h_free(&h);
}
END_TEST

static uint64_t run_digest(uint64_t seed)
{
    h_cluster h;
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.seed = seed;
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.drop = 0.05;
    link.duplicate = 0.05;
    link.reorder = 0.1;
    link.delay_max_ns = 3 * MS;
    cfg.link = &link;
    ck_assert_int_eq(h_new(&h, &cfg, 3, 1, 16), 0);
    acks a = {0};
    for (int round = 0; round < 20; round++) {
        jr_sim_run_for(h.sim, 50 * MS);
        int l = h_leader(&h, 0);
        if (l >= 0) jr_group_propose(h.g[l][0], "x", 1, on_ack, &a);
        if (round == 10) jr_sim_crash(h.sim, 1);
        if (round == 14) {
            jr_sim_restart(h.sim, 1);
            h_open(&h, 1);
        }
    }
    jr_sim_run_for(h.sim, 500 * MS);
    uint64_t d = jr_sim_digest(h.sim);
    ck_assert_msg(h.fail[0] == 0, "%s", h.fail);
    ck_assert_int_gt(a.ok, 0);
    h_free(&h);
    return d;
}

static int restores;
static void count_restore(void *arg, unsigned node, uint64_t group, uint64_t index)
{
    (void)arg;
    (void)node;
    (void)group;
    (void)index;
    restores++;
}

typedef struct caught_up {
    h_cluster *h;
    unsigned node;
    uint64_t index;
} caught_up;

static int node_caught_up(void *arg, jr_sim *sim)
{
    caught_up *c = arg;
    (void)sim;
    return c->h->fsm[c->node][0].last >= c->index;
}

/* A crashed replica recovers its log and snapshot from its own storage; one that missed many
 * entries while down is brought up to date with a snapshot from the leader. */
START_TEST(restart_recovers_and_snapshot_catches_up)
{
    h_cluster h;
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.seed = 3;
    cfg.on_restore = count_restore;
    ck_assert_int_eq(h_new(&h, &cfg, 3, 1, 32), 0);
    ck_assert_int_eq(h_wait_leader(&h, 5000 * MS), 0);
    int l = h_leader(&h, 0);
    unsigned down = (unsigned)(l + 1) % 3;
    acks a = {0};
    for (int i = 0; i < 100; i++) jr_group_propose(h.g[l][0], "abc", 3, on_ack, &a);
    jr_sim_run_for(h.sim, 500 * MS);
    ck_assert_int_eq(a.ok, 100);
    jr_group_status st = {.size = sizeof st};
    ck_assert_int_eq(jr_group_status_get(h.g[down][0], &st), 0);
    uint64_t last = st.last_index, applied = h.fsm[down][0].last;
    ck_assert_uint_gt(st.snapshot_index, 0);

    /* everything was synced: nothing is lost */
    ck_assert_int_eq(jr_sim_crash(h.sim, down), 0);
    ck_assert_int_eq(jr_sim_restart(h.sim, down), 0);
    restores = 0;
    ck_assert_int_eq(h_open(&h, down), 0);
    ck_assert_int_eq(restores, 1); /* the snapshot was loaded at open */
    ck_assert_int_eq(jr_group_status_get(h.g[down][0], &st), 0);
    ck_assert_uint_eq(st.last_index, last);
    jr_sim_run_for(h.sim, 200 * MS);
    ck_assert_uint_eq(h.fsm[down][0].last, applied);

    /* down while the others compact far past its log: it needs the leader's snapshot (once
     * it has been silent for an election timeout, the leader keeps no log for it) */
    ck_assert_int_eq(jr_sim_crash(h.sim, down), 0);
    jr_sim_run_for(h.sim, 400 * MS);
    l = h_leader(&h, 0);
    for (int i = 0; i < 300; i++) jr_group_propose(h.g[l][0], "defg", 4, on_ack, &a);
    jr_sim_run_for(h.sim, 500 * MS);
    ck_assert_int_eq(a.ok, 400);
    ck_assert_int_eq(jr_sim_restart(h.sim, down), 0);
    ck_assert_int_eq(h_open(&h, down), 0);
    restores = 0;
    caught_up c = {&h, down, h.fsm[l][0].last};
    ck_assert_int_eq(jr_sim_run_until(h.sim, node_caught_up, &c, 2000 * MS), 0);
    ck_assert_int_ge(restores, 1); /* installed from the leader */
    ck_assert_uint_eq(h.fsm[down][0].chain, h.fsm[l][0].chain);
    ck_assert_msg(h.fail[0] == 0, "%s", h.fail);
    h_free(&h);
}
END_TEST

static int group_has_leader(void *arg, jr_sim *sim)
{
    (void)sim;
    return h_leader(arg, 0) >= 0;
}

/* list callback: keeps the smallest "<seq>.wal" name in arg */
static int keep_oldest_segment(void *arg, const char *name)
{
    char *oldest = arg;
    size_t n = strlen(name);
    if (n < 5 || strcmp(name + n - 4, ".wal") || n >= 64) return 0;
    if (!oldest[0] || strcmp(name, oldest) < 0) memcpy(oldest, name, n + 1);
    return 0;
}

/* A cluster of 3 (seed 5, small WAL segments) whose leader *l had 400 entries of 200 bytes
 * applied by every replica; returns a follower. */
static unsigned filled_follower(h_cluster *h, int *l)
{
    *l = h_start(h, 5, 1, 0, h_small_segments);
    ck_assert_int_ge(*l, 0);
    unsigned d = (unsigned)(*l + 1) % 3;
    h_propose_fill(h, *l, 400, 200, 'd');
    jr_sim_run_for(h->sim, 500 * MS);
    ck_assert_uint_ge(h->fsm[d][0].count, 400);
    return d;
}

/* Flips bits in the middle of down node d's oldest WAL segment (older ones were reclaimed). */
static void damage_oldest_segment(h_cluster *h, unsigned d)
{
    jr_vfs *v = jr_sim_vfs(h->sim, d);
    char oldest[64] = "", path[80];
    ck_assert_int_eq(v->list(v->ctx, "/wal", keep_oldest_segment, oldest), 0);
    ck_assert_str_ne(oldest, "");
    snprintf(path, sizeof path, "/wal/%s", oldest);
    ck_assert_int_eq(jr__memfs_flip_bits(v, path, 200, 1000, 8), 0);
}

/* A replica whose WAL lost records in the middle opens damaged and unvouched: with its leader
 * down it takes no entries and grants no vote, so the other voter alone cannot elect anyone;
 * once the leader is back it repairs the replica's log, and from then on its vote counts. */
START_TEST(damaged_replica_votes_only_once_repaired)
{
    h_cluster h;
    int l;
    unsigned d = filled_follower(&h, &l);

    /* power off d and the leader, damage d's oldest WAL segment (older ones were reclaimed),
     * power d on */
    ck_assert_int_eq(jr_sim_crash(h.sim, d), 0);
    ck_assert_int_eq(jr_sim_crash(h.sim, (unsigned)l), 0);
    damage_oldest_segment(&h, d);
    ck_assert_int_eq(jr_sim_restart(h.sim, d), 0);
    ck_assert_int_eq(h_open(&h, d), 0);
    jr_group_status st = {.size = sizeof st};
    ck_assert_int_eq(jr_group_status_get(h.g[d][0], &st), 0);
    ck_assert_int_eq(st.damaged, 1);
    ck_assert_int_eq(st.unvouched, 1);
    ck_assert_int_eq(jr_group_propose(h.g[d][0], "x", 1, NULL, NULL), JR_EDAMAGED);
    /* its own peer line says so (and never current); the others' lines do not */
    size_t self_lines = 0;
    for (size_t i = 0; i < st.npeers; i++) {
        jr_peer_status ps = {.size = sizeof ps};
        ck_assert_int_eq(jr_group_peer(h.g[d][0], i, &ps), 0);
        int is_self = strcmp(ps.name, jr_sim_name(h.sim, d)) == 0;
        self_lines += (size_t)is_self;
        ck_assert_int_eq(ps.damaged, is_self);
        ck_assert_int_eq(ps.unvouched, is_self);
        if (is_self) ck_assert_int_eq(ps.current, 0);
    }
    ck_assert_uint_eq(self_lines, 1);

    /* without the leader, the healthy voter needs d's vote, which never comes */
    ck_assert_int_eq(jr_sim_run_until(h.sim, group_has_leader, &h, 3000 * MS), JR_ETIMEDOUT);
    ck_assert_int_eq(jr_group_status_get(h.g[d][0], &st), 0);
    ck_assert_int_ne(st.role, JR_LEADER);
    ck_assert_int_eq(st.damaged, 1);

    /* the leader comes back: a leader again, d's log is repaired and it is whole */
    ck_assert_int_eq(jr_sim_restart(h.sim, (unsigned)l), 0);
    ck_assert_int_eq(h_open(&h, (unsigned)l), 0);
    ck_assert_int_eq(h_wait_leader(&h, 5000 * MS), 0);
    l = h_leader(&h, 0);
    ck_assert_int_ne(l, (int)d);
    for (int i = 0; i < 10; i++) jr_group_propose(h.g[l][0], "y", 1, NULL, NULL);
    jr_sim_run_for(h.sim, 1000 * MS);
    ck_assert_int_eq(jr_group_status_get(h.g[d][0], &st), 0);
    ck_assert_int_eq(st.damaged, 0);
    ck_assert_int_eq(st.unvouched, 0);
    ck_assert_uint_eq(h.fsm[d][0].last, h.fsm[l][0].last);
    ck_assert_uint_eq(h.fsm[d][0].chain, h.fsm[l][0].chain);

    /* repaired, d's vote counts: without the leader, d and the third voter elect one */
    ck_assert_int_eq(jr_sim_crash(h.sim, (unsigned)l), 0);
    ck_assert_int_eq(jr_sim_run_until(h.sim, group_has_leader, &h, 3000 * MS), 0);
    ck_assert_msg(h.fail[0] == 0, "%s", h.fail);
    h_free(&h);
}
END_TEST

/* list callback: keeps the largest "<seq>.wal" name in arg (the segment written now) */
static int keep_newest_segment(void *arg, const char *name)
{
    char *newest = arg;
    size_t n = strlen(name);
    if (n < 5 || strcmp(name + n - 4, ".wal") || n >= 64) return 0;
    if (!newest[0] || strcmp(name, newest) > 0) memcpy(newest, name, n + 1);
    return 0;
}

static uint64_t size_of(jr_vfs *v, const char *path)
{
    jr_file *f;
    uint64_t size = 0;
    ck_assert_int_eq(v->open(v->ctx, path, 0, &f), 0);
    ck_assert_int_eq(v->size(v->ctx, f, &size), 0);
    v->close(v->ctx, f);
    return size;
}

typedef struct leads_ctx {
    h_cluster *h;
    unsigned mask; /* nodes (bit i: node i) that count */
} leads_ctx;

/* Some node of ctx->mask leads group 0. */
static int one_of_leads(void *arg, jr_sim *sim)
{
    (void)sim;
    leads_ctx *c = arg;
    jr_group_status st = {.size = sizeof st};
    for (unsigned i = 0; i < c->h->n; i++)
        if ((c->mask >> i & 1) && h_group(c->h, i, 0) &&
            jr_group_status_get(c->h->g[i][0], &st) == 0 && st.role == JR_LEADER)
            return 1;
    return 0;
}

/* A node that ran before may reopen a group with nothing recovered because a cut WAL tail took
 * every record of it, votes and acknowledgements included: that replica must not pass for a new
 * one. Here n0 restarts once (its next life is one after an earlier one), the group is created,
 * n0 and n1 commit entries while n2 is cut off, and n0's WAL is cut back to where it stood
 * before the group existed. Then n1 is cut off: n2, which lacks the committed entries, would
 * win n0's vote if n0 voted like a new replica. It does not (it waits for n1's answer), and
 * once n1 is back the entries survive everywhere. */
START_TEST(replica_whose_every_record_was_cut_does_not_vote_as_new)
{
    h_cluster h;
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.seed = 9;
    ck_assert_int_eq(h_new(&h, &cfg, 3, 0, 0), 0);
    jr_sim_run_for(h.sim, 100 * MS);
    ck_assert_int_eq(jr_sim_crash(h.sim, 0), 0);
    ck_assert_int_eq(jr_sim_restart(h.sim, 0), 0);
    jr_sim_run_for(h.sim, 100 * MS);
    jr_vfs *v = jr_sim_vfs(h.sim, 0);
    char newest[64] = "", path[80];
    ck_assert_int_eq(v->list(v->ctx, "/wal", keep_newest_segment, newest), 0);
    ck_assert_str_ne(newest, "");
    snprintf(path, sizeof path, "/wal/%s", newest);
    uint64_t before = size_of(v, path);

    h.ngroups = 1;
    for (unsigned i = 0; i < 3; i++) ck_assert_int_eq(h_open(&h, i), 0);
    ck_assert_int_eq(h_wait_leader(&h, 5000 * MS), 0);
    int l = h_leader(&h, 0);
    const unsigned n2[] = {2};
    if (l == 2) {
        ck_assert_int_eq(jr_group_transfer(h.g[2][0], NULL, NULL, NULL), 0);
        jr_sim_run_for(h.sim, 500 * MS);
    }
    ck_assert_int_eq(jr_sim_partition(h.sim, n2, 1), 0);
    leads_ctx n0_n1 = {&h, 3};
    ck_assert_int_eq(jr_sim_run_until(h.sim, one_of_leads, &n0_n1, 3000 * MS), 0);
    jr_group_status st = {.size = sizeof st};
    ck_assert_int_eq(jr_group_status_get(h.g[0][0], &st), 0);
    l = st.role == JR_LEADER ? 0 : 1;
    for (int i = 0; i < 20; i++) jr_group_propose(h.g[l][0], "c", 1, NULL, NULL);
    jr_sim_run_for(h.sim, 500 * MS);
    ck_assert_uint_ge(h.fsm[0][0].count, 20);
    ck_assert_uint_ge(h.fsm[1][0].count, 20);
    uint64_t committed = h.fsm[1][0].last;

    /* n0's WAL loses every record of the group: a cut tail that takes synced bytes */
    ck_assert_int_eq(jr_sim_crash(h.sim, 0), 0);
    uint64_t now = size_of(v, path);
    ck_assert_uint_gt(now, before);
    ck_assert_int_eq(jr_sim_cut_tail(h.sim, 0, path, now - before), 0);
    ck_assert_int_eq(jr_sim_restart(h.sim, 0), 0);
    ck_assert_int_eq(h_open(&h, 0), 0);
    ck_assert_int_eq(jr_group_status_get(h.g[0][0], &st), 0);
    ck_assert_uint_lt(st.last_index, committed); /* nothing of its log came back */
    ck_assert_int_eq(st.unvouched, 1);

    /* n0 and n2 alone: n2 lacks the committed entries, and n0 must not elect it */
    const unsigned n1[] = {1};
    jr_sim_heal(h.sim);
    ck_assert_int_eq(jr_sim_partition(h.sim, n1, 1), 0);
    leads_ctx n0_n2 = {&h, 5};
    ck_assert_int_eq(jr_sim_run_until(h.sim, one_of_leads, &n0_n2, 3000 * MS), JR_ETIMEDOUT);

    /* n1 back: a leader holding the entries; every replica applies the same log */
    jr_sim_heal(h.sim);
    ck_assert_int_eq(h_wait_leader(&h, 5000 * MS), 0);
    l = h_leader(&h, 0);
    for (int i = 0; i < 5; i++) jr_group_propose(h.g[l][0], "d", 1, NULL, NULL);
    jr_sim_run_for(h.sim, 1000 * MS);
    ck_assert_msg(h.fail[0] == 0, "%s", h.fail);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_gt(h.fsm[i][0].last, committed);
        ck_assert_uint_eq(h.fsm[i][0].chain, h.fsm[l][0].chain);
    }
    h_free(&h);
}
END_TEST

/* A group created just before a power loss of every node, which only one of its original peers
 * had written (n0: the bootstrap configuration, no leader yet); the others reopen with nothing of
 * it as joiners on nodes that ran before (as lib/js opens the original peers of a consumer whose
 * peer set changed since): unvouched, damaged, without a configuration. n0 cannot win without
 * one of their votes, and no configuration is committed anywhere. n0's answer names the
 * bootstrap configuration, which every log of the group holds: it tells the joiners whom to hear
 * from, and once all answered they vote for n0, which is elected and repairs them. */
START_TEST(joiners_without_a_record_elect_the_replica_that_bootstrapped)
{
    h_cluster h;
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.seed = 11;
    ck_assert_int_eq(h_new(&h, &cfg, 3, 0, 0), 0);
    jr_sim_run_for(h.sim, 100 * MS);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_int_eq(jr_sim_crash(h.sim, i), 0);
        ck_assert_int_eq(jr_sim_restart(h.sim, i), 0);
    }
    jr_sim_run_for(h.sim, 100 * MS);
    h.ngroups = 1;
    ck_assert_int_eq(h_open(&h, 0), 0);
    ck_assert_int_eq(h_join(&h, 1), 0);
    ck_assert_int_eq(h_join(&h, 2), 0);
    jr_group_status st = {.size = sizeof st};
    for (unsigned i = 1; i < 3; i++) {
        ck_assert_int_eq(jr_group_status_get(h.g[i][0], &st), 0);
        ck_assert_int_eq(st.unvouched, 1);
        ck_assert_int_eq(st.damaged, 1);
    }
    ck_assert_int_eq(h_wait_leader(&h, 5000 * MS), 0);
    ck_assert_int_eq(h_leader(&h, 0), 0); /* the only replica holding the group's log */
    for (int i = 0; i < 5; i++) jr_group_propose(h.g[0][0], "e", 1, NULL, NULL);
    jr_sim_run_for(h.sim, 1000 * MS);
    ck_assert_msg(h.fail[0] == 0, "%s", h.fail);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(h.fsm[i][0].count, 5);
        ck_assert_uint_eq(h.fsm[i][0].chain, h.fsm[0][0].chain);
        ck_assert_int_eq(jr_group_status_get(h.g[i][0], &st), 0);
        ck_assert_int_eq(st.unvouched, 0);
        ck_assert_int_eq(st.damaged, 0);
    }
    h_free(&h);
}
END_TEST

/* A replica whose WAL lost records is repaired by its leader; from then on its acknowledgements
 * count like anyone's, so what it writes after the repair must survive a plain restart (no new
 * damage): the WAL keeps a group it found damaged marked so until the group is written again
 * as a new incarnation, which the node does once the replica is whole. Else a power loss after
 * the repair would take it back to its damaged state, a second faulty replica the moment another
 * one's disk fails. */
START_TEST(repaired_replica_keeps_its_log_across_a_restart)
{
    h_cluster h;
    int l;
    unsigned d = filled_follower(&h, &l);

    /* d's oldest WAL segment is damaged; it restarts damaged and its leader repairs it */
    ck_assert_int_eq(jr_sim_crash(h.sim, d), 0);
    damage_oldest_segment(&h, d);
    ck_assert_int_eq(jr_sim_restart(h.sim, d), 0);
    ck_assert_int_eq(h_open(&h, d), 0);
    jr_group_status st = {.size = sizeof st};
    ck_assert_int_eq(jr_group_status_get(h.g[d][0], &st), 0);
    ck_assert_int_eq(st.damaged, 1);
    for (int i = 0; i < 10; i++) jr_group_propose(h.g[l][0], "y", 1, NULL, NULL);
    jr_sim_run_for(h.sim, 1000 * MS);
    ck_assert_int_eq(jr_group_status_get(h.g[d][0], &st), 0);
    ck_assert_int_eq(st.damaged, 0);
    ck_assert_int_eq(st.unvouched, 0);
    uint64_t last = st.last_index;
    ck_assert_uint_eq(h.fsm[d][0].last, h.fsm[l][0].last);

    /* a plain crash: d comes back with the log it had, whole as far as its disk can tell */
    ck_assert_int_eq(jr_sim_crash(h.sim, d), 0);
    ck_assert_int_eq(jr_sim_restart(h.sim, d), 0);
    ck_assert_int_eq(h_open(&h, d), 0);
    ck_assert_int_eq(jr_group_status_get(h.g[d][0], &st), 0);
    ck_assert_int_eq(st.damaged, 0);
    ck_assert_uint_eq(st.last_index, last);
    jr_sim_run_for(h.sim, 1000 * MS);
    ck_assert_msg(h.fail[0] == 0, "%s", h.fail);
    h_free(&h);
}
END_TEST

/* list callback: counts "<seq>.wal" files */
static int count_segments(void *arg, const char *name)
{
    size_t n = strlen(name);
    if (n > 4 && !strcmp(name + n - 4, ".wal")) ++*(int *)arg;
    return 0;
}

/* A group that went idle long before its snapshot threshold must not keep the shared WAL from
 * being reclaimed: its old entries pin the oldest segment (and, since segments go oldest first,
 * every later one), so the node asks it for a snapshot. Nothing of it is lost on a restart. */
START_TEST(idle_group_does_not_pin_the_wal)
{
    h_cluster h;
    /* 16 KiB segments; group 1 never gets to 50 entries */
    ck_assert_int_ge(h_start(&h, 11, 2, 50, h_small_segments), 0);
    int l1 = -1;
    for (int t = 0; t < 100 && l1 < 0; t++) {
        l1 = h_leader(&h, 1);
        if (l1 < 0) jr_sim_run_for(h.sim, 50 * MS);
    }
    ck_assert_int_ge(l1, 0);
    acks a = {0};
    for (int i = 0; i < 5; i++) jr_group_propose(h.g[l1][1], "idle", 4, on_ack, &a);
    jr_sim_run_for(h.sim, 300 * MS);
    ck_assert_int_eq(a.ok, 5);

    /* ~240 KiB of traffic in group 0 (which snapshots too): fifteen segments' worth */
    int l = h_leader(&h, 0);
    char data[600];
    memset(data, 'b', sizeof data);
    for (int i = 0; i < 400; i++) { /* one flush each: segments rotate at 16 KiB */
        jr_group_propose(h.g[l][0], data, sizeof data, on_ack, &a);
        jr_sim_run_for(h.sim, 5 * MS);
    }
    jr_sim_run_for(h.sim, 500 * MS);
    ck_assert_int_eq(a.ok, 405);
    for (unsigned i = 0; i < 3; i++) {
        jr_vfs *v = jr_sim_vfs(h.sim, i);
        int segs = 0;
        ck_assert_int_eq(v->list(v->ctx, "/wal", count_segments, &segs), 0);
        ck_assert_msg(segs <= 4, "node %u keeps %d WAL segments", i, segs);
    }

    /* the idle group's state survives a restart of every node */
    uint64_t chain = h.fsm[l1][1].chain, last = h.fsm[l1][1].last;
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_int_eq(jr_sim_crash(h.sim, i), 0);
        ck_assert_int_eq(jr_sim_restart(h.sim, i), 0);
        ck_assert_int_eq(h_open(&h, i), 0);
    }
    jr_sim_run_for(h.sim, 3000 * MS);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(h.fsm[i][1].last, last);
        ck_assert_uint_eq(h.fsm[i][1].chain, chain);
    }
    ck_assert_msg(h.fail[0] == 0, "%s", h.fail);
    h_free(&h);
}
END_TEST

/* A follower that is alive but behind — a slow link, a window of large entries in flight — is
 * replicated from the log: the leader's snapshots do not compact what it still needs (up to a
 * bound), so it is never sent a snapshot it does not need. */
START_TEST(slow_follower_is_not_sent_snapshots)
{
    h_cluster h;
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.seed = 12;
    cfg.on_restore = count_restore;
    ck_assert_int_eq(h_new(&h, &cfg, 3, 1, 8), 0); /* a snapshot every 8 entries */
    ck_assert_int_eq(h_wait_leader(&h, 5000 * MS), 0);
    int l = h_leader(&h, 0);
    unsigned slow = (unsigned)(l + 1) % 3;
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.delay_min_ns = link.delay_max_ns = 20 * MS; /* far behind, still heard from */
    ck_assert_int_eq(jr_sim_set_link(h.sim, (unsigned)l, slow, &link), 0);
    ck_assert_int_eq(jr_sim_set_link(h.sim, slow, (unsigned)l, &link), 0);
    restores = 0;
    acks a = {0};
    static char big[3000];
    for (int i = 0; i < 300; i++) {
        jr_group_propose(h.g[l][0], big, sizeof big, on_ack, &a);
        jr_sim_run_for(h.sim, 1 * MS);
    }
    caught_up c = {&h, slow, 0};
    jr_sim_run_for(h.sim, 500 * MS);
    c.index = h.fsm[l][0].last;
    ck_assert_int_eq(jr_sim_run_until(h.sim, node_caught_up, &c, 2000 * MS), 0);
    ck_assert_int_eq(a.ok, 300);
    ck_assert_int_eq(restores, 0);
    ck_assert_uint_eq(h.fsm[slow][0].chain, h.fsm[l][0].chain);
    ck_assert_msg(h.fail[0] == 0, "%s", h.fail);
    h_free(&h);
}
END_TEST

/* A link with a bandwidth sends its frames one after another at that rate: a follower behind a
 * 200 KB/s link receives 300 KB of entries in no less than 1.5 s of simulated time, while the
 * other follower, on an unlimited link, has them at once. */
START_TEST(a_link_with_a_bandwidth_sends_at_its_rate)
{
    h_cluster h;
    int l = h_start(&h, 13, 1, 0, NULL);
    ck_assert_int_ge(l, 0);
    unsigned slow = (unsigned)(l + 1) % 3, fast = (unsigned)(l + 2) % 3;
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.bytes_per_sec = 200 * 1000;
    ck_assert_int_eq(jr_sim_set_link(h.sim, (unsigned)l, slow, &link), 0);
    acks a = {0};
    static char big[3000];
    uint64_t t0 = jr_sim_now(h.sim);
    for (int i = 0; i < 100; i++) jr_group_propose(h.g[l][0], big, sizeof big, on_ack, &a);
    jr_sim_run_for(h.sim, 100 * MS);
    ck_assert_int_eq(a.ok, 100); /* committed with the fast follower */
    caught_up c = {&h, fast, h.fsm[l][0].last};
    ck_assert_int_eq(jr_sim_run_until(h.sim, node_caught_up, &c, 1 * MS), 0);
    c.node = slow;
    ck_assert_int_eq(jr_sim_run_until(h.sim, node_caught_up, &c, 10000 * MS), 0);
    uint64_t took = jr_sim_now(h.sim) - t0;
    ck_assert_msg(took >= 1500 * MS && took <= 4000 * MS, "caught up after %llu ms",
                  (unsigned long long)(took / MS));
    ck_assert_uint_eq(h.fsm[slow][0].chain, h.fsm[l][0].chain);
    ck_assert_msg(h.fail[0] == 0, "%s", h.fail);
    h_free(&h);
}
END_TEST

START_TEST(same_seed_same_digest)
{
    uint64_t a = run_digest(7), b = run_digest(7), c = run_digest(8);
    ck_assert_uint_eq(a, b);
    ck_assert_uint_ne(a, c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("fixture");
    tcase_add_test(tc, healthy_cluster_elects_and_commits);
    tcase_add_test(tc, restart_recovers_and_snapshot_catches_up);
    tcase_add_test(tc, damaged_replica_votes_only_once_repaired);
    tcase_add_test(tc, replica_whose_every_record_was_cut_does_not_vote_as_new);
    tcase_add_test(tc, joiners_without_a_record_elect_the_replica_that_bootstrapped);
    tcase_add_test(tc, repaired_replica_keeps_its_log_across_a_restart);
    tcase_add_test(tc, idle_group_does_not_pin_the_wal);
    tcase_add_test(tc, slow_follower_is_not_sent_snapshots);
    tcase_add_test(tc, a_link_with_a_bandwidth_sends_at_its_rate);
    tcase_add_test(tc, same_seed_same_digest);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
