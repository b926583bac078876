/*
 * Encryption at rest on a real file system: one server with streams on, over jr_vfs_posix() in a
 * temporary directory, with a node key. It publishes messages carrying a distinctive 32-byte
 * marker into a file stream that snapshots every few entries, reads them back, restarts, and
 * then every file under the directory (WAL segments, the node's mark, snapshot files, store
 * blocks) is read and searched for the marker: none holds it, while a run without a key does.
 * Reopening with another key or none fails with JR_EAUTH and leaves every file as it was.
 */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calls.h"
#include "host.h"
#include "js/js.h"
#include "node/node.h"
#include "util/checksum.h"

#define MS 1000000ull
#define MSGS 40

static const char marker[33] = "MARKER-9d1c3e7f0a5b2468-posix-fs";
static const uint8_t key_a[JR_NODE_KEY_BYTES] = "test_atrest_posix: the node key.";
static const uint8_t key_b[JR_NODE_KEY_BYTES] = "test_atrest_posix: another key..";
static const char *const only_a[] = {"a"};

typedef struct fx {
    t_host h;
    jr_vfs *memfs; /* t_host's own, put back before t_host_free */
    char dir[256];
    char wal[300], store[300];
    char err[256];
} fx;

static void fx_init(fx *f)
{
    memset(f, 0, sizeof *f);
    t_host_init(&f->h);
    f->memfs = f->h.vfs;
    f->h.vfs = jr_vfs_posix();
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/jr_atrest.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(f->dir));
    snprintf(f->wal, sizeof f->wal, "%s/wal", f->dir);
    snprintf(f->store, sizeof f->store, "%s/store", f->dir);
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void fx_free(fx *f)
{
    if (f->h.node) jr_node_close(f->h.node);
    f->h.node = NULL;
    nftw(f->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    f->h.vfs = f->memfs;
    t_host_free(&f->h);
}

static int fx_open(fx *f, const uint8_t *key)
{
    jr_node_config cfg;
    t_config(&f->h, &cfg, "a", only_a, 1, 3);
    cfg.wal_dir = f->wal;
    cfg.store_dir = f->store;
    cfg.streams = 1;
    cfg.errbuf = f->err;
    cfg.errbuf_len = sizeof f->err;
    cfg.key = key;
    cfg.key_len = key ? JR_NODE_KEY_BYTES : 0;
    f->h.node = NULL;
    return jr_node_open(&cfg, &f->h.node);
}

static void wait_call(fx *f, t_call *c)
{
    for (int t = 0; !c->done && t < 500; t++) t_run_ms(&f->h, 10, 1);
    ck_assert(c->done);
    ck_assert_msg(c->status == 0, "%s", jr_strerror(c->status));
}

static size_t payload(unsigned i, char *buf)
{
    return (size_t)snprintf(buf, 64, "%s #%u", marker, i);
}

static void expect_msg(fx *f, uint64_t seq)
{
    t_call c = {0};
    ck_assert_int_eq(jr_stream_msg_get(f->h.node, "ORDERS", seq, t_on_msg, &c), 0);
    wait_call(f, &c);
    char want[64];
    size_t n = payload((unsigned)seq - 1, want);
    ck_assert_uint_eq(c.len, n);
    ck_assert(memcmp(c.data, want, n) == 0);
}

/* A node with stream ORDERS (file storage) holding MSGS messages, snapshots every 4 entries;
 * then closed, reopened (recovery), checked, and closed. */
static void build(fx *f, const uint8_t *key)
{
    ck_assert_msg(fx_open(f, key) == 0, "%s", f->err);
    jr__js_of(f->h.node)->snapshot_entries = 4;
    t_run_ms(&f->h, 500, 1);
    jr_stream_config sc;
    jr_stream_config_init(&sc);
    const char *subj[] = {"orders.>"};
    sc.name = "ORDERS";
    sc.subjects = subj;
    sc.nsubjects = 1;
    sc.storage = JR_STORAGE_FILE;
    t_call c = {0};
    ck_assert_int_eq(jr_stream_add(f->h.node, &sc, t_on_done, &c), 0);
    wait_call(f, &c);
    for (jr__srep *r = jr__js_of(f->h.node)->rep_list; r; r = r->next)
        if (r->g) r->g->snapshot_entries = 4;
    for (unsigned i = 0; i < MSGS; i++) {
        char buf[64];
        size_t n = payload(i, buf);
        memset(&c, 0, sizeof c);
        ck_assert_int_eq(jr_publish(f->h.node, "orders.new", NULL, 0, buf, n, NULL, t_on_pub, &c),
                         0);
        wait_call(f, &c);
        ck_assert_uint_eq(c.seq, i + 1);
    }
    t_run_ms(&f->h, 200, 1);
    expect_msg(f, 7);
    jr_node_close(f->h.node);
    f->h.node = NULL;
    ck_assert_msg(fx_open(f, key) == 0, "%s", f->err);
    t_run_ms(&f->h, 500, 1);
    expect_msg(f, 1);
    expect_msg(f, MSGS);
    jr_node_close(f->h.node);
    f->h.node = NULL;
}

/* Every regular file under the directory: a fingerprint, counts, and the marker search. */
static struct {
    uint64_t h;
    size_t files, snaps, blocks, segments;
    const void *needle;
    size_t nlen;
    char found[512];
} g_scan;

static int scan_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_F) return 0;
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    size_t size = (size_t)st->st_size;
    char *d = malloc(size ? size : 1);
    ck_assert_uint_eq(fread(d, 1, size, fp), size);
    fclose(fp);
    g_scan.h = g_scan.h * 31 + jr__xxh3(path, strlen(path));
    g_scan.h = g_scan.h * 31 + jr__xxh3(d, size);
    g_scan.files++;
    size_t pl = strlen(path);
    if (pl > 5 && strcmp(path + pl - 5, ".snap") == 0) g_scan.snaps++;
    if (pl > 4 && strcmp(path + pl - 4, ".blk") == 0) g_scan.blocks++;
    if (pl > 4 && strcmp(path + pl - 4, ".wal") == 0) g_scan.segments++;
    if (g_scan.needle && !g_scan.found[0] && memmem(d, size, g_scan.needle, g_scan.nlen))
        snprintf(g_scan.found, sizeof g_scan.found, "%s", path);
    free(d);
    return 0;
}

static void scan_dir(fx *f, const void *needle, size_t n)
{
    memset(&g_scan, 0, sizeof g_scan);
    g_scan.needle = needle;
    g_scan.nlen = n;
    ck_assert_int_eq(nftw(f->dir, scan_cb, 16, FTW_PHYS), 0);
}

START_TEST(no_file_on_disk_holds_a_published_payload)
{
    fx f;
    fx_init(&f);
    build(&f, key_a);
    scan_dir(&f, marker, 32);
    ck_assert_msg(!g_scan.found[0], "%s holds the payload", g_scan.found);
    ck_assert_uint_gt(g_scan.segments, 0);
    ck_assert_uint_gt(g_scan.snaps, 0);
    ck_assert_uint_gt(g_scan.blocks, 0);
    scan_dir(&f, marker + 10, 12);
    ck_assert_msg(!g_scan.found[0], "%s holds part of the payload", g_scan.found);

    /* another key, or none: refused, nothing changed */
    scan_dir(&f, NULL, 0);
    uint64_t before = g_scan.h;
    size_t files = g_scan.files;
    ck_assert_int_eq(fx_open(&f, key_b), JR_EAUTH);
    ck_assert_ptr_null(f.h.node);
    ck_assert_int_eq(fx_open(&f, NULL), JR_EAUTH);
    ck_assert(strstr(f.err, "key") != NULL);
    scan_dir(&f, NULL, 0);
    ck_assert_uint_eq(g_scan.h, before);
    ck_assert_uint_eq(g_scan.files, files);
    /* the right key still opens it with everything */
    ck_assert_int_eq(fx_open(&f, key_a), 0);
    t_run_ms(&f.h, 500, 1);
    expect_msg(&f, 13);
    fx_free(&f);

    /* the same without a key: the payload is there to find */
    fx_init(&f);
    build(&f, NULL);
    scan_dir(&f, marker, 32);
    ck_assert(g_scan.found[0]);
    fx_free(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("node_atrest_posix");
    TCase *t = tcase_create("atrest");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, no_file_on_disk_holds_a_published_payload);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
