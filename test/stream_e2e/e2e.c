/* e2e — the end-to-end stream test harness (e2e.h). */
#include "e2e.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "js/js.h"
#include "node/node.h"
#include "util/checksum.h"

/* Cluster --------------------------------------------------------------------------------------*/

static e2e *g_log_owner; /* for the log sink: the simulated time */

static void host_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (!g_log_owner || !g_log_owner->log) return;
    unsigned long long t = jr_sim_now(g_log_owner->sim);
    fprintf(stderr, "[%llu.%06llu] %s %d: %s\n", t / SEC, (t % SEC) / 1000, "node", level, msg);
}

static void configure(void *arg, unsigned i, jr_node_config *cfg)
{
    e2e *c = arg;
    cfg->streams = 1;
    cfg->cluster = "east";
    cfg->request_timeout_ms = c->timeout_ms;
    cfg->store_dir = "/store";
    cfg->tags = c->tags[i];
    cfg->ntags = c->ntags[i];
    cfg->unique_tag = c->unique_tag;
    if (c->log || c->no_wall) {
        c->hosts[i] = *cfg->host;
        if (c->log) c->hosts[i].log = host_log;
        if (c->no_wall) c->hosts[i].version = 1; /* an older host: wall is not read */
        cfg->host = &c->hosts[i];
    }
    /* JR_E2E_KEY=1: every server encrypts at rest, each under its own key (the same tests
     * against the encrypted formats); a test's configure_more may still change it */
    static uint8_t keys[E2E_MAX][JR_NODE_KEY_BYTES];
    const char *k = getenv("JR_E2E_KEY");
    if (k && *k == '1' && i < E2E_MAX) {
        memset(keys[i], 0xa0 + (int)i, sizeof keys[i]);
        cfg->key = keys[i];
        cfg->key_len = JR_NODE_KEY_BYTES;
    }
    if (c->configure_more) c->configure_more(c, i, cfg);
}

int e2e_seeds(uint64_t *first, uint64_t *count)
{
    const char *s = getenv("JR_SEEDS");
    unsigned long long a = 0, b = 0;
    if (s && sscanf(s, "%llu:%llu", &a, &b) == 2) {
        *first = a;
        *count = b;
    }
    return s != NULL;
}

int e2e_run_shifted(Suite *(*make)(void), uint64_t *seed_shift)
{
    uint64_t first = 0, count = 1;
    e2e_seeds(&first, &count);
    int failed = 0;
    for (uint64_t k = 0; k < count && !failed; k++) {
        *seed_shift = first + k;
        SRunner *sr = srunner_create(make());
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        if (failed)
            fprintf(stderr, "failed with seeds shifted by %llu\n", (unsigned long long)(first + k));
        srunner_free(sr);
    }
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int e2e_new(e2e *c, unsigned n, uint64_t seed, uint32_t timeout_ms)
{
    c->n = n;
    c->timeout_ms = timeout_ms;
    const char *l = getenv("JR_E2E_LOG");
    c->log = l && *l == '1';
    g_log_owner = c;
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.nodes = n;
    cfg.seed = seed;
    cfg.arg = c;
    cfg.configure = configure;
    cfg.torn_writes = c->torn_writes;
    cfg.on_apply = c->on_apply;
    return jr_sim_new(&cfg, &c->sim);
}

void e2e_free(e2e *c)
{
    jr_sim_free(c->sim);
    c->sim = NULL;
    if (g_log_owner == c) g_log_owner = NULL;
}

jr_node *e2e_node(e2e *c, unsigned i)
{
    return jr_sim_node(c->sim, i);
}

void e2e_snapshot_every(e2e *c, unsigned i, uint64_t entries)
{
    c->snap_every[i] = entries;
    jr_node *n = e2e_node(c, i);
    if (!n || !jr__js_of(n)) return;
    jr__js_of(n)->snapshot_entries = entries;
    for (jr__srep *r = jr__js_of(n)->rep_list; r; r = r->next)
        if (r->g) r->g->snapshot_entries = entries;
    for (jr__crep *r = jr__js_of(n)->crep_list; r; r = r->next)
        if (r->g) r->g->snapshot_entries = entries;
}

int e2e_restart(e2e *c, unsigned i)
{
    int rc = jr_sim_restart(c->sim, i);
    if (rc == 0 && c->snap_every[i]) e2e_snapshot_every(c, i, c->snap_every[i]);
    return rc;
}

/* Meta ----------------------------------------------------------------------------------------*/

int e2e_meta_leader(e2e *c)
{
    for (unsigned i = 0; i < c->n; i++) {
        jr_node *n = e2e_node(c, i);
        if (!n || !jr__js_of(n) || !jr__js_of(n)->meta) continue;
        int self;
        const char *l = jr__mnode_leader(jr__js_of(n), &self);
        if (l && self) return (int)i;
    }
    return -1;
}

typedef struct meta_wait {
    e2e *c;
    size_t nservers;
} meta_wait;

static int meta_ready(void *arg, jr_sim *sim)
{
    meta_wait *w = arg;
    (void)sim;
    if (e2e_meta_leader(w->c) < 0) return 0;
    for (unsigned i = 0; i < w->c->n; i++) {
        jr_node *n = e2e_node(w->c, i);
        if (!n) continue;
        int self;
        if (!jr__mnode_leader(jr__js_of(n), &self) || jr__js_of(n)->st.nservers < w->nservers)
            return 0;
    }
    return 1;
}

int e2e_wait_meta(e2e *c, size_t nservers, uint64_t max_ns)
{
    meta_wait w = {c, nservers};
    if (jr_sim_run_until(c->sim, meta_ready, &w, max_ns) != 0) return -1;
    return e2e_meta_leader(c);
}

int e2e_meta_has(e2e *c, unsigned i, const char *name)
{
    jr_node *n = e2e_node(c, i);
    return n && jr__js_of(n) && jr__meta_stream_find(&jr__js_of(n)->st, name) != NULL;
}

/* Calls -----------------------------------------------------------------------------------------*/

static int res_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((e2e_res *)arg)->done;
}

int e2e_wait(e2e *c, e2e_res *r, uint64_t max_ns)
{
    return jr_sim_run_until(c->sim, res_done, r, max_ns);
}

void e2e_admin_cb(void *arg, int status, const char *msg)
{
    e2e_res *r = arg;
    ck_assert_msg(!r->done, "a callback ran twice");
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "(null)");
}

void e2e_create_cb(void *arg, int status, const char *msg, int created)
{
    e2e_res *r = arg;
    e2e_admin_cb(arg, status, msg);
    ck_assert_msg(status == 0 || !created, "created with status %s", jr_err_name(status));
    r->created = created;
}

void e2e_pub_cb(void *arg, int status, const jr_pub_ack *ack)
{
    e2e_res *r = arg;
    ck_assert_msg(!r->done, "a publish callback ran twice");
    r->done = 1;
    r->status = status;
    ck_assert_ptr_nonnull(ack);
    r->seq = ack->seq;
    r->duplicate = ack->duplicate;
    snprintf(r->stream, sizeof r->stream, "%s", ack->stream);
    ck_assert_ptr_nonnull(ack->msg);
    if (status == 0) ck_assert_str_eq(ack->msg, "");
    snprintf(r->msg, sizeof r->msg, "%s", ack->msg);
    /* the stream's last msg id comes with JR_EWRONGLASTMSGID and only with it */
    ck_assert_int_eq(ack->last_msg_id != NULL, status == JR_EWRONGLASTMSGID);
    snprintf(r->last_msg_id, sizeof r->last_msg_id, "%s", ack->last_msg_id ? ack->last_msg_id : "");
}

static void purge_cb(void *arg, int status, const char *msg, uint64_t purged)
{
    e2e_res *r = arg;
    e2e_admin_cb(arg, status, msg);
    r->purged = purged;
}

void e2e_info_cb(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    e2e_res *r = arg;
    e2e_admin_cb(arg, status, msg);
    if (status != 0) {
        ck_assert_ptr_null(info);
        return;
    }
    ck_assert_ptr_nonnull(info);
    snprintf(r->leader, sizeof r->leader, "%s", info->cluster->leader ? info->cluster->leader : "");
    r->nreplicas = info->cluster->nreplicas;
    for (size_t i = 0; i < info->cluster->nreplicas && i < 8; i++) {
        const jr_peer_info *p = info->cluster->replicas[i];
        snprintf(r->reps[i].name, sizeof r->reps[i].name, "%s", p->name);
        r->reps[i].current = p->current;
        r->reps[i].offline = p->offline;
        r->reps[i].observer = p->observer;
        r->reps[i].pending = p->pending;
        r->reps[i].damaged = p->damaged;
        r->reps[i].unvouched = p->unvouched;
        r->reps[i].fsm_failed = p->fsm_failed;
        r->reps[i].fsm_rebuilding = p->fsm_rebuilding;
        r->reps[i].lag = p->lag;
        r->reps[i].active_ns = p->active_ns;
    }
    r->state = *info->state;
    r->replicas_cfg = info->config->replicas;
    r->created_ns = info->created_ns;
    r->max_age_ns = info->config->max_age_ns;
    int need = jr_stream_info_format(info, r->text, sizeof r->text);
    ck_assert_int_ge(need, 0);
    ck_assert_int_lt(need, (int)sizeof r->text);
}

static void msg_cb(void *arg, int status, const char *msg, const jr_stored_msg *m)
{
    e2e_res *r = arg;
    e2e_admin_cb(arg, status, msg);
    if (status != 0) return;
    r->seq = m->seq;
    r->ts = m->ts;
    snprintf(r->subject, sizeof r->subject, "%s", m->subject);
    r->len = m->len < sizeof r->data ? m->len : sizeof r->data;
    memcpy(r->data, m->data, r->len);
    snprintf(r->stream, sizeof r->stream, "%s", m->stream);
}

void e2e_msg_cb(void *arg, int status, const char *msg, const jr_stored_msg *m)
{
    msg_cb(arg, status, msg, m);
}

static int finish(e2e *c, e2e_res *r, int rc)
{
    ck_assert_msg(rc == 0, "call refused: %s", jr_strerror(rc));
    ck_assert_msg(!r->done, "callback ran inside the call");
    ck_assert_msg(e2e_wait(c, r, 60 * SEC) == 0, "no callback within a minute");
    return r->status;
}

#define SYNC(c, r, call)                                                                           \
    e2e_res local_;                                                                                \
    if (!(r)) (r) = &local_;                                                                       \
    memset((r), 0, sizeof *(r));                                                                   \
    return finish((c), (r), (call))

int e2e_add(e2e *c, unsigned node, const jr_stream_config *cfg, e2e_res *r)
{
    SYNC(c, r, jr_stream_add(e2e_node(c, node), cfg, e2e_admin_cb, r));
}

int e2e_update(e2e *c, unsigned node, const jr_stream_config *cfg, e2e_res *r)
{
    SYNC(c, r, jr_stream_update(e2e_node(c, node), cfg, e2e_admin_cb, r));
}

int e2e_delete(e2e *c, unsigned node, const char *name, e2e_res *r)
{
    SYNC(c, r, jr_stream_delete(e2e_node(c, node), name, e2e_admin_cb, r));
}

int e2e_info(e2e *c, unsigned node, const char *name, e2e_res *r)
{
    SYNC(c, r, jr_stream_info_get(e2e_node(c, node), name, e2e_info_cb, r));
}

int e2e_publish(e2e *c, unsigned node, const char *subject, const void *data, size_t len,
                const char *msg_id, e2e_res *r)
{
    jr_pub_opts o;
    jr_pub_opts_init(&o);
    o.msg_id = msg_id;
    SYNC(c, r, jr_publish(e2e_node(c, node), subject, NULL, 0, data, len, &o, e2e_pub_cb, r));
}

int e2e_publish_order(jr_node *n, int i, jr_publish_cb cb, void *arg)
{
    char s[32], d[64], id[32];
    snprintf(s, sizeof s, "orders.%d", i % 5);
    snprintf(d, sizeof d, "order %d", i);
    snprintf(id, sizeof id, "o-%d", i);
    jr_pub_opts o;
    jr_pub_opts_init(&o);
    o.msg_id = id;
    return jr_publish(n, s, NULL, 0, d, strlen(d), &o, cb, arg);
}

int e2e_purge(e2e *c, unsigned node, const char *name, const jr_purge_opts *o, e2e_res *r)
{
    SYNC(c, r, jr_stream_purge(e2e_node(c, node), name, o, purge_cb, r));
}

int e2e_msg_get(e2e *c, unsigned node, const char *name, uint64_t seq, e2e_res *r)
{
    SYNC(c, r, jr_stream_msg_get(e2e_node(c, node), name, seq, msg_cb, r));
}

int e2e_get_last(e2e *c, unsigned node, const char *name, const char *subject, e2e_res *r)
{
    SYNC(c, r, jr_stream_get_last(e2e_node(c, node), name, subject, msg_cb, r));
}

int e2e_get_next(e2e *c, unsigned node, const char *name, uint64_t seq, const char *subject,
                 e2e_res *r)
{
    SYNC(c, r, jr_stream_get_next(e2e_node(c, node), name, seq, subject, msg_cb, r));
}

int e2e_msg_delete(e2e *c, unsigned node, const char *name, uint64_t seq, e2e_res *r)
{
    SYNC(c, r, jr_stream_msg_delete(e2e_node(c, node), name, seq, 0, e2e_admin_cb, r));
}

int e2e_stepdown(e2e *c, unsigned node, const char *name, const char *peer, e2e_res *r)
{
    SYNC(c, r, jr_stream_stepdown(e2e_node(c, node), name, peer, e2e_admin_cb, r));
}

int e2e_wait_stream(e2e *c, unsigned via, const char *name, size_t current, uint64_t max_ns)
{
    uint64_t end = jr_sim_now(c->sim) + max_ns;
    while (jr_sim_now(c->sim) < end) {
        e2e_res r;
        memset(&r, 0, sizeof r);
        int rc = jr_stream_info_get(e2e_node(c, via), name, e2e_info_cb, &r);
        /* every request ends within its bounded wait: never leave one behind (r is local) */
        if (rc == 0) ck_assert_msg(e2e_wait(c, &r, 60 * SEC) == 0, "stream info never answered");
        if (rc == 0 && r.status == 0 && r.leader[0]) {
            size_t cur = 0;
            for (size_t i = 0; i < r.nreplicas; i++) cur += r.reps[i].current;
            if (cur >= current) return jr_sim_index(c->sim, r.leader);
        }
        jr_sim_run_for(c->sim, 50 * MS);
    }
    return -1;
}

int e2e_new_with_stream(e2e *c, unsigned n, uint64_t seed, const jr_stream_config *cfg)
{
    memset(c, 0, sizeof *c);
    ck_assert_int_eq(e2e_new(c, n, seed, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(c, n, 10 * SEC), 0);
    e2e_res r;
    ck_assert_msg(e2e_add(c, 0, cfg, &r) == 0, "add: %s", r.msg);
    int l = e2e_wait_stream(c, 0, cfg->name, (size_t)cfg->replicas - 1, 10 * SEC);
    ck_assert_int_ge(l, 0);
    return l;
}

void e2e_new_ssd(e2e *c, unsigned n, unsigned nssd, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    for (unsigned i = 0; i < n; i++) {
        c->tags[i][0] = i < nssd ? "ssd" : "hdd";
        c->ntags[i] = 1;
    }
    ck_assert_int_eq(e2e_new(c, n, seed, 3000), 0);
    ck_assert_int_ge(e2e_wait_meta(c, n, 30 * SEC), 0);
}

/* Replicas ------------------------------------------------------------------------------------*/

static jr__srep *rep_of(e2e *c, unsigned i, const char *name)
{
    jr_node *n = e2e_node(c, i);
    if (!n || !jr__js_of(n)) return NULL;
    const jr__meta_stream *s = jr__meta_stream_find(&jr__js_of(n)->st, name);
    return s ? jr__srep_find(jr__js_of(n), s->group) : NULL;
}

int e2e_has_replica(e2e *c, unsigned i, const char *name)
{
    return rep_of(c, i, name) != NULL;
}

jr_group *e2e_group(e2e *c, unsigned i, const char *name)
{
    jr__srep *r = rep_of(c, i, name);
    return r ? r->g : NULL;
}

int e2e_digest(e2e *c, unsigned i, const char *name, uint64_t *out)
{
    jr__srep *r = rep_of(c, i, name);
    if (!r) return JR_ENOTFOUND;
    return jr__stream_fsm_digest(r->fsm, out);
}

int e2e_restore_from(e2e *c, unsigned from, unsigned to, const char *name, uint64_t behind,
                     int corrupt)
{
    jr__srep *src = rep_of(c, from, name), *dst = rep_of(c, to, name);
    if (!src || !dst || !dst->g) return JR_ENOTFOUND;
    jr__buf b;
    jr__buf_init(&b, NULL);
    uint64_t index = jr__stream_fsm_applied(src->fsm);
    jr__buf_u64(&b, index);
    int rc = b.err ? b.err : jr__stream_fsm_snapshot(src->fsm, &b);
    if (rc == 0 && corrupt) b.data[b.len / 2] ^= 0x20;
    if (rc == 0) {
        jr_group *g = dst->g;
        g->in_fsm = 1;
        rc = g->fsm.restore(g->fsm.ctx, index > behind ? index - behind : 0, b.data, b.len);
        g->in_fsm = 0;
    }
    jr__buf_free(&b);
    return rc;
}

int64_t e2e_checksums(e2e *c, unsigned i, const char *name, uint64_t *out, size_t cap)
{
    jr__srep *r = rep_of(c, i, name);
    if (!r) return JR_ENOTFOUND;
    memset(out, 0, cap * sizeof *out);
    jr__store *st = jr__stream_fsm_store(r->fsm);
    jr__store_msg m;
    uint64_t from = 1;
    int rc;
    while ((rc = jr__store_next(st, from, NULL, 0, &m)) == 0) {
        if (m.seq <= cap) {
            uint64_t h = jr__xxh3_2(m.subject, m.subject_len, m.data, m.data_len);
            out[m.seq - 1] = h ^ (uint64_t)m.ts ^ 1;
        }
        from = m.seq + 1;
    }
    jr__store_state s;
    jr__store_state_get(st, &s);
    return (int64_t)s.last_seq;
}

int e2e_local_get(e2e *c, unsigned i, const char *name, uint64_t seq, char *subject,
                  size_t subject_cap, char *data, size_t data_cap)
{
    jr__srep *r = rep_of(c, i, name);
    if (!r) return JR_ENOTFOUND;
    jr__store_msg m;
    int rc = jr__store_get(jr__stream_fsm_store(r->fsm), seq, &m);
    if (rc) return rc;
    snprintf(subject, subject_cap, "%.*s", (int)m.subject_len, m.subject);
    snprintf(data, data_cap, "%.*s", (int)m.data_len, (const char *)m.data);
    return 0;
}

const jr_placement *e2e_placement(const char *cluster, const char *const *tags, size_t ntags)
{
    static jr_placement pool[16];
    static unsigned next;
    jr_placement *p = &pool[next++ % 16];
    jr_placement_init(p);
    p->cluster = cluster;
    p->tags = tags;
    p->ntags = ntags;
    return p;
}

int e2e_state(e2e *c, unsigned i, const char *name, jr_stream_state *out)
{
    jr__srep *r = rep_of(c, i, name);
    if (!r) return JR_ENOTFOUND;
    jr__stream_fsm_info fi;
    jr__stream_fsm_info_get(r->fsm, &fi);
    memset(out, 0, sizeof *out);
    out->msgs = fi.store.msgs;
    out->bytes = fi.store.bytes;
    out->first_seq = fi.store.first_seq;
    out->last_seq = fi.store.last_seq;
    out->num_subjects = fi.store.num_subjects;
    out->num_deleted = fi.store.num_deleted;
    return 0;
}

int e2e_replica_leader(e2e *c, unsigned i, const char *name)
{
    jr__srep *r = rep_of(c, i, name);
    if (!r || !r->g) return -1;
    const char *l = jr_group_leader(r->g);
    return l ? jr_sim_index(c->sim, l) : -1;
}

uint64_t e2e_snapshot_index(e2e *c, unsigned i, const char *name)
{
    jr__srep *r = rep_of(c, i, name);
    if (!r || !r->g) return 0;
    jr_group_status gs;
    gs.size = sizeof gs;
    jr_group_status_get(r->g, &gs);
    return gs.snapshot_index;
}

size_t e2e_meta_streams(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    return n && jr__js_of(n) ? jr__js_of(n)->st.nstreams : 0;
}

uint64_t e2e_fsm_applied(e2e *c, unsigned i, const char *name)
{
    jr__srep *r = rep_of(c, i, name);
    return r ? jr__stream_fsm_applied(r->fsm) : 0;
}

void e2e_describe(e2e *c, unsigned i, const char *name, char *buf, size_t cap)
{
    jr__srep *r = rep_of(c, i, name);
    if (!r) {
        snprintf(buf, cap, "n%u: no replica", i);
        return;
    }
    jr__stream_fsm_info fi;
    jr__stream_fsm_info_get(r->fsm, &fi);
    jr_group_status gs;
    gs.size = sizeof gs;
    jr_group_status_get(r->g, &gs);
    snprintf(buf, cap,
             "n%u: fsm applied %llu durable %llu last_seq %llu clock %lld dedup %zu msgs %llu "
             "failed %d restoring %d cu %d rep_failed %d | group role %d term %llu commit %llu "
             "applied %llu last %llu snap %llu damaged %d",
             i, (unsigned long long)fi.applied, (unsigned long long)fi.durable,
             (unsigned long long)fi.last_seq, (long long)fi.clock, fi.dedup_ids,
             (unsigned long long)fi.store.msgs, fi.failed, fi.restoring, r->cu != NULL, r->failed,
             gs.role, (unsigned long long)gs.term, (unsigned long long)gs.commit_index,
             (unsigned long long)gs.applied_index, (unsigned long long)gs.last_index,
             (unsigned long long)gs.snapshot_index, gs.damaged);
}

uint64_t e2e_catchup_chunks(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    return n && jr__js_of(n) ? jr__js_of(n)->catchup_chunks : 0;
}

void e2e_catchup_drain(e2e *c, unsigned i, uint64_t *bytes, uint64_t *turns, uint64_t *over)
{
    jr_node *n = e2e_node(c, i);
    const jr__js *js = n ? jr__js_of(n) : NULL;
    *bytes = js ? js->catchup_drained : 0;
    *turns = js ? js->catchup_drain_turns : 0;
    *over = js ? js->catchup_drain_over : 0;
}

uint64_t e2e_catchup_later(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    return n && jr__js_of(n) ? jr__js_of(n)->catchup_later : 0;
}

uint64_t e2e_catchup_dropped(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    return n && jr__js_of(n) ? jr__js_of(n)->catchup_dropped : 0;
}

void e2e_catchup_holds(e2e *c, unsigned i, uint64_t *holds, uint64_t *held_ns, uint64_t *giveups)
{
    jr_node *n = e2e_node(c, i);
    const jr__js *js = n ? jr__js_of(n) : NULL;
    *holds = js ? js->catchup_holds : 0;
    *held_ns = js ? js->catchup_held_ns : 0;
    *giveups = js ? js->catchup_hold_giveups : 0;
}

uint64_t e2e_catchup_hold_arms(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    return n && jr__js_of(n) ? jr__js_of(n)->catchup_hold_arms : 0;
}

uint64_t e2e_leader_later_snaps(e2e *c, unsigned i, const char *name)
{
    jr_node *n = e2e_node(c, i);
    const jr__js *js = n ? jr__js_of(n) : NULL;
    for (const jr__srep *r = js ? js->rep_list : NULL; r; r = r->next) {
        if (!r->name || strcmp(r->name, name) != 0 || !r->g) continue;
        const jr__raft *raft = jr__group_consensus(r->g);
        if (jr__raft_role(raft) != JR_LEADER) return 0;
        const jr__conf *cf = jr__raft_conf(raft);
        uint64_t sum = 0;
        for (uint32_t k = 0; k < cf->n; k++) {
            jr__progress p;
            if (jr__raft_progress(raft, k, &p) == 0) sum += p.later_snaps;
        }
        return sum;
    }
    return 0;
}

int e2e_stage(e2e *c, unsigned i, const char *name, uint32_t *nstage, int *holding)
{
    jr_node *n = e2e_node(c, i);
    const jr__js *js = n ? jr__js_of(n) : NULL;
    for (const jr__srep *r = js ? js->rep_list : NULL; r; r = r->next)
        if (r->name && strcmp(r->name, name) == 0) {
            *nstage = r->nstage;
            *holding = r->holding;
            return 0;
        }
    return -1;
}

uint64_t e2e_catchup_taken(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    return n && jr__js_of(n) ? jr__js_of(n)->catchup_taken : 0;
}

uint64_t e2e_snap_restores(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    return n && jr__js_of(n) ? jr__js_of(n)->snap_restores : 0;
}

uint64_t e2e_catchup_bytes(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    return n && jr__js_of(n) ? jr__js_of(n)->catchup_bytes : 0;
}

void e2e_keep_bytes(e2e *c, unsigned i, uint64_t keep, uint64_t join_keep)
{
    jr_node *n = e2e_node(c, i);
    if (!n) return;
    n->keep_bytes = keep;
    n->join_keep_bytes = join_keep;
}

uint64_t e2e_kept_max(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    return n ? n->kept_max : 0;
}

int e2e_joiners_watched(e2e *c, unsigned i, const char *name)
{
    jr_group *g = e2e_group(c, i, name);
    return g && g->joiners;
}

void e2e_catchup_queue_max(e2e *c, unsigned i, uint64_t max)
{
    jr_node *n = e2e_node(c, i);
    if (n && jr__js_of(n)) jr__js_of(n)->catchup_queue_max = max;
}

uint64_t e2e_catchup_in_log(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    return n && jr__js_of(n) ? jr__js_of(n)->catchup_in_log : 0;
}

uint64_t e2e_catchup_queue_peak(e2e *c, unsigned i)
{
    jr_node *n = e2e_node(c, i);
    return n && jr__js_of(n) ? jr__js_of(n)->catchup_queue_peak : 0;
}

void e2e_config(jr_stream_config *cfg, const char *name, const char *const *subjects,
                size_t nsubjects, int replicas)
{
    jr_stream_config_init(cfg);
    cfg->name = name;
    cfg->subjects = subjects;
    cfg->nsubjects = nsubjects;
    cfg->replicas = replicas;
}

int e2e_meta_peers(e2e *c, unsigned i, const char *name, unsigned *out, size_t cap)
{
    jr_node *n = e2e_node(c, i);
    const jr__meta_stream *s =
        n && jr__js_of(n) ? jr__meta_stream_find(&jr__js_of(n)->st, name) : NULL;
    if (!s) return -1;
    size_t k = 0;
    for (size_t p = 0; p < s->npeers && k < cap; p++)
        out[k++] = (unsigned)jr_sim_index(c->sim, s->peers[p]);
    return (int)k;
}

int e2e_meta_busy(e2e *c, unsigned i, const char *name)
{
    jr_node *n = e2e_node(c, i);
    const jr__meta_stream *s =
        n && jr__js_of(n) ? jr__meta_stream_find(&jr__js_of(n)->st, name) : NULL;
    return s ? jr__meta_stream_busy(s) : -1;
}

int e2e_members(e2e *c, unsigned i, const char *name, unsigned *idx, int *voter, size_t cap)
{
    jr__srep *r = rep_of(c, i, name);
    if (!r || !r->g) return -1;
    jr_node *n = e2e_node(c, i);
    const jr__conf *conf = jr__raft_conf(jr__group_raft(r->g));
    size_t k = 0;
    for (uint32_t m = 0; m < conf->n && k < cap; m++) {
        jr__peer *p = jr__peer_find(n, conf->m[m].id);
        idx[k] = p ? (unsigned)jr_sim_index(c->sim, p->name) : 99;
        voter[k] = conf->m[m].voter;
        k++;
    }
    return (int)k;
}

void e2e_catchup_paced(e2e *c, unsigned i, uint64_t *steps, uint64_t *paused_ns)
{
    jr_node *n = e2e_node(c, i);
    const jr__js *js = n ? jr__js_of(n) : NULL;
    *steps = js ? js->catchup_paced : 0;
    *paused_ns = js ? js->catchup_paused_ns : 0;
}

int e2e_capped_log(e2e *c, unsigned i, const char *name, uint64_t *peak, uint64_t *drops)
{
    jr__srep *r = rep_of(c, i, name);
    if (!r || !r->g) return -1;
    const jr__raft *core = jr__group_consensus(r->g);
    *peak = jr__raft_capped_peak(core);
    *drops = jr__raft_capped_drops(core);
    return 0;
}

int e2e_catchup_phase(e2e *c, unsigned i, const char *name)
{
    jr__srep *r = rep_of(c, i, name);
    if (!r || !r->cu) return -1;
    switch (jr__catchup_phase(r->cu)) {
    case JR__CU_FETCHING:
        return E2E_CU_FETCHING;
    case JR__CU_PAUSED:
        return E2E_CU_PAUSED;
    case JR__CU_DRAINING:
        return E2E_CU_DRAINING;
    default:
        return E2E_CU_WAITING;
    }
}

int e2e_catching_up(e2e *c, unsigned i, const char *name)
{
    jr__srep *r = rep_of(c, i, name);
    return r && r->cu != NULL;
}

int e2e_timer_armed(e2e *c, unsigned i, const char *name)
{
    jr__srep *r = rep_of(c, i, name);
    return r ? jr__timer_armed(&r->timer.t) != 0 : -1;
}

void e2e_progress(e2e *c, unsigned i, const char *name, char *buf, size_t cap)
{
    jr__srep *r = rep_of(c, i, name);
    buf[0] = 0;
    if (!r || !r->g) return;
    jr__raft *raft = jr__group_raft(r->g);
    const jr__conf *conf = jr__raft_conf(raft);
    size_t k = 0;
    k += (size_t)snprintf(buf + k, cap - k, "quiet %d;", jr__raft_quiet(raft));
    for (uint32_t m = 0; m < conf->n && k < cap; m++) {
        jr__progress pr;
        if (jr__raft_progress(raft, m, &pr) != 0) continue;
        k += (size_t)snprintf(
            buf + k, cap - k, " [%d st %u match %llu next %llu contact %llu]",
            jr_sim_index(c->sim, jr__js_peer_name(jr__js_of(e2e_node(c, i)), pr.id)), pr.state,
            (unsigned long long)pr.match, (unsigned long long)pr.next,
            (unsigned long long)pr.last_contact);
    }
}

/* Consumer replicas ---------------------------------------------------------------------------*/

uint64_t e2e_consumer_group(e2e *c, unsigned i, const char *stream, const char *name)
{
    jr_node *n = e2e_node(c, i);
    const jr__meta_stream *s =
        n && jr__js_of(n) ? jr__meta_stream_find(&jr__js_of(n)->st, stream) : NULL;
    const jr__meta_consumer *mc = s ? jr__meta_consumer_find(s, name) : NULL;
    return mc ? mc->group : 0;
}

static jr__crep *crep_of(e2e *c, unsigned i, const char *stream, const char *name)
{
    uint64_t g = e2e_consumer_group(c, i, stream, name);
    return g ? jr__crep_find(jr__js_of(e2e_node(c, i)), g) : NULL;
}

int e2e_consumer_digest(e2e *c, unsigned i, const char *stream, const char *name, uint64_t *digest,
                        uint64_t *applied)
{
    jr__crep *r = crep_of(c, i, stream, name);
    if (!r) return JR_ENOTFOUND;
    if (r->failed) return r->failed;
    jr__buf b;
    jr__buf_init(&b, NULL);
    int rc = jr__cstate_snapshot(&r->st, &b);
    if (rc == 0) *digest = jr__xxh3(b.data, b.len);
    jr__buf_free(&b);
    *applied = r->applied;
    return rc;
}

int e2e_consumer_leader(e2e *c, unsigned i, const char *stream, const char *name)
{
    jr__crep *r = crep_of(c, i, stream, name);
    if (!r || !r->g) return -1;
    const char *l = jr_group_leader(r->g);
    return l ? jr_sim_index(c->sim, l) : -1;
}

void e2e_consumer_describe(e2e *c, unsigned i, const char *stream, const char *name, char *buf,
                           size_t cap)
{
    jr__crep *r = crep_of(c, i, stream, name);
    if (!r) {
        snprintf(buf, cap, "n%u: no consumer replica", i);
        return;
    }
    jr__cseqs f;
    jr__cstate_ack_floor(&r->st, &f);
    const jr__cseqs *d = jr__cstate_delivered(&r->st);
    jr_group_status gs;
    gs.size = sizeof gs;
    jr_group_status_get(r->g, &gs);
    snprintf(buf, cap,
             "n%u: applied %llu failed %d delivered %llu/%llu floor %llu/%llu pending %zu | group "
             "role %d term %llu commit %llu applied %llu last %llu snap %llu | lead %d ready %d "
             "cursor %llu inflight %llu waiting %zu",
             i, (unsigned long long)r->applied, r->failed, (unsigned long long)d->consumer_seq,
             (unsigned long long)d->stream_seq, (unsigned long long)f.consumer_seq,
             (unsigned long long)f.stream_seq, jr__cstate_num_ack_pending(&r->st), gs.role,
             (unsigned long long)gs.term, (unsigned long long)gs.commit_index,
             (unsigned long long)gs.applied_index, (unsigned long long)gs.last_index,
             (unsigned long long)gs.snapshot_index, r->lead != NULL, r->lead ? r->lead->ready : 0,
             r->lead ? (unsigned long long)r->lead->cursor : 0ull,
             r->lead ? (unsigned long long)r->lead->inflight : 0ull,
             r->lead ? r->lead->nwaiting : (size_t)0);
}

/* ---- a workload ----------------------------------------------------------------------------- */

void e2e_work_init(e2e_work *w, e2e *c, const char *stream, int n)
{
    memset(w, 0, sizeof *w);
    w->c = c;
    w->stream = stream;
    w->n = n;
    w->res = calloc(n ? (size_t)n : 1, sizeof *w->res);
    w->got_cap = (size_t)n * 2 + 16;
    w->got = calloc(w->got_cap, 1);
    ck_assert(w->res && w->got);
}

void e2e_work_free(e2e_work *w)
{
    free(w->res);
    free(w->got);
}

/* The first live node not skipped, or NULL. */
static jr_node *work_node(e2e_work *w)
{
    for (unsigned t = 0; t < jr_sim_size(w->c->sim); t++)
        if (e2e_node(w->c, t) && !w->skip[t]) return e2e_node(w->c, t);
    return NULL;
}

static void work_issue(e2e_work *w)
{
    if (w->issued >= w->n) return;
    unsigned size = jr_sim_size(w->c->sim);
    for (unsigned t = 0; t < size; t++) {
        unsigned via = (unsigned)(w->issued + (int)t) % size;
        if (!e2e_node(w->c, via) || w->skip[via]) continue;
        int i = w->issued++;
        memset(&w->res[i], 0, sizeof w->res[i]);
        int rc = e2e_publish_order(e2e_node(w->c, via), i, e2e_pub_cb, &w->res[i]);
        ck_assert_msg(rc == 0, "publish %d via n%u: %s", i, via, jr_strerror(rc));
        return;
    }
}

static void work_on_fetch(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                          const jr_fetch_end *end)
{
    e2e_work *w = arg;
    (void)msg;
    if (m) {
        if (m->stream_seq < w->got_cap) w->got[m->stream_seq] = 1;
        w->delivered++;
        jr_node *n = work_node(w);
        if (n) jr_consumer_ack(n, m->ack_token, JR_ACK_ACK, 0, NULL, NULL, NULL);
        return;
    }
    if (end || status) w->fetching = 0;
}

static void work_fetch(e2e_work *w)
{
    jr_node *n = work_node(w);
    if (w->fetching || !n) return;
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = 20;
    o.expires_ns = (int64_t)(200 * MS);
    if (jr_consumer_fetch(n, w->stream, "PROC", &o, work_on_fetch, w) == 0) {
        w->fetching = 1;
        w->fetches++;
    }
}

void e2e_work_run(e2e_work *w, uint64_t ns)
{
    uint64_t end = jr_sim_now(w->c->sim) + ns;
    while (jr_sim_now(w->c->sim) < end) {
        work_issue(w);
        work_fetch(w);
        jr_sim_run_for(w->c->sim, 5 * MS);
    }
}

int e2e_work_answered(void *arg, jr_sim *sim)
{
    e2e_work *w = arg;
    (void)sim;
    for (int i = 0; i < w->issued; i++)
        if (!w->res[i].done) return 0;
    return 1;
}

int e2e_work_check(e2e_work *w, unsigned via)
{
    ck_assert_int_eq(jr_sim_run_until(w->c->sim, e2e_work_answered, w, 60 * SEC), 0);
    int unknown = 0, acked = 0;
    for (int i = 0; i < w->issued; i++) {
        /* the server it was given to crashed (or was removed) before the ack: not acknowledged */
        if (w->res[i].status == JR_ECLOSED || w->res[i].status == JR_EREMOVED) continue;
        /* it never left the server it was given to before its deadline (no leader known there
         * in time, e.g. that server was paused meanwhile): a definite failure, not stored */
        if (w->res[i].status == JR_ENOQUORUM) continue;
        /* its stream leader crashed and the failover did not finish in time: the outcome is
         * unknown, it was not acknowledged (a few at most) */
        if (w->res[i].status == JR_ETIMEDOUT || w->res[i].status == JR_ELEADERLOST) {
            ck_assert_int_le(++unknown, w->issued / 20 + 1);
            continue;
        }
        ck_assert_msg(w->res[i].status == 0, "publish %d failed: %s (%s)", i,
                      jr_strerror(w->res[i].status), w->res[i].msg);
        acked++;
        e2e_res r;
        memset(&r, 0, sizeof r);
        int rc = e2e_msg_get(w->c, via, w->stream, w->res[i].seq, &r);
        ck_assert_msg(rc == 0, "acknowledged publish %d (seq %llu) not read back: %s (%s)", i,
                      (unsigned long long)w->res[i].seq, jr_strerror(rc), r.msg);
        char d[64];
        snprintf(d, sizeof d, "order %d", i);
        ck_assert_str_eq(r.data, d);
    }
    return acked;
}
