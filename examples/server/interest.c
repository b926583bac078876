/*
 * interest.c — the interest table (see interest.h): a chained hash of literal subjects and a
 * list of wildcard subjects, each entry keyed by subject and queue.
 */
#include "interest.h"

#include <stdlib.h>
#include <string.h>

#include "sublist.h"

typedef struct ient {
    struct ient *next; /* in its bucket, or in the wildcard list */
    uint64_t hash;     /* of the subject */
    uint32_t count;
    char *queue; /* NULL, or into key after the subject's NUL */
    char key[];  /* subject NUL [queue NUL] */
} ient;

struct interest {
    ient **buckets;
    size_t nbuckets; /* a power of two, or 0 */
    size_t nlit;     /* entries in the buckets */
    ient *wild;
    size_t nwild;
};

interest *interest_new(void)
{
    return calloc(1, sizeof(interest));
}

static void free_chain(ient *e)
{
    while (e) {
        ient *n = e->next;
        free(e);
        e = n;
    }
}

void interest_clear(interest *t)
{
    for (size_t i = 0; i < t->nbuckets; i++) {
        free_chain(t->buckets[i]);
        t->buckets[i] = NULL;
    }
    free_chain(t->wild);
    t->wild = NULL;
    t->nlit = t->nwild = 0;
}

void interest_free(interest *t)
{
    if (!t) return;
    interest_clear(t);
    free(t->buckets);
    free(t);
}

size_t interest_size(const interest *t)
{
    return t->nlit + t->nwild;
}

/* FNV-1a, 64-bit. */
static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static int is_wild(const char *subject)
{
    return strchr(subject, '*') || strchr(subject, '>');
}

static int same_queue(const ient *e, const char *queue)
{
    return e->queue ? queue && !strcmp(e->queue, queue) : !queue;
}

/* The slot (a pointer to the link) holding (subject, queue), or the end of its chain. */
static ient **find(interest *t, const char *subject, const char *queue, uint64_t h, int wild)
{
    ient **pp = wild ? &t->wild : t->nbuckets ? &t->buckets[h & (t->nbuckets - 1)] : NULL;
    if (!pp) return NULL;
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->hash == h && !strcmp((*pp)->key, subject) && same_queue(*pp, queue)) break;
    return pp;
}

static int grow(interest *t)
{
    size_t nb = t->nbuckets ? t->nbuckets * 2 : 64;
    ient **v = calloc(nb, sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < t->nbuckets; i++)
        for (ient *e = t->buckets[i], *n; e; e = n) {
            n = e->next;
            e->next = v[e->hash & (nb - 1)];
            v[e->hash & (nb - 1)] = e;
        }
    free(t->buckets);
    t->buckets = v;
    t->nbuckets = nb;
    return 0;
}

static ient *ient_new(const char *subject, const char *queue, uint64_t h)
{
    size_t sl = strlen(subject), ql = queue ? strlen(queue) : 0;
    ient *e = malloc(sizeof *e + sl + 1 + (queue ? ql + 1 : 0));
    if (!e) return NULL;
    e->next = NULL;
    e->hash = h;
    e->count = 0;
    memcpy(e->key, subject, sl + 1);
    e->queue = NULL;
    if (queue) {
        e->queue = e->key + sl + 1;
        memcpy(e->queue, queue, ql + 1);
    }
    return e;
}

/* Sets (subject, queue) to count, or with delta adds to it; *out the new count. */
static int update(interest *t, const char *subject, const char *queue, int relative, int64_t value,
                  uint32_t *out)
{
    if (queue && !*queue) queue = NULL;
    uint64_t h = hash_str(subject);
    int wild = is_wild(subject);
    ient **pp = find(t, subject, queue, h, wild);
    ient *e = pp ? *pp : NULL;
    int64_t cur = e ? e->count : 0;
    int64_t next = relative ? cur + value : value;
    if (next < 0 || next > UINT32_MAX) return -1;
    if (out) *out = (uint32_t)next;
    if (e) {
        if (next > 0) {
            e->count = (uint32_t)next;
        } else {
            *pp = e->next;
            free(e);
            if (wild)
                t->nwild--;
            else
                t->nlit--;
        }
        return 0;
    }
    if (next == 0) return 0;
    if (!wild && t->nlit >= t->nbuckets && grow(t)) return -1;
    e = ient_new(subject, queue, h);
    if (!e) return -1;
    e->count = (uint32_t)next;
    ient **head = wild ? &t->wild : &t->buckets[h & (t->nbuckets - 1)];
    e->next = *head;
    *head = e;
    if (wild)
        t->nwild++;
    else
        t->nlit++;
    return 0;
}

int interest_add(interest *t, const char *subject, const char *queue, int delta, uint32_t *count)
{
    return update(t, subject, queue, 1, delta, count);
}

int interest_set(interest *t, const char *subject, const char *queue, uint32_t count)
{
    return update(t, subject, queue, 0, count, NULL);
}

int interest_match(const interest *t, const char *subject, interest_cb cb, void *arg)
{
    int rc;
    if (t->nbuckets) {
        uint64_t h = hash_str(subject);
        for (ient *e = t->buckets[h & (t->nbuckets - 1)]; e; e = e->next)
            if (e->hash == h && !strcmp(e->key, subject) &&
                (rc = cb(arg, e->key, e->queue, e->count)) != 0)
                return rc;
    }
    for (ient *e = t->wild; e; e = e->next)
        if (subject_matches(e->key, subject) && (rc = cb(arg, e->key, e->queue, e->count)) != 0)
            return rc;
    return 0;
}

int interest_each(const interest *t, interest_cb cb, void *arg)
{
    int rc;
    for (size_t i = 0; i < t->nbuckets; i++)
        for (ient *e = t->buckets[i]; e; e = e->next)
            if ((rc = cb(arg, e->key, e->queue, e->count)) != 0) return rc;
    for (ient *e = t->wild; e; e = e->next)
        if ((rc = cb(arg, e->key, e->queue, e->count)) != 0) return rc;
    return 0;
}
