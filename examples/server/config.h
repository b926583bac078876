/*
 * config.h — the server's configuration file: a JSON object read with jansson.
 *
 * Owns every string it holds (freed by srv_config_free). A file that does not parse, has a field
 * of the wrong type or value, or a field this version does not know is refused with a message
 * naming the field (or jansson's line and column for a syntax error); the server then does not
 * start. The format is documented in README.md next to this file.
 */
#ifndef SRV_CONFIG_H
#define SRV_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* One server of the cluster: its name and the host:port of its cluster listener. */
typedef struct srv_peer_addr {
    char *name;
    char *host;
    int port;
} srv_peer_addr;

typedef struct srv_config {
    char *name;
    char *cluster;
    char **tags;
    size_t ntags;
    char *client_host; /* "listen": where NATS clients connect */
    int client_port;
    char *cluster_host; /* "cluster_listen": where peers connect */
    int cluster_port;
    char *http_host; /* "http_listen": monitoring; NULL when absent */
    int http_port;
    srv_peer_addr *peers; /* every server, this one included, sorted by name */
    size_t npeers;
    char *wal_dir;
    char *store_dir;
    uint64_t max_store_bytes; /* capacity offered to placement; 0 unknown */
    uint32_t max_assets;
    char *unique_tag;
    int sync_interval; /* 0: fsync before every ack; 1: every sync_interval_ms */
    uint32_t sync_interval_ms;
    uint32_t election_timeout_ms;
    uint32_t heartbeat_ms;
    uint32_t request_timeout_ms;
    uint32_t max_payload;
    uint32_t max_frame_bytes;
    uint64_t peer_queue_bytes;   /* bound of each peer's send queue */
    uint64_t client_max_pending; /* bound of a client's unsent output (slow consumer) */
    uint32_t max_control_line;
    uint32_t max_connections;  /* client connections at once */
    uint32_t max_inflight;     /* publishes and API requests awaiting the node, server-wide */
    uint32_t ping_interval_ms; /* server PINGs each client this often; 2 unanswered: closed */
} srv_config;

/* Reads the file at path into cfg (zeroed first). Returns 0, or -1 with the reason in err. */
int srv_config_load(const char *path, srv_config *cfg, char *err, size_t errlen);
/* Parses JSON text (used by load and by the tests). */
int srv_config_parse(const char *text, srv_config *cfg, char *err, size_t errlen);
void srv_config_free(srv_config *cfg);
/* Splits "host:port" into a malloc'd host and a port; -1 if malformed. */
int srv_split_hostport(const char *s, char **host, int *port);

#endif
