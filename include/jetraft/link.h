/*
 * jetraft/link.h — secure peer links: cluster keys and certificates, and a handshake plus frame
 * sealing over any byte stream, so that every host gets authenticated, encrypted, replay-proof
 * peer links without writing crypto.
 *
 * A link is a state machine the host drives with bytes: it never touches a socket, a file or
 * a clock, and it allocates only in jr_link_new() and once when its handshake completes (through
 * the caller's jr_allocator). One link is both directions of one connection: the host makes
 * one per TCP connection (or pipe, or anything that carries bytes in order), feeds it what it
 * reads, writes what it produces, and hands the frames it opens to jr_node_recv() with
 * jr_link_peer_name() as `from`.
 *
 * A host's loop, per connection:
 *   connect or accept:  jr_link_new(); write what jr_link_pending_out() gives, jr_link_out_done()
 *   bytes read (p, n):  while (n) { rc = jr_link_feed(l, p, n, &used, &f, &flen);
 *                         if (rc) close the connection (and dial again later);
 *                         p += used; n -= used;
 *                         if (f) jr_node_recv(node, jr_link_peer_name(l), f, flen);
 *                         write any pending output }
 *   jr_host.send(to):   if the link to `to` is JR_LINK_OPEN, jr_link_seal() into a buffer of
 *                       frame + JR_LINK_FRAME_OVERHEAD bytes and write it; else drop the frame
 *                       (return non-zero: Raft resends)
 *   shutdown / EOF:     jr_link_seal_final() and write it; on EOF, jr_link_eof() tells a clean
 *                       end from a cut one
 *
 * Keys
 *  - The cluster authority is an Ed25519 key pair (libsodium crypto_sign). Its public key is in
 *    every server's configuration; its secret key signs certificates and should stay offline.
 *  - Each server has an Ed25519 identity key pair, and a certificate: the authority's signature
 *    over the identity public key, the server name and the cluster name.
 *  - jr_link_key holds one key (authority or identity; a pair, or a public key alone). Its
 *    secret bytes are zeroed when it is freed. Keys and certificates encode to bytes
 *    (jr_link_key_encode, jr_link_cert_sign) and to a text form for config files
 *    (jr_link_text_encode: base64).
 *
 * Byte formats (integers little-endian)
 *  - Key, JR_LINK_KEY_BYTES (46): "JRK" | version 1 | role (1 authority, 2 identity) |
 *    form (1 secret: the 32-byte Ed25519 seed; 2 public: the 32-byte public key) | 32 key bytes
 *    | xxh3-64 of the 38 bytes before it.
 *  - Certificate, 38 + name + cluster + 64 bytes (at most JR_LINK_CERT_MAX): "JRC" | version 1 |
 *    name length (1..255) | cluster length (1..255) | identity public key (32) | name | cluster |
 *    Ed25519 signature by the authority of "jetraft-link-cert-v1" followed by every byte before
 *    the signature. Names are printable ASCII without spaces (0x21..0x7e). Decoding is strict:
 *    the length must be exactly what the header says.
 *
 * The stream: a sequence of records, each a u32 length and that many bytes (the body).
 *  1. HELLO (both sides send it at once, without waiting): "JRL" | version 1 | role (1 dialer,
 *     2 acceptor) | flags 0 | max_frame u32 (the largest frame the sender accepts) |
 *     ephemeral crypto_kx public key (32) | certificate length u16 | certificate.
 *  2. AUTH (each side, once it has the peer's HELLO): Ed25519 signature by the sender's identity
 *     key of "jetraft-link-auth-v1" | the sender's role | T (64), then the sender's
 *     crypto_secretstream_xchacha20poly1305 header (24). T is BLAKE2b-256 (crypto_generichash)
 *     of "jetraft-link-v1" | the dialer's HELLO record | the acceptor's HELLO record (each with
 *     its length), so it covers both ephemeral keys, both certificates and both roles.
 *  3. DATA (once both AUTHs checked): the body is one secretstream message (tag MESSAGE for a
 *     frame, FINAL for the end of the stream: JR_LINK_FRAME_OVERHEAD - 4 = 17 bytes more than
 *     the frame) whose additional data is the record's 4 length bytes.
 *  Checks: the peer's certificate verifies under the authority public key, names this cluster,
 *  is not this server's own name, and (dialer; acceptor if configured) names the expected
 *  server; its AUTH signature verifies under the certificate's identity key; its role is the
 *  other one. Session keys: crypto_kx_client_session_keys (the dialer) or _server_ (the
 *  acceptor) over the ephemeral keys, each then keyed BLAKE2b-256 over T. Each direction has
 *  its own secretstream, so a replayed, reordered, dropped, truncated or altered record fails
 *  authentication (JR_EAUTH) and the link is dead from then on.
 *
 * Threat model
 *  Protected, against anyone on the path (read, write, replay, inject) without a signed
 *  identity secret key of the cluster: the content of frames (confidentiality), their integrity
 *  and order within a connection, the peer's identity (cluster membership through the authority
 *  and its server name through the certificate, proven by a signature over this connection's
 *  fresh transcript, so a certificate replayed without its secret key or a recorded handshake
 *  replayed to another connection fails), reflection of a connection onto itself, and past
 *  traffic after a later theft of an identity key (the session keys come from ephemeral keys,
 *  erased once used).
 *  Not protected: traffic analysis (record lengths and timing are visible, and so are the
 *  certificates in the HELLOs: server and cluster names and identity keys); denial of service
 *  (anyone can connect, send garbage or cut the connection; the link only bounds what that
 *  costs: before authentication a few KiB, after it one buffer of max_frame; a link has no
 *  clock, so the host times out a handshake that does not complete); revocation and
 *  expiry (a certificate is valid for as long as its authority key is trusted: rotate the
 *  authority to revoke); a compromised authority key or a member's identity key (its holder is
 *  that member); what a member sends once authenticated (jr_node_recv() checks frames, the link
 *  only says who sent them); an end of the stream at a record boundary without a FINAL record,
 *  which only jr_link_eof() tells apart from a clean close.
 *
 * Errors: functions return 0 or a negative JR_E* code. JR_EAUTH: a signature that does not
 * verify, a certificate of another authority, cluster or name, a role that is not the other
 * one, a record that fails authentication; JR_ECORRUPT: malformed bytes; JR_EMSGSIZE: a length
 * over its bound (checked before anything is allocated or buffered); JR_EVERSION: an unknown
 * version of a key, a certificate or the protocol; JR_EMISUSE: a call in the wrong state;
 * JR_EINVAL: a bad argument; JR_ENOMEM. An error of jr_link_feed() (and of jr_link_new()'s
 * handshake checks) is sticky: every later call on the link returns it, and the host closes
 * the connection. jr_link_errmsg() says what failed.
 *
 * A link is used by one thread at a time; distinct links are independent.
 * Part of the public ABI; users include <jetraft.h>, which includes every part.
 */
#ifndef JETRAFT_LINK_H
#define JETRAFT_LINK_H

#include "jetraft/plugins.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------------------------------
 * Keys and certificates
 */
typedef struct jr_link_key jr_link_key;

enum jr_link_key_role { JR_LINK_AUTHORITY = 1, JR_LINK_IDENTITY = 2 };

#define JR_LINK_KEY_BYTES 46  /* an encoded key, secret or public */
#define JR_LINK_NAME_MAX 255  /* longest server or cluster name in a certificate */
#define JR_LINK_CERT_MAX 612  /* longest certificate: 38 + 255 + 255 + 64 */
#define JR_LINK_TEXT_MAX 1024 /* room for the text form of any key or certificate, NUL incl. */

/* Generates a fresh key pair of `role` (enum jr_link_key_role) with libsodium's randomness.
 * *out must be freed with jr_link_key_free(). JR_EINVAL (unknown role), JR_ENOMEM, JR_EIO (the
 * crypto library failed to initialise). */
JR_API int jr_link_key_generate(int role, const jr_allocator *alloc, jr_link_key **out);

/* Encodes key into buf (JR_LINK_KEY_BYTES): its secret form if `secret` (the key must hold one,
 * else JR_EINVAL), else its public form. *len gets JR_LINK_KEY_BYTES. JR_EINVAL if cap is less. */
JR_API int jr_link_key_encode(const jr_link_key *key, int secret, void *buf, size_t cap,
                              size_t *len);

/* Decodes a key of either form (exactly JR_LINK_KEY_BYTES, else JR_ECORRUPT). JR_ECORRUPT (bad
 * magic, checksum, role or form), JR_EVERSION, JR_ENOMEM. *out must be freed with
 * jr_link_key_free(); a decoded secret key holds its public key too. */
JR_API int jr_link_key_decode(const void *buf, size_t len, const jr_allocator *alloc,
                              jr_link_key **out);

/* The key's role (enum jr_link_key_role). */
JR_API int jr_link_key_role(const jr_link_key *key);
/* 1 if the key holds its secret part, else 0. */
JR_API int jr_link_key_has_secret(const jr_link_key *key);
/* Copies the 32-byte Ed25519 public key. */
JR_API void jr_link_key_public(const jr_link_key *key, unsigned char out[32]);

/* Zeroes the key's secret bytes and frees it. Safe on NULL. */
JR_API void jr_link_key_free(jr_link_key *key);

/* Signs a certificate binding identity's public key to `name` in `cluster` with the
 * authority's secret key (the "--sign" of a key tool; identity may be a public key alone).
 * Writes it to buf and its length to *len. JR_EINVAL: authority is not an authority key with
 * its secret, identity is not an identity key, a name is empty, longer than JR_LINK_NAME_MAX or
 * not printable ASCII without spaces, or cap is too small (JR_LINK_CERT_MAX always suffices). */
JR_API int jr_link_cert_sign(const jr_link_key *authority, const jr_link_key *identity,
                             const char *cluster, const char *name, void *buf, size_t cap,
                             size_t *len);

/* Checks a certificate: well formed (JR_ECORRUPT, JR_EVERSION), signed by `authority` (its
 * public key is enough), for `cluster`, and, if name is not NULL, for `name` (JR_EAUTH
 * otherwise). */
JR_API int jr_link_cert_check(const void *cert, size_t len, const jr_link_key *authority,
                              const char *cluster, const char *name);

/* Copies a well-formed certificate's server name (NUL-terminated) to name; its signature is not
 * checked. JR_ECORRUPT, JR_EVERSION; JR_EINVAL if cap cannot hold it. */
JR_API int jr_link_cert_name(const void *cert, size_t len, char *name, size_t cap);

/* Text form of any key or certificate: standard base64 with padding, NUL-terminated.
 * jr_link_text_encode writes strlen to *text_len (JR_EINVAL if cap cannot hold it and the NUL);
 * jr_link_text_decode skips spaces, tabs and line ends, and fails with JR_ECORRUPT on anything
 * else that is not base64, JR_EMSGSIZE if the bytes do not fit cap. */
JR_API int jr_link_text_encode(const void *bin, size_t len, char *text, size_t cap,
                               size_t *text_len);
JR_API int jr_link_text_decode(const char *text, size_t text_len, void *bin, size_t cap,
                               size_t *len);

/* ----------------------------------------------------------------------------------------------
 * Links
 */
typedef struct jr_link jr_link;

enum jr_link_role { JR_LINK_DIALER = 1, JR_LINK_ACCEPTOR = 2 };

enum jr_link_state {
    JR_LINK_HANDSHAKE = 0, /* HELLO and AUTH under way: nothing can be sealed yet */
    JR_LINK_OPEN = 1,      /* the peer is authenticated: frames flow both ways */
    JR_LINK_CLOSED = 2,    /* the peer ended its stream cleanly (a FINAL record) */
    JR_LINK_FAILED = 3     /* an error ended the link (jr_link_errmsg() says which) */
};

/* What a record adds to a frame on the wire: a 4-byte length and secretstream's 17 bytes. */
#define JR_LINK_FRAME_OVERHEAD 21
#define JR_LINK_MAX_FRAME_DEFAULT (8u << 20)
#define JR_LINK_MAX_FRAME_MIN 64u

typedef struct jr_link_config {
    size_t size;                  /* sizeof(jr_link_config) */
    int role;                     /* enum jr_link_role: the side that connected dials */
    const jr_link_key *authority; /* the cluster authority's (public) key; required */
    const jr_link_key *identity;  /* this server's identity key pair; required */
    const void *cert;             /* this server's certificate; required */
    size_t cert_len;
    const char *cluster;       /* the cluster's name, as in the certificates; required */
    const char *expect_name;   /* the server expected at the other end: required to dial, and
                                  optional to accept (NULL: any server of the cluster) */
    uint32_t max_frame;        /* largest frame accepted from the peer (and announced to it):
                                  default JR_LINK_MAX_FRAME_DEFAULT, at least
                                  JR_LINK_MAX_FRAME_MIN; give jr_node_config.max_frame_bytes */
    const jr_allocator *alloc; /* NULL: malloc family */
} jr_link_config;

/* Fills cfg with defaults (and cfg->size); writes only the first `size` bytes. */
JR_API void jr_link_config_init_size(jr_link_config *cfg, size_t size);
#define jr_link_config_init(cfg) jr_link_config_init_size((cfg), sizeof *(cfg))

/* Makes a link and queues its HELLO (jr_link_pending_out). Checks that the certificate is
 * well formed, signed by the authority, for this cluster and for the identity key (JR_EAUTH
 * otherwise: a server without a signed identity cannot start a handshake). On failure *out is
 * NULL. JR_EINVAL (missing field, unknown role, a dialer without expect_name, max_frame too
 * small, keys of the wrong role or without the identity's secret), JR_ECORRUPT, JR_EVERSION,
 * JR_EAUTH, JR_ENOMEM, JR_EIO (the crypto library failed to initialise). Allocates the link
 * (a few KiB); its receive buffer (max_frame + JR_LINK_FRAME_OVERHEAD) comes when the handshake
 * completes, so an unauthenticated peer cannot make it allocate more. */
JR_API int jr_link_new(const jr_link_config *cfg, jr_link **out);

/* Feeds bytes read from the connection, in any split. Consumes bytes up to the end of at most
 * one record (*consumed; the host calls again with the rest). If that record was a frame,
 * *frame and *frame_len give it (else *frame is NULL), borrowed until the next jr_link_feed()
 * or jr_link_free(): sealing on the same link meanwhile (jr_host.send from inside
 * jr_node_recv()) leaves it intact. Handshake records may queue output (jr_link_pending_out)
 * and complete the handshake (jr_link_state). A record's length is checked against its bound
 * before its bytes are kept. Errors are sticky (see the top): JR_EAUTH, JR_ECORRUPT,
 * JR_EMSGSIZE, JR_EVERSION, JR_ENOMEM (the receive buffer), and JR_ECORRUPT for bytes after
 * the peer's FINAL record. */
JR_API int jr_link_feed(jr_link *link, const void *in, size_t len, size_t *consumed,
                        const void **frame, size_t *frame_len);

/* The handshake bytes waiting to be written (borrowed until the next call on the link; *len 0
 * if none, and once the link failed). The host writes them, then says how many with
 * jr_link_out_done(). Frames never go through here: jr_link_seal() writes into the caller's
 * buffer. */
JR_API void jr_link_pending_out(const jr_link *link, const void **data, size_t *len);
/* Drops the first n pending bytes (JR_EINVAL if n is more than are pending). */
JR_API int jr_link_out_done(jr_link *link, size_t n);

/* Seals one frame (the concatenation of iov, as jr_host.send gives it) into out as one record:
 * frame length + JR_LINK_FRAME_OVERHEAD bytes (*out_len). No allocation. JR_EMISUSE unless the
 * link is open; JR_EMSGSIZE if the frame is over the peer's max_frame; JR_EINVAL if cap is too
 * small (nothing is consumed then: the call can be repeated with more room). */
JR_API int jr_link_seal(jr_link *link, const jr_iovec *iov, int iovcnt, void *out, size_t cap,
                        size_t *out_len);

/* Seals the end of this side's stream (a FINAL record of JR_LINK_FRAME_OVERHEAD bytes); after
 * it jr_link_seal() fails with JR_EMISUSE. The peer's link goes to JR_LINK_CLOSED. */
JR_API int jr_link_seal_final(jr_link *link, void *out, size_t cap, size_t *out_len);

/* Tells the link the connection's input ended. 0 if the peer ended its stream with a FINAL
 * record; else JR_ECORRUPT (the stream was cut: mid-record, or with no FINAL), and the link
 * fails. */
JR_API int jr_link_eof(jr_link *link);

/* The link's state (enum jr_link_state). */
JR_API int jr_link_state(const jr_link *link);
/* The peer's server name from its certificate once the peer proved it holds the certificate's
 * identity key (the link is OPEN or CLOSED), else NULL. Borrowed, valid until jr_link_free().
 * This is the `from` to give jr_node_recv() with the frames the link opens. */
JR_API const char *jr_link_peer_name(const jr_link *link);
/* What ended the link, or "" (never NULL). */
JR_API const char *jr_link_errmsg(const jr_link *link);

/* Zeroes the link's keys and frees it. Safe on NULL. */
JR_API void jr_link_free(jr_link *link);

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_LINK_H */
