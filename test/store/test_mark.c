/*
 * Marks: a store opened marked reopens exactly at its last durable mark (store.h, "Marks").
 * Every test runs against the four file configurations (plain, lz4, encrypted, both) on the
 * simulated vfs, with small blocks so that rotation, sealing and block removal happen.
 */
#include <stdlib.h>

#include "fixture.h"
#include "util/checksum.h"

#define S(x) x, strlen(x)

static int conf_of(int i)
{
    return CONF_FILE + i % (NCONF - CONF_FILE);
}

static void open_marked(fx *f, int conf, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    ck_assert_int_eq(jr__memfs_new(NULL, seed, &f->vfs), 0);
    ck_assert_int_eq(f->vfs->mkdir(f->vfs->ctx, "/store"), 0);
    fx_config(f, conf, 4096);
    f->cfg.marked = 1;
    int rc = fx_open(f);
    ck_assert_msg(rc == 0, "open %s: %s (%s)", conf_names[conf], jr_strerror(rc), f->err);
}

static void reopen(fx *f, int crash, int torn)
{
    if (crash) {
        jr__store_abandon(f->st);
        jr__memfs_crash(f->vfs, torn);
    } else {
        ck_assert_int_eq(jr__store_close(f->st), 0);
    }
    f->st = NULL;
    int rc = fx_open(f);
    ck_assert_msg(rc == 0, "reopen %s: %s (%s)", conf_names[f->conf], jr_strerror(rc), f->err);
}

static uint64_t put(fx *f, const char *subj, const char *data)
{
    jr__store_state st;
    jr__store_state_get(f->st, &st);
    uint64_t seq;
    int rc = jr__store_append(f->st, st.last_seq + 1, subj, strlen(subj), NULL, 0, data,
                              strlen(data), (int64_t)st.last_seq + 1, &seq);
    ck_assert_msg(rc == 0, "append: %s (%s)", jr_strerror(rc), jr__store_errmsg(f->st));
    return seq;
}

static void mark(fx *f, uint64_t index, const char *meta, uint64_t key, uint64_t floor)
{
    int rc = jr__store_mark(f->st, index, meta, meta ? strlen(meta) : 0, key, floor);
    ck_assert_msg(rc == 0, "mark %llu: %s (%s)", (unsigned long long)index, jr_strerror(rc),
                  jr__store_errmsg(f->st));
}

static jr__store_state state(fx *f)
{
    jr__store_state st;
    jr__store_state_get(f->st, &st);
    return st;
}

/* A digest of everything a reader can see: state, delete ranges, every message. */
static uint64_t view(fx *f)
{
    jr__store_state st = state(f);
    st.last_ts = 0; /* not recorded by the store across a rollback of a deleted tail */
    uint64_t h = jr__xxh3(&st, sizeof st);
    size_t n;
    const jr__seq_range *r = jr__store_deleted(f->st, &n);
    h = jr__xxh3_2(&h, sizeof h, r, n * sizeof *r);
    jr__store_msg m;
    for (uint64_t q = 1; jr__store_next(f->st, q, NULL, 0, &m) == 0; q = m.seq + 1) {
        h = jr__xxh3_2(&h, sizeof h, &m.seq, sizeof m.seq);
        h = jr__xxh3_2(&h, sizeof h, m.subject, m.subject_len);
        h = jr__xxh3_2(&h, sizeof h, m.data, m.data_len);
    }
    return h;
}

static void expect_last_mark(fx *f, uint64_t index, const char *meta)
{
    jr__store_mark_rec m;
    ck_assert_int_eq(jr__store_last_mark(f->st, &m), 0);
    ck_assert_uint_eq(m.index, index);
    ck_assert_uint_eq(m.meta_len, strlen(meta));
    ck_assert(memcmp(m.meta, meta, m.meta_len) == 0);
    ck_assert_uint_eq(jr__store_mark_index(f->st), index);
}

typedef struct nfiles {
    int n;
} nfiles;

static int count_cb(void *arg, const char *name)
{
    (void)name;
    ((nfiles *)arg)->n++;
    return 0;
}

static int files(fx *f)
{
    nfiles c = {0};
    ck_assert_int_eq(f->vfs->list(f->vfs->ctx, "/store/ORDERS", count_cb, &c), 0);
    return c.n;
}

static int on_disk(fx *f, const char *needle)
{
    int found = 0;
    for (uint32_t id = 1; id < 400; id++) {
        char path[128];
        snprintf(path, sizeof path, "/store/ORDERS/%010u.blk", id);
        uint8_t *data;
        size_t len;
        if (jr__memfs_read_all(f->vfs, path, &data, &len)) continue;
        size_t nl = strlen(needle);
        for (size_t i = 0; i + nl <= len; i++)
            if (memcmp(data + i, needle, nl) == 0) found = 1;
        jr__memfs_release(f->vfs, data);
    }
    return found;
}

/* ------------------------------------------------------------------------------------------- */

START_TEST(reopen_goes_back_to_the_last_mark)
{
    fx f;
    open_marked(&f, conf_of(_i), 1);
    char data[200];
    memset(data, 'p', sizeof data - 1);
    data[sizeof data - 1] = 0;
    for (int i = 0; i < 5; i++) put(&f, "a.x", data);
    ck_assert_int_eq(jr__store_delete(f.st, 2, 0), 0);
    mark(&f, 7, "state at seven", 0, 0);
    uint64_t at7 = view(&f);
    /* after the mark: appends across several blocks, deletes, a purge; then a clean close
     * (which syncs, but writes no mark) */
    for (int i = 0; i < 60; i++) put(&f, i % 2 ? "a.x" : "a.y", data);
    ck_assert_int_eq(jr__store_delete(f.st, 1, 0), 0);
    ck_assert_int_eq(jr__store_delete(f.st, 30, 1), 0);
    jr__purge p = {.filter = S("a.y")};
    ck_assert_int_eq(jr__store_purge(f.st, &p, NULL), 0);
    ck_assert_int_eq(jr__store_sync(f.st), 0);
    ck_assert_uint_eq(jr__store_durable_seq(f.st), 5); /* what a reopen gives */
    reopen(&f, 0, 0);
    ck_assert_uint_eq(view(&f), at7);
    ck_assert_uint_eq(state(&f).last_seq, 5);
    ck_assert_uint_eq(state(&f).msgs, 4);
    expect_last_mark(&f, 7, "state at seven");
    /* the numbering goes on from the mark */
    ck_assert_uint_eq(put(&f, "a.z", "new six"), 6);
    mark(&f, 8, "eight", 0, 0);
    uint64_t at8 = view(&f);
    for (int i = 0; i < 30; i++) put(&f, "a.x", data);
    reopen(&f, 1, 1); /* a torn crash keeps some of the later writes: rolled back too */
    ck_assert_uint_eq(view(&f), at8);
    expect_last_mark(&f, 8, "eight");
    jr__store_msg m;
    ck_assert_int_eq(jr__store_get(f.st, 6, &m), 0);
    ck_assert(m.data_len == 7 && memcmp(m.data, "new six", 7) == 0);
    fx_done(&f);
}
END_TEST

START_TEST(a_marked_store_without_a_mark_opens_empty)
{
    fx f;
    open_marked(&f, conf_of(_i), 2);
    for (int i = 0; i < 40; i++) put(&f, "a.x", "some message that fills blocks ......");
    ck_assert_int_eq(jr__store_sync(f.st), 0);
    reopen(&f, 0, 0);
    ck_assert_uint_eq(state(&f).last_seq, 0);
    ck_assert_uint_eq(state(&f).msgs, 0);
    jr__store_mark_rec m;
    ck_assert_int_eq(jr__store_last_mark(f.st, &m), JR_ENOTFOUND);
    ck_assert_uint_eq(jr__store_mark_index(f.st), 0);
    ck_assert_int_eq(files(&f), 0);
    fx_done(&f);
}
END_TEST

/* Blocks emptied by limits stay until a mark covers their removal, so a rollback finds every
 * message it needs; after the mark they are gone. */
START_TEST(removals_wait_for_a_mark)
{
    fx f;
    open_marked(&f, conf_of(_i), 3);
    jr__store_limits lim = {.max_msgs = 10, .discard = JR__DISCARD_OLD};
    ck_assert_int_eq(jr__store_set_limits(f.st, &lim), 0);
    char data[300];
    memset(data, 'q', sizeof data - 1);
    data[sizeof data - 1] = 0;
    for (int i = 0; i < 10; i++) put(&f, "a.x", data);
    mark(&f, 1, "one", 0, 0);
    uint64_t at1 = view(&f);
    int before = files(&f);
    for (int i = 0; i < 100; i++) put(&f, "a.x", data);
    int grown = files(&f);
    ck_assert_int_gt(grown, before + 3); /* emptied blocks are kept for now */
    ck_assert_uint_eq(state(&f).msgs, 10);
    uint64_t now = view(&f);
    reopen(&f, 1, 1);
    ck_assert_uint_eq(view(&f), at1); /* every message of the mark is back, none more */
    ck_assert_int_eq(jr__store_set_limits(f.st, &lim), 0);
    for (int i = 0; i < 100; i++) put(&f, "a.x", data);
    ck_assert_uint_eq(view(&f), now); /* the same 100 appends give the same store */
    mark(&f, 2, "two", 0, 0);
    ck_assert_int_le(files(&f), 3); /* the active block and the few the last 10 messages use */
    reopen(&f, 1, 1);
    ck_assert_uint_eq(view(&f), now);
    expect_last_mark(&f, 2, "two");
    fx_done(&f);
}
END_TEST

START_TEST(erase_overwrites_at_the_next_mark)
{
    fx f;
    open_marked(&f, conf_of(_i), 4);
    char data[64];
    for (int i = 1; i <= 200; i++) {
        snprintf(data, sizeof data, "secret-%04d-secret", i);
        put(&f, "s", data);
    }
    mark(&f, 1, "", 0, 0);
    uint64_t at1 = view(&f);
    ck_assert_int_eq(jr__store_delete(f.st, 3, 1), 0);   /* in a sealed block */
    ck_assert_int_eq(jr__store_delete(f.st, 199, 1), 0); /* in the active block */
    int plain = f.conf == CONF_FILE;
    if (plain) ck_assert(on_disk(&f, "secret-0003-secret")); /* a rollback may need it */
    uint64_t after = view(&f);
    reopen(&f, 1, 0);
    ck_assert_uint_eq(view(&f), at1);
    ck_assert_int_eq(jr__store_delete(f.st, 3, 1), 0);
    ck_assert_int_eq(jr__store_delete(f.st, 199, 1), 0);
    mark(&f, 2, "", 0, 0);
    ck_assert_uint_eq(view(&f), after);
    if (plain) {
        ck_assert(!on_disk(&f, "secret-0003-secret"));
        ck_assert(!on_disk(&f, "secret-0199-secret"));
        ck_assert(on_disk(&f, "secret-0004-secret"));
    }
    reopen(&f, 1, 1);
    ck_assert_uint_eq(view(&f), after);
    fx_done(&f);
}
END_TEST

/* Marks with a key are kept (with their blocks, even emptied ones) while key >= the floor of
 * the newest mark, and are read back at open, oldest first. */
START_TEST(marks_are_kept_while_their_key_reaches_the_floor)
{
    fx f;
    open_marked(&f, conf_of(_i), 5);
    jr__store_limits lim = {.max_msgs = 3, .discard = JR__DISCARD_OLD};
    ck_assert_int_eq(jr__store_set_limits(f.st, &lim), 0);
    char data[400], meta[32];
    memset(data, 'k', sizeof data - 1);
    data[sizeof data - 1] = 0;
    uint64_t floor = 0;
    for (uint64_t i = 1; i <= 60; i++) {
        for (int j = 0; j < 4; j++) put(&f, "a.x", data);
        snprintf(meta, sizeof meta, "delta %llu", (unsigned long long)i);
        if (i % 10 == 0) floor = i - 4;          /* the floor jumps now and then */
        mark(&f, i, meta, i % 7 ? i : 0, floor); /* every 7th mark has nothing to keep */
    }
    int kept_files = files(&f);
    reopen(&f, 1, 1);
    ck_assert_uint_eq(floor, 56);
    size_t cur = 0;
    jr__store_mark_rec m;
    uint64_t want = floor;
    while (jr__store_marks_next(f.st, &cur, &m) == 0) {
        if (want % 7 == 0) want++;
        ck_assert_uint_eq(m.index, want);
        ck_assert_uint_eq(m.key, want);
        snprintf(meta, sizeof meta, "delta %llu", (unsigned long long)want);
        ck_assert(m.meta_len == strlen(meta) && memcmp(m.meta, meta, m.meta_len) == 0);
        want++;
    }
    ck_assert_uint_eq(want, 61);
    expect_last_mark(&f, 60, "delta 60");
    /* raising the floor past every key frees the blocks that only held marks */
    ck_assert_int_eq(jr__store_set_limits(f.st, &lim), 0);
    put(&f, "a.x", data);
    mark(&f, 61, "last", 0, 1000);
    ck_assert_int_le(files(&f), kept_files);
    ck_assert_int_le(files(&f), 3);
    reopen(&f, 1, 0);
    cur = 0;
    ck_assert_int_eq(jr__store_marks_next(f.st, &cur, &m), JR_ENOTFOUND);
    fx_done(&f);
}
END_TEST

/* The replayed store is checked against what its last mark recorded: a lost block is found. */
START_TEST(a_store_that_disagrees_with_its_mark_is_corrupt)
{
    fx f;
    open_marked(&f, conf_of(_i), 6);
    char data[500];
    memset(data, 'z', sizeof data - 1);
    data[sizeof data - 1] = 0;
    for (int i = 0; i < 40; i++) put(&f, "a.x", data);
    mark(&f, 1, "m", 0, 0);
    jr__store_abandon(f.st);
    f.st = NULL;
    ck_assert_int_eq(f.vfs->remove(f.vfs->ctx, "/store/ORDERS/0000000002.blk"), 0);
    ck_assert_int_eq(fx_open(&f), JR_ECORRUPT);
    ck_assert_msg(strstr(f.err, "mark") != NULL, "%s", f.err);
    fx_done(&f);
}
END_TEST

START_TEST(marks_need_a_marked_file_store)
{
    fx f;
    fx_init(&f, CONF_FILE, NULL, 7);
    put(&f, "a.x", "m");
    ck_assert_int_eq(jr__store_mark(f.st, 1, "x", 1, 0, 0), JR_EMISUSE);
    fx_done(&f);
    /* a memory store remembers the index only */
    fx_init(&f, CONF_MEMORY, NULL, 7);
    f.cfg.marked = 1;
    put(&f, "a.x", "m");
    ck_assert_int_eq(jr__store_mark(f.st, 9, "x", 1, 0, 0), 0);
    ck_assert_uint_eq(jr__store_mark_index(f.st), 9);
    jr__store_mark_rec m;
    ck_assert_int_eq(jr__store_last_mark(f.st, &m), JR_ENOTFOUND);
    fx_done(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("store-mark");
    TCase *tc = tcase_create("mark");
    tcase_set_timeout(tc, 120);
    int n = NCONF - CONF_FILE;
    tcase_add_loop_test(tc, reopen_goes_back_to_the_last_mark, 0, n);
    tcase_add_loop_test(tc, a_marked_store_without_a_mark_opens_empty, 0, n);
    tcase_add_loop_test(tc, removals_wait_for_a_mark, 0, n);
    tcase_add_loop_test(tc, erase_overwrites_at_the_next_mark, 0, n);
    tcase_add_loop_test(tc, marks_are_kept_while_their_key_reaches_the_floor, 0, n);
    tcase_add_loop_test(tc, a_store_that_disagrees_with_its_mark_is_corrupt, 0, n);
    tcase_add_test(tc, marks_need_a_marked_file_store);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
