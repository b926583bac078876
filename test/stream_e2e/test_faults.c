/*
 * Streams under faults, randomized: a 3-node cluster with lossy, duplicating, reordering links,
 * one server at a time crashed (power loss: unsynced writes lost, the last one torn) and
 * restarted, partitions, publishers
 * on every server (most with msg ids, every fourth without one: the duplicated frames that carry
 * it must not store it twice), and stepdowns. At the end the cluster heals, every server
 * restarts, and the checks are the ones that matter:
 *   - every acknowledged publish is stored, at the seq its ack named, with its content, on
 *     every replica (no acknowledged message is ever lost, none is stored under two seqs);
 *   - no publish is stored twice, with a msg id or without one (a publish without one that
 *     failed is not sent again: its outcome is unknown);
 *   - every replica holds identical messages and state (digest);
 *   - every publish got exactly one callback.
 * A second variant adds limits (max_msgs, max_msgs_per_subject) and random deletes and purges:
 * an acknowledged message may then be gone, never changed, and the replicas stay identical.
 * JR_SEEDS=first:count picks the seeds (default 1:12; soak 1000:300); a failure names its seed
 * (replay: JR_SEEDS=<seed>:1 test_faults).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "util/rand.h"

#define MSGS 3000

typedef struct pres {
    int done, status;
    uint64_t seq;
    int duplicate;
} pres;

typedef struct item {
    pres r;
    int issued;
    int tries;
    uint64_t acked; /* seq of the first successful ack */
} item;

/* Every fourth publish carries no msg id. */
static int no_id(size_t i)
{
    return i % 4 == 3;
}

static void on_ack(void *arg, int status, const jr_pub_ack *ack)
{
    pres *r = arg;
    ck_assert_msg(!r->done, "a publish callback ran twice");
    r->done = 1;
    r->status = status;
    r->seq = ack->seq;
    r->duplicate = ack->duplicate;
}

static void purge_cb(void *arg, int status, const char *msg, uint64_t purged)
{
    (void)purged;
    e2e_admin_cb(arg, status, msg);
}

static void data_of(size_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "payload %zu", i);
}

/* JR_FAULTS_DIFF: each replica's digest after every entry it applies, to name the first index
 * where two replicas disagree. */
#define TRACE_MAX 8192
static uint64_t trace[3][TRACE_MAX];

static void trace_apply(void *arg, unsigned node, uint64_t group, uint64_t index, uint64_t term,
                        const void *data, size_t len)
{
    e2e *c = arg;
    (void)group;
    (void)term;
    (void)data;
    (void)len;
    if (node >= 3 || index >= TRACE_MAX || e2e_fsm_applied(c, node, "F") != index) return;
    uint64_t d;
    if (e2e_digest(c, node, "F", &d) == 0) {
        if (trace[node][index] && trace[node][index] != d)
            fprintf(stderr, "  n%u re-applied index %llu to another state\n", node,
                    (unsigned long long)index);
        trace[node][index] = d;
    }
}

/* churn = 1: the stream also has limits (max_msgs, discard old), and random message deletes and
 * purges run among the publishes; then an acknowledged message may be gone, but never changed,
 * and the replicas must still be identical. */
static void run_seed(uint64_t seed, int churn)
{
    e2e c;
    memset(&c, 0, sizeof c);
    c.torn_writes = 1;
    if (getenv("JR_FAULTS_DIFF")) {
        c.on_apply = trace_apply;
        memset(trace, 0, sizeof trace);
    }
    ck_assert_int_eq(e2e_new(&c, 3, seed, 800), 0);
    jr__rand rnd;
    jr__rand_seed(&rnd, seed * 7919);
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.drop = 0.02;
    link.duplicate = 0.02;
    link.reorder = 0.05;
    link.delay_max_ns = 2 * MS;
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 20 * SEC), 0);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 16); /* catch-ups happen */
    const char *subj[] = {"f.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "F", subj, 1, 3);
    cfg.max_msgs_per_subject = -1;
    if (churn) {
        cfg.max_msgs = 1500;
        cfg.max_msgs_per_subject = 200;
    }
    e2e_res r;
    ck_assert_msg(e2e_add(&c, (unsigned)(seed % 3), &cfg, &r) == 0, "seed %llu: add: %s",
                  (unsigned long long)seed, r.msg);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "F", 2, 20 * SEC), 0);
    for (unsigned a = 0; a < 3; a++)
        for (unsigned b = 0; b < 3; b++)
            if (a != b) jr_sim_set_link(c.sim, a, b, &link);

    item *it = calloc(MSGS, sizeof *it);
    static e2e_res stepdowns[400]; /* outlive the calls (their callbacks come later) */
    size_t next = 0;
    int down = -1;
    for (int round = 0; round < 400 && next < MSGS; round++) {
        /* a few publishes on random live servers (re-publishing failed ones first) */
        for (int k = 0; k < 12; k++) {
            size_t i = (size_t)-1;
            for (size_t j = 0; j < next; j++)
                if (!it[j].issued && !it[j].acked && !(no_id(j) && it[j].tries)) {
                    i = j;
                    break;
                }
            if (i == (size_t)-1) {
                if (next >= MSGS) break;
                i = next++;
            }
            unsigned via = (unsigned)jr__rand_below(&rnd, 3);
            if ((int)via == down) via = (via + 1) % 3;
            char subject[32], data[32], id[32];
            snprintf(subject, sizeof subject, "f.%zu", i % 17);
            data_of(i, data, sizeof data);
            snprintf(id, sizeof id, "id-%zu", i);
            jr_pub_opts o;
            jr_pub_opts_init(&o);
            o.msg_id = no_id(i) ? NULL : id;
            memset(&it[i].r, 0, sizeof it[i].r);
            it[i].tries++;
            ck_assert_int_eq(jr_publish(e2e_node(&c, via), subject, NULL, 0, data, strlen(data), &o,
                                        on_ack, &it[i].r),
                             0);
            it[i].issued = 1;
        }
        jr_sim_run_for(c.sim, (1 + jr__rand_below(&rnd, 20)) * MS);
        for (size_t j = 0; j < next; j++) {
            if (!it[j].issued || !it[j].r.done) continue;
            it[j].issued = 0;
            if (it[j].r.status == 0) {
                if (it[j].acked)
                    ck_assert_msg(it[j].acked == it[j].r.seq,
                                  "seed %llu: msg %zu acked as seq %llu and %llu",
                                  (unsigned long long)seed, j, (unsigned long long)it[j].acked,
                                  (unsigned long long)it[j].r.seq);
                it[j].acked = it[j].r.seq;
            }
        }
        /* faults */
        uint64_t dice = jr__rand_below(&rnd, 100);
        if (dice < 6 && down < 0) {
            down = (int)jr__rand_below(&rnd, 3);
            jr_sim_crash(c.sim, (unsigned)down);
            if (getenv("JR_FAULTS_DIFF"))
                fprintf(stderr, "  [%.6f] crash n%d (applied %llu %llu %llu)\n",
                        (double)jr_sim_now(c.sim) / 1e9, down,
                        (unsigned long long)e2e_fsm_applied(&c, 0, "F"),
                        (unsigned long long)e2e_fsm_applied(&c, 1, "F"),
                        (unsigned long long)e2e_fsm_applied(&c, 2, "F"));
        } else if (dice < 10 && down >= 0) {
            e2e_restart(&c, (unsigned)down);
            if (getenv("JR_FAULTS_DIFF"))
                fprintf(stderr, "  [%.6f] restart n%d at fsm index %llu\n",
                        (double)jr_sim_now(c.sim) / 1e9, down,
                        (unsigned long long)e2e_fsm_applied(&c, (unsigned)down, "F"));
            down = -1;
        } else if (dice < 13) {
            unsigned side = (unsigned)jr__rand_below(&rnd, 3);
            jr_sim_partition(c.sim, &side, 1);
        } else if (dice < 20) {
            jr_sim_heal(c.sim);
        } else if (churn && dice < 30) {
            unsigned via = (unsigned)jr__rand_below(&rnd, 3);
            e2e_res *op = &stepdowns[round];
            memset(op, 0, sizeof *op);
            if ((int)via == down) {
                /* nothing */
            } else if (dice < 27) {
                jr_stream_msg_delete(e2e_node(&c, via), "F", 1 + jr__rand_below(&rnd, next + 1), 0,
                                     e2e_admin_cb, op);
            } else {
                jr_purge_opts po;
                jr_purge_opts_init(&po);
                char filt[16];
                snprintf(filt, sizeof filt, "f.%u", (unsigned)jr__rand_below(&rnd, 17));
                po.subject = filt;
                po.keep = jr__rand_below(&rnd, 20);
                jr_stream_purge(e2e_node(&c, via), "F", &po, purge_cb, op);
            }
        } else if (dice < 32) {
            unsigned via = (unsigned)jr__rand_below(&rnd, 3);
            if ((int)via != down) {
                e2e_res *sd = &stepdowns[round];
                memset(sd, 0, sizeof *sd);
                jr_stream_stepdown(e2e_node(&c, via), "F", NULL, e2e_admin_cb, sd);
            }
        }
    }
    /* heal, let everything settle, restart every server */
    jr_sim_heal(c.sim);
    if (down >= 0) ck_assert_int_eq(e2e_restart(&c, (unsigned)down), 0);
    jr_sim_link_init(&link);
    for (unsigned a = 0; a < 3; a++)
        for (unsigned b = 0; b < 3; b++)
            if (a != b) jr_sim_set_link(c.sim, a, b, &link);
    jr_sim_run_for(c.sim, 10 * SEC);
    for (size_t j = 0; j < next; j++) {
        ck_assert_msg(!it[j].issued || it[j].r.done, "seed %llu: publish %zu never completed",
                      (unsigned long long)seed, j);
        if (it[j].issued && it[j].r.status == 0) it[j].acked = it[j].r.seq;
    }
    uint64_t chunks = 0;
    for (unsigned i = 0; i < 3; i++) chunks += e2e_catchup_chunks(&c, i);
    for (unsigned i = 0; i < 3; i++) ck_assert_int_eq(jr_sim_crash(c.sim, i), 0);
    for (unsigned i = 0; i < 3; i++) ck_assert_int_eq(e2e_restart(&c, i), 0);
    ck_assert_msg(e2e_wait_stream(&c, 0, "F", 2, 60 * SEC) >= 0, "seed %llu: no leader at the end",
                  (unsigned long long)seed);
    uint64_t d[3];
    int same = 0;
    for (int tries = 0; tries < 300 && !same; tries++) {
        for (unsigned i = 0; i < 3; i++) ck_assert_int_eq(e2e_digest(&c, i, "F", &d[i]), 0);
        same = d[0] == d[1] && d[1] == d[2];
        if (!same) jr_sim_run_for(c.sim, 100 * MS);
    }
    if (!same)
        for (unsigned i = 0; i < 3; i++) {
            jr_stream_state st;
            e2e_state(&c, i, "F", &st);
            fprintf(stderr,
                    "seed %llu n%u: digest %016llx msgs %llu first %llu last %llu deleted %llu "
                    "subjects %llu chunks %llu\n",
                    (unsigned long long)seed, i, (unsigned long long)d[i],
                    (unsigned long long)st.msgs, (unsigned long long)st.first_seq,
                    (unsigned long long)st.last_seq, (unsigned long long)st.num_deleted,
                    (unsigned long long)st.num_subjects, (unsigned long long)chunks);
            char line[512];
            e2e_describe(&c, i, "F", line, sizeof line);
            fprintf(stderr, "  %s\n", line);
        }
    if (!same && getenv("JR_FAULTS_DIFF"))
        for (uint64_t q = 1; q < TRACE_MAX; q++) {
            int differ = 0;
            for (unsigned a = 0; a < 3; a++)
                for (unsigned b = 0; b < 3; b++)
                    if (trace[a][q] && trace[b][q] && trace[a][q] != trace[b][q]) differ = 1;
            if (differ) {
                for (uint64_t k = q > 8 ? q - 8 : 1; k < q + 3; k++)
                    fprintf(stderr, "  index %llu: %016llx %016llx %016llx%s\n",
                            (unsigned long long)k, (unsigned long long)trace[0][k],
                            (unsigned long long)trace[1][k], (unsigned long long)trace[2][k],
                            k == q ? "  <- first difference" : "");
                break;
            }
        }
    if (!same && getenv("JR_FAULTS_DIFF")) {
        static uint64_t sums[3][4000];
        for (unsigned i = 0; i < 3; i++) e2e_checksums(&c, i, "F", sums[i], 4000);
        for (size_t q = 0; q < 4000; q++)
            if (sums[0][q] != sums[1][q] || sums[1][q] != sums[2][q])
                fprintf(stderr, "  seq %zu: %s %s %s\n", q + 1, sums[0][q] ? "x" : "-",
                        sums[1][q] ? "x" : "-", sums[2][q] ? "x" : "-");
    }
    ck_assert_msg(same, "seed %llu: replicas differ", (unsigned long long)seed);
    /* nothing is stored twice (the replicas are identical: one is enough) */
    {
        uint8_t *seen = calloc(MSGS, 1);
        jr_stream_state st;
        ck_assert_int_eq(e2e_state(&c, 0, "F", &st), 0);
        for (uint64_t q = st.first_seq; q && q <= st.last_seq; q++) {
            char s[64], got[64];
            if (e2e_local_get(&c, 0, "F", q, s, sizeof s, got, sizeof got) != 0) continue;
            size_t j;
            ck_assert_int_eq(sscanf(got, "payload %zu", &j), 1);
            ck_assert_msg(j < MSGS && !seen[j], "seed %llu: msg %zu%s stored twice (seq %llu)",
                          (unsigned long long)seed, j, no_id(j) ? " (no msg id)" : "",
                          (unsigned long long)q);
            seen[j] = 1;
        }
        free(seen);
    }
    size_t acked = 0;
    for (unsigned n = 0; n < 3; n++)
        for (size_t j = 0; j < next; j++) {
            if (!it[j].acked) continue;
            acked += n == 0;
            char s[64], got[64], want[32];
            int rc = e2e_local_get(&c, n, "F", it[j].acked, s, sizeof s, got, sizeof got);
            if (churn && rc == JR_ENOTFOUND) continue; /* deleted, purged or over the limit */
            ck_assert_msg(rc == 0, "seed %llu: n%u lost acknowledged msg %zu (seq %llu): %s",
                          (unsigned long long)seed, n, j, (unsigned long long)it[j].acked,
                          jr_err_name(rc));
            data_of(j, want, sizeof want);
            ck_assert_msg(strcmp(got, want) == 0, "seed %llu: seq %llu holds '%s', not '%s'",
                          (unsigned long long)seed, (unsigned long long)it[j].acked, got, want);
        }
    fprintf(stderr,
            "faults seed %llu%s: %zu of %zu publishes acknowledged and intact on 3 "
            "replicas; %llu catch-up chunks\n",
            (unsigned long long)seed, churn ? " (churn)" : "", acked, next,
            (unsigned long long)(e2e_catchup_chunks(&c, 0) + e2e_catchup_chunks(&c, 1) +
                                 e2e_catchup_chunks(&c, 2) + chunks));
    free(it);
    e2e_free(&c);
}

static uint64_t first_seed = 1, nseeds = 12;

START_TEST(random_faults)
{
    run_seed(first_seed + (uint64_t)_i, 0);
}
END_TEST

START_TEST(random_faults_with_churn)
{
    run_seed(first_seed + (uint64_t)_i, 1);
}
END_TEST

int main(void)
{
    e2e_seeds(&first_seed, &nseeds);
    Suite *su = suite_create("stream_e2e_faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, random_faults, 0, (int)nseeds);
    tcase_add_loop_test(tc, random_faults_with_churn, 0, (int)nseeds);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
