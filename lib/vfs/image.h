/*
 * image — the bytes of one memfs file: a sparse array of fixed-size chunks, with a pool of
 * spare chunks shared by every file of a memfs.
 *
 * Why chunks: a simulated disk sees the same traffic as a real one — WAL segments and store
 * blocks appended to, then deleted. A file kept as one doubling buffer copies itself at every
 * doubling and hands fresh pages to the kernel each time (a page fault per 4 KiB written); a
 * chunked file never copies, and chunks of deleted files are reused by the next ones, so a
 * steady write load touches memory that is already mapped.
 *
 * Layout: chunk i holds bytes [i * JR__CHUNK, (i + 1) * JR__CHUNK). A NULL chunk is a hole and
 * reads as zeros. Chunk 0 alone may be smaller than JR__CHUNK (cap0 bytes, doubling from a small
 * size), so that the many small files a node keeps (snapshots, metadata) stay small.
 *
 * Invariants: chunk 0 is NULL or holds cap0 bytes (cap0 <= JR__CHUNK); every other chunk is NULL
 * or JR__CHUNK bytes; bytes an image never had written read as zero; chunks in a pool are
 * JR__CHUNK bytes of any content (they are zeroed when taken). No allocation outside
 * jr__image_reserve.
 */
#ifndef JR_VFS_IMAGE_H
#define JR_VFS_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

#define JR__CHUNK ((uint64_t)64 << 10)

typedef struct jr__chunk_pool {
    const jr_allocator *alloc;
    uint8_t **spare;
    size_t n, cap, max; /* at most max chunks are kept; more are freed */
} jr__chunk_pool;

typedef struct jr__image {
    uint8_t **chunks;
    size_t nchunks; /* slots in chunks[] (holes included) */
    uint64_t cap0;  /* bytes held by chunks[0] when it is not NULL */
} jr__image;

void jr__chunk_pool_init(jr__chunk_pool *p, const jr_allocator *a, size_t max_chunks);
void jr__chunk_pool_free(jr__chunk_pool *p);

/* Makes [off, off + len) writable: allocates the slots and chunks it touches (from the pool
 * first). 0, or JR_ENOMEM with the image's content unchanged (it may hold more zero chunks). */
int jr__image_reserve(jr__image *im, jr__chunk_pool *p, uint64_t off, uint64_t len);
/* Copies buf into [off, off + len), which must have been reserved — except where buf holds
 * zeros (holes are left alone: they read as zeros already). */
void jr__image_write(jr__image *im, uint64_t off, const void *buf, uint64_t len);
/* Copies [off, off + len) into buf (holes read as zeros). */
void jr__image_read(const jr__image *im, uint64_t off, void *buf, uint64_t len);
/* Zeroes [off, off + len) (holes stay holes). */
void jr__image_zero(jr__image *im, uint64_t off, uint64_t len);
/* The byte at off, which must have been reserved. */
uint8_t *jr__image_at(jr__image *im, uint64_t off);
/* Gives every chunk back to the pool (or frees it); the image becomes empty. */
void jr__image_release(jr__image *im, jr__chunk_pool *p);

#endif
