/*
 * Evacuating a replica and cancelling a peer change (jr_stream_evacuate,
 * jr_consumer_evacuate, jr_stream_cancel_move), end to end over the simulated cluster, with a
 * publisher and a pull consumer running throughout, through the public API only:
 *
 *   - evacuating a peer (here the stream's leader) of an R3 stream on five servers: stream info
 *     shows the move (target, origin, a typed status) while it runs; it converges with the
 * evacuated server gone from the replicas and its files; every acknowledged publish is stored, no
 * confirmed ack is redelivered;
 *   - evacuating an R1 stream keeps its messages (its group grows to two and shrinks back);
 *   - evacuating with nowhere to go: JR_EPEERREMAP "peer remap failed", nothing moves;
 *   - cancelling a move: the peer set returns to its origin and the server the move added
 *     deletes its files once the group no longer counts it;
 *   - the replacement obeys the placement tags; cancelling a grow;
 *   - evacuating a consumer's replica; a consumer's move cut off, shown and cancelled;
 *   - the meta leader and the stream leader killed mid-move: the move completes;
 *   - bad input; the formatter's migration section.
 *
 * JR_E2E_LOG=1 prints the nodes' log lines; JR_SEED_OFFSET=n runs every test on other seeds;
 * JR_MOVES_SHOW=1 prints the first stream info that showed the leader's evacuation.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "node/node.h"
#include "vfs/memfs.h"

static const char *subj[] = {"orders.>"};

/* The outcome of an admin call. */
typedef struct ares {
    int done, status;
    char msg[512];
} ares;

static void admin_cb(void *arg, int status, const char *msg)
{
    ares *r = arg;
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "");
}

static int ares_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((ares *)arg)->done;
}

static int wait_admin(e2e *c, ares *r)
{
    ck_assert_int_eq(jr_sim_run_until(c->sim, ares_done, r, 60 * SEC), 0);
    return r->status;
}

/* Stream or consumer info as the leader reported it, with its move. */
typedef struct minfo {
    int done, status;
    char msg[256];
    char leader[32];
    size_t nreps;
    struct {
        char name[32];
        int current, observer, pending, offline;
        uint64_t lag;
    } reps[8];
    int moving;
    int mstatus;
    char desc[128], err[128];
    char target[8][32], origin[8][32];
    size_t ntarget, norigin;
    uint64_t msgs, last_seq;
    int replicas;
    char text[4096];
} minfo;

static void take_cluster(minfo *r, const jr_cluster_info *ci)
{
    snprintf(r->leader, sizeof r->leader, "%s", ci->leader ? ci->leader : "");
    r->nreps = ci->nreplicas < 8 ? ci->nreplicas : 8;
    for (size_t i = 0; i < r->nreps; i++) {
        const jr_peer_info *p = ci->replicas[i];
        snprintf(r->reps[i].name, sizeof r->reps[i].name, "%s", p->name);
        r->reps[i].current = p->current;
        r->reps[i].observer = p->observer;
        r->reps[i].pending = p->pending;
        r->reps[i].offline = p->offline;
        r->reps[i].lag = p->lag;
    }
    const jr_move_info *m = ci->move;
    r->moving = m != NULL;
    if (!m) return;
    r->mstatus = m->status;
    snprintf(r->desc, sizeof r->desc, "%s", m->description ? m->description : "");
    snprintf(r->err, sizeof r->err, "%s", m->error ? m->error : "");
    r->ntarget = m->ntarget < 8 ? m->ntarget : 8;
    for (size_t i = 0; i < r->ntarget; i++)
        snprintf(r->target[i], sizeof r->target[i], "%s", m->target[i]);
    r->norigin = m->norigin < 8 ? m->norigin : 8;
    for (size_t i = 0; i < r->norigin; i++)
        snprintf(r->origin[i], sizeof r->origin[i], "%s", m->origin[i]);
}

static void info_cb(void *arg, int status, const char *msg, const jr_stream_info *in)
{
    minfo *r = arg;
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "");
    if (status != 0) return;
    take_cluster(r, in->cluster);
    r->msgs = in->state->msgs;
    r->last_seq = in->state->last_seq;
    r->replicas = in->config->replicas;
    jr_stream_info_format(in, r->text, sizeof r->text);
}

static void cinfo_cb(void *arg, int status, const char *msg, const jr_consumer_info *in)
{
    minfo *r = arg;
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "");
    if (status != 0) return;
    take_cluster(r, in->cluster);
}

static int minfo_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((minfo *)arg)->done;
}

static unsigned live_node(e2e *c)
{
    for (unsigned i = 0; i < c->n; i++)
        if (jr_sim_node(c->sim, i)) return i;
    return 0;
}

static int sinfo(e2e *c, const char *name, minfo *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_stream_info_get(e2e_node(c, live_node(c)), name, info_cb, r), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, minfo_done, r, 60 * SEC), 0);
    return r->status;
}

static int cinfo(e2e *c, const char *stream, const char *name, minfo *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_consumer_info_get(e2e_node(c, live_node(c)), stream, name, cinfo_cb, r), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, minfo_done, r, 60 * SEC), 0);
    return r->status;
}

/* 1 if name is among the info's leader and replicas. */
static int holds(const minfo *r, const char *name)
{
    if (strcmp(r->leader, name) == 0) return 1;
    for (size_t i = 0; i < r->nreps; i++)
        if (strcmp(r->reps[i].name, name) == 0) return 1;
    return 0;
}

/* 1 if the info shows a stable group of n members: a leader, n - 1 current voters, no move. */
static int stable(const minfo *r, size_t n)
{
    if (r->status != 0 || !r->leader[0] || r->moving || r->nreps != n - 1) return 0;
    for (size_t i = 0; i < r->nreps; i++)
        if (!r->reps[i].current || r->reps[i].observer || r->reps[i].pending) return 0;
    return 1;
}

/* A publisher and a pull consumer that run while the test changes the cluster ---------------*/

#define MAXP 4000

typedef struct work {
    e2e *c;
    const char *stream, *consumer;
    int issued, n;
    struct {
        int done, status;
        uint64_t seq;
    } pub[MAXP];
    /* consumer side */
    int fetching;
    uint64_t confirmed[MAXP]; /* stream seqs whose ack was confirmed */
    size_t nconfirmed;
    uint64_t redelivered_after_confirm;
    uint64_t received;
    int stopped;
    int failed; /* publishes that ended with an error (work_finish) */
} work;

typedef struct pubctx {
    work *w;
    int i;
} pubctx;

static pubctx g_ctx[MAXP];

static void pub_cb(void *arg, int status, const jr_pub_ack *ack)
{
    pubctx *p = arg;
    work *w = p->w;
    w->pub[p->i].done = 1;
    w->pub[p->i].status = status;
    if (status == 0) w->pub[p->i].seq = ack->seq;
}

static int confirmed(const work *w, uint64_t seq)
{
    for (size_t i = 0; i < w->nconfirmed; i++)
        if (w->confirmed[i] == seq) return 1;
    return 0;
}

typedef struct ackctx {
    work *w;
    uint64_t seq;
} ackctx;

static void ack_cb(void *arg, int status, const char *msg)
{
    (void)msg;
    ackctx *a = arg;
    if (status == 0 && a->w->nconfirmed < MAXP) a->w->confirmed[a->w->nconfirmed++] = a->seq;
    free(a);
}

static void fetch_cb(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                     const jr_fetch_end *end)
{
    (void)msg;
    (void)end;
    work *w = arg;
    if (m) {
        w->received++;
        if (confirmed(w, m->stream_seq)) w->redelivered_after_confirm++;
        jr_node *n = jr_sim_node(w->c->sim, live_node(w->c));
        ackctx *a = malloc(sizeof *a);
        ck_assert_ptr_nonnull(a);
        a->w = w;
        a->seq = m->stream_seq;
        if (jr_consumer_ack(n, m->ack_token, JR_ACK_ACK, 0, NULL, ack_cb, a) != 0) free(a);
        return;
    }
    if (status == 0 && !end) return; /* idle heartbeat */
    w->fetching = 0;
}

static void consumer_added(void *arg, int status, const char *msg, const char *name)
{
    (void)name;
    admin_cb(arg, status, msg);
}

/* Keeps a fetch outstanding and publishes at most `per_ms` messages per simulated ms while the
 * simulation runs for ns. */
static void pump(work *w, uint64_t ns)
{
    e2e *c = w->c;
    uint64_t end = jr_sim_now(c->sim) + ns;
    while (jr_sim_now(c->sim) < end) {
        if (!w->stopped && w->issued < w->n) {
            int i = w->issued;
            jr_node *n = NULL; /* through the servers in turn, skipping those down */
            for (unsigned k = 0; k < c->n && !n; k++)
                n = jr_sim_node(c->sim, ((unsigned)i + k) % c->n);
            if (n) {
                g_ctx[i].w = w;
                g_ctx[i].i = i;
                if (e2e_publish_order(n, i, pub_cb, &g_ctx[i]) == 0) w->issued++;
            }
        }
        if (w->consumer && !w->fetching) {
            jr_node *n = jr_sim_node(c->sim, live_node(c));
            jr_fetch_opts o;
            jr_fetch_opts_init(&o);
            o.batch = 20;
            o.expires_ns = 200 * MS;
            if (n && jr_consumer_fetch(n, w->stream, w->consumer, &o, fetch_cb, w) == 0)
                w->fetching = 1;
        }
        jr_sim_run_for(c->sim, 2 * MS);
    }
}

static void work_start(work *w, e2e *c, const char *stream, const char *consumer, int n)
{
    memset(w, 0, sizeof *w);
    w->c = c;
    w->stream = stream;
    w->consumer = consumer;
    w->n = n < MAXP ? n : MAXP;
    if (consumer) {
        jr_consumer_config cc;
        jr_consumer_config_init(&cc);
        cc.durable_name = consumer;
        cc.ack_policy = JR_ACK_EXPLICIT;
        cc.ack_wait_ns = 30 * SEC; /* no redelivery from slow acks: only from losses */
        ares r = {0};
        ck_assert_int_eq(
            jr_consumer_add(e2e_node(c, live_node(c)), stream, &cc, consumer_added, &r), 0);
        ck_assert_int_eq(jr_sim_run_until(c->sim, ares_done, &r, 60 * SEC), 0);
        ck_assert_msg(r.status == 0, "consumer add: %s", r.msg);
    }
}

static int all_published(void *arg, jr_sim *sim)
{
    (void)sim;
    work *w = arg;
    for (int i = 0; i < w->issued; i++)
        if (!w->pub[i].done) return 0;
    return 1;
}

/* Stops publishing, waits for every publish's answer, then checks that every acknowledged one
 * is stored under its seq (read linearizably at the leader) and that no message whose ack was
 * confirmed was delivered again. Returns the number acknowledged (w->failed: the others). */
static int work_finish(work *w)
{
    e2e *c = w->c;
    w->stopped = 1;
    ck_assert_int_eq(jr_sim_run_until(c->sim, all_published, w, 60 * SEC), 0);
    pump(w, 500 * MS); /* the consumer drains some more */
    int acked = 0;
    w->failed = 0;
    for (int i = 0; i < w->issued; i++) {
        if (w->pub[i].status != 0) {
            w->failed++;
            continue;
        }
        acked++;
        char want[64];
        snprintf(want, sizeof want, "order %d", i);
        e2e_res r;
        ck_assert_msg(e2e_msg_get(c, live_node(c), w->stream, w->pub[i].seq, &r) == 0,
                      "acked publish %d (seq %llu) is gone: %s", i,
                      (unsigned long long)w->pub[i].seq, r.msg);
        ck_assert_str_eq(r.data, want);
    }
    ck_assert_msg(w->redelivered_after_confirm == 0, "%llu confirmed acks redelivered",
                  (unsigned long long)w->redelivered_after_confirm);
    return acked;
}

/* The meta group as node i sees it (jr_meta_info_get). */
typedef struct meta_view {
    int done, status;
    char leader[32];
    size_t nservers;
} meta_view;

static void meta_cb(void *arg, int status, const char *msg, const jr_meta_info *info)
{
    (void)msg;
    meta_view *v = arg;
    v->done = 1;
    v->status = status;
    if (info && info->leader) snprintf(v->leader, sizeof v->leader, "%s", info->leader);
    if (info) v->nservers = info->nservers;
}

static int meta_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((meta_view *)arg)->done;
}

/* The meta leader's index as node i's meta info says (-1: none). */
static int meta_leader_of(e2e *c, unsigned i, size_t *nservers)
{
    meta_view v;
    memset(&v, 0, sizeof v);
    jr_node *n = jr_sim_node(c->sim, i);
    if (!n || jr_meta_info_get(n, meta_cb, &v) != 0) return -1;
    ck_assert_int_eq(jr_sim_run_until(c->sim, meta_done, &v, 60 * SEC), 0);
    if (nservers) *nservers = v.nservers;
    return v.status == 0 && v.leader[0] ? jr_sim_index(c->sim, v.leader) : -1;
}

/* Runs until every live server knows a meta leader that knows all n servers. */
static void wait_meta(e2e *c, size_t n)
{
    uint64_t end = jr_sim_now(c->sim) + 30 * SEC;
    for (;;) {
        int ok = 1;
        for (unsigned i = 0; i < c->n && ok; i++) {
            if (!jr_sim_node(c->sim, i)) continue;
            size_t ns = 0;
            ok = meta_leader_of(c, i, &ns) >= 0 && ns == n;
        }
        if (ok) return;
        ck_assert_msg(jr_sim_now(c->sim) < end, "no meta leader with %zu servers", n);
        jr_sim_run_for(c->sim, 50 * MS);
    }
}

static void cluster(e2e *c, unsigned n, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    const char *off = getenv("JR_SEED_OFFSET"); /* replay or explore other seeds */
    if (off) seed += strtoull(off, NULL, 0);
    ck_assert_msg(e2e_new(c, n, seed, 3000) == 0, "seed %llu", (unsigned long long)seed);
    wait_meta(c, n);
}

static void add_stream(e2e *c, const char *name, int replicas)
{
    jr_stream_config cfg;
    e2e_config(&cfg, name, subj, 1, replicas);
    e2e_res r;
    ck_assert_msg(e2e_add(c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(c, 0, name, (size_t)replicas - 1, 30 * SEC), 0);
}

static int g_saw_pending; /* an info showing a move had a "(pending)" marker */

/* Polls stream info every 20 ms until it shows a stable group of n members without server
 * `gone` (NULL: any; a leader whose meta state has not applied a change yet still shows the
 * old group as stable), while the work goes on; returns 1, or 0 after max_ns. *during gets
 * the first info that showed the move. */
static int wait_stable(work *w, e2e *c, const char *name, const char *gone, size_t n,
                       uint64_t max_ns, minfo *out, minfo *during)
{
    uint64_t end = jr_sim_now(c->sim) + max_ns;
    while (jr_sim_now(c->sim) < end) {
        minfo r;
        if (sinfo(c, name, &r) == 0) {
            if (r.moving && during && !during->moving) *during = r;
            if (r.moving && strstr(r.text, "(pending)")) g_saw_pending = 1;
            if (stable(&r, n) && !(gone && holds(&r, gone))) {
                *out = r;
                return 1;
            }
            *out = r;
        }
        if (w)
            pump(w, 20 * MS);
        else
            jr_sim_run_for(c->sim, 20 * MS);
    }
    return 0;
}

/* Counts node i's files whose path contains `part`. */
typedef struct fcount {
    const char *part;
    int n;
} fcount;

static int count_file(void *arg, const char *path, uint64_t size)
{
    (void)size;
    fcount *f = arg;
    if (strstr(path, f->part)) f->n++;
    return 0;
}

static int files_of(e2e *c, unsigned i, const char *part)
{
    fcount f = {part, 0};
    ck_assert_int_eq(jr_sim_files(c->sim, i, count_file, &f), 0);
    return f.n;
}

static int in_names(char names[][32], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return 1;
    return 0;
}

/* A stream check's Nagios line. */
typedef struct check_out {
    int done, status;
    char line[1024];
} check_out;

static void check_cb(void *arg, int status, const char *msg, const jr_check_result *res)
{
    check_out *o = arg;
    o->done = 1;
    o->status = status;
    if (res)
        jr_stream_check_format(res, o->line, sizeof o->line);
    else
        snprintf(o->line, sizeof o->line, "%s", msg ? msg : "");
}

static int check_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((check_out *)arg)->done;
}

/* A cluster of n servers (seed) with ORDERS at `replicas`, and the workload (publisher and
 * consumer NEW, msgs publishes) pumped for warm. */
static void start(e2e *c, work *w, unsigned n, uint64_t seed, int replicas, int msgs, uint64_t warm)
{
    cluster(c, n, seed);
    add_stream(c, "ORDERS", replicas);
    work_start(w, c, "ORDERS", "NEW", msgs);
    pump(w, warm);
}

/* Adds durable consumer name (num_replicas replicas, 0: the stream's) on ORDERS via n0 and
 * waits for it to be created. */
static void add_consumer(e2e *c, const char *name, int replicas)
{
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.durable_name = name;
    cc.num_replicas = replicas;
    ares r = {0};
    ck_assert_int_eq(jr_consumer_add(e2e_node(c, 0), "ORDERS", &cc, consumer_added, &r), 0);
    ck_assert_int_eq(wait_admin(c, &r), 0);
}

/* Finishes the workload: more than min publishes acknowledged, and none failed (none of the
 * servers went down). */
static void finish_none_failed(work *w, int min)
{
    ck_assert_int_gt(work_finish(w), min);
    ck_assert_msg(w->failed == 0, "%d publishes failed", w->failed);
}

/* Pumps the workload in steps of `step` until the admin call r, taken (rc 0), answers. */
static void pump_until_answered(work *w, int rc, ares *r, uint64_t step)
{
    ck_assert_int_eq(rc, 0);
    while (!r->done) pump(w, step);
}

/* Evacuates peer from ORDERS via node via with the workload going (steps of `step`); the
 * evacuation must be accepted. */
static void evacuate(work *w, unsigned via, const char *peer, uint64_t step)
{
    ares ev = {0};
    pump_until_answered(w, jr_stream_evacuate(e2e_node(w->c, via), "ORDERS", peer, admin_cb, &ev),
                        &ev, step);
    ck_assert_msg(ev.status == 0, "evacuate: %s %s", jr_err_name(ev.status), ev.msg);
}

/* Cancels the move of ORDERS via node via with the workload going; it must succeed. */
static void cancel_move(work *w, unsigned via)
{
    ares cancel = {0};
    pump_until_answered(w, jr_stream_cancel_move(e2e_node(w->c, via), "ORDERS", admin_cb, &cancel),
                        &cancel, 2 * MS);
    ck_assert_msg(cancel.status == 0, "cancel: %s %s", jr_err_name(cancel.status), cancel.msg);
}

/* Waits (up to 5 s, in 1 ms steps) until node t holds files of ORDERS, checks it does, then
 * cuts it off from the others. */
static void cut_off_once_it_holds_files(e2e *c, int t)
{
    uint64_t until = jr_sim_now(c->sim) + 5 * SEC;
    while (files_of(c, (unsigned)t, "ORDERS") == 0 && jr_sim_now(c->sim) < until)
        jr_sim_run_for(c->sim, 1 * MS);
    ck_assert_int_gt(files_of(c, (unsigned)t, "ORDERS"), 0);
    unsigned side[1] = {(unsigned)t};
    ck_assert_int_eq(jr_sim_partition(c->sim, side, 1), 0);
}

/* Limits every link into the servers not named in keep[0..n) to bytes_per_sec (0: the perfect
 * link again, for every server). */
static void slow_links_into(e2e *c, const char *const *keep, size_t n, uint64_t bytes_per_sec)
{
    jr_sim_link l;
    jr_sim_link_init(&l);
    l.bytes_per_sec = bytes_per_sec;
    for (unsigned to = 0; to < c->n; to++) {
        int kept = 0;
        for (size_t k = 0; k < n; k++) kept |= strcmp(keep[k], jr_sim_name(c->sim, to)) == 0;
        if (kept && bytes_per_sec) continue;
        for (unsigned from = 0; from < c->n; from++)
            if (from != to) ck_assert_int_eq(jr_sim_set_link(c->sim, from, to, &l), 0);
    }
}

/* The node index of the one server in m's move target that is not among origin[0..n-1]. */
static int added_target(e2e *c, const minfo *m, char origin[][32], size_t n)
{
    int t = -1;
    for (size_t i = 0; i < m->ntarget; i++)
        if (!in_names(origin, n, m->target[i])) t = jr_sim_index(c->sim, m->target[i]);
    ck_assert_int_ge(t, 0);
    return t;
}

/* Heals the cut to node t; within 2 s of workload t has deleted its ORDERS files; then the
 * workload finishes with more than 100 publishes acknowledged. */
static void heal_and_finish(work *w, int t)
{
    jr_sim_heal(w->c->sim);
    pump(w, 2 * SEC);
    ck_assert_int_eq(files_of(w->c, (unsigned)t, "ORDERS"), 0);
    ck_assert_int_gt(work_finish(w), 100);
}

/* Waits for ORDERS to be back on three replicas without the cut-off node t. */
static void wait_back_without(work *w, int t, minfo *end)
{
    e2e *c = w->c;
    ck_assert_msg(
        wait_stable(w, c, "ORDERS", jr_sim_name(c->sim, (unsigned)t), 3, 20 * SEC, end, NULL),
        "not back: leader '%s' %zu replicas moving %d: %s", end->leader, end->nreps, end->moving,
        end->desc);
}

/* Five servers (seed), ORDERS R3, the publisher (600 publishes) and an R1 consumer ONE that the
 * workload fetches from, pumped for 500 ms; ci and si are its consumer and stream info. */
static void start_with_r1_consumer(e2e *c, work *w, uint64_t seed, minfo *ci, minfo *si)
{
    cluster(c, 5, seed);
    add_stream(c, "ORDERS", 3);
    work_start(w, c, "ORDERS", NULL, 600);
    add_consumer(c, "ONE", 1);
    w->consumer = "ONE";
    pump(w, 500 * MS);
    ck_assert_int_eq(cinfo(c, "ORDERS", "ONE", ci), 0);
    ck_assert_int_eq(sinfo(c, "ORDERS", si), 0);
}

/* Evacuates peer from consumer ONE via node via with the workload going (steps of `step`)
 * until it answers (in *ev). */
static void evacuate_one(work *w, unsigned via, const char *peer, ares *ev, uint64_t step)
{
    memset(ev, 0, sizeof *ev);
    pump_until_answered(
        w, jr_consumer_evacuate(e2e_node(w->c, via), "ORDERS", "ONE", peer, admin_cb, ev), ev,
        step);
}

/* Tests ---------------------------------------------------------------------------------------*/

START_TEST(evacuating_the_leader_of_an_r3_stream_moves_it_and_loses_nothing)
{
    e2e c;
    static work w;
    start(&c, &w, 5, 7001, 3, 1500, 300 * MS);
    minfo before;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &before), 0);
    char gone[32];
    snprintf(gone, sizeof gone, "%s", before.leader);
    ck_assert(gone[0]);
    int gi = jr_sim_index(c.sim, gone);
    ck_assert_int_gt(files_of(&c, (unsigned)gi, "ORDERS"), 0);
    evacuate(&w, 1, gone, 2 * MS);
    minfo end, during;
    memset(&during, 0, sizeof during);
    g_saw_pending = 0;
    ck_assert_msg(wait_stable(&w, &c, "ORDERS", gone, 3, 20 * SEC, &end, &during),
                  "not converged: leader '%s', %zu replicas, moving %d: %s", end.leader, end.nreps,
                  end.moving, end.desc);
    /* the move was visible: target without the evacuated peer, origin with it, a status */
    ck_assert_msg(during.moving, "stream info never showed the move");
    if (getenv("JR_MOVES_SHOW")) fprintf(stderr, "%s", during.text);
    ck_assert_uint_eq(during.ntarget, 3);
    ck_assert_uint_eq(during.norigin, 3);
    ck_assert(!in_names(during.target, during.ntarget, gone));
    ck_assert(in_names(during.origin, during.norigin, gone));
    ck_assert_int_ge(during.mstatus, JR_MOVE_META);
    ck_assert_int_le(during.mstatus, JR_MOVE_UNAVAILABLE);
    ck_assert(during.desc[0]);
    ck_assert_ptr_nonnull(strstr(during.text, "Migration"));
    (void)g_saw_pending; /* the leaving peer is the leader here: the cancel test checks it */
    /* converged: the evacuated server is gone, the replica count stays */
    ck_assert(!holds(&end, gone));
    ck_assert_int_eq(end.replicas, 3);
    ck_assert_ptr_null(strstr(end.text, "Migration"));
    pump(&w, 500 * MS);
    finish_none_failed(&w, 100);
    ck_assert_uint_gt(w.nconfirmed, 50);
    jr_sim_run_for(c.sim, 1 * SEC);
    ck_assert_int_eq(files_of(&c, (unsigned)gi, "ORDERS"), 0);
    e2e_free(&c);
}
END_TEST

static void preload_cb(void *arg, int status, const jr_pub_ack *ack)
{
    (void)ack;
    ck_assert_int_eq(status, 0);
    (*(int *)arg)++;
}

static int preloaded(void *arg, jr_sim *sim)
{
    (void)sim;
    return *(int *)arg == 2000;
}

/* What the leader reports of member `name` of ORDERS as a sample: 1 if it is a member. */
static int peer_sample(e2e *c, int leader, const char *name, jr_peer_status *out)
{
    jr_group *g = leader >= 0 ? e2e_group(c, (unsigned)leader, "ORDERS") : NULL;
    jr_group_status gs;
    gs.size = sizeof gs;
    if (!g || jr_group_status_get(g, &gs) != 0 || gs.role != JR_LEADER) return 0;
    for (size_t i = 0; i < gs.npeers; i++) {
        out->size = sizeof *out;
        if (jr_group_peer(g, i, out) == 0 && out->name && strcmp(out->name, name) == 0) return 1;
    }
    return 0;
}

/* A follower of ORDERS evacuated while publishes go on, with snapshots every 50 entries so the
 * replacement is filled from a snapshot and the copy of the stream's messages, its log
 * catching up meanwhile. Every 2 ms the leader's view of each member is sampled, and every
 * 20 ms stream info: the joiner is never shown damaged or unvouched (it did not restart and
 * lost nothing; answers overtaken in the network are no loss), no member is, and while its
 * server is up the move never waits for it "to come online", nor is it shown offline. */
START_TEST(a_joining_replica_is_reported_as_catching_up_never_damaged)
{
    e2e c;
    static work w;
    cluster(&c, 5, 7101);
    for (unsigned i = 0; i < 5; i++) e2e_snapshot_every(&c, i, 50);
    /* 10 MB/s links and 2,000 messages of 2 KB first, so that the copy takes a while */
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.bytes_per_sec = 10 * 1000 * 1000;
    for (unsigned a = 0; a < 5; a++)
        for (unsigned b = 0; b < 5; b++)
            if (a != b) ck_assert_int_eq(jr_sim_set_link(c.sim, a, b, &link), 0);
    add_stream(&c, "ORDERS", 3);
    static char body[2000];
    uint64_t x = 88172645463325252ull;
    static int preload_done;
    preload_done = 0;
    for (int k = 0; k < 2000; k++) {
        for (size_t i = 0; i < sizeof body; i++) { /* letters that do not compress to nothing */
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            body[i] = (char)('a' + x % 26);
        }
        ck_assert_int_eq(jr_publish(e2e_node(&c, (unsigned)k % 5), "orders.big", NULL, 0, body,
                                    sizeof body, NULL, preload_cb, &preload_done),
                         0);
        if (k % 50 == 49) jr_sim_run_for(c.sim, 20 * MS);
    }
    ck_assert_int_eq(jr_sim_run_until(c.sim, preloaded, &preload_done, 30 * SEC), 0);
    work_start(&w, &c, "ORDERS", NULL, 2500);
    pump(&w, 1 * SEC);
    minfo before;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &before), 0);
    ck_assert_uint_eq(before.nreps, 2);
    char gone[32], origin[3][32];
    snprintf(gone, sizeof gone, "%s", before.reps[0].name);
    snprintf(origin[0], sizeof origin[0], "%s", before.leader);
    snprintf(origin[1], sizeof origin[1], "%s", before.reps[0].name);
    snprintf(origin[2], sizeof origin[2], "%s", before.reps[1].name);
    evacuate(&w, 0, gone, 2 * MS);
    char joiner[32] = "";
    uint64_t joiner_samples = 0, joiner_behind = 0, joiner_shown_behind = 0, infos = 0,
             moving_infos = 0;
    minfo in = {0};
    int asked = 0;
    uint64_t end = jr_sim_now(c.sim) + 20 * SEC;
    for (int k = 0; jr_sim_now(c.sim) < end; k++) {
        pump(&w, 2 * MS);
        int leader = e2e_replica_leader(&c, (unsigned)jr_sim_index(c.sim, before.leader), "ORDERS");
        for (unsigned i = 0; i < 5; i++) {
            jr_peer_status ps;
            const char *name = jr_sim_name(c.sim, i);
            if (!peer_sample(&c, leader, name, &ps)) continue;
            ck_assert_msg(!ps.damaged && !ps.unvouched, "%.3f s: %s shown %s%s by leader %s",
                          (double)jr_sim_now(c.sim) / 1e9, name, ps.damaged ? "damaged " : "",
                          ps.unvouched ? "unvouched" : "", jr_sim_name(c.sim, (unsigned)leader));
            if (!joiner[0] && !in_names(origin, 3, name))
                snprintf(joiner, sizeof joiner, "%s", name);
            if (joiner[0] && strcmp(name, joiner) == 0) {
                joiner_samples++;
                if (ps.lag > 0) joiner_behind++;
            }
        }
        /* stream info, asked without waiting for it: checked when it came */
        if (!asked && k % 10 == 0) {
            memset(&in, 0, sizeof in);
            ck_assert_int_eq(jr_stream_info_get(e2e_node(&c, 1), "ORDERS", info_cb, &in), 0);
            asked = 1;
        }
        if (asked && in.done) {
            asked = 0;
            if (in.status != 0) continue;
            infos++;
            for (size_t i = 0; i < in.nreps; i++)
                ck_assert_msg(!in.reps[i].offline, "%s shown offline:\n%s", in.reps[i].name,
                              in.text);
            ck_assert_msg(!strstr(in.text, "damaged") && !strstr(in.text, "unvouched"), "%s",
                          in.text);
            for (size_t i = 0; joiner[0] && i < in.nreps; i++)
                if (strcmp(in.reps[i].name, joiner) == 0 && (in.reps[i].lag || !in.reps[i].current))
                    joiner_shown_behind++;
            if (in.moving) {
                moving_infos++;
                ck_assert_msg(!strstr(in.desc, "come online"), "%s", in.text);
            }
            if (!in.moving && !holds(&in, gone) && stable(&in, 3)) break;
        }
    }
    ck_assert_msg(joiner[0], "no replacement joined");
    ck_assert_msg(stable(&in, 3) && !holds(&in, gone), "not converged: %s", in.text);
    /* the samples saw the joiner while it caught up (its log behind, or, once its log caught up
     * by a snapshot, stream info showing its store's copy), and infos while the move ran */
    ck_assert_uint_gt(joiner_samples, 10);
    ck_assert_msg(joiner_behind + joiner_shown_behind > 0,
                  "the joiner was never seen behind (%llu samples, %llu infos)",
                  (unsigned long long)joiner_samples, (unsigned long long)infos);
    ck_assert_uint_gt(moving_infos, 1);
    ck_assert_uint_gt(infos, moving_infos);
    finish_none_failed(&w, 100);
    e2e_free(&c);
}
END_TEST

typedef struct hres {
    int done, status;
    size_t ngroups;
    char text[8][128];
    int damaged[8], unvouched[8];
} hres;

static void health_cb(void *arg, int status, const char *msg, const jr_node_health_info *h)
{
    (void)msg;
    hres *r = arg;
    r->done = 1;
    r->status = status;
    if (!h) return;
    r->ngroups = h->ngroups < 8 ? h->ngroups : 8;
    for (size_t i = 0; i < r->ngroups; i++) {
        snprintf(r->text[i], sizeof r->text[i], "%s", h->groups[i]->text);
        r->damaged[i] = h->groups[i]->damaged;
        r->unvouched[i] = h->groups[i]->unvouched;
    }
}

static int hres_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((hres *)arg)->done;
}

static void node_health(e2e *c, unsigned i, hres *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(jr_node_health(e2e_node(c, i), health_cb, r), 0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, hres_done, r, 10 * SEC), 0);
}

/* A server evacuated from ORDERS (and its R3 consumer), with snapshots every 20 entries, is
 * restarted once the move converged: sampled every millisecond, it never opens a replica of what
 * it left, and its health never lists an unwell group (a released replica is not reopened as a
 * damaged joiner). */
START_TEST(an_evacuated_server_restarted_holds_nothing_of_what_it_left)
{
    e2e c;
    static work w;
    cluster(&c, 5, 7102);
    for (unsigned i = 0; i < 5; i++) e2e_snapshot_every(&c, i, 20);
    add_stream(&c, "ORDERS", 3);
    work_start(&w, &c, "ORDERS", "NEW", 1200);
    pump(&w, 500 * MS);
    minfo before;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &before), 0);
    char gone[32];
    snprintf(gone, sizeof gone, "%s", before.reps[0].name);
    int gi = jr_sim_index(c.sim, gone);
    evacuate(&w, 0, gone, 2 * MS);
    minfo end;
    ck_assert(wait_stable(&w, &c, "ORDERS", gone, 3, 20 * SEC, &end, NULL));
    pump(&w, 500 * MS);
    ck_assert_int_eq(files_of(&c, (unsigned)gi, "ORDERS"), 0);
    ck_assert_int_eq(e2e_has_replica(&c, (unsigned)gi, "ORDERS"), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)gi), 0);
    pump(&w, 200 * MS);
    ck_assert_int_eq(e2e_restart(&c, (unsigned)gi), 0);
    for (int k = 0; k < 300; k++) {
        ck_assert_msg(!e2e_has_replica(&c, (unsigned)gi, "ORDERS"),
                      "%d ms after its restart %s opened a replica of ORDERS", k, gone);
        hres h;
        node_health(&c, (unsigned)gi, &h);
        ck_assert_msg(h.ngroups == 0, "%d ms after its restart %s lists '%s'%s%s", k, gone,
                      h.text[0], h.damaged[0] ? " damaged" : "",
                      h.unvouched[0] ? " unvouched" : "");
        pump(&w, 1 * MS);
    }
    ck_assert_int_gt(work_finish(&w), 100); /* publishes through the crashed server may fail */
    e2e_free(&c);
}
END_TEST

/* A server evacuated from ORDERS keeps what its replica knew (its configuration, answered to a
 * VOUCH for the group: lib/node/released.c) across a restart, and forgets it once the stream is
 * deleted, though it no longer held a replica when the deletion applied; a restart does not
 * bring it back. */
START_TEST(an_evacuated_server_keeps_what_its_replica_knew_until_the_stream_is_deleted)
{
    e2e c;
    static work w;
    cluster(&c, 5, 7103);
    add_stream(&c, "ORDERS", 3);
    work_start(&w, &c, "ORDERS", NULL, 300);
    pump(&w, 300 * MS);
    minfo before;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &before), 0);
    char gone[32];
    snprintf(gone, sizeof gone, "%s", before.reps[0].name);
    unsigned gi = (unsigned)jr_sim_index(c.sim, gone);
    uint64_t group = e2e_group(&c, gi, "ORDERS")->id;
    evacuate(&w, 0, gone, 2 * MS);
    minfo end;
    ck_assert(wait_stable(&w, &c, "ORDERS", gone, 3, 20 * SEC, &end, NULL));
    pump(&w, 500 * MS);
    ck_assert_int_gt(work_finish(&w), 100);
    ck_assert_int_eq(e2e_has_replica(&c, gi, "ORDERS"), 0);
    const jr__released *r = jr__map_get(&e2e_node(&c, gi)->released, group);
    ck_assert_ptr_nonnull(r);
    uint64_t conf_index = r->conf_index;
    jr__conf conf;
    ck_assert_int_eq(jr__conf_decode(&conf, r->conf, r->conf_len), 0);
    ck_assert_uint_ge(conf.n, 3);
    /* restarted: still known */
    ck_assert_int_eq(jr_sim_crash(c.sim, gi), 0);
    jr_sim_run_for(c.sim, 200 * MS);
    ck_assert_int_eq(e2e_restart(&c, gi), 0);
    jr_sim_run_for(c.sim, 500 * MS);
    r = jr__map_get(&e2e_node(&c, gi)->released, group);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->conf_index, conf_index);
    /* deleted: forgotten, also after a restart */
    e2e_res d;
    ck_assert_int_eq(e2e_delete(&c, gi == 0 ? 1 : 0, "ORDERS", &d), 0);
    ck_assert_msg(d.status == 0, "delete: %s", d.msg);
    jr_sim_run_for(c.sim, 1 * SEC);
    ck_assert_ptr_null(jr__map_get(&e2e_node(&c, gi)->released, group));
    ck_assert_int_eq(jr_sim_crash(c.sim, gi), 0);
    jr_sim_run_for(c.sim, 200 * MS);
    ck_assert_int_eq(e2e_restart(&c, gi), 0);
    jr_sim_run_for(c.sim, 1 * SEC);
    ck_assert_ptr_null(jr__map_get(&e2e_node(&c, gi)->released, group));
    /* a forget a crash kept off the disk (the record put back and written, as a crash before
     * the flush after the forget leaves it) is made again after the restart: the meta state has
     * no such group */
    jr_node *n = e2e_node(&c, gi);
    jr__released *back = malloc(sizeof *back + 1);
    back->commit = 1;
    back->conf_index = 1;
    back->conf_len = 1;
    back->conf[0] = 0; /* no member */
    ck_assert_int_eq(jr__map_put(&n->released, group, back), 0);
    n->released_dirty = 1;
    jr_sim_run_for(c.sim, 200 * MS); /* its next flush writes the file */
    ck_assert_int_eq(n->released_dirty, 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, gi), 0);
    jr_sim_run_for(c.sim, 200 * MS);
    ck_assert_int_eq(e2e_restart(&c, gi), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    ck_assert_ptr_null(jr__map_get(&e2e_node(&c, gi)->released, group));
    ck_assert_uint_eq(e2e_node(&c, gi)->released.len, 0);
    e2e_free(&c);
}
END_TEST

/* A server evacuated from ORDERS whose released record cannot be written (its file's writes
 * fail, so the group's WAL DROP waits for it) crashes: at its restart the meta state, replayed
 * from its own log, already has the move converged, so the group's records come back as a
 * stash that no assignment places there, and the convergence releases it at once. That release
 * keeps what the replica knew, read from the stash's records and snapshot file
 * (lib/node/released.c): its configuration, a commit index at most the one it had, on disk
 * across a further restart. Before, such a stash was released without a record and a VOUCH for
 * the group was answered "nothing". */
START_TEST(a_stash_released_after_a_restart_keeps_what_its_replica_knew)
{
    e2e c;
    static work w;
    cluster(&c, 5, 7104);
    for (unsigned i = 0; i < 5; i++) e2e_snapshot_every(&c, i, 20);
    add_stream(&c, "ORDERS", 3);
    work_start(&w, &c, "ORDERS", NULL, 600);
    pump(&w, 300 * MS);
    minfo before;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &before), 0);
    char gone[32];
    snprintf(gone, sizeof gone, "%s", before.reps[0].name);
    unsigned gi = (unsigned)jr_sim_index(c.sim, gone);
    uint64_t group = e2e_group(&c, gi, "ORDERS")->id;
    char released[256];
    snprintf(released, sizeof released, "%s/released", e2e_node(&c, gi)->wal_dir);
    jr_vfs *disk = jr_sim_vfs(c.sim, gi);
    ck_assert_int_eq(jr__memfs_fail(disk, JR__MEMFS_ANY, 1, JR_EIO, 1, released), 0);
    evacuate(&w, 0, gone, 2 * MS);
    minfo end;
    ck_assert(wait_stable(&w, &c, "ORDERS", gone, 3, 20 * SEC, &end, NULL));
    pump(&w, 500 * MS);
    ck_assert_int_gt(work_finish(&w), 100);
    jr_node *n = e2e_node(&c, gi);
    ck_assert_int_eq(e2e_has_replica(&c, gi, "ORDERS"), 0);
    ck_assert_int_eq(jr__node_group_retiring(n, group), 1); /* its DROP waits for the record */
    const jr__released *r = jr__map_get(&n->released, group);
    ck_assert_ptr_nonnull(r);
    jr__released had = *r;
    jr__conf had_conf;
    ck_assert_int_eq(jr__conf_decode(&had_conf, r->conf, r->conf_len), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, gi), 0);
    jr__memfs_fail_clear(disk);
    jr_sim_run_for(c.sim, 200 * MS);
    ck_assert_int_eq(e2e_restart(&c, gi), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    ck_assert_int_eq(e2e_has_replica(&c, gi, "ORDERS"), 0);
    ck_assert_int_eq(jr__node_group_known(e2e_node(&c, gi), group), 0); /* released */
    for (int restarts = 0; restarts < 2; restarts++) {
        r = jr__map_get(&e2e_node(&c, gi)->released, group);
        ck_assert_msg(r != NULL, "restart %d: %s keeps nothing of its replica", restarts, gone);
        ck_assert_uint_gt(r->commit, 0);
        ck_assert_uint_le(r->commit, had.commit);
        /* the same configuration; its entry's index, or a later snapshot's that covers it */
        ck_assert_uint_ge(r->conf_index, had.conf_index);
        jr__conf conf;
        ck_assert_int_eq(jr__conf_decode(&conf, r->conf, r->conf_len), 0);
        ck_assert_uint_eq(conf.n, had_conf.n);
        for (unsigned i = 0; i < had_conf.n; i++)
            ck_assert_ptr_nonnull(jr__conf_find(&conf, had_conf.m[i].id));
        ck_assert_int_eq(e2e_node(&c, gi)->released_dirty, 0); /* on disk */
        ck_assert_int_eq(jr_sim_crash(c.sim, gi), 0);
        jr_sim_run_for(c.sim, 200 * MS);
        ck_assert_int_eq(e2e_restart(&c, gi), 0);
        jr_sim_run_for(c.sim, 1 * SEC);
    }
    e2e_free(&c);
}
END_TEST

START_TEST(evacuating_an_r1_stream_keeps_its_data)
{
    e2e c;
    static work w;
    start(&c, &w, 4, 7002, 1, 400, 1 * SEC);
    minfo before;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &before), 0);
    ck_assert_uint_eq(before.nreps, 0);
    char gone[32];
    snprintf(gone, sizeof gone, "%s", before.leader);
    evacuate(&w, 0, gone, 2 * MS);
    minfo end;
    ck_assert_msg(wait_stable(&w, &c, "ORDERS", gone, 1, 20 * SEC, &end, NULL),
                  "not converged: leader '%s' moving %d: %s", end.leader, end.moving, end.desc);
    ck_assert_str_ne(end.leader, gone);
    int acked = work_finish(&w);
    ck_assert_msg(w.failed == 0, "%d publishes failed", w.failed); /* none went down */
    ck_assert_int_gt(acked, 100);
    minfo fin;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &fin), 0);
    ck_assert_uint_eq(fin.msgs, (uint64_t)acked);
    jr_sim_run_for(c.sim, 1 * SEC);
    ck_assert_int_eq(files_of(&c, (unsigned)jr_sim_index(c.sim, gone), "ORDERS"), 0);
    e2e_free(&c);
}
END_TEST

START_TEST(evacuating_with_nowhere_to_go_is_peer_remap_failed)
{
    e2e c;
    static work w;
    start(&c, &w, 3, 7003, 3, 200, 300 * MS);
    minfo before, after;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &before), 0);
    ares ev = {0};
    pump_until_answered(&w, jr_stream_evacuate(e2e_node(&c, 2), "ORDERS", "n1", admin_cb, &ev), &ev,
                        2 * MS);
    ck_assert_int_eq(ev.status, JR_EPEERREMAP);
    ck_assert_ptr_nonnull(strstr(ev.msg, "peer remap failed"));
    pump(&w, 300 * MS);
    ck_assert_int_eq(sinfo(&c, "ORDERS", &after), 0);
    ck_assert(!after.moving);
    for (unsigned i = 0; i < 3; i++) ck_assert(holds(&after, jr_sim_name(c.sim, i)));
    finish_none_failed(&w, 50);
    e2e_free(&c);
}
END_TEST

/* The replacement obeys the stream's placement: with tag "ssd" required, the one free server
 * without it does not qualify (JR_EPEERREMAP, nothing moves); once a fifth server carrying it
 * exists, the replica goes there. */
START_TEST(the_replacement_obeys_the_placement_tags)
{
    e2e c;
    memset(&c, 0, sizeof c);
    for (unsigned i = 0; i < 5; i++) {
        c.tags[i][0] = i < 3 || i == 4 ? "ssd" : "hdd";
        c.ntags[i] = 1;
    }
    const char *off = getenv("JR_SEED_OFFSET");
    ck_assert_int_eq(e2e_new(&c, 5, 7008 + (off ? strtoull(off, NULL, 0) : 0), 3000), 0);
    wait_meta(&c, 5);
    /* n4 (ssd) is down: only n3 (hdd) is free */
    ck_assert_int_eq(jr_sim_crash(c.sim, 4), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    static const char *ssd[] = {"ssd"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 3);
    cfg.placement = e2e_placement(NULL, ssd, 1);
    e2e_res er;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &er) == 0, "add: %s", er.msg);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "ORDERS", 2, 30 * SEC), 0);
    minfo before;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &before), 0);
    ck_assert(!holds(&before, "n3"));
    ares a = {0};
    ck_assert_int_eq(jr_stream_evacuate(e2e_node(&c, 0), "ORDERS", "n1", admin_cb, &a), 0);
    ck_assert_int_eq(wait_admin(&c, &a), JR_EPEERREMAP);
    ck_assert_ptr_nonnull(strstr(a.msg, "peer remap failed"));
    minfo after;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &after), 0);
    ck_assert(!after.moving);
    ck_assert(holds(&after, "n1"));
    /* n4 is back: it qualifies */
    ck_assert_int_eq(e2e_restart(&c, 4), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    ares b = {0};
    ck_assert_int_eq(jr_stream_evacuate(e2e_node(&c, 0), "ORDERS", "n1", admin_cb, &b), 0);
    ck_assert_msg(wait_admin(&c, &b) == 0, "evacuate: %s", b.msg);
    minfo end;
    ck_assert_msg(wait_stable(NULL, &c, "ORDERS", "n1", 3, 20 * SEC, &end, NULL),
                  "not converged: %s", end.desc);
    ck_assert_msg(holds(&end, "n4"), "leader %s, replicas %s %s", end.leader, end.reps[0].name,
                  end.reps[1].name);
    ck_assert(!holds(&end, "n1"));
    ck_assert(!holds(&end, "n3"));
    e2e_free(&c);
}
END_TEST

START_TEST(cancelling_a_move_returns_to_the_origin_and_the_target_removes_its_files)
{
    e2e c;
    static work w;
    start(&c, &w, 5, 7004, 3, 1500, 300 * MS);
    minfo before;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &before), 0);
    char origin[3][32];
    snprintf(origin[0], 32, "%s", before.leader);
    snprintf(origin[1], 32, "%s", before.reps[0].name);
    snprintf(origin[2], 32, "%s", before.reps[1].name);
    /* evacuate a follower */
    evacuate(&w, 0, origin[1], 1 * MS);
    /* the target as the meta state has it; once it holds files of the stream, cut it off so the
     * move cannot finish */
    minfo m;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &m), 0);
    ck_assert(m.moving);
    int t = added_target(&c, &m, origin, 3);
    cut_off_once_it_holds_files(&c, t);
    pump(&w, 1 * SEC);
    /* stuck: the info says so, the leaving peer is marked, and the check reports why */
    minfo stuck;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &stuck), 0);
    ck_assert_msg(stuck.moving, "no move shown");
    ck_assert_ptr_nonnull(strstr(stuck.text, "Migration Information:"));
    ck_assert_ptr_nonnull(strstr(stuck.text, "(pending)"));
    /* waiting for the cut-off target, or for the stream's consumer that moves onto it */
    ck_assert_msg(stuck.mstatus == JR_MOVE_QUORUM || stuck.mstatus == JR_MOVE_BLOCKED,
                  "status %d: %s", stuck.mstatus, stuck.desc);
    if (stuck.mstatus == JR_MOVE_QUORUM)
        ck_assert_ptr_nonnull(strstr(stuck.desc, jr_sim_name(c.sim, (unsigned)t)));
    else
        ck_assert_str_eq(stuck.desc, "waiting for consumer 'NEW' to migrate");
    check_out chk = {0};
    ck_assert_int_eq(jr_stream_check(e2e_node(&c, t == 0 ? 1 : 0), "ORDERS", NULL, check_cb, &chk),
                     0);
    ck_assert_int_eq(jr_sim_run_until(c.sim, check_done, &chk, 10 * SEC), 0);
    ck_assert_msg(strstr(chk.line, stuck.mstatus == JR_MOVE_QUORUM
                                       ? "move stuck: quorum: waiting for peer"
                                       : "move stuck: blocked: waiting for consumer 'NEW'") != NULL,
                  "%s", chk.line);
    /* cancel: back to the origin */
    unsigned via = (unsigned)(t == 0 ? 1 : 0);
    cancel_move(&w, via);
    minfo end;
    wait_back_without(&w, t, &end);
    for (int i = 0; i < 3; i++) ck_assert_msg(holds(&end, origin[i]), "%s missing", origin[i]);
    ck_assert(!holds(&end, jr_sim_name(c.sim, (unsigned)t)));
    /* nothing more to cancel */
    ares again = {0};
    pump_until_answered(&w, jr_stream_cancel_move(e2e_node(&c, via), "ORDERS", admin_cb, &again),
                        &again, 2 * MS);
    ck_assert_int_eq(again.status, JR_ENOCHANGE);
    ck_assert_str_eq(again.msg, "stream reconfiguration not in progress");
    /* the target comes back, learns the outcome and deletes what it held */
    heal_and_finish(&w, t);
    e2e_free(&c);
}
END_TEST

/* A cancel applies to any peer change: a grow R3 -> R4 whose new peer is cut off returns to
 * R3 on the original peers, and the new peer deletes what it held once it hears of it. */
START_TEST(cancelling_a_grow_returns_to_three_replicas)
{
    e2e c;
    static work w;
    start(&c, &w, 5, 7009, 3, 1500, 300 * MS);
    minfo before;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &before), 0);
    /* the copy to whichever server the grow picks is slowed down, so that it is cut off
     * holding part of the stream whatever the schedule (at full speed the copy can finish
     * between two polls) */
    const char *was[8];
    for (size_t i = 0; i < before.nreps; i++) was[i] = before.reps[i].name;
    was[before.nreps] = before.leader;
    slow_links_into(&c, was, before.nreps + 1, 20 * 1000);
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 4);
    ares up = {0};
    pump_until_answered(&w, jr_stream_update(e2e_node(&c, 0), &cfg, admin_cb, &up), &up, 1 * MS);
    ck_assert_msg(up.status == 0, "update: %s", up.msg);
    /* the answer comes once the meta group committed the change; the stream's leader, which
     * answers the info, shows it once its own server applied it */
    minfo m;
    for (int k = 0; k < 100; k++) {
        ck_assert_int_eq(sinfo(&c, "ORDERS", &m), 0);
        if (m.moving) break;
        pump(&w, 2 * MS);
    }
    ck_assert(m.moving);
    ck_assert_uint_eq(m.ntarget, 4);
    ck_assert_uint_eq(m.norigin, 3);
    int t = added_target(&c, &m, m.origin, m.norigin);
    cut_off_once_it_holds_files(&c, t);
    slow_links_into(&c, NULL, 0, 0);
    pump(&w, 500 * MS);
    unsigned via = (unsigned)(t == 0 ? 1 : 0);
    cancel_move(&w, via);
    minfo end;
    wait_back_without(&w, t, &end);
    ck_assert_int_eq(end.replicas, 3);
    ck_assert(holds(&end, before.leader));
    for (size_t i = 0; i < before.nreps; i++) ck_assert(holds(&end, before.reps[i].name));
    heal_and_finish(&w, t);
    e2e_free(&c);
}
END_TEST

START_TEST(evacuating_a_consumer_moves_its_replica)
{
    e2e c;
    static work w;
    /* an R1 consumer: its replica sits on one of the stream's three peers */
    minfo ci, si;
    start_with_r1_consumer(&c, &w, 7005, &ci, &si);
    char gone[32];
    snprintf(gone, sizeof gone, "%s", ci.leader);
    ck_assert(gone[0]);
    ares ev;
    evacuate_one(&w, 1, gone, &ev, 2 * MS);
    ck_assert_msg(ev.status == 0, "evacuate: %s %s", jr_err_name(ev.status), ev.msg);
    uint64_t until = jr_sim_now(c.sim) + 20 * SEC;
    int saw_move = 0;
    for (;;) {
        ck_assert_msg(jr_sim_now(c.sim) < until, "consumer did not move: leader '%s' moving %d %s",
                      ci.leader, ci.moving, ci.desc);
        if (cinfo(&c, "ORDERS", "ONE", &ci) == 0) {
            saw_move |= ci.moving;
            /* every server is up: the new replica joins, it never waits to come online */
            ck_assert_msg(!ci.moving || !strstr(ci.desc, "come online"), "%s", ci.desc);
            for (size_t i = 0; i < ci.nreps; i++)
                ck_assert_msg(!ci.reps[i].offline, "%s shown offline", ci.reps[i].name);
            if (!ci.moving && ci.leader[0] && ci.nreps == 0 && strcmp(ci.leader, gone) != 0) break;
        }
        pump(&w, 20 * MS);
    }
    (void)saw_move;
    ck_assert(holds(&si, ci.leader)); /* a peer of its stream */
    /* the stream did not move */
    minfo si2;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &si2), 0);
    ck_assert(holds(&si2, gone));
    /* every stream peer holds it: nowhere else to go for an R3 consumer */
    add_consumer(&c, "THREE", 0);
    ares ev3 = {0};
    ck_assert_int_eq(
        jr_consumer_evacuate(e2e_node(&c, 1), "ORDERS", "THREE", si2.leader, admin_cb, &ev3), 0);
    ck_assert_int_eq(wait_admin(&c, &ev3), JR_EPEERREMAP);
    pump(&w, 500 * MS);
    ck_assert_int_gt(w.received, 50);
    finish_none_failed(&w, 100);
    e2e_free(&c);
}
END_TEST

/* A consumer's move that cannot finish (its new peer is cut off) shows in consumer info with
 * its target, origin and status, and cancelling it keeps the consumer where it was. */
START_TEST(cancelling_a_consumer_move_keeps_it_where_it_was)
{
    e2e c;
    static work w;
    minfo ci, si;
    start_with_r1_consumer(&c, &w, 7010, &ci, &si);
    char home[32];
    snprintf(home, sizeof home, "%s", ci.leader);
    ares ev;
    evacuate_one(&w, 0, home, &ev, 1 * MS);
    ck_assert_msg(ev.status == 0, "evacuate: %s", ev.msg);
    /* the target: the stream peer other than home that the consumer info names */
    ck_assert_int_eq(cinfo(&c, "ORDERS", "ONE", &ci), 0);
    ck_assert_msg(ci.moving, "consumer info shows no move");
    ck_assert_uint_eq(ci.ntarget, 1);
    ck_assert_uint_eq(ci.norigin, 1);
    ck_assert_str_eq(ci.origin[0], home);
    int t = jr_sim_index(c.sim, ci.target[0]);
    ck_assert_int_ge(t, 0);
    ck_assert_str_ne(ci.target[0], home);
    ck_assert(holds(&si, ci.target[0]));
    unsigned side[1] = {(unsigned)t};
    ck_assert_int_eq(jr_sim_partition(c.sim, side, 1), 0);
    pump(&w, 1 * SEC);
    /* if the cut came before the new peer voted, the consumer still serves from home and shows
     * the move; once it votes, a group of two with one cut off has no leader (as an R1 stream
     * being evacuated: the move's window) */
    minfo stuck;
    if (cinfo(&c, "ORDERS", "ONE", &stuck) == 0) {
        ck_assert_msg(stuck.moving, "consumer info shows no move");
        ck_assert(stuck.mstatus >= JR_MOVE_META && stuck.mstatus <= JR_MOVE_UNAVAILABLE);
        ck_assert(stuck.desc[0]);
        ck_assert_str_eq(stuck.origin[0], home);
    }
    ares cancel = {0};
    pump_until_answered(
        &w,
        jr_consumer_cancel_move(e2e_node(&c, t == 0 ? 1 : 0), "ORDERS", "ONE", admin_cb, &cancel),
        &cancel, 2 * MS);
    ck_assert_msg(cancel.status == 0, "cancel: %s %s", jr_err_name(cancel.status), cancel.msg);
    jr_sim_heal(c.sim);
    uint64_t until = jr_sim_now(c.sim) + 20 * SEC;
    for (;;) {
        ck_assert_msg(jr_sim_now(c.sim) < until, "not back: leader '%s' moving %d %s", ci.leader,
                      ci.moving, ci.desc);
        if (cinfo(&c, "ORDERS", "ONE", &ci) == 0 && !ci.moving && ci.nreps == 0 &&
            strcmp(ci.leader, home) == 0)
            break;
        pump(&w, 20 * MS);
    }
    pump(&w, 1 * SEC);
    ck_assert_int_gt(w.received, 20);
    ck_assert_int_gt(work_finish(&w), 100);
    e2e_free(&c);
}
END_TEST

START_TEST(meta_and_stream_leaders_killed_mid_move_the_move_completes)
{
    e2e c;
    static work w;
    start(&c, &w, 5, 7006, 3, 1500, 300 * MS);
    minfo before;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &before), 0);
    /* evacuate a follower; kill the stream leader and the meta leader right after */
    char gone[32], leader[32];
    snprintf(gone, sizeof gone, "%s", before.reps[0].name);
    snprintf(leader, sizeof leader, "%s", before.leader);
    int ml = meta_leader_of(&c, live_node(&c), NULL);
    ck_assert_int_ge(ml, 0);
    unsigned via = 0;
    while (via == (unsigned)ml || via == (unsigned)jr_sim_index(c.sim, leader)) via++;
    evacuate(&w, via, gone, 1 * MS);
    pump(&w, 5 * MS);
    int sl = jr_sim_index(c.sim, leader);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)sl), 0);
    if (ml != sl) ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)ml), 0);
    pump(&w, 2 * SEC);
    ck_assert_int_eq(e2e_restart(&c, (unsigned)sl), 0);
    if (ml != sl) ck_assert_int_eq(e2e_restart(&c, (unsigned)ml), 0);
    minfo end;
    ck_assert_msg(wait_stable(&w, &c, "ORDERS", gone, 3, 30 * SEC, &end, NULL),
                  "not converged: leader '%s', %zu replicas, moving %d: %s", end.leader, end.nreps,
                  end.moving, end.desc);
    ck_assert(!holds(&end, gone));
    ck_assert(holds(&end, leader)); /* the killed leader stays a peer */
    ck_assert(holds(&end, before.reps[1].name));
    ck_assert_int_gt(work_finish(&w), 100);
    jr_sim_run_for(c.sim, 1 * SEC);
    ck_assert_int_eq(files_of(&c, (unsigned)jr_sim_index(c.sim, gone), "ORDERS"), 0);
    e2e_free(&c);
}
END_TEST

static int call_status(e2e *c, int rc, ares *r)
{
    ck_assert_int_eq(rc, 0);
    return wait_admin(c, r);
}

START_TEST(bad_input_is_refused_and_nothing_moves)
{
    e2e c;
    cluster(&c, 4, 7007);
    add_stream(&c, "ORDERS", 3);
    add_consumer(&c, "NEW", 0);
    ares r = {0};
    jr_node *n = e2e_node(&c, 0);
    /* NULL arguments */
    ck_assert_int_eq(jr_stream_evacuate(NULL, "ORDERS", "n1", admin_cb, &r), JR_EINVAL);
    ck_assert_int_eq(jr_stream_evacuate(n, NULL, "n1", admin_cb, &r), JR_EINVAL);
    ck_assert_int_eq(jr_stream_evacuate(n, "ORDERS", NULL, admin_cb, &r), JR_EINVAL);
    ck_assert_int_eq(jr_stream_evacuate(n, "ORDERS", "n1", NULL, &r), JR_EINVAL);
    ck_assert_int_eq(jr_stream_cancel_move(n, NULL, admin_cb, &r), JR_EINVAL);
    ck_assert_int_eq(jr_consumer_evacuate(n, "ORDERS", NULL, "n1", admin_cb, &r), JR_EINVAL);
    ck_assert_int_eq(jr_consumer_cancel_move(n, "ORDERS", NULL, admin_cb, &r), JR_EINVAL);
    /* unknown stream, consumer, peer; a server that is not a peer */
    minfo si;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &si), 0);
    const char *outsider = NULL;
    for (unsigned i = 0; i < 4; i++)
        if (!holds(&si, jr_sim_name(c.sim, i))) outsider = jr_sim_name(c.sim, i);
    ck_assert_ptr_nonnull(outsider);
    ares a[12];
    memset(a, 0, sizeof a);
    ck_assert_int_eq(call_status(&c, jr_stream_evacuate(n, "NOPE", "n1", admin_cb, &a[0]), &a[0]),
                     JR_ENOTFOUND);
    ck_assert_int_eq(
        call_status(&c, jr_stream_evacuate(n, "ORDERS", "nobody", admin_cb, &a[1]), &a[1]),
        JR_ENOTMEMBER);
    ck_assert_str_eq(a[1].msg, "peer not a member");
    ck_assert_int_eq(
        call_status(&c, jr_stream_evacuate(n, "ORDERS", outsider, admin_cb, &a[2]), &a[2]),
        JR_ENOTMEMBER);
    ck_assert_int_eq(
        call_status(&c, jr_stream_evacuate(n, "ORDERS", "bad name", admin_cb, &a[3]), &a[3]),
        JR_ENOTMEMBER);
    ck_assert_int_eq(call_status(&c, jr_stream_cancel_move(n, "NOPE", admin_cb, &a[4]), &a[4]),
                     JR_ENOTFOUND);
    ck_assert_int_eq(call_status(&c, jr_stream_cancel_move(n, "ORDERS", admin_cb, &a[5]), &a[5]),
                     JR_ENOCHANGE);
    ck_assert_str_eq(a[5].msg, "stream reconfiguration not in progress");
    ck_assert_int_eq(
        call_status(&c, jr_consumer_evacuate(n, "NOPE", "NEW", "n1", admin_cb, &a[6]), &a[6]),
        JR_ENOSTREAM);
    ck_assert_int_eq(
        call_status(&c, jr_consumer_evacuate(n, "ORDERS", "NOPE", "n1", admin_cb, &a[7]), &a[7]),
        JR_ENOTFOUND);
    ck_assert_int_eq(
        call_status(&c, jr_consumer_evacuate(n, "ORDERS", "NEW", outsider, admin_cb, &a[8]), &a[8]),
        JR_ENOTMEMBER);
    ck_assert_int_eq(
        call_status(&c, jr_consumer_cancel_move(n, "ORDERS", "NEW", admin_cb, &a[9]), &a[9]),
        JR_ENOCHANGE);
    /* nothing moved */
    minfo after;
    ck_assert_int_eq(sinfo(&c, "ORDERS", &after), 0);
    ck_assert(!after.moving);
    ck_assert(stable(&after, 3));
    ck_assert(!holds(&after, outsider));
    /* a second evacuation while the first runs: JR_EBUSY */
    ares first = {0}, second = {0};
    ck_assert_int_eq(jr_stream_evacuate(n, "ORDERS", after.reps[0].name, admin_cb, &first), 0);
    ck_assert_int_eq(wait_admin(&c, &first), 0);
    ck_assert_int_eq(
        call_status(&c, jr_stream_evacuate(n, "ORDERS", after.leader, admin_cb, &second), &second),
        JR_EBUSY);
    ck_assert_ptr_nonnull(strstr(second.msg, "cluster member change is in progress"));
    e2e_free(&c);
}
END_TEST

START_TEST(the_formatter_prints_the_migration_section_and_pending_markers)
{
    jr_peer_info p[3];
    const jr_peer_info *pp[3];
    const char *names[3] = {"n2-east", "n4-east", "n5-east"};
    for (int i = 0; i < 3; i++) {
        memset(&p[i], 0, sizeof p[i]);
        p[i].size = sizeof p[i];
        p[i].name = names[i];
        p[i].current = 1;
        p[i].active_ns = 10 * MS;
        pp[i] = &p[i];
    }
    p[1].pending = 1; /* on its way out */
    p[2].current = 0;
    p[2].observer = 1;
    p[2].pending = 1; /* joining */
    p[2].lag = 14231;
    const char *target[3] = {"n1-east", "n2-east", "n5-east"};
    const char *origin[3] = {"n1-east", "n2-east", "n4-east"};
    jr_move_info m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    m.target = target;
    m.ntarget = 3;
    m.origin = origin;
    m.norigin = 3;
    m.status = JR_MOVE_CATCHUP;
    m.description = "waiting for peers to catch up (n5-east is 14231 operations behind)";
    jr_cluster_info ci;
    memset(&ci, 0, sizeof ci);
    ci.size = sizeof ci;
    ci.name = "east";
    ci.group = "S-R3F-xK2p9aLm";
    ci.leader = "n1-east";
    ci.replicas = pp;
    ci.nreplicas = 3;
    ci.move = &m;
    jr_stream_info in;
    memset(&in, 0, sizeof in);
    in.size = sizeof in;
    in.cluster = &ci;
    char buf[2048];
    int n = jr_stream_info_format(&in, buf, sizeof buf);
    ck_assert_int_gt(n, 0);
    ck_assert_int_lt(n, (int)sizeof buf);
    const char *want = "Cluster Information:\n"
                       "\n"
                       "                 Name: east\n"
                       "        Cluster Group: S-R3F-xK2p9aLm\n"
                       "               Leader: n1-east\n"
                       "              Replica: n2-east, current, seen 0.01s ago\n"
                       "              Replica: n4-east (pending), current, seen 0.01s ago\n"
                       "              Replica: n5-east (pending), outdated, observer, seen 0.01s "
                       "ago, 14,231 operations behind\n"
                       "\n"
                       "Migration Information:\n"
                       "\n"
                       "               Status: catchup\n"
                       "          Description: waiting for peers to catch up (n5-east is 14231 "
                       "operations behind)\n"
                       "         Target Peers: n1-east, n2-east, n5-east\n"
                       "         Origin Peers: n1-east, n2-east, n4-east\n"
                       "\n";
    ck_assert_str_eq(buf, want);
    /* a persistent error gets its own line; a stable group prints no section */
    m.status = JR_MOVE_UNAVAILABLE;
    m.description = "peer n9 is not a server this node knows";
    m.error = "unknown server n9";
    n = jr_stream_info_format(&in, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "               Status: unavailable\n"));
    ck_assert_ptr_nonnull(strstr(buf, "                Error: unknown server n9\n"));
    ci.move = NULL;
    n = jr_stream_info_format(&in, buf, sizeof buf);
    ck_assert_ptr_null(strstr(buf, "Migration"));
    /* an older caller's cluster block (without `move`) formats as before */
    ci.size = offsetof(jr_cluster_info, move);
    ci.move = &m;
    jr_stream_info_format(&in, buf, sizeof buf);
    ck_assert_ptr_null(strstr(buf, "Migration"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_moves");
    TCase *tc = tcase_create("moves");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, the_formatter_prints_the_migration_section_and_pending_markers);
    tcase_add_test(tc, bad_input_is_refused_and_nothing_moves);
    tcase_add_test(tc, evacuating_with_nowhere_to_go_is_peer_remap_failed);
    tcase_add_test(tc, the_replacement_obeys_the_placement_tags);
    tcase_add_test(tc, evacuating_the_leader_of_an_r3_stream_moves_it_and_loses_nothing);
    tcase_add_test(tc, evacuating_an_r1_stream_keeps_its_data);
    tcase_add_test(tc, a_joining_replica_is_reported_as_catching_up_never_damaged);
    tcase_add_test(tc, an_evacuated_server_restarted_holds_nothing_of_what_it_left);
    tcase_add_test(tc, cancelling_a_move_returns_to_the_origin_and_the_target_removes_its_files);
    tcase_add_test(tc, cancelling_a_grow_returns_to_three_replicas);
    tcase_add_test(tc, evacuating_a_consumer_moves_its_replica);
    tcase_add_test(tc, an_evacuated_server_keeps_what_its_replica_knew_until_the_stream_is_deleted);
    tcase_add_test(tc, a_stash_released_after_a_restart_keeps_what_its_replica_knew);
    tcase_add_test(tc, cancelling_a_consumer_move_keeps_it_where_it_was);
    tcase_add_test(tc, meta_and_stream_leaders_killed_mid_move_the_move_completes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
