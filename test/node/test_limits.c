/*
 * The node's message and store block limits (jr_node_config.max_payload, store_block_bytes):
 * publishes at the bound are stored and read back after a restart, one byte more is
 * JR_EMSGSIZE naming the limit; a small block size splits a file store into many blocks.
 * One server with streams, on memfs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "vfs/memfs.h"

#define MS 1000000ull

static const char *const only_a[] = {"a"};

typedef struct lfx {
    t_host h;
    uint32_t max_payload;
    uint32_t max_frame;
    uint64_t block;
    char err[256];
} lfx;

static int lfx_open(lfx *f)
{
    jr_node_config cfg;
    t_config(&f->h, &cfg, "a", only_a, 1, 3);
    cfg.streams = 1;
    cfg.errbuf = f->err;
    cfg.errbuf_len = sizeof f->err;
    cfg.max_payload = f->max_payload;
    if (f->max_frame) cfg.max_frame_bytes = f->max_frame;
    cfg.store_block_bytes = f->block;
    return jr_node_open(&cfg, &f->h.node);
}

typedef struct call {
    int done, status;
    uint64_t seq;
    char msg[256];
    uint8_t *data;
    size_t len;
} call;

static void on_stream(void *arg, int status, const char *msg)
{
    call *c = arg;
    c->done = 1;
    c->status = status;
    snprintf(c->msg, sizeof c->msg, "%s", msg);
}

static void on_pub(void *arg, int status, const jr_pub_ack *ack)
{
    call *c = arg;
    c->done = 1;
    c->status = status;
    c->seq = status == 0 ? ack->seq : 0;
    snprintf(c->msg, sizeof c->msg, "%s", ack && ack->msg ? ack->msg : "");
}

static void on_msg(void *arg, int status, const char *msg, const jr_stored_msg *m)
{
    call *c = arg;
    (void)msg;
    c->done = 1;
    c->status = status;
    if (status == 0) {
        c->data = malloc(m->len ? m->len : 1);
        memcpy(c->data, m->data, m->len);
        c->len = m->len;
    }
}

static void wait_call(lfx *f, call *c)
{
    for (int t = 0; !c->done && t < 300; t++) t_run_ms(&f->h, 10, 0);
    ck_assert(c->done);
}

static void start(lfx *f)
{
    int rc = lfx_open(f);
    ck_assert_msg(rc == 0, "open: %s (%s)", jr_err_name(rc), f->err);
    t_run_ms(&f->h, 500, 0);
    jr_stream_config sc;
    jr_stream_config_init(&sc);
    const char *subj[] = {"o.>"};
    sc.name = "O";
    sc.subjects = subj;
    sc.nsubjects = 1;
    call c = {0};
    ck_assert_int_eq(jr_stream_add(f->h.node, &sc, on_stream, &c), 0);
    wait_call(f, &c);
    ck_assert_msg(c.status == 0, "add: %s", c.msg);
}

static int publish(lfx *f, const void *data, size_t len, call *c)
{
    memset(c, 0, sizeof *c);
    int rc = jr_publish(f->h.node, "o.x", NULL, 0, data, len, NULL, on_pub, c);
    if (rc) return rc;
    wait_call(f, c);
    return c->status;
}

static uint8_t *pattern(size_t len, unsigned seed)
{
    uint8_t *p = malloc(len ? len : 1);
    for (size_t i = 0; i < len; i++) p[i] = (uint8_t)(i * 131 + seed);
    return p;
}

/* Publishes `limit` bytes (stored) and limit + 1 (JR_EMSGSIZE), restarts, reads seq 1 back. */
static void at_the_bound(lfx *f, size_t limit)
{
    start(f);
    uint8_t *p = pattern(limit + 1, 7);
    call c;
    ck_assert_int_eq(publish(f, p, limit + 1, &c), JR_EMSGSIZE);
    ck_assert_msg(strstr(c.msg, "max_payload") != NULL, "'%s' does not name max_payload", c.msg);
    ck_assert_int_eq(publish(f, p, limit, &c), 0);
    ck_assert_uint_eq(c.seq, 1);
    jr_node_close(f->h.node);
    f->h.node = NULL;
    ck_assert_int_eq(lfx_open(f), 0);
    t_run_ms(&f->h, 500, 0);
    c.status = JR_ENOLEADER;
    for (int tries = 0; tries < 10 && c.status != 0; tries++) {
        memset(&c, 0, sizeof c);
        ck_assert_int_eq(jr_stream_msg_get(f->h.node, "O", 1, on_msg, &c), 0);
        wait_call(f, &c);
        if (c.status) t_run_ms(&f->h, 100, 0);
    }
    ck_assert_int_eq(c.status, 0);
    ck_assert_uint_eq(c.len, limit);
    ck_assert(!memcmp(c.data, p, limit));
    free(c.data);
    free(p);
}

START_TEST(default_max_payload_is_one_mebibyte)
{
    lfx f;
    memset(&f, 0, sizeof f);
    t_host_init(&f.h);
    at_the_bound(&f, JR_MAX_PAYLOAD_DEFAULT);
    t_host_free(&f.h);
}
END_TEST

START_TEST(a_small_max_payload_is_enforced)
{
    lfx f;
    memset(&f, 0, sizeof f);
    t_host_init(&f.h);
    f.max_payload = 2000;
    at_the_bound(&f, 2000);
    t_host_free(&f.h);
}
END_TEST

START_TEST(the_largest_max_payload_fits_a_large_frame)
{
    lfx f;
    memset(&f, 0, sizeof f);
    t_host_init(&f.h);
    f.max_payload = JR_MAX_PAYLOAD_MAX;
    f.max_frame = 8u << 20; /* too small for two such entries */
    ck_assert_int_eq(lfx_open(&f), JR_EINVAL);
    ck_assert_msg(strstr(f.err, "max_payload") && strstr(f.err, "max_frame_bytes"), "%s", f.err);
    f.max_frame = 32u << 20;
    at_the_bound(&f, JR_MAX_PAYLOAD_MAX);
    t_host_free(&f.h);
}
END_TEST

static int count_blk(void *arg, const char *name)
{
    size_t n = strlen(name);
    if (n > 4 && !strcmp(name + n - 4, ".blk")) (*(int *)arg)++;
    return 0;
}

static int blocks_after(uint64_t block)
{
    lfx f;
    memset(&f, 0, sizeof f);
    t_host_init(&f.h);
    f.block = block;
    start(&f);
    uint8_t *p = pattern(4000, 1);
    call c;
    for (int i = 0; i < 40; i++) ck_assert_int_eq(publish(&f, p, 4000, &c), 0);
    free(p);
    jr_node_close(f.h.node);
    f.h.node = NULL;
    int n = 0;
    ck_assert_int_eq(f.h.vfs->list(f.h.vfs->ctx, "/wal/O", count_blk, &n), 0);
    t_host_free(&f.h);
    return n;
}

START_TEST(store_block_bytes_sets_the_file_store_block_size)
{
    int small = blocks_after(JR_STORE_BLOCK_MIN);
    int dflt = blocks_after(0);
    ck_assert_int_eq(dflt, 1);
    ck_assert_int_ge(small, 3); /* 40 x 4 KB in 64 KiB blocks */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("node_limits");
    TCase *t = tcase_create("limits");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, default_max_payload_is_one_mebibyte);
    tcase_add_test(t, a_small_max_payload_is_enforced);
    tcase_add_test(t, the_largest_max_payload_fits_a_large_frame);
    tcase_add_test(t, store_block_bytes_sets_the_file_store_block_size);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
