/*
 * catchup — a stream replica restored from a snapshot pulls the messages it lacks.
 *
 * A stream snapshot is the stream's metadata, not its messages (fsm.h). When a replica installs
 * one (a new replica, or one so far behind that the leader's log was compacted past it), the
 * fsm reconciles its store and reports the first seq it must fetch. The replica then asks a peer
 * that holds the stream — the leader if known, else the other replicas in turn — for the
 * messages from that seq on, one chunk at a time (flow control: one request in flight), each
 * chunk the source store's checksummed records, lz4-compressed on the wire.
 *
 * Exactness. The chunks of a round are read in seq order from a source whose state moves
 * forward; the round ends with the chunk that reaches the source's last seq, and that chunk
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
 * step. Snapshots of a restoring replica are refused (the node retries later). This is not a
 * replay of the WAL from zero: the WAL only ever needs the entries after the snapshot, and it
 * is compacted behind the store's durable point when snapshots are taken.
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
#include "util/alloc.h"

#define CHUNK_BYTES (256u << 10)
#define PIECE_BYTES (256u << 10)
#define MAX_SNAPSHOT (1ull << 32) /* largest source snapshot accepted */

enum { OP_CHUNK = 0, OP_PIECE = 1 };

typedef struct qent {
    uint64_t index, term;
    size_t len;
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
    uint64_t rpc_id;  /* the request in flight (0: none) */
    jr__id source;    /* where the round's chunks come from (pieces must too) */
    unsigned attempts;
    /* the source's snapshot arriving in pieces (total 0: none) */
    jr__buf piece;
    uint64_t piece_index, piece_total;
    qent **q;
    size_t nq, capq;
};

/* The follower's side ------------------------------------------------------------------------*/

int jr__catchup_begin(jr__srep *r, uint64_t index, const void *snap, size_t len, uint64_t need)
{
    jr__js *js = r->js;
    const jr_allocator *a = js->alloc;
    uint8_t *copy = jr__malloc(a, len ? len : 1);
    if (!copy) return JR_ENOMEM;
    memcpy(copy, snap, len);
    jr__catchup *cu = r->cu;
    if (cu) {
        /* A newer snapshot while restoring: fetch for it (entries queued so far stay; those it
         * covers are ignored when applied). */
        jr__free(a, cu->snap);
        cu->snap = copy;
        cu->snap_len = len;
        cu->snap_index = index;
        cu->need = need;
        if (cu->read_at < index) cu->read_at = index;
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
    cu->read_at = index;
    jr__buf_init(&cu->piece, a);
    r->cu = cu;
    jr__node_log(js->n, JR_LOG_INFO,
                 "stream '%s': restored snapshot %" PRIu64 ", fetching messages from seq %" PRIu64,
                 r->name, index, need);
    jr__js_timer_arm(js, &r->timer, jr__node_now(js->n));
    return 0;
}

int jr__catchup_queue(jr__srep *r, uint64_t index, uint64_t term, const void *data, size_t len)
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
    qent *e = jr__malloc(a, sizeof *e + (len ? len : 1));
    if (!e) return JR_ENOMEM;
    e->index = index;
    e->term = term;
    e->len = len;
    if (len) memcpy(e->data, data, len);
    cu->q[cu->nq++] = e;
    return 0;
}

void jr__catchup_free(jr__srep *r)
{
    jr__catchup *cu = r->cu;
    if (!cu) return;
    const jr_allocator *a = r->js->alloc;
    jr__rpc_cancel(r->js->n, cu->rpc_id);
    for (size_t i = 0; i < cu->nq; i++) jr__free(a, cu->q[i]);
    jr__free(a, cu->q);
    jr__free(a, cu->snap);
    jr__buf_free(&cu->piece);
    jr__free(a, cu);
    r->cu = NULL;
}

void jr__catchup_finish(jr__srep *r)
{
    jr__catchup *cu = r->cu;
    qent **q = cu->q;
    size_t nq = cu->nq;
    cu->q = NULL;
    cu->nq = cu->capq = 0;
    jr__catchup_free(r);
    jr__node_log(r->js->n, JR_LOG_INFO, "stream '%s': caught up; applying %zu queued entries",
                 r->name, nq);
    for (size_t i = 0; i < nq; i++) {
        jr__srep_apply_entry(r, q[i]->index, q[i]->term, q[i]->data, q[i]->len);
        jr__free(r->js->alloc, q[i]);
    }
    jr__free(r->js->alloc, q);
    /* A mark now: the node's log may already be compacted past the store's last one, and a
     * restart should not need another catch-up. */
    jr__srep_sync(r);
}

/* Which peer to ask: the leader when known (and not us), else the replicas in turn. */
static jr__id pick_source(jr__srep *r)
{
    jr_node *n = r->js->n;
    if (r->cu->attempts % 2 == 0 && r->g) {
        jr__id l = jr__raft_leader(jr__group_consensus(r->g));
        if (l && l != r->js->self) return l;
    }
    size_t k = 0, others = 0;
    for (size_t i = 0; i < r->as->npeers; i++)
        if (strcmp(r->as->peers[i], r->js->name) != 0) others++;
    if (!others) return 0;
    size_t want = r->cu->attempts % others;
    for (size_t i = 0; i < r->as->npeers; i++) {
        if (strcmp(r->as->peers[i], r->js->name) == 0) continue;
        if (k++ == want) {
            jr__peer *p = jr__peer_find_name(n, r->as->peers[i]);
            return p ? jr__peer_get_id(p) : 0;
        }
    }
    return 0;
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
    if (rc != JR_EBUSY)
        jr__node_log(r->js->n, JR_LOG_WARN, "stream '%s': catch-up from seq %" PRIu64 ": %s",
                     r->name, cu->need, jr_strerror(rc));
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

/* After a piece of the source's snapshot was taken: restore once it is whole, else ask on. */
static void piece_taken(jr__srep *r)
{
    if (r->cu->piece.len == r->cu->piece_total)
        restore_source(r);
    else
        jr__catchup_step(r);
}

void jr__catchup_step(jr__srep *r)
{
    jr__js *js = r->js;
    jr__catchup *cu = r->cu;
    if (!cu || cu->rpc_id || r->failed) return;
    int pieces = cu->piece_total && cu->piece.len < cu->piece_total;
    jr__id src = pieces ? cu->source : pick_source(r);
    if (!src) {
        cu->attempts++;
        return;
    }
    uint8_t b[48];
    jr__buf out = {b, 0, sizeof b, 0, NULL};
    uint32_t max = js->facts.max_frame / 4 < CHUNK_BYTES ? js->facts.max_frame / 4 : CHUNK_BYTES;
    jr__buf_u8(&out, pieces ? OP_PIECE : OP_CHUNK);
    jr__buf_varint(&out, r->group);
    if (pieces) {
        jr__buf_varint(&out, cu->piece_index);
        jr__buf_varint(&out, cu->piece.len);
    } else {
        jr__buf_varint(&out, cu->need);
    }
    jr__buf_varint(&out, max);
    jr_iovec iov = {out.data, out.len};
    cu->source = src;
    if (jr__rpc_call(js->n, src, JR__RPC_CATCHUP, &iov, 1, 2 * js->election_ns, on_answer, r,
                     &cu->rpc_id) != 0)
        cu->attempts++;
}

/* An answer of the source (a chunk, or a piece of its snapshot). */
static void on_answer(jr_node *n, void *arg, int status, int answered, const uint8_t *p, size_t len)
{
    jr__js *js = jr__js_of(n);
    (void)answered;
    jr__srep *r = arg;
    jr__catchup *cu = r->cu;
    if (!cu) return;
    cu->rpc_id = 0;
    if (status == JR_ECLOSED) return;
    if (status != 0) {
        stall(r, status);
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
        raw > 4 * (uint64_t)CHUNK_BYTES + (1u << 21) || (raw && !zlen) || next < cu->need ||
        final > 1 || (total && (!final || !at || !plen)) || (!total && plen))
        rc = JR_ECORRUPT;
    /* A source behind the state some chunk was already read at could describe as live a
     * message that chunk did not have: wait for it (or another) to get there. */
    if (rc == 0 && at < cu->read_at) rc = JR_EBUSY;
    if (rc == 0) {
        jr__buf *b = &js->scratch2;
        jr__buf_reset(b);
        if (jr__buf_reserve(b, (size_t)raw + 1) != 0) {
            rc = JR_ENOMEM;
        } else if (raw) {
            int got = LZ4_decompress_safe((const char *)z, (char *)b->data, (int)zlen, (int)raw);
            if (got < 0 || (uint64_t)got != raw) rc = JR_ECORRUPT;
        }
        if (rc == 0) rc = jr__stream_fsm_apply_chunk(r->fsm, b->data, (size_t)raw, next);
    }
    if (rc != 0) {
        stall(r, rc);
        return;
    }
    js->catchup_chunks++;
    js->catchup_bytes += raw;
    cu->read_at = at;
    cu->need = next;
    cu->attempts = 0;
    if (!final) {
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
    uint64_t need = 0;
    rc = jr__stream_fsm_restore(r->fsm, cu->snap_index, cu->snap, cu->snap_len, &need);
    if (rc != 0) {
        stall(r, rc);
        return;
    }
    if (need == 0) {
        jr__catchup_finish(r);
        return;
    }
    cu->need = need;
    cu->attempts++; /* pause: let the source recover */
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
    if (max > CHUNK_BYTES) max = CHUNK_BYTES;
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
    uint64_t read_at = jr__stream_fsm_applied(r->fsm);
    int final = next > info.store.last_seq;
    /* The round's last chunk comes with this replica's snapshot where the chunk was read (kept
     * for the pieces that do not fit this answer). */
    size_t first = 0;
    if (rc == 0 && final && read_at && keep_snapshot(js, r) == 0)
        first = r->served_len < PIECE_BYTES ? r->served_len : PIECE_BYTES;
    jr__buf *out = &js->scratch;
    jr__buf_reset(out);
    uint8_t *z = NULL;
    int zlen = 0;
    int bound = raw->len ? LZ4_compressBound((int)raw->len) : 0;
    if (rc == 0 && bound) {
        z = jr__malloc(js->alloc, (size_t)bound);
        if (!z) rc = JR_ENOMEM;
        if (rc == 0) {
            zlen = LZ4_compress_default((const char *)raw->data, (char *)z, (int)raw->len, bound);
            if (zlen <= 0) rc = JR_EIO;
        }
    }
    if (rc == 0) {
        jr__buf_u8(out, OP_CHUNK);
        jr__buf_varint(out, next);
        jr__buf_varint(out, raw->len);
        jr__buf_bytes(out, z, (size_t)zlen);
        jr__buf_varint(out, read_at);
        jr__buf_u8(out, (uint8_t) final);
        jr__buf_varint(out, first ? r->served_len : 0);
        jr__buf_bytes(out, first ? r->served : NULL, first);
        if (out->err) rc = out->err;
    }
    jr__free(js->alloc, z);
    if (rc == JR_ECORRUPT) jr__srep_store_failed(r, rc, "a store read for a catch-up");
    if (rc != 0) {
        jr__route_reply(js, rt, rc, NULL, 0);
        return;
    }
    jr__route_reply(js, rt, 0, out->data, out->len);
}
