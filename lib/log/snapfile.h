/*
 * snapfile — the on-disk (and on-wire) format of one state-machine snapshot.
 *
 * A snapshot file is also exactly what a leader streams to a lagging follower in chunks
 * (raft.h io->snap_read / snap_write): the follower reassembles the bytes, and only a file that
 * decodes — checksum, structure, decompression — is installed.
 *
 * Layout, version 1 (integers little-endian):
 *   header (56 bytes)
 *     magic "JRSN" (4) | version u8 (= 1) | flags u8 (= 0) | reserved u16 (= 0) |
 *     group u64 | index u64 | term u64 | conf_len u32 | nblocks u32 | raw_len u64 | body_len u64
 *   conf        conf_len bytes: jr__conf_encode() of the configuration at `index`
 *   body        body_len bytes: nblocks blocks, each
 *                 raw u32 (1 .. JR__SNAPFILE_BLOCK) | stored u32 | stored bytes
 *               where stored's top bit set means the block is kept uncompressed (stored & ~bit
 *               == raw), else the bytes are one LZ4 block that decompresses to exactly raw bytes
 *   trailer     xxh3-64 of every preceding byte (u64)
 *
 * Decoding is strict: exact total length, zero flags/reserved, conf_len <= JR__SNAPFILE_MAX_CONF,
 * the block walk ends exactly at the trailer, block sizes sum to raw_len, and a compressed block
 * claims no more than LZ4's maximal ratio, so a crafted header cannot make the decoder allocate
 * more than a bounded multiple of the file's size. Nothing is read out of bounds.
 */
#ifndef JR_LOG_SNAPFILE_H
#define JR_LOG_SNAPFILE_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define JR__SNAPFILE_VERSION 1
#define JR__SNAPFILE_HEADER 56
#define JR__SNAPFILE_BLOCK (1u << 20)
#define JR__SNAPFILE_MAX_CONF 4096u

typedef struct jr__snapfile_info {
    uint64_t group;
    uint64_t index;
    uint64_t term;
    const uint8_t *conf; /* borrowed from the decoded bytes */
    uint32_t conf_len;
    uint64_t raw_len;
} jr__snapfile_info;

/* Encodes a snapshot of raw_len bytes into out (reset first). 0, JR_ENOMEM, or JR_EINVAL
 * (conf_len too large). */
int jr__snapfile_encode(jr__buf *out, uint64_t group, uint64_t index, uint64_t term,
                        const uint8_t *conf, uint32_t conf_len, const uint8_t *raw, size_t raw_len);

/* Checks the file's structure and checksum without decompressing; fills *info. 0, JR_ECORRUPT,
 * JR_EVERSION. */
int jr__snapfile_check(const uint8_t *p, size_t n, jr__snapfile_info *info);

/* jr__snapfile_check, then decompresses the state into out (reset first; exactly raw_len
 * bytes). 0, JR_ECORRUPT, JR_EVERSION, JR_ENOMEM. */
int jr__snapfile_decode(const uint8_t *p, size_t n, jr__snapfile_info *info, jr__buf *out);

#endif
