/* file_open — opening, recovering and destroying a file store (file.c's header comment: the
 * recovery rules; file_int.h: the layout). */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_int.h"
#include "util/alloc.h"

/* ---------------------------------------------------------------------------------------------
 * Open and recovery
 */

typedef struct scan {
    jr__store *s;
    uint32_t *ids;
    size_t n, cap;
    int rc;
    int destroyed; /* the destroy marker is present */
    char bad[128]; /* first unexpected name (corruption, unless the store is being destroyed) */
} scan;

/* Destroying a store (jr__store_destroy): the marker makes the destruction atomic for readers:
 * once it is durable, an open finishes the job and starts empty. */
#define DESTROY_MARKER "destroyed"

typedef struct rmall {
    jr_vfs *vfs;
    const char *dir;
    int rc;
} rmall;

static int rm_cb(void *arg, const char *name)
{
    rmall *a = arg;
    if (strcmp(name, DESTROY_MARKER) == 0) return 0; /* removed last */
    char path[PATHMAX + 256];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", a->dir, name) >= sizeof path) return JR_EINVAL;
    int rc = a->vfs->remove(a->vfs->ctx, path);
    if (rc && rc != JR_ENOTFOUND && !a->rc) a->rc = rc;
    return 0;
}

/* Removes every file of the store directory sdir (the marker last). 0 or the first error. */
static int remove_contents(jr_vfs *vfs, const char *sdir)
{
    rmall a = {vfs, sdir, 0};
    int rc = vfs->list(vfs->ctx, sdir, rm_cb, &a);
    if (!rc) rc = a.rc;
    if (rc) return rc;
    char path[PATHMAX];
    if (snprintf(path, sizeof path, "%s/%s", sdir, DESTROY_MARKER) >= (int)sizeof path)
        return JR_EINVAL;
    rc = vfs->remove(vfs->ctx, path);
    return rc == JR_ENOTFOUND ? 0 : rc;
}

int jr__store_destroy(jr_vfs *vfs, const char *dir, const char *name)
{
    if (!vfs || !dir || !name || !name[0] || strchr(name, '/')) return JR_EINVAL;
    char sdir[PATHMAX], marker[PATHMAX + 32];
    if ((size_t)snprintf(sdir, sizeof sdir, "%s/%s", dir, name) >= sizeof sdir - 32)
        return JR_EINVAL;
    snprintf(marker, sizeof marker, "%s/%s", sdir, DESTROY_MARKER);
    jr_file *m;
    int rc = vfs->open(vfs->ctx, marker, JR_O_CREATE, &m);
    if (rc == JR_ENOTFOUND) return 0; /* no such store (its directory is missing) */
    if (rc) return rc;
    vfs->close(vfs->ctx, m);
    rc = vfs->sync_dir(vfs->ctx, sdir); /* the marker is durable: the store is gone for good */
    if (!rc) rc = remove_contents(vfs, sdir);
    if (!rc) rc = vfs->remove(vfs->ctx, sdir);
    return rc == JR_ENOTFOUND ? 0 : rc;
}

static int parse_id(const char *name, const char *ext, uint32_t *id)
{
    size_t n = strlen(name), el = strlen(ext);
    if (n != 10 + 1 + el || name[10] != '.' || strcmp(name + 11, ext) != 0) return 0;
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (name[i] < '0' || name[i] > '9') return 0;
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    if (v == 0 || v > UINT32_MAX) return 0;
    *id = (uint32_t)v;
    return 1;
}

static int list_cb(void *arg, const char *name)
{
    scan *sc = arg;
    jr__store *s = sc->s;
    fstore *f = F(s);
    uint32_t id;
    if (strcmp(name, DESTROY_MARKER) == 0) {
        sc->destroyed = 1;
        return 0;
    }
    if (parse_id(name, "tmp", &id)) {
        char path[PATHMAX];
        snprintf(path, sizeof path, "%s/%s", f->dir, name);
        int rc = f->vfs->remove(f->vfs->ctx, path);
        return rc && rc != JR_ENOTFOUND ? rc : 0;
    }
    if (!parse_id(name, "blk", &id)) {
        if (!sc->bad[0]) snprintf(sc->bad, sizeof sc->bad, "%s", name);
        return 0;
    }
    if (sc->n == sc->cap) {
        size_t ncap = sc->cap ? sc->cap * 2 : 64;
        uint32_t *v = jr__realloc(s->alloc, sc->ids, ncap * sizeof *v);
        if (!v) return JR_ENOMEM;
        sc->ids = v;
        sc->cap = ncap;
    }
    sc->ids[sc->n++] = id;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Replays the records of plain[0..n) of block id into the core. */
static int replay(jr__store *s, const char *path, uint32_t id, const uint8_t *plain, size_t n,
                  uint64_t base_off)
{
    jr__srec r;
    size_t len;
    for (size_t off = 0; off < n; off += len) {
        if (jr__srec_decode(plain + off, n - off, 0, &r, &len))
            return jr__store_fail(s, JR_ECORRUPT, "%s: offset %llu: bad record", path,
                                  (unsigned long long)(base_off + off));
        int rc = jr__store_load(s, &r, id, (uint32_t)off, (uint32_t)len);
        if (rc == JR_ECORRUPT) {
            char why[JR__STORE_ERR];
            snprintf(why, sizeof why, "%s", jr__store_errmsg(s));
            return jr__store_fail(s, JR_ECORRUPT, "%s: offset %llu: %s", path,
                                  (unsigned long long)(base_off + off), why);
        }
        if (rc) return rc;
    }
    return 0;
}

/* Reads and decodes block id (last: the newest block, whose damaged tail may be a torn write).
 * On success *fh is its open handle and info describes its valid records (into f->rd->io or
 * f->rd->cache); *torn is 1 if the file has a torn tail after info->good_end, or a torn header
 * (info->kind == 0: nothing valid in it). Any other damage is JR_ECORRUPT. */
static int load_block(jr__store *s, uint32_t id, int last, jr_file **fh, jr__blk_info *info,
                      int *torn)
{
    fstore *f = F(s);
    char path[PATHMAX];
    jr__fstore_path(f, path, sizeof path, id, "blk");
    *torn = 0;
    *fh = NULL;
    if (jr__fstore_rd_get(s)) return JR_ENOMEM;
    int rc = f->vfs->open(f->vfs->ctx, path, JR_O_READ, fh);
    if (rc) return jr__store_fail(s, rc, "%s: open failed: %s", path, jr_strerror(rc));
    rc = jr__fstore_read_all(s, *fh, path, &f->rd->io);
    if (rc) goto out;
    rc = jr__blk_decode(f->rd->io.data, f->rd->io.len, KEY(f), &f->rd->cache, info);
    if (rc == JR_EAUTH || rc == JR_EINVAL) {
        rc = jr__store_fail(s, rc, "%s: %s", path, info->why);
        goto out;
    }
    if (rc && rc != JR_ECORRUPT) goto out;
    if (!rc && info->id != id) {
        rc = jr__store_fail(s, JR_ECORRUPT, "%s: offset 8: block id %u in file of block %u", path,
                            info->id, id);
        goto out;
    }
    if (rc == JR_ECORRUPT) {
        if (last && info->kind == JR__BLK_OPEN && info->id == id)
            *torn = !jr__blk_valid_after(f->rd->io.data, f->rd->io.len, (size_t)info->bad_off, id,
                                         info->flags, KEY(f), &f->rd->tmp);
        else if (last && info->kind == 0 && f->rd->io.len < JR__BLK_OPEN_HDR)
            /* a block created but never synced: its header write was torn, and nothing was
             * written after it (writes persist in order) */
            *torn = 1;
        if (!*torn) {
            rc = jr__store_fail(s, JR_ECORRUPT, "%s: offset %llu: %s", path,
                                (unsigned long long)info->bad_off, info->why);
            goto out;
        }
        if (info->kind == 0) info->plain_len = 0;
        rc = 0;
    }
    return 0;
out:
    f->vfs->close(f->vfs->ctx, *fh);
    *fh = NULL;
    return rc;
}

/* Cuts block id (decoded in info, open at fh) after its first `keep` bytes of records: an open
 * block is truncated (and synced), a sealed one is sealed again (temporary file and rename).
 * info->plain_len and info->good_end are updated. */
static int cut_block(jr__store *s, uint32_t id, jr_file *fh, jr__blk_info *info, size_t keep)
{
    fstore *f = F(s);
    char path[PATHMAX];
    jr__fstore_path(f, path, sizeof path, id, "blk");
    int rc;
    if (info->kind == JR__BLK_SEALED) {
        jr__buf_reset(&f->rd->tmp);
        rc = jr__blk_seal(info->plain, keep, id, info->flags, KEY(f), &f->rd->tmp);
        if (!rc) rc = jr__fstore_replace(s, id, f->rd->tmp.data, f->rd->tmp.len);
        if (rc) return jr__store_fail(s, rc, "%s: cutting after the last mark failed", path);
        info->plain_len = keep;
        info->good_end = f->rd->tmp.len;
        return 0;
    }
    uint64_t end = JR__BLK_OPEN_HDR + (uint64_t)keep;
    if (info->flags & JR__BLKF_ENC) {
        /* one frame per record */
        jr__srec r;
        size_t len;
        for (size_t off = 0; off < keep; off += len) {
            if (jr__srec_decode(info->plain + off, keep - off, 0, &r, &len)) return JR_ECORRUPT;
            end += JR__BLK_FRAME_OVERHEAD;
        }
    }
    jr__fstore_ra_drop(s, id);
    rc = f->vfs->truncate(f->vfs->ctx, fh, end);
    if (!rc) rc = f->vfs->sync(f->vfs->ctx, fh);
    if (rc) return jr__store_fail(s, rc, "%s: cutting after the last mark failed", path);
    info->plain_len = keep;
    info->good_end = end;
    return 0;
}

/* Recovers block id (last: it is the newest) and replays its records, or only its first `keep`
 * bytes of records (the rest is cut off the file; SIZE_MAX: all). */
static int recover_block(jr__store *s, uint32_t id, int last, size_t keep)
{
    fstore *f = F(s);
    char path[PATHMAX];
    jr__fstore_path(f, path, sizeof path, id, "blk");
    jr_file *fh;
    jr__blk_info info;
    int torn;
    int rc = load_block(s, id, last, &fh, &info, &torn);
    if (rc) return rc;
    if (torn && info.kind == 0) {
        /* nothing valid in it: remove it */
        f->vfs->close(f->vfs->ctx, fh);
        rc = f->vfs->remove(f->vfs->ctx, path);
        return rc ? jr__store_fail(s, rc, "%s: remove failed", path) : 0;
    }
    if (keep < info.plain_len) {
        rc = cut_block(s, id, fh, &info, keep);
        if (rc) goto out;
    } else if (torn) {
        jr__fstore_ra_drop(s, id);
        rc = f->vfs->truncate(f->vfs->ctx, fh, info.good_end);
        if (!rc) rc = f->vfs->sync(f->vfs->ctx, fh);
        if (rc) {
            rc = jr__store_fail(s, rc, "%s: truncating the torn tail failed", path);
            goto out;
        }
    }
    if (jr__store_blk_add(s, id)) {
        rc = JR_ENOMEM;
        goto out;
    }
    s->blks[s->nblks - 1].kind = (uint8_t)info.kind;
    s->blks[s->nblks - 1].flags = (uint8_t)info.flags;
    uint64_t base_off =
        info.kind == JR__BLK_OPEN && !(info.flags & JR__BLKF_ENC) ? JR__BLK_OPEN_HDR : 0;
    rc = replay(s, path, id, info.plain, info.plain_len, base_off);
    if (rc) goto out;
    if (last && info.kind == JR__BLK_OPEN && (info.flags & JR__BLKF_ENC) == (f->e ? 1 : 0)) {
        /* keep appending to it */
        jr__buf_reset(&f->plain);
        jr__buf_put(&f->plain, info.plain, info.plain_len);
        if (f->plain.err) {
            rc = JR_ENOMEM;
            goto out;
        }
        f->af = fh;
        f->aid = id;
        f->aflags = info.flags;
        if (f->e) jr__blk_nonce_init(&f->e->nonce);
        f->fsize = f->wb = info.good_end;
        f->flushed = f->plain.len;
        f->wbase = 0;
        return 0;
    }
out:
    f->vfs->close(f->vfs->ctx, fh);
    return rc;
}

/* Marked store: finds the last mark among blocks ids[0..n): *k gets the index of its block (n if
 * there is none) and *end the offset just past it in that block's records. Blocks after it are
 * read only as far as needed to know they hold no mark (they are rolled back). */
static int find_last_mark(jr__store *s, const uint32_t *ids, size_t n, size_t *k, size_t *end)
{
    fstore *f = F(s);
    *k = n;
    *end = 0;
    for (size_t i = n; i-- > 0;) {
        jr_file *fh;
        jr__blk_info info;
        int torn;
        int rc = load_block(s, ids[i], i + 1 == n, &fh, &info, &torn);
        if (rc) return rc;
        f->vfs->close(f->vfs->ctx, fh);
        jr__srec r;
        size_t len, found = 0;
        for (size_t off = 0; off < info.plain_len; off += len) {
            if (jr__srec_decode(info.plain + off, info.plain_len - off, 0, &r, &len)) break;
            if (r.type == JR__SREC_MARK) found = off + len;
        }
        if (found) {
            *k = i;
            *end = found;
            return 0;
        }
    }
    return 0;
}

/* Marked store: recovers up to the last mark (see store.h "Marks"): blocks after it are removed
 * (newest first), its block is cut after it, and the rest is replayed. */
static int recover_marked(jr__store *s, const uint32_t *ids, size_t n)
{
    fstore *f = F(s);
    size_t k, end;
    int rc = find_last_mark(s, ids, n, &k, &end);
    for (size_t i = n; !rc && i-- > (k < n ? k + 1 : 0);) {
        char path[PATHMAX];
        jr__fstore_path(f, path, sizeof path, ids[i], "blk");
        rc = f->vfs->remove(f->vfs->ctx, path);
        if (rc == JR_ENOTFOUND) rc = 0;
        if (rc) jr__store_fail(s, rc, "%s: rolling back after the last mark failed", path);
    }
    for (size_t i = 0; !rc && k < n && i <= k; i++)
        rc = recover_block(s, ids[i], i == k, i == k ? end : SIZE_MAX);
    return rc;
}

int jr__store_file_open(jr__store *s, const jr__store_config *cfg)
{
    if (!cfg->vfs || !cfg->dir) return JR_EINVAL;
    size_t dl = strlen(cfg->dir) + 1 + strlen(cfg->name) + 1;
    if (dl > PATHMAX - 32) return JR_EINVAL;
    fstore *f = jr__calloc(s->alloc, 1, sizeof *f + dl);
    if (!f) return JR_ENOMEM;
    s->bkctx = f;
    s->bk = &jr__fstore_backend;
    s->block_bytes = cfg->block_bytes ? cfg->block_bytes : (8u << 20);
    f->vfs = cfg->vfs;
    f->compress = cfg->compress != 0;
    jr__buf_init(&f->plain, s->alloc);
    snprintf(f->dir, dl, "%s/%s", cfg->dir, cfg->name);
    if (strchr(cfg->name, '/')) return jr__store_fail(s, JR_EINVAL, "bad stream name");
    if (cfg->master_key) {
        if (!(f->e = jr__calloc(s->alloc, 1, sizeof *f->e))) return JR_ENOMEM;
        jr__buf_init(&f->e->pend, s->alloc);
        int rc = jr__blk_derive_key(cfg->master_key, cfg->name, &f->e->key);
        if (rc) return jr__store_fail(s, rc, "libsodium failed to initialise");
    }
    int rc = f->vfs->mkdir(f->vfs->ctx, f->dir);
    if (rc) return jr__store_fail(s, rc, "%s: mkdir failed: %s", f->dir, jr_strerror(rc));
    scan sc;
    memset(&sc, 0, sizeof sc);
    sc.s = s;
    rc = f->vfs->list(f->vfs->ctx, f->dir, list_cb, &sc);
    if (!rc && sc.destroyed) {
        /* an interrupted jr__store_destroy: finish it, and start empty */
        rc = remove_contents(f->vfs, f->dir);
        if (rc) jr__store_fail(s, rc, "%s: finishing its destruction failed", f->dir);
        sc.n = 0;
    } else if (!rc && sc.bad[0]) {
        rc = jr__store_fail(s, JR_ECORRUPT, "%s/%s: offset 0: unexpected file in the store", f->dir,
                            sc.bad);
    }
    if (!rc) {
        if (sc.n) qsort(sc.ids, sc.n, sizeof *sc.ids, cmp_u32);
        if (cfg->marked)
            rc = recover_marked(s, sc.ids, sc.n);
        else
            for (size_t i = 0; !rc && i < sc.n; i++)
                rc = recover_block(s, sc.ids[i], i + 1 == sc.n, SIZE_MAX);
    }
    jr__free(s->alloc, sc.ids);
    if (rc && !jr__store_errmsg(s)[0])
        jr__store_fail(s, rc, "%s: open failed: %s", f->dir, jr_strerror(rc));
    /* Recovery read whole blocks into the read state: give the memory back (up to a block each,
     * per stream, for as long as the stream lives otherwise), and the descriptors of the blocks
     * it read; reads allocate again when needed. */
    jr__fstore_rd_free(s);
    return rc;
}
