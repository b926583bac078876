/*
 * rawclient.c — a raw-socket NATS client for the server tests (see rawclient.h).
 */
#include "rawclient.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "procs.h"

int dial(int port, int rcvbuf)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (rcvbuf) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(0x7f000001)};
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) return fd;
        close(fd);
        usleep(100000);
    }
    die("cannot connect to port %d", port);
}

void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k <= 0) die("send: %s", strerror(errno));
        c += k;
        n -= (size_t)k;
    }
}

void send_str(int fd, const char *s)
{
    send_all(fd, s, strlen(s));
}

int read_until(int fd, rbuf *b, const char *want, int timeout_ms)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        b->d[b->n] = 0;
        if (want && strstr(b->d, want)) return 1;
        if (b->eof) return 0;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        long el = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
        if (el >= timeout_ms) return 0;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)(timeout_ms - el)) <= 0) continue;
        if (b->n >= sizeof b->d - 1) { /* keep the tail */
            memmove(b->d, b->d + sizeof b->d / 2, sizeof b->d / 2);
            b->n -= sizeof b->d / 2;
        }
        ssize_t k = recv(fd, b->d + b->n, sizeof b->d - 1 - b->n, 0);
        if (k <= 0)
            b->eof = 1;
        else
            b->n += (size_t)k;
    }
}

void expect(int fd, rbuf *b, const char *want, const char *what)
{
    if (!read_until(fd, b, want, 10000))
        die("%s: expected \"%s\", got \"%.600s\"%s", what, want, b->d, b->eof ? " then EOF" : "");
}

void expect_closed(int fd, rbuf *b, const char *what)
{
    read_until(fd, b, NULL, 6000);
    if (!b->eof) die("%s: the connection was not closed", what);
}

int client_connect(int port, const char *user, const char *pass, rbuf *b)
{
    int fd = dial(port, 0);
    memset(b, 0, sizeof *b);
    expect(fd, b, "\r\n", "INFO");
    char line[512];
    if (user) {
        if (!strstr(b->d, "\"auth_required\":true")) die("INFO without auth_required: %s", b->d);
        snprintf(line, sizeof line,
                 "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true,"
                 "\"user\":\"%s\",\"pass\":\"%s\"}\r\nPING\r\n",
                 user, pass);
    } else {
        snprintf(line, sizeof line,
                 "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\nPING\r\n");
    }
    send_str(fd, line);
    expect(fd, b, "PONG\r\n", "connect");
    b->n = 0;
    return fd;
}

unsigned long long metric_value(int http_port, const char *server, const char *name)
{
    usleep(2200000);
    char want[160];
    snprintf(want, sizeof want, "jetraft_%s{server=\"%s\"} ", name, server);
    for (int attempt = 0; attempt < 50; attempt++) {
        int fd = dial(http_port, 0);
        send_str(fd, "GET /metrics HTTP/1.0\r\n\r\n");
        rbuf b = {{0}, 0, 0};
        int ok = read_until(fd, &b, want, 2000);
        /* the value follows on the same line: read on until its end */
        while (ok && !strchr(strstr(b.d, want) + strlen(want), '\n'))
            ok = read_until(fd, &b, "\n# ", 2000);
        close(fd);
        if (ok) return strtoull(strstr(b.d, want) + strlen(want), NULL, 10);
        usleep(200000);
    }
    die("/metrics never showed %s", want);
}
