/*
 * store_bench — throughput of the message store (lib/store), one JSON line per configuration.
 *
 *   store_bench [--dir DIR] [--mb N] [--recovery-mb N] [--only append|read|recovery|disk|mark]
 *
 * For payloads of 128 B, 1 KiB and 16 KiB, for the memory store and the file store with lz4 and
 * encryption each on and off:
 *   append      appends with expected seqs (file: ends with a sync that covers everything; the
 *               block-rotation syncs are included), msgs/s and MB/s of payload;
 *   read_seq    get() of every seq in order;
 *   read_rand   get() of random seqs (as many as there are messages, at most 200,000).
 * disk: the sequential write bandwidth of the same directory, measured in the same run with the
 * same vfs (1 MiB pwrites, then one fdatasync) before each payload size's file runs, so file
 * appends can be reported as a percentage of it (pct_of_disk, against the best measurement).
 * recovery: open time of a file store of --recovery-mb MiB of 1 KiB messages (the page cache is
 * warm: it measures CPU, not the device).
 *
 * mark: a marked file store (store.h "Marks", what a stream replica uses) with 1 KiB payloads
 * and max_msgs (so blocks are freed at marks), a mark (400 bytes of meta, like a stream's) every
 * K appends, against a plain sync every K appends on an unmarked store: msgs/s and syncs/s. And
 * recovery of a marked store (marks every 1,000 messages), to compare with plain recovery.
 *
 * Payloads are text-like (compressible, as JSON events are). --mb bounds the payload bytes per
 * file configuration (default 256).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_util.h"
#include "jetraft.h"
#include "store/store.h"
#include "util/rand.h"

static const uint8_t bench_key[32] = {42};
static const char *dir = "/tmp/jr_store_bench";
static uint64_t mb = 256, recovery_mb = 256;
static double disk_mbps;

static void rmrf(const char *path)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "store_bench: %s failed\n", cmd);
}

static void fill_payload(uint8_t *p, size_t n, uint64_t seed)
{
    static const char words[] =
        "{\"order\":12345,\"customer\":\"acme\",\"items\":[{\"sku\":\"X-1\","
        "\"qty\":2}],\"total\":99.95,\"currency\":\"EUR\"} ";
    size_t wl = sizeof words - 1;
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)words[(i + seed * 7) % wl];
    if (n >= 8) memcpy(p, &seed, 8);
}

static void measure_disk(void)
{
    jr_vfs *v = jr_vfs_posix();
    char path[512];
    snprintf(path, sizeof path, "%s/disk_probe", dir);
    v->mkdir(v->ctx, dir);
    jr_file *f;
    if (v->open(v->ctx, path, JR_O_CREATE | JR_O_TRUNCATE, &f)) {
        fprintf(stderr, "store_bench: cannot create %s\n", path);
        exit(1);
    }
    size_t chunk = 1 << 20;
    uint8_t *buf = malloc(chunk);
    fill_payload(buf, chunk, 1);
    uint64_t total = mb << 20;
    double t0 = bench_now_s();
    for (uint64_t off = 0; off < total; off += chunk) v->pwrite(v->ctx, f, buf, chunk, off);
    v->sync(v->ctx, f);
    double t = bench_now_s() - t0;
    v->close(v->ctx, f);
    v->remove(v->ctx, path);
    free(buf);
    double mbps = (double)total / t / 1e6;
    /* the best of the measurements so far: the device's bandwidth, not a noisy moment */
    if (mbps > disk_mbps) disk_mbps = mbps;
    printf("{\"bench\":\"store\",\"op\":\"disk_seq_write\",\"dir\":\"%s\",\"bytes\":%llu,"
           "\"secs\":%.3f,\"MB_per_s\":%.1f,\"best_MB_per_s\":%.1f}\n",
           dir, (unsigned long long)total, t, mbps, disk_mbps);
    fflush(stdout);
}

static int marked; /* open stores marked */

static jr__store *open_store(int kind, int compress, int enc, const char *name)
{
    jr__store_config cfg = {.kind = kind,
                            .name = name,
                            .vfs = jr_vfs_posix(),
                            .dir = dir,
                            .compress = compress,
                            .master_key = enc ? bench_key : NULL,
                            .marked = marked};
    jr__store *st;
    char err[256];
    int rc = jr__store_open(&cfg, &st, err, sizeof err);
    if (rc) {
        fprintf(stderr, "store_bench: open: %s (%s)\n", jr_strerror(rc), err);
        exit(1);
    }
    return st;
}

static void line(const char *op, int kind, size_t size, int compress, int enc, uint64_t n,
                 double secs, int with_disk)
{
    double mbps = (double)n * (double)size / secs / 1e6;
    printf("{\"bench\":\"store\",\"op\":\"%s\",\"store\":\"%s\",\"payload\":%zu,\"compress\":%d,"
           "\"encrypt\":%d,\"msgs\":%llu,\"secs\":%.3f,\"msgs_per_s\":%.0f,\"MB_per_s\":%.1f",
           op, kind == JR__STORE_MEMORY ? "memory" : "file", size, compress, enc,
           (unsigned long long)n, secs, (double)n / secs, mbps);
    if (with_disk && disk_mbps > 0) printf(",\"pct_of_disk\":%.1f", 100.0 * mbps / disk_mbps);
    printf("}\n");
    fflush(stdout);
}

static void run(int kind, size_t size, int compress, int enc, const char *only)
{
    uint64_t n = (mb << 20) / size;
    if (kind == JR__STORE_MEMORY) n = size <= 128 ? 3000000 : (1024ull << 20) / size;
    if (n > 3000000) n = 3000000;
    const char *name = "bench";
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    rmrf(path);
    jr__store *st = open_store(kind, compress, enc, name);
    uint8_t *payload = malloc(size);
    fill_payload(payload, size, 3);
    static const char *subjects[] = {"orders.eu.new",     "orders.us.new",    "orders.eu.paid",
                                     "orders.us.paid",    "orders.ap.new",    "orders.ap.paid",
                                     "orders.eu.shipped", "orders.us.shipped"};
    double t0 = bench_now_s();
    for (uint64_t q = 1; q <= n; q++) {
        const char *s = subjects[q & 7];
        int rc = jr__store_append(st, q, s, strlen(s), NULL, 0, payload, size, (int64_t)q, NULL);
        if (rc) {
            fprintf(stderr, "store_bench: append: %s (%s)\n", jr_strerror(rc),
                    jr__store_errmsg(st));
            exit(1);
        }
    }
    int rc = jr__store_sync(st);
    double t = bench_now_s() - t0;
    if (rc) exit(1);
    if (!only || !strcmp(only, "append"))
        line("append", kind, size, compress, enc, n, t, kind == JR__STORE_FILE);

    if (!only || !strcmp(only, "read")) {
        jr__store_msg m;
        uint64_t sum = 0;
        t0 = bench_now_s();
        for (uint64_t q = 1; q <= n; q++) {
            if (jr__store_get(st, q, &m)) exit(1);
            sum += m.data[0];
        }
        t = bench_now_s() - t0;
        line("read_seq", kind, size, compress, enc, n, t, 0);
        uint64_t nr = n < 200000 ? n : 200000;
        jr__rand r;
        jr__rand_seed(&r, 9);
        t0 = bench_now_s();
        for (uint64_t i = 0; i < nr; i++) {
            if (jr__store_get(st, 1 + jr__rand_below(&r, n), &m)) exit(1);
            sum += m.data[0];
        }
        t = bench_now_s() - t0;
        line("read_rand", kind, size, compress, enc, nr, t, 0);
        if (sum == 42) printf("\n"); /* keep the reads */
    }
    jr__store_close(st);
    free(payload);
    rmrf(path);
}

/* Appends with a mark (marked store) or a sync every k appends; 2,000 of them. */
static void marks(int with_marks, uint64_t k)
{
    const char *name = "marks";
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    rmrf(path);
    marked = with_marks;
    jr__store *st = open_store(JR__STORE_FILE, 0, 0, name);
    jr__store_limits lim = {.max_msgs = 20000, .discard = JR__DISCARD_OLD};
    if (jr__store_set_limits(st, &lim)) exit(1);
    uint8_t payload[1024], meta[400];
    fill_payload(payload, sizeof payload, 5);
    fill_payload(meta, sizeof meta, 6);
    uint64_t nsync = 2000, n = nsync * k;
    if (n > (mb << 20) / sizeof payload) n = (mb << 20) / sizeof payload;
    if (n < k) n = k;
    nsync = n / k;
    double t0 = bench_now_s();
    for (uint64_t q = 1; q <= n; q++) {
        if (jr__store_append(st, q, "orders.x", 8, NULL, 0, payload, sizeof payload, (int64_t)q,
                             NULL))
            exit(1);
        if (q % k) continue;
        int rc = with_marks ? jr__store_mark(st, q, meta, sizeof meta, 0, 0) : jr__store_sync(st);
        if (rc) {
            fprintf(stderr, "store_bench: mark/sync: %s (%s)\n", jr_strerror(rc),
                    jr__store_errmsg(st));
            exit(1);
        }
    }
    double t = bench_now_s() - t0;
    jr__store_close(st);
    marked = 0;
    printf("{\"bench\":\"store\",\"op\":\"%s\",\"store\":\"file\",\"payload\":1024,"
           "\"every\":%llu,\"msgs\":%llu,\"secs\":%.3f,\"msgs_per_s\":%.0f,"
           "\"syncs_per_s\":%.0f}\n",
           with_marks ? "append_mark_every" : "append_sync_every", (unsigned long long)k,
           (unsigned long long)n, t, (double)n / t, (double)nsync / t);
    fflush(stdout);
    rmrf(path);
}

static void recovery(int compress, int enc)
{
    const char *name = "recovery";
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    rmrf(path);
    size_t size = 1024;
    uint64_t n = (recovery_mb << 20) / size;
    jr__store *st = open_store(JR__STORE_FILE, compress, enc, name);
    uint8_t payload[1024];
    for (uint64_t q = 1; q <= n; q++) {
        fill_payload(payload, size, q);
        if (jr__store_append(st, q, "events.x", 8, NULL, 0, payload, size, (int64_t)q, NULL))
            exit(1);
        if (marked && (q % 1000 == 0 || q == n) && jr__store_mark(st, q, "m", 1, 0, 0)) exit(1);
    }
    jr__store_close(st);
    double t0 = bench_now_s();
    st = open_store(JR__STORE_FILE, compress, enc, name);
    double t = bench_now_s() - t0;
    jr__store_state s;
    jr__store_state_get(st, &s);
    jr__store_close(st);
    printf("{\"bench\":\"store\",\"op\":\"recovery\",\"store\":\"file\",\"payload\":1024,"
           "\"compress\":%d,\"encrypt\":%d,\"marked\":%d,\"msgs\":%llu,\"store_MiB\":%llu,"
           "\"secs\":%.3f,\"page_cache\":\"warm\"}\n",
           compress, enc, marked, (unsigned long long)s.msgs, (unsigned long long)recovery_mb, t);
    fflush(stdout);
    rmrf(path);
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--mb") && i + 1 < argc)
            mb = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--recovery-mb") && i + 1 < argc)
            recovery_mb = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--dir DIR] [--mb N] [--recovery-mb N] "
                    "[--only append|read|recovery|disk|mark]\n",
                    argv[0]);
            return 2;
        }
    }
    mkdir(dir, 0755);
    if (!only || !strcmp(only, "disk") || !strcmp(only, "append")) measure_disk();
    static const size_t sizes[] = {128, 1024, 16384};
    if (!only || !strcmp(only, "append") || !strcmp(only, "read")) {
        for (int i = 0; i < 3; i++) run(JR__STORE_MEMORY, sizes[i], 0, 0, only);
        for (int i = 0; i < 3; i++) {
            /* measure the disk again next to the file runs (pct_of_disk uses the best) */
            if (!only || !strcmp(only, "append")) measure_disk();
            for (int c = 0; c < 2; c++)
                for (int e = 0; e < 2; e++) run(JR__STORE_FILE, sizes[i], c, e, only);
        }
    }
    if (!only || !strcmp(only, "recovery")) {
        for (int c = 0; c < 2; c++)
            for (int e = 0; e < 2; e++) recovery(c, e);
        marked = 1;
        recovery(0, 0);
        marked = 0;
    }
    if (!only || !strcmp(only, "mark")) {
        static const uint64_t every[] = {1, 16, 256};
        for (int i = 0; i < 3; i++) {
            marks(0, every[i]);
            marks(1, every[i]);
        }
    }
    return 0;
}
