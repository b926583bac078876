#include "block.h"

#include <lz4.h>
#include <sodium.h>
#include <string.h>

#include "srecord.h"
#include "util/alloc.h"
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

void jr__blk_nonce_init(jr__blk_nonce *n)
{
    randombytes_buf(n->prefix, sizeof n->prefix);
    n->counter = 0;
}

void jr__blk_frame(uint8_t *dst, const uint8_t *rec, size_t rlen, uint32_t id, const jr__blk_key *k,
                   jr__blk_nonce *n)
{
    uint32_t clen = (uint32_t)(rlen + crypto_aead_xchacha20poly1305_ietf_ABYTES);
    uint8_t ad[8];
    frame_ad(ad, id, clen);
    jr__put_u32(dst, clen);
    if (n) {
        memcpy(dst + 4, n->prefix, 16);
        jr__put_u64(dst + 20, n->counter++);
    } else {
        randombytes_buf(dst + 4, 24);
    }
    unsigned long long out_len;
    crypto_aead_xchacha20poly1305_ietf_encrypt(dst + JR__BLK_FRAME_HEAD, &out_len, rec, rlen, ad,
                                               sizeof ad, NULL, dst + 4, k->key);
}

int jr__blk_frame_open(const uint8_t *f, size_t n, uint32_t id, const jr__blk_key *k, uint8_t *out,
                       size_t *rlen)
{
    if (n < JR__BLK_FRAME_OVERHEAD + JR__SREC_MIN) return JR_ECORRUPT;
    uint32_t clen = jr__get_u32(f);
    if (clen < JR__SREC_MIN + crypto_aead_xchacha20poly1305_ietf_ABYTES ||
        clen > n - JR__BLK_FRAME_HEAD)
        return JR_ECORRUPT;
    uint8_t ad[8];
    frame_ad(ad, id, clen);
    unsigned long long mlen;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(out, &mlen, NULL, f + JR__BLK_FRAME_HEAD, clen,
                                                   ad, sizeof ad, f + 4, k->key) != 0)
        return JR_ECORRUPT;
    jr__srec r;
    size_t len;
    if (jr__srec_decode(out, (size_t)mlen, 1, &r, &len) || len != mlen) return JR_ECORRUPT;
    *rlen = len;
    return 0;
}

int jr__blk_write_open(const uint8_t *plain, size_t n, uint32_t id, int flags, const jr__blk_key *k,
                       jr__buf *out)
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
    jr__blk_nonce nonce;
    jr__blk_nonce_init(&nonce);
    for (size_t off = 0; off < n; off += len) {
        if (jr__srec_decode(plain + off, n - off, 0, &r, &len)) return JR_ECORRUPT;
        if (jr__buf_reserve(out, jr__blk_frame_size(len))) return out->err;
        jr__blk_frame(out->data + out->len, plain + off, len, id, k, &nonce);
        out->len += jr__blk_frame_size(len);
    }
    return out->err;
}

/* Where chunk i of a sealed block is, and how to check it. */
static void chunk_nonce(uint8_t nonce[24], const uint8_t prefix[16], uint32_t i)
{
    memcpy(nonce, prefix, 16);
    jr__put_u64(nonce + 16, i);
}

/* Associated data: header bytes 0..24 (what the block is: magic, version, flags, id, key
 * check, raw length) and the chunk number. */
static void chunk_ad(uint8_t ad[28], const uint8_t *hdr, uint32_t i)
{
    memcpy(ad, hdr, 24);
    jr__put_u32(ad + 24, i);
}

int jr__blk_seal(const uint8_t *plain, size_t n, uint32_t id, int flags, const jr__blk_key *k,
                 jr__buf *out)
{
    /* chunk boundaries: whole records, about JR__BLK_CHUNK raw bytes each */
    size_t nchunks = 0, cap = 0;
    size_t *bounds = NULL; /* start offsets */
    jr__srec r;
    size_t len;
    for (size_t off = 0, cstart = 0; off < n; off += len) {
        if (jr__srec_decode(plain + off, n - off, 0, &r, &len)) {
            jr__free(out->alloc, bounds);
            return JR_ECORRUPT;
        }
        if (nchunks && off + len - cstart <= JR__BLK_CHUNK) continue;
        if (nchunks == cap) {
            cap = cap ? cap * 2 : 256;
            size_t *v = jr__realloc(out->alloc, bounds, cap * sizeof *v);
            if (!v) {
                jr__free(out->alloc, bounds);
                return JR_ENOMEM;
            }
            bounds = v;
        }
        bounds[nchunks++] = off;
        cstart = off;
    }
    size_t start = out->len;
    size_t tag = (flags & JR__BLKF_ENC) ? crypto_aead_xchacha20poly1305_ietf_ABYTES : 0;
    size_t bound = JR__BLK_SEAL_HDR + nchunks * (JR__BLK_CHUNK_ENTRY + tag + 16) + 8 +
                   ((flags & JR__BLKF_LZ4) ? (size_t)LZ4_compressBound((int)JR__BLK_CHUNK) : 0);
    for (size_t i = 0; i < nchunks; i++) {
        size_t raw = (i + 1 < nchunks ? bounds[i + 1] : n) - bounds[i];
        bound += (flags & JR__BLKF_LZ4) && raw <= (size_t)LZ4_MAX_INPUT_SIZE
                     ? (size_t)LZ4_compressBound((int)raw)
                     : raw;
    }
    if (jr__buf_reserve(out, bound)) {
        jr__free(out->alloc, bounds);
        return out->err;
    }
    uint8_t *h = out->data + start;
    memcpy(h, seal_magic, 4);
    h[4] = 1;
    h[5] = 0;
    h[6] = (uint8_t)flags;
    h[7] = 0;
    jr__put_u32(h + 8, id);
    jr__put_u32(h + 12, (flags & JR__BLKF_ENC) ? k->check : 0);
    jr__put_u64(h + 16, n);
    /* 24: stored_len, set below */
    if (flags & JR__BLKF_ENC)
        randombytes_buf(h + 32, 16);
    else
        memset(h + 32, 0, 16);
    jr__put_u32(h + 48, (uint32_t)nchunks);
    jr__put_u32(h + 52, 0);
    uint8_t *body = h + JR__BLK_SEAL_HDR;
    size_t pos = 0;
    /* the index goes after the chunks; build it in place once the chunks are written */
    uint8_t *entries = jr__malloc(out->alloc, nchunks * JR__BLK_CHUNK_ENTRY + 1);
    if (!entries) {
        jr__free(out->alloc, bounds);
        return JR_ENOMEM;
    }
    for (size_t i = 0; i < nchunks; i++) {
        size_t roff = bounds[i], raw = (i + 1 < nchunks ? bounds[i + 1] : n) - roff;
        uint8_t *dst = body + pos;
        size_t clen = raw;
        int lz = (flags & JR__BLKF_LZ4) && raw <= (size_t)LZ4_MAX_INPUT_SIZE;
        if (lz) {
            int c = LZ4_compress_default((const char *)plain + roff, (char *)dst, (int)raw,
                                         LZ4_compressBound((int)raw));
            if (c <= 0)
                lz = 0;
            else
                clen = (size_t)c;
        }
        if (!lz) memcpy(dst, plain + roff, raw);
        if (flags & JR__BLKF_ENC) {
            uint8_t nonce[24], ad[28];
            chunk_nonce(nonce, h + 32, (uint32_t)i);
            chunk_ad(ad, h, (uint32_t)i);
            unsigned long long elen;
            crypto_aead_xchacha20poly1305_ietf_encrypt(dst, &elen, dst, clen, ad, sizeof ad, NULL,
                                                       nonce, k->key);
            clen = (size_t)elen;
        }
        uint8_t *e = entries + i * JR__BLK_CHUNK_ENTRY;
        jr__put_u64(e, roff);
        jr__put_u32(e + 8, (uint32_t)raw);
        jr__put_u32(e + 12, (uint32_t)clen | (lz ? 0x80000000u : 0));
        jr__put_u64(e + 16, pos);
        jr__put_u64(e + 24, jr__xxh3(dst, clen));
        pos += clen;
    }
    memcpy(body + pos, entries, nchunks * JR__BLK_CHUNK_ENTRY);
    pos += nchunks * JR__BLK_CHUNK_ENTRY;
    jr__put_u64(body + pos, jr__xxh3(entries, nchunks * JR__BLK_CHUNK_ENTRY));
    pos += 8;
    jr__free(out->alloc, entries);
    jr__free(out->alloc, bounds);
    jr__put_u64(h + 24, pos);
    jr__put_u64(h + 56, jr__xxh3(h, 56));
    out->len = start + JR__BLK_SEAL_HDR + pos;
    return 0;
}

int jr__blk_sealed_header(const uint8_t *h, size_t n, jr__blk_sealed *out)
{
    if (n < JR__BLK_SEAL_HDR || memcmp(h, seal_magic, 4) != 0 ||
        jr__get_u64(h + 56) != jr__xxh3(h, 56) || h[4] != 1 || h[5] != 0 || h[7] != 0 ||
        (h[6] & ~(JR__BLKF_ENC | JR__BLKF_LZ4)) || jr__get_u32(h + 52) != 0)
        return JR_ECORRUPT;
    out->id = jr__get_u32(h + 8);
    out->flags = h[6];
    out->keycheck = jr__get_u32(h + 12);
    out->raw_len = jr__get_u64(h + 16);
    out->stored_len = jr__get_u64(h + 24);
    out->nchunks = jr__get_u32(h + 48);
    memcpy(out->hdr, h, 32);
    memcpy(out->prefix, h + 32, 16);
    uint64_t idx = (uint64_t)out->nchunks * JR__BLK_CHUNK_ENTRY + 8;
    if (out->stored_len < idx || out->raw_len > JR__BLK_RAW_MAX ||
        (out->nchunks == 0) != (out->raw_len == 0))
        return JR_ECORRUPT;
    out->index_off = JR__BLK_SEAL_HDR + out->stored_len - idx;
    return 0;
}

int jr__blk_sealed_index(const jr__blk_sealed *hd, const uint8_t *idx, size_t n,
                         jr__blk_chunk *chunks)
{
    size_t len = (size_t)hd->nchunks * JR__BLK_CHUNK_ENTRY;
    if (n != len + 8 || jr__get_u64(idx + len) != jr__xxh3(idx, len)) return JR_ECORRUPT;
    uint64_t raw = 0, stored = 0, data_len = hd->index_off - JR__BLK_SEAL_HDR;
    size_t tag = (hd->flags & JR__BLKF_ENC) ? crypto_aead_xchacha20poly1305_ietf_ABYTES : 0;
    for (uint32_t i = 0; i < hd->nchunks; i++) {
        const uint8_t *e = idx + (size_t)i * JR__BLK_CHUNK_ENTRY;
        jr__blk_chunk *c = &chunks[i];
        c->raw_off = jr__get_u64(e);
        c->raw_len = jr__get_u32(e + 8);
        uint32_t sl = jr__get_u32(e + 12);
        c->lz4 = (sl & 0x80000000u) != 0;
        c->stored_len = sl & 0x7fffffffu;
        c->stored_off = jr__get_u64(e + 16);
        c->sum = jr__get_u64(e + 24);
        if (c->raw_off != raw || c->stored_off != stored || c->raw_len == 0 ||
            c->stored_len < tag || c->stored_len > data_len - stored ||
            (c->lz4 && !(hd->flags & JR__BLKF_LZ4)) ||
            (!c->lz4 && c->stored_len - tag != c->raw_len) ||
            (c->lz4 && (uint64_t)c->raw_len > (uint64_t)(c->stored_len - tag) * 255 + 64))
            return JR_ECORRUPT;
        raw += c->raw_len;
        stored += c->stored_len;
    }
    if (raw != hd->raw_len || stored != data_len) return JR_ECORRUPT;
    return 0;
}

int jr__blk_chunk_decode(const jr__blk_sealed *hd, const jr__blk_chunk *c, uint32_t i,
                         const uint8_t *stored, const jr__blk_key *k, uint8_t *out,
                         jr__buf *scratch)
{
    if (jr__xxh3(stored, c->stored_len) != c->sum) return JR_ECORRUPT;
    const uint8_t *src = stored;
    size_t slen = c->stored_len;
    if (hd->flags & JR__BLKF_ENC) {
        if (!k) return JR_EAUTH;
        uint8_t nonce[24], ad[28];
        chunk_nonce(nonce, hd->prefix, i);
        chunk_ad(ad, hd->hdr, i);
        slen -= crypto_aead_xchacha20poly1305_ietf_ABYTES;
        uint8_t *dst = out;
        if (c->lz4) {
            jr__buf_reset(scratch);
            if (jr__buf_reserve(scratch, slen ? slen : 1)) return scratch->err;
            dst = scratch->data;
        }
        unsigned long long mlen;
        if (crypto_aead_xchacha20poly1305_ietf_decrypt(dst, &mlen, NULL, stored, c->stored_len, ad,
                                                       sizeof ad, nonce, k->key) != 0)
            return JR_EAUTH;
        src = dst;
    }
    if (c->lz4) {
        int d = LZ4_decompress_safe((const char *)src, (char *)out, (int)slen, (int)c->raw_len);
        if (d < 0 || (uint32_t)d != c->raw_len) return JR_ECORRUPT;
    } else if (!(hd->flags & JR__BLKF_ENC)) {
        memcpy(out, src, c->raw_len);
    }
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
        return JR_EAUTH;
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
        if (clen > n - off - JR__BLK_FRAME_HEAD) break; /* before reserving room for it */
        if (jr__buf_reserve(buf, clen)) return buf->err;
        size_t rlen;
        if (jr__blk_frame_open(f + off, n - off, info->id, k, buf->data + buf->len, &rlen)) break;
        buf->len += rlen;
        off += JR__BLK_FRAME_HEAD + clen;
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
    jr__blk_sealed hd;
    if (jr__blk_sealed_header(f, n, &hd)) return bad(info, 0, "bad sealed block header");
    info->kind = JR__BLK_SEALED;
    info->id = hd.id;
    info->flags = hd.flags;
    info->keycheck = hd.keycheck;
    if (hd.stored_len != n - JR__BLK_SEAL_HDR) return bad(info, 24, "sealed block length mismatch");
    int rc = key_ok(info->flags, info->keycheck, k, info);
    if (rc) return rc;
    jr__blk_chunk *chunks = jr__calloc(buf->alloc, hd.nchunks ? hd.nchunks : 1, sizeof *chunks);
    if (!chunks) return JR_ENOMEM;
    jr__buf scratch;
    jr__buf_init(&scratch, buf->alloc);
    rc = jr__blk_sealed_index(&hd, f + hd.index_off, n - (size_t)hd.index_off, chunks);
    if (rc) {
        rc = bad(info, hd.index_off, "bad chunk index");
        goto out;
    }
    jr__buf_reset(buf);
    if (jr__buf_reserve(buf, hd.raw_len ? (size_t)hd.raw_len : 1)) {
        rc = buf->err;
        goto out;
    }
    for (uint32_t i = 0; i < hd.nchunks; i++) {
        const jr__blk_chunk *c = &chunks[i];
        rc = jr__blk_chunk_decode(&hd, c, i, f + JR__BLK_SEAL_HDR + c->stored_off, k,
                                  buf->data + c->raw_off, &scratch);
        if (rc == JR_ENOMEM) goto out; /* the scratch buffer, not the bytes */
        if (rc) {
            rc = bad(info, JR__BLK_SEAL_HDR + c->stored_off,
                     rc == JR_EAUTH ? "sealed chunk failed authentication" : "bad sealed chunk");
            goto out;
        }
    }
    buf->len = (size_t)hd.raw_len;
    info->plain = buf->data;
    info->plain_len = walk(buf->data, buf->len);
    info->good_end = n;
    if (info->plain_len != buf->len) rc = bad(info, JR__BLK_SEAL_HDR, "bad record in sealed block");
out:
    jr__buf_free(&scratch);
    jr__free(buf->alloc, chunks);
    return rc;
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
#define GOOD(q) (good[((q)-from) / 8] >> (((q)-from) % 8) & 1)
        good[(n - from) / 8] |= (uint8_t)(1u << ((n - from) % 8));
        for (size_t q = n; q-- > from + 1;) {
            if (n - q < JR__BLK_FRAME_OVERHEAD + JR__SREC_MIN) continue;
            uint32_t c = jr__get_u32(f + q);
            if (c < JR__SREC_MIN + JR__BLK_FRAME_TAG || c > n - q - JR__BLK_FRAME_HEAD) continue;
            if (GOOD(q + JR__BLK_FRAME_HEAD + (size_t)c))
                good[(q - from) / 8] |= (uint8_t)(1u << ((q - from) % 8));
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
                                                           f + p + 28, c2, ad, sizeof ad, f + p + 4,
                                                           k->key) == 0)
                return 1;
        }
#undef GOOD
        return 0;
    }
    jr__srec r;
    size_t len;
    for (size_t p = from + 1; p + JR__SREC_MIN <= n; p++) {
        uint32_t l = jr__get_u32(f + p);
        if (l < JR__SREC_MIN || l > n - p || f[p + 5] != 0 || f[p + 4] < 1 ||
            f[p + 4] > JR__SREC_TYPE_MAX)
            continue;
        if (jr__srec_decode(f + p, n - p, 1, &r, &len) == 0) return 1;
    }
    return 0;
}
