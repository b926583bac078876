/*
 * epoll_node — the smallest complete host of a libjetraft node: one server per process, driven
 * by one epoll loop with a timerfd, talking to its peers over TCP. Copy it and adapt it.
 *
 *   epoll_node --name n1 --listen 127.0.0.1:7001 --dir /tmp/n1 \
 *              --peer n1=127.0.0.1:7001 --peer n2=127.0.0.1:7002 --peer n3=127.0.0.1:7003 \
 *              [--publish 1000]
 *
 * Every server is started with the same --peer list. A server given --publish N creates the
 * stream ORDERS (R3 on subjects orders.>), publishes N messages, prints the stream's cluster
 * block and exits; the others run until SIGTERM or SIGINT.
 *
 * The host contract, as this file keeps it:
 *  - One thread drives the node. Every call into it (jr_node_recv, jr_node_tick, the API) is
 *    made from the loop below, and the library's callbacks run only inside jr_node_recv and
 *    jr_node_tick — so the callbacks here may call the API again, and need no locks.
 *  - host.send hands over one frame for a named peer. It must not call back into the node; it
 *    copies the frame into that peer's bounded output buffer and returns. A frame it cannot take
 *    (peer not connected, buffer full) is dropped with a non-zero return: Raft resends what
 *    matters, so a slow or dead peer never makes this process grow without bound.
 *  - host.arm asks for the next jr_node_tick at a deadline; one timerfd holds it. Calling
 *    jr_node_tick early is harmless.
 *  - A frame read from a peer is handed to jr_node_recv whole, with the sender's name. The
 *    library checks every frame (checksum, sender, size) before it uses any of it, and flushes
 *    what it caused in the jr_node_tick it asks for at once (host.arm with now): the timerfd
 *    fires at the next epoll_wait, after every read of this batch, so the frames of one batch
 *    share one WAL write and one fsync.
 *  - Closing: jr_node_close flushes what is pending and completes every callback with
 *    JR_ECLOSED; the process then exits.
 *
 * Links, kept simple on purpose: each server dials every peer once for what it sends (an
 * outbound connection that starts with a hello naming the sender) and accepts the peers'
 * connections for what it receives; on the wire a frame is a 4-byte little-endian length and
 * the frame. A lost connection is dialed again at the next send after a pause. The links carry
 * no authentication or encryption: a production host puts the library's secure links (or TLS)
 * around them, and would keep one connection per pair (jetraft-server does both).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "jetraft.h"

#define MAX_PEERS 16
#define MAX_CONNS 64
#define MAX_FRAME (8u << 20)   /* the node's default max_frame_bytes */
#define OUT_CAP (32u << 20)    /* per peer: beyond it frames are dropped */
#define REDIAL_NS 200000000ull /* a failed connection is dialed again after this */

/* A peer: where to dial it, and the outbound connection with its unsent bytes. */
typedef struct peer {
    char name[64];
    struct sockaddr_in addr;
    int fd; /* outbound, -1: none */
    int connecting;
    uint64_t redial_at;
    char *out;
    size_t out_len, out_cap;
} peer;

/* An accepted inbound connection: its sender (from the hello) and its partial input. */
typedef struct conn {
    int fd; /* -1: free slot */
    char from[64];
    unsigned char *in;
    size_t in_len, in_cap;
} conn;

static struct {
    jr_node *node;
    int ep, tfd, lfd, sfd;
    peer peers[MAX_PEERS];
    size_t npeers;
    conn conns[MAX_CONNS];
    const char *self;
    int closing;
    /* the --publish client */
    long to_publish, sent, published, in_flight;
    int info_asked;
} H;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t host_now(void *ctx)
{
    (void)ctx;
    return now_ns();
}

static uint64_t host_wall(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The node's one timer: the timerfd fires at `deadline` (absolute, CLOCK_MONOTONIC). */
static void host_arm(void *ctx, uint64_t deadline)
{
    (void)ctx;
    struct itimerspec it;
    memset(&it, 0, sizeof it);
    if (deadline != UINT64_MAX) {
        if (deadline == 0) deadline = 1; /* 0 would disarm */
        it.it_value.tv_sec = (time_t)(deadline / 1000000000ull);
        it.it_value.tv_nsec = (long)(deadline % 1000000000ull);
    }
    timerfd_settime(H.tfd, TFD_TIMER_ABSTIME, &it, NULL);
}

static void host_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (level <= JR_LOG_WARN) fprintf(stderr, "[%s] %s\n", H.self, msg);
}

static void watch(int fd, uint32_t events, int add)
{
    struct epoll_event ev = {.events = events, .data.fd = fd};
    epoll_ctl(H.ep, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
}

static void peer_drop(peer *p)
{
    if (p->fd >= 0) close(p->fd); /* closing removes it from the epoll set */
    p->fd = -1;
    p->connecting = 0;
    p->out_len = 0;
    p->redial_at = now_ns() + REDIAL_NS;
}

/* Dials p (non-blocking) and queues the hello naming this server. */
static void peer_dial(peer *p)
{
    if (p->fd >= 0 || now_ns() < p->redial_at) return;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&p->addr, sizeof p->addr) != 0 && errno != EINPROGRESS) {
        close(fd);
        p->redial_at = now_ns() + REDIAL_NS;
        return;
    }
    p->fd = fd;
    p->connecting = 1;
    unsigned char len = (unsigned char)strlen(H.self);
    memcpy(p->out, &len, 1);
    memcpy(p->out + 1, H.self, len);
    p->out_len = 1u + len;
    watch(fd, EPOLLOUT, 1);
}

/* Writes what p's buffer holds; waits for EPOLLOUT when the socket is full. */
static void peer_flush(peer *p)
{
    size_t done = 0;
    while (done < p->out_len) {
        ssize_t w = send(p->fd, p->out + done, p->out_len - done, MSG_NOSIGNAL);
        if (w < 0 && errno == EAGAIN) break;
        if (w <= 0) {
            peer_drop(p);
            return;
        }
        done += (size_t)w;
    }
    memmove(p->out, p->out + done, p->out_len - done);
    p->out_len -= done;
    watch(p->fd, p->out_len ? EPOLLOUT : 0, 0);
}

static peer *peer_find(const char *name)
{
    for (size_t i = 0; i < H.npeers; i++)
        if (strcmp(H.peers[i].name, name) == 0) return &H.peers[i];
    return NULL;
}

/* host.send: copy the frame into the peer's buffer behind its length; never calls the node. */
static int host_send(void *ctx, const char *to, const jr_iovec *iov, int iovcnt)
{
    (void)ctx;
    peer *p = peer_find(to);
    if (!p) return -1;
    peer_dial(p);
    if (p->fd < 0) return -1;
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].len;
    if (len > MAX_FRAME || p->out_len + 4 + len > OUT_CAP) return -1; /* Raft resends */
    if (p->out_len + 4 + len > p->out_cap) {
        size_t cap = p->out_cap * 2 > p->out_len + 4 + len ? p->out_cap * 2 : p->out_len + 4 + len;
        char *nb = realloc(p->out, cap);
        if (!nb) return -1;
        p->out = nb;
        p->out_cap = cap;
    }
    unsigned char hdr[4] = {(unsigned char)len, (unsigned char)(len >> 8),
                            (unsigned char)(len >> 16), (unsigned char)(len >> 24)};
    memcpy(p->out + p->out_len, hdr, 4);
    p->out_len += 4;
    for (int i = 0; i < iovcnt; i++) {
        memcpy(p->out + p->out_len, iov[i].base, iov[i].len);
        p->out_len += iov[i].len;
    }
    if (!p->connecting) peer_flush(p);
    return 0;
}

static void conn_close(conn *c)
{
    close(c->fd);
    c->fd = -1;
    free(c->in);
    c->in = NULL;
    c->in_len = c->in_cap = 0;
    c->from[0] = 0;
}

/* Reads from an inbound connection: first the hello, then length-prefixed frames, each handed
 * to jr_node_recv whole. A frame the node rejects is counted by it; a malformed stream (a
 * length beyond MAX_FRAME, an unknown sender) closes the connection. */
static void conn_read(conn *c)
{
    for (;;) {
        if (c->in_cap - c->in_len < 65536) {
            size_t cap = c->in_cap ? c->in_cap * 2 : 131072;
            if (cap > MAX_FRAME + 65536) cap = MAX_FRAME + 65536;
            unsigned char *nb = cap > c->in_cap ? realloc(c->in, cap) : c->in;
            if (!nb) {
                conn_close(c);
                return;
            }
            c->in = nb;
            c->in_cap = cap;
        }
        ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (r < 0 && errno == EAGAIN) return;
        if (r <= 0) {
            conn_close(c);
            return;
        }
        c->in_len += (size_t)r;
        size_t off = 0;
        if (!c->from[0] && c->in_len >= 1u + c->in[0]) {
            memcpy(c->from, c->in + 1, c->in[0]);
            c->from[c->in[0]] = 0;
            off = 1u + c->in[0];
            if (!c->from[0] || !peer_find(c->from)) { /* not a server of the cluster */
                conn_close(c);
                return;
            }
        }
        while (c->from[0] && c->in_len - off >= 4) {
            const unsigned char *h = c->in + off;
            size_t len = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16 | (size_t)h[3] << 24;
            if (len > MAX_FRAME) {
                conn_close(c);
                return;
            }
            if (c->in_len - off - 4 < len) break;
            jr_node_recv(H.node, c->from, h + 4, len); /* flushed at the tick; errors counted */
            off += 4 + len;
        }
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
}

static void conn_accept(void)
{
    int fd;
    while ((fd = accept4(H.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        conn *c = NULL;
        for (size_t i = 0; i < MAX_CONNS && !c; i++)
            if (H.conns[i].fd < 0) c = &H.conns[i];
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        watch(fd, EPOLLIN, 1);
    }
}

/* The --publish client: create ORDERS, then publish with a window of acknowledgements. ------*/

static void publish_next(void);

static void on_publish(void *arg, int status, const jr_pub_ack *ack)
{
    (void)arg;
    H.in_flight--;
    if (status == 0)
        H.published++;
    else /* ENOQUORUM and friends during a failover: publish the next one; a real client
            would resend with a msg_id */
        fprintf(stderr, "publish: %s (%s)\n", jr_strerror(status), ack ? ack->msg : "");
    publish_next();
}

static void on_info(void *arg, int status, const char *msg, const jr_stream_info *info)
{
    (void)arg;
    if (status != 0) fprintf(stderr, "stream info: %s\n", msg);
    if (status == 0) {
        char buf[4096];
        jr_stream_info_format(info, buf, sizeof buf);
        printf("ORDERS holds %llu messages\n%s", (unsigned long long)info->state->msgs, buf);
    }
    printf("published %ld of %ld\n", H.published, H.to_publish);
    fflush(stdout);
    H.closing = 1;
}

/* Keeps up to WINDOW publishes in flight: the node batches them into one log entry and one
 * sync per flush, so a window costs about what a single publish does. */
#define WINDOW 32

static void publish_next(void)
{
    while (H.sent < H.to_publish && H.in_flight < WINDOW) {
        char data[64];
        int n = snprintf(data, sizeof data, "order %ld", H.sent + 1);
        if (jr_publish(H.node, "orders.new", NULL, 0, data, (size_t)n, NULL, on_publish, NULL) != 0)
            break;
        H.sent++;
        H.in_flight++;
    }
    if (H.sent == H.to_publish && H.in_flight == 0 && !H.info_asked) {
        H.info_asked = 1;
        jr_stream_info_get(H.node, "ORDERS", on_info, NULL);
    }
}

static void on_stream_added(void *arg, int status, const char *msg)
{
    (void)arg;
    if (status != 0) {
        fprintf(stderr, "stream add: %s: %s\n", jr_strerror(status), msg);
        H.closing = 1;
        return;
    }
    publish_next();
}

static void start_client(void)
{
    static const char *subjects[] = {"orders.>"};
    jr_stream_config cfg;
    jr_stream_config_init(&cfg);
    cfg.name = "ORDERS";
    cfg.subjects = subjects;
    cfg.nsubjects = 1;
    cfg.replicas = 3;
    if (jr_stream_add(H.node, &cfg, on_stream_added, NULL) != 0) H.closing = 1;
}

/* Setup and the loop ------------------------------------------------------------------------*/

static int parse_addr(const char *s, struct sockaddr_in *out)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof host) return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    memset(out, 0, sizeof *out);
    out->sin_family = AF_INET;
    out->sin_port = htons((uint16_t)atoi(colon + 1));
    return inet_pton(AF_INET, host, &out->sin_addr) == 1 ? 0 : -1;
}

static int usage(void)
{
    fprintf(stderr, "usage: epoll_node --name N --listen IP:PORT --dir DIR "
                    "--peer NAME=IP:PORT... [--publish COUNT]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *listen_at = NULL, *dir = NULL, *names[MAX_PEERS];
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--name") == 0) {
            H.self = argv[i + 1];
        } else if (strcmp(argv[i], "--listen") == 0) {
            listen_at = argv[i + 1];
        } else if (strcmp(argv[i], "--dir") == 0) {
            dir = argv[i + 1];
        } else if (strcmp(argv[i], "--publish") == 0) {
            H.to_publish = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "--peer") == 0 && H.npeers < MAX_PEERS) {
            peer *p = &H.peers[H.npeers];
            const char *eq = strchr(argv[i + 1], '=');
            if (!eq || (size_t)(eq - argv[i + 1]) >= sizeof p->name) return usage();
            memcpy(p->name, argv[i + 1], (size_t)(eq - argv[i + 1]));
            if (parse_addr(eq + 1, &p->addr) != 0) return usage();
            p->fd = -1;
            p->out_cap = 4096;
            p->out = malloc(p->out_cap);
            names[H.npeers++] = p->name;
        } else {
            return usage();
        }
    }
    struct sockaddr_in la;
    if (!H.self || !dir || !listen_at || parse_addr(listen_at, &la) != 0 || !H.npeers)
        return usage();
    for (size_t i = 0; i < MAX_CONNS; i++) H.conns[i].fd = -1;

    /* Signals arrive as readable events of a signalfd, like everything else. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    H.sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    H.ep = epoll_create1(EPOLL_CLOEXEC);
    H.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    H.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(H.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(H.lfd, (struct sockaddr *)&la, sizeof la) != 0 || listen(H.lfd, 64) != 0) {
        perror("listen");
        return 1;
    }
    watch(H.sfd, EPOLLIN, 1);
    watch(H.tfd, EPOLLIN, 1);
    watch(H.lfd, EPOLLIN, 1);

    static const jr_host host = {.version = JR_HOST_VERSION,
                                 .send = host_send,
                                 .now = host_now,
                                 .arm = host_arm,
                                 .log = host_log,
                                 .wall = host_wall};
    char err[256];
    jr_node_config cfg;
    jr_node_config_init(&cfg);
    cfg.name = H.self;
    cfg.peers = names;
    cfg.npeers = H.npeers;
    cfg.wal_dir = dir;
    cfg.host = &host;
    cfg.streams = 1;
    cfg.errbuf = err;
    cfg.errbuf_len = sizeof err;
    if (jr_node_open(&cfg, &H.node) != 0) {
        fprintf(stderr, "jr_node_open: %s\n", err);
        return 1;
    }
    if (H.to_publish > 0) start_client();
    jr_node_tick(H.node); /* arms the first timer */

    while (!H.closing) {
        struct epoll_event evs[64];
        int n = epoll_wait(H.ep, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == H.sfd) {
                H.closing = 1;
            } else if (fd == H.tfd) {
                uint64_t expirations;
                if (read(H.tfd, &expirations, sizeof expirations) < 0) { /* spurious */
                }
                jr_node_tick(H.node);
            } else if (fd == H.lfd) {
                conn_accept();
            } else {
                peer *p = NULL;
                for (size_t k = 0; k < H.npeers && !p; k++)
                    if (H.peers[k].fd == fd) p = &H.peers[k];
                if (p) {
                    if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
                        peer_drop(p);
                        continue;
                    }
                    p->connecting = 0;
                    peer_flush(p);
                    continue;
                }
                for (size_t k = 0; k < MAX_CONNS; k++)
                    if (H.conns[k].fd == fd) conn_read(&H.conns[k]);
            }
        }
    }
    jr_node_close(H.node); /* flushes, then completes every callback with JR_ECLOSED */
    for (size_t k = 0; k < MAX_CONNS; k++)
        if (H.conns[k].fd >= 0) conn_close(&H.conns[k]);
    for (size_t k = 0; k < H.npeers; k++) {
        peer_drop(&H.peers[k]);
        free(H.peers[k].out);
    }
    close(H.lfd);
    close(H.tfd);
    close(H.sfd);
    close(H.ep);
    return H.to_publish > 0 && H.published < H.to_publish ? 1 : 0;
}
