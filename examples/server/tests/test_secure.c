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
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NS 3

static const char *server_bin;
static char base[256];
static pid_t pids[NS + 1]; /* n1..n3, and a misconfigured server */
static int client_port[NS], cluster_port[NS];
static const char *names[NS] = {"n1", "n2", "n3"};

static void kill_all(void)
{
    for (int i = 0; i <= NS; i++)
        if (pids[i] > 0) kill(pids[i], SIGKILL);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(files and logs in %s)\n", base);
    va_end(ap);
    kill_all();
    exit(1);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: the test ran out of time\n";
    if (write(2, msg, sizeof msg - 1) < 0) { /* nothing more to do */
    }
    kill_all();
    _exit(1);
}

static void pick_ports(int *out, int n)
{
    int fds[16];
    for (int i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
        socklen_t sl = sizeof sa;
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&sa, sizeof sa) ||
            getsockname(fds[i], (struct sockaddr *)&sa, &sl))
            die("cannot pick a free port");
        out[i] = ntohs(sa.sin_port);
    }
    for (int i = 0; i < n; i++) close(fds[i]);
}

/* Runs a shell command in base; returns its exit status. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int run(const char *fmt, ...)
{
    char cmd[4000];
    int n = snprintf(cmd, sizeof cmd, "cd '%s' && ", base);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd + n, sizeof cmd - (size_t)n, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

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

/* Writes conf/<file>.json: server `name` with clients on cport, its cluster listener at
 * lport, the peers at the n1..n3 cluster ports (with `name` at lport), the given keys, and the
 * users line. */
static void write_config(const char *file, const char *name, int cport, int lport,
                         const char *authority, const char *cert_prefix, const char *users)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s.json", base, file);
    FILE *f = fopen(path, "w");
    if (!f) die("cannot write %s", path);
    fprintf(f,
            "{\"name\":\"%s\",\"cluster\":\"C1\",\"listen\":\"127.0.0.1:%d\","
            "\"cluster_listen\":\"127.0.0.1:%d\",\"wal_dir\":\"%s/%s-wal\","
            "\"authority\":\"%s\",\"identity\":\"%s.key\",\"certificate\":\"%s.cert\","
            "\"election_timeout_ms\":500,\"heartbeat_ms\":50,%s\"peers\":{",
            name, cport, lport, base, file, authority, name, cert_prefix, users);
    for (int j = 0; j < NS; j++)
        fprintf(f, "%s\"%s\":\"127.0.0.1:%d\"", j ? "," : "", names[j],
                !strcmp(names[j], name) ? lport : cluster_port[j]);
    fprintf(f, "}}\n");
    fclose(f);
}

static pid_t start(const char *file)
{
    char cfg[600], log[600];
    snprintf(cfg, sizeof cfg, "%s/%s.json", base, file);
    snprintf(log, sizeof log, "%s/%s.log", base, file);
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execl(server_bin, server_bin, "-c", cfg, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void stop(pid_t *pid)
{
    kill(*pid, SIGTERM);
    int st = 0;
    if (waitpid(*pid, &st, 0) != *pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("a server did not exit 0 on SIGTERM (status %d)", st);
    *pid = 0;
}

/* ---- a raw NATS client ---------------------------------------------------------------------- */

typedef struct rbuf {
    char d[1 << 16];
    size_t n;
    int eof;
} rbuf;

static int dial(int port)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(0x7f000001)};
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) return fd;
        close(fd);
        usleep(100000);
    }
    die("cannot connect to port %d", port);
}

static void send_str(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
        if (k <= 0) die("send: %s", strerror(errno));
        s += k;
        n -= (size_t)k;
    }
}

static int read_until(int fd, rbuf *b, const char *want, int timeout_ms)
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
        if (b->n >= sizeof b->d - 1) die("reply too long");
        ssize_t k = recv(fd, b->d + b->n, sizeof b->d - 1 - b->n, 0);
        if (k <= 0)
            b->eof = 1;
        else
            b->n += (size_t)k;
    }
}

static void expect(int fd, rbuf *b, const char *want, const char *what)
{
    if (!read_until(fd, b, want, 10000))
        die("%s: expected \"%s\", got \"%.600s\"%s", what, want, b->d, b->eof ? " then EOF" : "");
}

/* Connects to port as user/pass and returns the socket once PONG came back. */
static int client(int port, const char *user, const char *pass, rbuf *b)
{
    int fd = dial(port);
    memset(b, 0, sizeof *b);
    expect(fd, b, "\r\n", "INFO");
    if (!strstr(b->d, "\"auth_required\":true")) die("INFO without auth_required: %s", b->d);
    char line[512];
    snprintf(line, sizeof line,
             "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true,\"user\":\"%s\","
             "\"pass\":\"%s\"}\r\nPING\r\n",
             user, pass);
    send_str(fd, line);
    expect(fd, b, "PONG\r\n", "connect");
    b->n = 0;
    return fd;
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
    if (argc != 2) {
        fprintf(stderr, "usage: %s PATH/TO/jetraft-server\n", argv[0]);
        return 2;
    }
    server_bin = argv[1];
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    alarm(200);
    snprintf(base, sizeof base, "/tmp/jetraft-secure-XXXXXX");
    if (!mkdtemp(base)) die("mkdtemp");
    int ports[2 * NS];
    pick_ports(ports, 2 * NS);
    for (int i = 0; i < NS; i++) {
        client_port[i] = ports[i];
        cluster_port[i] = ports[NS + i];
    }
    const char *bin = server_bin;

    /* The key tool: keys, certificates, checks, and no overwriting. */
    if (run("'%s' --keygen authority auth >/dev/null && '%s' --keygen authority rogue >/dev/null",
            bin, bin))
        die("--keygen authority");
    for (int i = 0; i < NS; i++)
        if (run("'%s' --keygen identity %s >/dev/null && '%s' --sign --authority auth.key "
                "--identity %s.pub --cluster C1 --name %s --out %s.cert >/dev/null",
                bin, names[i], bin, names[i], names[i], names[i]))
            die("--keygen identity / --sign for %s", names[i]);
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
    write_config("bad-name", "n3", client_port[2], cluster_port[2], "auth.pub", "n3-as-n2", "");
    if (run("'%s' -c bad-name.json >bad-name.out 2>&1", bin) != 1 ||
        count_in("bad-name.out", "certificate: issued to \"n2\", not to this server (\"n3\")") != 1)
        die("a certificate for another name did not stop the server with its reason");
    printf("ok: a certificate for another name stops the server at start\n");

    /* Three servers with secure links form a cluster and serve an R3 stream. */
    for (int i = 0; i < NS; i++) {
        write_config(names[i], names[i], client_port[i], cluster_port[i], "auth.pub", names[i],
                     users);
        pids[i] = start(names[i]);
    }
    wait_log("n1.log", "link to n2 up", 0, "secure link n1-n2");
    wait_log("n1.log", "link to n3 up", 0, "secure link n1-n3");
    wait_log("n2.log", "link to n3 up", 0, "secure link n2-n3");
    rbuf b;
    int c = client(client_port[0], "app", "pw-app", &b);
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
    int bad = dial(client_port[0]);
    memset(&bb, 0, sizeof bb);
    expect(bad, &bb, "\r\n", "INFO");
    send_str(bad, "CONNECT {\"verbose\":false,\"user\":\"app\",\"pass\":\"wrong\"}\r\nPING\r\n");
    expect(bad, &bb, "-ERR 'Authorization Violation'\r\n", "wrong password");
    read_until(bad, &bb, NULL, 5000);
    if (!bb.eof || strstr(bb.d, "PONG")) die("a wrong password got in: %s", bb.d);
    close(bad);
    bad = dial(client_port[0]);
    memset(&bb, 0, sizeof bb);
    send_str(bad, "CONNECT {\"verbose\":false,\"user\":\"nobody\",\"pass\":\"pw-app\"}\r\n");
    expect(bad, &bb, "-ERR 'Authorization Violation'\r\n", "unknown user");
    close(bad);
    bad = dial(client_port[0]);
    memset(&bb, 0, sizeof bb);
    send_str(bad, "PUB t.x 5\r\nhello\r\n");
    expect(bad, &bb, "-ERR 'Authorization Violation'\r\n", "PUB before CONNECT");
    read_until(bad, &bb, NULL, 5000);
    if (!bb.eof) die("a PUB before CONNECT did not close the connection");
    close(bad);
    bad = dial(client_port[0]);
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
    int sys = client(client_port[0], "sys", "pw-sys", &bs);
    send_str(sys, "SUB _INBOX.s.> 1\r\n");
    if (!request(sys, &bs, "$JS.API.META.LEADER.STEPDOWN", "{}", "meta_leader_stepdown_response",
                 10000))
        die("META from the system user was not answered: %.400s", bs.d);
    close(sys);
    printf("ok: wrong passwords get Authorization Violation, cluster subjects need the system "
           "user\n");

    /* n3 with a certificate of another authority: refused by both peers, which log why; the
     * cluster keeps serving. */
    stop(&pids[2]);
    write_config("rogue", "n3", client_port[2], cluster_port[2], "rogue.pub", "rogue-n3", users);
    pids[3] = start("rogue");
    wait_log("n1.log",
             "refused a cluster connection to n3: certificate not signed by the cluster authority",
             0, "n1 refusing a certificate of another authority");
    wait_log("n2.log",
             "refused a cluster connection to n3: certificate not signed by the cluster authority",
             0, "n2 refusing a certificate of another authority");
    if (count_in("rogue.log", "link to n1 up") || count_in("rogue.log", "link to n2 up"))
        die("a server of another authority got a link");
    publish_acked(c, &b, "R3 with n3 refused");
    stop(&pids[3]);
    printf("ok: a server of another authority cannot join; the cluster serves\n");

    /* A server answering at n2's address with its own (valid) certificate: n1 dialled n2, the
     * peer proves n3, and n1 refuses it. */
    stop(&pids[1]);
    int before = count_in("n1.log", "refused a cluster connection to n2: certificate of another "
                                    "server name");
    write_config("impostor", "n3", client_port[2], cluster_port[1], "auth.pub", "n3", users);
    pids[3] = start("impostor");
    wait_log("n1.log", "refused a cluster connection to n2: certificate of another server name",
             before, "n1 refusing another server at n2's address");
    stop(&pids[3]);
    printf("ok: a server at another server's address cannot claim its name\n");

    /* n2 and n3 back as themselves: the cluster is whole again. */
    int up2 = count_in("n1.log", "link to n2 up"), up3 = count_in("n1.log", "link to n3 up");
    pids[1] = start("n2");
    pids[2] = start("n3");
    wait_log("n1.log", "link to n2 up", up2, "n2 back");
    wait_log("n1.log", "link to n3 up", up3, "n3 back");
    publish_acked(c, &b, "the whole cluster again");
    close(c);
    for (int i = 0; i < NS; i++) stop(&pids[i]);
    printf("ok: the cluster is whole again and stops cleanly\n");
    run("cd / && rm -rf '%s'", base);
    return 0;
}
