/*
 * watch.c — the damaged-leads checker: a replica that lost data (damaged: it waits for repair
 * from its peers) never leads, asserted on the servers' own reports through the whole run.
 *
 * A thread reads every running server's /jsz about once a second (the rate its monitor renews
 * it at), from the stream's creation until the final reads are done: its `health.unwell_replicas`
 * lists each local stream and consumer replica that is not well with its role, `damaged` and
 * `fsm_failed`, all three from the one read of that replica's group the server's health check
 * made (monitor.c, jr_node_health), so a replica is never judged on a role of one moment and a
 * flag of another. One that reports itself leader while damaged is a violation, named with the
 * server, the group and the time of the sample (once per server and group). A state machine
 * that failed (fsm_failed) is not damage: its log is whole, and it may lead for a while.
 *
 * Cheap: one small GET per server per second, parsed with jansson; a paused, stopped or removed
 * server is skipped, and one that does not answer within the request's timeouts is left for the
 * next round.
 *
 * --mutate damaged-leads reads every stream the server's checks show led there as a damaged
 * leader: the checker's own test (the run must fail).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "chaos.h"

#define JSZ_MAX (256 * 1024)
#define SEEN_MAX 64

static pthread_t watcher;
static int running;
static pthread_mutex_t wmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wcv = PTHREAD_COND_INITIALIZER;
static int stop;

typedef struct flagged {
    int server;
    uint64_t group;
    int consumer;
} flagged;
static flagged seen[SEEN_MAX];
static size_t nseen, nflagged;
static uint64_t samples, unwell_seen, damaged_seen, fsm_seen;

/* 1 the first time (server, group) is flagged, then 0: one violation each. */
static int first_time(int i, uint64_t group, int consumer)
{
    for (size_t k = 0; k < nseen; k++)
        if (seen[k].server == i && seen[k].group == group && seen[k].consumer == consumer) return 0;
    if (nseen < SEEN_MAX) seen[nseen++] = (flagged){i, group, consumer};
    nflagged++;
    return 1;
}

static void flag(int i, uint64_t group, const char *stream, const char *consumer, int fsm_failed,
                 const char *text, double at)
{
    if (!first_time(i, group, consumer != NULL)) return;
    if (consumer)
        violation("damaged-leads",
                  "%s reports itself leader of consumer %s > %s (group %" PRIu64
                  ") while damaged%s, sampled at %.3f s: %s",
                  C.names[i], stream, consumer, group,
                  fsm_failed ? " (state machine failed too)" : "", at, text);
    else
        violation("damaged-leads",
                  "%s reports itself leader of stream %s (group %" PRIu64
                  ") while damaged%s, sampled at %.3f s: %s",
                  C.names[i], stream, group, fsm_failed ? " (state machine failed too)" : "", at,
                  text);
}

static const char *jstr(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* One sample of server i. */
static void sample(int i)
{
    double at = rel_s(now_ns());
    char *body = http_fetch(i, "/jsz", JSZ_MAX);
    if (!body) return;
    json_t *j = json_loads(body, 0, NULL);
    free(body);
    if (!j) return;
    samples++;
    json_t *reps = json_object_get(json_object_get(j, "health"), "unwell_replicas");
    size_t k;
    json_t *r;
    json_array_foreach(reps, k, r)
    {
        unwell_seen++;
        int damaged = json_is_true(json_object_get(r, "damaged"));
        damaged_seen += damaged;
        fsm_seen += json_is_true(json_object_get(r, "fsm_failed"));
        if (!damaged || strcmp(jstr(r, "role"), "leader") != 0) continue;
        json_t *c = json_object_get(r, "consumer");
        flag(i, (uint64_t)json_integer_value(json_object_get(r, "group")), jstr(r, "stream"),
             json_is_string(c) ? json_string_value(c) : NULL,
             json_is_true(json_object_get(r, "fsm_failed")), jstr(r, "text"), at);
    }
    if (C.mutate && !strcmp(C.mutate, "damaged-leads")) {
        json_array_foreach(json_object_get(j, "stream_checks"), k, r)
        {
            if (json_is_true(json_object_get(r, "leader_here")))
                flag(i, 0, jstr(r, "name"), NULL, 0, "(mutated: a leader read as damaged)", at);
        }
    }
    json_decref(j);
}

static void *watch_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wmu);
    while (!stop) {
        pthread_mutex_unlock(&wmu);
        for (int i = 0; i < C.n; i++) {
            pthread_mutex_lock(&C.smu);
            int up = C.pid[i] > 0 && !C.paused[i] && !C.removed[i];
            pthread_mutex_unlock(&C.smu);
            if (up) sample(i);
        }
        pthread_mutex_lock(&wmu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        if (!stop) pthread_cond_timedwait(&wcv, &wmu, &ts);
    }
    pthread_mutex_unlock(&wmu);
    return NULL;
}

void watch_start(void)
{
    stop = 0;
    running = pthread_create(&watcher, NULL, watch_main, NULL) == 0;
    if (!running) die("the damaged-leads watcher could not start");
}

void watch_stop(void)
{
    if (!running) return;
    pthread_mutex_lock(&wmu);
    stop = 1;
    pthread_cond_signal(&wcv);
    pthread_mutex_unlock(&wmu);
    pthread_join(watcher, NULL);
    running = 0;
    note("damaged-leads: %" PRIu64 " samples of the servers' own reports, %" PRIu64
         " unwell replicas seen in them, %" PRIu64
         " of them damaged (%zu of those leading), %" PRIu64 " with a failed state machine",
         samples, unwell_seen, damaged_seen, nflagged, fsm_seen);
}
