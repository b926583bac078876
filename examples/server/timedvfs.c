/*
 * timedvfs.c — the sync-timing vfs (see timedvfs.h).
 */
#include "timedvfs.h"

#include <stddef.h>

#include <uv.h>

const uint64_t fsync_bounds_ns[FSYNC_BUCKETS - 1] = {
    50000,    100000,   250000,   500000,    1000000,   2500000,   5000000,
    10000000, 25000000, 50000000, 100000000, 250000000, 500000000, 1000000000};

#define BASE(ctx) (((timedvfs *)(ctx))->base)

static int t_open(void *ctx, const char *path, int flags, jr_file **out)
{
    return BASE(ctx)->open(BASE(ctx)->ctx, path, flags, out);
}

static int t_close(void *ctx, jr_file *f)
{
    return BASE(ctx)->close(BASE(ctx)->ctx, f);
}

static int t_pread(void *ctx, jr_file *f, void *buf, size_t len, uint64_t off, size_t *nread)
{
    return BASE(ctx)->pread(BASE(ctx)->ctx, f, buf, len, off, nread);
}

static int t_pwrite(void *ctx, jr_file *f, const void *buf, size_t len, uint64_t off)
{
    return BASE(ctx)->pwrite(BASE(ctx)->ctx, f, buf, len, off);
}

static int t_sync(void *ctx, jr_file *f)
{
    timedvfs *t = ctx;
    uint64_t t0 = uv_hrtime();
    int rc = t->base->sync(t->base->ctx, f);
    uint64_t ns = uv_hrtime() - t0;
    size_t b = 0;
    while (b < FSYNC_BUCKETS - 1 && ns > fsync_bounds_ns[b]) b++;
    atomic_fetch_add_explicit(&t->bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->sum_ns, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->count, 1, memory_order_relaxed);
    return rc;
}

static int t_size(void *ctx, jr_file *f, uint64_t *out)
{
    return BASE(ctx)->size(BASE(ctx)->ctx, f, out);
}

static int t_truncate(void *ctx, jr_file *f, uint64_t size)
{
    return BASE(ctx)->truncate(BASE(ctx)->ctx, f, size);
}

static int t_rename(void *ctx, const char *from, const char *to)
{
    return BASE(ctx)->rename(BASE(ctx)->ctx, from, to);
}

static int t_remove(void *ctx, const char *path)
{
    return BASE(ctx)->remove(BASE(ctx)->ctx, path);
}

static int t_mkdir(void *ctx, const char *path)
{
    return BASE(ctx)->mkdir(BASE(ctx)->ctx, path);
}

static int t_list(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg)
{
    return BASE(ctx)->list(BASE(ctx)->ctx, dir, cb, arg);
}

static int t_sync_dir(void *ctx, const char *dir)
{
    return BASE(ctx)->sync_dir(BASE(ctx)->ctx, dir);
}

static int t_writeback(void *ctx, jr_file *f, uint64_t off, uint64_t len)
{
    return BASE(ctx)->writeback(BASE(ctx)->ctx, f, off, len);
}

jr_vfs *timedvfs_init(timedvfs *t, const jr_vfs *base)
{
    t->base = base;
    t->vfs = (jr_vfs){.version = base->version,
                      .ctx = t,
                      .open = t_open,
                      .close = t_close,
                      .pread = t_pread,
                      .pwrite = t_pwrite,
                      .sync = t_sync,
                      .size = t_size,
                      .truncate = t_truncate,
                      .rename = t_rename,
                      .remove = t_remove,
                      .mkdir = t_mkdir,
                      .list = t_list,
                      .sync_dir = t_sync_dir,
                      .writeback = base->version >= 2 && base->writeback ? t_writeback : NULL};
    for (size_t i = 0; i < FSYNC_BUCKETS; i++) atomic_init(&t->bucket[i], 0);
    atomic_init(&t->count, 0);
    atomic_init(&t->sum_ns, 0);
    return &t->vfs;
}

void timedvfs_stats(timedvfs *t, fsync_stats *out)
{
    for (size_t i = 0; i < FSYNC_BUCKETS; i++)
        out->bucket[i] = atomic_load_explicit(&t->bucket[i], memory_order_relaxed);
    out->count = atomic_load_explicit(&t->count, memory_order_relaxed);
    out->sum_ns = atomic_load_explicit(&t->sum_ns, memory_order_relaxed);
}
