/*
 * test_edges.c — one jetraft-server process under hostile and edge-case clients, over raw
 * sockets: the INFO line, split reads, pipelining, request-reply, no-responders, an oversized
 * payload, garbage on the client and the cluster ports, a client that never reads (bounded memory,
 * then disconnected), the JetStream API's errors and answers for a single-server stream and its
 * consumers (pull status lines, deliveries and acks byte by byte), the monitoring endpoints, and a
 * clean SIGTERM. The server must stay up and answer throughout.
 * An alarm bounds the run.
 *
 * Usage: test_server_edges PATH/TO/jetraft-server
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procs.h"
#include "rawclient.h"

/* One server, in slot 0 (config server.json, log server.log). */
static int client_port, cluster_port, http_port;

/* A client that said CONNECT (headers, no_responders) and got its PONG. */
static int client(rbuf *b)
{
    return client_connect(client_port, NULL, NULL, b);
}

static void request(int fd, rbuf *b, const char *subject, const char *body, const char *want,
                    const char *what)
{
    static int next = 100;
    char line[512];
    snprintf(line, sizeof line, "PUB %s _INBOX.c.%d %zu\r\n%s\r\n", subject, next++, strlen(body),
             body);
    b->n = 0;
    send_str(fd, line);
    expect(fd, b, want, what);
}

/* Reads until n occurrences of pat (shorter than 64 bytes) arrived or nothing came for 5 s;
 * returns how many. */
static int count_pat(int fd, const char *pat, int n)
{
    char buf[1 << 16];
    size_t have = 0, plen = strlen(pat);
    int acks = 0;
    while (acks < n) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 5000) <= 0) break;
        ssize_t k = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (k <= 0) break;
        have += (size_t)k;
        buf[have] = 0;
        for (char *q = buf; (q = strstr(q, pat)); q += plen) acks++;
        /* keep a tail shorter than the pattern: a match split across reads is counted once */
        size_t keep = have < plen - 1 ? have : plen - 1;
        memmove(buf, buf + have - keep, keep);
        have = keep;
    }
    return acks;
}

/* Reads PubAcks ("seq": in each) until n arrived or none came for 5 s; returns how many. */
static int count_acks(int fd, int n)
{
    return count_pat(fd, "\"seq\":", n);
}

/* The server's counter jetraft_<name> from /metrics (rawclient.h). */
static unsigned long long metric(const char *name)
{
    return metric_value(http_port, "solo", name);
}

/* Reads the seq of the PubAck just read into b. */
static unsigned long long acked_seq(rbuf *b)
{
    const char *p = strstr(b->d, "\"seq\":");
    if (!p) die("no seq in %s", b->d);
    return strtoull(p + 6, NULL, 10);
}

/* Sends a MSG.NEXT to consumer c1 with reply _INBOX.p.<n> and waits for `want`. */
static void pull(int fd, rbuf *b, const char *body, const char *want, const char *what)
{
    static int next = 1;
    char line[512];
    snprintf(line, sizeof line, "PUB $JS.API.CONSUMER.MSG.NEXT.ORDERS.c1 _INBOX.p.%d %zu\r\n%s\r\n",
             next++, strlen(body), body);
    b->n = 0;
    send_str(fd, line);
    expect(fd, b, want, what);
}

/* The ack subject of the delivery of stream seq `seq` in b (NULL if none). */
static const char *ack_of(rbuf *b, unsigned long long seq, char *out, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, ".%llu.", seq);
    for (const char *p = b->d; (p = strstr(p, "$JS.ACK.ORDERS.c1.")); p++) {
        const char *sp = strchr(p, ' ');
        if (!sp) break;
        /* delivered count, then the stream seq */
        const char *q = p + strlen("$JS.ACK.ORDERS.c1.");
        q = strchr(q, '.');
        if (q && !strncmp(q, pat, strlen(pat)) && q < sp) {
            snprintf(out, len, "%.*s", (int)(sp - p), p);
            return out;
        }
    }
    return NULL;
}

/* The consumer API on one server, byte by byte where clients parse bytes: create refusals with
 * their codes, pull status lines (404, 408 with the pending counts, 400, 409), deliveries with
 * their ack subjects, AckSync and double ack replies, +NXT, NAK and TERM, info, names, list,
 * an unknown consumer's MSG.NEXT (503), delete. The stream ORDERS exists and is empty. */
static void consumers(int c, rbuf *bb)
{
    request(c, bb, "$JS.API.CONSUMER.NAMES.ORDERS", "", "\"total\":0,\"offset\":0", "no names");
    if (!strstr(bb->d, "\"consumers\":[]")) die("names of none: %s", bb->d);
    request(c, bb, "$JS.API.CONSUMER.CREATE.ORDERS",
            "{\"stream_name\":\"ORDERS\",\"config\":{\"durable_name\":\"c1\"}}",
            "\"err_code\":10020", "a durable on the ephemeral subject");
    request(c, bb, "$JS.API.CONSUMER.CREATE.ORDERS.c1",
            "{\"stream_name\":\"ORDERS\",\"config\":{\"durable_name\":\"c2\"}}",
            "\"err_code\":10017", "a name that does not match the subject");
    request(c, bb, "$JS.API.CONSUMER.CREATE.ORDERS.c1.orders.x",
            "{\"stream_name\":\"ORDERS\",\"config\":{\"name\":\"c1\",\"filter_subject\":"
            "\"orders.y\"}}",
            "\"err_code\":10131", "a filter that does not match the subject");
    request(c, bb, "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.c1",
            "{\"stream_name\":\"ORDERS\",\"config\":{}}", "\"err_code\":10018",
            "a durable create without a durable name");
    request(c, bb, "$JS.API.CONSUMER.CREATE.ORDERS.w1.orders.*",
            "{\"stream_name\":\"ORDERS\",\"config\":{\"name\":\"w1\",\"ack_policy\":"
            "\"explicit\",\"filter_subject\":\"orders.*\"}}",
            "\"filter_subject\":\"orders.*\"", "a wildcard filter in the create subject");
    request(c, bb, "$JS.API.INFO", "", "\"consumers\":1,", "account info counts the consumer");
    request(c, bb, "$JS.API.CONSUMER.DELETE.ORDERS.w1", "", "\"success\":true", "delete w1");
    request(c, bb, "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.c1",
            "{\"stream_name\":\"OTHER\",\"config\":{\"durable_name\":\"c1\"}}",
            "\"err_code\":10056", "another stream in the body");
    request(
        c, bb, "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.c1",
        "{\"stream_name\":\"ORDERS\",\"config\":{\"durable_name\":\"c1\",\"ack_wait\":\"30s\"}}",
        "\"err_code\":10025", "a duration as a string");
    request(c, bb, "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.c1",
            "{\"stream_name\":\"ORDERS\",\"config\":{\"durable_name\":\"c1\",\"deliver_subject\":"
            "\"push.x\",\"flow_control\":true,\"idle_heartbeat\":1000000000}}",
            "push consumer flow control is not supported", "push flow control");
    request(c, bb, "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.c1",
            "{\"stream_name\":\"ORDERS\",\"config\":{\"durable_name\":\"c1\",\"ack_policy\":"
            "\"explicit\",\"idle_heartbeat\":1000000000}}",
            "\"err_code\":10088", "a heartbeat on a pull consumer");
    request(c, bb, "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.c1",
            "{\"stream_name\":\"ORDERS\",\"config\":{\"durable_name\":\"c1\",\"ack_policy\":"
            "\"explicit\",\"max_batch\":3}}",
            "consumer_create_response", "durable create");
    if (!strstr(bb->d, "\"name\":\"c1\"") || !strstr(bb->d, "\"max_batch\":3") ||
        !strstr(bb->d, "\"ack_wait\":30000000000") || !strstr(bb->d, "\"num_pending\":0") ||
        !strstr(bb->d, "\"delivered\":{\"consumer_seq\":0,\"stream_seq\":0}"))
        die("durable create: %s", bb->d);
    request(c, bb, "$JS.API.CONSUMER.CREATE.ORDERS.c1",
            "{\"stream_name\":\"ORDERS\",\"config\":{\"durable_name\":\"c1\",\"ack_policy\":"
            "\"explicit\",\"max_batch\":4},\"action\":\"create\"}",
            "\"err_code\":10148", "create of an existing one with another config");
    request(c, bb, "$JS.API.CONSUMER.CREATE.ORDERS.c9",
            "{\"stream_name\":\"ORDERS\",\"config\":{\"name\":\"c9\",\"ack_policy\":"
            "\"explicit\"},\"action\":\"update\"}",
            "\"err_code\":10149", "update of a missing one");
    request(c, bb, "$JS.API.CONSUMER.INFO.ORDERS.nope", "", "\"err_code\":10014",
            "info of an unknown consumer");
    request(c, bb, "$JS.API.CONSUMER.INFO.NOPE.c1", "", "\"err_code\":10059",
            "info of a consumer of an unknown stream");

    /* Pull requests on an empty stream: the status lines as nats-server writes them. */
    send_str(c, "SUB _INBOX.p.* 9\r\n");
    pull(c, bb, "{\"batch\":2,\"no_wait\":true}",
         "HMSG _INBOX.p.1 9 28 28\r\nNATS/1.0 404 No "
         "Messages\r\n\r\n\r\n",
         "no_wait on nothing");
    pull(c, bb, "{\"batch\":2,\"expires\":300000000}",
         "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 2\r\nNats-Pending-Bytes: "
         "0\r\n\r\n\r\n",
         "expiry");
    pull(c, bb, "{\"batch\":1,\"expires\":100000000,\"idle_heartbeat\":90000000}",
         "NATS/1.0 400 Bad Request - heartbeat value too large\r\n\r\n", "heartbeat too large");
    pull(c, bb, "{\"batch\":", "NATS/1.0 400 Bad Request - ", "bad JSON");
    pull(c, bb, "{\"batch\":5,\"no_wait\":true}", "NATS/1.0 409 Exceeded MaxRequestBatch of 3",
         "over max_batch");
    bb->n = 0;
    send_str(c, "PUB $JS.API.CONSUMER.MSG.NEXT.ORDERS.nope _INBOX.p.x 0\r\n\r\n");
    expect(c, bb, "HMSG _INBOX.p.x 9 16 16\r\nNATS/1.0 503\r\n\r\n", "an unknown consumer");

    /* Three messages: two in a filled batch (no status after them), then +NXT for the third. */
    request(c, bb, "orders.c", "m1", "\"seq\":", "publish m1");
    unsigned long long s1 = acked_seq(bb);
    request(c, bb, "orders.c", "m2", "\"seq\":", "publish m2");
    request(c, bb, "orders.c", "m3", "\"seq\":", "publish m3");
    char want[200];
    snprintf(want, sizeof want, "MSG orders.c 9 $JS.ACK.ORDERS.c1.1.%llu.2.", s1 + 1);
    pull(c, bb, "{\"batch\":2,\"expires\":5000000000}", want, "a batch of two");
    send_str(c, "PING\r\n");
    expect(c, bb, "PONG\r\n", "after the batch");
    if (strstr(bb->d, "NATS/1.0")) die("a status after a filled batch: %s", bb->d);
    snprintf(want, sizeof want, "MSG orders.c 9 $JS.ACK.ORDERS.c1.1.%llu.1.", s1);
    if (!strstr(bb->d, want) || !strstr(bb->d, " 2\r\nm1\r\n")) die("the batch: %s", bb->d);
    char a1[200], a2[200], a3[200], line[1024];
    if (!ack_of(bb, s1, a1, sizeof a1) || !ack_of(bb, s1 + 1, a2, sizeof a2))
        die("no ack subjects in %s", bb->d);
    /* AckSync: an empty reply once replicated; again (a double ack): answered too. */
    for (int i = 0; i < 2; i++) {
        bb->n = 0;
        snprintf(line, sizeof line, "PUB %s _INBOX.p.a%d 4\r\n+ACK\r\n", a1, i);
        send_str(c, line);
        snprintf(want, sizeof want, "MSG _INBOX.p.a%d 9 0\r\n\r\n", i);
        expect(c, bb, want, i ? "double ack" : "ack sync");
    }
    /* +NXT: acks the second and asks for one more on the ack's reply. */
    bb->n = 0;
    snprintf(line, sizeof line, "PUB %s _INBOX.p.n 16\r\n+NXT {\"batch\":1}\r\n", a2);
    send_str(c, line);
    snprintf(want, sizeof want, "MSG orders.c 9 $JS.ACK.ORDERS.c1.1.%llu.3.", s1 + 2);
    expect(c, bb, want, "+NXT");
    if (!strstr(bb->d, "MSG orders.c 9 $JS.ACK") || !ack_of(bb, s1 + 2, a3, sizeof a3))
        die("+NXT: %s", bb->d);
    /* NAK the third; the AckSync after it is applied after it: then the third comes again,
     * delivery 2. TERM it (AckSync): nothing is left. */
    snprintf(line, sizeof line, "PUB %s 4\r\n-NAK\r\nPUB %s _INBOX.p.b 4\r\n+ACK\r\n", a3, a1);
    bb->n = 0;
    send_str(c, line);
    expect(c, bb, "MSG _INBOX.p.b 9 0\r\n", "ack sync after a NAK");
    snprintf(want, sizeof want, "$JS.ACK.ORDERS.c1.2.%llu.4.", s1 + 2);
    pull(c, bb, "{\"batch\":1,\"no_wait\":true}", want, "the NAK redelivered");
    if (!ack_of(bb, s1 + 2, a3, sizeof a3)) die("no ack subject in %s", bb->d);
    bb->n = 0;
    snprintf(line, sizeof line, "PUB %s _INBOX.p.t 11\r\n+TERM gone.\r\n", a3);
    send_str(c, line);
    expect(c, bb, "MSG _INBOX.p.t 9 0\r\n", "term sync");
    pull(c, bb, "{\"batch\":1,\"no_wait\":true}", "NATS/1.0 404 No Messages", "nothing left");
    request(c, bb, "$JS.API.CONSUMER.INFO.ORDERS.c1", "", "consumer_info_response", "info");
    snprintf(want, sizeof want, "\"ack_floor\":{\"consumer_seq\":4,\"stream_seq\":%llu,", s1 + 2);
    if (!strstr(bb->d, want) || !strstr(bb->d, "\"num_ack_pending\":0") ||
        !strstr(bb->d, "\"num_pending\":0"))
        die("info after the acks: %s", bb->d);
    request(c, bb, "$JS.API.CONSUMER.NAMES.ORDERS", "", "\"consumers\":[\"c1\"]", "names");
    request(c, bb, "$JS.API.CONSUMER.LIST.ORDERS", "", "consumer_list_response", "list");
    if (!strstr(bb->d, "\"total\":1") || !strstr(bb->d, "\"name\":\"c1\"")) die("list: %s", bb->d);
    /* A waiting request whose client unsubscribed its inbox: the message that reaches it is
     * handed back at once (delivery 2 on the next request), not after its 30 s ack wait. */
    bb->n = 0;
    const char *wait_body = "{\"batch\":1,\"expires\":20000000000}";
    snprintf(line, sizeof line,
             "SUB _INBOX.gone 12\r\nPUB $JS.API.CONSUMER.MSG.NEXT.ORDERS.c1 _INBOX.gone "
             "%zu\r\n%s\r\nPING\r\n",
             strlen(wait_body), wait_body);
    send_str(c, line);
    expect(c, bb, "PONG\r\n", "a waiting request");
    send_str(c, "UNSUB 12\r\nPING\r\n");
    expect(c, bb, "PONG\r\nPONG\r\n", "its inbox unsubscribed");
    request(c, bb, "orders.c", "m4", "\"seq\":", "publish m4");
    unsigned long long s4 = acked_seq(bb);
    snprintf(want, sizeof want, "$JS.ACK.ORDERS.c1.2.%llu.", s4);
    int back = 0;
    for (int i = 0; i < 30 && !back; i++) {
        pull(c, bb, "{\"batch\":1,\"no_wait\":true}", " 9 ", "a pull after the inbox left");
        send_str(c, "PING\r\n"); /* the rest of the answer comes before the PONG */
        expect(c, bb, "PONG\r\n", "the answer to a pull");
        back = strstr(bb->d, want) != NULL;
        if (!back) usleep(100000);
    }
    if (!back) die("the delivery to a left inbox did not come back: %s", bb->d);
    /* Pause, resume, reset, unpin. */
    request(c, bb, "$JS.API.CONSUMER.PAUSE.ORDERS.c1", "{\"pause_until\":\"2200-01-01T00:00:00Z\"}",
            "\"paused\":true,\"pause_until\":\"2200-01-01T00:00:00.000000000Z\"", "pause");
    request(c, bb, "$JS.API.CONSUMER.INFO.ORDERS.c1", "", "\"paused\":true", "info while paused");
    request(c, bb, "$JS.API.CONSUMER.PAUSE.ORDERS.c1", "", "\"paused\":false", "resume");
    request(c, bb, "$JS.API.CONSUMER.PAUSE.ORDERS.c1", "{\"pause_until\":\"soon\"}",
            "\"err_code\":10025", "pause with a bad time");
    snprintf(line, sizeof line, "{\"seq\":%llu}", s1);
    snprintf(want, sizeof want, "\"reset_seq\":%llu", s1);
    request(c, bb, "$JS.API.CONSUMER.RESET.ORDERS.c1", line, want, "reset");
    snprintf(want, sizeof want, "$JS.ACK.ORDERS.c1.1.%llu.1.", s1);
    pull(c, bb, "{\"batch\":1,\"expires\":5000000000}", want, "the first after a reset");
    request(c, bb, "$JS.API.CONSUMER.UNPIN.ORDERS.c1", "{\"group\":\"g\"}", "\"error\"",
            "unpin on a consumer without priority groups");
    request(c, bb, "$JS.API.CONSUMER.LEADER.STEPDOWN.ORDERS.c1", "", "\"error\"",
            "stepdown of a single replica");
    request(c, bb, "$JS.API.CONSUMER.DELETE.ORDERS.c1", "", "\"success\":true", "delete");
    request(c, bb, "$JS.API.CONSUMER.DELETE.ORDERS.c1", "", "\"err_code\":10014", "delete again");
    send_str(c, "UNSUB 9\r\n");
    printf("ok: JetStream consumer API, pull statuses and acks\n");
}

/* Starts the server with the base config plus `extra` fields (",\"k\":v..." or ""). */
static void start_server(const char *extra)
{
    char cfg[400];
    snprintf(cfg, sizeof cfg, "%s/server.json", base);
    FILE *f = fopen(cfg, "w");
    if (!f) die("cannot write the config");
    fprintf(f,
            "{\"name\":\"solo\",\"listen\":\"127.0.0.1:%d\",\"cluster_listen\":\"127.0.0.1:%d\","
            "\"http_listen\":\"127.0.0.1:%d\",\"peers\":{\"solo\":\"127.0.0.1:%d\"},"
            "\"wal_dir\":\"%s/wal\",\"max_payload\":65536,\"client_max_pending\":1048576,"
            "\"authority\":\"auth.pub\",\"identity\":\"solo.key\",\"certificate\":\"solo.cert\","
            "\"max_inflight\":64%s}\n",
            client_port, cluster_port, http_port, cluster_port, base, extra);
    fclose(f);
    server_start(0, "server");
}

static long rss_kb(void)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pids[0]);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

static void http_get(const char *path, const char *want)
{
    for (int attempt = 0; attempt < 50; attempt++) {
        int fd = dial(http_port, 0);
        char req[256];
        snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", path);
        send_str(fd, req);
        rbuf b = {{0}, 0, 0};
        int ok = read_until(fd, &b, want, 2000);
        close(fd);
        if (ok) return;
        usleep(200000);
    }
    int fd = dial(http_port, 0);
    char req[256];
    snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", path);
    send_str(fd, req);
    rbuf b = {{0}, 0, 0};
    read_until(fd, &b, NULL, 2000);
    close(fd);
    die("GET %s never answered with \"%s\": %s", path, want, b.d);
}

int main(int argc, char **argv)
{
    procs_init(argc, argv, "edges", 120);
    signal(SIGPIPE, SIG_IGN);
    int ports[3];
    pick_ports(ports, 3);
    client_port = ports[0];
    cluster_port = ports[1];
    http_port = ports[2];
    /* A bad configuration: the server names the field and does not start. */
    {
        char bad[400], out[400], cmd[1200];
        snprintf(bad, sizeof bad, "%s/bad.json", base);
        snprintf(out, sizeof out, "%s/bad.out", base);
        FILE *bf = fopen(bad, "w");
        if (!bf) die("cannot write the bad config");
        fprintf(bf,
                "{\"name\":\"solo\",\"listen\":\"127.0.0.1:1\",\"cluster_listen\":"
                "\"127.0.0.1:2\",\n \"peers\":{\"solo\":\"127.0.0.1:2\"},\"wal_dir\":\"/tmp\",\n"
                " \"max_payload\" : \"1MB\"}\n");
        fclose(bf);
        snprintf(cmd, sizeof cmd, "'%s' -c '%s' >'%s' 2>&1", server_bin, bad, out);
        int st = system(cmd);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 1) die("a bad config did not exit 1 (%d)", st);
        snprintf(cmd, sizeof cmd, "grep -q 'line 3: max_payload: must be an integer' '%s'", out);
        if (system(cmd) != 0) die("the error does not name max_payload and its line");
        /* the second user's password: the line of the second "password" key */
        bf = fopen(bad, "w");
        if (!bf) die("cannot write the bad config");
        fprintf(bf,
                "{\"name\":\"solo\",\"listen\":\"127.0.0.1:1\",\"cluster_listen\":"
                "\"127.0.0.1:2\",\"peers\":{\"solo\":\"127.0.0.1:2\"},\"wal_dir\":\"/tmp\",\n"
                " \"users\":[{\"user\":\"a\",\"password\":\"%s\"},\n"
                "  {\"user\":\"b\",\n   \"password\":\"plain\"}]}\n",
                "$argon2id$v=19$m=65536,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$"
                "aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g");
        fclose(bf);
        snprintf(cmd, sizeof cmd, "'%s' -c '%s' >'%s' 2>&1", server_bin, bad, out);
        st = system(cmd);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 1) die("a bad config did not exit 1 (%d)", st);
        snprintf(cmd, sizeof cmd, "grep -q 'line 4: users\\[1\\].password' '%s'", out);
        if (system(cmd) != 0) die("the error does not name users[1].password and its line");
        printf("ok: a bad config names its line and field and exits 1\n");
    }
    static const char *const solo[] = {"solo"};
    make_keys(solo, 1, NULL);
    start_server("");
    /* INFO first, with the fields clients check. */
    rbuf b = {{0}, 0, 0};
    int fd = dial(client_port, 0);
    expect(fd, &b, " \r\n", "INFO line");
    if (strncmp(b.d, "INFO {", 6) || !strstr(b.d, "\"headers\":true") ||
        !strstr(b.d, "\"max_payload\":65536") || !strstr(b.d, "\"version\":\"2.9.10\""))
        die("INFO lacks a field: %s", b.d);
    /* Split reads and pipelining: a command cut in two, then several in one write. */
    b.n = 0;
    send_str(fd, "CONNECT {\"verbose\":true,\"headers\":true} \r\nPI");
    usleep(50000);
    send_str(fd, "NG\r\nSUB  a.*  5\r\nUNSUB 5 \r\nPING\r\n");
    expect(fd, &b, "+OK\r\nPONG\r\n+OK\r\n+OK\r\nPONG\r\n", "split and pipelined commands");
    close(fd);
    printf("ok: INFO, split and pipelined commands\n");

    /* Request-reply between two clients, wildcard and queue subscriptions. */
    rbuf ba, bb;
    int a = client(&ba), c = client(&bb);
    send_str(a, "SUB svc.* workers 1\r\nPING\r\n");
    expect(a, &ba, "PONG", "sub");
    ba.n = 0;
    send_str(c, "SUB _INBOX.c.* 9\r\nPUB svc.echo _INBOX.c.1 2\r\nhi\r\n");
    expect(a, &ba, "MSG svc.echo 1 _INBOX.c.1 2\r\nhi\r\n", "request delivered");
    send_str(a, "HPUB _INBOX.c.1 12 14\r\nNATS/1.0\r\n\r\nok\r\n");
    expect(c, &bb, "HMSG _INBOX.c.1 9 12 14\r\nNATS/1.0\r\n\r\nok\r\n", "reply delivered");
    /* No responders: nobody subscribes and no stream captures the subject. */
    bb.n = 0;
    send_str(c, "PUB nobody.here _INBOX.c.2 0\r\n\r\n");
    expect(c, &bb, "HMSG _INBOX.c.2 9 16 16\r\nNATS/1.0 503\r\n\r\n\r\n", "no responders");
    printf("ok: request-reply, queue group, no responders\n");

    /* An oversized payload: -ERR as nats-server, then closed; others unaffected. */
    rbuf bo;
    int o = client(&bo);
    send_str(o, "PUB big 65537\r\n");
    expect(o, &bo, "-ERR 'Maximum Payload Violation'\r\n", "oversized payload");
    expect_closed(o, &bo, "oversized payload");
    close(o);
    /* Garbage on the client port. */
    rbuf bg = {{0}, 0, 0};
    int g = dial(client_port, 0);
    send_all(g, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n", 20);
    expect(g, &bg, "-ERR 'Unknown Protocol Operation'", "garbage on the client port");
    expect_closed(g, &bg, "garbage on the client port");
    close(g);
    /* Garbage on the cluster port: an HTTP request reads as an oversized record length. */
    rbuf bc = {{0}, 0, 0};
    int cl = dial(cluster_port, 0);
    send_str(cl, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    expect_closed(cl, &bc, "garbage on the cluster port");
    close(cl);
    /* A plain (insecure) hello on the secure cluster port: refused, and logged. */
    cl = dial(cluster_port, 0);
    static const char hello[] = "\0\0\0\x1bjetraft-hello/1\njetraft\nzz\n";
    send_all(cl, hello, sizeof hello - 1);
    memset(&bc, 0, sizeof bc);
    expect_closed(cl, &bc, "plain hello on the secure port");
    close(cl);
    {
        char cmd[600];
        snprintf(cmd, sizeof cmd,
                 "grep -q 'refused a cluster connection from 127.0.0.1' '%s/server.log'", base);
        for (int i = 0; i < 50 && system(cmd) != 0; i++) usleep(100000);
        if (system(cmd) != 0) die("the refused cluster connection is not in the log");
    }
    bb.n = 0;
    send_str(c, "PING\r\n");
    expect(c, &bb, "PONG", "server still answers after the garbage");
    printf("ok: oversized payload, garbage on the client and cluster ports\n");

    /* A slow consumer: subscribes, never reads; a publisher sends far more than its bound. */
    rbuf bs;
    int s = client(&bs);
    send_str(s, "SUB flood 1\r\nPING\r\n");
    expect(s, &bs, "PONG", "slow consumer sub");
    rbuf bp;
    int p = client(&bp);
    static char payload[60000];
    memset(payload, 'x', sizeof payload);
    char hdr[64];
    int hl = snprintf(hdr, sizeof hdr, "PUB flood %zu\r\n", sizeof payload);
    for (int i = 0; i < 2000; i++) { /* 120 MB */
        send_all(p, hdr, (size_t)hl);
        send_all(p, payload, sizeof payload);
        send_str(p, "\r\n");
    }
    send_str(p, "PING\r\n");
    expect(p, &bp, "PONG", "publisher after the flood");
    long rss = rss_kb();
    /* The consumer's connection ends: after what was buffered for it, EOF. */
    memset(&bs, 0, sizeof bs);
    read_until(s, &bs, NULL, 10000);
    if (!bs.eof) die("the slow consumer was not disconnected");
    if (rss > 200 * 1024) die("the server grew to %ld KiB with a slow consumer", rss);
    printf("ok: slow consumer disconnected, server RSS %ld KiB\n", rss);
    close(s);
    close(p);

    /* JetStream on one server: create, publish with expectations and dedup, read, errors. */
    request(c, &bb, "$JS.API.INFO", "", "account_info_response", "account info");
    request(c, &bb, "$JS.API.STREAM.CREATE.EMPTY",
            "{\"name\":\"EMPTY\",\"subjects\":[\"empty.>\"]}", "\"first_seq\":0,",
            "a new stream starts at seq 0");
    request(c, &bb, "$JS.API.STREAM.UPDATE.EMPTY",
            "{\"name\":\"EMPTY\",\"subjects\":[\"empty.>\"],\"storage\":\"memory\"}",
            "\"description\":\"stream configuration update can not change storage type\"",
            "an update of the storage");
    request(c, &bb, "$JS.API.STREAM.MSG.DELETE.EMPTY", "{\"seq\":1}",
            "\"code\":500,\"err_code\":10057", "delete of a missing message");
    request(c, &bb, "$JS.API.STREAM.DELETE.EMPTY", "", "\"success\":true", "delete EMPTY");
    request(c, &bb, "$JS.API.STREAM.CREATE.ORDERS",
            "{\"name\":\"ORDERS\",\"subjects\":[\"orders.>\"],\"num_replicas\":1}",
            "\"did_create\":true", "stream create");
    request(c, &bb, "$JS.API.STREAM.CREATE.ORDERS",
            "{\"name\":\"ORDERS\",\"subjects\":[\"orders.>\"],\"num_replicas\":1}",
            "\"type\":\"io.nats.jetstream.api.v1.stream_create_response\"",
            "the same create again");
    expect(c, &bb, "}\r\n", "the same create again, whole");
    if (strstr(bb.d, "did_create")) die("the same create again says did_create: %s", bb.d);
    printf("ok: the same create again answers the info without did_create\n");
    request(c, &bb, "$JS.API.STREAM.CREATE.ORDERS", "{\"name\":\"OTHER\"}", "\"err_code\":10056",
            "name mismatch");
    request(c, &bb, "$JS.API.STREAM.CREATE.ORDERS",
            "{\"name\":\"ORDERS\",\"subjects\":[\"orders.>\"],\"max_msgs\":5}",
            "\"err_code\":10058", "create with another config");
    request(c, &bb, "$JS.API.STREAM.CREATE.X2", "{\"subjects\":[\"orders.x\"]}",
            "\"err_code\":10065", "overlapping subjects");
    request(c, &bb, "$JS.API.STREAM.CREATE.BAD", "{\"num_replicas\":\"3\"}", "\"err_code\":10025",
            "bad JSON types");
    request(c, &bb, "$JS.API.STREAM.INFO.NOPE", "", "\"err_code\":10059", "unknown stream");
    request(c, &bb, "orders.1", "one", "{\"stream\":\"ORDERS\",\"seq\":1}", "publish");
    bb.n = 0;
    send_str(c, "HPUB orders.1 _INBOX.c.50 29 32\r\nNATS/1.0\r\nNats-Msg-Id: m1\r\n\r\ntwo\r\n");
    expect(c, &bb, "{\"stream\":\"ORDERS\",\"seq\":2}", "publish with msg id");
    bb.n = 0;
    send_str(c, "HPUB orders.1 _INBOX.c.51 29 32\r\nNATS/1.0\r\nNats-Msg-Id: m1\r\n\r\ntwo\r\n");
    expect(c, &bb, "{\"stream\":\"ORDERS\",\"seq\":2,\"duplicate\":true}", "duplicate");
    bb.n = 0;
    send_str(c, "HPUB orders.2 _INBOX.c.52 44 47\r\nNATS/1.0\r\nNats-Expected-Last-Sequence: "
                "7\r\n\r\nbad\r\n");
    expect(c, &bb, "\"err_code\":10071,\"description\":\"wrong last sequence: 2\"",
           "expected last sequence");
    bb.n = 0;
    send_str(c, "HPUB orders.2 _INBOX.c.53 44 47\r\nNATS/1.0\r\nNats-Expected-Last-Msg-Id: "
                "zzz\r\n\r\nbad\r\n");
    expect(c, &bb, "\"err_code\":10070,\"description\":\"wrong last msg ID: m1\"",
           "expected last msg id");
    request(c, &bb, "$JS.API.STREAM.CREATE.LIM",
            "{\"name\":\"LIM\",\"subjects\":[\"lim.>\"],\"max_msgs\":1,\"discard\":\"new\"}",
            "\"did_create\":true", "create LIM");
    request(c, &bb, "lim.a", "one", "{\"stream\":\"LIM\",\"seq\":1}", "publish to LIM");
    request(c, &bb, "lim.a", "two",
            "\"code\":503,\"err_code\":10077,\"description\":\"maximum messages exceeded\"",
            "discard new at max_msgs");
    request(c, &bb, "$JS.API.STREAM.DELETE.LIM", "", "\"success\":true", "delete LIM");
    /* Far more publishes in one write than max_inflight: the client is paused, not refused;
     * every one is acknowledged. */
    {
        static char burst[2000 * 48];
        size_t bl = 0;
        for (int i = 0; i < 2000; i++)
            bl += (size_t)snprintf(burst + bl, sizeof burst - bl,
                                   "PUB orders.b _INBOX.c.%d 1\r\nx\r\n", 10000 + i);
        send_all(c, burst, bl);
        int acks = count_acks(c, 2000);
        if (acks != 2000) die("a burst of 2000 publishes got %d acks", acks);
        printf("ok: a burst of 2000 publishes over max_inflight 64, all acknowledged\n");
    }
    /* account info sums the streams: ORDERS's bytes are file storage */
    request(c, &bb, "$JS.API.INFO", "", "\"memory\":0,", "account info with a stream");
    if (strstr(bb.d, "\"storage\":0,") || !strstr(bb.d, "\"streams\":1,"))
        die("account info does not count ORDERS: %s", bb.d);
    /* A busy connection keeps its output buffer between loop turns: bursts that bring it more
     * than 64 KiB of output a turn (each message delivered to three subscriptions of its own)
     * grow it once, not again each turn. */
    {
        rbuf bk = {{0}, 0, 0};
        int k = client(&bk);
        send_str(k, "SUB big.x 71\r\nSUB big.x 72\r\nSUB big.* 73\r\nPING\r\n");
        expect(k, &bk, "PONG\r\n", "three subscriptions");
        static char bigburst[100 * 1040], body1k[1001];
        memset(body1k, 'p', sizeof body1k - 1);
        size_t bl = 0;
        for (int i = 0; i < 100; i++)
            bl += (size_t)snprintf(bigburst + bl, sizeof bigburst - bl, "PUB big.x 1000\r\n%s\r\n",
                                   body1k);
        unsigned long long a0 = 0;
        for (int round = 0; round < 4; round++) {
            if (round == 1) a0 = metric("client_out_allocs_total");
            send_all(k, bigburst, bl);
            int got = count_pat(k, "MSG big.x 7", 300);
            if (got != 300) die("a burst of 100 messages to 3 subscriptions: %d deliveries", got);
        }
        unsigned long long grown = metric("client_out_allocs_total") - a0;
        if (grown > 2) die("three bursts grew the client's output buffer %llu times", grown);
        printf("ok: three bursts of 300 KiB of output grew the output buffer %llu times\n", grown);
        close(k);
    }
    request(c, &bb, "$JS.API.STREAM.MSG.GET.ORDERS", "{\"seq\":2}",
            "\"subject\":\"orders.1\",\"seq\":2,\"hdrs\"", "msg get");
    request(c, &bb, "$JS.API.STREAM.MSG.GET.ORDERS", "{\"seq\":99999}", "\"err_code\":10037",
            "msg get of a missing seq");
    request(c, &bb, "$JS.API.STREAM.MSG.GET.ORDERS", "{\"seq\":2,\"next_by_subj\":\"orders.b\"}",
            "\"subject\":\"orders.b\",\"seq\":3,", "next by subject without allow_direct");
    /* Direct reads: refused (503) without allow_direct; with it, the message and its place. */
    request(c, &bb, "$JS.API.DIRECT.GET.ORDERS", "{\"seq\":2}", "NATS/1.0 503\r\n",
            "direct get without allow_direct");
    request(c, &bb, "$JS.API.STREAM.CREATE.D", "{\"subjects\":[\"d.>\"],\"allow_direct\":true}",
            "\"allow_direct\":true", "create a stream with allow_direct");
    bb.n = 0;
    send_str(c, "HPUB d.x _INBOX.c.60 19 21\r\nNATS/1.0\r\nK: v1\r\n\r\nhi\r\n");
    expect(c, &bb, "{\"stream\":\"D\",\"seq\":1}", "publish to D");
    request(c, &bb, "$JS.API.DIRECT.GET.D", "{\"seq\":1}",
            "NATS/1.0\r\nNats-Stream: D\r\nNats-Subject: d.x\r\nNats-Sequence: 1\r\n",
            "direct get by seq");
    if (!strstr(bb.d, "\r\nK: v1\r\n\r\nhi\r\n")) die("direct get lost the message: %s", bb.d);
    request(c, &bb, "$JS.API.DIRECT.GET.D.d.x", "", "Nats-Sequence: 1\r\n",
            "direct get of the last on a subject");
    request(c, &bb, "$JS.API.DIRECT.GET.D", "{\"seq\":7}", "NATS/1.0 404 Message Not Found",
            "direct get of a missing seq");
    request(c, &bb, "$JS.API.STREAM.DELETE.D", "", "\"success\":true", "delete D");
    /* A key-value bucket's stream: subjects under '$' are stored like any other. */
    request(c, &bb, "$JS.API.STREAM.CREATE.KV_b",
            "{\"name\":\"KV_b\",\"subjects\":[\"$KV.b.>\"],\"max_msgs_per_subject\":1,"
            "\"allow_direct\":true}",
            "\"did_create\":true", "create a key-value bucket's stream");
    request(c, &bb, "$KV.b.k", "v1", "{\"stream\":\"KV_b\",\"seq\":1}", "put a key");
    request(c, &bb, "$KV.b.k", "v2", "{\"stream\":\"KV_b\",\"seq\":2}", "put it again");
    request(c, &bb, "$JS.API.DIRECT.GET.KV_b.$KV.b.k", "", "Nats-Sequence: 2\r\n", "get the key");
    request(c, &bb, "$SYS.REQ.NOPE", "", "NATS/1.0 503\r\n", "a $SYS subject nobody serves");
    request(c, &bb, "$SYS.REQ.SERVER.PING", "", "\"active_servers\":1", "server ping");
    if (!strstr(bb.d, "\"id\":\"solo\"")) die("the ping's id is not the server's name: %s", bb.d);
    {
        /* SERVER.REMOVE takes the id the server's INFO gives as peer_id: this one is the last
         * server of its cluster (refused as such, not as an unknown server) */
        int fi = dial(client_port, 0);
        rbuf bi = {{0}, 0, 0};
        expect(fi, &bi, "\r\n", "INFO");
        close(fi);
        const char *ip = strstr(bi.d, "\"server_id\":\"");
        if (!ip) die("INFO without server_id: %s", bi.d);
        ip += strlen("\"server_id\":\"");
        char id[64], body[128];
        size_t n = strcspn(ip, "\"");
        if (n >= sizeof id) die("INFO server_id too long: %s", bi.d);
        memcpy(id, ip, n);
        id[n] = 0;
        snprintf(body, sizeof body, "{\"peer\":\"\",\"peer_id\":\"%s\"}", id);
        request(c, &bb, "$JS.API.SERVER.REMOVE", body, "\"code\":400", "remove by the INFO id");
        if (strstr(bb.d, "10044")) die("the INFO id is not a member's: %s", bb.d);
    }
    request(c, &bb, "$JS.API.STREAM.DELETE.KV_b", "", "\"success\":true", "delete KV_b");
    request(c, &bb, "$JS.API.STREAM.NAMES", "{\"subject\":\"orders.*\"}",
            "\"streams\":[\"ORDERS\"]", "names");
    request(c, &bb, "$JS.API.STREAM.LIST", "", "\"total\":1", "list");
    request(c, &bb, "$JS.API.STREAM.MSG.DELETE.ORDERS", "{\"seq\":1}", "\"success\":true",
            "msg delete");
    /* the details STREAM.INFO's body asks for: subjects with counts, deleted seqs */
    request(c, &bb, "$JS.API.STREAM.MSG.DELETE.ORDERS", "{\"seq\":3}", "\"success\":true",
            "msg delete inside");
    request(c, &bb, "$JS.API.STREAM.INFO.ORDERS", "{\"subjects_filter\":\">\"}",
            "\"subjects\":{\"orders.1\":1,\"orders.b\":1999}", "info with subjects");
    expect(c, &bb, "\"total\":2,\"offset\":0,\"limit\":100000", "info with subjects, paged");
    request(c, &bb, "$JS.API.STREAM.INFO.ORDERS", "{\"subjects_filter\":\"orders.*\",\"offset\":1}",
            "\"subjects\":{\"orders.b\":1999}", "info with subjects from an offset");
    request(c, &bb, "$JS.API.STREAM.INFO.ORDERS", "{\"deleted_details\":true}", "\"num_deleted\":1",
            "info with deleted details");
    expect(c, &bb, "\"deleted\":[3]", "info with deleted details, the seqs");
    request(c, &bb, "$JS.API.STREAM.INFO.ORDERS", "{\"subjects_filter\":\"orders..\"}",
            "\"err_code\":", "info with an invalid subjects filter");
    printf("ok: STREAM.INFO with subjects_filter, offset and deleted_details\n");
    request(c, &bb, "$JS.API.STREAM.LEADER.STEPDOWN.ORDERS",
            "{\"placement\":{\"preferred\":\"zz\"}}",
            "\"err_code\":10005,\"description\":\"preferred server \\\"zz\\\" not known\"",
            "stream step-down to an unknown server");
    request(c, &bb, "$JS.API.META.LEADER.STEPDOWN", "{\"placement\":{\"preferred\":\"zz\"}}",
            "\"err_code\":10005", "meta step-down to an unknown server");
    request(c, &bb, "$JS.API.STREAM.UPDATE.ORDERS",
            "{\"name\":\"ORDERS\",\"subjects\":[\"orders.>\"],\"max_msgs\":100}",
            "\"max_msgs\":100", "update");
    request(c, &bb, "$JS.API.STREAM.PURGE.ORDERS", "", "\"purged\":100", "purge");
    consumers(c, &bb);
    /* nats-server's JSInfo fields in /jsz: this server's usage (ORDERS alone is left, R1 here,
     * file storage) */
    http_get("/jsz", "\"accounts\": 1,");
    http_get("/jsz", "\"streams\": 1,");
    http_get("/jsz", "\"memory\": 0,");
    http_get("/jsz", "\"reserved_storage\": 0,");
    /* the catch-up lag of ORDERS, led here and without replicas */
    http_get("/metrics", "jetraft_stream_lag_entries{server=\"solo\",stream=\"ORDERS\"} 0\n");
    request(c, &bb, "$JS.API.STREAM.DELETE.ORDERS", "", "\"success\":true", "delete");
    printf("ok: JetStream stream API and PubAcks\n");

    http_get("/healthz", "\"status\":\"ok\"");
    http_get("/metrics", "jetraft_wal_syncs_total{server=\"solo\"}");
    /* every acknowledged publish is in the latency histogram, the last bucket holding them all */
    unsigned long long acks = metric("js_acks_total"), lat = metric("js_ack_latency_seconds_count");
    if (lat != acks || lat < 2000) die("ack latency count %llu, acks %llu", lat, acks);
    http_get("/metrics", "# TYPE jetraft_js_ack_latency_seconds histogram");
    /* every WAL sync is among the timed file syncs (with the stores' syncs) */
    unsigned long long fsyncs = metric("fsync_seconds_count"), wal = metric("wal_syncs_total");
    if (fsyncs < wal || wal == 0) die("%llu timed fsyncs, %llu WAL syncs", fsyncs, wal);
    http_get("/metrics", "jetraft_fsync_seconds_bucket{server=\"solo\",le=\"+Inf\"}");
    http_get("/jsz", "\"leader\": \"solo\"");
    /* its health as computed, no local replica unwell (each would be listed with its role,
     * damaged and fsm_failed) */
    http_get("/jsz", "\"unwell_replicas\": []");
    http_get("/jsz", "\"known\": true");
    printf("ok: /healthz, /metrics, /jsz\n");

    close(a);
    close(c);
    server_stop(0);
    printf("ok: SIGTERM, exit 0\n");

    /* Stale connections: with PINGs every 200 ms, a client that never answers is closed after
     * two; one that answers stays. */
    start_server(",\"ping_interval_ms\":200,\"huge_pages\":false");
    rbuf bq = {{0}, 0, 0}, bl = {{0}, 0, 0};
    int quiet = dial(client_port, 0);
    expect(quiet, &bq, "PING\r\n", "a server PING");
    expect(quiet, &bq, "-ERR 'Stale Connection'", "stale connection");
    expect_closed(quiet, &bq, "stale connection");
    int live = client(&bl);
    for (int i = 0; i < 6; i++) {
        bl.n = 0;
        expect(live, &bl, "PING\r\n", "PINGs to a live client");
        send_str(live, "PONG\r\n");
    }
    close(quiet);
    close(live);
    server_stop(0);
    printf("ok: stale connection closed, live one kept\n");

    /* Pulls served by the client's own server while it is otherwise quiet: each delivery is
     * written in the loop turn that made it, not held until the next socket event or node timer.
     * With heartbeats every 2 s the node's timers are far apart; twenty fetches one after the
     * other (ten of one message, ten no_wait on nothing) take milliseconds, and an answer held
     * until a timer would wait a heartbeat's remainder, half a heartbeat on average, so twenty
     * of them would take about ten heartbeats; the bound, five heartbeats, leaves a slow
     * (sanitized, loaded) machine a wide margin. */
    start_server(",\"heartbeat_ms\":2000,\"election_timeout_ms\":4000");
    rbuf bz = {{0}, 0, 0};
    int q = client(&bz);
    send_str(q, "SUB _INBOX.c.* 10\r\n");
    request(q, &bz, "$JS.API.STREAM.CREATE.Q", "{\"name\":\"Q\",\"subjects\":[\"q.>\"]}",
            "\"did_create\":true", "create Q");
    for (int i = 0; i < 10; i++) {
        char line[64];
        snprintf(line, sizeof line, "PUB q.x _INBOX.c.%d 1\r\n%d\r\n", 200 + i, i);
        bz.n = 0;
        send_str(q, line);
        expect(q, &bz, "\"seq\":", "publish to Q");
    }
    request(q, &bz, "$JS.API.CONSUMER.DURABLE.CREATE.Q.qc",
            "{\"stream_name\":\"Q\",\"config\":{\"durable_name\":\"qc\",\"ack_policy\":"
            "\"explicit\"}}",
            "consumer_create_response", "create qc");
    send_str(q, "SUB _INBOX.q.* 11\r\n");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 1; i <= 20; i++) {
        char line[160], want[64];
        /* one message each, then no_wait on what is left: nothing, a 404 once the barrier
         * passed */
        const char *body =
            i <= 10 ? "{\"batch\":1,\"expires\":30000000000}" : "{\"batch\":1,\"no_wait\":true}";
        snprintf(line, sizeof line, "PUB $JS.API.CONSUMER.MSG.NEXT.Q.qc _INBOX.q.%d %zu\r\n%s\r\n",
                 i, strlen(body), body);
        if (i <= 10)
            snprintf(want, sizeof want, "$JS.ACK.Q.qc.1.%d.%d.", i, i);
        else
            snprintf(want, sizeof want, "NATS/1.0 404 No Messages");
        bz.n = 0;
        send_str(q, line);
        if (!read_until(q, &bz, want, 10000))
            die("fetch %d of a quiet server: no answer within five heartbeats: %.300s", i, bz.d);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    if (ms >= 10000) die("twenty fetches of a quiet server took %ld ms (a heartbeat is 2000)", ms);
    close(q);
    server_stop(0);
    printf("ok: twenty fetches of a quiet server in %ld ms, none waiting for a timer\n", ms);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
    return 0;
}
