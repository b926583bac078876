/*
 * cert — certificates: an authority's Ed25519 signature binding a server's identity public key
 * to its server name and cluster name.
 *
 * Layout (include/jetraft/link.h): "JRC" | version | name_len | cluster_len | identity pk (32) |
 * name | cluster | signature (64) of "jetraft-link-cert-v1" and every byte before it. Decoding
 * is strict (exact length, valid names, known version) and never reads past the given length;
 * the signature is what makes the bytes trustworthy, and it is checked only against the
 * authority key the caller trusts.
 */
#include <string.h>

#include "link/link_int.h"

static const char cert_context[] = "jetraft-link-cert-v1";

int jr__link_name_ok(const char *s, size_t n)
{
    if (!s || n == 0 || n > JR_LINK_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e) return 0;
    return 1;
}

int jr__cert_decode(const void *buf, size_t len, jr__cert *c)
{
    const uint8_t *p = buf;
    if (!p || len < JR__CERT_HEAD || memcmp(p, "JRC", 3) != 0) return JR_ECORRUPT;
    if (p[3] != JR__CERT_VERSION) return JR_EVERSION;
    size_t nl = p[4], cl = p[5];
    if (len != JR__CERT_HEAD + nl + cl + JR__CERT_SIG) return JR_ECORRUPT;
    c->bytes = p;
    c->identity = p + 6;
    c->name = (const char *)p + JR__CERT_HEAD;
    c->name_len = nl;
    c->cluster = c->name + nl;
    c->cluster_len = cl;
    c->signed_len = JR__CERT_HEAD + nl + cl;
    c->sig = p + c->signed_len;
    if (!jr__link_name_ok(c->name, nl) || !jr__link_name_ok(c->cluster, cl)) return JR_ECORRUPT;
    return 0;
}

/* The signed message: the context string and the certificate's bytes before the signature. */
static void cert_message(uint8_t *msg, const uint8_t *cert, size_t signed_len)
{
    memcpy(msg, cert_context, sizeof cert_context - 1);
    memcpy(msg + sizeof cert_context - 1, cert, signed_len);
}

#define CERT_MSG_MAX (sizeof cert_context - 1 + JR_LINK_CERT_MAX)

static int same(const char *a, size_t alen, const char *b)
{
    return strlen(b) == alen && memcmp(a, b, alen) == 0;
}

int jr__cert_verify(const jr__cert *c, const uint8_t *authority_pk, const char *cluster,
                    const char *name, const char **why)
{
    uint8_t msg[CERT_MSG_MAX];
    cert_message(msg, c->bytes, c->signed_len);
    if (crypto_sign_verify_detached(c->sig, msg, sizeof cert_context - 1 + c->signed_len,
                                    authority_pk) != 0) {
        *why = "certificate not signed by the cluster authority";
        return JR_EAUTH;
    }
    if (!same(c->cluster, c->cluster_len, cluster)) {
        *why = "certificate of another cluster";
        return JR_EAUTH;
    }
    if (name && !same(c->name, c->name_len, name)) {
        *why = "certificate of another server name";
        return JR_EAUTH;
    }
    return 0;
}

int jr_link_cert_sign(const jr_link_key *authority, const jr_link_key *identity,
                      const char *cluster, const char *name, void *buf, size_t cap, size_t *len)
{
    if (!authority || !identity || !cluster || !name || !buf || !len) return JR_EINVAL;
    if (authority->role != JR_LINK_AUTHORITY || !authority->has_secret) return JR_EINVAL;
    if (identity->role != JR_LINK_IDENTITY) return JR_EINVAL;
    size_t nl = strlen(name), cl = strlen(cluster);
    if (!jr__link_name_ok(name, nl) || !jr__link_name_ok(cluster, cl)) return JR_EINVAL;
    size_t total = JR__CERT_HEAD + nl + cl + JR__CERT_SIG;
    if (cap < total) return JR_EINVAL;
    if (sodium_init() < 0) return JR_EIO;
    uint8_t *p = buf;
    memcpy(p, "JRC", 3);
    p[3] = JR__CERT_VERSION;
    p[4] = (uint8_t)nl;
    p[5] = (uint8_t)cl;
    memcpy(p + 6, identity->pk, 32);
    memcpy(p + JR__CERT_HEAD, name, nl);
    memcpy(p + JR__CERT_HEAD + nl, cluster, cl);
    size_t signed_len = JR__CERT_HEAD + nl + cl;
    uint8_t msg[CERT_MSG_MAX];
    cert_message(msg, p, signed_len);
    crypto_sign_detached(p + signed_len, NULL, msg, sizeof cert_context - 1 + signed_len,
                         authority->sk);
    *len = total;
    return 0;
}

int jr_link_cert_check(const void *cert, size_t len, const jr_link_key *authority,
                       const char *cluster, const char *name)
{
    if (!cert || !authority || !cluster) return JR_EINVAL;
    if (sodium_init() < 0) return JR_EIO;
    jr__cert c;
    int rc = jr__cert_decode(cert, len, &c);
    if (rc) return rc;
    const char *why;
    return jr__cert_verify(&c, authority->pk, cluster, name, &why);
}

int jr_link_cert_name(const void *cert, size_t len, char *name, size_t cap)
{
    if (!cert || !name) return JR_EINVAL;
    jr__cert c;
    int rc = jr__cert_decode(cert, len, &c);
    if (rc) return rc;
    if (cap < c.name_len + 1) return JR_EINVAL;
    memcpy(name, c.name, c.name_len);
    name[c.name_len] = 0;
    return 0;
}
