/*
 * peer.c — cluster links over libuv TCP (see peer.h).
 */
#include "peer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

#define HELLO_MAGIC "jetraft-hello/1"
#define HELLO_TIMEOUT_MS 5000
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
#define MAX_PENDING_ACCEPTS 64

typedef struct peer peer;

typedef struct plink {
    uv_tcp_t tcp;
    uv_timer_t hello_timer;
    server *s;
    peer *p;         /* dialer: the peer dialled; acceptor: set by its hello */
    int established; /* both hellos exchanged (our side: we read theirs) */
    int closing;
    int handles;   /* handles still open (tcp, timer) */
    size_t queued; /* bytes handed to uv_write and not completed */
    frame_rd rd;
    struct plink *next; /* in the list of links not yet established */
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
    plink *pending; /* accepted, hello not yet read */
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
static void dial(peer *p);

static peer *find_peer(peers *ps, const char *name, size_t len)
{
    for (size_t i = 0; i < ps->n; i++)
        if (strlen(ps->v[i].name) == len && !memcmp(ps->v[i].name, name, len)) return &ps->v[i];
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
    (void)status; /* a failed write surfaces as a read error and closes the plink */
}

/* Queues bytes on the link's socket; the bytes are copied. */
static int link_write(plink *l, const jr_iovec *iov, int iovcnt, int framed)
{
    size_t len = framed ? FRAME_HDR : 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].len;
    if (l->queued + len > l->s->cfg.peer_queue_bytes) return -1;
    wreq *w = malloc(sizeof *w + len);
    if (!w) return -1;
    size_t off = 0;
    if (framed) {
        frame_hdr(w->data, (uint32_t)(len - FRAME_HDR));
        off = FRAME_HDR;
    }
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].len) memcpy(w->data + off, iov[i].base, iov[i].len);
        off += iov[i].len;
    }
    w->l = l;
    w->len = len;
    uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&l->tcp, &b, 1, on_write) != 0) {
        free(w);
        return -1;
    }
    l->queued += len;
    return 0;
}

static int send_hello(plink *l)
{
    char buf[600];
    int n = snprintf(buf, sizeof buf, HELLO_MAGIC "\n%s\n%s\n", l->s->cfg.cluster, l->s->cfg.name);
    jr_iovec iov = {buf, (size_t)n};
    return link_write(l, &iov, 1, 1);
}

int peers_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt)
{
    server *s = ctx;
    peers *ps = s->peers;
    peer *p = ps ? find_peer(ps, to, strlen(to)) : NULL;
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].len;
    if (!p || !p->link || len > s->cfg.max_frame_bytes || link_write(p->link, iov, iovcnt, 1)) {
        if (p) p->frames_dropped++;
        s->stats.peer_frames_dropped++;
        return -1;
    }
    p->frames_sent++;
    p->bytes_sent += len;
    return 0;
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

static void schedule_retry(peer *p);

static void on_link_closed(uv_handle_t *h)
{
    plink *l = h->data;
    if (--l->handles > 0) return;
    frame_rd_free(&l->rd);
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
    }
    if (p && p->dialing == l) p->dialing = NULL;
    uv_close((uv_handle_t *)&l->tcp, on_link_closed);
    uv_close((uv_handle_t *)&l->hello_timer, on_link_closed);
    if (p && p->dialer && !p->link && !p->dialing && !ps->stopping) schedule_retry(p);
}

static int on_frame(void *arg, const uint8_t *f, size_t len)
{
    plink *l = arg;
    server *s = l->s;
    if (!l->established) {
        /* The hello: magic, cluster and name, each ending in a newline. */
        size_t ml = strlen(HELLO_MAGIC);
        if (len < ml + 1 || memcmp(f, HELLO_MAGIC "\n", ml + 1)) return -1;
        const char *c = (const char *)f + ml + 1, *end = (const char *)f + len;
        const char *nl = memchr(c, '\n', (size_t)(end - c));
        if (!nl) return -1;
        const char *name = nl + 1;
        const char *nl2 = memchr(name, '\n', (size_t)(end - name));
        if (!nl2 || nl2 + 1 != end) return -1;
        if ((size_t)(nl - c) != strlen(s->cfg.cluster) || memcmp(c, s->cfg.cluster, nl - c)) {
            srv_log(s, "refused a link: cluster \"%.*s\" is not ours", (int)(nl - c), c);
            return -1;
        }
        peer *p = find_peer(s->peers, name, (size_t)(nl2 - name));
        if (!p || !strcmp(p->name, s->cfg.name)) {
            srv_log(s, "refused a link from unknown server \"%.*s\"", (int)(nl2 - name), name);
            return -1;
        }
        if (l->p && l->p != p) {
            srv_log(s, "dialled %s but %s answered", l->p->name, p->name);
            return -1;
        }
        if (!l->p && p->dialer) return -1; /* it should have waited for our dial */
        if (!l->p) {
            /* Acceptor: answer with our hello; a newer connection replaces an older one. */
            unlink_pending(s->peers, l);
            l->p = p;
            if (send_hello(l)) return -1;
        }
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
        return 0;
    }
    int rc = jr_node_recv(s->node, l->p->name, f, len);
    if (rc) s->stats.peer_frames_rejected++;
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t sz, uv_buf_t *buf)
{
    static char slab[256 << 10]; /* one thread: reads are consumed before the next one */
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
    int rc = frame_rd_feed(&l->rd, (const uint8_t *)buf->base, (size_t)n, on_frame, l);
    if (rc) {
        l->s->stats.peer_frames_rejected++;
        link_close(l);
        return;
    }
    server_kick(l->s);
}

static void on_hello_timeout(uv_timer_t *t)
{
    link_close(t->data);
}

static plink *link_new(server *s)
{
    plink *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->s = s;
    frame_rd_init(&l->rd, s->cfg.max_frame_bytes);
    uv_tcp_init(s->loop, &l->tcp);
    uv_timer_init(s->loop, &l->hello_timer);
    l->tcp.data = l;
    l->hello_timer.data = l;
    l->handles = 2;
    uv_tcp_nodelay(&l->tcp, 1);
    uv_tcp_keepalive(&l->tcp, 1, 10);
    uv_timer_start(&l->hello_timer, on_hello_timeout, HELLO_TIMEOUT_MS, 0);
    return l;
}

static void on_accept(uv_stream_t *srv, int status)
{
    server *s = srv->data;
    peers *ps = s->peers;
    if (status < 0) return;
    plink *l = link_new(s);
    if (!l) return;
    if (uv_accept(srv, (uv_stream_t *)&l->tcp) != 0 || ps->npending >= MAX_PENDING_ACCEPTS) {
        l->next = NULL;
        link_close(l);
        return;
    }
    l->next = ps->pending;
    ps->pending = l;
    ps->npending++;
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
    if (send_hello(l)) {
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
    plink *l = link_new(p->s);
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
