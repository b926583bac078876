/*
 * released — what the replicas this node released knew of their groups (node.h jr__released),
 * kept on disk so that the node answers a VOUCH for such a group with it after a restart too.
 *
 * A replica released because a committed configuration left this server out may have counted
 * in commits that an asker which lost its WAL no longer knows of; the commit index and latest
 * configuration it had are how that asker learns of the later members (node.c vouch_unhosted,
 * raft/vouch.c). Forgetting them at a restart would answer "nothing" for it again.
 *
 * The file `wal_dir/released` holds every record, rewritten whole (temporary file, sync,
 * rename; rename is durable when it returns, the jr_vfs contract) at the start of the flush
 * after a change, little-endian:
 *   magic "JRRELS01" | count:u64 |
 *   count × { group:u64 (non-zero, each once) | commit:u64 | conf_index:u64 | conf_len:u32 |
 *             conf: jr__conf_encode bytes (conf_len of them) } |
 *   xxh3 of every byte before:u64
 * Plaintext, also with a node key: it holds group ids, indexes and server ids (hashes of their
 * names), what a VOUCH answer carries on the wire, never a payload.
 *
 * Order (retire.c): a released group's snapshot files are removed and its WAL DROP is staged
 * only once the file holding its record is durable, so a crash leaves either the group's
 * records in the WAL and its snapshot files (it is recovered as a stash) or the record on disk,
 * never neither. Releasing such a stash (jr__released_remember_stash) makes the record from
 * what it holds, as a raft core loaded from it would hold it.
 *
 * Bound: one record per group id (a later release replaces it), at most
 * JR__RELEASED_RECORD_MAX bytes each. A record goes when the group is created here again (its
 * replica answers for itself) and when the layer above finds the group deleted
 * (jr__node_released_forget, jr__node_released_sweep: at every full convergence of its meta
 * state, so a forget a crash lost is made again after the restart). So the records are those of
 * the groups that still exist and that this server left, and the file is rewritten at most once
 * per flush.
 *
 * Damage: a file that does not decode (checksum, bounds, a malformed configuration, a group
 * twice) is logged and trusted in no part: the node answers as it did before it kept the file,
 * "nothing", marked unfloored as after any restart; it is replaced at the next change. A file
 * that cannot be read (an I/O error) refuses the open.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "node/node.h"
#include "util/alloc.h"
#include "util/checksum.h"

#define RELEASED_NAME "released"
static const char released_magic[8] = {'J', 'R', 'R', 'E', 'L', 'S', '0', '1'};

/* The map ------------------------------------------------------------------------------*/

void jr__node_released_forget(jr_node *n, uint64_t id)
{
    jr__released *r = jr__map_del(&n->released, id);
    if (!r) return;
    jr__free(n->alloc, r);
    n->released_dirty = 1;
    /* A DROP that waited for this record (the group deleted as its replica was released) need
     * not wait for the file: nothing of the group is to be kept. */
    jr__node_retire_now(n, id);
}

void jr__node_released_sweep(jr_node *n, uint64_t lo, uint64_t hi,
                             int (*gone)(void *ctx, uint64_t id), void *ctx)
{
    for (size_t i = 0; i < n->released.cap;) {
        uint64_t id = n->released.slots[i].key;
        if (id && id >= lo && id < hi && gone(ctx, id)) {
            jr__node_released_forget(n, id); /* may move another key into slot i: look again */
            continue;
        }
        i++;
    }
}

void jr__node_released_free(jr_node *n)
{
    for (size_t i = 0; i < n->released.cap; i++)
        if (n->released.slots[i].key) jr__free(n->alloc, n->released.slots[i].val);
    jr__map_free(&n->released);
}

/* Puts a record of group id (replacing any); conf is conf_len bytes of jr__conf_encode. 0 or
 * JR_ENOMEM (nothing changed). */
static int put(jr_node *n, uint64_t id, uint64_t commit, uint64_t conf_index, const uint8_t *conf,
               uint32_t conf_len)
{
    jr__released *r = jr__malloc(n->alloc, sizeof *r + conf_len);
    if (!r) return JR_ENOMEM;
    r->commit = commit;
    r->conf_index = conf_index;
    r->conf_len = conf_len;
    memcpy(r->conf, conf, conf_len);
    jr__released *old = jr__map_get(&n->released, id);
    if (jr__map_put(&n->released, id, r) != 0) {
        jr__free(n->alloc, r);
        return JR_ENOMEM;
    }
    jr__free(n->alloc, old);
    n->released_dirty = 1;
    return 0;
}

void jr__released_remember(jr_node *n, jr_group *g)
{
    const jr__conf *c = jr__raft_conf(g->raft);
    uint8_t conf[JR__RELEASED_CONF_MAX];
    size_t len = jr__conf_encoded_len(c);
    if (len > sizeof conf) return; /* a jr__conf holds at most JR__MAX_MEMBERS */
    len = jr__conf_encode(c, conf);
    if (put(n, g->id, jr__raft_commit_index(g->raft), jr__raft_conf_index(g->raft), conf,
            (uint32_t)len) != 0)
        jr__node_log(n, JR_LOG_WARN,
                     "group %" PRIu64 ": out of memory; what its released replica knew is not "
                     "kept (a VOUCH for it is answered with nothing)",
                     g->id);
}

/* The latest configuration among s->ents[from, end): *index and the configuration in c. 1 if
 * there is one, 0 if none, JR_ECORRUPT if the newest does not decode (a raft core would refuse
 * to load it). */
static int stash_conf(const jr__stash *s, size_t from, size_t end, uint64_t *index, jr__conf *c)
{
    for (size_t i = end; i > from; i--) {
        const jr__stash_ent *se = &s->ents[i - 1];
        if (se->type != JR__ENTRY_CONFIG) continue;
        if (jr__conf_decode(c, s->arena + se->off, se->len) != 0) return JR_ECORRUPT;
        *index = se->index;
        return 1;
    }
    return 0;
}

int jr__released_remember_stash(jr_node *n, const jr__stash *s)
{
    uint64_t si = 0, st = 0;
    jr__conf c;
    if (s->snap_index) {
        int rc = jr__snap_peek(n, s->group, s->snap_index, &st, &c);
        if (rc == 0)
            si = s->snap_index;
        else if (rc != JR_ENOTFOUND && rc != JR_ECORRUPT && rc != JR_EVERSION && rc != JR_EAUTH)
            return jr__node_err(n, rc,
                                "group %" PRIu64 ": cannot read its snapshot file at %" PRIu64
                                " to keep what its released replica knew: %s",
                                s->group, s->snap_index, jr_strerror(rc));
        /* else the file is not a snapshot a raft core would load: as without one */
    }
    size_t from;
    uint64_t resumes, conf_index = si;
    size_t end = jr__stash_span(s, si, st, &from, &resumes);
    int have = stash_conf(s, from, end, &conf_index, &c);
    if (have == JR_ECORRUPT || (have == 0 && si == 0)) {
        jr__node_log(n, JR_LOG_WARN,
                     "group %" PRIu64 ": what its released replica knew is not known (%s); a "
                     "VOUCH for it is answered as before",
                     s->group, have ? "a configuration entry does not decode" : "no configuration");
        return 0;
    }
    uint64_t last = end > from ? s->ents[end - 1].index : si;
    uint64_t commit = s->has_hs ? s->hs.commit : 0;
    if (commit < si) commit = si;
    if (commit > last) commit = last;
    const jr__released *old = jr__map_get(&n->released, s->group);
    if (old && (old->commit > commit || (old->commit == commit && old->conf_index >= conf_index)))
        return 0;
    uint8_t conf[JR__RELEASED_CONF_MAX];
    if (jr__conf_encoded_len(&c) > sizeof conf) return 0; /* at most JR__MAX_MEMBERS */
    size_t len = jr__conf_encode(&c, conf);
    if (put(n, s->group, commit, conf_index, conf, (uint32_t)len) != 0)
        return jr__node_err(n, JR_ENOMEM,
                            "group %" PRIu64 ": out of memory keeping what its released "
                            "replica knew",
                            s->group);
    return 0;
}

/* The file's bytes ----------------------------------------------------------------------*/

int jr__released_encode(const jr__map *m, jr__buf *b)
{
    jr__buf_put(b, released_magic, sizeof released_magic);
    jr__buf_u64(b, (uint64_t)m->len);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key) continue;
        const jr__released *r = m->slots[i].val;
        jr__buf_u64(b, m->slots[i].key);
        jr__buf_u64(b, r->commit);
        jr__buf_u64(b, r->conf_index);
        jr__buf_u32(b, r->conf_len);
        jr__buf_put(b, r->conf, r->conf_len);
    }
    if (b->err) return b->err;
    jr__buf_u64(b, jr__xxh3(b->data, b->len));
    return b->err;
}

int jr__released_decode(const uint8_t *p, size_t len, jr__released_fn each, void *ctx)
{
    if (len < sizeof released_magic + 16 || memcmp(p, released_magic, sizeof released_magic) != 0)
        return JR_ECORRUPT;
    if (jr__get_u64(p + len - 8) != jr__xxh3(p, len - 8)) return JR_ECORRUPT;
    jr__rd rd;
    jr__rd_init(&rd, p + sizeof released_magic, len - sizeof released_magic - 8);
    uint64_t count = jr__rd_u64(&rd);
    if (rd.err || count > jr__rd_left(&rd) / JR__RELEASED_RECORD_MIN) return JR_ECORRUPT;
    for (uint64_t i = 0; i < count; i++) {
        jr__released_item it;
        it.group = jr__rd_u64(&rd);
        it.commit = jr__rd_u64(&rd);
        it.conf_index = jr__rd_u64(&rd);
        it.conf_len = jr__rd_u32(&rd);
        if (rd.err || it.group == 0 || it.conf_len > JR__RELEASED_CONF_MAX) return JR_ECORRUPT;
        it.conf = jr__rd_take(&rd, it.conf_len);
        jr__conf c;
        if (!it.conf || jr__conf_decode(&c, it.conf, it.conf_len) != 0) return JR_ECORRUPT;
        int rc = each(ctx, &it);
        if (rc != 0) return rc;
    }
    return jr__rd_left(&rd) == 0 ? 0 : JR_ECORRUPT;
}

/* The file ------------------------------------------------------------------------------*/

static void released_path(const jr_node *n, char *buf, size_t cap, const char *suffix)
{
    snprintf(buf, cap, "%s/" RELEASED_NAME "%s", n->wal_dir, suffix);
}

int jr__released_save(jr_node *n)
{
    if (!n->released_dirty) return 0;
    jr__buf b;
    jr__buf_init(&b, n->alloc);
    int rc = jr__released_encode(&n->released, &b);
    if (rc == 0) {
        char tmp[512], path[512];
        released_path(n, tmp, sizeof tmp, ".tmp");
        released_path(n, path, sizeof path, "");
        rc = jr__node_write_replacing(n, tmp, path, b.data, b.len);
    }
    jr__buf_free(&b);
    if (rc == 0) n->released_dirty = 0;
    return rc;
}

static int load_one(void *ctx, const jr__released_item *it)
{
    jr_node *n = ctx;
    if (jr__map_get(&n->released, it->group)) return JR_ECORRUPT; /* each group once */
    return put(n, it->group, it->commit, it->conf_index, it->conf, it->conf_len);
}

int jr__released_load(jr_node *n)
{
    char path[512];
    released_path(n, path, sizeof path, "");
    jr_vfs *v = n->vfs;
    jr_file *f;
    int rc = v->open(v->ctx, path, JR_O_READ, &f);
    if (rc == JR_ENOTFOUND) return 0; /* none released yet, or a data directory older than it */
    if (rc != 0) return jr__node_err(n, rc, "cannot open %s: %s", path, jr_strerror(rc));
    uint64_t size = 0;
    uint8_t *data = NULL;
    size_t got = 0;
    rc = v->size(v->ctx, f, &size);
    if (rc == 0 && size > SIZE_MAX / 2) rc = JR_ECORRUPT;
    if (rc == 0 && size > 0 && !(data = jr__malloc(n->alloc, (size_t)size))) rc = JR_ENOMEM;
    if (rc == 0 && size > 0) rc = v->pread(v->ctx, f, data, (size_t)size, 0, &got);
    v->close(v->ctx, f);
    if (rc == 0) {
        rc = got == size ? jr__released_decode(data, got, load_one, n) : JR_ECORRUPT;
        n->released_dirty = 0; /* what was read is what the file holds */
    }
    jr__free(n->alloc, data);
    if (rc == JR_ECORRUPT) {
        jr__node_released_free(n);
        jr__map_init(&n->released, n->alloc);
        n->released_dirty = 1; /* replaced by what this life releases, at its next flush */
        jr__node_log(n, JR_LOG_ERROR,
                     "%s is damaged (%s); none of it is used: a VOUCH for a group a replica of "
                     "this server released before this life is answered with nothing",
                     path, jr_strerror(rc));
        return 0;
    }
    if (rc != 0) return jr__node_err(n, rc, "cannot read %s: %s", path, jr_strerror(rc));
    if (n->released.len)
        jr__node_log(n, JR_LOG_INFO, "%zu released replica%s remembered (%s)",
                     (size_t)n->released.len, n->released.len == 1 ? "" : "s", path);
    return 0;
}
