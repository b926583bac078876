/*
 * flush — the node's batching point (ARCHITECTURE §3 "Work is batched"; Redis' beforeSleep).
 *
 * Everything the groups produced during one jr_node_recv / jr_node_tick (and during the API
 * calls since the last one) leaves here, for every group on the ready list and for no other.
 * First the layer above proposes what it batched (its before_flush hook); from then on every
 * request for a tick made so far is this flush's: one that leaves nothing undone asks the host
 * for no other tick. Then:
 *
 *   1. leaders release the APPENDs batched since the last flush (jr__raft_flush); frames to
 *      peers that hold no JR__MF_DURABLE message leave now, so followers receive entries while
 *      the leader writes its own copy (dissertation §10.2.1: "the leader can write to its own
 *      disk in parallel with replicating to the followers");
 *   2. stage each group's unpersisted entries and hard state in the WAL (memory only; a change
 *      of the commit index alone stages nothing, see stage(); a group whole again since its WAL
 *      found it damaged stages its whole state once, stage_rewrite());
 *   3. one jr__wal_flush: one write and one sync for every group on the node, none when
 *      nothing was staged;
 *   4. jr__raft_persisted for each group (a leader may now count itself toward a quorum);
 *   5. send the rest: one frame per peer with every group's messages. No message flagged
 *      JR__MF_DURABLE (a vote grant, an append acknowledgement) leaves before this point, so
 *      none leaves before the term, vote and entries it vouches for are durable (§3.8);
 *   6. apply committed entries that are also durable here to the group's jr_fsm, complete the
 *      proposals and membership changes waiting for them, take a snapshot when enough entries
 *      were applied;
 *   7. jr__raft_ready_done and re-key the group's timer.
 *
 * A host may run the sync itself (jr_host.sync_start, sync_offloaded()): step 3 then writes
 * and hands it a job, and steps 3's sync and 4 wait for jr_node_synced (jr__node_sync_done);
 * while the job is out, iterations skip steps 2-4 (nothing is staged or written), send only
 * the frames of peers holding nothing that waits for the sync (the others were sealed at the
 * write, jr__peer_seal_all), and apply what is already durable. docs/internals.md, "The host's
 * sync".
 *
 * A group that gained work during the iteration (e.g. a snapshot taken in step 6) is queued
 * again and the loop repeats, a bounded number of times; whatever is left waits for the next
 * tick, which is requested at once. Each iteration makes at most one WAL write and one sync, and
 * only an iteration with records to write makes one. The path of a proposal (its entries
 * written, then committed and applied) takes one iteration, since the commit it makes writes
 * nothing (stage()); a second write in one flush comes only from work the applies of the first
 * produced (a new leader's first entry, the commit of a group that applies only durable
 * commits). A snapshot's compaction marker makes no write of its own: a group whose only record
 * would be its marker is held out of the batch (hold_markers) until an iteration writes anyway
 * or the marker has waited a heartbeat interval. Callbacks of completed requests run at the very
 * end (jr__node_drain), when no list is being walked, after every frame of the flush has left.
 * A commit alone makes no frame here: the followers learn it from the group's next APPEND, or
 * from a HEARTBEAT once it has waited the group's commit delay (raft.h commit_delay,
 * JR__COMMIT_DELAY_DIV), so the flush that completes a request sends nothing but what its
 * callbacks queue. What they queue for peers without waiting for a sync (the answer to a
 * request another server forwarded, completed by the commit this flush counted) leaves right
 * after them, in this call.
 */
#include "node/node.h"
#include "node/rpc.h"
#include "util/alloc.h"
#include "util/deadline.h"
#include "util/invariant.h"

#define MAX_ITERATIONS 4

/* The WAL holds g damaged (its recovery found records of g missing): a restart would replay
 * none of the entries g wrote since, acknowledged ones included, until the group is dropped and
 * its new state written (wal.h). While g is unvouched or damaged that costs nothing its peers
 * rely on; once it is whole its acknowledgements count like anyone's, so at the first flush
 * after that its whole state is written again as a new incarnation: a DROP, the compaction
 * marker of its snapshot, every entry after it and its hard state, in this one write. 0 with
 * *done = 0 if g needs no rewrite (then stage() goes on as usual), else as stage(). */
static int stage_rewrite(jr_node *n, jr_group *g, int *vote, int *done)
{
    jr__raft *r = g->raft;
    *done = 0;
    if (!g->wal_damaged || g->closed || jr__raft_unvouched(r) || jr__raft_damaged(r)) return 0;
    if (!jr__wal_damaged(n->wal, g->id)) {
        g->wal_damaged = 0;
        return 0;
    }
    uint64_t base = jr__raft_snapshot_index(r), bterm = jr__raft_snapshot_term(r);
    if (g->marker_pending && g->marker_index > base) {
        base = g->marker_index;
        bterm = g->marker_term;
    }
    uint64_t last = jr__raft_last_index(r);
    if (base + 1 < jr__raft_first_index(r) && base < last) return 0; /* cannot happen */
    uint64_t from, to;
    jr__hardstate hs;
    if (jr__raft_unpersisted(r, &from, &to, &hs) == 2) *vote = 1;
    int rc = jr__wal_drop(n->wal, g->id);
    if (rc == 0 && base) rc = jr__wal_compact(n->wal, g->id, base, bterm);
    for (uint64_t i = base + 1; rc == 0 && i <= last; i++) {
        jr__entry e;
        rc = jr__raft_entry(r, i, &e);
        if (rc == 0) rc = jr__wal_append(n->wal, g->id, &e);
    }
    if (rc == 0) rc = jr__wal_hardstate(n->wal, g->id, &hs);
    if (rc != 0) return rc;
    g->marker_staged = g->marker_pending;
    g->sync_marker = g->marker_index;
    g->hs_staged = 1;
    g->sync_hs = hs;
    g->stage_to = last;
    g->rewrite_staged = 1;
    *done = 1;
    return 0;
}

/* Step 2 for one group: stages its records and notes in g what they make durable once
 * written (stage_to, hs_staged, marker_staged, cut_from); g->marker_pending and cut_from are
 * cleared only when the write succeeded (step 4), so a flush that fails has nothing to undo but
 * the staged records (jr__wal_rollback) and the next one stages the same again. 0 or JR_ENOMEM (the
 * WAL's staging is the only failure). Sets *vote if the group's term or vote changed (that record
 * must be synced before anything leaves).
 *
 * The hard state is staged when its term or vote changed, or when the group writes another
 * record anyway: a change of the commit index alone writes nothing and costs no sync, it rides
 * along with the group's next record (raft.h jr__raft_persisted). The durable commit index
 * therefore lags: at restart a group may recover a commit index below entries it had applied,
 * and applies those again only once they are committed again (docs/internals.md "Durable
 * commit index"); a group that cannot have that asks for jr__group_durable_apply. */
static int stage(jr_node *n, jr_group *g, int *vote)
{
    jr__raft *r = g->raft;
    uint64_t from, to;
    jr__hardstate hs;
    g->rewrite_staged = 0;
    int done, err = stage_rewrite(n, g, vote, &done);
    if (err != 0 || done) return err;
    int hs_changed = jr__raft_unpersisted(r, &from, &to, &hs);
    int writes = 0; /* a record of this group is staged */
    if (hs_changed == 2) *vote = 1;
    g->hs_staged = 0;
    g->marker_staged = 0;
    uint64_t cut = from <= g->persisted ? from : 0;
    if (g->cut_from && (!cut || g->cut_from < cut)) cut = g->cut_from;
    if (cut) {
        /* The log was cut at `from` (raft.h: also when from > to, after a snapshot install
         * that discarded a conflicting log). One TRUNCATE record, staged ahead of the marker
         * and the entries of this flush, voids the old suffix in the WAL even when nothing
         * replaces it; a torn flush that keeps any later record keeps it too. What is durable
         * drops to below the cut at once (nothing may vouch for the old suffix any more, even
         * if this flush fails); cut_from keeps the cut until a write carried it. */
        int rc = jr__wal_truncate(n->wal, g->id, cut);
        g->cut_from = cut;
        if (g->persisted >= cut) g->persisted = cut - 1;
        if (rc != 0) return rc;
        writes = 1;
    }
    g->stage_to = g->persisted;
    if (g->marker_pending) {
        int rc = jr__wal_compact(n->wal, g->id, g->marker_index, g->marker_term);
        if (rc != 0) return rc;
        g->marker_staged = 1;
        g->sync_marker = g->marker_index;
        writes = 1;
    }
    if (from <= to) {
        for (uint64_t i = from; i <= to; i++) {
            jr__entry e;
            int rc = jr__raft_entry(r, i, &e);
            if (rc != 0) return rc; /* cannot happen: unpersisted entries are in memory */
            rc = jr__wal_append(n->wal, g->id, &e);
            if (rc != 0) return rc;
        }
        g->stage_to = to;
        writes = 1;
    }
    if (hs_changed == 2 || (hs_changed && (writes || g->durable_apply))) {
        int rc = jr__wal_hardstate(n->wal, g->id, &hs);
        if (rc != 0) return rc;
        g->hs_staged = 1;
        g->sync_hs = hs;
    }
    return 0;
}

void jr__group_durable_apply(jr_group *g)
{
    g->durable_apply = 1;
    /* with the host's sync a follower's commit may be durable before its leader's (raft.h) */
    if (g->node->host.sync_start) jr__raft_tell_durable_commit(g->raft);
}

void jr__group_commit_now(jr_group *g)
{
    if (g->closed) return;
    jr__raft_commit_now(g->raft);
    if (!g->node->flushing) jr__group_rearm(g); /* else the flush re-keys it (step 7) */
}

/* The last entry g may apply now: committed, durable, in memory, and (durable_apply) covered by
 * a durable commit index. */
uint64_t jr__group_apply_limit(const jr_group *g)
{
    const jr__raft *r = g->raft;
    uint64_t upto = jr__raft_commit_index(r);
    if (g->durable_apply && upto > jr__raft_durable_commit(r)) upto = jr__raft_durable_commit(r);
    if (upto > g->persisted) upto = g->persisted;
    if (upto > jr__raft_last_index(r)) upto = jr__raft_last_index(r);
    return upto;
}

/* Would stage() stage anything for the group besides its compaction marker? */
static int needs_write_besides_marker(jr_group *g)
{
    uint64_t from, to;
    jr__hardstate hs;
    /* a commit-only change of the hard state is nothing to write (it waits for the group's
     * next record) unless the group applies only durable commits */
    int hs_changed = jr__raft_unpersisted(g->raft, &from, &to, &hs);
    if (hs_changed == 2 || (hs_changed && g->durable_apply) || from <= to) return 1;
    return from <= g->persisted || g->cut_from; /* a cut to record, even with nothing else */
}

/* Would stage() stage anything for the group? */
static int needs_write(jr_group *g)
{
    return g->marker_pending || needs_write_besides_marker(g);
}

/* Does the group have anything a flush should do? */
static int has_work(jr_group *g, int callbacks)
{
    if (needs_write(g)) return 1;
    if (!callbacks || g->closed) return 0;
    return jr__group_apply_limit(g) > g->applied;
}

/* A compaction marker is written ahead of the group's next record, or alone once it has waited
 * a heartbeat interval: it only lets the WAL drop segments the snapshot covers, so nothing waits
 * for it, and a snapshot taken while proposals flow costs no write and no sync of its own. */
static uint64_t marker_due(const jr_node *n, const jr_group *g)
{
    return jr__deadline(g->marker_at, n->heartbeat_ns);
}

/* Would a flush of g write nothing but its compaction marker, before that is due? A closing
 * node writes it: the next open then finds the WAL compacted as far as the snapshot. */
static int marker_waits(const jr_node *n, jr_group *g, int callbacks)
{
    if (!g->marker_pending || g->closed || n->closing || n->now >= marker_due(n, g)) return 0;
    if (needs_write_besides_marker(g)) return 0;
    return !callbacks || jr__group_apply_limit(g) <= g->applied;
}

/* Moves the groups of the ready list whose marker waits (marker_waits) to n->held, where they
 * stay in_ready: work they gain meanwhile is theirs when they are released. */
static void hold_markers(jr_node *n, int callbacks)
{
    for (jr_group **pp = &n->ready; *pp;) {
        jr_group *g = *pp;
        if (marker_waits(n, g, callbacks)) {
            *pp = g->ready_next;
            g->ready_next = n->held;
            n->held = g;
        } else {
            pp = &g->ready_next;
        }
    }
}

#if JR__INVARIANTS_ON
/* node.h's invariants on the ready list where a flush ends: nothing is held, every group on the
 * list says so and appears once; on a node of at most 64 groups, no group outside the list
 * says it is on it. */
static void ready_check(const jr_node *n)
{
    JR__INVARIANT(n->held == NULL);
    size_t on = 0;
    for (const jr_group *g = n->ready; g; g = g->ready_next) {
        JR__INVARIANT(g->in_ready && on <= n->groups.len);
        on++;
    }
    if (n->groups.len > 64) return;
    size_t flagged = 0;
    for (size_t i = 0; i < n->groups.cap; i++)
        if (n->groups.slots[i].key) flagged += ((const jr_group *)n->groups.slots[i].val)->in_ready;
    JR__INVARIANT(flagged == on);
}
#define READY_CHECK(n) ready_check(n)
#else
#define READY_CHECK(n) ((void)0)
#endif

/* Puts the held groups back on the ready list; *due gets the earliest time a marker among them
 * must be written (UINT64_MAX: none held). */
static void release_held(jr_node *n, uint64_t *due)
{
    *due = UINT64_MAX;
    while (n->held) {
        jr_group *g = n->held;
        n->held = g->ready_next;
        g->ready_next = n->ready;
        n->ready = g;
        if (g->marker_pending && marker_due(n, g) < *due) *due = marker_due(n, g);
    }
}

/* Completes the head of g's pending queue for every op at or below `index` (entry term t). */
static void complete_upto(jr_node *n, jr_group *g, uint64_t index, uint64_t term)
{
    jr__op *op;
    while ((op = g->pending.head) != NULL && op->index <= index) {
        jr__opq_pop(&g->pending);
        if (op->index == index && op->term == term)
            jr__op_complete(n, op, 0, index);
        else
            jr__op_complete(n, op, JR_ELEADERLOST, 0); /* its index now holds another entry */
    }
}

/* Step 5 for one group. */
static void apply(jr_node *n, jr_group *g)
{
    jr__raft *r = g->raft;
    if (jr__raft_lost_commits(r) != g->lost_commits) {
        /* JR_SYNC_INTERVAL: the group lost committed entries this replica had applied (raft.h
         * commit_may_be_lost); its log follows the leader again and the fsm gets the leader's
         * entries from there. What it applied of the lost ones stays in the fsm until the
         * group is reopened (or the node restarts), which re-applies the log as it is now. */
        g->lost_commits = jr__raft_lost_commits(r);
        uint64_t c = jr__raft_commit_index(r);
        if (g->applied > c) {
            jr__node_log(n, JR_LOG_WARN,
                         "group %llu: entries %llu..%llu it applied were lost by the group "
                         "(JR_SYNC_INTERVAL and a power loss); reopen it to rebuild its state",
                         (unsigned long long)g->id, (unsigned long long)c + 1,
                         (unsigned long long)g->applied);
            g->applied = c;
        }
    }
    uint64_t upto = jr__group_apply_limit(g);
    uint64_t start = g->applied;
    for (uint64_t i = g->applied + 1; i <= upto; i++) {
        jr__entry e;
        int rc = jr__raft_entry(r, i, &e);
        if (rc != 0) {
            jr__node_log(n, JR_LOG_ERROR, "group %llu: committed entry %llu unavailable: %s",
                         (unsigned long long)g->id, (unsigned long long)i, jr_strerror(rc));
            break;
        }
        if (e.type == JR__ENTRY_NORMAL) {
            g->in_fsm = 1;
            g->fsm.apply(g->fsm.ctx, i, e.data, e.len);
            g->in_fsm = 0;
            if (g->closed) return; /* closed from inside its own callback */
        } else if (e.type == JR__ENTRY_CONFIG) {
            jr__conf c;
            if (jr__conf_decode(&c, e.data, e.len) == 0 && jr__group_set_conf(g, &c) == 0)
                g->conf_stale = 0;
            else
                g->conf_stale = 1;
        }
        if (n->hooks.applied) n->hooks.applied(n->hooks.ctx, n, g->id, &e);
        g->applied = i;
        complete_upto(n, g, i, e.term);
    }
    if (g->applied != start) jr__raft_applied(r, g->applied);

    /* Requests of a leadership we no longer hold: those beyond the commit index may never
     * commit; those at or below it are settled by what gets applied there. */
    int role = jr__raft_role(r);
    if (role != JR_LEADER) {
        jr__op *op;
        uint64_t c = jr__raft_commit_index(r);
        /* ops are in ascending index order: fail the tail beyond the commit index */
        jr__opq keep = {NULL, NULL};
        while ((op = jr__opq_pop(&g->pending)) != NULL) {
            if (op->index <= c)
                jr__opq_push(&keep, op);
            else
                jr__op_complete(n, op, JR_ELEADERLOST, 0);
        }
        g->pending = keep;
    }
    if (g->transfer) {
        int status = 1; /* 1: still pending */
        if (role != JR_LEADER) {
            jr__id leader = jr__raft_leader(r);
            if (leader != 0)
                status = (g->transfer_to == 0 || leader == g->transfer_to) ? 0 : JR_ELEADERLOST;
        } else if (!jr__raft_transferring(r)) {
            status = JR_ETIMEDOUT; /* the core abandoned it after an election timeout */
        }
        if (status != 1) {
            jr__op_complete(n, g->transfer, status, 0);
            g->transfer = NULL;
            g->op_deadline = UINT64_MAX;
        }
    }
    jr__snap_maybe_take(g);
}

/* The WAL cannot make anything durable any more: a leader here could neither count itself nor
 * apply, yet its heartbeats would keep the group from electing a healthy leader. Every group
 * this node leads steps down (handing over to a caught-up voter, §3.10); the node cannot win an
 * election again before it is reopened, since its vote requests need a durable term. */
static void step_down_all(jr_node *n)
{
    for (size_t i = 0; i < n->groups.cap; i++) {
        jr_group *g = n->groups.slots[i].val;
        if (n->groups.slots[i].key && !g->closed && jr__raft_role(g->raft) == JR_LEADER) {
            jr__node_log(n, JR_LOG_ERROR, "group %llu: stepping down: the WAL failed",
                         (unsigned long long)g->id);
            jr__raft_stepdown(g->raft, n->now);
        }
    }
    jr__peer_send_all(n, 0); /* TIMEOUT_NOW and the like need nothing durable */
}

/* Step 7 for one group: tells the layer above when the group's role changed since the last
 * flush that saw it (e.g. a stream replica's leader duties wait for it). Every role change
 * passes through a flush: a new term or an election's first entry is durable state, and a
 * timer-driven step-down puts the group on the ready list (jr__group_tick). */
static void role_seen(jr_node *n, jr_group *g)
{
    uint8_t lead = jr__raft_role(g->raft) == JR_LEADER;
    if (lead == g->was_leader) return;
    g->was_leader = lead;
    if (lead) jr__live_leads(g);
    if (n->upper_tab) n->upper_tab->role_changed(n->upper, g->id);
}

static int wal_due(const jr_node *n)
{
    return jr__wal_pending(n->wal) > 0 || jr__wal_deadline(n->wal) <= n->now;
}

int jr__node_defer(jr_node *n, jr__effect_fn fn, uint64_t arg)
{
    if (n->neffects == n->effects_cap) {
        size_t cap = n->effects_cap ? 2 * n->effects_cap : 8;
        struct jr__effect *e = jr__realloc(n->alloc, n->effects, cap * sizeof *e);
        if (!e) return JR_ENOMEM;
        n->effects = e;
        n->effects_cap = cap;
    }
    n->effects[n->neffects].fn = fn;
    n->effects[n->neffects].arg = arg;
    n->neffects++;
    return 0;
}

void jr__node_run_effects(jr_node *n)
{
    /* By index: an effect may queue more (and grow the array), which run in this pass. */
    for (size_t i = 0; i < n->neffects; i++) n->effects[i].fn(n, n->effects[i].arg);
    n->neffects = 0;
    if (n->effects_cap > 64) { /* a burst (a meta snapshot's thousands of streams) is over */
        jr__free(n->alloc, n->effects);
        n->effects = NULL;
        n->effects_cap = 0;
    }
}

/* The host runs the WAL's sync (jr_host.sync_start): with JR_SYNC_ALWAYS, and never for a
 * closing node (the host could not report it). */
static int sync_offloaded(const jr_node *n)
{
    return n->host.sync_start && n->sync_policy == JR_SYNC_ALWAYS && !n->closing;
}

/* Step 3's write is made and not synced: the groups of the batch wait on n->syncing, each
 * with what its write holds (stage(); sync_term names the entry that vouches for its log,
 * sync_done), the frames of peers holding a JR__MF_DURABLE message are sealed, and the host
 * gets the job. */
static void sync_start(jr_node *n, jr_group *batch)
{
    for (jr_group *g = batch; g; g = g->flush_next) {
        jr__entry e;
        g->sync_term = 0;
        if (g->stage_to > g->persisted && jr__raft_entry(g->raft, g->stage_to, &e) == 0)
            g->sync_term = e.term;
        g->in_sync = 1;
        g->sync_next = n->syncing;
        n->syncing = g;
    }
    jr__peer_seal_all(n);
    n->sync_job.node = n;
    n->sync_job.file = jr__wal_file(n->wal, &n->sync_job.vfs);
    n->sync_inflight = 1;
    n->host.sync_start(n->host.ctx, &n->sync_job);
}

/* The host's sync ended with rc: step 4 for the write it covers. A group's entries up to its
 * stage_to count as durable only if its log still holds there the entry it wrote (same term:
 * by Log Matching, §3.5, the entries before it are those written too); a log cut since then
 * and not yet healed leaves its durable index where the core has it, and the next stage()
 * records the cut. The hard state reported is the one written, not the current one. A
 * compaction marker counts as written only if no later snapshot replaced it meanwhile. Then
 * the sealed frames leave. On an error the WAL is at its end, as in step 3. */
int jr__node_sync_done(jr_node *n, int rc)
{
    jr_group *list = n->syncing;
    n->syncing = NULL;
    n->sync_inflight = 0;
    int err = jr__wal_synced(n->wal, n->now, rc);
    for (jr_group *g = list, *next; g; g = next) {
        next = g->sync_next;
        g->in_sync = 0;
        g->sync_next = NULL;
        jr__raft *r = g->raft;
        if (!err) {
            uint64_t to = g->stage_to, from, last;
            jr__hardstate cur;
            jr__entry e;
            jr__raft_unpersisted(r, &from, &last, &cur);
            uint64_t idx = from - 1; /* what the core holds durable now */
            if (to > idx && jr__raft_entry(r, to, &e) == 0 && e.term == g->sync_term) idx = to;
            if (idx > g->persisted) g->persisted = idx;
            g->cut_from = 0;
            if (g->rewrite_staged) g->wal_damaged = 0;
            if (g->marker_staged && g->marker_pending && g->marker_index == g->sync_marker)
                g->marker_pending = 0;
            jr__raft_persisted_as(r, n->now, idx, g->hs_staged ? &g->sync_hs : NULL);
        }
        g->rewrite_staged = 0;
        g->marker_staged = 0;
        g->hs_staged = 0;
        jr__group_ready(g);
    }
    if (err) {
        jr__node_err(n, err, "WAL sync failed: %s", jr__wal_errmsg(n->wal));
        jr__peer_discard_all(n);
        n->retry_at = jr__deadline(n->now, n->heartbeat_ns);
        step_down_all(n);
        return err;
    }
    n->flush_gen++;
    jr__snap_unpin_wal(n);
    jr__peer_send_sealed(n);
    return 0;
}

int jr_sync_job_run(jr_sync_job *job)
{
    if (!job || !job->vfs) return JR_EINVAL;
    if (!job->file) return 0;
    return job->vfs->sync(job->vfs->ctx, job->file);
}

int jr_node_synced(jr_node *n, jr_sync_job *job, int rc)
{
    if (!n || !job || job != &n->sync_job || !n->sync_inflight) return JR_EINVAL;
    if (n->closing) return JR_ECLOSED;
    jr__node_enter(n);
    int err = jr__node_sync_done(n, rc);
    if (err == 0) err = jr__node_flush(n, 1);
    jr__node_leave(n);
    return err;
}

int jr__node_flush(jr_node *n, int callbacks)
{
    int err = 0;
    /* the released records, then the DROPs that waited (for them, or for memory) */
    if (n->nretiring || n->released_dirty) jr__node_retry_drops(n);
    jr__rpc_recent_expire(n);
    if (n->upper_tab) n->upper_tab->before_flush(n->upper); /* e.g. stream leaders' batches */
    /* Whatever asked for a tick so far (the proposals of the hook above included) is this
     * flush's work; what it leaves undone asks again below. A request left standing would make
     * the host tick again at once for nothing, and a leader's would run before it reads the
     * acknowledgements that arrived during its sync. */
    if (callbacks) n->want_tick = 0;
    n->flushing = 1;
    for (int iter = 0; iter < MAX_ITERATIONS; iter++) {
        hold_markers(n, callbacks);
        jr_group *batch = n->ready;
        n->ready = NULL;
        if (!batch && !n->dirty_peers && !wal_due(n)) break;
        for (jr_group *g = batch; g; g = g->ready_next) {
            g->in_ready = 0;
            g->flush_next = g->ready_next;
        }

        /* 1. leaders put their batched APPENDs on the wire before the write (§10.2.1) */
        for (jr_group *g = batch; g; g = g->flush_next)
            if (!g->closed) jr__raft_flush(g->raft, n->now);
        jr__peer_send_all(n, 0);
        /* While the host syncs, nothing is written: steps 2-4 wait for jr_node_synced, which
         * writes what gathered meanwhile in one batch. Acknowledgements are still counted and
         * what is durable and committed is applied (steps 5-7). */
        int started = 0;
        if (n->sync_inflight) goto written;
        /* 2. stage (from a mark: a flush that fails unstages what it staged) */
        int vote = 0;
        jr__wal_mark(n->wal);
        for (jr_group *g = batch; g; g = g->flush_next) {
            err = stage(n, g, &vote);
            if (err) {
                jr__node_err(n, err, "cannot stage WAL records: %s", jr_strerror(err));
                break;
            }
        }
        /* the held markers ride along with a write that happens anyway */
        if (!err && n->held && jr__wal_pending(n->wal)) {
            jr_group **tail = &batch;
            while (*tail) tail = &(*tail)->flush_next;
            while (!err && n->held) {
                jr_group *g = n->held;
                n->held = g->ready_next;
                g->in_ready = 0;
                g->flush_next = NULL;
                *tail = g;
                tail = &g->flush_next;
                err = stage(n, g, &vote);
            }
            if (err) jr__node_err(n, err, "cannot stage WAL records: %s", jr_strerror(err));
        }
        /* 3. one write + one sync for everything (the host's sync: the write, then sync_start) */
        if (!err && wal_due(n)) {
            size_t bytes = jr__wal_pending(n->wal);
            int durable = 0;
            if (sync_offloaded(n) && bytes) {
                err = jr__wal_write(n->wal, n->now, &durable);
                started = !err && !durable;
                vote = 0; /* the sync that releases anything vouching for it is the host's */
            } else {
                err = jr__wal_flush(n->wal, n->now, &durable);
            }
            /* JR_SYNC_INTERVAL may lose acknowledged writes on power loss, never a vote: a term
             * or vote record is synced before the grant (or candidacy) it backs can leave. */
            if (!err && !durable && vote) err = jr__wal_sync(n->wal, n->now);
            if (err) {
                jr__node_err(n, err, "WAL flush failed: %s", jr__wal_errmsg(n->wal));
            } else if (started) {
                n->stats.wal_bytes += bytes;
            } else {
                n->flush_gen++;
                n->stats.wal_bytes += bytes;
                jr__snap_unpin_wal(n);
            }
        }
        if (err) {
            /* Nothing staged may be reported durable, and nothing that depends on it may
             * leave: drop the held frames (Raft retransmits) and retry at the next tick. The
             * records this iteration staged are unstaged: the retry stages them again (with
             * the same numbers), so none is written twice. JR_ENOMEM is transient (the WAL
             * wrote nothing and stays usable); any other failure is the WAL's end. */
            jr__wal_rollback(n->wal);
            jr__peer_discard_all(n);
            uint64_t due;
            release_held(n, &due);
            for (jr_group *g = batch; g; g = g->flush_next) jr__group_ready(g);
            n->retry_at = jr__deadline(n->now, n->heartbeat_ns); /* back off, not spin */
            if (err != JR_ENOMEM) step_down_all(n);
            n->flushing = 0;
            return err;
        }
        if (started) {
            sync_start(n, batch);
            goto written;
        }
        /* 4. durable (called for every group of the batch: it also releases batched sends) */
        for (jr_group *g = batch; g; g = g->flush_next) {
            g->persisted = g->stage_to;
            g->cut_from = 0;
            if (g->rewrite_staged) g->wal_damaged = 0;
            g->rewrite_staged = 0;
            if (g->marker_staged) g->marker_pending = 0;
            g->marker_staged = 0;
            jr__raft_persisted(g->raft, n->now, g->persisted, g->hs_staged);
            g->hs_staged = 0;
        }
    written:
        /* 5. one frame per peer (while a sync is in flight, those of peers holding nothing
         * that waits for it) */
        jr__peer_send_all(n, !n->sync_inflight);
        /* 6. apply */
        if (callbacks)
            for (jr_group *g = batch; g; g = g->flush_next)
                if (!g->closed) apply(n, g);
        /* 7. done */
        for (jr_group *g = batch; g; g = g->flush_next) {
            jr__raft_ready_done(g->raft);
            if (callbacks && !g->closed) role_seen(n, g);
            jr__group_rearm(g);
            if (has_work(g, callbacks)) jr__group_ready(g);
        }
        if (!callbacks || n->sync_inflight) break; /* what is left waits for jr_node_synced */
    }
    n->flushing = 0;
    /* What the applies deferred: replicas created or removed, stores opened or destroyed. */
    if (n->neffects && !n->closing) jr__node_run_effects(n);
    /* Work produced after the last sync (step 6) waits for the next flush; ask for it. Held
     * markers wait for the next call's write, or their due time. */
    n->retry_at = 0;
    if (!n->sync_inflight && (n->ready || n->dirty_peers || jr__wal_pending(n->wal)))
        jr__node_want_tick(n);
    uint64_t due;
    release_held(n, &due);
    if (due != UINT64_MAX && !n->want_tick) n->retry_at = due;
    READY_CHECK(n);
    if (callbacks) {
        n->closing_drain = 1;
        jr__node_drain(n);
        n->closing_drain = 0;
        /* Nothing vouching for state that is not durable leaves here: such a message holds
         * its peer, which this send skips (the next flush sends it, requested below). */
        jr__peer_send_all(n, 0);
        if (n->dirty_peers && !n->sync_inflight) jr__node_want_tick(n);
    }
    return 0;
}
