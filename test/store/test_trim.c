/*
 * jr__store_trim: an idle store gives back memory and behaves exactly as before.
 *
 * The model test runs the same random operations (appends, deletes and erasures, purges, skips,
 * syncs, marks, expiry, reads of every kind, catch-up chunks, reopen, crash) on two stores of
 * the same configuration, each on its own simulated disk, and trims one of them at random
 * between operations: every result, every read and the state must be the same, and (without
 * encryption, whose nonces are random) the block files must be byte for byte the same. Then the
 * read-back itself: the active block's memory is a window over its tail and a read before it
 * reads that record alone (bytes counted; with encryption its frame, found from the checkpoints
 * trim keeps, within a few KiB), appends read nothing, and an idle store with a MiB in its active
 * block holds almost nothing; nothing is read when there is nothing to trim; and a read
 * failure or changed bytes give an error (the store fails like on a write error) and lose
 * nothing. A failing seed is printed; replay with TRIM_SEEDS=1 TRIM_FIRST=<seed>.
 */
#include <stdlib.h>

#include "fixture.h"
#include "store/block.h"
#include "util/rand.h"

#define CHECK(cond, ...) ck_assert_msg(cond, "seed %llu step %d: " __VA_ARGS__)

static void open_conf(fx *f, int conf, uint64_t seed, uint64_t block_bytes, int marked)
{
    memset(f, 0, sizeof *f);
    ck_assert_int_eq(jr__memfs_new(NULL, seed, &f->vfs), 0);
    ck_assert_int_eq(f->vfs->mkdir(f->vfs->ctx, "/store"), 0);
    fx_config(f, conf, block_bytes);
    f->cfg.marked = marked;
    int rc = fx_open(f);
    ck_assert_msg(rc == 0, "open %s: %s (%s)", conf_names[conf], jr_strerror(rc), f->err);
}

static uint64_t op_count(jr_vfs *vfs, int op)
{
    jr__memfs_stats st;
    jr__memfs_stats_get(vfs, &st);
    return st.ops[op];
}

static uint64_t pread_count(jr_vfs *vfs)
{
    return op_count(vfs, JR__MEMFS_PREAD);
}

static uint64_t bytes_read(jr_vfs *vfs)
{
    jr__memfs_stats st;
    jr__memfs_stats_get(vfs, &st);
    return st.bytes_read;
}

/* A file store's trim frees the active block's memory whatever its size (a window), with
 * encryption too. */
static int windowed(int conf)
{
    return conf != CONF_MEMORY;
}

/* ---------------------------------------------------------------------------------------------
 * Model: a trimmed store against an untrimmed twin
 */

typedef struct twin {
    fx a; /* never trimmed */
    fx b; /* trimmed at random */
    unsigned long long seed;
    int step;
} twin;

static void same_msg(twin *t, int rca, const jr__store_msg *ma, int rcb, const jr__store_msg *mb,
                     const char *what)
{
    unsigned long long seed = t->seed;
    int step = t->step;
    CHECK(rca == rcb, "%s: %d vs %d (%s)", seed, step, what, rca, rcb, jr__store_errmsg(t->b.st));
    if (rca) return;
    CHECK(ma->seq == mb->seq && ma->ts == mb->ts && ma->subject_len == mb->subject_len &&
              memcmp(ma->subject, mb->subject, ma->subject_len) == 0 &&
              ma->hdr_len == mb->hdr_len && ma->data_len == mb->data_len &&
              (!ma->data_len || memcmp(ma->data, mb->data, ma->data_len) == 0),
          "%s: seq %llu differs", seed, step, what, (unsigned long long)ma->seq);
}

static void same_state(twin *t)
{
    unsigned long long seed = t->seed;
    int step = t->step;
    jr__store_state sa, sb;
    jr__store_state_get(t->a.st, &sa);
    jr__store_state_get(t->b.st, &sb);
    CHECK(memcmp(&sa, &sb, sizeof sa) == 0, "state differs: msgs %llu/%llu last %llu/%llu", seed,
          step, (unsigned long long)sa.msgs, (unsigned long long)sb.msgs,
          (unsigned long long)sa.last_seq, (unsigned long long)sb.last_seq);
    size_t na, nb;
    const jr__seq_range *ra = jr__store_deleted(t->a.st, &na);
    const jr__seq_range *rb = jr__store_deleted(t->b.st, &nb);
    CHECK(na == nb && (!na || memcmp(ra, rb, na * sizeof *ra) == 0), "deleted ranges differ", seed,
          step);
    CHECK(jr__store_durable_seq(t->a.st) == jr__store_durable_seq(t->b.st), "durable seq", seed,
          step);
    CHECK(jr__store_mark_index(t->a.st) == jr__store_mark_index(t->b.st), "mark index", seed, step);
}

/* Every message, in order, through jr__store_next (the trimmed one reads its blocks back). */
static void same_content(twin *t)
{
    jr__store_msg ma, mb;
    uint64_t q = 1;
    for (;;) {
        int rca = jr__store_next(t->a.st, q, NULL, 0, &ma); /* a's memory: b's reads leave it */
        int rcb = jr__store_next(t->b.st, q, NULL, 0, &mb);
        same_msg(t, rca, &ma, rcb, &mb, "next");
        if (rca) break;
        q = ma.seq + 1;
    }
}

typedef struct cmp_files {
    twin *t;
    int n;
} cmp_files;

static int cmp_file_cb(void *arg, const char *name)
{
    cmp_files *c = arg;
    twin *t = c->t;
    char path[128];
    snprintf(path, sizeof path, "/store/ORDERS/%s", name);
    uint8_t *da, *db;
    size_t la, lb;
    ck_assert_int_eq(jr__memfs_read_all(t->a.vfs, path, &da, &la), 0);
    int rc = jr__memfs_read_all(t->b.vfs, path, &db, &lb);
    ck_assert_msg(rc == 0, "seed %llu step %d: %s missing in the trimmed store", t->seed, t->step,
                  path);
    ck_assert_msg(la == lb && memcmp(da, db, la) == 0, "seed %llu step %d: %s differs", t->seed,
                  t->step, path);
    jr__memfs_release(t->a.vfs, da);
    jr__memfs_release(t->b.vfs, db);
    c->n++;
    return 0;
}

static int count_cb(void *arg, const char *name)
{
    (void)name;
    (*(int *)arg)++;
    return 0;
}

/* Without encryption the disks hold the same bytes. */
static void same_files(twin *t)
{
    if (t->a.conf == CONF_MEMORY || t->a.cfg.master_key) return;
    cmp_files c = {t, 0};
    ck_assert_int_eq(t->a.vfs->list(t->a.vfs->ctx, "/store/ORDERS", cmp_file_cb, &c), 0);
    int nb = 0;
    ck_assert_int_eq(t->b.vfs->list(t->b.vfs->ctx, "/store/ORDERS", count_cb, &nb), 0);
    ck_assert_msg(nb == c.n, "seed %llu step %d: %d files vs %d", t->seed, t->step, c.n, nb);
}

static void same_marks(twin *t)
{
    jr__store_mark_rec ra, rb;
    int rca = jr__store_last_mark(t->a.st, &ra);
    uint64_t ia = ra.index;
    size_t la = rca ? 0 : ra.meta_len;
    int rcb = jr__store_last_mark(t->b.st, &rb);
    CHECK(rca == rcb && (rca || (ia == rb.index && la == rb.meta_len)), "last mark differs",
          t->seed, t->step);
    size_t ca = 0, cb = 0;
    for (;;) {
        rca = jr__store_marks_next(t->a.st, &ca, &ra);
        uint64_t index = ra.index, key = ra.key;
        rcb = jr__store_marks_next(t->b.st, &cb, &rb);
        CHECK(rca == rcb && (rca || (index == rb.index && key == rb.key)), "kept marks differ",
              t->seed, t->step);
        if (rca) break;
    }
}

static void twin_reopen(twin *t, int crash)
{
    fx *fs[2] = {&t->a, &t->b};
    for (int i = 0; i < 2; i++) {
        fx *f = fs[i];
        if (f->conf == CONF_MEMORY) continue;
        if (crash) {
            jr__store_abandon(f->st);
            jr__memfs_crash(f->vfs, 0);
        } else {
            jr__store_close(f->st);
        }
        f->st = NULL;
        int rc = fx_open(f);
        ck_assert_msg(rc == 0, "seed %llu step %d: reopen: %s", t->seed, t->step, f->err);
    }
}

static void run_twin(uint64_t seed_)
{
    unsigned long long seed = seed_;
    jr__rand r;
    jr__rand_seed(&r, seed);
    twin t;
    memset(&t, 0, sizeof t);
    t.seed = seed;
    int conf = (int)(seed % NCONF);
    int marked = conf != CONF_MEMORY && jr__rand_below(&r, 2);
    /* small blocks rotate often; some blocks are large, and windows over them see many trims */
    uint64_t bb = jr__rand_below(&r, 2) ? 512 + jr__rand_below(&r, 8000)
                                        : (jr__rand_below(&r, 2) ? 200000 : 1u << 20);
    open_conf(&t.a, conf, seed, bb, marked);
    open_conf(&t.b, conf, seed, bb, marked);
    if (jr__rand_below(&r, 3) == 0) {
        jr__store_limits lim = {.max_msgs = 10 + jr__rand_below(&r, 60),
                                .max_msgs_per_subject = jr__rand_below(&r, 2) ? 0 : 3,
                                .max_age_ns = jr__rand_below(&r, 2) ? 0 : 40000};
        ck_assert_int_eq(jr__store_set_limits(t.a.st, &lim), 0);
        ck_assert_int_eq(jr__store_set_limits(t.b.st, &lim), 0);
    }
    static uint8_t data[70000];
    uint64_t mark_index = 0, key = 0;
    int steps = 150 + (int)jr__rand_below(&r, 250);
    for (t.step = 0; t.step < steps; t.step++) {
        jr__store_state s;
        jr__store_state_get(t.a.st, &s);
        uint64_t op = jr__rand_below(&r, 100);
        int rca = 0, rcb = 0;
        char subj[8];
        snprintf(subj, sizeof subj, "c.%u", (unsigned)jr__rand_below(&r, 6));
        uint64_t any = s.first_seq + jr__rand_below(&r, s.last_seq - s.first_seq + 3);
        if (any) any--;
        if (op < 40) {
            size_t len = jr__rand_below(&r, 20) == 0 ? 3000 + jr__rand_below(&r, 67000)
                                                     : jr__rand_below(&r, 400);
            for (size_t i = 0; i < len; i++) data[i] = (uint8_t)jr__rand_next(&r);
            int64_t ts = (int64_t)(s.last_seq + 1) * 1000;
            rca = jr__store_append(t.a.st, s.last_seq + 1, subj, strlen(subj), "h", 1, data, len,
                                   ts, NULL);
            rcb = jr__store_append(t.b.st, s.last_seq + 1, subj, strlen(subj), "h", 1, data, len,
                                   ts, NULL);
        } else if (op < 48) {
            int erase = jr__rand_below(&r, 3) == 0;
            rca = jr__store_delete(t.a.st, any, erase);
            rcb = jr__store_delete(t.b.st, any, erase);
        } else if (op < 51) {
            jr__purge p = {0};
            switch (jr__rand_below(&r, 3)) {
            case 0:
                p.filter = subj;
                p.filter_len = strlen(subj);
                break;
            case 1:
                p.seq = any;
                break;
            default:
                p.keep = jr__rand_below(&r, 20);
                break;
            }
            uint64_t na = 0, nb = 0;
            rca = jr__store_purge(t.a.st, &p, &na);
            rcb = jr__store_purge(t.b.st, &p, &nb);
            CHECK(na == nb, "purged %llu vs %llu", seed, t.step, (unsigned long long)na,
                  (unsigned long long)nb);
        } else if (op < 53) {
            uint64_t upto = s.last_seq + jr__rand_below(&r, 4);
            rca = jr__store_skip(t.a.st, upto);
            rcb = jr__store_skip(t.b.st, upto);
        } else if (op < 63) {
            rca = jr__store_sync(t.a.st);
            rcb = jr__store_sync(t.b.st);
        } else if (op < 70 && marked) {
            uint8_t meta[40];
            size_t ml = jr__rand_below(&r, sizeof meta);
            for (size_t i = 0; i < ml; i++) meta[i] = (uint8_t)jr__rand_next(&r);
            uint64_t k = jr__rand_below(&r, 2) ? ++key : 0;
            uint64_t floor = key > 3 ? key - 3 : 0;
            rca = jr__store_mark(t.a.st, ++mark_index, meta, ml, k, floor);
            rcb = jr__store_mark(t.b.st, mark_index, meta, ml, k, floor);
        } else if (op < 80) {
            jr__store_msg ma, mb;
            int kind = (int)jr__rand_below(&r, 3);
            if (kind == 0) {
                rca = jr__store_get(t.a.st, any, &ma);
            } else if (kind == 1) {
                rca = jr__store_get_last(t.a.st, subj, strlen(subj), &ma);
            } else {
                rca = jr__store_next(t.a.st, any, "c.*", 3, &ma);
            }
            if (kind == 0) {
                rcb = jr__store_get(t.b.st, any, &mb);
            } else if (kind == 1) {
                rcb = jr__store_get_last(t.b.st, subj, strlen(subj), &mb);
            } else {
                rcb = jr__store_next(t.b.st, any, "c.*", 3, &mb);
            }
            same_msg(&t, rca, &ma, rcb, &mb, "read");
            rca = rcb = 0;
        } else if (op < 84) {
            jr__buf ca, cb;
            jr__buf_init(&ca, NULL);
            jr__buf_init(&cb, NULL);
            uint64_t na = 0, nb = 0;
            size_t max = 1 + jr__rand_below(&r, 20000);
            rca = jr__store_read_chunk(t.a.st, any, max, &ca, &na);
            rcb = jr__store_read_chunk(t.b.st, any, max, &cb, &nb);
            CHECK(na == nb && ca.len == cb.len &&
                      (!ca.len || memcmp(ca.data, cb.data, ca.len) == 0),
                  "catch-up chunks differ", seed, t.step);
            jr__buf_free(&ca);
            jr__buf_free(&cb);
        } else if (op < 86) {
            int64_t now = (int64_t)(s.last_seq + jr__rand_below(&r, 50)) * 1000;
            rca = jr__store_expire(t.a.st, now);
            rcb = jr__store_expire(t.b.st, now);
        } else if (op < 89) {
            twin_reopen(&t, 0);
            if (marked) same_marks(&t);
        } else if (op < 91) {
            twin_reopen(&t, 1);
            if (marked) same_marks(&t);
        }
        CHECK(rca == rcb, "op %llu: %d vs %d (%s)", seed, t.step, (unsigned long long)op, rca, rcb,
              jr__store_errmsg(t.b.st));
        CHECK(rca == 0 || rca == JR_ENOTFOUND || rca == JR_ERANGE, "op %llu failed: %s (%s)", seed,
              t.step, (unsigned long long)op, jr_strerror(rca), jr__store_errmsg(t.a.st));
        same_state(&t);
        if (jr__rand_below(&r, 3) == 0) ck_assert_int_eq(jr__store_trim(t.b.st), 0);
        if (t.step % 25 == 0) {
            same_content(&t);
            same_files(&t);
        }
    }
    same_content(&t);
    twin_reopen(&t, 0);
    same_state(&t);
    same_content(&t);
    same_files(&t);
    fx_done(&t.a);
    fx_done(&t.b);
}

START_TEST(trimmed_store_behaves_like_an_untrimmed_one)
{
    const char *e = getenv("TRIM_SEEDS");
    const char *fs = getenv("TRIM_FIRST");
    uint64_t n = e ? strtoull(e, NULL, 10) : 200;
    uint64_t first = fs ? strtoull(fs, NULL, 10) : 1;
    for (uint64_t seed = first; seed < first + n; seed++) run_twin(seed);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The read-back
 */

static void append_n(fx *f, uint64_t from, uint64_t to)
{
    for (uint64_t q = from; q <= to; q++) {
        char d[32];
        int n = snprintf(d, sizeof d, "message %llu", (unsigned long long)q);
        int rc = jr__store_append(f->st, q, "a.b", 3, NULL, 0, d, (size_t)n, (int64_t)q, NULL);
        ck_assert_msg(rc == 0, "%s: append %llu: %s", conf_names[f->conf], (unsigned long long)q,
                      jr__store_errmsg(f->st));
    }
}

static void expect_msg(fx *f, uint64_t q)
{
    jr__store_msg m;
    int rc = jr__store_get(f->st, q, &m);
    ck_assert_msg(rc == 0, "%s: get %llu: %s (%s)", conf_names[f->conf], (unsigned long long)q,
                  jr_strerror(rc), jr__store_errmsg(f->st));
    char d[32];
    int n = snprintf(d, sizeof d, "message %llu", (unsigned long long)q);
    ck_assert(m.data_len == (size_t)n && memcmp(m.data, d, (size_t)n) == 0);
}

/* Encrypted: a trimmed record is read alone when needed (one pread, its frame found from the
 * checkpoints kept at trim), appends read nothing, and records appended after the trim are served
 * from memory; the file of a synced active block is closed and opened again when needed. */
START_TEST(active_block_is_read_back_when_needed)
{
    for (int conf = CONF_FILE_ENC; conf < NCONF; conf++) {
        fx f;
        open_conf(&f, conf, 1, 1 << 20, 0);
        append_n(&f, 1, 5);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        uint64_t o0 = op_count(f.vfs, JR__MEMFS_OPEN);
        uint64_t p0 = pread_count(f.vfs);
        jr__store_state st;
        jr__store_state_get(f.st, &st); /* no read needed */
        ck_assert_uint_eq(st.msgs, 5);
        ck_assert_uint_eq(pread_count(f.vfs), p0);
        expect_msg(&f, 3);
        ck_assert_uint_eq(pread_count(f.vfs), p0 + 1);
        ck_assert_uint_eq(op_count(f.vfs, JR__MEMFS_OPEN), o0 + 1);
        expect_msg(&f, 5);
        ck_assert_uint_eq(pread_count(f.vfs), p0 + 2);
        /* an append reads nothing, and the new record is buffered: trim does nothing */
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        append_n(&f, 6, 6);
        ck_assert_uint_eq(pread_count(f.vfs), p0 + 2);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        expect_msg(&f, 6);
        ck_assert_uint_eq(pread_count(f.vfs), p0 + 2);
        expect_msg(&f, 1);
        ck_assert_uint_eq(pread_count(f.vfs), p0 + 3);
        append_n(&f, 7, 7);
        uint64_t o1 = op_count(f.vfs, JR__MEMFS_OPEN);
        ck_assert_int_eq(jr__store_trim(f.st), 0); /* buffered: nothing */
        expect_msg(&f, 7);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_uint_eq(op_count(f.vfs, JR__MEMFS_OPEN), o1);
        ck_assert_uint_eq(pread_count(f.vfs), p0 + 3);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        append_n(&f, 8, 8); /* reopens the file to write, reads nothing */
        ck_assert_uint_eq(op_count(f.vfs, JR__MEMFS_OPEN), o1 + 1);
        ck_assert_uint_eq(pread_count(f.vfs), p0 + 3);
        expect_msg(&f, 7);
        ck_assert_uint_eq(pread_count(f.vfs), p0 + 4);
        fx_cycle(&f);
        for (uint64_t q = 1; q <= 8; q++) expect_msg(&f, q);
        fx_done(&f);
    }
}
END_TEST

/* Encrypted, many small records trimmed in several rounds: every one of them reads back with
 * one pread of a few KiB at most (from the checkpoint before it to its frame), whatever its
 * place; damage to a frame length between a checkpoint and the record is corruption. */
START_TEST(encrypted_window_reads_a_few_kib_per_record)
{
    for (int conf = CONF_FILE_ENC; conf < NCONF; conf++) {
        fx f;
        open_conf(&f, conf, 11, 4 << 20, 0);
        uint64_t q = 1;
        for (int round = 0; round < 4; round++) {
            append_n(&f, q, q + 499);
            q += 500;
            ck_assert_int_eq(jr__store_sync(f.st), 0);
            ck_assert_int_eq(jr__store_trim(f.st), 0);
        }
        for (uint64_t i = 1; i < q; i++) {
            uint64_t p0 = pread_count(f.vfs), b0 = bytes_read(f.vfs);
            expect_msg(&f, i);
            ck_assert_uint_eq(pread_count(f.vfs), p0 + 1);
            ck_assert_msg(bytes_read(f.vfs) - b0 <= 4096 + 33 * JR__BLK_FRAME_OVERHEAD + 200,
                          "%s: %llu bytes read for seq %llu", conf_names[conf],
                          (unsigned long long)(bytes_read(f.vfs) - b0), (unsigned long long)i);
        }
        /* the length of the 11th frame changed: a record after it (before the next checkpoint:
         * at most 32 records apart) cannot be found, and says so */
        jr__store_msg m;
        const char *path = "/store/ORDERS/0000000001.blk";
        uint8_t *img;
        size_t n;
        ck_assert_int_eq(jr__memfs_read_all(f.vfs, path, &img, &n), 0);
        size_t at = JR__BLK_OPEN_HDR;
        for (int i = 0; i < 10; i++) at += 28 + (img[at] | (size_t)img[at + 1] << 8);
        jr__memfs_release(f.vfs, img);
        ck_assert_int_eq(jr__memfs_flip_bits(f.vfs, path, at, 1, 1), 0);
        ck_assert_int_eq(jr__store_get(f.st, 12, &m), JR_ECORRUPT);
        ck_assert_int_eq(jr__store_append(f.st, q, "a.b", 3, NULL, 0, "x", 1, (int64_t)q, NULL),
                         JR_ECORRUPT);
        fx_done(&f);
    }
}
END_TEST

/* Nothing is freed while records are buffered; a memory store ignores trim. */
START_TEST(trim_is_a_no_op_when_it_cannot_free)
{
    for (int conf = CONF_MEMORY; conf < NCONF; conf++) {
        fx f;
        open_conf(&f, conf, 2, 1 << 20, 0);
        append_n(&f, 1, 3);
        ck_assert_int_eq(jr__store_trim(f.st), 0); /* not written yet */
        if (conf != CONF_MEMORY) jr__memfs_fail(f.vfs, JR__MEMFS_PREAD, 1, JR_EIO, 1, NULL);
        expect_msg(&f, 2);
        append_n(&f, 4, 4);
        jr__memfs_fail_clear(f.vfs);
        static uint8_t big[64 * 1024];
        memset(big, 'x', sizeof big);
        ck_assert_int_eq(jr__store_append(f.st, 5, "big", 3, NULL, 0, big, sizeof big, 5, NULL), 0);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        if (conf != CONF_MEMORY && !windowed(conf))
            jr__memfs_fail(f.vfs, JR__MEMFS_PREAD, 1, JR_EIO, 1, NULL);
        expect_msg(&f, 4);
        append_n(&f, 6, 6);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        jr__memfs_fail_clear(f.vfs);
        fx_done(&f);
    }
}
END_TEST

/* A read failure (or a failure to open the file again) while reading the active block back: the
 * operation fails with the error, the store refuses writes like after a write error, reads try
 * again, and a reopen has everything that was written. The operations: a read of an old record,
 * an append, a mark, an erase in the active block (which needs the whole block). Without
 * encryption an append or a mark reads nothing (the window), so a read failure cannot hit it. */
START_TEST(read_back_failure_is_an_error_and_loses_nothing)
{
    for (int conf = CONF_FILE; conf < NCONF; conf++) {
        for (int k = 0; k < 8; k++) {
            int op = k % 4, fail_op = k < 4 ? JR__MEMFS_PREAD : JR__MEMFS_OPEN;
            fx f;
            open_conf(&f, conf, 3, 1 << 20, op == 2);
            append_n(&f, 1, 5);
            if (op == 2)
                ck_assert_int_eq(jr__store_mark(f.st, 1, "m", 1, 0, 0), 0);
            else
                ck_assert_int_eq(jr__store_sync(f.st), 0);
            ck_assert_int_eq(jr__store_trim(f.st), 0);
            jr__memfs_fail(f.vfs, fail_op, 1, JR_EIO, 0, NULL);
            uint64_t p0 = pread_count(f.vfs);
            jr__store_msg m;
            int rc;
            if (op == 0) {
                rc = jr__store_get(f.st, 4, &m);
            } else if (op == 1) {
                rc = jr__store_append(f.st, 6, "a.b", 3, NULL, 0, "x", 1, 6, NULL);
            } else if (op == 2) {
                rc = jr__store_mark(f.st, 2, "n", 1, 0, 0);
            } else {
                rc = jr__store_delete(f.st, 2, 1);
            }
            if (windowed(conf) && fail_op == JR__MEMFS_PREAD && (op == 1 || op == 2)) {
                ck_assert_msg(rc == 0, "%s op %d: %s", conf_names[conf], op, jr_strerror(rc));
                ck_assert_uint_eq(pread_count(f.vfs), p0);
                jr__memfs_fail_clear(f.vfs);
                fx_cycle(&f);
                jr__store_state st;
                jr__store_state_get(f.st, &st);
                ck_assert_uint_eq(st.msgs, op == 1 ? 6 : 5);
                for (uint64_t q = 1; q <= 5; q++) expect_msg(&f, q);
                fx_done(&f);
                continue;
            }
            ck_assert_msg(rc == JR_EIO, "%s op %d fail %d: %s", conf_names[conf], op, fail_op,
                          jr_strerror(rc));
            ck_assert_msg(strstr(jr__store_errmsg(f.st), "active block") != NULL, "%s",
                          jr__store_errmsg(f.st));
            /* writes are refused from now on; reads read it back */
            ck_assert_int_eq(jr__store_append(f.st, 6, "a.b", 3, NULL, 0, "x", 1, 6, NULL), JR_EIO);
            ck_assert_int_eq(jr__store_sync(f.st), JR_EIO);
            for (uint64_t q = 1; q <= 5; q++) expect_msg(&f, q);
            jr__store_abandon(f.st);
            f.st = NULL;
            ck_assert_int_eq(fx_open(&f), 0);
            jr__store_state st;
            jr__store_state_get(f.st, &st);
            ck_assert_uint_eq(st.msgs, 5);
            ck_assert_uint_eq(st.last_seq, 5);
            for (uint64_t q = 1; q <= 5; q++) expect_msg(&f, q);
            append_n(&f, 6, 7);
            ck_assert_int_eq(jr__store_trim(f.st), 0);
            expect_msg(&f, 7);
            fx_done(&f);
        }
    }
}
END_TEST

/* Bytes of the active block changed behind the store's back (or cut off): reading them back
 * sees it (checksums, authentication, length) and says JR_ECORRUPT, never returns other data;
 * the store is failed (writes give the error). Without encryption a read of another record reads
 * only that one and still works; reading back the whole block (an erase) sees the damage too. */
START_TEST(read_back_of_changed_bytes_is_corruption)
{
    for (int conf = CONF_FILE; conf < NCONF; conf++) {
        for (int how = 0; how < 4; how++) {
            fx f;
            open_conf(&f, conf, 4, 1 << 20, 0);
            append_n(&f, 1, 5);
            ck_assert_int_eq(jr__store_sync(f.st), 0);
            ck_assert_int_eq(jr__store_trim(f.st), 0);
            const char *path = "/store/ORDERS/0000000001.blk";
            if (how != 1)
                ck_assert_int_eq(jr__memfs_flip_bits(f.vfs, path, 40, 1, 1), 0); /* seq 1 */
            else
                ck_assert_int_eq(jr__memfs_truncate(f.vfs, path, 60), 0);
            if (windowed(conf) && how != 1) expect_msg(&f, 5); /* not read: intact */
            jr__store_msg m;
            int rc;
            if (how == 3)
                rc = jr__store_delete(f.st, 4, 1); /* needs the whole block */
            else
                rc = jr__store_get(f.st, how == 2 ? 1 : 5, &m);
            if (how == 0 && windowed(conf)) rc = jr__store_get(f.st, 1, &m);
            ck_assert_msg(rc == JR_ECORRUPT, "%s how %d: %s", conf_names[conf], how,
                          jr_strerror(rc));
            ck_assert_int_eq(jr__store_append(f.st, 6, "a.b", 3, NULL, 0, "x", 1, 6, NULL),
                             JR_ECORRUPT);
            fx_done(&f);
        }
    }
}
END_TEST

/* The active block's file gone while the store was trimmed (its descriptor closed): every later
 * operation reports corruption, never JR_ENOTFOUND, which the stream layer would take for "no
 * such message" (a delete refused as a decision, a wrong expected-last-subject-seq check). */
START_TEST(missing_active_block_is_corruption_not_not_found)
{
    for (int conf = CONF_FILE; conf < NCONF; conf++) {
        fx f;
        open_conf(&f, conf, 4, 1 << 20, 0);
        append_n(&f, 1, 5);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        ck_assert_int_eq(f.vfs->remove(f.vfs->ctx, "/store/ORDERS/0000000001.blk"), 0);
        jr__store_msg m;
        ck_assert_int_eq(jr__store_get(f.st, 5, &m), JR_ECORRUPT);
        ck_assert_int_eq(jr__store_delete(f.st, 3, 1), JR_ECORRUPT);
        ck_assert_int_eq(jr__store_append(f.st, 6, "a.b", 3, NULL, 0, "x", 1, 6, NULL),
                         JR_ECORRUPT);
        fx_done(&f);
    }
}
END_TEST

/* Rotation of a trimmed active block: sealed (lz4, encryption) it is read back first; an open
 * block is only synced and left. Either way every message is still there, also after reopen. */
START_TEST(rotation_of_a_trimmed_block)
{
    for (int conf = CONF_FILE; conf < NCONF; conf++) {
        fx f;
        open_conf(&f, conf, 5, 600, 0);
        uint64_t q = 1;
        for (int round = 0; round < 6; round++) {
            append_n(&f, q, q + 4);
            q += 5;
            ck_assert_int_eq(jr__store_sync(f.st), 0);
            ck_assert_int_eq(jr__store_trim(f.st), 0);
        }
        for (uint64_t i = 1; i < q; i++) expect_msg(&f, i);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        ck_assert_int_eq(jr__store_delete(f.st, q - 1, 1), 0); /* erase in the active block */
        fx_cycle(&f);
        for (uint64_t i = 1; i + 1 < q; i++) expect_msg(&f, i);
        jr__store_msg m;
        ck_assert_int_eq(jr__store_get(f.st, q - 1, &m), JR_ENOTFOUND);
        fx_done(&f);
    }
}
END_TEST

/* Written but not yet synced (a flush of a large buffer): trim keeps the file open, so the next
 * sync still makes it durable. */
START_TEST(trim_before_sync_keeps_the_block_syncable)
{
    for (int conf = CONF_FILE; conf < NCONF; conf++) {
        fx f;
        open_conf(&f, conf, 6, 4 << 20, 0);
        static uint8_t d[100000];
        memset(d, 'z', sizeof d);
        for (uint64_t q = 1; q <= 11; q++) /* the 11th crosses 1 MiB: all written, not synced */
            ck_assert_int_eq(
                jr__store_append(f.st, q, "a.b", 3, NULL, 0, d, sizeof d, (int64_t)q, NULL), 0);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        jr__store_abandon(f.st);
        f.st = NULL;
        jr__memfs_crash(f.vfs, 0);
        ck_assert_int_eq(fx_open(&f), 0);
        jr__store_state st;
        jr__store_state_get(f.st, &st);
        ck_assert_uint_eq(st.msgs, 11);
        jr__store_msg m;
        ck_assert_int_eq(jr__store_get(f.st, 11, &m), 0);
        ck_assert(m.data_len == sizeof d && m.data[sizeof d - 1] == 'z');
        fx_done(&f);
    }
}
END_TEST

static void append_big(fx *f, uint64_t q, size_t len)
{
    static uint8_t d[1 << 17];
    ck_assert(len <= sizeof d);
    memset(d, (int)(q * 7), len);
    int rc = jr__store_append(f->st, q, "a.b", 3, NULL, 0, d, len, (int64_t)q, NULL);
    ck_assert_msg(rc == 0, "%s: append %llu: %s", conf_names[f->conf], (unsigned long long)q,
                  jr__store_errmsg(f->st));
}

static void expect_big(fx *f, uint64_t q, size_t len)
{
    jr__store_msg m;
    int rc = jr__store_get(f->st, q, &m);
    ck_assert_msg(rc == 0, "%s: get %llu: %s (%s)", conf_names[f->conf], (unsigned long long)q,
                  jr_strerror(rc), jr__store_errmsg(f->st));
    ck_assert_uint_eq(m.data_len, len);
    size_t i = 0; /* one assertion per message: Check writes down every one */
    while (i < len && m.data[i] == (uint8_t)(q * 7)) i++;
    ck_assert_msg(i == len, "seq %llu byte %zu", (unsigned long long)q, i);
}

/* Trim frees the active block's records whatever their number: a read of one of them then reads
 * that record alone from the file (one pread of its bytes, or with encryption of its frame), an
 * append reads nothing, and records appended after the trim are served from memory until the
 * next trim. */
START_TEST(window_reads_only_the_record)
{
    for (int conf = CONF_FILE; conf < NCONF; conf++) {
        if (!windowed(conf)) continue;
        fx f;
        open_conf(&f, conf, 8, 4 << 20, 0);
        const size_t len = 10000, rec = len + 3 + 36; /* payload, subject, record overhead */
        /* what a read of one record reads: with encryption its frame (records this large are
         * each a checkpoint of the trimmed part, so the read starts at the frame) */
        const size_t frame = rec + (f.cfg.master_key ? JR__BLK_FRAME_OVERHEAD : 0);
        for (uint64_t q = 1; q <= 100; q++) append_big(&f, q, len); /* about 1 MiB */
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        uint64_t p0 = pread_count(f.vfs), b0 = bytes_read(f.vfs);
        uint64_t o0 = op_count(f.vfs, JR__MEMFS_OPEN);
        expect_big(&f, 37, len);
        ck_assert_uint_eq(pread_count(f.vfs), p0 + 1);
        ck_assert_msg(bytes_read(f.vfs) - b0 < 2 * rec, "%llu bytes read for a record of %zu",
                      (unsigned long long)(bytes_read(f.vfs) - b0), rec);
        ck_assert_uint_eq(op_count(f.vfs, JR__MEMFS_OPEN), o0 + 1); /* the file opened again */
        /* appends read nothing; what they add is read from memory */
        uint64_t p1 = pread_count(f.vfs), b1 = bytes_read(f.vfs);
        for (uint64_t q = 101; q <= 110; q++) append_big(&f, q, len);
        expect_big(&f, 105, len);
        expect_big(&f, 110, len);
        ck_assert_uint_eq(pread_count(f.vfs), p1);
        ck_assert_uint_eq(bytes_read(f.vfs), b1);
        expect_big(&f, 100, len); /* before the window: one record */
        ck_assert_uint_eq(pread_count(f.vfs), p1 + 1);
        ck_assert_uint_eq(bytes_read(f.vfs) - b1, frame);
        /* buffered records keep the window; once written, trim moves past them too */
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        expect_big(&f, 110, len);
        ck_assert_uint_eq(pread_count(f.vfs), p1 + 1);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        expect_big(&f, 110, len);
        ck_assert_uint_eq(pread_count(f.vfs), p1 + 2);
        /* a catch-up chunk reads record by record: with encryption each frame alone; without,
         * the first record alone (no read of the block ended just before it), then the
         * second's read reads ahead 64 KiB, which holds the third */
        jr__buf c;
        jr__buf_init(&c, NULL);
        uint64_t next = 0, b2 = bytes_read(f.vfs), p2 = pread_count(f.vfs);
        ck_assert_int_eq(jr__store_read_chunk(f.st, 50, 3 * rec, &c, &next), 0);
        ck_assert_uint_eq(next, 53);
        ck_assert_uint_eq(c.len, 3 * rec);
        if (f.cfg.master_key) {
            ck_assert_uint_eq(bytes_read(f.vfs) - b2, 3 * frame);
            ck_assert_uint_eq(pread_count(f.vfs) - p2, 3);
        } else {
            ck_assert_uint_eq(bytes_read(f.vfs) - b2, rec + (64u << 10));
            ck_assert_uint_eq(pread_count(f.vfs) - p2, 2);
        }
        jr__buf_free(&c);
        for (uint64_t q = 1; q <= 110; q++) expect_big(&f, q, len);
        fx_cycle(&f);
        for (uint64_t q = 1; q <= 110; q++) expect_big(&f, q, len);
        fx_done(&f);
    }
}
END_TEST

/* Records read in seq order from open blocks (rotated ones, and the active block's trimmed
 * part) cost one pread per 64 KiB, not one per record; a read that does not follow the
 * previous one reads its record alone. */
START_TEST(reads_in_seq_order_read_ahead)
{
    fx f;
    open_conf(&f, CONF_FILE, 9, 256 << 10, 0);
    const size_t len = 1000, rec = len + 3 + 36;
    const uint64_t n = 600; /* about 620 KB: two rotated blocks and the active one */
    for (uint64_t q = 1; q <= n; q++) append_big(&f, q, len);
    ck_assert_int_eq(jr__store_sync(f.st), 0);
    ck_assert_int_eq(jr__store_trim(f.st), 0);
    uint64_t p0 = pread_count(f.vfs), b0 = bytes_read(f.vfs);
    for (uint64_t q = 1; q <= n; q++) expect_big(&f, q, len);
    uint64_t preads = pread_count(f.vfs) - p0, bytes = bytes_read(f.vfs) - b0;
    /* per block: its first record alone, then 64 KiB at a time */
    ck_assert_msg(preads <= 3 * (1 + (256 << 10) / (64 << 10) + 1),
                  "%llu preads for %llu records in seq order", (unsigned long long)preads,
                  (unsigned long long)n);
    ck_assert_uint_ge(bytes, n * rec);
    ck_assert_uint_le(bytes, n * rec + 3 * (64 << 10));
    static const uint64_t random[] = {13, 311, 150, 420, 2, 599};
    for (size_t i = 0; i < sizeof random / sizeof random[0]; i++) {
        uint64_t p1 = pread_count(f.vfs), b1 = bytes_read(f.vfs);
        expect_big(&f, random[i], len);
        ck_assert_uint_eq(pread_count(f.vfs) - p1, 1);
        ck_assert_uint_eq(bytes_read(f.vfs) - b1, rec);
    }
    /* an append rotates nothing here and leaves what was read ahead valid: the file's bytes
     * before the window never change */
    append_big(&f, n + 1, len);
    for (uint64_t q = 1; q <= n + 1; q++) expect_big(&f, q, len);
    fx_done(&f);
}
END_TEST

/* A trimmed window, then what needs the whole block: an erase in the active block (rewritten
 * from the whole plaintext) and rotation (lz4: sealed from it). Everything stays readable, also
 * after reopen, and the store goes on appending after the rewritten block. */
START_TEST(window_then_whole_block)
{
    for (int conf = CONF_FILE; conf < NCONF; conf++) {
        if (!windowed(conf)) continue;
        fx f;
        open_conf(&f, conf, 9, 300000, 0);
        const size_t len = 20000;
        for (uint64_t q = 1; q <= 5; q++) append_big(&f, q, len);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        append_big(&f, 6, len); /* in the window, buffered */
        ck_assert_int_eq(jr__store_delete(f.st, 3, 1), 0);
        jr__store_msg m;
        ck_assert_int_eq(jr__store_get(f.st, 3, &m), JR_ENOTFOUND);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        for (uint64_t q = 7; q <= 20; q++) { /* rotates (about 14 records per block) */
            append_big(&f, q, len);
            if (q % 4 == 0) {
                ck_assert_int_eq(jr__store_sync(f.st), 0);
                ck_assert_int_eq(jr__store_trim(f.st), 0);
            }
        }
        for (uint64_t q = 1; q <= 20; q++)
            if (q != 3) expect_big(&f, q, len);
        fx_cycle(&f);
        for (uint64_t q = 1; q <= 20; q++)
            if (q != 3) expect_big(&f, q, len);
        ck_assert_int_eq(jr__store_get(f.st, 3, &m), JR_ENOTFOUND);
        fx_done(&f);
    }
}
END_TEST

/* Encrypted, trimmed twice, then more appended into the window and written but not synced (more
 * than a flush's worth), then a crash that may tear those writes: the store reopens with every
 * synced message and the unsynced ones that survived whole, serves them from a trimmed window
 * again, and appends after them. */
START_TEST(encrypted_window_then_crash)
{
    for (int conf = CONF_FILE_ENC; conf < NCONF; conf++) {
        for (int torn = 0; torn < 2; torn++) {
            fx f;
            open_conf(&f, conf, 12 + (uint64_t)torn, 4 << 20, 0);
            append_n(&f, 1, 100);
            ck_assert_int_eq(jr__store_sync(f.st), 0);
            ck_assert_int_eq(jr__store_trim(f.st), 0);
            append_n(&f, 101, 150);
            ck_assert_int_eq(jr__store_sync(f.st), 0);
            ck_assert_int_eq(jr__store_trim(f.st), 0);
            expect_msg(&f, 42);
            expect_msg(&f, 149);
            const size_t len = 100000;
            for (uint64_t q = 151; q <= 161; q++) append_big(&f, q, len); /* crosses a flush */
            jr__store_abandon(f.st);
            f.st = NULL;
            jr__memfs_crash(f.vfs, torn);
            int rc = fx_open(&f);
            ck_assert_msg(rc == 0, "reopen: %s (%s)", jr_strerror(rc), f.err);
            jr__store_state st;
            jr__store_state_get(f.st, &st);
            ck_assert_uint_ge(st.last_seq, 150);
            ck_assert_uint_le(st.last_seq, 161);
            ck_assert_uint_eq(st.msgs, st.last_seq);
            uint64_t last = st.last_seq, big_hi = st.last_seq;
            ck_assert_int_eq(jr__store_trim(f.st), 0);
            for (int round = 0; round < 2; round++) {
                for (uint64_t q = 1; q <= last; q++) {
                    if (q <= 150 || q > big_hi)
                        expect_msg(&f, q);
                    else
                        expect_big(&f, q, len);
                }
                append_n(&f, last + 1, last + 5);
                last += 5;
                ck_assert_int_eq(jr__store_sync(f.st), 0);
                ck_assert_int_eq(jr__store_trim(f.st), 0);
                for (uint64_t q = last - 4; q <= last; q++) expect_msg(&f, q);
                fx_cycle(&f);
            }
            fx_done(&f);
        }
    }
}
END_TEST

/* A counting allocator: live bytes requested (each block carries its size in front). */
typedef struct counter {
    int64_t live;
} counter;

static void *c_malloc(void *ctx, size_t n)
{
    uint8_t *p = malloc(n + 16);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    ((counter *)ctx)->live += (int64_t)n;
    return p + 16;
}

static void *c_realloc(void *ctx, void *q, size_t n)
{
    size_t old = 0;
    uint8_t *b = q ? (uint8_t *)q - 16 : NULL;
    if (b) memcpy(&old, b, sizeof old);
    uint8_t *p = realloc(b, n + 16);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    ((counter *)ctx)->live += (int64_t)n - (int64_t)old;
    return p + 16;
}

static void c_free(void *ctx, void *q)
{
    if (!q) return;
    uint8_t *b = (uint8_t *)q - 16;
    size_t n;
    memcpy(&n, b, sizeof n);
    ((counter *)ctx)->live -= (int64_t)n;
    free(b);
}

/* What an idle store holds: after many messages came and went and a mark, a trimmed store keeps
 * only its structures (no index capacity, no active block copy, no read state). */
START_TEST(an_idle_trimmed_store_holds_little)
{
    for (int conf = CONF_MEMORY; conf < NCONF; conf++) {
        counter c = {0};
        jr_allocator a = {JR_ALLOCATOR_VERSION, &c, c_malloc, c_realloc, c_free};
        fx f;
        memset(&f, 0, sizeof f);
        ck_assert_int_eq(jr__memfs_new(NULL, 7, &f.vfs), 0);
        ck_assert_int_eq(f.vfs->mkdir(f.vfs->ctx, "/store"), 0);
        fx_config(&f, conf, 1 << 20);
        f.cfg.alloc = &a;
        f.cfg.marked = conf != CONF_MEMORY;
        ck_assert_int_eq(fx_open(&f), 0);
        append_n(&f, 1, 1000); /* about 50 KiB: the active block can be trimmed */
        expect_msg(&f, 7);
        jr__purge all = {0};
        ck_assert_int_eq(jr__store_purge(f.st, &all, NULL), 0);
        if (f.cfg.marked)
            ck_assert_int_eq(jr__store_mark(f.st, 1, "meta", 4, 0, 0), 0);
        else
            ck_assert_int_eq(jr__store_sync(f.st), 0);
        int64_t before = c.live;
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        int64_t after = c.live;
        ck_assert_msg(after <= 1024, "%s: %lld bytes after trim (%lld before)", conf_names[conf],
                      (long long)after, (long long)before);
        append_n(&f, 1001, 1001); /* and it works on */
        expect_msg(&f, 1001);
        if (f.cfg.marked) ck_assert_int_eq(jr__store_mark(f.st, 2, "meta", 4, 0, 0), 0);
        fx_cycle(&f);
        expect_msg(&f, 1001);
        fx_done(&f);
        ck_assert_int_eq(c.live, 0);
    }
}
END_TEST

/* An idle store with a MiB of records in its active block (default 8 MiB blocks), encrypted or
 * not, holds almost nothing once trimmed: not the block's plaintext, not a descriptor; and it
 * goes on as before (reads, appends, reopen). */
START_TEST(an_idle_store_with_a_large_active_block_holds_little)
{
    for (int conf = CONF_FILE; conf < NCONF; conf++) {
        if (!windowed(conf)) continue;
        for (int marked = 0; marked < 2; marked++) {
            counter c = {0};
            jr_allocator a = {JR_ALLOCATOR_VERSION, &c, c_malloc, c_realloc, c_free};
            fx f;
            memset(&f, 0, sizeof f);
            ck_assert_int_eq(jr__memfs_new(NULL, 10, &f.vfs), 0);
            ck_assert_int_eq(f.vfs->mkdir(f.vfs->ctx, "/store"), 0);
            fx_config(&f, conf, 0);
            f.cfg.alloc = &a;
            f.cfg.marked = marked;
            ck_assert_int_eq(fx_open(&f), 0);
            const size_t len = 64 * 1024;
            for (uint64_t q = 1; q <= 16; q++) append_big(&f, q, len); /* 1 MiB */
            expect_big(&f, 7, len);
            if (marked)
                ck_assert_int_eq(jr__store_mark(f.st, 1, "meta", 4, 0, 0), 0);
            else
                ck_assert_int_eq(jr__store_sync(f.st), 0);
            int64_t before = c.live;
            ck_assert_int_eq(jr__store_trim(f.st), 0);
            int64_t after = c.live;
            fprintf(stderr,
                    "idle %s%s store, 1 MiB in its active block: %lld bytes of heap before "
                    "trim, %lld after\n",
                    conf_names[conf], marked ? " marked" : "", (long long)before, (long long)after);
            ck_assert_msg(after < 4096, "%s: %lld bytes after trim (%lld before)", conf_names[conf],
                          (long long)after, (long long)before);
            ck_assert_int_eq(op_count(f.vfs, JR__MEMFS_OPEN),
                             op_count(f.vfs, JR__MEMFS_CLOSE)); /* no descriptor held */
            expect_big(&f, 3, len);
            append_big(&f, 17, len);
            if (marked) ck_assert_int_eq(jr__store_mark(f.st, 2, "meta", 4, 0, 0), 0);
            ck_assert_int_eq(jr__store_sync(f.st), 0);
            ck_assert_int_eq(jr__store_trim(f.st), 0);
            ck_assert_msg(c.live < 4096, "%s: %lld bytes after the second trim", conf_names[conf],
                          (long long)c.live);
            fx_cycle(&f);
            for (uint64_t q = 1; q <= 17; q++) expect_big(&f, q, len);
            fx_done(&f);
            ck_assert_int_eq(c.live, 0);
        }
    }
}
END_TEST

/* Encrypted, many small records (20,000 in the active block): once trimmed, the store holds
 * what the same store without encryption holds plus its checkpoints, 8 bytes per 32 records
 * (and its small encryption state): no copy of the block. */
START_TEST(encrypted_trim_keeps_only_checkpoints)
{
    int64_t after[2] = {0, 0};
    for (int enc = 0; enc < 2; enc++) {
        int conf = enc ? CONF_FILE_ENC : CONF_FILE;
        counter c = {0};
        jr_allocator a = {JR_ALLOCATOR_VERSION, &c, c_malloc, c_realloc, c_free};
        fx f;
        memset(&f, 0, sizeof f);
        ck_assert_int_eq(jr__memfs_new(NULL, 13, &f.vfs), 0);
        ck_assert_int_eq(f.vfs->mkdir(f.vfs->ctx, "/store"), 0);
        fx_config(&f, conf, 0);
        f.cfg.alloc = &a;
        ck_assert_int_eq(fx_open(&f), 0);
        append_n(&f, 1, 20000);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_trim(f.st), 0);
        after[enc] = c.live;
        uint64_t p0 = pread_count(f.vfs);
        append_n(&f, 20001, 20001); /* reads nothing */
        ck_assert_uint_eq(pread_count(f.vfs), p0);
        for (uint64_t q = 1; q <= 20001; q += 997) expect_msg(&f, q);
        expect_msg(&f, 20000);
        fx_done(&f);
        ck_assert_int_eq(c.live, 0);
    }
    int64_t extra = after[1] - after[0], bound = 8 * (20000 / 32 + 1) + 512;
    fprintf(stderr,
            "idle store, 20,000 records in its active block: %lld bytes of heap, %lld "
            "more with encryption\n",
            (long long)after[0], (long long)extra);
    ck_assert_msg(extra <= bound, "%lld bytes more with encryption (bound %lld)", (long long)extra,
                  (long long)bound);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("store-trim");
    TCase *tc = tcase_create("trim");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, active_block_is_read_back_when_needed);
    tcase_add_test(tc, encrypted_window_reads_a_few_kib_per_record);
    tcase_add_test(tc, trim_is_a_no_op_when_it_cannot_free);
    tcase_add_test(tc, read_back_failure_is_an_error_and_loses_nothing);
    tcase_add_test(tc, read_back_of_changed_bytes_is_corruption);
    tcase_add_test(tc, missing_active_block_is_corruption_not_not_found);
    tcase_add_test(tc, rotation_of_a_trimmed_block);
    tcase_add_test(tc, trim_before_sync_keeps_the_block_syncable);
    tcase_add_test(tc, an_idle_trimmed_store_holds_little);
    tcase_add_test(tc, window_reads_only_the_record);
    tcase_add_test(tc, reads_in_seq_order_read_ahead);
    tcase_add_test(tc, window_then_whole_block);
    tcase_add_test(tc, encrypted_window_then_crash);
    tcase_add_test(tc, an_idle_store_with_a_large_active_block_holds_little);
    tcase_add_test(tc, encrypted_trim_keeps_only_checkpoints);
    tcase_add_test(tc, trimmed_store_behaves_like_an_untrimmed_one);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
