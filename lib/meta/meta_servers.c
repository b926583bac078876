/*
 * meta_servers — servers joining and leaving the cluster, in the meta state (meta_state.h
 * "Servers"): the SERVER_REMOVE op and the tombstones of removed servers.
 *
 * A removal is decided once, by the op in the meta log: the server leaves the state's servers
 * (no placement picks it again) and is tombstoned, and the streams it held get the peer sets
 * the meta leader chose for them without it (jr__meta_stream_repeer: a peer change their
 * leaders then converge to, as for any update). The leader placed those against the state it
 * had when it proposed, so each re-placement is checked again here against the state at the
 * op's index: one that no longer fits (the stream was deleted, changed peers, or is mid-change
 * meanwhile) is skipped, the same on every replica, and the stream keeps the removed server
 * among its peers — under-replicated until a later update or PEER_MOVE re-places it (the meta
 * leader proposes one as soon as a server qualifies, js meta_drain.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "meta/meta_state.h"
#include "util/alloc.h"

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
refuse(jr__meta_result *res, int status, const char *fmt, ...)
{
    res->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->msg, sizeof res->msg, fmt, ap);
    va_end(ap);
    return 1;
}

/* Position of name among the tombstones (where it is or would be). */
static size_t removed_pos(const jr__meta_state *st, const char *name, int *found)
{
    size_t lo = 0, hi = st->nremoved;
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->removed[mid], name);
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

int jr__meta_removed_already(const void *text, size_t len)
{
    size_t n = strlen(JR__META_REMOVED_ALREADY);
    for (size_t i = 0; text && i + n <= len; i++)
        if (memcmp((const char *)text + i, JR__META_REMOVED_ALREADY, n) == 0) return 1;
    return 0;
}

int jr__meta_server_removed(const jr__meta_state *st, const char *name)
{
    int found;
    if (!name || !st->nremoved) return 0;
    removed_pos(st, name, &found);
    return found;
}

static int reserve_removed(jr__meta_state *st)
{
    if (st->nremoved < st->cap_removed) return 0;
    size_t cap = st->cap_removed ? 2 * st->cap_removed : 4;
    char **v = jr__realloc(st->alloc, st->removed, cap * sizeof *v);
    if (!v) return JR_ENOMEM;
    st->removed = v;
    st->cap_removed = cap;
    return 0;
}

static char *dup_n(const jr_allocator *a, const char *p, size_t n)
{
    char *d = jr__malloc(a, n + 1);
    if (!d) return NULL;
    memcpy(d, p, n);
    d[n] = 0;
    return d;
}

int jr__meta_state_append_removed(jr__meta_state *st, const char *name, size_t n)
{
    if (!jr__meta_name_ok(name, n)) return JR_EINVAL;
    if (st->nremoved) {
        const char *last = st->removed[st->nremoved - 1];
        size_t ln = strlen(last), m = ln < n ? ln : n;
        int c = memcmp(last, name, m);
        if (c > 0 || (c == 0 && ln >= n)) return JR_EINVAL;
    }
    if (reserve_removed(st)) return JR_ENOMEM;
    char *d = dup_n(st->alloc, name, n);
    if (!d) return JR_ENOMEM;
    st->removed[st->nremoved++] = d;
    return 0;
}

void jr__meta_servers_free(jr__meta_state *st)
{
    for (size_t i = 0; i < st->nremoved; i++) jr__free(st->alloc, st->removed[i]);
    jr__free(st->alloc, st->removed);
    st->removed = NULL;
    st->nremoved = st->cap_removed = 0;
}

int jr__meta_servers_validate(const jr__meta_state *st, const jr__meta_op *op, jr__meta_result *res)
{
    const char *name = op->server.name;
    if (!name || !jr__meta_name_ok(name, strlen(name)))
        return refuse(res, JR_EINVAL, "server: invalid name");
    if (jr__meta_server_removed(st, name))
        return refuse(res, JR_ENOTMEMBER, "server '%s' is not a member of the cluster: %s", name,
                      JR__META_REMOVED_ALREADY);
    int found;
    jr__meta_server_pos(st, name, &found);
    if (found && st->nservers == 1)
        return refuse(res, JR_EINVAL, "server '%s' is the last server of the cluster", name);
    return 0;
}

/* 1 if x is a re-placement apply may make for the removed server `gone` on the state as it is:
 * the stream exists, names `gone`, is not mid-change, and x gives it as many peers as replicas,
 * each a known server or one of its current peers. */
static jr__meta_stream *replace_fits(const jr__meta_state *st, const char *gone,
                                     const jr__meta_replace *x)
{
    jr__meta_stream *s = (jr__meta_stream *)jr__meta_stream_find(st, x->stream);
    if (!s || !jr__meta_stream_has_peer(s, gone) || jr__meta_stream_busy(s) ||
        x->npeers != s->npeers)
        return NULL;
    for (size_t k = 0; k < x->npeers; k++)
        if (!jr__meta_server_find(st, x->peers[k]) && !jr__meta_stream_has_peer(s, x->peers[k]))
            return NULL;
    return s;
}

int jr__meta_servers_apply(jr__meta_state *st, uint64_t index, const jr__meta_op *op,
                           jr__meta_result *res)
{
    const char *name = op->server.name;
    int found;
    size_t rpos = removed_pos(st, name, &found);
    if (reserve_removed(st)) return JR_ENOMEM;
    char *tomb = dup_n(st->alloc, name, strlen(name));
    if (!tomb) return JR_ENOMEM;
    /* Re-placements first, each whole. Out of memory after some of them, the caller's replica
     * stops applying (meta_replica.c: an op cannot be skipped), so no later state is built on
     * the partial one. */
    size_t done = 0;
    for (size_t i = 0; i < op->nreplace; i++) {
        jr__meta_stream *s = replace_fits(st, name, &op->replace[i]);
        if (!s) continue;
        int rc =
            jr__meta_stream_repeer(st, index, s, op->replace[i].peers, op->replace[i].npeers, res);
        if (rc) {
            jr__free(st->alloc, tomb);
            return rc;
        }
        done++;
    }
    size_t spos = jr__meta_server_pos(st, name, &found);
    if (found) jr__meta_server_drop(st, spos);
    memmove(st->removed + rpos + 1, st->removed + rpos,
            (st->nremoved - rpos) * sizeof *st->removed);
    st->removed[rpos] = tomb;
    st->nremoved++;
    /* what the caller is told: what moved, and the streams left under-replicated by name */
    int at = snprintf(res->msg, sizeof res->msg, "server '%s' removed; %zu stream%s re-placed",
                      name, done, done == 1 ? "" : "s");
    const char *sep = "; not re-placed (under-replicated): ";
    for (size_t k = 0; k < st->nstreams && at > 0 && (size_t)at < sizeof res->msg; k++) {
        if (!jr__meta_stream_has_peer(st->streams[k], name)) continue;
        at += snprintf(res->msg + at, sizeof res->msg - (size_t)at, "%s%s", sep,
                       st->streams[k]->name);
        sep = ", ";
    }
    res->changed = 1;
    res->group = 0; /* every replica converges */
    res->consumers_gone = 1;
    return 0;
}

/* Draining ------------------------------------------------------------------------------------
 * A draining server stays a server of the cluster (and of the meta group) but takes no new
 * placement (jr__meta_place_servers marks it); the meta leader moves its replicas off one
 * PEER_MOVE per group at a time. The flag alone is replicated: which replicas are left is read
 * from the assignments. */

int jr__meta_server_draining(const jr__meta_state *st, const char *name)
{
    const jr__meta_server *s = name ? jr__meta_server_find(st, name) : NULL;
    return s && s->draining;
}

int jr__meta_server_leaving(const jr__meta_state *st, const char *name)
{
    return jr__meta_server_draining(st, name) || jr__meta_server_removed(st, name);
}

int jr__meta_drain_validate(const jr__meta_state *st, const jr__meta_op *op, jr__meta_result *res)
{
    const char *name = op->server.name;
    if (!name || !jr__meta_name_ok(name, strlen(name)) || op->action > JR__META_DRAIN_START)
        return refuse(res, JR_EINVAL, "server: invalid name");
    if (jr__meta_server_removed(st, name))
        return refuse(res, JR_ENOTMEMBER, "server '%s' is not a member of the cluster: %s", name,
                      JR__META_REMOVED_ALREADY);
    const jr__meta_server *s = jr__meta_server_find(st, name);
    if (!s)
        return refuse(res, JR_ENOTMEMBER, "server '%s' is not a member of the cluster: unknown",
                      name);
    if (op->action == JR__META_DRAIN_CANCEL && !s->draining)
        return refuse(res, JR_ENOCHANGE, "server '%s' is not draining", name);
    if (op->action == JR__META_DRAIN_START && s->draining) {
        snprintf(res->msg, sizeof res->msg, "server '%s' is draining already", name);
        return 1; /* status 0: a request sent again finds its first attempt applied */
    }
    return 0;
}

void jr__meta_drain_apply(jr__meta_state *st, const jr__meta_op *op, jr__meta_result *res)
{
    jr__meta_server *s = (jr__meta_server *)jr__meta_server_find(st, op->server.name);
    s->draining = op->action == JR__META_DRAIN_START; /* validate found it */
    size_t streams = 0, consumers = 0;
    for (size_t i = 0; i < st->nstreams; i++) {
        const jr__meta_stream *t = st->streams[i];
        streams += (size_t)jr__meta_stream_has_peer(t, s->name);
        for (size_t k = 0; k < t->nconsumers; k++)
            consumers += (size_t)jr__meta_consumer_has_peer(t->consumers[k], s->name);
    }
    if (s->draining)
        snprintf(res->msg, sizeof res->msg,
                 "server '%s' is draining: %zu stream and %zu consumer replica%s to move off",
                 s->name, streams, consumers, consumers == 1 ? "" : "s");
    else
        snprintf(res->msg, sizeof res->msg,
                 "server '%s' takes placements again (%zu stream and %zu consumer replica%s on "
                 "it)",
                 s->name, streams, consumers, consumers == 1 ? "" : "s");
    res->changed = 1;
    res->group = 0;
}
