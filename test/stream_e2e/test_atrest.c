/*
 * Encryption at rest end to end (jr_node_config.key): a cluster whose servers each have their
 * own node key publishes and reads back, restarts a server and recovers it, and no file of any
 * server's directories (WAL segments, snapshot files, store blocks) holds a byte sequence of a
 * published payload; the same run without keys does (so the search is not blind). A server
 * restarted with another key, with none, or an unencrypted server restarted with a key, is
 * refused with JR_EAUTH and its files are untouched; the right key then opens it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "util/checksum.h"

/* 32 bytes no encoder produces by chance; every published payload starts with it. */
static const char marker[33] = "MARKER-c0ffee5a17e2b9d4-payload!";

typedef struct keys {
    int use; /* 0: no keys; 1: node i gets key[i] */
    uint8_t key[E2E_MAX][JR_NODE_KEY_BYTES];
    int override_node; /* node whose key is replaced (-1: none) */
    const uint8_t *override;
} keys;

static keys g_keys;

static void set_key(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    const uint8_t *k = g_keys.use ? g_keys.key[i] : NULL;
    if ((int)i == g_keys.override_node) k = g_keys.override;
    cfg->key = k;
    cfg->key_len = k ? JR_NODE_KEY_BYTES : 0;
}

/* Every file of node i: a fingerprint of paths and bytes, file counts by kind, and whether any
 * holds needle. */
typedef struct scan {
    jr_vfs *vfs;
    uint64_t h;
    size_t files, segments, snaps, blocks;
    const void *needle;
    size_t nlen;
    char found[256]; /* first file holding it */
} scan;

static int scan_cb(void *arg, const char *path, uint64_t size)
{
    scan *s = arg;
    jr_file *f;
    ck_assert_int_eq(s->vfs->open(s->vfs->ctx, path, JR_O_READ, &f), 0);
    uint8_t *d = malloc(size ? size : 1);
    size_t got = 0;
    ck_assert_int_eq(s->vfs->pread(s->vfs->ctx, f, d, size, 0, &got), 0);
    s->vfs->close(s->vfs->ctx, f);
    ck_assert_uint_eq(got, size);
    s->h = s->h * 31 + jr__xxh3(path, strlen(path));
    s->h = s->h * 31 + jr__xxh3(d, got);
    s->files++;
    size_t pl = strlen(path);
    if (pl > 4 && strcmp(path + pl - 4, ".wal") == 0) s->segments++;
    if (pl > 5 && strcmp(path + pl - 5, ".snap") == 0) s->snaps++;
    if (pl > 4 && strcmp(path + pl - 4, ".blk") == 0) s->blocks++;
    if (s->needle && !s->found[0] && got >= s->nlen && memmem(d, got, s->needle, s->nlen))
        snprintf(s->found, sizeof s->found, "%s", path);
    free(d);
    return 0;
}

static scan scan_node(e2e *c, unsigned i, const void *needle, size_t n)
{
    scan s;
    memset(&s, 0, sizeof s);
    s.vfs = jr_sim_vfs(c->sim, i);
    s.needle = needle;
    s.nlen = n;
    ck_assert_int_eq(jr_sim_files(c->sim, i, scan_cb, &s), 0);
    return s;
}

/* A 3-server cluster (keys as g_keys says), stream ORDERS R3 on file storage with snapshots
 * every 16 entries, 120 messages published and read back. */
static void build(e2e *c, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->configure_more = set_key;
    ck_assert_int_eq(e2e_new(c, 3, seed, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(c, 3, 10 * SEC), 0);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(c, i, 16);
    const char *subj[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 3);
    cfg.storage = JR_STORAGE_FILE;
    e2e_res r;
    ck_assert_msg(e2e_add(c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(c, 0, "ORDERS", 2, 10 * SEC), 0);
    for (unsigned k = 0; k < 120; k++) {
        char data[64];
        int n = snprintf(data, sizeof data, "%s #%u", marker, k);
        ck_assert_msg(e2e_publish(c, k % 3, "orders.new", data, (size_t)n, NULL, &r) == 0,
                      "publish %u: %s %s", k, jr_strerror(r.status), r.msg);
        ck_assert_uint_eq(r.seq, k + 1);
    }
    jr_sim_run_for(c->sim, 2 * SEC); /* every replica applies, snapshots, syncs */
}

static void expect_msg(e2e *c, unsigned via, uint64_t seq)
{
    e2e_res r;
    ck_assert_msg(e2e_msg_get(c, via, "ORDERS", seq, &r) == 0, "get %llu via n%u: %s",
                  (unsigned long long)seq, via, r.msg);
    char want[64];
    int n = snprintf(want, sizeof want, "%s #%llu", marker, (unsigned long long)seq - 1);
    ck_assert_uint_eq(r.len, (size_t)n);
    ck_assert(memcmp(r.data, want, (size_t)n) == 0);
}

START_TEST(encrypted_cluster_recovers_and_no_file_holds_a_payload)
{
    memset(&g_keys, 0, sizeof g_keys);
    g_keys.use = 1;
    g_keys.override_node = -1;
    for (unsigned i = 0; i < E2E_MAX; i++) memset(g_keys.key[i], 0x40 + (int)i, JR_NODE_KEY_BYTES);
    e2e c;
    build(&c, 11);
    expect_msg(&c, 0, 1);
    expect_msg(&c, 2, 120);
    /* a server crashes and comes back: it recovers its WAL, snapshots and store */
    ck_assert_int_eq(jr_sim_crash(c.sim, 1), 0);
    ck_assert_int_eq(e2e_restart(&c, 1), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 1, "ORDERS", 2, 20 * SEC), 0);
    e2e_res r;
    ck_assert_int_eq(e2e_publish(&c, 1, "orders.new", marker, 32, NULL, &r), 0);
    ck_assert_uint_eq(r.seq, 121);
    ck_assert_int_eq(e2e_info(&c, 1, "ORDERS", &r), 0);
    ck_assert_uint_eq(r.state.msgs, 121);
    expect_msg(&c, 1, 60);
    jr_sim_run_for(c.sim, 2 * SEC);
    uint64_t d0, d1;
    ck_assert_int_eq(e2e_digest(&c, 0, "ORDERS", &d0), 0);
    ck_assert_int_eq(e2e_digest(&c, 1, "ORDERS", &d1), 0);
    ck_assert_uint_eq(d0, d1);
    /* a server that missed more than the leader keeps behind its snapshot is sent the snapshot
     * (the leader reads its sealed file by range, the follower seals it as it arrives) */
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    for (unsigned k = 121; k < 300; k++) {
        char data[64];
        int n = snprintf(data, sizeof data, "%s #%u", marker, k);
        ck_assert_int_eq(e2e_publish(&c, k % 2, "orders.new", data, (size_t)n, NULL, &r), 0);
    }
    jr_sim_run_for(c.sim, 2 * SEC);
    ck_assert_int_eq(e2e_restart(&c, 2), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 2, "ORDERS", 2, 20 * SEC), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    uint64_t d2;
    ck_assert_int_eq(e2e_digest(&c, 0, "ORDERS", &d0), 0);
    ck_assert_int_eq(e2e_digest(&c, 2, "ORDERS", &d2), 0);
    ck_assert_uint_eq(d0, d2);
    expect_msg(&c, 2, 250);
    for (unsigned i = 0; i < 3; i++) {
        scan s = scan_node(&c, i, marker, 32);
        ck_assert_msg(!s.found[0], "n%u: %s holds the payload", i, s.found);
        ck_assert_uint_gt(s.segments, 0);
        ck_assert_uint_gt(s.snaps, 0);
        ck_assert_uint_gt(s.blocks, 0);
        s = scan_node(&c, i, marker + 8, 12); /* nor a piece of it */
        ck_assert_msg(!s.found[0], "n%u: %s holds part of the payload", i, s.found);
    }
    e2e_free(&c);

    /* without keys the same files hold it: the scan sees what it looks for */
    g_keys.use = 0;
    build(&c, 11);
    scan s = scan_node(&c, 0, marker, 32);
    ck_assert(s.found[0]);
    e2e_free(&c);
}
END_TEST

START_TEST(wrong_key_missing_key_and_plaintext_server_are_refused_untouched)
{
    memset(&g_keys, 0, sizeof g_keys);
    g_keys.use = 1;
    g_keys.override_node = -1;
    for (unsigned i = 0; i < E2E_MAX; i++) memset(g_keys.key[i], 0x60 + (int)i, JR_NODE_KEY_BYTES);
    e2e c;
    build(&c, 12);
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    scan before = scan_node(&c, 2, NULL, 0);
    static const uint8_t other[JR_NODE_KEY_BYTES] = "a key that is not this server's";
    g_keys.override_node = 2;
    g_keys.override = other;
    ck_assert_int_eq(e2e_restart(&c, 2), JR_EAUTH);
    g_keys.override = NULL;
    ck_assert_int_eq(e2e_restart(&c, 2), JR_EAUTH);
    scan after = scan_node(&c, 2, NULL, 0);
    ck_assert_uint_eq(after.h, before.h);
    ck_assert_uint_eq(after.files, before.files);
    /* the right key opens it, and it has everything */
    g_keys.override_node = -1;
    ck_assert_int_eq(e2e_restart(&c, 2), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 2, "ORDERS", 2, 20 * SEC), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    uint64_t d0, d2;
    ck_assert_int_eq(e2e_digest(&c, 0, "ORDERS", &d0), 0);
    ck_assert_int_eq(e2e_digest(&c, 2, "ORDERS", &d2), 0);
    ck_assert_uint_eq(d0, d2);
    e2e_free(&c);

    /* a server written without a key, restarted with one */
    g_keys.use = 0;
    build(&c, 13);
    ck_assert_int_eq(jr_sim_crash(c.sim, 0), 0);
    before = scan_node(&c, 0, NULL, 0);
    g_keys.override_node = 0;
    g_keys.override = other;
    ck_assert_int_eq(e2e_restart(&c, 0), JR_EAUTH);
    after = scan_node(&c, 0, NULL, 0);
    ck_assert_uint_eq(after.h, before.h);
    g_keys.override_node = -1;
    ck_assert_int_eq(e2e_restart(&c, 0), 0);
    e2e_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_atrest");
    TCase *tc = tcase_create("atrest");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, encrypted_cluster_recovers_and_no_file_holds_a_payload);
    tcase_add_test(tc, wrong_key_missing_key_and_plaintext_server_are_refused_untouched);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
