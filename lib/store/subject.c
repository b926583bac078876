#include "subject.h"

#include <string.h>

/* Length of the token starting at p (up to the next '.' or end). */
static size_t toklen(const char *p, const char *end)
{
    const char *q = memchr(p, '.', (size_t)(end - p));
    return q ? (size_t)(q - p) : (size_t)(end - p);
}

/* Bytes no subject may contain: whitespace and NUL. */
static int forbidden(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || c == 0;
}

int jr__subject_valid(const char *s, size_t len, int wildcards)
{
    if (!s || len == 0) return 0;
    /* one pass: every publish is checked on every replica */
    size_t tok = 0; /* start of the current token */
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.') {
            if (forbidden((unsigned char)s[i])) return 0;
            continue;
        }
        size_t n = i - tok;
        if (n == 0) return 0; /* empty token: leading, doubled or trailing '.' */
        if (n == 1 && (s[tok] == '*' || s[tok] == '>')) {
            if (!wildcards) return 0;
            if (s[tok] == '>' && i != len) return 0; /* '>' only as the last token */
        }
        tok = i + 1;
    }
    return 1;
}

int jr__subject_literal(const char *f, size_t flen)
{
    const char *p = f, *end = f + flen;
    while (p < end) {
        size_t n = toklen(p, end);
        if (n == 1 && (p[0] == '*' || p[0] == '>')) return 0;
        p += n + 1;
    }
    return 1;
}

int jr__subject_match(const char *f, size_t flen, const char *s, size_t slen)
{
    const char *fp = f, *fe = f + flen, *sp = s, *se = s + slen;
    if (flen == 0 || slen == 0) return flen == slen && flen != 0;
    for (;;) {
        size_t fn = toklen(fp, fe);
        if (fn == 1 && fp[0] == '>') return sp < se; /* one or more tokens remain */
        size_t sn = toklen(sp, se);
        if (!(fn == 1 && fp[0] == '*') && (fn != sn || memcmp(fp, sp, fn) != 0)) return 0;
        if (fn == 1 && fp[0] == '*' && sn == 0) return 0;
        fp += fn;
        sp += sn;
        int fdone = fp == fe, sdone = sp == se;
        if (fdone || sdone) return fdone && sdone;
        fp++;
        sp++;
    }
}
