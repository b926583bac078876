/*
 * store_int — the store core's internals, shared with its two backends (mem.c, file.c).
 *
 * The core owns the sequence index (seqidx.h: one jr__ent per live message), the per-subject
 * index, the interior-delete ranges, the block table and the counters. A backend owns where the
 * bytes of records live, behind jr__store_backend. Records are placed in blocks (ids increase
 * with time, seqs increase with ids); the core counts live messages per block and asks the
 * backend to drop a block once it holds none and is not the active one.
 *
 * Invariants:
 *  - idx holds exactly the live messages; first_seq is the first entry's seq, or last_seq + 1
 *    when idx is empty. Entry prev/next link the live messages of one subject in seq order (0
 *    ends the chain), from subj.first to subj.last; so a subject's first, last and count, and
 *    its neighbours of any of its messages, are found without scanning.
 *  - msgs (== idx.count), bytes, per-block live counts and bytes, and per-subject counts always
 *    agree with the entries.
 *  - ranges holds exactly the deleted seqs in (first_seq, last_seq], merged.
 */
#ifndef JR_STORE_STORE_INT_H
#define JR_STORE_STORE_INT_H

#include "seqidx.h"
#include "srecord.h"
#include "store.h"
#include "subjidx.h"

typedef struct jr__blk {
    uint32_t id;
    uint8_t doomed;      /* marked store: to be removed once the mark being written is durable */
    uint8_t kind;        /* backend's: the file store's block format (JR__BLK_OPEN/SEALED) */
    uint8_t flags;       /* backend's: the file store's JR__BLKF_* of the block file */
    uint64_t live;       /* live messages */
    uint64_t live_bytes; /* their record bytes */
    uint64_t first;      /* lowest seq of a message written to it (0: none yet) */
    uint64_t last;       /* highest seq of a message written to it */
    uint64_t tomb_lo;    /* lowest seq a tombstone in it may refer to; UINT64_MAX: none */
    uint64_t mark_key;   /* highest key of a mark in it (0: none) */
    void *bk; /* backend's per-block data (file store: NULL, or a sealed block's index) */
} jr__blk;

/* Where a record lies (block id, plaintext offset, length). */
typedef struct jr__rpos {
    uint32_t blk, off, len;
    uint64_t key; /* marks: their key */
} jr__rpos;

/* What open learned of the marks of a marked store (store.h "Marks"): allocated at the first
 * MARK record replayed, freed at the next jr__store_mark (it is not kept up to date after). */
typedef struct jr__store_loaded {
    jr__rpos mark_pos;          /* where the last loaded mark lies */
    jr__store_state mark_state; /* the state it recorded (for the check at open) */
    jr__rpos *kept;             /* loaded marks with a key, oldest first */
    size_t nkept, kept_head, kept_cap;
} jr__store_loaded;

/* Erase-deletes of a marked store waiting for the next mark. */
typedef struct jr__store_erases {
    size_t n, cap;
    jr__rpos v[];
} jr__store_erases;

typedef struct jr__store_backend {
    int persistent;
    /* Reserves len bytes for a record at the end of the active block (rotating to a new block
     * first if it does not fit); *p gets where to encode it, *blk and *off its place. */
    int (*reserve)(jr__store *s, size_t len, uint8_t **p, uint32_t *blk, uint32_t *off);
    /* The record at p (from reserve) is complete. */
    int (*commit)(jr__store *s, uint8_t *p, size_t len);
    /* Points *out at the record bytes (len bytes, already verified at load or write). */
    int (*read)(jr__store *s, uint32_t blk, uint32_t off, uint32_t len, const uint8_t **out);
    /* Optional (NULL: none): as read, for several records that follow each other in block blk
     * ([off, off + len) holds them whole), in one read where they are one range on the
     * backend's medium; JR_ENOTSUP where they are not (the caller reads them one by one). */
    int (*read_run)(jr__store *s, uint32_t blk, uint32_t off, uint32_t len, const uint8_t **out);
    /* Block at index i of the table holds no live message and is not active: free it (its
     * tombstones that still matter are written again first, and removal is durable). */
    int (*drop)(jr__store *s, size_t i);
    /* Marked stores drop in two steps: carry writes again the tombstones of block i that
     * blocks not doomed still need; unlink (once a later mark is durable) removes it. */
    int (*carry)(jr__store *s, size_t i);
    int (*unlink)(jr__store *s, size_t i);
    /* Optional (NULL: none): block at index i just lost a live message and still has some; the
     * backend may move its live records (setting their entries' off). Best effort. */
    int (*compact)(jr__store *s, size_t i);
    /* Overwrite the content of the record at (blk, off, len). */
    int (*erase)(jr__store *s, uint32_t blk, uint32_t off, uint32_t len);
    /* Write buffered records; with sync, make them durable. */
    int (*flush)(jr__store *s, int sync);
    /* jr__store_trim (store.h); NULL: nothing to trim. */
    int (*trim)(jr__store *s);
    void (*close)(jr__store *s);
} jr__store_backend;

struct jr__store {
    const jr__store_backend *bk;
    void *bkctx;
    const jr_allocator *alloc;
    jr__store_limits lim;
    uint64_t block_bytes;

    /* sequence index */
    jr__seqidx idx;
    uint64_t last_seq;
    int64_t last_ts;
    uint64_t msgs, bytes;
    int64_t max_ts;   /* newest timestamp appended */
    uint64_t encoded; /* message records appends encoded (and checksummed) here */

    jr__subjidx subjects;

    jr__seq_range *ranges;
    size_t nranges, rcap;
    uint64_t ndeleted;

    jr__blk *blks;
    size_t nblks, bcap;

    uint64_t durable;    /* durable watermark */
    uint64_t front_done; /* file: every seq <= this has a tombstone written (seqs below base
                            that are not are tombstoned lazily, at the next flush) */
    int failed;          /* sticky write error */
    uint8_t loading;     /* replaying at open: no tombstones written */

    /* marks (store.h, "Marks") */
    uint8_t marked;           /* persistent and opened with cfg.marked: removals wait for marks */
    uint64_t mark_index;      /* index of the last mark written or loaded (0: none) */
    uint64_t mark_floor;      /* its floor */
    jr__store_loaded *ld;     /* the marks loaded at open; NULL if none, and after the next mark */
    jr__store_erases *erases; /* erase-deletes waiting for the next mark (NULL: none yet) */

    char *err;   /* the last failure's message (JR__STORE_ERR bytes, allocated at the first) */
    char name[]; /* the stream's name (allocated with the struct) */
};

#define JR__STORE_ERR 256

/* Sets s->err (printf-style) and returns code. */
int jr__store_fail(jr__store *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Adds an empty block with id to the end of the table. 0 or JR_ENOMEM. */
int jr__store_blk_add(jr__store *s, uint32_t id);
/* Index of the block with id, or SIZE_MAX. */
size_t jr__store_blk_find(const jr__store *s, uint32_t id);

/* Replay at open (file backend): one record read from block blk at plaintext offset off. */
int jr__store_load(jr__store *s, const jr__srec *r, uint32_t blk, uint32_t off, uint32_t len);

/* Writes tombstone r into the active block (file store; a no-op otherwise or while loading).
 * lo_target: the lowest seq it may delete (to decide whether it must outlive its block). */
int jr__store_write_tomb(jr__store *s, const jr__srec *r, uint64_t lo_target);

/* Whether seq is live (for carrying tombstones forward). */
int jr__store_live(const jr__store *s, uint64_t seq);

/* Backends. */
int jr__store_mem_open(jr__store *s, const jr__store_config *cfg);
int jr__store_file_open(jr__store *s, const jr__store_config *cfg);

#endif
