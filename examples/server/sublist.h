/*
 * sublist.h — subject routing among this server's clients: the subscriptions and their match.
 *
 * A subscription's subject may hold `*` (one token) and `>` (one or more trailing tokens); a
 * published subject is literal. Matching collects, for a subject, every plain subscription and
 * one member (chosen at random) of each queue group. Subscriptions are owned by the client
 * module; the list only links them.
 */
#ifndef SRV_SUBLIST_H
#define SRV_SUBLIST_H

#include <stddef.h>
#include <stdint.h>

struct client;

typedef struct sub {
    struct client *c;
    char *subject;
    char *queue; /* NULL: none */
    char *sid;
    int64_t max;             /* deliveries after which it ends (UNSUB sid max); -1 none */
    uint64_t delivered;      /* messages delivered */
    int literal;             /* no wildcard: matched by string comparison */
    struct sub *prev, *next; /* in the sublist */
    struct sub *c_next;      /* in its client's list */
} sub;

typedef struct sublist sublist;

sublist *sublist_new(void);
void sublist_free(sublist *sl);
void sublist_insert(sublist *sl, sub *s);
void sublist_remove(sublist *sl, sub *s);
size_t sublist_count(const sublist *sl);
/* The subscriptions that receive a message on subject; the array is owned by the list and valid
 * until the next call. Returns how many. */
size_t sublist_match(sublist *sl, const char *subject, sub ***out);
/* 1 if pattern (with wildcards) matches the literal subject. */
int subject_matches(const char *pattern, const char *subject);
/* 1 if s is a valid subscription subject: non-empty tokens, `*` a whole token, `>` only a whole
 * last token, no whitespace. With literal = 1, no wildcard at all (a publish subject). */
int subject_valid(const char *s, int literal);

#endif
