/*
 * retire — destroying a group on behalf of the layer above (node.h "Group destruction").
 *
 * A group the upper layer destroys (its stream was deleted, or this server left it) may be on
 * the ready list the current flush walks, so it is not freed on the spot: it is detached by the
 * caller, its snapshot files are removed at once, and it is released at the start of the next
 * flush, when no list is being walked — its raft core freed, any recovery stash dropped, and a
 * WAL DROP staged, after which nothing of the group is written and the WAL forgets it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "node/node.h"
#include "util/alloc.h"

typedef struct rm_ctx {
    jr_node *n;
    const char *prefix;
    char (*names)[128];
    size_t count, cap;
} rm_ctx;

static int rm_collect(void *arg, const char *name)
{
    rm_ctx *c = arg;
    if (strncmp(name, c->prefix, strlen(c->prefix)) != 0 || strlen(name) >= 128) return 0;
    if (c->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        char(*nn)[128] = jr__realloc(c->n->alloc, c->names, cap * sizeof *nn);
        if (!nn) return JR_ENOMEM;
        c->names = nn;
        c->cap = cap;
    }
    snprintf(c->names[c->count++], 128, "%s", name);
    return 0;
}

/* Removes every snapshot file of group id (named "<id, 16 hex digits>-…", snapshot.c). */
static void remove_snapshots(jr_node *n, uint64_t id)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%016" PRIx64 "-", id);
    rm_ctx c = {n, prefix, NULL, 0, 0};
    jr_vfs *v = n->vfs;
    v->list(v->ctx, n->snap_dir, rm_collect, &c);
    for (size_t i = 0; i < c.count; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", n->snap_dir, c.names[i]);
        v->remove(v->ctx, path);
    }
    jr__free(n->alloc, c.names);
    if (c.count) v->sync_dir(v->ctx, n->snap_dir);
}

int jr__node_group_retiring(const jr_node *n, uint64_t id)
{
    for (size_t i = 0; i < n->nretiring; i++)
        if (n->retiring[i] == id) return 1;
    return 0;
}

int jr__node_group_destroy(jr_node *n, uint64_t id)
{
    remove_snapshots(n, id);
    if (jr__node_group_retiring(n, id)) return 0;
    if (n->nretiring == n->retiring_cap) {
        size_t cap = n->retiring_cap ? 2 * n->retiring_cap : 8;
        uint64_t *d = jr__realloc(n->alloc, n->retiring, cap * sizeof *d);
        if (!d) {
            /* The group stays dormant until close; the WAL forgets it now. */
            if (n->wal) jr__wal_drop(n->wal, id);
            return JR_ENOMEM;
        }
        n->retiring = d;
        n->retiring_cap = cap;
    }
    n->retiring[n->nretiring++] = id;
    jr__node_want_tick(n);
    return 0;
}

void jr__node_release_retired(jr_node *n)
{
    size_t keep = 0;
    for (size_t i = 0; i < n->nretiring; i++) {
        uint64_t id = n->retiring[i];
        jr_group *g = jr__map_get(&n->groups, id);
        if (g && !g->closed) continue; /* reopened meanwhile: no longer retiring */
        if (g) jr__group_release(g);
        jr__stash *st = jr__map_del(&n->stashes, id);
        if (st) jr__stash_free(n, st);
        int rc = n->wal ? jr__wal_drop(n->wal, id) : 0;
        if (rc == JR_ENOMEM) n->retiring[keep++] = id; /* tried again at the next flush */
    }
    n->nretiring = keep;
    if (keep == 0 && n->retiring_cap > 64) { /* a mass deletion is over: give the room back */
        jr__free(n->alloc, n->retiring);
        n->retiring = NULL;
        n->retiring_cap = 0;
    }
}

int jr__node_group_known(const jr_node *n, uint64_t id)
{
    return jr__map_get(&n->stashes, id) || jr__map_get(&n->groups, id);
}

int jr__node_unopened_groups(jr_node *n, uint64_t lo, uint64_t hi, uint64_t **ids, size_t *count)
{
    *ids = NULL;
    *count = 0;
    if (!n->stashes.len) return 0;
    uint64_t *v = jr__calloc(n->alloc, n->stashes.len, sizeof *v);
    if (!v) return JR_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n->stashes.cap && k < n->stashes.len; i++) {
        uint64_t id = n->stashes.slots[i].key;
        if (!id || id < lo || id >= hi || jr__map_get(&n->groups, id)) continue;
        v[k++] = id;
    }
    *ids = v;
    *count = k;
    return 0;
}
