/*
 * test_route_peer.c — route frames against a real jetraft-server from a fake peer.
 *
 * One server, n1, configured with plain links (insecure_cluster) and a second peer n0 that the
 * test plays over a raw socket: it sends n0's hello, then reads what n1 sends and writes route
 * frames of its own. Checks: when the link comes up n1 announces its clients' interest; garbage
 * frames (a bad checksum, an unknown version, bodies that pass the checksum but not the decoder,
 * random bytes for the node) are rejected without closing the link or harming the server; an
 * interest n0 announces makes n1 forward a client's publish to n0 as a MSG frame, headers kept;
 * a MSG frame from n0 reaches n1's subscriber; while n0 does not read, n1 drops what does not fit
 * half its send queue (logged) and keeps serving; once n0's connection closes, n1 forgets n0's
 * interest (a request on it gets the no-responders status). Finally SIGTERM must stop n1 with
 * exit status 0.
 *
 * Usage: test_server_route_peer PATH/TO/jetraft-server
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "procs.h"
#include "rawclient.h"
#include "route_wire.h"

static uint8_t frame[2 << 20]; /* a forwarded 1 MiB message and its head */

/* Sends one length-prefixed frame (the plain session's framing). */
static void send_frame(int fd, const void *body, size_t n)
{
    uint8_t h[4] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
    send_all(fd, h, 4);
    send_all(fd, body, n);
}

/* Reads exactly n bytes within timeout_ms; 0 or -1. */
static int read_n(int fd, uint8_t *p, size_t n, int timeout_ms)
{
    double until = now_s() + timeout_ms / 1000.0;
    while (n) {
        int left = (int)((until - now_s()) * 1000);
        struct pollfd pf = {fd, POLLIN, 0};
        if (left <= 0 || poll(&pf, 1, left) <= 0) return -1;
        ssize_t k = recv(fd, p, n, 0);
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads the next frame into `frame`; its length, or dies. */
static size_t read_frame(int fd, const char *what)
{
    uint8_t h[4];
    if (read_n(fd, h, 4, 10000)) die("%s: no frame from n1", what);
    size_t n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
    if (n == 0 || n > sizeof frame) die("%s: a frame of %zu bytes", what, n);
    if (read_n(fd, frame, n, 10000)) die("%s: a frame cut short", what);
    return n;
}

/* Reads frames until a route frame of `type`, skipping the node's; its length. */
static size_t read_route(int fd, int type, const char *what)
{
    for (int i = 0; i < 10000; i++) {
        size_t n = read_frame(fd, what);
        int t;
        if (!rw_is_route(frame, n)) continue;
        if (rw_open(frame, n, &t)) die("%s: n1 sent a route frame that does not check out", what);
        if (t == type) return n;
    }
    die("%s: no route frame of type %d", what, type);
}

/* Sends a route frame of version and type around body, with a correct checksum. */
static void send_sealed(int fd, int version, int type, const void *body, size_t n)
{
    static uint8_t f[4096];
    memcpy(f, "JN", 2);
    f[2] = (uint8_t)version;
    f[3] = (uint8_t)type;
    memcpy(f + RW_HDR, body, n);
    rw_seal(f, RW_HDR + n);
    send_frame(fd, f, RW_HDR + n);
}

/* Waits up to 10 s for `what` in n1's log; dies naming `why` otherwise. */
static void wait_log(const char *what, const char *why)
{
    char path[600];
    snprintf(path, sizeof path, "%s/n1.log", base);
    for (int t = 0; t < 100; t++) {
        FILE *f = fopen(path, "r");
        char line[1024];
        int found = 0;
        while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, what) != NULL;
        if (f) fclose(f);
        if (found) return;
        usleep(100000);
    }
    die("%s: \"%s\" not in n1's log", why, what);
}

static int str_is(rw_str s, const char *want)
{
    return s.len == strlen(want) && !memcmp(s.p, want, s.len);
}

int main(int argc, char **argv)
{
    procs_init(argc, argv, "routepeer", 60);
    int ports[3];
    pick_ports(ports, 3);
    int client_port = ports[0], lport = ports[1];
    const char *names[2] = {"n0", "n1"};
    const int peer_ports[2] = {ports[2], lport};
    char fields[600];
    snprintf(fields, sizeof fields,
             "\"wal_dir\":\"%s/n1-wal\",\"insecure_cluster\":true,\"peer_queue_bytes\":4194304,",
             base);
    write_config("n1", "n1", client_port, lport, fields, names, peer_ports, 2);
    server_start(0, "n1");

    /* A client of n1 subscribed to local.> */
    rbuf b;
    int c = client_connect(client_port, NULL, NULL, &b);
    send_str(c, "SUB local.> 1\r\nSUB _INBOX.nr.> 2\r\nPING\r\n");
    expect(c, &b, "PONG\r\n", "SUB local.>");

    /* n0's side of the link: n0 sorts first, so it dials n1. */
    int p = dial(lport, 0);
    static const char hello[] = "jetraft-hello/1\nC1\nn0\n";
    send_frame(p, hello, sizeof hello - 1);
    size_t n = read_frame(p, "n1's hello");
    if (n != strlen("jetraft-hello/1\nC1\nn1\n") || memcmp(frame, "jetraft-hello/1\nC1\nn1\n", n))
        die("n1's hello: %.*s", (int)n, (const char *)frame);
    n = read_route(p, RW_INTEREST, "interest at link up");
    size_t off = 0;
    rw_op op;
    int found = 0;
    while (rw_interest_next(frame, n, &off, &op) == 1)
        found |= str_is(op.subject, "local.>") && op.queue.len == 0 && op.count == 1;
    if (!found) die("interest at link up: local.> not announced");
    printf("ok: n1 announced its client's interest when n0's link came up\n");

    /* Garbage: none of it may close the link or harm the server. */
    static uint8_t g[4096];
    memcpy(g,
           "JN\x01\x01"
           "garbage-checksum-and-body",
           29);
    send_frame(p, g, 29);
    static const struct {
        int version, type;
        const char *body;
        size_t len;
        const char *why;
    } bad[] = {
        {9, RW_INTEREST, "\001\001a\000", 4, "an unknown version"},
        {1, 7, "\001\001a\000", 4, "an unknown type"},
        {1, RW_INTEREST, "\001\004a..b\000", 7, "an empty token"},
        {1, RW_INTEREST, "\001\005ab", 4, "a name past the end"},
        {1, RW_MSG, "\001\377\377\003a", 5, "a name over its bound"},
        {1, RW_MSG, "\001\001a\000\000\000\005abc", 10, "a header past the end"},
        {1, RW_INTEREST, "", 0, "an empty INTEREST"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        send_sealed(p, bad[i].version, bad[i].type, bad[i].body, bad[i].len);
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < 200; i++) {
        size_t len = 1 + i % 97;
        for (size_t k = 0; k < len; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            g[k] = (uint8_t)x;
        }
        if (i % 2) {
            g[0] = 'J';
            g[1] = 'N';
        }
        send_frame(p, g, len);
    }
    servers_check_alive();
    printf("ok: garbage route and node frames rejected, n1 still running\n");

    /* n0 announces fake.>: a publish at n1 comes to n0, headers kept. */
    rw_build bld;
    rw_build_init(&bld);
    if (rw_build_start(&bld, RW_INTEREST) || rw_build_op(&bld, "fake.>", NULL, 1) ||
        rw_build_op(&bld, "$FAKE.>", NULL, 1))
        die("rw_build");
    rw_build_finish(&bld);
    send_frame(p, bld.buf, bld.len);
    rw_build_free(&bld);
    rw_msg m;
    for (int t = 0;; t++) {
        if (t == 50) die("a publish on fake.x never reached n0");
        send_str(c, "HPUB fake.x _INBOX.r.1 18 23\r\nNATS/1.0\r\nY: 2\r\n\r\nhello\r\n");
        uint8_t h[4];
        int got = 0;
        while (!got && read_n(p, h, 4, 100) == 0) {
            n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
            if (n == 0 || n > sizeof frame || read_n(p, frame, n, 5000)) die("a bad frame");
            int type;
            got = rw_is_route(frame, n) && rw_open(frame, n, &type) == 0 && type == RW_MSG;
        }
        if (got) break;
    }
    if (rw_msg_decode(frame, n, &m)) die("n1's MSG frame does not decode");
    if (!str_is(m.to, "fake.x") || m.subject.len || !str_is(m.reply, "_INBOX.r.1") ||
        !(m.flags & RW_PLAIN) || m.nq || m.hdr_len != 18 ||
        memcmp(m.hdr, "NATS/1.0\r\nY: 2\r\n\r\n", 18) || m.len != 5 || memcmp(m.data, "hello", 5))
        die("n1's MSG frame: to %.*s, %zu header bytes, %zu data bytes", (int)m.to.len, m.to.p,
            m.hdr_len, m.len);
    printf("ok: a publish at n1 on n0's interest reached n0 with its header and reply\n");

    /* A MSG frame from n0 reaches n1's subscriber. */
    static uint8_t head[512];
    size_t hl = 0;
    static const char hdr[] = "NATS/1.0\r\nX: 1\r\n\r\n";
    if (rw_msg_head(head, sizeof head, &hl, RW_PLAIN, "local.a", NULL, NULL, NULL, 0, hdr,
                    sizeof hdr - 1, "from-peer", 9))
        die("rw_msg_head");
    memcpy(g, head, hl);
    memcpy(g + hl, hdr, sizeof hdr - 1);
    memcpy(g + hl + sizeof hdr - 1, "from-peer", 9);
    b.n = 0;
    send_frame(p, g, hl + sizeof hdr - 1 + 9);
    expect(c, &b, "HMSG local.a 1 18 27\r\nNATS/1.0\r\nX: 1\r\n\r\nfrom-peer\r\n",
           "a message from n0");
    printf("ok: a MSG frame from n0 reached n1's subscriber, header kept\n");

    /* n0 stops reading: n1 drops what it would forward beyond half its 4 MiB send queue (and
     * what the sockets hold) rather than keep it, and keeps serving its clients. */
    static char big[1 << 20];
    memset(big, 'z', sizeof big);
    char line[64];
    int bn = snprintf(line, sizeof line, "PUB $FAKE.big %zu\r\n", sizeof big);
    for (int i = 0; i < 256; i++) {
        send_all(c, line, (size_t)bn);
        send_all(c, big, sizeof big);
        send_str(c, "\r\n");
    }
    b.n = 0;
    send_str(c, "PING\r\n");
    expect(c, &b, "PONG\r\n", "n1 serving its client while n0 does not read");
    wait_log("dropping routed messages", "n1 dropping messages n0 does not read");
    size_t taken = 0;
    uint8_t h4[4];
    while (read_n(p, h4, 4, 1000) == 0) {
        n = (size_t)h4[0] << 24 | (size_t)h4[1] << 16 | (size_t)h4[2] << 8 | h4[3];
        if (n == 0 || n > sizeof frame || read_n(p, frame, n, 5000)) die("a bad frame");
        taken += 4 + n;
    }
    if (taken == 0 || taken > (64u << 20))
        die("n1 sent %zu bytes to a peer that did not read", taken);
    printf("ok: 256 MiB published for a peer that did not read: it got %zu KiB, the rest "
           "dropped, and n1 kept serving\n",
           taken >> 10);

    /* n0 goes away: its interest with it ($-subjects other than the API's are answered with
     * no-responders by the server at once when nobody anywhere has interest). */
    close(p);
    for (int t = 0;; t++) {
        if (t == 50) die("n0's interest outlived its link");
        b.n = 0;
        send_str(c, "PUB $FAKE.y _INBOX.nr.1 2\r\nhi\r\n");
        if (read_until(c, &b, "HMSG _INBOX.nr.1 2 16 16\r\nNATS/1.0 503\r\n", 200)) break;
    }
    printf("ok: once n0's link closed, a request on its interest gets no-responders\n");
    close(c);
    servers_check_alive();
    servers_stop_all();
    printf("ok: n1 exited 0\n");
    return 0;
}
