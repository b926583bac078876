/*
 * test_secure.c — jetraft-server's security over real processes and sockets: the key tool
 * (--keygen, --sign, --verify, --hash-password) round-trips; three servers with secure links
 * form a cluster and serve an R3 stream; a server whose certificate another authority signed
 * cannot join, nor can a server answering at another server's address (it proves another
 * name), and the cluster logs why and keeps serving; a certificate for another name stops a
 * server at start; clients need a configured user and password ('Authorization Violation'
 * otherwise, and 'Authentication Timeout' without CONNECT, as nats-server), and only a system user
 * may use the cluster subjects. An alarm bounds the run.
 *
 * Usage: test_server_secure PATH/TO/jetraft-server
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procs.h"
#include "rawclient.h"

#define NS 3

/* Slots: n1..n3 in 0..2, and a misconfigured server in 3. */
static int client_port[NS], cluster_port[NS];
static const char *names[NS] = {"n1", "n2", "n3"};

/* Occurrences of `what` in file (fixed string), or 0 if it cannot be read. */
static int count_in(const char *file, const char *what)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", base, file);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, what)) n++;
    fclose(f);
    return n;
}

static void wait_log(const char *file, const char *what, int more_than, const char *why)
{
    for (int i = 0; i < 300; i++) {
        if (count_in(file, what) > more_than) return;
        usleep(100000);
    }
    die("%s: \"%s\" never appeared in %s", why, what, file);
}

/* Writes <file>.json: server `name` with clients on cport, its cluster listener at lport, the
 * peers at the n1..n3 cluster ports (with `name` at lport), the given keys, and the users
 * line. */
static void write_secure_config(const char *file, const char *name, int cport, int lport,
                                const char *authority, const char *cert_prefix, const char *users)
{
    char fields[2000];
    snprintf(fields, sizeof fields,
             "\"wal_dir\":\"%s/%s-wal\",\"authority\":\"%s\",\"identity\":\"%s.key\","
             "\"certificate\":\"%s.cert\",\"election_timeout_ms\":500,\"heartbeat_ms\":50,%s",
             base, file, authority, name, cert_prefix, users);
    write_config(file, name, cport, lport, fields, names, cluster_port, NS);
}

/* Sends a request on fd (subscribed to _INBOX.s.>) and returns 1 if the reply has `want`
 * within timeout_ms. */
static int request(int fd, rbuf *b, const char *subject, const char *body, const char *want,
                   int timeout_ms)
{
    static int next = 1;
    char line[1024];
    snprintf(line, sizeof line, "PUB %s _INBOX.s.%d %zu\r\n%s\r\n", subject, next++, strlen(body),
             body);
    b->n = 0;
    b->d[0] = 0;
    send_str(fd, line);
    return read_until(fd, b, want, timeout_ms);
}

/* Publishes to t.x until the stream acknowledges (the cluster serves). */
static void publish_acked(int fd, rbuf *b, const char *what)
{
    for (int i = 0; i < 60; i++)
        if (request(fd, b, "t.x", "hello", "\"stream\":\"T\"", 2000)) return;
    die("%s: no PubAck (last: %.400s)", what, b->d);
}

int main(int argc, char **argv)
{
    procs_init(argc, argv, "secure", 200);
    signal(SIGPIPE, SIG_IGN);
    pick_cluster_ports(client_port, cluster_port, NS);
    const char *bin = server_bin;

    /* The key tool: keys, certificates, checks, and no overwriting. */
    make_keys(names, NS, "C1");
    if (run("'%s' --keygen authority rogue >/dev/null", bin)) die("--keygen authority");
    if (run("'%s' --sign --authority rogue.key --identity n3.pub --cluster C1 --name n3 --out "
            "rogue-n3.cert >/dev/null && '%s' --sign --authority auth.key --identity n3.pub "
            "--cluster C1 --name n2 --out n3-as-n2.cert >/dev/null",
            bin, bin))
        die("--sign of the bad certificates");
    if (run("'%s' --verify --authority auth.pub --certificate n1.cert --cluster C1 --name n1 "
            "| grep -q 'certificate for server n1 of cluster C1'",
            bin))
        die("--verify of a good certificate");
    if (run("'%s' --verify --authority auth.pub --certificate rogue-n3.cert --cluster C1 "
            "2>/dev/null",
            bin) != 1)
        die("--verify accepted a certificate of another authority");
    if (run("'%s' --verify --authority auth.pub --certificate n1.cert --cluster C2 2>/dev/null",
            bin) != 1)
        die("--verify accepted a certificate of another cluster");
    if (run("'%s' --verify --authority auth.pub --certificate n3-as-n2.cert --cluster C1 --name "
            "n3 2>/dev/null",
            bin) != 1)
        die("--verify accepted a certificate for another name");
    if (run("'%s' --sign --authority auth.pub --identity n1.pub --name n1 --out x.cert "
            "2>/dev/null",
            bin) != 1)
        die("--sign with a public authority key did not fail");
    if (run("cp n1.key n1.key.orig && ! '%s' --keygen identity n1 2>/dev/null && cmp -s n1.key "
            "n1.key.orig",
            bin))
        die("--keygen overwrote an existing key");
    char kpath[600];
    snprintf(kpath, sizeof kpath, "%s/auth.key", base);
    struct stat st;
    if (stat(kpath, &st) || (st.st_mode & 077)) die("a secret key file is readable by others");
    if (run("printf 'pw-app\\n' | '%s' --hash-password >app.hash && printf 'pw-sys\\n' | '%s' "
            "--hash-password >sys.hash && grep -q '^\\$argon2id\\$' app.hash",
            bin, bin))
        die("--hash-password");
    char app_hash[256] = "", sys_hash[256] = "", path[600];
    snprintf(path, sizeof path, "%s/app.hash", base);
    FILE *hf = fopen(path, "r");
    if (!hf || !fgets(app_hash, sizeof app_hash, hf)) die("cannot read app.hash");
    fclose(hf);
    snprintf(path, sizeof path, "%s/sys.hash", base);
    hf = fopen(path, "r");
    if (!hf || !fgets(sys_hash, sizeof sys_hash, hf)) die("cannot read sys.hash");
    fclose(hf);
    app_hash[strcspn(app_hash, "\n")] = 0;
    sys_hash[strcspn(sys_hash, "\n")] = 0;
    printf("ok: the key tool makes, signs and checks keys and password hashes\n");

    char users[1024];
    snprintf(users, sizeof users,
             "\"users\":[{\"user\":\"app\",\"password\":\"%s\"},"
             "{\"user\":\"sys\",\"password\":\"%s\",\"system\":true}],",
             app_hash, sys_hash);

    /* A certificate for another name: the server does not start, and says why. */
    write_secure_config("bad-name", "n3", client_port[2], cluster_port[2], "auth.pub", "n3-as-n2",
                        "");
    if (run("'%s' -c bad-name.json >bad-name.out 2>&1", bin) != 1 ||
        count_in("bad-name.out", "certificate: issued to \"n2\", not to this server (\"n3\")") != 1)
        die("a certificate for another name did not stop the server with its reason");
    printf("ok: a certificate for another name stops the server at start\n");

    /* Three servers with secure links form a cluster and serve an R3 stream. */
    for (int i = 0; i < NS; i++) {
        write_secure_config(names[i], names[i], client_port[i], cluster_port[i], "auth.pub",
                            names[i], users);
        server_start(i, names[i]);
    }
    wait_log("n1.log", "link to n2 up", 0, "secure link n1-n2");
    wait_log("n1.log", "link to n3 up", 0, "secure link n1-n3");
    wait_log("n2.log", "link to n3 up", 0, "secure link n2-n3");
    rbuf b;
    int c = client_connect(client_port[0], "app", "pw-app", &b);
    send_str(c, "SUB _INBOX.s.> 1\r\n");
    int created = 0;
    for (int i = 0; i < 60 && !created; i++) {
        created = request(c, &b, "$JS.API.STREAM.CREATE.T",
                          "{\"name\":\"T\",\"subjects\":[\"t.>\"],\"num_replicas\":3}",
                          "\"num_replicas\":3", 3000);
        if (!created) sleep(1);
    }
    if (!created) die("no R3 stream over secure links (last: %.400s)", b.d);
    publish_acked(c, &b, "R3 over secure links");
    printf("ok: three servers with secure links serve an R3 stream\n");

    /* Client authentication. */
    rbuf bb;
    int bad = dial(client_port[0], 0);
    memset(&bb, 0, sizeof bb);
    expect(bad, &bb, "\r\n", "INFO");
    send_str(bad, "CONNECT {\"verbose\":false,\"user\":\"app\",\"pass\":\"wrong\"}\r\nPING\r\n");
    expect(bad, &bb, "-ERR 'Authorization Violation'\r\n", "wrong password");
    read_until(bad, &bb, NULL, 5000);
    if (!bb.eof || strstr(bb.d, "PONG")) die("a wrong password got in: %s", bb.d);
    close(bad);
    bad = dial(client_port[0], 0);
    memset(&bb, 0, sizeof bb);
    send_str(bad, "CONNECT {\"verbose\":false,\"user\":\"nobody\",\"pass\":\"pw-app\"}\r\n");
    expect(bad, &bb, "-ERR 'Authorization Violation'\r\n",
           "unknown user with a known user's password");
    close(bad);
    bad = dial(client_port[0], 0);
    memset(&bb, 0, sizeof bb);
    send_str(bad, "PUB t.x 5\r\nhello\r\n");
    expect(bad, &bb, "-ERR 'Authorization Violation'\r\n", "PUB before CONNECT");
    read_until(bad, &bb, NULL, 5000);
    if (!bb.eof) die("a PUB before CONNECT did not close the connection");
    close(bad);
    bad = dial(client_port[0], 0);
    memset(&bb, 0, sizeof bb);
    expect(bad, &bb, "-ERR 'Authentication Timeout'\r\n", "no CONNECT");
    close(bad);
    wait_log("n1.log", "authorization violation (user \"app\": wrong password)", 0,
             "the log of a wrong password");
    /* The cluster subjects: refused to an ordinary user (the connection stays), answered to the
     * system user. */
    b.n = 0;
    send_str(c, "PUB $JS.API.META.LEADER.STEPDOWN _INBOX.s.x 2\r\n{}\r\nPING\r\n");
    expect(c, &b, "-ERR 'Permissions Violation for Publish to \"$JS.API.META.LEADER.STEPDOWN\"'",
           "META from an ordinary user");
    expect(c, &b, "PONG", "the connection after a permissions violation");
    rbuf bs;
    int sys = client_connect(client_port[0], "sys", "pw-sys", &bs);
    send_str(sys, "SUB _INBOX.s.> 1\r\n");
    if (!request(sys, &bs, "$JS.API.META.LEADER.STEPDOWN", "{}", "meta_leader_stepdown_response",
                 10000))
        die("META from the system user was not answered: %.400s", bs.d);
    close(sys);
    printf("ok: wrong passwords get Authorization Violation, cluster subjects need the system "
           "user\n");

    /* n3 with a certificate of another authority: refused by both peers, which log why; the
     * cluster keeps serving. */
    server_stop(2);
    write_secure_config("rogue", "n3", client_port[2], cluster_port[2], "rogue.pub", "rogue-n3",
                        users);
    server_start(3, "rogue");
    wait_log("n1.log",
             "refused a cluster connection to n3: certificate not signed by the cluster authority",
             0, "n1 refusing a certificate of another authority");
    wait_log("n2.log",
             "refused a cluster connection to n3: certificate not signed by the cluster authority",
             0, "n2 refusing a certificate of another authority");
    if (count_in("rogue.log", "link to n1 up") || count_in("rogue.log", "link to n2 up"))
        die("a server of another authority got a link");
    publish_acked(c, &b, "R3 with n3 refused");
    server_stop(3);
    printf("ok: a server of another authority cannot join; the cluster serves\n");

    /* A server answering at n2's address with its own (valid) certificate: n1 dialled n2, the
     * peer proves n3, and n1 refuses it. */
    server_stop(1);
    int before = count_in("n1.log", "refused a cluster connection to n2: certificate of another "
                                    "server name");
    write_secure_config("impostor", "n3", client_port[2], cluster_port[1], "auth.pub", "n3", users);
    server_start(3, "impostor");
    wait_log("n1.log", "refused a cluster connection to n2: certificate of another server name",
             before, "n1 refusing another server at n2's address");
    server_stop(3);
    printf("ok: a server at another server's address cannot claim its name\n");

    /* n2 and n3 back as themselves: the cluster is whole again. */
    int up2 = count_in("n1.log", "link to n2 up"), up3 = count_in("n1.log", "link to n3 up");
    server_start(1, "n2");
    server_start(2, "n3");
    wait_log("n1.log", "link to n2 up", up2, "n2 back");
    wait_log("n1.log", "link to n3 up", up3, "n3 back");
    publish_acked(c, &b, "the whole cluster again");
    close(c);
    for (int i = 0; i < NS; i++) server_stop(i);
    printf("ok: the cluster is whole again and stops cleanly\n");
    run("cd / && rm -rf '%s'", base);
    return 0;
}
