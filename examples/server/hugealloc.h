/*
 * hugealloc — the allocator jetraft-server hands the library (jr_node_config.alloc): the C
 * library's malloc family, with large blocks backed by transparent huge pages where the kernel
 * offers them.
 *
 * The library's large blocks are a busy group's Raft log rings (tens of MiB, allocated as a new
 * stream takes traffic and grown by doubling) and the store's and WAL's write buffers. Each of
 * their 4 KiB pages costs a page fault on first touch, and a stream's first few hundred
 * thousand messages are all written into pages never touched before: in a virtual machine those
 * faults were the largest single cost per message. A block of at least HUGEALLOC_MIN bytes is
 * a mapping of its own (mmap), a whole number of HUGEALLOC_PAGE at a huge-page boundary,
 * advised MADV_HUGEPAGE, so the kernel faults it in 2 MiB at a time (512 times fewer faults);
 * realloc grows one with mremap, which moves its pages to the larger mapping instead of copying
 * them into fresh ones (a log ring doubling from 16 to 32 MiB copies nothing and faults in only
 * its new half). Smaller blocks, and everything when the advice is off, are plain malloc,
 * realloc and free. Under AddressSanitizer the large blocks are aligned_alloc'd instead (its
 * allocator tracks only its own blocks), grown by realloc's copy.
 *
 * Invariants: a large block is in the allocator's table of mappings from its allocation to its
 * free (or its shrinking below HUGEALLOC_MIN); every other block comes from the C library and
 * goes back to it with free(); the advice only ever covers whole huge pages inside a block this
 * allocator returned; a failed madvise (a kernel without transparent huge pages) leaves an
 * ordinary block, never an error.
 */
#ifndef JR_SERVER_HUGEALLOC_H
#define JR_SERVER_HUGEALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

#define HUGEALLOC_PAGE ((size_t)2 << 20) /* the x86-64 and arm64 (4 KiB base) huge page */
#define HUGEALLOC_MIN ((size_t)4 << 20)  /* smaller blocks are left to malloc as they are */

/* The allocator: huge-page advice on when `on`, else the malloc family as it is. The table is
 * static; the setting holds for the life of the process (call before jr_node_open). */
const jr_allocator *hugealloc_get(int on);

/* Counters for tests: blocks advised, and bytes covered by the advice; large blocks grown by
 * moving their pages (mremap) rather than copying them, and the bytes they held. */
typedef struct hugealloc_stats {
    uint64_t advised;
    uint64_t advised_bytes;
    uint64_t remapped;
    uint64_t remapped_bytes;
} hugealloc_stats;
void hugealloc_stats_get(hugealloc_stats *out);

/* The range [*start, *start + *len) of whole huge pages inside [p, p + n); *len 0 if none. */
void hugealloc_range(const void *p, size_t n, uintptr_t *start, size_t *len);

#endif
