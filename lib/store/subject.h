/*
 * subject — NATS-style subjects and subject filters.
 *
 * A subject is a non-empty string of tokens separated by '.', every token non-empty and free of
 * whitespace. A filter is a subject whose tokens may also be the wildcards "*" (exactly one token)
 * and ">" (one or more tokens; only as the last token). Wildcards are whole tokens: "a*" is a
 * literal token. Matching never allocates and is linear in the lengths of its inputs.
 *
 * Shared by the message store (iteration, purge by subject) and the stream layer (capturing
 * subjects), so both agree on what a filter means.
 */
#ifndef JR_STORE_SUBJECT_H
#define JR_STORE_SUBJECT_H

#include <stddef.h>

/* 1 if s[0..len) is a valid subject (wildcards = 0) or filter (wildcards = 1), else 0. */
int jr__subject_valid(const char *s, size_t len, int wildcards);

/* 1 if the valid filter f[0..flen) contains no wildcard token, else 0. */
int jr__subject_literal(const char *f, size_t flen);

/* 1 if subject s[0..slen) matches filter f[0..flen), else 0. Requires nothing of validity: an
 * invalid input simply fails to match unless it is byte-equal to a literal filter. */
int jr__subject_match(const char *f, size_t flen, const char *s, size_t slen);

#endif
