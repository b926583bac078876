/*
 * bench_util — what every benchmark program needs: clocks, process CPU time, sorting latencies,
 * comma-separated number lists on the command line, the benches' stream. Header-only (each
 * bench is one program).
 */
#ifndef JR_BENCH_UTIL_H
#define JR_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "jetraft.h"

/* Monotonic wall time. */
static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double bench_now_s(void)
{
    return (double)bench_now_ns() * 1e-9;
}

/* CPU time (user + system) of the whole process, every thread, in seconds. */
static inline double bench_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* Minor page faults of the whole process so far (memory touched for the first time). */
static inline uint64_t bench_minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_minflt;
}

static inline int bench_cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Parses "1,3,5" into out (at most max numbers): how many, or -1 if malformed. */
static inline int bench_parse_list(const char *s, long *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        out[n++] = strtol(s, &end, 10);
        if (end == s) return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* The benches' stream: BENCH on bench.>, file storage, `replicas` replicas, defaults otherwise. */
static inline void bench_stream_config(jr_stream_config *cfg, int replicas)
{
    static const char *subj[] = {"bench.>"};
    jr_stream_config_init(cfg);
    cfg->name = "BENCH";
    cfg->subjects = subj;
    cfg->nsubjects = 1;
    cfg->replicas = replicas;
}

#endif
