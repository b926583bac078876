/*
 * stream_replica — the local replicas of streams: each stream is its own Raft
 * group (the id from its meta assignment) whose state machine is lib/stream's fsm over a
 * message store in store_dir (memory or file, as the stream's config says).
 *
 * Publishing (leader). Requests that reach the leader during one jr_node_recv / jr_node_tick
 * (or API calls between two of them) are staged as ops of one BATCH entry and proposed right
 * before the node's flush (jr__js_before_flush), so a burst of publishes costs one log entry,
 * one WAL write and one frame per follower. Every op keeps a waiter (where its answer goes).
 * The proposal remembers the (index, term) Raft gave the entry; when the entry at that index is
 * applied here with that term — committed, i.e. durable on a quorum, and applied to the store —
 * each waiter gets its op's result (seq, duplicate, or the refusal). An entry applied at that
 * index with another term, an index passed without it, or the leadership lost before the commit
 * (the node's propose callback) answers JR_ELEADERLOST; a proposal older than the request
 * timeout answers JR_ETIMEDOUT: it is in this leader's log and may still commit later, so its
 * outcome is unknown (JR_ENOQUORUM would say nothing took effect).
 *
 * Time. The leader stamps every op it stages with stream time (stream/clock.h: the host's wall
 * clock, never backwards, clock jumps absorbed gradually); every replica anchors its own
 * jr__sclock on the stamps it applies, so a follower that takes over keeps absorbing a jump.
 *
 * Leader duties (a timer per replica, armed only while a duty is due): the first leader logs
 * the stream's config as a CONFIG op before any publish (so a replay from the first entry
 * decides everything with the config the stream had then), and after an update the leader logs
 * the new one; streams with max_age get a TICK now and then so that idle streams expire too.
 *
 * Peer changes (leader duty): stream_peers.c.
 *
 * Snapshots are the stream's metadata (fsm_snapshot.c): taking one syncs the store, so the
 * node's WAL is compacted behind the store's durable point. Restoring one that finds messages
 * missing starts a catch-up (catchup.c); entries applied meanwhile are queued and applied once
 * the messages are in.
 *
 * Repair. A store damaged beyond a torn tail at open, or a store or state machine that fails
 * while the server runs (a block that no longer verifies on a read), is discarded and rebuilt
 * from the group's snapshot and log and the messages of a peer ("Rebuilding"); the group's Raft
 * state, kept in the WAL, is not touched. Health reports the replica damaged until then.
 *
 * Proposal records live until both their entry was seen (applied, passed, or given up with the
 * replica) and the node's propose callback ran (it always runs: commit, loss, or close).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "js/js.h"
#include "util/alloc.h"
#include "util/deadline.h"
#include "util/container.h"
#include "util/checksum.h"

#define BATCH_MAX_OPS 4096u
#define BATCH_MAX_BYTES (512u << 10)
#define MIN_TICK_NS 100000000ull /* 100 ms */
#define SYNC_ENTRIES 1024        /* store mark at least every this many entries ... */
#define SYNC_NS 1000000000ull    /* ... and every second while entries are applied */
#define SWEEP_CHUNK 4096         /* messages a retention sweep checks per timer visit */

jr__srep *jr__srep_find(jr__js *js, uint64_t group)
{
    return jr__map_get(&js->reps, group);
}

int jr__srep_is_leader(const jr__srep *r)
{
    return r->g && !jr__group_closed(r->g) && !r->failed &&
           jr__raft_role(jr__group_consensus(r->g)) == JR_LEADER;
}

jr__peer *jr__srep_leader_peer(jr__js *js, uint64_t group)
{
    jr__srep *r = jr__srep_find(js, group);
    if (r && r->g && !jr__group_closed(r->g)) {
        jr__id id = jr__raft_leader(jr__group_consensus(r->g));
        return id ? jr__peer_find(js->n, id) : NULL;
    }
    return jr__map_get(&js->hints, group);
}

/* Proposals ---------------------------------------------------------------------------------*/

static void unlist(jr__proposal *p)
{
    jr__srep *r = p->rep;
    if (!p->listed || !r) {
        p->listed = 0;
        return;
    }
    jr__proposal **pp = &r->phead, *prev = NULL;
    while (*pp && *pp != p) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp) {
        *pp = p->next;
        if (r->ptail == p) r->ptail = prev;
    }
    p->next = NULL;
    p->listed = 0;
}

static void free_proposal(jr__js *js, jr__proposal *p)
{
    jr__waiter *w = p->head;
    while (w) {
        jr__waiter *next = w->next;
        jr__waiter_put(js, w);
        w = next;
    }
    jr__free(js->alloc, p);
}

/* Answers every waiter of p with status (a failure: nothing of p was acknowledged; whether it
 * may still take effect is the status's to say). */
static void resolve_fail(jr__js *js, jr__proposal *p, int status)
{
    if (p->resolved) return;
    p->resolved = 1;
    for (jr__waiter *w = p->head; w; w = w->next) jr__route_reply(js, &w->route, status, NULL, 0);
}

/* The node's completion of a proposal (after the apply on success; at once on failure). */
static void on_proposed(void *arg, int status, uint64_t index)
{
    jr__proposal *p = arg;
    jr__js *js = p->js;
    (void)index;
    p->cb_fired = 1;
    if (status != 0) {
        resolve_fail(js, p, status == JR_ECLOSED ? JR_ECLOSED : JR_ELEADERLOST);
        unlist(p);
    }
    /* On success the apply normally came first; if it did not (entries queued during a
     * catch-up), p stays listed until that entry is applied. */
    if (!p->listed) free_proposal(js, p);
}

/* Proposes the staged ops of waiters first..last (count of them, the stage's bytes from off to
 * last->end) as one BATCH entry, and takes those waiters off the stage's list. */
static int propose_batch(jr__srep *r, size_t off, jr__waiter *last, uint32_t count)
{
    jr__js *js = r->js;
    jr__buf *b = &js->scratch;
    jr__buf_reset(b);
    js->batched = 1; /* (js.c jr__js_before_flush) */
    jr__buf_u8(b, JR__OP_VERSION);
    jr__buf_u8(b, JR__OP_BATCH);
    jr__buf_varint(b, count);
    jr__buf_put(b, r->stage.data + off, last->end - off);
    if (!b->err) jr__buf_u64(b, jr__xxh3(b->data, b->len));
    jr__proposal *p = jr__calloc(js->alloc, 1, sizeof *p);
    int rc = b->err ? b->err : !p ? JR_ENOMEM : 0;
    uint64_t index = 0, term = 0;
    if (!rc) rc = jr__group_propose(r->g, b->data, b->len, on_proposed, p, &index, &term);
    if (rc) {
        jr__free(js->alloc, p);
        return rc;
    }
    p->js = js;
    p->rep = r;
    p->index = index;
    p->term = term;
    p->deadline = jr__deadline(jr__node_now(js->n), js->timeout_ns);
    p->head = r->whead;
    p->tail = last;
    r->whead = last->next;
    if (!r->whead) r->wtail = NULL;
    last->next = NULL;
    r->nstage -= count;
    p->listed = 1;
    if (r->ptail)
        r->ptail->next = p;
    else
        r->phead = p;
    r->ptail = p;
    jr__srep_due(r, p->deadline);
    return 0;
}

/* Largest entry the stream's group accepts (the node gives every group the same limit:
 * jr__node_facts.max_msg_bytes). */
static size_t max_entry(const jr__js *js)
{
    return js->facts.max_msg_bytes - 1024;
}

/* Largest BATCH entry: BATCH_MAX_BYTES of ops, less where the group's entries are smaller (a
 * node with small frames); the framing (version, type, count, checksum) takes under 32 bytes,
 * and a single op is never longer than the entry less 32 (stage_raw), so it always fits. */
static size_t batch_bytes(const jr__js *js)
{
    size_t m = max_entry(js) - 32;
    return m < BATCH_MAX_BYTES ? m : BATCH_MAX_BYTES;
}

/* Drops the stage's proposed prefix (bytes before stage_off) once it is most of the buffer, so
 * a stage that a hold keeps from draining does not grow by what it proposed. */
static void stage_compact(jr__srep *r)
{
    size_t off = r->stage_off, left = r->stage.len - off;
    if (off < BATCH_MAX_BYTES || off < left) return;
    memmove(r->stage.data, r->stage.data + off, left);
    r->stage.len = left;
    r->stage_off = 0;
    for (jr__waiter *w = r->whead; w; w = w->next) w->end -= off;
}

/* Proposes the staged ops of r in BATCH entries of at most batch_bytes and BATCH_MAX_OPS
 * each (one, unless a hold kept more), as many bytes of them as the hold admits (hold.c
 * jr__srep_admit; at least one op once it admits any). What it keeps back waits for a later
 * flush: the replica's timer looks again a quarter heartbeat later. */
static void flush_one(jr__srep *r)
{
    jr__js *js = r->js;
    if (!r->nstage) return;
    if (!jr__srep_is_leader(r)) {
        jr__srep_fail_staged(r, JR_ENOTLEADER);
        return;
    }
    uint64_t budget = jr__srep_admit(r);
    while (r->whead && budget) {
        size_t off = r->stage_off, cap = batch_bytes(js), max = budget < cap ? (size_t)budget : cap;
        jr__waiter *last = r->whead;
        uint32_t count = 1;
        while (last->next && count < BATCH_MAX_OPS && last->next->end - off <= max) {
            last = last->next;
            count++;
        }
        size_t end = last->end;
        int rc = propose_batch(r, off, last, count);
        if (rc) {
            /* refused before it reached the log: the requesters may go to the leader */
            jr__srep_fail_staged(r, rc == JR_ENOTLEADER || rc == JR_ETRANSFER ? JR_ENOTLEADER : rc);
            return;
        }
        r->stage_off = end;
        if (budget != UINT64_MAX) budget = budget > end - off ? budget - (end - off) : 0;
    }
    if (r->whead) {
        r->holding = 1;
        stage_compact(r);
        jr__srep_due(r, jr__deadline(jr__node_now(js->n), js->heartbeat_ns / 4));
        return;
    }
    r->holding = 0;
    r->nstage = 0;
    /* the buffer of a batch and one op is kept, not what a hold staged */
    jr__buf_release(&r->stage, BATCH_MAX_BYTES + max_entry(js));
    r->stage_off = 0;
}

void jr__srep_flush_all(jr__js *js)
{
    while (js->dirty) {
        jr__srep *r = js->dirty;
        js->dirty = r->dirty_next;
        r->dirty_next = NULL;
        r->dirty = 0;
        flush_one(r);
    }
}

static void mark_dirty(jr__srep *r)
{
    if (r->dirty) return;
    r->dirty = 1;
    r->dirty_next = r->js->dirty;
    r->js->dirty = r;
    jr__node_want_tick(r->js->n);
}

void jr__srep_fail_staged(jr__srep *r, int status)
{
    jr__js *js = r->js;
    jr__waiter *w = r->whead;
    r->whead = r->wtail = NULL;
    r->nstage = 0;
    r->holding = 0;
    r->stage_off = 0;
    jr__buf_reset(&r->stage);
    const char *leader = NULL;
    if (status == JR_ENOTLEADER) {
        jr__peer *p = jr__srep_leader_peer(js, r->group);
        leader = p && jr__peer_get_id(p) != js->self ? jr__peer_get_name(p) : NULL;
    }
    while (w) {
        jr__waiter *next = w->next;
        jr__route_reply(js, &w->route, status, leader, leader ? strlen(leader) : 0);
        jr__waiter_put(js, w);
        w = next;
    }
}

static int stage_raw(jr__srep *r, const uint8_t *entry, size_t len, const jr__route *rt,
                     uint8_t what)
{
    jr__js *js = r->js;
    if (len < 1 + 1 + 8 + 8) return JR_EINVAL;
    size_t inner = len - 9; /* drop the version byte and the checksum: a BATCH item */
    if (inner + 32 > max_entry(js)) return JR_EMSGSIZE;
    if (r->nstage && !r->holding &&
        (r->stage.len - r->stage_off + inner > batch_bytes(js) || r->nstage >= BATCH_MAX_OPS))
        flush_one(r);
    jr__waiter *w = jr__waiter_get(js);
    if (!w) return JR_ENOMEM;
    size_t at = r->stage.len;
    jr__buf_put(&r->stage, entry + 1, inner);
    if (r->stage.err) {
        r->stage.len = at;
        r->stage.err = 0;
        jr__waiter_put(js, w);
        return JR_ENOMEM;
    }
    /* stream time (stream/clock.h) goes where op.h puts every op's ts: right after its type */
    int64_t ts = jr__sclock_stamp(&r->clock, jr__js_wall(js), jr__node_now(js->n),
                                  jr__stream_fsm_clock(r->fsm));
    jr__put_u64(r->stage.data + at + 1, (uint64_t)ts);
    w->route = *rt;
    w->what = what;
    w->end = r->stage.len;
    w->staged_at = jr__node_now(js->n);
    if (r->wtail)
        r->wtail->next = w;
    else
        r->whead = w;
    r->wtail = w;
    r->nstage++;
    mark_dirty(r);
    return 0;
}

/* Stages an internal op (nobody waits for its result). */
int jr__srep_stage_internal(jr__srep *r, const jr__stream_op *op)
{
    jr__buf out;
    jr__buf_init(&out, r->js->alloc);
    int rc = jr__op_encode(op, &out);
    jr__route none = {NULL, 0, 0};
    if (!rc) rc = stage_raw(r, out.data, out.len, &none, 0);
    jr__buf_free(&out);
    return rc;
}

/* Stages a CONFIG op with the assignment's config. */
static void stage_config(jr__srep *r)
{
    jr__buf cb;
    jr__buf_init(&cb, r->js->alloc);
    int rc = jr__stream_config_encode(&r->as->cfg->c, &cb);
    if (!rc) {
        jr__stream_op op;
        memset(&op, 0, sizeof op);
        op.type = JR__OP_CONFIG;
        op.u.config.cfg = cb.data;
        op.u.config.len = cb.len;
        rc = jr__srep_stage_internal(r, &op);
    }
    if (!rc) r->cfg_pending = 1;
    jr__buf_free(&cb);
}

void jr__srep_stage_tick(jr__srep *r)
{
    jr__stream_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__OP_TICK;
    jr__srep_stage_internal(r, &op);
}

int jr__srep_stage_read(jr__srep *r, const jr__route *rt, uint8_t what, uint64_t seq,
                        const char *subject, size_t subject_len, uint64_t tag)
{
    char *copy = NULL;
    if (subject_len) {
        copy = jr__malloc(r->js->alloc, subject_len);
        if (!copy) return JR_ENOMEM;
        memcpy(copy, subject, subject_len);
    }
    jr__stream_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__OP_TICK;
    jr__buf out;
    jr__buf_init(&out, r->js->alloc);
    int rc = jr__op_encode(&op, &out);
    if (!rc) rc = jr__srep_stage(r, out.data, out.len, rt, what);
    jr__buf_free(&out);
    if (rc) {
        jr__free(r->js->alloc, copy);
        return rc;
    }
    r->wtail->seq = seq; /* stage_raw appended the waiter last */
    r->wtail->tag = tag;
    r->wtail->subject = copy;
    r->wtail->subject_len = subject_len;
    return 0;
}

int jr__srep_stage(jr__srep *r, const uint8_t *entry, size_t len, const jr__route *rt, uint8_t what)
{
    /* The config goes first into the log of a stream that has none there yet. */
    if (!r->cfg_in_log && !r->cfg_pending) stage_config(r);
    return stage_raw(r, entry, len, rt, what);
}

/* Apply -------------------------------------------------------------------------------------*/

typedef struct apply_ctx {
    jr__srep *r;
    jr__waiter *w;  /* the waiter of the next op (NULL: nobody waits) */
    uint64_t index; /* the entry applying */
} apply_ctx;

/* A consumer leader's read barrier (JR__ADM_BARRIER) committed: the stream index a replica must
 * have applied to hold every write acknowledged before the barrier was asked for. */
static void barrier_answer(jr__js *js, const jr__waiter *w, uint64_t index)
{
    if (!w->route.to && !w->route.local) {
        jr__clead_barrier_local(js, w->seq, w->tag, index); /* a leader on this server */
        return;
    }
    uint8_t b[16];
    jr__buf out = {b, 0, sizeof b, 0, NULL};
    jr__buf_varint(&out, index);
    jr__route_reply(js, &w->route, 0, out.data, out.len);
}

static void on_result(void *arg, uint32_t i, const jr__stream_result *res)
{
    apply_ctx *a = arg;
    jr__srep *r = a->r;
    (void)i;
    if (res->type == JR__OP_CONFIG) {
        r->cfg_pending = 0;
        if (res->status == 0) r->cfg_in_log = 1;
        jr__stream_fsm_share_config(r->fsm, r->as->cfg);
    }
    jr__waiter *w = a->w;
    if (!w) return;
    a->w = w->next;
    uint8_t b[24 + JR__PUB_WHY_MAX];
    jr__buf out = {b, 0, sizeof b, 0, NULL};
    switch (w->what) {
    case JR__REQ_INFO:
    case JR__REQ_MSG_GET:
    case JR__REQ_GET_LAST:
    case JR__REQ_GET_NEXT:
    case JR__REQ_SUBJECTS:
    case JR__REQ_DELETED:
        jr__stream_exec_read(r->js, r, w); /* the state as of this op of the committed log */
        return;
    case JR__REQ_BARRIER:
        barrier_answer(r->js, w, a->index);
        /* the reader waits for a replica that may be a follower here to apply the index */
        if (r->g) jr__group_commit_now(r->g);
        return;
    case JR__REQ_PUBLISH:
        jr__buf_varint(&out, res->seq);
        jr__buf_u8(&out, (uint8_t)res->duplicate);
        if (res->status && res->why) {
            size_t k = res->why_len < JR__PUB_WHY_MAX ? res->why_len : JR__PUB_WHY_MAX;
            jr__buf_varint(&out, k);
            jr__buf_put(&out, res->why, k);
        }
        break;
    case JR__REQ_PURGE:
        jr__buf_varint(&out, res->purged);
        break;
    default:
        break;
    }
    if (w->what) jr__route_reply(r->js, &w->route, res->status, out.data, out.len);
}

void jr__srep_apply_entry(jr__srep *r, uint64_t index, uint64_t term, const void *data, size_t len)
{
    jr__js *js = r->js;
    jr__proposal *p = NULL;
    while (r->phead &&
           (r->phead->index < index || (r->phead->index == index && r->phead->term != term))) {
        jr__proposal *lost = r->phead;
        unlist(lost);
        resolve_fail(js, lost, JR_ELEADERLOST);
        if (lost->cb_fired) free_proposal(js, lost);
    }
    if (r->phead && r->phead->index == index) {
        p = r->phead;
        unlist(p);
    }
    apply_ctx a = {r, p && !p->resolved ? p->head : NULL, index};
    int rc = r->failed ? r->failed : jr__stream_fsm_apply(r->fsm, index, data, len, on_result, &a);
    if (rc != 0) {
        if (!r->failed)
            jr__node_log(js->n, JR_LOG_ERROR,
                         "stream '%s': replica failed at entry %" PRIu64 ": %s; %s", r->name, index,
                         jr_strerror(rc),
                         rc == JR_EVERSION ? "it waits for this server's upgrade"
                                           : "it is rebuilt from its peers");
        r->failed = rc;
        jr__srep_due(r, jr__node_now(js->n)); /* its timer rebuilds it */
        if (p) resolve_fail(js, p, rc);
    } else if (a.w) {
        /* Ops the fsm did not apply: its state is past this index already. During a catch-up
         * (r->cu: the entries queued meanwhile) that state is a peer's, taken at a later index
         * of the same committed log, so the entry did take effect there and only its result is
         * unknown here: its writes are answered as a lost leader's would be (a publish with a
         * msg_id is sent again and learns its seq from the duplicate window). Otherwise it is
         * a store mark ahead of the log. A replica applies committed entries only, so on a
         * member whose log was repaired by its leader these are the entries the store applied;
         * but a leader proposing them means its own log lost what its store holds (a single
         * voter whose WAL lost synced records). Its reads get the state as it is, which is
         * newer; its writes never take effect (a replay skips them too) and are told so. */
        static const char fetched[] = "its entry was applied within the state fetched from a "
                                      "peer";
        static const char ahead[] = "not applied: the replica's store is ahead of its log";
        if (!r->cu && !r->past_warned) {
            r->past_warned = 1;
            jr__node_log(js->n, JR_LOG_ERROR,
                         "stream '%s': entry %" PRIu64
                         " not applied: the store holds a later state "
                         "(entry %" PRIu64 ") than the log; the WAL lost records the store applied",
                         r->name, index, jr__stream_fsm_applied(r->fsm));
        }
        for (jr__waiter *w = a.w; w; w = w->next) {
            if (jr__req_leader_read(w->what))
                jr__stream_exec_read(js, r, w);
            else if (w->what == JR__REQ_BARRIER)
                barrier_answer(js, w, jr__stream_fsm_applied(r->fsm)); /* the newer state */
            else if (w->what && r->cu)
                jr__route_reply(js, &w->route, JR_ELEADERLOST, fetched, sizeof fetched - 1);
            else if (w->what)
                jr__route_reply(js, &w->route, JR_EDAMAGED, ahead, sizeof ahead - 1);
        }
    }
    if (p) {
        p->resolved = 1;
        if (p->cb_fired) free_proposal(js, p);
    }
}

/* The group's fsm ---------------------------------------------------------------------------*/

static void rep_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    jr__srep *r = ctx;
    uint64_t term = 0;
    jr__entry e;
    int in_log = 0; /* the entry's bytes are its log's: the queue need not copy them */
    if (r->g && jr__raft_entry(jr__group_consensus(r->g), index, &e) == 0) {
        term = e.term;
        in_log = e.data == data && e.len == len;
    }
    if (r->cu) {
        if (jr__catchup_queue(r, index, term, data, len, in_log) != 0) {
            jr__node_log(r->js->n, JR_LOG_ERROR,
                         "stream '%s': out of memory queueing entry %" PRIu64 " during catch-up",
                         r->name, index);
            r->failed = JR_ENOMEM;
        }
        return;
    }
    jr__srep_apply_entry(r, index, term, data, len);
    jr__clead_stream_changed(r->js, r->group); /* new messages for its consumers' leaders */
    int64_t clock = jr__stream_fsm_clock(r->fsm);
    if (clock > r->clock.stamp) /* another leader's stamps: maybe an anchor (stream/clock.h) */
        jr__sclock_observe(&r->clock, clock, jr__js_wall(r->js), jr__node_now(r->js->n));
    r->busy = 1;
    if (index >= r->synced + SYNC_ENTRIES)
        jr__srep_sync(r);
    else if (index != r->synced)
        jr__srep_due(r, r->next_sync);
}

/* A stream group's snapshot: u64 (little-endian) the fsm's own applied index, then the fsm's
 * snapshot (fsm.h). The fsm's index can be below the group's (entries after it were Raft's own:
 * no-ops, configurations), and the fsm restores at its own. */
static int rep_snapshot(void *ctx, jr_snapshot_writer *w)
{
    jr__srep *r = ctx;
    if (r->cu || r->failed) return JR_EBUSY;
    jr__buf *b = &r->js->scratch2;
    jr__buf_reset(b);
    jr__buf_u64(b, jr__stream_fsm_applied(r->fsm));
    int rc = b->err ? b->err : jr__stream_fsm_snapshot(r->fsm, b);
    if (rc == 0) {
        r->synced = jr__stream_fsm_applied(r->fsm); /* the snapshot synced the store */
        rc = jr_snapshot_write(w, b->data, b->len);
    }
    return rc;
}

static int rep_restore(void *ctx, uint64_t gindex, const void *data, size_t len)
{
    jr__srep *r = ctx;
    r->js->snap_restores++;
    /* The stream's own index may exceed the group's (gindex): the source's store was ahead of
     * its log (reopened at a mark past what its WAL kept) when it took the snapshot. That state
     * is of committed entries only, the same in every log, so installing it and skipping the
     * entries up to its index is exact. */
    int rc = len < 8 ? JR_ECORRUPT : 0;
    uint64_t index = rc ? 0 : jr__get_u64(data);
    uint64_t need = 0, before = jr__stream_fsm_applied(r->fsm);
    /* Restoring already: the queued entries are older than this snapshot and come first
     * (catchup.c restores it after them). */
    int later = !rc && r->cu && !r->failed;
    if (later) rc = jr__catchup_later(r, gindex, index, (const uint8_t *)data + 8, len - 8);
    if (!rc && !later)
        rc = jr__stream_fsm_restore(r->fsm, index, (const uint8_t *)data + 8, len - 8, &need);
    if (rc == JR_ERANGE && r->cu) return 0; /* older than the snapshot being restored */
    if (rc != 0) {
        /* Its state is not the snapshot's: applying the entries after it would diverge from
         * every other replica. It stops applying and its timer rebuilds it. */
        if (!r->failed)
            jr__node_log(r->js->n, JR_LOG_ERROR,
                         "stream '%s': snapshot at %" PRIu64 " not restored: %s; the replica "
                         "is rebuilt from its peers",
                         r->name, gindex, jr_strerror(rc));
        r->failed = rc;
        jr__srep_due(r, jr__node_now(r->js->n));
        return rc;
    }
    data = (const uint8_t *)data + 8;
    len -= 8;
    if (index > before || r->cu) {
        /* Requests waiting for entries the snapshot replaced: their fate is unknown here. */
        while (r->phead) {
            jr__proposal *p = r->phead;
            unlist(p);
            resolve_fail(r->js, p, JR_ELEADERLOST);
            if (p->cb_fired) free_proposal(r->js, p);
        }
        r->cfg_in_log = 1; /* the snapshot holds the config */
        r->cfg_pending = 0;
        jr__stream_fsm_share_config(r->fsm, r->as->cfg);
    }
    if (later) return 0;
    if (need) return jr__catchup_begin(r, index, data, len, need);
    if (r->cu) jr__catchup_finish(r); /* a newer snapshot completed it at once */
    return 0;
}

/* Makes the replica's state durable in its store (a mark at the applied index, store.h) now and
 * then: the store frees what limits and deletes emptied only at marks, and a restart reopens at
 * the last one. A snapshot does it too. */
void jr__srep_sync(jr__srep *r)
{
    if (r->failed || r->cu) return;
    uint64_t applied = jr__stream_fsm_applied(r->fsm);
    if (applied == r->synced) return;
    int rc = jr__stream_fsm_sync(r->fsm);
    if (rc != 0) {
        jr__node_log(r->js->n, JR_LOG_ERROR,
                     "stream '%s': store sync failed: %s; the replica is rebuilt", r->name,
                     jr_strerror(rc));
        r->failed = rc;
        jr__srep_due(r, jr__node_now(r->js->n));
        return;
    }
    r->synced = applied;
}

/* Leader duties -----------------------------------------------------------------------------*/

static int rebuild(jr__srep *r);
static void drop_proposals(jr__srep *r, int status);

/* The replica's timer runs its duties: rebuilding it once its state machine failed ("Rebuilding"
 * below), catch-up retries, store marks, the leader's config and TICK ops, peer changes and
 * proposal deadlines. It is armed only while one of them is due, or for one more visit a sync
 * interval after a visit that found none due while entries were applied (the store is trimmed
 * only once the stream is idle): an idle replica has no timer at all, so idle streams cost
 * nothing. Whatever makes a duty due
 * arms it: an entry applied (store mark), a proposal made (its deadline), an assignment update,
 * a catch-up, and a change of the replica's role (jr__srep_role_changed, from the node's
 * flush): a new leader finds its duties (first CONFIG, TICK, a peer change) on that visit, a
 * deposed one drops its leader state. */
static void rep_timer(jr__js *js, jr__jtimer *t)
{
    jr__srep *r = JR__CONTAINER_OF(t, jr__srep, timer);
    jr_node *n = js->n;
    uint64_t soon = jr__deadline(jr__node_now(n), js->election_ns / 2), next = UINT64_MAX;
    /* a failure makes this timer due at once: the group's leader learns of it from here */
    jr__srep_fsm_report(r);
    /* A committed entry of a newer release (JR_EVERSION) fails every replica of this release
     * alike: rebuilding would meet it again. It waits for this server's upgrade. */
    if (r->failed && r->failed != JR_EVERSION) {
        if (rebuild(r) == 0) return; /* r is gone: a new replica took its place */
        jr__js_timer_arm(js, &r->timer, jr__deadline(jr__node_now(n), js->election_ns));
        return;
    }
    if (r->rebuilt && !r->cu) {
        r->rebuilt = 0;
        jr__node_log(n, JR_LOG_INFO, "stream '%s': its replica is rebuilt", r->name);
    }
    if (r->cu) {
        jr__catchup_step(r);
        next = jr__catchup_due(r, jr__node_now(n), soon);
    }
    if (jr__node_now(n) >= r->next_sync) {
        jr__srep_sync(r);
        r->next_sync = jr__deadline(jr__node_now(n), SYNC_NS);
    }
    if (!r->failed && jr__stream_fsm_applied(r->fsm) != r->synced && r->next_sync < next)
        next = r->next_sync;
    if (jr__srep_is_leader(r)) {
        if (!r->led) {
            r->led = 1; /* leads from now on: acks applied under another leader may be due */
            if (r->as->cfg->c.retention != JR_RETAIN_LIMITS) r->sweep_next = 1;
        }
        if (r->sweep_next && !r->failed && !r->cu) {
            r->sweep_next = jr__retention_sweep(r, r->sweep_next, SWEEP_CHUNK);
            if (r->sweep_next) next = jr__node_now(n); /* more: at the next tick */
        }
        const jr_stream_config *fc = jr__stream_fsm_config_get(r->fsm);
        int differs = !r->cfg_in_log || !jr__stream_config_equal(fc, &r->as->cfg->c);
        if (!r->cfg_pending && differs) stage_config(r);
        if (differs) next = soon; /* until the config is in the log */
        uint64_t age = r->as->cfg->c.max_age_ns;
        if (age) {
            if (jr__node_now(n) >= r->next_tick) {
                jr__srep_stage_tick(r);
                uint64_t every = age / 4 > MIN_TICK_NS ? age / 4 : MIN_TICK_NS;
                r->next_tick = jr__deadline(jr__node_now(n), every);
            }
            if (r->next_tick < next) next = r->next_tick;
        }
        for (jr__proposal *p = r->phead; p; p = p->next) {
            if (p->deadline <= jr__node_now(n))
                resolve_fail(js, p, JR_ETIMEDOUT); /* in the log: it may still commit */
            else if (!p->resolved) {
                if (p->deadline < next) next = p->deadline;
                break;
            }
        }
        const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, r->group);
        if (s && s->updated == r->updated && !r->cu) jr__srep_members_duty(r, s, &next);
        if (r->holding) mark_dirty(r); /* the next flush asks whether the hold is over */
    } else {
        r->led = 0;
        r->sweep_next = 0;
        /* ops a hold kept staged while it led: they never reached the log, and proposed when
         * it next leads they would take effect long after their requesters gave up */
        if (r->nstage) jr__srep_fail_staged(r, JR_ENOTLEADER);
        jr__srep_memb_free(r);
        /* watch for leadership while a peer change is under way: a new leader resumes it */
        const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, r->group);
        if (s && jr__meta_stream_busy(s) && soon < next) next = soon;
        r->cfg_pending = 0; /* a new leader logs it again if it got lost */
        if (!r->cfg_in_log ||
            !jr__stream_config_equal(jr__stream_fsm_config_get(r->fsm), &r->as->cfg->c))
            next = soon; /* watch for leadership while the config is not in the log */
    }
    /* It failed during this visit (its store mark or a catch-up step failed): its rebuild, at
     * the top, is due at once. A leader among them hands its leadership over there; left
     * unarmed, it would stay the group's Raft leader, whose heartbeats keep the others from
     * electing one, while refusing every request. */
    if (r->failed && r->failed != JR_EVERSION) next = jr__node_now(n);
    /* Nothing due. A stream that applied entries since the last such visit is busy: its store
     * was just synced by this visit or by a snapshot, but the next entries will need the store's
     * active block window and buffers again, so trimming now would free and allocate them (and
     * fault their pages in) once a second or every snapshot. It is looked at again a sync
     * interval later; a visit that finds no entry applied since is idle, and trims. */
    if (next == UINT64_MAX && r->busy) {
        r->busy = 0;
        next = jr__deadline(jr__node_now(n), SYNC_NS);
    }
    if (next == UINT64_MAX) {
        jr__js_timer_cancel(js, &r->timer); /* nothing due: the next event re-arms it */
        jr__stream_fsm_trim(r->fsm);        /* idle and synced: what the files hold can go */
    } else
        jr__js_timer_arm(js, &r->timer, next);
}

void jr__srep_role_changed(jr__js *js, uint64_t group)
{
    jr__srep *r = jr__srep_find(js, group);
    if (r && !js->closing) jr__srep_due(r, jr__node_now(js->n));
}

/* Pulls the replica's timer in if it would fire later. */
void jr__srep_due(jr__srep *r, uint64_t when)
{
    jr__jtimer *t = &r->timer;
    if (!jr__timer_armed(&t->t) || t->t.deadline > when) jr__js_timer_arm(r->js, t, when);
}

/* Lifecycle ---------------------------------------------------------------------------------*/

/* Takes s's current assignment version (a reference: shared with the meta state, valid after
 * a later op replaces or deletes it). */
static void take_assignment(jr__srep *r, const jr__meta_stream *s)
{
    jr__meta_asgn *old = r->as;
    r->as = jr__meta_asgn_ref(s->asgn);
    jr__meta_asgn_put(old);
    r->name = r->as->cfg->c.name;
    r->updated = s->updated;
    if (r->fsm) jr__stream_fsm_share_config(r->fsm, r->as->cfg);
}

static void rep_free(jr__srep *r)
{
    jr__js *js = r->js;
    jr__srep_memb_free(r);
    jr__catchup_release(r);
    jr__meta_asgn_put(r->as);
    jr__buf_free(&r->stage);
    jr__free(js->alloc, r);
}

static void rep_unlink(jr__srep *r)
{
    jr__js *js = r->js;
    jr__map_del(&js->reps, r->group);
    for (jr__srep **pp = &js->rep_list; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    if (r->dirty)
        for (jr__srep **pp = &js->dirty; *pp; pp = &(*pp)->dirty_next)
            if (*pp == r) {
                *pp = r->dirty_next;
                break;
            }
    r->dirty = 0;
    jr__js_timer_cancel(js, &r->timer);
}

/* The origin-peer rule, shared by stream and consumer replicas. A group whose first peer change
 * since its creation drops one of its original peers may never have had a leader to make that
 * change (an R2 group shrunk to R1 while one of its servers was down from its creation on), and
 * then it needs every original peer to elect one, including the dropped one, which holds no
 * replica if it was down at the creation. So such a server runs a replica, bootstrapped with the
 * creation's peer set (the same first entry as every original peer's), until the change
 * converged. Only the first change: after one converged the group had a leader, and a later
 * change is made by it without the dropped server. */
int jr__js_origin_peer(const jr__js *js, const jr__origin_facts *f)
{
    if (!f->origin || f->converged_at != f->created || !f->busy || f->has_peer) return 0;
    for (size_t i = 0; i < f->norigin; i++)
        if (!strcmp(f->origin[i], js->name)) return 1;
    return 0;
}

/* Where the origin-peer rule yields: a lone original peer that lost its WAL. The rule reasons
 * that an original peer holding nothing of the group never held it (one that held it recovers
 * it), so the group may never have had a leader but the one it can elect. A server whose WAL
 * was lost recovers nothing of a group it held, and for a creation's peer set of this server
 * alone the bootstrap entry makes it a lone voter: no peer it knows can tell it what it lost, so
 * it leads at once (raft.c, start). That is right only if it never held the group: if it had,
 * it led it (a lone voter elects itself at once), the change under way may have added and
 * promoted other voters whose configuration names it, and leading again from its bootstrap
 * entry forks the group's log in a term it already used (jetraft-sim seed 648). Joining, it
 * opens damaged without a configuration and is repaired by their leader (raft/vouch.c, a
 * replica without a configuration). The cost, when it never held the group (it was placed there
 * while down with its WAL lost, and the grow began before it came back): nobody bootstraps, and
 * the group waits (unavailable, where bootstrapping could fork a log). A group
 * created after the loss (jr__mnode_after_restart) is new here and bootstraps as ever. */
int jr__js_origin_lost(jr__js *js, size_t norigin, uint64_t created, uint64_t group)
{
    return norigin == 1 && js->facts.wal_lost && !jr__node_group_known(js->n, group) &&
           !jr__mnode_after_restart(js, created);
}

/* 1 if this server is an original peer of s that s's first, unconverged peer change drops
 * (jr__js_origin_peer). */
int jr__srep_origin_peer(const jr__js *js, const jr__meta_stream *s)
{
    jr__origin_facts f = {s->origin ? s->origin->peers : NULL,
                          s->origin ? s->origin->npeers : 0,
                          s->created,
                          s->converged_at,
                          jr__meta_stream_busy(s),
                          jr__meta_stream_has_peer(s, js->name)};
    return jr__js_origin_peer(js, &f);
}

/* 1 if this server is an original peer of s that the first peer change since s's creation
 * keeps, and that change has not converged: as for a dropped one (jr__srep_origin_peer), the
 * group may never have had a leader to make the change and then needs this server's vote,
 * and a server that did not apply the creation before the change (down, cut off) holds no
 * replica before this one. A server that held the group recovers it (the voter list is
 * ignored), so only one that never held it bootstraps, with the same first entry as every
 * original peer. */
static int origin_kept(const jr__js *js, const jr__meta_stream *s)
{
    if (!s->origin || s->converged_at != s->created || !jr__meta_stream_busy(s) ||
        !jr__meta_stream_has_peer(s, js->name))
        return 0;
    for (size_t i = 0; i < s->origin->npeers; i++)
        if (!strcmp(s->origin->peers[i], js->name)) return 1;
    return 0;
}

/* The voters this server's replica of s bootstraps its group with (NULL: it joins): the
 * original peers while s's peer set is its creation's, and the creation's peers for an original
 * peer the first change drops (jr__srep_origin_peer) or keeps (origin_kept) while that change
 * has not converged. Either way the same first entry as every original peer's. Any other
 * server the current peer set names joins, however young the group: bootstrapping a peer set
 * it may have left would fork the log. */
static const char *const *boot_peers(jr__js *js, const jr__meta_stream *s, size_t *n)
{
    if (jr__meta_stream_bootstraps(s)) {
        *n = s->npeers;
        return s->peers;
    }
    if ((jr__srep_origin_peer(js, s) || origin_kept(js, s)) &&
        !jr__js_origin_lost(js, s->origin->npeers, s->created, s->group)) {
        *n = s->origin->npeers;
        return s->origin->peers;
    }
    *n = 0;
    return NULL;
}

int jr__srep_create(jr__js *js, const jr__meta_stream *s)
{
    jr_node *n = js->n;
    /* Destroyed a moment ago and its WAL DROP waits for memory: create it afresh once the DROP
     * is staged (the caller converges again later). */
    if (jr__node_group_retiring(n, s->group)) return JR_EBUSY;
    if (!jr__node_group_known(n, s->group)) {
        /* A replica new on this server: nothing of its group is durable here, so no store can
         * hold a state of its log (entries are applied only once durable). A store found under
         * the name belongs to a deleted stream of the same name (its removal cut short by a
         * crash, or never done): it must not pass for this one's. */
        int rc = jr__store_destroy(js->facts.vfs, js->store_dir, s->name);
        if (rc != 0) {
            jr__node_log(n, JR_LOG_ERROR, "stream '%s': cannot remove a leftover store: %s",
                         s->name, jr_strerror(rc));
            return rc;
        }
    }
    jr__srep *r = jr__calloc(js->alloc, 1, sizeof *r);
    if (!r) return JR_ENOMEM;
    r->js = js;
    r->group = s->group;
    take_assignment(r, s);
    jr__buf_init(&r->stage, js->alloc);
    jr__js_timer_init(&r->timer, rep_timer);
    jr__sclock_init(&r->clock);
    char err[256] = "";
    jr__stream_fsm_config fc;
    memset(&fc, 0, sizeof fc);
    fc.stream = &s->cfg->c;
    fc.vfs = js->facts.vfs;
    fc.dir = js->store_dir;
    fc.alloc = js->alloc;
    if (s->cfg->c.storage == JR_STORAGE_FILE) {
        fc.block_bytes = js->facts.store_block_bytes;
        fc.master_key = js->facts.key; /* encryption at rest: a stream key derived from it */
    }
    int rc = jr__stream_fsm_open(&fc, &r->fsm, err, sizeof err);
    int rebuilt = 0;
    if (rc == JR_ECORRUPT && jr__node_group_known(n, s->group) && s->npeers > 1) {
        /* The store is damaged beyond a torn tail (a block or a mark that does not verify, a
         * block missing). What it held is a state of the group's log, which the group still
         * has: its snapshot restores the stream's state (and fetches the messages from the
         * leader), its log re-applies the rest. So the store is discarded and opened empty, at
         * index 0, instead of leaving the replica unable to open (and the group without it)
         * for good. Only with other replicas to fetch the messages from: a single replica's
         * store is all there is, and is left as it is for an operator. */
        jr__node_log(n, JR_LOG_WARN,
                     "stream '%s': its store is damaged (%s); rebuilding it from the group's "
                     "snapshot and log",
                     s->name, err);
        err[0] = 0;
        rc = jr__store_destroy(js->facts.vfs, js->store_dir, s->name);
        if (rc == 0) rc = jr__stream_fsm_open(&fc, &r->fsm, err, sizeof err);
        rebuilt = 1; /* damaged until its catch-up completed (jr__srep_damage) */
    }
    if (rc == 0) rc = jr__map_put(&js->reps, r->group, r);
    /* A store reopened at a mark holds a state of the log, whose config the log carries. */
    if (rc == 0) {
        r->rebuilt = (uint8_t)rebuilt;
        r->cfg_in_log = jr__stream_fsm_applied(r->fsm) > 0;
        jr__stream_fsm_share_config(r->fsm, r->as->cfg);
    }
    if (rc != 0) {
        jr__node_log(n, JR_LOG_ERROR, "stream '%s': cannot open its replica: %s %s", s->name,
                     jr_strerror(rc), err);
        jr__stream_fsm_abandon(r->fsm);
        rep_free(r);
        return rc;
    }
    r->next = js->rep_list;
    js->rep_list = r;
    jr_fsm fsm = {JR_FSM_VERSION, r, rep_apply, rep_snapshot, rep_restore};
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = s->group;
    /* Only the original peers bootstrap (one identical first entry on each); after a peer
     * change the group exists, and a server new to it joins empty and waits for the leader
     * to add it — bootstrapping with the new peer set would fork the log at index 1. (A
     * recovered group ignores the voter list either way.) */
    size_t nboot;
    const char *const *boot = boot_peers(js, s, &nboot);
    if (boot) {
        gc.voters = boot;
        gc.nvoters = nboot;
    }
    gc.fsm = &fsm;
    gc.snapshot_entries = js->snapshot_entries;
    /* a joiner starts from the floor the last converged peer change left (it may be a server
     * removed earlier and added back: raft.h join_*) */
    jr__join_floor floor = {s->floor_term, s->floor_commit_term, s->floor_commit};
    /* A server that was no peer of the group before this life: one of the original peers of a
     * stream created since. (A joiner may have been one before a lost WAL tail, even one of the
     * current peer set: its replica opens unvouched and damaged.) */
    int fresh = boot && jr__mnode_after_restart(js, s->created);
    rc = jr__group_create(n, &gc, &floor, fresh, &r->g);
    if (rc != 0) {
        jr__node_log(n, JR_LOG_ERROR, "stream '%s': cannot open group %" PRIu64 ": %s", s->name,
                     s->group, jr_strerror(rc));
        r->g = NULL;
        if (r->cu) jr__catchup_free(r);
        rep_unlink(r);
        jr__stream_fsm_close(r->fsm);
        rep_free(r);
        return rc;
    }
    jr__map_del(&js->hints, r->group);
    /* a catch-up begun by the restore of its snapshot inside jr__group_create, before r->g was
     * set: its log is capped from here (catchup.c "Log") */
    if (r->cu) jr__group_cap_log(r->g, js->catchup_log_max);
    /* created from a meta state that may predate the stream's deletion: no vote until it is
     * known current (jr__mnode_caught_up) */
    if (!jr__mnode_caught_up(js)) jr__group_hold(r->g, 1);
    r->next_sync = jr__deadline(jr__node_now(n), SYNC_NS);
    jr__js_timer_arm(js, &r->timer, jr__node_now(n));
    return 0;
}

/* Rebuilding -------------------------------------------------------------------------------*/

void jr__srep_store_failed(jr__srep *r, int rc, const char *what)
{
    if (!r->failed)
        jr__node_log(r->js->n, JR_LOG_ERROR,
                     "stream '%s': %s failed: %s; the replica is rebuilt from its peers", r->name,
                     what, jr_strerror(rc));
    if (!r->failed) r->failed = rc;
    jr__srep_due(r, jr__node_now(r->js->n));
}

int jr__srep_damage(const jr__srep *r)
{
    if (r->failed) return r->failed;
    return r->rebuilt && r->cu ? JR_EDAMAGED : 0;
}

void jr__srep_fsm_report(jr__srep *r)
{
    if (!r->g || jr__group_closed(r->g)) return;
    int state = r->failed                 ? JR__FSM_FAILED
                : jr__srep_damage(r) != 0 ? JR__FSM_REBUILDING
                                          : JR__FSM_WHOLE;
    jr__group_set_fsm_state(r->g, state);
}

/* 1 if a replica that failed with `failed` keeps its store when rebuilt: an I/O error or a full
 * disk (a write or sync that did not happen) or no memory, never damage. */
static int keeps_store(int failed)
{
    return failed == JR_EIO || failed == JR_ENOSPC || failed == JR_ENOMEM;
}

/* A replica whose state machine failed while the server runs — its store failed a read
 * (a block that no longer verifies), a sync, an apply or a snapshot restore — holds a state that
 * cannot go on. Its group's Raft state is whole (the WAL and the store are separate files, and a
 * failure of the store says nothing about the log), so it keeps its vote and log and only the
 * store is rebuilt, as at a restart with a damaged store (jr__srep_create): the store is
 * discarded, the replica closed and created again, and its group, reopened, restores its newest
 * snapshot (which fetches the messages from a peer, catchup.c) and re-applies its log after it.
 * A failure that is not damage (an I/O error or a full disk on a write or sync, no memory:
 * keeps_store) keeps the store: the replica is reopened from it as at a restart (its files are
 * as a crash would leave them, the log re-applies what its last mark lacks), since discarding
 * it could throw away the only whole copy of messages whose other copies a disk fault took.
 * A leader first hands its leadership to a caught-up voter (a leader that cannot apply serves
 * nobody) and is rebuilt once it follows; a single replica (nobody to fetch from) is left failed
 * for an operator. Runs from the replica's timer, never inside apply or flush. 0 once rebuilt
 * (r is freed), else an error and r stays (its timer tries again). */
static int rebuild(jr__srep *r)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, r->group);
    if (js->closing || !s || s->npeers < 2 || !jr__meta_stream_has_peer(s, js->name) || !r->g ||
        jr__group_closed(r->g))
        return JR_EINVAL;
    if (jr__raft_role(jr__group_consensus(r->g)) == JR_LEADER) {
        if (!r->rebuild_at || jr__node_now(n) >= jr__deadline(r->rebuild_at, 2 * js->election_ns)) {
            r->rebuild_at = jr__node_now(n);
            int rc = jr_group_transfer(r->g, NULL, NULL, NULL);
            if (rc != 0 && rc != JR_ETRANSFER)
                jr__node_log(n, JR_LOG_WARN,
                             "stream '%s': its failed replica leads and cannot hand over yet: %s",
                             r->name, jr_strerror(rc));
        }
        return JR_EBUSY;
    }
    if (keeps_store(r->failed))
        jr__node_log(n, JR_LOG_WARN,
                     "stream '%s': reopening its replica from its store (%s is not damage) and "
                     "the group's log",
                     r->name, jr_strerror(r->failed));
    else
        jr__node_log(n, JR_LOG_WARN,
                     "stream '%s': rebuilding its replica from the group's snapshot and log and "
                     "its peers",
                     r->name);
    rep_unlink(r);
    jr__srep_fail_staged(r, JR_ENOTLEADER);
    drop_proposals(r, JR_ELEADERLOST);
    if (r->cu) jr__catchup_free(r);
    jr__group_detach(r->g, JR_ECLOSED);
    jr__stream_fsm_abandon(r->fsm);
    int rc = keeps_store(r->failed) ? 0 : jr__store_destroy(js->facts.vfs, js->store_dir, r->name);
    rep_free(r);
    if (rc == 0) rc = jr__srep_create(js, s);
    if (rc != 0) {
        /* the group stays dormant; convergence creates the replica again */
        jr__node_log(n, JR_LOG_ERROR, "stream '%s': rebuilding its replica failed: %s", s->name,
                     jr_strerror(rc));
        js->converge_failed = 1;
        return 0;
    }
    jr__srep *nr = jr__srep_find(js, s->group);
    if (nr) {
        nr->rebuilt = 1;
        jr__srep_fsm_report(nr); /* rebuilding while it fetches its messages */
    }
    return 0;
}

void jr__srep_update(jr__srep *r, const jr__meta_stream *s)
{
    take_assignment(r, s);
    if (jr__srep_is_leader(r) && !r->cfg_pending &&
        !jr__stream_config_equal(jr__stream_fsm_config_get(r->fsm), &r->as->cfg->c))
        stage_config(r);
    jr__srep_due(
        r, jr__node_now(r->js->n)); /* duties may have changed: a peer change, max_age, config */
}

/* Removing files: names are collected first (no removal while the vfs lists). */
/* Answers and forgets every proposal of r (the replica goes away). */
static void drop_proposals(jr__srep *r, int status)
{
    while (r->phead) {
        jr__proposal *p = r->phead;
        unlist(p);
        resolve_fail(r->js, p, status);
        if (p->cb_fired) free_proposal(r->js, p); /* else the node's callback frees it */
    }
}

void jr__srep_leave(jr__srep *r, int purge)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    rep_unlink(r);
    jr__srep_fail_staged(r, JR_ENOSTREAM);
    drop_proposals(r, JR_ENOSTREAM);
    if (r->cu) jr__catchup_free(r);
    /* Pending ops complete with JR_ECLOSED at the next drain; their callbacks free the
     * proposals answered above. */
    if (r->g) jr__group_detach(r->g, JR_ECLOSED);
    if (purge) {
        jr__stream_fsm_abandon(r->fsm);
        /* atomic (store.h): a crash halfway leaves a store that opens empty, not a torso */
        int rc = jr__store_destroy(js->facts.vfs, js->store_dir, r->name);
        if (rc != 0)
            jr__node_log(n, JR_LOG_WARN, "stream '%s': its store could not be removed: %s", r->name,
                         jr_strerror(rc));
        rc = jr__node_group_destroy(n, r->group);
        if (rc != 0)
            jr__node_log(n, JR_LOG_WARN,
                         "stream '%s': its group %" PRIu64
                         " could not be released (%s): its log stays in the WAL until a restart",
                         r->name, r->group, jr_strerror(rc));
    } else {
        jr__stream_fsm_close(r->fsm);
    }
    rep_free(r);
}

int jr__srep_sweep_stashes(jr__js *js)
{
    jr_node *n = js->n;
    /* ids first: reopening a replica takes its stash out of the node's table */
    uint64_t *ids;
    size_t k;
    int rc = jr__node_unopened_groups(n, JR__FIRST_STREAM_GROUP_ID, js->st.next_group, &ids, &k);
    if (rc != 0) return rc;
    for (size_t i = 0; i < k; i++) {
        uint64_t id = ids[i];
        /* Consumers' groups share the id space: one of a consumer placed here is its
         * replica's, not yet reopened (converge creates it once its stream's replica runs) */
        const jr__meta_consumer *mc = jr__meta_consumer_by_group(&js->st, id);
        if (mc && jr__meta_consumer_has_peer(mc, js->name)) continue;
        if (mc && (jr__meta_consumer_busy(mc) || !jr__mnode_replayed(js))) {
            /* Moved off this server by a change that has not converged: the group's
             * configuration may still name this replica a voter it needs (to elect a leader,
             * and to answer the VOUCH of a restarted member), so it is reopened, as a running
             * replica stays (meta_replica.c converge_consumer), and leaves once the change
             * converged. After the replay at open and its stream's replica, as converge
             * creates one; until then the stash waits and convergence comes back. */
            if (jr__crep_find(js, id)) continue;
            /* A stream that moved on without this server while the consumer's change was
             * stalled (stream_peers.c consumer_moving) has no replica to wait for here: the
             * consumer's replica runs without one, so its leader can complete the change. */
            const jr__meta_stream *ms = mc->stream;
            int stream_here = jr__meta_stream_has_peer(ms, js->name) || jr__meta_stream_busy(ms) ||
                              jr__srep_origin_peer(js, ms);
            if (!jr__mnode_replayed(js) || (stream_here && !jr__srep_find(js, ms->group))) {
                rc = JR_EBUSY;
                continue;
            }
            jr__node_log(n, JR_LOG_INFO,
                         "consumer '%s > %s': removed from this server by a peer change that is "
                         "not over; its replica runs until it is",
                         mc->stream->name, mc->cfg->c.name);
            if (jr__crep_create(js, mc) != 0) rc = JR_ENOMEM;
            continue;
        }
        const jr__meta_stream *s = jr__meta_stream_by_group(&js->st, id);
        if (s && jr__meta_stream_has_peer(s, js->name)) continue; /* converge creates it */
        if (s && jr__srep_origin_peer(js, s)) continue;           /* jr__srep_sweep_origins */
        if (s && (jr__meta_stream_busy(s) || !jr__mnode_replayed(js))) {
            if (jr__mnode_replayed(js))
                jr__node_log(n, JR_LOG_INFO,
                             "stream '%s': removed from this server by a peer "
                             "change that is not over; its replica runs until "
                             "it is",
                             s->name);
            if (!jr__srep_find(js, id) && jr__srep_create(js, s) != 0) rc = JR_ENOMEM;
            continue;
        }
        if (jr__node_group_destroy(n, id) != 0) {
            rc = JR_ENOMEM; /* converge again later */
            continue;
        }
        if (mc) {
            jr__node_log(n, JR_LOG_INFO,
                         "consumer '%s > %s': removed from this server while it was down; "
                         "releasing its log",
                         mc->stream->name, mc->cfg->c.name);
        } else if (s) {
            jr__node_log(n, JR_LOG_INFO,
                         "stream '%s': removed from this server while it was "
                         "down; releasing its log and store",
                         s->name);
            int drc = jr__store_destroy(js->facts.vfs, js->store_dir, s->name);
            if (drc != 0)
                jr__node_log(n, JR_LOG_WARN, "stream '%s': its store could not be removed: %s",
                             s->name, jr_strerror(drc));
        } else {
            jr__node_log(n, JR_LOG_INFO,
                         "group %" PRIu64 ": its stream was deleted while this "
                         "server was down; releasing its log",
                         id);
            jr__node_released_forget(n, id); /* deleted: nothing to vouch for */
        }
    }
    jr__free(js->alloc, ids);
    return rc;
}

void jr__srep_close_all(jr__js *js, int flush)
{
    while (js->rep_list) {
        jr__srep *r = js->rep_list;
        rep_unlink(r);
        jr__srep_fail_staged(r, JR_ECLOSED);
        drop_proposals(r, JR_ECLOSED);
        if (r->cu) jr__catchup_free(r);
        if (flush)
            jr__stream_fsm_close(r->fsm);
        else
            jr__stream_fsm_abandon(r->fsm);
        rep_free(r);
    }
}

int jr__srep_sweep_origin(jr__js *js, const jr__meta_stream *s)
{
    if (!jr__mnode_replayed(js)) return 0;
    int rc = 0;
    if (jr__srep_origin_peer(js, s) && !jr__srep_find(js, s->group)) {
        jr__node_log(js->n, JR_LOG_INFO,
                     "stream '%s': an original peer the first peer change drops; its replica "
                     "runs until the change is over",
                     s->name);
        if (jr__srep_create(js, s) != 0) rc = JR_ENOMEM;
    }
    /* the stream's consumers, by the same rule; with or without a replica of the stream here
     * (one the stream's own change left behind): such a replica is there to elect the leader
     * that completes the change, whose peer duty needs no stream replica */
    for (size_t k = 0; k < s->nconsumers; k++) {
        const jr__meta_consumer *c = s->consumers[k];
        if (!jr__crep_origin_peer(js, c) || jr__crep_find(js, c->group)) continue;
        jr__node_log(js->n, JR_LOG_INFO,
                     "consumer '%s > %s': an original peer the first peer change drops; its "
                     "replica runs until the change is over",
                     s->name, c->cfg->c.name);
        int crc = jr__crep_create(js, c);
        if (crc != 0 && rc != JR_ENOMEM) rc = crc == JR_EBUSY ? JR_EBUSY : JR_ENOMEM;
    }
    return rc;
}

int jr__srep_sweep_origins(jr__js *js)
{
    int rc = 0;
    for (size_t i = 0; i < js->st.nstreams; i++) {
        int one = jr__srep_sweep_origin(js, js->st.streams[i]);
        if (one != 0 && rc != JR_ENOMEM) rc = one;
    }
    return rc;
}
