/*
 * Randomized simulations of the pure Raft core: for each seed a cluster of 3..5 members (plus
 * spare nodes that may join) runs under message drops, duplicates, reordering delays,
 * asymmetric partitions, crashes and restarts, membership changes, leadership transfers and
 * snapshots, while the harness checks election safety, log matching, leader completeness and
 * state-machine safety on every flush. Once the faults heal, the group must elect a leader and
 * commit a new entry on every member within bounded simulated time.
 *
 * The same runs are repeated with quiescence on (issue 5): the harness plays the node's
 * coalesced heartbeats and peer liveness over the same faulty network, idle periods let the
 * group go quiet, and quiet leaders are isolated on purpose: an isolated quiet leader must step
 * down within a bounded time (check-quorum fed only by real contact), and the liveness check
 * after healing must pass as before.
 *
 * Storage faults on one replica at a time (vouch.c): a replica crashes and restarts with a lost
 * tail of synced entries (and sometimes older hard state), or with all its files rolled back to
 * an earlier copy; the next such fault waits until that replica is whole again. Every replica
 * restarted from its disk is unvouched, as on a node. The same invariants must hold; with
 * RAFT_NO_VOUCH=1 (plain Raft: restarted replicas are trusted) they do not.
 *
 * With RAFT_RELEASE=1 a server its group's committed configuration left out sometimes releases
 * its replica (h_release: down for the group, its node answering VOUCH with nothing, as a
 * server the layer above took off), so restarted replicas asking an older configuration meet
 * members that hold nothing; it is not added again. Off by default: it changes every seed's
 * run, and the seeds named in docs replay without it.
 *
 * With RAFT_FAULTY=2 two replicas may have lost storage at once (the second fault does not wait
 * for the first replica to be whole): a minority of five. Every seed then runs five voters and
 * no membership change, so that no configuration of three voters, of which two would be a
 * majority, is ever in effect. Off by default: it changes every seed's run.
 *
 * With RAFT_COMMIT_DELAY=ns every leader lets a commit wait that long for an APPEND to carry it
 * before it sends it alone (jr__raft_config.commit_delay, as the node sets it), so followers
 * learn commits late. Off by default: it changes every seed's run.
 *
 * RAFT_SEEDS=n runs seeds 1..n (default 300) in each mode; RAFT_SEED=s replays one seed
 * (RAFT_QUIESCE=1 replays it in the quiescence mode).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "raft/impl.h" /* jr__memb_pending */

#define MS H_MS
#define ET (100 * MS)

static uint64_t pick(harness *h, uint64_t n)
{
    return jr__rand_below(&h->rng, n);
}

static int quiesce_mode, release_mode, two_faulty_mode;
static uint64_t commit_delay; /* RAFT_COMMIT_DELAY: jr__raft_config.commit_delay, ns */
static void dump(harness *h);

/* An isolated quiet leader under watch: it must lose its leadership of watch_term. */
static int watch_node = -1;
static uint64_t watch_term, watch_since, tot_isolated_quiet;
/* The replica that last lost storage: the next storage fault waits until it is whole. With
 * RAFT_FAULTY=2, a second one (faulty2) may lose storage while the first is not whole yet. */
static int faulty = -1, faulty2 = -1;

/* A group whose only voter loses synced entries loses them for good (no other voter held them
 * for a commit), so faults go only to a running replica, while every running replica sees two
 * voters or more and no configuration change pending (entries committed by a single voter just
 * before a change adding one are held by that voter alone), one faulty replica at a time. */
static int fault_allowed(harness *h, int which)
{
    if (!h->nodes[which].up) return 0;
    for (int i = 0; i < h->n; i++)
        if (h->nodes[i].up && jr__raft_conf(h->nodes[i].r)->n > 0 &&
            (jr__conf_voters(jr__raft_conf(h->nodes[i].r)) < 2 || jr__memb_pending(h->nodes[i].r)))
            return 0;
    if (two_faulty_mode) {
        /* a slot is free once its replica is up and whole again; a replica already faulty may
         * lose storage again (still one of the two) */
        if (faulty >= 0 && h->nodes[faulty].up && !jr__raft_unvouched(h->nodes[faulty].r))
            faulty = -1;
        if (faulty2 >= 0 && h->nodes[faulty2].up && !jr__raft_unvouched(h->nodes[faulty2].r))
            faulty2 = -1;
        return faulty < 0 || faulty2 < 0 || which == faulty || which == faulty2;
    }
    if (faulty < 0) return 1;
    h_node *nd = &h->nodes[faulty];
    return nd->up && !jr__raft_unvouched(nd->r);
}

/* Storage faults that left two replicas faulty at once (two_faulty_mode). */
static uint64_t tot_two_faulty;

/* Records node i as faulty (in two_faulty_mode, in a free slot unless it holds one). */
static void set_faulty(int i)
{
    if (!two_faulty_mode || faulty < 0 || faulty == i) {
        if (faulty2 == i) faulty2 = -1;
        faulty = i;
    } else {
        faulty2 = i;
    }
    if (faulty >= 0 && faulty2 >= 0) tot_two_faulty++;
}

/* A storage fault on node i: a lost tail (with older hard state half of the time), or a
 * rollback to the copy h_save took. */
static void storage_fault(harness *h, int i)
{
    if (!fault_allowed(h, i)) return;
    if (i == watch_node) watch_node = -1;
    if (pick(h, 3) == 0 && h_rollback(h, i)) {
        set_faulty(i);
        return;
    }
    if (h_restart_lost(h, i, 1 + pick(h, 8), pick(h, 2) ? (int)pick(h, 4) : 0)) set_faulty(i);
    /* two at once, half of the time: another replica loses its tail and older hard state with
     * it (what a term floor that counted one faulty answer as truthful would forget) */
    if (!two_faulty_mode || !pick(h, 2)) return;
    int j = (int)pick(h, (uint64_t)h->n);
    if (j == i || !fault_allowed(h, j)) return;
    if (j == watch_node) watch_node = -1;
    if (h_restart_lost(h, j, 1 + pick(h, 8), 1 + (int)pick(h, 3))) set_faulty(j);
}

static void configure(harness *h, uint64_t seed)
{
    h_init(h, 5, seed);
    watch_node = -1;
    faulty = faulty2 = -1;
    if (quiesce_mode) {
        h->quiesce = 1;
        h->cfg.quiesce = (uint32_t)pick(h, 3);
    }
    h->drop_pct = (uint32_t)pick(h, 12);
    h->dup_pct = (uint32_t)pick(h, 6);
    h->delay_max = pick(h, 16) * MS;
    if (pick(h, 3)) {
        h->snap_every = 5 + pick(h, 30);
        h->snap_trailing = pick(h, 6);
        h->snap_size = 16 + pick(h, 3000);
    }
    h->cfg.snap_chunk_bytes = 512;
    h->cfg.max_inflight = 1 + (uint32_t)pick(h, 8);
    h->cfg.max_msg_bytes = 16 + (uint32_t)pick(h, 256);
    h->cfg.max_inflight_bytes = 64 + pick(h, 4096);
    h->cfg.commit_delay = commit_delay;
}

static void random_change(harness *h, int l)
{
    jr__raft *r = h->nodes[l].r;
    jr__id peer = 1 + pick(h, (uint64_t)h->n);
    const jr__member *m = jr__conf_find(jr__raft_conf(r), peer);
    int op = !m ? JR__ADD_OBSERVER : (!m->voter && pick(h, 2)) ? JR__PROMOTE : JR__REMOVE;
    /* keep at least three voters most of the time, so faults do not stall the whole run */
    if (op == JR__REMOVE && m->voter && jr__conf_voters(jr__raft_conf(r)) <= 3 && pick(h, 4))
        return;
    /* A released server is not added again: joining empty under the id it had, it would take
     * the configurations of the log prefix it receives first, which may name it a voter, for
     * its own; the node holds such a joiner to its join floor, which this harness does not
     * play. */
    if (op == JR__ADD_OBSERVER && h->nodes[peer - 1].released) return;
    jr__raft_change(r, h->now, op, peer, NULL);
    h_flush(&h->nodes[l]);
}

static void random_step(harness *h, int k)
{
    int l = h_leader(h);
    uint64_t x = pick(h, 100);
    char s[48];
    if (x < 45) {
        if (l >= 0) {
            int n = 1 + (int)pick(h, 3);
            for (int i = 0; i < n; i++) {
                snprintf(s, sizeof s, "%llu-%d-%d", (unsigned long long)h->seed, k, i);
                h_propose(h, l, s, NULL);
            }
        }
    } else if (x < 48) {
        h_crash(h, (int)pick(h, (uint64_t)h->n));
    } else if (x < 56) {
        int i = (int)pick(h, (uint64_t)h->n);
        if (i == watch_node) watch_node = -1;
        h_restart(h, i);
    } else if (x < 61) {
        int a = (int)pick(h, (uint64_t)h->n), b = (int)pick(h, (uint64_t)h->n);
        if (pick(h, 3) == 0)
            h_isolate(h, a);
        else
            h->cut[a][b] = 1; /* asymmetric */
    } else if (x < 66) {
        h_heal(h);
        watch_node = -1;
    } else if (x < 70) {
        if (l >= 0 && !two_faulty_mode) random_change(h, l);
    } else if (x < 72) {
        if (l >= 0) {
            jr__raft_transfer(h->nodes[l].r, h->now, pick(h, 2) ? 0 : 1 + pick(h, (uint64_t)h->n));
            h_flush(&h->nodes[l]);
        }
    } else if (x < 73) {
        if (l >= 0) {
            jr__raft_stepdown(h->nodes[l].r, h->now);
            h_flush(&h->nodes[l]);
        }
    } else if (x >= 83 && x < 86) {
        storage_fault(h, (int)pick(h, (uint64_t)h->n));
    } else if (x >= 86 && x < 89) {
        h_save(h, (int)pick(h, (uint64_t)h->n));
    } else if (release_mode && x >= 89 && x < 92) {
        /* a server the committed configuration left out takes its replica off */
        int i = (int)pick(h, (uint64_t)h->n);
        if (l >= 0 && h->nodes[i].up && !jr__memb_pending(h->nodes[l].r) &&
            !jr__conf_find(jr__raft_conf(h->nodes[l].r), (jr__id)i + 1)) {
            if (i == watch_node) watch_node = -1;
            if (i == faulty) faulty = -1;
            if (i == faulty2) faulty2 = -1;
            h_release(h, i);
        }
    } else if (quiesce_mode && x < 79) {
        h_run(h, (1 + pick(h, 5)) * ET); /* idle: the group may go quiet */
    } else if (quiesce_mode && x < 83) {
        /* (a leader that is its group's only voter needs nobody: it keeps leading) */
        if (l >= 0 && jr__raft_quiet(h->nodes[l].r) && watch_node < 0 &&
            jr__conf_voters(jr__raft_conf(h->nodes[l].r)) > 1) {
            h_isolate(h, l);
            watch_node = l;
            watch_term = jr__raft_term(h->nodes[l].r);
            watch_since = h->now;
            tot_isolated_quiet++;
        }
    }
    h_run(h, (1 + pick(h, 20)) * MS);
    if (watch_node >= 0) {
        h_node *nd = &h->nodes[watch_node];
        if (!nd->up) {
            watch_node = -1;
        } else if (jr__conf_voters(jr__raft_conf(nd->r)) <= 1) {
            watch_node = -1; /* it removed the others (allowed: a change takes effect when
                                appended) and, the group's only voter, needs nobody */
        } else if (jr__raft_role(nd->r) == JR_LEADER && jr__raft_term(nd->r) == watch_term &&
                   h->now > watch_since + 3 * ET) {
            dump(h);
            ck_abort_msg("seed %llu: quiet leader %d isolated at t=%llums still leads term %llu "
                         "at t=%llums (replay: RAFT_QUIESCE=1 RAFT_SEED=%llu)",
                         (unsigned long long)h->seed, watch_node,
                         (unsigned long long)(watch_since / MS), (unsigned long long)watch_term,
                         (unsigned long long)(h->now / MS), (unsigned long long)h->seed);
        }
    }
}

static void dump(harness *h)
{
    for (int i = 0; i < h->n; i++) {
        h_node *nd = &h->nodes[i];
        if (!nd->up) {
            fprintf(stderr, "  node %d down\n", i);
            continue;
        }
        jr__raft *r = nd->r;
        const jr__conf *c = jr__raft_conf(r);
        fprintf(
            stderr,
            "  node %d role %d term %llu leader %llu commit %llu last %llu/%llu snap %llu "
            "first %llu conf[",
            i, jr__raft_role(r), (unsigned long long)jr__raft_term(r),
            (unsigned long long)jr__raft_leader(r), (unsigned long long)jr__raft_commit_index(r),
            (unsigned long long)jr__raft_last_index(r), (unsigned long long)jr__raft_last_term(r),
            (unsigned long long)jr__raft_snapshot_index(r),
            (unsigned long long)jr__raft_first_index(r));
        for (uint32_t k = 0; k < c->n; k++)
            fprintf(stderr, " %llu%s", (unsigned long long)c->m[k].id, c->m[k].voter ? "" : "o");
        fprintf(stderr, " ] deadline %lld%s\n", (long long)(jr__raft_deadline(r) - h->now),
                jr__raft_unvouched(r) ? " unvouched" : "");
    }
}

/* Did the entry proposed at (index, term) commit? */
static int committed(harness *h, uint64_t index, uint64_t term)
{
    for (int i = 0; i < h->n; i++) {
        jr__entry e;
        jr__raft *r = h->nodes[i].r;
        if (h->nodes[i].up && jr__raft_commit_index(r) >= index &&
            jr__raft_entry(r, index, &e) == 0 && e.term == term)
            return 1;
    }
    return 0;
}

/* After healing: a leader within bounded time, a new entry committed (a proposal may be lost
 * to a leader change, as Raft allows: then it is proposed again), and applied by every member. */
static void check_liveness(harness *h)
{
    if (getenv("RAFT_TRACE")) fprintf(stderr, "t=%llums heal\n", (unsigned long long)(h->now / MS));
    h_heal(h);
    h->drop_pct = h->dup_pct = 0;
    h->delay_max = 2 * MS;
    for (int i = 0; i < h->n; i++) h_restart(h, i);
    uint64_t deadline = h->now + 100 * ET, idx = 0;
    int l = -1;
    for (;;) {
        ck_assert_msg(h->now < deadline,
                      "seed %llu: nothing commits after healing (replay: "
                      "RAFT_SEED=%llu)",
                      (unsigned long long)h->seed, (unsigned long long)h->seed);
        l = h_wait_leader(h, 60 * ET);
        if (l < 0) dump(h);
        ck_assert_msg(l >= 0, "seed %llu: no leader after healing (replay: RAFT_SEED=%llu)",
                      (unsigned long long)h->seed, (unsigned long long)h->seed);
        uint64_t term = jr__raft_term(h->nodes[l].r);
        int rc = jr__raft_propose(h->nodes[l].r, h->now, "final", 5, &idx);
        if (getenv("RAFT_TRACE"))
            fprintf(stderr, "t=%llums final proposed at %d index %llu: %s\n",
                    (unsigned long long)(h->now / MS), l, (unsigned long long)idx, jr_err_name(rc));
        h_flush(&h->nodes[l]);
        h_run(h, 5 * ET);
        if (rc == 0 && committed(h, idx, term)) break;
    }
    h_run(h, 20 * ET);
    const jr__conf *c = jr__raft_conf(h->nodes[l].r);
    for (uint32_t i = 0; i < c->n; i++) {
        int n = (int)c->m[i].id - 1;
        if (h->nodes[n].sm_index < idx) dump(h);
        ck_assert_msg(h->nodes[n].sm_index >= idx,
                      "seed %llu: member %d applied %llu < %llu (replay: RAFT_SEED=%llu)",
                      (unsigned long long)h->seed, n, (unsigned long long)h->nodes[n].sm_index,
                      (unsigned long long)idx, (unsigned long long)h->seed);
    }
}

static uint64_t tot_elections, tot_installs, tot_truncations, tot_restarts, tot_configs, tot_steps;
static uint64_t tot_lost_tails, tot_rollbacks, tot_releases, tot_released_vouches;
static uint64_t tot_quiesced, tot_wakes, tot_lost, tot_items;

static void run_seed(uint64_t seed)
{
    harness h;
    configure(&h, seed);
    int members = 3 + (int)(seed % 3);
    int voters = members - (seed % 4 == 0);
    if (two_faulty_mode) members = voters = 5;
    h_start(&h, members, voters);
    for (int k = 0; k < 400; k++) random_step(&h, k);
    h_check_all(&h);
    check_liveness(&h);
    h_check_all(&h);
    tot_elections += h.elections;
    tot_installs += h.installs;
    tot_truncations += h.truncations;
    tot_restarts += h.restarts;
    tot_configs += h.config_entries;
    tot_steps += h.steps;
    tot_lost_tails += h.lost_tails;
    tot_rollbacks += h.rollbacks;
    tot_releases += h.releases;
    tot_released_vouches += h.released_vouches;
    tot_quiesced += h.quiesced;
    tot_wakes += h.quiet_wakes;
    tot_lost += h.peers_lost;
    tot_items += h.nhb_items;
    h_free(&h);
}

static void reset_totals(void)
{
    tot_elections = tot_installs = tot_truncations = tot_restarts = tot_configs = tot_steps = 0;
    tot_quiesced = tot_wakes = tot_lost = tot_items = tot_isolated_quiet = 0;
    tot_lost_tails = tot_rollbacks = tot_releases = tot_released_vouches = tot_two_faulty = 0;
    release_mode = getenv("RAFT_RELEASE") && atoi(getenv("RAFT_RELEASE"));
    two_faulty_mode = getenv("RAFT_FAULTY") && atoi(getenv("RAFT_FAULTY")) == 2;
    commit_delay =
        getenv("RAFT_COMMIT_DELAY") ? strtoull(getenv("RAFT_COMMIT_DELAY"), NULL, 10) : 0;
}

START_TEST(random_faults_keep_raft_safe_and_live)
{
    const char *one = getenv("RAFT_SEED");
    quiesce_mode = 0;
    reset_totals();
    if (one) {
        if (getenv("RAFT_QUIESCE")) return;
        run_seed(strtoull(one, NULL, 10));
        return;
    }
    const char *n = getenv("RAFT_SEEDS");
    uint64_t seeds = n ? strtoull(n, NULL, 10) : 300;
    for (uint64_t s = 1; s <= seeds; s++) run_seed(s);
    fprintf(stderr,
            "raft-random: %llu seeds, %llu steps, %llu elections, %llu snapshot installs, "
            "%llu log truncations, %llu restarts, %llu configuration entries written, %llu lost "
            "tails, %llu rollbacks, %llu released replicas (%llu VOUCHes answered for them)\n",
            (unsigned long long)seeds, (unsigned long long)tot_steps,
            (unsigned long long)tot_elections, (unsigned long long)tot_installs,
            (unsigned long long)tot_truncations, (unsigned long long)tot_restarts,
            (unsigned long long)tot_configs, (unsigned long long)tot_lost_tails,
            (unsigned long long)tot_rollbacks, (unsigned long long)tot_releases,
            (unsigned long long)tot_released_vouches);
    if (two_faulty_mode)
        fprintf(stderr, "raft-random: %llu storage faults left two replicas faulty at once\n",
                (unsigned long long)tot_two_faulty);
    /* the faults must actually have exercised the hard paths */
    if (seeds >= 100) {
        ck_assert_uint_gt(tot_installs, seeds / 10);
        ck_assert_uint_gt(tot_truncations, seeds / 10);
        if (!two_faulty_mode) ck_assert_uint_gt(tot_configs, seeds);
        ck_assert_uint_gt(tot_elections, seeds * 2);
        ck_assert_uint_gt(tot_lost_tails, seeds);
        ck_assert_uint_gt(tot_rollbacks, seeds / 4);
    }
}
END_TEST

START_TEST(random_faults_with_quiescence_keep_raft_safe_and_live)
{
    const char *one = getenv("RAFT_SEED");
    quiesce_mode = 1;
    reset_totals();
    if (one) {
        if (!getenv("RAFT_QUIESCE")) return;
        run_seed(strtoull(one, NULL, 10));
        return;
    }
    const char *n = getenv("RAFT_SEEDS");
    uint64_t seeds = n ? strtoull(n, NULL, 10) : 300;
    for (uint64_t s = 1; s <= seeds; s++) run_seed(s);
    fprintf(stderr,
            "raft-random (quiescence): %llu seeds, %llu steps, %llu elections, %llu times quiet, "
            "%llu quiet wakes, %llu quiet leaders isolated, %llu peers lost, %llu heartbeat "
            "items, %llu snapshot installs, %llu restarts\n",
            (unsigned long long)seeds, (unsigned long long)tot_steps,
            (unsigned long long)tot_elections, (unsigned long long)tot_quiesced,
            (unsigned long long)tot_wakes, (unsigned long long)tot_isolated_quiet,
            (unsigned long long)tot_lost, (unsigned long long)tot_items,
            (unsigned long long)tot_installs, (unsigned long long)tot_restarts);
    if (seeds >= 100) {
        ck_assert_uint_gt(tot_quiesced, seeds);
        ck_assert_uint_gt(tot_wakes, seeds);
        ck_assert_uint_gt(tot_isolated_quiet, seeds / 4);
        ck_assert_uint_gt(tot_lost, seeds);
        ck_assert_uint_gt(tot_elections, seeds * 2);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("raft-random");
    TCase *tc = tcase_create("sim");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, random_faults_keep_raft_safe_and_live);
    tcase_add_test(tc, random_faults_with_quiescence_keep_raft_safe_and_live);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
