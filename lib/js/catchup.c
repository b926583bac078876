/*
 * catchup — a stream replica restored from a snapshot pulls the messages it lacks.
 *
 * A stream snapshot is the stream's metadata, not its messages (fsm.h). When a replica installs
 * one (a new replica, or one so far behind that the leader's log was compacted past it), the
 * fsm reconciles its store and reports the first seq it must fetch. The replica then asks a peer
 * that holds the stream — the other replicas in turn, the leader last, so the leader keeps its
 * thread for publishes — for the messages from that seq on, one chunk at a time (flow control:
 * one request in flight), each chunk the source store's checksummed records, lz4-compressed on
 * the wire; a source near its end sends the rest along when it is no longer than the chunk. A
 * chunk that does not end the round is staged (compressed) while the request for the next one
 * leaves, and applied after that flush: the source reads the next chunk while this one is
 * applied here.
 *
 * Bounded first round. The first round stops at the last seq of the snapshot being restored: the
 * chunk that reaches it is cut there (a chunk holds every live message of its range, so its
 * prefix holds every one of the shorter range) and that snapshot is restored. A seq at or below
 * it can be removed after the snapshot's index but never added, so the store then holds exactly
 * the snapshot's messages unless the source removed one after that index; restore finds such a
 * message missing (fsm.h) and the round goes on unbounded, as below. Entries after the
 * snapshot's index come from the queue, so a bounded round fetches each message once however
 * fast publishers append.
 *
 * Exactness of an unbounded round. The chunks are read in seq order from a source whose state
 * moves forward; the round ends with the chunk that reaches the source's last seq, and that chunk
 * comes with the source's own snapshot taken where it was read (a snapshot bigger than a piece
 * follows in pieces, the source keeping it for the purpose). The replica restores that
 * snapshot: its state is then exactly the source's at that index (fsm.h: a message live there
 * was live when its chunk was read, and what was deleted since is deleted by the
 * reconciliation), and the group's entries up to that index are ignored when applied. A chunk
 * read at an index below the snapshot being restored, or below an earlier chunk's, is not
 * applied (that source is behind; the replica asks again). If writes moved the source on
 * meanwhile, the restore asks for what came after and another round follows.
 *
 * Entries the group commits while the replica is restoring are queued in order (with their
 * terms) and applied once the restore completes, so the replica's log and state machine stay in
 * step: a bounded batch per turn of the node (drain), the replica staying restoring until the
 * queue is empty, so its Raft answers its leader between batches.
 *
 * Later snapshots. A group snapshot installed meanwhile (the leader's log was compacted past
 * this replica) is kept and restored once the entries queued before it are applied; the
 * messages it then misses are those of the entries the log no longer had, fetched in a round
 * bounded by its last seq, and the queue goes on. Before the snapshot replaces the log, the queued
 * entries left there and the committed ones not applied yet are copied into the queue
 * (copy_from_log, take_waiting), so what the replica received is applied, not fetched. Up to
 * LATER_MAX are kept, oldest first, each
 * restored after the entries queued before it; a newer one replaces the newest kept one when
 * nothing was queued after that one (the snapshots a leader sends a replica that takes no
 * entries replace one another). With LATER_MAX kept, a newer one replaces the newest and drops
 * the queued entries after it (they were to be applied on that one's state; their messages are
 * fetched after the newer one, counted in js->catchup_dropped).
 * Snapshots of a restoring replica are refused (the node retries later). This is not a
 * replay of the WAL from zero: the WAL only ever needs the entries after the snapshot, and it
 * is compacted behind the store's durable point when snapshots are taken.
 *
 * Queue. The group's log holds every entry the replica applies while it restores (a restoring
 * replica takes no snapshot, so nothing compacts it; committed entries are truncated only when
 * the group lost them, JR_SYNC_INTERVAL and a power loss of a majority), so the queue keeps an
 * entry's index and term and leaves its bytes in the log (in_log), reading them there when it
 * applies the entry: an entry costs its memory once. Entries are copied into
 * the queue only when the log is about to lose them — before a later snapshot replaces it
 * (above) — or when the bytes handed to the apply are not the log's own (rep_apply; entries are
 * applied at the node's flushes, always from the group's log, so this is a guard). What the queue
 * holds copied beyond js->catchup_queue_max bytes (jr_node_config's catchup_queue_bytes) shrinks
 * the log's cap by as much (below). An entry left in the log that is no longer there, or no longer
 * of its term, when it is applied (the group lost it) fails the replica, which is rebuilt from its
 * peers. The replica's Raft is not held back: it keeps acknowledging the leader's log, which the
 * leader then need not keep for it.
 *
 * Log. Nothing above bounds the group's log: a restoring replica takes no snapshot, so its log
 * keeps every entry since the snapshot it restored, queued or not applied yet, for as
 * long as the copy takes, however fast the group commits. So while a catch-up runs its group's
 * log is capped at js->catchup_log_max bytes (jr_node_config's catchup_log_bytes;
 * jr__group_cap_log, raft.h jr__raft_cap_log) less what the queue holds copied beyond its own
 * bound (cap_log; so the two hold at most both bounds together): an observer whose log holds that
 * much takes no more entries, and its leader treats it as a follower that fell behind — it retries
 * one APPEND per heartbeat interval, keeps it no more log than it keeps a follower once its
 * acknowledgements stop moving (lib/node/snapshot.c catching_up), and sends a snapshot once its
 * log is compacted past it. That snapshot, installed while restoring, is kept as above, resets
 * the log, and the replica takes entries again; the messages of the entries it never received
 * are fetched after the kept snapshot, as for any later snapshot. Nothing is lost (a dropped
 * APPEND is resent or covered by the snapshot) and the group's commits never wait (an observer
 * is in no quorum; a voter is never capped: the quorum may need it). Where it lives: in the
 * Raft core as the follower's refusal, because that needs no message or leader change, holds
 * with a leader of an older release, and makes the bound exact at the one place entries enter
 * the replica (raft.h says why it is safe). The cap is lifted when the catch-up ends: the
 * replica's snapshots then compact its log, and its leader's next probe finds it taking entries.
 *
 * Pacing. A joining observer (a grow, a move) whose group is busy with proposals copies in a
 * bounded share of the time, so that the publishers keep the rest (the replica's thread, and on
 * a machine whose cores the servers share, the source's and the group's too). A chunk during
 * whose round trip the group's commit index moved on, as it did during the previous chunk's (a
 * lone commit, such as the peer change's own entry, is no busy group), is applied at once (no
 * request sent ahead)
 * and the next request waits: at the replica's next visit the step's cost is measured (the
 * node's clock from the request to that visit: the source's read, the transfer, applying the
 * chunk, and any time the replica's thread waited for a core), and the replica pauses PACE_IDLE
 * times that cost (at most PACE_MAX_NS) before it asks again — a quarter of the time for the
 * copy, the rest for the group. An idle group gets the pipelined rounds unpaced. Not paced: the
 * first answer of a catch-up (the commit index known when its request left may be the
 * snapshot's, and the log's own entries arriving then are no proposals), a catch-up that had a
 * later snapshot (the group went past the replica: pauses would only let it fall further
 * behind), one for which PACE_QUEUE_MAX bytes of entries wait (queued, or in the group's log: a
 * longer copy makes more of what the publishers append wait), one whose chunk held less than
 * PACE_IDLE + 1 times the entry bytes the group committed during its round trip (paced to its
 * share, the copy would be slower than the group: it would fall further behind with every pause,
 * into its bounds and later snapshots, and fetch again what those cover), a voter's (the quorum
 * may need it), and the queued entries' batches (they must outpace the publishers). Progress: every
 * pause is finite and ends in a chunk of a round bounded by the snapshot's last seq, so the copy
 * completes however long the publishers go on, and the queue is applied as above.
 *
 * Request size. A request asks for at most ask_max bytes, and its answer holds up to twice that
 * (the rest of a stream comes along) plus a piece of the source's snapshot no longer than that
 * either: all of it must arrive within the request's timeout (two election timeouts), or the
 * replica gives up on it and asks again — forever, on a link too slow for the largest answer
 * (at 6 MB/s, two 1 MiB chunks take longer than 300 ms). So a request that timed out halves
 * ask_max for the next (down to CHUNK_MIN, whose answer crosses a 1 MB/s link in time), and an
 * answer that came within a quarter of the timeout doubles it back (up to CHUNK_BYTES, or a
 * quarter of a frame): on a slow link the copy settles on answers that arrive in time, on a
 * fast one it keeps the largest. While the group outruns the copy (its latest chunk held less
 * than PACE_IDLE + 1 times the entry bytes the group committed during the chunk's round trip)
 * and that chunk came within a quarter of the timeout, the largest is CHUNK_OUTRUN (still a
 * quarter of a frame at most): a copy bound by its round trips (the source's and this replica's
 * threads busy with the group's entries, or waiting for a core) moves more per round trip, so
 * it can keep up with the publishers instead of falling into its bounds and later snapshots. A
 * copy bound by its link gains nothing from larger chunks, which would only hold the group's
 * entries back behind them on that link: its answers come slower than that, and it keeps
 * CHUNK_BYTES. A source of an older release answers at most its own largest chunk.
 *
 * JR__RPC_CATCHUP payloads (varint = canonical LEB128, str = varint length + bytes):
 *   request  u8 0 (chunk) | varint group | varint from | varint max_bytes
 *            u8 1 (piece) | varint group | varint snap_index | varint offset | varint max_bytes
 *   response u8 0 | varint next | varint raw_len | str lz4(records) | varint read_at (the
 *            source's applied index) | u8 final (the chunk reaches the source's last seq) |
 *            varint snap_total (final: the size of the source's snapshot at read_at, 0 if it
 *            could not take one) | str the snapshot's first piece
 *            u8 1 | varint snap_index | varint offset | varint total | str piece
 *   A piece of a snapshot the source no longer keeps is JR_ENOTFOUND (a new round follows).
 */
#include <inttypes.h>
#include <lz4.h>
#include <string.h>

#include "js/js.h"
#include "store/srecord.h"
#include "util/alloc.h"
#include "util/deadline.h"

#define CHUNK_BYTES (1u << 20) /* at most; a quarter of a frame below 4 MiB frames */
/* at most, for a copy its group outruns ("Request size"); a quarter of a frame below 16 MiB */
#define CHUNK_OUTRUN (4u << 20)
#define CHUNK_MIN (16u << 10) /* the least a request asks for (see "Request size") */
#define PIECE_BYTES (256u << 10)
#define MAX_SNAPSHOT (1ull << 32) /* largest source snapshot accepted */
#define DRAIN_BYTES (16u << 20)   /* queued entry bytes applied a turn, beyond those queued since */
#define PACE_IDLE 3               /* busy group: idle time per unit of a step's cost (1/4 share) */
#define PACE_MAX_NS (100u * 1000 * 1000) /* the longest pause after one step */
#define PACE_QUEUE_MAX (256ull << 20)    /* entry bytes waiting beyond which the copy is unpaced */
/* group snapshots kept while restoring, each restored after the entries queued before it */
#define LATER_MAX 8

enum { OP_CHUNK = 0, OP_PIECE = 1 };

/* A queued entry: its bytes copied into data, or, in_log, left in the group's log, which holds
 * every entry this replica applied while it restores ("Queue" above), and read there when the
 * entry is applied. */
typedef struct qent {
    uint64_t index, term;
    size_t len;
    uint8_t in_log;
    uint8_t data[];
} qent;

struct jr__catchup {
    uint8_t *snap; /* the snapshot being restored (ours, then the source's) */
    size_t snap_len;
    uint64_t snap_index;
    uint64_t need;    /* first seq still missing */
    uint64_t read_at; /* the latest source index a chunk applied here was read at (at least the
                         snapshot's: a source behind it could not restore what the log no
                         longer has for this replica) */
    uint64_t upto;    /* bounded round (non-zero): the last seq of the snapshot being restored;
                         chunks are applied up to it and the snapshot is then restored */
    uint64_t rpc_id;  /* the request in flight (0: none) */
    uint32_t ask_max; /* bytes a request asks for ("Request size" above; 0: the most) */
    jr__id source;    /* where the round's chunks come from (pieces must too) */
    unsigned attempts;
    /* the source's snapshot arriving in pieces (total 0: none) */
    jr__buf piece;
    uint64_t piece_index, piece_total;
    /* a chunk received and not applied yet (staged: 1), while the request for the next one is
     * out: its compressed records, the seq it was asked from, and its answer's fields */
    jr__buf z;
    int staged;
    uint64_t z_from, z_next, z_raw, z_at;
    /* the entries the group committed meanwhile, q[qhead..nq) not applied yet; once the
     * messages are in (draining) they are applied a bounded batch per turn of the node */
    qent **q;
    size_t qhead, nq, capq;
    uint64_t qnew;   /* bytes queued since the last batch was applied */
    uint64_t qbytes; /* bytes queued in all */
    uint64_t qheld;  /* bytes in the queue now (q[qhead..nq)), copied into it */
    uint64_t qref;   /* bytes in the queue now left in the group's log (in_log) */
    int draining;
    /* pacing while the group is busy (see "Pacing" above): the group's commit index when the
     * chunk request left; a paced step's start, and the end of the pause after it (0: its cost
     * is measured at the replica's next visit) */
    uint64_t commit_mark;
    int answered; /* a chunk came already (the commit index known since is the group's) */
    int moved;    /* the commit index moved during the previous chunk's round trip */
    int paced;
    int unpaced; /* a later snapshot came: the group went past this replica, no more pauses */
    int outrun;  /* the latest chunk held less than PACE_IDLE + 1 times the entry bytes the group
                    committed during its round trip: no pause */
    int grow;    /* that chunk also came within a quarter of the request's timeout: the next
                    requests may ask for up to CHUNK_OUTRUN ("Request size") */
    uint64_t step_at, resume;
    /* group snapshots installed meanwhile, oldest first (nlater of them): each is restored
     * once the queued entries it follows are applied (those of index <= its gindex), and queued
     * entries lie between any two of them ("Later snapshots" above) */
    struct later {
        uint8_t *snap;
        size_t len;
        uint64_t gindex, index;
    } later[LATER_MAX];
    int nlater;
};

/* The follower's side ------------------------------------------------------------------------*/

/* The bound of a round for snapshot snap whose messages are needed from seq need: its last
 * seq, or 0 (an unbounded round) if it cannot be read or nothing up to it is missing. */
static uint64_t snap_upto(const void *snap, size_t len, uint64_t need)
{
    uint64_t last = 0;
    if (jr__stream_fsm_snap_last_seq(snap, len, &last) != 0 || last < need) return 0;
    return last;
}

uint64_t jr__catchup_due(const jr__srep *r, uint64_t now, uint64_t soon)
{
    const jr__catchup *cu = r->cu;
    if (!cu || r->failed) return soon;
    if (cu->paced) return cu->resume ? cu->resume : jr__deadline(now, 1);
    return cu->draining ? jr__deadline(now, 1) : soon;
}

/* 1 if this replica is an observer of its group (a peer joining for a grow or a move): only
 * its catch-up is paced. A voter that fell behind catches up at full speed: the group's quorum
 * may need it. */
static int observer(const jr__srep *r)
{
    const jr__conf *c = r->g ? jr__raft_conf(jr__group_consensus(r->g)) : NULL;
    const jr__member *m = c ? jr__conf_find(c, r->js->self) : NULL;
    return m && !m->voter;
}

/* 1 if this replica's round trip saw the group commit (two such round trips in a row: busy with
 * proposals, the catch-up pauses after the chunk): it is an observer (only an observer's catch-up
 * is paced: a voter that fell behind catches up at full speed, the group's quorum may need it), the
 * group's commit index moved on since the request left, this is not the catch-up's first answer
 * (the commit index known when the first request left may be the snapshot's; the entries the log
 * already held are no proposals), no later snapshot came (the group went past this replica: pauses
 * would only let it fall further behind), less than PACE_QUEUE_MAX bytes of entries wait for it,
 * queued or in the group's log (a longer copy makes more of what the publishers append wait:
 * memory, and work for later), its log is not full (at its cap it falls behind until the copy ends:
 * "Log" above), and the group did not outrun the copy (cu->outrun: paced to its share of the time,
 * the copy would be slower than the group's commits and fall further behind with every pause, into
 * its bounds and later snapshots, then fetch again what they cover). */
static int committed_since(const jr__srep *r)
{
    const jr__catchup *cu = r->cu;
    if (!cu->answered || cu->unpaced || cu->outrun || !r->g) return 0;
    const jr__raft *core = jr__group_consensus(r->g);
    uint64_t commit = jr__raft_commit_index(core), applied = jr__group_applied(r->g);
    uint64_t waits = commit > applied ? jr__raft_log_bytes(core, applied + 1, commit) : 0;
    return cu->qheld + cu->qref + waits < PACE_QUEUE_MAX && commit > cu->commit_mark &&
           observer(r) && !jr__raft_log_full(core);
}

/* 1 if the group outran a copy whose round trip brought a chunk of `raw` bytes: the chunk holds
 * less than PACE_IDLE + 1 times the entry bytes the group committed meanwhile. */
static int outrun(const jr__srep *r, uint64_t raw)
{
    if (!r->g) return 0;
    const jr__raft *core = jr__group_consensus(r->g);
    uint64_t commit = jr__raft_commit_index(core);
    if (commit <= r->cu->commit_mark) return 0;
    return raw / (PACE_IDLE + 1) < jr__raft_log_bytes(core, r->cu->commit_mark + 1, commit);
}

/* A paced chunk (its request left at `began`) is applied: its cost is measured at the
 * replica's next visit (a timer due now would run again within this turn, whose clock has not
 * moved). */
static void pace(jr__srep *r, uint64_t began)
{
    jr__catchup *cu = r->cu;
    cu->paced = 1;
    cu->step_at = began;
    cu->resume = 0;
    r->js->catchup_paced++;
    jr__js_timer_arm(r->js, &r->timer, jr__deadline(jr__node_now(r->js->n), 1));
}

/* 1 if the catch-up may take its next step now: no pause, or the pause is over. At the first
 * visit after a paced step, measures its cost and starts the pause. */
static int pace_over(jr__srep *r)
{
    jr__catchup *cu = r->cu;
    if (!cu->paced) return 1;
    uint64_t now = jr__node_now(r->js->n);
    if (!cu->resume) {
        uint64_t cost = now > cu->step_at ? now - cu->step_at : 1;
        uint64_t pause = cost > PACE_MAX_NS / PACE_IDLE ? PACE_MAX_NS : cost * PACE_IDLE;
        cu->resume = jr__deadline(now, pause);
        r->js->catchup_paused_ns += pause;
    }
    if (now < cu->resume) return 0;
    cu->paced = 0;
    cu->resume = 0;
    return 1;
}

int jr__catchup_phase(const jr__catchup *cu)
{
    if (cu->draining) return JR__CU_DRAINING;
    if (cu->paced) return JR__CU_PAUSED;
    return cu->rpc_id || cu->staged ? JR__CU_FETCHING : JR__CU_WAITING;
}

uint64_t jr__catchup_left(const jr__catchup *cu)
{
    if (cu->draining) return cu->nq > cu->qhead ? cu->nq - cu->qhead : 1;
    uint64_t last = cu->upto;
    if (!last && jr__stream_fsm_snap_last_seq(cu->snap, cu->snap_len, &last) != 0) last = 0;
    return last >= cu->need ? last - cu->need + 1 : 1;
}

/* Caps the group's log ("Log" above) at catchup_log_max less what the queue holds copied beyond
 * its own bound (the entries a later snapshot would have replaced, copied into it:
 * copy_from_log, take_waiting), so the queue and the log together hold at most the two bounds
 * (and one entry); at least 1 byte, as 0 lifts the cap. */
static void cap_log(jr__srep *r)
{
    jr__js *js = r->js;
    const jr__catchup *cu = r->cu;
    if (!r->g || !js->catchup_log_max) return;
    uint64_t over = cu->qheld > js->catchup_queue_max ? cu->qheld - js->catchup_queue_max : 0;
    jr__group_cap_log(r->g, over < js->catchup_log_max ? js->catchup_log_max - over : 1);
}

int jr__catchup_begin(jr__srep *r, uint64_t index, const void *snap, size_t len, uint64_t need)
{
    jr__js *js = r->js;
    const jr_allocator *a = js->alloc;
    uint8_t *copy = jr__malloc(a, len ? len : 1);
    if (!copy) return JR_ENOMEM;
    memcpy(copy, snap, len);
    jr__catchup *cu = r->cu;
    if (cu) {
        /* A snapshot installed while restoring, restored after the entries queued before it
         * (restore_later), misses messages (those of the entries the group's log no longer
         * had for this replica): fetch them, bounded by its last seq, then go on with the
         * queue (entries it covers are ignored when applied). */
        jr__free(a, cu->snap);
        cu->snap = copy;
        cu->snap_len = len;
        cu->snap_index = index;
        cu->need = need;
        cu->upto = snap_upto(snap, len, need);
        if (cu->read_at < index) cu->read_at = index;
        cu->draining = 0;
        cu->attempts = 0;
        cu->paced = 0;
        jr__js_timer_arm(js, &r->timer, jr__node_now(js->n));
        jr__node_log(js->n, JR_LOG_INFO,
                     "stream '%s': restored snapshot %" PRIu64
                     " after the entries queued before it, fetching messages from seq %" PRIu64,
                     r->name, index, need);
        return 0;
    }
    cu = jr__calloc(a, 1, sizeof *cu);
    if (!cu) {
        jr__free(a, copy);
        return JR_ENOMEM;
    }
    cu->snap = copy;
    cu->snap_len = len;
    cu->snap_index = index;
    cu->need = need;
    cu->upto = snap_upto(snap, len, need);
    cu->read_at = index;
    jr__buf_init(&cu->piece, a);
    jr__buf_init(&cu->z, a);
    r->cu = cu;
    cap_log(r);             /* "Log" above */
    jr__srep_fsm_report(r); /* a rebuilt replica is rebuilding until this catch-up ends */
    jr__node_log(js->n, JR_LOG_INFO,
                 "stream '%s': restored snapshot %" PRIu64 ", fetching messages from seq %" PRIu64,
                 r->name, index, need);
    jr__js_timer_arm(js, &r->timer, jr__node_now(js->n));
    return 0;
}

int jr__catchup_queue(jr__srep *r, uint64_t index, uint64_t term, const void *data, size_t len,
                      int in_log)
{
    jr__catchup *cu = r->cu;
    const jr_allocator *a = r->js->alloc;
    if (cu->nq == cu->capq) {
        size_t cap = cu->capq ? cu->capq * 2 : 64;
        qent **nq = jr__realloc(a, cu->q, cap * sizeof *nq);
        if (!nq) return JR_ENOMEM;
        cu->q = nq;
        cu->capq = cap;
    }
    in_log = in_log && r->g && len;
    qent *e = jr__malloc(a, sizeof *e + (len && !in_log ? len : 1));
    if (!e) return JR_ENOMEM;
    e->index = index;
    e->term = term;
    e->len = len;
    e->in_log = (uint8_t)in_log;
    cu->q[cu->nq++] = e;
    cu->qnew += len;
    cu->qbytes += len;
    if (in_log) {
        cu->qref += len;
        return 0;
    }
    if (len) memcpy(e->data, data, len);
    cu->qheld += len;
    if (cu->qheld > r->js->catchup_queue_peak) r->js->catchup_queue_peak = cu->qheld;
    if (cu->qheld > r->js->catchup_queue_max) cap_log(r);
    return 0;
}

void jr__catchup_free(jr__srep *r)
{
    jr__catchup *cu = r->cu;
    if (!cu) return;
    const jr_allocator *a = r->js->alloc;
    jr__rpc_cancel(r->js->n, cu->rpc_id);
    if (r->g) {
        const jr__raft *core = jr__group_consensus(r->g);
        if (jr__raft_capped_peak(core) > r->js->catchup_log_peak)
            r->js->catchup_log_peak = jr__raft_capped_peak(core);
        jr__group_cap_log(r->g, 0);
    }
    for (size_t i = cu->qhead; i < cu->nq; i++) jr__free(a, cu->q[i]);
    jr__free(a, cu->q);
    jr__free(a, cu->snap);
    for (int i = 0; i < cu->nlater; i++) jr__free(a, cu->later[i].snap);
    jr__buf_free(&cu->piece);
    jr__buf_free(&cu->z);
    jr__free(a, cu);
    r->cu = NULL;
    jr__srep_fsm_report(r);
}

/* Before a snapshot from the leader replaces the group's log: queues, copied, the committed
 * entries not applied yet (the group applies at its flushes) up to index `keep` (those after it
 * are dropped, counted in js->catchup_dropped: jr__catchup_later), which the snapshot would
 * otherwise make this replica fetch the messages of. They are applied, like every queued entry,
 * before that snapshot is restored. 0 or JR_ENOMEM. */
static int take_waiting(jr__srep *r, uint64_t gindex, uint64_t keep)
{
    jr__catchup *cu = r->cu;
    if (!r->g) return 0;
    const jr__raft *core = jr__group_consensus(r->g);
    uint64_t upto = jr__group_apply_limit(r->g);
    if (upto >= gindex) upto = gindex - 1;
    uint64_t last = cu->nq > cu->qhead ? cu->q[cu->nq - 1]->index : 0;
    uint64_t from = jr__group_applied(r->g) > last ? jr__group_applied(r->g) : last;
    uint64_t qnew = cu->qnew; /* not what the group commits meanwhile: drain's budget ignores it */
    for (uint64_t i = from + 1; i <= upto; i++) {
        jr__entry e;
        if (jr__raft_entry(core, i, &e) != 0) break;
        if (e.type != JR__ENTRY_NORMAL) continue; /* the snapshot holds the configuration */
        if (i > keep) {
            r->js->catchup_dropped += e.len;
            continue;
        }
        int rc = jr__catchup_queue(r, i, e.term, e.data, e.len, 0);
        if (rc != 0) return rc;
        r->js->catchup_taken += e.len;
    }
    cu->qnew = qnew;
    return 0;
}

/* Drops the queued entries after group index `keep` up to `gindex` (jr__catchup_later: their
 * messages are fetched after snapshot gindex, which replaces the newest kept one), counted in
 * js->catchup_dropped. */
static void drop_after(jr__srep *r, uint64_t keep, uint64_t gindex)
{
    jr__catchup *cu = r->cu;
    size_t k = cu->qhead;
    for (size_t i = cu->qhead; i < cu->nq; i++) {
        qent *e = cu->q[i];
        if (e->index <= keep || e->index > gindex) {
            cu->q[k++] = e;
            continue;
        }
        if (e->in_log)
            cu->qref -= e->len;
        else
            cu->qheld -= e->len;
        r->js->catchup_dropped += e->len;
        jr__free(r->js->alloc, e);
    }
    cu->nq = k;
}

/* The bytes of a queued entry left in the group's log (in_log): 0 with *le its entry, or
 * JR_ECOMPACTED when the log no longer holds it as it was queued (the group lost it, "Queue"
 * above). */
static int logged(const jr__srep *r, const qent *e, jr__entry *le)
{
    if (!r->g || jr__raft_entry(jr__group_consensus(r->g), e->index, le) != 0 ||
        le->term != e->term || le->len != e->len)
        return JR_ECOMPACTED;
    return 0;
}

/* Before a snapshot from the leader replaces the group's log: copies into the queue the queued
 * entries left in that log. 0, JR_ENOMEM, or JR_ECOMPACTED (the log no longer holds one as it was
 * queued: the group lost it, "Queue" above); on either the snapshot is not restored and the
 * replica is rebuilt from its peers (stream_replica.c rep_restore). */
static int copy_from_log(jr__srep *r)
{
    jr__catchup *cu = r->cu;
    const jr_allocator *a = r->js->alloc;
    for (size_t i = cu->qhead; i < cu->nq; i++) {
        qent *e = cu->q[i];
        if (!e->in_log) continue;
        jr__entry le;
        int rc = logged(r, e, &le);
        if (rc != 0) return rc;
        qent *c = jr__malloc(a, sizeof *c + (e->len ? e->len : 1));
        if (!c) return JR_ENOMEM;
        *c = *e;
        c->in_log = 0;
        if (e->len) memcpy(c->data, le.data, e->len);
        jr__free(a, e);
        cu->q[i] = c;
        cu->qref -= c->len;
        cu->qheld += c->len;
        r->js->catchup_taken += c->len;
    }
    if (cu->qheld > r->js->catchup_queue_peak) r->js->catchup_queue_peak = cu->qheld;
    cap_log(r);
    return 0;
}

int jr__catchup_later(jr__srep *r, uint64_t gindex, uint64_t index, const void *snap, size_t len)
{
    jr__catchup *cu = r->cu;
    const jr_allocator *a = r->js->alloc;
    struct later *last = cu->nlater ? &cu->later[cu->nlater - 1] : NULL;
    /* No room to keep another: this one replaces the newest, and the entries queued after that
     * one go, before anything is copied (their messages are fetched after this one, like those
     * of the entries the log no longer had); applied without its state they would store their
     * messages at other seqs than their group's replicas did. */
    uint64_t keep = gindex - 1;
    if (cu->nlater == LATER_MAX) {
        keep = last->gindex;
        drop_after(r, keep, gindex);
    }
    int rc = copy_from_log(r);
    if (rc == 0) rc = take_waiting(r, gindex, keep);
    if (rc != 0) return rc;
    uint8_t *copy = jr__malloc(a, len ? len : 1);
    if (!copy) return JR_ENOMEM;
    memcpy(copy, snap, len);
    /* entries were queued after the newest one kept: they are applied on its state, and this
     * one is restored after them; otherwise this one replaces it */
    int after = last && cu->nq > cu->qhead && cu->q[cu->nq - 1]->index > last->gindex;
    if (last && !after) {
        jr__free(a, last->snap);
    } else {
        last = &cu->later[cu->nlater++];
    }
    last->snap = copy;
    last->len = len;
    last->gindex = gindex;
    last->index = index;
    cu->unpaced = 1;
    jr__node_log(r->js->n, JR_LOG_DEBUG,
                 "stream '%s': snapshot %" PRIu64 " installed while restoring; restored after "
                 "the %zu entries queued before it",
                 r->name, gindex, cu->nq - cu->qhead);
    return 0;
}

/* Restores the later snapshot now that the queued entries before it are applied: a store
 * missing some of its messages (those of the entries the group's log no longer had for this
 * replica) fetches them, bounded by its last seq, as a first round does, and the queue goes on
 * after that; one older than the state (chunks or a source's snapshot went past it) is
 * dropped. 0, or the restore's error (the replica failed; its timer rebuilds it). */
static int restore_later(jr__srep *r)
{
    jr__catchup *cu = r->cu;
    const jr_allocator *a = r->js->alloc;
    uint8_t *snap = cu->later[0].snap;
    size_t len = cu->later[0].len;
    uint64_t index = cu->later[0].index;
    cu->nlater--;
    memmove(cu->later, cu->later + 1, (size_t)cu->nlater * sizeof cu->later[0]);
    uint64_t need = 0;
    r->js->catchup_later++;
    int rc = jr__stream_fsm_restore(r->fsm, index, snap, len, &need);
    if (rc == JR_ERANGE) rc = 0, need = 0; /* older than the state: nothing to do */
    if (rc == 0 && need) rc = jr__catchup_begin(r, index, snap, len, need);
    jr__free(a, snap);
    if (rc != 0) {
        jr__node_log(r->js->n, JR_LOG_ERROR,
                     "stream '%s': snapshot %" PRIu64 " not restored: %s; the replica is rebuilt "
                     "from its peers",
                     r->name, index, jr_strerror(rc));
        r->failed = rc;
        jr__srep_due(r, jr__node_now(r->js->n));
    }
    return rc;
}

/* Applies the next batch of queued entries: DRAIN_BYTES of them plus as many bytes as were
 * queued since the previous batch, so the queue shrinks by at least DRAIN_BYTES a turn however
 * fast the group commits; the replica's timer brings the next batch at the node's next turn, so
 * its Raft messages (and its acks to the leader) are handled between batches rather than after
 * the whole queue. The last batch ends the catch-up. */
static void drain(jr__srep *r)
{
    jr__js *js = r->js;
    jr__catchup *cu = r->cu;
    uint64_t budget = DRAIN_BYTES + cu->qnew, done = 0;
    cu->qnew = 0;
    while (cu->qhead < cu->nq && done < budget) {
        qent *e = cu->q[cu->qhead];
        if (cu->nlater && e->index > cu->later[0].gindex) {
            if (restore_later(r) != 0) return;
            if (!cu->draining) break; /* it fetches first */
            continue;
        }
        const uint8_t *data = e->data;
        if (e->in_log) {
            jr__entry le;
            if (logged(r, e, &le) != 0) {
                jr__node_log(js->n, JR_LOG_ERROR,
                             "stream '%s': queued entry %" PRIu64 " is no longer in the log; the "
                             "replica is rebuilt from its peers",
                             r->name, e->index);
                r->failed = JR_ECOMPACTED;
                jr__srep_due(r, jr__node_now(js->n));
                return;
            }
            data = le.data;
            cu->qref -= e->len;
            js->catchup_in_log += e->len;
        } else {
            cu->qheld -= e->len;
        }
        cu->q[cu->qhead++] = NULL;
        done += e->len;
        js->catchup_drained += e->len;
        jr__srep_apply_entry(r, e->index, e->term, data, e->len);
        jr__free(js->alloc, e);
        if (r->cu != cu || !cu->draining || r->failed) return; /* the apply moved it on */
    }
    js->catchup_drain_turns++;
    cap_log(r);
    if (done > budget && done - budget > js->catchup_drain_over)
        js->catchup_drain_over = done - budget;
    while (cu->draining && cu->qhead == cu->nq && cu->nlater)
        if (restore_later(r) != 0) return;
    if (!cu->draining) { /* the later snapshot misses messages: the request leaves now */
        jr__catchup_step(r);
        return;
    }
    if (cu->qhead < cu->nq) {
        /* more queued; past this turn's clock: a timer due now would run again within this
         * tick */
        jr__js_timer_arm(js, &r->timer, jr__deadline(jr__node_now(js->n), 1));
        return;
    }
    jr__catchup_free(r);
    jr__node_log(js->n, JR_LOG_INFO, "stream '%s': caught up", r->name);
    /* A mark now: the node's log may already be compacted past the store's last one, and a
     * restart should not need another catch-up. */
    jr__srep_sync(r);
}

void jr__catchup_finish(jr__srep *r)
{
    jr__catchup *cu = r->cu;
    if (!cu->draining) {
        jr__rpc_cancel(r->js->n, cu->rpc_id);
        cu->rpc_id = 0;
        cu->staged = 0;
        jr__buf_release(&cu->z, 0);
        jr__buf_release(&cu->piece, 0);
        cu->piece_total = 0;
        cu->draining = 1;
        cu->paced = 0;
        cu->qnew = 0;
        jr__node_log(r->js->n, JR_LOG_INFO,
                     "stream '%s': messages fetched; applying %zu queued entries", r->name,
                     cu->nq - cu->qhead);
    }
    drain(r);
}

/* Which peer to ask: the replicas other than this one in turn, the leader last. A follower
 * first, so the leader's thread keeps serving publishes (and in a group of three voters the
 * other follower keeps the quorum's pace); the leader when no follower answers. The first
 * attempt of a round takes the first follower in the assignment's order, later attempts the
 * next ones. */
static jr__id pick_source(jr__srep *r)
{
    jr_node *n = r->js->n;
    jr__id leader = r->g ? jr__raft_leader(jr__group_consensus(r->g)) : 0;
    if (leader == r->js->self) leader = 0;
    jr__id ids[JR_MAX_REPLICAS + 1];
    size_t k = 0;
    for (size_t i = 0; i < r->as->npeers && k < JR_MAX_REPLICAS; i++) {
        if (strcmp(r->as->peers[i], r->js->name) == 0) continue;
        jr__peer *p = jr__peer_find_name(n, r->as->peers[i]);
        jr__id id = p ? jr__peer_get_id(p) : 0;
        if (id && id != leader) ids[k++] = id;
    }
    if (leader) ids[k++] = leader;
    return k ? ids[r->cu->attempts % k] : 0;
}

/* A failure of this step: the replica's timer asks again (another source, maybe). */
static void stall(jr__srep *r, int rc)
{
    jr__catchup *cu = r->cu;
    jr__stream_fsm_info info;
    jr__stream_fsm_info_get(r->fsm, &info);
    if (info.failed) {
        r->failed = info.failed;
        return;
    }
    jr__node_log(r->js->n, rc == JR_EBUSY ? JR_LOG_DEBUG : JR_LOG_WARN,
                 "stream '%s': catch-up from seq %" PRIu64 ": %s", r->name, cu->need,
                 jr_strerror(rc));
    jr__rpc_cancel(r->js->n, cu->rpc_id); /* a request sent ahead of a staged chunk */
    cu->rpc_id = 0;
    cu->staged = 0;
    jr__buf_reset(&cu->z);
    jr__buf_reset(&cu->piece);
    cu->piece_total = 0;
    cu->attempts++;
}

/* The source's snapshot arrived whole: restore it. */
static void restore_source(jr__srep *r)
{
    jr__js *js = r->js;
    jr__catchup *cu = r->cu;
    uint64_t need = 0;
    int rc = jr__stream_fsm_restore(r->fsm, cu->piece_index, cu->piece.data, cu->piece.len, &need);
    if (rc != 0) {
        stall(r, rc);
        return;
    }
    jr__free(js->alloc, cu->snap); /* restore it from now on */
    cu->snap = cu->piece.data;
    cu->snap_len = cu->piece.len;
    cu->snap_index = cu->piece_index;
    jr__buf_init(&cu->piece, js->alloc);
    cu->piece_total = 0;
    if (need == 0) {
        jr__catchup_finish(r);
        return;
    }
    cu->need = need; /* the source moved on meanwhile: another round */
    cu->upto = 0;
    cu->attempts = 0;
    jr__catchup_step(r);
}

/* A piece of the source's snapshot at offset. 0, or JR_ECORRUPT / JR_ENOMEM. */
static int take_piece(jr__catchup *cu, uint64_t index, uint64_t total, uint64_t offset,
                      const uint8_t *p, size_t len)
{
    if (offset == 0) {
        if (total == 0 || total > MAX_SNAPSHOT) return JR_ECORRUPT;
        jr__buf_reset(&cu->piece);
        cu->piece_index = index;
        cu->piece_total = total;
    } else if (!cu->piece_total || index != cu->piece_index || total != cu->piece_total ||
               offset != cu->piece.len) {
        return JR_ECORRUPT;
    }
    if (len == 0 || cu->piece.len + len > total) return JR_ECORRUPT;
    jr__buf_put(&cu->piece, p, len);
    return cu->piece.err;
}

static void on_answer(jr_node *n, void *arg, int status, int answered, const uint8_t *p,
                      size_t len);

/* The most a request asks for before ask_max ("Request size"): CHUNK_BYTES, or CHUNK_OUTRUN
 * while the group outruns a copy whose answers come fast; at most a quarter of a frame (twice
 * that fits one). */
static uint32_t chunk_most(const jr__srep *r)
{
    uint32_t most = r->cu->grow ? CHUNK_OUTRUN : CHUNK_BYTES;
    return r->js->facts.max_frame / 4 < most ? r->js->facts.max_frame / 4 : most;
}

/* "Request size" above: after the answer (status) to the request sent at cu->step_at, halves
 * ask_max if it timed out, doubles it if the answer came within a quarter of the timeout. */
static void size_request(jr__srep *r, int status)
{
    jr__js *js = r->js;
    jr__catchup *cu = r->cu;
    uint32_t most = chunk_most(r);
    uint32_t cur = cu->ask_max && cu->ask_max < most ? cu->ask_max : most;
    if (status == JR_ETIMEDOUT) {
        cu->ask_max = cur / 2 > CHUNK_MIN ? cur / 2 : CHUNK_MIN;
        if (cu->ask_max < cur)
            jr__node_log(js->n, JR_LOG_DEBUG,
                         "stream '%s': catch-up request timed out: asking for %" PRIu32
                         " bytes at a time",
                         r->name, cu->ask_max);
    } else if (status == 0 && cur < most) {
        uint64_t now = jr__node_now(js->n), took = now > cu->step_at ? now - cu->step_at : 0;
        if (took < js->election_ns / 2) cu->ask_max = cur > most / 2 ? most : 2 * cur;
    }
}

/* After a piece of the source's snapshot was taken: restore once it is whole, else ask on. */
static void piece_taken(jr__srep *r)
{
    if (r->cu->piece.len == r->cu->piece_total)
        restore_source(r);
    else
        jr__catchup_step(r);
}

/* Sends the request for what comes next from src: the next piece of the source's snapshot, or
 * the chunk from seq `from`. 0, or the error of the call (nothing in flight then). */
static int ask(jr__srep *r, jr__id src, int pieces, uint64_t from)
{
    jr__js *js = r->js;
    jr__catchup *cu = r->cu;
    uint8_t b[48];
    jr__buf out = {b, 0, sizeof b, 0, NULL};
    uint32_t max = chunk_most(r);
    if (cu->ask_max && cu->ask_max < max) max = cu->ask_max;
    jr__buf_u8(&out, pieces ? OP_PIECE : OP_CHUNK);
    jr__buf_varint(&out, r->group);
    if (pieces) {
        jr__buf_varint(&out, cu->piece_index);
        jr__buf_varint(&out, cu->piece.len);
    } else {
        jr__buf_varint(&out, from);
    }
    jr__buf_varint(&out, max);
    jr_iovec iov = {out.data, out.len};
    cu->source = src;
    cu->commit_mark = r->g ? jr__raft_commit_index(jr__group_consensus(r->g)) : 0;
    cu->step_at = jr__node_now(js->n);
    return jr__rpc_call(js->n, src, JR__RPC_CATCHUP, &iov, 1, 2 * js->election_ns, on_answer, r,
                        &cu->rpc_id);
}

void jr__catchup_step(jr__srep *r)
{
    jr__catchup *cu = r->cu;
    if (cu && !r->failed && !pace_over(r)) return;
    if (cu && cu->draining && !r->failed) {
        drain(r);
        return;
    }
    if (!cu || cu->rpc_id || cu->staged || r->failed) return;
    int pieces = cu->piece_total && cu->piece.len < cu->piece_total;
    jr__id src = pieces ? cu->source : pick_source(r);
    if (!src || ask(r, src, pieces, cu->need) != 0) cu->attempts++;
}

/* Decompresses chunk z (raw bytes) and applies it as the messages of [cu->need, next), or, with
 * upto (non-zero) below next, of [cu->need, upto + 1): its records up to seq upto (a chunk holds
 * every live message of its range, so a prefix of it holds every one of the shorter range).
 * 0 or JR_ECORRUPT / JR_ENOMEM / the store's error. */
static int apply_chunk(jr__srep *r, const uint8_t *z, size_t zlen, uint64_t raw, uint64_t next,
                       uint64_t upto)
{
    jr__js *js = r->js;
    jr__buf *b = &js->scratch2;
    jr__buf_reset(b);
    if (jr__buf_reserve(b, (size_t)raw + 1) != 0) return JR_ENOMEM;
    if (raw) {
        int got = LZ4_decompress_safe((const char *)z, (char *)b->data, (int)zlen, (int)raw);
        if (got < 0 || (uint64_t)got != raw) return JR_ECORRUPT;
    }
    size_t len = (size_t)raw;
    if (upto && next > upto + 1) {
        /* cut before the first record past upto (the prefix is verified whole when applied) */
        jr__srec rec;
        size_t off = 0, n;
        while (off < len && jr__srec_decode(b->data + off, len - off, 0, &rec, &n) == 0 &&
               rec.seq <= upto)
            off += n;
        len = off;
        next = upto + 1;
    }
    return jr__stream_fsm_apply_chunk(r->fsm, b->data, len, next);
}

/* A chunk applied: the round goes on from next. */
static void chunk_applied(jr__srep *r, uint64_t raw, uint64_t at, uint64_t next)
{
    jr__js *js = r->js;
    jr__catchup *cu = r->cu;
    js->catchup_chunks++;
    js->catchup_bytes += raw;
    cu->read_at = at;
    cu->need = next;
    cu->attempts = 0;
}

/* The deferred half of a chunk that is not the round's last (see on_answer): applies the staged
 * chunk once the request for the next one has left, so the source reads that one while this
 * one is applied here. */
static void apply_staged(jr_node *n, uint64_t group)
{
    jr__srep *r = jr__srep_find(jr__js_of(n), group);
    jr__catchup *cu = r ? r->cu : NULL;
    if (!cu || !cu->staged) return;
    cu->staged = 0;
    int rc = cu->z_from != cu->need
                 ? JR_EBUSY /* a newer snapshot moved the round */
                 : apply_chunk(r, cu->z.data, cu->z.len, cu->z_raw, cu->z_next, 0);
    jr__buf_reset(&cu->z);
    if (rc != 0) {
        stall(r, rc);
        if (rc == JR_EBUSY && r->cu && r->cu->attempts < JR_MAX_REPLICAS) jr__catchup_step(r);
        return;
    }
    chunk_applied(r, cu->z_raw, cu->z_at, cu->z_next);
    if (!cu->rpc_id) jr__catchup_step(r); /* the early request could not be sent */
}

/* Restores the snapshot being restored (this replica's own, not the source's) once chunks
 * reached its last seq. The store then holds exactly its messages unless the source removed
 * one of them after the snapshot's index (restore finds it missing: fsm.h); then the round goes
 * on to the source's end and its snapshot, which is exact — at once after a bounded round, at
 * the replica's timer when the source could not take a snapshot (let it recover). Entries after
 * the snapshot's index, queued meanwhile, are applied once it completes. */
static void restore_own(jr__srep *r, int bounded)
{
    jr__catchup *cu = r->cu;
    uint64_t need = 0;
    int rc = jr__stream_fsm_restore(r->fsm, cu->snap_index, cu->snap, cu->snap_len, &need);
    if (rc != 0) {
        stall(r, rc);
        return;
    }
    if (need == 0) {
        jr__catchup_finish(r);
        return;
    }
    cu->need = need;
    cu->upto = 0;
    if (!bounded) {
        cu->attempts++;
        return;
    }
    jr__node_log(r->js->n, JR_LOG_INFO,
                 "stream '%s': the source removed messages of snapshot %" PRIu64
                 " meanwhile; fetching to its end",
                 r->name, cu->snap_index);
    jr__catchup_step(r);
}

/* An answer of the source (a chunk, or a piece of its snapshot). */
static void on_answer(jr_node *n, void *arg, int status, int answered, const uint8_t *p, size_t len)
{
    (void)answered;
    jr__srep *r = arg;
    jr__catchup *cu = r->cu;
    if (!cu) return;
    cu->rpc_id = 0;
    if (status == JR_ECLOSED) return;
    size_request(r, status);
    if (status != 0) {
        stall(r, status);
        /* a source that is busy (restoring, or behind what was read): the next one at once,
         * each peer once, then at the replica's timer */
        if (status == JR_EBUSY && r->cu && r->cu->attempts < JR_MAX_REPLICAS) jr__catchup_step(r);
        return;
    }
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    uint8_t op = jr__rd_u8(&rd);
    if (op == OP_PIECE) {
        uint64_t index = jr__rd_varint(&rd), offset = jr__rd_varint(&rd),
                 total = jr__rd_varint(&rd);
        size_t plen;
        const uint8_t *piece = jr__rd_bytes(&rd, &plen, len);
        int rc = rd.err || jr__rd_left(&rd) || !cu->piece_total
                     ? JR_ECORRUPT
                     : take_piece(cu, index, total, offset, piece, plen);
        if (rc != 0) {
            stall(r, rc);
            return;
        }
        piece_taken(r);
        return;
    }
    uint64_t next = jr__rd_varint(&rd), raw = jr__rd_varint(&rd);
    size_t zlen, plen;
    const uint8_t *z = jr__rd_bytes(&rd, &zlen, len);
    uint64_t at = jr__rd_varint(&rd);
    uint8_t final = jr__rd_u8(&rd);
    uint64_t total = jr__rd_varint(&rd);
    const uint8_t *piece = jr__rd_bytes(&rd, &plen, len);
    int rc = 0;
    if (op != OP_CHUNK || rd.err || jr__rd_left(&rd) ||
        raw > 4 * (uint64_t)CHUNK_OUTRUN + (1u << 21) || (raw && !zlen) || next < cu->need ||
        final > 1 || (total && (!final || !at || !plen)) || (!total && plen))
        rc = JR_ECORRUPT;
    /* A source behind the state some chunk was already read at could describe as live a
     * message that chunk did not have: wait for it (or another) to get there. */
    if (rc == 0 && at < cu->read_at) {
        stall(r, JR_EBUSY);
        if (cu->attempts < JR_MAX_REPLICAS) jr__catchup_step(r);
        return;
    }
    /* Not the round's last chunk: ask the source for the next one at once and apply this one
     * after the flush that sends the request (a deferred effect), so reading the next chunk
     * there overlaps applying this one here. One chunk is staged at most (its compressed
     * bytes), and one request is out. */
    /* The bounded round's last chunk: the one that reaches the snapshot's last seq. */
    int bound_end = cu->upto && next > cu->upto;
    /* the group committed entries while this chunk came and while the previous one did: busy
     * with proposals (a lone commit, such as the peer change's own entry, is not), the round is
     * paced */
    if (rc == 0) {
        uint64_t now = jr__node_now(n), took = now > cu->step_at ? now - cu->step_at : 0;
        cu->outrun = outrun(r, raw);
        cu->grow = cu->outrun && took < r->js->election_ns / 2;
    }
    int moved = committed_since(r), busy = moved && cu->moved;
    cu->moved = moved;
    cu->answered = 1;
    uint64_t began = cu->step_at;
    if (rc == 0 && !busy && !final && !bound_end && next > cu->need && raw) {
        jr__buf_reset(&cu->z);
        jr__buf_put(&cu->z, z, zlen);
        if (cu->z.err == 0 && jr__node_defer(n, apply_staged, r->group) == 0) {
            cu->staged = 1;
            cu->z_from = cu->need;
            cu->z_next = next;
            cu->z_raw = raw;
            cu->z_at = at;
            if (ask(r, cu->source, 0, next) != 0) cu->rpc_id = 0;
            return;
        }
        jr__buf_release(&cu->z, 0);
    }
    if (rc == 0) rc = apply_chunk(r, z, zlen, raw, next, bound_end ? cu->upto : 0);
    if (rc != 0) {
        stall(r, rc);
        return;
    }
    if (bound_end) {
        chunk_applied(r, raw, at, cu->upto + 1);
        restore_own(r, 1);
        return;
    }
    chunk_applied(r, raw, at, next);
    if (!final) {
        if (busy)
            pace(r, began);
        else
            jr__catchup_step(r);
        return;
    }
    if (total) {
        rc = take_piece(cu, at, total, 0, piece, plen);
        if (rc != 0) {
            stall(r, rc);
            return;
        }
        piece_taken(r);
        return;
    }
    /* The source could not take a snapshot: restore ours (exact unless the source deleted
     * messages after it, fsm.h); if the store went past it, another round follows. */
    restore_own(r, 0);
}

/* The source's side --------------------------------------------------------------------------*/

void jr__catchup_release(jr__srep *r)
{
    jr__free(r->js->alloc, r->served);
    r->served = NULL;
    r->served_len = 0;
    r->served_index = 0;
}

/* Keeps a snapshot of r's state for the requester (replacing the previous one). 0 or error. */
static int keep_snapshot(jr__js *js, jr__srep *r)
{
    jr__buf b;
    jr__buf_init(&b, js->alloc);
    int rc = jr__stream_fsm_snapshot(r->fsm, &b);
    if (rc != 0) {
        jr__buf_free(&b);
        return rc;
    }
    jr__catchup_release(r);
    r->served = b.data;
    r->served_len = b.len;
    r->served_index = jr__stream_fsm_applied(r->fsm);
    return 0;
}

static void serve_piece(jr__js *js, jr__srep *r, const jr__route *rt, uint64_t index,
                        uint64_t offset, uint64_t max)
{
    if (!r->served || r->served_index != index || offset >= r->served_len) {
        jr__route_reply(js, rt, JR_ENOTFOUND, NULL, 0);
        return;
    }
    size_t n = r->served_len - (size_t)offset;
    if (n > max) n = (size_t)max;
    jr__buf *out = &js->scratch;
    jr__buf_reset(out);
    jr__buf_u8(out, OP_PIECE);
    jr__buf_varint(out, index);
    jr__buf_varint(out, offset);
    jr__buf_varint(out, r->served_len);
    jr__buf_bytes(out, r->served + offset, n);
    if (out->err)
        jr__route_reply(js, rt, out->err, NULL, 0);
    else
        jr__route_reply(js, rt, 0, out->data, out->len);
}

void jr__catchup_serve(jr__js *js, const jr__route *rt, const uint8_t *p, size_t len)
{
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    uint8_t op = jr__rd_u8(&rd);
    uint64_t group = jr__rd_varint(&rd), a = jr__rd_varint(&rd);
    uint64_t b = op == OP_PIECE ? jr__rd_varint(&rd) : 0;
    uint64_t max = jr__rd_varint(&rd);
    if (rd.err || jr__rd_left(&rd) || op > OP_PIECE || (op == OP_CHUNK && a == 0) || max == 0) {
        jr__route_reply(js, rt, JR_EINVAL, NULL, 0);
        return;
    }
    if (max > CHUNK_OUTRUN) max = CHUNK_OUTRUN;
    if (max > js->facts.max_frame / 4) max = js->facts.max_frame / 4; /* twice that fits a frame */
    jr__srep *r = jr__srep_find(js, group);
    if (!r) {
        jr__route_reply(js, rt, JR_ENOTFOUND, NULL, 0);
        return;
    }
    if (op == OP_PIECE) {
        serve_piece(js, r, rt, a, b, max);
        return;
    }
    jr__stream_fsm_info info;
    jr__stream_fsm_info_get(r->fsm, &info);
    if (r->cu || r->failed || info.restoring || info.failed) {
        jr__route_reply(js, rt, JR_EBUSY, NULL, 0); /* its store is not complete */
        return;
    }
    jr__buf *raw = &js->scratch2;
    jr__buf_reset(raw);
    uint64_t next = 0;
    int rc = jr__stream_fsm_read_chunk(r->fsm, a, (size_t)max, raw, &next);
    if (rc == JR_ENOTFOUND) {
        rc = 0;
        next = info.store.last_seq + 1;
        raw->len = 0;
    }
    /* What is left to the last seq is at most as many seqs as this chunk holds: it comes along
     * (the chunk is then at most twice max_bytes), so a requester following a stream that
     * grows under publishers reaches its end in fewer round trips. */
    if (rc == 0 && next > a && next <= info.store.last_seq &&
        info.store.last_seq - next < next - a) {
        uint64_t more = 0;
        rc = jr__stream_fsm_read_chunk(r->fsm, next, (size_t)max, raw, &more);
        if (rc == JR_ENOTFOUND) {
            rc = 0;
            more = info.store.last_seq + 1;
        }
        next = more;
    }
    uint64_t read_at = jr__stream_fsm_applied(r->fsm);
    int final = next > info.store.last_seq;
    /* The round's last chunk comes with this replica's snapshot where the chunk was read (kept
     * for the pieces that do not fit this answer). */
    size_t first = 0;
    if (rc == 0 && final && read_at && keep_snapshot(js, r) == 0) {
        first = r->served_len < PIECE_BYTES ? r->served_len : PIECE_BYTES;
        if (first > max) first = (size_t)max; /* the requester's size ("Request size") */
    }
    /* The records are compressed straight into the answer, after room for their length's
     * varint; the rare chunk whose compressed length has a shorter varint than the bound's is
     * moved down by the difference. */
    jr__buf *out = &js->scratch;
    jr__buf_reset(out);
    int bound = raw->len ? LZ4_compressBound((int)raw->len) : 0;
    if (rc == 0 && raw->len && bound <= 0) rc = JR_EMSGSIZE;
    if (rc == 0) {
        jr__buf_u8(out, OP_CHUNK);
        jr__buf_varint(out, next);
        jr__buf_varint(out, raw->len);
        size_t room = jr__varint_len((uint64_t)bound);
        if (jr__buf_reserve(out, room + (size_t)bound + 32 + first) != 0) rc = JR_ENOMEM;
        if (rc == 0) {
            uint8_t *at = out->data + out->len + room;
            int zlen = bound ? LZ4_compress_default((const char *)raw->data, (char *)at,
                                                    (int)raw->len, bound)
                             : 0;
            if (bound && zlen <= 0) rc = JR_EIO;
            if (rc == 0) {
                size_t vl = jr__varint_len((uint64_t)zlen);
                jr__buf_varint(out, (uint64_t)zlen); /* vl <= room bytes: before `at` */
                if (vl < room) memmove(out->data + out->len, at, (size_t)zlen);
                out->len += (size_t)zlen;
                jr__buf_varint(out, read_at);
                jr__buf_u8(out, (uint8_t) final);
                jr__buf_varint(out, first ? r->served_len : 0);
                jr__buf_bytes(out, first ? r->served : NULL, first);
                if (out->err) rc = out->err;
            }
        }
    }
    if (rc == JR_ECORRUPT) jr__srep_store_failed(r, rc, "a store read for a catch-up");
    if (rc != 0) {
        jr__route_reply(js, rt, rc, NULL, 0);
        return;
    }
    js->catchup_served += raw->len;
    jr__route_reply(js, rt, 0, out->data, out->len);
}
