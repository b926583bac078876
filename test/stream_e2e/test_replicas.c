/*
 * Changing the replica count of a live stream (jr_stream_update with another `replicas`; peer
 * management, meta_state.h "Peer changes"), end to end over the simulated cluster:
 *
 *   - R1 -> R3 with messages already stored (and the log compacted behind snapshots, so the
 *     new replicas catch up from a snapshot and store chunks): every replica ends with
 *     identical messages (per-seq checksums) and state;
 *   - R3 -> R1 where the stream's leader is among the removed: it hands its leadership over
 *     first; the removed servers release their replicas only once the change converged;
 *   - R3 -> R5 under publish load: no acknowledged message is lost, no publish fails;
 *   - R5 -> R3;
 *   - the meta leader crashing right after committing a change: the change completes;
 *   - a new replica's server crashing while it catches up: it resumes after its restart;
 *   - a second change while the first converges: JR_EBUSY; an impossible grow:
 *     JR_ENORESOURCES with the reasons, and nothing changes;
 *   - removed servers that were down during the change: back before it is over, they vote
 *     again until it is; back after it, they release log and store;
 *   - the stream's leader crashing mid-change; R3 -> R1 under load removing the leader;
 *   - moves: new placement tags replace the peers that do not fit (all of them, or one);
 *   - R3 -> R2 with a follower its group does not hear from (its server up): that follower
 *     leaves, not the healthy one, and the stream keeps a leader through a leadership change;
 *   - an R1 stream grown while its only server, which never created the group, is down: back
 *     up, it bootstraps the group and the change completes.
 *
 * JR_E2E_LOG=1 prints the nodes' log lines.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "util/rand.h"
#include "vfs/memfs.h"

static const char *subj[] = {"rep.>"};

static int alive(e2e *c, unsigned i)
{
    return e2e_node(c, i) != NULL;
}

static int in_list(unsigned x, const unsigned *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x) return 1;
    return 0;
}

/* Why the stream has not converged yet (for a failing test's message). */
static char g_why[512];

/* Prints every node's view of the stream (when a test is about to fail). */
static void dump(e2e *c, const char *name)
{
    for (unsigned i = 0; i < c->n; i++) {
        char line[512];
        if (!e2e_node(c, i)) {
            fprintf(stderr, "n%u: down\n", i);
            continue;
        }
        e2e_describe(c, i, name, line, sizeof line);
        unsigned m[16], p[8];
        int v[16];
        int k = e2e_members(c, i, name, m, v, 16);
        int np = e2e_meta_peers(c, i, name, p, 8);
        fprintf(stderr, "%s\n    meta peers:", line);
        for (int j = 0; j < np; j++) fprintf(stderr, " n%u", p[j]);
        fprintf(stderr, " (busy %d); members:", e2e_meta_busy(c, i, name));
        for (int j = 0; j < k; j++) fprintf(stderr, " n%u%s", m[j], v[j] ? "" : "(obs)");
        e2e_progress(c, i, name, line, sizeof line);
        fprintf(stderr, "\n    %s\n", line);
    }
}

/* Runs until every live server's meta state gives the stream `replicas` peers and no change in
 * progress, exactly the live peers hold a replica, every live peer's group is the peer set
 * (all voters), and stream info shows a leader and replicas - 1 current voters. Returns the
 * leader's index, or -1 after max_ns. */
static int wait_converged(e2e *c, const char *name, int replicas, uint64_t max_ns)
{
    uint64_t end = jr_sim_now(c->sim) + max_ns;
    for (;;) {
        unsigned peers[8] = {0};
        int np = -1, ok = 1;
        g_why[0] = 0;
        for (unsigned i = 0; i < c->n && ok; i++) {
            if (!alive(c, i)) continue;
            unsigned p[8];
            int k = e2e_meta_peers(c, i, name, p, 8);
            if (k != replicas || e2e_meta_busy(c, i, name) != 0) {
                snprintf(g_why, sizeof g_why, "n%u: meta has %d peers, busy %d", i, k,
                         e2e_meta_busy(c, i, name));
                ok = 0;
            } else if (np < 0) {
                np = k;
                memcpy(peers, p, sizeof p);
            }
        }
        for (unsigned i = 0; i < c->n && ok; i++) {
            if (!alive(c, i)) continue;
            int want = in_list(i, peers, np);
            if (e2e_has_replica(c, i, name) != want) {
                snprintf(g_why, sizeof g_why, "n%u: replica %d, peer %d", i, !want, want);
                ok = 0;
                break;
            }
            if (!want) continue;
            unsigned m[16];
            int v[16];
            int k = e2e_members(c, i, name, m, v, 16);
            int good = k == np;
            for (int j = 0; good && j < k; j++) good = v[j] && in_list(m[j], peers, np);
            if (!good) {
                snprintf(g_why, sizeof g_why, "n%u: group has %d members", i, k);
                ok = 0;
            }
        }
        if (ok) {
            unsigned via = peers[0];
            for (int j = 0; j < np; j++)
                if (alive(c, peers[j])) via = peers[j];
            e2e_res r;
            int st = e2e_info(c, via, name, &r);
            size_t cur = 0;
            for (size_t j = 0; j < r.nreplicas; j++)
                cur += r.reps[j].current && !r.reps[j].observer && !r.reps[j].pending;
            if (st == 0 && r.leader[0] && r.nreplicas == (size_t)replicas - 1 &&
                cur == r.nreplicas && r.replicas_cfg == replicas)
                return jr_sim_index(c->sim, r.leader);
            snprintf(g_why, sizeof g_why, "info: status %d leader '%s', %zu replicas, %zu current",
                     st, r.leader, r.nreplicas, cur);
        }
        if (jr_sim_now(c->sim) >= end) {
            dump(c, name);
            return -1;
        }
        jr_sim_run_for(c->sim, 100 * MS);
    }
}

/* Publishes msgs [from, to) with msg ids through node via, one at a time. */
static void publish_n(e2e *c, unsigned via, int from, int to)
{
    for (int i = from; i < to; i++) {
        char s[32], d[64], id[32];
        snprintf(s, sizeof s, "rep.%d", i % 7);
        snprintf(d, sizeof d, "message %d of the replica tests", i);
        snprintf(id, sizeof id, "m-%d", i);
        e2e_res r;
        int st = e2e_publish(c, via, s, d, strlen(d), id, &r);
        ck_assert_msg(st == 0, "publish %d: %s %s", i, jr_err_name(st), r.msg);
        ck_assert_uint_eq(r.seq, (uint64_t)i + 1);
    }
}

/* Every live server of the stream's peer set holds the same msgs messages and state. */
static void check_identical(e2e *c, const char *name, uint64_t msgs)
{
    unsigned peers[8];
    int np = -1;
    for (unsigned i = 0; i < c->n && np < 0; i++)
        if (alive(c, i)) np = e2e_meta_peers(c, i, name, peers, 8);
    ck_assert_int_gt(np, 0);
    /* the last entries may still be on their way to a follower */
    uint64_t d0 = 0;
    for (int tries = 0; tries < 300; tries++) {
        int same = 1, first = 1;
        for (int j = 0; j < np; j++) {
            uint64_t d;
            if (!alive(c, peers[j])) continue;
            ck_assert_int_eq(e2e_digest(c, peers[j], name, &d), 0);
            if (first) d0 = d;
            same &= d == d0;
            first = 0;
        }
        if (same) break;
        jr_sim_run_for(c->sim, 100 * MS);
    }
    uint64_t *sums[8] = {0};
    jr_stream_state st0;
    int ref = -1;
    for (int j = 0; j < np; j++) {
        unsigned i = peers[j];
        if (!alive(c, i)) continue;
        uint64_t d;
        ck_assert_int_eq(e2e_digest(c, i, name, &d), 0);
        ck_assert_msg(d == d0, "n%u's replica differs", i);
        sums[j] = calloc(msgs + 1, sizeof(uint64_t));
        ck_assert_int_eq(e2e_checksums(c, i, name, sums[j], msgs + 1), (int64_t)msgs);
        jr_stream_state st;
        ck_assert_int_eq(e2e_state(c, i, name, &st), 0);
        ck_assert_uint_eq(st.msgs, msgs);
        if (ref < 0) {
            ref = j;
            st0 = st;
        }
        ck_assert_int_eq(memcmp(&st, &st0, sizeof st), 0);
        for (uint64_t s = 0; s < msgs; s++) {
            ck_assert_msg(sums[j][s] != 0, "n%u lacks seq %llu", i, (unsigned long long)s + 1);
            ck_assert_uint_eq(sums[j][s], sums[ref][s]);
        }
    }
    for (int j = 0; j < np; j++) free(sums[j]);
}

/* JR_SEED_OFFSET=k runs every test with its seed + k (a soak over seeds; the failing test
 * names its seed). */
static uint64_t seed_of(uint64_t seed)
{
    const char *s = getenv("JR_SEED_OFFSET");
    return seed + (s ? strtoull(s, NULL, 0) : 0);
}

static void cluster(e2e *c, unsigned n, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    seed = seed_of(seed);
    ck_assert_msg(e2e_new(c, n, seed, 3000) == 0, "seed %llu", (unsigned long long)seed);
    fprintf(stderr, "cluster of %u, seed %llu (replay: JR_SEED_OFFSET)\n", n,
            (unsigned long long)seed);
    ck_assert_int_ge(e2e_wait_meta(c, n, 30 * SEC), 0);
}

static void add_stream(e2e *c, const char *name, int replicas)
{
    jr_stream_config cfg;
    e2e_config(&cfg, name, subj, 1, replicas);
    e2e_res r;
    ck_assert_msg(e2e_add(c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(c, 0, name, (size_t)replicas - 1, 30 * SEC), 0);
    for (int tries = 0; tries < 100; tries++) { /* every server knows it (publishes route) */
        int all = 1;
        for (unsigned i = 0; i < c->n; i++) all &= e2e_meta_has(c, i, name);
        if (all) break;
        jr_sim_run_for(c->sim, 10 * MS);
    }
}

static int set_replicas(e2e *c, unsigned via, const char *name, int replicas, e2e_res *r)
{
    jr_stream_config cfg;
    e2e_config(&cfg, name, subj, 1, replicas);
    return e2e_update(c, via, &cfg, r);
}

START_TEST(r1_to_r3_with_data_catches_up_from_a_snapshot)
{
    e2e c;
    cluster(&c, 3, 101);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 40); /* compact the log */
    add_stream(&c, "GROW", 1);
    publish_n(&c, 1, 0, 300);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "GROW", p, 8), 1);
    unsigned first = p[0];
    e2e_res r;
    ck_assert_msg(set_replicas(&c, 2, "GROW", 3, &r) == 0, "update: %s", r.msg);
    ck_assert_msg(wait_converged(&c, "GROW", 3, 30 * SEC) >= 0, "not converged: %s", g_why);
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "GROW", p, 8), 3);
    ck_assert_uint_eq(p[0], first); /* the peer that had the data stays first */
    uint64_t chunks = 0;
    for (unsigned i = 0; i < 3; i++) chunks += e2e_catchup_chunks(&c, i);
    ck_assert_uint_gt(chunks, 0); /* the new replicas caught up from a snapshot */
    check_identical(&c, "GROW", 300);
    publish_n(&c, 0, 300, 320);
    check_identical(&c, "GROW", 320);
    e2e_free(&c);
}
END_TEST

/* The leader of stream `name` as the live replicas see it (-1: none). */
static int stream_leader(e2e *c, const char *name)
{
    for (unsigned i = 0; i < c->n; i++)
        if (alive(c, i) && e2e_replica_leader(c, i, name) == (int)i) return (int)i;
    return -1;
}

/* No server the change removed gave up its replica while the leader's configuration still
 * counts it (a server it adds may not have created its replica yet). */
static void check_no_early_release(e2e *c, const char *name)
{
    int l = stream_leader(c, name);
    if (l < 0) return;
    unsigned m[16], p[8];
    int v[16];
    int k = e2e_members(c, (unsigned)l, name, m, v, 16);
    int np = e2e_meta_peers(c, (unsigned)l, name, p, 8);
    for (int j = 0; j < k; j++)
        if (m[j] < c->n && alive(c, m[j]) && !in_list(m[j], p, np))
            ck_assert_msg(e2e_has_replica(c, m[j], name),
                          "n%u released its replica while still a member of leader n%d's group",
                          m[j], l);
}

START_TEST(r3_to_r1_hands_over_when_the_leader_is_removed)
{
    e2e c;
    cluster(&c, 3, 202);
    add_stream(&c, "SHRINK", 3);
    publish_n(&c, 0, 0, 100);
    int l = stream_leader(&c, "SHRINK");
    ck_assert_int_ge(l, 0);
    int m = e2e_meta_leader(&c);
    ck_assert_int_ge(m, 0);
    /* The meta leader keeps the stream's leader (it knows it: it holds a replica); the moment
     * it decided, leadership moves to one of the peers it drops: that one must hand over. */
    unsigned to = (unsigned)(l + 1) % 3;
    e2e_res up, sd;
    memset(&up, 0, sizeof up);
    memset(&sd, 0, sizeof sd);
    jr_stream_config cfg;
    e2e_config(&cfg, "SHRINK", subj, 1, 1);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, (unsigned)m), &cfg, e2e_admin_cb, &up), 0);
    char toname[8];
    snprintf(toname, sizeof toname, "n%u", to);
    ck_assert_int_eq(
        jr_stream_stepdown(e2e_node(&c, (unsigned)m), "SHRINK", toname, e2e_admin_cb, &sd), 0);
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    ck_assert_int_eq(e2e_wait(&c, &sd, 30 * SEC), 0);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, (unsigned)m, "SHRINK", p, 8), 1);
    ck_assert_uint_eq(p[0], (unsigned)l);
    /* step by step: a removed server keeps its replica while the group still counts it */
    uint64_t end = jr_sim_now(c.sim) + 30 * SEC;
    while (e2e_meta_busy(&c, (unsigned)m, "SHRINK") && jr_sim_now(c.sim) < end) {
        check_no_early_release(&c, "SHRINK");
        jr_sim_run_for(c.sim, 5 * MS);
    }
    int nl = wait_converged(&c, "SHRINK", 1, 30 * SEC);
    ck_assert_msg(nl == l, "not converged (leader %d, want %d): %s", nl, l, g_why);
    check_identical(&c, "SHRINK", 100);
    publish_n(&c, 2, 100, 110);
    check_identical(&c, "SHRINK", 110);
    e2e_free(&c);
}
END_TEST

/* Asynchronous publishes with msg ids (acks checked at the end). */
typedef struct load {
    e2e *c;
    e2e_res *res;
    int n, issued;
} load;

static void issue(load *w, int k)
{
    for (int j = 0; j < k && w->issued < w->n; j++) {
        int i = w->issued++;
        char s[32], d[64], id[32];
        snprintf(s, sizeof s, "rep.%d", i % 7);
        snprintf(d, sizeof d, "message %d of the replica tests", i);
        snprintf(id, sizeof id, "m-%d", i);
        jr_pub_opts o;
        jr_pub_opts_init(&o);
        o.msg_id = id;
        memset(&w->res[i], 0, sizeof w->res[i]);
        ck_assert_int_eq(jr_publish(e2e_node(w->c, (unsigned)i % w->c->n), s, NULL, 0, d, strlen(d),
                                    &o, e2e_pub_cb, &w->res[i]),
                         0);
    }
}

static int all_done(void *arg, jr_sim *sim)
{
    load *w = arg;
    (void)sim;
    for (int i = 0; i < w->issued; i++)
        if (!w->res[i].done) return 0;
    return 1;
}

START_TEST(r3_to_r5_under_publish_load_loses_and_fails_nothing)
{
    e2e c;
    cluster(&c, 5, 303);
    add_stream(&c, "LOAD", 3);
    load w = {&c, calloc(3000, sizeof(e2e_res)), 3000, 0};
    int updated = 0;
    e2e_res up;
    memset(&up, 0, sizeof up);
    while (w.issued < w.n) {
        issue(&w, 20);
        jr_sim_run_for(c.sim, 2 * MS);
        if (!updated && w.issued >= 600) { /* mid-load */
            jr_stream_config cfg;
            e2e_config(&cfg, "LOAD", subj, 1, 5);
            ck_assert_int_eq(jr_stream_update(e2e_node(&c, 4), &cfg, e2e_admin_cb, &up), 0);
            updated = 1;
        }
    }
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_done, &w, 60 * SEC), 0);
    ck_assert_msg(up.done && up.status == 0, "update: %s", up.msg);
    for (int i = 0; i < w.n; i++) {
        ck_assert_msg(w.res[i].status == 0, "publish %d: %s %s", i, jr_err_name(w.res[i].status),
                      w.res[i].msg);
        ck_assert(!w.res[i].duplicate);
    }
    ck_assert_msg(wait_converged(&c, "LOAD", 5, 30 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "LOAD", (uint64_t)w.n);
    /* every ack's seq holds its message */
    for (int i = 0; i < w.n; i += 97) {
        char sub[64], data[128], want[64];
        snprintf(want, sizeof want, "message %d of the replica tests", i);
        for (unsigned k = 0; k < 5; k++) {
            ck_assert_int_eq(
                e2e_local_get(&c, k, "LOAD", w.res[i].seq, sub, sizeof sub, data, sizeof data), 0);
            ck_assert_str_eq(data, want);
        }
    }
    free(w.res);
    e2e_free(&c);
}
END_TEST

static int set_replicas_placed(e2e *c, unsigned via, const char *name, int replicas, e2e_res *r)
{
    static const char *ssd[] = {"ssd"};
    jr_stream_config cfg;
    e2e_config(&cfg, name, subj, 1, replicas);
    cfg.placement = e2e_placement(NULL, ssd, 1);
    return e2e_update(c, via, &cfg, r);
}

START_TEST(r5_to_r3)
{
    e2e c;
    cluster(&c, 5, 404);
    add_stream(&c, "FIVE", 5);
    publish_n(&c, 3, 0, 150);
    int l = stream_leader(&c, "FIVE");
    e2e_res r;
    ck_assert_msg(set_replicas(&c, 1, "FIVE", 3, &r) == 0, "update: %s", r.msg);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 1, "FIVE", p, 8), 3);
    ck_assert(in_list((unsigned)l, p, 3)); /* the leader stays */
    uint64_t end = jr_sim_now(c.sim) + 30 * SEC;
    while (e2e_meta_busy(&c, 1, "FIVE") && jr_sim_now(c.sim) < end) {
        check_no_early_release(&c, "FIVE");
        jr_sim_run_for(c.sim, 5 * MS);
    }
    ck_assert_msg(wait_converged(&c, "FIVE", 3, 30 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "FIVE", 150);
    publish_n(&c, 0, 150, 160);
    check_identical(&c, "FIVE", 160);
    e2e_free(&c);
}
END_TEST

START_TEST(a_meta_leader_crash_mid_change_does_not_stop_it)
{
    e2e c;
    cluster(&c, 5, 505);
    add_stream(&c, "MC", 1);
    publish_n(&c, 0, 0, 80);
    int m = e2e_meta_leader(&c);
    unsigned via = (unsigned)(m + 1) % 5;
    /* the request reaches the meta leader, which crashes at once: proposed or not, the
     * request goes to its successor and the change happens exactly once */
    e2e_res up;
    memset(&up, 0, sizeof up);
    jr_stream_config cfg;
    e2e_config(&cfg, "MC", subj, 1, 3);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, via), &cfg, e2e_admin_cb, &up), 0);
    jr_sim_run_for(c.sim, 1 * MS);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)m), 0);
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s %s", jr_err_name(up.status), up.msg);
    /* and again once the change is committed: the meta leader that will take the stream's
     * report crashes too (leaving 3 of 5) */
    int m2 = e2e_wait_meta(&c, 5, 30 * SEC);
    ck_assert_int_ge(m2, 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)m2), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    ck_assert_int_eq(e2e_restart(&c, (unsigned)m), 0);
    ck_assert_int_eq(e2e_restart(&c, (unsigned)m2), 0);
    ck_assert_msg(wait_converged(&c, "MC", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "MC", 80);
    e2e_free(&c);
}
END_TEST

START_TEST(a_joining_replica_crashing_mid_catch_up_resumes)
{
    e2e c;
    cluster(&c, 3, 606);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 20);
    add_stream(&c, "JOIN", 1);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "JOIN", p, 8), 1);
    unsigned src = p[0];
    /* about 2 MiB of messages: several catch-up chunks */
    static char big[4096];
    memset(big, 'x', sizeof big);
    for (int i = 0; i < 500; i++) {
        snprintf(big, 32, "big message %d", i);
        big[strlen(big)] = 'x';
        e2e_res r;
        char id[32];
        snprintf(id, sizeof id, "b-%d", i);
        ck_assert_int_eq(e2e_publish(&c, src, "rep.big", big, sizeof big, id, &r), 0);
    }
    e2e_res r;
    ck_assert_msg(set_replicas(&c, src, "JOIN", 3, &r) == 0, "update: %s", r.msg);
    /* run until one of the new replicas is fetching messages; crash its server then */
    int victim = -1;
    uint64_t end = jr_sim_now(c.sim) + 10 * SEC;
    while (victim < 0 && jr_sim_now(c.sim) < end) {
        jr_sim_run_for(c.sim, 100 * 1000); /* 100 us */
        for (unsigned i = 0; i < 3 && victim < 0; i++)
            if (i != src && e2e_catching_up(&c, i, "JOIN")) victim = (int)i;
    }
    ck_assert_msg(victim >= 0, "no replica was seen catching up");
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)victim), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    /* meanwhile it stays an observer: the change is not over */
    unsigned m[16];
    int v[16];
    int k = e2e_members(&c, src, "JOIN", m, v, 16);
    for (int j = 0; j < k; j++)
        if (m[j] == (unsigned)victim) ck_assert_msg(!v[j], "a replica still catching up votes");
    ck_assert_int_eq(e2e_meta_busy(&c, src, "JOIN"), 1);
    /* and stream info shows it: a replica that is an observer and not current */
    e2e_res info;
    ck_assert_int_eq(e2e_info(&c, src, "JOIN", &info), 0);
    ck_assert_uint_eq(info.nreplicas, 2);
    int seen = 0;
    for (size_t j = 0; j < info.nreplicas; j++) {
        if (jr_sim_index(c.sim, info.reps[j].name) != victim) continue;
        seen = 1;
        ck_assert(info.reps[j].observer && !info.reps[j].current && info.reps[j].offline);
    }
    ck_assert(seen);
    ck_assert_int_eq(e2e_restart(&c, (unsigned)victim), 0);
    ck_assert_msg(wait_converged(&c, "JOIN", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "JOIN", 500);
    e2e_free(&c);
}
END_TEST

START_TEST(a_second_change_while_one_converges_is_ebusy)
{
    e2e c;
    cluster(&c, 4, 707);
    add_stream(&c, "BUSY", 1);
    publish_n(&c, 0, 0, 50);
    /* two changes at once from two servers: one wins, the other is refused (by the meta
     * leader's check, or by the apply of the later entry: the same on every replica) */
    e2e_res a, b, r;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    jr_stream_config ca, cb;
    e2e_config(&ca, "BUSY", subj, 1, 3);
    e2e_config(&cb, "BUSY", subj, 1, 4);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, 1), &ca, e2e_admin_cb, &a), 0);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, 2), &cb, e2e_admin_cb, &b), 0);
    ck_assert_int_eq(e2e_wait(&c, &a, 30 * SEC), 0);
    ck_assert_int_eq(e2e_wait(&c, &b, 30 * SEC), 0);
    ck_assert_msg((a.status == 0 && b.status == JR_EBUSY) ||
                      (a.status == JR_EBUSY && b.status == 0),
                  "%s / %s", a.msg, b.msg);
    const char *busy_msg = a.status ? a.msg : b.msg;
    ck_assert_msg(strstr(busy_msg, "cluster member change is in progress"), "%s", busy_msg);
    int won = a.status == 0 ? 3 : 4;
    /* while it converges, the meta leader refuses any other peer change at once */
    int m = e2e_meta_leader(&c);
    ck_assert_int_ge(m, 0);
    ck_assert_int_eq(e2e_meta_busy(&c, (unsigned)m, "BUSY"), 1);
    {
        unsigned pp[8];
        int np = e2e_meta_peers(&c, (unsigned)m, "BUSY", pp, 8);
        int st = set_replicas(&c, (unsigned)m, "BUSY", 1, &r);
        ck_assert_msg(st == JR_EBUSY, "m %d np %d won %d: %d %s", m, np, won, st, r.msg);
    }
    ck_assert_int_eq(set_replicas(&c, (unsigned)m, "BUSY", won == 3 ? 4 : 3, &r), JR_EBUSY);
    /* a config change is no member change: it passes meanwhile */
    jr_stream_config cfg;
    e2e_config(&cfg, "BUSY", subj, 1, won);
    cfg.max_msgs = 1000;
    ck_assert_msg(e2e_update(&c, 3, &cfg, &r) == 0, "%s", r.msg);
    ck_assert_msg(wait_converged(&c, "BUSY", won, 30 * SEC) >= 0, "not converged: %s", g_why);
    /* converged: the next change is accepted */
    ck_assert_msg(e2e_update(&c, 2, &cfg, &r) == 0, "%s", r.msg); /* idempotent */
    cfg.replicas = 2;
    ck_assert_msg(e2e_update(&c, 2, &cfg, &r) == 0, "%s", r.msg);
    ck_assert_msg(wait_converged(&c, "BUSY", 2, 30 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "BUSY", 50);
    e2e_free(&c);
}
END_TEST

START_TEST(an_impossible_grow_changes_nothing)
{
    e2e c;
    e2e_new_ssd(&c, 5, 3, seed_of(808));
    static const char *ssd[] = {"ssd"};
    jr_stream_config cfg;
    e2e_config(&cfg, "SSD", subj, 1, 3);
    cfg.placement = e2e_placement(NULL, ssd, 1);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "%s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "SSD", 2, 30 * SEC), 0);
    publish_n(&c, 0, 0, 20);
    unsigned before[8], after[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 4, "SSD", before, 8), 3);
    cfg.replicas = 4; /* only three servers carry ssd */
    ck_assert_int_eq(e2e_update(&c, 4, &cfg, &r), JR_ENORESOURCES);
    ck_assert_msg(strstr(r.msg, "no suitable peers for placement"), "%s", r.msg);
    ck_assert_msg(strstr(r.msg, "n3"), "no reason for n3: %s", r.msg);
    /* one of the three down: even R3 -> R3 keeps working, and R1 -> R3 elsewhere is refused */
    cfg.replicas = 6;
    ck_assert_int_eq(e2e_update(&c, 4, &cfg, &r), JR_EINVAL);
    ck_assert_msg(strncmp(r.msg, "replicas", 8) == 0, "%s", r.msg);
    jr_sim_run_for(c.sim, 1 * SEC);
    for (unsigned i = 0; i < 5; i++) {
        ck_assert_int_eq(e2e_meta_peers(&c, i, "SSD", after, 8), 3);
        ck_assert_int_eq(memcmp(before, after, 3 * sizeof *after), 0);
        ck_assert_int_eq(e2e_meta_busy(&c, i, "SSD"), 0);
        ck_assert_int_eq(e2e_has_replica(&c, i, "SSD"), i < 3);
    }
    ck_assert_int_eq(e2e_info(&c, 3, "SSD", &r), 0);
    ck_assert_int_eq(r.replicas_cfg, 3);
    e2e_free(&c);
}
END_TEST

/* 1 if node i's store directory holds anything of stream name. */
static int count_entry(void *arg, const char *name)
{
    (void)name;
    (*(int *)arg)++;
    return 0;
}

static int store_left(e2e *c, unsigned i, const char *name)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/store/%s", name);
    jr_vfs *v = jr_sim_vfs(c->sim, i);
    int count = 0;
    int rc = v->list(v->ctx, dir, count_entry, &count);
    return rc == 0 && count > 0;
}

START_TEST(removed_servers_that_were_down_release_on_restart)
{
    e2e c;
    cluster(&c, 5, 909);
    add_stream(&c, "DOWN", 3);
    publish_n(&c, 0, 0, 60);
    jr_sim_run_for(c.sim, 1500 * MS); /* every store syncs (a mark): stores survive crashes */
    int l = stream_leader(&c, "DOWN");
    ck_assert_int_ge(l, 0);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "DOWN", p, 8), 3);
    unsigned x = 99, y = 99;
    for (int j = 0; j < 3; j++) {
        if (p[j] == (unsigned)l) continue;
        if (x == 99)
            x = p[j];
        else
            y = p[j];
    }
    /* both followers down (the stream has no quorum), then R3 -> R1: the online peer stays */
    ck_assert_int_eq(jr_sim_crash(c.sim, x), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, y), 0);
    jr_sim_run_for(c.sim, 1 * SEC); /* the meta leader sees them offline */
    ck_assert_int_ge(e2e_wait_meta(&c, 5, 30 * SEC), 0);
    unsigned via = 0;
    while (via == x || via == y) via++;
    e2e_res r;
    ck_assert_msg(set_replicas(&c, via, "DOWN", 1, &r) == 0, "update: %s", r.msg);
    ck_assert_int_eq(e2e_meta_peers(&c, via, "DOWN", p, 8), 1);
    ck_assert_uint_eq(p[0], (unsigned)l);
    jr_sim_run_for(c.sim, 2 * SEC);
    ck_assert_int_eq(e2e_meta_busy(&c, via, "DOWN"), 1); /* no quorum: nothing can change */
    /* x comes back during the change: it is no longer a peer, yet it runs its replica again
     * (its vote is needed); restarted, it counts only once y answered too (raft/vouch.c), so
     * the change waits for y */
    ck_assert_int_eq(e2e_restart(&c, x), 0);
    jr_sim_run_for(c.sim, 1 * MS);
    ck_assert(e2e_has_replica(&c, x, "DOWN"));
    jr_sim_run_for(c.sim, 3 * SEC);
    ck_assert_int_eq(e2e_meta_busy(&c, via, "DOWN"), 1);
    /* y comes back: the change completes, and both release their log and store of it */
    ck_assert(store_left(&c, y, "DOWN"));
    ck_assert_int_eq(e2e_restart(&c, y), 0);
    ck_assert_msg(wait_converged(&c, "DOWN", 1, 30 * SEC) == l, "not converged: %s", g_why);
    jr_sim_run_for(c.sim, 1 * SEC);
    ck_assert(!e2e_has_replica(&c, x, "DOWN"));
    ck_assert(!store_left(&c, x, "DOWN"));
    ck_assert(!e2e_has_replica(&c, y, "DOWN"));
    ck_assert(!store_left(&c, y, "DOWN"));
    check_identical(&c, "DOWN", 60);
    publish_n(&c, y, 60, 70);
    check_identical(&c, "DOWN", 70);
    e2e_free(&c);
}
END_TEST

static void consumer_added(void *arg, int status, const char *msg, const char *name)
{
    (void)name;
    e2e_admin_cb(arg, status, msg);
}

/* 1 if node i runs a replica of consumer name on stream (its state can be read). */
static int has_consumer(e2e *c, unsigned i, const char *stream, const char *name)
{
    uint64_t d, applied;
    return e2e_consumer_digest(c, i, stream, name, &d, &applied) != JR_ENOTFOUND;
}

/* As removed_servers_that_were_down_release_on_restart, for the stream's consumer, whose
 * replicas follow the stream's: a server restarted while the change that moved the consumer off
 * it has not converged reopens the consumer's replica from its log too (its group's
 * configuration still names it a voter, which the others need for an election and, restarted
 * themselves, for their VOUCH), and releases it once the change converged. */
START_TEST(removed_servers_that_were_down_reopen_the_consumer_until_the_change_converged)
{
    e2e c;
    cluster(&c, 5, 919);
    add_stream(&c, "DOWNC", 3);
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.durable_name = "C";
    e2e_res r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_consumer_add(e2e_node(&c, 0), "DOWNC", &cc, consumer_added, &r), 0);
    ck_assert_int_eq(e2e_wait(&c, &r, 30 * SEC), 0);
    ck_assert_msg(r.status == 0, "consumer add: %s", r.msg);
    publish_n(&c, 0, 0, 20);
    jr_sim_run_for(c.sim, 1500 * MS);
    int l = stream_leader(&c, "DOWNC");
    ck_assert_int_ge(l, 0);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "DOWNC", p, 8), 3);
    unsigned x = 99, y = 99;
    for (int j = 0; j < 3; j++) {
        ck_assert(has_consumer(&c, p[j], "DOWNC", "C"));
        if (p[j] == (unsigned)l) continue;
        if (x == 99)
            x = p[j];
        else
            y = p[j];
    }
    /* both followers down (neither group has a quorum), then R3 -> R1: the online peer stays */
    ck_assert_int_eq(jr_sim_crash(c.sim, x), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, y), 0);
    jr_sim_run_for(c.sim, 1 * SEC);
    ck_assert_int_ge(e2e_wait_meta(&c, 5, 30 * SEC), 0);
    unsigned via = 0;
    while (via == x || via == y) via++;
    ck_assert_msg(set_replicas(&c, via, "DOWNC", 1, &r) == 0, "update: %s", r.msg);
    ck_assert_int_eq(e2e_meta_peers(&c, via, "DOWNC", p, 8), 1);
    ck_assert_uint_eq(p[0], (unsigned)l);
    /* x comes back and learns the change, then restarts again: now its own meta state says
     * at once that the change moved the stream and the consumer off it, and is not over */
    ck_assert_int_eq(e2e_restart(&c, x), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    ck_assert_int_eq(e2e_meta_busy(&c, x, "DOWNC"), 1);
    ck_assert_int_eq(e2e_meta_peers(&c, x, "DOWNC", p, 8), 1);
    ck_assert(has_consumer(&c, x, "DOWNC", "C"));
    ck_assert_int_eq(jr_sim_crash(c.sim, x), 0);
    jr_sim_run_for(c.sim, 200 * MS);
    ck_assert_int_eq(e2e_restart(&c, x), 0);
    jr_sim_run_for(c.sim, 1 * SEC);
    ck_assert(e2e_has_replica(&c, x, "DOWNC"));
    ck_assert_msg(has_consumer(&c, x, "DOWNC", "C"),
                  "n%u released the consumer's replica while the change was not over", x);
    /* y comes back: both changes complete, and x and y release their replicas */
    ck_assert_int_eq(e2e_restart(&c, y), 0);
    ck_assert_msg(wait_converged(&c, "DOWNC", 1, 30 * SEC) == l, "not converged: %s", g_why);
    for (int tries = 0;
         tries < 300 && (has_consumer(&c, x, "DOWNC", "C") || has_consumer(&c, y, "DOWNC", "C"));
         tries++)
        jr_sim_run_for(c.sim, 100 * MS);
    ck_assert(!has_consumer(&c, x, "DOWNC", "C"));
    ck_assert(!has_consumer(&c, y, "DOWNC", "C"));
    ck_assert(has_consumer(&c, (unsigned)l, "DOWNC", "C"));
    e2e_free(&c);
}
END_TEST

/* n's replica of consumer name on stream: 1 if it leads and every one of its group's members
 * is a current voter (want of them). */
static int consumer_whole(e2e *c, unsigned i, const char *stream, const char *name, size_t want)
{
    uint64_t g = e2e_consumer_group(c, i, stream, name);
    jr_group *grp = g ? jr_node_group(e2e_node(c, i), g) : NULL;
    jr_group_status gs;
    gs.size = sizeof gs;
    if (!grp || jr_group_status_get(grp, &gs) != 0 || gs.role != JR_LEADER || gs.npeers != want)
        return 0;
    for (size_t k = 0; k < gs.npeers; k++) {
        jr_peer_status ps;
        ps.size = sizeof ps;
        if (jr_group_peer(grp, k, &ps) != 0 || !ps.voter || !ps.current) return 0;
    }
    return 1;
}

/* A consumer grown from R1 to R3 while one of its new servers m is down: its leader adds m as
 * an observer, m is taken for down and the group goes quiet. m restarts, learns the change
 * from the meta leader and opens the consumer's replica, empty; m catches up and becomes a
 * voter. (Here m's replica opens before its node answers the quiet leader's listing, which
 * then probes it; had it opened after the answer, only the consumer leader's wake for a new
 * member whose node it hears from, consumer_peers.c, would bring it in.) */
START_TEST(a_consumer_grown_onto_a_server_that_was_down_takes_it_in_once_it_is_back)
{
    e2e c;
    cluster(&c, 3, 929);
    add_stream(&c, "GROWC", 3);
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.durable_name = "C";
    cc.num_replicas = 1;
    e2e_res r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_consumer_add(e2e_node(&c, 0), "GROWC", &cc, consumer_added, &r), 0);
    ck_assert_int_eq(e2e_wait(&c, &r, 30 * SEC), 0);
    ck_assert_msg(r.status == 0, "consumer add: %s", r.msg);
    publish_n(&c, 0, 0, 20);
    jr_sim_run_for(c.sim, 1 * SEC);
    int a = -1;
    for (unsigned i = 0; i < 3; i++)
        if (has_consumer(&c, i, "GROWC", "C")) a = (int)i;
    ck_assert_int_ge(a, 0);
    unsigned m = a == 2 ? 1 : 2, via = a == 0 ? 1 : 0;
    if (via == m) via = (unsigned)a;
    ck_assert_int_eq(jr_sim_crash(c.sim, m), 0);
    jr_sim_run_for(c.sim, 1 * SEC);
    cc.num_replicas = 3;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_consumer_update(e2e_node(&c, via), "GROWC", &cc, consumer_added, &r), 0);
    ck_assert_int_eq(e2e_wait(&c, &r, 30 * SEC), 0);
    ck_assert_msg(r.status == 0, "consumer update: %s", r.msg);
    jr_sim_run_for(c.sim, 3 * SEC); /* the group adds m, takes it for down, goes quiet */
    ck_assert_int_eq(e2e_restart(&c, m), 0);
    int whole = 0;
    for (int tries = 0; tries < 200 && !whole; tries++) {
        jr_sim_run_for(c.sim, 100 * MS);
        for (unsigned i = 0; i < 3 && !whole; i++) whole = consumer_whole(&c, i, "GROWC", "C", 3);
    }
    char buf[512];
    e2e_consumer_describe(&c, m, "GROWC", "C", buf, sizeof buf);
    ck_assert_msg(whole, "the consumer's group did not take n%u in: %s", m, buf);
    e2e_free(&c);
}
END_TEST

START_TEST(a_stream_leader_crash_mid_change_resumes_under_the_next)
{
    e2e c;
    cluster(&c, 5, 1010);
    add_stream(&c, "SL", 3);
    publish_n(&c, 0, 0, 100);
    int l = stream_leader(&c, "SL");
    ck_assert_int_ge(l, 0);
    e2e_res up;
    memset(&up, 0, sizeof up);
    jr_stream_config cfg;
    e2e_config(&cfg, "SL", subj, 1, 5);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, (unsigned)(l + 1) % 5), &cfg, e2e_admin_cb, &up),
                     0);
    /* crash the stream's leader as soon as it added its first observer */
    uint64_t end = jr_sim_now(c.sim) + 10 * SEC;
    int seen = 0;
    while (!seen && jr_sim_now(c.sim) < end) {
        jr_sim_run_for(c.sim, 100 * 1000);
        unsigned m[16];
        int v[16];
        int k = e2e_members(&c, (unsigned)l, "SL", m, v, 16);
        for (int j = 0; j < k; j++) seen |= !v[j];
    }
    ck_assert_msg(seen, "no observer was added");
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)l), 0);
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    /* the next leader goes on with the 4 it has; the crashed one is needed for the 5th */
    jr_sim_run_for(c.sim, 2 * SEC);
    int nl = stream_leader(&c, "SL");
    ck_assert_int_ge(nl, 0);
    ck_assert_int_ne(nl, l);
    publish_n(&c, (unsigned)nl, 100, 120);
    ck_assert_int_eq(e2e_restart(&c, (unsigned)l), 0);
    ck_assert_msg(wait_converged(&c, "SL", 5, 30 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "SL", 120);
    e2e_free(&c);
}
END_TEST

START_TEST(r3_to_r1_under_load_removing_the_leader_fails_no_publish)
{
    e2e c;
    cluster(&c, 3, 1111);
    add_stream(&c, "SLOAD", 3);
    int l = stream_leader(&c, "SLOAD");
    int m = e2e_meta_leader(&c);
    ck_assert(l >= 0 && m >= 0);
    load w = {&c, calloc(2000, sizeof(e2e_res)), 2000, 0};
    e2e_res up, sd;
    memset(&up, 0, sizeof up);
    memset(&sd, 0, sizeof sd);
    int changed = 0;
    while (w.issued < w.n) {
        issue(&w, 20);
        jr_sim_run_for(c.sim, 2 * MS);
        if (!changed && w.issued >= 400) {
            /* the meta leader keeps the leader it knows; at once leadership moves to a peer it
             * drops, which then has to hand over while publishes keep coming */
            jr_stream_config cfg;
            e2e_config(&cfg, "SLOAD", subj, 1, 1);
            ck_assert_int_eq(jr_stream_update(e2e_node(&c, (unsigned)m), &cfg, e2e_admin_cb, &up),
                             0);
            char to[8];
            snprintf(to, sizeof to, "n%d", (l + 1) % 3);
            ck_assert_int_eq(
                jr_stream_stepdown(e2e_node(&c, (unsigned)m), "SLOAD", to, e2e_admin_cb, &sd), 0);
            changed = 1;
        }
    }
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_done, &w, 60 * SEC), 0);
    ck_assert_msg(up.done && up.status == 0, "update: %s", up.msg);
    int dups = 0;
    for (int i = 0; i < w.n; i++) {
        ck_assert_msg(w.res[i].status == 0, "publish %d: %s %s", i, jr_err_name(w.res[i].status),
                      w.res[i].msg);
        dups += w.res[i].duplicate;
    }
    int nl = wait_converged(&c, "SLOAD", 1, 30 * SEC);
    ck_assert_msg(nl == l, "not converged (leader %d, want %d): %s", nl, l, g_why);
    check_identical(&c, "SLOAD", (uint64_t)w.n); /* each stored exactly once */
    fprintf(stderr, "shrink under load: %d publishes, %d acked as duplicates of a retry\n", w.n,
            dups);
    free(w.res);
    e2e_free(&c);
}
END_TEST

/* 1 if stream info through via shows replica `rep` current, 0 if not, -1 if it is not shown. */
static int rep_current(e2e *c, unsigned via, const char *name, const char *rep)
{
    e2e_res r;
    if (e2e_info(c, via, name, &r) != 0) return -1;
    for (size_t j = 0; j < r.nreplicas; j++)
        if (!strcmp(r.reps[j].name, rep)) return r.reps[j].current;
    return -1;
}

/* Moves stream name's leadership to server l. */
static void lead_on(e2e *c, const char *name, unsigned l)
{
    char to[8];
    snprintf(to, sizeof to, "n%u", l);
    for (int tries = 0; tries < 20 && stream_leader(c, name) != (int)l; tries++) {
        int cur = stream_leader(c, name);
        e2e_res r;
        if (cur >= 0) e2e_stepdown(c, (unsigned)cur, name, to, &r);
        jr_sim_run_for(c->sim, 500 * MS);
    }
    ck_assert_int_eq(stream_leader(c, name), (int)l);
}

/* A follower whose server is up (the meta leader hears from it) while the stream's group
 * does not hear from its replica — a replica that cannot open, seen from outside; the stream
 * leader is not the meta leader, so the meta leader does not see the members' progress
 * itself. R3 -> R2 removes that follower, not the healthy one, though placement order puts it
 * first; the change converges and the stream keeps a leader through a leadership change. */
START_TEST(a_shrink_removes_the_sick_follower_not_the_healthy_one)
{
    e2e c;
    cluster(&c, 3, 1313);
    add_stream(&c, "SICK", 3);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "SICK", p, 8), 3);
    int m = e2e_meta_leader(&c);
    ck_assert_int_ge(m, 0);
    /* x: the sick follower, the first of the peers in placement order that is not the meta
     * leader; l: the stream's leader; h (the meta leader): the healthy follower */
    unsigned x = p[0] != (unsigned)m ? p[0] : p[1], h = (unsigned)m, l = 3 - x - h;
    e2e_res r;
    lead_on(&c, "SICK", l);
    publish_n(&c, l, 0, 500);
    /* the stream's leader stops hearing from x (x still hears it, so it does not stand for
     * election); the meta leader still hears from x */
    ck_assert_int_eq(jr_sim_cut(c.sim, x, l), 0);
    publish_n(&c, l, 500, 2500); /* x is thousands of operations behind */
    /* l leads and has heard from h since its election, not from x (a follower it does not
     * hear from may have moved leadership meanwhile) */
    char hname[16], xname[16];
    snprintf(hname, sizeof hname, "n%u", h);
    snprintf(xname, sizeof xname, "n%u", x);
    int settled = 0;
    for (int tries = 0; tries < 50 && !settled; tries++) {
        lead_on(&c, "SICK", l);
        settled = rep_current(&c, l, "SICK", hname) == 1 && rep_current(&c, l, "SICK", xname) == 0;
        if (!settled) jr_sim_run_for(c.sim, 100 * MS);
    }
    ck_assert_msg(settled, "leader n%u does not see n%u current and n%u behind", l, h, x);
    ck_assert_int_eq(e2e_meta_leader(&c), m);
    /* R3 -> R2: the sick member leaves, the leader and the healthy follower stay */
    ck_assert_msg(set_replicas(&c, h, "SICK", 2, &r) == 0, "update: %s", r.msg);
    ck_assert_int_eq(e2e_meta_peers(&c, h, "SICK", p, 8), 2);
    if (!(in_list(l, p, 2) && in_list(h, p, 2))) dump(&c, "SICK");
    ck_assert_msg(in_list(l, p, 2) && in_list(h, p, 2), "kept n%u n%u, not leader n%u and n%u",
                  p[0], p[1], l, h);
    int nl = wait_converged(&c, "SICK", 2, 30 * SEC);
    ck_assert_msg(nl == (int)l || nl == (int)h, "not converged (leader %d): %s", nl, g_why);
    check_identical(&c, "SICK", 2500);
    /* a leadership change: the two healthy servers still elect a leader */
    ck_assert_int_eq(e2e_stepdown(&c, (unsigned)nl, "SICK", NULL, &r), 0);
    int ol = nl;
    nl = wait_converged(&c, "SICK", 2, 30 * SEC);
    ck_assert_msg(nl == (int)(l + h) - ol, "no leader after the change (%d): %s", nl, g_why);
    publish_n(&c, h, 2500, 2600);
    check_identical(&c, "SICK", 2600);
    /* x heals; the peer set can change again: back to R3 */
    jr_sim_heal(c.sim);
    ck_assert_msg(set_replicas(&c, x, "SICK", 3, &r) == 0, "grow: %s", r.msg);
    ck_assert_msg(wait_converged(&c, "SICK", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    publish_n(&c, x, 2600, 2610);
    check_identical(&c, "SICK", 2610);
    e2e_free(&c);
}
END_TEST

/* R5 -> R3 decided while the meta leader does not hear from the stream's leader l (so without
 * the members' progress: placement order breaks the tie) keeps a and b, whose writes fail:
 * they still answer heartbeats, so l hears from them, but acknowledge nothing since, and l
 * commits through u1 and u2. Removing u1 or u2 would leave a configuration of four whose
 * majority needs a failing member: the group could commit nothing. l does not count a and b
 * live, so it waits and the stream keeps taking messages; once a is healthy again (restarted
 * by its host) the change completes, and nothing acknowledged is lost. Seven servers, the
 * stream on the five "ssd" ones, so that the meta group keeps a majority without l, a and b. */
START_TEST(a_shrink_does_not_count_members_whose_writes_fail)
{
    e2e c;
    e2e_new_ssd(&c, 7, 5, seed_of(571));
    static const char *ssd[] = {"ssd"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ZOMB", subj, 1, 5);
    cfg.placement = e2e_placement(NULL, ssd, 1);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "ZOMB", 4, 30 * SEC), 0);
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_meta_stepdown(e2e_node(&c, 0), "n5", e2e_admin_cb, &r), 0);
    ck_assert_int_eq(e2e_wait(&c, &r, 30 * SEC), 0);
    ck_assert_int_eq(e2e_meta_leader(&c), 5);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 5, "ZOMB", p, 8), 5);
    unsigned l = p[0], a = p[1], b = p[2];
    lead_on(&c, "ZOMB", l);
    publish_n(&c, l, 0, 100);
    ck_assert_int_eq(jr__memfs_fail(jr_sim_vfs(c.sim, a), JR__MEMFS_PWRITE, 1, JR_EIO, 1, NULL), 0);
    ck_assert_int_eq(jr__memfs_fail(jr_sim_vfs(c.sim, b), JR__MEMFS_PWRITE, 1, JR_EIO, 1, NULL), 0);
    publish_n(&c, l, 100, 120); /* a and b acknowledge none of these */
    ck_assert_int_eq(jr_sim_cut(c.sim, l, 5), 0);
    ck_assert_msg(set_replicas_placed(&c, 5, "ZOMB", 3, &r) == 0, "update: %s", r.msg);
    ck_assert_int_eq(e2e_meta_peers(&c, 5, "ZOMB", p, 8), 3);
    ck_assert_msg(in_list(a, p, 3) && in_list(b, p, 3), "kept n%u n%u n%u; a n%u b n%u", p[0], p[1],
                  p[2], a, b);
    jr_sim_heal(c.sim);
    /* l waits: five voters, and the stream still commits through u1 and u2 */
    jr_sim_run_for(c.sim, 3 * SEC);
    unsigned idx[8];
    int voter[8];
    ck_assert_int_eq(e2e_members(&c, l, "ZOMB", idx, voter, 8), 5);
    for (int j = 0; j < 5; j++) ck_assert(voter[j]);
    publish_n(&c, 6, 120, 130);
    /* a is healthy again: the change completes */
    jr__memfs_fail_clear(jr_sim_vfs(c.sim, a));
    ck_assert_int_eq(jr_sim_crash(c.sim, a), 0);
    ck_assert_int_eq(e2e_restart(&c, a), 0);
    uint64_t t0 = jr_sim_now(c.sim);
    while (e2e_meta_busy(&c, 5, "ZOMB") != 0) {
        ck_assert_msg(jr_sim_now(c.sim) - t0 < 60 * SEC, "the change did not complete");
        jr_sim_run_for(c.sim, 10 * MS);
    }
    int lead = stream_leader(&c, "ZOMB");
    ck_assert_int_ge(lead, 0);
    ck_assert_int_eq(e2e_members(&c, (unsigned)lead, "ZOMB", idx, voter, 8), 3);
    publish_n(&c, 6, 130, 140);
    /* b is healthy again too: every replica holds every acknowledged message */
    jr__memfs_fail_clear(jr_sim_vfs(c.sim, b));
    ck_assert_int_eq(jr_sim_crash(c.sim, b), 0);
    ck_assert_int_eq(e2e_restart(&c, b), 0);
    ck_assert_msg(wait_converged(&c, "ZOMB", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "ZOMB", 140);
    e2e_free(&c);
}
END_TEST

/* A cluster of n whose first `ssd` servers carry "ssd", the rest "hdd"; every server also
 * carries "az:<i mod 3>". */
static const char *g_az[3] = {"az:0", "az:1", "az:2"};
static void tagged_cluster(e2e *c, unsigned n, unsigned ssd, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    for (unsigned i = 0; i < n; i++) {
        c->tags[i][0] = i < ssd ? "ssd" : "hdd";
        c->tags[i][1] = g_az[i % 3];
        c->ntags[i] = 2;
    }
    seed = seed_of(seed);
    ck_assert_int_eq(e2e_new(c, n, seed, 3000), 0);
    fprintf(stderr, "tagged cluster of %u, seed %llu\n", n, (unsigned long long)seed);
    ck_assert_int_ge(e2e_wait_meta(c, n, 30 * SEC), 0);
}

START_TEST(a_move_to_other_tags_replaces_the_peers_that_do_not_fit)
{
    e2e c;
    tagged_cluster(&c, 6, 3, 1212);
    static const char *ssd[] = {"ssd"}, *hdd[] = {"hdd"}, *not_az0[] = {"!az:0"};
    jr_stream_config cfg;
    e2e_config(&cfg, "MOVE", subj, 1, 3);
    cfg.placement = e2e_placement(NULL, ssd, 1);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "%s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "MOVE", 2, 30 * SEC), 0);
    publish_n(&c, 0, 0, 120);
    /* everything moves: ssd -> hdd */
    cfg.placement = e2e_placement(NULL, hdd, 1);
    ck_assert_msg(e2e_update(&c, 4, &cfg, &r) == 0, "%s", r.msg);
    uint64_t end = jr_sim_now(c.sim) + 30 * SEC;
    while (e2e_meta_busy(&c, 4, "MOVE") && jr_sim_now(c.sim) < end) {
        check_no_early_release(&c, "MOVE");
        jr_sim_run_for(c.sim, 5 * MS);
    }
    ck_assert_msg(wait_converged(&c, "MOVE", 3, 30 * SEC) >= 0, "not converged: %s", g_why);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "MOVE", p, 8), 3);
    for (int j = 0; j < 3; j++) ck_assert_uint_ge(p[j], 3);
    check_identical(&c, "MOVE", 120);
    publish_n(&c, 1, 120, 130);
    check_identical(&c, "MOVE", 130);
    /* a partial move: the peers that still fit stay, only the one in az:0 is replaced */
    unsigned before[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "MOVE", before, 8), 3);
    static const char *hdd_not_az0[] = {"hdd", "!az:0"};
    cfg.placement = e2e_placement(NULL, hdd_not_az0, 2);
    /* only n4 (az:1) and n5 (az:2) are hdd outside az:0: two servers for three replicas */
    ck_assert_int_eq(e2e_update(&c, 2, &cfg, &r), JR_ENORESOURCES);
    ck_assert_msg(strstr(r.msg, "no suitable peers for placement"), "%s", r.msg);
    ck_assert_int_eq(e2e_meta_busy(&c, 2, "MOVE"), 0);
    unsigned now[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 2, "MOVE", now, 8), 3);
    ck_assert_int_eq(memcmp(now, before, 3 * sizeof *now), 0);
    /* anything outside az:0: n4 and n5 fit and stay, n3 gives way to n1 or n2 */
    cfg.placement = e2e_placement(NULL, not_az0, 1);
    ck_assert_msg(e2e_update(&c, 2, &cfg, &r) == 0, "%s", r.msg);
    ck_assert_msg(wait_converged(&c, "MOVE", 3, 30 * SEC) >= 0, "not converged: %s", g_why);
    unsigned after[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "MOVE", after, 8), 3);
    ck_assert(in_list(4, after, 3) && in_list(5, after, 3) && !in_list(3, after, 3));
    ck_assert(in_list(1, after, 3) || in_list(2, after, 3));
    check_identical(&c, "MOVE", 130);
    e2e_free(&c);
}
END_TEST

/* Randomized: a 5-node cluster with lossy, duplicating, reordering links, one server at a
 * time crashed (power loss, torn last write) or cut off, publishes with msg ids on every
 * server, stepdowns, and replica changes between 1 and 5 (and back) issued whenever a server
 * thinks the last one converged. At the end: heal, restart everything, and check that the
 * stream converged, every acknowledged message is stored at its seq on every replica, and the
 * replicas are identical. JR_SEEDS=first:count (default 1:4). */
static void random_run(uint64_t seed)
{
    e2e c;
    memset(&c, 0, sizeof c);
    c.torn_writes = 1;
    ck_assert_int_eq(e2e_new(&c, 5, seed, 1000), 0);
    jr__rand rnd;
    jr__rand_seed(&rnd, seed * 104729);
    ck_assert_msg(e2e_wait_meta(&c, 5, 30 * SEC) >= 0, "seed %llu", (unsigned long long)seed);
    for (unsigned i = 0; i < 5; i++) e2e_snapshot_every(&c, i, 32);
    add_stream(&c, "RND", 3);
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.drop = 0.01;
    link.duplicate = 0.01;
    link.reorder = 0.03;
    link.delay_max_ns = 1 * MS;
    for (unsigned a = 0; a < 5; a++)
        for (unsigned b = 0; b < 5; b++)
            if (a != b) jr_sim_set_link(c.sim, a, b, &link);
    enum { NMSG = 1500 };
    e2e_res *res = calloc(NMSG, sizeof *res);
    uint64_t *acked = calloc(NMSG, sizeof *acked);
    int *issued = calloc(NMSG, sizeof *issued);
    static e2e_res admin[400]; /* outlive the calls (callbacks may come at the close) */
    static int is_update[400];
    memset(admin, 0, sizeof admin);
    memset(is_update, 0, sizeof is_update);
    size_t next = 0;
    int down = -1, changes = 0, refused = 0;
    for (int round = 0; round < 400 && next < NMSG; round++) {
        for (int k = 0; k < 8; k++) {
            size_t i = (size_t)-1;
            for (size_t j = 0; j < next; j++)
                if (!issued[j] && !acked[j]) {
                    i = j;
                    break;
                }
            if (i == (size_t)-1) {
                if (next >= NMSG) break;
                i = next++;
            }
            unsigned via = (unsigned)jr__rand_below(&rnd, 5);
            if ((int)via == down) via = (via + 1) % 5;
            char sub[32], data[64], id[32];
            snprintf(sub, sizeof sub, "rep.%zu", i % 7);
            snprintf(data, sizeof data, "message %zu of the replica tests", i);
            snprintf(id, sizeof id, "m-%zu", i);
            jr_pub_opts o;
            jr_pub_opts_init(&o);
            o.msg_id = id;
            memset(&res[i], 0, sizeof res[i]);
            ck_assert_int_eq(jr_publish(e2e_node(&c, via), sub, NULL, 0, data, strlen(data), &o,
                                        e2e_pub_cb, &res[i]),
                             0);
            issued[i] = 1;
        }
        jr_sim_run_for(c.sim, (1 + jr__rand_below(&rnd, 15)) * MS);
        for (size_t j = 0; j < next; j++) {
            if (!issued[j] || !res[j].done) continue;
            issued[j] = 0;
            if (res[j].status != 0) continue;
            ck_assert_msg(!acked[j] || acked[j] == res[j].seq, "seed %llu: msg %zu acked twice",
                          (unsigned long long)seed, j);
            acked[j] = res[j].seq;
        }
        uint64_t dice = jr__rand_below(&rnd, 100);
        unsigned via = (unsigned)jr__rand_below(&rnd, 5);
        if ((int)via == down) via = (via + 1) % 5;
        if (dice < 4 && down < 0) {
            down = (int)jr__rand_below(&rnd, 5);
            jr_sim_crash(c.sim, (unsigned)down);
        } else if (dice < 8 && down >= 0) {
            e2e_restart(&c, (unsigned)down);
            down = -1;
        } else if (dice < 10) {
            unsigned side = (unsigned)jr__rand_below(&rnd, 5);
            jr_sim_partition(c.sim, &side, 1);
        } else if (dice < 16) {
            jr_sim_heal(c.sim);
        } else if (dice < 18) {
            e2e_res *sd = &admin[round];
            memset(sd, 0, sizeof *sd);
            jr_stream_stepdown(e2e_node(&c, via), "RND", NULL, e2e_admin_cb, sd);
        } else if (dice < 26 && e2e_meta_busy(&c, via, "RND") == 0) {
            e2e_res *up = &admin[round];
            memset(up, 0, sizeof *up);
            jr_stream_config cfg;
            e2e_config(&cfg, "RND", subj, 1, 1 + (int)jr__rand_below(&rnd, 5));
            jr_stream_update(e2e_node(&c, via), &cfg, e2e_admin_cb, up);
            is_update[round] = 1;
            changes++;
        }
    }
    jr_sim_heal(c.sim);
    if (down >= 0) ck_assert_int_eq(e2e_restart(&c, (unsigned)down), 0);
    jr_sim_link_init(&link);
    for (unsigned a = 0; a < 5; a++)
        for (unsigned b = 0; b < 5; b++)
            if (a != b) jr_sim_set_link(c.sim, a, b, &link);
    jr_sim_run_for(c.sim, 10 * SEC);
    char why[256] = "";
    for (int k = 0; k < 400; k++)
        if (is_update[k] && admin[k].done && admin[k].status) {
            refused++;
            if (strlen(why) < 200) {
                strcat(why, " ");
                strcat(why, jr_err_name(admin[k].status));
            }
        }
    for (size_t j = 0; j < next; j++) {
        ck_assert_msg(!issued[j] || res[j].done, "seed %llu: publish %zu never completed",
                      (unsigned long long)seed, j);
        if (issued[j] && res[j].status == 0) acked[j] = res[j].seq;
    }
    for (unsigned i = 0; i < 5; i++) ck_assert_int_eq(jr_sim_crash(c.sim, i), 0);
    for (unsigned i = 0; i < 5; i++) ck_assert_int_eq(e2e_restart(&c, i), 0);
    ck_assert_msg(e2e_wait_meta(&c, 5, 30 * SEC) >= 0, "seed %llu: no meta leader",
                  (unsigned long long)seed);
    unsigned p[8];
    int np = e2e_meta_peers(&c, 0, "RND", p, 8);
    ck_assert_int_gt(np, 0);
    if (wait_converged(&c, "RND", np, 60 * SEC) < 0)
        ck_abort_msg("seed %llu (JR_SEEDS=%llu:1): not converged to R%d: %s",
                     (unsigned long long)seed, (unsigned long long)seed, np, g_why);
    uint64_t last = 0;
    size_t nacked = 0;
    for (size_t j = 0; j < next; j++) {
        if (acked[j] > last) last = acked[j];
        nacked += acked[j] != 0;
    }
    uint64_t d0 = 0;
    for (int tries = 0; tries < 300; tries++) {
        int same = 1;
        for (int j = 0; j < np; j++) {
            uint64_t d;
            ck_assert_int_eq(e2e_digest(&c, p[j], "RND", &d), 0);
            if (j == 0) d0 = d;
            same &= d == d0;
        }
        if (same) break;
        jr_sim_run_for(c.sim, 100 * MS);
    }
    for (int j = 0; j < np; j++) {
        uint64_t d;
        ck_assert_int_eq(e2e_digest(&c, p[j], "RND", &d), 0);
        ck_assert_msg(d == d0, "seed %llu: replicas differ", (unsigned long long)seed);
        for (size_t m = 0; m < next; m++) {
            if (!acked[m]) continue;
            char sub[64], got[128], want[64];
            int rc = e2e_local_get(&c, p[j], "RND", acked[m], sub, sizeof sub, got, sizeof got);
            ck_assert_msg(rc == 0, "seed %llu: n%u lost acknowledged msg %zu (seq %llu): %s",
                          (unsigned long long)seed, p[j], m, (unsigned long long)acked[m],
                          jr_err_name(rc));
            snprintf(want, sizeof want, "message %zu of the replica tests", m);
            ck_assert_str_eq(got, want);
        }
    }
    fprintf(stderr,
            "replicas seed %llu: %d changes asked (%d refused:%s), R%d at the end; %zu "
            "of %zu publishes acknowledged and intact\n",
            (unsigned long long)seed, changes, refused, why, np, nacked, next);
    free(res);
    free(acked);
    free(issued);
    e2e_free(&c);
}

START_TEST(random_replica_changes_under_faults)
{
    uint64_t first = 1, count = 4;
    int given = e2e_seeds(&first, &count);
    for (uint64_t k = 0; k < count; k++) random_run(first + k);
    /* Seeds that once failed: 3020 split the log (a candidate of a configuration two changes
     * back won with the votes of two servers removed and re-added empty); 5230 lost acked
     * writes (a restarted server bootstrapped the group afresh from a state of its meta
     * replay that still showed the stream's original peers); 7759 got stuck (a voter back
     * with an empty replica that would not vote, under a stopgap the joiner's floor replaced). */
    if (!given) {
        random_run(3020);
        random_run(5230);
        random_run(7759);
    }
}
END_TEST

/* A joining replica whose log caught up while its store still fetches the messages (catch-up
 * from a snapshot) is not shown current: whenever stream info shows it current, its store holds
 * every message. */
START_TEST(a_joining_replica_is_not_current_before_its_store_is_complete)
{
    e2e c;
    cluster(&c, 2, 131);
    for (unsigned i = 0; i < 2; i++) e2e_snapshot_every(&c, i, 40); /* compact the log */
    e2e_res r;
    add_stream(&c, "JOIN", 1);
    static char big[16384]; /* 2,000 of them: about 32 MB for the joiner to fetch */
    memset(big, 'j', sizeof big);
    for (int i = 0; i < 2000; i++)
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.join", big, sizeof big, NULL, &r), 0);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "JOIN", p, 8), 1);
    unsigned joiner = 1 - p[0];
    char name[8];
    snprintf(name, sizeof name, "n%u", joiner);
    ck_assert_msg(set_replicas(&c, 0, "JOIN", 2, &r) == 0, "update: %s", r.msg);
    int seen_current = 0, polls = 0;
    for (; polls < 4000 && !seen_current; polls++) {
        jr_sim_run_for(c.sim, 2 * MS);
        if (rep_current(&c, p[0], "JOIN", name) != 1) continue;
        jr_stream_state st;
        ck_assert_int_eq(e2e_state(&c, joiner, "JOIN", &st), 0);
        ck_assert_msg(st.msgs == 2000, "shown current holding %llu of 2000 messages",
                      (unsigned long long)st.msgs);
        seen_current = 1;
    }
    ck_assert_msg(seen_current, "never current after %d polls", polls);
    e2e_free(&c);
}
END_TEST

/* While a joining replica's store fetches the messages of the snapshot it restored, the
 * leader's stream info counts them in its lag (the member says what it has left when asked
 * READY), so an operator sees the copy count down: with no publishes meanwhile (its log trails
 * by a few entries at most), the lag shown rises above the log's slack and then only falls.
 * The leader asks again as soon as the member answered, so the count follows the copy chunk
 * by chunk (about 30 chunks of 1 MiB here) rather than stepping once per heartbeat. */
START_TEST(a_joining_replica_lag_counts_the_messages_it_still_copies)
{
    e2e c;
    cluster(&c, 2, 132);
    for (unsigned i = 0; i < 2; i++) e2e_snapshot_every(&c, i, 40); /* compact the log */
    e2e_res r;
    add_stream(&c, "JOIN", 1);
    static char big[16384]; /* letters that do not compress: the copy's bytes are real */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < sizeof big; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        big[i] = (char)('a' + x % 26);
    }
    for (int i = 0; i < 2000; i++)
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.join", big, sizeof big, NULL, &r), 0);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "JOIN", p, 8), 1);
    char name[8];
    snprintf(name, sizeof name, "n%u", 1 - p[0]);
    jr_sim_link link; /* 20 MB/s: the copy of about 32 MB takes over a second */
    jr_sim_link_init(&link);
    link.bytes_per_sec = 20 * 1000 * 1000;
    ck_assert_int_eq(jr_sim_set_link(c.sim, 0, 1, &link), 0);
    ck_assert_int_eq(jr_sim_set_link(c.sim, 1, 0, &link), 0);
    ck_assert_msg(set_replicas(&c, 0, "JOIN", 2, &r) == 0, "update: %s", r.msg);
    uint64_t max_lag = 0, prev = UINT64_MAX;
    int copying = 0, current = 0, polls = 0, steps = 0;
    for (; polls < 4000 && !current; polls++) {
        jr_sim_run_for(c.sim, 2 * MS);
        ck_assert_int_eq(e2e_info(&c, p[0], "JOIN", &r), 0);
        for (size_t j = 0; j < r.nreplicas; j++) {
            if (strcmp(r.reps[j].name, name)) continue;
            uint64_t lag = r.reps[j].lag;
            current = r.reps[j].current;
            if (lag > max_lag) max_lag = lag;
            if (lag > 64) {
                copying = 1;
                ck_assert_msg(lag <= prev, "the lag rose from %llu to %llu while copying",
                              (unsigned long long)prev, (unsigned long long)lag);
                steps += lag != prev;
            }
            if (copying) prev = lag;
        }
    }
    ck_assert_msg(current, "never current after %d polls", polls);
    ck_assert_msg(max_lag >= 500, "the lag shown never counted the copy (at most %llu)",
                  (unsigned long long)max_lag);
    ck_assert_msg(steps >= 8, "the lag shown took %d values while copying", steps);
    e2e_free(&c);
}
END_TEST

/* A stream created R2 while one of its two servers is away, then shrunk to R1 before its group
 * ever had a leader (the meta leader drops the server that is away): the group's configuration
 * still has both original peers, and a change needs a leader, which needs both. The dropped
 * server, once back, runs a replica of the original peer set until the change converged — it
 * held none, having been away at the creation — so the group elects, the shrink completes, the
 * stream takes publishes, and the dropped server then lets its replica go. Away means crashed
 * and restarted (a full convergence at its restart), or cut off and healed with no restart (it
 * applies the creation and the shrink together, each followed by a one-group convergence). */
static void shrink_before_the_first_leader(uint64_t seed, int cut_off)
{
    e2e c;
    e2e_new_ssd(&c, 3, 2, seed_of(seed));
    int m = e2e_meta_leader(&c);
    ck_assert_int_ge(m, 0);
    /* an ssd server that does not lead the meta group goes away */
    unsigned away = m == 0 ? 1 : 0, up = 1 - away;
    if (cut_off)
        ck_assert_int_eq(jr_sim_partition(c.sim, &away, 1), 0);
    else
        ck_assert_int_eq(jr_sim_crash(c.sim, away), 0);
    static const char *ssd[] = {"ssd"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORIG", subj, 1, 2);
    cfg.placement = e2e_placement(NULL, ssd, 1);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, (unsigned)m, &cfg, &r) == 0, "add: %s", r.msg);
    jr_sim_run_for(c.sim, 5 * SEC); /* the meta leader sees it offline */
    cfg.replicas = 1;
    ck_assert_msg(e2e_update(&c, (unsigned)m, &cfg, &r) == 0, "shrink: %s", r.msg);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, (unsigned)m, "ORIG", p, 8), 1);
    ck_assert_uint_eq(p[0], up);
    if (cut_off)
        jr_sim_heal(c.sim);
    else
        ck_assert_int_eq(e2e_restart(&c, away), 0);
    int led = 0;
    for (int tries = 0; tries < 300 && !led; tries++) {
        jr_sim_run_for(c.sim, 100 * MS);
        led = e2e_replica_leader(&c, up, "ORIG") == (int)up && !e2e_meta_busy(&c, up, "ORIG");
    }
    ck_assert_msg(led, "ORIG never elected a leader and converged");
    ck_assert_int_eq(e2e_publish(&c, up, "rep.orig", "x", 1, NULL, &r), 0);
    for (int tries = 0; tries < 100 && e2e_has_replica(&c, away, "ORIG"); tries++)
        jr_sim_run_for(c.sim, 100 * MS);
    ck_assert_msg(!e2e_has_replica(&c, away, "ORIG"), "the dropped server kept its replica");
    e2e_free(&c);
}

START_TEST(a_shrink_before_the_first_leader_completes_when_the_dropped_peer_returns)
{
    shrink_before_the_first_leader(811, 0);
}
END_TEST

START_TEST(a_shrink_before_the_first_leader_completes_when_the_cut_off_dropped_peer_heals)
{
    shrink_before_the_first_leader(812, 1);
}
END_TEST

/* Every live peer of stream `name` holds the same messages and state. */
static void check_same(e2e *c, const char *name)
{
    unsigned peers[8];
    int np = e2e_meta_peers(c, 0, name, peers, 8);
    ck_assert_int_gt(np, 0);
    int same = 0;
    for (int tries = 0; tries < 300 && !same; tries++) {
        uint64_t d0 = 0, d;
        jr_stream_state s0, st;
        same = 1;
        for (int j = 0; j < np; j++) {
            ck_assert_int_eq(e2e_digest(c, peers[j], name, &d), 0);
            ck_assert_int_eq(e2e_state(c, peers[j], name, &st), 0);
            if (j == 0) {
                d0 = d;
                s0 = st;
            }
            same &= d == d0 && memcmp(&st, &s0, sizeof st) == 0;
        }
        if (!same) jr_sim_run_for(c->sim, 100 * MS);
    }
    ck_assert_msg(same, "the replicas of %s differ", name);
}

/* A joining replica fetches the messages of the snapshot it restored up to that snapshot's last
 * seq, then restores it. Here the limits remove the oldest messages at the source while it
 * fetches (a publish a millisecond, max_msgs 200, 16 KiB each: several chunks): the snapshot
 * can not be completed from those chunks, and the catch-up goes on to the source's end and its
 * snapshot. The replicas end identical and no publish fails. */
START_TEST(a_joiner_whose_source_removes_snapshot_messages_ends_identical)
{
    e2e c;
    cluster(&c, 3, 141);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 40); /* compact the log */
    jr_stream_config cfg;
    e2e_config(&cfg, "LIMIT", subj, 1, 1);
    cfg.max_msgs = 200;
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "LIMIT", 0, 30 * SEC), 0);
    static char big[16384];
    memset(big, 'l', sizeof big);
    for (int i = 0; i < 400; i++)
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.limit", big, sizeof big, NULL, &r), 0);
    cfg.replicas = 3;
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, 0), &cfg, e2e_admin_cb, &up), 0);
    e2e_res res[300];
    memset(res, 0, sizeof res);
    for (int i = 0; i < 300; i++) {
        ck_assert_int_eq(jr_publish(e2e_node(&c, 0), "rep.limit", NULL, 0, big, sizeof big, NULL,
                                    e2e_pub_cb, &res[i]),
                         0);
        jr_sim_run_for(c.sim, 1 * MS);
    }
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    for (int i = 0; i < 300; i++) {
        ck_assert_int_eq(e2e_wait(&c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    ck_assert_msg(wait_converged(&c, "LIMIT", 3, 30 * SEC) >= 0, "not converged: %s", g_why);
    check_same(&c, "LIMIT");
    uint64_t chunks = 0;
    for (unsigned i = 0; i < 3; i++) chunks += e2e_catchup_chunks(&c, i);
    ck_assert_uint_gt(chunks, 0);
    e2e_free(&c);
}
END_TEST

/* Fills p with letters from xorshift state *x: messages that differ and do not compress. */
/* Limits every link into server `to` of a cluster of three to bytes_per_sec. */
static void slow_links_into(e2e *c, unsigned to, uint64_t bytes_per_sec)
{
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.bytes_per_sec = bytes_per_sec;
    for (unsigned i = 0; i < 3; i++)
        if (i != to) ck_assert_int_eq(jr_sim_set_link(c->sim, i, to, &link), 0);
}

static void fill_random(char *p, size_t n, uint64_t *x)
{
    for (size_t i = 0; i < n; i++) {
        *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
        p[i] = (char)('a' + *x % 26);
    }
}

/* A joiner whose copy is slow (12 MB/s links into it) while a publisher keeps writing queues
 * the entries its group commits meanwhile; once the messages are in it applies that queue a
 * bounded batch per node turn (catchup.c drain: 16 MiB plus what was queued since the previous
 * batch), not all at once, so its Raft keeps answering its leader between batches. Counted:
 * several batches, none past its budget by more than one entry, every queued byte applied,
 * and the replicas end identical with every publish acknowledged. */
START_TEST(a_joiner_under_a_publisher_applies_its_queue_in_bounded_batches)
{
    e2e c;
    cluster(&c, 3, 151);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 40); /* compact the log */
    add_stream(&c, "DRAIN", 2);
    static char big[16384]; /* letters that do not compress: the copy's bytes are real */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    e2e_res r;
    for (int i = 0; i < 2000; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.drain", big, sizeof big, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "DRAIN", p, 8), 2);
    unsigned joiner = 3 - p[0] - p[1];
    /* the copy of about 32 MB takes over two seconds */
    slow_links_into(&c, joiner, 12 * 1000 * 1000);
    uint64_t b0, t0, o0;
    e2e_catchup_drain(&c, joiner, &b0, &t0, &o0);
    jr_stream_config cfg;
    e2e_config(&cfg, "DRAIN", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, p[0]), &cfg, e2e_admin_cb, &up), 0);
    static e2e_res res[1500]; /* one publish every 2 ms through the copy: over 16 MiB queued */
    memset(res, 0, sizeof res);
    for (int i = 0; i < 1500; i++) {
        fill_random(big, sizeof big, &x); /* jr_publish copies it */
        ck_assert_int_eq(jr_publish(e2e_node(&c, p[0]), "rep.drain", NULL, 0, big, sizeof big, NULL,
                                    e2e_pub_cb, &res[i]),
                         0);
        jr_sim_run_for(c.sim, 2 * MS);
    }
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    for (int i = 0; i < 1500; i++) {
        ck_assert_int_eq(e2e_wait(&c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    ck_assert_msg(wait_converged(&c, "DRAIN", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "DRAIN", 3500);
    uint64_t bytes, turns, over;
    e2e_catchup_drain(&c, joiner, &bytes, &turns, &over);
    bytes -= b0, turns -= t0;
    ck_assert_msg(bytes > (16u << 20), "only %llu queued bytes applied", (unsigned long long)bytes);
    ck_assert_msg(turns >= 2, "the queue of %llu bytes applied in %llu batch(es)",
                  (unsigned long long)bytes, (unsigned long long)turns);
    ck_assert_msg(over <= sizeof big + 4096, "a batch applied %llu bytes past its budget",
                  (unsigned long long)over);
    e2e_free(&c);
}
END_TEST

/* A joiner cut off from its leader for longer than an election timeout while it copies from
 * the other follower: the leader compacts its log past it and installs a newer snapshot when
 * the link is back. The joiner keeps that snapshot until the entries it had queued before it
 * are applied, then fetches what the lost entries held: it fetches less than the stream holds
 * (the queued entries are not fetched again), and every replica ends identical with every
 * publish acknowledged. */
START_TEST(a_snapshot_installed_while_restoring_is_restored_after_the_queue)
{
    e2e c;
    cluster(&c, 3, 152);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 40); /* compact the log */
    add_stream(&c, "LATER", 2);
    static char big[16384];
    uint64_t x = 0x2545f4914f6cdd1dull;
    e2e_res r;
    for (int i = 0; i < 2000; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.later", big, sizeof big, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "LATER", p, 8), 2);
    unsigned joiner = 3 - p[0] - p[1];
    int l = e2e_replica_leader(&c, p[0], "LATER");
    ck_assert_int_ge(l, 0);
    unsigned leader = (unsigned)l;
    /* the copy of about 32 MB takes over a second */
    slow_links_into(&c, joiner, 20 * 1000 * 1000);
    uint64_t later0 = e2e_catchup_later(&c, joiner), bytes0 = e2e_catchup_bytes(&c, joiner);
    jr_stream_config cfg;
    e2e_config(&cfg, "LATER", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, leader), &cfg, e2e_admin_cb, &up), 0);
    static e2e_res res[1000]; /* one publish every 2 ms for 2 s */
    memset(res, 0, sizeof res);
    for (int i = 0; i < 1000; i++) {
        if (i == 100) { /* the copy is under way: cut the joiner off from its leader */
            ck_assert_int_eq(jr_sim_cut(c.sim, leader, joiner), 0);
            ck_assert_int_eq(jr_sim_cut(c.sim, joiner, leader), 0);
        }
        if (i == 720) jr_sim_heal(c.sim); /* 1.24 s later, before the copy ends */
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(jr_publish(e2e_node(&c, leader), "rep.later", NULL, 0, big, sizeof big,
                                    NULL, e2e_pub_cb, &res[i]),
                         0);
        jr_sim_run_for(c.sim, 2 * MS);
    }
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    for (int i = 0; i < 1000; i++) {
        ck_assert_int_eq(e2e_wait(&c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    ck_assert_msg(wait_converged(&c, "LATER", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "LATER", 3000);
    uint64_t later = e2e_catchup_later(&c, joiner) - later0;
    uint64_t fetched = e2e_catchup_bytes(&c, joiner) - bytes0;
    ck_assert_msg(later >= 1, "no snapshot was installed while the joiner restored");
    ck_assert_msg(fetched < 3000ull * sizeof big, "fetched %llu bytes: the queue was fetched again",
                  (unsigned long long)fetched);
    e2e_free(&c);
}
END_TEST

/* A joiner copying while a publisher keeps its group busy (a publish every 2 ms through the
 * whole change, 50 MB/s links into the joiner) paces its copy (catchup.c "Pacing"): after each
 * chunk whose round trip saw entries committed it pauses three times what that chunk took, so
 * the copy gets a quarter of the time and the group the rest. Sampled every 2 ms, the joiner
 * fetches in at most a third of the samples of its copy and pauses in more than twice as many;
 * the copy still completes while the publisher goes on, the change converges, every publish is
 * acknowledged and the replicas end identical. A grow R2 -> R3 on three servers, or (move) the
 * evacuation of a follower of an R3 stream on four. With `every` 1 ms (16 MB/s, more than the
 * quarter of the link a paced copy would get) the group outruns the copy: it is never paused
 * (paced, it would fall further behind with every pause) and asks for larger chunks, a quarter of
 * the 8 MiB frame (catchup.c "Request size"): more than 1.5 MiB on average. */
static void paced_change(int move, uint64_t seed, uint64_t every)
{
    e2e c;
    unsigned nodes = move ? 4 : 3;
    int from = move ? 3 : 2;
    cluster(&c, nodes, seed);
    for (unsigned i = 0; i < nodes; i++) e2e_snapshot_every(&c, i, 40); /* compact the log */
    add_stream(&c, "PACE", from);
    static char big[16384];
    uint64_t x = 0x853c49e6748fea9bull ^ seed;
    e2e_res r;
    for (int i = 0; i < 1000; i++) { /* 16 MB: 16 chunks or so */
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.pace", big, sizeof big, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "PACE", p, 8), from);
    unsigned joiner = 0;
    while (in_list(joiner, p, from)) joiner++;
    int l = e2e_replica_leader(&c, p[0], "PACE");
    ck_assert_int_ge(l, 0);
    unsigned leader = (unsigned)l, gone = p[0] == leader ? p[1] : p[0];
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.bytes_per_sec = 50 * 1000 * 1000;
    for (unsigned i = 0; i < nodes; i++)
        if (i != joiner) ck_assert_int_eq(jr_sim_set_link(c.sim, i, joiner, &link), 0);
    uint64_t steps0, paused0;
    e2e_catchup_paced(&c, joiner, &steps0, &paused0);
    uint64_t chunks0 = e2e_catchup_chunks(&c, joiner), bytes0 = e2e_catchup_bytes(&c, joiner);
    e2e_res up;
    memset(&up, 0, sizeof up);
    if (move) {
        ck_assert_int_eq(jr_stream_evacuate(e2e_node(&c, leader), "PACE", jr_sim_name(c.sim, gone),
                                            e2e_admin_cb, &up),
                         0);
    } else {
        jr_stream_config cfg;
        e2e_config(&cfg, "PACE", subj, 1, 3);
        ck_assert_int_eq(jr_stream_update(e2e_node(&c, leader), &cfg, e2e_admin_cb, &up), 0);
    }
    enum { MAXPUB = 4000 };
    static e2e_res res[MAXPUB];
    memset(res, 0, sizeof res);
    int n = 0, copying = 0, done_at = -1;
    uint64_t fetching = 0, pausing = 0;
    int after = (int)(500 * MS / every); /* publishes for 0.5 s after the copy */
    while (n < MAXPUB && (done_at < 0 || n < done_at + after)) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(jr_publish(e2e_node(&c, leader), "rep.pace", NULL, 0, big, sizeof big,
                                    NULL, e2e_pub_cb, &res[n]),
                         0);
        n++;
        jr_sim_run_for(c.sim, every);
        int ph = e2e_catchup_phase(&c, joiner, "PACE");
        if (ph == E2E_CU_FETCHING) fetching++;
        if (ph == E2E_CU_PAUSED) pausing++;
        if (ph >= 0) copying = 1;
        if (copying && ph < 0 && done_at < 0) done_at = n;
    }
    ck_assert_msg(done_at >= 0, "the catch-up did not complete under %d publishes", n);
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "change: %s", up.msg);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(e2e_wait(&c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    ck_assert_msg(wait_converged(&c, "PACE", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "PACE", p, 8), 3);
    ck_assert(in_list(joiner, p, 3));
    if (move) ck_assert(!in_list(gone, p, 3));
    check_identical(&c, "PACE", 1000 + (uint64_t)n);
    uint64_t steps, paused;
    e2e_catchup_paced(&c, joiner, &steps, &paused);
    steps -= steps0, paused -= paused0;
    if (every < 2 * MS) {
        uint64_t chunks = e2e_catchup_chunks(&c, joiner) - chunks0;
        uint64_t bytes = e2e_catchup_bytes(&c, joiner) - bytes0;
        ck_assert_msg(chunks > 0 && bytes / chunks > (3u << 19),
                      "a copy the group outruns kept its chunks small: %llu bytes in %llu chunks",
                      (unsigned long long)bytes, (unsigned long long)chunks);
        ck_assert_msg(steps == 0 && pausing == 0,
                      "a copy the group outruns paused: %llu paced steps, %.3f s, %llu samples "
                      "paused, %llu fetching",
                      (unsigned long long)steps, (double)paused / 1e9, (unsigned long long)pausing,
                      (unsigned long long)fetching);
        e2e_free(&c);
        return;
    }
    ck_assert_msg(steps >= 8, "only %llu paced steps", (unsigned long long)steps);
    ck_assert_msg(fetching * 2 <= pausing,
                  "samples of the copy: %llu fetching, %llu paused (%llu paced steps, %.3f s)",
                  (unsigned long long)fetching, (unsigned long long)pausing,
                  (unsigned long long)steps, (double)paused / 1e9);
    e2e_free(&c);
}

START_TEST(a_joiner_under_a_publisher_paces_its_copy_and_still_converges)
{
    paced_change(0, 153, 2 * MS);
}
END_TEST

START_TEST(a_move_under_a_publisher_paces_the_replacement_and_converges)
{
    paced_change(1, 155, 2 * MS);
}
END_TEST

START_TEST(a_copy_slower_than_the_group_commits_is_not_paused)
{
    paced_change(1, 156, 1 * MS);
}
END_TEST

/* The same copy into a joiner of a group that takes no proposal meanwhile runs its pipelined
 * rounds at full speed, never paused: the entries its log receives at first (those the group
 * committed after the leader's snapshot, and the peer change's own) are no busy group. */
START_TEST(a_joiner_of_an_idle_group_copies_without_pauses)
{
    e2e c;
    cluster(&c, 3, 154);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 40); /* compact the log */
    add_stream(&c, "IDLE", 2);
    static char big[16384];
    uint64_t x = 0xda3e39cb94b95bdbull;
    e2e_res r;
    for (int i = 0; i < 1000; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.idle", big, sizeof big, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "IDLE", p, 8), 2);
    unsigned joiner = 3 - p[0] - p[1];
    slow_links_into(&c, joiner, 50 * 1000 * 1000);
    uint64_t steps0, paused0, chunks0 = e2e_catchup_chunks(&c, joiner);
    e2e_catchup_paced(&c, joiner, &steps0, &paused0);
    jr_stream_config cfg;
    e2e_config(&cfg, "IDLE", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, p[0]), &cfg, e2e_admin_cb, &up), 0);
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    ck_assert_msg(wait_converged(&c, "IDLE", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "IDLE", 1000);
    uint64_t steps, paused;
    e2e_catchup_paced(&c, joiner, &steps, &paused);
    ck_assert_uint_ge(e2e_catchup_chunks(&c, joiner) - chunks0, 8);
    ck_assert_msg(steps == steps0, "%llu paced steps, %.3f s paused",
                  (unsigned long long)(steps - steps0), (double)(paused - paused0) / 1e9);
    e2e_free(&c);
}
END_TEST

/* Retention for a joiner (snapshot.c trailing_for). A grow R2 -> R3 under a publisher (a
 * publish of 16 KB every 2 ms through the change), the joiner's links from the leader cut for
 * 100 ms while it copies (less than the election timeout of 150 ms: it stays in contact, and its
 * log moved within that timeout), so it falls about 50 entries (800 KB) behind — past what the
 * leader keeps for a follower here (snapshots every 10 entries, keep_bytes 128 KiB), within
 * what it keeps for a member catching up (join_keep). Returns the snapshots the joiner
 * installed while restoring; checks that no snapshot of the leader left more than join_keep
 * behind it (or the 10 entries every group keeps) and returns the most one left in *kept. */
static uint64_t joiner_behind(uint64_t seed, uint64_t join_keep, uint64_t *kept, int *watched)
{
    enum { KEEP = 128 << 10, TRAIL = 10 * (16384 + 4096) };
    e2e c;
    cluster(&c, 3, seed);
    for (unsigned i = 0; i < 3; i++) {
        e2e_snapshot_every(&c, i, 10);
        e2e_keep_bytes(&c, i, KEEP, join_keep);
    }
    add_stream(&c, "KEEP", 2);
    static char big[16384];
    uint64_t x = 0x5851f42d4c957f2dull ^ seed;
    e2e_res r;
    for (int i = 0; i < 1000; i++) { /* 16 MB to copy */
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.keep", big, sizeof big, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "KEEP", p, 8), 2);
    unsigned joiner = 3 - p[0] - p[1];
    int l = e2e_replica_leader(&c, p[0], "KEEP");
    ck_assert_int_ge(l, 0);
    unsigned leader = (unsigned)l;
    slow_links_into(&c, joiner, 50 * 1000 * 1000);
    uint64_t later0 = e2e_catchup_later(&c, joiner);
    jr_stream_config cfg;
    e2e_config(&cfg, "KEEP", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, leader), &cfg, e2e_admin_cb, &up), 0);
    enum { MAXPUB = 4000 };
    static e2e_res res[MAXPUB];
    memset(res, 0, sizeof res);
    int n = 0, cut = -1, done_at = -1, copying = 0;
    while (n < MAXPUB && (done_at < 0 || n < done_at + 100)) {
        int ph = e2e_catchup_phase(&c, joiner, "KEEP");
        if (ph >= 0) copying = 1;
        if (copying && ph < 0 && done_at < 0) done_at = n;
        if (cut < 0 && ph == E2E_CU_FETCHING && e2e_catchup_chunks(&c, joiner) >= 3) {
            cut = n; /* the copy is under way */
            ck_assert_int_eq(jr_sim_cut(c.sim, leader, joiner), 0);
            ck_assert_int_eq(jr_sim_cut(c.sim, joiner, leader), 0);
        }
        if (cut >= 0 && n == cut + 50) jr_sim_heal(c.sim); /* 100 ms later */
        if (copying && e2e_joiners_watched(&c, leader, "KEEP")) *watched = 1;
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(jr_publish(e2e_node(&c, leader), "rep.keep", NULL, 0, big, sizeof big,
                                    NULL, e2e_pub_cb, &res[n]),
                         0);
        n++;
        jr_sim_run_for(c.sim, 2 * MS);
    }
    ck_assert_msg(cut >= 0, "the joiner's copy was never seen under way");
    ck_assert_msg(done_at >= 0, "the catch-up did not complete under %d publishes", n);
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(e2e_wait(&c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    ck_assert_msg(wait_converged(&c, "KEEP", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "KEEP", 1000 + (uint64_t)n);
    /* the joiner is a voter now: no replica keeps a table of members catching up */
    jr_sim_run_for(c.sim, 2 * SEC);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_msg(!e2e_joiners_watched(&c, i, "KEEP"), "n%u still watches joiners", i);
    *kept = 0;
    for (unsigned i = 0; i < 3; i++) {
        uint64_t k = e2e_kept_max(&c, i);
        uint64_t cap = join_keep > TRAIL ? join_keep : TRAIL;
        ck_assert_msg(k <= cap, "n%u kept %llu bytes behind a snapshot (bound %llu)", i,
                      (unsigned long long)k, (unsigned long long)cap);
        if (k > *kept) *kept = k;
    }
    uint64_t later = e2e_catchup_later(&c, joiner) - later0;
    e2e_free(&c);
    return later;
}

/* The leader keeps the log the joiner needs (up to join_keep, 8 MiB here): no snapshot reaches
 * the joiner while it restores, and a snapshot left more than a follower's bound behind it. */
START_TEST(a_joiner_that_falls_behind_is_kept_the_log_it_needs)
{
    uint64_t kept;
    int watched = 0;
    uint64_t later = joiner_behind(156, 8u << 20, &kept, &watched);
    ck_assert_msg(later == 0, "%llu later snapshots", (unsigned long long)later);
    ck_assert_msg(watched, "the leader never watched the joiner");
    ck_assert_msg(kept > (128u << 10), "at most %llu bytes kept", (unsigned long long)kept);
}
END_TEST

/* The same with a joiner kept no more than a follower: the leader compacts past it and it
 * installs a later snapshot (what the test above counts is the retention's doing). */
START_TEST(a_joiner_kept_no_more_than_a_follower_gets_a_later_snapshot)
{
    uint64_t kept;
    int watched = 0;
    uint64_t later = joiner_behind(156, 128u << 10, &kept, &watched);
    ck_assert_msg(later >= 1, "no later snapshot (%llu bytes kept at most)",
                  (unsigned long long)kept);
}
END_TEST

/* A leader keeps the log a member needs after the snapshots it is sending it (node snapshot.c
 * trailing_for): a grow R2 -> R3 under a publisher (16 KB every 2 ms) with the leader's links to
 * the joiner 40 ms long each way, and snapshots every 10 entries, so the leader takes several
 * snapshots between sending the joiner its first one and hearing that it was installed. Were
 * the entries after it compacted meanwhile, the joiner would be sent another snapshot as soon
 * as it installed the first, and another (the leader switching to each newer one while it
 * waits for the answer), fetching the messages of the entries between them each time (58
 * snapshots here): the leader takes its answer that it installed one the log still follows
 * (raft snapshot.c), so it is sent at most two, and the change converges with the replicas
 * identical. */
START_TEST(a_member_being_sent_a_snapshot_is_kept_the_log_after_it)
{
    e2e c;
    cluster(&c, 3, 161);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 10);
    add_stream(&c, "SENT", 2);
    static char big[16384];
    uint64_t x = 0x7f4a7c159e3779b9ull;
    e2e_res r;
    for (int i = 0; i < 200; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.sent", big, sizeof big, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "SENT", p, 8), 2);
    unsigned joiner = 3 - p[0] - p[1];
    int l = e2e_replica_leader(&c, p[0], "SENT");
    ck_assert_int_ge(l, 0);
    unsigned leader = (unsigned)l;
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.delay_min_ns = link.delay_max_ns = 40 * MS;
    ck_assert_int_eq(jr_sim_set_link(c.sim, leader, joiner, &link), 0);
    ck_assert_int_eq(jr_sim_set_link(c.sim, joiner, leader, &link), 0);
    uint64_t restores0 = e2e_snap_restores(&c, joiner);
    jr_stream_config cfg;
    e2e_config(&cfg, "SENT", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, leader), &cfg, e2e_admin_cb, &up), 0);
    enum { NPUB = 1000 };
    static e2e_res res[NPUB];
    memset(res, 0, sizeof res);
    for (int i = 0; i < NPUB; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(jr_publish(e2e_node(&c, leader), "rep.sent", NULL, 0, big, sizeof big,
                                    NULL, e2e_pub_cb, &res[i]),
                         0);
        jr_sim_run_for(c.sim, 2 * MS);
    }
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    for (int i = 0; i < NPUB; i++) {
        ck_assert_int_eq(e2e_wait(&c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    uint64_t restores = e2e_snap_restores(&c, joiner) - restores0;
    jr_sim_link_init(&link);
    ck_assert_int_eq(jr_sim_set_link(c.sim, leader, joiner, &link), 0);
    ck_assert_int_eq(jr_sim_set_link(c.sim, joiner, leader, &link), 0);
    ck_assert_msg(wait_converged(&c, "SENT", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "SENT", 200 + NPUB);
    /* the first, and at most one newer that the leader sent on its heartbeat before the
     * answer to the first (80 ms away) came */
    ck_assert_msg(restores >= 1 && restores <= 2, "the joiner was sent %llu snapshots",
                  (unsigned long long)restores);
    e2e_free(&c);
}
END_TEST

/* A joiner whose log falls further behind window after window (6 MB/s links into it, a
 * publisher writing 16 MB/s for 1 s) is not kept what it would need: once its lag grew over two
 * election timeouts in a row the leader keeps it no more than a follower (snapshot.c
 * catching_up), so no snapshot of the leader leaves more than about two windows' growth behind
 * it (8 MiB, where the joiner's bound is 64 MiB and it would be kept KEPT_UNRULED); the change
 * converges once the publisher stops, identical. */
START_TEST(a_joiner_that_keeps_falling_behind_is_kept_no_more_than_a_follower)
{
    e2e c;
    cluster(&c, 3, 158);
    for (unsigned i = 0; i < 3; i++) {
        e2e_snapshot_every(&c, i, 10);
        e2e_keep_bytes(&c, i, 128u << 10, 64u << 20);
    }
    add_stream(&c, "BEHIND", 2);
    static char big[16384];
    uint64_t x = 0x2b992ddfa23249d6ull;
    e2e_res r;
    for (int i = 0; i < 500; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.behind", big, sizeof big, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "BEHIND", p, 8), 2);
    unsigned joiner = 3 - p[0] - p[1];
    int l = e2e_replica_leader(&c, p[0], "BEHIND");
    ck_assert_int_ge(l, 0);
    unsigned leader = (unsigned)l;
    slow_links_into(&c, joiner, 6 * 1000 * 1000);
    jr_stream_config cfg;
    e2e_config(&cfg, "BEHIND", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, leader), &cfg, e2e_admin_cb, &up), 0);
    static e2e_res res[2000]; /* one publish every millisecond for 2 s */
    memset(res, 0, sizeof res);
    for (int i = 0; i < 2000; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(jr_publish(e2e_node(&c, leader), "rep.behind", NULL, 0, big, sizeof big,
                                    NULL, e2e_pub_cb, &res[i]),
                         0);
        jr_sim_run_for(c.sim, 1 * MS);
    }
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    for (int i = 0; i < 2000; i++) {
        ck_assert_int_eq(e2e_wait(&c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    ck_assert_msg(wait_converged(&c, "BEHIND", 3, 120 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "BEHIND", 2500);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_msg(e2e_kept_max(&c, i) <= (6u << 20), "n%u kept %llu bytes behind a snapshot", i,
                      (unsigned long long)e2e_kept_max(&c, i));
    e2e_free(&c);
}
END_TEST

/* A joiner behind links too slow for the largest catch-up answer to arrive within its
 * request's timeout (3 MB/s: a 1 MiB chunk takes 350 ms, the timeout is 300 ms) asks for less
 * after each timeout (catchup.c "Request size") and completes its copy; asking for the most
 * every time, it would time out forever. Idle group: nothing but the copy crosses the links. */
START_TEST(a_joiner_behind_a_slow_link_asks_for_less_until_answers_arrive_in_time)
{
    e2e c;
    cluster(&c, 3, 159);
    add_stream(&c, "SLOW", 2);
    static char big[16384];
    uint64_t x = 0x6a09e667f3bcc908ull;
    e2e_res r;
    for (int i = 0; i < 600; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.slow", big, sizeof big, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "SLOW", p, 8), 2);
    unsigned joiner = 3 - p[0] - p[1];
    int l = e2e_replica_leader(&c, p[0], "SLOW");
    ck_assert_int_ge(l, 0);
    slow_links_into(&c, joiner, 3 * 1000 * 1000);
    jr_stream_config cfg;
    e2e_config(&cfg, "SLOW", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, (unsigned)l), &cfg, e2e_admin_cb, &up), 0);
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    ck_assert_msg(wait_converged(&c, "SLOW", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "SLOW", 600);
    e2e_free(&c);
}
END_TEST

/* The joiner's queue copies nothing its log holds (catchup.c "Queue"): a copy at 12 MB/s under a
 * publisher (16 KB every 2 ms, more than 16 MiB committed during the copy), with the bound on
 * copies at 1 MiB: every entry committed meanwhile passes through the queue, each left in the
 * group's log and applied from there once the messages are in, none copied (no later snapshot
 * replaced the log); the change converges, every publish is acknowledged and the replicas end
 * identical. */
START_TEST(a_joiner_under_a_publisher_queues_its_entries_without_copying_them)
{
    enum { QMAX = 1 << 20 };
    e2e c;
    cluster(&c, 3, 157);
    for (unsigned i = 0; i < 3; i++) {
        e2e_snapshot_every(&c, i, 40);
        e2e_catchup_queue_max(&c, i, QMAX);
    }
    add_stream(&c, "QUEUE", 2);
    static char big[16384];
    uint64_t x = 0x14057b7ef767814full;
    e2e_res r;
    for (int i = 0; i < 2000; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.queue", big, sizeof big, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "QUEUE", p, 8), 2);
    unsigned joiner = 3 - p[0] - p[1];
    slow_links_into(&c, joiner, 12 * 1000 * 1000);
    uint64_t b0, t0, o0;
    e2e_catchup_drain(&c, joiner, &b0, &t0, &o0);
    uint64_t in0 = e2e_catchup_in_log(&c, joiner), later0 = e2e_catchup_later(&c, joiner);
    ck_assert_uint_eq(e2e_catchup_queue_peak(&c, joiner), 0);
    jr_stream_config cfg;
    e2e_config(&cfg, "QUEUE", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, p[0]), &cfg, e2e_admin_cb, &up), 0);
    static e2e_res res[1500];
    memset(res, 0, sizeof res);
    for (int i = 0; i < 1500; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(jr_publish(e2e_node(&c, p[0]), "rep.queue", NULL, 0, big, sizeof big, NULL,
                                    e2e_pub_cb, &res[i]),
                         0);
        jr_sim_run_for(c.sim, 2 * MS);
    }
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    for (int i = 0; i < 1500; i++) {
        ck_assert_int_eq(e2e_wait(&c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    ck_assert_msg(wait_converged(&c, "QUEUE", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "QUEUE", 3500);
    uint64_t bytes, turns, over;
    e2e_catchup_drain(&c, joiner, &bytes, &turns, &over);
    bytes -= b0;
    uint64_t in_log = e2e_catchup_in_log(&c, joiner) - in0;
    uint64_t peak = e2e_catchup_queue_peak(&c, joiner);
    ck_assert_uint_eq(e2e_catchup_later(&c, joiner), later0);
    ck_assert_msg(in_log == bytes, "%llu of the %llu bytes queued were left in the log",
                  (unsigned long long)in_log, (unsigned long long)bytes);
    ck_assert_msg(peak == 0, "the queue copied %llu bytes", (unsigned long long)peak);
    ck_assert_msg(bytes > 8ull * QMAX, "only %llu bytes passed through the queue",
                  (unsigned long long)bytes);
    e2e_free(&c);
}
END_TEST

/* Bounds of a joiner from the public node config (jr_node_config catchup_*_bytes, keep_bytes,
 * join_keep_bytes), small enough for a short test to reach them. */
enum {
    BOUND_QUEUE = 1 << 20,
    BOUND_LOG = 2 << 20,
    BOUND_KEEP = 1 << 20,
    BOUND_JOIN_KEEP = 4 << 20,
};
static void small_bounds(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    (void)i;
    cfg->catchup_queue_bytes = BOUND_QUEUE;
    cfg->catchup_log_bytes = BOUND_LOG;
    cfg->keep_bytes = BOUND_KEEP;
    cfg->join_keep_bytes = BOUND_JOIN_KEEP;
}

/* The joiner's Raft log is bounded (catchup.c "Log", replication.c "Capped observers"): a grow
 * R2 -> R3 under a publisher writing 16 KB every 2 ms while the joiner copies 32 MB over 12 MB/s
 * links, with the bounds configured small. Its log never holds more than its bound (2 MiB) plus
 * one entry — without the cap it would hold every entry committed during the copy, more than 20
 * MB — nor its queue more than its own and what it took from the log before a later snapshot
 * (the log's cap shrinking by as much); it drops what its leader sends beyond, the leader
 * compacts past it and it installs later snapshots, each restored after the entries queued
 * before it (none dropped to be fetched again), every publish is acknowledged meanwhile
 * (the group's commits never wait for it), and once the publisher stops it becomes current with
 * the replicas identical. With `crash`, the joiner's server crashes once its copy is under way
 * and restarts 200 ms later: its catch-up resumes from the restore of its snapshot while its
 * group is being opened, and its log is bounded in its new life too. */
static void joiner_log_bound(uint64_t seed_base, int crash)
{
    /* one entry: a publish of 16 KB with its framing, or a batch of the publishes a hold kept
     * back (js/hold.c: at most 512 KiB of ops, stream_replica.c BATCH_MAX_BYTES) */
    enum { SLACK = (512 + 64) << 10 };
    e2e c;
    memset(&c, 0, sizeof c);
    c.configure_more = small_bounds;
    uint64_t seed = seed_of(seed_base);
    ck_assert_msg(e2e_new(&c, 3, seed, 3000) == 0, "seed %llu", (unsigned long long)seed);
    fprintf(stderr, "cluster of 3, seed %llu (replay: JR_SEED_OFFSET)\n", (unsigned long long)seed);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 30 * SEC), 0);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 40);
    add_stream(&c, "LOGCAP", 2);
    static char big[16384];
    uint64_t x = 0x3c6ef372fe94f82bull ^ seed_base;
    e2e_res r;
    for (int i = 0; i < 2000; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.logcap", big, sizeof big, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "LOGCAP", p, 8), 2);
    unsigned joiner = 3 - p[0] - p[1];
    int l = e2e_replica_leader(&c, p[0], "LOGCAP");
    ck_assert_int_ge(l, 0);
    unsigned leader = (unsigned)l;
    slow_links_into(&c, joiner, 12 * 1000 * 1000);
    uint64_t later0 = e2e_catchup_later(&c, joiner);
    jr_stream_config cfg;
    e2e_config(&cfg, "LOGCAP", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, leader), &cfg, e2e_admin_cb, &up), 0);
    static e2e_res res[1500];
    memset(res, 0, sizeof res);
    uint64_t peak = 0, drops = 0, top = 0;
    int crashed = -1;
    for (int i = 0; i < 1500; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(jr_publish(e2e_node(&c, leader), "rep.logcap", NULL, 0, big, sizeof big,
                                    NULL, e2e_pub_cb, &res[i]),
                         0);
        jr_sim_run_for(c.sim, 2 * MS);
        if (crash && crashed < 0 && e2e_catchup_phase(&c, joiner, "LOGCAP") == E2E_CU_FETCHING &&
            e2e_catchup_chunks(&c, joiner) >= 3) {
            crashed = i;
            later0 = 0; /* counters start again with its new life */
            ck_assert_int_eq(jr_sim_crash(c.sim, joiner), 0);
        }
        if (crashed >= 0 && i == crashed + 100) {
            ck_assert_int_eq(e2e_restart(&c, joiner), 0);
            top = 0; /* its new life's */
        }
        if (e2e_capped_log(&c, joiner, "LOGCAP", &peak, &drops) == 0 && peak > top) top = peak;
    }
    ck_assert_msg(!crash || crashed >= 0, "the joiner's copy was never seen under way");
    /* every publish is acknowledged: the group's commits never wait for the joiner, though its
     * leader holds its publishes back for a while once the group outran the joiner's copy
     * (js/hold.c), each hold bounded by half the request timeout */
    for (int i = 0; i < 1500; i++) {
        ck_assert_int_eq(e2e_wait(&c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    ck_assert_msg(wait_converged(&c, "LOGCAP", 3, 120 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "LOGCAP", 3500);
    ck_assert_int_eq(e2e_capped_log(&c, joiner, "LOGCAP", &peak, &drops), 0);
    if (peak > top) top = peak;
    uint64_t qpeak = e2e_catchup_queue_peak(&c, joiner);
    uint64_t later = e2e_catchup_later(&c, joiner) - later0;
    uint64_t dropped = e2e_catchup_dropped(&c, joiner), taken = e2e_catchup_taken(&c, joiner);
    fprintf(stderr,
            "joiner n%u: log peak %llu, %llu appends dropped, queue peak %llu, %llu later, %llu "
            "queued bytes dropped, %llu taken from the log, %llu bytes fetched\n",
            joiner, (unsigned long long)top, (unsigned long long)drops, (unsigned long long)qpeak,
            (unsigned long long)later, (unsigned long long)dropped, (unsigned long long)taken,
            (unsigned long long)e2e_catchup_bytes(&c, joiner));
    /* Reached in full, without a restart. The new life of a restarted joiner may begin with
     * its queue past its own bound (what it took from the log before a later snapshot), which
     * lowers its log's cap by as much (catchup.c cap_log): there the refused APPENDs below show
     * the cap was reached. */
    ck_assert_msg(crash || top >= BOUND_LOG, "the log never reached its bound (%llu bytes)",
                  (unsigned long long)top);
    ck_assert_msg(top <= BOUND_LOG + SLACK, "the joiner's log held %llu bytes",
                  (unsigned long long)top);
    ck_assert_msg(drops >= 1, "nothing sent to the joiner was refused");
    /* the queue's bound, and what it took from the log before a later snapshot: the log's cap
     * shrank by as much (catchup.c cap_log), each bound reached by one entry at most */
    ck_assert_msg(qpeak <= BOUND_QUEUE + BOUND_LOG + 2 * SLACK, "the queue held %llu bytes",
                  (unsigned long long)qpeak);
    ck_assert_msg(later >= 1, "the leader never compacted past the joiner");
    /* each later snapshot is restored after the entries queued before it: none is dropped to
     * be fetched again */
    ck_assert_msg(dropped == 0, "%llu queued bytes dropped", (unsigned long long)dropped);
    /* the entries in its log when a later snapshot came (queued and left there, or waiting)
     * were copied into the queue, not fetched */
    ck_assert_msg(taken > 0, "no entry waiting in the log was queued before a later snapshot");
    e2e_free(&c);
}

START_TEST(a_joiner_under_a_publisher_holds_its_log_within_its_bound)
{
    joiner_log_bound(159, 0);
}
END_TEST

/* 1 if the committed configuration of stream `name`'s group on server i has `n` members, all
 * voters, and i's meta state has no peer change of it in progress. */
static int grown_to(e2e *c, unsigned i, const char *name, int n)
{
    unsigned m[16];
    int v[16];
    int k = e2e_members(c, i, name, m, v, 16);
    for (int j = 0; j < k; j++)
        if (!v[j]) return 0;
    return k == n && e2e_meta_busy(c, i, name) == 0;
}

/* A cluster of 3 with the small bounds, a request timeout of timeout_ms and snapshots every 40
 * entries, and stream `name` (R2, subjects rep.>) holding 2,000 messages of `len` bytes from
 * *x's generator published to `subject`: *leader leads it, *follower is its other replica, and
 * the server left out is returned (the joiner of a grow to R3). */
static unsigned r2_filled(e2e *c, uint64_t seed_base, uint32_t timeout_ms, const char *name,
                          const char *subject, char *big, size_t len, uint64_t *x, unsigned *leader,
                          unsigned *follower)
{
    memset(c, 0, sizeof *c);
    c->configure_more = small_bounds;
    uint64_t seed = seed_of(seed_base);
    ck_assert_msg(e2e_new(c, 3, seed, timeout_ms) == 0, "seed %llu", (unsigned long long)seed);
    fprintf(stderr, "cluster of 3, seed %llu (replay: JR_SEED_OFFSET)\n", (unsigned long long)seed);
    ck_assert_int_ge(e2e_wait_meta(c, 3, 30 * SEC), 0);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(c, i, 40);
    add_stream(c, name, 2);
    e2e_res r;
    for (int i = 0; i < 2000; i++) {
        fill_random(big, len, x);
        ck_assert_int_eq(e2e_publish(c, 0, subject, big, len, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(c, 0, name, p, 8), 2);
    int l = e2e_replica_leader(c, p[0], name);
    ck_assert_int_ge(l, 0);
    *leader = (unsigned)l;
    *follower = p[0] + p[1] - *leader;
    return 3 - p[0] - p[1];
}

/* A grow whose copy the group outruns converges while the publisher goes on (js/hold.c): R2 ->
 * R3 under a publisher that does not stop, 16 KB every 2 ms (8 MB/s), while the joiner copies
 * 32 MB from the follower over a 12 MB/s link, with the bounds configured small (keep_bytes 1
 * MiB) and a request timeout of 6 s (a hold lasts at most 3 s). The group outruns the copy and
 * sends the joiner a later snapshot; from then on its leader admits publishes only while the
 * joiner trails it by less than half of keep_bytes, so the copy completes, the joiner takes
 * entries again and is promoted while the publisher still runs, after at most two later
 * snapshots, every publish acknowledged (seeds 162-165: one later snapshot, promoted after 3.0 s
 * of publishing, 2.3 s of it held). Without the holds the joiner installs a later snapshot
 * every quarter second or so and fetches what each one's entries held again (17-18 of them
 * at the same seeds, promoted after 6.5 s); with a copy slower than the publisher it would
 * never converge. */
START_TEST(a_grow_the_group_outruns_converges_under_a_publisher_that_never_stops)
{
    enum { MAX = 10000 }; /* 20 s of publishing */
    e2e c;
    static char big[16384];
    uint64_t x = 0x6a09e667bb67ae85ull;
    unsigned leader, follower;
    unsigned joiner =
        r2_filled(&c, 162, 6000, "OUTRUN", "rep.outrun", big, sizeof big, &x, &leader, &follower);
    jr_sim_link link; /* the copy's source is the follower: only its link is slow */
    jr_sim_link_init(&link);
    link.bytes_per_sec = 12 * 1000 * 1000;
    ck_assert_int_eq(jr_sim_set_link(c.sim, follower, joiner, &link), 0);
    uint64_t later0 = e2e_catchup_later(&c, joiner), holds0, held0, giveups0;
    e2e_catchup_holds(&c, leader, &holds0, &held0, &giveups0);
    jr_stream_config cfg;
    e2e_config(&cfg, "OUTRUN", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, leader), &cfg, e2e_admin_cb, &up), 0);
    static e2e_res res[MAX], info;
    memset(res, 0, sizeof res);
    memset(&info, 0, sizeof info);
    info.done = 1;
    int n = 0, grown = 0, paced_shown = 0;
    while (n < MAX && !grown) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(jr_publish(e2e_node(&c, leader), "rep.outrun", NULL, 0, big, sizeof big,
                                    NULL, e2e_pub_cb, &res[n]),
                         0);
        n++;
        jr_sim_run_for(c.sim, 2 * MS);
        if (n % 50 == 0) grown = grown_to(&c, leader, "OUTRUN", 3);
        /* the move's status says why the publishers slow down */
        if (n % 25 == 0 && info.done) {
            if (info.status == 0 && strstr(info.text, "publishes are paced to its copy"))
                paced_shown = 1;
            memset(&info, 0, sizeof info);
            ck_assert_int_eq(jr_stream_info_get(e2e_node(&c, leader), "OUTRUN", e2e_info_cb, &info),
                             0);
        }
    }
    uint64_t later = e2e_catchup_later(&c, joiner) - later0, holds, held, giveups;
    e2e_catchup_holds(&c, leader, &holds, &held, &giveups);
    fprintf(stderr,
            "joiner n%u: %s after %d publishes (%.1f s), %llu later snapshots; leader n%u: %llu "
            "holds, %.3f s held, %llu given up\n",
            joiner, grown ? "promoted" : "not promoted", n, n * 0.002, (unsigned long long)later,
            leader, (unsigned long long)(holds - holds0), (double)(held - held0) / 1e9,
            (unsigned long long)(giveups - giveups0));
    ck_assert_msg(grown, "not grown to three voters after %d publishes (%llu later snapshots)", n,
                  (unsigned long long)later);
    ck_assert_msg(later >= 1, "the group never outran the copy: the test shows nothing");
    ck_assert_msg(later <= 2, "%llu later snapshots", (unsigned long long)later);
    ck_assert_msg(holds > holds0, "the leader never held its publishes");
    ck_assert_msg(giveups == giveups0, "a hold gave the copy up");
    ck_assert_msg(paced_shown, "stream info never said the publishes were paced to the copy");
    ck_assert_int_eq(e2e_wait(&c, &info, 30 * SEC), 0);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(e2e_wait(&c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    ck_assert_int_eq(e2e_wait(&c, &up, 30 * SEC), 0);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    ck_assert_msg(wait_converged(&c, "OUTRUN", 3, 60 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(&c, "OUTRUN", (uint64_t)(2000 + n));
    e2e_free(&c);
}
END_TEST

START_TEST(a_joiner_restarted_mid_copy_holds_its_log_within_its_bound)
{
    joiner_log_bound(160, 1);
}
END_TEST

/* Publishes n messages of len bytes from *x's generator through `leader` to `subject`, one every 2
 * ms, answers into res[0..n); returns the longest any of them waited for its acknowledgement,
 * among those acknowledged in order before the last was made. */
static uint64_t publish_every_2ms(e2e *c, unsigned leader, const char *subject, char *big,
                                  size_t len, uint64_t *x, e2e_res *res, uint64_t *sent_at, int n)
{
    uint64_t worst = 0;
    int acked = 0; /* publishes before it were seen acknowledged, in order */
    for (int i = 0; i < n; i++) {
        fill_random(big, len, x);
        sent_at[i] = jr_sim_now(c->sim);
        ck_assert_int_eq(
            jr_publish(e2e_node(c, leader), subject, NULL, 0, big, len, NULL, e2e_pub_cb, &res[i]),
            0);
        jr_sim_run_for(c->sim, 2 * MS);
        for (; acked <= i && res[acked].done; acked++) {
            uint64_t waited = jr_sim_now(c->sim) - sent_at[acked];
            if (waited > worst) worst = waited;
        }
    }
    return worst;
}

/* Every one of res[0..n) acknowledged, the update `up` answered, stream `name` converged to R3
 * with `msgs` messages on identical replicas. */
static void acked_and_converged(e2e *c, e2e_res *res, int n, e2e_res *up, const char *name,
                                uint64_t msgs)
{
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(e2e_wait(c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    ck_assert_int_eq(e2e_wait(c, up, 30 * SEC), 0);
    ck_assert_msg(up->status == 0, "update: %s", up->msg);
    ck_assert_msg(wait_converged(c, name, 3, 120 * SEC) >= 0, "not converged: %s", g_why);
    check_identical(c, name, msgs);
}

/* The bounds of the holds (js/hold.c): a grow R2 -> R3 whose joiner copies 32 MB over 6 MB/s
 * links (its leader's too) under a publisher of 8 MB/s that never stops, with a request timeout of
 * 3 s. The copy cannot keep up: the holds after a later snapshot give up once a publish waited half
 * the request timeout, and after two give-ups the leader holds no more for that joiner. No publish
 * waits longer than that bound and a little (the round trips around it), every one is
 * acknowledged, and the change converges once the publisher stops. */
START_TEST(holds_for_a_copy_that_cannot_keep_up_are_bounded_and_given_up)
{
    enum { N = 6000 }; /* 12 s of publishing */
    e2e c;
    static char big[16384];
    uint64_t x = 0x3c6ef372a54ff53aull;
    unsigned leader, follower;
    unsigned joiner = r2_filled(&c, 166, 3000, "SLOWCOPY", "rep.slowcopy", big, sizeof big, &x,
                                &leader, &follower);
    (void)follower;
    slow_links_into(&c, joiner, 6 * 1000 * 1000);
    uint64_t holds0, held0, giveups0;
    e2e_catchup_holds(&c, leader, &holds0, &held0, &giveups0);
    jr_stream_config cfg;
    e2e_config(&cfg, "SLOWCOPY", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, leader), &cfg, e2e_admin_cb, &up), 0);
    static e2e_res res[N];
    static uint64_t sent_at[N];
    memset(res, 0, sizeof res);
    uint64_t worst =
        publish_every_2ms(&c, leader, "rep.slowcopy", big, sizeof big, &x, res, sent_at, N);
    uint64_t holds, held, giveups;
    e2e_catchup_holds(&c, leader, &holds, &held, &giveups);
    fprintf(stderr,
            "leader n%u: %llu holds, %.3f s held, %llu given up; slowest acknowledgement %.3f "
            "s\n",
            leader, (unsigned long long)(holds - holds0), (double)(held - held0) / 1e9,
            (unsigned long long)(giveups - giveups0), (double)worst / 1e9);
    ck_assert_msg(holds > holds0, "the leader never held its publishes");
    ck_assert_msg(giveups > giveups0, "the holds never gave the copy up");
    ck_assert_msg(giveups - giveups0 <= 2, "%llu give-ups, at most two on one joiner",
                  (unsigned long long)(giveups - giveups0));
    ck_assert_msg(worst <= 1500 * MS + 200 * MS, "a publish waited %.3f s", (double)worst / 1e9);
    acked_and_converged(&c, res, N, &up, "SLOWCOPY", 2000 + N);
    e2e_free(&c);
}
END_TEST

/* A leader deposed while a hold keeps ops staged (js/hold.c) answers them at once: they never
 * reached its log, so they are refused (JR_ENOTLEADER, which the publisher's server takes to the
 * next leader, here none within the request timeout: JR_ENOQUORUM) rather than wait staged — to be
 * proposed, were it to lead again, long after their requesters gave up. The setup of the bounds
 * test (6 MB/s links into the joiner, an 8 MB/s publisher); once five or more publishes are held,
 * the leader is cut off from its other voter (not from the joiner) and steps down. Then it stages
 * nothing, some publishes were refused, and within the request timeout every publish has its
 * answer; once healed, leadership goes back to the
 * old leader, and its store holds no more messages than were acknowledged or lost with their
 * leader (of unknown outcome) — none that was refused. */
START_TEST(a_leader_deposed_while_holding_answers_the_held_ops_at_once)
{
    enum { N = 6000 };
    e2e c;
    static char big[16384];
    uint64_t x = 0x510e527fade682d1ull;
    unsigned leader, follower;
    unsigned joiner =
        r2_filled(&c, 167, 3000, "DEPOSED", "rep.deposed", big, sizeof big, &x, &leader, &follower);
    slow_links_into(&c, joiner, 6 * 1000 * 1000);
    jr_stream_config cfg;
    e2e_config(&cfg, "DEPOSED", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, leader), &cfg, e2e_admin_cb, &up), 0);
    static e2e_res res[N];
    memset(res, 0, sizeof res);
    int n = 0, holding = 0;
    uint32_t staged = 0;
    while (n < N && !(holding && staged >= 5)) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(jr_publish(e2e_node(&c, leader), "rep.deposed", NULL, 0, big, sizeof big,
                                    NULL, e2e_pub_cb, &res[n]),
                         0);
        n++;
        jr_sim_run_for(c.sim, 2 * MS);
        ck_assert_int_eq(e2e_stage(&c, leader, "DEPOSED", &staged, &holding), 0);
    }
    ck_assert_msg(holding && staged >= 5, "no hold kept five publishes staged in %d", n);
    /* cut off from its only other voter, it steps down within an election timeout while the
     * joiner, still in contact, keeps the ops held */
    ck_assert_int_eq(jr_sim_cut(c.sim, leader, follower), 0);
    ck_assert_int_eq(jr_sim_cut(c.sim, follower, leader), 0);
    int stepped = 0;
    for (int t = 0; t < 100 && !stepped; t++) {
        jr_sim_run_for(c.sim, 10 * MS);
        stepped = e2e_replica_leader(&c, leader, "DEPOSED") != (int)leader;
    }
    ck_assert_msg(stepped, "the cut-off leader did not step down");
    jr_sim_run_for(c.sim, 10 * MS);
    ck_assert_int_eq(e2e_stage(&c, leader, "DEPOSED", &staged, &holding), 0);
    ck_assert_msg(staged == 0 && !holding, "the deposed leader still holds %u ops", staged);
    jr_sim_run_for(c.sim, 3500 * MS); /* what it proposed resolves by its deadline */
    int ok = 0, refused = 0, lost = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_msg(res[i].done, "publish %d has no answer after its request timeout", i);
        if (res[i].status == 0)
            ok++;
        else if (res[i].status == JR_ENOQUORUM)
            refused++; /* refused, then no leader took it in time: it reached no log */
        else if (res[i].status == JR_ELEADERLOST || res[i].status == JR_ETIMEDOUT)
            lost++;
        else
            ck_abort_msg("publish %d: %s", i, res[i].msg);
    }
    fprintf(stderr, "after the cut: %d acknowledged, %d refused, %d lost with the leader\n", ok,
            refused, lost);
    ck_assert_msg(refused >= 1, "no publish refused as not leader: none was held at the cut");
    jr_sim_heal(c.sim);
    int now = -1;
    for (int t = 0; t < 100 && now < 0; t++) {
        jr_sim_run_for(c.sim, 100 * MS);
        now = e2e_replica_leader(&c, follower, "DEPOSED");
    }
    ck_assert_int_ge(now, 0);
    if ((unsigned)now != leader) {
        e2e_res back;
        ck_assert_int_eq(
            e2e_stepdown(&c, (unsigned)now, "DEPOSED", jr_sim_name(c.sim, leader), &back), 0);
    }
    jr_sim_run_for(c.sim, 5 * SEC);
    e2e_res in;
    ck_assert_int_eq(e2e_info(&c, leader, "DEPOSED", &in), 0);
    ck_assert_msg(in.state.msgs >= (uint64_t)(2000 + ok) &&
                      in.state.msgs <= (uint64_t)(2000 + ok + lost),
                  "%llu messages: %d acknowledged, %d lost with their leader, %d refused",
                  (unsigned long long)in.state.msgs, ok, lost, refused);
    e2e_free(&c);
}
END_TEST

/* Two joiners at once (R1 -> R3, both copying over 6 MB/s links under an 8 MB/s publisher,
 * request timeout 3 s): the holds keep each joiner's state apart (js/hold.c), so a later
 * snapshot arms them at most once (seed 170: 19 times for 28 later snapshots), each joiner is
 * given up at most twice, and no publish waits longer than the bound on one op (half the request
 * timeout) and the round trips around it. The change converges over the same links: their
 * capped logs full, the joiners drop their leader's probes, which it sends again after one
 * heartbeat tick, two, four, then every fourth (raft/replication.c), so the probes, a whole
 * entry each, leave room on the links for the joiners' catch-up answers. */
START_TEST(holds_for_two_joiners_keep_each_ones_state)
{
    enum { N = 6000 };
    e2e c;
    memset(&c, 0, sizeof c);
    c.configure_more = small_bounds;
    uint64_t seed = seed_of(170);
    ck_assert_msg(e2e_new(&c, 3, seed, 3000) == 0, "seed %llu", (unsigned long long)seed);
    fprintf(stderr, "cluster of 3, seed %llu (replay: JR_SEED_OFFSET)\n", (unsigned long long)seed);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 30 * SEC), 0);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 40);
    add_stream(&c, "TWO", 1);
    static char big[16384];
    uint64_t x = 0x9b05688c2b3e6c1full;
    e2e_res r;
    for (int i = 0; i < 2000; i++) {
        fill_random(big, sizeof big, &x);
        ck_assert_int_eq(e2e_publish(&c, 0, "rep.two", big, sizeof big, NULL, &r), 0);
    }
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "TWO", p, 8), 1);
    unsigned leader = p[0];
    for (unsigned j = 0; j < 3; j++)
        if (j != leader) slow_links_into(&c, j, 6 * 1000 * 1000);
    uint64_t holds0, held0, giveups0, arms0 = e2e_catchup_hold_arms(&c, leader);
    e2e_catchup_holds(&c, leader, &holds0, &held0, &giveups0);
    jr_stream_config cfg;
    e2e_config(&cfg, "TWO", subj, 1, 3);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, leader), &cfg, e2e_admin_cb, &up), 0);
    static e2e_res res[N];
    static uint64_t sent_at[N];
    memset(res, 0, sizeof res);
    uint64_t worst = publish_every_2ms(&c, leader, "rep.two", big, sizeof big, &x, res, sent_at, N);
    uint64_t holds, held, giveups, arms = e2e_catchup_hold_arms(&c, leader) - arms0;
    uint64_t later = e2e_leader_later_snaps(&c, leader, "TWO");
    e2e_catchup_holds(&c, leader, &holds, &held, &giveups);
    fprintf(stderr,
            "leader n%u: %llu holds, %.3f s held, %llu given up, armed %llu times for %llu later "
            "snapshots; slowest acknowledgement %.3f s\n",
            leader, (unsigned long long)(holds - holds0), (double)(held - held0) / 1e9,
            (unsigned long long)(giveups - giveups0), (unsigned long long)arms,
            (unsigned long long)later, (double)worst / 1e9);
    ck_assert_msg(arms >= 1, "the holds were never armed: the test shows nothing");
    ck_assert_msg(arms <= later, "armed %llu times for %llu later snapshots",
                  (unsigned long long)arms, (unsigned long long)later);
    ck_assert_msg(giveups - giveups0 <= 4, "%llu give-ups, at most two on each joiner",
                  (unsigned long long)(giveups - giveups0));
    ck_assert_msg(worst <= 1500 * MS + 200 * MS, "a publish waited %.3f s", (double)worst / 1e9);
    acked_and_converged(&c, res, N, &up, "TWO", 2000 + N);
    e2e_free(&c);
}
END_TEST

static void frames_of_1mib(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    (void)i;
    cfg->max_frame_bytes = 1u << 20;
}

/* A node with small frames makes small entries (max_msg_bytes half a frame): a burst of 4,000
 * publishes of 130 bytes, staged together, is proposed in BATCH entries that fit them (js
 * stream_replica.c batch_bytes), every publish acknowledged. */
START_TEST(a_burst_on_a_node_with_small_frames_fits_its_batches_to_its_entries)
{
    enum { N = 4000 };
    e2e c;
    memset(&c, 0, sizeof c);
    c.configure_more = frames_of_1mib;
    uint64_t seed = seed_of(171);
    ck_assert_msg(e2e_new(&c, 3, seed, 3000) == 0, "seed %llu", (unsigned long long)seed);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 30 * SEC), 0);
    add_stream(&c, "SMALLF", 1);
    unsigned p[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "SMALLF", p, 8), 1);
    e2e_res r;
    ck_assert_int_eq(e2e_publish(&c, p[0], "rep.f", "x", 1, NULL, &r), 0);
    static e2e_res res[N];
    memset(res, 0, sizeof res);
    static char msg[130];
    memset(msg, 'm', sizeof msg);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(jr_publish(e2e_node(&c, p[0]), "rep.f", NULL, 0, msg, sizeof msg, NULL,
                                    e2e_pub_cb, &res[i]),
                         0);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(e2e_wait(&c, &res[i], 30 * SEC), 0);
        ck_assert_msg(res[i].status == 0, "publish %d: %s", i, res[i].msg);
    }
    e2e_free(&c);
}
END_TEST

/* The first node (by index) whose meta state has stream `name`, or -1. */
static int first_knowing(e2e *c, const char *name)
{
    for (unsigned i = 0; i < c->n; i++)
        if (alive(c, i) && e2e_meta_has(c, i, name)) return (int)i;
    return -1;
}

/* An R1 stream whose only server crashes before it created the stream's group, grown to R3
 * while that server is down: back up, it applies the creation and the change at once. It is
 * an original peer the change keeps, so it bootstraps the group with the creation's peer set
 * (as it would have, had it been up) and leads it to the new one; joining instead would wait
 * for a leader that never comes (nobody else ever held the group). */
START_TEST(an_original_peer_that_missed_the_creation_bootstraps_after_a_change)
{
    /* The schedule needs a placed server that had not applied the creation when another one
     * had: not so when the meta leader placed the stream on itself, so the seeds after the
     * test's are tried until one places it elsewhere. */
    e2e c;
    e2e_res r; /* outlives each cluster tried: its answer may come when the cluster is freed */
    unsigned only = 0;
    int found = 0;
    for (uint64_t seed = 83; seed < 83 + 16 && !found; seed++) {
        cluster(&c, 3, seed);
        jr_stream_config cfg;
        e2e_config(&cfg, "ORPH", subj, 1, 1);
        memset(&r, 0, sizeof r);
        ck_assert_int_eq(jr_stream_add(e2e_node(&c, 0), &cfg, e2e_admin_cb, &r), 0);
        int k = -1;
        for (int steps = 0; steps < 1000000 && k < 0; steps++) {
            ck_assert_int_eq(jr_sim_step(c.sim), 1);
            k = first_knowing(&c, "ORPH");
        }
        ck_assert_int_ge(k, 0);
        unsigned p[4];
        ck_assert_int_eq(e2e_meta_peers(&c, (unsigned)k, "ORPH", p, 4), 1);
        only = p[0];
        found = !e2e_has_replica(&c, only, "ORPH");
        if (!found) e2e_free(&c);
    }
    ck_assert_msg(found, "every seed tried placed the stream on the meta leader");
    ck_assert_int_eq(jr_sim_crash(c.sim, only), 0);
    unsigned via = (only + 1) % 3;
    e2e_res u;
    ck_assert_int_eq(set_replicas(&c, via, "ORPH", 3, &u), 0);
    ck_assert_msg(u.status == 0, "grow: %s", u.msg);
    jr_sim_run_for(c.sim, 500 * MS);
    ck_assert_int_eq(e2e_restart(&c, only), 0);
    ck_assert_msg(wait_converged(&c, "ORPH", 3, 30 * SEC) == 0, "not converged: %s", g_why);
    ck_assert_int_ge(e2e_wait_stream(&c, via, "ORPH", 2, 30 * SEC), 0);
    e2e_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_replicas");
    TCase *tc = tcase_create("replicas");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, r1_to_r3_with_data_catches_up_from_a_snapshot);
    tcase_add_test(tc, r3_to_r1_hands_over_when_the_leader_is_removed);
    tcase_add_test(tc, r3_to_r5_under_publish_load_loses_and_fails_nothing);
    tcase_add_test(tc, r5_to_r3);
    tcase_add_test(tc, a_meta_leader_crash_mid_change_does_not_stop_it);
    tcase_add_test(tc, a_joining_replica_crashing_mid_catch_up_resumes);
    tcase_add_test(tc, a_second_change_while_one_converges_is_ebusy);
    tcase_add_test(tc, an_impossible_grow_changes_nothing);
    tcase_add_test(tc, removed_servers_that_were_down_release_on_restart);
    tcase_add_test(tc,
                   removed_servers_that_were_down_reopen_the_consumer_until_the_change_converged);
    tcase_add_test(tc, a_consumer_grown_onto_a_server_that_was_down_takes_it_in_once_it_is_back);
    tcase_add_test(tc, a_stream_leader_crash_mid_change_resumes_under_the_next);
    tcase_add_test(tc, r3_to_r1_under_load_removing_the_leader_fails_no_publish);
    tcase_add_test(tc, a_shrink_removes_the_sick_follower_not_the_healthy_one);
    tcase_add_test(tc, a_shrink_does_not_count_members_whose_writes_fail);
    tcase_add_test(tc, a_joining_replica_is_not_current_before_its_store_is_complete);
    tcase_add_test(tc, a_joining_replica_lag_counts_the_messages_it_still_copies);
    tcase_add_test(tc, a_shrink_before_the_first_leader_completes_when_the_dropped_peer_returns);
    tcase_add_test(tc,
                   a_shrink_before_the_first_leader_completes_when_the_cut_off_dropped_peer_heals);
    tcase_add_test(tc, a_move_to_other_tags_replaces_the_peers_that_do_not_fit);
    tcase_add_test(tc, random_replica_changes_under_faults);
    tcase_add_test(tc, a_joiner_whose_source_removes_snapshot_messages_ends_identical);
    tcase_add_test(tc, a_joiner_under_a_publisher_applies_its_queue_in_bounded_batches);
    tcase_add_test(tc, a_snapshot_installed_while_restoring_is_restored_after_the_queue);
    tcase_add_test(tc, an_original_peer_that_missed_the_creation_bootstraps_after_a_change);
    suite_add_tcase(s, tc);
    TCase *pace = tcase_create("pacing"); /* catchup.c "Pacing" */
    tcase_set_timeout(pace, 300);
    tcase_add_test(pace, a_joiner_under_a_publisher_paces_its_copy_and_still_converges);
    tcase_add_test(pace, a_move_under_a_publisher_paces_the_replacement_and_converges);
    tcase_add_test(pace, a_copy_slower_than_the_group_commits_is_not_paused);
    tcase_add_test(pace, a_joiner_of_an_idle_group_copies_without_pauses);
    suite_add_tcase(s, pace);
    TCase *keep = tcase_create("retention"); /* snapshot.c trailing_for, catchup.c "Queue" */
    tcase_set_timeout(keep, 300);
    tcase_add_test(keep, a_joiner_that_falls_behind_is_kept_the_log_it_needs);
    tcase_add_test(keep, a_joiner_kept_no_more_than_a_follower_gets_a_later_snapshot);
    tcase_add_test(keep, a_member_being_sent_a_snapshot_is_kept_the_log_after_it);
    tcase_add_test(keep, a_joiner_that_keeps_falling_behind_is_kept_no_more_than_a_follower);
    tcase_add_test(keep, a_joiner_behind_a_slow_link_asks_for_less_until_answers_arrive_in_time);
    tcase_add_test(keep, a_joiner_under_a_publisher_queues_its_entries_without_copying_them);
    tcase_add_test(keep, a_joiner_under_a_publisher_holds_its_log_within_its_bound);
    tcase_add_test(keep, a_joiner_restarted_mid_copy_holds_its_log_within_its_bound);
    suite_add_tcase(s, keep);
    TCase *hold = tcase_create("outrun"); /* js/hold.c */
    tcase_set_timeout(hold, 300);
    tcase_add_test(hold, a_grow_the_group_outruns_converges_under_a_publisher_that_never_stops);
    tcase_add_test(hold, holds_for_a_copy_that_cannot_keep_up_are_bounded_and_given_up);
    tcase_add_test(hold, a_leader_deposed_while_holding_answers_the_held_ops_at_once);
    tcase_add_test(hold, holds_for_two_joiners_keep_each_ones_state);
    tcase_add_test(hold, a_burst_on_a_node_with_small_frames_fits_its_batches_to_its_entries);
    suite_add_tcase(s, hold);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
