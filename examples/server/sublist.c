/*
 * sublist.c — subscriptions and subject matching (see sublist.h).
 *
 * The subscriptions are one linked list scanned per message: a server's subscriptions are few
 * (a client holds an inbox or two) compared with its publishes, which the JetStream path takes.
 */
#include "sublist.h"

#include <stdlib.h>
#include <string.h>

struct sublist {
    sub *head;
    size_t count;
    sub **out;
    size_t out_cap;
    sub **queues;
    size_t queues_cap;
};

sublist *sublist_new(void)
{
    return calloc(1, sizeof(sublist));
}

void sublist_free(sublist *sl)
{
    if (!sl) return;
    free(sl->out);
    free(sl->queues);
    free(sl);
}

int subject_valid(const char *s, int literal)
{
    if (!*s) return 0;
    const char *t = s;
    for (;;) {
        const char *e = t;
        while (*e && *e != '.') {
            if (*e == ' ' || *e == '\t' || *e == '\r' || *e == '\n') return 0;
            e++;
        }
        size_t len = (size_t)(e - t);
        if (len == 0) return 0;
        for (const char *q = t; q < e; q++)
            if ((*q == '*' || *q == '>') && (literal || len != 1)) return 0;
        if (len == 1 && *t == '>' && *e) return 0;
        if (!*e) return 1;
        t = e + 1;
    }
}

int subject_matches(const char *p, const char *s)
{
    /* One pass over both: every publish and every ack is matched against each subscription. */
    for (;;) {
        if ((p[0] == '>' || p[0] == '*') && (p[1] == '.' || p[1] == 0)) {
            if (p[0] == '>') return 1; /* one or more tokens remain in s */
            p++;
            while (*s && *s != '.') s++; /* '*': any one token */
        } else {
            while (*p && *p != '.' && *p == *s) {
                p++;
                s++;
            }
            if ((*p && *p != '.') || (*s && *s != '.')) return 0;
        }
        if (!*p || !*s) return !*p && !*s;
        p++;
        s++;
    }
}

void sublist_insert(sublist *sl, sub *s)
{
    s->literal = !strchr(s->subject, '*') && !strchr(s->subject, '>');
    s->prev = NULL;
    s->next = sl->head;
    if (sl->head) sl->head->prev = s;
    sl->head = s;
    sl->count++;
}

void sublist_remove(sublist *sl, sub *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        sl->head = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = NULL;
    sl->count--;
}

size_t sublist_count(const sublist *sl)
{
    return sl->count;
}

static int push(sub ***v, size_t *cap, size_t n, sub *s)
{
    if (n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        sub **nv = realloc(*v, nc * sizeof *nv);
        if (!nv) return -1;
        *v = nv;
        *cap = nc;
    }
    (*v)[n] = s;
    return 0;
}

size_t sublist_match(sublist *sl, const char *subject, sub ***out)
{
    size_t n = 0, nq = 0;
    for (sub *s = sl->head; s; s = s->next) {
        int m = s->literal ? !strcmp(s->subject, subject) : subject_matches(s->subject, subject);
        if (!m) continue;
        if (s->queue) {
            if (push(&sl->queues, &sl->queues_cap, nq, s) == 0) nq++;
        } else if (push(&sl->out, &sl->out_cap, n, s) == 0) {
            n++;
        }
    }
    /* One member per queue group, at random: pick among the members of the first group left,
     * then drop that group's members and repeat. */
    while (nq > 0) {
        const char *q = sl->queues[0]->queue;
        size_t members = 0;
        for (size_t i = 0; i < nq; i++) members += !strcmp(sl->queues[i]->queue, q);
        size_t pick = (size_t)rand() % members, k = 0;
        size_t left = 0;
        for (size_t i = 0; i < nq; i++) {
            sub *s = sl->queues[i];
            if (strcmp(s->queue, q)) {
                sl->queues[left++] = s;
            } else if (k++ == pick && push(&sl->out, &sl->out_cap, n, s) == 0) {
                n++;
            }
        }
        nq = left;
    }
    *out = sl->out;
    return n;
}
