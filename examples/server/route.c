/*
 * route.c — interest propagation and message forwarding between servers (see route.h).
 *
 * Local subscription changes are collected into one INTEREST frame per loop turn, and the
 * messages forwarded in it into one write per link; both go out from a uv_prepare handle, which
 * runs before every wait for I/O, so that nothing forwarded in any phase of the turn (reads,
 * timers, the node's callbacks, other check handles) waits for the next I/O event. Changes are
 * sent earlier too, before any message is forwarded, so that on each link a subscription made
 * before a publish is announced before the message travels (a request's reply inbox is known at
 * the responder's server before the request). Each goes to every peer whose link is up; a link
 * that comes up gets the whole local table first, in frames of at most ANNOUNCE_FRAME bytes.
 */
#include "route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "interest.h"
#include "peer.h"
#include "route_wire.h"

/* An INTEREST frame is sent once it holds this much: with one op more (a name is at most
 * ROUTE_NAME_MAX) it stays below the smallest max_frame_bytes (64 KiB). */
#define ANNOUNCE_FRAME (32u << 10)
#define REMOTE_MAX_ENTRIES (1u << 20) /* interest entries kept per peer */
#define REMOTE_MAX_BYTES (256u << 20) /* and the memory they may take */

typedef struct rpeer {
    interest *remote;            /* what the peer announced */
    char url[ROUTE_URL_MAX + 1]; /* its client URL while the link is up ("" unknown) */
    int up;
    int full_logged; /* the peer exceeded REMOTE_MAX_ENTRIES (logged once per link) */
    /* route_forward's scratch: what this peer gets of the message under way */
    int plain;
    size_t nq;
    const char *queues[ROUTE_QUEUES_MAX];
} rpeer;

typedef struct cand {
    size_t peer;
    const char *queue;
    uint32_t count;
} cand;

struct routes {
    server *s;
    interest *local; /* (subject, queue) -> local subscriptions */
    rpeer *v;
    size_t n;
    rw_build pending;   /* announcements not sent yet (RW_INTEREST, nops 0: none) */
    uv_prepare_t flush; /* runs before the loop waits for I/O */
    cand *cands;
    size_t ncands, cands_cap;
    uint8_t *head;
    size_t head_cap;
};

static void flush_pending(routes *r);

static void on_flush(uv_prepare_t *h)
{
    routes *r = h->data;
    flush_pending(r);
    peers_route_flush(r->s);
}

int route_start(server *s)
{
    routes *r = calloc(1, sizeof *r);
    if (!r) return UV_ENOMEM;
    r->s = s;
    r->n = s->cfg.npeers;
    r->v = calloc(r->n, sizeof *r->v);
    r->local = interest_new();
    rw_build_init(&r->pending);
    if (!r->v || !r->local) goto fail;
    for (size_t i = 0; i < r->n; i++)
        if (!(r->v[i].remote = interest_new())) goto fail;
    s->routes = r;
    uv_prepare_init(s->loop, &r->flush);
    r->flush.data = r;
    uv_prepare_start(&r->flush, on_flush);
    return 0;
fail:
    for (size_t i = 0; r->v && i < r->n; i++) interest_free(r->v[i].remote);
    free(r->v);
    interest_free(r->local);
    free(r);
    return UV_ENOMEM;
}

void route_stop(server *s)
{
    routes *r = s->routes;
    if (!r) return;
    uv_prepare_stop(&r->flush);
    uv_close((uv_handle_t *)&r->flush, NULL);
}

void route_free(server *s)
{
    routes *r = s->routes;
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) interest_free(r->v[i].remote);
    free(r->v);
    interest_free(r->local);
    rw_build_free(&r->pending);
    free(r->cands);
    free(r->head);
    free(r);
    s->routes = NULL;
}

/* ---- announcements ------------------------------------------------------------------------ */

/* Sends a finished INTEREST frame to one peer; a frame the link cannot take closes it. */
static void send_announce(routes *r, size_t peer, rw_build *b)
{
    jr_iovec iov = {b->buf, b->len};
    peers_route_send(r->s, peer, &iov, 1, 1);
}

static void flush_pending(routes *r)
{
    if (!r->pending.nops) return;
    rw_build_finish(&r->pending);
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].up) send_announce(r, i, &r->pending);
    r->pending.nops = 0;
    r->pending.len = 0;
}

static void announce(routes *r, const char *subject, const char *queue, uint32_t count)
{
    size_t up = 0;
    for (size_t i = 0; i < r->n; i++) up += r->v[i].up;
    if (!up) return; /* a link that comes up gets the whole table */
    if (!r->pending.nops && rw_build_start(&r->pending, RW_INTEREST)) return;
    if (rw_build_op(&r->pending, subject, queue, count)) {
        fprintf(stderr, "[%s] route: interest in \"%.64s\" not announced\n", r->s->cfg.name,
                subject);
        return;
    }
    if (r->pending.len >= ANNOUNCE_FRAME) flush_pending(r);
}

void route_sub_added(server *s, const sub *sb)
{
    routes *r = s->routes;
    uint32_t n;
    if (!r || interest_add(r->local, sb->subject, sb->queue, 1, &n)) return;
    if (sb->queue || n == 1) announce(r, sb->subject, sb->queue, sb->queue ? n : 1);
}

void route_sub_removed(server *s, const sub *sb)
{
    routes *r = s->routes;
    uint32_t n;
    if (!r || interest_add(r->local, sb->subject, sb->queue, -1, &n)) return;
    if (sb->queue || n == 0) announce(r, sb->subject, sb->queue, sb->queue ? n : 0);
}

typedef struct dump {
    routes *r;
    size_t peer;
    rw_build b;
    int failed;
} dump;

static int dump_one(void *arg, const char *subject, const char *queue, uint32_t count)
{
    dump *d = arg;
    if (!d->b.nops && rw_build_start(&d->b, RW_INTEREST)) return d->failed = 1;
    if (rw_build_op(&d->b, subject, queue, queue ? count : 1)) return 0; /* too long a name */
    if (d->b.len >= ANNOUNCE_FRAME) {
        rw_build_finish(&d->b);
        send_announce(d->r, d->peer, &d->b);
        d->b.nops = 0;
        if (!d->r->v[d->peer].up) return 1; /* the link could not take it and closed */
    }
    return 0;
}

void route_link_up(server *s, size_t peer)
{
    routes *r = s->routes;
    if (!r || peer >= r->n) return;
    /* Announcements queued for the peers already up go out first: they describe changes the
     * new peer's whole table below already holds. */
    flush_pending(r);
    rpeer *p = &r->v[peer];
    interest_clear(p->remote);
    p->up = 1;
    p->full_logged = 0;
    dump d = {r, peer, {0}, 0};
    rw_build_init(&d.b);
    interest_each(r->local, dump_one, &d);
    if (d.b.nops && p->up) {
        rw_build_finish(&d.b);
        send_announce(r, peer, &d.b);
    }
    rw_build_free(&d.b);
    if (d.failed) fprintf(stderr, "[%s] route: out of memory announcing interest\n", s->cfg.name);
    /* and this server's client URL, for the peer's clients' connect_urls */
    rw_build u;
    rw_build_init(&u);
    if (s->advertise[0] && p->up && rw_build_url(&u, s->advertise) == 0) send_announce(r, peer, &u);
    rw_build_free(&u);
}

void route_link_down(server *s, size_t peer)
{
    routes *r = s->routes;
    if (!r || peer >= r->n) return;
    r->v[peer].up = 0;
    r->v[peer].url[0] = 0;
    interest_clear(r->v[peer].remote);
}

size_t route_urls(const server *s, const char **out, size_t max)
{
    const routes *r = s->routes;
    size_t n = 0;
    for (size_t i = 0; r && i < r->n && n < max; i++)
        if (r->v[i].up && r->v[i].url[0]) out[n++] = r->v[i].url;
    return n;
}

/* ---- receiving ---------------------------------------------------------------------------- */

/* A name from a frame as a C string (the decoder checked its length and that it holds no NUL). */
static void cstr(char *out, rw_str s)
{
    memcpy(out, s.p, s.len);
    out[s.len] = 0;
}

static int apply_interest(routes *r, size_t peer, const uint8_t *f, size_t len)
{
    rpeer *p = &r->v[peer];
    static char subject[ROUTE_NAME_MAX + 1], queue[ROUTE_NAME_MAX + 1];
    size_t off = 0;
    rw_op op;
    while (rw_interest_next(f, len, &off, &op) == 1) {
        cstr(subject, op.subject);
        cstr(queue, op.queue);
        uint32_t cur = 0;
        if (op.count &&
            (interest_size(p->remote) >= REMOTE_MAX_ENTRIES ||
             interest_bytes(p->remote) >= REMOTE_MAX_BYTES) &&
            (interest_add(p->remote, subject, queue, 0, &cur) || cur == 0)) {
            /* a known entry may still change; a new one is refused */
            if (!p->full_logged) {
                fprintf(stderr,
                        "[%s] route: %s announced more than %u subscriptions or %u MiB of them\n",
                        r->s->cfg.name, r->s->cfg.peers[peer].name, REMOTE_MAX_ENTRIES,
                        REMOTE_MAX_BYTES >> 20);
                p->full_logged = 1;
            }
            r->s->stats.route_frames_rejected++;
            continue;
        }
        if (interest_set(p->remote, subject, queue, op.count)) return -1;
    }
    return 0;
}

typedef struct want {
    const rw_msg *m;
} want;

static int want_queue(void *arg, const char *queue)
{
    const rw_msg *m = ((want *)arg)->m;
    size_t ql = strlen(queue);
    for (size_t i = 0; i < m->nq; i++)
        if (m->queues[i].len == ql && !memcmp(m->queues[i].p, queue, ql)) return 1;
    return 0;
}

void route_recv(server *s, size_t peer, const uint8_t *f, size_t len)
{
    routes *r = s->routes;
    int type;
    if (!r || peer >= r->n || !r->v[peer].up) return; /* a frame read behind a link's close */
    if (rw_open(f, len, &type)) {
        s->stats.route_frames_rejected++;
        return;
    }
    if (type == RW_INTEREST) {
        if (rw_interest_check(f, len) || apply_interest(r, peer, f, len))
            s->stats.route_frames_rejected++;
        return;
    }
    if (type == RW_URL) {
        rw_str url;
        if (rw_url_decode(f, len, &url)) {
            s->stats.route_frames_rejected++;
            return;
        }
        cstr(r->v[peer].url, url);
        return;
    }
    rw_msg m;
    if (rw_msg_decode(f, len, &m)) {
        s->stats.route_frames_rejected++;
        return;
    }
    static char to[ROUTE_NAME_MAX + 1], subject[ROUTE_NAME_MAX + 1], reply[ROUTE_NAME_MAX + 1];
    cstr(to, m.to);
    cstr(subject, m.subject.len ? m.subject : m.to);
    cstr(reply, m.reply);
    s->stats.route_msgs_in++;
    want w = {&m};
    clients_deliver_remote(s, to, subject, m.reply.len ? reply : NULL, m.hdr, m.hdr_len, m.data,
                           m.len, (m.flags & RW_PLAIN) != 0, want_queue, &w);
}

/* ---- forwarding --------------------------------------------------------------------------- */

typedef struct fwd {
    routes *r;
    size_t peer;
    sub *const *local;
    size_t nlocal;
} fwd;

static int served_here(const fwd *w, const char *queue)
{
    for (size_t i = 0; i < w->nlocal; i++)
        if (w->local[i] && w->local[i]->queue && !strcmp(w->local[i]->queue, queue)) return 1;
    return 0;
}

static int on_match(void *arg, const char *subject, const char *queue, uint32_t count)
{
    fwd *w = arg;
    routes *r = w->r;
    (void)subject;
    if (!queue) {
        r->v[w->peer].plain = 1;
        return 0;
    }
    if (served_here(w, queue)) return 0;
    if (r->ncands == r->cands_cap) {
        size_t nc = r->cands_cap ? r->cands_cap * 2 : 16;
        cand *v = realloc(r->cands, nc * sizeof *v);
        if (!v) return 0;
        r->cands = v;
        r->cands_cap = nc;
    }
    r->cands[r->ncands++] = (cand){w->peer, queue, count};
    return 0;
}

/* Each queue group among the candidates goes to one peer, drawn with weight its member count
 * (a peer matching the group through several subjects counts each). */
static void pick_queues(routes *r)
{
    while (r->ncands) {
        const char *q = r->cands[0].queue;
        uint64_t total = 0;
        for (size_t i = 0; i < r->ncands; i++)
            if (!strcmp(r->cands[i].queue, q)) total += r->cands[i].count;
        uint64_t pick = total ? (uint64_t)rand() % total : 0, acc = 0;
        size_t left = 0, chosen = SIZE_MAX;
        for (size_t i = 0; i < r->ncands; i++) {
            cand c = r->cands[i];
            if (strcmp(c.queue, q)) {
                r->cands[left++] = c;
                continue;
            }
            if (chosen == SIZE_MAX && pick < acc + c.count) chosen = c.peer;
            acc += c.count;
        }
        r->ncands = left;
        if (chosen == SIZE_MAX) continue;
        rpeer *p = &r->v[chosen];
        int dup = 0;
        for (size_t k = 0; k < p->nq; k++) dup |= !strcmp(p->queues[k], q);
        if (!dup && p->nq < ROUTE_QUEUES_MAX) p->queues[p->nq++] = q;
    }
}

size_t route_forward(server *s, const char *to, const char *subject, const char *reply,
                     const void *hdr, size_t hdr_len, const void *data, size_t len,
                     sub *const *local, size_t n)
{
    routes *r = s->routes;
    if (!r) return 0;
    /* Announcements go before the message: a client that subscribed to its reply inbox and then
     * published a request has the inbox known at the responder's server before the request. */
    flush_pending(r);
    size_t any = 0;
    r->ncands = 0;
    for (size_t i = 0; i < r->n; i++) {
        rpeer *p = &r->v[i];
        p->plain = 0;
        p->nq = 0;
        if (!p->up || !interest_size(p->remote)) continue;
        fwd w = {r, i, local, n};
        interest_match(p->remote, to, on_match, &w);
        any = 1;
    }
    if (!any) return 0;
    pick_queues(r);
    size_t sent = 0;
    for (size_t i = 0; i < r->n; i++) {
        rpeer *p = &r->v[i];
        if (!p->up || (!p->plain && !p->nq)) continue;
        size_t bound = rw_msg_head_bound(to, subject, reply, p->queues, p->nq), hl;
        if (bound > r->head_cap) {
            uint8_t *nb = realloc(r->head, bound);
            if (!nb) continue;
            r->head = nb;
            r->head_cap = bound;
        }
        if (rw_msg_head(r->head, r->head_cap, &hl, p->plain ? RW_PLAIN : 0, to, subject, reply,
                        p->queues, p->nq, hdr, hdr_len, data, len)) {
            s->stats.route_msgs_dropped++;
            continue;
        }
        jr_iovec iov[3] = {{r->head, hl}, {hdr, hdr_len}, {data, len}};
        if (peers_route_send(s, i, iov, 3, 0)) {
            s->stats.route_msgs_dropped++;
            continue;
        }
        s->stats.route_msgs_out++;
        sent++;
    }
    return sent;
}

typedef struct anyq {
    int found;
} anyq;

static int on_any(void *arg, const char *subject, const char *queue, uint32_t count)
{
    (void)subject;
    (void)queue;
    (void)count;
    ((anyq *)arg)->found = 1;
    return 1;
}

int route_interest(const server *s, const char *subject)
{
    const routes *r = s->routes;
    for (size_t i = 0; r && i < r->n; i++) {
        anyq a = {0};
        if (r->v[i].up && interest_match(r->v[i].remote, subject, on_any, &a) && a.found) return 1;
    }
    return 0;
}
