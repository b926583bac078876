/*
 * Publishes forwarded to a stream leader that dies (jetraft.h jr_publish, api_stream.c
 * "Writes that reached a leader"): with a msg_id they are sent again to the next leader within
 * their deadline, every message is stored exactly once and every publish is answered as its first
 * attempt (never as a duplicate of itself); without one they end with
 * JR_ELEADERLOST saying which leader was lost and that the message may be stored — never with a
 * bare timeout; publishes that provably never reached a log (refused during a leadership
 * transfer) are retried whatever they carry; and with no leader to fail over to, the deadline
 * ends a publish with a message that says what happened.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "js/js.h"
#include "node/node.h"
#include "raft/raft.h"

#define K 300

static e2e c;
static e2e_res res[K];

static void setup(void)
{
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 99, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
}

static void teardown(void)
{
    e2e_free(&c);
}

static int make(void)
{
    const char *subj[] = {"pay.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "PAY", subj, 1, 3);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    int l = e2e_wait_stream(&c, 0, "PAY", 2, 10 * SEC);
    ck_assert_int_ge(l, 0);
    return l;
}

/* Publishes K messages through node via without waiting ("d-<i>", msg id "m-<i>" if ids). */
static void issue(unsigned via, int ids)
{
    memset(res, 0, sizeof res);
    for (int i = 0; i < K; i++) {
        char id[16], data[16];
        snprintf(id, sizeof id, "m-%d", i);
        snprintf(data, sizeof data, "d-%d", i);
        jr_pub_opts o;
        jr_pub_opts_init(&o);
        o.msg_id = ids ? id : NULL;
        ck_assert_int_eq(jr_publish(e2e_node(&c, via), "pay.in", NULL, 0, data, strlen(data), &o,
                                    e2e_pub_cb, &res[i]),
                         0);
    }
}

static int all_done(void *arg, jr_sim *sim)
{
    (void)arg;
    (void)sim;
    for (int i = 0; i < K; i++)
        if (!res[i].done) return 0;
    return 1;
}

static int count_done(void)
{
    int n = 0;
    for (int i = 0; i < K; i++) n += res[i].done;
    return n;
}

/* The leader proposed some of the publishes (and none is answered yet). */
static int proposing(void *arg, jr_sim *sim)
{
    (void)sim;
    jr_node *n = e2e_node(&c, (unsigned)*(int *)arg);
    const jr__meta_stream *s = jr__meta_stream_find(&jr__js_of(n)->st, "PAY");
    jr__srep *r = s ? jr__srep_find(jr__js_of(n), s->group) : NULL;
    return r && r->phead;
}

/* Runs until the leader has proposed publishes of the burst (more may still be on the way),
 * then crashes it: none of them had an answer. */
static void crash_mid_burst(int leader)
{
    ck_assert_int_eq(jr_sim_run_until(c.sim, proposing, &leader, SEC), 0);
    ck_assert_int_eq(count_done(), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)leader), 0);
}

/* The message stored under seq on node i ("" if none). */
static void stored(unsigned i, uint64_t seq, char *data, size_t cap)
{
    char subject[64];
    if (e2e_local_get(&c, i, "PAY", seq, subject, sizeof subject, data, cap) != 0) data[0] = 0;
}

static int held_on(unsigned i, const char *name)
{
    jr_group *g = e2e_group(&c, i, name);
    ck_assert_ptr_nonnull(g);
    return jr__raft_held(jr__group_consensus(g));
}

/* A restarted server's stream replicas come from a meta state that may be older than what the
 * server had applied (a lost WAL tail, files rolled back): one may be a replica of a stream
 * deleted since, which the other members released and answer for with "nothing". So its vote is
 * held until its meta replica was vouched for and applied everything committed before the
 * restart; then it votes again. */
START_TEST(a_restarted_servers_replicas_vote_once_its_meta_state_caught_up)
{
    make();
    ck_assert_int_eq(held_on(0, "PAY"), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, 0), 0);
    const unsigned n0[] = {0};
    ck_assert_int_eq(jr_sim_partition(c.sim, n0, 1), 0);
    ck_assert_int_eq(e2e_restart(&c, 0), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    ck_assert_int_eq(held_on(0, "PAY"), 1); /* its meta replica cannot be vouched for */
    jr_sim_heal(c.sim);
    jr_sim_run_for(c.sim, 3 * SEC);
    ck_assert_int_eq(held_on(0, "PAY"), 0);
    /* and its vote counts again: with n1 away, n0 and n2 elect a leader */
    ck_assert_int_eq(jr_sim_crash(c.sim, 1), 0);
    e2e_res r;
    ck_assert_msg(e2e_publish(&c, 0, "pay.in", "x", 1, NULL, &r) == 0, "publish: %s", r.msg);
}
END_TEST

/* Every server restarted, so a replica with nothing on disk may be one a cut WAL tail emptied
 * and opens unvouched (lib/node/group.c) — except one its server provably never held: an
 * original peer of a stream whose STREAM_ADD committed after the server's meta replica was
 * vouched for in this life. Such replicas elect a leader without waiting for a peer that
 * cannot answer (n2 hears everything and says nothing). */
START_TEST(a_stream_created_after_every_restart_elects_without_a_silent_peer)
{
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_int_eq(jr_sim_crash(c.sim, i), 0);
        ck_assert_int_eq(e2e_restart(&c, i), 0);
    }
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    ck_assert_int_eq(jr_sim_cut(c.sim, 2, 0), 0);
    ck_assert_int_eq(jr_sim_cut(c.sim, 2, 1), 0);
    const char *subj[] = {"pay.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "PAY", subj, 1, 3);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    ck_assert_msg(e2e_publish(&c, 0, "pay.in", "x", 1, NULL, &r) == 0, "publish: %s", r.msg);
    ck_assert_int_ne(e2e_replica_leader(&c, 0, "PAY"), 2);
}
END_TEST

/* A leader deposed while it was paused (a new one was elected and acknowledged a publish)
 * must not answer a read from its stale state when it wakes: reads are linearizable. */
START_TEST(a_deposed_leader_never_answers_a_read_from_its_stale_state)
{
    int l = make();
    e2e_res r;
    ck_assert_int_eq(e2e_publish(&c, (unsigned)l, "pay.in", "first", 5, NULL, &r), 0);
    ck_assert_uint_eq(r.seq, 1);
    ck_assert_int_eq(jr_sim_pause(c.sim, (unsigned)l, SEC), 0); /* within the read's timeout */
    unsigned other = (unsigned)(l + 1) % 3;
    int nl = e2e_wait_stream(&c, other, "PAY", 1, SEC);
    ck_assert_int_ge(nl, 0);
    ck_assert_int_ne(nl, l);
    ck_assert_int_eq(e2e_publish(&c, other, "pay.in", "second", 6, NULL, &r), 0);
    ck_assert_uint_eq(r.seq, 2);
    /* asked of the paused old leader, which still takes itself for the leader */
    e2e_res g;
    memset(&g, 0, sizeof g);
    ck_assert_int_eq(e2e_msg_get(&c, (unsigned)l, "PAY", 2, &g), 0);
    ck_assert_int_eq(memcmp(g.data, "second", 6), 0);
}
END_TEST

static int fifty_done(void *arg, jr_sim *sim)
{
    (void)arg, (void)sim;
    for (int i = 0; i < 50; i++)
        if (!res[i].done) return 0;
    return 1;
}

/* What a linearizable read costs: the reads of one loop turn at the leader share one log
 * entry (a TICK op each in the flush's BATCH). */
START_TEST(reads_of_one_loop_turn_cost_one_log_entry)
{
    int l = make();
    e2e_res r;
    ck_assert_int_eq(e2e_publish(&c, (unsigned)l, "pay.in", "x", 1, NULL, &r), 0);
    jr_sim_run_for(c.sim, SEC);
    jr_group *g = e2e_group(&c, (unsigned)l, "PAY");
    ck_assert_ptr_nonnull(g);
    jr_group_status st;
    st.size = sizeof st;
    ck_assert_int_eq(jr_group_status_get(g, &st), 0);
    uint64_t before = st.last_index;
    memset(res, 0, sizeof res);
    for (int i = 0; i < 50; i++)
        ck_assert_int_eq(
            jr_stream_msg_get(e2e_node(&c, (unsigned)l), "PAY", 1, e2e_msg_cb, &res[i]), 0);
    ck_assert_int_eq(jr_sim_run_until(c.sim, fifty_done, NULL, 5 * SEC), 0);
    for (int i = 0; i < 50; i++) {
        ck_assert_int_eq(res[i].status, 0);
        ck_assert_int_eq(memcmp(res[i].data, "x", 1), 0);
    }
    ck_assert_int_eq(jr_group_status_get(g, &st), 0);
    ck_assert_uint_eq(st.last_index, before + 1);
}
END_TEST

START_TEST(with_a_msg_id_every_publish_fails_over_and_is_stored_once)
{
    int l = make();
    unsigned via = (unsigned)(l + 1) % 3;
    issue(via, 1);
    crash_mid_burst(l);
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_done, NULL, 20 * SEC), 0);
    static uint8_t seen[K + 1];
    memset(seen, 0, sizeof seen);
    int dups = 0;
    for (int i = 0; i < K; i++) {
        ck_assert_msg(res[i].status == 0, "publish %d: %s: %s", i, jr_err_name(res[i].status),
                      res[i].msg);
        ck_assert_uint_ge(res[i].seq, 1);
        ck_assert_uint_le(res[i].seq, K);
        ck_assert_msg(!seen[res[i].seq], "seq %llu acked twice", (unsigned long long)res[i].seq);
        seen[res[i].seq] = 1;
        dups += res[i].duplicate;
        /* the seq holds this publish's message */
        char data[32], want[16];
        stored(via, res[i].seq, data, sizeof data);
        snprintf(want, sizeof want, "d-%d", i);
        ck_assert_str_eq(data, want);
    }
    jr_stream_state st;
    ck_assert_int_eq(e2e_state(&c, via, "PAY", &st), 0);
    ck_assert_uint_eq(st.msgs, K); /* nothing stored twice */
    ck_assert_uint_eq(st.last_seq, K);
    /* every publish is answered as its first attempt was, however many attempts it took */
    ck_assert_int_eq(dups, 0);
    /* while publishing a msg_id again, as a new call, is a duplicate of the first */
    for (int i = 0; i < K; i += K - 1) {
        char id[16];
        snprintf(id, sizeof id, "m-%d", i);
        e2e_res again;
        ck_assert_int_eq(e2e_publish(&c, via, "pay.in", "x", 1, id, &again), 0);
        ck_assert_int_eq(again.duplicate, 1);
        ck_assert_uint_eq(again.seq, res[i].seq);
    }
    fprintf(stderr, "failover: %d publishes in flight at the crash, all acked once\n", K);
}
END_TEST

START_TEST(without_a_msg_id_a_lost_leader_is_reported_as_such)
{
    int l = make();
    unsigned via = (unsigned)(l + 1) % 3;
    issue(via, 0);
    uint64_t t0 = jr_sim_now(c.sim);
    crash_mid_burst(l);
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_done, NULL, 20 * SEC), 0);
    ck_assert_uint_le(jr_sim_now(c.sim) - t0, 3 * SEC); /* bounded: about two election timeouts */
    int lost = 0, ok = 0;
    char name[8];
    snprintf(name, sizeof name, "n%d", l);
    for (int i = 0; i < K; i++) {
        if (res[i].status == 0) {
            ok++;
            char data[32], want[16];
            snprintf(want, sizeof want, "d-%d", i);
            stored(via, res[i].seq, data, sizeof data);
            ck_assert_str_eq(data, want); /* acked means stored */
            continue;
        }
        ck_assert_msg(res[i].status == JR_ELEADERLOST, "publish %d: %s: %s", i,
                      jr_err_name(res[i].status), res[i].msg);
        ck_assert_msg(strstr(res[i].msg, name) && strstr(res[i].msg, "may or may not"),
                      "publish %d: '%s' does not say what happened", i, res[i].msg);
        lost++;
    }
    ck_assert_int_gt(lost, 0);
    fprintf(stderr, "failover without msg ids: %d acked, %d JR_ELEADERLOST (%s)\n", ok, lost,
            res[K - 1].msg);
    /* writes go on with the new leader */
    e2e_res r;
    ck_assert_int_eq(e2e_publish(&c, via, "pay.in", "after", 5, NULL, &r), 0);
}
END_TEST

START_TEST(publishes_refused_by_a_stepping_down_leader_are_retried)
{
    int l = make();
    unsigned via = (unsigned)(l + 1) % 3;
    unsigned to = (unsigned)(l + 2) % 3;
    uint64_t resends = jr__js_of(e2e_node(&c, via))->not_leader_resends;
    /* publishes go on, ten every 100 us, before, during and after the transfer */
    memset(res, 0, sizeof res);
    e2e_res sd;
    memset(&sd, 0, sizeof sd);
    for (int i = 0; i < K; i++) {
        char data[16];
        snprintf(data, sizeof data, "d-%d", i);
        ck_assert_int_eq(jr_publish(e2e_node(&c, via), "pay.in", NULL, 0, data, strlen(data), NULL,
                                    e2e_pub_cb, &res[i]),
                         0);
        if (i % 10 == 9) jr_sim_run_for(c.sim, 100000);
        if (i == 50)
            ck_assert_int_eq(jr_stream_stepdown(e2e_node(&c, via), "PAY", jr_sim_name(c.sim, to),
                                                e2e_admin_cb, &sd),
                             0);
    }
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_done, NULL, 20 * SEC), 0);
    ck_assert_int_eq(e2e_wait(&c, &sd, 10 * SEC), 0);
    int ok = 0, lost = 0;
    for (int i = 0; i < K; i++) {
        /* a publish the old leader had proposed may lose its entry (JR_ELEADERLOST); one it
         * refused (JR_ENOTLEADER, or during the transfer) never reached a log: sent again */
        ck_assert_msg(res[i].status == 0 || res[i].status == JR_ELEADERLOST, "publish %d: %s: %s",
                      i, jr_err_name(res[i].status), res[i].msg);
        ok += res[i].status == 0;
        lost += res[i].status == JR_ELEADERLOST;
    }
    /* via's replica is a follower: it learns the last commit with the leader's next APPEND or
     * within the commit delay (a 64th of the heartbeat interval) */
    jr_sim_run_for(c.sim, 10 * MS);
    jr_stream_state st;
    ck_assert_int_eq(e2e_state(&c, via, "PAY", &st), 0);
    ck_assert_uint_ge(st.msgs, (uint64_t)ok);
    ck_assert_uint_le(st.msgs, (uint64_t)(ok + lost));
    /* some were refused (the transfer stops the old leader's proposals) and went again */
    resends = jr__js_of(e2e_node(&c, via))->not_leader_resends - resends;
    ck_assert_uint_gt(resends, 0);
    fprintf(stderr, "stepdown mid-burst (%s): %d acked, %d JR_ELEADERLOST, %llu sent again\n",
            sd.status ? jr_err_name(sd.status) : "done", ok, lost, (unsigned long long)resends);
}
END_TEST

START_TEST(with_no_leader_to_fail_over_to_the_deadline_says_what_happened)
{
    int l = make();
    unsigned via = (unsigned)(l + 1) % 3;
    issue(via, 1);
    crash_mid_burst(l);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)(l + 2) % 3), 0); /* no quorum left */
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_done, NULL, 20 * SEC), 0);
    char name[8];
    snprintf(name, sizeof name, "n%d", l);
    int lost = 0;
    for (int i = 0; i < K; i++) {
        if (res[i].status == 0) continue; /* committed before the crash */
        ck_assert_msg(res[i].status == JR_ELEADERLOST, "publish %d: %s: %s", i,
                      jr_err_name(res[i].status), res[i].msg);
        ck_assert_msg(strstr(res[i].msg, name) && strstr(res[i].msg, "same msg_id is safe"),
                      "publish %d: '%s'", i, res[i].msg);
        lost++;
    }
    ck_assert_int_gt(lost, 0);
    fprintf(stderr, "no leader left: %d JR_ELEADERLOST (%s)\n", lost, res[K - 1].msg);
}
END_TEST

/* Reporting after a leader change. A new leader counts every member as in contact for an
 * election timeout (check-quorum's grace), but what it reports is only what it heard: a replica
 * that crashed or was cut off before the election is shown offline and not current, from the
 * first stream info the new leader answers, never as active since the election. */

/* The index of a node other than a and b whose replica of PAY leads, or -1. */
static int new_leader(e2e *c5, unsigned a, unsigned b)
{
    for (unsigned i = 0; i < 5; i++) {
        jr_group *g = i == a || i == b ? NULL : e2e_group(c5, i, "PAY");
        jr_group_status st;
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        if (g && jr_group_status_get(g, &st) == 0 && st.role == JR_LEADER) return (int)i;
    }
    return -1;
}

typedef struct gone {
    e2e *c;
    unsigned a, b; /* the nodes that cannot lead */
} gone;

static int led(void *arg, jr_sim *sim)
{
    (void)sim;
    const gone *x = arg;
    return new_leader(x->c, x->a, x->b) >= 0;
}

/* The replica line of node i in r (asserts there is one). */
static int rep_of_node(e2e *c5, const e2e_res *r, unsigned i)
{
    for (size_t k = 0; k < r->nreplicas && k < 8; k++)
        if (!strcmp(r->reps[k].name, jr_sim_name(c5->sim, i))) return (int)k;
    ck_abort_msg("no replica line for n%u:\n%s", i, r->text);
    return -1;
}

START_TEST(after_a_leader_change_a_replica_the_new_leader_never_heard_is_shown_offline)
{
    e2e c5;
    memset(&c5, 0, sizeof c5);
    ck_assert_int_eq(e2e_new(&c5, 5, 17, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c5, 5, 10 * SEC), 0);
    const char *subj[] = {"pay.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "PAY", subj, 1, 5);
    e2e_res r;
    ck_assert_msg(e2e_add(&c5, 0, &cfg, &r) == 0, "add: %s", r.msg);
    int l = e2e_wait_stream(&c5, 0, "PAY", 4, 10 * SEC);
    ck_assert_int_ge(l, 0);
    ck_assert_int_eq(e2e_publish(&c5, (unsigned)l, "pay.in", "x", 1, NULL, &r), 0);
    /* every replica current, as the old leader heard them all */
    ck_assert_int_eq(e2e_wait_stream(&c5, (unsigned)l, "PAY", 4, 10 * SEC), l);
    /* replica v is cut off, then the leader crashes: the survivors elect one of theirs, whose
     * progress never heard from either */
    unsigned v = ((unsigned)l + 1) % 5;
    gone x = {&c5, (unsigned)l, v};
    unsigned side[1] = {v};
    ck_assert_int_eq(jr_sim_partition(c5.sim, side, 1), 0);
    ck_assert_int_eq(jr_sim_crash(c5.sim, (unsigned)l), 0);
    ck_assert_int_eq(jr_sim_run_until(c5.sim, led, &x, 5 * SEC), 0);
    int nl = new_leader(&c5, (unsigned)l, v);
    ck_assert_int_ge(nl, 0);
    uint64_t elected = jr_sim_now(c5.sim);
    /* the new leader's own view: never heard from the two, so no last seen and not current */
    jr_group *g = e2e_group(&c5, (unsigned)nl, "PAY");
    jr_group_status st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    ck_assert_int_eq(jr_group_status_get(g, &st), 0);
    for (size_t i = 0; i < st.npeers; i++) {
        jr_peer_status ps;
        memset(&ps, 0, sizeof ps);
        ps.size = sizeof ps;
        ck_assert_int_eq(jr_group_peer(g, i, &ps), 0);
        int out = !strcmp(ps.name, jr_sim_name(c5.sim, (unsigned)l)) ||
                  !strcmp(ps.name, jr_sim_name(c5.sim, v));
        if (!out) continue;
        ck_assert_msg(ps.last_seen_ns == UINT64_MAX && !ps.current,
                      "%s: last seen %llu ns ago, current %d, on a leader elected without it",
                      ps.name, (unsigned long long)ps.last_seen_ns, ps.current);
    }
    /* stream info, asked within the grace (well before an election timeout is over): the two
     * are offline, never heard, not current; the two that elected it are online */
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(e2e_info(&c5, (unsigned)nl, "PAY", &r), 0);
        ck_assert_str_eq(r.leader, jr_sim_name(c5.sim, (unsigned)nl));
        ck_assert_uint_lt(jr_sim_now(c5.sim) - elected, 150 * MS);
        for (unsigned i = 0; i < 5; i++) {
            if ((int)i == nl) continue;
            int k = rep_of_node(&c5, &r, i);
            if (i == (unsigned)l || i == v) {
                ck_assert_msg(r.reps[k].offline && !r.reps[k].current &&
                                  r.reps[k].active_ns == UINT64_MAX,
                              "%s shown active %llu ns ago, %s, after a leader change it missed "
                              "(%.3f s after the election):\n%s",
                              r.reps[k].name, (unsigned long long)r.reps[k].active_ns,
                              r.reps[k].offline ? "offline" : "online",
                              (double)(jr_sim_now(c5.sim) - elected) / 1e9, r.text);
            } else {
                ck_assert_msg(!r.reps[k].offline && r.reps[k].active_ns < 150 * MS, "%s:\n%s",
                              r.reps[k].name, r.text);
            }
        }
        jr_sim_run_for(c5.sim, 60 * MS); /* a couple of heartbeats: still nothing from them */
    }
    /* the cut-off replica comes back: heard again, current once caught up */
    jr_sim_heal(c5.sim);
    ck_assert_int_ge(e2e_wait_stream(&c5, (unsigned)nl, "PAY", 3, 10 * SEC), 0);
    ck_assert_int_eq(e2e_info(&c5, (unsigned)nl, "PAY", &r), 0);
    int k = rep_of_node(&c5, &r, v);
    ck_assert_msg(!r.reps[k].offline && r.reps[k].active_ns < 150 * MS, "%s", r.text);
    k = rep_of_node(&c5, &r, (unsigned)l);
    ck_assert_msg(r.reps[k].offline && !r.reps[k].current, "%s", r.text);
    e2e_free(&c5);
}
END_TEST

/* A quiet leader reports its members' node-level contact; once a proposal wakes it, a member
 * it counted through its node and that has not answered yet is still reported as of its node's
 * last frame at the wake (not as last seen when the group went quiet), and that ages: a member
 * whose node crashed just before the wake goes offline as it would have while quiet. */
static void peer_of(jr_group *g, const char *name, jr_peer_status *out)
{
    jr_group_status st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    ck_assert_int_eq(jr_group_status_get(g, &st), 0);
    for (size_t i = 0; i < st.npeers; i++) {
        memset(out, 0, sizeof *out);
        out->size = sizeof *out;
        ck_assert_int_eq(jr_group_peer(g, i, out), 0);
        if (out->name && !strcmp(out->name, name)) return;
    }
    ck_abort_msg("no member %s", name);
}

static int awake(void *arg, jr_sim *sim)
{
    (void)sim;
    return !jr__raft_quiet(arg);
}

START_TEST(a_woken_leader_reports_the_contact_its_node_had_until_members_answer)
{
    e2e c3;
    memset(&c3, 0, sizeof c3);
    ck_assert_int_eq(e2e_new(&c3, 3, 23, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c3, 3, 10 * SEC), 0);
    const char *subj[] = {"pay.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "PAY", subj, 1, 3);
    e2e_res r;
    ck_assert_msg(e2e_add(&c3, 0, &cfg, &r) == 0, "add: %s", r.msg);
    int l = e2e_wait_stream(&c3, 0, "PAY", 2, 10 * SEC);
    ck_assert_int_ge(l, 0);
    jr_sim_run_for(c3.sim, 5 * SEC); /* idle: the group goes quiet */
    jr_group *g = e2e_group(&c3, (unsigned)l, "PAY");
    const jr__raft *raft = jr__group_consensus(g);
    ck_assert(jr__raft_quiet(raft));
    unsigned a = ((unsigned)l + 1) % 3, b = ((unsigned)l + 2) % 3;
    const char *an = jr_sim_name(c3.sim, a), *bn = jr_sim_name(c3.sim, b);
    jr_peer_status ps;
    peer_of(g, bn, &ps);
    ck_assert_msg(ps.current && ps.last_seen_ns < 150 * MS, "quiet: seen %llu ns ago",
                  (unsigned long long)ps.last_seen_ns);
    /* b crashes; before its node is taken for lost, a publish wakes the group */
    ck_assert_int_eq(jr_sim_crash(c3.sim, b), 0);
    jr_sim_run_for(c3.sim, 10 * MS);
    uint64_t woke = jr_sim_now(c3.sim);
    jr_pub_opts o;
    jr_pub_opts_init(&o);
    e2e_res pr;
    memset(&pr, 0, sizeof pr);
    ck_assert_int_eq(
        jr_publish(e2e_node(&c3, (unsigned)l), "pay.in", NULL, 0, "x", 1, &o, e2e_pub_cb, &pr), 0);
    ck_assert_int_eq(jr_sim_run_until(c3.sim, awake, (void *)raft, SEC), 0);
    /* at once, no answer yet: both reported as their node's contact, not as of going quiet */
    peer_of(g, an, &ps);
    ck_assert_msg(ps.current && ps.last_seen_ns < 150 * MS, "%s woken: seen %llu ns ago", an,
                  (unsigned long long)ps.last_seen_ns);
    peer_of(g, bn, &ps);
    ck_assert_msg(ps.last_seen_ns >= 10 * MS && ps.last_seen_ns < 150 * MS,
                  "%s woken: seen %llu ns ago", bn, (unsigned long long)ps.last_seen_ns);
    ck_assert_int_eq(e2e_wait(&c3, &pr, 5 * SEC), 0);
    ck_assert_int_eq(pr.status, 0);
    /* a answered, b never does: its contact ages from before the wake */
    jr_sim_run_for(c3.sim, 400 * MS);
    peer_of(g, an, &ps);
    ck_assert_msg(ps.current && ps.last_seen_ns < 150 * MS, "%s: seen %llu ns ago", an,
                  (unsigned long long)ps.last_seen_ns);
    peer_of(g, bn, &ps);
    ck_assert_msg(!ps.current && ps.last_seen_ns > jr_sim_now(c3.sim) - woke,
                  "%s: seen %llu ns ago, current %d", bn, (unsigned long long)ps.last_seen_ns,
                  ps.current);
    ck_assert_int_eq(e2e_info(&c3, (unsigned)l, "PAY", &r), 0);
    for (size_t k = 0; k < r.nreplicas; k++)
        ck_assert_msg(!strcmp(r.reps[k].name, bn) ? r.reps[k].offline && !r.reps[k].current
                                                  : !r.reps[k].offline && r.reps[k].current,
                      "%s", r.text);
    e2e_free(&c3);
}
END_TEST

/* Meta requests sent again --------------------------------------------------------------------*/

typedef struct admin_res {
    int done, status;
    char msg[256];
} admin_res;

static void admin_res_cb(void *arg, int status, const char *msg)
{
    admin_res *d = arg;
    d->done = 1;
    d->status = status;
    snprintf(d->msg, sizeof d->msg, "%s", msg);
}

static void admin_res_named(void *arg, int status, const char *msg, const char *name)
{
    (void)name;
    admin_res_cb(arg, status, msg);
}

static int admin_res_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((admin_res *)arg)->done;
}

static void ignore_rpc(jr_node *n, void *arg, int status, int answered, const uint8_t *p,
                       size_t len)
{
    (void)n, (void)status, (void)answered, (void)p, (void)len;
    ++*(int *)arg;
}

typedef struct gone_q {
    jr_node *n;
    const char *stream, *consumer; /* consumer NULL: the stream */
} gone_q;

/* 1 once node q->n's meta state no longer has the stream (or the consumer). */
static int meta_gone(void *arg, jr_sim *sim)
{
    (void)sim;
    const gone_q *q = arg;
    const jr__meta_stream *s = jr__meta_stream_find(&jr__js_of(q->n)->st, q->stream);
    if (!q->consumer) return s == NULL;
    return !s || !jr__meta_consumer_find(s, q->consumer);
}

/* The first attempt of a delete through node o (the next request id o draws), whose answer
 * never reached o: sent to the meta leader l as o's public call would send it while l's frames
 * to o are lost, and applied everywhere but at o. Then, the link whole again, the same request
 * through the public call, with the same id, as o sends it again after an attempt without an
 * answer: its answer reaches o before l repaired o's meta log. Returns its outcome. */
static admin_res delete_sent_twice(e2e *cl, unsigned l, unsigned o, const char *stream,
                                   const char *consumer)
{
    jr_node *on = e2e_node(cl, o);
    jr__js *js = jr__js_of(on);
    jr__rand saved = js->rand, peek = js->rand;
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = consumer ? JR__META_CONSUMER_DELETE : JR__META_STREAM_DELETE;
    op.stream = stream;
    op.consumer = consumer;
    op.origin = js->name;
    op.request_id = jr__rand_next(&peek) | 1;
    jr__buf b;
    jr__buf_init(&b, js->alloc);
    ck_assert_int_eq(jr__meta_op_encode(&op, &b), 0);
    jr_iovec iov = {b.data, b.len};
    uint64_t id;
    int answers = 0;
    ck_assert_int_eq(jr_sim_cut(cl->sim, l, o), 0); /* o hears nothing of it from l */
    jr__node_enter(on);
    ck_assert_int_eq(jr__rpc_call(on,
                                  jr__peer_get_id(jr__peer_find_name(on, jr_sim_name(cl->sim, l))),
                                  JR__RPC_META, &iov, 1, 2 * SEC, ignore_rpc, &answers, &id),
                     0);
    jr__rpc_cancel(on, id); /* its answer is lost */
    jr__node_leave(on);
    jr__buf_free(&b);
    gone_q at_leader = {e2e_node(cl, l), stream, consumer}, at_o = {on, stream, consumer};
    ck_assert_int_eq(jr_sim_run_until(cl->sim, meta_gone, &at_leader, 5 * SEC), 0);
    ck_assert_msg(!meta_gone(&at_o, cl->sim), "the origin applied the first attempt already");
    jr_sim_heal(cl->sim); /* the next answer from l comes before l repairs o's meta log */
    js->rand = saved;     /* the public call draws the same request id */
    admin_res d;
    memset(&d, 0, sizeof d);
    if (consumer)
        ck_assert_int_eq(jr_consumer_delete(on, stream, consumer, admin_res_cb, &d), 0);
    else
        ck_assert_int_eq(jr_stream_delete(on, stream, admin_res_cb, &d), 0);
    ck_assert_int_eq(jr_sim_run_until(cl->sim, admin_res_done, &d, 20 * SEC), 0);
    ck_assert_int_eq(answers, 0);
    return d;
}

/* A delete sent again after its first attempt took effect (its answer lost) answers that it
 * deleted (status 0), not JR_ENOTFOUND: the meta leader recognises the request id it applied and
 * answers with that entry, whose outcome the origin applies. Streams and consumers alike. */
START_TEST(a_delete_sent_again_says_it_deleted)
{
    e2e cm;
    memset(&cm, 0, sizeof cm);
    ck_assert_int_eq(e2e_new(&cm, 3, 31, 10000), 0);
    int l = e2e_wait_meta(&cm, 3, 10 * SEC);
    ck_assert_int_ge(l, 0);
    unsigned leader = (unsigned)l, o = (leader + 1) % 3;
    const char *subj[] = {"gone.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "GONE", subj, 1, 3);
    e2e_res r;
    ck_assert_msg(e2e_add(&cm, 0, &cfg, &r) == 0, "add: %s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(&cm, 0, "GONE", 2, 10 * SEC), 0);
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.durable_name = "gc";
    admin_res d;
    memset(&d, 0, sizeof d);
    ck_assert_int_eq(jr_consumer_add(e2e_node(&cm, 0), "GONE", &cc, admin_res_named, &d), 0);
    ck_assert_int_eq(jr_sim_run_until(cm.sim, admin_res_done, &d, 10 * SEC), 0);
    ck_assert_msg(d.status == 0, "consumer add: %s", d.msg);
    jr_sim_run_for(cm.sim, SEC);
    d = delete_sent_twice(&cm, leader, o, "GONE", "gc");
    ck_assert_msg(d.status == 0, "consumer delete sent again: %s (%s)", jr_strerror(d.status),
                  d.msg);
    jr_sim_run_for(cm.sim, SEC);
    d = delete_sent_twice(&cm, leader, o, "GONE", NULL);
    ck_assert_msg(d.status == 0, "stream delete sent again: %s (%s)", jr_strerror(d.status), d.msg);
    ck_assert_int_eq(e2e_info(&cm, o, "GONE", &r), JR_ENOTFOUND);
    e2e_free(&cm);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("failover");
    TCase *tc = tcase_create("failover");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_deposed_leader_never_answers_a_read_from_its_stale_state);
    tcase_add_test(tc, a_stream_created_after_every_restart_elects_without_a_silent_peer);
    tcase_add_test(tc, a_restarted_servers_replicas_vote_once_its_meta_state_caught_up);
    tcase_add_test(tc, reads_of_one_loop_turn_cost_one_log_entry);
    tcase_add_test(tc, with_a_msg_id_every_publish_fails_over_and_is_stored_once);
    tcase_add_test(tc, without_a_msg_id_a_lost_leader_is_reported_as_such);
    tcase_add_test(tc, publishes_refused_by_a_stepping_down_leader_are_retried);
    tcase_add_test(tc, with_no_leader_to_fail_over_to_the_deadline_says_what_happened);
    suite_add_tcase(s, tc);
    TCase *rep = tcase_create("reporting");
    tcase_set_timeout(rep, 120);
    tcase_add_test(rep,
                   after_a_leader_change_a_replica_the_new_leader_never_heard_is_shown_offline);
    tcase_add_test(rep, a_woken_leader_reports_the_contact_its_node_had_until_members_answer);
    suite_add_tcase(s, rep);
    TCase *again = tcase_create("sent_again");
    tcase_set_timeout(again, 120);
    tcase_add_test(again, a_delete_sent_again_says_it_deleted);
    suite_add_tcase(s, again);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
