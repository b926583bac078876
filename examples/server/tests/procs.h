/*
 * procs.h — the jetraft-server processes a server test runs, and how the test fails.
 *
 * Owns the path of the server binary (server_bin, from the command line), the run's temporary
 * directory (base), and a table of server processes by slot: pids[slot] is the running process
 * or 0, and each slot remembers the file name it last started (config base/<file>.json, log
 * base/<file>.log). die() and the run's alarm kill every process in the table; die() then
 * prints the last lines of every slot's log and where the files are, so that a failure on a CI
 * machine shows what the servers said. The helpers keep the table true: a slot is cleared when
 * its server is stopped, killed or found exited.
 *
 * Also: free loopback ports, shell commands in base, the cluster keys made with the server's
 * key tool, cluster configurations, and a monotonic clock. Single-threaded use only, except
 * die(), which a library thread may call (it exits the process).
 */
#ifndef JR_SERVER_TESTS_PROCS_H
#define JR_SERVER_TESTS_PROCS_H

#include <sys/types.h>

#define PROCS_MAX 8

extern const char *server_bin;
extern char base[256];
extern pid_t pids[PROCS_MAX];

/* Takes server_bin from the one argument (exits 2 with the usage otherwise), unbuffers stdout,
 * arms an alarm of limit_s seconds that kills every server and fails the test, and makes base,
 * /tmp/jetraft-<tag>-XXXXXX. */
void procs_init(int argc, char **argv, const char *tag, unsigned limit_s);

/* Prints "FAIL: <message>", kills every server, prints their log tails, and exits 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* SIGKILL to every server in the table (without waiting). */
void kill_all(void);

/* The last 25 lines of each started slot's log, to stderr. */
void print_log_tails(void);

/* Seconds on the monotonic clock. */
double now_s(void);

/* n (at most 16) free loopback ports: bound together, so they differ, then released. */
void pick_ports(int *out, int n);

/* 2n free loopback ports (n at most 8): client_port[i] and cluster_port[i] for server i. */
void pick_cluster_ports(int *client_port, int *cluster_port, int n);

/* The index of name among the n names (-1 if it is not there, or NULL). */
int name_index(const char *const *names, int n, const char *name);

/* Runs a shell command in base; returns its exit status (255 if it did not exit). */
int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The cluster keys, made with the key tool in base: an authority (auth.key, auth.pub), and for
 * each of the n names an identity (<name>.key, <name>.pub) and a certificate <name>.cert for
 * that name, in `cluster` unless it is NULL. */
void make_keys(const char *const *names, int n, const char *cluster);

/* Writes base/<file>.json: server `name` of cluster C1 with clients on cport and its cluster
 * listener on lport, then `fields` (JSON members each followed by a comma, or ""), then the n
 * peers names[j] at 127.0.0.1:ports[j], except `name` itself, at lport. */
void write_config(const char *file, const char *name, int cport, int lport, const char *fields,
                  const char *const *names, const int *ports, int n);

/* Starts server_bin -c base/<file>.json in slot, its output appended to base/<file>.log;
 * returns its pid, also kept in pids[slot]. */
pid_t server_start(int slot, const char *file);

/* SIGTERM to the slot's server; fails the test unless it exits 0. Clears the slot. */
void server_stop(int slot);

/* SIGTERM to every running server, then fails the test unless each exits 0. */
void servers_stop_all(void);

/* SIGKILL to the slot's server, and waits for it. Clears the slot. */
void server_kill(int slot);

/* Fails the test, naming the server, if one the test did not stop has exited (a crash or a
 * sanitizer report: its log says which). */
void servers_check_alive(void);

#endif
