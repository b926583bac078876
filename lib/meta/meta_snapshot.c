/*
 * meta_snapshot — the whole meta state as one canonical byte string (format in meta_state.h),
 * and its strict restore.
 *
 * The snapshot is what a lagging server installs instead of replaying the meta log, so restore
 * trusts nothing: it rebuilds a fresh state from the bytes, checking every invariant the state
 * keeps (order, names, configs, peer counts, group ids, indexes, non-overlapping subjects), and
 * swaps it in only when all of it holds.
 */
#include <string.h>

#include "meta/meta_state.h"
#include "util/checksum.h"

static const uint8_t magic[4] = {'J', 'R', 'M', 'S'};

/* Smallest encodings, which bound the counts before anything is decoded. */
#define SERVER_MIN 7 /* name, cluster (2 each), tag count, capacity, max_assets */
#define STREAM_MIN                                                                                 \
    13 /* config length + config (>= 9), peer count, group, created, updated                       \
          (version 1; later versions only add fields) */

#define CONSUMER_MIN                                                                               \
    10 /* config length + config (>= 3), peer count, group, created, updated,                      \
         created_ns, peers_at, converged_at */

static void put_server(jr__buf *b, const jr__meta_server *s)
{
    jr__meta_put_str(b, s->name);
    jr__meta_put_str(b, s->cluster);
    jr__buf_varint(b, s->ntags);
    for (size_t i = 0; i < s->ntags; i++) jr__meta_put_str(b, s->tags[i]);
    jr__buf_varint(b, s->capacity_bytes);
    jr__buf_varint(b, s->max_assets);
}

int jr__meta_snapshot(const jr__meta_state *st, jr__buf *out)
{
    size_t start = out->len;
    jr__buf_put(out, magic, sizeof magic);
    jr__buf_u8(out, JR__META_SNAP_VERSION);
    jr__buf_varint(out, st->applied);
    jr__buf_varint(out, st->next_group);
    jr__buf_varint(out, st->nservers);
    for (size_t i = 0; i < st->nservers; i++) put_server(out, st->servers[i]);
    jr__buf_varint(out, st->nstreams);
    jr__buf cfg;
    jr__buf_init(&cfg, out->alloc);
    for (size_t i = 0; i < st->nstreams && !out->err; i++) {
        const jr__meta_stream *s = st->streams[i];
        jr__buf_reset(&cfg);
        if (jr__stream_config_encode(&s->cfg->c, &cfg)) {
            out->err = cfg.err ? cfg.err : JR_ENOMEM;
            break;
        }
        jr__buf_bytes(out, cfg.data, cfg.len);
        jr__buf_varint(out, s->npeers);
        for (size_t k = 0; k < s->npeers; k++) jr__meta_put_str(out, s->peers[k]);
        jr__buf_varint(out, s->group);
        jr__buf_varint(out, s->created);
        jr__buf_varint(out, s->updated);
        jr__buf_varint(out, s->created_ns);
        jr__buf_varint(out, s->peers_at);
        jr__buf_varint(out, s->converged_at);
        jr__buf_varint(out, s->floor_term);
        jr__buf_varint(out, s->floor_commit_term);
        jr__buf_varint(out, s->floor_commit);
        jr__buf_varint(out, s->nconsumers);
        for (size_t j = 0; j < s->nconsumers && !out->err; j++) {
            const jr__meta_consumer *c = s->consumers[j];
            jr__buf_reset(&cfg);
            if (jr__consumer_config_encode(&c->cfg->c, &cfg)) {
                out->err = cfg.err ? cfg.err : JR_ENOMEM;
                break;
            }
            jr__buf_bytes(out, cfg.data, cfg.len);
            jr__buf_varint(out, c->npeers);
            for (size_t k = 0; k < c->npeers; k++) jr__meta_put_str(out, c->peers[k]);
            jr__buf_varint(out, c->group);
            jr__buf_varint(out, c->created);
            jr__buf_varint(out, c->updated);
            jr__buf_varint(out, c->created_ns);
            jr__buf_varint(out, c->peers_at);
            jr__buf_varint(out, c->converged_at);
        }
    }
    /* version 5: the servers removed for good (meta_servers.c) */
    jr__buf_varint(out, st->nremoved);
    for (size_t i = 0; i < st->nremoved; i++) jr__meta_put_str(out, st->removed[i]);
    /* version 6: the origins of the peer changes in progress, in (stream, consumer) order */
    size_t norigins = 0;
    for (size_t i = 0; i < st->nstreams; i++) {
        const jr__meta_stream *s = st->streams[i];
        norigins += s->origin != NULL;
        for (size_t j = 0; j < s->nconsumers; j++) norigins += s->consumers[j]->origin != NULL;
    }
    jr__buf_varint(out, norigins);
    for (size_t i = 0; i < st->nstreams && !out->err; i++) {
        const jr__meta_stream *s = st->streams[i];
        if (s->origin) {
            jr__buf_reset(&cfg);
            if (jr__stream_config_encode(&s->origin->cfg->c, &cfg)) {
                out->err = cfg.err ? cfg.err : JR_ENOMEM;
                break;
            }
            jr__meta_put_str(out, s->name);
            jr__meta_put_str(out, "");
            jr__buf_bytes(out, cfg.data, cfg.len);
            jr__buf_varint(out, s->origin->npeers);
            for (size_t k = 0; k < s->origin->npeers; k++)
                jr__meta_put_str(out, s->origin->peers[k]);
        }
        for (size_t j = 0; j < s->nconsumers; j++) {
            const jr__meta_consumer *c = s->consumers[j];
            if (!c->origin) continue;
            jr__meta_put_str(out, s->name);
            jr__meta_put_str(out, c->name);
            jr__buf_varint(out, c->origin->npeers);
            for (size_t k = 0; k < c->origin->npeers; k++)
                jr__meta_put_str(out, c->origin->peers[k]);
        }
    }
    jr__buf_free(&cfg);
    /* version 7: the servers draining (jr_server_evacuate), in name order */
    size_t ndrain = 0;
    for (size_t i = 0; i < st->nservers; i++) ndrain += st->servers[i]->draining != 0;
    jr__buf_varint(out, ndrain);
    for (size_t i = 0; i < st->nservers; i++)
        if (st->servers[i]->draining) jr__meta_put_str(out, st->servers[i]->name);
    if (!out->err) jr__buf_u64(out, jr__xxh3(out->data + start, out->len - start));
    return out->err;
}

/* ---------------------------------------------------------------------------------------------
 * Restore
 */

/* Bytewise order of two names (what strcmp gives for strings without NUL bytes). */
static int name_cmp(jr__meta_name a, jr__meta_name b)
{
    size_t n = a.n < b.n ? a.n : b.n;
    int c = n ? memcmp(a.p, b.p, n) : 0;
    if (c) return c;
    return (a.n > b.n) - (a.n < b.n);
}

static jr__meta_name rd_name(jr__rd *r)
{
    jr__meta_name v;
    v.p = jr__meta_rd_str(r, &v.n, JR__META_NAME_MAX);
    if (v.p && !jr__meta_name_ok(v.p, v.n)) jr__rd_fail(r);
    return v;
}

/* Reads up to max distinct valid names. */
static size_t rd_names(jr__rd *r, jr__meta_name *v, size_t max)
{
    size_t n = jr__meta_rd_count(r, 2, max);
    for (size_t i = 0; i < n && !r->err; i++) {
        v[i] = rd_name(r);
        for (size_t j = 0; j < i && !r->err; j++)
            if (name_cmp(v[i], v[j]) == 0) jr__rd_fail(r);
    }
    return r->err ? 0 : n;
}

static int read_servers(jr__rd *r, jr__meta_state *st)
{
    size_t n = jr__meta_rd_count(r, SERVER_MIN, SIZE_MAX);
    for (size_t i = 0; i < n; i++) {
        jr__meta_name name = rd_name(r), cluster = rd_name(r);
        jr__meta_name tags[JR__META_MAX_TAGS];
        size_t ntags = rd_names(r, tags, JR__META_MAX_TAGS);
        uint64_t capacity = jr__rd_varint(r);
        uint64_t max_assets = jr__rd_varint(r);
        if (r->err || max_assets > UINT32_MAX) return JR_ECORRUPT;
        jr__meta_server *s = jr__meta_server_new(st->alloc, name, cluster, tags, ntags, capacity,
                                                 (uint32_t)max_assets);
        if (!s) return JR_ENOMEM;
        int rc = jr__meta_state_append_server(st, s);
        if (rc) {
            jr__meta_server_free(st->alloc, s);
            return rc == JR_ENOMEM ? rc : JR_ECORRUPT;
        }
    }
    return r->err ? JR_ECORRUPT : 0;
}

/* One consumer of stream s (version 4). */
static int read_consumer(jr__rd *r, jr__meta_state *st, jr__meta_stream *s)
{
    size_t cfglen;
    const uint8_t *cfgp = jr__rd_bytes(r, &cfglen, SIZE_MAX);
    jr__meta_name peers[JR_MAX_REPLICAS];
    size_t npeers = rd_names(r, peers, JR_MAX_REPLICAS);
    uint64_t group = jr__rd_varint(r);
    uint64_t created = jr__rd_varint(r);
    uint64_t updated = jr__rd_varint(r);
    uint64_t created_ns = jr__rd_varint(r);
    uint64_t peers_at = jr__rd_varint(r);
    uint64_t converged_at = jr__rd_varint(r);
    if (r->err || created == 0 || created > converged_at || converged_at > peers_at ||
        peers_at > updated || updated > st->applied || npeers == 0)
        return JR_ECORRUPT;
    for (size_t i = 0; i < npeers; i++) {
        char name[JR__META_NAME_MAX + 1];
        memcpy(name, peers[i].p, peers[i].n);
        name[peers[i].n] = '\0';
        if (!jr__meta_stream_has_peer(s, name)) return JR_ECORRUPT;
    }
    jr__consumer_cfg *cfg;
    int rc = jr__consumer_config_decode(cfgp, cfglen, st->alloc, &cfg);
    if (rc) return rc;
    if (!cfg->c.name || npeers != (size_t)jr__meta_consumer_replicas(s, &cfg->c)) {
        jr__consumer_cfg_free(cfg);
        return JR_ECORRUPT;
    }
    jr__meta_consumer *c = jr__meta_consumer_new(st->alloc, cfg, peers, npeers);
    if (!c) {
        jr__consumer_cfg_free(cfg);
        return JR_ENOMEM;
    }
    c->group = group;
    c->created = created;
    c->updated = updated;
    c->created_ns = created_ns;
    c->peers_at = peers_at;
    c->converged_at = converged_at;
    rc = jr__meta_state_append_consumer(st, s, c);
    if (rc) {
        jr__meta_consumer_free(st->alloc, c);
        return rc == JR_ENOMEM ? rc : JR_ECORRUPT;
    }
    return 0;
}

static int read_stream(jr__rd *r, jr__meta_state *st, int version)
{
    size_t cfglen;
    const uint8_t *cfgp = jr__rd_bytes(r, &cfglen, SIZE_MAX);
    jr__meta_name peers[JR_MAX_REPLICAS];
    size_t npeers = rd_names(r, peers, JR_MAX_REPLICAS);
    uint64_t group = jr__rd_varint(r);
    uint64_t created = jr__rd_varint(r);
    uint64_t updated = jr__rd_varint(r);
    uint64_t created_ns = version >= 2 ? jr__rd_varint(r) : 0;
    /* before version 3 peer sets never changed: the original one, converged */
    uint64_t peers_at = version >= 3 ? jr__rd_varint(r) : created;
    uint64_t converged_at = version >= 3 ? jr__rd_varint(r) : created;
    uint64_t floor_term = version >= 3 ? jr__rd_varint(r) : 0;
    uint64_t floor_commit_term = version >= 3 ? jr__rd_varint(r) : 0;
    uint64_t floor_commit = version >= 3 ? jr__rd_varint(r) : 0;
    if (r->err || floor_commit_term > floor_term) return JR_ECORRUPT;
    if (group == 0 || group >= st->next_group || created == 0 || created > converged_at ||
        converged_at > peers_at || peers_at > updated || updated > st->applied)
        return JR_ECORRUPT;
    jr__stream_cfg *cfg;
    int rc = jr__stream_config_decode(cfgp, cfglen, st->alloc, &cfg);
    if (rc) return rc;
    if (npeers != (size_t)cfg->c.replicas) {
        jr__stream_cfg_free(cfg);
        return JR_ECORRUPT;
    }
    jr__meta_stream *s = jr__meta_stream_new(st->alloc, cfg, peers, npeers);
    if (!s) {
        jr__stream_cfg_free(cfg);
        return JR_ENOMEM;
    }
    s->group = group;
    s->created = created;
    s->updated = updated;
    s->created_ns = created_ns;
    s->peers_at = peers_at;
    s->converged_at = converged_at;
    s->floor_term = floor_term;
    s->floor_commit_term = floor_commit_term;
    s->floor_commit = floor_commit;
    rc = jr__meta_state_append_stream(st, s);
    if (rc) {
        jr__meta_stream_free(st->alloc, s);
        return rc == JR_ENOMEM ? rc : JR_ECORRUPT;
    }
    if (version < 4) return 0; /* versions 4 and later have consumers */
    size_t nc = jr__meta_rd_count(r, CONSUMER_MIN, SIZE_MAX);
    if (r->err) return JR_ECORRUPT;
    for (size_t i = 0; i < nc; i++) {
        rc = read_consumer(r, st, s);
        if (rc) return rc;
    }
    return 0;
}

/* The removed servers (version 5): ascending, valid, none of them a server of the state. */
static int read_removed(jr__rd *r, jr__meta_state *st)
{
    size_t n = jr__meta_rd_count(r, 2, SIZE_MAX);
    for (size_t i = 0; i < n && !r->err; i++) {
        jr__meta_name v = rd_name(r);
        if (r->err) break;
        char name[JR__META_NAME_MAX + 1];
        memcpy(name, v.p, v.n);
        name[v.n] = '\0';
        if (jr__meta_server_find(st, name)) return JR_ECORRUPT;
        int rc = jr__meta_state_append_removed(st, v.p, v.n);
        if (rc) return rc == JR_ENOMEM ? rc : JR_ECORRUPT;
    }
    return r->err ? JR_ECORRUPT : 0;
}

/* The origins section of version 6 (meta_state.h): each names a stream (and consumer) mid
 * peer change that has no origin yet, in strictly ascending (stream, consumer) order. */
static int read_origins(jr__rd *r, jr__meta_state *st)
{
    size_t n = jr__meta_rd_count(r, 4, SIZE_MAX);
    jr__meta_name prev_s = {NULL, 0}, prev_c = {NULL, 0};
    for (size_t i = 0; i < n; i++) {
        jr__meta_name sn, cn;
        sn.p = jr__meta_rd_str(r, &sn.n, JR_STREAM_NAME_MAX);
        cn.p = jr__meta_rd_str(r, &cn.n, JR_CONSUMER_NAME_MAX);
        if (r->err || sn.n == 0) return JR_ECORRUPT;
        if (i &&
            (name_cmp(sn, prev_s) < 0 || (name_cmp(sn, prev_s) == 0 && name_cmp(cn, prev_c) <= 0)))
            return JR_ECORRUPT;
        prev_s = sn;
        prev_c = cn;
        char sname[JR_STREAM_NAME_MAX + 1], cname[JR_CONSUMER_NAME_MAX + 1];
        memcpy(sname, sn.p, sn.n);
        sname[sn.n] = '\0';
        memcpy(cname, cn.p, cn.n);
        cname[cn.n] = '\0';
        jr__meta_stream *s = (jr__meta_stream *)jr__meta_stream_find(st, sname);
        if (!s) return JR_ECORRUPT;
        if (cn.n == 0) {
            size_t cfglen;
            const uint8_t *cfgp = jr__rd_bytes(r, &cfglen, SIZE_MAX);
            jr__meta_name peers[JR_MAX_REPLICAS];
            size_t npeers = rd_names(r, peers, JR_MAX_REPLICAS);
            if (r->err || !jr__meta_stream_busy(s) || s->origin) return JR_ECORRUPT;
            jr__stream_cfg *cfg;
            int rc = jr__stream_config_decode(cfgp, cfglen, st->alloc, &cfg);
            if (rc) return rc == JR_ENOMEM ? rc : JR_ECORRUPT;
            if (npeers != (size_t)cfg->c.replicas || strcmp(cfg->c.name, s->name) != 0) {
                jr__stream_cfg_free(cfg);
                return JR_ECORRUPT;
            }
            const char *pv[JR_MAX_REPLICAS];
            char names[JR_MAX_REPLICAS][JR__META_NAME_MAX + 1];
            for (size_t k = 0; k < npeers; k++) {
                memcpy(names[k], peers[k].p, peers[k].n);
                names[k][peers[k].n] = '\0';
                pv[k] = names[k];
            }
            s->origin = jr__meta_asgn_new(st->alloc, cfg, pv, npeers);
            if (!s->origin) {
                jr__stream_cfg_free(cfg);
                return JR_ENOMEM;
            }
            continue;
        }
        jr__meta_consumer *c = (jr__meta_consumer *)jr__meta_consumer_find(s, cname);
        jr__meta_name peers[JR_MAX_REPLICAS];
        size_t npeers = rd_names(r, peers, JR_MAX_REPLICAS);
        if (r->err || !c || !jr__meta_consumer_busy(c) || c->origin || npeers == 0)
            return JR_ECORRUPT;
        const char *pv[JR_MAX_REPLICAS];
        char names[JR_MAX_REPLICAS][JR__META_NAME_MAX + 1];
        for (size_t k = 0; k < npeers; k++) {
            memcpy(names[k], peers[k].p, peers[k].n);
            names[k][peers[k].n] = '\0';
            pv[k] = names[k];
        }
        c->origin = jr__meta_casgn_new(st->alloc, jr__consumer_cfg_ref(c->cfg), pv, npeers);
        if (!c->origin) {
            jr__consumer_cfg_free(c->cfg);
            return JR_ENOMEM;
        }
    }
    return r->err ? JR_ECORRUPT : 0;
}

/* The draining servers (version 7): strictly ascending, each a server of the state. */
static int read_draining(jr__rd *r, jr__meta_state *st)
{
    size_t n = jr__meta_rd_count(r, 2, SIZE_MAX);
    jr__meta_name prev = {NULL, 0};
    for (size_t i = 0; i < n && !r->err; i++) {
        jr__meta_name v = rd_name(r);
        if (r->err) break;
        if (i && name_cmp(prev, v) >= 0) return JR_ECORRUPT;
        prev = v;
        char name[JR__META_NAME_MAX + 1];
        memcpy(name, v.p, v.n);
        name[v.n] = '\0';
        jr__meta_server *s = (jr__meta_server *)jr__meta_server_find(st, name);
        if (!s) return JR_ECORRUPT;
        s->draining = 1;
    }
    return r->err ? JR_ECORRUPT : 0;
}

int jr__meta_restore(jr__meta_state *st, const void *data, size_t len)
{
    const uint8_t *p = data;
    if (!p || len < sizeof magic + 1 + 8) return JR_ECORRUPT;
    if (jr__xxh3(p, len - 8) != jr__get_u64(p + len - 8)) return JR_ECORRUPT;
    if (memcmp(p, magic, sizeof magic) != 0) return JR_ECORRUPT;
    int version = p[sizeof magic];
    if (version < 1 || version > JR__META_SNAP_VERSION) return JR_EVERSION;

    jr__meta_state tmp;
    jr__meta_state_init(&tmp, st->alloc, 1);
    jr__rd r;
    jr__rd_init(&r, p + sizeof magic + 1, len - sizeof magic - 1 - 8);
    tmp.applied = jr__rd_varint(&r);
    tmp.next_group = jr__rd_varint(&r);
    int rc = (r.err || tmp.next_group == 0) ? JR_ECORRUPT : read_servers(&r, &tmp);
    if (!rc) {
        size_t n = jr__meta_rd_count(&r, STREAM_MIN, SIZE_MAX);
        rc = r.err ? JR_ECORRUPT : 0;
        for (size_t i = 0; i < n && !rc; i++) rc = read_stream(&r, &tmp, version);
    }
    if (!rc && version >= 5) rc = read_removed(&r, &tmp);
    if (!rc && version >= 6) rc = read_origins(&r, &tmp);
    if (!rc && version >= 7) rc = read_draining(&r, &tmp);
    if (!rc && jr__rd_left(&r) != 0) rc = JR_ECORRUPT; /* trailing bytes */
    if (rc) {
        jr__meta_state_free(&tmp);
        return rc;
    }
    jr__meta_state_free(st);
    *st = tmp;
    return 0;
}
