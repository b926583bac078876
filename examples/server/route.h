/*
 * route.h — core NATS across the cluster: interest propagation and message forwarding over the
 * peer links, as nats-server's routes do (the library knows nothing of it).
 *
 * Interest: each server announces to every peer, in INTEREST route frames (route_wire.h), the
 * subjects and queue groups its clients subscribe to: a plain subject when its first local
 * subscription comes and when its last goes, a queue group with its member count at every
 * change. Counts are absolute, so an announcement repeated or resent is harmless. When a link
 * comes up each side sends its whole interest; when it goes down each side forgets the peer's.
 * An announcement that does not fit the link's send queue closes the link (it comes back and
 * resends everything), so the two sides never disagree for longer than a reconnect. This relies
 * on the link delivering frames in order and without loss while it is up, as TCP does (a test
 * proxy that drops single frames of a live connection can leave interest stale until the link
 * reconnects).
 *
 * Messages: a message published at this server (by a client or by the server itself: JetStream
 * replies, acks, a consumer's deliveries) goes to its local subscribers and, in one MSG frame
 * each, to the peers whose interest matches: the frame says whether the peer's plain
 * subscribers get it and which queue groups it picks a member of. A queue group with a member
 * here is served here (as nats-server prefers local members); otherwise one peer with members
 * is chosen at random, weighted by its member count, so each message reaches one member of the
 * group cluster-wide. A message received from a peer goes to local subscribers only and is
 * never forwarded again (a full mesh: no loops, no duplicates). MSG frames are batched per link
 * and written once per loop turn (peer.h); they are dropped and counted when the link's send
 * queue is past half its bound (core NATS is at-most-once; the
 * other half stays for the node's frames and announcements), so a slow peer costs bounded
 * memory. A malformed route frame is rejected and counted, and nothing of it is applied.
 */
#ifndef SRV_ROUTE_H
#define SRV_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "server.h"
#include "sublist.h"

/* Allocates the routing state (one interest table per configured peer). 0 or UV_ENOMEM. */
int route_start(server *s);
/* Stops its loop handle (asynchronously, through the loop). */
void route_stop(server *s);
/* Frees it, once the loop ended. */
void route_free(server *s);

/* A local subscription was added / is about to be removed. */
void route_sub_added(server *s, const sub *sb);
void route_sub_removed(server *s, const sub *sb);

/* The link to configured peer `peer` (its index in s->cfg.peers) came up / went down. */
void route_link_up(server *s, size_t peer);
void route_link_down(server *s, size_t peer);
/* A route frame (rw_is_route) from peer: applied, or rejected and counted. */
void route_recv(server *s, size_t peer, const uint8_t *f, size_t len);

/* Forwards a message published here to the peers with matching interest. local (n entries,
 * from sublist_match) is what the local subscribers receive: a queue group with a member among
 * them is not offered to peers. Returns how many peers it was sent to. */
size_t route_forward(server *s, const char *to, const char *subject, const char *reply,
                     const void *hdr, size_t hdr_len, const void *data, size_t len,
                     sub *const *local, size_t n);
/* 1 if a peer has interest matching the literal subject. */
int route_interest(const server *s, const char *subject);
/* The client URLs the peers whose links are up announced (at most max, into out; borrowed
 * until the next loop turn): INFO's connect_urls with this server's own. */
size_t route_urls(const server *s, const char **out, size_t max);

#endif
