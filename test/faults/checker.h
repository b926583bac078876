/*
 * checker — what a disk fault on one replica must never cost, checked from outside: a
 * publisher that remembers every acknowledgement, and the checks of the disk-fault tests
 * (test_disk_faults.c, the fixed scenario; test_random_faults.c, randomized):
 *
 *  - no acknowledged publish is lost: every acked seq reads back the bytes of the message its
 *    ack named, on every replica that is not reported damaged, and through the public read API;
 *  - no seq is reused: two acks never name one seq for two messages, and no replica, damaged
 *    or not, holds other bytes at an acked seq;
 *  - replicas converge: after healing, every replica not reported damaged holds the same store
 *    (fsm digest and every message's checksum);
 *  - a damaged replica never leads: no running node's own group status says leader and damaged
 *    at once (every sample, whichever nodes were damaged);
 *  - damage is visible: while the faulty replica's group reports damaged (with k->strict: from
 *    the fault on) and until it reports whole again, stream info never shows it leading, nor
 *    current, and while its group status says damaged its replica line says "damaged" or
 *    "unvouched" — except where the leader cannot know yet (the contact rule): a leader learns
 *    of a restart from the replica's VOUCH, so a sample whose leader has not heard from the
 *    replica since its restart (plus grace_ns) does not count.
 * "Reported damaged" means its group status says damaged or unvouched: a replica restarted from
 * a disk that lost what it acknowledged cannot know that until its peers answer, and until then
 * it reports unvouched (and its replica lines say "damaged" or "unvouched").
 * Under JR_SYNC_INTERVAL (lossy) acknowledged publishes may be lost, so only convergence counts.
 *
 * The first violation is kept in k->fail (with the step it was found at); the tests assert it
 * is empty and print their replay command when it is not.
 */
#ifndef JR_TEST_FAULTS_CHECKER_H
#define JR_TEST_FAULTS_CHECKER_H

#include <stddef.h>
#include <stdint.h>

#include "../stream_e2e/e2e.h"

typedef struct fchk fchk;

/* One message of the workload: message i has subject "<prefix>.<i % 17>", payload
 * fchk_payload(i) and msg id "m-<i>" (so a re-send is deduplicated). */
typedef struct fchk_item {
    fchk *k;
    size_t i;
    int inflight; /* a publish is outstanding */
    int done, status;
    uint64_t seq;   /* of the callback */
    uint64_t acked; /* seq of its first acknowledgement; 0 none yet */
} fchk_item;

struct fchk {
    e2e *c;
    const char *stream;
    const char *prefix;
    int lossy;
    int faulty;       /* node whose disk was damaged (fchk_fault); -1 none */
    int damaged_seen; /* its group reported damaged since the fault */
    int repaired;     /* and whole again afterwards */
    int strict; /* the fault surely lost acknowledged data: from the fault until repaired, never
                   shown current (not only while damaged) */
    uint64_t fault_at;   /* simulated time of the fault */
    uint64_t restart_at; /* simulated time the faulty replica restarted (fchk_restarted) */
    uint64_t grace_ns;   /* samples of stream info within this long of the restart do not
                            count, nor those whose leader last heard from the replica before
                            restart_at + grace_ns (the contact rule); the replica's VOUCH goes
                            out at its start and takes one network hop (at most 0.5 ms in the
                            simulator) to reach the leader */
    int require_whole;   /* fchk_final: every replica must also report whole again after healing
                            (neither damaged nor unvouched) */
    fchk_item *items;
    size_t nitems, cap;
    size_t *by_seq; /* message index + 1 acknowledged at seq (index seq - 1); 0 none */
    size_t by_seq_cap;
    uint64_t acks, reads;
    uint64_t reused;        /* acks that named a seq acknowledged for another message */
    uint64_t shown_current; /* samples showing the faulty replica current or leading */
    uint64_t damaged_leads; /* samples of a replica reporting itself leader while damaged */
    uint64_t unflagged;     /* samples of a damaged replica whose line lacks "damaged" */
    uint64_t unflagged_ns;  /* how long such samples from one leader may go on before they count
                               (0: at once). A leader elected after the restart starts with a
                               fresh progress for the replica, unflagged; it reports contact only
                               once it heard from the replica (never check-quorum's grace), so
                               the contact rule excuses it until then. What it hears first is
                               the VOUCH the replica sends at the first leader message it drops
                               (before its term floor) or takes (after), or, past the floor, the
                               replica's vote for it, the VOUCH then answering the leader's first
                               APPEND or HEARTBEAT to it: sent at the election, or at the next
                               heartbeat if lost, and back one round trip later. So about a
                               heartbeat interval and a round trip; samples come 100 ms apart,
                               so in effect one such sample may pass, never two in a row */
    uint64_t unflagged_since;
    unsigned unflagged_run;
    unsigned current_samples; /* likewise for a replica shown current (not leading), in samples
                                 in a row (0: 1): the leader clears its mark at the replica's
                                 first acknowledgement after its term floor, which can come a
                                 moment before the replica has the leader's answer that makes it
                                 whole (that answer waits for the leader's sync) */
    unsigned current_run;
    char unflagged_leader[64];
    char fail[1024];
    unsigned nfail;
};

void fchk_init(fchk *k, e2e *c, const char *stream, const char *prefix, int lossy);
void fchk_free(fchk *k);
/* Records a violation (printf-style): the first is kept in k->fail, the first few are printed. */
void fchk_failf(fchk *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Message i's payload, about 200 bytes, into buf; its length. */
size_t fchk_payload(size_t i, char *buf, size_t cap);

/* Publishes message i (new when i == k->nitems) through node via, asynchronously. 0 or the
 * call's error. */
int fchk_publish(fchk *k, unsigned via, size_t i);
/* Takes in the callbacks that fired: records acknowledgements (and checks them for reuse);
 * returns how many messages have no acknowledgement and no publish outstanding. */
size_t fchk_collect(fchk *k);
/* Publishes messages k->nitems.. through via, at most `window` outstanding, re-sending those
 * that failed, until `count` more are acknowledged or max_ns of simulated time passed; calls
 * fchk_watch(k, watch_via) about every 100 ms when watch_via >= 0. Returns how many were
 * acknowledged. */
size_t fchk_publish_n(fchk *k, unsigned via, size_t count, size_t window, int watch_via,
                      uint64_t max_ns);

/* Node `node`'s disk was just damaged (it is down): from now until its group reports it whole
 * it must not be shown current. */
void fchk_fault(fchk *k, unsigned node);
/* The faulty replica has just restarted (the default: at the fault). */
void fchk_restarted(fchk *k);
/* 1 if node i's replica group reports damaged, 0 if not, -1 if it has none (or is down). */
int fchk_damaged(fchk *k, unsigned i);
/* Every running node's own report (its replica group's status, one read giving the role and
 * the damaged flag together): none may be leader while damaged. Any number of faulty nodes. */
void fchk_leaders(fchk *k);
/* One sample of what the cluster reports about the faulty replica: its group status, and the
 * stream info asked on node via (if via is up), after fchk_leaders. Runs the simulation until
 * the info answers. */
void fchk_watch(fchk *k, unsigned via);
/* Runs up to max_ns, sampling every 100 ms, until the faulty replica reports damaged. 0 if it
 * did, JR_ETIMEDOUT (and a violation) if not. */
int fchk_expect_damaged(fchk *k, unsigned via, uint64_t max_ns);

/* The checks after healing, over the n nodes `nodes` holding a replica: runs up to settle_ns
 * (sampling) until the replicas not reported damaged agree (with k->require_whole: and none is
 * reported damaged or unvouched any more), then checks agreement, every
 * acknowledged message on each of them, no other bytes at an acked seq on any replica, and a
 * sample of acked seqs through jr_stream_msg_get on node via. */
void fchk_final(fchk *k, const unsigned *nodes, size_t n, unsigned via, uint64_t settle_ns);

/* One line per replica (store state, group status) into stderr, for a failing seed. */
void fchk_dump(fchk *k, const unsigned *nodes, size_t n);

#endif
