/*
 * group — the lifecycle of one group replica on a node, and the raft core's io callbacks.
 *
 * Opening a group creates its raft core and gives it its durable past:
 *  - recovered state (a WAL stash and/or a snapshot file) is loaded with jr__raft_load_*: the
 *    newest snapshot restores the fsm and becomes the log's base, then the hard state, then the
 *    contiguous run of entries after the snapshot (terms never decreasing, dissertation §3.5);
 *    the initial voter list of the config is then ignored (the log knows the membership);
 *  - a brand-new group whose config lists this server among the voters bootstraps: a CONFIG
 *    entry at index 1, term 1, identical on every initial voter;
 *  - a server not among the voters joins empty and waits for the leader to add it
 *    (jr_group_add_observer on the leader) and send it the log or a snapshot; until it holds
 *    some of it, it is judged by the floor the caller gives (raft cfg join_*: a term and a
 *    committed entry of the group): it may be a server removed and added back, whose earlier
 *    replica went with all it acknowledged;
 *  - either of the last two on a node an earlier life ran on (recover.c: its mark or a WAL
 *    segment was there) may be a replica whose every record was lost (a WAL tail cut, files
 *    rolled back to a copy from before it joined): it opens unvouched like a recovered one
 *    (a joiner damaged too), unless the caller says the group is new to this server in this
 *    life (jr__group_create's fresh).
 *
 * Damaged replicas. When the WAL reports that records of a group may be lost (or damage it
 * cannot attribute), the group opens with whatever survived, marked damaged. A damaged replica
 * may have forgotten a vote it granted or entries it acknowledged, so it must not help elect
 * anyone: it never grants a vote (incoming VOTE requests are dropped before the core sees them)
 * and never campaigns (its outgoing VOTE requests are dropped). It still follows a leader,
 * receives the log and snapshots, and applies committed entries; jr_group_status_get reports
 * damaged = 1 and proposals fail with JR_EDAMAGED. Repair is by its peers: they vouch for what
 * it holds and its leader sends it what it lost (raft/vouch.c); for a member gone for good that
 * it would wait for forever, an operator may declare it gone (jr_group_rescue, jr_node_rescue:
 * unsafe, group.h says why); a server whose removal the meta state holds is declared gone by
 * that alone (jr__node_peer_gone, api_group.c says why that is safe).
 *
 * Closing a replica keeps its raft core dormant in node->groups (no inputs, no timer): pending
 * durable state is still flushed, and jr_group_open of the same id revives it with a new fsm
 * (restored from the newest snapshot, then re-applied from the log).
 */
#include <string.h>

#include "node/node.h"
#include "util/container.h"
#include "util/alloc.h"

#define DEFAULT_SNAPSHOT_ENTRIES 8192

void jr__group_peer_removed(jr_group *g, const jr__peer *p)
{
    jr_node *n = g->node;
    if (n->upper_tab && n->upper_tab->unassigned && n->upper_tab->unassigned(n->upper, g->id)) {
        /* The layer above dropped this server from the group's placement: the group's leader
         * may have removed this replica by a change it never received (a pair's change to
         * the other voter alone commits at once, on that voter alone), and a stand-in would
         * then lead a group that no longer counts it. Not told: the group waits; the replica
         * is released once the placement change converged (js/meta_replica.c). Logged for a
         * pair of voters this replica and p, not yet told (the rule would have applied). */
        if (jr__raft_stand_in_state(g->raft, p->id) == JR__STAND_NOT_REMOVED)
            jr__node_log(n, JR_LOG_WARN,
                         "group %llu: its voter '%s' was removed for good, but this server is "
                         "no longer in the group's assignment (the group may have removed this "
                         "replica): this replica does not stand in for it",
                         (unsigned long long)g->id, p->name);
        return;
    }
    if (jr__raft_peer_removed(g->raft, p->id) != 0) return; /* told before, or itself */
    static const char *const why[] = {
        [JR__STAND_DAMAGED] = "this replica is damaged and may lack entries the two committed",
        [JR__STAND_UNVOUCHED] = "this replica restarted and is not vouched for yet: it may lack "
                                "entries the two committed",
        [JR__STAND_UNCOMMITTED] = "the configuration it knows committed, or a later one, has "
                                  "other voters",
        [JR__STAND_OBSERVERS] = "an observer the removed server could have promoted is no "
                                "longer a member",
    };
    int st = jr__raft_stand_in_state(g->raft, p->id);
    if (st == JR__STAND_YES) {
        int obs = jr__raft_stand_in_observers(g->raft, p->id) != 0;
        jr__node_log(n, JR_LOG_WARN,
                     "group %llu: its other voter '%s' was removed for good: this replica, "
                     "which holds every entry the two committed, stands in for its vote%s",
                     (unsigned long long)g->id, p->name,
                     obs ? ", with the votes of the observers it could have promoted" : "");
        jr__group_ready(g);
        jr__node_want_tick(n);
    } else if (st >= JR__STAND_DAMAGED && st <= JR__STAND_OBSERVERS) {
        jr__node_log(n, JR_LOG_WARN,
                     "group %llu: its other voter '%s' was removed for good, and the group "
                     "needs both voters; this replica does not stand in for it (%s): the group "
                     "waits",
                     (unsigned long long)g->id, p->name, why[st]);
    }
}

jr__raft *jr__group_raft(const jr_group *g)
{
    return g->raft;
}

const jr__raft *jr__group_consensus(const jr_group *g)
{
    return g->raft;
}

void jr__group_wake(jr_group *g)
{
    if (g->closed || !jr__raft_quiet(g->raft)) return;
    jr__raft_wake(g->raft, g->node->now);
    jr__group_ready(g);
    jr__node_want_tick(g->node);
}

int jr__group_closed(const jr_group *g)
{
    return g->closed;
}

uint64_t jr__group_applied(const jr_group *g)
{
    return g->applied;
}

uint64_t jr__group_snapshot_entries(const jr_group *g)
{
    return g->snapshot_entries;
}

void jr__group_cap_log(jr_group *g, uint64_t bytes)
{
    jr__raft_cap_log(g->raft, bytes);
}

void jr__group_set_snapshot_entries(jr_group *g, uint64_t entries)
{
    g->snapshot_entries = entries;
}

int jr__group_damaged(const jr_group *g)
{
    return g->damaged || jr__raft_damaged(g->raft);
}

int jr__group_lost(const jr_group *g)
{
    return (g->damaged && !g->fsm_failed) || jr__raft_damaged(g->raft);
}

int jr__group_peer_damaged(const jr_group *g, jr__id peer)
{
    if (peer == g->node->self) return jr__group_damaged(g);
    if (jr__raft_role(g->raft) != JR_LEADER) return 0; /* only a leader tracks its members */
    const jr__conf *c = jr__raft_conf(g->raft);
    for (uint32_t k = 0; k < c->n; k++) {
        jr__progress pr;
        if (c->m[k].id == peer && jr__raft_progress(g->raft, k, &pr) == 0) return pr.damaged;
    }
    return 0;
}

void jr__group_ready(jr_group *g)
{
    if (g->in_ready) return;
    g->in_ready = 1;
    g->ready_next = g->node->ready;
    g->node->ready = g;
}

/* Takes g off the ready list (only needed when g is freed). */
static void unready(jr_group *g)
{
    if (!g->in_ready) return;
    for (jr_group **pp = &g->node->ready; *pp; pp = &(*pp)->ready_next)
        if (*pp == g) {
            *pp = g->ready_next;
            g->in_ready = 0;
            return;
        }
    for (jr_group **pp = &g->node->held; *pp; pp = &(*pp)->ready_next)
        if (*pp == g) {
            *pp = g->ready_next;
            break;
        }
    g->in_ready = 0;
}

/* Takes g off the groups waiting for the host's sync (only needed when g is freed). */
static void unsync(jr_group *g)
{
    if (!g->in_sync) return;
    for (jr_group **pp = &g->node->syncing; *pp; pp = &(*pp)->sync_next)
        if (*pp == g) {
            *pp = g->sync_next;
            break;
        }
    g->in_sync = 0;
}

/* g's timer is due (from jr_node_tick's pass over the node's heap). */
static void group_fire(void *ctx, jr__timer *t)
{
    (void)ctx;
    jr__group_tick(JR__CONTAINER_OF(t, jr_group, timer));
}

void jr__group_rearm(jr_group *g)
{
    jr_node *n = g->node;
    jr__live_sync(g); /* quiet-group lists (liveness.h) */
    if (g->closed) {
        jr__heap_cancel(&n->timers, &g->timer);
        return;
    }
    /* a group waiting for a campaign round is started by the node (liveness.h) */
    uint64_t d = g->live.waiting ? UINT64_MAX : jr__raft_deadline(g->raft);
    if (g->op_deadline < d) d = g->op_deadline;
    if (d == UINT64_MAX) {
        jr__heap_cancel(&n->timers, &g->timer);
        return;
    }
    if (jr__heap_arm(&n->timers, &g->timer, d) != 0) {
        /* Out of memory growing the heap: tick this group at the next opportunity instead. */
        jr__group_ready(g);
        jr__node_want_tick(n);
    }
}

void jr__group_tick(jr_group *g)
{
    jr_node *n = g->node;
    if (g->closed) return;
    /* a due election timer runs only when the node has room for the campaign (liveness.h) */
    if (jr__raft_deadline(g->raft) <= n->now &&
        (jr__raft_role(g->raft) == JR_LEADER || jr__live_may_campaign(g)))
        jr__raft_tick(g->raft, n->now);
    if (g->transfer && g->op_deadline <= n->now) {
        jr__op_complete(n, g->transfer, JR_ETIMEDOUT, 0);
        g->transfer = NULL;
        g->op_deadline = UINT64_MAX;
    }
    jr__group_ready(g);
}

/* raft io ----------------------------------------------------------------------------------*/

static void io_send(void *ctx, jr__raft *r, const jr__msg *m)
{
    jr_group *g = ctx;
    (void)r;
    if (g->damaged && m->type == JR__MSG_VOTE) return; /* a damaged replica never campaigns */
    jr__peer_queue(g->node, m);
}

static void io_notify(void *ctx, jr__raft *r)
{
    (void)r;
    jr__group_ready(ctx);
}

/* Opening ----------------------------------------------------------------------------------*/

int jr__group_set_conf(jr_group *g, const jr__conf *c)
{
    size_t len = jr__conf_encoded_len(c);
    uint8_t *p = jr__malloc(g->node->alloc, len);
    if (!p) return JR_ENOMEM;
    jr__conf_encode(c, p);
    jr__free(g->node->alloc, g->conf_bytes);
    g->conf_bytes = p;
    g->conf_len = (uint32_t)len;
    return 0;
}

static uint64_t mix_seed(uint64_t a, uint64_t b)
{
    uint64_t x = a ^ (b * 0x9e3779b97f4a7c15ULL);
    return jr__splitmix64(&x);
}

void jr__group_mark_snapshot(jr_group *g, uint64_t index, uint64_t term)
{
    if (g->marker_pending && g->marker_index >= index) return;
    if (!g->marker_pending) g->marker_at = g->node->now;
    g->marker_pending = 1;
    g->marker_index = index;
    g->marker_term = term;
    jr__group_ready(g);
}

/* Loads recovered state into g's fresh raft core. */
static int group_load(jr_group *g, jr__stash *s)
{
    jr_node *n = g->node;
    jr__raft *r = g->raft;
    int rc;
    uint64_t si = 0, st = 0;
    jr__conf sc;
    memset(&sc, 0, sizeof sc);
    if (s->snap_index) {
        rc = jr__snap_load(g, s->snap_index, &si, &st, &sc);
        /* JR_EAUTH: a file this node's key cannot open is refused, not repaired over */
        if (rc == JR_ENOMEM || rc == JR_EAUTH) return rc;
        if (rc != 0) {
            g->damaged = 1;
            si = st = 0;
        }
    }
    if (s->compact_index > si) {
        /* The WAL forgot entries that no snapshot we can read covers. */
        jr__node_log(n, JR_LOG_ERROR, "group %llu: log compacted to %llu but no snapshot there",
                     (unsigned long long)g->id, (unsigned long long)s->compact_index);
        g->damaged = 1;
    }
    if (s->has_hs) {
        rc = jr__raft_load_hardstate(r, s->hs.term, s->hs.vote, s->hs.commit);
        if (rc != 0) return rc;
    }
    if (si) {
        rc = jr__raft_load_snapshot(r, si, st, &sc);
        if (rc != 0) return rc;
        rc = jr__group_set_conf(g, &sc);
        if (rc != 0) return rc;
        g->snap_index = si;
        g->snap_term = st;
        g->applied = si;
        /* A snapshot newer than the WAL's last marker (its marker was lost in a crash): tell
         * the WAL before this group writes anything after it. */
        if (si > s->compact_index) jr__group_mark_snapshot(g, si, st);
    }
    size_t k;
    uint64_t resumes;
    size_t end = jr__stash_span(s, si, st, &k, &resumes);
    if (resumes) {
        jr__node_log(n, JR_LOG_ERROR, "group %llu: log resumes at %llu, expected %llu",
                     (unsigned long long)g->id, (unsigned long long)resumes,
                     (unsigned long long)(si + 1));
        g->damaged = 1;
    }
    for (; k < end; k++) {
        const jr__stash_ent *se = &s->ents[k];
        jr__entry e = {se->term, se->index, se->type, se->len, s->arena + se->off};
        rc = jr__raft_load_entry(r, &e);
        if (rc != 0) return rc;
    }
    /* Whatever the WAL holds beyond what was loaded is still on disk: counting it as persisted
     * makes the first flush that writes there stage a truncation first, so a skipped suffix can
     * never come back after a later crash. */
    g->persisted = jr__raft_last_index(r);
    if (s->nents && s->ents[s->nents - 1].index > g->persisted)
        g->persisted = s->ents[s->nents - 1].index;
    if (s->damaged) g->damaged = 1;
    return 0;
}

static int build_conf(jr_node *n, const jr_group_config *cfg, jr__conf *c, int *self_in)
{
    memset(c, 0, sizeof *c);
    *self_in = 0;
    if (cfg->nvoters > JR__MAX_MEMBERS || (cfg->nvoters && !cfg->voters))
        return jr__node_err(n, JR_EINVAL, "group %llu: bad voter list",
                            (unsigned long long)cfg->id);
    for (size_t i = 0; i < cfg->nvoters; i++) {
        jr__peer *p = jr__peer_find_name(n, cfg->voters[i]);
        if (!p)
            return jr__node_err(n, JR_ENOTFOUND, "group %llu: voter '%s' is not a known server",
                                (unsigned long long)cfg->id,
                                cfg->voters[i] ? cfg->voters[i] : "(null)");
        if (jr__conf_find(c, p->id))
            return jr__node_err(n, JR_EINVAL, "group %llu: voter '%s' listed twice",
                                (unsigned long long)cfg->id, p->name);
        c->m[c->n].id = p->id;
        c->m[c->n].voter = 1;
        c->n++;
        if (p->id == n->self) *self_in = 1;
    }
    return 0;
}

/* Revives a closed replica with a new fsm. */
static int group_reopen(jr_group *g, const jr_group_config *cfg)
{
    jr_node *n = g->node;
    g->fsm = *cfg->fsm;
    g->snapshot_entries = cfg->snapshot_entries ? cfg->snapshot_entries : DEFAULT_SNAPSHOT_ENTRIES;
    g->applied = 0;
    if (g->snap_index) {
        uint64_t si, st;
        jr__conf sc;
        int rc = jr__snap_load(g, g->snap_index, &si, &st, &sc);
        if (rc != 0) return rc;
        rc = jr__group_set_conf(g, &sc);
        if (rc != 0) return rc;
        g->applied = si;
    }
    g->closed = 0;
    g->was_leader = 0;
    n->ngroups++;
    jr__group_rearm(g);
    jr__group_ready(g);
    return 0;
}

void jr__group_hold(jr_group *g, int on)
{
    jr__raft_hold(g->raft, on);
    jr__group_rearm(g); /* a released one's election timer may be due */
}

int jr__group_floor(const jr_group *g, jr__join_floor *out)
{
    const jr__raft *r = g->raft;
    out->term = jr__raft_term(r);
    out->last_index = jr__raft_commit_index(r);
    jr__entry e;
    if (jr__raft_entry(r, out->last_index, &e) == 0)
        out->last_term = e.term;
    else if (out->last_index == jr__raft_snapshot_index(r))
        out->last_term = jr__raft_snapshot_term(r);
    else
        return JR_ENOTFOUND;
    return 0;
}

int jr__group_create(jr_node *n, const jr_group_config *cfg_in, const jr__join_floor *floor,
                     int fresh, jr_group **out)
{
    jr_group_config cfg;
    jr_group_config_init(&cfg);
    size_t sz = cfg_in->size < sizeof cfg ? cfg_in->size : sizeof cfg;
    memcpy(&cfg, cfg_in, sz);
    cfg.size = sizeof cfg;
    if (cfg.id == 0 || !cfg.fsm || !cfg.fsm->apply || (cfg.fsm->snapshot && !cfg.fsm->restore))
        return jr__node_err(n, JR_EINVAL,
                            "group config needs a non-zero id and an fsm with "
                            "apply (and restore if it has snapshot)");

    jr_group *g = jr__map_get(&n->groups, cfg.id);
    if (g) {
        if (!g->closed)
            return jr__node_err(n, JR_EEXIST, "group %llu is already open",
                                (unsigned long long)cfg.id);
        int rc = group_reopen(g, &cfg);
        if (rc == 0) *out = g;
        return rc;
    }

    jr__conf conf;
    int self_in;
    int rc = build_conf(n, &cfg, &conf, &self_in);
    if (rc != 0) return rc;

    g = jr__calloc(n->alloc, 1, sizeof *g);
    if (!g) return JR_ENOMEM;
    g->node = n;
    g->id = cfg.id;
    g->fsm = *cfg.fsm;
    g->snapshot_entries = cfg.snapshot_entries ? cfg.snapshot_entries : DEFAULT_SNAPSHOT_ENTRIES;
    g->op_deadline = UINT64_MAX;
    jr__timer_init(&g->timer, group_fire);

    jr__raft_config rc_cfg;
    memset(&rc_cfg, 0, sizeof rc_cfg);
    rc_cfg.group = cfg.id;
    rc_cfg.self = n->self;
    rc_cfg.alloc = n->alloc;
    rc_cfg.confs = n->confs; /* groups on the same servers share one configuration */
    rc_cfg.election_timeout = n->election_ns;
    rc_cfg.heartbeat_interval = n->heartbeat_ns;
    /* a commit waits up to this for the next APPEND to carry it (raft.h) */
    rc_cfg.commit_delay = n->heartbeat_ns / JR__COMMIT_DELAY_DIV;
    rc_cfg.seed = mix_seed(n->seed, cfg.id);
    /* Every message fits in one frame with room for others (node.c set_limits). */
    rc_cfg.max_msg_bytes = n->max_msg_bytes;
    rc_cfg.max_entry_bytes = n->max_msg_bytes - 1024;
    rc_cfg.snap_chunk_bytes = n->max_frame / 4 < (256u << 10) ? n->max_frame / 4 : (256u << 10);
    rc_cfg.observer = !self_in;
    /* acknowledgements precede the sync: committed entries can be lost (raft.h) */
    rc_cfg.commit_may_be_lost = n->sync_policy == JR_SYNC_INTERVAL;
    if (!self_in && floor) { /* judged by its floor while its log is older (raft.h) */
        rc_cfg.join_term = floor->term;
        rc_cfg.join_last_term = floor->last_term;
        rc_cfg.join_last_index = floor->last_index;
    }
    rc_cfg.quiesce = JR__LIVE_QUIESCE; /* idle groups go quiet (liveness.h) */
    jr__raft_io io = {g, io_send, io_notify, jr__snap_read, jr__snap_write, jr__snap_install};
    rc = jr__raft_new(&rc_cfg, &io, &g->raft);
    if (rc != 0) {
        g->raft = NULL;
        goto fail;
    }

    jr__stash *s = jr__map_get(&n->stashes, cfg.id);
    if (s) {
        rc = group_load(g, s);
    } else if (self_in) {
        rc = jr__raft_bootstrap(g->raft, &conf);
    }
    if (rc != 0) goto fail;
    /* A node whose WAL was lost: every group it recovered, and every group it held before
     * (nothing recovered, not known to be new here: fresh), opens damaged and unvouched. */
    int lost_wal = n->wal_lost && (s || !fresh);
    if ((n->all_damaged && s) || lost_wal) g->damaged = 1;
    g->wal_damaged = s && (s->damaged || n->all_damaged);
    /* Nothing recovered on a node that ran before: a cut tail or a rollback of its files may
     * have taken every record of a group it was a member of (votes and acknowledgements
     * included), which looks just like a group new here. Unless the caller knows better
     * (fresh), it is treated as lost: unvouched, and a joiner, which knows no configuration
     * whose members it could ask, damaged too (it takes its leader's repair first, vouch.c). */
    int lost = !s && n->reborn && !fresh;
    if (lost && !self_in) g->damaged = 1;
    if (s || lost_wal || lost) {
        /* Recovered from disk: its storage may have lost records it acknowledged in ways no
         * local check tells from a torn write (a cut tail, files rolled back), so it is
         * unvouched until its peers answer (raft/vouch.c); damage found here is the core's to
         * report and to clear once a leader repaired the log. On a node whose WAL was lost
         * (recover.c, the node's mark) every group is: whatever it acknowledged is gone. */
        rc = jr__raft_load_unvouched(g->raft, g->damaged);
        if (rc != 0) goto fail;
        g->damaged = 0;
    }
    rc = jr__raft_start(g->raft, n->now);
    if (rc != 0) goto fail;
    /* servers an operator declared gone (jr_node_rescue): not waited for here either */
    for (uint8_t i = 0; i < n->nrescued && jr__raft_unvouched(g->raft); i++)
        (void)jr__raft_vouch_gone(g->raft, n->rescued[i], n->now);
    /* nor servers the meta state removed (jr__node_peer_gone) */
    for (size_t i = 0; i < n->npeers && jr__raft_unvouched(g->raft); i++)
        if (n->peers[i]->gone) (void)jr__raft_vouch_gone(g->raft, n->peers[i]->id, n->now);
    /* and a voter of two whose server's frames it refuses may be stood in for (raft/removed.c) */
    for (size_t i = 0; i < n->npeers; i++)
        if (n->peers[i]->removed) jr__group_peer_removed(g, n->peers[i]);
    if (jr__raft_unvouched(g->raft) && jr__raft_conf(g->raft)->n == 0) {
        /* recovery lost its configuration: it asks every server this node knows of (those
         * that do not host the group answer so), as it knows no member (raft/vouch.c) */
        jr__id *ids = n->npeers ? jr__calloc(n->alloc, n->npeers, sizeof *ids) : NULL;
        uint32_t k = 0;
        for (size_t i = 0; ids && i < n->npeers; i++) ids[k++] = n->peers[i]->id;
        if (ids) (void)jr__raft_vouch_hint(g->raft, ids, k); /* out of memory: a leader repairs */
        jr__free(n->alloc, ids);
    }
    rc = jr__map_put(&n->groups, g->id, g);
    if (rc != 0) goto fail;
    jr__node_released_forget(n, g->id); /* its replica is here again: it answers for itself */
    if (s) {
        jr__map_del(&n->stashes, cfg.id);
        jr__stash_free(n, s);
    }
    n->ngroups++;
    jr__group_rearm(g);
    jr__group_ready(g);
    *out = g;
    return 0;
fail:
    if (rc == JR_ENOMEM)
        jr__node_err(n, rc, "out of memory opening group %llu", (unsigned long long)cfg.id);
    unready(g);
    jr__heap_cancel(&n->timers, &g->timer);
    jr__snap_close_files(g);
    jr__raft_free(g->raft);
    jr__free(n->alloc, g->conf_bytes);
    jr__free(n->alloc, g);
    return rc;
}

/* Closing ----------------------------------------------------------------------------------*/

void jr__group_detach(jr_group *g, int status)
{
    jr_node *n = g->node;
    if (g->closed) return;
    g->closed = 1;
    jr__live_forget(g);
    n->ngroups--;
    jr__heap_cancel(&n->timers, &g->timer);
    jr__opq_fail_all(n, &g->pending, status);
    if (g->transfer) {
        jr__op_complete(n, g->transfer, status, 0);
        g->transfer = NULL;
    }
    g->op_deadline = UINT64_MAX;
    jr__snap_close_files(g);
    /* Stays on (or goes to) the ready list so that its unpersisted state is flushed. */
    jr__group_ready(g);
}

void jr__group_release(jr_group *g)
{
    jr__map_del(&g->node->groups, g->id);
    jr__group_free(g);
}

int jr__group_propose(jr_group *g, const void *data, size_t len, jr_propose_cb cb, void *arg,
                      uint64_t *index, uint64_t *term)
{
    jr_node *n = g->node;
    if (jr__group_damaged(g)) return JR_EDAMAGED;
    jr__op *op = NULL;
    if (cb && !(op = jr__op_get(n))) return JR_ENOMEM;
    int rc = jr__raft_propose(g->raft, n->now, data ? data : "", len, index);
    if (rc != 0) {
        if (op) jr__op_put(n, op);
        return rc;
    }
    *term = jr__raft_term(g->raft);
    if (op) {
        op->kind = JR__OP_PROPOSE;
        op->cb.propose = cb;
        op->arg = arg;
        op->index = *index;
        op->term = *term;
        jr__opq_push(&g->pending, op);
    }
    jr__group_ready(g);
    jr__node_want_tick(n);
    return 0;
}

void jr__group_free(jr_group *g)
{
    jr_node *n = g->node;
    jr__live_forget(g);
    jr__fsmr_forget(g);
    unready(g);
    unsync(g);
    jr__heap_cancel(&n->timers, &g->timer);
    jr__snap_close_files(g);
    jr__group_forget_joiners(g);
    jr__raft_free(g->raft);
    jr__free(n->alloc, g->conf_bytes);
    jr__free(n->alloc, g);
}
