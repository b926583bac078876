/* Health checks: jr_stream_check and jr_consumer_check judge a stream's and a consumer's
 * replicas as `nats server check stream --peer-expect N` does (OK, then CRITICAL with a crashed
 * or lagging peer, a wrong peer count or no leader, WARNING while a replica joins), their
 * Nagios line compared as a whole; jr_node_health reports a healthy node, then one whose peers
 * are down. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "js/js.h"
#include "raft/impl.h"
#include "vfs/memfs.h"

typedef struct chk {
    int done;
    int status;
    int result; /* a result was handed over */
    int check_status;
    uint32_t expected, peers, current;
    uint64_t lag_max;
    char leader[64];
    char line[512];
    char msg[256];
} chk;

static void check_cb(void *arg, int status, const char *msg, const jr_check_result *res)
{
    chk *k = arg;
    ck_assert_msg(!k->done, "a check callback ran twice");
    k->done = 1;
    k->status = status;
    snprintf(k->msg, sizeof k->msg, "%s", msg);
    if (!res) return;
    k->result = 1;
    k->check_status = res->status;
    k->expected = res->expected;
    k->peers = res->peers;
    k->current = res->current;
    k->lag_max = res->lag_max;
    snprintf(k->leader, sizeof k->leader, "%s", res->leader ? res->leader : "");
    int need = jr_stream_check_format(res, k->line, sizeof k->line);
    ck_assert_int_gt(need, 0);
    ck_assert_int_eq((size_t)need, strlen(k->line));
}

static int chk_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((chk *)arg)->done;
}

static void stream_check(e2e *c, unsigned via, const char *name, int peer_expect, uint64_t lag,
                         uint64_t seen_ns, chk *k)
{
    memset(k, 0, sizeof *k);
    jr_check_opts o;
    jr_check_opts_init(&o);
    o.peer_expect = peer_expect;
    o.lag_critical = lag;
    o.seen_critical_ns = seen_ns;
    ck_assert_int_eq(jr_stream_check(e2e_node(c, via), name, &o, check_cb, k), 0);
    ck_assert_msg(!k->done, "the callback ran inside the call");
    ck_assert_int_eq(jr_sim_run_until(c->sim, chk_done, k, 60 * SEC), 0);
    ck_assert_int_eq(k->result, 1);
}

static void consumer_check(e2e *c, unsigned via, const char *stream, const char *name,
                           int peer_expect, chk *k)
{
    memset(k, 0, sizeof *k);
    jr_check_opts o;
    jr_check_opts_init(&o);
    o.peer_expect = peer_expect;
    ck_assert_int_eq(jr_consumer_check(e2e_node(c, via), stream, name, &o, check_cb, k), 0);
    ck_assert_msg(!k->done, "the callback ran inside the call");
    ck_assert_int_eq(jr_sim_run_until(c->sim, chk_done, k, 60 * SEC), 0);
    ck_assert_int_eq(k->result, 1);
}

typedef struct cons_res {
    int done, status;
    char msg[256];
} cons_res;

static void cons_cb(void *arg, int status, const char *msg, const char *name)
{
    cons_res *r = arg;
    (void)name;
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
}

static int cons_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((cons_res *)arg)->done;
}

/* A 3-node cluster with an R3 stream ORDERS whose replicas are all current, and (with_consumer)
 * a durable consumer "dur" on it. */
static void setup(e2e *c, uint64_t seed, int with_consumer)
{
    memset(c, 0, sizeof *c);
    ck_assert_int_eq(e2e_new(c, 3, seed, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(c, 3, 10 * SEC), 0);
    const char *subj[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 3);
    e2e_res r;
    ck_assert_msg(e2e_add(c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(c, 0, "ORDERS", 2, 10 * SEC), 0);
    ck_assert_int_eq(e2e_publish(c, 0, "orders.new", "x", 1, NULL, &r), 0);
    if (with_consumer) {
        jr_consumer_config cc;
        jr_consumer_config_init(&cc);
        cc.durable_name = "dur";
        cons_res cr;
        memset(&cr, 0, sizeof cr);
        ck_assert_int_eq(jr_consumer_create(e2e_node(c, 0), "ORDERS", &cc, cons_cb, &cr), 0);
        ck_assert_int_eq(jr_sim_run_until(c->sim, cons_done, &cr, 60 * SEC), 0);
        ck_assert_msg(cr.status == 0, "consumer: %s", cr.msg);
    }
    /* every replica current and seen recently */
    jr_sim_run_for(c->sim, 2 * SEC);
}

/* A node other than `a` and `b`. */
static unsigned other(unsigned a, unsigned b)
{
    for (unsigned i = 0; i < 3; i++)
        if (i != a && i != b) return i;
    return 0;
}

START_TEST(healthy_stream_checks_ok)
{
    e2e c;
    setup(&c, 21, 0);
    chk k;
    for (unsigned via = 0; via < 3; via++) {
        stream_check(&c, via, "ORDERS", 3, 0, 0, &k);
        ck_assert_int_eq(k.status, 0);
        ck_assert_int_eq(k.check_status, JR_CHECK_OK);
        ck_assert_uint_eq(k.peers, 3);
        ck_assert_uint_eq(k.current, 3);
        ck_assert_str_eq(k.line, "OK ORDERS OK:3 peers OK:0 sources | sources=0");
    }
    /* 0: the configured replicas */
    stream_check(&c, 1, "ORDERS", 0, 0, 0, &k);
    ck_assert_uint_eq(k.expected, 3);
    ck_assert_str_eq(k.line, "OK ORDERS OK:3 peers OK:0 sources | sources=0");
    /* thresholds that hold */
    stream_check(&c, 2, "ORDERS", 3, 100, 10 * SEC, &k);
    ck_assert_str_eq(k.line, "OK ORDERS OK:3 peers OK:replicas are current OK:replicas are active "
                             "OK:0 sources | sources=0");
    /* more peers expected than the stream has */
    stream_check(&c, 0, "ORDERS", 5, 0, 0, &k);
    ck_assert_int_eq(k.check_status, JR_CHECK_CRITICAL);
    ck_assert_str_eq(k.line, "CRITICAL ORDERS Crit:Expected 5 replicas got 3 OK:0 sources | "
                             "sources=0");
    /* refused at the call: the callback never runs */
    jr_check_opts bad;
    memset(&bad, 0, sizeof bad);
    ck_assert_int_eq(jr_stream_check(NULL, "ORDERS", NULL, check_cb, &k), JR_EINVAL);
    ck_assert_int_eq(jr_stream_check(e2e_node(&c, 0), NULL, NULL, check_cb, &k), JR_EINVAL);
    ck_assert_int_eq(jr_stream_check(e2e_node(&c, 0), "ORDERS", NULL, NULL, &k), JR_EINVAL);
    ck_assert_int_eq(jr_stream_check(e2e_node(&c, 0), "ORDERS", &bad, check_cb, &k), JR_EINVAL);
    ck_assert_int_eq(jr_consumer_check(e2e_node(&c, 0), "ORDERS", NULL, NULL, check_cb, &k),
                     JR_EINVAL);
    ck_assert_int_eq(jr_node_health(NULL, NULL, NULL), JR_EINVAL);
    ck_assert_int_eq(jr_node_health(e2e_node(&c, 0), NULL, NULL), JR_EINVAL);
    /* an unknown stream */
    stream_check(&c, 0, "NOPE", 3, 0, 0, &k);
    ck_assert_int_eq(k.status, JR_ENOTFOUND);
    ck_assert_int_eq(k.check_status, JR_CHECK_CRITICAL);
    ck_assert_msg(strncmp(k.line, "CRITICAL NOPE Crit:could not load info: ", 40) == 0, "%s",
                  k.line);
    e2e_free(&c);
}
END_TEST

START_TEST(crashed_peers_are_critical)
{
    e2e c;
    setup(&c, 22, 0);
    chk k;
    stream_check(&c, 0, "ORDERS", 3, 0, 0, &k);
    ck_assert_int_eq(k.check_status, JR_CHECK_OK);
    unsigned leader = (unsigned)jr_sim_index(c.sim, k.leader);
    unsigned ml = (unsigned)e2e_meta_leader(&c);
    unsigned victim = other(leader, ml);
    if (victim == leader || victim == ml) victim = (leader + 1) % 3;
    ck_assert_int_eq(jr_sim_crash(c.sim, victim), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    unsigned via = other(victim, victim == 0 ? 1 : 0);
    stream_check(&c, via, "ORDERS", 3, 0, 0, &k);
    ck_assert_int_eq(k.check_status, JR_CHECK_CRITICAL);
    ck_assert_uint_eq(k.current, 2);
    ck_assert_str_eq(k.line, "CRITICAL ORDERS Crit:1 replicas offline OK:3 peers OK:0 sources | "
                             "sources=0");
    stream_check(&c, via, "ORDERS", 3, 0, 2 * SEC, &k);
    ck_assert_str_eq(k.line, "CRITICAL ORDERS Crit:1 replicas offline Crit:1 replicas inactive "
                             "OK:3 peers OK:0 sources | sources=0");
    stream_check(&c, via, "ORDERS", 5, 0, 0, &k);
    ck_assert_str_eq(k.line, "CRITICAL ORDERS Crit:Expected 5 replicas got 3 Crit:1 replicas "
                             "offline OK:0 sources | sources=0");
    /* two of three down: no leader */
    unsigned second = other(victim, via);
    ck_assert_int_eq(jr_sim_crash(c.sim, second), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    stream_check(&c, via, "ORDERS", 3, 0, 0, &k);
    ck_assert_msg(k.status != 0, "%s", k.msg);
    ck_assert_int_eq(k.check_status, JR_CHECK_CRITICAL);
    ck_assert_str_eq(k.line, "CRITICAL ORDERS Crit:No leader OK:0 sources | sources=0");
    /* the asking node closing first: JR_ECLOSED without a result */
    memset(&k, 0, sizeof k);
    ck_assert_int_eq(jr_stream_check(e2e_node(&c, via), "ORDERS", NULL, check_cb, &k), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, via), 0);
    ck_assert_int_eq(k.done, 1);
    ck_assert_int_eq(k.status, JR_ECLOSED);
    ck_assert_int_eq(k.result, 0);
    e2e_free(&c);
}
END_TEST

START_TEST(restarted_peer_recovers)
{
    e2e c;
    setup(&c, 26, 0);
    chk k;
    stream_check(&c, 0, "ORDERS", 3, 0, 0, &k);
    unsigned leader = (unsigned)jr_sim_index(c.sim, k.leader);
    unsigned ml = (unsigned)e2e_meta_leader(&c);
    unsigned victim = other(leader, ml);
    if (victim == leader || victim == ml) victim = (leader + 1) % 3;
    ck_assert_int_eq(jr_sim_crash(c.sim, victim), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    e2e_res r;
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(e2e_publish(&c, leader, "orders.new", "x", 1, NULL, &r), 0);
    ck_assert_int_eq(e2e_restart(&c, victim), 0);
    /* 20 operations behind, not heard from yet */
    stream_check(&c, leader, "ORDERS", 3, 5, 0, &k);
    ck_assert_str_eq(k.line, "CRITICAL ORDERS Crit:1 replicas offline Crit:1 replicas lagged OK:3 "
                             "peers OK:0 sources | sources=0");
    ck_assert_uint_ge(k.lag_max, 20); /* its catch-up lag */
    /* caught up */
    jr_sim_run_for(c.sim, 2 * SEC);
    stream_check(&c, leader, "ORDERS", 3, 5, 0, &k);
    ck_assert_int_eq(k.check_status, JR_CHECK_OK);
    ck_assert_uint_eq(k.lag_max, 0);
    ck_assert_str_eq(k.line,
                     "OK ORDERS OK:3 peers OK:replicas are current OK:0 sources | sources=0");
    e2e_free(&c);
}
END_TEST

START_TEST(consumer_checks)
{
    e2e c;
    setup(&c, 23, 1);
    chk k;
    consumer_check(&c, 1, "ORDERS", "dur", 3, &k);
    ck_assert_int_eq(k.status, 0);
    ck_assert_int_eq(k.check_status, JR_CHECK_OK);
    ck_assert_str_eq(k.line, "OK ORDERS_dur OK:3 peers");
    consumer_check(&c, 1, "ORDERS", "dur", 0, &k);
    ck_assert_uint_eq(k.expected, 3);
    ck_assert_str_eq(k.line, "OK ORDERS_dur OK:3 peers");
    consumer_check(&c, 2, "ORDERS", "dur", 5, &k);
    ck_assert_str_eq(k.line, "CRITICAL ORDERS_dur Crit:Expected 5 replicas got 3");
    unsigned leader = (unsigned)jr_sim_index(c.sim, k.leader);
    unsigned ml = (unsigned)e2e_meta_leader(&c);
    unsigned victim = other(leader, ml);
    if (victim == leader || victim == ml) victim = (leader + 1) % 3;
    ck_assert_int_eq(jr_sim_crash(c.sim, victim), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    unsigned via = other(victim, victim == 0 ? 1 : 0);
    consumer_check(&c, via, "ORDERS", "dur", 3, &k);
    ck_assert_str_eq(k.line, "CRITICAL ORDERS_dur Crit:1 replicas offline OK:3 peers");
    ck_assert_int_eq(jr_sim_crash(c.sim, other(victim, via)), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    consumer_check(&c, via, "ORDERS", "dur", 3, &k);
    ck_assert_str_eq(k.line, "CRITICAL ORDERS_dur Crit:No leader");
    e2e_free(&c);
}
END_TEST

typedef struct hres {
    int done, status;
    int healthy, meta_current;
    char meta_leader[64];
    char meta_text[128];
    size_t nstreams, nconsumers, ngroups;
    uint64_t msgs, memory_bytes, file_bytes;
    char texts[8][128];
    int no_leader[8], no_quorum[8];
} hres;

static void health_cb(void *arg, int status, const char *msg, const jr_node_health_info *h)
{
    hres *r = arg;
    (void)msg;
    ck_assert_msg(!r->done, "a health callback ran twice");
    r->done = 1;
    r->status = status;
    if (!h) return;
    r->healthy = h->healthy;
    r->meta_current = h->meta_current;
    snprintf(r->meta_leader, sizeof r->meta_leader, "%s", h->meta_leader ? h->meta_leader : "");
    snprintf(r->meta_text, sizeof r->meta_text, "%s", h->meta_text);
    r->nstreams = h->nstreams;
    r->nconsumers = h->nconsumers;
    r->ngroups = h->ngroups;
    r->msgs = h->msgs;
    r->memory_bytes = h->memory_bytes;
    r->file_bytes = h->file_bytes;
    for (size_t i = 0; i < h->ngroups && i < 8; i++) {
        snprintf(r->texts[i], sizeof r->texts[i], "%s", h->groups[i]->text);
        r->no_leader[i] = h->groups[i]->no_leader;
        r->no_quorum[i] = h->groups[i]->no_quorum;
    }
}

static int h_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((hres *)arg)->done;
}

static void node_health(e2e *c, unsigned i, hres *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_node_health(e2e_node(c, i), health_cb, r), 0);
    ck_assert_msg(!r->done, "the callback ran inside the call");
    ck_assert_int_eq(jr_sim_run_until(c->sim, h_done, r, 10 * SEC), 0);
    ck_assert_int_eq(r->status, 0);
}

START_TEST(node_health_healthy_then_alone)
{
    e2e c;
    setup(&c, 24, 1);
    hres h;
    for (unsigned i = 0; i < 3; i++) {
        node_health(&c, i, &h);
        ck_assert_msg(h.healthy, "n%u: %s / %s", i, h.meta_text, h.ngroups ? h.texts[0] : "");
        ck_assert_int_eq(h.meta_current, 1);
        ck_assert_str_eq(h.meta_text, "");
        ck_assert_uint_eq(h.nstreams, 1);
        ck_assert_uint_eq(h.nconsumers, 1);
        ck_assert_uint_eq(h.ngroups, 0);
        /* the one message setup published, stored by each replica, in the stream's storage */
        ck_assert_uint_eq(h.msgs, 1);
        ck_assert_uint_gt(h.memory_bytes + h.file_bytes, 0);
        ck_assert_uint_eq(h.memory_bytes == 0 || h.file_bytes == 0, 1);
    }
    /* quiet groups stay healthy: a leader counts the members whose nodes it hears */
    jr_sim_run_for(c.sim, 30 * SEC);
    for (unsigned i = 0; i < 3; i++) {
        node_health(&c, i, &h);
        ck_assert_msg(h.healthy, "n%u idle: %s / %s", i, h.meta_text, h.ngroups ? h.texts[0] : "");
    }
    chk k;
    stream_check(&c, 1, "ORDERS", 3, 0, 0, &k);
    ck_assert_str_eq(k.line, "OK ORDERS OK:3 peers OK:0 sources | sources=0");
    /* one peer down: the other two keep a meta leader and their groups' quorum */
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    for (unsigned i = 0; i < 2; i++) {
        node_health(&c, i, &h);
        ck_assert_msg(h.healthy, "n%u: %s / %s", i, h.meta_text, h.ngroups ? h.texts[0] : "");
    }
    /* node 0 alone */
    ck_assert_int_eq(jr_sim_crash(c.sim, 1), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    node_health(&c, 0, &h);
    ck_assert_int_eq(h.healthy, 0);
    ck_assert_int_eq(h.meta_current, 0);
    ck_assert_str_eq(h.meta_text, "JetStream has not established contact with a meta leader");
    ck_assert_uint_eq(h.ngroups, 2);
    ck_assert_str_eq(h.texts[0], "stream ORDERS: no leader");
    ck_assert_str_eq(h.texts[1], "consumer ORDERS > dur: no leader");
    ck_assert_int_eq(h.no_leader[0], 1);
    /* a node closing before the callback ran: JR_ECLOSED, no report */
    memset(&h, 0, sizeof h);
    ck_assert_int_eq(jr_node_health(e2e_node(&c, 0), health_cb, &h), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, 0), 0);
    ck_assert_int_eq(h.done, 1);
    ck_assert_int_eq(h.status, JR_ECLOSED);
    e2e_free(&c);
}
END_TEST

/* A node whose WAL failed (a write error: JR_EIO from its tick) makes nothing durable until it
 * is reopened, while its replicas' logs and leaders look as before: it must not report itself
 * healthy, or a supervisor watching /healthz would leave it so for good. jetraft-chaos's
 * `ioerr` showed such a server answering /healthz with at most a damaged stream, or healthy. */
START_TEST(a_node_whose_wal_failed_is_not_healthy)
{
    e2e c;
    setup(&c, 28, 0);
    chk k;
    stream_check(&c, 0, "ORDERS", 3, 0, 0, &k);
    unsigned leader = (unsigned)jr_sim_index(c.sim, k.leader);
    unsigned victim = other(leader, leader);
    hres h;
    node_health(&c, victim, &h);
    ck_assert_msg(h.healthy, "before: %s", h.meta_text);
    ck_assert_int_eq(
        jr__memfs_fail(jr_sim_vfs(c.sim, victim), JR__MEMFS_PWRITE, 1, JR_EIO, 1, NULL), 0);
    e2e_res r;
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(e2e_publish(&c, leader, "orders.new", "y", 1, NULL, &r), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    node_health(&c, victim, &h);
    ck_assert_int_eq(h.healthy, 0);
    ck_assert_int_eq(h.meta_current, 0);
    ck_assert_str_eq(h.meta_text, "JetStream's WAL failed: nothing is stored until the node is "
                                  "reopened");
    /* the other two go on, healthy */
    node_health(&c, leader, &h);
    ck_assert_msg(h.healthy, "leader: %s / %s", h.meta_text, h.ngroups ? h.texts[0] : "");
    jr__memfs_fail_clear(jr_sim_vfs(c.sim, victim));
    /* the error gone, the WAL stays failed until the node is reopened */
    jr_sim_run_for(c.sim, 2 * SEC);
    node_health(&c, victim, &h);
    ck_assert_int_eq(h.healthy, 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, victim), 0);
    ck_assert_int_eq(jr_sim_restart(c.sim, victim), 0);
    jr_sim_run_for(c.sim, 10 * SEC);
    node_health(&c, victim, &h);
    ck_assert_msg(h.healthy, "reopened: %s / %s", h.meta_text, h.ngroups ? h.texts[0] : "");
    e2e_free(&c);
}
END_TEST

START_TEST(growing_stream_warns)
{
    e2e c;
    setup(&c, 25, 0);
    const char *subj[] = {"grow.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "GROW", subj, 1, 1);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "GROW", 0, 10 * SEC), 0);
    for (int i = 0; i < 50; i++)
        ck_assert_int_eq(e2e_publish(&c, 0, "grow.x", "y", 1, NULL, &r), 0);
    chk k;
    stream_check(&c, 0, "GROW", 0, 0, 0, &k);
    ck_assert_str_eq(k.line, "OK GROW OK:1 peers OK:0 sources | sources=0");
    cfg.replicas = 3;
    ck_assert_msg(e2e_update(&c, 0, &cfg, &r) == 0, "update: %s", r.msg);
    /* right after the update commits, the new replicas are joining: one or both still an
     * observer, as far as their catch-up got */
    stream_check(&c, 0, "GROW", 0, 0, 0, &k);
    ck_assert_int_eq(k.check_status, JR_CHECK_WARNING);
    ck_assert_msg(!strcmp(k.line, "WARNING GROW Warn:peer change in progress: 1 observers, 0 "
                                  "pending OK:3 peers OK:0 sources | sources=0") ||
                      !strcmp(k.line, "WARNING GROW Warn:peer change in progress: 2 observers, 0 "
                                      "pending OK:3 peers OK:0 sources | sources=0"),
                  "%s", k.line);
    /* then it converges */
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "GROW", 2, 30 * SEC), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    stream_check(&c, 0, "GROW", 0, 0, 0, &k);
    ck_assert_str_eq(k.line, "OK GROW OK:3 peers OK:0 sources | sources=0");
    e2e_free(&c);
}
END_TEST

/* The stream's leader loses both peers: it steps down (its node saw them go), so it reports the
 * group without a leader, and the meta group likewise. */
START_TEST(leader_alone_reports_no_leader)
{
    e2e c;
    setup(&c, 27, 0);
    chk k;
    stream_check(&c, 0, "ORDERS", 3, 0, 0, &k);
    unsigned leader = (unsigned)jr_sim_index(c.sim, k.leader);
    ck_assert_int_eq(jr_sim_crash(c.sim, (leader + 1) % 3), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, (leader + 2) % 3), 0);
    jr_sim_run_for(c.sim, 1 * SEC);
    hres h;
    node_health(&c, leader, &h);
    ck_assert_int_eq(h.healthy, 0);
    ck_assert_str_eq(h.meta_text, "JetStream has not established contact with a meta leader");
    ck_assert_uint_eq(h.ngroups, 1);
    ck_assert_str_eq(h.texts[0], "stream ORDERS: no leader");
    e2e_free(&c);
}
END_TEST

START_TEST(format_contract)
{
    jr_check_problem p = {sizeof p, JR_CHECK_OFFLINE, JR_CHECK_CRITICAL, 1, "1 replicas offline"};
    jr_check_problem w = {sizeof w, JR_CHECK_NOT_CURRENT, JR_CHECK_WARNING, 1,
                          "1 replicas not current"};
    const jr_check_problem *pp[] = {&w, &p};
    jr_check_result r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.status = JR_CHECK_CRITICAL;
    r.stream = "ORDERS";
    r.expected = r.peers = 3;
    r.problems = pp;
    r.nproblems = 2;
    const char *want = "CRITICAL ORDERS Crit:1 replicas offline Warn:1 replicas not current "
                       "OK:3 peers OK:0 sources | sources=0";
    char buf[256];
    ck_assert_int_eq(jr_stream_check_format(&r, buf, sizeof buf), (int)strlen(want));
    ck_assert_str_eq(buf, want);
    /* sized like snprintf: truncated, NUL-terminated, the full length returned */
    char small[10];
    ck_assert_int_eq(jr_stream_check_format(&r, small, sizeof small), (int)strlen(want));
    ck_assert_str_eq(small, "CRITICAL ");
    ck_assert_int_eq(jr_stream_check_format(&r, NULL, 0), (int)strlen(want));
    ck_assert_int_eq(jr_stream_check_format(&r, NULL, 1), JR_EINVAL);
    ck_assert_int_eq(jr_stream_check_format(NULL, buf, sizeof buf), JR_EINVAL);
    r.stream = NULL;
    ck_assert_int_eq(jr_stream_check_format(&r, buf, sizeof buf), JR_EINVAL);
}
END_TEST

/* A restarted node's stream and consumer replicas vote only once its meta state holds
 * everything committed before the restart (jr__raft_hold until the meta timer releases them):
 * until then the loss of one more server leaves their groups without a quorum. A node that
 * reports itself healthy must not hold any of them, or an operator taking servers down one at a
 * time on /healthz's word loses the stream. Sampled every simulated 10 ms after the restart. */
START_TEST(a_restarted_node_is_healthy_only_once_its_replicas_vote)
{
    for (uint64_t seed = 40; seed < 44; seed++) {
        e2e c;
        setup(&c, seed, 1);
        unsigned victim = (unsigned)(seed % 3);
        ck_assert_int_eq(jr_sim_crash(c.sim, victim), 0);
        ck_assert_int_eq(e2e_restart(&c, victim), 0);
        hres h;
        int unwell = 0, healthy = 0;
        for (int step = 0; step < 3000 && !healthy; step++) {
            node_health(&c, victim, &h);
            if (!h.healthy) {
                unwell++;
                jr_sim_run_for(c.sim, 10 * MS);
                continue;
            }
            healthy = 1;
            jr__js *js = jr__js_of(e2e_node(&c, victim));
            for (jr__srep *r = js->rep_list; r; r = r->next)
                ck_assert_msg(!r->g || !jr__group_consensus(r->g)->held,
                              "seed %llu: healthy while stream %s's replica is held",
                              (unsigned long long)seed, r->name);
            for (jr__crep *r = js->crep_list; r; r = r->next)
                ck_assert_msg(!r->g || !jr__group_consensus(r->g)->held,
                              "seed %llu: healthy while consumer %s's replica is held",
                              (unsigned long long)seed, r->name);
        }
        ck_assert_msg(healthy, "seed %llu: never healthy: %s", (unsigned long long)seed,
                      h.meta_text);
        ck_assert_int_gt(unwell, 0);
        e2e_free(&c);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_health");
    TCase *tc = tcase_create("health");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, format_contract);
    tcase_add_test(tc, healthy_stream_checks_ok);
    tcase_add_test(tc, crashed_peers_are_critical);
    tcase_add_test(tc, consumer_checks);
    tcase_add_test(tc, restarted_peer_recovers);
    tcase_add_test(tc, leader_alone_reports_no_leader);
    tcase_add_test(tc, node_health_healthy_then_alone);
    tcase_add_test(tc, growing_stream_warns);
    tcase_add_test(tc, a_node_whose_wal_failed_is_not_healthy);
    tcase_add_test(tc, a_restarted_node_is_healthy_only_once_its_replicas_vote);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
