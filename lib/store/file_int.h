/*
 * file_int — the file store backend's private layout, shared by file.c (the backend's operations:
 * the active block, reads, rotation, trim) and file_open.c (open, recovery, destroy).
 *
 * Invariants (file.c's header comment has the whole story):
 *  - s->bkctx is the fstore; rd and e are NULL until needed (read state) or for a store
 *    without encryption;
 *  - the active block is aid (0: none yet); af == NULL with aid != 0 means trimmed and synced;
 *  - plain holds the active block's records from plaintext offset wbase on (the window); the
 *    records before wbase were trimmed and are only in the file, where they are the bytes
 *    [JR__BLK_OPEN_HDR, JR__BLK_OPEN_HDR + wbase) without encryption, and with it the first
 *    e->wrecs frames, [JR__BLK_OPEN_HDR, JR__BLK_OPEN_HDR + wbase + wrecs * FRAME_OVERHEAD)
 *    (one frame per record, frames back to back);
 *  - with encryption, e->cp[0..ncp) are checkpoints of that trimmed part, increasing in both
 *    fields: a record starts at each, and between two consecutive ones (or from the implicit
 *    {0, 0} to the first, or from the last to wbase) lie fewer than CKPT_RECS records starting
 *    less than CKPT_BYTES after it. A record at plaintext offset off that is the nrec-th of the
 *    block has its frame at file offset JR__BLK_OPEN_HDR + off + nrec * JR__BLK_FRAME_OVERHEAD.
 */
#ifndef JR_STORE_FILE_INT_H
#define JR_STORE_FILE_INT_H

#include "block.h"
#include "store_int.h"

#define PATHMAX 4096
#define NHANDLES 8

/* A sealed block's header and chunk index, loaded at the first random read of it (jr__blk.bk;
 * NULL until then, and for open blocks, whose kind and flags jr__blk holds). */
typedef struct sidx {
    jr__blk_sealed hd;
    jr__blk_chunk chunks[];
} sidx;

typedef struct handle {
    uint32_t id;
    jr_file *f;
} handle;

/* A place in the trimmed part of an encrypted active block: the record at plaintext offset off
 * is the block's nrec-th (from 0). */
typedef struct ckpt {
    uint32_t off;
    uint32_t nrec;
} ckpt;

/* Checkpoints are at most this many records and (about) bytes apart: a read of a trimmed record
 * reads at most CKPT_BYTES + CKPT_RECS * JR__BLK_FRAME_OVERHEAD bytes besides its own frame
 * (about 5.4 KiB) and decrypts one frame; the table costs 8 bytes per CKPT_RECS records or
 * CKPT_BYTES bytes of records, whichever comes first. */
#define CKPT_RECS 32u
#define CKPT_BYTES 4096u

/* Encryption at rest: only an encrypted store has it. */
typedef struct fenc {
    jr__blk_key key;
    jr__blk_nonce nonce; /* frame nonces of the active block (fresh prefix at every open) */
    jr__buf pend;        /* encrypted frames of the active block not yet written */
    uint32_t wrecs;      /* records of the active block before wbase (trimmed) */
    size_t ncp;          /* checkpoints of the trimmed part (allocated exactly: ncp entries) */
    ckpt *cp;
} fenc;

/* Reading blocks other than the active one (and recovery, and rewriting them): allocated when
 * first needed, freed at the end of open and by jr__store_trim, so an idle store that never
 * read an old block carries none of it. */
typedef struct frd {
    handle h[NHANDLES]; /* read handles of other blocks */
    unsigned hnext;
    uint32_t cid; /* block decoded in cache (0: none) */
    jr__buf cache;
    uint32_t kid;    /* block of the decoded chunk (0: none) */
    uint32_t kchunk; /* its chunk number */
    jr__buf chunk;   /* one decoded chunk of a sealed block */
    jr__buf io;      /* file bytes read */
    jr__buf tmp;     /* images being rewritten, decoding scratch */
    /* readahead of an unencrypted open block (file.c ra_read): bytes [raat, raat + ra.len) of
     * block raid's file (0: none), and the end of the last record read from it */
    uint32_t raid;
    uint64_t raat, ranext;
    jr__buf ra;
} frd;

typedef struct fstore {
    jr_vfs *vfs;
    fenc *e; /* NULL: not encrypted */
    frd *rd; /* NULL: none (see frd) */

    /* active block */
    jr_file *af;
    uint32_t aid;   /* 0: no active block yet */
    uint8_t aflags; /* JR__BLKF_ENC or 0 */
    uint8_t compress;
    uint8_t need_dirsync;
    uint8_t dirty;  /* written since the last sync */
    jr__buf plain;  /* its records from wbase on (the window; freed while trimmed) */
    size_t flushed; /* plain bytes already written (unencrypted) */
    uint32_t wbase; /* plaintext offset of plain's first byte; the records before it were
                       trimmed and are only in the file (see the invariants above) */
    uint64_t fsize; /* bytes written to the file */
    uint64_t wb;    /* the file's bytes before this were synced or handed to writeback */
    char dir[];     /* store_dir/name (allocated with the struct) */
} fstore;

static inline fstore *F(jr__store *s)
{
    return s->bkctx;
}

static inline const jr__blk_key *KEY(const fstore *f)
{
    return f->e ? &f->e->key : NULL;
}

/* The backend's operations (file.c). */
extern const jr__store_backend jr__fstore_backend;

/* Makes sure f->rd exists. 0 or JR_ENOMEM. */
int jr__fstore_rd_get(jr__store *s);
/* Closes the read handles and frees the read state. */
void jr__fstore_rd_free(jr__store *s);
/* Forgets the readahead of block id (its file is about to change). */
void jr__fstore_ra_drop(jr__store *s, uint32_t id);
/* The path of block id with extension ext ("blk", "tmp") into out[0..n). */
void jr__fstore_path(const fstore *f, char *out, size_t n, uint32_t id, const char *ext);
/* Reads the whole file fh (named path, for messages) into buf. 0 or an error (store failed). */
int jr__fstore_read_all(jr__store *s, jr_file *fh, const char *path, jr__buf *buf);
/* Replaces block id's file with image[0..n) (tmp file, sync, rename, directory sync). */
int jr__fstore_replace(jr__store *s, uint32_t id, const uint8_t *image, size_t n);

#endif
