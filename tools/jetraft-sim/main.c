/*
 * jetraft-sim — the whole-system simulator: a cluster with streams and consumers under a random
 * fault schedule, driven by simulated clients, checked from the clients' side.
 *
 *   jetraft-sim --seed N --seconds S [--nodes 3|5] [--faults LIST] [--history FILE]
 *               [--seeds A:COUNT] [--waive CHECKERS] [--mutate KIND] [--disk-victims 1|2]
 *               [--big] [--sync-offload] [--leaderless-fail] [-v|-vv] [-q]
 *
 * One run per seed, every choice drawn from the seed, so a seed replays exactly:
 *  1. setup: the nodes, one or two data streams (R3, or R5 on five nodes) and their first
 *     consumers;
 *  2. the faulty phase (S simulated seconds): publishers, fetch loops and the admin process
 *     run while the fault scheduler damages the cluster;
 *  3. heal and settle: every fault ends; within 60 s every node must report healthy
 *     (jr_node_health: current with the meta leader, every local replica led, with a quorum,
 *     undamaged and vouched for);
 *  4. progress: every publisher gets three more publishes acknowledged within 30 s;
 *  5. final reads, the drain of every consumer, and the checkers.
 * A failing seed prints its violations, the replay command and the minimized history, and the
 * program exits 1. JSIM_SEEDS=A:COUNT in the environment overrides --seeds (for the soak run);
 * JSIM_TRACE_GROUP=<group id> prints every entry that group applies on every node. --waive
 * reports a checker's violations without failing the run; --mutate runs a checker self-test
 * (mutate.c). --disk-victims 2 (with --nodes 5) lets the disk nemesis damage two nodes at once
 * (faults.c), every data stream then R5. --big publishes payloads of up to 24 KiB and sets every
 * catch-up and retention bound of jr_node_config to its minimum (1 MiB), so that joiners cap
 * their logs, leaders keep only 1 MiB behind a snapshot and catch-up is paced within a run.
 * --sync-offload has every node's host run the WAL's sync (jr_host.sync_start), completing each
 * job 1-2 ms of simulated time later, while the node goes on; a vote or an append
 * acknowledgement that leaves before the sync it vouches for completed fails the run
 * (checker 'durable', jr_sim_stats.durable_early).
 * --leaderless-fail sets every node's jr_node_config.leaderless_fail_ms to its election timeout,
 * as jetraft-server does: requests for a group leaderless that long end at once, as at their
 * deadline (the checkers hold their verdicts to the same rules).
 * --faults takes a comma-separated list of partition, net, crash, power, pause, clock, disk,
 * ioerr, or "all" (the default) or "none". docs/testing.md describes the checkers and the
 * history format.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jsim.h"

typedef struct opts {
    uint64_t seed, count;
    uint64_t seconds;
    unsigned nodes; /* 0: 3 or 5, drawn from the seed */
    unsigned faults;
    const char *faults_arg;
    const char *history;
    const char *waive;
    const char *mutate;
    int verbose, quiet;
    int disk_victims;    /* --disk-victims: 0 (one at a time) or 2 (five nodes) */
    int big;             /* --big */
    int sync_offload;    /* --sync-offload */
    int leaderless_fail; /* --leaderless-fail */
} opts;

static uint64_t g_waived_seeds; /* seeds whose every violation was waived */

static void usage(void)
{
    fprintf(
        stderr,
        "usage: jetraft-sim --seed N --seconds S [--nodes 3|5] [--faults LIST]\n"
        "                   [--history FILE] [--seeds A:COUNT] [--waive CHECKERS] [-v|-vv] [-q]\n"
        "                   [--disk-victims 1|2] [--big] [--sync-offload]\n"
        "                   [--leaderless-fail]\n"
        "  LIST: all, none, or a comma-separated list of");
    for (int k = 0; k < F_NKINDS; k++) fprintf(stderr, " %s", fault_names[k]);
    fprintf(stderr, "\n");
    exit(2);
}

static unsigned parse_faults(const char *s)
{
    if (!strcmp(s, "all")) return (1u << F_NKINDS) - 1;
    if (!strcmp(s, "none")) return 0;
    unsigned m = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int found = 0;
        for (int k = 0; k < F_NKINDS; k++)
            if (!strcmp(t, fault_names[k])) m |= 1u << k, found = 1;
        if (!found) {
            fprintf(stderr, "jetraft-sim: unknown fault '%s'\n", t);
            usage();
        }
    }
    return m;
}

static int parse_range(const char *s, uint64_t *a, uint64_t *n)
{
    unsigned long long x, y;
    if (!s || sscanf(s, "%llu:%llu", &x, &y) != 2) return -1;
    *a = x;
    *n = y;
    return 0;
}

static void parse(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->count = 1;
    o->seconds = 5;
    o->faults = (1u << F_NKINDS) - 1;
    o->faults_arg = "all";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--seed") && v) {
            o->seed = strtoull(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--seconds") && v) {
            o->seconds = strtoull(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--nodes") && v) {
            o->nodes = (unsigned)atoi(v);
            if (o->nodes != 3 && o->nodes != 5) usage();
            i++;
        } else if (!strcmp(a, "--faults") && v) {
            o->faults = parse_faults(v);
            o->faults_arg = v;
            i++;
        } else if (!strcmp(a, "--disk-victims") && v) {
            o->disk_victims = atoi(v);
            if (o->disk_victims != 1 && o->disk_victims != 2) usage();
            if (o->disk_victims == 1) o->disk_victims = 0;
            i++;
        } else if (!strcmp(a, "--mutate") && v) {
            int ok = 0;
            for (int k = 0; mutate_names[k]; k++) ok |= !strcmp(v, mutate_names[k]);
            if (!ok) usage();
            o->mutate = v;
            i++;
        } else if (!strcmp(a, "--waive") && v) {
            o->waive = v;
            i++;
        } else if (!strcmp(a, "--history") && v) {
            o->history = v;
            i++;
        } else if (!strcmp(a, "--seeds") && v) {
            if (parse_range(v, &o->seed, &o->count) != 0) usage();
            i++;
        } else if (!strcmp(a, "--big")) {
            o->big = 1;
        } else if (!strcmp(a, "--sync-offload")) {
            o->sync_offload = 1;
        } else if (!strcmp(a, "--leaderless-fail")) {
            o->leaderless_fail = 1;
        } else if (!strcmp(a, "-v")) {
            o->verbose = 1;
        } else if (!strcmp(a, "-vv")) {
            o->verbose = 2;
        } else if (!strcmp(a, "-q")) {
            o->quiet = 1;
        } else {
            usage();
        }
    }
    const char *env = getenv("JSIM_SEEDS");
    if (env && *env && parse_range(env, &o->seed, &o->count) != 0) {
        fprintf(stderr, "jetraft-sim: JSIM_SEEDS must be A:COUNT\n");
        exit(2);
    }
    if (o->seconds == 0 || o->seconds > 3600) usage();
    if (o->disk_victims == 2 && o->nodes != 5) {
        fprintf(stderr, "jetraft-sim: --disk-victims 2 needs --nodes 5\n");
        exit(2);
    }
}

static void replay_cmd(const opts *o, const world *w, FILE *out)
{
    fprintf(out, "jetraft-sim --seed %llu --seconds %llu --nodes %u --faults %s%s%s",
            (unsigned long long)w->seed, (unsigned long long)o->seconds, w->n, o->faults_arg,
            o->waive ? " --waive " : "", o->waive ? o->waive : "");
    if (o->disk_victims) fprintf(out, " --disk-victims %d", o->disk_victims);
    if (o->big) fprintf(out, " --big");
    if (o->sync_offload) fprintf(out, " --sync-offload");
    if (o->leaderless_fail) fprintf(out, " --leaderless-fail");
}

/* The run of one seed: 0 if every checker passed, 1 otherwise. */
static int run_seed(const opts *o, uint64_t seed, FILE *hist)
{
    world *w = calloc(1, sizeof *w);
    if (!w) exit(3);
    g_w = w;
    w->seed = seed;
    w->seconds = o->seconds;
    w->faults = o->faults;
    w->hist = hist;
    w->verbose = o->verbose;
    w->waive = o->waive;
    w->disk_victims = o->disk_victims ? o->disk_victims : 1;
    w->big = o->big;
    w->sync_offload = o->sync_offload;
    w->leaderless_fail = o->leaderless_fail;
    w->r.s = seed * 0x9e3779b97f4a7c15ull + 17;
    /* drawn even when --nodes says: the replay command names the count, and must not shift
     * the rest of the run's draws */
    w->n = rng_pct(&w->r, 40) ? 5 : 3;
    if (o->nodes) w->n = o->nodes;
    w->nds = 1 + (unsigned)rng_below(&w->r, MAX_DS);
    w->nprocs = 2 + (unsigned)rng_below(&w->r, 4);
    w->nfetchers = 2 + (unsigned)rng_below(&w->r, 2);
    int rc = cluster_new(w);
    if (rc != 0) {
        fprintf(stderr, "seed %llu: the cluster does not open: %s\n", (unsigned long long)seed,
                jr_err_name(rc));
        exit(3);
    }
    if (hist)
        fprintf(hist,
                "{\"t\":0,\"ev\":\"run\",\"seed\":%llu,\"seconds\":%llu,\"nodes\":%u,"
                "\"faults\":\"%s\"}\n",
                (unsigned long long)seed, (unsigned long long)o->seconds, w->n, o->faults_arg);
    clients_init(w);
    faults_init(w);

    if (admin_setup(w) == 0) {
        /* the faulty phase */
        w->phase = 1;
        uint64_t end = now_ns(w) + o->seconds * SEC;
        faults_init(w);
        while (now_ns(w) < end) {
            faults_step(w);
            admin_step(w);
            clients_step(w);
            jr_sim_run_for(w->sim, 2 * MS);
        }
        /* heal and settle */
        w->phase = 2;
        faults_heal(w);
        char why[256] = "";
        uint64_t settle_end = now_ns(w) + 60 * SEC;
        int healthy = 0;
        int rescued = 0;
        while (!(healthy = cluster_healthy(w, why, sizeof why)) && now_ns(w) < settle_end) {
            /* The operator's way out for groups that still wait for a removed server (a
             * replica restarted from disk waits for every member's answer, and a removed
             * server answers nothing). A committed removal declares it gone by itself on every
             * server that applied it; this covers a replica that restarted before it learned
             * the removal was committed: declare it gone (jr_node_rescue, unsafe by name) on
             * every server, once the cluster had 10 s to settle by itself. The checkers then
             * tell whether that lost anything. */
            if (!rescued && now_ns(w) + 50 * SEC >= settle_end) {
                rescued = 1;
                for (unsigned x = 0; x < w->n; x++) {
                    if (!w->removed[x]) continue;
                    for (unsigned i = 0; i < w->n; i++) {
                        if (w->removed[i] || !node_up(w, i)) continue;
                        int r2 = jr_node_rescue(jr_sim_node(w->sim, i), jr_sim_name(w->sim, x));
                        nem_note(w, "operator: rescue on n%u, n%u declared gone: %s", i, x,
                                 r2 ? jr_err_name(r2) : "ok");
                    }
                }
            }
            for (unsigned i = 0; i < w->n; i++)
                if (!node_up(w, i)) {
                    int r2 = jr_sim_restart(w->sim, i);
                    nem_note(w, "restart n%u (settle): %s", i, r2 ? jr_err_name(r2) : "ok");
                }
            jr_sim_run_for(w->sim, 250 * MS);
        }
        if (!healthy) {
            violation(w, "repair", "", -1, 0, -1,
                      "the cluster is not healthy 60 s after the heal (%s)", why);
            if (!o->quiet || o->count == 1) dump_unwell(w, stdout);
        } else
            nem_note(w, "settled: every node healthy");
        w->phase = 3;
        /* progress: a leader takes publishes again */
        if (clients_post_publish(w, 3, 30 * SEC) != 0)
            violation(w, "liveness", w->ds[0].name, -1, 0, -1,
                      "publishers did not get 3 acknowledgements each within 30 s of settling");
        if (streams_final_read(w) == 0) {
            check_stream_list(w);
            clients_drain(w, 60 * SEC);
            /* the drain woke every consumer group: a replica still unwell now stays so */
            if (!healthy && !cluster_healthy(w, why, sizeof why))
                violation(w, "repair", "", -1, 0, -1, "still not healthy after the drain (%s)",
                          why);
            else if (!healthy)
                nem_note(w, "healthy after the drain");
            if (o->mutate && mutate(w, o->mutate) != 0)
                fprintf(stderr, "seed %llu: nothing to mutate (%s)\n", (unsigned long long)seed,
                        o->mutate);
            check_streams(w);
            check_consumers(w);
        }
    }
    jr_sim_stats st = {.size = sizeof st};
    if (jr_sim_stats_get(w->sim, &st) == 0 && st.durable_early)
        violation(w, "durable", "", -1, 0, -1,
                  "%llu vote(s) or acknowledgement(s) left before the sync they vouch for",
                  (unsigned long long)st.durable_early);

    size_t acked = 0;
    for (size_t v = 0; v < w->nvals; v++) acked += w->vals[v].ok != 0;
    int failed = w->nviol_total > w->nwaived;
    if (!o->quiet || failed)
        printf("seed %llu: %s n=%u streams=%u procs=%u consumers=%u ops=%zu acked=%zu "
               "deliveries=%zu faults: crash %u power %u disk %u ioerr %u pause %u clock %u "
               "partition %u; %s\n",
               (unsigned long long)seed, failed ? "FAIL" : "ok", w->n, w->nds, w->nprocs, w->ncons,
               w->nops, acked, w->ndels, w->crashes, w->power_losses, w->disk_faults, w->ioerrs,
               w->pauses, w->clock_jumps, w->partitions,
               w->lost_summary[0] ? w->lost_summary : "no final reads");
    if (w->nviol_total && (failed || !o->quiet)) {
        printf("  %u violation(s)%s:\n", w->nviol_total, failed ? "" : ", all waived");
        for (unsigned i = 0; i < w->nviol && i < 12; i++)
            printf("    [%s%s] %s%s%s\n", w->viol[i].checker, w->viol[i].waived ? ", waived" : "",
                   w->viol[i].stream, w->viol[i].stream[0] ? ": " : "", w->viol[i].text);
    }
    if (failed) {
        printf("  replay: ");
        replay_cmd(o, w, stdout);
        printf("\n");
        history_minimized(w, stdout);
    }
    if (!failed && w->nviol_total) g_waived_seeds++;
    fflush(stdout);
    cluster_free(w);
    for (unsigned k = 0; k < MAX_DS; k++) free(w->ds[k].at);
    applied_free(w);
    history_free(w);
    g_w = NULL;
    free(w);
    return failed;
}

int main(int argc, char **argv)
{
    opts o;
    parse(argc, argv, &o);
    FILE *hist = NULL;
    if (o.history) {
        hist = fopen(o.history, "w");
        if (!hist) {
            perror(o.history);
            return 2;
        }
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t failed = 0;
    for (uint64_t s = o.seed; s < o.seed + o.count; s++) failed += (uint64_t)run_seed(&o, s, hist);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (o.count > 1 || !o.quiet)
        printf("jetraft-sim: %llu seed(s) from %llu, %llu failed, %.1f s\n",
               (unsigned long long)o.count, (unsigned long long)o.seed, (unsigned long long)failed,
               secs);
    if (hist) fclose(hist);
    return failed ? 1 : 0;
}
