/*
 * api_move — evacuating a stream's or consumer's replica and cancelling a peer change
 * (jr_stream_evacuate, jr_consumer_evacuate, jr_stream_cancel_move, jr_consumer_cancel_move)
 * as meta requests (meta op PEER_MOVE), and the meta leader's choice of the replacement.
 *
 * The requester sends the op without a peer set; the meta leader checks it against its state
 * (meta_move.h), picks a replacement (jr__move_place) and proposes it with the new peer set;
 * the caller's answer comes from the applied entry, as for every admin request, so a re-send
 * after a meta leader failover takes effect at most once. The peer change then runs like any
 * other (stream_peers.c, consumer_peers.c): the replacement joins as an observer and catches up
 * while the evacuated peer keeps serving, and only then does the evacuated peer leave.
 */
#include <stdio.h>
#include <string.h>

#include "js/js.h"
#include "meta/meta_move.h"
#include "util/alloc.h"
#include "util/checksum.h"

int jr__move_place(jr__js *js, const jr__meta_op *op, const char **peers, size_t *np, char *msg,
                   size_t msglen)
{
    jr__meta_state *st = &js->st;
    const jr__meta_stream *s = jr__meta_stream_find(st, op->stream);
    const jr__meta_consumer *c =
        s && op->consumer && *op->consumer ? jr__meta_consumer_find(s, op->consumer) : NULL;
    if (!s || (op->consumer && *op->consumer && !c)) { /* checked before: only a race */
        snprintf(msg, msglen, "stream or consumer not found");
        return JR_ENOTFOUND;
    }
    const char *const *cur = c ? c->peers : s->peers;
    size_t ncur = c ? c->npeers : s->npeers;
    /* a reseed (every peer removed) takes a whole new peer set; an evacuation one replacement */
    int reseed = jr__meta_move_reseeds(st, s, c);
    size_t want = reseed ? ncur : 1, got = 0;
    const char *pick[JR_MAX_REPLICAS];
    if (c) {
        /* a consumer's replica goes to a peer of its stream that does not hold it and still
         * takes placements (not draining, not removed), online first, in the stream's
         * placement order */
        for (int pass = 0; pass < 2 && got < want; pass++) {
            for (size_t i = 0; i < s->npeers && got < want; i++) {
                const char *p = s->peers[i];
                if (jr__meta_consumer_has_peer(c, p) || jr__meta_server_leaving(st, p)) continue;
                if (jr__mnode_online(js, p, NULL) == (pass == 0)) pick[got++] = p;
            }
        }
        if (got < want) {
            snprintf(msg, msglen,
                     "peer remap failed: no peer of stream '%s' is free to take consumer '%s'",
                     s->name, c->name);
            return JR_EPEERREMAP;
        }
    } else {
        /* the stream's placement rules, with the peers that stay kept and the evacuated one
         * never chosen */
        size_t ns = st->nservers;
        jr__place_server *servers = jr__calloc(js->alloc, ns ? ns : 1, sizeof *servers);
        if (!servers) return JR_ENOMEM;
        jr__meta_place_servers(st, servers, ns);
        for (size_t i = 0; i < ns; i++)
            servers[i].online = jr__mnode_online(js, servers[i].name, NULL);
        const jr_stream_config *cfg = &s->cfg->c;
        const char *cluster = jr__stream_placement_cluster(cfg);
        if (!cluster || !*cluster) {
            const jr__meta_server *o = jr__meta_server_find(st, s->peers[0]);
            cluster = o ? o->cluster : js->cluster;
        }
        const char *keep[JR_MAX_REPLICAS];
        size_t nkeep = 0;
        /* a peer on a removed server (a stream left short by a removal) is no server
         * placement knows: it is not kept, and its slot is not refilled by this move */
        for (size_t i = 0; i < ncur; i++)
            if (strcmp(cur[i], op->peer) != 0 && jr__meta_server_find(st, cur[i]))
                keep[nkeep++] = cur[i];
        const char *avoid[1] = {op->peer};
        jr__place_request req;
        memset(&req, 0, sizeof req);
        req.replicas = (int)(nkeep + want); /* the peers kept and the replacements */
        req.cluster = cluster;
        req.tags = jr__stream_placement_tags(cfg, &req.ntags);
        req.max_bytes = cfg->max_bytes;
        req.unique_tag = js->unique_tag;
        req.seed = jr__xxh3(s->name, strlen(s->name));
        req.keep = keep;
        req.nkeep = nkeep;
        req.avoid = avoid;
        req.navoid = 1;
        jr__place_result res;
        char why[JR__JS_MSG_MAX];
        int rc = jr__placement_select(servers, ns, &req, &res, NULL, why, sizeof why);
        for (size_t i = 0; rc == 0 && i < res.npeers && got < want; i++) {
            const char *p = servers[res.peers[i]].name;
            int kept = 0;
            for (size_t k = 0; k < nkeep; k++) kept |= strcmp(keep[k], p) == 0;
            /* the name must outlive servers[] (it borrows the state's): the state's copy */
            const jr__meta_server *sv = kept ? NULL : jr__meta_server_find(st, p);
            if (sv) pick[got++] = sv->name;
        }
        jr__free(js->alloc, servers);
        if (got < want) {
            if (rc == JR_ENOMEM) return rc;
            snprintf(msg, msglen, "peer remap failed: %s", rc ? why : "no server qualifies");
            return JR_EPEERREMAP;
        }
    }
    if (reseed) { /* nobody stays: the new set in placement order */
        for (size_t i = 0; i < ncur; i++) peers[i] = pick[i];
    } else { /* the current order with the evacuated peer replaced */
        for (size_t i = 0; i < ncur; i++)
            peers[i] = strcmp(cur[i], op->peer) == 0 ? pick[0] : cur[i];
    }
    *np = ncur;
    return 0;
}

/* Sends a PEER_MOVE request to the meta leader; cb gets the applied result. */
static int move_request(jr_node *n, int kind, const char *stream, const char *consumer,
                        const char *peer, jr_stream_cb cb, void *arg)
{
    int ok = cb && stream && (kind == JR__META_MOVE_CANCEL || peer);
    int rc = jr__js_entry(n, ok);
    if (rc) return rc;
    jr__node_enter(n);
    jr__js *js = jr__js_of(n);
    jr__req *r = jr__req_new(js, JR__REQ_UPDATE); /* answered as an update: cb.admin */
    if (!r) {
        rc = jr__node_err(n, JR_ENOMEM, "out of memory");
        goto out;
    }
    jr__req_start(r, js->timeout_ns);
    r->cb.admin = cb;
    r->arg = arg;
    r->kind = JR__RPC_META;
    snprintf(r->stream, sizeof r->stream, "%s", stream);
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_PEER_MOVE;
    op.origin = js->name;
    op.stream = stream;
    op.consumer = consumer;
    op.action = (uint8_t)kind;
    op.peer = peer;
    /* names the log cannot carry are refused here, with the answer the meta state would give */
    if (!*stream || strlen(stream) > JR_STREAM_NAME_MAX) {
        jr__req_finish(r, consumer ? JR_ENOSTREAM : JR_ENOTFOUND, "stream '%s' not found", stream);
        goto out;
    }
    if (consumer && (!*consumer || strlen(consumer) > JR_CONSUMER_NAME_MAX)) {
        jr__req_finish(r, JR_ENOTFOUND, "consumer not found");
        goto out;
    }
    if (peer && !jr__meta_name_ok(peer, strlen(peer))) {
        jr__req_finish(r, JR_ENOTMEMBER, "peer not a member");
        goto out;
    }
    int erc = jr__mnode_file(js, r, &op);
    if (erc == JR_EINVAL) {
        jr__req_finish(r, consumer ? JR_ENOTFOUND : JR_EINVAL, "%s",
                       consumer ? "consumer not found" : "invalid stream name");
        goto out;
    }
    if (erc != 0) {
        jr__req_finish(r, erc, "cannot encode the request: %s", jr_strerror(erc));
        goto out;
    }
    jr__mnode_send(r);
out:
    jr__node_leave(n);
    return rc;
}

int jr_stream_evacuate(jr_node *n, const char *stream, const char *peer, jr_stream_cb cb, void *arg)
{
    return move_request(n, JR__META_MOVE_EVACUATE, stream, NULL, peer, cb, arg);
}

int jr_stream_cancel_move(jr_node *n, const char *stream, jr_stream_cb cb, void *arg)
{
    return move_request(n, JR__META_MOVE_CANCEL, stream, NULL, NULL, cb, arg);
}

int jr_consumer_evacuate(jr_node *n, const char *stream, const char *consumer, const char *peer,
                         jr_stream_cb cb, void *arg)
{
    if (!consumer) return jr__js_entry(n, 0);
    return move_request(n, JR__META_MOVE_EVACUATE, stream, consumer, peer, cb, arg);
}

int jr_consumer_cancel_move(jr_node *n, const char *stream, const char *consumer, jr_stream_cb cb,
                            void *arg)
{
    if (!consumer) return jr__js_entry(n, 0);
    return move_request(n, JR__META_MOVE_CANCEL, stream, consumer, NULL, cb, arg);
}
