/*
 * orders-demo — the ORDERS walkthrough on a 5-server cluster "east", in one process.
 *
 * The servers run over the deterministic fixture (jetraft/sim.h): simulated network, clocks and
 * disks, so every run is the same and the story takes a few seconds of real time. At each step
 * the demo prints what an operator would look at — the stream's Cluster Information block as
 * `nats stream info` prints it, the consumer's state, the health check's line — while a
 * publisher keeps writing throughout:
 *
 *   1. the cluster and its meta leader;
 *   2. ORDERS created at R3;
 *   3. the stream leader's server killed: a new leader, publishes going on, the server back;
 *   4. ORDERS grown to R4: the new replica's lag counting down until it is current;
 *   5. a consumer fetching and acknowledging;
 *   6. a replica evacuated: the replacement joins and copies the stream (a line per change of
 *      what the move waits on), then the evacuated one leaves; the replica count stays;
 *   7. an evacuation with nowhere to go refused ("peer remap failed"), nothing moved;
 *   8. a stopped server peer-removed, a second removal at once refused ("cluster member
 *      change is in progress"), ORDERS re-placed;
 *   9. the `nats server check stream --peer-expect=4` line.
 *
 * Build and run: ninja -C build && build/examples/orders-demo
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jetraft.h"
#include "jetraft/sim.h"

#define MS 1000000ull
#define SEC (1000 * MS)
#define SERVERS 5

static jr_sim *sim;
static int misreported; /* the replacement of step 6 was shown as what it is not */

static void die(const char *what, int status, const char *msg)
{
    fprintf(stderr, "orders-demo: %s: %s (%s)\n", what, jr_strerror(status), msg ? msg : "");
    exit(1);
}

static void step(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static void step(const char *fmt, ...)
{
    va_list ap;
    printf("\n== ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(" ==\n\n");
}

/* Every server in cluster "east", tagged with its availability zone. */
static void configure(void *arg, unsigned i, jr_node_config *cfg)
{
    (void)arg;
    static const char *const zones[SERVERS][1] = {{"az:1"}, {"az:2"}, {"az:3"}, {"az:1"}, {"az:2"}};
    cfg->cluster = "east";
    cfg->tags = zones[i];
    cfg->ntags = 1;
    cfg->streams = 1;
}

/* v with thousands separators, as the nats CLI prints counts ("14,231"). */
static const char *commas(uint64_t v, char out[32])
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, v), k = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0) out[k++] = ',';
        out[k++] = digits[i];
    }
    out[k] = 0;
    return out;
}

/* A node that is up (the first one from `from` on). */
static jr_node *any_node(unsigned from)
{
    for (unsigned k = 0; k < SERVERS; k++) {
        jr_node *n = jr_sim_node(sim, (from + k) % SERVERS);
        if (n) return n;
    }
    return NULL;
}

/* The publisher: a few messages every 5 ms of simulated time, each with a msg id so a
 * publish whose leader fails is sent to the next one without being stored twice. ----------*/

static struct {
    int on;
    uint64_t sent, acked, failed, next_at;
    size_t size;
} pub = {.size = 64};

static void on_ack(void *arg, int status, const jr_pub_ack *ack)
{
    (void)arg;
    (void)ack;
    if (status == 0)
        pub.acked++;
    else
        pub.failed++;
}

static void publish_some(unsigned count)
{
    static char body[4096];
    for (unsigned k = 0; k < count; k++) {
        char id[32];
        snprintf(id, sizeof id, "order-%" PRIu64, pub.sent + 1);
        int n = snprintf(body, sizeof body, "{\"order\":%" PRIu64 ",\"items\":3,\"note\":\"",
                         pub.sent + 1);
        /* a note of pseudo-random letters fills the body to pub.size (so it does not compress
         * to nothing when a replica is copied) */
        static uint64_t x = 88172645463325252ull;
        size_t end = pub.size < sizeof body ? pub.size : sizeof body;
        for (size_t i = (size_t)n; i + 2 < end; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            body[i] = (char)('a' + x % 26);
        }
        if (end >= (size_t)n + 2) memcpy(body + end - 2, "\"}", 2);
        jr_pub_opts o;
        jr_pub_opts_init(&o);
        o.msg_id = id;
        jr_node *node = any_node((unsigned)(pub.sent % SERVERS));
        if (node && jr_publish(node, "orders.new", NULL, 0, body,
                               pub.size > (size_t)n ? pub.size : (size_t)n, &o, on_ack, NULL) == 0)
            pub.sent++;
    }
}

/* Runs the cluster for `ms` of simulated time with the publisher writing meanwhile. */
static void run_ms(uint64_t ms)
{
    uint64_t until = jr_sim_now(sim) + ms * MS;
    while (jr_sim_now(sim) < until) {
        if (pub.on) publish_some(4);
        jr_sim_run_for(sim, 5 * MS);
    }
}

/* Requests made synchronous: start, then run until the callback came. --------------------*/

typedef struct res {
    int done, status;
    char msg[512];
    char text[4096]; /* a formatted block */
    char leader[64];
    int found;                      /* a replica named `watch` */
    int current, observer, pending; /* ... its state */
    uint64_t lag;
    const char *watch;
    uint64_t msgs;
    char peers[8][64]; /* the leader, then the replicas */
    size_t npeers;
    int damaged, unvouched, offline; /* the watched replica is shown so */
    char desc[160];                  /* the move's description; "" when none */
} res;

static int has_peer(const res *r, const char *name)
{
    for (size_t i = 0; i < r->npeers; i++)
        if (strcmp(r->peers[i], name) == 0) return 1;
    return 0;
}

static void wait_res(res *r, const char *what)
{
    uint64_t until = jr_sim_now(sim) + 30 * SEC;
    while (!r->done && jr_sim_now(sim) < until) run_ms(5);
    if (!r->done) die(what, JR_ETIMEDOUT, "no answer");
}

static void on_admin(void *arg, int status, const char *msg)
{
    res *r = arg;
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "");
}

static void on_consumer(void *arg, int status, const char *msg, const char *name)
{
    (void)name;
    on_admin(arg, status, msg);
}

static void on_info(void *arg, int status, const char *msg, const jr_stream_info *in)
{
    res *r = arg;
    on_admin(arg, status, msg);
    if (status != 0) return;
    jr_stream_info_format(in, r->text, sizeof r->text);
    r->msgs = in->state->msgs;
    snprintf(r->leader, sizeof r->leader, "%s", in->cluster->leader ? in->cluster->leader : "");
    if (r->leader[0]) snprintf(r->peers[r->npeers++], sizeof r->peers[0], "%s", r->leader);
    for (size_t i = 0; i < in->cluster->nreplicas; i++) {
        const jr_peer_info *p = in->cluster->replicas[i];
        if (r->npeers < 8) snprintf(r->peers[r->npeers++], sizeof r->peers[0], "%s", p->name);
        if (!r->watch) continue;
        if (strcmp(p->name, r->watch) != 0) continue;
        r->found = 1;
        r->current = p->current;
        r->observer = p->observer;
        r->pending = p->pending;
        r->lag = p->lag;
        r->damaged = p->damaged;
        r->unvouched = p->unvouched;
        r->offline = p->offline;
    }
    const jr_move_info *mv = in->cluster->move;
    if (mv && mv->description) snprintf(r->desc, sizeof r->desc, "%s", mv->description);
}

static res stream_info(const char *watch)
{
    for (;;) {
        res r;
        memset(&r, 0, sizeof r);
        r.watch = watch;
        if (jr_stream_info_get(any_node(0), "ORDERS", on_info, &r) != 0) die("info", -1, "");
        wait_res(&r, "stream info");
        if (r.status == 0) return r;
        run_ms(50); /* no leader at this moment: ask again */
    }
}

static void on_meta(void *arg, int status, const char *msg, const jr_meta_info *m)
{
    res *r = arg;
    on_admin(arg, status, msg);
    if (status != 0) return;
    r->npeers = m->nservers;
    size_t k = (size_t)snprintf(r->text, sizeof r->text, "meta leader %s; servers:\n",
                                m->leader ? m->leader : "none");
    for (size_t i = 0; i < m->nservers && k < sizeof r->text; i++) {
        const jr_server_info *s = m->servers[i];
        k += (size_t)snprintf(r->text + k, sizeof r->text - k, "  %-4s cluster %s  tag %-5s %s\n",
                              s->name, s->cluster, s->ntags ? s->tags[0] : "",
                              s->leader    ? "leader"
                              : s->current ? "current"
                                           : "");
    }
}

/* The fetch: every message acknowledged as it arrives, confirmed by its consumer's group. */
static struct {
    int done;
    uint64_t got, acked, last_seq;
    int end_code;
} fetch;

static void on_ack_done(void *arg, int status, const char *msg)
{
    (void)arg;
    if (status != 0) die("ack", status, msg);
    fetch.acked++;
}

static void on_fetch(void *arg, int status, const char *msg, const jr_consumer_msg *m,
                     const jr_fetch_end *end)
{
    (void)arg;
    if (m) {
        fetch.got++;
        fetch.last_seq = m->stream_seq;
        jr_consumer_ack(any_node(2), m->ack_token, JR_ACK_ACK, 0, NULL, on_ack_done, NULL);
        return;
    }
    if (status != 0) die("fetch", status, msg);
    if (end) {
        fetch.end_code = end->code;
        fetch.done = 1;
    }
}

static void on_cinfo(void *arg, int status, const char *msg, const jr_consumer_info *in)
{
    res *r = arg;
    on_admin(arg, status, msg);
    if (status == 0)
        snprintf(r->text, sizeof r->text,
                 "consumer NEW: delivered stream seq %" PRIu64 ", ack floor %" PRIu64 ", %" PRIu64
                 " waiting for an ack, %" PRIu64 " still to deliver, leader %s\n",
                 in->delivered.stream_seq, in->ack_floor.stream_seq, in->num_ack_pending,
                 in->num_pending, in->cluster->leader ? in->cluster->leader : "none");
}

static void on_check(void *arg, int status, const char *msg, const jr_check_result *cr)
{
    res *r = arg;
    on_admin(arg, status, msg);
    if (cr) jr_stream_check_format(cr, r->text, sizeof r->text);
}

int main(void)
{
    jr_sim_config sc;
    jr_sim_config_init(&sc);
    sc.nodes = SERVERS;
    sc.seed = 2026;
    sc.configure = configure;
    jr_sim_link link; /* a 1 Gbit/s network, so that copying a replica takes visible time */
    jr_sim_link_init(&link);
    link.bytes_per_sec = 125 * 1000 * 1000;
    sc.link = &link;
    int rc = jr_sim_new(&sc, &sim);
    if (rc != 0) die("jr_sim_new", rc, "");

    step("1. A cluster of 5 servers, \"east\", tagged by zone");
    res r;
    for (;;) {
        memset(&r, 0, sizeof r);
        jr_meta_info_get(any_node(0), on_meta, &r);
        wait_res(&r, "meta info");
        if (r.status == 0 && r.npeers == SERVERS) break; /* every server registered */
        run_ms(100);
    }
    printf("%s", r.text);

    step("2. ORDERS created at R3");
    static const char *const subjects[] = {"orders.>"};
    jr_stream_config cfg;
    jr_stream_config_init(&cfg);
    cfg.name = "ORDERS";
    cfg.subjects = subjects;
    cfg.nsubjects = 1;
    cfg.replicas = 3;
    memset(&r, 0, sizeof r);
    jr_stream_add(any_node(0), &cfg, on_admin, &r);
    wait_res(&r, "stream add");
    if (r.status != 0) die("stream add", r.status, r.msg);
    run_ms(300);
    r = stream_info(NULL);
    printf("%s", r.text);

    step("3. The leader's server is killed while orders keep coming");
    pub.on = 1;
    run_ms(500);
    r = stream_info(NULL);
    int victim = jr_sim_index(sim, r.leader);
    printf("published %" PRIu64 ", acknowledged %" PRIu64 "; killing %s, the stream leader\n",
           pub.sent, pub.acked, r.leader);
    jr_sim_crash(sim, (unsigned)victim);
    char old_leader[64];
    snprintf(old_leader, sizeof old_leader, "%s", r.leader);
    do {
        run_ms(50);
        r = stream_info(NULL);
    } while (!r.leader[0] || strcmp(r.leader, old_leader) == 0);
    run_ms(300);
    r = stream_info(NULL);
    printf("%s", r.text);
    printf("published %" PRIu64 ", acknowledged %" PRIu64 " — no write refused for good\n",
           pub.sent, pub.acked);
    jr_sim_restart(sim, (unsigned)victim);
    printf("%s restarted: it recovers its log and catches up\n", old_leader);
    run_ms(1000);
    r = stream_info(NULL);
    printf("%s", r.text);

    step("4. ORDERS grown to R4: the new replica catches up");
    pub.on = 0;
    pub.size = 4000; /* a fuller stream, so the copy takes a while */
    for (int k = 0; k < 80; k++) {
        publish_some(100);
        jr_sim_run_for(sim, 20 * MS);
    }
    run_ms(500);
    res before = stream_info(NULL);
    char count[32];
    printf("ORDERS holds %s messages\n", commas(before.msgs, count));
    /* The publisher waits while the replica joins: the lag shown is what it has to take in,
     * and a write meanwhile adds to it (a restoring replica's log takes no entries until its
     * store is complete), so the count would not only fall. */
    pub.size = 64;
    cfg.replicas = 4;
    memset(&r, 0, sizeof r);
    jr_stream_update(any_node(1), &cfg, on_admin, &r);
    wait_res(&r, "stream update");
    if (r.status != 0) die("stream update", r.status, r.msg);
    /* the server the meta leader chose: the one member that was not there before */
    char newbie[64] = "";
    while (!newbie[0]) {
        r = stream_info(NULL);
        for (size_t i = 0; i < r.npeers && !newbie[0]; i++)
            if (!has_peer(&before, r.peers[i])) snprintf(newbie, sizeof newbie, "%s", r.peers[i]);
        if (!newbie[0]) run_ms(5);
    }
    printf("the meta leader placed the fourth replica on %s\n\n", newbie);
    r = stream_info(newbie);
    printf("%s\n", r.text);
    /* one line per change of the new replica's lag (the messages its store still copies, then
     * the operations its log trails), until it is a current voter with nothing left */
    uint64_t shown_lag = r.lag;
    for (int k = 0; k < 10000 && !(r.found && r.current && !r.observer && !r.pending && !r.lag);
         k++) {
        jr_sim_run_for(sim, MS);
        r = stream_info(newbie);
        if (r.found && r.lag != shown_lag) {
            char n[32];
            printf("  %s: %s, %s behind\n", newbie,
                   r.observer  ? "observer catching up"
                   : r.current ? "current voter"
                               : "voter",
                   commas(r.lag, n));
            shown_lag = r.lag;
        }
    }
    for (int k = 0; k < 100 && strstr(r.text, "Migration"); k++) { /* the change converges */
        run_ms(10);
        r = stream_info(newbie);
    }
    printf("\n%s\n", r.text);
    pub.on = 1;

    step("5. A consumer fetches and acknowledges");
    jr_consumer_config cc;
    jr_consumer_config_init(&cc);
    cc.durable_name = "NEW";
    cc.filter_subject = "orders.new";
    cc.ack_policy = JR_ACK_EXPLICIT;
    memset(&r, 0, sizeof r);
    jr_consumer_add(any_node(0), "ORDERS", &cc, on_consumer, &r);
    wait_res(&r, "consumer add");
    if (r.status != 0) die("consumer add", r.status, r.msg);
    jr_fetch_opts fo;
    jr_fetch_opts_init(&fo);
    fo.batch = 100;
    fo.expires_ns = 2 * (int64_t)SEC;
    rc = jr_consumer_fetch(any_node(3), "ORDERS", "NEW", &fo, on_fetch, NULL);
    if (rc != 0) die("fetch", rc, "");
    while (!fetch.done || fetch.acked < fetch.got) run_ms(5);
    printf("fetched %" PRIu64 " messages (up to stream seq %" PRIu64 "), acknowledged %" PRIu64
           "\n",
           fetch.got, fetch.last_seq, fetch.acked);
    memset(&r, 0, sizeof r);
    jr_consumer_info_get(any_node(4), "ORDERS", "NEW", on_cinfo, &r);
    wait_res(&r, "consumer info");
    printf("%s", r.text);

    step("6. A replica evacuated while orders keep coming");
    r = stream_info(NULL);
    res before6 = r;
    char evac[64];
    snprintf(evac, sizeof evac, "%s", r.npeers > 1 ? r.peers[1] : "");
    printf("nats stream cluster evacuate ORDERS %s\n\n", evac);
    memset(&r, 0, sizeof r);
    jr_stream_evacuate(any_node(0), "ORDERS", evac, on_admin, &r);
    wait_res(&r, "evacuate");
    if (r.status != 0) die("evacuate", r.status, r.msg);
    /* the replacement: the server the move's target adds */
    char joiner[64] = "";
    while (!joiner[0]) {
        run_ms(5);
        r = stream_info(NULL);
        for (size_t i = 0; i < r.npeers && !joiner[0]; i++)
            if (!has_peer(&before6, r.peers[i])) snprintf(joiner, sizeof joiner, "%s", r.peers[i]);
    }
    r = stream_info(joiner);
    printf("%s\n", r.text);
    /* one line per change of what the move waits on, with the replacement as stream info
     * shows it: joining and catching up, never damaged, unvouched or offline */
    char shown_desc[160];
    snprintf(shown_desc, sizeof shown_desc, "%s", r.desc);
    for (int k = 0; k < 10000 && (strstr(r.text, "Migration") || has_peer(&r, evac)); k++) {
        run_ms(2);
        r = stream_info(joiner);
        if ((r.found && (r.damaged || r.unvouched || r.offline)) || strstr(r.desc, "come online")) {
            /* none of it is true of a replica that is joining: the demo fails (its test) */
            printf("  %s shown%s%s%s%s\n", joiner, r.damaged ? " damaged" : "",
                   r.unvouched ? " unvouched" : "", r.offline ? " offline" : "",
                   strstr(r.desc, "come online") ? " as waited for to come online" : "");
            misreported = 1;
        }
        if (!r.desc[0] || strcmp(r.desc, shown_desc) == 0) continue;
        char n[32];
        printf("  %s: %s, %s behind | %s\n", joiner,
               r.observer  ? "observer"
               : r.current ? "current voter"
                           : "voter",
               commas(r.lag, n), r.desc);
        snprintf(shown_desc, sizeof shown_desc, "%s", r.desc);
    }
    printf("\n%s\n", r.text);
    printf("%s is gone from the replicas; the replica count stayed 4\n", evac);

    step("7. An evacuation with nowhere to go is refused, and nothing moves");
    printf("nats consumer cluster evacuate ORDERS NEW %s\n", evac[0] ? r.peers[0] : "");
    memset(&r, 0, sizeof r);
    res before_move = stream_info(NULL);
    jr_consumer_evacuate(any_node(0), "ORDERS", "NEW", before_move.peers[0], on_admin, &r);
    wait_res(&r, "consumer evacuate");
    printf("  -> %s: %s (the consumer already has a replica on every server of its stream)\n",
           r.status ? jr_err_name(r.status) : "OK", r.msg);

    step("8. A server gone for good is peer-removed; a second removal must wait");
    r = stream_info(NULL);
    char gone[64] = "";
    for (size_t i = 1; i < r.npeers && !gone[0]; i++)
        snprintf(gone, sizeof gone, "%s", r.peers[i]); /* a follower of ORDERS */
    const char *second = NULL;
    for (unsigned i = 0; i < SERVERS && !second; i++) {
        const char *name = jr_sim_name(sim, i);
        if (strcmp(name, gone) != 0 && strcmp(name, r.leader) != 0) second = name;
    }
    printf("%s stopped; nats server cluster peer-remove %s, then %s at once\n", gone, gone, second);
    jr_sim_crash(sim, (unsigned)jr_sim_index(sim, gone));
    run_ms(300);
    res first, again;
    memset(&first, 0, sizeof first);
    memset(&again, 0, sizeof again);
    jr_server_peer_remove(any_node(0), gone, on_admin, &first);
    jr_server_peer_remove(any_node(0), second, on_admin, &again);
    wait_res(&first, "peer remove");
    wait_res(&again, "second peer remove");
    printf("  %s -> %s: %s\n", gone, first.status ? jr_err_name(first.status) : "OK", first.msg);
    printf("  %s -> %s: %s\n", second, again.status ? jr_err_name(again.status) : "OK", again.msg);
    for (int k = 0; k < 400; k++) {
        r = stream_info(NULL);
        if (!has_peer(&r, gone) && !strstr(r.text, "Migration") && !strstr(r.text, "outdated"))
            break;
        run_ms(50);
    }
    printf("\nORDERS re-placed off %s:\n%s", gone, r.text);

    step("9. nats server check stream --peer-expect=4");
    pub.on = 0;
    run_ms(1000);
    jr_check_opts co;
    jr_check_opts_init(&co);
    co.peer_expect = 4;
    memset(&r, 0, sizeof r);
    jr_stream_check(any_node(0), "ORDERS", &co, on_check, &r);
    wait_res(&r, "check");
    printf("%s\n", r.text);
    printf("\npublished %" PRIu64 ", acknowledged %" PRIu64 ", failed %" PRIu64 "\n", pub.sent,
           pub.acked, pub.failed);
    r = stream_info(NULL);
    int ok = r.msgs >= pub.acked;
    printf("ORDERS holds %" PRIu64 " messages: %s\n", r.msgs,
           ok ? "every acknowledged publish is there" : "MISSING ACKNOWLEDGED MESSAGES");
    jr_sim_free(sim);
    return ok && !misreported ? 0 : 1;
}
