/*
 * faults.c — the fault scheduler (the nemesis) and the heal.
 *
 * Every 0.2-1.5 s of simulated time it applies one fault of the kinds selected (--faults):
 *  - partition: heal, then isolate one node, split a minority from the majority, cut one to
 *    three directed links (one-way), or a bridge (two halves that only one node connects);
 *    or heal;
 *  - net: drop, duplicate, reorder and delay on some links or all of them; or perfect links;
 *  - crash: power loss of one node (unsynced writes lost, the last one torn), restarted
 *    0.1-3 s later; any number may be down at once;
 *  - power: every running node loses power at once, each restarts 0.2-2 s later;
 *  - pause: a node stops for 0.1-3 s (a collection, a suspended VM);
 *  - clock: a node's wall clock jumps forwards or backwards by 0.5-10 s;
 *  - disk: the fault model of docs/internals.md ("Disk faults and restarted replicas"): one
 *    victim replica at a time loses synced data while crashed — bits flipped or a range zeroed
 *    in a WAL segment, a store block or a snapshot file, a file deleted, the newest WAL
 *    segment's tail cut, or every file rolled back to a copy saved 0.5-2 s earlier (no group is
 *    created or moved onto it meanwhile, no drain in force: a rollback to before the victim held
 *    a group is outside the model) — and restarts; the next victim is chosen only once it
 *    reports healthy again (--disk-victims 2, five nodes: a second victim may be damaged
 *    meanwhile, never a third);
 *  - ioerr: one node's writes and syncs fail with EIO or ENOSPC (all of them, or every k-th)
 *    for 50-500 ms, then it is restarted, as an operator restarts a server whose disk failed.
 * The heal ends every fault: links whole and perfect, every node running, wall clocks equal
 * (moved to the latest, so none jumps backwards), I/O errors off.
 */
#include <stdlib.h>
#include <string.h>

#include "jsim.h"

const char *const fault_names[F_NKINDS] = {"partition", "net",   "crash", "power",
                                           "pause",     "clock", "disk",  "ioerr"};

void faults_init(world *w)
{
    w->taint_node = -1;
    w->victim = -1;
    w->taint2_node = -1;
    w->victim2 = -1;
    w->ioerr_node = -1;
    w->copy_node = -1;
    w->next_fault_ns = now_ns(w) + (200 + rng_below(&w->r, 800)) * MS;
}

/* Health --------------------------------------------------------------------------------------*/

typedef struct health_res {
    int done, status, healthy, meta_current;
    char why[200];
    uint64_t unwell[16]; /* the groups the node reports unwell (nunwell > 16: more) */
    size_t nunwell;
} health_res;

static void health_cb(void *arg, int status, const char *msg, const jr_node_health_info *h)
{
    health_res *r = arg;
    r->done = 1;
    r->status = status;
    r->healthy = status == 0 && h && h->healthy;
    r->meta_current = status == 0 && h && h->meta_current;
    for (size_t i = 0; status == 0 && h && i < h->ngroups; i++)
        if (r->nunwell++ < 16) r->unwell[r->nunwell - 1] = h->groups[i]->group;
    if (status != 0)
        snprintf(r->why, sizeof r->why, "%s", msg ? msg : jr_strerror(status));
    else if (h && !h->healthy)
        snprintf(r->why, sizeof r->why, "%s", h->ngroups ? h->groups[0]->text : h->meta_text);
}

/* Records the groups of which node v's replica is one of at most two voters, before the disk
 * nemesis damages v's disk (applied_each_group's callback): the damage then hits half of their
 * voters or all, beyond the fault model's minority. Its only voter, no other copy of what it
 * committed; one of two, the other cannot be elected without its vote, and a replica that lost
 * what it acknowledged cannot safely give one (it may have voted in that term for a stale
 * candidate: the other may have held entries committed by those two alone). */
static void note_lone(world *w, uint64_t group, void *arg)
{
    unsigned v = *(const unsigned *)arg;
    jr_node *nd = jr_sim_node(w->sim, v);
    jr_group *g = nd ? jr_node_group(nd, group) : NULL;
    jr_group_status st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    if (!g || jr_group_status_get(g, &st) != 0) return;
    size_t voters = 0; /* an observer being added holds nothing the group committed */
    for (size_t k = 0; k < st.npeers; k++) {
        jr_peer_status ps;
        memset(&ps, 0, sizeof ps);
        ps.size = sizeof ps;
        if (jr_group_peer(g, k, &ps) != 0) return;
        voters += ps.voter != 0;
    }
    if (voters == 0 || voters > 2) return;
    for (size_t k = 0; k < w->nlone_hit; k++)
        if (w->lone_hit[k] == group) return;
    if (w->nlone_hit < sizeof w->lone_hit / sizeof w->lone_hit[0])
        w->lone_hit[w->nlone_hit++] = group;
}

static void note_lone_groups(world *w, unsigned v)
{
    if (node_up(w, v)) applied_each_group(w, note_lone, &v);
}

/* 1 if a running server other than node i hosts a replica of the group. */
static int hosted_elsewhere(world *w, unsigned i, uint64_t group)
{
    for (unsigned j = 0; j < w->n; j++) {
        jr_node *nd = j != i && node_up(w, j) ? jr_sim_node(w->sim, j) : NULL;
        if (nd && jr_node_group(nd, group)) return 1;
    }
    return 0;
}

/* 1 if a disk victim's replica of the group lost its configuration with its WAL (no peers) and
 * a replica elsewhere that still holds it counts at most two voters, the victim one of them:
 * half of the voters or all damaged, beyond the fault model, as note_lone records, which sees
 * only groups that applied an entry (seed 3740: an R2 stream created while its other voter was
 * paused, never led, whose replica on the victim then lost the WAL segment holding its
 * bootstrap; the other voter cannot be elected without the victim's vote). */
static int pair_lost_config(world *w, uint64_t group)
{
    for (unsigned v = 0; v < w->n; v++) {
        jr_node *vn = w->disk_hit[v] && node_up(w, v) ? jr_sim_node(w->sim, v) : NULL;
        jr_group *vg = vn ? jr_node_group(vn, group) : NULL;
        jr_group_status st;
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        if (!vg || jr_group_status_get(vg, &st) != 0 || st.npeers != 0) continue;
        for (unsigned j = 0; j < w->n; j++) {
            jr_node *nd = j != v && node_up(w, j) ? jr_sim_node(w->sim, j) : NULL;
            jr_group *g = nd ? jr_node_group(nd, group) : NULL;
            memset(&st, 0, sizeof st);
            st.size = sizeof st;
            if (!g || jr_group_status_get(g, &st) != 0 || st.npeers == 0) continue;
            size_t voters = 0;
            int victim_votes = 0;
            for (size_t k = 0; k < st.npeers; k++) {
                jr_peer_status ps;
                memset(&ps, 0, sizeof ps);
                ps.size = sizeof ps;
                if (jr_group_peer(g, k, &ps) != 0 || !ps.voter) continue;
                voters++;
                victim_votes |= ps.name && !strcmp(ps.name, jr_sim_name(w->sim, v));
            }
            if (voters <= 2 && victim_votes) return 1;
        }
    }
    return 0;
}

/* 1 if every group node i reports unwell is one whose only member is node i, after the disk
 * nemesis damaged node i's disk, or one of whose one or two voters the victim was when the
 * nemesis damaged its disk (its log may since have been cut back to a configuration of more
 * members, or the group grew; note_lone; pair_lost_config for a group that never applied an
 * entry), or one whose replica on the victim is a damaged lone
 * voter (placed there while the victim was down with its WAL lost), or one whose single voter
 * relogged an index after losing what it had applied there (check_log.c: applied-log leaves it out
 * too): what such a replica lost no rule can recover (the fault model allows one damaged replica of
 * a group, and this one has no other holder of what it alone committed; its other members rightly
 * refuse to elect it below the entry they know committed), so it is not counted against the
 * library; noted in the history once per group. */
static int only_replicas_lost(world *w, unsigned i, const health_res *r)
{
    if (!r->meta_current || r->nunwell == 0 || r->nunwell > 16) return 0;
    jr_node *nd = jr_sim_node(w->sim, i);
    for (size_t k = 0; k < r->nunwell; k++) {
        int lone = 0;
        for (size_t j = 0; j < w->nlone_hit && !lone; j++) lone = w->lone_hit[j] == r->unwell[k];
        for (unsigned j = 0; j < w->nlone && !lone; j++) lone = w->lone_groups[j] == r->unwell[k];
        if (lone) continue;
        if (pair_lost_config(w, r->unwell[k])) continue;
        if (!w->disk_hit[i]) return 0;
        jr_group *g = nd ? jr_node_group(nd, r->unwell[k]) : NULL;
        jr_group_status st;
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        if (!g || jr_group_status_get(g, &st) != 0) return 0;
        /* A lone voter: with no other member to ask, a replica vouches for itself and keeps the
         * damage its recovery found (raft/vouch.c jr__vouch_start). Seed 3610: an R1 stream
         * placed on the victim while it was down after losing its WAL, which its node cannot
         * tell from one its lost WAL held. Once its group grows it asks the new members and is
         * repaired (jr__vouch_regrow), so a damaged replica of a group of more members counts.
         * Seed 74510: an R1 stream's replica whose WAL segment went while its server had just
         * restarted (its group not open yet, so note_lone could not see it) lost its
         * configuration with the rest (no peers): it is that group's only replica if no other
         * server hosts one (a member elsewhere would have repaired it by now). */
        if (st.npeers != 1 && !(st.npeers == 0 && !hosted_elsewhere(w, i, r->unwell[k]))) return 0;
    }
    for (size_t k = 0; k < r->nunwell; k++) {
        int seen = 0;
        for (size_t j = 0; j < w->nlost_alone && !seen; j++)
            seen = w->lost_alone[j] == r->unwell[k];
        if (seen || w->nlost_alone == sizeof w->lost_alone / sizeof w->lost_alone[0]) continue;
        w->lost_alone[w->nlost_alone++] = r->unwell[k];
        nem_note(
            w,
            "n%u: group %llu, one of its one or two voters damaged by the disk nemesis (beyond a "
            "minority): not counted",
            i, (unsigned long long)r->unwell[k]);
    }
    return 1;
}

/* 1 if node i reports healthy, 0 if not (why says why), -1 if it cannot tell (down, paused). */
static int node_healthy(world *w, unsigned i, char *why, size_t cap)
{
    if (!node_up(w, i) || w->paused_until[i] > now_ns(w)) return -1;
    health_res r = {0};
    if (jr_node_health(jr_sim_node(w->sim, i), health_cb, &r) != 0) return -1;
    wait_flag(w, &r.done, 5 * SEC);
    if (!r.done) return -1; /* a node that crashed meanwhile answers with JR_ECLOSED */
    if (!r.healthy && only_replicas_lost(w, i, &r)) return 1;
    if (why && !r.healthy) snprintf(why, cap, "n%u: %s", i, r.why);
    return r.healthy;
}

/* For a failure: every unwell group of every node, as each node's replica of it sees itself
 * (jr_node_group + jr_group_status_get), to stderr. */
typedef struct unwell_res {
    int done, meta_current;
    uint64_t ids[16];
    char text[16][96];
    size_t n;
} unwell_res;

static void unwell_cb(void *arg, int status, const char *msg, const jr_node_health_info *h)
{
    (void)msg;
    unwell_res *r = arg;
    r->done = 1;
    r->meta_current = status == 0 && h && h->meta_current;
    if (status == 0 && h && !h->meta_current && r->n < 16) {
        /* the meta group's id is the first above the host's range (lib/js/js.h); diagnostics
         * only */
        r->ids[r->n] = JR_GROUP_ID_HOST_MAX + 1;
        snprintf(r->text[r->n++], sizeof r->text[0], "meta: %s", h->meta_text);
    }
    for (size_t i = 0; status == 0 && h && i < h->ngroups && r->n < 16; i++) {
        r->ids[r->n] = h->groups[i]->group;
        snprintf(r->text[r->n++], sizeof r->text[0], "%s", h->groups[i]->text);
    }
}

void dump_unwell(world *w, FILE *out)
{
    static const char *const roles[] = {"follower", "candidate", "leader", "observer"};
    for (unsigned i = 0; i < w->n; i++) {
        if (!node_up(w, i) || w->removed[i]) continue;
        unwell_res r = {0};
        if (jr_node_health(jr_sim_node(w->sim, i), unwell_cb, &r) != 0) continue;
        wait_flag(w, &r.done, 5 * SEC);
        for (size_t g = 0; g < r.n; g++) {
            fprintf(out, "  n%u reports group %llu unwell: %s\n", i, (unsigned long long)r.ids[g],
                    r.text[g]);
            for (unsigned j = 0; j < w->n; j++) {
                jr_node *nd = jr_sim_node(w->sim, j);
                jr_group *gr = nd ? jr_node_group(nd, r.ids[g]) : NULL;
                if (!gr) continue;
                jr_group_status st;
                memset(&st, 0, sizeof st);
                st.size = sizeof st;
                if (jr_group_status_get(gr, &st) != 0) continue;
                const char *leader = jr_group_leader(gr);
                fprintf(out,
                        "    n%u: %s term %llu commit %llu applied %llu last %llu snapshot %llu "
                        "peers %zu%s%s%s leader %s\n",
                        j, st.role >= 0 && st.role < 4 ? roles[st.role] : "?",
                        (unsigned long long)st.term, (unsigned long long)st.commit_index,
                        (unsigned long long)st.applied_index, (unsigned long long)st.last_index,
                        (unsigned long long)st.snapshot_index, st.npeers,
                        st.damaged ? " DAMAGED" : "", st.fsm_failed ? " FSM_FAILED" : "",
                        st.unvouched ? " UNVOUCHED" : "", leader ? leader : "(none)");
                for (size_t p = 0; p < st.npeers; p++) {
                    jr_peer_status ps;
                    memset(&ps, 0, sizeof ps);
                    ps.size = sizeof ps;
                    if (jr_group_peer(gr, p, &ps) != 0) continue;
                    fprintf(out, "      peer %s voter %d current %d match %llu%s%s\n", ps.name,
                            ps.voter, ps.current, (unsigned long long)ps.match_index,
                            ps.damaged ? " damaged" : "", ps.unvouched ? " unvouched" : "");
                }
            }
        }
    }
}

int cluster_healthy(world *w, char *why, size_t cap)
{
    for (unsigned i = 0; i < w->n; i++)
        if (!w->removed[i] && node_healthy(w, i, why, cap) != 1) {
            if (!node_up(w, i) && why) snprintf(why, cap, "n%u is down", i);
            return 0;
        }
    return 1;
}

/* Nodes ----------------------------------------------------------------------------------------*/

static void crash(world *w, unsigned i, uint64_t restart_in)
{
    if (!node_up(w, i)) return;
    if (jr_sim_crash(w->sim, i) != 0) return;
    w->down[i] = 1;
    w->paused_until[i] = 0;
    w->restart_at[i] = now_ns(w) + restart_in;
}

static void restart(world *w, unsigned i)
{
    vfault_clear(&w->vf[i]);
    int rc = jr_sim_restart(w->sim, i);
    int vic = (int)i == w->victim || (int)i == w->victim2;
    nem_note(w, "restart n%u%s: %s", i, vic ? " (disk victim)" : "", rc ? jr_err_name(rc) : "ok");
    if (rc != 0) {
        violation(w, "restart", "", -1, 0, -1, "n%u does not reopen: %s%s", i, jr_err_name(rc),
                  vic ? " (after its disk fault)" : "");
        w->restart_at[i] = now_ns(w) + SEC; /* try again, for the liveness check */
        return;
    }
    w->down[i] = 0;
}

static int up_count(world *w)
{
    int m = 0;
    for (unsigned i = 0; i < w->n; i++) m += node_up(w, i);
    return m;
}

/* Partitions ---------------------------------------------------------------------------------*/

static void shuffle(world *w, unsigned *a, unsigned n)
{
    for (unsigned j = n; j > 1; j--) {
        unsigned p = (unsigned)rng_below(&w->r, j), t = a[j - 1];
        a[j - 1] = a[p];
        a[p] = t;
    }
}

static void do_partition(world *w)
{
    unsigned all[MAXN];
    for (unsigned i = 0; i < w->n; i++) all[i] = i;
    shuffle(w, all, w->n);
    jr_sim_heal(w->sim);
    uint64_t dice = rng_below(&w->r, 100);
    w->partitions++;
    if (dice < 20) {
        w->partitioned = 0;
        nem_note(w, "heal partitions");
    } else if (dice < 40) {
        jr_sim_partition(w->sim, all, 1);
        w->partitioned = 1;
        nem_note(w, "partition: isolate n%u", all[0]);
    } else if (dice < 60) {
        unsigned k = 1 + (unsigned)rng_below(&w->r, (w->n - 1) / 2);
        jr_sim_partition(w->sim, all, k);
        w->partitioned = 1;
        nem_note(w, "partition: minority n%u%s%s | the rest", all[0], k > 1 ? " n" : "",
                 k > 1 ? jr_sim_name(w->sim, all[1]) + 1 : "");
    } else if (dice < 80) {
        unsigned k = 1 + (unsigned)rng_below(&w->r, 3);
        char buf[120] = "";
        size_t len = 0;
        for (unsigned j = 0; j < k; j++) {
            unsigned a = (unsigned)rng_below(&w->r, w->n), b = (unsigned)rng_below(&w->r, w->n);
            if (a == b) b = (a + 1) % w->n;
            jr_sim_cut(w->sim, a, b);
            len += (size_t)snprintf(buf + len, sizeof buf - len, " n%u->n%u", a, b);
            if (len >= sizeof buf) len = sizeof buf - 1;
        }
        w->partitioned = 1;
        nem_note(w, "partition: one-way cuts%s", buf);
    } else {
        /* bridge: all[0] talks to both halves, which do not talk to each other */
        unsigned rest = w->n - 1, half = rest / 2;
        for (unsigned a = 1; a <= half; a++)
            for (unsigned b = half + 1; b < w->n; b++) {
                jr_sim_cut(w->sim, all[a], all[b]);
                jr_sim_cut(w->sim, all[b], all[a]);
            }
        w->partitioned = 1;
        nem_note(w, "partition: bridge n%u between %u and %u nodes", all[0], half, rest - half);
    }
}

static void set_all_links(world *w, const jr_sim_link *l)
{
    for (unsigned a = 0; a < w->n; a++)
        for (unsigned b = 0; b < w->n; b++)
            if (a != b) jr_sim_set_link(w->sim, a, b, l);
}

static void do_net(world *w)
{
    jr_sim_link l;
    jr_sim_link_init(&l);
    if (rng_pct(&w->r, 35)) {
        set_all_links(w, &l);
        nem_note(w, "net: perfect links");
        return;
    }
    l.drop = (double)rng_below(&w->r, 15) / 100.0;
    l.duplicate = (double)rng_below(&w->r, 10) / 100.0;
    l.reorder = (double)rng_below(&w->r, 20) / 100.0;
    l.delay_min_ns = 100000;
    l.delay_max_ns = (500 + rng_below(&w->r, 30000)) * 1000ull;
    int all = rng_pct(&w->r, 50);
    unsigned node = (unsigned)rng_below(&w->r, w->n);
    for (unsigned a = 0; a < w->n; a++)
        for (unsigned b = 0; b < w->n; b++)
            if (a != b && (all || a == node || b == node)) jr_sim_set_link(w->sim, a, b, &l);
    nem_note(w, "net: %s drop %.2f dup %.2f reorder %.2f delay up to %.1f ms",
             all ? "every link" : jr_sim_name(w->sim, node), l.drop, l.duplicate, l.reorder,
             (double)l.delay_max_ns / 1e6);
}

/* Disk faults ---------------------------------------------------------------------------------*/

#define MAX_FILES 256
typedef struct file_ent {
    char path[128];
    uint64_t size;
    int target; /* 0 wal segment, 1 store block, 2 snapshot */
} file_ent;
typedef struct file_list {
    file_ent f[MAX_FILES];
    size_t n;
} file_list;
static const char *const target_names[] = {"wal segment", "store block", "snapshot"};

static int classify(const char *path)
{
    size_t len = strlen(path);
    if (!strncmp(path, "/wal/snap/", 10)) return 2;
    if (!strncmp(path, "/wal/", 5) && strrchr(path, '/') == path + 4 && len > 4 &&
        !strcmp(path + len - 4, ".wal"))
        return 0;
    if (!strncmp(path, "/store/", 7) && len > 4 && !strcmp(path + len - 4, ".blk")) return 1;
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

/* Records latent damage in node v's file `path`: in the second slot when the first holds
 * another node's (disk_victims 2), else in the first. */
static void set_taint(world *w, unsigned v, const char *path)
{
    if (w->disk_victims == 2 && w->taint_node >= 0 && w->taint_node != (int)v) {
        w->taint2_node = (int)v;
        snprintf(w->taint2_path, sizeof w->taint2_path, "%s", path);
        return;
    }
    w->taint_node = (int)v;
    snprintf(w->taint_path, sizeof w->taint_path, "%s", path);
}

/* Damages crashed node v's disk one of the ways the fault model allows. */
static void damage(world *w, unsigned v)
{
    static file_list l;
    memset(&l, 0, sizeof l);
    jr_sim_files(w->sim, v, list_cb, &l);
    const file_ent *newest = NULL;
    for (size_t j = 0; j < l.n; j++)
        if (l.f[j].target == 0) newest = &l.f[j]; /* strcmp order: the newest is last */
    unsigned kind = (unsigned)rng_below(&w->r, 4);
    const file_ent *fe = l.n ? &l.f[rng_below(&w->r, l.n)] : NULL;
    if (kind != 0 && (!fe || fe->size == 0)) kind = 0;
    if (kind == 0) {
        /* the newest WAL segment's tail (what a lost cache loses), or any file's (Jepsen's
         * truncate-file) */
        const file_ent *t = fe && fe->size && rng_pct(&w->r, 50) ? fe : newest;
        if (!t || !t->size) {
            nem_note(w, "disk n%u: no file to damage", v);
            return;
        }
        uint64_t cut = 1 + rng_below(&w->r, rng_pct(&w->r, 50) ? 4096 : t->size);
        if (cut > t->size) cut = t->size;
        jr_sim_cut_tail(w->sim, v, t->path, cut);
        nem_note(w, "disk n%u: tail cut, the last %llu of %llu bytes of %s %s", v,
                 (unsigned long long)cut, (unsigned long long)t->size, target_names[t->target],
                 t->path);
    } else if (kind == 1) {
        uint64_t off = rng_below(&w->r, fe->size), len = 1 + rng_below(&w->r, 4096);
        unsigned nbits = 1 + (unsigned)rng_below(&w->r, 8);
        jr_sim_flip_bits(w->sim, v, fe->path, off, len, nbits);
        set_taint(w, v, fe->path);
        nem_note(w, "disk n%u: %u bits flipped in [%llu, +%llu) of %s %s", v, nbits,
                 (unsigned long long)off, (unsigned long long)len, target_names[fe->target],
                 fe->path);
    } else if (kind == 2) {
        uint64_t off = rng_below(&w->r, fe->size), len = 1 + rng_below(&w->r, 65536);
        jr_sim_zero(w->sim, v, fe->path, off, len);
        set_taint(w, v, fe->path);
        nem_note(w, "disk n%u: zeroed [%llu, +%llu) of %s %s", v, (unsigned long long)off,
                 (unsigned long long)len, target_names[fe->target], fe->path);
    } else {
        jr_sim_remove_file(w->sim, v, fe->path);
        nem_note(w, "disk n%u: deleted %s %s (%llu bytes)", v, target_names[fe->target], fe->path,
                 (unsigned long long)fe->size);
    }
}

typedef struct find_file {
    const char *path;
    int found;
} find_file;

static int find_cb(void *arg, const char *path, uint64_t size)
{
    (void)size;
    find_file *f = arg;
    if (!strcmp(path, f->path)) f->found = 1;
    return 0;
}

/* The node that still carries latent damage (a flipped or zeroed file it has not removed);
 * -1 if none. */
static int tainted(world *w)
{
    if (w->taint_node < 0) return -1;
    find_file f = {w->taint_path, 0};
    jr_sim_files(w->sim, (unsigned)w->taint_node, find_cb, &f);
    if (!f.found) {
        nem_note(w, "n%d no longer holds the damaged %s", w->taint_node, w->taint_path);
        w->taint_node = -1;
    }
    return w->taint_node;
}

/* The second taint slot's node, -1 if none (as tainted()). */
static int tainted2(world *w)
{
    if (w->taint2_node < 0) return -1;
    find_file f = {w->taint2_path, 0};
    jr_sim_files(w->sim, (unsigned)w->taint2_node, find_cb, &f);
    if (!f.found) {
        nem_note(w, "n%d no longer holds the damaged %s", w->taint2_node, w->taint2_path);
        w->taint2_node = -1;
    }
    return w->taint2_node;
}

/* disk_victims 2: 1 if damaging node v leaves at most two nodes faulty — victims not whole
 * again, nodes with latent damage, the node of a pending rollback, and v. */
static int second_victim_ok(world *w, int v)
{
    int set[6] = {w->victim, w->victim2, tainted(w), tainted2(w), w->copy ? w->copy_node : -1, v};
    int distinct = 0;
    for (int a = 0; a < 6; a++) {
        if (set[a] < 0) continue;
        int dup = 0;
        for (int b = 0; b < a && !dup; b++) dup = set[b] == set[a];
        distinct += !dup;
    }
    return distinct <= 2;
}

/* Records node v as a disk victim (disk_victims 2: in the second slot when the first holds
 * another node). */
static void set_victim(world *w, int v)
{
    if (w->disk_victims == 2 && w->victim >= 0 && w->victim != v)
        w->victim2 = v;
    else
        w->victim = v;
}

static void do_disk(world *w)
{
    if (w->disk_victims == 2) {
        if (w->copy || w->ioerr_node >= 0) return;
        int v = pick_node(w);
        if (v < 0 || !second_victim_ok(w, v)) return;
        if (rng_pct(&w->r, 25)) {
            if (w->admin_busy) return;
            if (jr_sim_disk_save(w->sim, (unsigned)v, &w->copy) != 0) return;
            w->copy_node = v;
            w->rollback_at = now_ns(w) + (500 + rng_below(&w->r, 1500)) * MS;
            w->quiet_groups_until = w->rollback_at + 1;
            nem_note(w, "disk n%d: copy saved for a rollback", v);
            return;
        }
        set_victim(w, v);
        w->disk_hit[v] = 1;
        w->disk_faults++;
        note_lone_groups(w, (unsigned)v);
        crash(w, (unsigned)v, (rng_below(&w->r, 1500)) * MS);
        nem_note(w, "crash n%d (disk victim%s)", v, w->victim2 >= 0 ? ", two at once" : "");
        damage(w, (unsigned)v);
        /* half of the time a second node's disk fails with it (one batch of disks, one
         * event): both crash and restart damaged, in any order */
        int u = pick_node(w);
        if (w->victim2 < 0 && u >= 0 && u != v && second_victim_ok(w, u) && rng_pct(&w->r, 50)) {
            set_victim(w, u);
            w->disk_hit[u] = 1;
            w->disk_faults++;
            note_lone_groups(w, (unsigned)u);
            crash(w, (unsigned)u, (rng_below(&w->r, 1500)) * MS);
            nem_note(w, "crash n%d (disk victim, two at once)", u);
            damage(w, (unsigned)u);
        }
        return;
    }
    /* Not once a server removal was sent either: the removed server is lost for good, a
     * faulty replica of every group it held until the re-placement caught up (a group may stay
     * under-replicated), and damage to another replica of such a group makes two of three.
     * Seed 91 (five servers): n1 removed while n3 was paused, D0's entry committed by n1 and n4
     * alone, then n4's WAL segment deleted: nobody whole holds it, and n3 is rightly refused. */
    if (w->victim >= 0 || w->copy || w->ioerr_node >= 0 || w->removal_sent) return;
    int v = pick_node(w), t = tainted(w);
    if (v < 0 || (t >= 0 && v != t)) return; /* only the tainted node may be damaged again */
    if (rng_pct(&w->r, 25)) {
        /* a rollback: save now (no admin operation creating groups in flight, none started
         * until the rollback, and no drain in force: it moves replicas onto other servers, the
         * victim among them), roll back a little later */
        if (w->admin_busy) return;
        for (unsigned x = 0; x < w->n; x++)
            if (w->draining[x]) return;
        if (jr_sim_disk_save(w->sim, (unsigned)v, &w->copy) != 0) return;
        w->copy_node = v;
        w->rollback_at = now_ns(w) + (500 + rng_below(&w->r, 1500)) * MS;
        w->quiet_groups_until = w->rollback_at + 1;
        nem_note(w, "disk n%d: copy saved for a rollback", v);
        return;
    }
    w->victim = v;
    w->disk_hit[v] = 1;
    w->disk_faults++;
    note_lone_groups(w, (unsigned)v);
    crash(w, (unsigned)v, (rng_below(&w->r, 1500)) * MS);
    nem_note(w, "crash n%d (disk victim)", v);
    damage(w, (unsigned)v);
}

static void do_rollback(world *w)
{
    unsigned v = (unsigned)w->copy_node;
    note_lone_groups(w, v);
    if (node_up(w, v)) crash(w, v, (rng_below(&w->r, 1500)) * MS);
    if (!node_up(w, v) && jr_sim_disk_restore(w->sim, v, w->copy) == 0) {
        set_victim(w, (int)v);
        w->disk_hit[v] = 1;
        w->disk_faults++;
        nem_note(w, "crash n%u (disk victim); disk rolled back to the copy", v);
    }
    jr_sim_disk_free(w->copy);
    w->copy = NULL;
    w->copy_node = -1;
}

/* The scheduler --------------------------------------------------------------------------------*/

static void do_fault(world *w, int kind)
{
    uint64_t now = now_ns(w);
    switch (kind) {
    case F_PARTITION:
        do_partition(w);
        break;
    case F_NET:
        do_net(w);
        break;
    case F_CRASH: {
        int i = pick_node(w);
        if (i < 0 || (int)i == w->ioerr_node) break;
        uint64_t in = (100 + rng_below(&w->r, 2900)) * MS;
        crash(w, (unsigned)i, in);
        w->crashes++;
        nem_note(w, "crash n%d, restart in %.1f s", i, (double)in / 1e9);
        break;
    }
    case F_POWER:
        if (up_count(w) < (int)w->n || w->ioerr_node >= 0) break;
        for (unsigned i = 0; i < w->n; i++) crash(w, i, (200 + rng_below(&w->r, 1800)) * MS);
        w->power_losses++;
        nem_note(w, "power loss of every node");
        break;
    case F_PAUSE: {
        int i = pick_node(w);
        if (i < 0) break;
        uint64_t ns = (100 + rng_below(&w->r, 2900)) * MS;
        if (jr_sim_pause(w->sim, (unsigned)i, ns) == 0) {
            w->paused_until[i] = now + ns;
            w->pauses++;
            nem_note(w, "pause n%d for %.1f s", i, (double)ns / 1e9);
        }
        break;
    }
    case F_CLOCK: {
        unsigned i = (unsigned)rng_below(&w->r, w->n);
        int64_t jump = (int64_t)(500 + rng_below(&w->r, 9500)) * (int64_t)MS;
        if (rng_pct(&w->r, 50)) jump = -jump;
        jr_sim_set_wall(w->sim, i, (uint64_t)((int64_t)jr_sim_wall(w->sim, i) + jump));
        w->clock_jumps++;
        nem_note(w, "clock n%u jumps %+.1f s", i, (double)jump / 1e9);
        break;
    }
    case F_DISK:
        do_disk(w);
        break;
    case F_IOERR: {
        if (w->ioerr_node >= 0 || w->victim >= 0 || w->victim2 >= 0 || w->copy) break;
        int i = pick_node(w);
        if (i < 0) break;
        int err = rng_pct(&w->r, 50) ? JR_EIO : JR_ENOSPC;
        uint64_t every = rng_pct(&w->r, 50) ? 1 : 2 + rng_below(&w->r, 4);
        vfault_set(&w->vf[i], err, every);
        w->ioerr_node = i;
        w->ioerr_until = now + (50 + rng_below(&w->r, 450)) * MS;
        w->ioerrs++;
        nem_note(w, "ioerr n%d: %s on %s write and sync", i, jr_err_name(err),
                 every == 1 ? "every" : "every few");
        break;
    }
    }
}

void faults_step(world *w)
{
    uint64_t now = now_ns(w);
    for (unsigned i = 0; i < w->n; i++)
        if (w->down[i] && w->restart_at[i] <= now) restart(w, i);
    if (w->copy && now >= w->rollback_at) do_rollback(w);
    if (w->ioerr_node >= 0 && now >= w->ioerr_until) {
        unsigned i = (unsigned)w->ioerr_node;
        vfault_clear(&w->vf[i]);
        nem_note(w, "ioerr n%u ends (%llu calls failed); restart it", i,
                 (unsigned long long)w->vf[i].failed);
        w->vf[i].failed = 0;
        crash(w, i, (100 + rng_below(&w->r, 900)) * MS);
        w->ioerr_node = -1;
    }
    if (now < w->next_fault_ns) return;
    w->next_fault_ns = now + (200 + rng_below(&w->r, 1300)) * MS;
    /* the victim is whole again once it reports healthy (and the cluster around it does) */
    if (w->victim >= 0 && node_up(w, (unsigned)w->victim) &&
        node_healthy(w, (unsigned)w->victim, NULL, 0) == 1) {
        nem_note(w, "n%d (disk victim) reports healthy", w->victim);
        w->victim = -1;
    }
    if (w->victim2 >= 0 && node_up(w, (unsigned)w->victim2) &&
        node_healthy(w, (unsigned)w->victim2, NULL, 0) == 1) {
        nem_note(w, "n%d (disk victim) reports healthy", w->victim2);
        w->victim2 = -1;
    }
    int kinds[F_NKINDS], nk = 0;
    for (int k = 0; k < F_NKINDS; k++)
        if (w->faults & (1u << k)) kinds[nk++] = k;
    if (!nk) return;
    do_fault(w, kinds[rng_below(&w->r, (uint64_t)nk)]);
}

void faults_heal(world *w)
{
    jr_sim_heal(w->sim);
    jr_sim_link l;
    jr_sim_link_init(&l);
    set_all_links(w, &l);
    w->partitioned = 0;
    if (w->copy) {
        jr_sim_disk_free(w->copy);
        w->copy = NULL;
        w->copy_node = -1;
    }
    w->quiet_groups_until = 0;
    for (unsigned i = 0; i < w->n; i++) vfault_clear(&w->vf[i]);
    /* a node whose WAL failed stays failed until it is reopened (jr_node_tick: JR_EIO) */
    if (w->ioerr_node >= 0) {
        nem_note(w, "ioerr n%d ends; restart it", w->ioerr_node);
        crash(w, (unsigned)w->ioerr_node, 0);
    }
    w->ioerr_node = -1;
    for (unsigned i = 0; i < w->n; i++)
        if (w->down[i]) restart(w, i);
    uint64_t latest = 0;
    for (unsigned i = 0; i < w->n; i++)
        if (jr_sim_wall(w->sim, i) > latest) latest = jr_sim_wall(w->sim, i);
    for (unsigned i = 0; i < w->n; i++) jr_sim_set_wall(w->sim, i, latest);
    nem_note(w, "heal: links whole and perfect, every node running, clocks equal");
}
