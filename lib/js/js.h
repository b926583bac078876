/*
 * js — the JetStream layer on a node: the meta group every server runs, the server's local
 * stream replicas, the requests it serves for other servers, and the public stream API. It sits
 * above the node core (lib/node) and below nothing but the public API. Of the core it sees only
 * node/services.h (test/abi/layering.sh holds it to that): it registers its hooks there
 * (jr__js_open) and uses the core's services — groups, effects, timers, completion records,
 * RPCs, peers and the node's facts and clock — through handles whose structures stay the
 * core's.
 *
 * Files of this module (lib/js/):
 *   js.c              lifecycle (open/close), the layer's timers, request records, deferred
 *                     completion, and the hooks the node calls (before flush, role changed,
 *                     request: the dispatch of another server's request by kind, close)
 *   meta_replica.c    the meta group: its fsm, SERVER_INFO, admin requests at the meta leader
 *                     (check, placement, proposal, a peer set for a replica change), convergence
 *                     of local replicas (meta_desired)
 *   stream_replica.c  local stream replicas: the stream fsm as a jr_fsm, batching publishes
 *                     into BATCH entries, matching applied results to waiting requests, leader
 *                     duties (config, TICK; a timer armed only while a duty is due)
 *   stream_peers.c    the leader duty of peer changes: the group's configuration converges to
 *                     the assignment, then STREAM_CONVERGED
 *   stream_requests.c what a stream leader executes for a request (publish, info, admin)
 *   consumer_replica.c local consumer replicas: a Raft group per consumer whose state machine
 *                     is lib/consumer's jr__cstate
 *   api_consumer.c    the public consumer API (create, update, delete, info)
 *   catchup.c         a replica restored from a stream snapshot pulls the missing messages
 *   api_stream.c      the public stream API and the routing of requests to the right leader
 *   api_lists.c       stream and consumer names and lists (from the meta leader, infos from
 *                     each leader), direct get at any current replica
 *   api_health.c      health checks: a stream's or consumer's replicas judged on its info, and
 *                     this node's meta replica and local replicas judged on their own state
 *   codec.c/.h        payload encodings of the layer's RPCs (stream info, server report,
 *                     stored messages)
 *
 * Invariants:
 *  - every user callback runs from the node's completion queue (jr__node_drain), never inside
 *    the API call that started it: a request reserves its completion record (jr__op) when it is
 *    accepted, so completing it never fails;
 *  - a request record (jr__req) completes exactly once (req->done), then is recycled after its
 *    callback ran; a record on the origin side never outlives js (close fails the rest);
 *  - an acknowledgement (publish ack, admin result) is produced only from an applied log entry
 *    whose (index, term) is the one this leader proposed — never from a proposal alone;
 *  - the layer's timers (jr__jtimer) live on the node's one timer heap (jr__node_timer_arm):
 *    jr_node_deadline() covers them and jr_node_tick() fires them; none fires after close
 *    began;
 *  - group ids: the meta group is JR__META_GROUP_ID; stream groups are handed out by the meta
 *    state from JR__FIRST_STREAM_GROUP_ID on (above JR_GROUP_ID_HOST_MAX, never reused).
 */
#ifndef JR_NODE_JS_H
#define JR_NODE_JS_H

#include <stddef.h>
#include <stdint.h>

#include "consumer/op.h"
#include "consumer/state.h"
#include "meta/members.h"
#include "meta/meta_state.h"
#include "node/services.h"
#include "stream/clock.h"
#include "stream/fsm.h"
#include "wire/frame.h"

#define JR__META_GROUP_ID (JR_GROUP_ID_HOST_MAX + 1)
#define JR__FIRST_STREAM_GROUP_ID (JR_GROUP_ID_HOST_MAX + 2)
#define JR__JS_MSG_MAX 512 /* longest message a request carries back */
_Static_assert(JR__JS_MSG_MAX <= JR__RPC_KEEP,
               "a write's answer (an error text at most) is repeated to a duplicate");
/* The longest detail a refused publish's answer carries (the limit it hit, or the stream's last
 * msg id, cut to this many bytes): with its seq and flag, the answer stays one a duplicate of the
 * request is given again. */
#define JR__PUB_WHY_MAX 255u
_Static_assert(24u + JR__PUB_WHY_MAX <= JR__RPC_KEEP, "a refused publish's answer is kept");
/* Bytes a stream entry holds beyond one message's headers and data: the op and batch framing,
 * the longest subject, msg ids and stream name. */
#define JR__JS_ENTRY_OVERHEAD                                                                      \
    (64u + JR__OP_SUBJECT_MAX + 2u * JR__OP_MSG_ID_MAX + JR_STREAM_NAME_MAX)
_Static_assert(JR__JS_ENTRY_OVERHEAD <= JR__NODE_ENTRY_FRAMING,
               "the node leaves room for a stream entry's framing");

#define JR__GROUP_NAME_MAX 16 /* a priority group's name */
#define JR__PIN_ID_MAX 22     /* a pin id (as a NATS nuid) */

typedef struct jr__js jr__js;
typedef struct jr__srep jr__srep;
typedef struct jr__crep jr__crep;
typedef struct jr__req jr__req;

/* A timer of the layer: fire runs from jr_node_tick once deadline <= now. */
typedef struct jr__jtimer {
    jr__timer t;
    void (*fire)(jr__js *js, struct jr__jtimer *t);
    /* Armed on a deadline queue (jr__js_timer_arm_queued) instead of the heap: its queue, its
     * neighbours there and its deadline. A timer is on the heap or on one queue, never both. */
    struct jr__jqueue *q;
    struct jr__jtimer *qprev, *qnext;
    uint64_t qdeadline;
} jr__jtimer;

/* A deadline queue: timers armed at now + span for one span, in arming order, which is the
 * order of their deadlines (the node's clock never goes back). One heap timer stands for the
 * queue at its head's deadline, so arming and cancelling a queued timer are O(1) list
 * operations and touch no heap: a request's deadline per publish costs no heap insert and no
 * heap removal. A queue whose last timer went keeps its span until a fifth span wants a slot. */
typedef struct jr__jqueue {
    uint64_t span; /* 0: free */
    jr__jtimer *head, *tail;
    jr__jtimer timer; /* on the heap at (or before) the head's deadline while the queue has any */
} jr__jqueue;

#define JR__JQUEUES 4

/* What a request asks for (the public call that made it). */
enum jr__req_op {
    JR__REQ_ADD = 1,
    JR__REQ_UPDATE,
    JR__REQ_DELETE,
    JR__REQ_PUBLISH,
    JR__REQ_INFO,
    JR__REQ_PURGE,
    JR__REQ_MSG_DELETE,
    JR__REQ_MSG_GET,
    JR__REQ_GET_LAST,
    JR__REQ_STEPDOWN,
    JR__REQ_META_INFO,
    JR__REQ_SERVER_INFO,  /* internal: this server's facts for the meta log (no callback) */
    JR__REQ_CONVERGED,    /* internal: a stream leader reports a peer change done (no callback) */
    JR__REQ_CONSUMER_ADD, /* consumer create/update (a meta request) */
    JR__REQ_CONSUMER_DELETE, /* consumer delete (a meta request) */
    JR__REQ_CONSUMER_PAUSE,  /* consumer pause or resume (a meta request) */
    JR__REQ_CONSUMER_EXPIRE, /* internal: an inactive consumer's leader deletes it (no callback) */
    JR__REQ_CONSUMER_RESET,  /* a reset at the consumer's leader */
    JR__REQ_CONSUMER_STEPDOWN, /* a leadership transfer at the consumer's leader */
    JR__REQ_CONSUMER_UNPIN,    /* a pin cleared at the consumer's leader */
    JR__REQ_CONSUMER_INFO,     /* consumer info at the consumer's leader */
    JR__REQ_FETCH,             /* a pull request at the consumer's leader */
    JR__REQ_ACK,               /* an acknowledgement at the consumer's leader (cb.admin may be
                                  NULL: fire and forget) */
    JR__REQ_STREAM_NAMES,      /* names and lists from the meta leader (api_lists.c) */
    JR__REQ_STREAM_LIST,
    JR__REQ_CONSUMER_NAMES,
    JR__REQ_CONSUMER_LIST,
    JR__REQ_DIRECT_GET,    /* a read at any current replica (api_lists.c) */
    JR__REQ_SERVER_REMOVE, /* jr_server_peer_remove (a meta request; meta_members.c) */
    JR__REQ_SERVER_JOIN,   /* internal: a join forwarded for a new server (meta_members.c) */
    JR__REQ_BARRIER,       /* internal waiter: a consumer leader's read barrier on its stream
                              (JR__ADM_BARRIER; consumer_leader.c "Read barrier") */
    JR__REQ_GET_NEXT,      /* the first message at or after a seq on a subject, at the leader */
    JR__REQ_SUBJECTS,      /* a page of subjects and their counts, at the leader (details.c) */
    JR__REQ_DELETED,       /* a page of deleted seq ranges, at the leader (details.c) */
};

/* Sub-kinds of JR__RPC_STREAM_ADMIN (first byte of its payload). */
enum jr__admin_sub {
    JR__ADM_PURGE = 1,
    JR__ADM_MSG_DELETE = 2,
    JR__ADM_MSG_GET = 3,
    JR__ADM_GET_LAST = 4,
    JR__ADM_STEPDOWN = 5,
    JR__ADM_PING = 6,       /* answered at once: are you there (and still the leader)? */
    JR__ADM_READY = 7,      /* to a member, from its leader: is your replica complete? (any server
                               answers, leader or not: stream_requests.c) */
    JR__ADM_DIRECT_GET = 8, /* a direct get, answered by any current replica (api_lists.c) */
    JR__ADM_HEALTH = 9,     /* to the leader, from the meta leader placing a shrink: how is each
                               member? (u8 n, then n times: str name | u8 alive | varint lag) */
    JR__ADM_BARRIER = 10,   /* to the leader, from a consumer's leader: commit a TICK and answer
                               its index (varint), the stream index its local replica must reach
                               before it delivers (consumer_leader.c "Read barrier") */
    JR__ADM_GET_NEXT = 11,  /* varint seq | bytes subject: the first message at or after seq
                               whose subject matches, read at the leader as JR__ADM_GET_LAST */
    JR__ADM_SUBJECTS = 12,  /* varint offset | bytes filter: a page of subjects (details.c) */
    JR__ADM_DELETED = 13,   /* varint after: a page of deleted seq ranges (details.c) */
};

/* Sub-kinds of JR__RPC_CONSUMER (first byte of its payload; then u64 consumer group). */
enum jr__consumer_sub {
    JR__CSUB_INFO = 1,     /* consumer info */
    JR__CSUB_FETCH = 2,    /* a pull request: varint batch | varint max_bytes | varint expires_ns |
                              u8 flags (JR__FETCH_*) */
    JR__CSUB_ACK = 3,      /* u8 kind | u8 confirm | varint sseq | varint dseq | varint delay_ns */
    JR__CSUB_RESET = 4,    /* varint seq (0: the ack floor's + 1) */
    JR__CSUB_STEPDOWN = 5, /* str peer ("": the best one) */
    JR__CSUB_UNPIN = 6,    /* str group */
};

/* Flags of a fetch. A push consumer's subscription (api_consumer.c) pulls with JR__FETCH_PUSH:
 * a push consumer takes only those, a pull consumer never. */
#define JR__FETCH_NO_WAIT 1
#define JR__FETCH_PUSH 2

/* End codes of a fetch's answer that are not ends: the requester hands the answer's messages
 * to its caller and asks again for the rest (what the request still wants, until its expiry).
 * 100: an idle heartbeat (the caller also gets the heartbeat); JR__FETCH_MORE: the leader
 * handed out what it had, and the caller should not wait for the batch to fill to see it. */
#define JR__FETCH_HEARTBEAT 100
#define JR__FETCH_MORE 101

/* Where the result of a request executed at a leader goes: back over RPC to `to` (the
 * requester's rpc id), or to a request of this very node. */
typedef struct jr__route {
    jr__req *local;  /* non-NULL: a request of this node (rpc_id holds its serial: a request
                        that completed meanwhile, and whose record was reused, is not hit) */
    jr__id to;       /* else: the requesting node (0: nobody waits) */
    uint64_t rpc_id; /* the requester's call id */
} jr__route;

/* The user callback of a request (which member: by jr__req.what). */
typedef union jr__req_cb {
    jr_stream_cb admin;
    jr_stream_create_cb create;
    jr_publish_cb pub;
    jr_purge_cb purge;
    jr_msg_cb msg;
    jr_stream_info_cb info;
    jr_meta_info_cb meta;
    jr_consumer_cb consumer;
    jr_consumer_info_cb cinfo;
    jr_fetch_cb fetch;
    jr_names_cb names;
    jr_stream_page_cb spage;
    jr_consumer_page_cb cpage;
    jr_subjects_cb subjects;
    jr_deleted_cb deleted;
} jr__req_cb;

/* One request made through the public API on this node (origin side). Pooled. What a publish
 * touches comes first (the header, its buffers, callback and result, then its stream's name),
 * so that a record costs few cache lines to start and to complete. */
struct jr__req {
    jr__js *js;
    jr__req *next, *prev; /* js->reqs (outstanding) or js->free_reqs */
    uint64_t serial;      /* unique per record use (routes check it) */
    jr__jtimer timer;     /* deadline or retry */
    jr__op *op;           /* reserved completion record */
    uint8_t what;         /* enum jr__req_op */
    uint8_t kind;         /* the RPC kind it travels as */
    uint8_t state;        /* meta requests: 0 to send, 1 sent, 2 proposed, 3 applied and
                             waiting (a server removal: for the configuration) */
    uint8_t unsure;       /* meta requests: an earlier attempt may have reached the meta log */
    uint8_t done;         /* completed (callback queued) */
    uint8_t sent;         /* a leader received it at least once */
    uint8_t resend;       /* may be re-sent after an attempt timed out */
    uint8_t saw_leader;   /* a leader was known at some point */
    uint8_t idempotent;   /* a publish with a msg_id: may be re-sent after it reached a leader */
    uint8_t failovers;    /* leaders lost while this request waited for them */
    uint8_t unanswered;   /* the status being handled is the RPC layer's: no answer in time
                             (JR_ETIMEDOUT) or closing, not a responder's */
    /* a stream add: its entry created the stream (it was no identical re-add) ... */
    uint8_t created;
    /* ... which one made by jr_stream_create reports (cb is cb.create) */
    uint8_t report_created;
    uint64_t deadline;
    uint64_t span;      /* the timeout it started with: deadline is its start plus span */
    uint64_t sent_at;   /* when the outstanding attempt was sent */
    uint64_t pinged_at; /* when its silent target was last pinged (JR__ADM_PING) */
    jr__id lost;        /* the last leader given up for lost (0: none) ... */
    uint64_t lost_at;   /* ... and when: it is not asked again unless heard from since */
    uint64_t rpc_id;    /* outstanding RPC, 0 none */
    jr__id target;      /* where the last attempt went */
    unsigned tries;
    uint64_t group;  /* stream requests: the stream's group; consumer requests: the
                        consumer's (0 until jr__consumer_resolve found it) */
    jr__buf payload; /* the request's encoded payload (kept for re-sending) */
    jr__buf result;  /* the response's payload, decoded when the callback runs */
    jr__req_cb cb;
    void *arg;
    void *job; /* a list: its fan-out (api_lists.c) */
    int status;
    uint64_t seq; /* publish: seq; purge: purged */
    int duplicate;
    uint64_t resolve_until;         /* consumer requests: until when an unknown consumer is
                                       looked up again (this server's meta state may lag) */
    uint64_t fetch_until, fetch_hb; /* a fetch: when it expires (node time), its heartbeat */
    uint64_t meta_id;               /* meta requests: request id in the op; */
    uint64_t meta_index, meta_term; /* where the meta leader proposed it (state 2) */
    /* From here on only strings (jr__req_new zeroes every field before `stream` and makes each
     * of these empty). */
    char stream[JR_STREAM_NAME_MAX + 1];
    char fetch_group[JR__GROUP_NAME_MAX + 1]; /* a fetch: its priority group ... */
    char fetch_id[JR__PIN_ID_MAX + 1];        /* ... and the pin id it carries */
    char consumer[JR_CONSUMER_NAME_MAX + 1];  /* consumer requests: its name (an ephemeral's
                                                 once the meta log named it) */
    char msg[JR__JS_MSG_MAX];
};

/* A request waiting at a leader for the op it became to be applied (leader side). */
typedef struct jr__waiter {
    struct jr__waiter *next;
    jr__route route;
    uint8_t what;  /* JR__REQ_PUBLISH, JR__REQ_PURGE, JR__REQ_MSG_DELETE; a read (one of
                      jr__req_leader_read) waiting for its TICK; 0: internal op */
    uint64_t seq;  /* JR__REQ_MSG_GET: the message; JR__REQ_GET_NEXT: the first seq to look at;
                      JR__REQ_SUBJECTS: the offset; JR__REQ_DELETED: the seq to start after */
    char *subject; /* JR__REQ_GET_LAST, JR__REQ_GET_NEXT: the subject; JR__REQ_SUBJECTS: the
                      filter (owned; freed by jr__waiter_put) */
    size_t subject_len;
    uint64_t tag; /* JR__REQ_BARRIER of a consumer leader on this server (route to nobody): the
                     barrier's number, seq its consumer's group */
    size_t end;   /* staged: where its op ends in its stream's stage (jr__srep.stage) */
    uint64_t staged_at; /* ... and when it was staged (hold.c bounds the wait) */
} jr__waiter;

/* An entry a stream leader proposed, with one waiter per op (in op order). */
typedef struct jr__proposal {
    struct jr__proposal *next;
    jr__js *js;
    jr__srep *rep; /* valid while listed */
    uint64_t index, term;
    uint64_t deadline;
    jr__waiter *head, *tail;
    uint8_t listed;   /* on rep's proposal list (not yet applied or given up) */
    uint8_t resolved; /* waiters answered */
    uint8_t cb_fired; /* the node's propose callback ran: freed once also unlisted */
} jr__proposal;

typedef struct jr__catchup jr__catchup;

/* What a member said when its leader asked whether its replica is complete (JR__ADM_READY). */
typedef struct jr__memb_probe {
    jr__id id;
    uint64_t at;       /* when the answer came (now()) */
    uint64_t peers_at; /* the member's meta view of the stream's peer set (0: unknown) */
    uint64_t left;     /* sequences its catch-up still has to copy (0: none, or not told) */
    uint64_t floor;    /* entries its log trailed by when last seen trailing, until it answers a
                          question asked while its log was caught up (0: none) */
    uint8_t ready;     /* a replica whose store is complete (not restoring, not failed) */
    uint8_t log_ok;    /* asked while its log was caught up: only then does `ready` count */
} jr__memb_probe;

#define JR__MEMB_PROBES 8

/* A joining observer as the publish hold (hold.c) tracks it; id 0: a free slot. */
typedef struct jr__hold_member {
    jr__id id;
    uint32_t seen;    /* its later snapshots (jr__progress.later_snaps) when last looked at */
    uint64_t term;    /* the leader's term they were counted in (each leadership counts anew) */
    uint32_t giveups; /* holds given up on it while this leader's change lasts */
    uint8_t armed;    /* the group outran its copy: its lag holds the publishes */
    uint64_t total;   /* time held for it since it was last armed */
} jr__hold_member;

#define JR__HOLD_MEMBERS 8

/* hold.c's count rule: m's later snapshots are now later_snaps, counted by a leader in `term`.
 * 1 if that is a new one (more than m saw in the same term, or any in a term m was not seen in:
 * each leadership counts from zero); m keeps the count and term as its base either way. */
int jr__hold_note(jr__hold_member *m, uint32_t later_snaps, uint64_t term);

/* What a group leader's peer change waits on, for stream and consumer info (jr_move_info). */
typedef struct jr__move_note {
    uint8_t status; /* enum jr_move_status; 0: not known yet */
    char desc[128];
    char err[96]; /* "" none */
} jr__move_note;

/* A stream leader's work on a peer change (stream_replica.c "Peer changes"); allocated only while
 * the group's configuration differs from the assignment or the change is not yet reported. */
typedef struct jr__membwork {
    uint64_t serial;      /* the membership change or transfer in flight (0: none) */
    uint64_t rpc_id;      /* the JR__ADM_READY question in flight (0: none) */
    jr__id asked;         /* ... and whom it went to */
    uint8_t asked_log_ok; /* ... asked while that member's log was caught up */
    uint64_t reported_at; /* when STREAM_CONVERGED was last sent (0: never) */
    uint64_t woken_at;    /* when the quiet group was last woken for a member (0: never) */
    jr__memb_probe probes[JR__MEMB_PROBES];
    size_t nprobes;
    jr__move_note note; /* what the change waits on now (stream info's move status) */
    uint32_t fails;     /* membership changes that failed in a row */
    jr__ack_floor acks; /* what a voter must have acknowledged to count as live (members.h) */
    /* the publish hold (hold.c): each joining observer's state, the one the current hold is
     * for and when that hold began (0: none) */
    jr__hold_member hold[JR__HOLD_MEMBERS];
    jr__id hold_by;
    uint64_t hold_since;
} jr__membwork;

/* A pull request waiting at a consumer's leader (consumer_leader.c). */
typedef struct jr__pull {
    struct jr__pull *next, *prev; /* the leader's FIFO */
    jr__route route;
    int64_t batch;       /* messages still wanted, counting those in flight */
    int64_t max_bytes;   /* bytes still allowed (with capped) */
    uint8_t capped;      /* the request set max_bytes: at 0 left it is done */
    uint64_t expires_at; /* when it ends (408) */
    uint8_t no_wait;
    uint8_t eager; /* a push subscription's: answered once it holds what is to be had */
    char group[JR__GROUP_NAME_MAX + 1];    /* priority group ("": none) */
    char id[JR__PIN_ID_MAX + 1];           /* pinned client: the id it carries ("": none) */
    uint64_t min_pending, min_ack_pending; /* overflow conditions (0: none) */
    uint8_t priority;                      /* prioritized: 0 first */
    uint64_t hb_ns;                        /* idle heartbeat (0: none) ... */
    uint64_t hb_at; /* ... due then: answered 100 Idle Heartbeat (the requester asks again) */
    uint8_t ended;  /* its end is decided; answered once nothing is in flight */
    uint8_t listed; /* on the FIFO */
    int end_code;
    const char *end_text;
    uint32_t inflight; /* deliveries proposed for it, not yet applied or held */
    uint32_t got;      /* messages in buf */
    uint64_t bytes;    /* message bytes handed to it or in flight for it (answer_cap) */
    uint64_t barrier;  /* the read barrier it waits for: the first sent after it arrived */
    jr__buf buf;       /* the messages handed to it so far (the response's tail) */
    jr__crec *held;    /* deliveries applied before its barrier passed, handed out (or given
                          up) once it has (consumer_leader.c "Read barrier"); counted in
                          inflight */
    uint32_t nheld, capheld;
} jr__pull;

/* What one staged record of a consumer leader waits for. */
typedef struct jr__cwait {
    jr__pull *pull;  /* DELIVERED: the request it goes to (NULL: none waits) */
    uint8_t fresh;   /* a first delivery (counted in jr__clead.inflight) */
    uint64_t rsseq;  /* a redelivery, MAXDELIV or TERM of an expired message: its stream seq
                        (in jr__clead.redeliv until applied); 0 none */
    jr__route route; /* a confirmed ack: where its answer goes (to 0 and local NULL: none) */
    uint8_t confirm; /* 1: answer route once applied */
} jr__cwait;

/* An entry a consumer leader proposed, with a wait per record. */
typedef struct jr__cprop {
    struct jr__cprop *next;
    uint64_t index, term;
    uint32_t n;
    jr__cwait *w; /* n of them (this allocation) */
} jr__cprop;

/* A consumer leader's state (allocated while it leads). */
typedef struct jr__clead {
    uint64_t term;      /* the term it leads in */
    uint8_t ready;      /* applied everything of earlier terms: cursor set */
    uint64_t cursor;    /* next stream seq to look at for new deliveries */
    uint64_t next_dseq; /* consumer seq of the next delivery */
    uint64_t inflight;  /* new deliveries proposed, not applied (count toward max ack pending) */
    uint64_t active_at; /* the last sign of a client (a pull waiting or arriving, an ack) */
    uint8_t expiring;   /* inactive past its threshold: its deletion was asked for */
    uint8_t resetting;  /* a RESET is staged or proposed: nothing is delivered until it applies */
    uint64_t duty_at;   /* when its timer runs the peer-change duty next (UINT64_MAX: no need) */
    uint64_t replay_now, replay_ts; /* replay original: the anchor (node time, stored time) */
    uint64_t rate_at, rate_bytes;   /* rate_limit_bps: the bucket's last refill and its bytes */
    uint64_t sample_ts;             /* sample_freq: the delivery time of the ack applying now */
    char pin[JR__PIN_ID_MAX + 1];   /* pinned client: the pinned id ("": none) */
    uint64_t pin_at;                /* ... when a request with it was last seen */
    jr__map redeliv; /* stream seqs of expired messages whose redelivery (or MAXDELIV, TERM)
                        is staged or proposed, not applied: not chosen again meanwhile */
    jr__pull *phead, *ptail;
    size_t nwaiting;
    jr__crec *srec;   /* staged records ... */
    jr__cwait *swait; /* ... and what each waits for */
    size_t nstage, capstage;
    jr__cprop *prop_head, *prop_tail;
    /* Read barrier (consumer_leader.c): barriers are numbered 1, 2, ... in the order sent, one
     * in flight at a time. */
    uint64_t bar_sent;  /* the number of the last barrier sent */
    uint64_t bar_done;  /* the number of the last barrier answered (pulls up to it may go) */
    uint64_t bar_index; /* the stream index the answers named (their maximum) */
    uint8_t bar_out;    /* barrier bar_sent is in flight ... */
    uint64_t bar_rpc;   /* ... as this call (0: at this server's stream leader, whose
                           answer names bar_tag, a serial of js->next_serial) ... */
    uint64_t bar_tag;
    uint64_t bar_until; /* ... given up then; else when the next may be sent */
    jr__id bar_hint;    /* the stream leader a refusal named (0: none) */
} jr__clead;

/* A local replica of a consumer (consumer_replica.c). */
struct jr__crep {
    jr__js *js;
    jr__crep *next;   /* js->crep_list */
    const char *name; /* = as->cfg->c.name */
    char *stream;     /* its stream's name (owned) */
    uint64_t group;   /* the consumer's Raft group */
    uint64_t stream_group;
    uint64_t updated;    /* assignment version converged to */
    uint64_t applied;    /* last index applied to st */
    uint64_t created_ns; /* when the meta leader created it (deliver last per subject) */
    jr_group *g;
    jr__meta_casgn *as;   /* config and peers converged to (a reference) */
    jr__cstate st;        /* the replicated state */
    int failed;           /* 0, or the JR_E* code its state machine failed with (the meta
                             timer's convergence rebuilds it: jr__crep_rebuild) */
    uint64_t failed_at;   /* when it failed */
    jr__crep *sib;        /* js->cons_by_stream: the next consumer replica of the same stream */
    jr__crep *dirty_next; /* js->cdirty: its leader has work for the next flush */
    uint8_t dirty;
    jr__jtimer timer;     /* leader: pull expiry, redelivery deadlines */
    jr__clead *lead;      /* non-NULL while it leads */
    jr__cprop *cur_prop;  /* the leader's proposal the entry being applied answers */
    uint64_t reported_at; /* leader: when STREAM_CONVERGED was last sent for it (0: never) */
    uint64_t woken_at;    /* leader: when its quiet group was last woken for a peer (0: never) */
    jr__move_note note;   /* leader: what its peer change waits on (consumer info) */
};

/* What js->scratch keeps at its once-a-second release while streams build BATCH entries in it:
 * the capacity the largest batch (stream_replica.c BATCH_MAX_BYTES of ops and a few bytes)
 * grows it to, so a busy stream's batches do not free and fault in that buffer again every
 * second. */
#define JR__BATCH_SCRATCH_KEEP ((size_t)1024 * 1024)

/* A local replica of a stream (stream_replica.c). */
struct jr__srep {
    jr__js *js;
    jr__srep *next;       /* js->reps */
    jr__srep *dirty_next; /* js->dirty: staged ops wait for the next flush */
    uint8_t dirty;
    uint8_t cfg_in_log;  /* a CONFIG op was applied (or restored from a snapshot) */
    uint8_t cfg_pending; /* a CONFIG op is proposed and not yet applied */
    int failed;          /* 0, or the JR_E* code the fsm failed with locally (its timer
                            rebuilds the replica: jr__srep_store_failed) */
    uint8_t rebuilt;     /* rebuilt from its group's snapshot and log and its peers while the
                            server ran: damaged until its catch-up completed */
    uint64_t rebuild_at; /* leader with a failed fsm: when it last asked to hand over */
    uint8_t past_warned; /* logged that its store is ahead of its log (entries skipped) */
    const char *name;    /* = as->cfg->c.name */
    uint64_t group;
    uint64_t updated; /* assignment version converged to */
    jr_group *g;
    jr__stream_fsm *fsm;
    jr__meta_asgn *as;   /* the assignment's config and peers converged to (a reference to the
                            meta state's version, meta_state.h; never NULL once created) */
    jr__jtimer timer;    /* leader duties, catch-up retries */
    uint8_t led;         /* its timer saw it lead (a retention sweep starts when it begins) */
    uint8_t busy;        /* an entry was applied since its timer last found nothing due; a
                            visit with nothing due that finds it unset trims the store (idle) */
    uint64_t sweep_next; /* leader of an interest or work-queue stream: the seq its retention
                            sweep goes on from (0: none due) */
    jr__sclock clock;    /* leader: stream time of the ops it stamps (stream/clock.h) */
    uint64_t next_tick;  /* leader: when to propose the next TICK (max_age streams) */
    uint64_t synced;     /* applied index at the last store sync (mark) */
    uint64_t next_sync;  /* when the timer syncs the store next */
    /* leader: ops staged for the next flush, as BATCH body items from stage_off on, and their
     * waiters (one per op, in order; nstage of them); more than one entry's worth only while a
     * hold keeps them back (hold.c), and holding then */
    jr__buf stage;
    size_t stage_off;
    uint32_t nstage;
    uint8_t holding;
    jr__waiter *whead, *wtail;
    /* leader: proposals not yet applied, ascending index */
    jr__proposal *phead, *ptail;
    jr__catchup *cu;  /* non-NULL while restoring from a snapshot */
    jr__membwork *mw; /* leader: a peer change in progress (NULL: none) */
    /* as a catch-up source: the snapshot taken with the last chunk of a round, kept for the
     * requester to fetch in pieces (catchup.c) */
    uint8_t *served;
    size_t served_len;
    uint64_t served_index;
};

/* A meta op carrying a request id that this server applied (meta_replica.c "Re-sent
 * requests"). */
typedef struct jr__applied_req {
    uint64_t id;          /* the request id (0: a free slot) */
    uint64_t origin;      /* jr__xxh3 of the origin's name */
    uint64_t index, term; /* the entry that carried it */
} jr__applied_req;

/* How many of them a server remembers (the newest; 4 KiB): a re-sent request arrives within a
 * few election timeouts of its first attempt. */
#define JR__APPLIED_REQS 128

struct jr__js {
    jr_node *n;
    /* the node's facts (services.h; constant from open on) */
    const jr_allocator *alloc;
    const char *name; /* this server's name */
    jr__id self;      /* and its id */
    uint64_t election_ns, heartbeat_ns;
    jr__node_facts facts; /* all of them: limits, vfs, seed, the host's wall clock */
    char *cluster;
    char **tags;
    size_t ntags;
    char *unique_tag;
    char *store_dir;
    uint64_t capacity;
    uint32_t max_assets;
    uint64_t timeout_ns;    /* request_timeout_ms */
    uint64_t leaderless_ns; /* leaderless_fail_ms; 0: requests wait until their deadline */
    jr__jqueue
        queues[JR__JQUEUES];   /* deadline queues of request timers (jr__js_timer_arm_queued) */
    uint64_t snapshot_entries; /* of stream groups (a knob for tests; default 4096) */
    jr__rand rand;
    uint8_t closing;
    /* meta_replica.c */
    jr_group *meta;
    jr__meta_state st;
    jr__map meta_reqs; /* request id -> jr__req waiting for its meta op to apply */
    uint8_t meta_failed;
    uint8_t converge_failed; /* a replica could not be created: converge again later */
    uint8_t converge_queued; /* a full convergence waits in the node's effects queue */
    uint8_t meta_replayed;   /* the meta state has applied meta_recovered (jr__mnode_replayed) */
    uint64_t meta_recovered; /* the meta log's last index recovered at open */
    uint8_t meta_caught_up;  /* the meta state has held everything committed before this life
                                began (jr__mnode_caught_up) and the replicas held until then
                                were released */
    jr__jtimer meta_timer;
    uint64_t info_sent;                             /* when SERVER_INFO was last sent (0: never) */
    jr__applied_req applied_reqs[JR__APPLIED_REQS]; /* a ring: the newest replace the oldest */
    size_t applied_next;                            /* the slot the next one takes */
    /* stream_replica.c */
    jr__map reps; /* group id -> jr__srep */
    jr__srep *rep_list;
    jr__srep *dirty;
    jr__map hints; /* group id -> leader hint (jr__peer *) for groups not held here */
    /* consumer_replica.c */
    jr__map creps; /* group id -> jr__crep */
    jr__crep *crep_list;
    jr__map cons_by_stream; /* stream group id -> first jr__crep of it (linked by sib) */
    jr_advisory_cb adv_cb;  /* jr_consumer_advisories */
    void *adv_arg;
    struct jr__adv *adv_head, *adv_tail; /* advisories waiting for the effect that reports them */
    jr__crep *cdirty;                    /* consumer leaders with work for the next flush */
    jr__waiter *free_waiters;
    /* js.c */
    jr__req *reqs; /* outstanding requests (doubly linked) */
    jr__req *free_reqs;
    uint64_t next_serial;
    uint64_t next_token; /* a publish's request token (stream/op.h), last one given */
    jr__buf scratch;
    jr__buf scratch2;
    uint64_t scratch_at; /* when scratch and scratch2 give back what they grew to next */
    uint8_t batched;     /* a stream's BATCH entry was built in scratch since then */
    /* counters (tests, observability) */
    uint64_t not_leader_resends;  /* stream requests sent again after JR_ENOTLEADER */
    uint64_t catchup_chunks;      /* chunks received by catching-up replicas */
    uint64_t catchup_bytes;       /* their uncompressed bytes */
    uint64_t catchup_drained;     /* entry bytes applied from catch-up queues */
    uint64_t catchup_drain_turns; /* batches that applied them (catchup.c drain) */
    uint64_t catchup_drain_over;  /* most bytes a batch applied past its budget (one entry's) */
    uint64_t catchup_later;       /* snapshots installed while restoring, restored after the
                                     entries queued before them (catchup.c restore_later) */
    uint64_t catchup_dropped;     /* queued entry bytes a later snapshot made go (its kept
                                     ones were LATER_MAX already): their messages are fetched
                                     again (catchup.c jr__catchup_later) */
    uint64_t catchup_taken;       /* entry bytes in a restoring replica's log (waiting there,
                                     or queued and left there) copied into its queue before a
                                     later snapshot replaced that log (catchup.c take_waiting,
                                     copy_from_log) */
    uint64_t catchup_in_log;      /* queued entry bytes a restoring replica applied from its
                                     group's log, never copied (catchup.c "Queue") */
    uint64_t snap_restores;       /* group snapshots handed to this node's stream replicas
                                     (stream_replica.c rep_restore: installed from a leader,
                                     or loaded at open) */
    uint64_t catchup_served;      /* uncompressed chunk bytes this node served as a source */
    uint64_t catchup_paced;       /* catch-up steps followed by a pause (the group was busy) */
    uint64_t catchup_paused_ns;   /* the pauses' total length */
    uint64_t catchup_queue_max;   /* entry bytes a catch-up queue may hold copied before its
                                     group's log cap shrinks by the excess (catchup.c "Queue",
                                     cap_log; jr_node_config's catchup_queue_bytes) */
    uint64_t catchup_log_max;     /* the Raft log of an observer copying its messages holds
                                     at most this many entry bytes (plus one entry): its group's
                                     log is capped meanwhile (catchup.c "Log";
                                     jr_node_config's catchup_log_bytes) */
    uint64_t catchup_queue_peak;  /* most entry bytes a catch-up queue held copied at once */
    uint64_t catchup_holds;       /* times a stream leader held its publishes back for a
                                     joining peer's copy (hold.c), their total length, and the
                                     times holds gave up on a copy; the later snapshots
                                     that armed holds for a joiner */
    uint64_t catchup_held_ns;
    uint64_t catchup_hold_giveups;
    uint64_t catchup_hold_arms;
    uint64_t keep_bytes;       /* jr_node_config.keep_bytes (hold.c) */
    uint64_t catchup_log_peak; /* most entry bytes a capped group's log held at once, as of
                                  the end of its catch-up (raft.h jr__raft_capped_peak) */
    /* meta_members.c: servers joining and leaving */
    uint8_t join;         /* jr_node_config.join: this server asks to be let in */
    uint8_t removed;      /* this server was removed from the cluster: it takes no part */
    uint8_t leaving;      /* removed, handing the leadership of its groups over before it
                             stops (jr__mm_leave) */
    uint8_t mark_pending; /* removed servers the peer table does not refuse yet: they are
                             still in the meta group's configuration (jr__mm_sync_peers) */
    uint64_t leave_until; /* leaving: it stops then at the latest */
    size_t mm_nremoved;   /* removed servers of the meta state last seen ... */
    uint64_t mm_grace;    /* ... and until when the newest, if heard from, keeps its place in
                             the meta configuration (its handovers need it, jr__mm_leave) */
    uint64_t join_next;   /* joining: when the next join request goes out */
    size_t join_seed;     /* joining: the seed asked next (round robin) */
    uint64_t join_rpc;    /* joining: the request in flight (0: none) */
    uint64_t mm_serial;   /* meta leader: the membership change in flight (0: none) */
    uint64_t mm_proposed; /* meta leader: index of the last SERVER_JOIN/REMOVE it proposed */
    /* meta leader: what a voter must have acknowledged to count as live (members.h), sampled
     * at each visit of its duty */
    jr__ack_floor mm_acks;
    /* meta_drain.c: the meta leader's moves off leaving servers */
    uint8_t drain_dirty; /* look at every stream at the next tick */
    uint64_t drain_next; /* also look then (something could not be placed; 0: no) */
    uint64_t drain_wait; /* index of this leader's last PEER_MOVE: no pass before it applied */
    uint64_t drain_term; /* the meta term drain_wait belongs to */
    uint64_t drain_from; /* no pass before (a new leadership's view of liveness settles) */
    struct jr__mm_join { /* member: joins forwarded to the meta leader for strangers */
        jr__js *js;
        char name[256];
        uint64_t rpc_id; /* the joiner's request to answer */
        uint8_t used;
        jr__req *req;
    } mm_joins[4];
};

/* A local route to request r. */
static inline jr__route jr__route_local(jr__req *r)
{
    jr__route rt = {r, 0, r->serial};
    return rt;
}

/* js.c --------------------------------------------------------------------------------------*/

/* Opens the stream layer for node n with its config (after WAL recovery): creates the meta
 * group, converges to what its recovered state holds, and registers the layer's hooks with the
 * node (services.h "The seam"). 0, JR_EINVAL (bad config), JR_ENOMEM or a group/store error. */
int jr__js_open(jr_node *n, const jr_node_config *cfg);
/* The layer on node n (NULL: streams are not enabled there, or it closes). */
jr__js *jr__js_of(const jr_node *n);
/* The hooks the node calls (registered by jr__js_open; services.h "The seam"):
 *  - close: fails every outstanding request with JR_ECLOSED (callbacks run before it returns),
 *    closes the replicas' stores (flush = 0: abandons them, as a crash would) and frees the
 *    layer. Called after the node detached its groups and drained its completions;
 *  - before_flush: proposes what leaders staged during this call;
 *  - request: another server's request, dispatched by kind;
 *  - role_changed: jr__srep_role_changed. */
void jr__js_close(jr__js *js, int flush);
void jr__js_before_flush(jr__js *js);
void jr__js_request(jr__js *js, jr__id from, uint64_t id, uint8_t kind, const uint8_t *p,
                    size_t len);

/* Timers. */
void jr__js_timer_init(jr__jtimer *t, void (*fire)(jr__js *, jr__jtimer *));
/* Arms t at deadline (re-keys it). On JR_ENOMEM the node ticks again at once and t fires then. */
void jr__js_timer_arm(jr__js *js, jr__jtimer *t, uint64_t deadline);
/* Arms t at deadline, which is some earlier now() plus span: on span's deadline queue (no heap
 * operation) when deadline is not before the queue's last one, else on the heap as
 * jr__js_timer_arm does (a fifth span while four queues hold timers, or an arm out of order).
 * t fires as a heap timer would: once due, after the due timers armed before it at its
 * deadline. */
void jr__js_timer_arm_queued(jr__js *js, jr__jtimer *t, uint64_t deadline, uint64_t span);
/* Disarms t, from the heap or its queue; a no-op if not armed. */
void jr__js_timer_cancel(jr__js *js, jr__jtimer *t);
/* 1 if t is armed (on the heap or a queue). */
int jr__js_timer_armed(const jr__jtimer *t);

/* Requests. jr__req_new returns a fresh record (reserved completion, not yet outstanding) or
 * NULL (JR_ENOMEM). jr__req_start puts it on the outstanding list with its deadline. */
jr__req *jr__req_new(jr__js *js, uint8_t what);
void jr__req_start(jr__req *r, uint64_t timeout_ns);
/* Completes r once (later calls are ignored): its callback runs at the next drain with status
 * and the formatted message (fmt may be NULL: keep r->msg). */
void jr__req_finish(jr__req *r, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Drops a record that was never started (its callback never runs). */
void jr__req_discard(jr__req *r);

/* Leader waiters (pooled). */
jr__waiter *jr__waiter_get(jr__js *js);
void jr__waiter_put(jr__js *js, jr__waiter *w);

/* Sends the result of a request executed here along its route: over RPC, or straight to the
 * local request (which decodes it as it would a response). */
void jr__route_reply(jr__js *js, const jr__route *rt, int status, const void *payload, size_t len);

/* Server name of peer id (NULL if unknown). */
const char *jr__js_peer_name(const jr__js *js, jr__id id);
/* 1 if a request for group g (this server's replica of it; NULL: none) ends at once rather than
 * wait for a leader (jr_node_config.leaderless_fail_ms): that replica has known no leader for
 * js->leaderless_ns since it lost its last one, or for four election timeouts more if it has
 * known none since it opened. */
int jr__js_leaderless(const jr__js *js, jr_group *g);

/* The host's wall clock now (ns since the Unix epoch): jr_host.wall if the host has one (a
 * version-2 host that set it), else the node's monotonic now() (jetraft.h documents the
 * fallback). Read on each call: a wall clock may jump between two calls of one entry point. */
uint64_t jr__js_wall(const jr__js *js);

/* meta_replica.c -------------------------------------------------------------------------------*/

int jr__mnode_open(jr__js *js);
void jr__mnode_close(jr__js *js);
/* The meta leader's name as this server knows it (NULL: none); 1 in *self if it is us. */
const char *jr__mnode_leader(jr__js *js, int *self);
/* Files r as a meta request: a fresh request id (never 0, unused among the outstanding ones)
 * stamped on op, op encoded into r's payload, r found by that id when the answer comes. 0, or
 * the encoder's error (JR_EINVAL for an op it refuses) or JR_ENOMEM with r not filed and its id
 * 0: the caller then finishes or discards r. */
int jr__mnode_file(jr__js *js, jr__req *r, jr__meta_op *op);
/* Sends (or re-sends) a meta request r (state 0) towards the meta leader. */
void jr__mnode_send(jr__req *r);
/* The answer of the meta leader to meta request r (status 0: proposed). */
void jr__mnode_on_reply(jr__req *r, int status, const uint8_t *p, size_t len);
/* Meta request r's timer fired. */
void jr__mnode_timer(jr__req *r);
/* The meta leader's handler of JR__RPC_META. */
void jr__mnode_handle(jr__js *js, const jr__route *rt, const uint8_t *p, size_t len);
/* The meta leader's handler of JR__RPC_CLUSTER_INFO (and its local use). */
void jr__mnode_cluster_info(jr__js *js, const jr__route *rt);
/* 1 if server `name` is online as far as this server can tell (the meta leader's view when it
 * leads: heard from within two election timeouts). */
int jr__mnode_online(jr__js *js, const char *name, uint64_t *seen_ns);
/* Converges local replicas to the meta state (after it changed). A replica whose assignment no
 * longer names this server is removed only once the stream's peer change converged (or the
 * stream is gone): until then it may still be a voter its group needs (meta_state.h "Peer
 * changes"); meanwhile it follows the new assignment. 0 once it acted on the whole plan (a
 * replica it could not create is retried later: converge_failed), JR_ENOMEM if it could not
 * make one, JR_ECLOSED if the meta replica is closing, failed or removed. */
int jr__mnode_converge(jr__js *js);
/* As jr__mnode_converge for the one stream whose Raft group is `group` (an applied op changed
 * that stream only; it may be gone): creates, updates or removes this server's replica of it,
 * with the same rules. A failure sets converge_failed (the meta timer converges everything
 * again); a failure remembered from before is left for that full converge. */
void jr__mnode_converge_one(jr__js *js, uint64_t group);
/* 1 once the meta state has applied everything its log held when this server opened: before
 * that, converging replays history (a state in which this server was not yet a stream's peer,
 * say), so nothing is released for a peer removal until then (a stream deletion is final and
 * is released at once). */
int jr__mnode_replayed(jr__js *js);
/* 1 if the meta entry at `index` is known to have committed after this server's life began:
 * the meta replica is whole and `index` lies above its last index when it was vouched for
 * (jr__raft_vouched_last; 0 on a server's first life, whose meta replica never was unvouched).
 * A group whose peer set this server entered there cannot have had it as a member before this
 * life, so its replica opens whole even though nothing of it was recovered (jr__group_create's
 * fresh). */
int jr__mnode_after_restart(jr__js *js, uint64_t index);
/* 1 once the meta state holds every meta entry committed before this life began (the meta
 * replica is whole and has applied up to its last index when it was vouched for) and the local
 * replicas converged to it. Until then a stream or consumer replica may be one of a group
 * deleted (or left by this server) in entries this server's storage lost — a replica of a
 * group that no longer exists, whose other members released their replicas and answer its
 * VOUCH that they hold nothing — so the replicas created meanwhile have their votes held
 * (jr__group_hold) until the meta timer finds it caught up, converges to it and releases them. */
int jr__mnode_caught_up(jr__js *js);
/* 1 if this server's meta state is as new as it can know right now: the meta replica has not
 * failed, a meta leader is known, and everything known committed is applied. */
int jr__mnode_current(jr__js *js);
/* Sends STREAM_CONVERGED for consumer c (its group's configuration is c's peer set, every peer a
 * voter) to the meta leader, as an internal request. */
void jr__mnode_report_consumer_converged(jr__js *js, const jr__meta_consumer *c,
                                         const jr__join_floor *f);
/* Asks the meta leader to delete consumer `name` of `stream` (its leader found it inactive past
 * its inactive_threshold), as an internal request. */
void jr__mnode_expire_consumer(jr__js *js, const char *stream, const char *name);
/* Sends STREAM_CONVERGED for s (its group's committed configuration is s's peer set, every
 * peer a voter) to the meta leader, as an internal request retried until its deadline. */
void jr__mnode_report_converged(jr__js *js, const jr__meta_stream *s, const jr__join_floor *f);
/* Sends op (request id and origin filled in here) to the meta leader as an internal request of
 * kind `what` (no user callback unless the caller sets r->cb.admin): the request, or NULL
 * without memory. */
jr__req *jr__mnode_send_internal(jr__js *js, uint8_t what, jr__meta_op *op);
/* Replies to a meta request: proposed at (index, term). */
void jr__mnode_reply_proposed(jr__js *js, const jr__route *rt, uint64_t index, uint64_t term);

/* meta_members.c — servers joining and leaving the cluster ------------------------------------
 *
 * Joining: a server opened with jr_node_config.join and no meta group on disk opens the meta
 * group empty, as a joiner, and asks its seeds in turn (JR__RPC_JOIN, every election timeout)
 * to let it in until the meta group's configuration names it. A member takes such a request
 * even from a server it does not know (node/peer.c "Membership": bounded, rate-limited),
 * forwards it to the meta leader as a SERVER_JOIN (at most JR__MM_JOINS at once), and answers
 * with the outcome and the names of the cluster's servers, which the joiner adds to its peer
 * table. The meta leader proposes the SERVER_JOIN (one membership change at a time: JR_EBUSY
 * while one is in progress; the cap JR_STREAMS_MAX_SERVERS), and its membership duty adds every
 * server of the meta state that is not in the meta group's configuration as an observer,
 * promotes it once it holds the log, and removes the removed ones — one single-server change
 * at a time (lib/meta/members.h), so a failover of the meta leader resumes.
 * Every server's peer table follows the meta state (jr__mm_sync_peers, after each server op
 * applied and each restore), so it is recovered from the meta group's log and snapshots.
 *
 * Removing (jr_server_peer_remove): the meta leader refuses an unknown or already removed
 * server (JR_ENOTMEMBER), the last server (JR_EINVAL), a removal that would leave fewer online
 * voters than a majority of the meta group (JR_ENOQUORUM) and one while a membership change is
 * in progress (JR_EBUSY); otherwise it re-places each stream replica of the server (placement
 * rules, the server avoided; a stream whose only replica it holds, or that is mid-change, is
 * not, nor one with another peer not heard from lately: the drain re-places those) and
 * proposes SERVER_REMOVE. A server that applies its own removal leaves first (jr__mm_leave:
 * no request served, its leaderships handed over, a voter of its groups until they converged
 * without it) and then stops; one told by a member that refused its frame (JR__RPC_REMOVED)
 * stops at once (jr__mm_stop): an error in its log, every request failing with JR_EREMOVED,
 * its node taking no further part. */
#define JR__MM_JOINS 4
/* A removed server leaves within this many election timeouts (jr__mm_leave). */
#define JR__MM_LEAVE_ELECTIONS 20
/* After an applied op (or a restore): the peer table learns every server of the meta state and
 * marks the removed ones; this server stops if it is among them. */
void jr__mm_sync_peers(jr__js *js);
/* At open: the servers joining in entries of the meta log not applied yet (a restart applies
 * only what its recovered commit index covers) go into the peer table too, since the log's
 * configurations may already name them. Such a name comes from an entry that may never commit:
 * it is only a server the table can talk to. */
void jr__mm_learn_pending(jr__js *js);
/* The meta timer's part: the joiner's requests, the meta leader's membership duty. */
void jr__mm_tick(jr__js *js);
/* At the meta leader: a SERVER_JOIN or SERVER_REMOVE request (decoded op; p, len its bytes). */
void jr__mm_handle(jr__js *js, const jr__route *rt, const jr__meta_op *op, const uint8_t *p,
                   size_t len);
/* A join request from `from` (the node's join hook, or JR__RPC_JOIN from a known server). */
void jr__mm_join_request(jr__js *js, const char *from, uint64_t rpc_id, const uint8_t *p,
                         size_t len);
/* JR__RPC_REMOVED from a member: payload = this server's name. */
void jr__mm_removed_request(jr__js *js, jr__id from, uint64_t rpc_id, const uint8_t *p, size_t len);
/* Stops this server for good: it was removed from the cluster (why: how it learned it). */
void jr__mm_stop(jr__js *js, const char *why);
/* This server applied its own removal: it serves no request from then on (JR_EREMOVED), hands
 * the leadership of every group it leads (the meta group, stream and consumer replicas) to a
 * caught-up voter, so none of them waits an election timeout for a leader, and stays a voter
 * of each group re-placed without it until that group removed it (an R2 group needs it until
 * its replacement votes); then it stops (jr__mm_stop), or after JR__MM_LEAVE_ELECTIONS
 * election timeouts. Its peers accept its frames meanwhile: the meta leader keeps a removed
 * server that is heard from in the meta configuration for as long, and peers refuse a removed
 * server only once their meta configuration no longer lists it (jr__mm_sync_peers). */
void jr__mm_leave(jr__js *js);
/* Opening the meta group: 1 if this server must join it (no meta group on disk, join mode). */
int jr__mm_joining(jr__js *js);

/* stream_replica.c -----------------------------------------------------------------------------*/

/* Creates (or joins) the local replica of assignment s: a stream whose peer set never changed
 * bootstraps its group with those peers as voters; otherwise the group exists and this server
 * joins it empty (jr_group_open's join mode), waiting for the leader to add it. 0, JR_EBUSY
 * (the group was destroyed and its WAL DROP waits for memory: try again later), or an error
 * (logged). */
int jr__srep_create(jr__js *js, const jr__meta_stream *s);
/* What the origin-peer rule reads of a stream or consumer assignment. */
typedef struct jr__origin_facts {
    const char *const *origin; /* the peer set at the first change (NULL: none recorded) */
    size_t norigin;
    uint64_t created, converged_at; /* meta indexes of its creation and last convergence */
    int busy;                       /* a peer change has not converged */
    int has_peer;                   /* the current peer set names this server */
} jr__origin_facts;
/* 1 if this server is an original peer that the first, unconverged peer change since the
 * creation drops: it runs a replica bootstrapped with the creation's peers until the change
 * converged (stream_replica.c, the rule's argument). */
int jr__js_origin_peer(const jr__js *js, const jr__origin_facts *f);
/* 1 if the origin-peer rule must not bootstrap this server's replica of `group` (a stream or
 * consumer created at meta index `created`, its creation's peer set of `norigin` servers), which
 * then joins: that set is this server alone, its WAL was lost before this life, nothing of the
 * group was recovered, and the group was created before this life (stream_replica.c, the
 * argument). */
int jr__js_origin_lost(jr__js *js, size_t norigin, uint64_t created, uint64_t group);
/* jr__js_origin_peer for stream s. */
int jr__srep_origin_peer(const jr__js *js, const jr__meta_stream *s);
/* Creates the replicas jr__srep_origin_peer and jr__crep_origin_peer say this server runs and
 * does not: for every stream and its consumers (jr__srep_sweep_origins), or for stream s and
 * its consumers (jr__srep_sweep_origin). 0, JR_EBUSY or JR_ENOMEM (the convergence comes back). */
int jr__srep_sweep_origins(jr__js *js);
int jr__srep_sweep_origin(jr__js *js, const jr__meta_stream *s);
/* The assignment changed: take its config and peers. */
void jr__srep_update(jr__srep *r, const jr__meta_stream *s);
/* Removes the local replica; with purge = 1 (the stream was deleted, or this server left it)
 * its messages and snapshots are deleted too, and its Raft group is released at once (the node
 * core's jr__node_group_destroy: freed, and dropped from the WAL), so that neither its raft
 * core nor the WAL's record of it outlives the stream. Not from inside an apply or the
 * role_changed hook (the core refuses it there; queue an effect: services.h "Effects"). */
void jr__srep_leave(jr__srep *r, int purge);
/* Recovered stashes of stream groups this server no longer runs a replica of:
 *  - the stream no longer exists in the meta state (id below its next_group, no assignment:
 *    deleted while this server was down, learnt from a meta snapshot): released like removed
 *    replicas;
 *  - the stream exists but its assignment no longer names this server (removed by a peer
 *    change while it was down): if that change has not converged, the replica is reopened
 *    from its stash (it may still be a voter the group needs; it leaves once the change
 *    converged); if it has, the stash, snapshots and store are released;
 *  - a consumer's group whose assignment no longer names this server: the same, the replica
 *    reopened once its stream's replica runs (JR_EBUSY until then: converge again later).
 * A consumer's stash that names this server waits for converge to create its replica.
 * Returns JR_ENOMEM or JR_EBUSY if it could not finish (converge again later), else 0. */
int jr__srep_sweep_stashes(jr__js *js);
/* Frees every replica (node close). */
void jr__srep_close_all(jr__js *js, int flush);
jr__srep *jr__srep_find(jr__js *js, uint64_t group);
/* 1 if this replica leads its group (and can serve requests). */
int jr__srep_is_leader(const jr__srep *r);
/* Stages an op (a complete jr__op_encode entry, whose timestamp is overwritten with stream
 * time, stream/clock.h) with its waiter for the next flush. 0, JR_ENOMEM, JR_EMSGSIZE. */
int jr__srep_stage(jr__srep *r, const uint8_t *entry, size_t len, const jr__route *rt,
                   uint8_t what);
/* Stages an internal op (nobody waits for its result). 0, JR_ENOMEM, JR_EMSGSIZE. */
int jr__srep_stage_internal(jr__srep *r, const jr__stream_op *op);
/* Answers every staged waiter with status (not proposed: the requester may retry). */
void jr__srep_fail_staged(jr__srep *r, int status);
/* Proposes the staged ops of every dirty replica. */
void jr__srep_flush_all(jr__js *js);
/* Writes a store mark at the applied index if anything was applied since the last one. */
void jr__srep_sync(jr__srep *r);
/* The replica's store failed a read with rc (JR_ECORRUPT: a block that does not verify) or
 * its state machine failed: it applies nothing more and its timer rebuilds it from its peers
 * (stream_replica.c "Rebuilding"). Logs once. */
void jr__srep_store_failed(jr__srep *r, int rc, const char *what);
/* 0 if the replica is whole, else why not (its failure code, or JR_EDAMAGED while a rebuilt
 * replica still fetches its messages): what health reports as damaged. */
int jr__srep_damage(const jr__srep *r);
/* Tells the node the replica's state machine as jr__srep_damage sees it — failed, rebuilding
 * (a rebuilt replica fetching its messages) or whole — for the group's leader
 * (jr__group_set_fsm_state). Called where it may change: the replica's timer (which a failure
 * makes due at once), a rebuild, a catch-up's start and end. */
void jr__srep_fsm_report(jr__srep *r);
/* Applies an entry (live, or replayed after a catch-up), resolving the proposal it answers. */
void jr__srep_apply_entry(jr__srep *r, uint64_t index, uint64_t term, const void *data, size_t len);
/* The node saw the role of group `group` change (it became leader, or stopped being one: the
 * role_changed hook, services.h): if it is a local stream replica, its timer runs its duties now
 * (a replica's timer is armed only while a duty is due). Any other group: nothing. */
void jr__srep_role_changed(jr__js *js, uint64_t group);
/* A duty of r is due at `when`: pulls its timer in if it would fire later (or is not armed). */
void jr__srep_due(jr__srep *r, uint64_t when);
/* Stages a TICK op (expiry by max_age; any entry also wakes a quiet group). */
void jr__srep_stage_tick(jr__srep *r);
/* Stages a read (what: JR__REQ_INFO, JR__REQ_MSG_GET with seq, JR__REQ_GET_LAST with subject,
 * JR__REQ_GET_NEXT with both,
 * JR__REQ_BARRIER with seq and tag as jr__waiter says) as a TICK op whose waiter executes it when
 * that op is applied (jr__stream_exec_read; a barrier answers the op's index): a read at the
 * leader is served at a point of the committed log this leader reached in its term, so a server
 * that may have been deposed never answers as leader (linearizable; it costs the commit round of
 * the flush it joins). 0, JR_ENOMEM, JR_EMSGSIZE. */
int jr__srep_stage_read(jr__srep *r, const jr__route *rt, uint8_t what, uint64_t seq,
                        const char *subject, size_t subject_len, uint64_t tag);

/* consumer_replica.c ---------------------------------------------------------------------------*/

/* Creates the local replica of consumer c (bootstrapped or joined: boot_peers). 0, JR_EBUSY
 * (its group's WAL DROP waits: try again later) or an error (logged). */
int jr__crep_create(jr__js *js, const jr__meta_consumer *c);
/* jr__js_origin_peer for consumer c. */
int jr__crep_origin_peer(const jr__js *js, const jr__meta_consumer *c);
/* The assignment changed: take its config. */
void jr__crep_update(jr__crep *r, const jr__meta_consumer *c);
/* Removes the local replica; purge = 1 also releases its group (freed, dropped from the WAL).
 * Not from inside an apply (services.h "Effects"). */
void jr__crep_leave(jr__crep *r, int purge);
/* The replica's state machine failed with rc (an entry it could not apply or decode, a snapshot
 * that did not restore, a config it could not take) at index (0: none): it applies nothing more,
 * its group's leader is told (jr__group_set_fsm_state), and the meta timer's convergence rebuilds
 * it (jr__crep_rebuild). Logs once. */
void jr__crep_failed(jr__crep *r, int rc, const char *what, uint64_t index);
/* A replica whose state machine failed (r->failed) an election timeout ago or more is closed and
 * created again: its group, reopened, restores its newest snapshot and re-applies its log (or a
 * leader sends them), so a failure that was not in the committed log itself (memory, a snapshot
 * that did not restore) is repaired. 0 once rebuilt (r is freed), JR_EBUSY (not yet), or an
 * error (r stays, failed). */
int jr__crep_rebuild(jr__crep *r);
/* Frees every replica (node close; the node owns the groups). */
void jr__crep_close_all(jr__js *js);
jr__crep *jr__crep_find(jr__js *js, uint64_t group);
int jr__crep_is_leader(const jr__crep *r);
/* The leader of consumer group `group` as this server knows it (NULL: none known). */
jr__peer *jr__crep_leader_peer(jr__js *js, uint64_t group);
/* Messages of r's stream at or after stream seq `from` that match r's filters (0 without a
 * local stream replica), from the store's subject index. */
uint64_t jr__crep_num_pending(jr__crep *r, uint64_t from);
/* r's group name as JetStream shows it ("C-R3F-<hash>"). */
void jr__crep_group_name(const jr__crep *r, char *buf, size_t cap);

/* consumer_peers.c ---------------------------------------------------------------------------*/

/* The leader's step towards its consumer's peer set (one membership change at a time, then
 * STREAM_CONVERGED for its group); *next is pulled in while work is left. */
void jr__crep_members_duty(jr__crep *r, uint64_t *next);
/* 1 if consumer c's peer change cannot progress now as this server sees it: a majority of the
 * voters its group had when the change began is offline, so the group has no leader to drive
 * it. Its stream's own peer change does not wait for it (stream_peers.c); *who names one of the
 * offline voters. */
int jr__crep_change_stalled(jr__js *js, const jr__meta_consumer *c, const char **who);

/* consumer_leader.c ----------------------------------------------------------------------------*/

/* What a consumer's leader does. The records of an applied entry go through
 * jr__clead_applied (every replica calls it; only a leader acts). */
void jr__clead_entry_start(jr__crep *r, uint64_t index, uint64_t term);
void jr__clead_applied(jr__crep *r, const jr__crec *rec, const jr__capply *out, uint32_t i);
void jr__clead_entry_end(jr__crep *r);
/* The role of r's group may have changed: start or stop leading. */
void jr__clead_role_changed(jr__crep *r);
/* Stops leading: every waiting request is answered with status (a pull: 409 Leadership Change
 * or Consumer Deleted), staged and proposed work dropped. */
void jr__clead_stop(jr__crep *r, int status);
/* Marks r for the next flush (its leader has records to stage or propose). */
void jr__clead_dirty(jr__crep *r);
/* Runs every dirty leader's delivery step and proposes what it staged (before each flush). */
void jr__clead_flush_all(jr__js *js);
/* The stream of group `stream_group` applied entries: its consumers' leaders look for work. */
void jr__clead_stream_changed(jr__js *js, uint64_t stream_group);
/* r's timer. */
void jr__clead_timer(jr__js *js, jr__jtimer *t);
/* Queues an advisory of r (reported from an effect, after the flush). */
void jr__clead_advise(jr__crep *r, int kind, uint64_t sseq, uint64_t dseq, uint32_t dc,
                      uint64_t latency_ns);
/* The same for a pin (JR_ADVISORY_PINNED with the id, _UNPINNED with the reason). */
void jr__clead_advise_pin(jr__crep *r, int kind, const char *group, const char *what);
/* An ACK record for sseq is about to apply on r: with sample_freq, the leader keeps the pending
 * delivery's time to report the ack's latency once it applied (jr__clead_applied). */
void jr__clead_before_ack(jr__crep *r, const jr__crec *rec);
/* Frees advisories not reported yet (close). */
void jr__clead_advisories_free(jr__js *js);
/* The read barrier `num` of consumer group `cgroup`'s leader on this server was committed at
 * stream index `index` (its TICK applied at this server's stream leader). */
void jr__clead_barrier_local(jr__js *js, uint64_t cgroup, uint64_t num, uint64_t index);
/* Executes a consumer request (JR__RPC_CONSUMER) that arrived at this server. */
void jr__consumer_exec(jr__js *js, const jr__route *rt, const uint8_t *p, size_t len);

/* retention.c -------------------------------------------------------------------------------*/

/* 1 if interest stream s has no consumer whose filters match subject (a publish to it is
 * logged NO_INTEREST: acknowledged, not stored). */
int jr__retention_no_interest(jr__js *js, const jr__meta_stream *s, const char *subject,
                              size_t len);
/* A replica of a consumer of stream `stream_group` applied acknowledgements of [from, to]: if
 * this server leads that interest or work-queue stream, the messages of the range no consumer
 * needs any more are removed through its log (REMOVE ops). */
void jr__retention_acked(jr__js *js, uint64_t stream_group, uint64_t from, uint64_t to);
/* The leader's sweep of r's stream from seq `from`: checks up to max live messages, stages the
 * removal of those no consumer needs; returns the seq to go on from, 0 when done. */
uint64_t jr__retention_sweep(jr__srep *r, uint64_t from, size_t max);
/* Something changed which consumers need what (a consumer deleted or its filter updated): the
 * leader of stream `stream_group`, if it is this server, sweeps it again. */
void jr__retention_recheck(jr__js *js, uint64_t stream_group);

/* stream_peers.c ----------------------------------------------------------------------------*/

/* The leader's step towards s's peer set (r leads, r->updated == s->updated, no catch-up):
 * one single-server change at a time, or STREAM_CONVERGED once the committed configuration is
 * s's peer set; *next is pulled in (to a heartbeat from now) while work is left. */
void jr__srep_members_duty(jr__srep *r, const jr__meta_stream *s, uint64_t *next);
/* Drops r's peer-change work (r->mw) and its question in flight; NULL mw is a no-op. */
void jr__srep_memb_free(jr__srep *r);

/* hold.c ------------------------------------------------------------------------------------*/

/* Leader r, about to propose its staged ops: how many bytes of them it may propose now —
 * UINT64_MAX when nothing holds them, else what keeps a joining peer whose copy the group
 * outran within half of keep_bytes of the log (0: they all wait; hold.c says when exactly). */
uint64_t jr__srep_admit(jr__srep *r);
/* Ends r's hold, if any, before its peer-change work goes. */
void jr__srep_hold_free(jr__srep *r);
/* 1 if the publishes of w's group are paced to member id's copy (the group outran it). */
int jr__srep_hold_armed(const jr__membwork *w, jr__id id);
/* A joining observer whose copy the publishes are paced to, 0 if none. */
jr__id jr__srep_hold_any(const jr__membwork *w);
/* One member of a stream's group as its leader sees it (jr__srep_health). */
typedef struct jr__peer_health {
    const char *name; /* borrowed from the group */
    uint8_t alive;    /* the group and the node heard from it within an election timeout */
    uint64_t lag;     /* entries it trails the leader's log */
} jr__peer_health;
/* The leader replica r's view of the members of its configuration, at most max of them into
 * h (itself alive with lag 0). Returns how many; 0 if r does not lead. */
size_t jr__srep_health(jr__srep *r, jr__peer_health *h, size_t max);

/* stream_replica.c (continued) -----------------------------------------------------------------*/

/* The leader's hint for a stream this server does not lead (NULL: none). */
jr__peer *jr__srep_leader_peer(jr__js *js, uint64_t group);

/* stream_requests.c -----------------------------------------------------------------------------*/

/* Executes a stream request (kind JR__RPC_PUBLISH, _STREAM_INFO, _STREAM_ADMIN) that arrived at
 * this server: answers JR_ENOTLEADER (payload: the leader's name, maybe "") unless it leads the
 * stream, else does it and answers along rt (now, or once the op it became is applied). */
void jr__stream_exec(jr__js *js, uint8_t kind, const jr__route *rt, const uint8_t *p, size_t len);
/* The replicas block of an info (cluster.h): every member of g but this server, as the group
 * status shows it, then the assignment's peers that are not (yet) members (pending), sorted by
 * name; at most JR__INFO_MAX_REPLICAS. Returns how many; ptrs[i] = &reps[i]. */
size_t jr__cluster_replicas(jr__js *js, jr_group *g, const char *const *peers, size_t npeers,
                            jr_peer_info *reps, const jr_peer_info **ptrs);
/* Moves the leadership of g (led here) to server `peer` (plen bytes; 0: the best one) and
 * answers along rt once the transfer completed (JR_ENOTVOTER, JR_ETRANSFER, JR_ETIMEDOUT...). */
void jr__stepdown_exec(jr__js *js, jr_group *g, const jr__route *rt, const char *peer, size_t plen);
/* Executes the read that waiter w staged (jr__srep_stage_read), now that its op is applied. */
void jr__stream_exec_read(jr__js *js, jr__srep *r, const jr__waiter *w);

/* details.c ------------------------------------------------------------------------------------*/

/* At the leader, once the read's TICK is applied: a page of the subjects matching filter from
 * offset, and a page of the deleted ranges ending above after, answered on rt. */
void jr__subjects_exec(jr__js *js, jr__srep *r, const jr__route *rt, const char *filter,
                       size_t flen, uint64_t offset);
void jr__deleted_exec(jr__js *js, jr__srep *r, const jr__route *rt, uint64_t after);
/* Decoded pages: `page` borrows the rest, freed by the _free call (also after a failure). 0,
 * JR_ECORRUPT (truncated, trailing bytes, more subjects than the total, an empty subject or one
 * with a NUL, ranges out of order or overflowing) or JR_ENOMEM. */
typedef struct jr__subjects_dec {
    jr_subjects_page page;
    jr_subject_count *v;
    char *names;
    const jr_allocator *alloc;
} jr__subjects_dec;
int jr__subjects_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__subjects_dec *out);
void jr__subjects_dec_free(jr__subjects_dec *d);
typedef struct jr__deleted_dec {
    jr_deleted_page page;
    jr_seq_range *v;
    const jr_allocator *alloc;
} jr__deleted_dec;
int jr__deleted_decode(const uint8_t *p, size_t len, const jr_allocator *a, jr__deleted_dec *out);
void jr__deleted_dec_free(jr__deleted_dec *d);
/* At the origin: decodes r->result and calls the user's callback. */
void jr__subjects_deliver(jr__req *r, int st, const char *msg);
void jr__deleted_deliver(jr__req *r, int st, const char *msg);
/* 1 if `what` is a read the stream's leader serves after a TICK of its own (jr__srep_stage_read):
 * info, message get, get last, get next, subjects, deleted. */
static inline int jr__req_leader_read(uint8_t what)
{
    return what == JR__REQ_INFO || what == JR__REQ_MSG_GET || what == JR__REQ_GET_LAST ||
           what == JR__REQ_GET_NEXT || what == JR__REQ_SUBJECTS || what == JR__REQ_DELETED;
}

/* catchup.c ---------------------------------------------------------------------------------*/

/* The replica's fsm restore found messages missing from need on (snapshot copied). 0/ENOMEM. */
int jr__catchup_begin(jr__srep *r, uint64_t index, const void *snap, size_t len, uint64_t need);
/* A group snapshot installed while restoring (gindex: the group's index; index and snap: the
 * stream's): kept, the newest one, and restored once the entries queued before it are applied,
 * so the messages fetched are those of the entries the group's log no longer had for this
 * replica, not all those appended since the first snapshot. Replacing a kept one, it drops the
 * queued entries after that one's index up to gindex (they presuppose its state). The queued
 * entries left in the log are copied first (the snapshot replaces that log). 0, JR_ENOMEM or
 * JR_ECOMPACTED. */
int jr__catchup_later(jr__srep *r, uint64_t gindex, uint64_t index, const void *snap, size_t len);
/* An entry applied while restoring: kept to be applied once the messages are in — by its index
 * when in_log (data is the group's log entry at index, which the log keeps: nothing is copied),
 * else copied. 0 or JR_ENOMEM. */
int jr__catchup_queue(jr__srep *r, uint64_t index, uint64_t term, const void *data, size_t len,
                      int in_log);
/* The messages are in: applies the queued entries, a bounded batch per turn of the node (the
 * replica's timer brings the next; the replica stays restoring until the queue is empty), and
 * ends the catch-up with the last. */
void jr__catchup_finish(jr__srep *r);
/* Drives the catch-up (timer): the next request, or the next batch of queued entries. */
void jr__catchup_step(jr__srep *r);
/* When the replica's timer should drive it next: at the node's next turn (now + 1 ns: a
 * timer due now would run again in this one) while queued entries are being applied, else
 * soon (the retry of a request that failed). */
uint64_t jr__catchup_due(const jr__srep *r, uint64_t now, uint64_t soon);
void jr__catchup_free(jr__srep *r);
/* Drops the snapshot r keeps as a catch-up source. */
void jr__catchup_release(jr__srep *r);
/* What the catch-up is doing: fetching (a request out or a chunk staged), paused (paced: the
 * group is busy with proposals), draining (applying the queued entries) or waiting (a retry). */
enum { JR__CU_WAITING = 0, JR__CU_FETCHING = 1, JR__CU_PAUSED = 2, JR__CU_DRAINING = 3 };
int jr__catchup_phase(const jr__catchup *cu);
/* Sequences the catch-up still has to copy (an upper bound: deleted ones are among them; at
 * least 1 while a round runs whose end is not known yet). */
uint64_t jr__catchup_left(const jr__catchup *cu);
/* The leader side of JR__RPC_CATCHUP. */
void jr__catchup_serve(jr__js *js, const jr__route *rt, const uint8_t *p, size_t len);

/* stream_peers.c: a peer change's move info (jr_move_info) from the assignment's target and
 * origin peers and the leader's note (NULL or status 0: not known yet); borrowed pointers. */
void jr__move_info_fill(const char *const *target, size_t ntarget, const char *const *origin,
                        size_t norigin, const jr__move_note *nt, jr_move_info *out);
/* Marks the replicas of reps[0..nr) that are on their way out (not in target) pending. */
void jr__move_mark_leaving(jr_peer_info *reps, size_t nr, const char *const *target,
                           size_t ntarget);

/* api_move.c: the meta leader's choice for a PEER_MOVE evacuate op (checked against its state
 * already): peers[0..*np) the current peer set with op->peer replaced (names borrowed from the
 * meta state). 0; JR_EPEERREMAP with msg when no server qualifies; JR_ENOMEM. */
int jr__move_place(jr__js *js, const jr__meta_op *op, const char **peers, size_t *np, char *msg,
                   size_t msglen);

/* meta_drain.c: draining servers and re-placing replicas on leaving servers -----------------*/

/* The meta leader's pass (from the meta timer): proposes a PEER_MOVE for each stream (consumer)
 * with a replica on a draining or removed server that can move now. A no-op elsewhere. */
void jr__drain_tick(jr__js *js);
/* An applied meta op's result: ops that may make a move possible mark the next pass. */
void jr__drain_note(jr__js *js, const jr__meta_result *res);
/* Cluster info: list<str> remaining | list<str> unplaced of a draining server, and the
 * list<str> of streams and consumers with a replica on a removed server (nothing when there
 * are none, so the report is the same as before drains existed). */
void jr__drain_report(jr__js *js, const char *server, jr__buf *b);
void jr__drain_report_under(jr__js *js, jr__buf *b);

/* api_stream.c ------------------------------------------------------------------------------*/

/* The checks every public call starts with: JR_EINVAL (a NULL node, or !ok: a required argument
 * missing), JR_ECLOSED (the node closes), JR_ENOTSUP (streams are not enabled); else 0. */
int jr__js_entry(jr_node *n, int ok);
/* Runs r's user callback (from the node's completion queue). */
void jr__req_deliver(jr__req *r);
/* Delivers the answer of a message read (get, last-by-subject, direct get): the message
 * decoded from r->result when st is 0, else st and msg. */
void jr__req_deliver_msg(jr__req *r, int st, const char *msg);
/* The same for a consumer info, fetch or ack (api_consumer.c). */
void jr__consumer_deliver(jr__req *r);
/* Consumer request r knows its consumer's group: 1; not yet, ask again later: 0; the stream or
 * consumer does not exist (r finished): -1. */
int jr__consumer_resolve(jr__req *r);
/* r's timer fired: its deadline passed, or it is time to retry. */
void jr__req_timer(jr__req *r);
/* Routes a stream request (r->group, r->kind, r->payload) to the stream's leader. */
void jr__req_route(jr__req *r);
/* A response to r arrived (over RPC, or from this node's own execution). */
void jr__req_response(jr__req *r, int status, const uint8_t *p, size_t len);

/* api_lists.c -------------------------------------------------------------------------------*/

/* 1 if r is a request of api_lists.c (names, lists, direct get), whose responses, timer and
 * delivery api_stream.c hands to the three functions below. */
int jr__lists_owns(const jr__req *r);
void jr__lists_response(jr__req *r, int status, const uint8_t *p, size_t len);
void jr__lists_timer(jr__req *r);
void jr__lists_deliver(jr__req *r);
/* The handler of JR__RPC_LISTS (a page of stream or consumer names; the meta leader answers,
 * any other server JR_ENOTLEADER with the leader's name). */
void jr__lists_serve(jr__js *js, const jr__route *rt, const uint8_t *p, size_t len);
/* Executes a direct get (JR__ADM_DIRECT_GET, after its sub-kind and group) at this server:
 * answered from its replica if current, else JR_EBUSY (api_lists.c). */
void jr__direct_exec(jr__js *js, const jr__route *rt, uint64_t group, const uint8_t *p, size_t len);

#endif
