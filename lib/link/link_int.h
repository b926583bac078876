/*
 * link_int — what the files of lib/link share: the key and link structures, the byte layouts
 * of include/jetraft/link.h as offsets, and the cross-file functions.
 *
 * Files: key.c (keys and their text form), cert.c (certificates), handshake.c (HELLO, AUTH,
 * transcript, session keys), link.c (the link's life and record reassembly), record.c (sealing
 * and opening DATA records).
 *
 * Invariants of a jr_link
 *  - state only moves forward: HANDSHAKE -> OPEN -> CLOSED, or to FAILED from any state; err is
 *    0 unless FAILED, and then every call that can fail returns it.
 *  - Until OPEN nothing is sealed or opened, and the link holds no buffer but its fixed arrays:
 *    a record in reassembly never exceeds JR__LINK_HS_MAX bytes there; once OPEN, never
 *    max_frame + 17 bytes in rx (allocated once, at the transition).
 *  - hdr_have < 4 while a record header is incomplete; body_have < rec_len while its body is.
 *  - Secret material (the identity key, the ephemeral kx secret, session keys, the secretstream
 *    states) lives only inside the link or key structs and is zeroed before they are freed; the
 *    ephemeral secret and the session keys are zeroed as soon as the secretstreams are set up.
 */
#ifndef JR_LINK_LINK_INT_H
#define JR_LINK_LINK_INT_H

#include <sodium.h>
#include <stdint.h>

#include "jetraft.h"

/* Key blob: "JRK" | version | role | form | 32 key bytes | xxh3-64. */
#define JR__KEY_VERSION 1
#define JR__KEY_FORM_SECRET 1
#define JR__KEY_FORM_PUBLIC 2
#define JR__KEY_BODY 38

struct jr_link_key {
    const jr_allocator *alloc;
    int role;
    int has_secret;
    uint8_t pk[crypto_sign_PUBLICKEYBYTES];
    uint8_t sk[crypto_sign_SECRETKEYBYTES]; /* seed | pk; zero without a secret */
};

/* Certificate: "JRC" | version | name_len | cluster_len | identity pk | name | cluster | sig. */
#define JR__CERT_VERSION 1
#define JR__CERT_HEAD 38
#define JR__CERT_SIG crypto_sign_BYTES

/* A decoded certificate: views into the bytes it was decoded from. */
typedef struct jr__cert {
    const uint8_t *bytes;    /* the certificate's first byte */
    const uint8_t *identity; /* 32 bytes */
    const char *name;        /* not NUL-terminated */
    size_t name_len;
    const char *cluster;
    size_t cluster_len;
    const uint8_t *sig; /* 64 bytes */
    size_t signed_len;  /* bytes the signature covers (all before it) */
} jr__cert;

/* Strict decode: JR_ECORRUPT, JR_EVERSION. */
int jr__cert_decode(const void *buf, size_t len, jr__cert *c);
/* Signature under authority_pk, then cluster and (if not NULL) name; JR_EAUTH and a reason. */
int jr__cert_verify(const jr__cert *c, const uint8_t *authority_pk, const char *cluster,
                    const char *name, const char **why);
/* 1 if s (n bytes) is a valid certificate name: 1..255 bytes of 0x21..0x7e. */
int jr__link_name_ok(const char *s, size_t n);

/* HELLO body: "JRL" | version | role | flags | max_frame u32 | ephemeral pk | cert_len u16 |
 * cert. AUTH body: signature | secretstream header. */
#define JR__LINK_VERSION 1
#define JR__HELLO_HEAD 44
#define JR__HELLO_MAX (JR__HELLO_HEAD + JR_LINK_CERT_MAX)
#define JR__AUTH_BODY (crypto_sign_BYTES + crypto_secretstream_xchacha20poly1305_HEADERBYTES)
/* Largest handshake record body: anything longer is refused before it is buffered. */
#define JR__LINK_HS_MAX 1024
#define JR__REC_HDR 4
#define JR__SS_ABYTES crypto_secretstream_xchacha20poly1305_ABYTES

struct jr_link {
    const jr_allocator *alloc;
    int role;
    int state;
    int err;
    int sent_final;
    const char *why; /* static text, "" unless FAILED */
    uint32_t max_frame;
    uint32_t peer_max_frame;
    char cluster[JR_LINK_NAME_MAX + 1];
    char self_name[JR_LINK_NAME_MAX + 1];
    char expect[JR_LINK_NAME_MAX + 1]; /* "" for any */
    char peer_name[JR_LINK_NAME_MAX + 1];
    int have_peer; /* the peer's HELLO checked out */
    uint8_t authority_pk[crypto_sign_PUBLICKEYBYTES];
    uint8_t id_sk[crypto_sign_SECRETKEYBYTES];
    uint8_t peer_id_pk[crypto_sign_PUBLICKEYBYTES];
    uint8_t eph_pk[crypto_kx_PUBLICKEYBYTES];
    uint8_t eph_sk[crypto_kx_SECRETKEYBYTES];
    uint8_t transcript[crypto_generichash_BYTES];
    uint8_t rx_key[crypto_secretstream_xchacha20poly1305_KEYBYTES];
    crypto_secretstream_xchacha20poly1305_state tx;
    crypto_secretstream_xchacha20poly1305_state rx;
    /* our HELLO record as sent (for the transcript) */
    uint8_t hello[JR__REC_HDR + JR__HELLO_MAX];
    size_t hello_len;
    /* handshake bytes to write: our HELLO and AUTH records */
    uint8_t out[2 * (JR__REC_HDR + JR__LINK_HS_MAX)];
    size_t out_off, out_len;
    /* the record being received */
    uint8_t hdr[JR__REC_HDR];
    size_t hdr_have;
    uint32_t rec_len;
    size_t body_have;
    uint8_t hs[JR__LINK_HS_MAX]; /* a handshake record's body */
    uint8_t *rx_buf;             /* OPEN: a DATA record's body (max_frame + 17) */
    size_t rx_cap;
};

/* Marks the link failed with err and a static reason; returns err. */
int jr__link_fail(jr_link *l, int err, const char *why);
/* Queues our HELLO (at creation). */
int jr__link_hello(jr_link *l, const void *cert, size_t cert_len);
/* Handles a complete handshake record body: the peer's HELLO, then its AUTH. */
int jr__link_handshake(jr_link *l, const uint8_t *body, size_t len);
/* Opens a DATA record body (l->hdr is its header) into rx_buf, in place if body is rx_buf;
 * sets *frame, *frame_len (NULL for FINAL). */
int jr__link_open_record(jr_link *l, const uint8_t *body, size_t len, const void **frame,
                         size_t *frame_len);

#endif
