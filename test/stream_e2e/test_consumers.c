/* Consumers end to end over the cluster fixture: create, update and delete through the meta
 * group; pull fetches and acks routed to the consumer's leader from any server; redelivery by
 * ack wait and NAK; termination; the leader's failover keeping delivery counts exact. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "js/js.h"
#include "vfs/memfs.h"

/* Results of the consumer calls. */
typedef struct cres {
    int done;
    int status;
    char msg[512];
    char name[256];
    jr_consumer_info info;
    jr_consumer_config cfg;
    char leader[64];
    size_t nreplicas, ncurrent;
    /* fetch */
    size_t n;
    uint64_t sseq[256], dseq[256];
    uint32_t dc[256];
    uint64_t pending[256];
    char token[256][600];
    char data[256][64];
    char hdr[4][128]; /* the first messages' header blocks */
    char pin[64];     /* the first message's pin id */
    int end_code;
    size_t heartbeats;
    char end_text[128];
    uint64_t end_pending;
} cres;

static int cres_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((cres *)arg)->done;
}

static void wait_done(e2e *c, cres *r)
{
    ck_assert_int_eq(jr_sim_run_until(c->sim, cres_done, r, 60 * SEC), 0);
}

static void consumer_cb(void *arg, int status, const char *msg, const char *name)
{
    cres *r = arg;
    ck_assert_msg(!r->done, "a consumer callback ran twice");
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    snprintf(r->name, sizeof r->name, "%s", name ? name : "");
    if (status == 0) ck_assert_ptr_nonnull(name);
}

static void admin_cb(void *arg, int status, const char *msg)
{
    cres *r = arg;
    ck_assert_msg(!r->done, "an admin callback ran twice");
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
}

static void info_cb(void *arg, int status, const char *msg, const jr_consumer_info *in)
{
    cres *r = arg;
    ck_assert_msg(!r->done, "an info callback ran twice");
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    if (status) return;
    r->info = *in;
    r->cfg = *in->config;
    snprintf(r->name, sizeof r->name, "%s", in->name);
    snprintf(r->leader, sizeof r->leader, "%s", in->cluster->leader ? in->cluster->leader : "");
    r->nreplicas = in->cluster->nreplicas;
    for (size_t i = 0; i < in->cluster->nreplicas; i++)
        r->ncurrent += in->cluster->replicas[i]->current != 0;
    r->info.config = &r->cfg;
    r->info.cluster = NULL;
    r->info.stream = r->info.name = NULL;
}

static void fetch_cb(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                     const jr_fetch_end *end)
{
    cres *r = arg;
    ck_assert_msg(!r->done, "a fetch callback ran after its end");
    if (m) {
        ck_assert_int_eq(status, 0);
        ck_assert_ptr_null(end);
        ck_assert_uint_lt(r->n, 256);
        r->sseq[r->n] = m->stream_seq;
        r->dseq[r->n] = m->consumer_seq;
        r->dc[r->n] = m->delivered;
        r->pending[r->n] = m->pending;
        snprintf(r->token[r->n], sizeof r->token[0], "%s", m->ack_token);
        snprintf(r->data[r->n], sizeof r->data[0], "%.*s", (int)m->len, (const char *)m->data);
        if (r->n < 4)
            snprintf(r->hdr[r->n], sizeof r->hdr[0], "%.*s", (int)m->hdr_len,
                     m->hdr ? (const char *)m->hdr : "");
        if (r->n == 0) snprintf(r->pin, sizeof r->pin, "%s", m->pin_id ? m->pin_id : "");
        r->n++;
        return;
    }
    if (status == 0 && !end) { /* an idle heartbeat */
        r->heartbeats++;
        return;
    }
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    if (status == 0) {
        ck_assert_ptr_nonnull(end);
        r->end_code = end->code;
        snprintf(r->end_text, sizeof r->end_text, "%s", end->text);
        r->end_pending = end->pending_msgs;
    }
}

static int add(e2e *c, unsigned node, const char *stream, const jr_consumer_config *cfg, cres *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_consumer_add(e2e_node(c, node), stream, cfg, consumer_cb, r), 0);
    wait_done(c, r);
    return r->status;
}

static int create(e2e *c, unsigned node, const char *stream, const jr_consumer_config *cfg, cres *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_consumer_create(e2e_node(c, node), stream, cfg, consumer_cb, r), 0);
    wait_done(c, r);
    return r->status;
}

static int info(e2e *c, unsigned node, const char *stream, const char *name, cres *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_consumer_info_get(e2e_node(c, node), stream, name, info_cb, r), 0);
    wait_done(c, r);
    return r->status;
}

static int fetch(e2e *c, unsigned node, const char *stream, const char *name, int64_t batch,
                 int64_t expires_ns, int no_wait, cres *r)
{
    memset(r, 0, sizeof *r);
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = batch;
    o.expires_ns = expires_ns;
    o.no_wait = no_wait;
    ck_assert_int_eq(jr_consumer_fetch(e2e_node(c, node), stream, name, &o, fetch_cb, r), 0);
    wait_done(c, r);
    return r->status;
}

static int ack(e2e *c, unsigned node, const char *token, int kind, int64_t delay, cres *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_consumer_ack(e2e_node(c, node), token, kind, delay, NULL, admin_cb, r), 0);
    wait_done(c, r);
    return r->status;
}

static int del(e2e *c, unsigned node, const char *stream, const char *name, cres *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_consumer_delete(e2e_node(c, node), stream, name, admin_cb, r), 0);
    wait_done(c, r);
    return r->status;
}

/* A cluster of `servers` with an empty stream ORDERS (R3, subjects orders.>) that has a leader;
 * *scfg is its configuration, for later updates (its subjects are static). */
static void setup_orders(e2e *c, unsigned servers, uint64_t seed, jr_stream_config *scfg)
{
    static const char *const subj[] = {"orders.>"};
    e2e_config(scfg, "ORDERS", subj, 1, 3);
    e2e_new_with_stream(c, servers, seed, scfg);
}

/* A 3-node cluster with stream ORDERS (R3, subjects orders.>) holding n messages. */
static void setup(e2e *c, uint64_t seed, int n)
{
    jr_stream_config cfg;
    setup_orders(c, 3, seed, &cfg);
    e2e_res r;
    for (int i = 0; i < n; i++) {
        char data[32];
        snprintf(data, sizeof data, "order %d", i + 1);
        ck_assert_int_eq(e2e_publish(c, (unsigned)i % 3, i % 2 ? "orders.eu" : "orders.us", data,
                                     strlen(data), NULL, &r),
                         0);
    }
}

/* Index of the server named `name` ("n<i>") among the 3, or 3. */
static unsigned node_named(const char *name)
{
    for (unsigned i = 0; i < 3; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "n%u", i);
        if (strcmp(nm, name) == 0) return i;
    }
    return 3;
}

static void durable(jr_consumer_config *cfg, const char *name)
{
    jr_consumer_config_init(cfg);
    cfg->durable_name = name;
}

START_TEST(create_info_update_delete)
{
    e2e c;
    setup(&c, 11, 10);
    cres r;
    jr_consumer_config cfg;
    durable(&cfg, "dur1");
    ck_assert_msg(create(&c, 1, "ORDERS", &cfg, &r) == 0, "create: %s", r.msg);
    ck_assert_str_eq(r.name, "dur1");
    /* identical: idempotent */
    ck_assert_int_eq(create(&c, 2, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(info(&c, 2, "ORDERS", "dur1", &r), 0);
    ck_assert_str_eq(r.name, "dur1");
    ck_assert_int_eq(r.cfg.ack_policy, JR_ACK_EXPLICIT);
    ck_assert_int_eq(r.cfg.ack_wait_ns, 30 * (int64_t)SEC);
    ck_assert_int_eq(r.cfg.max_ack_pending, 1000);
    ck_assert_int_eq(r.cfg.max_deliver, -1);
    ck_assert_int_eq(r.cfg.max_waiting, 512);
    ck_assert_uint_eq(r.info.num_pending, 10);
    ck_assert_uint_eq(r.info.num_ack_pending, 0);
    ck_assert_uint_eq(r.nreplicas, 2);
    ck_assert_str_ne(r.leader, "");
    /* create with another config: exists */
    jr_consumer_config other = cfg;
    other.description = "changed";
    ck_assert_int_eq(create(&c, 0, "ORDERS", &other, &r), JR_EEXIST);
    ck_assert_str_eq(r.msg, "consumer already exists");
    /* add updates a mutable field; an immutable one is refused with JetStream's text */
    ck_assert_msg(add(&c, 0, "ORDERS", &other, &r) == 0, "update: %s", r.msg);
    other.ack_policy = JR_ACK_ALL;
    ck_assert_int_eq(add(&c, 0, "ORDERS", &other, &r), JR_EINVAL);
    ck_assert_msg(strstr(r.msg, "ack policy can not be updated"), "%s", r.msg);
    /* a consumer of a missing stream */
    ck_assert_int_eq(create(&c, 0, "NOPE", &cfg, &r), JR_ENOSTREAM);
    /* an ephemeral one gets a name */
    jr_consumer_config eph;
    jr_consumer_config_init(&eph);
    ck_assert_msg(create(&c, 0, "ORDERS", &eph, &r) == 0, "ephemeral: %s", r.msg);
    ck_assert_uint_eq(strlen(r.name), 8);
    char ename[16];
    snprintf(ename, sizeof ename, "%s", r.name);
    ck_assert_msg(info(&c, 0, "ORDERS", ename, &r) == 0, "info of %s: %s", ename, r.msg);
    e2e_res sr;
    ck_assert_int_eq(e2e_info(&c, 0, "ORDERS", &sr), 0);
    ck_assert_uint_eq(sr.state.consumers, 2);
    /* delete */
    ck_assert_int_eq(del(&c, 2, "ORDERS", "dur1", &r), 0);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "dur1", &r), JR_ENOTFOUND);
    ck_assert_int_eq(del(&c, 2, "ORDERS", "dur1", &r), JR_ENOTFOUND);
    /* deleting the stream deletes its consumers */
    ck_assert_int_eq(e2e_delete(&c, 0, "ORDERS", &sr), 0);
    ck_assert_int_eq(info(&c, 0, "ORDERS", ename, &r), JR_ENOSTREAM);
    e2e_free(&c);
}
END_TEST

START_TEST(fetch_and_ack_from_any_server)
{
    e2e c;
    setup(&c, 12, 10);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "work");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_msg(fetch(&c, 1, "ORDERS", "work", 5, 2 * SEC, 0, &r) == 0, "fetch: %s", r.msg);
    ck_assert_int_eq(r.end_code, 0);
    ck_assert_uint_eq(r.n, 5);
    for (size_t i = 0; i < 5; i++) {
        ck_assert_uint_eq(r.sseq[i], i + 1);
        ck_assert_uint_eq(r.dseq[i], i + 1);
        ck_assert_uint_eq(r.dc[i], 1);
        ck_assert_uint_eq(r.pending[i], 10 - (i + 1));
        char want[32];
        snprintf(want, sizeof want, "order %zu", i + 1);
        ck_assert_str_eq(r.data[i], want);
    }
    /* acks from every server, confirmed (the fifth below, with +NXT) */
    for (size_t i = 0; i < 4; i++)
        ck_assert_msg(ack(&c, (unsigned)(2 - i % 3), r.token[i], JR_ACK_ACK, 0, &a) == 0,
                      "ack %zu: %s", i, a.msg);
    /* ack + next (+NXT) */
    cres nx;
    memset(&nx, 0, sizeof nx);
    jr_fetch_opts no;
    jr_fetch_opts_init(&no);
    no.batch = 1;
    ck_assert_int_eq(jr_consumer_ack_next(e2e_node(&c, 1), r.token[4], &no, fetch_cb, &nx), 0);
    wait_done(&c, &nx);
    ck_assert_uint_eq(nx.n, 1);
    ck_assert_uint_eq(nx.sseq[0], 6);
    ck_assert_int_eq(ack(&c, 0, nx.token[0], JR_ACK_ACK, 0, &a), 0);
    /* a second ack of the same delivery: not pending, nothing changes */
    ck_assert_int_eq(ack(&c, 0, r.token[0], JR_ACK_ACK, 0, &a), JR_ENOTFOUND);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "work", &a), 0);
    ck_assert_uint_eq(a.info.ack_floor.stream_seq, 6);
    ck_assert_uint_eq(a.info.delivered.stream_seq, 6);
    ck_assert_uint_eq(a.info.num_ack_pending, 0);
    ck_assert_uint_eq(a.info.num_pending, 4);
    /* the rest, then nothing: no_wait ends with 404, a wait with 408 */
    ck_assert_int_eq(fetch(&c, 2, "ORDERS", "work", 100, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 4);
    ck_assert_int_eq(r.end_code, 408);
    ck_assert_str_eq(r.end_text, "Request Timeout");
    ck_assert_uint_eq(r.end_pending, 96);
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "work", 1, 0, 1, &r), 0);
    ck_assert_uint_eq(r.n, 0);
    ck_assert_int_eq(r.end_code, 404);
    ck_assert_str_eq(r.end_text, "No Messages");
    /* a malformed token */
    ck_assert_int_eq(jr_consumer_ack(e2e_node(&c, 0), "$JS.ACK.ORDERS.work.x", JR_ACK_ACK, 0, NULL,
                                     admin_cb, &a),
                     JR_EINVAL);
    e2e_free(&c);
}
END_TEST

/* Whether consumer `name`'s leader (on whichever node leads it) has its timer armed; -1 if no
 * node leads it. */
static int leader_timer_armed(e2e *c, const char *name)
{
    for (unsigned i = 0; i < 3; i++) {
        jr_node *n = e2e_node(c, i);
        for (jr__crep *r = n ? jr__js_of(n)->crep_list : NULL; r; r = r->next)
            if (strcmp(r->name, name) == 0 && r->lead) return jr__timer_armed(&r->timer.t);
    }
    return -1;
}

/* A leader's timer is armed while a duty is due (a waiting pull's expiry) and not once the
 * pull is answered: an idle consumer costs its node no wake-up. */
START_TEST(an_answered_fetch_leaves_no_timer_armed)
{
    e2e c;
    setup(&c, 31, 1);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "idle");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    jr_sim_run_for(c.sim, 500 * MS); /* every server has applied the create */
    /* answered at once, long before its expiry (the fixture's requests time out at 2 s) */
    uint64_t t0 = jr_sim_now(c.sim);
    ck_assert_msg(fetch(&c, 1, "ORDERS", "idle", 1, 1500 * MS, 0, &r) == 0, "fetch: %s", r.msg);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_int_eq(r.end_code, 0);
    ck_assert_int_eq(ack(&c, 2, r.token[0], JR_ACK_ACK, 0, &a), 0);
    jr_sim_run_for(c.sim, 100 * MS);
    ck_assert_uint_lt(jr_sim_now(c.sim) - t0, 1500 * MS);
    ck_assert_int_eq(leader_timer_armed(&c, "idle"), 0);
    /* a pull that waits: its expiry is armed until a message answers it */
    memset(&r, 0, sizeof r);
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = 1;
    o.expires_ns = 1500 * MS;
    ck_assert_int_eq(jr_consumer_fetch(e2e_node(&c, 0), "ORDERS", "idle", &o, fetch_cb, &r), 0);
    jr_sim_run_for(c.sim, 500 * MS);
    ck_assert_int_eq(r.done, 0);
    ck_assert_int_eq(leader_timer_armed(&c, "idle"), 1);
    e2e_res pr;
    ck_assert_int_eq(e2e_publish(&c, 0, "orders.us", "late", 4, NULL, &pr), 0);
    wait_done(&c, &r);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_int_eq(r.end_code, 0);
    ck_assert_str_eq(r.data[0], "late");
    jr_sim_run_for(c.sim, 100 * MS);
    ck_assert_int_eq(leader_timer_armed(&c, "idle"), 0);
    e2e_free(&c);
}
END_TEST

START_TEST(redelivery_nak_and_term)
{
    e2e c;
    setup(&c, 13, 3);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "slow");
    cfg.ack_wait_ns = (int64_t)SEC;
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "slow", 3, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 3);
    char tok2[600], tok3[600];
    snprintf(tok2, sizeof tok2, "%s", r.token[1]);
    snprintf(tok3, sizeof tok3, "%s", r.token[2]);
    /* 1 is not acked: redelivered after its ack wait; 2 is NAKed: at once; 3 terminated */
    ck_assert_int_eq(ack(&c, 1, tok2, JR_ACK_NAK, 0, &a), 0);
    ck_assert_int_eq(ack(&c, 2, tok3, JR_ACK_TERM, 0, &a), 0);
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "slow", 1, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_uint_eq(r.sseq[0], 2);
    ck_assert_uint_eq(r.dc[0], 2);
    ck_assert_uint_eq(r.dseq[0], 4);
    jr_sim_run_for(c.sim, 1200 * MS);
    ck_assert_int_eq(fetch(&c, 2, "ORDERS", "slow", 5, SEC, 0, &r), 0);
    ck_assert_uint_ge(r.n, 1);
    ck_assert_uint_eq(r.sseq[0], 1);
    ck_assert_uint_eq(r.dc[0], 2);
    for (size_t i = 0; i < r.n; i++) ck_assert_uint_ne(r.sseq[i], 3); /* terminated */
    ck_assert_int_eq(info(&c, 0, "ORDERS", "slow", &a), 0);
    ck_assert_uint_ge(a.info.num_redelivered, 1);
    ck_assert_int_eq(ack(&c, 0, tok3, JR_ACK_ACK, 0, &a), JR_ENOTFOUND);
    e2e_free(&c);
}
END_TEST

/* The consumer's leader crashes after handing messages out: its successor knows every
 * delivery (recorded on a quorum before it was handed out), redelivers the unacked ones with
 * the next delivery count, and goes on with new messages from where the first one stopped. */
START_TEST(leader_failover_keeps_delivery_counts)
{
    e2e c;
    setup(&c, 14, 6);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "fo");
    cfg.ack_wait_ns = 2 * (int64_t)SEC;
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "fo", &r), 0);
    unsigned leader = node_named(r.leader);
    ck_assert_uint_lt(leader, 3);
    unsigned other = (leader + 1) % 3;
    ck_assert_int_eq(fetch(&c, other, "ORDERS", "fo", 3, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 3);
    ck_assert_int_eq(ack(&c, other, r.token[0], JR_ACK_ACK, 0, &a), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, leader), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    ck_assert_int_eq(fetch(&c, other, "ORDERS", "fo", 10, 2 * SEC, 0, &r), 0);
    /* 2 and 3 again (count 2), then 4..6 new */
    ck_assert_uint_eq(r.n, 5);
    ck_assert_uint_eq(r.sseq[0], 2);
    ck_assert_uint_eq(r.dc[0], 2);
    ck_assert_uint_eq(r.sseq[1], 3);
    ck_assert_uint_eq(r.dc[1], 2);
    for (size_t i = 2; i < 5; i++) {
        ck_assert_uint_eq(r.sseq[i], i + 2);
        ck_assert_uint_eq(r.dc[i], 1);
    }
    ck_assert_uint_eq(r.dseq[4], 8);
    ck_assert_int_eq(e2e_restart(&c, leader), 0);
    /* a stepdown to a chosen server */
    jr_sim_run_for(c.sim, 2 * SEC);
    char to[16];
    snprintf(to, sizeof to, "n%u", leader);
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(jr_consumer_stepdown(e2e_node(&c, other), "ORDERS", "fo", to, admin_cb, &a),
                     0);
    wait_done(&c, &a);
    ck_assert_msg(a.status == 0, "stepdown: %s", a.msg);
    ck_assert_int_eq(info(&c, other, "ORDERS", "fo", &a), 0);
    ck_assert_str_eq(a.leader, to);
    e2e_free(&c);
}
END_TEST

/* A consumer leader whose proposal its group refuses during a leadership transfer starts
 * leading afresh. When the transfer then fails (its target never hears of it) the node still
 * leads, with nothing applied or proposed to wake it: its duties must go on by its timer.
 * Here the inactivity threshold deletes the idle consumer; before, its timer was cancelled
 * and never armed again, and the consumer (with any peer change it had to drive) stayed
 * for ever. */
START_TEST(a_proposal_refused_during_a_failed_transfer_leaves_the_leader_working)
{
    e2e c;
    setup(&c, 44, 3);
    cres r, a, s;
    jr_consumer_config cfg;
    durable(&cfg, "tr");
    cfg.ack_wait_ns = 30 * (int64_t)SEC;
    cfg.inactive_threshold_ns = 3 * (int64_t)SEC;
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "tr", &r), 0);
    unsigned leader = node_named(r.leader);
    ck_assert_uint_lt(leader, 3);
    unsigned target = (leader + 1) % 3;
    ck_assert_int_eq(fetch(&c, leader, "ORDERS", "tr", 1, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    jr_sim_link cut;
    jr_sim_link_init(&cut);
    cut.drop = 1.0;
    ck_assert_int_eq(jr_sim_set_link(c.sim, leader, target, &cut), 0);
    char to[16];
    snprintf(to, sizeof to, "n%u", target);
    memset(&s, 0, sizeof s);
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(jr_consumer_stepdown(e2e_node(&c, leader), "ORDERS", "tr", to, admin_cb, &s),
                     0);
    ck_assert_int_eq(
        jr_consumer_ack(e2e_node(&c, leader), r.token[0], JR_ACK_ACK, 0, NULL, admin_cb, &a), 0);
    wait_done(&c, &a);
    wait_done(&c, &s);
    ck_assert_msg(s.status != 0, "the transfer to a cut-off target succeeded");
    jr_sim_link_init(&cut);
    ck_assert_int_eq(jr_sim_set_link(c.sim, leader, target, &cut), 0);
    ck_assert_int_eq(info(&c, leader, "ORDERS", "tr", &r), 0);
    ck_assert_msg(strcmp(r.leader, jr_sim_name(c.sim, leader)) == 0, "leader %s", r.leader);
    jr_sim_run_for(c.sim, 6 * SEC);
    ck_assert_int_eq(info(&c, leader, "ORDERS", "tr", &r), JR_ENOTFOUND);
    e2e_free(&c);
}
END_TEST

/* A push subscription: messages come as they are published (quorum first), idle heartbeats
 * when nothing comes, at most max_ack_pending unacknowledged; it ends when the consumer is
 * deleted. */
typedef struct push_rec {
    size_t n, heartbeats, ends;
    int end_status;
    uint64_t sseq[64];
    char token[64][600];
} push_rec;

static void push_cb(void *arg, int status, const jr_consumer_msg *m)
{
    push_rec *p = arg;
    ck_assert_uint_eq(p->ends, 0);
    if (m) {
        ck_assert_uint_lt(p->n, 64);
        p->sseq[p->n] = m->stream_seq;
        snprintf(p->token[p->n], sizeof p->token[0], "%s", m->ack_token);
        p->n++;
    } else if (status == 0) {
        p->heartbeats++;
    } else {
        p->ends++;
        p->end_status = status;
    }
}

START_TEST(push_subscription)
{
    e2e c;
    setup(&c, 15, 0);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "pusher");
    cfg.deliver_subject = "deliver.pusher";
    cfg.idle_heartbeat_ns = (int64_t)SEC;
    cfg.max_ack_pending = 4;
    ck_assert_msg(create(&c, 0, "ORDERS", &cfg, &r) == 0, "%s", r.msg);
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "pusher", 1, SEC, 0, &r), 0);
    ck_assert_int_eq(r.end_code, 409);
    ck_assert_str_eq(r.end_text, "Consumer is push based");
    push_rec p;
    memset(&p, 0, sizeof p);
    jr_subscription *sub = NULL;
    ck_assert_int_eq(jr_consumer_subscribe(e2e_node(&c, 2), "ORDERS", "pusher", push_cb, &p, &sub),
                     0);
    jr_sim_run_for(c.sim, 2500 * MS);
    ck_assert_uint_ge(p.heartbeats, 1);
    e2e_res pr;
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(e2e_publish(&c, 1, "orders.eu", "x", 1, NULL, &pr), 0);
    jr_sim_run_for(c.sim, 500 * MS);
    ck_assert_uint_eq(p.n, 4); /* max_ack_pending */
    for (size_t i = 0; i < 4; i++) {
        ck_assert_uint_eq(p.sseq[i], i + 1);
        ck_assert_int_eq(ack(&c, 0, p.token[i], JR_ACK_ACK, 0, &a), 0);
    }
    jr_sim_run_for(c.sim, 500 * MS);
    ck_assert_uint_eq(p.n, 6);
    /* a pull consumer can not be subscribed to */
    jr_consumer_config pc;
    durable(&pc, "puller");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &pc, &r), 0);
    push_rec q;
    memset(&q, 0, sizeof q);
    jr_subscription *sub2 = NULL;
    ck_assert_int_eq(jr_consumer_subscribe(e2e_node(&c, 0), "ORDERS", "puller", push_cb, &q, &sub2),
                     0);
    jr_sim_run_for(c.sim, 500 * MS);
    ck_assert_uint_eq(q.ends, 1);
    ck_assert_int_eq(q.end_status, JR_EINVAL);
    /* deleting the consumer ends the subscription */
    ck_assert_int_eq(del(&c, 1, "ORDERS", "pusher", &r), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    ck_assert_uint_eq(p.ends, 1);
    ck_assert_int_eq(p.end_status, JR_ENOTFOUND);
    e2e_free(&c);
}
END_TEST

/* A stream of the given retention (R3, subjects orders.> and misc.>) and nothing published. */
static void setup_retention(e2e *c, uint64_t seed, int retention)
{
    memset(c, 0, sizeof *c);
    ck_assert_int_eq(e2e_new(c, 3, seed, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(c, 3, 10 * SEC), 0);
    const char *subj[] = {"orders.>", "misc.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "Q", subj, 2, 3);
    cfg.retention = retention;
    e2e_res r;
    ck_assert_msg(e2e_add(c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(c, 0, "Q", 2, 10 * SEC), 0);
}

/* Runs a while, then checks every replica holds `msgs` messages. */
static void expect_msgs(e2e *c, uint64_t msgs)
{
    jr_sim_run_for(c->sim, 500 * MS);
    for (unsigned i = 0; i < 3; i++) {
        jr_stream_state st;
        ck_assert_int_eq(e2e_state(c, i, "Q", &st), 0);
        ck_assert_msg(st.msgs == msgs, "n%u holds %llu messages, not %llu", i,
                      (unsigned long long)st.msgs, (unsigned long long)msgs);
    }
}

START_TEST(work_queue_removes_on_ack_on_every_replica)
{
    e2e c;
    setup_retention(&c, 21, JR_RETAIN_WORKQUEUE);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "workers");
    ck_assert_msg(create(&c, 0, "Q", &cfg, &r) == 0, "%s", r.msg);
    e2e_res pr;
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(e2e_publish(&c, (unsigned)i % 3, "orders.x", "job", 3, NULL, &pr), 0);
    ck_assert_int_eq(fetch(&c, 1, "Q", "workers", 10, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 10);
    expect_msgs(&c, 10); /* delivered is not acknowledged */
    for (size_t i = 0; i < 5; i++) ck_assert_int_eq(ack(&c, 2, r.token[i], JR_ACK_ACK, 0, &a), 0);
    expect_msgs(&c, 5);
    ck_assert_int_eq(ack(&c, 0, r.token[9], JR_ACK_TERM, 0, &a), 0);
    expect_msgs(&c, 4);
    /* a second unfiltered consumer is refused, as JetStream does */
    jr_consumer_config other;
    durable(&other, "other");
    ck_assert_int_eq(create(&c, 0, "Q", &other, &a), JR_EINVAL);
    ck_assert_str_eq(a.msg, "multiple non-filtered consumers not allowed on workqueue stream");
    for (size_t i = 5; i < 9; i++) ck_assert_int_eq(ack(&c, 1, r.token[i], JR_ACK_ACK, 0, &a), 0);
    expect_msgs(&c, 0);
    e2e_free(&c);
}
END_TEST

START_TEST(interest_keeps_what_some_consumer_still_needs)
{
    e2e c;
    setup_retention(&c, 22, JR_RETAIN_INTEREST);
    cres r, ra, rb, a;
    e2e_res pr;
    /* no consumer yet: nothing is stored, the publish still gets its seq */
    ck_assert_int_eq(e2e_publish(&c, 0, "orders.eu", "lost", 4, NULL, &pr), 0);
    ck_assert_uint_eq(pr.seq, 1);
    expect_msgs(&c, 0);
    jr_consumer_config ca, cb;
    durable(&ca, "eu");
    ca.filter_subject = "orders.eu";
    durable(&cb, "all");
    cb.filter_subject = "orders.>";
    ck_assert_int_eq(create(&c, 0, "Q", &ca, &r), 0);
    ck_assert_int_eq(create(&c, 0, "Q", &cb, &r), 0);
    const char *subj[] = {"orders.eu", "orders.us", "misc.x", "orders.eu"};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(e2e_publish(&c, 1, subj[i], "m", 1, NULL, &pr), 0);
    ck_assert_uint_eq(pr.seq, 5);
    expect_msgs(&c, 3); /* misc.x: nobody's filter */
    ck_assert_int_eq(fetch(&c, 0, "Q", "eu", 10, SEC, 0, &ra), 0);
    ck_assert_uint_eq(ra.n, 2);
    ck_assert_int_eq(fetch(&c, 2, "Q", "all", 10, SEC, 0, &rb), 0);
    ck_assert_uint_eq(rb.n, 3);
    for (size_t i = 0; i < ra.n; i++)
        ck_assert_int_eq(ack(&c, 1, ra.token[i], JR_ACK_ACK, 0, &a), 0);
    expect_msgs(&c, 3);                                              /* "all" still needs them */
    ck_assert_int_eq(ack(&c, 1, rb.token[0], JR_ACK_ACK, 0, &a), 0); /* orders.eu #2 */
    expect_msgs(&c, 2);
    /* deleting "all" releases what only it needed */
    ck_assert_int_eq(del(&c, 0, "Q", "all", &r), 0);
    expect_msgs(&c, 0);
    e2e_free(&c);
}
END_TEST

/* A paused consumer hands nothing out until its pause ends; an update keeps the pause; resuming
 * early works too. */
START_TEST(pause_and_resume)
{
    e2e c;
    setup(&c, 16, 3);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "p");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    uint64_t until = jr_sim_wall(c.sim, 0) + 3 * SEC;
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(jr_consumer_pause(e2e_node(&c, 1), "ORDERS", "p", until, admin_cb, &a), 0);
    wait_done(&c, &a);
    ck_assert_msg(a.status == 0, "pause: %s", a.msg);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "p", &a), 0);
    ck_assert_uint_eq(a.cfg.pause_until_ns, until);
    /* an update (another description) keeps the pause */
    cfg.description = "changed";
    ck_assert_int_eq(add(&c, 2, "ORDERS", &cfg, &a), 0);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "p", &a), 0);
    ck_assert_uint_eq(a.cfg.pause_until_ns, until);
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "p", 1, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 0);
    ck_assert_int_eq(r.end_code, 408);
    jr_sim_run_for(c.sim, 2 * SEC);
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "p", 1, 2 * SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 1); /* the pause ended while the request waited */
    /* pause again far ahead, then resume at once */
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(jr_consumer_pause(e2e_node(&c, 1), "ORDERS", "p",
                                       jr_sim_wall(c.sim, 0) + 3600 * SEC, admin_cb, &a),
                     0);
    wait_done(&c, &a);
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "p", 1, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 0);
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(jr_consumer_pause(e2e_node(&c, 1), "ORDERS", "p", 0, admin_cb, &a), 0);
    wait_done(&c, &a);
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "p", 1, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(jr_consumer_pause(e2e_node(&c, 1), "ORDERS", "nope", 0, admin_cb, &a), 0);
    wait_done(&c, &a);
    ck_assert_int_eq(a.status, JR_ENOTFOUND);
    e2e_free(&c);
}
END_TEST

/* An ephemeral consumer goes once nobody pulled or acked for its inactive threshold; pulls keep
 * it alive. */
START_TEST(an_inactive_ephemeral_is_deleted)
{
    e2e c;
    setup(&c, 17, 2);
    cres r;
    jr_consumer_config eph;
    jr_consumer_config_init(&eph);
    eph.inactive_threshold_ns = 2 * (int64_t)SEC;
    ck_assert_int_eq(create(&c, 0, "ORDERS", &eph, &r), 0);
    char name[256];
    snprintf(name, sizeof name, "%s", r.name);
    for (int i = 0; i < 3; i++) { /* pulling for 4.5 s: alive */
        ck_assert_int_eq(fetch(&c, 0, "ORDERS", name, 10, 1500 * MS, 0, &r), 0);
        ck_assert_int_eq(r.status, 0);
    }
    ck_assert_int_eq(info(&c, 0, "ORDERS", name, &r), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    ck_assert_int_eq(info(&c, 0, "ORDERS", name, &r), JR_ENOTFOUND);
    e2e_res sr;
    ck_assert_int_eq(e2e_info(&c, 0, "ORDERS", &sr), 0);
    ck_assert_uint_eq(sr.state.consumers, 0);
    e2e_free(&c);
}
END_TEST

/* A reset drops what is pending and starts delivering again at the sequence asked for. */
START_TEST(reset_to_a_sequence)
{
    e2e c;
    setup(&c, 18, 6);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "rs");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "rs", 4, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 4);
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(jr_consumer_reset(e2e_node(&c, 2), "ORDERS", "rs", 2, admin_cb, &a), 0);
    wait_done(&c, &a);
    ck_assert_msg(a.status == 0, "reset: %s", a.msg);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "rs", &a), 0);
    ck_assert_uint_eq(a.info.num_ack_pending, 0);
    ck_assert_uint_eq(a.info.delivered.stream_seq, 1);
    ck_assert_uint_eq(a.info.ack_floor.stream_seq, 1);
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "rs", 2, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 2);
    ck_assert_uint_eq(r.sseq[0], 2);
    ck_assert_uint_eq(r.dseq[0], 1);
    ck_assert_uint_eq(r.dc[0], 1);
    /* deliver new: a reset is not allowed */
    jr_consumer_config nw;
    durable(&nw, "new");
    nw.deliver_policy = JR_DELIVER_NEW;
    ck_assert_int_eq(create(&c, 0, "ORDERS", &nw, &r), 0);
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(jr_consumer_reset(e2e_node(&c, 2), "ORDERS", "new", 1, admin_cb, &a), 0);
    wait_done(&c, &a);
    ck_assert_int_eq(a.status, JR_EINVAL);
    ck_assert_str_eq(a.msg, "invalid reset: not allowed");
    e2e_free(&c);
}
END_TEST

/* Advisories: a NAK, a TERM and a message that reached max_deliver, each reported once by the
 * leader. */
typedef struct adv_rec {
    int n[4];
    uint64_t sseq[4];
    uint32_t deliveries[4];
} adv_rec;

static void adv_cb(void *arg, const jr_consumer_advisory *a)
{
    adv_rec *v = arg;
    ck_assert_int_ge(a->kind, 1);
    ck_assert_int_le(a->kind, 3);
    ck_assert_str_eq(a->stream, "ORDERS");
    ck_assert_str_eq(a->consumer, "adv");
    v->n[a->kind]++;
    v->sseq[a->kind] = a->stream_seq;
    v->deliveries[a->kind] = a->deliveries;
}

START_TEST(advisories_for_nak_term_and_max_deliveries)
{
    e2e c;
    setup(&c, 19, 3);
    adv_rec v;
    memset(&v, 0, sizeof v);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_int_eq(jr_consumer_advisories(e2e_node(&c, i), adv_cb, &v), 0);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "adv");
    cfg.ack_wait_ns = 500 * (int64_t)MS;
    cfg.max_deliver = 2;
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "adv", 3, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 3);
    ck_assert_int_eq(ack(&c, 1, r.token[1], JR_ACK_NAK, 0, &a), 0);
    ck_assert_int_eq(ack(&c, 1, r.token[2], JR_ACK_TERM, 0, &a), 0);
    jr_sim_run_for(c.sim, 100 * MS);
    ck_assert_int_eq(v.n[JR_ADVISORY_NAKED], 1);
    ck_assert_uint_eq(v.sseq[JR_ADVISORY_NAKED], 2);
    ck_assert_int_eq(v.n[JR_ADVISORY_TERMINATED], 1);
    ck_assert_uint_eq(v.sseq[JR_ADVISORY_TERMINATED], 3);
    /* 1 and 2 again (count 2), then their last ack wait passes: max deliveries for both */
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "adv", 3, 1200 * MS, 0, &r), 0);
    ck_assert_uint_eq(r.n, 2);
    jr_sim_run_for(c.sim, 600 * MS);
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "adv", 1, 300 * MS, 0, &r), 0);
    ck_assert_uint_eq(r.n, 0); /* nothing more: no third delivery */
    ck_assert_int_eq(v.n[JR_ADVISORY_MAX_DELIVERIES], 2);
    ck_assert_uint_eq(v.deliveries[JR_ADVISORY_MAX_DELIVERIES], 2);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "adv", &a), 0);
    ck_assert_uint_eq(a.info.num_ack_pending, 0);
    e2e_free(&c);
}
END_TEST

/* A consumer replica that was down while acks flowed catches up from its group's snapshot (the
 * log behind it compacted), and leads with the state the others had. */
START_TEST(a_lagging_replica_catches_up_from_a_snapshot_and_leads)
{
    e2e c;
    setup(&c, 20, 60);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 8);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "snap");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "snap", &r), 0);
    unsigned down = 99;
    for (unsigned i = 0; i < 3 && down == 99; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "n%u", i);
        if (strcmp(nm, r.leader) != 0) down = i;
    }
    ck_assert_int_eq(jr_sim_crash(c.sim, down), 0);
    unsigned via = (down + 1) % 3;
    for (int round = 0; round < 10; round++) {
        ck_assert_int_eq(fetch(&c, via, "ORDERS", "snap", 5, SEC, 0, &r), 0);
        ck_assert_uint_eq(r.n, 5);
        for (size_t i = 0; i < (round == 9 ? 3 : 5); i++) /* the last round leaves 2 pending */
            ck_assert_int_eq(ack(&c, via, r.token[i], JR_ACK_ACK, 0, &a), 0);
    }
    ck_assert_int_eq(e2e_restart(&c, down), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    /* make the restarted replica the only way to a quorum with one other: crash the leader */
    ck_assert_int_eq(info(&c, via, "ORDERS", "snap", &r), 0);
    unsigned leader = node_named(r.leader);
    ck_assert_uint_lt(leader, 3);
    if (leader != down) {
        ck_assert_int_eq(jr_sim_crash(c.sim, leader), 0);
        jr_sim_run_for(c.sim, 3 * SEC);
    }
    unsigned ask = leader != down ? down : (down + 1) % 3;
    ck_assert_msg(info(&c, ask, "ORDERS", "snap", &a) == 0, "info: %s", a.msg);
    ck_assert_uint_eq(a.info.delivered.stream_seq, 50);
    ck_assert_uint_eq(a.info.ack_floor.stream_seq, 48);
    ck_assert_uint_eq(a.info.num_ack_pending, 2);
    ck_assert_uint_eq(a.info.num_pending, 10);
    e2e_free(&c);
}
END_TEST

/* Every deliver policy with every filter shape against a known stream (subjects a, b, c in
 * turn, seqs 1..9), and what each ack policy does to the state once the messages are acked. */
START_TEST(deliver_policies_filters_and_ack_policies)
{
    e2e c;
    jr_stream_config scfg;
    setup_orders(&c, 3, 30, &scfg);
    e2e_res pr;
    static const char *const letters[] = {"orders.a", "orders.b", "orders.c"};
    for (int i = 0; i < 9; i++) {
        ck_assert_int_eq(e2e_publish(&c, 0, letters[i % 3], "m", 1, NULL, &pr), 0);
        jr_sim_run_for(c.sim, 10 * MS);
    }
    ck_assert_int_eq(e2e_msg_get(&c, 0, "ORDERS", 4, &pr), 0);
    uint64_t ts4 = pr.ts;
    jr_sim_run_for(c.sim, 100 * MS); /* consumers below are created after every message */
    static const char *const ab[] = {"orders.a", "orders.b"};
    struct shape {
        const char *single;
        const char *const *multi;
        size_t nmulti;
    } shapes[] = {{NULL, NULL, 0}, {"orders.a", NULL, 0}, {NULL, ab, 2}};
    struct pol {
        int policy;
        const char *want[3]; /* per shape: the stream seqs delivered, as digits */
    } pols[] = {
        {JR_DELIVER_ALL, {"123456789", "147", "124578"}},
        {JR_DELIVER_LAST, {"9", "7", "8"}},
        {JR_DELIVER_NEW, {"", "", ""}},
        {JR_DELIVER_BY_START_SEQ, {"56789", "7", "578"}},
        {JR_DELIVER_BY_START_TIME, {"456789", "47", "4578"}},
        {JR_DELIVER_LAST_PER_SUBJECT, {"789", "7", "78"}},
    };
    static const int acks[] = {JR_ACK_NONE, JR_ACK_ALL, JR_ACK_EXPLICIT};
    int k = 0;
    for (size_t p = 0; p < sizeof pols / sizeof pols[0]; p++) {
        for (size_t f = 0; f < 3; f++) {
            if (pols[p].policy == JR_DELIVER_LAST_PER_SUBJECT && f == 0) continue; /* needs one */
            int ackp = acks[k % 3];
            char name[32];
            snprintf(name, sizeof name, "c%d", k++);
            jr_consumer_config cfg;
            durable(&cfg, name);
            cfg.deliver_policy = pols[p].policy;
            cfg.ack_policy = ackp;
            cfg.filter_subject = shapes[f].single;
            cfg.filter_subjects = shapes[f].multi;
            cfg.nfilter_subjects = shapes[f].nmulti;
            if (pols[p].policy == JR_DELIVER_BY_START_SEQ) cfg.opt_start_seq = 5;
            if (pols[p].policy == JR_DELIVER_BY_START_TIME) cfg.opt_start_time_ns = ts4;
            cres r, a;
            ck_assert_msg(create(&c, 0, "ORDERS", &cfg, &r) == 0, "%s: %s", name, r.msg);
            ck_assert_int_eq(fetch(&c, 1, "ORDERS", name, 20, 2 * SEC, 0, &r), 0);
            char got[32] = "";
            for (size_t i = 0; i < r.n; i++) got[i] = (char)('0' + (int)r.sseq[i]);
            got[r.n] = 0;
            if (strcmp(got, pols[p].want[f]) != 0) {
                cres d;
                info(&c, 0, "ORDERS", name, &d);
                fprintf(
                    stderr, "%s: leader %s delivered %llu pending %llu waiting %llu filter %s\n",
                    name, d.leader, (unsigned long long)d.info.delivered.stream_seq,
                    (unsigned long long)d.info.num_pending, (unsigned long long)d.info.num_waiting,
                    d.cfg.filter_subject ? d.cfg.filter_subject : "-");
            }
            ck_assert_msg(strcmp(got, pols[p].want[f]) == 0,
                          "policy %d shape %zu: got '%s' want '%s' (end %d %s)", pols[p].policy, f,
                          got, pols[p].want[f], r.end_code, r.end_text);
            if (r.n == 0) continue;
            /* acknowledge: none needs nothing; all, the last one; explicit, each */
            if (ackp == JR_ACK_ALL)
                ck_assert_int_eq(ack(&c, 2, r.token[r.n - 1], JR_ACK_ACK, 0, &a), 0);
            for (size_t i = 0; ackp == JR_ACK_EXPLICIT && i < r.n; i++)
                ck_assert_int_eq(ack(&c, 2, r.token[i], JR_ACK_ACK, 0, &a), 0);
            ck_assert_int_eq(info(&c, 0, "ORDERS", name, &a), 0);
            ck_assert_uint_eq(a.info.num_ack_pending, 0);
            ck_assert_uint_eq(a.info.ack_floor.stream_seq, r.sseq[r.n - 1]);
            ck_assert_uint_eq(a.info.delivered.stream_seq, r.sseq[r.n - 1]);
            ck_assert_uint_eq(a.info.num_pending, 0);
        }
    }
    e2e_free(&c);
}
END_TEST

/* Four servers with stream ORDERS (R3, configuration in *scfg) holding ten messages on
 * orders.x. */
static void setup_four(e2e *c, uint64_t seed, jr_stream_config *scfg)
{
    setup_orders(c, 4, seed, scfg);
    e2e_res r;
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(e2e_publish(c, 0, "orders.x", "m", 1, NULL, &r), 0);
}

/* Runs until consumer `name` reports `nrep` other replicas, all current (asked on node via). */
static int wait_consumer_replicas(e2e *c, unsigned via, const char *name, size_t nrep)
{
    for (int i = 0; i < 60; i++) {
        cres r;
        memset(&r, 0, sizeof r);
        ck_assert_int_eq(jr_consumer_info_get(e2e_node(c, via), "ORDERS", name, info_cb, &r), 0);
        wait_done(c, &r);
        if (r.status == 0 && r.nreplicas == nrep && r.ncurrent == nrep) return 0;
        jr_sim_run_for(c->sim, 500 * MS);
    }
    return -1;
}

/* A consumer follows its stream's peer changes: a shrink to one server takes the consumer there
 * (its state with it), a grow back adds replicas that catch up from the group and can lead. */
START_TEST(a_consumer_follows_its_stream_s_peer_changes)
{
    e2e c;
    jr_stream_config scfg;
    setup_four(&c, 31, &scfg);
    e2e_res pr;
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "mover");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(wait_consumer_replicas(&c, 0, "mover", 2), 0);
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "mover", 4, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 4);
    for (size_t i = 0; i < 3; i++) ck_assert_int_eq(ack(&c, 1, r.token[i], JR_ACK_ACK, 0, &a), 0);
    /* shrink the stream to one server: the consumer goes along */
    scfg.replicas = 1;
    ck_assert_msg(e2e_update(&c, 0, &scfg, &pr) == 0, "shrink: %s", pr.msg);
    ck_assert_int_eq(wait_consumer_replicas(&c, 0, "mover", 0), 0);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "mover", &a), 0);
    ck_assert_uint_eq(a.info.ack_floor.stream_seq, 3);
    ck_assert_uint_eq(a.info.num_ack_pending, 1);
    unsigned peers[4];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 4), 1);
    char only[8];
    snprintf(only, sizeof only, "n%u", peers[0]);
    ck_assert_str_eq(a.leader, only);
    /* grow it back to three: the consumer's new replicas join and catch up */
    scfg.replicas = 3;
    ck_assert_msg(e2e_update(&c, 0, &scfg, &pr) == 0, "grow: %s", pr.msg);
    ck_assert_int_eq(wait_consumer_replicas(&c, 0, "mover", 2), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "ORDERS", 2, 30 * SEC), 0);
    for (int i = 0; i < 60 && e2e_meta_busy(&c, 0, "ORDERS") != 0; i++)
        jr_sim_run_for(c.sim, 500 * MS);
    ck_assert_int_eq(e2e_meta_busy(&c, 0, "ORDERS"), 0);
    /* the old leader crashes: a replica that joined leads with the same state */
    ck_assert_int_eq(jr_sim_crash(c.sim, peers[0]), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    unsigned via = (peers[0] + 1) % 4;
    ck_assert_msg(info(&c, via, "ORDERS", "mover", &a) == 0, "info: %s", a.msg);
    ck_assert_str_ne(a.leader, only);
    ck_assert_uint_eq(a.info.ack_floor.stream_seq, 3);
    ck_assert_uint_eq(a.info.delivered.stream_seq, 4);
    /* the first fetch may go to the crashed leader (a stale hint) and end with 409 Leadership
     * Change, as JetStream's would: a client asks again */
    for (int tries = 0; tries < 3; tries++) {
        ck_assert_int_eq(fetch(&c, via, "ORDERS", "mover", 10, 2 * SEC, 0, &r), 0);
        if (r.end_code != 409) break;
    }
    ck_assert_msg(r.n >= 6, "got %zu, end %d %s", r.n, r.end_code, r.end_text); /* 5..10, 4 again */
    e2e_free(&c);
}
END_TEST

/* A paused consumer still follows its stream's peer changes: the pause holds back deliveries,
 * not its leader's duties, so a shrink of the stream, which waits for the consumer to move,
 * completes long before the pause (an hour) ends. */
START_TEST(a_paused_consumer_follows_its_stream_s_peer_changes)
{
    e2e c;
    jr_stream_config scfg;
    setup_four(&c, 45, &scfg);
    e2e_res pr;
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "pz");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(wait_consumer_replicas(&c, 0, "pz", 2), 0);
    uint64_t until = jr_sim_wall(c.sim, 0) + 3600 * SEC;
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(jr_consumer_pause(e2e_node(&c, 1), "ORDERS", "pz", until, admin_cb, &a), 0);
    wait_done(&c, &a);
    ck_assert_msg(a.status == 0, "pause: %s", a.msg);
    scfg.replicas = 1;
    ck_assert_msg(e2e_update(&c, 0, &scfg, &pr) == 0, "shrink: %s", pr.msg);
    ck_assert_int_eq(wait_consumer_replicas(&c, 0, "pz", 0), 0);
    for (int i = 0; i < 60 && e2e_meta_busy(&c, 0, "ORDERS") != 0; i++)
        jr_sim_run_for(c.sim, 500 * MS);
    ck_assert_int_eq(e2e_meta_busy(&c, 0, "ORDERS"), 0);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "pz", &a), 0);
    ck_assert_uint_eq(a.cfg.pause_until_ns, until);
    e2e_free(&c);
}
END_TEST

/* Pull requests over the consumer's caps end at once with JetStream's 409 texts; one over
 * max_waiting too, while another waits. */
START_TEST(pull_caps_are_refused_with_jetstream_s_texts)
{
    e2e c;
    setup(&c, 32, 2);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "capped");
    cfg.max_batch = 5;
    cfg.max_expires_ns = 60 * (int64_t)SEC;
    cfg.max_bytes = 1000;
    cfg.max_waiting = 1;
    ck_assert_msg(create(&c, 0, "ORDERS", &cfg, &r) == 0, "%s", r.msg);
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "capped", 6, SEC, 0, &r), 0);
    ck_assert_int_eq(r.end_code, 409);
    ck_assert_str_eq(r.end_text, "Exceeded MaxRequestBatch of 5");
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "capped", 1, 61 * (int64_t)SEC, 0, &r), 0);
    ck_assert_str_eq(r.end_text, "Exceeded MaxRequestExpires of 1m0s");
    memset(&r, 0, sizeof r);
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = 1;
    o.max_bytes = 2000;
    ck_assert_int_eq(jr_consumer_fetch(e2e_node(&c, 1), "ORDERS", "capped", &o, fetch_cb, &r), 0);
    wait_done(&c, &r);
    ck_assert_str_eq(r.end_text, "Exceeded MaxRequestMaxBytes of 1000");
    /* the stream holds 2 messages: a request for 5 waits for more, a second one is refused */
    cres w;
    memset(&w, 0, sizeof w);
    jr_fetch_opts_init(&o);
    o.batch = 5;
    o.expires_ns = 2 * (int64_t)SEC;
    ck_assert_int_eq(jr_consumer_fetch(e2e_node(&c, 0), "ORDERS", "capped", &o, fetch_cb, &w), 0);
    jr_sim_run_for(c.sim, 300 * MS);
    ck_assert_int_eq(fetch(&c, 2, "ORDERS", "capped", 1, SEC, 0, &a), 0);
    ck_assert_int_eq(a.end_code, 409);
    ck_assert_str_eq(a.end_text, "Exceeded MaxWaiting");
    wait_done(&c, &w);
    ck_assert_uint_eq(w.n, 2);
    ck_assert_int_eq(w.end_code, 408);
    ck_assert_uint_eq(w.end_pending, 3);
    e2e_free(&c);
}
END_TEST

/* headers_only: the headers plus Nats-Msg-Size, no body. */
START_TEST(headers_only_delivers_the_size_instead_of_the_body)
{
    e2e c;
    setup(&c, 33, 2);
    cres r;
    jr_consumer_config cfg;
    durable(&cfg, "ho");
    cfg.headers_only = 1;
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "ho", 2, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 2);
    ck_assert_str_eq(r.data[0], "");
    ck_assert_str_eq(r.hdr[0], "NATS/1.0\r\nNats-Msg-Size: 7\r\n\r\n"); /* "order 1" */
    e2e_free(&c);
}
END_TEST

/* Replay original: messages stored a second apart are handed out a second apart. */
START_TEST(replay_original_keeps_the_stored_pace)
{
    e2e c;
    setup(&c, 34, 0);
    e2e_res pr;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(e2e_publish(&c, 0, "orders.x", "m", 1, NULL, &pr), 0);
        jr_sim_run_for(c.sim, SEC);
    }
    cres r;
    jr_consumer_config cfg;
    durable(&cfg, "replay");
    cfg.replay_policy = JR_REPLAY_ORIGINAL;
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "replay", 1, 5 * SEC, 0, &r), 0); /* the anchor */
    uint64_t t0 = jr_sim_now(c.sim);
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "replay", 2, 5 * SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 2);
    uint64_t took = jr_sim_now(c.sim) - t0;
    ck_assert_msg(took >= 1900 * MS && took <= 2300 * MS, "2 replayed messages took %llu ms",
                  (unsigned long long)(took / MS));
    e2e_free(&c);
}
END_TEST

/* rate_limit_bps paces a push consumer's deliveries: 800 bits/s is 100 bytes a second, and a
 * message of 58 bytes (subject, 50 bytes of data) goes out less than twice a second. */
START_TEST(rate_limit_paces_push_deliveries)
{
    e2e c;
    setup(&c, 35, 0);
    cres r;
    jr_consumer_config cfg;
    durable(&cfg, "slowpush");
    cfg.deliver_subject = "deliver.slow";
    cfg.rate_limit_bps = 800;
    ck_assert_msg(create(&c, 0, "ORDERS", &cfg, &r) == 0, "%s", r.msg);
    char data[51];
    memset(data, 'x', 50);
    data[50] = 0;
    e2e_res pr;
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(e2e_publish(&c, 1, "orders.x", data, 50, NULL, &pr), 0);
    push_rec p;
    memset(&p, 0, sizeof p);
    jr_subscription *sub = NULL;
    ck_assert_int_eq(
        jr_consumer_subscribe(e2e_node(&c, 2), "ORDERS", "slowpush", push_cb, &p, &sub), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    ck_assert_msg(p.n >= 2 && p.n <= 5, "%zu delivered in 2 s at 100 B/s", p.n);
    jr_sim_run_for(c.sim, 6 * SEC);
    ck_assert_uint_eq(p.n, 10);
    jr_subscription_close(sub);
    e2e_free(&c);
}
END_TEST

/* A fetch with an idle heartbeat hears from the leader while it waits, gets what comes
 * meanwhile, and still ends at its expiry with what it did not get. */
START_TEST(fetch_idle_heartbeats)
{
    e2e c;
    setup(&c, 36, 0);
    cres r;
    jr_consumer_config cfg;
    durable(&cfg, "hb");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    memset(&r, 0, sizeof r);
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = 3;
    o.expires_ns = 4 * (int64_t)SEC;
    o.idle_heartbeat_ns = 500 * (int64_t)MS;
    ck_assert_int_eq(jr_consumer_fetch(e2e_node(&c, 1), "ORDERS", "hb", &o, fetch_cb, &r), 0);
    jr_sim_run_for(c.sim, 1300 * MS);
    ck_assert_uint_ge(r.heartbeats, 2);
    e2e_res pr;
    ck_assert_int_eq(e2e_publish(&c, 2, "orders.x", "late", 4, NULL, &pr), 0);
    wait_done(&c, &r);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_str_eq(r.data[0], "late");
    ck_assert_int_eq(r.end_code, 408);
    ck_assert_uint_eq(r.end_pending, 2);
    ck_assert_uint_ge(r.heartbeats, 5);
    /* a heartbeat over half the expiry is refused */
    o.idle_heartbeat_ns = 3 * (int64_t)SEC;
    ck_assert_int_eq(jr_consumer_fetch(e2e_node(&c, 1), "ORDERS", "hb", &o, fetch_cb, &r),
                     JR_EINVAL);
    e2e_free(&c);
}
END_TEST

/* A pull for more than there is gets what there is at once, as JetStream sends each message
 * when it has it, and keeps waiting for the rest; one that took exactly its max_bytes ends. */
START_TEST(a_fetch_hands_out_messages_before_its_batch_fills)
{
    e2e c;
    setup(&c, 37, 5);
    cres r;
    jr_consumer_config cfg;
    durable(&cfg, "stream");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    memset(&r, 0, sizeof r);
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = 100;
    o.expires_ns = 10 * (int64_t)SEC;
    uint64_t t0 = jr_sim_now(c.sim);
    ck_assert_int_eq(jr_consumer_fetch(e2e_node(&c, 1), "ORDERS", "stream", &o, fetch_cb, &r), 0);
    jr_sim_run_for(c.sim, 500 * MS);
    ck_assert_uint_eq(r.n, 5); /* the five there are, long before the expiry */
    ck_assert_int_eq(r.done, 0);
    e2e_res pr;
    ck_assert_int_eq(e2e_publish(&c, 2, "orders.x", "sixth", 5, NULL, &pr), 0);
    jr_sim_run_for(c.sim, 500 * MS);
    ck_assert_uint_eq(r.n, 6);
    ck_assert_str_eq(r.data[5], "sixth");
    for (size_t i = 0; i < r.n; i++) ck_assert_uint_eq(r.sseq[i], i + 1);
    wait_done(&c, &r);
    ck_assert_uint_ge(jr_sim_now(c.sim) - t0, 10 * SEC);
    ck_assert_int_eq(r.end_code, 408);
    ck_assert_uint_eq(r.end_pending, 94);

    /* max_bytes taken exactly: the request is done, and asks for nothing beyond it */
    ck_assert_int_eq(e2e_publish(&c, 2, "orders.y", "seventh", 7, NULL, &pr), 0);
    memset(&r, 0, sizeof r);
    jr_fetch_opts_init(&o);
    o.batch = 10;
    o.expires_ns = 10 * (int64_t)SEC;
    o.max_bytes = (int64_t)(strlen("orders.y") + strlen("seventh"));
    ck_assert_int_eq(jr_consumer_fetch(e2e_node(&c, 0), "ORDERS", "stream", &o, fetch_cb, &r), 0);
    wait_done(&c, &r);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_str_eq(r.data[0], "seventh");
    ck_assert_int_eq(r.end_code, 0);
    e2e_free(&c);
}
END_TEST

/* sample_freq 100%: every ack is reported with its latency. */
static void sample_cb(void *arg, const jr_consumer_advisory *a)
{
    uint64_t *v = arg;
    if (a->kind != JR_ADVISORY_ACK_SAMPLE) return;
    v[0]++;
    v[1] = a->ack_latency_ns;
}

START_TEST(ack_samples_report_latency)
{
    e2e c;
    setup(&c, 37, 2);
    uint64_t v[2] = {0, 0};
    for (unsigned i = 0; i < 3; i++)
        ck_assert_int_eq(jr_consumer_advisories(e2e_node(&c, i), sample_cb, v), 0);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "sampled");
    cfg.sample_freq = "100%";
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "sampled", 2, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 2);
    jr_sim_run_for(c.sim, 300 * MS);
    ck_assert_int_eq(ack(&c, 2, r.token[0], JR_ACK_ACK, 0, &a), 0);
    jr_sim_run_for(c.sim, 50 * MS);
    ck_assert_uint_eq(v[0], 1);
    ck_assert_msg(v[1] >= 250 * MS && v[1] <= 1500 * MS, "latency %llu ms",
                  (unsigned long long)(v[1] / MS));
    e2e_free(&c);
}
END_TEST

/* A purge moves a consumer past what is gone: its pending deliveries of purged messages are
 * terminated at once, not at their ack wait. */
START_TEST(a_purge_moves_consumers_past_what_is_gone)
{
    e2e c;
    setup(&c, 38, 6);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "purged");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "purged", 4, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 4);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "purged", &a), 0);
    ck_assert_uint_eq(a.info.num_ack_pending, 4);
    e2e_res pr;
    ck_assert_int_eq(e2e_purge(&c, 2, "ORDERS", NULL, &pr), 0);
    jr_sim_run_for(c.sim, 300 * MS);
    ck_assert_int_eq(info(&c, 0, "ORDERS", "purged", &a), 0);
    ck_assert_uint_eq(a.info.num_ack_pending, 0);
    ck_assert_uint_eq(a.info.num_pending, 0);
    ck_assert_uint_eq(a.info.ack_floor.stream_seq, 4);
    ck_assert_int_eq(e2e_publish(&c, 0, "orders.x", "after", 5, NULL, &pr), 0);
    ck_assert_int_eq(fetch(&c, 1, "ORDERS", "purged", 4, 500 * MS, 0, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_uint_eq(r.sseq[0], 7);
    e2e_free(&c);
}
END_TEST

/* 1 if fetch result r delivered stream seq q. */
static int fetched(const cres *r, uint64_t q)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->sseq[i] == q) return 1;
    return 0;
}

/* The servers of the two leaders the barrier tests need apart: *cl leads consumer `name`, *sl
 * leads ORDERS (moved off *cl by a stepdown if it was there too), *x is the third server. */
static void leaders_apart(e2e *c, const char *name, unsigned *cl, unsigned *sl, unsigned *x)
{
    cres a;
    ck_assert_int_eq(info(c, 0, "ORDERS", name, &a), 0);
    *cl = node_named(a.leader);
    ck_assert_uint_lt(*cl, 3);
    e2e_res er;
    ck_assert_int_eq(e2e_info(c, 0, "ORDERS", &er), 0);
    *sl = node_named(er.leader);
    ck_assert_uint_lt(*sl, 3);
    if (*sl == *cl) { /* the stream's leader elsewhere */
        char to[16];
        *sl = (*cl + 1) % 3;
        snprintf(to, sizeof to, "n%u", *sl);
        ck_assert_msg(e2e_stepdown(c, *cl, "ORDERS", to, &er) == 0, "stepdown: %s", er.msg);
    }
    *x = 3 - *cl - *sl;
}

/* Every frame from server `from` to server `to` arrives `delay` late from now on. */
static void delay_link(e2e *c, unsigned from, unsigned to, uint64_t delay)
{
    jr_sim_link slow;
    jr_sim_link_init(&slow);
    slow.delay_min_ns = slow.delay_max_ns = delay;
    ck_assert_int_eq(jr_sim_set_link(c->sim, from, to, &slow), 0);
}

/* A message delete or purge acknowledged before a fetch is issued is never delivered by that
 * fetch, neither new nor redelivered, even by a consumer leader whose own replica of the stream
 * has not applied it yet (its stream leader's frames reach it late): the fetch waits for a read
 * barrier committed by the stream's leader and for the local replica to apply it. */
START_TEST(a_fetch_never_delivers_what_was_deleted_before_it)
{
    e2e c;
    setup(&c, 41, 6);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "lag");
    cfg.ack_wait_ns = (int64_t)SEC;
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "lag", 3, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 3); /* 1..3 pending, 4..6 not delivered yet */
    unsigned cl, sl, x;
    leaders_apart(&c, "lag", &cl, &sl, &x);
    e2e_res er;
    jr_sim_run_for(c.sim, 1200 * MS); /* 1..3 past their ack wait */
    /* the stream leader's frames reach the consumer's leader 200 ms late: the stream commits on
     * sl and x, and cl's replica applies it after the fetch below chose its messages */
    delay_link(&c, sl, cl, 200 * MS);
    jr_sim_run_for(c.sim, 300 * MS);
    ck_assert_int_eq(e2e_msg_delete(&c, x, "ORDERS", 2, &er), 0);
    ck_assert_int_eq(e2e_msg_delete(&c, x, "ORDERS", 5, &er), 0);
    jr_purge_opts po;
    jr_purge_opts_init(&po);
    po.seq = 2; /* seq 1 */
    ck_assert_int_eq(e2e_purge(&c, x, "ORDERS", &po, &er), 0);
    uint64_t sums[8];
    ck_assert_int_ge(e2e_checksums(&c, cl, "ORDERS", sums, 8), 6);
    ck_assert_msg(sums[0] && sums[1] && sums[4], "the consumer leader's replica is not behind");
    ck_assert_int_eq(fetch(&c, x, "ORDERS", "lag", 10, SEC, 0, &r), 0);
    ck_assert_msg(!fetched(&r, 1) && !fetched(&r, 2) && !fetched(&r, 5),
                  "a fetch issued after the deletes delivered a deleted message");
    ck_assert(fetched(&r, 3) && fetched(&r, 4) && fetched(&r, 6));
    ck_assert_int_eq(info(&c, x, "ORDERS", "lag", &a), 0);
    ck_assert_uint_eq(node_named(a.leader), cl);
    e2e_free(&c);
}
END_TEST

/* The read barrier's round trip overlaps the delivery's: new messages are chosen and recorded
 * while the barrier is in flight, and handed out only once it passed, read from the store again
 * then. Here the consumer leader's replica of the stream applies a delete 20 ms late, after the
 * fetch chose the deleted message from it: the message is
 * recorded (its consumer seq taken) and terminated, never handed out; the others are. */
START_TEST(a_message_chosen_ahead_of_the_barrier_and_deleted_is_not_handed_out)
{
    e2e c;
    setup(&c, 43, 6);
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "ahead");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(fetch(&c, 0, "ORDERS", "ahead", 3, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 3);
    for (size_t i = 0; i < 3; i++) ck_assert_int_eq(ack(&c, 0, r.token[i], JR_ACK_ACK, 0, &a), 0);
    unsigned cl, sl, x;
    leaders_apart(&c, "ahead", &cl, &sl, &x);
    e2e_res er;
    jr_sim_run_for(c.sim, 300 * MS);
    /* the stream leader's frames reach the consumer's leader 20 ms late: the delete commits on
     * sl and x, and cl's replica applies it after the fetch below chose its messages */
    delay_link(&c, sl, cl, 20 * MS);
    jr_sim_run_for(c.sim, 100 * MS);
    ck_assert_int_eq(e2e_msg_delete(&c, x, "ORDERS", 5, &er), 0);
    uint64_t sums[8];
    ck_assert_int_ge(e2e_checksums(&c, cl, "ORDERS", sums, 8), 6);
    ck_assert_msg(sums[4], "the consumer leader's replica is not behind");
    ck_assert_int_eq(fetch(&c, x, "ORDERS", "ahead", 10, SEC, 0, &r), 0);
    ck_assert_msg(!fetched(&r, 5), "a fetch issued after the delete delivered the message");
    ck_assert(fetched(&r, 4) && fetched(&r, 6));
    ck_assert_int_eq(info(&c, x, "ORDERS", "ahead", &a), 0);
    ck_assert_uint_eq(node_named(a.leader), cl);
    ck_assert_uint_eq(a.info.delivered.stream_seq, 6);
    ck_assert_uint_eq(a.info.delivered.consumer_seq, 6); /* 5 was recorded, then terminated */
    ck_assert_uint_eq(a.info.num_ack_pending, 2);
    e2e_free(&c);
}
END_TEST

/* Starts a fetch with priority fields (group, overflow conditions, pin id, priority). */
static void pfetch(e2e *c, unsigned node, const char *name, int64_t batch, int64_t expires,
                   const char *group, int64_t min_pending, const char *id, int priority, cres *r)
{
    memset(r, 0, sizeof *r);
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = batch;
    o.expires_ns = expires;
    o.group = group;
    o.min_pending = min_pending;
    o.id = id;
    o.priority = priority;
    ck_assert_int_eq(jr_consumer_fetch(e2e_node(c, node), "ORDERS", name, &o, fetch_cb, r), 0);
}

typedef struct pin_rec {
    int pinned, unpinned;
    char last_pin[64], reason[32];
} pin_rec;

static void pin_cb(void *arg, const jr_consumer_advisory *a)
{
    pin_rec *v = arg;
    if (a->kind == JR_ADVISORY_PINNED) {
        v->pinned++;
        snprintf(v->last_pin, sizeof v->last_pin, "%s", a->pin_id);
    } else if (a->kind == JR_ADVISORY_UNPINNED) {
        v->unpinned++;
        snprintf(v->reason, sizeof v->reason, "%s", a->pin_id);
    }
}

/* Priority groups: overflow serves a request only while its conditions hold; a pinned client
 * is served and the others stand by until the pin times out or is cleared; prioritized serves
 * the lowest priority first; requests that do not fit get JetStream's 400/423 texts. */
START_TEST(priority_groups)
{
    e2e c;
    setup(&c, 39, 5);
    pin_rec v;
    memset(&v, 0, sizeof v);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_int_eq(jr_consumer_advisories(e2e_node(&c, i), pin_cb, &v), 0);
    static const char *const ga[] = {"A"};
    cres r, a;
    jr_consumer_config ov;
    durable(&ov, "ov");
    ov.priority_policy = JR_PRIORITY_OVERFLOW;
    ov.priority_groups = ga;
    ov.npriority_groups = 1;
    ck_assert_msg(create(&c, 0, "ORDERS", &ov, &r) == 0, "%s", r.msg);
    pfetch(&c, 1, "ov", 1, SEC, NULL, 0, NULL, 0, &r);
    wait_done(&c, &r);
    ck_assert_str_eq(r.end_text, "Bad Request - Priority Group missing");
    pfetch(&c, 1, "ov", 1, SEC, "B", 0, NULL, 0, &r);
    wait_done(&c, &r);
    ck_assert_str_eq(r.end_text, "Bad Request - Invalid Priority Group");
    pfetch(&c, 1, "ov", 1, SEC, "A", 0, "x", 0, &r);
    wait_done(&c, &r);
    ck_assert_str_eq(r.end_text, "Bad Request - Not a Pinned Client Priority consumer");
    pfetch(&c, 1, "ov", 1, 500 * (int64_t)MS, "A", 10, NULL, 0, &r); /* 5 pending: too few */
    wait_done(&c, &r);
    ck_assert_uint_eq(r.n, 0);
    ck_assert_int_eq(r.end_code, 408);
    pfetch(&c, 1, "ov", 2, SEC, "A", 3, NULL, 0, &r);
    wait_done(&c, &r);
    ck_assert_uint_eq(r.n, 2);

    jr_consumer_config pc;
    durable(&pc, "pc");
    pc.priority_policy = JR_PRIORITY_PINNED_CLIENT;
    pc.priority_groups = ga;
    pc.npriority_groups = 1;
    pc.priority_timeout_ns = (int64_t)SEC;
    ck_assert_msg(create(&c, 0, "ORDERS", &pc, &r) == 0, "%s", r.msg);
    pfetch(&c, 1, "pc", 1, SEC, "A", 0, NULL, 0, &r); /* pinned */
    wait_done(&c, &r);
    ck_assert_uint_eq(r.n, 1);
    char pin[64];
    snprintf(pin, sizeof pin, "%s", r.pin);
    ck_assert_uint_eq(strlen(pin), 22);
    ck_assert_int_eq(v.pinned, 1);
    ck_assert_str_eq(v.last_pin, pin);
    pfetch(&c, 2, "pc", 1, 400 * (int64_t)MS, "A", 0, NULL, 0, &a); /* stands by */
    pfetch(&c, 1, "pc", 1, SEC, "A", 0, pin, 0, &r);
    wait_done(&c, &r);
    ck_assert_uint_eq(r.n, 1);
    wait_done(&c, &a);
    ck_assert_uint_eq(a.n, 0);
    pfetch(&c, 1, "pc", 1, SEC, "A", 0, "bogus", 0, &r);
    wait_done(&c, &r);
    ck_assert_int_eq(r.end_code, 423);
    ck_assert_str_eq(r.end_text, "Nats-Pin-Id mismatch");
    jr_sim_run_for(c.sim, 1500 * MS); /* no request with the pin: it times out */
    ck_assert_int_eq(v.unpinned, 1);
    ck_assert_str_eq(v.reason, "timeout");
    pfetch(&c, 2, "pc", 1, SEC, "A", 0, NULL, 0, &a); /* the standby is pinned now */
    wait_done(&c, &a);
    ck_assert_uint_eq(a.n, 1);
    ck_assert_str_ne(a.pin, pin);
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_consumer_unpin(e2e_node(&c, 0), "ORDERS", "pc", "A", admin_cb, &r), 0);
    wait_done(&c, &r);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(v.reason, "admin");
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_consumer_unpin(e2e_node(&c, 0), "ORDERS", "pc", "Z", admin_cb, &r), 0);
    wait_done(&c, &r);
    ck_assert_int_eq(r.status, JR_ENOTFOUND);

    jr_consumer_config pr;
    durable(&pr, "prio");
    pr.priority_policy = JR_PRIORITY_PRIORITIZED;
    pr.priority_groups = ga;
    pr.npriority_groups = 1;
    pr.deliver_policy = JR_DELIVER_NEW;
    ck_assert_msg(create(&c, 0, "ORDERS", &pr, &r) == 0, "%s", r.msg);
    pfetch(&c, 1, "prio", 1, 2 * (int64_t)SEC, "A", 0, NULL, 5, &a);
    pfetch(&c, 2, "prio", 1, 2 * (int64_t)SEC, "A", 0, NULL, 1, &r);
    jr_sim_run_for(c.sim, 300 * MS);
    e2e_res er;
    ck_assert_int_eq(e2e_publish(&c, 0, "orders.x", "first", 5, NULL, &er), 0);
    wait_done(&c, &r);
    ck_assert_uint_eq(r.n, 1); /* priority 1 served first */
    wait_done(&c, &a);
    ck_assert_uint_eq(a.n, 0);
    pfetch(&c, 1, "prio", 1, SEC, "A", 0, NULL, 10, &r);
    wait_done(&c, &r);
    ck_assert_str_eq(r.end_text, "Bad Request - Priority must be between 0 and 9");
    e2e_free(&c);
}
END_TEST

/* Consumer `name` of stream `stream` in node i's meta state (NULL: node i is down or does not
 * know it). */
static const jr__meta_consumer *meta_consumer(e2e *c, unsigned i, const char *stream,
                                              const char *name)
{
    jr_node *n = e2e_node(c, i);
    const jr__meta_stream *s =
        n && jr__js_of(n) ? jr__meta_stream_find(&jr__js_of(n)->st, stream) : NULL;
    return s ? jr__meta_consumer_find(s, name) : NULL;
}

/* Runs (up to 10 s) until server i has let its replica of consumer `name` go; returns what
 * e2e_consumer_digest says of that replica then (JR_ENOTFOUND: gone). */
static int wait_replica_dropped(e2e *c, unsigned i, const char *stream, const char *name)
{
    uint64_t d, applied;
    int rc = e2e_consumer_digest(c, i, stream, name, &d, &applied);
    for (int tries = 0; tries < 100 && rc != JR_ENOTFOUND; tries++) {
        jr_sim_run_for(c->sim, 100 * MS);
        rc = e2e_consumer_digest(c, i, stream, name, &d, &applied);
    }
    return rc;
}

/* The consumer version of test_replicas' shrink before the first leader: an R2 consumer created
 * while one of its stream's two servers had just crashed, then its stream shrunk to R1 (the
 * meta leader drops the server that is down, and the consumer goes along) before the consumer's
 * group ever had a leader. The group's configuration still has both original peers, and the
 * consumer's peer change needs a leader, which needs both. The dropped server held no replica
 * of the consumer (it was down at the creation); when it comes back it runs one of the original
 * peer set until the change converged, so the group elects, the shrink completes, the consumer
 * delivers, and the dropped server lets its replica go. */
START_TEST(a_consumer_shrunk_before_its_first_leader_completes_when_the_dropped_peer_returns)
{
    e2e c;
    e2e_new_ssd(&c, 3, 2, 811);
    int m = e2e_meta_leader(&c);
    ck_assert_int_ge(m, 0);
    unsigned down = m == 0 ? 1 : 0, up = 1 - down;
    static const char *ssd[] = {"ssd"};
    const char *subj[] = {"orig.>"};
    jr_stream_config scfg;
    e2e_config(&scfg, "ORIG", subj, 1, 2);
    scfg.placement = e2e_placement(NULL, ssd, 1);
    e2e_res er;
    ck_assert_msg(e2e_add(&c, (unsigned)m, &scfg, &er) == 0, "add: %s", er.msg);
    ck_assert_int_ge(e2e_wait_stream(&c, (unsigned)m, "ORIG", 1, 30 * SEC), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, down), 0);
    cres r;
    jr_consumer_config cfg;
    durable(&cfg, "first");
    ck_assert_msg(create(&c, (unsigned)m, "ORIG", &cfg, &r) == 0, "create: %s", r.msg);
    const jr__meta_consumer *mc = meta_consumer(&c, (unsigned)m, "ORIG", "first");
    ck_assert_ptr_nonnull(mc);
    ck_assert_uint_eq(mc->npeers, 2); /* both of its stream's servers, one of them down */
    jr_sim_run_for(c.sim, 5 * SEC);   /* the meta leader sees it offline */
    ck_assert_int_eq(e2e_consumer_leader(&c, up, "ORIG", "first"), -1); /* one of two voters */
    scfg.replicas = 1;
    ck_assert_msg(e2e_update(&c, (unsigned)m, &scfg, &er) == 0, "shrink: %s", er.msg);
    mc = meta_consumer(&c, (unsigned)m, "ORIG", "first");
    ck_assert_ptr_nonnull(mc);
    ck_assert_uint_eq(mc->npeers, 1);
    char upname[8];
    snprintf(upname, sizeof upname, "n%u", up);
    ck_assert_str_eq(mc->peers[0], upname);
    ck_assert_int_eq(e2e_restart(&c, down), 0);
    int led = 0;
    for (int tries = 0; tries < 300 && !led; tries++) {
        jr_sim_run_for(c.sim, 100 * MS);
        mc = meta_consumer(&c, up, "ORIG", "first");
        led = mc && !jr__meta_consumer_busy(mc) &&
              e2e_consumer_leader(&c, up, "ORIG", "first") == (int)up;
    }
    ck_assert_msg(led, "the consumer never elected a leader and converged");
    ck_assert_int_eq(e2e_publish(&c, up, "orig.x", "x", 1, NULL, &er), 0);
    ck_assert_int_eq(fetch(&c, up, "ORIG", "first", 1, 2 * SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_msg(wait_replica_dropped(&c, down, "ORIG", "first") == JR_ENOTFOUND,
                  "the dropped server kept its consumer replica");
    e2e_free(&c);
}
END_TEST

/* 1 if the peer list names server `name`. */
static int names(const char *const *peers, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(peers[i], name) == 0) return 1;
    return 0;
}

/* 1 once the leader of ORDERS on some server has a move status of type MEMBERSHIP naming
 * consumer "solo" under-replicated. */
static int told_under_replicated(void *arg, jr_sim *sim)
{
    e2e *c = arg;
    (void)sim;
    for (unsigned i = 0; i < 4; i++) {
        jr_node *n = e2e_node(c, i);
        jr__js *js = n ? jr__js_of(n) : NULL;
        const jr__meta_stream *s = js ? jr__meta_stream_find(&js->st, "ORDERS") : NULL;
        jr__srep *r = s ? jr__srep_find(js, s->group) : NULL;
        if (r && r->mw && r->mw->note.status == JR_MOVE_MEMBERSHIP &&
            strstr(r->mw->note.desc, "consumer 'solo' stays under-replicated"))
            return 1;
    }
    return 0;
}

/* A consumer whose peer change cannot converge does not hold up its stream's move: an R1
 * consumer's only server crashes and is evacuated from its R3 stream. The consumer's group has
 * no leader to move it, so the stream moves on (its move status says the consumer stays
 * under-replicated) and converges without that server; the consumer keeps its busy assignment
 * and its replica on the server that is down. Nothing is dropped: when the server is back, its
 * replica (without a replica of the stream there) leads the consumer's change to the new peer,
 * and the consumer goes on with the state it had (ack floor, pending). */
START_TEST(a_stalled_consumer_does_not_block_its_stream_s_move)
{
    e2e c;
    jr_stream_config scfg;
    setup_four(&c, 41, &scfg);
    e2e_res er;
    cres r, a;
    jr_consumer_config cfg;
    durable(&cfg, "solo");
    cfg.num_replicas = 1;
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    const jr__meta_consumer *mc = meta_consumer(&c, 0, "ORDERS", "solo");
    ck_assert_ptr_nonnull(mc);
    ck_assert_uint_eq(mc->npeers, 1);
    char xname[8];
    snprintf(xname, sizeof xname, "%s", mc->peers[0]);
    unsigned x = (unsigned)(xname[1] - '0');
    unsigned via = (x + 1) % 4;
    for (int tries = 0; tries < 100 && e2e_consumer_leader(&c, x, "ORDERS", "solo") != (int)x;
         tries++)
        jr_sim_run_for(c.sim, 100 * MS);
    ck_assert_int_eq(fetch(&c, via, "ORDERS", "solo", 4, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 4);
    for (size_t i = 0; i < 3; i++) ck_assert_int_eq(ack(&c, via, r.token[i], JR_ACK_ACK, 0, &a), 0);
    /* its only server goes down and is evacuated from the stream */
    ck_assert_int_eq(jr_sim_crash(c.sim, x), 0);
    jr_sim_run_for(c.sim, 3 * SEC); /* seen offline */
    memset(&er, 0, sizeof er);
    ck_assert_int_eq(jr_stream_evacuate(e2e_node(&c, via), "ORDERS", xname, e2e_admin_cb, &er), 0);
    ck_assert_int_eq(e2e_wait(&c, &er, 30 * SEC), 0);
    ck_assert_msg(er.status == 0, "evacuate: %s %s", jr_err_name(er.status), er.msg);
    /* the stream's leader removes the server with a move status naming the consumer left
     * under-replicated (short-lived: watched at every step of the fixture) */
    ck_assert_int_eq(jr_sim_run_until(c.sim, told_under_replicated, &c, 30 * SEC), 0);
    int moved = 0;
    for (int tries = 0; tries < 300 && !moved; tries++) {
        jr_sim_run_for(c.sim, 100 * MS);
        unsigned p[8];
        int np = e2e_meta_peers(&c, via, "ORDERS", p, 8);
        moved = e2e_meta_busy(&c, via, "ORDERS") == 0 && np == 3;
        for (int i = 0; i < np; i++) moved &= p[i] != x;
    }
    ck_assert_msg(moved, "the stream's move never converged without %s", xname);
    mc = meta_consumer(&c, via, "ORDERS", "solo");
    ck_assert_ptr_nonnull(mc);
    ck_assert(jr__meta_consumer_busy(mc)); /* still on its way, kept where it was */
    ck_assert(!names(mc->peers, mc->npeers, xname));
    /* the server comes back: the consumer completes its move with its state */
    ck_assert_int_eq(e2e_restart(&c, x), 0);
    int done = 0;
    for (int tries = 0; tries < 600 && !done; tries++) {
        jr_sim_run_for(c.sim, 100 * MS);
        mc = meta_consumer(&c, via, "ORDERS", "solo");
        done = mc && !jr__meta_consumer_busy(mc);
    }
    ck_assert_msg(done, "the consumer's move never converged once %s was back", xname);
    ck_assert_int_eq(info(&c, via, "ORDERS", "solo", &a), 0);
    ck_assert_uint_eq(a.info.ack_floor.stream_seq, 3);
    ck_assert_uint_eq(a.info.delivered.stream_seq, 4);
    ck_assert_uint_eq(a.info.num_ack_pending, 1);
    ck_assert_str_ne(a.leader, xname);
    ck_assert_int_eq(fetch(&c, via, "ORDERS", "solo", 6, SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, 6);
    ck_assert_uint_eq(r.sseq[0], 5);
    ck_assert_int_eq(wait_replica_dropped(&c, x, "ORDERS", "solo"), JR_ENOTFOUND);
    e2e_free(&c);
}
END_TEST

/* A consumer leader whose own stream replica acknowledges the read barrier's TICK after the
 * stream's leader committed it (the third server's acknowledgement came first) learns that
 * commit with the flush that counts its acknowledgement, not a commit delay later: a round of
 * fetch and acks costs the barrier's round trips alone. Links: 200 µs, the consumer leader's
 * to the stream leader 1 ms; the sim's commit delay is 30 ms / 64 ≈ 469 µs. */
START_TEST(a_fetch_s_barrier_does_not_wait_the_commit_delay)
{
    e2e c;
    setup(&c, 41, 60);
    cres r;
    jr_consumer_config cfg;
    durable(&cfg, "C");
    ck_assert_int_eq(create(&c, 0, "ORDERS", &cfg, &r), 0);
    unsigned cl, sl, x;
    leaders_apart(&c, "C", &cl, &sl, &x);
    for (unsigned a = 0; a < 3; a++)
        for (unsigned b = 0; b < 3; b++)
            if (a != b) delay_link(&c, a, b, 200 * MS / 1000);
    delay_link(&c, cl, sl, 1 * MS);
    jr_sim_run_for(c.sim, 1 * SEC);
    for (int round = 0; round < 3; round++) {
        uint64_t t0 = jr_sim_now(c.sim);
        ck_assert_int_eq(fetch(&c, cl, "ORDERS", "C", 20, 5 * (int64_t)SEC, 0, &r), 0);
        uint64_t took = jr_sim_now(c.sim) - t0;
        ck_assert_uint_eq(r.n, 20);
        for (size_t i = 0; i < r.n; i++)
            ck_assert_int_eq(
                jr_consumer_ack(e2e_node(&c, cl), r.token[i], JR_ACK_ACK, 0, NULL, NULL, NULL), 0);
        /* the barrier to the stream leader (1 ms), its TICK to the consumer leader (200 µs),
         * the acknowledgement back (1 ms), the commit (200 µs); the deliveries' records commit
         * meanwhile */
        ck_assert_msg(took <= 2400 * MS / 1000, "round %d: %llu ns", round,
                      (unsigned long long)took);
    }
    e2e_free(&c);
}
END_TEST

/* File reads (pread calls) of every server's disk so far. */
static uint64_t preads(e2e *c)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < 3; i++) {
        jr__memfs_stats st;
        jr__memfs_stats_get(jr_sim_vfs(c->sim, i), &st);
        n += st.ops[JR__MEMFS_PREAD];
    }
    return n;
}

/* The file reads of fetching `batch` messages (from the start) of consumer `name` through its
 * leader. */
static uint64_t fetch_reads(e2e *c, const char *name, const char *filter, int64_t batch)
{
    cres r;
    jr_consumer_config cfg;
    durable(&cfg, name);
    cfg.filter_subject = filter;
    ck_assert_int_eq(create(c, 0, "ORDERS", &cfg, &r), 0);
    ck_assert_int_eq(info(c, 0, "ORDERS", name, &r), 0);
    unsigned cl = node_named(r.leader);
    ck_assert_uint_lt(cl, 3);
    jr_sim_run_for(c->sim, 1 * SEC);
    uint64_t p0 = preads(c);
    ck_assert_int_eq(fetch(c, cl, "ORDERS", name, batch, 5 * (int64_t)SEC, 0, &r), 0);
    ck_assert_uint_eq(r.n, (size_t)batch);
    return preads(c) - p0;
}

/* A consumer with one filter subject reads each message it delivers from its stream's store no
 * more often than one without a filter: its next match is the message (the records are read
 * from the block file here, past the store's in-memory window). Reads in seq order go through
 * the store's readahead: about 100 KiB of records, read when chosen and again when delivered,
 * cost a few reads of 64 KiB rather than one per message. */
START_TEST(one_filter_reads_a_message_no_more_than_none)
{
    e2e c;
    jr_stream_config scfg;
    setup_orders(&c, 3, 43, &scfg);
    char data[1024];
    memset(data, 'x', sizeof data);
    e2e_res pr;
    for (int i = 0; i < 400; i++) /* 400 KiB: the first ones are in the block file alone */
        ck_assert_int_eq(e2e_publish(&c, 0, "orders.x", data, sizeof data, NULL, &pr), 0);
    uint64_t none = fetch_reads(&c, "ALL", NULL, 100);
    uint64_t one = fetch_reads(&c, "X", "orders.x", 100);
    ck_assert_uint_ge(none, 2); /* read from the file: the case counts something */
    ck_assert_msg(none <= 12, "%llu reads for 100 messages", (unsigned long long)none);
    ck_assert_msg(one <= none, "%llu reads with a filter, %llu without", (unsigned long long)one,
                  (unsigned long long)none);
    e2e_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_consumers");
    TCase *tc = tcase_create("consumers");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, create_info_update_delete);
    tcase_add_test(tc, fetch_and_ack_from_any_server);
    tcase_add_test(tc, an_answered_fetch_leaves_no_timer_armed);
    tcase_add_test(tc, redelivery_nak_and_term);
    tcase_add_test(tc, leader_failover_keeps_delivery_counts);
    tcase_add_test(tc, a_proposal_refused_during_a_failed_transfer_leaves_the_leader_working);
    tcase_add_test(tc, push_subscription);
    tcase_add_test(tc, pause_and_resume);
    tcase_add_test(tc, an_inactive_ephemeral_is_deleted);
    tcase_add_test(tc, reset_to_a_sequence);
    tcase_add_test(tc, advisories_for_nak_term_and_max_deliveries);
    tcase_add_test(tc, a_lagging_replica_catches_up_from_a_snapshot_and_leads);
    tcase_add_test(tc, deliver_policies_filters_and_ack_policies);
    tcase_add_test(tc, a_consumer_follows_its_stream_s_peer_changes);
    tcase_add_test(tc, pull_caps_are_refused_with_jetstream_s_texts);
    tcase_add_test(tc, headers_only_delivers_the_size_instead_of_the_body);
    tcase_add_test(tc, replay_original_keeps_the_stored_pace);
    tcase_add_test(tc, rate_limit_paces_push_deliveries);
    tcase_add_test(tc, fetch_idle_heartbeats);
    tcase_add_test(tc, a_fetch_hands_out_messages_before_its_batch_fills);
    tcase_add_test(tc, ack_samples_report_latency);
    tcase_add_test(tc, a_purge_moves_consumers_past_what_is_gone);
    tcase_add_test(tc, priority_groups);
    tcase_add_test(tc, work_queue_removes_on_ack_on_every_replica);
    tcase_add_test(tc, interest_keeps_what_some_consumer_still_needs);
    suite_add_tcase(s, tc);
    TCase *barrier = tcase_create("barrier");
    tcase_set_timeout(barrier, 120);
    tcase_add_test(barrier, a_fetch_s_barrier_does_not_wait_the_commit_delay);
    tcase_add_test(barrier, one_filter_reads_a_message_no_more_than_none);
    tcase_add_test(barrier, a_fetch_never_delivers_what_was_deleted_before_it);
    tcase_add_test(barrier, a_message_chosen_ahead_of_the_barrier_and_deleted_is_not_handed_out);
    suite_add_tcase(s, barrier);
    TCase *origins = tcase_create("peer_changes");
    tcase_set_timeout(origins, 120);
    tcase_add_test(
        origins, a_consumer_shrunk_before_its_first_leader_completes_when_the_dropped_peer_returns);
    tcase_add_test(origins, a_stalled_consumer_does_not_block_its_stream_s_move);
    tcase_add_test(origins, a_paused_consumer_follows_its_stream_s_peer_changes);
    suite_add_tcase(s, origins);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
