/*
 * monitor.c — HTTP monitoring (see monitor.h).
 *
 * Once a second the loop thread asks the node for its view (meta info, its own health, a check
 * of each stream as `nats server check stream` makes it) into the `next` snapshot, then swaps it
 * with `cur` under the mutex; the HTTP thread renders `cur` under the same mutex.
 */
#include "monitor.h"

#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "client.h"
#include "jsapi_impl.h"
#include "jsjson.h"
#include "peer.h"

#define MAX_SERVERS 64
#define MAX_STREAMS 256 /* streams checked each second (one page of names) */
#define MAX_UNWELL 64   /* unwell local groups reported */
#define TEXT 200

typedef struct stream_check {
    char name[256];
    int status; /* enum jr_check_status */
    int led_here;
    uint64_t lag_max; /* the most entries a replica is behind (jr_check_result.lag_max) */
    char line[TEXT];
} stream_check;

/* An unwell local replica's state, from the one read of its group that judged it
 * (jr_group_health): its role and its damaged and fsm_failed flags are of the same moment. */
typedef struct unwell_rep {
    char stream[256], consumer[256]; /* consumer "": a stream replica */
    uint64_t group;
    int role, damaged, fsm_failed, unvouched, no_leader, no_quorum;
    int peers_fsm_failed; /* leader: members whose state machine failed, as they told it */
} unwell_rep;

typedef struct snap {
    jr_node_stats node;
    srv_stats host;
    fsync_stats fsync;
    uint64_t taken_ns;
    /* meta info */
    int have_meta;
    int have_servers; /* servers[] lists the meta group's committed membership */
    char meta_leader[256];
    size_t nservers;
    struct {
        char name[256];
        int current, offline;
        uint64_t lag;
    } servers[MAX_SERVERS];
    uint64_t streams;
    /* this node's health */
    int have_health, healthy, meta_current;
    char meta_text[1024]; /* long enough for a permanent open error (gap_health) */
    size_t local_streams, local_consumers, nunwell;
    uint64_t local_msgs, memory_bytes, file_bytes; /* what the local stream replicas store */
    char unwell[MAX_UNWELL][TEXT];
    unwell_rep unwell_rep[MAX_UNWELL];
    /* stream checks */
    size_t nchecks;
    stream_check checks[MAX_STREAMS];
    size_t clients;
    /* the cluster's servers (the committed membership when have_servers, else the configured
     * peers), and the others of them, and of those the ones with a link up */
    size_t cluster_size;
    int peers_up, peers_total;
} snap;

struct monitor {
    server *s;
    struct MHD_Daemon *d;
    uv_timer_t timer;
    pthread_mutex_t mu;
    snap *cur;   /* read by the HTTP thread under mu */
    snap *next;  /* filled on the loop thread */
    int pending; /* requests of this round not answered yet */
};

static void on_meta(void *arg, int status, const char *msg, const jr_meta_info *info)
{
    monitor *m = arg;
    (void)msg;
    m->pending--;
    snap *n = m->next;
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
    /* The meta state's servers, with or without a leader: the membership as committed (a
     * removed server leaves it once its removal is applied). */
    n->have_servers = info && info->nservers > 0 && info->nservers <= MAX_SERVERS;
}

static void on_health(void *arg, int status, const char *msg, const jr_node_health_info *h)
{
    monitor *m = arg;
    (void)msg;
    m->pending--;
    snap *n = m->next;
    n->have_health = status == 0 && h;
    if (!n->have_health) return;
    n->healthy = h->healthy;
    n->meta_current = h->meta_current;
    snprintf(n->meta_text, sizeof n->meta_text, "%s", h->meta_text ? h->meta_text : "");
    n->local_streams = h->nstreams;
    n->local_consumers = h->nconsumers;
    n->local_msgs = h->msgs;
    n->memory_bytes = h->memory_bytes;
    n->file_bytes = h->file_bytes;
    n->nunwell = 0;
    for (size_t i = 0; i < h->ngroups && i < MAX_UNWELL; i++) {
        const jr_group_health *g = h->groups[i];
        size_t k = n->nunwell++;
        snprintf(n->unwell[k], TEXT, "%s", g->text);
        snprintf(n->unwell_rep[k].stream, sizeof n->unwell_rep[k].stream, "%s",
                 g->stream ? g->stream : "");
        snprintf(n->unwell_rep[k].consumer, sizeof n->unwell_rep[k].consumer, "%s",
                 g->consumer ? g->consumer : "");
        n->unwell_rep[k].group = g->group;
        n->unwell_rep[k].role = g->role;
        n->unwell_rep[k].damaged = g->damaged;
        /* a library built before the field had it not: its damaged said both */
        n->unwell_rep[k].fsm_failed =
            g->size >= offsetof(jr_group_health, fsm_failed) + sizeof g->fsm_failed ? g->fsm_failed
                                                                                    : 0;
        n->unwell_rep[k].unvouched = g->unvouched;
        n->unwell_rep[k].no_leader = g->no_leader;
        n->unwell_rep[k].no_quorum = g->no_quorum;
        n->unwell_rep[k].peers_fsm_failed =
            g->size >= offsetof(jr_group_health, peers_fsm_failed) + sizeof g->peers_fsm_failed
                ? g->peers_fsm_failed
                : 0;
    }
}

typedef struct check_arg {
    monitor *m;
    size_t i;
} check_arg;

static void on_check(void *arg, int status, const char *msg, const jr_check_result *res)
{
    check_arg *ca = arg;
    monitor *m = ca->m;
    stream_check *c = &m->next->checks[ca->i];
    free(ca);
    m->pending--;
    (void)status;
    if (!res) {
        char line[TEXT];
        snprintf(line, sizeof line, "UNKNOWN %s %s", c->name, msg ? msg : "");
        memcpy(c->line, line, sizeof line);
        c->status = JR_CHECK_UNKNOWN;
        return;
    }
    c->status = res->status;
    c->led_here = res->leader && !strcmp(res->leader, m->s->cfg.name);
    c->lag_max = res->lag_max;
    jr_stream_check_format(res, c->line, sizeof c->line);
}

static void on_names(void *arg, int status, const char *msg, const jr_names *page)
{
    monitor *m = arg;
    (void)msg;
    m->pending--;
    snap *n = m->next;
    n->nchecks = 0;
    if (status || !page) return;
    for (size_t i = 0; i < page->nnames && i < MAX_STREAMS; i++) {
        stream_check *c = &n->checks[n->nchecks];
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "%s", page->names[i]);
        c->status = JR_CHECK_UNKNOWN;
        check_arg *ca = malloc(sizeof *ca);
        if (!ca) break;
        ca->m = m;
        ca->i = n->nchecks;
        if (jr_stream_check(m->s->node, c->name, NULL, on_check, ca) != 0) {
            free(ca);
            break;
        }
        m->pending++;
        n->nchecks++;
    }
}

/* While a failed node is closed and not yet reopened (server.h), there is no node to ask: the
 * view keeps the last round's meta view and says why it is unhealthy. */
static void gap_health(snap *n, const server *s)
{
    n->have_health = 1;
    n->healthy = 0;
    n->meta_current = 0;
    if (s->open_given_up)
        snprintf(n->meta_text, sizeof n->meta_text,
                 "JetStream's WAL failed and the node cannot be reopened: %s; not retrying (fix "
                 "it and restart the server)",
                 s->open_error);
    else
        snprintf(n->meta_text, sizeof n->meta_text,
                 "JetStream's WAL failed: the node is being reopened from disk (%" PRIu64
                 " attempts so far)",
                 s->reopen_attempts);
    n->nunwell = 0;
    n->nchecks = 0;
    n->have_meta = 0;
}

/* Once a second: publish the last round's view if it is complete, then start the next one. */
static void on_timer(uv_timer_t *t)
{
    monitor *m = t->data;
    server *s = m->s;
    if (s->closing || m->pending > 0) return;
    snap *n = m->next;
    server_node_stats(s, &n->node); /* over every reopen: counters never go back */
    if (!s->node) gap_health(n, s);
    n->host = s->stats;
    timedvfs_stats(&s->tvfs, &n->fsync);
    n->clients = clients_count(s);
    if (n->have_servers) {
        n->cluster_size = n->nservers;
        n->peers_total = n->peers_up = 0;
        for (size_t i = 0; i < n->nservers; i++) {
            if (!strcmp(n->servers[i].name, s->cfg.name)) continue;
            n->peers_total++;
            n->peers_up += peers_link_up(s, n->servers[i].name);
        }
    } else {
        n->cluster_size = s->cfg.npeers;
        n->peers_up = peers_connected(s);
        n->peers_total = (int)s->cfg.npeers - 1;
    }
    n->taken_ns = uv_hrtime();
    pthread_mutex_lock(&m->mu);
    m->next = m->cur;
    m->cur = n;
    pthread_mutex_unlock(&m->mu);
    memcpy(m->next, n, sizeof *n); /* a failed request leaves the previous values */
    if (!s->node) return;
    if (jr_meta_info_get(s->node, on_meta, m) == 0) m->pending++;
    if (jr_node_health(s->node, on_health, m) == 0) m->pending++;
    if (jr_stream_names(s->node, NULL, 0, on_names, m) == 0) m->pending++;
    server_kick(s);
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type,
                               char *body)
{
    if (!body) return MHD_NO;
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

/* Writes s as a Prometheus label value (backslash, double quote and newline escaped). */
static void label_value(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

/* A histogram of durations: counts by bucket (bounds_ns[i] the upper bound of bucket i, the last
 * bucket unbounded), their number and their sum. */
static void histogram(FILE *f, const char *metric, const char *help, const char *name,
                      const uint64_t *bounds_ns, const uint64_t *buckets, size_t nbuckets,
                      uint64_t count, uint64_t sum_ns)
{
    fprintf(f, "# HELP jetraft_%s %s\n# TYPE jetraft_%s histogram\n", metric, help, metric);
    uint64_t cum = 0;
    for (size_t i = 0; i < nbuckets; i++) {
        cum += buckets[i];
        if (i < nbuckets - 1)
            fprintf(f, "jetraft_%s_bucket{server=\"%s\",le=\"%g\"} %" PRIu64 "\n", metric, name,
                    (double)bounds_ns[i] / 1e9, cum);
        else
            fprintf(f, "jetraft_%s_bucket{server=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", metric, name,
                    cum);
    }
    fprintf(f, "jetraft_%s_sum{server=\"%s\"} %.9f\n", metric, name, (double)sum_ns / 1e9);
    fprintf(f, "jetraft_%s_count{server=\"%s\"} %" PRIu64 "\n", metric, name, count);
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
    M("js_publishes_total", "Client messages handed to the library's publish.", "counter",
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
    M("peer_links_refused_total",
      "Cluster connections refused or closed for what they sent: a failed handshake (another "
      "authority, a forged or another server's identity), a record that does not authenticate "
      "(tampered, replayed, reordered, truncated), a length over its bound, no handshake in time.",
      "counter", c->host.peer_links_refused);
    M("frames_dropped_total", "Peer frames dropped: send queue full or link down.", "counter",
      c->host.peer_frames_dropped);
    M("peer_bytes_sent_total", "Bytes sent to peers.", "counter", c->node.bytes_sent);
    M("peer_bytes_received_total", "Bytes received from peers.", "counter", c->node.bytes_received);
    M("groups", "Raft groups open on this server.", "gauge", c->node.groups);
    M("cluster_size", "Servers in the cluster (its committed membership).", "gauge",
      c->cluster_size);
    M("peers_connected", "Other servers of the cluster with an established link.", "gauge",
      c->peers_up);
    M("clients", "Client connections.", "gauge", c->clients);
    M("client_msgs_in_total", "Messages published by clients.", "counter", c->host.client_msgs_in);
    M("client_msgs_out_total", "Messages delivered to clients.", "counter",
      c->host.client_msgs_out);
    M("slow_consumers_total", "Clients disconnected as slow consumers.", "counter",
      c->host.slow_consumers);
    M("client_out_allocs_total", "Client output buffers allocated or grown.", "counter",
      c->host.client_out_allocs);
    M("route_msgs_out_total", "Core messages forwarded to peers.", "counter",
      c->host.route_msgs_out);
    M("route_msgs_in_total", "Core messages received from peers.", "counter",
      c->host.route_msgs_in);
    M("route_msgs_dropped_total", "Core messages not forwarded: the peer's send queue past half.",
      "counter", c->host.route_msgs_dropped);
    M("route_frames_rejected_total", "Route frames rejected (malformed, interest past its bound).",
      "counter", c->host.route_frames_rejected);
    M("wal_failures_total", "Times the node's WAL failed (each: a close and a reopen).", "counter",
      c->host.wal_failures);
    M("node_reopens_total", "Reopens of the node from disk after its WAL failed.", "counter",
      c->host.node_reopens);
    M("node_open_attempts_total", "Reopens of the node tried after its WAL failed.", "counter",
      c->host.node_open_attempts);
    M("meta_leader", "1 if this server is the meta leader.", "gauge",
      c->have_meta && !strcmp(c->meta_leader, name));
    M("streams", "Streams in the meta state.", "gauge", c->streams);
    M("healthy", "1 if this server is healthy as /healthz judges it.", "gauge",
      c->have_health && c->healthy);
#undef M
    size_t led = 0;
    for (size_t i = 0; i < c->nchecks; i++) led += c->checks[i].led_here;
    size_t followers = c->local_streams > led ? c->local_streams - led : 0;
    fprintf(f,
            "# HELP jetraft_stream_replicas Stream replicas on this server by role.\n"
            "# TYPE jetraft_stream_replicas gauge\n"
            "jetraft_stream_replicas{server=\"%s\",role=\"leader\"} %zu\n"
            "jetraft_stream_replicas{server=\"%s\",role=\"follower\"} %zu\n",
            name, led, name, followers);
    fprintf(f, "# HELP jetraft_stream_lag_entries The most log entries a replica of a stream led "
               "here is behind its leader (its catch-up lag).\n"
               "# TYPE jetraft_stream_lag_entries gauge\n");
    for (size_t i = 0; i < c->nchecks; i++) {
        if (!c->checks[i].led_here) continue;
        fprintf(f, "jetraft_stream_lag_entries{server=\"%s\",stream=\"", name);
        label_value(f, c->checks[i].name);
        fprintf(f, "\"} %" PRIu64 "\n", c->checks[i].lag_max);
    }
    histogram(f, "js_ack_latency_seconds",
              "Publish to acknowledgement (commit, fsync included) of the acknowledged publishes.",
              name, pub_lat_bounds_ns, c->host.pub_lat_bucket, PUB_LAT_BUCKETS,
              c->host.pub_lat_count, c->host.pub_lat_sum_ns);
    histogram(f, "fsync_seconds",
              "File syncs (fdatasync) of the WAL and the stores, failed ones included.", name,
              fsync_bounds_ns, c->fsync.bucket, FSYNC_BUCKETS, c->fsync.count, c->fsync.sum_ns);
    fclose(f);
    return buf;
}

static const char *const check_names[] = {"OK", "WARNING", "CRITICAL", "UNKNOWN"};
static const char *const role_names[] = {"follower", "candidate", "leader", "observer"};

/* The unwell local replicas (a replica not listed leads or follows with a quorum, whole, and
 * leads no member whose state machine failed): each with its role, damaged (lost data, waits for
 * repair: never leads) and fsm_failed (its state machine failed and is rebuilt) as one read of
 * its group gave them, and on a leader peers_fsm_failed (members that told it their state
 * machine failed or is being rebuilt; the text names them). */
static json_t *unwell_replicas(const snap *c)
{
    json_t *a = json_array();
    for (size_t i = 0; c->have_health && i < c->nunwell; i++) {
        const unwell_rep *r = &c->unwell_rep[i];
        json_t *o =
            json_pack("{s:s,s:I,s:s,s:b,s:b,s:b,s:b,s:b,s:i,s:s}", "stream", r->stream, "group",
                      (json_int_t)r->group, "role", role_names[(unsigned)r->role & 3], "damaged",
                      r->damaged, "fsm_failed", r->fsm_failed, "unvouched", r->unvouched,
                      "no_leader", r->no_leader, "no_quorum", r->no_quorum, "peers_fsm_failed",
                      r->peers_fsm_failed, "text", c->unwell[i]);
        if (o && r->consumer[0]) json_object_set_new(o, "consumer", json_string(r->consumer));
        if (o) json_array_append_new(a, o);
    }
    return a;
}

/* nats-server's /jsz for this server (JSInfo): its usage (what its stream replicas store, its
 * stream and consumer replicas, its Raft groups as HA assets, API requests and errors), its
 * configuration and the meta group (leader, peer, cluster size, and the other members' state,
 * leader excluded). After those, jetraft's own: the meta state's stream count, each stream's
 * check, the node's counters and its health with the unwell replicas. */
static char *render_jsz(const snap *c, const server *s)
{
    json_t *replicas = json_array();
    for (size_t i = 0; i < c->nservers; i++) {
        if (c->have_meta && !strcmp(c->servers[i].name, c->meta_leader)) continue;
        json_t *r = json_pack("{s:s,s:b,s:s}", "name", c->servers[i].name, "current",
                              c->servers[i].current, "peer", c->servers[i].name);
        if (c->servers[i].offline) json_object_set_new(r, "offline", json_true());
        if (c->servers[i].lag)
            json_object_set_new(r, "lag", json_integer((json_int_t)c->servers[i].lag));
        json_array_append_new(replicas, r);
    }
    json_t *meta = json_pack("{s:s,s:I,s:o}", "name", s->cfg.cluster, "cluster_size",
                             (json_int_t)c->cluster_size, "replicas", replicas);
    if (c->have_meta) {
        json_object_set_new(meta, "leader", json_string(c->meta_leader));
        json_object_set_new(meta, "peer", json_string(c->meta_leader));
    }
    json_t *checks = json_array();
    for (size_t i = 0; i < c->nchecks; i++)
        json_array_append_new(checks, json_pack("{s:s,s:s,s:b,s:s,s:I}", "name", c->checks[i].name,
                                                "status", check_names[c->checks[i].status & 3],
                                                "leader_here", c->checks[i].led_here, "check",
                                                c->checks[i].line, "lag_max",
                                                (json_int_t)c->checks[i].lag_max));
    char now[48];
    js_time(now, sizeof now, jsr_wall_ns());
    json_t *cfg =
        json_pack("{s:I,s:I,s:s}", "max_memory", (json_int_t)-1, "max_storage",
                  s->cfg.max_store_bytes ? (json_int_t)s->cfg.max_store_bytes : (json_int_t)-1,
                  "store_dir", s->cfg.store_dir ? s->cfg.store_dir : "");
    json_t *j = json_pack(
        "{s:s,s:s,s:o,s:I,s:I,s:i,s:i,s:i,s:I,s:{s:I,s:I},s:I,s:I,s:I,s:I,s:o}", "server_id",
        s->server_id, "now", now, "config", cfg, "memory", (json_int_t)c->memory_bytes, "storage",
        (json_int_t)c->file_bytes, "reserved_memory", 0, "reserved_storage", 0, "accounts", 1,
        "ha_assets", (json_int_t)c->node.groups, "api", "total",
        (json_int_t)c->host.js_api_requests, "errors", (json_int_t)c->host.js_api_errors, "streams",
        (json_int_t)c->local_streams, "consumers", (json_int_t)c->local_consumers, "messages",
        (json_int_t)c->local_msgs, "bytes", (json_int_t)(c->memory_bytes + c->file_bytes),
        "meta_cluster", meta);
    json_t *own = json_pack(
        "{s:s,s:I,s:I,s:o,s:{s:I,s:I,s:I,s:I,s:I,s:I},s:{s:b,s:I,s:I,s:o}}", "server_name",
        s->cfg.name, "meta_streams", (json_int_t)c->streams, "messages_in",
        (json_int_t)c->host.js_acks, "stream_checks", checks, "node", "groups",
        (json_int_t)c->node.groups, "wal_syncs", (json_int_t)c->node.wal_syncs, "wal_bytes",
        (json_int_t)c->node.wal_bytes, "frames_sent", (json_int_t)c->node.frames_sent,
        "frames_received", (json_int_t)c->node.frames_received, "frames_rejected",
        (json_int_t)c->node.frames_rejected, "health", "known", c->have_health, "stream_replicas",
        (json_int_t)c->local_streams, "consumer_replicas", (json_int_t)c->local_consumers,
        "unwell_replicas", unwell_replicas(c));
    if (j && own) json_object_update(j, own);
    json_decref(own);
    char *txt = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    return txt;
}

/* JetStream's /healthz: this server current with the meta leader and every local replica well
 * (the library's jr_node_health; a peer down, or a member's failed state machine seen from its
 * leader, is reported by /jsz, not a failure here: the groups judge whether they still have a
 * quorum, and the member's own server fails its check); with ?streams=1 also every stream's check
 * (critical fails it), as `nats server check stream` judges it with the configured replicas. */
static char *render_healthz(const snap *c, int with_streams, int *ok)
{
    json_t *errs = json_array();
    if (!c->have_health)
        json_array_append_new(errs, json_string("JetStream has not reported its health yet"));
    else if (!c->meta_current)
        json_array_append_new(errs, json_string(c->meta_text));
    for (size_t i = 0; c->have_health && i < c->nunwell; i++) {
        const unwell_rep *u = &c->unwell_rep[i];
        /* listed only for a member's failed state machine: that member's server fails its
         * own /healthz (jr_node_health_info.healthy) */
        if (!u->damaged && !u->fsm_failed && !u->unvouched && !u->no_leader && !u->no_quorum)
            continue;
        json_array_append_new(errs, json_string(c->unwell[i]));
    }
    json_t *checks = with_streams ? json_array() : NULL;
    for (size_t i = 0; with_streams && i < c->nchecks; i++) {
        json_array_append_new(checks, json_string(c->checks[i].line));
        if (c->checks[i].status >= JR_CHECK_CRITICAL)
            json_array_append_new(errs, json_string(c->checks[i].line));
    }
    *ok = json_array_size(errs) == 0 && c->have_health && c->healthy;
    json_t *j = json_pack("{s:s,s:s,s:i,s:i}", "status", *ok ? "ok" : "unavailable", "meta_leader",
                          c->have_meta ? c->meta_leader : "", "peers_up", c->peers_up, "peers",
                          c->peers_total);
    if (json_array_size(errs))
        json_object_set_new(j, "errors", errs);
    else
        json_decref(errs);
    if (checks) json_object_set_new(j, "streams", checks);
    char *txt = json_dumps(j, JSON_COMPACT);
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
    char *body = NULL;
    unsigned status = 200;
    const char *type = "application/json";
    pthread_mutex_lock(&m->mu);
    const snap *c = m->cur;
    if (!strcmp(url, "/healthz")) {
        const char *q = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "streams");
        int ok;
        body = render_healthz(c, q && strcmp(q, "0") && strcmp(q, "false"), &ok);
        status = ok ? 200 : 503;
    } else if (!strcmp(url, "/metrics")) {
        body = render_metrics(c, m->s->cfg.name);
        type = "text/plain; version=0.0.4";
    } else if (!strcmp(url, "/jsz")) {
        body = render_jsz(c, m->s);
    } else {
        body = strdup("not found\n");
        status = 404;
        type = "text/plain";
    }
    pthread_mutex_unlock(&m->mu);
    return respond(conn, status, type, body);
}

int monitor_start(server *s)
{
    monitor *m = calloc(1, sizeof *m);
    if (!m) return -1;
    m->cur = calloc(1, sizeof *m->cur);
    m->next = calloc(1, sizeof *m->next);
    struct sockaddr_storage sa;
    int rc = uv_ip4_addr(s->cfg.http_host, s->cfg.http_port, (struct sockaddr_in *)&sa);
    if (rc) rc = uv_ip6_addr(s->cfg.http_host, s->cfg.http_port, (struct sockaddr_in6 *)&sa);
    if (rc || !m->cur || !m->next) goto fail;
    m->s = s;
    pthread_mutex_init(&m->mu, NULL);
    m->d =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                             (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
                         (uint16_t)s->cfg.http_port, NULL, NULL, handler, m, MHD_OPTION_SOCK_ADDR,
                         (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT, 64u,
                         MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (!m->d) {
        pthread_mutex_destroy(&m->mu);
        goto fail;
    }
    s->mon = m;
    uv_timer_init(s->loop, &m->timer);
    m->timer.data = m;
    uv_timer_start(&m->timer, on_timer, 0, 1000);
    return 0;
fail:
    free(m->cur);
    free(m->next);
    free(m);
    return -1;
}

static void on_timer_closed(uv_handle_t *h)
{
    monitor *m = h->data;
    pthread_mutex_destroy(&m->mu);
    free(m->cur);
    free(m->next);
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
