/*
 * Servers joining and leaving a running cluster (jr_node_config.join, jr_server_peer_remove),
 * end to end over the simulated cluster, with a publisher and a pull consumer running
 * throughout:
 *
 *   - a fourth server joins a running three-server cluster: it becomes a voter of the meta
 *     group and a placement target; ORDERS grows R3 -> R4 onto it with the new replica's lag
 *     counting down in stream info; an original peer killed mid catch-up costs no write;
 *   - a new stream is placed on the new server when placement demands it (its tag);
 *   - peer-remove twice in a row: the second gets JR_EBUSY;
 *   - peer-remove a running server: it stops and says why, its replicas are re-placed, nothing
 *     acknowledged is lost;
 *   - a removed server restarting with its old disk: refused, it reports JR_EREMOVED, it is
 *     not re-added;
 *   - bad input: unknown server, NULL, a removal that would cost the meta quorum;
 *   - every node restarted after a join: membership comes back from disk, not from config;
 *   - a join survives the meta leader failing mid-change; two joins at once; a server that
 *     joined and died before catching up can still be removed; the meta leader removed (it
 *     hands the meta group and the streams it leads over before it stops; a second removal
 *     meanwhile is JR_EBUSY);
 *   - a stream that cannot be re-placed keeps running under-replicated; an R2 stream keeps its
 *     quorum while its removed peer leaves; its replicas restarted after the removal elect
 *     without waiting for the removed server (no rescue call);
 *   - frames of unknown servers: refused, but for a join now and then.
 *
 * JR_E2E_LOG=1 prints the nodes' log lines; JR_SEEDS=first:count runs every test with count
 * other seeds (suite 'soak': 1000:100).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "js/js.h"
#include "util/checksum.h"

static const char *subj[] = {"orders.>"};

/* The meta group's configuration as node i sees it: node indexes and voter flags. */
static int meta_members(e2e *c, unsigned i, unsigned *idx, int *voter, size_t cap)
{
    jr_node *n = e2e_node(c, i);
    if (!n || !jr__js_of(n) || !jr__js_of(n)->meta) return -1;
    const jr__conf *conf = jr__raft_conf(jr__group_consensus(jr__js_of(n)->meta));
    int k = 0;
    for (uint32_t m = 0; m < conf->n && (size_t)k < cap; m++) {
        for (unsigned j = 0; j < jr_sim_size(c->sim); j++) {
            if (jr__xxh3(jr_sim_name(c->sim, j), strlen(jr_sim_name(c->sim, j))) != conf->m[m].id)
                continue;
            idx[k] = j;
            voter[k] = conf->m[m].voter;
            k++;
        }
    }
    return k;
}

/* 1 if node i's meta configuration holds node j (as a voter if voter). */
static int meta_has(e2e *c, unsigned i, unsigned j, int voter)
{
    unsigned idx[16];
    int v[16];
    int k = meta_members(c, i, idx, v, 16);
    for (int m = 0; m < k; m++)
        if (idx[m] == j) return !voter || v[m];
    return 0;
}

static void on_consumer(void *arg, int status, const char *msg, const char *name)
{
    (void)name;
    e2e_admin_cb(arg, status, msg);
}

/* A synchronous jr_server_peer_remove (via node `via`). */
static int peer_remove(e2e *c, unsigned via, const char *server, e2e_res *r)
{
    memset(r, 0, sizeof *r);
    int rc = jr_server_peer_remove(e2e_node(c, via), server, e2e_admin_cb, r);
    if (rc) return rc;
    ck_assert_int_eq(e2e_wait(c, r, 60 * SEC), 0);
    return r->status;
}

/* The meta info as node i sees it (status of the call). */
typedef struct minfo {
    int done, status, removed;
    size_t nservers;
    char leader[64];
    char servers[16][64];
    int current[16];
} minfo;

static void on_minfo(void *arg, int status, const char *msg, const jr_meta_info *info)
{
    minfo *m = arg;
    (void)msg;
    m->done = 1;
    m->status = status;
    if (!info) return;
    m->removed = info->removed;
    m->nservers = info->nservers;
    snprintf(m->leader, sizeof m->leader, "%s", info->leader ? info->leader : "");
    for (size_t i = 0; i < info->nservers && i < 16; i++) {
        snprintf(m->servers[i], sizeof m->servers[i], "%s", info->servers[i]->name);
        m->current[i] = info->servers[i]->current;
    }
}

static int minfo_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((minfo *)arg)->done;
}

static int meta_info(e2e *c, unsigned i, minfo *m)
{
    memset(m, 0, sizeof *m);
    int rc = jr_meta_info_get(e2e_node(c, i), on_minfo, m);
    if (rc) return rc;
    ck_assert_int_eq(jr_sim_run_until(c->sim, minfo_done, m, 20 * SEC), 0);
    return m->status;
}

/* Node i's meta info call succeeds and lists n servers; m gets the info. */
static void meta_info_nservers(e2e *c, unsigned i, size_t n, minfo *m)
{
    ck_assert_int_eq(meta_info(c, i, m), 0);
    ck_assert_uint_eq(m->nservers, n);
}

/* Node i's meta info call is refused with JR_EREMOVED and says it was removed. */
static void meta_info_removed(e2e *c, unsigned i, minfo *m)
{
    ck_assert_int_eq(meta_info(c, i, m), JR_EREMOVED);
    ck_assert_int_eq(m->removed, 1);
}

/* Adds a node that joins the running cluster; returns its index. */
static unsigned join_node(e2e *c)
{
    unsigned idx;
    ck_assert_int_eq(jr_sim_add_node(c->sim, 1, &idx), 0);
    c->n = jr_sim_size(c->sim);
    return idx;
}

/* What is_voter_everywhere and gone_everywhere wait on: node j of cluster c. */
typedef struct node_wait {
    e2e *c;
    unsigned j;
} node_wait;

/* Every live node's meta configuration has node j as a voter, and its meta state knows j. */
static int is_voter_everywhere(void *arg, jr_sim *sim)
{
    node_wait *v = arg;
    for (unsigned i = 0; i < jr_sim_size(sim); i++) {
        jr_node *n = e2e_node(v->c, i);
        if (!n) continue;
        if (!meta_has(v->c, i, v->j, 1)) return 0;
        if (!jr__meta_server_find(&jr__js_of(n)->st, jr_sim_name(sim, v->j))) return 0;
    }
    return 1;
}

/* No live node other than j has j in its meta configuration or its meta state's servers. */
static int gone_everywhere(void *arg, jr_sim *sim)
{
    node_wait *g = arg;
    for (unsigned i = 0; i < jr_sim_size(sim); i++) {
        jr_node *n = e2e_node(g->c, i);
        if (!n || i == g->j) continue;
        if (meta_has(g->c, i, g->j, 0)) return 0;
        if (jr__meta_server_find(&jr__js_of(n)->st, jr_sim_name(sim, g->j))) return 0;
    }
    return 1;
}

/* Added to every test's seed: JR_SEEDS=first:count runs the suite count times, with first,
 * first + 1, ... (main), so a soak run tries other seeds. */
static uint64_t g_seed_shift;

static void cluster(e2e *c, unsigned n, uint64_t seed)
{
    seed += g_seed_shift;
    memset(c, 0, sizeof *c);
    ck_assert_int_eq(e2e_new(c, n, seed, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(c, n, 10 * SEC), 0);
}

static void add_orders(e2e *c, int replicas)
{
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, replicas);
    e2e_res r;
    ck_assert_int_eq(e2e_add(c, 0, &cfg, &r), 0);
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.durable_name = "PROC";
    cc.ack_policy = JR_ACK_EXPLICIT;
    e2e_res cr;
    memset(&cr, 0, sizeof cr);
    ck_assert_int_eq(jr_consumer_create(e2e_node(c, 0), "ORDERS", &cc, on_consumer, &cr), 0);
    ck_assert_int_eq(e2e_wait(c, &cr, 10 * SEC), 0);
    ck_assert_msg(cr.status == 0, "consumer: %s", cr.msg);
}

/* A cluster of n servers (seed), ORDERS R3 with its consumer, and a workload of msgs publishes
 * run for warm. */
static void start(e2e *c, e2e_work *w, unsigned n, uint64_t seed, int msgs, uint64_t warm)
{
    cluster(c, n, seed);
    add_orders(c, 3);
    e2e_work_init(w, c, "ORDERS", msgs);
    e2e_work_run(w, warm);
}

static void stop(e2e *c, e2e_work *w)
{
    e2e_work_free(w);
    e2e_free(c);
}

/* jr_server_peer_remove of server (via node via) with the workload running until it answers;
 * the call itself must be taken. Returns the answer's status. */
static int peer_remove_running(e2e_work *w, unsigned via, const char *server, e2e_res *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_server_peer_remove(e2e_node(w->c, via), server, e2e_admin_cb, r), 0);
    while (!r->done) e2e_work_run(w, 5 * MS);
    return r->status;
}

/* Runs the workload until node j is a meta voter everywhere (within limit, or fails the test). */
static void run_until_voter(e2e_work *w, unsigned j, uint64_t limit)
{
    node_wait vw = {w->c, j};
    uint64_t t0 = jr_sim_now(w->c->sim);
    while (!is_voter_everywhere(&vw, w->c->sim)) {
        ck_assert_msg(jr_sim_now(w->c->sim) - t0 < limit, "n%u did not become a meta voter", j);
        e2e_work_run(w, 20 * MS);
    }
}

/* Runs the cluster (no workload) in 1 ms steps until node i's meta state records server name,
 * within 10 s. */
static void wait_recorded(e2e *c, unsigned i, const char *name)
{
    uint64_t t0 = jr_sim_now(c->sim);
    while (!jr__meta_server_find(&jr__js_of(e2e_node(c, i))->st, name)) {
        ck_assert(jr_sim_now(c->sim) - t0 < 10 * SEC);
        jr_sim_run_for(c->sim, 1 * MS);
    }
}

/* Runs the cluster until node j is a meta voter everywhere, within limit. */
static void wait_voter(e2e *c, unsigned j, uint64_t limit)
{
    node_wait vw = {c, j};
    ck_assert_int_eq(jr_sim_run_until(c->sim, is_voter_everywhere, &vw, limit), 0);
}

/* Runs the cluster until no live node but j has j, within limit. */
static void wait_gone(e2e *c, unsigned j, uint64_t limit)
{
    node_wait g = {c, j};
    ck_assert_int_eq(jr_sim_run_until(c->sim, gone_everywhere, &g, limit), 0);
}

/* Tests ---------------------------------------------------------------------------------------*/

START_TEST(a_fourth_server_joins_and_orders_grows_onto_it)
{
    e2e c;
    e2e_work w;
    cluster(&c, 3, 41);
    add_orders(&c, 3);
    e2e_work_init(&w, &c, "ORDERS", 1500);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 64);
    e2e_work_run(&w, 1 * SEC);
    /* some history for the new replica to catch up: 4 MB in 4 KiB messages */
    static char big[4096];
    memset(big, 'b', sizeof big);
    for (int i = 0; i < 1000; i++) {
        e2e_res r;
        char sub[32];
        snprintf(sub, sizeof sub, "orders.bulk.%d", i % 10);
        ck_assert_int_eq(e2e_publish(&c, (unsigned)i % 3, sub, big, sizeof big, NULL, &r), 0);
    }
    /* the new server starts with the others as its seeds and asks to be let in */
    unsigned j = join_node(&c);
    ck_assert_uint_eq(j, 3);
    /* a slower network to it, so the catch-up can be watched */
    jr_sim_link slow;
    jr_sim_link_init(&slow);
    slow.delay_min_ns = 2 * MS;
    slow.delay_max_ns = 3 * MS;
    for (unsigned i = 0; i < 3; i++) ck_assert_int_eq(jr_sim_set_link(c.sim, i, j, &slow), 0);
    w.skip[j] = 1; /* used once it holds the meta state */
    run_until_voter(&w, j, 20 * SEC);
    while (!e2e_meta_has(&c, j, "ORDERS")) e2e_work_run(&w, 5 * MS);
    w.skip[j] = 0;
    e2e_snapshot_every(&c, j, 64);
    minfo m;
    meta_info_nservers(&c, 0, 4, &m);
    ck_assert_str_eq(m.servers[3], "n3");
    ck_assert_int_eq(m.removed, 0);
    /* ORDERS grows onto it (the only server not holding it) */
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 4);
    e2e_res up;
    memset(&up, 0, sizeof up);
    ck_assert_int_eq(jr_stream_update(e2e_node(&c, 1), &cfg, e2e_admin_cb, &up), 0);
    while (!up.done) e2e_work_run(&w, 5 * MS);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    unsigned peers[8];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 8), 4);
    int has3 = 0;
    for (int k = 0; k < 4; k++) has3 |= peers[k] == 3;
    ck_assert(has3);
    /* the new replica's lag counts down in stream info while it catches up; an original peer
     * that is not the leader is killed mid catch-up and writes go on */
    uint64_t max_lag = 0, last_lag = UINT64_MAX;
    int seen = 0, killed = -1, downs = 0;
    uint64_t t0 = jr_sim_now(c.sim);
    for (;;) {
        e2e_res info;
        int lead = -1;
        for (unsigned via = 0; via < 3 && lead < 0; via++) {
            if (!e2e_node(&c, via) || e2e_info(&c, via, "ORDERS", &info) != 0) continue;
            lead = jr_sim_index(c.sim, info.leader);
        }
        int current = 0;
        for (size_t k = 0; lead >= 0 && k < info.nreplicas; k++) {
            if (strcmp(info.reps[k].name, "n3") != 0) continue;
            seen = 1;
            if (info.reps[k].lag > max_lag) max_lag = info.reps[k].lag;
            downs += info.reps[k].lag < last_lag && last_lag != UINT64_MAX;
            last_lag = info.reps[k].lag;
            current = info.reps[k].current && !info.reps[k].observer;
        }
        if (killed < 0 && seen && lead >= 0) {
            killed = lead == 1 ? 2 : 1;
            w.skip[killed] = 1;
            ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)killed), 0);
        }
        if (current) break;
        ck_assert_msg(jr_sim_now(c.sim) - t0 < 30 * SEC, "n3 never became a current voter");
        e2e_work_run(&w, 5 * MS);
    }
    ck_assert(seen);
    ck_assert_msg(max_lag > 0 && downs > 0 && last_lag < max_lag,
                  "the new replica's lag did not count down (max %llu, last %llu)",
                  (unsigned long long)max_lag, (unsigned long long)last_lag);
    e2e_work_run(&w, 500 * MS);
    ck_assert_int_eq(e2e_restart(&c, (unsigned)killed), 0);
    while (!e2e_meta_has(&c, (unsigned)killed, "ORDERS")) e2e_work_run(&w, 5 * MS);
    w.skip[killed] = 0;
    e2e_work_run(&w, 500 * MS);
    e2e_work_check(&w, 0);
    ck_assert_uint_gt(w.delivered, 0);
    stop(&c, &w);
}
END_TEST

START_TEST(a_new_stream_is_placed_on_the_new_server_when_placement_demands_it)
{
    e2e c;
    cluster(&c, 3, 42);
    add_orders(&c, 3);
    static const char *ssd[] = {"ssd"};
    c.tags[3][0] = "ssd";
    c.ntags[3] = 1;
    /* before the join nothing qualifies */
    jr_stream_config cfg;
    e2e_config(&cfg, "FAST", (const char *const[]){"fast.>"}, 1, 1);
    cfg.placement = e2e_placement(NULL, ssd, 1);
    e2e_res r;
    ck_assert_int_eq(e2e_add(&c, 0, &cfg, &r), JR_ENORESOURCES);
    unsigned j = join_node(&c);
    wait_voter(&c, j, 20 * SEC);
    ck_assert_int_eq(e2e_add(&c, 1, &cfg, &r), 0);
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 1, "FAST", peers, 4), 1);
    ck_assert_uint_eq(peers[0], j);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "FAST", 0, 10 * SEC), 0);
    e2e_res p;
    ck_assert_int_eq(e2e_publish(&c, 2, "fast.1", "x", 1, NULL, &p), 0);
    ck_assert_int_eq(e2e_has_replica(&c, j, "FAST"), 1);
    e2e_free(&c);
}
END_TEST

START_TEST(peer_remove_twice_in_a_row_the_second_is_busy)
{
    e2e c;
    e2e_work w;
    start(&c, &w, 5, 43, 300, 200 * MS);
    /* two servers gone for good */
    w.skip[3] = w.skip[4] = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, 3), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, 4), 0);
    e2e_work_run(&w, 300 * MS);
    e2e_res a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    ck_assert_int_eq(jr_server_peer_remove(e2e_node(&c, 0), "n3", e2e_admin_cb, &a), 0);
    ck_assert_int_eq(jr_server_peer_remove(e2e_node(&c, 1), "n4", e2e_admin_cb, &b), 0);
    while (!a.done || !b.done) e2e_work_run(&w, 5 * MS);
    /* whichever reached the meta leader first goes through; the other is refused */
    e2e_res *won = a.status == 0 ? &a : &b, *lost = a.status == 0 ? &b : &a;
    ck_assert_msg(won->status == 0, "neither removal went through: %s (%s)", jr_strerror(a.status),
                  a.msg);
    ck_assert_int_eq(lost->status, JR_EBUSY);
    ck_assert_msg(strstr(lost->msg, "cluster member change is in progress"), "%s", lost->msg);
    unsigned first = won == &a ? 3 : 4, second = won == &a ? 4 : 3;
    /* the first is over: the meta group no longer has it, and the second may go now */
    wait_gone(&c, first, 5 * SEC);
    e2e_res r2;
    char sname[16];
    snprintf(sname, sizeof sname, "n%u", second);
    ck_assert_int_eq(peer_remove(&c, 2, sname, &r2), 0);
    wait_gone(&c, second, 5 * SEC);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert(!meta_has(&c, i, 4, 0));
        ck_assert_uint_eq(jr__js_of(e2e_node(&c, i))->st.nservers, 3);
    }
    /* a third on a removed server: not a member */
    ck_assert_int_eq(peer_remove(&c, 0, "n3", &r2), JR_ENOTMEMBER);
    e2e_work_run(&w, 1 * SEC);
    e2e_work_check(&w, 0);
    stop(&c, &w);
}
END_TEST

/* 1 if every live node but `gone` has the stream with `replicas` peers, none of them gone, and
 * no peer change in progress. */
static int converged_without(e2e *c, const char *name, unsigned gone, int replicas)
{
    for (unsigned i = 0; i < jr_sim_size(c->sim); i++) {
        if (i == gone || !e2e_node(c, i)) continue;
        unsigned p[8];
        int np = e2e_meta_peers(c, i, name, p, 8);
        if (np != replicas || e2e_meta_busy(c, i, name) != 0) return 0;
        for (int k = 0; k < np; k++)
            if (p[k] == gone) return 0;
    }
    return 1;
}

/* Peer-removes peer k of ORDERS (of its `replicas`, four servers in all) through the next
 * server, *via, with the workload running and skipping the removed server: that server's index
 * (its name in gname, 8 bytes), the removal's answer in *r, asserted a success. */
static unsigned remove_a_peer_running(e2e_work *w, int replicas, unsigned k, char *gname,
                                      unsigned *via, e2e_res *r)
{
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(w->c, 0, "ORDERS", peers, 4), replicas);
    unsigned gone = peers[k];
    snprintf(gname, 8, "n%u", gone);
    *via = (gone + 1) % 4;
    w->skip[gone] = 1;
    peer_remove_running(w, *via, gname, r);
    ck_assert_msg(r->status == 0, "removal: %s (%s)", jr_strerror(r->status), r->msg);
    return gone;
}

/* Runs the workload until ORDERS has `replicas` peers, none of them `gone`, as every other live
 * server sees it (within 30 s, or fails the test). */
static void run_until_converged_without(e2e_work *w, unsigned gone, int replicas)
{
    uint64_t t0 = jr_sim_now(w->c->sim);
    while (!converged_without(w->c, "ORDERS", gone, replicas)) {
        ck_assert_msg(jr_sim_now(w->c->sim) - t0 < 30 * SEC, "ORDERS did not converge without n%u",
                      gone);
        e2e_work_run(w, 20 * MS);
    }
}

START_TEST(peer_remove_of_a_running_server_stops_it_and_replaces_its_replicas)
{
    e2e c;
    e2e_work w;
    start(&c, &w, 4, 44, 800, 300 * MS);
    /* remove a server that holds ORDERS, while it runs */
    char gname[8];
    unsigned via;
    e2e_res r;
    unsigned gone = remove_a_peer_running(&w, 3, 1, gname, &via, &r);
    ck_assert_msg(strstr(r.msg, "1 stream re-placed"), "%s", r.msg);
    /* the removed server stopped and says why */
    jr_node *gn = e2e_node(&c, gone);
    ck_assert_ptr_nonnull(gn);
    minfo m;
    meta_info_removed(&c, gone, &m);
    jr_stream_config cfg;
    e2e_config(&cfg, "X", (const char *const[]){"x.>"}, 1, 1);
    ck_assert_int_eq(jr_stream_add(gn, &cfg, e2e_admin_cb, &r), JR_EREMOVED);
    ck_assert_int_eq(jr_publish(gn, "orders.1", NULL, 0, "x", 1, NULL, e2e_pub_cb, &r),
                     JR_EREMOVED);
    /* its replica went to the fourth server; the stream converges without it */
    run_until_converged_without(&w, gone, 3);
    ck_assert_int_ge(e2e_wait_stream(&c, via, "ORDERS", 2, 20 * SEC), 0);
    /* the consumer followed its stream off the removed server, and still delivers */
    const jr__meta_stream *ms = jr__meta_stream_find(&jr__js_of(e2e_node(&c, via))->st, "ORDERS");
    const jr__meta_consumer *mc = jr__meta_consumer_find(ms, "PROC");
    ck_assert_ptr_nonnull(mc);
    ck_assert(!jr__meta_consumer_has_peer(mc, gname));
    uint64_t before = w.delivered;
    e2e_work_run(&w, 1 * SEC);
    ck_assert_uint_gt(w.delivered, before);
    for (unsigned i = 0; i < 4; i++) {
        if (i == gone) continue;
        ck_assert(!meta_has(&c, i, gone, 0));
        ck_assert_ptr_null(jr__meta_server_find(&jr__js_of(e2e_node(&c, i))->st, gname));
        ck_assert(jr__meta_server_removed(&jr__js_of(e2e_node(&c, i))->st, gname));
    }
    meta_info_nservers(&c, via, 3, &m);
    e2e_work_run(&w, 1 * SEC);
    e2e_work_check(&w, via);
    ck_assert_uint_gt(w.delivered, 0);
    /* restarted with its old disk it is still removed, and not re-added */
    ck_assert_int_eq(jr_sim_crash(c.sim, gone), 0);
    ck_assert_int_eq(e2e_restart(&c, gone), 0);
    e2e_work_run(&w, 1 * SEC);
    ck_assert_int_eq(meta_info(&c, gone, &m), JR_EREMOVED);
    meta_info_nservers(&c, via, 3, &m);
    stop(&c, &w);
}
END_TEST

/* An R2 stream re-placed off a running server that is peer-removed: the server stays a voter
 * of the stream's group until the group converged without it (the group needs both old
 * voters until the replacement votes), so the stream keeps a quorum, converges, and loses
 * nothing acknowledged. */
START_TEST(an_r2_stream_keeps_its_quorum_while_its_removed_peer_leaves)
{
    e2e c;
    e2e_work w;
    cluster(&c, 4, 57);
    add_orders(&c, 2);
    e2e_work_init(&w, &c, "ORDERS", 600);
    e2e_work_run(&w, 300 * MS);
    char gname[8];
    unsigned via;
    e2e_res r;
    unsigned gone = remove_a_peer_running(&w, 2, 0, gname, &via, &r);
    run_until_converged_without(&w, gone, 2);
    ck_assert_int_ge(e2e_wait_stream(&c, via, "ORDERS", 1, 20 * SEC), 0);
    minfo m;
    meta_info_removed(&c, gone, &m);
    e2e_work_run(&w, 1 * SEC);
    e2e_work_check(&w, via);
    stop(&c, &w);
}
END_TEST

/* The files of a disk (jr_sim_files). */
typedef struct files {
    char path[64][128];
    int n;
} files;

static int list_file(void *arg, const char *path, uint64_t size)
{
    files *f = arg;
    (void)size;
    if (f->n < 64) snprintf(f->path[f->n++], sizeof f->path[0], "%s", path);
    return 0;
}

/* Deletes every file of crashed node i: a blank disk. */
static void wipe(e2e *c, unsigned i)
{
    files f;
    f.n = 0;
    ck_assert_int_eq(jr_sim_files(c->sim, i, list_file, &f), 0);
    ck_assert_int_lt(f.n, 64);
    for (int k = 0; k < f.n; k++) jr_sim_remove_file(c->sim, i, f.path[k]);
}

static void join_mode(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    if (i == 3) cfg->join = 1;
}

START_TEST(a_removed_server_that_was_down_is_refused_when_it_comes_back)
{
    e2e c;
    e2e_work w;
    start(&c, &w, 4, 45, 400, 200 * MS);
    w.skip[3] = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, 3), 0);
    e2e_work_run(&w, 300 * MS);
    e2e_res r;
    ck_assert_int_eq(peer_remove(&c, 0, "n3", &r), 0);
    e2e_work_run(&w, 300 * MS);
    /* back with its old disk: it still believes it is a member, its frames are refused, it is
     * told, and it stops */
    ck_assert_int_eq(e2e_restart(&c, 3), 0);
    e2e_work_run(&w, 2 * SEC);
    minfo m;
    meta_info_removed(&c, 3, &m);
    for (unsigned i = 0; i < 3; i++) {
        meta_info_nservers(&c, i, 3, &m);
        ck_assert(!meta_has(&c, i, 3, 0));
    }
    /* with a blank disk, asking to join as a new server: refused too */
    ck_assert_int_eq(jr_sim_crash(c.sim, 3), 0);
    wipe(&c, 3);
    c.configure_more = join_mode;
    ck_assert_int_eq(e2e_restart(&c, 3), 0);
    ck_assert_int_eq(jr__js_of(e2e_node(&c, 3))->join, 1);
    e2e_work_run(&w, 1 * SEC);
    ck_assert_int_eq(meta_info(&c, 3, &m), JR_EREMOVED);
    for (unsigned i = 0; i < 3; i++) {
        meta_info_nservers(&c, i, 3, &m);
    }
    e2e_work_check(&w, 0);
    stop(&c, &w);
}
END_TEST

START_TEST(bad_input_is_refused_and_changes_nothing)
{
    e2e c;
    cluster(&c, 3, 46);
    add_orders(&c, 3);
    e2e_res r;
    ck_assert_int_eq(peer_remove(&c, 0, "nope", &r), JR_ENOTMEMBER);
    ck_assert_msg(strstr(r.msg, "not a member"), "%s", r.msg);
    ck_assert_int_eq(jr_server_peer_remove(e2e_node(&c, 0), NULL, e2e_admin_cb, &r), JR_EINVAL);
    ck_assert_int_eq(jr_server_peer_remove(e2e_node(&c, 0), "", e2e_admin_cb, &r), JR_EINVAL);
    ck_assert_int_eq(jr_server_peer_remove(e2e_node(&c, 0), "n1", NULL, NULL), JR_EINVAL);
    ck_assert_int_eq(jr_server_peer_remove(NULL, "n1", e2e_admin_cb, &r), JR_EINVAL);
    /* with n2 down, removing n1 would leave {n0, n2}: one of two online, no quorum */
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    jr_sim_run_for(c.sim, 1 * SEC);
    ck_assert_int_eq(peer_remove(&c, 0, "n1", &r), JR_ENOQUORUM);
    ck_assert_msg(strstr(r.msg, "quorum"), "%s", r.msg);
    for (unsigned i = 0; i < 2; i++) {
        ck_assert_uint_eq(jr__js_of(e2e_node(&c, i))->st.nservers, 3);
        ck_assert_uint_eq(jr__js_of(e2e_node(&c, i))->st.nremoved, 0);
        ck_assert(meta_has(&c, i, 1, 1));
    }
    e2e_free(&c);
    /* the last server of a cluster */
    cluster(&c, 1, 47);
    ck_assert_int_eq(peer_remove(&c, 0, "n0", &r), JR_EINVAL);
    ck_assert_msg(strstr(r.msg, "last"), "%s", r.msg);
    e2e_free(&c);
}
END_TEST

START_TEST(every_node_restarted_after_a_join_recovers_the_membership_from_disk)
{
    e2e c;
    cluster(&c, 3, 48);
    add_orders(&c, 3);
    unsigned j = join_node(&c);
    wait_voter(&c, j, 20 * SEC);
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 4);
    e2e_res r;
    ck_assert_int_eq(e2e_update(&c, 0, &cfg, &r), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "ORDERS", 3, 30 * SEC), 0);
    e2e_work w;
    e2e_work_init(&w, &c, "ORDERS", 200);
    e2e_work_run(&w, 500 * MS);
    ck_assert_int_eq(jr_sim_run_until(c.sim, e2e_work_answered, &w, 20 * SEC), 0);
    /* every node down and back: the founding servers' configs still list only n0..n2 */
    for (unsigned i = 0; i < 4; i++) ck_assert_int_eq(jr_sim_crash(c.sim, i), 0);
    for (unsigned i = 0; i < 4; i++) ck_assert_int_eq(e2e_restart(&c, i), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 4, 20 * SEC), 0);
    wait_voter(&c, j, 20 * SEC);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "ORDERS", 3, 30 * SEC), 0);
    for (unsigned i = 0; i < 4; i++) ck_assert_int_eq(e2e_has_replica(&c, i, "ORDERS"), 1);
    minfo m;
    meta_info_nservers(&c, 0, 4, &m);
    w.n = 400;
    e2e_work_run(&w, 500 * MS);
    e2e_work_check(&w, 1);
    stop(&c, &w);
}
END_TEST

START_TEST(a_stream_that_cannot_be_re_placed_keeps_running_under_replicated)
{
    e2e c;
    e2e_work w;
    start(&c, &w, 3, 49, 400, 300 * MS);
    w.skip[2] = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    e2e_work_run(&w, 300 * MS);
    /* no fourth server to take n2's replica */
    e2e_res r;
    peer_remove_running(&w, 0, "n2", &r);
    ck_assert_msg(r.status == 0, "%s (%s)", jr_strerror(r.status), r.msg);
    ck_assert_msg(strstr(r.msg, "0 streams re-placed") &&
                      strstr(r.msg, "not re-placed (under-replicated): ORDERS"),
                  "%s", r.msg);
    /* never dropped: still R3 on paper with n2 offline, writes go on with two */
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 3);
    e2e_res info;
    ck_assert_int_eq(e2e_info(&c, 0, "ORDERS", &info), 0);
    int offline = 0;
    for (size_t k = 0; k < info.nreplicas; k++)
        offline += strcmp(info.reps[k].name, "n2") == 0 && info.reps[k].offline;
    ck_assert_int_eq(offline, 1);
    e2e_work_run(&w, 1 * SEC);
    e2e_work_check(&w, 1);
    /* an update re-places it once a server qualifies: here, back to R2 on the two left */
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 2);
    ck_assert_int_eq(e2e_update(&c, 0, &cfg, &r), 0);
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 2);
    ck_assert(peers[0] != 2 && peers[1] != 2);
    stop(&c, &w);
}
END_TEST

START_TEST(two_servers_joining_at_once_are_admitted_one_after_the_other)
{
    e2e c;
    cluster(&c, 3, 50);
    add_orders(&c, 3);
    unsigned a = join_node(&c), b = join_node(&c);
    wait_voter(&c, a, 30 * SEC);
    wait_voter(&c, b, 30 * SEC);
    for (unsigned i = 0; i < 5; i++) {
        unsigned idx[16];
        int v[16];
        ck_assert_int_eq(meta_members(&c, i, idx, v, 16), 5);
    }
    /* the two new servers take a new R5 stream with the others */
    jr_stream_config cfg;
    e2e_config(&cfg, "WIDE", (const char *const[]){"wide.>"}, 1, 5);
    e2e_res r;
    ck_assert_int_eq(e2e_add(&c, a, &cfg, &r), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "WIDE", 4, 20 * SEC), 0);
    e2e_free(&c);
}
END_TEST

START_TEST(a_server_that_joined_and_died_before_catching_up_can_be_removed)
{
    e2e c;
    cluster(&c, 3, 51);
    add_orders(&c, 3);
    unsigned j = join_node(&c);
    /* it is recorded, then gone before it holds the meta log */
    wait_recorded(&c, 0, "n3");
    ck_assert_int_eq(jr_sim_crash(c.sim, j), 0);
    jr_sim_run_for(c.sim, 1 * SEC);
    /* its join is the change in progress, yet its removal is not refused for it */
    e2e_res r;
    int rc = peer_remove(&c, 1, "n3", &r);
    ck_assert_msg(rc == 0, "removal: %s (%s)", jr_strerror(rc), r.msg);
    wait_gone(&c, j, 10 * SEC);
    /* and the next join goes through */
    unsigned k = join_node(&c);
    wait_voter(&c, k, 30 * SEC);
    e2e_free(&c);
}
END_TEST

/* A frame from `from` to n0 holding one request of `kind` with payload p (a frame of its own,
 * as a server's host would hand it over). */
static void stranger_frame(jr__buf *b, const char *from, uint8_t kind, const void *p, size_t len)
{
    jr__buf_reset(b);
    jr__frame_begin(b, jr__xxh3(from, strlen(from)), jr__xxh3("n0", 2));
    jr__frame_add_request(b, 77, kind, p, len);
    ck_assert_int_eq(jr__frame_end(b), 0);
}

START_TEST(frames_of_unknown_servers_are_refused_but_a_join_now_and_then)
{
    e2e c;
    cluster(&c, 3, 52);
    jr_node *n0 = e2e_node(&c, 0);
    jr_node_stats before, after;
    before.size = after.size = sizeof before;
    ck_assert_int_eq(jr_node_stats_get(n0, &before), 0);
    ck_assert_int_eq(jr_node_recv(n0, "stranger", "xx", 2), JR_EAUTH);
    jr__buf b;
    jr__buf_init(&b, NULL);
    /* a well-formed request of any other kind */
    stranger_frame(&b, "stranger", JR__RPC_META, "x", 1);
    ck_assert_int_eq(jr_node_recv(n0, "stranger", b.data, b.len), JR_EAUTH);
    /* a join under another server's name (the frame's sender id is not the name's) */
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_SERVER_JOIN;
    op.server.name = "stranger";
    op.server.cluster = "east";
    jr__buf j;
    jr__buf_init(&j, NULL);
    ck_assert_int_eq(jr__meta_op_encode(&op, &j), 0);
    stranger_frame(&b, "someone", JR__RPC_JOIN, j.data, j.len);
    ck_assert_int_eq(jr_node_recv(n0, "stranger", b.data, b.len), JR_EAUTH);
    /* too large */
    uint8_t *big = calloc(1, 40000);
    stranger_frame(&b, "stranger", JR__RPC_JOIN, big, 40000);
    free(big);
    ck_assert_int_eq(jr_node_recv(n0, "stranger", b.data, b.len), JR_EAUTH);
    /* a join is taken; another within a heartbeat interval is not, whoever sends it */
    stranger_frame(&b, "stranger", JR__RPC_JOIN, j.data, j.len);
    ck_assert_int_eq(jr_node_recv(n0, "stranger", b.data, b.len), 0);
    stranger_frame(&b, "other", JR__RPC_JOIN, j.data, j.len);
    ck_assert_int_eq(jr_node_recv(n0, "other", b.data, b.len), JR_EAUTH);
    ck_assert_int_eq(jr_node_stats_get(n0, &after), 0);
    ck_assert_uint_eq(after.frames_rejected - before.frames_rejected, 5);
    jr__buf_free(&b);
    jr__buf_free(&j);
    e2e_free(&c);
}
END_TEST

/* The end of a test that removed the meta leader l (named lname) through server via: l stops
 * and reports itself removed, via sees three servers and another meta leader, the workload
 * runs on for a second and checks out; then the fixture stops. */
static void finish_without_the_meta_leader(e2e *c, e2e_work *w, unsigned l, const char *lname,
                                           unsigned via)
{
    wait_gone(c, l, 10 * SEC);
    minfo m;
    ck_assert_int_eq(meta_info(c, l, &m), JR_EREMOVED);
    meta_info_nservers(c, via, 3, &m);
    ck_assert_str_ne(m.leader, lname);
    e2e_work_run(w, 1 * SEC);
    e2e_work_check(w, via);
    stop(c, w);
}

START_TEST(removing_the_meta_leader_moves_the_meta_group_on)
{
    e2e c;
    e2e_work w;
    start(&c, &w, 4, 53, 500, 300 * MS);
    int l = e2e_meta_leader(&c);
    ck_assert_int_ge(l, 0);
    char lname[16];
    snprintf(lname, sizeof lname, "n%d", l);
    unsigned via = ((unsigned)l + 1) % 4;
    w.skip[l] = 1;
    e2e_res r;
    peer_remove_running(&w, via, lname, &r);
    ck_assert_msg(r.status == 0, "%s (%s)", jr_strerror(r.status), r.msg);
    finish_without_the_meta_leader(&c, &w, (unsigned)l, lname, via);
}
END_TEST

/* 1 if a live node other than `gone` leads the meta group. */
static int meta_led_without(e2e *c, unsigned gone)
{
    int l = e2e_meta_leader(c);
    return l >= 0 && (unsigned)l != gone;
}

/* 1 if a live node other than `gone` leads the stream (its own replica says so). */
static int stream_led_without(e2e *c, const char *name, unsigned gone)
{
    for (unsigned i = 0; i < jr_sim_size(c->sim); i++)
        if (i != gone && e2e_node(c, i) && e2e_replica_leader(c, i, name) == (int)i) return 1;
    return 0;
}

START_TEST(the_removed_meta_leader_hands_its_leaderships_over_before_it_stops)
{
    e2e c;
    e2e_work w;
    start(&c, &w, 4, 55, 600, 300 * MS);
    /* the meta leader leads ORDERS too */
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 3);
    int l = e2e_meta_leader(&c);
    ck_assert_int_ge(l, 0);
    e2e_res sd;
    char lname[16];
    snprintf(lname, sizeof lname, "n%d", l);
    if (!e2e_has_replica(&c, (unsigned)l, "ORDERS")) {
        /* make a peer of ORDERS the meta leader */
        char to[16];
        snprintf(to, sizeof to, "n%u", peers[0]);
        memset(&sd, 0, sizeof sd);
        ck_assert_int_eq(jr_meta_stepdown(e2e_node(&c, peers[0]), to, e2e_admin_cb, &sd), 0);
        ck_assert_int_eq(e2e_wait(&c, &sd, 10 * SEC), 0);
        ck_assert_msg(sd.status == 0, "meta stepdown: %s", sd.msg);
        l = e2e_meta_leader(&c);
        ck_assert_int_eq(l, (int)peers[0]);
        snprintf(lname, sizeof lname, "n%d", l);
    }
    if (e2e_wait_stream(&c, (unsigned)l, "ORDERS", 2, 5 * SEC) != l) {
        ck_assert_int_eq(e2e_stepdown(&c, (unsigned)l, "ORDERS", lname, &sd), 0);
        ck_assert_msg(sd.status == 0, "stepdown: %s", sd.msg);
    }
    ck_assert_int_eq(e2e_replica_leader(&c, (unsigned)l, "ORDERS"), l);
    unsigned via = ((unsigned)l + 1) % 4, other = ((unsigned)l + 2) % 4;
    jr__js *ljs = jr__js_of(e2e_node(&c, (unsigned)l));
    w.skip[l] = 1;
    e2e_res r, r2;
    memset(&r, 0, sizeof r);
    memset(&r2, 0, sizeof r2);
    ck_assert_int_eq(jr_server_peer_remove(e2e_node(&c, via), lname, e2e_admin_cb, &r), 0);
    /* a second removal while the first is in flight: it reaches the meta leader right after
     * the first, which it proposed */
    char oname[16];
    snprintf(oname, sizeof oname, "n%u", other);
    ck_assert_int_eq(jr_server_peer_remove(e2e_node(&c, via), oname, e2e_admin_cb, &r2), 0);
    /* in 1 ms steps until the removed server stops: by then the meta group and ORDERS have
     * other leaders (handed over, not elected an election timeout later) */
    uint64_t t0 = jr_sim_now(c.sim);
    while (!ljs->removed) {
        ck_assert_msg(jr_sim_now(c.sim) - t0 < 10 * SEC, "%s did not stop", lname);
        e2e_work_run(&w, 1 * MS);
    }
    ck_assert_msg(meta_led_without(&c, (unsigned)l), "no meta leader when %s stopped", lname);
    ck_assert_msg(stream_led_without(&c, "ORDERS", (unsigned)l),
                  "ORDERS has no leader when %s stopped", lname);
    while (!r.done || !r2.done) e2e_work_run(&w, 5 * MS);
    ck_assert_msg(r.status == 0, "%s (%s)", jr_strerror(r.status), r.msg);
    ck_assert_int_eq(r2.status, JR_EBUSY);
    ck_assert_msg(strstr(r2.msg, "cluster member change is in progress"), "%s", r2.msg);
    finish_without_the_meta_leader(&c, &w, (unsigned)l, lname, via);
}
END_TEST

START_TEST(a_join_survives_the_meta_leader_failing_mid_change)
{
    e2e c;
    e2e_work w;
    start(&c, &w, 3, 54, 500, 300 * MS);
    int l = e2e_meta_leader(&c);
    ck_assert_int_ge(l, 0);
    /* ORDERS is led elsewhere: only the meta group loses its leader */
    e2e_res sd;
    int sl = e2e_wait_stream(&c, 0, "ORDERS", 2, 5 * SEC);
    if (sl == l) {
        char to[16];
        snprintf(to, sizeof to, "n%d", (l + 1) % 3);
        ck_assert_int_eq(e2e_stepdown(&c, 0, "ORDERS", to, &sd), 0);
    }
    unsigned j = join_node(&c);
    w.skip[j] = 1;
    /* the meta leader fails as soon as the join is in its meta state */
    wait_recorded(&c, (unsigned)l, "n3");
    w.skip[l] = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)l), 0);
    /* the next meta leader takes the change over from where it is */
    run_until_voter(&w, j, 30 * SEC);
    ck_assert_int_eq(e2e_restart(&c, (unsigned)l), 0);
    wait_voter(&c, j, 20 * SEC);
    unsigned idx[16];
    int v[16];
    ck_assert_int_eq(meta_members(&c, (unsigned)l, idx, v, 16), 4);
    e2e_work_run(&w, 500 * MS);
    e2e_work_check(&w, (unsigned)(l + 1) % 3);
    stop(&c, &w);
}
END_TEST

/* A committed removal declares the server gone: ORDERS R3 on n0..n2, n2 down and removed with
 * no server to take its replica, so ORDERS keeps n2 in its configuration. n0 and n1 restart:
 * their stream replicas reopen unvouched and would wait for n2's answer, which never comes; the
 * removal in the meta state stands for the operator's jr_node_rescue, so ORDERS elects and takes
 * publishes without one, and nothing acknowledged is lost. */
START_TEST(replicas_restarted_after_a_removal_do_not_wait_for_the_removed_server)
{
    e2e c;
    e2e_work w;
    start(&c, &w, 3, 53, 600, 0);
    w.n = 300; /* the other 300 once n0 and n1 restarted */
    e2e_work_run(&w, 300 * MS);
    w.skip[2] = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    e2e_work_run(&w, 300 * MS);
    e2e_res r;
    peer_remove_running(&w, 0, "n2", &r);
    ck_assert_msg(r.status == 0, "%s (%s)", jr_strerror(r.status), r.msg);
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 3);
    ck_assert_int_eq(jr_sim_run_until(c.sim, e2e_work_answered, &w, 20 * SEC), 0);
    for (unsigned i = 0; i < 2; i++) ck_assert_int_eq(jr_sim_crash(c.sim, i), 0);
    for (unsigned i = 0; i < 2; i++) ck_assert_int_eq(e2e_restart(&c, i), 0);
    ck_assert_msg(e2e_wait_stream(&c, 0, "ORDERS", 1, 30 * SEC) >= 0,
                  "ORDERS elected no leader after n0 and n1 restarted");
    w.n = 600;
    e2e_work_run(&w, 1 * SEC);
    ck_assert_int_ge(e2e_work_check(&w, 1), 300);
    stop(&c, &w);
}
END_TEST

/* Log lines that say a group stands in for a removed voter, or does not (with the reason). */
static struct {
    jr_host hosts[E2E_MAX];
    int waits_damaged, stands_in, unassigned;
} g_stand;

static void stand_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    (void)level;
    if (strstr(msg, "does not stand in") && strstr(msg, "damaged")) g_stand.waits_damaged++;
    if (strstr(msg, "stands in for its vote")) g_stand.stands_in++;
    if (strstr(msg, "does not stand in") && strstr(msg, "no longer in the group's assignment"))
        g_stand.unassigned++;
}

static void stand_configure(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    g_stand.hosts[i] = *cfg->host;
    g_stand.hosts[i].log = stand_log;
    cfg->host = &g_stand.hosts[i];
}

/* The schedule of jetraft-sim seed 1052: ORDERS R2 (and its consumer) on {a, b} of four
 * servers. a is paused and peer-removed meanwhile (ORDERS re-placed onto b and another), b
 * restarts, and a, resuming, learns of its removal and stops. Moving the groups off a needs a
 * leader of each, and a group whose voters are a and b needs both: b, whole, stands in for the
 * removed voter (lib/raft/removed.c), leads, and moves each group on; nothing acknowledged is
 * lost. */
START_TEST(an_r2_stream_whose_paused_peer_is_removed_moves_on_without_it)
{
    e2e c;
    e2e_work w;
    memset(&c, 0, sizeof c);
    memset(&g_stand, 0, sizeof g_stand);
    c.configure_more = stand_configure;
    ck_assert_int_eq(e2e_new(&c, 4, 52 + g_seed_shift, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 4, 10 * SEC), 0);
    add_orders(&c, 2);
    e2e_work_init(&w, &c, "ORDERS", 600);
    w.n = 300; /* the other 300 once the stream moved */
    e2e_work_run(&w, 300 * MS);
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 2);
    unsigned a = peers[0], b = peers[1], via = 0;
    while (via == a || via == b) via++;
    char aname[16];
    snprintf(aname, sizeof aname, "%s", jr_sim_name(c.sim, a));
    w.skip[a] = 1;
    ck_assert_int_eq(jr_sim_pause(c.sim, a, 3 * SEC), 0);
    e2e_work_run(&w, 200 * MS);
    e2e_res r;
    peer_remove_running(&w, via, aname, &r);
    ck_assert_msg(r.status == 0, "removal: %s (%s)", jr_strerror(r.status), r.msg);
    w.skip[b] = 1; /* until its meta state is back */
    ck_assert_int_eq(jr_sim_crash(c.sim, b), 0);
    ck_assert_int_eq(e2e_restart(&c, b), 0);
    run_until_converged_without(&w, a, 2);
    w.skip[b] = 0;
    ck_assert_int_ge(e2e_wait_stream(&c, via, "ORDERS", 1, 20 * SEC), 0);
    w.n = 600;
    e2e_work_run(&w, 1 * SEC);
    ck_assert_int_ge(e2e_work_check(&w, via), 300);
    ck_assert_msg(g_stand.stands_in > 0, "no group stood in for the removed voter");
    stop(&c, &w);
}
END_TEST

/* A replica dropped from its stream's assignment never stands in. ORDERS R2 on {a, b} of four
 * servers; a is paused, so the group makes no change, and b is evacuated from ORDERS (the meta
 * state, b's included, now places it on a and another server). a is then peer-removed. Had a
 * led ORDERS, it could have removed b from the group ({a} commits alone) in an APPEND b's
 * server refuses once it knows of a's removal: b cannot tell it is still a voter, so its node,
 * which knows b is no longer in ORDERS's assignment, does not tell its replica of the removal
 * (the node logs why): ORDERS elects nobody on b. Its consumer follows the stream off b. */
START_TEST(a_replica_dropped_from_its_assignment_does_not_stand_in_for_its_removed_peer)
{
    e2e c;
    e2e_work w;
    memset(&c, 0, sizeof c);
    memset(&g_stand, 0, sizeof g_stand);
    c.configure_more = stand_configure;
    ck_assert_int_eq(e2e_new(&c, 4, 52 + g_seed_shift, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 4, 10 * SEC), 0);
    add_orders(&c, 2);
    e2e_work_init(&w, &c, "ORDERS", 300);
    e2e_work_run(&w, 300 * MS);
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 2);
    unsigned a = peers[0], b = peers[1], via = 0;
    while (via == a || via == b) via++;
    char aname[16], bname[16];
    snprintf(aname, sizeof aname, "%s", jr_sim_name(c.sim, a));
    snprintf(bname, sizeof bname, "%s", jr_sim_name(c.sim, b));
    w.skip[a] = w.skip[b] = 1;
    ck_assert_int_eq(jr_sim_pause(c.sim, a, 5 * SEC), 0);
    e2e_work_run(&w, 200 * MS);
    e2e_res r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_stream_evacuate(e2e_node(&c, via), "ORDERS", bname, e2e_admin_cb, &r), 0);
    while (!r.done) e2e_work_run(&w, 5 * MS);
    ck_assert_msg(r.status == 0, "evacuation: %s (%s)", jr_strerror(r.status), r.msg);
    /* b applied the placement that dropped it before it learns of a's removal */
    jr__js *bjs = jr__js_of(e2e_node(&c, b));
    uint64_t t0 = jr_sim_now(c.sim);
    const jr__meta_stream *ms;
    while (!(ms = jr__meta_stream_find(&bjs->st, "ORDERS")) ||
           jr__meta_stream_has_peer(ms, bname)) {
        ck_assert(jr_sim_now(c.sim) - t0 < 10 * SEC);
        e2e_work_run(&w, 5 * MS);
    }
    uint64_t group = ms->group;
    peer_remove_running(&w, via, aname, &r);
    ck_assert_msg(r.status == 0, "removal: %s (%s)", jr_strerror(r.status), r.msg);
    t0 = jr_sim_now(c.sim);
    while (!g_stand.unassigned && !g_stand.stands_in && jr_sim_now(c.sim) - t0 < 10 * SEC)
        e2e_work_run(&w, 5 * MS);
    e2e_work_run(&w, 2 * SEC);
    ck_assert_msg(g_stand.stands_in == 0, "a replica stood in for the removed voter");
    ck_assert_msg(g_stand.unassigned > 0, "b's node never said why it does not stand in");
    jr_group *g = jr_node_group(e2e_node(&c, b), group);
    if (g) { /* still open (not released: its group never converged) */
        jr_group_status gs;
        gs.size = sizeof gs;
        ck_assert_int_eq(jr_group_status_get(g, &gs), 0);
        ck_assert_int_ne(gs.role, JR_LEADER);
    }
    /* publishes to ORDERS still wait for a leader: their results live in w until close */
    e2e_free(&c);
    e2e_work_free(&w);
}
END_TEST

/* The other side of the stand-in: ORDERS R2 on {a, b} of four servers; a is down for good and
 * b restarts with bits of its WAL flipped (damage recovery cannot attribute: every replica of
 * b opens damaged). a is then peer-removed. b's replica may lack entries the two committed, so
 * it does not stand in for a: ORDERS elects nobody and the node says why. */
START_TEST(a_damaged_replica_of_two_does_not_stand_in_for_its_removed_peer)
{
    e2e c;
    e2e_work w;
    memset(&c, 0, sizeof c);
    memset(&g_stand, 0, sizeof g_stand);
    c.configure_more = stand_configure;
    /* one seed (no shift): the damage the flipped bits do is the seed's, and this one damages
     * ORDERS's replica on b, which the test is about */
    ck_assert_int_eq(e2e_new(&c, 4, 58, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 4, 10 * SEC), 0);
    add_orders(&c, 2);
    e2e_work_init(&w, &c, "ORDERS", 100);
    e2e_work_run(&w, 600 * MS);
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 2);
    unsigned a = peers[0], b = peers[1], via = 0;
    while (via == a || via == b) via++;
    char aname[16];
    snprintf(aname, sizeof aname, "%s", jr_sim_name(c.sim, a));
    w.skip[a] = w.skip[b] = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, a), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, b), 0);
    files f;
    f.n = 0;
    ck_assert_int_eq(jr_sim_files(c.sim, b, list_file, &f), 0);
    int flipped = 0;
    for (int k = 0; k < f.n; k++)
        if (strncmp(f.path[k], "/wal/0", 6) == 0 && strstr(f.path[k], ".wal")) {
            ck_assert_int_eq(jr_sim_flip_bits(c.sim, b, f.path[k], 64, 0, 200), 0);
            flipped++;
        }
    ck_assert_int_gt(flipped, 0);
    ck_assert_int_eq(e2e_restart(&c, b), 0);
    e2e_res r;
    ck_assert_int_eq(peer_remove(&c, via, aname, &r), 0);
    ck_assert_int_lt(e2e_wait_stream(&c, via, "ORDERS", 1, 10 * SEC), 0);
    ck_assert_int_gt(g_stand.waits_damaged, 0);
    e2e_work_free(&w);
    e2e_free(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("servers");
    TCase *tc = tcase_create("servers");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_fourth_server_joins_and_orders_grows_onto_it);
    tcase_add_test(tc, a_new_stream_is_placed_on_the_new_server_when_placement_demands_it);
    tcase_add_test(tc, peer_remove_twice_in_a_row_the_second_is_busy);
    tcase_add_test(tc, peer_remove_of_a_running_server_stops_it_and_replaces_its_replicas);
    tcase_add_test(tc, a_removed_server_that_was_down_is_refused_when_it_comes_back);
    tcase_add_test(tc, bad_input_is_refused_and_changes_nothing);
    tcase_add_test(tc, a_stream_that_cannot_be_re_placed_keeps_running_under_replicated);
    tcase_add_test(tc, replicas_restarted_after_a_removal_do_not_wait_for_the_removed_server);
    tcase_add_test(tc, two_servers_joining_at_once_are_admitted_one_after_the_other);
    tcase_add_test(tc, a_server_that_joined_and_died_before_catching_up_can_be_removed);
    tcase_add_test(tc, frames_of_unknown_servers_are_refused_but_a_join_now_and_then);
    tcase_add_test(tc, removing_the_meta_leader_moves_the_meta_group_on);
    tcase_add_test(tc, the_removed_meta_leader_hands_its_leaderships_over_before_it_stops);
    tcase_add_test(tc, an_r2_stream_keeps_its_quorum_while_its_removed_peer_leaves);
    tcase_add_test(tc, an_r2_stream_whose_paused_peer_is_removed_moves_on_without_it);
    tcase_add_test(tc,
                   a_replica_dropped_from_its_assignment_does_not_stand_in_for_its_removed_peer);
    tcase_add_test(tc, a_damaged_replica_of_two_does_not_stand_in_for_its_removed_peer);
    tcase_add_test(tc, a_join_survives_the_meta_leader_failing_mid_change);
    tcase_add_test(tc, every_node_restarted_after_a_join_recovers_the_membership_from_disk);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return e2e_run_shifted(suite, &g_seed_shift);
}
