/*
 * rpc — node-to-node requests and responses (NODE_REQUEST 66 / NODE_RESPONSE 67, wire/frame.h):
 * request ids, one timeout per outstanding request (a timer of the stream layer, on the node's
 * deadline), and routing of each response to the callback of the request it answers.
 *
 * A request or response is written straight into the destination peer's open frame, so it
 * leaves with the Raft traffic of the same flush (one frame per peer, ARCHITECTURE §4). Neither
 * depends on durable state: a response that reports a durable fact (a publish ack) is only
 * produced after the flush that made it durable.
 *
 * Invariants:
 *  - an outstanding call is in js->calls under its id (unique and non-zero for this node's
 *    lifetime; ids start at a random point, so an answer to a call of an earlier life of the
 *    server is not taken for a new call's) until exactly one of: its response arrives from the peer it was sent to, its
 *    timer fires (JR_ETIMEDOUT), it is cancelled (no callback), or the layer closes
 *    (JR_ECLOSED); the callback runs once, after the call left the table;
 *  - a response whose id is unknown, or that comes from another peer than the request went to,
 *    is dropped (a late answer to a call that timed out).
 * Callbacks run inside jr_node_recv (responses) or jr_node_tick (timeouts); they are the layer's
 * own, never the user's (user callbacks go through the node's completion queue).
 */
#ifndef JR_NODE_RPC_H
#define JR_NODE_RPC_H

#include <stddef.h>
#include <stdint.h>

#include "js/js.h"

/* A call that got no answer within its timeout (a positive status: never a responder's; a
 * response with a positive status is taken as JR_ECORRUPT). */
#define JR__RPC_NO_ANSWER 1

/* Result of a call: status from the responder (0 or a JR_E* code), JR__RPC_NO_ANSWER, or
 * JR_ECLOSED from here; payload borrowed for the callback (NULL, 0 if none). */
typedef void (*jr__rpc_cb)(jr__js *js, void *arg, int status, const uint8_t *p, size_t len);

/* Sends a request of `kind` with the payload gathered from iov to server `peer`, answered
 * through cb within timeout_ns. *id gets the call's id (cancel with it). 0; JR_ENOTFOUND
 * (unknown peer, or this node itself); JR_EMSGSIZE (does not fit a frame); JR_ENOMEM. On error
 * cb never runs. */
int jr__rpc_call(jr__js *js, jr__id peer, uint8_t kind, const jr_iovec *iov, int iovcnt,
                 uint64_t timeout_ns, jr__rpc_cb cb, void *arg, uint64_t *id);

/* Forgets call id (its callback will not run). A no-op for an unknown id. */
void jr__rpc_cancel(jr__js *js, uint64_t id);

/* Sends the response to request `id` of peer `to`. 0 or an error (the response is lost, like a
 * dropped frame; the requester times out). */
int jr__rpc_respond(jr__js *js, jr__id to, uint64_t id, int status, const jr_iovec *iov,
                    int iovcnt);

/* A response from peer `from` (the dispatcher of jr__js_recv). */
void jr__rpc_on_response(jr__js *js, jr__id from, const jr__rpc_view *v);

/* Fails every outstanding call with JR_ECLOSED and frees the table. */
void jr__rpc_close(jr__js *js);

#endif
