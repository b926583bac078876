/* A caller built against an older <jetraft.h>: it knows a prefix of each struct that may grow
 * (fewer trailing fields, a smaller `size`). This file defines those structs as that caller knew
 * them and passes them through the real functions of the library it runs against. Behind each
 * old struct lie guard bytes: poison shaped like the fields the old caller did not know (values
 * that would fail the call, or be seen in its result, if the library read them). Every call must
 * leave the guard bytes as they were (nothing written past the old size), behave as if the
 * poison were not there (nothing read past it), and hand the caller only structs it can read:
 * info, acks and messages with a size at least the old one, lists as arrays of pointers. */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jetraft.h>
#include <jetraft/sim.h>

#define MS 1000000ull
#define SEC 1000000000ull
#define GUARD 128

/* The structs as the older caller knew them: each a prefix of today's. */
typedef struct old_placement {
    size_t size;
    const char *cluster;
} old_placement; /* no tags */

typedef struct old_stream_config {
    size_t size;
    const char *name;
    const char *description;
    const char *const *subjects;
    size_t nsubjects;
    int retention;
    int64_t max_consumers;
    int64_t max_msgs;
    int64_t max_bytes;
    uint64_t max_age_ns;
    int64_t max_msgs_per_subject;
    int32_t max_msg_size;
    int discard;
    int storage;
    int replicas;
    uint64_t duplicate_window_ns;
    const old_placement *placement;
    int sealed;
    int deny_delete;
    int deny_purge;
    int allow_rollup;
} old_stream_config; /* no compression, no metadata */

typedef struct old_pub_opts {
    size_t size;
    const char *msg_id;
} old_pub_opts; /* no expectations, no timeout */

typedef struct old_purge_opts {
    size_t size;
    const char *subject;
} old_purge_opts; /* no keep, no seq */

typedef struct old_node_stats {
    size_t size;
    uint64_t frames_sent;
    uint64_t frames_received;
} old_node_stats;

typedef struct old_group_status {
    size_t size;
    uint64_t id;
    int role;
} old_group_status;

typedef struct old_sim_config {
    size_t size;
    unsigned nodes;
    uint64_t seed;
    const jr_sim_link *link;
    uint32_t election_timeout_ms;
    uint32_t heartbeat_ms;
    int torn_writes;
    const jr_allocator *alloc;
    void *arg;
    void (*configure)(void *arg, unsigned i, jr_node_config *cfg);
} old_sim_config; /* no on_step and after */

typedef struct old_peer_info {
    size_t size;
    const char *name;
    int current;
} old_peer_info;

typedef struct old_server_info {
    size_t size;
    const char *name;
} old_server_info;

/* The old prefixes must lie where today's fields do, or the test proves nothing. */
#define SAME_PREFIX(old, new, last) ck_assert_uint_eq(offsetof(old, last), offsetof(new, last))

START_TEST(old_layouts_are_prefixes)
{
    SAME_PREFIX(old_placement, jr_placement, cluster);
    SAME_PREFIX(old_stream_config, jr_stream_config, placement);
    SAME_PREFIX(old_stream_config, jr_stream_config, allow_rollup);
    SAME_PREFIX(old_pub_opts, jr_pub_opts, msg_id);
    SAME_PREFIX(old_purge_opts, jr_purge_opts, subject);
    SAME_PREFIX(old_node_stats, jr_node_stats, frames_received);
    SAME_PREFIX(old_group_status, jr_group_status, role);
    SAME_PREFIX(old_sim_config, jr_sim_config, configure);
    SAME_PREFIX(old_peer_info, jr_peer_info, current);
    SAME_PREFIX(old_server_info, jr_server_info, name);
    /* and be smaller: today's structs have fields the old caller does not know */
    ck_assert_uint_lt(sizeof(old_placement), sizeof(jr_placement));
    ck_assert_uint_lt(sizeof(old_stream_config), sizeof(jr_stream_config));
    ck_assert_uint_lt(sizeof(old_pub_opts), sizeof(jr_pub_opts));
    ck_assert_uint_lt(sizeof(old_purge_opts), sizeof(jr_purge_opts));
    ck_assert_uint_lt(sizeof(old_node_stats), sizeof(jr_node_stats));
    ck_assert_uint_lt(sizeof(old_group_status), sizeof(jr_group_status));
    ck_assert_uint_lt(sizeof(old_sim_config), sizeof(jr_sim_config));
}
END_TEST

/* An old struct with guard bytes behind it. The guard holds `poison` from the offset the old
 * struct ends at: what a newer field would contain if the library looked. */
typedef struct guarded {
    union {
        max_align_t align;
        unsigned char bytes[1024 + GUARD]; /* any of the structs above, and its guard */
    } u;
    size_t old_size;
    unsigned char want[GUARD]; /* the guard as it must stay */
} guarded;

static void *guard_init(guarded *g, size_t old_size, const void *poison, size_t poison_size)
{
    ck_assert_uint_le(old_size, 1024);
    memset(g, 0, sizeof *g);
    g->old_size = old_size;
    memset(g->want, 0xA5, GUARD);
    if (poison && poison_size > old_size) {
        size_t n = poison_size - old_size < GUARD ? poison_size - old_size : GUARD;
        memcpy(g->want, (const unsigned char *)poison + old_size, n);
    }
    memcpy(g->u.bytes + old_size, g->want, GUARD);
    return g->u.bytes;
}

static void guard_check(const guarded *g, const char *what)
{
    ck_assert_msg(memcmp(g->u.bytes + g->old_size, g->want, GUARD) == 0,
                  "%s: a byte past the old size (%zu) was written", what, g->old_size);
}

/* Each init function writes the old caller's prefix (defaults, the old size) and nothing more. */
START_TEST(init_writes_only_the_old_size)
{
    guarded g;
    old_stream_config *sc = guard_init(&g, sizeof *sc, NULL, 0);
    jr_stream_config_init_size((jr_stream_config *)(void *)sc, sizeof *sc);
    guard_check(&g, "jr_stream_config_init_size");
    ck_assert_uint_eq(sc->size, sizeof *sc);
    ck_assert_int_eq(sc->max_msgs, -1);
    ck_assert_int_eq(sc->replicas, 1);
    ck_assert_ptr_null(sc->placement);

    old_placement *pl = guard_init(&g, sizeof *pl, NULL, 0);
    jr_placement_init_size((jr_placement *)(void *)pl, sizeof *pl);
    guard_check(&g, "jr_placement_init_size");
    ck_assert_uint_eq(pl->size, sizeof *pl);

    old_pub_opts *po = guard_init(&g, sizeof *po, NULL, 0);
    jr_pub_opts_init_size((jr_pub_opts *)(void *)po, sizeof *po);
    guard_check(&g, "jr_pub_opts_init_size");
    ck_assert_uint_eq(po->size, sizeof *po);

    old_purge_opts *pu = guard_init(&g, sizeof *pu, NULL, 0);
    jr_purge_opts_init_size((jr_purge_opts *)(void *)pu, sizeof *pu);
    guard_check(&g, "jr_purge_opts_init_size");
    ck_assert_uint_eq(pu->size, sizeof *pu);

    old_sim_config *si = guard_init(&g, sizeof *si, NULL, 0);
    jr_sim_config_init_size((jr_sim_config *)(void *)si, sizeof *si);
    guard_check(&g, "jr_sim_config_init_size");
    ck_assert_uint_eq(si->size, sizeof *si);
    ck_assert_uint_eq(si->nodes, 3);

    /* node and group configs: an old caller that knew only up to wal_dir / fsm */
    size_t nsz = offsetof(jr_node_config, wal_dir) + sizeof(const char *);
    jr_node_config *nc = guard_init(&g, nsz, NULL, 0);
    jr_node_config_init_size(nc, nsz);
    guard_check(&g, "jr_node_config_init_size");
    ck_assert_uint_eq(nc->size, nsz);
    ck_assert_str_eq(nc->cluster, "jetraft");
    size_t gsz = offsetof(jr_group_config, fsm) + sizeof(void *);
    jr_group_config *gc = guard_init(&g, gsz, NULL, 0);
    jr_group_config_init_size(gc, gsz);
    guard_check(&g, "jr_group_config_init_size");
    ck_assert_uint_eq(gc->size, gsz);
    size_t lsz = offsetof(jr_sim_link, reorder) + sizeof(double);
    jr_sim_link *lk = guard_init(&g, lsz, NULL, 0);
    jr_sim_link_init_size(lk, lsz);
    guard_check(&g, "jr_sim_link_init_size");
    ck_assert_uint_eq(lk->size, lsz);

    /* a size too small for the size field itself: nothing is written */
    unsigned char tiny[sizeof(jr_pub_opts)];
    memset(tiny, 0x5A, sizeof tiny);
    jr_pub_opts_init_size((jr_pub_opts *)(void *)tiny, sizeof(size_t) - 1);
    for (size_t i = 0; i < sizeof tiny; i++) ck_assert_uint_eq(tiny[i], 0x5A);
}
END_TEST

/* A cluster the old caller runs -------------------------------------------------------------*/

static int g_on_step_called;

static void poison_on_step(void *arg, jr_sim *sim)
{
    (void)arg;
    (void)sim;
    g_on_step_called = 1; /* a field past the old sim config's size was read */
}

static void configure(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    (void)i;
    cfg->streams = 1;
}

typedef struct res {
    int done, status;
    char msg[256];
    uint64_t seq, purged;
    int duplicate;
    /* what the info callback could read as the old caller */
    int info_ok, compression, replicas;
    size_t nmetadata, ntags, nreplicas, nservers;
    uint64_t msgs;
    char leader[32];
} res;

static int is_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((res *)arg)->done;
}

static void admin_cb(void *arg, int status, const char *msg)
{
    res *r = arg;
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "");
}

static void pub_cb(void *arg, int status, const jr_pub_ack *ack)
{
    res *r = arg;
    r->done = 1;
    r->status = status;
    ck_assert_uint_ge(ack->size, offsetof(jr_pub_ack, msg) + sizeof ack->msg);
    r->seq = ack->seq;
    r->duplicate = ack->duplicate;
    snprintf(r->msg, sizeof r->msg, "%s", ack->msg);
}

static void purge_cb(void *arg, int status, const char *msg, uint64_t purged)
{
    res *r = arg;
    admin_cb(arg, status, msg);
    r->purged = purged;
}

/* Reads the info as the old caller would: through the pointers, each struct by its size. */
static void info_cb(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    res *r = arg;
    admin_cb(arg, status, msg);
    if (status != 0) return;
    ck_assert_uint_ge(info->size, offsetof(jr_stream_info, cluster) + sizeof info->cluster);
    const jr_stream_config *c = info->config;
    ck_assert_uint_ge(c->size, sizeof(old_stream_config));
    r->compression = c->compression;
    r->nmetadata = c->nmetadata;
    r->replicas = c->replicas;
    r->ntags = c->placement ? c->placement->ntags : 0;
    ck_assert_uint_ge(info->state->size, offsetof(jr_stream_state, msgs) + 8);
    r->msgs = info->state->msgs;
    const jr_cluster_info *ci = info->cluster;
    ck_assert_uint_ge(ci->size, offsetof(jr_cluster_info, nreplicas) + sizeof(size_t));
    snprintf(r->leader, sizeof r->leader, "%s", ci->leader ? ci->leader : "");
    r->nreplicas = ci->nreplicas;
    for (size_t i = 0; i < ci->nreplicas; i++) {
        const old_peer_info *p = (const old_peer_info *)(const void *)ci->replicas[i];
        ck_assert_uint_ge(p->size, sizeof *p);
        ck_assert_ptr_nonnull(p->name);
    }
    r->info_ok = 1;
}

static void meta_cb(void *arg, int status, const char *msg, const jr_meta_info *info)
{
    res *r = arg;
    admin_cb(arg, status, msg);
    if (!info) return;
    r->nservers = info->nservers;
    for (size_t i = 0; i < info->nservers; i++) {
        const old_server_info *s = (const old_server_info *)(const void *)info->servers[i];
        ck_assert_uint_ge(s->size, sizeof *s);
        ck_assert_ptr_nonnull(s->name);
    }
}

static void run(jr_sim *sim, res *r)
{
    ck_assert_int_eq(jr_sim_run_until(sim, is_done, r, 30 * SEC), 0);
}

START_TEST(an_old_caller_runs_a_stream)
{
    /* the fixture, from an old sim config whose poison would install an on_step hook */
    guarded gs;
    jr_sim_config poison_sim;
    memset(&poison_sim, 0, sizeof poison_sim);
    poison_sim.on_step = poison_on_step;
    poison_sim.no_digest = 77;
    old_sim_config *sc = guard_init(&gs, sizeof *sc, &poison_sim, sizeof poison_sim);
    jr_sim_config_init_size((jr_sim_config *)(void *)sc, sizeof *sc);
    guard_check(&gs, "jr_sim_config_init_size");
    sc->seed = 7;
    sc->configure = configure;
    jr_sim *sim = NULL;
    ck_assert_int_eq(jr_sim_new((const jr_sim_config *)(const void *)sc, &sim), 0);
    guard_check(&gs, "jr_sim_new");
    jr_node *n0 = jr_sim_node(sim, 0);

    /* the stream, from an old config and an old placement; the poison behind them is an
     * invalid compression, a metadata list and a placement tag no server has */
    static const char *const subjects[] = {"old.>"};
    static const char *const nobody[] = {"no-such-tag"};
    static const jr_kv meta[] = {{"k", "v"}};
    jr_placement poison_pl;
    memset(&poison_pl, 0, sizeof poison_pl);
    poison_pl.tags = nobody;
    poison_pl.ntags = 1;
    guarded gp;
    old_placement *pl = guard_init(&gp, sizeof *pl, &poison_pl, sizeof poison_pl);
    jr_placement_init_size((jr_placement *)(void *)pl, sizeof *pl);
    pl->cluster = "jetraft";
    jr_stream_config poison_cfg;
    memset(&poison_cfg, 0, sizeof poison_cfg);
    poison_cfg.compression = 77;
    poison_cfg.metadata = meta;
    poison_cfg.nmetadata = 1;
    guarded gc;
    old_stream_config *cfg = guard_init(&gc, sizeof *cfg, &poison_cfg, sizeof poison_cfg);
    jr_stream_config_init_size((jr_stream_config *)(void *)cfg, sizeof *cfg);
    cfg->name = "OLD";
    cfg->subjects = subjects;
    cfg->nsubjects = 1;
    cfg->replicas = 3;
    cfg->placement = pl;

    res r;
    uint64_t end = jr_sim_now(sim) + 30 * SEC;
    do { /* until the meta leader is elected and every server registered */
        memset(&r, 0, sizeof r);
        ck_assert_int_eq(
            jr_stream_add(n0, (const jr_stream_config *)(const void *)cfg, admin_cb, &r), 0);
        run(sim, &r);
        if (r.status != 0) jr_sim_run_for(sim, 100 * MS);
    } while (r.status != 0 && jr_sim_now(sim) < end);
    ck_assert_msg(r.status == 0, "add: %s: %s", jr_err_name(r.status), r.msg);
    guard_check(&gc, "jr_stream_add (config)");
    guard_check(&gp, "jr_stream_add (placement)");

    /* publish with old options: the poison expects another stream and another last seq */
    jr_pub_opts poison_po;
    memset(&poison_po, 0, sizeof poison_po);
    poison_po.expected_stream = "WRONG";
    poison_po.expected_last_seq = 12345;
    poison_po.timeout_ms = 1;
    guarded go;
    old_pub_opts *po = guard_init(&go, sizeof *po, &poison_po, sizeof poison_po);
    jr_pub_opts_init_size((jr_pub_opts *)(void *)po, sizeof *po);
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "m%d", i);
        po->msg_id = id;
        memset(&r, 0, sizeof r);
        ck_assert_int_eq(jr_publish(n0, "old.a", NULL, 0, "x", 1,
                                    (const jr_pub_opts *)(const void *)po, pub_cb, &r),
                         0);
        run(sim, &r);
        ck_assert_msg(r.status == 0, "publish: %s: %s", jr_err_name(r.status), r.msg);
        ck_assert_uint_eq(r.seq, (uint64_t)i + 1);
        ck_assert_int_eq(r.duplicate, 0);
    }
    guard_check(&go, "jr_publish");

    /* info, read through the old caller's eyes */
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_stream_info_get(n0, "OLD", info_cb, &r), 0);
    run(sim, &r);
    ck_assert_int_eq(r.status, 0);
    ck_assert(r.info_ok);
    ck_assert_int_eq(r.compression, JR_COMPRESS_NONE); /* not the poison's 77 */
    ck_assert_uint_eq(r.nmetadata, 0);                 /* not the poison's list */
    ck_assert_uint_eq(r.ntags, 0);                     /* not the poison's tag */
    ck_assert_int_eq(r.replicas, 3);
    ck_assert_uint_eq(r.msgs, 3);
    ck_assert_uint_eq(r.nreplicas, 2);

    /* the server report: an array of pointers to structs with a size */
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(jr_meta_info_get(n0, meta_cb, &r), 0);
    run(sim, &r);
    ck_assert_int_eq(r.status, 0);
    ck_assert_uint_eq(r.nservers, 3);

    /* purge with old options: the poison would keep one message */
    jr_purge_opts poison_pu;
    memset(&poison_pu, 0, sizeof poison_pu);
    poison_pu.keep = 1;
    guarded gu;
    old_purge_opts *pu = guard_init(&gu, sizeof *pu, &poison_pu, sizeof poison_pu);
    jr_purge_opts_init_size((jr_purge_opts *)(void *)pu, sizeof *pu);
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(
        jr_stream_purge(n0, "OLD", (const jr_purge_opts *)(const void *)pu, purge_cb, &r), 0);
    run(sim, &r);
    ck_assert_msg(r.status == 0, "purge: %s", r.msg);
    ck_assert_uint_eq(r.purged, 3);
    guard_check(&gu, "jr_stream_purge");

    /* status structs the library fills: only the old size, which it reports back */
    guarded gn;
    old_node_stats *ns = guard_init(&gn, sizeof *ns, NULL, 0);
    ns->size = sizeof *ns;
    ck_assert_int_eq(jr_node_stats_get(n0, (jr_node_stats *)(void *)ns), 0);
    guard_check(&gn, "jr_node_stats_get");
    ck_assert_uint_eq(ns->size, sizeof *ns);
    ck_assert_uint_gt(ns->frames_sent, 0);

    ck_assert_int_eq(g_on_step_called, 0);
    jr_sim_free(sim);
}
END_TEST

/* A raw group's status and floor with old sizes. */
static void nop_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    (void)ctx;
    (void)index;
    (void)data;
    (void)len;
}

static int has_leader(void *arg, jr_sim *sim)
{
    jr_group **g = arg;
    for (unsigned i = 0; i < jr_sim_size(sim); i++) {
        jr_group_status st = {.size = sizeof st};
        if (g[i] && jr_group_status_get(g[i], &st) == 0 && st.role == JR_LEADER) return 1;
    }
    return 0;
}

START_TEST(an_old_caller_reads_group_status)
{
    jr_sim_config sc;
    jr_sim_config_init(&sc);
    jr_sim *sim = NULL;
    ck_assert_int_eq(jr_sim_new(&sc, &sim), 0);
    static const char *const voters[] = {"n0", "n1", "n2"};
    jr_fsm fsm = {JR_FSM_VERSION, NULL, nop_apply, NULL, NULL};
    jr_group *g[3] = {NULL, NULL, NULL};
    for (unsigned i = 0; i < 3; i++) {
        /* an old group config: it ends at fsm (no snapshot_entries, no join floor); the poison
         * behind it is a join floor that would be refused (an index without its term) */
        jr_group_floor bad = {sizeof bad, 5, 0, 9};
        jr_group_config poison;
        memset(&poison, 0, sizeof poison);
        poison.join = &bad;
        size_t osz = offsetof(jr_group_config, fsm) + sizeof(void *);
        guarded gg;
        jr_group_config *gc = guard_init(&gg, osz, &poison, sizeof poison);
        jr_group_config_init_size(gc, osz);
        guard_check(&gg, "jr_group_config_init_size");
        gc->id = 3;
        gc->voters = voters;
        gc->nvoters = 3;
        gc->fsm = &fsm;
        ck_assert_int_eq(jr_group_open(jr_sim_node(sim, i), gc, &g[i]), 0);
        guard_check(&gg, "jr_group_open");
    }
    ck_assert_int_eq(jr_sim_run_until(sim, has_leader, g, 10 * SEC), 0);
    for (unsigned i = 0; i < 3; i++) {
        guarded gs;
        old_group_status *st = guard_init(&gs, sizeof *st, NULL, 0);
        st->size = sizeof *st;
        ck_assert_int_eq(jr_group_status_get(g[i], (jr_group_status *)(void *)st), 0);
        guard_check(&gs, "jr_group_status_get");
        ck_assert_uint_eq(st->size, sizeof *st);
        ck_assert_uint_eq(st->id, 3);
        /* a peer status that ends before `damaged` */
        size_t psz = offsetof(jr_peer_status, last_seen_ns) + sizeof(uint64_t);
        jr_peer_status *ps = guard_init(&gs, psz, NULL, 0);
        ps->size = psz;
        ck_assert_int_eq(jr_group_peer(g[i], 0, ps), 0);
        guard_check(&gs, "jr_group_peer");
        ck_assert_uint_eq(ps->size, psz);
        /* a floor that ends before commit_index (on the leader only) */
        if (st->role == JR_LEADER) {
            size_t fsz = offsetof(jr_group_floor, commit_term) + sizeof(uint64_t);
            jr_group_floor *fl = guard_init(&gs, fsz, NULL, 0);
            fl->size = fsz;
            ck_assert_int_eq(jr_group_floor_get(g[i], fl), 0);
            guard_check(&gs, "jr_group_floor_get");
            ck_assert_uint_eq(fl->size, fsz);
            ck_assert_uint_ge(fl->term, 1);
        }
    }
    jr_sim_free(sim);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("old_caller");
    TCase *tc = tcase_create("old_caller");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, old_layouts_are_prefixes);
    tcase_add_test(tc, init_writes_only_the_old_size);
    tcase_add_test(tc, an_old_caller_runs_a_stream);
    tcase_add_test(tc, an_old_caller_reads_group_status);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
