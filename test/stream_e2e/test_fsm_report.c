/*
 * A follower's failed state machine, as its leader sees it (lib/node/fsmreport.c, the wire's FSM
 * extension). A stream follower whose store fails is rebuilt from its peers with its Raft log
 * whole, so nothing in the log tells its leader; its server does: within a heartbeat the
 * leader's jr_group_peer says fsm_failed (and rebuilding), its stream info shows the replica
 * not current with "state machine rebuilding", its stream check warns and its node health lists
 * the group with peers_fsm_failed; once the replica is whole again the leader's view clears
 * within a heartbeat, and the replica is never shown offline while it is rebuilt. A consumer
 * follower whose state machine fails shows the same way on the consumer's leader (its
 * jr_group_peer, consumer info and consumer check) until it is rebuilt. Frames written by hand
 * check the leader's side of the wire: a report of another version is skipped and counted, one of
 * another term or a malformed one changes nothing, and a word not renewed expires after an election
 * timeout.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "js/js.h"
#include "node/node.h"
#include "wire/frame.h"

#define HEARTBEAT (30 * MS) /* the fixture's heartbeat interval (sim.c) */
#define ELECTION (150 * MS) /* and its election timeout */

static jr__srep *rep(e2e *c, unsigned i)
{
    jr__js *js = jr__js_of(e2e_node(c, i));
    const jr__meta_stream *s = js ? jr__meta_stream_find(&js->st, "ORDERS") : NULL;
    return s ? jr__srep_find(js, s->group) : NULL;
}

/* The leader l's status of member `name` of the ORDERS group: 0, or -1 if l does not lead it or
 * has no such member. */
static int leader_peer(e2e *c, unsigned l, const char *name, jr_peer_status *out)
{
    jr__srep *r = rep(c, l);
    if (!r || !r->g) return -1;
    jr_group_status st = {.size = sizeof st};
    if (jr_group_status_get(r->g, &st) != 0 || st.role != JR_LEADER) return -1;
    for (size_t i = 0; i < st.npeers; i++) {
        memset(out, 0, sizeof *out);
        out->size = sizeof *out;
        if (jr_group_peer(r->g, i, out) == 0 && out->name && strcmp(out->name, name) == 0) return 0;
    }
    return -1;
}

typedef struct watch {
    e2e *c;
    unsigned l, f;
    int failed; /* what the leader is to show: 1 failed, 0 whole */
} watch;

static int leader_shows(void *arg, jr_sim *sim)
{
    (void)sim;
    watch *w = arg;
    jr_peer_status ps;
    if (leader_peer(w->c, w->l, jr_sim_name(w->c->sim, w->f), &ps) != 0) return 0;
    return w->failed ? ps.fsm_failed : !ps.fsm_failed;
}

/* The leader shows f's state machine failed and heard from f's replica within an election
 * timeout. */
static int leader_hears(void *arg, jr_sim *sim)
{
    (void)sim;
    watch *w = arg;
    jr_peer_status ps;
    if (leader_peer(w->c, w->l, jr_sim_name(w->c->sim, w->f), &ps) != 0) return 0;
    return ps.fsm_failed && ps.last_seen_ns <= ELECTION;
}

/* Follower f's replica is whole: open, not failed, not fetching its messages again. */
static int follower_whole(void *arg, jr_sim *sim)
{
    (void)sim;
    watch *w = arg;
    jr__srep *r = rep(w->c, w->f);
    return r && r->g && !jr__group_closed(r->g) && jr__srep_damage(r) == 0;
}

typedef struct hres {
    int done, status, healthy;
    size_t ngroups;
    int peers_fsm_failed;
    char text[256];
} hres;

static void health_cb(void *arg, int status, const char *msg, const jr_node_health_info *h)
{
    hres *r = arg;
    (void)msg;
    r->done = 1;
    r->status = status;
    if (!h) return;
    r->healthy = h->healthy;
    r->ngroups = h->ngroups;
    for (size_t i = 0; i < h->ngroups; i++) {
        if (!h->groups[i]->peers_fsm_failed) continue;
        r->peers_fsm_failed = h->groups[i]->peers_fsm_failed;
        snprintf(r->text, sizeof r->text, "%s", h->groups[i]->text);
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
    ck_assert_int_eq(jr_sim_run_until(c->sim, h_done, r, 10 * SEC), 0);
    ck_assert_int_eq(r->status, 0);
}

typedef struct chk {
    int done, status;
    char line[512];
    int rebuilding, fsm_failed;
} chk;

static void check_cb(void *arg, int status, const char *msg, const jr_check_result *res)
{
    chk *k = arg;
    (void)msg;
    k->done = 1;
    if (!res) return;
    k->status = res->status;
    for (size_t i = 0; i < res->nproblems; i++) {
        k->rebuilding += res->problems[i]->kind == JR_CHECK_REBUILDING;
        k->fsm_failed += res->problems[i]->kind == JR_CHECK_FSM_FAILED;
    }
    jr_stream_check_format(res, k->line, sizeof k->line);
}

static int k_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((chk *)arg)->done;
}

static void stream_check(e2e *c, unsigned i, chk *k)
{
    memset(k, 0, sizeof *k);
    ck_assert_int_eq(jr_stream_check(e2e_node(c, i), "ORDERS", NULL, check_cb, k), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, k_done, k, 10 * SEC), 0);
}

/* Index of replica `name` in an info result; -1 if it is not listed. */
static int rep_index(const e2e_res *r, const char *name)
{
    for (size_t i = 0; i < r->nreplicas && i < 8; i++)
        if (strcmp(r->reps[i].name, name) == 0) return (int)i;
    return -1;
}

static unsigned setup(e2e *c, uint64_t seed, unsigned *f, unsigned *o)
{
    const char *subj[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 3);
    unsigned l = (unsigned)e2e_new_with_stream(c, 3, seed, &cfg);
    *f = (l + 1) % 3;
    *o = (l + 2) % 3;
    /* logs compacted behind snapshots: a rebuilt replica fetches its messages from a peer */
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(c, i, 8);
    e2e_res r;
    for (int n = 0; n < 30; n++) {
        char body[16];
        snprintf(body, sizeof body, "m-%d", n);
        ck_assert_int_eq(e2e_publish(c, l, "orders.new", body, strlen(body), NULL, &r), 0);
    }
    jr_sim_run_for(c->sim, 2 * SEC);
    return l;
}

START_TEST(a_followers_failed_store_shows_on_the_leader_until_it_is_rebuilt)
{
    e2e c;
    unsigned f, o, l = setup(&c, 71 + (uint64_t)_i, &f, &o);
    const char *fname = jr_sim_name(c.sim, f);
    jr_peer_status ps;
    ck_assert_int_eq(leader_peer(&c, l, fname, &ps), 0);
    ck_assert_int_eq(ps.fsm_failed, 0);
    ck_assert_int_eq(ps.current, 1);
    /* f cannot fetch from o: its catch-up waits on o for a while before it asks the leader,
     * which keeps it rebuilding long enough to look at every report */
    jr_sim_cut(c.sim, f, o);
    jr_sim_cut(c.sim, o, f);
    uint64_t wakes = e2e_node(&c, l)->live.stats.gone_wakes;
    jr__srep_store_failed(rep(&c, f), JR_ECORRUPT, "a store read");

    watch w = {&c, l, f, 1};
    ck_assert_msg(jr_sim_run_until(c.sim, leader_shows, &w, HEARTBEAT) == 0,
                  "the leader does not show %s's failed state machine within a heartbeat", fname);
    ck_assert_int_ne(jr__srep_damage(rep(&c, f)), 0);
    ck_assert_int_eq(leader_peer(&c, l, fname, &ps), 0);
    ck_assert_int_eq(ps.fsm_failed, 1);
    ck_assert_int_eq(ps.damaged, 0);
    ck_assert_int_eq(ps.current, 0);

    /* stream info from the leader: the replica line says so */
    e2e_res r;
    ck_assert_int_eq(e2e_info(&c, l, "ORDERS", &r), 0);
    int k = rep_index(&r, fname);
    ck_assert_int_ge(k, 0);
    ck_assert_int_eq(r.reps[k].fsm_failed, 1);
    ck_assert_int_eq(r.reps[k].current, 0);
    ck_assert_int_eq(r.reps[k].damaged, 0);
    ck_assert_msg(strstr(r.text, r.reps[k].fsm_rebuilding ? "state machine rebuilding"
                                                          : "state machine failed"),
                  "%s", r.text);
    /* the same from the other follower, whose answer comes from the leader over the wire */
    e2e_res ro;
    ck_assert_int_eq(e2e_info(&c, o, "ORDERS", &ro), 0);
    k = rep_index(&ro, fname);
    ck_assert_int_ge(k, 0);
    ck_assert_int_eq(ro.reps[k].fsm_failed, 1);
    ck_assert_int_eq(ro.reps[k].current, 0);

    /* f is never shown offline meanwhile: its replica closed and reopened to be rebuilt, and
     * the quiet leader that news woke reports f's contact as of the news, not as of f's last
     * message before the group went quiet, while the reopened replica's first answer is on its
     * way. Then the stream check on the leader, once its group heard from f since. */
    for (uint64_t end = jr_sim_now(c.sim) + 2 * ELECTION;;) {
        ck_assert_int_eq(leader_peer(&c, l, fname, &ps), 0);
        ck_assert_msg(ps.last_seen_ns <= 2 * ELECTION, "the leader shows %s offline (seen %llu)",
                      fname, (unsigned long long)ps.last_seen_ns);
        if (e2e_node(&c, l)->live.stats.gone_wakes > wakes && leader_hears(&w, c.sim)) break;
        ck_assert_msg(jr_sim_now(c.sim) < end, "the leader is not woken or does not hear %s",
                      fname);
        ck_assert_int_eq(jr_sim_step(c.sim), 1);
    }
    chk ck;
    stream_check(&c, l, &ck);
    ck_assert_msg(ck.rebuilding + ck.fsm_failed == 1, "%s", ck.line);
    ck_assert_int_ne(ck.status, JR_CHECK_OK);
    ck_assert_msg(strstr(ck.line, ck.rebuilding ? "1 replicas rebuilding"
                                                : "1 replicas state machine failed"),
                  "%s", ck.line);

    /* the leader's node health lists its group, naming the replica, and stays healthy: the
     * member's own server is the unhealthy one */
    hres h;
    node_health(&c, l, &h);
    ck_assert_int_eq(h.healthy, 1);
    ck_assert_int_eq(h.peers_fsm_failed, 1);
    ck_assert_msg(strstr(h.text, fname) && strstr(h.text, "state machine"), "%s", h.text);
    ck_assert_int_ne(jr__srep_damage(rep(&c, f)), 0); /* all of it while f was rebuilding */

    /* f fetches its messages once the link is back; the leader's view clears within a
     * heartbeat of it being whole */
    jr_sim_heal(c.sim);
    ck_assert_int_eq(jr_sim_run_until(c.sim, follower_whole, &w, 20 * SEC), 0);
    w.failed = 0;
    ck_assert_msg(jr_sim_run_until(c.sim, leader_shows, &w, HEARTBEAT) == 0,
                  "the leader still shows %s's state machine failed", fname);
    ck_assert_int_eq(e2e_wait_stream(&c, l, "ORDERS", 2, 10 * SEC), (int)l);
    ck_assert_int_eq(e2e_info(&c, l, "ORDERS", &r), 0);
    k = rep_index(&r, fname);
    ck_assert_int_ge(k, 0);
    ck_assert_int_eq(r.reps[k].fsm_failed, 0);
    ck_assert(!strstr(r.text, "state machine"));
    stream_check(&c, l, &ck);
    ck_assert_msg(ck.status == JR_CHECK_OK, "%s", ck.line);
    node_health(&c, l, &h);
    ck_assert_int_eq(h.peers_fsm_failed, 0);
    ck_assert_int_eq(h.healthy, 1);
    /* whole, f's server said so a few times and then nothing more: no report is due */
    jr_sim_run_for(c.sim, 5 * HEARTBEAT);
    ck_assert_ptr_null(e2e_node(&c, f)->fsm_list);
    e2e_free(&c);
}
END_TEST

/* Consumers ---------------------------------------------------------------------------------*/

#define CONSUMER "C1"

static jr__crep *crep(e2e *c, unsigned i)
{
    jr__js *js = jr__js_of(e2e_node(c, i));
    uint64_t gid = e2e_consumer_group(c, i, "ORDERS", CONSUMER);
    return js && gid ? jr__crep_find(js, gid) : NULL;
}

/* The consumer leader l's status of member `name` of the consumer's group: 0, or -1 if l does
 * not lead it or has no such member. */
static int cleader_peer(e2e *c, unsigned l, const char *name, jr_peer_status *out)
{
    jr__crep *r = crep(c, l);
    if (!r || !r->g) return -1;
    jr_group_status st = {.size = sizeof st};
    if (jr_group_status_get(r->g, &st) != 0 || st.role != JR_LEADER) return -1;
    for (size_t i = 0; i < st.npeers; i++) {
        memset(out, 0, sizeof *out);
        out->size = sizeof *out;
        if (jr_group_peer(r->g, i, out) == 0 && out->name && strcmp(out->name, name) == 0) return 0;
    }
    return -1;
}

static int cleader_shows(void *arg, jr_sim *sim)
{
    (void)sim;
    watch *w = arg;
    jr_peer_status ps;
    if (cleader_peer(w->c, w->l, jr_sim_name(w->c->sim, w->f), &ps) != 0) return 0;
    return w->failed ? ps.fsm_failed : !ps.fsm_failed;
}

typedef struct cinfo {
    int done, status;
    const char *name; /* the replica to look at */
    int found, current, offline, fsm_failed, fsm_rebuilding;
    char text[2048];
} cinfo;

static void cinfo_cb(void *arg, int status, const char *msg, const jr_consumer_info *info)
{
    cinfo *k = arg;
    (void)msg;
    k->done = 1;
    k->status = status;
    if (!info || !info->cluster) return;
    for (size_t i = 0; i < info->cluster->nreplicas; i++) {
        const jr_peer_info *p = info->cluster->replicas[i];
        if (strcmp(p->name, k->name) != 0) continue;
        k->found = 1;
        k->current = p->current;
        k->offline = p->offline;
        k->fsm_failed = p->fsm_failed;
        k->fsm_rebuilding = p->fsm_rebuilding;
    }
    jr_consumer_info_format(info, 0, k->text, sizeof k->text);
}

static int ci_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((cinfo *)arg)->done;
}

static void consumer_info(e2e *c, unsigned i, const char *name, cinfo *k)
{
    memset(k, 0, sizeof *k);
    k->name = name;
    ck_assert_int_eq(jr_consumer_info_get(e2e_node(c, i), "ORDERS", CONSUMER, cinfo_cb, k), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, ci_done, k, 10 * SEC), 0);
    ck_assert_int_eq(k->status, 0);
}

static void consumer_check(e2e *c, unsigned i, chk *k)
{
    memset(k, 0, sizeof *k);
    ck_assert_int_eq(jr_consumer_check(e2e_node(c, i), "ORDERS", CONSUMER, NULL, check_cb, k), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, k_done, k, 10 * SEC), 0);
}

typedef struct cres {
    int done, status;
} cres;

static void cadd_cb(void *arg, int status, const char *msg, const char *name)
{
    (void)msg;
    (void)name;
    ((cres *)arg)->done = 1;
    ((cres *)arg)->status = status;
}

static int cr_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((cres *)arg)->done;
}

/* Every node's consumer replica has a leader, and it is the same one: its index, else -1. */
static int consumer_ready(e2e *c)
{
    int l = e2e_consumer_leader(c, 0, "ORDERS", CONSUMER);
    for (unsigned i = 1; i < 3 && l >= 0; i++)
        if (e2e_consumer_leader(c, i, "ORDERS", CONSUMER) != l) l = -1;
    return l;
}

/* A consumer follower's state machine fails (as an entry it cannot apply or a snapshot that does
 * not restore would make it): within a heartbeat the consumer's leader shows it in
 * jr_group_peer, the consumer's info (not current, "state machine failed") and the consumer
 * check; the replica is rebuilt (its group closed and reopened, consumer_replica.c) and the
 * leader's view clears, the replica never shown offline meanwhile. */
START_TEST(a_consumer_followers_failed_state_shows_on_its_leader_until_it_is_rebuilt)
{
    e2e c;
    unsigned sf, so;
    unsigned sl = setup(&c, 91 + (uint64_t)_i, &sf, &so);
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.durable_name = CONSUMER;
    cres cr = {0, 0};
    ck_assert_int_eq(jr_consumer_create(e2e_node(&c, sl), "ORDERS", &cc, cadd_cb, &cr), 0);
    ck_assert_int_eq(jr_sim_run_until(c.sim, cr_done, &cr, 30 * SEC), 0);
    ck_assert_int_eq(cr.status, 0);
    int cl = -1;
    for (int n = 0; n < 100 && cl < 0; n++) {
        jr_sim_run_for(c.sim, 100 * MS);
        cl = consumer_ready(&c);
    }
    ck_assert_int_ge(cl, 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    unsigned l = (unsigned)cl, f = (l + 1) % 3;
    const char *fname = jr_sim_name(c.sim, f);
    jr_peer_status ps;
    ck_assert_int_eq(cleader_peer(&c, l, fname, &ps), 0);
    ck_assert_int_eq(ps.fsm_failed, 0);
    ck_assert_int_eq(ps.current, 1);

    jr__crep *r = crep(&c, f);
    ck_assert_ptr_nonnull(r);
    jr__crep_failed(r, JR_ENOMEM, "an entry (test)", 0);
    /* held failed while the leader's views are looked at: the rebuild waits an election
     * timeout from failed_at */
    r->failed_at = jr_sim_now(c.sim) + 10 * SEC;
    watch w = {&c, l, f, 1};
    ck_assert_msg(jr_sim_run_until(c.sim, cleader_shows, &w, HEARTBEAT) == 0,
                  "the consumer leader does not show %s's failed state machine within a heartbeat",
                  fname);
    ck_assert_int_eq(cleader_peer(&c, l, fname, &ps), 0);
    ck_assert_int_eq(ps.fsm_failed, 1);
    ck_assert_int_eq(ps.fsm_rebuilding, 0);
    ck_assert_int_eq(ps.damaged, 0);
    ck_assert_int_eq(ps.current, 0);

    cinfo ci;
    consumer_info(&c, l, fname, &ci);
    ck_assert_int_eq(ci.found, 1);
    ck_assert_int_eq(ci.fsm_failed, 1);
    ck_assert_int_eq(ci.current, 0);
    ck_assert_msg(strstr(ci.text, "state machine failed"), "%s", ci.text);
    /* from another node too: the answer comes from the consumer's leader */
    consumer_info(&c, f, fname, &ci);
    ck_assert_int_eq(ci.fsm_failed, 1);

    chk ck;
    consumer_check(&c, l, &ck);
    ck_assert_msg(ck.fsm_failed == 1, "%s", ck.line);
    ck_assert_int_ne(ck.status, JR_CHECK_OK);
    ck_assert_msg(strstr(ck.line, "1 replicas state machine failed"), "%s", ck.line);
    ck_assert_ptr_eq(crep(&c, f), r); /* all of it while f's replica was failed */
    ck_assert_int_ne(r->failed, 0);

    /* the rebuild may run: the replica is created again (whole) and the leader's view clears;
     * meanwhile the leader never shows it offline */
    r->failed_at = jr_sim_now(c.sim);
    w.failed = 0;
    uint64_t end = jr_sim_now(c.sim) + 5 * SEC;
    while (!cleader_shows(&w, c.sim)) {
        if (cleader_peer(&c, l, fname, &ps) == 0)
            ck_assert_msg(ps.last_seen_ns <= 2 * ELECTION, "%s shown offline (seen %llu)", fname,
                          (unsigned long long)ps.last_seen_ns);
        ck_assert_msg(jr_sim_now(c.sim) < end, "the consumer leader still shows %s failed", fname);
        ck_assert_int_eq(jr_sim_step(c.sim), 1);
    }
    jr__crep *nr = crep(&c, f);
    ck_assert_ptr_nonnull(nr);
    ck_assert_int_eq(nr->failed, 0);
    /* current again, and the check is OK */
    int ok = 0;
    for (int n = 0; n < 50 && !ok; n++) {
        consumer_check(&c, l, &ck);
        ok = ck.status == JR_CHECK_OK;
        if (!ok) jr_sim_run_for(c.sim, 100 * MS);
    }
    ck_assert_msg(ok, "%s", ck.line);
    consumer_info(&c, l, fname, &ci);
    ck_assert_int_eq(ci.fsm_failed, 0);
    ck_assert_int_eq(ci.current, 1);
    ck_assert_msg(!strstr(ci.text, "state machine"), "%s", ci.text);
    e2e_free(&c);
}
END_TEST

/* A frame from `from` to `to` holding one FSM extension with payload p (len bytes). */
static void hand_frame(e2e *c, unsigned from, unsigned to, const uint8_t *p, size_t len, jr__buf *b)
{
    jr_node *n = e2e_node(c, to);
    jr__id fid = jr__peer_get_id(jr__peer_find_name(n, jr_sim_name(c->sim, from)));
    jr__id tid = jr__peer_get_id(jr__peer_find_name(n, jr_sim_name(c->sim, to)));
    jr__frame_begin(b, fid, tid);
    jr__frame_add_ext(b, JR__EXT_FSM, 0, p, len);
    ck_assert_int_eq(jr__frame_end(b), 0);
}

/* One item's payload: version, count 1, the group's gap from 0, term, state. */
static size_t item_payload(uint8_t version, uint64_t group, uint64_t term, uint8_t state,
                           uint8_t *out)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, 1, 2);
    jr__fsm_item it = {group, term ? term : 1, state};
    jr__frame_add_fsm(&b, &it, 1);
    ck_assert_int_eq(b.err, 0);
    /* past the header, the type, the flags and the one-byte length */
    size_t len = b.len - JR__FRAME_HEADER - 3;
    memcpy(out, b.data + JR__FRAME_HEADER + 3, len);
    jr__buf_free(&b);
    out[0] = version;
    if (term == 0) out[len - 2] = 0; /* a term of 0, which no sender writes */
    return len;
}

START_TEST(the_leader_takes_only_a_wellformed_report_of_its_term_and_for_a_while)
{
    e2e c;
    unsigned f, o, l = setup(&c, 90 + (uint64_t)_i, &f, &o);
    (void)o;
    const char *fname = jr_sim_name(c.sim, f);
    jr_node *ln = e2e_node(&c, l);
    jr__srep *lr = rep(&c, l);
    ck_assert_ptr_nonnull(lr);
    uint64_t group = lr->group, term = jr__raft_term(jr__group_consensus(lr->g));
    jr_node_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
    ck_assert_int_eq(jr_node_stats_get(ln, &s0), 0);
    jr__buf b;
    jr__buf_init(&b, NULL);
    uint8_t p[64];
    jr_peer_status ps;

    /* a later version's report: skipped and counted as an unknown type, the frame taken */
    size_t len = item_payload(2, group, term, JR__FSM_FAILED, p);
    hand_frame(&c, f, l, p, len, &b);
    ck_assert_int_eq(jr_node_recv(ln, fname, b.data, b.len), 0);
    ck_assert_int_eq(jr_node_stats_get(ln, &s1), 0);
    ck_assert_uint_eq(s1.msgs_unknown_type, s0.msgs_unknown_type + 1);
    ck_assert_int_eq(leader_peer(&c, l, fname, &ps), 0);
    ck_assert_int_eq(ps.fsm_failed, 0);

    /* a malformed one (term 0), and one of another term: nothing */
    len = item_payload(1, group, 0, JR__FSM_FAILED, p);
    hand_frame(&c, f, l, p, len, &b);
    ck_assert_int_eq(jr_node_recv(ln, fname, b.data, b.len), 0);
    len = item_payload(1, group, term + 1, JR__FSM_FAILED, p);
    hand_frame(&c, f, l, p, len, &b);
    ck_assert_int_eq(jr_node_recv(ln, fname, b.data, b.len), 0);
    ck_assert_int_eq(leader_peer(&c, l, fname, &ps), 0);
    ck_assert_int_eq(ps.fsm_failed, 0);
    ck_assert_int_eq(ps.current, 1);

    /* what a follower whose snapshot restore failed sends: shown at once, rebuilding apart */
    len = item_payload(1, group, term, JR__FSM_FAILED, p);
    hand_frame(&c, f, l, p, len, &b);
    ck_assert_int_eq(jr_node_recv(ln, fname, b.data, b.len), 0);
    ck_assert_int_eq(leader_peer(&c, l, fname, &ps), 0);
    ck_assert_int_eq(ps.fsm_failed, 1);
    ck_assert_int_eq(ps.fsm_rebuilding, 0);
    ck_assert_int_eq(ps.current, 0);
    len = item_payload(1, group, term, JR__FSM_REBUILDING, p);
    hand_frame(&c, f, l, p, len, &b);
    ck_assert_int_eq(jr_node_recv(ln, fname, b.data, b.len), 0);
    ck_assert_int_eq(leader_peer(&c, l, fname, &ps), 0);
    ck_assert_int_eq(ps.fsm_failed, 1);
    ck_assert_int_eq(ps.fsm_rebuilding, 1);

    /* not renewed (f's state machine is whole: its server says nothing), the word expires */
    jr_sim_run_for(c.sim, ELECTION + HEARTBEAT);
    ck_assert_int_eq(leader_peer(&c, l, fname, &ps), 0);
    ck_assert_int_eq(ps.fsm_failed, 0);
    ck_assert_int_eq(ps.fsm_rebuilding, 0);
    jr__buf_free(&b);
    e2e_free(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fsm_report");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, a_followers_failed_store_shows_on_the_leader_until_it_is_rebuilt, 0, 3);
    tcase_add_loop_test(
        tc, a_consumer_followers_failed_state_shows_on_its_leader_until_it_is_rebuilt, 0, 3);
    tcase_add_loop_test(tc, the_leader_takes_only_a_wellformed_report_of_its_term_and_for_a_while,
                        0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
