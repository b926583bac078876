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
 * A replica the node destroyed in this life answers with the commit index and latest
 * configuration it had, and no entry.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "log/segment.h"
#include "node/node.h"
#include "raft/raft.h"
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

int main(void)
{
    Suite *s = suite_create("node_vouch");
    TCase *t = tcase_create("vouch");
    tcase_add_test(t, a_vouch_for_a_group_the_node_does_not_hold_is_answered_with_nothing);
    tcase_add_test(t, a_vouch_for_a_destroyed_replica_is_answered_with_its_configuration);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
