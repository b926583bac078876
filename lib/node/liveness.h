/*
 * liveness — the node's coalesced heartbeats, peer liveness, and the bookkeeping that lets idle
 * groups quiesce (issue 5, ARCHITECTURE §4; the core's side is lib/raft/quiesce.c).
 *
 * Every heartbeat interval the node sends each peer with which it shares quiet groups exactly
 * one heartbeat frame: a NODE_HB listing (group, term, commit) for every quiet group this node
 * leads in which the peer is a member (jr__raft_hb_item; possibly none), followed by a
 * NODE_HB_RESP answering the newest NODE_HB received from that peer since the last frame:
 * (group, term, last durable index) for each group listed there that this node hosts. A peer
 * with which the node shares no quiet group (it neither leads nor quietly follows one with it)
 * and that is owed no answer gets no frame, except for four intervals after the
 * last one that listed something to it (then the empty NODE_HB tells it to wake its quiet
 * followers). Received items go to the groups
 * (jr__raft_hb_recv, jr__raft_hb_resp), so a listed follower keeps its quiet state and leader
 * lease, and an answer counts as contact for its group (check-quorum, current/seen). A frame
 * that would exceed max_frame_bytes is split into several, each a valid frame.
 *
 * Peer liveness: a peer nothing was heard from (any valid frame, jr__peer.last_heard) for an
 * election timeout is lost; the followers whose leader it is are told (jr__raft_peer_lost)
 * with staggered campaign delays (stagger(), below); a quiet follower that the heartbeats its
 * leader's node kept sending have not listed for two heartbeat intervals, or that has not been
 * listed for two election timeouts while that node lives, is woken (jr__raft_wake): its leader
 * woke, stepped down or closed. Nothing here walks all groups: the per-interval work is
 * the list of quiet groups this node leads (kept incrementally, sorted lazily), the quiet
 * followers (for the absence check) and the items received. While no group of the node is
 * quiet and no answer is pending, the layer is dormant: no timer, no frames.
 *
 * Invariants (per node, kept by jr__live_sync after every flush of a group and by
 * jr__live_forget when a group closes or is freed):
 *  - live.led holds exactly the open groups whose core was a quiet leader at their last sync;
 *    g->live.lead_slot = index + 1 (0: not there);
 *  - peer p's live.follow holds exactly the open groups that were followers of p (quiet or
 *    not) at their last sync; g->live.follow_slot = index + 1, g->live.follow_peer = p (NULL:
 *    not there).
 *  A list may hold a group whose state changed since its last sync (until the flush that the
 *  change always causes); the raft inputs used on them are harmless in any state.
 */
#ifndef JR_NODE_LIVENESS_H
#define JR_NODE_LIVENESS_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "util/buf.h"
#include "wire/frame.h"

struct jr__peer;

/* Idle heartbeat ticks a leader waits before it goes quiet (jr__raft_config.quiesce). */
#define JR__LIVE_QUIESCE 2

/* Per group (jr_group.live). Zero is "in no list". */
typedef struct jr__glive {
    uint32_t lead_slot;           /* index + 1 in node live.led */
    uint32_t follow_slot;         /* index + 1 in follow_peer's live.follow */
    struct jr__peer *follow_peer; /* the leader whose follow list holds it */
    uint64_t listed_at;           /* when a heartbeat of follow_peer last listed it */
    uint8_t quiet;                /* counted in node live.nquiet */
} jr__glive;

/* Per peer (jr__peer.live). */
typedef struct jr__plive {
    jr_group **follow; /* followers whose leader is this peer */
    uint32_t nfollow, follow_cap;
    uint32_t nquiet;  /* quiet ones among them */
    jr__hb_item *out; /* this interval's NODE_HB items for it (building scratch) */
    size_t nout, out_cap;
    jr__hb_item *resp; /* answer to its newest NODE_HB, sent with our next heartbeat */
    size_t nresp, resp_cap;
    uint64_t resp_seq;
    uint8_t resp_pending;
    uint8_t resp_unsorted; /* chunks arrived out of order or twice: sort and dedupe first */
    uint8_t lost;          /* nothing heard for an election timeout */
    uint64_t hb_seq;       /* seq of its newest NODE_HB */
    uint64_t hb_at;        /* when its newest NODE_HB arrived (0: never) */
    uint64_t linger;       /* send it heartbeats until then even with nothing to list */
} jr__plive;

/* Counters (tests and benchmarks read them through jr_node.live). */
typedef struct jr__live_stats {
    uint64_t hb_frames;     /* heartbeat frames sent */
    uint64_t hb_items_sent; /* NODE_HB items sent */
    uint64_t resp_items_sent;
    uint64_t items_received; /* NODE_HB and NODE_HB_RESP items received */
    uint64_t peers_lost;
    uint64_t lost_wakes;   /* quiet followers told their leader's node was lost */
    uint64_t absent_wakes; /* quiet followers woken because their leader stopped listing them */
} jr__live_stats;

/* Per node (jr_node.live). All zero is the valid initial state. */
typedef struct jr__live {
    jr_group **led; /* quiet leaders */
    uint32_t nled, led_cap;
    uint8_t led_unsorted;
    uint64_t nfollow;    /* followers in follow lists, all peers together */
    uint64_t nquiet;     /* quiet followers among them */
    uint64_t npending;   /* peers with resp_pending */
    uint64_t linger;     /* max of the peers' linger */
    uint64_t next;       /* next heartbeat tick (0: dormant) */
    uint64_t started;    /* last wake-up of the layer: peers count as heard then */
    uint8_t frame_ready; /* frame initialized */
    uint64_t seq;
    jr__buf frame;
    jr__live_stats stats;
} jr__live;

/* When the node's heartbeat tick is due: UINT64_MAX while dormant, n->now when it must wake. */
uint64_t jr__live_deadline(const jr_node *n);
/* Runs the heartbeat tick if it is due at n->now: declares silent peers lost (telling their
 * quiet followers), wakes quiet followers their leader stopped listing, and sends one
 * heartbeat frame to every peer. Frames that cannot be built (JR_ENOMEM) are skipped and
 * counted as send failures; nothing else can fail. */
void jr__live_tick(jr_node *n);
/* A NODE_HB or NODE_HB_RESP from peer `from` (validated by the frame decoder). Items for groups
 * not open here are ignored. */
void jr__live_recv(jr_node *n, uint64_t from, const jr__hb_view *v);
/* Puts g in the lists its core's state calls for (after every flush of g, and when it opens or
 * reopens); takes a closed g out of them. JR_ENOMEM growing a list leaves g out of it (a
 * quiet leader then goes unlisted: its followers wake and it wakes when they campaign). */
void jr__live_sync(jr_group *g);
/* Takes g out of every list (close, free). Idempotent. */
void jr__live_forget(jr_group *g);
/* Frees the lists (node close). */
void jr__live_free(jr_node *n);

#endif
