/*
 * session_plain.h — the plain peer session, used only with "insecure_cluster": a hello frame
 * from each side, sent at once, naming its cluster and server ("jetraft-hello/1\n<cluster>\n
 * <name>\n"), then length-prefixed frames (frame.h). It authenticates nothing: anyone who can
 * reach the cluster port can claim any name. The functions mirror session.h's, which calls
 * them for a session configured without keys.
 */
#ifndef SRV_SESSION_PLAIN_H
#define SRV_SESSION_PLAIN_H

#include "session.h"

typedef struct plain_session plain_session;

plain_session *plain_new(const session_config *cfg);
void plain_free(plain_session *ss);
int plain_feed(plain_session *ss, const uint8_t *data, size_t n, session_frame_cb cb, void *arg);
const char *plain_peer_name(const plain_session *ss);
void plain_pending_out(const plain_session *ss, const void **data, size_t *len);
void plain_out_done(plain_session *ss, size_t n);
size_t plain_sealed_size(const plain_session *ss, size_t len);
int plain_seal(plain_session *ss, const jr_iovec *iov, int iovcnt, uint8_t *out, size_t cap,
               size_t *out_len);
const char *plain_errmsg(const plain_session *ss);

#endif
