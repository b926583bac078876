/*
 * snapshot — compaction behind state-machine snapshots, and InstallSnapshot in chunks (§5).
 *
 * The node takes snapshots (jr__raft_snapshot_taken); the log before the snapshot is dropped
 * except for `trailing` entries that let slightly slow followers catch up from the log.
 *
 * A follower that needs compacted entries is sent the snapshot: the leader reads chunks through
 * io->snap_read and sends one at a time; the follower writes each through io->snap_write and
 * answers with the offset it wants next, so a lost chunk is resent from there after a few silent
 * heartbeat ticks (replication.c) and a restarted transfer resumes where it stopped. The last chunk
 * (shorter than snap_chunk_bytes, possibly empty) is marked done; the follower then calls
 * io->snap_install and §5.3: "if existing log entry has same index and term as snapshot's last
 * included entry, retain log entries following it"; otherwise it discards the whole log. A snapshot
 * taken while one is being sent replaces it at the next chunk or retry (the node keeps one file per
 * group); the follower may still install one sent before, and its answer that it did is taken if
 * the log still follows that snapshot (the node keeps the entries after the first one sent:
 * jr__progress.snap_from), so it goes on from the log rather than be sent the newer one — on a link
 * slower than the leader takes snapshots, each answer would otherwise come for a snapshot already
 * replaced. The snapshot bytes are opaque here (the node compresses and checksums them).
 */
#include <string.h>

#include "impl.h"
#include "util/alloc.h"

/* Makes c (interned; a reference is taken) the snapshot configuration. */
static void set_snapconf(jr__raft *r, const jr__conf *c)
{
    const jr__conf *old = r->snap_conf;
    r->snap_conf = jr__confs_ref(c);
    jr__confs_put(r->confs, old);
}

int jr__raft_snapshot_taken(jr__raft *r, uint64_t index, uint64_t trailing)
{
    if (index > r->applied || index > r->commit || index < r->log.first) return JR_EINVAL;
    if (index <= r->snap_index) return 0;
    set_snapconf(r, jr__memb_at(r, index));
    r->snap_term = jr__memlog_term(&r->log, index);
    r->snap_index = index;
    if (index > trailing && index - trailing >= r->log.first) {
        jr__memlog_compact(&r->log, index - trailing);
        jr__memb_compacted(r);
    }
    return 0;
}

void jr__snap_restore(jr__raft *r, uint64_t index, uint64_t term, const jr__conf *c)
{
    if (index >= r->log.first && index <= r->log.last && jr__memlog_term(&r->log, index) == term) {
        jr__memlog_compact(&r->log, index);
        jr__memb_compacted(r);
        if (r->ncidx == 0) jr__memb_reset(r, c, index);
        if (r->durable < index) r->durable = index;
    } else {
        /* The log conflicts with the snapshot: all of it goes. What the node holds above index
         * is a stale suffix; durable = index makes jr__raft_unpersisted() report the cut. */
        jr__memlog_reset(&r->log, index, term);
        jr__memb_reset(r, c, index);
        r->durable = index;
    }
    r->snap_index = index;
    r->snap_term = term;
    set_snapconf(r, c);
    if (r->commit < index) r->commit = index;
    if (r->applied < index) r->applied = index;
}

/* Leader ---------------------------------------------------------------------------------------*/

void jr__snap_send(jr__raft *r, jr__prog *p, uint64_t now)
{
    (void)now;
    if (p->snap_index != r->snap_index) jr__prog_snapshot(p, r->snap_index); /* a newer one */
    p->paused = 1; /* whatever happens below, the heartbeat tick retries */
    if (!r->io.snap_read) return;
    if (!r->chunk) {
        r->chunk = jr__malloc(r->alloc, r->cfg.snap_chunk_bytes);
        if (!r->chunk) return;
    }
    size_t n = 0, cap = r->cfg.snap_chunk_bytes;
    if (r->io.snap_read(r->io.ctx, r, p->snap_index, p->snap_offset, r->chunk, cap, &n) || n > cap)
        return;
    uint8_t conf[16 + JR__MAX_MEMBERS * 9];
    jr__msg m = {.type = JR__MSG_SNAP, .to = p->id};
    m.u.snap.index = p->snap_index;
    m.u.snap.sterm = r->snap_term;
    m.u.snap.offset = p->snap_offset;
    m.u.snap.done = n < cap;
    m.u.snap.total = m.u.snap.done ? p->snap_offset + n : 0;
    m.u.snap.conf_len = (uint32_t)jr__conf_encode(r->snap_conf, conf);
    m.u.snap.conf = conf;
    m.u.snap.len = (uint32_t)n;
    m.u.snap.data = r->chunk;
    jr__raft_send(r, &m);
}

void jr__snap_on_resp(jr__raft *r, uint64_t now, const jr__msg *m)
{
    jr__prog *p = jr__prog_find(r, m->from);
    if (!p) return;
    jr__prog_heard(p, now);
    if (p->state != JR__SNAPSHOT) return;
    uint64_t index = m->u.snap_resp.index;
    if (index != p->snap_index) {
        /* It installed a snapshot it was sent before the one being sent now (taken meanwhile):
         * if the log still follows it, it goes on from there rather than be sent the newer one
         * (its answer to that may be overtaken by another newer one, on a link slower than the
         * leader takes snapshots). */
        if (m->u.snap_resp.done && !m->u.snap_resp.reject && index >= p->snap_from &&
            index < p->snap_index && index >= r->log.base_index && index <= r->log.last)
            p->snap_index = index;
        else
            return;
    }
    if (m->u.snap_resp.reject) {
        /* try again from the log (or a fresh snapshot) on the next heartbeat tick */
        jr__prog_probe(p, p->match + 1);
        p->paused = 1;
        return;
    }
    if (m->u.snap_resp.done) {
        if (p->snap_index > r->log.last) return; /* cannot happen; keep match <= last */
        jr__prog_acked(r, p, p->snap_index);
        jr__vouch_progress(p);
        if (jr__prog_replicate(r, p) != 0) jr__prog_probe(p, p->match + 1);
        jr__repl_maybe_commit(r, now);
        if (r->role != ROLE_LEADER) return;
        jr__xfer_progress(r, p);
        jr__repl_send_append(r, p, now);
        return;
    }
    /* "send me X" while the chunk at X is out: an answer to a duplicate; do not resend */
    if (m->u.snap_resp.offset == p->snap_offset && p->paused) return;
    p->snap_offset = m->u.snap_resp.offset;
    p->snap_moved = 1;
    jr__snap_send(r, p, now);
}

/* Follower -------------------------------------------------------------------------------------*/

int jr__snap_check(const jr__msg *m)
{
    if (m->u.snap.index == 0 || m->u.snap.sterm == 0 || m->u.snap.sterm > m->term ||
        (m->u.snap.len && !m->u.snap.data) || !m->u.snap.conf ||
        m->u.snap.offset > UINT64_MAX - m->u.snap.len)
        return JR_EINVAL;
    jr__conf c;
    if (jr__conf_decode(&c, m->u.snap.conf, m->u.snap.conf_len) || jr__conf_voters(&c) == 0)
        return JR_EINVAL;
    return 0;
}

static void reply(jr__raft *r, const jr__msg *m, uint64_t offset, int done, int rej)
{
    jr__msg resp = {.type = JR__MSG_SNAP_RESP, .to = m->from};
    resp.u.snap_resp.index = m->u.snap.index;
    resp.u.snap_resp.offset = offset;
    resp.u.snap_resp.done = (uint8_t)done;
    resp.u.snap_resp.reject = (uint8_t)rej;
    jr__raft_send(r, &resp);
}

void jr__snap_on_snap(jr__raft *r, uint64_t now, const jr__msg *m)
{
    if (r->role == ROLE_LEADER) return;
    jr__repl_heard_leader(r, now, m->from);
    uint64_t index = m->u.snap.index;
    /* We hold all of it already, durably: "done" makes the leader record a match at index, so
     * it must not cover entries that are only in memory (a crash would lose them while the
     * leader's heartbeats tell us to commit whatever sits at those indexes then). */
    if (index <= r->commit && index <= r->durable) {
        reply(r, m, 0, 1, 0);
        return;
    }
    if (!r->rs_active || r->rs_index != index) {
        if (m->u.snap.offset != 0) { /* we never saw its start */
            reply(r, m, 0, 0, 0);
            return;
        }
        r->rs_active = 1;
        r->rs_index = index;
        r->rs_term = m->u.snap.sterm;
        r->rs_offset = 0;
    }
    if (m->u.snap.offset != r->rs_offset) { /* a gap or a duplicate: ask for what we need */
        reply(r, m, r->rs_offset, 0, 0);
        return;
    }
    if (!r->io.snap_write || !r->io.snap_install ||
        r->io.snap_write(r->io.ctx, r, index, r->rs_offset, m->u.snap.data, m->u.snap.len)) {
        r->rs_active = 0;
        reply(r, m, 0, 0, 1);
        return;
    }
    r->rs_offset += m->u.snap.len;
    if (!m->u.snap.done) {
        reply(r, m, r->rs_offset, 0, 0);
        return;
    }
    jr__conf c;
    jr__conf_decode(&c, m->u.snap.conf, m->u.snap.conf_len); /* checked by jr__snap_check */
    r->rs_active = 0;
    /* the one allocation the install needs comes first: nothing may fail after the node
     * restored its state machine */
    const jr__conf *ic = jr__confs_get(r->confs, &c);
    if (!ic || r->io.snap_install(r->io.ctx, r, index, r->rs_term, &c)) {
        jr__confs_put(r->confs, ic);
        reply(r, m, 0, 0, 1);
        return;
    }
    jr__snap_restore(r, index, r->rs_term, ic);
    jr__repl_matched(r, index); /* the leader's log holds the snapshot's last entry */
    jr__confs_put(r->confs, ic);
    reply(r, m, 0, 1, 0);
}
