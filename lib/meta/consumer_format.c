/*
 * consumer_format — jr_consumer_info_format(): a consumer's info laid out as `nats consumer info`
 * prints it:
 *
 *   Information for Consumer ORDERS > NEW created 2026-12-05T16:00:00Z
 *
 *   Configuration:
 *
 *                       Name: NEW
 *                  Pull Mode: true
 *             Deliver Policy: All
 *                 Ack Policy: Explicit
 *                   Ack Wait: 30.00s
 *   ...
 *
 *   Cluster Information:          (cluster_info.c, at this page's label width)
 *   ...
 *
 *   State:
 *
 *     Last Delivered Message: Consumer sequence: 1,500 Stream sequence: 1,520 Last delivery: ...
 *   ...
 *
 * The CLI right-aligns every label of the page to its longest one; "Last Delivered Message" is
 * always there and no other row is longer, so the width is fixed. A section is preceded by an
 * empty line unless it opens the page. Configuration rows appear only when set, as the CLI adds
 * them; durations and numbers are written with cluster_info's primitives (the CLI version the
 * seeds come from: "30.00s", "1,000"), backoff steps and the time left of a pause as Go's
 * time.Duration prints them ("1m0s"), times in UTC.
 *
 * Not rendered, for want of the data in jr_consumer_info: the Metadata section, push consumers'
 * "Active Interest" and the pinned clients of priority groups.
 *
 * Pure: no allocation, no state; every struct read only up to its `size`.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "meta/cluster_info.h"
#include "meta/info_format.h"

#define NS_PER_SEC 1000000000ULL

/* Width of the label column: "Last Delivered Message". */
#define LABEL_WIDTH 22

/* Backoff lists longer than this show their first and last BACKOFF_ENDS steps only (the CLI). */
#define BACKOFF_SHOWN_MAX 15
#define BACKOFF_ENDS 5

static const char *str(const char *s)
{
    return s ? s : "";
}

static int set(const char *s)
{
    return s && *s;
}

static void label(jr__fmt *o, const char *l)
{
    jr__fmt_label(o, LABEL_WIDTH, l);
}

/* Calendar date and time of day of ns since the Unix epoch, in UTC (the days-to-civil algorithm
 * of the proleptic Gregorian calendar). */
typedef struct civil {
    long long year;
    unsigned month, day, hour, min, sec, nsec;
} civil;

static civil to_civil(uint64_t ns)
{
    uint64_t secs = ns / NS_PER_SEC;
    long long z = (long long)(secs / 86400) + 719468;
    long long era = z / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    civil c;
    c.day = doy - (153 * mp + 2) / 5 + 1;
    c.month = mp < 10 ? mp + 3 : mp - 9;
    c.year = (long long)yoe + era * 400 + (c.month <= 2);
    unsigned sod = (unsigned)(secs % 86400);
    c.hour = sod / 3600;
    c.min = sod / 60 % 60;
    c.sec = sod % 60;
    c.nsec = (unsigned)(ns % NS_PER_SEC);
    return c;
}

/* RFC 3339 in UTC, whole seconds (Go's time.RFC3339): "2026-12-05T16:00:00Z". */
static void emit_rfc3339(jr__fmt *o, uint64_t ns)
{
    civil c = to_civil(ns);
    jr__fmt_emit(o, "%04lld-%02u-%02uT%02u:%02u:%02uZ", c.year, c.month, c.day, c.hour, c.min,
                 c.sec);
}

/* The CLI's plain time: "2026-12-05 16:00:00". */
static void emit_datetime(jr__fmt *o, uint64_t ns)
{
    civil c = to_civil(ns);
    jr__fmt_emit(o, "%04lld-%02u-%02u %02u:%02u:%02u", c.year, c.month, c.day, c.hour, c.min,
                 c.sec);
}

/* Go's Time.String() in UTC: "2026-12-05 16:00:00.5 +0000 UTC" (fraction only when set). */
static void emit_go_time(jr__fmt *o, uint64_t ns)
{
    emit_datetime(o, ns);
    unsigned frac = (unsigned)(ns % NS_PER_SEC);
    if (frac) {
        char digits[10];
        int k = 9;
        snprintf(digits, sizeof digits, "%09u", frac);
        while (k > 0 && digits[k - 1] == '0') k--;
        jr__fmt_emit(o, ".%.*s", k, digits);
    }
    jr__fmt_emit(o, " +0000 UTC");
}

/* v / 10^prec with the trailing zeros of the fraction (and a bare point) dropped, as Go's
 * fmtFrac/fmtInt write a duration's last unit. */
static void emit_frac(jr__fmt *o, uint64_t v, int prec, const char *unit)
{
    uint64_t scale = 1;
    for (int i = 0; i < prec; i++) scale *= 10;
    jr__fmt_emit(o, "%llu", (unsigned long long)(v / scale));
    uint64_t frac = v % scale;
    if (frac) {
        char digits[24];
        snprintf(digits, sizeof digits, "%0*llu", prec, (unsigned long long)frac);
        int k = prec;
        while (k > 0 && digits[k - 1] == '0') k--;
        jr__fmt_emit(o, ".%.*s", k, digits);
    }
    jr__fmt_emit(o, "%s", unit);
}

/* Go's time.Duration.String(): "0s", "250ms", "1.5µs", "1m30s", "2h0m0s". */
void jr__fmt_go_duration(jr__fmt *o, int64_t d)
{
    if (d == 0) {
        jr__fmt_emit(o, "0s");
        return;
    }
    uint64_t u = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
    if (d < 0) jr__fmt_emit(o, "-");
    if (u < 1000) {
        jr__fmt_emit(o, "%lluns", (unsigned long long)u);
    } else if (u < 1000000) {
        emit_frac(o, u, 3, "\xc2\xb5s");
    } else if (u < NS_PER_SEC) {
        emit_frac(o, u, 6, "ms");
    } else {
        uint64_t s = u / NS_PER_SEC, m = s / 60, h = m / 60;
        if (h) jr__fmt_emit(o, "%lluh", (unsigned long long)h);
        if (m) jr__fmt_emit(o, "%llum", (unsigned long long)(m % 60));
        emit_frac(o, (s % 60) * NS_PER_SEC + u % NS_PER_SEC, 9, "s");
    }
}

/* go-humanize's IBytes: "125 B", "1.2 KiB", "15 MiB". */
static void emit_ibytes(jr__fmt *o, uint64_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 10) {
        jr__fmt_emit(o, "%llu B", (unsigned long long)n);
        return;
    }
    int e = 0;
    double base = 1;
    while (e < 6 && (double)n >= base * 1024) {
        base *= 1024;
        e++;
    }
    double val = (double)(uint64_t)((double)n / base * 10 + 0.5) / 10;
    jr__fmt_emit(o, val < 10 ? "%.1f %s" : "%.0f %s", val, units[e]);
}

static void row_str(jr__fmt *o, const char *l, const char *v)
{
    label(o, l);
    jr__fmt_emit(o, "%s\n", str(v));
}

static void row_num(jr__fmt *o, const char *l, uint64_t v)
{
    label(o, l);
    jr__fmt_commas(o, v);
    jr__fmt_emit(o, "\n");
}

static void row_dur(jr__fmt *o, const char *l, int64_t ns)
{
    label(o, l);
    jr__fmt_duration(o, (uint64_t)ns);
    jr__fmt_emit(o, "\n");
}

static void emit_backoff(jr__fmt *o, const int64_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (n > BACKOFF_SHOWN_MAX && i == BACKOFF_ENDS) {
            jr__fmt_emit(o, ", ...");
            i = n - BACKOFF_ENDS;
        }
        if (i > 0) jr__fmt_emit(o, ", ");
        jr__fmt_go_duration(o, b[i]);
    }
    if (n > BACKOFF_SHOWN_MAX) jr__fmt_emit(o, " (%zu total)", n);
}

/* The time left of a pause, rounded to the second as the CLI does. */
static int64_t pause_left(uint64_t until, uint64_t now)
{
    uint64_t left = until - now;
    return (int64_t)((left + NS_PER_SEC / 2) / NS_PER_SEC * NS_PER_SEC);
}

static void emit_config(jr__fmt *o, const jr_consumer_config *c, uint64_t now_ns)
{
    int push = set(c->deliver_subject);
    if (set(c->name)) row_str(o, "Name", c->name);
    if (set(c->durable_name) && (!c->name || strcmp(c->durable_name, c->name) != 0))
        row_str(o, "Durable Name", c->durable_name);
    if (set(c->description)) row_str(o, "Description", c->description);
    if (push)
        row_str(o, "Delivery Subject", c->deliver_subject);
    else
        row_str(o, "Pull Mode", "true");
    if (set(c->filter_subject)) {
        row_str(o, "Filter Subject", c->filter_subject);
    } else if (c->nfilter_subjects && c->filter_subjects) {
        label(o, "Filter Subjects");
        for (size_t i = 0; i < c->nfilter_subjects; i++)
            jr__fmt_emit(o, "%s%s", i ? ", " : "", str(c->filter_subjects[i]));
        jr__fmt_emit(o, "\n");
    }
    label(o, "Deliver Policy");
    switch (c->deliver_policy) {
    case JR_DELIVER_ALL:
        jr__fmt_emit(o, "All\n");
        break;
    case JR_DELIVER_LAST:
        jr__fmt_emit(o, "Last\n");
        break;
    case JR_DELIVER_NEW:
        jr__fmt_emit(o, "New\n");
        break;
    case JR_DELIVER_LAST_PER_SUBJECT:
        jr__fmt_emit(o, "Last Per Subject\n");
        break;
    case JR_DELIVER_BY_START_TIME:
        jr__fmt_emit(o, "Since ");
        emit_go_time(o, c->opt_start_time_ns);
        jr__fmt_emit(o, "\n");
        break;
    case JR_DELIVER_BY_START_SEQ:
        jr__fmt_emit(o, "From Sequence %llu\n", (unsigned long long)c->opt_start_seq);
        break;
    default:
        jr__fmt_emit(o, "Unknown Deliver Policy\n");
        break;
    }
    if (push && set(c->deliver_group)) row_str(o, "Deliver Queue Group", c->deliver_group);
    static const char *const acks[] = {"None", "All", "Explicit"};
    row_str(o, "Ack Policy",
            c->ack_policy >= JR_ACK_NONE && c->ack_policy <= JR_ACK_EXPLICIT
                ? acks[c->ack_policy]
                : "Unknown Acknowledgement Policy");
    if (c->ack_policy != JR_ACK_NONE && c->ack_wait_ns >= 0) row_dur(o, "Ack Wait", c->ack_wait_ns);
    row_str(o, "Replay Policy",
            c->replay_policy == JR_REPLAY_INSTANT    ? "Instant"
            : c->replay_policy == JR_REPLAY_ORIGINAL ? "Original"
                                                     : "Unknown Replay Policy");
    if (c->max_deliver > 0) row_num(o, "Maximum Deliveries", (uint64_t)c->max_deliver);
    if (set(c->sample_freq)) row_str(o, "Sampling Rate", c->sample_freq);
    if (c->rate_limit_bps > 0) {
        label(o, "Rate Limit");
        emit_ibytes(o, c->rate_limit_bps / 8);
        jr__fmt_emit(o, " / second\n");
    }
    if (c->max_ack_pending > 0) row_num(o, "Max Ack Pending", (uint64_t)c->max_ack_pending);
    if (c->max_waiting > 0) row_num(o, "Max Waiting Pulls", (uint64_t)c->max_waiting);
    if (c->idle_heartbeat_ns > 0) row_dur(o, "Idle Heartbeat", c->idle_heartbeat_ns);
    if (push) row_str(o, "Flow Control", c->flow_control ? "true" : "false");
    if (c->headers_only) row_str(o, "Headers Only", "true");
    if (c->inactive_threshold_ns > 0 && !push)
        row_dur(o, "Inactive Threshold", c->inactive_threshold_ns);
    if (c->max_expires_ns > 0) row_dur(o, "Max Pull Expire", c->max_expires_ns);
    if (c->max_batch > 0) row_num(o, "Max Pull Batch", (uint64_t)c->max_batch);
    if (c->max_bytes > 0) row_num(o, "Max Pull MaxBytes", (uint64_t)c->max_bytes);
    if (c->nbackoff && c->backoff_ns) {
        label(o, "Backoff");
        emit_backoff(o, c->backoff_ns, c->nbackoff);
        jr__fmt_emit(o, "\n");
    }
    if (c->num_replicas > 0) row_num(o, "Replicas", (uint64_t)c->num_replicas);
    if (c->mem_storage) row_str(o, "Memory Storage", "true");
    if (c->pause_until_ns) {
        label(o, "Paused Until Deadline");
        emit_go_time(o, c->pause_until_ns);
        if (now_ns && c->pause_until_ns > now_ns) {
            jr__fmt_emit(o, " (");
            jr__fmt_go_duration(o, pause_left(c->pause_until_ns, now_ns));
            jr__fmt_emit(o, " remaining)");
        } else if (now_ns) {
            jr__fmt_emit(o, " (passed)");
        }
        jr__fmt_emit(o, "\n");
    }
    if (c->priority_policy != JR_PRIORITY_NONE) {
        static const char *const prios[] = {"None", "Overflow", "Pinned Client", "Prioritized"};
        row_str(o, "Priority Policy",
                c->priority_policy > 0 && c->priority_policy <= JR_PRIORITY_PRIORITIZED
                    ? prios[c->priority_policy]
                    : "None");
        label(o, "Priority Groups");
        for (size_t i = 0; c->priority_groups && i < c->npriority_groups; i++)
            jr__fmt_emit(o, "%s%s", i ? ", " : "", str(c->priority_groups[i]));
        jr__fmt_emit(o, "\n");
        if (c->priority_policy == JR_PRIORITY_PINNED_CLIENT && c->priority_timeout_ns >= 0)
            row_dur(o, "Pinned TTL", c->priority_timeout_ns);
    }
}

/* "Consumer sequence: 1,500 Stream sequence: 1,520[ <what>: 2.50s ago]". */
static void emit_seq_row(jr__fmt *o, const char *l, const jr_consumer_seq *s, const char *what,
                         uint64_t now_ns)
{
    label(o, l);
    jr__fmt_emit(o, "Consumer sequence: ");
    jr__fmt_commas(o, s->consumer_seq);
    jr__fmt_emit(o, " Stream sequence: ");
    jr__fmt_commas(o, s->stream_seq);
    if (now_ns && s->last_active_ns) {
        jr__fmt_emit(o, " %s: ", what);
        jr__fmt_duration(o, now_ns > s->last_active_ns ? now_ns - s->last_active_ns : 0);
        jr__fmt_emit(o, " ago");
    }
    jr__fmt_emit(o, "\n");
}

static void emit_state(jr__fmt *o, const jr_consumer_info *in, const jr_consumer_config *c,
                       uint64_t now_ns)
{
    emit_seq_row(o, "Last Delivered Message", &in->delivered, "Last delivery", now_ns);
    if (!c || c->ack_policy != JR_ACK_NONE) {
        emit_seq_row(o, "Acknowledgment Floor", &in->ack_floor, "Last Ack", now_ns);
        label(o, "Outstanding Acks");
        jr__fmt_commas(o, in->num_ack_pending);
        if (c && c->max_ack_pending > 0) {
            jr__fmt_emit(o, " out of maximum ");
            jr__fmt_commas(o, (uint64_t)c->max_ack_pending);
        }
        jr__fmt_emit(o, "\n");
        row_num(o, "Redelivered Messages", in->num_redelivered);
    }
    row_num(o, "Unprocessed Messages", in->num_pending);
    if (c && !set(c->deliver_subject)) {
        label(o, "Waiting Pulls");
        jr__fmt_commas(o, in->num_waiting);
        if (c->max_waiting > 0) {
            jr__fmt_emit(o, " of maximum ");
            jr__fmt_commas(o, (uint64_t)c->max_waiting);
            jr__fmt_emit(o, "\n");
        } else {
            jr__fmt_emit(o, " of unlimited\n");
        }
    }
    if (c && now_ns && c->pause_until_ns > now_ns) {
        label(o, "Paused Until");
        emit_datetime(o, c->pause_until_ns);
        jr__fmt_emit(o, " (");
        jr__fmt_go_duration(o, pause_left(c->pause_until_ns, now_ns));
        jr__fmt_emit(o, " remaining)\n");
    }
}

int jr_consumer_info_format(const jr_consumer_info *info, uint64_t now_ns, char *buf, size_t len)
{
    if (!info || !JR__HAS(info->size, jr_consumer_info, name) || (!buf && len)) return JR_EINVAL;
    /* the caller's info and config as their sizes say; fields they do not have read as 0 */
    jr_consumer_info in;
    memset(&in, 0, sizeof in);
    memcpy(&in, info, info->size < sizeof in ? info->size : sizeof in);
    jr_consumer_config cfg;
    const jr_consumer_config *c = NULL;
    if (in.config && JR__HAS(in.config->size, jr_consumer_config, name)) {
        memset(&cfg, 0, sizeof cfg);
        memcpy(&cfg, in.config, in.config->size < sizeof cfg ? in.config->size : sizeof cfg);
        c = &cfg;
    }
    jr__replica_view reps[JR__INFO_MAX_REPLICAS];
    jr__cluster_view v;
    int clustered =
        in.cluster && JR__HAS(in.cluster->size, jr_cluster_info, name) && set(in.cluster->name);
    if (clustered) {
        int rc = jr__cluster_view_from_info(in.cluster, reps, &v);
        if (rc < 0) return rc;
    }

    jr__fmt o = {buf, len, 0};
    if (buf && len) buf[0] = '\0';
    jr__fmt_emit(&o, "Information for Consumer %s > %s", str(in.stream), str(in.name));
    if (in.created_ns) {
        jr__fmt_emit(&o, " created ");
        emit_rfc3339(&o, in.created_ns);
    }
    jr__fmt_emit(&o, "\n\n");
    int opened = 0; /* a section was written: the next one is preceded by an empty line */
    if (c) {
        jr__fmt_emit(&o, "Configuration:\n\n");
        emit_config(&o, c, now_ns);
        opened = 1;
    }
    if (clustered) {
        if (opened) jr__fmt_emit(&o, "\n");
        char *dst = o.buf && o.need < o.len ? o.buf + o.need : NULL;
        size_t room = dst ? o.len - o.need : 0;
        int k = jr__cluster_view_format(&v, LABEL_WIDTH, dst, room);
        if (k < 0) return k;
        o.need += (size_t)k;
        dst = o.buf && o.need < o.len ? o.buf + o.need : NULL;
        room = dst ? o.len - o.need : 0;
        k = jr__move_format(in.cluster, LABEL_WIDTH, dst, room); /* while a peer change runs */
        if (k < 0) return k;
        o.need += (size_t)k;
        opened = 0; /* the blocks end with their own empty line */
    }
    if (opened) jr__fmt_emit(&o, "\n");
    jr__fmt_emit(&o, "State:\n\n");
    emit_state(&o, &in, c, now_ns);
    if (o.need > (size_t)INT32_MAX) return JR_ERANGE;
    return (int)o.need;
}
