/*
 * Real node frames over secure links: three servers with streams, each with its own memfs and
 * a shared manual clock, one connection per server pair (the lower-numbered server dials), each
 * a link pair over in-memory byte pipes that deliver in random pieces. Every frame a node sends
 * is sealed by its link and every frame a node receives was opened by its link, with the link's
 * authenticated peer name as `from`. A stream R3 is created, published to on every server and
 * read back on others; a record altered on the wire
 * kills the connection (JR_EAUTH), the host reconnects with a fresh handshake, and the cluster
 * goes on.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "link_test.h"
#include "vfs/memfs.h"

#define MS 1000000ull
#define MAX_FRAME (1u << 20)
#define N 3
#define NCONN (N * (N - 1) / 2)

static const char *const srv_names[] = {"a", "b", "c"};

typedef struct net net;

typedef struct srv {
    net *n;
    int i;
    jr_host host;
    jr_vfs *vfs;
    jr_node *node;
} srv;

/* One connection between servers srv[0] (which dials) and srv[1] (which accepts): end[k] is
 * server srv[k]'s link, wire[k] the bytes it wrote that the other end has not read. */
typedef struct conn {
    int srv[2];
    jr_link *end[2];
    t_bytes wire[2];
} conn;

struct net {
    uint64_t now;
    uint32_t rng;
    t_keys keys;
    srv s[N];
    conn c[NCONN];
    uint8_t *scratch;
    uint64_t sealed, opened, refused_sends, link_errors, handshakes;
};

static uint32_t rnd(net *n)
{
    n->rng = n->rng * 1103515245u + 12345u;
    return n->rng >> 8;
}

static int srv_index(const char *name)
{
    for (int i = 0; i < N; i++)
        if (strcmp(srv_names[i], name) == 0) return i;
    return -1;
}

/* The connection between servers i and j, and i's side of it. */
static conn *conn_of(net *n, int i, int j, int *side)
{
    for (int k = 0; k < NCONN; k++) {
        conn *c = &n->c[k];
        if ((c->srv[0] == i && c->srv[1] == j) || (c->srv[1] == i && c->srv[0] == j)) {
            *side = c->srv[0] == i ? 0 : 1;
            return c;
        }
    }
    return NULL;
}

static int h_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt)
{
    srv *s = ctx;
    net *n = s->n;
    int side, j = srv_index(to);
    conn *c = j < 0 ? NULL : conn_of(n, s->i, j, &side);
    /* a frame leaves only over an open link that authenticated the server it names */
    const char *peer = c ? jr_link_peer_name(c->end[side]) : NULL;
    if (!peer || strcmp(peer, to) != 0) {
        n->refused_sends++;
        return -1;
    }
    size_t len;
    int rc = jr_link_seal(c->end[side], iov, iovcnt, n->scratch, MAX_FRAME + JR_LINK_FRAME_OVERHEAD,
                          &len);
    ck_assert_int_eq(rc, 0);
    t_bytes_put(&c->wire[side], n->scratch, len);
    n->sealed++;
    return 0;
}

static uint64_t h_now(void *ctx)
{
    return ((srv *)ctx)->n->now;
}

static void connect_links(net *n, conn *c)
{
    jr_link_config cfg;
    t_link_config(&cfg, &n->keys, JR_LINK_DIALER, (size_t)c->srv[0], srv_names[c->srv[1]]);
    cfg.max_frame = MAX_FRAME;
    ck_assert_int_eq(jr_link_new(&cfg, &c->end[0]), 0);
    t_link_config(&cfg, &n->keys, JR_LINK_ACCEPTOR, (size_t)c->srv[1], NULL);
    cfg.max_frame = MAX_FRAME;
    ck_assert_int_eq(jr_link_new(&cfg, &c->end[1]), 0);
    c->wire[0].len = c->wire[1].len = 0;
    n->handshakes++;
}

static void disconnect_links(conn *c)
{
    for (int k = 0; k < 2; k++) {
        jr_link_free(c->end[k]);
        c->end[k] = NULL;
        c->wire[k].len = 0;
    }
}

/* Delivers what side k of c wrote to the other end, in random pieces, handing each frame to
 * that end's node. A link error is what a host sees as a dead connection: it drops both ends
 * and dials again. */
static void deliver(net *n, conn *c, int k)
{
    const void *p;
    size_t len;
    jr_link_pending_out(c->end[k], &p, &len);
    t_bytes_put(&c->wire[k], p, len);
    ck_assert_int_eq(jr_link_out_done(c->end[k], len), 0);
    if (!c->wire[k].len) return;
    t_bytes in = c->wire[k];
    c->wire[k] = (t_bytes){0};
    jr_link *to = c->end[1 - k];
    jr_node *node = n->s[c->srv[1 - k]].node;
    size_t off = 0;
    int rc = 0;
    while (off < in.len && !rc) {
        size_t piece = 1 + rnd(n) % 3000;
        if (piece > in.len - off) piece = in.len - off;
        size_t pos = 0;
        while (pos < piece && !rc) {
            size_t used, flen;
            const void *f;
            rc = jr_link_feed(to, in.data + off + pos, piece - pos, &used, &f, &flen);
            pos += used;
            if (!rc && f) {
                n->opened++;
                ck_assert_int_eq(jr_node_recv(node, jr_link_peer_name(to), f, flen), 0);
            }
        }
        off += pos;
    }
    t_bytes_free(&in);
    if (rc) {
        n->link_errors++;
        disconnect_links(c);
        connect_links(n, c);
    }
}

static int idle(const conn *c)
{
    for (int k = 0; k < 2; k++) {
        const void *p;
        size_t len;
        jr_link_pending_out(c->end[k], &p, &len);
        if (len || c->wire[k].len) return 0;
    }
    return 1;
}

static void pump(net *n)
{
    for (int round = 0; round < 16; round++) {
        int quiet = 1;
        for (int k = 0; k < NCONN; k++) {
            deliver(n, &n->c[k], 0);
            deliver(n, &n->c[k], 1);
        }
        for (int k = 0; k < NCONN; k++) quiet &= idle(&n->c[k]);
        if (quiet) return;
    }
}

static void run_ms(net *n, uint64_t ms)
{
    uint64_t end = n->now + ms * MS;
    while (n->now < end) {
        pump(n);
        for (int i = 0; i < N; i++)
            if (jr_node_deadline(n->s[i].node) <= n->now) jr_node_tick(n->s[i].node);
        pump(n);
        n->now += MS;
    }
}

static void net_open(net *n)
{
    memset(n, 0, sizeof *n);
    n->now = 1000 * MS;
    n->rng = 7;
    n->scratch = malloc(MAX_FRAME + JR_LINK_FRAME_OVERHEAD);
    t_keys_make(&n->keys, "prod", srv_names, N);
    int k = 0;
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) {
            n->c[k].srv[0] = i;
            n->c[k].srv[1] = j;
            connect_links(n, &n->c[k++]);
        }
    for (int i = 0; i < N; i++) {
        srv *s = &n->s[i];
        s->n = n;
        s->i = i;
        s->host.version = JR_HOST_VERSION;
        s->host.ctx = s;
        s->host.send = h_send;
        s->host.now = h_now;
        ck_assert_int_eq(jr__memfs_new(NULL, (uint64_t)i + 1, &s->vfs), 0);
        jr_node_config cfg;
        jr_node_config_init(&cfg);
        cfg.name = srv_names[i];
        cfg.cluster = "prod";
        cfg.peers = srv_names;
        cfg.npeers = N;
        cfg.wal_dir = "/wal";
        cfg.vfs = s->vfs;
        cfg.host = &s->host;
        cfg.election_timeout_ms = 100;
        cfg.heartbeat_ms = 20;
        cfg.seed = (uint64_t)i + 11;
        cfg.streams = 1;
        cfg.max_frame_bytes = MAX_FRAME;
        ck_assert_int_eq(jr_node_open(&cfg, &s->node), 0);
    }
}

static void net_close(net *n)
{
    for (int i = 0; i < N; i++) {
        jr_node_close(n->s[i].node);
        jr__memfs_free(n->s[i].vfs);
    }
    for (int k = 0; k < NCONN; k++) {
        disconnect_links(&n->c[k]);
        for (int side = 0; side < 2; side++) t_bytes_free(&n->c[k].wire[side]);
    }
    t_keys_free(&n->keys);
    free(n->scratch);
}

static void wait_call(net *n, t_call *c)
{
    for (int t = 0; !c->done && t < 500; t++) run_ms(n, 10);
    ck_assert(c->done);
}

/* Adds stream O (R3) on server `on`, retrying while the meta group has no leader yet. */
static void add_stream(net *n, int on)
{
    jr_stream_config sc;
    jr_stream_config_init(&sc);
    const char *subj[] = {"o.>"};
    sc.name = "O";
    sc.subjects = subj;
    sc.nsubjects = 1;
    sc.replicas = N;
    sc.storage = JR_STORAGE_MEMORY;
    t_call c = {0};
    for (int tries = 0; tries < 20; tries++) {
        memset(&c, 0, sizeof c);
        ck_assert_int_eq(jr_stream_add(n->s[on].node, &sc, t_on_done, &c), 0);
        wait_call(n, &c);
        if (c.status == 0) break;
        run_ms(n, 100);
    }
    ck_assert_msg(c.status == 0, "stream add: %s", jr_err_name(c.status));
}

static void publish_some(net *n, int on, int from, int count)
{
    for (int k = from; k < from + count; k++) {
        char body[32];
        int len = snprintf(body, sizeof body, "order %d", k);
        t_call c = {0};
        for (int tries = 0; tries < 20; tries++) {
            memset(&c, 0, sizeof c);
            ck_assert_int_eq(
                jr_publish(n->s[on].node, "o.new", NULL, 0, body, (size_t)len, NULL, t_on_pub, &c),
                0);
            wait_call(n, &c);
            if (c.status == 0) break;
            run_ms(n, 100);
        }
        ck_assert_msg(c.status == 0, "publish %d: %s", k, jr_err_name(c.status));
        ck_assert_uint_eq(c.seq, (uint64_t)k);
    }
}

static void read_back(net *n, int on, uint64_t seq)
{
    char want[32];
    int wlen = snprintf(want, sizeof want, "order %llu", (unsigned long long)seq);
    t_call c = {0};
    for (int tries = 0; tries < 20; tries++) {
        memset(&c, 0, sizeof c);
        ck_assert_int_eq(jr_stream_msg_get(n->s[on].node, "O", seq, t_on_msg, &c), 0);
        wait_call(n, &c);
        if (c.status == 0) break;
        run_ms(n, 100);
    }
    ck_assert_int_eq(c.status, 0);
    ck_assert_uint_eq(c.len, (size_t)wlen);
    ck_assert(!memcmp(c.data, want, c.len));
}

static void no_frame_rejected(net *n)
{
    for (int i = 0; i < N; i++) {
        jr_node_stats st = {.size = sizeof st};
        ck_assert_int_eq(jr_node_stats_get(n->s[i].node, &st), 0);
        ck_assert_uint_eq(st.frames_rejected, 0);
        ck_assert_uint_gt(st.frames_received, 50);
    }
}

START_TEST(a_stream_replicates_over_secure_links)
{
    net n;
    net_open(&n);
    run_ms(&n, 300);
    for (int k = 0; k < NCONN; k++) {
        conn *c = &n.c[k];
        ck_assert_int_eq(jr_link_state(c->end[0]), JR_LINK_OPEN);
        /* the acceptor learned who dialed from the certificate */
        ck_assert_str_eq(jr_link_peer_name(c->end[1]), srv_names[c->srv[0]]);
    }
    add_stream(&n, 0);
    publish_some(&n, 0, 1, 40);
    publish_some(&n, 1, 41, 30);
    publish_some(&n, 2, 71, 30);
    read_back(&n, 2, 1);
    read_back(&n, 1, 100);
    ck_assert_uint_gt(n.sealed, 100);
    /* every frame sealed on one side was opened on the other */
    ck_assert_uint_eq(n.opened, n.sealed);
    ck_assert_uint_eq(n.link_errors, 0);
    no_frame_rejected(&n);
    printf("{\"test\":\"link_node\",\"servers\":%d,\"frames\":%llu,\"handshakes\":%llu}\n", N,
           (unsigned long long)n.sealed, (unsigned long long)n.handshakes);
    net_close(&n);
}
END_TEST

START_TEST(an_altered_record_drops_the_connection_and_the_cluster_goes_on)
{
    net n;
    net_open(&n);
    run_ms(&n, 300);
    add_stream(&n, 0);
    publish_some(&n, 0, 1, 10);
    /* the next record written on a connection is altered on the wire */
    t_bytes *w = NULL;
    while (!w) {
        for (int i = 0; i < N; i++) jr_node_tick(n.s[i].node);
        n.now += MS;
        for (int k = 0; k < NCONN && !w; k++)
            for (int side = 0; side < 2 && !w; side++)
                if (n.c[k].wire[side].len) w = &n.c[k].wire[side];
    }
    ck_assert_uint_gt(w->len, JR_LINK_FRAME_OVERHEAD);
    w->data[w->len - 1] ^= 0x01;
    pump(&n);
    ck_assert_uint_eq(n.link_errors, 1);
    ck_assert_uint_eq(n.handshakes, NCONN + 1);
    /* the new connection carries on: the frames lost with the old one are Raft's to resend */
    publish_some(&n, 1, 11, 10);
    read_back(&n, 2, 20);
    ck_assert_uint_eq(n.link_errors, 1);
    no_frame_rejected(&n); /* nothing altered reached a node */
    net_close(&n);
}
END_TEST

Suite *link_node_suite(void);

Suite *link_node_suite(void)
{
    Suite *s = suite_create("link_node");
    TCase *tc = tcase_create("node");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_stream_replicates_over_secure_links);
    tcase_add_test(tc, an_altered_record_drops_the_connection_and_the_cluster_goes_on);
    suite_add_tcase(s, tc);
    return s;
}
