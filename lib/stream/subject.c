/* subject — validation and matching of subjects and patterns (see subject.h). */
#include "subject.h"
#include "store/subject.h"

#include <string.h>

/* A cursor over the tokens of a subject: yields (t, n) per token, in order. */
typedef struct cursor {
    const char *p; /* start of the next token, or NULL once exhausted */
} cursor;

static void cur_init(cursor *c, const char *s)
{
    c->p = s;
}

static int cur_next(cursor *c, const char **t, size_t *n)
{
    if (!c->p) return 0;
    const char *dot = strchr(c->p, '.');
    *t = c->p;
    if (dot) {
        *n = (size_t)(dot - c->p);
        c->p = dot + 1;
    } else {
        *n = strlen(c->p);
        c->p = NULL;
    }
    return 1;
}

static int is_pwc(const char *t, size_t n)
{
    return n == 1 && t[0] == '*';
}

static int is_fwc(const char *t, size_t n)
{
    return n == 1 && t[0] == '>';
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

int jr__subject_classify(const char *s, const char **why)
{
    const char *reason = NULL;
    int kind = JR__SUBJECT_LITERAL;
    if (!s || !*s) {
        reason = "empty subject";
        goto bad;
    }
    size_t toklen = 0;
    int prev_fwc = 0;
    size_t i = 0;
    for (;; i++) {
        char c = s[i];
        if (i >= JR__SUBJECT_MAX && c != '\0') {
            reason = "longer than 4096 bytes";
            goto bad;
        }
        if (c == '.' || c == '\0') {
            if (toklen == 0) {
                reason = "empty token";
                goto bad;
            }
            if (prev_fwc) {
                reason = "'>' must be the last token";
                goto bad;
            }
            const char *t = s + i - toklen;
            if (is_pwc(t, toklen)) kind = JR__SUBJECT_PATTERN;
            if (is_fwc(t, toklen)) {
                kind = JR__SUBJECT_PATTERN;
                prev_fwc = 1;
            }
            toklen = 0;
            if (c == '\0') break;
            continue;
        }
        if (is_space(c)) {
            reason = "contains whitespace";
            goto bad;
        }
        toklen++;
    }
    return kind;
bad:
    if (why) *why = reason;
    return JR__SUBJECT_INVALID;
}

int jr__subject_valid_pattern(const char *s)
{
    return jr__subject_classify(s, NULL) != JR__SUBJECT_INVALID;
}

int jr__subject_valid_literal(const char *s)
{
    return jr__subject_classify(s, NULL) == JR__SUBJECT_LITERAL;
}

int jr__subject_matches(const char *pattern, const char *subject)
{
    /* One matcher for the whole library: the store's, which purges and iterates by filter. */
    return jr__subject_match(pattern, strlen(pattern), subject, strlen(subject));
}

int jr__subject_overlap(const char *a, const char *b)
{
    cursor ca, cb;
    cur_init(&ca, a);
    cur_init(&cb, b);
    for (;;) {
        const char *ta, *tb;
        size_t na, nb;
        int ha = cur_next(&ca, &ta, &na), hb = cur_next(&cb, &tb, &nb);
        /* One ran out: only a common end is a common subject (a remaining '>' needs a token). */
        if (!ha || !hb) return !ha && !hb;
        if (is_fwc(ta, na) || is_fwc(tb, nb)) return 1;
        if (is_pwc(ta, na) || is_pwc(tb, nb)) continue;
        if (na != nb || memcmp(ta, tb, na) != 0) return 0;
    }
}

int jr__subject_subset(const char *sub, const char *super)
{
    cursor cs, cp;
    cur_init(&cs, sub);
    cur_init(&cp, super);
    for (;;) {
        const char *ts, *tp;
        size_t ns, np;
        int hs = cur_next(&cs, &ts, &ns), hp = cur_next(&cp, &tp, &np);
        if (!hs || !hp) return !hs && !hp;
        if (is_fwc(tp, np)) return 1; /* covers every tail of at least one token */
        if (is_fwc(ts, ns)) return 0; /* sub has tails super cannot match */
        if (is_pwc(tp, np)) continue;
        if (is_pwc(ts, ns)) return 0;
        if (ns != np || memcmp(ts, tp, ns) != 0) return 0;
    }
}

size_t jr__subject_ntokens(const char *s)
{
    size_t n = 1;
    for (; *s; s++)
        if (*s == '.') n++;
    return n;
}
