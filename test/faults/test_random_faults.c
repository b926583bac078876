/*
 * Randomized disk faults on one replica (or two of five), with the rest of the cluster
 * misbehaving around it.
 *
 * Per seed (every choice comes from one PRNG seeded by the seed):
 *  - a stream F of R3 on 3 nodes or R5 on 5 nodes, every node a replica; WAL segments, store
 *    blocks and snapshot intervals of random sizes, so that a node's disk holds several of each;
 *  - a workload of publishes in chunks, each through a random running node;
 *  - one victim replica and one fault on its disk while it is crashed: the newest WAL segment's
 *    tail cut by a random amount (synced records included), every file rolled back to a copy
 *    saved earlier (jr_sim_disk_save), bits flipped or a range zeroed at a random offset of a WAL
 *    segment, a store block file or a snapshot file, or one of those files deleted; then the
 *    victim restarts;
 *  - before and after the fault, partitions and pauses of the other nodes, and crashes and
 *    restarts of them — never more at once than leave a majority of whole replicas: the victim
 *    (from its crash until it reports whole), a crashed node and a restarted one until it
 *    reports whole each count against the f = (n - 1) / 2 the group tolerates;
 *  - then everything heals, every node runs, more publishes, and fchk_final (checker.h) checks
 *    that no acknowledged publish is lost, no seq is reused, the replicas converge and every one
 *    of them reports whole again, and that the victim was never shown current or leading while
 *    reported damaged. A replica restarted from disk must report unvouched (or damaged) at once.
 *    Every sample also asks every running node's own group status: none is leader while
 *    damaged (fchk_leaders).
 *
 * Case "always" runs with JR_SYNC_ALWAYS; case "lossy" with JR_SYNC_INTERVAL (20 ms), where a
 * power loss may lose acknowledged publishes, so only convergence and the damage reports count
 * (fchk lossy). Case "two_victims" (JR_SYNC_ALWAYS) is the same on five nodes with a second
 * victim and a fault of its own (of any kind, drawn apart), as jetraft-sim's --disk-victims 2:
 * half of the seeds damage both at once (two crashed, two restarted from damaged disks, in
 * either order), the others damage the second right after the first came back or one or two
 * publish steps later, whether or not the first reports whole by then; the budget counts each
 * victim until it reports whole, so no other node is crashed while both are out. Its checks are the
 * ones above (the first victim's visibility through stream info, both victims' own reports and
 * every node's, nothing acknowledged lost, convergence, every replica whole at the end).
 *
 * JR_SEEDS=first:count picks the seeds (default 1:4); JR_TWO_VICTIM_SEEDS those of case
 * two_victims (default: JR_SEEDS'). JR_FAULT_KINDS=tail_cut,rollback,flip,
 * zero,delete restricts the fault kinds drawn, JR_FAULT_TARGETS=wal,block,snapshot,whole_wal the
 * files that flip, zero and delete hit (whole_wal: deleting a node's only WAL segment; default:
 * all). A failure prints the schedule and its replay
 * command; JR_E2E_LOG=1 prints the nodes' log lines.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"
#include "util/rand.h"

#define STREAM "F"
#define MAX_FILES 512

enum kind { K_TAIL_CUT, K_ROLLBACK, K_FLIP, K_ZERO, K_DELETE, K_NKINDS };
static const char *const kind_names[K_NKINDS] = {"tail_cut", "rollback", "flip", "zero", "delete"};
/* T_WHOLE_WAL: deleting the only WAL segment, i.e. the whole log */
enum target { T_WAL, T_BLOCK, T_SNAP, T_WHOLE_WAL, T_NTARGETS };
static const char *const target_names[T_NTARGETS] = {"wal segment", "store block", "snapshot",
                                                     "the only wal segment"};

typedef struct file_ent {
    char path[128];
    uint64_t size;
    int target;
} file_ent;

typedef struct file_list {
    file_ent f[MAX_FILES];
    size_t n;
} file_list;

typedef struct run {
    uint64_t seed;
    int lossy;
    jr__rand rnd;
    e2e c;
    fchk k;
    unsigned n, f;
    unsigned victim;
    int kind;
    int victim_out; /* from the victim's crash until it reports whole */
    /* case two_victims: a second victim on five nodes, with its own fault (victim2 -1: none) */
    int victim2;
    int kind2;
    int victim2_out;
    jr_sim_disk *copy2;
    int overlap; /* the second was damaged while the first did not report whole yet */
    char what2[512];
    int crashed[E2E_MAX]; /* other nodes this test crashed and has not restarted */
    uint64_t paused_until[E2E_MAX];
    uint64_t seg_bytes, snap_every;
    jr_sim_disk *copy;
    char what[512]; /* the fault, as applied */
    char trace[8192];
    size_t ntrace;
} run;

static run *g_run; /* for configure_more */
static unsigned g_kinds = (1u << K_NKINDS) - 1;
static const char *const target_keys[T_NTARGETS] = {"wal", "block", "snapshot", "whole_wal"};
static unsigned g_targets = (1u << T_NTARGETS) - 1;

static void note(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(run *r, const char *fmt, ...)
{
    if (r->ntrace >= sizeof r->trace - 1) return;
    int n = snprintf(r->trace + r->ntrace, sizeof r->trace - r->ntrace, "    [t=%.3fs] ",
                     (double)jr_sim_now(r->c.sim) / 1e9);
    if (n > 0) r->ntrace += (size_t)n;
    if (r->ntrace >= sizeof r->trace - 1) return;
    va_list ap;
    va_start(ap, fmt);
    n = vsnprintf(r->trace + r->ntrace, sizeof r->trace - r->ntrace, fmt, ap);
    va_end(ap);
    if (n > 0) r->ntrace += (size_t)n;
    if (r->ntrace < sizeof r->trace - 1) r->trace[r->ntrace++] = '\n';
    if (r->ntrace >= sizeof r->trace) r->ntrace = sizeof r->trace - 1;
    r->trace[r->ntrace] = 0;
}

static uint64_t below(run *r, uint64_t n)
{
    return n ? jr__rand_below(&r->rnd, n) : 0;
}

static void configure_more(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    (void)i;
    run *r = g_run;
    cfg->store_block_bytes = JR_STORE_BLOCK_MIN;
    cfg->wal_segment_bytes = r->seg_bytes;
    if (r->lossy) {
        cfg->sync_policy = JR_SYNC_INTERVAL;
        cfg->sync_interval_ms = 20;
    }
}

static int up(run *r, unsigned i)
{
    return e2e_node(&r->c, i) != NULL;
}

/* A random running node that is not paused (other than skip, unless it is the only one): a
 * paused process answers nobody, so the test neither publishes through one nor asks it. */
static unsigned pick_up(run *r, int skip)
{
    unsigned cand[E2E_MAX], m = 0;
    uint64_t now = jr_sim_now(r->c.sim);
    for (unsigned i = 0; i < r->n; i++)
        if (up(r, i) && (int)i != skip && r->paused_until[i] <= now) cand[m++] = i;
    if (!m) return (unsigned)skip;
    return cand[below(r, m)];
}

static int is_victim(const run *r, unsigned i)
{
    return i == r->victim || (int)i == r->victim2;
}

/* Replicas that do not count as whole now: each victim from its crash until it reports whole,
 * others while crashed or while their restarted group reports damaged or unvouched. */
static unsigned out_count(run *r)
{
    if (r->victim_out && up(r, r->victim) && fchk_damaged(&r->k, r->victim) == 0) {
        r->victim_out = 0;
        note(r, "n%u (victim) reports whole", r->victim);
    }
    if (r->victim2_out && up(r, (unsigned)r->victim2) &&
        fchk_damaged(&r->k, (unsigned)r->victim2) == 0) {
        r->victim2_out = 0;
        note(r, "n%d (second victim) reports whole", r->victim2);
    }
    unsigned out = (r->victim_out ? 1 : 0) + (r->victim2_out ? 1 : 0);
    for (unsigned i = 0; i < r->n; i++)
        if (!is_victim(r, i) && (r->crashed[i] || fchk_damaged(&r->k, i) != 0)) out++;
    return out;
}

static void pause(run *r, unsigned i, uint64_t ns)
{
    ck_assert_int_eq(jr_sim_pause(r->c.sim, i, ns), 0);
    uint64_t until = jr_sim_now(r->c.sim) + ns;
    if (until > r->paused_until[i]) r->paused_until[i] = until;
}

static int restart_other(run *r, unsigned i)
{
    int rc = e2e_restart(&r->c, i);
    note(r, "restart n%u: %s", i, rc ? jr_err_name(rc) : "ok");
    if (rc != 0) {
        fchk_failf(&r->k, "n%u (not the victim) does not restart: %s", i, jr_err_name(rc));
        return rc;
    }
    r->crashed[i] = 0;
    return 0;
}

/* One random disruption of the nodes other than the victim, within the budget. */
static void disrupt(run *r)
{
    uint64_t dice = below(r, 100);
    if (dice < 20) {
        unsigned others[E2E_MAX], m = 0, side[E2E_MAX];
        for (unsigned i = 0; i < r->n; i++)
            if (!is_victim(r, i)) others[m++] = i;
        size_t ns = 1 + below(r, r->f);
        for (size_t j = 0; j < ns; j++) {
            size_t p = j + below(r, m - j);
            unsigned t = others[j];
            others[j] = others[p];
            others[p] = t;
            side[j] = others[j];
        }
        jr_sim_heal(r->c.sim);
        jr_sim_partition(r->c.sim, side, ns);
        note(r, "partition n%u%s%s", side[0], ns > 1 ? " + n" : "",
             ns > 1 ? jr_sim_name(r->c.sim, side[1]) + 1 : "");
    } else if (dice < 35) {
        jr_sim_heal(r->c.sim);
        note(r, "heal");
    } else if (dice < 55) {
        unsigned i = pick_up(r, (int)r->victim);
        if (is_victim(r, i) || !up(r, i)) return;
        uint64_t ns = (200 + below(r, 5800)) * MS;
        pause(r, i, ns);
        note(r, "pause n%u for %.1f s", i, (double)ns / 1e9);
    } else if (dice < 78) {
        unsigned i = pick_up(r, (int)r->victim);
        if (is_victim(r, i) || !up(r, i)) return;
        if (out_count(r) + 1 > r->f) return;
        ck_assert_int_eq(jr_sim_crash(r->c.sim, i), 0);
        r->crashed[i] = 1;
        r->paused_until[i] = 0; /* a crash ends the pause */
        note(r, "crash n%u", i);
    } else {
        for (unsigned i = 0; i < r->n; i++)
            if (r->crashed[i] && below(r, 2) == 0) restart_other(r, i);
    }
    /* let it act on the change for a while (elections, vouching, catch-up) */
    if (below(r, 2)) jr_sim_run_for(r->c.sim, below(r, 1500) * MS);
}

/* A chunk of publishes through a random running node, watching the victim through another. */
static void publish_chunk(run *r, int watch)
{
    unsigned via = pick_up(r, -1);
    if (!up(r, via)) return;
    int wv = watch ? (int)pick_up(r, -1) : -1;
    size_t count = 50 + below(r, 350), window = 1 + below(r, 64);
    size_t got = fchk_publish_n(&r->k, via, count, window, wv, 15 * SEC);
    note(r, "publish %zu through n%u (window %zu): %zu acknowledged", count, via, window, got);
}

/* Runs until the replicas out of the budget leave room for `need` victims' crash (restarting
 * crashed nodes), up to 20 s with the partitions in place and 20 s more healed. */
static void make_room(run *r, unsigned need)
{
    for (unsigned i = 0; i < r->n && out_count(r) + need > r->f; i++)
        if (r->crashed[i]) restart_other(r, i);
    for (int t = 0; t < 400 && out_count(r) + need > r->f; t++) {
        if (t == 200) {
            jr_sim_heal(r->c.sim);
            note(r, "heal (to make room for the fault)");
        }
        jr_sim_run_for(r->c.sim, 100 * MS);
    }
    if (out_count(r) + need > r->f)
        fchk_failf(&r->k, "restarted replicas with whole disks never reported whole (40 s)");
}

/* Files ----------------------------------------------------------------------------------------*/

static int classify(const char *path)
{
    size_t len = strlen(path);
    if (!strncmp(path, "/wal/snap/", 10)) return T_SNAP;
    if (len > 9 && !strncmp(path, "/wal/", 5) && strrchr(path, '/') == path + 4 &&
        !strcmp(path + len - 4, ".wal"))
        return T_WAL;
    if (!strncmp(path, "/store/", 7) && len > 4 && !strcmp(path + len - 4, ".blk")) return T_BLOCK;
    return -1;
}

static int list_cb(void *arg, const char *path, uint64_t size)
{
    file_list *l = arg;
    int t = classify(path);
    if (t < 0 || l->n == MAX_FILES || strlen(path) >= sizeof l->f[0].path) return 0;
    snprintf(l->f[l->n].path, sizeof l->f[0].path, "%s", path);
    l->f[l->n].size = size;
    l->f[l->n].target = t;
    l->n++;
    return 0;
}

/* A random file of a random target kind that has one (of at least min_size bytes); NULL if
 * none. */
static const file_ent *pick_file(run *r, const file_list *l, uint64_t min_size)
{
    int have[T_NTARGETS] = {0}, kinds[T_NTARGETS], nk = 0;
    for (size_t j = 0; j < l->n; j++)
        if (l->f[j].size >= min_size && (g_targets & (1u << l->f[j].target)))
            have[l->f[j].target] = 1;
    for (int t = 0; t < T_NTARGETS; t++)
        if (have[t]) kinds[nk++] = t;
    if (!nk) return NULL;
    int t = kinds[below(r, (uint64_t)nk)];
    size_t m = 0;
    for (size_t j = 0; j < l->n; j++) m += l->f[j].target == t && l->f[j].size >= min_size;
    size_t pick = below(r, m);
    for (size_t j = 0; j < l->n; j++)
        if (l->f[j].target == t && l->f[j].size >= min_size && pick-- == 0) return &l->f[j];
    return NULL;
}

/* Damages crashed victim v's disk with fault *kindp (a rollback to copy); what says how (of
 * WHAT_MAX bytes). */
#define WHAT_MAX 512
static void apply_fault(run *r, unsigned v, int *kindp, jr_sim_disk *copy, char *what)
{
    static file_list l;
    memset(&l, 0, sizeof l);
    jr_sim *sim = r->c.sim;
    ck_assert_int_eq(jr_sim_files(sim, v, list_cb, &l), 0);
    const file_ent *fe = NULL;
    if (*kindp == K_DELETE) {
        size_t nwal = 0, last = 0;
        for (size_t j = 0; j < l.n; j++)
            if (l.f[j].target == T_WAL) nwal++, last = j;
        if (nwal == 1) l.f[last].target = T_WHOLE_WAL;
    }
    if (*kindp == K_FLIP || *kindp == K_ZERO || *kindp == K_DELETE) {
        fe = pick_file(r, &l, *kindp == K_DELETE ? 0 : 1);
        if (!fe) { /* no file of the allowed targets: the WAL's tail instead */
            note(r, "no %s target on n%u: a tail cut instead", kind_names[*kindp], v);
            *kindp = K_TAIL_CUT;
        }
    }
    switch (*kindp) {
    case K_TAIL_CUT: {
        for (size_t j = 0; j < l.n; j++)
            if (l.f[j].target == T_WAL) fe = &l.f[j]; /* in order: the last is the newest */
        ck_assert_ptr_nonnull(fe);
        uint64_t size = fe->size, cut;
        switch (below(r, 3)) {
        case 0:
            cut = 1 + below(r, size < 4096 ? size : 4096);
            break;
        case 1:
            cut = 1 + below(r, size / 2 + 1);
            break;
        default:
            cut = 1 + below(r, size);
            break;
        }
        if (cut > size) cut = size;
        ck_assert_int_eq(jr_sim_cut_tail(sim, v, fe->path, cut), 0);
        snprintf(what, WHAT_MAX, "tail_cut: the last %llu of %llu bytes of %s",
                 (unsigned long long)cut, (unsigned long long)size, fe->path);
        break;
    }
    case K_ROLLBACK:
        ck_assert_ptr_nonnull(copy);
        ck_assert_int_eq(jr_sim_disk_restore(sim, v, copy), 0);
        snprintf(what, WHAT_MAX, "rollback: every file back to the copy saved earlier");
        break;
    case K_FLIP: {
        uint64_t off = below(r, fe->size), len = 1 + below(r, 4096);
        unsigned nbits = 1 + (unsigned)below(r, 16);
        ck_assert_int_eq(jr_sim_flip_bits(sim, v, fe->path, off, len, nbits), 0);
        snprintf(what, WHAT_MAX, "flip: %u bits in [%llu, +%llu) of %s %s (%llu bytes)", nbits,
                 (unsigned long long)off, (unsigned long long)len, target_names[fe->target],
                 fe->path, (unsigned long long)fe->size);
        break;
    }
    case K_ZERO: {
        uint64_t off = below(r, fe->size), len = 1 + below(r, 65536);
        ck_assert_int_eq(jr_sim_zero(sim, v, fe->path, off, len), 0);
        snprintf(what, WHAT_MAX, "zero: [%llu, +%llu) of %s %s (%llu bytes)",
                 (unsigned long long)off, (unsigned long long)len, target_names[fe->target],
                 fe->path, (unsigned long long)fe->size);
        break;
    }
    default: {
        ck_assert_int_eq(jr_sim_remove_file(sim, v, fe->path), 0);
        snprintf(what, WHAT_MAX, "delete: %s %s (%llu bytes)", target_names[fe->target], fe->path,
                 (unsigned long long)fe->size);
        break;
    }
    }
    note(r, "fault on n%u: %s", v, what);
}

/* The run --------------------------------------------------------------------------------------*/

static int pick_kind(run *r)
{
    int kinds[K_NKINDS], nk = 0;
    for (int k = 0; k < K_NKINDS; k++)
        if (g_kinds & (1u << k)) kinds[nk++] = k;
    return kinds[below(r, (uint64_t)nk)];
}

/* Crashes victim v (the second one if `second`) and damages its disk with its fault. */
static void crash_victim(run *r, unsigned v, int second)
{
    ck_assert_int_eq(jr_sim_crash(r->c.sim, v), 0);
    if (second)
        r->victim2_out = 1;
    else
        r->victim_out = 1;
    r->paused_until[v] = 0;
    note(r, "crash n%u (%s)", v, second ? "second victim" : "victim");
    if (second)
        apply_fault(r, v, &r->kind2, r->copy2, r->what2);
    else
        apply_fault(r, v, &r->kind, r->copy, r->what);
}

/* Restarts victim v from its damaged disk: it must open and report damaged or unvouched at once
 * (it cannot know yet what its disk lost). 0, or -1 with a violation recorded. */
static int restart_victim(run *r, unsigned v, int second)
{
    const char *what = second ? r->what2 : r->what;
    int rc = e2e_restart(&r->c, v);
    note(r, "restart n%u (%s): %s", v, second ? "second victim" : "victim",
         rc ? jr_err_name(rc) : "ok");
    if (rc != 0) {
        fchk_failf(&r->k, "n%u does not open after the fault (%s): %s", v, what, jr_err_name(rc));
        return -1;
    }
    if (!second) fchk_restarted(&r->k);
    if (fchk_damaged(&r->k, v) == 0)
        fchk_failf(&r->k, "n%u restarted from its disk and reports whole at once (%s)", v, what);
    return 0;
}

/* The victim comes back while another node is cut off or stalled (half of the time). */
static void stall_another(run *r)
{
    if (!below(r, 2)) return;
    unsigned o = pick_up(r, (int)r->victim);
    if (is_victim(r, o) || !up(r, o)) return;
    if (below(r, 2)) {
        jr_sim_heal(r->c.sim);
        jr_sim_partition(r->c.sim, &o, 1);
        note(r, "partition n%u", o);
    } else {
        uint64_t ns = (1000 + below(r, 5000)) * MS;
        pause(r, o, ns);
        note(r, "pause n%u for %.1f s", o, (double)ns / 1e9);
    }
}

/* One seed. two: case two_victims (five nodes, a second victim with a fault of its own, damaged
 * at the same time as the first or while the first may not report whole yet). */
static void run_seed(uint64_t seed, int lossy, int two)
{
    static run rr;
    run *r = &rr;
    memset(r, 0, sizeof *r);
    g_run = r;
    r->seed = seed;
    r->lossy = lossy;
    r->victim2 = -1;
    jr__rand_seed(&r->rnd, seed * 1000003u + (unsigned)lossy + (two ? 7919u : 0u));
    r->n = two || below(r, 3) == 0 ? 5 : 3;
    r->f = (r->n - 1) / 2;
    r->victim = (unsigned)below(r, r->n);
    r->kind = pick_kind(r);
    if (two) {
        r->victim2 = (int)((r->victim + 1 + below(r, r->n - 1)) % r->n);
        r->kind2 = pick_kind(r);
    }
    static const uint64_t segs[] = {128u << 10, 512u << 10, 64u << 20};
    static const uint64_t snaps[] = {0, 200, 500, 1000};
    r->seg_bytes = segs[below(r, 3)];
    r->snap_every = snaps[below(r, 4)];
    const char *cas = two ? "two_victims" : lossy ? "lossy" : "always";

    e2e *c = &r->c;
    c->configure_more = configure_more;
    ck_assert_int_eq(e2e_new(c, r->n, seed, 2000), 0);
    note(r, "R%u, victim n%u, fault kind %s, WAL segments of %llu bytes, snapshots every %llu",
         r->n, r->victim, kind_names[r->kind], (unsigned long long)r->seg_bytes,
         (unsigned long long)r->snap_every);
    if (two) note(r, "second victim n%d, fault kind %s", r->victim2, kind_names[r->kind2]);
    ck_assert_msg(e2e_wait_meta(c, r->n, 30 * SEC) >= 0, "seed %llu: no meta leader",
                  (unsigned long long)seed);
    if (r->snap_every)
        for (unsigned i = 0; i < r->n; i++) e2e_snapshot_every(c, i, r->snap_every);
    const char *subjects[] = {"f.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, STREAM, subjects, 1, (int)r->n);
    e2e_res res;
    ck_assert_msg(e2e_add(c, 0, &cfg, &res) == 0, "seed %llu: add: %s", (unsigned long long)seed,
                  res.msg);
    ck_assert_msg(e2e_wait_stream(c, 0, STREAM, r->n - 1, 30 * SEC) >= 0,
                  "seed %llu: the stream has no leader with %u current followers",
                  (unsigned long long)seed, r->n - 1);
    fchk *k = &r->k;
    fchk_init(k, c, STREAM, "f", lossy);
    k->require_whole = 1;
    /* the tolerances and their reasons: checker.h */
    k->grace_ns = 2 * MS;
    k->unflagged_ns = 31 * MS; /* a heartbeat (30 ms in the simulator) and a round trip (1 ms) */
    k->current_samples = 2;

    /* before the fault: publishes with the others misbehaving; a rollback's copy is saved
     * before one of the chunks */
    size_t steps_a = 3 + below(r, 4), save_at = below(r, steps_a);
    for (size_t s = 0; s < steps_a; s++) {
        if (s) disrupt(r);
        if (s == save_at && r->kind == K_ROLLBACK) {
            ck_assert_int_eq(jr_sim_disk_save(c->sim, r->victim, &r->copy), 0);
            note(r, "save n%u's disk", r->victim);
        }
        if (s == save_at && two && r->kind2 == K_ROLLBACK) {
            ck_assert_int_eq(jr_sim_disk_save(c->sim, (unsigned)r->victim2, &r->copy2), 0);
            note(r, "save n%d's disk", r->victim2);
        }
        publish_chunk(r, 0);
    }

    /* the fault: on one victim, or on two at once, or on the second while the first may not
     * report whole yet (never more out at once than the group tolerates) */
    int both = two && below(r, 2);
    make_room(r, both ? 2 : 1);
    if (k->fail[0]) goto out;
    crash_victim(r, r->victim, 0);
    if (both) crash_victim(r, (unsigned)r->victim2, 1);
    fchk_fault(k, r->victim);
    if (below(r, 2)) publish_chunk(r, 0);
    stall_another(r);
    if (both && below(r, 2)) {
        if (restart_victim(r, (unsigned)r->victim2, 1) != 0) goto out;
        if (restart_victim(r, r->victim, 0) != 0) goto out;
    } else {
        if (restart_victim(r, r->victim, 0) != 0) goto out;
        if (both && restart_victim(r, (unsigned)r->victim2, 1) != 0) goto out;
    }
    fchk_watch(k, pick_up(r, (int)r->victim));
    if (two && !both) {
        size_t steps = below(r, 3); /* 0: at once after the first's restart, not whole yet */
        for (size_t s = 0; s < steps; s++) {
            disrupt(r);
            publish_chunk(r, 1);
        }
        make_room(r, 1);
        if (k->fail[0]) goto out;
        r->overlap = r->victim_out;
        note(r, "the first victim %s", r->victim_out ? "is not whole yet" : "reports whole");
        crash_victim(r, (unsigned)r->victim2, 1);
        if (below(r, 2)) publish_chunk(r, 1);
        if (restart_victim(r, (unsigned)r->victim2, 1) != 0) goto out;
        fchk_watch(k, pick_up(r, r->victim2));
    }

    /* after the fault: more publishes, the others still misbehaving within the budget */
    size_t steps_b = 2 + below(r, 4);
    for (size_t s = 0; s < steps_b; s++) {
        disrupt(r);
        publish_chunk(r, 1);
    }

    /* heal everything, let it settle */
    jr_sim_heal(c->sim);
    for (unsigned i = 0; i < r->n; i++)
        if (r->crashed[i]) restart_other(r, i);
    note(r, "heal, every node running");
    jr_sim_run_for(c->sim, 6 * SEC); /* the longest pause is over */
    publish_chunk(r, 1);
    {
        unsigned all[E2E_MAX];
        for (unsigned i = 0; i < r->n; i++) all[i] = i;
        fchk_final(k, all, r->n, pick_up(r, -1), 60 * SEC);
        if (k->fail[0]) fchk_dump(k, all, r->n);
    }

out:;
    char second[640] = "";
    if (two)
        snprintf(second, sizeof second, "; %s n%d %.512s",
                 both         ? "at once,"
                 : r->overlap ? "then, the first not whole yet,"
                              : "then",
                 r->victim2, r->what2[0] ? r->what2 : "(no fault)");
    fprintf(stderr,
            "random faults %s seed %llu: R%u, n%u %s%s; %llu acks of %zu messages, %llu public "
            "reads; damaged %s%s\n",
            cas, (unsigned long long)seed, r->n, r->victim, r->what[0] ? r->what : "(no fault)",
            second, (unsigned long long)k->acks, k->nitems, (unsigned long long)k->reads,
            k->damaged_seen ? "reported" : "never reported", k->repaired ? ", then repaired" : "");
    if (k->fail[0]) fprintf(stderr, "  schedule:\n%s", r->trace);
    ck_assert_msg(k->fail[0] == 0,
                  "%s seed %llu (%s%s%s): %s\n  replay: CK_RUN_CASE=%s %s=%llu:1 %s", cas,
                  (unsigned long long)seed, r->what, two ? "; " : "", two ? r->what2 : "", k->fail,
                  cas, two ? "JR_TWO_VICTIM_SEEDS" : "JR_SEEDS", (unsigned long long)seed,
                  "build/test/faults/test_random_faults");
    fchk_free(k);
    jr_sim_disk_free(r->copy);
    jr_sim_disk_free(r->copy2);
    e2e_free(c);
    g_run = NULL;
}

static uint64_t first_seed = 1, nseeds = 4, two_first = 1, two_count = 4;

START_TEST(always)
{
    run_seed(first_seed + (uint64_t)_i, 0, 0);
}
END_TEST

START_TEST(lossy)
{
    run_seed(first_seed + (uint64_t)_i, 1, 0);
}
END_TEST

START_TEST(two_victims)
{
    run_seed(two_first + (uint64_t)_i, 0, 1);
}
END_TEST

/* A comma-separated list of names (of n) into a bit mask; exits on an unknown one. */
static unsigned parse_names(const char *env, const char *s, const char *const *names, int n)
{
    unsigned m = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int found = 0;
        for (int k = 0; k < n; k++)
            if (!strcmp(t, names[k])) {
                m |= 1u << k;
                found = 1;
            }
        if (!found) {
            fprintf(stderr, "%s: unknown name '%s'\n", env, t);
            exit(2);
        }
    }
    if (!m) {
        fprintf(stderr, "%s names nothing\n", env);
        exit(2);
    }
    return m;
}

int main(void)
{
    e2e_seeds(&first_seed, &nseeds);
    two_first = first_seed;
    two_count = nseeds;
    const char *two = getenv("JR_TWO_VICTIM_SEEDS");
    unsigned long long tf, tc;
    if (two && sscanf(two, "%llu:%llu", &tf, &tc) == 2) {
        two_first = tf;
        two_count = tc;
    }
    const char *kinds = getenv("JR_FAULT_KINDS");
    if (kinds && *kinds) g_kinds = parse_names("JR_FAULT_KINDS", kinds, kind_names, K_NKINDS);
    const char *targets = getenv("JR_FAULT_TARGETS");
    if (targets && *targets)
        g_targets = parse_names("JR_FAULT_TARGETS", targets, target_keys, T_NTARGETS);
    Suite *su = suite_create("random_faults");
    TCase *ta = tcase_create("always");
    tcase_set_timeout(ta, 3600);
    tcase_add_loop_test(ta, always, 0, (int)nseeds);
    suite_add_tcase(su, ta);
    TCase *tl = tcase_create("lossy");
    tcase_set_timeout(tl, 3600);
    tcase_add_loop_test(tl, lossy, 0, (int)nseeds);
    suite_add_tcase(su, tl);
    TCase *tt = tcase_create("two_victims");
    tcase_set_timeout(tt, 3600);
    tcase_add_loop_test(tt, two_victims, 0, (int)two_count);
    suite_add_tcase(su, tt);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
