/*
 * catchup — a stream replica restored from a snapshot pulls the messages it lacks (issue 4 §6).
 *
 * A stream snapshot is the stream's metadata, not its messages (fsm.h). When a replica installs
 * one (a new replica, or one so far behind that the leader's log was compacted past it), the
 * fsm reconciles its store and reports the first seq it must fetch. The replica then asks a peer
 * that holds the stream — the leader if known, else the other replicas in turn — for the
 * messages from that seq on, one chunk at a time (JR__RPC_CATCHUP: flow control is "one chunk in
 * flight"), each chunk the source store's checksummed records, lz4-compressed on the wire. After
 * each chunk it restores the snapshot again, which either asks for more or completes. The last
 * chunk of a round comes with the source's own snapshot at the index the chunk was read at, and
 * the replica restores that one from then on: its state then matches the messages it received
 * exactly, even when the source deleted some of them after the snapshot the replica started
 * from (fsm.h: the catch-up's one inexact case otherwise). Entries up to that index are then
 * ignored when the group applies them.
 * Chunks come from one source's state moving forward: a chunk read at an index below one an
 * earlier chunk was read at is not applied (that source is behind; the replica asks again).
 * JR__RPC_CATCHUP: request = varint group | varint from | varint max_bytes; response = varint
 * next | varint raw_len | str lz4(records) | varint read_at (the source's applied index) |
 * u8 final (the source's end) | str snapshot (the source's, at read_at; only when final).
 * This is not a replay of the WAL from zero: the WAL only ever needs the entries after the
 * snapshot, and it is compacted behind the store's durable point when snapshots are taken.
 *
 * Entries the group commits while the replica is restoring are queued in order (with their
 * terms) and applied as soon as the restore completes, so the replica's log and state machine
 * stay in step; a source that cannot help (itself restoring, or behind) is skipped after a
 * pause. Snapshots are refused while restoring (the node retries later).
 */
#include <inttypes.h>
#include <lz4.h>
#include <string.h>

#include "node/js.h"
#include "node/rpc.h"
#include "util/alloc.h"

#define CHUNK_BYTES (256u << 10)

typedef struct qent {
    uint64_t index, term;
    size_t len;
    uint8_t data[];
} qent;

struct jr__catchup {
    uint8_t *snap;
    size_t snap_len;
    uint64_t snap_index;
    uint64_t need;    /* first seq still missing */
    uint64_t read_at; /* the latest source index a chunk applied here was read at (at least the
                         snapshot's: a source behind it could not restore what the log no
                         longer has for this replica) */
    uint64_t rpc_id;  /* the chunk request in flight (0: none) */
    unsigned attempts;
    qent **q;
    size_t nq, capq;
};

int jr__catchup_begin(jr__srep *r, uint64_t index, const void *snap, size_t len, uint64_t need)
{
    jr__js *js = r->js;
    const jr_allocator *a = js->n->alloc;
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
    cu->read_at = index; /* no chunk read before the snapshot being restored is any use */
    r->cu = cu;
    jr__node_log(js->n, JR_LOG_INFO,
                 "stream '%s': restored snapshot %" PRIu64 ", fetching messages from seq %" PRIu64,
                 r->name, index, need);
    jr__js_timer_arm(js, &r->timer, js->n->now);
    return 0;
}

int jr__catchup_queue(jr__srep *r, uint64_t index, uint64_t term, const void *data, size_t len)
{
    jr__catchup *cu = r->cu;
    const jr_allocator *a = r->js->n->alloc;
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
    const jr_allocator *a = r->js->n->alloc;
    jr__rpc_cancel(r->js, cu->rpc_id);
    for (size_t i = 0; i < cu->nq; i++) jr__free(a, cu->q[i]);
    jr__free(a, cu->q);
    jr__free(a, cu->snap);
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
        jr__free(r->js->n->alloc, q[i]);
    }
    jr__free(r->js->n->alloc, q);
}

/* Which peer to ask: the leader when known (and not us), else the replicas in turn. */
static jr__id pick_source(jr__srep *r)
{
    jr__js *js = r->js;
    jr_node *n = js->n;
    if (r->cu->attempts % 2 == 0 && r->g) {
        jr__id l = jr__raft_leader(jr__group_raft(r->g));
        if (l && l != n->self) return l;
    }
    size_t k = 0, others = 0;
    for (size_t i = 0; i < r->npeers; i++)
        if (strcmp(r->peers[i], n->name) != 0) others++;
    if (!others) return 0;
    size_t want = r->cu->attempts % others;
    for (size_t i = 0; i < r->npeers; i++) {
        if (strcmp(r->peers[i], n->name) == 0) continue;
        if (k++ == want) {
            jr__peer *p = jr__peer_find_name(n, r->peers[i]);
            return p ? p->id : 0;
        }
    }
    return 0;
}

static void on_chunk(jr__js *js, void *arg, int status, const uint8_t *p, size_t len)
{
    jr__srep *r = arg;
    jr__catchup *cu = r->cu;
    jr_node *n = js->n;
    if (!cu) return;
    cu->rpc_id = 0;
    if (status == JR_ECLOSED) return;
    int rc = status == JR__RPC_NO_ANSWER ? JR_ETIMEDOUT : status;
    uint64_t next = 0, raw = 0, at = 0;
    const uint8_t *z = NULL, *snap = NULL;
    size_t zlen = 0, slen = 0;
    uint8_t final = 0;
    if (rc == 0) {
        jr__rd rd;
        jr__rd_init(&rd, p, len);
        next = jr__rd_varint(&rd);
        raw = jr__rd_varint(&rd);
        z = jr__rd_bytes(&rd, &zlen, len);
        at = jr__rd_varint(&rd);
        final = jr__rd_u8(&rd);
        snap = jr__rd_bytes(&rd, &slen, len);
        if (rd.err || jr__rd_left(&rd) || raw > 4 * (uint64_t)CHUNK_BYTES + (1u << 21) ||
            (raw && !zlen) || next < cu->need || final > 1 || (slen && (!at || !final)))
            rc = JR_ECORRUPT;
    }
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
        if (rc == 0) {
            js->catchup_chunks++;
            js->catchup_bytes += raw;
            cu->read_at = at;
        }
    }
    uint64_t need = next;
    if (rc == 0 && slen) {
        /* The source's end, with its own state there: restore that one (exact: every chunk so
         * far was read at or before it). */
        uint8_t *copy = jr__malloc(js->n->alloc, slen);
        rc = copy ? jr__stream_fsm_restore(r->fsm, at, snap, slen, &need) : JR_ENOMEM;
        if (rc == 0) {
            jr__free(js->n->alloc, cu->snap);
            memcpy(copy, snap, slen);
            cu->snap = copy;
            cu->snap_len = slen;
            cu->snap_index = at;
        } else {
            jr__free(js->n->alloc, copy);
        }
    } else if (rc == 0 && final) {
        /* the source's end without its state (it could not take a snapshot): ours, which is
         * exact unless the source deleted messages after it (fsm.h) */
        rc = jr__stream_fsm_restore(r->fsm, cu->snap_index, cu->snap, cu->snap_len, &need);
    }
    if (rc != 0) {
        jr__node_log(n, JR_LOG_WARN, "stream '%s': catch-up chunk from seq %" PRIu64 ": %s",
                     r->name, cu->need, jr_strerror(rc));
        jr__stream_fsm_info info;
        jr__stream_fsm_info_get(r->fsm, &info);
        if (info.failed) {
            r->failed = info.failed;
            return;
        }
        cu->attempts++;
        return; /* the replica's timer asks again */
    }
    if (need == 0) {
        jr__catchup_finish(r);
        return;
    }
    cu->attempts = 0;
    cu->need = need;
    jr__catchup_step(r);
}

void jr__catchup_step(jr__srep *r)
{
    jr__js *js = r->js;
    jr__catchup *cu = r->cu;
    if (!cu || cu->rpc_id || r->failed) return;
    jr__id src = pick_source(r);
    if (!src) {
        cu->attempts++;
        return;
    }
    uint8_t b[40];
    jr__buf out = {b, 0, sizeof b, 0, NULL};
    jr__buf_varint(&out, r->group);
    jr__buf_varint(&out, cu->need);
    uint32_t max = js->n->max_frame / 4 < CHUNK_BYTES ? js->n->max_frame / 4 : CHUNK_BYTES;
    jr__buf_varint(&out, max);
    jr_iovec iov = {out.data, out.len};
    if (jr__rpc_call(js, src, JR__RPC_CATCHUP, &iov, 1, 2 * js->n->election_ns, on_chunk, r,
                     &cu->rpc_id) != 0)
        cu->attempts++;
}

void jr__catchup_serve(jr__js *js, const jr__route *rt, const uint8_t *p, size_t len)
{
    jr__rd rd;
    jr__rd_init(&rd, p, len);
    uint64_t group = jr__rd_varint(&rd), from = jr__rd_varint(&rd), max = jr__rd_varint(&rd);
    if (rd.err || jr__rd_left(&rd) || from == 0) {
        jr__route_reply(js, rt, JR_EINVAL, NULL, 0);
        return;
    }
    jr__srep *r = jr__srep_find(js, group);
    if (!r) {
        jr__route_reply(js, rt, JR_ENOTFOUND, NULL, 0);
        return;
    }
    jr__stream_fsm_info info;
    jr__stream_fsm_info_get(r->fsm, &info);
    if (r->cu || r->failed || info.restoring || info.failed || info.horizon) {
        jr__route_reply(js, rt, JR_EBUSY, NULL, 0); /* its store is not complete */
        return;
    }
    if (max > CHUNK_BYTES) max = CHUNK_BYTES;
    jr__buf *raw = &js->scratch2;
    jr__buf_reset(raw);
    uint64_t next = 0;
    int rc = jr__stream_fsm_read_chunk(r->fsm, from, (size_t)max, raw, &next);
    if (rc == JR_ENOTFOUND) {
        rc = 0;
        next = info.store.last_seq + 1;
        raw->len = 0;
    }
    /* The last chunk comes with this replica's snapshot at the index it was read at, so the
     * requester restores a state that matches the messages it got exactly (fsm.h). */
    jr__buf snap;
    jr__buf_init(&snap, js->n->alloc);
    uint64_t read_index = jr__stream_fsm_applied(r->fsm);
    int final = next > info.store.last_seq;
    if (rc == 0 && final) {
        if (read_index == 0 || jr__stream_fsm_snapshot(r->fsm, &snap) != 0 ||
            snap.len > js->n->max_frame / 4)
            jr__buf_reset(&snap); /* the requester restores the snapshot it has */
    }
    jr__buf *out = &js->scratch;
    jr__buf_reset(out);
    if (rc == 0) {
        int bound = raw->len ? LZ4_compressBound((int)raw->len) : 0;
        uint8_t *z = bound ? jr__malloc(js->n->alloc, (size_t)bound) : NULL;
        int zlen = 0;
        if (bound && !z) rc = JR_ENOMEM;
        if (rc == 0 && bound) {
            zlen = LZ4_compress_default((const char *)raw->data, (char *)z, (int)raw->len, bound);
            if (zlen <= 0) rc = JR_EIO;
        }
        if (rc == 0) {
            jr__buf_varint(out, next);
            jr__buf_varint(out, raw->len);
            jr__buf_bytes(out, z, (size_t)zlen);
            jr__buf_varint(out, read_index);
            jr__buf_u8(out, (uint8_t)final);
            jr__buf_bytes(out, snap.data, snap.len);
            if (out->err) rc = out->err;
        }
        jr__free(js->n->alloc, z);
    }
    jr__buf_free(&snap);
    if (rc != 0) {
        jr__route_reply(js, rt, rc, NULL, 0);
        return;
    }
    jr__route_reply(js, rt, 0, out->data, out->len);
}

