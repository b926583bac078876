/*
 * meta_move — the meta state's side of evacuating a replica and cancelling a peer change
 * (meta op PEER_MOVE, meta_op.h): decided from the state and the op alone, like every apply
 * (meta_state.h "Determinism").
 *
 * Origin. A stream (consumer) whose peer set starts to change from a converged state records
 * the assignment version it started from (jr__meta_stream.origin): its config and peers.
 * Nothing overwrites it until the change converges (STREAM_CONVERGED) or is cancelled.
 *
 * Apply rules of PEER_MOVE (refusals change nothing):
 *   stream unknown → JR_ENOTFOUND ("stream 'X' not found"; for a consumer JR_ENOSTREAM);
 *   consumer named and unknown → JR_ENOTFOUND "consumer not found";
 *   EVACUATE  `peer` not in the peer set → JR_ENOTMEMBER "peer not a member"; the stream
 *             (consumer, or its stream) mid-change → JR_EBUSY "cluster member change is in
 *             progress"; with peers (the leader's choice; a request has none, and is checked
 *             without them): exactly the current peers with `peer` replaced by one server the
 *             state knows that is not a peer (for a consumer: a peer of its stream that does
 *             not hold the consumer), else JR_EINVAL "peers: ...". Applied: the new peer set
 *             (same config, same replica count) starts a peer change whose origin is the old
 *             version; a stream's consumers follow it (meta_state.h).
 *             Reseed: when every current peer is a removed server (an R1 stream whose server
 *             was removed, or a consumer whose servers all were), nobody is left to copy from:
 *             the peers must be as many servers the state knows, none of them a current peer
 *             (a consumer's: peers of its stream), and the group starts afresh and empty under
 *             a new group id (from next_group; JR_ERANGE when none is left) on them — created =
 *             peers_at = converged_at = the op's index, so its new peers bootstrap it, with no
 *             origin; a stream's consumers are reseeded with it (their peers were its).
 *   CANCEL    nothing in progress, or no origin recorded (a cancel already returning, or a
 *             state restored from a snapshot of version 4) → JR_ENOCHANGE "stream (consumer)
 *             reconfiguration not in progress". Applied: the peer set becomes the origin's
 *             peers, the replica count and placement the origin's, the rest of the config
 *             stays (a config that cannot take them is JR_EINVAL, decided by the apply alike
 *             on every replica); the group converges back to it like to any new peer set, the
 *             origin is dropped, and the servers it leaves release their replicas once it
 *             converged. A stream's consumers follow: one that recorded an origin within the
 *             stream's returns to it (if it has the replica count the consumer has
 *             afterwards), the others follow as on any peer change. A consumer's cancel is
 *             JR_EBUSY while its origin is no longer within its stream's peers or has another
 *             replica count than the consumer's now.
 */
#ifndef JR_META_META_MOVE_H
#define JR_META_META_MOVE_H

#include "meta/meta_state.h"

/* The checks of a PEER_MOVE against st (need_peers: an evacuate must carry its peer set).
 * Returns 1 if decided (res->status set: a refusal, or 0 for an op that changes nothing), 0 if
 * it would apply. *s and *c get the stream and consumer concerned when known. */
int jr__meta_move_validate(const jr__meta_state *st, const jr__meta_op *op, int need_peers,
                           jr__meta_result *res, jr__meta_stream **s, jr__meta_consumer **c);

/* 1 if an evacuation of s (consumer c, or NULL) is a reseed: every current peer was removed. */
int jr__meta_move_reseeds(const jr__meta_state *st, const jr__meta_stream *s,
                          const jr__meta_consumer *c);

/* Applies a PEER_MOVE that validated at meta index `index`. 0 (res filled) or JR_ENOMEM
 * (nothing changed). */
int jr__meta_move_apply(jr__meta_state *st, uint64_t index, const jr__meta_op *op,
                        jr__meta_stream *s, jr__meta_consumer *c, jr__meta_result *res);

#endif
