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
#include "timedvfs.h"

typedef struct peers peers;
typedef struct clients clients;
typedef struct sublist sublist;
typedef struct monitor monitor;
/* Upper bounds (ns) of the publish-to-ack latency buckets of srv_stats; the last bucket has none.
 */
#define PUB_LAT_BUCKETS 12
extern const uint64_t pub_lat_bounds_ns[PUB_LAT_BUCKETS - 1];

typedef struct routes routes;

/* Counters kept by the host (the node keeps its own: jr_node_stats). */
typedef struct srv_stats {
    uint64_t client_conns; /* accepted, ever */
    uint64_t client_msgs_in;
    uint64_t client_bytes_in;
    uint64_t client_msgs_out;
    uint64_t client_bytes_out;
    uint64_t slow_consumers;
    uint64_t client_out_allocs; /* client output buffers allocated or grown */
    uint64_t proto_errors;
    uint64_t js_publishes;  /* messages handed to jr_publish */
    uint64_t js_acks;       /* publishes acknowledged (stored or duplicate) */
    uint64_t js_pub_errors; /* publishes answered with an error */
    uint64_t js_api_requests;
    uint64_t js_api_errors;
    uint64_t peer_frames_dropped; /* the peer's send queue was full or the link down */
    /* cluster connections refused or closed for what they sent: a failed handshake, a frame
     * that does not open (tampered, replayed, reordered, truncated) or is too long, no
     * handshake in time */
    uint64_t peer_links_refused;
    uint64_t peer_connects;
    uint64_t route_msgs_out;        /* MSG route frames sent to peers */
    uint64_t route_msgs_in;         /* MSG route frames received and delivered here */
    uint64_t route_msgs_dropped;    /* not sent: the peer's send queue past half its bound */
    uint64_t route_frames_rejected; /* malformed route frames, interest past the bound */
    uint64_t wal_failures;          /* the node's WAL failed (each time: a close and a reopen) */
    uint64_t node_reopens;          /* the node reopened from disk after its WAL failed */
    uint64_t node_open_attempts;    /* reopens tried (each jr_node_open after a failure) */
    /* publish-to-ack latency of the acknowledged publishes (jspub.c): counts by bucket
     * (pub_lat_bounds_ns[i], the last one unbounded), their number and sum */
    uint64_t pub_lat_bucket[PUB_LAT_BUCKETS];
    uint64_t pub_lat_count, pub_lat_sum_ns;
} srv_stats;

typedef struct server {
    uv_loop_t *loop;
    srv_config cfg;
    jr_node *node; /* NULL while a failed node is closed and not yet reopened */
    jr_host host;
    jr_node_config nc; /* how the node is opened, kept for its reopen */
    char errbuf[600];  /* nc.errbuf */
    /* Recovery from a failed WAL (main.c): the node is closed on the loop turn after the
     * failure shows (outside every node call, as jr_node_close needs), then reopened from disk
     * after a jittered backoff that doubles up to a bound, retried while the open fails. While
     * wal_failed is set nothing ticks the node; while node is NULL JetStream requests get 503
     * (jsapi.c, jspub.c). An episode runs from a failure until the reopened node has run a
     * while without one: its log lines are said once each, with counts. */
    uv_timer_t reopen;          /* the close, each open attempt, then the episode's end */
    int wal_failed;             /* from a failure until a reopen succeeds */
    int episode;                /* an episode runs */
    int episode_reopened;       /* its first reopen was logged */
    int quiet_open;             /* a retried open runs: its errors are not logged again */
    uint32_t reopen_backoff_ms; /* the next attempt's bound before jitter */
    uint64_t reopen_attempts;   /* opens tried in this episode */
    uint64_t episode_failures;  /* failures in this episode */
    uint64_t failed_ns;         /* uv_hrtime() of the episode's first failure */
    /* The open failed with an error no retry mends (server_open_permanent): no more attempts;
     * the node stays closed, JetStream requests get 503 and /healthz says why (open_error). */
    int open_given_up;
    char open_error[800];
    /* The counters of the nodes closed before this one (each reopen starts the node's own
     * jr_node_stats at 0): server_node_stats adds them, so the host's totals never go back. */
    jr_node_stats node_base;
    timedvfs tvfs; /* the node's vfs: the POSIX one (or a test's), its syncs timed */
    /* The WAL's sync on libuv's threadpool (config sync_offload, jr_host.sync_start): one job
     * at a time, run by on_sync_work, reported to the node by on_sync_done on the loop. While
     * one is out the node is neither closed nor reopened: shutdown and reopen wait for it. */
    uv_work_t sync_req;
    jr_sync_job *sync_job; /* the job out, NULL if none */
    int sync_rc;
    int sync_shutdown; /* a shutdown waits for the job */
    uv_timer_t tick;   /* fires at jr_node_deadline */
    uint64_t armed;    /* deadline the timer is set for (UINT64_MAX: none) */
    uv_signal_t sigterm, sigint;
    peers *peers;
    clients *clients;
    sublist *subs;
    routes *routes; /* core NATS across the cluster (route.h) */
    monitor *mon;
    srv_stats stats;
    char server_id[24];
    char advertise[256]; /* this server's client URL for connect_urls ("" none: route.h) */
    int closing;
    uint64_t js_inflight; /* publishes and API requests handed to the node, not yet answered */
    uint64_t started_ns;  /* wall clock at start */
    /* The clocks the node reads (jr_host.now and .wall), held for the length of one read
     * callback (server_clock_hold): its publishes, many a read, read them once, as libuv's own
     * timers use one loop time per turn. Monotonic: each hold reads the clock afresh. */
    int clock_held;
    uint64_t held_now, held_wall;
} server;

/* Calls jr_node_tick when the node's deadline passed and arms the timer for the next one. Reads
 * (peer frames fed to jr_node_recv, client publishes) ask for it once at the end of their loop
 * turn (clients_kick_later); API calls made outside the node's callbacks call it at once (cheap
 * when nothing is due). */
void server_kick(server *s);
/* Holds the node's clocks at their current readings until the matching server_clock_release
 * (holds nest: an inner hold keeps the outer one's readings). */
void server_clock_hold(server *s);
void server_clock_release(server *s);

/* Called with what jr_node_tick or jr_node_recv returned when the node's WAL failed
 * (JR_EIO, JR_ENOSPC): logs it once, closes the node at the next loop turn and reopens it from
 * disk (see `reopen` above). Repeated calls in one episode do nothing. */
void server_node_failed(server *s, int rc);

/* The node's counters over this process's life: those of the node open now (none while it is
 * closed) plus those of every node closed before it; groups is the open node's. */
void server_node_stats(const server *s, jr_node_stats *out);

/* 1 if jr_node_open's error rc is one no retry mends: every error but JR_EIO, JR_ENOSPC and
 * JR_ENOMEM (a disk or memory that may recover), e.g. JR_EAUTH (the WAL was written under
 * another data key, or with or without one), JR_EINVAL (an invalid setting, or a wal_dir
 * holding another server's WAL), JR_EVERSION (files of an unknown format), JR_ECORRUPT (damage
 * recovery cannot repair). */
int server_open_permanent(int rc);

/* Delivers a message published by the server itself (an API reply, a PubAck, a 503 status) to
 * the local subscribers of subject. hdr may be NULL. */
void server_deliver(server *s, const char *subject, const void *hdr, size_t hdr_len,
                    const void *data, size_t len);

#endif
