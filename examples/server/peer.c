/*
 * peer.c — cluster links over libuv TCP (see peer.h). What the bytes of a connection mean (the
 * handshake, the framing) is the session's business (session.h); this file owns the
 * connections: who dials, accepting, the hello timeout, the bounded send queue, replacement of
 * an older connection, and redialling with backoff.
 */
#include "peer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "route.h"
#include "route_wire.h"
#include "session.h"

#define HELLO_TIMEOUT_MS 5000
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
#define MAX_PENDING_ACCEPTS 64
/* The buffer a write is sealed into stays allocated up to this size (one loop thread: one
 * buffer serves every link). */
#define SCRATCH_KEEP (1u << 20)

typedef struct peer peer;

typedef struct plink {
    uv_tcp_t tcp;
    uv_timer_t hello_timer;
    server *s;
    session *ss;
    peer *p;         /* dialer: the peer dialled; acceptor: set once its handshake names it */
    int established; /* the peer's handshake checked out and the link is its peer's link */
    int closing;
    int handles;    /* handles still open (tcp, timer) */
    size_t queued;  /* bytes in uv_write requests not completed */
    uint8_t *batch; /* route messages not sent yet: (len u32 | frame)*, unsealed */
    size_t batch_len, batch_cap;
    size_t batch_wire;  /* the bytes they take sealed */
    int route_dropping; /* routed messages are being dropped (logged once until it drains) */
    struct plink *next; /* in the list of accepted links not yet established */
    char addr[64];      /* the other end's address, for the log */
} plink;

struct peer {
    server *s;
    const char *name;
    const char *host;
    int port;
    int dialer;  /* this server dials the peer */
    plink *link; /* the established link, or NULL */
    plink *dialing;
    uv_timer_t retry;
    uv_getaddrinfo_t gai;
    int resolving;
    unsigned backoff_ms;
    uint64_t frames_sent, frames_dropped, bytes_sent;
};

struct peers {
    server *s;
    uv_tcp_t listener;
    peer *v;
    size_t n;
    plink *pending; /* accepted, handshake not done */
    size_t npending;
    int stopping;
};

typedef struct wreq {
    uv_write_t req;
    plink *l;
    size_t len;
    uint8_t data[];
} wreq;

static void link_close(plink *l);
static void schedule_retry(peer *p);

static peer *find_peer(peers *ps, const char *name)
{
    for (size_t i = 0; i < ps->n; i++)
        if (!strcmp(ps->v[i].name, name)) return &ps->v[i];
    return NULL;
}

static void srv_log(server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void srv_log(server *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%s] ", s->cfg.name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void on_write(uv_write_t *req, int status)
{
    wreq *w = (wreq *)req;
    w->l->queued -= w->len;
    free(w);
    (void)status; /* a failed write surfaces as a read error and closes the link */
}

static uint8_t *scratch;
static size_t scratch_cap;

/* Writes len bytes that fill() puts into the buffer; refused when the send queue (with the
 * route messages batched for it) would pass limit bytes. The bytes are filled into a scratch
 * buffer and written at once as far as the socket takes them (uv_try_write writes nothing
 * while earlier writes are queued, so the order holds); only the rest is copied into a
 * uv_write request. (A uv_write, even one that completes at once, costs an epoll_ctl
 * afterwards, when libuv stops watching the socket for writability: a syscall per write.) */
static int link_write(plink *l, size_t len, uint64_t limit,
                      int (*fill)(plink *, const void *, uint8_t *, size_t), const void *what)
{
    if (l->queued + l->batch_wire + len > limit) return -1;
    uint8_t *buf = scratch;
    if (len > scratch_cap) {
        buf = len <= SCRATCH_KEEP ? realloc(scratch, len) : malloc(len);
        if (!buf) return -1;
        if (len <= SCRATCH_KEEP) {
            scratch = buf;
            scratch_cap = len;
        }
    }
    int rc = -1;
    if (fill(l, what, buf, len)) goto out;
    uv_buf_t b = uv_buf_init((char *)buf, (unsigned)len);
    int n = uv_try_write((uv_stream_t *)&l->tcp, &b, 1);
    if (n < 0 && n != UV_EAGAIN) goto out; /* broken: the read side closes the link */
    size_t done = n > 0 ? (size_t)n : 0;
    rc = 0;
    if (done == len) goto out;
    wreq *w = malloc(sizeof *w + (len - done));
    if (!w) {
        rc = -1; /* part of a frame went out: the stream is cut, the link must go */
        if (done) link_close(l);
        goto out;
    }
    w->l = l;
    w->len = len - done;
    memcpy(w->data, buf + done, w->len);
    b = uv_buf_init((char *)w->data, (unsigned)w->len);
    if (uv_write(&w->req, (uv_stream_t *)&l->tcp, &b, 1, on_write) != 0) {
        free(w);
        rc = -1;
        if (done) link_close(l);
        goto out;
    }
    l->queued += w->len;
out:
    if (buf != scratch) free(buf);
    return rc;
}

typedef struct frame_ref {
    const jr_iovec *iov;
    int iovcnt;
} frame_ref;

static int fill_frame(plink *l, const void *what, uint8_t *out, size_t cap)
{
    const frame_ref *f = what;
    size_t n;
    return session_seal(l->ss, f->iov, f->iovcnt, out, cap, &n);
}

static int fill_pending(plink *l, const void *what, uint8_t *out, size_t cap)
{
    memcpy(out, what, cap);
    session_out_done(l->ss, cap);
    return 0;
}

/* Writes what the session asks to (its handshake). */
static int flush_session(plink *l)
{
    const void *data;
    size_t len;
    session_pending_out(l->ss, &data, &len);
    return len ? link_write(l, len, l->s->cfg.peer_queue_bytes, fill_pending, data) : 0;
}

int peers_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt)
{
    server *s = ctx;
    peers *ps = s->peers;
    peer *p = ps ? find_peer(ps, to) : NULL;
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].len;
    frame_ref f = {iov, iovcnt};
    if (!p || !p->link || len > s->cfg.max_frame_bytes ||
        link_write(p->link, session_sealed_size(p->link->ss, len), s->cfg.peer_queue_bytes,
                   fill_frame, &f)) {
        if (p) p->frames_dropped++;
        s->stats.peer_frames_dropped++;
        return -1;
    }
    p->frames_sent++;
    p->bytes_sent += len;
    return 0;
}

/* Seals the batched route messages, in order, into one write. */
static int fill_batch(plink *l, const void *what, uint8_t *out, size_t cap)
{
    (void)what;
    size_t off = 0, at = 0;
    while (off < l->batch_len) {
        uint32_t len;
        memcpy(&len, l->batch + off, 4);
        jr_iovec iov = {l->batch + off + 4, len};
        size_t n;
        if (session_seal(l->ss, &iov, 1, out + at, cap - at, &n)) return -1;
        at += n;
        off += 4 + (size_t)len;
    }
    return 0;
}

void peers_route_flush(server *s)
{
    peers *ps = s->peers;
    for (size_t i = 0; ps && i < ps->n; i++) {
        plink *l = ps->v[i].link;
        if (!l || !l->batch_len) continue;
        size_t wire = l->batch_wire;
        l->batch_wire = 0; /* admitted already: counted once, as queued, from here */
        if (link_write(l, wire, UINT64_MAX, fill_batch, NULL)) {
            ps->v[i].frames_dropped++;
            s->stats.route_msgs_dropped++;
        }
        l->batch_len = 0;
        /* Keep a buffer of at most 64 KiB between turns, not the largest burst ever seen. */
        if (l->batch_cap > (64u << 10)) {
            free(l->batch);
            l->batch = NULL;
            l->batch_cap = 0;
        }
    }
}

/* Appends a route message to the link's batch (written by peers_route_flush). */
static int batch_add(plink *l, const jr_iovec *iov, int iovcnt, size_t len, uint64_t limit)
{
    size_t wire = session_sealed_size(l->ss, len);
    if (l->queued + l->batch_wire + wire > limit) return -1;
    if (l->batch_len + 4 + len > l->batch_cap) {
        size_t nc = l->batch_cap ? l->batch_cap : 16384;
        while (nc < l->batch_len + 4 + len) nc *= 2;
        uint8_t *nb = realloc(l->batch, nc);
        if (!nb) return -1;
        l->batch = nb;
        l->batch_cap = nc;
    }
    uint32_t l32 = (uint32_t)len;
    memcpy(l->batch + l->batch_len, &l32, 4);
    size_t off = l->batch_len + 4;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].len) memcpy(l->batch + off, iov[i].base, iov[i].len);
        off += iov[i].len;
    }
    l->batch_len = off;
    l->batch_wire += wire;
    return 0;
}

int peers_route_send(server *s, size_t idx, const jr_iovec *iov, int iovcnt, int announce)
{
    peers *ps = s->peers;
    peer *p = ps && idx < ps->n ? &ps->v[idx] : NULL;
    if (!p || !p->link) return -1;
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].len;
    uint64_t bound = s->cfg.peer_queue_bytes;
    frame_ref f = {iov, iovcnt};
    if (len > s->cfg.max_frame_bytes) return -1;
    if (!announce) {
        plink *l = p->link;
        if (batch_add(l, iov, iovcnt, len, bound / 2) == 0) {
            /* drained below a quarter: a later episode of drops is logged again */
            if (l->route_dropping && l->queued + l->batch_wire < bound / 4) l->route_dropping = 0;
            return 0;
        }
        if (!l->route_dropping)
            srv_log(s,
                    "link to %s: dropping routed messages (its send queue is past half its "
                    "bound)",
                    p->name);
        l->route_dropping = 1;
        return -1;
    }
    if (link_write(p->link, session_sealed_size(p->link->ss, len), bound + bound / 4, fill_frame,
                   &f) == 0)
        return 0;
    /* Interest must not be lost: the link closes, and comes back with the whole of it. */
    srv_log(s, "link to %s: an interest announcement did not fit its send queue", p->name);
    link_close(p->link);
    return -1;
}

int peers_link_up(const server *s, const char *name)
{
    peer *p = s->peers ? find_peer(s->peers, name) : NULL;
    return p && p->link != NULL;
}

int peers_connected(const server *s)
{
    int n = 0;
    for (size_t i = 0; s->peers && i < s->peers->n; i++) n += s->peers->v[i].link != NULL;
    return n;
}

static void unlink_pending(peers *ps, plink *l)
{
    for (plink **pp = &ps->pending; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            ps->npending--;
            return;
        }
}

static void on_link_closed(uv_handle_t *h)
{
    plink *l = h->data;
    if (--l->handles > 0) return;
    free(l->batch);
    session_free(l->ss);
    free(l);
}

/* Closes a link; a dialer's peer then redials after its backoff. */
static void link_close(plink *l)
{
    if (l->closing) return;
    l->closing = 1;
    peers *ps = l->s->peers;
    unlink_pending(ps, l);
    peer *p = l->p;
    if (p && p->link == l) {
        p->link = NULL;
        srv_log(l->s, "link to %s closed", p->name);
        route_link_down(l->s, (size_t)(p - ps->v));
    }
    if (p && p->dialing == l) p->dialing = NULL;
    uv_close((uv_handle_t *)&l->tcp, on_link_closed);
    uv_close((uv_handle_t *)&l->hello_timer, on_link_closed);
    if (p && p->dialer && !p->link && !p->dialing && !ps->stopping) schedule_retry(p);
}

/* The session named its peer: make this connection the peer's link. A server accepts only from
 * the peers that dial it (names sorting before its own); a newer connection replaces an older
 * one (the peer restarted, or redialled before this side saw the old connection break). */
static int establish(plink *l)
{
    server *s = l->s;
    const char *name = session_peer_name(l->ss);
    peer *p = find_peer(s->peers, name);
    if (!p) {
        srv_log(s, "refused a link from unknown server \"%s\"", name);
        return -1;
    }
    if (!l->p && p->dialer) {
        srv_log(s, "refused a link from %s: this server dials it", name);
        return -1;
    }
    if (!l->p) {
        unlink_pending(s->peers, l);
        l->p = p;
    }
    /* The read that opened the session may also have queued this side's last handshake record
     * (its AUTH, answering the peer's HELLO read with the peer's AUTH). It goes out before
     * anything sealed: the announcements below and any Raft frame are written at once, and the
     * peer reads whatever follows its HELLO exchange as this side's AUTH. */
    if (flush_session(l)) return -1;
    if (p->link && p->link != l) {
        plink *old = p->link;
        p->link = NULL;
        link_close(old);
    }
    if (p->dialing == l) p->dialing = NULL;
    l->established = 1;
    p->link = l;
    p->backoff_ms = 0;
    uv_timer_stop(&l->hello_timer);
    s->stats.peer_connects++;
    srv_log(s, "link to %s up", p->name);
    route_link_up(s, (size_t)(p - s->peers->v));
    return 0;
}

/* Feeds a frame to the node. The flush inside may find the WAL failed (JR_EIO, JR_ENOSPC):
 * that is the node's failure, not the frame's. A frame the node refuses is the node's to count
 * (jr_node_stats frames_rejected); the link stays. */
static void node_recv(server *s, const char *from, const uint8_t *f, size_t len)
{
    int rc = jr_node_recv(s->node, from, f, len);
    if (rc == JR_EIO || rc == JR_ENOSPC) server_node_failed(s, rc);
}

static int on_frame(void *arg, const uint8_t *f, size_t len)
{
    plink *l = arg;
    server *s = l->s;
    if (!l->established && establish(l)) return -1;
    if (rw_is_route(f, len))
        route_recv(s, (size_t)(l->p - s->peers->v), f, len);
    else if (s->node && !s->wal_failed) /* a failed node is being reopened: Raft retransmits */
        node_recv(s, l->p->name, f, len);
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t sz, uv_buf_t *buf)
{
    static char slab[256 << 10]; /* one thread: each read is consumed before the next */
    (void)h;
    (void)sz;
    *buf = uv_buf_init(slab, sizeof slab);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    plink *l = st->data;
    if (n < 0) {
        link_close(l);
        return;
    }
    if (n == 0 || l->closing) return;
    int rc = session_feed(l->ss, (const uint8_t *)buf->base, (size_t)n, on_frame, l);
    /* A handshake that completed without frames behind it establishes the link here. */
    if (rc == 0 && !l->established && session_peer_name(l->ss)) rc = establish(l);
    if (rc == 0) rc = flush_session(l);
    if (rc) {
        if (session_errmsg(l->ss)[0])
            srv_log(l->s, "%s cluster connection %s %s: %s",
                    l->established ? "closed the" : "refused a",
                    l->p && l->p->dialer ? "to" : "from", l->p ? l->p->name : l->addr,
                    session_errmsg(l->ss));
        l->s->stats.peer_links_refused++;
        link_close(l);
        return;
    }
    /* The node flushes what the frames caused at its next tick: once, at the end of the loop
     * turn, for every link read in it (group commit across peers and reads). */
    clients_kick_later(l->s);
}

static void on_hello_timeout(uv_timer_t *t)
{
    plink *l = t->data;
    srv_log(l->s, "refused a cluster connection %s %s: no handshake within %d ms",
            l->p && l->p->dialer ? "to" : "from", l->p ? l->p->name : l->addr, HELLO_TIMEOUT_MS);
    l->s->stats.peer_links_refused++;
    link_close(l);
}

/* Notes the other end's address for the log. */
static void note_addr(plink *l)
{
    struct sockaddr_storage sa;
    int salen = sizeof sa;
    snprintf(l->addr, sizeof l->addr, "?");
    if (uv_tcp_getpeername(&l->tcp, (struct sockaddr *)&sa, &salen) != 0) return;
    char ip[48] = "";
    int port;
    if (sa.ss_family == AF_INET) {
        uv_ip4_name((struct sockaddr_in *)&sa, ip, sizeof ip);
        port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
    } else {
        uv_ip6_name((struct sockaddr_in6 *)&sa, ip, sizeof ip);
        port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
    }
    snprintf(l->addr, sizeof l->addr, "%s:%d", ip, port);
}

static plink *link_new(server *s, const char *expect)
{
    plink *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    session_config sc = {s->cfg.cluster,   s->cfg.name,     expect,      s->cfg.max_frame_bytes,
                         s->cfg.authority, s->cfg.identity, s->cfg.cert, s->cfg.cert_len};
    l->ss = session_new(&sc);
    if (!l->ss) {
        free(l);
        return NULL;
    }
    l->s = s;
    uv_tcp_init(s->loop, &l->tcp);
    uv_timer_init(s->loop, &l->hello_timer);
    l->tcp.data = l;
    l->hello_timer.data = l;
    l->handles = 2;
    uv_timer_start(&l->hello_timer, on_hello_timeout, HELLO_TIMEOUT_MS, 0);
    return l;
}

static void on_accept(uv_stream_t *srv, int status)
{
    server *s = srv->data;
    peers *ps = s->peers;
    if (status < 0) return;
    plink *l = link_new(s, NULL);
    if (!l) return;
    if (uv_accept(srv, (uv_stream_t *)&l->tcp) != 0 || ps->npending >= MAX_PENDING_ACCEPTS) {
        link_close(l);
        return;
    }
    l->next = ps->pending;
    ps->pending = l;
    ps->npending++;
    note_addr(l);
    uv_tcp_nodelay(&l->tcp, 1);
    uv_tcp_keepalive(&l->tcp, 1, 10);
    if (flush_session(l)) {
        link_close(l);
        return;
    }
    uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read);
}

static void on_connect(uv_connect_t *req, int status)
{
    plink *l = req->data;
    free(req);
    if (status < 0 || l->closing) {
        link_close(l);
        return;
    }
    note_addr(l);
    uv_tcp_nodelay(&l->tcp, 1);
    uv_tcp_keepalive(&l->tcp, 1, 10);
    if (flush_session(l)) {
        link_close(l);
        return;
    }
    uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    peer *p = req->data;
    p->resolving = 0;
    if (p->s->peers->stopping) {
        if (res) uv_freeaddrinfo(res);
        return;
    }
    if (status < 0 || !res) {
        schedule_retry(p);
        return;
    }
    plink *l = link_new(p->s, p->name);
    uv_connect_t *c = l ? malloc(sizeof *c) : NULL;
    if (!c) {
        if (l) link_close(l);
        uv_freeaddrinfo(res);
        schedule_retry(p);
        return;
    }
    l->p = p;
    p->dialing = l;
    c->data = l;
    if (uv_tcp_connect(c, &l->tcp, res->ai_addr, on_connect) != 0) {
        free(c);
        link_close(l);
    }
    uv_freeaddrinfo(res);
}

static void dial(peer *p)
{
    if (p->link || p->dialing || p->resolving || p->s->peers->stopping) return;
    char port[16];
    snprintf(port, sizeof port, "%d", p->port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    p->gai.data = p;
    if (uv_getaddrinfo(p->s->loop, &p->gai, on_resolved, p->host, port, &hints) == 0)
        p->resolving = 1;
    else
        schedule_retry(p);
}

static void on_retry(uv_timer_t *t)
{
    dial(t->data);
}

/* Jittered exponential backoff: the wait doubles per failure up to BACKOFF_MAX_MS, and each wait
 * is drawn from [wait/2, wait] so that servers restarted together do not redial in lockstep. */
static void schedule_retry(peer *p)
{
    unsigned b = p->backoff_ms ? p->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (b > BACKOFF_MAX_MS) b = BACKOFF_MAX_MS;
    p->backoff_ms = b;
    unsigned wait = b / 2 + (unsigned)(rand() % (int)(b / 2 + 1));
    uv_timer_start(&p->retry, on_retry, wait, 0);
}

int peers_start(server *s)
{
    peers *ps = calloc(1, sizeof *ps);
    if (!ps) return UV_ENOMEM;
    ps->s = s;
    ps->v = calloc(s->cfg.npeers, sizeof *ps->v);
    if (!ps->v) {
        free(ps);
        return UV_ENOMEM;
    }
    s->peers = ps;
    for (size_t i = 0; i < s->cfg.npeers; i++) {
        peer *p = &ps->v[ps->n++];
        p->s = s;
        p->name = s->cfg.peers[i].name;
        p->host = s->cfg.peers[i].host;
        p->port = s->cfg.peers[i].port;
        p->dialer = strcmp(s->cfg.name, p->name) < 0;
        uv_timer_init(s->loop, &p->retry);
        p->retry.data = p;
    }
    uv_tcp_init(s->loop, &ps->listener);
    ps->listener.data = s;
    struct sockaddr_storage sa;
    int rc = uv_ip4_addr(s->cfg.cluster_host, s->cfg.cluster_port, (struct sockaddr_in *)&sa);
    if (rc) rc = uv_ip6_addr(s->cfg.cluster_host, s->cfg.cluster_port, (struct sockaddr_in6 *)&sa);
    if (rc) return rc;
    rc = uv_tcp_bind(&ps->listener, (struct sockaddr *)&sa, 0);
    if (!rc) rc = uv_listen((uv_stream_t *)&ps->listener, 128, on_accept);
    if (rc) return rc;
    for (size_t i = 0; i < ps->n; i++)
        if (ps->v[i].dialer) dial(&ps->v[i]);
    return 0;
}

void peers_stop(server *s)
{
    peers *ps = s->peers;
    if (!ps || ps->stopping) return;
    ps->stopping = 1;
    for (size_t i = 0; i < ps->n; i++) {
        peer *p = &ps->v[i];
        if (p->link) link_close(p->link);
        if (p->dialing) link_close(p->dialing);
        if (p->resolving) uv_cancel((uv_req_t *)&p->gai);
        uv_close((uv_handle_t *)&p->retry, NULL);
    }
    while (ps->pending) link_close(ps->pending);
    uv_close((uv_handle_t *)&ps->listener, NULL);
}

void peers_free(server *s)
{
    if (!s->peers) return;
    free(s->peers->v);
    free(s->peers);
    s->peers = NULL;
}
