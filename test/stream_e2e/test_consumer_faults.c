/*
 * Consumers under faults, randomized. Per seed (every choice from one PRNG seeded by the seed):
 *  - 3 or 5 nodes, a stream C (R3, or R5 on 5 nodes), a durable pull consumer D (R3, explicit
 *    acks, an ack wait of 300..800 ms, sometimes a backoff, a max_deliver, a small
 *    max_ack_pending);
 *  - a publisher of N messages, each with a msg id (re-published until acknowledged), and
 *    2..4 fetch loops, each with one fetch at a time on a random running node, random batch,
 *    expiry and no_wait; every delivered message is then acked confirmed (with a callback) or
 *    fire-and-forget, NAKed, or left to expire, a little later and on a random node;
 *  - meanwhile links drop, duplicate and reorder frames; nodes crash (power loss with torn
 *    writes; the consumer's leader often), restart, pause; partitions come and go; in a third
 *    of the seeds wall clocks step by up to 2 s either way (deadlines are the leader's wall
 *    clock);
 *  - then everything heals and the loops drain the consumer (every delivery acked, confirmed)
 *    until its leader reports everything acknowledged; sometimes every node then crashes and
 *    restarts once more.
 *
 * Every normal entry any node applies to the consumer's Raft group is recorded (jr_sim
 * on_apply): the committed log, identical on every node that applies an index. Replayed in
 * index order through a reference jr__cstate it says which deliveries and acks took effect,
 * so the checks can be exact:
 *  (1) every acknowledged publish is delivered to a client at least once, and leaves the
 *      consumer's pending set by a client's ACK (never by a TERM the library made up; by
 *      MAXDELIV only once max_deliver deliveries were recorded);
 *  (2) acks: a confirmed ACK that completed with status 0 was committed by then (an applied ACK
 *      of its message is in the log at an index some node applied before the callback ran).
 *      One answered JR_ENOTFOUND "message not pending" likewise finds its message acked by then.
 *      After that no delivery of the message is recorded, and no fetch issued after the
 *      callback receives it. A fetch issued earlier still may: a delivery recorded before the
 *      ACK can be in an answer still on its way (or a request still waiting for it), so the
 *      strongest client-side property is about fetches issued after the confirmation, and the
 *      log-side one is that every delivery a client sees was recorded before the ACK;
 *  (3) delivery counts are exact: every delivery a client sees is a DELIVERED record of the
 *      committed log that took effect, with its consumer seq, stream seq and count; no two
 *      deliveries seen share a (stream seq, count). A recorded delivery no client saw is lost
 *      in a fetch whose answer may not have arrived: one that ended with a negative status, a
 *      409 (Leadership Change: its leader's in-flight deliveries may still commit), or a 408
 *      from the requester's own deadline (expires + 2 election timeouts) rather than the
 *      leader's. Each lost delivery is matched to such a fetch issued before the delivery
 *      committed, at most batch - received per fetch (Hall's condition on nested sets);
 *  (4) consumer seqs are unique across every delivery seen (checked as they arrive, and implied
 *      by (3): the committed log's consumer seqs grow);
 *  (5) at the end the leader reports num_ack_pending 0, num_pending 0, delivered and ack floor
 *      at the stream's last seq, and every node's replica converges to the reference state
 *      (byte-identical snapshot encodings).
 *
 * JR_SEEDS=first:count picks the seeds (default 1:60; soak 1000:3000). A failure names the seed,
 * the step, and its replay command; JR_E2E_LOG=1 prints the nodes' log lines, JR_CF_TRACE=1 the
 * faults and fetches as they happen and, on a failure, the committed log record by record.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer/op.h"
#include "consumer/state.h"
#include "e2e.h"
#include "js/js.h"
#include "util/checksum.h"
#include "util/rand.h"

#define STREAM "C"
#define CONSUMER "D"
#define MAX_MSGS 512
#define MAX_FETCH 8192
#define MAX_ACKS 32768
#define MAX_OBS 32768
#define MAX_LOOPS 4
#define MAX_DC 64 /* delivery counts tracked per message (a bit each) */

/* One publish. */
typedef struct pub {
    int done, status;
    uint64_t seq;
    int issued, tries;
    uint64_t acked; /* its seq once acknowledged */
} pub;

/* One fetch call. */
typedef struct fetch {
    int loop;
    unsigned via;
    int64_t batch, expires_ns, max_bytes;
    int no_wait;
    uint64_t ticket;    /* order of the call among fetches and ack confirmations */
    uint64_t issued_ns; /* simulated time of the call */
    uint64_t end_ns;
    int done, status, end_code;
    int lost_leader; /* ended with 409 Leadership Change */
    uint32_t got;
} fetch;

/* One acknowledgement to send (queued by a delivery), or sent with a callback. */
typedef struct ack {
    uint64_t at_ns; /* send at (queued) */
    uint64_t sseq;
    int kind, confirm;
    int64_t delay_ns;
    char token[160];
    int sent, done, status;
    uint64_t done_ns;
} ack;

/* A delivery a client saw. */
typedef struct obs {
    uint64_t sseq, dseq;
    uint32_t dc;
    uint32_t fetch;
    uint64_t ns;
} obs;

/* Per stream seq: what clients saw and did. */
typedef struct seqst {
    uint64_t dcs;              /* bit dc-1: a delivery with this count was seen */
    uint32_t nobs;             /* deliveries seen */
    uint32_t dc_fetch[MAX_DC]; /* the fetch that got each count */
    uint64_t conf_ticket;      /* first confirmed ACK with status 0: its ticket (0 none) */
    uint64_t conf_ns;          /* ... and when */
    uint64_t nf_ns;            /* first confirmed ACK answered JR_ENOTFOUND (not pending): when */
    int client_done;           /* a confirmed ACK ended with 0 or JR_ENOTFOUND (not pending) */
    char last_token[160];      /* the last delivery's token (the drain acks with it) */
} seqst;

/* The consumer group's committed log as the nodes applied it, by index. */
typedef struct lent {
    uint8_t *data;
    size_t len;
    uint64_t term;
    uint64_t hash;
    uint64_t first_ns; /* when a node first applied it */
} lent;

/* Reference replay: a DELIVERED record that took effect, by consumer seq. */
typedef struct rdel {
    uint64_t sseq;
    uint32_t dc;
    uint64_t index;
    uint64_t ns;
    int seen;
} rdel;

typedef struct run {
    uint64_t seed;
    jr__rand rnd;
    e2e c;
    unsigned n, f;
    int replicas;
    uint64_t cgroup; /* the consumer's Raft group */
    int trace;
    uint64_t election_ns;
    /* config */
    int64_t ack_wait_ns;
    int64_t backoff[3];
    size_t nbackoff;
    int64_t max_deliver, max_ack_pending;
    /* workload */
    size_t nmsgs;
    pub pubs[MAX_MSGS];
    size_t next_pub;
    fetch fetches[MAX_FETCH];
    size_t nfetches;
    int loop_fetch[MAX_LOOPS]; /* the loop's fetch in flight (-1 none) */
    unsigned nloops;
    ack acks[MAX_ACKS];
    size_t nacks, acks_sent;
    obs obs[MAX_OBS];
    size_t nobs;
    seqst seqs[MAX_MSGS + 64];
    uint8_t *dseq_seen;
    size_t dseq_cap;
    uint64_t ticket;
    int draining;
    int quiet;           /* the drain saw everything acked: no new fetches */
    int64_t drain_batch; /* a drain fetch's batch (0: 50) */
    /* faults */
    int down[E2E_MAX];
    uint64_t down_since[E2E_MAX];
    unsigned crashes, leader_crashes, partitions, pauses, jumps;
    int clock_jumps; /* wall clocks step now and then */
    /* the log */
    lent *log;
    size_t log_cap;
    uint64_t log_max;
    char fail_ctx[256];
} run;

static run *g; /* the run the callbacks report to (Check runs each test in its own process) */

static void dump_log(void);

static void failf(const char *fmt, ...)
{
    if (g->trace) dump_log();
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ck_abort_msg("consumer faults seed %llu at %.3f s: %s\n  replay: JR_SEEDS=%llu:1 "
                 "build/test/stream_e2e/test_consumer_faults",
                 (unsigned long long)g->seed, (double)jr_sim_now(g->c.sim) / 1e9, buf,
                 (unsigned long long)g->seed);
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) failf(__VA_ARGS__);                                                           \
    } while (0)

static uint64_t rnd(uint64_t n)
{
    return jr__rand_below(&g->rnd, n);
}

static void tracef(const char *fmt, ...)
{
    if (!g->trace) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "  [%.6f] ", (double)jr_sim_now(g->c.sim) / 1e9);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The log ------------------------------------------------------------------------------------*/

static void on_apply(void *arg, unsigned node, uint64_t group, uint64_t index, uint64_t term,
                     const void *data, size_t len)
{
    (void)arg;
    if (!g || !g->cgroup || group != g->cgroup) return;
    if (index >= g->log_cap) {
        size_t cap = g->log_cap ? g->log_cap : 1024;
        while (cap <= index) cap *= 2;
        lent *nl = realloc(g->log, cap * sizeof *nl);
        ck_assert_ptr_nonnull(nl);
        memset(nl + g->log_cap, 0, (cap - g->log_cap) * sizeof *nl);
        g->log = nl;
        g->log_cap = cap;
    }
    lent *e = &g->log[index];
    uint64_t h = jr__xxh3(data, len);
    if (e->data) {
        /* Raft: a committed index holds one entry, whoever applies it */
        CHECK(e->term == term && e->hash == h && e->len == len,
              "n%u applied consumer index %llu as another entry (term %llu, was %llu)", node,
              (unsigned long long)index, (unsigned long long)term, (unsigned long long)e->term);
        return;
    }
    e->data = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(e->data);
    memcpy(e->data, data, len);
    e->len = len;
    e->term = term;
    e->hash = h;
    e->first_ns = jr_sim_now(g->c.sim);
    if (index > g->log_max) g->log_max = index;
}

/* JR_CF_TRACE: the committed log as recorded, on a failure. */
static void dump_log(void)
{
    static const char *const names[] = {"?",    "DELIVERED", "ACK",   "NAK",     "PROGRESS",
                                        "TERM", "SKIP",      "RESET", "MAXDELIV"};
    for (uint64_t i = 1; i <= g->log_max; i++) {
        const lent *e = &g->log[i];
        if (!e->data) {
            fprintf(stderr, "  log %llu: (not seen)\n", (unsigned long long)i);
            continue;
        }
        fprintf(stderr, "  log %llu term %llu at %.6f:", (unsigned long long)i,
                (unsigned long long)e->term, (double)e->first_ns / 1e9);
        jr__cop_iter it;
        if (jr__cop_iter_init(&it, e->data, e->len) == 0) {
            jr__crec rec;
            int got;
            while (jr__cop_next(&it, &rec, &got) == 0 && got)
                fprintf(stderr, " %s{s%llu d%llu c%u}", names[rec.type <= 8 ? rec.type : 0],
                        (unsigned long long)rec.sseq, (unsigned long long)rec.dseq, rec.dc);
        }
        fputc('\n', stderr);
    }
}

/* Nodes --------------------------------------------------------------------------------------*/

static int live(unsigned i)
{
    return !g->down[i] && e2e_node(&g->c, i) != NULL;
}

static unsigned pick_live(void)
{
    for (;;) {
        unsigned i = (unsigned)rnd(g->n);
        if (live(i)) return i;
    }
}

/* The consumer's leader as the live replicas see it (-1: none known). */
static int consumer_leader(void)
{
    for (unsigned i = 0; i < g->n; i++) {
        if (!live(i)) continue;
        int l = e2e_consumer_leader(&g->c, i, STREAM, CONSUMER);
        if (l >= 0 && live((unsigned)l)) return l;
    }
    return -1;
}

/* Publishing ---------------------------------------------------------------------------------*/

static void pub_cb(void *arg, int status, const jr_pub_ack *a)
{
    pub *p = arg;
    CHECK(!p->done, "a publish callback ran twice");
    p->done = 1;
    p->status = status;
    p->seq = a ? a->seq : 0;
}

static void publish_some(void)
{
    size_t out = 0;
    for (size_t i = 0; i < g->next_pub; i++) out += g->pubs[i].issued;
    for (int k = 0; k < 4 && out < 8; k++) {
        size_t i = SIZE_MAX;
        for (size_t j = 0; j < g->next_pub; j++)
            if (!g->pubs[j].issued && !g->pubs[j].acked) {
                i = j;
                break;
            }
        if (i == SIZE_MAX) {
            if (g->next_pub >= g->nmsgs) return;
            i = g->next_pub++;
        }
        char subject[32], data[32], id[32];
        snprintf(subject, sizeof subject, "c.%zu", i % 7);
        snprintf(data, sizeof data, "payload %zu", i);
        snprintf(id, sizeof id, "id-%zu", i);
        jr_pub_opts o;
        jr_pub_opts_init(&o);
        o.msg_id = id;
        pub *p = &g->pubs[i];
        p->done = 0;
        p->tries++;
        p->issued = 1;
        out++;
        ck_assert_int_eq(jr_publish(e2e_node(&g->c, pick_live()), subject, NULL, 0, data,
                                    strlen(data), &o, pub_cb, p),
                         0);
    }
}

static void publish_reap(void)
{
    for (size_t j = 0; j < g->next_pub; j++) {
        pub *p = &g->pubs[j];
        if (!p->issued || !p->done) continue;
        p->issued = 0;
        if (p->status != 0) continue;
        CHECK(!p->acked || p->acked == p->seq, "publish %zu acknowledged as seq %llu and %llu", j,
              (unsigned long long)p->acked, (unsigned long long)p->seq);
        p->acked = p->seq;
    }
}

static int published_all(void)
{
    if (g->next_pub < g->nmsgs) return 0;
    for (size_t j = 0; j < g->nmsgs; j++)
        if (!g->pubs[j].acked) return 0;
    return 1;
}

/* Acks ---------------------------------------------------------------------------------------*/

static void ack_cb(void *arg, int status, const char *msg)
{
    ack *a = arg;
    CHECK(!a->done, "an ack callback ran twice");
    a->done = 1;
    a->status = status;
    a->done_ns = jr_sim_now(g->c.sim);
    g->ticket++;
    seqst *s = &g->seqs[a->sseq];
    /* JR_ENOTFOUND also answers a server whose meta view does not know the consumer yet
     * (cut off from the meta group): "consumer not found", which says nothing of the message */
    int not_pending = status == JR_ENOTFOUND && msg && strcmp(msg, "message not pending") == 0;
    if (a->kind == JR_ACK_ACK && (status == 0 || not_pending)) s->client_done = 1;
    if (a->kind == JR_ACK_ACK && not_pending && !s->nf_ns) s->nf_ns = a->done_ns;
    tracef("ack of seq %llu (kind %d) answered %d: %s", (unsigned long long)a->sseq, a->kind,
           status, msg);
    if (a->kind == JR_ACK_ACK && status == 0 && !s->conf_ticket) {
        s->conf_ticket = g->ticket;
        s->conf_ns = a->done_ns;
    }
}

static void queue_ack(uint64_t sseq, const char *token, int kind, int confirm, uint64_t at)
{
    CHECK(g->nacks < MAX_ACKS, "too many acks for the test's tables");
    ack *a = &g->acks[g->nacks++];
    memset(a, 0, sizeof *a);
    a->at_ns = at;
    a->sseq = sseq;
    a->kind = kind;
    a->confirm = confirm;
    a->delay_ns = kind == JR_ACK_NAK && rnd(2) ? (int64_t)(rnd(200) * MS) : 0;
    snprintf(a->token, sizeof a->token, "%s", token);
}

static void send_due_acks(void)
{
    uint64_t now = jr_sim_now(g->c.sim);
    for (size_t i = g->acks_sent; i < g->nacks; i++) {
        ack *a = &g->acks[i];
        if (a->sent || a->at_ns > now) continue;
        a->sent = 1;
        int rc = jr_consumer_ack(e2e_node(&g->c, pick_live()), a->token, a->kind, a->delay_ns, NULL,
                                 a->confirm ? ack_cb : NULL, a);
        CHECK(rc == 0, "jr_consumer_ack refused: %s", jr_strerror(rc));
        if (!a->confirm) a->done = 1;
    }
    while (g->acks_sent < g->nacks && g->acks[g->acks_sent].sent) g->acks_sent++;
}

static int acks_settled(void)
{
    for (size_t i = 0; i < g->nacks; i++)
        if (!g->acks[i].done) return 0;
    return 1;
}

/* Fetching -----------------------------------------------------------------------------------*/

static void mark_dseq(uint64_t dseq)
{
    if (dseq >= g->dseq_cap) {
        size_t cap = g->dseq_cap ? g->dseq_cap : 4096;
        while (cap <= dseq) cap *= 2;
        uint8_t *nb = realloc(g->dseq_seen, cap);
        ck_assert_ptr_nonnull(nb);
        memset(nb + g->dseq_cap, 0, cap - g->dseq_cap);
        g->dseq_seen = nb;
        g->dseq_cap = cap;
    }
    CHECK(!g->dseq_seen[dseq], "consumer seq %llu delivered twice", (unsigned long long)dseq);
    g->dseq_seen[dseq] = 1;
}

static void fetch_cb(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                     const jr_fetch_end *end)
{
    uint32_t fi = (uint32_t)(uintptr_t)arg;
    fetch *f = &g->fetches[fi];
    CHECK(!f->done, "fetch %u: a callback after its end", fi);
    uint64_t now = jr_sim_now(g->c.sim);
    if (!m) {
        f->done = 1;
        f->status = status;
        f->end_code = status == 0 && end ? end->code : -1;
        f->end_ns = now;
        f->lost_leader = status == 0 && end && end->code == 409 && end->text &&
                         strcmp(end->text, "Leadership Change") == 0;
        if (status == 0) CHECK(end != NULL, "fetch %u: an end without jr_fetch_end", fi);
        if (g->loop_fetch[f->loop] == (int)fi) g->loop_fetch[f->loop] = -1;
        tracef("fetch %u via n%u ends: %d %s (%u msgs)", fi, f->via, f->end_code,
               status ? msg : (end ? end->text : ""), f->got);
        return;
    }
    CHECK(status == 0 && !end, "fetch %u: a message with status %d", fi, status);
    f->got++;
    CHECK(f->got <= (uint64_t)f->batch, "fetch %u: %u messages for a batch of %lld", fi, f->got,
          (long long)f->batch);
    uint64_t s = m->stream_seq;
    CHECK(s >= 1 && s <= g->nmsgs + 32, "fetch %u: stream seq %llu was never published", fi,
          (unsigned long long)s);
    CHECK(m->delivered >= 1 && m->delivered <= MAX_DC, "fetch %u: delivery count %u", fi,
          m->delivered);
    char want[32];
    snprintf(want, sizeof want, "payload ");
    CHECK(m->len > strlen(want) && memcmp(m->data, want, strlen(want)) == 0,
          "fetch %u: seq %llu carries something else", fi, (unsigned long long)s);
    seqst *st = &g->seqs[s];
    uint64_t bit = 1ull << (m->delivered - 1);
    /* (3) one delivery per count: a second one would mean two leaders handed it out */
    CHECK(!(st->dcs & bit),
          "seq %llu delivered twice with count %u: to fetch %u, then to fetch %u via n%u (consumer "
          "seq %llu)",
          (unsigned long long)s, m->delivered, st->dc_fetch[m->delivered - 1], fi, f->via,
          (unsigned long long)m->consumer_seq);
    st->dcs |= bit;
    st->dc_fetch[m->delivered - 1] = fi;
    st->nobs++;
    /* (4) */
    mark_dseq(m->consumer_seq);
    /* (2) a fetch issued after the confirmation of an ACK never gets the message */
    CHECK(!st->conf_ticket || f->ticket < st->conf_ticket,
          "seq %llu (count %u) delivered to fetch %u issued after its ACK was confirmed at %.6f",
          (unsigned long long)s, m->delivered, fi, (double)st->conf_ns / 1e9);
    if (g->max_deliver > 0)
        CHECK(m->delivered <= g->max_deliver, "seq %llu delivered %u times (max_deliver %lld)",
              (unsigned long long)s, m->delivered, (long long)g->max_deliver);
    CHECK(g->nobs < MAX_OBS, "too many deliveries for the test's tables");
    obs *o = &g->obs[g->nobs++];
    o->sseq = s;
    o->dseq = m->consumer_seq;
    o->dc = m->delivered;
    o->fetch = fi;
    o->ns = now;
    snprintf(st->last_token, sizeof st->last_token, "%s", m->ack_token);
    /* what the client does with it */
    if (g->draining) {
        queue_ack(s, m->ack_token, JR_ACK_ACK, 1, now);
        return;
    }
    uint64_t dice = rnd(100);
    uint64_t at = now + rnd(2) * rnd((uint64_t)g->ack_wait_ns + 1);
    if (dice < 35)
        queue_ack(s, m->ack_token, JR_ACK_ACK, 1, at);
    else if (dice < 70)
        queue_ack(s, m->ack_token, JR_ACK_ACK, 0, at);
    else if (dice < 80)
        queue_ack(s, m->ack_token, JR_ACK_NAK, rnd(2), at);
    else if (dice < 83)
        queue_ack(s, m->ack_token, JR_ACK_PROGRESS, rnd(2), at);
    /* else: never acked; redelivered after its ack wait */
}

static void fetch_start(unsigned loop)
{
    CHECK(g->nfetches < MAX_FETCH, "too many fetches for the test's tables");
    uint32_t fi = (uint32_t)g->nfetches++;
    fetch *f = &g->fetches[fi];
    memset(f, 0, sizeof *f);
    f->loop = (int)loop;
    f->via = pick_live();
    if (g->draining) {
        f->batch = g->drain_batch ? g->drain_batch : 50;
        f->expires_ns = 400 * (int64_t)MS;
    } else {
        f->batch = 1 + (int64_t)rnd(rnd(4) ? 10 : 40);
        f->expires_ns = (int64_t)((50 + rnd(1500)) * MS);
        f->no_wait = rnd(6) == 0;
        if (rnd(10) == 0) f->max_bytes = (int64_t)(1 + rnd(60)); /* ~15 bytes a message */
    }
    f->ticket = ++g->ticket;
    f->issued_ns = jr_sim_now(g->c.sim);
    g->loop_fetch[loop] = (int)fi;
    jr_fetch_opts o;
    jr_fetch_opts_init(&o);
    o.batch = f->batch;
    o.expires_ns = f->expires_ns;
    o.no_wait = f->no_wait;
    o.max_bytes = f->max_bytes;
    tracef("fetch %u via n%u: batch %lld expires %lld ms%s max_bytes %lld", fi, f->via,
           (long long)f->batch, (long long)(f->expires_ns / (int64_t)MS),
           f->no_wait ? " no_wait" : "", (long long)f->max_bytes);
    int rc = jr_consumer_fetch(e2e_node(&g->c, f->via), STREAM, CONSUMER, &o, fetch_cb,
                               (void *)(uintptr_t)fi);
    CHECK(rc == 0, "jr_consumer_fetch refused: %s", jr_strerror(rc));
}

static void fetch_some(void)
{
    for (unsigned l = 0; l < g->nloops; l++)
        if (g->loop_fetch[l] < 0 && !g->quiet && (g->draining || rnd(3) != 0)) fetch_start(l);
}

static int fetches_settled(void)
{
    for (unsigned l = 0; l < g->nloops; l++)
        if (g->loop_fetch[l] >= 0) return 0;
    return 1;
}

/* A fetch whose answer may have been lost with deliveries in it (see the header, (3)). */
static int uncertain(const fetch *f)
{
    if (f->status != 0 || f->lost_leader) return 1;
    return f->end_code == 408 &&
           f->end_ns - f->issued_ns >= (uint64_t)f->expires_ns + 2 * g->election_ns;
}

/* Faults -------------------------------------------------------------------------------------*/

static unsigned ndown(void)
{
    unsigned k = 0;
    for (unsigned i = 0; i < g->n; i++) k += g->down[i];
    return k;
}

static void restart(unsigned i)
{
    CHECK(e2e_restart(&g->c, i) == 0, "n%u does not restart", i);
    g->down[i] = 0;
    tracef("restart n%u", i);
}

static void fault(void)
{
    uint64_t now = jr_sim_now(g->c.sim);
    uint64_t dice = rnd(1000);
    if (dice < 25 && ndown() < g->f) {
        int l = consumer_leader();
        unsigned v = l >= 0 && rnd(2) ? (unsigned)l : pick_live();
        g->leader_crashes += (int)v == l;
        g->crashes++;
        tracef("crash n%u%s", v, (int)v == l ? " (the consumer's leader)" : "");
        CHECK(jr_sim_crash(g->c.sim, v) == 0, "crash n%u", v);
        g->down[v] = 1;
        g->down_since[v] = now;
    } else if (dice < 60) {
        for (unsigned i = 0; i < g->n; i++)
            if (g->down[i] && now - g->down_since[i] > 200 * MS && rnd(2)) restart(i);
    } else if (dice < 75) {
        unsigned side[2] = {(unsigned)rnd(g->n), (unsigned)rnd(g->n)};
        size_t k = g->n == 5 && side[0] != side[1] ? 2 : 1;
        jr_sim_partition(g->c.sim, side, k);
        g->partitions++;
        tracef("partition n%u%s", side[0], k == 2 ? " + another" : "");
    } else if (dice < 110) {
        jr_sim_heal(g->c.sim);
    } else if (dice < 125) {
        unsigned v = pick_live();
        uint64_t ns = (50 + rnd(800)) * MS;
        if (jr_sim_pause(g->c.sim, v, ns) == 0) g->pauses++;
        tracef("pause n%u for %llu ms", v, (unsigned long long)(ns / MS));
    } else if (dice < 130 && g->clock_jumps) {
        /* a wall clock steps (NTP): deadlines are the leader's wall clock */
        unsigned v = (unsigned)rnd(g->n);
        int64_t by = ((int64_t)rnd(4001) - 2000) * (int64_t)MS;
        jr_sim_set_wall(g->c.sim, v, (uint64_t)((int64_t)jr_sim_wall(g->c.sim, v) + by));
        g->jumps++;
        tracef("n%u's wall clock jumps by %lld ms", v, (long long)(by / (int64_t)MS));
    }
}

static void set_links(int lossy)
{
    jr_sim_link link;
    jr_sim_link_init(&link);
    if (lossy) {
        link.drop = (double)rnd(30) / 1000;
        link.duplicate = (double)rnd(30) / 1000;
        link.reorder = (double)rnd(60) / 1000;
        link.delay_max_ns = (1 + rnd(3)) * MS;
    }
    for (unsigned a = 0; a < g->n; a++)
        for (unsigned b = 0; b < g->n; b++)
            if (a != b) jr_sim_set_link(g->c.sim, a, b, &link);
}

/* Consumer info ------------------------------------------------------------------------------*/

typedef struct cinfo {
    int done, status;
    jr_consumer_info info;
    char msg[256];
} cinfo;

static void info_cb(void *arg, int status, const char *msg, const jr_consumer_info *in)
{
    cinfo *r = arg;
    CHECK(!r->done, "an info callback ran twice");
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    if (status == 0) {
        r->info = *in;
        r->info.config = NULL;
        r->info.cluster = NULL;
        r->info.stream = r->info.name = NULL;
    }
}

static int cinfo_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((cinfo *)arg)->done;
}

static int info_now(cinfo *r)
{
    memset(r, 0, sizeof *r);
    CHECK(jr_consumer_info_get(e2e_node(&g->c, pick_live()), STREAM, CONSUMER, info_cb, r) == 0,
          "info refused");
    CHECK(jr_sim_run_until(g->c.sim, cinfo_done, r, 60 * SEC) == 0, "consumer info never ended");
    return r->status;
}

typedef struct cres {
    int done, status;
    char msg[256];
} cres;

static void create_cb(void *arg, int status, const char *msg, const char *name)
{
    cres *r = arg;
    (void)name;
    CHECK(!r->done, "a create callback ran twice");
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
}

static int cres_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((cres *)arg)->done;
}

static int all_acked(const cinfo *r, uint64_t last)
{
    return r->status == 0 && r->info.num_ack_pending == 0 && r->info.num_pending == 0 &&
           r->info.ack_floor.stream_seq == last && r->info.delivered.stream_seq == last;
}

static void describe_all(void)
{
    for (unsigned i = 0; i < g->n; i++) {
        char line[512];
        e2e_consumer_describe(&g->c, i, STREAM, CONSUMER, line, sizeof line);
        fprintf(stderr, "  %s\n", line);
    }
}

/* The reference replay -----------------------------------------------------------------------*/

typedef struct ref {
    jr__cstate st;
    rdel *del; /* by consumer seq */
    size_t del_cap;
    uint64_t acked_index[MAX_MSGS + 64]; /* the ACK that took the seq out of pending */
    uint64_t acked_ns[MAX_MSGS + 64];
    uint8_t gone_by[MAX_MSGS + 64]; /* the record type that took it out */
    uint32_t dc[MAX_MSGS + 64];     /* deliveries recorded */
} ref;

static void replay(ref *rf, const jr_consumer_config *cfg)
{
    memset(rf, 0, sizeof *rf);
    jr__cpolicy pol;
    memset(&pol, 0, sizeof pol);
    pol.ack_policy = cfg->ack_policy;
    pol.ack_wait_ns = cfg->ack_wait_ns;
    pol.backoff_ns = cfg->backoff_ns;
    pol.nbackoff = cfg->nbackoff;
    pol.max_deliver = cfg->max_deliver;
    ck_assert_int_eq(jr__cstate_init(&rf->st, NULL, &pol), 0);
    for (uint64_t i = 1; i <= g->log_max; i++) {
        const lent *e = &g->log[i];
        if (!e->data) continue;
        jr__cop_iter it;
        CHECK(jr__cop_iter_init(&it, e->data, e->len) == 0,
              "consumer log index %llu does not decode", (unsigned long long)i);
        for (;;) {
            jr__crec rec;
            int got = 0;
            ck_assert_int_eq(jr__cop_next(&it, &rec, &got), 0);
            if (!got) break;
            jr__capply out;
            ck_assert_int_eq(jr__cstate_apply(&rf->st, &rec, &out), 0);
            if (!out.applied) continue;
            uint64_t s = rec.sseq;
            CHECK(s < MAX_MSGS + 64, "the log names stream seq %llu", (unsigned long long)s);
            switch (rec.type) {
            case JR__COP_DELIVERED:
                if (rec.dseq >= rf->del_cap) {
                    size_t cap = rf->del_cap ? rf->del_cap : 4096;
                    while (cap <= rec.dseq) cap *= 2;
                    rdel *nd = realloc(rf->del, cap * sizeof *nd);
                    ck_assert_ptr_nonnull(nd);
                    memset(nd + rf->del_cap, 0, (cap - rf->del_cap) * sizeof *nd);
                    rf->del = nd;
                    rf->del_cap = cap;
                }
                CHECK(rf->acked_index[s] == 0,
                      "seq %llu delivered again (index %llu) after its ack", (unsigned long long)s,
                      (unsigned long long)i);
                rf->del[rec.dseq] = (rdel){s, rec.dc, i, e->first_ns, 0};
                CHECK(rec.dc == rf->dc[s] + 1, "seq %llu: delivery count %u recorded after %u",
                      (unsigned long long)s, rec.dc, rf->dc[s]);
                rf->dc[s] = rec.dc;
                break;
            case JR__COP_ACK:
            case JR__COP_TERM:
            case JR__COP_MAXDELIV:
                rf->acked_index[s] = i;
                rf->acked_ns[s] = e->first_ns;
                rf->gone_by[s] = rec.type;
                break;
            default:
                break;
            }
        }
    }
}

/* (3): lost deliveries against the fetches that may have lost them. */
static void check_lost(ref *rf, size_t *nlost_out, uint64_t *capacity_out)
{
    /* the uncertain fetches' capacities, in issue order (fetches are issued in time order) */
    uint64_t cap_total = 0;
    size_t nlost = 0;
    uint64_t need = 0;
    /* the lost deliveries in commit order: walk the consumer seqs (commit order = seq order) */
    size_t fi = 0;
    for (uint64_t d = 1; d < rf->del_cap; d++) {
        rdel *x = &rf->del[d];
        if (!x->sseq || x->seen) continue;
        nlost++;
        need++;
        while (fi < g->nfetches && g->fetches[fi].issued_ns <= x->ns) {
            const fetch *f = &g->fetches[fi];
            if (uncertain(f)) cap_total += (uint64_t)f->batch - f->got;
            fi++;
        }
        CHECK(need <= cap_total,
              "delivery of seq %llu (consumer seq %llu, count %u, committed at %.6f) was recorded "
              "but no client got it, and no fetch that might have lost it explains it (%zu lost "
              "so far, room for %llu)",
              (unsigned long long)x->sseq, (unsigned long long)d, x->dc, (double)x->ns / 1e9, nlost,
              (unsigned long long)cap_total);
    }
    for (; fi < g->nfetches; fi++)
        if (uncertain(&g->fetches[fi]))
            cap_total += (uint64_t)g->fetches[fi].batch - g->fetches[fi].got;
    *nlost_out = nlost;
    *capacity_out = cap_total;
}

/* The run ------------------------------------------------------------------------------------*/

/* 1 if every replica of the consumer (3 of them) holds the state `want`. */
static int converged(uint64_t want)
{
    unsigned k = 0;
    for (unsigned i = 0; i < g->n; i++) {
        uint64_t d, applied;
        int rc = e2e_consumer_digest(&g->c, i, STREAM, CONSUMER, &d, &applied);
        if (rc == JR_ENOTFOUND) continue;
        if (rc != 0 || d != want) return 0;
        k++;
    }
    return k == 3;
}

static void run_seed(uint64_t seed)
{
    run *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    g = r;
    r->seed = seed;
    r->trace = getenv("JR_CF_TRACE") != NULL;
    jr__rand_seed(&r->rnd, seed * 0x9e3779b97f4a7c15ull + 17);
    r->n = rnd(3) == 0 ? 5 : 3;
    r->f = (r->n - 1) / 2;
    r->replicas = r->n == 5 && rnd(2) ? 5 : 3;
    r->nmsgs = 150 + rnd(300);
    r->nloops = 2 + (unsigned)rnd(3);
    for (unsigned l = 0; l < MAX_LOOPS; l++) r->loop_fetch[l] = -1;
    r->c.torn_writes = 1;
    r->c.on_apply = on_apply;
    CHECK(e2e_new(&r->c, r->n, seed, 800) == 0, "cluster");
    r->election_ns = jr__js_of(e2e_node(&r->c, 0))->election_ns;
    CHECK(e2e_wait_meta(&r->c, r->n, 20 * SEC) >= 0, "no meta leader");
    r->clock_jumps = rnd(3) == 0;
    int snap = rnd(2);
    if (snap)
        for (unsigned i = 0; i < r->n; i++) e2e_snapshot_every(&r->c, i, 8 + rnd(32));
    const char *subj[] = {"c.>"};
    jr_stream_config scfg;
    e2e_config(&scfg, STREAM, subj, 1, r->replicas);
    e2e_res er;
    CHECK(e2e_add(&r->c, 0, &scfg, &er) == 0, "stream add: %s", er.msg);
    CHECK(e2e_wait_stream(&r->c, 0, STREAM, (size_t)r->replicas - 1, 20 * SEC) >= 0,
          "no stream leader");

    /* the consumer */
    jr_consumer_config cfg;
    jr_consumer_config_init(&cfg);
    cfg.durable_name = CONSUMER;
    cfg.ack_policy = JR_ACK_EXPLICIT;
    cfg.num_replicas = 3;
    r->ack_wait_ns = (int64_t)((300 + rnd(500)) * MS);
    cfg.ack_wait_ns = r->ack_wait_ns;
    if (rnd(4) == 0) {
        r->nbackoff = 1 + rnd(3);
        for (size_t i = 0; i < r->nbackoff; i++) r->backoff[i] = r->ack_wait_ns * (int64_t)(i + 1);
        cfg.backoff_ns = r->backoff;
        cfg.nbackoff = r->nbackoff;
        cfg.ack_wait_ns = 0;
    }
    if (rnd(3) == 0) {
        r->max_deliver = (int64_t)(r->nbackoff + 4 + rnd(4));
        cfg.max_deliver = r->max_deliver;
    }
    if (rnd(4) == 0) {
        r->max_ack_pending = (int64_t)(10 + rnd(30));
        cfg.max_ack_pending = r->max_ack_pending;
    }
    cres cr;
    memset(&cr, 0, sizeof cr);
    CHECK(jr_consumer_create(e2e_node(&r->c, (unsigned)rnd(r->n)), STREAM, &cfg, create_cb, &cr) ==
              0,
          "consumer create refused");
    CHECK(jr_sim_run_until(r->c.sim, cres_done, &cr, 60 * SEC) == 0, "no create answer");
    CHECK(cr.status == 0, "consumer create: %s", cr.msg);
    for (unsigned i = 0; i < r->n && !r->cgroup; i++)
        r->cgroup = e2e_consumer_group(&r->c, i, STREAM, CONSUMER);
    CHECK(r->cgroup != 0, "no consumer group");
    if (snap)
        for (unsigned i = 0; i < r->n; i++) e2e_snapshot_every(&r->c, i, r->c.snap_every[i]);
    set_links(1);

    /* faults and work */
    unsigned rounds = 500 + (unsigned)rnd(500);
    for (unsigned round = 0; round < rounds; round++) {
        publish_some();
        fetch_some();
        send_due_acks();
        jr_sim_run_for(r->c.sim, (1 + rnd(20)) * MS);
        publish_reap();
        fault();
    }

    /* heal and drain */
    tracef("heal and drain");
    jr_sim_heal(r->c.sim);
    for (unsigned i = 0; i < r->n; i++)
        if (r->down[i]) restart(i);
    set_links(0);
    r->draining = 1;
    /* acks queued for later go now (the drain also acks whatever it gets) */
    for (size_t i = r->acks_sent; i < r->nacks; i++) r->acks[i].at_ns = 0;
    uint64_t deadline = jr_sim_now(r->c.sim) + 300 * SEC;
    uint64_t last = 0;
    int ok = 0;
    while (jr_sim_now(r->c.sim) < deadline) {
        for (int k = 0; k < 20; k++) {
            publish_some();
            fetch_some();
            send_due_acks();
            jr_sim_run_for(r->c.sim, 10 * MS);
            publish_reap();
        }
        if (!published_all()) continue;
        if (!last) {
            /* The acknowledged seqs, all distinct, are 1..N. (Not the stream info's last seq:
             * info is computed on whichever server believes it leads, not linearizable.) A
             * message stored twice would show as pending past N and the drain would not end. */
            for (size_t j = 0; j < r->nmsgs; j++) {
                if (r->pubs[j].acked > last) last = r->pubs[j].acked;
                for (size_t k = j + 1; k < r->nmsgs; k++)
                    CHECK(r->pubs[j].acked != r->pubs[k].acked,
                          "publishes %zu and %zu both acknowledged as seq %llu", j, k,
                          (unsigned long long)r->pubs[j].acked);
            }
            CHECK(last == r->nmsgs, "%zu publishes acknowledged up to seq %llu", r->nmsgs,
                  (unsigned long long)last);
        }
        /* every message a client saw and whose ack never went through: ack it again */
        for (uint64_t s = 1; s <= last; s++) {
            seqst *st = &r->seqs[s];
            int queued = 0;
            for (size_t i = r->acks_sent; i < r->nacks && !queued; i++)
                queued = r->acks[i].sseq == s;
            if (st->nobs && !st->client_done && !queued && acks_settled())
                queue_ack(s, st->last_token, JR_ACK_ACK, 1, 0);
        }
        cinfo ci;
        r->quiet = info_now(&ci) == 0 && all_acked(&ci, last);
        if (r->quiet && fetches_settled() && acks_settled()) {
            ok = 1;
            break;
        }
    }
    if (!ok) {
        cinfo ci;
        info_now(&ci);
        describe_all();
        failf("not drained: published all %d, info %d (%s) ack pending %llu pending %llu floor "
              "%llu delivered %llu last %llu",
              published_all(), ci.status, ci.msg, (unsigned long long)ci.info.num_ack_pending,
              (unsigned long long)ci.info.num_pending,
              (unsigned long long)ci.info.ack_floor.stream_seq,
              (unsigned long long)ci.info.delivered.stream_seq, (unsigned long long)last);
    }
    /* sometimes every node loses power once more and comes back */
    int again = rnd(2);
    if (again) {
        tracef("crash and restart every node");
        for (unsigned i = 0; i < r->n; i++) CHECK(jr_sim_crash(r->c.sim, i) == 0, "crash n%u", i);
        for (unsigned i = 0; i < r->n; i++) restart(i);
        ok = 0;
        for (int t = 0; t < 100 && !ok; t++) {
            cinfo ci;
            ok = info_now(&ci) == 0 && all_acked(&ci, last);
            if (!ok) jr_sim_run_for(r->c.sim, 100 * MS);
        }
        if (!ok) describe_all();
        CHECK(ok, "after every node restarted the consumer does not report everything acked");
    }

    /* the reference replay of the committed log */
    cfg.ack_wait_ns = r->nbackoff ? r->backoff[0] : r->ack_wait_ns;
    ref *rf = calloc(1, sizeof *rf);
    ck_assert_ptr_nonnull(rf);
    replay(rf, &cfg);
    /* (5) every replica converges to it */
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__cstate_snapshot(&rf->st, &b), 0);
    uint64_t want = jr__xxh3(b.data, b.len);
    jr__buf_free(&b);
    int same = 0;
    for (int t = 0; t < 300 && !same; t++) {
        same = converged(want);
        if (!same) jr_sim_run_for(r->c.sim, 100 * MS);
    }
    if (!same) describe_all();
    CHECK(same, "the consumer's replicas do not converge to the committed log's state");
    const jr__cseqs *d = jr__cstate_delivered(&rf->st);
    CHECK(jr__cstate_num_ack_pending(&rf->st) == 0 && d->stream_seq == last,
          "the committed log leaves %zu pending, delivered up to %llu of %llu",
          jr__cstate_num_ack_pending(&rf->st), (unsigned long long)d->stream_seq,
          (unsigned long long)last);
    /* (3) every delivery a client saw is a delivery of the committed log */
    for (size_t i = 0; i < r->nobs; i++) {
        const obs *o = &r->obs[i];
        CHECK(o->dseq < rf->del_cap && rf->del[o->dseq].sseq,
              "seq %llu delivered (consumer seq %llu, count %u, fetch %u) but no such delivery "
              "is in the committed log",
              (unsigned long long)o->sseq, (unsigned long long)o->dseq, o->dc, o->fetch);
        rdel *x = &rf->del[o->dseq];
        CHECK(x->sseq == o->sseq && x->dc == o->dc,
              "consumer seq %llu delivered as seq %llu count %u, recorded as seq %llu count %u",
              (unsigned long long)o->dseq, (unsigned long long)o->sseq, o->dc,
              (unsigned long long)x->sseq, x->dc);
        CHECK(!x->seen, "consumer seq %llu delivered twice", (unsigned long long)o->dseq);
        x->seen = 1;
        /* (2) seen after its ack only if recorded before it */
        CHECK(!rf->acked_index[o->sseq] || x->index < rf->acked_index[o->sseq],
              "seq %llu delivered from index %llu, after its ack at %llu",
              (unsigned long long)o->sseq, (unsigned long long)x->index,
              (unsigned long long)rf->acked_index[o->sseq]);
        CHECK(o->ns >= x->ns,
              "seq %llu (consumer seq %llu) reached a client at %.6f before its "
              "delivery was applied anywhere (%.6f)",
              (unsigned long long)o->sseq, (unsigned long long)o->dseq, (double)o->ns / 1e9,
              (double)x->ns / 1e9);
    }
    size_t nlost;
    uint64_t room;
    check_lost(rf, &nlost, &room);
    /* (1) and (2) per message */
    size_t maxdel = 0;
    for (uint64_t s = 1; s <= last; s++) {
        seqst *st = &r->seqs[s];
        int how = rf->gone_by[s];
        CHECK(how != JR__COP_TERM, "seq %llu was terminated, and no client asked for it",
              (unsigned long long)s);
        if (how == JR__COP_MAXDELIV) {
            CHECK(r->max_deliver > 0 && rf->dc[s] == (uint32_t)r->max_deliver,
                  "seq %llu left pending for max_deliver after %u deliveries (max_deliver %lld)",
                  (unsigned long long)s, rf->dc[s], (long long)r->max_deliver);
            maxdel++;
            continue;
        }
        CHECK(how == JR__COP_ACK, "seq %llu was never acked in the committed log",
              (unsigned long long)s);
        CHECK(st->nobs > 0, "seq %llu was acked but never delivered to a client",
              (unsigned long long)s);
        CHECK(!st->nf_ns || rf->acked_ns[s] <= st->nf_ns,
              "seq %llu: a confirmed ack was answered 'not pending' at %.6f, but the message was "
              "pending until %.6f",
              (unsigned long long)s, (double)st->nf_ns / 1e9, (double)rf->acked_ns[s] / 1e9);
        CHECK(!st->conf_ticket || rf->acked_ns[s] <= st->conf_ns,
              "seq %llu: a confirmed ack ended with 0 at %.6f, its ack committed at %.6f",
              (unsigned long long)s, (double)st->conf_ns / 1e9, (double)rf->acked_ns[s] / 1e9);
    }
    size_t redelivered = 0, uncertain_n = 0;
    for (uint64_t s = 1; s <= last; s++) redelivered += rf->dc[s] > 1;
    for (size_t i = 0; i < r->nfetches; i++) uncertain_n += uncertain(&r->fetches[i]);
    fprintf(stderr,
            "consumer faults seed %llu: %u nodes, R%d stream, %zu msgs, %u loops, ack wait %lld "
            "ms%s%s; %zu fetches (%zu uncertain), %zu deliveries seen, %zu lost, %zu redelivered, "
            "%zu max-delivered, %zu acks; %u crashes (%u leaders), %u partitions, %u pauses, "
            "%u clock jumps; log %llu%s\n",
            (unsigned long long)seed, r->n, r->replicas, r->nmsgs, r->nloops,
            (long long)(r->ack_wait_ns / (int64_t)MS), r->nbackoff ? ", backoff" : "",
            r->max_deliver ? ", max_deliver" : "", r->nfetches, uncertain_n, r->nobs, nlost,
            redelivered, maxdel, r->nacks, r->crashes, r->leader_crashes, r->partitions, r->pauses,
            r->jumps, (unsigned long long)r->log_max, again ? "; restarted all" : "");
    (void)room;
    jr__cstate_free(&rf->st);
    free(rf->del);
    free(rf);
    e2e_free(&r->c);
    for (size_t i = 0; i < r->log_cap; i++) free(r->log[i].data);
    free(r->log);
    free(r->dseq_seen);
    g = NULL;
    free(r);
}

static int fetch_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return g->fetches[(uintptr_t)arg].done;
}

static int acks_done(void *arg, jr_sim *sim)
{
    (void)arg, (void)sim;
    return acks_settled();
}

/* A consumer's state survives every one of its servers losing power at once: after the
 * restart its replicas reopen their groups from the WAL, report what was delivered and
 * acknowledged, and the next fetch goes on after it, each message delivered once. */
START_TEST(restart_keeps_consumer_state)
{
    run *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    g = r;
    r->seed = 0;
    r->n = 3;
    r->nmsgs = 10;
    r->nloops = 1;
    r->loop_fetch[0] = -1;
    r->draining = 1; /* every delivery is acked, confirmed */
    jr__rand_seed(&r->rnd, 99);
    CHECK(e2e_new(&r->c, 3, 99, 800) == 0, "cluster");
    CHECK(e2e_wait_meta(&r->c, 3, 20 * SEC) >= 0, "no meta leader");
    /* meta snapshots soon: the restart replays the meta group from a state that holds the
     * consumer */
    for (unsigned i = 0; i < 3; i++)
        jr__group_set_snapshot_entries(jr__js_of(e2e_node(&r->c, i))->meta, 2);
    const char *subj[] = {"c.>"};
    jr_stream_config scfg;
    e2e_config(&scfg, STREAM, subj, 1, 3);
    e2e_res er;
    CHECK(e2e_add(&r->c, 0, &scfg, &er) == 0, "stream add: %s", er.msg);
    CHECK(e2e_wait_stream(&r->c, 0, STREAM, 2, 20 * SEC) >= 0, "no stream leader");
    for (size_t i = 0; i < r->nmsgs; i++) {
        char data[32];
        snprintf(data, sizeof data, "payload %zu", i);
        CHECK(e2e_publish(&r->c, (unsigned)i % 3, "c.x", data, strlen(data), NULL, &er) == 0,
              "publish: %s", er.msg);
    }
    jr_consumer_config cfg;
    jr_consumer_config_init(&cfg);
    cfg.durable_name = CONSUMER;
    cres cr;
    memset(&cr, 0, sizeof cr);
    CHECK(jr_consumer_create(e2e_node(&r->c, 1), STREAM, &cfg, create_cb, &cr) == 0, "create");
    CHECK(jr_sim_run_until(r->c.sim, cres_done, &cr, 60 * SEC) == 0 && cr.status == 0,
          "consumer create: %s", cr.msg);
    for (int round = 0; round < 2; round++) {
        /* 6 messages the first time, the 4 others after the restart: never one again */
        r->drain_batch = round == 0 ? 6 : 10;
        fetch_start(0);
        fetch *f = &r->fetches[r->nfetches - 1];
        CHECK(jr_sim_run_until(r->c.sim, fetch_done, (void *)(uintptr_t)(r->nfetches - 1),
                               60 * SEC) == 0,
              "fetch never ended");
        uint32_t want = round == 0 ? 6 : 4;
        CHECK(f->status == 0 && f->got == want, "fetch %d: status %d, %u messages", round,
              f->status, f->got);
        send_due_acks();
        CHECK(jr_sim_run_until(r->c.sim, acks_done, NULL, 60 * SEC) == 0, "acks never ended");
        for (size_t i = 0; i < r->nacks; i++)
            CHECK(r->acks[i].status == 0, "ack of seq %llu: %d",
                  (unsigned long long)r->acks[i].sseq, r->acks[i].status);
        if (round == 1) break;
        for (unsigned i = 0; i < 3; i++) CHECK(jr_sim_crash(r->c.sim, i) == 0, "crash n%u", i);
        for (unsigned i = 0; i < 3; i++) restart(i);
        cinfo ci;
        int ok = 0;
        for (int t = 0; t < 100 && !ok; t++) {
            ok = info_now(&ci) == 0;
            if (!ok) jr_sim_run_for(r->c.sim, 100 * MS);
        }
        CHECK(ok, "no consumer info after the restart: %s", ci.msg);
        CHECK(ci.info.delivered.stream_seq == f->got && ci.info.ack_floor.stream_seq == f->got &&
                  ci.info.num_ack_pending == 0,
              "after the restart: delivered %llu, ack floor %llu, %llu ack pending (before: %u "
              "delivered and acked)",
              (unsigned long long)ci.info.delivered.stream_seq,
              (unsigned long long)ci.info.ack_floor.stream_seq,
              (unsigned long long)ci.info.num_ack_pending, f->got);
    }
    /* every message once, count 1 */
    for (uint64_t q = 1; q <= r->nmsgs; q++)
        CHECK(r->seqs[q].nobs == 1 && r->seqs[q].dcs == 1, "seq %llu delivered %u times",
              (unsigned long long)q, r->seqs[q].nobs);
    e2e_free(&r->c);
    free(r->dseq_seen);
    g = NULL;
    free(r);
}
END_TEST

static uint64_t first_seed = 1, nseeds = 60;

START_TEST(consumer_random_faults)
{
    run_seed(first_seed + (uint64_t)_i);
}
END_TEST

int main(void)
{
    e2e_seeds(&first_seed, &nseeds);
    Suite *su = suite_create("stream_e2e_consumer_faults");
    TCase *tc = tcase_create("consumer_faults");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, restart_keeps_consumer_state);
    tcase_add_loop_test(tc, consumer_random_faults, 0, (int)nseeds);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
