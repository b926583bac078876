/*
 * vfault.c — a jr_vfs that forwards to the fixture's simulated file system and, while a fault
 * is active, makes writes, truncates and syncs fail with JR_EIO or JR_ENOSPC.
 *
 * The fixture's own failure injection is internal, so this wrapper gives the same fault
 * through the public plug-in table: jr_sim_config.configure hands each node this vfs in place
 * of the fixture's. A failed call forwards nothing, so it changes nothing: a failed write
 * writes nothing, a failed sync leaves earlier writes unsynced (a later crash loses them), as a
 * disk that returns an error would. Reads, opens and listings always pass, so that a node can
 * still recover once the fault ends.
 */
#include <string.h>

#include "jsim.h"

static int fails(vfault *v)
{
    if (!v->active) return 0;
    v->calls++;
    if (v->every > 1 && v->calls % v->every != 0) return 0;
    v->failed++;
    return v->err;
}

static int w_open(void *ctx, const char *path, int flags, jr_file **out)
{
    vfault *v = ctx;
    return v->real->open(v->real->ctx, path, flags, out);
}

static int w_close(void *ctx, jr_file *f)
{
    vfault *v = ctx;
    return v->real->close(v->real->ctx, f);
}

static int w_pread(void *ctx, jr_file *f, void *buf, size_t len, uint64_t off, size_t *nread)
{
    vfault *v = ctx;
    return v->real->pread(v->real->ctx, f, buf, len, off, nread);
}

static int w_pwrite(void *ctx, jr_file *f, const void *buf, size_t len, uint64_t off)
{
    vfault *v = ctx;
    int rc = fails(v);
    return rc ? rc : v->real->pwrite(v->real->ctx, f, buf, len, off);
}

static int w_sync(void *ctx, jr_file *f)
{
    vfault *v = ctx;
    int rc = fails(v);
    return rc ? rc : v->real->sync(v->real->ctx, f);
}

static int w_size(void *ctx, jr_file *f, uint64_t *out)
{
    vfault *v = ctx;
    return v->real->size(v->real->ctx, f, out);
}

static int w_truncate(void *ctx, jr_file *f, uint64_t size)
{
    vfault *v = ctx;
    int rc = fails(v);
    return rc ? rc : v->real->truncate(v->real->ctx, f, size);
}

static int w_rename(void *ctx, const char *from, const char *to)
{
    vfault *v = ctx;
    int rc = fails(v);
    return rc ? rc : v->real->rename(v->real->ctx, from, to);
}

static int w_remove(void *ctx, const char *path)
{
    vfault *v = ctx;
    return v->real->remove(v->real->ctx, path);
}

static int w_mkdir(void *ctx, const char *path)
{
    vfault *v = ctx;
    return v->real->mkdir(v->real->ctx, path);
}

static int w_list(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg)
{
    vfault *v = ctx;
    return v->real->list(v->real->ctx, dir, cb, arg);
}

static int w_sync_dir(void *ctx, const char *dir)
{
    vfault *v = ctx;
    int rc = fails(v);
    return rc ? rc : v->real->sync_dir(v->real->ctx, dir);
}

static int w_writeback(void *ctx, jr_file *f, uint64_t off, uint64_t len)
{
    vfault *v = ctx;
    int rc = fails(v);
    return rc ? rc : v->real->writeback(v->real->ctx, f, off, len);
}

void vfault_wrap(vfault *v, jr_vfs *real)
{
    v->real = real;
    v->vfs.version = JR_VFS_VERSION;
    v->vfs.ctx = v;
    v->vfs.open = w_open;
    v->vfs.close = w_close;
    v->vfs.pread = w_pread;
    v->vfs.pwrite = w_pwrite;
    v->vfs.sync = w_sync;
    v->vfs.size = w_size;
    v->vfs.truncate = w_truncate;
    v->vfs.rename = w_rename;
    v->vfs.remove = w_remove;
    v->vfs.mkdir = w_mkdir;
    v->vfs.list = w_list;
    v->vfs.sync_dir = w_sync_dir;
    v->vfs.writeback = w_writeback;
}

void vfault_set(vfault *v, int err, uint64_t every)
{
    v->active = 1;
    v->err = err;
    v->every = every ? every : 1;
    v->calls = 0;
}

void vfault_clear(vfault *v)
{
    v->active = 0;
}
