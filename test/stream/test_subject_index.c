/* The subject index: insert, lookup, remove; overlap refusal naming the owner; 100,000 streams;
 * a randomized cross-check against brute-force matching; out-of-memory at every allocation. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/subject.h"
#include "stream/subject_index.h"
#include "util/rand.h"

static int A, B, C, D; /* distinct owners */

START_TEST(insert_lookup_remove)
{
    jr__subject_index ix;
    jr__subject_index_init(&ix, NULL);
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "orders.new"));
    ck_assert_int_eq(jr__subject_index_insert(&ix, "orders.>", &A, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "tenants.*.events", &B, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "billing", &C, NULL), 0);
    ck_assert_uint_eq(ix.npatterns, 3);

    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "orders.new"), &A);
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "orders.eu.new"), &A);
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "orders"));
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "tenants.42.events"), &B);
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "tenants.42.other"));
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "tenants.42.events.x"));
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "billing"), &C);
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "billing.x"));
    /* not literal subjects: never matched */
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "orders.*"));
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "orders.>"));
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "orders..x"));
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, ""));

    ck_assert_ptr_eq(jr__subject_index_exact(&ix, "orders.>"), &A);
    ck_assert_ptr_null(jr__subject_index_exact(&ix, "orders.*"));
    ck_assert_ptr_null(jr__subject_index_exact(&ix, "tenants.*"));

    /* remove: only the owner's exact pattern */
    ck_assert_int_eq(jr__subject_index_remove(&ix, "orders.>", &B), JR_ENOTFOUND);
    ck_assert_int_eq(jr__subject_index_remove(&ix, "orders.*", &A), JR_ENOTFOUND);
    ck_assert_int_eq(jr__subject_index_remove(&ix, "orders.>", &A), 0);
    ck_assert_int_eq(jr__subject_index_remove(&ix, "orders.>", &A), JR_ENOTFOUND);
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "orders.new"));
    ck_assert_int_eq(jr__subject_index_remove(&ix, "tenants.*.events", &B), 0);
    ck_assert_int_eq(jr__subject_index_remove(&ix, "billing", &C), 0);
    ck_assert_uint_eq(ix.npatterns, 0);
    ck_assert_uint_eq(ix.nnodes, 0); /* every node pruned */
    jr__subject_index_free(&ix);
}
END_TEST

START_TEST(bad_input)
{
    jr__subject_index ix;
    jr__subject_index_init(&ix, NULL);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "a..b", &A, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "a.>.b", &A, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__subject_index_insert(&ix, NULL, &A, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "a", NULL, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__subject_index_remove(&ix, "a", &A), JR_ENOTFOUND);
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, NULL));
    ck_assert_uint_eq(ix.npatterns, 0);
    jr__subject_index_free(&ix);
}
END_TEST

START_TEST(overlap_is_refused_naming_the_owner)
{
    jr__subject_index ix;
    jr__subject_index_init(&ix, NULL);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "orders.>", &A, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "tenants.1.>", &B, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "x.y.z", &C, NULL), 0);
    static const struct {
        const char *pattern;
        void *owner;
    } refused[] = {
        {"orders.>", &A}, {"orders.eu.*", &A}, {"orders.x", &A},  {"*.new", &A},
        {"*.*", &A},      {"tenants.*.x", &B}, {"tenants.>", &B}, {"*.1.>", &B},
        {"x.*.z", &C},    {"x.y.>", &C},       {"*.y.z", &C},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        void *conflict = NULL;
        ck_assert_int_eq(jr__subject_index_insert(&ix, refused[i].pattern, &D, &conflict),
                         JR_EEXIST);
        ck_assert_msg(conflict == refused[i].owner, "%s", refused[i].pattern);
    }
    void *conflict = NULL; /* ">" overlaps all three: any of them is a right answer */
    ck_assert_int_eq(jr__subject_index_insert(&ix, ">", &D, &conflict), JR_EEXIST);
    ck_assert(conflict == &A || conflict == &B || conflict == &C);
    ck_assert_uint_eq(ix.npatterns, 3);
    /* not overlapping: accepted */
    ck_assert_int_eq(jr__subject_index_insert(&ix, "orders", &D, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "tenants.2.>", &D, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "x.y", &D, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "x.y.z.w", &D, NULL), 0);
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "orders"), &D);
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "orders.1"), &A);
    /* the same owner may overlap itself (the config layer checks that), and re-inserting its
     * own pattern changes nothing */
    ck_assert_int_eq(jr__subject_index_insert(&ix, "orders.eu.*", &A, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "orders.>", &A, NULL), 0);
    ck_assert_uint_eq(ix.npatterns, 8);
    jr__subject_index_free(&ix);
}
END_TEST

START_TEST(lookup_backtracks_from_literal_to_star)
{
    jr__subject_index ix;
    jr__subject_index_init(&ix, NULL);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "a.b.c", &A, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "a.*.d", &B, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "a.b.e.>", &C, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "*.b.f", &D, NULL), 0);
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "a.b.c"), &A);
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "a.b.d"), &B);
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "a.x.d"), &B);
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "a.b.e.1.2"), &C);
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "a.b.e"));
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "a.b.f"), &D);
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "z.b.f"), &D);
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "a.b.x"));
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "a.b"));
    jr__subject_index_free(&ix);
}
END_TEST

START_TEST(insert_all_is_all_or_nothing)
{
    jr__subject_index ix;
    jr__subject_index_init(&ix, NULL);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "taken.>", &A, NULL), 0);
    const char *set[] = {"free.1", "free.2", "taken.x", "free.3"};
    void *conflict = NULL;
    ck_assert_int_eq(jr__subject_index_insert_all(&ix, set, 4, &B, &conflict), JR_EEXIST);
    ck_assert_ptr_eq(conflict, &A);
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "free.1"));
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "free.2"));
    ck_assert_uint_eq(ix.npatterns, 1);
    const char *bad[] = {"free.1", "no..good"};
    ck_assert_int_eq(jr__subject_index_insert_all(&ix, bad, 2, &B, NULL), JR_EINVAL);
    ck_assert_uint_eq(ix.npatterns, 1);
    const char *good[] = {"free.1", "free.2", "free.1"};
    ck_assert_int_eq(jr__subject_index_insert_all(&ix, good, 3, &B, NULL), 0);
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "free.2"), &B);
    ck_assert_uint_eq(ix.npatterns, 3);
    jr__subject_index_free(&ix);
}
END_TEST

START_TEST(replace_changes_subjects_or_nothing)
{
    jr__subject_index ix;
    jr__subject_index_init(&ix, NULL);
    const char *old[] = {"orders.*", "refunds"};
    ck_assert_int_eq(jr__subject_index_insert_all(&ix, old, 2, &A, NULL), 0);
    ck_assert_int_eq(jr__subject_index_insert(&ix, "billing.>", &B, NULL), 0);
    /* widening orders.* to orders.> overlaps only A's own old pattern: fine */
    const char *wider[] = {"orders.>", "refunds"};
    ck_assert_int_eq(jr__subject_index_replace(&ix, old, 2, wider, 2, &A, NULL), 0);
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "orders.eu.new"), &A);
    ck_assert_ptr_null(jr__subject_index_exact(&ix, "orders.*"));
    ck_assert_uint_eq(ix.npatterns, 3);
    /* taking billing.x collides with B: A keeps exactly its patterns */
    const char *grab[] = {"orders.new", "billing.x"};
    void *conflict = NULL;
    ck_assert_int_eq(jr__subject_index_replace(&ix, wider, 2, grab, 2, &A, &conflict), JR_EEXIST);
    ck_assert_ptr_eq(conflict, &B);
    ck_assert_ptr_eq(jr__subject_index_exact(&ix, "orders.>"), &A);
    ck_assert_ptr_eq(jr__subject_index_exact(&ix, "refunds"), &A);
    ck_assert_ptr_null(jr__subject_index_exact(&ix, "orders.new"));
    ck_assert_uint_eq(ix.npatterns, 3);
    /* narrowing */
    const char *narrow[] = {"orders.new"};
    ck_assert_int_eq(jr__subject_index_replace(&ix, wider, 2, narrow, 1, &A, NULL), 0);
    ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "orders.new"), &A);
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "orders.old"));
    ck_assert_ptr_null(jr__subject_index_lookup(&ix, "refunds"));
    ck_assert_uint_eq(ix.npatterns, 2);
    jr__subject_index_free(&ix);
}
END_TEST

/* 100,000 streams, three patterns each, of the shapes streams use: a literal prefix with ">",
 * a "*" in the middle, a "*" in front. Every stream's subjects find exactly it. */
START_TEST(hundred_thousand_streams)
{
    enum { NS = 100000 };
    jr__subject_index ix;
    jr__subject_index_init(&ix, NULL);
    char p[64];
    for (uintptr_t i = 0; i < NS; i++) {
        void *owner = (void *)(i + 1);
        snprintf(p, sizeof p, "orders.%lu.>", (unsigned long)i);
        ck_assert_int_eq(jr__subject_index_insert(&ix, p, owner, NULL), 0);
        snprintf(p, sizeof p, "tenants.t%lu.*.events", (unsigned long)i);
        ck_assert_int_eq(jr__subject_index_insert(&ix, p, owner, NULL), 0);
        snprintf(p, sizeof p, "metrics.*.%lu", (unsigned long)i);
        ck_assert_int_eq(jr__subject_index_insert(&ix, p, owner, NULL), 0);
    }
    ck_assert_uint_eq(ix.npatterns, 3 * NS);
    /* a pattern spanning all of them is refused */
    void *conflict = NULL;
    ck_assert_int_eq(jr__subject_index_insert(&ix, "metrics.cpu.*", (void *)-1, &conflict),
                     JR_EEXIST);
    ck_assert_ptr_nonnull(conflict);
    jr__rand r;
    jr__rand_seed(&r, 7);
    for (int k = 0; k < 300000; k++) {
        unsigned long i = (unsigned long)jr__rand_below(&r, NS);
        switch (k % 4) {
        case 0:
            snprintf(p, sizeof p, "orders.%lu.eu.new", i);
            break;
        case 1:
            snprintf(p, sizeof p, "tenants.t%lu.x%d.events", i, k);
            break;
        case 2:
            snprintf(p, sizeof p, "metrics.cpu%d.%lu", k % 7, i);
            break;
        default:
            snprintf(p, sizeof p, "tenants.t%lu.x.other", i); /* matches nothing */
            ck_assert_ptr_null(jr__subject_index_lookup(&ix, p));
            continue;
        }
        ck_assert_msg(jr__subject_index_lookup(&ix, p) == (void *)(i + 1), "%s", p);
    }
    fprintf(stderr, "subject index: %zu patterns, %zu nodes, %zu bytes (%.1f bytes/pattern)\n",
            ix.npatterns, ix.nnodes, ix.bytes, (double)ix.bytes / (double)ix.npatterns);
    ck_assert_uint_lt(ix.bytes / ix.npatterns, 160);
    /* remove every other stream; the rest still resolve, the removed ones don't */
    for (uintptr_t i = 0; i < NS; i += 2) {
        void *owner = (void *)(i + 1);
        snprintf(p, sizeof p, "orders.%lu.>", (unsigned long)i);
        ck_assert_int_eq(jr__subject_index_remove(&ix, p, owner), 0);
        snprintf(p, sizeof p, "tenants.t%lu.*.events", (unsigned long)i);
        ck_assert_int_eq(jr__subject_index_remove(&ix, p, owner), 0);
        snprintf(p, sizeof p, "metrics.*.%lu", (unsigned long)i);
        ck_assert_int_eq(jr__subject_index_remove(&ix, p, owner), 0);
    }
    for (unsigned long i = 0; i < NS; i += 997) {
        snprintf(p, sizeof p, "metrics.mem.%lu", i);
        void *want = i % 2 ? (void *)(uintptr_t)(i + 1) : NULL;
        ck_assert_ptr_eq(jr__subject_index_lookup(&ix, p), want);
    }
    jr__subject_index_free(&ix);
}
END_TEST

/* Random patterns from a small alphabet, so that overlaps are frequent: the index accepts a
 * pattern exactly when no pattern of another owner overlaps it (checked pairwise), and lookup
 * agrees with brute-force matching over the accepted patterns. */
START_TEST(random_against_brute_force)
{
    uint64_t seed = (uint64_t)_i * 7919 + 1;
    jr__rand r;
    jr__rand_seed(&r, seed);
    static const char *toks[] = {"a", "b", "c", "*", ">"};
    enum { MAXP = 400 };
    static char pat[MAXP][32];
    static uintptr_t own[MAXP];
    size_t np = 0;
    jr__subject_index ix;
    jr__subject_index_init(&ix, NULL);
    for (int step = 0; step < 3000; step++) {
        char buf[32] = "";
        int len = 1 + (int)jr__rand_below(&r, 4);
        for (int i = 0; i < len; i++) {
            if (i) strcat(buf, ".");
            strcat(buf, toks[jr__rand_below(&r, i == len - 1 ? 5 : 4)]);
        }
        uintptr_t owner = 1 + jr__rand_below(&r, 6);
        int action = (int)jr__rand_below(&r, 3);
        if (action < 2 && np < MAXP) {
            uintptr_t other = 0;
            int dup = 0;
            for (size_t i = 0; i < np; i++) {
                if (own[i] != owner && jr__subject_overlap(pat[i], buf) && !other) other = own[i];
                if (own[i] == owner && strcmp(pat[i], buf) == 0) dup = 1;
            }
            void *conflict = NULL;
            int rc = jr__subject_index_insert(&ix, buf, (void *)owner, &conflict);
            if (other) {
                ck_assert_msg(rc == JR_EEXIST, "seed %llu step %d: %s accepted",
                              (unsigned long long)seed, step, buf);
                /* the named owner really overlaps */
                int real = 0;
                for (size_t i = 0; i < np; i++)
                    real |= own[i] == (uintptr_t)conflict && jr__subject_overlap(pat[i], buf);
                ck_assert_msg(real, "seed %llu step %d", (unsigned long long)seed, step);
            } else {
                ck_assert_msg(rc == 0, "seed %llu step %d: %s refused (%d)",
                              (unsigned long long)seed, step, buf, rc);
                if (!dup) {
                    strcpy(pat[np], buf);
                    own[np++] = owner;
                }
            }
        } else if (np > 0) {
            size_t i = (size_t)jr__rand_below(&r, np);
            ck_assert_int_eq(jr__subject_index_remove(&ix, pat[i], (void *)own[i]), 0);
            np--;
            if (i != np) {
                memcpy(pat[i], pat[np], sizeof pat[i]);
                own[i] = own[np];
            }
        }
        ck_assert_uint_eq(ix.npatterns, np);
        /* a random literal subject */
        char sub[32] = "";
        len = 1 + (int)jr__rand_below(&r, 5);
        for (int i = 0; i < len; i++) {
            if (i) strcat(sub, ".");
            strcat(sub, toks[jr__rand_below(&r, 3)]);
        }
        uintptr_t want = 0;
        for (size_t i = 0; i < np && !want; i++)
            if (jr__subject_matches(pat[i], sub)) want = own[i];
        ck_assert_msg((uintptr_t)jr__subject_index_lookup(&ix, sub) == want,
                      "seed %llu step %d: lookup %s (replay: _i=%d)", (unsigned long long)seed,
                      step, sub, _i);
    }
    while (np > 0) {
        np--;
        ck_assert_int_eq(jr__subject_index_remove(&ix, pat[np], (void *)own[np]), 0);
    }
    ck_assert_uint_eq(ix.nnodes, 0);
    jr__subject_index_free(&ix);
}
END_TEST

/* An allocator that fails once `budget` allocations have been made. */
typedef struct failing {
    long budget;
    long live;
} failing;

static void *f_malloc(void *ctx, size_t n)
{
    failing *f = ctx;
    if (f->budget-- <= 0) return NULL;
    f->live++;
    return malloc(n);
}

static void *f_realloc(void *ctx, void *p, size_t n)
{
    failing *f = ctx;
    if (f->budget-- <= 0) return NULL;
    return realloc(p, n);
}

static void f_free(void *ctx, void *p)
{
    failing *f = ctx;
    if (p) f->live--;
    free(p);
}

START_TEST(out_of_memory_changes_nothing)
{
    for (long budget = 0; budget < 60; budget++) {
        failing f = {1000000, 0};
        jr_allocator a = {JR_ALLOCATOR_VERSION, &f, f_malloc, f_realloc, f_free};
        jr__subject_index ix;
        jr__subject_index_init(&ix, &a);
        char p[32];
        for (int i = 0; i < 20; i++) {
            snprintf(p, sizeof p, "base.%d.>", i);
            ck_assert_int_eq(jr__subject_index_insert(&ix, p, &A, NULL), 0);
        }
        f.budget = budget;
        const char *set[] = {"n.1.2.3.4", "n.*.x", "m.>", "n.1.2.3.5"};
        int rc = jr__subject_index_insert_all(&ix, set, 4, &B, NULL);
        if (rc == 0) {
            ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "n.1.2.3.4"), &B);
            ck_assert_uint_eq(ix.npatterns, 24);
        } else {
            ck_assert_int_eq(rc, JR_ENOMEM);
            ck_assert_uint_eq(ix.npatterns, 20);
            ck_assert_ptr_null(jr__subject_index_lookup(&ix, "n.1.2.3.4"));
            ck_assert_ptr_null(jr__subject_index_lookup(&ix, "m.x"));
            ck_assert_ptr_eq(jr__subject_index_lookup(&ix, "base.3.x"), &A);
        }
        f.budget = 1000000;
        jr__subject_index_free(&ix);
        ck_assert_int_eq(f.live, 0);
    }
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * jr__subject_first_overlap against the pairwise reference
 */

/* The reference: the first pattern overlapping an earlier one, and the earliest one it overlaps
 * (what config validation reported when it compared every pair). */
static int brute_first_overlap(const char *const *v, size_t n, size_t *i, size_t *j)
{
    for (size_t k = 0; k < n; k++)
        for (size_t m = 0; m < k; m++)
            if (jr__subject_overlap(v[k], v[m])) {
                *i = k;
                *j = m;
                return JR_EEXIST;
            }
    return 0;
}

/* An allocator that fails from the n-th call on (n = 0: never). */
typedef struct failer {
    long calls, fail_at;
} failer;

static void *fo_malloc(void *ctx, size_t n)
{
    failer *f = ctx;
    if (f->fail_at && ++f->calls >= f->fail_at) return NULL;
    return malloc(n);
}

static void *fo_realloc(void *ctx, void *p, size_t n)
{
    failer *f = ctx;
    if (f->fail_at && ++f->calls >= f->fail_at) return NULL;
    return realloc(p, n);
}

static void fo_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static void check_first_overlap(const char *const *v, size_t n, long fail_at)
{
    failer fl = {0, fail_at};
    jr_allocator a = {JR_ALLOCATOR_VERSION, &fl, fo_malloc, fo_realloc, fo_free};
    size_t bi = 99, bj = 99, i = 99, j = 99;
    int want = brute_first_overlap(v, n, &bi, &bj);
    int got = jr__subject_first_overlap(v, n, &a, &i, &j);
    char list[256] = "";
    for (size_t k = 0; k < n && strlen(list) < 200; k++) {
        strcat(list, k ? " " : "");
        strcat(list, v[k]);
    }
    ck_assert_msg(got == want, "[%s] (fail at %ld): %d, reference %d", list, fail_at, got, want);
    if (want)
        ck_assert_msg(i == bi && j == bj, "[%s] (fail at %ld): %zu/%zu, reference %zu/%zu", list,
                      fail_at, i, j, bi, bj);
}

/* Every valid pattern of 1 to 3 tokens over {a, b, *, >}. */
static size_t small_patterns(char (*out)[8])
{
    static const char *const toks[] = {"a", "b", "*", ">"};
    size_t n = 0;
    for (int len = 1; len <= 3; len++) {
        int total = 1;
        for (int k = 0; k < len; k++) total *= 4;
        for (int code = 0; code < total; code++) {
            char buf[8] = "";
            int c = code, ok = 1;
            for (int k = 0; k < len; k++, c /= 4) {
                if (c % 4 == 3 && k != len - 1) ok = 0; /* '>' only last */
                if (k) strcat(buf, ".");
                strcat(buf, toks[c % 4]);
            }
            if (ok) strcpy(out[n++], buf);
        }
    }
    return n;
}

/* Exhaustive over every pair and every triple of small patterns, in every order: the tree gives
 * the reference's answer (which pattern, and which earlier one), and so does the pairwise
 * fallback when memory runs out at any point. */
START_TEST(first_overlap_is_the_pairwise_answer_exhaustively)
{
    static char pats[64][8];
    size_t np = small_patterns(pats);
    ck_assert_uint_eq(np, 4 + 12 + 36);
    for (size_t x = 0; x < np; x++)
        for (size_t y = 0; y < np; y++) {
            const char *v2[2] = {pats[x], pats[y]};
            check_first_overlap(v2, 2, 0);
            for (size_t z = 0; z < np; z++) {
                const char *v3[3] = {pats[x], pats[y], pats[z]};
                check_first_overlap(v3, 3, 0);
            }
        }
    for (long f = 1; f < 12; f++) {
        const char *v[4] = {pats[0], pats[5], pats[20], pats[5]};
        check_first_overlap(v, 4, f);
    }
}
END_TEST

/* Random lists of up to 40 patterns (small ones overlap often, the literal ones less), with and
 * without memory; the prefix before the first overlap is a list without one. */
START_TEST(first_overlap_is_the_pairwise_answer_on_random_lists)
{
    static char pats[64][8];
    size_t np = small_patterns(pats);
    jr__rand r;
    jr__rand_seed(&r, 4242 + (uint64_t)_i);
    for (int round = 0; round < 3000; round++) {
        const char *v[40];
        static char lit[40][16];
        size_t n = 1 + (size_t)jr__rand_below(&r, 40);
        for (size_t k = 0; k < n; k++) {
            if (jr__rand_below(&r, 3) == 0) {
                snprintf(lit[k], sizeof lit[k], "%c.%c%u", "ab*"[jr__rand_below(&r, 3)],
                         "xy"[jr__rand_below(&r, 2)], (unsigned)jr__rand_below(&r, 6));
                v[k] = lit[k];
            } else {
                v[k] = pats[jr__rand_below(&r, np)];
            }
        }
        check_first_overlap(v, n, 0);
        size_t i, j;
        if (jr__subject_first_overlap(v, n, NULL, &i, &j) == JR_EEXIST)
            ck_assert_int_eq(jr__subject_first_overlap(v, i, NULL, &i, &j), 0);
        if (round % 50 == 0) check_first_overlap(v, n, 1 + (long)jr__rand_below(&r, 30));
    }
}
END_TEST

/* 20,000 patterns without an overlap, of the shapes streams use, and the same list with one
 * overlapping pattern at the end: compared pairwise that is 2 * 10^8 comparisons (minutes). */
START_TEST(twenty_thousand_patterns_are_checked_without_pairwise_comparison)
{
    enum { N = 20000 };
    static char buf[N + 1][48];
    static const char *v[N + 1];
    for (size_t k = 0; k < N; k++) {
        switch (k % 4) {
        case 0:
            snprintf(buf[k], sizeof buf[k], "orders.%zu.>", k);
            break;
        case 1:
            snprintf(buf[k], sizeof buf[k], "tenants.t%zu.*.events", k);
            break;
        case 2:
            snprintf(buf[k], sizeof buf[k], "metrics.*.%zu", k);
            break;
        default:
            snprintf(buf[k], sizeof buf[k], "kv.bucket.%zu", k);
        }
        v[k] = buf[k];
    }
    size_t i = 0, j = 0;
    ck_assert_int_eq(jr__subject_first_overlap(v, N, NULL, &i, &j), 0);
    strcpy(buf[N], "metrics.cpu.*"); /* overlaps metrics.*.<k> for every k */
    v[N] = buf[N];
    ck_assert_int_eq(jr__subject_first_overlap(v, N + 1, NULL, &i, &j), JR_EEXIST);
    ck_assert_uint_eq(i, N);
    ck_assert_uint_eq(j, 2); /* the earliest: metrics.*.2 */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("subject_index");
    TCase *tc = tcase_create("subject_index");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, insert_lookup_remove);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, overlap_is_refused_naming_the_owner);
    tcase_add_test(tc, lookup_backtracks_from_literal_to_star);
    tcase_add_test(tc, insert_all_is_all_or_nothing);
    tcase_add_test(tc, replace_changes_subjects_or_nothing);
    tcase_add_test(tc, hundred_thousand_streams);
    tcase_add_loop_test(tc, random_against_brute_force, 0, 8);
    tcase_add_test(tc, out_of_memory_changes_nothing);
    tcase_add_test(tc, first_overlap_is_the_pairwise_answer_exhaustively);
    tcase_add_loop_test(tc, first_overlap_is_the_pairwise_answer_on_random_lists, 0, 4);
    tcase_add_test(tc, twenty_thousand_patterns_are_checked_without_pairwise_comparison);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
