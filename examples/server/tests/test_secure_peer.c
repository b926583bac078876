/*
 * test_secure_peer.c — a secure link's bytes against a real jetraft-server from a fake peer.
 *
 * One server, n1, with secure links and a client subscribed to local.>, so that it announces
 * interest as soon as a link comes up; the test plays n0 (sorting first, so it dials n1) with the
 * server's own session code and n0's keys.
 *  - The order of the first bytes: n0 reads n1's HELLO first and then writes its HELLO and its
 *    AUTH in one write, so n1 reads both in one read: that read opens n1's side of the session
 *    and also queues n1's AUTH (its answer to the HELLO). What n1 sends after its HELLO is its
 *    AUTH, then sealed frames (among them the interest announcement), never a sealed frame where
 *    n0 expects the AUTH ("AUTH of the wrong length"); n1 logs no refused connection.
 *  - A replayed record (a sealed frame n1 accepted, sent again) and a tampered one (a byte of
 *    its tag flipped) each make n1 close the link, log why and count it
 *    (jetraft_peer_links_refused_total); its client is served throughout, and an honest link
 *    from n0 comes up again afterwards.
 * Finally SIGTERM must stop n1 with exit status 0.
 *
 * Usage: test_server_secure_peer PATH/TO/jetraft-server
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "procs.h"
#include "rawclient.h"
#include "route_wire.h"
#include "session.h"

typedef struct seen {
    int frames;   /* frames n1 sealed, in order */
    int interest; /* whether an INTEREST announcing local.> was among them */
} seen;

static int str_is(rw_str s, const char *want)
{
    return s.len == strlen(want) && !memcmp(s.p, want, s.len);
}

static int on_frame(void *arg, const uint8_t *f, size_t len)
{
    seen *sn = arg;
    sn->frames++;
    int t;
    if (!rw_is_route(f, len) || rw_open(f, len, &t) || t != RW_INTEREST) return 0;
    size_t off = 0;
    rw_op op;
    while (rw_interest_next(f, len, &off, &op) == 1)
        sn->interest |= str_is(op.subject, "local.>") && op.queue.len == 0 && op.count == 1;
    return 0;
}

/* Reads what arrives on fd within timeout_ms and feeds it to ss; 0 when something was fed, -1
 * on a timeout; dies when n1 closes the connection or the session refuses what it sent. */
static int feed_some(int fd, session *ss, seen *sn, int timeout_ms, const char *what)
{
    static uint8_t buf[64 << 10];
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, timeout_ms) <= 0) return -1;
    ssize_t k = recv(fd, buf, sizeof buf, 0);
    if (k <= 0) die("%s: n1 closed the connection", what);
    if (session_feed(ss, buf, (size_t)k, on_frame, sn))
        die("%s: n0's session refused what n1 sent: %s", what, session_errmsg(ss));
    return 0;
}

/* Dials n1 as n0 and completes the handshake in the order the file's comment says; then reads
 * until n1 announced local.> on the link. */
static int open_link(int lport, const session_config *sc, session **out_ss, seen *sn)
{
    session *ss = session_new(sc);
    if (!ss) die("n0's session");
    const void *out;
    size_t hello_len, len;
    session_pending_out(ss, &out, &hello_len);
    if (!hello_len) die("n0's session queued no HELLO");

    /* n1's HELLO first: n0's session then queues its AUTH behind its own HELLO. */
    int p = dial(lport, 0);
    memset(sn, 0, sizeof *sn);
    for (len = hello_len; len == hello_len;) {
        if (feed_some(p, ss, sn, 10000, "n1's HELLO")) die("n1 sent no HELLO");
        session_pending_out(ss, &out, &len);
    }
    /* n0's HELLO and AUTH in one write: n1 opens its session on one read. */
    send_all(p, out, len);
    session_out_done(ss, len);

    /* n1's AUTH, then its frames: the interest announcement among them. */
    double until = now_s() + 10;
    while (!sn->interest && now_s() < until) (void)feed_some(p, ss, sn, 1000, "n1's AUTH");
    if (!session_peer_name(ss)) die("n0's session never opened");
    if (!sn->interest) die("n1 did not announce local.> on the link (%d frames)", sn->frames);
    *out_ss = ss;
    return p;
}

/* A URL frame (a harmless route frame) sealed by n0's session into out. */
static size_t sealed_url(session *ss, uint8_t *out, size_t cap)
{
    rw_build b;
    rw_build_init(&b);
    if (rw_build_url(&b, "nats://127.0.0.1:4999")) die("cannot build a URL frame");
    jr_iovec iov = {b.buf, b.len};
    size_t n = 0;
    if (session_seal(ss, &iov, 1, out, cap, &n)) die("n0's session cannot seal");
    rw_build_free(&b);
    return n;
}

/* Reads and drops what n1 sends until it closes the connection; dies if it does not within
 * 10 s. */
static void expect_link_closed(int fd, const char *what)
{
    static uint8_t buf[64 << 10];
    double until = now_s() + 10;
    while (now_s() < until) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 1000) <= 0) continue;
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k <= 0) return;
    }
    die("%s: n1 kept the link open", what);
}

/* Lines of n1's log containing `what`. */
static int log_count(const char *what)
{
    char logp[600], line[1024];
    snprintf(logp, sizeof logp, "%s/n1.log", base);
    FILE *f = fopen(logp, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f)) n += strstr(line, what) != NULL;
    if (f) fclose(f);
    return n;
}

static void expect_served(int c, rbuf *b, const char *what)
{
    b->n = 0;
    send_str(c, "PING\r\n");
    expect(c, b, "PONG\r\n", what);
}

/* n1 closes link p after `what` (n0's session ss is then freed) and serves its client c. */
static void refused(int p, session *ss, int c, rbuf *b, const char *what)
{
    expect_link_closed(p, what);
    close(p);
    session_free(ss);
    expect_served(c, b, what);
    printf("ok: %s closes the link\n", what);
}

int main(int argc, char **argv)
{
    procs_init(argc, argv, "securepeer", 90);
    int ports[4];
    pick_ports(ports, 4);
    int client_port = ports[0], lport = ports[1], http_port = ports[3];
    const char *names[2] = {"n0", "n1"};
    const int peer_ports[2] = {ports[2], lport};
    make_keys(names, 2, "C1");
    for (int i = 0; i < 2; i++) {
        char fields[700];
        snprintf(fields, sizeof fields,
                 "\"wal_dir\":\"%s/%s-wal\",\"authority\":\"auth.pub\",\"identity\":\"%s.key\","
                 "\"certificate\":\"%s.cert\",\"http_listen\":\"127.0.0.1:%d\",",
                 base, names[i], names[i], names[i], i ? http_port : ports[2] + 2);
        write_config(names[i], names[i], i ? client_port : ports[2] + 1, peer_ports[i], fields,
                     names, peer_ports, 2);
    }
    server_start(0, "n1");

    /* A client of n1 subscribed to local.>: n1 has interest to announce at link up. */
    rbuf b;
    int c = client_connect(client_port, NULL, NULL, &b);
    send_str(c, "SUB local.> 1\r\nPING\r\n");
    expect(c, &b, "PONG\r\n", "SUB local.>");

    /* n0's keys, read as the server reads them. */
    char path[600], err[300];
    snprintf(path, sizeof path, "%s/n0.json", base);
    static srv_config cfg;
    if (srv_config_load(path, &cfg, err, sizeof err)) die("n0's configuration: %s", err);
    session_config sc = {.cluster = "C1",
                         .name = "n0",
                         .expect_name = "n1",
                         .max_frame = cfg.max_frame_bytes,
                         .authority = cfg.authority,
                         .identity = cfg.identity,
                         .cert = cfg.cert,
                         .cert_len = cfg.cert_len};
    session *ss;
    seen sn;
    int p = open_link(lport, &sc, &ss, &sn);
    printf("ok: n1 sent its AUTH before any sealed frame (%d frames, the announcement among "
           "them)\n",
           sn.frames);
    if (log_count("refused")) die("n1 refused a connection");
    unsigned long long refused0 = metric_value(http_port, "n1", "peer_links_refused_total");
    if (refused0) die("n1 counts %llu refused links before any", refused0);

    /* A record n1 accepted, sent again: its secretstream is past it. */
    static uint8_t rec[4096];
    size_t n = sealed_url(ss, rec, sizeof rec);
    send_all(p, rec, n);
    expect_served(c, &b, "after the first copy of the record");
    int closed0 = log_count("closed the cluster connection from n0");
    send_all(p, rec, n);
    refused(p, ss, c, &b, "a replayed record");

    /* A record whose tag has one bit flipped, on a fresh link. */
    p = open_link(lport, &sc, &ss, &sn);
    n = sealed_url(ss, rec, sizeof rec);
    rec[n - 1] ^= 0x01;
    send_all(p, rec, n);
    refused(p, ss, c, &b, "a tampered record");

    if (log_count("closed the cluster connection from n0") != closed0 + 2)
        die("n1 did not log both refusals (%d lines, %d before)",
            log_count("closed the cluster connection from n0"), closed0);
    /* /metrics shows a round of the monitor's requests once all are answered: without a meta
     * leader (n0 is no server) each round takes as long as a request's timeout */
    unsigned long long refused = 0;
    for (double until = now_s() + 30; now_s() < until && refused != 2;)
        refused = metric_value(http_port, "n1", "peer_links_refused_total");
    if (refused != 2) die("n1 counts %llu refused links, expected 2", refused);
    printf("ok: n1 logged and counted both (jetraft_peer_links_refused_total %llu)\n", refused);

    /* An honest link comes up again and carries n1's announcement. */
    p = open_link(lport, &sc, &ss, &sn);
    close(p);
    session_free(ss);
    expect_served(c, &b, "at the end");
    printf("ok: an honest link from n0 comes up afterwards; n1's client was served throughout\n");

    close(c);
    srv_config_free(&cfg);
    servers_stop_all();
    printf("ok: n1 exited 0 on SIGTERM\n");
    return 0;
}
