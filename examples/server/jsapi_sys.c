/*
 * jsapi_sys.c — the server reports nats-server answers on $SYS.REQ.SERVER.PING (what
 * `nats server list` and `nats server report jetstream` ask): PING and PING.STATSZ with
 * ServerStatsMsg, PING.JSZ with a JSZ ServerAPIResponse, and the per-server
 * $SYS.REQ.SERVER.<name>.STATSZ / .JSZ.
 *
 * A ping is not passed on to the other servers: the server the client is connected to answers
 * for every server of the cluster, one message each (so the list is whole whether or not core
 * messages cross servers, and no server answers twice), from the meta leader's view
 * (jr_meta_info_get: name, cluster, tags, meta leader, current/offline, lag, draining). Without a
 * meta leader it answers from its own view, every server's liveness unknown. Each message names the
 * server that answered in "jetraft"
 * ("reported_by"), with the fields the nats-server formats have no place for (meta role,
 * current, offline, lag, draining and the replicas still to move off it). Host counters (start,
 * messages in and out) are known only for the answering server itself.
 */
#include "jsapi_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "jsjson.h"

enum { SYS_STATSZ = 1, SYS_JSZ = 2 };

static json_t *str_array(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_string(v[i]));
    return a;
}

/* MetaClusterInfo: the meta group as its leader sees it; replicas exclude the leader. */
static json_t *meta_json(const server *s, const jr_meta_info *info)
{
    json_t *reps = json_array();
    for (size_t i = 0; info && i < info->nservers; i++) {
        const jr_server_info *si = info->servers[i];
        if (si->leader) continue;
        json_t *p = json_pack("{s:s,s:b,s:b,s:I,s:s}", "name", si->name, "current", si->current,
                              "offline", si->offline, "lag", (json_int_t)si->lag, "peer", si->name);
        if (si->active_ns != UINT64_MAX)
            json_object_set_new(p, "active", json_integer((json_int_t)si->active_ns));
        json_array_append_new(reps, p);
    }
    json_t *m =
        json_pack("{s:s,s:I,s:o}", "name", info && info->cluster ? info->cluster : s->cfg.cluster,
                  "cluster_size", (json_int_t)(info ? info->nservers : 0), "replicas", reps);
    if (info && info->leader) {
        json_object_set_new(m, "leader", json_string(info->leader));
        json_object_set_new(m, "peer", json_string(info->leader));
    }
    return m;
}

/* The "jetraft" object of one server's message (si NULL: this server, no meta view). */
static json_t *jetraft_json(const server *s, const jr_meta_info *info, const jr_server_info *si)
{
    const char *role = !si || !info || !info->leader ? "unknown"
                       : si->leader                  ? "leader"
                                                     : "follower";
    json_t *j = json_pack("{s:s,s:s}", "reported_by", s->cfg.name, "meta_role", role);
    if (!si) return j;
    json_object_set_new(j, "current", json_boolean(si->current));
    json_object_set_new(j, "offline", json_boolean(si->offline));
    json_object_set_new(j, "lag", json_integer((json_int_t)si->lag));
    if (si->active_ns != UINT64_MAX)
        json_object_set_new(j, "active", json_integer((json_int_t)si->active_ns));
    json_object_set_new(j, "assets", json_integer((json_int_t)si->assets));
    json_object_set_new(j, "draining", json_boolean(si->draining));
    if (si->draining) {
        json_object_set_new(j, "remaining", str_array(si->remaining, si->nremaining));
        json_object_set_new(j, "unplaced", str_array(si->unplaced, si->nunplaced));
    }
    if (info->removed && !strcmp(si->name, s->cfg.name))
        json_object_set_new(j, "removed", json_true());
    return j;
}

/* One server's message: ServerStatsMsg (STATSZ) or the JSZ ServerAPIResponse. */
static json_t *server_msg(const server *s, int kind, uint64_t seq, const jr_meta_info *info,
                          const jr_server_info *si)
{
    const char *name = si ? si->name : s->cfg.name;
    int self = !strcmp(name, s->cfg.name);
    uint64_t now = jsr_wall_ns();
    char t[48];
    js_time(t, sizeof t, now);
    json_t *tags = si ? str_array(si->tags, si->ntags)
                      : str_array((const char *const *)s->cfg.tags, s->cfg.ntags);
    /* every server's id is its name (the one SERVER.REMOVE's peer_id takes; this server's own
     * INFO id is taken too) */
    json_t *srv =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:b,s:I,s:s}", "name", name, "host", "", "id", name,
                  "cluster", si && si->cluster ? si->cluster : s->cfg.cluster, "ver", jr_version(),
                  "tags", tags, "jetstream", 1, "seq", (json_int_t)seq, "time", t);
    json_t *msg = json_pack("{s:o}", "server", srv);
    json_t *meta = meta_json(s, info);
    if (kind == SYS_JSZ) {
        json_t *data =
            json_pack("{s:s,s:s,s:o}", "server_id", name, "now", t, "meta_cluster", meta);
        if (si) json_object_set_new(data, "streams", json_integer((json_int_t)si->assets));
        json_object_set_new(msg, "data", data);
    } else {
        json_t *st = json_pack("{s:{s:o}}", "jetstream", "meta", meta);
        /* the servers known to be up (natscli's expected count); without a meta leader only
         * this one is known to be */
        size_t up = 0;
        for (size_t i = 0; info && info->leader && i < info->nservers; i++)
            up += !info->servers[i]->offline;
        json_object_set_new(st, "active_servers", json_integer((json_int_t)(up ? up : 1)));
        if (self) {
            char start[48];
            js_time(start, sizeof start, s->started_ns);
            json_object_set_new(st, "start", json_string(start));
            json_object_set_new(st, "received",
                                json_pack("{s:I,s:I}", "msgs", (json_int_t)s->stats.client_msgs_in,
                                          "bytes", (json_int_t)s->stats.client_bytes_in));
            json_object_set_new(st, "sent",
                                json_pack("{s:I,s:I}", "msgs", (json_int_t)s->stats.client_msgs_out,
                                          "bytes", (json_int_t)s->stats.client_bytes_out));
            json_object_set_new(st, "slow_consumers",
                                json_integer((json_int_t)s->stats.slow_consumers));
        }
        json_object_set_new(msg, "statsz", st);
    }
    json_object_set_new(msg, "jetraft", jetraft_json(s, info, si));
    return msg;
}

static void send_msg(server *s, const char *reply, json_t *j)
{
    char *txt = json_dumps(j, JSON_COMPACT);
    if (txt) {
        clients_deliver(s, NULL, reply, NULL, NULL, 0, txt, strlen(txt));
        free(txt);
    }
    json_decref(j);
}

static void on_meta(void *arg, int status, const char *msg, const jr_meta_info *info)
{
    req *r = arg;
    server *s = r->s;
    (void)msg;
    (void)status; /* without a meta leader the info is this server's own view */
    uint64_t seq = 0;
    int only = r->name[0] != 0;
    for (size_t i = 0; info && i < info->nservers; i++) {
        const jr_server_info *si = info->servers[i];
        if (only && strcmp(si->name, r->name)) continue;
        send_msg(s, r->reply, server_msg(s, r->op, ++seq, info, si));
    }
    /* No view of the cluster at all: this server answers for itself. */
    if (!seq && (!only || !strcmp(r->name, s->cfg.name)))
        send_msg(s, r->reply, server_msg(s, r->op, 1, NULL, NULL));
    jsr_free(r);
}

int jsapi_sys(server *s, const char *subject, const char *reply)
{
    static const char ping[] = "$SYS.REQ.SERVER.PING";
    int kind = 0;
    char only[JR_STREAM_NAME_MAX + 1] = "";
    if (!strcmp(subject, ping) || !strcmp(subject, "$SYS.REQ.SERVER.PING.STATSZ"))
        kind = SYS_STATSZ;
    else if (!strcmp(subject, "$SYS.REQ.SERVER.PING.JSZ"))
        kind = SYS_JSZ;
    else if (!strncmp(subject, "$SYS.REQ.SERVER.", 16)) {
        /* $SYS.REQ.SERVER.<name or id>.STATSZ|JSZ */
        const char *id = subject + 16, *dot = strrchr(id, '.');
        if (!dot || dot == id || (size_t)(dot - id) >= sizeof only) return 0;
        if (!strcmp(dot, ".STATSZ"))
            kind = SYS_STATSZ;
        else if (!strcmp(dot, ".JSZ"))
            kind = SYS_JSZ;
        else
            return 0;
        memcpy(only, id, (size_t)(dot - id));
        only[dot - id] = 0;
        if (!strcmp(only, s->server_id)) snprintf(only, sizeof only, "%s", s->cfg.name);
    }
    if (!kind) return 0;
    if (!reply || !*reply) return 1;
    req *r = jsr_new(s, reply, kind, "", only);
    if (!r) return 1;
    if (jr_meta_info_get(s->node, on_meta, r) != 0) on_meta(r, JR_ECLOSED, NULL, NULL);
    return 1;
}
