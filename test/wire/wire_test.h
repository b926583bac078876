/*
 * Shared helpers of the lib/wire tests: building messages, encoding frames, comparing decoded
 * messages with what was sent, and the "decode then re-encode gives the same bytes" check.
 */
#ifndef JR_TEST_WIRE_H
#define JR_TEST_WIRE_H

#include <check.h>
#include <stdlib.h>

#include "util/rand.h"
#include "wire/frame.h"

#define TW_FROM 0x1111111111111111ULL
#define TW_TO 0x2222222222222222ULL
#define TW_MAX ((size_t)64 << 20) /* frame size limit used by the tests */
#define TW_CAP 4096               /* scratch entries */

/* A message of `type` from TW_FROM to TW_TO with every field zero. */
jr__msg tw_msg(uint8_t type, uint64_t group, uint64_t term);
/* jr__frame_next as 1 for a message, 0 at the end of the body, or its error (what the tests
 * compare); checks that an error never comes with a message. */
int tw_next(jr__frame *f, jr__msg *m, jr__entry *scratch, size_t cap);
/* ck_asserts that a decoded message equals what was encoded (booleans compared as 0/1). */
void tw_assert_msg_eq(const jr__msg *want, const jr__msg *got);
/* Encodes msgs into one frame in b; asserts success and that jr__frame_msg_len is exact. */
void tw_encode(jr__buf *b, const jr__msg *msgs, size_t n);
/* Encodes, validates, decodes and compares msgs. */
void tw_roundtrip(const jr__msg *msgs, size_t n);
/* Frame with a raw body (valid header and checksum around arbitrary bytes). */
void tw_raw_frame(jr__buf *b, const void *body, size_t n);
/* Validates data; if it validates, decodes it fully, re-encodes every message into a new frame
 * and asserts the bytes are identical. Returns the validation result. The input is copied to an
 * exactly-sized heap block first so that ASan sees any read past its end. */
int tw_check_canonical(const uint8_t *data, size_t len);
/* A frame with one message of every type and a heartbeat; msg_end[i] gets the body offset
 * where message i ends (up to cap); returns the number of messages. */
size_t tw_sample_frame(jr__buf *b, size_t *msg_end, size_t cap);

/* A jr_allocator that counts calls. */
typedef struct tw_counter {
    size_t mallocs, reallocs, frees;
} tw_counter;
jr_allocator tw_counting_allocator(tw_counter *c);

Suite *tw_roundtrip_suite(void);
Suite *tw_malformed_suite(void);
Suite *tw_hb_suite(void);

#endif
