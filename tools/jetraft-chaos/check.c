/*
 * check.c — the final reads after the heal, and the checkers over them and the history.
 *
 * Final reads: the stream's info once it has a leader and every replica is current (60 s at
 * most); every seq from 1 to last + 1 read through the JetStream API (STREAM.MSG.GET, answered
 * by the stream's leader: a linearizable read), written to the history as `final` events; then
 * the same seqs read on each server's own replica with direct gets over a connection to that
 * server only.
 *
 * Checkers (jetraft-sim's, where they apply; docs/testing.md): present (with Jepsen's
 * lost-prefix/middle/postfix), definite, unexpected, unique-seq, dedup, duplicate (a value
 * stored at two seqs), order, expectations, converge (with lost-on-node), stream-kept,
 * liveness (reads answered), plus repair/liveness/server-exit from main.c, clients.c and
 * procs.c, and damaged-leads, sampled through the run (watch.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nats/nats.h>

#include "chaos.h"

/* ---- reading ----------------------------------------------------------------------------- */

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decodes base64 text into out (at most cap - 1 bytes, NUL-terminated); its length or -1. */
static int unb64(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    unsigned acc = 0;
    int bits = 0;
    for (; s && *s && *s != '='; s++) {
        int v = b64val((unsigned char)*s);
        if (v < 0) return -1;
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n + 1 >= cap) return -1;
            out[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[n] = 0;
    return (int)n;
}

/* The value a payload carries ("v<id> ..."); -1 if it is not one of ours. */
static long long payload_value(const char *d, int len)
{
    if (len < 2 || d[0] != 'v') return -1;
    long long v = 0;
    int i = 1;
    for (; i < len && d[i] >= '0' && d[i] <= '9'; i++) v = v * 10 + (d[i] - '0');
    return i > 1 && i < len && d[i] == ' ' ? v : -1;
}

static natsConnection *connect_to(int only, int k)
{
    char u[MAXN][64];
    const char *list[MAXN];
    int cnt = 0;
    for (int i = 0; i < C.n; i++) {
        int j = (i + k) % C.n;
        if (only >= 0 && j != only) continue;
        snprintf(u[cnt], sizeof u[cnt], "nats://127.0.0.1:%d", C.client_port[j]);
        list[cnt] = u[cnt];
        cnt++;
    }
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    natsOptions_Create(&o);
    natsOptions_SetServers(o, list, cnt);
    natsOptions_SetNoRandomize(o, true);
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 100);
    natsOptions_SetTimeout(o, 2000);
    natsOptions_SetRetryOnFailedConnect(o, true, NULL, NULL);
    natsStatus s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    return s == NATS_OK ? nc : NULL;
}

/* Stream info once a leader and every replica current, with as many replicas as the stream's
 * replica count (none joining or leaving): 0. After 60 s without: 1 if an answer named a leader
 * (*last and *leader from the latest such answer), else -1 (not found: *missing set); either is
 * a violation. peers gets the servers of the stream's current peer set (from the latest answer
 * that named a leader): the replicas that must have converged. */
static int wait_stream(jsCtx *js, uint64_t *last, char *leader, size_t cap, int *missing,
                       int *peers)
{
    *missing = 0;
    char why[200] = "no answer";
    int led = 0; /* an answer named a leader: the reads can go on through it */
    for (uint64_t t0 = now_ns(); now_ns() - t0 < 60000000000ull; usleep(250000)) {
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_GetStreamInfo(&si, js, STREAM, NULL, &jerr);
        if (s != NATS_OK) {
            snprintf(why, sizeof why, "stream info: %s (err_code %d)", natsStatus_GetText(s),
                     (int)jerr);
            *missing = jerr == 10059;
            continue;
        }
        *missing = 0;
        if (si->Cluster && si->Cluster->Leader) {
            led = 1;
            *last = si->State.LastSeq;
            snprintf(leader, cap, "%s", si->Cluster->Leader);
            for (int i = 0; i < C.n; i++) {
                peers[i] = !strcmp(si->Cluster->Leader, C.names[i]);
                for (int k = 0; !peers[i] && k < si->Cluster->ReplicasLen; k++)
                    peers[i] = !strcmp(si->Cluster->Replicas[k]->Name, C.names[i]);
            }
        }
        int ok = si->Cluster && si->Cluster->Leader && si->Cluster->ReplicasLen == C.replicas - 1;
        for (int i = 0; ok && i < si->Cluster->ReplicasLen; i++)
            ok = si->Cluster->Replicas[i]->Current;
        if (!ok) {
            snprintf(why, sizeof why, "leader %s, %d replicas listed, not all current",
                     si->Cluster && si->Cluster->Leader ? si->Cluster->Leader : "none",
                     si->Cluster ? si->Cluster->ReplicasLen : 0);
        }
        jsStreamInfo_Destroy(si);
        if (ok) return 0;
    }
    violation(*missing ? "stream-kept" : "liveness", "stream %s after the heal: %s", STREAM, why);
    return led && !*missing ? 1 : -1;
}

/* One reply of a read at seq: 1 found (*val), 0 no message there, -1 to read again. */
static int parse_api_get(natsMsg *m, long long *val)
{
    const char *d = natsMsg_GetData(m);
    int len = natsMsg_GetDataLength(m);
    if (!d || len <= 0) return -1;
    if (strstr(d, "\"err_code\":10037")) return 0;
    if (strstr(d, "\"error\"")) return -1;
    const char *p = strstr(d, "\"data\":\"");
    if (!p) {
        *val = -1;
        return 1;
    }
    p += 8;
    const char *q = strchr(p, '"');
    if (!q || q - p > 1000) return -1;
    char enc[1024], dec[800];
    memcpy(enc, p, (size_t)(q - p));
    enc[q - p] = 0;
    int n = unb64(enc, dec, sizeof dec);
    *val = n < 0 ? -1 : payload_value(dec, n);
    return 1;
}

static int parse_direct(natsMsg *m, uint64_t want, long long *val)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, "Nats-Sequence", &v) != NATS_OK || !v) {
        const char *st = NULL;
        if (natsMsgHeader_Get(m, "Status", &st) == NATS_OK && st && !strncmp(st, "404", 3))
            return 0;
        return -1;
    }
    if (strtoull(v, NULL, 10) != want) return -1;
    *val = payload_value(natsMsg_GetData(m), natsMsg_GetDataLength(m));
    return 1;
}

/* Reads seqs 1..upto with `subject` requests on nc, a window at a time, into out[seq] (-2: no
 * message, -1: not ours, else the value), repeating unanswered ones; the unread count. */
static int read_all(natsConnection *nc, const char *subject, int direct, uint64_t upto,
                    long long *out)
{
    char *done = calloc(upto + 1, 1);
    if (!done) die("out of memory");
    int left = (int)upto;
    for (int round = 0; round < 20 && left > 0; round++) {
        natsSubscription *sub = NULL;
        char inbox[64];
        snprintf(inbox, sizeof inbox, "_INBOX.chk%d.*", round);
        if (natsConnection_SubscribeSync(&sub, nc, inbox) != NATS_OK) {
            usleep(500000);
            continue;
        }
        natsSubscription_SetPendingLimits(sub, -1, -1);
        uint64_t next = 1;
        int inflight = 0;
        while (next <= upto || inflight > 0) {
            if (next <= upto && inflight < 128) {
                if (!done[next]) {
                    char reply[64], body[64];
                    snprintf(reply, sizeof reply, "_INBOX.chk%d.%llu", round,
                             (unsigned long long)next);
                    snprintf(body, sizeof body, "{\"seq\":%llu}", (unsigned long long)next);
                    natsConnection_PublishRequestString(nc, subject, reply, body);
                    inflight++;
                }
                next++;
                continue;
            }
            natsMsg *m = NULL;
            if (natsSubscription_NextMsg(&m, sub, 3000) != NATS_OK) break;
            inflight--;
            const char *dot = strrchr(natsMsg_GetSubject(m), '.');
            uint64_t seq = dot ? strtoull(dot + 1, NULL, 10) : 0;
            long long v = -1;
            int rc = seq >= 1 && seq <= upto && !done[seq]
                         ? (direct ? parse_direct(m, seq, &v) : parse_api_get(m, &v))
                         : -1;
            natsMsg_Destroy(m);
            if (rc < 0) continue;
            done[seq] = 1;
            out[seq] = rc == 0 ? -2 : v;
            left--;
        }
        natsSubscription_Unsubscribe(sub);
        natsSubscription_Destroy(sub);
        if (left > 0) usleep(300000);
    }
    free(done);
    return left;
}

/* ---- checker self-tests ------------------------------------------------------------------ */

/* Changes what was read or recorded the way a bug would show in it (--mutate), so that the run
 * must fail: the checkers' own test. */
static void mutate(long long *final, uint64_t upto, long long *rep0)
{
    const char *m = C.mutate;
    op *first_ok = NULL;
    for (size_t i = 0; i < C.nops && !first_ok; i++)
        if (C.ops[i].outcome == OUT_OK && C.ops[i].seq <= upto) first_ok = &C.ops[i];
    if (!first_ok) return;
    if (!strcmp(m, "lost")) { /* an acknowledged message missing from the final reads */
        final[first_ok->seq] = -2;
    } else if (!strcmp(m, "ack-seq")) { /* an acknowledgement one seq off */
        first_ok->seq++;
    } else if (!strcmp(m, "definite")) { /* a stored value recorded as definitely failed */
        for (size_t i = 0; i < C.nops; i++)
            if (C.ops[i].value == first_ok->value) C.ops[i].outcome = OUT_FAIL;
    } else if (!strcmp(m, "converge") && rep0) { /* a replica missing a message */
        rep0[first_ok->seq] = -2;
    }
}

/* ---- checkers ---------------------------------------------------------------------------- */

typedef struct vinfo {
    int proc;
    int attempted, ok, info, fail;
    uint64_t seq; /* the first acknowledged seq */
    uint64_t first_invoke, first_ok;
    int msg_id, dup;
    uint64_t exp_last;
    int exp_wrong;
    int found;      /* times stored */
    uint64_t where; /* a seq it is stored at */
} vinfo;

typedef struct ack_ref {
    uint64_t t;
    uint32_t value;
} ack_ref;

static int cmp_ref(const void *a, const void *b)
{
    const ack_ref *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

static void check_history(const long long *final, uint64_t upto)
{
    uint32_t nv = C.next_value;
    vinfo *vi = calloc((size_t)nv + 1, sizeof *vi);
    uint32_t *seq_owner = calloc(upto + 2, sizeof *seq_owner);
    if (!vi || !seq_owner) die("out of memory");
    for (size_t i = 0; i < C.nops; i++) {
        const op *o = &C.ops[i];
        if (o->value == 0 || o->value > nv) continue;
        vinfo *v = &vi[o->value];
        if (!v->attempted++) v->first_invoke = o->invoke_ns;
        v->proc = o->proc;
        v->msg_id = o->msg_id;
        v->exp_last = o->exp_last;
        v->exp_wrong = o->exp_wrong;
        if (o->outcome == OUT_OK) {
            if (v->ok && v->seq != o->seq)
                violation("dedup", "v%u (msg id) acknowledged at seq %llu and at seq %llu",
                          o->value, (unsigned long long)v->seq, (unsigned long long)o->seq);
            if (!v->ok || o->complete_ns < v->first_ok) v->first_ok = o->complete_ns;
            if (!v->ok) v->seq = o->seq;
            v->ok++;
            v->dup |= o->duplicate;
            if (o->seq <= upto + 1) {
                if (seq_owner[o->seq] && seq_owner[o->seq] != o->value)
                    violation("unique-seq", "seq %llu acknowledged for v%u and for v%u",
                              (unsigned long long)o->seq, seq_owner[o->seq], o->value);
                seq_owner[o->seq] = o->value;
            }
        } else if (o->outcome == OUT_FAIL) {
            v->fail++;
        } else {
            v->info++;
        }
    }
    /* what the final reads found */
    for (uint64_t s = 1; s <= upto; s++) {
        long long v = final[s];
        if (v == -2) continue;
        if (v < 1 || v > (long long)nv || !vi[v].attempted) {
            violation("unexpected", "seq %llu holds %s%lld, which no client published",
                      (unsigned long long)s, v < 0 ? "an unknown payload " : "v", v);
            continue;
        }
        if (vi[v].found++)
            violation("duplicate", "v%lld stored twice: at seq %llu and at seq %llu", v,
                      (unsigned long long)vi[v].where, (unsigned long long)s);
        vi[v].where = s;
    }
    /* per process: the first and last of its values read (values grow in invocation order) */
    uint32_t first_read[MAXPROCS] = {0}, last_read[MAXPROCS] = {0};
    for (uint32_t v = 1; v <= nv; v++)
        if (vi[v].found) {
            int p = vi[v].proc;
            if (!first_read[p]) first_read[p] = v;
            last_read[p] = v;
        }
    int lost[3] = {0}, acked = 0, definite = 0, unknown_stored = 0;
    for (uint32_t v = 1; v <= nv; v++) {
        vinfo *x = &vi[v];
        if (!x->attempted) continue;
        if (x->ok) {
            acked++;
            if (!x->found || x->where != x->seq) {
                int p = x->proc;
                int kind = !first_read[p] || v < first_read[p] ? 0 : v > last_read[p] ? 2 : 1;
                lost[kind]++;
                static const char *const kn[] = {"lost-prefix", "lost-middle", "lost-postfix"};
                if (x->found)
                    violation("present", "v%u acknowledged at seq %llu is stored at seq %llu", v,
                              (unsigned long long)x->seq, (unsigned long long)x->where);
                else
                    violation("present", "v%u (proc %d) acknowledged at seq %llu is missing (%s)",
                              v, p, (unsigned long long)x->seq, kn[kind]);
            }
        } else if (x->fail && !x->info) {
            definite++;
            if (x->found)
                violation("definite", "v%u failed definitely but is stored at seq %llu", v,
                          (unsigned long long)x->where);
        } else if (x->found) {
            unknown_stored++;
        }
        if (x->found && x->exp_wrong)
            violation("expectations", "v%u expected another stream's name but is stored at %llu", v,
                      (unsigned long long)x->where);
        if (x->found && x->exp_last && !x->dup && x->where != x->exp_last + 1)
            violation("expectations", "v%u expected last seq %llu but is stored at %llu", v,
                      (unsigned long long)x->exp_last, (unsigned long long)x->where);
    }
    /* order: A acknowledged before B was first published => seq(A) < seq(B) */
    ack_ref *byack = malloc(((size_t)nv + 1) * sizeof *byack);
    ack_ref *byinv = malloc(((size_t)nv + 1) * sizeof *byinv);
    if (!byack || !byinv) die("out of memory");
    size_t na = 0;
    for (uint32_t v = 1; v <= nv; v++)
        if (vi[v].ok) {
            byack[na] = (ack_ref){vi[v].first_ok, v};
            byinv[na++] = (ack_ref){vi[v].first_invoke, v};
        }
    qsort(byack, na, sizeof *byack, cmp_ref);
    qsort(byinv, na, sizeof *byinv, cmp_ref);
    uint64_t maxseq = 0;
    uint32_t maxv = 0;
    int order_bad = 0;
    for (size_t i = 0, j = 0; i < na; i++) {
        while (j < na && byack[j].t < byinv[i].t) {
            if (vi[byack[j].value].seq > maxseq) {
                maxseq = vi[byack[j].value].seq;
                maxv = byack[j].value;
            }
            j++;
        }
        uint32_t b = byinv[i].value;
        if (maxseq >= vi[b].seq && order_bad++ < 5)
            violation("order",
                      "v%u acknowledged at seq %llu before v%u was published, which got "
                      "seq %llu",
                      maxv, (unsigned long long)maxseq, b, (unsigned long long)vi[b].seq);
    }
    printf("history: %u values published, %d acknowledged, %d failed definitely, %d of unknown "
           "outcome stored; lost: %d prefix, %d middle, %d postfix\n",
           nv, acked, definite, unknown_stored, lost[0], lost[1], lost[2]);
    free(byack);
    free(byinv);
    free(vi);
    free(seq_owner);
}

void check_run(void)
{
    natsConnection *nc = connect_to(-1, 0);
    jsCtx *js = NULL;
    if (!nc || natsConnection_JetStream(&js, nc, NULL) != NATS_OK) die("checker: no connection");
    uint64_t last = 0;
    char leader[32] = "?";
    int missing = 0, peers[MAXN] = {0};
    /* With a leader but a replica not current after 60 s (a liveness violation already) the
     * reads still go through the leader, so that `present` tells a lost write from a slow
     * replica, and `converge` shows what the replica lacks. */
    if (wait_stream(js, &last, leader, sizeof leader, &missing, peers) < 0) {
        jsCtx_Destroy(js);
        natsConnection_Destroy(nc);
        check_history((long long[]){0, -2}, 0);
        return;
    }
    uint64_t upto = last + 1;
    long long *final = malloc((upto + 1) * sizeof *final);
    if (!final) die("out of memory");
    for (uint64_t s = 0; s <= upto; s++) final[s] = -2;
    uint64_t t0 = now_ns();
    int unread = read_all(nc, "$JS.API.STREAM.MSG.GET." STREAM, 0, upto, final);
    if (unread) violation("liveness", "%d seqs of %s unanswered by its leader", unread, STREAM);
    note("final reads: %llu seqs through the leader %s in %.1f s", (unsigned long long)upto, leader,
         (double)(now_ns() - t0) / 1e9);
    pthread_mutex_lock(&C.hmu);
    if (C.hist)
        for (uint64_t s = 1; s <= upto; s++)
            if (final[s] != -2)
                fprintf(
                    C.hist,
                    "{\"t\":%llu,\"ev\":\"final\",\"stream\":\"%s\",\"seq\":%llu,\"value\":%lld}\n",
                    (unsigned long long)(now_ns() - C.t0), STREAM, (unsigned long long)s, final[s]);
    pthread_mutex_unlock(&C.hmu);
    if (final[upto] != -2)
        violation("converge", "the leader holds seq %llu past the last seq %llu its info gave",
                  (unsigned long long)upto, (unsigned long long)last);

    /* each replica of the stream's current peer set on its own server (after membership changes
     * a server may hold none: a removed one is down for good, an evacuated one holds none) */
    long long *rep = malloc((upto + 1) * sizeof *rep);
    if (!rep) die("out of memory");
    int nrep = 0;
    if (C.mutate && !strcmp(C.mutate, "peers")) /* a replica the peer set fails to name */
        for (int i = 0; i < C.n; i++)
            if (peers[i]) {
                peers[i] = 0;
                break;
            }
    for (int i = 0; i < C.n; i++) {
        if (!peers[i]) continue;
        if (C.removed[i]) {
            violation("converge", "the stream's peer set still lists %s, removed from the cluster",
                      C.names[i]);
            continue;
        }
        nrep++;
        natsConnection *ri = connect_to(i, 0);
        if (!ri) {
            violation("liveness", "cannot connect to %s for its direct reads", C.names[i]);
            continue;
        }
        for (uint64_t s = 0; s <= upto; s++) rep[s] = -2;
        unread = read_all(ri, "$JS.API.DIRECT.GET." STREAM, 1, upto, rep);
        natsConnection_Destroy(ri);
        if (nrep == 1 && C.mutate && !strcmp(C.mutate, "converge")) {
            mutate(final, upto, rep);
        }
        if (unread) violation("converge", "%s: %d direct gets unanswered", C.names[i], unread);
        int diff = 0, missing_here = 0;
        for (uint64_t s = 1; s <= upto; s++) {
            if (rep[s] == final[s]) continue;
            if (rep[s] == -2) missing_here++;
            if (diff++ < 5) {
                char here[32] = "nothing", there[32] = "nothing";
                if (rep[s] != -2) snprintf(here, sizeof here, "v%lld", rep[s]);
                if (final[s] != -2) snprintf(there, sizeof there, "v%lld", final[s]);
                violation("converge", "%s's replica holds %s at seq %llu, the leader %s",
                          C.names[i], here, (unsigned long long)s, there);
            }
        }
        if (diff)
            violation("converge", "%s: %d seqs differ from the leader (%d lost-on-node)",
                      C.names[i], diff, missing_here);
    }
    if (nrep != C.replicas)
        violation("converge", "%d replicas of %s read, its replica count is %d", nrep, STREAM,
                  C.replicas);
    note("direct reads on the %d replicas of the stream's peer set compared", nrep);
    consumers_drain_and_check(final, upto);
    free(rep);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    /* The publishers and the nemesis have stopped: the records are this thread's now (and
     * violation() takes hmu itself). */
    if (C.mutate && strcmp(C.mutate, "converge") && strcmp(C.mutate, "peers"))
        mutate(final, upto, NULL);
    check_history(final, upto);
    free(final);
}
