/*
 * admin.c — the admin process: creates the data streams and the first consumers, then, one
 * operation at a time through a random node, adds, updates and deletes churn streams and
 * consumers, changes the data streams' replica count (R3 <-> R5 on five nodes), deletes and
 * purges messages, moves stream, consumer and meta leadership (stepdowns), drains servers and
 * ends drains (jr_server_evacuate, jr_server_evacuate_cancel), and, on five servers, removes
 * one server for good (jr_server_peer_remove: at most one per run, the data streams at R3 so
 * their replicas can be re-placed on the four left, no disk victim that is not whole again, no
 * churn stream that may have two replicas; no R3 <-> R5 change after it).
 *
 * A removal that succeeded, or whose outcome is unknown, makes its server removed for the rest
 * of the run (world.removed): no client uses it and the checkers leave its copy out; the fault
 * scheduler may still crash and restart it, and it must stay removed.
 *
 * What the checkers need from it is recorded as the operations are invoked: a message delete
 * or purge that may take effect excludes its messages from "present after healing" at once,
 * and a consumer being deleted is no longer fetched from or checked for at-least-once.
 */
#include <string.h>

#include "jsim.h"

static void consumer_config(world *w, int c, jr_consumer_config *cfg, char *filter, size_t cap)
{
    consumer *cs = &w->cons[c];
    jr_consumer_config_init(cfg);
    cfg->durable_name = cs->name;
    cfg->ack_policy = JR_ACK_EXPLICIT;
    cfg->ack_wait_ns = cs->ack_wait_ns;
    cfg->max_deliver = -1;
    cfg->max_ack_pending = 1000;
    if (cs->filter >= 0) {
        snprintf(filter, cap, "d%d.%d", cs->ds, cs->filter);
        cfg->filter_subject = filter;
    }
}

/* Callbacks
 * --------------------------------------------------------------------------------------*/

static void finish(world *w, uint32_t id, int status, const char *msg)
{
    op_done(w, id, status, msg);
    history_write_op(w, id, 1);
    if (id == w->admin_op) {
        w->admin_busy = 0;
        w->admin_next_ns = now_ns(w) + (100 + rng_below(&w->r, 500)) * MS;
    }
}

static void stream_cb(void *arg, int status, const char *msg)
{
    world *w = g_w;
    uint32_t id = (uint32_t)(uintptr_t)arg;
    finish(w, id, status, msg);
    op *o = &w->ops[id];
    int out = op_outcome(o);
    for (unsigned k = 0; k < MAX_CHURN; k++) {
        churn *c = &w->cs[k];
        if (strcmp(c->name, o->stream) != 0) continue;
        c->busy = 0;
        if (o->kind == OP_STREAM_ADD)
            c->state = out == OUT_OK ? 1 : out == OUT_UNKNOWN ? 2 : c->state;
        else if (o->kind == OP_STREAM_DELETE)
            c->state = out == OUT_OK ? 0 : out == OUT_UNKNOWN ? 2 : c->state;
    }
    for (unsigned k = 0; k < w->nds; k++) {
        dstream *d = &w->ds[k];
        if (strcmp(d->name, o->stream) != 0 || o->kind != OP_STREAM_UPDATE) continue;
        d->busy_change = 0;
        if (out == OUT_OK) d->replicas = o->replicas;
    }
    if (o->kind == OP_CONSUMER_DELETE && o->cons >= 0 && w->cons[o->cons].state == 2)
        w->cons[o->cons].state = 0;
}

static void purge_cb(void *arg, int status, const char *msg, uint64_t purged)
{
    (void)purged;
    stream_cb(arg, status, msg);
}

static void meta_cb(void *arg, int status, const char *msg)
{
    stream_cb(arg, status, msg);
}

static void server_cb(void *arg, int status, const char *msg)
{
    world *w = g_w;
    uint32_t id = (uint32_t)(uintptr_t)arg;
    stream_cb(arg, status, msg);
    op *o = &w->ops[id];
    int out = op_outcome(o);
    if (o->kind == OP_SERVER_REMOVE && w->remove_target >= 0) {
        if (out == OUT_FAIL) {
            w->removal_sent = 0; /* refused (busy, no quorum): it may be tried again */
        } else {
            w->removed[w->remove_target] = 1;
            nem_note(w, "admin: n%d removed from the cluster (%s)", w->remove_target,
                     out == OUT_OK ? "ok" : "outcome unknown");
        }
        w->remove_target = -1;
    } else if (w->server_target >= 0) {
        if (o->kind == OP_SERVER_EVACUATE && out != OUT_FAIL) w->draining[w->server_target] = 1;
        if (o->kind == OP_SERVER_EVACUATE_CANCEL && out == OUT_OK)
            w->draining[w->server_target] = 0;
        w->server_target = -1;
    }
}

static void consumer_cb(void *arg, int status, const char *msg, const char *name)
{
    (void)name;
    world *w = g_w;
    uint32_t id = (uint32_t)(uintptr_t)arg;
    finish(w, id, status, msg);
    op *o = &w->ops[id];
    consumer *cs = &w->cons[o->cons];
    if (o->kind == OP_CONSUMER_ADD && cs->state == 2) {
        cs->state = op_outcome(o) == OUT_OK ? 1 : 0;
        cs->created_ns = o->complete_ns;
    }
}

/* Operations
 * -------------------------------------------------------------------------------------*/

static jr_node *admin_node(world *w, unsigned *idx)
{
    int n = pick_node(w);
    if (n < 0) return NULL;
    *idx = (unsigned)n;
    return jr_sim_node(w->sim, (unsigned)n);
}

static uint32_t start(world *w, int kind, unsigned node, const char *stream, const char *cons)
{
    uint32_t id = op_new(w, kind, -1, node, stream, cons);
    w->admin_busy = 1;
    w->admin_op = id;
    return id;
}

static void issued(world *w, uint32_t id, int rc)
{
    history_write_op(w, id, 0);
    if (rc != 0) stream_cb((void *)(uintptr_t)id, rc, jr_strerror(rc));
}

static int new_consumer(world *w, unsigned node, int ds)
{
    if (w->ncons >= MAX_CONS) return -1;
    int c = (int)w->ncons++;
    consumer *cs = &w->cons[c];
    memset(cs, 0, sizeof *cs);
    snprintf(cs->name, sizeof cs->name, "c%d", c);
    cs->ds = ds;
    cs->filter = rng_pct(&w->r, 40) ? (int)rng_below(&w->r, 4) : -1;
    cs->ack_wait_ns = (int64_t)(1000 + rng_below(&w->r, 2000)) * (int64_t)MS;
    cs->state = 2;
    jr_consumer_config cfg;
    char filter[32];
    consumer_config(w, c, &cfg, filter, sizeof filter);
    uint32_t id = start(w, OP_CONSUMER_ADD, node, w->ds[ds].name, cs->name);
    w->ops[id].cons = c;
    history_write_op(w, id, 0);
    int rc = jr_consumer_add(jr_sim_node(w->sim, node), w->ds[ds].name, &cfg, consumer_cb,
                             (void *)(uintptr_t)id);
    if (rc != 0) consumer_cb((void *)(uintptr_t)id, rc, jr_strerror(rc), NULL);
    return c;
}

static void data_config(world *w, int k, jr_stream_config *cfg, const char *const *subj)
{
    jr_stream_config_init(cfg);
    cfg->name = w->ds[k].name;
    cfg->subjects = subj;
    cfg->nsubjects = 1;
    cfg->replicas = w->ds[k].replicas;
    cfg->allow_direct = 1;
}

int admin_setup(world *w)
{
    for (unsigned k = 0; k < w->nds; k++) {
        dstream *d = &w->ds[k];
        snprintf(d->name, sizeof d->name, "D%u", k);
        snprintf(d->subject, sizeof d->subject, "d%u.*", k);
        d->replicas = w->n == 5 && rng_pct(&w->r, 40) ? 5 : 3;
        if (w->disk_victims == 2) d->replicas = 5; /* two damaged of three is a majority */
        const char *subj[] = {d->subject};
        jr_stream_config cfg;
        data_config(w, (int)k, &cfg, subj);
        int rc = JR_ETIMEDOUT;
        for (int attempt = 0; attempt < 20 && rc != 0; attempt++) {
            uint32_t id = start(w, OP_STREAM_ADD, 0, d->name, NULL);
            w->ops[id].replicas = d->replicas;
            issued(w, id,
                   jr_stream_add(jr_sim_node(w->sim, 0), &cfg, stream_cb, (void *)(uintptr_t)id));
            wait_ops(w, id, 1, 60 * SEC);
            rc = w->ops[id].done ? w->ops[id].status : JR_ETIMEDOUT;
            if (rc != 0) jr_sim_run_for(w->sim, 500 * MS);
        }
        if (rc != 0) {
            violation(w, "liveness", d->name, -1, 0, -1,
                      "the data stream could not be created in a healthy cluster: %s",
                      jr_err_name(rc));
            return rc;
        }
    }
    for (unsigned k = 0; k < MAX_CHURN; k++)
        snprintf(w->cs[k].name, sizeof w->cs[k].name, "X%u", k);
    /* one or two consumers per data stream */
    for (unsigned k = 0; k < w->nds; k++) {
        unsigned m = 1 + (unsigned)rng_below(&w->r, 2);
        for (unsigned j = 0; j < m; j++) {
            int c = new_consumer(w, 0, (int)k);
            if (c < 0) break;
            wait_ops(w, w->admin_op, 1, 60 * SEC);
            if (w->cons[c].state != 1)
                violation(w, "liveness", w->ds[k].name, -1, 0, c,
                          "consumer %s could not be created in a healthy cluster: %s",
                          w->cons[c].name, jr_err_name(w->ops[w->admin_op].status));
        }
    }
    w->admin_busy = 0;
    w->admin_next_ns = now_ns(w) + 200 * MS;
    w->remove_target = w->server_target = -1;
    return w->nviol ? JR_ETIMEDOUT : 0;
}

/* Marks the values a delete of seq, or a purge below seq (purge != 0), may remove. */
static void exclude(world *w, int ds, uint64_t seq, int purge)
{
    for (size_t v = 0; v < w->nvals; v++) {
        value *x = &w->vals[v];
        if (x->ds != ds) continue;
        /* a value not acknowledged yet may still be stored below the purge's floor */
        if (purge ? (x->ok ? x->ok_seq < seq : 1) : (x->ok && x->ok_seq == seq)) x->excluded = 1;
    }
}

static void churn_op(world *w, unsigned node)
{
    unsigned k = (unsigned)rng_below(&w->r, MAX_CHURN);
    churn *c = &w->cs[k];
    if (c->busy) return;
    jr_node *nd = jr_sim_node(w->sim, node);
    char subj[32];
    snprintf(subj, sizeof subj, "x%u.>", k);
    const char *subjs[] = {subj};
    jr_stream_config cfg;
    jr_stream_config_init(&cfg);
    cfg.name = c->name;
    cfg.subjects = subjs;
    cfg.nsubjects = 1;
    cfg.replicas = 1 + (int)rng_below(&w->r, w->n - (unsigned)w->removal_sent);
    if (w->disk_victims == 2) cfg.replicas = cfg.replicas <= 2 ? 1 : 5; /* R1 or R5 */
    cfg.max_msgs = 100;
    if (c->state == 0 || (c->state == 2 && rng_pct(&w->r, 50))) {
        if (now_ns(w) < w->quiet_groups_until) return;
        uint32_t id = start(w, OP_STREAM_ADD, node, c->name, NULL);
        w->ops[id].replicas = cfg.replicas;
        c->busy = 1;
        issued(w, id, jr_stream_add(nd, &cfg, stream_cb, (void *)(uintptr_t)id));
    } else if (rng_pct(&w->r, 50)) {
        if (now_ns(w) < w->quiet_groups_until) return;
        uint32_t id = start(w, OP_STREAM_UPDATE, node, c->name, NULL);
        w->ops[id].replicas = cfg.replicas;
        c->busy = 1;
        issued(w, id, jr_stream_update(nd, &cfg, stream_cb, (void *)(uintptr_t)id));
    } else {
        uint32_t id = start(w, OP_STREAM_DELETE, node, c->name, NULL);
        c->busy = 1;
        issued(w, id, jr_stream_delete(nd, c->name, stream_cb, (void *)(uintptr_t)id));
    }
}

static int live_consumer(world *w, int ds)
{
    int live[MAX_CONS], m = 0;
    for (unsigned c = 0; c < w->ncons; c++)
        if (w->cons[c].state == 1 && (ds < 0 || w->cons[c].ds == ds)) live[m++] = (int)c;
    return m ? live[rng_below(&w->r, (uint64_t)m)] : -1;
}

static int live_count(world *w, int ds)
{
    int m = 0;
    for (unsigned c = 0; c < w->ncons; c++) m += w->cons[c].state == 1 && w->cons[c].ds == ds;
    return m;
}

/* An acknowledged seq of data stream ds, or 0. */
static uint64_t some_acked_seq(world *w, int ds)
{
    for (int tries = 0; tries < 16 && w->nvals; tries++) {
        value *v = &w->vals[rng_below(&w->r, w->nvals)];
        if (v->ds == ds && v->ok) return v->ok_seq;
    }
    return 0;
}

/* Server operations: drain a server or end its drain (any server count), or, on five servers,
 * remove one for good. The server is drawn among those not removed, running or not. */
static void server_op(world *w, unsigned node, jr_node *nd)
{
    unsigned x = (unsigned)rng_below(&w->r, w->n);
    if (w->removed[x]) return;
    char name[16];
    snprintf(name, sizeof name, "%s", jr_sim_name(w->sim, x));
    int all_r3 = 1;
    for (unsigned k = 0; k < w->nds; k++) all_r3 &= w->ds[k].replicas == 3 && !w->ds[k].busy_change;
    if (w->n == 5 && !w->removal_sent && all_r3 && w->disk_victims == 1 && rng_pct(&w->r, 25)) {
        /* Not while the disk nemesis's victim is not whole again or a rollback is pending: a
         * server removed while down stops at once when it learns of it, its replicas lost for
         * good, and beside the victim's that makes two lost replicas of a group, which the
         * fault model (one at a time) leaves out as it does two disk victims at once. A group
         * whose only whole copy the removed server held would have none left (seed 56). */
        if (w->victim >= 0 || w->copy) return;
        uint32_t id = start(w, OP_SERVER_REMOVE, node, name, NULL);
        w->removal_sent = 1;
        w->remove_target = (int)x;
        nem_note(w, "admin: peer-remove n%u through n%u", x, node);
        history_write_op(w, id, 0);
        int rc = jr_server_peer_remove(nd, name, server_cb, (void *)(uintptr_t)id);
        if (rc != 0) server_cb((void *)(uintptr_t)id, rc, jr_strerror(rc));
        return;
    }
    int cancel = w->draining[x];
    /* no drain while a rollback copy is pending: a replica moved onto its victim meanwhile is a
     * group the copy predates (faults.c) */
    if (!cancel && now_ns(w) < w->quiet_groups_until) return;
    uint32_t id =
        start(w, cancel ? OP_SERVER_EVACUATE_CANCEL : OP_SERVER_EVACUATE, node, name, NULL);
    w->server_target = (int)x;
    history_write_op(w, id, 0);
    int rc = cancel ? jr_server_evacuate_cancel(nd, name, server_cb, (void *)(uintptr_t)id)
                    : jr_server_evacuate(nd, name, server_cb, (void *)(uintptr_t)id);
    if (rc != 0) server_cb((void *)(uintptr_t)id, rc, jr_strerror(rc));
}

void admin_step(world *w)
{
    if (w->admin_busy || now_ns(w) < w->admin_next_ns) return;
    unsigned node;
    jr_node *nd = admin_node(w, &node);
    if (!nd) return;
    int ds = (int)rng_below(&w->r, w->nds);
    dstream *d = &w->ds[ds];
    uint64_t dice = rng_below(&w->r, 100);
    w->admin_next_ns = now_ns(w) + 50 * MS; /* when nothing was started */
    if (dice < 15) {
        churn_op(w, node);
    } else if (dice < 30) {
        if (now_ns(w) >= w->quiet_groups_until) new_consumer(w, node, ds);
    } else if (dice < 38) {
        int c = live_consumer(w, ds);
        if (c < 0) return;
        consumer *cs = &w->cons[c];
        cs->ack_wait_ns = (int64_t)(1000 + rng_below(&w->r, 2000)) * (int64_t)MS;
        jr_consumer_config cfg;
        char filter[32];
        consumer_config(w, c, &cfg, filter, sizeof filter);
        cfg.max_ack_pending = 1000 + (int64_t)rng_below(&w->r, 1000);
        uint32_t id = start(w, OP_CONSUMER_UPDATE, node, d->name, cs->name);
        w->ops[id].cons = c;
        history_write_op(w, id, 0);
        int rc = jr_consumer_update(nd, d->name, &cfg, consumer_cb, (void *)(uintptr_t)id);
        if (rc != 0) consumer_cb((void *)(uintptr_t)id, rc, jr_strerror(rc), NULL);
    } else if (dice < 45) {
        if (live_count(w, ds) < 2) return;
        int c = live_consumer(w, ds);
        w->cons[c].state = 2; /* no more fetches from it; deleted whatever the outcome */
        uint32_t id = start(w, OP_CONSUMER_DELETE, node, d->name, w->cons[c].name);
        w->ops[id].cons = c;
        issued(w, id,
               jr_consumer_delete(nd, d->name, w->cons[c].name, stream_cb, (void *)(uintptr_t)id));
    } else if (dice < 53 || (w->n == 5 && dice < 60)) {
        /* replica changes (five servers: R3 <-> R5), in place of some stepdowns there */
        if (w->n < 5 || w->removal_sent || d->busy_change || now_ns(w) < w->quiet_groups_until ||
            w->disk_victims == 2)
            return;
        char subj[16];
        snprintf(subj, sizeof subj, "%s", d->subject);
        const char *subjs[] = {subj};
        jr_stream_config cfg;
        data_config(w, ds, &cfg, subjs);
        cfg.replicas = d->replicas == 3 ? 5 : 3;
        uint32_t id = start(w, OP_STREAM_UPDATE, node, d->name, NULL);
        w->ops[id].replicas = cfg.replicas;
        d->busy_change = 1;
        issued(w, id, jr_stream_update(nd, &cfg, stream_cb, (void *)(uintptr_t)id));
    } else if (dice < 65) {
        uint32_t id = start(w, OP_STREAM_STEPDOWN, node, d->name, NULL);
        issued(w, id, jr_stream_stepdown(nd, d->name, NULL, stream_cb, (void *)(uintptr_t)id));
    } else if (dice < 75) {
        int c = live_consumer(w, ds);
        if (c < 0) return;
        uint32_t id = start(w, OP_CONSUMER_STEPDOWN, node, d->name, w->cons[c].name);
        w->ops[id].cons = c;
        issued(w, id,
               jr_consumer_stepdown(nd, d->name, w->cons[c].name, NULL, stream_cb,
                                    (void *)(uintptr_t)id));
    } else if (dice < 82) {
        uint32_t id = start(w, OP_META_STEPDOWN, node, NULL, NULL);
        issued(w, id, jr_meta_stepdown(nd, NULL, meta_cb, (void *)(uintptr_t)id));
    } else if (dice < 90) {
        uint64_t seq = some_acked_seq(w, ds);
        if (!seq) return;
        exclude(w, ds, seq, 0);
        uint32_t id = start(w, OP_MSG_DELETE, node, d->name, NULL);
        w->ops[id].seq = seq;
        issued(w, id,
               jr_stream_msg_delete(nd, d->name, seq, rng_pct(&w->r, 30), stream_cb,
                                    (void *)(uintptr_t)id));
    } else if (dice < 92) {
        uint64_t seq = some_acked_seq(w, ds);
        if (!seq) return;
        seq = seq / 2 + 1; /* keep the newer half */
        exclude(w, ds, seq, 1);
        jr_purge_opts po;
        jr_purge_opts_init(&po);
        po.seq = seq;
        uint32_t id = start(w, OP_PURGE, node, d->name, NULL);
        w->ops[id].seq = seq;
        history_write_op(w, id, 0);
        int rc = jr_stream_purge(nd, d->name, &po, purge_cb, (void *)(uintptr_t)id);
        if (rc != 0) purge_cb((void *)(uintptr_t)id, rc, jr_strerror(rc), 0);
    } else if (dice < 96) {
        server_op(w, node, nd);
    }
}
