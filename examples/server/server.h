/*
 * server.h — one jetraft-server process: the libuv loop, the node it hosts, its peer links, its
 * client connections and its counters. Every part runs on the loop's thread; the node is driven
 * only from there (timers, reads, signals), so it needs no locking.
 */
#ifndef SRV_SERVER_H
#define SRV_SERVER_H

#include <stdint.h>

#include <uv.h>

#include "jetraft.h"

#include "config.h"

typedef struct peers peers;
typedef struct clients clients;
typedef struct sublist sublist;
typedef struct monitor monitor;
typedef struct routes routes;

/* Counters kept by the host (the node keeps its own: jr_node_stats). */
typedef struct srv_stats {
    uint64_t client_conns; /* accepted, ever */
    uint64_t client_msgs_in;
    uint64_t client_bytes_in;
    uint64_t client_msgs_out;
    uint64_t client_bytes_out;
    uint64_t slow_consumers;
    uint64_t proto_errors;
    uint64_t js_publishes;  /* messages handed to jr_publish */
    uint64_t js_acks;       /* publishes acknowledged (stored or duplicate) */
    uint64_t js_pub_errors; /* publishes answered with an error */
    uint64_t js_api_requests;
    uint64_t js_api_errors;
    uint64_t peer_frames_dropped; /* the peer's send queue was full or the link down */
    uint64_t peer_frames_rejected;
    uint64_t peer_connects;
    uint64_t route_msgs_out;        /* MSG route frames sent to peers */
    uint64_t route_msgs_in;         /* MSG route frames received and delivered here */
    uint64_t route_msgs_dropped;    /* not sent: the peer's send queue past half its bound */
    uint64_t route_frames_rejected; /* malformed route frames, interest past the bound */
} srv_stats;

typedef struct server {
    uv_loop_t *loop;
    srv_config cfg;
    jr_node *node;
    jr_host host;
    uv_timer_t tick; /* fires at jr_node_deadline */
    uint64_t armed;  /* deadline the timer is set for (UINT64_MAX: none) */
    uv_signal_t sigterm, sigint;
    peers *peers;
    clients *clients;
    sublist *subs;
    routes *routes; /* core NATS across the cluster (route.h) */
    monitor *mon;
    srv_stats stats;
    char server_id[24];
    int closing;
    uint64_t js_inflight; /* publishes and API requests handed to the node, not yet answered */
    uint64_t started_ns;  /* wall clock at start */
} server;

/* Calls jr_node_tick when the node's deadline passed and arms the timer for the next one; the
 * host calls it after every jr_node_recv and API call too (cheap when nothing is due). */
void server_kick(server *s);

/* Delivers a message published by the server itself (an API reply, a PubAck, a 503 status) to
 * the local subscribers of subject. hdr may be NULL. */
void server_deliver(server *s, const char *subject, const void *hdr, size_t hdr_len,
                    const void *data, size_t len);

#endif
