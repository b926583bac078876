/*
 * main.c — jetraft-chaos: the run's phases, its options, the history's common lines, and the
 * bound on its time (an alarm that kills every child and fails the run).
 *
 * jetraft-chaos --server PATH [--seed N] [--seconds S] [--nodes 3|5] [--faults LIST]
 *               [--procs P] [--history FILE] [--dir DIR] [--keep] [-v]
 *               [--mutate lost|ack-seq|definite|converge|peers|damaged-leads]
 *               [--disk-victims 1|2] [--sync-offload]
 * jetraft-chaos --plan [--seed N] [--seconds S] [--nodes 3|5] [--faults LIST] [--disk-victims 1|2]
 *               prints the seed's fault schedule and exits
 *
 * --disk-victims 2 (five servers only) gives the disk nemesis two victims a run, which may be
 * damaged at once (nemesis.c); the stream is then R5 whatever the faults. --sync-offload
 * configures every server with "sync_offload": true (its WAL's sync on libuv's threadpool).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

#include "chaos.h"

chaos C = {
    .smu = PTHREAD_MUTEX_INITIALIZER,
    .lmu = PTHREAD_MUTEX_INITIALIZER,
    .hmu = PTHREAD_MUTEX_INITIALIZER,
};

static char fault_list[200] = "all";

const char *const fault_names[NKINDS] = {"kill",  "pause",    "partition", "net",      "power",
                                         "reset", "clock",    "pausekill", "partkill", "disk",
                                         "ioerr", "rollback", "members"};

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double rel_s(uint64_t ns)
{
    return ns >= C.t0 ? (double)(ns - C.t0) / 1e9 : 0;
}

uint64_t rng_next(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15u;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

int rng_below(uint64_t *s, int n)
{
    return n > 0 ? (int)(rng_next(s) % (uint64_t)n) : 0;
}

void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%8.3f] ", rel_s(now_ns()));
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void nemesis_note(const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    uint64_t t = now_ns();
    pthread_mutex_lock(&C.hmu);
    C.nemesis_events++;
    if (C.hist) {
        fprintf(C.hist, "{\"t\":%llu,\"ev\":\"nemesis\",\"what\":", (unsigned long long)(t - C.t0));
        json_str(C.hist, what);
        fputs("}\n", C.hist);
    }
    pthread_mutex_unlock(&C.hmu);
    if (C.verbose) fprintf(stderr, "[%8.3f] nemesis: %s\n", rel_s(t), what);
}

void violation(const char *checker, const char *fmt, ...)
{
    char text[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&C.hmu);
    C.nviol++;
    if (C.nviol <= 40) fprintf(stderr, "    [%s] %s\n", checker, text);
    if (C.hist) {
        fprintf(C.hist, "{\"t\":%llu,\"ev\":\"violation\",\"checker\":\"%s\",\"text\":",
                (unsigned long long)(now_ns() - C.t0), checker);
        json_str(C.hist, text);
        fputs("}\n", C.hist);
    }
    pthread_mutex_unlock(&C.hmu);
}

static void replay_line(FILE *f)
{
    fprintf(f,
            "  replay: jetraft-chaos --server %s --seed %llu --seconds %d --nodes %d --faults %s\n",
            C.server_bin, (unsigned long long)C.seed, C.seconds, C.n, fault_list);
    if (C.disk_victims == 2) fprintf(f, "          --disk-victims 2\n");
    if (C.sync_offload) fprintf(f, "          --sync-offload\n");
}

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "jetraft-chaos: FAIL: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    kill_all_servers();
    replay_line(stderr);
    fprintf(stderr, "  server logs: %s\n", C.base);
    if (C.hist) fflush(C.hist);
    _exit(1);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "jetraft-chaos: FAIL: the run exceeded its time bound\n";
    if (write(2, msg, sizeof msg - 1) < 0) { /* nothing more to do */
    }
    kill_all_servers();
    _exit(1);
}

/* SIGTERM, SIGINT (a test runner's timeout) and a crash of the harness itself: the servers go
 * with it rather than outlive it. */
static void on_fatal(int sig)
{
    kill_all_servers();
    signal(sig, SIG_DFL);
    raise(sig);
}

static unsigned parse_faults(const char *s)
{
    if (!strcmp(s, "all")) return F_ALL;
    if (!strcmp(s, "none")) return 0;
    unsigned bits = 0;
    char buf[200];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        unsigned b = 0;
        if (!strcmp(t, "all")) b = F_ALL;
        for (int k = 0; k < NKINDS; k++)
            if (!strcmp(t, fault_names[k])) b = 1u << k;
        if (!b) {
            fprintf(stderr, "jetraft-chaos: unknown fault '%s'\n", t);
            exit(2);
        }
        bits |= b;
    }
    return bits;
}

static void usage(void)
{
    fprintf(
        stderr,
        "usage: jetraft-chaos --server PATH/jetraft-server [--seed N] [--seconds S]\n"
        "           [--nodes 3|5] [--faults all|none|kill,pause,partition,net,power,reset,clock,\n"
        "           pausekill,partkill,disk,ioerr,rollback,members]\n"
        "           [--procs P] [--history FILE] [--dir DIR] [--keep] [-v]\n"
        "           [--mutate lost|ack-seq|definite|converge|peers|damaged-leads]\n"
        "           [--disk-victims 1|2] [--sync-offload]\n"
        "  --disk-victims 2 needs --nodes 5\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *hist_path = NULL, *dir = NULL;
    int plan_only = 0;
    C.seed = 1;
    C.seconds = 30;
    C.n = 3;
    C.faults = F_ALL;
    C.nprocs = 4;
    C.disk_victims = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-v")) {
            C.verbose = 1;
        } else if (!strcmp(a, "--plan")) {
            plan_only = 1;
        } else if (!strcmp(a, "--keep")) {
            C.keep = 1;
        } else if (!strcmp(a, "--sync-offload")) {
            C.sync_offload = 1;
        } else if (!v) {
            usage();
        } else if (!strcmp(a, "--server")) {
            C.server_bin = v, i++;
        } else if (!strcmp(a, "--seed")) {
            C.seed = strtoull(v, NULL, 10), i++;
        } else if (!strcmp(a, "--seconds")) {
            C.seconds = atoi(v), i++;
        } else if (!strcmp(a, "--nodes")) {
            C.n = atoi(v), i++;
        } else if (!strcmp(a, "--procs")) {
            C.nprocs = atoi(v), i++;
        } else if (!strcmp(a, "--faults")) {
            C.faults = parse_faults(v);
            snprintf(fault_list, sizeof fault_list, "%s", v), i++;
        } else if (!strcmp(a, "--history")) {
            hist_path = v, i++;
        } else if (!strcmp(a, "--mutate")) {
            C.mutate = v, i++;
        } else if (!strcmp(a, "--disk-victims")) {
            C.disk_victims = atoi(v), i++;
        } else if (!strcmp(a, "--dir")) {
            dir = v, i++;
        } else {
            usage();
        }
    }
    if ((C.disk_victims != 1 && C.disk_victims != 2) || (C.disk_victims == 2 && C.n != 5)) usage();
    if (plan_only && (C.n == 3 || C.n == 5) && C.seconds >= 1) {
        for (int i = 0; i < C.n; i++)
            snprintf(C.names[i], sizeof C.names[i], "n%c", (char)('0' + i));
        nemesis_print_plan();
        return 0;
    }
    if (!C.server_bin || (C.n != 3 && C.n != 5) || C.seconds < 1 || C.nprocs < 1 ||
        C.nprocs > MAXPROCS)
        usage();
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    signal(SIGTERM, on_fatal);
    signal(SIGINT, on_fatal);
    signal(SIGABRT, on_fatal);
    signal(SIGSEGV, on_fatal);
    /* faulty phase + settle (60) + progress (30) + final reads and checks (90) + start (60),
     * plus the membership changes still in flight at the heal (members_join: 75 at most) */
    alarm((unsigned)C.seconds + 240 + (C.faults & F_MEMBERS ? 90 : 0));
    /* Two disk victims keep the stream at R5: two damaged replicas of three would be a
     * majority. */
    C.replicas = C.faults & F_MEMBERS && C.n == 5 && C.disk_victims == 1 ? 3 : C.n;
    C.t0 = now_ns();
    snprintf(C.base, sizeof C.base, "%s/jetraft-chaos-XXXXXX", dir ? dir : "/tmp");
    if (!mkdtemp(C.base)) die("mkdtemp %s: %s", C.base, strerror(errno));
    if (hist_path && !(C.hist = fopen(hist_path, "w"))) die("cannot write %s", hist_path);
    if (C.hist)
        fprintf(
            C.hist,
            "{\"t\":0,\"ev\":\"run\",\"seed\":%llu,\"seconds\":%d,\"nodes\":%d,\"faults\":\"%s\","
            "\"real\":true%s}\n",
            (unsigned long long)C.seed, C.seconds, C.n, fault_list,
            C.disk_victims == 2 ? ",\"disk_victims\":2" : "");
    printf("jetraft-chaos: seed %llu, %d servers, %d s of faults (%s%s), %d publishers, in %s\n",
           (unsigned long long)C.seed, C.n, C.seconds, fault_list,
           C.disk_victims == 2 ? "; two disk victims" : "", C.nprocs, C.base);

    procs_setup();
    if (proxy_start()) die("the proxy could not start");
    for (int i = 0; i < C.n; i++) server_start(i);
    if (stream_create()) die("stream %s could not be created within 60 s", STREAM);
    consumers_setup();
    watch_start();
    clients_start();
    consumers_start();
    nemesis_start();
    sleep((unsigned)C.seconds);
    nemesis_stop_and_heal();
    note("healed: links whole, every server running; waiting for health");

    /* Settle: every server reports healthy within 60 s. */
    uint64_t t_heal = now_ns();
    char why[MAXN][300];
    int healthy = 0;
    while (now_ns() - t_heal < 60000000000ull) {
        procs_reap();
        supervise();
        healthy = 1;
        for (int i = 0; i < C.n; i++)
            if (!C.removed[i]) healthy &= server_healthy(i, why[i], sizeof why[i]);
        if (healthy) break;
        usleep(250000);
    }
    if (healthy)
        note("every server healthy %.1f s after the heal", (double)(now_ns() - t_heal) / 1e9);
    else
        for (int i = 0; i < C.n; i++) {
            if (C.removed[i]) continue;
            http_save(i, "/jsz", "jsz"); /* the groups' state, beside the logs */
            if (!server_healthy(i, why[i], sizeof why[i]))
                violation("repair", "%s not healthy 60 s after the heal: %s", C.names[i], why[i]);
        }

    clients_progress(30);
    clients_stop();
    check_run();
    watch_stop();
    consumers_stop();
    procs_reap();
    kill_all_servers();
    proxy_stop();
    /* What the disk faults did, from the servers' logs: that they bit, not a checker. */
    static const char *const marks[][2] = {{"power cut (", "power cuts"},
                                           {"(was none,", "I/O-error periods"},
                                           {"the WAL failed", "steps down on a failed WAL"},
                                           {"store sync failed", "failed store syncs"},
                                           {"cannot open the WAL", "opens refused"},
                                           {"WAL damage", "WAL damage found"},
                                           {"is damaged", "damaged files rewritten"}};
    char summary[400] = "";
    for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
        int total = 0;
        for (int i = 0; i < C.n; i++) total += log_count(i, marks[k][0]);
        size_t l = strlen(summary);
        if (total && l < sizeof summary)
            snprintf(summary + l, sizeof summary - l, "%s%d %s", l ? ", " : "", total, marks[k][1]);
    }
    long long failed = 0;
    for (int i = 0; i < C.n; i++) failed += log_sum(i, "which failed ");
    if (failed) {
        size_t l = strlen(summary);
        snprintf(summary + l, sizeof summary - l, "%s%lld calls failed by them", l ? ", " : "",
                 failed);
    }
    if (summary[0]) printf("server logs: %s\n", summary);

    pthread_mutex_lock(&C.hmu);
    int nviol = C.nviol;
    pthread_mutex_unlock(&C.hmu);
    if (C.hist) fclose(C.hist);
    nats_Close();
    if (nviol) {
        printf("seed %llu: FAIL, %d violation(s)\n", (unsigned long long)C.seed, nviol);
        replay_line(stdout);
        printf("  server logs: %s\n", C.base);
        return 1;
    }
    printf("seed %llu: ok\n", (unsigned long long)C.seed);
    if (!C.keep) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", C.base);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", C.base);
    }
    return 0;
}
