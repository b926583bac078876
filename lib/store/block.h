/*
 * block — the on-disk formats of message block files, independent of any file system, so they
 * can be fuzzed and tested on bytes alone.
 *
 * A block file holds the records (srecord.h) of a run of consecutive writes of one stream. Two
 * formats, told apart by their magic:
 *
 * Open block ("JRBK"): appended to while it is the stream's active block.
 *     0 "JRBK" | 4 u16 version (1) | 6 u16 flags | 8 u32 block id | 12 u32 key check
 *     16 u64 0 | 24 u64 xxh3(bytes 0..24)                                       = 32 bytes
 *   then frames: without JR__BLKF_ENC a frame is one record as is; with it a frame is
 *     u32 clen | nonce[24] | XChaCha20-Poly1305(record) (clen bytes, tag included)
 *   with associated data {u32 block id, u32 clen} and a nonce never used before under the key.
 *   A crash can tear the tail of an open block; the valid frames before it are kept.
 *
 * Sealed block ("JRSB"): written once (temporary file, sync, rename) when a block is full.
 *     0 "JRSB" | 4 u16 version (1) | 6 u16 flags | 8 u32 block id | 12 u32 key check
 *     16 u64 raw_len | 24 u64 stored_len | 32 nonce prefix[16] | 48 u32 nchunks | 52 u32 0
 *     56 u64 xxh3(bytes 0..56)                                                 = 64 bytes
 *   then stored_len bytes: the chunks, the chunk index, u64 xxh3(index).
 *   The records (raw_len bytes) are cut into chunks of whole records of about JR__BLK_CHUNK
 *   bytes, so that a random read decodes one chunk, not the block. A chunk is lz4-compressed
 *   (with JR__BLKF_LZ4, when that helps) and then, with JR__BLKF_ENC, sealed with
 *   XChaCha20-Poly1305 (nonce = prefix | u64 chunk number, associated data = header bytes
 *   0..24 | u32 chunk number, so chunks cannot be swapped or moved between blocks).
 *   Index entry (32 bytes): u64 raw_off | u32 raw_len | u32 stored_len (bit 31: lz4) |
 *   u64 stored_off (from the end of the header) | u64 xxh3(stored chunk).
 *
 * Encryption: the key is the stream key (jr__blk_derive_key: crypto_kdf from the host's master
 * key, context "jrstore1", subkey id = xxh3 of the stream name). The key check is 4 bytes of
 * BLAKE2b(stream key), so a wrong key is told apart (JR_EAUTH) from tampering (JR_ECORRUPT).
 *
 * Decoding never trusts a length: every size is checked against the bytes present, allocation
 * is bounded by the input (a chunk's raw_len <= 255 * its stored length, the lz4 bound), and
 * any inconsistency is JR_ECORRUPT with the offset where it was found.
 */
#ifndef JR_STORE_BLOCK_H
#define JR_STORE_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "util/buf.h"

#define JR__BLK_OPEN_HDR 32u
#define JR__BLK_SEAL_HDR 64u
#define JR__BLK_FRAME_OVERHEAD (4u + 24u + 16u)
#define JR__BLK_FRAME_HEAD (4u + 24u) /* in clear before a frame's ciphertext: length, nonce */
#define JR__BLK_FRAME_TAG 16u         /* the AEAD tag, counted in a frame's length */
#define JR__BLK_CHUNK (16u * 1024u)   /* target raw bytes per sealed chunk */
#define JR__BLK_CHUNK_ENTRY 32u
#define JR__BLK_RAW_MAX ((uint64_t)1 << 31) /* largest block */

enum { JR__BLKF_ENC = 1, JR__BLKF_LZ4 = 2 };
enum { JR__BLK_OPEN = 1, JR__BLK_SEALED = 2 };

typedef struct jr__blk_key {
    uint8_t key[32];
    uint32_t check;
} jr__blk_key;

/* Derives the stream key from a 32-byte master key and the stream name. 0 or JR_EIO (libsodium
 * failed to initialise). */
int jr__blk_derive_key(const uint8_t master[32], const char *name, jr__blk_key *out);

/* Writes an open block's 32-byte header. */
void jr__blk_open_header(uint8_t out[32], uint32_t id, int flags, uint32_t keycheck);

/* Size of the encrypted frame for a record of rlen bytes. */
static inline size_t jr__blk_frame_size(size_t rlen)
{
    return rlen + JR__BLK_FRAME_OVERHEAD;
}
/* Frame nonces: 16 random bytes chosen whenever an open block is (re)opened for appending,
 * then a 64-bit counter; so a nonce is never reused under a key, without a system call per
 * record. */
typedef struct jr__blk_nonce {
    uint8_t prefix[16];
    uint64_t counter;
} jr__blk_nonce;
void jr__blk_nonce_init(jr__blk_nonce *n);

/* Encrypts the record rec[0..rlen) into dst (jr__blk_frame_size(rlen) bytes) with the next
 * nonce of n (NULL: a random nonce). */
void jr__blk_frame(uint8_t *dst, const uint8_t *rec, size_t rlen, uint32_t id, const jr__blk_key *k,
                   jr__blk_nonce *n);

/* Opens the one frame that starts at f (n bytes available from there; more may follow) of the
 * encrypted open block id: checks that its length fits, authenticates and decrypts it into out
 * (room for n bytes is enough) and checks that it is one whole valid record (checksum), whose
 * length goes to *rlen. 0, or JR_ECORRUPT for anything else (short, failed authentication, not
 * one record): a reader that knows where a record's frame is needs only that frame. */
int jr__blk_frame_open(const uint8_t *f, size_t n, uint32_t id, const jr__blk_key *k, uint8_t *out,
                       size_t *rlen);

/* Builds a sealed block image of the records plain[0..n) into out (appended). flags: any of
 * JR__BLKF_LZ4 and JR__BLKF_ENC (then k is required). 0 or JR_ENOMEM. */
int jr__blk_seal(const uint8_t *plain, size_t n, uint32_t id, int flags, const jr__blk_key *k,
                 jr__buf *out);

/* Builds an open block image (header + frames) of the records plain[0..n) into out. */
int jr__blk_write_open(const uint8_t *plain, size_t n, uint32_t id, int flags, const jr__blk_key *k,
                       jr__buf *out);

/* Random access to a sealed block: parse the header, then the index, then decode one chunk. */
typedef struct jr__blk_sealed {
    uint32_t id;
    int flags;
    uint32_t keycheck;
    uint64_t raw_len;
    uint64_t stored_len;
    uint32_t nchunks;
    uint64_t index_off; /* file offset of the index (nchunks entries + u64 checksum) */
    uint8_t hdr[32];
    uint8_t prefix[16];
} jr__blk_sealed;

typedef struct jr__blk_chunk {
    uint64_t raw_off;
    uint32_t raw_len;
    uint32_t stored_len;
    int lz4;
    uint64_t stored_off; /* from the end of the header */
    uint64_t sum;
} jr__blk_chunk;

/* Parses and checks a sealed header (first 64 bytes of the file). 0 or JR_ECORRUPT. */
int jr__blk_sealed_header(const uint8_t *h, size_t n, jr__blk_sealed *out);
/* Checks the index idx[0..n) (from index_off to the end of the file) and fills chunks
 * (hd->nchunks entries): offsets contiguous, sizes plausible. 0 or JR_ECORRUPT. */
int jr__blk_sealed_index(const jr__blk_sealed *hd, const uint8_t *idx, size_t n,
                         jr__blk_chunk *chunks);
/* Decodes chunk i (stored: its stored_len bytes) into out (raw_len bytes). JR_ECORRUPT on a bad
 * checksum or lz4 stream, JR_EAUTH if authentication fails or there is no key. */
int jr__blk_chunk_decode(const jr__blk_sealed *hd, const jr__blk_chunk *c, uint32_t i,
                         const uint8_t *stored, const jr__blk_key *k, uint8_t *out,
                         jr__buf *scratch);

typedef struct jr__blk_info {
    int kind; /* JR__BLK_OPEN or JR__BLK_SEALED; 0 if the header is bad */
    uint32_t id;
    int flags;
    uint32_t keycheck;
    const uint8_t *plain; /* the records (into the file or into the caller's buffer) */
    size_t plain_len;     /* bytes of whole, valid records */
    uint64_t good_end;    /* file offset just past the last valid frame */
    uint64_t bad_off;     /* with an error: file offset where decoding stopped */
    const char *why;      /* with an error: what was wrong */
} jr__blk_info;

/* Decodes a whole block file f[0..n). Records are checked (checksums, shapes) but not their seq
 * order. For an open block, decoding stops at the first bad frame: the result is JR_ECORRUPT
 * with info->good_end/bad_off set, and info->plain holding the valid prefix (so the caller may
 * treat a torn tail as such). For a sealed block any defect is JR_ECORRUPT. Encrypted blocks
 * need k (NULL: JR_EAUTH); a key check mismatch is JR_EAUTH. Decoded plaintext goes to buf
 * (reset first) unless it can be pointed to inside f. */
int jr__blk_decode(const uint8_t *f, size_t n, const jr__blk_key *k, jr__buf *buf,
                   jr__blk_info *info);

/* 1 if a valid frame of an open block with this id/flags starts somewhere in f(from..n) (for
 * encrypted frames: one that authenticates and whose chain of lengths ends exactly at n), that
 * is, if the damage at f[from] cannot be a torn tail. scratch is working memory. */
int jr__blk_valid_after(const uint8_t *f, size_t n, size_t from, uint32_t id, int flags,
                        const jr__blk_key *k, jr__buf *scratch);

#endif
