/*
 * interest.c — the interest table (see interest.h). Three places hold entries, each keyed by
 * subject and queue:
 *  - lit: literal subjects, hashed by the whole subject;
 *  - pre: subjects with a wildcard after a literal first token (`_INBOX.abc.*`, `orders.>`),
 *    hashed by that first token, so a publish looks only at the wildcards that share its first
 *    token (a request-heavy cluster holds one inbox wildcard per connection);
 *  - wild: subjects whose first token is a wildcard (`*.x`, `>`), scanned for every match.
 */
#include "interest.h"

#include <stdlib.h>
#include <string.h>

#include "sublist.h"

typedef struct ient {
    struct ient *next; /* in its chain */
    uint64_t hash;     /* of the subject (lit) or of its first token (pre); 0 in wild */
    uint32_t count;
    char *queue; /* NULL, or into key after the subject's NUL */
    char key[];  /* subject NUL [queue NUL] */
} ient;

typedef struct htab {
    ient **b;
    size_t nb; /* a power of two, or 0 */
    size_t n;
} htab;

struct interest {
    htab lit, pre;
    ient *wild;
    size_t nwild;
    size_t bytes;
};

enum { LIT, PRE, WILD };

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

static void htab_clear(htab *h)
{
    for (size_t i = 0; i < h->nb; i++) {
        free_chain(h->b[i]);
        h->b[i] = NULL;
    }
    h->n = 0;
}

void interest_clear(interest *t)
{
    htab_clear(&t->lit);
    htab_clear(&t->pre);
    free_chain(t->wild);
    t->wild = NULL;
    t->nwild = 0;
    t->bytes = 0;
}

void interest_free(interest *t)
{
    if (!t) return;
    interest_clear(t);
    free(t->lit.b);
    free(t->pre.b);
    free(t);
}

size_t interest_size(const interest *t)
{
    return t->lit.n + t->pre.n + t->nwild;
}

size_t interest_bytes(const interest *t)
{
    return t->bytes;
}

/* FNV-1a, 64-bit, of the first n bytes of s. */
static uint64_t hash_n(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

static size_t first_token_len(const char *s)
{
    const char *dot = strchr(s, '.');
    return dot ? (size_t)(dot - s) : strlen(s);
}

/* Where an entry of subject lives, and its hash there. */
static int place(const char *subject, uint64_t *h)
{
    size_t ft = first_token_len(subject);
    if ((ft == 1 && (subject[0] == '*' || subject[0] == '>'))) {
        *h = 0;
        return WILD;
    }
    if (strchr(subject, '*') || strchr(subject, '>')) {
        *h = hash_n(subject, ft);
        return PRE;
    }
    *h = hash_n(subject, strlen(subject));
    return LIT;
}

static int same(const ient *e, const char *subject, const char *queue)
{
    if (strcmp(e->key, subject)) return 0;
    return e->queue ? queue && !strcmp(e->queue, queue) : !queue;
}

static ient **chain(interest *t, int where, uint64_t h)
{
    if (where == WILD) return &t->wild;
    htab *ht = where == LIT ? &t->lit : &t->pre;
    return ht->nb ? &ht->b[h & (ht->nb - 1)] : NULL;
}

/* The link holding (subject, queue), or the end of its chain (NULL: no buckets yet). */
static ient **find(interest *t, const char *subject, const char *queue, int where, uint64_t h)
{
    ient **pp = chain(t, where, h);
    if (!pp) return NULL;
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->hash == h && same(*pp, subject, queue)) break;
    return pp;
}

static int grow(htab *ht)
{
    size_t nb = ht->nb ? ht->nb * 2 : 64;
    ient **v = calloc(nb, sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < ht->nb; i++)
        for (ient *e = ht->b[i], *n; e; e = n) {
            n = e->next;
            e->next = v[e->hash & (nb - 1)];
            v[e->hash & (nb - 1)] = e;
        }
    free(ht->b);
    ht->b = v;
    ht->nb = nb;
    return 0;
}

static size_t entry_bytes(const ient *e)
{
    return sizeof *e + strlen(e->key) + 1 + (e->queue ? strlen(e->queue) + 1 : 0);
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

static size_t *counter(interest *t, int where)
{
    return where == LIT ? &t->lit.n : where == PRE ? &t->pre.n : &t->nwild;
}

/* Sets (subject, queue) to value, or with relative adds value to it; *out the new count. */
static int update(interest *t, const char *subject, const char *queue, int relative, int64_t value,
                  uint32_t *out)
{
    if (queue && !*queue) queue = NULL;
    uint64_t h;
    int where = place(subject, &h);
    ient **pp = find(t, subject, queue, where, h);
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
            t->bytes -= entry_bytes(e);
            free(e);
            (*counter(t, where))--;
        }
        return 0;
    }
    if (next == 0) return 0;
    if (where != WILD) {
        htab *ht = where == LIT ? &t->lit : &t->pre;
        if (ht->n >= ht->nb && grow(ht)) return -1;
    }
    e = ient_new(subject, queue, h);
    if (!e) return -1;
    e->count = (uint32_t)next;
    ient **head = chain(t, where, h);
    e->next = *head;
    *head = e;
    (*counter(t, where))++;
    t->bytes += entry_bytes(e);
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
    if (t->lit.nb) {
        uint64_t h = hash_n(subject, strlen(subject));
        for (ient *e = t->lit.b[h & (t->lit.nb - 1)]; e; e = e->next)
            if (e->hash == h && !strcmp(e->key, subject) &&
                (rc = cb(arg, e->key, e->queue, e->count)) != 0)
                return rc;
    }
    if (t->pre.nb) {
        uint64_t h = hash_n(subject, first_token_len(subject));
        for (ient *e = t->pre.b[h & (t->pre.nb - 1)]; e; e = e->next)
            if (e->hash == h && subject_matches(e->key, subject) &&
                (rc = cb(arg, e->key, e->queue, e->count)) != 0)
                return rc;
    }
    for (ient *e = t->wild; e; e = e->next)
        if (subject_matches(e->key, subject) && (rc = cb(arg, e->key, e->queue, e->count)) != 0)
            return rc;
    return 0;
}

static int each_in(const htab *ht, interest_cb cb, void *arg)
{
    int rc;
    for (size_t i = 0; i < ht->nb; i++)
        for (ient *e = ht->b[i]; e; e = e->next)
            if ((rc = cb(arg, e->key, e->queue, e->count)) != 0) return rc;
    return 0;
}

int interest_each(const interest *t, interest_cb cb, void *arg)
{
    int rc;
    if ((rc = each_in(&t->lit, cb, arg)) != 0 || (rc = each_in(&t->pre, cb, arg)) != 0) return rc;
    for (ient *e = t->wild; e; e = e->next)
        if ((rc = cb(arg, e->key, e->queue, e->count)) != 0) return rc;
    return 0;
}
