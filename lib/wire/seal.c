/*
 * seal — optional authenticated encryption of frames with a 32-byte cluster key (libsodium's
 * XChaCha20-Poly1305-IETF). The 24-byte nonce travels at the start of the body, the 16-byte tag
 * at its end, and header bytes [0, 24) are the associated data, so any change to the magic,
 * version, flags, length, ids, nonce, ciphertext or tag fails authentication. The xxh3 check of
 * the header still covers the sealed bytes (so corruption is detectable without the key).
 */
#include <sodium.h>

#include "util/checksum.h"
#include "wire/codec.h"

_Static_assert(JR__FRAME_KEY_BYTES == crypto_aead_xchacha20poly1305_ietf_KEYBYTES, "key size");
_Static_assert(JR__FRAME_NONCE_BYTES == crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, "nonce");
_Static_assert(JR__FRAME_TAG_BYTES == crypto_aead_xchacha20poly1305_ietf_ABYTES, "tag size");
_Static_assert(sizeof(((jr__seal_nonce *)0)->prefix) + 8 == JR__FRAME_NONCE_BYTES, "nonce");

int jr__frame_end_sealed(jr__buf *b, const uint8_t *key, const uint8_t *nonce)
{
    if (b->err) return b->err;
    if (b->len < JR__FRAME_HEADER || !key) return b->err = JR_EINVAL;
    size_t plen = b->len - JR__FRAME_HEADER;
    if (plen > UINT32_MAX - JR__FRAME_SEAL_OVERHEAD) return b->err = JR_EMSGSIZE;
    if (sodium_init() < 0) return b->err = JR_EIO;
    if (jr__buf_reserve(b, JR__FRAME_SEAL_OVERHEAD)) return b->err;
    uint8_t *h = b->data;
    uint8_t *n = h + JR__FRAME_HEADER;
    uint8_t *c = n + JR__FRAME_NONCE_BYTES;
    memmove(c, n, plen);
    if (nonce)
        memcpy(n, nonce, JR__FRAME_NONCE_BYTES);
    else
        randombytes_buf(n, JR__FRAME_NONCE_BYTES);
    h[JR__FH_FLAGS] |= JR__FRAME_SEALED;
    /* the length is part of the associated data: set it before encrypting */
    jr__put_u32(h + JR__FH_LEN, (uint32_t)(plen + JR__FRAME_SEAL_OVERHEAD));
    crypto_aead_xchacha20poly1305_ietf_encrypt_detached(c, c + plen, NULL, c, plen, h, JR__FH_CHECK,
                                                        NULL, n, key);
    b->len += JR__FRAME_SEAL_OVERHEAD;
    jr__wire_finish(h, plen + JR__FRAME_SEAL_OVERHEAD);
    return 0;
}

int jr__frame_open_sealed(jr__frame *f, const void *data, size_t len, size_t max,
                          const uint8_t *key, jr__buf *plain)
{
    if (!key) return jr__frame_open(f, data, len, max);
    const uint8_t *d = data;
    int rc = jr__wire_hdr_basic(d, len, max);
    if (rc) return rc;
    if (jr__wire_hdr_rest(f, d, len) || !(f->flags & JR__FRAME_SEALED)) return JR_EAUTH;
    size_t blen = len - JR__FRAME_HEADER;
    if (blen < JR__FRAME_SEAL_OVERHEAD) return JR_EAUTH;
    size_t plen = blen - JR__FRAME_SEAL_OVERHEAD;
    if (sodium_init() < 0) return JR_EIO;
    jr__buf_reset(plain);
    if (jr__buf_reserve(plain, plen ? plen : 1)) return JR_ENOMEM;
    const uint8_t *n = d + JR__FRAME_HEADER;
    const uint8_t *c = n + JR__FRAME_NONCE_BYTES;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt_detached(plain->data, NULL, c, plen, c + plen, d,
                                                            JR__FH_CHECK, n, key) != 0)
        return JR_EAUTH;
    plain->len = plen;
    jr__rd_init(&f->body, plain->data, plen);
    return 0;
}

int jr__seal_nonce_init(jr__seal_nonce *n)
{
    if (sodium_init() < 0) return JR_EIO;
    randombytes_buf(n->prefix, sizeof n->prefix);
    n->counter = 0;
    return 0;
}

void jr__seal_nonce_next(jr__seal_nonce *n, uint8_t *out)
{
    memcpy(out, n->prefix, sizeof n->prefix);
    jr__put_u64(out + sizeof n->prefix, n->counter++);
}
