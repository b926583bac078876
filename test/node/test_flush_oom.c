/*
 * A flush that runs out of memory is transient, a flush whose WAL write fails is fatal, and the
 * node acts on each accordingly (flush.c):
 *  - for n = 1, 2, ... the n-th allocation fails (once, or from then on until the test lifts it)
 *    while four single-voter groups take proposals: no WAL record is ever written twice (every
 *    (group, index) entry once, every group's record numbers consecutive across all writes), the
 *    WAL still accepts writes, every group still leads, every proposal completes, and after a
 *    reopen every acknowledged entry is applied again;
 *  - a WAL write that fails (JR_EIO) makes every leader on the node step down.
 * One node on memfs under a counting vfs that decodes every record written.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "log/record.h"
#include "log/segment.h"
#include "log/wal_int.h"
#include "node/node.h"
#include "util/alloc.h"
#include "vfs/memfs.h"

#define MS 1000000ull
#define GROUPS 4
#define ROUNDS 6
#define MAX_N 20000
#define MAX_INDEX 64

static const char *const only_a[] = {"a"};

typedef struct fx {
    t_host h;
    t_cvfs c;
    jr__falloc fa;
    t_fsm fsm[GROUPS];
    jr_group *g[GROUPS];
    /* what the WAL wrote, per group */
    uint64_t gseq[GROUPS + 1];
    uint8_t written[GROUPS + 1][MAX_INDEX];
    char bad[160]; /* the first violation seen */
} fx;

/* Decodes every record of one WAL write (a new segment opens with its header). */
static void on_write(void *arg, const void *buf, size_t len, uint64_t off)
{
    fx *f = arg;
    const uint8_t *p = buf;
    size_t o = off == 0 ? JR__SEG_HDR : 0;
    while (o < len && !f->bad[0]) {
        jr__rec r;
        if (jr__rec_decode(p + o, len - o, &r) != 0) {
            snprintf(f->bad, sizeof f->bad, "undecodable record at %zu of a write", o);
            return;
        }
        o += JR__REC_HDR + r.len;
        if (r.type == JR__REC_CHECKPOINT) continue;
        if (r.group == 0 || r.group > GROUPS) {
            snprintf(f->bad, sizeof f->bad, "record of unknown group %llu",
                     (unsigned long long)r.group);
            return;
        }
        if (r.gseq != f->gseq[r.group] + 1)
            snprintf(f->bad, sizeof f->bad, "group %llu: record %llu written after %llu",
                     (unsigned long long)r.group, (unsigned long long)r.gseq,
                     (unsigned long long)f->gseq[r.group]);
        f->gseq[r.group] = r.gseq;
        if (r.type == JR__REC_ENTRY && r.e.index < MAX_INDEX) {
            if (f->written[r.group][r.e.index]++)
                snprintf(f->bad, sizeof f->bad, "group %llu: entry %llu written twice",
                         (unsigned long long)r.group, (unsigned long long)r.e.index);
        }
    }
}

/* Small segments (a flush may start a new one: a checkpoint to build) and entries that grow
 * (the staging buffer grows with them): the flush allocates in every way it can. */
static void open_all(fx *f, const jr_allocator *a)
{
    jr_node_config cfg;
    t_config(&f->h, &cfg, "a", only_a, 1, 5);
    cfg.alloc = a;
    cfg.wal_segment_bytes = 8192;
    ck_assert_int_eq(jr_node_open(&cfg, &f->h.node), 0);
    for (unsigned i = 0; i < GROUPS; i++) {
        t_fsm_init(&f->fsm[i]);
        ck_assert_int_eq(t_group(&f->h, i + 1, only_a, 1, &f->fsm[i], &f->g[i]), 0);
    }
}

/* Ticks whenever the node asks, for ms of clock in steps of 1 ms. Tick errors are what a failed
 * flush reports: allowed (the outcome is checked). */
static void run_ms(fx *f, uint64_t ms)
{
    for (uint64_t t = 0; t < ms; t++) {
        for (int k = 0; k < 8 && jr_node_deadline(f->h.node) <= f->h.now; k++)
            jr_node_tick(f->h.node);
        f->h.now += MS;
    }
    t_frames_clear(&f->h);
}

static int all_lead(fx *f)
{
    for (unsigned i = 0; i < GROUPS; i++)
        if (jr__raft_role(jr__group_raft(f->g[i])) != JR_LEADER) return 0;
    return 1;
}

typedef struct prop {
    int done, status;
    uint64_t index;
} prop;

static void on_prop(void *arg, int status, uint64_t index)
{
    prop *p = arg;
    p->done = 1;
    p->status = status;
    p->index = index;
}

START_TEST(out_of_memory_in_a_flush_is_transient_and_writes_nothing_twice)
{
    int sticky = _i;
    uint64_t n;
    for (n = 1; n < MAX_N; n++) {
        fx *f = calloc(1, sizeof *f);
        t_host_init(&f->h);
        t_cvfs_wrap(&f->c, &f->h);
        f->c.on_write = on_write;
        f->c.arg = f;
        jr__falloc_init(&f->fa);
        open_all(f, &f->fa.a);
        run_ms(f, 50);
        ck_assert(all_lead(f));

        uint64_t fired0 = f->fa.failures;
        jr__falloc_arm(&f->fa, n, sticky);
        prop p[ROUNDS][GROUPS];
        memset(p, 0, sizeof p);
        for (int r = 0; r < ROUNDS; r++) {
            for (unsigned i = 0; i < GROUPS; i++) {
                static char buf[4096];
                size_t len = (size_t)(300 << r % 4) + i;
                memset(buf, 'a' + r, len);
                int rc = jr_group_propose(f->g[i], buf, len, on_prop, &p[r][i]);
                if (rc) {
                    ck_assert_int_eq(rc, JR_ENOMEM);
                    p[r][i].done = 1;
                    p[r][i].status = rc;
                }
            }
            run_ms(f, 2);
        }
        run_ms(f, 5);
        int fired = f->fa.failures > fired0;
        jr__falloc_arm(&f->fa, 0, 0); /* memory is back */
        run_ms(f, 300);

        ck_assert_msg(!f->bad[0], "n=%llu: %s", (unsigned long long)n, f->bad);
        ck_assert_msg(f->h.node->wal->failed == 0, "n=%llu: the WAL failed: %s",
                      (unsigned long long)n, jr__wal_errmsg(f->h.node->wal));
        ck_assert_msg(all_lead(f), "n=%llu: a group stepped down", (unsigned long long)n);
        uint64_t acked[GROUPS] = {0};
        for (int r = 0; r < ROUNDS; r++)
            for (unsigned i = 0; i < GROUPS; i++) {
                ck_assert_msg(p[r][i].done, "n=%llu: proposal %d of group %u never completed",
                              (unsigned long long)n, r, i + 1);
                ck_assert_msg(p[r][i].status == 0 || p[r][i].status == JR_ENOMEM,
                              "n=%llu: proposal %d of group %u: %s", (unsigned long long)n, r,
                              i + 1, jr_err_name(p[r][i].status));
                if (p[r][i].status == 0 && p[r][i].index > acked[i]) acked[i] = p[r][i].index;
            }
        /* The node works on: one more proposal per group is acknowledged. */
        prop q[GROUPS] = {{0}};
        for (unsigned i = 0; i < GROUPS; i++)
            ck_assert_int_eq(jr_group_propose(f->g[i], "after", 5, on_prop, &q[i]), 0);
        run_ms(f, 5);
        for (unsigned i = 0; i < GROUPS; i++) {
            ck_assert_msg(q[i].done && q[i].status == 0, "n=%llu: group %u: no ack after",
                          (unsigned long long)n, i + 1);
            acked[i] = q[i].index;
        }
        ck_assert_msg(!f->bad[0], "n=%llu: %s", (unsigned long long)n, f->bad);

        /* Reopened, every acknowledged entry is applied again. */
        jr_node_close(f->h.node);
        f->h.node = NULL;
        ck_assert_msg(f->fa.live == 0, "n=%llu: %lld blocks leaked", (unsigned long long)n,
                      (long long)f->fa.live);
        f->c.on_write = NULL;
        open_all(f, NULL);
        run_ms(f, 50);
        for (unsigned i = 0; i < GROUPS; i++)
            ck_assert_msg(f->fsm[i].last >= acked[i], "n=%llu: group %u applied %llu of %llu",
                          (unsigned long long)n, i + 1, (unsigned long long)f->fsm[i].last,
                          (unsigned long long)acked[i]);
        t_host_free(&f->h);
        free(f);
        if (!fired) break;
    }
    if (getenv("JR_SWEEP_VERBOSE"))
        fprintf(stderr, "flush oom%s: %llu steps\n", sticky ? " (sticky)" : "",
                (unsigned long long)n);
    ck_assert_uint_lt(n, MAX_N);
    ck_assert_uint_gt(n, 10);
}
END_TEST

START_TEST(a_failed_wal_write_steps_every_leader_down)
{
    fx *f = calloc(1, sizeof *f);
    t_host_init(&f->h);
    open_all(f, NULL);
    run_ms(f, 50);
    ck_assert(all_lead(f));
    ck_assert_int_eq(jr__memfs_fail(f->h.vfs, JR__MEMFS_PWRITE, 1, JR_EIO, 1, NULL), 0);
    prop p[GROUPS] = {{0}};
    for (unsigned i = 0; i < GROUPS; i++)
        ck_assert_int_eq(jr_group_propose(f->g[i], "x", 1, on_prop, &p[i]), 0);
    ck_assert_int_eq(jr_node_tick(f->h.node), JR_EIO);
    for (unsigned i = 0; i < GROUPS; i++)
        ck_assert_int_ne(jr__raft_role(jr__group_raft(f->g[i])), JR_LEADER);
    run_ms(f, 500);
    for (unsigned i = 0; i < GROUPS; i++) {
        ck_assert_int_ne(jr__raft_role(jr__group_raft(f->g[i])), JR_LEADER);
        ck_assert(!p[i].done || p[i].status != 0);
    }
    jr__memfs_fail_clear(f->h.vfs);
    t_host_free(&f->h);
    free(f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("flush_oom");
    TCase *t = tcase_create("flush_oom");
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, out_of_memory_in_a_flush_is_transient_and_writes_nothing_twice, 0, 2);
    tcase_add_test(t, a_failed_wal_write_steps_every_leader_down);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
