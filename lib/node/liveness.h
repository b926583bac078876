/*
 * liveness — the node's coalesced heartbeats, peer liveness, and the bookkeeping that lets idle
 * groups quiesce (ARCHITECTURE §4; the core's side is lib/raft/quiesce.c).
 *
 * Heartbeats. Every heartbeat interval the node sends one heartbeat frame to each peer it shares
 * a quiet group with (it leads quiet groups, or quietly follows one the peer leads) or has
 * something to tell or answer: a NODE_HB, then a NODE_HB_RESP if an answer is owed. The frame
 * itself is the liveness signal; its NODE_HB carries the node's incarnation (a random 32-bit
 * number drawn when the layer first runs) in the high half of seq, so a restart is noticed at
 * the first heartbeat.
 *
 * Incremental lists. A group is named in a NODE_HB only when its state at its leader changes:
 * when it becomes quiet there, the leader's node tells every other member (group, term, commit)
 * (jr__raft_hb_item -> jr__raft_hb_recv: the follower goes quiet); when it stops being quiet
 * (it woke, stepped down, or was closed), a tombstone (group, term 0) (-> jr__raft_wake). Each
 * such item is repeated with every heartbeat to that peer until its NODE_HB_RESP echoes it:
 * (group, the responder's term — 0 if it does not host the group — and its last durable index),
 * relayed to the group (jr__raft_hb_resp). So an idle cluster's heartbeats carry no items at
 * all, whatever the number of groups; a group costs heartbeat bytes only when it changes.
 *
 * Peer liveness. A peer nothing was heard from (any valid frame, jr__peer.last_heard) for an
 * election timeout is lost — judged at a heartbeat tick that was not more than two intervals
 * late, or that follows one that was: a tick that late (the node was busy, or not called)
 * judges nobody, since the peers' frames may still be waiting to be handed over; the next tick
 * does, however late (an earlier rule, a fresh election timeout for every peer after each late
 * tick, meant that a host late at every tick — an overloaded machine — never noticed a lost
 * peer: 100,000 streams on one thread never failed over). Then the groups following it are
 * told (jr__raft_peer_lost) with
 * staggered campaign delays (stagger() in liveness.c), and so are the quiet groups this node
 * leads (the lost member stops counting toward their quorum: an isolated quiet leader steps
 * down). When it is heard from again, or restarted (new incarnation), the quiet groups this node
 * leads count it again (jr__raft_peer_alive) and are listed to it again; a restart also counts
 * as a loss for the groups following it (their leader lost its state). A group that becomes
 * leader is told of its members on lost nodes (jr__live_leads), so they do not hold its
 * quiescence back; a leader that is not quiet is not told of a loss or a return afterwards: its
 * own contact judges (a member it took for lost counts again once it answers).
 *
 * Replicas closed on a live node. A node that closes its replica of a group it follows (the host
 * closed it, or a stream replica left) while the node itself stays up sends the group's leader a
 * tombstone from a member, (group, term 0, JR__LIVE_CLOSED), repeated until echoed; a leader also
 * takes an echo with term 0 (the member's node does not host the group) for one. A quiet leader
 * that still counts that member (node-level contact) marks it lost (jr__raft_peer_lost: it no
 * longer counts toward the quorum) and wakes (jr__raft_wake): contact with it is per group again,
 * so the regular Raft machinery judges it (check-quorum, and its progress ages), and the group
 * goes quiet again only with the member taken for down. A leader that is not quiet when told keeps
 * a note for an election timeout (until the member's silence shows in its progress) and wakes the
 * same way, once (the note is then spent), if it goes quiet meanwhile without having heard from
 * the member since. A closed
 * follower reopened (jr_group_open again) wakes (its election timer runs): the quiet leader that
 * took it for down no longer talks to it, and its first (pre-)vote request wakes that leader.
 * An answer owed for a replica that closed after the heartbeat came says term 0, not the term
 * the replica had then.
 *
 * Listings to a node without the replica. A listing echoed with term 0 (the member's node does
 * not host the group: it has not opened its replica yet, as a server that applies the group's
 * assignment late, or closed it) is kept and repeated with every heartbeat while the group stays
 * a quiet leader here with that member, until the member's node echoes it with a term. A replica
 * opened empty there (a joiner) does not campaign, and the quiet leader, having taken the member
 * for down, does not talk to it: the listing is what reaches it (jr__raft_hb_recv: it follows,
 * and its echo of its last index wakes the leader to send it the log). The cost: one item per
 * heartbeat to that node for each such group, as long as it does not host it.
 *
 * Reporting contact (jr__live_contact). What is reported is contact received, never the grace
 * check-quorum gives (a new leader's, or a woken one's, progress counts every member as in
 * contact for an election timeout): the core's heard, not its last_contact. A quiet leader's
 * progress keeps the contact of before it went quiet; the node-level contact stands in for a
 * member only if the member was counted then (heard from within an election timeout before the
 * group went quiet, or since, as the node reports it alive or answering), never for one taken
 * for down. A leader that wakes keeps reporting, for a member it counted through its node and
 * that has not answered since, the node-level contact as of the wake (which then ages), so a
 * wake does not show every member as last seen when the group went quiet; its first
 * heartbeat round brings heard up to date. Likewise a quiet leader woken by the news that a
 * member's replica closed, which it counted through its node until then, reports that member's
 * node-level contact as of the news (kept in the note) until the note expires or the member
 * answers, never as current: not as last seen when the group went quiet (offline) while a
 * reopened replica's first answer is on its way (a replica rebuilt after its state machine
 * failed closes and reopens so), and aging from the news, so a replica that stays closed shows
 * as such.
 *
 * Opening in bursts. A group's first campaign after it opens (created, or recovered after a
 * restart) is pushed back by a random delay below JR__LIVE_CAMPAIGN_NS times the number of
 * groups the node opened within an election timeout before it (jr__raft_defer_campaign): one
 * group opens as usual, a hundred thousand opened at once campaign over a few seconds instead of
 * all within one election timeout, where they would time each other out.
 *
 * Paced campaigns. The node decides when a due election timer runs (safety is the core's: a
 * round is an ordinary pre-vote, then vote). Randomized timeouts separate a group's candidates
 * only while answers come back much faster than an election timeout; a node that starts more
 * rounds than it (and its peers) can answer that fast makes every group's replicas campaign
 * over each other, split votes, and campaign again: the load grows with each round and nothing
 * converges (100,000 groups created at once on one thread running three nodes: 300,000 timers,
 * millions of pre-votes, never settled). So at most camp_max rounds (JR__LIVE_CAMPAIGNS) run at
 * once per node (jr__live_may_campaign, called by jr__group_tick for a due non-leader); a
 * timer that fires while they all run waits in a FIFO (live.wait, its heap timer off) and the
 * round starts when one ends (jr__live_campaigns, from jr_node_tick; the node's deadline is
 * then "now"). While it waits, another replica of the group usually wins and its append or
 * vote restarts the timer: the group leaves the queue without campaigning, so a burst costs
 * about one campaign per group. A round ends (gives its slot back) when the group is no longer
 * a candidate (won, or lost to a follower), when a (pre-)vote request of it is refused (it
 * sends nothing more; node.c dispatch), or a quarter election timeout after it started (a
 * round nobody answers, e.g. its other voters are down, does not hold the slot until its timer
 * fires again); a candidate's next round queues like anyone's first. So do the rounds stagger()
 * schedules after a node is lost: taking over 17,000 groups with every round in flight at once
 * touched every one of them between each answer (cache misses on all of them: a third more CPU
 * than with the window, on one thread playing three nodes). A queued round may start late,
 * alongside the next-ranked survivor's; the pre-vote's tie-break (jr__raft_ahead, raft.h: while
 * its round may win, a pre-candidate grants only a server ranked ahead of it or with a newer log)
 * keeps the two from splitting the vote of a three-replica group.
 * Costs: per due timer O(1) (amortized ring growth), no walk over groups.
 *
 * Late answers. A HEARTBEAT_RESP of the leader's term that reaches a quiet leader (an answer to
 * a heartbeat from before it went quiet) is handed to jr__raft_hb_resp like an answer to its
 * listing (node.c dispatch): contact, and a wake only if the member lacks entries. As a message
 * it would wake the group, which heartbeats, goes quiet again and is woken by the next late
 * answer: on a node too busy to answer within an interval, idle groups never stayed quiet.
 *
 * A lost peer is sent heartbeats with one item, its first, as a probe: the rest of its news waits
 * until it is heard from again (else every group that changed while it was down would be encoded
 * again every interval). A peer is taken for lost when it is merely silent, having nothing to
 * tell this node, and a heartbeat without items asks for no answer: without the probe, a leader
 * whose frames to such a peer were lost (a one-way cut) would never tell it of a group it had
 * joined, and neither node would speak again (test/scale/test_silent_peer.c).
 *
 * Costs. Nothing here walks all groups. Per interval: one frame per peer and the pending items;
 * per event (a group going quiet or not, a peer lost/back/restarted): the groups concerned. The
 * layer is dormant (no timer, no frames) while the node has no quiet group and nothing pending.
 *
 * Invariants (kept by jr__live_sync after every flush of a group and when it opens, and by
 * jr__live_forget when it closes or is freed):
 *  - live.led holds exactly the open groups whose core was a quiet leader at their last sync,
 *    with the time that sync found it quiet; g->live.lead_slot = index + 1 (0: not there);
 *  - peer p's live.follow holds exactly the open groups that were followers of p (quiet or not)
 *    at their last sync; g->live.follow_slot = index + 1, g->live.follow_peer = p; the quiet
 *    ones are counted (g->live.quiet, p->live.nquiet, live.nquiet);
 *  - peer p's live.pend holds at most one entry per group once normalized (the newest news);
 *    live.npend is the sum over peers, live.nowe the number of peers owed an answer;
 *  - live.ncamp counts the groups with g->live.camp set (rounds running), live.nwait those with
 *    g->live.waiting set; each waiting group has an entry in the live.wait ring (entries of
 *    groups no longer waiting are skipped) and no timer in the heap (jr__group_rearm).
 * A list may hold a group whose state changed since its last sync (until the flush that the
 * change always causes); the raft inputs used on them are harmless in any state.
 */
#ifndef JR_NODE_LIVENESS_H
#define JR_NODE_LIVENESS_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "raft/raft.h"
#include "util/buf.h"
#include "wire/frame.h"

struct jr__peer;

/* Idle heartbeat ticks a leader waits out before it goes quiet at the next one
 * (jr__raft_config.quiesce; a leader with nothing of its term but its no-op does not wait). */
#define JR__LIVE_QUIESCE 2
/* The commit field of a member's tombstone, (group, 0, JR__LIVE_CLOSED): its replica closed (a
 * leader's tombstone, the group no longer quiet there, has 0). */
#define JR__LIVE_CLOSED 1
/* Spread of first campaigns per group opened in a burst (about what an election costs a node). */
#define JR__LIVE_CAMPAIGN_NS 20000u
/* Campaign rounds a node runs at once (jr__live.camp_max overrides; see "Paced campaigns"). */
#define JR__LIVE_CAMPAIGNS 256u

/* Per group (jr_group.live). Zero is "in no list". */
typedef struct jr__glive {
    uint32_t lead_slot;           /* index + 1 in node live.led */
    uint32_t follow_slot;         /* index + 1 in follow_peer's live.follow */
    struct jr__peer *follow_peer; /* the leader whose follow list holds it */
    uint8_t quiet;                /* a quiet follower (counted in the nquiet counters) */
    uint8_t opened;               /* synced once (its first campaign was spread) */
    uint8_t gone;                 /* closed while following: wake its core when reopened */
    uint8_t camp;                 /* runs a campaign round: holds one of live.ncamp */
    uint8_t waiting;              /* its election timer fired: waits in live.wait for a round */
    uint32_t camp_ms;             /* when its round started (ms, wrapping; names the round) */
} jr__glive;

/* A campaign round started (jr__live.run, oldest first). */
typedef struct jr__round {
    uint64_t group;
    uint64_t start; /* now() */
} jr__round;

/* A quiet leader (jr__live.led). */
typedef struct jr__led {
    jr_group *g;
    uint64_t since; /* now() of the sync that found it quiet */
} jr__led;

/* A member's replica of a group this node leads was reported closed (kept for an election
 * timeout: see "Replicas closed on a live node"). */
typedef struct jr__gone {
    uint64_t group;
    uint64_t peer;
    uint64_t at;      /* now() when the news came */
    uint64_t contact; /* the node-level contact the quiet leader reported for the member when
                         this news woke it (jr__live_contact); 0: the news woke nothing */
} jr__gone;

/* News about one group for one peer, repeated until echoed. */
typedef struct jr__pend {
    uint64_t group;
    uint64_t term; /* 0: tombstone (no longer quiet here) */
    uint64_t commit;
    uint64_t order;    /* push order: the newest entry of a group wins */
    uint64_t sent_seq; /* first heartbeat that carried it (0: not yet) */
} jr__pend;

/* Per peer (jr__peer.live). */
typedef struct jr__plive {
    jr_group **follow; /* groups whose leader is this peer */
    uint32_t nfollow, follow_cap;
    uint32_t nquiet; /* quiet ones among them */
    jr__pend *pend;  /* news for it */
    size_t npend, pend_cap;
    uint64_t pend_order;
    uint8_t pend_unsorted;
    jr__hb_item *out; /* encoding scratch */
    size_t out_cap;
    jr__hb_item *resp; /* echo of the items of its newest NODE_HB */
    size_t nresp, resp_cap;
    uint64_t resp_seq;
    uint8_t resp_unsorted; /* chunks arrived out of order or twice: sort and dedupe first */
    uint8_t owe;           /* an answer is owed (items, or it does not know our incarnation) */
    uint8_t lost;          /* nothing heard for an election timeout */
    uint64_t inc;          /* its incarnation as last seen (0: none yet) */
} jr__plive;

/* Counters (tests and benchmarks read them through jr_node.live). */
typedef struct jr__live_stats {
    uint64_t hb_frames;     /* frames that carried heartbeats (shared with other messages) */
    uint64_t hb_items_sent; /* NODE_HB items sent (listings and tombstones, repeats included) */
    uint64_t resp_items_sent;
    uint64_t items_received; /* NODE_HB and NODE_HB_RESP items received */
    uint64_t peers_lost;
    uint64_t peers_restarted;
    uint64_t lost_wakes;    /* followers told their leader's node was lost or restarted */
    uint64_t tomb_wakes;    /* quiet followers woken by a tombstone */
    uint64_t stalls;        /* heartbeat ticks that ran over two intervals late */
    uint64_t gone_sent;     /* tombstones sent to a leader for a replica closed here */
    uint64_t gone_wakes;    /* quiet leaders woken by a member's replica closing */
    uint64_t prevotes;      /* pre-vote requests sent (one per peer asked) */
    uint64_t votes;         /* vote requests sent (one per peer asked) */
    uint64_t rounds;        /* campaign rounds started (election timers that fired and ran) */
    uint64_t waits;         /* election timers that fired while camp_max rounds ran: queued */
    uint64_t expired;       /* rounds that ran past the round limit: their slot was taken back */
    uint64_t refused;       /* rounds whose slot a refusal gave back */
    uint64_t camp_peak;     /* the most rounds that ran at once */
    uint64_t wait_max;      /* the longest the queue was */
    uint64_t late_hb_resps; /* HEARTBEAT_RESPs that reached a quiet leader (taken as echoes) */
    uint64_t bad_items;     /* items ignored: a term or index out of bounds (jr__raft_wire_ok) */
} jr__live_stats;

/* Per node (jr_node.live). All zero is the valid initial state. */
typedef struct jr__live {
    jr__led *led; /* quiet leaders */
    uint32_t nled, led_cap;
    jr__gone *gone; /* members' replicas reported closed, oldest first */
    size_t ngone, gone_cap;
    uint64_t nquiet;               /* quiet followers, all peers together */
    uint64_t npend;                /* pending entries, all peers together */
    uint64_t nowe;                 /* peers owed an answer */
    uint64_t next;                 /* next heartbeat tick (0: dormant) */
    uint64_t started;              /* last wake-up of the layer: peers count as heard then */
    uint64_t inc;                  /* our incarnation (0 until the layer first runs) */
    uint64_t burst_start, burst_n; /* groups opened within an election timeout of the first */
    /* paced campaigns: rounds running, and the ids of groups waiting for one (a ring; an entry
     * whose group no longer has live.waiting set is skipped) */
    uint32_t ncamp;
    uint32_t camp_max; /* rounds at once (0: JR__LIVE_CAMPAIGNS; tests and benchmarks set it) */
    uint64_t nwait;
    uint64_t *wait;
    size_t wait_head, wait_len, wait_cap;
    jr__round *run; /* rounds started within the last round limit (a ring) */
    size_t run_head, run_len, run_cap;
    uint64_t seq;
    uint8_t skipped;   /* the last heartbeat tick was late and judged no peer */
    uint8_t inc_ready; /* inc is drawn (at the first wake-up of this node's life) */
    jr__live_stats stats;
} jr__live;

/* When the node's heartbeat tick is due: UINT64_MAX while dormant, n->now when it must wake. */
uint64_t jr__live_deadline(const jr_node *n);
/* Runs the heartbeat tick if it is due at n->now: declares silent peers lost and returning
 * ones alive (telling the groups concerned), then sends one heartbeat frame to every peer it
 * has a reason to talk to. Frames that cannot be built (JR_ENOMEM) are skipped and counted as
 * send failures; nothing else can fail. */
void jr__live_tick(jr_node *n);
/* A NODE_HB or NODE_HB_RESP from peer `from` (validated by the frame decoder). Items for groups
 * not open here are echoed with term 0. */
void jr__live_recv(jr_node *n, uint64_t from, const jr__hb_view *v);
/* Puts g in the lists its core's state calls for, and queues the news for its members when it
 * became or stopped being a quiet leader (after every flush of g, and when it opens or
 * reopens); takes a closed g out of them. A reopened replica that was closed while following
 * is woken first; a leader going quiet that was told of a member's closed replica it has not
 * heard from since is woken instead of listed (see "Replicas closed on a live node").
 * JR_ENOMEM growing a list leaves g out of it (a quiet leader then goes untold: its followers
 * keep their timers and, campaigning, wake it). */
void jr__live_sync(jr_group *g);
/* g just became leader: its members on nodes taken for lost are reported lost to its core, so
 * they do not hold its quiescence back (a survivor taking over a lost node's groups would
 * otherwise heartbeat each of them for an election timeout). */
void jr__live_leads(jr_group *g);
/* Takes g out of every list (close, free), telling its members if it was a quiet leader, and
 * its leader if it was a follower closed while the node stays open. Idempotent. */
void jr__live_forget(jr_group *g);
/* The contact to report for the member of leader g whose progress is pr (jr_group_peer's last
 * seen): while g is quiet, contact is node-level (the peer's last frame, or heard if later) for
 * a member the group counted when it went quiet or since (judged by pr->last_contact), unless
 * the peer's node is lost; once g woke, for a member it counted then through its node and that
 * has not answered since (pr->by_node), the peer's last frame as of the wake (no later than
 * pr->last_contact), unless its node is lost; else pr->heard, what the group actually received
 * (0: nothing since it became leader). Never the grace check-quorum gives a member at an
 * election or a wake. If later, the contact kept in a note younger than an election timeout
 * whose news of the member's replica closing woke quiet g (*closed = 1: the replica closed then
 * and has not answered since, so it is not current; else *closed = 0). */
uint64_t jr__live_contact(const jr_group *g, const jr__progress *pr, int *closed);
/* g's election timer is due (it is no leader): 1 if it may campaign now, taking one of the
 * node's camp_max rounds (a round it held ends: its next one queues like any other), or 0 if
 * it must wait: it is queued (live.waiting) and its timer stays off the heap until
 * jr__live_campaigns starts its round or it no longer needs one (jr__live_sync). */
int jr__live_may_campaign(jr_group *g);
/* A (pre-)vote request of g was refused: its round gives its slot back (it may still win, but
 * it sends nothing more). */
void jr__live_refused(jr_group *g);
/* Starts the rounds of waiting groups, oldest first, while fewer than camp_max run; a group
 * that no longer needs one (closed, a leader, its timer restarted) is skipped. Each group
 * started or skipped goes on the ready list. */
void jr__live_campaigns(jr_node *n);
/* Frees the lists (node close). */
void jr__live_free(jr_node *n);

#endif
