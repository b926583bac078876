/*
 * hex — fixed-width lower-case hex numbers in file names ("<016x>.wal", "<016x>-<016x>.snap").
 */
#ifndef JR_UTIL_HEX_H
#define JR_UTIL_HEX_H

#include <stdint.h>

/* Parses exactly 16 lower-case hex digits at p (p must hold at least 16 bytes, e.g. a string
 * whose length the caller checked). 0 and *out, or -1 if any of them is not a hex digit. */
static inline int jr__hex16_parse(const char *p, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = p[i];
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

#endif
