/*
 * meta_state — apply, check, lookups, placement view and desired-state diff of the meta
 * group's state (meta_state.h). Snapshots are in meta_snapshot.c.
 *
 * Every mutation first decides (pure checks, identical on every replica), then allocates what
 * it needs, then commits with steps that cannot fail; an allocation failure unwinds to the
 * state before the op, so JR_ENOMEM never leaves half an op applied.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_state.h"
#include "meta/meta_move.h"
#include "util/subject.h"
#include "util/alloc.h"

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
refuse(jr__meta_result *res, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->msg, sizeof res->msg, fmt, ap);
    va_end(ap);
    res->status = status;
    return status;
}

/* ---------------------------------------------------------------------------------------------
 * Servers and streams as objects
 */
static char *put(char **at, const char *p, size_t n)
{
    char *d = *at;
    if (n) memcpy(d, p, n);
    d[n] = '\0';
    *at = d + n + 1;
    return d;
}

static size_t align_up(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

jr__meta_server *jr__meta_server_new(const jr_allocator *a, jr__meta_name name,
                                     jr__meta_name cluster, const jr__meta_name *tags, size_t ntags,
                                     uint64_t capacity, uint32_t max_assets)
{
    size_t head = align_up(sizeof(jr__meta_server));
    size_t bytes = head + ntags * sizeof(char *) + name.n + 1 + cluster.n + 1;
    for (size_t i = 0; i < ntags; i++) bytes += tags[i].n + 1;
    char *block = jr__malloc(a, bytes);
    if (!block) return NULL;
    jr__meta_server *s = (jr__meta_server *)(void *)block;
    const char **tv = (const char **)(void *)(block + head);
    char *at = block + head + ntags * sizeof(char *);
    s->name = put(&at, name.p, name.n);
    s->cluster = put(&at, cluster.p, cluster.n);
    for (size_t i = 0; i < ntags; i++) tv[i] = put(&at, tags[i].p, tags[i].n);
    s->tags = ntags ? tv : NULL;
    s->ntags = ntags;
    s->capacity_bytes = capacity;
    s->max_assets = max_assets;
    s->assets = s->used_bytes = 0;
    s->draining = 0;
    return s;
}

void jr__meta_server_free(const jr_allocator *a, jr__meta_server *s)
{
    jr__free(a, s);
}

void *jr__meta_peers_block(const jr_allocator *a, size_t head, const jr__meta_name *peers, size_t n,
                           const char ***pv)
{
    head = align_up(head);
    size_t bytes = head + n * sizeof(char *);
    for (size_t i = 0; i < n; i++) bytes += peers[i].n + 1;
    char *block = jr__malloc(a, bytes);
    if (!block) return NULL;
    const char **v = (const char **)(void *)(block + head);
    char *at = block + head + n * sizeof(char *);
    for (size_t i = 0; i < n; i++) v[i] = put(&at, peers[i].p, peers[i].n);
    *pv = v;
    return block;
}

/* An assignment version: one block [jr__meta_asgn | peer pointers | strings]; takes cfg. */
static jr__meta_asgn *asgn_new(const jr_allocator *a, jr__stream_cfg *cfg,
                               const jr__meta_name *peers, size_t n)
{
    const char **pv;
    jr__meta_asgn *as = jr__meta_peers_block(a, sizeof(jr__meta_asgn), peers, n, &pv);
    if (!as) return NULL;
    as->refs = 1;
    as->alloc = a;
    as->cfg = cfg;
    as->peers = pv;
    as->npeers = n;
    return as;
}

jr__meta_asgn *jr__meta_asgn_ref(jr__meta_asgn *as)
{
    as->refs++;
    return as;
}

void jr__meta_asgn_put(jr__meta_asgn *as)
{
    if (!as || --as->refs) return;
    jr__stream_cfg_free(as->cfg);
    jr__free(as->alloc, as);
}

/* Points s at as (its config, name and peers), which it takes. */
static void stream_set(jr__meta_stream *s, jr__meta_asgn *as)
{
    s->asgn = as;
    s->cfg = as->cfg;
    s->name = as->cfg->c.name;
    s->peers = as->peers;
    s->npeers = as->npeers;
}

jr__meta_asgn *jr__meta_asgn_new(const jr_allocator *a, jr__stream_cfg *cfg,
                                 const char *const *peers, size_t n)
{
    jr__meta_name names[JR_MAX_REPLICAS];
    if (n > JR_MAX_REPLICAS) return NULL;
    for (size_t i = 0; i < n; i++) names[i] = (jr__meta_name){peers[i], strlen(peers[i])};
    return asgn_new(a, cfg, names, n);
}

jr__meta_stream *jr__meta_stream_new(const jr_allocator *a, jr__stream_cfg *cfg,
                                     const jr__meta_name *peers, size_t npeers)
{
    jr__meta_stream *s = jr__calloc(a, 1, sizeof *s);
    if (!s) return NULL;
    jr__meta_asgn *as = asgn_new(a, cfg, peers, npeers);
    if (!as) {
        jr__free(a, s);
        return NULL;
    }
    stream_set(s, as);
    return s;
}

void jr__meta_stream_free(const jr_allocator *a, jr__meta_stream *s)
{
    if (!s) return;
    jr__meta_asgn_put(s->origin);
    for (size_t i = 0; i < s->nconsumers; i++) jr__meta_consumer_free(a, s->consumers[i]);
    jr__free(a, s->consumers);
    jr__meta_asgn_put(s->asgn);
    jr__free(a, s);
}

/* ---------------------------------------------------------------------------------------------
 * The state
 */
void jr__meta_state_init(jr__meta_state *st, const jr_allocator *a, uint64_t first_group)
{
    memset(st, 0, sizeof *st);
    st->alloc = a;
    jr__map_init(&st->by_group, a);
    jr__map_init(&st->by_cgroup, a);
    jr__subject_index_init(&st->subjects, a);
    st->next_group = first_group ? first_group : 1;
}

void jr__meta_state_free(jr__meta_state *st)
{
    jr__meta_servers_free(st);
    for (size_t i = 0; i < st->nservers; i++) jr__meta_server_free(st->alloc, st->servers[i]);
    for (size_t i = 0; i < st->nstreams; i++) jr__meta_stream_free(st->alloc, st->streams[i]);
    jr__free(st->alloc, st->servers);
    jr__free(st->alloc, st->streams);
    jr__map_free(&st->by_group);
    jr__map_free(&st->by_cgroup);
    jr__subject_index_free(&st->subjects);
    const jr_allocator *a = st->alloc;
    memset(st, 0, sizeof *st);
    st->alloc = a;
}

size_t jr__meta_name_pos(void *const *arr, size_t n, const char *name, int *found)
{
    size_t lo = 0, hi = n;
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(*(const char *const *)arr[mid], name);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t server_pos(const jr__meta_state *st, const char *name, int *found)
{
    return jr__meta_name_pos((void *const *)st->servers, st->nservers, name, found);
}

static size_t stream_pos(const jr__meta_state *st, const char *name, int *found)
{
    return jr__meta_name_pos((void *const *)st->streams, st->nstreams, name, found);
}

const jr__meta_server *jr__meta_server_find(const jr__meta_state *st, const char *name)
{
    int found;
    if (!name) return NULL;
    size_t i = server_pos(st, name, &found);
    return found ? st->servers[i] : NULL;
}

const jr__meta_stream *jr__meta_stream_find(const jr__meta_state *st, const char *name)
{
    int found;
    if (!name) return NULL;
    size_t i = stream_pos(st, name, &found);
    return found ? st->streams[i] : NULL;
}

const jr__meta_stream *jr__meta_stream_by_group(const jr__meta_state *st, uint64_t group)
{
    return group ? jr__map_get(&st->by_group, group) : NULL;
}

const jr__meta_stream *jr__meta_stream_for_subject(const jr__meta_state *st, const char *subject)
{
    return jr__subject_index_lookup(&st->subjects, subject);
}

int jr__meta_stream_has_peer(const jr__meta_stream *s, const char *server)
{
    for (size_t i = 0; i < s->npeers; i++)
        if (strcmp(s->peers[i], server) == 0) return 1;
    return 0;
}

/* Makes room for one more pointer in *arr (capacity *cap). 0 or JR_ENOMEM. */
static int reserve(const jr_allocator *a, void *arrp, size_t n, size_t *cap)
{
    void ***arr = arrp;
    if (n < *cap) return 0;
    size_t ncap = *cap ? *cap * 2 : 16;
    void **p = jr__realloc(a, *arr, ncap * sizeof *p);
    if (!p) return JR_ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

static void insert_at(void *arrp, size_t *n, size_t pos, void *item)
{
    void **arr = *(void ***)arrp;
    memmove(arr + pos + 1, arr + pos, (*n - pos) * sizeof *arr);
    arr[pos] = item;
    (*n)++;
}

static void remove_at(void *arrp, size_t *n, size_t pos)
{
    void **arr = *(void ***)arrp;
    memmove(arr + pos, arr + pos + 1, (*n - pos - 1) * sizeof *arr);
    (*n)--;
}

int jr__meta_state_append_server(jr__meta_state *st, jr__meta_server *s)
{
    if (st->nservers && strcmp(st->servers[st->nservers - 1]->name, s->name) >= 0) return JR_EINVAL;
    if (reserve(st->alloc, &st->servers, st->nservers, &st->cap_servers)) return JR_ENOMEM;
    st->servers[st->nservers++] = s;
    return 0;
}

/* Adds (sign 1) or removes (sign -1) stream s to or from the tallies of the servers it names
 * (jr__meta_server.assets, used_bytes). */
static void tally(jr__meta_state *st, const jr__meta_stream *s, int sign)
{
    uint64_t bytes = s->cfg->c.max_bytes > 0 ? (uint64_t)s->cfg->c.max_bytes : 0;
    for (size_t p = 0; p < s->npeers; p++) {
        jr__meta_server *sv = (jr__meta_server *)jr__meta_server_find(st, s->peers[p]);
        if (!sv) continue;
        sv->assets += (uint64_t)(int64_t)sign;
        sv->used_bytes += (uint64_t)(int64_t)sign * bytes;
    }
}

/* The tallies of server sv, counted afresh over every stream (a server new to the state). */
static void tally_server(const jr__meta_state *st, jr__meta_server *sv)
{
    sv->assets = sv->used_bytes = 0;
    for (size_t k = 0; k < st->nstreams; k++) {
        const jr__meta_stream *t = st->streams[k];
        if (!jr__meta_stream_has_peer(t, sv->name)) continue;
        sv->assets++;
        if (t->cfg->c.max_bytes > 0) sv->used_bytes += (uint64_t)t->cfg->c.max_bytes;
    }
}

int jr__meta_state_append_stream(jr__meta_state *st, jr__meta_stream *s)
{
    if (st->nstreams && strcmp(st->streams[st->nstreams - 1]->name, s->name) >= 0) return JR_EINVAL;
    if (s->group == 0 || jr__map_get(&st->by_group, s->group) ||
        jr__map_get(&st->by_cgroup, s->group))
        return JR_EINVAL;
    if (reserve(st->alloc, &st->streams, st->nstreams, &st->cap_streams)) return JR_ENOMEM;
    int rc = jr__subject_index_insert_all(&st->subjects, s->cfg->c.subjects, s->cfg->c.nsubjects, s,
                                          NULL);
    if (rc) return rc == JR_ENOMEM ? rc : JR_EEXIST;
    if (jr__map_put(&st->by_group, s->group, s)) {
        for (size_t i = 0; i < s->cfg->c.nsubjects; i++)
            jr__subject_index_remove(&st->subjects, s->cfg->c.subjects[i], s);
        return JR_ENOMEM;
    }
    st->streams[st->nstreams++] = s;
    tally(st, s, 1);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Decisions (pure)
 */
static int server_info_ok(const jr__meta_server_info *s)
{
    if (!s->name || !s->cluster || s->ntags > JR__META_MAX_TAGS || (s->ntags && !s->tags)) return 0;
    if (!jr__meta_name_ok(s->name, strlen(s->name)) ||
        !jr__meta_name_ok(s->cluster, strlen(s->cluster)))
        return 0;
    for (size_t i = 0; i < s->ntags; i++) {
        if (!s->tags[i] || !jr__meta_name_ok(s->tags[i], strlen(s->tags[i]))) return 0;
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->tags[i], s->tags[j]) == 0) return 0;
    }
    return 1;
}

/* Peers of an ADD/UPDATE: exactly `replicas` distinct, valid, known servers. */
static int check_peers(const jr__meta_state *st, const jr__meta_op *op, int replicas,
                       jr__meta_result *res)
{
    if (op->npeers == 0)
        return refuse(res, JR_EINVAL, "peers: none given (the request was not placed)");
    if (op->npeers != (size_t)replicas || !op->peers)
        return refuse(res, JR_EINVAL, "peers: %zu given for %d replicas", op->npeers, replicas);
    for (size_t i = 0; i < op->npeers; i++) {
        const char *p = op->peers[i];
        if (!p || !jr__meta_name_ok(p, strlen(p)))
            return refuse(res, JR_EINVAL, "peers: invalid server name");
        for (size_t j = 0; j < i; j++)
            if (strcmp(p, op->peers[j]) == 0)
                return refuse(res, JR_EINVAL, "peers: '%s' given twice", p);
        if (!jr__meta_server_find(st, p)) {
            /* a removed server stays a peer of a stream that had it (not re-placed) */
            const jr__meta_stream *s = op->type == JR__META_STREAM_UPDATE && op->config
                                           ? jr__meta_stream_find(st, op->config->name)
                                           : NULL;
            if (!s || !jr__meta_server_removed(st, p) || !jr__meta_stream_has_peer(s, p))
                return refuse(res, JR_EINVAL, "peers: unknown server '%s'", p);
        }
    }
    return 0;
}

static int same_peers(const jr__meta_stream *s, const jr__meta_op *op)
{
    if (s->npeers != op->npeers) return 0;
    for (size_t i = 0; i < s->npeers; i++)
        if (strcmp(s->peers[i], op->peers[i]) != 0) return 0;
    return 1;
}

/* 1 if op's peers are s's peers in any order (peers are distinct on both sides). */
static int same_peer_set(const jr__meta_stream *s, const jr__meta_op *op)
{
    if (s->npeers != op->npeers) return 0;
    for (size_t i = 0; i < op->npeers; i++)
        if (!jr__meta_stream_has_peer(s, op->peers[i])) return 0;
    return 1;
}

/* The refusal for subjects of c that overlap a stream other than self: names the first such
 * stream in name order (not whichever the index met first, which depends on its history).
 * One overlap search over c's subjects followed by every other stream's, streams in name order:
 * c's subjects do not overlap each other (validated) nor do two streams' (the index keeps them
 * apart), so the first pattern found overlapping an earlier one is the first overlapping
 * subject of the first such stream, and the earlier one a subject of c. Near-linear in the
 * number of subjects (jr__subject_first_overlap), where comparing pairs would cost their
 * product — a config of 10,000 subjects would block the node for seconds. */
static int refuse_overlap(const jr__meta_state *st, const jr_stream_config *c,
                          const jr__meta_stream *self, const void *hint, jr__meta_result *res)
{
    jr__stream_norm n;
    jr__stream_config_normalize(c, &n);
    size_t total = n.c.nsubjects;
    for (size_t i = 0; i < st->nstreams; i++)
        if (st->streams[i] != self) total += st->streams[i]->cfg->c.nsubjects;
    const char **v = jr__malloc(st->alloc, (total ? total : 1) * sizeof *v);
    const jr__meta_stream **owner = jr__malloc(st->alloc, (total ? total : 1) * sizeof *owner);
    const jr__meta_stream *h = hint;
    if (v && owner) {
        size_t k = 0;
        for (size_t a = 0; a < n.c.nsubjects; a++, k++) {
            owner[k] = NULL;
            v[k] = n.c.subjects[a];
        }
        for (size_t i = 0; i < st->nstreams; i++) {
            const jr__meta_stream *t = st->streams[i];
            for (size_t b = 0; t != self && b < t->cfg->c.nsubjects; b++, k++) {
                owner[k] = t;
                v[k] = t->cfg->c.subjects[b];
            }
        }
        size_t i = 0, j = 0;
        int rc = jr__subject_first_overlap(v, total, st->alloc, &i, &j);
        if (rc == JR_EEXIST && owner[i] && !owner[j]) {
            const jr__meta_stream *t = owner[i];
            rc = refuse(res, JR_EINVAL, "subjects: '%s' overlaps subject '%s' of stream '%s'", v[j],
                        v[i], t->name);
            jr__free(st->alloc, v);
            jr__free(st->alloc, owner);
            return rc;
        }
    }
    jr__free(st->alloc, v);
    jr__free(st->alloc, owner);
    return refuse(res, JR_EINVAL, "subjects: overlap with stream '%s'", h ? h->name : "?");
}

enum { DECIDED = 1 }; /* validate(): the outcome is known without touching the index */

/* The pure part of apply/check. Returns 0 to go on, DECIDED when res is final (a refusal or an
 * idempotent success), with *existing set for ADD/UPDATE/DELETE of a known stream. */
static int validate(const jr__meta_state *st, const jr__meta_op *op, int need_peers,
                    jr__meta_result *res, jr__meta_stream **existing)
{
    *existing = NULL;
    int found;
    switch (op->type) {
    case JR__META_SERVER_REMOVE:
        return jr__meta_servers_validate(st, op, res) ? DECIDED : 0;
    case JR__META_SERVER_DRAIN:
        return jr__meta_drain_validate(st, op, res) ? DECIDED : 0;
    case JR__META_SERVER_JOIN:
    case JR__META_SERVER_INFO:
        if (!server_info_ok(&op->server)) {
            refuse(res, JR_EINVAL, "server: invalid name, cluster or tags");
            return DECIDED;
        }
        if (jr__meta_server_removed(st, op->server.name)) {
            refuse(res, JR_EREMOVED, "server '%s' was removed from the cluster", op->server.name);
            return DECIDED;
        }
        if (op->type == JR__META_SERVER_JOIN && !jr__meta_server_find(st, op->server.name) &&
            st->nservers >= JR_STREAMS_MAX_SERVERS) {
            refuse(res, JR_ENORESOURCES, "cluster is full: it has %zu servers, at most %d",
                   st->nservers, JR_STREAMS_MAX_SERVERS);
            return DECIDED;
        }
        return 0;
    case JR__META_STREAM_ADD:
    case JR__META_STREAM_UPDATE: {
        if (!op->config) {
            refuse(res, JR_EINVAL, "config: missing");
            return DECIDED;
        }
        const char *name = op->config->name;
        size_t pos = name ? stream_pos(st, name, &found) : (found = 0, 0);
        if (found) *existing = st->streams[pos];
        snprintf(res->stream, sizeof res->stream, "%s", name ? name : "");
        if (op->type == JR__META_STREAM_ADD) {
            if (*existing) {
                if (jr__stream_config_validate(op->config, NULL, 0) == 0 &&
                    jr__stream_config_equal(&(*existing)->cfg->c, op->config)) {
                    res->assignment = *existing; /* identical re-add */
                    return DECIDED;
                }
                refuse(res, JR_EEXIST, "stream name already in use with a different configuration");
                return DECIDED;
            }
            if (jr__stream_config_check_add(op->config, res->msg, sizeof res->msg)) {
                res->status = JR_EINVAL;
                return DECIDED;
            }
        } else {
            if (!*existing) {
                refuse(res, JR_ENOTFOUND, "stream '%s' not found", name ? name : "");
                return DECIDED;
            }
            if (jr__stream_config_check_update(&(*existing)->cfg->c, op->config, res->msg,
                                               sizeof res->msg)) {
                res->status = JR_EINVAL;
                return DECIDED;
            }
        }
        jr__stream_norm n;
        jr__stream_config_normalize(op->config, &n);
        if ((need_peers || op->npeers) && check_peers(st, op, n.c.replicas, res)) return DECIDED;
        if (op->type == JR__META_STREAM_UPDATE && jr__meta_stream_busy(*existing) &&
            (op->npeers ? !same_peer_set(*existing, op)
                        : (size_t)n.c.replicas != (*existing)->npeers)) {
            refuse(res, JR_EBUSY,
                   "replicas: cluster member change is in progress (stream '%s' has not "
                   "converged to its peer set of meta index %llu yet)",
                   (*existing)->name, (unsigned long long)(*existing)->peers_at);
            return DECIDED;
        }
        if (op->type == JR__META_STREAM_UPDATE && op->npeers &&
            jr__stream_config_equal(&(*existing)->cfg->c, op->config) &&
            same_peers(*existing, op)) {
            res->assignment = *existing; /* nothing to change */
            return DECIDED;
        }
        if (op->type == JR__META_STREAM_ADD && st->next_group == 0) {
            refuse(res, JR_ERANGE, "no group ids left");
            return DECIDED;
        }
        return 0;
    }
    case JR__META_STREAM_DELETE:
    case JR__META_STREAM_CONVERGED:
        snprintf(res->stream, sizeof res->stream, "%s", op->stream ? op->stream : "");
        if (op->stream) {
            size_t pos = stream_pos(st, op->stream, &found);
            if (found) *existing = st->streams[pos];
        }
        if (!*existing) {
            refuse(res, JR_ENOTFOUND, "stream '%s' not found", op->stream ? op->stream : "");
            return DECIDED;
        }
        if (op->type == JR__META_STREAM_DELETE) return 0;
        if ((*existing)->group != op->group) {
            refuse(res, JR_ENOTFOUND, "stream '%s' has group %llu, not %llu (re-created)",
                   op->stream, (unsigned long long)(*existing)->group,
                   (unsigned long long)op->group);
            return DECIDED;
        }
        if ((*existing)->peers_at != op->peers_at) {
            refuse(res, JR_ERANGE,
                   "stream '%s': a report for the peer set of meta index %llu, which is %llu now",
                   op->stream, (unsigned long long)op->peers_at,
                   (unsigned long long)(*existing)->peers_at);
            return DECIDED;
        }
        if (!jr__meta_stream_busy(*existing)) return DECIDED; /* reported before */
        return 0;
    default:
        refuse(res, JR_EINVAL, "unknown op type %u", op->type);
        return DECIDED;
    }
}

static void result_init(jr__meta_result *res, const jr__meta_op *op)
{
    memset(res, 0, sizeof *res);
    if (!op) return;
    res->type = op->type;
    res->request_id = op->request_id;
    snprintf(res->origin, sizeof res->origin, "%s", op->origin ? op->origin : "");
}

/* ---------------------------------------------------------------------------------------------
 * Check (the leader's dry run)
 */

/* 1 if pattern is one of c's subjects (normal form). */
static int has_subject(const jr_stream_config *c, const char *pattern)
{
    for (size_t i = 0; i < c->nsubjects; i++)
        if (strcmp(c->subjects[i], pattern) == 0) return 1;
    return 0;
}

/* STREAM_CONVERGED naming one of the stream's consumers' groups: decides it (and with apply,
 * applies it). 1 if op was such a report (res says how it went), else 0. */
static int consumer_converged(jr__meta_state *st, const jr__meta_op *op, jr__meta_result *res,
                              int apply)
{
    if (op->type != JR__META_STREAM_CONVERGED || !op->stream) return 0;
    jr__meta_consumer *c = (jr__meta_consumer *)jr__meta_consumer_by_group(st, op->group);
    if (!c || strcmp(c->stream->name, op->stream) != 0) return 0;
    snprintf(res->stream, sizeof res->stream, "%s", op->stream ? op->stream : "");
    snprintf(res->cname, sizeof res->cname, "%s", c->name);
    if (c->peers_at != op->peers_at) {
        refuse(res, JR_ERANGE,
               "consumer '%s': a report for the peer set of meta index %llu, which is %llu now",
               c->name, (unsigned long long)op->peers_at, (unsigned long long)c->peers_at);
    } else if (jr__meta_consumer_busy(c) && apply) {
        c->converged_at = c->peers_at;
        jr__meta_casgn_put(c->origin);
        c->origin = NULL;
        res->group = c->group;
        res->changed = 1;
    }
    return 1;
}

int jr__meta_check(jr__meta_state *st, const jr__meta_op *op, jr__meta_result *res)
{
    result_init(res, op);
    if (!op) {
        refuse(res, JR_EINVAL, "no op");
        return 0;
    }
    jr__meta_stream *s;
    if (consumer_converged(st, op, res, 0)) return 0;
    if (op->type == JR__META_CONSUMER_ADD || op->type == JR__META_CONSUMER_DELETE) {
        jr__meta_consumer *c;
        jr__meta_consumer_validate(st, op, 0, res, &s, &c);
        return 0;
    }
    if (op->type == JR__META_PEER_MOVE) {
        jr__meta_consumer *c;
        jr__meta_move_validate(st, op, 0, res, &s, &c);
        return 0;
    }
    if (validate(st, op, 0, res, &s) == DECIDED) return 0;
    if (op->type != JR__META_STREAM_ADD && op->type != JR__META_STREAM_UPDATE) return 0;
    /* probe the subject index: insert for the stream (or a stand-in owner), then undo */
    jr__stream_norm n;
    jr__stream_config_normalize(op->config, &n);
    void *owner = s ? (void *)s : (void *)st;
    void *conflict = NULL;
    int rc =
        jr__subject_index_insert_all(&st->subjects, n.c.subjects, n.c.nsubjects, owner, &conflict);
    if (rc == JR_ENOMEM) return JR_ENOMEM;
    if (rc == JR_EEXIST) {
        refuse_overlap(st, op->config, s, conflict, res);
        return 0;
    }
    if (rc) {
        refuse(res, JR_EINVAL, "subjects: invalid");
        return 0;
    }
    for (size_t i = 0; i < n.c.nsubjects; i++)
        if (!s || !has_subject(&s->cfg->c, n.c.subjects[i]))
            jr__subject_index_remove(&st->subjects, n.c.subjects[i], owner);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Apply
 */
static void names_of(const char *const *v, size_t n, jr__meta_name *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i].p = v[i];
        out[i].n = strlen(v[i]);
    }
}

static int apply_server(jr__meta_state *st, const jr__meta_op *op, jr__meta_result *res)
{
    const jr__meta_server_info *in = &op->server;
    jr__meta_name tags[JR__META_MAX_TAGS];
    names_of(in->tags, in->ntags, tags);
    jr__meta_name name = {in->name, strlen(in->name)};
    jr__meta_name cluster = {in->cluster, strlen(in->cluster)};
    int found;
    size_t pos = server_pos(st, in->name, &found);
    if (found) {
        const jr__meta_server *o = st->servers[pos];
        int same = strcmp(o->cluster, in->cluster) == 0 && o->ntags == in->ntags &&
                   o->capacity_bytes == in->capacity_bytes && o->max_assets == in->max_assets;
        for (size_t i = 0; same && i < in->ntags; i++) same = strcmp(o->tags[i], in->tags[i]) == 0;
        if (same) return 0;
    } else if (reserve(st->alloc, &st->servers, st->nservers, &st->cap_servers)) {
        return JR_ENOMEM;
    }
    jr__meta_server *s = jr__meta_server_new(st->alloc, name, cluster, tags, in->ntags,
                                             in->capacity_bytes, in->max_assets);
    if (!s) return JR_ENOMEM;
    if (found) {
        s->assets = st->servers[pos]->assets;
        s->used_bytes = st->servers[pos]->used_bytes;
        s->draining = st->servers[pos]->draining;
        jr__meta_server_free(st->alloc, st->servers[pos]);
        st->servers[pos] = s;
    } else {
        tally_server(st, s);
        insert_at(&st->servers, &st->nservers, pos, s);
    }
    res->changed = 1;
    return 0;
}

static int apply_add(jr__meta_state *st, uint64_t index, const jr__meta_op *op,
                     jr__meta_result *res)
{
    jr__stream_cfg *cfg;
    int rc = jr__stream_cfg_new(op->config, st->alloc, &cfg, NULL, 0);
    if (rc) return rc; /* JR_ENOMEM: validate() accepted the config */
    jr__meta_name peers[JR_MAX_REPLICAS];
    names_of(op->peers, op->npeers, peers);
    jr__meta_stream *s = jr__meta_stream_new(st->alloc, cfg, peers, op->npeers);
    if (!s) {
        jr__stream_cfg_free(cfg);
        return JR_ENOMEM;
    }
    if (reserve(st->alloc, &st->streams, st->nstreams, &st->cap_streams)) {
        jr__meta_stream_free(st->alloc, s);
        return JR_ENOMEM;
    }
    void *conflict = NULL;
    rc = jr__subject_index_insert_all(&st->subjects, cfg->c.subjects, cfg->c.nsubjects, s,
                                      &conflict);
    if (rc == 0) {
        rc = jr__map_put(&st->by_group, st->next_group, s);
        if (rc) {
            for (size_t i = 0; i < cfg->c.nsubjects; i++)
                jr__subject_index_remove(&st->subjects, cfg->c.subjects[i], s);
        }
    }
    if (rc) {
        jr__meta_stream_free(st->alloc, s);
        if (rc == JR_ENOMEM) return rc;
        if (rc == JR_EEXIST)
            refuse_overlap(st, op->config, NULL, conflict, res);
        else
            refuse(res, JR_EINVAL, "subjects: invalid");
        return 0;
    }
    s->group = st->next_group++;
    s->created = s->updated = s->peers_at = s->converged_at = index;
    s->created_ns = op->created_ns;
    res->group = s->group;
    int found;
    size_t pos = stream_pos(st, s->name, &found);
    insert_at(&st->streams, &st->nstreams, pos, s);
    tally(st, s, 1);
    res->assignment = s;
    res->changed = 1;
    return 0;
}

static int apply_update(jr__meta_state *st, uint64_t index, const jr__meta_op *op,
                        jr__meta_stream *s, jr__meta_result *res)
{
    jr__stream_cfg *cfg;
    int rc = jr__stream_cfg_new(op->config, st->alloc, &cfg, NULL, 0);
    if (rc) return rc;
    jr__meta_name names[JR_MAX_REPLICAS];
    names_of(op->peers, op->npeers, names);
    jr__meta_asgn *as = asgn_new(st->alloc, cfg, names, op->npeers);
    if (!as) {
        jr__stream_cfg_free(cfg);
        return JR_ENOMEM;
    }
    jr__meta_casgn **follow = NULL; /* new peer sets of its consumers (peers or R changed) */
    if ((!same_peer_set(s, op) || cfg->c.replicas != s->cfg->c.replicas) &&
        jr__meta_consumers_follow_prepare(st, s, op->peers, op->npeers, cfg->c.replicas, &follow) !=
            0) {
        jr__meta_asgn_put(as);
        return JR_ENOMEM;
    }
    void *conflict = NULL;
    rc = jr__subject_index_replace(&st->subjects, s->cfg->c.subjects, s->cfg->c.nsubjects,
                                   cfg->c.subjects, cfg->c.nsubjects, s, &conflict);
    if (rc) {
        jr__meta_consumers_follow_commit(st, s, follow, 0);
        jr__meta_asgn_put(as); /* frees cfg */
        if (rc == JR_ENOMEM) return rc;
        if (rc == JR_EEXIST)
            refuse_overlap(st, op->config, s, conflict, res);
        else
            refuse(res, JR_EINVAL, "subjects: invalid");
        return 0;
    }
    if (!same_peer_set(s, op)) {
        /* a peer change begins: from a converged state, the version it started from is its
         * origin (a cancel returns there) */
        if (!jr__meta_stream_busy(s) && !s->origin) s->origin = jr__meta_asgn_ref(s->asgn);
        s->peers_at = index;
    }
    tally(st, s, -1);
    jr__meta_asgn_put(s->asgn); /* a replica may still hold the old version */
    stream_set(s, as);
    tally(st, s, 1);
    s->updated = index;
    if (follow) res->consumers_gone = 1; /* consumers moved too: converge them all */
    jr__meta_consumers_follow_commit(st, s, follow, index);
    res->assignment = s;
    res->group = s->group;
    res->changed = 1;
    return 0;
}

int jr__meta_stream_repeer(jr__meta_state *st, uint64_t index, jr__meta_stream *s,
                           const char *const *peers, size_t npeers, jr__meta_result *res)
{
    jr__meta_name names[JR_MAX_REPLICAS];
    names_of(peers, npeers, names);
    jr__meta_asgn *as = asgn_new(st->alloc, jr__stream_cfg_ref(s->cfg), names, npeers);
    if (!as) {
        jr__stream_cfg_free(s->cfg); /* the reference taken above */
        return JR_ENOMEM;
    }
    jr__meta_casgn **follow = NULL;
    if (jr__meta_consumers_follow_prepare(st, s, peers, npeers, s->cfg->c.replicas, &follow)) {
        jr__meta_asgn_put(as);
        return JR_ENOMEM;
    }
    jr__meta_op same = {.npeers = npeers, .peers = peers};
    if (!same_peer_set(s, &same)) s->peers_at = index;
    /* a peer-remove overrides a change in progress: there is no origin to go back to (it may
     * hold the removed server) */
    jr__meta_asgn_put(s->origin);
    s->origin = NULL;
    tally(st, s, -1);
    jr__meta_asgn_put(s->asgn);
    stream_set(s, as);
    tally(st, s, 1);
    s->updated = index;
    if (follow) res->consumers_gone = 1;
    jr__meta_consumers_follow_commit(st, s, follow, index);
    res->changed = 1;
    return 0;
}

/* The position of server `name` in st->servers (where it is or would be; *found says which). */
size_t jr__meta_server_pos(const jr__meta_state *st, const char *name, int *found)
{
    return server_pos(st, name, found);
}

/* Removes servers[pos] (it leaves the state; its tallies with it). */
void jr__meta_server_drop(jr__meta_state *st, size_t pos)
{
    jr__meta_server *sv = st->servers[pos];
    remove_at(&st->servers, &st->nservers, pos);
    jr__meta_server_free(st->alloc, sv);
}

void jr__meta_stream_install(jr__meta_state *st, jr__meta_stream *s, jr__meta_asgn *as,
                             uint64_t index)
{
    int same = as->npeers == s->npeers;
    for (size_t i = 0; same && i < as->npeers; i++)
        same = jr__meta_stream_has_peer(s, as->peers[i]);
    if (!same) {
        if (!jr__meta_stream_busy(s) && !s->origin) s->origin = jr__meta_asgn_ref(s->asgn);
        s->peers_at = index;
    }
    tally(st, s, -1);
    jr__meta_asgn_put(s->asgn);
    stream_set(s, as);
    tally(st, s, 1);
    s->updated = index;
}

static void apply_delete(jr__meta_state *st, jr__meta_stream *s, jr__meta_result *res)
{
    if (s->nconsumers) res->consumers_gone = 1;
    jr__meta_consumers_drop(st, s);
    tally(st, s, -1);
    for (size_t i = 0; i < s->cfg->c.nsubjects; i++)
        jr__subject_index_remove(&st->subjects, s->cfg->c.subjects[i], s);
    jr__map_del(&st->by_group, s->group);
    res->group = s->group;
    int found;
    size_t pos = stream_pos(st, s->name, &found);
    remove_at(&st->streams, &st->nstreams, pos);
    jr__meta_stream_free(st->alloc, s);
    res->changed = 1;
}

int jr__meta_apply_op(jr__meta_state *st, uint64_t index, const jr__meta_op *op,
                      jr__meta_result *res)
{
    result_init(res, op);
    if (!op || index <= st->applied) return JR_EINVAL;
    jr__meta_stream *s;
    int rc = 0;
    if (consumer_converged(st, op, res, 1)) {
    } else if (op->type == JR__META_CONSUMER_ADD || op->type == JR__META_CONSUMER_DELETE) {
        jr__meta_consumer *c;
        if (jr__meta_consumer_validate(st, op, 1, res, &s, &c) == 0)
            rc = jr__meta_consumer_apply(st, index, op, s, c, res);
    } else if (op->type == JR__META_PEER_MOVE) {
        jr__meta_consumer *c;
        if (jr__meta_move_validate(st, op, 1, res, &s, &c) == 0)
            rc = jr__meta_move_apply(st, index, op, s, c, res);
    } else if (validate(st, op, 1, res, &s) != DECIDED) {
        switch (op->type) {
        case JR__META_SERVER_INFO:
        case JR__META_SERVER_JOIN:
            rc = apply_server(st, op, res);
            break;
        case JR__META_SERVER_REMOVE:
            rc = jr__meta_servers_apply(st, index, op, res);
            break;
        case JR__META_SERVER_DRAIN:
            jr__meta_drain_apply(st, op, res);
            break;
        case JR__META_STREAM_ADD:
            rc = apply_add(st, index, op, res);
            break;
        case JR__META_STREAM_UPDATE:
            rc = apply_update(st, index, op, s, res);
            break;
        case JR__META_STREAM_CONVERGED:
            s->converged_at = s->peers_at; /* validate() checked op->peers_at is that */
            jr__meta_asgn_put(s->origin);  /* the change is over */
            s->origin = NULL;
            if (op->term > s->floor_term ||
                (op->term == s->floor_term && op->commit > s->floor_commit)) {
                s->floor_term = op->term;
                s->floor_commit_term = op->commit_term;
                s->floor_commit = op->commit;
            }
            res->group = s->group;
            res->changed = 1;
            break;
        default:
            apply_delete(st, s, res);
        }
    }
    if (rc) {
        result_init(res, op);
        return rc; /* JR_ENOMEM: nothing changed */
    }
    if (res->status) {
        res->assignment = NULL;
        res->consumer = NULL;
    }
    st->applied = index;
    return 0;
}

int jr__meta_apply(jr__meta_state *st, uint64_t index, const void *data, size_t len,
                   jr__meta_result *res)
{
    if (index <= st->applied) {
        result_init(res, NULL);
        return JR_EINVAL;
    }
    jr__meta_op op;
    int rc = jr__meta_op_decode(data, len, st->alloc, &op);
    if (rc == JR_ENOMEM || rc == JR_EVERSION) {
        result_init(res, NULL);
        res->status = rc;
        if (rc == JR_EVERSION)
            snprintf(res->msg, sizeof res->msg, "meta op of a newer version: upgrade this server");
        return rc;
    }
    if (rc) {
        result_init(res, NULL);
        refuse(res, rc, "meta op does not decode");
        st->applied = index;
        return 0;
    }
    rc = jr__meta_apply_op(st, index, &op, res);
    jr__meta_op_free(&op);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Placement view
 */
size_t jr__meta_place_servers(const jr__meta_state *st, jr__place_server *out, size_t cap)
{
    size_t n = st->nservers < cap ? st->nservers : cap;
    for (size_t i = 0; i < n; i++) {
        const jr__meta_server *s = st->servers[i];
        memset(&out[i], 0, sizeof out[i]);
        out[i].name = s->name;
        out[i].cluster = s->cluster;
        out[i].tags = s->tags;
        out[i].ntags = s->ntags;
        out[i].online = 1;
        out[i].capacity_bytes = s->capacity_bytes;
        out[i].max_assets = s->max_assets;
        out[i].assets = (uint32_t)s->assets; /* kept up to date by every apply (tally) */
        out[i].used_bytes = s->used_bytes;
        out[i].draining = s->draining;
    }
    return st->nservers;
}

/* ---------------------------------------------------------------------------------------------
 * Desired state
 */
static int cmp_local(const void *a, const void *b)
{
    uint64_t x = ((const jr__meta_local *)a)->group, y = ((const jr__meta_local *)b)->group;
    return (x > y) - (x < y);
}

/* The local entry of group in the sorted array, or NULL. */
static const jr__meta_local *local_find(const jr__meta_local *v, size_t n, uint64_t group)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].group == group) return &v[mid];
        if (v[mid].group < group)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void plan_add(jr__meta_plan *p, int kind, uint64_t group, const jr__meta_stream *s,
                     const jr__meta_consumer *c)
{
    p->actions[p->n].kind = kind;
    p->actions[p->n].group = group;
    p->actions[p->n].stream = s;
    p->actions[p->n].consumer = c;
    p->n++;
}

int jr__meta_desired(const jr__meta_state *st, const char *server, const jr__meta_local *local,
                     size_t nlocal, jr__meta_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->alloc = st->alloc;
    if (!server || (nlocal && !local)) return JR_EINVAL;
    jr__meta_local *sorted = NULL;
    if (nlocal) {
        sorted = jr__calloc(st->alloc, nlocal, sizeof *sorted);
        if (!sorted) return JR_ENOMEM;
        memcpy(sorted, local, nlocal * sizeof *sorted);
        qsort(sorted, nlocal, sizeof *sorted, cmp_local);
        for (size_t i = 0; i < nlocal; i++) {
            if (sorted[i].group == 0 || (i && sorted[i].group == sorted[i - 1].group)) {
                jr__free(st->alloc, sorted);
                return JR_EINVAL;
            }
        }
    }
    /* at most one action per local replica plus one per assignment */
    size_t cap = nlocal + st->nstreams + st->nconsumers;
    if (cap) {
        plan->actions = jr__calloc(st->alloc, cap, sizeof *plan->actions);
        if (!plan->actions) {
            jr__free(st->alloc, sorted);
            return JR_ENOMEM;
        }
    }
    for (size_t i = 0; i < nlocal; i++) {
        const jr__meta_stream *s = jr__meta_stream_by_group(st, sorted[i].group);
        const jr__meta_consumer *c = s ? NULL : jr__meta_consumer_by_group(st, sorted[i].group);
        if (c && !jr__meta_consumer_has_peer(c, server))
            plan_add(plan, JR__META_LEAVE, sorted[i].group, c->stream, c);
        else if (!c && (!s || !jr__meta_stream_has_peer(s, server)))
            plan_add(plan, JR__META_LEAVE, sorted[i].group, s, NULL);
    }
    for (size_t k = 0; k < st->nstreams; k++) {
        const jr__meta_stream *s = st->streams[k];
        if (!jr__meta_stream_has_peer(s, server)) continue;
        const jr__meta_local *l = local_find(sorted, nlocal, s->group);
        if (!l)
            plan_add(plan, JR__META_CREATE, s->group, s, NULL);
        else if (l->updated != s->updated)
            plan_add(plan, JR__META_UPDATE, s->group, s, NULL);
    }
    /* consumers after every stream: a consumer's replica reads its stream's local replica */
    for (size_t k = 0; k < st->nstreams; k++) {
        const jr__meta_stream *s = st->streams[k];
        for (size_t j = 0; j < s->nconsumers; j++) {
            const jr__meta_consumer *c = s->consumers[j];
            if (!jr__meta_consumer_has_peer(c, server)) continue;
            const jr__meta_local *l = local_find(sorted, nlocal, c->group);
            if (!l)
                plan_add(plan, JR__META_CREATE, c->group, s, c);
            else if (l->updated != c->updated)
                plan_add(plan, JR__META_UPDATE, c->group, s, c);
        }
    }
    jr__free(st->alloc, sorted);
    return 0;
}

void jr__meta_plan_free(jr__meta_plan *plan)
{
    if (!plan) return;
    jr__free(plan->alloc, plan->actions);
    plan->actions = NULL;
    plan->n = 0;
}
