/*
 * subject — NATS-style subjects and subject patterns, as pure string functions.
 *
 * A subject is a non-empty sequence of non-empty tokens separated by '.', e.g. "orders.eu.new".
 * A token never contains whitespace (space, \t, \n, \v, \f, \r). A pattern may also use two
 * wildcard tokens:
 *   "*"  matches exactly one token            ("orders.*"   matches "orders.new")
 *   ">"  matches one or more trailing tokens  ("orders.>"   matches "orders.eu.new");
 *        it is only valid as the last token.
 * As in NATS, a character '*' or '>' inside a longer token ("a*b") is an ordinary character:
 * only a whole token is a wildcard. A literal subject (what is published to) is a pattern with
 * no wildcard token. Subjects are at most JR__SUBJECT_MAX bytes.
 *
 * Invariants: every function here is pure (no allocation, no state) and total on NUL-terminated
 * input; the matching functions require inputs that already passed validation.
 */
#ifndef JR_STREAM_SUBJECT_H
#define JR_STREAM_SUBJECT_H

#include <stddef.h>

/* Largest subject or pattern accepted, in bytes (NATS's default max_control_line). */
#define JR__SUBJECT_MAX 4096

enum jr__subject_kind {
    JR__SUBJECT_INVALID = 0,
    JR__SUBJECT_LITERAL = 1, /* no wildcard token */
    JR__SUBJECT_PATTERN = 2, /* at least one "*" or ">" token */
};

/* Classifies s (NUL-terminated; NULL is invalid). Returns an enum jr__subject_kind. If the
 * subject is invalid and why is not NULL, *why gets a static English reason ("empty token",
 * "contains whitespace", "'>' must be the last token", "empty subject", "longer than 4096
 * bytes"). */
int jr__subject_classify(const char *s, const char **why);

/* 1 if s is a valid pattern (literal subjects are patterns too), else 0. */
int jr__subject_valid_pattern(const char *s);

/* 1 if s is a valid subject without wildcard tokens (publishable), else 0. */
int jr__subject_valid_literal(const char *s);

/* 1 if the valid pattern `pattern` matches the valid literal subject `subject`, else 0. */
int jr__subject_matches(const char *pattern, const char *subject);

/* 1 if two valid patterns match at least one common literal subject, else 0. Symmetric.
 * E.g. "a.*" and "*.b" overlap ("a.b"); "a.>" and "a" do not. */
int jr__subject_overlap(const char *a, const char *b);

/* 1 if every subject matched by valid pattern `sub` is also matched by valid pattern `super`
 * (e.g. "a.b" ⊆ "a.*" ⊆ "a.>"), else 0. Reflexive. */
int jr__subject_subset(const char *sub, const char *super);

/* Number of tokens of a valid pattern. */
size_t jr__subject_ntokens(const char *s);

#endif
