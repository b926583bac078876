/*
 * procs.c — the server tests' processes, ports, keys, configurations and failure path (see
 * procs.h).
 */
#include "procs.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *server_bin;
char base[256];
pid_t pids[PROCS_MAX];
static char files[PROCS_MAX][64]; /* what each slot last started; "" if nothing */

void kill_all(void)
{
    for (int i = 0; i < PROCS_MAX; i++)
        if (pids[i] > 0) kill(pids[i], SIGKILL);
}

void print_log_tails(void)
{
    for (int i = 0; i < PROCS_MAX; i++) {
        if (!files[i][0]) continue;
        char cmd[1400];
        snprintf(cmd, sizeof cmd,
                 "echo '--- %s.log (last 25 lines)' >&2; tail -n 25 '%s/%s.log' >&2", files[i],
                 base, files[i]);
        if (system(cmd) != 0) fprintf(stderr, "(no log for %s)\n", files[i]);
    }
}

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    kill_all();
    print_log_tails();
    fprintf(stderr, "server logs are in %s\n", base);
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

void procs_init(int argc, char **argv, const char *tag, unsigned limit_s)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s PATH/TO/jetraft-server\n", argv[0]);
        exit(2);
    }
    server_bin = argv[1];
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGALRM, on_alarm);
    alarm(limit_s);
    snprintf(base, sizeof base, "/tmp/jetraft-%s-XXXXXX", tag);
    if (!mkdtemp(base)) die("mkdtemp: %s", strerror(errno));
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void pick_ports(int *out, int n)
{
    int fds[16];
    if (n > 16) die("pick_ports: %d ports asked, at most 16", n);
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

void pick_cluster_ports(int *client_port, int *cluster_port, int n)
{
    int ports[16];
    if (n > 8) die("pick_cluster_ports: %d servers, at most 8", n);
    pick_ports(ports, 2 * n);
    for (int i = 0; i < n; i++) {
        client_port[i] = ports[i];
        cluster_port[i] = ports[n + i];
    }
}

int name_index(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (name && !strcmp(names[i], name)) return i;
    return -1;
}

int run(const char *fmt, ...)
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

void make_keys(const char *const *names, int n, const char *cluster)
{
    if (run("'%s' --keygen authority auth >/dev/null", server_bin))
        die("the key tool failed to make the authority");
    for (int i = 0; i < n; i++)
        if (run("'%s' --keygen identity %s >/dev/null && '%s' --sign --authority auth.key "
                "--identity %s.pub%s%s --name %s --out %s.cert >/dev/null",
                server_bin, names[i], server_bin, names[i], cluster ? " --cluster " : "",
                cluster ? cluster : "", names[i], names[i]))
            die("the key tool failed to make %s's identity and certificate", names[i]);
}

void write_config(const char *file, const char *name, int cport, int lport, const char *fields,
                  const char *const *names, const int *ports, int n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s.json", base, file);
    FILE *f = fopen(path, "w");
    if (!f) die("cannot write %s", path);
    fprintf(f,
            "{\"name\":\"%s\",\"cluster\":\"C1\",\"listen\":\"127.0.0.1:%d\","
            "\"cluster_listen\":\"127.0.0.1:%d\",%s\"peers\":{",
            name, cport, lport, fields);
    for (int j = 0; j < n; j++)
        fprintf(f, "%s\"%s\":\"127.0.0.1:%d\"", j ? "," : "", names[j],
                !strcmp(names[j], name) ? lport : ports[j]);
    fprintf(f, "}}\n");
    fclose(f);
}

pid_t server_start(int slot, const char *file)
{
    char cfg[600], log[600];
    snprintf(cfg, sizeof cfg, "%s/%s.json", base, file);
    snprintf(log, sizeof log, "%s/%s.log", base, file);
    snprintf(files[slot], sizeof files[slot], "%s", file);
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
    pids[slot] = pid;
    return pid;
}

/* Waits for the slot's server, clears the slot, and fails the test unless it exited 0. */
static void reap_clean(int slot)
{
    int st = 0;
    pid_t pid = pids[slot];
    pids[slot] = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("%s did not exit 0 on SIGTERM (status %d)", files[slot], st);
}

void server_stop(int slot)
{
    kill(pids[slot], SIGTERM);
    reap_clean(slot);
}

void servers_stop_all(void)
{
    for (int i = 0; i < PROCS_MAX; i++)
        if (pids[i] > 0) kill(pids[i], SIGTERM);
    for (int i = 0; i < PROCS_MAX; i++)
        if (pids[i] > 0) reap_clean(i);
}

void server_kill(int slot)
{
    if (pids[slot] <= 0) return;
    kill(pids[slot], SIGKILL);
    waitpid(pids[slot], NULL, 0);
    pids[slot] = 0;
}

void servers_check_alive(void)
{
    for (int i = 0; i < PROCS_MAX; i++) {
        int st = 0;
        if (pids[i] > 0 && waitpid(pids[i], &st, WNOHANG) == pids[i]) {
            pids[i] = 0;
            die("server %s exited by itself (%s %d)", files[i],
                WIFSIGNALED(st) ? "signal" : "exit status",
                WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        }
    }
}
