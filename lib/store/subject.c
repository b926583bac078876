#include "subject.h"

#include <string.h>

/* Length of the token starting at p (up to the next '.' or end). */
static size_t toklen(const char *p, const char *end)
{
    const char *q = memchr(p, '.', (size_t)(end - p));
    return q ? (size_t)(q - p) : (size_t)(end - p);
}

int jr__subject_valid(const char *s, size_t len, int wildcards)
{
    if (!s || len == 0) return 0;
    const char *p = s, *end = s + len;
    for (;;) {
        size_t n = toklen(p, end);
        if (n == 0) return 0;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)p[i];
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v' ||
                c == 0)
                return 0;
        }
        int wild = n == 1 && (p[0] == '*' || p[0] == '>');
        if (wild && !wildcards) return 0;
        if (n == 1 && p[0] == '>' && p + 1 != end) return 0;
        p += n;
        if (p == end) return 1;
        p++; /* the '.' */
        if (p == end) return 0; /* trailing '.' */
    }
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
