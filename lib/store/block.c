#include "block.h"

#include <lz4.h>
#include <sodium.h>
#include <string.h>

#include "srecord.h"
#include "util/checksum.h"

static const uint8_t open_magic[4] = {'J', 'R', 'B', 'K'};
static const uint8_t seal_magic[4] = {'J', 'R', 'S', 'B'};

int jr__blk_derive_key(const uint8_t master[32], const char *name, jr__blk_key *out)
{
    if (sodium_init() < 0) return JR_EIO;
    uint64_t id = jr__xxh3(name, strlen(name));
    if (crypto_kdf_derive_from_key(out->key, sizeof out->key, id, "jrstore1", master) != 0)
        return JR_EIO;
    uint8_t h[32];
    crypto_generichash(h, sizeof h, out->key, sizeof out->key, NULL, 0);
    out->check = jr__get_u32(h);
    return 0;
}

void jr__blk_open_header(uint8_t out[32], uint32_t id, int flags, uint32_t keycheck)
{
    memcpy(out, open_magic, 4);
    out[4] = 1;
    out[5] = 0;
    out[6] = (uint8_t)flags;
    out[7] = 0;
    jr__put_u32(out + 8, id);
    jr__put_u32(out + 12, keycheck);
    jr__put_u64(out + 16, 0);
    jr__put_u64(out + 24, jr__xxh3(out, 24));
}

static void frame_ad(uint8_t ad[8], uint32_t id, uint32_t clen)
{
    jr__put_u32(ad, id);
    jr__put_u32(ad + 4, clen);
}

void jr__blk_frame(uint8_t *dst, const uint8_t *rec, size_t rlen, uint32_t id,
                   const jr__blk_key *k)
{
    uint32_t clen = (uint32_t)(rlen + crypto_aead_xchacha20poly1305_ietf_ABYTES);
    uint8_t ad[8];
    frame_ad(ad, id, clen);
    jr__put_u32(dst, clen);
    randombytes_buf(dst + 4, 24);
    unsigned long long out_len;
    crypto_aead_xchacha20poly1305_ietf_encrypt(dst + 28, &out_len, rec, rlen, ad, sizeof ad, NULL,
                                               dst + 4, k->key);
}

int jr__blk_write_open(const uint8_t *plain, size_t n, uint32_t id, int flags,
                       const jr__blk_key *k, jr__buf *out)
{
    uint8_t h[32];
    jr__blk_open_header(h, id, flags, k ? k->check : 0);
    jr__buf_put(out, h, sizeof h);
    if (!(flags & JR__BLKF_ENC)) {
        jr__buf_put(out, plain, n);
        return out->err;
    }
    jr__srec r;
    size_t len;
    for (size_t off = 0; off < n; off += len) {
        if (jr__srec_decode(plain + off, n - off, 0, &r, &len)) return JR_ECORRUPT;
        if (jr__buf_reserve(out, jr__blk_frame_size(len))) return out->err;
        jr__blk_frame(out->data + out->len, plain + off, len, id, k);
        out->len += jr__blk_frame_size(len);
    }
    return out->err;
}

int jr__blk_seal(const uint8_t *plain, size_t n, uint32_t id, int flags, const jr__blk_key *k,
                 jr__buf *out)
{
    if (n > (size_t)LZ4_MAX_INPUT_SIZE) flags &= ~JR__BLKF_LZ4;
    size_t bound = (flags & JR__BLKF_LZ4) ? (size_t)LZ4_compressBound((int)n) : n;
    size_t start = out->len;
    if (jr__buf_reserve(out, JR__BLK_SEAL_HDR + bound + 16 + 8)) return out->err;
    uint8_t *h = out->data + start;
    uint8_t *body = h + JR__BLK_SEAL_HDR;
    size_t blen = n;
    if (flags & JR__BLKF_LZ4) {
        int c = LZ4_compress_default((const char *)plain, (char *)body, (int)n, (int)bound);
        if (c <= 0) return JR_ENOMEM;
        blen = (size_t)c;
    } else {
        memcpy(body, plain, n);
    }
    size_t stored = blen + ((flags & JR__BLKF_ENC) ? crypto_aead_xchacha20poly1305_ietf_ABYTES : 0);
    memcpy(h, seal_magic, 4);
    h[4] = 1;
    h[5] = 0;
    h[6] = (uint8_t)flags;
    h[7] = 0;
    jr__put_u32(h + 8, id);
    jr__put_u32(h + 12, (flags & JR__BLKF_ENC) ? k->check : 0);
    jr__put_u64(h + 16, n);
    jr__put_u64(h + 24, stored);
    if (flags & JR__BLKF_ENC)
        randombytes_buf(h + 32, 24);
    else
        memset(h + 32, 0, 24);
    jr__put_u64(h + 56, jr__xxh3(h, 56));
    if (flags & JR__BLKF_ENC) {
        unsigned long long clen;
        crypto_aead_xchacha20poly1305_ietf_encrypt(body, &clen, body, blen, h, 32, NULL, h + 32,
                                                   k->key);
    }
    jr__put_u64(body + stored, jr__xxh3(body, stored));
    out->len = start + JR__BLK_SEAL_HDR + stored + 8;
    return 0;
}

static int bad(jr__blk_info *info, uint64_t off, const char *why)
{
    info->bad_off = off;
    info->why = why;
    return JR_ECORRUPT;
}

/* Walks the records of plain[0..n); returns the length of the valid prefix. */
static size_t walk(const uint8_t *plain, size_t n)
{
    jr__srec r;
    size_t len, off = 0;
    while (off < n && jr__srec_decode(plain + off, n - off, 1, &r, &len) == 0) off += len;
    return off;
}

static int key_ok(int flags, uint32_t check, const jr__blk_key *k, jr__blk_info *info)
{
    if (!(flags & JR__BLKF_ENC)) return 0;
    if (!k) {
        info->why = "block is encrypted and no key was given";
        return JR_EINVAL;
    }
    if (check != k->check) {
        info->why = "block was encrypted with another key";
        return JR_EAUTH;
    }
    return 0;
}

static int decode_open(const uint8_t *f, size_t n, const jr__blk_key *k, jr__buf *buf,
                       jr__blk_info *info)
{
    if (jr__get_u64(f + 24) != jr__xxh3(f, 24) || f[4] != 1 || f[5] != 0 || f[7] != 0 ||
        (f[6] & ~JR__BLKF_ENC) || jr__get_u64(f + 16) != 0)
        return bad(info, 0, "bad block header");
    info->kind = JR__BLK_OPEN;
    info->id = jr__get_u32(f + 8);
    info->flags = f[6];
    info->keycheck = jr__get_u32(f + 12);
    int rc = key_ok(info->flags, info->keycheck, k, info);
    if (rc) return rc;
    if (!(info->flags & JR__BLKF_ENC)) {
        info->plain = f + JR__BLK_OPEN_HDR;
        info->plain_len = walk(info->plain, n - JR__BLK_OPEN_HDR);
        info->good_end = JR__BLK_OPEN_HDR + info->plain_len;
        if (info->good_end != n) return bad(info, info->good_end, "bad record");
        return 0;
    }
    size_t off = JR__BLK_OPEN_HDR;
    while (off < n) {
        if (n - off < JR__BLK_FRAME_OVERHEAD + JR__SREC_MIN) break;
        uint32_t clen = jr__get_u32(f + off);
        if (clen < JR__SREC_MIN + 16 || clen > n - off - 28) break;
        if (jr__buf_reserve(buf, clen)) return buf->err;
        uint8_t ad[8];
        frame_ad(ad, info->id, clen);
        unsigned long long mlen;
        uint8_t *m = buf->data + buf->len;
        if (crypto_aead_xchacha20poly1305_ietf_decrypt(m, &mlen, NULL, f + off + 28, clen, ad,
                                                       sizeof ad, f + off + 4, k->key) != 0)
            break;
        jr__srec r;
        size_t rlen;
        if (jr__srec_decode(m, (size_t)mlen, 1, &r, &rlen) || rlen != mlen) break;
        buf->len += rlen;
        off += 28 + clen;
    }
    info->plain = buf->data;
    info->plain_len = buf->len;
    info->good_end = off;
    if (off != n) return bad(info, off, "bad encrypted frame");
    return 0;
}

static int decode_sealed(const uint8_t *f, size_t n, const jr__blk_key *k, jr__buf *buf,
                         jr__blk_info *info)
{
    if (n < JR__BLK_SEAL_HDR + 8) return bad(info, 0, "short sealed block");
    if (jr__get_u64(f + 56) != jr__xxh3(f, 56) || f[4] != 1 || f[5] != 0 || f[7] != 0 ||
        (f[6] & ~(JR__BLKF_ENC | JR__BLKF_LZ4)))
        return bad(info, 0, "bad sealed block header");
    info->kind = JR__BLK_SEALED;
    info->id = jr__get_u32(f + 8);
    info->flags = f[6];
    info->keycheck = jr__get_u32(f + 12);
    uint64_t raw = jr__get_u64(f + 16), stored = jr__get_u64(f + 24);
    if (stored != n - JR__BLK_SEAL_HDR - 8) return bad(info, 24, "sealed block length mismatch");
    const uint8_t *body = f + JR__BLK_SEAL_HDR;
    if (jr__get_u64(body + stored) != jr__xxh3(body, stored))
        return bad(info, JR__BLK_SEAL_HDR, "sealed block checksum mismatch");
    int rc = key_ok(info->flags, info->keycheck, k, info);
    if (rc) return rc;
    size_t blen = stored;
    const uint8_t *src = body;
    jr__buf_reset(buf);
    if (info->flags & JR__BLKF_ENC) {
        if (stored < crypto_aead_xchacha20poly1305_ietf_ABYTES)
            return bad(info, 24, "sealed block too short");
        blen = stored - crypto_aead_xchacha20poly1305_ietf_ABYTES;
        /* decrypt into the tail half of buf, decompress (or move) into the head */
        if (jr__buf_reserve(buf, blen)) return buf->err;
        unsigned long long mlen;
        if (crypto_aead_xchacha20poly1305_ietf_decrypt(buf->data, &mlen, NULL, body, stored, f,
                                                       32, f + 32, k->key) != 0)
            return bad(info, JR__BLK_SEAL_HDR, "sealed block failed authentication");
        src = buf->data;
    }
    if (info->flags & JR__BLKF_LZ4) {
        if (raw > (uint64_t)blen * 255 + 65536 || raw > (uint64_t)LZ4_MAX_INPUT_SIZE)
            return bad(info, 16, "implausible raw length");
        jr__buf tmp;
        jr__buf_init(&tmp, buf->alloc);
        if (jr__buf_reserve(&tmp, raw ? (size_t)raw : 1)) return tmp.err;
        int d = LZ4_decompress_safe((const char *)src, (char *)tmp.data, (int)blen, (int)raw);
        if (d < 0 || (uint64_t)d != raw) {
            jr__buf_free(&tmp);
            return bad(info, JR__BLK_SEAL_HDR, "lz4 body does not decompress");
        }
        tmp.len = (size_t)raw;
        jr__buf_free(buf);
        *buf = tmp;
    } else {
        if (raw != blen) return bad(info, 16, "raw length mismatch");
        if (!(info->flags & JR__BLKF_ENC)) {
            info->plain = body;
            info->plain_len = walk(body, blen);
            info->good_end = n;
            if (info->plain_len != blen) return bad(info, JR__BLK_SEAL_HDR + info->plain_len,
                                                    "bad record in sealed block");
            return 0;
        }
        buf->len = blen;
    }
    info->plain = buf->data;
    info->plain_len = walk(buf->data, buf->len);
    info->good_end = n;
    if (info->plain_len != buf->len)
        return bad(info, JR__BLK_SEAL_HDR, "bad record in sealed block");
    return 0;
}

int jr__blk_decode(const uint8_t *f, size_t n, const jr__blk_key *k, jr__buf *buf,
                   jr__blk_info *info)
{
    memset(info, 0, sizeof *info);
    jr__buf_reset(buf);
    if (n >= JR__BLK_OPEN_HDR && memcmp(f, open_magic, 4) == 0)
        return decode_open(f, n, k, buf, info);
    if (n >= 4 && memcmp(f, seal_magic, 4) == 0) return decode_sealed(f, n, k, buf, info);
    return bad(info, 0, "not a block file");
}

int jr__blk_valid_after(const uint8_t *f, size_t n, size_t from, uint32_t id, int flags,
                        const jr__blk_key *k, jr__buf *scratch)
{
    if (flags & JR__BLKF_ENC) {
        /* A frame that authenticates and whose chain of lengths ends exactly at the end of the
         * file. good[p]: the chain from p ends at n; computed backwards in O(n), so only the few
         * positions that pass are decrypted. */
        if (!k || from >= n) return 0;
        size_t span = n - from + 1, bits = (span + 7) / 8;
        jr__buf_reset(scratch);
        if (jr__buf_reserve(scratch, bits)) return 0;
        uint8_t *good = scratch->data;
        memset(good, 0, bits);
#define GOOD(q) (good[((q) - from) / 8] >> (((q) - from) % 8) & 1)
        good[(n - from) / 8] |= (uint8_t)(1u << ((n - from) % 8));
        for (size_t q = n; q-- > from + 1;) {
            if (n - q < 28 + JR__SREC_MIN + 16) continue;
            uint32_t c = jr__get_u32(f + q);
            if (c < JR__SREC_MIN + 16 || c > n - q - 28) continue;
            if (GOOD(q + 28 + (size_t)c)) good[(q - from) / 8] |= (uint8_t)(1u << ((q - from) % 8));
        }
        for (size_t p = from + 1; p < n; p++) {
            if (!GOOD(p)) continue;
            uint32_t c2 = jr__get_u32(f + p);
            uint8_t ad[8];
            scratch->len = bits;
            if (jr__buf_reserve(scratch, c2)) return 0;
            good = scratch->data;
            frame_ad(ad, id, c2);
            unsigned long long mlen;
            if (crypto_aead_xchacha20poly1305_ietf_decrypt(scratch->data + bits, &mlen, NULL,
                                                           f + p + 28, c2, ad, sizeof ad,
                                                           f + p + 4, k->key) == 0)
                return 1;
        }
#undef GOOD
        return 0;
    }
    jr__srec r;
    size_t len;
    for (size_t p = from + 1; p + JR__SREC_MIN <= n; p++) {
        uint32_t l = jr__get_u32(f + p);
        if (l < JR__SREC_MIN || l > n - p || f[p + 5] != 0 || f[p + 4] < 1 || f[p + 4] > 4)
            continue;
        if (jr__srec_decode(f + p, n - p, 1, &r, &len) == 0) return 1;
    }
    return 0;
}
