/* Evacuation and cancellation in the meta state (meta op PEER_MOVE, meta_move.h): the op
 * round-trips canonically and is decoded strictly; apply follows the rules (not found, not a
 * member, busy, the peer set the leader chose, origin recorded once and kept, cancel back to
 * it, nothing to cancel); consumers; the snapshot carries the origins (version 6) and still
 * reads version 4. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_move.h"
#include "meta_test.h"
#include "util/checksum.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *subj[] = {"orders.>"};
static const char *p123[] = {"n1", "n2", "n3"};

static jr_stream_config scfg(int replicas)
{
    jr_stream_config c;
    jr_stream_config_init(&c);
    c.name = "ORDERS";
    c.subjects = subj;
    c.nsubjects = 1;
    c.replicas = replicas;
    return c;
}

static jr__meta_op op_move(const char *stream, const char *consumer, int kind, const char *peer,
                           const char *const *peers, size_t npeers)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_PEER_MOVE;
    op.stream = stream;
    op.consumer = consumer;
    op.action = (uint8_t)kind;
    op.peer = peer;
    op.peers = peers;
    op.npeers = npeers;
    return op;
}

static uint64_t g_index;

/* Servers n1..n5, and ORDERS (R3 on n1, n2, n3), in a state with allocator alloc (NULL: the
 * default). */
static void setup_with(jr__meta_state *st, const jr_allocator *alloc)
{
    static const char *names[] = {"n1", "n2", "n3", "n4", "n5"};
    jr__meta_state_init(st, alloc, 1000);
    jr__meta_result res;
    g_index = 0;
    for (size_t i = 0; i < N(names); i++) {
        jr__meta_op op = mt_server_op(names[i]);
        ck_assert_int_eq(mt_apply(st, ++g_index, &op, &res), 0);
    }
    jr_stream_config c = scfg(3);
    jr__meta_op op = mt_stream_op(JR__META_STREAM_ADD, &c, p123, 3);
    ck_assert_int_eq(mt_apply(st, ++g_index, &op, &res), 0);
}

static void setup(jr__meta_state *st)
{
    setup_with(st, NULL);
}

static int converge(jr__meta_state *st, uint64_t group, uint64_t peers_at)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_STREAM_CONVERGED;
    op.stream = "ORDERS";
    op.group = group;
    op.peers_at = peers_at;
    jr__meta_result res;
    return mt_apply(st, ++g_index, &op, &res);
}

static int same_set(const char *const *a, size_t na, const char *const *b, size_t nb)
{
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++) {
        int in = 0;
        for (size_t k = 0; k < nb; k++) in |= strcmp(a[i], b[k]) == 0;
        if (!in) return 0;
    }
    return 1;
}

static void snap(const jr__meta_state *st, jr__buf *b)
{
    jr__buf_reset(b);
    ck_assert_int_eq(jr__meta_snapshot(st, b), 0);
}

/* a and b hold the same bytes. */
static void assert_same_bytes(const jr__buf *a, const jr__buf *b)
{
    ck_assert_uint_eq(a->len, b->len);
    ck_assert(memcmp(a->data, b->data, a->len) == 0);
}

/* Snapshot a (version 7) without its last `cut` bytes, marked `version` and resealed, restores,
 * and the restored state's snapshot is a again. */
static void restores_as_version(const jr__buf *a, size_t cut, uint8_t version)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__buf_put(&b, a->data, a->len - cut);
    b.data[4] = version;
    jr__buf_u64(&b, jr__xxh3(b.data, b.len));
    jr__meta_state r;
    jr__meta_state_init(&r, NULL, 1);
    ck_assert_int_eq(jr__meta_restore(&r, b.data, b.len), 0);
    jr__buf c;
    jr__buf_init(&c, NULL);
    snap(&r, &c);
    assert_same_bytes(&c, a);
    jr__buf_free(&c);
    jr__buf_free(&b);
    jr__meta_state_free(&r);
}

START_TEST(peer_move_round_trips_canonically_and_decodes_strictly)
{
    static const char *np[] = {"n1", "n4", "n3"};
    jr__meta_op ops[] = {
        op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n2", np, 3),
        op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n2", NULL, 0),
        op_move("ORDERS", "NEW", JR__META_MOVE_EVACUATE, "n2", np, 2),
        op_move("ORDERS", NULL, JR__META_MOVE_CANCEL, NULL, NULL, 0),
        op_move("ORDERS", "NEW", JR__META_MOVE_CANCEL, NULL, NULL, 0),
    };
    ops[1].request_id = 77;
    ops[1].origin = "n5";
    for (size_t i = 0; i < N(ops); i++) {
        jr__buf a, b;
        jr__buf_init(&a, NULL);
        jr__buf_init(&b, NULL);
        ck_assert_int_eq(jr__meta_op_encode(&ops[i], &a), 0);
        ck_assert_uint_eq(a.data[1], JR__META_PEER_MOVE);
        jr__meta_op d;
        ck_assert_int_eq(jr__meta_op_decode(a.data, a.len, NULL, &d), 0);
        ck_assert_int_eq(d.type, JR__META_PEER_MOVE);
        ck_assert_int_eq(d.action, ops[i].action);
        ck_assert_str_eq(d.stream, "ORDERS");
        ck_assert_uint_eq(d.npeers, ops[i].npeers);
        ck_assert_int_eq(jr__meta_op_encode(&d, &b), 0);
        assert_same_bytes(&a, &b);
        /* every truncation (resealed) is refused */
        for (size_t cut = 2; cut + 8 < a.len; cut++) {
            uint8_t t[512];
            memcpy(t, a.data, cut);
            jr__put_u64(t + cut, jr__xxh3(t, cut));
            jr__meta_op x;
            ck_assert_int_eq(jr__meta_op_decode(t, cut + 8, NULL, &x), JR_ECORRUPT);
        }
        jr__meta_op_free(&d);
        jr__buf_free(&a);
        jr__buf_free(&b);
    }
    /* the encoder refuses what the decoder would */
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__meta_op bad[] = {
        op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, NULL, NULL, 0),
        op_move("ORDERS", NULL, JR__META_MOVE_CANCEL, "n2", NULL, 0),
        op_move("ORDERS", NULL, JR__META_MOVE_CANCEL, NULL, np, 3),
        op_move("ORDERS", NULL, 9, "n2", NULL, 0),
        op_move(NULL, NULL, JR__META_MOVE_CANCEL, NULL, NULL, 0),
        op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "bad name", NULL, 0),
    };
    for (size_t i = 0; i < N(bad); i++)
        ck_assert_int_eq(jr__meta_op_encode(&bad[i], &b), JR_EINVAL);
    /* the reserved types around it are unknown to this build */
    jr__meta_op ok = op_move("ORDERS", NULL, JR__META_MOVE_CANCEL, NULL, NULL, 0);
    ck_assert_int_eq(jr__meta_op_encode(&ok, &b), 0);
    for (uint8_t t = JR__META_OP_MAX + 1; t <= JR__META_OP_MAX + 3; t++) {
        b.data[1] = t;
        jr__put_u64(b.data + b.len - 8, jr__xxh3(b.data, b.len - 8));
        jr__meta_op x;
        ck_assert_int_eq(jr__meta_op_decode(b.data, b.len, NULL, &x), JR_EVERSION);
    }
    jr__buf_free(&b);
}
END_TEST

START_TEST(evacuate_and_cancel_follow_the_rules)
{
    jr__meta_state st;
    setup(&st);
    const jr__meta_stream *s = jr__meta_stream_find(&st, "ORDERS");
    uint64_t group = s->group;
    jr__meta_result res;
    static const char *moved[] = {"n1", "n4", "n3"};
    static const char *two_new[] = {"n1", "n4", "n5"};
    static const char *unknown[] = {"n1", "n9", "n3"};
    jr__meta_op op = op_move("NOPE", NULL, JR__META_MOVE_EVACUATE, "n2", moved, 3);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_ENOTFOUND);
    op = op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n4", moved, 3);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_ENOTMEMBER);
    ck_assert_str_eq(res.msg, "peer not a member");
    op = op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n2", two_new, 3);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_EINVAL);
    op = op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n2", unknown, 3);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_EINVAL);
    op = op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n2", NULL, 0);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_EINVAL); /* a request, not an op */
    op = op_move("ORDERS", NULL, JR__META_MOVE_CANCEL, NULL, NULL, 0);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_ENOCHANGE);
    ck_assert_str_eq(res.msg, "stream reconfiguration not in progress");
    s = jr__meta_stream_find(&st, "ORDERS");
    ck_assert(!jr__meta_stream_busy(s));
    ck_assert_ptr_null(s->origin);
    /* the check (what the leader runs on a request) agrees without peers */
    op = op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n2", NULL, 0);
    ck_assert_int_eq(jr__meta_check(&st, &op, &res), 0);
    ck_assert_int_eq(res.status, 0);
    /* evacuate n2 for n4 */
    op = op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n2", moved, 3);
    uint64_t at = ++g_index;
    ck_assert_int_eq(mt_apply(&st, at, &op, &res), 0);
    ck_assert(res.changed);
    s = jr__meta_stream_find(&st, "ORDERS");
    ck_assert(jr__meta_stream_busy(s));
    ck_assert_uint_eq(s->peers_at, at);
    ck_assert(same_set(s->peers, s->npeers, moved, 3));
    ck_assert_ptr_nonnull(s->origin);
    ck_assert(same_set(s->origin->peers, s->origin->npeers, p123, 3));
    ck_assert_int_eq(s->cfg->c.replicas, 3);
    /* a second one while it runs: busy; a grow too */
    op = op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n1", NULL, 0);
    ck_assert_int_eq(jr__meta_check(&st, &op, &res), 0);
    ck_assert_int_eq(res.status, JR_EBUSY);
    ck_assert_ptr_nonnull(strstr(res.msg, "cluster member change is in progress"));
    /* cancel: back to the origin, the origin dropped, converging again */
    op = op_move("ORDERS", NULL, JR__META_MOVE_CANCEL, NULL, NULL, 0);
    uint64_t cat = ++g_index;
    ck_assert_int_eq(mt_apply(&st, cat, &op, &res), 0);
    s = jr__meta_stream_find(&st, "ORDERS");
    ck_assert(same_set(s->peers, s->npeers, p123, 3));
    ck_assert(jr__meta_stream_busy(s));
    ck_assert_uint_eq(s->peers_at, cat);
    ck_assert_ptr_null(s->origin);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_ENOCHANGE);
    /* a stale report of the cancelled change is refused; the cancel's converges */
    ck_assert_int_eq(converge(&st, group, at), JR_ERANGE);
    ck_assert_int_eq(converge(&st, group, cat), 0);
    s = jr__meta_stream_find(&st, "ORDERS");
    ck_assert(!jr__meta_stream_busy(s));
    /* evacuate again and converge: the origin goes with the change */
    op = op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n2", moved, 3);
    at = ++g_index;
    ck_assert_int_eq(mt_apply(&st, at, &op, &res), 0);
    ck_assert_int_eq(converge(&st, group, at), 0);
    s = jr__meta_stream_find(&st, "ORDERS");
    ck_assert_ptr_null(s->origin);
    ck_assert(same_set(s->peers, s->npeers, moved, 3));
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(cancelling_a_grow_restores_the_replica_count_and_keeps_the_rest)
{
    jr__meta_state st;
    setup(&st);
    jr__meta_result res;
    static const char *p1234[] = {"n1", "n2", "n3", "n4"};
    jr_stream_config c = scfg(4);
    c.max_msgs = 500; /* another change in the same update stays */
    jr__meta_op op = mt_stream_op(JR__META_STREAM_UPDATE, &c, p1234, 4);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), 0);
    const jr__meta_stream *s = jr__meta_stream_find(&st, "ORDERS");
    ck_assert_ptr_nonnull(s->origin);
    ck_assert_int_eq(s->origin->cfg->c.replicas, 3);
    jr__meta_op cancel = op_move("ORDERS", NULL, JR__META_MOVE_CANCEL, NULL, NULL, 0);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &cancel, &res), 0);
    s = jr__meta_stream_find(&st, "ORDERS");
    ck_assert_int_eq(s->cfg->c.replicas, 3);
    ck_assert_int_eq(s->cfg->c.max_msgs, 500);
    ck_assert(same_set(s->peers, s->npeers, p123, 3));
    jr__meta_state_free(&st);
}
END_TEST

static void add_consumer(jr__meta_state *st, const char *name, int replicas,
                         const char *const *peers, size_t np)
{
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.name = name;
    cc.durable_name = name;
    cc.num_replicas = replicas;
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_CONSUMER_ADD;
    op.stream = "ORDERS";
    op.consumer_config = &cc;
    op.peers = peers;
    op.npeers = np;
    op.created_ns = 1;
    jr__meta_result res;
    ck_assert_int_eq(mt_apply(st, ++g_index, &op, &res), 0);
}

START_TEST(a_consumer_moves_within_its_stream_and_follows_a_stream_move)
{
    jr__meta_state st;
    setup(&st);
    static const char *on1[] = {"n1"};
    static const char *on2[] = {"n2"};
    static const char *on4[] = {"n4"};
    add_consumer(&st, "ONE", 1, on1, 1);
    jr__meta_result res;
    jr__meta_op op = op_move("ORDERS", "NOPE", JR__META_MOVE_EVACUATE, "n1", on2, 1);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_ENOTFOUND);
    op = op_move("NOPE", "ONE", JR__META_MOVE_EVACUATE, "n1", on2, 1);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_ENOSTREAM);
    op = op_move("ORDERS", "ONE", JR__META_MOVE_EVACUATE, "n2", on4, 1);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_ENOTMEMBER);
    op = op_move("ORDERS", "ONE", JR__META_MOVE_EVACUATE, "n1", on4, 1); /* not a stream peer */
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_EINVAL);
    op = op_move("ORDERS", "ONE", JR__META_MOVE_EVACUATE, "n1", on2, 1);
    uint64_t at = ++g_index;
    ck_assert_int_eq(mt_apply(&st, at, &op, &res), 0);
    const jr__meta_stream *s = jr__meta_stream_find(&st, "ORDERS");
    const jr__meta_consumer *c = jr__meta_consumer_find(s, "ONE");
    ck_assert_str_eq(c->peers[0], "n2");
    ck_assert(jr__meta_consumer_busy(c));
    ck_assert_ptr_nonnull(c->origin);
    ck_assert_str_eq(c->origin->peers[0], "n1");
    ck_assert(!jr__meta_stream_busy(s));
    /* another move of the consumer while it moves: busy */
    static const char *moved[] = {"n4", "n2", "n3"};
    op = op_move("ORDERS", "ONE", JR__META_MOVE_EVACUATE, "n2", NULL, 0);
    ck_assert_int_eq(jr__meta_check(&st, &op, &res), 0);
    ck_assert_int_eq(res.status, JR_EBUSY);
    /* cancel the consumer's move: back on n1 */
    op = op_move("ORDERS", "ONE", JR__META_MOVE_CANCEL, NULL, NULL, 0);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), 0);
    c = jr__meta_consumer_find(s, "ONE");
    ck_assert_str_eq(c->peers[0], "n1");
    ck_assert_ptr_null(c->origin);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), JR_ENOCHANGE);
    ck_assert_str_eq(res.msg, "consumer reconfiguration not in progress");
    /* the stream moves off n1: the consumer follows (to the new peer) */
    op = op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n1", moved, 3);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), 0);
    s = jr__meta_stream_find(&st, "ORDERS");
    c = jr__meta_consumer_find(s, "ONE");
    ck_assert(jr__meta_stream_has_peer(s, c->peers[0]));
    ck_assert_str_ne(c->peers[0], "n1");
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(the_snapshot_carries_the_origins_and_reads_version_4)
{
    jr__meta_state st;
    setup(&st);
    static const char *on1[] = {"n1"};
    static const char *on3[] = {"n3"};
    static const char *moved[] = {"n1", "n2", "n4"};
    add_consumer(&st, "A", 1, on1, 1);
    add_consumer(&st, "B", 3, p123, 3);
    jr__meta_result res;
    jr__buf a, b;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    /* without a move: no origins (an empty section) */
    snap(&st, &a);
    ck_assert_uint_eq(a.data[4], 7);
    ck_assert_uint_eq(a.data[a.len - 11], 0); /* no removed servers */
    ck_assert_uint_eq(a.data[a.len - 10], 0); /* no origins */
    ck_assert_uint_eq(a.data[a.len - 9], 0);  /* no draining servers */
    /* version 4: the same without the removed servers, the origins and the draining servers */
    restores_as_version(&a, 11, 4);
    /* version 5: the same without the origins and the draining servers */
    restores_as_version(&a, 10, 5);
    /* version 6: the same without the draining servers */
    restores_as_version(&a, 9, 6);
    /* a stream move (its consumers follow, recording origins) and a consumer move */
    jr__meta_op op = op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n3", moved, 3);
    ck_assert_int_eq(mt_apply(&st, ++g_index, &op, &res), 0);
    snap(&st, &a);
    jr__meta_state r;
    jr__meta_state_init(&r, NULL, 1);
    ck_assert_int_eq(jr__meta_restore(&r, a.data, a.len), 0);
    snap(&r, &b);
    assert_same_bytes(&a, &b);
    const jr__meta_stream *s = jr__meta_stream_find(&r, "ORDERS");
    ck_assert_ptr_nonnull(s->origin);
    ck_assert(same_set(s->origin->peers, s->origin->npeers, p123, 3));
    const jr__meta_consumer *cb = jr__meta_consumer_find(s, "B");
    ck_assert_ptr_nonnull(cb->origin);
    ck_assert(same_set(cb->origin->peers, cb->origin->npeers, p123, 3));
    /* the restored state cancels like the original */
    op = op_move("ORDERS", NULL, JR__META_MOVE_CANCEL, NULL, NULL, 0);
    uint64_t idx = r.applied + 1;
    jr__meta_result r1, r2;
    ck_assert_int_eq(jr__meta_restore(&r, a.data, a.len), 0);
    jr__buf e;
    jr__buf_init(&e, NULL);
    ck_assert_int_eq(jr__meta_op_encode(&op, &e), 0);
    ck_assert_int_eq(jr__meta_apply(&r, idx, e.data, e.len, &r1), 0);
    ck_assert_int_eq(jr__meta_apply(&st, idx, e.data, e.len, &r2), 0);
    ck_assert_int_eq(r1.status, 0);
    ck_assert_int_eq(r2.status, 0);
    snap(&st, &a);
    snap(&r, &b);
    assert_same_bytes(&a, &b);
    s = jr__meta_stream_find(&r, "ORDERS");
    ck_assert(same_set(s->peers, s->npeers, p123, 3));
    ck_assert_str_eq(jr__meta_consumer_find(s, "B")->peers[0], "n1");
    (void)on3;
    /* strictness: an origin for a stream that is not moving is refused */
    {
        jr__meta_state q;
        setup(&q);
        jr__buf x;
        jr__buf_init(&x, NULL);
        snap(&q, &x);
        /* replace the empty section with one origin of ORDERS (stable): corrupt */
        jr__buf y;
        jr__buf_init(&y, NULL);
        jr__buf_put(&y, x.data, x.len - 9);
        jr__buf_varint(&y, 1);
        jr__meta_put_str(&y, "ORDERS");
        jr__meta_put_str(&y, "");
        jr__buf cfg;
        jr__buf_init(&cfg, NULL);
        ck_assert_int_eq(
            jr__stream_config_encode(&jr__meta_stream_find(&q, "ORDERS")->cfg->c, &cfg), 0);
        jr__buf_bytes(&y, cfg.data, cfg.len);
        jr__buf_varint(&y, 3);
        for (int i = 0; i < 3; i++) jr__meta_put_str(&y, p123[i]);
        jr__buf_u64(&y, jr__xxh3(y.data, y.len));
        jr__meta_state z;
        jr__meta_state_init(&z, NULL, 1);
        ck_assert_int_eq(jr__meta_restore(&z, y.data, y.len), JR_ECORRUPT);
        jr__meta_state_free(&z);
        jr__buf_free(&cfg);
        jr__buf_free(&x);
        jr__buf_free(&y);
        jr__meta_state_free(&q);
    }
    jr__buf_free(&e);
    jr__buf_free(&a);
    jr__buf_free(&b);
    jr__meta_state_free(&r);
    jr__meta_state_free(&st);
}
END_TEST

/* Random moves, cancels, convergence reports, updates and consumers on several streams, applied
 * by two replicas while a third restores from the first's snapshot every 40 ops: the results
 * and the snapshots (with their origins) stay byte-identical. */
START_TEST(random_moves_keep_replicas_and_restored_snapshots_identical)
{
    static const char *servers[] = {"n1", "n2", "n3", "n4", "n5"};
    static const char *streams[] = {"A", "B", "C"};
    static const char *consumers[] = {"X", "Y"};
    static const char *sub[3][1] = {{"a.>"}, {"b.>"}, {"c.>"}};
    jr__meta_state st[3];
    for (int i = 0; i < 3; i++) jr__meta_state_init(&st[i], NULL, 1000);
    const char *env = getenv("JR_TEST_SEED");
    uint64_t index = 0, seed = env ? strtoull(env, NULL, 0) : 99173, first_seed = seed;
    jr__buf log, sa, sb;
    jr__buf_init(&log, NULL);
    jr__buf_init(&sa, NULL);
    jr__buf_init(&sb, NULL);
    int applied = 0, refused = 0, moves = 0, cancels = 0;
    for (int step = 0; step < 4000; step++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t x = seed >> 11;
        jr__meta_op op;
        memset(&op, 0, sizeof op);
        jr_stream_config c;
        jr_consumer_config cc;
        const char *peers[5];
        const char *name = streams[x % 3];
        const jr__meta_stream *s = jr__meta_stream_find(&st[0], name);
        int kind = step < 5 ? 0 : (int)((x >> 8) % 9);
        if (kind == 0 || (!s && kind < 8)) {
            if (step < 5) {
                op = mt_server_op(servers[step]);
            } else {
                jr_stream_config_init(&c);
                c.name = name;
                c.subjects = sub[x % 3];
                c.nsubjects = 1;
                c.replicas = 1 + (int)((x >> 12) % 3);
                for (int i = 0; i < c.replicas; i++) peers[i] = servers[(x + (uint64_t)i) % 5];
                op = mt_stream_op(JR__META_STREAM_ADD, &c, peers, (size_t)c.replicas);
            }
        } else if (kind <= 3) { /* evacuate a peer of the stream or of a consumer */
            const jr__meta_consumer *mc =
                (x >> 20) % 2 && s->nconsumers ? s->consumers[(x >> 21) % s->nconsumers] : NULL;
            const char *const *cur = mc ? mc->peers : s->peers;
            size_t n = mc ? mc->npeers : s->npeers;
            const char *gone = cur[(x >> 16) % n];
            const char *pick = servers[(x >> 24) % 5];
            for (size_t i = 0; i < n; i++) peers[i] = cur[i] == gone ? pick : cur[i];
            op = op_move(name, mc ? mc->name : NULL, JR__META_MOVE_EVACUATE, gone, peers, n);
            moves++;
        } else if (kind == 4) {
            const jr__meta_consumer *mc =
                (x >> 20) % 2 && s->nconsumers ? s->consumers[(x >> 21) % s->nconsumers] : NULL;
            op = op_move(name, mc ? mc->name : NULL, JR__META_MOVE_CANCEL, NULL, NULL, 0);
            cancels++;
        } else if (kind <= 6) { /* the group (or a consumer's) reports convergence */
            op.type = JR__META_STREAM_CONVERGED;
            op.stream = name;
            const jr__meta_consumer *mc = (x >> 20) % 2 && s->nconsumers ? s->consumers[0] : NULL;
            op.group = mc ? mc->group : s->group;
            op.peers_at = mc ? mc->peers_at : s->peers_at;
        } else if (kind == 7) { /* a consumer on some of the stream's peers */
            jr_consumer_config_init(&cc);
            cc.name = cc.durable_name = consumers[(x >> 14) % 2];
            cc.num_replicas = 1 + (int)((x >> 15) % s->npeers);
            for (int i = 0; i < cc.num_replicas; i++) peers[i] = s->peers[i];
            op.type = JR__META_CONSUMER_ADD;
            op.stream = name;
            op.consumer_config = &cc;
            op.peers = peers;
            op.npeers = (size_t)cc.num_replicas;
            op.created_ns = 1;
        } else { /* a grow or shrink by one */
            jr_stream_config_init(&c);
            c.name = name;
            c.subjects = sub[x % 3];
            c.nsubjects = 1;
            int r = s ? (int)s->npeers : 1;
            c.replicas = (x >> 13) % 2 && r < 5 ? r + 1 : (r > 1 ? r - 1 : 2);
            size_t k = 0;
            for (size_t i = 0; s && i < s->npeers && k < (size_t)c.replicas; i++)
                peers[k++] = s->peers[i];
            for (size_t i = 0; i < 5 && k < (size_t)c.replicas; i++) {
                int in = 0;
                for (size_t j = 0; j < k; j++) in |= strcmp(peers[j], servers[i]) == 0;
                if (!in) peers[k++] = servers[i];
            }
            op = mt_stream_op(s ? JR__META_STREAM_UPDATE : JR__META_STREAM_ADD, &c, peers, k);
        }
        jr__buf_reset(&log);
        if (jr__meta_op_encode(&op, &log) != 0) continue;
        index++;
        jr__meta_result r0, r1, r2;
        ck_assert_int_eq(jr__meta_apply(&st[0], index, log.data, log.len, &r0), 0);
        ck_assert_int_eq(jr__meta_apply(&st[1], index, log.data, log.len, &r1), 0);
        ck_assert_int_eq(jr__meta_apply(&st[2], index, log.data, log.len, &r2), 0);
        ck_assert_msg(
            r0.status == r1.status && r0.status == r2.status && strcmp(r0.msg, r2.msg) == 0,
            "step %d: %d/%d/%d %s / %s", step, r0.status, r1.status, r2.status, r0.msg, r2.msg);
        applied += r0.status == 0;
        refused += r0.status != 0;
        for (size_t i = 0; i < st[0].nstreams; i++) {
            const jr__meta_stream *q = st[0].streams[i];
            for (size_t j = 0; j < q->nconsumers; j++)
                ck_assert_msg(q->consumers[j]->npeers ==
                                  (size_t)jr__meta_consumer_replicas(q, &q->consumers[j]->cfg->c),
                              "step %d: consumer %s/%s has %zu peers, wants %d (op type %d kind %d "
                              "consumer %s status %d)",
                              step, q->name, q->consumers[j]->name, q->consumers[j]->npeers,
                              jr__meta_consumer_replicas(q, &q->consumers[j]->cfg->c), op.type,
                              op.action, op.consumer ? op.consumer : "-", r0.status);
            ck_assert_msg(!q->origin || jr__meta_stream_busy(q),
                          "step %d: stream %s has an origin while stable (op type %d kind %d "
                          "status %d)",
                          step, q->name, op.type, op.action, r0.status);
        }
        if (step % 40 == 0 || step == 3999) {
            snap(&st[0], &sa);
            snap(&st[1], &sb);
            assert_same_bytes(&sa, &sb);
            jr__meta_state_free(&st[2]);
            jr__meta_state_init(&st[2], NULL, 1);
            ck_assert_msg(jr__meta_restore(&st[2], sa.data, sa.len) == 0,
                          "JR_TEST_SEED=%llu step %d: the snapshot does not restore",
                          (unsigned long long)first_seed, step);
            snap(&st[2], &sb);
            ck_assert_msg(sa.len == sb.len && memcmp(sa.data, sb.data, sa.len) == 0,
                          "step %d: the restored snapshot differs", step);
        }
    }
    ck_assert_int_gt(moves, 100);
    ck_assert_int_gt(cancels, 100);
    ck_assert_int_gt(applied, 300);
    ck_assert_int_gt(refused, 100);
    for (int i = 0; i < 3; i++) jr__meta_state_free(&st[i]);
    jr__buf_free(&log);
    jr__buf_free(&sa);
    jr__buf_free(&sb);
}
END_TEST

/* Every PEER_MOVE (stream and consumer, evacuate and cancel, with consumers following) fails
 * its 1st, 2nd, ... allocation with JR_ENOMEM and the state exactly as before (the snapshot,
 * origins included, is unchanged), then applies. */
START_TEST(allocation_failures_never_half_apply_a_move)
{
    mt_faulty f = {-1};
    jr_allocator fa = mt_faulty_allocator(&f);
    jr__meta_state st;
    setup_with(&st, &fa);
    static const char *on1[] = {"n1"}, *on2[] = {"n2"};
    static const char *moved[] = {"n1", "n2", "n4"};
    static const char *moved2[] = {"n5", "n2", "n4"};
    jr__meta_result res;
    add_consumer(&st, "A", 1, on1, 1);
    add_consumer(&st, "B", 3, p123, 3);
    uint64_t group = jr__meta_stream_find(&st, "ORDERS")->group;
    jr__meta_op script[] = {
        op_move("ORDERS", "A", JR__META_MOVE_EVACUATE, "n1", on2, 1),
        op_move("ORDERS", "A", JR__META_MOVE_CANCEL, NULL, NULL, 0),
        op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n3", moved, 3),
        op_move("ORDERS", NULL, JR__META_MOVE_CANCEL, NULL, NULL, 0),
        op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n3", moved, 3),
    };
    jr__buf enc;
    jr__buf_init(&enc, NULL);
    long failures = 0;
    for (size_t k = 0; k < N(script) + 1; k++) {
        jr__meta_op op = k < N(script)
                             ? script[k]
                             : op_move("ORDERS", NULL, JR__META_MOVE_EVACUATE, "n1", moved2, 3);
        const jr__meta_stream *s = jr__meta_stream_find(&st, "ORDERS");
        if (op.action == JR__META_MOVE_EVACUATE && !op.consumer && jr__meta_stream_busy(s))
            ck_assert_int_eq(converge(&st, group, s->peers_at), 0); /* the previous one is over */
        jr__buf_reset(&enc);
        ck_assert_int_eq(jr__meta_op_encode(&op, &enc), 0);
        failures += mt_apply_failing_each_allocation(&st, &f, ++g_index, &enc, &res, k);
        ck_assert_msg(res.status == 0, "op %zu: %s", k, res.msg);
        ck_assert_int_eq(res.changed, 1);
    }
    ck_assert_int_gt(failures, 10);
    jr__meta_state_free(&st);
    jr__buf_free(&enc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("meta_move");
    TCase *tc = tcase_create("move");
    tcase_add_test(tc, peer_move_round_trips_canonically_and_decodes_strictly);
    tcase_add_test(tc, evacuate_and_cancel_follow_the_rules);
    tcase_add_test(tc, cancelling_a_grow_restores_the_replica_count_and_keeps_the_rest);
    tcase_add_test(tc, a_consumer_moves_within_its_stream_and_follows_a_stream_move);
    tcase_add_test(tc, the_snapshot_carries_the_origins_and_reads_version_4);
    tcase_add_test(tc, random_moves_keep_replicas_and_restored_snapshots_identical);
    tcase_add_test(tc, allocation_failures_never_half_apply_a_move);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
