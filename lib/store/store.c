/*
 * store.c — the store core shared by the memory and file stores: sequence index, per-subject
 * index, interior-delete ranges, limits, delete and purge, catch-up chunks (store.h, store_int.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store_int.h"
#include "util/alloc.h"
#include "util/invariant.h"
#include "util/subject.h"

/* ---------------------------------------------------------------------------------------------
 * Small helpers
 */

_Static_assert(JR__SUBJECT_MAX <= JR__SREC_SUBJ_MAX, "a valid subject fits a record's subject");

int jr__store_fail(jr__store *s, int code, const char *fmt, ...)
{
    /* most stores never fail: the message buffer comes with the first failure */
    if (!s->err && !(s->err = jr__malloc(s->alloc, JR__STORE_ERR))) return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, JR__STORE_ERR, fmt, ap);
    va_end(ap);
    return code;
}

/* Remembers a write error: the store refuses further writes. */
static int wfail(jr__store *s, int rc)
{
    if (rc == JR_EIO || rc == JR_ENOSPC || rc == JR_ECORRUPT) s->failed = rc;
    return rc;
}

/* The entry of live message seq, or NULL. */
static inline jr__ent *ent(const jr__store *s, uint64_t seq)
{
    return jr__seqidx_find(&s->idx, seq);
}

static inline uint64_t first_seq(const jr__store *s)
{
    const jr__ent *e = jr__seqidx_first(&s->idx);
    return e ? e->seq : s->last_seq + 1;
}

#if JR__INVARIANTS_ON
/* store_int.h's invariants after a change (not while loading, which replays records in an order
 * that passes through other states): the message count is the index's, subject sj's chain ends
 * where its first and last say; a small store (at most 128 messages and 64 ranges) is checked
 * whole: bytes, per-block and per-subject counts, every chain, and the deleted ranges. */
static void store_check(const jr__store *s, uint32_t sj)
{
    if (s->loading) return;
    JR__INVARIANT(s->msgs == s->idx.count);
    const jr__ent *last = jr__seqidx_last(&s->idx);
    JR__INVARIANT(!last || last->seq <= s->last_seq);
    if (sj && s->subjects.v[sj].name) {
        const jr__subj *x = jr__subjidx_get(&s->subjects, sj);
        const jr__ent *f = ent(s, x->first), *l = ent(s, x->last);
        JR__INVARIANT(x->count && f && l && f->subj == sj && l->subj == sj);
        JR__INVARIANT(f->prev == 0 && l->next == 0 && (x->count > 1 || f == l));
    }
    if (s->msgs > 128 || s->nranges > 64) return;
    uint64_t bytes = 0, n = 0;
    jr__seqcur c;
    for (const jr__ent *e = jr__seqidx_ceil(&s->idx, 0, &c); e; e = jr__seqidx_next(&s->idx, &c)) {
        bytes += e->len;
        n++;
        const jr__subj *x = jr__subjidx_get(&s->subjects, e->subj);
        JR__INVARIANT(x->name && x->first <= e->seq && e->seq <= x->last);
        JR__INVARIANT(e->prev ? ent(s, e->prev)->next == e->seq : x->first == e->seq);
        JR__INVARIANT(e->next ? ent(s, e->next)->prev == e->seq : x->last == e->seq);
    }
    JR__INVARIANT(n == s->msgs && bytes == s->bytes);
    for (size_t i = 0; i < s->nblks; i++) {
        uint64_t live = 0, lb = 0;
        for (const jr__ent *e = jr__seqidx_ceil(&s->idx, 0, &c); e;
             e = jr__seqidx_next(&s->idx, &c))
            if (e->blk == s->blks[i].id) live++, lb += e->len;
        JR__INVARIANT(live == s->blks[i].live && lb == s->blks[i].live_bytes);
    }
    uint64_t deleted = 0, lo = first_seq(s);
    for (size_t i = 0; i < s->nranges; i++) {
        const jr__seq_range *r = &s->ranges[i];
        JR__INVARIANT(lo < r->lo && r->lo <= r->hi && r->hi <= s->last_seq);
        JR__INVARIANT(!ent(s, r->lo) && !ent(s, r->hi));
        deleted += r->hi - r->lo + 1;
        lo = r->hi + 1; /* merged: the next range starts after a live seq */
    }
    JR__INVARIANT(deleted == s->ndeleted);
    if (s->msgs) JR__INVARIANT(s->msgs + deleted == s->last_seq - first_seq(s) + 1);
}
#define STORE_CHECK(s, sj) store_check(s, sj)
#else
#define STORE_CHECK(s, sj) ((void)0)
#endif

int jr__store_live(const jr__store *s, uint64_t seq)
{
    return ent(s, seq) != NULL;
}

int jr__store_blk_add(jr__store *s, uint32_t id)
{
    if (s->nblks == s->bcap) {
        size_t ncap = s->bcap ? s->bcap * 2 : 1; /* most streams have one block */
        jr__blk *v = jr__realloc(s->alloc, s->blks, ncap * sizeof *v);
        if (!v) return JR_ENOMEM;
        s->blks = v;
        s->bcap = ncap;
    }
    jr__blk *b = &s->blks[s->nblks++];
    memset(b, 0, sizeof *b);
    b->id = id;
    b->tomb_lo = UINT64_MAX;
    return 0;
}

size_t jr__store_blk_find(const jr__store *s, uint32_t id)
{
    size_t lo = 0, hi = s->nblks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->blks[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nblks && s->blks[lo].id == id ? lo : SIZE_MAX;
}

/* Interior-delete ranges ------------------------------------------------------------------- */

/* Adds [lo, hi], which must not overlap an existing range (the seqs were live or new). */
static int ranges_add(jr__store *s, uint64_t lo, uint64_t hi)
{
    /* i: the first range that ends at or after lo - 1 */
    size_t a = 0, b = s->nranges;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (s->ranges[m].hi + 1 < lo)
            a = m + 1;
        else
            b = m;
    }
    size_t i = a;
    s->ndeleted += hi - lo + 1;
    int left = i < s->nranges && s->ranges[i].hi + 1 == lo;
    size_t r = left ? i + 1 : i; /* candidate range starting at hi + 1 */
    int right = r < s->nranges && s->ranges[r].lo == hi + 1;
    if (left && right) {
        s->ranges[i].hi = s->ranges[r].hi;
        memmove(&s->ranges[r], &s->ranges[r + 1], (s->nranges - r - 1) * sizeof *s->ranges);
        s->nranges--;
        return 0;
    }
    if (left) {
        s->ranges[i].hi = hi;
        return 0;
    }
    if (right) {
        s->ranges[r].lo = lo;
        return 0;
    }
    if (s->nranges == s->rcap) {
        size_t ncap = s->rcap ? s->rcap * 2 : 16;
        jr__seq_range *v = jr__realloc(s->alloc, s->ranges, ncap * sizeof *v);
        if (!v) {
            s->ndeleted -= hi - lo + 1;
            return JR_ENOMEM;
        }
        s->ranges = v;
        s->rcap = ncap;
    }
    memmove(&s->ranges[i + 1], &s->ranges[i], (s->nranges - i) * sizeof *s->ranges);
    s->ranges[i].lo = lo;
    s->ranges[i].hi = hi;
    s->nranges++;
    return 0;
}

/* Drops the parts of ranges below `from`. */
static void ranges_trim(jr__store *s, uint64_t from)
{
    size_t k = 0;
    while (k < s->nranges && s->ranges[k].hi < from) {
        s->ndeleted -= s->ranges[k].hi - s->ranges[k].lo + 1;
        k++;
    }
    if (k) {
        memmove(s->ranges, s->ranges + k, (s->nranges - k) * sizeof *s->ranges);
        s->nranges -= k;
    }
    if (s->nranges && s->ranges[0].lo < from) {
        s->ndeleted -= from - s->ranges[0].lo;
        s->ranges[0].lo = from;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Tombstones
 */

static int write_rec(jr__store *s, const jr__srec *r, uint32_t *blk, uint32_t *off)
{
    size_t len = jr__srec_size(r->subj_len, r->hdr_len, r->data_len);
    uint8_t *p;
    int rc = s->bk->reserve(s, len, &p, blk, off);
    if (rc) return wfail(s, rc);
    jr__srec_encode(p, r);
    rc = s->bk->commit(s, p, len);
    return rc ? wfail(s, rc) : 0;
}

/* Writes tombstone r at the end of the active block and remembers, for its block, the lowest seq
 * it may delete (lo_target: whether it must outlive its block). */
static int put_tomb(jr__store *s, const jr__srec *r, uint64_t lo_target)
{
    uint32_t blk, off;
    int rc = write_rec(s, r, &blk, &off);
    if (rc) return rc;
    size_t i = jr__store_blk_find(s, blk);
    if (i != SIZE_MAX && lo_target < s->blks[i].tomb_lo) s->blks[i].tomb_lo = lo_target;
    return 0;
}

/* Makes "every seq below first_seq is deleted" persistent if it is not yet (front removals are
 * recorded lazily: one record for a run of discard-old removals). */
static int tomb_front(jr__store *s)
{
    uint64_t f = first_seq(s);
    if (!s->bk->persistent || s->loading || f - 1 <= s->front_done) return 0;
    jr__srec r = {.type = JR__SREC_DEL, .seq = s->front_done + 1, .ts = f - 1};
    int rc = put_tomb(s, &r, s->front_done + 1);
    if (!rc) s->front_done = f - 1;
    return rc;
}

/* Writes a tombstone into the active block (file store only). lo_target is the lowest seq it may
 * delete (for carrying it forward when its block is dropped). A front removal not yet recorded
 * is written first: records reach the disk in order, so a later tombstone can never be durable
 * while an earlier removal is not (a crash would otherwise bring back a message that a later,
 * durable, record assumes gone, and nothing would ever remove it again). */
int jr__store_write_tomb(jr__store *s, const jr__srec *r, uint64_t lo_target)
{
    if (!s->bk->persistent || s->loading) return 0;
    int rc = tomb_front(s);
    if (!rc) rc = put_tomb(s, r, lo_target);
    return rc;
}

static int tomb_del(jr__store *s, uint64_t lo, uint64_t hi)
{
    jr__srec r = {.type = JR__SREC_DEL, .seq = lo, .ts = hi};
    return jr__store_write_tomb(s, &r, lo);
}

/* ---------------------------------------------------------------------------------------------
 * Removing one message
 */

/* Removes live message seq. tomb: write a tombstone for it unless it is the front (whose removal
 * is recorded lazily by tomb_front). Drops its block if that became empty. */
static int remove_msg(jr__store *s, uint64_t seq, int tomb)
{
    jr__seqcur c;
    jr__ent *e = jr__seqidx_find_cur(&s->idx, seq, &c);
    uint32_t id = e->subj, blkid = e->blk, len = e->len;
    uint64_t prev = e->prev, next = e->next;
    int front = seq == first_seq(s);
    jr__subj *sj = jr__subjidx_get(&s->subjects, id);

    s->msgs--;
    s->bytes -= len;
    jr__seqidx_remove_at(&s->idx, &c); /* e is gone */

    /* unlink it from its subject's chain */
    if (prev) ent(s, prev)->next = next;
    if (next) ent(s, next)->prev = prev;
    if (--sj->count == 0) {
        jr__subjidx_release(&s->subjects, id);
    } else {
        if (seq == sj->first) sj->first = next;
        if (seq == sj->last) sj->last = prev;
    }

    int rc = 0;
    if (front) {
        ranges_trim(s, first_seq(s));
    } else {
        rc = ranges_add(s, seq, seq);
        if (!rc && tomb) rc = tomb_del(s, seq, seq);
    }

    size_t bi = jr__store_blk_find(s, blkid);
    if (bi != SIZE_MAX) {
        jr__blk *b = &s->blks[bi];
        b->live--;
        b->live_bytes -= len;
        if (b->live && s->bk->compact) (void)s->bk->compact(s, bi);
        if (b->live == 0 && bi + 1 < s->nblks && !s->loading && !s->marked) {
            /* the dropped block may hold the only proof of last_seq: write the front mark */
            int rc2 = tomb_front(s);
            if (!rc2) rc2 = s->bk->drop(s, bi);
            if (rc2) {
                if (!rc) rc = wfail(s, rc2);
            } else {
                memmove(&s->blks[bi], &s->blks[bi + 1], (s->nblks - bi - 1) * sizeof *s->blks);
                s->nblks--;
            }
        }
    }
    if (!rc) STORE_CHECK(s, id);
    return rc;
}

/* Removes the first live message (discard old). */
static int remove_first(jr__store *s)
{
    return remove_msg(s, first_seq(s), 1);
}

static int expired(const jr__store *s, int64_t ts, int64_t now)
{
    return s->lim.max_age_ns && now > ts && (uint64_t)(now - ts) > s->lim.max_age_ns;
}

static int expire_upto(jr__store *s, int64_t now)
{
    int rc = 0;
    while (!rc && s->msgs && expired(s, jr__seqidx_first(&s->idx)->ts, now)) rc = remove_first(s);
    return rc;
}

/* Removes oldest messages while max_msgs / max_bytes are exceeded (discard old only). */
static int enforce_size(jr__store *s)
{
    int rc = 0;
    if (s->lim.discard != JR__DISCARD_OLD) return 0;
    while (!rc && s->msgs &&
           ((s->lim.max_msgs && s->msgs > s->lim.max_msgs) ||
            (s->lim.max_bytes && s->bytes > s->lim.max_bytes)))
        rc = remove_first(s);
    return rc;
}

/* Trims every subject to max_msgs_per_subject (used when limits change and at open). */
static int enforce_per_subject(jr__store *s)
{
    uint64_t max = s->lim.max_msgs_per_subject;
    if (!max) return 0;
    for (uint32_t id = 1; id < s->subjects.n; id++) {
        jr__subj *sj = jr__subjidx_get(&s->subjects, id);
        while (sj->name && sj->count > max) {
            int rc = remove_msg(s, sj->first, 1);
            if (rc) return rc;
        }
    }
    return 0;
}

static int enforce_all(jr__store *s)
{
    int rc = expire_upto(s, s->max_ts);
    if (!rc) rc = enforce_per_subject(s);
    if (!rc) rc = enforce_size(s);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Index insertion (append and replay)
 */

/* Adds a live message entry for seq == last_seq + 1 ... (gaps already filled). */
static int index_msg(jr__store *s, uint64_t seq, int64_t ts, uint32_t id, uint32_t blk,
                     uint32_t off, uint32_t len)
{
    jr__subj *sj = jr__subjidx_get(&s->subjects, id);
    jr__ent e = {.seq = seq,
                 .ts = ts,
                 .prev = sj->count ? sj->last : 0,
                 .next = 0,
                 .blk = blk,
                 .off = off,
                 .len = len,
                 .subj = id};
    int rc = jr__seqidx_push(&s->idx, &e);
    if (rc) return rc;
    if (sj->count == 0)
        sj->first = seq;
    else
        ent(s, sj->last)->next = seq;
    sj->last = seq;
    sj->count++;
    s->msgs++;
    s->bytes += len;
    s->last_seq = seq;
    s->last_ts = ts;
    if (ts > s->max_ts) s->max_ts = ts;
    size_t bi = jr__store_blk_find(s, blk);
    if (bi != SIZE_MAX) {
        jr__blk *b = &s->blks[bi];
        b->live++;
        b->live_bytes += len;
        if (!b->first) b->first = seq;
        b->last = seq;
    }
    STORE_CHECK(s, id);
    return 0;
}

/* Makes seqs last_seq+1 .. upto deleted ones: one range (none if the store is empty: then
 * first_seq simply moves to upto + 1). */
static int index_gap(jr__store *s, uint64_t upto)
{
    if (upto <= s->last_seq) return 0;
    uint64_t lo = s->last_seq + 1;
    if (s->msgs) {
        int rc = ranges_add(s, lo, upto);
        if (rc) return rc;
    }
    s->last_seq = upto;
    s->last_ts = 0;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Replay at open
 */

static int load_del(jr__store *s, uint64_t lo, uint64_t hi)
{
    if (hi > s->last_seq) {
        int rc = index_gap(s, hi);
        if (rc) return rc;
    }
    jr__seqcur c;
    for (const jr__ent *e = jr__seqidx_ceil(&s->idx, lo, &c); e && e->seq <= hi;
         e = jr__seqidx_ceil(&s->idx, lo, &c)) {
        lo = e->seq + 1; /* removal moves entries: look the next one up again */
        int rc = remove_msg(s, e->seq, 0);
        if (rc) return rc;
    }
    return 0;
}

/* Remembers a loaded mark with a key (marked stores), forgetting those the floor excludes. */
static int keep_mark(jr__store *s, const jr__rpos *p, uint64_t floor)
{
    jr__store_loaded *l = s->ld;
    while (l->kept_head < l->nkept && l->kept[l->kept_head].key < floor) l->kept_head++;
    if (l->kept_head == l->nkept) l->kept_head = l->nkept = 0;
    if (p->key == 0 || p->key < floor) return 0;
    if (l->nkept == l->kept_cap) {
        if (l->kept_head) {
            memmove(l->kept, l->kept + l->kept_head, (l->nkept - l->kept_head) * sizeof *l->kept);
            l->nkept -= l->kept_head;
            l->kept_head = 0;
        } else {
            size_t ncap = l->kept_cap ? l->kept_cap * 2 : 64;
            jr__rpos *v = jr__realloc(s->alloc, l->kept, ncap * sizeof *v);
            if (!v) return JR_ENOMEM;
            l->kept = v;
            l->kept_cap = ncap;
        }
    }
    l->kept[l->nkept++] = *p;
    return 0;
}

/* Frees what open learned of the marks (at the next mark, and at close). */
static void loaded_free(jr__store *s)
{
    if (!s->ld) return;
    jr__free(s->alloc, s->ld->kept);
    jr__free(s->alloc, s->ld);
    s->ld = NULL;
}

/* A MARK record at open: it proves last_seq; in a marked store it is (so far) the last mark. */
static int load_mark(jr__store *s, const jr__srec *r, uint32_t blk, uint32_t off, uint32_t len)
{
    int rc = index_gap(s, r->ts);
    if (rc) return rc;
    const uint8_t *h = r->hdr;
    uint64_t key = jr__get_u64(h + 24), floor = jr__get_u64(h + 32);
    size_t bi = jr__store_blk_find(s, blk);
    if (bi != SIZE_MAX && key > s->blks[bi].mark_key) s->blks[bi].mark_key = key;
    s->mark_index = r->seq;
    s->mark_floor = floor;
    if (!s->ld && !(s->ld = jr__calloc(s->alloc, 1, sizeof *s->ld))) return JR_ENOMEM;
    jr__store_loaded *l = s->ld;
    l->mark_pos = (jr__rpos){.blk = blk, .off = off, .len = len, .key = key};
    memset(&l->mark_state, 0, sizeof l->mark_state);
    l->mark_state.last_seq = r->ts;
    l->mark_state.first_seq = jr__get_u64(h);
    l->mark_state.msgs = jr__get_u64(h + 8);
    l->mark_state.bytes = jr__get_u64(h + 16);
    return s->marked ? keep_mark(s, &l->mark_pos, floor) : 0;
}

int jr__store_load(jr__store *s, const jr__srec *r, uint32_t blk, uint32_t off, uint32_t len)
{
    switch (r->type) {
    case JR__SREC_MSG:
    case JR__SREC_ERASED: {
        if (r->seq <= s->last_seq)
            return jr__store_fail(s, JR_ECORRUPT, "seq %llu after %llu", (unsigned long long)r->seq,
                                  (unsigned long long)s->last_seq);
        int rc = index_gap(s, r->seq - 1);
        if (rc) return rc;
        if (r->type == JR__SREC_ERASED) return index_gap(s, r->seq);
        uint32_t id;
        rc = jr__subjidx_intern(&s->subjects, r->subj, r->subj_len, &id);
        if (rc) return rc;
        return index_msg(s, r->seq, (int64_t)r->ts, id, blk, off, len);
    }
    case JR__SREC_DEL: {
        size_t bi = jr__store_blk_find(s, blk);
        if (bi != SIZE_MAX && r->seq < s->blks[bi].tomb_lo) s->blks[bi].tomb_lo = r->seq;
        return load_del(s, r->seq, r->ts);
    }
    case JR__SREC_MARK:
        return load_mark(s, r, blk, off, len);
    case JR__SREC_DELSUBJ: {
        /* its seq was <= last_seq when written: it proves last_seq too */
        int rc0 = index_gap(s, r->seq);
        if (rc0) return rc0;
        uint32_t id = jr__subjidx_find(&s->subjects, r->subj, r->subj_len);
        size_t bi = jr__store_blk_find(s, blk);
        if (!id) return 0;
        jr__subj *sj = jr__subjidx_get(&s->subjects, id);
        if (bi != SIZE_MAX && sj->first < s->blks[bi].tomb_lo) s->blks[bi].tomb_lo = sj->first;
        while (sj->name && sj->count && sj->first <= r->seq) {
            int rc = remove_msg(s, sj->first, 0);
            if (rc) return rc;
        }
        return 0;
    }
    }
    return JR_ECORRUPT;
}

/* ---------------------------------------------------------------------------------------------
 * Open / close
 */

/* Drops every block (but the active one) left without live messages by the replay. */
static int drop_empty(jr__store *s)
{
    if (s->marked) return 0; /* at the next mark */
    for (size_t i = 0; i + 1 < s->nblks;) {
        if (s->blks[i].live) {
            i++;
            continue;
        }
        int rc = tomb_front(s);
        if (!rc) rc = s->bk->drop(s, i);
        if (rc) return rc;
        memmove(&s->blks[i], &s->blks[i + 1], (s->nblks - i - 1) * sizeof *s->blks);
        s->nblks--;
    }
    return 0;
}

/* Marked store after replay: the state is the one the last mark recorded (store.h "Marks"). */
static int check_mark(jr__store *s)
{
    if (!s->ld) {
        if (s->last_seq || s->msgs)
            return jr__store_fail(s, JR_ECORRUPT, "%s: records without a mark", s->name);
        return 0;
    }
    const jr__store_state *m = &s->ld->mark_state;
    if (s->last_seq != m->last_seq || first_seq(s) != m->first_seq || s->msgs != m->msgs ||
        s->bytes != m->bytes)
        return jr__store_fail(s, JR_ECORRUPT,
                              "%s: block %u offset %u: the store replayed to its last mark (index "
                              "%llu) is not the one the mark recorded: last seq %llu/%llu, first "
                              "%llu/%llu, msgs %llu/%llu, bytes %llu/%llu",
                              s->name, s->ld->mark_pos.blk, s->ld->mark_pos.off,
                              (unsigned long long)s->mark_index, (unsigned long long)s->last_seq,
                              (unsigned long long)m->last_seq, (unsigned long long)first_seq(s),
                              (unsigned long long)m->first_seq, (unsigned long long)s->msgs,
                              (unsigned long long)m->msgs, (unsigned long long)s->bytes,
                              (unsigned long long)m->bytes);
    return 0;
}

int jr__store_open(const jr__store_config *cfg, jr__store **out, char *errmsg, size_t errmsg_len)
{
    *out = NULL;
    if (errmsg && errmsg_len) errmsg[0] = 0;
    if (!cfg || !cfg->name || !cfg->name[0]) return JR_EINVAL;
    size_t nl = strlen(cfg->name);
    jr__store *s = jr__calloc(cfg->alloc, 1, sizeof *s + nl + 1);
    if (!s) return JR_ENOMEM;
    s->alloc = cfg->alloc;
    memcpy(s->name, cfg->name, nl + 1);
    s->lim = cfg->limits;
    jr__seqidx_init(&s->idx, cfg->alloc);
    jr__subjidx_init(&s->subjects, cfg->alloc);
    s->marked = cfg->marked && cfg->kind == JR__STORE_FILE;
    int rc = 0;
    if (!rc) {
        s->loading = 1;
        if (cfg->kind == JR__STORE_MEMORY)
            rc = jr__store_mem_open(s, cfg);
        else if (cfg->kind == JR__STORE_FILE)
            rc = jr__store_file_open(s, cfg);
        else
            rc = JR_EINVAL;
        s->loading = 0;
    }
    if (!rc) rc = drop_empty(s);
    if (!rc && s->marked) rc = check_mark(s);
    if (!rc) {
        s->front_done = first_seq(s) - 1;
        s->durable = s->last_seq;
        rc = enforce_all(s);
    }
    if (rc) {
        if (errmsg && errmsg_len) snprintf(errmsg, errmsg_len, "%s", jr__store_errmsg(s));
        if (s->bk) s->bk->close(s);
        s->bk = NULL;
        jr__store_close(s);
        return rc;
    }
    STORE_CHECK(s, 0);
    *out = s;
    return 0;
}

void jr__store_abandon(jr__store *s)
{
    if (!s) return;
    s->failed = JR_ECLOSED;
    jr__store_close(s);
}

int jr__store_close(jr__store *s)
{
    if (!s) return 0;
    int rc = 0;
    if (s->bk) {
        rc = s->failed == JR_ECLOSED ? 0 : jr__store_sync(s);
        s->bk->close(s);
        s->bk = NULL;
    }
    jr__subjidx_free(&s->subjects);
    jr__seqidx_free(&s->idx);
    jr__free(s->alloc, s->ranges);
    jr__free(s->alloc, s->blks);
    loaded_free(s);
    jr__free(s->alloc, s->erases);
    jr__free(s->alloc, s->err);
    jr__free(s->alloc, s);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Append
 */

/* jr__store_append, writing `raw` (a verified record of exactly these fields, raw_len bytes,
 * whose subject the caller validated) as it is when given: its bytes are those the encoding
 * would produce (srecord.h: every byte of a record is determined by its fields and checksum),
 * without encoding and checksumming them again. */
static int append_msg(jr__store *s, uint64_t expect, const char *subject, size_t subject_len,
                      const void *hdr, size_t hdr_len, const void *data, size_t data_len,
                      int64_t ts, uint64_t *seq, const uint8_t *raw, size_t raw_len);

int jr__store_append(jr__store *s, uint64_t expect, const char *subject, size_t subject_len,
                     const void *hdr, size_t hdr_len, const void *data, size_t data_len, int64_t ts,
                     uint64_t *seq)
{
    return append_msg(s, expect, subject, subject_len, hdr, hdr_len, data, data_len, ts, seq, NULL,
                      0);
}

uint64_t jr__store_encoded(const jr__store *s)
{
    return s->encoded;
}

static int append_msg(jr__store *s, uint64_t expect, const char *subject, size_t subject_len,
                      const void *hdr, size_t hdr_len, const void *data, size_t data_len,
                      int64_t ts, uint64_t *seq, const uint8_t *raw, size_t raw_len)
{
    if (s->failed)
        return jr__store_fail(s, s->failed, "store failed earlier: %s", jr_strerror(s->failed));
    if (expect != s->last_seq + 1)
        return jr__store_fail(s, JR__ESTORE_SEQ, "expected seq %llu, store is at %llu",
                              (unsigned long long)expect, (unsigned long long)s->last_seq);
    /* also bounds it: JR__SUBJECT_MAX (a chunk's records were checked by apply_chunk) */
    if (!raw && !jr__subject_valid(subject, subject_len, 0))
        return jr__store_fail(s, JR_EINVAL, "invalid subject");
    if ((hdr_len && !hdr) || (data_len && !data)) return JR_EINVAL;
    if (hdr_len > JR__SREC_MAX || data_len > JR__SREC_MAX ||
        jr__srec_size(subject_len, hdr_len, data_len) > JR__SREC_MAX ||
        (s->lim.max_msg_size && hdr_len + data_len > s->lim.max_msg_size))
        return jr__store_fail(s, JR_EMSGSIZE, "message of %zu bytes exceeds the maximum",
                              hdr_len + data_len);
    size_t rsz = jr__srec_size(subject_len, hdr_len, data_len);
    if (s->lim.max_bytes && rsz > s->lim.max_bytes)
        return jr__store_fail(s, JR_EMSGSIZE, "message of %zu bytes exceeds max_bytes", rsz);

    int64_t now = ts > s->max_ts ? ts : s->max_ts;
    int rc = expire_upto(s, now);
    if (rc) return rc;

    /* per-subject limit: which message (if any) this append replaces */
    uint32_t id = jr__subjidx_find(&s->subjects, subject, subject_len);
    uint64_t replace = 0, freed_bytes = 0;
    if (id && s->lim.max_msgs_per_subject) {
        jr__subj *sj = jr__subjidx_get(&s->subjects, id);
        if (sj->count >= s->lim.max_msgs_per_subject) {
            if (s->lim.discard_new_per_subject)
                return jr__store_fail(s, JR__ESTORE_FULL, "maximum messages per subject exceeded");
            replace = sj->first;
            freed_bytes = ent(s, replace)->len;
        }
    }
    if (s->lim.discard == JR__DISCARD_NEW) {
        uint64_t freed = replace ? 1 : 0;
        if (s->lim.max_msgs && s->msgs + 1 - freed > s->lim.max_msgs)
            return jr__store_fail(s, JR__ESTORE_FULL, "maximum messages exceeded");
        if (s->lim.max_bytes && s->bytes + rsz - freed_bytes > s->lim.max_bytes)
            return jr__store_fail(s, JR__ESTORE_FULL, "maximum bytes exceeded");
    }

    if (!id) {
        rc = jr__subjidx_intern(&s->subjects, subject, subject_len, &id);
        if (rc) return rc;
    }
    uint8_t *p;
    uint32_t blk, off;
    rc = s->bk->reserve(s, rsz, &p, &blk, &off);
    if (rc) goto undo;
    jr__srec r = {.type = JR__SREC_MSG,
                  .seq = expect,
                  .ts = (uint64_t)ts,
                  .subj = subject,
                  .subj_len = subject_len,
                  .hdr = hdr,
                  .hdr_len = hdr_len,
                  .data = data,
                  .data_len = data_len};
    if (raw && raw_len == rsz) {
        memcpy(p, raw, rsz);
    } else {
        jr__srec_encode(p, &r);
        s->encoded++;
    }
    rc = s->bk->commit(s, p, rsz);
    if (rc) goto undo;
    rc = index_msg(s, expect, ts, id, blk, off, (uint32_t)rsz);
    if (rc) return wfail(s, JR_EIO); /* written but not indexed: refuse further writes */
    if (seq) *seq = expect;

    if (s->lim.max_msgs_per_subject) {
        jr__subj *sj = jr__subjidx_get(&s->subjects, id);
        while (!rc && sj->name && sj->count > s->lim.max_msgs_per_subject)
            rc = remove_msg(s, sj->first, 1);
    }
    if (!rc) rc = enforce_size(s);
    return rc;
undo : {
    jr__subj *sj = jr__subjidx_get(&s->subjects, id);
    if (sj->count == 0) jr__subjidx_release(&s->subjects, id);
    return wfail(s, rc);
}
}

int jr__store_skip(jr__store *s, uint64_t upto)
{
    if (s->failed) return s->failed;
    if (upto <= s->last_seq) return 0;
    uint64_t lo = s->last_seq + 1;
    int rc = index_gap(s, upto);
    if (!rc) rc = tomb_del(s, lo, upto);
    if (!rc) STORE_CHECK(s, 0);
    return rc;
}

int jr__store_reset(jr__store *s, uint64_t first)
{
    if (s->failed) return s->failed;
    if (first == 0) return JR_EINVAL;
    jr__purge all = {0};
    int rc = jr__store_purge(s, &all, NULL);
    if (rc) return rc;
    if (first - 1 >= s->last_seq) return jr__store_skip(s, first - 1);
    /* going backwards: only possible when nothing of the old numbering is left behind */
    if (s->bk->persistent)
        return jr__store_fail(s, JR_ENOTSUP, "cannot reset a file store to an earlier seq");
    s->last_seq = first - 1;
    s->nranges = 0;
    s->ndeleted = 0;
    s->durable = s->last_seq;
    STORE_CHECK(s, 0);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Reads
 */

static int fill(jr__store *s, uint64_t seq, const jr__ent *e, jr__store_msg *out)
{
    const uint8_t *p;
    int rc = s->bk->read(s, e->blk, e->off, e->len, &p);
    if (rc) return rc;
    jr__srec r;
    size_t n;
    if (jr__srec_decode(p, e->len, s->bk->persistent, &r, &n) || r.type != JR__SREC_MSG ||
        r.seq != seq || n != e->len)
        return jr__store_fail(s, JR_ECORRUPT,
                              "%s: record of seq %llu in block %u at offset %u "
                              "is corrupt",
                              s->name, (unsigned long long)seq, e->blk, e->off);
    out->seq = seq;
    out->ts = (int64_t)r.ts;
    out->subject = r.subj;
    out->subject_len = r.subj_len;
    out->hdr = r.hdr;
    out->hdr_len = r.hdr_len;
    out->data = r.data;
    out->data_len = r.data_len;
    return 0;
}

int jr__store_get(jr__store *s, uint64_t seq, jr__store_msg *out)
{
    const jr__ent *e = ent(s, seq);
    if (!e) return JR_ENOTFOUND;
    return fill(s, seq, e, out);
}

static int is_all(const char *f, size_t n)
{
    return !f || n == 0 || (n == 1 && f[0] == '>');
}

/* Matching of one subject id against a filter, memoized for runs of the same subject. */
typedef struct matcher {
    const char *f;
    size_t n;
    uint32_t id;
    int res;
} matcher;

static int match_id(const jr__store *s, matcher *m, uint32_t id)
{
    if (id != m->id) {
        const jr__subj *sj = jr__subjidx_get(&s->subjects, id);
        m->id = id;
        m->res = jr__subject_match(m->f, m->n, sj->name, sj->len);
    }
    return m->res;
}

int jr__store_get_last(jr__store *s, const char *f, size_t fn, jr__store_msg *out)
{
    if (s->msgs == 0) return JR_ENOTFOUND;
    int all = is_all(f, fn);
    if (!all && jr__subject_literal(f, fn)) {
        uint32_t id = jr__subjidx_find(&s->subjects, f, fn);
        if (!id) return JR_ENOTFOUND;
        uint64_t q = jr__subjidx_get(&s->subjects, id)->last;
        return fill(s, q, ent(s, q), out);
    }
    /* a wildcard: the live messages from the newest back */
    matcher m = {f, fn, 0, 0};
    jr__seqcur c;
    for (const jr__ent *e = jr__seqidx_floor(&s->idx, s->last_seq, &c); e;
         e = jr__seqidx_prev(&s->idx, &c))
        if (all || match_id(s, &m, e->subj)) return fill(s, e->seq, e, out);
    return JR_ENOTFOUND;
}

/* The first live seq >= from matching the filter, or 0. */
static uint64_t next_seq(const jr__store *s, uint64_t from, const char *f, size_t fn)
{
    jr__seqcur c;
    if (s->msgs == 0 || from > s->last_seq) return 0;
    if (is_all(f, fn)) {
        const jr__ent *e = jr__seqidx_ceil(&s->idx, from, &c);
        return e ? e->seq : 0;
    }
    if (jr__subject_literal(f, fn)) {
        uint32_t id = jr__subjidx_find(&s->subjects, f, fn);
        if (!id) return 0;
        const jr__subj *sj = jr__subjidx_get(&s->subjects, id);
        if (from <= sj->first) return sj->first;
        if (from > sj->last) return 0;
        /* iterating (from = the previous answer + 1): its chain link is the answer */
        const jr__ent *e = ent(s, from - 1);
        if (e && e->subj == id) return e->next;
        for (e = jr__seqidx_ceil(&s->idx, from, &c); e && e->seq <= sj->last;
             e = jr__seqidx_next(&s->idx, &c))
            if (e->subj == id) return e->seq;
        return 0;
    }
    matcher m = {f, fn, 0, 0};
    for (const jr__ent *e = jr__seqidx_ceil(&s->idx, from, &c); e; e = jr__seqidx_next(&s->idx, &c))
        if (match_id(s, &m, e->subj)) return e->seq;
    return 0;
}

int jr__store_next(jr__store *s, uint64_t from, const char *f, size_t fn, jr__store_msg *out)
{
    uint64_t q = next_seq(s, from, f, fn);
    if (!q) return JR_ENOTFOUND;
    return fill(s, q, ent(s, q), out);
}

/* ---------------------------------------------------------------------------------------------
 * Delete, purge, limits
 */

int jr__store_delete(jr__store *s, uint64_t seq, int erase)
{
    if (s->failed) return s->failed;
    const jr__ent *e = ent(s, seq);
    if (!e) return JR_ENOTFOUND;
    if (erase && s->marked) {
        /* a rollback to the last mark may need the bytes: overwrite them after the next one */
        jr__store_erases *w = s->erases;
        if (!w || w->n == w->cap) {
            size_t ncap = w ? w->cap * 2 : 4;
            w = jr__realloc(s->alloc, w, sizeof *w + ncap * sizeof w->v[0]);
            if (!w) return JR_ENOMEM;
            if (!s->erases) w->n = 0;
            w->cap = ncap;
            s->erases = w;
        }
        w->v[w->n++] = (jr__rpos){.blk = e->blk, .off = e->off, .len = e->len};
    } else if (erase) {
        int rc = s->bk->erase(s, e->blk, e->off, e->len);
        if (rc) return wfail(s, rc);
    }
    int rc = remove_msg(s, seq, 1);
    /* a delete is recorded at once, also at the front (only limits remove lazily) */
    if (!rc) rc = tomb_front(s);
    return rc;
}

/* Removes the live messages of subject id with seq <= upto; writes one DELSUBJ tombstone. */
static int purge_subject(jr__store *s, uint32_t id, uint64_t upto, uint64_t *count)
{
    jr__subj *sj = jr__subjidx_get(&s->subjects, id);
    if (sj->first > upto) return 0;
    jr__srec t = {.type = JR__SREC_DELSUBJ, .seq = upto, .subj = sj->name, .subj_len = sj->len};
    uint64_t lo = sj->first;
    /* the tombstone first: it needs the name, which removal of the last message frees */
    int rc = jr__store_write_tomb(s, &t, lo);
    while (!rc && sj->name && sj->count && sj->first <= upto) {
        rc = remove_msg(s, sj->first, 0);
        (*count)++;
    }
    return rc;
}

int jr__store_purge(jr__store *s, const jr__purge *p, uint64_t *purged)
{
    uint64_t count = 0;
    if (purged) *purged = 0;
    if (s->failed) return s->failed;
    if (p->seq && p->keep) return jr__store_fail(s, JR_EINVAL, "purge: seq and keep together");
    int all = is_all(p->filter, p->filter_len);
    if (!all && !jr__subject_valid(p->filter, p->filter_len, 1))
        return jr__store_fail(s, JR_EINVAL, "purge: invalid subject filter");
    if (s->msgs == 0) return 0;

    /* upto: the highest seq that may be removed */
    uint64_t upto = s->last_seq;
    if (p->seq) {
        if (p->seq <= first_seq(s)) return 0;
        upto = p->seq - 1 < s->last_seq ? p->seq - 1 : s->last_seq;
    } else if (p->keep) {
        uint64_t seen = 0, kept = 0;
        if (!all && jr__subject_literal(p->filter, p->filter_len)) {
            /* the subject's chain from its newest back */
            uint32_t id = jr__subjidx_find(&s->subjects, p->filter, p->filter_len);
            if (!id) return 0;
            for (uint64_t q = jr__subjidx_get(&s->subjects, id)->last; q; q = ent(s, q)->prev)
                if (++seen == p->keep) {
                    kept = q;
                    break;
                }
        } else {
            matcher m = {p->filter, p->filter_len, 0, 0};
            jr__seqcur c;
            for (const jr__ent *e = jr__seqidx_floor(&s->idx, s->last_seq, &c); e;
                 e = jr__seqidx_prev(&s->idx, &c))
                if ((all || match_id(s, &m, e->subj)) && ++seen == p->keep) {
                    kept = e->seq;
                    break;
                }
        }
        if (!kept) return 0;
        upto = kept - 1;
    }

    int rc = 0;
    if (all) {
        if (upto >= first_seq(s)) {
            /* DEL [1, upto]: also covers front removals not yet tombstoned */
            rc = tomb_del(s, 1, upto);
            if (!rc && upto > s->front_done && s->bk->persistent) s->front_done = upto;
            while (!rc && s->msgs && first_seq(s) <= upto) {
                rc = remove_msg(s, first_seq(s), 0);
                count++;
            }
        }
    } else if (jr__subject_literal(p->filter, p->filter_len)) {
        uint32_t id = jr__subjidx_find(&s->subjects, p->filter, p->filter_len);
        if (id) rc = purge_subject(s, id, upto, &count);
    } else {
        for (uint32_t id = 1; !rc && id < s->subjects.n; id++) {
            jr__subj *sj = jr__subjidx_get(&s->subjects, id);
            if (sj->name && jr__subject_match(p->filter, p->filter_len, sj->name, sj->len))
                rc = purge_subject(s, id, upto, &count);
        }
    }
    if (purged) *purged = count;
    return rc;
}

int jr__store_expire(jr__store *s, int64_t now)
{
    if (s->failed) return s->failed;
    if (now > s->max_ts) s->max_ts = now;
    return expire_upto(s, now);
}

int jr__store_set_limits(jr__store *s, const jr__store_limits *l)
{
    if (s->failed) return s->failed;
    s->lim = *l;
    return enforce_all(s);
}

/* ---------------------------------------------------------------------------------------------
 * State, durability
 */

void jr__store_state_get(const jr__store *s, jr__store_state *o)
{
    memset(o, 0, sizeof *o);
    o->msgs = s->msgs;
    o->bytes = s->bytes;
    o->first_seq = first_seq(s);
    o->first_ts = s->msgs ? jr__seqidx_first(&s->idx)->ts : 0;
    o->last_seq = s->last_seq;
    o->last_ts = s->last_ts;
    o->num_subjects = s->subjects.live;
    o->num_deleted = s->msgs ? s->ndeleted : 0;
}

/* Messages of subject x at or above from. */
static uint64_t subject_from(const jr__store *s, const jr__subj *x, uint64_t from)
{
    if (from <= x->first) return x->count;
    if (from > x->last) return 0;
    uint64_t n = 0;
    for (const jr__ent *e = jr__seqidx_find(&s->idx, x->last); e && e->seq >= from;
         e = e->prev ? jr__seqidx_find(&s->idx, e->prev) : NULL)
        n++;
    return n;
}

uint64_t jr__store_num_pending(const jr__store *s, uint64_t from, const char *filter,
                               size_t filter_len)
{
    if (!s->msgs || from > s->last_seq) return 0;
    if (from < first_seq(s)) from = first_seq(s);
    if (!filter || !filter_len || (filter_len == 1 && filter[0] == '>')) {
        uint64_t n = s->last_seq - from + 1;
        for (size_t i = 0; i < s->nranges; i++) {
            const jr__seq_range *r = &s->ranges[i];
            if (r->hi < from) continue;
            n -= r->hi - (r->lo > from ? r->lo : from) + 1;
        }
        return n;
    }
    if (jr__subject_literal(filter, filter_len)) {
        uint32_t id = jr__subjidx_find(&s->subjects, filter, filter_len);
        return id ? subject_from(s, jr__subjidx_get(&s->subjects, id), from) : 0;
    }
    /* A wildcard that every subject with live messages matches (a consumer filtered on the
     * stream's own subjects) counts what the unfiltered count does: that costs one pass over
     * the subjects, where subject_from walks every pending message of each. */
    int all = 1;
    for (uint32_t id = 1; all && id < s->subjects.n; id++) {
        const jr__subj *x = jr__subjidx_get(&s->subjects, id);
        if (x->name && x->count && !jr__subject_match(filter, filter_len, x->name, x->len)) all = 0;
    }
    if (all) return jr__store_num_pending(s, from, NULL, 0);
    uint64_t n = 0;
    for (uint32_t id = 1; id < s->subjects.n; id++) {
        const jr__subj *x = jr__subjidx_get(&s->subjects, id);
        if (x->name && jr__subject_match(filter, filter_len, x->name, x->len))
            n += subject_from(s, x, from);
    }
    return n;
}

uint64_t jr__store_subject_count(const jr__store *s, const char *subject, size_t len)
{
    uint32_t id = jr__subjidx_find(&s->subjects, subject, len);
    return id ? jr__subjidx_get(&s->subjects, id)->count : 0;
}

int jr__store_subjects_each(const jr__store *s,
                            int (*fn)(void *arg, const char *subject, size_t len, uint64_t count),
                            void *arg)
{
    for (uint32_t id = 1; id < s->subjects.n; id++) {
        const jr__subj *sj = jr__subjidx_get(&s->subjects, id);
        if (!sj->name || !sj->count) continue;
        int rc = fn(arg, sj->name, sj->len, sj->count);
        if (rc) return rc;
    }
    return 0;
}

const jr__seq_range *jr__store_deleted(const jr__store *s, size_t *n)
{
    *n = s->msgs ? s->nranges : 0;
    return s->ranges;
}

int jr__store_sync(jr__store *s)
{
    if (s->failed) return s->failed;
    int rc = tomb_front(s);
    if (!rc) rc = s->bk->flush(s, 1);
    if (rc) return wfail(s, rc);
    if (!s->marked) s->durable = s->last_seq; /* marked: a reopen goes back to the last mark */
    return 0;
}

/* Gives back the capacity of the seq index and the delete ranges beyond twice what they hold
 * (a stream that once held many messages keeps none of that), and the subject index if no
 * subject is left. A failed realloc keeps the old. */
static void shrink_index(jr__store *s)
{
    jr__subjidx_trim(&s->subjects);
    jr__seqidx_shrink(&s->idx);
    if (!s->nranges) {
        jr__free(s->alloc, s->ranges);
        s->ranges = NULL;
        s->rcap = 0;
    }
    size_t want = 16;
    while (want < s->nranges) want *= 2;
    if (s->rcap > 2 * want) {
        jr__seq_range *v = jr__realloc(s->alloc, s->ranges, want * sizeof *v);
        if (v) {
            s->ranges = v;
            s->rcap = want;
        }
    }
}

int jr__store_trim(jr__store *s)
{
    if (s->failed) return 0;
    shrink_index(s);
    return s->bk->trim ? s->bk->trim(s) : 0;
}

uint64_t jr__store_durable_seq(const jr__store *s)
{
    return s->bk->persistent ? s->durable : s->last_seq;
}

int jr__store_persistent(const jr__store *s)
{
    return s->bk->persistent;
}

const char *jr__store_errmsg(const jr__store *s)
{
    return s->err ? s->err : "";
}

/* ---------------------------------------------------------------------------------------------
 * Marks (store.h, "Marks")
 */

int jr__store_mark(jr__store *s, uint64_t index, const void *meta, size_t meta_len, uint64_t key,
                   uint64_t floor)
{
    if (s->failed) return s->failed;
    if (meta_len > JR__STORE_MARK_META_MAX || (meta_len && !meta)) return JR_EINVAL;
    if (!s->bk->persistent) {
        s->mark_index = index;
        s->mark_floor = floor;
        return 0;
    }
    if (!s->marked) return jr__store_fail(s, JR_EMISUSE, "marks need a store opened marked");
    /* what was loaded at open is not kept up to date from here on */
    loaded_free(s);

    /* 1. the front removal, and the tombstones of the blocks this mark frees that other blocks
     * still need, go before the mark */
    int rc = tomb_front(s);
    size_t ndoomed = 0;
    for (size_t i = 0; i < s->nblks; i++) {
        jr__blk *b = &s->blks[i];
        b->doomed = i + 1 < s->nblks && b->live == 0 && (b->mark_key == 0 || b->mark_key < floor);
        ndoomed += (size_t)b->doomed;
    }
    for (size_t i = 0; !rc && ndoomed && i < s->nblks; i++)
        if (s->blks[i].doomed) rc = s->bk->carry(s, i);
    if (rc) return wfail(s, rc);

    /* 2. the mark, made durable with everything before it */
    uint8_t h[JR__SREC_MARK_HDR];
    jr__put_u64(h, first_seq(s));
    jr__put_u64(h + 8, s->msgs);
    jr__put_u64(h + 16, s->bytes);
    jr__put_u64(h + 24, key);
    jr__put_u64(h + 32, floor);
    jr__srec r = {.type = JR__SREC_MARK,
                  .seq = index,
                  .ts = s->last_seq,
                  .hdr = h,
                  .hdr_len = sizeof h,
                  .data = meta,
                  .data_len = meta_len};
    uint32_t blk, off;
    rc = write_rec(s, &r, &blk, &off);
    if (rc) return rc;
    size_t bi = jr__store_blk_find(s, blk);
    if (bi != SIZE_MAX && key > s->blks[bi].mark_key) s->blks[bi].mark_key = key;
    rc = s->bk->flush(s, 1);
    if (rc) return wfail(s, rc);
    s->mark_index = index;
    s->mark_floor = floor;
    s->durable = s->last_seq;

    /* 3. what the mark covers: no rollback can need it any more */
    for (size_t i = 0; !rc && ndoomed && i < s->nblks;) {
        if (!s->blks[i].doomed) {
            i++;
            continue;
        }
        rc = s->bk->unlink(s, i);
        if (rc) break;
        memmove(&s->blks[i], &s->blks[i + 1], (s->nblks - i - 1) * sizeof *s->blks);
        s->nblks--;
        ndoomed--;
    }
    for (size_t i = 0; !rc && s->erases && i < s->erases->n; i++) {
        const jr__rpos *p = &s->erases->v[i];
        if (jr__store_blk_find(s, p->blk) != SIZE_MAX) rc = s->bk->erase(s, p->blk, p->off, p->len);
    }
    jr__free(s->alloc, s->erases); /* erasures are rare: the list is made again when needed */
    s->erases = NULL;
    return rc ? wfail(s, rc) : 0;
}

uint64_t jr__store_mark_index(const jr__store *s)
{
    return s->mark_index;
}

/* Reads the mark at p into out. */
static int read_mark(jr__store *s, const jr__rpos *p, jr__store_mark_rec *out)
{
    const uint8_t *b;
    int rc = s->bk->read(s, p->blk, p->off, p->len, &b);
    if (rc) return rc;
    jr__srec r;
    size_t n;
    if (jr__srec_decode(b, p->len, 1, &r, &n) || r.type != JR__SREC_MARK || n != p->len)
        return jr__store_fail(s, JR_ECORRUPT, "%s: mark in block %u at offset %u is corrupt",
                              s->name, p->blk, p->off);
    out->index = r.seq;
    out->key = jr__get_u64(r.hdr + 24);
    out->floor = jr__get_u64(r.hdr + 32);
    out->meta = r.data;
    out->meta_len = r.data_len;
    return 0;
}

int jr__store_last_mark(jr__store *s, jr__store_mark_rec *out)
{
    if (!s->ld) return JR_ENOTFOUND;
    return read_mark(s, &s->ld->mark_pos, out);
}

int jr__store_marks_next(jr__store *s, size_t *cursor, jr__store_mark_rec *out)
{
    const jr__store_loaded *l = s->ld;
    if (!l) return JR_ENOTFOUND;
    for (;;) {
        size_t i = l->kept_head + *cursor;
        if (i >= l->nkept) return JR_ENOTFOUND;
        (*cursor)++;
        if (l->kept[i].key >= s->mark_floor) return read_mark(s, &l->kept[i], out);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Catch-up chunks
 */

int jr__store_read_chunk(jr__store *s, uint64_t from, size_t max_bytes, jr__buf *out,
                         uint64_t *next)
{
    size_t start = out->len;
    uint64_t q = next_seq(s, from, NULL, 0);
    uint64_t single = UINT64_MAX; /* a block read_run refused: its records are read one by one */
    while (q) {
        const jr__ent *e = ent(s, q);
        if (out->len > start && out->len - start + e->len > max_bytes) {
            *next = q;
            return 0;
        }
        /* the live records after it that follow it in its block, within the chunk's bound: one
         * read for them all where the backend can (read_run) */
        uint64_t after = next_seq(s, q + 1, NULL, 0);
        size_t run = e->len;
        while (s->bk->read_run && e->blk != single && after) {
            const jr__ent *x = ent(s, after);
            if (x->blk != e->blk || x->off != e->off + run ||
                out->len - start + run + x->len > max_bytes)
                break;
            run += x->len;
            after = next_seq(s, after + 1, NULL, 0);
        }
        const uint8_t *p;
        int rc = run > e->len ? s->bk->read_run(s, e->blk, e->off, (uint32_t)run, &p) : JR_ENOTSUP;
        if (rc == JR_ENOTSUP) { /* this record alone */
            if (run > e->len) single = e->blk;
            run = e->len;
            after = next_seq(s, q + 1, NULL, 0);
            rc = s->bk->read(s, e->blk, e->off, e->len, &p);
        }
        if (rc) return rc;
        jr__buf_put(out, p, run);
        if (out->err) return out->err;
        q = after;
    }
    *next = s->last_seq + 1;
    return 0;
}

int jr__store_apply_chunk(jr__store *s, const void *chunk, size_t len)
{
    const uint8_t *p = chunk;
    uint64_t prev = 0;
    jr__srec r;
    size_t n;
    for (size_t off = 0; off < len; off += n) {
        if (jr__srec_decode(p + off, len - off, 1, &r, &n) || r.type != JR__SREC_MSG ||
            r.seq <= prev || !jr__subject_valid(r.subj, r.subj_len, 0))
            return jr__store_fail(s, JR_ECORRUPT, "catch-up chunk: bad record at offset %zu", off);
        prev = r.seq;
    }
    for (size_t off = 0; off < len; off += n) {
        jr__srec_decode(p + off, len - off, 0, &r, &n);
        if (r.seq <= s->last_seq) continue;
        int rc = jr__store_skip(s, r.seq - 1);
        if (!rc) /* verified above: written as it came */
            rc = append_msg(s, r.seq, r.subj, r.subj_len, r.hdr, r.hdr_len, r.data, r.data_len,
                            (int64_t)r.ts, NULL, p + off, n);
        if (rc) return rc;
    }
    return 0;
}
