/*
 * retire — destroying a group on behalf of the layer above (services.h "Group destruction").
 *
 * The layer destroys a group (its stream was deleted, or this server left it) from an effect,
 * a timer or an API call — never while a flush iteration walks its batch: what an apply
 * produces is queued as an effect and runs after the flush loop (services.h "Effects"). So the
 * group is released on the spot: what its replica knew kept (released.c; for a recovery stash
 * never opened in this life, read from its records and snapshot file), its raft core freed
 * (the caller detached it), any recovery stash dropped; then its snapshot files are removed and
 * a WAL DROP staged, after which nothing of the group is written and the WAL forgets it. The
 * removal and the DROP wait while the released records are not on disk (they are written at
 * the start of the next flush, then the files go and the DROP is staged: never the DROP durable
 * before the record, and a crash before the record leaves a stash with its snapshot file, from
 * which the record is made when it is released again) and when the DROP could not be staged
 * (JR_ENOMEM): it is staged again at the start of each flush until it is, and meanwhile the id
 * is "retiring" and must not be recreated (a DROP staged after the new group's records would
 * void them).
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

/* Puts id on the list of groups whose WAL DROP waits (staged by jr__node_retry_drops). 0 or
 * JR_ENOMEM. */
static int retiring_add(jr_node *n, uint64_t id)
{
    if (n->nretiring == n->retiring_cap) {
        size_t cap = n->retiring_cap ? 2 * n->retiring_cap : 8;
        uint64_t *d = jr__realloc(n->alloc, n->retiring, cap * sizeof *d);
        if (!d) return JR_ENOMEM;
        n->retiring = d;
        n->retiring_cap = cap;
    }
    n->retiring[n->nretiring++] = id;
    jr__node_want_tick(n);
    return 0;
}

/* Removes id's snapshot files, then stages its WAL DROP: once nothing of what its replica knew
 * depends on them (its record is on disk, or there is none to keep). 0, JR_ENOMEM (nothing
 * staged: tried again), or JR_EIO (the WAL is done for). */
static int drop_now(jr_node *n, uint64_t id)
{
    remove_snapshots(n, id);
    return n->wal ? jr__wal_drop(n->wal, id) : 0;
}

int jr__node_group_destroy(jr_node *n, uint64_t id)
{
    jr_group *g = jr__map_get(&n->groups, id);
    if (n->flushing || (g && !g->closed)) return JR_EMISUSE;
    if (jr__node_group_retiring(n, id)) return 0;
    jr__stash *st = jr__map_get(&n->stashes, id);
    if (g) {
        jr__released_remember(n, g);
        jr__group_release(g);
    } else if (st) {
        /* never opened in this life: what it knew is read from its records and snapshot file,
         * which stay until that is on disk */
        int rc = jr__released_remember_stash(n, st);
        if (rc != 0) return rc; /* nothing changed: the stash is released again later */
    }
    if (st) {
        jr__map_del(&n->stashes, id);
        jr__stash_free(n, st);
    }
    /* A record not yet on disk: the DROP, and the removal of the snapshot files, wait for it
     * (the start of the next flush), so that a crash leaves the group's records and snapshot
     * files (a stash that knows what the record would) or the record in wal_dir/released. */
    int rc = n->released_dirty ? JR_ENOMEM : drop_now(n, id);
    if (rc != JR_ENOMEM) return 0; /* JR_EIO: the WAL is done for; nothing more of it is written */
    /* else its records stay in the WAL: a restart finds a stash */
    return retiring_add(n, id);
}

void jr__node_retire_now(jr_node *n, uint64_t id)
{
    if (n->flushing || !n->wal) return; /* a DROP staged inside the loop could be unstaged */
    for (size_t i = 0; i < n->nretiring; i++) {
        if (n->retiring[i] != id) continue;
        if (drop_now(n, id) == JR_ENOMEM) return; /* it waits as before */
        n->retiring[i] = n->retiring[--n->nretiring];
        return;
    }
}

void jr__node_retry_drops(jr_node *n)
{
    int rc = jr__released_save(n);
    if (rc != 0) { /* every DROP waits for the records; tried again at the next flush */
        jr__node_log(n, JR_LOG_ERROR,
                     "%s; %zu released group%s keep their WAL records until it "
                     "is written",
                     jr_node_errmsg(n), n->nretiring, n->nretiring == 1 ? "" : "s");
        return;
    }
    size_t keep = 0;
    for (size_t i = 0; i < n->nretiring; i++) {
        uint64_t id = n->retiring[i];
        rc = drop_now(n, id);
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
