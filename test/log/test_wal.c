/*
 * Unit tests of lib/log: records round-trip through a restart, group commit costs one write and
 * one sync per flush, supersession, truncation records, torn tails, rotation, compaction and
 * segment deletion, drops, sync policies and I/O errors. All on memfs (lib/vfs/memfs.h).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "log/record.h"
#include "log/segment.h"
#include "log/snapfile.h"
#include "vfs/memfs.h"

#define DIR "/wal"

typedef struct fx {
    jr_vfs *vfs;
    jr__wal_config cfg;
    jr__wal *w;
    h_state model; /* what must be recovered */
    h_state got;
} fx;

static void fx_init(fx *f, uint64_t segment_bytes)
{
    memset(f, 0, sizeof *f);
    ck_assert_int_eq(jr__memfs_new(NULL, 1, &f->vfs), 0);
    f->cfg.vfs = f->vfs;
    f->cfg.dir = DIR;
    f->cfg.segment_bytes = segment_bytes;
    f->cfg.sync_policy = JR_SYNC_ALWAYS;
    h_state_init(&f->model);
    ck_assert_int_eq(h_open(&f->cfg, &f->got, &f->w), 0);
}

static void fx_reopen(fx *f)
{
    jr__wal_close(f->w);
    h_state_free(&f->got);
    ck_assert_int_eq(h_open(&f->cfg, &f->got, &f->w), 0);
}

static void fx_check(fx *f)
{
    char why[600];
    ck_assert_msg(h_compare(&f->model, &f->got, why, sizeof why) == 0, "%s", why);
}

static void fx_free(fx *f)
{
    jr__wal_close(f->w);
    h_state_free(&f->model);
    h_state_free(&f->got);
    jr__memfs_free(f->vfs);
}

/* Stages on the WAL and the model. */
static void put(fx *f, h_op op)
{
    ck_assert_int_eq(h_stage(f->w, &op), 0);
    h_apply(&f->model, &op);
}

static h_op entry(uint64_t group, uint64_t term, uint64_t index, const char *data)
{
    h_op op = {.kind = H_ENTRY, .group = group};
    op.e = (h_ent){term, index, JR__ENTRY_NORMAL, (uint32_t)strlen(data), (uint8_t *)data};
    return op;
}

static h_op hardstate(uint64_t group, uint64_t term, uint64_t vote, uint64_t commit)
{
    h_op op = {H_HS, group, {0, 0, 0, 0, NULL}, {term, vote, commit}, 0, 0, 0};
    return op;
}

static h_op compact(uint64_t group, uint64_t index, uint64_t term)
{
    h_op op = {H_COMPACT, group, {0, 0, 0, 0, NULL}, {0, 0, 0}, index, term, 0};
    return op;
}

static h_op truncate_at(uint64_t group, uint64_t from)
{
    h_op op = {.kind = H_TRUNCATE, .group = group, .from = from};
    return op;
}

static h_op drop(uint64_t group)
{
    h_op op = {H_DROP, group, {0, 0, 0, 0, NULL}, {0, 0, 0}, 0, 0, 0};
    return op;
}

static void flush(fx *f)
{
    int durable = -1;
    ck_assert_int_eq(jr__wal_flush(f->w, 0, &durable), 0);
    ck_assert_int_eq(durable, 1);
}

static size_t count_segments(jr_vfs *vfs)
{
    uint64_t *seqs;
    size_t n;
    ck_assert_int_eq(jr__seg_list(vfs, DIR, NULL, &seqs, &n), 0);
    free(seqs);
    return n;
}

static void seg_name(char *buf, size_t cap, jr_vfs *vfs, size_t i)
{
    uint64_t *seqs;
    size_t n;
    ck_assert_int_eq(jr__seg_list(vfs, DIR, NULL, &seqs, &n), 0);
    ck_assert_uint_lt(i, n);
    jr__seg_path(buf, cap, DIR, seqs[i]);
    free(seqs);
}

/* ------------------------------------------------------------------------------------------*/
START_TEST(empty_wal_opens_and_reopens)
{
    fx f;
    fx_init(&f, 0);
    ck_assert_uint_eq(f.got.n, 0);
    ck_assert_uint_eq(jr__wal_pending(f.w), 0);
    ck_assert_uint_eq(jr__wal_deadline(f.w), UINT64_MAX);
    fx_reopen(&f);
    ck_assert_uint_eq(f.got.n, 0);
    fx_free(&f);
}
END_TEST

START_TEST(records_survive_restart)
{
    fx f;
    fx_init(&f, 0);
    put(&f, entry(1, 1, 1, "a1"));
    put(&f, entry(2, 1, 1, "b1"));
    put(&f, entry(1, 1, 2, "a2"));
    put(&f, hardstate(1, 1, 77, 2));
    put(&f, entry(3, 2, 1, ""));
    h_op cfgent = entry(2, 1, 2, "conf");
    cfgent.e.type = JR__ENTRY_CONFIG;
    put(&f, cfgent);
    ck_assert_uint_gt(jr__wal_pending(f.w), 0);
    flush(&f);
    ck_assert_uint_eq(jr__wal_pending(f.w), 0);
    put(&f, hardstate(2, 3, 5, 1));
    put(&f, entry(1, 2, 3, "a3"));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    /* and again: the new segment's checkpoint carries everything forward */
    put(&f, entry(3, 2, 2, "c2"));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

START_TEST(unflushed_records_are_not_recovered)
{
    fx f;
    fx_init(&f, 0);
    put(&f, entry(1, 1, 1, "durable"));
    flush(&f);
    h_op lost = entry(1, 1, 2, "staged only");
    ck_assert_int_eq(h_stage(f.w, &lost), 0);
    jr__memfs_crash(f.vfs, 1);
    fx_reopen(&f);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

START_TEST(group_commit_is_one_write_and_one_sync)
{
    fx f;
    fx_init(&f, 0);
    jr__memfs_stats a, b;
    for (int round = 0; round < 3; round++) {
        jr__memfs_stats_get(f.vfs, &a);
        /* 50 groups, 20 entries each, plus hard states: one flush */
        for (uint64_t g = 1; g <= 50; g++) {
            for (uint64_t i = 1; i <= 20; i++)
                put(&f, entry(g, 1, (uint64_t)round * 20 + i, "payload-bytes"));
            put(&f, hardstate(g, 1, g, (uint64_t)round * 20));
        }
        flush(&f);
        jr__memfs_stats_get(f.vfs, &b);
        ck_assert_uint_eq(b.syncs - a.syncs, 1);
        ck_assert_uint_eq(b.writes - a.writes, 1);
        ck_assert_uint_eq(b.dir_syncs - a.dir_syncs, 0);
    }
    /* a flush with nothing staged costs nothing */
    jr__memfs_stats_get(f.vfs, &a);
    flush(&f);
    jr__memfs_stats_get(f.vfs, &b);
    ck_assert_uint_eq(b.syncs, a.syncs);
    ck_assert_uint_eq(b.writes, a.writes);
    jr__wal_stats ws;
    jr__wal_stats_get(f.w, &ws);
    ck_assert_uint_eq(ws.flushes, 3);
    ck_assert_uint_eq(ws.records, 3 * 50 * 21);
    fx_reopen(&f);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

/* The size of segment i (0 = oldest). */
static uint64_t seg_size(jr_vfs *vfs, size_t i)
{
    char path[128];
    uint64_t size = 0;
    seg_name(path, sizeof path, vfs, i);
    ck_assert_int_eq(jr__memfs_file_size(vfs, path, &size), 0);
    return size;
}

/* Is the byte range [from, size of segment i) all zeros (vacuously true when empty)? */
static int seg_zero_from(jr_vfs *vfs, size_t i, uint64_t from)
{
    char path[128];
    uint8_t *data;
    size_t len;
    seg_name(path, sizeof path, vfs, i);
    ck_assert_int_eq(jr__memfs_read_all(vfs, path, &data, &len), 0);
    int zero = 1;
    for (size_t k = (size_t)from; k < len; k++) zero &= data[k] == 0;
    jr__memfs_release(vfs, data);
    return zero;
}

START_TEST(prealloc_changes_the_size_once_per_chunk)
{
    /* 64 KiB ahead, 256 KiB segments: each flush is still one write and one sync, and the
     * segment's size changes only at a flush that zero-fills further, once per 64 KiB */
    fx f;
    fx_init(&f, 256 << 10);
    f.cfg.prealloc_bytes = 64 << 10;
    fx_reopen(&f);
    char data[1000];
    memset(data, 'p', sizeof data - 1);
    data[sizeof data - 1] = 0;
    uint64_t index = 0, size_changes = 0, size = seg_size(f.vfs, 0);
    jr__memfs_stats a, b;
    jr__wal_stats w0, w1;
    jr__wal_stats_get(f.w, &w0);
    for (int round = 0; round < 150; round++) { /* about 150 KiB: no rotation yet */
        jr__memfs_stats_get(f.vfs, &a);
        put(&f, entry(1, 1, ++index, data));
        flush(&f);
        jr__memfs_stats_get(f.vfs, &b);
        ck_assert_uint_eq(b.writes - a.writes, 1);
        ck_assert_uint_eq(b.syncs - a.syncs, 1);
        uint64_t now = seg_size(f.vfs, 0);
        if (now != size) size_changes++;
        size = now;
    }
    jr__wal_stats_get(f.w, &w1);
    ck_assert_uint_eq(count_segments(f.vfs), 1);
    ck_assert_uint_eq(w1.extends - w0.extends, size_changes);
    ck_assert_uint_ge(size_changes, 2);
    ck_assert_uint_le(size_changes, 3); /* ~150 KiB in steps of 64 KiB */
    /* a crash leaves the zero tail: recovery cuts it and finds every record */
    jr__memfs_crash(f.vfs, 0);
    fx_reopen(&f);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

START_TEST(prealloc_tail_is_cut_before_rotation)
{
    /* rotations cut the old segment to its last record (and sync that) before the new one
     * exists: only the current segment ever ends in zeros, so a zero tail anywhere else would
     * still be damage */
    fx f;
    fx_init(&f, 16 << 10);
    f.cfg.prealloc_bytes = 4 << 10;
    fx_reopen(&f);
    char data[700];
    memset(data, 'r', sizeof data - 1);
    data[sizeof data - 1] = 0;
    uint64_t index = 0;
    while (count_segments(f.vfs) < 4) {
        put(&f, entry(1, 1, ++index, data));
        put(&f, entry(2, 1, index, data));
        flush(&f);
    }
    size_t n = count_segments(f.vfs);
    for (size_t i = 0; i + 1 < n; i++) {
        uint64_t size = seg_size(f.vfs, i);
        ck_assert_uint_lt(size, 16 << 10);
        ck_assert(!seg_zero_from(f.vfs, i, size - 16)); /* ends in a record, not in zeros */
    }
    jr__memfs_crash(f.vfs, 1);
    fx_reopen(&f);
    fx_check(&f); /* no group damaged, nothing lost */
    fx_free(&f);
}
END_TEST

START_TEST(rollback_unstages_what_came_after_the_mark)
{
    fx f;
    fx_init(&f, 0);
    put(&f, entry(1, 1, 1, "a1"));
    put(&f, entry(3, 1, 1, "c1"));
    flush(&f);
    put(&f, entry(1, 1, 2, "a2")); /* staged before the mark: stays */
    jr__wal_mark(f.w);
    size_t kept = jr__wal_pending(f.w);
    /* staged after the mark, on neither the model nor the disk once rolled back */
    h_op gone[] = {entry(1, 1, 3, "a3"), hardstate(1, 1, 1, 3), entry(2, 1, 1, "b1"), drop(3),
                   entry(3, 2, 1, "c1 again")};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        ck_assert_int_eq(h_stage(f.w, &gone[i]), 0);
    ck_assert_uint_gt(jr__wal_pending(f.w), kept);
    jr__wal_rollback(f.w);
    ck_assert_uint_eq(jr__wal_pending(f.w), kept);
    jr__wal_rollback(f.w); /* a second one has nothing to undo */
    ck_assert_uint_eq(jr__wal_pending(f.w), kept);
    /* the record numbers continue from the mark: recovery sees no gap (no damage) */
    put(&f, entry(1, 1, 3, "a3 staged again"));
    put(&f, entry(2, 1, 1, "b1 staged again"));
    put(&f, entry(3, 1, 2, "c2"));
    flush(&f);
    jr__wal_rollback(f.w); /* after a flush: nothing staged to undo */
    put(&f, entry(3, 1, 3, "c3"));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

START_TEST(later_entry_supersedes_suffix)
{
    fx f;
    fx_init(&f, 0);
    for (uint64_t i = 1; i <= 6; i++) put(&f, entry(9, 1, i, "old"));
    flush(&f);
    /* a new leader overwrote the log from index 4: 4', then 5' */
    put(&f, entry(9, 2, 4, "new4"));
    flush(&f);
    put(&f, entry(9, 2, 5, "new5"));
    /* and in the same flush, truncation back to 2 then regrowth */
    put(&f, entry(9, 3, 2, "newer2"));
    put(&f, entry(9, 3, 3, "newer3"));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    h_group *g = h_state_group(&f.got, 9, 0);
    ck_assert_ptr_nonnull(g);
    ck_assert_uint_eq(g->n, 3);
    ck_assert_uint_eq(g->e[2].term, 3);
    fx_free(&f);
}
END_TEST

START_TEST(torn_tail_is_cut)
{
    fx f;
    fx_init(&f, 0);
    put(&f, entry(1, 1, 1, "one"));
    put(&f, entry(2, 1, 1, "two"));
    flush(&f);
    /* the last write (two records) loses its end: as if power failed mid-write */
    h_op a = entry(1, 1, 2, "lost-a"), b = entry(2, 1, 2, "lost-b");
    ck_assert_int_eq(h_stage(f.w, &a), 0);
    ck_assert_int_eq(h_stage(f.w, &b), 0);
    size_t n = jr__wal_pending(f.w);
    flush(&f);
    char path[256];
    seg_name(path, sizeof path, f.vfs, count_segments(f.vfs) - 1);
    uint8_t *d;
    size_t len;
    ck_assert_int_eq(jr__memfs_read_all(f.vfs, path, &d, &len), 0);
    jr__memfs_release(f.vfs, d);
    ck_assert_int_eq(jr__memfs_truncate(f.vfs, path, len - n + 10), 0); /* mid first record */
    fx_reopen(&f);
    fx_check(&f); /* the model does not have them: a and b were not applied to it */
    /* the cut is physical: a second restart sees the same, and new writes go after it */
    put(&f, entry(1, 1, 2, "again"));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

START_TEST(rotation_spreads_records_over_segments)
{
    fx f;
    fx_init(&f, 4096);
    char buf[300];
    memset(buf, 'x', sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    for (uint64_t i = 1; i <= 100; i++) {
        put(&f, entry(1 + i % 3, 1, (i + 2) / 3, buf));
        if (i % 4 == 0) flush(&f);
    }
    flush(&f);
    ck_assert_uint_ge(count_segments(f.vfs), 6);
    fx_reopen(&f);
    fx_check(&f);
    /* a batch larger than a segment still goes in (in a segment of its own) */
    char *big = malloc(10000);
    memset(big, 'y', 9999);
    big[9999] = 0;
    put(&f, entry(7, 1, 1, big));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    free(big);
    fx_free(&f);
}
END_TEST

START_TEST(compaction_deletes_only_fully_compacted_segments)
{
    fx f;
    fx_init(&f, 2048);
    char buf[200];
    memset(buf, 'p', sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    put(&f, hardstate(3, 4, 3, 0)); /* group 3 only ever writes this hard state */
    flush(&f);
    uint64_t a = 0, b = 0;
    for (int i = 0; i < 40; i++) {
        put(&f, entry(1, 1, ++a, buf));
        if (i % 2 == 0) put(&f, entry(2, 1, ++b, buf));
        flush(&f);
    }
    size_t before = count_segments(f.vfs);
    ck_assert_uint_ge(before, 5);
    /* group 1 compacts everything, group 2 nothing: group 2 pins every segment it wrote */
    put(&f, compact(1, a, 1));
    flush(&f);
    ck_assert_uint_ge(count_segments(f.vfs), before);
    /* group 2 compacts half: the segments before its first uncompacted entry may go */
    put(&f, compact(2, b / 2, 1));
    flush(&f);
    size_t mid = count_segments(f.vfs);
    ck_assert_uint_lt(mid, before);
    ck_assert_uint_gt(mid, 1);
    fx_reopen(&f);
    fx_check(&f);
    /* everything compacted: only the current segment (plus the one written at reopen) stay */
    put(&f, compact(2, b, 1));
    flush(&f);
    ck_assert_uint_le(count_segments(f.vfs), 2);
    jr__wal_stats ws;
    jr__wal_stats_get(f.w, &ws);
    ck_assert_uint_gt(ws.segments_deleted, 0);
    fx_reopen(&f);
    fx_check(&f); /* group 3's hard state survived the deletion of the segment it was in */
    h_group *g3 = h_state_group(&f.got, 3, 0);
    ck_assert(g3 && g3->has_hs && g3->hs.term == 4);
    fx_free(&f);
}
END_TEST

START_TEST(compaction_beyond_the_log_restarts_it)
{
    fx f;
    fx_init(&f, 0);
    put(&f, entry(5, 1, 1, "x"));
    put(&f, entry(5, 1, 2, "y"));
    flush(&f);
    /* a snapshot installed from the leader at 100: the log continues at 101 */
    put(&f, compact(5, 100, 3));
    put(&f, entry(5, 3, 101, "z"));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    h_group *g = h_state_group(&f.got, 5, 0);
    ck_assert(g && g->n == 1 && g->e[0].index == 101);
    fx_free(&f);
}
END_TEST

/* A follower installs a snapshot at 6 that its log (stale entries of a higher term up to 10)
 * conflicts with: nothing replaces the stale suffix, and it must not come back. */
START_TEST(truncation_voids_a_suffix_nothing_replaces)
{
    fx f;
    fx_init(&f, 0);
    for (uint64_t i = 1; i <= 10; i++) put(&f, entry(5, 7, i, "stale"));
    put(&f, hardstate(5, 7, 2, 3));
    flush(&f);
    put(&f, truncate_at(5, 7)); /* staged ahead of the marker, as the node does */
    put(&f, compact(5, 6, 4));
    put(&f, hardstate(5, 8, 0, 6));
    flush(&f);
    for (int round = 0; round < 3; round++) { /* again after each reopen's checkpoint */
        fx_reopen(&f);
        fx_check(&f);
        h_group *g = h_state_group(&f.got, 5, 0);
        ck_assert(g && g->n == 0 && g->has_compact && g->cidx == 6);
        ck_assert_int_eq(g->trunc_removed, 0); /* the voided entries were never replayed */
        ck_assert_int_eq(g->truncates, round == 0 ? 1 : 0); /* a reopen's GC drops the rest */
    }
    /* the log continues after the marker, contiguously and undamaged */
    put(&f, entry(5, 8, 7, "new7"));
    put(&f, entry(5, 8, 8, "new8"));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    h_group *g = h_state_group(&f.got, 5, 0);
    ck_assert(g && g->n == 2 && g->e[0].index == 7 && g->e[1].term == 8);
    fx_free(&f);
}
END_TEST

START_TEST(truncation_takes_effect_at_its_place_in_the_log)
{
    fx f;
    fx_init(&f, 0);
    for (uint64_t i = 1; i <= 6; i++) put(&f, entry(3, 1, i, "old"));
    flush(&f);
    /* in one flush: a cut at 4, then the entries that replace the suffix */
    put(&f, truncate_at(3, 4));
    put(&f, entry(3, 2, 4, "new4"));
    flush(&f);
    /* entries staged in the same flush before a cut are void too */
    put(&f, entry(3, 2, 5, "void5"));
    put(&f, entry(3, 2, 6, "void6"));
    put(&f, truncate_at(3, 5));
    put(&f, entry(3, 3, 5, "new5"));
    /* a cut beyond the log voids nothing */
    put(&f, truncate_at(3, 99));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    h_group *g = h_state_group(&f.got, 3, 0);
    ck_assert(g && g->n == 5);
    ck_assert(g->e[3].term == 2 && g->e[4].term == 3);
    ck_assert_int_eq(g->truncates, 3);
    ck_assert_int_eq(g->trunc_removed, 0);
    /* a cut at 1 voids the whole log; the group keeps its hard state and starts over */
    put(&f, hardstate(3, 4, 1, 0));
    put(&f, truncate_at(3, 1));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    g = h_state_group(&f.got, 3, 0);
    ck_assert(g && g->n == 0 && g->has_hs);
    put(&f, entry(3, 4, 1, "first again"));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

START_TEST(truncation_below_the_marker_keeps_the_log_contiguous)
{
    fx f;
    fx_init(&f, 0);
    for (uint64_t i = 1; i <= 8; i++) put(&f, entry(2, 1, i, "e"));
    put(&f, compact(2, 4, 1));
    flush(&f);
    /* voids 5..8; the log now ends at the marker, so 5 is the next entry, not a gap */
    put(&f, truncate_at(2, 3));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    put(&f, entry(2, 2, 5, "five"));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    h_group *g = h_state_group(&f.got, 2, 0);
    ck_assert(g && g->n == 1 && g->e[0].index == 5 && g->e[0].term == 2);
    fx_free(&f);
}
END_TEST

START_TEST(truncation_of_a_group_with_nothing_written_stages_nothing)
{
    fx f;
    fx_init(&f, 0);
    ck_assert_int_eq(jr__wal_truncate(f.w, 77, 1), 0); /* unknown group */
    ck_assert_uint_eq(jr__wal_pending(f.w), 0);
    put(&f, entry(8, 1, 1, "x"));
    flush(&f);
    put(&f, drop(8));
    size_t n = jr__wal_pending(f.w);
    ck_assert_int_eq(jr__wal_truncate(f.w, 8, 1), 0); /* its current incarnation is empty */
    ck_assert_uint_eq(jr__wal_pending(f.w), n);
    flush(&f);
    ck_assert_int_eq(jr__wal_truncate(f.w, 8, 1), 0);
    ck_assert_uint_eq(jr__wal_pending(f.w), 0);
    ck_assert_int_eq(jr__wal_truncate(f.w, 8, 0), JR_EINVAL);
    fx_reopen(&f);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

/* Entries a durable truncation voided do not pin their segments, and recovery does not mistake
 * them for lost entries once those segments are gone. */
START_TEST(truncated_entries_do_not_pin_segments)
{
    fx f;
    fx_init(&f, 2048);
    char buf[200];
    memset(buf, 't', sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    for (uint64_t i = 1; i <= 40; i++) {
        put(&f, entry(1, 5, i, buf));
        flush(&f);
    }
    size_t before = count_segments(f.vfs);
    ck_assert_uint_ge(before, 5);
    /* a snapshot at 2 that conflicts with the log (as a follower installs it) */
    put(&f, truncate_at(1, 3));
    put(&f, compact(1, 2, 4));
    flush(&f);
    ck_assert_uint_le(count_segments(f.vfs), 2);
    for (int round = 0; round < 2; round++) {
        fx_reopen(&f);
        fx_check(&f); /* not damaged: nothing that was needed is gone */
        h_group *g = h_state_group(&f.got, 1, 0);
        ck_assert(g && g->n == 0 && g->cidx == 2);
    }
    put(&f, entry(1, 6, 3, "three"));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

/* Without a compaction the entries below the cut still pin their segments. */
START_TEST(truncation_keeps_the_entries_below_the_cut)
{
    fx f;
    fx_init(&f, 2048);
    char buf[200];
    memset(buf, 'k', sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    for (uint64_t i = 1; i <= 30; i++) {
        put(&f, entry(1, 1, i, buf));
        flush(&f);
    }
    size_t before = count_segments(f.vfs);
    put(&f, truncate_at(1, 10));
    flush(&f);
    ck_assert_uint_ge(count_segments(f.vfs), before);
    fx_reopen(&f);
    fx_check(&f);
    h_group *g = h_state_group(&f.got, 1, 0);
    ck_assert(g && g->n == 9);
    fx_free(&f);
}
END_TEST

START_TEST(dropped_group_is_forgotten_and_can_return)
{
    fx f;
    fx_init(&f, 2048);
    char buf[300];
    memset(buf, 'd', sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    for (uint64_t i = 1; i <= 30; i++) {
        put(&f, entry(1, 1, i, buf));
        put(&f, entry(2, 1, i, "keep"));
        flush(&f);
    }
    put(&f, compact(2, 30, 1));
    put(&f, drop(1));
    flush(&f);
    ck_assert_uint_le(count_segments(f.vfs), 2); /* group 1's entries no longer pin anything */
    fx_reopen(&f);
    fx_check(&f);
    /* dropping again, or an unknown group, is harmless */
    ck_assert_int_eq(jr__wal_drop(f.w, 1), 0);
    ck_assert_int_eq(jr__wal_drop(f.w, 12345), 0);
    /* the id comes back as a new group */
    put(&f, entry(1, 7, 1, "reborn"));
    put(&f, drop(2));
    put(&f, entry(2, 8, 1, "reborn too"));
    flush(&f);
    fx_reopen(&f);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

START_TEST(drop_is_replayed_when_its_records_remain)
{
    fx f;
    fx_init(&f, 0);
    put(&f, entry(4, 1, 1, "x"));
    flush(&f);
    put(&f, drop(4));
    flush(&f);
    jr__wal_close(f.w);
    f.w = NULL;
    /* the segment with the drop is the last with records; the reopen replays on_drop */
    h_state_free(&f.got);
    ck_assert_int_eq(h_open(&f.cfg, &f.got, &f.w), 0);
    h_group *g = h_state_group(&f.got, 4, 0);
    ck_assert(g && g->dropped && g->n == 0);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

START_TEST(sync_interval_policy)
{
    fx f;
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(jr__memfs_new(NULL, 1, &f.vfs), 0);
    f.cfg.vfs = f.vfs;
    f.cfg.dir = DIR;
    f.cfg.sync_policy = JR_SYNC_INTERVAL;
    f.cfg.sync_interval_ns = 1000;
    ck_assert_int_eq(h_open(&f.cfg, &f.got, &f.w), 0);
    jr__memfs_stats a, b;
    int durable = -1;
    put(&f, entry(1, 1, 1, "a"));
    jr__memfs_stats_get(f.vfs, &a);
    ck_assert_int_eq(jr__wal_flush(f.w, 5000, &durable), 0); /* first: interval has passed */
    ck_assert_int_eq(durable, 1);
    put(&f, entry(1, 1, 2, "b"));
    ck_assert_int_eq(jr__wal_flush(f.w, 5100, &durable), 0);
    ck_assert_int_eq(durable, 0);
    ck_assert_uint_eq(jr__wal_deadline(f.w), 6000);
    put(&f, entry(1, 1, 3, "c"));
    ck_assert_int_eq(jr__wal_flush(f.w, 5500, &durable), 0);
    ck_assert_int_eq(durable, 0);
    jr__memfs_stats_get(f.vfs, &b);
    ck_assert_uint_eq(b.syncs - a.syncs, 1);
    ck_assert_uint_eq(b.writes - a.writes, 3);
    /* nothing staged, deadline reached: the flush only syncs */
    ck_assert_int_eq(jr__wal_flush(f.w, 6000, &durable), 0);
    ck_assert_int_eq(durable, 1);
    ck_assert_uint_eq(jr__wal_deadline(f.w), UINT64_MAX);
    jr__memfs_stats_get(f.vfs, &b);
    ck_assert_uint_eq(b.syncs - a.syncs, 2);
    /* unsynced writes are exactly what a crash may lose */
    put(&f, entry(1, 1, 4, "d"));
    ck_assert_int_eq(jr__wal_flush(f.w, 6100, &durable), 0);
    ck_assert_int_eq(durable, 0);
    jr__memfs_crash(f.vfs, 0);
    jr__wal_close(f.w);
    h_state_free(&f.got);
    ck_assert_int_eq(h_open(&f.cfg, &f.got, &f.w), 0);
    h_group *g = h_state_group(&f.got, 1, 0);
    ck_assert(g && g->n == 3);
    fx_free(&f);
}
END_TEST

/* Under the interval policy a term/vote change is synced on demand (jr__wal_sync) so that a
 * vote can never be lost to a power failure, whatever the policy loses of acknowledged writes. */
START_TEST(sync_on_demand_under_interval_policy)
{
    fx f;
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(jr__memfs_new(NULL, 1, &f.vfs), 0);
    f.cfg.vfs = f.vfs;
    f.cfg.dir = DIR;
    f.cfg.sync_policy = JR_SYNC_INTERVAL;
    f.cfg.sync_interval_ns = 1000000;
    ck_assert_int_eq(h_open(&f.cfg, &f.got, &f.w), 0);
    int durable = -1;
    jr__hardstate hs0 = {6, 41, 0};
    ck_assert_int_eq(jr__wal_hardstate(f.w, 1, &hs0), 0);
    ck_assert_int_eq(jr__wal_flush(f.w, 5000000, &durable), 0); /* syncs: the interval passed */
    ck_assert_int_eq(durable, 1);
    jr__hardstate hs = {7, 42, 0};
    ck_assert_int_eq(jr__wal_hardstate(f.w, 1, &hs), 0);
    ck_assert_int_eq(jr__wal_flush(f.w, 5000100, &durable), 0);
    ck_assert_int_eq(durable, 0); /* the interval has not passed */
    jr__memfs_stats a, b;
    jr__memfs_stats_get(f.vfs, &a);
    ck_assert_int_eq(jr__wal_sync(f.w, 5000200), 0);
    jr__memfs_stats_get(f.vfs, &b);
    ck_assert_uint_eq(b.syncs - a.syncs, 1);
    ck_assert_uint_eq(jr__wal_deadline(f.w), UINT64_MAX);
    ck_assert_int_eq(jr__wal_sync(f.w, 5000300), 0); /* nothing unsynced: no sync */
    jr__memfs_stats_get(f.vfs, &a);
    ck_assert_uint_eq(a.syncs, b.syncs);
    jr__memfs_crash(f.vfs, 0);
    jr__wal_close(f.w);
    h_state_free(&f.got);
    ck_assert_int_eq(h_open(&f.cfg, &f.got, &f.w), 0);
    h_group *g = h_state_group(&f.got, 1, 0);
    ck_assert(g && g->has_hs && g->hs.term == 7 && g->hs.vote == 42);
    fx_free(&f);
}
END_TEST

START_TEST(io_error_stops_the_wal)
{
    static const int kinds[] = {JR__MEMFS_PWRITE, JR__MEMFS_SYNC};
    static const int errs[] = {JR_EIO, JR_ENOSPC};
    for (int k = 0; k < 2; k++) {
        fx f;
        fx_init(&f, 0);
        put(&f, entry(1, 1, 1, "ok"));
        flush(&f);
        h_op op = entry(1, 1, 2, "fails");
        ck_assert_int_eq(h_stage(f.w, &op), 0);
        ck_assert_int_eq(jr__memfs_fail(f.vfs, kinds[k], 1, errs[k], 0, NULL), 0);
        int durable = -1;
        ck_assert_int_eq(jr__wal_flush(f.w, 0, &durable), errs[k]);
        ck_assert_int_eq(durable, 0);
        ck_assert_ptr_nonnull(strstr(jr__wal_errmsg(f.w), "refuses"));
        /* refuses everything afterwards, even though the disk is fine again */
        ck_assert_int_eq(h_stage(f.w, &op), JR_EIO);
        ck_assert_int_eq(jr__wal_hardstate(f.w, 1, &(jr__hardstate){1, 1, 1}), JR_EIO);
        ck_assert_int_eq(jr__wal_truncate(f.w, 1, 1), JR_EIO);
        ck_assert_int_eq(jr__wal_flush(f.w, 0, &durable), JR_EIO);
        ck_assert_int_eq(durable, 0);
        /* after a crash the synced record is there; the failed one is not, or is intact */
        jr__memfs_crash(f.vfs, 0);
        fx_reopen(&f);
        fx_check(&f);
        fx_free(&f);
    }
}
END_TEST

START_TEST(rotation_failure_stops_the_wal)
{
    fx f;
    fx_init(&f, 1024);
    char buf[400];
    memset(buf, 'r', sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    put(&f, entry(1, 1, 1, buf));
    flush(&f);
    put(&f, entry(1, 1, 2, buf));
    flush(&f);
    h_op op = entry(1, 1, 3, buf);
    ck_assert_int_eq(h_stage(f.w, &op), 0);
    ck_assert_int_eq(jr__memfs_fail(f.vfs, JR__MEMFS_SYNC_DIR, 1, JR_EIO, 0, NULL), 0);
    int durable = -1;
    ck_assert_int_eq(jr__wal_flush(f.w, 0, &durable), JR_EIO);
    ck_assert_int_eq(durable, 0);
    ck_assert_int_eq(h_stage(f.w, &op), JR_EIO);
    jr__memfs_crash(f.vfs, 1);
    fx_reopen(&f);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

START_TEST(invalid_arguments)
{
    fx f;
    fx_init(&f, 0);
    jr__entry e = {1, 0, 0, 0, NULL};
    ck_assert_int_eq(jr__wal_append(f.w, 1, &e), JR_EINVAL); /* index 0 */
    e.index = 1;
    ck_assert_int_eq(jr__wal_append(f.w, 0, &e), JR_EINVAL); /* group 0 */
    e.type = 9;
    ck_assert_int_eq(jr__wal_append(f.w, 1, &e), JR_EINVAL);
    ck_assert_int_eq(jr__wal_compact(f.w, 1, 0, 1), JR_EINVAL);
    ck_assert_int_eq(jr__wal_truncate(f.w, 1, 0), JR_EINVAL);
    ck_assert_uint_eq(jr__wal_pending(f.w), 0);
    jr__wal_config bad = f.cfg;
    bad.sync_policy = 7;
    jr__wal *w2;
    h_state s;
    ck_assert_int_eq(h_open(&bad, &s, &w2), JR_EINVAL);
    h_state_free(&s);
    fx_free(&f);
}
END_TEST

/* --- record codec ---------------------------------------------------------------------------*/
START_TEST(record_decode_is_strict)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__entry e = {3, 9, JR__ENTRY_NORMAL, 5, (const uint8_t *)"hello"};
    jr__rec_put_entry(&b, 42, 7, &e);
    ck_assert_int_eq(b.err, 0);
    jr__rec r;
    ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), 0);
    ck_assert_uint_eq(r.group, 42);
    ck_assert_uint_eq(r.gseq, 7);
    ck_assert_uint_eq(r.e.index, 9);
    ck_assert_uint_eq(r.e.len, 5);
    ck_assert(memcmp(r.e.data, "hello", 5) == 0);
    /* every single-bit flip and every truncation is rejected */
    for (size_t i = 0; i < b.len * 8; i++) {
        b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
        ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), JR_ECORRUPT);
        b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    for (size_t n = 0; n < b.len; n++) ck_assert_int_eq(jr__rec_decode(b.data, n, &r), JR_ECORRUPT);
    /* a flip in the payload leaves the header trustworthy (recovery names the group) */
    uint64_t g, total;
    b.data[JR__REC_HDR + 3] ^= 1;
    ck_assert_int_eq(jr__rec_header_ok(b.data, b.len, &g, &total), 1);
    ck_assert_uint_eq(g, 42);
    ck_assert_uint_eq(total, b.len);
    jr__buf_free(&b);
}
END_TEST

START_TEST(truncate_record_decode_is_strict)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__rec_put_truncate(&b, 9, 3, 17);
    ck_assert_int_eq(b.err, 0);
    ck_assert_uint_eq(b.len, JR__REC_HDR + 8);
    jr__rec r;
    ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), 0);
    ck_assert_uint_eq(r.type, JR__REC_TRUNCATE);
    ck_assert_uint_eq(r.group, 9);
    ck_assert_uint_eq(r.gseq, 3);
    ck_assert_uint_eq(r.tfrom, 17);
    for (size_t i = 0; i < b.len * 8; i++) {
        b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
        ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), JR_ECORRUPT);
        b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    for (size_t n = 0; n < b.len; n++) ck_assert_int_eq(jr__rec_decode(b.data, n, &r), JR_ECORRUPT);
    /* well-sealed but invalid: from 0, a payload of the wrong size, an entry type set */
    uint8_t p[9] = {0};
    jr__buf_reset(&b);
    jr__rec_put(&b, JR__REC_TRUNCATE, 0, 9, 3, p, 8, NULL, 0);
    ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), JR_ECORRUPT);
    p[0] = 1;
    jr__buf_reset(&b);
    jr__rec_put(&b, JR__REC_TRUNCATE, 0, 9, 3, p, 9, NULL, 0);
    ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), JR_ECORRUPT);
    jr__buf_reset(&b);
    jr__rec_put(&b, JR__REC_TRUNCATE, 0, 9, 3, p, 4, NULL, 0);
    ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), JR_ECORRUPT);
    jr__buf_reset(&b);
    jr__rec_put(&b, JR__REC_TRUNCATE, 1, 9, 3, p, 8, NULL, 0);
    ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), JR_ECORRUPT);
    jr__buf_reset(&b);
    jr__rec_put(&b, JR__REC_TRUNCATE, 0, 0, 3, p, 8, NULL, 0); /* group 0 */
    ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), JR_ECORRUPT);
    jr__buf_reset(&b);
    jr__rec_put(&b, JR__REC_TYPE_MAX + 1, 0, 9, 3, p, 8, NULL, 0); /* unknown type */
    ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), JR_ECORRUPT);
    jr__buf_reset(&b);
    jr__rec_put(&b, JR__REC_TRUNCATE, 0, 9, 3, p, 8, NULL, 0);
    ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), 0);
    ck_assert_uint_eq(r.tfrom, 1);
    jr__buf_free(&b);
}
END_TEST

START_TEST(checkpoint_roundtrip)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__rec_cpitem items[3] = {
        {1, 10, 100, {5, 6, 7}, 50, 4, JR__CP_HAS_HS | JR__CP_HAS_COMPACT},
        {2, 1, 1, {0, 0, 0}, 0, 0, 0},
        {3, 2, 0, {9, 0, 0}, 0, 0, JR__CP_DAMAGED | JR__CP_HAS_HS},
    };
    jr__rec_put_checkpoint(&b, items, 3);
    jr__rec r;
    ck_assert_int_eq(jr__rec_decode(b.data, b.len, &r), 0);
    ck_assert_uint_eq(r.ncp, 3);
    for (uint32_t i = 0; i < 3; i++) {
        jr__rec_cpitem it;
        jr__rec_cpitem_at(&r, i, &it);
        ck_assert(memcmp(&it, &items[i], sizeof it) == 0 ||
                  (it.group == items[i].group && it.gseq == items[i].gseq &&
                   it.flags == items[i].flags && it.cindex == items[i].cindex));
    }
    jr__buf_free(&b);
}
END_TEST

START_TEST(segment_names)
{
    uint64_t s;
    ck_assert_int_eq(jr__seg_parse_name("00000000000000ff.wal", &s), 0);
    ck_assert_uint_eq(s, 255);
    ck_assert_int_eq(jr__seg_parse_name("0000000000000000.wal", &s), -1);
    ck_assert_int_eq(jr__seg_parse_name("00000000000000FF.wal", &s), -1);
    ck_assert_int_eq(jr__seg_parse_name("00000000000000ff.wal.tmp", &s), -1);
    ck_assert_int_eq(jr__seg_parse_name("junk", &s), -1);
    char p[64];
    ck_assert_int_eq(jr__seg_path(p, sizeof p, "/w", 255), 0);
    ck_assert_str_eq(p, "/w/00000000000000ff.wal");
    ck_assert_int_eq(jr__seg_path(p, 8, "/w", 255), JR_EINVAL);
}
END_TEST

/* An allocator that counts allocations and reallocations. */
static size_t snap_reallocs;
static void *sa_malloc(void *ctx, size_t n)
{
    (void)ctx;
    snap_reallocs++;
    return malloc(n);
}
static void *sa_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    snap_reallocs++;
    return realloc(p, n);
}
static void sa_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}
static const jr_allocator snap_alloc = {JR_ALLOCATOR_VERSION, NULL, sa_malloc, sa_realloc, sa_free};

/* A snapshot file is encoded with one reservation sized by the snapshot, not by its largest
 * block: a small stream snapshot needs a small buffer, which the node keeps between snapshots
 * (under JR__SCRATCH_KEEP) instead of mapping and unmapping megabytes for each. Every size,
 * compressible or not, across block boundaries, decodes to the same bytes. */
START_TEST(snapfile_encode_reserves_once_what_the_snapshot_needs)
{
    const size_t B = JR__SNAPFILE_BLOCK;
    const size_t sizes[] = {0, 1, 200, 4096, B - 1, B, B + 1, 2 * B + 7};
    uint8_t *raw = malloc(2 * B + 7);
    ck_assert_ptr_nonnull(raw);
    uint64_t x = 88172645463325252ull;
    for (int kind = 0; kind < 2; kind++) { /* incompressible, then compressible */
        for (size_t i = 0; i < 2 * B + 7; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            raw[i] = kind ? (uint8_t)(i / 64) : (uint8_t)x;
        }
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            jr__buf file, back;
            jr__buf_init(&file, &snap_alloc);
            jr__buf_init(&back, NULL);
            snap_reallocs = 0;
            const uint8_t conf[] = {1, 2, 3};
            ck_assert_int_eq(
                jr__snapfile_encode(&file, 7, 100, 3, conf, sizeof conf, raw, sizes[k]), 0);
            ck_assert_uint_eq(snap_reallocs, 1);
            if (sizes[k] <= 4096) ck_assert_uint_le(file.cap, 16 * 1024);
            jr__snapfile_info info;
            ck_assert_int_eq(jr__snapfile_decode(file.data, file.len, &info, &back), 0);
            ck_assert_uint_eq(info.index, 100);
            ck_assert_uint_eq(back.len, sizes[k]);
            ck_assert(sizes[k] == 0 || memcmp(back.data, raw, sizes[k]) == 0);
            jr__buf_free(&file);
            jr__buf_free(&back);
        }
    }
    free(raw);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wal");
    TCase *t = tcase_create("wal");
    tcase_add_test(t, empty_wal_opens_and_reopens);
    tcase_add_test(t, records_survive_restart);
    tcase_add_test(t, sync_on_demand_under_interval_policy);
    tcase_add_test(t, unflushed_records_are_not_recovered);
    tcase_add_test(t, group_commit_is_one_write_and_one_sync);
    tcase_add_test(t, prealloc_changes_the_size_once_per_chunk);
    tcase_add_test(t, prealloc_tail_is_cut_before_rotation);
    tcase_add_test(t, rollback_unstages_what_came_after_the_mark);
    tcase_add_test(t, later_entry_supersedes_suffix);
    tcase_add_test(t, torn_tail_is_cut);
    tcase_add_test(t, rotation_spreads_records_over_segments);
    tcase_add_test(t, compaction_deletes_only_fully_compacted_segments);
    tcase_add_test(t, compaction_beyond_the_log_restarts_it);
    tcase_add_test(t, truncation_voids_a_suffix_nothing_replaces);
    tcase_add_test(t, truncation_takes_effect_at_its_place_in_the_log);
    tcase_add_test(t, truncation_below_the_marker_keeps_the_log_contiguous);
    tcase_add_test(t, truncation_of_a_group_with_nothing_written_stages_nothing);
    tcase_add_test(t, truncated_entries_do_not_pin_segments);
    tcase_add_test(t, truncation_keeps_the_entries_below_the_cut);
    tcase_add_test(t, dropped_group_is_forgotten_and_can_return);
    tcase_add_test(t, drop_is_replayed_when_its_records_remain);
    tcase_add_test(t, sync_interval_policy);
    tcase_add_test(t, io_error_stops_the_wal);
    tcase_add_test(t, rotation_failure_stops_the_wal);
    tcase_add_test(t, invalid_arguments);
    suite_add_tcase(s, t);
    TCase *c = tcase_create("codec");
    tcase_add_test(c, record_decode_is_strict);
    tcase_add_test(c, truncate_record_decode_is_strict);
    tcase_add_test(c, checkpoint_roundtrip);
    tcase_add_test(c, segment_names);
    tcase_add_test(c, snapfile_encode_reserves_once_what_the_snapshot_needs);
    suite_add_tcase(s, c);
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
