/*
 * file.c — the file store's backend: message blocks under <store_dir>/<stream>/ (block.h for
 * the formats), written and read only through jr_vfs. Opening, recovery and destroying are in
 * file_open.c; the layout both share is file_int.h.
 *
 * Files: NNNNNNNNNN.blk (block id, 10 digits) and, transiently, NNNNNNNNNN.tmp (a block being
 * rewritten; removed at open). Any other name in the directory is reported as corruption.
 *
 * The active block (highest id) is an open block. Its records are kept in memory in plaintext
 * (`plain`: a window over the block's tail, see below), which serves reads of recent messages
 * and, for a block sealed at rotation, becomes the sealed image;
 * writes are buffered and reach the file at flush time (or every FLUSH_BYTES). Without
 * encryption the file holds the plaintext itself after its header; with encryption each record
 * is written as its own authenticated frame, so no plaintext ever reaches the disk.
 *
 * Rotation: when a record does not fit in block_bytes, the active block is flushed and synced
 * (no compression nor encryption: it stays an open block forever, which is fine to read), or
 * rewritten as a sealed block (tmp file, sync, rename) when compression or encryption is on.
 * Syncing at rotation keeps the durable prefix contiguous: a later block is never durable
 * while an earlier one is not. The active block's writes are handed to the vfs's writeback
 * every WRITEBACK_BYTES, so the device writes the block while it fills and the sync at rotation
 * waits for its last megabyte, not all of it.
 *
 * Recovery of a marked store (store.h "Marks") first looks for the last mark from the newest
 * block backwards; blocks after it are removed and its block is cut just after it (an open block
 * truncated, a sealed one sealed again), then recovery goes on as below over what is left. A
 * damaged block after the mark is still corruption unless it is a torn tail.
 *
 * Recovery: blocks are decoded in id order and their records replayed into the core. Damage in
 * the last block that no valid frame follows is a torn tail: the file is truncated to its valid
 * prefix (and synced). Any other damage is JR_ECORRUPT naming the file and offset. The seq index
 * and the per-subject index are always rebuilt by this scan (there is no separate index file):
 * every checksum has to be verified at open anyway, so the scan adds little to that
 * (bench/store_bench reports its cost as "recovery").
 *
 * Encryption at rest: records of the active block are encrypted one by one as they are written
 * (per-record frames), so plaintext never reaches the disk; at rotation the block is sealed
 * again, chunk by chunk, with the same stream key (block.h). The price is encrypting each byte
 * twice (bench/store_bench reports what that costs).
 *
 * Tombstones live in the block that was active when they were written. When a block is dropped
 * (no live message left), its tombstones that still refer to messages in surviving blocks are
 * written again into the active block, and the active block is synced before the file is
 * removed (so the durable store never loses its last seq or a needed tombstone).
 *
 * Memory of an idle store (many streams per node): a store pays for what it uses. The
 * backend state (fstore) holds the active block; the encryption state (fenc) exists only for an
 * encrypted store; the state for reading other blocks (frd: read handles, a decoded block or
 * chunk, io buffers) is allocated at the first read of such a block and freed after recovery and
 * by jr__store_trim; a block costs only its entry in the core's table, plus its chunk index
 * (sidx) once a sealed block was read at random. jr__store_trim also frees the active block's
 * plaintext once it is all written to the file, whatever its size: `plain` is a window whose
 * first byte is at plaintext offset `wbase` of the block; trim moves wbase to the block's end and
 * frees the window. An always-open block (neither compression nor encryption) also slides its
 * window at every WINDOW_BYTES while busy (window_slide): nothing needs it whole, so a store
 * written without pause holds at most that much of it. Appends go on into the window (the file
 * receives the same bytes, or with encryption the same kind of frames, as without trim) and read
 * nothing. A record before wbase is read alone from the file, verified (active_read_old):
 *  - without encryption it is at JR__BLK_OPEN_HDR + its offset: a pread of exactly it, its
 *    checksum and length checked, as reads of other open blocks do;
 *  - with encryption (one frame per record, back to back: plaintext offsets are not file offsets)
 *    the record at offset off that is the block's n-th is at JR__BLK_OPEN_HDR + off + n *
 *    JR__BLK_FRAME_OVERHEAD. Trim walks the window it frees and keeps checkpoints (offset, n)
 *    every CKPT_RECS records or CKPT_BYTES bytes (file_int.h): a read starts at the checkpoint
 *    before the record, preads what can lie between (at most about 5.5 KiB) plus the frame, walks
 *    the frame lengths (in clear) to the record's frame and decrypts that one; it must land
 *    exactly on the record's offset, authenticate, and be one record of the expected length.
 *    Why checkpoints and not an offset per record: 8 bytes per 32 records (or 4 KiB) instead of
 *    4 per record — an idle stream with 1 MiB of 128-byte messages in its active block keeps
 *    about 2 KiB for them instead of 23 KiB — for reads of trimmed records that are rare (a
 * consumer behind, a catch-up) and cost a few KiB of pread instead of one record's; what needs the
 * whole block (sealing with lz4 or encryption, erase, carrying tombstones) reads the part before
 * the window back and verifies it as recovery does (header, id, flags, record checksums, frame
 * authentication, exact length), then the window is the whole block again (active_whole). A failure
 * reading the active block's file fails the store (s->failed) like a write error; the records are
 * still in the file for the next open. Trim also closes the active block's file when nothing is
 * pending and it is synced (af == NULL with aid != 0 means exactly that); active_open opens it
 * again before a write or a read from it.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_int.h"
#include "util/alloc.h"

#define FLUSH_BYTES (1u << 20)
/* Written bytes of the active block beyond which their writeback is started (see active_flush). */
#define WRITEBACK_BYTES (1u << 20)
/* Readahead of an unencrypted open block: a read that starts at most RA_GAP bytes after the
 * previous read of the same block ended (records read in seq order, some skipped) reads
 * RA_BYTES, and the records that follow are served from that. */
#define RA_BYTES (64u << 10)
#define RA_GAP (4u << 10)
/* The most of an always-open active block kept in memory (window_slide). */
#define WINDOW_BYTES (256u << 10)

/* Makes sure f->rd exists. 0 or JR_ENOMEM. */
int jr__fstore_rd_get(jr__store *s)
{
    fstore *f = F(s);
    if (f->rd) return 0;
    frd *r = jr__calloc(s->alloc, 1, sizeof *r);
    if (!r) return JR_ENOMEM;
    jr__buf_init(&r->cache, s->alloc);
    jr__buf_init(&r->chunk, s->alloc);
    jr__buf_init(&r->io, s->alloc);
    jr__buf_init(&r->tmp, s->alloc);
    jr__buf_init(&r->ra, s->alloc);
    f->rd = r;
    return 0;
}

/* Closes the read handles and frees the read state. */
void jr__fstore_rd_free(jr__store *s)
{
    fstore *f = F(s);
    frd *r = f->rd;
    if (!r) return;
    for (int i = 0; i < NHANDLES; i++)
        if (r->h[i].f) f->vfs->close(f->vfs->ctx, r->h[i].f);
    jr__buf_free(&r->cache);
    jr__buf_free(&r->chunk);
    jr__buf_free(&r->io);
    jr__buf_free(&r->tmp);
    jr__buf_free(&r->ra);
    jr__free(s->alloc, r);
    f->rd = NULL;
}

void jr__fstore_ra_drop(jr__store *s, uint32_t id)
{
    fstore *f = F(s);
    if (f->rd && f->rd->raid == id) f->rd->raid = 0;
}

/* Points *out at bytes [at, at + len) of the file fh of unencrypted open block blk, which holds
 * at least limit bytes that do not change (the active block: its header and the records before
 * the window): from the readahead when it holds them, else read from the file — RA_BYTES (up
 * to limit) when the read follows the previous one of that block (see RA_GAP), just them
 * otherwise (random reads read no more than they need). 0, the pread's error, JR_ECORRUPT for
 * a short read, or JR_ENOMEM; nothing is verified here. */
static int ra_read(jr__store *s, uint32_t blk, jr_file *fh, uint64_t at, uint32_t len,
                   uint64_t limit, const uint8_t **out)
{
    frd *r = F(s)->rd;
    jr_vfs *v = F(s)->vfs;
    if (r->raid == blk && at >= r->raat && at - r->raat <= r->ra.len &&
        len <= r->ra.len - (at - r->raat)) {
        r->ranext = at + len;
        *out = r->ra.data + (at - r->raat);
        return 0;
    }
    uint64_t want = len;
    if (r->raid == blk && at >= r->ranext && at - r->ranext <= RA_GAP && want < RA_BYTES)
        want = RA_BYTES;
    if (limit > at && want > limit - at && limit - at >= len) want = limit - at;
    r->raid = 0;
    jr__buf_reset(&r->ra);
    jr__buf_release(&r->ra, 2 * RA_BYTES); /* a large record does not stay allocated */
    if (jr__buf_reserve(&r->ra, (size_t)want)) return JR_ENOMEM;
    size_t got = 0;
    int rc = v->pread(v->ctx, fh, r->ra.data, (size_t)want, at, &got);
    if (rc) return rc;
    if (got < len) return JR_ECORRUPT;
    r->ra.len = got;
    r->raid = blk;
    r->raat = at;
    r->ranext = at + len;
    *out = r->ra.data;
    return 0;
}

void jr__fstore_path(const fstore *f, char *out, size_t n, uint32_t id, const char *ext)
{
    snprintf(out, n, "%s/%010u.%s", f->dir, id, ext);
}

/* ---------------------------------------------------------------------------------------------
 * Read handles of non-active blocks
 */

static void handle_forget(jr__store *s, uint32_t id)
{
    fstore *f = F(s);
    if (!f->rd) return;
    for (int i = 0; i < NHANDLES; i++)
        if (f->rd->h[i].f && f->rd->h[i].id == id) {
            f->vfs->close(f->vfs->ctx, f->rd->h[i].f);
            f->rd->h[i].f = NULL;
        }
    if (f->rd->cid == id) f->rd->cid = 0;
    if (f->rd->kid == id) f->rd->kid = 0;
    if (f->rd->raid == id) f->rd->raid = 0;
}

/* Forgets the chunk index of block b (it is loaded again at the next read). */
static void sealed_forget(jr__store *s, jr__blk *b)
{
    jr__free(s->alloc, b->bk);
    b->bk = NULL;
}

static int handle_get(jr__store *s, uint32_t id, jr_file **out)
{
    fstore *f = F(s);
    if (jr__fstore_rd_get(s)) return JR_ENOMEM;
    for (int i = 0; i < NHANDLES; i++)
        if (f->rd->h[i].f && f->rd->h[i].id == id) {
            *out = f->rd->h[i].f;
            return 0;
        }
    handle *h = &f->rd->h[f->rd->hnext++ % NHANDLES];
    if (h->f) f->vfs->close(f->vfs->ctx, h->f);
    h->f = NULL;
    char path[PATHMAX];
    jr__fstore_path(f, path, sizeof path, id, "blk");
    int rc = f->vfs->open(f->vfs->ctx, path, JR_O_READ, &h->f);
    if (rc) {
        h->f = NULL;
        return jr__store_fail(s, rc, "%s: open failed: %s", path, jr_strerror(rc));
    }
    h->id = id;
    *out = h->f;
    return 0;
}

/* Reads the whole file `path` into buf. */
int jr__fstore_read_all(jr__store *s, jr_file *fh, const char *path, jr__buf *buf)
{
    fstore *f = F(s);
    uint64_t size;
    int rc = f->vfs->size(f->vfs->ctx, fh, &size);
    if (rc) return jr__store_fail(s, rc, "%s: size failed", path);
    if (size > (uint64_t)SIZE_MAX / 2) return jr__store_fail(s, JR_ECORRUPT, "%s: too large", path);
    jr__buf_reset(buf);
    if (jr__buf_reserve(buf, (size_t)size ? (size_t)size : 1)) return JR_ENOMEM;
    size_t got = 0;
    if (size) {
        rc = f->vfs->pread(f->vfs->ctx, fh, buf->data, (size_t)size, 0, &got);
        if (rc) return jr__store_fail(s, rc, "%s: read failed", path);
    }
    buf->len = got;
    return 0;
}

/* Decodes block id into the cache (sealed or encrypted blocks). */
static int cache_load(jr__store *s, uint32_t id)
{
    fstore *f = F(s);
    if (jr__fstore_rd_get(s)) return JR_ENOMEM;
    if (f->rd->cid == id) return 0;
    f->rd->cid = 0;
    jr_file *fh;
    int rc = handle_get(s, id, &fh);
    if (rc) return rc;
    char path[PATHMAX];
    jr__fstore_path(f, path, sizeof path, id, "blk");
    rc = jr__fstore_read_all(s, fh, path, &f->rd->io);
    if (rc) return rc;
    jr__blk_info info;
    rc = jr__blk_decode(f->rd->io.data, f->rd->io.len, KEY(f), &f->rd->cache, &info);
    if (rc)
        return jr__store_fail(s, rc == JR_ECORRUPT ? JR_ECORRUPT : rc, "%s: offset %llu: %s", path,
                              (unsigned long long)info.bad_off,
                              info.why ? info.why : jr_strerror(rc));
    if (info.plain != f->rd->cache.data) {
        /* plaintext points into io: keep it in the cache instead */
        jr__buf_reset(&f->rd->cache);
        jr__buf_put(&f->rd->cache, info.plain, info.plain_len);
        if (f->rd->cache.err) return f->rd->cache.err;
    }
    f->rd->cid = id;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The active block
 */

/* A failed read-back of the active block (or of its file): JR_ENOMEM fails only the operation;
 * anything else fails the store (sticky), as JR_ECORRUPT when the bytes changed or the file is
 * gone and JR_EIO otherwise — never a code a caller could take for an answer (JR_ENOTFOUND is
 * "no such message" to the stream layer). Returns the code to report. */
static int active_failed(jr__store *s, int rc)
{
    if (rc == JR_ENOMEM) return rc;
    s->failed = rc == JR_ECORRUPT || rc == JR_ENOTFOUND ? JR_ECORRUPT : JR_EIO;
    return s->failed;
}

/* Opens the active block's file again if jr__store_trim closed it (it was written and synced
 * then: nothing is pending). A failure fails the store, as a failed read-back does. */
static int active_open(jr__store *s)
{
    fstore *f = F(s);
    if (f->af || !f->aid) return 0;
    char path[PATHMAX];
    jr__fstore_path(f, path, sizeof path, f->aid, "blk");
    int rc = f->vfs->open(f->vfs->ctx, path, JR_O_READ, &f->af);
    if (rc) {
        f->af = NULL;
        return jr__store_fail(s, active_failed(s, rc), "%s: reopening the active block failed: %s",
                              path, jr_strerror(rc));
    }
    return 0;
}

/* Forgets the trimmed part of the active block: plain holds the whole block again (or the block
 * is gone). */
static void window_reset(jr__store *s)
{
    fstore *f = F(s);
    f->wbase = 0;
    if (f->e) {
        f->e->wrecs = 0;
        jr__free(s->alloc, f->e->cp);
        f->e->cp = NULL;
        f->e->ncp = 0;
    }
}

/* File bytes (header included) of the active block's trimmed part: the records before wbase. */
static uint64_t trimmed_end(const fstore *f)
{
    uint64_t n = JR__BLK_OPEN_HDR + (uint64_t)f->wbase;
    if (f->e) n += (uint64_t)f->e->wrecs * JR__BLK_FRAME_OVERHEAD;
    return n;
}

/* The records of the active block before the window (trimmed: wbase > 0) are put in front of
 * it, read from the file and verified as recovery verifies them (header, id, flags, every
 * record's checksum and with encryption every frame's authentication, exactly wbase bytes of
 * whole records in exactly the trimmed part's file bytes), so that plain holds the whole block
 * (for sealing, erasing, carrying tombstones). A failure other than JR_ENOMEM fails the store,
 * as a failed read-back does; the window is left as it was. */
static int active_whole(jr__store *s)
{
    fstore *f = F(s);
    if (!f->wbase) return 0;
    int rc = active_open(s);
    if (rc) return rc;
    char path[PATHMAX];
    jr__fstore_path(f, path, sizeof path, f->aid, "blk");
    uint64_t head64 = trimmed_end(f);
    if (head64 > SIZE_MAX / 2) return JR_ENOMEM;
    size_t head = (size_t)head64, got = 0;
    jr__buf nb, scratch;
    jr__buf_init(&nb, s->alloc);
    jr__buf_init(&scratch, s->alloc);
    rc = jr__buf_reserve(&nb, head + f->plain.len);
    if (!rc) {
        rc = f->vfs->pread(f->vfs->ctx, f->af, nb.data, head, 0, &got);
        if (rc)
            jr__store_fail(s, rc, "%s: reading the active block back failed: %s", path,
                           jr_strerror(rc));
    }
    jr__blk_info info = {0};
    if (!rc) {
        int drc =
            got == head ? jr__blk_decode(nb.data, head, KEY(f), &scratch, &info) : JR_ECORRUPT;
        if (drc == JR_ENOMEM)
            rc = drc;
        else if (drc || info.kind != JR__BLK_OPEN || info.id != f->aid || info.flags != f->aflags ||
                 info.plain_len != f->wbase || info.good_end != head)
            rc = jr__store_fail(s, JR_ECORRUPT,
                                "%s: offset %llu: the active block read back differs from what "
                                "was written (%s)",
                                path, (unsigned long long)(drc ? info.bad_off : 0),
                                drc && info.why ? info.why : "short or changed");
    }
    if (rc) {
        jr__buf_free(&scratch);
        jr__buf_free(&nb);
        return active_failed(s, rc);
    }
    /* the plaintext is in nb after the header (unencrypted) or in scratch */
    memmove(nb.data, info.plain, f->wbase);
    jr__buf_free(&scratch);
    if (f->plain.len) memcpy(nb.data + f->wbase, f->plain.data, f->plain.len);
    nb.len = f->wbase + f->plain.len;
    jr__buf_free(&f->plain);
    f->plain = nb;
    f->flushed += f->wbase;
    window_reset(s);
    return 0;
}

/* The checkpoint of the encrypted active block's trimmed part at or before plaintext offset
 * off (the implicit {0, 0} if none). */
static ckpt ckpt_find(const fenc *e, uint32_t off)
{
    size_t lo = 0, hi = e->ncp; /* the answer is the last entry < hi with cp.off <= off */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->cp[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? e->cp[lo - 1] : (ckpt){0, 0};
}

/* Adds checkpoints for the window's records (all written), which trim is about to move before
 * wbase, and counts them into wrecs. 0, JR_ENOMEM, or JR_ECORRUPT if the window does not parse
 * (it always does: the store wrote it); on error nothing changed. */
static int ckpt_add(jr__store *s)
{
    fstore *f = F(s);
    fenc *e = f->e;
    size_t add = 0;
    ckpt *grown = NULL;
    for (int pass = 0; pass < 2; pass++) {
        ckpt last = e->ncp ? e->cp[e->ncp - 1] : (ckpt){0, 0};
        uint32_t nrec = e->wrecs;
        size_t k = 0, len;
        for (size_t off = 0; off < f->plain.len; off += len, nrec++) {
            jr__srec r;
            if (jr__srec_decode(f->plain.data + off, f->plain.len - off, 0, &r, &len)) {
                if (grown != e->cp) jr__free(s->alloc, grown);
                return JR_ECORRUPT;
            }
            uint32_t at = f->wbase + (uint32_t)off;
            if (nrec - last.nrec >= CKPT_RECS || at - last.off >= CKPT_BYTES) {
                last = (ckpt){at, nrec};
                if (pass) grown[e->ncp + k] = last;
                k++;
            }
        }
        if (pass) {
            if (grown != e->cp) jr__free(s->alloc, e->cp);
            e->cp = grown;
            e->ncp += add;
            e->wrecs = nrec;
            return 0;
        }
        add = k;
        if (add) {
            grown = jr__malloc(s->alloc, (e->ncp + add) * sizeof *grown);
            if (!grown) return JR_ENOMEM;
            if (e->ncp) memcpy(grown, e->cp, e->ncp * sizeof *grown);
        } else {
            grown = e->cp;
        }
    }
    return 0; /* not reached */
}

/* Reads the record at plaintext offset off (len bytes) of the active block before the window
 * (trimmed) from the file, verified (its checksum and length; with encryption, its frame's
 * authentication) into the read state. Without encryption the record is at JR__BLK_OPEN_HDR +
 * off, read through the readahead (ra_read); with encryption that record alone is read: its
 * frame is found from the checkpoint
 * before it (file_int.h): one pread of at most CKPT_BYTES + CKPT_RECS frame overheads + its own
 * frame, a walk over the frame lengths in it, one frame decrypted. A failure other than
 * JR_ENOMEM fails the store as a failed read-back does (the file being written no longer reads
 * as written). */
static int active_read_old(jr__store *s, uint32_t off, uint32_t len, const uint8_t **out)
{
    fstore *f = F(s);
    uint64_t at = JR__BLK_OPEN_HDR + (uint64_t)off, want = len;
    ckpt c = {0, 0};
    if (f->e) {
        c = ckpt_find(f->e, off);
        at = JR__BLK_OPEN_HDR + (uint64_t)c.off + (uint64_t)c.nrec * JR__BLK_FRAME_OVERHEAD;
        /* frames before the record's since the checkpoint: fewer than CKPT_RECS, and each
         * record is at least JR__SREC_MIN bytes */
        uint64_t gap = off - c.off, before = gap / JR__SREC_MIN;
        if (before > CKPT_RECS - 1) before = CKPT_RECS - 1;
        want = gap + len + (before + 1) * JR__BLK_FRAME_OVERHEAD;
        uint64_t end = trimmed_end(f);
        if (at < end && want > end - at) want = end - at;
    }
    if ((uint64_t)off + len > f->wbase || len < JR__SREC_MIN)
        return jr__store_fail(s, JR_ECORRUPT, "%s/%010u.blk: offset %llu: record beyond the window",
                              f->dir, f->aid, (unsigned long long)at);
    int rc = active_open(s);
    if (rc) return rc;
    if (jr__fstore_rd_get(s)) return JR_ENOMEM;
    frd *r = f->rd;
    const uint8_t *rp = NULL;
    size_t n;
    if (!f->e) {
        jr__srec rec;
        rc = ra_read(s, f->aid, f->af, at, len, JR__BLK_OPEN_HDR + (uint64_t)f->wbase, &rp);
        if (rc == JR_ENOMEM) return rc;
        if (!rc && (jr__srec_decode(rp, len, 1, &rec, &n) || n != len)) rc = JR_ECORRUPT;
    } else {
        jr__buf_reset(&r->io);
        jr__buf_reset(&r->tmp);
        if (jr__buf_reserve(&r->io, (size_t)want) || jr__buf_reserve(&r->tmp, (size_t)want))
            return JR_ENOMEM;
        size_t got = 0;
        rc = f->vfs->pread(f->vfs->ctx, f->af, r->io.data, (size_t)want, at, &got);
        if (!rc) {
            /* walk the frames from the checkpoint to the record's (their lengths are in
             * clear) */
            size_t pos = 0;
            uint64_t p = c.off;
            while (p < off && got - pos >= JR__BLK_FRAME_OVERHEAD) {
                uint32_t clen = jr__get_u32(r->io.data + pos);
                if (clen < JR__SREC_MIN + JR__BLK_FRAME_TAG ||
                    clen > got - pos - JR__BLK_FRAME_HEAD)
                    break;
                p += clen - JR__BLK_FRAME_TAG;
                pos += JR__BLK_FRAME_HEAD + (size_t)clen;
            }
            at += pos;
            if (p != off ||
                jr__blk_frame_open(r->io.data + pos, got - pos, f->aid, &f->e->key, r->tmp.data,
                                   &n) ||
                n != len)
                rc = JR_ECORRUPT;
            rp = r->tmp.data;
        }
    }
    if (rc) {
        int err = rc;
        rc = active_failed(s, rc);
        return jr__store_fail(s, rc,
                              "%s/%010u.blk: offset %llu: reading a record of the active block "
                              "failed: %s",
                              f->dir, f->aid, (unsigned long long)at,
                              err == JR_ECORRUPT ? "short or changed" : jr_strerror(err));
    }
    *out = rp;
    return 0;
}

/* Starts the writeback of what the active block's file received since the last sync or
 * writeback, once that is WRITEBACK_BYTES: the sync at rotation, inline on the node's thread,
 * then waits for the last of it only instead of the whole block, and the device writes while
 * records come. A hint (jr_vfs.writeback): its result changes nothing. */
static void active_writeback(fstore *f)
{
    if (f->fsize - f->wb < WRITEBACK_BYTES || f->vfs->version < 2 || !f->vfs->writeback) return;
    (void)f->vfs->writeback(f->vfs->ctx, f->af, f->wb, f->fsize - f->wb);
    f->wb = f->fsize;
}

static int active_flush(jr__store *s)
{
    fstore *f = F(s);
    if (!f->af) return 0;
    int rc = 0;
    if (f->aflags & JR__BLKF_ENC) {
        if (f->e->pend.len) {
            rc = f->vfs->pwrite(f->vfs->ctx, f->af, f->e->pend.data, f->e->pend.len, f->fsize);
            if (!rc) {
                f->fsize += f->e->pend.len;
                jr__buf_reset(&f->e->pend);
                f->dirty = 1;
            }
        }
    } else if (f->plain.len > f->flushed) {
        size_t n = f->plain.len - f->flushed;
        rc = f->vfs->pwrite(f->vfs->ctx, f->af, f->plain.data + f->flushed, n, f->fsize);
        if (!rc) {
            f->fsize += n;
            f->flushed = f->plain.len;
            f->dirty = 1;
        }
    }
    if (rc)
        return jr__store_fail(s, rc, "%s/%010u.blk: write failed: %s", f->dir, f->aid,
                              jr_strerror(rc));
    active_writeback(f);
    return 0;
}

static int active_sync(jr__store *s)
{
    fstore *f = F(s);
    int rc = active_flush(s);
    if (rc || !f->af) return rc;
    if (f->dirty) {
        rc = f->vfs->sync(f->vfs->ctx, f->af);
        if (rc) return jr__store_fail(s, rc, "%s/%010u.blk: sync failed", f->dir, f->aid);
        f->dirty = 0;
        f->wb = f->fsize;
    }
    if (f->need_dirsync) {
        rc = f->vfs->sync_dir(f->vfs->ctx, f->dir);
        if (rc) return jr__store_fail(s, rc, "%s: directory sync failed", f->dir);
        f->need_dirsync = 0;
    }
    return 0;
}

/* Writes image[0..n) as block id through a temporary file and an atomic rename. */
int jr__fstore_replace(jr__store *s, uint32_t id, const uint8_t *image, size_t n)
{
    fstore *f = F(s);
    char tmp[PATHMAX], dst[PATHMAX];
    jr__fstore_ra_drop(s, id);
    jr__fstore_path(f, tmp, sizeof tmp, id, "tmp");
    jr__fstore_path(f, dst, sizeof dst, id, "blk");
    jr_file *t;
    int rc = f->vfs->open(f->vfs->ctx, tmp, JR_O_CREATE | JR_O_TRUNCATE, &t);
    if (rc) return jr__store_fail(s, rc, "%s: create failed", tmp);
    rc = f->vfs->pwrite(f->vfs->ctx, t, image, n, 0);
    if (!rc) rc = f->vfs->sync(f->vfs->ctx, t);
    int rc2 = f->vfs->close(f->vfs->ctx, t);
    if (!rc) rc = rc2;
    if (!rc) rc = f->vfs->rename(f->vfs->ctx, tmp, dst);
    if (rc) {
        f->vfs->remove(f->vfs->ctx, tmp);
        return jr__store_fail(s, rc, "%s: write failed: %s", tmp, jr_strerror(rc));
    }
    return 0;
}

/* Seals the active block (see the file comment) and forgets it. */
static int active_seal(jr__store *s)
{
    fstore *f = F(s);
    if (!f->aid) return 0;
    size_t bi = jr__store_blk_find(s, f->aid);
    jr__blk *b = &s->blks[bi];
    int rc;
    int sflags = (f->compress ? JR__BLKF_LZ4 : 0) | (f->e ? JR__BLKF_ENC : 0);
    if (sflags) {
        rc = active_whole(s);
        if (rc) return rc;
        jr__buf img; /* a block's worth: not kept for the next seal, a block later */
        jr__buf_init(&img, s->alloc);
        rc = jr__blk_seal(f->plain.data, f->plain.len, f->aid, sflags, KEY(f), &img);
        if (!rc) rc = jr__fstore_replace(s, f->aid, img.data, img.len);
        jr__buf_free(&img);
        if (rc) return rc;
        if (f->need_dirsync) {
            /* the rename made the name durable; nothing else of this block is pending */
            f->need_dirsync = 0;
        }
        b->kind = JR__BLK_SEALED;
        b->flags = (uint8_t)sflags;
        /* the plaintext is the decoded form of the sealed block: keep it as the read cache */
        if (!jr__fstore_rd_get(s)) {
            jr__buf t = f->rd->cache;
            f->rd->cache = f->plain;
            f->plain = t;
            f->rd->cid = f->aid;
        }
    } else {
        rc = active_sync(s);
        if (rc) return rc;
    }
    if (f->af) f->vfs->close(f->vfs->ctx, f->af); /* (closed by trim: nothing pending) */
    f->af = NULL;
    f->aid = 0;
    jr__buf_reset(&f->plain);
    if (f->e) jr__buf_reset(&f->e->pend);
    f->flushed = 0;
    window_reset(s); /* an open block rotated while trimmed: nothing to read back */
    f->fsize = f->wb = 0;
    f->dirty = 0;
    return 0;
}

static int active_new(jr__store *s)
{
    fstore *f = F(s);
    uint32_t id = s->nblks ? s->blks[s->nblks - 1].id + 1 : 1;
    if (id == 0) return jr__store_fail(s, JR_ERANGE, "%s: block ids exhausted", f->dir);
    char path[PATHMAX];
    jr__fstore_path(f, path, sizeof path, id, "blk");
    jr_file *fh;
    int rc = f->vfs->open(f->vfs->ctx, path, JR_O_CREATE | JR_O_TRUNCATE, &fh);
    if (rc) return jr__store_fail(s, rc, "%s: create failed: %s", path, jr_strerror(rc));
    f->aflags = f->e ? JR__BLKF_ENC : 0;
    uint8_t h[JR__BLK_OPEN_HDR];
    jr__blk_open_header(h, id, f->aflags, f->e ? f->e->key.check : 0);
    rc = f->vfs->pwrite(f->vfs->ctx, fh, h, sizeof h, 0);
    if (!rc) rc = jr__store_blk_add(s, id);
    if (rc) {
        f->vfs->close(f->vfs->ctx, fh);
        f->vfs->remove(f->vfs->ctx, path);
        return jr__store_fail(s, rc, "%s: create failed: %s", path, jr_strerror(rc));
    }
    s->blks[s->nblks - 1].kind = JR__BLK_OPEN;
    s->blks[s->nblks - 1].flags = (uint8_t)f->aflags;
    if (f->e) jr__blk_nonce_init(&f->e->nonce);
    f->af = fh;
    f->aid = id;
    f->fsize = f->wb = JR__BLK_OPEN_HDR;
    f->flushed = 0;
    window_reset(s);
    jr__buf_reset(&f->plain);
    if (f->e) jr__buf_reset(&f->e->pend);
    f->need_dirsync = 1;
    f->dirty = 1;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Backend operations
 */

static int file_reserve(jr__store *s, size_t len, uint8_t **p, uint32_t *blk, uint32_t *off)
{
    fstore *f = F(s);
    int rc;
    size_t alen = f->wbase + f->plain.len;
    if (f->aid && alen && alen + len > s->block_bytes) {
        rc = active_seal(s);
        if (rc) return rc;
    }
    if (!f->aid) {
        rc = active_new(s);
        if (rc) return rc;
    }
    rc = active_open(s); /* nothing is read: appends go on in the window */
    if (rc) return rc;
    if (jr__buf_reserve(&f->plain, len)) return JR_ENOMEM;
    *p = f->plain.data + f->plain.len;
    *blk = f->aid;
    *off = (uint32_t)(f->wbase + f->plain.len);
    return 0;
}

/* A block that stays open forever (neither compression nor encryption) is never needed whole
 * in memory: once WINDOW_BYTES of it are in the window, the window is written and slides past
 * them, as jr__store_trim slides it (reads of those records pread them from the file). A block
 * sealed at rotation keeps the whole block in the window, its seal's input. */
static int window_slide(jr__store *s)
{
    fstore *f = F(s);
    int rc = active_flush(s);
    if (rc) return rc;
    f->wbase += (uint32_t)f->plain.len;
    f->flushed = 0;
    /* the capacity is kept for the next window unless one large record grew it */
    jr__buf_release(&f->plain, 2 * WINDOW_BYTES);
    return 0;
}

static int file_commit(jr__store *s, uint8_t *p, size_t len)
{
    fstore *f = F(s);
    f->plain.len += len;
    size_t unflushed;
    if (f->aflags & JR__BLKF_ENC) {
        if (jr__buf_reserve(&f->e->pend, jr__blk_frame_size(len))) return JR_ENOMEM;
        jr__blk_frame(f->e->pend.data + f->e->pend.len, p, len, f->aid, &f->e->key, &f->e->nonce);
        f->e->pend.len += jr__blk_frame_size(len);
        unflushed = f->e->pend.len;
    } else {
        if (!f->compress && f->plain.len >= WINDOW_BYTES) return window_slide(s);
        unflushed = f->plain.len - f->flushed;
    }
    return unflushed >= FLUSH_BYTES ? active_flush(s) : 0;
}

/* Reads a record of a sealed block by decoding only the chunk that holds it. */
static int sealed_read(jr__store *s, uint32_t blk, jr__blk *bt, uint32_t off, uint32_t len,
                       const uint8_t **out)
{
    fstore *f = F(s);
    char path[PATHMAX];
    int rc = jr__fstore_rd_get(s);
    if (rc) return rc;
    jr_file *fh = NULL;
    sidx *b = bt->bk;
    if (!b) {
        jr__fstore_path(f, path, sizeof path, blk, "blk");
        rc = handle_get(s, blk, &fh);
        if (rc) return rc;
        uint8_t h[JR__BLK_SEAL_HDR];
        size_t got;
        rc = f->vfs->pread(f->vfs->ctx, fh, h, sizeof h, 0, &got);
        if (rc) return jr__store_fail(s, rc, "%s: read failed", path);
        uint64_t size;
        rc = f->vfs->size(f->vfs->ctx, fh, &size);
        if (rc) return jr__store_fail(s, rc, "%s: size failed", path);
        jr__blk_sealed hd;
        if (jr__blk_sealed_header(h, got, &hd) || hd.id != blk ||
            JR__BLK_SEAL_HDR + hd.stored_len != size)
            return jr__store_fail(s, JR_ECORRUPT, "%s: offset 0: bad sealed block header", path);
        size_t ilen = (size_t)(size - hd.index_off);
        jr__buf_reset(&f->rd->io);
        if (jr__buf_reserve(&f->rd->io, ilen)) return JR_ENOMEM;
        rc = f->vfs->pread(f->vfs->ctx, fh, f->rd->io.data, ilen, hd.index_off, &got);
        if (rc) return jr__store_fail(s, rc, "%s: read failed", path);
        /* nchunks is bounded by the file's size (32 bytes of index per chunk) */
        b = jr__malloc(s->alloc, sizeof *b + (size_t)hd.nchunks * sizeof b->chunks[0]);
        if (!b) return JR_ENOMEM;
        b->hd = hd;
        if (got != ilen || jr__blk_sealed_index(&b->hd, f->rd->io.data, ilen, b->chunks)) {
            jr__free(s->alloc, b);
            return jr__store_fail(s, JR_ECORRUPT, "%s: offset %llu: bad chunk index", path,
                                  (unsigned long long)hd.index_off);
        }
        bt->bk = b;
    }
    /* the chunk that holds off */
    uint32_t lo = 0, hi = b->hd.nchunks;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->chunks[mid].raw_off <= off)
            lo = mid;
        else
            hi = mid;
    }
    const jr__blk_chunk *c = b->hd.nchunks ? &b->chunks[lo] : NULL;
    if (!c || off < c->raw_off || (uint64_t)off + len > c->raw_off + c->raw_len)
        return jr__store_fail(s, JR_ECORRUPT, "%s/%010u.blk: record at %u outside its chunk",
                              f->dir, blk, off);
    if (f->rd->kid != blk || f->rd->kchunk != lo) {
        f->rd->kid = 0;
        if (!fh) {
            rc = handle_get(s, blk, &fh);
            if (rc) return rc;
        }
        jr__fstore_path(f, path, sizeof path, blk, "blk");
        jr__buf_reset(&f->rd->io);
        if (jr__buf_reserve(&f->rd->io, c->stored_len ? c->stored_len : 1)) return JR_ENOMEM;
        size_t got;
        uint64_t at = JR__BLK_SEAL_HDR + c->stored_off;
        rc = f->vfs->pread(f->vfs->ctx, fh, f->rd->io.data, c->stored_len, at, &got);
        if (rc) return jr__store_fail(s, rc, "%s: read failed", path);
        jr__buf_reset(&f->rd->chunk);
        if (jr__buf_reserve(&f->rd->chunk, c->raw_len)) return JR_ENOMEM;
        rc = got == c->stored_len ? jr__blk_chunk_decode(&b->hd, c, lo, f->rd->io.data, KEY(f),
                                                         f->rd->chunk.data, &f->rd->tmp)
                                  : JR_ECORRUPT;
        if (rc == JR_ENOMEM) return rc; /* the scratch buffer, not the bytes */
        if (rc)
            return jr__store_fail(s, rc == JR_EINVAL ? JR_EINVAL : JR_ECORRUPT,
                                  "%s: offset %llu: %s", path, (unsigned long long)at,
                                  rc == JR_EAUTH ? "chunk failed authentication" : "bad chunk");
        f->rd->chunk.len = c->raw_len;
        f->rd->kid = blk;
        f->rd->kchunk = lo;
    }
    *out = f->rd->chunk.data + (off - c->raw_off);
    return 0;
}

static int file_read(jr__store *s, uint32_t blk, uint32_t off, uint32_t len, const uint8_t **out)
{
    fstore *f = F(s);
    const jr__buf *src;
    if (blk == f->aid) {
        if (off < f->wbase) return active_read_old(s, off, len, out);
        off -= f->wbase;
        src = &f->plain;
    } else {
        size_t bi = jr__store_blk_find(s, blk);
        if (bi == SIZE_MAX) return jr__store_fail(s, JR_ECORRUPT, "block %u missing", blk);
        jr__blk *b = &s->blks[bi];
        if (jr__fstore_rd_get(s)) return JR_ENOMEM;
        if (b->kind == JR__BLK_OPEN && !(b->flags & JR__BLKF_ENC)) {
            jr_file *fh;
            int rc = handle_get(s, blk, &fh);
            if (rc) return rc;
            uint64_t at = JR__BLK_OPEN_HDR + (uint64_t)off;
            rc = ra_read(s, blk, fh, at, len, UINT64_MAX, out);
            if (rc == JR_ECORRUPT)
                return jr__store_fail(s, rc, "%s/%010u.blk: offset %llu: short read", f->dir, blk,
                                      (unsigned long long)at);
            if (rc && rc != JR_ENOMEM)
                return jr__store_fail(s, rc, "%s/%010u.blk: read failed", f->dir, blk);
            return rc;
        }
        if (b->kind == JR__BLK_SEALED && f->rd->cid != blk)
            return sealed_read(s, blk, b, off, len, out);
        int rc = cache_load(s, blk);
        if (rc) return rc;
        src = &f->rd->cache;
    }
    if ((size_t)off + len > src->len)
        return jr__store_fail(s, JR_ECORRUPT, "%s/%010u.blk: record beyond the block", f->dir, blk);
    *out = src->data + off;
    return 0;
}

/* Whether a surviving block other than block index `skip` (and not doomed) holds messages in
 * [lo, hi]. */
static int survives(const jr__store *s, size_t skip, uint64_t lo, uint64_t hi)
{
    for (size_t i = 0; i < s->nblks; i++) {
        const jr__blk *b = &s->blks[i];
        if (i == skip || !b->first || b->doomed) continue;
        if (b->first <= hi && b->last >= lo) return 1;
    }
    return 0;
}

/* Writes again the tombstones of block i that still matter (see the file comment). */
static int carry_tombstones(jr__store *s, size_t i)
{
    fstore *f = F(s);
    jr__blk *b = &s->blks[i];
    if (b->tomb_lo == UINT64_MAX || !survives(s, i, b->tomb_lo, UINT64_MAX)) return 0;
    uint32_t id = b->id;
    /* the records are walked from a buffer of our own: writing tombstones may rotate and reuse
     * the window or the read cache */
    jr__buf copy;
    jr__buf_init(&copy, s->alloc);
    if (id == f->aid) {
        int rc = active_whole(s);
        if (rc) return rc;
        jr__buf_put(&copy, f->plain.data, f->plain.len);
        if (copy.err) return copy.err;
    } else {
        /* the block is being dropped: its decoded image is taken out of the cache rather than
         * copied, and the file bytes it was decoded from are freed */
        int rc = cache_load(s, id);
        if (rc) return rc;
        copy = f->rd->cache;
        jr__buf_init(&f->rd->cache, s->alloc);
        f->rd->cid = 0;
        jr__buf_free(&f->rd->io);
    }
    size_t n = copy.len;
    int rc = 0;
    jr__srec r;
    size_t len;
    for (size_t off = 0; !rc && off < n; off += len) {
        if (jr__srec_decode(copy.data + off, n - off, 0, &r, &len)) break;
        size_t bi = jr__store_blk_find(s, id);
        if (r.type == JR__SREC_DEL && survives(s, bi, r.seq, r.ts)) {
            rc = jr__store_write_tomb(s, &r, r.seq);
        } else if (r.type == JR__SREC_DELSUBJ && survives(s, bi, 0, r.seq)) {
            rc = jr__store_write_tomb(s, &r, 0);
        }
    }
    jr__buf_free(&copy);
    return rc;
}

static int file_unlink(jr__store *s, size_t i)
{
    fstore *f = F(s);
    uint32_t id = s->blks[i].id;
    handle_forget(s, id);
    char path[PATHMAX];
    jr__fstore_path(f, path, sizeof path, id, "blk");
    int rc = f->vfs->remove(f->vfs->ctx, path);
    if (rc && rc != JR_ENOTFOUND) return jr__store_fail(s, rc, "%s: remove failed", path);
    sealed_forget(s, &s->blks[i]);
    return 0;
}

static int file_drop(jr__store *s, size_t i)
{
    int rc = carry_tombstones(s, i);
    /* Removal is durable at once: first make the newer blocks durable (the carried tombstones,
     * and what proves last_seq), or a crash could leave a store that forgot its last seq.
     * (Carrying may rotate, which only appends to the table: i still names our block.) */
    if (!rc) rc = active_sync(s);
    return rc ? rc : file_unlink(s, i);
}

static int file_erase(jr__store *s, uint32_t blk, uint32_t off, uint32_t len)
{
    fstore *f = F(s);
    int rc;
    if (blk == f->aid) {
        rc = active_flush(s);
        if (!rc) rc = active_whole(s);
        if (!rc) rc = active_open(s);
        if (rc) return rc;
        jr__srec_erase(f->plain.data + off, len);
        jr__buf img;
        jr__buf_init(&img, s->alloc);
        rc = jr__blk_write_open(f->plain.data, f->plain.len, f->aid, f->aflags, KEY(f), &img);
        if (rc) {
            jr__buf_free(&img);
            return rc;
        }
        f->vfs->close(f->vfs->ctx, f->af);
        f->af = NULL;
        rc = jr__fstore_replace(s, f->aid, img.data, img.len);
        uint64_t isize = img.len;
        jr__buf_free(&img);
        char path[PATHMAX];
        jr__fstore_path(f, path, sizeof path, f->aid, "blk");
        int rc2 = f->vfs->open(f->vfs->ctx, path, JR_O_READ, &f->af);
        if (rc2) {
            f->af = NULL;
            return jr__store_fail(s, rc2, "%s: reopen failed", path);
        }
        if (rc) return rc;
        f->fsize = f->wb = isize;
        f->flushed = f->plain.len;
        f->need_dirsync = 0;
        f->dirty = 0;
        return 0;
    }
    size_t bi = jr__store_blk_find(s, blk);
    if (bi == SIZE_MAX) return JR_ENOTFOUND;
    jr__blk *b = &s->blks[bi];
    rc = cache_load(s, blk);
    if (rc) return rc;
    jr__srec_erase(f->rd->cache.data + off, len);
    jr__buf_reset(&f->rd->tmp);
    if (b->kind == JR__BLK_SEALED)
        rc = jr__blk_seal(f->rd->cache.data, f->rd->cache.len, blk, b->flags, KEY(f), &f->rd->tmp);
    else
        rc = jr__blk_write_open(f->rd->cache.data, f->rd->cache.len, blk, b->flags, KEY(f),
                                &f->rd->tmp);
    uint32_t keep = f->rd->cid;
    handle_forget(s, blk);
    sealed_forget(s, b);
    if (!rc) rc = jr__fstore_replace(s, blk, f->rd->tmp.data, f->rd->tmp.len);
    if (!rc) f->rd->cid = keep; /* the cache matches the new file */
    return rc;
}

static int file_flush(jr__store *s, int sync)
{
    return sync ? active_sync(s) : active_flush(s);
}

/* jr__store_trim (store.h). */
static int file_trim(jr__store *s)
{
    fstore *f = F(s);
    jr__fstore_rd_free(s);
    if (!f->af) return 0; /* no active block, or trimmed already */
    int written = f->e ? f->e->pend.len == 0 : f->flushed == f->plain.len;
    if (!written) return 0;
    /* the window moves past everything written: the records are in the file, and a read of one
     * of them reads only that record (active_read_old); with encryption, checkpoints are kept to
     * find its frame (a failure to make them, JR_ENOMEM, only leaves the window as it is) */
    if (!f->e || !ckpt_add(s)) {
        f->wbase += (uint32_t)f->plain.len;
        f->flushed = 0;
        jr__buf_free(&f->plain);
        if (f->e) jr__buf_free(&f->e->pend);
    }
    if (!f->dirty && !f->need_dirsync) {
        /* synced too: the descriptor can go (active_open opens it again when needed) */
        f->vfs->close(f->vfs->ctx, f->af);
        f->af = NULL;
    }
    return 0;
}

static void file_close(jr__store *s)
{
    fstore *f = F(s);
    if (!f) return;
    jr__fstore_rd_free(s);
    if (f->af) f->vfs->close(f->vfs->ctx, f->af);
    for (size_t i = 0; i < s->nblks; i++) sealed_forget(s, &s->blks[i]);
    jr__buf_free(&f->plain);
    if (f->e) {
        jr__buf_free(&f->e->pend);
        jr__free(s->alloc, f->e->cp);
        sodium_memzero(&f->e->key, sizeof f->e->key);
        jr__free(s->alloc, f->e);
    }
    jr__free(s->alloc, f);
    s->bkctx = NULL;
}

/* read_run: an open unencrypted block's records are one range of its file (one pread), the
 * active block's buffered part one range of memory, and so is a block the read cache holds;
 * the records of an encrypted or sealed block on disk are framed or compressed one by one, and
 * the active block's written part is read back one checked record at a time
 * (active_read_old). */
static int file_read_run(jr__store *s, uint32_t blk, uint32_t off, uint32_t len,
                         const uint8_t **out)
{
    fstore *f = F(s);
    if (blk == f->aid) return off >= f->wbase ? file_read(s, blk, off, len, out) : JR_ENOTSUP;
    size_t bi = jr__store_blk_find(s, blk);
    if (bi == SIZE_MAX) return JR_ENOTSUP;
    const jr__blk *b = &s->blks[bi];
    if ((b->kind == JR__BLK_OPEN && !(b->flags & JR__BLKF_ENC)) || (f->rd && f->rd->cid == blk))
        return file_read(s, blk, off, len, out);
    return JR_ENOTSUP;
}

const jr__store_backend jr__fstore_backend = {
    .persistent = 1,
    .reserve = file_reserve,
    .commit = file_commit,
    .read = file_read,
    .read_run = file_read_run,
    .drop = file_drop,
    .carry = carry_tombstones,
    .unlink = file_unlink,
    .erase = file_erase,
    .flush = file_flush,
    .trim = file_trim,
    .close = file_close,
};
