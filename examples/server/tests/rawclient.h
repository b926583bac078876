/*
 * rawclient.h — a NATS client over a raw loopback socket, for tests that check the server's
 * bytes: connect, send, read until a text appears, and fail (die) when it does not.
 *
 * An rbuf holds what was read from one socket, NUL-terminated; when it fills, the older half is
 * dropped so that the tail (where a test looks for its reply) stays. Tests reset n to 0 before
 * a request whose reply they look for.
 */
#ifndef JR_SERVER_TESTS_RAWCLIENT_H
#define JR_SERVER_TESTS_RAWCLIENT_H

#include <stddef.h>

typedef struct rbuf {
    char d[1 << 16];
    size_t n;
    int eof; /* the peer closed the connection */
} rbuf;

/* A socket connected to 127.0.0.1:port, retried for 10 s (dies then); rcvbuf, if not 0, is
 * the socket's receive buffer size. */
int dial(int port, int rcvbuf);

/* Sends all n bytes (dies on an error). */
void send_all(int fd, const void *p, size_t n);
void send_str(int fd, const char *s);

/* Reads into b until `want` (if not NULL) appears in it, EOF, or timeout_ms passed; returns 1
 * if found, else 0. */
int read_until(int fd, rbuf *b, const char *want, int timeout_ms);

/* Reads until `want` appears within 10 s; dies naming `what` and showing what came. */
void expect(int fd, rbuf *b, const char *want, const char *what);

/* Reads until EOF within 6 s; dies naming `what` if the connection stays open. */
void expect_closed(int fd, rbuf *b, const char *what);

/* A client on port that said CONNECT (headers, no_responders; as user/pass unless user is
 * NULL, when the INFO must ask for them) and got its PONG; b is cleared. */
int client_connect(int port, const char *user, const char *pass, rbuf *b);

/* The counter or gauge jetraft_<name> of server `server` from the /metrics page on http_port,
 * as of now: /metrics shows the view the server took in its last complete once-a-second round,
 * so this waits for two. Dies if the page never shows it. */
unsigned long long metric_value(int http_port, const char *server, const char *name);

#endif
