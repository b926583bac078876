/*
 * session.h — what a peer connection's bytes mean: a handshake naming the peer, then frames.
 *
 * A session is a state machine over one connection's byte stream, driven by the link code
 * (peer.c): the link feeds it what it reads, writes what it asks to (the handshake), seals each
 * frame into bytes to write, and learns the peer's name once the handshake is done. It never
 * touches a socket. With keys (the default) a session is the library's secure link (jr_link,
 * include/jetraft/link.h): the handshake proves both servers' certificates and every frame is
 * one sealed record, so the connection's bytes are exactly a jr_link stream. Without keys
 * (only with "insecure_cluster") it is the plain session of session_plain.h. The peer's name is
 * known only once its handshake checked out (for a secure session: once the peer proved its
 * certificate's identity key).
 */
#ifndef SRV_SESSION_H
#define SRV_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

typedef struct session session;

typedef struct session_config {
    const char *cluster;     /* this cluster's name: a peer of another one is refused */
    const char *name;        /* this server's name */
    const char *expect_name; /* the server expected at the other end; NULL: any */
    uint32_t max_frame;      /* largest frame accepted */
    /* Secure sessions: all set, or authority NULL for a plain session. expect_name set means
     * this side dialled (jr_link's dialer), NULL that it accepted. */
    const jr_link_key *authority;
    const jr_link_key *identity;
    const void *cert;
    size_t cert_len;
} session_config;

/* Called per frame received after the handshake; borrowed for the call. Non-zero stops the
 * feed and is returned by session_feed. */
typedef int (*session_frame_cb)(void *arg, const uint8_t *frame, size_t len);

/* Makes a session and queues its handshake (session_pending_out). NULL when out of memory or
 * the keys do not make a link (checked when the configuration is loaded). */
session *session_new(const session_config *cfg);
void session_free(session *ss);
/* Feeds bytes read, in any split. Returns 0, or -1 (malformed handshake, a peer of another
 * cluster or authority, not the expected server or this server itself, a bad frame length, a
 * record that fails authentication, the peer's end of stream; session_errmsg says which), or
 * the callback's return. Errors are sticky. */
int session_feed(session *ss, const uint8_t *data, size_t n, session_frame_cb cb, void *arg);
/* The peer's name once its handshake checked out, else NULL. */
const char *session_peer_name(const session *ss);
/* Handshake bytes to write (borrowed until the next call), and how many were taken. */
void session_pending_out(const session *ss, const void **data, size_t *len);
void session_out_done(session *ss, size_t n);
/* Bytes a sealed frame of len bytes takes on the wire. */
size_t session_sealed_size(const session *ss, size_t len);
/* Seals a frame (the concatenation of iov) into out (session_sealed_size bytes). -1 if the
 * handshake is not done or the frame is larger than max_frame. */
int session_seal(session *ss, const jr_iovec *iov, int iovcnt, uint8_t *out, size_t cap,
                 size_t *out_len);
/* Why the session failed, or "". */
const char *session_errmsg(const session *ss);

#endif
