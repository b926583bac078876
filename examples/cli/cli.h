/*
 * cli — the `jetraft` command line: a NATS client (libnats, jansson) of any server speaking the
 * JetStream API — jetraft-server, or nats-server — with the nats CLI's verbs and output.
 *
 * Owns: the connection (one per run), JetStream API requests and their error handling, the
 * number/size/duration formats every verb prints with, and the verb table. Each verb file
 * (stream.c, consumer.c, misc.c) holds its nouns' verbs; they return a process exit status (0
 * success, 1 an error, 2 a usage error or — `server check` — a critical finding) and print
 * their errors themselves.
 */
#ifndef JETRAFT_CLI_H
#define JETRAFT_CLI_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <nats/nats.h>

/* Options every verb sees. */
typedef struct cli {
    natsConnection *nc;
    int json;           /* --json: print the API's JSON instead of text */
    int64_t timeout_ms; /* --timeout: per request */
} cli;

/* Flag lookup over a verb's arguments: "--name value" or "--name=value". */
typedef struct args {
    int argc;
    char **argv;
} args;

/* The value of --name (NULL: absent). A flag given without a value is an error (exit 2). */
const char *arg_flag(const args *a, const char *name);
/* 1 if the boolean --name is present. */
int arg_bool(const args *a, const char *name);
/* The i-th positional argument (NULL: absent); flags and their values are skipped. */
const char *arg_pos(const args *a, int i);
/* Parses an integer flag with an optional K/M/G suffix (powers of 1024 for sizes); dflt when
 * absent. Exits 2 on a malformed value. */
int64_t arg_int(const args *a, const char *name, int64_t dflt);
/* Parses a duration flag ("500ms", "2s", "1m", "1h", "1d"; a bare number is seconds) into ns. */
int64_t arg_duration(const args *a, const char *name, int64_t dflt);

/* Sends a JetStream API request (subject after "$JS.API.", body NULL: empty) and returns its
 * parsed answer, or NULL after printing why (no responders, timeout, a permissions violation,
 * an API error with its description and codes; with --json the error object is also printed
 * on standard output). */
json_t *api(cli *c, const char *subject, json_t *body);
/* Prints why a request on subject failed with s (a timeout; a permissions violation the server
 * reported meanwhile is named as such). */
void request_failed(cli *c, const char *subject, natsStatus s);
/* Prints a JSON value indented (the --json output). */
void print_json(const json_t *j);

/* 1,234,567 */
void fmt_int(char *buf, size_t cap, int64_t v);
/* 1.2 KiB, 3.4 MiB ... */
void fmt_bytes(char *buf, size_t cap, uint64_t v);
/* 1.50s, 2m3s, 1h2m, 3d4h */
void fmt_duration(char *buf, size_t cap, int64_t ns);

/* Prints to out the "Cluster Information:" block of a stream or consumer info's "cluster" object
 * the way the nats CLI does (replica lines with current/outdated, seen, operations behind, and
 * the (pending) marker of a peer that is joining or leaving), with jetraft-server's "damaged",
 * "unvouched", "state machine failed" / "state machine rebuilding" where a replica's JSON says
 * damaged, unvouched, fsm_failed / fsm_rebuilding, as the library's jr_stream_info_format words
 * it. */
void print_cluster(FILE *out, const json_t *cluster);

int cmd_stream(cli *c, const char *verb, args *a);
int cmd_consumer(cli *c, const char *verb, args *a);
int cmd_pub(cli *c, args *a);
int cmd_sub(cli *c, args *a);
int cmd_server(cli *c, const char *verb, args *a);

#endif
