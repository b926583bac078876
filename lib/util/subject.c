/* subject — the subject grammar, matching, overlap and subset (see subject.h). */
#include "subject.h"

#include <string.h>

static int is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

int jr__subject_classify_n(const char *s, size_t len, const char **why)
{
    const char *reason = NULL;
    int kind = JR__SUBJECT_LITERAL, prev_fwc = 0;
    if (!s || len == 0) {
        reason = "empty subject";
        goto bad;
    }
    /* one pass, problems reported in the order they are met: every publish is checked on
     * every replica */
    size_t tok = 0; /* start of the current token */
    for (size_t i = 0; i <= len; i++) {
        if (i == JR__SUBJECT_MAX && i < len) {
            reason = "longer than 4096 bytes";
            goto bad;
        }
        if (i < len && s[i] != '.') {
            unsigned char c = (unsigned char)s[i];
            if (is_space(c) || c == 0) {
                reason = c ? "contains whitespace" : "contains a NUL byte";
                goto bad;
            }
            continue;
        }
        size_t n = i - tok;
        if (n == 0) {
            reason = "empty token";
            goto bad;
        }
        if (prev_fwc) {
            reason = "'>' must be the last token";
            goto bad;
        }
        if (n == 1 && (s[tok] == '*' || s[tok] == '>')) {
            kind = JR__SUBJECT_PATTERN;
            prev_fwc = s[tok] == '>';
        }
        tok = i + 1;
    }
    return kind;
bad:
    if (why) *why = reason;
    return JR__SUBJECT_INVALID;
}

int jr__subject_classify(const char *s, const char **why)
{
    /* never reads past the limit + 1 looking for the end */
    size_t len = s ? strnlen(s, JR__SUBJECT_MAX + 1) : 0;
    return jr__subject_classify_n(s, len, why);
}

int jr__subject_valid(const char *s, size_t len, int wildcards)
{
    int k = jr__subject_classify_n(s, len, NULL);
    return k == JR__SUBJECT_LITERAL || (wildcards && k == JR__SUBJECT_PATTERN);
}

int jr__subject_valid_pattern(const char *s)
{
    return jr__subject_classify(s, NULL) != JR__SUBJECT_INVALID;
}

int jr__subject_valid_literal(const char *s)
{
    return jr__subject_classify(s, NULL) == JR__SUBJECT_LITERAL;
}

/* Length of the token starting at p (up to the next '.' or end). */
static size_t toklen(const char *p, const char *end)
{
    const char *q = memchr(p, '.', (size_t)(end - p));
    return q ? (size_t)(q - p) : (size_t)(end - p);
}

static int is_pwc(const char *t, size_t n)
{
    return n == 1 && t[0] == '*';
}

static int is_fwc(const char *t, size_t n)
{
    return n == 1 && t[0] == '>';
}

int jr__subject_literal(const char *f, size_t flen)
{
    const char *p = f, *end = f + flen;
    while (p < end) {
        size_t n = toklen(p, end);
        if (is_pwc(p, n) || is_fwc(p, n)) return 0;
        p += n + 1;
    }
    return 1;
}

int jr__subject_match(const char *f, size_t flen, const char *s, size_t slen)
{
    const char *fp = f, *fe = f + flen, *sp = s, *se = s + slen;
    if (flen == 0 || slen == 0) return 0;
    for (;;) {
        size_t fn = toklen(fp, fe);
        if (is_fwc(fp, fn)) return sp < se; /* one or more tokens remain */
        size_t sn = toklen(sp, se);
        if (is_pwc(fp, fn) ? sn == 0 : fn != sn || memcmp(fp, sp, fn) != 0) return 0;
        fp += fn;
        sp += sn;
        int fdone = fp == fe, sdone = sp == se;
        if (fdone || sdone) return fdone && sdone;
        fp++;
        sp++;
    }
}

int jr__subject_matches(const char *pattern, const char *subject)
{
    return jr__subject_match(pattern, strlen(pattern), subject, strlen(subject));
}

/* A cursor over the tokens of a NUL-terminated subject: yields (t, n) per token, in order. */
typedef struct cursor {
    const char *p; /* start of the next token, or NULL once exhausted */
} cursor;

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

int jr__subject_overlap(const char *a, const char *b)
{
    cursor ca = {a}, cb = {b};
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
    cursor cs = {sub}, cp = {super};
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
