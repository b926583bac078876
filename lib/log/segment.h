/*
 * segment — WAL segment files: names, the segment header, listing, and a windowed reader.
 *
 * A segment is the file "<seq as 16 lower-case hex digits>.wal" in the WAL directory; seq
 * numbers start at 1 and are consecutive (a missing number is a lost segment). A segment
 * starts with a 32-byte header, then records (record.h), the first of which is a checkpoint:
 *
 *   0  8  magic "JRWALSEG"
 *   8  4  format version: JR__SEG_VERSION (plaintext) or JR__SEG_VERSION_SEALED (encrypted)
 *   12 4  version 1: reserved, 0; version 2: the WAL key's check (atrest.h)
 *   16 8  seq (equal to the file name's)
 *   24 8  xxh3 of bytes [0, 24)
 *
 * A WAL is either plaintext (every segment version 1, entry records ENTRY) or encrypted (every
 * segment version 2 with one key check, entry records SEALED): the node key decides, and a
 * segment of the other kind, or of another key, is refused (JR_EAUTH) before recovery reads a
 * record or changes a byte. A reader that predates version 2 refuses it as an unknown
 * version (JR_EVERSION), never as damage.
 *
 * Segments are written append-only and never reused: a new one is created at rotation and at
 * every open. Any other file name in the directory is not the WAL's and is ignored.
 */
#ifndef JR_LOG_SEGMENT_H
#define JR_LOG_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

#define JR__SEG_HDR 32
#define JR__SEG_VERSION 1
#define JR__SEG_VERSION_SEALED 2
#define JR__SEG_NAME_LEN 20 /* 16 hex digits + ".wal" */

/* Writes "<dir>/<seq>.wal" into out (cap bytes). JR_EINVAL if it does not fit. */
int jr__seg_path(char *out, size_t cap, const char *dir, uint64_t seq);
/* Parses a directory entry name; 0 and *seq if it is a segment name (seq > 0), else -1. */
int jr__seg_parse_name(const char *name, uint64_t *seq);

/* The header of segment seq: plaintext (keycheck NULL) or encrypted under the key whose check
 * is *keycheck. */
void jr__seg_header(uint8_t out[JR__SEG_HDR], uint64_t seq, const uint32_t *keycheck);
/* 0 if the header is valid for seq and of the WAL's kind (keycheck NULL: plaintext; else
 * encrypted under that check); JR_EVERSION if it is a valid header of an unknown format
 * version; JR_EAUTH if it is valid but of the other kind or another key; JR_ECORRUPT otherwise
 * (including a seq mismatch). */
int jr__seg_header_check(const uint8_t *p, size_t n, uint64_t seq, const uint32_t *keycheck);

/* Lists the segment seqs in dir, ascending, into *seqs (allocated with a; *n entries).
 * JR_ENOTFOUND if dir is missing; vfs errors; JR_ENOMEM. */
int jr__seg_list(jr_vfs *vfs, const char *dir, const jr_allocator *a, uint64_t **seqs, size_t *n);

/* A sequential reader over one file with a sliding window, so recovery never holds more than
 * the window (or the largest record) in memory. */
typedef struct jr__segrd {
    jr_vfs *vfs;
    jr_file *f;
    const jr_allocator *alloc;
    uint64_t size; /* file size */
    uint8_t *buf;
    size_t cap;
    uint64_t base; /* file offset of buf[0] */
    size_t len;    /* valid bytes in buf */
    int err;       /* first I/O error */
} jr__segrd;

void jr__segrd_init(jr__segrd *r, jr_vfs *vfs, jr_file *f, uint64_t size, const jr_allocator *a);
void jr__segrd_free(jr__segrd *r);
/* A pointer to at least n bytes at file offset off (and as many more as are buffered, up to
 * end of file; *avail gets that count), or NULL if off + n > size or on an I/O error (r->err).
 * Valid until the next call. */
const uint8_t *jr__segrd_at(jr__segrd *r, uint64_t off, uint64_t n, uint64_t *avail);

#endif
