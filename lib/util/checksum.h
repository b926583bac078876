/*
 * checksum — xxh3 (from libxxhash) for every persisted record and every peer frame.
 *
 * One place names the function so that all formats agree: a 64-bit XXH3 with seed 0, stored
 * little-endian. Never write a checksum of our own.
 */
#ifndef JR_UTIL_CHECKSUM_H
#define JR_UTIL_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

uint64_t jr__xxh3(const void *data, size_t len);

/* One-shot over several pieces without allocation. */
uint64_t jr__xxh3_2(const void *a, size_t alen, const void *b, size_t blen);

#endif
