/*
 * key — jr_link_key: generating, encoding, decoding and freeing authority and identity keys,
 * and the base64 text form of any key or certificate.
 *
 * A key is an Ed25519 key pair or a public key alone, with its role. The encoded form is
 * fixed-size (JR_LINK_KEY_BYTES): "JRK" | version | role | form | 32 key bytes | xxh3-64; a
 * secret key is stored as its 32-byte seed, from which libsodium rebuilds the pair, so a decoded
 * pair is always consistent. Invariant: a key's secret bytes exist only in its struct and are
 * zeroed before the struct is freed.
 */
#include <string.h>

#include "link/link_int.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/checksum.h"

_Static_assert(JR__KEY_BODY + 8 == JR_LINK_KEY_BYTES, "key blob size");
_Static_assert(crypto_sign_SEEDBYTES == 32 && crypto_sign_PUBLICKEYBYTES == 32, "ed25519 sizes");

static int key_new(int role, const jr_allocator *alloc, jr_link_key **out)
{
    jr_link_key *k = jr__calloc(alloc, 1, sizeof *k);
    if (!k) return JR_ENOMEM;
    k->alloc = alloc;
    k->role = role;
    *out = k;
    return 0;
}

int jr_link_key_generate(int role, const jr_allocator *alloc, jr_link_key **out)
{
    if (!out) return JR_EINVAL;
    *out = NULL;
    if (role != JR_LINK_AUTHORITY && role != JR_LINK_IDENTITY) return JR_EINVAL;
    if (sodium_init() < 0) return JR_EIO;
    jr_link_key *k;
    int rc = key_new(role, alloc, &k);
    if (rc) return rc;
    crypto_sign_keypair(k->pk, k->sk);
    k->has_secret = 1;
    *out = k;
    return 0;
}

int jr_link_key_encode(const jr_link_key *key, int secret, void *buf, size_t cap, size_t *len)
{
    if (!key || !buf || !len || cap < JR_LINK_KEY_BYTES) return JR_EINVAL;
    if (secret && !key->has_secret) return JR_EINVAL;
    uint8_t *p = buf;
    memcpy(p, "JRK", 3);
    p[3] = JR__KEY_VERSION;
    p[4] = (uint8_t)key->role;
    p[5] = secret ? JR__KEY_FORM_SECRET : JR__KEY_FORM_PUBLIC;
    /* libsodium's secret key is seed | public key: the seed is its first 32 bytes */
    memcpy(p + 6, secret ? key->sk : key->pk, 32);
    jr__put_u64(p + JR__KEY_BODY, jr__xxh3(p, JR__KEY_BODY));
    *len = JR_LINK_KEY_BYTES;
    return 0;
}

int jr_link_key_decode(const void *buf, size_t len, const jr_allocator *alloc, jr_link_key **out)
{
    if (!out) return JR_EINVAL;
    *out = NULL;
    if (!buf && len) return JR_EINVAL;
    const uint8_t *p = buf;
    if (len != JR_LINK_KEY_BYTES || memcmp(p, "JRK", 3) != 0) return JR_ECORRUPT;
    if (jr__get_u64(p + JR__KEY_BODY) != jr__xxh3(p, JR__KEY_BODY)) return JR_ECORRUPT;
    if (p[3] != JR__KEY_VERSION) return JR_EVERSION;
    int role = p[4], form = p[5];
    if (role != JR_LINK_AUTHORITY && role != JR_LINK_IDENTITY) return JR_ECORRUPT;
    if (form != JR__KEY_FORM_SECRET && form != JR__KEY_FORM_PUBLIC) return JR_ECORRUPT;
    if (sodium_init() < 0) return JR_EIO;
    jr_link_key *k;
    int rc = key_new(role, alloc, &k);
    if (rc) return rc;
    if (form == JR__KEY_FORM_SECRET) {
        crypto_sign_seed_keypair(k->pk, k->sk, p + 6);
        k->has_secret = 1;
    } else {
        memcpy(k->pk, p + 6, 32);
    }
    *out = k;
    return 0;
}

int jr_link_key_role(const jr_link_key *key)
{
    return key ? key->role : 0;
}

int jr_link_key_has_secret(const jr_link_key *key)
{
    return key ? key->has_secret : 0;
}

void jr_link_key_public(const jr_link_key *key, unsigned char out[32])
{
    if (key && out) memcpy(out, key->pk, 32);
}

void jr_link_key_free(jr_link_key *key)
{
    if (!key) return;
    const jr_allocator *a = key->alloc;
    sodium_memzero(key, sizeof *key);
    jr__free(a, key);
}

int jr_link_text_encode(const void *bin, size_t len, char *text, size_t cap, size_t *text_len)
{
    if ((!bin && len) || !text || !text_len) return JR_EINVAL;
    if (len > JR_LINK_TEXT_MAX) return JR_EINVAL;
    size_t need = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
    if (cap < need) return JR_EINVAL;
    if (sodium_init() < 0) return JR_EIO;
    sodium_bin2base64(text, cap, bin, len, sodium_base64_VARIANT_ORIGINAL);
    *text_len = strlen(text);
    return 0;
}

int jr_link_text_decode(const char *text, size_t text_len, void *bin, size_t cap, size_t *len)
{
    if ((!text && text_len) || (!bin && cap) || !len) return JR_EINVAL;
    *len = 0;
    if (sodium_init() < 0) return JR_EIO;
    /* the decoded size, from the significant characters: too little room is JR_EMSGSIZE, and
     * any other failure is the text's fault */
    size_t sig = 0;
    for (size_t i = 0; i < text_len; i++) {
        char c = text[i];
        sig += c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '=';
    }
    if (sig / 4 * 3 + (sig % 4 ? sig % 4 - 1 : 0) > cap) return JR_EMSGSIZE;
    const char *end;
    size_t n;
    if (sodium_base642bin(bin, cap, text, text_len, " \t\r\n", &n, &end,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        end != text + text_len)
        return JR_ECORRUPT;
    *len = n;
    return 0;
}
