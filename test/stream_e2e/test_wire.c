/*
 * The wire between servers, end to end (lib/wire/frame.h, lib/node/rpc.h):
 *  - rolling upgrades: a request of a kind this version does not know, a message of an
 *    extension type and a malformed LIFE message, in the same frame as a stream's Raft
 *    traffic, are refused (JR_ENOTSUP) or skipped on their own and counted; the Raft traffic
 *    around them is applied;
 *  - at most once: with every frame delivered twice at random (the fixture's link duplicate
 *    setting), publishes forwarded from a follower are each stored once, acknowledged once,
 *    and an acknowledgement of a msg id's first and only publish never says duplicate; a
 *    duplicate held back across its executor's restart is not executed by the new life, while
 *    requests sent to that life run at once (rpc.h "After a restart").
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "js/js.h"
#include "node/node.h"
#include "node/rpc.h"

static void node_stats(jr_node *n, jr_node_stats *s)
{
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    ck_assert_int_eq(jr_node_stats_get(n, s), 0);
}

typedef struct answer {
    int done, status;
} answer;

static void on_answer(jr_node *nd, void *arg, int status, int answered, const uint8_t *p,
                      size_t len)
{
    (void)nd, (void)p, (void)len;
    ck_assert_int_eq(answered, 1);
    answer *a = arg;
    a->done = 1;
    a->status = status;
}

static int answered(void *arg, jr_sim *sim)
{
    (void)sim;
    const answer *a = arg;
    return a->done;
}

START_TEST(an_unknown_kind_and_an_extension_do_not_drop_the_raft_traffic_of_their_frame)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 21, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
    const char *subj[] = {"w.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "W", subj, 1, 3);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    int l = e2e_wait_stream(&c, 0, "W", 2, 10 * SEC);
    ck_assert_int_ge(l, 0);
    unsigned f = ((unsigned)l + 1) % 3;
    jr_node *ln = e2e_node(&c, (unsigned)l), *fn = e2e_node(&c, f);
    uint64_t before = e2e_fsm_applied(&c, f, "W");
    jr_node_stats s0;
    node_stats(fn, &s0);

    /* In one loop turn at the leader: a publish (its APPEND goes to f in this flush's frame), a
     * request of a kind of a later release and an extension message, to f. */
    e2e_res pub;
    memset(&pub, 0, sizeof pub);
    ck_assert_int_eq(jr_publish(ln, "w.x", NULL, 0, "hello", 5, NULL, e2e_pub_cb, &pub), 0);
    answer a = {0, 0};
    static const uint8_t pay[] = {'n', 'e', 'w'};
    jr_iovec iov = {pay, sizeof pay};
    ck_assert_int_eq(
        jr__rpc_call(ln, fn->self, JR__RPC_KIND_MAX + 1, &iov, 1, 5 * SEC, on_answer, &a, NULL), 0);
    jr__peer *p = jr__peer_find(ln, fn->self);
    ck_assert_ptr_nonnull(p);
    jr__buf *b = jr__peer_frame(ln, p, 16);
    ck_assert_ptr_nonnull(b);
    jr__frame_add_ext(b, 200, 0, pay, sizeof pay);
    jr__frame_add_ext(b, JR__EXT_LIFE, 0, pay, sizeof pay); /* malformed: skipped, counted */
    ck_assert_int_eq(b->err, 0);
    uint64_t invalid = fn->msgs_invalid;

    ck_assert_int_eq(jr_sim_run_until(c.sim, answered, &a, 5 * SEC), 0);
    ck_assert_int_eq(a.status, JR_ENOTSUP);
    ck_assert_int_eq(e2e_wait(&c, &pub, 5 * SEC), 0);
    ck_assert_int_eq(pub.status, 0);
    jr_node_stats s1;
    node_stats(fn, &s1);
    ck_assert_uint_eq(s1.frames_rejected, s0.frames_rejected);
    ck_assert_uint_eq(s1.msgs_unknown_type, s0.msgs_unknown_type + 2);
    ck_assert_uint_eq(fn->msgs_invalid, invalid + 1);
    for (int t = 0; t < 500 && e2e_fsm_applied(&c, f, "W") <= before; t++)
        jr_sim_run_for(c.sim, 10 * MS); /* the follower learns the commit from the next frame */
    ck_assert_uint_gt(e2e_fsm_applied(&c, f, "W"), before);
    char subject[32], data[32];
    ck_assert_int_eq(e2e_local_get(&c, f, "W", pub.seq, subject, sizeof subject, data, sizeof data),
                     0);
    ck_assert_str_eq(data, "hello");
    e2e_free(&c);
}
END_TEST

/* The executing side's record (rpc.h "At most once"), driven directly with made-up ids from a
 * made-up origin (its answers go nowhere: the record is what is checked). */
START_TEST(the_record_of_recent_requests_is_bounded_and_never_runs_one_twice)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 3, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
    jr_node *nd = e2e_node(&c, 0);
    const jr__id o = 0x77;
    const uint64_t base = 1ull << 50;
    int fresh;
    ck_assert_int_eq(jr__rpc_admit(nd, o, base, &fresh), 0);
    ck_assert_int_eq(fresh, 1);
    ck_assert_int_eq(jr__rpc_admit(nd, o, base, &fresh), 0); /* running: ignored */
    ck_assert_int_eq(fresh, 0);
    ck_assert_uint_eq(nd->rpc_dups, 1);
    jr_iovec iov = {"seq", 3};
    jr__rpc_respond(nd, o, base, 0, &iov, 1); /* kept (sending it fails: no such peer) */
    ck_assert_int_eq(jr__rpc_admit(nd, o, base, &fresh), 0); /* answered: not run again */
    ck_assert_int_eq(fresh, 0);
    ck_assert_uint_eq(nd->rpc_dups, 2);
    /* reordered: a lower id not seen yet is new */
    ck_assert_int_eq(jr__rpc_admit(nd, o, base - 5, &fresh), 0);
    ck_assert_int_eq(fresh, 1);
    /* the record holds at most JR__RPC_RECENT requests, whatever arrives */
    for (uint64_t k = 1; k <= 3 * JR__RPC_RECENT; k++) {
        ck_assert_int_eq(jr__rpc_admit(nd, o, base + k, &fresh), 0);
        ck_assert_int_eq(fresh, 1);
        size_t cap, n = jr__rpc_recent(nd, o, &cap);
        ck_assert_uint_le(n, JR__RPC_RECENT);
        ck_assert_uint_le(cap, JR__RPC_RECENT);
    }
    ck_assert_uint_eq(jr__rpc_recent(nd, o, NULL), JR__RPC_RECENT);
    /* forgotten ones, and unseen ones below them, are too old to tell: never run */
    uint64_t stale = nd->rpc_stale;
    ck_assert_int_eq(jr__rpc_admit(nd, o, base, &fresh), 0);
    ck_assert_int_eq(fresh, 0);
    ck_assert_int_eq(jr__rpc_admit(nd, o, base - 100, &fresh), 0);
    ck_assert_int_eq(fresh, 0);
    ck_assert_uint_eq(nd->rpc_stale, stale + 2);
    /* the newest ones are still known */
    ck_assert_int_eq(jr__rpc_admit(nd, o, base + 3 * JR__RPC_RECENT, &fresh), 0);
    ck_assert_int_eq(fresh, 0);
    /* ids far below: another life of the origin, recorded afresh */
    ck_assert_int_eq(jr__rpc_admit(nd, o, 12345, &fresh), 0);
    ck_assert_int_eq(fresh, 1);
    ck_assert_uint_eq(jr__rpc_recent(nd, o, NULL), 1);
    ck_assert_int_eq(jr__rpc_admit(nd, o, 12345, &fresh), 0);
    ck_assert_int_eq(fresh, 0);
    /* after JR__RPC_KEEP_NS the record is forgotten and its memory given back; what it forgot
     * is still too old to run */
    jr_sim_run_for(c.sim, JR__RPC_KEEP_NS + SEC);
    size_t cap;
    ck_assert_uint_eq(jr__rpc_recent(nd, o, &cap), 0);
    ck_assert_uint_eq(cap, 0);
    ck_assert_int_eq(jr__rpc_admit(nd, o, 12345, &fresh), 0);
    ck_assert_int_eq(fresh, 0);
    e2e_free(&c);
}
END_TEST

/* Right after the meta leader is elected, servers may not have registered yet: a stream add
 * waits for them instead of being refused as invalid input. */
START_TEST(a_stream_added_before_the_servers_registered_waits_for_them)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 17, 3000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 0, 10 * SEC), 0);
    const char *subj[] = {"early.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "EARLY", subj, 1, 3);
    e2e_res r;
    int rc = e2e_add(&c, 0, &cfg, &r);
    ck_assert_msg(rc == 0, "add: %s %s", jr_err_name(rc), r.msg);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "EARLY", 2, 10 * SEC), 0);
    e2e_free(&c);
}
END_TEST

/* Clients that publish through one server, each with one publish outstanding at a time. */
#define CLIENTS 4
#define PUB_MAX 20000

typedef struct client {
    e2e *c;
    unsigned via;
    int ids;
    int id;
    unsigned sent;
} client;

typedef struct pub {
    int done, status, duplicate;
    uint64_t seq;
} pub;

static pub pubs[CLIENTS][PUB_MAX];
static client clients[CLIENTS];

static void publish_next(client *cl);

static void on_pub(void *arg, int status, const jr_pub_ack *ack)
{
    pub *p = arg;
    ck_assert_msg(!p->done, "a publish callback ran twice");
    p->done = 1;
    p->status = status;
    p->seq = ack->seq;
    p->duplicate = ack->duplicate;
    client *cl = &clients[(p - &pubs[0][0]) / PUB_MAX];
    publish_next(cl);
}

static int stop_publishing;

static void publish_next(client *cl)
{
    if (stop_publishing || cl->sent >= PUB_MAX) return;
    unsigned k = cl->sent++;
    char data[32], id[32];
    snprintf(data, sizeof data, "c%d-%u", cl->id, k);
    snprintf(id, sizeof id, "id-c%d-%u", cl->id, k);
    jr_pub_opts o;
    jr_pub_opts_init(&o);
    o.msg_id = cl->ids ? id : NULL;
    ck_assert_int_eq(jr_publish(e2e_node(cl->c, cl->via), "d.in", NULL, 0, data, strlen(data), &o,
                                on_pub, &pubs[cl->id][k]),
                     0);
}

static void duplicated_frames(int ids)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 5 + (uint64_t)ids, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
    const char *subj[] = {"d.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "D", subj, 1, 3);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    int l = e2e_wait_stream(&c, 0, "D", 2, 10 * SEC);
    ck_assert_int_ge(l, 0);
    jr_sim_link link;
    jr_sim_link_init(&link);
    link.duplicate = 0.2;
    link.reorder = 0.05;
    link.delay_max_ns = 2 * MS;
    for (unsigned a = 0; a < 3; a++)
        for (unsigned b2 = 0; b2 < 3; b2++)
            if (a != b2) jr_sim_set_link(c.sim, a, b2, &link);
    memset(pubs, 0, sizeof pubs);
    stop_publishing = 0;
    unsigned via = ((unsigned)l + 1) % 3; /* a follower: every publish is forwarded */
    for (int k = 0; k < CLIENTS; k++) {
        clients[k] = (client){&c, via, ids, k, 0};
        publish_next(&clients[k]);
    }
    jr_sim_run_for(c.sim, 10 * SEC);
    stop_publishing = 1;
    jr_sim_run_for(c.sim, 5 * SEC);
    jr_node_stats st;
    node_stats(e2e_node(&c, (unsigned)l), &st);
    uint64_t acked = 0, failed = 0, dups = 0, sent = 0;
    static uint8_t seen[CLIENTS][PUB_MAX];
    memset(seen, 0, sizeof seen);
    for (int k = 0; k < CLIENTS; k++) {
        sent += clients[k].sent;
        for (unsigned i = 0; i < clients[k].sent; i++) {
            const pub *p = &pubs[k][i];
            ck_assert_msg(p->done, "client %d publish %u never completed", k, i);
            if (p->status != 0) {
                failed++;
                continue;
            }
            acked++;
            dups += p->duplicate != 0;
        }
    }
    jr_stream_state state;
    ck_assert_int_eq(e2e_state(&c, (unsigned)l, "D", &state), 0);
    /* every stored message is one publish, stored once */
    for (uint64_t q = state.first_seq; q <= state.last_seq; q++) {
        char subject[32], data[32];
        int rc = e2e_local_get(&c, (unsigned)l, "D", q, subject, sizeof subject, data, sizeof data);
        ck_assert_msg(rc == 0, "seq %llu: %s", (unsigned long long)q, jr_err_name(rc));
        int k;
        unsigned i;
        ck_assert_int_eq(sscanf(data, "c%d-%u", &k, &i), 2);
        ck_assert_msg(!seen[k][i], "'%s' stored twice (again at seq %llu)", data,
                      (unsigned long long)q);
        seen[k][i] = 1;
    }
    for (int k = 0; k < CLIENTS; k++)
        for (unsigned i = 0; i < clients[k].sent; i++)
            if (pubs[k][i].status == 0) {
                char subject[32], data[32], want[32];
                snprintf(want, sizeof want, "c%d-%u", k, i);
                ck_assert_int_eq(e2e_local_get(&c, (unsigned)l, "D", pubs[k][i].seq, subject,
                                               sizeof subject, data, sizeof data),
                                 0);
                ck_assert_str_eq(data, want);
            }
    jr_sim_stats ss;
    memset(&ss, 0, sizeof ss);
    ss.size = sizeof ss;
    jr_sim_stats_get(c.sim, &ss);
    fprintf(stderr,
            "duplicated frames%s: %llu publishes, %llu acknowledged, %llu failed, %llu stored, "
            "%llu acks said duplicate; %llu frames duplicated, leader saw %llu duplicate "
            "requests\n",
            ids ? " (msg ids)" : "", (unsigned long long)sent, (unsigned long long)acked,
            (unsigned long long)failed, (unsigned long long)state.msgs, (unsigned long long)dups,
            (unsigned long long)ss.frames_duplicated,
            (unsigned long long)e2e_node(&c, (unsigned)l)->rpc_dups);
    ck_assert_uint_eq(failed, 0);
    ck_assert_uint_eq(state.msgs, acked);
    ck_assert_uint_eq(dups, 0);
    ck_assert_uint_gt(e2e_node(&c, (unsigned)l)->rpc_dups, 0);
    e2e_free(&c);
}

/* The frame `from` has open for `to`, finished as the network would carry it (unsealed, as the
 * fixture's nodes send them); its requests counted into *requests. The caller frees it. */
static uint8_t *frame_copy(jr_node *from, jr_node *to, size_t *len, int *requests)
{
    jr__peer *p = jr__peer_find(from, to->self);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_gt(p->nframes, 0);
    const jr__buf *o = &p->frames[p->nframes - 1];
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__buf_put(&b, o->data, o->len);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    jr__frame f;
    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, from->max_frame), 0);
    jr__msg m;
    jr__entry scratch[64];
    *requests = 0;
    int rc, got;
    while (!(rc = jr__frame_next(&f, &m, scratch, 64, &got)) && got)
        *requests += m.type == JR__MSG_NODE_REQUEST;
    ck_assert_int_eq(rc, 0);
    *len = b.len;
    return b.data;
}

START_TEST(a_duplicate_held_back_across_its_executors_restart_is_not_executed_again)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 23, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
    const char *subj[] = {"q.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "Q", subj, 1, 1); /* one replica: its server leads it again right away */
    e2e_res r;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    int l = e2e_wait_stream(&c, 0, "Q", 0, 10 * SEC);
    ck_assert_int_ge(l, 0);
    unsigned via = ((unsigned)l + 1) % 3;
    e2e_res warm;
    ck_assert_int_eq(e2e_publish(&c, via, "q.x", "zero", 4, NULL, &warm), 0); /* route known */

    /* A publish without msg id forwarded to the leader; the frame that carries it is kept, as
     * a network holding a duplicate back would keep it. */
    e2e_res first;
    memset(&first, 0, sizeof first);
    ck_assert_int_eq(
        jr_publish(e2e_node(&c, via), "q.x", NULL, 0, "one", 3, NULL, e2e_pub_cb, &first), 0);
    size_t len;
    int requests;
    uint8_t *dup = frame_copy(e2e_node(&c, via), e2e_node(&c, (unsigned)l), &len, &requests);
    ck_assert_int_eq(requests, 1);
    ck_assert_int_eq(e2e_wait(&c, &first, 5 * SEC), 0);
    ck_assert_int_eq(first.status, 0);
    ck_assert_uint_eq(first.seq, 2);

    /* The leader's server restarts and leads the stream again within its first second. */
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)l), 0);
    ck_assert_int_eq(e2e_restart(&c, (unsigned)l), 0);
    jr_node *ln = e2e_node(&c, (unsigned)l);
    for (int t = 0; t < 1000 && e2e_replica_leader(&c, (unsigned)l, "Q") != l; t++)
        jr_sim_run_for(c.sim, MS);
    ck_assert_int_eq(e2e_replica_leader(&c, (unsigned)l, "Q"), l);
    ck_assert_uint_lt(jr_sim_now(c.sim), ln->rpc_wary_until);

    /* The duplicate arrives: the new life does not publish it a second time. */
    ck_assert_int_eq(jr_node_recv(ln, jr_sim_name(c.sim, via), dup, len), 0);
    free(dup);
    jr_sim_run_for(c.sim, 50 * MS);
    jr_stream_state st;
    ck_assert_int_eq(e2e_state(&c, (unsigned)l, "Q", &st), 0);
    ck_assert_uint_eq(st.msgs, 2);
    ck_assert_uint_eq(ln->rpc_wary_writes, 1);

    /* A publish sent to the new life, by a server that heard from it, runs at once. */
    ck_assert_uint_lt(jr_sim_now(c.sim), ln->rpc_wary_until);
    ck_assert_int_eq(e2e_publish(&c, via, "q.x", "two", 3, NULL, &r), 0);
    ck_assert_uint_eq(r.seq, 3);
    ck_assert_uint_lt(jr_sim_now(c.sim), ln->rpc_wary_until);
    ck_assert_uint_eq(ln->rpc_wary_writes, 1);
    ck_assert_int_eq(e2e_state(&c, (unsigned)l, "Q", &st), 0);
    ck_assert_uint_eq(st.msgs, 3);
    e2e_free(&c);
}
END_TEST

START_TEST(duplicated_frames_store_each_forwarded_publish_once)
{
    duplicated_frames(0);
}
END_TEST

START_TEST(duplicated_frames_never_ack_a_first_publish_as_duplicate)
{
    duplicated_frames(1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_e2e_wire");
    TCase *tc = tcase_create("wire");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc,
                   an_unknown_kind_and_an_extension_do_not_drop_the_raft_traffic_of_their_frame);
    tcase_add_test(tc, the_record_of_recent_requests_is_bounded_and_never_runs_one_twice);
    tcase_add_test(tc, a_stream_added_before_the_servers_registered_waits_for_them);
    tcase_add_test(tc, a_duplicate_held_back_across_its_executors_restart_is_not_executed_again);
    tcase_add_test(tc, duplicated_frames_store_each_forwarded_publish_once);
    tcase_add_test(tc, duplicated_frames_never_ack_a_first_publish_as_duplicate);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
