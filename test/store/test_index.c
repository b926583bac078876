/*
 * The store's indexes: the sparse sequence index (lib/store/seqidx.c) against a reference, and
 * the memory of a key-value shaped store (one key updated over and over, one never), which must
 * follow the live messages and not the span of sequences between them.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "store/seqidx.h"
#include "store/store.h"
#include "util/rand.h"
#include "vfs/memfs.h"

/* A counting allocator: live bytes requested (each block carries its size in front). */
typedef struct counter {
    int64_t live, peak;
} counter;

static void c_add(counter *c, int64_t d)
{
    c->live += d;
    if (c->live > c->peak) c->peak = c->live;
}

static void *c_malloc(void *ctx, size_t n)
{
    uint8_t *p = malloc(n + 16);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    c_add(ctx, (int64_t)n);
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
    c_add(ctx, (int64_t)n - (int64_t)old);
    return p + 16;
}

static void c_free(void *ctx, void *q)
{
    if (!q) return;
    uint8_t *b = (uint8_t *)q - 16;
    size_t n;
    memcpy(&n, b, sizeof n);
    c_add(ctx, -(int64_t)n);
    free(b);
}

/* ---------------------------------------------------------------------------------------------
 * seqidx against a bitmap of the seqs held
 */

enum { SPAN = 6000 };

static void check_against(const jr__seqidx *x, const uint8_t *held, uint64_t top)
{
    uint64_t n = 0;
    for (uint64_t q = 1; q <= top; q++) {
        jr__ent *e = jr__seqidx_find(x, q);
        ck_assert_msg(!!e == held[q], "seq %llu: found %d, held %d", (unsigned long long)q, !!e,
                      held[q]);
        if (e) {
            ck_assert_uint_eq(e->seq, q);
            ck_assert_uint_eq(e->ts, (int64_t)q * 3); /* the entry's own payload travelled */
            n++;
        }
    }
    ck_assert_uint_eq(x->count, n);
    /* a forward and a backward walk visit exactly the held seqs */
    jr__seqcur c;
    uint64_t seen = 0, prev = 0;
    for (jr__ent *e = jr__seqidx_ceil(x, 0, &c); e; e = jr__seqidx_next(x, &c)) {
        ck_assert(e->seq > prev && held[e->seq]);
        prev = e->seq;
        seen++;
    }
    ck_assert_uint_eq(seen, n);
    seen = 0;
    prev = UINT64_MAX;
    for (jr__ent *e = jr__seqidx_floor(x, UINT64_MAX, &c); e; e = jr__seqidx_prev(x, &c)) {
        ck_assert(e->seq < prev && held[e->seq]);
        prev = e->seq;
        seen++;
    }
    ck_assert_uint_eq(seen, n);
}

START_TEST(seqidx_matches_a_bitmap)
{
    counter cnt = {0};
    jr_allocator a = {JR_ALLOCATOR_VERSION, &cnt, c_malloc, c_realloc, c_free};
    static uint8_t held[SPAN + 2];
    jr__rand r;
    jr__rand_seed(&r, 1000 + (uint64_t)_i);
    for (int round = 0; round < 4; round++) {
        memset(held, 0, sizeof held);
        jr__seqidx x;
        jr__seqidx_init(&x, &a);
        uint64_t top = 0;
        /* phases: grow, thin out at random (merges, shrinks), front removals, regrow */
        int del_pct[] = {10, 70, 50, 95, 30};
        for (int ph = 0; ph < 5; ph++) {
            for (int k = 0; k < SPAN / 5; k++) {
                int del = (int)(jr__rand_next(&r) % 100) < del_pct[ph];
                if (!del || x.count == 0) {
                    if (top >= SPAN) continue;
                    top += 1 + (jr__rand_next(&r) % 3 == 0); /* some seqs never held */
                    if (top > SPAN) top = SPAN;
                    if (held[top]) continue;
                    jr__ent e = {.seq = top, .ts = (int64_t)top * 3};
                    ck_assert_int_eq(jr__seqidx_push(&x, &e), 0);
                    held[top] = 1;
                    continue;
                }
                uint64_t q;
                if (round == 1 || jr__rand_next(&r) % 4 == 0) {
                    q = jr__seqidx_first(&x)->seq; /* discard old */
                } else {
                    /* a held seq near a random point: ceil or floor */
                    jr__seqcur c;
                    uint64_t at = 1 + jr__rand_next(&r) % top;
                    int up = jr__rand_next(&r) & 1;
                    jr__ent *e = up ? jr__seqidx_ceil(&x, at, &c) : jr__seqidx_floor(&x, at, &c);
                    /* nothing held between at and the answer, nor beyond it if there is none */
                    uint64_t lo = up ? at : (e ? e->seq + 1 : 1),
                             hi = up ? (e ? e->seq : top + 1) : at + 1;
                    ck_assert(hi <= lo || !memchr(held + lo, 1, hi - lo));
                    if (e) ck_assert(held[e->seq] && (up ? e->seq >= at : e->seq <= at));
                    if (!e) e = jr__seqidx_last(&x);
                    q = e->seq;
                }
                ck_assert(held[q]);
                jr__seqidx_remove(&x, q);
                held[q] = 0;
            }
            check_against(&x, held, top);
            /* memory follows what is held: at most ~4 leaf entries of room per entry, plus
             * the directory and one or two part-empty leaves at the ends */
            int64_t bound = (int64_t)(x.count * 4 * sizeof(jr__ent)) +
                            (int64_t)(x.nleaves * 16 + 64) * 8 +
                            4 * (int64_t)(JR__SEQIDX_LEAF * sizeof(jr__ent));
            ck_assert_msg(cnt.live <= bound, "round %d phase %d: %lld bytes for %llu entries",
                          round, ph, (long long)cnt.live, (unsigned long long)x.count);
            ck_assert_int_eq(cnt.live, (int64_t)jr__seqidx_bytes(&x));
        }
        jr__seqidx_shrink(&x);
        check_against(&x, held, top);
        ck_assert_int_eq(cnt.live, (int64_t)jr__seqidx_bytes(&x));
        while (x.count) jr__seqidx_remove(&x, jr__seqidx_last(&x)->seq);
        jr__seqidx_shrink(&x);
        ck_assert_int_eq(cnt.live, 0);
        jr__seqidx_free(&x);
    }
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * A key-value shaped store
 */

/* Heap of a store of kind conf (blocks of block_bytes) after `updates` appends to key "kv.hot" with
 * max_msgs_per_subject = 1, beside one message of "kv.cold" that is never updated, once synced
 * and trimmed (an idle stream); *busy is the heap right after the appends, before either. The
 * store is then checked and, if persistent, reopened and checked again. */
static int64_t kv_heap(int conf, uint64_t block_bytes, uint64_t updates, int64_t *busy)
{
    counter cnt = {0};
    jr_allocator a = {JR_ALLOCATOR_VERSION, &cnt, c_malloc, c_realloc, c_free};
    fx f;
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(jr__memfs_new(NULL, 5, &f.vfs), 0);
    ck_assert_int_eq(f.vfs->mkdir(f.vfs->ctx, "/store"), 0);
    fx_config(&f, conf, block_bytes);
    f.cfg.alloc = &a;
    f.cfg.limits.max_msgs_per_subject = 1;
    ck_assert_int_eq(fx_open(&f), 0);
    uint64_t seq = 1;
    ck_assert_int_eq(jr__store_append(f.st, seq, "kv.cold", 7, NULL, 0, "c", 1, 1, NULL), 0);
    for (uint64_t k = 0; k < updates; k++) {
        char v[16];
        int n = snprintf(v, sizeof v, "%llu", (unsigned long long)k);
        seq++;
        ck_assert_int_eq(
            jr__store_append(f.st, seq, "kv.hot", 6, NULL, 0, v, (size_t)n, (int64_t)seq, NULL), 0);
    }
    *busy = cnt.live;
    ck_assert_int_eq(jr__store_sync(f.st), 0);
    ck_assert_int_eq(jr__store_trim(f.st), 0);
    int64_t heap = cnt.live;
    for (int pass = 0; pass < 2; pass++) {
        jr__store_state st;
        jr__store_state_get(f.st, &st);
        ck_assert_uint_eq(st.msgs, 2);
        ck_assert_uint_eq(st.first_seq, 1);
        ck_assert_uint_eq(st.last_seq, seq);
        ck_assert_uint_eq(st.num_deleted, seq - 2);
        size_t nr;
        const jr__seq_range *r = jr__store_deleted(f.st, &nr);
        ck_assert_uint_eq(nr, 1);
        ck_assert(r[0].lo == 2 && r[0].hi == seq - 1);
        jr__store_msg m;
        ck_assert_int_eq(jr__store_get_last(f.st, "kv.hot", 6, &m), 0);
        ck_assert_uint_eq(m.seq, seq);
        char v[16];
        int vn = snprintf(v, sizeof v, "%llu", (unsigned long long)(updates - 1));
        ck_assert(m.data_len == (size_t)vn && memcmp(m.data, v, (size_t)vn) == 0);
        ck_assert_int_eq(jr__store_get(f.st, 1, &m), 0); /* moved by compaction, intact */
        ck_assert(m.data_len == 1 && m.data[0] == 'c' && m.subject_len == 7);
        ck_assert_int_eq(jr__store_next(f.st, 2, NULL, 0, &m), 0);
        ck_assert_uint_eq(m.seq, seq);
        ck_assert_int_eq(jr__store_get_last(f.st, "kv.*", 4, &m), 0);
        ck_assert_uint_eq(m.seq, seq);
        ck_assert_int_eq(jr__store_get(f.st, seq - 1, &m), JR_ENOTFOUND);
        fx_cycle(&f);
    }
    /* removing the subject's newest message leaves it without any, and the store at one */
    ck_assert_int_eq(jr__store_delete(f.st, seq, 0), 0);
    ck_assert_uint_eq(jr__store_subject_count(f.st, "kv.hot", 6), 0);
    jr__store_msg m;
    ck_assert_int_eq(jr__store_get_last(f.st, "kv.hot", 6, &m), JR_ENOTFOUND);
    ck_assert_int_eq(jr__store_get_last(f.st, ">", 1, &m), 0);
    ck_assert_uint_eq(m.seq, 1);
    fx_done(&f);
    ck_assert_int_eq(cnt.live, 0);
    return heap;
}

START_TEST(a_key_value_store_holds_memory_for_its_live_messages)
{
    int conf = _i;
    /* 64 KiB blocks at two counts, and the default blocks (1 MiB memory, 8 MiB file); a dense
     * index alone holds 640 KB after 20,000 updates and 6.4 MB after 200,000. JR_KV_UPDATES
     * sets the larger count (the sanitizer build runs fewer). */
    const char *env = getenv("JR_KV_UPDATES");
    int many = env && atoi(env) > 20000 ? atoi(env) : 200000;
    int64_t b_small, b_large, b_dflt;
    int64_t small = kv_heap(conf, 64 * 1024, 20000, &b_small);
    int64_t large = kv_heap(conf, 64 * 1024, many, &b_large);
    int64_t dflt = kv_heap(conf, 0, many, &b_dflt);
    fprintf(stderr,
            "%s store, one key updated 20,000 / %d times beside one never: %lld / %lld bytes "
            "of heap (64 KiB blocks), %lld after %d (default blocks); before sync and trim "
            "%lld / %lld / %lld\n",
            conf_names[conf], many, (long long)small, (long long)large, (long long)dflt, many,
            (long long)b_small, (long long)b_large, (long long)b_dflt);
    /* a bound independent of the count; the memory store compacts its blocks, so it holds
     * neither two blocks nor one block of dead updates */
    const int64_t bound = 128 * 1024;
    ck_assert_msg(small <= bound && large <= bound && dflt <= bound,
                  "%s: %lld, %lld, %lld bytes (bound %lld)", conf_names[conf], (long long)small,
                  (long long)large, (long long)dflt, (long long)bound);
    /* Busy (never synced nor trimmed): the memory store's blocks are its messages; an
     * always-open file block keeps a bounded window of its tail. A store that seals its blocks
     * at rotation (lz4, encryption) keeps the block being filled (the seal's input) and the
     * block it sealed last (the read cache), and with encryption the frames not yet written
     * (up to 1 MiB, in a buffer of up to twice that). Nothing else: no read cache of a dropped
     * block, no copies of earlier blocks. */
    int sealed = conf == CONF_FILE_LZ4 || conf == CONF_FILE_ENC || conf == CONF_FILE_LZ4_ENC;
    int64_t busy_small = sealed ? 4 * 64 * 1024 + bound : bound;
    int64_t busy_dflt = sealed ? (2 * 8 + 2) * 1024 * 1024 + bound : 1024 * 1024;
    ck_assert_msg(b_small <= busy_small && b_large <= busy_small && b_dflt <= busy_dflt,
                  "%s before sync: %lld, %lld, %lld bytes (bounds %lld, %lld)", conf_names[conf],
                  (long long)b_small, (long long)b_large, (long long)b_dflt, (long long)busy_small,
                  (long long)busy_dflt);
}
END_TEST

/* Interior deletes at random between live messages: subject queries and iteration stay right
 * when the live messages of one subject are far apart. */
START_TEST(sparse_subjects_stay_queryable)
{
    fx f;
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(jr__memfs_new(NULL, 9, &f.vfs), 0);
    ck_assert_int_eq(f.vfs->mkdir(f.vfs->ctx, "/store"), 0);
    fx_config(&f, _i, 64 * 1024);
    ck_assert_int_eq(fx_open(&f), 0);
    jr__rand r;
    jr__rand_seed(&r, 77);
    enum { N = 3000 };
    static uint8_t live[N + 1];
    static uint8_t subj[N + 1];
    static const char *const names[3] = {"a.x", "a.y", "b.z"};
    for (uint64_t q = 1; q <= N; q++) {
        subj[q] = (uint8_t)(jr__rand_next(&r) % 3);
        ck_assert_int_eq(
            jr__store_append(f.st, q, names[subj[q]], 3, NULL, 0, "v", 1, (int64_t)q, NULL), 0);
        live[q] = 1;
    }
    for (int k = 0; k < 2500; k++) {
        uint64_t q = 1 + jr__rand_next(&r) % N;
        if (!live[q]) continue;
        ck_assert_int_eq(jr__store_delete(f.st, q, 0), 0);
        live[q] = 0;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int sj = 0; sj < 3; sj++) {
            uint64_t cnt = 0, last = 0;
            for (uint64_t q = 1; q <= N; q++)
                if (live[q] && subj[q] == sj) cnt++, last = q;
            ck_assert_uint_eq(jr__store_subject_count(f.st, names[sj], 3), cnt);
            jr__store_msg m;
            ck_assert_int_eq(jr__store_get_last(f.st, names[sj], 3, &m), cnt ? 0 : JR_ENOTFOUND);
            if (cnt) ck_assert_uint_eq(m.seq, last);
            /* iterate by literal filter, and from arbitrary points */
            uint64_t from = 1, seen = 0;
            while (jr__store_next(f.st, from, names[sj], 3, &m) == 0) {
                for (uint64_t q = from; q < m.seq; q++) ck_assert(!(live[q] && subj[q] == sj));
                ck_assert(live[m.seq] && subj[m.seq] == sj);
                seen++;
                from = m.seq + 1 + (jr__rand_next(&r) % 4 == 0 ? jr__rand_next(&r) % 5 : 0);
            }
            for (uint64_t q = from; q <= N; q++) ck_assert(!(live[q] && subj[q] == sj));
            ck_assert_uint_le(seen, cnt);
        }
        /* pending counts by filter: literal, a wildcard some subjects match, wildcards every
         * subject matches (counted like no filter), none */
        static const char *const filters[] = {"a.x", "a.*", "a.>", "b.>", "*.*", ">", "*.z", NULL};
        for (int fi = 0; fi < 8; fi++) {
            const char *flt = filters[fi];
            for (uint64_t from = 1; from <= N + 1; from += 1 + jr__rand_next(&r) % 97) {
                uint64_t want = 0;
                for (uint64_t q = from; q <= N; q++) {
                    if (!live[q]) continue;
                    const char *nm = names[subj[q]];
                    int match = !flt || !strcmp(flt, ">") || !strcmp(flt, "*.*") ||
                                !strcmp(flt, nm) ||
                                (!strcmp(flt, "a.*") || !strcmp(flt, "a.>") ? nm[0] == 'a' : 0) ||
                                (!strcmp(flt, "b.>") && nm[0] == 'b') ||
                                (!strcmp(flt, "*.z") && nm[2] == 'z');
                    want += (uint64_t)match;
                }
                ck_assert_uint_eq(jr__store_num_pending(f.st, from, flt, flt ? strlen(flt) : 0),
                                  want);
            }
        }
        fx_cycle(&f);
    }
    /* keep the newest 5 of one subject */
    jr__purge p = {.filter = "a.x", .filter_len = 3, .keep = 5};
    ck_assert_int_eq(jr__store_purge(f.st, &p, NULL), 0);
    ck_assert_uint_le(jr__store_subject_count(f.st, "a.x", 3), 5);
    fx_done(&f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("store-index");
    TCase *tc = tcase_create("index");
    tcase_set_timeout(tc, 240);
    tcase_add_loop_test(tc, seqidx_matches_a_bitmap, 0, 3);
    tcase_add_loop_test(tc, a_key_value_store_holds_memory_for_its_live_messages, 0, NCONF);
    tcase_add_loop_test(tc, sparse_subjects_stay_queryable, 0, NCONF);
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
