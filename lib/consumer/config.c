/* config — defaults, validation and the normal form of consumer configurations (see config.h).
 *
 * jr__consumer_config_validate follows nats-server's checkConsumerCfg (consumer.go) check by
 * check, in its order, then the work-queue checks of addConsumerWithAssignment and the name
 * length; the texts are JetStream's, byte for byte (including its "optional start start
 * sequence").
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/abi.h"
#include "util/subject.h"

void jr_consumer_config_init_size(jr_consumer_config *cfg, size_t size)
{
    jr_consumer_config d;
    memset(&d, 0, sizeof d);
    d.deliver_policy = JR_DELIVER_ALL;
    d.ack_policy = JR_ACK_EXPLICIT;
    d.replay_policy = JR_REPLAY_INSTANT;
    jr__abi_init(cfg, size, &d, sizeof d);
}

int jr__consumer_config_fail(jr__cerr *err, int http, int code, const char *fmt, ...)
{
    if (err) {
        err->http = http;
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return JR_EINVAL;
}

#define FAIL(http, code, ...) jr__consumer_config_fail(err, http, code, __VA_ARGS__)

static int set(const char *s)
{
    return s && *s;
}

/* isValidAssetName: no space, \t, \r, \n, \f, '.', '*', '>', '\', '/'. */
static int asset_name_ok(const char *s)
{
    return strpbrk(s, " \t\r\n\f.*>\\/") == NULL;
}

const char *const *jr__consumer_filters(const jr_consumer_config *c, const char **one, size_t *n)
{
    if (set(c->filter_subject)) {
        *one = c->filter_subject;
        *n = 1;
        return one;
    }
    *n = c->nfilter_subjects;
    return c->nfilter_subjects ? c->filter_subjects : NULL;
}

/* The values setConsumerConfigDefaults clamps without refusing, as the checks see them. */
static int64_t eff_max_deliver(int64_t v)
{
    return v == 0 || v < -1 ? -1 : v;
}

static int64_t nonneg(int64_t v)
{
    return v < 0 ? 0 : v;
}

/* Go's strconv.Quote for ASCII (bytes from 0x80 are copied as they are), truncated to cap. */
static void go_quote(char *dst, size_t cap, const char *s, size_t n)
{
    static const char special[] = "\a\b\f\n\r\t\v\"\\", letter[] = "abfnrtv\"\\";
    size_t o = 0;
    char e[8];
    for (size_t i = 0; i <= n + 1; i++) {
        unsigned char c = i == 0 || i == n + 1 ? '"' : (unsigned char)s[i - 1];
        const char *k = i == 0 || i == n + 1 || !c ? NULL : strchr(special, c);
        if (k)
            snprintf(e, sizeof e, "\\%c", letter[k - special]);
        else if (c < 0x20 || c == 0x7f)
            snprintf(e, sizeof e, "\\x%02x", c);
        else
            snprintf(e, sizeof e, "%c", c);
        for (const char *p = e; *p && o + 1 < cap; p++) dst[o++] = *p;
    }
    dst[o] = '\0';
}

/* Go's strconv.Atoi: an optional sign then decimal digits fitting an int64. 0 and *v, or
 * "invalid syntax" / "value out of range" (the first met scanning, as Go's ParseUint). */
static const char *go_atoi(const char *s, size_t n, int64_t *v)
{
    size_t i = 0;
    int neg = 0;
    if (n && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n) return "invalid syntax";
    uint64_t u = 0;
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < '0' || c > '9') return "invalid syntax";
        if (u >= UINT64_MAX / 10 + 1) return "value out of range";
        u *= 10;
        uint64_t u1 = u + (uint64_t)(c - '0');
        if (u1 < u) return "value out of range";
        u = u1;
    }
    if (!neg && u >= (uint64_t)1 << 63) return "value out of range";
    if (neg && u > (uint64_t)1 << 63) return "value out of range";
    *v = neg ? (int64_t)(0 - u) : (int64_t)u;
    return NULL;
}

static int check_sample_freq(const char *f, jr__cerr *err)
{
    size_t n = strlen(f);
    if (n && f[n - 1] == '%') n--; /* strings.TrimSuffix(f, "%") */
    int64_t v = 0;
    const char *why = go_atoi(f, n, &v);
    if (why) {
        char q[160];
        go_quote(q, sizeof q, f, n);
        return FAIL(400, 10095,
                    "failed to parse consumer sampling configuration: strconv.Atoi: parsing %s: %s",
                    q, why);
    }
    if (v < 0) /* Atoi succeeded: JetStream formats the nil error */
        return FAIL(400, 10095, "failed to parse consumer sampling configuration: <nil>");
    return 0;
}

static int check_filters(const jr_consumer_config *c, jr__cerr *err)
{
    if (c->nfilter_subjects && !c->filter_subjects)
        return FAIL(500, 10052, "filter_subjects: NULL with nfilter_subjects %zu",
                    c->nfilter_subjects);
    if (set(c->filter_subject) && c->nfilter_subjects > 0)
        return FAIL(400, 10136,
                    "consumer cannot have both FilterSubject and FilterSubjects specified");
    if (set(c->filter_subject) && !jr__subject_valid_pattern(c->filter_subject))
        return FAIL(500, 10052, "invalid subject");
    for (size_t i = 0; i < c->nfilter_subjects; i++)
        if (!set(c->filter_subjects[i]))
            return FAIL(400, 10139, "consumer filter in FilterSubjects cannot be empty");
    const char *one;
    size_t n;
    const char *const *f = jr__consumer_filters(c, &one, &n);
    for (size_t i = 0; i < n; i++)
        if (!jr__subject_valid_pattern(f[i])) return FAIL(500, 10052, "invalid subject");
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (i != j && jr__subject_subset(f[i], f[j]))
                return FAIL(400, 10138, "consumer subject filters cannot overlap");
    return 0;
}

/* The start position (consumer.go "Check on start position conflicts"), all 400/10094. */
static int check_start(const jr_consumer_config *c, jr__cerr *err)
{
#define BAD_START(dp, start)                                                                       \
    FAIL(400, 10094, "consumer delivery policy is deliver %s, but optional start %s is also set",  \
         dp, start)
#define NOT_SET(dp, what)                                                                          \
    FAIL(400, 10094, "consumer delivery policy is deliver %s, but optional %s is not set", dp, what)
    int seq = c->opt_start_seq > 0, tm = c->opt_start_time_ns != 0;
    switch (c->deliver_policy) {
    case JR_DELIVER_ALL:
        if (seq) return BAD_START("all", "sequence");
        if (tm) return BAD_START("all", "time");
        return 0;
    case JR_DELIVER_LAST:
        if (seq) return BAD_START("last", "sequence");
        if (tm) return BAD_START("last", "time");
        return 0;
    case JR_DELIVER_LAST_PER_SUBJECT:
        if (seq) return BAD_START("last per subject", "sequence");
        if (tm) return BAD_START("last per subject", "time");
        if (!set(c->filter_subject) && c->nfilter_subjects == 0)
            return NOT_SET("last per subject", "filter subject");
        return 0;
    case JR_DELIVER_NEW:
        if (seq) return BAD_START("new", "sequence");
        if (tm) return BAD_START("new", "time");
        return 0;
    case JR_DELIVER_BY_START_SEQ:
        if (!seq) return NOT_SET("by start sequence", "start sequence");
        if (tm) return BAD_START("by start sequence", "time");
        return 0;
    case JR_DELIVER_BY_START_TIME:
        if (!tm) return NOT_SET("by start time", "start time");
        if (seq) return BAD_START("by start time", "start sequence"); /* sic */
        return 0;
    default:
        return FAIL(400, 10094, "consumer delivery policy invalid");
    }
#undef BAD_START
#undef NOT_SET
}

/* validGroupName: ^[a-zA-Z0-9/_=-]{1,16}$ */
static int group_name_ok(const char *g)
{
    size_t n = strlen(g);
    if (n < 1 || n > JR__CONSUMER_GROUP_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)g[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '/' || c == '_' || c == '=' || c == '-'))
            return 0;
    }
    return 1;
}

static int check_priority(const jr_consumer_config *c, jr__cerr *err)
{
    if (c->npriority_groups && !c->priority_groups)
        return FAIL(500, 10052, "priority_groups: NULL with npriority_groups %zu",
                    c->npriority_groups);
    if (c->priority_policy < JR_PRIORITY_NONE || c->priority_policy > JR_PRIORITY_PRIORITIZED)
        return FAIL(500, 10052, "unknown priority policy: %d", c->priority_policy);
    if (c->priority_policy != JR_PRIORITY_NONE) {
        if (set(c->deliver_subject))
            return FAIL(400, 10178, "priority groups can not be used with push consumers");
        if (c->npriority_groups == 0)
            return FAIL(400, 10159,
                        "Setting PriorityPolicy requires at least one PriorityGroup to be set");
        for (size_t i = 0; i < c->npriority_groups; i++) {
            if (!set(c->priority_groups[i]))
                return FAIL(400, 10161, "Group name cannot be an empty string");
            if (!group_name_ok(c->priority_groups[i]))
                return FAIL(400, 10162,
                            "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may "
                            "not exceed 16 characters");
        }
    } else {
        if (c->npriority_groups > 0)
            return FAIL(400, 10196, "consumer can not have priority groups when policy is none");
        if (c->priority_timeout_ns > 0)
            return FAIL(400, 10197, "PinnedTTL cannot be set when PriorityPolicy is none");
    }
    return 0;
}

static int check_metadata(const jr_consumer_config *c, jr__cerr *err)
{
    if (c->nmetadata && !c->metadata)
        return FAIL(500, 10052, "metadata: NULL with nmetadata %zu", c->nmetadata);
    size_t total = 0;
    for (size_t i = 0; i < c->nmetadata; i++) {
        const jr_kv *kv = &c->metadata[i];
        if (!kv->key) return FAIL(500, 10052, "metadata[%zu]: NULL key", i);
        if (!kv->value) return FAIL(500, 10052, "metadata[%zu]: NULL value", i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->metadata[j].key, kv->key) == 0)
                return FAIL(500, 10052, "metadata[%zu]: duplicate key \"%.64s\"", i, kv->key);
        total += strlen(kv->key) + strlen(kv->value);
    }
    if (total > JR__CONSUMER_METADATA_MAX)
        return FAIL(400, 10135, "consumer metadata exceeds maximum size of %dKB",
                    JR__CONSUMER_METADATA_MAX / 1024);
    return 0;
}

int jr__consumer_config_validate(const jr_consumer_config *c, const jr__cstream_facts *stream,
                                 jr__cerr *err)
{
    int rc;
    if (err) memset(err, 0, sizeof *err);
    if (!c) return FAIL(500, 10052, "config: NULL");
    if (c->size < sizeof *c)
        return FAIL(500, 10052, "size: %zu, expected %zu (use jr_consumer_config_init())", c->size,
                    sizeof *c);
    if (set(c->name) && !asset_name_ok(c->name))
        return FAIL(500, 10052, "consumer name can not contain '.', '*', '>', '\\', '/'");
    if (set(c->durable_name) && !asset_name_ok(c->durable_name))
        return FAIL(500, 10052, "consumer durable name can not contain '.', '*', '>', '\\', '/'");

    /* replicas */
    if (c->num_replicas > 0 &&
        (c->num_replicas > JR_MAX_REPLICAS || (stream && c->num_replicas > stream->replicas)))
        return FAIL(400, 10126, "consumer config replica count exceeds parent stream");
    if (c->num_replicas < 0) return FAIL(400, 10133, "replicas count cannot be negative");
    if (stream &&
        (stream->retention == JR_RETAIN_INTEREST || stream->retention == JR_RETAIN_WORKQUEUE) &&
        c->num_replicas != 0 && c->num_replicas != stream->replicas)
        return FAIL(400, 10134,
                    "consumer config replicas must match interest retention stream's "
                    "replicas");

    if (c->ack_policy < JR_ACK_NONE || c->ack_policy > JR_ACK_EXPLICIT)
        return FAIL(400, 10181, "consumer ack policy invalid");
    if (c->replay_policy != JR_REPLAY_INSTANT && c->replay_policy != JR_REPLAY_ORIGINAL)
        return FAIL(400, 10182, "consumer replay policy invalid");

    /* ack wait, backoff, max deliver */
    if (c->nbackoff && !c->backoff_ns)
        return FAIL(500, 10052, "backoff: NULL with nbackoff %zu", c->nbackoff);
    for (size_t i = 0; i < c->nbackoff; i++)
        if (c->backoff_ns[i] < 0) return FAIL(400, 10184, "consumer backoff needs to be positive");
    if (c->ack_wait_ns < 0) return FAIL(400, 10183, "consumer ack wait needs to be positive");
    int64_t md = eff_max_deliver(c->max_deliver);
    if (c->nbackoff > 0 && md != -1 && c->nbackoff > (uint64_t)md)
        return FAIL(400, 10116, "max deliver is required to be > length of backoff values");

    if (c->description && strlen(c->description) > JR__CONSUMER_DESCRIPTION_MAX)
        return FAIL(400, 10107, "consumer description is too long, maximum allowed is %d",
                    JR__CONSUMER_DESCRIPTION_MAX);

    /* push or pull */
    int64_t hb = nonneg(c->idle_heartbeat_ns);
    if (set(c->deliver_subject)) {
        const char *why;
        int kind = jr__subject_classify(c->deliver_subject, &why);
        if (kind == JR__SUBJECT_PATTERN)
            return FAIL(400, 10079, "consumer deliver subject has wildcards");
        if (kind != JR__SUBJECT_LITERAL)
            return FAIL(400, 10112, "invalid push consumer deliver subject");
        if (c->max_waiting != 0)
            return FAIL(400, 10080, "consumer in push mode can not set max waiting");
        if (c->max_ack_pending > 0 && c->ack_policy == JR_ACK_NONE)
            return FAIL(400, 10082, "consumer requires ack policy for max ack pending");
        if (hb > 0 && hb < JR__CONSUMER_MIN_HEARTBEAT_NS)
            return FAIL(400, 10083, "consumer idle heartbeat needs to be >= 100ms");
    } else {
        if (stream && c->ack_policy == JR_ACK_NONE && stream->retention == JR_RETAIN_WORKQUEUE)
            return FAIL(400, 10084,
                        "consumer in pull mode requires explicit ack policy on workqueue stream");
        if (c->rate_limit_bps > 0)
            return FAIL(400, 10086, "consumer in pull mode can not have rate limit set");
        if (c->max_waiting < 0)
            return FAIL(400, 10087, "consumer max waiting needs to be positive");
        if (hb > 0)
            return FAIL(400, 10088, "consumer idle heartbeat requires a push based consumer");
        if (c->flow_control)
            return FAIL(400, 10089, "consumer flow control requires a push based consumer");
        if (c->max_batch < 0) return FAIL(400, 10114, "consumer max request batch needs to be > 0");
        if (c->max_expires_ns != 0 && c->max_expires_ns < JR__CONSUMER_MIN_EXPIRES_NS)
            return FAIL(400, 10115, "consumer max request expires needs to be >= 1ms");
    }

    if ((rc = check_filters(c, err))) return rc;
    if ((rc = check_start(c, err))) return rc;
    if (set(c->sample_freq) && (rc = check_sample_freq(c->sample_freq, err))) return rc;
    if (c->flow_control && hb == 0)
        return FAIL(400, 10108, "consumer with flow control also needs heartbeats");
    if (set(c->durable_name) && set(c->name) && strcmp(c->name, c->durable_name) != 0)
        return FAIL(400, 10132, "Consumer Durable and Name have to be equal if both are provided");
    if ((rc = check_metadata(c, err))) return rc;
    if ((rc = check_priority(c, err))) return rc;

    /* work-queue streams (addConsumerWithAssignment) */
    if (stream && stream->retention == JR_RETAIN_WORKQUEUE) {
        if (c->ack_policy != JR_ACK_EXPLICIT)
            return FAIL(400, 10098, "workqueue stream requires explicit ack");
        if (c->deliver_policy != JR_DELIVER_ALL)
            return FAIL(400, 10101, "consumer must be deliver all on workqueue stream");
    }
    if ((c->name && strlen(c->name) > JR_CONSUMER_NAME_MAX) ||
        (c->durable_name && strlen(c->durable_name) > JR_CONSUMER_NAME_MAX))
        return FAIL(400, 10102, "consumer name is too long, maximum allowed is %d",
                    JR_CONSUMER_NAME_MAX);
    return 0;
}

static const char *nonempty(const char *s)
{
    return set(s) ? s : NULL;
}

void jr__consumer_config_normalize(const jr_consumer_config *in, jr__consumer_norm *out)
{
    jr_consumer_config *c = &out->c;
    *c = *in;
    c->size = sizeof *c;
    c->name = nonempty(c->name);
    c->durable_name = nonempty(c->durable_name);
    if (!c->name) c->name = c->durable_name;
    c->description = nonempty(c->description);
    if (c->nmetadata == 0) c->metadata = NULL;
    if (c->nbackoff == 0) c->backoff_ns = NULL;
    if (c->npriority_groups == 0) c->priority_groups = NULL;
    c->filter_subject = nonempty(c->filter_subject);
    if (c->nfilter_subjects == 1) {
        c->filter_subject = c->filter_subjects[0];
        c->nfilter_subjects = 0;
    }
    if (c->nfilter_subjects == 0) c->filter_subjects = NULL;
    c->sample_freq = nonempty(c->sample_freq);
    c->deliver_subject = nonempty(c->deliver_subject);
    c->deliver_group = nonempty(c->deliver_group);

    /* setConsumerConfigDefaults, in its order */
    c->max_deliver = eff_max_deliver(c->max_deliver);
    if (c->max_ack_pending < -1) c->max_ack_pending = -1;
    c->max_batch = nonneg(c->max_batch);
    c->max_expires_ns = nonneg(c->max_expires_ns);
    c->max_bytes = nonneg(c->max_bytes);
    c->idle_heartbeat_ns = nonneg(c->idle_heartbeat_ns);
    c->inactive_threshold_ns = nonneg(c->inactive_threshold_ns);
    c->priority_timeout_ns = nonneg(c->priority_timeout_ns);
    if (!c->deliver_subject && c->max_waiting == 0) c->max_waiting = JR__CONSUMER_MAX_WAITING;
    if (c->ack_wait_ns == 0 && c->ack_policy != JR_ACK_NONE)
        c->ack_wait_ns = JR__CONSUMER_ACK_WAIT_NS;
    if (c->nbackoff > 0) c->ack_wait_ns = c->backoff_ns[0];
    if (c->max_ack_pending == 0 && c->ack_policy != JR_ACK_NONE)
        c->max_ack_pending = JR__CONSUMER_MAX_ACK_PENDING;
    if (c->priority_policy == JR_PRIORITY_PINNED_CLIENT && c->priority_timeout_ns == 0)
        c->priority_timeout_ns = JR__CONSUMER_PINNED_TTL_NS;
    /* updateInactiveThreshold: ephemerals always have one */
    if (!c->durable_name && c->inactive_threshold_ns == 0)
        c->inactive_threshold_ns = JR__CONSUMER_INACTIVE_NS;

    c->headers_only = !!c->headers_only;
    c->flow_control = !!c->flow_control;
    c->mem_storage = !!c->mem_storage;
}
