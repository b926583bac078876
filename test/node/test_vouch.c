/*
 * A VOUCH (raft/vouch.c) for a group the node holds nothing of is answered by the node itself:
 * a VOUCH_RESP with no entry and no configuration, so that a restarted replica asking the
 * members of an older configuration hears from a server that left the group (it released its
 * replica once its removal committed). A group the node hosts answers through its replica; a
 * group it recovered from disk but has not opened gets no answer (its replica answers once
 * open). After a restart the answer says it may come from a faulty replica (unfloored): what a
 * disk fault left of a replica the server held, every record of it cut or the whole WAL lost.
 * A node that lost its WAL answers so too: silent, it would stop for ever a group whose
 * restarted replicas must hear from it (jetraft-sim seed 571, test/raft/test_lost.c).
 * A replica the node destroyed answers with the commit index and latest configuration it had,
 * and no entry, in this life and after a restart (wal_dir/released, lib/node/released.c): that
 * record is on disk before the group's WAL DROP can be, and a damaged one is not used. A
 * group that comes back as a stash (a crash before its record was durable) gets the record
 * from the stash's records and snapshot file when the stash is released.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "log/segment.h"
#include "node/node.h"
#include "raft/raft.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "vfs/memfs.h"
#include "wire/frame.h"

static const char *const abc[] = {"a", "b", "c"};

/* Hands b a VOUCH of group `group` from a (term 3, last entry 7 of term 2). */
static void vouch(t_host *h, uint64_t group)
{
    jr__msg m = {.type = JR__MSG_VOUCH, .group = group, .term = 3};
    m.from = jr__peer_id("a");
    m.to = jr__peer_id("b");
    m.u.vouch.last_index = 7;
    m.u.vouch.last_term = 2;
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, m.from, m.to);
    jr__frame_add(&b, &m);
    ck_assert_int_eq(jr__frame_end(&b), 0);
    ck_assert_int_eq(jr_node_recv(h->node, "a", b.data, b.len), 0);
    ck_assert_int_eq(jr_node_tick(h->node), 0); /* the answer leaves with the tick's flush */
    jr__buf_free(&b);
}

/* The VOUCH_RESP of group `group` b sent to a since the frames were last cleared: 1 and *out,
 * or 0 if none. */
static int answer(t_host *h, uint64_t group, jr__msg *out)
{
    int found = 0;
    for (unsigned i = 0; i < h->nframes; i++) {
        if (strcmp(h->frames[i].to, "a") != 0) continue;
        jr__frame f;
        ck_assert_int_eq(jr__frame_open(&f, h->frames[i].data, h->frames[i].len, 1u << 24), 0);
        ck_assert_int_eq(jr__frame_check(&f, 16), 0);
        jr__msg m;
        jr__entry scratch[16];
        int got;
        while (!jr__frame_next(&f, &m, scratch, 16, &got) && got)
            if (m.type == JR__MSG_VOUCH_RESP && m.group == group) {
                *out = m;
                found = 1;
            }
    }
    return found;
}

START_TEST(a_vouch_for_a_group_the_node_does_not_hold_is_answered_with_nothing)
{
    t_host h;
    t_host_init(&h);
    ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
    t_fsm f;
    t_fsm_init(&f);
    jr_group *g;
    ck_assert_int_eq(t_group(&h, 5, abc, 3, &f, &g), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    /* group 9: never here */
    t_frames_clear(&h);
    vouch(&h, 9);
    jr__msg m;
    ck_assert(answer(&h, 9, &m));
    ck_assert_uint_eq(m.term, 1);
    ck_assert_uint_eq(m.u.vouch_resp.leader, 0);
    ck_assert_uint_eq(m.u.vouch_resp.unfloored, 0); /* a first life: never a member */
    ck_assert_uint_eq(m.u.vouch_resp.last_index, 0);
    ck_assert_uint_eq(m.u.vouch_resp.commit, 0);
    jr__conf c;
    ck_assert_int_eq(jr__conf_decode(&c, m.u.vouch_resp.conf, m.u.vouch_resp.conf_len), 0);
    ck_assert_uint_eq(c.n, 0);
    /* group 5: its replica answers, with its configuration {a, b, c} */
    t_frames_clear(&h);
    vouch(&h, 5);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert(answer(&h, 5, &m));
    ck_assert_int_eq(jr__conf_decode(&c, m.u.vouch_resp.conf, m.u.vouch_resp.conf_len), 0);
    ck_assert_uint_eq(c.n, 3);
    ck_assert_uint_ge(m.u.vouch_resp.last_index, 1);
    /* restarted, group 5 recovered from the WAL but not opened: no answer */
    jr__memfs_crash(h.vfs, 1);
    jr__node_close_noflush(h.node);
    h.node = NULL;
    t_frames_clear(&h);
    ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
    vouch(&h, 5);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert(!answer(&h, 5, &m));
    vouch(&h, 9);
    ck_assert(answer(&h, 9, &m)); /* still nothing of 9 */
    /* but after a restart "nothing" may be what a disk fault left of a member's replica: it
     * counts toward a term floor as an answer of a possibly faulty replica */
    ck_assert_uint_eq(m.u.vouch_resp.unfloored, 1);
    /* the WAL lost (its mark without a segment): it holds nothing now, as a faulty replica */
    jr_node_close(h.node);
    h.node = NULL;
    uint64_t *seqs;
    size_t ns;
    ck_assert_int_eq(jr__seg_list(h.vfs, "/wal", NULL, &seqs, &ns), 0);
    for (size_t i = 0; i < ns; i++) {
        char path[64];
        jr__seg_path(path, sizeof path, "/wal", seqs[i]);
        ck_assert_int_eq(h.vfs->remove(h.vfs->ctx, path), 0);
    }
    free(seqs);
    t_frames_clear(&h);
    ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
    ck_assert_int_eq(h.node->wal_lost, 1);
    vouch(&h, 9);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert(answer(&h, 9, &m));
    ck_assert_uint_eq(m.u.vouch_resp.unfloored, 1);
    ck_assert_uint_eq(m.u.vouch_resp.last_index, 0);
    ck_assert_int_eq(jr__conf_decode(&c, m.u.vouch_resp.conf, m.u.vouch_resp.conf_len), 0);
    ck_assert_uint_eq(c.n, 0);
    /* and for group 5, which it held: nothing of it survived */
    t_frames_clear(&h);
    vouch(&h, 5);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert(answer(&h, 5, &m));
    ck_assert_uint_eq(m.u.vouch_resp.unfloored, 1);
    ck_assert_uint_eq(m.u.vouch_resp.last_index, 0);
    t_host_free(&h);
}
END_TEST

/* A replica the node destroyed (its removal committed, or its group deleted) answers, for the
 * rest of the node's life, with the commit index and latest configuration it had and no entry.
 * An asker whose WAL was lost may know only an older configuration naming this server, and
 * this answer is then its only way to hear of the newer one's members: jetraft-sim seed 1689
 * (five nodes, --async-sync 2) elected such an asker with the log of its snapshot when the
 * destroyed replica answered nothing and the other member had been down for the change. */
START_TEST(a_vouch_for_a_destroyed_replica_is_answered_with_its_configuration)
{
    t_host h;
    t_host_init(&h);
    ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
    t_fsm f;
    t_fsm_init(&f);
    jr_group *g;
    ck_assert_int_eq(t_group(&h, 5, abc, 3, &f, &g), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    uint64_t conf_index = jr__raft_conf_index(g->raft);
    uint64_t commit = jr__raft_commit_index(g->raft);
    ck_assert_uint_ge(conf_index, 1);
    jr__group_detach(g, JR_ECLOSED);
    ck_assert_int_eq(jr__node_group_destroy(h.node, 5), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    ck_assert_int_eq(jr__node_group_known(h.node, 5), 0);
    t_frames_clear(&h);
    vouch(&h, 5);
    jr__msg m;
    ck_assert(answer(&h, 5, &m));
    ck_assert_uint_eq(m.term, 1);
    ck_assert_uint_eq(m.u.vouch_resp.leader, 0);
    ck_assert_uint_eq(m.u.vouch_resp.last_index, 0); /* no entry */
    ck_assert_uint_eq(m.u.vouch_resp.last_term, 0);
    ck_assert_uint_eq(m.u.vouch_resp.commit, commit);
    ck_assert_uint_eq(m.u.vouch_resp.conf_index, conf_index);
    jr__conf c;
    ck_assert_int_eq(jr__conf_decode(&c, m.u.vouch_resp.conf, m.u.vouch_resp.conf_len), 0);
    ck_assert_uint_eq(c.n, 3);
    for (unsigned i = 0; i < 3; i++) ck_assert_ptr_nonnull(jr__conf_find(&c, jr__peer_id(abc[i])));
    /* a group never here still gets nothing */
    t_frames_clear(&h);
    vouch(&h, 9);
    ck_assert(answer(&h, 9, &m));
    ck_assert_int_eq(jr__conf_decode(&c, m.u.vouch_resp.conf, m.u.vouch_resp.conf_len), 0);
    ck_assert_uint_eq(c.n, 0);
    ck_assert_uint_eq(m.u.vouch_resp.conf_index, 0);
    /* created here again: its replica answers for itself, and once destroyed again with what it
     * knew then */
    t_fsm f2;
    t_fsm_init(&f2);
    static const char *const ab[] = {"a", "b"};
    ck_assert_int_eq(t_group(&h, 5, ab, 2, &f2, &g), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    t_frames_clear(&h);
    vouch(&h, 5);
    ck_assert(answer(&h, 5, &m));
    ck_assert_uint_ge(m.u.vouch_resp.last_index, 1);
    ck_assert_int_eq(jr__conf_decode(&c, m.u.vouch_resp.conf, m.u.vouch_resp.conf_len), 0);
    ck_assert_uint_eq(c.n, 2);
    jr__group_detach(g, JR_ECLOSED);
    ck_assert_int_eq(jr__node_group_destroy(h.node, 5), 0);
    t_frames_clear(&h);
    vouch(&h, 5);
    ck_assert(answer(&h, 5, &m));
    ck_assert_uint_eq(m.u.vouch_resp.last_index, 0);
    ck_assert_int_eq(jr__conf_decode(&c, m.u.vouch_resp.conf, m.u.vouch_resp.conf_len), 0);
    ck_assert_uint_eq(c.n, 2);
    t_host_free(&h);
}
END_TEST

/* The node's configuration decoded from a VOUCH answer. */
static jr__conf answer_conf(const jr__msg *m)
{
    jr__conf c;
    ck_assert_int_eq(jr__conf_decode(&c, m->u.vouch_resp.conf, m->u.vouch_resp.conf_len), 0);
    return c;
}

/* Opens group 5 {a, b, c} on b, then detaches and destroys it; *commit and *conf_index get what
 * its replica knew. Nothing is flushed after the destroy. */
static void release_five(t_host *h, uint64_t *commit, uint64_t *conf_index)
{
    t_fsm f;
    t_fsm_init(&f);
    jr_group *g;
    ck_assert_int_eq(t_group(h, 5, abc, 3, &f, &g), 0);
    ck_assert_int_eq(jr_node_tick(h->node), 0);
    *conf_index = jr__raft_conf_index(g->raft);
    *commit = jr__raft_commit_index(g->raft);
    ck_assert_uint_ge(*conf_index, 1);
    jr__group_detach(g, JR_ECLOSED);
    ck_assert_int_eq(jr__node_group_destroy(h->node, 5), 0);
}

/* Crashes b (unsynced writes lost) and opens it again. */
static void crash_restart(t_host *h)
{
    jr__memfs_crash(h->vfs, 1);
    jr__node_close_noflush(h->node);
    h->node = NULL;
    t_frames_clear(h);
    ck_assert_int_eq(t_open(h, "b", abc, 3, NULL), 0);
}

/* The record outlives the node: after a crash right after the flush that released the replica,
 * and after a clean close, the VOUCH is answered with the configuration (before the record was
 * kept on disk a restarted node answered nothing, which reopened jetraft-sim seed 1689's loss).
 * A re-release replaces it; a forget (the group deleted) lasts too. */
START_TEST(a_released_replica_is_answered_for_after_a_restart)
{
    t_host h;
    t_host_init(&h);
    ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
    uint64_t commit, conf_index;
    release_five(&h, &commit, &conf_index);
    ck_assert_int_eq(jr_node_tick(h.node), 0); /* the record, then the DROP */
    ck_assert_int_eq(jr__node_group_retiring(h.node, 5), 0);
    crash_restart(&h);
    ck_assert_int_eq(jr__node_group_known(h.node, 5), 0); /* the DROP is durable */
    vouch(&h, 5);
    jr__msg m;
    ck_assert(answer(&h, 5, &m));
    ck_assert_uint_eq(m.u.vouch_resp.last_index, 0);
    ck_assert_uint_eq(m.u.vouch_resp.commit, commit);
    ck_assert_uint_eq(m.u.vouch_resp.conf_index, conf_index);
    ck_assert_uint_eq(m.u.vouch_resp.unfloored, 1); /* a restart, as ever */
    jr__conf c = answer_conf(&m);
    ck_assert_uint_eq(c.n, 3);
    for (unsigned i = 0; i < 3; i++) ck_assert_ptr_nonnull(jr__conf_find(&c, jr__peer_id(abc[i])));
    /* a clean close keeps it too */
    jr_node_close(h.node);
    h.node = NULL;
    t_frames_clear(&h);
    ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
    vouch(&h, 5);
    ck_assert(answer(&h, 5, &m));
    ck_assert_uint_eq(answer_conf(&m).n, 3);
    /* created again here (its record goes: its replica answers), released again: replaced */
    static const char *const ab[] = {"a", "b"};
    t_fsm f;
    t_fsm_init(&f);
    jr_group *g;
    ck_assert_int_eq(t_group(&h, 5, ab, 2, &f, &g), 0);
    ck_assert_ptr_null(jr__map_get(&h.node->released, 5));
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    jr__group_detach(g, JR_ECLOSED);
    ck_assert_int_eq(jr__node_group_destroy(h.node, 5), 0);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    crash_restart(&h);
    ck_assert_uint_eq(h.node->released.len, 1); /* one record per group */
    vouch(&h, 5);
    ck_assert(answer(&h, 5, &m));
    ck_assert_uint_eq(answer_conf(&m).n, 2);
    /* deleted: forgotten, and a restart does not bring it back */
    jr__node_released_forget(h.node, 5);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    crash_restart(&h);
    ck_assert_uint_eq(h.node->released.len, 0);
    t_frames_clear(&h);
    vouch(&h, 5);
    ck_assert(answer(&h, 5, &m));
    ck_assert_uint_eq(answer_conf(&m).n, 0);
    ck_assert_uint_eq(m.u.vouch_resp.conf_index, 0);
    /* released and forgotten at once (deleted): its DROP does not wait for the file */
    release_five(&h, &commit, &conf_index);
    ck_assert_int_eq(jr__node_group_retiring(h.node, 5), 1);
    jr__node_released_forget(h.node, 5);
    ck_assert_int_eq(jr__node_group_retiring(h.node, 5), 0);
    ck_assert_uint_gt(jr__wal_pending(h.node->wal), 0);
    t_host_free(&h);
}
END_TEST

/* The n-th vfs call fails, for every n, from the release through the flush that writes the
 * record and the DROP, then the node crashes (unsynced writes lost, torn) and opens again (the
 * failures over): nothing crashes, and the group is either recovered from the WAL (a stash, as
 * before) or remembered with its configuration, never neither. Sticky failures (the disk gone
 * from that call on) and single ones. Then the same with the failure in the restart's open. */
START_TEST(a_crash_anywhere_in_a_release_keeps_the_stash_or_the_record)
{
    unsigned fired_runs = 0;
    for (int sticky = 0; sticky <= 1; sticky++) {
        for (uint64_t nth = 1;; nth++) {
            t_host h;
            t_host_init(&h);
            ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
            uint64_t commit, conf_index;
            jr__memfs_stats before, after;
            jr__memfs_stats_get(h.vfs, &before);
            /* from the destroy on (its snapshot removal lists the directory) */
            t_fsm f;
            t_fsm_init(&f);
            jr_group *g;
            ck_assert_int_eq(t_group(&h, 5, abc, 3, &f, &g), 0);
            ck_assert_int_eq(jr_node_tick(h.node), 0);
            conf_index = jr__raft_conf_index(g->raft);
            commit = jr__raft_commit_index(g->raft);
            jr__group_detach(g, JR_ECLOSED);
            ck_assert_int_eq(jr__memfs_fail(h.vfs, JR__MEMFS_ANY, nth, JR_EIO, sticky, NULL), 0);
            jr__memfs_stats_get(h.vfs, &before);
            jr__node_group_destroy(h.node, 5); /* 0, or an error the vfs made */
            (void)jr_node_tick(h.node);        /* the flush that writes the record, then the DROP */
            jr__memfs_stats_get(h.vfs, &after);
            int fired = after.faults > before.faults;
            jr__memfs_fail_clear(h.vfs);
            crash_restart(&h);
            int stash = jr__node_group_known(h.node, 5);
            const jr__released *r = jr__map_get(&h.node->released, 5);
            ck_assert_msg(stash || r, "sticky %d, call %llu: neither the stash nor the record",
                          sticky, (unsigned long long)nth);
            if (r) {
                ck_assert_uint_eq(r->commit, commit);
                ck_assert_uint_eq(r->conf_index, conf_index);
                jr__conf c;
                ck_assert_int_eq(jr__conf_decode(&c, r->conf, r->conf_len), 0);
                ck_assert_uint_eq(c.n, 3);
            }
            t_host_free(&h);
            if (!fired) break; /* past the last call of the release */
            fired_runs++;
        }
    }
    ck_assert_uint_ge(fired_runs, 6); /* the record's open, write, sync, close, rename; WAL */

    /* the restart's open fails at its n-th call: either the open fails (and a second one
     * succeeds) or it succeeds; either way the record is there */
    for (uint64_t nth = 1;; nth++) {
        t_host h;
        t_host_init(&h);
        ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
        uint64_t commit, conf_index;
        release_five(&h, &commit, &conf_index);
        ck_assert_int_eq(jr_node_tick(h.node), 0);
        jr__memfs_crash(h.vfs, 0);
        jr__node_close_noflush(h.node);
        h.node = NULL;
        jr__memfs_stats before, after;
        jr__memfs_stats_get(h.vfs, &before);
        ck_assert_int_eq(jr__memfs_fail(h.vfs, JR__MEMFS_ANY, nth, JR_EIO, 0, NULL), 0);
        int rc = t_open(&h, "b", abc, 3, NULL);
        jr__memfs_stats_get(h.vfs, &after);
        jr__memfs_fail_clear(h.vfs);
        if (rc != 0) {
            ck_assert_ptr_null(h.node);
            ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
        }
        const jr__released *r = jr__map_get(&h.node->released, 5);
        ck_assert_msg(r != NULL, "open failing at call %llu (rc %d) lost the record",
                      (unsigned long long)nth, rc);
        ck_assert_uint_eq(r->conf_index, conf_index);
        t_host_free(&h);
        if (after.faults == before.faults) break;
    }
}
END_TEST

/* A group released as a recovery stash (never opened in the life that releases it) --------*/

static int snap_write(void *ctx, jr_snapshot_writer *w)
{
    t_fsm *f = ctx;
    return jr_snapshot_write(w, &f->last, sizeof f->last);
}

static int snap_restore(void *ctx, uint64_t index, const void *data, size_t len)
{
    t_fsm *f = ctx;
    if (len != sizeof f->last) return JR_ECORRUPT;
    memcpy(&f->last, data, len);
    f->applied = index;
    return 0;
}

/* What a replica knew, as a released record holds it. */
typedef struct knew {
    uint64_t commit, conf_index;
    jr__conf conf;
} knew;

/* Proposes n entries on g and runs b until they applied. */
static void propose_n(t_host *h, jr_group *g, t_fsm *f, unsigned n)
{
    uint64_t want = f->applied + n;
    for (unsigned i = 0; i < n; i++) ck_assert_int_eq(jr_group_propose(g, "x", 1, NULL, NULL), 0);
    t_run_ms(h, 100, 1);
    ck_assert_uint_ge(f->applied, want);
}

/* Group 5 on b: b its only voter (it leads and commits alone), a snapshot every 4 entries, a
 * added as an observer after 6 proposals, then `after` more. Its commit is written before its
 * entries apply (jr__group_durable_apply), so what the WAL holds of it is what it knows. *k gets
 * what a record of its replica holds when released open, with the configuration's entry index;
 * *snap its newest snapshot's index. */
static jr_group *grow_five(t_host *h, t_fsm *f, unsigned after, knew *k, uint64_t *snap)
{
    static const char *const only_b[] = {"b"};
    t_fsm_init(f);
    f->ops.snapshot = snap_write;
    f->ops.restore = snap_restore;
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = 5;
    gc.voters = only_b;
    gc.nvoters = 1;
    gc.fsm = &f->ops;
    gc.snapshot_entries = 4;
    jr_group *g;
    ck_assert_int_eq(jr_group_open(h->node, &gc, &g), 0);
    jr__group_durable_apply(g);
    t_run_ms(h, 50, 1);
    ck_assert_str_eq(jr_group_leader(g), "b");
    propose_n(h, g, f, 6);
    ck_assert_int_eq(jr_group_add_observer(g, "a", NULL, NULL), 0);
    t_run_ms(h, 100, 1);
    ck_assert_uint_eq(jr__raft_conf(g->raft)->n, 2);
    propose_n(h, g, f, after);
    k->commit = jr__raft_commit_index(g->raft);
    k->conf_index = jr__raft_conf_index(g->raft);
    k->conf = *jr__raft_conf(g->raft);
    *snap = g->snap_index;
    ck_assert_uint_gt(*snap, 0);
    return g;
}

/* Checks that b keeps the record k for group 5. */
static void has_record(t_host *h, const knew *k, const char *when)
{
    const jr__released *r = jr__map_get(&h->node->released, 5);
    ck_assert_msg(r != NULL, "%s: no record of group 5", when);
    ck_assert_msg(r->commit == k->commit && r->conf_index == k->conf_index,
                  "%s: record commit %llu conf_index %llu, want %llu %llu", when,
                  (unsigned long long)r->commit, (unsigned long long)r->conf_index,
                  (unsigned long long)k->commit, (unsigned long long)k->conf_index);
    jr__conf c;
    ck_assert_int_eq(jr__conf_decode(&c, r->conf, r->conf_len), 0);
    ck_assert_uint_eq(c.n, k->conf.n);
    for (unsigned i = 0; i < k->conf.n; i++) {
        const jr__member *m = jr__conf_find(&c, k->conf.m[i].id);
        ck_assert_ptr_nonnull(m);
        ck_assert_uint_eq(m->voter, k->conf.m[i].voter);
    }
}

/* The record of a group released as a stash: a crash before its record was durable brings the
 * group back as a stash (its WAL records and snapshot file), and releasing that stash keeps
 * what its replica knew, read from them: the commit index, and the latest configuration with
 * its entry's index, from a configuration entry in the log after the snapshot, or from the
 * snapshot file's header once the entry is behind it (then the snapshot's index, as the replica
 * reopened from that stash would say). The VOUCH answer carries it after another restart.
 * Before, the stash was released without a record and the answer was "nothing". */
START_TEST(a_stash_left_by_a_crash_before_the_record_is_released_with_what_it_knew)
{
    for (unsigned after = 1; after <= 6; after += 5) {
        t_host h;
        t_host_init(&h);
        ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
        t_fsm f;
        knew k;
        uint64_t snap;
        jr_group *g = grow_five(&h, &f, after, &k, &snap);
        if (after == 1) {
            ck_assert_uint_lt(snap, k.conf_index); /* the entry after the snapshot */
        } else {
            ck_assert_uint_ge(snap, k.conf_index); /* the snapshot covers the entry */
            k.conf_index = snap;
        }
        jr__group_detach(g, JR_ECLOSED);
        ck_assert_int_eq(jr__node_group_destroy(h.node, 5), 0);
        ck_assert_int_eq(jr__node_group_retiring(h.node, 5), 1);
        crash_restart(&h); /* before the flush that writes the record */
        ck_assert_int_eq(jr__node_group_known(h.node, 5), 1);
        ck_assert_ptr_null(jr__map_get(&h.node->released, 5));
        /* released again, as a stash (the meta state dropped it while this server was down) */
        ck_assert_int_eq(jr__node_group_destroy(h.node, 5), 0);
        ck_assert_int_eq(jr__node_group_known(h.node, 5), 0);
        has_record(&h, &k, "released as a stash");
        ck_assert_int_eq(jr_node_tick(h.node), 0); /* the record, then the DROP */
        ck_assert_int_eq(jr__node_group_retiring(h.node, 5), 0);
        crash_restart(&h);
        ck_assert_int_eq(jr__node_group_known(h.node, 5), 0); /* the DROP is durable */
        has_record(&h, &k, "after the restart");
        vouch(&h, 5);
        jr__msg m;
        ck_assert(answer(&h, 5, &m));
        ck_assert_uint_eq(m.u.vouch_resp.last_index, 0);
        ck_assert_uint_eq(m.u.vouch_resp.commit, k.commit);
        ck_assert_uint_eq(m.u.vouch_resp.conf_index, k.conf_index);
        ck_assert_uint_eq(answer_conf(&m).n, 2);
        t_host_free(&h);
    }
}
END_TEST

/* The n-th vfs call fails, for every n, from the release of a stash (the read of its snapshot
 * file) through the flush that writes its record, removes its snapshot file and stages its
 * DROP; then the node crashes and opens again: the group is a stash again or its record is
 * kept with what the replica knew, never neither. A stash left is released again without a
 * fault and keeps the same record (also one whose snapshot file went while its record was
 * already durable: it knows less than the record, which stays). Sticky and single failures. */
START_TEST(a_crash_anywhere_in_a_stash_release_keeps_the_stash_or_the_record)
{
    unsigned fired_runs = 0, left_stash = 0, left_record = 0;
    for (int sticky = 0; sticky <= 1; sticky++) {
        for (uint64_t nth = 1;; nth++) {
            t_host h;
            t_host_init(&h);
            ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
            t_fsm f;
            knew k;
            uint64_t snap;
            grow_five(&h, &f, 6, &k, &snap);
            k.conf_index = snap; /* behind the snapshot: its file holds the configuration */
            crash_restart(&h);
            ck_assert_int_eq(jr__node_group_known(h.node, 5), 1);
            jr__memfs_stats before, after;
            jr__memfs_stats_get(h.vfs, &before);
            ck_assert_int_eq(jr__memfs_fail(h.vfs, JR__MEMFS_ANY, nth, JR_EIO, sticky, NULL), 0);
            (void)jr__node_group_destroy(h.node, 5); /* 0, or the error the vfs made */
            (void)jr_node_tick(h.node);
            jr__memfs_stats_get(h.vfs, &after);
            int fired = after.faults > before.faults;
            jr__memfs_fail_clear(h.vfs);
            crash_restart(&h);
            int stash = jr__node_group_known(h.node, 5);
            const jr__released *r = jr__map_get(&h.node->released, 5);
            ck_assert_msg(stash || r, "sticky %d, call %llu: neither the stash nor the record",
                          sticky, (unsigned long long)nth);
            left_stash += stash != 0;
            left_record += r != NULL;
            if (r) has_record(&h, &k, "after the fault");
            if (stash) {
                ck_assert_int_eq(jr__node_group_destroy(h.node, 5), 0);
                ck_assert_int_eq(jr_node_tick(h.node), 0);
                crash_restart(&h);
                ck_assert_int_eq(jr__node_group_known(h.node, 5), 0);
                has_record(&h, &k, "released again");
            }
            t_host_free(&h);
            if (!fired) break; /* past the last call of the release */
            fired_runs++;
        }
    }
    /* the snapshot file's open, size, read, close; the record's open, write, sync, close,
     * rename; the snapshot directory's list, the removal and its sync; the WAL's write, sync */
    ck_assert_uint_ge(fired_runs, 2 * 12);
    ck_assert_uint_gt(left_stash, 0);
    ck_assert_uint_gt(left_record, 0);
}
END_TEST

static int count_item(void *ctx, const jr__released_item *it)
{
    (void)it;
    ++*(unsigned *)ctx;
    return 0;
}

/* The file's decoder: what the encoder wrote decodes; every cut, every flipped byte and every
 * malformed field with a valid checksum is JR_ECORRUPT. */
START_TEST(the_released_file_decoder_refuses_anything_malformed)
{
    jr__map m;
    jr__map_init(&m, NULL);
    uint8_t conf[JR__RELEASED_CONF_MAX];
    jr__conf c = {.n = 3};
    for (unsigned i = 0; i < 3; i++) c.m[i] = (jr__member){.id = jr__peer_id(abc[i]), .voter = 1};
    size_t clen = jr__conf_encode(&c, conf);
    for (uint64_t id = 7; id < 10; id++) {
        jr__released *r = malloc(sizeof *r + clen);
        r->commit = 40 + id;
        r->conf_index = 3;
        r->conf_len = (uint32_t)clen;
        memcpy(r->conf, conf, clen);
        ck_assert_int_eq(jr__map_put(&m, id, r), 0);
    }
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__released_encode(&m, &b), 0);
    unsigned n = 0;
    ck_assert_int_eq(jr__released_decode(b.data, b.len, count_item, &n), 0);
    ck_assert_uint_eq(n, 3);
    for (size_t len = 0; len < b.len; len++)
        ck_assert_int_eq(jr__released_decode(b.data, len, count_item, &n), JR_ECORRUPT);
    for (size_t i = 0; i < b.len; i++) {
        b.data[i] ^= 0x10;
        ck_assert_int_eq(jr__released_decode(b.data, b.len, count_item, &n), JR_ECORRUPT);
        b.data[i] ^= 0x10;
    }
    /* checksum made valid over a malformed body: each field out of bounds */
    static const struct {
        size_t off;
        uint8_t v;
    } bad[] = {
        {8, 4},               /* count above the records held */
        {8, 200},             /* count far above */
        {16, 0},              /* ... */
        {16 + 24, 0xff},      /* conf_len past the end */
        {16 + 28, 9},         /* the configuration's member count */
        {16 + 28 + 1 + 8, 2}, /* a member neither voter nor not */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        jr__buf w;
        jr__buf_init(&w, NULL);
        jr__buf_put(&w, b.data, b.len);
        if (k == 2)
            memset(w.data + 16, 0, 8); /* group 0 */
        else
            w.data[bad[k].off] = bad[k].v;
        jr__put_u64(w.data + w.len - 8, jr__xxh3(w.data, w.len - 8));
        ck_assert_msg(jr__released_decode(w.data, w.len, count_item, &n) == JR_ECORRUPT,
                      "case %zu decoded", k);
        jr__buf_free(&w);
    }
    /* no record at all */
    jr__map e;
    jr__map_init(&e, NULL);
    jr__buf_reset(&b);
    ck_assert_int_eq(jr__released_encode(&e, &b), 0);
    n = 0;
    ck_assert_int_eq(jr__released_decode(b.data, b.len, count_item, &n), 0);
    ck_assert_uint_eq(n, 0);
    jr__buf_free(&b);
    for (size_t i = 0; i < m.cap; i++)
        if (m.slots[i].key) free(m.slots[i].val);
    jr__map_free(&m);
}
END_TEST

/* A damaged file is not used (the node answers nothing, as a restarted node did before the file
 * existed) and is replaced by the next write; an unreadable one refuses the open. A data
 * directory without the file (written before it existed) opens as ever. */
START_TEST(a_damaged_released_file_is_not_trusted)
{
    t_host h;
    t_host_init(&h);
    ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
    uint64_t commit, conf_index;
    release_five(&h, &commit, &conf_index);
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    jr_node_close(h.node);
    h.node = NULL;
    /* a group twice, under a valid checksum */
    uint8_t *data;
    size_t len;
    ck_assert_int_eq(jr__memfs_read_all(h.vfs, "/wal/released", &data, &len), 0);
    size_t rec = len - 16 - 8;
    uint8_t *two = malloc(len + rec);
    memcpy(two, data, 16 + rec);
    memcpy(two + 16 + rec, data + 16, rec);
    jr__put_u64(two + 8, 2);
    jr__put_u64(two + 16 + 2 * rec, jr__xxh3(two, 16 + 2 * rec));
    jr__memfs_release(h.vfs, data);
    jr_file *f;
    ck_assert_int_eq(h.vfs->open(h.vfs->ctx, "/wal/released", JR_O_CREATE | JR_O_TRUNCATE, &f), 0);
    ck_assert_int_eq(h.vfs->pwrite(h.vfs->ctx, f, two, len + rec, 0), 0);
    ck_assert_int_eq(h.vfs->sync(h.vfs->ctx, f), 0);
    ck_assert_int_eq(h.vfs->close(h.vfs->ctx, f), 0);
    free(two);
    ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
    ck_assert_uint_eq(h.node->released.len, 0);
    jr_node_close(h.node);
    h.node = NULL;
    /* bits flipped */
    ck_assert_int_eq(jr__memfs_flip_bits(h.vfs, "/wal/released", 0, 0, 3), 0);
    ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
    ck_assert_uint_eq(h.node->released.len, 0);
    vouch(&h, 5);
    jr__msg m;
    ck_assert(answer(&h, 5, &m));
    ck_assert_uint_eq(answer_conf(&m).n, 0);
    ck_assert_uint_eq(m.u.vouch_resp.unfloored, 1);
    /* replaced by a whole file at the next flush */
    ck_assert_int_eq(jr_node_tick(h.node), 0);
    jr_node_close(h.node);
    h.node = NULL;
    ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
    ck_assert_uint_eq(h.node->released.len, 0);
    jr_node_close(h.node);
    h.node = NULL;
    /* unreadable: the open fails and says where */
    ck_assert_int_eq(jr__memfs_fail(h.vfs, JR__MEMFS_PREAD, 1, JR_EIO, 0, "/wal/released"), 0);
    jr_node_config cfg;
    t_config(&h, &cfg, "b", abc, 3, 99);
    ck_assert_int_eq(jr_node_open(&cfg, &h.node), JR_EIO);
    jr__memfs_fail_clear(h.vfs);
    /* none at all (an older data directory) */
    ck_assert_int_eq(jr__memfs_delete(h.vfs, "/wal/released"), 0);
    ck_assert_int_eq(t_open(&h, "b", abc, 3, NULL), 0);
    ck_assert_uint_eq(h.node->released.len, 0);
    t_host_free(&h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("node_vouch");
    TCase *t = tcase_create("vouch");
    tcase_add_test(t, a_vouch_for_a_group_the_node_does_not_hold_is_answered_with_nothing);
    tcase_add_test(t, a_vouch_for_a_destroyed_replica_is_answered_with_its_configuration);
    tcase_add_test(t, a_released_replica_is_answered_for_after_a_restart);
    tcase_add_test(t, a_crash_anywhere_in_a_release_keeps_the_stash_or_the_record);
    tcase_add_test(t, a_stash_left_by_a_crash_before_the_record_is_released_with_what_it_knew);
    tcase_add_test(t, a_crash_anywhere_in_a_stash_release_keeps_the_stash_or_the_record);
    tcase_add_test(t, the_released_file_decoder_refuses_anything_malformed);
    tcase_add_test(t, a_damaged_released_file_is_not_trusted);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
