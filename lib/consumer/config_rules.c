/* config_rules — equality of consumer configurations, JetStream's update rules and filter
 * matching (config.h).
 *
 * The update rules follow nats-server's checkNewConsumerConfig (consumer.go), in its order:
 * deliver policy, storage, start sequence, start time, ack policy, replay policy, heartbeat, flow
 * control, pull/push, max waiting, then backoff against max_deliver. A refused change is
 * 500/10012 with the text JetStream puts in the error ("{err}"), except 10116, which JetStream
 * passes through as its own error.
 */
#include <string.h>

#include "consumer/config.h"
#include "util/strblock.h"
#include "util/subject.h"

static int backoff_eq(const jr_consumer_config *a, const jr_consumer_config *b)
{
    if (a->nbackoff != b->nbackoff) return 0;
    for (size_t i = 0; i < a->nbackoff; i++)
        if (a->backoff_ns[i] != b->backoff_ns[i]) return 0;
    return 1;
}

int jr__consumer_config_equal(const jr_consumer_config *x, const jr_consumer_config *y)
{
    jr__consumer_norm nx, ny;
    jr__consumer_config_normalize(x, &nx);
    jr__consumer_config_normalize(y, &ny);
    const jr_consumer_config *a = &nx.c, *b = &ny.c;
    return jr__str_eq(a->name, b->name) && jr__str_eq(a->durable_name, b->durable_name) &&
           jr__str_eq(a->description, b->description) &&
           jr__kvs_eq(a->metadata, a->nmetadata, b->metadata, b->nmetadata) &&
           a->deliver_policy == b->deliver_policy && a->opt_start_seq == b->opt_start_seq &&
           a->opt_start_time_ns == b->opt_start_time_ns && a->ack_policy == b->ack_policy &&
           a->ack_wait_ns == b->ack_wait_ns && a->max_deliver == b->max_deliver &&
           backoff_eq(a, b) && jr__str_eq(a->filter_subject, b->filter_subject) &&
           jr__strv_eq(a->filter_subjects, a->nfilter_subjects, b->filter_subjects,
                       b->nfilter_subjects) &&
           a->replay_policy == b->replay_policy && a->rate_limit_bps == b->rate_limit_bps &&
           jr__str_eq(a->sample_freq, b->sample_freq) && a->max_waiting == b->max_waiting &&
           a->max_ack_pending == b->max_ack_pending && a->headers_only == b->headers_only &&
           a->max_batch == b->max_batch && a->max_expires_ns == b->max_expires_ns &&
           a->max_bytes == b->max_bytes && jr__str_eq(a->deliver_subject, b->deliver_subject) &&
           jr__str_eq(a->deliver_group, b->deliver_group) &&
           a->idle_heartbeat_ns == b->idle_heartbeat_ns && a->flow_control == b->flow_control &&
           a->inactive_threshold_ns == b->inactive_threshold_ns &&
           a->num_replicas == b->num_replicas && a->mem_storage == b->mem_storage &&
           a->pause_until_ns == b->pause_until_ns &&
           jr__strv_eq(a->priority_groups, a->npriority_groups, b->priority_groups,
                       b->npriority_groups) &&
           a->priority_policy == b->priority_policy &&
           a->priority_timeout_ns == b->priority_timeout_ns;
}

#define FAIL(http, code, ...) jr__consumer_config_fail(err, http, code, __VA_ARGS__)

int jr__consumer_config_check_update(const jr_consumer_config *old, const jr_consumer_config *upd,
                                     jr__cerr *err)
{
    int rc = jr__consumer_config_validate(upd, NULL, err);
    if (rc) return rc;
    jr__consumer_norm no, nu;
    jr__consumer_config_normalize(old, &no);
    jr__consumer_config_normalize(upd, &nu);
    const jr_consumer_config *o = &no.c, *u = &nu.c;
    if (!jr__str_eq(o->name, u->name) || !jr__str_eq(o->durable_name, u->durable_name))
        return FAIL(500, 10012, "consumer name can not be updated");
    if (o->deliver_policy != u->deliver_policy)
        return FAIL(500, 10012, "deliver policy can not be updated");
    if (o->mem_storage != u->mem_storage)
        return FAIL(500, 10012, "storage type can not be updated");
    if (o->opt_start_seq != u->opt_start_seq)
        return FAIL(500, 10012, "start sequence can not be updated");
    if (o->opt_start_time_ns != u->opt_start_time_ns)
        return FAIL(500, 10012, "start time can not be updated");
    if (o->ack_policy != u->ack_policy) return FAIL(500, 10012, "ack policy can not be updated");
    if (o->replay_policy != u->replay_policy)
        return FAIL(500, 10012, "replay policy can not be updated");
    if (o->idle_heartbeat_ns != u->idle_heartbeat_ns)
        return FAIL(500, 10012, "heart beats can not be updated");
    if (o->flow_control != u->flow_control)
        return FAIL(500, 10012, "flow control can not be updated");
    if (!o->deliver_subject && u->deliver_subject)
        return FAIL(500, 10012, "can not update pull consumer to push based");
    if (o->deliver_subject && !u->deliver_subject)
        return FAIL(500, 10012, "can not update push consumer to pull based");
    if (o->max_waiting != u->max_waiting) return FAIL(500, 10012, "max waiting can not be updated");
    /* validate already held upd to 10116; JetStream repeats the check here */
    return 0;
}

int jr__consumer_filters_overlap(const jr_consumer_config *a, const jr_consumer_config *b)
{
    const char *oa, *ob;
    size_t na, nb;
    const char *const *fa = jr__consumer_filters(a, &oa, &na);
    const char *const *fb = jr__consumer_filters(b, &ob, &nb);
    if (na == 0 || nb == 0) return 1;
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            if (jr__subject_overlap(fa[i], fb[j])) return 1;
    return 0;
}

int jr__consumer_filter_matches(const jr_consumer_config *cfg, const char *subject)
{
    if (!subject || !jr__subject_valid_literal(subject)) return 0;
    const char *one;
    size_t n;
    const char *const *f = jr__consumer_filters(cfg, &one, &n);
    if (n == 0) return 1;
    for (size_t i = 0; i < n; i++)
        if (jr__subject_matches(f[i], subject)) return 1;
    return 0;
}

int jr__consumer_replicas(const jr_consumer_config *cfg, const jr__cstream_facts *stream)
{
    if (cfg->num_replicas == 0 || cfg->num_replicas > stream->replicas) {
        int durable = cfg->durable_name && *cfg->durable_name;
        if (!durable && stream->retention == JR_RETAIN_LIMITS && cfg->num_replicas == 0) return 1;
        return stream->replicas;
    }
    return cfg->num_replicas;
}
