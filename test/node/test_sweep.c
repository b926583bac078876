/*
 * Fault sweeps of a node with streams on, in the manner of SQLite's: for n = 1, 2, ... the n-th
 * vfs t_call (of any kind) or the n-th allocation fails, once or from then on,
 *  - through jr_node_open, a few ticks and jr_node_close of a node with a file stream holding
 *    messages and a snapshot (recovery of the WAL, snapshot files, the meta group and the
 *    stream's store), and
 *  - through publishes and the flushes that carry them (WAL write and sync, store writes) with
 *    the stream taking snapshots every few entries,
 * until an n is reached that the run completes without meeting. Every run must end in clean
 * errors or the right results, leave nothing allocated and no file open, and after the fault is
 * removed (for publishes: and a simulated power loss) the node must reopen with every
 * acknowledged message at its seq and nothing that was not published, nothing twice.
 * One server ("a"), on memfs and the counting allocator of lib/util/alloc.h; with JR_SWEEP_KEY=1
 * encrypting at rest under a node key.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "host.h"
#include "js/js.h"
#include "node/node.h"
#include "util/alloc.h"
#include "vfs/memfs.h"

#define MS 1000000ull
#define MSGS 12 /* published before the open sweep */
#define PUBS 10 /* published under the fault in the publish sweep */
#define MAX_N 20000

static const char *const only_a[] = {"a"};

typedef struct nfx {
    t_host h;
    jr__falloc fa;
    int use_fa;
    char err[256];
} nfx;

static void nfx_init(nfx *f)
{
    memset(f, 0, sizeof *f);
    t_host_init(&f->h);
    jr__falloc_init(&f->fa);
}

static int nfx_open(nfx *f)
{
    jr_node_config cfg;
    t_config(&f->h, &cfg, "a", only_a, 1, 11);
    cfg.alloc = f->use_fa ? &f->fa.a : NULL;
    cfg.streams = 1;
    cfg.request_timeout_ms = 500;
    cfg.wal_segment_bytes = 8192;
    cfg.errbuf = f->err;
    cfg.errbuf_len = sizeof f->err;
    /* JR_SWEEP_KEY=1: the node encrypts at rest (the sweep covers the sealed formats) */
    static const uint8_t key[JR_NODE_KEY_BYTES] = "test_sweep: JR_SWEEP_KEY's key!";
    const char *k = getenv("JR_SWEEP_KEY");
    if (k && *k == '1') {
        cfg.key = key;
        cfg.key_len = JR_NODE_KEY_BYTES;
    }
    f->h.node = NULL;
    return jr_node_open(&cfg, &f->h.node);
}

/* Stream groups (those open and those created later) snapshot every `entries` entries. */
static void snapshot_every(nfx *f, uint64_t entries)
{
    jr__js *js = jr__js_of(f->h.node);
    js->snapshot_entries = entries;
    for (jr__srep *r = js->rep_list; r; r = r->next)
        if (r->g) r->g->snapshot_entries = entries;
}

static void nfx_close(nfx *f)
{
    jr_node_close(f->h.node);
    f->h.node = NULL;
    t_frames_clear(&f->h);
}

static void on_info(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    t_call *c = arg;
    (void)msg;
    c->done = 1;
    c->status = status;
    if (status == 0) c->seq = info->state->last_seq;
}

static int wait_call(nfx *f, t_call *c, uint64_t max_ms)
{
    for (uint64_t t = 0; !c->done && t < max_ms; t += 10) t_run_ms(&f->h, 10, 0);
    return c->done;
}

static size_t payload(int i, char *buf)
{
    return (size_t)snprintf(buf, 128, "msg-%04d-%.*s", i, 20 + i % 40,
                            "................................................................");
}

/* Publishes message i; 0 and the callback pending, or the t_call's error. */
static int publish(nfx *f, int i, t_call *c)
{
    char buf[128];
    size_t len = payload(i, buf);
    memset(c, 0, sizeof *c);
    return jr_publish(f->h.node, "orders.new", NULL, 0, buf, len, NULL, t_on_pub, c);
}

/* A node with stream ORDERS (file, R1) holding MSGS messages, taking snapshots every 4
 * entries, closed cleanly. */
static void build(nfx *f)
{
    nfx_init(f);
    ck_assert_int_eq(nfx_open(f), 0);
    snapshot_every(f, 4);
    t_run_ms(&f->h, 500, 0);
    jr_stream_config sc;
    jr_stream_config_init(&sc);
    const char *subj[] = {"orders.>"};
    sc.name = "ORDERS";
    sc.subjects = subj;
    sc.nsubjects = 1;
    t_call c = {0};
    ck_assert_int_eq(jr_stream_add(f->h.node, &sc, t_on_done, &c), 0);
    ck_assert(wait_call(f, &c, 2000));
    ck_assert_int_eq(c.status, 0);
    for (int i = 0; i < MSGS; i++) {
        ck_assert_int_eq(publish(f, i, &c), 0);
        ck_assert(wait_call(f, &c, 2000));
        ck_assert_int_eq(c.status, 0);
        ck_assert_uint_eq(c.seq, (uint64_t)i + 1);
    }
    nfx_close(f);
}

static void check_vfs_clean(nfx *f, const char *where, uint64_t n)
{
    jr__memfs_stats st;
    jr__memfs_stats_get(f->h.vfs, &st);
    ck_assert_msg(st.handles == 0, "%s n=%llu: %llu file handles left open", where,
                  (unsigned long long)n, (unsigned long long)st.handles);
    ck_assert_msg(st.bad_handles == 0, "%s n=%llu: a file handle was closed twice", where,
                  (unsigned long long)n);
}

/* Reopens without faults and checks the stream: message i of acked[] (acked[i] = its seq, 0
 * if not acknowledged) at its seq, every stored message one that was published (index below
 * npub), none twice. */
static void verify(nfx *f, const uint64_t *acked, int npub, const char *where, uint64_t n)
{
    f->use_fa = 0;
    int rc = nfx_open(f);
    ck_assert_msg(rc == 0, "%s n=%llu: reopen without faults: %s (%s)", where,
                  (unsigned long long)n, jr_err_name(rc), f->err);
    t_call c = {0};
    for (int tries = 0; tries < 20; tries++) {
        memset(&c, 0, sizeof c);
        t_run_ms(&f->h, 100, 0);
        ck_assert_int_eq(jr_stream_info_get(f->h.node, "ORDERS", on_info, &c), 0);
        ck_assert(wait_call(f, &c, 2000));
        if (c.status == 0) break;
    }
    ck_assert_msg(c.status == 0, "%s n=%llu: stream info: %s", where, (unsigned long long)n,
                  jr_err_name(c.status));
    uint64_t last = c.seq;
    int seen[64] = {0};
    for (uint64_t seq = 1; seq <= last; seq++) {
        memset(&c, 0, sizeof c);
        ck_assert_int_eq(jr_stream_msg_get(f->h.node, "ORDERS", seq, t_on_msg, &c), 0);
        ck_assert(wait_call(f, &c, 2000));
        ck_assert_msg(c.status == 0, "%s n=%llu: seq %llu: %s", where, (unsigned long long)n,
                      (unsigned long long)seq, jr_err_name(c.status));
        int i = -1;
        ck_assert_msg(sscanf(c.data, "msg-%d-", &i) == 1 && i >= 0 && i < npub,
                      "%s n=%llu: seq %llu holds a message never published", where,
                      (unsigned long long)n, (unsigned long long)seq);
        char want[128];
        size_t len = payload(i, want);
        ck_assert_msg(c.len == len && !memcmp(c.data, want, len), "%s n=%llu: seq %llu corrupt",
                      where, (unsigned long long)n, (unsigned long long)seq);
        ck_assert_msg(!seen[i], "%s n=%llu: message %d stored twice", where, (unsigned long long)n,
                      i);
        seen[i] = 1;
        ck_assert_msg(!acked[i] || acked[i] == seq, "%s n=%llu: message %d acked as %llu, at %llu",
                      where, (unsigned long long)n, i, (unsigned long long)acked[i],
                      (unsigned long long)seq);
    }
    for (int i = 0; i < npub; i++)
        ck_assert_msg(!acked[i] || seen[i], "%s n=%llu: acknowledged message %d (seq %llu) lost",
                      where, (unsigned long long)n, i, (unsigned long long)acked[i]);
    nfx_close(f);
    check_vfs_clean(f, where, n);
}

static void arm(nfx *f, int alloc, int sticky, uint64_t n)
{
    if (alloc) {
        jr__falloc_arm(&f->fa, n, sticky);
    } else {
        ck_assert_int_eq(
            jr__memfs_fail(f->h.vfs, JR__MEMFS_ANY, n, (n & 1) ? JR_EIO : JR_ENOSPC, sticky, NULL),
            0);
    }
}

static uint64_t fired_count(nfx *f, int alloc)
{
    if (alloc) return f->fa.failures;
    jr__memfs_stats st;
    jr__memfs_stats_get(f->h.vfs, &st);
    return st.faults;
}

static void disarm(nfx *f)
{
    jr__falloc_arm(&f->fa, 0, 0);
    jr__memfs_fail_clear(f->h.vfs);
}

/* _i: bit 0 allocation (else vfs), bit 1 sticky. */
START_TEST(open_and_close_with_streams_survive_faults)
{
    int alloc = _i & 1, sticky = (_i >> 1) & 1;
    char where[96];
    snprintf(where, sizeof where, "open/close, %s n%s fails", alloc ? "allocation" : "vfs t_call",
             sticky ? " and later" : "");
    uint64_t acked[64] = {0};
    for (int i = 0; i < MSGS; i++) acked[i] = (uint64_t)i + 1;
    uint64_t n;
    for (n = 1; n < MAX_N; n++) {
        nfx f;
        build(&f);
        f.use_fa = alloc;
        uint64_t f0 = fired_count(&f, alloc);
        arm(&f, alloc, sticky, n);
        int rc = nfx_open(&f);
        if (rc == 0) {
            t_run_ms(&f.h, 300, 0);
            nfx_close(&f);
        } else {
            ck_assert_msg(rc < 0 && !f.h.node, "%s n=%llu: rc %d", where, (unsigned long long)n,
                          rc);
            ck_assert_msg(f.err[0], "%s n=%llu: open failed without a reason", where,
                          (unsigned long long)n);
            if (alloc)
                ck_assert_msg(rc == JR_ENOMEM, "%s n=%llu: %s (%s)", where, (unsigned long long)n,
                              jr_err_name(rc), f.err);
        }
        int fired = fired_count(&f, alloc) > f0;
        disarm(&f);
        ck_assert_msg(f.fa.live == 0, "%s n=%llu: %lld blocks leaked", where, (unsigned long long)n,
                      (long long)f.fa.live);
        check_vfs_clean(&f, where, n);
        verify(&f, acked, MSGS, where, n);
        t_host_free(&f.h);
        if (!fired) break;
    }
    if (getenv("JR_SWEEP_VERBOSE"))
        fprintf(stderr, "%s: %llu steps\n", where, (unsigned long long)n);
    ck_assert_uint_lt(n, MAX_N);
    ck_assert_uint_gt(n, 10);
}
END_TEST

/* _i: bit 0 allocation (else vfs), bit 1 sticky, bit 2 power loss before reopening. */
START_TEST(publishes_survive_faults)
{
    int alloc = _i & 1, sticky = (_i >> 1) & 1, crash = (_i >> 2) & 1;
    char where[96];
    snprintf(where, sizeof where, "publish, %s n%s fails%s", alloc ? "allocation" : "vfs t_call",
             sticky ? " and later" : "", crash ? ", then power loss" : "");
    uint64_t n;
    for (n = 1; n < MAX_N; n++) {
        nfx f;
        build(&f);
        f.use_fa = alloc;
        ck_assert_int_eq(nfx_open(&f), 0);
        t_run_ms(&f.h, 300, 0);
        snapshot_every(&f, 4);
        uint64_t acked[64] = {0};
        for (int i = 0; i < MSGS; i++) acked[i] = (uint64_t)i + 1;
        uint64_t f0 = fired_count(&f, alloc);
        arm(&f, alloc, sticky, n);
        t_call c[PUBS];
        for (int i = 0; i < PUBS; i++) {
            int rc = publish(&f, MSGS + i, &c[i]);
            if (rc) {
                ck_assert_msg(rc == JR_ENOMEM, "%s n=%llu: publish: %s", where,
                              (unsigned long long)n, jr_err_name(rc));
                c[i].done = 1;
                c[i].status = rc;
            }
            if (i % 3 == 2) t_run_ms(&f.h, 5, 0);
        }
        t_run_ms(&f.h, 1200, 0); /* past the request timeout: every callback has run */
        for (int i = 0; i < PUBS; i++) {
            ck_assert_msg(c[i].done, "%s n=%llu: publish %d never completed", where,
                          (unsigned long long)n, i);
            if (c[i].status == 0) acked[MSGS + i] = c[i].seq;
        }
        int fired = fired_count(&f, alloc) > f0;
        if (getenv("JR_SWEEP_TRACE")) {
            fprintf(stderr, "%s n=%llu:", where, (unsigned long long)n);
            for (int i = 0; i < PUBS; i++) fprintf(stderr, " %d", c[i].status);
            fprintf(stderr, " (%s)\n", jr_node_errmsg(f.h.node));
        }
        if (!fired)
            for (int i = 0; i < PUBS; i++) ck_assert_int_eq(c[i].status, 0);
        nfx_close(&f); /* with the fault still armed */
        disarm(&f);
        ck_assert_msg(f.fa.live == 0, "%s n=%llu: %lld blocks leaked", where, (unsigned long long)n,
                      (long long)f.fa.live);
        check_vfs_clean(&f, where, n);
        if (crash) jr__memfs_crash(f.h.vfs, 0);
        verify(&f, acked, MSGS + PUBS, where, n);
        t_host_free(&f.h);
        if (!fired) break;
    }
    if (getenv("JR_SWEEP_VERBOSE"))
        fprintf(stderr, "%s: %llu steps\n", where, (unsigned long long)n);
    ck_assert_uint_lt(n, MAX_N);
    ck_assert_uint_gt(n, 10);
}
END_TEST

typedef struct seg_at {
    char path[64];
    uint64_t size;
} seg_at;

static int last_segment(void *arg, const char *path, uint64_t size)
{
    seg_at *s = arg;
    size_t n = strlen(path);
    if (n > 4 && !strcmp(path + n - 4, ".wal")) {
        snprintf(s->path, sizeof s->path, "%s", path);
        s->size = size;
    }
    return 0;
}

/* The WAL of a single voter loses synced records its stream's store had applied (a failing
 * disk, a restored image of the WAL alone): the store is ahead of the log. The node recovers
 * the shorter log and goes on proposing at indexes the store is past; those publishes cannot be
 * applied, and each is answered at once as not stored (never left to time out), while every
 * message acknowledged before the loss stays readable and publishing recovers once the log
 * passes the store. */
START_TEST(a_store_ahead_of_its_wal_answers_every_publish)
{
    nfx f;
    build(&f);
    seg_at seg = {"", 0};
    ck_assert_int_eq(jr__memfs_walk(f.h.vfs, "/wal/", last_segment, &seg), 0);
    ck_assert(seg.path[0]);
    /* the last 400 bytes: the stream's last entries (the meta group's are older), whose
     * messages the store holds */
    ck_assert_uint_gt(seg.size, 32 + 400);
    ck_assert_int_eq(jr__memfs_truncate(f.h.vfs, seg.path, seg.size - 400), 0);
    ck_assert_int_eq(nfx_open(&f), 0);
    t_run_ms(&f.h, 500, 0);
    int damaged = 0, ok = 0;
    uint64_t acked[64] = {0};
    for (int i = 0; i < MSGS; i++) acked[i] = (uint64_t)i + 1;
    for (int i = 0; i < 3 * MSGS && ok < 3; i++) {
        t_call c;
        ck_assert_int_eq(publish(&f, MSGS + ok, &c), 0);
        ck_assert_msg(wait_call(&f, &c, 400), "publish %d unanswered", i);
        ck_assert_msg(c.status == 0 || c.status == JR_EDAMAGED, "publish %d: %s", i,
                      jr_err_name(c.status));
        if (c.status == 0) acked[MSGS + ok++] = c.seq;
        damaged += c.status == JR_EDAMAGED;
    }
    ck_assert_int_eq(ok, 3);
    ck_assert_int_gt(damaged, 0);
    nfx_close(&f);
    verify(&f, acked, MSGS + 3, "store ahead of its WAL", 0);
    t_host_free(&f.h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("node_sweep");
    TCase *t = tcase_create("sweep");
    tcase_set_timeout(t, 600);
    tcase_add_loop_test(t, open_and_close_with_streams_survive_faults, 0, 4);
    tcase_add_loop_test(t, publishes_survive_faults, 0, 8);
    suite_add_tcase(s, t);
    TCase *a = tcase_create("store_ahead");
    tcase_add_test(a, a_store_ahead_of_its_wal_answers_every_publish);
    suite_add_tcase(s, a);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
