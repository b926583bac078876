/*
 * natsclient.h — the nats.c (libnats) connection the server tests that use libnats open to
 * their cluster. Dies (procs.h) when it cannot connect.
 */
#ifndef JR_SERVER_TESTS_NATSCLIENT_H
#define JR_SERVER_TESTS_NATSCLIENT_H

#include <nats/nats.h>

/* A connection to the n (at most 16) servers at 127.0.0.1:client_port[i], tried in that order,
 * that reconnects for as long as the test runs (100 ms between tries, 2 s timeouts; a failed
 * first connect retried too if retry_first). Its options go to *opts, for the caller to destroy
 * after the connection. */
natsConnection *connect_cluster(const int *client_port, int n, int retry_first, natsOptions **opts);

#endif
