/*
 * fsm_snapshot.c — the stream state machine's persisted metadata: its snapshot (its metadata, not
 * its messages), its restore by reconciling the local store, catch-up chunks, and the store
 * marks that make a restart exact (fsm.h "Restart").
 *
 * Snapshot, version 2 (integers little-endian; varint = canonical unsigned LEB128):
 *   version:u8 index:u64 clock:u64 last_seq:varint
 *   msgs:varint bytes:varint first_seq:varint num_subjects:varint num_deleted:varint
 *   first_ts:u64 last_ts:u64 (of the last stored message, as the fsm knows it)
 *   nranges:varint  nranges * (gap:varint len:varint)   deleted ranges: lo = prev + gap (prev
 *                                                        starts at first_seq, then hi + 1),
 *                                                        hi = lo + len
 *   last_msg_id:bytes  config:bytes (config.h encoding)
 *   nids:varint  nids * (id:bytes seq:varint dts:varint token:u64)   dedup window, oldest first;
 *                                                        ts = prev ts + dts (prev starts at 0);
 *                                                        token 0: stored without one
 *   xxh3:u64 (of every byte before it)
 * Version 1 is version 2 without the tokens (read as 0), so a snapshot written before tokens
 * existed still installs.
 * The decoder checks the checksum, then every field and the invariants between them (ranges
 * sorted, disjoint, non-adjacent, inside (first_seq, last_seq]; counts consistent; dedup seqs
 * within the stream and timestamps ordered and not after the clock; ids unique), and rejects
 * trailing bytes.
 *
 * Mark meta, version 2 (the opaque state of a store mark written at the applied index; the store
 * record around it carries the index and an xxh3):
 *   version:u8 clock:u64 last_seq:varint last_ts:u64 last_msg_id:bytes config:bytes
 *   window_count:varint window_floor:varint   the dedup window at the mark: how many ids, and
 *                                             the seq of the oldest (last_seq + 1 if none)
 *   ndelta:varint ndelta * (id:bytes seq:varint ts:u64 token:u64)   ids of the window with a
 *                                             seq above the last seq at the previous mark, by seq
 * Version 1 has no tokens (read as 0); a store may hold marks of both versions.
 * The mark's key is the highest seq of its delta (0 if none) and its floor the window floor:
 * the store keeps every mark that may hold an id of the window. The window is a suffix, by seq,
 * of every id ever inserted (ids enter in seq order and leave oldest first), so at open it is
 * exactly the ids of the kept marks with seq >= the last floor: checked against window_count,
 * seq order, timestamps and uniqueness. A restored snapshot needs no special mark: every id of
 * its window with a seq at or below the last seq of this replica's previous mark was inserted
 * here too (the same log, up to that mark) and is in a kept mark; the others go in the next
 * delta.
 */
#include <stdlib.h>
#include <string.h>

#include "stream/fsm.h"
#include "util/alloc.h"
#include "util/checksum.h"

/* Smallest record the store counts for a message (store.h, "Limits"). */
#define REC_MIN_BYTES 36u

/* ---------------------------------------------------------------------------------------------
 * Taking a snapshot
 */

int jr__stream_fsm_snapshot(jr__stream_fsm *f, jr__buf *out)
{
    if (f->failed) return f->failed;
    if (f->restoring) return JR_EBUSY;
    int rc = jr__stream_fsm_sync(f); /* a restart never reopens before this snapshot */
    if (rc) return rc;
    jr__store_state st;
    jr__store_state_get(f->store, &st);
    size_t nr;
    const jr__seq_range *r = jr__store_deleted(f->store, &nr);

    size_t start = out->len;
    jr__buf_u8(out, JR__STREAM_SNAP_VERSION);
    jr__buf_u64(out, f->applied);
    jr__buf_u64(out, (uint64_t)f->clock);
    jr__buf_varint(out, f->last_seq);
    jr__buf_varint(out, st.msgs);
    jr__buf_varint(out, st.bytes);
    jr__buf_varint(out, st.first_seq);
    jr__buf_varint(out, st.num_subjects);
    jr__buf_varint(out, st.num_deleted);
    jr__buf_u64(out, (uint64_t)st.first_ts);
    jr__buf_u64(out, (uint64_t)f->last_ts);
    jr__buf_varint(out, nr);
    uint64_t prev = st.first_seq;
    for (size_t i = 0; i < nr; i++) {
        jr__buf_varint(out, r[i].lo - prev);
        jr__buf_varint(out, r[i].hi - r[i].lo);
        prev = r[i].hi + 1;
    }
    jr__buf_bytes(out, f->last_msg_id, f->last_msg_id_len);
    jr__buf cfg;
    jr__buf_init(&cfg, f->alloc);
    rc = jr__stream_config_encode(&f->cfg->c, &cfg);
    if (!rc) jr__buf_bytes(out, cfg.data, cfg.len);
    jr__buf_free(&cfg);
    if (rc) {
        out->len = start;
        return rc;
    }
    size_t nids = jr__dedup_count(&f->dedup);
    jr__buf_varint(out, nids);
    int64_t pts = 0;
    for (size_t i = 0; i < nids; i++) {
        const jr__dedup_entry *e = jr__dedup_at(&f->dedup, i);
        jr__buf_bytes(out, e->id, e->len);
        jr__buf_varint(out, e->seq);
        jr__buf_varint(out, (uint64_t)(e->ts - pts));
        jr__buf_u64(out, e->token);
        pts = e->ts;
    }
    if (out->err) {
        int err = out->err;
        out->len = start;
        return err;
    }
    jr__buf_u64(out, jr__xxh3(out->data + start, out->len - start));
    return out->err;
}

/* ---------------------------------------------------------------------------------------------
 * Decoding
 */

typedef struct snap {
    uint64_t index;
    int64_t clock;
    uint64_t last_seq;
    jr__store_state st;
    jr__seq_range *ranges;
    size_t nranges;
    const char *last_id;
    size_t last_id_len;
    jr__stream_cfg *cfg;
    jr__dedup dedup;
} snap;

static void snap_free(const jr_allocator *a, snap *s)
{
    jr__free(a, s->ranges);
    jr__stream_cfg_free(s->cfg);
    jr__dedup_free(&s->dedup);
}

static int decode(jr__stream_fsm *f, const void *data, size_t len, snap *s)
{
    memset(s, 0, sizeof *s);
    jr__dedup_init(&s->dedup, f->alloc, f->dedup_max);
    if (!data || len < 1 + 8) return JR_ECORRUPT;
    const uint8_t *p = data;
    if (jr__get_u64(p + len - 8) != jr__xxh3(p, len - 8)) return JR_ECORRUPT;
    if (p[0] != 1 && p[0] != JR__STREAM_SNAP_VERSION) return JR_EVERSION;
    int tokens = p[0] >= 2;
    jr__rd r;
    jr__rd_init(&r, p + 1, len - 9);
    s->index = jr__rd_u64(&r);
    uint64_t clock = jr__rd_u64(&r);
    s->last_seq = jr__rd_varint(&r);
    jr__store_state *st = &s->st;
    st->msgs = jr__rd_varint(&r);
    st->bytes = jr__rd_varint(&r);
    st->first_seq = jr__rd_varint(&r);
    st->num_subjects = jr__rd_varint(&r);
    st->num_deleted = jr__rd_varint(&r);
    st->first_ts = (int64_t)jr__rd_u64(&r);
    st->last_ts = (int64_t)jr__rd_u64(&r);
    st->last_seq = s->last_seq;
    uint64_t nr = jr__rd_varint(&r);
    if (r.err) return JR_ECORRUPT;
    if (clock > INT64_MAX || s->last_seq == UINT64_MAX || st->first_seq == 0 ||
        st->first_seq > s->last_seq + 1 || st->first_ts < 0 || st->last_ts < 0)
        return JR_ECORRUPT;
    s->clock = (int64_t)clock;
    if (st->first_ts > s->clock || st->last_ts > s->clock) return JR_ECORRUPT;
    if (st->msgs == 0) {
        if (st->first_seq != s->last_seq + 1 || st->bytes || st->num_subjects || st->num_deleted ||
            nr)
            return JR_ECORRUPT;
    } else {
        uint64_t span = s->last_seq - st->first_seq + 1;
        if (st->msgs > span || st->num_deleted != span - st->msgs || st->num_subjects == 0 ||
            st->num_subjects > st->msgs || st->bytes / REC_MIN_BYTES < st->msgs)
            return JR_ECORRUPT;
    }
    if (nr > jr__rd_left(&r) / 2) return JR_ECORRUPT;
    if (nr) {
        s->ranges = jr__calloc(f->alloc, (size_t)nr, sizeof *s->ranges);
        if (!s->ranges) return JR_ENOMEM;
    }
    uint64_t prev = st->first_seq, total = 0;
    for (uint64_t i = 0; i < nr; i++) {
        /* lo = prev + gap, gap >= 1: ranges are interior (first_seq is live), sorted, disjoint
         * and non-adjacent; hi = lo + n <= last_seq */
        uint64_t gap = jr__rd_varint(&r), n = jr__rd_varint(&r);
        if (r.err || gap == 0 || gap > s->last_seq || n > s->last_seq) return JR_ECORRUPT;
        uint64_t lo = prev + gap;
        if (lo < prev || lo + n < lo || lo + n > s->last_seq) return JR_ECORRUPT;
        s->ranges[i].lo = lo;
        s->ranges[i].hi = lo + n;
        total += n + 1;
        prev = lo + n + 1;
    }
    s->nranges = (size_t)nr;
    if (total != st->num_deleted) return JR_ECORRUPT;
    s->last_id = (const char *)jr__rd_bytes(&r, &s->last_id_len, JR__OP_MSG_ID_MAX);
    size_t clen;
    const uint8_t *cfg = jr__rd_bytes(&r, &clen, JR__OP_CONFIG_MAX);
    if (r.err) return JR_ECORRUPT;
    int rc = jr__stream_config_decode(cfg, clen, f->alloc, &s->cfg);
    if (rc) return rc == JR_ENOMEM ? rc : JR_ECORRUPT;
    if (strcmp(s->cfg->c.name, f->cfg->c.name) != 0 || s->cfg->c.storage != f->cfg->c.storage)
        return JR_EINVAL;
    uint64_t nids = jr__rd_varint(&r);
    if (r.err || nids > jr__rd_left(&r) / 3) return JR_ECORRUPT;
    int64_t ts = 0;
    for (uint64_t i = 0; i < nids; i++) {
        size_t idlen;
        const char *id = (const char *)jr__rd_bytes(&r, &idlen, JR__OP_MSG_ID_MAX);
        uint64_t seq = jr__rd_varint(&r), dts = jr__rd_varint(&r);
        uint64_t token = tokens ? jr__rd_u64(&r) : 0;
        if (r.err || idlen == 0 || seq == 0 || seq > s->last_seq || dts > (uint64_t)(s->clock - ts))
            return JR_ECORRUPT;
        ts += (int64_t)dts;
        if (jr__dedup_find(&s->dedup, id, idlen)) return JR_ECORRUPT;
        jr__dedup_entry *e;
        rc = jr__dedup_prepare(&s->dedup, id, idlen, &e);
        if (rc) return rc;
        jr__dedup_commit(&s->dedup, e, seq, ts, token);
    }
    if (r.err || jr__rd_left(&r)) return JR_ECORRUPT;
    return 0;
}

int jr__stream_fsm_snap_last_seq(const void *data, size_t len, uint64_t *last_seq)
{
    const uint8_t *p = data;
    if (!p || len < 1 + 8) return JR_ECORRUPT;
    if (jr__get_u64(p + len - 8) != jr__xxh3(p, len - 8)) return JR_ECORRUPT;
    if (p[0] != 1 && p[0] != JR__STREAM_SNAP_VERSION) return JR_EVERSION;
    jr__rd r;
    jr__rd_init(&r, p + 1, len - 9);
    jr__rd_u64(&r); /* index */
    jr__rd_u64(&r); /* clock */
    uint64_t last = jr__rd_varint(&r);
    if (r.err || last == UINT64_MAX) return JR_ECORRUPT;
    *last_seq = last;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Restore
 */

/* Deletes the local messages that the snapshot says are gone, up to seq `upto`. */
static int drop_dead(jr__stream_fsm *f, const snap *s, uint64_t upto)
{
    jr__store *st = f->store;
    jr__purge all = {0};
    if (s->st.msgs == 0) {
        all.seq = upto + 1;
        return jr__store_purge(st, &all, NULL);
    }
    all.seq = s->st.first_seq;
    int rc = jr__store_purge(st, &all, NULL);
    for (size_t i = 0; !rc && i < s->nranges && s->ranges[i].lo <= upto; i++) {
        uint64_t hi = s->ranges[i].hi < upto ? s->ranges[i].hi : upto;
        jr__store_msg m;
        uint64_t from = s->ranges[i].lo;
        while (!rc && (rc = jr__store_next(st, from, NULL, 0, &m)) == 0 && m.seq <= hi) {
            from = m.seq + 1;
            rc = jr__store_delete(st, m.seq, 0);
        }
        if (rc == JR_ENOTFOUND) rc = 0;
    }
    return rc;
}

/* The first seq after `after` that is live in the snapshot, or 0. */
static uint64_t next_live(const snap *s, uint64_t after)
{
    if (s->st.msgs == 0) return 0;
    uint64_t q = after + 1 > s->st.first_seq ? after + 1 : s->st.first_seq;
    for (size_t i = 0; i < s->nranges; i++)
        if (q >= s->ranges[i].lo && q <= s->ranges[i].hi) q = s->ranges[i].hi + 1;
    return q <= s->last_seq ? q : 0;
}

/* How many seqs <= upto are live in the snapshot. */
static uint64_t live_upto(const snap *s, uint64_t upto)
{
    if (s->st.msgs == 0 || upto < s->st.first_seq) return 0;
    uint64_t hi = upto < s->last_seq ? upto : s->last_seq, n = hi - s->st.first_seq + 1;
    for (size_t i = 0; i < s->nranges && s->ranges[i].lo <= hi; i++)
        n -= (s->ranges[i].hi < hi ? s->ranges[i].hi : hi) - s->ranges[i].lo + 1;
    return n;
}

static void install(jr__stream_fsm *f, snap *s)
{
    jr__stream_cfg_free(f->cfg);
    f->cfg = s->cfg;
    s->cfg = NULL;
    jr__dedup_free(&f->dedup);
    f->dedup = s->dedup;
    jr__dedup_init(&s->dedup, f->alloc, f->dedup_max);
    jr__stream_fsm_set_id(f, s->last_id, s->last_id_len); /* reserved by the caller */
    f->clock = s->clock;
    f->last_seq = s->last_seq;
    f->last_ts = s->st.last_ts;
    f->applied = s->index;
    f->restoring = 0;
    f->limits_pending = 0; /* set from the snapshot's config right after */
}

int jr__stream_fsm_restore(jr__stream_fsm *f, uint64_t index, const void *data, size_t len,
                           uint64_t *need_from)
{
    *need_from = 0;
    if (f->failed) return f->failed;
    snap s;
    int rc = decode(f, data, len, &s);
    if (!rc && s.index != index) rc = JR_ECORRUPT;
    jr__store_state l;
    jr__store_state_get(f->store, &l);
    if (!rc && !f->restoring && index <= f->applied) rc = 1; /* not newer: ignored */
    if (!rc && l.last_seq > s.last_seq) {
        /* the store is ahead of this snapshot: while restoring, the chunks came from a source
         * that moved on; go on fetching after them and complete with a newer snapshot of the
         * source (one taken where the chunks end). Otherwise the snapshot is older than what
         * this replica already holds. */
        if (f->restoring) {
            *need_from = l.last_seq + 1;
            rc = 1;
        } else {
            rc = JR_ERANGE;
        }
    }
    if (rc) {
        snap_free(f->alloc, &s);
        return rc == 1 ? 0 : rc;
    }

    /* Limits are suspended while the store is being reconciled and filled: every message the
     * snapshot has must be kept, whatever the old config said. */
    jr__store_limits none;
    memset(&none, 0, sizeof none);
    rc = jr__store_set_limits(f->store, &none);
    if (!rc) rc = drop_dead(f, &s, l.last_seq);
    /* Now the store's messages are some of the snapshot's up to the store's last seq. If some
     * are missing, chunks came from a source that had deleted them since the snapshot: this
     * snapshot can not be completed exactly; go on (the source's newer snapshot will). */
    jr__store_state after;
    jr__store_state_get(f->store, &after);
    int missing = !rc && after.msgs < live_upto(&s, l.last_seq);
    if (!rc && (missing || l.last_seq < s.last_seq)) {
        uint64_t q = next_live(&s, l.last_seq);
        if (q || missing) {
            f->restoring = 1;
            *need_from = q ? q : l.last_seq + 1;
            snap_free(f->alloc, &s);
            return 0;
        }
        rc = jr__store_skip(f->store, s.last_seq);
    }
    if (!rc) rc = jr__stream_fsm_reserve_id(f, s.last_id_len);
    if (rc) {
        snap_free(f->alloc, &s);
        return jr__stream_fsm_fail(f, rc);
    }
    install(f, &s);
    snap_free(f->alloc, &s);
    jr__store_limits lim;
    jr__stream_fsm_limits(&f->cfg->c, &lim);
    rc = jr__store_set_limits(f->store, &lim);
    if (!rc) rc = jr__store_expire(f->store, f->clock);
    return rc ? jr__stream_fsm_fail(f, rc) : 0;
}

/* ---------------------------------------------------------------------------------------------
 * Chunks
 */

int jr__stream_fsm_read_chunk(jr__stream_fsm *f, uint64_t from, size_t max_bytes, jr__buf *out,
                              uint64_t *next)
{
    return jr__store_read_chunk(f->store, from, max_bytes, out, next);
}

int jr__stream_fsm_apply_chunk(jr__stream_fsm *f, const void *chunk, size_t len, uint64_t next)
{
    if (f->failed) return f->failed;
    if (!f->restoring) return JR_EMISUSE;
    if (next == 0) return JR_EINVAL;
    int rc = jr__store_apply_chunk(f->store, chunk, len);
    if (rc == JR_ECORRUPT) return rc; /* validated before anything was appended: no change */
    if (!rc) rc = jr__store_skip(f->store, next - 1); /* no-op if not beyond the last seq */
    return rc ? jr__stream_fsm_fail(f, rc) : 0;
}

/* ---------------------------------------------------------------------------------------------
 * Marks (fsm.h "Restart")
 */

#define MARK_VERSION 2 /* the newest written; 1 is read too */

int jr__stream_fsm_mark(jr__stream_fsm *f)
{
    if (f->failed) return f->failed;
    jr__buf b;
    jr__buf_init(&b, f->alloc);
    jr__buf_u8(&b, MARK_VERSION);
    jr__buf_u64(&b, (uint64_t)f->clock);
    jr__buf_varint(&b, f->last_seq);
    jr__buf_u64(&b, (uint64_t)f->last_ts);
    jr__buf_bytes(&b, f->last_msg_id, f->last_msg_id_len);
    jr__buf cfg;
    jr__buf_init(&cfg, f->alloc);
    int rc = jr__stream_config_encode(&f->cfg->c, &cfg);
    if (!rc) jr__buf_bytes(&b, cfg.data, cfg.len);
    jr__buf_free(&cfg);
    size_t n = jr__dedup_count(&f->dedup);
    uint64_t floor = n ? jr__dedup_at(&f->dedup, 0)->seq : f->last_seq + 1;
    jr__buf_varint(&b, n);
    jr__buf_varint(&b, floor);
    /* the delta: the newest ids, those with seq > marked_seq (the ring is in seq order) */
    size_t from = n;
    while (from > 0 && jr__dedup_at(&f->dedup, from - 1)->seq > f->marked_seq) from--;
    jr__buf_varint(&b, n - from);
    for (size_t i = from; i < n; i++) {
        const jr__dedup_entry *e = jr__dedup_at(&f->dedup, i);
        jr__buf_bytes(&b, e->id, e->len);
        jr__buf_varint(&b, e->seq);
        jr__buf_u64(&b, (uint64_t)e->ts);
        jr__buf_u64(&b, e->token);
    }
    uint64_t key = from < n ? jr__dedup_at(&f->dedup, n - 1)->seq : 0;
    if (!rc) rc = b.err;
    if (!rc) rc = jr__store_mark(f->store, f->applied, b.data, b.len, key, floor);
    jr__buf_free(&b);
    if (rc) return jr__stream_fsm_fail(f, rc);
    f->marked_seq = f->last_seq;
    return 0;
}

/* A mark meta, parsed; rd is left at the delta. */
typedef struct mark {
    int64_t clock;
    uint64_t last_seq;
    int64_t last_ts;
    const char *last_id;
    size_t last_id_len;
    const uint8_t *cfg;
    size_t cfg_len;
    uint64_t count, floor, ndelta;
    int tokens; /* version 2: delta entries carry a token */
    jr__rd rd;
} mark;

static int mark_parse(const uint8_t *p, size_t n, mark *m)
{
    memset(m, 0, sizeof *m);
    jr__rd_init(&m->rd, p, n);
    jr__rd *r = &m->rd;
    uint8_t version = jr__rd_u8(r);
    if (r->err) return JR_ECORRUPT;
    if (version != 1 && version != MARK_VERSION) return JR_EVERSION;
    m->tokens = version >= 2;
    uint64_t clock = jr__rd_u64(r);
    m->last_seq = jr__rd_varint(r);
    uint64_t last_ts = jr__rd_u64(r);
    m->last_id = (const char *)jr__rd_bytes(r, &m->last_id_len, JR__OP_MSG_ID_MAX);
    m->cfg = jr__rd_bytes(r, &m->cfg_len, JR__OP_CONFIG_MAX);
    m->count = jr__rd_varint(r);
    m->floor = jr__rd_varint(r);
    m->ndelta = jr__rd_varint(r);
    if (r->err || clock > INT64_MAX || last_ts > clock || m->last_seq == UINT64_MAX ||
        m->floor == 0 || m->floor > m->last_seq + 1 ||
        (m->count == 0) != (m->floor == m->last_seq + 1) || m->count > m->last_seq - m->floor + 1 ||
        m->ndelta > jr__rd_left(r) / 10)
        return JR_ECORRUPT;
    m->clock = (int64_t)clock;
    m->last_ts = (int64_t)last_ts;
    return 0;
}

typedef struct idrec {
    uint64_t seq;
    int64_t ts;
    uint64_t token;
    size_t len;
    char *id;
} idrec;

static int cmp_idrec(const void *a, const void *b)
{
    const idrec *x = a, *y = b; /* by seq, then a copy with a token before one without */
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return (x->token == 0) - (y->token == 0);
}

typedef struct idvec {
    idrec *v;
    size_t n, cap;
} idvec;

static void idvec_free(const jr_allocator *a, idvec *iv)
{
    for (size_t i = 0; i < iv->n; i++) jr__free(a, iv->v[i].id);
    jr__free(a, iv->v);
}

/* Collects the ids of the delta of mark m with floor <= seq <= last_seq. */
static int collect(jr__stream_fsm *f, mark *m, uint64_t floor, uint64_t last_seq, int64_t clock,
                   idvec *iv)
{
    for (uint64_t i = 0; i < m->ndelta; i++) {
        size_t len;
        const char *id = (const char *)jr__rd_bytes(&m->rd, &len, JR__OP_MSG_ID_MAX);
        uint64_t seq = jr__rd_varint(&m->rd), ts = jr__rd_u64(&m->rd);
        uint64_t token = m->tokens ? jr__rd_u64(&m->rd) : 0;
        if (m->rd.err || len == 0 || seq == 0 || ts > (uint64_t)clock) return JR_ECORRUPT;
        if (seq < floor || seq > last_seq) continue;
        if (iv->n == iv->cap) {
            size_t ncap = iv->cap ? iv->cap * 2 : 64;
            idrec *v = jr__realloc(f->alloc, iv->v, ncap * sizeof *v);
            if (!v) return JR_ENOMEM;
            iv->v = v;
            iv->cap = ncap;
        }
        idrec *e = &iv->v[iv->n];
        e->id = jr__malloc(f->alloc, len);
        if (!e->id) return JR_ENOMEM;
        memcpy(e->id, id, len);
        e->len = len;
        e->seq = seq;
        e->ts = (int64_t)ts;
        e->token = token;
        iv->n++;
    }
    return jr__rd_left(&m->rd) ? JR_ECORRUPT : 0;
}

/* Rebuilds the dedup window from the store's kept marks (see the format comment). */
static int rebuild_window(jr__stream_fsm *f, const mark *last)
{
    idvec iv = {NULL, 0, 0};
    size_t cur = 0;
    jr__store_mark_rec rec;
    int rc;
    while ((rc = jr__store_marks_next(f->store, &cur, &rec)) == 0) {
        mark m;
        rc = mark_parse(rec.meta, rec.meta_len, &m);
        if (!rc) rc = collect(f, &m, last->floor, last->last_seq, last->clock, &iv);
        if (rc) break;
    }
    if (rc == JR_ENOTFOUND) rc = 0;
    if (!rc && iv.n) qsort(iv.v, iv.n, sizeof *iv.v, cmp_idrec);
    size_t count = 0;
    int64_t pts = 0;
    for (size_t i = 0; !rc && i < iv.n; i++) {
        const idrec *e = &iv.v[i];
        if (i && e->seq == iv.v[i - 1].seq) { /* the same id, written twice (after a restore) */
            const idrec *p = &iv.v[i - 1];
            if (p->len != e->len || memcmp(p->id, e->id, e->len) || p->ts != e->ts ||
                (p->token && e->token && p->token != e->token))
                rc = JR_ECORRUPT; /* (a copy without a token is in a version 1 mark; the one
                                     with it sorts first and was taken) */
            continue;
        }
        if ((count == 0 && e->seq != last->floor) || e->ts < pts ||
            jr__dedup_find(&f->dedup, e->id, e->len)) {
            rc = JR_ECORRUPT;
            break;
        }
        jr__dedup_entry *d;
        rc = jr__dedup_prepare(&f->dedup, e->id, e->len, &d);
        if (rc) break;
        jr__dedup_commit(&f->dedup, d, e->seq, e->ts, e->token);
        pts = e->ts;
        count++;
    }
    if (!rc && count != last->count) rc = JR_ECORRUPT;
    idvec_free(f->alloc, &iv);
    return rc;
}

int jr__stream_fsm_load_mark(jr__stream_fsm *f)
{
    if (!f->persistent) return 0;
    jr__store_mark_rec rec;
    int rc = jr__store_last_mark(f->store, &rec);
    if (rc == JR_ENOTFOUND) return 0; /* none: the store opened empty, at index 0 */
    if (rc) return rc;
    mark m;
    rc = mark_parse(rec.meta, rec.meta_len, &m);
    jr__stream_cfg *cfg = NULL;
    if (!rc) {
        rc = jr__stream_config_decode(m.cfg, m.cfg_len, f->alloc, &cfg);
        if (rc && rc != JR_ENOMEM) rc = JR_ECORRUPT;
    }
    jr__store_state st;
    jr__store_state_get(f->store, &st);
    if (!rc && (strcmp(cfg->c.name, f->cfg->c.name) != 0 || cfg->c.storage != f->cfg->c.storage ||
                m.last_seq != st.last_seq))
        rc = JR_ECORRUPT;
    uint64_t index = rec.index;
    if (!rc) {
        /* everything borrowed from rec is copied before the store is read again */
        jr__stream_cfg_free(f->cfg);
        f->cfg = cfg;
        cfg = NULL;
        rc = jr__stream_fsm_reserve_id(f, m.last_id_len);
    }
    if (!rc) {
        jr__stream_fsm_set_id(f, m.last_id, m.last_id_len);
        f->clock = m.clock;
        f->last_seq = m.last_seq;
        f->last_ts = m.last_ts;
        f->applied = index;
        rc = rebuild_window(f, &m);
    }
    jr__stream_cfg_free(cfg);
    if (rc) return rc;
    f->marked_seq = f->last_seq;
    /* the store's clock is the stream's (it expires by it when limits change) */
    return jr__store_expire(f->store, f->clock);
}
