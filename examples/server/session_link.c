/*
 * session_link.c — peer sessions (session.h): the library's secure link, or the plain session
 * when configured without keys.
 */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_plain.h"

struct session {
    jr_link *link;        /* secure; NULL for a plain session */
    plain_session *plain; /* plain; NULL for a secure session */
    char err[200];
};

session *session_new(const session_config *cfg)
{
    session *ss = calloc(1, sizeof *ss);
    if (!ss) return NULL;
    if (!cfg->authority) {
        ss->plain = plain_new(cfg);
        if (!ss->plain) {
            free(ss);
            return NULL;
        }
        return ss;
    }
    jr_link_config lc;
    jr_link_config_init(&lc);
    lc.role = cfg->expect_name ? JR_LINK_DIALER : JR_LINK_ACCEPTOR;
    lc.authority = cfg->authority;
    lc.identity = cfg->identity;
    lc.cert = cfg->cert;
    lc.cert_len = cfg->cert_len;
    lc.cluster = cfg->cluster;
    lc.expect_name = cfg->expect_name;
    lc.max_frame = cfg->max_frame;
    if (jr_link_new(&lc, &ss->link) != 0) {
        free(ss);
        return NULL;
    }
    return ss;
}

void session_free(session *ss)
{
    if (!ss) return;
    jr_link_free(ss->link);
    plain_free(ss->plain);
    free(ss);
}

/* Keeps the link's reason; a clean end of the peer's stream is an end too: the connection
 * carries nothing more. */
static int link_fail(session *ss)
{
    const char *m = jr_link_errmsg(ss->link);
    snprintf(ss->err, sizeof ss->err, "%s", m[0] ? m : "the peer ended its stream");
    return -1;
}

int session_feed(session *ss, const uint8_t *data, size_t n, session_frame_cb cb, void *arg)
{
    if (ss->plain) return plain_feed(ss->plain, data, n, cb, arg);
    if (ss->err[0]) return -1;
    while (n) {
        size_t used = 0, flen = 0;
        const void *f = NULL;
        if (jr_link_feed(ss->link, data, n, &used, &f, &flen) != 0) return link_fail(ss);
        data += used;
        n -= used;
        if (f) {
            int rc = cb(arg, f, flen);
            if (rc) return rc;
        }
        if (jr_link_state(ss->link) == JR_LINK_CLOSED) return link_fail(ss);
    }
    return 0;
}

const char *session_peer_name(const session *ss)
{
    if (ss->plain) return plain_peer_name(ss->plain);
    return jr_link_state(ss->link) == JR_LINK_OPEN ? jr_link_peer_name(ss->link) : NULL;
}

void session_pending_out(const session *ss, const void **data, size_t *len)
{
    if (ss->plain)
        plain_pending_out(ss->plain, data, len);
    else
        jr_link_pending_out(ss->link, data, len);
}

void session_out_done(session *ss, size_t n)
{
    if (ss->plain)
        plain_out_done(ss->plain, n);
    else
        jr_link_out_done(ss->link, n);
}

size_t session_sealed_size(const session *ss, size_t len)
{
    if (ss->plain) return plain_sealed_size(ss->plain, len);
    return len + JR_LINK_FRAME_OVERHEAD;
}

int session_seal(session *ss, const jr_iovec *iov, int iovcnt, uint8_t *out, size_t cap,
                 size_t *out_len)
{
    if (ss->plain) return plain_seal(ss->plain, iov, iovcnt, out, cap, out_len);
    return jr_link_seal(ss->link, iov, iovcnt, out, cap, out_len) == 0 ? 0 : -1;
}

const char *session_errmsg(const session *ss)
{
    if (ss->plain) return plain_errmsg(ss->plain);
    return ss->err;
}
