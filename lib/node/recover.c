/*
 * recover — rebuilds, at jr_node_open, what each group had made durable.
 *
 * The shared WAL replays records of every group in log order (lib/log/wal.h); this file sorts
 * them into one stash per group: the last hard state, the last compaction marker, and the log
 * as it stands after every supersession (an entry record for index i replaces every earlier
 * record of that group with index >= i) and truncation (on_truncate). Snapshot files
 * (snapshot.c) are listed once so that a group learns its newest snapshot without another
 * directory scan. A stash lives until jr_group_open loads it into a raft core, or until
 * close.
 *
 * Damage: a group the WAL reports damaged keeps its stash with damaged = 1 (group.c opens it
 * in the damaged state); damage the WAL cannot attribute (group 0) marks every group damaged.
 *
 * The node's mark: a file `wal_dir/node` written once, after the WAL is first created:
 *   magic "JRNODE01" | xxh3 of the node's name:u64 | xxh3 of the 16 bytes before:u64
 * It is the evidence a lost WAL leaves behind: a wal_dir with the mark and without any segment
 * held a WAL that is gone (deleted, or the disk lost it), which an empty WAL alone cannot tell
 * from a node's first start. Such a node opens with wal_lost set: every group it opens — from a
 * surviving snapshot, bootstrapped again or joining — starts unvouched and damaged (raft/vouch.c),
 * so it grants no vote and counts toward no commit until its peers have repaired it. A mark
 * without segments is all a lost WAL can leave; one file of a fault (the mark alone lost) is
 * harmless: it is written again. A mark of another name refuses the open (JR_EINVAL): wal_dir
 * belongs to another server. A damaged mark counts as present.
 *
 * The servers an operator declared gone (jr_node_rescue): a file `wal_dir/rescued`, written
 * (temporary file, sync, rename) before the declaration takes effect:
 *   magic "JRRESC01" | count:u64 | count x server id:u64 | xxh3 of the bytes before:u64
 * so the declaration outlives a restart: the groups reopened from disk, unvouched, would
 * otherwise wait again for the server that is gone. A damaged or unreadable file is logged
 * and ignored: the groups then wait, which loses nothing (the operator declares again).
 *
 * What the replicas this node released knew of their groups: `wal_dir/released`, read here
 * (released.c has its format and rules).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node/node.h"
#include "node/rpc.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "util/deadline.h"
#include "util/hex.h"

static jr__stash *stash_get(jr_node *n, uint64_t group, int *err)
{
    jr__stash *s = jr__map_get(&n->stashes, group);
    if (s) return s;
    s = jr__calloc(n->alloc, 1, sizeof *s);
    if (!s) {
        *err = JR_ENOMEM;
        return NULL;
    }
    s->group = group;
    if (jr__map_put(&n->stashes, group, s) != 0) {
        jr__free(n->alloc, s);
        *err = JR_ENOMEM;
        return NULL;
    }
    return s;
}

void jr__stash_free(jr_node *n, jr__stash *s)
{
    if (!s) return;
    jr__free(n->alloc, s->ents);
    jr__free(n->alloc, s->arena);
    jr__free(n->alloc, s);
}

void jr__stash_free_all(jr_node *n)
{
    for (size_t i = 0; i < n->stashes.cap; i++)
        if (n->stashes.slots[i].key) jr__stash_free(n, n->stashes.slots[i].val);
    jr__map_free(&n->stashes);
}

/* Drops stash entries with index >= from (the arena shrinks back to the first dropped one). */
static void stash_truncate(jr__stash *s, uint64_t from)
{
    while (s->nents && s->ents[s->nents - 1].index >= from) {
        s->nents--;
        s->alen = (size_t)s->ents[s->nents].off;
    }
}

/* Drops stash entries with index <= upto (compaction); the arena is compacted too. */
static void stash_compact(jr__stash *s, uint64_t upto)
{
    size_t k = 0;
    while (k < s->nents && s->ents[k].index <= upto) k++;
    if (k == 0) return;
    if (k == s->nents) {
        s->nents = 0;
        s->alen = 0;
        return;
    }
    uint64_t base = s->ents[k].off;
    memmove(s->arena, s->arena + base, s->alen - (size_t)base);
    s->alen -= (size_t)base;
    memmove(s->ents, s->ents + k, (s->nents - k) * sizeof *s->ents);
    s->nents -= k;
    for (size_t i = 0; i < s->nents; i++) s->ents[i].off -= base;
}

size_t jr__stash_span(const jr__stash *s, uint64_t si, uint64_t st, size_t *from, uint64_t *resumes)
{
    uint64_t want = si + 1, last_term = st;
    size_t k = 0;
    *resumes = 0;
    while (k < s->nents && s->ents[k].index < want) k++;
    /* The WAL's entry at the snapshot's index has another term: the log after it belongs to an
     * abandoned history (the install's truncation did not reach the disk before a crash; the
     * snapshot file did). Nothing after the snapshot. */
    if (si && k > 0 && s->ents[k - 1].index == si && s->ents[k - 1].term != st) k = s->nents;
    if (k < s->nents && s->ents[k].index != want) {
        *resumes = s->ents[k].index;
        k = s->nents;
    }
    *from = k;
    for (; k < s->nents; k++) {
        if (s->ents[k].term < last_term) break; /* a stale suffix from before a snapshot install */
        last_term = s->ents[k].term;
    }
    return k;
}

static int on_entry(void *ctx, uint64_t group, const jr__entry *e)
{
    jr_node *n = ctx;
    int err = 0;
    jr__stash *s = stash_get(n, group, &err);
    if (!s) return err;
    stash_truncate(s, e->index);
    if (s->nents && s->ents[s->nents - 1].index + 1 != e->index) {
        /* A gap: what came before can never be loaded contiguously with this; the log
         * restarts here (e.g. after a snapshot install whose compaction record is later). */
        s->nents = 0;
        s->alen = 0;
    }
    if (s->nents == s->ecap) {
        size_t cap = s->ecap ? s->ecap * 2 : 16;
        jr__stash_ent *ne = jr__realloc(n->alloc, s->ents, cap * sizeof *ne);
        if (!ne) return JR_ENOMEM;
        s->ents = ne;
        s->ecap = cap;
    }
    if (s->alen + e->len > s->acap) {
        size_t cap = s->acap ? s->acap : 256;
        while (cap < s->alen + e->len) cap *= 2;
        uint8_t *na = jr__realloc(n->alloc, s->arena, cap);
        if (!na) return JR_ENOMEM;
        s->arena = na;
        s->acap = cap;
    }
    jr__stash_ent *se = &s->ents[s->nents++];
    se->term = e->term;
    se->index = e->index;
    se->type = e->type;
    se->len = e->len;
    se->off = s->alen;
    if (e->len) memcpy(s->arena + s->alen, e->data, e->len);
    s->alen += e->len;
    return 0;
}

static int on_hardstate(void *ctx, uint64_t group, const jr__hardstate *hs)
{
    jr_node *n = ctx;
    int err = 0;
    jr__stash *s = stash_get(n, group, &err);
    if (!s) return err;
    s->hs = *hs;
    s->has_hs = 1;
    return 0;
}

static int on_compact(void *ctx, uint64_t group, uint64_t index, uint64_t term)
{
    jr_node *n = ctx;
    int err = 0;
    jr__stash *s = stash_get(n, group, &err);
    if (!s) return err;
    if (index > s->compact_index) {
        s->compact_index = index;
        s->compact_term = term;
    }
    stash_compact(s, index);
    return 0;
}

static int on_drop(void *ctx, uint64_t group)
{
    jr_node *n = ctx;
    jr__stash *s = jr__map_del(&n->stashes, group);
    jr__stash_free(n, s);
    return 0;
}

/* A truncation record (e.g. a snapshot install that discarded a conflicting log): entries at
 * or above `from` replayed before it are void. */
static int on_truncate(void *ctx, uint64_t group, uint64_t from)
{
    jr_node *n = ctx;
    jr__stash *s = jr__map_get(&n->stashes, group);
    if (s) stash_truncate(s, from);
    return 0;
}

static int on_damaged(void *ctx, uint64_t group, const char *why)
{
    jr_node *n = ctx;
    jr__node_log(n, JR_LOG_ERROR, "WAL damage (group %" PRIu64 "): %s", group, why ? why : "");
    if (group == 0) {
        n->all_damaged = 1;
        return 0;
    }
    int err = 0;
    jr__stash *s = stash_get(n, group, &err);
    if (!s) return err;
    s->damaged = 1;
    return 0;
}

/* Snapshot files are "<group:016x>-<index:016x>.snap" in snap_dir; "*.tmp" are unfinished. */
typedef struct list_ctx {
    jr_node *n;
    int err;
} list_ctx;

static int on_snap_name(void *arg, const char *name)
{
    list_ctx *lc = arg;
    jr_node *n = lc->n;
    size_t len = strlen(name);
    char path[512];
    if (len > 4 && strcmp(name + len - 4, ".tmp") == 0) {
        snprintf(path, sizeof path, "%s/%s", n->snap_dir, name);
        n->vfs->remove(n->vfs->ctx, path); /* unfinished write or receive: garbage */
        return 0;
    }
    uint64_t group, index;
    if (len != 38 || name[16] != '-' || strcmp(name + 33, ".snap") != 0 ||
        jr__hex16_parse(name, &group) || jr__hex16_parse(name + 17, &index) || group == 0 ||
        index == 0)
        return 0; /* not ours */
    int err = 0;
    jr__stash *s = stash_get(n, group, &err);
    if (!s) return lc->err = err;
    if (index > s->snap_index) s->snap_index = index;
    return 0;
}

/* The node's mark (see the top of this file) ---------------------------------------------*/

#define MARK_NAME "node"
#define MARK_LEN 24
static const char mark_magic[8] = {'J', 'R', 'N', 'O', 'D', 'E', '0', '1'};

static void mark_path(const jr_node *n, char *buf, size_t cap, const char *suffix)
{
    snprintf(buf, cap, "%s/" MARK_NAME "%s", n->wal_dir, suffix);
}

static int count_segment(void *arg, const char *name)
{
    size_t len = strlen(name);
    if (len > 4 && strcmp(name + len - 4, ".wal") == 0) ++*(size_t *)arg;
    return 0;
}

/* *present: the mark exists (whole or damaged); *whole: it is this server's and intact. 0,
 * JR_EINVAL (another server's), or an I/O error. */
static int mark_read(jr_node *n, int *present, int *whole)
{
    char path[512];
    mark_path(n, path, sizeof path, "");
    *present = *whole = 0;
    jr_file *f;
    int rc = n->vfs->open(n->vfs->ctx, path, JR_O_READ, &f);
    if (rc == JR_ENOTFOUND) return 0;
    if (rc != 0) return jr__node_err(n, rc, "cannot open %s: %s", path, jr_strerror(rc));
    uint8_t b[MARK_LEN];
    size_t got = 0;
    rc = n->vfs->pread(n->vfs->ctx, f, b, sizeof b, 0, &got);
    n->vfs->close(n->vfs->ctx, f);
    if (rc != 0) return jr__node_err(n, rc, "cannot read %s: %s", path, jr_strerror(rc));
    *present = 1;
    if (got != MARK_LEN || memcmp(b, mark_magic, sizeof mark_magic) != 0 ||
        jr__get_u64(b + 16) != jr__xxh3(b, 16)) {
        jr__node_log(n, JR_LOG_WARN, "%s is damaged; it is written again", path);
        return 0;
    }
    if (jr__get_u64(b + 8) != jr__xxh3(n->name, strlen(n->name)))
        return jr__node_err(n, JR_EINVAL, "wal_dir: %s holds the WAL of another server",
                            n->wal_dir);
    *whole = 1;
    return 0;
}

int jr__node_write_replacing(jr_node *n, const char *tmp, const char *path, const uint8_t *b,
                             size_t len)
{
    jr_file *f;
    int rc = n->vfs->open(n->vfs->ctx, tmp, JR_O_CREATE | JR_O_TRUNCATE, &f);
    if (rc == 0) {
        rc = n->vfs->pwrite(n->vfs->ctx, f, b, len, 0);
        if (rc == 0) rc = n->vfs->sync(n->vfs->ctx, f);
        int crc = n->vfs->close(n->vfs->ctx, f);
        if (rc == 0) rc = crc;
    }
    if (rc == 0) rc = n->vfs->rename(n->vfs->ctx, tmp, path);
    if (rc != 0) return jr__node_err(n, rc, "cannot write %s: %s", path, jr_strerror(rc));
    return 0;
}

/* Writes the mark (temporary file, sync, rename). */
static int mark_write(jr_node *n)
{
    char tmp[512], path[512];
    mark_path(n, tmp, sizeof tmp, ".tmp");
    mark_path(n, path, sizeof path, "");
    uint8_t b[MARK_LEN];
    memcpy(b, mark_magic, sizeof mark_magic);
    jr__put_u64(b + 8, jr__xxh3(n->name, strlen(n->name)));
    jr__put_u64(b + 16, jr__xxh3(b, 16));
    return jr__node_write_replacing(n, tmp, path, b, sizeof b);
}

/* The servers declared gone ------------------------------------------------------------*/

#define RESCUED_NAME "rescued"
#define RESCUED_MAX (sizeof((jr_node *)0)->rescued / sizeof(jr__id))
static const char rescued_magic[8] = {'J', 'R', 'R', 'E', 'S', 'C', '0', '1'};

static void rescued_path(const jr_node *n, char *buf, size_t cap, const char *suffix)
{
    snprintf(buf, cap, "%s/" RESCUED_NAME "%s", n->wal_dir, suffix);
}

int jr__rescued_write(jr_node *n)
{
    char tmp[512], path[512];
    rescued_path(n, tmp, sizeof tmp, ".tmp");
    rescued_path(n, path, sizeof path, "");
    uint8_t b[8 + 8 + RESCUED_MAX * 8 + 8];
    size_t len = 0;
    memcpy(b, rescued_magic, sizeof rescued_magic);
    len += sizeof rescued_magic;
    jr__put_u64(b + len, n->nrescued);
    len += 8;
    for (uint8_t i = 0; i < n->nrescued; i++, len += 8) jr__put_u64(b + len, n->rescued[i]);
    jr__put_u64(b + len, jr__xxh3(b, len));
    len += 8;
    return jr__node_write_replacing(n, tmp, path, b, len);
}

/* Reads wal_dir/rescued into n->rescued (none: nothing). Only a failure to open the directory's
 * file for a reason other than its absence is an error; damage is logged and ignored. */
static void rescued_read(jr_node *n)
{
    char path[512];
    rescued_path(n, path, sizeof path, "");
    jr_file *f;
    int rc = n->vfs->open(n->vfs->ctx, path, JR_O_READ, &f);
    if (rc == JR_ENOTFOUND) return;
    if (rc != 0) {
        jr__node_log(n, JR_LOG_WARN, "cannot open %s: %s; no server is taken as gone", path,
                     jr_strerror(rc));
        return;
    }
    uint8_t b[8 + 8 + RESCUED_MAX * 8 + 8];
    size_t got = 0;
    rc = n->vfs->pread(n->vfs->ctx, f, b, sizeof b, 0, &got);
    n->vfs->close(n->vfs->ctx, f);
    uint64_t cnt = got >= 16 ? jr__get_u64(b + 8) : UINT64_MAX;
    if (rc != 0 || got < 24 || memcmp(b, rescued_magic, sizeof rescued_magic) != 0 ||
        cnt > RESCUED_MAX || got != 24 + cnt * 8 ||
        jr__get_u64(b + got - 8) != jr__xxh3(b, got - 8)) {
        jr__node_log(n, JR_LOG_WARN,
                     "%s is damaged or unreadable; no server is taken as gone (declare it "
                     "again with jr_node_rescue)",
                     path);
        return;
    }
    n->nrescued = (uint8_t)cnt;
    for (uint8_t i = 0; i < n->nrescued; i++) n->rescued[i] = jr__get_u64(b + 16 + 8 * (size_t)i);
    jr__node_log(n, JR_LOG_WARN,
                 "RESCUE: %u server%s declared gone earlier (%s): groups do not wait for %s",
                 (unsigned)cnt, cnt == 1 ? "" : "s", path, cnt == 1 ? "it" : "them");
}

int jr__recover_open(jr_node *n, uint64_t segment_bytes, uint32_t sync_interval_ms)
{
    /* mkdir's JR_EEXIST means a component of the path exists and is not a directory */
    const char *dir = n->wal_dir;
    int rc = n->vfs->mkdir(n->vfs->ctx, dir);
    if (rc == 0) rc = n->vfs->mkdir(n->vfs->ctx, dir = n->snap_dir);
    if (rc == JR_EEXIST)
        return jr__node_err(n, JR_EINVAL,
                            "wal_dir: cannot create %s: not a directory (it, or a directory "
                            "above it, is a file)",
                            dir);
    if (rc != 0) return jr__node_err(n, rc, "wal_dir: cannot create %s: %s", dir, jr_strerror(rc));

    int marked, whole;
    size_t segments = 0;
    rc = mark_read(n, &marked, &whole);
    if (rc != 0) return rc;
    rc = n->vfs->list(n->vfs->ctx, n->wal_dir, count_segment, &segments);
    if (rc != 0) return jr__node_err(n, rc, "cannot list %s: %s", n->wal_dir, jr_strerror(rc));
    n->reborn = marked || segments;
    if (marked || segments)
        n->rpc_wary_until = jr__deadline(n->now, JR__RPC_KEEP_NS); /* an earlier life ran here */
    if (marked && segments == 0) {
        n->wal_lost = 1;
        jr__node_log(n, JR_LOG_ERROR,
                     "WAL lost: %s has this server's mark but no WAL segment; every group "
                     "opens damaged and waits for its peers to repair it",
                     n->wal_dir);
    }

    jr__wal_config wc;
    memset(&wc, 0, sizeof wc);
    wc.vfs = n->vfs;
    wc.dir = n->wal_dir;
    wc.alloc = n->alloc;
    wc.segment_bytes = segment_bytes;
    wc.sync_policy = n->sync_policy;
    wc.sync_interval_ns = (uint64_t)sync_interval_ms * 1000000u;
    wc.key = n->has_key ? n->node_key : NULL;
    /* On a real disk a flush that grows the file also makes its sync write the inode and the
     * allocation (an fdatasync after an extending write): keep the segment filled ahead. */
    wc.prealloc_bytes = n->vfs == jr_vfs_posix() ? ((uint64_t)1 << 20) : 0;
    jr__wal_replay rp = {n, on_entry, on_hardstate, on_compact, on_drop, on_damaged, on_truncate};
    rc = jr__wal_open(&wc, &rp, &n->wal);
    if (rc == JR_EAUTH) {
        n->wal = NULL;
        return jr__node_err(n, rc, "key: the WAL in %s %s; nothing was changed", n->wal_dir,
                            n->has_key ? "is not encrypted under this key (another key, or "
                                         "written without one)"
                                       : "is encrypted and no key was given");
    }
    if (rc != 0) {
        n->wal = NULL;
        return jr__node_err(n, rc, "cannot open the WAL in %s: %s", n->wal_dir, jr_strerror(rc));
    }

    /* after the WAL's first segment exists: a crash in between leaves segments and no mark,
     * which is written then */
    if (!whole) {
        rc = mark_write(n);
        if (rc != 0) return rc;
    }

    rescued_read(n);
    rc = jr__released_load(n);
    if (rc != 0) return rc;

    list_ctx lc = {n, 0};
    rc = n->vfs->list(n->vfs->ctx, n->snap_dir, on_snap_name, &lc);
    if (rc == 0) rc = lc.err;
    if (rc != 0) return jr__node_err(n, rc, "cannot list %s: %s", n->snap_dir, jr_strerror(rc));
    return 0;
}
