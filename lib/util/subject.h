/*
 * subject — the one grammar of NATS subjects and subject filters (patterns) in the library, with
 * matching, overlap and subset. The message store (appends, iteration and purge by filter) and
 * the stream layer (captured subjects, config validation, publish routing) both use it, so they
 * agree on what a subject is and what a filter matches.
 *
 * Grammar (NATS):
 *  - a subject is 1 to JR__SUBJECT_MAX bytes of tokens separated by '.', e.g. "orders.eu.new";
 *  - every token is non-empty (no leading, trailing or doubled '.');
 *  - no token contains whitespace (space, \t, \n, \v, \f, \r) or a NUL byte;
 *  - a pattern may also use the wildcard tokens "*" (exactly one token) and ">" (one or more
 *    tokens; only as the last token). Wildcards are whole tokens: "a*" or "b>" is an ordinary
 *    literal token;
 *  - a literal subject (what is published and stored) is a pattern without wildcard tokens.
 * The limit is the stricter of the two the library documented: the stream layer's 4096 bytes
 * (NATS's default max_control_line), below the store record's 65,535-byte subject field.
 *
 * Two forms of the same functions: length-delimited (s, len), for subjects read from records
 * and frames, and NUL-terminated (the stream layer's config strings).
 *
 * Invariants: every function is pure (no allocation, no state) and linear in its inputs; the
 * matching, overlap and subset functions take inputs that passed validation (on other input they
 * return 0 or 1 but mean nothing).
 */
#ifndef JR_UTIL_SUBJECT_H
#define JR_UTIL_SUBJECT_H

#include <stddef.h>

/* Largest subject or pattern accepted, in bytes. */
#define JR__SUBJECT_MAX 4096

enum jr__subject_kind {
    JR__SUBJECT_INVALID = 0,
    JR__SUBJECT_LITERAL = 1, /* no wildcard token */
    JR__SUBJECT_PATTERN = 2, /* at least one "*" or ">" token */
};

/* Classifies s[0..len) (NULL or len 0: invalid). Returns an enum jr__subject_kind. If it is
 * invalid and why is not NULL, *why gets a static English reason for the first problem met
 * scanning from the start ("empty subject", "empty token", "contains whitespace", "contains a
 * NUL byte", "'>' must be the last token", "longer than 4096 bytes"). */
int jr__subject_classify_n(const char *s, size_t len, const char **why);
/* The same for a NUL-terminated s (NULL is invalid). */
int jr__subject_classify(const char *s, const char **why);

/* 1 if s[0..len) is a valid literal subject (wildcards = 0) or pattern (wildcards = 1), else 0. */
int jr__subject_valid(const char *s, size_t len, int wildcards);
/* 1 if the NUL-terminated s is a valid pattern (literal subjects are patterns too), else 0. */
int jr__subject_valid_pattern(const char *s);
/* 1 if the NUL-terminated s is a valid literal subject (publishable), else 0. */
int jr__subject_valid_literal(const char *s);

/* 1 if the valid pattern f[0..flen) contains no wildcard token, else 0. */
int jr__subject_literal(const char *f, size_t flen);

/* 1 if the literal subject s[0..slen) matches the pattern f[0..flen), else 0. Never matches
 * an empty input. */
int jr__subject_match(const char *f, size_t flen, const char *s, size_t slen);
/* The same for NUL-terminated pattern and subject. */
int jr__subject_matches(const char *pattern, const char *subject);

/* 1 if two valid NUL-terminated patterns match at least one common literal subject, else 0.
 * Symmetric. E.g. "a.*" and "*.b" overlap ("a.b"); "a.>" and "a" do not. */
int jr__subject_overlap(const char *a, const char *b);

/* 1 if every subject matched by the valid pattern `sub` is also matched by the valid pattern
 * `super` (e.g. "a.b" ⊆ "a.*" ⊆ "a.>"), else 0. Reflexive. */
int jr__subject_subset(const char *sub, const char *super);

/* Number of tokens of a valid NUL-terminated pattern. */
size_t jr__subject_ntokens(const char *s);

#endif
