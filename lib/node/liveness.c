/*
 * liveness — coalesced heartbeats, peer liveness, quiet-group bookkeeping (contract in
 * liveness.h).
 */
#include <stdlib.h>
#include <string.h>

#include "node/node.h"
#include "util/alloc.h"

/* Lists ---------------------------------------------------------------------------------------*/

static int grow_groups(const jr_allocator *a, jr_group ***arr, uint32_t *cap, uint32_t need)
{
    if (need <= *cap) return 0;
    uint32_t c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    jr_group **p = jr__realloc(a, *arr, (size_t)c * sizeof *p);
    if (!p) return JR_ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

static int grow_items(const jr_allocator *a, jr__hb_item **arr, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    jr__hb_item *p = jr__realloc(a, *arr, c * sizeof *p);
    if (!p) return JR_ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

static void led_remove(jr_node *n, jr_group *g)
{
    uint32_t i = g->live.lead_slot - 1;
    jr_group *last = n->live.led[--n->live.nled];
    n->live.led[i] = last;
    last->live.lead_slot = i + 1;
    g->live.lead_slot = 0;
    if (last != g) n->live.led_unsorted = 1;
}

static void follow_remove(jr_group *g)
{
    jr__plive *pl = &g->live.follow_peer->live;
    uint32_t i = g->live.follow_slot - 1;
    jr_group *last = pl->follow[--pl->nfollow];
    pl->follow[i] = last;
    last->live.follow_slot = i + 1;
    g->live.follow_slot = 0;
    g->live.follow_peer = NULL;
    g->node->live.nfollow--;
    if (g->live.quiet) {
        g->node->live.nquiet--;
        pl->nquiet--;
    }
    g->live.quiet = 0;
}

void jr__live_forget(jr_group *g)
{
    if (g->live.lead_slot) led_remove(g->node, g);
    if (g->live.follow_slot) follow_remove(g);
}

void jr__live_sync(jr_group *g)
{
    jr_node *n = g->node;
    jr__raft *r = g->raft;
    int quiet = !g->closed && jr__raft_quiet(r);
    int leads = quiet && jr__raft_role(r) == JR_LEADER;
    if (leads && !g->live.lead_slot) {
        if (grow_groups(n->alloc, &n->live.led, &n->live.led_cap, n->live.nled + 1) == 0) {
            n->live.led[n->live.nled++] = g;
            g->live.lead_slot = n->live.nled;
            n->live.led_unsorted = 1;
        }
    } else if (!leads && g->live.lead_slot) {
        led_remove(n, g);
    }
    /* a follower (quiet or not) of a known leader: in that peer's follow list */
    jr__peer *leader = NULL;
    if (!g->closed && jr__raft_role(r) != JR_LEADER) {
        leader = jr__peer_find(n, jr__raft_leader(r));
        if (leader && leader->id == n->self) leader = NULL;
    }
    if (g->live.follow_slot && g->live.follow_peer != leader) follow_remove(g);
    if (leader && !g->live.follow_slot) {
        jr__plive *pl = &leader->live;
        if (grow_groups(n->alloc, &pl->follow, &pl->follow_cap, pl->nfollow + 1) == 0) {
            pl->follow[pl->nfollow++] = g;
            g->live.follow_slot = pl->nfollow;
            g->live.follow_peer = leader;
            g->live.listed_at = n->now;
            n->live.nfollow++;
        }
    }
    int qf = g->live.follow_slot && quiet;
    if (qf != g->live.quiet) {
        if (qf) g->live.listed_at = n->now;
        n->live.nquiet += qf ? 1 : (uint64_t)-1;
        g->live.follow_peer->live.nquiet += qf ? 1 : (uint32_t)-1;
        g->live.quiet = (uint8_t)qf;
    }
}

void jr__live_free(jr_node *n)
{
    for (size_t i = 0; i < n->npeers; i++) {
        jr__plive *pl = &n->peers[i]->live;
        jr__free(n->alloc, pl->follow);
        jr__free(n->alloc, pl->out);
        jr__free(n->alloc, pl->resp);
        memset(pl, 0, sizeof *pl);
    }
    for (uint32_t i = 0; i < n->live.nled; i++) n->live.led[i]->live.lead_slot = 0;
    jr__free(n->alloc, n->live.led);
    if (n->live.frame_ready) jr__buf_free(&n->live.frame);
    memset(&n->live, 0, sizeof n->live);
}

/* Receiving -----------------------------------------------------------------------------------*/

void jr__live_recv(jr_node *n, uint64_t from, const jr__hb_view *view)
{
    jr__peer *p = jr__peer_find(n, from);
    if (!p || p->id == n->self) return;
    jr__plive *pl = &p->live;
    jr__hb_view v = *view;
    jr__hb_item it;
    if (v.type == JR__MSG_NODE_HB_RESP) {
        while (jr__hb_next(&v, &it)) {
            n->live.stats.items_received++;
            jr_group *g = jr__map_get(&n->groups, it.group);
            if (g && !g->closed) jr__raft_hb_resp(g->raft, n->now, from, it.term, it.index);
        }
        return;
    }
    pl->hb_at = n->now;
    if (v.seq != pl->hb_seq) {
        /* a new round: answer it instead of any older one not yet answered */
        pl->hb_seq = v.seq;
        pl->nresp = 0;
        pl->resp_unsorted = 0;
    }
    pl->resp_seq = v.seq;
    if (!pl->resp_pending && v.n) {
        pl->resp_pending = 1;
        n->live.npending++;
    }
    if (grow_items(n->alloc, &pl->resp, &pl->resp_cap, pl->nresp + v.n) != 0)
        return; /* the answer loses these items, like a lost frame */
    uint64_t prev = pl->nresp ? pl->resp[pl->nresp - 1].group : 0;
    while (jr__hb_next(&v, &it)) {
        n->live.stats.items_received++;
        jr_group *g = jr__map_get(&n->groups, it.group);
        if (!g || g->closed) continue;
        jr__raft_hb_recv(g->raft, n->now, from, it.term, it.index);
        if (g->live.follow_peer == p) g->live.listed_at = n->now;
        if (it.group <= prev) pl->resp_unsorted = 1;
        prev = it.group;
        pl->resp[pl->nresp++] = (jr__hb_item){it.group, jr__raft_term(g->raft), g->persisted};
    }
}

/* Sending ------------------------------------------------------------------------------------*/

static int cmp_group(const void *a, const void *b)
{
    uint64_t x = (*(jr_group *const *)a)->id, y = (*(jr_group *const *)b)->id;
    return (x > y) - (x < y);
}

/* led in ascending group id (the items of a NODE_HB must be); sorted only after a change. */
static void sort_led(jr_node *n)
{
    if (!n->live.led_unsorted) return;
    qsort(n->live.led, n->live.nled, sizeof *n->live.led, cmp_group);
    for (uint32_t i = 0; i < n->live.nled; i++) n->live.led[i]->live.lead_slot = i + 1;
    n->live.led_unsorted = 0;
}

/* Sorts an answer whose chunks came out of order, dropping duplicates (keeping the last). */
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

/* Distributes the items of every quiet group we lead to the lists of its other members. */
static void build_items(jr_node *n)
{
    for (size_t i = 0; i < n->npeers; i++) n->peers[i]->live.nout = 0;
    sort_led(n);
    for (uint32_t k = 0; k < n->live.nled; k++) {
        jr_group *g = n->live.led[k];
        /* a quiet leader's check-quorum runs here (it has no timer of its own, raft.h); one
         * that steps down is no longer quiet and lists nothing */
        jr__raft_tick(g->raft, n->now);
        const jr__conf *c = jr__raft_conf(g->raft);
        for (uint32_t m = 0; m < c->n; m++) {
            jr__id id = c->m[m].id;
            uint64_t term, commit;
            if (id == n->self || !jr__raft_hb_item(g->raft, id, &term, &commit)) continue;
            jr__peer *p = jr__peer_find(n, id);
            if (!p) continue;
            jr__plive *pl = &p->live;
            if (grow_items(n->alloc, &pl->out, &pl->out_cap, pl->nout + 1) != 0) continue;
            pl->out[pl->nout++] = (jr__hb_item){g->id, term, commit};
        }
    }
}

/* Hands the frame in n->live.frame to the host. */
static void send_frame(jr_node *n, jr__peer *p)
{
    jr__buf *b = &n->live.frame;
    if (jr__frame_end(b) != 0) {
        n->send_failures++;
        return;
    }
    jr_iovec iov = {b->data, b->len};
    n->stats.frames_sent++;
    n->stats.bytes_sent += b->len;
    n->live.stats.hb_frames++;
    if (n->host.send(n->host.ctx, p->name, &iov, 1) != 0) n->send_failures++;
}

/* Appends as much of items[*done..n) as fits the frame as one message of `type`; the frame is
 * sent and a new one begun when not even one more item fits. */
static void put_items(jr_node *n, jr__peer *p, uint8_t type, uint64_t seq, const jr__hb_item *items,
                      size_t count)
{
    jr__buf *b = &n->live.frame;
    size_t done = 0;
    do {
        size_t room = (size_t)n->max_frame - b->len, k = 0, len = 2 + 2 * 10;
        /* as many items as fit (each at most 30 bytes; exact sizes are cheaper to bound) */
        while (done + k < count && len + 30 <= room) {
            len += 30;
            k++;
        }
        if (k == 0 && done < count) {
            send_frame(n, p);
            jr__frame_begin(b, n->self, p->id);
            continue;
        }
        size_t before = b->len;
        jr__frame_add_hb(b, type, seq, items + done, k);
        if (b->err) {
            b->len = before;
            b->err = 0;
            n->send_failures++;
            return;
        }
        done += k;
    } while (done < count);
}

static void send_heartbeats(jr_node *n)
{
    build_items(n);
    uint64_t seq = ++n->live.seq;
    for (size_t i = 0; i < n->npeers; i++) {
        jr__peer *p = n->peers[i];
        if (p->id == n->self) continue;
        jr__plive *pl = &p->live;
        int answer = pl->resp_pending && pl->nresp;
        if (pl->resp_pending) {
            pl->resp_pending = 0;
            n->live.npending--;
        }
        if (pl->nout) {
            pl->linger = n->now + 4 * n->heartbeat_ns;
            if (pl->linger > n->live.linger) n->live.linger = pl->linger;
        }
        /* nothing quiet in common (we neither lead nor follow quiet groups with it) */
        if (!pl->nout && !answer && !pl->nquiet && n->now >= pl->linger) continue;
        /* the NODE_HB goes first even when empty: the peer learns which of its quiet followers
         * we no longer lead */
        jr__frame_begin(&n->live.frame, n->self, p->id);
        put_items(n, p, JR__MSG_NODE_HB, seq, pl->out, pl->nout);
        n->live.stats.hb_items_sent += pl->nout;
        if (answer) {
            if (pl->resp_unsorted) sort_resp(pl);
            put_items(n, p, JR__MSG_NODE_HB_RESP, pl->resp_seq, pl->resp, pl->nresp);
            n->live.stats.resp_items_sent += pl->nresp;
        }
        pl->nresp = 0;
        send_frame(n, p);
    }
}

/* Peer liveness --------------------------------------------------------------------------------*/

static uint64_t stagger_key(uint64_t group, jr__id id)
{
    uint64_t x = group * 0x9e3779b97f4a7c15ULL ^ id;
    return jr__splitmix64(&x);
}

/* When a follower of g should campaign after losing its leader's node `lost`. The voters that
 * can still campaign (this node's view) are ranked by a hash of (group, server), so the groups
 * of a lost node are spread evenly over the survivors. Rank r campaigns at a random point of a
 * window of width w = T/4 / (survivors - 1) starting at r (w + 2 h), h the heartbeat interval,
 * itself one interval after noticing the loss (by when every survivor has noticed it too and
 * stopped refusing votes for the lost leader's lease). Survivors notice a loss at most about an
 * interval apart (their heartbeat ticks have different phases), so consecutive ranks' windows
 * never overlap: the first-ranked survivor normally wins before the next one starts (no split
 * votes), and a thousand groups do not campaign in one tick. With one survivor ranked ahead,
 * the first rank is done within h + T/4 of noticing the loss, noticed within T + h of it. */
static uint64_t stagger(jr_node *n, jr_group *g, const jr__peer *lost)
{
    const jr__conf *c = jr__raft_conf(g->raft);
    uint64_t mine = stagger_key(g->id, n->self), rank = 0, live = 0;
    for (uint32_t k = 0; k < c->n; k++) {
        jr__id id = c->m[k].id;
        if (!c->m[k].voter || id == lost->id) continue;
        if (id != n->self) {
            const jr__peer *q = jr__peer_find(n, id);
            if (!q || q->live.lost) continue;
            if (stagger_key(g->id, id) < mine) rank++;
        }
        live++;
    }
    uint64_t w = n->election_ns / 4 / (live > 1 ? live - 1 : 1);
    return n->heartbeat_ns + rank * (w + 2 * n->heartbeat_ns) + jr__rand_below(&n->rand, w + 1);
}

static void check_peers(jr_node *n)
{
    for (size_t i = 0; i < n->npeers; i++) {
        jr__peer *p = n->peers[i];
        if (p->id == n->self) continue;
        jr__plive *pl = &p->live;
        uint64_t heard = p->last_heard > n->live.started ? p->last_heard : n->live.started;
        if (n->now - heard < n->election_ns) {
            pl->lost = 0;
            /* quiet followers its heartbeats stopped listing: their leader woke, gave up or
             * closed (a node that sends no heartbeats at all is not judged here: it is lost
             * or it leads nothing quietly, and either way its followers hear of it) */
            for (uint32_t k = 0; pl->hb_at && k < pl->nfollow; k++) {
                jr_group *g = pl->follow[k];
                if (!g->live.quiet || !jr__raft_quiet(g->raft)) continue;
                uint64_t since = g->live.listed_at;
                if ((pl->hb_at > since && pl->hb_at - since >= 2 * n->heartbeat_ns) ||
                    n->now - since >= 2 * n->election_ns) {
                    n->live.stats.absent_wakes++;
                    jr__raft_wake(g->raft, n->now);
                }
            }
            continue;
        }
        if (pl->lost) continue;
        pl->lost = 1;
        n->live.stats.peers_lost++;
        jr__node_log(n, JR_LOG_INFO, "peer %s lost: nothing heard for an election timeout",
                     p->name);
        for (uint32_t k = 0; k < pl->nfollow; k++) {
            jr_group *g = pl->follow[k];
            n->live.stats.lost_wakes++;
            jr__raft_peer_lost(g->raft, n->now, p->id, stagger(n, g, p));
        }
    }
}

/* The tick
 * ---------------------------------------------------------------------------------------*/

/* Anything for the layer to do: quiet groups here, or an answer owed. */
static int active(const jr_node *n)
{
    return n->live.nled || n->live.nquiet || n->live.npending || n->now < n->live.linger;
}

uint64_t jr__live_deadline(const jr_node *n)
{
    if (!active(n)) return UINT64_MAX;
    return n->live.next ? n->live.next : n->now;
}

void jr__live_tick(jr_node *n)
{
    if (!active(n)) {
        n->live.next = 0; /* dormant */
        return;
    }
    if (!n->live.next) {
        /* waking up: nobody has had a reason to talk to us meanwhile, so no peer counts as
         * silent from before now */
        n->live.next = n->now;
        n->live.started = n->now;
        if (!n->live.frame_ready) {
            jr__buf_init(&n->live.frame, n->alloc);
            n->live.frame_ready = 1;
        }
    }
    if (n->now < n->live.next) return;
    n->live.next += n->heartbeat_ns;
    if (n->live.next <= n->now) n->live.next = n->now + n->heartbeat_ns;
    check_peers(n);
    send_heartbeats(n);
}
