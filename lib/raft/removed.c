/*
 * removed — a group of two voters whose other voter's server was removed for good.
 *
 * A group whose voters are exactly two needs both for every election and every commit (§3.4,
 * §3.6: a majority of two is two). When the server of one of them is removed from the cluster
 * for good, it stops and its peers refuse its frames, so the group would never elect or commit
 * again, not even the change that moves the replica off the removed server. The node tells
 * the core which servers were removed (jr__raft_peer_removed: the meta group committed the
 * removal and this server refuses the removed one's frames from now on). This replica then
 * stands in for the removed voter: it counts that voter's vote and acknowledgement as given
 * (a quorum of itself alone, or with the observers of (4)) while all of these hold:
 *   (1) the latest configuration has exactly two voters, this replica and the removed one;
 *   (2) this replica is whole: not damaged, not diverged, and, if it restarted, vouched for
 *       as far as a campaign needs (every other voter answered, the removed one as holding
 *       nothing, jr__raft_vouch_gone, and its log reaches the floor they gave; the election
 *       makes it whole, vouch.c);
 *   (3) the configuration in effect at its commit index (committed) has these two voters
 *       alone too, and so has every later one its log holds (not known committed);
 *   (4) the observers of those configurations whose CONFIG entry is of a term up to T0
 *       (this replica's term when it was told of the removal) are all still members, and
 *       each gives its own vote and acknowledgement too: the stand-in's election needs their
 *       votes, a commit their acknowledgements.
 *
 * Why no committed entry is lost. From the moment it was told (term T0) this replica refuses
 * the removed voter A's frames, and A needs this replica's vote to win any term (every
 * configuration A can hold from Lc on has this replica as a voter, as what follows shows), so
 * A leads no term above T0. By (3) the configuration Lc = {A, self} in effect at the commit index
 * is committed, so every later leader holds it (Leader Completeness, §3.6.3), and a configuration
 * after Lc is appended only by a leader of Lc or of a later one (§4.1: one change at a time, the
 * next only once the previous one committed). Under a configuration whose voters are A and this
 * replica alone every commit needs this replica's acknowledgement, and a whole replica holds
 * what it acknowledged; the first change that lets entries commit without it is one A appends
 * while leading such a configuration L, in a term from L's to T0: the promotion of an observer
 * O of L (covered by (4): L was appended after A could last lead, by this replica, or O's own
 * vote is needed; if A committed the promotion, O acknowledged it and what A committed with
 * it, and refuses its vote to this replica, which lacks them; once O voted for this replica
 * its term is above any A leads, so it takes nothing more from A), or the removal of this
 * replica, which a leader makes only when the group's placement dropped this replica's server
 * (docs/internals.md names this limit; a node whose layer places groups does not tell such a
 * replica of a removal, node/group.c jr__group_peer_removed). So this replica's log holds every
 * committed entry, and an election it wins as the stand-in keeps them all; entries A appended that
 * this replica never acknowledged were never committed.
 *
 * Why one leader per term. This replica's own vote goes to itself for the term it stands in
 * (a durable vote, §3.8), and every candidate needs it: A (its configurations all name this
 * replica as a voter) or any other (a leader of L or of a later configuration is elected by a
 * quorum that, by the same argument, contains this replica, or this replica's stand-in, which
 * only this replica uses). A removed server that has not yet learnt of its removal and still
 * takes itself for leader of an older term commits nothing (it needs this replica's
 * acknowledgement) and steps down at its check-quorum.
 *
 * Why only two voters. With 2f voters and f removed, counting the removed ones as given
 * assumes the f remaining replicas together hold every committed entry; a quorum of f + 1
 * could have been the removed f and one remaining replica, so another remaining replica may lack
 * entries only the removed ones and that one hold, and with f >= 2 two remaining replicas can
 * each stand in and lead at once (each counting the removed votes, two leaders in one term). With
 * two voters the remaining replica was in every quorum, and it is the only one that can stand in.
 *
 * Why whole. A damaged replica knows it lost records: entries it acknowledged, or a vote it
 * gave A; standing in could drop committed entries or make two leaders in a term, so it never
 * does, and the group waits. A restarted replica is taken for whole once its
 * vouching allows a campaign, the removed voter's answer being "nothing" (the node declares a
 * removed server gone, lib/node/api_group.c jr__node_peer_gone): what it could have lost
 * without knowing it (an undetected rollback of its disk) is a second fault in the group beside
 * the removal, outside the fault model, as there.
 */
#include "impl.h"

int jr__raft_peer_removed(jr__raft *r, jr__id peer)
{
    if (peer == 0 || peer == r->cfg.self) return JR_EINVAL;
    const uint32_t slots = sizeof r->removed / sizeof r->removed[0];
    uint32_t k = 0;
    while (k < slots && r->removed[k] != peer && r->removed[k] != 0) k++;
    if (k < slots && r->removed[k] == peer) return JR_ENOCHANGE;
    if (k == slots) {
        /* full: members of the latest configuration are kept over other servers (the node
         * tells every group of every removal, so most are servers that never hosted it): a
         * server no member goes first, else the oldest, and a new one that is no member is not
         * kept over members. Forgetting one may only stop a stand-in, never start one wrongly;
         * keeping the partner keeps a standing group led. */
        uint32_t v = 0;
        while (v < slots && jr__conf_find(r->conf, r->removed[v])) v++;
        if (v == slots && !jr__conf_find(r->conf, peer)) return 0;
        if (v == slots) v = 0;
        for (k = v + 1; k < slots; k++) {
            r->removed[k - 1] = r->removed[k];
            r->removed_term[k - 1] = r->removed_term[k];
        }
        k = slots - 1;
    }
    r->removed[k] = peer;
    r->removed_term[k] = r->term;
    uint64_t need;
    if (jr__removed_stand_in(r, &need) >= 0) jr__raft_notify(r);
    return 0;
}

/* The position in conf of the other voter when the voters are exactly two, this replica being
 * one of them; -1 otherwise. */
static int other_voter(const jr__raft *r)
{
    int other = -1, self = 0;
    for (uint32_t i = 0; i < r->conf->n; i++) {
        if (!r->conf->m[i].voter) continue;
        if (r->conf->m[i].id == r->cfg.self)
            self = 1;
        else if (other >= 0)
            return -1;
        else
            other = (int)i;
    }
    return self ? other : -1;
}

/* 1 if the voters of c are exactly this replica and peer. */
static int pair_of(const jr__raft *r, const jr__conf *c, jr__id peer)
{
    uint32_t v = 0;
    int self = 0, other = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        if (!c->m[i].voter) continue;
        v++;
        self |= c->m[i].id == r->cfg.self;
        other |= c->m[i].id == peer;
    }
    return v == 2 && self && other;
}

/* Adds to *need the positions in the latest configuration of c's observers when c, the
 * configuration of an entry of term t (0: not known), is from before the removed voter could
 * last lead (t0): observers it could have promoted. 0, or -1 if one of them is no member of the
 * latest configuration (its word cannot be asked for). */
static int promotable(const jr__raft *r, const jr__conf *c, uint64_t t, uint64_t t0, uint64_t *need)
{
    if (c->n <= 2 || t > t0) return 0;
    for (uint32_t i = 0; i < c->n; i++) {
        if (c->m[i].voter) continue;
        uint32_t x = 0;
        while (x < r->conf->n && r->conf->m[x].id != c->m[i].id) x++;
        if (x == r->conf->n || r->conf->m[x].voter) return -1;
        *need |= 1ULL << x;
    }
    return 0;
}

/* The state, and in *need the observers whose real vote and acknowledgement the stand-in
 * needs besides (positions in the latest configuration). */
static int state(const jr__raft *r, jr__id peer, uint64_t *need)
{
    *need = 0;
    if (peer == 0 || !pair_of(r, r->conf, peer)) return JR__STAND_NOT_PAIR;
    uint32_t k = 0;
    const uint32_t slots = sizeof r->removed / sizeof r->removed[0];
    while (k < slots && r->removed[k] != peer) k++;
    if (k == slots) return JR__STAND_NOT_REMOVED;
    if (r->damaged || r->diverged) return JR__STAND_DAMAGED;
    /* unvouched: only once every other voter answered (the removed one as holding nothing,
     * jr__raft_vouch_gone) and its log reaches the floor they gave, as for a campaign */
    if (r->vouch && !jr__vouch_may_campaign(r)) return JR__STAND_UNVOUCHED;
    uint64_t t0 = r->removed_term[k];
    /* The configuration in effect at the commit index (the newest CONFIG entry at or below it,
     * else the snapshot's, whose entry's term is not known here) ... */
    uint64_t known = r->commit;
    /* the bootstrap entry (index 1, term 1) is on every initial voter from the start, so in
     * every quorum of theirs: as good as committed, even before a leader said so */
    if (known == 0 && r->ncidx && r->cidx[0].index == 1 && jr__memlog_term(&r->log, 1) == 1)
        known = 1;
    uint32_t j = r->ncidx;
    while (j > 0 && r->cidx[j - 1].index > known) j--;
    const jr__conf *lc = j ? r->cidx[j - 1].c : r->snap_conf;
    uint64_t lt = j ? jr__memlog_term(&r->log, r->cidx[j - 1].index) : 0;
    if (!pair_of(r, lc, peer)) return JR__STAND_UNCOMMITTED;
    if (promotable(r, lc, lt, t0, need)) return JR__STAND_OBSERVERS;
    /* ... and every later one, not known committed: each of the two voters alone; the
     * observers of those from before t0 are asked too (a later one of a term above t0 is this
     * replica's own, as the stand-in's leader: the removed one leads no term above) */
    for (; j < r->ncidx; j++) {
        const jr__conf *c = r->cidx[j].c;
        if (!pair_of(r, c, peer)) return JR__STAND_UNCOMMITTED;
        if (promotable(r, c, jr__memlog_term(&r->log, r->cidx[j].index), t0, need))
            return JR__STAND_OBSERVERS;
    }
    return JR__STAND_YES;
}

int jr__raft_stand_in_state(const jr__raft *r, jr__id peer)
{
    uint64_t need;
    return state(r, peer, &need);
}

uint64_t jr__raft_stand_in_observers(const jr__raft *r, jr__id peer)
{
    uint64_t need;
    return state(r, peer, &need) == JR__STAND_YES ? need : 0;
}

uint64_t jr__raft_stand_in_needs(const jr__raft *r)
{
    uint64_t need;
    return jr__removed_stand_in(r, &need) >= 0 ? need : 0;
}

int jr__removed_stand_in(const jr__raft *r, uint64_t *need)
{
    *need = 0;
    if (r->removed[0] == 0) return -1; /* the common case: nothing removed */
    int o = other_voter(r);
    if (o < 0) return -1;
    return state(r, r->conf->m[o].id, need) == JR__STAND_YES ? o : -1;
}
