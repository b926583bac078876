/*
 * Draining a server (jr_server_evacuate, jr_server_evacuate_cancel) and the automatic
 * re-placement of under-replicated streams, end to end over the simulated cluster, with a
 * publisher and a pull consumer running throughout:
 *
 *   - five servers, ORDERS R3 with an R3 consumer and LOGS R1 with an R1 consumer on one server:
 *     evacuating that server moves every stream and consumer replica off it (LOGS keeps its
 *     data), nothing acknowledged is lost, and no new placement picks the server;
 *   - a replica no server qualifies for (its placement tags name the server) stays, is reported
 *     unplaced in the meta info and keeps serving; cancelling the drain makes the server a
 *     placement target again; bad input is refused;
 *   - a stream held on the server by its tags stays, but its R1 consumers there move to its
 *     other peers;
 *   - the meta leader fails mid-drain: the next one finishes it; a replacement that dies
 *     before it caught up holds its move until cancelled, then the drain picks another;
 *   - a stream left under-replicated by a peer-remove is re-placed by itself when a server
 *     joins, and when a server stops draining; an R1 stream whose server was removed starts
 *     again, empty, on another server;
 *   - a replacement whose writes fail is not promoted, so the drained peer keeps its vote.
 *
 * Every node carries the tag "host:<name>", so a stream can be pinned to one server.
 * JR_E2E_LOG=1 prints the nodes' log lines; JR_SEEDS=first:count runs every test with count
 * other seeds (suite 'soak': 1000:100).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "js/js.h"
#include "vfs/memfs.h"

static const char *orders_subj[] = {"orders.>"};
static const char *logs_subj[] = {"logs.>"};
static const char *host_tag[E2E_MAX] = {"host:n0", "host:n1", "host:n2", "host:n3",
                                        "host:n4", "host:n5", "host:n6", "host:n7"};

/* Every publish answered and each acknowledged one in ORDERS (e2e_work_check); most were
 * acknowledged, and the consumer received some. */
static void check_nothing_lost(e2e_work *w, unsigned via)
{
    ck_assert_int_gt(e2e_work_check(w, via), w->issued / 2);
    ck_assert_uint_gt(w->delivered, 0);
}

static void on_consumer(void *arg, int status, const char *msg, const char *name)
{
    (void)name;
    e2e_admin_cb(arg, status, msg);
}

static void add_consumer(e2e *c, const char *stream, const char *name, int replicas)
{
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.durable_name = name;
    cc.ack_policy = JR_ACK_EXPLICIT;
    cc.num_replicas = replicas;
    e2e_res r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_consumer_create(e2e_node(c, 0), stream, &cc, on_consumer, &r), 0);
    ck_assert_int_eq(e2e_wait(c, &r, 10 * SEC), 0);
    ck_assert_msg(r.status == 0, "consumer %s: %s", name, r.msg);
}

/* Added to every test's seed: JR_SEEDS=first:count runs the suite count times, with first,
 * first + 1, ... (main), so a soak run tries other seeds. */
static uint64_t g_seed_shift;

/* n servers tagged host:<name>, ORDERS R3 with its consumer PROC (R3). */
static void cluster(e2e *c, unsigned n, uint64_t seed)
{
    seed += g_seed_shift;
    memset(c, 0, sizeof *c);
    for (unsigned i = 0; i < E2E_MAX; i++) {
        c->tags[i][0] = host_tag[i % 8];
        c->ntags[i] = 1;
    }
    ck_assert_int_eq(e2e_new(c, n, seed, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(c, n, 10 * SEC), 0);
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", orders_subj, 1, 3);
    e2e_res r;
    ck_assert_int_eq(e2e_add(c, 0, &cfg, &r), 0);
    add_consumer(c, "ORDERS", "PROC", 3);
}

/* LOGS R1 pinned to node `on` (its tag), with `msgs` messages and an R1 consumer L; unpinned
 * afterwards if `unpin` (the replica stays where it is: it fits the new placement). */
static void add_logs(e2e *c, unsigned on, int msgs, int unpin)
{
    jr_stream_config cfg;
    e2e_config(&cfg, "LOGS", logs_subj, 1, 1);
    cfg.placement = e2e_placement(NULL, &host_tag[on], 1);
    e2e_res r;
    ck_assert_msg(e2e_add(c, 0, &cfg, &r) == 0, "LOGS: %s", r.msg);
    for (int i = 0; i < msgs; i++) {
        char d[32];
        snprintf(d, sizeof d, "log %d", i);
        ck_assert_int_eq(e2e_publish(c, 0, "logs.a", d, strlen(d), NULL, &r), 0);
    }
    add_consumer(c, "LOGS", "L", 1);
    if (unpin) {
        cfg.placement = NULL;
        ck_assert_msg(e2e_update(c, 0, &cfg, &r) == 0, "LOGS unpinned: %s", r.msg);
    }
    unsigned peers[2];
    ck_assert_int_eq(e2e_meta_peers(c, 0, "LOGS", peers, 2), 1);
    ck_assert_uint_eq(peers[0], on);
}

/* Every LOGS message 1..msgs reads back through node via. */
static void check_logs(e2e *c, unsigned via, int msgs)
{
    for (int i = 0; i < msgs; i++) {
        e2e_res r;
        memset(&r, 0, sizeof r);
        ck_assert_msg(e2e_msg_get(c, via, "LOGS", (uint64_t)i + 1, &r) == 0, "LOGS seq %d: %s",
                      i + 1, r.msg);
        char d[32];
        snprintf(d, sizeof d, "log %d", i);
        ck_assert_str_eq(r.data, d);
    }
}

/* Synchronous drain calls, the workload running until they answer. */
static int evacuate(e2e_work *w, unsigned via, const char *server, int cancel, e2e_res *r)
{
    memset(r, 0, sizeof *r);
    jr_node *n = e2e_node(w->c, via);
    int rc = cancel ? jr_server_evacuate_cancel(n, server, e2e_admin_cb, r)
                    : jr_server_evacuate(n, server, e2e_admin_cb, r);
    if (rc) return rc;
    while (!r->done) e2e_work_run(w, 5 * MS);
    return r->status;
}

/* The meta info, one server's drain report and the under-replicated list. */
typedef struct minfo {
    int done, status;
    int draining;
    size_t nremaining, nunplaced, nunder;
    char remaining[JR_DRAIN_LIST_MAX][128], unplaced[JR_DRAIN_LIST_MAX][128];
    char under[JR_DRAIN_LIST_MAX][128];
    const char *server; /* the server whose report is copied */
} minfo;

static void on_minfo(void *arg, int status, const char *msg, const jr_meta_info *info)
{
    minfo *m = arg;
    (void)msg;
    m->done = 1;
    m->status = status;
    if (!info) return;
    m->nunder = info->nunder_replicated;
    for (size_t i = 0; i < info->nunder_replicated; i++)
        snprintf(m->under[i], sizeof m->under[i], "%s", info->under_replicated[i]);
    for (size_t i = 0; i < info->nservers; i++) {
        const jr_server_info *s = info->servers[i];
        if (!m->server || strcmp(s->name, m->server) != 0) continue;
        m->draining = s->draining;
        m->nremaining = s->nremaining;
        m->nunplaced = s->nunplaced;
        for (size_t k = 0; k < s->nremaining; k++)
            snprintf(m->remaining[k], sizeof m->remaining[k], "%s", s->remaining[k]);
        for (size_t k = 0; k < s->nunplaced; k++)
            snprintf(m->unplaced[k], sizeof m->unplaced[k], "%s", s->unplaced[k]);
    }
}

static int minfo_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((minfo *)arg)->done;
}

static int meta_info(e2e *c, unsigned via, const char *server, minfo *m)
{
    memset(m, 0, sizeof *m);
    m->server = server;
    int rc = jr_meta_info_get(e2e_node(c, via), on_minfo, m);
    if (rc) return rc;
    ck_assert_int_eq(jr_sim_run_until(c->sim, minfo_done, m, 20 * SEC), 0);
    return m->status;
}

static int listed(char (*v)[128], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0) return 1;
    return 0;
}

/* Number of stream and consumer replicas node `via`'s meta state places on `server`, and
 * whether any stream or consumer is mid peer change. */
static size_t on_server(e2e *c, unsigned via, const char *server, int *busy)
{
    const jr__meta_state *st = &jr__js_of(e2e_node(c, via))->st;
    size_t n = 0;
    *busy = 0;
    for (size_t i = 0; i < st->nstreams; i++) {
        const jr__meta_stream *s = st->streams[i];
        n += (size_t)jr__meta_stream_has_peer(s, server);
        *busy |= jr__meta_stream_busy(s);
        for (size_t k = 0; k < s->nconsumers; k++) {
            n += (size_t)jr__meta_consumer_has_peer(s->consumers[k], server);
            *busy |= jr__meta_consumer_busy(s->consumers[k]);
        }
    }
    return n;
}

/* Runs the workload until node via's meta state holds `left` replicas on server and nothing is
 * mid-change, within limit (or fails). */
static void run_until_drained(e2e_work *w, unsigned via, const char *server, size_t left,
                              uint64_t limit)
{
    uint64_t t0 = jr_sim_now(w->c->sim);
    for (;;) {
        int busy;
        size_t n = on_server(w->c, via, server, &busy);
        if (n == left && !busy) return;
        ck_assert_msg(jr_sim_now(w->c->sim) - t0 < limit,
                      "%s still holds %zu replicas (want %zu), busy %d", server, n, left, busy);
        e2e_work_run(w, 20 * MS);
    }
}

/* A node index of ORDERS's peers (placement order) in node 0's meta state. */
static unsigned orders_peer(e2e *c, size_t k)
{
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(c, 0, "ORDERS", peers, 4), 3);
    return peers[k];
}

/* Tests ---------------------------------------------------------------------------------------*/

START_TEST(evacuating_a_server_moves_every_stream_and_consumer_replica_off_it)
{
    e2e c;
    e2e_work w;
    cluster(&c, 5, 301);
    unsigned x = orders_peer(&c, 0);
    const char *xn = jr_sim_name(c.sim, x);
    add_logs(&c, x, 50, 1);
    e2e_work_init(&w, &c, "ORDERS", 600);
    e2e_work_run(&w, 500 * MS);
    int busy;
    ck_assert_uint_eq(on_server(&c, 0, xn, &busy), 4); /* ORDERS, PROC, LOGS, L */
    unsigned via = (x + 1) % 5;
    e2e_res r;
    ck_assert_msg(evacuate(&w, via, xn, 0, &r) == 0, "evacuate: %s", r.msg);
    ck_assert_msg(strstr(r.msg, "draining: 2 stream and 2 consumer replicas to move off"), "%s",
                  r.msg);
    /* asked again: accepted, nothing more happens */
    ck_assert_int_eq(evacuate(&w, via, xn, 0, &r), 0);
    ck_assert_msg(strstr(r.msg, "draining already"), "%s", r.msg);
    run_until_drained(&w, 0, xn, 0, 60 * SEC);
    /* every replica left the server: its local replicas are gone too */
    uint64_t t0 = jr_sim_now(c.sim);
    while (e2e_has_replica(&c, x, "ORDERS") || e2e_has_replica(&c, x, "LOGS")) {
        ck_assert(jr_sim_now(c.sim) - t0 < 20 * SEC);
        e2e_work_run(&w, 20 * MS);
    }
    uint64_t d, a;
    ck_assert_int_eq(e2e_consumer_digest(&c, x, "ORDERS", "PROC", &d, &a), JR_ENOTFOUND);
    ck_assert_int_eq(e2e_consumer_digest(&c, x, "LOGS", "L", &d, &a), JR_ENOTFOUND);
    /* ORDERS R3 elsewhere; LOGS (R1) kept its data on its new server */
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 3);
    for (int k = 0; k < 3; k++) ck_assert_uint_ne(peers[k], x);
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "LOGS", peers, 4), 1);
    ck_assert_uint_ne(peers[0], x);
    check_logs(&c, via, 50);
    /* the meta info says the server drains and holds nothing */
    minfo m;
    ck_assert_int_eq(meta_info(&c, via, xn, &m), 0);
    ck_assert_int_eq(m.draining, 1);
    ck_assert_uint_eq(m.nremaining, 0);
    ck_assert_uint_eq(m.nunplaced, 0);
    /* no placement picks it: an R5 stream cannot be placed, an R3 avoids it */
    static const char *s5[] = {"five.>"}, *s3[] = {"three.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "FIVE", s5, 1, 5);
    ck_assert_int_ne(e2e_add(&c, via, &cfg, &r), 0);
    ck_assert_msg(strstr(r.msg, "peer draining"), "%s", r.msg);
    e2e_config(&cfg, "THREE", s3, 1, 3);
    ck_assert_msg(e2e_add(&c, via, &cfg, &r) == 0, "THREE: %s", r.msg);
    ck_assert_int_eq(e2e_meta_peers(&c, via, "THREE", peers, 4), 3);
    for (int k = 0; k < 3; k++) ck_assert_uint_ne(peers[k], x);
    e2e_work_run(&w, 500 * MS);
    check_nothing_lost(&w, via);
    e2e_work_free(&w);
    e2e_free(&c);
}
END_TEST

START_TEST(a_replica_no_server_qualifies_for_stays_and_is_reported)
{
    e2e c;
    e2e_work w;
    cluster(&c, 5, 302);
    unsigned x = orders_peer(&c, 1);
    const char *xn = jr_sim_name(c.sim, x);
    add_logs(&c, x, 20, 0); /* pinned: only x qualifies */
    e2e_work_init(&w, &c, "ORDERS", 400);
    e2e_work_run(&w, 300 * MS);
    unsigned via = (x + 2) % 5;
    e2e_res r;
    ck_assert_msg(evacuate(&w, via, xn, 0, &r) == 0, "evacuate: %s", r.msg);
    /* ORDERS and PROC leave; LOGS and L stay (nothing qualifies), never dropped */
    run_until_drained(&w, 0, xn, 2, 60 * SEC);
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "LOGS", peers, 4), 1);
    ck_assert_uint_eq(peers[0], x);
    minfo m;
    ck_assert_int_eq(meta_info(&c, via, xn, &m), 0);
    ck_assert_int_eq(m.draining, 1);
    ck_assert_uint_eq(m.nremaining, 2);
    ck_assert(listed(m.remaining, m.nremaining, "LOGS"));
    ck_assert(listed(m.remaining, m.nremaining, "LOGS/L"));
    ck_assert(listed(m.unplaced, m.nunplaced, "LOGS"));
    ck_assert(!listed(m.remaining, m.nremaining, "ORDERS"));
    /* LOGS still serves: its messages read back, a new one is stored */
    check_logs(&c, via, 20);
    ck_assert_int_eq(e2e_publish(&c, via, "logs.b", "log 20", 6, NULL, &r), 0);
    check_logs(&c, via, 21);
    /* cancel: the server takes placements again; LOGS stays where it is */
    ck_assert_msg(evacuate(&w, via, xn, 1, &r) == 0, "cancel: %s", r.msg);
    ck_assert_msg(strstr(r.msg, "takes placements again"), "%s", r.msg);
    ck_assert_int_eq(meta_info(&c, via, xn, &m), 0);
    ck_assert_int_eq(m.draining, 0);
    ck_assert_uint_eq(m.nremaining, 0); /* only reported while draining */
    ck_assert_int_eq(evacuate(&w, via, xn, 1, &r), JR_ENOCHANGE);
    char want[64];
    snprintf(want, sizeof want, "server '%s' is not draining", xn);
    ck_assert_str_eq(r.msg, want);
    e2e_work_run(&w, 500 * MS);
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "LOGS", peers, 4), 1);
    ck_assert_uint_eq(peers[0], x);
    /* bad input: an unknown server, a NULL one, a name the log cannot carry */
    ck_assert_int_eq(evacuate(&w, via, "n9", 0, &r), JR_ENOTMEMBER);
    ck_assert_int_eq(jr_server_evacuate(e2e_node(&c, via), NULL, e2e_admin_cb, &r), JR_EINVAL);
    ck_assert_int_eq(jr_server_evacuate(e2e_node(&c, via), "a b", e2e_admin_cb, &r), JR_EINVAL);
    ck_assert_int_eq(jr_server_evacuate(e2e_node(&c, via), "n1", NULL, NULL), JR_EINVAL);
    check_nothing_lost(&w, via);
    e2e_work_free(&w);
    e2e_free(&c);
}
END_TEST

/* A stream that cannot leave the server (its tags hold it on three servers) stays; its R1
 * consumers on the server still move to its other peers. */
START_TEST(consumers_of_a_stream_that_cannot_move_still_leave_the_server)
{
    e2e c;
    memset(&c, 0, sizeof c);
    for (unsigned i = 0; i < 4; i++) {
        c.tags[i][0] = host_tag[i];
        c.tags[i][1] = i < 3 ? "grp:a" : "grp:b";
        c.ntags[i] = 2;
    }
    ck_assert_int_eq(e2e_new(&c, 4, 307 + g_seed_shift, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 4, 10 * SEC), 0);
    static const char *grp[] = {"grp:a"}, *ps[] = {"pinned.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "PINNED", ps, 1, 3);
    cfg.placement = e2e_placement(NULL, grp, 1);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "PINNED: %s", r.msg);
    char names[6][8];
    for (int i = 0; i < 6; i++) {
        snprintf(names[i], sizeof names[i], "PC%d", i);
        add_consumer(&c, "PINNED", names[i], 1);
    }
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(e2e_publish(&c, 1, "pinned.a", "p", 1, NULL, &r), 0);
    /* drain the server of PC0's replica (one of the three grp:a servers) */
    const jr__meta_stream *s = jr__meta_stream_find(&jr__js_of(e2e_node(&c, 0))->st, "PINNED");
    char xn[16]; /* a copy: the assignment's names go when PC0 moves */
    snprintf(xn, sizeof xn, "%s", jr__meta_consumer_find(s, "PC0")->peers[0]);
    unsigned x = xn[1] - '0', via = (x + 1) % 3;
    int busy;
    ck_assert_uint_ge(on_server(&c, via, xn, &busy), 2); /* the stream and PC0 at least */
    e2e_work w;
    e2e_work_init(&w, &c, "ORDERS", 0); /* no ORDERS here: the loop only runs the cluster */
    w.fetching = 1;
    e2e_res er;
    ck_assert_msg(evacuate(&w, via, xn, 0, &er) == 0, "evacuate: %s", er.msg);
    run_until_drained(&w, via, xn, 1, 60 * SEC); /* only PINNED's own replica is left */
    s = jr__meta_stream_find(&jr__js_of(e2e_node(&c, via))->st, "PINNED");
    ck_assert(jr__meta_stream_has_peer(s, xn));
    for (size_t k = 0; k < s->nconsumers; k++)
        ck_assert(!jr__meta_consumer_has_peer(s->consumers[k], xn));
    minfo m;
    ck_assert_int_eq(meta_info(&c, via, xn, &m), 0);
    ck_assert_uint_eq(m.nremaining, 1);
    ck_assert_str_eq(m.remaining[0], "PINNED");
    ck_assert_uint_eq(m.nunplaced, 1);
    /* the stream still takes writes and keeps every message */
    ck_assert_int_eq(e2e_publish(&c, via, "pinned.a", "p", 1, NULL, &r), 0);
    ck_assert_uint_eq(r.seq, 21);
    e2e_work_free(&w);
    e2e_free(&c);
}
END_TEST

START_TEST(the_drain_completes_across_a_meta_leader_failover)
{
    e2e c;
    e2e_work w;
    cluster(&c, 5, 303);
    int leader = e2e_meta_leader(&c);
    ck_assert_int_ge(leader, 0);
    /* drain a peer of ORDERS that does not lead the meta group */
    unsigned x = orders_peer(&c, 0) == (unsigned)leader ? orders_peer(&c, 1) : orders_peer(&c, 0);
    const char *xn = jr_sim_name(c.sim, x);
    add_logs(&c, x, 30, 1);
    e2e_work_init(&w, &c, "ORDERS", 700);
    e2e_work_run(&w, 300 * MS);
    unsigned via = x;
    e2e_res r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_server_evacuate(e2e_node(&c, via), xn, e2e_admin_cb, &r), 0);
    /* the meta leader dies as soon as it applied the drain, before it proposed any move */
    jr__js *ljs = jr__js_of(e2e_node(&c, (unsigned)leader));
    uint64_t t0 = jr_sim_now(c.sim);
    while (!jr__meta_server_draining(&ljs->st, xn)) {
        ck_assert(jr_sim_now(c.sim) - t0 < 10 * SEC);
        jr_sim_run_for(c.sim, 1 * MS);
    }
    ck_assert_uint_eq(ljs->drain_wait, 0);
    w.skip[leader] = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)leader), 0);
    while (!r.done) e2e_work_run(&w, 5 * MS);
    ck_assert_msg(r.status == 0, "evacuate: %s (%s)", jr_strerror(r.status), r.msg);
    e2e_work_run(&w, 2 * SEC);
    ck_assert_int_ne(e2e_meta_leader(&c), leader);
    run_until_drained(&w, via, xn, 0, 60 * SEC);
    /* back, it learns the same: the drain is in the meta state, not in a leader's memory */
    ck_assert_int_eq(e2e_restart(&c, (unsigned)leader), 0);
    e2e_work_run(&w, 2 * SEC);
    ck_assert(jr__meta_server_draining(&jr__js_of(e2e_node(&c, (unsigned)leader))->st, xn));
    run_until_drained(&w, (unsigned)leader, xn, 0, 20 * SEC);
    w.skip[leader] = 0; /* publishes through it again once its meta state caught up */
    e2e_work_run(&w, 500 * MS);
    check_logs(&c, via, 30);
    check_nothing_lost(&w, via);
    e2e_work_free(&w);
    e2e_free(&c);
}
END_TEST

/* The replacement a drain picked dies before it caught up: the move waits for it; cancelled,
 * the drain picks another server and finishes. */
START_TEST(a_replacement_that_dies_mid_move_is_replaced_after_a_cancel)
{
    e2e c;
    e2e_work w;
    cluster(&c, 5, 308);
    unsigned x = orders_peer(&c, 0), via = orders_peer(&c, 1);
    const char *xn = jr_sim_name(c.sim, x);
    e2e_work_init(&w, &c, "ORDERS", 800);
    e2e_work_run(&w, 300 * MS);
    e2e_res r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_server_evacuate(e2e_node(&c, via), xn, e2e_admin_cb, &r), 0);
    /* the moment the assignment names the replacement, it dies */
    const jr__meta_state *st = &jr__js_of(e2e_node(&c, via))->st;
    uint64_t t0 = jr_sim_now(c.sim);
    while (!jr__meta_stream_busy(jr__meta_stream_find(st, "ORDERS"))) {
        ck_assert(jr_sim_now(c.sim) - t0 < 20 * SEC);
        jr_sim_run_for(c.sim, 1 * MS);
    }
    unsigned peers[4], t = 0;
    ck_assert_int_eq(e2e_meta_peers(&c, via, "ORDERS", peers, 4), 3);
    for (int k = 0; k < 3; k++)
        if (peers[k] != orders_peer(&c, 1) && peers[k] != orders_peer(&c, 2)) t = peers[k];
    ck_assert_uint_ne(t, x);
    w.skip[t] = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, t), 0);
    ck_assert_int_eq(e2e_wait(&c, &r, 20 * SEC), 0);
    ck_assert_msg(r.status == 0, "evacuate: %s", r.msg);
    /* the move waits for it (ORDERS keeps serving on the others) */
    e2e_work_run(&w, 3 * SEC);
    ck_assert_int_eq(e2e_meta_busy(&c, via, "ORDERS"), 1);
    /* cancelled: back to where it started, then the drain tries another server */
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_stream_cancel_move(e2e_node(&c, via), "ORDERS", e2e_admin_cb, &r), 0);
    while (!r.done) e2e_work_run(&w, 5 * MS);
    ck_assert_msg(r.status == 0, "cancel: %s", r.msg);
    run_until_drained(&w, via, xn, 0, 60 * SEC);
    ck_assert_int_eq(e2e_meta_peers(&c, via, "ORDERS", peers, 4), 3);
    for (int k = 0; k < 3; k++) {
        ck_assert_uint_ne(peers[k], x);
        ck_assert_uint_ne(peers[k], t);
    }
    ck_assert_int_ge(e2e_wait_stream(&c, via, "ORDERS", 2, 20 * SEC), 0);
    check_nothing_lost(&w, via);
    e2e_work_free(&w);
    e2e_free(&c);
}
END_TEST

START_TEST(an_under_replicated_stream_is_re_placed_when_a_server_joins)
{
    e2e c;
    e2e_work w;
    cluster(&c, 3, 304);
    e2e_work_init(&w, &c, "ORDERS", 900);
    e2e_work_run(&w, 300 * MS);
    /* n2 dies for good and is removed: nowhere to re-place its replicas */
    w.skip[2] = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    e2e_work_run(&w, 300 * MS);
    e2e_res r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_server_peer_remove(e2e_node(&c, 0), "n2", e2e_admin_cb, &r), 0);
    while (!r.done) e2e_work_run(&w, 5 * MS);
    ck_assert_msg(r.status == 0, "%s", r.msg);
    ck_assert_msg(strstr(r.msg, "not re-placed (under-replicated): ORDERS"), "%s", r.msg);
    minfo m;
    ck_assert_int_eq(meta_info(&c, 0, NULL, &m), 0);
    ck_assert(listed(m.under, m.nunder, "ORDERS"));
    ck_assert(listed(m.under, m.nunder, "ORDERS/PROC"));
    e2e_work_run(&w, 1 * SEC);
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 3); /* still names n2 */
    /* a fourth server joins: the meta leader re-places ORDERS (and PROC) onto it by itself */
    unsigned n3;
    ck_assert_int_eq(jr_sim_add_node(c.sim, 1, &n3), 0);
    c.n = jr_sim_size(c.sim);
    run_until_drained(&w, 0, "n2", 0, 60 * SEC);
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 3);
    int has_new = 0;
    for (int k = 0; k < 3; k++) has_new |= peers[k] == n3;
    ck_assert(has_new);
    ck_assert_int_eq(meta_info(&c, 0, NULL, &m), 0);
    ck_assert_uint_eq(m.nunder, 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "ORDERS", 2, 20 * SEC), 0);
    check_nothing_lost(&w, 0);
    e2e_work_free(&w);
    e2e_free(&c);
}
END_TEST

START_TEST(an_under_replicated_stream_is_re_placed_when_a_drain_is_cancelled)
{
    e2e c;
    e2e_work w;
    cluster(&c, 4, 305);
    /* the server without ORDERS drains, then a peer of ORDERS dies and is removed */
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 3);
    unsigned spare = 0;
    while (spare == peers[0] || spare == peers[1] || spare == peers[2]) spare++;
    unsigned dead = peers[2];
    e2e_work_init(&w, &c, "ORDERS", 900);
    e2e_work_run(&w, 300 * MS);
    unsigned via = peers[0];
    e2e_res r;
    ck_assert_msg(evacuate(&w, via, jr_sim_name(c.sim, spare), 0, &r) == 0, "%s", r.msg);
    w.skip[dead] = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, dead), 0);
    e2e_work_run(&w, 300 * MS);
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(
        jr_server_peer_remove(e2e_node(&c, via), jr_sim_name(c.sim, dead), e2e_admin_cb, &r), 0);
    while (!r.done) e2e_work_run(&w, 5 * MS);
    ck_assert_msg(r.status == 0, "%s", r.msg);
    ck_assert_msg(strstr(r.msg, "not re-placed (under-replicated): ORDERS"), "%s", r.msg);
    e2e_work_run(&w, 1 * SEC);
    ck_assert_int_eq(e2e_meta_peers(&c, via, "ORDERS", peers, 4), 3);
    int has_dead = 0;
    for (int k = 0; k < 3; k++) has_dead |= peers[k] == dead;
    ck_assert(has_dead);
    /* the drain ends: the spare server qualifies, and ORDERS goes there by itself */
    ck_assert_msg(evacuate(&w, via, jr_sim_name(c.sim, spare), 1, &r) == 0, "%s", r.msg);
    run_until_drained(&w, via, jr_sim_name(c.sim, dead), 0, 60 * SEC);
    ck_assert_int_eq(e2e_meta_peers(&c, via, "ORDERS", peers, 4), 3);
    int has_spare = 0;
    for (int k = 0; k < 3; k++) has_spare |= peers[k] == spare;
    ck_assert(has_spare);
    ck_assert_int_ge(e2e_wait_stream(&c, via, "ORDERS", 2, 20 * SEC), 0);
    check_nothing_lost(&w, via);
    e2e_work_free(&w);
    e2e_free(&c);
}
END_TEST

START_TEST(an_r1_stream_whose_server_was_removed_starts_again_empty_elsewhere)
{
    e2e c;
    e2e_work w;
    cluster(&c, 4, 306);
    unsigned x = orders_peer(&c, 2);
    const char *xn = jr_sim_name(c.sim, x);
    add_logs(&c, x, 10, 1);
    e2e_work_init(&w, &c, "ORDERS", 600);
    e2e_work_run(&w, 300 * MS);
    /* LOGS's only server dies for good and is removed: its data went with it */
    w.skip[x] = 1;
    ck_assert_int_eq(jr_sim_crash(c.sim, x), 0);
    e2e_work_run(&w, 300 * MS);
    unsigned via = (x + 1) % 4;
    e2e_res r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_server_peer_remove(e2e_node(&c, via), xn, e2e_admin_cb, &r), 0);
    while (!r.done) e2e_work_run(&w, 5 * MS);
    ck_assert_msg(r.status == 0, "%s", r.msg);
    /* the meta leader starts LOGS (and its consumer) again on a live server, empty */
    run_until_drained(&w, via, xn, 0, 60 * SEC);
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, via, "LOGS", peers, 4), 1);
    ck_assert_uint_ne(peers[0], x);
    ck_assert_int_ge(e2e_wait_stream(&c, via, "LOGS", 0, 20 * SEC), 0);
    e2e_res info;
    ck_assert_int_eq(e2e_info(&c, via, "LOGS", &info), 0);
    ck_assert_uint_eq(info.state.msgs, 0);
    ck_assert_int_eq(e2e_publish(&c, via, "logs.c", "again", 5, NULL, &r), 0);
    ck_assert_uint_eq(r.seq, 1);
    minfo m;
    ck_assert_int_eq(meta_info(&c, via, NULL, &m), 0);
    ck_assert_uint_eq(m.nunder, 0);
    /* ORDERS went on with its other peers and a replacement; nothing acknowledged lost */
    check_nothing_lost(&w, via);
    e2e_work_free(&w);
    e2e_free(&c);
}
END_TEST

/* jetraft-sim seed 601 (three servers): an R2 stream drained off one peer onto a server whose
 * writes then fail (its WAL failed: it acknowledges nothing, yet answers what needs nothing
 * durable, so its leader hears from it) must not promote it: the short log is within the
 * leader's slack however far behind it is. Promoted, the drained peer is removed next, and the
 * replacement, restarted by its host, holds nothing of the group: a joiner on a restarted
 * server, damaged, while the configuration of two needs its vote. It stays an observer until
 * it acknowledged the configuration that added it, then the move completes. */
START_TEST(a_replacement_whose_writes_fail_is_not_promoted)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 601 + g_seed_shift, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
    jr_stream_config cfg;
    e2e_config(&cfg, "LOGS", logs_subj, 1, 2);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "LOGS: %s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "LOGS", 1, 10 * SEC), 0);
    unsigned peers[3];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "LOGS", peers, 3), 2);
    unsigned a = peers[0], b = peers[1], t = 3 - a - b;
    /* LOGS has no leader while b is down: the move waits for it */
    ck_assert_int_eq(jr_sim_crash(c.sim, b), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    ck_assert_int_eq(e2e_replica_leader(&c, a, "LOGS"), -1);
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_server_evacuate(e2e_node(&c, t), jr_sim_name(c.sim, a), e2e_admin_cb, &r),
                     0);
    ck_assert_int_eq(e2e_wait(&c, &r, 20 * SEC), 0);
    ck_assert_msg(r.status == 0, "evacuate: %s", r.msg);
    uint64_t t0 = jr_sim_now(c.sim);
    while (!e2e_has_replica(&c, t, "LOGS")) {
        ck_assert_msg(jr_sim_now(c.sim) - t0 < 20 * SEC, "no replica on the replacement");
        jr_sim_run_for(c.sim, 1 * MS);
    }
    /* b is back (its meta replica vouched for); then t's writes fail (its WAL fails at its
     * next flush), before LOGS elects a leader that adds it */
    ck_assert_int_eq(e2e_restart(&c, b), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
    ck_assert_int_eq(e2e_replica_leader(&c, a, "LOGS"), -1);
    ck_assert_int_eq(jr__memfs_fail(jr_sim_vfs(c.sim, t), JR__MEMFS_PWRITE, 1, JR_EIO, 1, NULL), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    unsigned idx[4];
    int voter[4], added = 0;
    int nm = e2e_members(&c, b, "LOGS", idx, voter, 4);
    ck_assert_int_eq(nm, 3);
    for (int k = 0; k < nm; k++) {
        if (idx[k] == t) added = 1;
        ck_assert_msg(voter[k] == (idx[k] != t), "n%u voter %d", idx[k], voter[k]);
    }
    ck_assert(added);
    /* its host restarts it once the errors end: it catches up and the move completes */
    jr__memfs_fail_clear(jr_sim_vfs(c.sim, t));
    ck_assert_int_eq(jr_sim_crash(c.sim, t), 0);
    ck_assert_int_eq(e2e_restart(&c, t), 0);
    t0 = jr_sim_now(c.sim);
    while (e2e_meta_busy(&c, b, "LOGS") != 0) {
        ck_assert_msg(jr_sim_now(c.sim) - t0 < 60 * SEC, "the move did not complete");
        jr_sim_run_for(c.sim, 10 * MS);
    }
    ck_assert_int_eq(e2e_meta_peers(&c, b, "LOGS", peers, 3), 2);
    ck_assert_uint_eq(peers[0] + peers[1], b + t);
    ck_assert_int_ge(e2e_wait_stream(&c, b, "LOGS", 1, 20 * SEC), 0);
    e2e_free(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("evacuate_server");
    TCase *tc = tcase_create("evacuate_server");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, evacuating_a_server_moves_every_stream_and_consumer_replica_off_it);
    tcase_add_test(tc, a_replica_no_server_qualifies_for_stays_and_is_reported);
    tcase_add_test(tc, consumers_of_a_stream_that_cannot_move_still_leave_the_server);
    tcase_add_test(tc, the_drain_completes_across_a_meta_leader_failover);
    tcase_add_test(tc, a_replacement_that_dies_mid_move_is_replaced_after_a_cancel);
    tcase_add_test(tc, an_under_replicated_stream_is_re_placed_when_a_server_joins);
    tcase_add_test(tc, an_under_replicated_stream_is_re_placed_when_a_drain_is_cancelled);
    tcase_add_test(tc, an_r1_stream_whose_server_was_removed_starts_again_empty_elsewhere);
    tcase_add_test(tc, a_replacement_whose_writes_fail_is_not_promoted);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return e2e_run_shifted(suite, &g_seed_shift);
}
