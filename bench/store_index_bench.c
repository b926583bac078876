/*
 * store_index_bench — memory and per-operation cost of the message store's indexes (lib/store),
 * one JSON line per measurement.
 *
 *   store_index_bench [--sizes 1000,100000,4000000] [--per-subject K]
 *
 * For each size N:
 *   kv      a key-value shaped store (max_msgs_per_subject = K, default 2): one message of
 *           "kv.cold", then N updates of "kv.hot" (each removes the key's oldest once it holds K):
 *           heap bytes after them (and after sync and jr__store_trim), ns per update; then
 *           "kv.cold" again and the removal of that newest message (remove_newest_ns: with K >= 2
 *           its predecessor in the subject is N seqs back; with K = 1 the append removed the
 *           first "kv.cold", so the removal empties the subject), and get_last of a literal
 *           subject (get_last_ns: "kv.hot" and "kv.cold" in turn, only "kv.hot" when K = 1, as
 *           "kv.cold" is empty then). Memory store (64 KiB and the default 1 MiB blocks) and file
 *           store (the simulated vfs, default blocks).
 *   append  N appends of 32-byte payloads over 16 subjects to a memory store: ns per append and
 *           heap bytes;
 *   get     random get() of live seqs: ns per get;
 *   remove  deletes of random live seqs (interior deletes): ns per delete, and heap after.
 * Heap bytes are counted by a counting jr_allocator (what the store asked for). Times are the
 * thread's CPU time (the machine may be shared: wall time would count other processes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "jetraft.h"
#include "store/store.h"
#include "util/rand.h"
#include "vfs/memfs.h"

#include <time.h>

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

static void die(const char *what, int rc, jr__store *s)
{
    fprintf(stderr, "store_index_bench: %s: %s (%s)\n", what, jr_strerror(rc),
            s ? jr__store_errmsg(s) : "");
    exit(1);
}

static jr__store *open_store(int kind, uint64_t block_bytes, const jr_allocator *a, jr_vfs *vfs,
                             uint64_t per_subject)
{
    jr__store_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = kind;
    cfg.name = "BENCH";
    cfg.vfs = vfs;
    cfg.dir = "/store";
    cfg.alloc = a;
    cfg.block_bytes = block_bytes;
    cfg.limits.max_msgs_per_subject = per_subject;
    jr__store *s;
    char err[256];
    int rc = jr__store_open(&cfg, &s, err, sizeof err);
    if (rc) die("open", rc, NULL);
    return s;
}

static void bench_kv(uint64_t n, int kind, uint64_t block_bytes, uint64_t per_subject)
{
    counter c = {0};
    jr_allocator a = {JR_ALLOCATOR_VERSION, &c, c_malloc, c_realloc, c_free};
    jr_vfs *vfs = NULL;
    if (kind == JR__STORE_FILE) {
        if (jr__memfs_new(NULL, 1, &vfs) || vfs->mkdir(vfs->ctx, "/store")) {
            fprintf(stderr, "store_index_bench: memfs\n");
            exit(1);
        }
    }
    jr__store *s = open_store(kind, block_bytes, &a, vfs, per_subject);
    uint64_t seq = 1;
    int rc = jr__store_append(s, seq, "kv.cold", 7, NULL, 0, "cold", 4, 1, NULL);
    if (rc) die("append", rc, s);
    uint8_t v[32];
    memset(v, 'v', sizeof v);
    uint64_t t0 = cpu_ns();
    for (uint64_t k = 0; k < n; k++) {
        seq++;
        memcpy(v, &k, sizeof k);
        rc = jr__store_append(s, seq, "kv.hot", 6, NULL, 0, v, sizeof v, (int64_t)seq, NULL);
        if (rc) die("append", rc, s);
    }
    uint64_t t1 = cpu_ns();
    int64_t heap = c.live;
    if ((rc = jr__store_sync(s))) die("sync", rc, s);
    jr__store_trim(s);
    int64_t trimmed = c.live;
    /* the cold key's newest message, its predecessor n seqs back */
    seq++;
    if ((rc = jr__store_append(s, seq, "kv.cold", 7, NULL, 0, "cold", 4, (int64_t)seq, NULL)))
        die("append", rc, s);
    uint64_t t2 = cpu_ns();
    if ((rc = jr__store_delete(s, seq, 0))) die("delete", rc, s);
    uint64_t t3 = cpu_ns();
    jr__store_msg m;
    enum { GETS = 1000 };
    uint64_t t4 = cpu_ns();
    for (int k = 0; k < GETS; k++) {
        int hot = per_subject < 2 || (k & 1);
        if ((rc = jr__store_get_last(s, hot ? "kv.hot" : "kv.cold", hot ? 6 : 7, &m)))
            die("get_last", rc, s);
    }
    uint64_t t5 = cpu_ns();
    jr__store_close(s);
    if (vfs) jr__memfs_free(vfs);
    printf("{\"bench\":\"store_index\",\"op\":\"kv\",\"store\":\"%s\",\"block_bytes\":%llu,"
           "\"per_subject\":%llu,\"updates\":%llu,\"heap_bytes\":%lld,\"heap_after_trim\":%lld,"
           "\"ns_per_update\":%.1f,"
           "\"remove_newest_ns\":%llu,\"get_last_ns\":%.1f}\n",
           kind == JR__STORE_FILE ? "file" : "memory", (unsigned long long)block_bytes,
           (unsigned long long)per_subject, (unsigned long long)n, (long long)heap,
           (long long)trimmed, (double)(t1 - t0) / (double)n, (unsigned long long)(t3 - t2),
           (double)(t5 - t4) / GETS);
    fflush(stdout);
}

static void bench_ops(uint64_t n)
{
    counter c = {0};
    jr_allocator a = {JR_ALLOCATOR_VERSION, &c, c_malloc, c_realloc, c_free};
    jr__store *s = open_store(JR__STORE_MEMORY, 0, &a, NULL, 0);
    static const char *const subj[16] = {"ev.0", "ev.1", "ev.2", "ev.3", "ev.4", "ev.5",
                                         "ev.6", "ev.7", "ev.8", "ev.9", "ev.a", "ev.b",
                                         "ev.c", "ev.d", "ev.e", "ev.f"};
    uint8_t v[32];
    memset(v, 'p', sizeof v);
    uint64_t t0 = cpu_ns();
    for (uint64_t q = 1; q <= n; q++) {
        int rc = jr__store_append(s, q, subj[q & 15], 4, NULL, 0, v, sizeof v, (int64_t)q, NULL);
        if (rc) die("append", rc, s);
    }
    uint64_t t1 = cpu_ns();
    printf("{\"bench\":\"store_index\",\"op\":\"append\",\"store\":\"memory\",\"msgs\":%llu,"
           "\"ns_per_op\":%.1f,\"heap_bytes\":%lld}\n",
           (unsigned long long)n, (double)(t1 - t0) / (double)n, (long long)c.live);
    jr__rand r;
    jr__rand_seed(&r, 7);
    uint64_t gets = n < 200000 ? n : 200000, sum = 0;
    jr__store_msg m;
    t0 = cpu_ns();
    for (uint64_t k = 0; k < gets; k++) {
        int rc = jr__store_get(s, 1 + jr__rand_below(&r, n), &m);
        if (rc) die("get", rc, s);
        sum += m.data_len;
    }
    t1 = cpu_ns();
    printf("{\"bench\":\"store_index\",\"op\":\"get\",\"store\":\"memory\",\"msgs\":%llu,"
           "\"ns_per_op\":%.1f}\n",
           (unsigned long long)n, (double)(t1 - t0) / (double)gets);
    uint64_t dels = n / 2 < 100000 ? n / 2 : 100000, done = 0;
    t0 = cpu_ns();
    while (done < dels) {
        int rc = jr__store_delete(s, 1 + jr__rand_below(&r, n), 0);
        if (rc == JR_ENOTFOUND) continue;
        if (rc) die("delete", rc, s);
        done++;
    }
    t1 = cpu_ns();
    printf("{\"bench\":\"store_index\",\"op\":\"remove\",\"store\":\"memory\",\"msgs\":%llu,"
           "\"removed\":%llu,\"ns_per_op\":%.1f,\"heap_bytes\":%lld}\n",
           (unsigned long long)n, (unsigned long long)dels, (double)(t1 - t0) / (double)dels,
           (long long)c.live);
    fflush(stdout);
    if (sum == 42) printf("\n"); /* keep the reads */
    jr__store_close(s);
}

int main(int argc, char **argv)
{
    long sizes[8] = {1000, 100000, 4000000};
    int nsizes = 3;
    long per_subject = 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            nsizes = bench_parse_list(argv[++i], sizes, 8);
            if (nsizes <= 0) nsizes = -1;
        } else if (strcmp(argv[i], "--per-subject") == 0 && i + 1 < argc) {
            per_subject = atol(argv[++i]);
            if (per_subject < 1) nsizes = -1;
        } else {
            nsizes = -1;
        }
        if (nsizes < 0) {
            fprintf(stderr,
                    "usage: store_index_bench [--sizes 1000,100000,4000000] [--per-subject K]\n");
            return 2;
        }
    }
    for (int i = 0; i < nsizes; i++) {
        uint64_t n = (uint64_t)sizes[i];
        bench_kv(n, JR__STORE_MEMORY, 64 * 1024, (uint64_t)per_subject);
        bench_kv(n, JR__STORE_MEMORY, 0, (uint64_t)per_subject);
        bench_kv(n, JR__STORE_FILE, 0, (uint64_t)per_subject);
        bench_ops(n);
    }
    return 0;
}
