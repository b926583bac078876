/*
 * raft — one Raft group as a pure, deterministic state machine.
 *
 * Inputs: received messages, the current time (jr__raft_tick/step take `now`, nanoseconds),
 * proposals and admin requests, and feedback from the node (what became durable, what was
 * applied, which snapshot was taken). Outputs: messages (through io->send), and state the node
 * pulls when io->notify says there is work: unpersisted entries and hard state, the commit index.
 * Randomness (election timeouts) comes from a PRNG seeded by the caller.
 *
 * Never here: I/O, clocks, threads, or allocation on the steady-state path. The in-memory log
 * keeps entries from the last snapshot onwards in rings that grow by doubling and are reused, so
 * proposals and replication allocate nothing once warm; memory is allocated only on growth,
 * membership change and snapshot.
 *
 * Implemented (Raft dissertation, Ongaro 2014, quoted next to the code):
 *  - election with randomized timeouts in [T, 2T), pre-vote (§9.6), check-quorum (§6.2), and the
 *    leader lease of §4.2.3: a server that heard from a leader within T refuses (pre-)votes
 *    unless the candidate campaigns for a leadership transfer (JR__MF_TRANSFER); a leader that
 *    loses its quorum (T after its quorum's last answer) sends TIMEOUT_NOW to the voter holding
 *    the most of its log as it steps down, so a leader that still reaches its followers but
 *    hears none of them (a one-way cut) is replaced within about one election timeout;
 *  - replication with pipelining and per-follower flow control (probe / replicate / snapshot
 *    states, bounded messages and bytes in flight), fast backtracking with a conflict hint; a
 *    follower's rejection of an APPEND that overtook an earlier one resends only what is not
 *    still in flight and halves that follower's window of APPENDs, so on a network that
 *    reorders, each entry reaches each follower about once; and the follower's side of flow
 *    control, a capped observer (jr__raft_cap_log) that takes no entries beyond its log's cap
 *    while its state machine cannot snapshot, paced by the leader's loss handling;
 *  - commit only of entries of the current term by counting replicas (§3.6.2, Figure 3.7);
 *  - a new leader appends a no-op and is not "ready" (accepts no membership change) before an
 *    entry of its term commits;
 *  - leadership transfer (§3.10): to a named caught-up voter or the best one; proposals fail with
 *    JR_ETRANSFER meanwhile; abandoned after an election timeout;
 *  - observers (non-voting members, §4.2.1): receive the log, never campaign, never count toward
 *    a quorum (of votes, commits or check-quorum). Like any server (§4.1) an observer answers
 *    vote requests, since its own configuration may be older than the candidate's, but a
 *    candidate counts only the voters of its own configuration;
 *  - single-server membership changes (§4.1), one at a time: a configuration takes effect as soon
 *    as it is appended and reverts if that entry is truncated; a second change while one is
 *    uncommitted is JR_EBUSY; a leader that removes itself keeps leading without counting itself
 *    and steps down once the change commits (handing over with TIMEOUT_NOW to a caught-up
 *    voter); a server whose latest, uncommitted configuration removes it may still campaign so
 *    the removal can commit (§4.2.2);
 *  - snapshots (§5): compaction behind a snapshot the node took; install on a lagging follower in
 *    resumable chunks read/written through io (the bytes are opaque here);
 *  - protocol-aware recovery (vouch.c): a replica restarted from storage that may have lost
 *    records it acknowledged (jr__raft_load_unvouched) learns its peers' terms and last entries
 *    (VOUCH) before it takes appends, and grants no vote and does not campaign until a leader
 *    or every other voter vouches for its log. A leader never reads a term conflict as lost
 *    storage, and an append that would overwrite a committed entry stops the replica.
 *
 * Time: heartbeats are sent in one place (replication.c, jr__repl_heartbeat) and election
 * timeouts are checked in one place (election.c, jr__elect_due). Idle groups quiesce
 * (quiesce.c, cfg.quiesce): a leader whose followers hold its whole log and commit index stops
 * heartbeating, its followers stop their election timers, and the node's coalesced heartbeats
 * (one per peer pair, listing every quiet group the two share) carry the leader's term and
 * commit one way and the followers' answers the other (jr__raft_hb_*). Quiescence changes only
 * timers and the leader lease, never what a vote, an append or a commit requires.
 *
 * Invariants (checked by the simulation on every step): at most one leader per term; if two logs
 * hold an entry with the same index and term they are identical up to it; a committed entry is in
 * the log of every later leader; commit_index never decreases; applied <= commit. With
 * cfg.commit_may_be_lost (acknowledgements before the sync) the third and fourth hold only as
 * long as no quorum loses power: a follower then gives up committed entries the new leader
 * lacks, and its commit index goes back.
 *
 * Peer ids are 64-bit and non-zero: the node uses the xxh3 of the server name.
 */
#ifndef JR_RAFT_RAFT_H
#define JR_RAFT_RAFT_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "util/rand.h"

typedef uint64_t jr__id;

enum jr__entry_type {
    JR__ENTRY_NORMAL = 0, /* a proposal for the state machine */
    JR__ENTRY_NOOP = 1,   /* appended by each new leader */
    JR__ENTRY_CONFIG = 2, /* membership: data is jr__conf_encode() output */
};

typedef struct jr__entry {
    uint64_t term;
    uint64_t index;
    uint8_t type;
    uint32_t len;
    const uint8_t *data; /* borrowed (see the function that hands it out) */
} jr__entry;

/* Membership ---------------------------------------------------------------------------------*/
#define JR__MAX_MEMBERS 64

typedef struct jr__member {
    jr__id id;
    uint8_t voter; /* 1 voter, 0 observer */
} jr__member;

typedef struct jr__conf {
    uint32_t n;
    jr__member m[JR__MAX_MEMBERS];
} jr__conf;

/* Encoding of a configuration (also carried in snapshots): varint n, then n × (u64 id, u8 voter).
 * Decoding is strict: duplicates, id 0, n > JR__MAX_MEMBERS or trailing bytes are JR_ECORRUPT. */
size_t jr__conf_encoded_len(const jr__conf *c);
size_t jr__conf_encode(const jr__conf *c, uint8_t *out); /* returns bytes written */
int jr__conf_decode(jr__conf *c, const uint8_t *p, size_t n);
const jr__member *jr__conf_find(const jr__conf *c, jr__id id);
uint32_t jr__conf_voters(const jr__conf *c);

/* Interned configurations (confs.c): groups hold counted references to shared, immutable
 * jr__confs. A node passes one set to all its groups (jr__raft_config.confs); the set must
 * outlive them. Not thread-safe: one set per thread that drives groups. */
typedef struct jr__confs jr__confs;
int jr__confs_new(const jr_allocator *a, jr__confs **out); /* 0 or JR_ENOMEM */
void jr__confs_free(jr__confs *p);                         /* every reference returned */
/* A reference to the interned copy of c (made if needed); NULL when out of memory. */
const jr__conf *jr__confs_get(jr__confs *p, const jr__conf *c);
/* Another reference to an interned conf (NULL stays NULL). */
const jr__conf *jr__confs_ref(const jr__conf *c);
/* Returns a reference (NULL is ignored); the last one frees the conf. */
void jr__confs_put(jr__confs *p, const jr__conf *c);
size_t jr__confs_count(const jr__confs *p); /* distinct confs held */

/* Bounds on what comes from the wire. A term or index of a real group grows by one per election
 * or entry and never comes near 2^63; one that does, or a term further ahead of ours than any
 * run of elections could take it, is a forgery or garbage (valid checksums do not make a frame
 * truthful), and adopting it would leave the group unable to go on (term + 1 wraps, or its
 * candidates' terms are refused everywhere). Such messages are dropped with JR_EINVAL
 * (jr__raft_step) or ignored (jr__raft_hb_recv, jr__raft_hb_resp); jr__raft_wire_ok() lets the
 * node count them. With these bounds no sum of a term or index and a count overflows. */
#define JR__TERM_MAX (UINT64_MAX >> 2)  /* highest term accepted */
#define JR__TERM_LEAP (1ULL << 32)      /* furthest a term may be ahead of ours */
#define JR__INDEX_MAX (UINT64_MAX >> 2) /* highest log index (or commit, match) accepted */

/* Messages -----------------------------------------------------------------------------------*/
/* An APPEND never carries more entries than this; a receiver may size its decoding scratch
 * with it (jr__raft_step rejects more with JR_EINVAL). */
#define JR__MAX_APPEND_ENTRIES 1024

enum jr__msg_type {
    JR__MSG_VOTE = 1, /* RequestVote (or pre-vote with JR__MF_PREVOTE) */
    JR__MSG_VOTE_RESP = 2,
    JR__MSG_APPEND = 3, /* AppendEntries with entries (may be zero entries) */
    JR__MSG_APPEND_RESP = 4,
    JR__MSG_HEARTBEAT = 5, /* leader liveness + commit; no log matching */
    JR__MSG_HEARTBEAT_RESP = 6,
    JR__MSG_SNAP = 7, /* one chunk of InstallSnapshot */
    JR__MSG_SNAP_RESP = 8,
    JR__MSG_TIMEOUT_NOW = 9, /* leadership transfer: campaign now, skipping pre-vote */
    JR__MSG_VOUCH = 10,      /* a replica that restarted asks a voter for its last log entry */
    JR__MSG_VOUCH_RESP = 11,
    JR__MSG_TYPE_MAX = 11
};

enum jr__msg_flags {
    JR__MF_PREVOTE = 1,  /* VOTE/VOTE_RESP: a pre-vote (§9.6); term is the proposed term */
    JR__MF_TRANSFER = 2, /* VOTE: campaign caused by a transfer; may disrupt a live leader */
    JR__MF_DURABLE = 4,  /* depends on this group's pending durable state: the node must send it
                            only after the sync that covers everything the group had pending */
};

typedef struct jr__msg {
    uint8_t type;  /* enum jr__msg_type */
    uint8_t flags; /* enum jr__msg_flags */
    uint64_t group;
    jr__id from;
    jr__id to;
    uint64_t term;
    union {
        struct {
            uint64_t last_index;
            uint64_t last_term;
        } vote;
        struct {
            uint8_t granted;
        } vote_resp;
        struct {
            uint64_t prev_index;
            uint64_t prev_term;
            uint64_t commit;
            uint32_t n;
            const jr__entry *entries; /* borrowed for the call */
        } append;
        struct {
            uint8_t success;
            uint64_t index; /* success: the follower's match index; else: rejected prev_index */
            /* On reject, the reason is in hint_term: 0 means the follower's log ends before
             * prev_index (hint_index = its last index + 1); non-zero is the follower's term at
             * prev_index, which conflicts (hint_index = the first index it holds of that term,
             * above its commit index). */
            uint64_t hint_index;
            uint64_t hint_term;
        } append_resp;
        struct {
            uint64_t commit;
        } heartbeat;
        struct {
            uint64_t match_hint; /* follower's last index, unused by safety */
        } heartbeat_resp;
        struct {
            uint64_t index;  /* last index covered by the snapshot */
            uint64_t sterm;  /* term of that entry */
            uint64_t offset; /* of this chunk in the snapshot's bytes */
            uint64_t total;  /* size of the snapshot's bytes: set on the last chunk, else 0
                                (the leader learns the size by reading to the end) */
            uint8_t done;    /* last chunk (the one shorter than snap_chunk_bytes) */
            uint32_t conf_len;
            const uint8_t *conf; /* jr__conf_encode() of the snapshot's configuration */
            uint32_t len;
            const uint8_t *data;
        } snap;
        struct {
            uint64_t index;  /* snapshot index being acknowledged */
            uint64_t offset; /* next offset wanted (resumes an interrupted install) */
            uint8_t done;    /* installed */
            uint8_t reject;  /* follower cannot take it (stale, error): leader re-probes */
        } snap_resp;
        struct {
            uint64_t last_index; /* the asking replica's last entry (what it holds now) */
            uint64_t last_term;
        } vouch;
        struct {
            uint8_t leader;      /* the answering server leads its term (the message's term) */
            uint8_t unfloored;   /* the answerer restarted and has no term floor yet: its term
                                    may be older than terms it took part in (vouch.c) */
            uint64_t last_index; /* its last entry, durable when this answer leaves */
            uint64_t last_term;
            uint64_t commit;     /* its commit index, at most its last index */
            uint64_t conf_index; /* index of its latest configuration's entry (or snapshot) */
            uint32_t conf_len;
            const uint8_t *conf; /* jr__conf_encode() of that configuration (borrowed) */
            /* When its latest configuration lies above its commit index (an uncommitted
             * change), the configuration in effect at its commit index and its entry's index
             * (at most commit); cconf_len 0 (and cconf_index 0) otherwise, or from a sender
             * that does not carry it */
            uint64_t cconf_index;
            uint32_t cconf_len;
            const uint8_t *cconf; /* jr__conf_encode() of it (borrowed) */
        } vouch_resp;
    } u;
} jr__msg;

/* The group --------------------------------------------------------------------------------*/
typedef struct jr__raft jr__raft;

typedef struct jr__raft_io {
    void *ctx;
    /* Hands over one message; m and everything it points to are borrowed for the call. */
    void (*send)(void *ctx, jr__raft *r, const jr__msg *m);
    /* The group has something for the node: unpersisted state, new commits, a changed deadline
     * or a role change. Called at most once until the node next calls jr__raft_ready_done(). */
    void (*notify)(void *ctx, jr__raft *r);
    /* Leader: reads up to cap bytes of the current snapshot at offset. */
    int (*snap_read)(void *ctx, jr__raft *r, uint64_t index, uint64_t offset, void *buf, size_t cap,
                     size_t *n);
    /* Follower: stores one chunk of an incoming snapshot (offset 0 starts a new one). */
    int (*snap_write)(void *ctx, jr__raft *r, uint64_t index, uint64_t offset, const void *data,
                      size_t len);
    /* Follower: the whole snapshot arrived; the node restores its state machine from it and
     * makes it durable before returning 0. The core then drops its log up to index, and all of
     * it if it does not hold (index, term) (§5.3) — the node can tell with jr__raft_entry()
     * during this call; jr__raft_unpersisted() reports that cut afterwards. */
    int (*snap_install)(void *ctx, jr__raft *r, uint64_t index, uint64_t term,
                        const jr__conf *conf);
} jr__raft_io;

typedef struct jr__raft_config {
    uint64_t group;
    jr__id self;
    const jr_allocator *alloc;
    uint64_t election_timeout;   /* ns; randomized in [T, 2T) */
    uint64_t heartbeat_interval; /* ns */
    uint64_t seed;
    uint32_t max_inflight;       /* APPEND messages in flight per follower; default 64 */
    uint64_t max_inflight_bytes; /* bytes in flight per follower; default 8 MiB */
    uint32_t max_msg_bytes;      /* entry bytes per APPEND; default 1 MiB */
    uint32_t max_entry_bytes;    /* largest proposal; default 1 MiB */
    uint32_t snap_chunk_bytes;   /* default 256 KiB */
    uint8_t observer;            /* informational; membership decides */
    /* Joining a group that exists (no bootstrap) — possibly a server removed earlier and
     * added back, whose replica went with everything it acknowledged: while its log is older
     * than (join_last_term, join_last_index), an entry the group had committed, it judges
     * candidates as if that were its last entry, and it starts at term join_term (if its log
     * is empty), so neither a candidate
     * nor a leader from before that point can use it (election.c, raft.c). 0: no floor (a
     * server that never was a member). */
    uint64_t join_term, join_last_term, join_last_index;
    uint32_t quiesce; /* idle heartbeat ticks before a leader goes quiet, less one; 0 never */
    /* Acknowledgements may precede the sync (the node's JR_SYNC_INTERVAL): a power loss of a
     * quorum can lose committed entries, and a leader elected afterwards may hold other
     * entries at those indexes. A follower then gives up the entries at and after the first
     * index where the leader's log (as an APPEND shows it) differs from its own, even below
     * its commit index, which goes back to the entry before (jr__raft_lost_commits counts
     * it); without this flag such a follower would skip them as committed and never converge.
     * 0: committed entries are never given up (a conflict below the commit index is ignored:
     * with every acknowledgement synced it cannot happen). */
    uint8_t commit_may_be_lost;
    /* ns a leader lets a commit that advanced with no APPEND to carry it wait for one before it
     * tells the followers with a HEARTBEAT (replication.c jr__repl_flush). While proposals
     * follow each other within it (a publisher waiting for each ack), every commit rides on the
     * next APPEND: the commit costs no frame and no answer of its own. 0: a HEARTBEAT at the
     * flush that finds the commit untold. */
    uint64_t commit_delay;
    jr__confs *confs; /* shared interned configurations; NULL: the group's own */
} jr__raft_config;

int jr__raft_new(const jr__raft_config *cfg, const jr__raft_io *io, jr__raft **out);
/* sizeof the group's struct (memory accounting; its rings and buffers come on top). */
size_t jr__raft_sizeof(void);
void jr__raft_free(jr__raft *r);

/* Recovery, before jr__raft_start(): state read back from durable storage, in order (hard
 * state, snapshot, then the entries after the snapshot). Loaded state counts as durable.
 * JR_EMISUSE after start. load_snapshot: JR_EINVAL for index/term 0 or an older snapshot; the
 * state machine is taken as restored to index. load_snapshot may also fail with JR_ENOMEM.
 * load_entry: index must be last+1 and its term at least the last term (JR_EINVAL otherwise — e.g.
 * a stale suffix the node failed to drop), data is copied; JR_ECORRUPT for a CONFIG entry that does
 * not decode; JR_ENOMEM. The commit index is clamped to the log at start. */
int jr__raft_load_hardstate(jr__raft *r, uint64_t term, jr__id vote, uint64_t commit);
int jr__raft_load_snapshot(jr__raft *r, uint64_t index, uint64_t term, const jr__conf *conf);
int jr__raft_load_entry(jr__raft *r, const jr__entry *e);
/* The loaded state came from storage that may have lost records this replica acknowledged (any
 * restart from disk: locally a torn write cannot be told from a lost tail of synced records, nor
 * all files rolled back to an older copy); damaged: recovery saw it lose records. The replica
 * starts unvouched (vouch.c): it asks the other voters for their last entries, grants no vote
 * and does not campaign until they vouch for it. JR_EMISUSE after start. */
int jr__raft_load_unvouched(jr__raft *r, int damaged);
/* A brand-new group: a CONFIG entry at index 1, term 1, identical on every initial voter. It
 * is reported as unpersisted like any other entry. */
int jr__raft_bootstrap(jr__raft *r, const jr__conf *conf);
/* Starts timers; call once after loading or bootstrap (JR_EMISUSE twice). Calls io->notify (a
 * bootstrap entry is unpersisted; the deadline is set). A group whose only voter is this server
 * becomes leader at once. */
int jr__raft_start(jr__raft *r, uint64_t now);

/* Inputs. Each may call io->send and io->notify. */
/* Feeds one received message. A message that is malformed or not for this replica (other group
 * or recipient, sender 0 or self, unknown type, term 0, inconsistent entries, undecodable
 * configuration, a term or index out of the wire bounds above, a last_term, hint_term or
 * snapshot term above the message's term) is dropped with JR_EINVAL and changes nothing; stale ones
 * are answered or ignored as Raft says and return 0. Any message wakes a quiet group, except a
 * HEARTBEAT_RESP of the current term reaching a quiet leader (a late answer to a heartbeat from
 * before it went quiet): that is taken as jr__raft_hb_resp() takes a node-level answer, and
 * counted (jr__raft_echoes). JR_EMISUSE before jr__raft_start(); JR_ENOMEM if the log could not
 * grow (the entries appended so far stay; the leader resends the rest). */
int jr__raft_step(jr__raft *r, uint64_t now, const jr__msg *m);
/* HEARTBEAT_RESPs a quiet leader took as answers to the node's listing, in this life. */
uint64_t jr__raft_echoes(const jr__raft *r);
void jr__raft_tick(jr__raft *r, uint64_t now);
/* When the group next needs jr__raft_tick(); UINT64_MAX if never (e.g. a lone observer). */
uint64_t jr__raft_deadline(const jr__raft *r);

/* Leader: the commit index goes to every follower not yet told it at the next tick (the
 * deadline is now), without waiting cfg.commit_delay for an APPEND to carry it; a follower that
 * acknowledges the entries up to it only later is told it in the flush that counts that
 * acknowledgement (a read barrier's reader may be that follower). Nothing on a follower or a
 * quiet leader. */
void jr__raft_commit_now(jr__raft *r);

/* Leader only. Appends a NORMAL entry (data copied); *index gets its index. JR_ENOTLEADER,
 * JR_ETRANSFER, JR_EMSGSIZE, JR_ENOMEM. */
int jr__raft_propose(jr__raft *r, uint64_t now, const void *data, size_t len, uint64_t *index);

enum jr__change { JR__ADD_OBSERVER = 1, JR__PROMOTE = 2, JR__REMOVE = 3 };
/* Leader only; appends a CONFIG entry. JR_EBUSY while a change is uncommitted or no entry of
 * this term has committed yet; JR_EINVAL for an impossible change (adding a member, promoting a
 * voter, removing a non-member, removing the last voter); JR_ENOTLEADER. */
int jr__raft_change(jr__raft *r, uint64_t now, int op, jr__id peer, uint64_t *index);
/* Leader only; to == 0 picks the most caught-up current voter. JR_ENOTVOTER if `to` is not a
 * current voter (a voter other than this server, heard from within an election timeout — for a
 * quiet leader: not reported lost — holding everything committed: jr_group_peer's `current`),
 * or is unvouched or unconfirmed (restarted, or answered below what it acknowledged, and not
 * caught up since: vouch.c), or to == 0 and there is none;
 * JR_ETRANSFER if one is already under way. The leader stops accepting proposals and changes
 * (JR_ETRANSFER), brings the target up to date, then sends it TIMEOUT_NOW; after an election
 * timeout without success the transfer is abandoned. Completion is observed as a leader
 * change. */
int jr__raft_transfer(jr__raft *r, uint64_t now, jr__id to);
/* Step down to follower now (e.g. the host asked); a voter that holds our whole log is sent
 * TIMEOUT_NOW so the group is not leaderless for an election timeout. */
void jr__raft_stepdown(jr__raft *r, uint64_t now);

/* The node's side of the ready cycle ----------------------------------------------------------
 * After io->notify the node calls, in its flush:
 *   jr__raft_flush()        -> (optional, recommended) a leader sends the APPENDs batched since
 *                              the last flush now, so they travel while the node writes
 *   jr__raft_unpersisted()  -> write those entries (jr__raft_entry) and the hard state to the WAL
 *   ... one sync for all groups ...
 *   jr__raft_persisted()    -> the leader may now count itself; DURABLE messages may leave.
 *                              Call it on every flush of a notified group, even when nothing was
 *                              unpersisted: it also sends whatever the group batched (entries,
 *                              commit updates) if jr__raft_flush() was not called.
 *   apply entries up to jr__raft_commit_index() (only those also persisted), jr__raft_applied()
 *   jr__raft_ready_done()   -> re-enables io->notify
 * Between jr__raft_unpersisted() and jr__raft_persisted() the group gets no other input (no step,
 * tick, propose): persisted() vouches for exactly what unpersisted() reported. A node whose sync
 * runs while the group takes input (jr_host.sync_start) reports it with jr__raft_persisted_as()
 * instead, naming what it wrote.
 * Proposals are not sent by jr__raft_propose() itself: they are batched until the flush (or
 * until an acknowledgement from a follower opens its window), so a burst of proposals leaves
 * as a few large APPENDs.
 */
/* Leader: sends what is batched (entries to followers whose window is open, commit updates).
 * Harmless on a follower or when nothing is pending. */
void jr__raft_flush(jr__raft *r, uint64_t now);
typedef struct jr__hardstate {
    uint64_t term;
    jr__id vote;
    uint64_t commit;
} jr__hardstate;

/* Entries [*from, *to] are not yet durable (none if *from > *to). A *from at or below a
 * previously persisted index means the log was truncated there: the WAL record for index i
 * replaces every earlier record of index >= i of the same group. That holds even when there is
 * nothing to write yet (*from > *to): after a snapshot install that discarded a conflicting log
 * (*from == snapshot index + 1), the node must not replay its old entries from *from on. Returns
 * non-zero if the hard state changed since the last jr__raft_persisted(): 2 if the term or vote
 * changed (that must be durable before DURABLE messages leave), 1 if only the commit index advanced
 * (worth writing, but never urgent: it causes no io->notify by itself and need not cost a sync of
 * its own); 0 otherwise. *hs gets the current hard state either way. */
int jr__raft_unpersisted(const jr__raft *r, uint64_t *from, uint64_t *to, jr__hardstate *hs);
/* Everything reported by the last jr__raft_unpersisted() up to `index` is durable, and so is
 * the hard state it reported if hs_written is non-zero (it must be when its term or vote
 * changed). A node may leave a commit-only change unwritten: jr__raft_unpersisted() keeps
 * reporting it (1) until a flush writes it, normally with the group's next entries, so the
 * durable commit index lags the real one by what was committed since the group last wrote. */
void jr__raft_persisted(jr__raft *r, uint64_t now, uint64_t index, int hs_written);
/* The same for a node whose sync completes after the group got more input (jr_host.sync_start):
 * entries up to index are durable, and so is the hard state *hs (NULL: none written), which is
 * what an earlier jr__raft_unpersisted() reported, not necessarily the current one (a newer
 * term or vote then stays reported unpersisted). The node must have checked that the entries
 * up to index are still those it wrote (a log cut since may have replaced them): the entry at
 * index has the term it had then (Log Matching, §3.5, covers the entries before it). */
void jr__raft_persisted_as(jr__raft *r, uint64_t now, uint64_t index, const jr__hardstate *hs);
/* The entry at index (borrowed until the next input to r). JR_ECOMPACTED below the log start,
 * JR_ENOTFOUND above the last index. */
int jr__raft_entry(const jr__raft *r, uint64_t index, jr__entry *out);
/* The state machine applied everything up to index (entries may be released after it is also
 * behind the snapshot). */
void jr__raft_applied(jr__raft *r, uint64_t index);
/* The node took a state-machine snapshot at applied index `index`; the log before it may be
 * dropped except `trailing` entries kept for slow followers. JR_EINVAL if index is above the
 * applied index or below the first index held; 0 (nothing done) if not above the current
 * snapshot. Memory of the dropped entries is reused by later appends. */
int jr__raft_snapshot_taken(jr__raft *r, uint64_t index, uint64_t trailing);
void jr__raft_ready_done(jr__raft *r);

/* Quiescence and coalesced heartbeats (quiesce.c) -----------------------------------------------
 * With cfg.quiesce = k > 0, a leader goes quiet after k + 1 consecutive heartbeat ticks that
 * found the group idle (at the first such tick while its log holds nothing of its term but its
 * election's no-op: it has no traffic to wait out): an entry of its term committed, its own log
 * durable and committed to the end, no transfer and no uncommitted configuration, and every
 * member heard from within an election timeout in replicate state with nothing in flight,
 * holding the whole log and told the commit index (members not heard from for that long, or
 * reported lost by the node and silent since, are taken for down and do not hold it back, as
 * long as a quorum of voters is caught up). A quiet group has no deadline
 * (jr__raft_deadline() is UINT64_MAX; only an unvouched follower's own timer runs, which asks
 * its peers for their word, vouch.c) and needs no input at all while nothing happens: its node
 * tells the other members once that it is quiet (jr__raft_hb_item gives what to tell), and a
 * follower told so (jr__raft_hb_recv) follows the leader as from a HEARTBEAT and, holding
 * everything committed, goes quiet: no election timer, and the leader lease (§4.2.3) held while
 * quiet. Contact is then node-level: the node reports a member's node lost
 * (jr__raft_peer_lost: a quiet leader no longer counts it and steps down once the members left
 * are no quorum — check-quorum, §6.2; a follower of that leader campaigns) and back
 * (jr__raft_peer_alive), and relays answers to its listings (jr__raft_hb_resp). Any input that
 * is not one of these wakes a quiet group (a received message, a proposal, a membership change,
 * a transfer, a stepdown), as does jr__raft_wake (the leader's node says the group is no longer
 * quiet there). A (pre-)vote request from the very server a follower takes for its leader is
 * never refused by the lease: that leader gave up. A quiet leader's progress keeps the
 * last_contact and heard of before it went quiet: reports of contact use the node's (per-peer)
 * instead (jr__live_contact); once it wakes, heard, except for the members it counted through their
 * node and that have not answered since (jr__progress.by_node), for which the node's contact as of
 * the wake stands in.
 */
/* 1 if a term and an index (commit, match) from the wire are within the bounds above for this
 * group (the node counts the heartbeat items it drops for failing this). */
int jr__raft_wire_ok(const jr__raft *r, uint64_t term, uint64_t index);
/* 1 if the group is quiet (a quiet leader, or a quiet follower of jr__raft_leader()). */
int jr__raft_quiet(const jr__raft *r);
/* Quiet leader: what to tell peer: 1 with *term and *commit (the commit index as far as peer
 * is known to hold it), or 0 if the group is not quiet or peer is not one of its other
 * members. Reads only. */
int jr__raft_hb_item(const jr__raft *r, jr__id peer, uint64_t *term, uint64_t *commit);
/* The node of `from` says this group is quiet there with (term, commit). Term rules and effect
 * as for a HEARTBEAT from the leader of `term` (a stale term changes nothing: the node's answer
 * carries our newer term, which deposes the sender); then, as a follower holding every index up
 * to commit, the group goes (or stays) quiet. Returns 1 if it follows `from` quietly. Notifies
 * only on a change the node must act on (term, role, leader, commit, quiet state). */
int jr__raft_hb_recv(jr__raft *r, uint64_t now, jr__id from, uint64_t term, uint64_t commit);
/* Peer `from` answered with its (term, index = its last durable index) for this group. A newer
 * term deposes us (as any message of a newer term). In our term, as leader: contact with `from`
 * (progress last_contact and heard; no longer lost); a quiet leader that learns `from` lacks
 * entries (index below its match, or a match below our last index) wakes and probes it. */
void jr__raft_hb_resp(jr__raft *r, uint64_t now, jr__id from, uint64_t term, uint64_t index);
/* The node has heard nothing from peer's node for an election timeout (or peer restarted and
 * lost its state). A leader marks it lost until it answers or jr__raft_peer_alive (it no longer
 * holds quiescence back); a quiet leader whose members not lost are no quorum
 * of voters steps down. A follower whose leader is peer forgets it (so the lease no longer
 * refuses candidates), wakes, and campaigns (pre-vote first) `delay` ns from now unless its
 * timer is due sooner; the node picks delay to stagger the groups of a lost node. */
void jr__raft_peer_lost(jr__raft *r, uint64_t now, jr__id peer, uint64_t delay);
/* The node hears from peer's node again: a leader counts it in contact (not lost; its
 * last_contact is now), though this group has not heard from it (heard is unchanged). */
void jr__raft_peer_alive(jr__raft *r, uint64_t now, jr__id peer);
/* Leaves the quiet state: a leader heartbeats at its next tick (now), a follower restarts its
 * election timer. No-op if not quiet. */
void jr__raft_wake(jr__raft *r, uint64_t now);
/* Pushes a follower's or candidate's next campaign back by delay ns (the node spreads the first
 * campaigns of groups opened in a burst, so that a restart with many groups is no election
 * storm). No-op for a leader or a quiet follower. Does not notify: the caller re-reads
 * jr__raft_deadline(). */
void jr__raft_defer_campaign(jr__raft *r, uint64_t now, uint64_t delay);

/* The order in which a group's servers campaign after its leader is lost: server a is ranked
 * ahead of server b by a hash of (group, server), then by id, so the groups of a lost node spread
 * evenly over the survivors. The node staggers their campaigns by it (lib/node/liveness.c). While
 * its round may still win (no voter refused it, younger than a quarter election timeout), a
 * pre-candidate grants a pre-vote only to a server ranked ahead of it or with a newer log: two
 * alike that campaign at once (a paced round started late) and need each other's vote (three
 * replicas, one lost) do not both win the pre-vote and split the real one; the one ranked ahead
 * wins. With more voters, others' pre-votes may still elect both (then randomized timeouts
 * settle it, as in plain Raft). */
static inline int jr__raft_ahead(uint64_t group, jr__id a, jr__id b)
{
    uint64_t x = group * 0x9e3779b97f4a7c15ULL ^ a, y = group * 0x9e3779b97f4a7c15ULL ^ b;
    uint64_t ka = jr__splitmix64(&x), kb = jr__splitmix64(&y);
    return ka < kb || (ka == kb && a < b);
}

/* Follower flow control for a member joining a group (replication.c "Capped observers").
 * jr__raft_cap_log bounds the payload bytes this replica's in-memory log holds while it is an
 * observer of its latest configuration: at `bytes` or more, an APPEND adds no entry; its prefix
 * that fits is taken and acknowledged, and one of which nothing fits is dropped unanswered, as if
 * the network had lost it, so the leader's own loss handling paces it (one probe per heartbeat
 * interval, a snapshot once its log no longer holds what the replica needs). A voter is never
 * capped (the group's quorum may need its acknowledgements), nor are snapshots. 0: no cap (the
 * default). The node sets it while the replica's state machine cannot take a snapshot (a stream
 * replica copying its messages), whose log nothing else would bound. */
void jr__raft_cap_log(jr__raft *r, uint64_t bytes);
/* 1 while the cap is in force and reached: the log takes no entry. */
int jr__raft_log_full(const jr__raft *r);
/* The most payload bytes the log held at once while a cap was set (in this life), and the
 * APPENDs dropped for a full log. The peak is at most the cap plus one entry. */
uint64_t jr__raft_capped_peak(const jr__raft *r);
uint64_t jr__raft_capped_drops(const jr__raft *r);

/* Queries ----------------------------------------------------------------------------------*/
int jr__raft_role(const jr__raft *r); /* enum jr_role */
uint64_t jr__raft_term(const jr__raft *r);
jr__id jr__raft_leader(const jr__raft *r); /* 0 if unknown */
/* How long this replica has known no leader at `now`: 0 while it leads or knows its leader;
 * else since it last came to (its leader lost, stepped down or deposed, or its start).
 * *since_start: 1 if it has lost no leader since its start (it may never have known one). */
uint64_t jr__raft_leaderless_ns(const jr__raft *r, uint64_t now, int *since_start);
jr__id jr__raft_self(const jr__raft *r);
uint64_t jr__raft_group(const jr__raft *r);
uint64_t jr__raft_commit_index(const jr__raft *r);
/* The commit index of the last hard state reported written (jr__raft_persisted) or loaded. */
uint64_t jr__raft_durable_commit(const jr__raft *r);
/* For a group whose replicas apply only what a durable commit index covers: as a leader, r tells
 * its members no commit index past its own durable one, so none applies an entry before it can. */
void jr__raft_tell_durable_commit(jr__raft *r);
uint64_t jr__raft_applied_index(const jr__raft *r);
uint64_t jr__raft_last_index(const jr__raft *r);
uint64_t jr__raft_last_term(const jr__raft *r);
uint64_t jr__raft_first_index(const jr__raft *r); /* first index held in memory */
/* Payload bytes of the entries lo..hi held in memory (clamped to what is held; 0 if none). */
uint64_t jr__raft_log_bytes(const jr__raft *r, uint64_t lo, uint64_t hi);
uint64_t jr__raft_snapshot_index(const jr__raft *r);
uint64_t jr__raft_snapshot_term(const jr__raft *r);
const jr__conf *jr__raft_conf(const jr__raft *r); /* latest configuration (maybe uncommitted) */
uint64_t jr__raft_conf_index(const jr__raft *r);  /* its entry's index (or the snapshot's) */
void jr__raft_snapshot_conf(const jr__raft *r, jr__conf *out); /* configuration at snapshot index */
int jr__raft_ready(const jr__raft *r); /* leader with an entry of its term committed */
/* Operator rescue (vouch.c "Rescue"): takes member `peer` as holding nothing of the group, in
 * place of any answer it gave this unvouched replica and of every later one. Unsafe unless peer
 * is gone for good. 0; JR_ENOCHANGE (whole, or peer declared gone already); JR_ENOTMEMBER (not a
 * member it waits for); JR_EINVAL (itself); JR_ENOMEM. */
int jr__raft_vouch_gone(jr__raft *r, jr__id peer, uint64_t now);
/* The server of member `peer` was removed from the cluster for good, and this server refuses
 * its frames from now on (removed.c): in a group whose voters are exactly this replica and
 * `peer`, a whole replica then counts peer's vote and acknowledgement as given (removed.c says
 * when, and why that is safe). Kept for this life of the core only: the node tells it again
 * after a restart. Two are kept, members of the latest configuration over other servers (a
 * server no member, told while two members are kept, is not kept). 0; JR_ENOCHANGE (told
 * before); JR_EINVAL (0 or itself). */
int jr__raft_peer_removed(jr__raft *r, jr__id peer);
/* Whether this replica stands in for removed member `peer` (removed.c), and if not, why. */
enum jr__stand_in {
    JR__STAND_YES = 0,     /* it does: the group elects and commits without peer */
    JR__STAND_NOT_PAIR,    /* the voters are not exactly this replica and peer */
    JR__STAND_NOT_REMOVED, /* peer's removal was not given (jr__raft_peer_removed) */
    JR__STAND_DAMAGED,     /* this replica lost records: it may lack committed entries */
    JR__STAND_UNVOUCHED,   /* restarted and not yet vouched for: the same may be true */
    JR__STAND_UNCOMMITTED, /* the configuration at its commit index, or a later one, has
                              other voters */
    JR__STAND_OBSERVERS,   /* an observer peer could have promoted is no longer a member */
};
int jr__raft_stand_in_state(const jr__raft *r, jr__id peer);
/* While it stands in for peer: the observers (bits by position in jr__raft_conf()) whose own
 * vote and acknowledgement it needs as well, those peer could have promoted (removed.c); 0
 * when none, or when it does not stand in. */
uint64_t jr__raft_stand_in_observers(const jr__raft *r, jr__id peer);
/* The same for whichever removed voter it stands in for now: 0 when it stands in for none. A
 * leader never removes such an observer (jr__raft_change: JR_EBUSY): without it in the latest
 * configuration it would stop standing in with that removal uncommitted, and the group would
 * be stuck; the pair is ended by promoting a new voter first, after which it may go. */
uint64_t jr__raft_stand_in_needs(const jr__raft *r);
/* An unvouched replica that started without a configuration (its recovery lost it, vouch.c)
 * asks servers ids[0..n) (this server left out) for their word now and at each of its asking
 * timeouts: the servers that may host the group, from the node. Once one answers with a
 * configuration it had committed, its members are asked as from any answer. 0; JR_ENOCHANGE
 * (not such a replica); JR_ENOMEM. */
int jr__raft_vouch_hint(jr__raft *r, const jr__id *ids, uint32_t n);

/* Holds (on = 1) or releases this replica's vote: while held it grants no vote or pre-vote and
 * does not campaign, unless its leader hands leadership over (TIMEOUT_NOW: that leader's line
 * began with an election a replica nobody held won, so the group is alive); it still follows a
 * leader, acknowledges and applies. For a host that cannot yet tell whether the group still
 * exists: a replica opened from a record of the group older than the group's deletion (files
 * rolled back, a WAL tail cut) would be vouched for by members that released their replicas and
 * answer that they hold nothing (vouch.c), and two such replicas could elect each other. */
void jr__raft_hold(jr__raft *r, int on);
/* 1 while its vote is held (jr__raft_hold). */
int jr__raft_held(const jr__raft *r);
/* 1 while this replica is unvouched (vouch.c): restarted from storage that may have lost what
 * it acknowledged, and not yet vouched for by its peers; 0 once whole. */
int jr__raft_unvouched(const jr__raft *r);
/* Its last index when it last became whole (0 if it never was unvouched). A replica vouched for
 * in this life then held every entry its group had committed before this life began: (a) its log
 * held the last entry of a leader that answered after the restart, (b) it won an election (Leader
 * Completeness, §3.6.3). So an entry above it was committed after the restart. */
uint64_t jr__raft_vouched_last(const jr__raft *r);
/* 1 if this replica knows it lost records: recovery said so (until it is vouched for again),
 * or a leader's append conflicts with an entry it had committed (it stopped: it takes no more
 * appends, votes or campaigns, and its state machine must be rebuilt). */
int jr__raft_damaged(const jr__raft *r);
/* 1 if a leader's append conflicted with an entry this replica had committed (see above). */
int jr__raft_diverged(const jr__raft *r);
/* Times this follower gave up committed entries (cfg.commit_may_be_lost); the node compares
 * it to re-apply from the new commit index. */
uint64_t jr__raft_lost_commits(const jr__raft *r);
int jr__raft_transferring(const jr__raft *r);

enum jr__progress_state { JR__PROBE = 0, JR__REPLICATE = 1, JR__SNAPSHOT = 2 };
typedef struct jr__progress {
    jr__id id;
    uint8_t voter;
    uint8_t state; /* enum jr__progress_state */
    uint64_t match;
    uint64_t next;
    /* JR__SNAPSHOT: the index of the oldest snapshot it was sent since it needed one (it may
     * install any of those, and then needs the entries after it); 0 otherwise. */
    uint64_t snap_from;
    /* Times since this leader's election it began to need a snapshot after it had acknowledged
     * entries beyond those the previous such need started from: the log was compacted past a
     * member that had caught on (a joiner the group outran, a follower left behind). A snapshot
     * sent again before its match moved (refused, lost) is not counted again. */
    uint32_t later_snaps;
    /* Liveness as this leader judges it (check-quorum, quiescence, transfers): the now of the
     * last message from it, or of the grace it was given — a full election timeout from our
     * election, from waking from quiet, or from its node's return (jr__raft_peer_alive) — which
     * it may never have answered. Not contact to report: see heard. */
    uint64_t last_contact;
    /* Contact to report: the now of the last message this group received from it since we
     * became leader (a vote that elected us counts, at the start of that round); 0: none — a
     * member a new leader has not heard from yet, however alive check-quorum takes it for. */
    uint64_t heard;
    /* last_contact is the word of its node (it was counted through its node when we woke from
     * quiet, or its node came back: jr__raft_peer_alive), and no message of its came since. */
    uint8_t by_node;
    /* unvouched: it restarted from storage that may have lost entries (it asked for a VOUCH)
     * and has not yet acknowledged our log up to where it was then: not a transfer target, not
     * current. damaged: its VOUCH showed it lost entries it had acknowledged (its log ends
     * below, or conflicts with, what we counted). unconfirmed: no VOUCH came, but it answered
     * below what it had acknowledged (a late answer that an acknowledgement overtook, or a
     * restart whose VOUCH is still on its way) and has not acknowledged our log of then since:
     * not a transfer target, not current, and neither restarted nor damaged as far as we
     * know. */
    uint8_t unvouched, damaged, unconfirmed;
    /* What it last said of its replica's state machine (jr__raft_fsm_report; enum
     * jr__fsm_state, 0 when it said nothing since we became leader) and the now it said it at;
     * it says so again every heartbeat interval while not whole, so a reader takes a word older
     * than an election timeout for none. */
    uint8_t fsm;
    uint64_t fsm_at;
} jr__progress;
/* Leader: progress of member i of jr__raft_conf() (self included, match = durable last). */
int jr__raft_progress(const jr__raft *r, uint32_t i, jr__progress *out);

/* A replica's state machine as its server reports it to the group's leader (wire/frame.h
 * JR__EXT_FSM): whole, failed (it applies nothing until it is rebuilt), or being rebuilt from
 * the group's snapshot, log and peers. The Raft log is whole in every state: this is the
 * state machine's word, which Raft itself never acts on. */
enum jr__fsm_state { JR__FSM_WHOLE = 0, JR__FSM_FAILED = 1, JR__FSM_REBUILDING = 2 };
/* Member `from` says, in `term`, that its replica's state machine is in `state`: as the leader
 * of that very term, the core keeps it in from's progress with now (jr__progress.fsm, fsm_at);
 * any other term or role, a non-member or this server itself, or an unknown state, changes
 * nothing. Reporting only: no message, no notify, no allocation, no wake of a quiet group. */
void jr__raft_fsm_report(jr__raft *r, uint64_t now, jr__id from, uint64_t term, uint8_t state);

#endif
