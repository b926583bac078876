/*
 * fsmreport — a follower's word on its replicas' state machines, to their leaders.
 *
 * A replica whose state machine failed (an apply or a snapshot restore that failed, a stream
 * store that failed a read or a sync) or is being rebuilt from its peers still has a whole Raft
 * log: it acknowledges entries like any follower, so its leader's progress alone would show it
 * current. Its node therefore tells the group's leader, in an FSM extension message
 * (wire/frame.h JR__EXT_FSM) in that leader's next frame, at the tick after the state changed
 * and again every heartbeat interval while it is not whole; the leader's core keeps the word in
 * the member's progress (raft.h jr__raft_fsm_report), and its reports (jr_group_peer, stream
 * and consumer info, health checks) take a word not renewed within an election timeout for
 * none. When the state machine is whole again the node says so at the next tick and twice more
 * (a lost frame costs a heartbeat, not an election timeout), then forgets the group.
 *
 * Cost: nothing at all while every state machine is whole — no list entry, no deadline, no
 * byte on the wire, no allocation. With k groups listed, one message per leader's node per
 * heartbeat interval of a few bytes per group; the items are gathered into a node buffer that
 * is kept (it grows to the most groups listed at once).
 *
 * Invariants: g->fsm_listed iff g is on n->fsm_list; a listed group is reported every interval
 * (n->fsmr_next is then finite); an unlisted group's reported state is whole.
 */
#include <string.h>

#include "node/node.h"
#include "util/alloc.h"
#include "util/deadline.h"
#include "wire/frame.h"

/* Reports of a whole state machine sent before the group leaves the list. */
#define CLEARS 3

uint8_t jr__group_fsm(const jr_group *g)
{
    return g->fsm_failed ? JR__FSM_FAILED : g->fsm_state;
}

void jr__fsmr_changed(jr_group *g)
{
    jr_node *n = g->node;
    g->fsm_clears = CLEARS;
    if (!g->fsm_listed) {
        if (jr__group_fsm(g) == JR__FSM_WHOLE) return; /* never said otherwise: nothing to undo */
        g->fsm_listed = 1;
        g->fsm_next = n->fsm_list;
        n->fsm_list = g;
    }
    n->fsmr_next = n->now; /* told at this tick, or the next */
    jr__node_want_tick(n);
}

void jr__group_set_fsm_state(jr_group *g, int state)
{
    if (!g || state < JR__FSM_WHOLE || state > JR__FSM_REBUILDING || g->fsm_state == state) return;
    g->fsm_state = (uint8_t)state;
    jr__fsmr_changed(g);
}

void jr__fsmr_forget(jr_group *g)
{
    if (!g->fsm_listed) return;
    jr_node *n = g->node;
    for (jr_group **pp = &n->fsm_list; *pp; pp = &(*pp)->fsm_next) {
        if (*pp == g) {
            *pp = g->fsm_next;
            break;
        }
    }
    g->fsm_listed = 0;
    g->fsm_next = NULL;
}

void jr__fsmr_free(jr_node *n)
{
    for (jr_group *g = n->fsm_list, *next; g; g = next) {
        next = g->fsm_next;
        g->fsm_listed = 0;
        g->fsm_next = NULL;
    }
    n->fsm_list = NULL;
    jr__free(n->alloc, n->fsmr_items);
    n->fsmr_items = NULL;
    n->fsmr_cap = 0;
}

uint64_t jr__fsmr_deadline(const jr_node *n)
{
    return n->fsm_list ? n->fsmr_next : UINT64_MAX;
}

/* Orders the gathered items by leader, then group: each leader's run becomes its messages. */
static int by_leader(const jr__fsm_item *a, jr__id la, const jr__fsm_item *b, jr__id lb)
{
    if (la != lb) return la < lb ? -1 : 1;
    return (a->group > b->group) - (a->group < b->group);
}

/* Insertion sort of items with their leaders alongside (the list is short: the groups whose
 * state machine is not whole). */
static void sort_items(jr__fsm_item *it, jr__id *ld, size_t k)
{
    for (size_t i = 1; i < k; i++) {
        jr__fsm_item x = it[i];
        jr__id l = ld[i];
        size_t j = i;
        for (; j > 0 && by_leader(&it[j - 1], ld[j - 1], &x, l) > 0; j--) {
            it[j] = it[j - 1];
            ld[j] = ld[j - 1];
        }
        it[j] = x;
        ld[j] = l;
    }
}

/* Appends items (one leader's, sorted) to p's frames, as many per message as fit. */
static void put_items(jr_node *n, jr__peer *p, const jr__fsm_item *items, size_t count)
{
    size_t done = 0;
    while (done < count) {
        jr__buf *b = jr__peer_frame(n, p, jr__frame_fsm_len(items + done, 1));
        if (!b) {
            n->send_failures++;
            return;
        }
        size_t k = jr__frame_fsm_fit((size_t)n->max_frame - b->len);
        if (k == 0) k = 1; /* jr__peer_frame left room for one */
        if (k > count - done) k = count - done;
        size_t before = b->len;
        jr__frame_add_fsm(b, items + done, k);
        if (b->err) {
            jr__peer_frame_undo(p, b, before);
            n->send_failures++;
            return;
        }
        done += k;
    }
}

void jr__fsmr_tick(jr_node *n)
{
    if (!n->fsm_list || n->now < n->fsmr_next) return;
    n->fsmr_next = jr__deadline(n->now, n->heartbeat_ns);
    size_t count = 0;
    for (jr_group *g = n->fsm_list; g; g = g->fsm_next) count++;
    if (count > n->fsmr_cap) {
        /* items, then their leaders, in one block */
        void *nb =
            jr__realloc(n->alloc, n->fsmr_items, count * (sizeof(jr__fsm_item) + sizeof(jr__id)));
        if (!nb) {
            n->send_failures++;
            return; /* told at the next interval */
        }
        n->fsmr_items = nb;
        n->fsmr_cap = count;
    }
    jr__fsm_item *items = n->fsmr_items;
    jr__id *leaders = (jr__id *)(void *)(items + n->fsmr_cap);
    size_t k = 0;
    for (jr_group **pp = &n->fsm_list; *pp;) {
        jr_group *g = *pp;
        uint8_t state = jr__group_fsm(g);
        jr__id leader = jr__raft_leader(g->raft);
        uint64_t term = jr__raft_term(g->raft);
        if (leader && leader != n->self && term) {
            items[k] = (jr__fsm_item){g->id, term, state};
            leaders[k++] = leader;
        }
        if (state == JR__FSM_WHOLE && g->fsm_clears && --g->fsm_clears == 0) {
            *pp = g->fsm_next; /* said whole enough times: forgotten */
            g->fsm_listed = 0;
            g->fsm_next = NULL;
            continue;
        }
        pp = &g->fsm_next;
    }
    sort_items(items, leaders, k);
    for (size_t i = 0; i < k;) {
        size_t j = i + 1;
        while (j < k && leaders[j] == leaders[i]) j++;
        jr__peer *p = jr__peer_find(n, leaders[i]);
        if (p && p->id != n->self && !p->removed) put_items(n, p, items + i, j - i);
        i = j;
    }
}

void jr__fsmr_recv(jr_node *n, jr__peer *p, const jr__ext_view *x)
{
    jr__fsm_view v;
    int rc = jr__fsm_open(x, &v);
    if (rc == JR_EVERSION) { /* a later release's payload: skipped like an unknown type */
        n->msgs_unknown_type++;
        return;
    }
    if (rc != 0) {
        n->msgs_invalid++;
        return;
    }
    jr__fsm_item it;
    while (jr__fsm_next(&v, &it)) {
        jr_group *g = jr__map_get(&n->groups, it.group);
        if (!g || g->closed) {
            n->msgs_unknown_group++;
            continue;
        }
        if (!jr__raft_wire_ok(g->raft, it.term, 0)) {
            n->msgs_invalid++;
            continue;
        }
        jr__raft_fsm_report(g->raft, n->now, p->id, it.term, it.state);
    }
}
