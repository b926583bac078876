/*
 * file_int — the file store backend's private layout, shared by file.c (the backend's operations:
 * the active block, reads, rotation, trim) and file_open.c (open, recovery, destroy).
 *
 * Invariants (file.c's header comment has the whole story):
 *  - s->bkctx is the fstore; rd and e are NULL until needed (read state) or for a store
 *    without encryption;
 *  - the active block is aid (0: none yet); af == NULL with aid != 0 means trimmed and synced;
 *  - without encryption plain holds the active block's plaintext from wbase on; with encryption,
 *    tlen != 0 means plain was freed by trim and the records are only in the file.
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

/* Encryption at rest: only an encrypted store has it. */
typedef struct fenc {
    jr__blk_key key;
    jr__blk_nonce nonce; /* frame nonces of the active block (fresh prefix at every open) */
    jr__buf pend;        /* encrypted frames of the active block not yet written */
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
    uint32_t wbase; /* unencrypted: plaintext offset of plain's first byte; the records before it
                       were trimmed and are only in the file (at JR__BLK_OPEN_HDR + offset) */
    uint32_t tlen;  /* encrypted, trimmed: plain's length; its records are only in the file */
    uint64_t fsize; /* bytes written to the file */
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
/* The path of block id with extension ext ("blk", "tmp") into out[0..n). */
void jr__fstore_path(const fstore *f, char *out, size_t n, uint32_t id, const char *ext);
/* Reads the whole file fh (named path, for messages) into buf. 0 or an error (store failed). */
int jr__fstore_read_all(jr__store *s, jr_file *fh, const char *path, jr__buf *buf);
/* Replaces block id's file with image[0..n) (tmp file, sync, rename, directory sync). */
int jr__fstore_replace(jr__store *s, uint32_t id, const uint8_t *image, size_t n);

#endif
