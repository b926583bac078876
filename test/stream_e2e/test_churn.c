/*
 * Streams created and deleted in a loop leave nothing behind: once a deletion is applied, the
 * replica's Raft group (not just its store) is released and the WAL forgets the group, so the
 * nodes' heap (measured with a counting jr_allocator given to the nodes only) returns to its
 * baseline however many streams came and went — also on a server that was down while streams
 * were deleted, or that crashed right after applying a deletion (its groups' logs come back
 * from the WAL, and the meta snapshot says the streams are gone); and a leftover store under a
 * new stream's name is never taken for the new stream's. A busy stream's snapshots and store
 * syncs free none of its store's buffers (the next writes would allocate them again), and the
 * stream gives them back once it goes idle.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "js/js.h"
#include "node/node.h"
#include "store/file_int.h"

/* A counting allocator: live bytes and blocks of the nodes (the fixture and its simulated disks
 * use the C library's allocator, so the WAL's and stores' bytes on the "disk" do not count). */
typedef struct counter {
    size_t bytes, blocks;
    size_t big; /* allocations and reallocations to BIG bytes or more */
} counter;

#define BIG (64u << 10)

static counter cnt;

typedef struct hdr {
    size_t size;
    size_t pad; /* keeps the payload 16-byte aligned */
} hdr;

static void *c_malloc(void *ctx, size_t n)
{
    counter *c = ctx;
    hdr *h = malloc(sizeof *h + n);
    if (!h) return NULL;
    h->size = n;
    c->bytes += n;
    c->blocks++;
    if (n >= BIG) c->big++;
    return h + 1;
}

static void *c_realloc(void *ctx, void *p, size_t n)
{
    counter *c = ctx;
    if (!p) return c_malloc(ctx, n);
    hdr *h = (hdr *)p - 1;
    size_t old = h->size;
    hdr *nh = realloc(h, sizeof *nh + n);
    if (!nh) return NULL;
    nh->size = n;
    c->bytes = c->bytes - old + n;
    if (n >= BIG && n > old) c->big++;
    return nh + 1;
}

static void c_free(void *ctx, void *p)
{
    counter *c = ctx;
    if (!p) return;
    hdr *h = (hdr *)p - 1;
    c->bytes -= h->size;
    c->blocks--;
    free(h);
}

static const jr_allocator counting = {JR_ALLOCATOR_VERSION, &cnt, c_malloc, c_realloc, c_free};

static e2e c;

static void node_alloc(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    (void)i;
    cfg->alloc = &counting;
}

/* The meta log holds every add and delete until a meta snapshot compacts it (every 1,024
 * entries by default): snapshot often, so that what is measured is what deletions leave. */
static void meta_snapshots(uint64_t every)
{
    for (unsigned i = 0; i < 3; i++)
        if (e2e_node(&c, i)) jr__js_of(e2e_node(&c, i))->meta->snapshot_entries = every;
}

static void setup(void)
{
    memset(&c, 0, sizeof c);
    memset(&cnt, 0, sizeof cnt);
    c.configure_more = node_alloc;
    ck_assert_int_eq(e2e_new(&c, 3, 4242, 1000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
    meta_snapshots(20);
}

static void teardown(void)
{
    e2e_free(&c);
    ck_assert_uint_eq(cnt.blocks, 0); /* and nothing leaked at all */
}

/* Creates stream S<i> (R3 unless r1), publishes a few messages, deletes it, lets it settle. */
static void cycle(int i, int replicas)
{
    char name[32], subj[32];
    snprintf(name, sizeof name, "S%d", i);
    snprintf(subj, sizeof subj, "s%d.>", i);
    const char *subjects[] = {subj};
    jr_stream_config cfg;
    e2e_config(&cfg, name, subjects, 1, replicas);
    e2e_res r;
    ck_assert_msg(e2e_add(&c, (unsigned)i % 3, &cfg, &r) == 0, "add %s: %s", name, r.msg);
    snprintf(subj, sizeof subj, "s%d.x", i);
    for (int k = 0; k < 3; k++) {
        /* right after creation the stream may still elect its leader: retry until acked */
        int st;
        for (int t = 0; (st = e2e_publish(&c, (unsigned)k, subj, "m", 1, NULL, &r)) != 0 && t < 5;
             t++)
            jr_sim_run_for(c.sim, 100 * MS);
        ck_assert_msg(st == 0, "publish to %s: %s", name, jr_strerror(st));
    }
    ck_assert_msg(e2e_delete(&c, (unsigned)(i + 1) % 3, name, &r) == 0, "delete %s: %s", name,
                  r.msg);
    jr_sim_run_for(c.sim, 500 * MS);
}

/* Groups, stashes and replicas node i holds (the meta group is one). */
static size_t held(unsigned i, size_t *stashes)
{
    jr_node *n = e2e_node(&c, i);
    *stashes = n->stashes.len;
    return n->groups.len;
}

START_TEST(deleted_streams_leave_nothing_in_memory)
{
    /* pools, tables and snapshot buffers reach their working size (meta snapshots taken) */
    for (int i = 0; i < 15; i++) cycle(i, 3);
    jr_sim_run_for(c.sim, 2 * SEC);
    size_t base = cnt.bytes, base_blocks = cnt.blocks;
    int ncyc = getenv("CHURN_N") ? atoi(getenv("CHURN_N")) : 40;
    for (int i = 15; i < 15 + ncyc; i++) cycle(i, i % 4 == 0 ? 1 : 3);
    jr_sim_run_for(c.sim, 2 * SEC);
    size_t stashes;
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(held(i, &stashes), 1); /* the meta group only */
        ck_assert_uint_eq(stashes, 0);
        ck_assert_ptr_null(jr__js_of(e2e_node(&c, i))->rep_list);
    }
    fprintf(stderr, "churn: 40 streams created and deleted: %zu -> %zu bytes, %zu -> %zu blocks\n",
            base, cnt.bytes, base_blocks, cnt.blocks);
    /* a little slack for tables that grew to a new power of two; a leaked replica costs tens of
     * kilobytes, so forty of them could not hide in it */
    ck_assert_uint_le(cnt.bytes, base + 16 * 1024);
    ck_assert_uint_le(cnt.blocks, base_blocks + 16);
}
END_TEST

/* Creates streams D0..D<n-1> (R3), one message each. */
static void make_d(int n)
{
    for (int i = 0; i < n; i++) {
        char name[16], subj[16];
        snprintf(name, sizeof name, "D%d", i);
        snprintf(subj, sizeof subj, "d%d.>", i);
        const char *subjects[] = {subj};
        jr_stream_config cfg;
        e2e_config(&cfg, name, subjects, 1, 3);
        ck_assert_int_eq(e2e_add(&c, 0, &cfg, NULL), 0);
        ck_assert_int_ge(e2e_wait_stream(&c, 0, name, 2, 10 * SEC), 0);
        snprintf(subj, sizeof subj, "d%d.x", i);
        ck_assert_int_eq(e2e_publish(&c, 0, subj, "m", 1, NULL, NULL), 0);
    }
    jr_sim_run_for(c.sim, SEC);
}

static void delete_d(int n)
{
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "D%d", i);
        ck_assert_int_eq(e2e_delete(&c, 0, name, NULL), 0);
    }
}

/* Node i holds nothing of a stream any more: only the meta group, no stash, no replica. */
static void holds_nothing(unsigned i)
{
    size_t stashes;
    ck_assert_uint_eq(held(i, &stashes), 1);
    ck_assert_uint_eq(stashes, 0);
    ck_assert_ptr_null(jr__js_of(e2e_node(&c, i))->rep_list);
    ck_assert_uint_eq(e2e_meta_streams(&c, i), 0);
}

START_TEST(a_server_down_while_streams_were_deleted_forgets_them_after_its_restart)
{
    make_d(6);
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    delete_d(6);
    jr_sim_run_for(c.sim, SEC);
    /* n2 reopens the replicas from its own meta log, then applies the deletions */
    ck_assert_int_eq(e2e_restart(&c, 2), 0);
    meta_snapshots(20);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 20 * SEC), 0);
    jr_sim_run_for(c.sim, 3 * SEC);
    holds_nothing(2);
}
END_TEST

static int d_gone_on_n2(void *arg, jr_sim *sim)
{
    (void)arg;
    (void)sim;
    return e2e_node(&c, 2) && e2e_meta_streams(&c, 2) == 0;
}

START_TEST(a_crash_right_after_a_deletion_leaves_no_stash_behind)
{
    make_d(3);
    /* n2 snapshots its meta state at every entry, so that the deletions are in a durable
     * snapshot before the WAL learns that the groups are gone (their DROPs, staged when the
     * groups are released after the flush that applied the deletions, are written by the
     * next flush): crash in between */
    jr__js_of(e2e_node(&c, 2))->meta->snapshot_entries = 1;
    static e2e_res r[3];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "D%d", i);
        ck_assert_int_eq(jr_stream_delete(e2e_node(&c, 0), name, e2e_admin_cb, &r[i]), 0);
    }
    ck_assert_int_eq(jr_sim_run_until(c.sim, d_gone_on_n2, NULL, 10 * SEC), 0);
    ck_assert_uint_eq(e2e_node(&c, 2)->groups.len, 1); /* released: only the meta group left */
    ck_assert_uint_gt(jr__wal_pending(e2e_node(&c, 2)->wal), 0); /* their DROPs not written */
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    ck_assert_int_eq(e2e_restart(&c, 2), 0);
    /* the groups' logs came back as stashes; the meta snapshot says the streams are gone, so
     * the open released them (their DROPs staged, written by the first flush) */
    ck_assert_uint_eq(e2e_node(&c, 2)->stashes.len, 0);
    ck_assert_uint_eq(e2e_node(&c, 2)->groups.len, 1);
    ck_assert_uint_gt(jr__wal_pending(e2e_node(&c, 2)->wal), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 20 * SEC), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    holds_nothing(2);
    /* and the WAL forgot them: after another restart nothing comes back */
    ck_assert_int_eq(jr_sim_crash(c.sim, 2), 0);
    ck_assert_int_eq(e2e_restart(&c, 2), 0);
    ck_assert_uint_eq(e2e_node(&c, 2)->stashes.len, 0); /* (the meta group took its own) */
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 20 * SEC), 0);
    holds_nothing(2);
}
END_TEST

START_TEST(a_leftover_store_under_a_new_streams_name_is_not_taken_for_it)
{
    /* the store of an earlier stream "Y" on n1's disk (its removal never happened): a valid
     * one, marked at index 5 with five messages of its own */
    const char *subjects[] = {"y.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "Y", subjects, 1, 3);
    jr__stream_fsm_config fc;
    memset(&fc, 0, sizeof fc);
    fc.stream = &cfg;
    fc.vfs = jr_sim_vfs(c.sim, 1);
    fc.dir = "/store";
    jr__stream_fsm *old;
    ck_assert_int_eq(jr__stream_fsm_open(&fc, &old, NULL, 0), 0);
    for (uint64_t i = 1; i <= 5; i++) {
        jr__stream_op op;
        memset(&op, 0, sizeof op);
        op.type = JR__OP_PUBLISH;
        op.ts = (int64_t)i;
        op.u.pub.subject = "y.old";
        op.u.pub.subject_len = 5;
        op.u.pub.data = (const uint8_t *)"old";
        op.u.pub.data_len = 3;
        jr__buf b;
        jr__buf_init(&b, NULL);
        ck_assert_int_eq(jr__op_encode(&op, &b), 0);
        jr__stream_result res;
        ck_assert_int_eq(jr__stream_fsm_apply1(old, i, b.data, b.len, &res), 0);
        ck_assert_int_eq(res.status, 0);
        jr__buf_free(&b);
    }
    ck_assert_int_eq(jr__stream_fsm_close(old), 0); /* marked at 5 */
    ck_assert_int_eq(e2e_add(&c, 0, &cfg, NULL), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "Y", 2, 10 * SEC), 0);
    ck_assert_int_eq(e2e_publish(&c, 1, "y.a", "new", 3, NULL, NULL), 0);
    jr_sim_run_for(c.sim, SEC);
    uint64_t d0, d1;
    ck_assert_int_eq(e2e_digest(&c, 0, "Y", &d0), 0);
    ck_assert_int_eq(e2e_digest(&c, 1, "Y", &d1), 0);
    ck_assert_uint_eq(d0, d1);
}
END_TEST

/* The capacity of the in-memory window of stream name's active block on node i. */
static size_t store_window(unsigned i, const char *name)
{
    jr__js *js = jr__js_of(e2e_node(&c, i));
    const jr__meta_stream *ms = jr__meta_stream_find(&js->st, name);
    ck_assert_ptr_nonnull(ms);
    jr__srep *r = jr__srep_find(js, ms->group);
    ck_assert_ptr_nonnull(r);
    return F(jr__stream_fsm_store(r->fsm))->plain.cap;
}

static int acked, nacked;

static void ack_cb(void *arg, int status, const jr_pub_ack *ack)
{
    (void)arg;
    (void)ack;
    if (status == 0)
        acked++;
    else
        nacked++;
}

static int all_acked(void *arg, jr_sim *sim)
{
    (void)sim;
    return acked + nacked >= *(int *)arg;
}

/* Publishes n messages of 4 KiB to b.x through node 0 at once (batch entries of up to n, about
 * 80 KiB for 20, built in the node's scratch buffer), and waits for their acks. */
static void publish_b(int n)
{
    static char data[4096];
    acked = nacked = 0;
    for (int k = 0; k < n; k++)
        ck_assert_int_eq(
            jr_publish(e2e_node(&c, 0), "b.x", NULL, 0, data, sizeof data, NULL, ack_cb, NULL), 0);
    ck_assert_int_eq(jr_sim_run_until(c.sim, all_acked, &n, 10 * SEC), 0);
    ck_assert_int_eq(acked, n);
    jr_sim_run_for(c.sim, 50 * MS); /* about 1.6 MB/s: the nodes' disks are in memory */
}

START_TEST(a_busy_streams_snapshots_free_no_store_buffer_an_idle_one_gives_them_back)
{
    const char *subjects[] = {"b.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "B", subjects, 1, 3);
    ck_assert_int_eq(e2e_add(&c, 0, &cfg, NULL), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "B", 2, 10 * SEC), 0);
    for (unsigned i = 0; i < 3; i++) e2e_snapshot_every(&c, i, 5);
    /* warm-up: the store windows (256 KiB of 4 KiB messages, and a record more) and the logs'
     * rings reach their working size */
    uint64_t w0 = jr_sim_now(c.sim);
    while (jr_sim_now(c.sim) < w0 + 2 * SEC) publish_b(20);
    uint64_t t0 = jr_sim_now(c.sim), snap0 = e2e_snapshot_index(&c, 0, "B");
    cnt.big = 0;
    /* several seconds of publishing (a store sync every second, by each replica's timer) and
     * several snapshots */
    while (jr_sim_now(c.sim) < t0 + 4 * SEC) publish_b(20);
    uint64_t snap1 = e2e_snapshot_index(&c, 0, "B");
    fprintf(stderr, "busy: %.1f s, snapshots %" PRIu64 " -> %" PRIu64 ", %zu allocations >= %u\n",
            (double)(jr_sim_now(c.sim) - t0) / SEC, snap0, snap1, cnt.big, BIG);
    ck_assert_uint_ge(snap1, snap0 + 5 * 5);
    ck_assert_uint_eq(cnt.big, 0);
    for (unsigned i = 0; i < 3; i++) ck_assert_uint_gt(store_window(i, "B"), 0);
    int leader = e2e_replica_leader(&c, 0, "B"); /* its batch buffer is kept */
    ck_assert_int_ge(leader, 0);
    ck_assert_uint_gt(jr__js_of(e2e_node(&c, (unsigned)leader))->scratch.cap, JR__SCRATCH_KEEP);
    /* idle: every replica gives its store's window back */
    jr_sim_run_for(c.sim, 3 * SEC);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(store_window(i, "B"), 0);
        ck_assert_int_eq(e2e_timer_armed(&c, i, "B"), 0); /* and no timer is left armed */
        /* the leader's batch buffer too */
        ck_assert_uint_le(jr__js_of(e2e_node(&c, i))->scratch.cap, JR__SCRATCH_KEEP);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("churn");
    TCase *tc = tcase_create("churn");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, deleted_streams_leave_nothing_in_memory);
    tcase_add_test(tc, a_server_down_while_streams_were_deleted_forgets_them_after_its_restart);
    tcase_add_test(tc, a_crash_right_after_a_deletion_leaves_no_stash_behind);
    tcase_add_test(tc, a_leftover_store_under_a_new_streams_name_is_not_taken_for_it);
    tcase_add_test(tc, a_busy_streams_snapshots_free_no_store_buffer_an_idle_one_gives_them_back);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
