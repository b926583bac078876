/*
 * fsm_snapshot.c — the stream state machine's snapshot (its metadata, not its messages), its
 * restore by reconciling the local store, and catch-up chunks (fsm.h).
 *
 * Snapshot, version 1 (integers little-endian; varint = canonical unsigned LEB128):
 *   version:u8 index:u64 clock:u64 last_seq:varint
 *   msgs:varint bytes:varint first_seq:varint num_subjects:varint num_deleted:varint
 *   first_ts:u64 last_ts:u64 (of the last stored message, as the fsm knows it)
 *   nranges:varint  nranges * (gap:varint len:varint)   deleted ranges: lo = prev + gap (prev
 *                                                        starts at first_seq, then hi + 1),
 *                                                        hi = lo + len
 *   last_msg_id:bytes  config:bytes (config.h encoding)
 *   nids:varint  nids * (id:bytes seq:varint dts:varint)  dedup window, oldest first; ts = prev
 *                                                        ts + dts (prev starts at 0)
 *   xxh3:u64 (of every byte before it)
 * The decoder checks the checksum, then every field and the invariants between them (ranges
 * sorted, disjoint, non-adjacent, inside (first_seq, last_seq]; counts consistent; dedup seqs
 * within the stream and timestamps ordered and not after the clock; ids unique), and rejects
 * trailing bytes.
 */
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
    if (f->restoring || f->last_seq < f->horizon) return JR_EBUSY;
    int rc = jr__store_sync(f->store);
    if (rc) return jr__stream_fsm_fail(f, rc);
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
    if (p[0] != JR__STREAM_SNAP_VERSION) return JR_EVERSION;
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
        if (r.err || idlen == 0 || seq == 0 || seq > s->last_seq || dts > (uint64_t)(s->clock - ts))
            return JR_ECORRUPT;
        ts += (int64_t)dts;
        if (jr__dedup_find(&s->dedup, id, idlen)) return JR_ECORRUPT;
        jr__dedup_entry *tok;
        rc = jr__dedup_prepare(&s->dedup, id, idlen, &tok);
        if (rc) return rc;
        jr__dedup_commit(&s->dedup, tok, seq, ts);
    }
    if (r.err || jr__rd_left(&r)) return JR_ECORRUPT;
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

static void install(jr__stream_fsm *f, snap *s, uint64_t horizon)
{
    jr__stream_cfg_free(f->cfg);
    f->cfg = s->cfg;
    s->cfg = NULL;
    jr__dedup_free(&f->dedup);
    f->dedup = s->dedup;
    jr__dedup_init(&s->dedup, f->alloc, f->dedup_max);
    f->last_msg_id_len = s->last_id_len;
    if (s->last_id_len) memcpy(f->last_msg_id, s->last_id, s->last_id_len);
    f->clock = s->clock;
    f->last_seq = s->last_seq;
    f->last_ts = s->st.last_ts;
    f->applied = s->index;
    f->horizon = horizon > s->last_seq ? horizon : 0;
    f->restoring = 0;
    f->guesses = 0;
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
    if (rc) {
        snap_free(f->alloc, &s);
        return rc;
    }

    /* Limits are suspended while the store is being reconciled and filled: every message the
     * snapshot has must be kept, whatever the old config said. */
    jr__store_limits none;
    memset(&none, 0, sizeof none);
    rc = jr__store_set_limits(f->store, &none);
    jr__store_state l;
    jr__store_state_get(f->store, &l);
    if (!rc) rc = drop_dead(f, &s, l.last_seq < s.last_seq ? l.last_seq : s.last_seq);
    if (!rc && l.last_seq < s.last_seq) {
        uint64_t q = next_live(&s, l.last_seq);
        if (q) {
            f->restoring = 1;
            *need_from = q;
            snap_free(f->alloc, &s);
            return 0;
        }
        rc = jr__store_skip(f->store, s.last_seq);
    }
    if (rc) {
        snap_free(f->alloc, &s);
        return jr__stream_fsm_fail(f, rc);
    }
    install(f, &s, l.last_seq);
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
