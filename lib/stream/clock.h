/*
 * clock — stream time: the timestamp a stream leader gives each op it proposes (op.h), which is
 * what every replica stores with a message and what max_age and the duplicate window measure
 * (fsm.h "Time"). The state machine never reads a clock; this module decides, on the leader,
 * what the replicated timestamp is.
 *
 * Stream time follows the host's wall clock (jr_host.wall) with two guards, so that a wall clock
 * that jumps — the roadmap's "clock jump" fault, an NTP step, a VM resumed with a stale clock —
 * never expires a stream's messages all at once and never makes timestamps go backwards:
 *
 *  1. Never backwards. A stamp is at least the stream time applied so far (the fsm's clock,
 *     passed as `floor`) and at least this server's previous stamp (or observed time).
 *  2. Anchored to real elapsed time. The clock keeps an anchor — a stream time and the host's
 *     monotonic now() when it was current — and expects stream time now = anchor + the
 *     monotonic time elapsed since. A wall clock within JR__SCLOCK_TOLERANCE_NS of that
 *     expectation is followed exactly (ordinary corrections, small NTP steps). Beyond it, the
 *     wall clock is not followed at once: stream time runs faster (wall clock ahead) or slower
 *     (behind) than real time by 1/JR__SCLOCK_SLEW_DIV of the elapsed time, until it meets the
 *     wall clock again. A forward jump of D therefore expires messages at most 1/16 early while
 *     it is absorbed (in about 16 D of real time) instead of all at once; a backward jump slows
 *     expiry by 1/16 instead of stopping it, and timestamps stay ordered. An anchor ages with
 *     real time, so a pause (an idle stream) is never mistaken for a jump.
 *
 * Where anchors come from: every stamp this server issues as leader; and, on a follower, every
 * applied stream time newer than its anchor that agrees with its own wall clock within the
 * tolerance (jr__sclock_observe) — an applied time that does not (an old entry replayed after a
 * restart or caught up, or a wall clock that jumped) leaves the anchor as it was, since anchoring
 * on it would hold stream time back or pass the jump on. So a follower that takes over after a
 * cluster-wide jump keeps absorbing it, as the old leader did. Without an anchor — a server that
 * just started, or whose wall clock disagreed with the stream ever since — the wall clock is
 * taken as it is, bounded below by guard 1: a new leader whose wall clock is far ahead of the
 * stream's time (a misconfigured server) moves it forward; one behind cannot move it back.
 * Servers' wall clocks should be kept synchronized (NTP), as JetStream also assumes.
 *
 * A host without a wall clock passes its monotonic now() as wall: stream time is then that
 * clock, and the guards never engage on a single leader.
 *
 * Pure: no I/O, no clock reads, no allocation; one jr__sclock per local stream replica.
 */
#ifndef JR_STREAM_CLOCK_H
#define JR_STREAM_CLOCK_H

#include <stdint.h>

#define JR__SCLOCK_TOLERANCE_NS 1000000000ll /* 1 s: followed at once */
#define JR__SCLOCK_SLEW_DIV 16               /* beyond it: 1/16 of the real elapsed time */

typedef struct jr__sclock {
    int64_t stamp; /* the anchor's stream time: this server's last stamp or a time it observed
                      (0: none yet) */
    uint64_t mono; /* the host's monotonic time when it was current */
    int anchored;  /* stamp/mono form an anchor (guard 2) */
} jr__sclock;

/* A fresh clock: no stamp issued, no anchor. */
void jr__sclock_init(jr__sclock *c);

/* A follower applied ops that moved the stream's time to `clock`, at wall-clock time `wall` and
 * monotonic time `mono`: anchors there if clock is newer than the anchor and within the
 * tolerance of wall (see "Where anchors come from"), else changes nothing. */
void jr__sclock_observe(jr__sclock *c, int64_t clock, uint64_t wall, uint64_t mono);

/* The timestamp of the next op proposed at wall-clock time `wall` (ns since the Unix epoch, or
 * the host's monotonic time) and monotonic time `mono` (never decreasing between calls), with
 * `floor` the stream time the replica applied so far (the fsm's clock). Applies the rules above,
 * re-anchors at the result and returns it: never below floor nor below an earlier stamp, never
 * negative (a wall above INT64_MAX is taken as INT64_MAX). */
int64_t jr__sclock_stamp(jr__sclock *c, uint64_t wall, uint64_t mono, int64_t floor);

#endif
