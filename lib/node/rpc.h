/*
 * rpc — node-to-node requests and responses (NODE_REQUEST 66 / NODE_RESPONSE 67, wire/frame.h),
 * a service of the node core to the layer above: request ids, one timeout per outstanding
 * request (a timer on the node's one heap), routing of each response to the callback of the
 * request it answers, and of each request that is to run to the layer's request hook
 * (jr__upper.request, services.h; with no layer above, or during its close, a request is
 * answered JR_ENOTSUP).
 *
 * A request or response is written straight into the destination peer's open frame, so it
 * leaves with the Raft traffic of the same flush (one frame per peer, ARCHITECTURE §4). Neither
 * depends on durable state: a response that reports a durable fact (a publish ack) is only
 * produced after the flush that made it durable.
 *
 * Invariants:
 *  - an outstanding call is in n->rpc_calls under its id (unique and non-zero for this node's
 *    lifetime; ids start at a random point, so an answer to a call of an earlier life of the
 *    server is not taken for a new call's) until exactly one of: its response arrives from the peer
 * it was sent to, its timer fires (JR_ETIMEDOUT), it is cancelled (no callback), or the layer
 * closes and fails its calls (jr__rpc_close: JR_ECLOSED); the callback runs once, after the call
 * left the table;
 *  - a response whose id is unknown, or that comes from another peer than the request went to,
 *    is dropped (a late answer to a call that timed out).
 * Callbacks run inside jr_node_recv (responses) or jr_node_tick (timeouts); they are the layer's
 * own, never the user's (user callbacks go through the node's completion queue).
 * The layer above that made calls fails them with jr__rpc_close before it frees what their
 * callbacks use; the node frees what is left at close (jr__rpc_free).
 *
 * At most once. The network may deliver a frame twice (or a host may send one again), so the
 * executing side keeps, per origin server, its JR__RPC_RECENT most recent requests by id, each
 * for JR__RPC_KEEP_NS after it arrived (jr__rpc_admit, before a request is handed to the layer;
 * jr__rpc_recent_expire, from every flush, forgets older ones and gives the memory of an origin
 * with nothing recorded back): a request already recorded
 * is not executed again — while it runs its duplicate is ignored (its answer is on its way),
 * once answered the duplicate gets that first answer again (kept up to JR__RPC_KEEP bytes:
 * every write's answer; a larger one, a read's, is not repeated: a read is re-sent under a new
 * id). A request whose id is at or below the highest one forgotten (by less than
 * JR__RPC_LIFE_GAP) and not recorded is too old to tell from a duplicate: dropped and counted,
 * the requester times out and nothing was executed twice. An id further below is taken for a
 * new life of the origin (ids start at a random point of 2^62, so two lives' ranges are far
 * apart): its record starts afresh. A duplicate that the network holds back across its
 * sender's restart and past JR__RPC_RECENT later requests is the one case this cannot tell.
 * A request of this node itself (a local route) never travels and is not recorded.
 *
 * After a restart. The record is memory: a duplicate that arrives after this server restarted
 * may be of a request its earlier life executed, and the record of it is gone. Each open draws
 * a random life (n->life). For JR__RPC_KEEP_NS after an open that found an earlier life's files
 * (the node's mark or WAL segments in wal_dir; a first start has nobody to repeat) the server
 * is wary: every frame it sends opens with a LIFE message announcing its life (wire/frame.h),
 * and a peer that heard the announcement within JR__RPC_KEEP_NS opens its frames to it with a
 * LIFE naming that life. A request in a frame that names this life was sent to it, and runs as
 * ever. Any other request reaching a wary server may be a duplicate of one sent to an earlier
 * life: jr__rpc_unsure says so inside the request hook, and the layer above executes no such
 * request that changes anything — it answers JR_ELEADERLOST ("the server that was to execute
 * it lost its state: the outcome is unknown"), which its requester already handles for a
 * leader that was lost (a publish with a msg_id goes to the next leader, any other write ends
 * there, an admin request is asked again and recognised by its id). Reads run as ever. Such a
 * request is recorded like any other, so its duplicates get the same answer and, once
 * forgotten, are too old to tell. The cost: a write sent to a restarted server before its
 * requester heard from it fails in the first second, as if its leader were lost. A duplicate
 * held back longer than JR__RPC_KEEP_NS is, as above, the one case this cannot tell. An older
 * node skips LIFE messages and executes what it receives as before.
 */
#ifndef JR_NODE_RPC_H
#define JR_NODE_RPC_H

#include <stddef.h>
#include <stdint.h>

#include "node/node.h"

/* Requests recorded per origin (the ring grows to it on demand, from 16). */
#define JR__RPC_RECENT 4096u
/* How long a request is recorded: far longer than a network holds a duplicate back. */
#define JR__RPC_KEEP_NS 1000000000ull
/* JR__RPC_KEEP, the largest answer kept for a duplicate, is in services.h. */
/* Ids this far below the highest forgotten one belong to another life of the origin. */
#define JR__RPC_LIFE_GAP (1ull << 40)

/* The calls the layer above makes — jr__rpc_call, jr__rpc_cancel, jr__rpc_respond,
 * jr__rpc_unsure, jr__rpc_close and the callback type jr__rpc_cb — are declared in services.h
 * (the seam); what follows is the core's own side. */

/* Request `id` from peer `from` arrived: *fresh = 1 if it is to be executed now (it is
 * recorded as running; jr__rpc_respond records its answer), 0 if it is a duplicate (answered
 * again if its answer is kept) or too old to tell (rpc.h "At most once"). 0, or JR_ENOMEM
 * (*fresh = 0: dropped like a lost frame). */
int jr__rpc_admit(jr_node *n, jr__id from, uint64_t id, int *fresh);
/* Requests of `from` recorded now, and the slots allocated for them (*cap; may be NULL). */
size_t jr__rpc_recent(const jr_node *n, jr__id from, size_t *cap);
/* The LIFE message a frame to p opens with: 1 and both lives if one is due (this server is wary,
 * or p announced its life within JR__RPC_KEEP_NS), else 0. */
int jr__rpc_life_due(const jr_node *n, const jr__peer *p, uint64_t *mine, uint64_t *theirs);
/* A frame from p opened with a LIFE message (sender_life: p's own, or 0). */
void jr__rpc_on_life(jr_node *n, jr__peer *p, uint64_t sender_life);

/* Forgets requests recorded for JR__RPC_KEEP_NS (cost: one check per origin, plus one per
 * request forgotten). */
void jr__rpc_recent_expire(jr_node *n);

/* A request or a response from peer `from` (the node's frame dispatch); for_me: the request's
 * frame opened with a LIFE message naming this server's life. */
void jr__rpc_on_request(jr_node *n, jr__id from, const jr__rpc_view *v, int for_me);
void jr__rpc_on_response(jr_node *n, jr__id from, const jr__rpc_view *v);

/* Prepares the node's empty tables (open, before anything can fail). */
void jr__rpc_init(jr_node *n);
/* Call ids start at a random point of the node's seeded stream (open, once it is seeded). */
void jr__rpc_seed(jr_node *n);
/* Frees what is left (node close): calls without running their callbacks, the record of
 * recent requests. */
void jr__rpc_free(jr_node *n);

#endif
