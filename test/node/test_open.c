/*
 * jr_node_open's refusals: each invalid config is JR_EINVAL with *out NULL, nothing left open,
 * and a reason naming the field in cfg->errbuf and in the host's log; the peer limit with
 * streams on; duplicate peer names; a wal_dir below a regular file.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "util/alloc.h"
#include "vfs/memfs.h"

typedef struct logbook {
    int n;
    int level;
    char last[512];
} logbook;

static logbook book;
static int deleted_segments;

static void on_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    book.n++;
    book.level = level;
    snprintf(book.last, sizeof book.last, "%s", msg);
}

typedef struct ofx {
    t_host h;
    jr_node_config cfg;
    char err[256];
    char names[80][16];
    const char *peers[80];
} ofx;

static void ofx_init(ofx *f, size_t npeers, int streams)
{
    memset(f, 0, sizeof *f);
    memset(&book, 0, sizeof book);
    t_host_init(&f->h);
    f->h.host.log = on_log;
    for (size_t i = 0; i < 80; i++) {
        snprintf(f->names[i], sizeof f->names[i], "s%zu", i);
        f->peers[i] = f->names[i];
    }
    jr_node_config_init(&f->cfg);
    f->cfg.name = "s0";
    f->cfg.peers = f->peers;
    f->cfg.npeers = npeers;
    f->cfg.wal_dir = "/wal";
    f->cfg.vfs = f->h.vfs;
    f->cfg.host = &f->h.host;
    f->cfg.election_timeout_ms = 100;
    f->cfg.heartbeat_ms = 20;
    f->cfg.seed = 5;
    f->cfg.streams = streams;
    f->cfg.errbuf = f->err;
    f->cfg.errbuf_len = sizeof f->err;
}

static void ofx_free(ofx *f)
{
    t_host_free(&f->h);
}

/* Opens f->cfg; expects rc, and for a failure a reason containing `says` in errbuf and log,
 * no node and no file left open. */
static void expect_open(ofx *f, int rc, const char *says)
{
    jr_node *n = (jr_node *)(uintptr_t)1;
    int got = jr_node_open(&f->cfg, &n);
    ck_assert_msg(got == rc, "open: %s, want %s (%s)", jr_err_name(got), jr_err_name(rc), f->err);
    if (rc == 0) {
        ck_assert_ptr_nonnull(n);
        ck_assert_str_eq(f->err, "");
        jr_node_close(n);
        return;
    }
    ck_assert_ptr_null(n);
    ck_assert_msg(strstr(f->err, says) != NULL, "errbuf '%s' does not say '%s'", f->err, says);
    if (f->cfg.host && f->cfg.host->log) {
        ck_assert_int_ge(book.n, 1);
        ck_assert_int_eq(book.level, JR_LOG_ERROR);
        ck_assert_int_eq(strncmp(book.last, f->err, strlen(f->err)), 0); /* errbuf may be cut */
    }
    jr__memfs_stats st;
    jr__memfs_stats_get(f->h.vfs, &st);
    ck_assert_uint_eq(st.handles, 0);
}

START_TEST(streams_with_more_servers_than_the_meta_group_holds_are_refused)
{
    ofx f;
    ofx_init(&f, JR_STREAMS_MAX_SERVERS + 1, 1);
    expect_open(&f, JR_EINVAL, "peers: 65 servers");
    f.cfg.npeers = JR_STREAMS_MAX_SERVERS;
    expect_open(&f, 0, NULL);
    f.cfg.streams = 0; /* raw groups only: the node may know more servers */
    f.cfg.npeers = 80;
    expect_open(&f, 0, NULL);
    ofx_free(&f);
}
END_TEST

/* The meta group's creation fails after jr__js_open started (here: out of memory at every
 * allocation from some point on): the cleanup must not touch a timer never armed. */
START_TEST(streams_open_failing_in_the_meta_group_cleans_up)
{
    for (uint64_t n = 1;; n++) {
        ofx f;
        ofx_init(&f, 3, 1);
        jr__falloc fa;
        jr__falloc_init(&fa);
        f.cfg.alloc = &fa.a;
        jr__falloc_arm(&fa, n, 1);
        jr_node *node = NULL;
        int rc = jr_node_open(&f.cfg, &node);
        jr__falloc_arm(&fa, 0, 0);
        if (rc == 0) {
            jr_node_close(node);
            ck_assert_int_eq(fa.live, 0);
            ofx_free(&f);
            break;
        }
        ck_assert_msg(rc == JR_ENOMEM, "n=%llu: %s (%s)", (unsigned long long)n, jr_err_name(rc),
                      f.err);
        ck_assert_ptr_null(node);
        ck_assert_msg(fa.live == 0, "n=%llu: %lld blocks leaked", (unsigned long long)n,
                      (long long)fa.live);
        ck_assert_str_ne(f.err, "");
        ofx_free(&f);
        ck_assert_uint_lt(n, 100000);
    }
}
END_TEST

START_TEST(duplicate_peer_names_are_refused)
{
    ofx f;
    ofx_init(&f, 3, 0);
    const char *dup[] = {"s0", "s1", "s2", "s1"};
    f.cfg.peers = dup;
    f.cfg.npeers = 4;
    expect_open(&f, JR_EINVAL, "peers[3]: 's1' is listed twice");
    const char *self_twice[] = {"s0", "s1", "s0"};
    f.cfg.peers = self_twice;
    f.cfg.npeers = 3;
    expect_open(&f, JR_EINVAL, "peers[2]: 's0' is listed twice");
    const char *self_once[] = {"s1", "s0", "s2"};
    f.cfg.peers = self_once;
    expect_open(&f, 0, NULL);
    const char *without_self[] = {"s1", "s2"}; /* this server need not be listed */
    f.cfg.peers = without_self;
    f.cfg.npeers = 2;
    expect_open(&f, 0, NULL);
    ofx_free(&f);
}
END_TEST

START_TEST(wal_dir_below_a_file_is_not_a_directory)
{
    ofx f;
    ofx_init(&f, 3, 0);
    jr_file *file;
    jr_vfs *v = f.h.vfs;
    ck_assert_int_eq(v->mkdir(v->ctx, "/data"), 0);
    ck_assert_int_eq(v->open(v->ctx, "/data/file", JR_O_CREATE, &file), 0);
    ck_assert_int_eq(v->close(v->ctx, file), 0);
    f.cfg.wal_dir = "/data/file/wal";
    expect_open(&f, JR_EINVAL, "not a directory");
    ck_assert_ptr_nonnull(strstr(f.err, "wal_dir"));
    f.cfg.wal_dir = "/data/file";
    expect_open(&f, JR_EINVAL, "not a directory");
    ofx_free(&f);
}
END_TEST

/* Opens the node of f->cfg and its group 7 (voters s0..s2), reads the group's status, closes. */
static jr_group_status group7(ofx *f)
{
    jr_node *n = NULL;
    ck_assert_msg(jr_node_open(&f->cfg, &n) == 0, "open: %s", f->err);
    f->h.node = n;
    t_fsm fsm;
    t_fsm_init(&fsm);
    jr_group *g;
    ck_assert_int_eq(t_group(&f->h, 7, f->peers, 3, &fsm, &g), 0);
    jr_group_status st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    ck_assert_int_eq(jr_group_status_get(g, &st), 0);
    jr_node_close(n);
    f->h.node = NULL;
    return st;
}

static int delete_segments(void *arg, const char *path, uint64_t size)
{
    (void)size;
    size_t len = strlen(path);
    if (len > 4 && !strcmp(path + len - 4, ".wal")) {
        ck_assert_int_eq(jr__memfs_delete(arg, path), 0);
        ++deleted_segments;
    }
    return 0;
}

/* The node's mark (lib/node/recover.c): a wal_dir that has it but lost every WAL segment opens
 * every group unvouched and damaged; a first start, or a lost mark alone, does not; the mark of
 * another server refuses the open. */
START_TEST(a_lost_wal_is_told_from_a_first_start)
{
    ofx f;
    ofx_init(&f, 3, 0);
    jr_group_status st = group7(&f); /* first start: a new group, whole */
    ck_assert(!st.unvouched && !st.damaged);
    uint64_t size;
    ck_assert_int_eq(jr__memfs_file_size(f.h.vfs, "/wal/node", &size), 0);
    ck_assert_uint_eq(size, 24);

    /* the mark alone lost: written again; the group is recovered from the WAL as ever */
    ck_assert_int_eq(jr__memfs_delete(f.h.vfs, "/wal/node"), 0);
    st = group7(&f);
    ck_assert(st.unvouched && !st.damaged);
    ck_assert_int_eq(jr__memfs_file_size(f.h.vfs, "/wal/node", &size), 0);

    /* every segment lost: the group, bootstrapped again, is unvouched and damaged */
    deleted_segments = 0;
    ck_assert_int_eq(jr__memfs_walk(f.h.vfs, "/wal/", delete_segments, f.h.vfs), 0);
    ck_assert_int_gt(deleted_segments, 0);
    memset(&book, 0, sizeof book);
    st = group7(&f);
    ck_assert(st.unvouched && st.damaged);
    ck_assert_ptr_nonnull(strstr(book.last, "WAL lost") ? book.last : NULL);

    /* a damaged mark counts as present (and is written again) */
    ck_assert_int_eq(jr__memfs_walk(f.h.vfs, "/wal/", delete_segments, f.h.vfs), 0);
    ck_assert_int_eq(jr__memfs_flip_bits(f.h.vfs, "/wal/node", 0, 24, 3), 0);
    st = group7(&f);
    ck_assert(st.unvouched && st.damaged);

    /* another server's wal_dir */
    f.cfg.name = "s1";
    expect_open(&f, JR_EINVAL, "another server");
    ofx_free(&f);
}
END_TEST

static void no_send(ofx *f)
{
    f->h.host.send = NULL;
}

static const char *const bad_tags[] = {"az:1", "has space"};

/* Each case breaks one field; the reason must name it. */
START_TEST(every_refusal_names_its_field)
{
    ofx f;
    ofx_init(&f, 3, 0);
    switch (_i) {
    case 0:
        f.cfg.name = NULL;
        expect_open(&f, JR_EINVAL, "name: required");
        break;
    case 1:
        f.cfg.name = "";
        expect_open(&f, JR_EINVAL, "name: required");
        break;
    case 2:
        f.cfg.wal_dir = NULL;
        expect_open(&f, JR_EINVAL, "wal_dir: required");
        break;
    case 3: {
        const jr_host *h = f.cfg.host;
        f.cfg.host = NULL;
        expect_open(&f, JR_EINVAL, "host:");
        f.cfg.host = h;
        no_send(&f);
        expect_open(&f, JR_EINVAL, "host:");
        break;
    }
    case 4:
        f.cfg.peers = NULL;
        expect_open(&f, JR_EINVAL, "peers: NULL with npeers = 3");
        break;
    case 5: {
        const char *p[] = {"s0", NULL, "s2"};
        f.cfg.peers = p;
        expect_open(&f, JR_EINVAL, "peers[1]: NULL name");
        const char *q[] = {"s0", "s1", ""};
        f.cfg.peers = q;
        expect_open(&f, JR_EINVAL, "peers[2]: empty name");
        break;
    }
    case 6: {
        jr_allocator a = {JR_ALLOCATOR_VERSION, NULL, NULL, NULL, NULL};
        f.cfg.alloc = &a;
        expect_open(&f, JR_EINVAL, "alloc:");
        break;
    }
    case 7:
        f.cfg.heartbeat_ms = 100;
        expect_open(&f, JR_EINVAL, "heartbeat_ms (100) must be below election_timeout_ms (100)");
        break;
    case 8:
        f.cfg.max_frame_bytes = 1000;
        expect_open(&f, JR_EINVAL, "max_frame_bytes (1000)");
        break;
    case 9:
        f.cfg.sync_policy = 7;
        expect_open(&f, JR_EINVAL, "sync_policy: 7");
        break;
    case 10:
        f.cfg.streams = 1;
        f.cfg.cluster = "two words";
        expect_open(&f, JR_EINVAL, "cluster:");
        break;
    case 11:
        f.cfg.streams = 1;
        f.cfg.tags = bad_tags;
        f.cfg.ntags = 2;
        expect_open(&f, JR_EINVAL, "tags[1]:");
        f.cfg.tags = NULL;
        expect_open(&f, JR_EINVAL, "tags: NULL with ntags = 2");
        break;
    case 12: {
        const char *p[] = {"bad name", "s1"};
        f.cfg.name = "bad name";
        f.cfg.peers = p;
        f.cfg.npeers = 2;
        f.cfg.streams = 1;
        expect_open(&f, JR_EINVAL, "name: not a valid server name");
        break;
    }
    case 13: /* no log callback: the buffer still says why */
        f.h.host.log = NULL;
        f.cfg.heartbeat_ms = 500;
        expect_open(&f, JR_EINVAL, "heartbeat_ms");
        ck_assert_int_eq(book.n, 0);
        break;
    case 15:
        f.cfg.max_payload = JR_MAX_PAYLOAD_MAX + 1;
        expect_open(&f, JR_EINVAL, "max_payload (8388609) is above the maximum of 8388608");
        break;
    case 16:
        f.cfg.max_payload = 4u << 20; /* two entries of 4 MiB and framing exceed 8 MiB */
        expect_open(&f, JR_EINVAL, "max_payload (4194304) needs max_frame_bytes of at least");
        f.cfg.max_frame_bytes = 9u << 20;
        expect_open(&f, 0, NULL);
        break;
    case 17:
        f.cfg.store_block_bytes = JR_STORE_BLOCK_MIN - 1;
        expect_open(&f, JR_EINVAL, "store_block_bytes (65535) is outside");
        f.cfg.store_block_bytes = (uint64_t)JR_STORE_BLOCK_MAX + 1;
        expect_open(&f, JR_EINVAL, "store_block_bytes");
        f.cfg.store_block_bytes = JR_STORE_BLOCK_MAX;
        expect_open(&f, 0, NULL);
        break;
    case 18: {
        static const uint8_t key[JR_NODE_KEY_BYTES] = {1, 2, 3};
        f.cfg.key = key;
        f.cfg.key_len = 16;
        expect_open(&f, JR_EINVAL, "key_len (16) must be 32");
        f.cfg.key = NULL;
        expect_open(&f, JR_EINVAL, "key_len (16) must be 0 without a key");
        f.cfg.key = key;
        f.cfg.key_len = JR_NODE_KEY_BYTES;
        expect_open(&f, 0, NULL);
        /* the same directory without the key, or with another: refused, named */
        f.cfg.key = NULL;
        f.cfg.key_len = 0;
        expect_open(&f, JR_EAUTH, "key: the WAL in");
        static const uint8_t other[JR_NODE_KEY_BYTES] = {9};
        f.cfg.key = other;
        f.cfg.key_len = JR_NODE_KEY_BYTES;
        expect_open(&f, JR_EAUTH, "not encrypted under this key");
        break;
    }
    case 19: /* catch-up and retention bounds: defaults, 0 for the default, limits, order */
        ck_assert_uint_eq(f.cfg.catchup_queue_bytes, JR_CATCHUP_QUEUE_BYTES_DEFAULT);
        ck_assert_uint_eq(f.cfg.catchup_log_bytes, JR_CATCHUP_LOG_BYTES_DEFAULT);
        ck_assert_uint_eq(f.cfg.keep_bytes, JR_KEEP_BYTES_DEFAULT);
        ck_assert_uint_eq(f.cfg.join_keep_bytes, JR_JOIN_KEEP_BYTES_DEFAULT);
        f.cfg.catchup_log_bytes = JR_LOG_BOUND_MIN - 1;
        expect_open(&f, JR_EINVAL, "catchup_log_bytes (1048575) is outside 1048576..");
        f.cfg.catchup_log_bytes = JR_LOG_BOUND_MAX + 1;
        expect_open(&f, JR_EINVAL, "catchup_log_bytes (1099511627777) is outside");
        f.cfg.catchup_log_bytes = 0;
        f.cfg.catchup_queue_bytes = 1;
        expect_open(&f, JR_EINVAL, "catchup_queue_bytes (1) is outside");
        f.cfg.catchup_queue_bytes = 0;
        f.cfg.keep_bytes = 100;
        expect_open(&f, JR_EINVAL, "keep_bytes (100) is outside");
        f.cfg.keep_bytes = 8u << 20;
        f.cfg.join_keep_bytes = 4u << 20;
        expect_open(&f, JR_EINVAL,
                    "join_keep_bytes (4194304) must be at least keep_bytes (8388608)");
        f.cfg.join_keep_bytes = JR_LOG_BOUND_MAX + 1;
        expect_open(&f, JR_EINVAL, "join_keep_bytes (1099511627777) is outside");
        /* 0 is the default (keep_bytes 8 MiB stays below it) */
        f.cfg.join_keep_bytes = 0;
        expect_open(&f, 0, NULL);
        f.cfg.keep_bytes = 0;
        f.cfg.catchup_log_bytes = JR_LOG_BOUND_MIN;
        f.cfg.catchup_queue_bytes = JR_LOG_BOUND_MAX;
        expect_open(&f, 0, NULL);
        break;
    case 20: { /* a vfs table must declare a version and give every function up to sync_dir;
                  writeback (version 2) is optional, and a version-1 table's is never read */
        jr_vfs v = *f.h.vfs;
        v.version = 0;
        f.cfg.vfs = &v;
        expect_open(&f, JR_EINVAL, "vfs: needs version >= 1");
        v = *f.h.vfs;
        v.sync_dir = NULL;
        expect_open(&f, JR_EINVAL, "vfs: needs version >= 1");
        v = *f.h.vfs;
        v.writeback = NULL;
        expect_open(&f, 0, NULL);
        break;
    }
    case 14: /* a tiny buffer gets a cut, terminated message */
        f.cfg.errbuf_len = 8;
        f.cfg.name = NULL;
        expect_open(&f, JR_EINVAL, "jr_node");
        ck_assert_uint_eq(strlen(f.err), 7);
        break;
    }
    ofx_free(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("node_open");
    TCase *t = tcase_create("open");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, streams_with_more_servers_than_the_meta_group_holds_are_refused);
    tcase_add_test(t, streams_open_failing_in_the_meta_group_cleans_up);
    tcase_add_test(t, duplicate_peer_names_are_refused);
    tcase_add_test(t, wal_dir_below_a_file_is_not_a_directory);
    tcase_add_test(t, a_lost_wal_is_told_from_a_first_start);
    tcase_add_loop_test(t, every_refusal_names_its_field, 0, 21);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
