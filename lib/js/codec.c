/*
 * codec — encodings of stream info, the server report and stored messages (codec.h).
 */
#include <string.h>

#include "js/codec.h"
#include "util/alloc.h"

#define MAX_STR 4096u
#define MAX_SERVERS 4096u

/* The cluster block (codec.h: str cluster ... lag). */
static void put_cluster(jr__buf *b, const jr_cluster_info *c)
{
    jr__buf_str(b, c->name);
    jr__buf_str(b, c->group);
    jr__buf_str(b, c->leader);
    jr__buf_varint(b, c->nreplicas);
    for (size_t i = 0; i < c->nreplicas; i++) {
        const jr_peer_info *p = c->replicas[i];
        jr__buf_str(b, p->name);
        jr__buf_u8(b,
                   (uint8_t)((p->current ? 1 : 0) | (p->offline ? 2 : 0) | (p->observer ? 4 : 0) |
                             (p->pending ? 8 : 0) | (p->damaged ? 16 : 0) |
                             (p->unvouched ? 32 : 0) | (p->fsm_failed ? 64 : 0) |
                             (p->fsm_failed && p->fsm_rebuilding ? 128 : 0)));
        jr__buf_varint(b, p->active_ns);
        jr__buf_varint(b, p->lag);
    }
    const jr_move_info *m = c->move;
    if (!m) return;
    jr__buf_u8(b, 1);
    jr__buf_varint(b, m->ntarget);
    for (size_t i = 0; i < m->ntarget; i++) jr__buf_str(b, m->target[i]);
    jr__buf_varint(b, m->norigin);
    for (size_t i = 0; i < m->norigin; i++) jr__buf_str(b, m->origin[i]);
    jr__buf_u8(b, (uint8_t)m->status);
    jr__buf_str(b, m->description);
    jr__buf_str(b, m->error);
}

/* 0 if the move of c can be encoded (codec.h "move"), else JR_EINVAL. */
static int move_ok(const jr_cluster_info *c)
{
    const jr_move_info *m = c->move;
    if (!m) return 0;
    if (m->ntarget > JR__INFO_MAX_REPLICAS || m->norigin > JR__INFO_MAX_REPLICAS ||
        m->status < JR_MOVE_META || m->status > JR_MOVE_UNAVAILABLE || (m->ntarget && !m->target) ||
        (m->norigin && !m->origin))
        return JR_EINVAL;
    return 0;
}

int jr__info_encode(jr__buf *b, const jr_stream_info *in)
{
    const jr_cluster_info *c = in->cluster;
    if (c->nreplicas > JR__INFO_MAX_REPLICAS || move_ok(c)) return JR_EINVAL;
    jr__buf cfg;
    jr__buf_init(&cfg, b->alloc);
    int rc = jr__stream_config_encode(in->config, &cfg);
    if (rc == 0) jr__buf_bytes(b, cfg.data, cfg.len);
    jr__buf_free(&cfg);
    if (rc) return rc;
    const jr_stream_state *s = in->state;
    uint64_t v[] = {in->created_ns, s->msgs,    s->bytes,        s->first_seq,   s->first_ts,
                    s->last_seq,    s->last_ts, s->num_subjects, s->num_deleted, s->consumers};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) jr__buf_varint(b, v[i]);
    put_cluster(b, c);
    return b->err;
}

/* Reads a str into the string arena at *at (NUL-terminated); returns it, or NULL on failure. */
static const char *take_str(jr__rd *r, char **at, const char *end)
{
    size_t n;
    const uint8_t *p = jr__rd_bytes(r, &n, MAX_STR);
    if (!p || r->err || (size_t)(end - *at) < n + 1 || memchr(p, 0, n)) {
        jr__rd_fail(r);
        return NULL;
    }
    char *s = *at;
    memcpy(s, p, n);
    s[n] = 0;
    *at += n + 1;
    return s;
}

/* Reads a cluster block into c (its replicas into reps, pointed to by ptrs). 0 or JR_ECORRUPT. */
/* Reads the move at the end of a cluster block, if there is one (codec.h "move"). */
static int take_move(jr__rd *r, char **at, const char *end, jr_cluster_info *c, jr__move_dec *d)
{
    c->move = NULL;
    if (!jr__rd_left(r)) return 0;
    if (jr__rd_u8(r) != 1) return JR_ECORRUPT;
    jr_move_info *m = &d->move;
    m->size = sizeof *m;
    uint64_t nt = jr__rd_varint(r);
    if (r->err || nt > JR__INFO_MAX_REPLICAS) return JR_ECORRUPT;
    for (size_t i = 0; i < nt; i++) d->target[i] = take_str(r, at, end);
    uint64_t no = jr__rd_varint(r);
    if (r->err || no > JR__INFO_MAX_REPLICAS) return JR_ECORRUPT;
    for (size_t i = 0; i < no; i++) d->origin[i] = take_str(r, at, end);
    uint8_t st = jr__rd_u8(r);
    m->description = take_str(r, at, end);
    m->error = take_str(r, at, end);
    if (r->err || st < JR_MOVE_META || st > JR_MOVE_UNAVAILABLE) return JR_ECORRUPT;
    if (m->error && !*m->error) m->error = NULL;
    m->status = st;
    m->target = d->target;
    m->ntarget = (size_t)nt;
    m->origin = d->origin;
    m->norigin = (size_t)no;
    c->move = m;
    return 0;
}

static int take_cluster(jr__rd *r, char **at, const char *end, jr_cluster_info *c,
                        jr_peer_info *reps, const jr_peer_info **ptrs)
{
    c->size = sizeof *c;
    c->name = take_str(r, at, end);
    c->group = take_str(r, at, end);
    c->leader = take_str(r, at, end);
    uint64_t n = jr__rd_varint(r);
    if (r->err || n > JR__INFO_MAX_REPLICAS) return JR_ECORRUPT;
    for (size_t i = 0; i < n; i++) {
        jr_peer_info *pi = &reps[i];
        pi->size = sizeof *pi;
        pi->name = take_str(r, at, end);
        uint8_t f = jr__rd_u8(r);
        pi->active_ns = jr__rd_varint(r);
        pi->lag = jr__rd_varint(r);
        if (r->err) return JR_ECORRUPT; /* flags a newer sender adds are ignored */
        pi->current = f & 1;
        pi->offline = (f >> 1) & 1;
        pi->observer = (f >> 2) & 1;
        pi->pending = (f >> 3) & 1;
        pi->damaged = (f >> 4) & 1;
        pi->unvouched = (f >> 5) & 1;
        pi->fsm_failed = (f >> 6) & 1;
        pi->fsm_rebuilding = (f >> 7) & 1;
        if (pi->fsm_rebuilding && !pi->fsm_failed) return JR_ECORRUPT; /* never encoded */
        /* never shown current, whatever the sender said */
        if (pi->damaged || pi->unvouched || pi->fsm_failed) pi->current = 0;
        ptrs[i] = pi;
    }
    if (r->err) return JR_ECORRUPT;
    if (c->leader && !*c->leader) c->leader = NULL;
    c->replicas = ptrs;
    c->nreplicas = (size_t)n;
    return 0;
}

int jr__info_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__info_dec *out)
{
    memset(out, 0, sizeof *out);
    out->alloc = a;
    out->strings = jr__malloc(a, len + 1); /* every string fits: each costs its bytes + 1 */
    if (!out->strings) return JR_ENOMEM;
    char *at = out->strings, *end = out->strings + len + 1;
    jr__rd r;
    jr__rd_init(&r, p, len);
    size_t clen;
    const uint8_t *cfg = jr__rd_bytes(&r, &clen, 1u << 20);
    if (r.err) return JR_ECORRUPT;
    int rc = jr__stream_config_decode(cfg, clen, a, &out->cfg);
    if (rc) return rc == JR_ENOMEM ? rc : JR_ECORRUPT;
    jr_stream_info *in = &out->info;
    in->size = sizeof *in;
    in->config = &out->cfg->c;
    in->state = &out->state;
    in->cluster = &out->cluster;
    jr_stream_state *s = &out->state;
    s->size = sizeof *s;
    in->created_ns = jr__rd_varint(&r);
    s->msgs = jr__rd_varint(&r);
    s->bytes = jr__rd_varint(&r);
    s->first_seq = jr__rd_varint(&r);
    s->first_ts = jr__rd_varint(&r);
    s->last_seq = jr__rd_varint(&r);
    s->last_ts = jr__rd_varint(&r);
    s->num_subjects = jr__rd_varint(&r);
    s->num_deleted = jr__rd_varint(&r);
    s->consumers = jr__rd_varint(&r);
    if (take_cluster(&r, &at, end, &out->cluster, out->reps, out->rep_ptrs)) return JR_ECORRUPT;
    if (take_move(&r, &at, end, &out->cluster, &out->move)) return JR_ECORRUPT;
    return jr__rd_left(&r) ? JR_ECORRUPT : 0;
}

void jr__info_dec_free(jr__info_dec *d)
{
    jr__stream_cfg_free(d->cfg);
    jr__free(d->alloc, d->strings);
    d->cfg = NULL;
    d->strings = NULL;
}

/* A list<str> of at most JR_DRAIN_LIST_MAX names into pool[*used..] (cap entries in all). */
static int take_names(jr__rd *r, char **at, char *end, const char **pool, size_t cap, size_t *used,
                      const char *const **v, size_t *n)
{
    uint64_t cnt = jr__rd_varint(r);
    if (r->err || cnt > JR_DRAIN_LIST_MAX || cnt > jr__rd_left(r) || *used + cnt > cap) return 1;
    *v = pool + *used;
    *n = (size_t)cnt;
    for (size_t k = 0; k < cnt; k++) {
        const char *name = take_str(r, at, end);
        if (r->err || !name) return 1;
        pool[(*used)++] = name;
    }
    if (!cnt) *v = NULL;
    return 0;
}

int jr__servers_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__servers_dec *out)
{
    memset(out, 0, sizeof *out);
    out->alloc = a;
    out->strings = jr__malloc(a, len + 1);
    if (!out->strings) return JR_ENOMEM;
    char *at = out->strings, *end = out->strings + len + 1;
    jr__rd r;
    jr__rd_init(&r, p, len);
    jr_meta_info *in = &out->info;
    in->size = sizeof *in;
    in->cluster = take_str(&r, &at, end);
    in->leader = take_str(&r, &at, end);
    in->nstreams = (size_t)jr__rd_varint(&r);
    uint64_t n = jr__rd_varint(&r);
    /* every server takes at least 6 bytes, every tag at least 1 */
    if (r.err || n > MAX_SERVERS || n > jr__rd_left(&r) / 6) return JR_ECORRUPT;
    out->servers = jr__calloc(a, n ? (size_t)n : 1, sizeof *out->servers);
    out->server_ptrs = jr__calloc(a, n ? (size_t)n : 1, sizeof *out->server_ptrs);
    out->tags = jr__calloc(a, len + 1, sizeof *out->tags);
    if (!out->servers || !out->server_ptrs || !out->tags) return JR_ENOMEM;
    size_t ntags_all = 0;
    for (size_t i = 0; i < n; i++) {
        jr_server_info *s = &out->servers[i];
        out->server_ptrs[i] = s;
        s->size = sizeof *s;
        s->name = take_str(&r, &at, end);
        s->cluster = take_str(&r, &at, end);
        uint64_t nt = jr__rd_varint(&r);
        if (r.err || nt > jr__rd_left(&r) || ntags_all + nt > len) return JR_ECORRUPT;
        s->tags = out->tags + ntags_all;
        s->ntags = (size_t)nt;
        for (size_t k = 0; k < nt; k++) out->tags[ntags_all++] = take_str(&r, &at, end);
        uint8_t f = jr__rd_u8(&r);
        s->active_ns = jr__rd_varint(&r);
        s->lag = jr__rd_varint(&r);
        uint64_t assets = jr__rd_varint(&r);
        if (r.err || (f & ~31u) || assets > UINT32_MAX) return JR_ECORRUPT;
        s->leader = f & 1;
        s->current = (f >> 1) & 1;
        s->offline = (f >> 2) & 1;
        s->damaged = (f >> 3) & 1;
        s->draining = (f >> 4) & 1;
        if (s->damaged) s->current = 0; /* never shown current, whatever the sender said */
        s->assets = (uint32_t)assets;
        if (s->draining) { /* the replicas left on it, then the unplaced ones */
            if (take_names(&r, &at, end, out->tags, len, &ntags_all, &s->remaining,
                           &s->nremaining) ||
                take_names(&r, &at, end, out->tags, len, &ntags_all, &s->unplaced, &s->nunplaced))
                return JR_ECORRUPT;
        }
    }
    if (!r.err && jr__rd_left(&r) && /* absent when there are none */
        take_names(&r, &at, end, out->tags, len, &ntags_all, &in->under_replicated,
                   &in->nunder_replicated))
        return JR_ECORRUPT;
    if (r.err || jr__rd_left(&r)) return JR_ECORRUPT;
    if (in->leader && !*in->leader) in->leader = NULL;
    in->servers = out->server_ptrs;
    in->nservers = (size_t)n;
    return 0;
}

void jr__servers_dec_free(jr__servers_dec *d)
{
    jr__free(d->alloc, d->servers);
    jr__free(d->alloc, (void *)d->server_ptrs);
    jr__free(d->alloc, (void *)d->tags);
    jr__free(d->alloc, d->strings);
    d->servers = NULL;
    d->server_ptrs = NULL;
    d->tags = NULL;
    d->strings = NULL;
}

void jr__msg_encode(jr__buf *b, const jr__store_msg *m)
{
    jr__buf_varint(b, m->seq);
    jr__buf_u64(b, (uint64_t)m->ts);
    jr__buf_bytes(b, m->subject, m->subject_len);
    jr__buf_bytes(b, m->hdr, m->hdr_len);
    jr__buf_bytes(b, m->data, m->data_len);
}

int jr__msg_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__msg_dec *out)
{
    memset(out, 0, sizeof *out);
    out->alloc = a;
    jr__rd r;
    jr__rd_init(&r, p, len);
    uint64_t seq = jr__rd_varint(&r), ts = jr__rd_u64(&r);
    size_t sl, hl, dl;
    const uint8_t *subj = jr__rd_bytes(&r, &sl, MAX_STR);
    const uint8_t *hdr = jr__rd_bytes(&r, &hl, len);
    const uint8_t *data = jr__rd_bytes(&r, &dl, len);
    if (r.err || jr__rd_left(&r) || seq == 0 || sl == 0 || memchr(subj, 0, sl)) return JR_ECORRUPT;
    out->block = jr__malloc(a, sl + 1 + hl + dl + 1);
    if (!out->block) return JR_ENOMEM;
    char *s = out->block;
    memcpy(s, subj, sl);
    s[sl] = 0;
    if (hl) memcpy(s + sl + 1, hdr, hl);
    if (dl) memcpy(s + sl + 1 + hl, data, dl);
    out->m.size = sizeof out->m;
    out->m.seq = seq;
    out->m.ts = ts;
    out->m.subject = s;
    out->m.hdr = hl ? s + sl + 1 : NULL;
    out->m.hdr_len = hl;
    out->m.data = s + sl + 1 + hl;
    out->m.len = dl;
    return 0;
}

void jr__msg_dec_free(jr__msg_dec *d)
{
    jr__free(d->alloc, d->block);
    d->block = NULL;
}

/* Consumer info ------------------------------------------------------------------------------*/

int jr__cinfo_encode(jr__buf *b, const jr_consumer_info *in)
{
    const jr_cluster_info *c = in->cluster;
    if (c->nreplicas > JR__INFO_MAX_REPLICAS || move_ok(c)) return JR_EINVAL;
    jr__buf cfg;
    jr__buf_init(&cfg, b->alloc);
    int rc = jr__consumer_config_encode(in->config, &cfg);
    if (rc == 0) jr__buf_bytes(b, cfg.data, cfg.len);
    jr__buf_free(&cfg);
    if (rc) return rc;
    jr__buf_str(b, in->stream);
    uint64_t v[] = {in->created_ns,
                    in->delivered.consumer_seq,
                    in->delivered.stream_seq,
                    in->delivered.last_active_ns,
                    in->ack_floor.consumer_seq,
                    in->ack_floor.stream_seq,
                    in->ack_floor.last_active_ns,
                    in->num_ack_pending,
                    in->num_redelivered,
                    in->num_waiting,
                    in->num_pending};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) jr__buf_varint(b, v[i]);
    put_cluster(b, c);
    return b->err;
}

int jr__cinfo_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__cinfo_dec *out)
{
    memset(out, 0, sizeof *out);
    out->alloc = a;
    out->strings = jr__malloc(a, len + 1);
    if (!out->strings) return JR_ENOMEM;
    char *at = out->strings, *end = out->strings + len + 1;
    jr__rd r;
    jr__rd_init(&r, p, len);
    size_t clen;
    const uint8_t *cfg = jr__rd_bytes(&r, &clen, 1u << 20);
    if (r.err) return JR_ECORRUPT;
    int rc = jr__consumer_config_decode(cfg, clen, a, &out->cfg);
    if (rc) return rc == JR_ENOMEM ? rc : JR_ECORRUPT;
    jr_consumer_info *in = &out->info;
    in->size = sizeof *in;
    in->config = &out->cfg->c;
    in->name = out->cfg->c.name;
    in->stream = take_str(&r, &at, end);
    in->created_ns = jr__rd_varint(&r);
    in->delivered.consumer_seq = jr__rd_varint(&r);
    in->delivered.stream_seq = jr__rd_varint(&r);
    in->delivered.last_active_ns = jr__rd_varint(&r);
    in->ack_floor.consumer_seq = jr__rd_varint(&r);
    in->ack_floor.stream_seq = jr__rd_varint(&r);
    in->ack_floor.last_active_ns = jr__rd_varint(&r);
    in->num_ack_pending = jr__rd_varint(&r);
    in->num_redelivered = jr__rd_varint(&r);
    in->num_waiting = jr__rd_varint(&r);
    in->num_pending = jr__rd_varint(&r);
    in->cluster = &out->cluster;
    if (r.err || !in->name) return JR_ECORRUPT;
    if (take_cluster(&r, &at, end, &out->cluster, out->reps, out->rep_ptrs)) return JR_ECORRUPT;
    if (take_move(&r, &at, end, &out->cluster, &out->move)) return JR_ECORRUPT;
    return jr__rd_left(&r) ? JR_ECORRUPT : 0;
}

void jr__cinfo_dec_free(jr__cinfo_dec *d)
{
    jr__consumer_cfg_free(d->cfg);
    jr__free(d->alloc, d->strings);
    d->cfg = NULL;
    d->strings = NULL;
}
