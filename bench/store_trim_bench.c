/*
 * store_trim_bench — what jr__store_trim buys and costs for an idle file store (a stream replica
 * trims its store about a second after its last message, so a stream that gets a message every
 * few seconds pays the append after a trim on every message).
 *
 *   store_trim_bench [--dir DIR] [--rounds N] [--payload BYTES]
 *
 * For each configuration (plain / encrypted) x (4 KiB, 64 KiB, 1 MiB of records in the active
 * block at the trims; default 8 MiB blocks, so nothing rotates), N times (default 50) on a fresh
 * store: fills the active block with messages of --payload bytes (default 128) and syncs; appends
 * one message (timed: untrimmed) and syncs; trims; appends one (timed: after trim) and syncs;
 * trims; reads one random message of the trimmed part (timed). One JSON line per configuration:
 *   heap_before_trim, heap_after_trim  live heap bytes of the store (counting allocator), synced
 *                                      and idle, before and after trim (first round)
 *   append_after_trim_us_p50/p99       one append just after a trim (the sync is not timed)
 *   append_untrimmed_us_p50            the same append without a trim before it, for reference
 *   read_trimmed_us_p50/p99            jr__store_get of a random message before the window (the
 *                                      file's descriptor is opened again: trim closed it)
 * On the posix vfs under DIR (default /tmp/jr_store_trim_bench), so reads are page-cache reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "jetraft.h"
#include "store/store.h"
#include "util/rand.h"

static const uint8_t bench_key[32] = {7, 7, 7};
static const char *dir = "/tmp/jr_store_trim_bench";
static int rounds = 50;
static size_t payload = 128;

/* A counting allocator: live bytes (each block carries its size in front). */
static int64_t live;

static void *c_malloc(void *ctx, size_t n)
{
    (void)ctx;
    uint8_t *p = malloc(n + 16);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    live += (int64_t)n;
    return p + 16;
}

static void *c_realloc(void *ctx, void *q, size_t n)
{
    (void)ctx;
    size_t old = 0;
    uint8_t *b = q ? (uint8_t *)q - 16 : NULL;
    if (b) memcpy(&old, b, sizeof old);
    uint8_t *p = realloc(b, n + 16);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    live += (int64_t)n - (int64_t)old;
    return p + 16;
}

static void c_free(void *ctx, void *q)
{
    (void)ctx;
    if (!q) return;
    uint8_t *b = (uint8_t *)q - 16;
    size_t n;
    memcpy(&n, b, sizeof n);
    live -= (int64_t)n;
    free(b);
}

static const jr_allocator counting = {JR_ALLOCATOR_VERSION, NULL, c_malloc, c_realloc, c_free};

static void die(const char *what, int rc, jr__store *st)
{
    fprintf(stderr, "store_trim_bench: %s: %s (%s)\n", what, jr_strerror(rc),
            st ? jr__store_errmsg(st) : "");
    exit(1);
}

static void rmrf(const char *path)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "store_trim_bench: %s failed\n", cmd);
}

static uint64_t pct(uint64_t *v, int n, int p)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_u64);
    return v[(size_t)((int64_t)(n - 1) * p / 100)];
}

static void append(jr__store *st, uint64_t q, const uint8_t *data)
{
    int rc = jr__store_append(st, q, "orders.eu.new", 13, NULL, 0, data, payload, (int64_t)q, NULL);
    if (rc) die("append", rc, st);
}

/* A fresh store with fill bytes of records in its active block, synced. */
static jr__store *filled(int enc, size_t fill, const uint8_t *data, uint64_t *q)
{
    char path[512];
    snprintf(path, sizeof path, "%s/trim", dir);
    rmrf(path);
    jr__store_config cfg = {.kind = JR__STORE_FILE,
                            .name = "trim",
                            .vfs = jr_vfs_posix(),
                            .dir = dir,
                            .alloc = &counting,
                            .master_key = enc ? bench_key : NULL};
    jr__store *st;
    char err[256];
    int rc = jr__store_open(&cfg, &st, err, sizeof err);
    if (rc) {
        fprintf(stderr, "store_trim_bench: open: %s (%s)\n", jr_strerror(rc), err);
        exit(1);
    }
    size_t rec = payload + 13 + 36;
    /* two records of room: the store holds at most fill bytes at the trims */
    uint64_t n = fill / rec > 2 ? fill / rec - 2 : 1;
    for (*q = 1; *q <= n; (*q)++) append(st, *q, data);
    if ((rc = jr__store_sync(st))) die("sync", rc, st);
    return st;
}

static void run(int enc, size_t fill)
{
    uint8_t *data = malloc(payload);
    memset(data, 'p', payload);
    uint64_t *ta = malloc((size_t)rounds * sizeof *ta), *tu = malloc((size_t)rounds * sizeof *tu);
    uint64_t *tr = malloc((size_t)rounds * sizeof *tr);
    int64_t before = 0, after = 0;
    uint64_t n = 0;
    jr__rand r;
    jr__rand_seed(&r, 1);
    for (int i = 0; i < rounds; i++) {
        int64_t base = live;
        uint64_t q;
        jr__store *st = filled(enc, fill, data, &q);
        n = q - 1;
        int rc;
        /* the reference: an append to the untrimmed store */
        uint64_t t0 = bench_now_ns();
        append(st, q++, data);
        tu[i] = bench_now_ns() - t0;
        if ((rc = jr__store_sync(st))) die("sync", rc, st);
        if (!i) before = live - base;
        jr__store_trim(st);
        if (!i) after = live - base;
        t0 = bench_now_ns();
        append(st, q++, data);
        ta[i] = bench_now_ns() - t0;
        if ((rc = jr__store_sync(st))) die("sync", rc, st);
        jr__store_trim(st);
        uint64_t s = 1 + jr__rand_below(&r, n);
        jr__store_msg m;
        t0 = bench_now_ns();
        rc = jr__store_get(st, s, &m);
        tr[i] = bench_now_ns() - t0;
        if (rc || m.data_len != payload) die("get", rc ? rc : JR_ECORRUPT, st);
        if ((rc = jr__store_close(st))) die("close", rc, NULL);
    }
    printf("{\"bench\":\"store_trim\",\"encrypt\":%d,\"active_bytes\":%zu,\"payload\":%zu,"
           "\"msgs\":%llu,\"rounds\":%d,\"heap_before_trim\":%lld,\"heap_after_trim\":%lld,"
           "\"append_after_trim_us_p50\":%.1f,\"append_after_trim_us_p99\":%.1f,"
           "\"append_untrimmed_us_p50\":%.1f,\"read_trimmed_us_p50\":%.1f,"
           "\"read_trimmed_us_p99\":%.1f}\n",
           enc, fill, payload, (unsigned long long)n, rounds, (long long)before, (long long)after,
           (double)pct(ta, rounds, 50) / 1e3, (double)pct(ta, rounds, 99) / 1e3,
           (double)pct(tu, rounds, 50) / 1e3, (double)pct(tr, rounds, 50) / 1e3,
           (double)pct(tr, rounds, 99) / 1e3);
    fflush(stdout);
    free(ta);
    free(tu);
    free(tr);
    free(data);
    char path[512];
    snprintf(path, sizeof path, "%s/trim", dir);
    rmrf(path);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--payload") && i + 1 < argc) {
            payload = (size_t)atol(argv[++i]);
        } else {
            fprintf(stderr, "usage: store_trim_bench [--dir DIR] [--rounds N] [--payload BYTES]\n");
            return 2;
        }
    }
    if (rounds < 1 || payload < 1 || payload > (1u << 20)) {
        fprintf(stderr, "store_trim_bench: bad --rounds or --payload\n");
        return 2;
    }
    jr_vfs *v = jr_vfs_posix();
    v->mkdir(v->ctx, dir);
    static const size_t fills[] = {4 << 10, 64 << 10, 1 << 20};
    for (int enc = 0; enc < 2; enc++)
        for (size_t i = 0; i < sizeof fills / sizeof fills[0]; i++) run(enc, fills[i]);
    return 0;
}
