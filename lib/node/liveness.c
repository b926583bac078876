/*
 * liveness — coalesced heartbeats, peer liveness, quiet-group bookkeeping (contract in
 * liveness.h).
 */
#include <stdlib.h>
#include <string.h>

#include "node/node.h"
#include "util/alloc.h"
#include "util/deadline.h"

/* Growable arrays ------------------------------------------------------------------------------*/

static int grow(const jr_allocator *a, void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *p = jr__realloc(a, *arr, c * size);
    if (!p) return JR_ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

static int grow_groups(const jr_allocator *a, jr_group ***arr, uint32_t *cap, uint32_t need)
{
    size_t c = *cap;
    int rc = grow(a, (void **)arr, &c, need, sizeof **arr);
    *cap = (uint32_t)c;
    return rc;
}

/* News for peers ------------------------------------------------------------------------------*/

static void push(jr_node *n, jr__peer *p, uint64_t group, uint64_t term, uint64_t commit)
{
    jr__plive *pl = &p->live;
    if (grow(n->alloc, (void **)&pl->pend, &pl->pend_cap, pl->npend + 1, sizeof *pl->pend))
        return; /* like a lost frame: a follower keeps its timer, a tombstone's wakes by timer */
    pl->pend[pl->npend++] = (jr__pend){group, term, commit, ++pl->pend_order, 0};
    pl->pend_unsorted = 1;
    n->live.npend++;
}

static int cmp_pend(const void *a, const void *b)
{
    const jr__pend *x = a, *y = b;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* Sorts p's news by group and keeps the newest entry of each. */
static void normalize(jr_node *n, jr__plive *pl)
{
    if (!pl->pend_unsorted) return;
    qsort(pl->pend, pl->npend, sizeof *pl->pend, cmp_pend);
    size_t k = 0;
    for (size_t i = 0; i < pl->npend; i++) {
        if (k && pl->pend[k - 1].group == pl->pend[i].group)
            pl->pend[k - 1] = pl->pend[i];
        else
            pl->pend[k++] = pl->pend[i];
    }
    n->live.npend -= pl->npend - k;
    pl->npend = k;
    pl->pend_unsorted = 0;
}

/* Tells p that quiet leader g is quiet here (if p is one of its other members). */
static void list_to(jr_node *n, jr_group *g, jr__peer *p)
{
    uint64_t term, commit;
    if (jr__raft_hb_item(g->raft, p->id, &term, &commit)) push(n, p, g->id, term, commit);
}

/* Tells every other member of g that it is quiet here (listing) or no longer (tombstone). */
static void tell_members(jr_node *n, jr_group *g, int quiet)
{
    const jr__conf *c = jr__raft_conf(g->raft);
    for (uint32_t k = 0; k < c->n; k++) {
        if (c->m[k].id == n->self) continue;
        jr__peer *p = jr__peer_find(n, c->m[k].id);
        if (!p) continue;
        if (quiet)
            list_to(n, g, p);
        else
            push(n, p, g->id, 0, 0);
    }
}

/* Lists ---------------------------------------------------------------------------------------*/

static void led_remove(jr_node *n, jr_group *g)
{
    uint32_t i = g->live.lead_slot - 1;
    jr__led last = n->live.led[--n->live.nled];
    n->live.led[i] = last;
    last.g->live.lead_slot = i + 1;
    g->live.lead_slot = 0;
}

static void set_quiet(jr_node *n, jr_group *g, int quiet)
{
    if (quiet == g->live.quiet) return;
    n->live.nquiet += quiet ? 1 : (uint64_t)-1;
    g->live.follow_peer->live.nquiet += quiet ? 1 : (uint32_t)-1;
    g->live.quiet = (uint8_t)quiet;
}

static void follow_remove(jr_node *n, jr_group *g)
{
    set_quiet(n, g, 0);
    jr__plive *pl = &g->live.follow_peer->live;
    uint32_t i = g->live.follow_slot - 1;
    jr_group *last = pl->follow[--pl->nfollow];
    pl->follow[i] = last;
    last->live.follow_slot = i + 1;
    g->live.follow_slot = 0;
    g->live.follow_peer = NULL;
}

static void camp_end(jr_node *n, jr_group *g);
static void unwait(jr_node *n, jr_group *g);

void jr__live_forget(jr_group *g)
{
    jr_node *n = g->node;
    camp_end(n, g);
    unwait(n, g);
    if (g->live.lead_slot) {
        led_remove(n, g);
        tell_members(n, g, 0);
    }
    if (g->live.follow_slot) {
        if (g->closed && !n->closing) {
            /* a replica closed on a live node: its leader must stop counting it (liveness.h) */
            push(n, g->live.follow_peer, g->id, 0, JR__LIVE_CLOSED);
            n->live.stats.gone_sent++;
            g->live.gone = 1;
        }
        follow_remove(n, g);
    }
}

/* Members' replicas reported closed ---------------------------------------------------------*/

/* Forgets the notes older than an election timeout. */
static void gone_prune(jr_node *n)
{
    size_t k = 0;
    while (k < n->live.ngone && n->now - n->live.gone[k].at >= n->election_ns) k++;
    if (!k) return;
    memmove(n->live.gone, n->live.gone + k, (n->live.ngone - k) * sizeof *n->live.gone);
    n->live.ngone -= k;
}

static jr__gone *gone_note(jr_node *n, uint64_t group, uint64_t peer)
{
    gone_prune(n);
    if (grow(n->alloc, (void **)&n->live.gone, &n->live.gone_cap, n->live.ngone + 1,
             sizeof *n->live.gone))
        return NULL; /* the leader goes quiet counting the member: as before the news */
    n->live.gone[n->live.ngone] = (jr__gone){group, peer, n->now, 0};
    return &n->live.gone[n->live.ngone++];
}

/* The contact of member `peer` in leader g's progress (UINT64_MAX: not a member). */
static uint64_t member_contact(const jr_group *g, uint64_t peer)
{
    const jr__conf *c = jr__raft_conf(g->raft);
    for (uint32_t i = 0; i < c->n; i++) {
        jr__progress pr;
        if (c->m[i].id == peer && jr__raft_progress(g->raft, i, &pr) == 0) return pr.last_contact;
    }
    return UINT64_MAX;
}

/* Whether quiet leader g counts member p through node-level contact: it did when it went quiet
 * (heard from within an election timeout before) or was told so since (its contact moved on),
 * and p's node is not lost. */
static int counts(const jr_node *n, const jr_group *g, const jr__peer *p, uint64_t contact)
{
    if (p->live.lost) return 0;
    uint64_t since = g->live.lead_slot ? n->live.led[g->live.lead_slot - 1].since : 0;
    return jr__deadline(contact, n->election_ns) > since;
}

/* Member p's replica of leader g is gone (its node closed it, or does not host the group). */
static void member_gone(jr_node *n, jr_group *g, jr__peer *p)
{
    jr__raft *r = g->raft;
    uint64_t contact = member_contact(g, p->id);
    if (contact == UINT64_MAX) return;
    jr__gone *e = gone_note(n, g->id, p->id);
    if (!jr__raft_quiet(r) || !counts(n, g, p, contact)) return;
    /* what the group reported for it until now: its node's contact, as of the news */
    if (e) e->contact = p->last_heard < n->now ? p->last_heard : n->now;
    n->live.stats.gone_wakes++;
    jr__raft_peer_lost(r, n->now, p->id, 0); /* no longer in the quorum (may step down) */
    jr__raft_wake(r, n->now);                /* per-group contact judges it from now on */
}

/* g is going quiet as a leader: a member reported gone within an election timeout and not
 * heard from since would be counted through its node: wake g instead (liveness.h). */
static void heed_gone(jr_node *n, jr_group *g)
{
    gone_prune(n);
    for (size_t k = 0; k < n->live.ngone; k++) {
        const jr__gone *e = &n->live.gone[k];
        if (e->group != g->id) continue;
        uint64_t contact = member_contact(g, e->peer);
        /* heard from since, or silent long enough for the core to take it for down */
        if (contact == UINT64_MAX || contact > e->at ||
            jr__deadline(contact, n->election_ns) <= n->now)
            continue;
        n->live.stats.gone_wakes++;
        jr__raft_peer_lost(g->raft, n->now, e->peer, 0);
        jr__raft_wake(g->raft, n->now);
        /* the note is spent: the core takes the member for lost until it answers, and going
         * quiet again it keeps it so; a note kept would wake the group each time it goes quiet,
         * at once and at the same instant, until the note expires (a node spinning at now) */
        memmove(n->live.gone + k, n->live.gone + k + 1,
                (n->live.ngone - k - 1) * sizeof *n->live.gone);
        n->live.ngone--;
        return;
    }
}

/* A group just opened: spread its first campaign by the size of the burst it opened in. */
static void first_sync(jr_node *n, jr_group *g)
{
    g->live.opened = 1;
    if (n->now - n->live.burst_start > n->election_ns) {
        n->live.burst_start = n->now;
        n->live.burst_n = 0;
    }
    uint64_t spread = n->live.burst_n++ * JR__LIVE_CAMPAIGN_NS;
    if (spread) jr__raft_defer_campaign(g->raft, n->now, jr__rand_below(&n->rand, spread));
}

void jr__live_sync(jr_group *g)
{
    jr_node *n = g->node;
    jr__raft *r = g->raft;
    if (!g->live.opened && !g->closed) first_sync(n, g);
    if (g->live.camp && (g->closed || jr__raft_role(r) != JR_CANDIDATE)) camp_end(n, g);
    /* no longer needs a round: closed, won, heard from a leader or voted (its timer restarted) */
    if (g->live.waiting &&
        (g->closed || jr__raft_role(r) == JR_LEADER || jr__raft_deadline(r) > n->now))
        unwait(n, g);
    if (g->live.gone && !g->closed) {
        /* reopened after closing while it followed: the leader may take it for down and no
         * longer talk to it; its election timer brings them back together */
        g->live.gone = 0;
        jr__raft_wake(r, n->now);
    }
    if (!g->closed && !g->live.lead_slot && n->live.ngone && jr__raft_quiet(r) &&
        jr__raft_role(r) == JR_LEADER)
        heed_gone(n, g);
    int quiet = !g->closed && jr__raft_quiet(r);
    int role = jr__raft_role(r);
    int leads = quiet && role == JR_LEADER;
    if (leads && !g->live.lead_slot) {
        size_t cap = n->live.led_cap;
        if (grow(n->alloc, (void **)&n->live.led, &cap, n->live.nled + 1, sizeof *n->live.led) ==
            0) {
            n->live.led_cap = (uint32_t)cap;
            n->live.led[n->live.nled++] = (jr__led){g, n->now};
            g->live.lead_slot = n->live.nled;
            tell_members(n, g, 1);
        }
    } else if (!leads && g->live.lead_slot) {
        led_remove(n, g);
        tell_members(n, g, 0);
    }
    /* a follower (quiet or not) of a known leader: in that peer's follow list */
    jr__peer *leader = NULL;
    if (!g->closed && role != JR_LEADER) {
        leader = jr__peer_find(n, jr__raft_leader(r));
        if (leader && leader->id == n->self) leader = NULL;
    }
    if (g->live.follow_slot && g->live.follow_peer != leader) follow_remove(n, g);
    if (leader && !g->live.follow_slot) {
        jr__plive *pl = &leader->live;
        if (grow_groups(n->alloc, &pl->follow, &pl->follow_cap, pl->nfollow + 1) == 0) {
            pl->follow[pl->nfollow++] = g;
            g->live.follow_slot = pl->nfollow;
            g->live.follow_peer = leader;
        }
    }
    if (g->live.follow_slot) set_quiet(n, g, quiet);
}

void jr__live_leads(jr_group *g)
{
    jr_node *n = g->node;
    const jr__conf *c = jr__raft_conf(g->raft);
    for (uint32_t k = 0; k < c->n; k++) {
        const jr__peer *p = c->m[k].id == n->self ? NULL : jr__peer_find(n, c->m[k].id);
        /* the flag is judged at heartbeat ticks, which stop while the layer is dormant: a peer
         * heard from since does not count as lost */
        if (p && p->live.lost && n->now - p->last_heard >= n->election_ns)
            jr__raft_peer_lost(g->raft, n->now, p->id, 0);
    }
}

/* The contact to report for member `peer` of g kept by the newest note whose news woke g, within
 * an election timeout; 0: none. */
static uint64_t gone_contact(const jr_node *n, const jr_group *g, uint64_t peer)
{
    uint64_t c = 0;
    for (size_t k = 0; k < n->live.ngone; k++) {
        const jr__gone *e = &n->live.gone[k];
        if (e->group == g->id && e->peer == peer && n->now - e->at < n->election_ns &&
            e->contact > c)
            c = e->contact;
    }
    return c;
}

static uint64_t live_contact(const jr_group *g, const jr__progress *pr, const jr__peer *p)
{
    uint64_t heard = pr->heard;
    uint64_t node = p->last_heard;
    if (jr__raft_quiet(g->raft)) {
        if (!counts(g->node, g, p, pr->last_contact)) return heard;
    } else {
        /* woken (or told its node is back) and not answered since: its node's contact as of
         * then stands in, and ages from there */
        if (!pr->by_node || p->live.lost) return heard;
        if (node > pr->last_contact) node = pr->last_contact;
    }
    return node > heard ? node : heard;
}

uint64_t jr__live_contact(const jr_group *g, const jr__progress *pr, int *closed)
{
    *closed = 0;
    if (jr__raft_role(g->raft) != JR_LEADER) return pr->heard;
    const jr__peer *p = jr__peer_find(g->node, pr->id);
    if (!p || p->id == g->node->self) return pr->heard;
    uint64_t c = live_contact(g, pr, p);
    /* its replica closed, which woke us, and it has not answered since (liveness.h) */
    uint64_t gone = gone_contact(g->node, g, p->id);
    if (gone <= c) return c;
    *closed = 1;
    return gone;
}

void jr__live_free(jr_node *n)
{
    for (size_t i = 0; i < n->npeers; i++) {
        jr__plive *pl = &n->peers[i]->live;
        jr__free(n->alloc, pl->follow);
        jr__free(n->alloc, pl->pend);
        jr__free(n->alloc, pl->out);
        jr__free(n->alloc, pl->resp);
        memset(pl, 0, sizeof *pl);
    }
    for (uint32_t i = 0; i < n->live.nled; i++) n->live.led[i].g->live.lead_slot = 0;
    jr__free(n->alloc, n->live.led);
    jr__free(n->alloc, n->live.gone);
    jr__free(n->alloc, n->live.wait);
    jr__free(n->alloc, n->live.run);
    memset(&n->live, 0, sizeof n->live);
}

/* Paced campaigns ----------------------------------------------------------------------------*/

static uint32_t camp_max(const jr_node *n)
{
    return n->live.camp_max ? n->live.camp_max : JR__LIVE_CAMPAIGNS;
}

static uint32_t ms_of(uint64_t ns)
{
    return (uint32_t)(ns / 1000000u);
}

/* How long a round holds its slot at most: a round nobody answers (its other voters down or cut
 * off) gives it back after a quarter election timeout instead of holding it until its timer
 * fires again. */
static uint64_t round_limit(const jr_node *n)
{
    return n->election_ns / 4;
}

static void camp_end(jr_node *n, jr_group *g)
{
    if (!g->live.camp) return;
    g->live.camp = 0;
    n->live.ncamp--;
}

/* Makes room for one more element of `size` bytes in a FIFO ring of len elements from *head:
 * doubles it when full, oldest first at 0. 0 or JR_ENOMEM (the ring unchanged). */
static int ring_room(const jr_allocator *a, void **ring, size_t *head, size_t len, size_t *cap,
                     size_t size)
{
    if (len < *cap) return 0;
    size_t c = *cap ? *cap * 2 : 256;
    uint8_t *w = jr__malloc(a, c * size);
    if (!w) return JR_ENOMEM;
    for (size_t k = 0; k < len; k++)
        memcpy(w + k * size, (uint8_t *)*ring + (*head + k) % *cap * size, size);
    jr__free(a, *ring);
    *ring = w;
    *cap = c;
    *head = 0;
    return 0;
}

static void camp_start(jr_node *n, jr_group *g)
{
    jr__live *l = &n->live;
    g->live.camp = 1;
    g->live.camp_ms = ms_of(n->now);
    l->ncamp++;
    l->stats.rounds++;
    if (l->ncamp > l->stats.camp_peak) l->stats.camp_peak = l->ncamp;
    if (ring_room(n->alloc, (void **)&l->run, &l->run_head, l->run_len, &l->run_cap,
                  sizeof *l->run))
        return; /* its slot then lasts until the round ends */
    l->run[(l->run_head + l->run_len++) % l->run_cap] = (jr__round){g->id, n->now};
}

/* Takes back the slots of rounds that ran past round_limit (their groups keep campaigning). */
static void camp_expire(jr_node *n)
{
    jr__live *l = &n->live;
    uint64_t limit = round_limit(n);
    while (l->run_len && jr__deadline(l->run[l->run_head].start, limit) <= n->now) {
        jr__round e = l->run[l->run_head];
        l->run_head = (l->run_head + 1) % l->run_cap;
        l->run_len--;
        jr_group *g = jr__map_get(&n->groups, e.group);
        if (!g || !g->live.camp || g->live.camp_ms != ms_of(e.start)) continue; /* ended */
        camp_end(n, g);
        l->stats.expired++;
    }
}

/* Its entry in the ring stays, skipped when it comes up. */
static void unwait(jr_node *n, jr_group *g)
{
    if (!g->live.waiting) return;
    g->live.waiting = 0;
    n->live.nwait--;
    if (!n->live.nwait) n->live.wait_head = n->live.wait_len = 0; /* only skipped entries left */
}

/* Appends id to the ring. 0 or JR_ENOMEM. */
static int wait_push(jr_node *n, uint64_t id)
{
    jr__live *l = &n->live;
    if (ring_room(n->alloc, (void **)&l->wait, &l->wait_head, l->wait_len, &l->wait_cap,
                  sizeof *l->wait))
        return JR_ENOMEM;
    l->wait[(l->wait_head + l->wait_len++) % l->wait_cap] = id;
    return 0;
}

void jr__live_refused(jr_group *g)
{
    if (!g->live.camp) return;
    camp_end(g->node, g);
    g->node->live.stats.refused++;
}

int jr__live_may_campaign(jr_group *g)
{
    jr_node *n = g->node;
    jr__live *l = &n->live;
    camp_end(n, g); /* a candidate's next round queues like anyone's first */
    if (g->live.waiting) return 0;
    if (!l->nwait && l->ncamp < camp_max(n)) {
        camp_start(n, g);
        return 1;
    }
    if (wait_push(n, g->id) != 0) return 1; /* out of memory: campaigns unpaced, as in plain Raft */
    g->live.waiting = 1;
    l->nwait++;
    l->stats.waits++;
    if (l->nwait > l->stats.wait_max) l->stats.wait_max = l->nwait;
    return 0;
}

void jr__live_campaigns(jr_node *n)
{
    jr__live *l = &n->live;
    if (l->run_len) camp_expire(n);
    while (l->nwait && l->ncamp < camp_max(n)) {
        uint64_t id = l->wait[l->wait_head];
        l->wait_head = (l->wait_head + 1) % l->wait_cap;
        l->wait_len--;
        jr_group *g = jr__map_get(&n->groups, id);
        if (!g || !g->live.waiting) continue;
        unwait(n, g);
        jr__raft *r = g->raft;
        if (!g->closed && jr__raft_role(r) != JR_LEADER && jr__raft_deadline(r) <= n->now) {
            camp_start(n, g);
            jr__raft_tick(r, n->now);
        }
        jr__group_ready(g); /* its flush arms its timer again */
    }
}

/* Peer events --------------------------------------------------------------------------------*/

/* When a follower of g should campaign after losing its leader's node `lost`. The voters that
 * can still campaign (this node's view) are ranked by jr__raft_ahead (a hash of (group,
 * server)), so the groups of a lost node are spread evenly over the survivors. Rank r campaigns at
 * a random point of a window of width w = T/4 / (survivors - 1) starting at r (w + 2 h), h the
 * heartbeat interval, itself one interval after noticing the loss (by when every survivor has
 * noticed it too and stopped refusing votes for the lost leader's lease). Survivors notice a loss
 * at most about an interval apart (their heartbeat ticks have different phases), so consecutive
 * ranks' windows never overlap: the first-ranked survivor normally wins before the next one starts
 * (no split votes), and a thousand groups do not campaign in one tick (a round the pacing window
 * starts late may overlap the next rank's: the pre-vote's tie-break, jr__raft_ahead, settles that
 * in a three-replica group).
 * With one survivor ranked ahead, the first rank is done within h + T/4 of noticing the loss,
 * noticed within T + h of it. */
static uint64_t stagger(jr_node *n, jr_group *g, const jr__peer *lost)
{
    const jr__conf *c = jr__raft_conf(g->raft);
    uint64_t rank = 0, live = 0;
    for (uint32_t k = 0; k < c->n; k++) {
        jr__id id = c->m[k].id;
        if (!c->m[k].voter || id == lost->id) continue;
        if (id != n->self) {
            const jr__peer *q = jr__peer_find(n, id);
            if (!q || q->live.lost) continue;
            if (jr__raft_ahead(g->id, id, n->self)) rank++;
        }
        live++;
    }
    uint64_t w = n->election_ns / 4 / (live > 1 ? live - 1 : 1);
    return n->heartbeat_ns + rank * (w + 2 * n->heartbeat_ns) + jr__rand_below(&n->rand, w + 1);
}

/* p's node is gone, or came back without its state: the groups following it campaign. */
static void followers_lose(jr_node *n, jr__peer *p)
{
    jr__plive *pl = &p->live;
    for (uint32_t k = 0; k < pl->nfollow; k++) {
        jr_group *g = pl->follow[k];
        n->live.stats.lost_wakes++;
        jr__raft_peer_lost(g->raft, n->now, p->id, stagger(n, g, p));
    }
}

/* p's node is back (or new): our quiet leaders count it again and tell it again. */
static void leaders_regain(jr_node *n, jr__peer *p)
{
    for (uint32_t k = 0; k < n->live.nled; k++) {
        jr_group *g = n->live.led[k].g;
        jr__raft_peer_alive(g->raft, n->now, p->id);
        list_to(n, g, p);
    }
}

static void check_peers(jr_node *n)
{
    for (size_t i = 0; i < n->npeers; i++) {
        jr__peer *p = n->peers[i];
        if (p->id == n->self) continue;
        jr__plive *pl = &p->live;
        uint64_t heard = p->last_heard > n->live.started ? p->last_heard : n->live.started;
        int silent = n->now - heard >= n->election_ns;
        if (silent && !pl->lost) {
            pl->lost = 1;
            n->live.stats.peers_lost++;
            jr__node_log(n, JR_LOG_INFO, "peer %s lost: nothing heard for an election timeout",
                         p->name);
            followers_lose(n, p);
            for (uint32_t k = 0; k < n->live.nled; k++)
                jr__raft_peer_lost(n->live.led[k].g->raft, n->now, p->id, 0);
        } else if (!silent && pl->lost) {
            pl->lost = 0;
            jr__node_log(n, JR_LOG_INFO, "peer %s is back", p->name);
            leaders_regain(n, p);
        }
    }
}

/* Receiving -----------------------------------------------------------------------------------*/

static void owe(jr_node *n, jr__plive *pl)
{
    if (pl->owe) return;
    pl->owe = 1;
    n->live.nowe++;
}

static void recv_hb(jr_node *n, jr__peer *p, jr__hb_view v)
{
    jr__plive *pl = &p->live;
    uint64_t inc = v.seq >> 32;
    if (inc != pl->inc) {
        if (pl->inc) {
            /* it restarted: the groups it led lost their leader, and its replicas are new */
            n->live.stats.peers_restarted++;
            jr__node_log(n, JR_LOG_INFO, "peer %s restarted", p->name);
            followers_lose(n, p);
            leaders_regain(n, p);
        }
        pl->inc = inc;
        owe(n, pl); /* it learns our incarnation from the answer */
    }
    if (!v.n) return;
    if (v.seq != pl->resp_seq) {
        pl->resp_seq = v.seq; /* a newer round: echo it rather than an older one */
        pl->nresp = 0;
        pl->resp_unsorted = 0;
    }
    owe(n, pl);
    if (grow(n->alloc, (void **)&pl->resp, &pl->resp_cap, pl->nresp + v.n, sizeof *pl->resp))
        return; /* no echo: the sender repeats the items */
    uint64_t prev = pl->nresp ? pl->resp[pl->nresp - 1].group : 0;
    jr__hb_item it;
    while (jr__hb_next(&v, &it)) {
        n->live.stats.items_received++;
        jr_group *g = jr__map_get(&n->groups, it.group);
        jr__hb_item echo = {it.group, 0, 0};
        if (g && !g->closed) {
            jr__raft *r = g->raft;
            if (it.term && !jr__raft_wire_ok(r, it.term, it.index)) {
                n->live.stats.bad_items++; /* a term or commit out of bounds: ignored */
            } else if (it.term) {
                jr__raft_hb_recv(r, n->now, p->id, it.term, it.index);
            } else if (it.index == JR__LIVE_CLOSED) {
                if (jr__raft_role(r) == JR_LEADER) member_gone(n, g, p); /* its replica closed */
            } else if (jr__raft_quiet(r) && jr__raft_role(r) != JR_LEADER &&
                       jr__raft_leader(r) == p->id) {
                n->live.stats.tomb_wakes++;
                jr__raft_wake(r, n->now); /* its leader is no longer quiet */
            }
            echo.term = jr__raft_term(r);
            echo.index = g->persisted;
        }
        if (it.group <= prev) pl->resp_unsorted = 1;
        prev = it.group;
        pl->resp[pl->nresp++] = echo;
    }
}

/* Index of group in p's (normalized) news, or npend. */
static size_t pend_find(const jr__plive *pl, uint64_t group)
{
    size_t lo = 0, hi = pl->npend;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pl->pend[mid].group < group)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < pl->npend && pl->pend[lo].group == group ? lo : pl->npend;
}

/* 1 if g is still a quiet leader here with p among its other members: a listing to p that p's
 * node echoed without hosting the group (term 0) is then repeated until it does ("Listings to a
 * node without the replica", liveness.h). */
static int still_listed(jr_group *g, const jr__peer *p)
{
    uint64_t term, commit;
    return jr__raft_role(g->raft) == JR_LEADER && jr__raft_quiet(g->raft) &&
           jr__raft_hb_item(g->raft, p->id, &term, &commit);
}

static void recv_resp(jr_node *n, jr__peer *p, jr__hb_view v)
{
    jr__plive *pl = &p->live;
    int ours = v.seq >> 32 == n->live.inc; /* an echo of this incarnation's heartbeat */
    normalize(n, pl);
    size_t dropped = 0;
    jr__hb_item it;
    while (jr__hb_next(&v, &it)) {
        n->live.stats.items_received++;
        size_t k = ours ? pend_find(pl, it.group) : pl->npend;
        jr_group *g = jr__map_get(&n->groups, it.group);
        if (k < pl->npend && pl->pend[k].sent_seq && pl->pend[k].sent_seq <= v.seq &&
            !(pl->pend[k].term && !it.term && g && !g->closed && still_listed(g, p))) {
            pl->pend[k].group = 0; /* told: dropped below */
            dropped++;
        }
        if (!g || g->closed) continue;
        if (it.term && !jr__raft_wire_ok(g->raft, it.term, it.index))
            n->live.stats.bad_items++; /* a term or match out of bounds: ignored */
        else if (it.term)
            jr__raft_hb_resp(g->raft, n->now, p->id, it.term, it.index);
        else if (jr__raft_role(g->raft) == JR_LEADER)
            member_gone(n, g, p); /* its node does not host the group */
    }
    if (!dropped) return;
    size_t k = 0;
    for (size_t i = 0; i < pl->npend; i++)
        if (pl->pend[i].group) pl->pend[k++] = pl->pend[i];
    pl->npend = k;
    n->live.npend -= dropped;
}

void jr__live_recv(jr_node *n, uint64_t from, const jr__hb_view *view)
{
    jr__peer *p = jr__peer_find(n, from);
    if (!p || p->id == n->self) return;
    if (view->type == JR__MSG_NODE_HB)
        recv_hb(n, p, *view);
    else
        recv_resp(n, p, *view);
}

/* Sending ------------------------------------------------------------------------------------*/

/* Sorts an echo whose chunks came out of order, dropping duplicates (keeping the last). */
static void sort_resp(jr__plive *pl)
{
    jr__hb_sort(pl->resp, pl->nresp);
    size_t k = 0;
    for (size_t i = 0; i < pl->nresp; i++) {
        if (k && pl->resp[k - 1].group == pl->resp[i].group)
            pl->resp[k - 1] = pl->resp[i];
        else
            pl->resp[k++] = pl->resp[i];
    }
    pl->nresp = k;
    pl->resp_unsorted = 0;
}

/* An echo was taken when its heartbeat came: a replica closed since must not be answered for
 * (its leader would count it again). */
static void drop_closed(jr_node *n, jr__plive *pl)
{
    for (size_t k = 0; k < pl->nresp; k++) {
        jr__hb_item *it = &pl->resp[k];
        if (!it->term) continue;
        jr_group *g = jr__map_get(&n->groups, it->group);
        if (!g || g->closed) it->term = it->index = 0;
    }
}

/* Appends items as messages of `type` to p's frames (jr__peer_frame: heartbeats travel with
 * every other message for p, and leave with them at the end of the flush), as many per message
 * as fit the frame, opening new frames (same seq) for the rest. *last is the frame the previous
 * message went to: hb_frames counts each frame once. */
static void put_items(jr_node *n, jr__peer *p, uint8_t type, uint64_t seq, const jr__hb_item *items,
                      size_t count, const jr__buf **last)
{
    /* an item is at most three 10-byte varints, the message's own fields two more */
    const size_t fixed = 2 + 2 * 10, item = 30;
    size_t done = 0;
    do {
        size_t left = count - done;
        size_t need = fixed + (left ? item : 0);
        jr__buf *b = jr__peer_frame(n, p, need);
        if (!b) {
            n->send_failures++;
            return;
        }
        size_t room = (size_t)n->max_frame - b->len;
        size_t k = room > fixed ? (room - fixed) / item : 0;
        if (k > left) k = left;
        size_t before = b->len;
        jr__frame_add_hb(b, type, seq, items + done, k);
        if (b->err) {
            jr__peer_frame_undo(p, b, before);
            n->send_failures++;
            return;
        }
        if (b != *last) n->live.stats.hb_frames++;
        *last = b;
        done += k;
    } while (done < count);
}

static void send_heartbeats(jr_node *n)
{
    for (size_t i = 0; i < n->npeers; i++) {
        jr__peer *p = n->peers[i];
        if (p->id == n->self) continue;
        jr__plive *pl = &p->live;
        /* reasons to talk: it needs our liveness (we lead quiet groups, possibly with it) or
         * we need its (we quietly follow its groups), news, or an answer owed */
        if (!n->live.nled && !pl->nquiet && !pl->npend && !pl->owe) continue;
        uint64_t seq = n->live.inc << 32 | (++n->live.seq & 0xffffffffu);
        normalize(n, pl);
        /* a lost peer answers nothing: its news waits until it is heard from again (else every
         * group that changed while it was down would be encoded again every interval), but for
         * its first item, a probe: a peer that is up and merely had nothing to tell us (so we
         * took it for lost) answers an item, never an empty heartbeat, and is then heard again
         * and told the rest (leaders_regain) */
        size_t items = pl->lost && pl->npend ? 1 : pl->npend;
        if (grow(n->alloc, (void **)&pl->out, &pl->out_cap, items, sizeof *pl->out)) continue;
        for (size_t k = 0; k < items; k++) {
            jr__pend *e = &pl->pend[k];
            pl->out[k] = (jr__hb_item){e->group, e->term, e->commit};
            if (!e->sent_seq) e->sent_seq = seq;
        }
        const jr__buf *last = NULL;
        put_items(n, p, JR__MSG_NODE_HB, seq, pl->out, items, &last);
        n->live.stats.hb_items_sent += items;
        if (pl->owe && pl->nresp) {
            if (pl->resp_unsorted) sort_resp(pl);
            drop_closed(n, pl);
            put_items(n, p, JR__MSG_NODE_HB_RESP, pl->resp_seq, pl->resp, pl->nresp, &last);
            n->live.stats.resp_items_sent += pl->nresp;
        }
        if (pl->owe) n->live.nowe--;
        pl->owe = 0;
        pl->nresp = 0;
    }
}

/* The tick
 * ---------------------------------------------------------------------------------------*/

/* Anything for the layer to do: quiet groups here, news, or an answer owed. */
static int active(const jr_node *n)
{
    return n->live.nled || n->live.nquiet || n->live.npend || n->live.nowe;
}

uint64_t jr__live_deadline(const jr_node *n)
{
    uint64_t d = UINT64_MAX;
    if (n->live.nwait) {
        if (n->live.ncamp < camp_max(n)) return n->now; /* a round to start */
        if (n->live.run_len) d = jr__deadline(n->live.run[n->live.run_head].start, round_limit(n));
    }
    if (!active(n)) return d;
    uint64_t hb = n->live.next ? n->live.next : n->now;
    return hb < d ? hb : d;
}

void jr__live_tick(jr_node *n)
{
    if (!active(n)) {
        n->live.next = 0; /* dormant */
        return;
    }
    if (!n->live.next) {
        /* waking up: nobody had a reason to talk to us meanwhile, so no peer counts as silent
         * from before now */
        n->live.next = n->now;
        n->live.started = n->now;
        if (!n->live.inc_ready) {
            n->live.inc_ready = 1;
            /* a restart must not reuse it, even with the same seed: the clock differs */
            uint64_t x = jr__rand_next(&n->rand) ^ n->now;
            n->live.inc = 1 + jr__splitmix64(&x) % 0xfffffffeu;
        }
    }
    if (n->now < n->live.next) return;
    int stalled = n->now - n->live.next > 2 * n->heartbeat_ns;
    n->live.next += n->heartbeat_ns;
    if (n->live.next <= n->now) n->live.next = jr__deadline(n->now, n->heartbeat_ns);
    if (n->live.ngone) gone_prune(n);
    if (stalled && !n->live.skipped) {
        /* we were stalled (busy, or the host did not call us): what peers sent meanwhile may
         * not have been handed to us yet, so this tick judges nobody; the next one does,
         * however late it is (a host late at every tick must still notice a lost peer) */
        n->live.skipped = 1;
        n->live.stats.stalls++;
    } else {
        n->live.skipped = 0;
        check_peers(n);
    }
    send_heartbeats(n);
}
