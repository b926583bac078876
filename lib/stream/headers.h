/*
 * headers — NATS message header blocks: strict validation, lookup, and the JetStream publish
 * headers (Nats-Msg-Id, Nats-Expected-*, Nats-Rollup) mapped to publish options (op.h).
 *
 * A header block (NATS ADR-4) is
 *     "NATS/1.0" [ " " status [ " " description ] ] CRLF  *( key ":" value CRLF )  CRLF
 * and nothing after the final empty line. Rules enforced here:
 *   - status: exactly three digits; description: value characters;
 *   - key: one or more printable ASCII characters (33..126) other than ':' — no space before ':';
 *   - value: HTAB, SP, 0x21..0x7E and bytes >= 0x80 (RFC 7230 field-value), never CR, LF, NUL
 *     or another control character; optional leading and trailing whitespace (SP, HTAB) is not
 *     part of the value;
 *   - lines end with CRLF exactly (a bare CR or LF is malformed); keys may repeat.
 * An empty block (length 0) means "no headers" and is valid. Anything else is JR_EINVAL.
 *
 * Lookup is case-sensitive (ADR-4: NATS preserves and compares header names exactly) and
 * returns the first value of a repeated key, as NATS's GET does.
 *
 * Everything here is pure: no allocation, results borrow from the block.
 */
#ifndef JR_STREAM_HEADERS_H
#define JR_STREAM_HEADERS_H

#include <stddef.h>
#include <stdint.h>

#include "stream/op.h"

#define JR__HDR_MSG_ID "Nats-Msg-Id"
#define JR__HDR_EXPECTED_STREAM "Nats-Expected-Stream"
#define JR__HDR_EXPECTED_LAST_SEQ "Nats-Expected-Last-Sequence"
#define JR__HDR_EXPECTED_LAST_SUBJ_SEQ "Nats-Expected-Last-Subject-Sequence"
#define JR__HDR_EXPECTED_LAST_MSG_ID "Nats-Expected-Last-Msg-Id"
#define JR__HDR_ROLLUP "Nats-Rollup"

/* 0 if hdr[0..len) is a valid header block (or len is 0), else JR_EINVAL. hdr may be NULL only
 * with len 0. */
int jr__headers_validate(const void *hdr, size_t len);

/* The status line of a valid, non-empty block: *code gets the status (0 if none), *desc and
 * *desc_len the description (NULL/0 if none). 0 or JR_EINVAL (block invalid or empty). */
int jr__headers_status(const void *hdr, size_t len, int *code, const char **desc, size_t *desc_len);

/* Iteration over the key/value lines of a block, in order. */
typedef struct jr__hdr_iter {
    const uint8_t *p;
    const uint8_t *end;
} jr__hdr_iter;

/* Validates the block and positions it at the first line. 0 or JR_EINVAL. */
int jr__headers_iter(const void *hdr, size_t len, jr__hdr_iter *it);
/* 1 with the next key and (trimmed) value, 0 after the last. Requires jr__headers_iter == 0. */
int jr__headers_next(jr__hdr_iter *it, const char **key, size_t *key_len, const char **val,
                     size_t *val_len);

/* The first value of `key` (exact, case-sensitive). 0 with *val and *val_len (trimmed; possibly
 * empty); JR_ENOTFOUND if absent; JR_EINVAL if the block is invalid. */
int jr__headers_get(const void *hdr, size_t len, const char *key, const char **val,
                    size_t *val_len);

/* Maps the JetStream publish headers of a block to options, as the server reads them: each
 * header's first value, trimmed; an empty value counts as absent. Nats-Expected-Last-Sequence
 * and Nats-Expected-Last-Subject-Sequence must be decimal uint64 without sign or spaces inside;
 * Nats-Rollup must be "sub" or "all" (any case); ids are limited to JR__OP_MSG_ID_MAX bytes and
 * the stream name to JR_STREAM_NAME_MAX. out->flags gets the options found; string fields borrow
 * from the block. 0, or JR_EINVAL (invalid block or value; *out zeroed). */
int jr__headers_pub_opts(const void *hdr, size_t len, jr__pub_opts *out);

#endif
