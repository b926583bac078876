/*
 * The Raft core as a pure function: scenarios from the Raft paper and dissertation, run on the
 * in-test harness (harness.h), which checks election safety, log matching, leader completeness
 * and state-machine safety on every flush.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "raft/impl.h"
#include "raft/memlog.h"

#define MS H_MS
#define ET (100 * MS)

static uint64_t term_of(const harness *h, int i)
{
    return jr__raft_term(h->nodes[i].r);
}
static int role_of(const harness *h, int i)
{
    return jr__raft_role(h->nodes[i].r);
}
static jr__raft *R(harness *h, int i)
{
    return h->nodes[i].r;
}

/* Elects node i by firing its election timer; asserts it leads and is ready. */
static void elect(harness *h, int i)
{
    h_timeout(h, i);
    ck_assert_int_eq(role_of(h, i), JR_LEADER);
    ck_assert_msg(jr__raft_ready(R(h, i)), "leader %d not ready", i);
}

/* conf ------------------------------------------------------------------------------------------*/

START_TEST(conf_roundtrip_and_strict_decode)
{
    jr__conf c = {0}, d;
    c.m[c.n++] = (jr__member){42, 1};
    c.m[c.n++] = (jr__member){UINT64_MAX, 0};
    uint8_t buf[16 + JR__MAX_MEMBERS * 9];
    size_t n = jr__conf_encode(&c, buf);
    ck_assert_uint_eq(n, jr__conf_encoded_len(&c));
    ck_assert_int_eq(jr__conf_decode(&d, buf, n), 0);
    ck_assert_uint_eq(d.n, 2);
    ck_assert_uint_eq(d.m[1].id, UINT64_MAX);
    ck_assert_uint_eq(jr__conf_voters(&d), 1);
    ck_assert_ptr_nonnull(jr__conf_find(&d, 42));
    ck_assert_ptr_null(jr__conf_find(&d, 43));
    /* trailing byte, truncation */
    ck_assert_int_eq(jr__conf_decode(&d, buf, n + 1), JR_ECORRUPT);
    ck_assert_int_eq(jr__conf_decode(&d, buf, n - 1), JR_ECORRUPT);
    /* duplicate id */
    c.m[1].id = 42;
    n = jr__conf_encode(&c, buf);
    ck_assert_int_eq(jr__conf_decode(&d, buf, n), JR_ECORRUPT);
    /* id 0, voter byte 2 */
    c.m[1] = (jr__member){0, 1};
    n = jr__conf_encode(&c, buf);
    ck_assert_int_eq(jr__conf_decode(&d, buf, n), JR_ECORRUPT);
    c.m[1] = (jr__member){7, 2};
    n = jr__conf_encode(&c, buf);
    ck_assert_int_eq(jr__conf_decode(&d, buf, n), JR_ECORRUPT);
    /* too many members */
    uint8_t big[] = {65};
    ck_assert_int_eq(jr__conf_decode(&d, big, 1), JR_ECORRUPT);
}
END_TEST

/* memlog ----------------------------------------------------------------------------------------*/

START_TEST(memlog_rings_wrap_grow_truncate_compact)
{
    jr__memlog l;
    jr__memlog_init(&l, NULL);
    char s[64];
    /* many appends with compaction: the rings wrap and are reused */
    for (uint64_t i = 1; i <= 5000; i++) {
        int n = snprintf(s, sizeof s, "entry-%llu-%.*s", (unsigned long long)i, (int)(i % 37),
                         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        ck_assert_int_eq(jr__memlog_append(&l, 1 + i / 1000, 0, s, (uint32_t)n), 0);
        if (i % 100 == 0) jr__memlog_compact(&l, i - 50);
    }
    ck_assert_uint_eq(l.first, 4951);
    ck_assert_uint_eq(l.last, 5000);
    for (uint64_t i = l.first; i <= l.last; i++) {
        int n = snprintf(s, sizeof s, "entry-%llu-%.*s", (unsigned long long)i, (int)(i % 37),
                         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        const jr__memlog_ent *e = jr__memlog_at(&l, i);
        ck_assert_uint_eq(e->len, (uint32_t)n);
        ck_assert(memcmp(jr__memlog_data(&l, e), s, (size_t)n) == 0);
    }
    ck_assert_uint_le(l.ecap, 256);
    ck_assert_uint_le(l.bcap, 16384);
    ck_assert_uint_eq(jr__memlog_term(&l, 4950), 5); /* the base */
    ck_assert_uint_eq(jr__memlog_term(&l, 4949), 0);
    /* truncation and binary search by term */
    jr__memlog_truncate(&l, 4990);
    ck_assert_uint_eq(l.last, 4989);
    ck_assert_int_eq(jr__memlog_append(&l, 9, 0, "z", 1), 0);
    ck_assert_uint_eq(jr__memlog_last_le(&l, l.first, l.last, 5), 4989);
    ck_assert_uint_eq(jr__memlog_last_le(&l, l.first, l.last, 9), 4990);
    ck_assert_uint_eq(jr__memlog_last_le(&l, l.first, l.last, 4), l.first - 1);
    jr__memlog_reset(&l, 10000, 12);
    ck_assert_uint_eq(l.first, 10001);
    ck_assert_uint_eq(jr__memlog_term(&l, 10000), 12);
    jr__memlog_free(&l);
}
END_TEST

/* The payload of entry i of the growth tests: len(i) bytes derived from i. */
static uint32_t grow_len(uint64_t i)
{
    return (uint32_t)(100 + (i * 7919) % 1900);
}

static void grow_fill(uint64_t i, uint8_t *p)
{
    for (uint32_t k = 0; k < grow_len(i); k++) p[k] = (uint8_t)(i * 31 + k * 7);
}

static void grow_check(const jr__memlog *l)
{
    uint8_t want[2048];
    for (uint64_t i = l->first; i <= l->last; i++) {
        const jr__memlog_ent *e = jr__memlog_at(l, i);
        grow_fill(i, want);
        ck_assert_uint_eq(e->len, grow_len(i));
        ck_assert_msg(memcmp(jr__memlog_data(l, e), want, e->len) == 0, "entry %llu",
                      (unsigned long long)i);
        if (i > l->first) ck_assert_uint_ge(e->pos, jr__memlog_at(l, i - 1)->pos);
    }
    ck_assert_uint_le(l->tail - l->head, l->bcap);
}

/* Growing the payload ring keeps the live bytes where they lie: a log that only grows (a
 * joiner's, whose restoring replica takes no snapshot) copies none of them however large it
 * gets; a log compacted behind a tail that keeps growing (a leader's, keeping more and more for
 * a member catching up), whose live bytes wrap around the ring's end, copies at most half the
 * old ring at each doubling, never the whole log. */
START_TEST(memlog_growing_copies_at_most_half_the_ring)
{
    jr__memlog l;
    jr__memlog_init(&l, NULL);
    uint8_t p[2048];
    for (uint64_t i = 1; i <= 20000; i++) { /* ~20 MB */
        grow_fill(i, p);
        ck_assert_int_eq(jr__memlog_append(&l, 1, 0, p, grow_len(i)), 0);
    }
    grow_check(&l);
    ck_assert_uint_ge(l.bcap, 16u << 20);
    ck_assert_uint_eq(l.moved, 0);
    jr__memlog_free(&l);

    jr__memlog_init(&l, NULL);
    uint64_t grew = 0, keep = 64;
    for (uint64_t i = 1; i <= 40000; i++) {
        grow_fill(i, p);
        uint64_t cap = l.bcap, moved = l.moved;
        ck_assert_int_eq(jr__memlog_append(&l, 1, 0, p, grow_len(i)), 0);
        if (l.bcap != cap && cap) {
            grew++;
            ck_assert_msg(l.moved - moved <= cap / 2, "grew %llu -> %llu copying %llu bytes",
                          (unsigned long long)cap, (unsigned long long)l.bcap,
                          (unsigned long long)(l.moved - moved));
            grow_check(&l);
        }
        if (i % 50 == 0) { /* compact behind a tail that grows by half the compacted span */
            keep += 25;
            if (i > keep) jr__memlog_compact(&l, i - keep);
        }
    }
    grow_check(&l);
    ck_assert_uint_ge(grew, 4);
    ck_assert_uint_lt(l.moved, l.bcap);
    jr__memlog_free(&l);
}
END_TEST

/* election & commit -----------------------------------------------------------------------------*/

START_TEST(basic_election_and_commit)
{
    harness h;
    h_init(&h, 3, 1);
    h_start(&h, 3, 3);
    elect(&h, 0);
    ck_assert_uint_eq(term_of(&h, 0), 2);
    for (int i = 1; i < 3; i++) {
        ck_assert_int_eq(role_of(&h, i), JR_FOLLOWER);
        ck_assert_uint_eq(jr__raft_leader(R(&h, i)), 1);
    }
    uint64_t a, b;
    ck_assert_int_eq(h_propose(&h, 0, "a", &a), 0);
    ck_assert_int_eq(h_propose(&h, 0, "b", &b), 0);
    ck_assert_uint_eq(b, a + 1);
    ck_assert_int_eq(h_propose(&h, 1, "x", NULL), JR_ENOTLEADER);
    h_deliver_all(&h);
    h_run(&h, 50 * MS); /* a heartbeat carries the final commit to the followers */
    char buf[16];
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(h_commit(&h, i), b);
        ck_assert_uint_eq(jr__raft_applied_index(R(&h, i)), b);
        ck_assert_str_eq(h_entry_str(&h, i, a, buf, sizeof buf), "a");
    }
    h_check_all(&h);
    h_free(&h);
}
END_TEST

START_TEST(single_voter_leads_at_once)
{
    harness h;
    h_init(&h, 1, 2);
    h_start(&h, 1, 1);
    ck_assert_int_eq(role_of(&h, 0), JR_LEADER);
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, 0, "solo", &idx), 0);
    ck_assert_uint_eq(h_commit(&h, 0), idx);
    h_free(&h);
}
END_TEST

/* Votes between the two candidates are dropped so each gets exactly half of the four voters:
 * nobody wins the term; randomized timeouts then elect one leader. */
static int split_filter(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    (void)arg;
    if (m->type != JR__MSG_VOTE || (m->flags & JR__MF_PREVOTE)) return 1;
    return !((m->from == 1 && m->to == 4) || (m->from == 3 && m->to == 2));
}

/* Nodes a and b time out in the same instant (the later of their deadlines); then every message
 * is delivered. */
static void time_out_together(harness *h, int a, int b)
{
    uint64_t d = jr__raft_deadline(R(h, a));
    if (jr__raft_deadline(R(h, b)) > d) d = jr__raft_deadline(R(h, b));
    h->now = d;
    jr__raft_tick(R(h, a), h->now);
    h_flush(&h->nodes[a]);
    jr__raft_tick(R(h, b), h->now);
    h_flush(&h->nodes[b]);
    h_deliver_all(h);
}

START_TEST(split_votes_resolve)
{
    harness h;
    h_init(&h, 4, 3);
    h_start(&h, 4, 4);
    h.filter = split_filter;
    time_out_together(&h, 0, 2);
    ck_assert_int_eq(h_leader(&h), -1);
    ck_assert_uint_eq(term_of(&h, 0), 2);
    ck_assert_uint_eq(term_of(&h, 2), 2);
    h.filter = NULL;
    int l = h_wait_leader(&h, 20 * ET);
    ck_assert_int_ge(l, 0);
    ck_assert_uint_gt(term_of(&h, l), 2);
    h_free(&h);
}
END_TEST

/* A group of n voters whose id makes server `ahead` ranked ahead of server `behind`
 * (jr__raft_ahead), started. */
static void start_ranked(harness *h, int n, uint64_t seed, jr__id ahead, jr__id behind)
{
    h_init(h, n, seed);
    uint64_t group = 1;
    while (!jr__raft_ahead(group, ahead, behind)) group++;
    h->cfg.group = group;
    h_start(h, n, n);
}

/* The leader is gone and both survivors campaign in the same instant (the node's paced rounds
 * may start a survivor's round late, alongside the next-ranked one's): as pre-candidates each
 * would grant the other, both would stand in the same term and split it. A pre-candidate
 * grants only a server ranked ahead of it (jr__raft_ahead): one election, won by that one. */
START_TEST(simultaneous_pre_candidates_do_not_split_the_vote)
{
    for (uint64_t seed = 1; seed <= 8; seed++) {
        harness h;
        h_init(&h, 3, seed);
        h.cfg.group = seed * 7919; /* either survivor may be ranked ahead */
        h_start(&h, 3, 3);
        elect(&h, 0);
        uint64_t t = term_of(&h, 0);
        h_crash(&h, 0);
        time_out_together(&h, 1, 2);
        int ahead = jr__raft_ahead(h.cfg.group, 2, 3) ? 1 : 2;
        ck_assert_int_eq(h_leader(&h), ahead);
        ck_assert_uint_eq(term_of(&h, ahead), t + 1);
        ck_assert_uint_eq(term_of(&h, 3 - ahead), t + 1);
        h_free(&h);
    }
}
END_TEST

/* The tie-break yields to a newer log: a pre-candidate ranked ahead but lagging (it cannot win
 * the other's vote, and its round may never end) still grants its pre-vote to the server with
 * the newer log, which wins at once. */
START_TEST(a_lagging_pre_candidate_ranked_ahead_yields_to_a_newer_log)
{
    harness h;
    start_ranked(&h, 3, 9, 3, 2); /* node 2 ranked ahead of node 1 */
    elect(&h, 0);
    h_isolate(&h, 2);
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, 0, "missed by node 2", &idx), 0);
    h_run(&h, 5 * MS);
    ck_assert_uint_eq(h_commit(&h, 1), idx);
    uint64_t t = term_of(&h, 0);
    h_crash(&h, 0);
    h_heal(&h);
    time_out_together(&h, 1, 2);
    ck_assert_int_eq(h_leader(&h), 1);
    ck_assert_uint_eq(term_of(&h, 1), t + 1);
    h_free(&h);
}
END_TEST

/* The survivor ranked ahead campaigns while the other, whose node has not yet noticed the loss,
 * still holds the lost leader's lease and refuses it. That round cannot win: when the other
 * campaigns a moment later, it gets the pre-vote and wins at once. */
START_TEST(a_refused_pre_candidate_grants_the_survivor_behind_it)
{
    harness h;
    start_ranked(&h, 3, 12, 2, 3); /* node 1 ranked ahead of node 2 */
    elect(&h, 0);
    uint64_t t = term_of(&h, 0);
    h_crash(&h, 0);
    jr__raft_peer_lost(R(&h, 1), h.now, 1, 0); /* node 1's node notices the loss */
    jr__raft_tick(R(&h, 1), h.now);
    h_flush(&h.nodes[1]);
    h_deliver_all(&h); /* node 2, in the lease, refuses */
    ck_assert_int_eq(h_leader(&h), -1);
    h_run(&h, 5 * MS);
    jr__raft_peer_lost(R(&h, 2), h.now, 1, 0); /* node 2's node notices it too */
    jr__raft_tick(R(&h, 2), h.now);
    h_flush(&h.nodes[2]);
    h_deliver_all(&h);
    ck_assert_int_eq(h_leader(&h), 2);
    ck_assert_uint_eq(term_of(&h, 2), t + 1);
    h_free(&h);
}
END_TEST

static int cut_0_to_2(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    (void)arg;
    return !(m->from == 1 && m->to == 3);
}

/* Five voters, two down, and a one-way cut from node 0 (ranked ahead) to node 2: node 0's rounds
 * never end (it gets node 1's pre-vote, node 2 never hears it, the others are down), so it is a
 * pre-candidate nearly all the time. Node 1, which can win (nodes 0 and 2 both hear it), must
 * still get node 0's pre-vote: a round older than a quarter election timeout stops refusing. */
START_TEST(a_stuck_pre_candidate_stops_refusing_after_a_quarter_election_timeout)
{
    harness h;
    start_ranked(&h, 5, 10, 1, 2); /* node 0 ranked ahead of node 1 */
    elect(&h, 4);
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, 4, "everyone has it", &idx), 0);
    h_run(&h, 50 * MS);
    for (int i = 0; i < 5; i++) ck_assert_uint_eq(h_commit(&h, i), idx);
    h_crash(&h, 3);
    h_crash(&h, 4);
    h.filter = cut_0_to_2;
    h_timeout(&h, 0); /* node 0 campaigns first: its round cannot end */
    ck_assert_int_eq(h_leader(&h), -1);
    int l = h_wait_leader(&h, 30 * ET);
    ck_assert_int_eq(l, 1);
    h_free(&h);
}
END_TEST

static int drop_all(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    (void)m;
    (void)arg;
    return 0;
}

/* A vote counts only if the voter made it durable first (JR__MF_DURABLE on the answer). */
START_TEST(vote_counts_only_when_durable)
{
    harness h;
    h_init(&h, 3, 22);
    h_start(&h, 3, 3);
    h.filter = drop_all; /* we play the other two servers by hand */
    h_timeout(&h, 0);
    ck_assert_int_eq(role_of(&h, 0), JR_CANDIDATE); /* pre-candidate, term unchanged */
    ck_assert_uint_eq(term_of(&h, 0), 1);
    jr__msg v = {.type = JR__MSG_VOTE_RESP,
                 .flags = JR__MF_PREVOTE,
                 .group = 7,
                 .from = 2,
                 .to = 1,
                 .term = 2};
    v.u.vote_resp.granted = 1;
    ck_assert_int_eq(h_inject(&h, 0, &v), 0);
    ck_assert_uint_eq(term_of(&h, 0), 2); /* the pre-vote won: a real election in term 2 */
    ck_assert_int_eq(role_of(&h, 0), JR_CANDIDATE);
    v.flags = 0; /* a grant that does not vouch for a durable vote */
    ck_assert_int_eq(h_inject(&h, 0, &v), 0);
    ck_assert_int_eq(role_of(&h, 0), JR_CANDIDATE);
    v.flags = JR__MF_DURABLE;
    ck_assert_int_eq(h_inject(&h, 0, &v), 0);
    ck_assert_int_eq(role_of(&h, 0), JR_LEADER);
    h_free(&h);
}
END_TEST

START_TEST(leader_reports_progress)
{
    harness h;
    h_init(&h, 4, 23);
    h_start(&h, 4, 3);
    elect(&h, 0);
    h_isolate(&h, 2);
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, 0, "p", &idx), 0);
    h_run(&h, 50 * MS);
    jr__progress p;
    ck_assert_int_eq(jr__raft_progress(R(&h, 1), 0, &p), JR_ENOTLEADER);
    ck_assert_int_eq(jr__raft_progress(R(&h, 0), 4, &p), JR_ENOTFOUND);
    ck_assert_int_eq(jr__raft_progress(R(&h, 0), 0, &p), 0); /* self: what is durable */
    ck_assert_uint_eq(p.id, 1);
    ck_assert_uint_eq(p.match, idx);
    ck_assert_int_eq(jr__raft_progress(R(&h, 0), 1, &p), 0);
    ck_assert_uint_eq(p.match, idx);
    ck_assert_uint_eq(p.next, idx + 1);
    ck_assert_int_eq(p.state, JR__REPLICATE);
    ck_assert_uint_gt(p.last_contact, h.now - 30 * MS);
    ck_assert_int_eq(jr__raft_progress(R(&h, 0), 2, &p), 0); /* cut off: lags, not seen lately */
    ck_assert_uint_lt(p.match, idx);
    ck_assert_uint_lt(p.last_contact, h.now - 30 * MS);
    ck_assert_int_eq(jr__raft_progress(R(&h, 0), 3, &p), 0); /* the observer */
    ck_assert_int_eq(p.voter, 0);
    ck_assert_uint_eq(p.match, idx);
    h_free(&h);
}
END_TEST

/* A new leader gives every member a full election timeout of grace for check-quorum
 * (last_contact), but reports as contact only what it received (heard): a member that is down
 * at the election is not contacted, one that voted for it is, from the start of that round. */
START_TEST(a_new_leader_reports_a_member_it_never_heard_from_as_not_contacted)
{
    harness h;
    h_init(&h, 5, 29);
    h_start(&h, 5, 5);
    elect(&h, 0);
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, 0, "p", &idx), 0);
    h_run(&h, 50 * MS);
    jr__progress p;
    ck_assert_int_eq(jr__raft_progress(R(&h, 0), 4, &p), 0);
    ck_assert_uint_gt(p.heard, h.now - 30 * MS); /* the old leader heard from it */
    h_crash(&h, 0);
    h_crash(&h, 4);
    int l = h_wait_leader(&h, 2000 * MS);
    ck_assert_int_ge(l, 1);
    ck_assert_int_le(l, 3);
    uint64_t elected = h.now;
    for (uint32_t i = 0; i < 5; i++) {
        ck_assert_int_eq(jr__raft_progress(R(&h, l), i, &p), 0);
        ck_assert_uint_le(p.heard, h.now);
        if (i == 0 || i == 4) {
            /* down since before the election: counted by check-quorum, never reported heard */
            ck_assert_uint_gt(p.last_contact, 0);
            ck_assert_uint_eq(p.heard, 0);
        } else {
            /* itself, and the two others, whose votes it needed (3 of 5) */
            ck_assert_uint_gt(p.heard, 0);
        }
    }
    /* heartbeats go on without an answer from the two: still not heard, still leading */
    h_run(&h, ET / 2);
    ck_assert_int_eq(role_of(&h, l), JR_LEADER);
    ck_assert_int_eq(jr__raft_progress(R(&h, l), 4, &p), 0);
    ck_assert_uint_eq(p.heard, 0);
    ck_assert_uint_eq(p.match, 0);
    ck_assert_int_eq(jr__raft_progress(R(&h, l), 1, &p), 0);
    ck_assert_uint_ge(p.heard, elected - ET);
    /* node 4 restarts and speaks (its VOUCH, then its acknowledgements): heard from now on */
    h_restart(&h, 4);
    h_run(&h, ET);
    ck_assert_int_eq(role_of(&h, l), JR_LEADER);
    ck_assert_int_eq(jr__raft_progress(R(&h, l), 4, &p), 0);
    ck_assert_uint_gt(p.heard, elected);
    ck_assert_uint_le(p.heard, h.now);
    ck_assert_uint_ge(p.last_contact, p.heard);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* Figure 7 ---------------------------------------------------------------------------------------
 * The leader of term 8 holds terms 1 1 1 4 4 5 5 6 6 6 at indexes 1..10 (index 1 is the
 * bootstrap configuration). Each follower case (a)..(f) is repaired to the leader's log. */
static const uint64_t fig7_leader[] = {1, 1, 4, 4, 5, 5, 6, 6, 6};
static const struct {
    const char *name;
    uint64_t t[12];
    size_t n;
} fig7[] = {
    {"a: missing one", {1, 1, 4, 4, 5, 5, 6, 6}, 8},
    {"b: missing many", {1, 1, 4}, 3},
    {"c: one extra uncommitted", {1, 1, 4, 4, 5, 5, 6, 6, 6, 6}, 10},
    {"d: extra entries of term 7", {1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7}, 11},
    {"e: divergent term 4", {1, 1, 4, 4, 4, 4}, 6},
    {"f: divergent terms 2, 3", {1, 1, 2, 2, 2, 3, 3, 3, 3, 3}, 10},
};

START_TEST(figure7_follower_repaired)
{
    int c = _i;
    harness h;
    h_init(&h, 3, 10 + (uint64_t)c);
    h_start(&h, 3, 3);
    h_preload(&h, 0, 3, 7, fig7_leader, 9);
    h_preload(&h, 2, 3, 7, fig7_leader, 9);
    h_preload(&h, 1, 3, 7, fig7[c].t, fig7[c].n);
    elect(&h, 0);
    ck_assert_uint_eq(term_of(&h, 0), 8);
    h_run(&h, 5 * ET);
    jr__raft *L = R(&h, 0), *F = R(&h, 1);
    ck_assert_msg(jr__raft_last_index(F) == jr__raft_last_index(L), "%s: last %llu vs %llu",
                  fig7[c].name, (unsigned long long)jr__raft_last_index(F),
                  (unsigned long long)jr__raft_last_index(L));
    for (uint64_t i = 1; i <= jr__raft_last_index(L); i++) {
        jr__entry a, b;
        ck_assert_int_eq(jr__raft_entry(L, i, &a), 0);
        ck_assert_int_eq(jr__raft_entry(F, i, &b), 0);
        ck_assert_msg(a.term == b.term, "%s: index %llu term %llu vs %llu", fig7[c].name,
                      (unsigned long long)i, (unsigned long long)b.term,
                      (unsigned long long)a.term);
    }
    ck_assert_uint_eq(h_commit(&h, 1), jr__raft_last_index(L));
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* Figure 8 ---------------------------------------------------------------------------------------
 * S1 leads term 4 holding (2, term 2), which S2 and S3 also hold: a majority of five. S1's own
 * no-op of term 4 is not yet durable on S1 and S4, S5 are unreachable, so no entry of term 4 is
 * on a majority. Counting replicas would commit index 2; Raft must not (§3.6.2). Once S1's
 * write is durable the no-op commits, and index 2 with it. */
static int cut_s4_s5(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    (void)arg;
    return m->to != 4 && m->to != 5 && m->from != 4 && m->from != 5;
}

START_TEST(figure8_old_term_not_committed_by_counting)
{
    harness h;
    h_init(&h, 5, 8);
    h_start(&h, 5, 5);
    const uint64_t t2[] = {2}, t3[] = {3};
    h_preload(&h, 0, 5, 3, t2, 1);
    h_preload(&h, 1, 5, 3, t2, 1);
    h_preload(&h, 2, 5, 3, NULL, 0);
    h_preload(&h, 3, 5, 3, NULL, 0);
    h_preload(&h, 4, 5, 3, t3, 1);
    /* S1's entry writes are slow; it wins term 4 with S2, S3, S4; then S4, S5 are cut off */
    h.nodes[0].hold = 2;
    h.filter = cut_s4_s5;
    h_timeout(&h, 0);
    ck_assert_int_eq(role_of(&h, 0), JR_LEADER);
    ck_assert_uint_eq(term_of(&h, 0), 4);
    h_run(&h, 3 * 20 * MS);
    jr__entry e;
    ck_assert_int_eq(jr__raft_entry(R(&h, 2), 2, &e), 0);
    ck_assert_uint_eq(e.term, 2); /* S3 got (2, term 2): on S1, S2, S3 */
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 1)), 3);
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 2)), 3);
    ck_assert_uint_lt(h_commit(&h, 0), 2);
    ck_assert_int_eq(jr__raft_ready(R(&h, 0)), 0);
    /* S1's write becomes durable: the no-op is on S1, S2, S3 and commits with index 2 */
    h.nodes[0].hold = 0;
    h.nodes[0].notified = 1;
    h_flush(&h.nodes[0]);
    ck_assert_uint_eq(h_commit(&h, 0), 3);
    ck_assert(jr__raft_ready(R(&h, 0)));
    h_free(&h);
}
END_TEST

/* pre-vote, check-quorum ------------------------------------------------------------------------*/

START_TEST(prevote_partitioned_node_does_not_disrupt)
{
    harness h;
    h_init(&h, 3, 4);
    h_start(&h, 3, 3);
    elect(&h, 0);
    uint64_t t = term_of(&h, 0);
    h_isolate(&h, 2);
    h_run(&h, 20 * ET);
    /* the isolated node kept trying, but pre-vote never let it raise its term */
    ck_assert_uint_eq(term_of(&h, 2), t);
    ck_assert_int_eq(role_of(&h, 0), JR_LEADER);
    h_heal(&h);
    h_run(&h, 5 * ET);
    ck_assert_int_eq(role_of(&h, 0), JR_LEADER);
    ck_assert_uint_eq(term_of(&h, 0), t);
    ck_assert_int_eq(role_of(&h, 2), JR_FOLLOWER);
    ck_assert_uint_eq(jr__raft_leader(R(&h, 2)), 1);
    h_free(&h);
}
END_TEST

START_TEST(check_quorum_isolated_leader_steps_down)
{
    harness h;
    h_init(&h, 3, 5);
    h_start(&h, 3, 3);
    elect(&h, 0);
    h_isolate(&h, 0);
    h_run(&h, 3 * ET);
    ck_assert_int_ne(role_of(&h, 0), JR_LEADER);
    int l = h_wait_leader(&h, 10 * ET);
    ck_assert_int_ge(l, 1);
    h_heal(&h);
    h_run(&h, 3 * ET);
    ck_assert_uint_eq(jr__raft_leader(R(&h, 0)), (jr__id)l + 1);
    h_free(&h);
}
END_TEST

/* leadership transfer ---------------------------------------------------------------------------*/

START_TEST(transfer_to_named_peer)
{
    harness h;
    h_init(&h, 3, 6);
    h_start(&h, 3, 3);
    elect(&h, 0);
    ck_assert_int_eq(h_propose(&h, 0, "x", NULL), 0);
    h_deliver_all(&h);
    uint64_t t = term_of(&h, 0);
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 3), 0);
    h_flush(&h.nodes[0]);
    h_deliver_all(&h);
    ck_assert_int_eq(role_of(&h, 2), JR_LEADER);
    ck_assert_uint_eq(term_of(&h, 2), t + 1);
    ck_assert_int_eq(role_of(&h, 0), JR_FOLLOWER);
    ck_assert_uint_eq(jr__raft_leader(R(&h, 0)), 3);
    h_free(&h);
}
END_TEST

START_TEST(transfer_to_best_peer)
{
    harness h;
    h_init(&h, 3, 7);
    h_start(&h, 3, 3);
    elect(&h, 0);
    h_isolate(&h, 1); /* node 1 falls behind */
    for (int i = 0; i < 5; i++) ck_assert_int_eq(h_propose(&h, 0, "y", NULL), 0);
    h_deliver_all(&h);
    h_heal(&h);
    /* node 1 lacks committed entries: not a target (jr_group_peer reports it not current) */
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 2), JR_ENOTVOTER);
    ck_assert(!jr__raft_transferring(R(&h, 0)));
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 0), 0);
    h_flush(&h.nodes[0]);
    h_deliver_all(&h);
    ck_assert_int_eq(role_of(&h, 2), JR_LEADER); /* the caught-up one */
    h_free(&h);
}
END_TEST

static int drop_to_3(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    (void)arg;
    return m->to != 3;
}

START_TEST(transfer_blocks_proposals_and_is_abandoned)
{
    harness h;
    h_init(&h, 3, 8);
    h_start(&h, 3, 3);
    elect(&h, 0);
    h.filter = drop_to_3; /* the target never hears the TIMEOUT_NOW */
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 3), 0);
    ck_assert(jr__raft_transferring(R(&h, 0)));
    ck_assert_int_eq(jr__raft_propose(R(&h, 0), h.now, "z", 1, NULL), JR_ETRANSFER);
    ck_assert_int_eq(jr__raft_change(R(&h, 0), h.now, JR__ADD_OBSERVER, 9, NULL), JR_ETRANSFER);
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 2), JR_ETRANSFER);
    h_flush(&h.nodes[0]);
    h_run(&h, ET / 2);
    ck_assert(jr__raft_transferring(R(&h, 0)));
    h_run(&h, ET);
    /* abandoned after an election timeout: still leader, accepting proposals again */
    ck_assert_int_eq(role_of(&h, 0), JR_LEADER);
    ck_assert(!jr__raft_transferring(R(&h, 0)));
    ck_assert_int_eq(h_propose(&h, 0, "z", NULL), 0);
    h_free(&h);
}
END_TEST

START_TEST(transfer_target_must_be_a_voter)
{
    harness h;
    h_init(&h, 4, 9);
    h_start(&h, 4, 3); /* node 3 is an observer */
    elect(&h, 0);
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 4), JR_ENOTVOTER);
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 99), JR_ENOTVOTER);
    ck_assert_int_eq(jr__raft_transfer(R(&h, 0), h.now, 1), JR_ENOTVOTER);
    ck_assert_int_eq(jr__raft_transfer(R(&h, 1), h.now, 3), JR_ENOTLEADER);
    ck_assert(!jr__raft_transferring(R(&h, 0)));
    h_free(&h);
}
END_TEST

/* observers -------------------------------------------------------------------------------------*/

START_TEST(observers_never_campaign_or_count)
{
    harness h;
    h_init(&h, 4, 10);
    h_start(&h, 4, 3);
    ck_assert_int_eq(role_of(&h, 3), JR_OBSERVER);
    ck_assert_uint_eq(jr__raft_deadline(R(&h, 3)), UINT64_MAX); /* never campaigns */
    h_run(&h, 10 * ET);
    int l = h_leader(&h);
    ck_assert_int_ge(l, 0);
    ck_assert_int_lt(l, 3);
    ck_assert_int_eq(role_of(&h, 3), JR_OBSERVER);
    /* it receives the log */
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, l, "o", &idx), 0);
    h_run(&h, ET);
    ck_assert_uint_eq(h_commit(&h, 3), idx);
    h_free(&h);

    /* with the two other voters cut off, leader + observer are no quorum for commit ... */
    h_init(&h, 4, 11);
    h_start(&h, 4, 3);
    elect(&h, 0);
    h_isolate(&h, 1);
    h_isolate(&h, 2);
    uint64_t c = h_commit(&h, 0);
    ck_assert_int_eq(h_propose(&h, 0, "lonely", &idx), 0);
    h_run(&h, ET / 2);
    ck_assert_uint_eq(h_commit(&h, 0), c);
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 3)), idx); /* replicated, not counted */
    /* ... nor for check-quorum ... */
    h_run(&h, 2 * ET);
    ck_assert_int_ne(role_of(&h, 0), JR_LEADER);
    /* ... nor for an election: node 0 and the observer answer each other, nobody leads */
    uint64_t t = term_of(&h, 0);
    h_run(&h, 20 * ET);
    ck_assert_int_eq(h_leader(&h), -1);
    ck_assert_uint_eq(term_of(&h, 0), t); /* pre-vote never reached a majority of voters */
    ck_assert_uint_eq(term_of(&h, 3), t);
    h_heal(&h);
    ck_assert_int_ge(h_wait_leader(&h, 20 * ET), 0);
    ck_assert_int_ne(h_leader(&h), 3);
    h_free(&h);
}
END_TEST

/* Proposes n entries of 200 bytes at leader l, delivering after each. */
static void propose_200(harness *h, int l, int n, const char *tag)
{
    char s[201];
    for (int i = 0; i < n; i++) {
        int k = snprintf(s, sizeof s, "%s-%d-", tag, i);
        memset(s + k, 'x', sizeof s - 1 - (size_t)k);
        s[sizeof s - 1] = 0;
        ck_assert_int_eq(h_propose(h, l, s, NULL), 0);
        h_deliver_all(h);
    }
}

static uint64_t log_held(harness *h, int i)
{
    jr__raft *r = R(h, i);
    return jr__raft_log_bytes(r, jr__raft_first_index(r), jr__raft_last_index(r));
}

/* A capped observer (jr__raft_cap_log, replication.c "Capped observers"): with its log at the
 * cap it takes no more entries — at most the cap plus one entry held — while the voters commit
 * everything without it; a voter under the same cap takes everything; once the cap is lifted the
 * leader's probes bring the observer up to date, identical; capped again, it is probed as at
 * first. */
START_TEST(a_capped_observer_takes_no_entries_beyond_its_cap_and_never_holds_up_commits)
{
    enum { CAP = 4000 };
    harness h;
    h_init(&h, 4, 12);
    h_start(&h, 4, 3);
    elect(&h, 0);
    jr__raft_cap_log(R(&h, 3), CAP);
    jr__raft_cap_log(R(&h, 2), CAP); /* a voter: never capped */
    propose_200(&h, 0, 100, "cap");
    h_run(&h, ET);
    uint64_t last = jr__raft_last_index(R(&h, 0));
    for (int i = 0; i < 3; i++) ck_assert_uint_eq(h_commit(&h, i), last);
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 2)), last);
    ck_assert_int_eq(jr__raft_log_full(R(&h, 2)), 0);
    ck_assert_uint_gt(log_held(&h, 2), 4 * CAP);
    jr__raft *o = R(&h, 3);
    ck_assert_int_eq(jr__raft_log_full(o), 1);
    ck_assert_uint_lt(jr__raft_last_index(o), last - 50);
    ck_assert_uint_ge(log_held(&h, 3), CAP);
    ck_assert_uint_le(log_held(&h, 3), CAP + 256);
    ck_assert_uint_le(jr__raft_capped_peak(o), CAP + 256);
    ck_assert_uint_gt(jr__raft_capped_drops(o), 0);
    /* the leader keeps probing it, nothing more, and less as its probes go unanswered: one
     * APPEND after a heartbeat, two, four, then every fourth (replication.c) — 40 heartbeats
     * carry at most 10 probes and the first ones */
    uint64_t d0 = jr__raft_capped_drops(o);
    h_run(&h, 40 * 20 * MS);
    uint64_t probes = jr__raft_capped_drops(o) - d0;
    ck_assert_uint_ge(probes, 8);
    ck_assert_uint_le(probes, 13);
    ck_assert_uint_le(log_held(&h, 3), CAP + 256);
    /* lifted: it catches up */
    jr__raft_cap_log(o, 0);
    h_run(&h, ET);
    ck_assert_uint_eq(jr__raft_last_index(o), last);
    ck_assert_uint_eq(h_commit(&h, 3), last);
    ck_assert_uint_eq(h.nodes[3].sm_hash, h.nodes[0].sm_hash);
    /* capped again (full at once) after it caught up: the backoff starts over, as for the first
     * cap (one APPEND after a heartbeat, two, four: 3-5 in 5 heartbeats), not where the last one
     * left it (every fourth) */
    jr__raft_cap_log(o, CAP);
    propose_200(&h, 0, 20, "again");
    d0 = jr__raft_capped_drops(o);
    h_run(&h, 5 * 20 * MS);
    probes = jr__raft_capped_drops(o) - d0;
    ck_assert_uint_ge(probes, 3);
    ck_assert_uint_le(probes, 5);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* Counts the vote answers of id 4 (arg: int[2], answers and grants) and delivers everything. */
static int watch_votes_of_4(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    int *seen = arg;
    if (m->type == JR__MSG_VOTE_RESP && m->from == 4) {
        seen[0]++;
        seen[1] += m->u.vote_resp.granted != 0;
    }
    return 1;
}

/* A server that joins an existing group starts with nothing: it may be one removed and added
 * back whose earlier replica is gone with all it acknowledged. While its log is empty it judges
 * candidates by its floor — an entry the group had committed (join_last_*) — not by its empty
 * log, so a candidate lacking that entry gets no vote from it; one holding it does. */
START_TEST(an_empty_joiner_is_judged_by_its_floor)
{
    harness h;
    h_init(&h, 4, 13);
    h.cfg.join_last_term = 1;  /* as the node opens a group it joins (the others hold entries, */
    h.cfg.join_last_index = 3; /* so the floor does not apply to them) */
    h_start(&h, 3, 3);         /* node 3 (id 4) joins empty */
    int seen[2] = {0, 0};
    h.filter = watch_votes_of_4;
    h.filter_arg = seen;
    jr__msg v = {
        .type = JR__MSG_VOTE, .flags = JR__MF_PREVOTE, .group = 7, .from = 2, .to = 4, .term = 9};
    v.u.vote.last_index = 2; /* lacks the floor entry */
    v.u.vote.last_term = 1;
    ck_assert_int_eq(h_inject(&h, 3, &v), 0);
    v.flags = 0;
    ck_assert_int_eq(h_inject(&h, 3, &v), 0);
    h_deliver_all(&h);
    ck_assert_int_eq(seen[0], 2);
    ck_assert_int_eq(seen[1], 0);
    /* a candidate that holds it */
    seen[0] = seen[1] = 0;
    v.term = 10;
    v.u.vote.last_index = 3;
    v.flags = JR__MF_PREVOTE;
    ck_assert_int_eq(h_inject(&h, 3, &v), 0);
    v.flags = 0;
    ck_assert_int_eq(h_inject(&h, 3, &v), 0);
    h_deliver_all(&h);
    ck_assert_int_eq(seen[0], 2);
    ck_assert_int_eq(seen[1], 2);
    h_free(&h);
}
END_TEST

/* ... and it starts at its floor term: a leader of an older term cannot use it. */
START_TEST(an_empty_joiner_starts_at_its_floor_term)
{
    harness h;
    h_init(&h, 4, 14);
    h.cfg.join_term = 6;
    h_start(&h, 3, 3);
    ck_assert_uint_eq(term_of(&h, 3), 6);
    for (int i = 0; i < 3; i++) ck_assert_uint_lt(term_of(&h, i), 6);
    h_free(&h);
}
END_TEST

/* membership ------------------------------------------------------------------------------------*/

static int drop_append_resp(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    (void)arg;
    return m->type != JR__MSG_APPEND_RESP;
}

START_TEST(membership_one_change_at_a_time)
{
    harness h;
    h_init(&h, 5, 12);
    h_start(&h, 3, 3); /* nodes 3, 4 are not members yet */
    elect(&h, 0);
    jr__raft *L = R(&h, 0);
    uint64_t idx;
    ck_assert_int_eq(jr__raft_change(L, h.now, JR__ADD_OBSERVER, 4, &idx), 0);
    ck_assert_int_eq(jr__raft_change(L, h.now, JR__ADD_OBSERVER, 5, NULL), JR_EBUSY);
    ck_assert_uint_eq(jr__raft_conf(L)->n, 4); /* in effect as soon as appended */
    h_flush(&h.nodes[0]);
    h_deliver_all(&h);
    ck_assert_uint_ge(h_commit(&h, 0), idx);
    h_run(&h, ET);
    ck_assert_int_eq(role_of(&h, 3), JR_OBSERVER);
    ck_assert_uint_eq(h_commit(&h, 3), h_commit(&h, 0));
    /* impossible changes */
    ck_assert_int_eq(jr__raft_change(L, h.now, JR__ADD_OBSERVER, 4, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__raft_change(L, h.now, JR__PROMOTE, 2, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__raft_change(L, h.now, JR__REMOVE, 99, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__raft_change(L, h.now, 77, 4, NULL), JR_EINVAL);
    ck_assert_int_eq(jr__raft_change(R(&h, 1), h.now, JR__PROMOTE, 4, NULL), JR_ENOTLEADER);
    /* promote */
    ck_assert_int_eq(jr__raft_change(L, h.now, JR__PROMOTE, 4, &idx), 0);
    h_flush(&h.nodes[0]);
    h_run(&h, ET);
    ck_assert_uint_eq(jr__conf_voters(jr__raft_conf(R(&h, 3))), 4);
    ck_assert_int_eq(role_of(&h, 3), JR_FOLLOWER);

    /* a new leader may not change membership before an entry of its term commits */
    h.filter = drop_append_resp;
    ck_assert_int_eq(jr__raft_transfer(L, h.now, 2), 0);
    h_flush(&h.nodes[0]);
    h_deliver_all(&h);
    ck_assert_int_eq(role_of(&h, 1), JR_LEADER);
    ck_assert(!jr__raft_ready(R(&h, 1)));
    ck_assert_int_eq(jr__raft_change(R(&h, 1), h.now, JR__ADD_OBSERVER, 5, NULL), JR_EBUSY);
    h.filter = NULL;
    h_run(&h, ET / 2);
    ck_assert(jr__raft_ready(R(&h, 1)));
    ck_assert_int_eq(jr__raft_change(R(&h, 1), h.now, JR__ADD_OBSERVER, 5, NULL), 0);
    h_flush(&h.nodes[1]);
    h_run(&h, ET);

    /* the leader removes itself: it steps down once that commits, and another leads */
    ck_assert_int_eq(jr__raft_change(R(&h, 1), h.now, JR__REMOVE, 2, &idx), 0);
    ck_assert_int_eq(role_of(&h, 1), JR_LEADER);
    h_flush(&h.nodes[1]);
    h_deliver_all(&h);
    ck_assert_int_ne(role_of(&h, 1), JR_LEADER);
    int l = h_wait_leader(&h, 10 * ET);
    ck_assert_int_ge(l, 0);
    ck_assert_int_ne(l, 1);
    ck_assert_ptr_null(jr__conf_find(jr__raft_conf(R(&h, l)), 2));
    ck_assert_uint_eq(jr__conf_voters(jr__raft_conf(R(&h, l))), 3);
    ck_assert_int_eq(h_propose(&h, l, "after", &idx), 0);
    h_run(&h, ET);
    ck_assert_uint_ge(h_commit(&h, l), idx);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* A configuration is in effect when appended and reverts when a new leader truncates it. */
START_TEST(config_reverts_on_truncation)
{
    harness h;
    h_init(&h, 3, 13);
    h_start(&h, 3, 3);
    jr__raft *F = R(&h, 2);
    /* term 2 leader (node 1) appends an uncommitted configuration adding member 9 */
    jr__conf c = *jr__raft_conf(F);
    c.m[c.n++] = (jr__member){9, 0};
    uint8_t buf[16 + JR__MAX_MEMBERS * 9];
    jr__entry e = {2, 2, JR__ENTRY_CONFIG, (uint32_t)jr__conf_encode(&c, buf), buf};
    jr__msg m = {.type = JR__MSG_APPEND, .group = 7, .from = 1, .to = 3, .term = 2};
    m.u.append = (__typeof__(m.u.append)){1, 1, 1, 1, &e};
    ck_assert_int_eq(h_inject(&h, 2, &m), 0);
    ck_assert_uint_eq(jr__raft_conf(F)->n, 4);
    /* term 3 leader (node 2) has a different entry at index 2 */
    jr__entry e2 = {3, 2, JR__ENTRY_NORMAL, 3, (const uint8_t *)"new"};
    m.from = 2;
    m.term = 3;
    m.u.append.entries = &e2;
    ck_assert_int_eq(h_inject(&h, 2, &m), 0);
    ck_assert_uint_eq(jr__raft_last_index(F), 2);
    ck_assert_uint_eq(jr__raft_conf(F)->n, 3);
    ck_assert_ptr_null(jr__conf_find(jr__raft_conf(F), 9));
    h_free(&h);
}
END_TEST

/* snapshots -------------------------------------------------------------------------------------*/

/* A cluster of three that snapshots every 10 entries (2 kept behind), its snapshots snap_size
 * bytes sent in chunks of chunk (0: the default), node 0 elected. */
static void snapshotting(harness *h, uint64_t seed, size_t snap_size, uint32_t chunk)
{
    h_init(h, 3, seed);
    h->snap_every = 10;
    h->snap_trailing = 2;
    h->snap_size = snap_size;
    if (chunk) h->cfg.snap_chunk_bytes = chunk;
    h_start(h, 3, 3);
    elect(h, 0);
}

/* Follower f, cut off, misses 40 entries, and node 0's log is compacted past it. */
static void outrun_follower(harness *h, int f, const char *tag)
{
    char s[24];
    h_isolate(h, f);
    for (int i = 0; i < 40; i++) {
        snprintf(s, sizeof s, "%s%d", tag, i);
        ck_assert_int_eq(h_propose(h, 0, s, NULL), 0);
        h_deliver_all(h);
    }
    h_run(h, ET / 2);
    ck_assert_uint_gt(jr__raft_first_index(R(h, 0)), jr__raft_last_index(R(h, f)) + 1);
}

static int snap_sent, snap_dropped;
static int drop_second_chunk_once(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    (void)arg;
    if (m->type != JR__MSG_SNAP) return 1;
    snap_sent++;
    if (m->u.snap.offset == 1000 && !snap_dropped) {
        snap_dropped = 1;
        return 0;
    }
    return 1;
}

START_TEST(snapshot_install_chunked_and_resumed)
{
    harness h;
    snapshotting(&h, 14, 2500, 1000);
    jr__progress p;
    ck_assert_int_eq(jr__raft_progress(R(&h, 0), 2, &p), 0);
    ck_assert_uint_gt(p.match, 0); /* it took entries before it was cut off */
    ck_assert_uint_eq(p.later_snaps, 0);
    outrun_follower(&h, 2, "e");
    jr__raft *L = R(&h, 0), *F = R(&h, 2);
    ck_assert_uint_gt(jr__raft_snapshot_index(L), 0);
    snap_sent = snap_dropped = 0;
    h.filter = drop_second_chunk_once;
    h_heal(&h);
    h_run(&h, 3 * ET);
    ck_assert_int_eq(snap_dropped, 1);
    ck_assert_int_ge(snap_sent, 4); /* 3 chunks (1000 + 1000 + 500) and the resent one */
    /* one need of a snapshot by a member that had taken entries, however many chunks */
    ck_assert_int_eq(jr__raft_progress(L, 2, &p), 0);
    ck_assert_uint_eq(p.later_snaps, 1);
    ck_assert_uint_gt(jr__raft_snapshot_index(F), 0);
    ck_assert_uint_eq(h_commit(&h, 2), h_commit(&h, 0));
    ck_assert_uint_eq(h.nodes[2].sm_hash, h.nodes[0].sm_hash);
    /* and it continues from the log */
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, 0, "more", &idx), 0);
    h_run(&h, ET);
    ck_assert_uint_eq(h_commit(&h, 2), idx);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* later_snaps counts the needs of a snapshot, not the snapshots sent: a follower that refuses
 * the ones it is sent (its node cannot take one now) and is sent them again, heartbeat after
 * heartbeat, needed one snapshot; only once it took entries past the one it installed does the
 * log's going past it again count as another. */
START_TEST(a_snapshot_refused_and_sent_again_is_one_later_snapshot)
{
    harness h;
    snapshotting(&h, 15, 600, 0);
    jr__raft *L = R(&h, 0);
    jr__progress p;
    outrun_follower(&h, 2, "a");
    h.nodes[2].refuse_snaps = 1;
    h_heal(&h);
    h_run(&h, 3 * ET);
    ck_assert_int_ge(h.nodes[2].snaps_refused, 3);
    ck_assert_int_eq(jr__raft_progress(L, 2, &p), 0);
    ck_assert_uint_eq(p.later_snaps, 1);
    h.nodes[2].refuse_snaps = 0;
    h_run(&h, 2 * ET);
    ck_assert_uint_eq(h_commit(&h, 2), h_commit(&h, 0));
    ck_assert_int_eq(jr__raft_progress(L, 2, &p), 0);
    ck_assert_uint_eq(p.later_snaps, 1);
    outrun_follower(&h, 2, "b"); /* caught on since: a second need */
    h_heal(&h);
    h_run(&h, 2 * ET);
    ck_assert_int_eq(jr__raft_progress(L, 2, &p), 0);
    ck_assert_uint_eq(p.later_snaps, 2);
    ck_assert_uint_eq(h_commit(&h, 2), h_commit(&h, 0));
    ck_assert_uint_eq(h.nodes[2].sm_hash, h.nodes[0].sm_hash);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* The count on a member's progress alone: a member whose match dropped below the one its last
 * later snapshot was counted at (it restarted holding less) and then moved again has caught on
 * anew, and the next snapshot it needs is another later one. */
START_TEST(a_later_snapshot_after_the_match_dropped_is_counted)
{
    harness h;
    h_init(&h, 3, 16);
    h_start(&h, 3, 3);
    elect(&h, 0);
    jr__prog p;
    memset(&p, 0, sizeof p);
    p.id = 2;
    p.state = JR__PROBE;
    p.match = 60;
    jr__prog_snapshot(&p, 100);
    ck_assert_uint_eq(p.later_snaps, 1);
    p.state = JR__PROBE; /* refused: sent again with the match where it was */
    jr__prog_snapshot(&p, 100);
    ck_assert_uint_eq(p.later_snaps, 1);
    jr__vouch_lost(R(&h, 0), &p, 30, 1); /* restarted holding 30 */
    ck_assert_uint_eq(p.match, 30);
    p.state = JR__PROBE;
    jr__prog_snapshot(&p, 100); /* before it moved: the same need */
    ck_assert_uint_eq(p.later_snaps, 1);
    p.state = JR__PROBE;
    p.match = 45; /* caught on again, below where the last count began */
    jr__prog_snapshot(&p, 120);
    ck_assert_uint_eq(p.later_snaps, 2);
    h_free(&h);
}
END_TEST

/* restart ---------------------------------------------------------------------------------------*/

START_TEST(restart_recovers_from_durable_state)
{
    harness h;
    h_init(&h, 3, 15);
    h.snap_every = 7;
    h.snap_trailing = 1;
    h_start(&h, 3, 3);
    elect(&h, 0);
    char s[16];
    for (int i = 0; i < 20; i++) {
        snprintf(s, sizeof s, "r%d", i);
        ck_assert_int_eq(h_propose(&h, 0, s, NULL), 0);
    }
    h_run(&h, ET);
    uint64_t commit = h_commit(&h, 0), last = jr__raft_last_index(R(&h, 0));
    uint64_t term = term_of(&h, 0);
    for (int i = 0; i < 3; i++) h_crash(&h, i);
    for (int i = 0; i < 3; i++) h_restart(&h, i);
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(jr__raft_last_index(R(&h, i)), last);
        ck_assert_uint_eq(term_of(&h, i), term);
        ck_assert_uint_eq(h_commit(&h, i), commit);
        ck_assert_uint_eq(h.nodes[i].sm_index, commit);
        ck_assert_int_ne(role_of(&h, i), JR_LEADER);
    }
    int l = h_wait_leader(&h, 20 * ET);
    ck_assert_int_ge(l, 0);
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, l, "again", &idx), 0);
    h_run(&h, ET);
    for (int i = 0; i < 3; i++) ck_assert_uint_eq(h.nodes[i].sm_index, idx);
    /* a follower crash in the middle of replication */
    int f = (l + 1) % 3;
    ck_assert_int_eq(h_propose(&h, l, "x1", NULL), 0);
    h_crash(&h, f);
    ck_assert_int_eq(h_propose(&h, l, "x2", &idx), 0);
    h_run(&h, ET);
    h_restart(&h, f);
    h_run(&h, ET);
    /* its VOUCH made the leader append a blank entry (vouch.c): applied too */
    ck_assert_uint_eq(h.nodes[f].sm_index, idx + 1);
    ck_assert_uint_eq(jr__raft_last_index(R(&h, l)), idx + 1);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* A follower whose storage lost entries it had acknowledged (it restarts damaged, with a shorter
 * log) is repaired by the current leader: its rejection shows the leader's idea of its match is
 * wrong, so the leader probes it from what it says it holds — instead of probing the same index
 * over and over (match never went down before). Commit does not move back. */
START_TEST(leader_repairs_a_follower_that_lost_acked_entries)
{
    harness h;
    h_init(&h, 3, 16);
    h_start(&h, 3, 3);
    elect(&h, 0);
    char s[16];
    for (int i = 0; i < 30; i++) {
        snprintf(s, sizeof s, "e%d", i);
        ck_assert_int_eq(h_propose(&h, 0, s, NULL), 0);
    }
    h_run(&h, ET);
    uint64_t last = jr__raft_last_index(R(&h, 0)), commit = h_commit(&h, 0);
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 1)), last);

    /* node 1 loses everything after its 5th entry, acknowledged long ago */
    h_crash(&h, 1);
    h_node *nd = &h.nodes[1];
    uint64_t keep = 5 - nd->dfirst + 1;
    for (uint64_t k = keep; k < nd->dn; k++) free(nd->dlog[k].data);
    nd->dn = keep;
    if (nd->commit > 5) nd->commit = 5;
    h_restart(&h, 1);
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 1)), 5);

    uint64_t sent0 = h.sent;
    h_run(&h, ET);
    last++; /* the blank entry the leader appended on its VOUCH (vouch.c) */
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 0)), last);
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 1)), last);
    ck_assert_uint_eq(h.nodes[1].sm_index, last); /* the blank entry committed and applied */
    ck_assert_uint_ge(h_commit(&h, 0), commit + 1);
    /* a handful of probes and appends, not a loop (heartbeats included) */
    ck_assert_uint_lt(h.sent - sent0, 200);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* Node 3 (index 2) as a follower that is busy or cut off (drop_all_of_3: nothing reaches it,
 * it says nothing) or only loses its APPENDs (drop_appends_to_3: it answers heartbeats); both
 * count the APPENDs with entries the leader sends it. */
static int drop_all_of_3(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    if (m->to == 3 && m->type == JR__MSG_APPEND && m->u.append.n) ++*(int *)arg;
    return m->to != 3 && m->from != 3;
}

static int drop_appends_to_3(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    if (m->to != 3 || m->type != JR__MSG_APPEND) return 1;
    if (m->u.append.n) ++*(int *)arg;
    return 0;
}

/* Entries in flight to a follower that has said nothing for a whole heartbeat interval are not
 * sent again at once: it is busy (what it was sent may wait for it) or cut off, and resending
 * would only add to its backlog. They go again after two silent intervals, four, eight, then
 * every eighth (a one-way cut loses its answers, not what it is sent); once it answers a heartbeat,
 * the next interval without progress brings the retry, and it catches up. A follower that
 * answers heartbeats but not APPENDs (they are lost) is sent them again every interval. */
START_TEST(silent_follower_is_not_sent_its_window_again)
{
    harness h;
    h_init(&h, 3, 21);
    h_start(&h, 3, 3);
    elect(&h, 0);
    h_propose_n(&h, 0, 5, "warm"); /* every follower replicating */
    int sent = 0;
    h.filter = drop_all_of_3;
    h.filter_arg = &sent;
    h_propose_n(&h, 0, 20, "busy");
    ck_assert_int_gt(sent, 0); /* the pipeline's own sends */
    sent = 0;
    uint64_t hb = h.cfg.heartbeat_interval;
    h_run(&h, 9 * hb); /* 9 or 10 ticks: sent again at the 2nd, 4th and 8th */
    ck_assert_int_ge(sent, 1);
    ck_assert_int_le(sent, 3);
    /* it speaks again: a retry at the next tick without progress, and it catches up */
    h.filter = NULL;
    h_run(&h, 3 * hb);
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 2)), jr__raft_last_index(R(&h, 0)));

    /* APPENDs lost while heartbeats go through: retried every interval */
    h.filter = drop_appends_to_3;
    h_propose_n(&h, 0, 20, "lossy");
    sent = 0;
    h_run(&h, 3 * hb);
    ck_assert_int_ge(sent, 2);
    h.filter = NULL;
    h_run(&h, 3 * hb);
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 2)), jr__raft_last_index(R(&h, 0)));
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* Interned configurations: equal memberships share one object, counted; the last reference
 * frees it. */
START_TEST(configurations_are_interned)
{
    jr__confs *p;
    ck_assert_int_eq(jr__confs_new(NULL, &p), 0);
    jr__conf a = {3, {{1, 1}, {2, 1}, {3, 1}}}, b = a, c = a;
    c.m[2].voter = 0;
    const jr__conf *x = jr__confs_get(p, &a), *y = jr__confs_get(p, &b), *z = jr__confs_get(p, &c);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_eq(x, y);
    ck_assert_ptr_ne(x, z);
    ck_assert_uint_eq(jr__confs_count(p), 2);
    ck_assert_uint_eq(x->n, 3);
    ck_assert_uint_eq(z->m[2].voter, 0);
    for (int i = 0; i < 100; i++) { /* enough distinct ones to grow the table */
        jr__conf d = {1, {{(jr__id)(1000 + i), 1}}};
        ck_assert_ptr_nonnull(jr__confs_get(p, &d));
    }
    ck_assert_uint_eq(jr__confs_count(p), 102);
    ck_assert_ptr_eq(jr__confs_get(p, &a), x);
    jr__confs_put(p, x);
    jr__confs_put(p, y);
    ck_assert_uint_eq(jr__confs_count(p), 102); /* one reference left */
    jr__confs_put(p, jr__confs_ref(x));
    jr__confs_put(p, x);
    ck_assert_uint_eq(jr__confs_count(p), 101);
    jr__confs_put(p, z);
    ck_assert_uint_eq(jr__confs_count(p), 100);
    jr__confs_free(p); /* frees the rest */
}
END_TEST

/* malformed input -------------------------------------------------------------------------------*/

typedef struct {
    uint64_t term, commit, last;
    int role;
    jr__id leader, vote;
} snapshot_t;

static snapshot_t state_of(harness *h, int i)
{
    jr__raft *r = R(h, i);
    snapshot_t s = {jr__raft_term(r), jr__raft_commit_index(r), jr__raft_last_index(r),
                    jr__raft_role(r), jr__raft_leader(r),       h->nodes[i].vote};
    return s;
}

static void same_state(harness *h, int i, snapshot_t s, const char *what)
{
    snapshot_t t = state_of(h, i);
    ck_assert_msg(s.term == t.term && s.commit == t.commit && s.last == t.last &&
                      s.role == t.role && s.leader == t.leader && s.vote == t.vote,
                  "%s changed node %d", what, i);
}

START_TEST(malformed_input_changes_nothing_harmful)
{
    harness h;
    h_init(&h, 3, 16);
    h_start(&h, 3, 3);
    elect(&h, 0);
    ck_assert_int_eq(h_propose(&h, 0, "ok", NULL), 0);
    h_run(&h, ET / 2);
    snapshot_t f = state_of(&h, 1), l = state_of(&h, 0);
    uint64_t t = f.term;
    jr__entry good = {t, f.last + 1, JR__ENTRY_NORMAL, 1, (const uint8_t *)"g"};
    jr__msg base = {.type = JR__MSG_APPEND, .group = 7, .from = 1, .to = 2, .term = t};
    base.u.append.prev_index = f.last;
    base.u.append.prev_term = t;
    base.u.append.commit = f.commit;
    base.u.append.n = 1;
    base.u.append.entries = &good;
    jr__msg m;

    m = base, m.group = 8;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    m = base, m.to = 3;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    m = base, m.from = 0;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    m = base, m.from = 2;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    m = base, m.type = 0;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    m = base, m.type = 200;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    m = base, m.term = 0;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    m = base, m.u.append.entries = NULL;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    m = base, m.u.append.n = JR__MAX_APPEND_ENTRIES + 1;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    jr__entry bad = good;
    m = base, m.u.append.entries = &bad;
    bad.index = good.index + 1; /* a gap */
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    bad = good, bad.term = t + 1; /* newer than the message */
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    bad = good, bad.type = 9;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    bad = good, bad.type = JR__ENTRY_CONFIG; /* "g" is no configuration */
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    bad = good, bad.data = NULL;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    m = base, m.u.append.prev_term = 0;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    /* terms and indexes out of the wire bounds (raft.h): a term past JR__TERM_MAX or more than
     * JR__TERM_LEAP ahead, an index past JR__INDEX_MAX */
    m = base, m.term = UINT64_MAX - 1;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    m = base, m.term = t + JR__TERM_LEAP + 1;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    m = base, m.u.append.commit = JR__INDEX_MAX + 1;
    ck_assert_int_eq(h_inject(&h, 1, &m), JR_EINVAL);
    jr__msg hb = {.type = JR__MSG_HEARTBEAT, .group = 7, .from = 1, .to = 2, .term = t};
    hb.u.heartbeat.commit = UINT64_MAX;
    ck_assert_int_eq(h_inject(&h, 1, &hb), JR_EINVAL);
    ck_assert_int_eq(jr__raft_hb_recv(R(&h, 1), h.now, 1, UINT64_MAX - 1, 1), 0);
    jr__msg sn = {.type = JR__MSG_SNAP, .group = 7, .from = 1, .to = 2, .term = t};
    sn.u.snap.index = 50;
    sn.u.snap.sterm = t;
    sn.u.snap.conf = (const uint8_t *)"\x01";
    sn.u.snap.conf_len = 1;
    ck_assert_int_eq(h_inject(&h, 1, &sn), JR_EINVAL);
    same_state(&h, 1, f, "a malformed message");

    /* stale terms are refused: an APPEND of an old term truncates nothing */
    m = base, m.term = t - 1, good.term = t - 1, m.u.append.prev_index = 1,
    m.u.append.prev_term = 1, good.index = 2;
    ck_assert_int_eq(h_inject(&h, 1, &m), 0);
    same_state(&h, 1, f, "a stale APPEND");
    jr__msg v = {.type = JR__MSG_VOTE, .group = 7, .from = 3, .to = 2, .term = t - 1};
    v.u.vote.last_index = 1000;
    v.u.vote.last_term = 1000; /* a last entry newer than the candidate's term: malformed */
    ck_assert_int_eq(h_inject(&h, 1, &v), JR_EINVAL);
    v.u.vote.last_term = t - 1;
    ck_assert_int_eq(h_inject(&h, 1, &v), 0);
    same_state(&h, 1, f, "a stale VOTE");
    /* a vote of a later term while the leader is alive: refused (lease), term unchanged */
    v.term = t + 3;
    ck_assert_int_eq(h_inject(&h, 1, &v), 0);
    same_state(&h, 1, f, "a disruptive VOTE");

    /* responses from a stranger to the leader are ignored */
    jr__msg r = {.type = JR__MSG_APPEND_RESP, .group = 7, .from = 99, .to = 1, .term = t};
    r.u.append_resp.success = 1;
    r.u.append_resp.index = 1000;
    ck_assert_int_eq(h_inject(&h, 0, &r), 0);
    r.type = JR__MSG_VOTE_RESP;
    ck_assert_int_eq(h_inject(&h, 0, &r), 0);
    r.type = JR__MSG_SNAP_RESP;
    ck_assert_int_eq(h_inject(&h, 0, &r), 0);
    /* and a member's impossible acknowledgement too */
    r.type = JR__MSG_APPEND_RESP;
    r.from = 2;
    ck_assert_int_eq(h_inject(&h, 0, &r), 0);
    same_state(&h, 0, l, "a stranger's response");
    h_run(&h, 2 * ET);
    ck_assert_int_eq(role_of(&h, 0), JR_LEADER);
    ck_assert_uint_eq(term_of(&h, 0), t);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* steady state: no allocation -------------------------------------------------------------------*/

static uint64_t n_allocs;
static void *c_malloc(void *ctx, size_t n)
{
    (void)ctx;
    n_allocs++;
    return malloc(n);
}
static void *c_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    n_allocs++;
    return realloc(p, n);
}
static void c_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}
static const jr_allocator counting = {JR_ALLOCATOR_VERSION, NULL, c_malloc, c_realloc, c_free};

static void load(harness *h, int l, int rounds)
{
    char s[160];
    for (int k = 0; k < rounds; k++) {
        for (int i = 0; i < 64; i++) {
            int n = snprintf(s, sizeof s, "%d-%d-%.*s", k, i, (k * 7 + i) % 100,
                             "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                             "pppppppppppppppppppppppppppppppp");
            ck_assert_int_eq(jr__raft_propose(h->nodes[l].r, h->now, s, (size_t)n, NULL), 0);
        }
        h_flush(&h->nodes[l]);
        h_deliver_all(h);
        if (k % 10 == 0) h_run(h, 25 * MS); /* heartbeats too */
    }
}

START_TEST(steady_state_proposals_replication_commit_allocate_nothing)
{
    harness h;
    h_init(&h, 3, 21);
    h.cfg.alloc = &counting;
    h.snap_every = 1000; /* the node snapshots and the log is compacted behind it */
    h.snap_trailing = 100;
    h_start(&h, 3, 3);
    elect(&h, 0);
    load(&h, 0, 200); /* warm: rings and scratch reach their working size */
    uint64_t c0 = h_commit(&h, 0);
    n_allocs = 0;
    load(&h, 0, 500);
    uint64_t committed = h_commit(&h, 0) - c0;
    ck_assert_uint_ge(committed, 500 * 64);
    for (int i = 1; i < 3; i++) ck_assert_uint_eq(h_commit(&h, i), h_commit(&h, 0));
    ck_assert_msg(n_allocs == 0, "%llu allocations for %llu committed entries",
                  (unsigned long long)n_allocs, (unsigned long long)committed);
    h_free(&h);
}
END_TEST

/* commit delay
 * -----------------------------------------------------------------------------------*/

static int count_heartbeats(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    if (m->type == JR__MSG_HEARTBEAT || m->type == JR__MSG_HEARTBEAT_RESP) ++*(int *)arg;
    return 1;
}

/* Twenty proposals one at a time, each made once the one before committed at the leader (a
 * publisher waiting for each ack), with no time passing; returns the HEARTBEATs and answers
 * they cost. With cfg.commit_delay each APPEND carries the commit of the proposal before it, and
 * the last commit goes out alone once it has waited the delay, not before. */
static int one_at_a_time(uint64_t delay)
{
    harness h;
    int hbs = 0;
    h_init(&h, 3, 33);
    h.cfg.commit_delay = delay;
    h_start(&h, 3, 3);
    elect(&h, 0);
    h_run(&h, 5 * MS); /* the election's entry committed and told */
    h.filter = count_heartbeats;
    h.filter_arg = &hbs;
    uint64_t idx = 0;
    for (int k = 0; k < 20; k++) {
        ck_assert_int_eq(h_propose(&h, 0, "p", &idx), 0);
        h_deliver_all(&h);
        ck_assert_uint_eq(h_commit(&h, 0), idx);
        for (int i = 1; i < 3; i++) ck_assert_uint_eq(h_commit(&h, i), delay ? idx - 1 : idx);
    }
    if (delay) {
        ck_assert_int_eq(hbs, 0);
        h_run(&h, delay / 2);
        for (int i = 1; i < 3; i++) ck_assert_uint_eq(h_commit(&h, i), idx - 1);
        /* jr__raft_commit_now: the commit goes at the next tick, the delay not over */
        jr__raft_commit_now(R(&h, 1)); /* a follower: nothing */
        ck_assert_uint_eq(jr__raft_deadline(R(&h, 1)) > h.now, 1);
        ck_assert_int_eq(h_propose(&h, 0, "q", &idx), 0);
        h_deliver_all(&h);
        jr__raft_commit_now(R(&h, 0));
        ck_assert_uint_eq(jr__raft_deadline(R(&h, 0)), h.now);
        h_run(&h, 1);
        ck_assert_int_eq(hbs, 4);
        for (int i = 1; i < 3; i++) ck_assert_uint_eq(h_commit(&h, i), idx);
        hbs = 0;
        ck_assert_int_eq(h_propose(&h, 0, "r", &idx), 0);
        h_deliver_all(&h);
        h_run(&h, delay - 1);
        for (int i = 1; i < 3; i++) ck_assert_uint_eq(h_commit(&h, i), idx - 1);
        ck_assert_int_eq(hbs, 0);
        h_run(&h, 1); /* the delay is over: a HEARTBEAT to each follower, and its answer */
        ck_assert_int_eq(hbs, 4);
        for (int i = 1; i < 3; i++) ck_assert_uint_eq(h_commit(&h, i), idx);
    }
    h_check_all(&h);
    h_free(&h);
    return hbs;
}

START_TEST(a_commit_waits_up_to_the_commit_delay_for_the_next_append_to_carry_it)
{
    ck_assert_int_eq(one_at_a_time(2 * MS), 4);
    /* without the delay every commit is a HEARTBEAT and an answer per follower */
    ck_assert_int_eq(one_at_a_time(0), 20 * 4);
}
END_TEST

static int drop_resp_from_3(harness *h, const jr__msg *m, void *arg)
{
    (void)h;
    return !(*(int *)arg && m->type == JR__MSG_APPEND_RESP && m->from == 3);
}

/* jr__raft_commit_now asks for a commit some follower has not acknowledged yet (its answer is
 * late: a follower that synced other work first). That follower is told the commit in the flush
 * that counts its acknowledgement, not once the commit delay is over: a read barrier's reader
 * waits for exactly such a follower's replica to apply the barrier's entry. */
START_TEST(a_commit_told_at_once_reaches_a_follower_that_acknowledges_it_later)
{
    harness h;
    int hold = 0;
    h_init(&h, 3, 34);
    h.cfg.commit_delay = 2 * MS;
    h_start(&h, 3, 3);
    elect(&h, 0);
    h_run(&h, 5 * MS); /* the election's entry committed and told */
    h.filter = drop_resp_from_3;
    h.filter_arg = &hold;
    hold = 1;
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, 0, "barrier", &idx), 0);
    h_deliver_all(&h); /* committed with node 2's acknowledgement; node 3's is held back */
    ck_assert_uint_eq(h_commit(&h, 0), idx);
    ck_assert_uint_eq(jr__raft_last_index(R(&h, 2)), idx);
    jr__raft_commit_now(R(&h, 0));
    h_run(&h, 1);
    ck_assert_uint_eq(h_commit(&h, 1), idx); /* told at once */
    ck_assert_uint_lt(h_commit(&h, 2), idx); /* it cannot take it yet */
    hold = 0;
    jr__msg ack = {.type = JR__MSG_APPEND_RESP,
                   .group = h.cfg.group,
                   .from = 3,
                   .to = 1,
                   .term = jr__raft_term(R(&h, 0))};
    ack.u.append_resp.success = 1;
    ack.u.append_resp.index = idx;
    ck_assert_int_eq(h_inject(&h, 0, &ack), 0);
    /* the HEARTBEAT leaves with the flush that counted the acknowledgement, no time passing */
    ck_assert_uint_eq(h_queued(&h, JR__MSG_HEARTBEAT, 0, 2), 1);
    h_deliver_all(&h);
    ck_assert_uint_eq(h_commit(&h, 2), idx);
    /* a later commit not asked for waits the delay again */
    ck_assert_int_eq(h_propose(&h, 0, "later", &idx), 0);
    h_deliver_all(&h);
    ck_assert_uint_eq(h_commit(&h, 0), idx);
    ck_assert_uint_eq(h_queued(&h, JR__MSG_HEARTBEAT, 0, -1), 0);
    for (int i = 1; i < 3; i++) ck_assert_uint_eq(h_commit(&h, i), idx - 1);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* timers near the end of the clock --------------------------------------------------------------*/

static void count_send(void *ctx, jr__raft *r, const jr__msg *m)
{
    (void)r;
    (void)m;
    ++*(int *)ctx;
}

static void no_notify(void *ctx, jr__raft *r)
{
    (void)ctx;
    (void)r;
}

/* A follower of three voters started at `now` with election timeout `et`: its deadline, and
 * whether ticking at now sent anything (a campaign). */
static uint64_t follower_deadline(uint64_t now, uint64_t et, int *sent)
{
    *sent = 0;
    jr__raft_io io = {.ctx = sent, .send = count_send, .notify = no_notify};
    jr__raft_config cfg = {
        .group = 1, .self = 1, .election_timeout = et, .heartbeat_interval = 100 * H_MS, .seed = 5};
    jr__raft *r;
    ck_assert_int_eq(jr__raft_new(&cfg, &io, &r), 0);
    jr__conf c = {.n = 3, .m = {{1, 1}, {2, 1}, {3, 1}}};
    ck_assert_int_eq(jr__raft_bootstrap(r, &c), 0);
    ck_assert_int_eq(jr__raft_start(r, now), 0);
    uint64_t d = jr__raft_deadline(r);
    jr__raft_tick(r, now);
    jr__raft_free(r);
    return d;
}

/* Deadlines saturate (util/deadline.h): a clock near 2^64 or a huge election timeout never
 * wraps a deadline into the past (which would campaign at once, and at every tick). */
START_TEST(deadlines_near_the_end_of_the_clock_saturate)
{
    int sent;
    uint64_t now = UINT64_MAX - 1000;
    ck_assert_uint_eq(follower_deadline(now, 1000 * H_MS + 1, &sent), UINT64_MAX);
    ck_assert_int_eq(sent, 0);
    uint64_t et = (1ULL << 63) + 12345; /* t + rand(t) does not fit */
    ck_assert_uint_ge(follower_deadline(1, et, &sent), et);
    ck_assert_int_eq(sent, 0);
    ck_assert_uint_eq(follower_deadline(1, 1000 * H_MS, &sent) >= 1000 * H_MS + 1, 1);
}
END_TEST

/* A held replica (jr__raft_hold: its host cannot yet tell whether the group still exists) grants
 * no vote and does not campaign, while it still follows and acknowledges: with the leader gone,
 * the third voter cannot be elected without it, and neither can it. Released, an election
 * succeeds at once. */
START_TEST(a_held_replica_neither_votes_nor_campaigns)
{
    harness h;
    h_init(&h, 3, 7);
    h_start(&h, 3, 3);
    elect(&h, 0);
    jr__raft_hold(R(&h, 1), 1);
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, 0, "x", &idx), 0);
    h_run(&h, ET / 2);
    ck_assert_uint_ge(h_commit(&h, 1), idx); /* it still takes the leader's entries */
    h_crash(&h, 0);
    h_run(&h, 10 * ET);
    ck_assert_int_ne(role_of(&h, 1), JR_LEADER);
    ck_assert_int_ne(role_of(&h, 2), JR_LEADER);
    jr__raft_hold(R(&h, 1), 0);
    ck_assert_int_ge(h_wait_leader(&h, 5 * ET), 1);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

/* What a leader tells its members ----------------------------------------------------------------
 * A quorum of followers can commit an entry before the leader's own write of it is durable (a
 * host's sync still running). The leader tells no member a commit index past what it holds
 * durable itself, and, for a group that applies only durable commits (jr__raft_tell_durable_commit,
 * the meta group with the host's sync), none past the commit index of its own durable hard
 * state: told earlier, a member would apply and answer before the leader can. The filter checks
 * every APPEND and HEARTBEAT the leader hands to the network, when it does. */
struct told_check {
    int tell_durable_commit;
    uint64_t appends, heartbeats, max_told;
};

static int check_told(harness *h, const jr__msg *m, void *arg)
{
    struct told_check *t = arg;
    if (m->from != 1 || (m->type != JR__MSG_APPEND && m->type != JR__MSG_HEARTBEAT)) return 1;
    uint64_t c = m->type == JR__MSG_APPEND ? m->u.append.commit : m->u.heartbeat.commit;
    jr__progress self;
    ck_assert_int_eq(jr__raft_progress(h->nodes[0].r, 0, &self), 0);
    ck_assert_uint_le(c, self.match); /* its own durable index */
    if (t->tell_durable_commit) ck_assert_uint_le(c, jr__raft_durable_commit(h->nodes[0].r));
    t->appends += m->type == JR__MSG_APPEND;
    t->heartbeats += m->type == JR__MSG_HEARTBEAT;
    if (c > t->max_told) t->max_told = c;
    return 1;
}

START_TEST(a_leader_tells_no_commit_past_its_own_durable_write)
{
    harness h;
    struct told_check t = {0};
    h_init(&h, 3, 21);
    h_start(&h, 3, 3);
    elect(&h, 0);
    h.filter = check_told;
    h.filter_arg = &t;
    /* the leader's entry writes are slow: S2 and S3 commit the entry without it */
    h.nodes[0].hold = 2;
    uint64_t idx;
    ck_assert_int_eq(h_propose(&h, 0, "x", &idx), 0);
    h_deliver_all(&h);
    ck_assert_uint_eq(h_commit(&h, 0), idx);
    ck_assert_uint_lt(h_commit(&h, 1), idx);
    ck_assert_uint_lt(h_commit(&h, 2), idx);
    /* its write lands: the commit goes out at once, not with the next heartbeat */
    h.nodes[0].hold = 0;
    h.nodes[0].notified = 1;
    h_flush(&h.nodes[0]);
    h_deliver_all(&h);
    ck_assert_uint_eq(h_commit(&h, 1), idx);
    ck_assert_uint_eq(h_commit(&h, 2), idx);
    ck_assert_uint_ge(t.max_told, idx);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

START_TEST(a_durable_apply_leader_tells_no_commit_past_its_durable_hard_state)
{
    harness h;
    struct told_check t = {.tell_durable_commit = 1};
    h_init(&h, 3, 22);
    h_start(&h, 3, 3);
    elect(&h, 0);
    jr__raft_tell_durable_commit(R(&h, 0));
    h.filter = check_told;
    h.filter_arg = &t;
    for (int i = 0; i < 20; i++) {
        char s[16];
        snprintf(s, sizeof s, "y-%d", i);
        uint64_t idx;
        ck_assert_int_eq(h_propose(&h, 0, s, &idx), 0);
        h_deliver_all(&h);
        /* told once the leader wrote the commit in its hard state, in the same round */
        ck_assert_uint_eq(h_commit(&h, 0), idx);
        ck_assert_uint_eq(jr__raft_durable_commit(R(&h, 0)), idx);
        ck_assert_uint_eq(h_commit(&h, 1), idx);
        ck_assert_uint_eq(h_commit(&h, 2), idx);
    }
    ck_assert_uint_gt(t.heartbeats, 0);
    h_check_all(&h);
    h_free(&h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("raft");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, conf_roundtrip_and_strict_decode);
    tcase_add_test(tc, memlog_rings_wrap_grow_truncate_compact);
    tcase_add_test(tc, memlog_growing_copies_at_most_half_the_ring);
    tcase_add_test(tc, basic_election_and_commit);
    tcase_add_test(tc, single_voter_leads_at_once);
    tcase_add_test(tc, split_votes_resolve);
    tcase_add_test(tc, vote_counts_only_when_durable);
    tcase_add_test(tc, leader_reports_progress);
    tcase_add_test(tc, a_new_leader_reports_a_member_it_never_heard_from_as_not_contacted);
    tcase_add_loop_test(tc, figure7_follower_repaired, 0, (int)(sizeof fig7 / sizeof fig7[0]));
    tcase_add_test(tc, figure8_old_term_not_committed_by_counting);
    tcase_add_test(tc, prevote_partitioned_node_does_not_disrupt);
    tcase_add_test(tc, simultaneous_pre_candidates_do_not_split_the_vote);
    tcase_add_test(tc, a_lagging_pre_candidate_ranked_ahead_yields_to_a_newer_log);
    tcase_add_test(tc, a_stuck_pre_candidate_stops_refusing_after_a_quarter_election_timeout);
    tcase_add_test(tc, a_refused_pre_candidate_grants_the_survivor_behind_it);
    tcase_add_test(tc, check_quorum_isolated_leader_steps_down);
    tcase_add_test(tc, transfer_to_named_peer);
    tcase_add_test(tc, transfer_to_best_peer);
    tcase_add_test(tc, transfer_blocks_proposals_and_is_abandoned);
    tcase_add_test(tc, transfer_target_must_be_a_voter);
    tcase_add_test(tc, observers_never_campaign_or_count);
    tcase_add_test(tc,
                   a_capped_observer_takes_no_entries_beyond_its_cap_and_never_holds_up_commits);
    tcase_add_test(tc, an_empty_joiner_is_judged_by_its_floor);
    tcase_add_test(tc, an_empty_joiner_starts_at_its_floor_term);
    tcase_add_test(tc, membership_one_change_at_a_time);
    tcase_add_test(tc, config_reverts_on_truncation);
    tcase_add_test(tc, snapshot_install_chunked_and_resumed);
    tcase_add_test(tc, a_snapshot_refused_and_sent_again_is_one_later_snapshot);
    tcase_add_test(tc, a_later_snapshot_after_the_match_dropped_is_counted);
    tcase_add_test(tc, restart_recovers_from_durable_state);
    tcase_add_test(tc, leader_repairs_a_follower_that_lost_acked_entries);
    tcase_add_test(tc, silent_follower_is_not_sent_its_window_again);
    tcase_add_test(tc, configurations_are_interned);
    tcase_add_test(tc, malformed_input_changes_nothing_harmful);
    tcase_add_test(tc, deadlines_near_the_end_of_the_clock_saturate);
    tcase_add_test(tc, steady_state_proposals_replication_commit_allocate_nothing);
    tcase_add_test(tc, a_held_replica_neither_votes_nor_campaigns);
    tcase_add_test(tc, a_commit_waits_up_to_the_commit_delay_for_the_next_append_to_carry_it);
    tcase_add_test(tc, a_commit_told_at_once_reaches_a_follower_that_acknowledges_it_later);
    tcase_add_test(tc, a_leader_tells_no_commit_past_its_own_durable_write);
    tcase_add_test(tc, a_durable_apply_leader_tells_no_commit_past_its_durable_hard_state);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
