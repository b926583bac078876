/* host — see host.h. */
#include "host.h"

#include <check.h>

#include <stdlib.h>
#include <string.h>

#include "vfs/memfs.h"

static int h_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt)
{
    t_host *h = ctx;
    h->sends++;
    if (h->nframes == T_MAX_FRAMES) return -1;
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].len;
    t_frame *f = &h->frames[h->nframes++];
    strncpy(f->to, to, sizeof f->to - 1);
    f->to[sizeof f->to - 1] = 0;
    f->data = malloc(len ? len : 1);
    f->len = len;
    size_t off = 0;
    for (int i = 0; i < iovcnt; i++) {
        memcpy(f->data + off, iov[i].base, iov[i].len);
        off += iov[i].len;
    }
    return 0;
}

static uint64_t h_now(void *ctx)
{
    return ((t_host *)ctx)->now;
}

static void h_arm(void *ctx, uint64_t deadline)
{
    t_host *h = ctx;
    h->armed = deadline;
    h->narm++;
}

void t_host_init(t_host *h)
{
    memset(h, 0, sizeof *h);
    h->host.version = JR_HOST_VERSION;
    h->host.ctx = h;
    h->host.send = h_send;
    h->host.now = h_now;
    h->host.arm = h_arm;
    h->now = 1000000000ull;
    h->armed = UINT64_MAX;
    jr__memfs_new(NULL, 1, &h->vfs);
}

void t_config(t_host *h, jr_node_config *cfg, const char *name, const char *const *peers,
              size_t npeers, uint64_t seed)
{
    jr_node_config_init(cfg);
    cfg->name = name;
    cfg->peers = peers;
    cfg->npeers = npeers;
    cfg->wal_dir = "/wal";
    cfg->vfs = h->vfs;
    cfg->host = &h->host;
    cfg->election_timeout_ms = 100;
    cfg->heartbeat_ms = 20;
    cfg->seed = seed;
}

int t_open(t_host *h, const char *name, const char *const *peers, size_t npeers,
           const jr_allocator *alloc)
{
    jr_node_config cfg;
    t_config(h, &cfg, name, peers, npeers, 99);
    cfg.alloc = alloc;
    return jr_node_open(&cfg, &h->node);
}

void t_run_ms(t_host *h, uint64_t ms, int ticks_succeed)
{
    uint64_t end = h->now + ms * 1000000u;
    for (int guard = 0; guard < 100000; guard++) {
        uint64_t d = jr_node_deadline(h->node);
        if (d > end) break;
        if (d > h->now) h->now = d;
        int rc = jr_node_tick(h->node);
        if (ticks_succeed) ck_assert_int_eq(rc, 0);
        if (d == h->now && guard % 64 == 63) h->now += 1000000u; /* never spin on one instant */
    }
    h->now = end;
    t_frames_clear(h);
}

void t_frames_clear(t_host *h)
{
    for (unsigned i = 0; i < h->nframes; i++) free(h->frames[i].data);
    h->nframes = 0;
}

void t_host_free(t_host *h)
{
    jr_node_close(h->node);
    h->node = NULL;
    t_frames_clear(h);
    jr__memfs_free(h->inner ? h->inner : h->vfs);
    h->vfs = h->inner = NULL;
}

static int is_wal(const t_cvfs *c, const jr_file *f)
{
    for (size_t i = 0; i < sizeof c->wal / sizeof c->wal[0]; i++)
        if (c->wal[i] == f) return 1;
    return 0;
}
static int c_open(void *ctx, const char *path, int flags, jr_file **out)
{
    t_cvfs *c = ctx;
    int rc = c->inner->open(c->inner->ctx, path, flags, out);
    size_t n = strlen(path);
    if (!rc && n > 4 && strcmp(path + n - 4, ".wal") == 0)
        for (size_t i = 0; i < sizeof c->wal / sizeof c->wal[0]; i++)
            if (!c->wal[i]) {
                c->wal[i] = *out;
                break;
            }
    return rc;
}
static int c_close(void *ctx, jr_file *f)
{
    t_cvfs *c = ctx;
    for (size_t i = 0; i < sizeof c->wal / sizeof c->wal[0]; i++)
        if (c->wal[i] == f) c->wal[i] = NULL;
    return c->inner->close(c->inner->ctx, f);
}
static int c_pread(void *ctx, jr_file *f, void *buf, size_t len, uint64_t off, size_t *nread)
{
    t_cvfs *c = ctx;
    return c->inner->pread(c->inner->ctx, f, buf, len, off, nread);
}
static int c_pwrite(void *ctx, jr_file *f, const void *buf, size_t len, uint64_t off)
{
    t_cvfs *c = ctx;
    c->writes++;
    c->wal_writes += is_wal(c, f);
    int rc = c->inner->pwrite(c->inner->ctx, f, buf, len, off);
    if (rc == 0) {
        c->bytes += len;
        if (c->on_write) c->on_write(c->arg, buf, len, off);
    }
    return rc;
}
static int c_sync(void *ctx, jr_file *f)
{
    t_cvfs *c = ctx;
    c->syncs++;
    c->wal_syncs += is_wal(c, f);
    return c->inner->sync(c->inner->ctx, f);
}
static int c_size(void *ctx, jr_file *f, uint64_t *out)
{
    t_cvfs *c = ctx;
    return c->inner->size(c->inner->ctx, f, out);
}
static int c_truncate(void *ctx, jr_file *f, uint64_t size)
{
    t_cvfs *c = ctx;
    return c->inner->truncate(c->inner->ctx, f, size);
}
static int c_rename(void *ctx, const char *from, const char *to)
{
    t_cvfs *c = ctx;
    return c->inner->rename(c->inner->ctx, from, to);
}
static int c_remove(void *ctx, const char *path)
{
    t_cvfs *c = ctx;
    return c->inner->remove(c->inner->ctx, path);
}
static int c_mkdir(void *ctx, const char *path)
{
    t_cvfs *c = ctx;
    return c->inner->mkdir(c->inner->ctx, path);
}
static int c_list(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg)
{
    t_cvfs *c = ctx;
    return c->inner->list(c->inner->ctx, dir, cb, arg);
}
static int c_sync_dir(void *ctx, const char *dir)
{
    t_cvfs *c = ctx;
    c->dir_syncs++;
    return c->inner->sync_dir(c->inner->ctx, dir);
}

static int c_writeback(void *ctx, jr_file *f, uint64_t off, uint64_t len)
{
    t_cvfs *c = ctx;
    c->writebacks++;
    c->writeback_bytes += len;
    return c->inner->writeback(c->inner->ctx, f, off, len);
}

void t_cvfs_wrap(t_cvfs *c, t_host *h)
{
    memset(c, 0, sizeof *c);
    c->inner = h->vfs;
    c->vfs = (jr_vfs){.version = JR_VFS_VERSION,
                      .ctx = c,
                      .open = c_open,
                      .close = c_close,
                      .pread = c_pread,
                      .pwrite = c_pwrite,
                      .sync = c_sync,
                      .size = c_size,
                      .truncate = c_truncate,
                      .rename = c_rename,
                      .remove = c_remove,
                      .mkdir = c_mkdir,
                      .list = c_list,
                      .sync_dir = c_sync_dir,
                      .writeback = c_writeback};
    h->inner = h->vfs;
    h->vfs = &c->vfs;
}

static void f_apply(void *ctx, uint64_t index, const void *data, size_t len)
{
    t_fsm *f = ctx;
    (void)data;
    (void)len;
    f->applied++;
    f->last = index;
}

void t_fsm_init(t_fsm *f)
{
    memset(f, 0, sizeof *f);
    f->ops.version = JR_FSM_VERSION;
    f->ops.ctx = f;
    f->ops.apply = f_apply;
}

int t_group(t_host *h, uint64_t id, const char *const *voters, size_t n, t_fsm *f, jr_group **g)
{
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = id;
    gc.voters = voters;
    gc.nvoters = n;
    gc.fsm = &f->ops;
    return jr_group_open(h->node, &gc, g);
}
