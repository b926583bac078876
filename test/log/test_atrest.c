/*
 * Encryption at rest in lib/log (atrest.h): sealed files round-trip whole and by range, refuse
 * another key and no key (JR_EAUTH) and report tampering and truncation as damage; an encrypted
 * WAL recovers what it
 * wrote, holds no byte of a payload in the clear, keeps its damage detection, and refuses a
 * wrong key, a missing key and a plaintext directory with JR_EAUTH without changing a byte.
 * All on memfs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "log/atrest.h"
#include "log/record.h"
#include "log/segment.h"
#include "util/checksum.h"
#include "vfs/memfs.h"

#define DIR "/wal"

static const uint8_t key_a[32] = "atrest test: the right node key";
static const uint8_t key_b[32] = "atrest test: another node key!!";
/* A payload no encoder would produce by chance. */
static const char marker[33] = "MARKER-7f3a9c1e5b2d4068-PAYLOAD!";

/* ----------------------------------------------------------------------------------------------
 * Files under a prefix: a fingerprint of every path and byte, and a search for a marker.
 */
typedef struct walk_acc {
    jr_vfs *vfs;
    uint64_t h;
    size_t files;
    const void *needle;
    size_t nlen;
    int found;
} walk_acc;

static int walk_cb(void *arg, const char *path, uint64_t size)
{
    walk_acc *a = arg;
    uint8_t *d;
    size_t len;
    ck_assert_int_eq(jr__memfs_read_all(a->vfs, path, &d, &len), 0);
    ck_assert_uint_eq(len, size);
    a->h = a->h * 31 + jr__xxh3(path, strlen(path));
    a->h = a->h * 31 + jr__xxh3(d, len);
    if (a->needle && memmem(d, len, a->needle, a->nlen)) a->found = 1;
    a->files++;
    jr__memfs_release(a->vfs, d);
    return 0;
}

static uint64_t fingerprint(jr_vfs *vfs, const char *prefix, size_t *files)
{
    walk_acc a = {vfs, 0, 0, NULL, 0, 0};
    ck_assert_int_eq(jr__memfs_walk(vfs, prefix, walk_cb, &a), 0);
    if (files) *files = a.files;
    return a.h;
}

static int holds(jr_vfs *vfs, const char *prefix, const void *needle, size_t n)
{
    walk_acc a = {vfs, 0, 0, needle, n, 0};
    ck_assert_int_eq(jr__memfs_walk(vfs, prefix, walk_cb, &a), 0);
    ck_assert_uint_gt(a.files, 0);
    return a.found;
}

/* ----------------------------------------------------------------------------------------------
 * Sealed files
 */
static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

START_TEST(sealed_file_round_trips_whole_and_by_range)
{
    jr__atrest_key k;
    ck_assert_int_eq(jr__atrest_derive(key_a, JR__ATREST_SNAP, &k), 0);
    const size_t F = JR__SEALF_FRAME;
    const size_t sizes[] = {0, 1, F - 1, F, F + 1, 3 * F, 3 * F + 17};
    jr_vfs *vfs;
    ck_assert_int_eq(jr__memfs_new(NULL, 1, &vfs), 0);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        uint8_t *plain = malloc(n + 1), *back = malloc(n + 64);
        fill(plain, n, (uint32_t)s);
        jr__buf enc, dec, scratch;
        jr__buf_init(&enc, NULL);
        jr__buf_init(&dec, NULL);
        jr__buf_init(&scratch, NULL);
        ck_assert_int_eq(jr__sealf_encode(&k, plain, n, &enc), 0);
        ck_assert(jr__sealf_is(enc.data, enc.len));
        ck_assert_int_eq(jr__sealf_decode(&k, enc.data, enc.len, &dec), 0);
        ck_assert_uint_eq(dec.len, n);
        ck_assert(n == 0 || memcmp(dec.data, plain, n) == 0);

        /* the streaming writer, in odd pieces, makes a file the same reader opens */
        jr_file *f;
        ck_assert_int_eq(vfs->open(vfs->ctx, "/s", JR_O_CREATE | JR_O_TRUNCATE, &f), 0);
        jr__sealf_writer w;
        memset(&w, 0, sizeof w);
        ck_assert_int_eq(jr__sealf_writer_begin(&w, &k, NULL, vfs, f), 0);
        for (size_t off = 0; off < n;) {
            size_t piece = 1 + (off * 7919) % 40000;
            if (piece > n - off) piece = n - off;
            ck_assert_int_eq(jr__sealf_writer_put(&w, vfs, f, plain + off, piece), 0);
            off += piece;
        }
        ck_assert_int_eq(jr__sealf_writer_end(&w, vfs, f), 0);
        jr__sealf_writer_free(&w);
        uint64_t fsize;
        ck_assert_int_eq(vfs->size(vfs->ctx, f, &fsize), 0);
        ck_assert_uint_eq(fsize, enc.len); /* same layout, other nonces */
        /* ranges: every chunk size, from every kind of offset */
        const size_t caps[] = {1, 7777, F, F + 5, 4 * F};
        for (size_t c = n > 100 ? 1 : 0; c < sizeof caps / sizeof *caps; c++) {
            size_t off = 0, got;
            for (;;) {
                ck_assert_int_eq(
                    jr__sealf_pread(&k, vfs, f, off, back + off, caps[c], &got, &scratch), 0);
                off += got;
                if (got < caps[c]) break;
            }
            ck_assert_uint_eq(off, n);
            ck_assert(n == 0 || memcmp(back, plain, n) == 0);
        }
        vfs->close(vfs->ctx, f);
        jr__buf_free(&enc);
        jr__buf_free(&dec);
        jr__buf_free(&scratch);
        free(plain);
        free(back);
    }
    jr__memfs_free(vfs);
    jr__atrest_wipe(&k);
}
END_TEST

START_TEST(sealed_file_tells_a_wrong_key_from_damage)
{
    jr__atrest_key k, other;
    ck_assert_int_eq(jr__atrest_derive(key_a, JR__ATREST_SNAP, &k), 0);
    ck_assert_int_eq(jr__atrest_derive(key_b, JR__ATREST_SNAP, &other), 0);
    size_t n = 2 * JR__SEALF_FRAME + 100;
    uint8_t *plain = malloc(n);
    fill(plain, n, 9);
    jr__buf enc, dec;
    jr__buf_init(&enc, NULL);
    jr__buf_init(&dec, NULL);
    ck_assert_int_eq(jr__sealf_encode(&k, plain, n, &enc), 0);
    ck_assert_int_eq(jr__sealf_decode(&other, enc.data, enc.len, &dec), JR_EAUTH);
    ck_assert_int_eq(jr__sealf_decode(NULL, enc.data, enc.len, &dec), JR_EAUTH);
    /* a flipped byte in any frame, or in the header (its file id, its key check): damage, not
     * a wrong key — the node repairs a damaged file from its peers */
    const size_t at[] = {JR__SEALF_HDR + 30, JR__SEALF_HDR + JR__SEALF_FRAME + 60, enc.len - 1, 20,
                         12};
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        enc.data[at[i]] ^= 0x40;
        ck_assert_int_eq(jr__sealf_decode(&k, enc.data, enc.len, &dec), JR_ECORRUPT);
        enc.data[at[i]] ^= 0x40;
    }
    /* the last frame cut away: the remaining frame is not marked last */
    size_t full = JR__SEALF_HDR + 2 * (JR__SEALF_FRAME + JR__SEALF_FRAME_OVERHEAD);
    ck_assert_int_eq(jr__sealf_decode(&k, enc.data, full, &dec), JR_ECORRUPT);
    /* sizes no sealed file has, and another version */
    ck_assert_int_eq(jr__sealf_decode(&k, enc.data, full + 10, &dec), JR_ECORRUPT);
    ck_assert_int_eq(jr__sealf_decode(&k, enc.data, 30, &dec), JR_ECORRUPT);
    enc.data[8] = 9;
    jr__put_u64(enc.data + 40, jr__xxh3(enc.data, 40));
    ck_assert_int_eq(jr__sealf_decode(&k, enc.data, enc.len, &dec), JR_EVERSION);
    ck_assert_int_eq(jr__sealf_decode(&k, plain, n, &dec), JR_ECORRUPT); /* not sealed */
    ck_assert(!jr__sealf_is(plain, n));
    jr__buf_free(&enc);
    jr__buf_free(&dec);
    free(plain);
}
END_TEST

START_TEST(subkeys_differ_by_purpose_and_node_key)
{
    jr__atrest_key w, s, w2;
    ck_assert_int_eq(jr__atrest_derive(key_a, JR__ATREST_WAL, &w), 0);
    ck_assert_int_eq(jr__atrest_derive(key_a, JR__ATREST_SNAP, &s), 0);
    ck_assert_int_eq(jr__atrest_derive(key_b, JR__ATREST_WAL, &w2), 0);
    ck_assert(memcmp(w.key, s.key, 32) != 0 && w.check != s.check);
    ck_assert(memcmp(w.key, w2.key, 32) != 0 && w.check != w2.check);
    ck_assert(memcmp(w.key, key_a, 32) != 0);
}
END_TEST

/* ----------------------------------------------------------------------------------------------
 * The encrypted WAL
 */
typedef struct fx {
    jr_vfs *vfs;
    jr__wal_config cfg;
    jr__wal *w;
    h_state model;
    h_state got;
} fx;

static void fx_init(fx *f, const uint8_t *key)
{
    memset(f, 0, sizeof *f);
    ck_assert_int_eq(jr__memfs_new(NULL, 1, &f->vfs), 0);
    f->cfg.vfs = f->vfs;
    f->cfg.dir = DIR;
    f->cfg.sync_policy = JR_SYNC_ALWAYS;
    f->cfg.key = key;
    h_state_init(&f->model);
    ck_assert_int_eq(h_open(&f->cfg, &f->got, &f->w), 0);
}

static void fx_close(fx *f)
{
    jr__wal_close(f->w);
    f->w = NULL;
    h_state_free(&f->got);
}

static int fx_open(fx *f, const uint8_t *key)
{
    f->cfg.key = key;
    int rc = h_open(&f->cfg, &f->got, &f->w);
    if (rc) h_state_free(&f->got);
    return rc;
}

static void fx_check(fx *f)
{
    char why[600];
    ck_assert_msg(h_compare(&f->model, &f->got, why, sizeof why) == 0, "%s", why);
}

static void fx_free(fx *f)
{
    if (f->w) fx_close(f);
    h_state_free(&f->model);
    jr__memfs_free(f->vfs);
}

static void put_entry(fx *f, uint64_t group, uint64_t term, uint64_t index, const void *data,
                      uint32_t len)
{
    h_op op = {.kind = H_ENTRY, .group = group};
    op.e = (h_ent){term, index, JR__ENTRY_NORMAL, len, (uint8_t *)data};
    ck_assert_int_eq(h_stage(f->w, &op), 0);
    h_apply(&f->model, &op);
}

static void put_hs(fx *f, uint64_t group, uint64_t term, uint64_t vote, uint64_t commit)
{
    h_op op = {.kind = H_HS, .group = group, .hs = {term, vote, commit}};
    ck_assert_int_eq(h_stage(f->w, &op), 0);
    h_apply(&f->model, &op);
}

static void flush(fx *f)
{
    int durable = -1;
    ck_assert_int_eq(jr__wal_flush(f->w, 0, &durable), 0);
    ck_assert_int_eq(durable, 1);
}

/* A WAL of three groups with the marker in many entries, some empty ones, over a few flushes. */
static void write_some(fx *f)
{
    for (uint64_t i = 1; i <= 20; i++) {
        for (uint64_t g = 1; g <= 3; g++) {
            if (i % 5 == 0)
                put_entry(f, g, 1, i, NULL, 0);
            else
                put_entry(f, g, 1, i, marker, 32);
        }
        if (i % 7 == 0) {
            put_hs(f, 1, 1, 1, i);
            flush(f);
        }
    }
    flush(f);
}

START_TEST(encrypted_wal_recovers_and_holds_no_payload_in_the_clear)
{
    fx f;
    fx_init(&f, key_a);
    write_some(&f);
    fx_close(&f);
    ck_assert_int_eq(fx_open(&f, key_a), 0);
    fx_check(&f);
    ck_assert(!holds(f.vfs, DIR, marker, 32));
    ck_assert(!holds(f.vfs, DIR, marker + 8, 16)); /* nor any sizeable piece of it */
    /* and again, with writes in the new segment */
    put_entry(&f, 2, 2, 21, marker, 32);
    flush(&f);
    fx_close(&f);
    ck_assert_int_eq(fx_open(&f, key_a), 0);
    fx_check(&f);
    ck_assert(!holds(f.vfs, DIR, marker, 32));
    fx_free(&f);

    /* the same writes without a key do hold it: the search is not blind */
    fx_init(&f, NULL);
    write_some(&f);
    ck_assert(holds(f.vfs, DIR, marker, 32));
    fx_free(&f);
}
END_TEST

START_TEST(wrong_key_missing_key_and_plaintext_directory_are_refused_untouched)
{
    fx f;
    fx_init(&f, key_a);
    write_some(&f);
    fx_close(&f);
    /* a torn tail, which an open with the right key would cut: it must survive refusals */
    char path[256];
    uint64_t *seqs;
    size_t n;
    ck_assert_int_eq(jr__seg_list(f.vfs, DIR, NULL, &seqs, &n), 0);
    jr__seg_path(path, sizeof path, DIR, seqs[n - 1]);
    free(seqs);
    jr_file *fl;
    ck_assert_int_eq(f.vfs->open(f.vfs->ctx, path, JR_O_READ, &fl), 0);
    uint64_t size;
    ck_assert_int_eq(f.vfs->size(f.vfs->ctx, fl, &size), 0);
    ck_assert_int_eq(f.vfs->pwrite(f.vfs->ctx, fl, "torn", 4, size), 0);
    ck_assert_int_eq(f.vfs->sync(f.vfs->ctx, fl), 0);
    f.vfs->close(f.vfs->ctx, fl);

    size_t files;
    uint64_t before = fingerprint(f.vfs, NULL, &files);
    ck_assert_int_eq(fx_open(&f, key_b), JR_EAUTH);
    ck_assert_int_eq(fx_open(&f, NULL), JR_EAUTH);
    size_t files2;
    ck_assert_uint_eq(fingerprint(f.vfs, NULL, &files2), before);
    ck_assert_uint_eq(files2, files);
    /* the right key still opens it all */
    ck_assert_int_eq(fx_open(&f, key_a), 0);
    fx_check(&f);
    fx_free(&f);

    /* a key given to a plaintext WAL */
    fx_init(&f, NULL);
    write_some(&f);
    fx_close(&f);
    before = fingerprint(f.vfs, NULL, &files);
    ck_assert_int_eq(fx_open(&f, key_a), JR_EAUTH);
    ck_assert_uint_eq(fingerprint(f.vfs, NULL, NULL), before);
    ck_assert_int_eq(fx_open(&f, NULL), 0);
    fx_check(&f);
    fx_free(&f);
}
END_TEST

/* The xxh3 checksum still finds damage in a sealed record (recovery reports the group), and a
 * record whose checksum was forged to match tampered ciphertext is refused as JR_EAUTH. */
START_TEST(damage_is_damage_and_forgery_is_refused)
{
    fx f;
    fx_init(&f, key_a);
    write_some(&f);
    fx_close(&f);
    uint64_t *seqs;
    size_t n;
    ck_assert_int_eq(jr__seg_list(f.vfs, DIR, NULL, &seqs, &n), 0);
    char path[256];
    jr__seg_path(path, sizeof path, DIR, seqs[0]);
    free(seqs);
    uint8_t *d;
    size_t len;
    ck_assert_int_eq(jr__memfs_read_all(f.vfs, path, &d, &len), 0);
    /* find the first sealed record after the header and the checkpoint */
    size_t off = JR__SEG_HDR;
    off += JR__REC_HDR + jr__get_u32(d + off + 8);
    ck_assert_uint_eq(d[off + 12], JR__REC_SEALED);
    uint8_t *rec = malloc(JR__REC_HDR + jr__get_u32(d + off + 8));
    size_t rlen = JR__REC_HDR + jr__get_u32(d + off + 8);
    memcpy(rec, d + off, rlen);
    jr__memfs_release(f.vfs, d);

    /* forgery: ciphertext changed, checksum recomputed */
    rec[rlen - 20] ^= 1;
    jr__put_u64(rec, jr__xxh3(rec + 8, rlen - 8));
    jr_file *fl;
    ck_assert_int_eq(f.vfs->open(f.vfs->ctx, path, JR_O_READ, &fl), 0);
    ck_assert_int_eq(f.vfs->pwrite(f.vfs->ctx, fl, rec, rlen, off), 0);
    ck_assert_int_eq(f.vfs->sync(f.vfs->ctx, fl), 0);
    ck_assert_int_eq(fx_open(&f, key_a), JR_EAUTH);

    /* damage: the same change without a matching checksum is a lost record of group 1 */
    rec[0] ^= 1;
    ck_assert_int_eq(f.vfs->pwrite(f.vfs->ctx, fl, rec, rlen, off), 0);
    ck_assert_int_eq(f.vfs->sync(f.vfs->ctx, fl), 0);
    f.vfs->close(f.vfs->ctx, fl);
    ck_assert_int_eq(fx_open(&f, key_a), 0);
    h_group *g = h_state_group(&f.got, 1, 0);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(g->damaged, 1);
    free(rec);
    fx_free(&f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("atrest");
    TCase *t = tcase_create("atrest");
    tcase_add_test(t, sealed_file_round_trips_whole_and_by_range);
    tcase_add_test(t, sealed_file_tells_a_wrong_key_from_damage);
    tcase_add_test(t, subkeys_differ_by_purpose_and_node_key);
    tcase_add_test(t, encrypted_wal_recovers_and_holds_no_payload_in_the_clear);
    tcase_add_test(t, wrong_key_missing_key_and_plaintext_directory_are_refused_untouched);
    tcase_add_test(t, damage_is_damage_and_forgery_is_refused);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
