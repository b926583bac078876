/*
 * peer — the node's peer table and its outgoing frames.
 *
 * Every server of the cluster is a peer, known by name; its id is the xxh3 of the name (the
 * raft core and the wire speak ids). Messages of every group to the same peer accumulate in one
 * frame per flush (ARCHITECTURE §4): jr__peer_queue encodes a message straight into the peer's
 * open frame, jr__peer_send_all closes and sends the frames. A peer whose frames hold a message
 * flagged JR__MF_DURABLE is "held": its frames leave only after the flush's WAL sync; the others
 * (a leader's APPENDs, heartbeats) may leave before it, so replication overlaps the leader's own
 * write (dissertation §10.2.1).
 * Frame buffers are kept and reused, so steady-state traffic allocates nothing. Every message
 * of the node — a group's (jr__peer_queue), a node RPC (rpc.c), the coalesced heartbeats
 * (liveness.c) — goes into the open frame through jr__peer_frame, the one place that starts
 * frames and puts peers on the dirty list.
 */
#include <string.h>

#include "node/node.h"
#include "node/rpc.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "wire/frame.h"

jr__id jr__peer_id(const char *name)
{
    return jr__xxh3(name, strlen(name));
}

int jr__peer_add(jr_node *n, const char *name)
{
    if (!name || !*name) return JR_EINVAL;
    jr__id id = jr__peer_id(name);
    if (id == 0) return JR_EINVAL;
    jr__peer *old = jr__map_get(&n->peer_by_id, id);
    if (old) return strcmp(old->name, name) == 0 ? JR_EEXIST : JR_EINVAL;
    if (n->npeers == n->peers_cap) {
        size_t cap = n->peers_cap ? n->peers_cap * 2 : 8;
        jr__peer **np = jr__realloc(n->alloc, n->peers, cap * sizeof *np);
        if (!np) return JR_ENOMEM;
        n->peers = np;
        n->peers_cap = cap;
    }
    jr__peer *p = jr__calloc(n->alloc, 1, sizeof *p);
    if (!p) return JR_ENOMEM;
    p->name = jr__strdup(n->alloc, name);
    if (!p->name || jr__map_put(&n->peer_by_id, id, p) != 0) {
        jr__free(n->alloc, p->name);
        jr__free(n->alloc, p);
        return JR_ENOMEM;
    }
    p->id = id;
    n->peers[n->npeers++] = p;
    return 0;
}

jr__peer *jr__peer_find(const jr_node *n, jr__id id)
{
    return jr__map_get(&n->peer_by_id, id);
}

jr__peer *jr__peer_find_name(const jr_node *n, const char *name)
{
    if (!name) return NULL;
    jr__peer *p = jr__map_get(&n->peer_by_id, jr__peer_id(name));
    return p && strcmp(p->name, name) == 0 ? p : NULL;
}

size_t jr__node_npeers(const jr_node *n)
{
    return n->npeers;
}

jr__peer *jr__node_peer(const jr_node *n, size_t i)
{
    return i < n->npeers ? n->peers[i] : NULL;
}

jr__id jr__peer_get_id(const jr__peer *p)
{
    return p->id;
}

const char *jr__peer_get_name(const jr__peer *p)
{
    return p->name;
}

uint64_t jr__peer_heard(const jr__peer *p)
{
    return p->last_heard;
}

/* LIFE's encoded size: type, mflags, length varint, payload. */
#define LIFE_MSG_LEN (3 + JR__EXT_LIFE_LEN)

/* Makes frames[i] usable (allocated slot, begun, opened with a LIFE message when one is due
 * and leaves room for `need` bytes). 0 or JR_ENOMEM. */
static int frame_open(jr_node *n, jr__peer *p, size_t need)
{
    if (p->nframes == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 1;
        jr__buf *nb = jr__realloc(n->alloc, p->frames, cap * sizeof *nb);
        if (!nb) return JR_ENOMEM;
        for (uint32_t i = p->cap; i < cap; i++) jr__buf_init(&nb[i], n->alloc);
        p->frames = nb;
        p->cap = cap;
    }
    jr__buf *b = &p->frames[p->nframes];
    jr__frame_begin(b, n->self, p->id);
    if (b->err) return b->err;
    uint64_t mine, theirs;
    if (jr__rpc_life_due(n, p, &mine, &theirs) &&
        JR__FRAME_HEADER + LIFE_MSG_LEN + need <= n->max_frame) {
        /* without it (out of memory, or no room) the frame's requests are merely unstamped */
        uint8_t life[JR__EXT_LIFE_LEN];
        jr__put_u64(life, mine);
        jr__put_u64(life + 8, theirs);
        jr__frame_add_ext(b, JR__EXT_LIFE, 0, life, sizeof life);
        if (b->err) {
            b->err = 0;
            b->len = JR__FRAME_HEADER;
        }
    }
    p->frame_base = (uint32_t)b->len;
    p->nframes++;
    return 0;
}

jr__buf *jr__peer_frame(jr_node *n, jr__peer *p, size_t need)
{
    if (p->nframes == 0 || p->nframes == p->sealed ||
        p->frames[p->nframes - 1].len + need > n->max_frame) {
        if (frame_open(n, p, need) != 0) return NULL;
    }
    if (!p->dirty) {
        p->dirty = 1;
        p->dirty_next = n->dirty_peers;
        n->dirty_peers = p;
    }
    return &p->frames[p->nframes - 1];
}

void jr__peer_frame_undo(jr__peer *p, jr__buf *b, size_t before)
{
    b->len = before;
    b->err = 0;
    if (b->len <= p->frame_base) p->nframes--; /* no message but its opening: not sent */
}

void jr__peer_queue(jr_node *n, const jr__msg *m)
{
    jr__peer *p = jr__peer_find(n, m->to);
    if (!p || p->id == n->self) {
        n->msgs_unroutable++;
        return;
    }
    size_t need = jr__frame_msg_len(m);
    if (need > (size_t)n->max_frame - JR__FRAME_HEADER) {
        n->msgs_unroutable++;
        jr__node_log(n, JR_LOG_WARN, "message of %zu bytes for %s exceeds max_frame_bytes", need,
                     p->name);
        return;
    }
    jr__buf *b = jr__peer_frame(n, p, need);
    if (!b) {
        n->msgs_unroutable++;
        return;
    }
    size_t before = b->len;
    jr__frame_add(b, m);
    if (b->err) {
        /* Out of memory, or a message the codec refuses: only this message is lost, like a
         * dropped packet (Raft retransmits). The encoder wrote nothing, so the frame is intact. */
        n->msgs_unroutable++;
        jr__peer_frame_undo(p, b, before);
        return;
    }
    if (m->flags & JR__MF_DURABLE) p->held = 1;
    if (m->type == JR__MSG_VOTE) {
        if (m->flags & JR__MF_PREVOTE)
            n->live.stats.prevotes++;
        else
            n->live.stats.votes++;
    }
}

/* Closes, sends and resets frames[0..upto) of p, and moves the rest to the front. */
static void send_frames(jr_node *n, jr__peer *p, uint32_t upto)
{
    for (uint32_t i = 0; i < upto; i++) {
        jr__buf *b = &p->frames[i];
        if (jr__frame_end(b) != 0) {
            n->msgs_unroutable++;
            jr__buf_reset(b);
            continue;
        }
        jr_iovec iov = {b->data, b->len};
        n->stats.frames_sent++;
        n->stats.bytes_sent += b->len;
        if (n->host.send(n->host.ctx, p->name, &iov, 1) != 0) n->send_failures++;
        jr__buf_reset(b);
    }
    if (upto == 0 || upto == p->nframes) return;
    /* rotate the sent (now empty) buffers behind the rest: buffers are reused, never lost */
    for (uint32_t i = 0; i < upto; i++) {
        jr__buf t = p->frames[0];
        memmove(&p->frames[0], &p->frames[1], (p->cap - 1) * sizeof *p->frames);
        p->frames[p->cap - 1] = t;
    }
}

/* Closes, sends and resets every frame of p. */
static void send_peer(jr_node *n, jr__peer *p)
{
    send_frames(n, p, p->nframes);
    p->nframes = 0;
    p->held = 0;
    p->sealed = 0;
}

void jr__peer_send_all(jr_node *n, int include_held)
{
    if (n->removed) { /* removed from the cluster: it says nothing more */
        jr__peer_discard_all(n);
        return;
    }
    jr__peer *p = n->dirty_peers, *keep = NULL;
    n->dirty_peers = NULL;
    while (p) {
        jr__peer *next = p->dirty_next;
        if ((p->held && !include_held) || p->sealed) {
            p->dirty_next = keep;
            keep = p;
        } else {
            p->dirty = 0;
            p->dirty_next = NULL;
            send_peer(n, p);
        }
        p = next;
    }
    n->dirty_peers = keep;
}

void jr__peer_discard_all(jr_node *n)
{
    jr__peer *p = n->dirty_peers;
    n->dirty_peers = NULL;
    while (p) {
        jr__peer *next = p->dirty_next;
        for (uint32_t i = 0; i < p->nframes; i++) jr__buf_reset(&p->frames[i]);
        p->nframes = 0;
        p->held = 0;
        p->sealed = 0;
        p->dirty = 0;
        p->dirty_next = NULL;
        p = next;
    }
}

void jr__peer_seal_all(jr_node *n)
{
    for (jr__peer *p = n->dirty_peers; p; p = p->dirty_next)
        if (p->held) {
            p->sealed = p->nframes;
            p->held = 0;
        }
}

void jr__peer_send_sealed(jr_node *n)
{
    if (n->removed) return; /* jr__peer_send_all discards them */
    jr__peer **pp = &n->dirty_peers;
    while (*pp) {
        jr__peer *p = *pp;
        if (p->sealed) {
            uint32_t k = p->sealed;
            send_frames(n, p, k);
            p->nframes -= k;
            p->sealed = 0;
            if (p->nframes == 0) { /* nothing after them: off the dirty list */
                p->held = 0;
                p->dirty = 0;
                *pp = p->dirty_next;
                p->dirty_next = NULL;
                continue;
            }
        }
        pp = &p->dirty_next;
    }
}

void jr__peer_free_all(jr_node *n)
{
    for (size_t i = 0; i < n->npeers; i++) {
        jr__peer *p = n->peers[i];
        for (uint32_t k = 0; k < p->cap; k++) jr__buf_free(&p->frames[k]);
        jr__free(n->alloc, p->frames);
        jr__free(n->alloc, p->name);
        jr__free(n->alloc, p);
    }
    jr__free(n->alloc, n->peers);
    n->peers = NULL;
    n->npeers = n->peers_cap = 0;
    jr__map_free(&n->peer_by_id);
    n->dirty_peers = NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Membership
 *
 * The table starts as the config's peers (the seed list) and grows only through the layer
 * above (jr__node_peer_learn), which adds the servers its meta state names; so a frame from a
 * server the node does not know is refused (JR_EAUTH) — except a join request, the one thing a
 * new server must send before anyone knows it. Such a frame is small (JR__STRANGER_FRAME_MAX),
 * must be a well-formed frame from the id of the name it comes under to this server, and one is
 * handed over at most every heartbeat interval, whoever sends it: nothing of a stranger is
 * kept here, so a hostile sender can neither grow this node's memory nor flood the layer above.
 * A removed server stays in the table, marked: its valid frames are refused with JR_EREMOVED
 * and it is sent a REMOVED request (at most once per election timeout) so that it learns it.
 */

/* Largest frame an unknown server may send (a join request with its server facts). */
#define JR__STRANGER_FRAME_MAX (32u << 10)

int jr__node_peer_learn(jr_node *n, const char *name)
{
    if (!name || !*name || strlen(name) > 255) return JR_EINVAL;
    jr__peer *p = jr__peer_find_name(n, name);
    if (p) return 0;
    if (n->npeers >= JR__NODE_PEERS_MAX) return JR_ENORESOURCES;
    int rc = jr__peer_add(n, name);
    if (rc == 0) jr__node_log(n, JR_LOG_INFO, "peer %s added to the peer table", name);
    return rc == JR_EEXIST ? 0 : rc;
}

int jr__node_peer_set_removed(jr_node *n, const char *name)
{
    int rc = jr__node_peer_learn(n, name);
    if (rc) return rc;
    jr__peer *p = jr__peer_find_name(n, name);
    if (!p || p->id == n->self) return 0; /* this server: jr__node_set_removed */
    if (p->removed) return 0;
    p->removed = 1;
    /* from here on this server refuses its frames: a group of two it leaves may go on with the
     * other voter alone (raft/removed.c) */
    for (size_t i = 0; i < n->groups.cap; i++) {
        jr_group *g = n->groups.slots[i].val;
        if (n->groups.slots[i].key && g->raft) jr__group_peer_removed(g, p);
    }
    return 0;
}

int jr__peer_removed(const jr__peer *p)
{
    return p->removed;
}

void jr__node_set_removed(jr_node *n)
{
    if (n->removed) return;
    n->removed = 1;
    jr__peer_discard_all(n);
}

int jr__node_removed(const jr_node *n)
{
    return n->removed;
}

static void removed_told(jr_node *n, void *arg, int status, int answered, const uint8_t *p,
                         size_t len)
{
    (void)n, (void)arg, (void)status, (void)answered, (void)p, (void)len; /* nothing waits */
}

int jr__peer_refuse_removed(jr_node *n, jr__peer *p)
{
    if (!p->removed_told || n->now >= p->removed_told + n->election_ns) {
        p->removed_told = n->now ? n->now : 1;
        jr_iovec iov = {p->name, strlen(p->name)};
        uint64_t id;
        jr__rpc_call(n, p->id, JR__RPC_REMOVED, &iov, 1, n->election_ns, removed_told, NULL, &id);
    }
    return jr__node_err(n, JR_EREMOVED, "frame from %s refused: it was removed from the cluster",
                        p->name);
}

int jr__peer_stranger(jr_node *n, const char *from, const void *frame, size_t len)
{
    size_t nl = strlen(from);
    jr__frame f;
    int ok = n->upper_tab && n->upper_tab->join && nl > 0 && nl <= 255 &&
             len <= JR__STRANGER_FRAME_MAX &&
             (!n->stranger_at || n->now >= n->stranger_at + n->heartbeat_ns) &&
             jr__frame_open(&f, frame, len, JR__STRANGER_FRAME_MAX) == 0 &&
             f.from == jr__peer_id(from) && f.from != 0 && f.to == n->self &&
             jr__frame_check(&f, n->scratch_cap) == 0;
    jr__msg m;
    int got, rc;
    const jr__rpc_view *join = NULL;
    while (ok && !(rc = jr__frame_next(&f, &m, n->scratch, n->scratch_cap, &got)) && got) {
        if (m.type == JR__MSG_NODE_REQUEST && f.rpc.kind == JR__RPC_JOIN) {
            join = &f.rpc;
            break;
        }
    }
    if (!join) {
        n->strangers_refused++;
        return jr__node_err(n, JR_EAUTH, "frame from unknown server '%s'", from);
    }
    n->stranger_at = n->now ? n->now : 1;
    n->upper_tab->join(n->upper, from, join->id, join->payload, join->len);
    return 0;
}

int jr__rpc_respond_stranger(jr_node *n, const char *to, uint64_t id, int status,
                             const jr_iovec *iov, int iovcnt)
{
    jr__peer *p = jr__peer_find_name(n, to);
    if (p && p->id != n->self) return jr__rpc_respond(n, p->id, id, status, iov, iovcnt);
    jr__id tid = jr__peer_id(to);
    if (!tid || tid == n->self) return JR_EINVAL;
    jr__buf b;
    jr__buf_init(&b, n->alloc);
    jr__frame_begin(&b, n->self, tid);
    jr__frame_add_responsev(&b, id, status, iov, iovcnt);
    int rc = b.err ? b.err : jr__frame_end(&b);
    if (rc == 0) {
        jr_iovec out = {b.data, b.len};
        n->stats.frames_sent++;
        n->stats.bytes_sent += b.len;
        if (n->host.send(n->host.ctx, to, &out, 1) != 0) n->send_failures++;
    }
    jr__buf_free(&b);
    return rc;
}
