/*
 * abi — reading and writing public structs that start with a `size` field.
 *
 * A caller compiled against an older header knows a prefix of a struct: its `size` says how
 * many bytes it has. The library never reads or writes a byte of a caller's struct past that
 * size, whatever sizeof says here:
 *  - jr__abi_init: an init function fills at most the caller's size with the library's
 *    defaults (bytes past what the library knows are zeroed) and records the size it wrote;
 *  - jr__abi_read: a struct the caller passes in is copied over a full-size default, so the
 *    fields the caller did not know keep their defaults;
 *  - jr__abi_write: a struct the caller receives gets only the bytes both sides know, and its
 *    size says how many that was.
 * Every such struct starts with `size_t size`.
 */
#ifndef JR_UTIL_ABI_H
#define JR_UTIL_ABI_H

#include <stddef.h>
#include <string.h>

/* The size a caller's struct declares (its first field). */
static inline size_t jr__abi_size(const void *caller)
{
    size_t n;
    memcpy(&n, caller, sizeof n);
    return n;
}

/* Writes the first `size` bytes of the full-size `defaults` (full bytes) to dst, zeroes the
 * rest of size, and sets dst's size field to the bytes written. Nothing if size cannot even
 * hold the size field. */
static inline void jr__abi_init(void *dst, size_t size, const void *defaults, size_t full)
{
    if (!dst || size < sizeof(size_t)) return;
    size_t n = size < full ? size : full;
    memcpy(dst, defaults, n);
    if (size > n) memset((char *)dst + n, 0, size - n);
    memcpy(dst, &n, sizeof n);
}

/* Copies the caller's struct src (its own size) over the full-size dst, which holds the
 * defaults; dst's size becomes full. 0, or -1 if src's size cannot hold its size field. */
static inline int jr__abi_read(void *dst, size_t full, const void *src)
{
    size_t n = jr__abi_size(src);
    if (n < sizeof(size_t)) return -1;
    memcpy(dst, src, n < full ? n : full);
    memcpy(dst, &full, sizeof full);
    return 0;
}

/* Copies the full-size src to the caller's dst, at most dst's size; dst's size becomes the
 * bytes written. 0, or -1 if dst's size cannot hold its size field. */
static inline int jr__abi_write(void *dst, const void *src, size_t full)
{
    size_t n = jr__abi_size(dst);
    if (n < sizeof(size_t)) return -1;
    if (n > full) n = full;
    memcpy(dst, src, n);
    memcpy(dst, &n, sizeof n);
    return 0;
}

#endif
