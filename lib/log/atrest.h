/*
 * atrest — encryption at rest of the node's own files: keys derived from the host's node key,
 * sealed WAL entry records, and sealed files (snapshot files).
 *
 * Keys. The host gives one 32-byte node key (jr_node_config.key). Every file kind uses its own
 * subkey, derived with libsodium's crypto_kdf (BLAKE2b) from the node key: the WAL with context
 * "jrwal001", snapshot files with "jrsnap01" (subkey id 1 each), and each stream's message store
 * with "jrstore1" and subkey id xxh3(stream name) (lib/store/block.h). The node key itself never
 * reaches a file. A key check — the first 4 bytes of BLAKE2b-256(subkey), little-endian — is
 * written in the clear wherever a key was used, so that a wrong key is told apart (JR_EAUTH)
 * from damage (JR_ECORRUPT) before anything is decrypted, changed or removed.
 *
 * Cipher. XChaCha20-Poly1305 (IETF, libsodium crypto_aead_xchacha20poly1305_ietf): 24-byte
 * nonces, 16-byte tags. A nonce is never used twice under a key:
 *  - WAL records: 16 random bytes drawn when the WAL is opened (every open, so also across
 *    restarts and group incarnations) followed by a 64-bit counter of the records sealed since;
 *    two opens collide with probability 2^-128 per pair;
 *  - sealed files: 24 random bytes per frame.
 *
 * Sealed entry record (record type JR__REC_SEALED, record.h): the ENTRY payload with its data
 * encrypted,
 *     u64 term | u64 index | nonce[24] | ciphertext of the data | tag[16]
 * with associated data the record's bytes [12, 48): type, entry type, header sum, group, gseq,
 * term and index — so a sealed payload cannot be moved to another group, place or index. The
 * record checksum (xxh3) covers the ciphertext as for any record: recovery's damage detection
 * is unchanged, and a record whose checksum verifies but whose tag does not is not damage but
 * a forgery or a wrong key (JR_EAUTH).
 *
 * Sealed file (whole-file replacement for a plaintext file; what a snapshot file holds when
 * the node has a key), integers little-endian:
 *   header (48 bytes)
 *     magic "JRSEALED" (8) | version u32 (= 1) | key check u32 | file id [16] (random) |
 *     frame size u32 (= JR__SEALF_FRAME) | reserved u32 (= 0) | xxh3 of bytes [0, 40) u64
 *   frames: the plaintext cut in frames of JR__SEALF_FRAME bytes, the last one shorter or
 *     full (at least one frame, empty for an empty plaintext), each
 *       nonce[24] | ciphertext | tag[16]
 *     with associated data: the 48 header bytes, u64 frame number, u8 last (1 for the last
 *     frame, else 0). Frames cannot be reordered, dropped, truncated away or moved between
 *     files; the plaintext length follows from the file size.
 * Errors: a header whose checksum verifies but whose key check is not the key's (or no key) is
 * JR_EAUTH — the wrong key, nothing else; anything else that does not verify (the header's
 * checksum, a frame's tag under the right key, a size) is JR_ECORRUPT, damage, which the
 * node repairs from its peers like a damaged plaintext file.
 * A frame decrypts on its own, so any range of the plaintext is read with the frames that
 * cover it (jr__sealf_pread): a leader streams a sealed snapshot to a follower as plaintext
 * chunks without decrypting the whole file, and a follower seals what it receives frame by
 * frame (jr__sealf_writer), so no plaintext byte of a snapshot reaches the disk.
 */
#ifndef JR_LOG_ATREST_H
#define JR_LOG_ATREST_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "raft/raft.h"
#include "util/buf.h"

#define JR__ATREST_KEY_BYTES 32
#define JR__ATREST_NONCE 24
#define JR__ATREST_TAG 16

typedef struct jr__atrest_key {
    uint8_t key[JR__ATREST_KEY_BYTES];
    uint32_t check; /* first 4 bytes of BLAKE2b-256(key) */
} jr__atrest_key;

enum jr__atrest_purpose { JR__ATREST_WAL = 1, JR__ATREST_SNAP = 2 };

/* Derives the subkey of `purpose` from the 32-byte node key. 0 or JR_EIO (libsodium could not
 * be initialised). */
int jr__atrest_derive(const uint8_t node_key[32], int purpose, jr__atrest_key *out);
/* Zeroes a key (sodium_memzero). Safe on NULL. */
void jr__atrest_wipe(jr__atrest_key *k);

/* Record nonces: prefix (random at init) | counter. */
typedef struct jr__atrest_nonce {
    uint8_t prefix[16];
    uint64_t counter;
} jr__atrest_nonce;
void jr__atrest_nonce_init(jr__atrest_nonce *n);

/* Appends a sealed entry record (JR__REC_SEALED) of e to b (b->err records JR_ENOMEM or
 * JR_EMSGSIZE, as jr__rec_put). */
void jr__atrest_put_entry(jr__buf *b, uint64_t group, uint64_t gseq, const jr__entry *e,
                          const jr__atrest_key *k, jr__atrest_nonce *n);

/* Decrypts the data of a decoded sealed entry record `rec` (the record's first byte; r decoded
 * from it by jr__rec_decode with r->sealed set) into out (reset first; r->e.len bytes) and
 * points r->e.data at it. 0, JR_EAUTH (the tag does not verify), JR_ENOMEM. */
struct jr__rec;
int jr__atrest_open_entry(const jr__atrest_key *k, const uint8_t *rec, struct jr__rec *r,
                          jr__buf *out);

/* Sealed files ------------------------------------------------------------------------------ */

#define JR__SEALF_HDR 48
#define JR__SEALF_FRAME (64u << 10)
#define JR__SEALF_FRAME_OVERHEAD (JR__ATREST_NONCE + JR__ATREST_TAG)

/* 1 if p[0..n) starts with the sealed-file magic (a sealed file, whatever its state), else 0. */
int jr__sealf_is(const uint8_t *p, size_t n);

/* Checks a sealed file's header against k and its size: 0 and *plain_len (the plaintext's
 * length); JR_EAUTH if k is NULL or the file was sealed under another key (its header verifies);
 * JR_EVERSION for another format version; JR_ECORRUPT for a bad header or a size no sealed file
 * can have. */
int jr__sealf_check(const jr__atrest_key *k, const uint8_t *hdr, size_t n, uint64_t size,
                    uint64_t *plain_len);

/* Seals plain[0..n) into out (reset first). 0 or JR_ENOMEM. */
int jr__sealf_encode(const jr__atrest_key *k, const uint8_t *plain, size_t n, jr__buf *out);

/* Opens the whole sealed file p[0..n) into out (reset first). 0, JR_EAUTH (no key, another key),
 * JR_EVERSION, JR_ECORRUPT (not a sealed file, a damaged header, a size no sealed file has, a
 * frame that does not authenticate), JR_ENOMEM. */
int jr__sealf_decode(const jr__atrest_key *k, const uint8_t *p, size_t n, jr__buf *out);

/* Reads up to cap plaintext bytes at plaintext offset off of the sealed file f (size bytes)
 * into buf; *nread gets how many (fewer than cap only at the end). Reads and authenticates
 * only the frames that cover the range; scratch holds one frame. 0, the vfs's errors,
 * JR_EAUTH, JR_ECORRUPT, JR_ENOMEM. */
int jr__sealf_pread(const jr__atrest_key *k, jr_vfs *v, jr_file *f, uint64_t off, void *buf,
                    size_t cap, size_t *nread, jr__buf *scratch);

/* Writes a sealed file sequentially: the plaintext arrives in pieces of any size; full frames
 * are sealed and written as they complete, the rest is held (at most one frame). */
typedef struct jr__sealf_writer {
    const jr__atrest_key *k;
    uint8_t hdr[JR__SEALF_HDR];
    uint64_t frame;   /* frames written */
    uint64_t written; /* file bytes written */
    jr__buf part;     /* plaintext of the frame being filled */
    jr__buf out;      /* one sealed frame */
} jr__sealf_writer;

/* Starts a file at offset 0 of f (its header is written). 0, vfs errors. */
int jr__sealf_writer_begin(jr__sealf_writer *w, const jr__atrest_key *k, const jr_allocator *a,
                           jr_vfs *v, jr_file *f);
/* Adds n plaintext bytes. 0, vfs errors, JR_ENOMEM. */
int jr__sealf_writer_put(jr__sealf_writer *w, jr_vfs *v, jr_file *f, const void *p, size_t n);
/* Writes the last frame. 0, vfs errors, JR_ENOMEM. */
int jr__sealf_writer_end(jr__sealf_writer *w, jr_vfs *v, jr_file *f);
/* Frees the writer's buffers (the key is not owned). Safe to call twice. */
void jr__sealf_writer_free(jr__sealf_writer *w);

#endif
