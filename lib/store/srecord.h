/*
 * srecord — the persisted form of one store record, shared by the memory store, the block files
 * and the catch-up chunks.
 *
 * Layout (little-endian), JR__SREC_HDR bytes of header, the variable parts, then an xxh3 of every
 * byte before it:
 *
 *   u32 len        total record length, header and checksum included
 *   u8  type       enum jr__srec_type
 *   u8  reserved   0
 *   u16 subj_len
 *   u32 hdr_len
 *   u64 seq        MSG/ERASED: the message's sequence; DEL: first deleted seq; DELSUBJ: last
 *                  seq the subject purge covers
 *   u64 ts         MSG/ERASED: timestamp (ns); DEL: last deleted seq; DELSUBJ: 0
 *   subject[subj_len] headers[hdr_len] payload[len - 36 - subj_len - hdr_len]
 *   u64 xxh3(record[0 .. len-8))
 *
 * Record types:
 *   MSG      a message.
 *   ERASED   a message whose subject, headers and payload were overwritten (erase-delete); its
 *            seq still counts for ordering, its content is meaningless.
 *   DEL      tombstone: every seq in [seq, ts] is deleted (a single delete has seq == ts; a
 *            purge of everything below N is DEL [0, N-1]). Also proves last_seq >= ts.
 *   DELSUBJ  tombstone: every message of the subject with seq <= the record's seq is deleted.
 *            Also proves last_seq >= seq.
 *   MARK     a durable point of a marked store (store.h, "Marks"): seq = the caller's index,
 *            ts = last_seq at the mark; no subject; headers = the store's state at the mark,
 *            JR__SREC_MARK_HDR bytes: u64 first_seq | u64 msgs | u64 bytes | u64 key |
 *            u64 floor; payload = the caller's opaque state.
 *
 * Invariant: a tombstone is always written after the records it deletes, so replaying records
 * in write order reproduces the store.
 */
#ifndef JR_STORE_SRECORD_H
#define JR_STORE_SRECORD_H

#include <stddef.h>
#include <stdint.h>

#define JR__SREC_HDR 28u
#define JR__SREC_MIN 36u        /* header + checksum */
#define JR__SREC_MAX (1u << 30) /* no record is larger */
#define JR__SREC_SUBJ_MAX 65535u

enum jr__srec_type {
    JR__SREC_MSG = 1,
    JR__SREC_DEL = 2,
    JR__SREC_DELSUBJ = 3,
    JR__SREC_ERASED = 4,
    JR__SREC_MARK = 5,
};
#define JR__SREC_TYPE_MAX JR__SREC_MARK
#define JR__SREC_MARK_HDR 40u

typedef struct jr__srec {
    int type;
    uint64_t seq;
    uint64_t ts; /* int64 nanoseconds for MSG; hi seq for DEL */
    const char *subj;
    size_t subj_len;
    const uint8_t *hdr;
    size_t hdr_len;
    const uint8_t *data;
    size_t data_len;
} jr__srec;

/* Encoded size of a record with these lengths (no overflow for lengths within the limits). */
static inline size_t jr__srec_size(size_t subj_len, size_t hdr_len, size_t data_len)
{
    return JR__SREC_MIN + subj_len + hdr_len + data_len;
}

/* Writes r into dst, which has exactly jr__srec_size(r->subj_len, r->hdr_len, r->data_len)
 * bytes. Requires subj_len <= JR__SREC_SUBJ_MAX and the size <= JR__SREC_MAX. */
void jr__srec_encode(uint8_t *dst, const jr__srec *r);

/* Decodes the record at p, reading at most avail bytes. On success fills *out (pointers into p)
 * and *len with the record's length. JR_ECORRUPT if the bytes are not one whole, well-formed
 * record with a matching checksum (including when avail is too short). With verify = 0 the
 * checksum is not checked (for bytes already verified). */
int jr__srec_decode(const uint8_t *p, size_t avail, int verify, jr__srec *out, size_t *len);

/* Overwrites the record at p (already valid, of length len) with an ERASED record of the same
 * length and seq: subject, headers and payload become zeros; ts is kept. */
void jr__srec_erase(uint8_t *p, size_t len);

#endif
