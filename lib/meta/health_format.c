/*
 * health_format — jr_stream_check_format(): a check result as the nats CLI's Nagios line.
 *
 * The CLI (natscli `server check stream`, evaluated by jsm.go's monitor package) renders
 * "STATUS NAME", then "Crit:" and each critical, "Warn:" and each warning, "OK:" and each check
 * that passed, then " | " and the perf data when there is any. Its stream check is the cluster
 * check ("N peers", "replicas are current" with a lag threshold, "replicas are active" with a
 * seen threshold) followed by the sources check, which for a stream without sources is
 * "OK:0 sources" with the perf data "sources=0". A result whose info could not be had stops
 * there, as the CLI does (no sources check, no perf data).
 *
 * Where this goes beyond the CLI: the CLI stops at "No leader" or a wrong peer count, this
 * check goes on and reports the replicas too; damaged, not current, unvouched and joining
 * replicas are libjetraft's own problems (the CLI has no words for them); the CLI's consumer
 * check has no cluster part, so a consumer's line carries the stream check's cluster wording
 * under the CLI's consumer check name (STREAM_CONSUMER), without sources or perf data.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "meta/info_format.h"

typedef struct out {
    char *buf;
    size_t len;
    size_t n; /* bytes the full rendering needs so far */
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->n < o->len ? o->len - o->n : 0;
    int k = vsnprintf(room ? o->buf + o->n : NULL, room, fmt, ap);
    va_end(ap);
    if (k > 0) o->n += (size_t)k;
}

static const char *status_word(int s)
{
    switch (s) {
    case JR_CHECK_OK:
        return "OK";
    case JR_CHECK_WARNING:
        return "WARNING";
    case JR_CHECK_CRITICAL:
        return "CRITICAL";
    default:
        return "UNKNOWN";
    }
}

int jr_stream_check_format(const jr_check_result *res, char *buf, size_t len)
{
    if (!res || (!buf && len) || !JR__HAS(res->size, jr_check_result, nproblems) || !res->stream)
        return JR_EINVAL;
    if (res->nproblems && !res->problems) return JR_EINVAL;
    out o = {buf, len, 0};
    if (len) buf[0] = 0;
    put(&o, "%s ", status_word(res->status));
    if (res->consumer)
        put(&o, "%s_%s", res->stream, res->consumer);
    else
        put(&o, "%s", res->stream);
    int unavailable = 0, no_leader = 0, wrong_count = 0, lagged = 0, inactive = 0;
    for (int sev = JR_CHECK_CRITICAL; sev >= JR_CHECK_WARNING; sev--) {
        for (size_t i = 0; i < res->nproblems; i++) {
            const jr_check_problem *p = res->problems[i];
            if (!p || !JR__HAS(p->size, jr_check_problem, text)) return JR_EINVAL;
            if (p->severity != sev) continue;
            put(&o, " %s:%s", sev == JR_CHECK_CRITICAL ? "Crit" : "Warn", p->text ? p->text : "");
            unavailable |= p->kind == JR_CHECK_UNAVAILABLE;
            no_leader |= p->kind == JR_CHECK_NO_LEADER;
            wrong_count |= p->kind == JR_CHECK_PEER_COUNT;
            lagged |= p->kind == JR_CHECK_LAGGED;
            inactive |= p->kind == JR_CHECK_INACTIVE;
        }
    }
    if (!unavailable && !no_leader) {
        if (!wrong_count) put(&o, " OK:%u peers", (unsigned)res->peers);
        if (JR__HAS(res->size, jr_check_result, seen_critical_ns)) {
            if (res->lag_critical && !lagged) put(&o, " OK:replicas are current");
            if (res->seen_critical_ns && !inactive) put(&o, " OK:replicas are active");
        }
    }
    if (!unavailable && !res->consumer) put(&o, " OK:0 sources | sources=0");
    if (o.n > (size_t)0x7fffffff) return JR_EINVAL;
    return (int)o.n;
}
