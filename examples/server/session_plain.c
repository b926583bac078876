/*
 * session_plain.c — the plain peer session (session_plain.h).
 */
#include "session_plain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

#define HELLO_MAGIC "jetraft-hello/1"
#define NAME_MAX_LEN 255

struct plain_session {
    session_config cfg;
    frame_rd rd;
    uint8_t hello[FRAME_HDR + 600]; /* our hello, while not all written */
    size_t hello_len, hello_off;
    char peer[NAME_MAX_LEN + 1];
    int open; /* the peer's hello checked out */
    char err[200];
    session_frame_cb cb; /* of the plain_feed under way */
    void *arg;
};

plain_session *plain_new(const session_config *cfg)
{
    plain_session *ss = calloc(1, sizeof *ss);
    if (!ss) return NULL;
    ss->cfg = *cfg;
    frame_rd_init(&ss->rd, cfg->max_frame);
    int n = snprintf((char *)ss->hello + FRAME_HDR, sizeof ss->hello - FRAME_HDR,
                     HELLO_MAGIC "\n%s\n%s\n", cfg->cluster, cfg->name);
    if (n < 0 || (size_t)n >= sizeof ss->hello - FRAME_HDR) {
        free(ss);
        return NULL;
    }
    frame_hdr(ss->hello, (uint32_t)n);
    ss->hello_len = FRAME_HDR + (size_t)n;
    return ss;
}

void plain_free(plain_session *ss)
{
    if (!ss) return;
    frame_rd_free(&ss->rd);
    free(ss);
}

static int fail(plain_session *ss, const char *what, size_t len, const char *text)
{
    snprintf(ss->err, sizeof ss->err, "%s \"%.*s\"", what, (int)(len > 64 ? 64 : len), text);
    return -1;
}

/* The peer's hello: magic, cluster and name, each ending in a newline. */
static int check_hello(plain_session *ss, const uint8_t *f, size_t len)
{
    size_t ml = strlen(HELLO_MAGIC);
    if (len < ml + 1 || memcmp(f, HELLO_MAGIC "\n", ml + 1))
        return fail(ss, "not a hello:", len, (const char *)f);
    const char *c = (const char *)f + ml + 1, *end = (const char *)f + len;
    const char *nl = memchr(c, '\n', (size_t)(end - c));
    if (!nl) return fail(ss, "malformed hello:", len, (const char *)f);
    const char *name = nl + 1;
    const char *nl2 = memchr(name, '\n', (size_t)(end - name));
    size_t cl = (size_t)(nl - c), nlen = nl2 ? (size_t)(nl2 - name) : 0;
    if (!nl2 || nl2 + 1 != end || nlen == 0 || nlen > NAME_MAX_LEN || memchr(name, 0, nlen))
        return fail(ss, "malformed hello:", len, (const char *)f);
    if (cl != strlen(ss->cfg.cluster) || memcmp(c, ss->cfg.cluster, cl))
        return fail(ss, "a server of another cluster:", cl, c);
    if (nlen == strlen(ss->cfg.name) && !memcmp(name, ss->cfg.name, nlen))
        return fail(ss, "a server with this server's name:", nlen, name);
    if (ss->cfg.expect_name &&
        (nlen != strlen(ss->cfg.expect_name) || memcmp(name, ss->cfg.expect_name, nlen)))
        return fail(ss, "not the server dialled:", nlen, name);
    memcpy(ss->peer, name, nlen);
    ss->peer[nlen] = 0;
    ss->open = 1;
    return 0;
}

static int on_frame(void *arg, const uint8_t *f, size_t len)
{
    plain_session *ss = arg;
    if (!ss->open) return check_hello(ss, f, len);
    return ss->cb(ss->arg, f, len);
}

int plain_feed(plain_session *ss, const uint8_t *data, size_t n, session_frame_cb cb, void *arg)
{
    if (ss->err[0]) return -1;
    ss->cb = cb;
    ss->arg = arg;
    int rc = frame_rd_feed(&ss->rd, data, n, on_frame, ss);
    if (rc == -1 && !ss->err[0]) snprintf(ss->err, sizeof ss->err, "bad frame length");
    return rc;
}

const char *plain_peer_name(const plain_session *ss)
{
    return ss->open ? ss->peer : NULL;
}

void plain_pending_out(const plain_session *ss, const void **data, size_t *len)
{
    *data = ss->hello + ss->hello_off;
    *len = ss->hello_len - ss->hello_off;
}

void plain_out_done(plain_session *ss, size_t n)
{
    ss->hello_off += n <= ss->hello_len - ss->hello_off ? n : ss->hello_len - ss->hello_off;
}

size_t plain_sealed_size(const plain_session *ss, size_t len)
{
    (void)ss;
    return FRAME_HDR + len;
}

int plain_seal(plain_session *ss, const jr_iovec *iov, int iovcnt, uint8_t *out, size_t cap,
               size_t *out_len)
{
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].len;
    if (!ss->open || len == 0 || len > ss->cfg.max_frame || cap < FRAME_HDR + len) return -1;
    frame_hdr(out, (uint32_t)len);
    size_t off = FRAME_HDR;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].len) memcpy(out + off, iov[i].base, iov[i].len);
        off += iov[i].len;
    }
    *out_len = off;
    return 0;
}

const char *plain_errmsg(const plain_session *ss)
{
    return ss->err;
}
