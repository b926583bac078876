/*
 * Damage to a file store's directory is reported, never crashes and never returns wrong data:
 * bit flips, truncations, zeroed ranges and stray files give JR_ECORRUPT with the file and the
 * offset in the error message; tampering with encrypted blocks is caught by authentication; a
 * wrong key and a missing one are JR_EAUTH. Each test runs for the four file
 * configurations (plain, lz4, encrypted, both), unmarked and marked (store.h "Marks": the
 * store ends with a mark; damage is no more forgiven for that).
 */
#include <stdlib.h>

#include "fixture.h"
#include "store/block.h"
#include "util/checksum.h"
#include "util/rand.h"

#define NMSG 200

static void msg_data(char *buf, size_t n, uint64_t seq)
{
    snprintf(buf, n, "message %llu with some padding to fill the blocks ............",
             (unsigned long long)seq);
}

static int marked; /* the test's stores are marked (loop index >= 4) */

/* A synced and closed store of NMSG messages over many 2 KiB blocks (marked: with a mark at the
 * end). */
static void build(fx *f, int conf, uint64_t seed)
{
    fx_init(f, conf, NULL, seed);
    jr__store_close(f->st);
    f->st = NULL;
    f->cfg.block_bytes = 2048;
    f->cfg.marked = marked;
    ck_assert_int_eq(fx_open(f), 0);
    char data[128];
    for (uint64_t q = 1; q <= NMSG; q++) {
        msg_data(data, sizeof data, q);
        ck_assert_int_eq(
            jr__store_append(f->st, q, "t.x", 3, NULL, 0, data, strlen(data), (int64_t)q, NULL), 0);
    }
    if (marked) ck_assert_int_eq(jr__store_mark(f->st, NMSG, "m", 1, 0, 0), 0);
    ck_assert_int_eq(jr__store_close(f->st), 0);
    f->st = NULL;
}

typedef struct lst {
    uint32_t ids[256];
    int n;
} lst;

static int list_cb(void *arg, const char *name)
{
    lst *l = arg;
    unsigned id;
    if (sscanf(name, "%10u.blk", &id) == 1) l->ids[l->n++] = id;
    return 0;
}

static int cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static lst blocks(fx *f)
{
    lst l = {.n = 0};
    f->vfs->list(f->vfs->ctx, "/store/ORDERS", list_cb, &l);
    qsort(l.ids, (size_t)l.n, sizeof l.ids[0], cmp);
    return l;
}

static void path_of(char *p, size_t n, uint32_t id)
{
    snprintf(p, n, "/store/ORDERS/%010u.blk", id);
}

static uint64_t file_size(fx *f, const char *path)
{
    uint8_t *d;
    size_t len;
    ck_assert_int_eq(jr__memfs_read_all(f->vfs, path, &d, &len), 0);
    jr__memfs_release(f->vfs, d);
    return len;
}

/* Opening must fail with JR_ECORRUPT naming the file and an offset. */
static void expect_corrupt(fx *f, const char *path, const char *what)
{
    int rc = fx_open(f);
    ck_assert_msg(rc == JR_ECORRUPT, "[%s] %s in %s: open gave %s (%s)", conf_names[f->conf], what,
                  path, jr_strerror(rc), f->err);
    ck_assert_ptr_null(f->st);
    const char *base = strrchr(path, '/') + 1;
    ck_assert_msg(strstr(f->err, base) != NULL, "[%s] message does not name %s: %s",
                  conf_names[f->conf], base, f->err);
    ck_assert_msg(strstr(f->err, "offset") != NULL, "[%s] message has no offset: %s",
                  conf_names[f->conf], f->err);
}

/* Opening either fails with JR_ECORRUPT or returns only correct messages. */
static void expect_corrupt_or_correct(fx *f, const char *what)
{
    int rc = fx_open(f);
    if (rc) {
        ck_assert_msg(rc == JR_ECORRUPT, "[%s] %s: open gave %s (%s)", conf_names[f->conf], what,
                      jr_strerror(rc), f->err);
        return;
    }
    char data[128];
    jr__store_msg m;
    for (uint64_t q = 1; q <= NMSG; q++) {
        rc = jr__store_get(f->st, q, &m);
        if (rc == JR_ENOTFOUND || rc == JR_ECORRUPT) continue;
        ck_assert_int_eq(rc, 0);
        msg_data(data, sizeof data, q);
        ck_assert_msg(m.data_len == strlen(data) && memcmp(m.data, data, m.data_len) == 0,
                      "[%s] %s: wrong data for seq %llu", conf_names[f->conf], what,
                      (unsigned long long)q);
    }
    jr__store_close(f->st);
    f->st = NULL;
}

START_TEST(bit_flips_in_an_older_block)
{
    int conf = CONF_FILE + _i % 4;
    marked = _i >= 4;
    for (uint64_t t = 0; t < 25; t++) {
        fx f;
        build(&f, conf, 100 + t);
        lst l = blocks(&f);
        ck_assert_int_gt(l.n, 3);
        jr__rand r;
        jr__rand_seed(&r, t);
        char path[128];
        path_of(path, sizeof path, l.ids[jr__rand_below(&r, (uint64_t)l.n - 1)]);
        uint64_t size = file_size(&f, path);
        uint64_t off = jr__rand_below(&r, size);
        ck_assert_int_eq(jr__memfs_flip_bits(f.vfs, path, off, 1, 1 + (unsigned)(t % 3)), 0);
        expect_corrupt(&f, path, "bit flip");
        fx_done(&f);
    }
}
END_TEST

START_TEST(bit_flips_before_the_tail_of_the_last_block)
{
    int conf = CONF_FILE + _i % 4;
    marked = _i >= 4;
    for (uint64_t t = 0; t < 10; t++) {
        fx f;
        build(&f, conf, 200 + t);
        lst l = blocks(&f);
        char path[128];
        path_of(path, sizeof path, l.ids[l.n - 1]);
        uint64_t size = file_size(&f, path);
        if (size < 600) {
            fx_done(&f);
            continue;
        }
        /* in the first records: valid records follow the damage, so it is not a torn tail */
        ck_assert_int_eq(jr__memfs_flip_bits(f.vfs, path, 40 + t * 20, 1, 1), 0);
        expect_corrupt(&f, path, "bit flip in the last block");
        fx_done(&f);
    }
}
END_TEST

START_TEST(truncated_older_block)
{
    int conf = CONF_FILE + _i % 4;
    marked = _i >= 4;
    for (uint64_t t = 0; t < 10; t++) {
        fx f;
        build(&f, conf, 300 + t);
        lst l = blocks(&f);
        char path[128];
        path_of(path, sizeof path, l.ids[t % (uint64_t)(l.n - 1)]);
        uint64_t size = file_size(&f, path);
        ck_assert_int_eq(jr__memfs_truncate(f.vfs, path, (size * t) / 10), 0);
        expect_corrupt(&f, path, "truncation");
        fx_done(&f);
    }
}
END_TEST

START_TEST(zeroed_range)
{
    int conf = CONF_FILE + _i % 4;
    marked = _i >= 4;
    for (uint64_t t = 0; t < 10; t++) {
        fx f;
        build(&f, conf, 400 + t);
        lst l = blocks(&f);
        char path[128];
        path_of(path, sizeof path, l.ids[t % (uint64_t)(l.n - 1)]);
        uint64_t size = file_size(&f, path);
        ck_assert_int_eq(jr__memfs_zero(f.vfs, path, (size * t) / 12, 512), 0);
        expect_corrupt(&f, path, "zeroed range");
        fx_done(&f);
    }
}
END_TEST

static void put_file(fx *f, const char *path, const void *data, size_t n)
{
    jr_file *h;
    ck_assert_int_eq(f->vfs->open(f->vfs->ctx, path, JR_O_CREATE | JR_O_TRUNCATE, &h), 0);
    ck_assert_int_eq(f->vfs->pwrite(f->vfs->ctx, h, data, n, 0), 0);
    ck_assert_int_eq(f->vfs->sync(f->vfs->ctx, h), 0);
    f->vfs->close(f->vfs->ctx, h);
}

START_TEST(stray_files)
{
    int conf = CONF_FILE + _i % 4;
    marked = _i >= 4;
    fx f;
    /* a file that is not the store's */
    build(&f, conf, 500);
    put_file(&f, "/store/ORDERS/notes.txt", "hello", 5);
    expect_corrupt(&f, "/store/ORDERS/notes.txt", "stray file");
    fx_done(&f);
    /* garbage named like a block */
    build(&f, conf, 501);
    uint8_t junk[3000];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)(i * 131 + 7);
    put_file(&f, "/store/ORDERS/0000000099.blk", junk, sizeof junk);
    expect_corrupt(&f, "/store/ORDERS/0000000099.blk", "garbage block");
    fx_done(&f);
    /* a copy of an older block under a newer id */
    build(&f, conf, 502);
    lst l = blocks(&f);
    char path[128];
    path_of(path, sizeof path, l.ids[0]);
    uint8_t *d;
    size_t len;
    ck_assert_int_eq(jr__memfs_read_all(f.vfs, path, &d, &len), 0);
    put_file(&f, "/store/ORDERS/0000000099.blk", d, len);
    jr__memfs_release(f.vfs, d);
    expect_corrupt(&f, "/store/ORDERS/0000000099.blk", "copied block");
    fx_done(&f);
    /* a leftover temporary file is removed, not an error */
    build(&f, conf, 503);
    put_file(&f, "/store/ORDERS/0000000005.tmp", junk, 100);
    ck_assert_int_eq(fx_open(&f), 0);
    ck_assert_uint_eq(jr__store_durable_seq(f.st), NMSG);
    fx_done(&f);
}
END_TEST

START_TEST(random_damage_never_returns_wrong_data)
{
    int conf = CONF_FILE + _i % 4;
    marked = _i >= 4;
    for (uint64_t t = 0; t < 40; t++) {
        fx f;
        build(&f, conf, 600 + t);
        lst l = blocks(&f);
        jr__rand r;
        jr__rand_seed(&r, 600 + t);
        char path[128];
        path_of(path, sizeof path, l.ids[jr__rand_below(&r, (uint64_t)l.n)]);
        uint64_t size = file_size(&f, path);
        switch (t % 3) {
        case 0:
            jr__memfs_flip_bits(f.vfs, path, 0, 0, 1 + (unsigned)jr__rand_below(&r, 4));
            break;
        case 1:
            jr__memfs_truncate(f.vfs, path, jr__rand_below(&r, size));
            break;
        case 2:
            jr__memfs_zero(f.vfs, path, jr__rand_below(&r, size), 1 + jr__rand_below(&r, 64));
            break;
        }
        expect_corrupt_or_correct(&f, "random damage");
        fx_done(&f);
    }
}
END_TEST

/* Changes one byte of a sealed encrypted block's ciphertext and fixes the chunk's xxh3 and the
 * index checksum, so that only authentication can notice. */
START_TEST(tampered_encrypted_blocks)
{
    int conf = _i % 2 ? CONF_FILE_LZ4_ENC : CONF_FILE_ENC;
    marked = _i >= 2;
    fx f;
    build(&f, conf, 700);
    lst l = blocks(&f);
    char path[128];
    path_of(path, sizeof path, l.ids[1]);
    uint8_t *d;
    size_t len;
    ck_assert_int_eq(jr__memfs_read_all(f.vfs, path, &d, &len), 0);
    ck_assert(memcmp(d, "JRSB", 4) == 0);
    jr__blk_sealed hd;
    ck_assert_int_eq(jr__blk_sealed_header(d, len, &hd), 0);
    uint8_t *entry0 = d + hd.index_off;
    uint32_t stored0 = jr__get_u32(entry0 + 12) & 0x7fffffffu;
    d[JR__BLK_SEAL_HDR + 10] ^= 0x20; /* chunk 0's ciphertext */
    jr__put_u64(entry0 + 24, jr__xxh3(d + JR__BLK_SEAL_HDR, stored0));
    size_t ilen = (size_t)hd.nchunks * JR__BLK_CHUNK_ENTRY;
    jr__put_u64(d + len - 8, jr__xxh3(entry0, ilen));
    put_file(&f, path, d, len);
    jr__memfs_release(f.vfs, d);
    expect_corrupt(&f, path, "tampered sealed block");
    ck_assert_ptr_nonnull(strstr(f.err, "authentication"));
    fx_done(&f);

    /* a frame of the active (open) block */
    build(&f, conf, 701);
    l = blocks(&f);
    path_of(path, sizeof path, l.ids[l.n - 1]);
    ck_assert_int_eq(jr__memfs_read_all(f.vfs, path, &d, &len), 0);
    ck_assert(memcmp(d, "JRBK", 4) == 0);
    ck_assert(len > 400 || marked);
    d[JR__BLK_OPEN_HDR + 28 + 5] ^= 1; /* inside the first frame's ciphertext */
    put_file(&f, path, d, len);
    jr__memfs_release(f.vfs, d);
    if (len > 400)
        expect_corrupt(&f, path, "tampered frame");
    else /* the block holds only the mark: damage to the tail looks like a torn write */
        expect_corrupt_or_correct(&f, "tampered mark");
    fx_done(&f);

    /* wrong key, no key */
    build(&f, conf, 702);
    static const uint8_t other[32] = {9};
    f.cfg.master_key = other;
    ck_assert_int_eq(fx_open(&f), JR_EAUTH);
    f.cfg.master_key = NULL;
    ck_assert_int_eq(fx_open(&f), JR_EAUTH);
    f.cfg.master_key = test_master_key;
    ck_assert_int_eq(fx_open(&f), 0);
    fx_done(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("store-corrupt");
    TCase *tc = tcase_create("corruption");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, bit_flips_in_an_older_block, 0, 8);
    tcase_add_loop_test(tc, bit_flips_before_the_tail_of_the_last_block, 0, 8);
    tcase_add_loop_test(tc, truncated_older_block, 0, 8);
    tcase_add_loop_test(tc, zeroed_range, 0, 8);
    tcase_add_loop_test(tc, stray_files, 0, 8);
    tcase_add_loop_test(tc, random_damage_never_returns_wrong_data, 0, 8);
    tcase_add_loop_test(tc, tampered_encrypted_blocks, 0, 4);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
