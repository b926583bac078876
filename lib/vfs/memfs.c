/*
 * memfs — the simulated, in-memory jr_vfs (see memfs.h for the model).
 *
 * Layout: a chained hash table of names (path -> current inode, durable inode, or directory),
 * inodes whose bytes are chunked images (image.h, one chunk pool per memfs) with an undo log of
 * unsynced operations, a list of open handles, and a small table of scheduled failures.
 * Invariant kept by every length change (set_len): the bytes of an inode's image beyond its
 * length are zero, so growing a file needs no memset and undoing a write only has to restore
 * the bytes it overwrote.
 */
#include "vfs/memfs.h"
#include "vfs/image.h"

#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/checksum.h"
#include "util/rand.h"

#define MEMFS_MAGIC 0x6a726d656d667331ULL /* "jrmemfs1" */
#define MAX_FILE ((uint64_t)1 << 40)
#define MAX_FAULTS 16
#define POOL_CHUNKS 4096 /* spare chunks kept for reuse: 256 MiB */

enum { UNDO_WRITE = 1, UNDO_TRUNC = 2 };

typedef struct undo {
    int kind;
    uint64_t off;     /* write: offset; truncate: the new length */
    uint64_t len;     /* write: length */
    uint64_t old_len; /* file length before the operation */
    uint8_t *saved;   /* overwritten bytes: write [off, min(off+len, old_len)); truncate
                         [new, old_len) when shrinking */
    uint64_t saved_len;
} undo;

typedef struct inode {
    uint64_t refs; /* current bindings + durable bindings + handles */
    jr__image img;
    uint64_t len;
    undo *log;
    size_t nlog, caplog;
    char *path; /* last name bound to it (for prefixes); owned */
    uint64_t epoch;
} inode;

typedef struct name {
    struct name *next;
    uint64_t hash;
    char *path;
    inode *cur, *dur;
    int is_dir;
} name;

typedef struct handle {
    struct handle *prev, *next;
    inode *ino;
    int stale;
} handle;

typedef struct fault {
    int active;
    int op;
    uint64_t left; /* matching calls until it fires (1 = the next) */
    int err;
    int sticky;
    char *prefix;
} fault;

typedef struct memfs {
    jr_vfs vfs; /* first member: a jr_vfs * is a memfs * */
    uint64_t magic;
    const jr_allocator *alloc;
    jr__rand rng;
    name **buckets;
    size_t nbuckets, nnames;
    handle *handles;
    fault faults[MAX_FAULTS];
    uint64_t capacity, epoch;
    jr__memfs_stats st;
    jr__chunk_pool pool;
} memfs;

static int m_open(void *ctx, const char *path, int flags, jr_file **out);

/* ---------------------------------------------------------------------------------------------
 * Names
 */
static uint64_t hash_path(const char *p)
{
    return jr__xxh3(p, strlen(p));
}

static name *lookup(const memfs *m, const char *path)
{
    uint64_t h = hash_path(path);
    for (name *n = m->buckets[h & (m->nbuckets - 1)]; n; n = n->next)
        if (n->hash == h && !strcmp(n->path, path)) return n;
    return NULL;
}

static int grow_table(memfs *m)
{
    size_t nb = m->nbuckets * 2;
    name **b = jr__calloc(m->alloc, nb, sizeof *b);
    if (!b) return JR_ENOMEM;
    for (size_t i = 0; i < m->nbuckets; i++) {
        name *n = m->buckets[i];
        while (n) {
            name *next = n->next;
            n->next = b[n->hash & (nb - 1)];
            b[n->hash & (nb - 1)] = n;
            n = next;
        }
    }
    jr__free(m->alloc, m->buckets);
    m->buckets = b;
    m->nbuckets = nb;
    return 0;
}

static name *insert(memfs *m, const char *path)
{
    if (m->nnames >= m->nbuckets && grow_table(m)) return NULL;
    name *n = jr__calloc(m->alloc, 1, sizeof *n);
    if (!n) return NULL;
    n->path = jr__strdup(m->alloc, path);
    if (!n->path) {
        jr__free(m->alloc, n);
        return NULL;
    }
    n->hash = hash_path(path);
    n->next = m->buckets[n->hash & (m->nbuckets - 1)];
    m->buckets[n->hash & (m->nbuckets - 1)] = n;
    m->nnames++;
    return n;
}

static void unlink_name(memfs *m, name *n)
{
    name **pp = &m->buckets[n->hash & (m->nbuckets - 1)];
    while (*pp != n) pp = &(*pp)->next;
    *pp = n->next;
    m->nnames--;
    jr__free(m->alloc, n->path);
    jr__free(m->alloc, n);
}

/* Is the parent directory of path `dir` (exact string compare after the last '/')? */
static int parent_is(const char *path, const char *dir, size_t dlen)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return dlen == 1 && dir[0] == '.';
    size_t plen = (size_t)(slash - path);
    if (plen == 0) return dlen == 1 && dir[0] == '/'; /* "/x" lives in "/" */
    return plen == dlen && !memcmp(path, dir, dlen);
}

static int is_root(const char *d, size_t n)
{
    return n == 1 && (d[0] == '.' || d[0] == '/');
}

/* Does the parent directory of path exist? */
static int parent_exists(const memfs *m, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return 1;
    size_t n = (size_t)(slash - path);
    char stackbuf[512];
    char *buf = stackbuf;
    int ok;
    if (n + 1 > sizeof stackbuf) {
        buf = jr__malloc(m->alloc, n + 1);
        if (!buf) return 0;
    }
    memcpy(buf, path, n);
    buf[n] = 0;
    const name *d = lookup(m, buf);
    ok = (d && d->is_dir) || is_root(buf, n);
    if (buf != stackbuf) jr__free(m->alloc, buf);
    return ok;
}

/* ---------------------------------------------------------------------------------------------
 * Inodes
 */
static void set_len(memfs *m, inode *ino, uint64_t n)
{
    if (n < ino->len) jr__image_zero(&ino->img, n, ino->len - n);
    m->st.bytes_stored = m->st.bytes_stored - ino->len + n;
    ino->len = n;
}

static inode *inode_new(memfs *m, const char *path)
{
    inode *ino = jr__calloc(m->alloc, 1, sizeof *ino);
    if (!ino) return NULL;
    ino->path = jr__strdup(m->alloc, path);
    if (!ino->path) {
        jr__free(m->alloc, ino);
        return NULL;
    }
    m->st.files++;
    return ino;
}

static void log_clear(memfs *m, inode *ino)
{
    for (size_t i = 0; i < ino->nlog; i++) jr__free(m->alloc, ino->log[i].saved);
    ino->nlog = 0;
}

static void unref(memfs *m, inode *ino)
{
    if (!ino || --ino->refs) return;
    log_clear(m, ino);
    m->st.bytes_stored -= ino->len;
    ino->len = 0;
    jr__image_release(&ino->img, &m->pool);
    jr__free(m->alloc, ino->log);
    jr__free(m->alloc, ino->path);
    jr__free(m->alloc, ino);
    m->st.files--;
}

static void ref(inode *ino)
{
    if (ino) ino->refs++;
}

static void bind(memfs *m, inode **slot, inode *ino)
{
    ref(ino);
    unref(m, *slot);
    *slot = ino;
}

static int set_path(memfs *m, inode *ino, const char *path)
{
    char *p = jr__strdup(m->alloc, path);
    if (!p) return JR_ENOMEM;
    jr__free(m->alloc, ino->path);
    ino->path = p;
    return 0;
}

/* Appends an undo record saving [from, to) of the current image. */
static int log_push(memfs *m, inode *ino, int kind, uint64_t off, uint64_t len, uint64_t from,
                    uint64_t to)
{
    undo u = {kind, off, len, ino->len, NULL, 0};
    if (ino->nlog == ino->caplog) {
        size_t nc = ino->caplog ? ino->caplog * 2 : 8;
        undo *l = jr__realloc(m->alloc, ino->log, nc * sizeof *l);
        if (!l) return JR_ENOMEM;
        ino->log = l;
        ino->caplog = nc;
    }
    if (to > from) {
        u.saved = jr__malloc(m->alloc, (size_t)(to - from));
        if (!u.saved) return JR_ENOMEM;
        jr__image_read(&ino->img, from, u.saved, to - from);
        u.saved_len = to - from;
    }
    ino->log[ino->nlog++] = u;
    return 0;
}

static int do_write(memfs *m, inode *ino, const void *buf, uint64_t len, uint64_t off)
{
    int rc;
    if (off > MAX_FILE || len > MAX_FILE - off) return JR_ENOSPC;
    uint64_t end = off + len;
    uint64_t nl = end > ino->len ? end : ino->len;
    if (nl > ino->len && m->st.bytes_stored - ino->len + nl > m->capacity) return JR_ENOSPC;
    if ((rc = jr__image_reserve(&ino->img, &m->pool, off, len))) return rc;
    uint64_t sv_to = end < ino->len ? end : ino->len;
    if ((rc = log_push(m, ino, UNDO_WRITE, off, len, off, off < sv_to ? sv_to : off))) return rc;
    jr__image_write(&ino->img, off, buf, len);
    set_len(m, ino, nl);
    return 0;
}

static int do_truncate(memfs *m, inode *ino, uint64_t size)
{
    int rc;
    if (size > MAX_FILE) return JR_ENOSPC;
    if (size > ino->len && m->st.bytes_stored - ino->len + size > m->capacity) return JR_ENOSPC;
    if ((rc = log_push(m, ino, UNDO_TRUNC, size, 0, size, size < ino->len ? ino->len : size)))
        return rc;
    set_len(m, ino, size);
    return 0;
}

/* Reverts undo record u; keep > 0 keeps the first `keep` bytes of a write (a torn write). */
static void undo_one(memfs *m, inode *ino, const undo *u, uint64_t keep)
{
    if (u->kind == UNDO_TRUNC) {
        if (u->old_len > ino->len) {
            set_len(m, ino, u->old_len);
            jr__image_write(&ino->img, u->off, u->saved, u->saved_len);
        } else {
            set_len(m, ino, u->old_len);
        }
        return;
    }
    /* a write: restore [off+keep, off+saved_len) and the old length (or the torn end) */
    if (keep < u->saved_len)
        jr__image_write(&ino->img, u->off + keep, u->saved + keep, u->saved_len - keep);
    uint64_t nl = u->old_len;
    if (keep && u->off + keep > nl) nl = u->off + keep;
    set_len(m, ino, nl);
}

static void crash_inode(memfs *m, inode *ino, int torn)
{
    size_t keep = 0;
    if (ino->epoch == m->epoch) return;
    ino->epoch = m->epoch;
    if (torn && ino->nlog) keep = (size_t)jr__rand_below(&m->rng, ino->nlog + 1);
    for (size_t i = ino->nlog; i > keep; i--) undo_one(m, ino, &ino->log[i - 1], 0);
    if (keep) {
        const undo *u = &ino->log[keep - 1];
        if (u->kind == UNDO_WRITE && u->len) {
            uint64_t cut = jr__rand_below(&m->rng, u->len + 1);
            if (cut < u->len) undo_one(m, ino, u, cut);
        }
    }
    log_clear(m, ino);
}

/* ---------------------------------------------------------------------------------------------
 * Scheduled failures and counters
 */
static int prefixed(const char *path, const char *prefix)
{
    return !prefix || (path && !strncmp(path, prefix, strlen(prefix)));
}

static int check_fault(memfs *m, int op, const char *path)
{
    int rc = 0;
    m->st.ops[op]++;
    for (int i = 0; i < MAX_FAULTS; i++) {
        fault *f = &m->faults[i];
        if (!f->active || (f->op != op && f->op != JR__MEMFS_ANY) || !prefixed(path, f->prefix))
            continue;
        if (f->left > 1) {
            f->left--;
            continue;
        }
        if (!rc) rc = f->err;
        if (!f->sticky) {
            jr__free(m->alloc, f->prefix);
            memset(f, 0, sizeof *f);
        }
    }
    if (rc) m->st.faults++;
    return rc;
}

static memfs *M(void *ctx)
{
    return (memfs *)ctx;
}

static handle *H(jr_file *f)
{
    return (handle *)(void *)f;
}

/* Common prologue of every operation on a handle. */
static int file_op(memfs *m, handle *h, int op)
{
    if (h->stale) {
        m->st.ops[op]++;
        return JR_EIO;
    }
    return check_fault(m, op, h->ino->path);
}

/* ---------------------------------------------------------------------------------------------
 * jr_vfs methods
 */
static int m_open(void *ctx, const char *path, int flags, jr_file **out)
{
    memfs *m = M(ctx);
    int rc;
    *out = NULL;
    if ((rc = check_fault(m, JR__MEMFS_OPEN, path))) return rc;
    if (!path[0]) return JR_EINVAL;
    name *n = lookup(m, path);
    if (n && n->is_dir) return JR_EIO;
    handle *h = jr__calloc(m->alloc, 1, sizeof *h);
    if (!h) return JR_ENOMEM;
    if (n && n->cur) {
        if ((flags & JR_O_CREATE) && (flags & JR_O_EXCL)) {
            jr__free(m->alloc, h);
            return JR_EEXIST;
        }
        if ((flags & JR_O_TRUNCATE) && n->cur->len && (rc = do_truncate(m, n->cur, 0))) {
            jr__free(m->alloc, h);
            return rc;
        }
        h->ino = n->cur;
    } else {
        if (!(flags & JR_O_CREATE) || !parent_exists(m, path)) {
            jr__free(m->alloc, h);
            return JR_ENOTFOUND;
        }
        inode *ino = inode_new(m, path);
        if (!ino || (!n && !(n = insert(m, path)))) {
            if (ino) {
                ino->refs = 1;
                unref(m, ino);
            }
            jr__free(m->alloc, h);
            return JR_ENOMEM;
        }
        bind(m, &n->cur, ino);
        h->ino = ino;
    }
    ref(h->ino);
    h->next = m->handles;
    if (m->handles) m->handles->prev = h;
    m->handles = h;
    m->st.handles++;
    *out = (jr_file *)(void *)h;
    return 0;
}

static int m_close(void *ctx, jr_file *f)
{
    memfs *m = M(ctx);
    if (!f) return 0;
    handle *h = m->handles;
    while (h && h != H(f)) h = h->next; /* compares pointers only: f may be freed already */
    if (!h) {
        m->st.bad_handles++;
        return JR_EINVAL;
    }
    int rc = h->stale ? 0 : check_fault(m, JR__MEMFS_CLOSE, h->ino->path);
    if (h->prev)
        h->prev->next = h->next;
    else
        m->handles = h->next;
    if (h->next) h->next->prev = h->prev;
    unref(m, h->ino);
    jr__free(m->alloc, h);
    m->st.handles--;
    return rc;
}

static int m_pread(void *ctx, jr_file *f, void *buf, size_t len, uint64_t off, size_t *nread)
{
    memfs *m = M(ctx);
    handle *h = H(f);
    int rc;
    *nread = 0;
    if ((rc = file_op(m, h, JR__MEMFS_PREAD))) return rc;
    if (off >= h->ino->len) return 0;
    uint64_t n = h->ino->len - off;
    if (n > len) n = len;
    jr__image_read(&h->ino->img, off, buf, n);
    *nread = (size_t)n;
    m->st.bytes_read += n;
    return 0;
}

static int m_pwrite(void *ctx, jr_file *f, const void *buf, size_t len, uint64_t off)
{
    memfs *m = M(ctx);
    handle *h = H(f);
    int rc;
    if ((rc = file_op(m, h, JR__MEMFS_PWRITE))) return rc;
    if ((rc = do_write(m, h->ino, buf, len, off))) return rc;
    m->st.writes++;
    m->st.bytes_written += len;
    return 0;
}

static int m_sync(void *ctx, jr_file *f)
{
    memfs *m = M(ctx);
    handle *h = H(f);
    int rc;
    if ((rc = file_op(m, h, JR__MEMFS_SYNC))) return rc;
    log_clear(m, h->ino);
    m->st.syncs++;
    return 0;
}

static int m_writeback(void *ctx, jr_file *f, uint64_t off, uint64_t len)
{
    memfs *m = M(ctx);
    handle *h = H(f);
    int rc;
    if ((rc = file_op(m, h, JR__MEMFS_WRITEBACK))) return rc;
    return off > MAX_FILE || len > MAX_FILE - off ? JR_EINVAL : 0;
}

static int m_size(void *ctx, jr_file *f, uint64_t *out)
{
    memfs *m = M(ctx);
    handle *h = H(f);
    int rc;
    if ((rc = file_op(m, h, JR__MEMFS_SIZE))) return rc;
    *out = h->ino->len;
    return 0;
}

static int m_truncate(void *ctx, jr_file *f, uint64_t size)
{
    memfs *m = M(ctx);
    handle *h = H(f);
    int rc;
    if ((rc = file_op(m, h, JR__MEMFS_TRUNCATE))) return rc;
    return do_truncate(m, h->ino, size);
}

static int m_rename(void *ctx, const char *from, const char *to)
{
    memfs *m = M(ctx);
    int rc;
    if ((rc = check_fault(m, JR__MEMFS_RENAME, from))) return rc;
    name *a = lookup(m, from);
    if (!a || a->is_dir || !a->cur) return JR_ENOTFOUND;
    if (!parent_exists(m, to)) return JR_ENOTFOUND;
    if (!strcmp(from, to)) return 0;
    name *b = lookup(m, to);
    if (b && b->is_dir) return JR_EIO;
    if (!b && !(b = insert(m, to))) return JR_ENOMEM;
    inode *ino = a->cur;
    if ((rc = set_path(m, ino, to))) return rc;
    bind(m, &b->cur, ino);
    bind(m, &b->dur, ino);
    bind(m, &a->cur, NULL);
    bind(m, &a->dur, NULL);
    unlink_name(m, a);
    return 0;
}

static int has_children(const memfs *m, const char *dir)
{
    size_t dl = strlen(dir);
    for (size_t i = 0; i < m->nbuckets; i++)
        for (const name *n = m->buckets[i]; n; n = n->next)
            if ((n->cur || n->dur || n->is_dir) && parent_is(n->path, dir, dl)) return 1;
    return 0;
}

static int m_remove(void *ctx, const char *path)
{
    memfs *m = M(ctx);
    int rc;
    if ((rc = check_fault(m, JR__MEMFS_REMOVE, path))) return rc;
    name *n = lookup(m, path);
    if (!n || (!n->is_dir && !n->cur)) return JR_ENOTFOUND;
    if (n->is_dir) {
        if (has_children(m, path)) return JR_EIO;
        unlink_name(m, n);
        return 0;
    }
    bind(m, &n->cur, NULL);
    bind(m, &n->dur, NULL);
    unlink_name(m, n);
    return 0;
}

static int m_mkdir(void *ctx, const char *path)
{
    memfs *m = M(ctx);
    int rc;
    if ((rc = check_fault(m, JR__MEMFS_MKDIR, path))) return rc;
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    if (len == 0) return JR_EINVAL;
    char *buf = jr__malloc(m->alloc, len + 1);
    if (!buf) return JR_ENOMEM;
    memcpy(buf, path, len);
    buf[len] = 0;
    rc = 0;
    for (size_t i = 1; i <= len && !rc; i++) {
        if (i < len && buf[i] != '/') continue;
        char save = buf[i];
        buf[i] = 0;
        if (!is_root(buf, i)) {
            name *n = lookup(m, buf);
            if (n && !n->is_dir && n->cur)
                rc = JR_EEXIST;
            else if (!n && !(n = insert(m, buf)))
                rc = JR_ENOMEM;
            else
                n->is_dir = 1;
        }
        buf[i] = save;
    }
    jr__free(m->alloc, buf);
    return rc;
}

static int m_list(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg)
{
    memfs *m = M(ctx);
    int rc;
    if ((rc = check_fault(m, JR__MEMFS_LIST, dir))) return rc;
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    char *d = jr__malloc(m->alloc, dl + 1);
    if (!d) return JR_ENOMEM;
    memcpy(d, dir, dl);
    d[dl] = 0;
    const name *dn = lookup(m, d);
    if (!is_root(d, dl) && !(dn && dn->is_dir)) {
        jr__free(m->alloc, d);
        return JR_ENOTFOUND;
    }
    /* snapshot the names first: cb may create or remove files */
    size_t cnt = 0, k = 0;
    for (size_t i = 0; i < m->nbuckets; i++)
        for (const name *n = m->buckets[i]; n; n = n->next)
            if ((n->cur || n->is_dir) && parent_is(n->path, d, dl)) cnt++;
    char **names = jr__calloc(m->alloc, cnt ? cnt : 1, sizeof *names);
    if (!names) {
        jr__free(m->alloc, d);
        return JR_ENOMEM;
    }
    for (size_t i = 0; i < m->nbuckets && !rc; i++)
        for (const name *n = m->buckets[i]; n && !rc; n = n->next)
            if ((n->cur || n->is_dir) && parent_is(n->path, d, dl)) {
                const char *s = strrchr(n->path, '/');
                names[k] = jr__strdup(m->alloc, s ? s + 1 : n->path);
                if (!names[k++]) rc = JR_ENOMEM;
            }
    for (size_t i = 0; i < k && !rc; i++) rc = cb(arg, names[i]);
    for (size_t i = 0; i < k; i++) jr__free(m->alloc, names[i]);
    jr__free(m->alloc, names);
    jr__free(m->alloc, d);
    return rc;
}

static int m_sync_dir(void *ctx, const char *dir)
{
    memfs *m = M(ctx);
    int rc;
    if ((rc = check_fault(m, JR__MEMFS_SYNC_DIR, dir))) return rc;
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    const name *dn = NULL;
    {
        char *d = jr__malloc(m->alloc, dl + 1);
        if (!d) return JR_ENOMEM;
        memcpy(d, dir, dl);
        d[dl] = 0;
        dn = lookup(m, d);
        jr__free(m->alloc, d);
    }
    if (!is_root(dir, dl) && !(dn && dn->is_dir)) return JR_ENOTFOUND;
    for (size_t i = 0; i < m->nbuckets; i++)
        for (name *n = m->buckets[i]; n; n = n->next)
            if (!n->is_dir && parent_is(n->path, dir, dl)) bind(m, &n->dur, n->cur);
    m->st.dir_syncs++;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Lifecycle, crash, fault injection
 */
int jr__memfs_new(const jr_allocator *alloc, uint64_t seed, jr_vfs **out)
{
    memfs *m = jr__calloc(alloc, 1, sizeof *m);
    *out = NULL;
    if (!m) return JR_ENOMEM;
    m->alloc = alloc;
    jr__chunk_pool_init(&m->pool, alloc, POOL_CHUNKS);
    m->magic = MEMFS_MAGIC;
    m->nbuckets = 64;
    m->buckets = jr__calloc(alloc, m->nbuckets, sizeof *m->buckets);
    if (!m->buckets) {
        jr__free(alloc, m);
        return JR_ENOMEM;
    }
    jr__rand_seed(&m->rng, seed);
    m->capacity = UINT64_MAX;
    m->vfs = (jr_vfs){.version = JR_VFS_VERSION,
                      .ctx = m,
                      .open = m_open,
                      .close = m_close,
                      .pread = m_pread,
                      .pwrite = m_pwrite,
                      .sync = m_sync,
                      .size = m_size,
                      .truncate = m_truncate,
                      .rename = m_rename,
                      .remove = m_remove,
                      .mkdir = m_mkdir,
                      .list = m_list,
                      .sync_dir = m_sync_dir,
                      .writeback = m_writeback};
    *out = &m->vfs;
    return 0;
}

int jr__memfs_is(const jr_vfs *vfs)
{
    return vfs && vfs->open == m_open && ((const memfs *)vfs)->magic == MEMFS_MAGIC;
}

void jr__memfs_free(jr_vfs *vfs)
{
    if (!vfs) return;
    memfs *m = M(vfs->ctx);
    while (m->handles) m_close(m, (jr_file *)(void *)m->handles);
    for (size_t i = 0; i < m->nbuckets; i++) {
        while (m->buckets[i]) {
            name *n = m->buckets[i];
            bind(m, &n->cur, NULL);
            bind(m, &n->dur, NULL);
            unlink_name(m, n);
        }
    }
    jr__memfs_fail_clear(vfs);
    jr__chunk_pool_free(&m->pool);
    jr__free(m->alloc, m->buckets);
    jr__free(m->alloc, m);
}

void jr__memfs_crash_under(jr_vfs *vfs, const char *prefix, int torn)
{
    memfs *m = M(vfs->ctx);
    m->epoch++;
    m->st.crashes++;
    /* names visit inodes in hash order, which depends only on the paths: deterministic */
    for (size_t i = 0; i < m->nbuckets; i++)
        for (name *n = m->buckets[i]; n; n = n->next) {
            if (n->is_dir || !prefixed(n->path, prefix)) continue;
            if (n->cur) crash_inode(m, n->cur, torn);
            if (n->dur) crash_inode(m, n->dur, torn);
        }
    for (handle *h = m->handles; h; h = h->next)
        if (prefixed(h->ino->path, prefix)) {
            h->stale = 1;
            crash_inode(m, h->ino, 0);
        }
    for (size_t i = 0; i < m->nbuckets; i++) {
        name *n = m->buckets[i];
        while (n) {
            name *next = n->next;
            if (!n->is_dir && prefixed(n->path, prefix)) {
                bind(m, &n->cur, n->dur);
                if (n->dur && set_path(m, n->dur, n->path)) {
                    /* out of memory keeping the name: the inode keeps its older path */
                }
                if (!n->cur) unlink_name(m, n);
            }
            n = next;
        }
    }
}

void jr__memfs_crash(jr_vfs *vfs, int torn)
{
    jr__memfs_crash_under(vfs, NULL, torn);
}

static inode *find_file(memfs *m, const char *path)
{
    name *n = lookup(m, path);
    return n && !n->is_dir ? n->cur : NULL;
}

int jr__memfs_flip_bits(jr_vfs *vfs, const char *path, uint64_t off, uint64_t len, unsigned n)
{
    memfs *m = M(vfs->ctx);
    inode *ino = find_file(m, path);
    if (!ino) return JR_ENOTFOUND;
    if (off >= ino->len) return 0;
    if (len == 0 || len > ino->len - off) len = ino->len - off;
    for (unsigned i = 0; i < n; i++) {
        uint64_t bit = jr__rand_below(&m->rng, len * 8);
        uint64_t at = off + bit / 8;
        if (jr__image_reserve(&ino->img, &m->pool, at, 1)) return JR_ENOMEM;
        *jr__image_at(&ino->img, at) ^= (uint8_t)(1u << (bit % 8));
    }
    return 0;
}

int jr__memfs_truncate(jr_vfs *vfs, const char *path, uint64_t size)
{
    memfs *m = M(vfs->ctx);
    inode *ino = find_file(m, path);
    if (!ino) return JR_ENOTFOUND;
    if (size > MAX_FILE) return JR_ENOSPC;
    set_len(m, ino, size);
    return 0;
}

int jr__memfs_zero(jr_vfs *vfs, const char *path, uint64_t off, uint64_t len)
{
    memfs *m = M(vfs->ctx);
    inode *ino = find_file(m, path);
    if (!ino) return JR_ENOTFOUND;
    if (off >= ino->len) return 0;
    if (len > ino->len - off) len = ino->len - off;
    jr__image_zero(&ino->img, off, len);
    return 0;
}

int jr__memfs_read_all(jr_vfs *vfs, const char *path, uint8_t **data, size_t *len)
{
    memfs *m = M(vfs->ctx);
    inode *ino = find_file(m, path);
    *data = NULL;
    *len = 0;
    if (!ino) return JR_ENOTFOUND;
    *data = jr__malloc(m->alloc, (size_t)ino->len);
    if (!*data) return JR_ENOMEM;
    jr__image_read(&ino->img, 0, *data, ino->len);
    *len = (size_t)ino->len;
    return 0;
}

void jr__memfs_release(jr_vfs *vfs, void *p)
{
    jr__free(M(vfs->ctx)->alloc, p);
}

int jr__memfs_fail(jr_vfs *vfs, int op, uint64_t nth, int err, int sticky, const char *prefix)
{
    memfs *m = M(vfs->ctx);
    if (op < 0 || (op >= JR__MEMFS_NOPS && op != JR__MEMFS_ANY) || nth == 0 || err >= 0)
        return JR_EINVAL;
    for (int i = 0; i < MAX_FAULTS; i++) {
        fault *f = &m->faults[i];
        if (f->active) continue;
        if (prefix && !(f->prefix = jr__strdup(m->alloc, prefix))) return JR_ENOMEM;
        f->active = 1;
        f->op = op;
        f->left = nth;
        f->err = err;
        f->sticky = sticky;
        return 0;
    }
    return JR_EBUSY;
}

void jr__memfs_fail_clear(jr_vfs *vfs)
{
    memfs *m = M(vfs->ctx);
    for (int i = 0; i < MAX_FAULTS; i++) {
        jr__free(m->alloc, m->faults[i].prefix);
        memset(&m->faults[i], 0, sizeof m->faults[i]);
    }
}

void jr__memfs_set_capacity(jr_vfs *vfs, uint64_t bytes)
{
    M(vfs->ctx)->capacity = bytes;
}

void jr__memfs_stats_get(const jr_vfs *vfs, jr__memfs_stats *out)
{
    *out = ((const memfs *)vfs->ctx)->st;
}

int jr__memfs_file_size(jr_vfs *vfs, const char *path, uint64_t *out)
{
    inode *ino = find_file(M(vfs->ctx), path);
    *out = ino ? ino->len : 0;
    return ino ? 0 : JR_ENOTFOUND;
}

int jr__memfs_delete(jr_vfs *vfs, const char *path)
{
    memfs *m = M(vfs->ctx);
    name *n = lookup(m, path);
    if (!n || n->is_dir || !n->cur) return JR_ENOTFOUND;
    bind(m, &n->cur, NULL);
    bind(m, &n->dur, NULL);
    unlink_name(m, n);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Walking, saving and restoring the files under a prefix
 */
static int cmp_names(const void *a, const void *b)
{
    return strcmp((*(const name *const *)a)->path, (*(const name *const *)b)->path);
}

/* The names under prefix that pass keep(), sorted by path, in *out (caller frees). */
static int collect(memfs *m, const char *prefix, int (*keep)(const name *), name ***out,
                   size_t *count)
{
    size_t cnt = 0, k = 0;
    for (size_t i = 0; i < m->nbuckets; i++)
        for (const name *n = m->buckets[i]; n; n = n->next)
            if (prefixed(n->path, prefix) && keep(n)) cnt++;
    name **v = jr__calloc(m->alloc, cnt ? cnt : 1, sizeof *v);
    if (!v) return JR_ENOMEM;
    for (size_t i = 0; i < m->nbuckets; i++)
        for (name *n = m->buckets[i]; n; n = n->next)
            if (prefixed(n->path, prefix) && keep(n)) v[k++] = n;
    qsort(v, cnt, sizeof *v, cmp_names);
    *out = v;
    *count = cnt;
    return 0;
}

static int keep_current_file(const name *n)
{
    return !n->is_dir && n->cur;
}

static int keep_durable(const name *n)
{
    return n->is_dir || n->dur;
}

int jr__memfs_walk(jr_vfs *vfs, const char *prefix,
                   int (*cb)(void *arg, const char *path, uint64_t size), void *arg)
{
    memfs *m = M(vfs->ctx);
    name **v;
    size_t cnt;
    int rc = collect(m, prefix, keep_current_file, &v, &cnt);
    if (rc) return rc;
    /* copies of the paths and sizes first: cb may change the file system */
    char **paths = jr__calloc(m->alloc, cnt ? cnt : 1, sizeof *paths);
    uint64_t *sizes = jr__calloc(m->alloc, cnt ? cnt : 1, sizeof *sizes);
    if (!paths || !sizes) rc = JR_ENOMEM;
    for (size_t i = 0; i < cnt && !rc; i++) {
        sizes[i] = v[i]->cur->len;
        if (!(paths[i] = jr__strdup(m->alloc, v[i]->path))) rc = JR_ENOMEM;
    }
    jr__free(m->alloc, v);
    for (size_t i = 0; i < cnt && !rc; i++) rc = cb(arg, paths[i], sizes[i]);
    for (size_t i = 0; paths && i < cnt; i++) jr__free(m->alloc, paths[i]);
    jr__free(m->alloc, paths);
    jr__free(m->alloc, sizes);
    return rc;
}

typedef struct copy_file {
    char *path;
    int is_dir;
    uint8_t *data;
    uint64_t len;
} copy_file;

struct jr__memfs_copy {
    const jr_allocator *alloc;
    copy_file *f;
    size_t n;
};

void jr__memfs_copy_free(jr__memfs_copy *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        jr__free(c->alloc, c->f[i].path);
        jr__free(c->alloc, c->f[i].data);
    }
    jr__free(c->alloc, c->f);
    jr__free(c->alloc, c);
}

/* The bytes of ino as of its last completed sync: its image with the undo log reverted, into a
 * new buffer. */
static int durable_bytes(memfs *m, const inode *ino, uint8_t **out, uint64_t *outlen)
{
    uint64_t cap = ino->len, len = ino->len;
    for (size_t i = 0; i < ino->nlog; i++)
        if (ino->log[i].old_len > cap) cap = ino->log[i].old_len;
    if (cap > SIZE_MAX) return JR_ENOMEM;
    uint8_t *b = jr__calloc(m->alloc, 1, cap ? (size_t)cap : 1);
    if (!b) return JR_ENOMEM;
    jr__image_read(&ino->img, 0, b, ino->len);
    for (size_t i = ino->nlog; i > 0; i--) {
        const undo *u = &ino->log[i - 1];
        /* both kinds saved the bytes from off on: a shrinking truncate [new length, old length),
         * a write what it overwrote */
        if (u->saved_len) memcpy(b + u->off, u->saved, (size_t)u->saved_len);
        if (u->old_len < len) memset(b + u->old_len, 0, (size_t)(len - u->old_len));
        len = u->old_len;
    }
    *out = b;
    *outlen = len;
    return 0;
}

int jr__memfs_save(jr_vfs *vfs, const char *prefix, jr__memfs_copy **out)
{
    memfs *m = M(vfs->ctx);
    name **v;
    size_t cnt;
    *out = NULL;
    int rc = collect(m, prefix, keep_durable, &v, &cnt);
    if (rc) return rc;
    jr__memfs_copy *c = jr__calloc(m->alloc, 1, sizeof *c);
    if (c) {
        c->alloc = m->alloc;
        c->f = jr__calloc(m->alloc, cnt ? cnt : 1, sizeof *c->f);
    }
    if (!c || !c->f) rc = JR_ENOMEM;
    for (size_t i = 0; i < cnt && !rc; i++) {
        copy_file *f = &c->f[c->n++];
        f->is_dir = v[i]->is_dir;
        if (!(f->path = jr__strdup(m->alloc, v[i]->path))) rc = JR_ENOMEM;
        if (!rc && !f->is_dir) rc = durable_bytes(m, v[i]->dur, &f->data, &f->len);
    }
    jr__free(m->alloc, v);
    if (rc) {
        jr__memfs_copy_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

static int keep_any(const name *n)
{
    (void)n;
    return 1;
}

int jr__memfs_restore(jr_vfs *vfs, const char *prefix, const jr__memfs_copy *c)
{
    memfs *m = M(vfs->ctx);
    int rc = 0;
    for (size_t i = 0; i < c->n; i++)
        if (!prefixed(c->f[i].path, prefix)) return JR_EINVAL;
    /* everything that can fail first: the new inodes with their bytes, and their names */
    inode **nodes = jr__calloc(m->alloc, c->n ? c->n : 1, sizeof *nodes);
    if (!nodes) return JR_ENOMEM;
    for (size_t i = 0; i < c->n && !rc; i++) {
        const copy_file *f = &c->f[i];
        if (!lookup(m, f->path) && !insert(m, f->path)) rc = JR_ENOMEM;
        if (rc || f->is_dir) continue;
        if (!(nodes[i] = inode_new(m, f->path))) {
            rc = JR_ENOMEM;
            break;
        }
        nodes[i]->refs = 1;
        if ((rc = jr__image_reserve(&nodes[i]->img, &m->pool, 0, f->len))) break;
        jr__image_write(&nodes[i]->img, 0, f->data, f->len);
        set_len(m, nodes[i], f->len);
    }
    name **v = NULL;
    size_t cnt = 0;
    if (!rc) rc = collect(m, prefix, keep_any, &v, &cnt);
    if (rc) {
        for (size_t i = 0; i < c->n; i++) unref(m, nodes[i]);
        jr__free(m->alloc, nodes);
        return rc;
    }
    /* handles of the files replaced see an I/O error, as after a crash */
    for (handle *h = m->handles; h; h = h->next)
        if (prefixed(h->ino->path, prefix)) h->stale = 1;
    /* every name under prefix goes, except those the copy binds again */
    for (size_t i = 0; i < cnt; i++) {
        name *n = v[i];
        bind(m, &n->cur, NULL);
        bind(m, &n->dur, NULL);
        n->is_dir = 0;
    }
    for (size_t i = 0; i < c->n; i++) {
        name *n = lookup(m, c->f[i].path);
        n->is_dir = c->f[i].is_dir;
        if (n->is_dir) continue;
        bind(m, &n->cur, nodes[i]);
        bind(m, &n->dur, nodes[i]);
        unref(m, nodes[i]);
    }
    for (size_t i = 0; i < cnt; i++)
        if (!v[i]->is_dir && !v[i]->cur) unlink_name(m, v[i]);
    jr__free(m->alloc, v);
    jr__free(m->alloc, nodes);
    return 0;
}
