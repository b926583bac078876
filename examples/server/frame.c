/*
 * frame.c — length-prefixed framing (see frame.h).
 */
#include "frame.h"

#include <stdlib.h>
#include <string.h>

void frame_rd_init(frame_rd *rd, uint32_t max)
{
    memset(rd, 0, sizeof *rd);
    rd->max = max;
}

void frame_rd_free(frame_rd *rd)
{
    free(rd->buf);
    rd->buf = NULL;
    rd->len = rd->cap = 0;
}

void frame_hdr(uint8_t out[FRAME_HDR], uint32_t len)
{
    out[0] = (uint8_t)(len >> 24);
    out[1] = (uint8_t)(len >> 16);
    out[2] = (uint8_t)(len >> 8);
    out[3] = (uint8_t)len;
}

static uint32_t get_len(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Copies up to `want` bytes total into the assembly buffer; returns bytes taken. */
static size_t take(frame_rd *rd, const uint8_t *data, size_t n, size_t want)
{
    size_t k = want - rd->len;
    if (k > n) k = n;
    memcpy(rd->buf + rd->len, data, k);
    rd->len += k;
    return k;
}

int frame_rd_feed(frame_rd *rd, const uint8_t *data, size_t n, frame_cb cb, void *arg)
{
    while (n > 0) {
        if (rd->len == 0) {
            /* Fast path: whole frames in the input are handed out without a copy. */
            if (n >= FRAME_HDR) {
                uint32_t fl = get_len(data);
                if (fl == 0 || fl > rd->max) return -1;
                if (n - FRAME_HDR >= fl) {
                    int rc = cb(arg, data + FRAME_HDR, fl);
                    if (rc) return rc;
                    data += FRAME_HDR + fl;
                    n -= FRAME_HDR + fl;
                    continue;
                }
            }
        }
        if (rd->cap < FRAME_HDR) {
            rd->buf = malloc(FRAME_HDR);
            if (!rd->buf) return -1;
            rd->cap = FRAME_HDR;
        }
        if (rd->len < FRAME_HDR) {
            size_t k = take(rd, data, n, FRAME_HDR);
            data += k;
            n -= k;
            if (rd->len < FRAME_HDR) return 0;
        }
        uint32_t fl = get_len(rd->buf);
        if (fl == 0 || fl > rd->max) return -1;
        size_t want = FRAME_HDR + (size_t)fl;
        if (rd->cap < want) {
            uint8_t *nb = realloc(rd->buf, want);
            if (!nb) return -1;
            rd->buf = nb;
            rd->cap = want;
        }
        size_t k = take(rd, data, n, want);
        data += k;
        n -= k;
        if (rd->len < want) return 0;
        rd->len = 0;
        int rc = cb(arg, rd->buf + FRAME_HDR, fl);
        /* Keep a buffer of at most 64 KiB between frames, not the largest frame ever seen. */
        if (rd->cap > (64u << 10)) frame_rd_free(rd);
        if (rc) return rc;
    }
    return 0;
}
