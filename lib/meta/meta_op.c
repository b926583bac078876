/*
 * meta_op — encoding and strict decoding of the meta group's operations (layout in meta_op.h).
 *
 * The decoder parses into borrowed spans first (bounded: at most JR__META_MAX_TAGS tags or
 * JR_MAX_REPLICAS peers), validates them, and only then makes one allocation for the strings
 * and the pointer array, plus the stream config's own block.
 */
#include <string.h>

#include "meta/meta_op.h"
#include "util/alloc.h"
#include "util/checksum.h"

_Static_assert(JR__META_OP_MAX == 11, "a new meta op type needs its encoding in meta_op.c");

typedef struct span {
    const char *p;
    size_t n;
} span;

/* An op as parsed, before its strings are copied. */
typedef struct raw {
    uint8_t type;
    uint64_t request_id;
    span origin;
    span name, cluster; /* SERVER_INFO */
    span tags[JR__META_MAX_TAGS];
    size_t ntags;
    uint64_t capacity, max_assets;
    const uint8_t *cfg; /* STREAM_ADD/UPDATE: the encoded config */
    size_t cfglen;
    span peers[JR_MAX_REPLICAS];
    size_t npeers;
    span stream;                                         /* STREAM_DELETE, _CONVERGED, CONSUMER_* */
    span consumer;                                       /* CONSUMER_DELETE, PEER_MOVE */
    span peer;                                           /* PEER_MOVE */
    uint8_t action;                                      /* CONSUMER_ADD */
    uint64_t group, peers_at, term, commit_term, commit; /* STREAM_CONVERGED */
    uint8_t version;
    uint64_t created_ns; /* STREAM_ADD (version 2), CONSUMER_ADD */
    /* SERVER_REMOVE: the re-placements, checked, still encoded (from rep), and the sizes their
     * decoded copy takes */
    jr__rd rep;
    size_t nrep, rep_peers, rep_bytes;
} raw;

int jr__meta_name_ok(const char *s, size_t n)
{
    if (!s || n == 0 || n > JR__META_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c == 0x7f) return 0;
    }
    return 1;
}

static int span_eq(span a, span b)
{
    return a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
}

/* 1 if the n names are valid and distinct. */
static int names_ok(const span *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!jr__meta_name_ok(v[i].p, v[i].n)) return 0;
        for (size_t j = 0; j < i; j++)
            if (span_eq(v[i], v[j])) return 0;
    }
    return 1;
}

/* 1 if s (NUL-terminated) is a valid stream name (the config's rules for `name`). */
static int stream_name_ok(const char *s)
{
    if (!s) return 0;
    jr_stream_config c;
    jr_stream_config_init(&c);
    c.name = s;
    return jr__stream_config_validate(&c, NULL, 0) == 0;
}

/* 1 if s (NUL-terminated) is a valid consumer name (the config's rules for `name`). */
static int consumer_name_ok(const char *s)
{
    if (!s) return 0;
    jr_consumer_config c;
    jr_consumer_config_init(&c);
    c.name = s;
    c.durable_name = s;
    return jr__consumer_config_validate(&c, NULL, NULL) == 0;
}

/* ---------------------------------------------------------------------------------------------
 * Shared readers and writers
 */
const char *jr__meta_rd_str(jr__rd *r, size_t *n, size_t max)
{
    const uint8_t *p = jr__rd_bytes(r, n, max);
    if (!p) return NULL;
    if (*n && memchr(p, 0, *n)) {
        jr__rd_fail(r);
        *n = 0;
        return NULL;
    }
    return (const char *)p;
}

size_t jr__meta_rd_count(jr__rd *r, size_t min_item, size_t max)
{
    uint64_t n = jr__rd_varint(r);
    if (r->err || n > max || n > jr__rd_left(r) / min_item) {
        jr__rd_fail(r);
        return 0;
    }
    return (size_t)n;
}

void jr__meta_put_str(jr__buf *b, const char *s)
{
    jr__buf_str(b, s);
}

/* ---------------------------------------------------------------------------------------------
 * Encoding
 */
static span str_span(const char *s)
{
    span v = {s, s ? strlen(s) : 0};
    return v;
}

/* Checks op as the decoder would; fills the spans of r that the encoder needs. */
static int check_op(const jr__meta_op *op, raw *r)
{
    memset(r, 0, sizeof *r);
    r->origin = str_span(op->origin);
    if ((op->request_id == 0) != (r->origin.n == 0)) return JR_EINVAL;
    if (r->origin.n && !jr__meta_name_ok(r->origin.p, r->origin.n)) return JR_EINVAL;
    switch (op->type) {
    case JR__META_SERVER_REMOVE:
        r->name = str_span(op->server.name);
        if (!jr__meta_name_ok(r->name.p, r->name.n) || (op->nreplace && !op->replace))
            return JR_EINVAL;
        for (size_t i = 0; i < op->nreplace; i++) {
            const jr__meta_replace *x = &op->replace[i];
            if (!stream_name_ok(x->stream) || x->npeers == 0 || x->npeers > JR_MAX_REPLICAS ||
                !x->peers || (i && strcmp(op->replace[i - 1].stream, x->stream) >= 0))
                return JR_EINVAL;
            span pv[JR_MAX_REPLICAS];
            for (size_t k = 0; k < x->npeers; k++) {
                pv[k] = str_span(x->peers[k]);
                if (span_eq(pv[k], r->name)) return JR_EINVAL;
            }
            if (!names_ok(pv, x->npeers)) return JR_EINVAL;
        }
        return 0;
    case JR__META_SERVER_DRAIN:
        r->name = str_span(op->server.name);
        return jr__meta_name_ok(r->name.p, r->name.n) && op->action <= JR__META_DRAIN_START
                   ? 0
                   : JR_EINVAL;
    case JR__META_SERVER_JOIN:
    case JR__META_SERVER_INFO: {
        const jr__meta_server_info *s = &op->server;
        r->name = str_span(s->name);
        r->cluster = str_span(s->cluster);
        if (!jr__meta_name_ok(r->name.p, r->name.n) ||
            !jr__meta_name_ok(r->cluster.p, r->cluster.n))
            return JR_EINVAL;
        if (s->ntags > JR__META_MAX_TAGS || (s->ntags && !s->tags)) return JR_EINVAL;
        for (size_t i = 0; i < s->ntags; i++) r->tags[i] = str_span(s->tags[i]);
        return names_ok(r->tags, s->ntags) ? 0 : JR_EINVAL;
    }
    case JR__META_STREAM_ADD:
    case JR__META_STREAM_UPDATE:
        if (!op->config || op->npeers > JR_MAX_REPLICAS || (op->npeers && !op->peers))
            return JR_EINVAL;
        if (op->created_ns && op->type != JR__META_STREAM_ADD) return JR_EINVAL;
        if (op->consumer_config) return JR_EINVAL;
        for (size_t i = 0; i < op->npeers; i++) r->peers[i] = str_span(op->peers[i]);
        return names_ok(r->peers, op->npeers) ? 0 : JR_EINVAL;
    case JR__META_STREAM_DELETE:
        return stream_name_ok(op->stream) ? 0 : JR_EINVAL;
    case JR__META_CONSUMER_ADD:
        if (!stream_name_ok(op->stream) || !op->consumer_config ||
            op->action > JR__META_CONSUMER_PAUSE || op->npeers > JR_MAX_REPLICAS ||
            (op->npeers && !op->peers))
            return JR_EINVAL;
        for (size_t i = 0; i < op->npeers; i++) r->peers[i] = str_span(op->peers[i]);
        return names_ok(r->peers, op->npeers) ? 0 : JR_EINVAL;
    case JR__META_CONSUMER_DELETE:
        return stream_name_ok(op->stream) && consumer_name_ok(op->consumer) ? 0 : JR_EINVAL;
    case JR__META_STREAM_CONVERGED:
        return stream_name_ok(op->stream) && op->group && op->peers_at &&
                       op->commit_term <= op->term
                   ? 0
                   : JR_EINVAL;
    case JR__META_PEER_MOVE:
        r->consumer = str_span(op->consumer);
        r->peer = str_span(op->peer);
        if (!stream_name_ok(op->stream) || (r->consumer.n && !consumer_name_ok(op->consumer)) ||
            op->npeers > JR_MAX_REPLICAS || (op->npeers && !op->peers))
            return JR_EINVAL;
        if (op->action == JR__META_MOVE_EVACUATE) {
            if (!jr__meta_name_ok(r->peer.p, r->peer.n)) return JR_EINVAL;
        } else if (op->action != JR__META_MOVE_CANCEL || r->peer.n || op->npeers) {
            return JR_EINVAL;
        }
        for (size_t i = 0; i < op->npeers; i++) r->peers[i] = str_span(op->peers[i]);
        return names_ok(r->peers, op->npeers) ? 0 : JR_EINVAL;
    default:
        return JR_EINVAL;
    }
}

static void put_span(jr__buf *b, span s)
{
    jr__buf_bytes(b, s.p, s.n);
}

int jr__meta_op_encode(const jr__meta_op *op, jr__buf *out)
{
    raw r;
    if (!op || check_op(op, &r)) return JR_EINVAL;
    jr__buf cfg;
    jr__buf_init(&cfg, out->alloc);
    if (op->type == JR__META_STREAM_ADD || op->type == JR__META_STREAM_UPDATE) {
        int rc = jr__stream_config_encode(op->config, &cfg);
        if (rc) {
            jr__buf_free(&cfg);
            if (rc == JR_ENOMEM) out->err = out->err ? out->err : JR_ENOMEM;
            return rc;
        }
    } else if (op->type == JR__META_CONSUMER_ADD) {
        int rc = jr__consumer_config_encode(op->consumer_config, &cfg);
        if (rc) {
            jr__buf_free(&cfg);
            if (rc == JR_ENOMEM) out->err = out->err ? out->err : JR_ENOMEM;
            return rc;
        }
    }
    size_t start = out->len;
    int v2 = op->type == JR__META_STREAM_ADD && op->created_ns != 0;
    jr__buf_u8(out, v2 ? 2 : 1);
    jr__buf_u8(out, op->type);
    jr__buf_varint(out, op->request_id);
    put_span(out, r.origin);
    switch (op->type) {
    case JR__META_SERVER_REMOVE:
        put_span(out, r.name);
        jr__buf_varint(out, op->nreplace);
        for (size_t i = 0; i < op->nreplace; i++) {
            jr__meta_put_str(out, op->replace[i].stream);
            jr__buf_varint(out, op->replace[i].npeers);
            for (size_t k = 0; k < op->replace[i].npeers; k++)
                jr__meta_put_str(out, op->replace[i].peers[k]);
        }
        break;
    case JR__META_SERVER_DRAIN:
        put_span(out, r.name);
        jr__buf_u8(out, op->action);
        break;
    case JR__META_SERVER_JOIN:
    case JR__META_SERVER_INFO:
        put_span(out, r.name);
        put_span(out, r.cluster);
        jr__buf_varint(out, op->server.ntags);
        for (size_t i = 0; i < op->server.ntags; i++) put_span(out, r.tags[i]);
        jr__buf_varint(out, op->server.capacity_bytes);
        jr__buf_varint(out, op->server.max_assets);
        break;
    case JR__META_STREAM_ADD:
    case JR__META_STREAM_UPDATE:
        jr__buf_bytes(out, cfg.data, cfg.len);
        jr__buf_varint(out, op->npeers);
        for (size_t i = 0; i < op->npeers; i++) put_span(out, r.peers[i]);
        if (v2) jr__buf_varint(out, op->created_ns);
        break;
    case JR__META_STREAM_CONVERGED:
        jr__meta_put_str(out, op->stream);
        jr__buf_varint(out, op->group);
        jr__buf_varint(out, op->peers_at);
        jr__buf_varint(out, op->term);
        jr__buf_varint(out, op->commit_term);
        jr__buf_varint(out, op->commit);
        break;
    case JR__META_CONSUMER_ADD:
        jr__meta_put_str(out, op->stream);
        jr__buf_bytes(out, cfg.data, cfg.len);
        jr__buf_u8(out, op->action);
        jr__buf_varint(out, op->npeers);
        for (size_t i = 0; i < op->npeers; i++) put_span(out, r.peers[i]);
        jr__buf_varint(out, op->created_ns);
        break;
    case JR__META_CONSUMER_DELETE:
        jr__meta_put_str(out, op->stream);
        jr__meta_put_str(out, op->consumer);
        break;
    case JR__META_PEER_MOVE:
        jr__meta_put_str(out, op->stream);
        put_span(out, r.consumer);
        jr__buf_u8(out, op->action);
        put_span(out, r.peer);
        jr__buf_varint(out, op->npeers);
        for (size_t i = 0; i < op->npeers; i++) put_span(out, r.peers[i]);
        break;
    default: /* STREAM_DELETE */
        jr__meta_put_str(out, op->stream);
    }
    jr__buf_free(&cfg);
    if (!out->err) jr__buf_u64(out, jr__xxh3(out->data + start, out->len - start));
    if (out->err) {
        out->len = start;
        return out->err;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Decoding
 */
static span rd_span(jr__rd *r, size_t max)
{
    span s;
    s.p = jr__meta_rd_str(r, &s.n, max);
    return s;
}

/* Walks SERVER_REMOVE's re-placements (r->name read): checks order, names and counts, and
 * sizes their decoded copy. 0 or JR_ECORRUPT. */
static int parse_replace(jr__rd *rd, raw *r)
{
    r->nrep = jr__meta_rd_count(rd, 3, SIZE_MAX);
    r->rep = *rd;
    span prev = {NULL, 0};
    for (size_t i = 0; i < r->nrep && !rd->err; i++) {
        span st = rd_span(rd, JR_STREAM_NAME_MAX);
        size_t np = jr__meta_rd_count(rd, 2, JR_MAX_REPLICAS);
        span pv[JR_MAX_REPLICAS];
        for (size_t k = 0; k < np && !rd->err; k++) pv[k] = rd_span(rd, JR__META_NAME_MAX);
        if (rd->err) break;
        if (np == 0 || st.n == 0 || !names_ok(pv, np)) return JR_ECORRUPT;
        for (size_t k = 0; k < np; k++)
            if (span_eq(pv[k], r->name)) return JR_ECORRUPT;
        if (prev.p) {
            size_t m = prev.n < st.n ? prev.n : st.n;
            int c = memcmp(prev.p, st.p, m);
            if (c > 0 || (c == 0 && prev.n >= st.n)) return JR_ECORRUPT; /* ascending, distinct */
        }
        prev = st;
        r->rep_peers += np;
        r->rep_bytes += st.n + 1;
        for (size_t k = 0; k < np; k++) r->rep_bytes += pv[k].n + 1;
    }
    return rd->err ? JR_ECORRUPT : 0;
}

/* Parses the body after version and type; validates names and lists. 0 or JR_ECORRUPT. */
static int parse(jr__rd *rd, raw *r)
{
    r->request_id = jr__rd_varint(rd);
    r->origin = rd_span(rd, JR__META_NAME_MAX);
    switch (r->type) {
    case JR__META_SERVER_REMOVE:
        r->name = rd_span(rd, JR__META_NAME_MAX);
        if (rd->err || !jr__meta_name_ok(r->name.p, r->name.n) || parse_replace(rd, r))
            return JR_ECORRUPT;
        break;
    case JR__META_SERVER_DRAIN:
        r->name = rd_span(rd, JR__META_NAME_MAX);
        r->action = jr__rd_u8(rd);
        if (rd->err || !jr__meta_name_ok(r->name.p, r->name.n) || r->action > JR__META_DRAIN_START)
            return JR_ECORRUPT;
        break;
    case JR__META_SERVER_JOIN:
    case JR__META_SERVER_INFO:
        r->name = rd_span(rd, JR__META_NAME_MAX);
        r->cluster = rd_span(rd, JR__META_NAME_MAX);
        r->ntags = jr__meta_rd_count(rd, 2, JR__META_MAX_TAGS);
        for (size_t i = 0; i < r->ntags && !rd->err; i++)
            r->tags[i] = rd_span(rd, JR__META_NAME_MAX);
        r->capacity = jr__rd_varint(rd);
        r->max_assets = jr__rd_varint(rd);
        break;
    case JR__META_STREAM_ADD:
    case JR__META_STREAM_UPDATE:
        r->cfg = jr__rd_bytes(rd, &r->cfglen, SIZE_MAX);
        r->npeers = jr__meta_rd_count(rd, 2, JR_MAX_REPLICAS);
        for (size_t i = 0; i < r->npeers && !rd->err; i++)
            r->peers[i] = rd_span(rd, JR__META_NAME_MAX);
        if (r->version == 2) {
            r->created_ns = jr__rd_varint(rd);
            if (r->created_ns == 0) jr__rd_fail(rd); /* version 1 says "none" */
        }
        break;
    case JR__META_STREAM_CONVERGED:
        r->stream = rd_span(rd, JR_STREAM_NAME_MAX);
        r->group = jr__rd_varint(rd);
        r->peers_at = jr__rd_varint(rd);
        r->term = jr__rd_varint(rd);
        r->commit_term = jr__rd_varint(rd);
        r->commit = jr__rd_varint(rd);
        if (r->group == 0 || r->peers_at == 0 || r->commit_term > r->term) jr__rd_fail(rd);
        break;
    case JR__META_CONSUMER_ADD:
        r->stream = rd_span(rd, JR_STREAM_NAME_MAX);
        r->cfg = jr__rd_bytes(rd, &r->cfglen, SIZE_MAX);
        r->action = jr__rd_u8(rd);
        if (r->action > JR__META_CONSUMER_PAUSE) jr__rd_fail(rd);
        r->npeers = jr__meta_rd_count(rd, 2, JR_MAX_REPLICAS);
        for (size_t i = 0; i < r->npeers && !rd->err; i++)
            r->peers[i] = rd_span(rd, JR__META_NAME_MAX);
        r->created_ns = jr__rd_varint(rd);
        break;
    case JR__META_CONSUMER_DELETE:
        r->stream = rd_span(rd, JR_STREAM_NAME_MAX);
        r->consumer = rd_span(rd, JR_CONSUMER_NAME_MAX);
        break;
    case JR__META_PEER_MOVE:
        r->stream = rd_span(rd, JR_STREAM_NAME_MAX);
        r->consumer = rd_span(rd, JR_CONSUMER_NAME_MAX);
        r->action = jr__rd_u8(rd);
        r->peer = rd_span(rd, JR__META_NAME_MAX);
        r->npeers = jr__meta_rd_count(rd, 2, JR_MAX_REPLICAS);
        for (size_t i = 0; i < r->npeers && !rd->err; i++)
            r->peers[i] = rd_span(rd, JR__META_NAME_MAX);
        if (rd->err) break;
        if (r->action == JR__META_MOVE_EVACUATE) {
            if (!jr__meta_name_ok(r->peer.p, r->peer.n)) jr__rd_fail(rd);
        } else if (r->action != JR__META_MOVE_CANCEL || r->peer.n || r->npeers) {
            jr__rd_fail(rd);
        }
        break;
    default: /* STREAM_DELETE */
        r->stream = rd_span(rd, JR_STREAM_NAME_MAX);
    }
    if (rd->err || jr__rd_left(rd) != 0) return JR_ECORRUPT;
    if ((r->request_id == 0) != (r->origin.n == 0)) return JR_ECORRUPT;
    if (r->origin.n && !jr__meta_name_ok(r->origin.p, r->origin.n)) return JR_ECORRUPT;
    if (r->type == JR__META_SERVER_INFO || r->type == JR__META_SERVER_JOIN) {
        if (!jr__meta_name_ok(r->name.p, r->name.n) ||
            !jr__meta_name_ok(r->cluster.p, r->cluster.n) || !names_ok(r->tags, r->ntags) ||
            r->max_assets > UINT32_MAX)
            return JR_ECORRUPT;
    }
    if (!names_ok(r->peers, r->npeers)) return JR_ECORRUPT;
    return 0;
}

/* Copies s into the string area at *at; returns the copy. */
static const char *copy_span(char **at, span s)
{
    char *d = *at;
    if (s.n) memcpy(d, s.p, s.n);
    d[s.n] = '\0';
    *at = d + s.n + 1;
    return d;
}

/* Makes the op's one block: [re-placements | pointer arrays | strings]. */
static int build(const raw *r, const jr_allocator *a, jr__meta_op *op)
{
    int info = r->type == JR__META_SERVER_INFO || r->type == JR__META_SERVER_JOIN;
    const span *list = info ? r->tags : r->peers;
    size_t nlist = info ? r->ntags : r->npeers;
    size_t head = r->nrep * sizeof(jr__meta_replace) + (nlist + r->rep_peers) * sizeof(char *);
    size_t bytes = head + r->origin.n + 1 + r->name.n + 1 + r->cluster.n + 1 + r->stream.n + 1 +
                   r->consumer.n + 1 + r->peer.n + 1 + r->rep_bytes;
    for (size_t i = 0; i < nlist; i++) bytes += list[i].n + 1;
    char *block = jr__malloc(a, bytes);
    if (!block) return JR_ENOMEM;
    jr__meta_replace *rep = (jr__meta_replace *)(void *)block;
    const char **ptrs = (const char **)(void *)(block + r->nrep * sizeof(jr__meta_replace));
    char *at = block + head;
    for (size_t i = 0; i < nlist; i++) ptrs[i] = copy_span(&at, list[i]);
    if (r->type == JR__META_SERVER_REMOVE) { /* parse_replace checked every read */
        jr__rd rd = r->rep;
        const char **pp = ptrs + nlist;
        for (size_t i = 0; i < r->nrep; i++) {
            rep[i].stream = copy_span(&at, rd_span(&rd, JR_STREAM_NAME_MAX));
            rep[i].npeers = jr__meta_rd_count(&rd, 2, JR_MAX_REPLICAS);
            rep[i].peers = pp;
            for (size_t k = 0; k < rep[i].npeers; k++)
                *pp++ = copy_span(&at, rd_span(&rd, JR__META_NAME_MAX));
        }
        op->replace = r->nrep ? rep : NULL;
        op->nreplace = r->nrep;
    }
    op->block = block;
    op->alloc = a;
    op->type = r->type;
    op->request_id = r->request_id;
    op->origin = r->origin.n ? copy_span(&at, r->origin) : NULL;
    switch (r->type) {
    case JR__META_SERVER_REMOVE:
        op->server.name = copy_span(&at, r->name);
        break;
    case JR__META_SERVER_DRAIN:
        op->server.name = copy_span(&at, r->name);
        op->action = r->action;
        break;
    case JR__META_SERVER_JOIN:
    case JR__META_SERVER_INFO:
        op->server.name = copy_span(&at, r->name);
        op->server.cluster = copy_span(&at, r->cluster);
        op->server.tags = nlist ? ptrs : NULL;
        op->server.ntags = nlist;
        op->server.capacity_bytes = r->capacity;
        op->server.max_assets = (uint32_t)r->max_assets;
        break;
    case JR__META_STREAM_ADD:
    case JR__META_STREAM_UPDATE:
        op->peers = nlist ? ptrs : NULL;
        op->npeers = nlist;
        op->created_ns = r->created_ns;
        break;
    case JR__META_STREAM_CONVERGED:
        op->stream = copy_span(&at, r->stream);
        op->group = r->group;
        op->peers_at = r->peers_at;
        op->term = r->term;
        op->commit_term = r->commit_term;
        op->commit = r->commit;
        break;
    case JR__META_CONSUMER_ADD:
        op->stream = copy_span(&at, r->stream);
        op->action = r->action;
        op->peers = nlist ? ptrs : NULL;
        op->npeers = nlist;
        op->created_ns = r->created_ns;
        break;
    case JR__META_CONSUMER_DELETE:
        op->stream = copy_span(&at, r->stream);
        op->consumer = copy_span(&at, r->consumer);
        break;
    case JR__META_PEER_MOVE:
        op->stream = copy_span(&at, r->stream);
        op->consumer = r->consumer.n ? copy_span(&at, r->consumer) : NULL;
        op->action = r->action;
        op->peer = r->peer.n ? copy_span(&at, r->peer) : NULL;
        op->peers = nlist ? ptrs : NULL;
        op->npeers = nlist;
        break;
    default:
        op->stream = copy_span(&at, r->stream);
    }
    return 0;
}

int jr__meta_op_decode(const void *data, size_t len, const jr_allocator *a, jr__meta_op *op)
{
    memset(op, 0, sizeof *op);
    const uint8_t *p = data;
    if (!p || len < 2 + 8) return JR_ECORRUPT;
    if (jr__xxh3(p, len - 8) != jr__get_u64(p + len - 8)) return JR_ECORRUPT;
    if (p[0] < 1 || p[0] > JR__META_OP_VERSION) return JR_EVERSION;
    if (p[1] < 1 || p[1] > JR__META_OP_MAX) return JR_EVERSION;
    /* version 2 exists for a STREAM_ADD's creation time only: anything else is written as 1 */
    if (p[0] == 2 && p[1] != JR__META_STREAM_ADD) return JR_ECORRUPT;
    raw r;
    memset(&r, 0, sizeof r);
    r.version = p[0];
    r.type = p[1];
    jr__rd rd;
    jr__rd_init(&rd, p + 2, len - 2 - 8);
    int rc = parse(&rd, &r);
    if (rc) return rc;
    if ((rc = build(&r, a, op))) return rc;
    if ((r.type == JR__META_STREAM_DELETE || r.type == JR__META_STREAM_CONVERGED ||
         r.type == JR__META_CONSUMER_ADD || r.type == JR__META_CONSUMER_DELETE) &&
        !stream_name_ok(op->stream)) {
        jr__meta_op_free(op);
        return JR_ECORRUPT;
    }
    if (r.type == JR__META_PEER_MOVE &&
        (!stream_name_ok(op->stream) || (op->consumer && !consumer_name_ok(op->consumer)))) {
        jr__meta_op_free(op);
        return JR_ECORRUPT;
    }
    if (r.type == JR__META_CONSUMER_DELETE && !consumer_name_ok(op->consumer)) {
        jr__meta_op_free(op);
        return JR_ECORRUPT;
    }
    for (size_t i = 0; i < op->nreplace; i++) {
        if (!stream_name_ok(op->replace[i].stream)) {
            jr__meta_op_free(op);
            return JR_ECORRUPT;
        }
    }
    if (r.type == JR__META_STREAM_ADD || r.type == JR__META_STREAM_UPDATE) {
        rc = jr__stream_config_decode(r.cfg, r.cfglen, a, &op->cfg);
        if (rc) {
            jr__meta_op_free(op);
            return rc;
        }
        op->config = &op->cfg->c;
    }
    if (r.type == JR__META_CONSUMER_ADD) {
        rc = jr__consumer_config_decode(r.cfg, r.cfglen, a, &op->ccfg);
        if (rc) {
            jr__meta_op_free(op);
            return rc;
        }
        op->consumer_config = &op->ccfg->c;
    }
    return 0;
}

void jr__meta_op_free(jr__meta_op *op)
{
    if (!op) return;
    jr__stream_cfg_free(op->cfg);
    jr__consumer_cfg_free(op->ccfg);
    if (op->block) jr__free(op->alloc, op->block);
    memset(op, 0, sizeof *op);
}
