/*
 * powervfs.c — the test-only power-loss vfs (see powervfs.h).
 *
 * Per file path one record: its size at the last completed sync (taken when the first change
 * after a sync arrives), and an undo list of (offset, old bytes) for every range below that
 * size that a write overwrote or a truncate cut since. Writing the undo list back newest first
 * restores each byte to its value at the sync (an older entry for the same byte holds the older
 * value and is written last), and cutting the file to the synced size removes everything
 * appended since. A completed sync empties the list. Records stay while a handle is open or
 * while the file holds unsynced changes (closing a file does not sync it).
 */
#include "powervfs.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct undo {
    uint64_t off;
    size_t len;
    uint8_t *old;
} undo;

typedef struct prec {
    struct prec *next;
    char *path;
    int refs;       /* open handles */
    int dirty;      /* changes since the last completed sync */
    uint64_t dsize; /* the synced size, while dirty */
    undo *u;
    size_t nu, cap;
    uint64_t last_off; /* the newest write, for a torn write at the power cut */
    size_t last_len;
    int last_is_write;
} prec;

typedef struct pfile {
    jr_file *real;
    prec *rec;
} pfile;

typedef struct powervfs {
    jr_vfs vfs;
    jr_vfs *real;
    prec *recs;
    uint64_t rng;
    char name[64];
    uv_signal_t sig;
    uv_timer_t idle;        /* cuts the power if no sync comes within 1 s of the signal */
    int armed;              /* SIGUSR1 came: the power goes at the countdown's end */
    int countdown;          /* syncs still to pass */
    const char *ioerr_path; /* JETRAFT_TEST_IOERR_FILE, or NULL */
    int ioerr;              /* the current enum ioerr_mode */
    uv_timer_t ioerr_poll;
    uint64_t injected; /* calls failed under the current mode */
} powervfs;

/* The I/O-error modes the control file selects (powervfs.h). */
enum ioerr_mode { IOERR_NONE, IOERR_EIO, IOERR_ENOSPC, IOERR_SYNC };

static void power_cut(powervfs *p, const char *when);

/* Counts an injected failure and returns it. */
static int injected(powervfs *p, int rc)
{
    p->injected++;
    return rc;
}

/* Called first by sync: once the signal armed the cut, it happens at one of the next four
 * syncs (chosen at random), before it reaches the disk: the writes it would have covered are
 * lost with everything else unsynced. */
static void maybe_cut(powervfs *p, const char *call)
{
    if (p->armed && p->countdown-- <= 0) power_cut(p, call);
}

static uint64_t next_rand(powervfs *p)
{
    p->rng += 0x9e3779b97f4a7c15u;
    uint64_t z = p->rng;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static prec *find_rec(powervfs *p, const char *path)
{
    for (prec *r = p->recs; r; r = r->next)
        if (!strcmp(r->path, path)) return r;
    return NULL;
}

static void clear_undo(prec *r)
{
    for (size_t i = 0; i < r->nu; i++) free(r->u[i].old);
    r->nu = 0;
    r->dirty = 0;
    r->last_is_write = 0;
}

static void free_rec(powervfs *p, prec *r)
{
    for (prec **pp = &p->recs; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    clear_undo(r);
    free(r->u);
    free(r->path);
    free(r);
}

static void maybe_free(powervfs *p, prec *r)
{
    if (r->refs == 0 && !r->dirty) free_rec(p, r);
}

/* Marks r changed, remembering the synced size on the first change after a sync. */
static int begin_change(powervfs *p, pfile *f)
{
    prec *r = f->rec;
    if (r->dirty) return 0;
    uint64_t size = 0;
    int rc = p->real->size(p->real->ctx, f->real, &size);
    if (rc) return rc;
    r->dsize = size;
    r->dirty = 1;
    return 0;
}

/* Saves the bytes of [off, off + len) that lie below the synced size, as they are now. */
static int save_range(powervfs *p, pfile *f, uint64_t off, uint64_t len)
{
    prec *r = f->rec;
    if (off >= r->dsize || len == 0) return 0;
    uint64_t end = off + len < r->dsize ? off + len : r->dsize;
    size_t n = (size_t)(end - off);
    if (r->nu == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 8;
        undo *u = realloc(r->u, cap * sizeof *u);
        if (!u) return JR_ENOMEM;
        r->u = u;
        r->cap = cap;
    }
    uint8_t *old = malloc(n ? n : 1);
    if (!old) return JR_ENOMEM;
    size_t got = 0;
    int rc = p->real->pread(p->real->ctx, f->real, old, n, off, &got);
    if (rc) {
        free(old);
        return rc;
    }
    /* Bytes past the current end were cut by an earlier truncate, whose entry holds them. */
    r->u[r->nu++] = (undo){.off = off, .len = got, .old = old};
    return 0;
}

static int w_open(void *ctx, const char *path, int flags, jr_file **out)
{
    powervfs *p = ctx;
    if (p->ioerr == IOERR_EIO && (flags & (JR_O_CREATE | JR_O_TRUNCATE)))
        return injected(p, JR_EIO);
    pfile *f = calloc(1, sizeof *f);
    if (!f) return JR_ENOMEM;
    prec *r = find_rec(p, path);
    int fresh = !r;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (r) r->path = strdup(path);
        if (!r || !r->path) {
            free(r);
            free(f);
            return JR_ENOMEM;
        }
    }
    /* O_TRUNCATE cuts an existing file: open without it, record the cut, then cut. */
    int rc = p->real->open(p->real->ctx, path, flags & ~JR_O_TRUNCATE, &f->real);
    if (rc) {
        if (fresh) {
            free(r->path);
            free(r);
        }
        free(f);
        return rc;
    }
    if (fresh) {
        r->next = p->recs;
        p->recs = r;
    }
    r->refs++;
    f->rec = r;
    if (flags & JR_O_TRUNCATE) {
        uint64_t size = 0;
        rc = p->real->size(p->real->ctx, f->real, &size);
        if (!rc && size > 0) {
            rc = begin_change(p, f);
            if (!rc) rc = save_range(p, f, 0, size);
            if (!rc) rc = p->real->truncate(p->real->ctx, f->real, 0);
            r->last_is_write = 0;
        }
        if (rc) {
            p->real->close(p->real->ctx, f->real);
            r->refs--;
            maybe_free(p, r);
            free(f);
            return rc;
        }
    }
    *out = (jr_file *)f;
    return 0;
}

static int w_close(void *ctx, jr_file *jf)
{
    powervfs *p = ctx;
    pfile *f = (pfile *)jf;
    int rc = p->real->close(p->real->ctx, f->real);
    f->rec->refs--;
    maybe_free(p, f->rec);
    free(f);
    return rc;
}

static int w_pread(void *ctx, jr_file *jf, void *buf, size_t len, uint64_t off, size_t *nread)
{
    powervfs *p = ctx;
    return p->real->pread(p->real->ctx, ((pfile *)jf)->real, buf, len, off, nread);
}

/* The error an injected fault gives a write of [off, off + len) to f, or 0. Under `enospc` only
 * a write that would grow the file fails (overwrites in place need no new blocks). */
static int write_fault(powervfs *p, pfile *f, uint64_t off, uint64_t len)
{
    if (p->ioerr == IOERR_EIO) return injected(p, JR_EIO);
    if (p->ioerr != IOERR_ENOSPC) return 0;
    uint64_t size = 0;
    if (p->real->size(p->real->ctx, f->real, &size)) return JR_EIO;
    return off + len > size ? injected(p, JR_ENOSPC) : 0;
}

static int w_pwrite(void *ctx, jr_file *jf, const void *buf, size_t len, uint64_t off)
{
    powervfs *p = ctx;
    pfile *f = (pfile *)jf;
    int rc = write_fault(p, f, off, len);
    if (rc) return rc;
    rc = begin_change(p, f);
    if (!rc) rc = save_range(p, f, off, len);
    if (rc) return rc;
    f->rec->last_off = off;
    f->rec->last_len = len;
    f->rec->last_is_write = 1;
    return p->real->pwrite(p->real->ctx, f->real, buf, len, off);
}

static int w_sync(void *ctx, jr_file *jf)
{
    powervfs *p = ctx;
    maybe_cut(p, "before a sync");
    pfile *f = (pfile *)jf;
    /* A failed sync leaves the file's unsynced state as it was: a power cut still loses what
     * the sync would have covered (the page cache's pages are not on the disk). */
    if (p->ioerr == IOERR_EIO || p->ioerr == IOERR_SYNC) return injected(p, JR_EIO);
    int rc = p->real->sync(p->real->ctx, f->real);
    if (!rc) clear_undo(f->rec);
    return rc;
}

static int w_size(void *ctx, jr_file *jf, uint64_t *out)
{
    powervfs *p = ctx;
    return p->real->size(p->real->ctx, ((pfile *)jf)->real, out);
}

static int w_truncate(void *ctx, jr_file *jf, uint64_t size)
{
    powervfs *p = ctx;
    pfile *f = (pfile *)jf;
    uint64_t cur = 0;
    int rc = p->real->size(p->real->ctx, f->real, &cur);
    if (!rc && p->ioerr == IOERR_EIO) rc = injected(p, JR_EIO);
    if (!rc && p->ioerr == IOERR_ENOSPC && size > cur) rc = injected(p, JR_ENOSPC);
    if (!rc) rc = begin_change(p, f);
    if (!rc && size < cur) rc = save_range(p, f, size, cur - size);
    if (rc) return rc;
    f->rec->last_is_write = 0;
    return p->real->truncate(p->real->ctx, f->real, size);
}

/* path is dir itself or lies under it. */
static size_t under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (strncmp(path, dir, n)) return 0;
    return path[n] == 0 || path[n] == '/' ? n : 0;
}

static int w_rename(void *ctx, const char *from, const char *to)
{
    powervfs *p = ctx;
    if (p->ioerr == IOERR_EIO) return injected(p, JR_EIO);
    int rc = p->real->rename(p->real->ctx, from, to);
    if (rc) return rc;
    /* The replaced file is gone (its unsynced state with it); what moved keeps its own. */
    for (prec *r = p->recs, *next; r; r = next) {
        next = r->next;
        if (under(r->path, to) && !under(r->path, from)) {
            clear_undo(r);
            r->path[0] = 0; /* a handle still open on it writes to a file no name reaches */
            maybe_free(p, r);
        }
    }
    for (prec *r = p->recs; r; r = r->next) {
        size_t n = under(r->path, from);
        if (!n) continue;
        size_t tl = strlen(to), rest = strlen(r->path + n);
        char *np = malloc(tl + rest + 1);
        if (!np) return JR_ENOMEM;
        memcpy(np, to, tl);
        memcpy(np + tl, r->path + n, rest + 1);
        free(r->path);
        r->path = np;
    }
    return 0;
}

static int w_remove(void *ctx, const char *path)
{
    powervfs *p = ctx;
    if (p->ioerr == IOERR_EIO) return injected(p, JR_EIO);
    int rc = p->real->remove(p->real->ctx, path);
    if (rc) return rc;
    for (prec *r = p->recs, *next; r; r = next) {
        next = r->next;
        if (under(r->path, path)) {
            clear_undo(r);
            r->path[0] = 0;
            maybe_free(p, r);
        }
    }
    return 0;
}

static int w_mkdir(void *ctx, const char *path)
{
    powervfs *p = ctx;
    if (p->ioerr == IOERR_EIO) return injected(p, JR_EIO);
    if (p->ioerr == IOERR_ENOSPC) return injected(p, JR_ENOSPC);
    return p->real->mkdir(p->real->ctx, path);
}

static int w_list(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg)
{
    powervfs *p = ctx;
    return p->real->list(p->real->ctx, dir, cb, arg);
}

static int w_sync_dir(void *ctx, const char *dir)
{
    powervfs *p = ctx;
    if (p->ioerr == IOERR_EIO || p->ioerr == IOERR_SYNC) return injected(p, JR_EIO);
    return p->real->sync_dir(p->real->ctx, dir);
}

static int w_writeback(void *ctx, jr_file *f, uint64_t off, uint64_t len)
{
    powervfs *p = ctx;
    return p->real->writeback(p->real->ctx, f, off, len);
}

/* Puts one file back to its synced image (and maybe a torn prefix of its newest write).
 * Returns the bytes of unsynced writes that were lost, roughly: the size change plus the
 * overwritten ranges. */
static uint64_t roll_back(powervfs *p, prec *r, int *torn)
{
    jr_file *fh = NULL;
    if (p->real->open(p->real->ctx, r->path, JR_O_READ, &fh)) return 0;
    uint64_t cur = 0, lost = 0;
    p->real->size(p->real->ctx, fh, &cur);
    uint8_t *keep = NULL;
    size_t keep_len = 0;
    if (r->last_is_write && r->last_len > 0 && (next_rand(p) & 1)) {
        keep_len = (size_t)(next_rand(p) % r->last_len);
        keep = keep_len ? malloc(keep_len) : NULL;
        size_t got = 0;
        if (!keep || p->real->pread(p->real->ctx, fh, keep, keep_len, r->last_off, &got) ||
            got != keep_len) {
            free(keep);
            keep = NULL;
            keep_len = 0;
        }
    }
    for (size_t i = r->nu; i-- > 0;) {
        p->real->pwrite(p->real->ctx, fh, r->u[i].old, r->u[i].len, r->u[i].off);
        lost += r->u[i].len;
    }
    p->real->truncate(p->real->ctx, fh, r->dsize);
    lost += cur > r->dsize ? cur - r->dsize : 0;
    if (keep) {
        p->real->pwrite(p->real->ctx, fh, keep, keep_len, r->last_off);
        *torn += 1;
        free(keep);
    }
    p->real->close(p->real->ctx, fh);
    return lost;
}

/* Puts every file with unsynced changes back to its synced image; counts what it did. */
static int roll_back_all(powervfs *p, uint64_t *lost, int *torn)
{
    int files = 0;
    for (prec *r = p->recs; r; r = r->next) {
        if (!r->dirty) continue;
        *lost += roll_back(p, r, torn);
        clear_undo(r);
        files++;
    }
    return files;
}

int powervfs_roll_back(jr_vfs *vfs)
{
    uint64_t lost = 0;
    int torn = 0;
    return roll_back_all(vfs->ctx, &lost, &torn);
}

static void power_cut(powervfs *p, const char *when)
{
    uint64_t lost = 0;
    int torn = 0;
    int files = roll_back_all(p, &lost, &torn);
    fprintf(stderr,
            "[%s] power cut (%s): %d files rolled back to their last sync (%llu bytes), %d "
            "torn writes\n",
            p->name, when, files, (unsigned long long)lost, torn);
    fflush(stderr);
    _exit(POWERVFS_EXIT);
}

static void on_idle(uv_timer_t *t)
{
    power_cut(t->data, "no sync within 1 s");
}

static void on_signal(uv_signal_t *h, int signum)
{
    (void)signum;
    powervfs *p = h->data;
    if (p->armed) return;
    p->armed = 1;
    p->countdown = (int)(next_rand(p) % 4);
    uv_timer_start(&p->idle, on_idle, 1000, 0);
}

/* Reads the control file: its first word selects the mode; a missing file or an unknown word
 * means none. */
static void ioerr_reread(uv_timer_t *t)
{
    powervfs *p = t->data;
    static const char *const names[] = {"none", "eio", "enospc", "sync"};
    int mode = IOERR_NONE;
    char word[16] = "";
    FILE *f = fopen(p->ioerr_path, "r");
    if (f) {
        if (fscanf(f, "%15s", word) != 1) word[0] = 0;
        fclose(f);
    }
    for (int i = 0; i < 4; i++)
        if (!strcmp(word, names[i])) mode = i;
    if (mode == p->ioerr) return;
    fprintf(stderr, "[%s] test vfs: injected I/O errors: %s (was %s, which failed %llu calls)\n",
            p->name, names[mode], names[p->ioerr], (unsigned long long)p->injected);
    p->ioerr = mode;
    p->injected = 0;
    fflush(stderr);
}

int powervfs_poll_ioerr(jr_vfs *vfs)
{
    powervfs *p = vfs->ctx;
    if (p->ioerr_path) ioerr_reread(&p->ioerr_poll);
    return p->ioerr;
}

jr_vfs *powervfs_open(uv_loop_t *loop, const char *name)
{
    const char *env = getenv("JETRAFT_TEST_POWERLOSS");
    const char *ioerr = getenv("JETRAFT_TEST_IOERR_FILE");
    int power = env && *env;
    if (!power && !(ioerr && *ioerr)) return NULL;
    static powervfs p;
    p.real = jr_vfs_posix();
    p.rng = power ? strtoull(env, NULL, 10) : 0;
    snprintf(p.name, sizeof p.name, "%s", name);
    p.vfs.version = JR_VFS_VERSION;
    p.vfs.ctx = &p;
    p.vfs.open = w_open;
    p.vfs.close = w_close;
    p.vfs.pread = w_pread;
    p.vfs.pwrite = w_pwrite;
    p.vfs.sync = w_sync;
    p.vfs.size = w_size;
    p.vfs.truncate = w_truncate;
    p.vfs.rename = w_rename;
    p.vfs.remove = w_remove;
    p.vfs.mkdir = w_mkdir;
    p.vfs.list = w_list;
    p.vfs.sync_dir = w_sync_dir;
    p.vfs.writeback = w_writeback;
    if (uv_signal_init(loop, &p.sig) || uv_timer_init(loop, &p.idle)) return NULL;
    p.sig.data = p.idle.data = &p;
    if (power) {
        if (uv_signal_start(&p.sig, on_signal, SIGUSR1)) return NULL;
        uv_unref((uv_handle_t *)&p.sig);
        fprintf(stderr, "[%s] test vfs: SIGUSR1 simulates a power cut of this server's files\n",
                name);
    }
    if (ioerr && *ioerr) {
        p.ioerr_path = ioerr;
        if (uv_timer_init(loop, &p.ioerr_poll)) return NULL;
        p.ioerr_poll.data = &p;
        ioerr_reread(&p.ioerr_poll);
        uv_timer_start(&p.ioerr_poll, ioerr_reread, 100, 100);
        uv_unref((uv_handle_t *)&p.ioerr_poll);
        fprintf(stderr, "[%s] test vfs: I/O errors injected as %s says\n", name, ioerr);
    }
    return &p.vfs;
}
