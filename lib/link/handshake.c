/*
 * handshake — the HELLO and AUTH records: ephemeral key exchange, certificate checks, the
 * transcript, proof of possession of the identity key, and the session keys.
 *
 * Both sides send HELLO at once; each answers the other's HELLO with its AUTH; each side is
 * OPEN once the other's AUTH verifies. The transcript T (BLAKE2b-256 of a context string and
 * both HELLO records, the dialer's first) is what each AUTH signs, with the signer's role, so a
 * signature proves the identity key's holder took part in this very exchange (both ephemeral
 * keys are in it) in that role. The session keys are crypto_kx's, each keyed-hashed with T.
 * Invariant: nothing is sealed or opened before the peer's AUTH verified, since until then the
 * other end of the key exchange may be anyone who copied a certificate.
 */
#include <string.h>

#include "link/link_int.h"
#include "util/alloc.h"
#include "util/buf.h"

static const char transcript_context[] = "jetraft-link-v1";
static const char auth_context[] = "jetraft-link-auth-v1";

_Static_assert(crypto_kx_SESSIONKEYBYTES == crypto_secretstream_xchacha20poly1305_KEYBYTES,
               "session key size");
_Static_assert(JR__HELLO_MAX <= JR__LINK_HS_MAX && JR__AUTH_BODY <= JR__LINK_HS_MAX,
               "handshake records fit their buffer");

static void out_push(jr_link *l, const uint8_t *rec, size_t n)
{
    /* two records of at most JR__REC_HDR + JR__LINK_HS_MAX bytes each ever go through here */
    memcpy(l->out + l->out_len, rec, n);
    l->out_len += n;
}

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

int jr__link_hello(jr_link *l, const void *cert, size_t cert_len)
{
    crypto_kx_keypair(l->eph_pk, l->eph_sk);
    uint8_t *r = l->hello, *b = r + JR__REC_HDR;
    memcpy(b, "JRL", 3);
    b[3] = JR__LINK_VERSION;
    b[4] = (uint8_t)l->role;
    b[5] = 0; /* flags */
    jr__put_u32(b + 6, l->max_frame);
    memcpy(b + 10, l->eph_pk, sizeof l->eph_pk);
    put_u16(b + 42, (uint16_t)cert_len);
    memcpy(b + JR__HELLO_HEAD, cert, cert_len);
    size_t body = JR__HELLO_HEAD + cert_len;
    jr__put_u32(r, (uint32_t)body);
    l->hello_len = JR__REC_HDR + body;
    out_push(l, r, l->hello_len);
    return 0;
}

/* The message an AUTH signs: context | signer's role | T. */
static size_t auth_message(const jr_link *l, int role, uint8_t *msg)
{
    memcpy(msg, auth_context, sizeof auth_context - 1);
    msg[sizeof auth_context - 1] = (uint8_t)role;
    memcpy(msg + sizeof auth_context, l->transcript, sizeof l->transcript);
    return sizeof auth_context + sizeof l->transcript;
}

#define AUTH_MSG_MAX (sizeof auth_context + crypto_generichash_BYTES)

static void transcript(jr_link *l, const uint8_t *peer_body, size_t peer_len)
{
    uint8_t peer_hdr[JR__REC_HDR];
    jr__put_u32(peer_hdr, (uint32_t)peer_len);
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, sizeof l->transcript);
    crypto_generichash_update(&h, (const uint8_t *)transcript_context,
                              sizeof transcript_context - 1);
    if (l->role == JR_LINK_DIALER) crypto_generichash_update(&h, l->hello, l->hello_len);
    crypto_generichash_update(&h, peer_hdr, sizeof peer_hdr);
    crypto_generichash_update(&h, peer_body, peer_len);
    if (l->role == JR_LINK_ACCEPTOR) crypto_generichash_update(&h, l->hello, l->hello_len);
    crypto_generichash_final(&h, l->transcript, sizeof l->transcript);
}

/* The peer's HELLO: check it, derive the keys, queue our AUTH. */
static int hello_in(jr_link *l, const uint8_t *b, size_t len)
{
    if (len < 4 || memcmp(b, "JRL", 3) != 0)
        return jr__link_fail(l, JR_ECORRUPT, "not a link HELLO");
    if (b[3] != JR__LINK_VERSION)
        return jr__link_fail(l, JR_EVERSION, "unknown link protocol version");
    if (len < JR__HELLO_HEAD) return jr__link_fail(l, JR_ECORRUPT, "HELLO too short");
    int role = b[4];
    if (role != JR_LINK_DIALER && role != JR_LINK_ACCEPTOR)
        return jr__link_fail(l, JR_ECORRUPT, "HELLO with an unknown role");
    if (role == l->role) return jr__link_fail(l, JR_EAUTH, "peer claims this side's role");
    if (b[5] != 0) return jr__link_fail(l, JR_ECORRUPT, "HELLO with unknown flags");
    uint32_t peer_max = jr__get_u32(b + 6);
    if (peer_max < JR_LINK_MAX_FRAME_MIN)
        return jr__link_fail(l, JR_ECORRUPT, "HELLO with a max frame below the minimum");
    const uint8_t *peer_eph = b + 10;
    size_t cert_len = get_u16(b + 42);
    if (JR__HELLO_HEAD + cert_len != len)
        return jr__link_fail(l, JR_ECORRUPT, "HELLO length does not match its certificate");
    jr__cert c;
    int rc = jr__cert_decode(b + JR__HELLO_HEAD, cert_len, &c);
    if (rc) return jr__link_fail(l, rc, "peer certificate malformed");
    const char *why;
    rc = jr__cert_verify(&c, l->authority_pk, l->cluster, l->expect[0] ? l->expect : NULL, &why);
    if (rc) return jr__link_fail(l, rc, why);
    if (c.name_len == strlen(l->self_name) && memcmp(c.name, l->self_name, c.name_len) == 0)
        return jr__link_fail(l, JR_EAUTH, "peer claims this server's name");
    memcpy(l->peer_name, c.name, c.name_len);
    l->peer_name[c.name_len] = 0;
    memcpy(l->peer_id_pk, c.identity, sizeof l->peer_id_pk);
    /* a record's length (a u32) must hold the largest frame and secretstream's bytes */
    l->peer_max_frame =
        peer_max > UINT32_MAX - JR__SS_ABYTES ? UINT32_MAX - JR__SS_ABYTES : peer_max;

    transcript(l, b, len);
    uint8_t rx[crypto_kx_SESSIONKEYBYTES], tx[crypto_kx_SESSIONKEYBYTES];
    rc = l->role == JR_LINK_DIALER
             ? crypto_kx_client_session_keys(rx, tx, l->eph_pk, l->eph_sk, peer_eph)
             : crypto_kx_server_session_keys(rx, tx, l->eph_pk, l->eph_sk, peer_eph);
    sodium_memzero(l->eph_sk, sizeof l->eph_sk);
    if (rc != 0) return jr__link_fail(l, JR_EAUTH, "peer's ephemeral key is unusable");
    uint8_t tx_key[crypto_secretstream_xchacha20poly1305_KEYBYTES];
    crypto_generichash(l->rx_key, sizeof l->rx_key, l->transcript, sizeof l->transcript, rx,
                       sizeof rx);
    crypto_generichash(tx_key, sizeof tx_key, l->transcript, sizeof l->transcript, tx, sizeof tx);
    sodium_memzero(rx, sizeof rx);
    sodium_memzero(tx, sizeof tx);

    uint8_t rec[JR__REC_HDR + JR__AUTH_BODY];
    jr__put_u32(rec, JR__AUTH_BODY);
    uint8_t msg[AUTH_MSG_MAX];
    size_t mlen = auth_message(l, l->role, msg);
    crypto_sign_detached(rec + JR__REC_HDR, NULL, msg, mlen, l->id_sk);
    crypto_secretstream_xchacha20poly1305_init_push(&l->tx, rec + JR__REC_HDR + crypto_sign_BYTES,
                                                    tx_key);
    sodium_memzero(tx_key, sizeof tx_key);
    sodium_memzero(l->id_sk, sizeof l->id_sk); /* its one use on this link is done */
    out_push(l, rec, sizeof rec);
    l->have_peer = 1;
    return 0;
}

/* The peer's AUTH: its proof of possession of the certificate's identity key. */
static int auth_in(jr_link *l, const uint8_t *b, size_t len)
{
    if (len != JR__AUTH_BODY) return jr__link_fail(l, JR_ECORRUPT, "AUTH of the wrong length");
    uint8_t msg[AUTH_MSG_MAX];
    int peer_role = l->role == JR_LINK_DIALER ? JR_LINK_ACCEPTOR : JR_LINK_DIALER;
    size_t mlen = auth_message(l, peer_role, msg);
    if (crypto_sign_verify_detached(b, msg, mlen, l->peer_id_pk) != 0)
        return jr__link_fail(l, JR_EAUTH, "peer did not prove its identity key");
    int rc =
        crypto_secretstream_xchacha20poly1305_init_pull(&l->rx, b + crypto_sign_BYTES, l->rx_key);
    sodium_memzero(l->rx_key, sizeof l->rx_key);
    if (rc != 0) return jr__link_fail(l, JR_ECORRUPT, "AUTH with an unusable stream header");
    l->rx_cap = (size_t)l->max_frame + JR__SS_ABYTES;
    l->rx_buf = jr__malloc(l->alloc, l->rx_cap);
    if (!l->rx_buf) return jr__link_fail(l, JR_ENOMEM, "no memory for the receive buffer");
    l->state = JR_LINK_OPEN;
    return 0;
}

int jr__link_handshake(jr_link *l, const uint8_t *body, size_t len)
{
    return l->have_peer ? auth_in(l, body, len) : hello_in(l, body, len);
}
