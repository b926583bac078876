/*
 * A follower's log cut survives a crash as cut (flush.c stage(), recover.c on_truncate).
 *
 * Node "b" follows group 5 (voters a, b, c) and is driven by hand-made frames: "a" (leader in
 * term 5) gives it an uncommitted suffix 2..6 of term 5; then "c" (leader in term 6) sends a
 * snapshot at index 4, term 4, which that log contradicts (its entry 4 has term 5), so the
 * follower discards the whole log (dissertation §5.3). Nothing replaces entries 5 and 6: only
 * the WAL's TRUNCATE record says they are void. The node then crashes right after the flush
 * and restarts; entries 5 and 6 (of a term above the snapshot's, so a term check cannot tell
 * them apart) must not come back after the snapshot, or the replica's log would mix two
 * histories (log matching, dissertation §3.5).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "log/record.h"
#include "log/segment.h"
#include "node/node.h"
#include "log/snapfile.h"
#include "raft/raft.h"
#include "vfs/memfs.h"
#include "wire/frame.h"

#define GROUP 5

static const char *const abc[] = {"a", "b", "c"};

/* An fsm that can restore (snapshots are installed into it). */
typedef struct s_fsm {
    jr_fsm ops;
    uint64_t last, restored;
    int fail_restore; /* restore answers JR_EIO */
} s_fsm;

static void s_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    (void)data;
    (void)len;
    ((s_fsm *)ctx)->last = index;
}

static int s_snapshot(void *ctx, jr_snapshot_writer *w)
{
    (void)ctx;
    return jr_snapshot_write(w, "state", 5);
}

static int s_restore(void *ctx, uint64_t index, const void *data, size_t len)
{
    s_fsm *f = ctx;
    (void)data;
    (void)len;
    if (f->fail_restore) return JR_EIO;
    f->restored = index;
    f->last = index;
    return 0;
}

static jr_group *open_group(t_host *h, s_fsm *f)
{
    memset(f, 0, sizeof *f);
    f->ops.version = JR_FSM_VERSION;
    f->ops.ctx = f;
    f->ops.apply = s_apply;
    f->ops.snapshot = s_snapshot;
    f->ops.restore = s_restore;
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = GROUP;
    gc.voters = abc;
    gc.nvoters = 3;
    gc.fsm = &f->ops;
    jr_group *g = NULL;
    ck_assert_int_eq(jr_group_open(h->node, &gc, &g), 0);
    return g;
}

/* Hands b one raft message of group 5 from `from`, in a frame of its own. */
static void deliver(t_host *h, const char *from, jr__msg *m)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    m->group = GROUP;
    m->from = jr__peer_id(from);
    m->to = jr__peer_id("b");
    jr__frame_begin(&b, m->from, m->to);
    jr__frame_add(&b, m);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    ck_assert_int_eq(jr_node_recv(h->node, from, b.data, b.len), 0);
    ck_assert_int_eq(jr_node_tick(h->node), 0); /* the flush of what the frame caused */
    jr__buf_free(&b);
}

/* APPEND of `n` entries of term `term` after (prev, pterm). */
static void append(t_host *h, const char *from, uint64_t term, uint64_t prev, uint64_t pterm,
                   uint32_t n, uint64_t commit)
{
    jr__entry e[8];
    ck_assert_uint_le(n, 8);
    for (uint32_t i = 0; i < n; i++)
        e[i] = (jr__entry){term, prev + 1 + i, JR__ENTRY_NORMAL, 5, (const uint8_t *)"stale"};
    jr__msg m = {.type = JR__MSG_APPEND, .term = term};
    m.u.append.prev_index = prev;
    m.u.append.prev_term = pterm;
    m.u.append.commit = commit;
    m.u.append.n = n;
    m.u.append.entries = e;
    deliver(h, from, &m);
}

/* b restarted unvouched: a and c answer its VOUCH, c as the leader of `term` whose last entry
 * is (li, lt), so b takes c's entries again (raft/vouch.c). */
static void vouch_for(t_host *h, uint64_t term, uint64_t li, uint64_t lt)
{
    jr__conf c = {.n = 3};
    for (unsigned i = 0; i < 3; i++) c.m[i] = (jr__member){jr__peer_id(abc[i]), 1};
    uint8_t conf[64];
    size_t clen = jr__conf_encode(&c, conf);
    for (int leader = 0; leader <= 1; leader++) {
        jr__msg m = {.type = JR__MSG_VOUCH_RESP, .term = term};
        m.u.vouch_resp.leader = (uint8_t)leader;
        m.u.vouch_resp.last_index = li;
        m.u.vouch_resp.last_term = lt;
        m.u.vouch_resp.conf = conf; /* {a, b, c}, of which they know no commit */
        m.u.vouch_resp.conf_len = (uint32_t)clen;
        deliver(h, leader ? "c" : "a", &m);
    }
}

/* A whole snapshot at (index, sterm) of the configuration {a, b, c}, in one chunk. */
static void install(t_host *h, const char *from, uint64_t term, uint64_t index, uint64_t sterm)
{
    jr__conf c = {.n = 3};
    for (unsigned i = 0; i < 3; i++) c.m[i] = (jr__member){jr__peer_id(abc[i]), 1};
    uint8_t conf[64];
    size_t clen = jr__conf_encode(&c, conf);
    jr__buf file;
    jr__buf_init(&file, NULL);
    ck_assert_int_eq(jr__snapfile_encode(&file, GROUP, index, sterm, conf, (uint32_t)clen,
                                         (const uint8_t *)"state", 5),
                     0);
    jr__msg m = {.type = JR__MSG_SNAP, .term = term};
    m.u.snap.index = index;
    m.u.snap.sterm = sterm;
    m.u.snap.offset = 0;
    m.u.snap.total = file.len;
    m.u.snap.done = 1;
    m.u.snap.conf_len = (uint32_t)clen;
    m.u.snap.conf = conf;
    m.u.snap.len = (uint32_t)file.len;
    m.u.snap.data = file.data;
    deliver(h, from, &m);
    jr__buf_free(&file);
}

static uint64_t last_index(jr_group *g)
{
    return jr__raft_last_index(jr__group_raft(g));
}

static uint64_t term_at(jr_group *g, uint64_t index)
{
    jr__entry e;
    ck_assert_int_eq(jr__raft_entry(jr__group_raft(g), index, &e), 0);
    return e.term;
}

/* Power loss right after the last flush, then a restart over what survived. */
static jr_group *crash_and_restart(t_host *h, s_fsm *f)
{
    jr__memfs_crash(h->vfs, 1);
    jr__node_close_noflush(h->node);
    h->node = NULL;
    t_frames_clear(h);
    ck_assert_int_eq(t_open(h, "b", abc, 3, NULL), 0);
    jr_group *g = open_group(h, f);
    ck_assert_int_eq(jr_node_tick(h->node), 0);
    return g;
}

/* b with the bootstrap entry and a's stale suffix 2..6 of term 5, all durable. */
static jr_group *follower_with_stale_suffix(t_host *h, s_fsm *f)
{
    t_host_init(h);
    ck_assert_int_eq(t_open(h, "b", abc, 3, NULL), 0);
    jr_group *g = open_group(h, f);
    ck_assert_int_eq(jr_node_tick(h->node), 0);
    ck_assert_uint_eq(last_index(g), 1);
    append(h, "a", 5, 1, term_at(g, 1), 5, 1);
    ck_assert_uint_eq(last_index(g), 6);
    ck_assert_uint_eq(term_at(g, 6), 5);
    return g;
}

/* The records of group GROUP in the newest segment, in order (type and first u64 field). */
typedef struct rec_list {
    uint8_t type[256];
    uint64_t a[256];
    size_t n;
} rec_list;

static void wal_records(t_host *h, rec_list *out)
{
    uint64_t *seqs;
    size_t ns;
    ck_assert_int_eq(jr__seg_list(h->vfs, "/wal", NULL, &seqs, &ns), 0);
    ck_assert_uint_gt(ns, 0);
    char path[64];
    jr__seg_path(path, sizeof path, "/wal", seqs[ns - 1]);
    free(seqs);
    uint8_t *d;
    size_t len;
    ck_assert_int_eq(jr__memfs_read_all(h->vfs, path, &d, &len), 0);
    out->n = 0;
    for (uint64_t off = JR__SEG_HDR; off < len;) {
        jr__rec r;
        ck_assert_int_eq(jr__rec_decode(d + off, len - off, &r), 0);
        off += JR__REC_HDR + r.len;
        if (r.group != GROUP || out->n == 256) continue;
        out->type[out->n] = r.type;
        out->a[out->n] = r.type == JR__REC_ENTRY      ? r.e.index
                         : r.type == JR__REC_COMPACT  ? r.cindex
                         : r.type == JR__REC_TRUNCATE ? r.tfrom
                                                      : 0;
        out->n++;
    }
    jr__memfs_release(h->vfs, d);
}

/* Position of the first record of `type` (with first field a) at or after `from`, or -1. */
static long find_rec(const rec_list *l, size_t from, uint8_t type, uint64_t a)
{
    for (size_t i = from; i < l->n; i++)
        if (l->type[i] == type && l->a[i] == a) return (long)i;
    return -1;
}

START_TEST(snapshot_install_cut_survives_a_crash)
{
    t_host h;
    s_fsm f;
    jr_group *g = follower_with_stale_suffix(&h, &f);
    /* c leads term 6 and installs a snapshot at 4 (term 4) that b's log contradicts */
    install(&h, "c", 6, 4, 4);
    ck_assert_uint_eq(f.restored, 4);
    ck_assert_uint_eq(last_index(g), 4);
    /* the flush wrote the cut: TRUNCATE {from 5}, ahead of the marker at 4 */
    rec_list l;
    wal_records(&h, &l);
    long t = find_rec(&l, 0, JR__REC_TRUNCATE, 5), c = find_rec(&l, 0, JR__REC_COMPACT, 4);
    ck_assert_int_ge(t, 0);
    ck_assert_int_gt(c, t);
    ck_assert_int_eq(find_rec(&l, (size_t)t, JR__REC_ENTRY, 5), -1);
    /* crash right after that flush: entries 5 and 6 of term 5 must not come back */
    g = crash_and_restart(&h, &f);
    ck_assert_uint_eq(f.restored, 4);
    ck_assert_uint_eq(last_index(g), 4);
    jr__entry e;
    ck_assert_int_eq(jr__raft_entry(jr__group_raft(g), 5, &e), JR_ENOTFOUND);
    jr_group_status st = {.size = sizeof st};
    ck_assert_int_eq(jr_group_status_get(g, &st), 0);
    ck_assert_int_eq(st.damaged, 0);
    /* and again, after the reopen's checkpoint and segment cleanup */
    g = crash_and_restart(&h, &f);
    ck_assert_uint_eq(last_index(g), 4);
    /* the log goes on from the snapshot: c's entry 5 of term 6 */
    vouch_for(&h, 6, 4, 4);
    append(&h, "c", 6, 4, 4, 1, 4);
    ck_assert_uint_eq(last_index(g), 5);
    g = crash_and_restart(&h, &f);
    ck_assert_uint_eq(last_index(g), 5);
    ck_assert_uint_eq(term_at(g, 5), 6);
    t_host_free(&h);
}
END_TEST

START_TEST(conflict_cut_is_recorded_ahead_of_the_new_entries)
{
    t_host h;
    s_fsm f;
    jr_group *g = follower_with_stale_suffix(&h, &f);
    /* c leads term 6; its log agrees with b's up to 3 and holds 4 of term 6 */
    append(&h, "c", 6, 3, 5, 1, 1);
    ck_assert_uint_eq(last_index(g), 4);
    ck_assert_uint_eq(term_at(g, 4), 6);
    rec_list l;
    wal_records(&h, &l);
    long t = find_rec(&l, 0, JR__REC_TRUNCATE, 4);
    ck_assert_int_ge(t, 0);
    ck_assert_int_gt(find_rec(&l, (size_t)t, JR__REC_ENTRY, 4), t);
    g = crash_and_restart(&h, &f);
    ck_assert_uint_eq(last_index(g), 4);
    ck_assert_uint_eq(term_at(g, 4), 6);
    ck_assert_uint_eq(term_at(g, 3), 5);
    t_host_free(&h);
}
END_TEST

START_TEST(install_over_a_matching_log_keeps_the_entries_after_it)
{
    t_host h;
    s_fsm f;
    jr_group *g = follower_with_stale_suffix(&h, &f);
    /* a's snapshot at 4 of term 5 matches b's log: entries 5 and 6 stay (no cut) */
    install(&h, "a", 5, 4, 5);
    ck_assert_uint_eq(last_index(g), 6);
    rec_list l;
    wal_records(&h, &l);
    for (size_t i = 0; i < l.n; i++) ck_assert_uint_ne(l.type[i], JR__REC_TRUNCATE);
    g = crash_and_restart(&h, &f);
    ck_assert_uint_eq(last_index(g), 6);
    ck_assert_uint_eq(term_at(g, 6), 5);
    t_host_free(&h);
}
END_TEST

/* The state b reported for group 5 in the frames it sent to `to` since they were last cleared
 * (the wire's FSM extension): its last item's state, its term in *term; -1 if none. */
static int reported(const t_host *h, const char *to, uint64_t *term)
{
    int state = -1;
    static jr__entry scratch[64];
    for (unsigned i = 0; i < h->nframes; i++) {
        if (strcmp(h->frames[i].to, to) != 0) continue;
        jr__frame f;
        ck_assert_int_eq(jr__frame_open(&f, h->frames[i].data, h->frames[i].len, 1u << 26), 0);
        jr__msg m;
        int got;
        while (jr__frame_next(&f, &m, scratch, 64, &got) == 0 && got) {
            if (m.type != JR__EXT_FSM) continue;
            jr__fsm_view v;
            ck_assert_int_eq(jr__fsm_open(&f.ext, &v), 0);
            jr__fsm_item it;
            while (jr__fsm_next(&v, &it))
                if (it.group == GROUP) {
                    state = it.state;
                    *term = it.term;
                }
        }
    }
    return state;
}

/* The fsm fails to restore an installed snapshot: the replica's state machine failed, its log
 * and snapshot did not, so its status says fsm_failed and not damaged (for itself as a member
 * too), it is never current, its leader is told so, and a restart over the whole snapshot
 * clears it. */
START_TEST(failed_restore_is_reported_apart_from_damage)
{
    t_host h;
    s_fsm f;
    jr_group *g = follower_with_stale_suffix(&h, &f);
    f.fail_restore = 1;
    install(&h, "c", 6, 4, 4);
    ck_assert_uint_eq(f.restored, 0);
    jr_group_status st = {.size = sizeof st};
    ck_assert_int_eq(jr_group_status_get(g, &st), 0);
    ck_assert_int_eq(st.fsm_failed, 1);
    ck_assert_int_eq(st.damaged, 0);
    int seen_self = 0;
    for (size_t i = 0; i < st.npeers; i++) {
        jr_peer_status ps = {.size = sizeof ps};
        ck_assert_int_eq(jr_group_peer(g, i, &ps), 0);
        if (!ps.name || strcmp(ps.name, "b") != 0) continue;
        seen_self = 1;
        ck_assert_int_eq(ps.fsm_failed, 1);
        ck_assert_int_eq(ps.damaged, 0);
        ck_assert_int_eq(ps.current, 0);
    }
    ck_assert_int_eq(seen_self, 1);
    /* its leader (c, of term 6) is told in the flush that followed, and again every heartbeat
     * interval; nobody else is */
    uint64_t term = 0;
    ck_assert_int_eq(reported(&h, "c", &term), JR__FSM_FAILED);
    ck_assert_uint_eq(term, 6);
    ck_assert_int_eq(reported(&h, "a", &term), -1);
    t_frames_clear(&h);
    h.now += 20 * 1000000ull; /* t_config: heartbeats every 20 ms */
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_int_eq(reported(&h, "c", &term), JR__FSM_FAILED);
    /* it takes no proposal, as a damaged replica */
    ck_assert_int_eq(jr__group_damaged(g), 1);
    f.fail_restore = 0;
    g = crash_and_restart(&h, &f);
    ck_assert_uint_eq(f.restored, 4);
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    ck_assert_int_eq(jr_group_status_get(g, &st), 0);
    ck_assert_int_eq(st.fsm_failed, 0);
    ck_assert_int_eq(st.damaged, 0);
    t_host_free(&h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("node_truncation");
    TCase *t = tcase_create("truncation");
    tcase_add_test(t, snapshot_install_cut_survives_a_crash);
    tcase_add_test(t, conflict_cut_is_recorded_ahead_of_the_new_entries);
    tcase_add_test(t, install_over_a_matching_log_keeps_the_entries_after_it);
    tcase_add_test(t, failed_restore_is_reported_apart_from_damage);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
