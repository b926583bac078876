/*
 * Forged frames: structurally valid frames (built with the wire encoder, so their checksums are
 * right) carrying random Raft messages and heartbeat items, claiming to come from the node's
 * real peers, on the simulated cluster (3 nodes, a few R3 raw groups). Whatever they carry:
 *  - the node's deadline keeps advancing: a tick at a fixed time leaves nothing due at that
 *    time (a host that follows jr_node_deadline() does not spin);
 *  - once the forgeries stop, every group elects a leader again and commits a write;
 *  - a term near 2^64 cannot be adopted (term + 1 would wrap): the message is dropped, counted.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"
#include "node/liveness.h"
#include "util/rand.h"
#include "wire/frame.h"

#define N 3
#define G 4
#define MS 1000000ull
#define ET (150 * MS)

typedef struct cluster {
    jr_sim *sim;
    jr_fsm fsms[N][G + 1];
    uint64_t acked, rejected;
} cluster;

static void ignore(void *ctx, uint64_t index, const void *data, size_t len)
{
    (void)ctx;
    (void)index;
    (void)data;
    (void)len;
}

/* Every group has a leader somewhere (forged commits may have left replicas that disagree on
 * committed entries, so that it cannot commit: valid checksums are no authentication). */
static int all_leaders(void *arg, jr_sim *sim)
{
    (void)arg;
    for (uint64_t gid = 1; gid <= G; gid++) {
        int led = 0;
        for (unsigned i = 0; i < N; i++) {
            jr__raft *r = sg_raft(sim, i, gid);
            led |= r && jr__raft_role(r) == JR_LEADER;
        }
        if (!led) return 0;
    }
    return 1;
}

static int all_led(void *arg, jr_sim *sim)
{
    (void)arg;
    for (uint64_t gid = 1; gid <= G; gid++)
        if (sg_ready_leader(sim, N, gid) < 0) return 0;
    return 1;
}

static cluster *start(uint64_t seed)
{
    cluster *c = calloc(1, sizeof *c);
    c->sim = sg_new(N, seed);
    for (unsigned i = 0; i < N; i++)
        for (uint64_t gid = 1; gid <= G; gid++)
            sg_open(c->sim, N, i, gid, &c->fsms[i][gid], NULL, ignore);
    ck_assert_int_eq(jr_sim_run_until(c->sim, all_led, NULL, 40 * ET), 0);
    return c;
}

/* A value a forger might pick: small, near what the groups hold, or anywhere up to 2^64 - 1. */
static uint64_t pick(jr__rand *r, uint64_t near)
{
    switch (jr__rand_below(r, 8)) {
    case 0:
        return 0;
    case 1:
        return jr__rand_below(r, 4);
    case 2:
    case 3:
        return near + jr__rand_below(r, 5);
    case 4:
        return near > 2 ? near - 1 - jr__rand_below(r, 2) : near;
    case 5:
        return UINT64_MAX - jr__rand_below(r, 4);
    case 6:
        return (UINT64_MAX >> 1) + jr__rand_below(r, 5) - 2;
    default:
        return jr__rand_next(r) >> jr__rand_below(r, 64);
    }
}

static uint64_t nonzero(jr__rand *r, uint64_t near)
{
    uint64_t v = pick(r, near);
    return v ? v : 1;
}

/* One random Raft message for group gid from `from` to `to`, valid for the encoder as far as
 * random choice makes it (the caller drops what the encoder refuses). */
static void random_msg(jr__rand *r, jr__msg *m, jr__entry *ents, uint64_t gid, jr__id from,
                       jr__id to, uint64_t term, uint64_t last)
{
    memset(m, 0, sizeof *m);
    m->type = (uint8_t)(1 + jr__rand_below(r, JR__MSG_TYPE_MAX));
    m->flags = (uint8_t)jr__rand_below(r, 8);
    m->group = jr__rand_below(r, 16) ? gid : nonzero(r, gid);
    m->from = from;
    m->to = to;
    m->term = nonzero(r, term);
    switch (m->type) {
    case JR__MSG_VOTE:
        m->u.vote.last_index = pick(r, last);
        m->u.vote.last_term = pick(r, term);
        break;
    case JR__MSG_VOTE_RESP:
        m->u.vote_resp.granted = (uint8_t)jr__rand_below(r, 2);
        break;
    case JR__MSG_APPEND: {
        uint32_t n = (uint32_t)jr__rand_below(r, 4);
        m->u.append.prev_index = pick(r, last);
        m->u.append.prev_term = m->u.append.prev_index ? nonzero(r, term) : 0;
        if (m->u.append.prev_term > m->term) m->u.append.prev_term = m->term;
        m->u.append.commit = pick(r, last);
        uint64_t t = m->u.append.prev_term ? m->u.append.prev_term : 1;
        for (uint32_t i = 0; i < n; i++) {
            if (jr__rand_below(r, 3) == 0 && t < m->term) t++;
            ents[i] = (jr__entry){t, m->u.append.prev_index + 1 + i, (uint8_t)jr__rand_below(r, 2),
                                  1, (const uint8_t *)"f"};
        }
        m->u.append.n = n;
        m->u.append.entries = ents;
        break;
    }
    case JR__MSG_APPEND_RESP:
        m->u.append_resp.success = (uint8_t)jr__rand_below(r, 2);
        m->u.append_resp.index = pick(r, last);
        m->u.append_resp.hint_index = pick(r, last);
        m->u.append_resp.hint_term = pick(r, term);
        break;
    case JR__MSG_HEARTBEAT:
        m->u.heartbeat.commit = pick(r, last);
        break;
    case JR__MSG_HEARTBEAT_RESP:
        m->u.heartbeat_resp.match_hint = pick(r, last);
        break;
    case JR__MSG_SNAP:
        m->u.snap.index = pick(r, last);
        m->u.snap.sterm = pick(r, term);
        m->u.snap.offset = jr__rand_below(r, 2) ? 0 : pick(r, 0);
        m->u.snap.len = 1;
        m->u.snap.data = (const uint8_t *)"s";
        m->u.snap.done = (uint8_t)jr__rand_below(r, 2);
        m->u.snap.total = m->u.snap.done ? m->u.snap.offset + 1 : 0;
        break;
    case JR__MSG_SNAP_RESP:
        m->u.snap_resp.index = pick(r, last);
        m->u.snap_resp.offset = pick(r, 0);
        m->u.snap_resp.done = (uint8_t)jr__rand_below(r, 2);
        m->u.snap_resp.reject = (uint8_t)jr__rand_below(r, 2);
        break;
    default:
        break;
    }
}

/* Feeds node `to` one forged frame from node `from` with up to 8 messages. */
static void forge(cluster *c, jr__rand *r, unsigned from, unsigned to, jr__buf *b)
{
    jr_node *dst = jr_sim_node(c->sim, to);
    jr__id fid = jr__peer_find_name(dst, jr_sim_name(c->sim, from))->id, tid = dst->self;
    jr__frame_begin(b, fid, tid);
    unsigned nmsg = 1 + (unsigned)jr__rand_below(r, 8);
    jr__entry ents[4];
    for (unsigned k = 0; k < nmsg; k++) {
        uint64_t gid = 1 + jr__rand_below(r, G);
        jr__raft *rf = sg_raft(c->sim, to, gid);
        uint64_t term = rf ? jr__raft_term(rf) : 1, last = rf ? jr__raft_last_index(rf) : 1;
        if (jr__rand_below(r, 6) == 0) {
            jr__hb_item items[G];
            size_t n = 0;
            for (uint64_t g = 1; g <= G; g++)
                if (jr__rand_below(r, 2))
                    items[n++] = (jr__hb_item){g, pick(r, term), pick(r, last)};
            uint8_t type = jr__rand_below(r, 2) ? JR__MSG_NODE_HB : JR__MSG_NODE_HB_RESP;
            jr__frame_add_hb(b, type, pick(r, 0), items, n);
        } else {
            jr__msg m;
            random_msg(r, &m, ents, gid, fid, tid, term, last);
            jr__frame_add(b, &m);
        }
        b->err = 0; /* a message the encoder refused was not written: go on with the others */
    }
    ck_assert_int_eq(jr__frame_end(b), 0);
    jr_node_recv(dst, jr_sim_name(c->sim, from), b->data, b->len);
}

static void dump(cluster *c)
{
    for (uint64_t gid = 1; gid <= G; gid++)
        for (unsigned i = 0; i < N; i++) {
            jr__raft *r = sg_raft(c->sim, i, gid);
            if (!r) continue;
            fprintf(
                stderr,
                "g%llu n%u: role %d term %llu last %llu (t%llu) commit %llu quiet %d "
                "deadline %llu now %llu\n",
                (unsigned long long)gid, i, jr__raft_role(r), (unsigned long long)jr__raft_term(r),
                (unsigned long long)jr__raft_last_index(r),
                (unsigned long long)jr__raft_last_term(r),
                (unsigned long long)jr__raft_commit_index(r), jr__raft_quiet(r),
                (unsigned long long)jr__raft_deadline(r), (unsigned long long)jr_sim_now(c->sim));
        }
}

/* A tick at a fixed time leaves nothing due at that time (two ticks: the first may start work
 * that the flush schedules for "now"). */
static void assert_deadline_advances(cluster *c, unsigned i, uint64_t seed, uint64_t frame)
{
    jr_node *n = jr_sim_node(c->sim, i);
    uint64_t now = jr_sim_now(c->sim);
    for (int k = 0; k < 3 && jr_node_deadline(n) <= now; k++) jr_node_tick(n);
    if (jr_node_deadline(n) <= now) dump(c);
    ck_assert_msg(jr_node_deadline(n) > now,
                  "seed %llu, after forged frame %llu: n%u's deadline stays at now after ticks",
                  (unsigned long long)seed, (unsigned long long)frame, i);
}

static void on_ack(void *arg, int status, uint64_t index)
{
    cluster *c = arg;
    (void)index;
    if (status == 0)
        c->acked++;
    else
        c->rejected++;
}

static int acked(void *arg, jr_sim *sim)
{
    cluster *c = arg;
    (void)sim;
    return c->acked >= G;
}

/* Once the forgeries stop every group gets a leader and commits a write. */
static void assert_recovers(cluster *c, uint64_t seed)
{
    if (jr_sim_run_until(c->sim, all_led, NULL, 40 * ET) != 0) dump(c);
    ck_assert_msg(all_led(NULL, c->sim),
                  "seed %llu: a group has no leader 40 election timeouts after the forgeries",
                  (unsigned long long)seed);
    c->acked = 0;
    for (uint64_t gid = 1; gid <= G; gid++) {
        int l = sg_ready_leader(c->sim, N, gid);
        jr_group *g = jr_node_group(jr_sim_node(c->sim, (unsigned)l), gid);
        ck_assert_int_eq(jr_group_propose(g, "ok", 2, on_ack, c), 0);
    }
    ck_assert_msg(jr_sim_run_until(c->sim, acked, c, 40 * ET) == 0,
                  "seed %llu: a write is not committed after the forgeries",
                  (unsigned long long)seed);
}

START_TEST(random_forged_frames_leave_the_deadline_advancing_and_the_groups_electing)
{
    uint64_t seed = 1000 + (uint64_t)_i;
    uint64_t frames = sg_env("FORGED_FRAMES", 20000), every = sg_env("FORGED_EVERY", 1);
    cluster *c = start(seed);
    jr__rand r;
    jr__rand_seed(&r, seed);
    jr__buf b;
    jr__buf_init(&b, NULL);
    for (uint64_t f = 1; f <= frames; f++) {
        unsigned to = (unsigned)jr__rand_below(&r, N);
        unsigned from = (to + 1 + (unsigned)jr__rand_below(&r, N - 1)) % N;
        forge(c, &r, from, to, &b);
        if (f % every == 0) {
            assert_deadline_advances(c, to, seed, f);
            jr_sim_run_for(c->sim, jr__rand_below(&r, 3 * MS));
        }
    }
    for (unsigned i = 0; i < N; i++) assert_deadline_advances(c, i, seed, frames);
    if (jr_sim_run_until(c->sim, all_leaders, NULL, 40 * ET) != 0) dump(c);
    ck_assert_msg(all_leaders(NULL, c->sim),
                  "seed %llu: a group has no leader 40 election timeouts after the forgeries",
                  (unsigned long long)seed);
    for (uint64_t gid = 1; gid <= G; gid++)
        ck_assert_uint_le(sg_max_term(c->sim, N, gid), JR__TERM_MAX);
    jr__buf_free(&b);
    jr_sim_free(c->sim);
    free(c);
}
END_TEST

/* One forged message of term 2^64 - 2 to every replica of group 1. */
START_TEST(a_forged_term_near_two_to_the_64_is_dropped)
{
    cluster *c = start(77);
    jr__buf b;
    jr__buf_init(&b, NULL);
    uint64_t term0 = sg_max_term(c->sim, N, 1);
    static const uint8_t types[] = {JR__MSG_HEARTBEAT, JR__MSG_VOTE, JR__MSG_APPEND_RESP,
                                    JR__MSG_TIMEOUT_NOW};
    for (size_t k = 0; k < sizeof types; k++) {
        for (unsigned to = 0; to < N; to++) {
            unsigned from = (to + 1) % N;
            jr_node *dst = jr_sim_node(c->sim, to);
            jr__msg m;
            memset(&m, 0, sizeof m);
            m.type = types[k];
            m.group = 1;
            m.term = UINT64_MAX - 1;
            m.from = jr__peer_find_name(dst, jr_sim_name(c->sim, from))->id;
            m.to = dst->self;
            m.u.vote.last_index = UINT64_MAX - 1;
            m.u.vote.last_term = UINT64_MAX - 1;
            jr__frame_begin(&b, m.from, m.to);
            jr__frame_add(&b, &m);
            ck_assert_int_eq(jr__frame_end(&b), 0);
            uint64_t before = dst->msgs_invalid;
            jr_node_recv(dst, jr_sim_name(c->sim, from), b.data, b.len);
            ck_assert_uint_eq(dst->msgs_invalid, before + 1);
            ck_assert_uint_lt(jr__raft_term(sg_raft(c->sim, to, 1)), UINT64_MAX >> 1);
        }
        /* the same as node-level heartbeat items */
        for (unsigned to = 0; to < N; to++) {
            unsigned from = (to + 1) % N;
            jr_node *dst = jr_sim_node(c->sim, to);
            jr__id fid = jr__peer_find_name(dst, jr_sim_name(c->sim, from))->id;
            jr__hb_item it = {1, UINT64_MAX - 1, 1};
            jr__frame_begin(&b, fid, dst->self);
            jr__frame_add_hb(&b, k % 2 ? JR__MSG_NODE_HB_RESP : JR__MSG_NODE_HB, 1 + k, &it, 1);
            ck_assert_int_eq(jr__frame_end(&b), 0);
            uint64_t before = dst->live.stats.bad_items;
            jr_node_recv(dst, jr_sim_name(c->sim, from), b.data, b.len);
            ck_assert_uint_eq(dst->live.stats.bad_items, before + 1);
            ck_assert_uint_lt(jr__raft_term(sg_raft(c->sim, to, 1)), UINT64_MAX >> 1);
        }
    }
    assert_recovers(c, 77);
    ck_assert_uint_lt(sg_max_term(c->sim, N, 1), term0 + 10);
    for (unsigned i = 0; i < N; i++) assert_deadline_advances(c, i, 77, 0);
    jr__buf_free(&b);
    jr_sim_free(c->sim);
    free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("forged");
    TCase *tc = tcase_create("forged");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, a_forged_term_near_two_to_the_64_is_dropped);
    tcase_add_loop_test(tc,
                        random_forged_frames_leave_the_deadline_advancing_and_the_groups_electing,
                        0, (int)sg_env("FORGED_SEEDS", 4));
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
