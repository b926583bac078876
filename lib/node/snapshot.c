/*
 * snapshot — state-machine snapshots: taking them, storing them durably, streaming them to a
 * lagging follower, and installing them (dissertation §5.1 "Snapshotting memory-based state
 * machines", §5.3 InstallSnapshot).
 *
 * Files live in <wal_dir>/snap/ as "<group:016x>-<index:016x>.snap" (format in snapfile.h);
 * one per group normally, the older one being removed once a newer one is durable. A file is
 * written as "<name>.tmp", synced, then renamed into place (rename is durable when it returns),
 * so a crash leaves either the old snapshot or the new one, never half of one; leftover *.tmp
 * files are removed at open.
 *
 * Taking: once snapshot_entries entries, or SNAPSHOT_BYTES of entry payload, were applied since
 * the last snapshot, the fsm writes its state into a node-owned buffer (jr_snapshot_write), the
 * node compresses it into the file, then tells the core (jr__raft_snapshot_taken, keeping up to
 * TRAILING_MAX entries / TRAILING_BYTES of them for slightly slow followers, and on a leader
 * what its active followers still need, up to node->keep_bytes, and what a member catching up
 * still needs, up to node->join_keep_bytes (jr_node_config's keep_bytes and join_keep_bytes):
 * trailing_for) and the WAL
 * (jr__wal_compact). The file is durable before the WAL may forget the entries. The byte bound
 * keeps a group of large (batched) entries from holding gigabytes of log in memory: the core's
 * log rings stay the same size and are reused from one snapshot to the next.
 *
 * Sending: the leader's core reads chunks of the current file (io->snap_read). Receiving: the
 * follower appends chunks to "<group>-<index>.in.tmp" (io->snap_write, offset 0 restarts); at
 * the last chunk (io->snap_install) the file is synced, fully decoded and checked against the
 * index and term the leader announced, renamed into place, and only then restored into the fsm.
 *
 * Encryption at rest (a node key): every file here is a sealed file (log/atrest.h) holding the
 * snapshot file's bytes, under the node's snapshot key. What travels between servers stays the
 * plain snapshot file (each server may have its own key): the leader reads the range a chunk
 * needs through jr__sealf_pread, the follower seals chunks frame by frame as they arrive, so
 * no plaintext byte of a snapshot is written. A file of the other kind, or sealed under another
 * key, is refused with JR_EAUTH (nothing is removed for it); a damaged one is damage, as
 * without a key.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "node/node.h"
#include "log/snapfile.h"
#include "util/alloc.h"

#define TRAILING_MAX 1024
#define TRAILING_BYTES (2u << 20)
#define SNAPSHOT_BYTES (8u << 20)
#define UNPIN_MAX 1024 /* groups asked for a snapshot per segment-count change */

void jr__snap_path(const jr_node *n, uint64_t group, uint64_t index, const char *suffix, char *buf,
                   size_t cap)
{
    snprintf(buf, cap, "%s/%016" PRIx64 "-%016" PRIx64 ".snap%s", n->snap_dir, group, index,
             suffix ? suffix : "");
}

void jr__snap_close_files(jr_group *g)
{
    jr_vfs *v = g->node->vfs;
    if (g->snap_file) v->close(v->ctx, g->snap_file);
    if (g->in_file) v->close(v->ctx, g->in_file);
    g->snap_file = g->in_file = NULL;
    g->in_index = g->in_size = 0;
    if (g->in_seal) {
        jr__sealf_writer_free(g->in_seal);
        jr__free(g->node->alloc, g->in_seal);
        g->in_seal = NULL;
    }
}

int jr_snapshot_write(jr_snapshot_writer *w, const void *data, size_t n)
{
    if (!w || (!data && n)) return JR_EINVAL;
    if (w->err) return w->err;
    jr__buf_put(w->buf, data, n);
    if (w->buf->err) w->err = w->buf->err;
    return w->err;
}

/* With a node key: seals p[0..len) into n->snap_raw and points *p and *len at it. */
static int seal_bytes(jr_node *n, const uint8_t **p, size_t *len)
{
    if (!n->has_key) return 0;
    int rc = jr__sealf_encode(&n->snap_key, *p, *len, &n->snap_raw);
    if (rc != 0) return rc;
    *p = n->snap_raw.data;
    *len = n->snap_raw.len;
    return 0;
}

/* With a node key: opens the sealed file read into n->snap_enc, leaving the snapshot file's
 * bytes there (n->snap_raw is used as scratch). JR_EAUTH only for a file that verifies as
 * written under another key or without one (a sealed file's header with another key check; a
 * whole plaintext snapshot file when the node has a key; a sealed file's header when it has
 * none); anything else that does not decode is damage (JR_ECORRUPT, here or from the snapshot
 * decoder after). 0, JR_EAUTH, JR_EVERSION, JR_ECORRUPT, JR_ENOMEM. */
static int unseal_read(jr_node *n)
{
    const uint8_t *p = n->snap_enc.data;
    size_t len = n->snap_enc.len;
    uint64_t plain;
    if (!n->has_key)
        return jr__sealf_is(p, len) && jr__sealf_check(NULL, p, len, len, &plain) == JR_EAUTH
                   ? JR_EAUTH
                   : 0;
    if (!jr__sealf_is(p, len)) {
        jr__snapfile_info info;
        return jr__snapfile_check(p, len, &info) == 0 ? JR_EAUTH : JR_ECORRUPT;
    }
    int rc = jr__sealf_decode(&n->snap_key, p, len, &n->snap_raw);
    if (rc != 0) return rc;
    jr__buf t = n->snap_enc;
    n->snap_enc = n->snap_raw;
    n->snap_raw = t;
    return 0;
}

/* Writes bytes as the durable file for (group, index) (sealed with a node key). */
static int write_file(jr_node *n, uint64_t group, uint64_t index, const uint8_t *p, size_t len)
{
    jr_vfs *v = n->vfs;
    int rc = seal_bytes(n, &p, &len);
    if (rc != 0) return rc;
    char tmp[512], path[512];
    jr__snap_path(n, group, index, ".tmp", tmp, sizeof tmp);
    jr__snap_path(n, group, index, NULL, path, sizeof path);
    jr_file *f;
    rc = v->open(v->ctx, tmp, JR_O_CREATE | JR_O_TRUNCATE, &f);
    if (rc != 0) return rc;
    rc = v->pwrite(v->ctx, f, p, len, 0);
    if (rc == 0) rc = v->sync(v->ctx, f);
    int rc2 = v->close(v->ctx, f);
    if (rc == 0) rc = rc2;
    if (rc == 0) rc = v->rename(v->ctx, tmp, path);
    if (rc != 0) v->remove(v->ctx, tmp);
    return rc;
}

/* Reads a whole file into b. */
static int read_file(jr_node *n, const char *path, jr__buf *b)
{
    jr_vfs *v = n->vfs;
    jr_file *f;
    int rc = v->open(v->ctx, path, JR_O_READ, &f);
    if (rc != 0) return rc;
    uint64_t size = 0;
    rc = v->size(v->ctx, f, &size);
    jr__buf_reset(b);
    if (rc == 0 && size > SIZE_MAX / 2) rc = JR_ECORRUPT;
    if (rc == 0 && jr__buf_reserve(b, (size_t)size) != 0) rc = JR_ENOMEM;
    if (rc == 0) {
        size_t got = 0;
        rc = v->pread(v->ctx, f, b->data, (size_t)size, 0, &got);
        if (rc == 0 && got != size) rc = JR_EIO;
        if (rc == 0) b->len = (size_t)size;
    }
    v->close(v->ctx, f);
    return rc;
}

static void remove_snapshot(jr_node *n, uint64_t group, uint64_t index)
{
    char path[512];
    jr__snap_path(n, group, index, NULL, path, sizeof path);
    n->vfs->remove(n->vfs->ctx, path);
}

/* The largest t <= hi such that entries index-t+1..index hold at most `bytes` of payload (bytes
 * held grow with t: a binary search). */
static uint64_t fit(const jr__raft *r, uint64_t index, uint64_t hi, uint64_t bytes)
{
    uint64_t lo = 0;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (jr__raft_log_bytes(r, index - mid + 1, index) <= bytes)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Leader: 1 if member p is catching up at a snapshot at index — an observer of the latest
 * configuration (a peer joining for a grow or a move) whose acknowledged index moved within an
 * election timeout (`recent` is now less one) and whose lag (the log bytes after that index up
 * to index) did not grow over each of the last two windows of an election timeout: it gains on
 * the log, or a stall of less than a window set it back, and what it still needs is worth
 * keeping. One whose lag grows window after window would need ever more, and is sent a
 * snapshot as a follower would be. Updates what g watches of it. A member first watched is
 * given an election timeout to move and two windows to gain, as check-quorum gives a member it
 * has not heard from yet. At most JR__JOINERS members per group are watched; others count as
 * followers. */
static int catching_up(jr_group *g, const jr__progress *p, uint64_t index, uint64_t recent)
{
    if (p->voter) return 0;
    jr_node *n = g->node;
    uint64_t lag = p->match < index ? jr__raft_log_bytes(g->raft, p->match + 1, index) : 0;
    if (!g->joiners) {
        g->joiners = jr__calloc(n->alloc, JR__JOINERS, sizeof *g->joiners);
        if (!g->joiners) return 0; /* out of memory: a follower, until the next snapshot */
    }
    struct jr__joiner *j = g->joiners;
    int k = 0;
    while (k < JR__JOINERS && j[k].id != p->id) k++;
    if (k == JR__JOINERS) {
        for (k = 0; k < JR__JOINERS && j[k].id; k++) continue;
        if (k == JR__JOINERS) return 0;
        j[k].id = p->id;
        j[k].match = p->match;
        j[k].moved_at = j[k].window_at = n->now;
        j[k].window_lag = lag;
        j[k].grew = 0;
        return 1;
    }
    if (p->match > j[k].match) j[k].moved_at = n->now;
    j[k].match = p->match;
    if (n->now - j[k].window_at >= n->election_ns) { /* a window ends */
        if (lag > j[k].window_lag)
            j[k].grew = j[k].grew < 2 ? j[k].grew + 1 : 2;
        else
            j[k].grew = 0;
        j[k].window_at = n->now;
        j[k].window_lag = lag;
    }
    return j[k].moved_at >= recent && j[k].grew < 2;
}

/* Leader: forgets the watched members that are no longer observers of the configuration, and
 * the table once it watches none. */
static void forget_joiners(jr_group *g, const jr__conf *c)
{
    if (!g->joiners) return;
    int left = 0;
    for (int k = 0; k < JR__JOINERS; k++) {
        struct jr__joiner *j = &g->joiners[k];
        const jr__member *m = j->id ? jr__conf_find(c, j->id) : NULL;
        if (!m || m->voter) j->id = 0;
        left += j->id != 0;
    }
    if (!left) jr__group_forget_joiners(g);
}

void jr__group_forget_joiners(jr_group *g)
{
    jr__free(g->node->alloc, g->joiners);
    g->joiners = NULL;
}

/* Entries to keep behind a snapshot at index: up to TRAILING_MAX (and snapshot_entries) of them
 * holding at most TRAILING_BYTES, for slightly slow followers; and on a leader, everything a
 * follower it is replicating to (in contact within an election timeout as check-quorum counts
 * it: last_contact, so a new leader keeps what a member it has not heard from yet still needs
 * rather than send it a snapshot at its first answer; one being sent a snapshot needs what
 * follows the first one it was sent since it needed one, which it may install and go on from:
 * raft snapshot.c; an observer's as a member catching up's) still needs, up to
 * n->keep_bytes — with a window of large entries in flight, a healthy follower is often more than
 * TRAILING_BYTES behind, and compacting what it is about to receive would send it a snapshot and a
 * catch-up instead of the log — and up to n->join_keep_bytes for a member catching up
 * (catching_up): a joiner copies the stream from its peers while its log follows the leader's,
 * on a thread busy with that copy, and under publishers it falls further behind than a follower
 * does; sent a snapshot, it would fetch again the messages of every entry it missed. Each bound
 * is a cap, not a target: only what the furthest-behind member of each kind still needs is kept,
 * and a member that stops moving, or keeps falling further behind, counts as a follower again. */
static uint64_t trailing_for(jr_group *g, uint64_t index)
{
    const jr__raft *r = g->raft;
    jr_node *n = g->node;
    uint64_t first = jr__raft_first_index(r);
    if (index + 1 < first) return 0;
    uint64_t held = index + 1 - first;
    uint64_t hi = g->snapshot_entries < TRAILING_MAX ? g->snapshot_entries : TRAILING_MAX;
    uint64_t t = fit(r, index, hi < held ? hi : held, TRAILING_BYTES);
    if (jr__raft_role(r) != JR_LEADER) {
        jr__group_forget_joiners(g); /* what it watched as a leader */
        return t;
    }
    uint64_t need = 0, join_need = 0; /* entries the furthest-behind of each kind still needs */
    const jr__conf *c = jr__raft_conf(r);
    uint64_t recent = n->now > n->election_ns ? n->now - n->election_ns : 0;
    forget_joiners(g, c);
    for (uint32_t i = 0; i < c->n; i++) {
        jr__progress p;
        if (jr__raft_progress(r, i, &p) != 0 || p.id == jr__raft_self(r)) continue;
        int joining = catching_up(g, &p, index, recent);
        if (p.last_contact < recent) continue;
        /* A member being sent a snapshot needs the entries after it once it is installed:
         * compacting them meanwhile would send it another snapshot as soon as it installed
         * this one (a joiner would fetch the messages of those entries too). */
        uint64_t from = p.state == JR__SNAPSHOT ? p.snap_from : p.match;
        if (p.state == JR__SNAPSHOT) joining = !p.voter;
        if (from >= index) continue;
        uint64_t *nd = joining ? &join_need : &need;
        if (index - from > *nd) *nd = index - from;
    }
    if (need > t) t = fit(r, index, need < held ? need : held, n->keep_bytes);
    if (join_need > t) {
        uint64_t j = fit(r, index, join_need < held ? join_need : held, n->join_keep_bytes);
        if (j > t) t = j;
    }
    return t;
}

/* Is a snapshot due: enough entries or enough payload bytes applied since the last one? */
static int snapshot_due(const jr_group *g)
{
    if (g->applied < g->snap_retry) return 0;
    if (g->snap_wanted && g->applied > g->snap_index) return 1;
    if (g->applied >= g->snap_index + g->snapshot_entries) return 1;
    return jr__raft_log_bytes(g->raft, g->snap_index + 1, g->applied) >= SNAPSHOT_BYTES;
}

/* The node's snapshot buffers are shared by all groups; the meta group's snapshots are
 * megabytes with many streams, so none is kept between uses. */
static void release_bufs(jr_node *n)
{
    jr__buf_release(&n->snap_raw, JR__SCRATCH_KEEP);
    jr__buf_release(&n->snap_enc, JR__SCRATCH_KEEP);
}

int jr__snap_maybe_take(jr_group *g)
{
    jr_node *n = g->node;
    jr__raft *r = g->raft;
    if (!g->fsm.snapshot || g->conf_stale || g->closed || !g->conf_bytes) return 0;
    if (!snapshot_due(g)) return 0;
    g->snap_wanted = 0;
    uint64_t index = g->applied;
    jr__entry e;
    if (jr__raft_entry(r, index, &e) != 0) return 0; /* not held (cannot happen) */
    uint64_t term = e.term;

    jr_snapshot_writer w = {&n->snap_raw, 0};
    jr__buf_reset(&n->snap_raw);
    g->in_fsm = 1;
    int rc = g->fsm.snapshot(g->fsm.ctx, &w);
    g->in_fsm = 0;
    if (rc == 0) rc = w.err;
    if (rc == 0)
        rc = jr__snapfile_encode(&n->snap_enc, g->id, index, term, g->conf_bytes, g->conf_len,
                                 n->snap_raw.data, n->snap_raw.len);
    if (rc == 0) rc = write_file(n, g->id, index, n->snap_enc.data, n->snap_enc.len);
    release_bufs(n);
    if (rc != 0) {
        /* Try again after another batch of entries. */
        jr__node_log(n, JR_LOG_WARN, "group %" PRIu64 ": snapshot at %" PRIu64 " failed: %s", g->id,
                     index, jr_strerror(rc));
        g->snap_retry = index + g->snapshot_entries;
        return rc;
    }
    uint64_t trailing = trailing_for(g, index);
    rc = jr__raft_snapshot_taken(r, index, trailing);
    if (rc != 0) {
        jr__node_log(n, JR_LOG_WARN, "group %" PRIu64 ": core refused snapshot at %" PRIu64 ": %s",
                     g->id, index, jr_strerror(rc));
        remove_snapshot(n, g->id, index);
        return rc;
    }
    if (trailing) {
        uint64_t kept = jr__raft_log_bytes(r, index - trailing + 1, index);
        if (kept > n->kept_max) n->kept_max = kept;
    }
    uint64_t old = g->snap_index;
    g->snap_index = index;
    g->snap_term = term;
    if (g->snap_file) {
        n->vfs->close(n->vfs->ctx, g->snap_file);
        g->snap_file = NULL;
    }
    if (old && old != index) remove_snapshot(n, g->id, old);
    jr__group_mark_snapshot(g, index, term); /* the WAL may forget the entries behind it */
    return 0;
}

void jr__snap_unpin_wal(jr_node *n)
{
    size_t segs = jr__wal_segments(n->wal);
    if (segs == n->unpin_segs) return;
    n->unpin_segs = segs;
    uint64_t ids[UNPIN_MAX];
    size_t k = jr__wal_pins(n->wal, ids, UNPIN_MAX);
    if (k > UNPIN_MAX) k = UNPIN_MAX; /* the rest when the count changes again */
    for (size_t i = 0; i < k; i++) {
        jr_group *g = jr__map_get(&n->groups, ids[i]);
        if (!g || g->closed || !g->fsm.snapshot || g->applied <= g->snap_index) continue;
        g->snap_wanted = 1;
        jr__group_ready(g);
    }
}

int jr__snap_load(jr_group *g, uint64_t want, uint64_t *index, uint64_t *term, jr__conf *conf)
{
    jr_node *n = g->node;
    char path[512];
    jr__snap_path(n, g->id, want, NULL, path, sizeof path);
    int rc = read_file(n, path, &n->snap_enc);
    jr__snapfile_info info;
    if (rc == 0) rc = unseal_read(n);
    if (rc == 0) rc = jr__snapfile_decode(n->snap_enc.data, n->snap_enc.len, &info, &n->snap_raw);
    if (rc == 0 && (info.group != g->id || info.index != want)) rc = JR_ECORRUPT;
    if (rc == 0) rc = jr__conf_decode(conf, info.conf, info.conf_len);
    if (rc == 0 && !g->fsm.restore) rc = JR_ENOTSUP;
    if (rc == 0) {
        g->in_fsm = 1;
        rc = g->fsm.restore(g->fsm.ctx, info.index, n->snap_raw.data, n->snap_raw.len);
        g->in_fsm = 0;
    }
    release_bufs(n);
    if (rc != 0) {
        if (rc != JR_ENOMEM)
            jr__node_log(n, JR_LOG_ERROR, "group %" PRIu64 ": cannot load snapshot %s: %s", g->id,
                         path, jr_strerror(rc));
        return rc;
    }
    *index = info.index;
    *term = info.term;
    if (n->hooks.restored) n->hooks.restored(n->hooks.ctx, n, g->id, info.index, info.term);
    return 0;
}

int jr__snap_peek(jr_node *n, uint64_t group, uint64_t want, uint64_t *term, jr__conf *conf)
{
    char path[512];
    jr__snap_path(n, group, want, NULL, path, sizeof path);
    int rc = read_file(n, path, &n->snap_enc);
    jr__snapfile_info info;
    if (rc == 0) rc = unseal_read(n);
    if (rc == 0) rc = jr__snapfile_check(n->snap_enc.data, n->snap_enc.len, &info);
    if (rc == 0 && (info.group != group || info.index != want)) rc = JR_ECORRUPT;
    if (rc == 0) rc = jr__conf_decode(conf, info.conf, info.conf_len) ? JR_ECORRUPT : 0;
    if (rc == 0) *term = info.term;
    release_bufs(n);
    return rc;
}

int jr__snap_read(void *ctx, jr__raft *r, uint64_t index, uint64_t offset, void *buf, size_t cap,
                  size_t *nread)
{
    jr_group *g = ctx;
    jr_node *n = g->node;
    (void)r;
    *nread = 0;
    if (index != g->snap_index || index == 0) return JR_ENOTFOUND;
    if (!g->snap_file) {
        char path[512];
        jr__snap_path(n, g->id, index, NULL, path, sizeof path);
        int rc = n->vfs->open(n->vfs->ctx, path, JR_O_READ, &g->snap_file);
        if (rc != 0) {
            g->snap_file = NULL;
            return rc;
        }
    }
    if (n->has_key) {
        /* the plain snapshot file's bytes at offset, from the frames that hold them */
        int rc = jr__sealf_pread(&n->snap_key, n->vfs, g->snap_file, offset, buf, cap, nread,
                                 &n->snap_enc);
        jr__buf_release(&n->snap_enc, JR__SCRATCH_KEEP);
        return rc;
    }
    return n->vfs->pread(n->vfs->ctx, g->snap_file, buf, cap, offset, nread);
}

int jr__snap_write(void *ctx, jr__raft *r, uint64_t index, uint64_t offset, const void *data,
                   size_t len)
{
    jr_group *g = ctx;
    jr_node *n = g->node;
    jr_vfs *v = n->vfs;
    (void)r;
    if (offset == 0) {
        if (g->in_file) v->close(v->ctx, g->in_file);
        g->in_file = NULL;
        char path[512];
        jr__snap_path(n, g->id, index, ".in.tmp", path, sizeof path);
        int rc = v->open(v->ctx, path, JR_O_CREATE | JR_O_TRUNCATE, &g->in_file);
        if (rc != 0) {
            g->in_file = NULL;
            return rc;
        }
        g->in_index = index;
        g->in_size = 0;
        if (n->has_key) {
            if (!g->in_seal && !(g->in_seal = jr__calloc(n->alloc, 1, sizeof *g->in_seal)))
                return JR_ENOMEM;
            rc = jr__sealf_writer_begin(g->in_seal, &n->snap_key, n->alloc, v, g->in_file);
            if (rc != 0) return rc;
        }
    } else if (!g->in_file || g->in_index != index || offset > g->in_size ||
               (n->has_key && offset != g->in_size)) {
        return JR_EINVAL; /* the leader restarts from offset 0 */
    }
    int rc = n->has_key ? jr__sealf_writer_put(g->in_seal, v, g->in_file, data, len)
                        : v->pwrite(v->ctx, g->in_file, data, len, offset);
    if (rc != 0) return rc;
    if (offset + len > g->in_size) g->in_size = offset + len;
    return 0;
}

int jr__snap_install(void *ctx, jr__raft *r, uint64_t index, uint64_t term, const jr__conf *conf)
{
    jr_group *g = ctx;
    jr_node *n = g->node;
    jr_vfs *v = n->vfs;
    (void)r;
    if (!g->in_file || g->in_index != index) return JR_EINVAL;
    if (!g->fsm.restore) return JR_ENOTSUP;
    char tmp[512], path[512];
    jr__snap_path(n, g->id, index, ".in.tmp", tmp, sizeof tmp);
    jr__snap_path(n, g->id, index, NULL, path, sizeof path);
    int rc = !n->has_key  ? 0
             : g->in_seal ? jr__sealf_writer_end(g->in_seal, v, g->in_file)
                          : JR_EINVAL;
    if (rc == 0) rc = v->sync(v->ctx, g->in_file);
    v->close(v->ctx, g->in_file);
    g->in_file = NULL;
    if (g->in_seal) { /* its frame buffers are not kept between transfers */
        jr__sealf_writer_free(g->in_seal);
        jr__free(n->alloc, g->in_seal);
        g->in_seal = NULL;
    }
    jr__snapfile_info info;
    if (rc == 0) rc = read_file(n, tmp, &n->snap_enc);
    if (rc == 0) rc = unseal_read(n);
    if (rc == 0) rc = jr__snapfile_decode(n->snap_enc.data, n->snap_enc.len, &info, &n->snap_raw);
    if (rc == 0 && (info.group != g->id || info.index != index || info.term != term))
        rc = JR_ECORRUPT;
    if (rc == 0) rc = jr__group_set_conf(g, conf);
    if (rc == 0) rc = v->rename(v->ctx, tmp, path);
    if (rc != 0) {
        release_bufs(n);
        v->remove(v->ctx, tmp);
        jr__node_log(n, JR_LOG_WARN, "group %" PRIu64 ": snapshot %" PRIu64 " not installed: %s",
                     g->id, index, jr_strerror(rc));
        return rc;
    }
    /* Durable now: recovery prefers the newest snapshot file over older WAL entries. */
    uint64_t old = g->snap_index;
    g->snap_index = index;
    g->snap_term = term;
    if (g->snap_file) {
        v->close(v->ctx, g->snap_file);
        g->snap_file = NULL;
    }
    if (old && old != index) remove_snapshot(n, g->id, old);
    g->conf_stale = 0;
    g->in_fsm = 1;
    rc = g->fsm.restore(g->fsm.ctx, index, n->snap_raw.data, n->snap_raw.len);
    g->in_fsm = 0;
    release_bufs(n);
    if (rc != 0) {
        /* The durable snapshot is fine; this replica's state machine is not. */
        jr__node_log(n, JR_LOG_ERROR, "group %" PRIu64 ": fsm restore at %" PRIu64 " failed: %s",
                     g->id, index, jr_strerror(rc));
        g->damaged = 1;
        g->fsm_failed = 1;
        jr__fsmr_changed(g); /* its leader is told (fsmreport.c) */
    }
    g->applied = index;
    if (g->persisted < index) g->persisted = index;
    /* Requests waiting for entries the snapshot replaced: their fate is unknown here. */
    jr__op *op;
    while ((op = g->pending.head) != NULL && op->index <= index) {
        jr__opq_pop(&g->pending);
        jr__op_complete(n, op, JR_ELEADERLOST, 0);
    }
    /* The WAL learns of the snapshot before the entries that follow it (the file covers the
     * entries up to index already). */
    jr__group_mark_snapshot(g, index, term);
    if (n->hooks.restored) n->hooks.restored(n->hooks.ctx, n, g->id, index, term);
    return 0;
}
