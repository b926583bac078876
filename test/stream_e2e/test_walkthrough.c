/*
 * The seed walkthrough (shared/seeds/001, issue 4 §7) on a 3-node cluster "east":
 *
 *   ORDERS on orders.> at R3; publish 100,000 (JR_E2E_MSGS; 1,000,000 in suite 'soak');
 *   stream info shows one leader and two current replicas and renders the nats CLI's
 *   Cluster Information block; kill the leader mid-stream — every acknowledged message
 *   survives and writes continue on 2 of 3; kill a second — publishes fail with JR_ENOQUORUM
 *   and nothing is acknowledged; restart one — it waits for the third before it votes (a
 *   restarted replica cannot tell a crash from a disk that lost what it acknowledged, and only
 *   the third knows what it acknowledged; raft/vouch.c), so nothing is acknowledged; restart
 *   the third — writes resume; the three replicas hold identical messages (per-seq checksums)
 *   and identical state.
 *
 * Publishers use msg ids, and re-publish whatever failed (a failure can be a message that was
 * stored after all: the duplicate window answers it with its original seq).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define WINDOW 1000

/* One publish's latest attempt (kept small: there are N of them). */
typedef struct pres {
    int done, status;
    uint64_t seq;
    int duplicate;
    char stream[16];
} pres;

typedef struct pub {
    pres r;
    int issued;
    uint64_t seq; /* acknowledged seq, 0 if not (yet) */
} pub;

static uint64_t g_issued, g_completed; /* publishes issued and called back, all together */

static void on_ack(void *arg, int status, const jr_pub_ack *ack)
{
    pres *r = arg;
    g_completed++;
    ck_assert_msg(!r->done, "a publish callback ran twice");
    r->done = 1;
    r->status = status;
    r->seq = ack->seq;
    r->duplicate = ack->duplicate;
    snprintf(r->stream, sizeof r->stream, "%s", ack->stream);
}

typedef struct run {
    e2e *c;
    pub *p;
    size_t n;
    int inflight;
} run;

static void subject_of(size_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "orders.%s.%zu", i % 3 == 0 ? "eu" : i % 3 == 1 ? "us" : "ap", i % 11);
}

static void data_of(size_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "order %zu: 3 widgets, express shipping, ref %08zx", i, i * 2654435761u);
}

static void issue(run *w, unsigned via, size_t i)
{
    char subj[64], data[96], id[32];
    subject_of(i, subj, sizeof subj);
    data_of(i, data, sizeof data);
    snprintf(id, sizeof id, "order-%zu", i);
    pub *p = &w->p[i];
    memset(&p->r, 0, sizeof p->r);
    jr_pub_opts o;
    jr_pub_opts_init(&o);
    o.msg_id = id;
    int rc = jr_publish(e2e_node(w->c, via), subj, NULL, 0, data, strlen(data), &o, on_ack, &p->r);
    ck_assert_msg(rc == 0, "jr_publish refused: %s", jr_strerror(rc));
    p->issued = 1;
    w->inflight++;
    g_issued++;
}

typedef struct window_wait {
    run *w;
    size_t from, to;
} window_wait;

/* Every publish issued so far was called back (O(1): checked after every simulation step). */
static int window_done(void *arg, jr_sim *sim)
{
    (void)arg;
    (void)sim;
    return g_completed == g_issued;
}

/* Collects the results of [from, to): acks recorded, failures counted. Returns failures. */
static size_t collect(run *w, size_t from, size_t to, int *statuses_seen)
{
    size_t failed = 0;
    for (size_t i = from; i < to; i++) {
        pub *p = &w->p[i];
        if (!p->issued || !p->r.done) continue;
        p->issued = 0;
        w->inflight--;
        if (p->r.status == 0) {
            ck_assert_str_eq(p->r.stream, "ORDERS");
            ck_assert_uint_ne(p->r.seq, 0);
            if (p->seq) ck_assert_uint_eq(p->seq, p->r.seq); /* a duplicate: the same seq */
            p->seq = p->r.seq;
        } else {
            failed++;
            if (statuses_seen) *statuses_seen |= 1 << (-p->r.status & 31);
        }
    }
    return failed;
}

/* Publishes [from, to) via node `via` in windows of WINDOW, re-publishing failures until every
 * message is acknowledged (or `rounds` rounds passed). Returns the messages still unacked. */
static size_t publish_range(run *w, unsigned via, size_t from, size_t to, int rounds)
{
    for (int round = 0; round < rounds; round++) {
        size_t left = 0;
        for (size_t s = from; s < to; s += WINDOW) {
            size_t e = s + WINDOW < to ? s + WINDOW : to;
            size_t k = 0;
            for (size_t i = s; i < e; i++)
                if (!w->p[i].seq) {
                    issue(w, via, i);
                    k++;
                }
            if (!k) continue;
            window_wait ww = {w, s, e};
            ck_assert_int_eq(jr_sim_run_until(w->c->sim, window_done, &ww, 120 * SEC), 0);
            left += collect(w, s, e, NULL);
        }
        if (!left) return 0;
        jr_sim_run_for(w->c->sim, 300 * MS); /* let a new leader settle */
    }
    size_t left = 0;
    for (size_t i = from; i < to; i++) left += !w->p[i].seq;
    return left;
}

static size_t env_msgs(void)
{
    const char *v = getenv("JR_E2E_MSGS");
    long n = v ? atol(v) : 0;
    return n > 0 ? (size_t)n : 100000;
}

static int other_than(int a, int b)
{
    for (int i = 0; i < 3; i++)
        if (i != a && i != b) return i;
    return -1;
}

/* Every acknowledged message is at its seq, with its content, on replica i. */
static void check_acked(e2e *c, unsigned i, const run *w)
{
    for (size_t k = 0; k < w->n; k++) {
        if (!w->p[k].seq) continue;
        char subj[64], data[128], want_s[64], want_d[96];
        int rc = e2e_local_get(c, i, "ORDERS", w->p[k].seq, subj, sizeof subj, data, sizeof data);
        ck_assert_msg(rc == 0, "n%u lost acknowledged message %zu (seq %llu): %s", i, k,
                      (unsigned long long)w->p[k].seq, jr_strerror(rc));
        subject_of(k, want_s, sizeof want_s);
        data_of(k, want_d, sizeof want_d);
        ck_assert_str_eq(subj, want_s);
        ck_assert_str_eq(data, want_d);
    }
}

START_TEST(seed_walkthrough)
{
    size_t N = env_msgs();
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 4242, 1000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);

    /* nats stream add ORDERS --subjects "orders.>" --replicas=3 */
    const char *subj[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 3);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    int leader = e2e_wait_stream(&c, 0, "ORDERS", 2, 10 * SEC);
    ck_assert_int_ge(leader, 0);
    int via = (leader + 1) % 3; /* publish through a follower: forwarded to the leader */

    run w = {&c, calloc(N, sizeof(pub)), N, 0};
    ck_assert_ptr_nonnull(w.p);

    /* 1. the first half, healthy */
    ck_assert_uint_eq(publish_range(&w, (unsigned)via, 0, N / 2, 1), 0);

    /* 2. nats stream info ORDERS: one leader, two current replicas */
    ck_assert_int_eq(e2e_info(&c, (unsigned)via, "ORDERS", &r), 0);
    ck_assert_uint_eq(r.state.msgs, N / 2);
    ck_assert_uint_eq(r.state.last_seq, N / 2);
    ck_assert_str_eq(r.leader, jr_sim_name(c.sim, (unsigned)leader));
    ck_assert_uint_eq(r.nreplicas, 2);
    ck_assert(r.reps[0].current && r.reps[1].current);
    ck_assert_ptr_nonnull(strstr(r.text, "Cluster Information:"));
    ck_assert_ptr_nonnull(strstr(r.text, "                 Name: east\n"));
    char line[64];
    snprintf(line, sizeof line, "               Leader: n%d\n", leader);
    ck_assert_msg(strstr(r.text, line), "%s", r.text);
    for (int i = 0; i < 3; i++) {
        if (i == leader) continue;
        snprintf(line, sizeof line, "              Replica: n%d, current, seen ", i);
        ck_assert_msg(strstr(r.text, line), "%s", r.text);
    }

    /* 3. kill the leader mid-stream: a window is in flight when it dies */
    size_t s3 = N / 2, e3 = s3 + N / 4, next = s3, failed3 = 0, lo = s3;
    int seen = 0, crashed = 0;
    while (next < e3) { /* a steady stream: 50 publishes every 200 us */
        for (int k = 0; k < 50 && next < e3; k++) issue(&w, (unsigned)via, next++);
        jr_sim_run_for(c.sim, 200000);
        failed3 += collect(&w, lo, next, &seen);
        while (lo < next && !w.p[lo].issued) lo++; /* everything below lo is settled */
        if (!crashed && next - s3 >= 1000) {
            ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)leader), 0);
            crashed = 1;
        }
    }
    window_wait ww = {&w, s3, e3};
    ck_assert_int_eq(jr_sim_run_until(c.sim, window_done, &ww, 60 * SEC), 0);
    failed3 += collect(&w, s3, e3, &seen);
    fprintf(stderr,
            "walkthrough: %zu messages; leader n%d crashed mid-stream: %zu publishes failed "
            "(errors:%s%s%s%s), re-published by msg id\n",
            N, leader, failed3, seen & (1 << (-JR_ETIMEDOUT & 31)) ? " ETIMEDOUT" : "",
            seen & (1 << (-JR_ELEADERLOST & 31)) ? " ELEADERLOST" : "",
            seen & (1 << (-JR_ENOQUORUM & 31)) ? " ENOQUORUM" : "",
            seen & (1 << (-JR_ECLOSED & 31)) ? " ECLOSED" : "");
    /* writes continue on 2 of 3 (the failed ones re-published with their msg ids) */
    ck_assert_uint_eq(publish_range(&w, (unsigned)via, s3, e3, 20), 0);
    int leader2 = e2e_wait_stream(&c, (unsigned)via, "ORDERS", 1, 10 * SEC);
    ck_assert_int_ge(leader2, 0);
    ck_assert_int_ne(leader2, leader);

    /* 4. kill a second: no quorum, and nothing is acknowledged */
    int second = other_than(leader, via);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)second), 0);
    jr_sim_run_for(c.sim, 2 * SEC); /* check-quorum: the survivor stops leading */
    size_t s4 = e3, e4 = s4 + 20;
    for (size_t i = s4; i < e4; i++) issue(&w, (unsigned)via, i);
    ww = (window_wait){&w, s4, e4};
    ck_assert_int_eq(jr_sim_run_until(c.sim, window_done, &ww, 60 * SEC), 0);
    for (size_t i = s4; i < e4; i++)
        ck_assert_msg(w.p[i].r.status == JR_ENOQUORUM, "publish %zu without quorum: %s", i,
                      jr_err_name(w.p[i].r.status));
    ck_assert_uint_eq(collect(&w, s4, e4, NULL), e4 - s4);

    fprintf(stderr, "walkthrough: n%d crashed too: %zu publishes failed with ENOQUORUM\n", second,
            e4 - s4);
    /* 5. restart one: it is unvouched until the third answers, so there is still no quorum */
    ck_assert_int_eq(jr_sim_restart(c.sim, (unsigned)second), 0);
    ck_assert_int_lt(e2e_wait_stream(&c, (unsigned)via, "ORDERS", 1, 3 * SEC), 0);

    /* 6. restart all: writes resume, identical messages and state everywhere */
    ck_assert_int_eq(jr_sim_restart(c.sim, (unsigned)leader), 0);
    ck_assert_uint_eq(publish_range(&w, (unsigned)via, s4, N, 40), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, (unsigned)via, "ORDERS", 2, 30 * SEC), 0);
    uint64_t d[3] = {0, 1, 2};
    for (int tries = 0; tries < 600; tries++) {
        for (unsigned i = 0; i < 3; i++) ck_assert_int_eq(e2e_digest(&c, i, "ORDERS", &d[i]), 0);
        if (d[0] == d[1] && d[1] == d[2]) break;
        jr_sim_run_for(c.sim, 100 * MS);
    }
    ck_assert_msg(d[0] == d[1] && d[1] == d[2], "replicas differ after restarting all");
    uint64_t *sums[3];
    for (unsigned i = 0; i < 3; i++) {
        sums[i] = calloc(N + 1, sizeof(uint64_t));
        int64_t last = e2e_checksums(&c, i, "ORDERS", sums[i], N + 1);
        ck_assert_int_eq(last, (int64_t)N); /* exactly once each: the dedup window */
        check_acked(&c, i, &w);
    }
    for (size_t s = 0; s <= N; s++) {
        ck_assert_uint_eq(sums[0][s], sums[1][s]);
        ck_assert_uint_eq(sums[1][s], sums[2][s]);
    }
    jr_stream_state st[3];
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_int_eq(e2e_state(&c, i, "ORDERS", &st[i]), 0);
        ck_assert_uint_eq(st[i].msgs, N);
        ck_assert_int_eq(memcmp(&st[i], &st[0], sizeof st[0]), 0);
        free(sums[i]);
    }
    /* and once more from cold: every server down at once, then up (exact restart from each
     * store's last mark plus its WAL) */
    char before[3][512];
    for (unsigned i = 0; i < 3; i++) e2e_describe(&c, i, "ORDERS", before[i], sizeof before[i]);
    for (unsigned i = 0; i < 3; i++) ck_assert_int_eq(jr_sim_crash(c.sim, i), 0);
    for (unsigned i = 0; i < 3; i++) ck_assert_int_eq(jr_sim_restart(c.sim, i), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 30 * SEC), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "ORDERS", 2, 30 * SEC), 0);
    /* a replica whose store had not marked what its log has compacted catches up first */
    for (int tries = 0; tries < 600; tries++) {
        int same = 1;
        for (unsigned i = 0; i < 3; i++) {
            uint64_t di;
            ck_assert_int_eq(e2e_digest(&c, i, "ORDERS", &di), 0);
            same &= di == d[0];
        }
        if (same) break;
        jr_sim_run_for(c.sim, 100 * MS);
    }
    for (unsigned i = 0; i < 3; i++) {
        uint64_t di;
        ck_assert_int_eq(e2e_digest(&c, i, "ORDERS", &di), 0);
        if (di != d[0]) {
            char now[512];
            e2e_describe(&c, i, "ORDERS", now, sizeof now);
            fprintf(stderr, "before the cold restart: %s\nafter: %s\n", before[i], now);
        }
        ck_assert_uint_eq(di, d[0]);
        check_acked(&c, i, &w);
    }
    ck_assert_int_eq(e2e_publish(&c, 1, "orders.eu.1", "after", 5, "after-restart", &r), 0);
    ck_assert_uint_eq(r.seq, N + 1);

    size_t dups = 0;
    for (size_t k = 0; k < N; k++) dups += w.p[k].r.duplicate;
    fprintf(stderr,
            "walkthrough: all %zu acknowledged, identical on 3 replicas (%zu acks were "
            "duplicates of stored messages), simulated %.1fs\n",
            N, dups, (double)jr_sim_now(c.sim) / SEC);
    free(w.p);
    e2e_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_walkthrough");
    TCase *tc = tcase_create("walkthrough");
    tcase_set_timeout(tc, 3000);
    tcase_add_test(tc, seed_walkthrough);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
