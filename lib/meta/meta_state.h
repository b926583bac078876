/*
 * meta_state — the meta group's replicated state machine: which servers exist (with their
 * placement facts) and where every stream lives (ARCHITECTURE §6).
 *
 * Owns: servers by name; stream assignments by name {owned normalized config, peer set (server
 * names), Raft group id, meta index of creation and of the last change}; each stream's consumer
 * assignments by name {owned config, peer set (a subset of the stream's), Raft group id, meta
 * indexes of creation and last change}; a subject index of every stream's subjects (overlap
 * checks, and the subject → stream lookup of a publish).
 *
 * Determinism: the state is a function of the sequence of ops applied (and of the snapshot it
 * was restored from) and nothing else — no clock, no PRNG, no iteration over hash-table order.
 * Two states that applied the same log write byte-identical snapshots. Every refusal is decided
 * from the state and the op alone, so all replicas return the same status; only lack of memory
 * is local, and it is reported separately (the op is then not applied at all, and the caller
 * must retry it or stop: it can not be skipped).
 *
 * Group ids: each successful STREAM_ADD takes `next_group` (then incremented); a deleted
 * stream's id is never handed out again, so a stream deleted and re-created under the same name
 * gets a fresh Raft group and no replica can confuse the two. Ids are dense (cheap in coalesced
 * heartbeats) and start at the `first_group` given to jr__meta_state_init, which must be the
 * same constant on every server; ids below it are free for the meta group and raw groups.
 *
 * Apply rules (what the meta leader reports to the caller; a refused op changes nothing):
 *   SERVER_INFO    upsert of the server's facts; a removed server → JR_EREMOVED.
 *   SERVER_JOIN    as SERVER_INFO; a server new to the state beyond JR_STREAMS_MAX_SERVERS →
 *                  JR_ENORESOURCES.
 *   SERVER_REMOVE  (meta_servers.c "Servers") a removed server → JR_ENOTMEMBER; the only
 *                  server left → JR_EINVAL; else the server leaves `servers` and is
 *                  tombstoned, and each re-placement the op lists for a stream that still
 *                  names the server, is not mid-change and whose new peers are known servers
 *                  (or its own current peers) gives the stream that peer set (a peer change
 *                  begins, its consumers follow); a stream not re-placed keeps the removed
 *                  server among its peers (under-replicated, until a PEER_MOVE re-places it).
 *   SERVER_DRAIN   (meta_servers.c) a removed or unknown server → JR_ENOTMEMBER; start: the
 *                  server is draining (again: 0, nothing changes); cancel of a server not
 *                  draining → JR_ENOCHANGE "server 'X' is not draining"; else it takes
 *                  placements again. Assignments are not touched: the meta leader moves the
 *                  replicas off a draining server with PEER_MOVEs (js meta_drain.c).
 *   STREAM_ADD     same name, identical config (normal forms equal) → 0, the existing
 *                  assignment (idempotent; the op's peers are ignored); same name, different
 *                  config → JR_EEXIST; otherwise the config must pass
 *                  jr__stream_config_check_add (JR_EINVAL naming the field), the peers must be
 *                  exactly `replicas` distinct known servers (JR_EINVAL "peers: ..."), and no
 *                  subject may overlap another stream's (JR_EINVAL "subjects: ... overlap
 *                  stream 'X'", naming the first such stream by name).
 *   STREAM_UPDATE  unknown name → JR_ENOTFOUND; jr__stream_config_check_update(old, new)
 *                  (JR_EINVAL naming the field); peers as for add; a different peer set (as a
 *                  set) while the previous one has not converged → JR_EBUSY ("cluster member
 *                  change is in progress"); subject overlap as for add (the stream's own
 *                  subjects do not count). Identical config and peers → 0, nothing changes.
 *   STREAM_DELETE  unknown name → JR_ENOTFOUND; else the assignment is gone, with its consumers.
 *   STREAM_CONVERGED unknown name, or another group id (the stream was re-created) →
 *                  JR_ENOTFOUND; peers_at other than the stream's → JR_ERANGE (a stale
 *                  report); already converged → 0, nothing changes; else converged_at =
 *                  peers_at.
 *   CONSUMER_ADD   unknown stream → JR_ENOSTREAM; no consumer name → JR_EINVAL (the leader
 *                  names an ephemeral before proposing); the config must pass
 *                  jr__consumer_config_validate against the stream (JR_EINVAL with JetStream's
 *                  text); an existing consumer: identical config → 0, the existing assignment;
 *                  action create → JR_EEXIST "consumer already exists"; else the update rules
 *                  (jr__consumer_config_check_update). A missing one: action update →
 *                  JR_ENOTFOUND "consumer does not exist"; the stream's max_consumers reached →
 *                  JR_ELIMIT "maximum consumers limit reached"; on a work-queue stream an
 *                  unfiltered consumer beside another → JR_EINVAL "multiple non-filtered
 *                  consumers not allowed on workqueue stream", overlapping filters → JR_EINVAL
 *                  "filtered consumer not unique on workqueue stream". Peers: exactly R distinct
 *                  peers of the stream (R = jr__meta_consumer_replicas).
 *   CONSUMER_DELETE unknown stream → JR_ENOSTREAM; unknown consumer → JR_ENOTFOUND.
 *   STREAM_CONVERGED naming the group of one of the stream's consumers: that consumer's peer
 *                  change is over, by the same rules as a stream's.
 *
 * Consumers follow their stream. A STREAM_UPDATE that changes the stream's peer set (or its
 * replica count) gives every consumer of it a peer set within the new one: the consumer's
 * peers that stay, then the stream's others in placement order, as many as its replica count
 * (num_replicas, at most the stream's; 0: the stream's); a consumer whose set changes is
 * mid-change (peers_at = the update's index) until its group reports convergence.
 *
 * Peer changes. Each assignment records peers_at, the meta index of the op that gave it its
 * peer set (its STREAM_ADD, or the last STREAM_UPDATE whose peers differ as a set), and
 * converged_at, the peers_at its group last reported reaching (STREAM_CONVERGED: the group's
 * committed Raft configuration is exactly the peer set, every peer a voter). A stream whose
 * converged_at != peers_at is mid-change: another peer change is refused (JR_EBUSY); a server
 * the change removed keeps its replica (it may still be a voter the group needs) until the
 * change converged; a server the change added joins the group empty (jr_group_open's join
 * mode) — only a stream whose peer set never changed (peers_at == created) is bootstrapped by
 * its peers.
 *
 * Convergence: jr__meta_desired() compares what a server runs with what the state wants it to
 * run and lists the create/join, update and leave actions, so a node converges after a restart
 * or a meta leader failover by diffing instead of replaying history.
 *
 * Not thread-safe; one node applies its meta group's log from one thread.
 */
#ifndef JR_META_META_STATE_H
#define JR_META_META_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "consumer/config.h"
#include "meta/meta_op.h"
#include "meta/placement.h"
#include "stream/config.h"
#include "stream/subject_index.h"
#include "util/buf.h"
#include "util/map.h"

/* A known server (from its latest SERVER_INFO). Strings and tags are owned (one block). */
typedef struct jr__meta_server {
    const char *name;
    const char *cluster;
    const char *const *tags;
    size_t ntags;
    uint64_t capacity_bytes; /* 0: unknown */
    uint32_t max_assets;     /* 0: no limit */
    int draining;            /* SERVER_DRAIN: takes no placement, its replicas move off
                                (kept across its SERVER_INFO updates; in snapshots) */
    /* Derived, kept by the state as assignments come and go (not in snapshots), so placement
     * does not walk every stream: the assignments naming this server and the sum of their
     * max_bytes (those above 0). */
    uint64_t assets;
    uint64_t used_bytes;
} jr__meta_server;

/* One version of an assignment's config and peer set: immutable and reference-counted. The
 * state holds one reference for each stream (jr__meta_stream.asgn); a node's stream replica
 * takes one (jr__meta_asgn_ref) on the version it converged to, so it shares the state's copy
 * instead of making its own, and that copy stays valid when a later op (or a restore) replaces
 * or deletes the stream. Not thread-safe (one node, one thread). */
typedef struct jr__meta_asgn {
    uint32_t refs;
    const jr_allocator *alloc;
    jr__stream_cfg *cfg;      /* owned normalized config */
    const char *const *peers; /* server names, placement order (in this block) */
    size_t npeers;            /* = cfg->c.replicas */
} jr__meta_asgn;

/* Takes another reference to as; returns as. */
jr__meta_asgn *jr__meta_asgn_ref(jr__meta_asgn *as);
/* Drops a reference; the last one frees as and its config. NULL is a no-op. */
void jr__meta_asgn_put(jr__meta_asgn *as);

typedef struct jr__meta_consumer jr__meta_consumer;

/* Where one stream lives. Read-only outside meta_state.c; valid until the op that changes or
 * deletes it is applied (or the state is restored or freed). */
typedef struct jr__meta_stream {
    const char *name;         /* = cfg->c.name */
    jr__stream_cfg *cfg;      /* = asgn->cfg */
    const char *const *peers; /* = asgn->peers: server names, placement order */
    size_t npeers;            /* = cfg->c.replicas */
    jr__meta_asgn *asgn;      /* the current version of config and peers (one reference) */
    uint64_t group;           /* its Raft group id (unique, never reused) */
    uint64_t created;         /* meta index of the STREAM_ADD */
    uint64_t created_ns;      /* wall clock of the meta leader that placed it (the op's
                                 created_ns; 0: unknown, an op or snapshot of version 1) */
    uint64_t updated;         /* meta index of the last op that changed config or peers */
    uint64_t peers_at;        /* meta index of the op that gave it this peer set (as a set) */
    uint64_t converged_at;    /* the peers_at its group last reported reaching; busy while it
                                 differs from peers_at ("Peer changes" above) */
    uint64_t floor_term, floor_commit_term, floor_commit; /* the newest report's term and commit
                                 (STREAM_CONVERGED): where a replica joining later starts */
    jr__meta_consumer **consumers;                        /* sorted by name (bytewise) */
    size_t nconsumers, cap_consumers;
    /* The assignment version the peer change in progress started from (one reference): set
     * when a change of the peer set starts from a converged state, kept (never overwritten)
     * until the change converges or is cancelled; NULL when stable (meta_move.h). */
    jr__meta_asgn *origin;
} jr__meta_stream;

/* One version of a consumer's config and peer set: immutable and reference-counted, like
 * jr__meta_asgn (a consumer replica holds the version it converged to). */
typedef struct jr__meta_casgn {
    uint32_t refs;
    const jr_allocator *alloc;
    jr__consumer_cfg *cfg;    /* owned normalized config; cfg->c.name is the consumer's name */
    const char *const *peers; /* server names (in this block), a subset of the stream's */
    size_t npeers;
} jr__meta_casgn;
jr__meta_casgn *jr__meta_casgn_ref(jr__meta_casgn *as);
void jr__meta_casgn_put(jr__meta_casgn *as);

/* Where one consumer lives. Read-only outside the meta state; valid until the op that changes
 * or deletes it (or its stream) is applied. */
struct jr__meta_consumer {
    const char *name;         /* = cfg->c.name */
    jr__consumer_cfg *cfg;    /* = asgn->cfg */
    const char *const *peers; /* = asgn->peers */
    size_t npeers;
    jr__meta_casgn *asgn;          /* the current version (one reference) */
    const jr__meta_stream *stream; /* its stream */
    uint64_t group;                /* its Raft group id (unique among streams and consumers) */
    uint64_t created, updated;     /* meta indexes of its creation and last change */
    uint64_t created_ns;           /* the placing meta leader's wall clock */
    uint64_t peers_at;             /* meta index of the op that gave it this peer set (as a set) */
    uint64_t converged_at;  /* the peers_at its group last reported reaching (STREAM_CONVERGED
                               naming the consumer's group); busy while they differ */
    jr__meta_casgn *origin; /* as jr__meta_stream.origin, for the consumer's peer set */
};

/* 1 while consumer c's peer set has not converged. */
static inline int jr__meta_consumer_busy(const jr__meta_consumer *c)
{
    return c->converged_at != c->peers_at;
}
/* 1 if a server new on c bootstraps its group (its peers never changed), 0 if it joins. */
static inline int jr__meta_consumer_bootstraps(const jr__meta_consumer *c)
{
    return c->peers_at == c->created;
}

/* 1 while s's peer set has not converged (a peer change is in progress). */
static inline int jr__meta_stream_busy(const jr__meta_stream *s)
{
    return s->converged_at != s->peers_at;
}
/* 1 if a server new on s must bootstrap its group (s's peer set is the one it was created
 * with), 0 if it must join (the group exists; its leader adds the server). */
static inline int jr__meta_stream_bootstraps(const jr__meta_stream *s)
{
    return s->peers_at == s->created;
}

typedef struct jr__meta_state {
    const jr_allocator *alloc;
    jr__meta_server **servers; /* sorted by name (bytewise), nservers of them */
    size_t nservers, cap_servers;
    jr__meta_stream **streams; /* sorted by name (bytewise), nstreams of them */
    size_t nstreams, cap_streams;
    jr__map by_group;           /* group id → jr__meta_stream */
    jr__map by_cgroup;          /* group id → jr__meta_consumer */
    size_t nconsumers;          /* over every stream */
    jr__subject_index subjects; /* every stream's subjects; owner = jr__meta_stream */
    uint64_t applied;           /* meta index of the last op applied (0: none) */
    uint64_t next_group;        /* group id of the next stream added */
    /* Servers removed for good (SERVER_REMOVE; meta_servers.c "Servers"): their names, sorted
     * bytewise, owned. Never shrinks. */
    char **removed;
    size_t nremoved, cap_removed;
} jr__meta_state;

/* What applying (or checking) an op decided. */
#define JR__META_MSG_MAX 256
typedef struct jr__meta_result {
    int status;          /* 0 or the refusal (JR_EINVAL, JR_EEXIST, JR_ENOTFOUND, ...) */
    uint8_t type;        /* the op's type; 0 if it could not be decoded */
    int changed;         /* 1 if the op changed the state (besides `applied`) */
    uint64_t request_id; /* the op's reply route (0: nobody waits) */
    char origin[JR__META_NAME_MAX + 1];  /* "" if none */
    char stream[JR_STREAM_NAME_MAX + 1]; /* the stream concerned, "" for SERVER_INFO */
    /* STREAM_ADD/UPDATE that succeeded (also idempotently): the assignment, borrowed as
     * jr__meta_stream says; NULL otherwise. */
    const jr__meta_stream *assignment;
    /* CONSUMER_ADD that succeeded (also idempotently): the consumer, borrowed likewise. */
    const jr__meta_consumer *consumer;
    char cname[JR_CONSUMER_NAME_MAX + 1]; /* the consumer concerned, "" if none */
    /* An op that changed a stream (changed = 1 and type STREAM_ADD, _UPDATE, _DELETE or
     * _CONVERGED): that stream's Raft group id (for a delete, the group just removed), so a
     * node converges only that stream's replica; 0 otherwise. A consumer op that changed a
     * consumer: the consumer's group. */
    uint64_t group;
    int consumers_gone;         /* a STREAM_DELETE removed consumers too: converge them all */
    char msg[JR__META_MSG_MAX]; /* why it was refused ("" on success) */
} jr__meta_result;

/* Initializes an empty state whose first stream gets group id first_group (non-zero). Never
 * fails (memory is allocated on use). */
void jr__meta_state_init(jr__meta_state *st, const jr_allocator *a, uint64_t first_group);

/* Frees everything; st is empty afterwards (re-initialize it to use it again). */
void jr__meta_state_free(jr__meta_state *st);

/* Applies the op encoded in data[0..len) at meta log index `index`, which must be above
 * st->applied (else JR_EINVAL, nothing happens). Returns 0 when the op was applied or refused —
 * res->status says which, identically on every replica; an op that does not decode
 * (JR_ECORRUPT, JR_EVERSION in res->status) is refused the same way. In both cases st->applied
 * becomes index. Returns JR_ENOMEM if this server lacked memory: nothing changed, not even
 * st->applied. */
int jr__meta_apply(jr__meta_state *st, uint64_t index, const void *data, size_t len,
                   jr__meta_result *res);

/* As jr__meta_apply for an op already decoded (or built by hand; it is re-validated). op is
 * only read (the state keeps copies); the caller still owns and frees it. */
int jr__meta_apply_op(jr__meta_state *st, uint64_t index, const jr__meta_op *op,
                      jr__meta_result *res);

/* What the leader runs before placing and proposing: the same checks as apply, without
 * changing anything. An ADD or UPDATE without peers (a request) skips the peer checks; with
 * peers they are checked too. Returns 0 with res->status as apply would decide it against the
 * current state (a later apply can still refuse: other ops may commit first), or JR_ENOMEM.
 * st is not modified (the subject index is probed and restored). */
int jr__meta_check(jr__meta_state *st, const jr__meta_op *op, jr__meta_result *res);

/* Lookups (NULL if absent). */
const jr__meta_server *jr__meta_server_find(const jr__meta_state *st, const char *name);
const jr__meta_stream *jr__meta_stream_find(const jr__meta_state *st, const char *name);
const jr__meta_stream *jr__meta_stream_by_group(const jr__meta_state *st, uint64_t group);
/* The stream whose subjects match the literal subject (a publish), NULL if none. */
const jr__meta_stream *jr__meta_stream_for_subject(const jr__meta_state *st, const char *subject);
/* 1 if server is one of s's peers. */
int jr__meta_stream_has_peer(const jr__meta_stream *s, const char *server);
/* Consumers (meta_consumer.c). */
const jr__meta_consumer *jr__meta_consumer_find(const jr__meta_stream *s, const char *name);
const jr__meta_consumer *jr__meta_consumer_by_group(const jr__meta_state *st, uint64_t group);
int jr__meta_consumer_has_peer(const jr__meta_consumer *c, const char *server);
/* The replica count of consumer config c on stream s (jr__consumer_replicas: num_replicas, or
 * the stream's; an ephemeral left at 0 on a limits stream has 1). */
int jr__meta_consumer_replicas(const jr__meta_stream *s, const jr_consumer_config *c);
/* The CONSUMER_ADD/DELETE part of validate/apply (meta_state.c calls them). */
int jr__meta_consumer_validate(const jr__meta_state *st, const jr__meta_op *op, int need_peers,
                               jr__meta_result *res, jr__meta_stream **stream,
                               jr__meta_consumer **existing);
int jr__meta_consumer_apply(jr__meta_state *st, uint64_t index, const jr__meta_op *op,
                            jr__meta_stream *s, jr__meta_consumer *existing, jr__meta_result *res);
/* The new peer sets stream s's consumers get when s's peers become peers[0..npeers) with
 * `replicas` replicas: out[i] (s->nconsumers of them, allocated here, NULL when consumer i
 * keeps its set) is a new version of consumer i, its config shared. 0 or JR_ENOMEM (nothing
 * allocated). */
int jr__meta_consumers_follow_prepare(const jr__meta_state *st, const jr__meta_stream *s,
                                      const char *const *peers, size_t npeers, int replicas,
                                      jr__meta_casgn ***out);
/* Installs what prepare made (changed consumers get peers_at = updated = index) and frees the
 * array; with index 0 it drops them instead. */
void jr__meta_consumers_follow_commit(jr__meta_state *st, jr__meta_stream *s, jr__meta_casgn **v,
                                      uint64_t index);
/* Removes every consumer of s (the stream is deleted). */
void jr__meta_consumers_drop(jr__meta_state *st, jr__meta_stream *s);

/* Placement's view of the known servers, in name order: out[i] borrows the server's name,
 * cluster and tags (valid until the next apply/restore), has its capacity and max_assets,
 * assets = the assignments that include it, used_bytes = the sum of their max_bytes (those
 * above 0), and online = 1 (the caller knows liveness; the state does not). Fills at most cap
 * entries and returns st->nservers. */
size_t jr__meta_place_servers(const jr__meta_state *st, jr__place_server *out, size_t cap);

/* Desired state ------------------------------------------------------------------------------*/

/* One stream replica a server runs, as the node knows it. */
typedef struct jr__meta_local {
    uint64_t group;   /* its Raft group id */
    uint64_t updated; /* the assignment's `updated` the node last converged to */
} jr__meta_local;

enum jr__meta_action_kind {
    JR__META_LEAVE = 1,  /* stop and remove the local replica of `group` */
    JR__META_UPDATE = 2, /* the assignment changed (config or peers): converge to `stream` */
    JR__META_CREATE = 3, /* create (or join) the replica of `stream` */
};

typedef struct jr__meta_action {
    int kind; /* enum jr__meta_action_kind */
    uint64_t group;
    /* A consumer's replica: the consumer (CREATE, UPDATE; LEAVE when it still exists but no
     * longer on this server); NULL for a stream's replica, and for a LEAVE of a group gone. */
    const jr__meta_consumer *consumer;
    /* CREATE, UPDATE: the assignment. LEAVE: the stream that still uses this group but no
     * longer on this server (peer removed), or NULL when the group is gone (stream deleted, or
     * re-created under a new group). Borrowed as jr__meta_stream says. */
    const jr__meta_stream *stream;
} jr__meta_action;

typedef struct jr__meta_plan {
    jr__meta_action *actions;
    size_t n;
    const jr_allocator *alloc;
} jr__meta_plan;

/* Compares the replicas `server` runs (local[0..nlocal), distinct group ids) with the
 * assignments that include it, and fills plan with the actions that converge the two: every
 * LEAVE first (ascending group id), then one UPDATE or CREATE per stream assignment that needs
 * it, in stream name order, then the same for consumers (by stream, then consumer name), so a
 * consumer's replica is made after its stream's. Local entries name stream and consumer
 * groups alike (their ids never collide). A local replica whose `updated` equals its assignment's
 * needs nothing. 0; JR_EINVAL (duplicate or zero group ids in local, NULL server); JR_ENOMEM. The
 * plan is freed with jr__meta_plan_free (also after an error: it is then empty). */
int jr__meta_desired(const jr__meta_state *st, const char *server, const jr__meta_local *local,
                     size_t nlocal, jr__meta_plan *plan);
void jr__meta_plan_free(jr__meta_plan *plan);

/* Servers (meta_servers.c) ---------------------------------------------------------------------
 * Joining and removal of servers. A server removed by SERVER_REMOVE is tombstoned for good: its
 * SERVER_INFO and SERVER_JOIN are refused (JR_EREMOVED), so one that comes back is never
 * silently re-added, and a stream may keep it as a peer only while it had it already. */
/* 1 if server `name` was removed. */
int jr__meta_server_removed(const jr__meta_state *st, const char *name);
/* The refusal of a SERVER_REMOVE for a server removed already ends with this text; 1 if the
 * refusal text[0..len) says so (a removal sent again after its first attempt committed). */
#define JR__META_REMOVED_ALREADY "it was removed already"
int jr__meta_removed_already(const void *text, size_t len);
/* The SERVER_REMOVE part of validate/apply (meta_state.c calls them): 1 if refused (res set),
 * else 0; apply returns 0 or JR_ENOMEM (nothing changed). */
int jr__meta_servers_validate(const jr__meta_state *st, const jr__meta_op *op,
                              jr__meta_result *res);
int jr__meta_servers_apply(jr__meta_state *st, uint64_t index, const jr__meta_op *op,
                           jr__meta_result *res);
/* The SERVER_DRAIN part: validate returns 1 if decided (res set: a refusal, or 0 for a drain
 * of a server draining already), else 0; apply never fails. */
int jr__meta_drain_validate(const jr__meta_state *st, const jr__meta_op *op, jr__meta_result *res);
void jr__meta_drain_apply(jr__meta_state *st, const jr__meta_op *op, jr__meta_result *res);
/* 1 if server `name` is known and draining. */
int jr__meta_server_draining(const jr__meta_state *st, const char *name);
/* 1 if `name` holds no placement any more: draining, or removed (tombstoned). */
int jr__meta_server_leaving(const jr__meta_state *st, const char *name);
/* Adds name (n bytes) to the tombstones, after every one held (else JR_EINVAL): restore. */
int jr__meta_state_append_removed(jr__meta_state *st, const char *name, size_t n);
void jr__meta_servers_free(jr__meta_state *st);
/* The position of server `name` in st->servers (where it is or would be; *found says which),
 * and the removal of the server at pos (meta_state.c, for meta_servers.c). */
size_t jr__meta_server_pos(const jr__meta_state *st, const char *name, int *found);
void jr__meta_server_drop(jr__meta_state *st, size_t pos);
/* Binary search of a name-sorted array of servers, streams or consumers (each starts with
 * `const char *name`, so a pointer to one, converted, points to its name): the position where
 * name is or would be; *found says which. */
size_t jr__meta_name_pos(void *const *arr, size_t n, const char *name, int *found);
/* Gives stream s the peer set peers[0..npeers) (its replica count) at meta index index, its
 * config unchanged: a peer change begins when the set differs, and its consumers follow. 0 or
 * JR_ENOMEM (nothing changed). */
int jr__meta_stream_repeer(jr__meta_state *st, uint64_t index, jr__meta_stream *s,
                           const char *const *peers, size_t npeers, jr__meta_result *res);

/* Snapshot (meta_snapshot.c) -------------------------------------------------------------------
 * Format, version 7 (as in meta_op.h: varints canonical, str = varint length + bytes):
 *   "JRMS" | u8 version (= 7) | varint applied | varint next_group |
 *   varint nservers | nservers × (str name | str cluster | list<str> tags | varint capacity |
 *                                 varint max_assets) |
 *   varint nstreams | nstreams × (varint len | len bytes of config encoding | list<str> peers |
 *                                 varint group | varint created | varint updated |
 *                                 varint created_ns | varint peers_at |
 *                                 varint converged_at | varint floor_term |
 *                                 varint floor_commit_term | varint floor_commit |
 *                                 varint nconsumers | nconsumers × (varint len | len bytes of
 *                                 consumer config encoding | list<str> peers | varint group |
 *                                 varint created | varint updated | varint created_ns |
 *                                 varint peers_at | varint converged_at)) |
 *   list<str> removed (strictly ascending, none of them in servers) |
 *   varint norigins | norigins × (str stream | str consumer ("" = the stream itself) |
 *                                  [stream: varint len | len bytes of the origin's config
 *                                   encoding] | list<str> origin peers) |
 *   list<str> draining (strictly ascending, each one of the servers) |
 *   u64 xxh3 of every byte before it
 * Servers, streams and each stream's consumers in strictly ascending name order (so the encoding
 * is canonical), with created <= converged_at <= peers_at <= updated for a stream, created <=
 * converged_at <= peers_at <= updated for a consumer, whose peers are peers of its stream. Version
 * 6 is the same without the draining servers (none), version 5 also without the origins (none),
 * version 4 also without the removed servers (none). Origins: the peer changes in progress
 * (meta_move.h), in strictly ascending (stream, consumer) order, each naming a stream (consumer)
 * that is mid peer change; a stream's origin peers number its origin config's replicas. A
 * consumer's origin keeps only its peers (restored with the consumer's current config). A state
 * restored from version 5 or below has no origins (a cancel of a change in progress is then
 * JR_ENOCHANGE). Version 3 is the same as 4 without consumers. Version 2 (before peer changes) is
 * the same without peers_at and converged_at (restored as created: the original peers, converged)
 * and without the floor (floor_term, floor_commit_term, floor_commit: restored as 0);
 * version 1 (before streams had a creation time) also lacks created_ns (restored as 0). */
#define JR__META_SNAP_VERSION 7

/* Appends the snapshot of st to out. 0 or JR_ENOMEM (out->err set; what was appended is
 * unspecified, truncate to the old length). */
int jr__meta_snapshot(const jr__meta_state *st, jr__buf *out);

/* Replaces st (initialized, maybe not empty) with the state encoded in data[0..len), all or
 * nothing. Strict: checksum, magic, order, names, configs, peers (exactly `replicas` distinct
 * names), group ids (non-zero, distinct, below next_group), indexes (0 < created <=
 * converged_at <= peers_at <= updated <= applied), non-overlapping subjects, no trailing bytes. 0;
 * JR_ECORRUPT; JR_EVERSION (intact, unknown version); JR_ENOMEM. On failure st is unchanged. */
int jr__meta_restore(jr__meta_state *st, const void *data, size_t len);

/* Shared with meta_snapshot.c: builds a server or a stream assignment from borrowed parts.
 * Names and tags are (pointer, length) pairs (not NUL-terminated); the stream takes cfg. */
typedef struct jr__meta_name {
    const char *p;
    size_t n;
} jr__meta_name;
jr__meta_server *jr__meta_server_new(const jr_allocator *a, jr__meta_name name,
                                     jr__meta_name cluster, const jr__meta_name *tags, size_t ntags,
                                     uint64_t capacity, uint32_t max_assets);
void jr__meta_server_free(const jr_allocator *a, jr__meta_server *s);
jr__meta_stream *jr__meta_stream_new(const jr_allocator *a, jr__stream_cfg *cfg,
                                     const jr__meta_name *peers, size_t npeers);
void jr__meta_stream_free(const jr_allocator *a, jr__meta_stream *s);
/* Appends s, whose name sorts after every server held (else JR_EINVAL); st takes s on success.
 * 0, JR_EINVAL, JR_ENOMEM. */
int jr__meta_state_append_server(jr__meta_state *st, jr__meta_server *s);
/* Appends s (group, created, updated set), whose name sorts after every stream held; st takes
 * s on success. 0; JR_EINVAL (order, group id 0 or already used); JR_EEXIST (its subjects
 * overlap another stream's); JR_ENOMEM. On failure st is unchanged. */
int jr__meta_state_append_stream(jr__meta_state *st, jr__meta_stream *s);

/* One allocation [head bytes (rounded up to 16) | n peer pointers | the names]: *pv gets the
 * pointers (into the block); the caller fills the head. NULL without memory. */
void *jr__meta_peers_block(const jr_allocator *a, size_t head, const jr__meta_name *peers, size_t n,
                           const char ***pv);
/* Peer moves (meta_move.c) share these: a new assignment version (takes cfg; NULL without
 * memory), and installing one on a stream or consumer at meta index `index` (takes `as`;
 * keeps the servers' tallies; a different peer set starts a peer change, recording the
 * origin when it starts from a converged state). */
jr__meta_asgn *jr__meta_asgn_new(const jr_allocator *a, jr__stream_cfg *cfg,
                                 const char *const *peers, size_t n);
void jr__meta_stream_install(jr__meta_state *st, jr__meta_stream *s, jr__meta_asgn *as,
                             uint64_t index);
jr__meta_casgn *jr__meta_casgn_new(const jr_allocator *a, jr__consumer_cfg *cfg,
                                   const char *const *peers, size_t n);
void jr__meta_consumer_install(jr__meta_consumer *c, jr__meta_casgn *as, uint64_t index);
/* Builds a consumer from borrowed parts (snapshot restore); takes cfg. */
jr__meta_consumer *jr__meta_consumer_new(const jr_allocator *a, jr__consumer_cfg *cfg,
                                         const jr__meta_name *peers, size_t npeers);
void jr__meta_consumer_free(const jr_allocator *a, jr__meta_consumer *c);
/* Appends c (group, created, updated set), whose name sorts after every consumer of s; the
 * state takes c. 0; JR_EINVAL (order, group id 0 or used); JR_ENOMEM. */
int jr__meta_state_append_consumer(jr__meta_state *st, jr__meta_stream *s, jr__meta_consumer *c);

#endif
