/*
 * wal_bench — the shared WAL on the real disk (jr_vfs_posix), one JSON line per configuration.
 *
 *   wal_bench [--dir PATH] [--seconds S] [--recover-mib N] [--seq-mib N] [--key]
 *             [--prealloc-kib N]
 *
 *   --dir          parent directory of the temporary work directory (default $TMPDIR or /tmp)
 *   --seconds      time spent on each group-commit configuration (default 1.0)
 *   --recover-mib  size of the WAL whose recovery is timed (default 256; 1024 for the 1 GiB
 *                  figure)
 *   --seq-mib      bytes written for the sequential bandwidth reference (default 256)
 *   --key          encrypt the WAL at rest (a fixed 32-byte node key): entries are written
 *                  sealed and opened at recovery; lines carry "key":1
 *   --prealloc-kib the WAL's zero-filled lead (jr__wal_config.prealloc_bytes; default 1024, as
 *                  a node on the POSIX vfs has; 0: every flush grows the segment)
 *
 * In the same run it measures, for reference, the disk's own fdatasync latency (4 KiB append +
 * fdatasync, as a WAL flush does) and its sequential write bandwidth (1 MiB writes, one
 * fdatasync at the end). Then WAL group commit under JR_SYNC_ALWAYS: records/s and MB/s of
 * payload for 1, 8, 64, 512, 4096 records per flush and 128 B / 1 KiB payloads, spread over 16
 * groups, with CPU time per record (getrusage user+sys) next to wall time per record, so a
 * disk-bound configuration (cpu << wall) is told from a CPU-bound one (cpu ~ wall). Finally
 * the time jr__wal_open takes to recover (verify every record and replay) a WAL of
 * --recover-mib, first with its files evicted from the page cache (posix_fadvise DONTNEED:
 * "cold"), then again from the cache ("warm"). Every open also writes and syncs a new segment,
 * which is included in the time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "jetraft.h"
#include "log/segment.h"
#include "log/wal.h"

/* --prealloc-kib, in bytes */
static uint64_t bench_prealloc = (uint64_t)1 << 20;

/* --key: the node key every WAL of the run is opened with (NULL: plaintext). */
static const uint8_t *bench_key;

static void die(const char *what, int rc)
{
    fprintf(stderr, "wal_bench: %s: %s\n", what, jr_strerror(rc));
    exit(1);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int rm_cb(void *arg, const char *name)
{
    const char *dir = arg;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    jr_vfs_posix()->remove(NULL, p);
    return 0;
}

static void clear_dir(const char *dir)
{
    jr_vfs *v = jr_vfs_posix();
    v->list(v->ctx, dir, rm_cb, (void *)dir);
}

/* --- disk reference ------------------------------------------------------------------------*/
static void disk_fsync(const char *dir, double seconds)
{
    jr_vfs *v = jr_vfs_posix();
    char path[4200];
    snprintf(path, sizeof path, "%s/fsync.probe", dir);
    jr_file *f;
    int rc = v->open(v->ctx, path, JR_O_CREATE | JR_O_TRUNCATE, &f);
    if (rc) die("open", rc);
    static uint8_t buf[4096];
    memset(buf, 0xab, sizeof buf);
    size_t cap = 1 << 16, n = 0;
    double *lat = malloc(cap * sizeof *lat);
    double t0 = bench_now_s();
    uint64_t off = 0;
    while (n < cap && (bench_now_s() - t0 < seconds || n < 20)) {
        double a = bench_now_s();
        if ((rc = v->pwrite(v->ctx, f, buf, sizeof buf, off))) die("pwrite", rc);
        if ((rc = v->sync(v->ctx, f))) die("fdatasync", rc);
        lat[n++] = bench_now_s() - a;
        off += sizeof buf;
    }
    double total = bench_now_s() - t0;
    qsort(lat, n, sizeof *lat, cmp_d);
    printf("{\"bench\":\"disk_fdatasync\",\"write_bytes\":4096,\"n\":%zu,\"mean_us\":%.1f,"
           "\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,\"syncs_per_s\":%.0f}\n",
           n, total / (double)n * 1e6, lat[n / 2] * 1e6, lat[n * 99 / 100] * 1e6, lat[n - 1] * 1e6,
           (double)n / total);
    free(lat);
    v->close(v->ctx, f);
    v->remove(v->ctx, path);
}

static double disk_seq(const char *dir, uint64_t mib)
{
    jr_vfs *v = jr_vfs_posix();
    char path[4200];
    snprintf(path, sizeof path, "%s/seq.probe", dir);
    jr_file *f;
    int rc = v->open(v->ctx, path, JR_O_CREATE | JR_O_TRUNCATE, &f);
    if (rc) die("open", rc);
    size_t chunk = 1 << 20;
    uint8_t *buf = malloc(chunk);
    for (size_t i = 0; i < chunk; i++) buf[i] = (uint8_t)(i * 7);
    double t0 = bench_now_s();
    for (uint64_t i = 0; i < mib; i++)
        if ((rc = v->pwrite(v->ctx, f, buf, chunk, i * chunk))) die("pwrite", rc);
    if ((rc = v->sync(v->ctx, f))) die("fdatasync", rc);
    double t = bench_now_s() - t0;
    double mbps = (double)mib * 1.048576 / t;
    printf("{\"bench\":\"disk_seq_write\",\"bytes\":%llu,\"chunk\":%zu,\"seconds\":%.3f,"
           "\"MBps\":%.1f}\n",
           (unsigned long long)(mib << 20), chunk, t, mbps);
    free(buf);
    v->close(v->ctx, f);
    v->remove(v->ctx, path);
    return mbps;
}

/* --- WAL -----------------------------------------------------------------------------------*/
typedef struct counter {
    uint64_t entries, bytes, groups;
} counter;

static int c_entry(void *ctx, uint64_t g, const jr__entry *e)
{
    counter *c = ctx;
    (void)g;
    c->entries++;
    c->bytes += e->len;
    return 0;
}

static int c_hs(void *ctx, uint64_t g, const jr__hardstate *hs)
{
    (void)g;
    (void)hs;
    ((counter *)ctx)->groups++;
    return 0;
}

static int c_other(void *ctx, uint64_t g, uint64_t a, uint64_t b)
{
    (void)ctx;
    (void)g;
    (void)a;
    (void)b;
    return 0;
}

static int c_drop(void *ctx, uint64_t g)
{
    (void)ctx;
    (void)g;
    return 0;
}

static int c_damaged(void *ctx, uint64_t g, const char *why)
{
    (void)ctx;
    fprintf(stderr, "wal_bench: group %llu damaged: %s\n", (unsigned long long)g, why);
    return 0;
}

static jr__wal *wal_open(const char *dir, int policy, counter *c, double *secs)
{
    jr__wal_replay rp = {c, c_entry, c_hs, c_other, c_drop, c_damaged, NULL};
    jr__wal_config cfg = {jr_vfs_posix(), dir, NULL, 0, policy, 0, bench_key, bench_prealloc};
    jr__wal *w;
    double t0 = bench_now_s();
    int rc = jr__wal_open(&cfg, &rp, &w);
    if (secs) *secs = bench_now_s() - t0;
    if (rc) die("jr__wal_open", rc);
    return w;
}

#define NGROUPS 16

static void group_commit(const char *dir, size_t batch, size_t payload, double seconds)
{
    clear_dir(dir);
    counter c = {0, 0, 0};
    jr__wal *w = wal_open(dir, JR_SYNC_ALWAYS, &c, NULL);
    uint8_t *data = malloc(payload);
    memset(data, 0x5a, payload);
    uint64_t next[NGROUPS] = {0};
    uint64_t records = 0, flushes = 0;
    jr__wal_stats s0, s1;
    jr__wal_stats_get(w, &s0);
    double c0 = bench_cpu_s(), t0 = bench_now_s(), t;
    do {
        for (size_t i = 0; i < batch; i++) {
            uint64_t g = (records + i) % NGROUPS;
            jr__entry e = {1, ++next[g], 0, (uint32_t)payload, data};
            int rc = jr__wal_append(w, g + 1, &e);
            if (rc) die("append", rc);
        }
        int durable;
        int rc = jr__wal_flush(w, 0, &durable);
        if (rc) die(jr__wal_errmsg(w), rc);
        records += batch;
        flushes++;
        t = bench_now_s() - t0;
    } while (t < seconds || flushes < 3);
    double cpu = bench_cpu_s() - c0;
    jr__wal_stats_get(w, &s1);
    printf("{\"bench\":\"wal_group_commit\",\"sync\":\"always\",\"batch\":%zu,\"payload\":%zu,"
           "\"groups\":%d,\"flushes\":%llu,\"records\":%llu,\"seconds\":%.3f,"
           "\"records_per_s\":%.0f,\"MBps_payload\":%.2f,\"MBps_written\":%.2f,"
           "\"flush_us\":%.1f,\"wall_us_per_record\":%.3f,\"cpu_us_per_record\":%.3f,"
           "\"cpu_share\":%.3f,\"syncs\":%llu,\"key\":%d,\"prealloc\":%llu}\n",
           batch, payload, NGROUPS, (unsigned long long)flushes, (unsigned long long)records, t,
           (double)records / t, (double)records * (double)payload / t / 1e6,
           (double)(s1.bytes_written - s0.bytes_written) / t / 1e6, t / (double)flushes * 1e6,
           t / (double)records * 1e6, cpu / (double)records * 1e6, cpu / t,
           (unsigned long long)(s1.syncs - s0.syncs), bench_key != NULL,
           (unsigned long long)bench_prealloc);
    free(data);
    jr__wal_close(w);
}

/* Evicts the WAL's files from the page cache (the benchmark's only direct file access; the
 * library itself only goes through jr_vfs). Needs no privileges, unlike drop_caches. */
static int evict_cb(void *arg, const char *name)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", (const char *)arg, name);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
    return 0;
}

static void recovery(const char *dir, uint64_t mib, size_t payload)
{
    clear_dir(dir);
    counter c = {0, 0, 0};
    jr__wal *w = wal_open(dir, JR_SYNC_ALWAYS, &c, NULL);
    size_t batch = 4096;
    uint8_t *data = malloc(payload);
    memset(data, 0x33, payload);
    uint64_t next[NGROUPS] = {0}, written = 0, appended = 0, target = mib << 20;
    double t0 = bench_now_s();
    while (written < target) {
        for (size_t i = 0; i < batch; i++) {
            uint64_t g = (appended + i) % NGROUPS;
            jr__entry e = {1, ++next[g], 0, (uint32_t)payload, data};
            if (jr__wal_append(w, g + 1, &e)) die("append", JR_ENOMEM);
        }
        appended += batch;
        for (uint64_t g = 0; g < NGROUPS; g++) {
            jr__hardstate hs = {1, 1, next[g]};
            jr__wal_hardstate(w, g + 1, &hs);
        }
        written += jr__wal_pending(w);
        int durable, rc = jr__wal_flush(w, 0, &durable);
        if (rc) die(jr__wal_errmsg(w), rc);
    }
    double build = bench_now_s() - t0;
    jr__wal_stats ws;
    jr__wal_stats_get(w, &ws);
    jr__wal_close(w);
    for (int cold = 1; cold >= 0; cold--) {
        if (cold) jr_vfs_posix()->list(NULL, dir, evict_cb, (void *)dir);
        memset(&c, 0, sizeof c);
        double secs, c0 = bench_cpu_s();
        w = wal_open(dir, JR_SYNC_ALWAYS, &c, &secs);
        double cpu = bench_cpu_s() - c0;
        if (c.entries != appended) die("recovery replayed a different number of entries", JR_EIO);
        printf("{\"bench\":\"wal_recovery\",\"cache\":\"%s\",\"wal_bytes\":%llu,"
               "\"segments\":%llu,\"entries\":%llu,\"payload\":%zu,\"groups\":%d,"
               "\"build_seconds\":%.2f,\"seconds\":%.3f,\"cpu_seconds\":%.3f,\"MBps\":%.0f,"
               "\"key\":%d}\n",
               cold ? "cold" : "warm", (unsigned long long)written, (unsigned long long)ws.segments,
               (unsigned long long)c.entries, payload, NGROUPS, build, secs, cpu,
               (double)written / secs / 1e6, bench_key != NULL);
        fflush(stdout);
        jr__wal_close(w);
    }
    free(data);
}

int main(int argc, char **argv)
{
    const char *parent = getenv("TMPDIR");
    double seconds = 1.0;
    uint64_t rec_mib = 256, seq_mib = 256;
    if (!parent || !*parent) parent = "/tmp";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            parent = argv[++i];
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--recover-mib") && i + 1 < argc)
            rec_mib = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--prealloc-kib") && i + 1 < argc)
            bench_prealloc = strtoull(argv[++i], NULL, 0) << 10;
        else if (!strcmp(argv[i], "--seq-mib") && i + 1 < argc)
            seq_mib = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--key")) {
            static const uint8_t key[32] = "wal_bench: a fixed 32-byte key.";
            bench_key = key;
        } else {
            fprintf(stderr, "usage: wal_bench [--dir PATH] [--seconds S] [--recover-mib N] "
                            "[--seq-mib N] [--key]\n");
            return 2;
        }
    }
    char dir[4000];
    if ((size_t)snprintf(dir, sizeof dir, "%s/wal_bench.XXXXXX", parent) >= sizeof dir) return 2;
    if (!mkdtemp(dir)) {
        fprintf(stderr, "wal_bench: mkdtemp in %s: %s\n", parent, strerror(errno));
        return 1;
    }
    printf("{\"bench\":\"wal_env\",\"dir\":\"%s\"}\n", dir);
    fflush(stdout);
    disk_fsync(dir, seconds);
    disk_seq(dir, seq_mib);
    fflush(stdout);
    static const size_t batches[] = {1, 8, 64, 512, 4096};
    static const size_t payloads[] = {128, 1024};
    for (size_t p = 0; p < 2; p++)
        for (size_t b = 0; b < 5; b++) {
            group_commit(dir, batches[b], payloads[p], seconds);
            fflush(stdout);
        }
    recovery(dir, rec_mib, 1024);
    recovery(dir, rec_mib, 128);
    clear_dir(dir);
    rmdir(dir);
    return 0;
}
