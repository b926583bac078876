/*
 * Corruption of a WAL at rest: bit flips in payloads and headers, zeroed ranges, truncated and
 * missing segments, stray files, a future format version. After reopening, the groups whose
 * records were hit are reported damaged with the file and offset, every other group recovers
 * exactly, a damaged group never replays anything that was not written, and nothing crashes.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "log/record.h"
#include "log/segment.h"
#include "util/checksum.h"
#include "util/rand.h"
#include "vfs/memfs.h"

#define DIR "/wal"
#define NG 5

/* Everything ever written, to check that a damaged group replays nothing invented. */
typedef struct written {
    uint64_t group, index, term, sum;
} written;

typedef struct fx {
    jr_vfs *vfs;
    jr__wal_config cfg;
    h_state model;
    written *wr;
    size_t nwr, capwr;
    h_state got;
    int open_rc;
    jr__wal *w;
} fx;

typedef struct rec_at {
    uint64_t off, total, group;
    uint8_t type;
} rec_at;

static uint64_t ent_sum(uint64_t group, uint64_t index, uint64_t term, const void *d, size_t n)
{
    uint64_t h[3] = {group, index, term};
    return jr__xxh3_2(h, sizeof h, d, n);
}

static void stage(fx *f, jr__wal *w, h_op op)
{
    ck_assert_int_eq(h_stage(w, &op), 0);
    h_apply(&f->model, &op);
    if (op.kind == H_ENTRY) {
        if (f->nwr == f->capwr) {
            f->capwr = f->capwr ? f->capwr * 2 : 256;
            f->wr = realloc(f->wr, f->capwr * sizeof *f->wr);
        }
        f->wr[f->nwr++] = (written){op.group, op.e.index, op.e.term,
                                    ent_sum(op.group, op.e.index, op.e.term, op.e.data, op.e.len)};
    }
    h_op_free(&op);
}

/* Builds a WAL of several segments: groups 1..4 write throughout (with truncations, by entries
 * and by truncation records), group 5 writes a little at the start and then stays idle.
 * Closed cleanly at the end. */
static void build(fx *f, uint64_t seed, int steps)
{
    jr__rand rng;
    jr__rand_seed(&rng, seed);
    memset(f, 0, sizeof *f);
    ck_assert_int_eq(jr__memfs_new(NULL, seed, &f->vfs), 0);
    f->cfg.vfs = f->vfs;
    f->cfg.dir = DIR;
    f->cfg.segment_bytes = 4096;
    h_state_init(&f->model);
    h_state s;
    jr__wal *w;
    ck_assert_int_eq(h_open(&f->cfg, &s, &w), 0);
    h_state_free(&s);
    uint64_t term = 1;
    for (int i = 0; i < steps; i++) {
        uint64_t g = i < 12 ? 1 + (uint64_t)i % NG : 1 + jr__rand_below(&rng, NG - 1);
        h_group *mg = h_state_group(&f->model, g, 0);
        uint64_t last = mg && mg->n ? mg->e[mg->n - 1].index : (mg ? mg->cidx : 0);
        uint64_t lo = (mg ? mg->cidx : 0) + 1;
        uint64_t start =
            jr__rand_below(&rng, 6) ? last + 1 : lo + jr__rand_below(&rng, last + 2 - lo);
        if (jr__rand_below(&rng, 4) == 0) term++;
        for (uint64_t k = 0; k < 1 + jr__rand_below(&rng, 3); k++) {
            h_op op;
            memset(&op, 0, sizeof op);
            op.kind = H_ENTRY;
            op.group = g;
            op.e.term = term;
            op.e.index = start + k;
            op.e.len = (uint32_t)(10 + jr__rand_below(&rng, 150));
            op.e.data = malloc(op.e.len);
            for (uint32_t b = 0; b < op.e.len; b++)
                op.e.data[b] = (uint8_t)jr__rand_below(&rng, 256);
            stage(f, w, op);
        }
        if (jr__rand_below(&rng, 3) == 0) {
            h_op op = {H_HS, g, {0, 0, 0, 0, NULL}, {term, g, start}, 0, 0, 0};
            stage(f, w, op);
        }
        if (jr__rand_below(&rng, 8) == 0) {
            /* a cut with nothing after it: bare, or a conflicting snapshot install's (with a
             * marker just below it, which the next entries then follow) */
            mg = h_state_group(&f->model, g, 0);
            last = mg && mg->n ? mg->e[mg->n - 1].index : mg->cidx;
            h_op op = {.kind = H_TRUNCATE, .group = g};
            op.from = mg->cidx + 1 + jr__rand_below(&rng, last + 1 - mg->cidx);
            stage(f, w, op);
            if (jr__rand_below(&rng, 2) && op.from > 1) {
                h_op c = {.kind = H_COMPACT, .group = g, .cidx = op.from - 1, .cterm = ++term};
                if (c.cidx > mg->cidx) stage(f, w, c);
            }
        }
        if (jr__rand_below(&rng, 3) == 0) {
            int durable;
            ck_assert_int_eq(jr__wal_flush(w, 0, &durable), 0);
        }
    }
    int durable;
    ck_assert_int_eq(jr__wal_flush(w, 0, &durable), 0);
    jr__wal_close(w);
}

static void reopen(fx *f)
{
    if (f->w) jr__wal_close(f->w);
    f->w = NULL;
    h_state_free(&f->got);
    f->open_rc = h_open(&f->cfg, &f->got, &f->w);
}

static void fx_free(fx *f)
{
    if (f->w) jr__wal_close(f->w);
    h_state_free(&f->model);
    h_state_free(&f->got);
    free(f->wr);
    jr__memfs_free(f->vfs);
}

static size_t segments(fx *f, uint64_t **seqs)
{
    size_t n;
    ck_assert_int_eq(jr__seg_list(f->vfs, DIR, NULL, seqs, &n), 0);
    return n;
}

static void seg_path(fx *f, size_t i, char *buf, size_t cap)
{
    uint64_t *seqs;
    size_t n = segments(f, &seqs);
    ck_assert_uint_lt(i, n);
    jr__seg_path(buf, cap, DIR, seqs[i]);
    free(seqs);
}

/* Lists the records of an intact segment file. */
static size_t records(fx *f, const char *path, rec_at *out, size_t cap)
{
    uint8_t *d;
    size_t len, n = 0;
    ck_assert_int_eq(jr__memfs_read_all(f->vfs, path, &d, &len), 0);
    uint64_t off = JR__SEG_HDR;
    while (off < len && n < cap) {
        jr__rec r;
        ck_assert_int_eq(jr__rec_decode(d + off, len - off, &r), 0);
        out[n++] = (rec_at){off, JR__REC_HDR + (uint64_t)r.len, r.group, r.type};
        off += JR__REC_HDR + r.len;
    }
    jr__memfs_release(f->vfs, d);
    return n;
}

/* Groups with a record overlapping [a, b) (bit i set for group i). */
static unsigned hit_groups(const rec_at *r, size_t n, uint64_t a, uint64_t b)
{
    unsigned m = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].group && r[i].off < b && r[i].off + r[i].total > a) m |= 1u << r[i].group;
    return m;
}

static unsigned damaged_set(const fx *f)
{
    unsigned m = 0;
    for (size_t i = 0; i < f->got.n; i++)
        if (f->got.g[i].damaged) m |= 1u << f->got.g[i].id;
    return m;
}

/* Every replayed entry of every group was written at some point, and replay order holds. */
static void check_no_invention(fx *f)
{
    for (size_t i = 0; i < f->got.n; i++) {
        const h_group *r = &f->got.g[i];
        ck_assert_int_eq(r->order_errors, 0);
        for (size_t k = 0; k < r->n; k++) {
            const h_ent *e = &r->e[k];
            uint64_t s = ent_sum(r->id, e->index, e->term, e->data, e->len);
            int found = 0;
            for (size_t j = 0; j < f->nwr && !found; j++)
                found = f->wr[j].group == r->id && f->wr[j].index == e->index && f->wr[j].sum == s;
            ck_assert_msg(found,
                          "group %" PRIu64 " replayed entry %" PRIu64 " that was never written",
                          r->id, e->index);
        }
    }
}

/* Undamaged groups must equal the model; damaged ones may only hold entries once written, in
 * order, with a message naming a file and an offset or missing segment. */
static void check_recovery(fx *f, const char *file)
{
    ck_assert_int_eq(f->open_rc, 0);
    for (size_t i = 0; i < f->got.n; i++) {
        const h_group *r = &f->got.g[i];
        ck_assert_int_eq(r->order_errors, 0);
        if (r->damaged) {
            ck_assert_msg(strstr(r->why, "/wal/") != NULL, "message without file: %s", r->why);
            if (file) ck_assert_msg(strstr(r->why, file) != NULL, "%s not in: %s", file, r->why);
            for (size_t k = 0; k < r->n; k++) {
                const h_ent *e = &r->e[k];
                uint64_t s = ent_sum(r->id, e->index, e->term, e->data, e->len);
                int found = 0;
                for (size_t j = 0; j < f->nwr && !found; j++)
                    found =
                        f->wr[j].group == r->id && f->wr[j].index == e->index && f->wr[j].sum == s;
                ck_assert_msg(found,
                              "group %" PRIu64 " replayed entry %" PRIu64 " that was never written",
                              r->id, e->index);
            }
            continue;
        }
        const h_group *m = h_state_group(&f->model, r->id, 0);
        ck_assert_msg(m != NULL, "unknown group %" PRIu64 " recovered", r->id);
    }
    /* compare undamaged groups exactly: build views without the damaged ones */
    h_state want, got;
    h_state_init(&want);
    h_state_init(&got);
    h_state_copy(&want, &f->model);
    h_state_copy(&got, &f->got);
    for (size_t i = 0; i < got.n; i++)
        if (got.g[i].damaged) {
            h_group *m = h_state_group(&want, got.g[i].id, 0);
            if (m) m->live = 0;
            got.g[i].live = 0;
            got.g[i].damaged = 0;
        }
    char why[600];
    ck_assert_msg(h_compare(&want, &got, why, sizeof why) == 0, "%s", why);
    h_state_free(&want);
    h_state_free(&got);
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : dflt;
}

/* ------------------------------------------------------------------------------------------*/
START_TEST(clean_wal_recovers_exactly)
{
    fx f;
    build(&f, 1, 200);
    uint64_t *seqs;
    ck_assert_uint_ge(segments(&f, &seqs), 6);
    free(seqs);
    reopen(&f);
    check_recovery(&f, NULL);
    ck_assert_uint_eq(damaged_set(&f), 0);
    fx_free(&f);
}
END_TEST

/* Finds a record of `group` in segment `seg` with records of other groups after it. */
static rec_at pick(fx *f, size_t seg, uint64_t group, char *path, size_t cap, rec_at *all,
                   size_t *n)
{
    seg_path(f, seg, path, cap);
    *n = records(f, path, all, 512);
    for (size_t i = 0; i + 1 < *n; i++)
        if (all[i].group == group) return all[i];
    ck_abort_msg("no record of group %" PRIu64 " in %s", group, path);
    return all[0];
}

START_TEST(payload_bit_flip_damages_only_its_group)
{
    fx f;
    build(&f, 2, 200);
    char path[256];
    rec_at all[512];
    size_t n;
    rec_at r = pick(&f, 2, 2, path, sizeof path, all, &n);
    ck_assert_int_eq(jr__memfs_flip_bits(f.vfs, path, r.off + JR__REC_HDR + 20, 1, 1), 0);
    reopen(&f);
    check_recovery(&f, path);
    ck_assert_uint_eq(damaged_set(&f), 1u << 2);
    char off[32];
    snprintf(off, sizeof off, "offset %" PRIu64, r.off);
    ck_assert_ptr_nonnull(strstr(h_state_group(&f.got, 2, 0)->why, off));
    fx_free(&f);
}
END_TEST

START_TEST(header_bit_flip_damages_only_its_group)
{
    for (uint64_t byte = 8; byte < JR__REC_HDR; byte += 3) {
        fx f;
        build(&f, 3, 200);
        char path[256];
        rec_at all[512];
        size_t n;
        rec_at r = pick(&f, 3, 3, path, sizeof path, all, &n);
        ck_assert_int_eq(jr__memfs_flip_bits(f.vfs, path, r.off + byte, 1, 1), 0);
        reopen(&f);
        check_recovery(&f, path);
        ck_assert_msg(damaged_set(&f) == 1u << 3, "byte %" PRIu64 ": damaged set %x", byte,
                      damaged_set(&f));
        fx_free(&f);
    }
}
END_TEST

START_TEST(zeroed_range_damages_the_groups_it_covers)
{
    for (uint64_t seed = 10; seed < 16; seed++) {
        fx f;
        build(&f, seed, 220);
        char path[256];
        rec_at all[512];
        seg_path(&f, 2, path, sizeof path);
        size_t n = records(&f, path, all, 512);
        uint64_t a = 600 + 97 * (seed - 10), b = a + 1024;
        unsigned want = hit_groups(all, n, a, b);
        ck_assert_int_eq(jr__memfs_zero(f.vfs, path, a, b - a), 0);
        reopen(&f);
        check_recovery(&f, path);
        ck_assert_msg(damaged_set(&f) == want, "seed %" PRIu64 ": damaged %x, expected %x", seed,
                      damaged_set(&f), want);
        fx_free(&f);
    }
}
END_TEST

START_TEST(truncated_segment_damages_the_groups_of_its_tail)
{
    fx f;
    build(&f, 4, 200);
    char path[256];
    rec_at all[512];
    seg_path(&f, 1, path, sizeof path);
    size_t n = records(&f, path, all, 512);
    uint64_t cut = all[n / 2].off + 5;
    unsigned want = hit_groups(all, n, cut, UINT64_MAX);
    ck_assert_int_eq(jr__memfs_truncate(f.vfs, path, cut), 0);
    reopen(&f);
    check_recovery(&f, path);
    ck_assert_uint_eq(damaged_set(&f), want);
    fx_free(&f);
}
END_TEST

START_TEST(missing_segment_damages_the_groups_it_held)
{
    fx f;
    build(&f, 5, 200);
    char path[256];
    rec_at all[512];
    seg_path(&f, 2, path, sizeof path);
    size_t n = records(&f, path, all, 512);
    unsigned want = hit_groups(all, n, 0, UINT64_MAX);
    ck_assert_int_eq(f.vfs->remove(f.vfs->ctx, path), 0);
    reopen(&f);
    check_recovery(&f, NULL);
    ck_assert_uint_eq(damaged_set(&f), want);
    ck_assert_ptr_nonnull(strstr(h_state_group(&f.got, 1, 0)->why, "missing"));
    fx_free(&f);
}
END_TEST

START_TEST(damage_in_the_last_segment_before_valid_records)
{
    fx f;
    build(&f, 6, 200);
    uint64_t *seqs;
    size_t ns = segments(&f, &seqs);
    free(seqs);
    char path[256];
    rec_at all[512];
    size_t n;
    rec_at r = pick(&f, ns - 1, 1, path, sizeof path, all, &n);
    ck_assert_int_eq(jr__memfs_flip_bits(f.vfs, path, r.off + JR__REC_HDR + 3, 1, 1), 0);
    reopen(&f);
    check_recovery(&f, path);
    ck_assert_uint_eq(damaged_set(&f), 1u << 1);
    fx_free(&f);
}
END_TEST

START_TEST(zeroed_header_of_segment_and_checkpoint_lose_nothing)
{
    fx f;
    build(&f, 7, 200);
    char path[256];
    seg_path(&f, 3, path, sizeof path);
    ck_assert_int_eq(jr__memfs_zero(f.vfs, path, 0, JR__SEG_HDR), 0);
    seg_path(&f, 4, path, sizeof path);
    ck_assert_int_eq(jr__memfs_flip_bits(f.vfs, path, JR__SEG_HDR + JR__REC_HDR, 4, 1), 0);
    reopen(&f);
    check_recovery(&f, NULL);
    ck_assert_uint_eq(damaged_set(&f), 0);
    fx_free(&f);
}
END_TEST

static int add_file(jr_vfs *v, const char *path, const char *content)
{
    jr_file *fl;
    int rc = v->open(v->ctx, path, JR_O_CREATE, &fl);
    if (rc) return rc;
    rc = v->pwrite(v->ctx, fl, content, strlen(content), 0);
    v->sync(v->ctx, fl);
    v->close(v->ctx, fl);
    return rc;
}

START_TEST(stray_files_are_ignored)
{
    fx f;
    build(&f, 8, 150);
    uint64_t *seqs;
    size_t ns = segments(&f, &seqs);
    char garbage[64];
    jr__seg_path(garbage, sizeof garbage, DIR, seqs[ns - 1] + 7);
    free(seqs);
    ck_assert_int_eq(add_file(f.vfs, DIR "/notes.txt", "hello"), 0);
    ck_assert_int_eq(add_file(f.vfs, DIR "/00000000000000zz.wal", "junk"), 0);
    ck_assert_int_eq(add_file(f.vfs, DIR "/1.wal", "junk"), 0);
    ck_assert_int_eq(add_file(f.vfs, DIR "/0000000000000000.wal", "junk"), 0);
    ck_assert_int_eq(add_file(f.vfs, DIR "/0000000000000001.wal.tmp", "junk"), 0);
    ck_assert_int_eq(f.vfs->mkdir(f.vfs->ctx, DIR "/sub"), 0);
    /* a segment-named file past the end with garbage in it: like a torn new segment */
    ck_assert_int_eq(add_file(f.vfs, garbage, "this is not a WAL segment at all, no."), 0);
    ck_assert_int_eq(f.vfs->sync_dir(f.vfs->ctx, DIR), 0);
    reopen(&f);
    check_recovery(&f, NULL);
    ck_assert_uint_eq(damaged_set(&f), 0);
    /* files that are not the WAL's are left alone */
    uint8_t *d;
    size_t len;
    ck_assert_int_eq(jr__memfs_read_all(f.vfs, DIR "/notes.txt", &d, &len), 0);
    jr__memfs_release(f.vfs, d);
    reopen(&f);
    check_recovery(&f, NULL);
    ck_assert_uint_eq(damaged_set(&f), 0);
    fx_free(&f);
}
END_TEST

START_TEST(damage_persists_until_the_group_is_dropped)
{
    fx f;
    build(&f, 9, 200);
    char path[256];
    rec_at all[512];
    size_t n;
    rec_at r = pick(&f, 1, 2, path, sizeof path, all, &n);
    ck_assert_int_eq(jr__memfs_flip_bits(f.vfs, path, r.off + JR__REC_HDR + 1, 1, 1), 0);
    reopen(&f);
    ck_assert_uint_eq(damaged_set(&f), 1u << 2);
    reopen(&f);
    ck_assert_uint_eq(damaged_set(&f), 1u << 2);
    /* repair: drop, then the group's new state (as after a snapshot from the leader) */
    h_op d = {H_DROP, 2, {0, 0, 0, 0, NULL}, {0, 0, 0}, 0, 0, 0};
    stage(&f, f.w, d);
    h_op c = {H_COMPACT, 2, {0, 0, 0, 0, NULL}, {0, 0, 0}, 500, 9, 0};
    stage(&f, f.w, c);
    h_op e;
    memset(&e, 0, sizeof e);
    e.kind = H_ENTRY;
    e.group = 2;
    e.e.term = 9;
    e.e.index = 501;
    e.e.len = 3;
    e.e.data = (uint8_t *)strdup("new");
    stage(&f, f.w, e);
    int durable;
    ck_assert_int_eq(jr__wal_flush(f.w, 0, &durable), 0);
    reopen(&f);
    check_recovery(&f, NULL);
    ck_assert_uint_eq(damaged_set(&f), 0);
    fx_free(&f);
}
END_TEST

START_TEST(future_format_version_is_refused)
{
    fx f;
    build(&f, 11, 60);
    char path[256];
    seg_path(&f, 0, path, sizeof path);
    uint8_t hdr[JR__SEG_HDR];
    uint64_t *seqs;
    segments(&f, &seqs);
    jr__seg_header(hdr, seqs[0], NULL);
    free(seqs);
    jr__put_u32(hdr + 8, JR__SEG_VERSION_SEALED + 1);
    jr__put_u64(hdr + 24, jr__xxh3(hdr, 24));
    jr_file *fl;
    ck_assert_int_eq(f.vfs->open(f.vfs->ctx, path, JR_O_READ, &fl), 0);
    ck_assert_int_eq(f.vfs->pwrite(f.vfs->ctx, fl, hdr, sizeof hdr, 0), 0);
    f.vfs->close(f.vfs->ctx, fl);
    reopen(&f);
    ck_assert_int_eq(f.open_rc, JR_EVERSION);
    fx_free(&f);
}
END_TEST

/* Random damage anywhere but the tail of the last segment: never a crash, undamaged groups
 * exact, damaged groups replay only what was written. */
START_TEST(random_damage)
{
    uint64_t first = env_u64("JR_WAL_SEED", 100), count = env_u64("JR_WAL_SEEDS", 160);
    for (uint64_t seed = first; seed < first + count; seed++) {
        fx f;
        jr__rand rng;
        jr__rand_seed(&rng, seed);
        build(&f, seed, 80 + (int)jr__rand_below(&rng, 200));
        uint64_t *seqs;
        size_t ns = segments(&f, &seqs);
        free(seqs);
        if (ns < 2) {
            fx_free(&f);
            continue;
        }
        int hits = 1 + (int)jr__rand_below(&rng, 3);
        for (int h = 0; h < hits && ns >= 2; h++) { /* (a removal may leave only the last) */
            size_t s = (size_t)jr__rand_below(&rng, ns - 1); /* not the last */
            char path[256];
            seg_path(&f, s, path, sizeof path);
            uint8_t *d;
            size_t len;
            if (jr__memfs_read_all(f.vfs, path, &d, &len) != 0) continue;
            jr__memfs_release(f.vfs, d);
            if (!len) continue;
            uint64_t a = jr__rand_below(&rng, len);
            switch (jr__rand_below(&rng, 4)) {
            case 0:
                jr__memfs_flip_bits(f.vfs, path, a, 1 + jr__rand_below(&rng, 64),
                                    1 + (unsigned)jr__rand_below(&rng, 3));
                break;
            case 1:
                jr__memfs_zero(f.vfs, path, a, 1 + jr__rand_below(&rng, 4096));
                break;
            case 2:
                jr__memfs_truncate(f.vfs, path, a);
                break;
            case 3:
                f.vfs->remove(f.vfs->ctx, path);
                ns--;
                break;
            }
        }
        reopen(&f);
        if (getenv("JR_DEBUG")) fprintf(stderr, "seed %llu\n", (unsigned long long)seed);
        check_recovery(&f, NULL);
        fx_free(&f);
    }
}
END_TEST

/* Garbage anywhere, including the last segment: the WAL opens or refuses, never crashes, and
 * never replays an entry that was not written. */
START_TEST(garbage_everywhere)
{
    uint64_t first = env_u64("JR_WAL_SEED", 300), count = env_u64("JR_WAL_SEEDS", 40) / 4 + 1;
    for (uint64_t seed = first; seed < first + count; seed++) {
        fx f;
        jr__rand rng;
        jr__rand_seed(&rng, seed);
        build(&f, seed, 100);
        uint64_t *seqs;
        size_t ns = segments(&f, &seqs);
        for (size_t s = 0; s < ns; s++) {
            char path[256];
            jr__seg_path(path, sizeof path, DIR, seqs[s]);
            jr__memfs_flip_bits(f.vfs, path, 0, 0, (unsigned)(1 + jr__rand_below(&rng, 200)));
        }
        free(seqs);
        reopen(&f);
        if (f.open_rc == 0) check_no_invention(&f);
        fx_free(&f);
    }
}
END_TEST

static void put_entry(jr__wal *w, uint64_t index, uint64_t term)
{
    uint8_t d[16] = {(uint8_t)index, (uint8_t)term};
    h_op op = {.kind = H_ENTRY, .group = 1};
    op.e = (h_ent){term, index, 0, sizeof d, d};
    ck_assert_int_eq(h_stage(w, &op), 0);
}

static void put_hs(jr__wal *w, uint64_t term, uint64_t commit)
{
    h_op op = {.kind = H_HS, .group = 1, .hs = {term, 1, commit}};
    ck_assert_int_eq(h_stage(w, &op), 0);
}

static void flush(jr__wal *w)
{
    int durable;
    ck_assert_int_eq(jr__wal_flush(w, 0, &durable), 0);
}

/* Lost records that replaced a suffix of the log (entries 4-5 of term 1 by entries 4-5 of term
 * 2) and raised the commit index over them: the replay keeps the older entries, so a later hard
 * state's commit index (5) would make them look committed and no leader could replace them. The
 * recovered commit index is the one of before the damage (3); term and vote are the latest. */
START_TEST(a_commit_index_written_after_lost_records_is_not_taken)
{
    fx f;
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(jr__memfs_new(NULL, 5, &f.vfs), 0);
    f.cfg.vfs = f.vfs;
    f.cfg.dir = DIR;
    f.cfg.segment_bytes = 1 << 20;
    jr__wal *w;
    ck_assert_int_eq(h_open(&f.cfg, &f.got, &w), 0);
    for (uint64_t i = 1; i <= 5; i++) put_entry(w, i, 1);
    put_hs(w, 1, 3);
    flush(w);
    put_entry(w, 4, 2); /* lost below */
    put_entry(w, 5, 2);
    put_hs(w, 2, 5);
    flush(w);
    put_hs(w, 3, 5); /* evidence after the damage */
    flush(w);
    jr__wal_close(w);
    char path[256];
    rec_at all[16];
    seg_path(&f, 0, path, sizeof path);
    size_t n = records(&f, path, all, 16);
    ck_assert_uint_ge(n, 10);
    /* the second batch: the three records before the last one */
    uint64_t a = all[n - 4].off, b = all[n - 2].off + all[n - 2].total;
    ck_assert_int_eq(jr__memfs_zero(f.vfs, path, a, b - a), 0);
    reopen(&f);
    ck_assert_int_eq(f.open_rc, 0);
    h_group *g = h_state_group(&f.got, 1, 0);
    ck_assert_ptr_nonnull(g);
    ck_assert(g->damaged);
    ck_assert_uint_eq(g->n, 5);
    ck_assert_uint_eq(g->e[4].term, 1);
    ck_assert(g->has_hs);
    ck_assert_uint_eq(g->hs.term, 3);
    ck_assert_uint_eq(g->hs.commit, 3);
    fx_free(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("wal_corrupt");
    TCase *t = tcase_create("corrupt");
    tcase_set_timeout(t, 0);
    tcase_add_test(t, clean_wal_recovers_exactly);
    tcase_add_test(t, payload_bit_flip_damages_only_its_group);
    tcase_add_test(t, header_bit_flip_damages_only_its_group);
    tcase_add_test(t, zeroed_range_damages_the_groups_it_covers);
    tcase_add_test(t, truncated_segment_damages_the_groups_of_its_tail);
    tcase_add_test(t, missing_segment_damages_the_groups_it_held);
    tcase_add_test(t, damage_in_the_last_segment_before_valid_records);
    tcase_add_test(t, zeroed_header_of_segment_and_checkpoint_lose_nothing);
    tcase_add_test(t, stray_files_are_ignored);
    tcase_add_test(t, damage_persists_until_the_group_is_dropped);
    tcase_add_test(t, future_format_version_is_refused);
    tcase_add_test(t, random_damage);
    tcase_add_test(t, garbage_everywhere);
    tcase_add_test(t, a_commit_index_written_after_lost_records_is_not_taken);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
