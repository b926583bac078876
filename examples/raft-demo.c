/*
 * raft-demo — a 3-node libjetraft cluster in one process.
 *
 * The nodes run over the deterministic cluster fixture (jetraft/sim.h): a simulated network and
 * simulated disks, so the whole story below takes a fraction of a second of real time and is
 * the same on every run. Each node hosts one raw Raft group whose state machine is a tiny
 * key-value log; the demo shows the election, commits on every node, the leader's crash, the
 * re-election, further commits, and the crashed node catching up after a restart.
 *
 * Build and run: ninja -C build && ./build/examples/raft-demo
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jetraft.h"
#include "jetraft/sim.h"

#define MS 1000000ull
#define NODES 3
#define GROUP 1

static jr_sim *sim;

typedef struct kv {
    unsigned node;
    uint64_t applied;
    char last[64];
} kv;

static kv state[NODES];
static jr_fsm fsm[NODES];
static jr_group *groups[NODES];
static int quiet_apply;

static void say(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static void say(const char *fmt, ...)
{
    va_list ap;
    printf("[%6.1f ms] ", (double)(jr_sim_now(sim) - 1000 * MS) / MS);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static void kv_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    kv *k = ctx;
    k->applied = index;
    snprintf(k->last, sizeof k->last, "%.*s", (int)len, (const char *)data);
    if (!quiet_apply)
        say("  %s applied #%llu: %s", jr_sim_name(sim, k->node), (unsigned long long)index,
            k->last);
}

static int kv_snapshot(void *ctx, jr_snapshot_writer *w)
{
    kv *k = ctx;
    return jr_snapshot_write(w, k, sizeof *k);
}

static int kv_restore(void *ctx, uint64_t index, const void *data, size_t len)
{
    kv *k = ctx;
    if (len != sizeof *k) return JR_ECORRUPT;
    unsigned node = k->node;
    memcpy(k, data, sizeof *k);
    k->node = node;
    say("  %s restored a snapshot at #%llu", jr_sim_name(sim, node), (unsigned long long)index);
    return 0;
}

static int open_group(unsigned i)
{
    const char *voters[NODES];
    for (unsigned k = 0; k < NODES; k++) voters[k] = jr_sim_name(sim, k);
    memset(&state[i], 0, sizeof state[i]);
    state[i].node = i;
    fsm[i].version = JR_FSM_VERSION;
    fsm[i].ctx = &state[i];
    fsm[i].apply = kv_apply;
    fsm[i].snapshot = kv_snapshot;
    fsm[i].restore = kv_restore;
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = GROUP;
    gc.voters = voters;
    gc.nvoters = NODES;
    gc.fsm = &fsm[i];
    gc.snapshot_entries = 64;
    return jr_group_open(jr_sim_node(sim, i), &gc, &groups[i]);
}

static int leader(void)
{
    int best = -1;
    uint64_t term = 0;
    for (unsigned i = 0; i < NODES; i++) {
        jr_node *n = jr_sim_node(sim, i);
        if (!n) continue;
        jr_group_status st = {.size = sizeof st};
        jr_group_status_get(groups[i], &st);
        if (st.role == JR_LEADER && st.term > term) {
            best = (int)i;
            term = st.term;
        }
    }
    return best;
}

static int has_leader(void *arg, jr_sim *s)
{
    (void)arg;
    (void)s;
    return leader() >= 0;
}

static int acked;
static void on_commit(void *arg, int status, uint64_t index)
{
    (void)arg;
    if (status == 0) {
        acked++;
        say("  commit acknowledged: #%llu", (unsigned long long)index);
    } else {
        say("  proposal failed: %s", jr_strerror(status));
    }
}

static int all_acked(void *arg, jr_sim *s)
{
    (void)s;
    return acked >= *(int *)arg;
}

static int announce_leader(void)
{
    if (jr_sim_run_until(sim, has_leader, NULL, 5000 * MS) != 0) {
        say("no leader elected!");
        return -1;
    }
    int l = leader();
    jr_group_status st = {.size = sizeof st};
    jr_group_status_get(groups[l], &st);
    say("%s is the leader (term %llu)", jr_sim_name(sim, (unsigned)l), (unsigned long long)st.term);
    return l;
}

static int propose_batch(int l, const char *const *items, int n)
{
    say("proposing %d entries on %s", n, jr_sim_name(sim, (unsigned)l));
    int want = acked + n;
    for (int i = 0; i < n; i++)
        if (jr_group_propose(groups[l], items[i], strlen(items[i]), on_commit, NULL) != 0)
            return -1;
    if (jr_sim_run_until(sim, all_acked, &want, 2000 * MS) != 0) return -1;
    jr_sim_run_for(sim, 50 * MS); /* let the followers apply too */
    return 0;
}

int main(void)
{
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.nodes = NODES;
    cfg.seed = 2024;
    printf("libjetraft %s demo: %d nodes in one process (simulated network and disks)\n",
           jr_version(), NODES);
    int rc = jr_sim_new(&cfg, &sim);
    if (rc != 0) {
        fprintf(stderr, "jr_sim_new: %s\n", jr_strerror(rc));
        return 1;
    }
    for (unsigned i = 0; i < NODES; i++) {
        rc = open_group(i);
        if (rc != 0) {
            fprintf(stderr, "jr_group_open: %s\n", jr_strerror(rc));
            return 1;
        }
    }
    say("group %d opened on n0, n1, n2; waiting for an election", GROUP);
    int l = announce_leader();
    if (l < 0) return 1;

    static const char *const first[] = {"set color = blue", "set size = 42", "set owner = ada"};
    if (propose_batch(l, first, 3) != 0) return 1;

    say("crashing the leader %s", jr_sim_name(sim, (unsigned)l));
    unsigned dead = (unsigned)l;
    jr_sim_crash(sim, dead);
    l = announce_leader();
    if (l < 0) return 1;

    static const char *const second[] = {"set color = green", "del owner"};
    if (propose_batch(l, second, 2) != 0) return 1;

    quiet_apply = 1;
    static const char *const filler[] = {"tick"};
    say("committing 100 more entries (snapshots are taken every 64)");
    for (int i = 0; i < 100; i++)
        if (jr_group_propose(groups[l], filler[0], 4, NULL, NULL) != 0) return 1;
    jr_sim_run_for(sim, 200 * MS);
    quiet_apply = 0;

    say("restarting %s", jr_sim_name(sim, dead));
    if (jr_sim_restart(sim, dead) != 0 || open_group(dead) != 0) return 1;
    jr_sim_run_for(sim, 500 * MS);

    int ok = 1;
    for (unsigned i = 0; i < NODES; i++) {
        say("%s: applied up to #%llu, last entry \"%s\"", jr_sim_name(sim, i),
            (unsigned long long)state[i].applied, state[i].last);
        if (state[i].applied != state[0].applied || strcmp(state[i].last, state[0].last) != 0)
            ok = 0;
    }
    jr_sim_free(sim);
    printf(ok ? "demo: all nodes agree\n" : "demo: nodes disagree!\n");
    return ok ? 0 : 1;
}
