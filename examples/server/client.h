/*
 * client.h — NATS client connections: accept, INFO, the parsed operations (proto.h) applied to
 * the subscriptions (sublist.h), and each connection's output.
 *
 * Output is appended to the connection's buffer and written once per loop turn (a uv_check
 * handle, after the turn's reads), so a burst of messages costs one write; what a timer or another
 * callback appends after that check is written before the loop next waits for I/O (a uv_prepare
 * handle), never held until some later event wakes the loop. What a connection has not taken yet
 * (buffered plus in flight) is bounded by client_max_pending: past it the client is a slow consumer
 * and is disconnected, so a client that never reads costs bounded memory. Input is bounded the
 * other way round: while max_inflight publishes and API requests wait for the node, a client that
 * sends more is not read until half of them completed. A protocol error is answered with -ERR and
 * the connection is closed once that is written. The server PINGs every client each
 * ping_interval_ms and closes one that left two unanswered ('Stale Connection').
 */
#ifndef SRV_CLIENT_H
#define SRV_CLIENT_H

#include "server.h"
#include "sublist.h"

typedef struct client client;

int clients_start(server *s);
void clients_stop(server *s);
/* Frees what clients_start allocated, once the loop ended. */
void clients_free(server *s);
size_t clients_count(const server *s);
/* Asks for one server_kick at the end of this loop turn (the uv_check, after every read of the
 * turn is in and before the output is written): frames and publishes read in one turn then share
 * one flush of the node, hence one WAL write and one sync. */
void clients_kick_later(server *s);
/* Called when a request handed to the node completed: clients paused because too many were
 * in flight (max_inflight) read again once half of them completed. */
void clients_request_done(server *s);

/* Delivers a message to every local subscriber of subject (one per queue group); skips the
 * subscriptions of `except` (a client without echo). Returns how many received it. */
size_t clients_deliver(server *s, client *except, const char *subject, const char *reply,
                       const void *hdr, size_t hdr_len, const void *data, size_t len);
/* As clients_deliver, to the subscribers of `to` with the message's subject `subject` (a
 * consumer's delivery to a pull request's inbox or a push consumer's deliver subject). Both
 * also forward the message to the peers with matching interest (route.h); the count includes
 * each peer it was sent to. */
size_t clients_deliver_as(server *s, client *except, const char *to, const char *subject,
                          const char *reply, const void *hdr, size_t hdr_len, const void *data,
                          size_t len);
/* Delivers a message a peer forwarded (never forwarded again): to the plain subscribers of `to`
 * if plain, and to one member of each queue group for which want_queue(arg, name) is 1.
 * Returns how many received it. */
size_t clients_deliver_remote(server *s, const char *to, const char *subject, const char *reply,
                              const void *hdr, size_t hdr_len, const void *data, size_t len,
                              int plain, int (*want_queue)(void *arg, const char *queue),
                              void *arg);
/* 1 if a subscriber here or at a peer would receive a message on the literal subject. */
int clients_interest(const server *s, const char *subject);

#endif
