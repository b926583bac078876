/*
 * nemesis.c — the fault schedule, drawn from the seed before the run starts, and its thread.
 *
 * The schedule is a list of faults at times from the start of the faulty phase (2 s of quiet
 * first, then one every 0.4-2.5 s), each with its targets, parameters and duration; the
 * thread applies each at its time and undoes it when its duration ends (restart, SIGCONT,
 * links whole again). The same seed gives the same schedule on any machine; the real
 * processes' timing around it differs from run to run (this is not a simulation).
 *
 * The kinds (docs/testing.md, "Faults (the nemesis)", has the full table):
 *
 * kill: SIGKILL one server (70%), a minority (20%) or a majority (10%); restarted 0.3-3 s later.
 *
 * power: a power cut (SIGUSR1: unsynced writes lost, maybe one torn; examples/server/powervfs.c)
 * of one server (60%) or of every server at once (40%); restarted 0.3-2 s later.
 *
 * pause: SIGSTOP one server or a minority for 0.3-4 s, then SIGCONT.
 *
 * partition: isolate one server, split a minority from the majority, cut 1-3 directed links
 * (one-way), or a bridge (one server hears both halves, which do not hear each other), 1-5 s.
 *
 * net: delay (1-60 ms, jitter up to as much again) and drop (0-15%) every frame on every link or
 * on one server's links, for 1-5 s. reset: close every peer connection of one server.
 *
 * clock: one server's wall clock moved ±0.5-10 s for 1-5 s. pausekill, partkill: Jepsen's
 * pause-kill and part-kill (plan_combo).
 *
 * ioerr: I/O errors from the vfs of one server (70%), a minority (20%) or every server (10%)
 * for 0.5-3 s: every change fails with EIO, writes that grow a file fail with ENOSPC, or only
 * the syncs fail; when it ends the running targets restart through a power cut (what the
 * failed syncs covered is lost) or a kill -9, or are left to the supervisor (supervise).
 *
 * disk, rollback: the run's one disk victim is stopped and one of its files damaged, or its
 * data directory copied aside (the first time, and 30% after) or put back to the copy (70%);
 * restarted 0.3-2 s later. 35% of rollbacks are a timed sequence (plan_rollback_combo).
 * With --disk-victims 2 (five servers) the run has two disk victims: each disk fault damages
 * one of them (40% each) or both at once (20%), each rollback is of one of them (its own copy),
 * so the second may be damaged while the first is not healthy again, and no third server is
 * ever damaged or rolled back; the stream is then R5 and `members` only evacuates (a peer or
 * server removal would leave a group of three or four of which two damaged replicas are too
 * many), as jetraft-sim's --disk-victims 2 does.
 *
 * members (members.c): a peer of the stream removed (45%), a server evacuated and its drain
 * cancelled 0.5-3 s or 8-15 s later (40%, or 55% when no server removal can be drawn), or, on
 * five servers and once a run, a server stopped and removed from the cluster for good (15%).
 */
#include <ftw.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chaos.h"

typedef struct nev {
    uint64_t at_ms;
    int kind; /* one F_* bit, or 0 for an end */
    unsigned targets;
    int dur_ms;
    int variant;
    int drop, delay, jitter;
    long long clock_ms;
    unsigned cut[MAXN]; /* partition: cut[a] has bit b: a -> b cut */
    unsigned id;
    int is_end;
    int restart; /* ioerr: 0 a power cut when it ends, 1 a kill -9, 2 left to the supervisor */
} nev;

static nev *evs;
static size_t nevs, capevs;
static pthread_t thread;
static volatile int stopping;

static nev *add_ev(void)
{
    if (nevs == capevs) {
        capevs = capevs ? 2 * capevs : 64;
        evs = realloc(evs, capevs * sizeof *evs);
        if (!evs) die("out of memory");
    }
    memset(&evs[nevs], 0, sizeof *evs);
    return &evs[nevs++];
}

static unsigned random_subset(uint64_t *r, int size)
{
    unsigned m = 0;
    while (__builtin_popcount(m) < size) m |= 1u << rng_below(r, C.n);
    return m;
}

static int pick_kind(uint64_t *r)
{
    int kinds[16], nk = 0;
    for (int b = 0; b < NKINDS; b++)
        if (C.faults & (1u << b)) kinds[nk++] = 1 << b;
    return nk ? kinds[rng_below(r, nk)] : 0;
}

/* Cuts every link between side and the rest, both ways. */
static void cut_side(nev *e, unsigned side)
{
    for (int a = 0; a < C.n; a++)
        for (int b = 0; b < C.n; b++)
            if (!!(side & (1u << a)) != !!(side & (1u << b))) e->cut[a] |= 1u << b;
    e->targets = side;
    e->variant = 1;
}

/* Jepsen's pause-kill (part-kill with partitions): a minority M is paused (cut off) while the
 * others go on; a power cut of another server k; then the rest R are paused (cut off) as M
 * comes back, and k restarts: M and k, which may both lack the latest acknowledged writes, are
 * a majority for a while; then everything resumes. Three events: M for a, k's power cut just
 * before a (restart 0.3 s later), R from a for b. Returns the time it ends. */
static uint64_t plan_combo(uint64_t *r, uint64_t t, int kind, unsigned *id)
{
    int minority = (C.n - 1) / 2;
    unsigned m = random_subset(r, minority);
    int k;
    do k = rng_below(r, C.n);
    while (m & (1u << k));
    unsigned rest = ((1u << C.n) - 1) & ~m & ~(1u << k);
    int a = 2000 + rng_below(r, 3000), b = 2000 + rng_below(r, 4000);
    int prim = kind == F_PAUSEKILL ? F_PAUSE : F_PARTITION;
    nev *e = add_ev();
    *e = (nev){.at_ms = t, .kind = prim, .targets = m, .dur_ms = a, .id = ++*id};
    if (prim == F_PARTITION) cut_side(e, m);
    e = add_ev();
    *e = (nev){.at_ms = t + (uint64_t)a - 100,
               .kind = F_POWER,
               .targets = 1u << k,
               .dur_ms = 300,
               .id = ++*id};
    e = add_ev();
    *e = (nev){.at_ms = t + (uint64_t)a, .kind = prim, .targets = rest, .dur_ms = b, .id = ++*id};
    if (prim == F_PARTITION) cut_side(e, rest);
    return t + (uint64_t)a + (uint64_t)b;
}

static int disk_victim, disk_victim2 = -1; /* the second: --disk-victims 2 only */

/* The victim of one disk fault or rollback (--disk-victims 2: either of the two). */
static int pick_victim(uint64_t *r)
{
    return disk_victim2 >= 0 && rng_below(r, 2) ? disk_victim2 : disk_victim;
}

/* A rollback timed so that a vote taken as whole would lose acknowledged writes: the victim v's
 * directory is copied (v stopped 0.3 s); a minority B without v is cut off for 3-5 s while the
 * others (A and v, a majority) acknowledge writes B lacks; just before B comes back v is
 * stopped and put back to the copy, which lacks them too; as B comes back A is killed for 3 s.
 * B and v are then a majority that holds none of those writes: only if v does not vote as
 * whole before A answers (docs/internals.md, "Disk faults and restarted replicas") are they
 * kept. Returns the time it ends. */
static uint64_t plan_rollback_combo(uint64_t *r, uint64_t t, unsigned *id)
{
    int minority = (C.n - 1) / 2, v = pick_victim(r);
    unsigned b = 0;
    while (__builtin_popcount(b) < minority) {
        int k = rng_below(r, C.n);
        if (k != v) b |= 1u << k;
    }
    unsigned a = ((1u << C.n) - 1) & ~b & ~(1u << v);
    int d = 3000 + rng_below(r, 2000);
    nev *e = add_ev();
    *e = (nev){.at_ms = t,
               .kind = F_ROLLBACK,
               .targets = 1u << v,
               .variant = 0,
               .dur_ms = 300,
               .id = ++*id};
    e = add_ev();
    *e = (nev){.at_ms = t + 500, .kind = F_PARTITION, .dur_ms = d, .id = ++*id};
    cut_side(e, b);
    e = add_ev();
    *e = (nev){.at_ms = t + 500 + (uint64_t)d - 300,
               .kind = F_ROLLBACK,
               .targets = 1u << v,
               .variant = 1,
               .dur_ms = 500,
               .id = ++*id};
    e = add_ev();
    *e = (nev){
        .at_ms = t + 500 + (uint64_t)d, .kind = F_KILL, .targets = a, .dur_ms = 3000, .id = ++*id};
    return t + 500 + (uint64_t)d + 3000;
}

static int cmp_ev(const void *x, const void *y)
{
    const nev *a = x, *b = y;
    return a->at_ms < b->at_ms ? -1 : a->at_ms > b->at_ms ? 1 : a->id < b->id ? -1 : 1;
}

static void plan(void)
{
    uint64_t r = C.seed * 0x2545f4914f6cdd1dull + 17;
    disk_victim = rng_below(&r, C.n);
    disk_victim2 = -1;
    if (C.disk_victims == 2) disk_victim2 = (disk_victim + 1 + rng_below(&r, C.n - 1)) % C.n;
    uint64_t t = 2000, end = (uint64_t)C.seconds * 1000;
    unsigned id = 0;
    int minority = (C.n - 1) / 2, removal_planned = 0;
    while (C.faults) {
        t += 400 + (uint64_t)rng_below(&r, 2100);
        if (t >= end) break;
        int kind = pick_kind(&r);
        if (kind == F_PAUSEKILL || kind == F_PARTKILL) {
            t = plan_combo(&r, t, kind, &id);
            continue;
        }
        if (kind == F_ROLLBACK && rng_unit(&r) < 0.35) {
            t = plan_rollback_combo(&r, t, &id);
            continue;
        }
        nev *e = add_ev();
        e->at_ms = t;
        e->kind = kind;
        e->id = ++id;
        double u = rng_unit(&r);
        switch (e->kind) {
        case F_KILL:
            e->targets = random_subset(&r, u < 0.7 ? 1 : u < 0.9 ? minority : minority + 1);
            e->dur_ms = 300 + rng_below(&r, 2700);
            break;
        case F_POWER:
            e->targets = u < 0.6 ? random_subset(&r, 1) : (1u << C.n) - 1;
            e->dur_ms = 300 + rng_below(&r, 1700);
            break;
        case F_PAUSE:
            e->targets = random_subset(&r, u < 0.6 ? 1 : minority);
            e->dur_ms = 300 + rng_below(&r, 3700);
            break;
        case F_PARTITION: {
            e->dur_ms = 1000 + rng_below(&r, 4000);
            unsigned side = 0;
            if (u < 0.3) { /* isolate one */
                e->variant = 0;
                side = random_subset(&r, 1);
            } else if (u < 0.55) { /* minority | majority */
                e->variant = 1;
                side = random_subset(&r, minority);
            } else if (u < 0.85) { /* one-way cuts */
                e->variant = 2;
                int k = 1 + rng_below(&r, 3);
                for (int i = 0; i < k; i++) {
                    int a = rng_below(&r, C.n), b = (a + 1 + rng_below(&r, C.n - 1)) % C.n;
                    e->cut[a] |= 1u << b;
                }
            } else { /* bridge: x hears both halves */
                e->variant = 3;
                int x = rng_below(&r, C.n);
                unsigned half = 0; /* (n - 1) / 2 of the others */
                while (__builtin_popcount(half) < (C.n - 1) / 2)
                    half |= 1u << ((x + 1 + rng_below(&r, C.n - 1)) % C.n);
                for (int a = 0; a < C.n; a++)
                    for (int b = 0; b < C.n; b++)
                        if (a != x && b != x && a != b &&
                            !!(half & (1u << a)) != !!(half & (1u << b)))
                            e->cut[a] |= 1u << b;
                e->targets = 1u << x;
            }
            if (e->variant <= 1)
                for (int a = 0; a < C.n; a++)
                    for (int b = 0; b < C.n; b++)
                        if (!!(side & (1u << a)) != !!(side & (1u << b))) e->cut[a] |= 1u << b;
            if (e->variant <= 1) e->targets = side;
            break;
        }
        case F_NET:
            e->targets = u < 0.5 ? (1u << C.n) - 1 : random_subset(&r, 1);
            e->delay = 1 + rng_below(&r, 60);
            e->jitter = rng_below(&r, e->delay + 1);
            e->drop = rng_below(&r, 16);
            e->dur_ms = 1000 + rng_below(&r, 4000);
            break;
        case F_RESET:
            e->targets = random_subset(&r, 1);
            break;
        case F_DISK:
            e->variant = rng_below(&r, 4);
            e->dur_ms = 300 + rng_below(&r, 1700);
            e->clock_ms = (long long)(rng_next(&r) >> 1); /* seeds the damage's choices */
            if (disk_victim2 >= 0) {
                double w = rng_unit(&r);
                e->targets = w < 0.4   ? 1u << disk_victim
                             : w < 0.8 ? 1u << disk_victim2
                                       : (1u << disk_victim) | (1u << disk_victim2);
            }
            break;
        case F_IOERR:
            e->targets = u < 0.7   ? random_subset(&r, 1)
                         : u < 0.9 ? random_subset(&r, minority)
                                   : (1u << C.n) - 1;
            e->variant = rng_below(&r, 3);
            e->restart = rng_below(&r, 3);
            e->dur_ms = 500 + rng_below(&r, 2500);
            break;
        case F_ROLLBACK:
            e->variant = rng_unit(&r) < 0.7; /* 1: put the copy back */
            e->dur_ms = 300 + rng_below(&r, 1700);
            if (disk_victim2 >= 0) e->targets = 1u << pick_victim(&r);
            break;
        case F_MEMBERS:
            e->variant = u < 0.45 ? 0 : u < 0.85 || C.n != 5 || removal_planned ? 1 : 2;
            if (disk_victim2 >= 0) e->variant = 1; /* evacuations only: the stream stays R5 */
            removal_planned |= e->variant == 2;
            e->dur_ms = e->variant != 1      ? 0
                        : rng_unit(&r) < 0.5 ? 500 + rng_below(&r, 2500)
                                             : 8000 + rng_below(&r, 7000);
            e->clock_ms = (long long)(rng_next(&r) >> 1); /* seeds the choice of peer */
            break;
        case F_CLOCK:
            e->targets = random_subset(&r, 1);
            e->clock_ms = (500 + rng_below(&r, 9500)) * (u < 0.5 ? -1 : 1);
            e->dur_ms = 1000 + rng_below(&r, 4000);
            break;
        }
    }
    for (size_t i = 0; i < nevs; i++)
        if ((evs[i].kind == F_DISK || evs[i].kind == F_ROLLBACK) && !evs[i].targets)
            evs[i].targets = 1u << disk_victim;
    qsort(evs, nevs, sizeof *evs, cmp_ev);
    /* A rollback needs a copy of its victim's directory: the victim's first one takes it. */
    unsigned saved = 0;
    for (size_t i = 0; i < nevs; i++)
        if (evs[i].kind == F_ROLLBACK) {
            if (!(saved & evs[i].targets)) evs[i].variant = 0;
            saved |= evs[i].targets;
        }
}

static void mask_names(unsigned m, char *out, size_t cap)
{
    out[0] = 0;
    for (int i = 0; i < C.n; i++)
        if (m & (1u << i)) {
            size_t l = strlen(out);
            snprintf(out + l, cap - l, "%s%s", l ? "," : "", C.names[i]);
        }
}

/* SIGKILL server i and wait for it (smu held). */
static void kill_server(int i)
{
    if (C.pid[i] <= 0) return;
    kill(C.pid[i], SIGKILL);
    waitpid(C.pid[i], NULL, 0);
    C.pid[i] = 0;
    C.paused[i] = 0;
}

/* Power cut of server i (smu held): SIGUSR1 makes its vfs roll its files back to their last
 * sync and exit; if it does not within 3 s, SIGKILL (a plain kill then). */
static void power_cut(int i)
{
    if (C.pid[i] <= 0) return;
    kill(C.pid[i], SIGUSR1);
    if (C.paused[i]) kill(C.pid[i], SIGCONT);
    C.paused[i] = 0;
    int st = 0;
    for (int w = 0; w < 300; w++) {
        pid_t p = waitpid(C.pid[i], &st, WNOHANG);
        if (p == C.pid[i]) {
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 86)
                nemesis_note("power cut %s: exited with status %d (not the vfs's 86)", C.names[i],
                             st);
            C.pid[i] = 0;
            return;
        }
        usleep(10000);
    }
    nemesis_note("power cut %s: no exit within 3 s, SIGKILL instead", C.names[i]);
    kill_server(i);
}

/* The victim's data files (not its identity file "node"), for the disk fault. */
static char files[512][400];
static int nfiles;

static int list_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    if (type == FTW_F && strcmp(path + ftw->base, "node") && nfiles < 512)
        snprintf(files[nfiles++], sizeof files[0], "%s", path);
    return 0;
}

/* 0 a WAL segment, 1 a store block, 2 a snapshot file. */
static int file_kind(const char *path)
{
    return strstr(path, "/wal/snap/") ? 2 : strstr(path, "/store/") ? 1 : 0;
}

/* Damages one of server i's synced files while it is down (smu held): bits flipped, a tail
 * cut, a range zeroed, or the file deleted. Writes what it did into what. */
static void damage(int i, int variant, uint64_t seed, char *what, size_t cap)
{
    char dir[400];
    nfiles = 0;
    snprintf(dir, sizeof dir, "%s/%s", C.base, C.names[i]);
    nftw(dir, list_file, 16, FTW_PHYS);
    snprintf(what, cap, "no file to damage");
    if (!nfiles) return;
    uint64_t r = seed;
    /* The kind of file first (WAL segment, store block, snapshot; whichever exist), then one
     * of that kind: a few WAL segments and store blocks would otherwise rarely be hit beside
     * the snapshots. */
    int kinds[3] = {0, 0, 0};
    for (int k = 0; k < nfiles; k++) kinds[file_kind(files[k])]++;
    int present[3], np = 0;
    for (int k = 0; k < 3; k++)
        if (kinds[k]) present[np++] = k;
    int want = present[rng_below(&r, np)], nth = rng_below(&r, kinds[want]);
    const char *path = files[0];
    for (int k = 0; k < nfiles; k++)
        if (file_kind(files[k]) == want && nth-- == 0) {
            path = files[k];
            break;
        }
    const char *rel = path + strlen(C.base) + 1;
    struct stat st;
    if (stat(path, &st) || st.st_size == 0) {
        snprintf(what, cap, "%s is empty", rel);
        return;
    }
    uint64_t size = (uint64_t)st.st_size;
    int fd = open(path, O_RDWR);
    if (fd < 0) return;
    switch (variant) {
    case 0: {
        int bits = 1 + rng_below(&r, 8);
        for (int b = 0; b < bits; b++) {
            off_t off = (off_t)(rng_next(&r) % size);
            unsigned char c;
            if (pread(fd, &c, 1, off) == 1) {
                c ^= (unsigned char)(1u << rng_below(&r, 8));
                if (pwrite(fd, &c, 1, off) != 1) break;
            }
        }
        snprintf(what, cap, "%d bits flipped in %s (%llu bytes)", bits, rel,
                 (unsigned long long)size);
        break;
    }
    case 1: {
        uint64_t cut = 1 + rng_next(&r) % (size < 65536 ? size : 65536);
        if (ftruncate(fd, (off_t)(size - cut))) break;
        snprintf(what, cap, "last %llu of %llu bytes of %s cut", (unsigned long long)cut,
                 (unsigned long long)size, rel);
        break;
    }
    case 2: {
        uint64_t off = rng_next(&r) % size, len = 1 + rng_next(&r) % 65536;
        if (off + len > size) len = size - off;
        static const unsigned char zeros[65536];
        if (pwrite(fd, zeros, (size_t)len, (off_t)off) != (ssize_t)len) break;
        snprintf(what, cap, "[%llu, +%llu) zeroed in %s", (unsigned long long)off,
                 (unsigned long long)len, rel);
        break;
    }
    default:
        unlink(path);
        snprintf(what, cap, "%s deleted", rel);
    }
    fsync(fd);
    close(fd);
}

/* The rollback (smu held, server i down): variant 0 copies its data directory aside, 1 puts
 * the copy back in place of the directory (the copy is kept: a later rollback may reuse it). */
static void rollback(int i, int variant, char *what, size_t cap)
{
    char cmd[1200];
    if (variant == 0)
        snprintf(cmd, sizeof cmd, "rm -rf '%s/%s.saved' && cp -a '%s/%s' '%s/%s.saved'", C.base,
                 C.names[i], C.base, C.names[i], C.base, C.names[i]);
    else
        snprintf(cmd, sizeof cmd, "rm -rf '%s/%s' && cp -a '%s/%s.saved' '%s/%s'", C.base,
                 C.names[i], C.base, C.names[i], C.base, C.names[i]);
    int rc = system(cmd);
    snprintf(what, cap, "%s%s",
             variant ? "data directory put back to its earlier copy"
                     : "data directory copied aside",
             rc ? " (FAILED)" : "");
    if (rc) die("rollback of %s: '%s' failed", C.names[i], cmd);
}

static const char *const ioerr_modes[] = {"eio", "enospc", "sync"};

typedef struct pending {
    uint64_t at_ms;
    nev *e;
} pending;

static pending pend[4096];
static size_t npend;

static void start_event(nev *e)
{
    char who[64];
    mask_names(e->targets, who, sizeof who);
    pthread_mutex_lock(&C.smu);
    switch (e->kind) {
    case F_KILL:
    case F_POWER: {
        unsigned done = 0;
        if (e->kind == F_POWER && e->targets == (1u << C.n) - 1) {
            /* every server at once: signals first, then wait for each */
            for (int i = 0; i < C.n; i++)
                if (C.pid[i] > 0) kill(C.pid[i], SIGUSR1);
        }
        for (int i = 0; i < C.n; i++)
            if ((e->targets & (1u << i)) && C.pid[i] > 0) {
                if (e->kind == F_KILL)
                    kill_server(i);
                else
                    power_cut(i);
                done |= 1u << i;
            }
        pthread_mutex_unlock(&C.smu);
        mask_names(done, who, sizeof who);
        if (done)
            nemesis_note("%s %s, restart in %.1f s", e->kind == F_KILL ? "kill -9" : "power cut",
                         who, e->dur_ms / 1000.0);
        e->targets = done;
        break;
    }
    case F_PAUSE: {
        unsigned done = 0;
        for (int i = 0; i < C.n; i++)
            if ((e->targets & (1u << i)) && C.pid[i] > 0 && !C.paused[i]) {
                kill(C.pid[i], SIGSTOP);
                C.paused[i] = 1;
                done |= 1u << i;
            }
        pthread_mutex_unlock(&C.smu);
        e->targets = done;
        mask_names(done, who, sizeof who);
        if (done) nemesis_note("pause (SIGSTOP) %s for %.1f s", who, e->dur_ms / 1000.0);
        break;
    }
    case F_PARTITION: {
        pthread_mutex_unlock(&C.smu);
        char cuts[300] = "";
        pthread_mutex_lock(&C.lmu);
        for (int a = 0; a < C.n; a++)
            for (int b = 0; b < C.n; b++)
                if (e->cut[a] & (1u << b)) {
                    C.links[a][b].cut++;
                    size_t l = strlen(cuts);
                    snprintf(cuts + l, sizeof cuts - l, " %s->%s", C.names[a], C.names[b]);
                }
        pthread_mutex_unlock(&C.lmu);
        static const char *const what[] = {"isolate", "split off", "one-way cuts", "bridge"};
        nemesis_note("partition: %s %s for %.1f s (cut:%s)", what[e->variant],
                     e->variant == 2 ? "" : who, e->dur_ms / 1000.0, cuts);
        break;
    }
    case F_NET:
        pthread_mutex_unlock(&C.smu);
        pthread_mutex_lock(&C.lmu);
        for (int a = 0; a < C.n; a++)
            for (int b = 0; b < C.n; b++)
                if (a != b && (e->targets & ((1u << a) | (1u << b)))) {
                    link_fault *l = &C.links[a][b];
                    l->drop_pct = e->drop;
                    l->delay_ms = e->delay;
                    l->jitter_ms = e->jitter;
                    l->owner = e->id;
                }
        pthread_mutex_unlock(&C.lmu);
        nemesis_note("net: links of %s: delay %d ms + up to %d, drop %d%% for %.1f s", who,
                     e->delay, e->jitter, e->drop, e->dur_ms / 1000.0);
        break;
    case F_DISK: {
        /* One victim, or with --disk-victims 2 both at once (one batch of disks, one event):
         * each killed and damaged, the second with a seed of its own. */
        char what[MAXN][500];
        unsigned done = 0;
        for (int v = 0; v < C.n; v++) {
            if (!(e->targets & (1u << v)) || C.removed[v]) /* removed (members.c): no server */
                continue;
            kill_server(v);
            damage(v, e->variant, (uint64_t)e->clock_ms ^ (done ? 0x5bd1e995u : 0), what[v],
                   sizeof what[v]);
            done |= 1u << v;
        }
        pthread_mutex_unlock(&C.smu);
        if (!done) {
            e->dur_ms = 0;
            break;
        }
        for (int v = 0; v < C.n; v++)
            if (done & (1u << v))
                nemesis_note("disk %s (killed): %s; restart in %.1f s%s", C.names[v], what[v],
                             e->dur_ms / 1000.0, done != 1u << v ? " (two victims at once)" : "");
        break;
    }
    case F_ROLLBACK: {
        int v = __builtin_ctz(e->targets);
        char what[200];
        if (C.removed[v]) {
            pthread_mutex_unlock(&C.smu);
            e->dur_ms = 0;
            break;
        }
        kill_server(v);
        rollback(v, e->variant, what, sizeof what);
        pthread_mutex_unlock(&C.smu);
        nemesis_note("rollback %s (killed): %s; restart in %.1f s", C.names[v], what,
                     e->dur_ms / 1000.0);
        break;
    }
    case F_IOERR:
        for (int i = 0; i < C.n; i++)
            if (e->targets & (1u << i)) {
                C.ioerr_on[i]++;
                ioerr_set(i, ioerr_modes[e->variant]);
            }
        pthread_mutex_unlock(&C.smu);
        nemesis_note("ioerr: %s's vfs fails with %s for %.1f s, then %s", who,
                     ioerr_modes[e->variant], e->dur_ms / 1000.0,
                     e->restart == 2 ? "the supervisor"
                     : e->restart    ? "a kill -9"
                                     : "a power cut");
        break;
    case F_CLOCK:
        pthread_mutex_unlock(&C.smu);
        clock_set(__builtin_ctz(e->targets), e->clock_ms);
        nemesis_note("clock: %s's wall clock %+.1f s for %.1f s", who, e->clock_ms / 1000.0,
                     e->dur_ms / 1000.0);
        break;
    case F_RESET:
        pthread_mutex_unlock(&C.smu);
        proxy_reset_node(__builtin_ctz(e->targets));
        nemesis_note("reset: every peer connection of %s closed", who);
        break;
    case F_MEMBERS:
        pthread_mutex_unlock(&C.smu);
        members_start(e->variant, e->dur_ms, (uint64_t)e->clock_ms);
        break;
    default:
        pthread_mutex_unlock(&C.smu);
    }
    if (e->dur_ms && e->kind != F_RESET && e->kind != F_MEMBERS &&
        npend < sizeof pend / sizeof pend[0])
        pend[npend++] = (pending){.at_ms = e->at_ms + (uint64_t)e->dur_ms, .e = e};
}

static void end_event(nev *e)
{
    char who[64];
    mask_names(e->targets, who, sizeof who);
    switch (e->kind) {
    case F_IOERR: {
        /* The errors stop; a server whose WAL failed acknowledges nothing more until its node
         * is opened again. Restart 0 and 1 restart every target: a power cut loses what its
         * failed syncs covered, a kill -9 keeps it. Restart 2 leaves the running ones to the
         * supervisor (supervise), which restarts a server once its /healthz says its WAL
         * failed. */
        unsigned done = 0, over = 0;
        pthread_mutex_lock(&C.smu);
        for (int i = 0; i < C.n; i++)
            if ((e->targets & (1u << i)) && C.ioerr_on[i] > 0 && --C.ioerr_on[i] == 0) {
                ioerr_set(i, "none"); /* an overlapping ioerr event keeps its errors */
                over |= 1u << i;
            }
        if (!e->restart)
            for (int i = 0; i < C.n; i++)
                if ((over & (1u << i)) && C.pid[i] > 0) kill(C.pid[i], SIGUSR1);
        for (int i = 0; i < C.n; i++) {
            if (!(over & (1u << i))) continue;
            if (C.pid[i] > 0 && e->restart == 2) {
                C.ioerr_hit[i] = 1;
                continue;
            }
            if (C.pid[i] > 0) {
                if (e->restart)
                    kill_server(i);
                else
                    power_cut(i);
            } else if (!C.ioerr_down[i]) {
                continue; /* down for another fault, whose end restarts it */
            }
            server_start(i);
            C.ioerr_down[i] = 0;
            done |= 1u << i;
        }
        pthread_mutex_unlock(&C.smu);
        char started[64];
        mask_names(over, who, sizeof who);
        mask_names(done, started, sizeof started);
        if (over)
            nemesis_note("ioerr over on %s; restarted %s (%s)", who, done ? started : "none",
                         e->restart == 2 ? "a running one is left to the supervisor"
                         : e->restart    ? "a kill -9 first if it ran"
                                         : "a power cut first if it ran");
        break;
    }
    case F_KILL:
    case F_DISK:
    case F_ROLLBACK:
    case F_POWER: {
        unsigned done = 0;
        pthread_mutex_lock(&C.smu);
        for (int i = 0; i < C.n; i++)
            if ((e->targets & (1u << i)) && C.pid[i] <= 0) {
                server_start(i);
                done |= 1u << i;
            }
        pthread_mutex_unlock(&C.smu);
        mask_names(done, who, sizeof who);
        if (done) nemesis_note("restart %s", who);
        break;
    }
    case F_PAUSE: {
        unsigned done = 0;
        pthread_mutex_lock(&C.smu);
        for (int i = 0; i < C.n; i++)
            if ((e->targets & (1u << i)) && C.pid[i] > 0 && C.paused[i]) {
                kill(C.pid[i], SIGCONT);
                C.paused[i] = 0;
                done |= 1u << i;
            }
        pthread_mutex_unlock(&C.smu);
        mask_names(done, who, sizeof who);
        if (done) nemesis_note("resume (SIGCONT) %s", who);
        break;
    }
    case F_PARTITION:
        pthread_mutex_lock(&C.lmu);
        for (int a = 0; a < C.n; a++)
            for (int b = 0; b < C.n; b++)
                if ((e->cut[a] & (1u << b)) && C.links[a][b].cut > 0) C.links[a][b].cut--;
        pthread_mutex_unlock(&C.lmu);
        nemesis_note("partition healed (its cuts)");
        break;
    case F_NET:
        pthread_mutex_lock(&C.lmu);
        for (int a = 0; a < C.n; a++)
            for (int b = 0; b < C.n; b++)
                if (C.links[a][b].owner == e->id) {
                    C.links[a][b].drop_pct = C.links[a][b].delay_ms = 0;
                    C.links[a][b].jitter_ms = 0;
                    C.links[a][b].owner = 0;
                }
        pthread_mutex_unlock(&C.lmu);
        nemesis_note("net: links of %s perfect again", who);
        break;
    case F_CLOCK:
        clock_set(__builtin_ctz(e->targets), 0);
        nemesis_note("clock: %s's wall clock right again", who);
        break;
    }
}

void supervise(void)
{
    for (int i = 0; i < C.n; i++) {
        pthread_mutex_lock(&C.smu);
        int look = C.ioerr_hit[i] && C.pid[i] > 0 && !C.paused[i];
        pthread_mutex_unlock(&C.smu);
        char why[300];
        if (!look || server_healthy(i, why, sizeof why) || !strstr(why, "WAL failed")) continue;
        pthread_mutex_lock(&C.smu);
        if (C.pid[i] > 0) {
            kill_server(i);
            server_start(i);
        }
        pthread_mutex_unlock(&C.smu);
        nemesis_note("supervisor: %s's /healthz says its WAL failed; restarted (kill -9)",
                     C.names[i]);
    }
}

static void *run(void *arg)
{
    (void)arg;
    uint64_t t0 = now_ns(), next_look = 0;
    size_t next = 0;
    while (!stopping) {
        uint64_t ms = (now_ns() - t0) / 1000000u;
        while (next < nevs && evs[next].at_ms <= ms) start_event(&evs[next++]);
        for (size_t i = 0; i < npend;) {
            if (pend[i].at_ms <= ms) {
                end_event(pend[i].e);
                pend[i] = pend[--npend];
            } else {
                i++;
            }
        }
        procs_reap();
        if (ms >= next_look) {
            supervise();
            next_look = ms + 1000;
        }
        usleep(10000);
    }
    return NULL;
}

void nemesis_print_plan(void)
{
    plan();
    for (size_t i = 0; i < nevs; i++) {
        nev *e = &evs[i];
        char who[64], cuts[300] = "";
        mask_names(e->targets, who, sizeof who);
        for (int a = 0; a < C.n; a++)
            for (int b = 0; b < C.n; b++)
                if (e->cut[a] & (1u << b)) {
                    size_t l = strlen(cuts);
                    snprintf(cuts + l, sizeof cuts - l, " %s->%s", C.names[a], C.names[b]);
                }
        printf("%8.3f s  %-9s %-14s for %5.2f s", e->at_ms / 1000.0,
               fault_names[__builtin_ctz((unsigned)e->kind)], who, e->dur_ms / 1000.0);
        if (e->kind == F_NET)
            printf("  delay %d ms + up to %d, drop %d%%", e->delay, e->jitter, e->drop);
        if (e->kind == F_CLOCK) printf("  %+lld ms", e->clock_ms);
        if (e->kind == F_DISK) printf("  damage kind %d", e->variant);
        if (e->kind == F_IOERR)
            printf("  %s, then %s", ioerr_modes[e->variant],
                   e->restart == 2 ? "the supervisor"
                   : e->restart    ? "a kill -9"
                                   : "a power cut");
        if (e->kind == F_ROLLBACK) printf("  %s", e->variant ? "put the copy back" : "copy aside");
        if (e->kind == F_MEMBERS)
            printf("  %s", e->variant == 0   ? "stream peer remove"
                           : e->variant == 1 ? "server evacuate, then cancel"
                                             : "server stopped and removed");
        if (cuts[0]) printf("  cut:%s", cuts);
        putchar('\n');
    }
}

void nemesis_start(void)
{
    plan();
    if (C.verbose) note("nemesis: %zu faults planned", nevs);
    if (pthread_create(&thread, NULL, run, NULL)) die("cannot start the nemesis");
}

void nemesis_stop_and_heal(void)
{
    stopping = 1;
    pthread_join(thread, NULL);
    members_join();
    for (size_t i = 0; i < npend; i++) end_event(pend[i].e);
    npend = 0;
    pthread_mutex_lock(&C.lmu);
    memset(C.links, 0, sizeof C.links);
    pthread_mutex_unlock(&C.lmu);
    for (int i = 0; i < C.n; i++) {
        clock_set(i, 0);
        ioerr_set(i, "none");
        C.ioerr_on[i] = C.ioerr_down[i] = 0;
    }
    pthread_mutex_lock(&C.smu);
    for (int i = 0; i < C.n; i++) {
        if (C.pid[i] > 0 && C.paused[i]) kill(C.pid[i], SIGCONT);
        C.paused[i] = 0;
        if (C.pid[i] <= 0) server_start(i);
    }
    pthread_mutex_unlock(&C.smu);
    nemesis_note("heal: every link whole, every server running but a removed one");
}
