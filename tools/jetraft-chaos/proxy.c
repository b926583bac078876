/*
 * proxy.c — the fault-injecting TCP proxy between the servers, on a libuv loop of its own
 * thread.
 *
 * For each pair a < b one listener: a dials it, the proxy dials b's cluster port and forwards
 * both ways. It knows the plain session's framing (examples/server/session_plain.c: every unit,
 * the hello included, is a 4-byte big-endian length and that many bytes), so it drops, delays
 * and cuts whole frames, never bytes in the middle of one: a cut direction (a one-way
 * partition) loses every frame as a dead link would, a lossy one some, a slow one holds each
 * frame for its delay (in order, as TCP delivers). The hellos always pass, so the servers
 * connect whatever the faults, and find their frames lost. proxy_reset_node closes every
 * connection of a server (its links break; the servers redial). A length above 64 MiB (not a
 * frame of the plain session) closes the connection.
 *
 * Link faults are read under C.lmu at each frame; the nemesis changes them there.
 */
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "chaos.h"

#define MAX_UNIT (64u << 20)

typedef struct qframe {
    struct qframe *next;
    uint64_t release_ms;
    size_t len;
    uint8_t data[];
} qframe;

struct pconn;

typedef struct half {
    struct pconn *c;
    int from, to;
    uv_tcp_t *src, *dst;
    uint8_t *buf;
    size_t len, cap;
    int hello_seen;
    qframe *head, *tail;
    uint64_t last_release;
    uv_timer_t timer;
} half;

typedef struct pconn {
    struct pconn *next;
    int a, b;
    uv_tcp_t down, up; /* from a (accepted), to b (dialled) */
    uv_connect_t creq;
    half ab, ba;
    int closing, handles_open;
} pconn;

typedef struct plistener {
    uv_tcp_t tcp;
    int a, b;
} plistener;

static uv_loop_t loop;
static uv_async_t wake;
static pthread_t thread;
static plistener listeners[MAXN][MAXN];
static pconn *conns;
static uint64_t prng;
static int reset_req[MAXN]; /* under lmu */
static int stop_req;

static void on_handle_closed(uv_handle_t *h)
{
    pconn *c = ((half *)h->data)->c;
    if (--c->handles_open > 0) return;
    for (half *hf = &c->ab; hf; hf = hf == &c->ab ? &c->ba : NULL) {
        for (qframe *q = hf->head, *n; q; q = n) {
            n = q->next;
            free(q);
        }
        free(hf->buf);
    }
    free(c);
}

static void conn_close(pconn *c)
{
    if (c->closing) return;
    c->closing = 1;
    for (pconn **pp = &conns; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    uv_close((uv_handle_t *)&c->down, on_handle_closed);
    uv_close((uv_handle_t *)&c->up, on_handle_closed);
    uv_close((uv_handle_t *)&c->ab.timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->ba.timer, on_handle_closed);
}

static void on_written(uv_write_t *w, int status)
{
    (void)status;
    free(w->data);
    free(w);
}

static void flush(half *h);

static void on_timer(uv_timer_t *t)
{
    flush(t->data);
}

/* Writes every queued frame whose time has come; arms the timer for the next. */
static void flush(half *h)
{
    if (h->c->closing) return;
    uint64_t now = uv_now(&loop);
    while (h->head && h->head->release_ms <= now) {
        qframe *q = h->head;
        h->head = q->next;
        if (!h->head) h->tail = NULL;
        uv_write_t *w = malloc(sizeof *w);
        if (!w) {
            free(q);
            continue;
        }
        w->data = q;
        uv_buf_t b = uv_buf_init((char *)q->data, (unsigned)q->len);
        if (uv_write(w, (uv_stream_t *)h->dst, &b, 1, on_written)) {
            free(q);
            free(w);
        }
    }
    if (h->head) uv_timer_start(&h->timer, on_timer, h->head->release_ms - now, 0);
}

/* One complete unit from h->src: forwarded now, later, or never. */
static void pass_frame(half *h, const uint8_t *p, size_t len)
{
    uint64_t delay = 0;
    if (h->hello_seen) {
        pthread_mutex_lock(&C.lmu);
        link_fault lf = C.links[h->from][h->to];
        int drop = lf.cut > 0 || (lf.drop_pct > 0 && (int)(rng_next(&prng) % 100) < lf.drop_pct);
        if (drop)
            C.frames_dropped++;
        else
            C.frames_fwd++;
        pthread_mutex_unlock(&C.lmu);
        if (drop) return;
        delay = (uint64_t)lf.delay_ms +
                (lf.jitter_ms > 0 ? rng_next(&prng) % (uint64_t)(lf.jitter_ms + 1) : 0);
    }
    h->hello_seen = 1;
    qframe *q = malloc(sizeof *q + len);
    if (!q) return;
    memcpy(q->data, p, len);
    q->len = len;
    q->next = NULL;
    uint64_t rel = uv_now(&loop) + delay;
    if (rel < h->last_release) rel = h->last_release;
    h->last_release = rel;
    q->release_ms = rel;
    if (h->tail)
        h->tail->next = q;
    else
        h->head = q;
    h->tail = q;
    flush(h);
}

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
    (void)hd;
    (void)suggested;
    static char slab[65536];
    *buf = uv_buf_init(slab, sizeof slab);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    half *h = s->data;
    pconn *c = h->c;
    if (nread < 0) {
        conn_close(c);
        return;
    }
    if (nread == 0 || c->closing) return;
    if (h->len + (size_t)nread > h->cap) {
        size_t cap = h->cap ? h->cap : 65536;
        while (cap < h->len + (size_t)nread) cap *= 2;
        uint8_t *nb = realloc(h->buf, cap);
        if (!nb) {
            conn_close(c);
            return;
        }
        h->buf = nb;
        h->cap = cap;
    }
    memcpy(h->buf + h->len, buf->base, (size_t)nread);
    h->len += (size_t)nread;
    size_t off = 0;
    while (h->len - off >= 4) {
        const uint8_t *p = h->buf + off;
        uint32_t n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (n > MAX_UNIT) {
            conn_close(c);
            return;
        }
        if (h->len - off < 4 + (size_t)n) break;
        pass_frame(h, p, 4 + (size_t)n);
        off += 4 + (size_t)n;
    }
    memmove(h->buf, h->buf + off, h->len - off);
    h->len -= off;
}

static void on_up_connected(uv_connect_t *req, int status)
{
    pconn *c = req->data;
    if (c->closing) return;
    if (status) {
        conn_close(c);
        return;
    }
    uv_read_start((uv_stream_t *)&c->down, on_alloc, on_read);
    uv_read_start((uv_stream_t *)&c->up, on_alloc, on_read);
}

static void on_accept(uv_stream_t *ls, int status)
{
    plistener *l = ls->data;
    if (status) return;
    pconn *c = calloc(1, sizeof *c);
    if (!c) return;
    c->a = l->a;
    c->b = l->b;
    c->ab = (half){.c = c, .from = c->a, .to = c->b, .src = &c->down, .dst = &c->up};
    c->ba = (half){.c = c, .from = c->b, .to = c->a, .src = &c->up, .dst = &c->down};
    uv_tcp_init(&loop, &c->down);
    uv_tcp_init(&loop, &c->up);
    uv_timer_init(&loop, &c->ab.timer);
    uv_timer_init(&loop, &c->ba.timer);
    c->handles_open = 4;
    /* every handle's data is its direction, through which on_handle_closed finds c */
    c->down.data = c->ab.timer.data = &c->ab;
    c->up.data = c->ba.timer.data = &c->ba;
    c->next = conns;
    conns = c;
    if (uv_accept(ls, (uv_stream_t *)&c->down)) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->down, 1);
    uv_tcp_nodelay(&c->up, 1);
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", C.cluster_port[c->b], &sa);
    c->creq.data = c;
    if (uv_tcp_connect(&c->creq, &c->up, (struct sockaddr *)&sa, on_up_connected)) conn_close(c);
}

static void on_wake(uv_async_t *h)
{
    (void)h;
    int reset[MAXN];
    pthread_mutex_lock(&C.lmu);
    memcpy(reset, reset_req, sizeof reset);
    memset(reset_req, 0, sizeof reset_req);
    int stop = stop_req;
    pthread_mutex_unlock(&C.lmu);
    for (pconn *c = conns, *n; c; c = n) {
        n = c->next;
        if (stop || reset[c->a] || reset[c->b]) conn_close(c);
    }
    if (stop) {
        for (int a = 0; a < C.n; a++)
            for (int b = a + 1; b < C.n; b++) uv_close((uv_handle_t *)&listeners[a][b].tcp, NULL);
        uv_close((uv_handle_t *)&wake, NULL);
    }
}

static void *run(void *arg)
{
    (void)arg;
    uv_run(&loop, UV_RUN_DEFAULT);
    return NULL;
}

int proxy_start(void)
{
    prng = C.seed ^ 0x70726f7879u;
    if (uv_loop_init(&loop)) return -1;
    if (uv_async_init(&loop, &wake, on_wake)) return -1;
    for (int a = 0; a < C.n; a++)
        for (int b = a + 1; b < C.n; b++) {
            plistener *l = &listeners[a][b];
            l->a = a;
            l->b = b;
            uv_tcp_init(&loop, &l->tcp);
            l->tcp.data = l;
            struct sockaddr_in sa;
            uv_ip4_addr("127.0.0.1", C.proxy_port[a][b], &sa);
            if (uv_tcp_bind(&l->tcp, (struct sockaddr *)&sa, 0) ||
                uv_listen((uv_stream_t *)&l->tcp, 64, on_accept))
                return -1;
        }
    return pthread_create(&thread, NULL, run, NULL) ? -1 : 0;
}

void proxy_reset_node(int i)
{
    pthread_mutex_lock(&C.lmu);
    reset_req[i] = 1;
    pthread_mutex_unlock(&C.lmu);
    uv_async_send(&wake);
}

void proxy_stop(void)
{
    pthread_mutex_lock(&C.lmu);
    stop_req = 1;
    pthread_mutex_unlock(&C.lmu);
    uv_async_send(&wake);
    pthread_join(thread, NULL);
    uv_loop_close(&loop);
}
