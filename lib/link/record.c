/*
 * record — DATA records once a link is open: sealing frames (and the FINAL record) into the
 * caller's buffer, opening received records, and the end of the input.
 *
 * A record is u32 length | crypto_secretstream_xchacha20poly1305 message, whose additional data
 * is the length's 4 bytes; the frame is copied once into the caller's output and encrypted in
 * place, and a received one is decrypted into the link's receive buffer (in place when it was
 * gathered there). No allocation. A record that fails to open ends the link: the stream's
 * position is lost, and a peer that sends such a record is not to be trusted further.
 */
#include <string.h>

#include "link/link_int.h"
#include "util/buf.h"

_Static_assert(JR__REC_HDR + JR__SS_ABYTES == JR_LINK_FRAME_OVERHEAD, "frame overhead");

static int seal(jr_link *l, const jr_iovec *iov, int iovcnt, uint8_t tag, void *out, size_t cap,
                size_t *out_len)
{
    if (!l || (!iov && iovcnt) || iovcnt < 0 || !out || !out_len) return JR_EINVAL;
    if (l->err) return l->err;
    if ((l->state != JR_LINK_OPEN && l->state != JR_LINK_CLOSED) || l->sent_final)
        return JR_EMISUSE;
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (!iov[i].base && iov[i].len) return JR_EINVAL;
        if (iov[i].len > l->peer_max_frame - total) return JR_EMSGSIZE;
        total += iov[i].len;
    }
    if (cap < total + JR_LINK_FRAME_OVERHEAD) return JR_EINVAL;
    uint8_t *r = out, *m = r + JR__REC_HDR + 1;
    jr__put_u32(r, (uint32_t)(total + JR__SS_ABYTES));
    size_t off = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].len) memcpy(m + off, iov[i].base, iov[i].len);
        off += iov[i].len;
    }
    /* secretstream writes its tag byte before the ciphertext, so m (one byte in) is encrypted
     * in place */
    crypto_secretstream_xchacha20poly1305_push(&l->tx, r + JR__REC_HDR, NULL, m, total, r,
                                               JR__REC_HDR, tag);
    *out_len = total + JR_LINK_FRAME_OVERHEAD;
    return 0;
}

int jr_link_seal(jr_link *l, const jr_iovec *iov, int iovcnt, void *out, size_t cap,
                 size_t *out_len)
{
    return seal(l, iov, iovcnt, crypto_secretstream_xchacha20poly1305_TAG_MESSAGE, out, cap,
                out_len);
}

int jr_link_seal_final(jr_link *l, void *out, size_t cap, size_t *out_len)
{
    int rc = seal(l, NULL, 0, crypto_secretstream_xchacha20poly1305_TAG_FINAL, out, cap, out_len);
    if (rc == 0) l->sent_final = 1;
    return rc;
}

int jr__link_open_record(jr_link *l, const uint8_t *body, size_t len, const void **frame,
                         size_t *frame_len)
{
    /* gathered in rx_buf: decrypt in place, one byte in (past the tag byte) */
    uint8_t *m = body == l->rx_buf ? l->rx_buf + 1 : l->rx_buf;
    unsigned long long mlen = 0;
    unsigned char tag = 0;
    if (crypto_secretstream_xchacha20poly1305_pull(&l->rx, m, &mlen, &tag, body, len, l->hdr,
                                                   JR__REC_HDR) != 0)
        return jr__link_fail(l, JR_EAUTH,
                             "record failed authentication (altered, replayed, reordered or cut)");
    if (tag == crypto_secretstream_xchacha20poly1305_TAG_FINAL) {
        if (mlen != 0) return jr__link_fail(l, JR_ECORRUPT, "final record with data");
        l->state = JR_LINK_CLOSED;
        return 0;
    }
    if (tag != crypto_secretstream_xchacha20poly1305_TAG_MESSAGE)
        return jr__link_fail(l, JR_ECORRUPT, "record with an unknown tag");
    *frame = m;
    *frame_len = (size_t)mlen;
    return 0;
}

int jr_link_eof(jr_link *l)
{
    if (!l) return JR_EINVAL;
    if (l->err) return l->err;
    if (l->state == JR_LINK_CLOSED && l->hdr_have == 0) return 0;
    return jr__link_fail(l, JR_ECORRUPT, "the stream ended before the peer's final record");
}
