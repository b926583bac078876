/*
 * frame.h — length-prefixed framing of a peer link's byte stream.
 *
 * A frame on the wire is a 4-byte big-endian length followed by that many bytes. The reader is
 * incremental: it takes whatever a read returned (any split, several frames at once) and hands
 * out each complete frame; a length of zero or above its bound is a protocol error (the link is
 * closed), so a peer can never make it buffer more than one bounded frame. It knows nothing of
 * what frames carry, so a sealing layer (authenticated encryption) can sit on either side of it.
 */
#ifndef SRV_FRAME_H
#define SRV_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_HDR 4

typedef struct frame_rd {
    uint32_t max; /* largest frame accepted */
    uint8_t *buf; /* a frame being assembled (header and body) */
    size_t len;   /* bytes of it held */
    size_t cap;
} frame_rd;

/* Called once per complete frame; the bytes are borrowed for the call. A non-zero return stops
 * the reader and is returned by frame_rd_feed. */
typedef int (*frame_cb)(void *arg, const uint8_t *frame, size_t len);

void frame_rd_init(frame_rd *rd, uint32_t max);
void frame_rd_free(frame_rd *rd);
/* Feeds n bytes. Returns 0, -1 on a bad length (or out of memory), or the callback's return. */
int frame_rd_feed(frame_rd *rd, const uint8_t *data, size_t n, frame_cb cb, void *arg);
/* Writes the header of a frame of len bytes. */
void frame_hdr(uint8_t out[FRAME_HDR], uint32_t len);

#endif
