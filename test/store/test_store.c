/*
 * The message store's behaviour, checked identically against every implementation: the memory
 * store and the file store (plain, lz4, encrypted, lz4 + encrypted) on the simulated vfs. Each
 * test runs once per configuration (the loop index) and, for file stores, checks again after a
 * close and reopen that what it observed was persistent.
 */
#include <stdlib.h>

#include "fixture.h"
#include "util/subject.h"
#include "util/rand.h"

#define S(x) x, strlen(x)

static uint64_t put(fx *f, const char *subj, const char *data, int64_t ts)
{
    jr__store_state st;
    jr__store_state_get(f->st, &st);
    uint64_t seq = 0;
    int rc = jr__store_append(f->st, st.last_seq + 1, subj, strlen(subj), NULL, 0, data,
                              strlen(data), ts, &seq);
    ck_assert_msg(rc == 0, "append %s: %s (%s)", subj, jr_strerror(rc), jr__store_errmsg(f->st));
    return seq;
}

static int put_rc(fx *f, const char *subj, const char *data, int64_t ts)
{
    jr__store_state st;
    jr__store_state_get(f->st, &st);
    return jr__store_append(f->st, st.last_seq + 1, subj, strlen(subj), NULL, 0, data, strlen(data),
                            ts, NULL);
}

static void expect_msg(fx *f, uint64_t seq, const char *subj, const char *data)
{
    jr__store_msg m;
    int rc = jr__store_get(f->st, seq, &m);
    ck_assert_msg(rc == 0, "[%s] get %llu: %s (%s)", conf_names[f->conf], (unsigned long long)seq,
                  jr_strerror(rc), jr__store_errmsg(f->st));
    ck_assert_uint_eq(m.seq, seq);
    ck_assert_uint_eq(m.subject_len, strlen(subj));
    ck_assert(memcmp(m.subject, subj, m.subject_len) == 0);
    ck_assert_uint_eq(m.data_len, strlen(data));
    ck_assert(memcmp(m.data, data, m.data_len) == 0);
}

static void expect_gone(fx *f, uint64_t seq)
{
    jr__store_msg m;
    ck_assert_int_eq(jr__store_get(f->st, seq, &m), JR_ENOTFOUND);
}

static jr__store_state state(fx *f)
{
    jr__store_state st;
    jr__store_state_get(f->st, &st);
    return st;
}

/* Counts live messages by iteration and checks the counters agree with them. */
static void check_counters(fx *f)
{
    jr__store_state st = state(f);
    uint64_t n = 0, bytes = 0, prev = 0, first = 0;
    jr__store_msg m;
    for (uint64_t q = 1; jr__store_next(f->st, q, NULL, 0, &m) == 0; q = m.seq + 1) {
        ck_assert_uint_gt(m.seq, prev);
        if (!first) first = m.seq;
        prev = m.seq;
        n++;
        bytes += 36 + m.subject_len + m.hdr_len + m.data_len;
    }
    ck_assert_uint_eq(st.msgs, n);
    ck_assert_uint_eq(st.bytes, bytes);
    if (n) {
        ck_assert_uint_eq(st.first_seq, first);
        ck_assert_uint_eq(st.num_deleted, st.last_seq - st.first_seq + 1 - n);
    } else {
        ck_assert_uint_eq(st.first_seq, st.last_seq + 1);
        ck_assert_uint_eq(st.num_deleted, 0);
    }
    size_t nr;
    const jr__seq_range *r = jr__store_deleted(f->st, &nr);
    uint64_t d = 0;
    for (size_t i = 0; i < nr; i++) {
        ck_assert_uint_le(r[i].lo, r[i].hi);
        if (i) ck_assert_uint_gt(r[i].lo, r[i - 1].hi + 1);
        d += r[i].hi - r[i].lo + 1;
    }
    ck_assert_uint_eq(d, st.num_deleted);
}

/* ------------------------------------------------------------------------------------------- */

START_TEST(append_and_get)
{
    fx f;
    fx_init(&f, _i, NULL, 1);
    char subj[32], data[64];
    for (int i = 1; i <= 300; i++) {
        snprintf(subj, sizeof subj, "orders.%d", i % 7);
        snprintf(data, sizeof data, "payload number %d", i);
        ck_assert_uint_eq(put(&f, subj, data, i * 1000), (uint64_t)i);
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 1; i <= 300; i++) {
            snprintf(subj, sizeof subj, "orders.%d", i % 7);
            snprintf(data, sizeof data, "payload number %d", i);
            expect_msg(&f, (uint64_t)i, subj, data);
        }
        jr__store_state st = state(&f);
        ck_assert_uint_eq(st.msgs, 300);
        ck_assert_uint_eq(st.first_seq, 1);
        ck_assert_uint_eq(st.last_seq, 300);
        ck_assert_int_eq(st.first_ts, 1000);
        ck_assert_int_eq(st.last_ts, 300000);
        ck_assert_uint_eq(st.num_subjects, 7);
        ck_assert_uint_eq(st.num_deleted, 0);
        check_counters(&f);
        expect_gone(&f, 0);
        expect_gone(&f, 301);
        fx_cycle(&f);
    }
    /* headers round-trip */
    uint64_t seq;
    ck_assert_int_eq(jr__store_append(f.st, 301, S("h.x"), "H:1\r\n", 5, "body", 4, 5, &seq), 0);
    jr__store_msg m;
    ck_assert_int_eq(jr__store_get(f.st, 301, &m), 0);
    ck_assert_uint_eq(m.hdr_len, 5);
    ck_assert(memcmp(m.hdr, "H:1\r\n", 5) == 0);
    fx_done(&f);
}
END_TEST

START_TEST(expected_seq_and_bad_input)
{
    fx f;
    fx_init(&f, _i, NULL, 2);
    put(&f, "a", "1", 1);
    ck_assert_int_eq(jr__store_append(f.st, 1, S("a"), NULL, 0, "x", 1, 2, NULL), JR__ESTORE_SEQ);
    ck_assert_int_eq(jr__store_append(f.st, 3, S("a"), NULL, 0, "x", 1, 2, NULL), JR__ESTORE_SEQ);
    ck_assert_ptr_nonnull(strstr(jr__store_errmsg(f.st), "expected seq 3"));
    ck_assert_int_eq(jr__store_append(f.st, 2, S("a.*"), NULL, 0, "x", 1, 2, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__store_append(f.st, 2, S("a..b"), NULL, 0, "x", 1, 2, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__store_append(f.st, 2, S(""), NULL, 0, "x", 1, 2, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__store_append(f.st, 2, S("a b"), NULL, 0, "x", 1, 2, NULL), JR_EINVAL);
    /* the grammar's limit (util/subject.h), also for the store */
    static char big[JR__SUBJECT_MAX + 1];
    memset(big, 'k', sizeof big);
    ck_assert_int_eq(jr__store_append(f.st, 2, big, sizeof big, NULL, 0, "x", 1, 2, NULL),
                     JR_EINVAL);
    /* nothing changed */
    ck_assert_uint_eq(state(&f).last_seq, 1);
    ck_assert_uint_eq(state(&f).msgs, 1);
    ck_assert_int_eq(jr__store_append(f.st, 2, S("a"), NULL, 0, "x", 1, 2, NULL), 0);
    ck_assert_int_eq(jr__store_append(f.st, 3, big, JR__SUBJECT_MAX, NULL, 0, "x", 1, 2, NULL), 0);
    jr__store_msg m;
    ck_assert_int_eq(jr__store_get_last(f.st, big, JR__SUBJECT_MAX, &m), 0);
    ck_assert_uint_eq(m.seq, 3);
    fx_done(&f);
}
END_TEST

static const char *const filt_subjects[] = {"a.b.c", "a.x.c", "a.b.d", "b.b.c", "a.b", "a"};

START_TEST(iterate_with_filters)
{
    fx f;
    fx_init(&f, _i, NULL, 3);
    jr__rand r;
    jr__rand_seed(&r, 3);
    for (int i = 0; i < 200; i++) put(&f, filt_subjects[jr__rand_below(&r, 6)], "d", i);
    for (int i = 1; i <= 200; i += 9) jr__store_delete(f.st, (uint64_t)i, 0);
    const char *filters[] = {">", "a.>", "a.*.c", "a.b.c",  "*.b.*",
                             "*", "a.*", "b.>",   "nope.>", "zzz"};
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < sizeof filters / sizeof *filters; k++) {
            const char *flt = filters[k];
            /* brute force: get every seq and match it */
            uint64_t want[256], nw = 0;
            jr__store_msg m;
            for (uint64_t q = 1; q <= 200; q++)
                if (jr__store_get(f.st, q, &m) == 0 &&
                    jr__subject_match(flt, strlen(flt), m.subject, m.subject_len))
                    want[nw++] = q;
            uint64_t got = 0;
            for (uint64_t q = 1; jr__store_next(f.st, q, S(flt), &m) == 0; q = m.seq + 1) {
                ck_assert_uint_lt(got, nw);
                ck_assert_uint_eq(m.seq, want[got]);
                got++;
            }
            ck_assert_msg(got == nw, "filter %s: %llu of %llu", flt, (unsigned long long)got,
                          (unsigned long long)nw);
            /* starting in the middle */
            if (nw > 2) {
                ck_assert_int_eq(jr__store_next(f.st, want[1], S(flt), &m), 0);
                ck_assert_uint_eq(m.seq, want[1]);
                ck_assert_int_eq(jr__store_next(f.st, want[0] + 1, S(flt), &m), 0);
                ck_assert_uint_eq(m.seq, want[1]);
            }
            /* last by subject */
            int rc = jr__store_get_last(f.st, S(flt), &m);
            if (nw) {
                ck_assert_int_eq(rc, 0);
                ck_assert_uint_eq(m.seq, want[nw - 1]);
            } else {
                ck_assert_int_eq(rc, JR_ENOTFOUND);
            }
        }
        check_counters(&f);
        fx_cycle(&f);
    }
    fx_done(&f);
}
END_TEST

START_TEST(delete_tracks_interior_ranges)
{
    fx f;
    fx_init(&f, _i, NULL, 4);
    for (int i = 1; i <= 20; i++) put(&f, i % 2 ? "odd" : "even", "x", i);
    ck_assert_int_eq(jr__store_delete(f.st, 5, 0), 0);
    ck_assert_int_eq(jr__store_delete(f.st, 6, 0), 0);
    ck_assert_int_eq(jr__store_delete(f.st, 7, 0), 0);
    ck_assert_int_eq(jr__store_delete(f.st, 10, 0), 0);
    ck_assert_int_eq(jr__store_delete(f.st, 20, 0), 0); /* the last */
    ck_assert_int_eq(jr__store_delete(f.st, 5, 0), JR_ENOTFOUND);
    ck_assert_int_eq(jr__store_delete(f.st, 99, 0), JR_ENOTFOUND);
    for (int pass = 0; pass < 2; pass++) {
        jr__store_state st = state(&f);
        ck_assert_uint_eq(st.msgs, 15);
        ck_assert_uint_eq(st.first_seq, 1);
        ck_assert_uint_eq(st.last_seq, 20);
        ck_assert_uint_eq(st.num_deleted, 5);
        size_t n;
        const jr__seq_range *r = jr__store_deleted(f.st, &n);
        ck_assert_uint_eq(n, 3);
        ck_assert_uint_eq(r[0].lo, 5);
        ck_assert_uint_eq(r[0].hi, 7);
        ck_assert_uint_eq(r[1].lo, 10);
        ck_assert_uint_eq(r[2].lo, 20);
        expect_gone(&f, 6);
        jr__store_msg m;
        ck_assert_int_eq(jr__store_get_last(f.st, S("even"), &m), 0);
        ck_assert_uint_eq(m.seq, 18);
        check_counters(&f);
        fx_cycle(&f);
    }
    /* deleting the first moves first_seq past the interior deletes that follow it */
    for (int q = 1; q <= 4; q++) ck_assert_int_eq(jr__store_delete(f.st, (uint64_t)q, 0), 0);
    jr__store_state st = state(&f);
    ck_assert_uint_eq(st.first_seq, 8);
    ck_assert_uint_eq(st.num_deleted, 2);
    check_counters(&f);
    fx_cycle(&f);
    ck_assert_uint_eq(state(&f).first_seq, 8);
    /* the next append continues after the deleted last */
    ck_assert_uint_eq(put(&f, "odd", "y", 30), 21);
    check_counters(&f);
    fx_done(&f);
}
END_TEST

/* Searches every block file of the store for a byte string. */
static int on_disk(fx *f, const char *needle)
{
    int found = 0;
    for (uint32_t id = 1; id < 200; id++) {
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

START_TEST(erase_overwrites_the_bytes)
{
    fx f;
    fx_init(&f, _i, NULL, 5);
    char data[64];
    for (int i = 1; i <= 200; i++) {
        snprintf(data, sizeof data, "secret-%04d-secret", i);
        put(&f, "s", data, i);
    }
    ck_assert_int_eq(jr__store_sync(f.st), 0);
    ck_assert_int_eq(jr__store_delete(f.st, 3, 1), 0);   /* in a sealed block */
    ck_assert_int_eq(jr__store_delete(f.st, 199, 1), 0); /* in the active block */
    ck_assert_int_eq(jr__store_sync(f.st), 0);
    if (f.conf == CONF_FILE) {
        ck_assert(!on_disk(&f, "secret-0003-secret"));
        ck_assert(!on_disk(&f, "secret-0199-secret"));
        ck_assert(on_disk(&f, "secret-0004-secret"));
    }
    for (int pass = 0; pass < 2; pass++) {
        expect_gone(&f, 3);
        expect_gone(&f, 199);
        expect_msg(&f, 4, "s", "secret-0004-secret");
        expect_msg(&f, 198, "s", "secret-0198-secret");
        expect_msg(&f, 200, "s", "secret-0200-secret");
        check_counters(&f);
        fx_cycle(&f);
    }
    fx_done(&f);
}
END_TEST

/* Fills a store with 100 messages on subjects a.0 .. a.4 (seq i has subject a.(i % 5)). */
static void fill100(fx *f)
{
    char subj[16];
    for (int i = 1; i <= 100; i++) {
        snprintf(subj, sizeof subj, "a.%d", i % 5);
        put(f, subj, "payload", i);
    }
}

START_TEST(purge_variants)
{
    fx f;
    jr__store_msg m;
    uint64_t n;

    /* all */
    fx_init(&f, _i, NULL, 6);
    fill100(&f);
    jr__purge all = {0};
    ck_assert_int_eq(jr__store_purge(f.st, &all, &n), 0);
    ck_assert_uint_eq(n, 100);
    for (int pass = 0; pass < 2; pass++) {
        jr__store_state st = state(&f);
        ck_assert_uint_eq(st.msgs, 0);
        ck_assert_uint_eq(st.first_seq, 101);
        ck_assert_uint_eq(st.last_seq, 100);
        ck_assert_uint_eq(st.num_subjects, 0);
        fx_cycle(&f);
    }
    ck_assert_uint_eq(put(&f, "a.1", "next", 200), 101);
    fx_done(&f);

    /* by subject */
    fx_init(&f, _i, NULL, 7);
    fill100(&f);
    jr__purge bysubj = {.filter = "a.3", .filter_len = 3};
    ck_assert_int_eq(jr__store_purge(f.st, &bysubj, &n), 0);
    ck_assert_uint_eq(n, 20);
    for (int pass = 0; pass < 2; pass++) {
        ck_assert_uint_eq(state(&f).msgs, 80);
        ck_assert_uint_eq(jr__store_subject_count(f.st, S("a.3")), 0);
        ck_assert_int_eq(jr__store_get_last(f.st, S("a.3"), &m), JR_ENOTFOUND);
        ck_assert_uint_eq(state(&f).num_subjects, 4);
        check_counters(&f);
        fx_cycle(&f);
    }
    fx_done(&f);

    /* keep N */
    fx_init(&f, _i, NULL, 8);
    fill100(&f);
    jr__purge keep = {.keep = 10};
    ck_assert_int_eq(jr__store_purge(f.st, &keep, &n), 0);
    ck_assert_uint_eq(n, 90);
    for (int pass = 0; pass < 2; pass++) {
        ck_assert_uint_eq(state(&f).msgs, 10);
        ck_assert_uint_eq(state(&f).first_seq, 91);
        check_counters(&f);
        fx_cycle(&f);
    }
    fx_done(&f);

    /* up to seq (exclusive) */
    fx_init(&f, _i, NULL, 9);
    fill100(&f);
    jr__purge upto = {.seq = 42};
    ck_assert_int_eq(jr__store_purge(f.st, &upto, &n), 0);
    ck_assert_uint_eq(n, 41);
    for (int pass = 0; pass < 2; pass++) {
        ck_assert_uint_eq(state(&f).first_seq, 42);
        ck_assert_uint_eq(state(&f).msgs, 59);
        check_counters(&f);
        fx_cycle(&f);
    }
    fx_done(&f);

    /* subject + keep, wildcard + seq */
    fx_init(&f, _i, NULL, 10);
    fill100(&f);
    jr__purge sk = {.filter = "a.1", .filter_len = 3, .keep = 3};
    ck_assert_int_eq(jr__store_purge(f.st, &sk, &n), 0);
    ck_assert_uint_eq(n, 17);
    ck_assert_uint_eq(jr__store_subject_count(f.st, S("a.1")), 3);
    jr__purge ws = {.filter = "a.*", .filter_len = 3, .seq = 11};
    ck_assert_int_eq(jr__store_purge(f.st, &ws, &n), 0);
    ck_assert_uint_eq(n, 8); /* 1..10 minus the a.1 ones already gone (1, 6) */
    jr__purge wk = {.filter = "a.>", .filter_len = 3, .keep = 5};
    ck_assert_int_eq(jr__store_purge(f.st, &wk, &n), 0);
    for (int pass = 0; pass < 2; pass++) {
        ck_assert_uint_eq(state(&f).msgs, 5);
        ck_assert_uint_eq(state(&f).first_seq, 96);
        check_counters(&f);
        fx_cycle(&f);
    }
    jr__purge bad = {.seq = 5, .keep = 1};
    ck_assert_int_eq(jr__store_purge(f.st, &bad, &n), JR_EINVAL);
    fx_done(&f);
}
END_TEST

START_TEST(limit_max_msgs)
{
    fx f;
    jr__store_limits lim = {.max_msgs = 10};
    fx_init(&f, _i, &lim, 11);
    for (int i = 1; i <= 25; i++) put(&f, "x", "data", i);
    for (int pass = 0; pass < 2; pass++) {
        ck_assert_uint_eq(state(&f).msgs, 10);
        ck_assert_uint_eq(state(&f).first_seq, 16);
        check_counters(&f);
        fx_cycle(&f);
    }
    fx_done(&f);

    lim.discard = JR__DISCARD_NEW;
    fx_init(&f, _i, &lim, 12);
    for (int i = 1; i <= 10; i++) put(&f, "x", "data", i);
    ck_assert_int_eq(put_rc(&f, "x", "data", 11), JR__ESTORE_FULL);
    ck_assert_uint_eq(state(&f).last_seq, 10);
    ck_assert_int_eq(jr__store_delete(f.st, 4, 0), 0);
    ck_assert_int_eq(put_rc(&f, "x", "data", 11), 0);
    ck_assert_int_eq(put_rc(&f, "x", "data", 12), JR__ESTORE_FULL);
    fx_done(&f);
}
END_TEST

START_TEST(limit_max_bytes)
{
    fx f;
    /* each message "x" + 14 bytes = 36 + 1 + 14 = 51 bytes */
    jr__store_limits lim = {.max_bytes = 51 * 5};
    fx_init(&f, _i, &lim, 13);
    for (int i = 1; i <= 12; i++) put(&f, "x", "fourteen bytes", i);
    ck_assert_uint_eq(state(&f).msgs, 5);
    ck_assert_uint_le(state(&f).bytes, 51 * 5);
    fx_cycle(&f);
    ck_assert_uint_eq(state(&f).msgs, 5);
    ck_assert_uint_eq(state(&f).first_seq, 8);
    fx_done(&f);

    lim.discard = JR__DISCARD_NEW;
    fx_init(&f, _i, &lim, 14);
    for (int i = 1; i <= 5; i++) put(&f, "x", "fourteen bytes", i);
    ck_assert_int_eq(put_rc(&f, "x", "fourteen bytes", 6), JR__ESTORE_FULL);
    ck_assert_int_eq(put_rc(&f, "x", "", 6), JR__ESTORE_FULL);
    ck_assert_uint_eq(state(&f).msgs, 5);
    /* a message larger than max_bytes is never storable */
    char big[400];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = 0;
    ck_assert_int_eq(put_rc(&f, "x", big, 7), JR_EMSGSIZE);
    fx_done(&f);
}
END_TEST

START_TEST(limit_max_age)
{
    fx f;
    const int64_t sec = 1000000000;
    jr__store_limits lim = {.max_age_ns = 10 * (uint64_t)sec};
    fx_init(&f, _i, &lim, 15);
    for (int i = 1; i <= 20; i++) put(&f, "x", "d", i * sec);
    /* newest is 20 s: everything older than 10 s (ts < 10 s) is gone */
    ck_assert_uint_eq(state(&f).first_seq, 10);
    ck_assert_int_eq(jr__store_expire(f.st, 25 * sec), 0);
    ck_assert_uint_eq(state(&f).first_seq, 15);
    fx_cycle(&f);
    ck_assert_int_eq(jr__store_expire(f.st, 100 * sec), 0);
    ck_assert_uint_eq(state(&f).msgs, 0);
    ck_assert_uint_eq(state(&f).first_seq, 21);
    check_counters(&f);
    fx_done(&f);
}
END_TEST

START_TEST(limit_per_subject)
{
    fx f;
    jr__store_limits lim = {.max_msgs_per_subject = 2};
    fx_init(&f, _i, &lim, 16);
    char subj[16];
    for (int i = 1; i <= 30; i++) {
        snprintf(subj, sizeof subj, "kv.%d", i % 3);
        put(&f, subj, "v", i);
    }
    for (int pass = 0; pass < 2; pass++) {
        ck_assert_uint_eq(state(&f).msgs, 6);
        ck_assert_uint_eq(jr__store_subject_count(f.st, S("kv.1")), 2);
        jr__store_msg m;
        ck_assert_int_eq(jr__store_get_last(f.st, S("kv.1"), &m), 0);
        ck_assert_uint_eq(m.seq, 28);
        ck_assert_uint_eq(state(&f).first_seq, 25);
        check_counters(&f);
        fx_cycle(&f);
    }
    fx_done(&f);

    /* discard new per subject refuses; max_msgs with discard new still allows replacement */
    lim.discard_new_per_subject = 1;
    fx_init(&f, _i, &lim, 17);
    put(&f, "kv.a", "1", 1);
    put(&f, "kv.a", "2", 2);
    ck_assert_int_eq(put_rc(&f, "kv.a", "3", 3), JR__ESTORE_FULL);
    put(&f, "kv.b", "1", 4);
    fx_done(&f);

    jr__store_limits lim2 = {.max_msgs_per_subject = 1, .max_msgs = 2, .discard = JR__DISCARD_NEW};
    fx_init(&f, _i, &lim2, 18);
    put(&f, "kv.a", "1", 1);
    put(&f, "kv.b", "1", 2);
    put(&f, "kv.a", "2", 3); /* replaces kv.a's message: fits */
    ck_assert_int_eq(put_rc(&f, "kv.c", "1", 4), JR__ESTORE_FULL);
    ck_assert_uint_eq(state(&f).msgs, 2);
    fx_done(&f);
}
END_TEST

START_TEST(limit_msg_size_and_update)
{
    fx f;
    jr__store_limits lim = {.max_msg_size = 8};
    fx_init(&f, _i, &lim, 19);
    ck_assert_int_eq(put_rc(&f, "x", "12345678", 1), 0);
    ck_assert_int_eq(put_rc(&f, "x", "123456789", 2), JR_EMSGSIZE);
    ck_assert_int_eq(jr__store_append(f.st, 2, S("x"), "hh", 2, "1234567", 7, 2, NULL),
                     JR_EMSGSIZE);
    for (int i = 2; i <= 50; i++) put(&f, i % 2 ? "p" : "q", "v", i);
    /* lowering limits applies them at once */
    jr__store_limits l2 = {.max_msgs = 20, .max_msgs_per_subject = 5};
    ck_assert_int_eq(jr__store_set_limits(f.st, &l2), 0);
    ck_assert_uint_eq(state(&f).msgs, 11);
    fx_cycle(&f);
    ck_assert_uint_eq(state(&f).msgs, 11); /* p: 5, q: 5, x: 1 */
    check_counters(&f);
    fx_done(&f);
}
END_TEST

START_TEST(catch_up_by_chunks)
{
    /* a leader store of configuration _i, a follower of every configuration */
    fx a;
    fx_init(&a, _i, NULL, 20);
    char subj[16], data[64];
    for (int i = 1; i <= 300; i++) {
        snprintf(subj, sizeof subj, "c.%d", i % 4);
        snprintf(data, sizeof data, "message %d", i);
        put(&a, subj, data, i);
    }
    jr__purge p = {.seq = 20};
    ck_assert_int_eq(jr__store_purge(a.st, &p, NULL), 0);
    for (int q = 50; q < 60; q++) jr__store_delete(a.st, (uint64_t)q, 0);
    jr__store_delete(a.st, 300, 0);
    jr__store_state sa = state(&a);
    for (int conf = 0; conf < NCONF; conf++) {
        fx b;
        fx_init(&b, conf, NULL, 21);
        put(&b, "c.0", "old", 1); /* stale content is replaced */
        ck_assert_int_eq(jr__store_reset(b.st, sa.first_seq), 0);
        jr__buf chunk;
        jr__buf_init(&chunk, NULL);
        uint64_t from = sa.first_seq, next;
        int chunks = 0;
        uint64_t encoded = jr__store_encoded(b.st);
        do {
            jr__buf_reset(&chunk);
            ck_assert_int_eq(jr__store_read_chunk(a.st, from, 1000, &chunk, &next), 0);
            ck_assert_int_eq(jr__store_apply_chunk(b.st, chunk.data, chunk.len), 0);
            /* applying it twice is harmless */
            ck_assert_int_eq(jr__store_apply_chunk(b.st, chunk.data, chunk.len), 0);
            from = next;
            chunks++;
        } while (from <= sa.last_seq);
        ck_assert_int_gt(chunks, 5);
        ck_assert_int_eq(jr__store_skip(b.st, sa.last_seq), 0);
        /* the records were written as they came: none encoded again, the same bytes */
        ck_assert_uint_eq(jr__store_encoded(b.st), encoded);
        jr__buf whole_a, whole_b;
        jr__buf_init(&whole_a, NULL);
        jr__buf_init(&whole_b, NULL);
        ck_assert_int_eq(jr__store_read_chunk(a.st, sa.first_seq, 1u << 20, &whole_a, &next), 0);
        ck_assert_int_eq(jr__store_read_chunk(b.st, sa.first_seq, 1u << 20, &whole_b, &next), 0);
        ck_assert_uint_eq(whole_a.len, whole_b.len);
        ck_assert(memcmp(whole_a.data, whole_b.data, whole_a.len) == 0);
        jr__buf_free(&whole_a);
        jr__buf_free(&whole_b);
        jr__buf_free(&chunk);
        fx_cycle(&b);
        jr__store_state sb = state(&b);
        ck_assert_uint_eq(sb.msgs, sa.msgs);
        ck_assert_uint_eq(sb.bytes, sa.bytes);
        ck_assert_uint_eq(sb.first_seq, sa.first_seq);
        ck_assert_uint_eq(sb.last_seq, sa.last_seq);
        ck_assert_uint_eq(sb.num_deleted, sa.num_deleted);
        ck_assert_uint_eq(sb.num_subjects, sa.num_subjects);
        jr__store_msg ma, mb;
        for (uint64_t q = 1; q <= 300; q++) {
            int ra = jr__store_get(a.st, q, &ma);
            if (ra) {
                expect_gone(&b, q);
                continue;
            }
            ck_assert_int_eq(jr__store_get(b.st, q, &mb), 0);
            ck_assert_uint_eq(ma.data_len, mb.data_len);
            ck_assert(memcmp(ma.data, mb.data, ma.data_len) == 0);
        }
        /* a malformed chunk changes nothing */
        uint8_t junk[100] = {1, 2, 3};
        ck_assert_int_eq(jr__store_apply_chunk(b.st, junk, sizeof junk), JR_ECORRUPT);
        ck_assert_uint_eq(state(&b).last_seq, sa.last_seq);
        fx_done(&b);
    }
    fx_done(&a);
}
END_TEST

/* A random mix of operations against a plain reference model, with reopens. */
typedef struct mmsg {
    int live;
    int subj;
    int64_t ts;
    uint32_t len;
} mmsg;

START_TEST(random_ops_match_a_model)
{
    for (uint64_t seed = 1; seed <= 12; seed++) {
        fx f;
        jr__store_limits lim = {0};
        jr__rand r;
        jr__rand_seed(&r, seed * 977 + (uint64_t)_i);
        if (seed % 3 == 1) lim.max_msgs = 40 + jr__rand_below(&r, 40);
        if (seed % 4 == 2) lim.max_msgs_per_subject = 1 + jr__rand_below(&r, 5);
        fx_init(&f, _i, &lim, seed);
        static mmsg model[4096];
        memset(model, 0, sizeof model);
        uint64_t last = 0;
        char subj[16], data[300];
        for (int step = 0; step < 600; step++) {
            uint64_t op = jr__rand_below(&r, 100);
            if (op < 70) {
                int sj = (int)jr__rand_below(&r, 6);
                uint32_t len = (uint32_t)jr__rand_below(&r, 250);
                snprintf(subj, sizeof subj, "m.%d", sj);
                memset(data, 'a' + (int)((last + 1) % 26), len);
                data[len] = 0;
                uint64_t seq = put(&f, subj, data, (int64_t)step);
                last = seq;
                model[seq] = (mmsg){1, sj, step, len};
                /* model the limits */
                if (lim.max_msgs_per_subject) {
                    uint64_t c = 0;
                    for (uint64_t q = seq; q >= 1; q--)
                        if (model[q].live && model[q].subj == sj && ++c > lim.max_msgs_per_subject)
                            model[q].live = 0;
                }
                if (lim.max_msgs) {
                    uint64_t c = 0;
                    for (uint64_t q = seq; q >= 1; q--)
                        if (model[q].live && ++c > lim.max_msgs) model[q].live = 0;
                }
            } else if (op < 85 && last) {
                uint64_t q = 1 + jr__rand_below(&r, last);
                int er = jr__rand_below(&r, 8) == 0;
                int rc = jr__store_delete(f.st, q, er);
                ck_assert_int_eq(rc, model[q].live ? 0 : JR_ENOTFOUND);
                model[q].live = 0;
            } else if (op < 90 && last) {
                jr__purge p = {0};
                int sj = (int)jr__rand_below(&r, 6);
                snprintf(subj, sizeof subj, "m.%d", sj);
                int kind = (int)jr__rand_below(&r, 3);
                if (kind == 0) {
                    p.filter = subj;
                    p.filter_len = strlen(subj);
                    for (uint64_t q = 1; q <= last; q++)
                        if (model[q].subj == sj) model[q].live = 0;
                } else if (kind == 1) {
                    p.seq = 1 + jr__rand_below(&r, last);
                    for (uint64_t q = 1; q < p.seq; q++) model[q].live = 0;
                } else {
                    p.keep = jr__rand_below(&r, 20) + 1;
                    uint64_t c = 0;
                    for (uint64_t q = last; q >= 1; q--)
                        if (model[q].live && ++c > p.keep) model[q].live = 0;
                }
                ck_assert_int_eq(jr__store_purge(f.st, &p, NULL), 0);
            } else if (op < 93) {
                fx_cycle(&f);
            } else if (op < 96) {
                ck_assert_int_eq(jr__store_sync(f.st), 0);
            }
            if (step % 50 == 49 || step == 599) {
                uint64_t n = 0;
                for (uint64_t q = 1; q <= last + 1; q++) {
                    jr__store_msg m;
                    int rc = jr__store_get(f.st, q, &m);
                    if (q <= last && model[q].live) {
                        ck_assert_msg(rc == 0, "seed %llu step %d: seq %llu missing",
                                      (unsigned long long)seed, step, (unsigned long long)q);
                        ck_assert_uint_eq(m.data_len, model[q].len);
                        n++;
                    } else {
                        ck_assert_msg(rc == JR_ENOTFOUND, "seed %llu step %d: seq %llu present",
                                      (unsigned long long)seed, step, (unsigned long long)q);
                    }
                }
                ck_assert_uint_eq(state(&f).msgs, n);
                ck_assert_uint_eq(state(&f).last_seq, last);
                check_counters(&f);
            }
        }
        fx_done(&f);
    }
}
END_TEST

/* A destroyed store is gone: its directory is removed, and a store opened again under the same
 * name starts empty — also when the destruction was interrupted (then the open finishes it). */
START_TEST(destroy_removes_the_store)
{
    int conf = CONF_FILE + _i % (NCONF - CONF_FILE);
    int interrupted = _i >= NCONF - CONF_FILE;
    fx f;
    fx_init(&f, conf, NULL, 40 + (uint64_t)_i);
    char data[300];
    memset(data, 'd', sizeof data - 1);
    data[sizeof data - 1] = 0;
    for (int i = 0; i < 60; i++) put(&f, "d.x", data, i + 1);
    ck_assert_int_eq(jr__store_close(f.st), 0);
    f.st = NULL;
    if (interrupted) {
        /* a stray file too: removed with the rest */
        jr_file *h;
        ck_assert_int_eq(f.vfs->open(f.vfs->ctx, "/store/ORDERS/stray", JR_O_CREATE, &h), 0);
        f.vfs->close(f.vfs->ctx, h);
        /* the marker is created, then the second removal fails and the machine dies */
        ck_assert_int_eq(jr__memfs_fail(f.vfs, JR__MEMFS_REMOVE, 2, JR_EIO, 1, NULL), 0);
        ck_assert_int_eq(jr__store_destroy(f.vfs, "/store", "ORDERS"), JR_EIO);
        jr__memfs_fail_clear(f.vfs);
        jr__memfs_crash(f.vfs, 1);
    } else {
        ck_assert_int_eq(jr__store_destroy(f.vfs, "/store", "ORDERS"), 0);
        jr_file *h;
        ck_assert_int_eq(f.vfs->open(f.vfs->ctx, "/store/ORDERS/x", JR_O_CREATE, &h),
                         JR_ENOTFOUND); /* the directory is gone */
        ck_assert_int_eq(jr__store_destroy(f.vfs, "/store", "ORDERS"), 0); /* nothing to do */
    }
    ck_assert_int_eq(fx_open(&f), 0);
    ck_assert_uint_eq(state(&f).last_seq, 0);
    ck_assert_uint_eq(state(&f).msgs, 0);
    put(&f, "d.y", "new", 1);
    fx_cycle(&f);
    expect_msg(&f, 1, "d.y", "new");
    ck_assert_uint_eq(state(&f).last_seq, 1);
    ck_assert_int_eq(jr__store_destroy(f.vfs, "/store", "bad/name"), JR_EINVAL);
    fx_done(&f);
}
END_TEST

START_TEST(file_store_on_posix)
{
    char tmpl[] = "/tmp/jr_store_test_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    jr__store_config cfg = {.kind = JR__STORE_FILE,
                            .name = "P",
                            .vfs = jr_vfs_posix(),
                            .dir = tmpl,
                            .block_bytes = 8192,
                            .compress = _i & 1,
                            .master_key = (_i & 2) ? test_master_key : NULL};
    jr__store *st;
    char err[256];
    ck_assert_int_eq(jr__store_open(&cfg, &st, err, sizeof err), 0);
    char data[200];
    for (uint64_t i = 1; i <= 500; i++) {
        snprintf(data, sizeof data, "posix message %llu", (unsigned long long)i);
        ck_assert_int_eq(jr__store_append(st, i, "p.x", 3, NULL, 0, data, strlen(data), 1, NULL),
                         0);
    }
    ck_assert_int_eq(jr__store_delete(st, 7, 1), 0);
    ck_assert_int_eq(jr__store_close(st), 0);
    ck_assert_int_eq(jr__store_open(&cfg, &st, err, sizeof err), 0);
    jr__store_msg m;
    ck_assert_int_eq(jr__store_get(st, 499, &m), 0);
    ck_assert(memcmp(m.data, "posix message 499", m.data_len) == 0);
    ck_assert_int_eq(jr__store_get(st, 7, &m), JR_ENOTFOUND);
    jr__purge all = {0};
    ck_assert_int_eq(jr__store_purge(st, &all, NULL), 0);
    ck_assert_int_eq(jr__store_close(st), 0);
    ck_assert_int_eq(jr__store_destroy(jr_vfs_posix(), tmpl, "P"), 0);
    char gone[128];
    snprintf(gone, sizeof gone, "test ! -e %s/P", tmpl);
    ck_assert_int_eq(system(gone), 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpl);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The file store hands what its active block's file received to jr_vfs.writeback every
 * megabyte (not for a vfs of version 1, which has no such field), and goes on when the hint
 * fails: nothing of it is needed for durability. */
START_TEST(writes_are_handed_to_writeback_each_megabyte)
{
    int conf = CONF_FILE + _i % (NCONF - CONF_FILE), mode = _i / (NCONF - CONF_FILE);
    fx f;
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(jr__memfs_new(NULL, 7, &f.vfs), 0);
    ck_assert_int_eq(f.vfs->mkdir(f.vfs->ctx, "/store"), 0);
    jr_vfs v1 = *f.vfs;
    v1.version = 1;
    fx_config(&f, conf, 4u << 20);
    if (mode == 1) f.cfg.vfs = &v1;
    if (mode == 2)
        ck_assert_int_eq(jr__memfs_fail(f.vfs, JR__MEMFS_WRITEBACK, 1, JR_EIO, 1, NULL), 0);
    ck_assert_int_eq(fx_open(&f), 0);
    char data[1001];
    memset(data, 'w', sizeof data - 1);
    data[sizeof data - 1] = 0;
    jr__memfs_stats a, b;
    jr__memfs_stats_get(f.vfs, &a);
    for (int i = 0; i < 6000; i++) put(&f, "w.x", data, i + 1); /* ~6.2 MB: one rotation */
    jr__memfs_stats_get(f.vfs, &b);
    uint64_t calls = b.ops[JR__MEMFS_WRITEBACK] - a.ops[JR__MEMFS_WRITEBACK];
    uint64_t mib = 6000 * (36 + 3 + 1000) / (1u << 20); /* of records: 5 */
    if (mode == 1) {
        ck_assert_uint_eq(calls, 0);
    } else {
        /* a call per megabyte the active blocks received (records, and with encryption their
         * frames' overhead), less at most one per block (its sync at rotation covers what it
         * received after its last call) */
        ck_assert_msg(calls + 2 >= mib && calls <= mib + 1,
                      "[%s] %llu writeback calls for %llu MiB of records", conf_names[conf],
                      (unsigned long long)calls, (unsigned long long)mib);
    }
    if (mode == 2) ck_assert_uint_eq(b.faults - a.faults, calls);
    jr__memfs_fail_clear(f.vfs);
    fx_cycle(&f);
    ck_assert_uint_eq(state(&f).msgs, 6000);
    expect_msg(&f, 1, "w.x", data);
    expect_msg(&f, 6000, "w.x", data);
    fx_done(&f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("behaviour");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, append_and_get, 0, NCONF);
    tcase_add_loop_test(tc, expected_seq_and_bad_input, 0, NCONF);
    tcase_add_loop_test(tc, iterate_with_filters, 0, NCONF);
    tcase_add_loop_test(tc, delete_tracks_interior_ranges, 0, NCONF);
    tcase_add_loop_test(tc, erase_overwrites_the_bytes, 0, NCONF);
    tcase_add_loop_test(tc, purge_variants, 0, NCONF);
    tcase_add_loop_test(tc, limit_max_msgs, 0, NCONF);
    tcase_add_loop_test(tc, limit_max_bytes, 0, NCONF);
    tcase_add_loop_test(tc, limit_max_age, 0, NCONF);
    tcase_add_loop_test(tc, limit_per_subject, 0, NCONF);
    tcase_add_loop_test(tc, limit_msg_size_and_update, 0, NCONF);
    tcase_add_loop_test(tc, catch_up_by_chunks, 0, NCONF);
    tcase_add_loop_test(tc, writes_are_handed_to_writeback_each_megabyte, 0,
                        3 * (NCONF - CONF_FILE));
    tcase_add_loop_test(tc, random_ops_match_a_model, 0, NCONF);
    tcase_add_loop_test(tc, destroy_removes_the_store, 0, 2 * (NCONF - CONF_FILE));
    tcase_add_loop_test(tc, file_store_on_posix, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
