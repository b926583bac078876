/*
 * record — the byte format of WAL records, and their strict decoding.
 *
 * Every record is a 32-byte header followed by `len` payload bytes, little-endian:
 *
 *   off  size  field
 *   0    8     crc    xxh3 of bytes [8, 32 + len): the rest of the header and the payload
 *   8    4     len    payload length
 *   12   1     type   enum jr__rec_type
 *   13   1     etype  entry type (jr__entry_type) for entries, 0 otherwise
 *   14   2     hsum   low 16 bits of xxh3 of bytes [8, 14) ++ [16, 32): lets recovery trust a
 *                     header (its group and length) whose payload is damaged
 *   16   8     group  group id (non-zero); 0 for checkpoints
 *   24   8     gseq   per-group record number: 1, 2, 3, ... for each incarnation of a group (a
 *                     drop record ends an incarnation); 0 for checkpoints. Recovery uses it to
 *                     see exactly which groups lost records in a damaged region.
 *
 * Payloads: ENTRY {u64 term, u64 index (>0), data}; HARDSTATE {u64 term, u64 vote, u64 commit};
 * COMPACT {u64 index, u64 term}; DROP {}; CHECKPOINT {u32 n, n × jr__rec_cpitem (68 bytes)};
 * TRUNCATE {u64 from (>0)}; SEALED {u64 term, u64 index (>0), nonce[24], encrypted data, tag[16]}.
 *
 * SEALED is an ENTRY whose data is encrypted (atrest.h has the cipher, the nonce scheme and the
 * associated data); its etype is the entry type as for ENTRY. It decodes as an entry
 * (r->type == JR__REC_ENTRY, r->sealed == 1, r->e.data pointing at the ciphertext and r->e.len
 * the plaintext's length) whose data must be opened with jr__atrest_open_entry before use. It is
 * written only in segments of the encrypted format (segment.h), which a reader that predates it
 * refuses as a format version it does not know rather than take for damage.
 *
 * TRUNCATE {group, from}: every entry of that group with index >= from recorded before it (in
 * log order, same incarnation) is void; entries recorded after it are not affected. It is the
 * explicit form of the cut an ENTRY record implies for its own index, for the cases where no
 * entry follows the cut: a follower whose log does not hold the snapshot's last (index, term)
 * discards all of it when it installs the snapshot (dissertation §5.3, the InstallSnapshot
 * receiver rules), and records that as TRUNCATE {group, snapshot index + 1} (with COMPACT
 * {group, snapshot index}), since no entry of the old log above the snapshot may be replayed
 * after it (log matching would not hold for them). A `from` beyond the group's last index
 * voids nothing; one at or below its compaction marker voids everything above the marker.
 * The type is newer than the rest of format version 1: a reader that predates it finds an
 * unknown type there, takes the record for damage and reports the group damaged (it does not
 * present the group's log as healthy).
 *
 * A CHECKPOINT opens every segment: the state of every live group as of that point (record
 * count, last index, hard state, compaction marker, damage flag). It lets recovery verify groups
 * that wrote nothing after a damaged region, and keeps hard state and markers alive when older
 * segments are deleted.
 *
 * Decoding is strict: a record is valid only if hsum and crc match, every reserved value is
 * zero and the payload has exactly the size its type requires. Nothing is read outside the
 * bytes given.
 */
#ifndef JR_LOG_RECORD_H
#define JR_LOG_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "raft/raft.h"
#include "util/buf.h"

#define JR__REC_HDR 32
#define JR__REC_CPITEM 68
/* Largest payload accepted (an entry's data is at most this minus 16). */
#define JR__REC_MAX_LEN ((uint32_t)1 << 30)
/* Bytes a SEALED record's payload holds beyond an ENTRY's: nonce (24) and tag (16). */
#define JR__REC_SEALED_OVERHEAD 40u

enum jr__rec_type {
    JR__REC_ENTRY = 1,
    JR__REC_HARDSTATE = 2,
    JR__REC_COMPACT = 3,
    JR__REC_DROP = 4,
    JR__REC_CHECKPOINT = 5,
    JR__REC_TRUNCATE = 6,
    JR__REC_SEALED = 7,
};
/* Highest valid type (types are 1..JR__REC_TYPE_MAX). */
#define JR__REC_TYPE_MAX JR__REC_SEALED

/* One group in a checkpoint. */
enum { JR__CP_HAS_HS = 1, JR__CP_HAS_COMPACT = 2, JR__CP_DAMAGED = 4 };
typedef struct jr__rec_cpitem {
    uint64_t group;
    uint64_t gseq;       /* records written in the group's current incarnation */
    uint64_t last_index; /* last index in its log (0 if none) */
    jr__hardstate hs;
    uint64_t cindex, cterm;
    uint32_t flags; /* JR__CP_* */
} jr__rec_cpitem;

/* A decoded record; pointers borrow the bytes given to jr__rec_decode. */
typedef struct jr__rec {
    uint8_t type;
    uint8_t etype;
    uint32_t len; /* payload length */
    uint64_t group;
    uint64_t gseq;
    const uint8_t *payload;
    /* decoded payload (by type) */
    jr__entry e;            /* ENTRY: e.data points into payload */
    jr__hardstate hs;       /* HARDSTATE */
    uint64_t cindex, cterm; /* COMPACT */
    uint64_t tfrom;         /* TRUNCATE */
    uint32_t ncp;           /* CHECKPOINT: item count; items with jr__rec_cpitem_at */
    uint8_t sealed;         /* SEALED (decoded as ENTRY): e.data is ciphertext; see above */
} jr__rec;

/* Appends a record to b (b->err records JR_ENOMEM). payload/plen may be split in two pieces
 * (a fixed prefix and data) to avoid a copy. */
void jr__rec_put(jr__buf *b, uint8_t type, uint8_t etype, uint64_t group, uint64_t gseq,
                 const void *p1, size_t n1, const void *p2, size_t n2);
/* Appends the header of a record of `len` payload bytes to b and returns where its payload goes
 * (the caller fills exactly len bytes, then calls jr__rec_put_end); NULL if it cannot (b->err
 * says why: JR_ENOMEM, JR_EMSGSIZE). For payloads built in place (sealed entries). */
uint8_t *jr__rec_put_begin(jr__buf *b, uint8_t type, uint8_t etype, uint64_t group, uint64_t gseq,
                           size_t len);
/* Completes the record begun at b->len: computes its checksum and appends it. */
void jr__rec_put_end(jr__buf *b);
/* Encoders for each type (payloads built here). */
void jr__rec_put_entry(jr__buf *b, uint64_t group, uint64_t gseq, const jr__entry *e);
void jr__rec_put_hardstate(jr__buf *b, uint64_t group, uint64_t gseq, const jr__hardstate *hs);
void jr__rec_put_compact(jr__buf *b, uint64_t group, uint64_t gseq, uint64_t index, uint64_t term);
void jr__rec_put_drop(jr__buf *b, uint64_t group, uint64_t gseq);
void jr__rec_put_truncate(jr__buf *b, uint64_t group, uint64_t gseq, uint64_t from);
/* A checkpoint of n items. */
void jr__rec_put_checkpoint(jr__buf *b, const jr__rec_cpitem *items, uint32_t n);

/* Checks only the header of the record at p (avail bytes readable from p): hsum, type and
 * reserved values, and that the whole record fits in `avail`. Returns 1 and sets *group,
 * *total (header + payload) if the header is trustworthy, 0 otherwise. */
int jr__rec_header_ok(const uint8_t *p, uint64_t avail, uint64_t *group, uint64_t *total);

/* Decodes and verifies the record at p (avail bytes readable from p). 0 and *r filled on
 * success (r->len + JR__REC_HDR bytes consumed); JR_ECORRUPT for anything invalid. */
int jr__rec_decode(const uint8_t *p, uint64_t avail, jr__rec *r);

/* Item i (< r->ncp) of a decoded checkpoint. */
void jr__rec_cpitem_at(const jr__rec *r, uint32_t i, jr__rec_cpitem *out);

#endif
