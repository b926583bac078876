/* atrest — key derivation, sealed WAL entries and sealed files (format and rules in atrest.h). */
#include "log/atrest.h"

#include <sodium.h>
#include <string.h>

#include "log/record.h"

_Static_assert(JR__REC_SEALED_OVERHEAD == JR__ATREST_NONCE + JR__ATREST_TAG, "sealed entry");
#include "util/alloc.h"
#include "util/checksum.h"

#define AEAD_ENC crypto_aead_xchacha20poly1305_ietf_encrypt_detached
#define AEAD_DEC crypto_aead_xchacha20poly1305_ietf_decrypt_detached

static const uint8_t sealf_magic[8] = {'J', 'R', 'S', 'E', 'A', 'L', 'E', 'D'};
#define SEALF_VERSION 1u

int jr__atrest_derive(const uint8_t node_key[32], int purpose, jr__atrest_key *out)
{
    if (sodium_init() < 0) return JR_EIO;
    const char *ctx = purpose == JR__ATREST_WAL ? "jrwal001" : "jrsnap01";
    if (crypto_kdf_derive_from_key(out->key, sizeof out->key, 1, ctx, node_key) != 0) return JR_EIO;
    uint8_t h[32];
    crypto_generichash(h, sizeof h, out->key, sizeof out->key, NULL, 0);
    out->check = jr__get_u32(h);
    return 0;
}

void jr__atrest_wipe(jr__atrest_key *k)
{
    if (k) sodium_memzero(k, sizeof *k);
}

void jr__atrest_nonce_init(jr__atrest_nonce *n)
{
    randombytes_buf(n->prefix, sizeof n->prefix);
    n->counter = 0;
}

void jr__atrest_put_entry(jr__buf *b, uint64_t group, uint64_t gseq, const jr__entry *e,
                          const jr__atrest_key *k, jr__atrest_nonce *n)
{
    size_t len = 16 + (size_t)e->len + JR__REC_SEALED_OVERHEAD;
    uint8_t *q = jr__rec_put_begin(b, JR__REC_SEALED, e->type, group, gseq, len);
    if (!q) return;
    jr__put_u64(q, e->term);
    jr__put_u64(q + 8, e->index);
    uint8_t *nonce = q + 16, *c = q + 16 + JR__ATREST_NONCE;
    memcpy(nonce, n->prefix, 16);
    jr__put_u64(nonce + 16, n->counter++);
    if (e->len) memcpy(c, e->data, e->len);
    /* associated data: record bytes [12, 48) — type, etype, hsum, group, gseq, term, index */
    AEAD_ENC(c, c + e->len, NULL, c, e->len, q - JR__REC_HDR + 12, 36, NULL, nonce, k->key);
    jr__rec_put_end(b);
}

int jr__atrest_open_entry(const jr__atrest_key *k, const uint8_t *rec, jr__rec *r, jr__buf *out)
{
    const uint8_t *q = rec + JR__REC_HDR;
    const uint8_t *nonce = q + 16, *c = q + 16 + JR__ATREST_NONCE;
    jr__buf_reset(out);
    if (jr__buf_reserve(out, r->e.len ? r->e.len : 1)) return JR_ENOMEM;
    if (AEAD_DEC(out->data, NULL, c, r->e.len, c + r->e.len, rec + 12, 36, nonce, k->key) != 0)
        return JR_EAUTH;
    out->len = r->e.len;
    r->e.data = out->data;
    r->sealed = 0;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Sealed files
 */

int jr__sealf_is(const uint8_t *p, size_t n)
{
    return n >= sizeof sealf_magic && memcmp(p, sealf_magic, sizeof sealf_magic) == 0;
}

/* Frames of a file of `size` bytes: *nframes and the last frame's plaintext length. */
static int layout(uint64_t size, uint64_t *nframes, uint64_t *last_len)
{
    const uint64_t full = JR__SEALF_FRAME + JR__SEALF_FRAME_OVERHEAD;
    if (size < JR__SEALF_HDR + JR__SEALF_FRAME_OVERHEAD) return JR_ECORRUPT;
    uint64_t body = size - JR__SEALF_HDR, k = body / full, rem = body % full;
    if (rem == 0) {
        *nframes = k;
        *last_len = JR__SEALF_FRAME;
    } else {
        if (rem < JR__SEALF_FRAME_OVERHEAD) return JR_ECORRUPT;
        *nframes = k + 1;
        *last_len = rem - JR__SEALF_FRAME_OVERHEAD;
    }
    return 0;
}

int jr__sealf_check(const jr__atrest_key *k, const uint8_t *hdr, size_t n, uint64_t size,
                    uint64_t *plain_len)
{
    if (n < JR__SEALF_HDR || !jr__sealf_is(hdr, n)) return JR_ECORRUPT;
    if (jr__get_u64(hdr + 40) != jr__xxh3(hdr, 40)) return JR_ECORRUPT;
    if (jr__get_u32(hdr + 8) != SEALF_VERSION) return JR_EVERSION;
    if (!k || jr__get_u32(hdr + 12) != k->check) return JR_EAUTH;
    if (jr__get_u32(hdr + 32) != JR__SEALF_FRAME || jr__get_u32(hdr + 36) != 0) return JR_ECORRUPT;
    uint64_t nf, last;
    int rc = layout(size, &nf, &last);
    if (rc) return rc;
    *plain_len = (nf - 1) * JR__SEALF_FRAME + last;
    return 0;
}

static void frame_ad(uint8_t ad[JR__SEALF_HDR + 9], const uint8_t *hdr, uint64_t i, int last)
{
    memcpy(ad, hdr, JR__SEALF_HDR);
    jr__put_u64(ad + JR__SEALF_HDR, i);
    ad[JR__SEALF_HDR + 8] = (uint8_t)(last != 0);
}

/* Seals frame i (plain[0..n)) into dst (n + overhead bytes). */
static void seal_frame(const jr__atrest_key *k, const uint8_t *hdr, uint64_t i, int last,
                       const uint8_t *plain, size_t n, uint8_t *dst)
{
    uint8_t ad[JR__SEALF_HDR + 9];
    frame_ad(ad, hdr, i, last);
    randombytes_buf(dst, JR__ATREST_NONCE);
    uint8_t *c = dst + JR__ATREST_NONCE;
    AEAD_ENC(c, c + n, NULL, plain, n, ad, sizeof ad, NULL, dst, k->key);
}

/* Opens frame i (src: n + overhead bytes) into out (n bytes). 0 or JR_ECORRUPT: the header's
 * key check matched, so a frame that does not authenticate was changed (damage, or tampering;
 * either way the file is no longer what was written). */
static int open_frame(const jr__atrest_key *k, const uint8_t *hdr, uint64_t i, int last,
                      const uint8_t *src, size_t n, uint8_t *out)
{
    uint8_t ad[JR__SEALF_HDR + 9];
    frame_ad(ad, hdr, i, last);
    const uint8_t *c = src + JR__ATREST_NONCE;
    return AEAD_DEC(out, NULL, c, n, c + n, ad, sizeof ad, src, k->key) == 0 ? 0 : JR_ECORRUPT;
}

static void make_header(const jr__atrest_key *k, uint8_t hdr[JR__SEALF_HDR])
{
    memcpy(hdr, sealf_magic, 8);
    jr__put_u32(hdr + 8, SEALF_VERSION);
    jr__put_u32(hdr + 12, k->check);
    randombytes_buf(hdr + 16, 16);
    jr__put_u32(hdr + 32, JR__SEALF_FRAME);
    jr__put_u32(hdr + 36, 0);
    jr__put_u64(hdr + 40, jr__xxh3(hdr, 40));
}

int jr__sealf_encode(const jr__atrest_key *k, const uint8_t *plain, size_t n, jr__buf *out)
{
    if (sodium_init() < 0) return JR_EIO;
    uint64_t nf = n ? (n + JR__SEALF_FRAME - 1) / JR__SEALF_FRAME : 1;
    jr__buf_reset(out);
    if (jr__buf_reserve(out, JR__SEALF_HDR + n + nf * JR__SEALF_FRAME_OVERHEAD)) return JR_ENOMEM;
    uint8_t *hdr = out->data;
    make_header(k, hdr);
    uint8_t *dst = out->data + JR__SEALF_HDR;
    for (uint64_t i = 0; i < nf; i++) {
        size_t off = (size_t)i * JR__SEALF_FRAME;
        size_t len = n - off < JR__SEALF_FRAME ? n - off : JR__SEALF_FRAME;
        seal_frame(k, hdr, i, i + 1 == nf, plain + off, len, dst);
        dst += len + JR__SEALF_FRAME_OVERHEAD;
    }
    out->len = (size_t)(dst - out->data);
    return 0;
}

int jr__sealf_decode(const jr__atrest_key *k, const uint8_t *p, size_t n, jr__buf *out)
{
    uint64_t plain;
    int rc = jr__sealf_check(k, p, n, n, &plain);
    if (rc) return rc;
    jr__buf_reset(out);
    if (jr__buf_reserve(out, plain ? (size_t)plain : 1)) return JR_ENOMEM;
    uint64_t nf = plain ? (plain + JR__SEALF_FRAME - 1) / JR__SEALF_FRAME : 1;
    const uint8_t *src = p + JR__SEALF_HDR;
    for (uint64_t i = 0; i < nf; i++) {
        size_t off = (size_t)i * JR__SEALF_FRAME;
        size_t len = (size_t)plain - off < JR__SEALF_FRAME ? (size_t)plain - off : JR__SEALF_FRAME;
        if ((rc = open_frame(k, p, i, i + 1 == nf, src, len, out->data + off)) != 0) return rc;
        src += len + JR__SEALF_FRAME_OVERHEAD;
    }
    out->len = (size_t)plain;
    return 0;
}

int jr__sealf_pread(const jr__atrest_key *k, jr_vfs *v, jr_file *f, uint64_t off, void *buf,
                    size_t cap, size_t *nread, jr__buf *scratch)
{
    *nread = 0;
    uint64_t size;
    int rc = v->size(v->ctx, f, &size);
    if (rc) return rc;
    uint8_t hdr[JR__SEALF_HDR];
    size_t got = 0;
    rc = v->pread(v->ctx, f, hdr, sizeof hdr, 0, &got);
    if (rc) return rc;
    uint64_t plain;
    if ((rc = jr__sealf_check(k, hdr, got, size, &plain)) != 0) return rc;
    uint64_t nf = plain ? (plain + JR__SEALF_FRAME - 1) / JR__SEALF_FRAME : 1;
    uint8_t *dst = buf;
    jr__buf_reset(scratch);
    if (jr__buf_reserve(scratch, 2 * (size_t)JR__SEALF_FRAME + JR__SEALF_FRAME_OVERHEAD))
        return JR_ENOMEM;
    uint8_t *frame = scratch->data,
            *plainbuf = scratch->data + JR__SEALF_FRAME + JR__SEALF_FRAME_OVERHEAD;
    while (*nread < cap && off < plain) {
        uint64_t i = off / JR__SEALF_FRAME;
        uint64_t base = i * JR__SEALF_FRAME;
        size_t len = plain - base < JR__SEALF_FRAME ? (size_t)(plain - base) : JR__SEALF_FRAME;
        uint64_t at = JR__SEALF_HDR + i * (JR__SEALF_FRAME + JR__SEALF_FRAME_OVERHEAD);
        size_t want = len + JR__SEALF_FRAME_OVERHEAD;
        rc = v->pread(v->ctx, f, frame, want, at, &got);
        if (rc) return rc;
        if (got != want) return JR_ECORRUPT;
        if ((rc = open_frame(k, hdr, i, i + 1 == nf, frame, len, plainbuf)) != 0) return rc;
        size_t from = (size_t)(off - base), n = len - from;
        if (n > cap - *nread) n = cap - *nread;
        memcpy(dst + *nread, plainbuf + from, n);
        *nread += n;
        off += n;
    }
    return 0;
}

int jr__sealf_writer_begin(jr__sealf_writer *w, const jr__atrest_key *k, const jr_allocator *a,
                           jr_vfs *v, jr_file *f)
{
    if (w->k == NULL) {
        jr__buf_init(&w->part, a);
        jr__buf_init(&w->out, a);
    }
    if (sodium_init() < 0) return JR_EIO;
    w->k = k;
    w->frame = 0;
    jr__buf_reset(&w->part);
    make_header(k, w->hdr);
    int rc = v->pwrite(v->ctx, f, w->hdr, sizeof w->hdr, 0);
    w->written = rc ? 0 : sizeof w->hdr;
    return rc;
}

/* Seals the held plaintext as frame w->frame and writes it. */
static int write_frame(jr__sealf_writer *w, jr_vfs *v, jr_file *f, int last)
{
    size_t n = w->part.len;
    jr__buf_reset(&w->out);
    if (jr__buf_reserve(&w->out, n + JR__SEALF_FRAME_OVERHEAD)) return JR_ENOMEM;
    seal_frame(w->k, w->hdr, w->frame, last, w->part.data, n, w->out.data);
    int rc = v->pwrite(v->ctx, f, w->out.data, n + JR__SEALF_FRAME_OVERHEAD, w->written);
    if (rc) return rc;
    w->written += n + JR__SEALF_FRAME_OVERHEAD;
    w->frame++;
    jr__buf_reset(&w->part);
    return 0;
}

int jr__sealf_writer_put(jr__sealf_writer *w, jr_vfs *v, jr_file *f, const void *p, size_t n)
{
    const uint8_t *s = p;
    while (n) {
        /* a full frame is written only once more follows: the last frame may be full */
        if (w->part.len == JR__SEALF_FRAME) {
            int rc = write_frame(w, v, f, 0);
            if (rc) return rc;
        }
        size_t k = JR__SEALF_FRAME - w->part.len;
        if (k > n) k = n;
        jr__buf_put(&w->part, s, k);
        if (w->part.err) return JR_ENOMEM;
        s += k;
        n -= k;
    }
    return 0;
}

int jr__sealf_writer_end(jr__sealf_writer *w, jr_vfs *v, jr_file *f)
{
    return write_frame(w, v, f, 1);
}

void jr__sealf_writer_free(jr__sealf_writer *w)
{
    if (!w->k) return;
    if (w->part.data) sodium_memzero(w->part.data, w->part.cap);
    jr__buf_free(&w->part);
    jr__buf_free(&w->out);
    w->k = NULL;
}
