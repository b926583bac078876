/*
 * monitor.c — HTTP monitoring (see monitor.h).
 */
#include "monitor.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "client.h"
#include "peer.h"

#define MAX_SERVERS 64

typedef struct snap {
    jr_node_stats node;
    srv_stats host;
    int have_meta;
    char meta_leader[256];
    size_t nservers;
    struct {
        char name[256];
        int current, offline;
        uint64_t lag;
    } servers[MAX_SERVERS];
    uint64_t streams;
    size_t clients, subs;
    int peers_up, peers_total;
    uint64_t now_ns;
} snap;

struct monitor {
    server *s;
    struct MHD_Daemon *d;
    uv_timer_t timer;
    pthread_mutex_t mu;
    snap cur;  /* read by the HTTP thread under mu */
    snap next; /* being filled on the loop thread */
    int meta_pending;
};

static void on_meta(void *arg, int status, const char *msg, const jr_meta_info *info)
{
    monitor *m = arg;
    (void)msg;
    m->meta_pending = 0;
    snap *n = &m->next;
    n->have_meta = status == 0 && info && info->leader;
    snprintf(n->meta_leader, sizeof n->meta_leader, "%s", info && info->leader ? info->leader : "");
    n->nservers = 0;
    for (size_t i = 0; info && i < info->nservers && i < MAX_SERVERS; i++) {
        const jr_server_info *si = info->servers[i];
        snprintf(n->servers[i].name, sizeof n->servers[i].name, "%s", si->name);
        n->servers[i].current = si->current;
        n->servers[i].offline = si->offline;
        n->servers[i].lag = si->lag;
        n->nservers++;
    }
    n->streams = info ? info->nstreams : 0;
}

/* Once a second on the loop thread: publish what was gathered, then ask for the next view. */
static void on_timer(uv_timer_t *t)
{
    monitor *m = t->data;
    server *s = m->s;
    if (!s->node) return;
    snap *n = &m->next;
    n->node.size = sizeof n->node;
    jr_node_stats_get(s->node, &n->node);
    n->host = s->stats;
    n->clients = clients_count(s);
    n->subs = 0;
    n->peers_up = peers_connected(s);
    n->peers_total = (int)s->cfg.npeers - 1;
    n->now_ns = uv_hrtime();
    pthread_mutex_lock(&m->mu);
    m->cur = *n;
    pthread_mutex_unlock(&m->mu);
    if (!m->meta_pending && jr_meta_info_get(s->node, on_meta, m) == 0) m->meta_pending = 1;
    server_kick(s);
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type,
                               char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static char *render_metrics(const snap *c, const char *name)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
#define M(metric, help, type, val)                                                                 \
    fprintf(f,                                                                                     \
            "# HELP jetraft_" metric " " help "\n# TYPE jetraft_" metric " " type "\n"             \
            "jetraft_" metric "{server=\"%s\"} %" PRIu64 "\n",                                     \
            name, (uint64_t)(val))
    M("js_publishes_total", "Messages handed to the library's publish.", "counter",
      c->host.js_publishes);
    M("js_acks_total", "Publishes acknowledged after commit.", "counter", c->host.js_acks);
    M("js_publish_errors_total", "Publishes answered with an error.", "counter",
      c->host.js_pub_errors);
    M("js_api_requests_total", "JetStream API requests.", "counter", c->host.js_api_requests);
    M("js_api_errors_total", "JetStream API requests answered with an error.", "counter",
      c->host.js_api_errors);
    M("wal_syncs_total", "WAL fsyncs.", "counter", c->node.wal_syncs);
    M("wal_bytes_total", "Bytes written to the WAL.", "counter", c->node.wal_bytes);
    M("frames_sent_total", "Peer frames sent.", "counter", c->node.frames_sent);
    M("frames_received_total", "Peer frames received.", "counter", c->node.frames_received);
    M("frames_rejected_total", "Peer frames rejected by the node.", "counter",
      c->node.frames_rejected);
    M("frames_dropped_total", "Peer frames dropped: queue full or link down.", "counter",
      c->host.peer_frames_dropped);
    M("peer_bytes_sent_total", "Bytes sent to peers.", "counter", c->node.bytes_sent);
    M("peer_bytes_received_total", "Bytes received from peers.", "counter", c->node.bytes_received);
    M("groups", "Raft groups open on this server.", "gauge", c->node.groups);
    M("peers_connected", "Peers with an established link.", "gauge", c->peers_up);
    M("clients", "Client connections.", "gauge", c->clients);
    M("client_msgs_in_total", "Messages published by clients.", "counter", c->host.client_msgs_in);
    M("client_msgs_out_total", "Messages delivered to clients.", "counter",
      c->host.client_msgs_out);
    M("slow_consumers_total", "Clients disconnected as slow consumers.", "counter",
      c->host.slow_consumers);
    M("meta_leader", "1 if this server is the meta leader.", "gauge",
      c->have_meta && !strcmp(c->meta_leader, name));
    M("streams", "Streams in the meta state.", "gauge", c->streams);
#undef M
    fclose(f);
    return buf;
}

static char *render_jsz(const snap *c, const server *s)
{
    json_t *servers = json_array();
    for (size_t i = 0; i < c->nservers; i++)
        json_array_append_new(servers,
                              json_pack("{s:s,s:b,s:b,s:I}", "name", c->servers[i].name, "current",
                                        c->servers[i].current, "offline", c->servers[i].offline,
                                        "lag", (json_int_t)c->servers[i].lag));
    json_t *j = json_pack(
        "{s:s,s:s,s:I,s:I,s:I,s:{s:s,s:s?,s:o,s:I},s:{s:I,s:I,s:I,s:I,s:I}}", "server_id",
        s->server_id, "server_name", s->cfg.name, "streams", (json_int_t)c->streams, "messages_in",
        (json_int_t)c->host.js_acks, "api_requests", (json_int_t)c->host.js_api_requests,
        "meta_cluster", "name", s->cfg.cluster, "leader", c->have_meta ? c->meta_leader : NULL,
        "replicas", servers, "cluster_size", (json_int_t)s->cfg.npeers, "node", "groups",
        (json_int_t)c->node.groups, "wal_syncs", (json_int_t)c->node.wal_syncs, "frames_sent",
        (json_int_t)c->node.frames_sent, "frames_received", (json_int_t)c->node.frames_received,
        "frames_rejected", (json_int_t)c->node.frames_rejected);
    char *txt = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    return txt;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    monitor *m = cls;
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;
    if (strcmp(method, "GET")) return respond(conn, 405, "text/plain", strdup("GET only\n"));
    snap c;
    pthread_mutex_lock(&m->mu);
    c = m->cur;
    pthread_mutex_unlock(&m->mu);
    if (!strcmp(url, "/healthz")) {
        /* Healthy: the meta group has a leader this server knows and every peer link is up. */
        int ok = c.have_meta && c.peers_up == c.peers_total;
        char *body = NULL;
        if (asprintf(&body, "{\"status\":\"%s\",\"meta_leader\":\"%s\",\"peers_up\":%d}\n",
                     ok ? "ok" : "unavailable", c.meta_leader, c.peers_up) < 0)
            return MHD_NO;
        return respond(conn, ok ? 200 : 503, "application/json", body);
    }
    if (!strcmp(url, "/metrics")) {
        char *body = render_metrics(&c, m->s->cfg.name);
        return body ? respond(conn, 200, "text/plain; version=0.0.4", body) : MHD_NO;
    }
    if (!strcmp(url, "/jsz") || !strcmp(url, "/varz")) {
        char *body = render_jsz(&c, m->s);
        return body ? respond(conn, 200, "application/json", body) : MHD_NO;
    }
    return respond(conn, 404, "text/plain", strdup("not found\n"));
}

int monitor_start(server *s)
{
    monitor *m = calloc(1, sizeof *m);
    if (!m) return -1;
    m->s = s;
    pthread_mutex_init(&m->mu, NULL);
    struct sockaddr_storage sa;
    int rc = uv_ip4_addr(s->cfg.http_host, s->cfg.http_port, (struct sockaddr_in *)&sa);
    if (rc) rc = uv_ip6_addr(s->cfg.http_host, s->cfg.http_port, (struct sockaddr_in6 *)&sa);
    if (rc) {
        free(m);
        return -1;
    }
    m->d =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                             (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
                         (uint16_t)s->cfg.http_port, NULL, NULL, handler, m, MHD_OPTION_SOCK_ADDR,
                         (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT, 64u,
                         MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (!m->d) {
        free(m);
        return -1;
    }
    s->mon = m;
    uv_timer_init(s->loop, &m->timer);
    m->timer.data = m;
    uv_timer_start(&m->timer, on_timer, 0, 1000);
    return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
    monitor *m = h->data;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void monitor_stop(server *s)
{
    monitor *m = s->mon;
    if (!m) return;
    s->mon = NULL;
    MHD_stop_daemon(m->d);
    uv_close((uv_handle_t *)&m->timer, on_timer_closed);
}
