/*
 * peer_frame — how any writer of peer frames gets room in a peer's open frame (peer.c).
 *
 * A node sends one frame per peer per flush, carrying every group's messages and the node's own
 * (RPCs, heartbeats): messages are encoded straight into the peer's open frame. These two
 * functions are the one place that starts frames and puts peers on the node's dirty list, so
 * that every kind of message batches the same way. (They belong with the peer functions of
 * node.h; this header carries them until node.h does.)
 *
 * Invariant kept: a peer's frames[0..nframes) each hold at least one message once the writer
 * that asked for room has appended (or undone) its message.
 */
#ifndef JR_NODE_PEER_FRAME_H
#define JR_NODE_PEER_FRAME_H

#include <stddef.h>

#include "node/node.h"

/* The frame of peer p to append a message of `need` bytes to: the open one, or a new one when
 * there is none or the message would take it past max_frame; p is put on the node's dirty list
 * (its frames leave with the next jr__peer_send_all). Requires need <= max_frame -
 * JR__FRAME_HEADER (callers check: such a message fits no frame). NULL on JR_ENOMEM (nothing
 * changed but p's dirty mark). */
jr__buf *jr__peer_frame(jr_node *n, jr__peer *p, size_t need);

/* After an append to b (from jr__peer_frame) failed: restores b to its `before` length, clears
 * its error, and drops the frame again if it holds nothing but its header. */
void jr__peer_frame_undo(jr__peer *p, jr__buf *b, size_t before);

#endif
