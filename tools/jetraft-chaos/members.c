/*
 * members.c — the `members` fault: membership changes through the servers' JetStream API
 * (examples/server/README.md, "Cluster operations"), amid the other faults.
 *
 * Each change runs on a thread of its own with its own connection (every server not removed),
 * so that its requests may wait for answers while the nemesis goes on; an answer is written
 * to the history as a nemesis event. The kinds:
 *
 * peer remove (variant 0): `$JS.API.STREAM.PEER.REMOVE.D0` {"peer"} for one of the stream's
 * peers (its current info says which; any peer, the leader too): a replacement joins and catches
 * up before the peer leaves, or, with no server to take the replica, 10075 and nothing changes.
 *
 * evacuate (variant 1): `$JS.API.SERVER.EVACUATE` {"peer"} for one server not removed, then
 * `$JS.API.SERVER.EVACUATE.CANCEL` after dur_ms (0.5-3 s: moves in flight; 8-15 s: usually
 * done), or at once when the run heals.
 *
 * server remove (variant 2, five servers only, once a run): a server holding a replica of the
 * stream (any server when the stream's info does not answer) is stopped (kill -9)
 * and marked removed, so that no fault's end starts it again; then `$JS.API.SERVER.REMOVE`
 * {"peer"} until it is answered: success, or 10044 (not a member: an earlier attempt whose
 * answer was lost removed it), removes it for good. A refusal (no quorum, a change in progress)
 * is tried again for 40 s; then the server is started again and the removal given up. A removed
 * server is left out of the checks that need a copy on it (check.c reads the replicas of the
 * stream's current peer set).
 *
 * Without users in the servers' configurations every client may send the system operations
 * (SERVER.*), which is how the harness runs them.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nats/nats.h>

#include "chaos.h"

typedef struct mjob {
    int variant, dur_ms;
    uint64_t pick;
} mjob;

static pthread_t threads[256];
static int nthreads;
static volatile int heal_now;

static natsConnection *connect_members(void)
{
    char u[MAXN][64];
    const char *list[MAXN];
    int cnt = 0;
    pthread_mutex_lock(&C.smu);
    for (int i = 0; i < C.n; i++)
        if (!C.removed[i]) {
            snprintf(u[cnt], sizeof u[cnt], "nats://127.0.0.1:%d", C.client_port[i]);
            list[cnt] = u[cnt];
            cnt++;
        }
    pthread_mutex_unlock(&C.smu);
    return clients_connect(list, cnt, 0, 1);
}

/* One request: 1 success, 0 refused (*code the err_code), -1 no answer. The answer's start
 * goes into what. */
static int request(natsConnection *nc, const char *subject, const char *body, int *code, char *what,
                   size_t cap)
{
    natsMsg *m = NULL;
    *code = 0;
    snprintf(what, cap, "no answer");
    if (!nc || natsConnection_RequestString(&m, nc, subject, body, 5000) != NATS_OK) return -1;
    const char *d = natsMsg_GetData(m);
    int rc = -1;
    if (d) {
        snprintf(what, cap, "%.*s", natsMsg_GetDataLength(m) < 160 ? natsMsg_GetDataLength(m) : 160,
                 d);
        const char *e = strstr(d, "\"err_code\":");
        if (e) {
            *code = atoi(e + 11);
            rc = 0;
        } else if (strstr(d, "\"success\":true")) {
            rc = 1;
        }
    }
    natsMsg_Destroy(m);
    return rc;
}

/* The stream's peers from its info (leader first); their count, 0 without an answer. */
static int stream_peers(natsConnection *nc, int *peers)
{
    jsCtx *js = NULL;
    int np = 0;
    if (!nc || natsConnection_JetStream(&js, nc, NULL) != NATS_OK) return 0;
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, js, STREAM, NULL, NULL) == NATS_OK && si->Cluster) {
        for (int i = 0; i < C.n; i++) {
            int in = si->Cluster->Leader && !strcmp(si->Cluster->Leader, C.names[i]);
            for (int k = 0; !in && k < si->Cluster->ReplicasLen; k++)
                in = !strcmp(si->Cluster->Replicas[k]->Name, C.names[i]);
            if (in) peers[np++] = i;
        }
        jsStreamInfo_Destroy(si);
    }
    jsCtx_Destroy(js);
    return np;
}

static void sleep_ms_or_heal(int ms)
{
    for (int t = 0; t < ms && !heal_now; t += 50) usleep(50000);
}

static void peer_remove(natsConnection *nc, mjob *j)
{
    int peers[MAXN], np = stream_peers(nc, peers);
    if (!np) {
        nemesis_note("members: peer remove skipped (no stream info)");
        return;
    }
    int v = peers[j->pick % (uint64_t)np], code;
    char body[64], what[200];
    snprintf(body, sizeof body, "{\"peer\":\"%s\"}", C.names[v]);
    int rc = request(nc, "$JS.API.STREAM.PEER.REMOVE." STREAM, body, &code, what, sizeof what);
    nemesis_note("members: peer remove %s from %s: %s", C.names[v], STREAM,
                 rc > 0    ? "done"
                 : rc == 0 ? what
                           : "no answer");
}

/* Per server, the drains the harness ended (a cancel answered as done): a drain answered as
 * started that no cancel ended must still be in force at its own cancel. */
static unsigned drains_ended[MAXN];

static void evacuate(natsConnection *nc, mjob *j)
{
    int cand[MAXN], nc_ = 0, code;
    pthread_mutex_lock(&C.smu);
    for (int i = 0; i < C.n; i++)
        if (!C.removed[i]) cand[nc_++] = i;
    pthread_mutex_unlock(&C.smu);
    int v = cand[j->pick % (uint64_t)nc_];
    char body[64], what[200];
    snprintf(body, sizeof body, "{\"peer\":\"%s\"}", C.names[v]);
    int rc = request(nc, "$JS.API.SERVER.EVACUATE", body, &code, what, sizeof what);
    pthread_mutex_lock(&C.smu);
    unsigned ended = drains_ended[v];
    pthread_mutex_unlock(&C.smu);
    int started = rc > 0;
    nemesis_note("members: evacuate %s: %s; cancel in %.1f s", C.names[v],
                 rc > 0    ? "draining"
                 : rc == 0 ? what
                           : "no answer",
                 j->dur_ms / 1000.0);
    sleep_ms_or_heal(j->dur_ms);
    /* A lost answer may hide a drain that committed: the cancel is sent whatever the answer. */
    int a = 0;
    for (; a < 5; a++) {
        rc = request(nc, "$JS.API.SERVER.EVACUATE.CANCEL", body, &code, what, sizeof what);
        pthread_mutex_lock(&C.smu);
        if (rc > 0) drains_ended[v]++;
        /* The first cancel found no drain, though the drain was answered as started and no
         * cancel of the harness ended one since: a drain the meta group forgot (a cancel whose
         * answer was lost may have ended it, so only the first attempt tells). */
        int forgot = a == 0 && code == 10129 && started && drains_ended[v] == ended;
        pthread_mutex_unlock(&C.smu);
        if (forgot)
            violation("member-drain", "%s's drain was answered as started, yet its cancel: %s",
                      C.names[v], what);
        if (rc > 0 || code == 10129 || code == 10044) break;
        usleep(500000);
    }
    nemesis_note("members: evacuation of %s cancelled (%d request(s)): %s", C.names[v],
                 a < 5 ? a + 1 : 5,
                 rc > 0    ? "done"
                 : rc == 0 ? what
                           : "no answer");
}

/* A removal is answered only once it committed and the meta group no longer lists the server
 * (jr_server_peer_remove; NATS answered before quorum, Jepsen's finding 6): the same request
 * sent again must be refused as not a member (10044), from whichever meta leader answers; a
 * second success is the checker `member-remove`'s violation (other refusals, such as no meta
 * leader, are asked again). */
static void confirm_removed(natsConnection *nc, int v, const char *body)
{
    char what[200];
    int code = 0;
    for (uint64_t t0 = now_ns(); now_ns() - t0 < 20000000000ull; usleep(500000)) {
        int rc = request(nc, "$JS.API.SERVER.REMOVE", body, &code, what, sizeof what);
        if (code == 10044) return;
        if (rc <= 0) continue; /* no answer, no meta leader or quorum, a change in progress */
        violation("member-remove",
                  "%s's removal was answered as done, yet a second removal succeeded too: %s",
                  C.names[v], what);
        return;
    }
    nemesis_note("members: %s's removal not confirmed (no definite answer in 20 s)", C.names[v]);
}

static void server_remove(natsConnection *nc, mjob *j)
{
    /* A server that holds a replica of the stream, when its info answers: its removal re-places
     * the replica (a peer change under the other faults), which is what must keep every
     * acknowledged write. */
    int peers[MAXN], np = stream_peers(nc, peers), code = 0;
    int v = np ? peers[j->pick % (uint64_t)np] : (int)(j->pick % (uint64_t)C.n);
    pthread_mutex_lock(&C.smu);
    C.removed[v] = 1;
    if (C.pid[v] > 0) {
        kill(C.pid[v], SIGKILL);
        waitpid(C.pid[v], NULL, 0);
        C.pid[v] = 0;
        C.paused[v] = 0;
    }
    pthread_mutex_unlock(&C.smu);
    nemesis_note("members: %s stopped for good (kill -9); removing it from the cluster",
                 C.names[v]);
    char body[64], what[200] = "";
    snprintf(body, sizeof body, "{\"peer\":\"%s\"}", C.names[v]);
    int rc = -1, tries = 0;
    for (uint64_t t0 = now_ns(); now_ns() - t0 < 40000000000ull; tries++) {
        rc = request(nc, "$JS.API.SERVER.REMOVE", body, &code, what, sizeof what);
        if (rc > 0 || code == 10044) break;
        usleep(500000);
    }
    if (rc > 0 || code == 10044) {
        nemesis_note("members: %s removed from the cluster after %d request(s): %s", C.names[v],
                     tries + 1, what);
        if (rc > 0) confirm_removed(nc, v, body);
        return;
    }
    pthread_mutex_lock(&C.smu);
    C.removed[v] = 0;
    server_start(v);
    pthread_mutex_unlock(&C.smu);
    nemesis_note("members: removal of %s given up after %d requests (last: %s); started again",
                 C.names[v], tries, what);
}

static void *run(void *arg)
{
    mjob *j = arg;
    natsConnection *nc = connect_members();
    if (j->variant == 0)
        peer_remove(nc, j);
    else if (j->variant == 1)
        evacuate(nc, j);
    else
        server_remove(nc, j);
    natsConnection_Destroy(nc);
    free(j);
    return NULL;
}

void members_start(int variant, int dur_ms, uint64_t pick)
{
    if (nthreads == (int)(sizeof threads / sizeof threads[0])) return;
    mjob *j = malloc(sizeof *j);
    if (!j) die("out of memory");
    *j = (mjob){.variant = variant, .dur_ms = dur_ms, .pick = pick};
    if (pthread_create(&threads[nthreads], NULL, run, j)) die("cannot start a member change");
    nthreads++;
}

void members_join(void)
{
    heal_now = 1;
    for (int i = 0; i < nthreads; i++) pthread_join(threads[i], NULL);
    nthreads = 0;
}
