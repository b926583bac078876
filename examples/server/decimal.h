/*
 * decimal — unsigned integers written as decimal text into a caller's buffer, for the lines the
 * server formats on every message (a delivery's MSG line, a publish's PubAck) without a format
 * parser. The caller provides room for the digits (at most 20).
 */
#ifndef JR_SERVER_DECIMAL_H
#define JR_SERVER_DECIMAL_H

#include <stdint.h>

/* Writes the decimal digits of v at out (no NUL); returns the end. */
static inline char *put_decimal(char *out, uint64_t v)
{
    char tmp[20];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (k) *out++ = tmp[--k];
    return out;
}

#endif
