/*
 * fixture — opening stores for the store tests: the same behaviour is checked against the
 * memory store and the file store (plain, lz4, encrypted, both) on the simulated vfs.
 */
#ifndef JR_TEST_STORE_FIXTURE_H
#define JR_TEST_STORE_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "store/store.h"
#include "vfs/memfs.h"

enum { CONF_MEMORY, CONF_FILE, CONF_FILE_LZ4, CONF_FILE_ENC, CONF_FILE_LZ4_ENC, NCONF };

static const char *const conf_names[NCONF] = {"memory", "file", "file+lz4", "file+enc",
                                              "file+lz4+enc"};

static const uint8_t test_master_key[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                            12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                            23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

typedef struct fx {
    int conf;
    jr_vfs *vfs;
    jr__store_config cfg;
    jr__store *st;
    char err[512];
} fx;

static inline void fx_config(fx *f, int conf, uint64_t block_bytes)
{
    memset(&f->cfg, 0, sizeof f->cfg);
    f->conf = conf;
    f->cfg.kind = conf == CONF_MEMORY ? JR__STORE_MEMORY : JR__STORE_FILE;
    f->cfg.name = "ORDERS";
    f->cfg.vfs = f->vfs;
    f->cfg.dir = "/store";
    f->cfg.block_bytes = block_bytes;
    f->cfg.compress = conf == CONF_FILE_LZ4 || conf == CONF_FILE_LZ4_ENC;
    f->cfg.master_key = conf == CONF_FILE_ENC || conf == CONF_FILE_LZ4_ENC ? test_master_key : NULL;
}

static inline int fx_open(fx *f)
{
    return jr__store_open(&f->cfg, &f->st, f->err, sizeof f->err);
}

/* A fresh memfs and store of configuration conf with small blocks (so rotation happens). */
static inline void fx_init(fx *f, int conf, const jr__store_limits *lim, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    ck_assert_int_eq(jr__memfs_new(NULL, seed, &f->vfs), 0);
    ck_assert_int_eq(f->vfs->mkdir(f->vfs->ctx, "/store"), 0);
    fx_config(f, conf, 4096);
    if (lim) f->cfg.limits = *lim;
    int rc = fx_open(f);
    ck_assert_msg(rc == 0, "open %s: %s (%s)", conf_names[conf], jr_strerror(rc), f->err);
}

/* Closes and reopens a persistent store (a no-op for the memory store). */
static inline void fx_cycle(fx *f)
{
    if (f->conf == CONF_MEMORY) return;
    ck_assert_int_eq(jr__store_close(f->st), 0);
    f->st = NULL;
    int rc = fx_open(f);
    ck_assert_msg(rc == 0, "reopen %s: %s (%s)", conf_names[f->conf], jr_strerror(rc), f->err);
}

static inline void fx_done(fx *f)
{
    if (f->st) jr__store_close(f->st);
    f->st = NULL;
    jr__memfs_free(f->vfs);
}

#endif
