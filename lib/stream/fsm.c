/*
 * fsm.c — the stream state machine: open/close, applying ops, reading (fsm.h). Snapshots and
 * catch-up are in fsm_snapshot.c.
 */
#include <stdio.h>
#include <string.h>

#include "util/subject.h"
#include "stream/fsm.h"
#include "stream/headers.h"
#include "util/alloc.h"
#include "util/checksum.h"

/* The store counts a message's bytes as its record size: subject + headers + payload + this
 * (store.h, "Limits"). */
#define REC_OVERHEAD 36u

/* ---------------------------------------------------------------------------------------------
 * Open / close
 */

void jr__stream_fsm_limits(const jr_stream_config *c, jr__store_limits *l)
{
    memset(l, 0, sizeof *l);
    l->max_msgs = c->max_msgs > 0 ? (uint64_t)c->max_msgs : 0;
    l->max_bytes = c->max_bytes > 0 ? (uint64_t)c->max_bytes : 0;
    l->max_age_ns = c->max_age_ns;
    l->max_msgs_per_subject = c->max_msgs_per_subject > 0 ? (uint64_t)c->max_msgs_per_subject : 0;
    l->max_msg_size = c->max_msg_size > 0 ? (uint64_t)c->max_msg_size : 0;
    l->discard = c->discard == JR_DISCARD_NEW ? JR__DISCARD_NEW : JR__DISCARD_OLD;
    l->discard_new_per_subject = 0;
}

int jr__stream_fsm_reserve_id(jr__stream_fsm *f, size_t n)
{
    if (n <= f->last_msg_id_cap) return 0;
    char *p = jr__realloc(f->alloc, f->last_msg_id, n);
    if (!p) return JR_ENOMEM;
    f->last_msg_id = p;
    f->last_msg_id_cap = n;
    return 0;
}

void jr__stream_fsm_set_id(jr__stream_fsm *f, const char *id, size_t len)
{
    f->last_msg_id_len = len;
    if (len) memcpy(f->last_msg_id, id, len);
}

int jr__stream_fsm_fail(jr__stream_fsm *f, int rc)
{
    if (!f->failed) f->failed = rc;
    return rc;
}

int jr__stream_fsm_open(const jr__stream_fsm_config *cfg, jr__stream_fsm **out, char *errmsg,
                        size_t errmsg_len)
{
    *out = NULL;
    if (errmsg && errmsg_len) errmsg[0] = 0;
    if (!cfg || !cfg->stream) return JR_EINVAL;
    jr__stream_fsm *f = jr__calloc(cfg->alloc, 1, sizeof *f);
    if (!f) return JR_ENOMEM;
    f->alloc = cfg->alloc;
    f->dedup_max = cfg->dedup_max;
    jr__dedup_init(&f->dedup, cfg->alloc, cfg->dedup_max);
    int rc = jr__stream_cfg_new(cfg->stream, cfg->alloc, &f->cfg, errmsg, errmsg_len);
    if (rc) {
        jr__free(f->alloc, f);
        return rc;
    }
    const jr_stream_config *c = &f->cfg->c;
    jr__store_config sc;
    memset(&sc, 0, sizeof sc);
    sc.kind = c->storage == JR_STORAGE_MEMORY ? JR__STORE_MEMORY : JR__STORE_FILE;
    sc.name = c->name;
    sc.vfs = cfg->vfs;
    sc.dir = cfg->dir;
    sc.alloc = cfg->alloc;
    /* No limits at open: a restarted store must not be trimmed by a config that is not yet the
     * one in force at its applied index (set by restore, or by the first entry applied). */
    memset(&sc.limits, 0, sizeof sc.limits);
    sc.block_bytes = cfg->block_bytes;
    sc.compress = c->compression == JR_COMPRESS_LZ4;
    sc.master_key = cfg->master_key;
    sc.marked = 1; /* exact restart (fsm.h "Restart") */
    if (sc.kind == JR__STORE_FILE && (!sc.vfs || !sc.dir)) {
        if (errmsg && errmsg_len) snprintf(errmsg, errmsg_len, "file storage needs vfs and dir");
        rc = JR_EINVAL;
    } else {
        rc = jr__store_open(&sc, &f->store, errmsg, errmsg_len);
    }
    if (rc) {
        jr__stream_cfg_free(f->cfg);
        jr__dedup_free(&f->dedup);
        jr__free(f->alloc, f);
        return rc;
    }
    f->persistent = jr__store_persistent(f->store);
    f->limits_pending = 1;
    /* a restart: the state of the store's last durable mark (the store is exactly there) */
    rc = jr__stream_fsm_load_mark(f);
    if (rc) {
        if (errmsg && errmsg_len)
            snprintf(errmsg, errmsg_len, "%s",
                     jr__store_errmsg(f->store)[0] ? jr__store_errmsg(f->store)
                                                   : "the store's last mark does not decode");
        jr__store_abandon(f->store);
        jr__dedup_free(&f->dedup);
        jr__stream_cfg_free(f->cfg);
        jr__free(f->alloc, f->last_msg_id);
        jr__free(f->alloc, f);
        return rc;
    }
    *out = f;
    return 0;
}

static void destroy(jr__stream_fsm *f)
{
    jr__dedup_free(&f->dedup);
    jr__stream_cfg_free(f->cfg);
    jr__free(f->alloc, f->last_msg_id);
    jr__free(f->alloc, f);
}

int jr__stream_fsm_close(jr__stream_fsm *f)
{
    if (!f) return 0;
    int rc = f->failed ? 0 : jr__stream_fsm_sync(f);
    int rc2 = jr__store_close(f->store);
    destroy(f);
    return rc ? rc : rc2;
}

void jr__stream_fsm_abandon(jr__stream_fsm *f)
{
    if (!f) return;
    jr__store_abandon(f->store);
    destroy(f);
}

/* ---------------------------------------------------------------------------------------------
 * Helpers
 */

/* Advances the stream clock to ts: expires old messages and msg ids. */
static int advance(jr__stream_fsm *f, int64_t ts)
{
    if (ts <= f->clock) return 0;
    f->clock = ts;
    jr__dedup_expire(&f->dedup, f->clock, f->cfg->c.duplicate_window_ns);
    return jr__store_expire(f->store, f->clock);
}

static int captured(const jr_stream_config *c, const char *s, size_t n)
{
    for (size_t i = 0; i < c->nsubjects; i++)
        if (jr__subject_match(c->subjects[i], strlen(c->subjects[i]), s, n)) return 1;
    return 0;
}

static int same(const void *a, size_t an, const void *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

/* The seq of the newest live message on a literal subject (0 if none); a store read error is a
 * local failure. */
static int subject_last(jr__stream_fsm *f, const char *s, size_t n, uint64_t *seq)
{
    jr__store_msg m;
    int rc = jr__store_get_last(f->store, s, n, &m);
    *seq = rc ? 0 : m.seq;
    return rc == JR_ENOTFOUND ? 0 : rc;
}

static int purge_below(jr__stream_fsm *f, const char *filter, size_t flen, uint64_t seq,
                       uint64_t *purged)
{
    jr__purge p = {.filter = filter, .filter_len = flen, .seq = seq, .keep = 0};
    return jr__store_purge(f->store, &p, purged);
}

/* ---------------------------------------------------------------------------------------------
 * Publish
 */

/* Checks that depend only on the op, the config and the fsm's own state (not on the store's
 * messages). 0 to go on; 1 when res is the answer: a refusal (res->status), or the msg_id is in
 * the window (res->seq its seq). */
static int check_publish(jr__stream_fsm *f, const jr__op_publish *p, jr__stream_result *res)
{
    const jr_stream_config *c = &f->cfg->c;
    const jr__pub_opts *o = &p->opts;
    if (c->sealed) {
        res->status = JR_ESEALED;
    } else if (!jr__subject_valid(p->subject, p->subject_len, 0) ||
               jr__headers_validate(p->hdr, p->hdr_len)) {
        res->status = JR_EINVAL;
    } else if (!captured(c, p->subject, p->subject_len)) {
        res->status = JR_ENOSTREAM;
    } else if ((c->max_msg_size >= 0 && p->hdr_len + p->data_len > (uint64_t)c->max_msg_size) ||
               (c->max_bytes > 0 && p->subject_len + p->hdr_len + p->data_len + REC_OVERHEAD >
                                        (uint64_t)c->max_bytes)) {
        res->status = JR_EMSGSIZE;
    } else if (o->flags & JR__PUB_MSG_ID) {
        const jr__dedup_entry *e = jr__dedup_find(&f->dedup, o->msg_id, o->msg_id_len);
        if (e) {
            /* the request's own earlier attempt (sent again after a failover) is answered as
             * that attempt was; any other publish of the id is a duplicate */
            res->seq = e->seq;
            res->duplicate = !(o->flags & JR__PUB_TOKEN) || e->token != o->token;
            return 1;
        }
    }
    if (res->status) return 1;
    if ((o->flags & JR__PUB_EXPECT_STREAM) &&
        !same(o->expected_stream, o->expected_stream_len, c->name, strlen(c->name))) {
        res->status = JR_EWRONGSTREAM;
    } else if ((o->flags & JR__PUB_EXPECT_LAST_SEQ) && o->expected_last_seq != f->last_seq) {
        res->status = JR_EWRONGLASTSEQ;
        res->seq = f->last_seq;
    } else if ((o->flags & JR__PUB_EXPECT_LAST_MSG_ID) &&
               !same(o->expected_last_msg_id, o->expected_last_msg_id_len, f->last_msg_id,
                     f->last_msg_id_len)) {
        res->status = JR_EWRONGLASTMSGID;
        res->why = f->last_msg_id ? f->last_msg_id : "";
        res->why_len = f->last_msg_id_len;
    } else if ((o->flags & (JR__PUB_ROLLUP_SUB | JR__PUB_ROLLUP_ALL)) &&
               (!c->allow_rollup || c->deny_purge)) {
        res->status = JR_EDENIED;
    }
    return res->status != 0;
}

static int publish(jr__stream_fsm *f, const jr__op_publish *p, jr__stream_result *res)
{
    const jr__pub_opts *o = &p->opts;
    if (check_publish(f, p, res)) return 0;

    uint64_t seq = f->last_seq + 1;
    int rc;
    if ((o->flags & JR__PUB_MSG_ID) && (rc = jr__stream_fsm_reserve_id(f, o->msg_id_len)) != 0)
        return rc; /* before anything changes */
    if (o->flags & JR__PUB_EXPECT_LAST_SUBJ_SEQ) {
        uint64_t last;
        rc = subject_last(f, p->subject, p->subject_len, &last);
        if (rc) return rc;
        if (last != o->expected_last_subject_seq) {
            res->status = JR_EWRONGLASTSUBJSEQ;
            res->seq = last;
            return 0;
        }
    }

    jr__dedup_entry *tok = NULL;
    if (o->flags & JR__PUB_MSG_ID) {
        rc = jr__dedup_prepare(&f->dedup, o->msg_id, o->msg_id_len, &tok);
        if (rc) return rc;
    }
    if (o->flags & JR__PUB_NO_INTEREST)
        rc = jr__store_skip(f->store, seq); /* its seq, no message: nobody would read it */
    else
        rc = jr__store_append(f->store, seq, p->subject, p->subject_len, p->hdr, p->hdr_len,
                              p->data, p->data_len, f->clock, NULL);
    if (rc) {
        if (tok) jr__dedup_abort(&f->dedup, tok);
        if (rc == JR__ESTORE_FULL) { /* discard new: the public JR_ELIMIT */
            res->status = JR_ELIMIT;
            res->why = jr__store_errmsg(f->store);
            res->why_len = res->why ? strlen(res->why) : 0;
            return 0;
        }
        if (rc == JR_EMSGSIZE || rc == JR_EINVAL) {
            res->status = rc;
            return 0;
        }
        return rc;
    }
    f->last_seq = seq;
    f->last_ts = f->clock;
    res->seq = seq;
    if (tok)
        jr__dedup_commit(&f->dedup, tok, seq, f->clock, (o->flags & JR__PUB_TOKEN) ? o->token : 0);
    if (o->flags & JR__PUB_MSG_ID)
        jr__stream_fsm_set_id(f, o->msg_id, o->msg_id_len); /* reserved before the append */
    else
        jr__stream_fsm_set_id(f, NULL, 0);

    if (o->flags & JR__PUB_NO_INTEREST) return 0;
    if (o->flags & JR__PUB_ROLLUP_SUB)
        rc = purge_below(f, p->subject, p->subject_len, seq, &res->purged);
    else if (o->flags & JR__PUB_ROLLUP_ALL)
        rc = purge_below(f, NULL, 0, seq, &res->purged);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Delete, purge, config
 */

/* Interest or work-queue retention: the live messages of [from, to] go (res->purged counts
 * them). Not refused by sealed or deny_delete: those guard what users do, and retention is the
 * stream's own policy. */
static int remove_acked(jr__stream_fsm *f, const jr__op_remove *r, jr__stream_result *res)
{
    uint64_t to = r->to < f->last_seq ? r->to : f->last_seq;
    jr__store_msg m;
    for (uint64_t q = r->from; q <= to && jr__store_next(f->store, q, NULL, 0, &m) == 0;
         q = m.seq + 1) {
        if (m.seq > to) break;
        int rc = jr__store_delete(f->store, m.seq, 0);
        if (rc) return rc;
        res->purged++;
    }
    return 0;
}

static int delete_msg(jr__stream_fsm *f, const jr__op_delete *d, jr__stream_result *res)
{
    const jr_stream_config *c = &f->cfg->c;
    res->seq = d->seq;
    if (c->sealed) {
        res->status = JR_ESEALED;
        return 0;
    }
    if (c->deny_delete) {
        res->status = JR_EDENIED;
        return 0;
    }
    if (d->seq > f->last_seq) { /* not assigned yet */
        res->status = JR_ENOTFOUND;
        return 0;
    }
    int rc = jr__store_delete(f->store, d->seq, d->erase);
    if (rc == JR_ENOTFOUND) {
        res->status = rc;
        return 0;
    }
    return rc;
}

static int purge(jr__stream_fsm *f, const jr__op_purge *p, jr__stream_result *res)
{
    const jr_stream_config *c = &f->cfg->c;
    if (c->sealed) {
        res->status = JR_ESEALED;
        return 0;
    }
    if (c->deny_purge) {
        res->status = JR_EDENIED;
        return 0;
    }
    if (p->filter_len && !jr__subject_valid(p->filter, p->filter_len, 1)) {
        res->status = JR_EINVAL;
        return 0;
    }
    jr__purge q = {
        .filter = p->filter, .filter_len = p->filter_len, .seq = p->seq, .keep = p->keep};
    int rc = jr__store_purge(f->store, &q, &res->purged);
    if (rc == JR_EINVAL) {
        res->status = rc;
        return 0;
    }
    return rc;
}

static int set_config(jr__stream_fsm *f, const jr__op_config *op, jr__stream_result *res)
{
    jr__stream_cfg *n;
    int rc = jr__stream_config_decode(op->cfg, op->len, f->alloc, &n);
    if (rc == JR_ENOMEM) return rc;
    if (rc) {
        res->status = rc;
        return 0;
    }
    const jr_stream_config *c = &f->cfg->c;
    if (strcmp(n->c.name, c->name) != 0 || n->c.storage != c->storage) {
        jr__stream_cfg_free(n);
        res->status = JR_EINVAL;
        return 0;
    }
    jr__store_limits l;
    jr__stream_fsm_limits(&n->c, &l);
    jr__stream_cfg_free(f->cfg);
    f->cfg = n;
    jr__dedup_expire(&f->dedup, f->clock, n->c.duplicate_window_ns);
    return jr__store_set_limits(f->store, &l);
}

/* ---------------------------------------------------------------------------------------------
 * Apply
 */

static int apply_op(jr__stream_fsm *f, const jr__stream_op *op, jr__stream_result *res)
{
    memset(res, 0, sizeof *res);
    res->type = op->type;
    int rc = advance(f, op->ts);
    if (rc) return rc;
    switch (op->type) {
    case JR__OP_PUBLISH:
        rc = publish(f, &op->u.pub, res);
        break;
    case JR__OP_DELETE:
        rc = delete_msg(f, &op->u.del, res);
        break;
    case JR__OP_PURGE:
        rc = purge(f, &op->u.purge, res);
        break;
    case JR__OP_CONFIG:
        rc = set_config(f, &op->u.config, res);
        break;
    case JR__OP_REMOVE:
        rc = remove_acked(f, &op->u.remove, res);
        break;
    default: /* TICK: the clock moved; that is all */
        break;
    }
    return rc;
}

int jr__stream_fsm_apply(jr__stream_fsm *f, uint64_t index, const void *entry, size_t len,
                         jr__stream_result_fn fn, void *arg)
{
    if (f->failed) return f->failed;
    if (f->restoring) return JR_EDAMAGED;
    if (index <= f->applied) return 0;
    if (f->limits_pending) {
        jr__store_limits l;
        jr__stream_fsm_limits(&f->cfg->c, &l);
        int lrc = jr__store_set_limits(f->store, &l);
        if (lrc) return jr__stream_fsm_fail(f, lrc);
        f->limits_pending = 0;
    }
    jr__stream_op op;
    jr__stream_result res;
    int rc = jr__op_decode(entry, len, &op);
    if (rc == JR_EVERSION) return jr__stream_fsm_fail(f, rc);
    if (rc) {
        memset(&res, 0, sizeof res);
        res.status = rc;
        f->applied = index;
        if (fn) fn(arg, 0, &res);
        return 0;
    }
    if (op.type != JR__OP_BATCH) {
        rc = apply_op(f, &op, &res);
        if (rc) return jr__stream_fsm_fail(f, rc);
        f->applied = index;
        if (fn) fn(arg, 0, &res);
        return 0;
    }
    jr__op_iter it;
    jr__stream_op inner;
    jr__op_batch_iter(&op, &it);
    int got;
    for (uint32_t i = 0; !(rc = jr__op_batch_next(&it, &inner, &got)) && got; i++) {
        rc = apply_op(f, &inner, &res);
        if (rc) return jr__stream_fsm_fail(f, rc);
        if (fn) fn(arg, i, &res);
    }
    if (rc) return jr__stream_fsm_fail(f, rc); /* cannot happen: the batch was validated */
    f->applied = index;
    return 0;
}

static void keep_last(void *arg, uint32_t i, const jr__stream_result *r)
{
    (void)i;
    *(jr__stream_result *)arg = *r;
}

int jr__stream_fsm_apply1(jr__stream_fsm *f, uint64_t index, const void *entry, size_t len,
                          jr__stream_result *res)
{
    memset(res, 0, sizeof *res);
    return jr__stream_fsm_apply(f, index, entry, len, keep_last, res);
}

int jr__stream_fsm_sync(jr__stream_fsm *f)
{
    if (f->failed) return f->failed;
    /* a mark when there is something new to mark and the state is whole (not restoring) */
    if (f->persistent && !f->restoring && f->applied != jr__store_mark_index(f->store))
        return jr__stream_fsm_mark(f);
    int rc = jr__store_sync(f->store);
    return rc ? jr__stream_fsm_fail(f, rc) : 0;
}

uint64_t jr__stream_fsm_durable(const jr__stream_fsm *f)
{
    return f->persistent ? jr__store_mark_index(f->store) : f->applied;
}

/* ---------------------------------------------------------------------------------------------
 * Reading
 */

jr__store *jr__stream_fsm_store(jr__stream_fsm *f)
{
    return f->store;
}

const jr_stream_config *jr__stream_fsm_config_get(const jr__stream_fsm *f)
{
    return &f->cfg->c;
}

void jr__stream_fsm_trim(jr__stream_fsm *f)
{
    if (!f->failed) jr__store_trim(f->store);
}

/* Equal configs whose metadata is also in the same order: the encoding (marks, snapshots, the
 * digest) follows that order, so sharing must not change it. */
static int same_encoding(const jr_stream_config *a, const jr_stream_config *b)
{
    if (!jr__stream_config_equal(a, b)) return 0;
    for (size_t i = 0; i < a->nmetadata; i++)
        if (strcmp(a->metadata[i].key, b->metadata[i].key) != 0) return 0;
    return 1;
}

void jr__stream_fsm_share_config(jr__stream_fsm *f, jr__stream_cfg *c)
{
    if (!c || c == f->cfg || !same_encoding(&f->cfg->c, &c->c)) return;
    jr__stream_cfg_free(f->cfg);
    f->cfg = jr__stream_cfg_ref(c);
}

uint64_t jr__stream_fsm_applied(const jr__stream_fsm *f)
{
    return f->applied;
}

int64_t jr__stream_fsm_clock(const jr__stream_fsm *f)
{
    return f->clock;
}

int jr__stream_fsm_restoring(const jr__stream_fsm *f)
{
    return f->restoring;
}

void jr__stream_fsm_info_get(const jr__stream_fsm *f, jr__stream_fsm_info *out)
{
    memset(out, 0, sizeof *out);
    jr__store_state_get(f->store, &out->store);
    out->store.last_ts = f->last_ts;
    out->applied = f->applied;
    out->clock = f->clock;
    out->last_seq = f->last_seq;
    out->durable = jr__stream_fsm_durable(f);
    out->dedup_ids = jr__dedup_count(&f->dedup);
    out->restoring = f->restoring;
    out->failed = f->failed;
}

void jr__stream_fsm_last_msg_id(const jr__stream_fsm *f, const char **id, size_t *len)
{
    *id = f->last_msg_id;
    *len = f->last_msg_id_len;
}

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    return jr__xxh3_2(&h, sizeof h, p, n);
}

static uint64_t mix_u64(uint64_t h, uint64_t v)
{
    uint8_t b[8];
    jr__put_u64(b, v);
    return mix(h, b, sizeof b);
}

int jr__stream_fsm_digest(jr__stream_fsm *f, uint64_t *out)
{
    jr__buf b;
    jr__buf_init(&b, f->alloc);
    int rc = jr__stream_config_encode(&f->cfg->c, &b);
    uint64_t h = rc ? 0 : jr__xxh3(b.data, b.len);
    jr__buf_free(&b);
    if (rc) return rc;
    h = mix_u64(h, (uint64_t)f->clock);
    h = mix_u64(h, f->last_seq);
    h = mix(h, f->last_msg_id, f->last_msg_id_len);
    for (size_t i = 0; i < jr__dedup_count(&f->dedup); i++) {
        const jr__dedup_entry *e = jr__dedup_at(&f->dedup, i);
        h = mix(h, e->id, e->len);
        h = mix_u64(h, e->seq);
        h = mix_u64(h, (uint64_t)e->ts);
        h = mix_u64(h, e->token);
    }
    jr__store_state st;
    jr__store_state_get(f->store, &st);
    st.last_ts = f->last_ts; /* the store's is 0 where it does not know it */
    uint64_t sv[] = {st.msgs,         st.bytes,
                     st.first_seq,    (uint64_t)st.first_ts,
                     st.last_seq,     (uint64_t)st.last_ts,
                     st.num_subjects, st.num_deleted};
    for (size_t i = 0; i < sizeof sv / sizeof sv[0]; i++) h = mix_u64(h, sv[i]);
    size_t nr;
    const jr__seq_range *r = jr__store_deleted(f->store, &nr);
    for (size_t i = 0; i < nr; i++) h = mix_u64(mix_u64(h, r[i].lo), r[i].hi);
    jr__store_msg m;
    uint64_t from = 1;
    while ((rc = jr__store_next(f->store, from, NULL, 0, &m)) == 0) {
        h = mix_u64(mix_u64(h, m.seq), (uint64_t)m.ts);
        h = mix(h, m.subject, m.subject_len);
        h = mix(h, m.hdr, m.hdr_len);
        h = mix(h, m.data, m.data_len);
        from = m.seq + 1;
    }
    if (rc != JR_ENOTFOUND) return rc;
    *out = h;
    return 0;
}
