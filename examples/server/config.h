/*
 * config.h — the server's configuration file: a JSON object read with jansson.
 *
 * Owns every string it holds (freed by srv_config_free). A file that does not parse, has a field
 * of the wrong type or value, or a field this version does not know is refused with a message
 * naming the field (or jansson's line and column for a syntax error); the server then does not
 * start. The format is documented in README.md next to this file.
 *
 * Security material is read and checked here, so that a server with a bad key never starts:
 * the key and certificate files (text form, jr_link_text_encode) are decoded, the authority key
 * must be an authority key, the identity key an identity key pair, and the certificate must be
 * signed by the authority, for this cluster, for this server's name and for the identity key.
 * Relative file paths are taken from the configuration file's directory. Passwords are
 * libsodium crypto_pwhash_str strings, checked for their form; the clear text never appears.
 */
#ifndef SRV_CONFIG_H
#define SRV_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

/* One server of the cluster: its name and the host:port of its cluster listener. */
typedef struct srv_peer_addr {
    char *name;
    char *host;
    int port;
} srv_peer_addr;

/* A client user: its name, its password hash (crypto_pwhash_str), and whether it is a system
 * user (allowed the cluster operations: $JS.API.META.>, $JS.API.SERVER.>, $SYS.>). */
typedef struct srv_user {
    char *user;
    char *hash;
    int system;
} srv_user;

typedef struct srv_config {
    char *name;
    char *cluster;
    char **tags;
    size_t ntags;
    char *client_host;      /* "listen": where NATS clients connect */
    char *client_advertise; /* "client_advertise": the host:port other servers' clients are told
                               to reconnect to (INFO connect_urls); NULL: listen's, unless its
                               host is a wildcard (then none) */
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
    int sync_offload; /* 1: fdatasync on libuv's threadpool (jr_host.sync_start), not the loop */
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
    int huge_pages;            /* the library's large blocks on transparent huge pages */
    /* Peer links: secure (jr_link) with the three keys below, or plain if insecure_cluster. */
    int insecure_cluster;
    jr_link_key *authority;         /* "authority": the cluster authority's public key */
    jr_link_key *identity;          /* "identity": this server's identity key pair */
    uint8_t cert[JR_LINK_CERT_MAX]; /* "certificate": this server's, cert_len bytes */
    size_t cert_len;
    srv_user *users; /* "users": none means no client authentication */
    /* "data_key": the node key that encrypts the WAL, the stores and the snapshot files
     * (jr_node_config.key), read from a key file (--keygen data) */
    uint8_t data_key[JR_NODE_KEY_BYTES];
    int has_data_key;
    size_t nusers;
} srv_config;

/* Reads the file at path into cfg (zeroed first). Returns 0, or -1 with the reason in err. */
int srv_config_load(const char *path, srv_config *cfg, char *err, size_t errlen);
/* Parses JSON text (used by load and by the tests); relative paths are taken from dir (NULL:
 * the working directory). */
int srv_config_parse(const char *text, const char *dir, srv_config *cfg, char *err, size_t errlen);
void srv_config_free(srv_config *cfg);
/* Reads a key or certificate file in text form (base64, as the key tool writes it) into bin.
 * Returns 0, or -1 with the reason (naming the file) in err. */
int srv_read_text_file(const char *path, void *bin, size_t cap, size_t *len, char *err,
                       size_t errlen);
/* Splits "host:port" into a malloc'd host and a port; -1 if malformed. */
int srv_split_hostport(const char *s, char **host, int *port);

#endif
