/*
 * peer.h — the cluster links: one TCP connection per pair of servers, carrying the node's frames.
 *
 * Of each pair the server whose name sorts first dials, the other accepts; a connection starts
 * with a handshake (session.h: the library's secure link, each side proving its certificate
 * from the cluster authority, or with "insecure_cluster" a plain hello naming its cluster and
 * server), and only then carries the node's frames, each sealed as one record. A refused
 * handshake is logged with its reason and the peer's name or address. A link that breaks is
 * redialled with jittered exponential backoff; a newer connection from a peer replaces its older
 * one. Each link's send queue is bounded in bytes: a frame that does not fit, or one for a peer
 * without a link, is dropped and counted (Raft retransmits), so a slow or dead peer never grows
 * memory without bound. Route frames (route.h: core NATS interest and messages) share the links
 * and are told from the node's by their magic; a frame is sealed when it is written, so the
 * sealed stream's order is the write order. A connection that fails its handshake, sends an
 * oversized length or a record that does not authenticate, or completes no handshake within the
 * hello timeout is closed.
 */
#ifndef SRV_PEER_H
#define SRV_PEER_H

#include "server.h"

/* Opens the cluster listener and starts dialling. Returns 0 or a libuv error. */
int peers_start(server *s);
/* Closes every link, timer and the listener (asynchronously, through the loop). */
void peers_stop(server *s);
/* Frees what peers_start allocated, once the loop ended. */
void peers_free(server *s);
/* jr_host.send: queues one frame for server `to`. */
int peers_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt);
/* Queues a route frame (route.h) for configured peer `peer` (its index in s->cfg.peers).
 * A message (announce 0) is batched, to be sealed and written with the others of this loop turn
 * in one write by peers_route_flush, and is refused when the send queue and the batch would pass
 * half the queue's bound. An interest announcement (announce 1) is written at once (so it goes
 * before any message forwarded after it) and may use a quarter beyond the bound; one that does
 * not fit closes the link (the peers resend their whole interest when it comes back). 0, or -1
 * when not queued. */
int peers_route_send(server *s, size_t peer, const jr_iovec *iov, int iovcnt, int announce);
/* Writes every link's batched route messages (once per loop turn, before it waits for I/O). */
void peers_route_flush(server *s);
/* Number of peers with an established link. */
int peers_connected(const server *s);
/* 1 if configured peer `name` has an established link, else 0 (also for an unknown name). */
int peers_link_up(const server *s, const char *name);

#endif
