/*
 * procs.c — the server processes: free loopback ports, one JSON configuration per server (its
 * peers reached through the proxy), start, health over HTTP, and reaping.
 *
 * Peer addresses: a server dials only the servers whose names sort after its own (peer.c), so
 * server a's entry for b (a < b) is the proxy's port for the pair, which forwards to b's
 * cluster port; its entries for the servers before it are never dialled and name their real
 * ports. Every server runs with JETRAFT_TEST_POWERLOSS set (the power-loss vfs of
 * examples/server/powervfs.c), so that SIGUSR1 cuts its power, and JETRAFT_TEST_CLOCK_FILE
 * naming <dir>/<name>.clock (examples/server/testclock.c), its wall clock's offset, and
 * JETRAFT_TEST_IOERR_FILE naming <dir>/<name>.ioerr, the I/O errors its vfs injects.
 *
 * A server that exits without the nemesis having killed it is a finding (checker
 * `server-exit`): it is reported with its status and started again so that the run goes on.
 * The exception is a server that refuses to open (status 1) while its vfs injects I/O errors:
 * it stays down until they end.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chaos.h"

static void pick_ports(int *out, int n)
{
    int fds[64];
    for (int i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
        socklen_t sl = sizeof sa;
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&sa, sizeof sa) ||
            getsockname(fds[i], (struct sockaddr *)&sa, &sl))
            die("cannot pick a free port: %s", strerror(errno));
        out[i] = ntohs(sa.sin_port);
    }
    for (int i = 0; i < n; i++) close(fds[i]);
}

/* Servers with secure peer links require keys unless configured "insecure_cluster": true;
 * the proxy needs the plain session (it drops whole frames, which a sealed stream would
 * refuse). A server built before secure links knows no such field and refuses unknown ones,
 * so the harness looks for the field's name in the server's binary. */
static int server_knows_insecure(void)
{
    FILE *f = fopen(C.server_bin, "rb");
    if (!f) return 0;
    static const char key[] = "insecure_cluster";
    size_t kl = sizeof key - 1, keep = 0, n;
    static char buf[65536];
    int found = 0;
    while (!found && (n = fread(buf + keep, 1, sizeof buf - keep, f)) > 0) {
        size_t have = keep + n;
        found = memmem(buf, have, key, kl) != NULL;
        keep = have < kl - 1 ? have : kl - 1; /* a name split across two reads */
        memmove(buf, buf + have - keep, keep);
    }
    fclose(f);
    return found;
}

static int insecure_field;

static void write_config(int i)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s.json", C.base, C.names[i]);
    FILE *f = fopen(path, "w");
    if (!f) die("cannot write %s", path);
    fprintf(f,
            "{\"name\":\"%s\",\"cluster\":\"chaos\",\"tags\":[\"az:%d\"],"
            "\"listen\":\"127.0.0.1:%d\",\"cluster_listen\":\"127.0.0.1:%d\","
            "\"http_listen\":\"127.0.0.1:%d\",\"wal_dir\":\"%s/%s/wal\","
            "\"store_dir\":\"%s/%s/store\",\"request_timeout_ms\":2000,%s%s\"peers\":{",
            C.names[i], i, C.client_port[i], C.cluster_port[i], C.http_port[i], C.base, C.names[i],
            C.base, C.names[i], insecure_field ? "\"insecure_cluster\":true," : "",
            C.sync_offload ? "\"sync_offload\":true," : "");
    for (int j = 0; j < C.n; j++) {
        int port = j == i ? C.cluster_port[i] : i < j ? C.proxy_port[i][j] : C.cluster_port[j];
        fprintf(f, "%s\"%s\":\"127.0.0.1:%d\"", j ? "," : "", C.names[j], port);
    }
    fprintf(f, "}}\n");
    fclose(f);
}

void procs_setup(void)
{
    int ports[64], k = 0;
    int need = 3 * C.n + C.n * (C.n - 1) / 2;
    pick_ports(ports, need);
    C.env_seed = C.seed * 1000003u;
    for (int i = 0; i < C.n; i++) {
        snprintf(C.names[i], sizeof C.names[i], "n%d", i);
        C.client_port[i] = ports[k++];
        C.cluster_port[i] = ports[k++];
        C.http_port[i] = ports[k++];
    }
    for (int a = 0; a < C.n; a++)
        for (int b = a + 1; b < C.n; b++) C.proxy_port[a][b] = ports[k++];
    insecure_field = server_knows_insecure();
    for (int i = 0; i < C.n; i++) {
        write_config(i);
        clock_set(i, 0);
        ioerr_set(i, "none");
    }
}

static void control_write(int i, const char *ext, const char *text);

/* Sets server i's wall-clock offset: the file its testclock reads every 100 ms. */
void clock_set(int i, long long offset_ms)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", offset_ms);
    control_write(i, "clock", text);
}

/* Rewrites a control file through a temporary name and a rename (never half a word read). */
static void control_write(int i, const char *ext, const char *text)
{
    char path[400], tmp[410];
    snprintf(path, sizeof path, "%s/%s.%s", C.base, C.names[i], ext);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) die("cannot write %s", tmp);
    fprintf(f, "%s\n", text);
    fclose(f);
    if (rename(tmp, path)) die("cannot rename %s", tmp);
}

void ioerr_set(int i, const char *mode)
{
    control_write(i, "ioerr", mode);
}

long long log_sum(int i, const char *needle)
{
    char path[400], line[2048];
    snprintf(path, sizeof path, "%s/%s.log", C.base, C.names[i]);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    long long sum = 0;
    while (fgets(line, sizeof line, f)) {
        const char *at = strstr(line, needle);
        if (at) sum += strtoll(at + strlen(needle), NULL, 10);
    }
    fclose(f);
    return sum;
}

int log_count(int i, const char *needle)
{
    char path[400], line[2048];
    snprintf(path, sizeof path, "%s/%s.log", C.base, C.names[i]);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle)) n++;
    fclose(f);
    return n;
}

/* Starts server i (smu held by the caller, or before any thread runs); a server removed from
 * the cluster stays down for good. */
void server_start(int i)
{
    if (C.removed[i]) return;
    char cfg[400], log[400], env[64];
    snprintf(cfg, sizeof cfg, "%s/%s.json", C.base, C.names[i]);
    snprintf(log, sizeof log, "%s/%s.log", C.base, C.names[i]);
    snprintf(env, sizeof env, "%llu",
             (unsigned long long)(C.env_seed + (uint64_t)C.starts[i]++ * 7919u + (uint64_t)i));
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        setenv("JETRAFT_TEST_POWERLOSS", env, 1);
        char clk[400];
        snprintf(clk, sizeof clk, "%s/%s.clock", C.base, C.names[i]);
        setenv("JETRAFT_TEST_CLOCK_FILE", clk, 1);
        snprintf(clk, sizeof clk, "%s/%s.ioerr", C.base, C.names[i]);
        setenv("JETRAFT_TEST_IOERR_FILE", clk, 1);
        execl(C.server_bin, C.server_bin, "-c", cfg, (char *)NULL);
        _exit(127);
    }
    C.pid[i] = pid;
    C.paused[i] = 0;
    C.ioerr_hit[i] = 0;
    C.expected_exit[i] = 0;
}

/* Async-signal-safe: used by the alarm handler too. */
void kill_all_servers(void)
{
    for (int i = 0; i < C.n; i++)
        if (C.pid[i] > 0) kill(C.pid[i], SIGKILL);
    for (int i = 0; i < C.n; i++)
        if (C.pid[i] > 0) {
            waitpid(C.pid[i], NULL, 0);
            C.pid[i] = 0;
        }
}

void procs_reap(void)
{
    pthread_mutex_lock(&C.smu);
    for (int i = 0; i < C.n; i++) {
        if (C.pid[i] <= 0) continue;
        int st = 0;
        if (waitpid(C.pid[i], &st, WNOHANG) != C.pid[i]) continue;
        C.pid[i] = 0;
        if (C.ioerr_on[i] && WIFEXITED(st) && WEXITSTATUS(st) == 1) {
            /* A server refuses to open on a disk that fails (its log says why): no finding;
             * the nemesis starts it again when the errors end. */
            C.ioerr_down[i] = 1;
            pthread_mutex_unlock(&C.smu);
            nemesis_note("%s could not open under injected I/O errors (exit status 1); it "
                         "starts again when they end",
                         C.names[i]);
            pthread_mutex_lock(&C.smu);
            continue;
        }
        if (WIFSIGNALED(st))
            violation("server-exit", "%s exited on its own: signal %d (log %s/%s.log)", C.names[i],
                      WTERMSIG(st), C.base, C.names[i]);
        else
            violation("server-exit", "%s exited on its own: status %d (log %s/%s.log)", C.names[i],
                      WEXITSTATUS(st), C.base, C.names[i]);
        server_start(i);
    }
    pthread_mutex_unlock(&C.smu);
}

/* Sends GET path to server i's monitoring port (2 s timeouts): the socket to read the answer
 * from, or -1 (nothing to close) if it could not connect or send (or path is too long). */
static int http_get(int i, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)C.http_port[i]),
                             .sin_addr.s_addr = htonl(0x7f000001)};
    char req[200];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (n <= 0 || (size_t)n >= sizeof req || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    return fd;
}

/* GET /healthz on server i: 1 if it answers 200; else 0 with the start of its answer. */
int server_healthy(int i, char *why, size_t cap)
{
    snprintf(why, cap, "no answer from /healthz");
    int fd = http_get(i, "/healthz");
    if (fd < 0) return 0;
    char buf[2048];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof buf - 1 && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = 0;
    int ok = len > 12 && !strncmp(buf + 9, "200", 3);
    if (!ok && len) {
        const char *body = strstr(buf, "\r\n\r\n");
        snprintf(why, cap, "%s", body ? body + 4 : buf);
        for (char *p = why; *p; p++)
            if (*p == '\n' || *p == '\r') *p = ' ';
    }
    close(fd);
    return ok;
}

char *http_fetch(int i, const char *path, size_t max)
{
    int fd = http_get(i, path);
    if (fd < 0) return NULL;
    char *buf = malloc(max + 1);
    size_t len = 0;
    ssize_t r = 0;
    while (buf && len < max && (r = read(fd, buf + len, max - len)) > 0) len += (size_t)r;
    close(fd);
    if (!buf) return NULL;
    buf[len] = 0;
    /* a whole 200 answer only: a cut or refused one says nothing */
    char *body = strstr(buf, "\r\n\r\n");
    if (len < 12 || strncmp(buf + 9, "200", 3) != 0 || !body || r > 0) {
        free(buf);
        return NULL;
    }
    memmove(buf, body + 4, strlen(body + 4) + 1);
    return buf;
}

/* GET path on server i's monitoring port, its whole answer written to <dir>/<name>.<ext>: what
 * a failing run leaves beside the logs (the groups' state when a stream has no leader). */
void http_save(int i, const char *path, const char *ext)
{
    int fd = http_get(i, path);
    if (fd < 0) return;
    char out[400], buf[8192];
    snprintf(out, sizeof out, "%s/%s.%s", C.base, C.names[i], ext);
    FILE *f = fopen(out, "w");
    if (f) {
        ssize_t r;
        while ((r = read(fd, buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)r, f);
        fclose(f);
    }
    close(fd);
}
