/*
 * Randomized cluster simulations: for each seed, a 3- or 5-node cluster runs one to three raw
 * groups (sharing the nodes' WALs and frames) under a random workload and random faults (loss,
 * duplication, reordering and delay on every link, symmetric and asymmetric partitions, crashes
 * with loss of unsynced writes — torn or not — and restarts, disks whose syncs start failing,
 * leadership transfers, small snapshot intervals so snapshots are taken, sent and installed),
 * then every fault heals. After every event of the run it checks, for every group:
 *
 *  - election safety: at most one leader per term (dissertation §3.6.3, Figure 3.2);
 *  - log matching: every (index, term) seen in any replica's log stands for the same entry data
 *    and the same previous term everywhere, which by induction is the Log Matching Property;
 *  - leader completeness: a replica that becomes leader with the highest term so far holds every
 *    entry any replica has applied (all were committed in earlier terms);
 *  - state-machine safety: every replica applies, at each index, the entry every other replica
 *    applied there (harness.c), and indexes only increase;
 *  - no acknowledged proposal is lost: an acknowledged proposal is what was applied at its
 *    index, and after healing every replica applies past it;
 *  - liveness once faults heal: a leader within bounded simulated time, a new proposal commits,
 *    every replica converges to the same state.
 *
 * Seeds: JR_SEEDS=first:count selects a range (the meson suite runs shards of the default 300
 * seeds; suite 'soak' runs many more); JR_SEED=n runs one seed verbosely. A failure prints the
 * seed, the step, and the command that replays it.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "harness.h"
#include "node/node.h"
#include "raft/raft.h"
#include "util/rand.h"
#include "vfs/memfs.h"

#define MS ((uint64_t)1000000)
#define MAX_PROPOSALS 32768
#define HEAL_RESERVE 64 /* proposals kept for the liveness checks after healing */

typedef struct world world;

typedef struct proposal {
    world *w;
    unsigned group;
    uint64_t hash;
    uint64_t index;
    int status; /* 1 pending, 0 acked, < 0 failed */
} proposal;

/* (group, index, term) -> what that entry is, as first seen in any log. */
typedef struct ident {
    uint64_t group, index, term;
    uint64_t hash;
    uint64_t prev_term; /* 0: not known */
} ident;

struct world {
    h_cluster h; /* first: the fixture's callbacks get &w->h */
    uint64_t seed;
    int verbose;
    jr__rand rng;
    proposal props[MAX_PROPOSALS];
    unsigned nprops;
    uint64_t acked_max[H_GROUPS];
    unsigned acked;
    uint64_t *leader_of_term[H_GROUPS]; /* node + 1, by term */
    size_t lot_cap[H_GROUPS];
    uint64_t max_leader_term[H_GROUPS];
    uint64_t seen_leader_term[H_MAX][H_GROUPS]; /* last term node i was seen leading */
    ident *ids;
    size_t ids_cap, ids_len;
    uint64_t *verified[H_MAX][H_GROUPS]; /* term verified at index, per node and group */
    size_t verified_cap[H_MAX][H_GROUPS];
    uint64_t steps;
    uint8_t disk_failed[H_MAX];
};

static uint64_t rnd(world *w, uint64_t n)
{
    return jr__rand_below(&w->rng, n);
}

static double unif(world *w)
{
    return (double)(jr__rand_next(&w->rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* Identity table --------------------------------------------------------------------------*/

static size_t id_slot(uint64_t group, uint64_t index, uint64_t term, size_t cap)
{
    uint64_t k = index * 0x9e3779b97f4a7c15ULL ^ term * 0xc2b2ae3d27d4eb4fULL ^ group << 40;
    k ^= k >> 29;
    return (size_t)k & (cap - 1);
}

static ident *id_find(world *w, uint64_t group, uint64_t index, uint64_t term, int create)
{
    if (create && (w->ids_len + 1) * 2 > w->ids_cap) {
        size_t cap = w->ids_cap ? w->ids_cap * 2 : 1024;
        ident *n = calloc(cap, sizeof *n);
        for (size_t i = 0; i < w->ids_cap; i++)
            if (w->ids[i].index) {
                size_t s = id_slot(w->ids[i].group, w->ids[i].index, w->ids[i].term, cap);
                while (n[s].index) s = (s + 1) & (cap - 1);
                n[s] = w->ids[i];
            }
        free(w->ids);
        w->ids = n;
        w->ids_cap = cap;
    }
    if (!w->ids_cap) return NULL;
    size_t s = id_slot(group, index, term, w->ids_cap);
    while (w->ids[s].index) {
        if (w->ids[s].group == group && w->ids[s].index == index && w->ids[s].term == term)
            return &w->ids[s];
        s = (s + 1) & (w->ids_cap - 1);
    }
    if (!create) return NULL;
    w->ids[s].group = group;
    w->ids[s].index = index;
    w->ids[s].term = term;
    w->ids_len++;
    return &w->ids[s];
}

/* Checks on every step --------------------------------------------------------------------*/

static jr__raft *raft_of(world *w, unsigned i, unsigned k)
{
    jr_group *g = h_group(&w->h, i, k);
    return g ? jr__group_raft(g) : NULL;
}

static void check_log(world *w, unsigned i, unsigned gk, jr__raft *r)
{
    uint64_t first = jr__raft_first_index(r), last = jr__raft_last_index(r);
    uint64_t group = H_GROUP0 + gk;
    if (last + 1 > w->verified_cap[i][gk]) {
        size_t cap = w->verified_cap[i][gk] ? w->verified_cap[i][gk] : 256;
        while (cap < last + 1) cap *= 2;
        w->verified[i][gk] = realloc(w->verified[i][gk], cap * sizeof(uint64_t));
        memset(w->verified[i][gk] + w->verified_cap[i][gk], 0,
               (cap - w->verified_cap[i][gk]) * sizeof(uint64_t));
        w->verified_cap[i][gk] = cap;
    }
    uint64_t *verified = w->verified[i][gk];
    uint64_t prev_term = 0;
    for (uint64_t k = first; k <= last; k++) {
        jr__entry e;
        if (jr__raft_entry(r, k, &e) != 0) {
            h_failf(&w->h,
                    "node %u group %" PRIu64 ": entry %" PRIu64 " in [%" PRIu64 ", %" PRIu64
                    "] unreadable",
                    i, group, k, first, last);
            return;
        }
        if (prev_term && e.term < prev_term)
            h_failf(&w->h, "node %u group %" PRIu64 ": term decreases at index %" PRIu64, i, group,
                    k);
        if (verified[k] != e.term) {
            ident *id = id_find(w, group, k, e.term, 1);
            uint64_t hash = XXH3_64bits(e.data, e.len) ^ e.type;
            if (!id->hash && !id->prev_term) {
                id->hash = hash | 1;
                id->prev_term = prev_term;
            } else {
                if (id->hash != (hash | 1))
                    h_failf(&w->h,
                            "log matching: node %u holds a different entry at index "
                            "%" PRIu64 " term %" PRIu64 " of group %" PRIu64,
                            i, k, e.term, group);
                if (prev_term && id->prev_term && id->prev_term != prev_term)
                    h_failf(&w->h,
                            "log matching: node %u: (%" PRIu64 ", %" PRIu64 ") follows "
                            "term %" PRIu64 ", elsewhere term %" PRIu64,
                            i, k, e.term, prev_term, id->prev_term);
                if (!id->prev_term) id->prev_term = prev_term;
            }
            verified[k] = e.term;
        }
        prev_term = e.term;
    }
}

static void check_new_leader(world *w, unsigned i, unsigned gk, jr__raft *r, uint64_t term)
{
    uint64_t first = jr__raft_first_index(r), last = jr__raft_last_index(r);
    h_cluster *h = &w->h;
    h_table *t = &h->table[gk];
    if (last < t->max_applied) {
        h_failf(h,
                "leader completeness: node %u leads term %" PRIu64 " of group %u with last "
                "index %" PRIu64 " but index %" PRIu64 " was applied",
                i, term, gk, last, t->max_applied);
        return;
    }
    for (uint64_t k = first; k <= t->max_applied; k++) {
        if (k >= t->cap || !t->applied[k].set) continue;
        jr__entry e;
        if (jr__raft_entry(r, k, &e) != 0 || e.term != t->applied[k].term)
            h_failf(h,
                    "leader completeness: node %u leads term %" PRIu64 " without the "
                    "committed entry at index %" PRIu64,
                    i, term, k);
    }
}

static void check_group(world *w, unsigned i, unsigned k)
{
    jr__raft *r = raft_of(w, i, k);
    if (!r) return;
    check_log(w, i, k, r);
    if (jr__raft_role(r) != JR_LEADER) return;
    uint64_t term = jr__raft_term(r);
    if (term >= w->lot_cap[k]) {
        size_t cap = w->lot_cap[k] ? w->lot_cap[k] : 64;
        while (cap <= term) cap *= 2;
        w->leader_of_term[k] = realloc(w->leader_of_term[k], cap * sizeof(uint64_t));
        memset(w->leader_of_term[k] + w->lot_cap[k], 0, (cap - w->lot_cap[k]) * sizeof(uint64_t));
        w->lot_cap[k] = cap;
    }
    uint64_t *lot = w->leader_of_term[k];
    if (lot[term] && lot[term] != i + 1)
        h_failf(&w->h, "election safety: nodes %u and %u both lead term %" PRIu64 " of group %u",
                (unsigned)(lot[term] - 1), i, term, k);
    lot[term] = i + 1;
    if (w->seen_leader_term[i][k] != term) {
        w->seen_leader_term[i][k] = term;
        if (term >= w->max_leader_term[k]) check_new_leader(w, i, k, r, term);
    }
    if (term > w->max_leader_term[k]) w->max_leader_term[k] = term;
}

static void on_step(void *arg, jr_sim *sim)
{
    world *w = arg;
    (void)sim;
    w->steps++;
    for (unsigned i = 0; i < w->h.n; i++)
        for (unsigned k = 0; k < w->h.ngroups; k++) check_group(w, i, k);
    if (w->h.fail[0] && w->verbose) fprintf(stderr, "step %" PRIu64 ": %s\n", w->steps, w->h.fail);
}

/* Workload --------------------------------------------------------------------------------*/

static void on_ack(void *arg, int status, uint64_t index)
{
    proposal *p = arg;
    world *w = p->w;
    p->status = status;
    p->index = index;
    if (status != 0) return;
    h_cluster *h = &w->h;
    h_table *t = &h->table[p->group];
    if (index >= t->cap || !t->applied[index].set)
        h_failf(h, "acknowledged index %" PRIu64 " of group %u was never applied", index, p->group);
    else if (t->applied[index].hash != p->hash)
        h_failf(h,
                "acknowledged proposal is not the entry applied at index %" PRIu64 " of group %u",
                index, p->group);
    w->acked++;
    if (index > w->acked_max[p->group]) w->acked_max[p->group] = index;
}

static proposal *propose(world *w, int node, unsigned k)
{
    if (w->nprops == MAX_PROPOSALS || node < 0) {
        if (w->nprops == MAX_PROPOSALS) h_failf(&w->h, "test limit: out of proposal records");
        return NULL;
    }
    jr_group *g = h_group(&w->h, (unsigned)node, k);
    if (!g) return NULL;
    char data[64];
    int len = snprintf(data, sizeof data, "seed %" PRIu64 " proposal %u", w->seed, w->nprops);
    proposal *p = &w->props[w->nprops];
    p->w = w;
    p->group = k;
    p->hash = XXH3_64bits(data, (size_t)len);
    p->status = 1;
    int rc = jr_group_propose(g, data, (size_t)len, on_ack, p);
    if (rc == 0) {
        w->nprops++;
        if (p->status != 1) h_failf(&w->h, "proposal callback ran inside jr_group_propose");
        return p;
    }
    if (rc != JR_ENOTLEADER && rc != JR_ETRANSFER && rc != JR_EDAMAGED)
        h_failf(&w->h, "propose on node %d: unexpected %s", node, jr_err_name(rc));
    if (w->verbose) fprintf(stderr, "propose on node %d: %s\n", node, jr_err_name(rc));
    return NULL;
}

static void random_link(world *w, jr_sim_link *l)
{
    jr_sim_link_init(l);
    l->drop = unif(w) < 0.5 ? unif(w) * 0.1 : 0;
    l->duplicate = unif(w) < 0.3 ? unif(w) * 0.05 : 0;
    l->reorder = unif(w) < 0.5 ? unif(w) * 0.2 : 0;
    l->delay_min_ns = 50000 + rnd(w, 1000000);
    l->delay_max_ns = l->delay_min_ns + rnd(w, 5 * MS);
}

static int crashed(world *w, unsigned i)
{
    return jr_sim_node(w->h.sim, i) == NULL;
}

static int restart(world *w, unsigned a)
{
    jr__memfs_fail_clear(jr_sim_vfs(w->h.sim, a));
    w->disk_failed[a] = 0;
    int rc = jr_sim_restart(w->h.sim, a);
    if (rc == 0) rc = h_open(&w->h, a);
    if (rc != 0) h_failf(&w->h, "restart of node %u failed: %s", a, jr_err_name(rc));
    if (w->verbose) fprintf(stderr, "%" PRIu64 " ms: restart %u\n", jr_sim_now(w->h.sim) / MS, a);
    return rc;
}

static void fault(world *w)
{
    h_cluster *h = &w->h;
    double x = unif(w);
    unsigned n = h->n;
    if (x < 0.03) {
        unsigned side[H_MAX], k = 1 + (unsigned)rnd(w, n / 2);
        for (unsigned j = 0; j < k; j++) side[j] = (unsigned)rnd(w, n);
        jr_sim_partition(h->sim, side, k);
        if (w->verbose) fprintf(stderr, "%" PRIu64 " ms: partition\n", jr_sim_now(h->sim) / MS);
    } else if (x < 0.05) {
        unsigned a = (unsigned)rnd(w, n), b = (unsigned)rnd(w, n);
        jr_sim_cut(h->sim, a, b);
        if (w->verbose)
            fprintf(stderr, "%" PRIu64 " ms: cut %u -> %u\n", jr_sim_now(h->sim) / MS, a, b);
    } else if (x < 0.10) {
        jr_sim_heal(h->sim);
        if (w->verbose) fprintf(stderr, "%" PRIu64 " ms: heal\n", jr_sim_now(h->sim) / MS);
    } else if (x < 0.12) {
        unsigned a = (unsigned)rnd(w, n);
        if (!crashed(w, a)) {
            jr_sim_crash(h->sim, a);
            if (w->verbose)
                fprintf(stderr, "%" PRIu64 " ms: crash %u\n", jr_sim_now(h->sim) / MS, a);
        }
    } else if (x < 0.17) {
        unsigned a = (unsigned)rnd(w, n);
        if (crashed(w, a)) restart(w, a);
    } else if (x < 0.18) {
        unsigned k = (unsigned)rnd(w, h->ngroups);
        int l = h_leader(h, k);
        unsigned to = (unsigned)rnd(w, n);
        if (l >= 0)
            jr_group_transfer(h_group(h, (unsigned)l, k), jr_sim_name(h->sim, to), NULL, NULL);
    } else if (x < 0.185) {
        /* the disk starts failing syncs: unsynced writes are lost at the next crash */
        unsigned a = (unsigned)rnd(w, n);
        if (!crashed(w, a) && !w->disk_failed[a]) {
            jr__memfs_fail(jr_sim_vfs(h->sim, a), JR__MEMFS_SYNC, 1 + rnd(w, 3), JR_EIO, 1, NULL);
            w->disk_failed[a] = 1;
            if (w->verbose)
                fprintf(stderr, "%" PRIu64 " ms: disk of %u fails\n", jr_sim_now(h->sim) / MS, a);
        }
    }
}

static int have_leaders(void *arg, jr_sim *sim)
{
    (void)sim;
    h_cluster *h = arg;
    for (unsigned k = 0; k < h->ngroups; k++)
        if (h_leader(h, k) < 0) return 0;
    return 1;
}

static int settled(void *arg, jr_sim *sim)
{
    proposal *p = arg;
    (void)sim;
    return p->status != 1;
}

typedef struct converge {
    world *w;
    uint64_t index[H_GROUPS];
} converge;

static int converged(void *arg, jr_sim *sim)
{
    converge *c = arg;
    (void)sim;
    h_cluster *h = &c->w->h;
    for (unsigned k = 0; k < h->ngroups; k++) {
        for (unsigned i = 0; i < h->n; i++) {
            jr__raft *r = raft_of(c->w, i, k);
            if (!r || h->fsm[i][k].last < c->index[k]) return 0;
            if (jr__raft_applied_index(r) != jr__raft_commit_index(r)) return 0;
        }
        for (unsigned i = 1; i < h->n; i++)
            if (h->fsm[i][k].last != h->fsm[0][k].last) return 0;
    }
    return 1;
}

/* After healing: group k gets a leader and commits a new proposal; its index in *index. */
static void heal_group(world *w, unsigned k, uint64_t healed, uint64_t *index)
{
    h_cluster *h = &w->h;
    proposal *p = NULL;
    for (int attempt = 0; attempt < 10 && !h->fail[0]; attempt++) {
        if (jr_sim_run_until(h->sim, have_leaders, h, 3000 * MS) != 0) {
            h_failf(h, "liveness: no leader %" PRIu64 " ms after healing",
                    (jr_sim_now(h->sim) - healed) / MS);
            return;
        }
        p = propose(w, h_leader(h, k), k);
        if (!p) {
            jr_sim_run_for(h->sim, 100 * MS);
            continue;
        }
        if (jr_sim_run_until(h->sim, settled, p, 3000 * MS) != 0)
            h_failf(h,
                    "liveness: a proposal to group %u did not commit within 3 s after "
                    "healing",
                    k);
        if (p->status == 0) break;
    }
    if (!h->fail[0] && (!p || p->status != 0))
        h_failf(h, "liveness: no proposal to group %u committed after healing", k);
    if (p) *index = p->index;
}

static void on_log(void *arg, unsigned node, int level, const char *msg)
{
    world *w = arg;
    fprintf(stderr, "%" PRIu64 " ms: n%u: %s\n", jr_sim_now(w->h.sim) / MS, node, msg);
    (void)level;
}

/* One seed; returns 0 or writes the failure into why. */
static int run_seed(uint64_t seed, int verbose, char *why, size_t whylen)
{
    world *w = calloc(1, sizeof *w);
    w->seed = seed;
    w->verbose = verbose;
    jr__rand_seed(&w->rng, seed ^ 0x5eedULL);
    unsigned n = rnd(w, 4) == 0 ? 5 : 3;
    unsigned groups = 1 + (unsigned)rnd(w, 3);
    uint64_t snap = rnd(w, 3) == 0 ? 0 : 4 + rnd(w, 40);
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.seed = seed;
    cfg.torn_writes = (int)rnd(w, 2);
    /* odd seeds: the hosts run the WAL's sync (jr_host.sync_start), done 0.1..2 ms later */
    if (seed & 1) cfg.sync_delay_ns = 100000 + (seed * 0x9e3779b97f4a7c15ULL >> 40) % 1900000;
    cfg.on_step = on_step;
    if (verbose) cfg.on_log = on_log;
    jr_sim_link link;
    jr_sim_link_init(&link);
    random_link(w, &link);
    cfg.link = &link;
    int rc = h_new(&w->h, &cfg, n, groups, snap);
    if (rc != 0) {
        snprintf(why, whylen, "cluster setup failed: %s", jr_err_name(rc));
        goto done;
    }
    h_cluster *h = &w->h;
    for (unsigned a = 0; a < n; a++)
        for (unsigned b = 0; b < n; b++)
            if (a != b && unif(w) < 0.3) {
                jr_sim_link l;
                random_link(w, &l);
                jr_sim_set_link(h->sim, a, b, &l);
            }

    /* Phase 1: workload under faults. */
    uint64_t end = jr_sim_now(h->sim) + (6000 + rnd(w, 14000)) * MS;
    while (jr_sim_now(h->sim) < end && !h->fail[0]) {
        jr_sim_run_for(h->sim, (1 + rnd(w, 40)) * MS);
        for (unsigned k = 0; k < groups && w->nprops < MAX_PROPOSALS - HEAL_RESERVE; k++) {
            int l = h_leader(h, k);
            if (l >= 0 && unif(w) < 0.7) {
                unsigned m = 1 + (unsigned)rnd(w, 4);
                for (unsigned j = 0; j < m; j++) propose(w, l, k);
            }
        }
        /* maybe not the leader: fails fast */
        if (unif(w) < 0.1 && w->nprops < MAX_PROPOSALS - HEAL_RESERVE)
            propose(w, (int)rnd(w, n), (unsigned)rnd(w, groups));
        fault(w);
    }

    /* Phase 2: everything heals; the cluster must make progress and converge. */
    jr_sim_heal(h->sim);
    jr_sim_link perfect;
    jr_sim_link_init(&perfect);
    for (unsigned a = 0; a < n; a++)
        for (unsigned b = 0; b < n; b++) jr_sim_set_link(h->sim, a, b, &perfect);
    for (unsigned a = 0; a < n && !h->fail[0]; a++) {
        if (w->disk_failed[a] && !crashed(w, a)) jr_sim_crash(h->sim, a); /* power-cycle it */
        if (crashed(w, a)) restart(w, a);
    }
    uint64_t healed = jr_sim_now(h->sim);
    converge c = {w, {0}};
    for (unsigned k = 0; k < groups && !h->fail[0]; k++) heal_group(w, k, healed, &c.index[k]);
    if (!h->fail[0] && jr_sim_run_until(h->sim, converged, &c, 5000 * MS) != 0)
        h_failf(h, "liveness: replicas did not converge after healing");
    for (unsigned k = 0; k < groups && !h->fail[0]; k++)
        for (unsigned i = 1; i < n; i++)
            if (h->fsm[i][k].chain != h->fsm[0][k].chain || h->fsm[i][k].last < w->acked_max[k])
                h_failf(h,
                        "replica %u of group %u ends in another state (last %" PRIu64
                        ", acked up to %" PRIu64 ")",
                        i, k, h->fsm[i][k].last, w->acked_max[k]);
    if (verbose) {
        for (unsigned k = 0; k < groups; k++)
            for (unsigned i = 0; i < n; i++) {
                jr_group *g = h_group(h, i, k);
                jr_group_status st = {.size = sizeof st};
                if (!g || jr_group_status_get(g, &st) != 0) continue;
                fprintf(stderr,
                        "group %u node %u: role %d term %" PRIu64 " commit %" PRIu64
                        " applied %" PRIu64 " last %" PRIu64 " snapshot %" PRIu64 " fsm %" PRIu64
                        "%s\n",
                        k, i, st.role, st.term, st.commit_index, st.applied_index, st.last_index,
                        st.snapshot_index, h->fsm[i][k].last, st.damaged ? " DAMAGED" : "");
            }
        jr_sim_stats ss = {.size = sizeof ss};
        jr_sim_stats_get(h->sim, &ss);
        fprintf(stderr,
                "network: %" PRIu64 " sent, %" PRIu64 " delivered, %" PRIu64 " dropped, %" PRIu64
                " events\n",
                ss.frames_sent, ss.frames_delivered, ss.frames_dropped, ss.events);
    }
    if (verbose)
        fprintf(stderr,
                "seed %" PRIu64 ": %u nodes, %u groups, %u proposals, %u acked, %" PRIu64
                " steps, digest %016" PRIx64 "\n",
                seed, n, groups, w->nprops, w->acked, w->steps, jr_sim_digest(h->sim));
    jr_sim_stats st = {.size = sizeof st};
    if (!h->fail[0] && jr_sim_stats_get(h->sim, &st) == 0 && st.durable_early)
        snprintf(h->fail, sizeof h->fail,
                 "%" PRIu64 " votes or acknowledgements left a node before its sync was done",
                 st.durable_early);
    if (h->fail[0])
        snprintf(why, whylen, "%s (step %" PRIu64 ", %" PRIu64 " ms)", h->fail, w->steps,
                 jr_sim_now(h->sim) / MS);
done:
    h_free(&w->h);
    for (unsigned i = 0; i < H_MAX; i++)
        for (unsigned k = 0; k < H_GROUPS; k++) free(w->verified[i][k]);
    for (unsigned k = 0; k < H_GROUPS; k++) free(w->leader_of_term[k]);
    free(w->ids);
    free(w);
    return why[0] ? -1 : 0;
}

static uint64_t first_seed = 1, seed_count = 300;
static const char *prog = "test_random";

START_TEST(random_seeds)
{
    unsigned failures = 0;
    for (uint64_t s = first_seed; s < first_seed + seed_count; s++) {
        char why[768] = "";
        if (run_seed(s, 0, why, sizeof why) != 0) {
            failures++;
            fprintf(stderr, "seed %" PRIu64 " FAILED: %s\n  replay: JR_SEED=%" PRIu64 " %s\n", s,
                    why, s, prog);
        }
    }
    ck_assert_msg(failures == 0, "%u of %" PRIu64 " seeds failed (see above)", failures,
                  seed_count);
}
END_TEST

int main(int argc, char **argv)
{
    (void)argc;
    prog = argv[0];
    const char *one = getenv("JR_SEED");
    if (one) {
        uint64_t s = strtoull(one, NULL, 0);
        char why[768] = "";
        int rc = run_seed(s, 1, why, sizeof why);
        if (rc)
            fprintf(stderr, "seed %" PRIu64 " FAILED: %s\n", s, why);
        else
            fprintf(stderr, "seed %" PRIu64 " ok\n", s);
        return rc ? EXIT_FAILURE : EXIT_SUCCESS;
    }
    const char *range = getenv("JR_SEEDS");
    if (range) {
        char *end;
        first_seed = strtoull(range, &end, 0);
        if (*end == ':') seed_count = strtoull(end + 1, NULL, 0);
    }
    Suite *s = suite_create("random");
    TCase *tc = tcase_create("seeds");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, random_seeds);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
