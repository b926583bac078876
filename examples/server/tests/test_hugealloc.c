/*
 * test_hugealloc.c — jetraft-server's allocator (hugealloc.c): a block of HUGEALLOC_MIN bytes or
 * more is aligned to a huge page and advised MADV_HUGEPAGE over every huge page it spans; a
 * smaller one is plain malloc; a block grown by realloc past the bound is advised over the huge
 * pages that fall whole inside it; and where the kernel grants transparent huge pages, touching
 * a fresh 16 MiB block costs a small fraction of the page faults its 4 KiB pages would.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hugealloc.h"

/* 1 if the kernel offers transparent huge pages to a region advised MADV_HUGEPAGE. */
static int thp_offered(void)
{
    char line[256] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return 0;
    if (!fgets(line, sizeof line, f)) line[0] = 0;
    fclose(f);
    return strstr(line, "[always]") || strstr(line, "[madvise]");
}

/* AnonHugePages of this process, in KiB (0 if unknown). */
static long anon_huge_kb(void)
{
    char line[256];
    long kb = 0;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) break;
    fclose(f);
    return kb;
}

static long minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

START_TEST(range_covers_whole_huge_pages_inside)
{
    uintptr_t s;
    size_t len;
    const size_t H = HUGEALLOC_PAGE;
    hugealloc_range((void *)(4 * H), 3 * H, &s, &len);
    ck_assert_uint_eq(s, 4 * H);
    ck_assert_uint_eq(len, 3 * H);
    hugealloc_range((void *)(4 * H + 16), 3 * H, &s, &len); /* the first and last are partial */
    ck_assert_uint_eq(s, 5 * H);
    ck_assert_uint_eq(len, 2 * H);
    hugealloc_range((void *)(4 * H + 16), H, &s, &len); /* no whole huge page */
    ck_assert_uint_eq(len, 0);
}
END_TEST

START_TEST(large_blocks_aligned_and_advised_small_ones_not)
{
    const jr_allocator *a = hugealloc_get(1);
    hugealloc_stats st0, st1;
    hugealloc_stats_get(&st0);
    void *small = a->malloc(a->ctx, HUGEALLOC_MIN - 1);
    ck_assert_ptr_nonnull(small);
    hugealloc_stats_get(&st1);
    ck_assert_uint_eq(st1.advised, st0.advised);

    size_t n = 8 * HUGEALLOC_PAGE + 100;
    uint8_t *big = a->malloc(a->ctx, n);
    ck_assert_ptr_nonnull(big);
    ck_assert_uint_eq((uintptr_t)big % HUGEALLOC_PAGE, 0);
    memset(big, 0xa5, n);
    hugealloc_stats_get(&st1);
    if (thp_offered()) {
        ck_assert_uint_eq(st1.advised, st0.advised + 1);
        ck_assert_uint_eq(st1.advised_bytes, st0.advised_bytes + 9 * HUGEALLOC_PAGE);
    }

    /* grown past the bound by realloc: advised over what falls whole inside, contents kept */
    hugealloc_stats_get(&st0);
    memset(small, 0x5a, HUGEALLOC_MIN - 1);
    uint8_t *grown = a->realloc(a->ctx, small, 4 * HUGEALLOC_MIN);
    ck_assert_ptr_nonnull(grown);
    ck_assert_uint_eq(grown[0], 0x5a);
    ck_assert_uint_eq(grown[HUGEALLOC_MIN - 2], 0x5a);
    hugealloc_stats_get(&st1);
    if (thp_offered()) ck_assert_uint_eq(st1.advised, st0.advised + 1);
    a->free(a->ctx, grown);
    a->free(a->ctx, big);

    /* off: the malloc family as it is, nothing advised */
    const jr_allocator *p = hugealloc_get(0);
    hugealloc_stats_get(&st0);
    void *q = p->malloc(p->ctx, 2 * HUGEALLOC_MIN);
    ck_assert_ptr_nonnull(q);
    p->free(p->ctx, q);
    hugealloc_stats_get(&st1);
    ck_assert_uint_eq(st1.advised, st0.advised);
}
END_TEST

/* The point of the advice: first touch of a fresh large block in 2 MiB faults. Counted when the
 * kernel granted the block huge pages (it may not, short of free contiguous memory). */
START_TEST(fresh_large_block_faults_in_huge_pages)
{
    if (!thp_offered()) {
        fprintf(stderr, "test_hugealloc: transparent huge pages not offered here; skipped\n");
        return;
    }
    const jr_allocator *a = hugealloc_get(1);
    size_t n = 16u << 20, small_pages = n / 4096;
    long huge0 = anon_huge_kb(), f0 = minflt();
    uint8_t *b = a->malloc(a->ctx, n);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < n; i += 4096) b[i] = 1;
    long faults = minflt() - f0, huge = anon_huge_kb() - huge0;
    a->free(a->ctx, b);
    if (huge < (long)(HUGEALLOC_PAGE >> 10)) {
        fprintf(stderr, "test_hugealloc: the kernel granted no huge page (%ld kB); skipped\n",
                huge);
        return;
    }
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer's shadow memory (a byte per 8 written) faults in on its own pages: the
     * process's count is no longer the block's; the kernel's huge pages above still are */
    fprintf(stderr, "test_hugealloc: %ld kB of huge pages granted; faults not counted (ASan)\n",
            huge);
    (void)faults;
    (void)small_pages;
    return;
#endif
    /* 16 MiB is 4,096 pages of 4 KiB; in huge pages, 8 faults (and a few for the rest) */
    ck_assert_msg(faults < (long)small_pages / 8, "%ld faults for %zu pages", faults, small_pages);
}
END_TEST

/* A large block grown by realloc keeps its pages: moved, not copied into fresh ones (no page
 * faults for its contents), wherever the larger block lands; shrunk below the bound, it is a
 * malloc block with the first bytes kept. */
START_TEST(large_block_grows_without_copying)
{
#if defined(__SANITIZE_ADDRESS__)
    fprintf(stderr, "test_hugealloc: large blocks are the C library's under ASan; skipped\n");
    return;
#endif
    const jr_allocator *a = hugealloc_get(1);
    size_t n = 8u << 20;
    uint8_t *b = a->malloc(a->ctx, n);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < n; i += 512) b[i] = (uint8_t)(i >> 9);
    /* something right after it, so that growing in place is not always possible */
    uint8_t *next = a->malloc(a->ctx, HUGEALLOC_MIN);
    ck_assert_ptr_nonnull(next);
    next[0] = 1;
    for (int round = 0; round < 2; round++) {
        hugealloc_stats st0, st1;
        hugealloc_stats_get(&st0);
        long f0 = minflt();
        uint8_t *g = a->realloc(a->ctx, b, (4u << round) * n); /* 32, then 64 MiB */
        long faults = minflt() - f0;
        ck_assert_ptr_nonnull(g);
        ck_assert_uint_eq((uintptr_t)g % HUGEALLOC_PAGE, 0);
        hugealloc_stats_get(&st1);
        ck_assert_uint_eq(st1.remapped, st0.remapped + 1);
        ck_assert_uint_eq(st1.remapped_bytes, st0.remapped_bytes + (round ? 4 * n : n));
        ck_assert_msg(faults <= 1, "%ld page faults growing the block", faults);
        for (size_t i = 0; i < n; i += 512) ck_assert_uint_eq(g[i], (uint8_t)(i >> 9));
        if (round == 0) {
            g[4 * n - 1] = 7;                       /* the new part is writable */
            b = a->realloc(a->ctx, g, 4 * n - 100); /* the same huge pages: in place */
            ck_assert_ptr_eq(b, g);
            ck_assert_uint_eq(b[4 * n - 101], 0);
        } else {
            b = g;
        }
    }
    uint8_t *s = a->realloc(a->ctx, b, 1000); /* below the bound: a malloc block */
    ck_assert_ptr_nonnull(s);
    for (size_t i = 0; i < 1000; i += 512) ck_assert_uint_eq(s[i], (uint8_t)(i >> 9));
    a->free(a->ctx, s);
    a->free(a->ctx, next);
}
END_TEST

int main(int argc, char **argv)
{
    /* meson's MALLOC_PERTURB_ has malloc fill each block, touching its pages before the advice */
    mallopt(M_PERTURB, 0);
    Suite *s = suite_create("hugealloc");
    TCase *tc = tcase_create("core");
    /* first: the C library has not yet raised its mmap threshold past the block (it does when
     * a large mapped block is freed), so the block is fresh memory */
    tcase_add_test(tc, fresh_large_block_faults_in_huge_pages);
    tcase_add_test(tc, range_covers_whole_huge_pages_inside);
    tcase_add_test(tc, large_blocks_aligned_and_advised_small_ones_not);
    tcase_add_test(tc, large_block_grows_without_copying);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
