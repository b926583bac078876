/*
 * link — a jr_link's life: configuration, creation (checking this server's own certificate),
 * record reassembly from bytes in any split, the handshake output queue, state and failure.
 *
 * jr_link_feed() reads one record at a time: its 4-byte length first, which is checked against
 * the bound of the current state (JR__LINK_HS_MAX during the handshake, max_frame + 17 once
 * open) before a byte of the body is kept, then the body, straight from the caller's bytes when
 * they hold all of it, else gathered in the link's buffer. Failure is sticky and wipes the
 * link's secrets (invariants in link_int.h).
 */
#include <string.h>

#include "link/link_int.h"
#include "util/abi.h"
#include "util/alloc.h"
#include "util/buf.h"

static const jr_link_config defaults = {
    .size = sizeof(jr_link_config),
    .max_frame = JR_LINK_MAX_FRAME_DEFAULT,
};

void jr_link_config_init_size(jr_link_config *cfg, size_t size)
{
    jr__abi_init(cfg, size, &defaults, sizeof defaults);
}

static void wipe(jr_link *l)
{
    sodium_memzero(l->id_sk, sizeof l->id_sk);
    sodium_memzero(l->eph_sk, sizeof l->eph_sk);
    sodium_memzero(l->rx_key, sizeof l->rx_key);
    sodium_memzero(&l->tx, sizeof l->tx);
    sodium_memzero(&l->rx, sizeof l->rx);
}

int jr__link_fail(jr_link *l, int err, const char *why)
{
    if (!l->err) {
        l->err = err;
        l->why = why;
        l->state = JR_LINK_FAILED;
        wipe(l);
    }
    return l->err;
}

static int name_arg_ok(const char *s)
{
    return s && jr__link_name_ok(s, strlen(s));
}

int jr_link_new(const jr_link_config *cfg_in, jr_link **out)
{
    if (!out) return JR_EINVAL;
    *out = NULL;
    if (!cfg_in) return JR_EINVAL;
    jr_link_config cfg = defaults;
    if (jr__abi_read(&cfg, sizeof cfg, cfg_in)) return JR_EINVAL;
    if (cfg.role != JR_LINK_DIALER && cfg.role != JR_LINK_ACCEPTOR) return JR_EINVAL;
    if (!cfg.authority || cfg.authority->role != JR_LINK_AUTHORITY) return JR_EINVAL;
    if (!cfg.identity || cfg.identity->role != JR_LINK_IDENTITY || !cfg.identity->has_secret)
        return JR_EINVAL;
    if (!cfg.cert || !name_arg_ok(cfg.cluster)) return JR_EINVAL;
    if (cfg.role == JR_LINK_DIALER ? !name_arg_ok(cfg.expect_name)
                                   : cfg.expect_name && !name_arg_ok(cfg.expect_name))
        return JR_EINVAL;
    if (cfg.max_frame < JR_LINK_MAX_FRAME_MIN || cfg.max_frame > UINT32_MAX - JR__SS_ABYTES)
        return JR_EINVAL;
    if (sodium_init() < 0) return JR_EIO;

    /* a server without a certificate of this authority and cluster for its identity key
     * cannot start a handshake */
    jr__cert c;
    int rc = jr__cert_decode(cfg.cert, cfg.cert_len, &c);
    if (rc) return rc;
    const char *why;
    rc = jr__cert_verify(&c, cfg.authority->pk, cfg.cluster, NULL, &why);
    if (rc) return rc;
    if (memcmp(c.identity, cfg.identity->pk, sizeof cfg.identity->pk) != 0) return JR_EAUTH;

    jr_link *l = jr__calloc(cfg.alloc, 1, sizeof *l);
    if (!l) return JR_ENOMEM;
    l->alloc = cfg.alloc;
    l->role = cfg.role;
    l->state = JR_LINK_HANDSHAKE;
    l->why = "";
    l->max_frame = cfg.max_frame;
    strcpy(l->cluster, cfg.cluster);
    memcpy(l->self_name, c.name, c.name_len);
    if (cfg.expect_name) strcpy(l->expect, cfg.expect_name);
    memcpy(l->authority_pk, cfg.authority->pk, sizeof l->authority_pk);
    memcpy(l->id_sk, cfg.identity->sk, sizeof l->id_sk);
    rc = jr__link_hello(l, cfg.cert, cfg.cert_len);
    if (rc) {
        jr_link_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

void jr_link_free(jr_link *l)
{
    if (!l) return;
    const jr_allocator *a = l->alloc;
    if (l->rx_buf) {
        sodium_memzero(l->rx_buf, l->rx_cap);
        jr__free(a, l->rx_buf);
    }
    sodium_memzero(l, sizeof *l);
    jr__free(a, l);
}

/* The record length just read, against the bound of the state. */
static int check_len(jr_link *l)
{
    uint32_t n = l->rec_len;
    if (l->state == JR_LINK_HANDSHAKE) {
        if (n > JR__LINK_HS_MAX)
            return jr__link_fail(l, JR_EMSGSIZE, "handshake record over its bound");
        return 0;
    }
    if (n > (uint64_t)l->max_frame + JR__SS_ABYTES)
        return jr__link_fail(l, JR_EMSGSIZE, "record over the max frame");
    if (n < JR__SS_ABYTES) return jr__link_fail(l, JR_ECORRUPT, "record too short");
    return 0;
}

static int record_done(jr_link *l, const uint8_t *body, const void **frame, size_t *frame_len)
{
    int rc = l->state == JR_LINK_HANDSHAKE
                 ? jr__link_handshake(l, body, l->rec_len)
                 : jr__link_open_record(l, body, l->rec_len, frame, frame_len);
    l->hdr_have = 0;
    l->body_have = 0;
    return rc;
}

int jr_link_feed(jr_link *l, const void *in, size_t len, size_t *consumed, const void **frame,
                 size_t *frame_len)
{
    if (!l || (!in && len) || !consumed || !frame || !frame_len) return JR_EINVAL;
    *consumed = 0;
    *frame = NULL;
    *frame_len = 0;
    if (l->err) return l->err;
    if (l->state == JR_LINK_CLOSED)
        return len ? jr__link_fail(l, JR_ECORRUPT, "bytes after the peer's final record") : 0;
    const uint8_t *p = in;
    size_t used = 0;
    if (l->hdr_have < JR__REC_HDR) {
        size_t n = JR__REC_HDR - l->hdr_have;
        if (n > len) n = len;
        memcpy(l->hdr + l->hdr_have, p, n);
        l->hdr_have += n;
        used += n;
        *consumed = used;
        if (l->hdr_have < JR__REC_HDR) return 0;
        l->rec_len = jr__get_u32(l->hdr);
        l->body_have = 0;
        int rc = check_len(l);
        if (rc) return rc;
    }
    size_t left = len - used;
    if (l->state == JR_LINK_OPEN && l->body_have == 0 && left >= l->rec_len) {
        /* the whole body is in the caller's bytes: open it from there */
        *consumed = used + l->rec_len;
        return record_done(l, p + used, frame, frame_len);
    }
    uint8_t *buf = l->state == JR_LINK_HANDSHAKE ? l->hs : l->rx_buf;
    size_t n = l->rec_len - l->body_have;
    if (n > left) n = left;
    if (n) memcpy(buf + l->body_have, p + used, n);
    l->body_have += n;
    *consumed = used + n;
    if (l->body_have < l->rec_len) return 0;
    return record_done(l, buf, frame, frame_len);
}

void jr_link_pending_out(const jr_link *l, const void **data, size_t *len)
{
    if (!data || !len) return;
    *data = NULL;
    *len = 0;
    if (!l || l->err) return;
    *data = l->out + l->out_off;
    *len = l->out_len - l->out_off;
}

int jr_link_out_done(jr_link *l, size_t n)
{
    if (!l) return JR_EINVAL;
    if (n > l->out_len - l->out_off) return JR_EINVAL;
    l->out_off += n;
    /* the queue only ever holds our two handshake records, so the space is not reused */
    return 0;
}

int jr_link_state(const jr_link *l)
{
    return l ? l->state : JR_LINK_FAILED;
}

const char *jr_link_peer_name(const jr_link *l)
{
    /* a certificate is public: the name is the peer's only once its AUTH proved the key */
    return l && (l->state == JR_LINK_OPEN || l->state == JR_LINK_CLOSED) ? l->peer_name : NULL;
}

const char *jr_link_errmsg(const jr_link *l)
{
    return l ? l->why : "";
}
