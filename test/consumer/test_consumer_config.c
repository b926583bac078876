/* Consumer configuration: JetStream's defaults, every refusal with its code and text, the normal
 * form and equality, the update rules, owned copies, the strict encoding, filter matching. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer/config.h"
#include "util/checksum.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MS 1000000LL
#define SEC 1000000000LL

static jr_consumer_config base(void)
{
    jr_consumer_config c;
    jr_consumer_config_init(&c);
    c.durable_name = "dur";
    return c;
}

static const jr_kv full_meta[] = {{"owner", "team-a"}, {"tier", ""}, {"", "empty key"}};
static const int64_t full_backoff[] = {1 * SEC, 5 * SEC, 30 * SEC};
static const char *full_filters[] = {"orders.*.eu", "refunds.>", "audit"};

/* A push consumer with every field away from its default. */
static jr_consumer_config full(void)
{
    jr_consumer_config c = base();
    c.name = "dur";
    c.description = "orders of every region";
    c.metadata = full_meta;
    c.nmetadata = N(full_meta);
    c.deliver_policy = JR_DELIVER_BY_START_SEQ;
    c.opt_start_seq = 42;
    c.ack_policy = JR_ACK_ALL;
    c.max_deliver = 5;
    c.backoff_ns = full_backoff;
    c.nbackoff = N(full_backoff);
    c.filter_subjects = full_filters;
    c.nfilter_subjects = N(full_filters);
    c.replay_policy = JR_REPLAY_ORIGINAL;
    c.rate_limit_bps = 1000000;
    c.sample_freq = "50%";
    c.max_ack_pending = 20;
    c.headers_only = 1;
    c.max_batch = 10;
    c.max_expires_ns = 2 * SEC;
    c.max_bytes = 1 << 20;
    c.deliver_subject = "deliver.orders";
    c.deliver_group = "workers";
    c.idle_heartbeat_ns = 5 * SEC;
    c.flow_control = 1;
    c.inactive_threshold_ns = 3600 * SEC;
    c.num_replicas = 3;
    c.mem_storage = 1;
    c.pause_until_ns = 1700000000 * SEC;
    return c;
}

static const char *full_groups[] = {"jobs", "A-z_0/9=", "0123456789abcdef"};

/* A pull consumer with every pull field set. */
static jr_consumer_config full_pull(void)
{
    jr_consumer_config c = base();
    c.description = "pull";
    c.deliver_policy = JR_DELIVER_BY_START_TIME;
    c.opt_start_time_ns = 1600000000 * SEC;
    c.ack_wait_ns = 7 * SEC;
    c.max_deliver = 3;
    c.filter_subject = "orders.>";
    c.max_waiting = 64;
    c.max_ack_pending = -1;
    c.max_batch = 100;
    c.max_expires_ns = 30 * SEC;
    c.max_bytes = 4096;
    c.priority_groups = full_groups;
    c.npriority_groups = N(full_groups);
    c.priority_policy = JR_PRIORITY_PINNED_CLIENT;
    c.priority_timeout_ns = 90 * SEC;
    return c;
}

/* A push consumer without heartbeats or flow control. */
static jr_consumer_config plain_push(void)
{
    jr_consumer_config c = base();
    c.deliver_subject = "deliver.plain";
    c.deliver_group = "g";
    c.rate_limit_bps = 8000;
    return c;
}

START_TEST(init_gives_jetstream_defaults)
{
    jr_consumer_config c;
    memset(&c, 0xab, sizeof c);
    jr_consumer_config_init(&c);
    ck_assert_uint_eq(c.size, sizeof c);
    ck_assert_ptr_null(c.name);
    ck_assert_ptr_null(c.durable_name);
    ck_assert_ptr_null(c.description);
    ck_assert_ptr_null(c.metadata);
    ck_assert_int_eq(c.deliver_policy, JR_DELIVER_ALL);
    ck_assert_int_eq(c.ack_policy, JR_ACK_EXPLICIT);
    ck_assert_int_eq(c.replay_policy, JR_REPLAY_INSTANT);
    ck_assert_int_eq(c.ack_wait_ns, 0);
    ck_assert_int_eq(c.max_deliver, 0);
    ck_assert_int_eq(c.max_waiting, 0);
    ck_assert_int_eq(c.max_ack_pending, 0);
    ck_assert_ptr_null(c.filter_subject);
    ck_assert_ptr_null(c.deliver_subject);
    ck_assert_int_eq(c.num_replicas, 0);
    ck_assert_uint_eq(c.pause_until_ns, 0);
    jr_consumer_config_init_size(NULL, sizeof(jr_consumer_config)); /* harmless */

    /* an older caller's smaller struct: only its bytes are written */
    unsigned char raw[sizeof(jr_consumer_config) + 8];
    memset(raw, 0xcd, sizeof raw);
    size_t small = offsetof(jr_consumer_config, ack_policy) + sizeof(int);
    jr_consumer_config_init_size((jr_consumer_config *)(void *)raw, small);
    jr_consumer_config got;
    memcpy(&got, raw, sizeof got);
    ck_assert_uint_eq(got.size, small);
    ck_assert_int_eq(got.ack_policy, JR_ACK_EXPLICIT);
    ck_assert_uint_eq(raw[small], 0xcd);

    /* the defaults are valid: an ephemeral pull consumer */
    jr__cerr err;
    memset(&err, 0x5a, sizeof err);
    ck_assert_int_eq(jr__consumer_config_validate(&c, NULL, &err), 0);
    ck_assert_int_eq(err.code, 0);
    ck_assert_str_eq(err.msg, "");
    jr__consumer_norm n;
    jr__consumer_config_normalize(&c, &n);
    ck_assert_int_eq(n.c.ack_wait_ns, 30 * SEC);
    ck_assert_int_eq(n.c.max_deliver, -1);
    ck_assert_int_eq(n.c.max_waiting, 512);
    ck_assert_int_eq(n.c.max_ack_pending, 1000);
    ck_assert_int_eq(n.c.inactive_threshold_ns, 5 * SEC);
    jr_consumer_config f = full(), p = full_pull();
    ck_assert_int_eq(jr__consumer_config_validate(&f, NULL, &err), 0);
    ck_assert_int_eq(jr__consumer_config_validate(&p, NULL, &err), 0);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Refusals: each case changes a valid config and expects JetStream's code and text.
 */
static const jr__cstream_facts limits3 = {JR_RETAIN_LIMITS, 3, JR_STORAGE_FILE};
static const jr__cstream_facts interest3 = {JR_RETAIN_INTEREST, 3, JR_STORAGE_FILE};
static const jr__cstream_facts wq3 = {JR_RETAIN_WORKQUEUE, 3, JR_STORAGE_FILE};
static const jr__cstream_facts wq1 = {JR_RETAIN_WORKQUEUE, 1, JR_STORAGE_MEMORY};

static char long_name[300];
static char long_desc[JR__CONSUMER_DESCRIPTION_MAX + 2];
static char big_value[JR__CONSUMER_METADATA_MAX];
static const char *empty_filter[] = {"a", ""};
static const char *null_filter[] = {"a", NULL};
static const char *bad_filters[] = {"a", "b..c"};
static const char *subset_filters[] = {"orders.eu", "orders.*"};
static const char *dup_filters[] = {"x.y", "x.y"};
static const int64_t neg_backoff[] = {SEC, -1};
static const int64_t two_backoff[] = {SEC, 2 * SEC};
static const jr_kv dup_meta[] = {{"k", "1"}, {"k", "2"}};
static const jr_kv null_meta[] = {{"k", NULL}};
static jr_kv big_meta[] = {{"k", big_value}};

#define MUT(fn, body)                                                                              \
    static void fn(jr_consumer_config *c)                                                          \
    {                                                                                              \
        body;                                                                                      \
    }
MUT(m_small_size, c->size = sizeof *c - 1)
MUT(m_name_dot, c->name = "a.b"; c->durable_name = NULL)
MUT(m_name_star, c->name = "a*"; c->durable_name = NULL)
MUT(m_name_gt, c->name = ">")
MUT(m_name_bslash, c->name = "a\\b")
MUT(m_name_slash, c->name = "a/b")
MUT(m_name_space, c->name = "a b")
MUT(m_name_tab, c->name = "a\tb")
MUT(m_durable_dot, c->durable_name = "d.x")
MUT(m_durable_nl, c->durable_name = "d\n")
MUT(m_name_long, c->durable_name = NULL; c->name = long_name)
MUT(m_durable_long, c->durable_name = long_name)
MUT(m_name_mismatch, c->name = "other")
MUT(m_desc_long, c->description = long_desc)
MUT(m_meta_big, c->metadata = big_meta; c->nmetadata = 1)
MUT(m_meta_null, c->metadata = NULL; c->nmetadata = 1)
MUT(m_meta_nullval, c->metadata = null_meta; c->nmetadata = 1)
MUT(m_meta_dup, c->metadata = dup_meta; c->nmetadata = 2)
MUT(m_all_seq, c->opt_start_seq = 1)
MUT(m_all_time, c->opt_start_time_ns = 1)
MUT(m_last_seq, c->deliver_policy = JR_DELIVER_LAST; c->opt_start_seq = 1)
MUT(m_last_time, c->deliver_policy = JR_DELIVER_LAST; c->opt_start_time_ns = 1)
MUT(m_new_seq, c->deliver_policy = JR_DELIVER_NEW; c->opt_start_seq = 1)
MUT(m_new_time, c->deliver_policy = JR_DELIVER_NEW; c->opt_start_time_ns = 1)
MUT(m_lps_seq, c->deliver_policy = JR_DELIVER_LAST_PER_SUBJECT; c->filter_subject = "a";
    c->opt_start_seq = 1)
MUT(m_lps_time, c->deliver_policy = JR_DELIVER_LAST_PER_SUBJECT; c->filter_subject = "a";
    c->opt_start_time_ns = 1)
MUT(m_lps_nofilter, c->deliver_policy = JR_DELIVER_LAST_PER_SUBJECT)
MUT(m_lps_emptyfilter, c->deliver_policy = JR_DELIVER_LAST_PER_SUBJECT; c->filter_subject = "")
MUT(m_seq_unset, c->deliver_policy = JR_DELIVER_BY_START_SEQ)
MUT(m_seq_time, c->deliver_policy = JR_DELIVER_BY_START_SEQ; c->opt_start_seq = 5;
    c->opt_start_time_ns = 1)
MUT(m_time_unset, c->deliver_policy = JR_DELIVER_BY_START_TIME)
MUT(m_time_seq, c->deliver_policy = JR_DELIVER_BY_START_TIME; c->opt_start_time_ns = 1;
    c->opt_start_seq = 5)
MUT(m_deliver_unknown, c->deliver_policy = 6)
MUT(m_ack_unknown, c->ack_policy = 3)
MUT(m_ack_negative, c->ack_policy = -1)
MUT(m_replay_unknown, c->replay_policy = 2)
MUT(m_ack_wait_neg, c->ack_wait_ns = -1)
MUT(m_backoff_neg, c->backoff_ns = neg_backoff; c->nbackoff = 2)
MUT(m_backoff_null, c->backoff_ns = NULL; c->nbackoff = 2)
MUT(m_backoff_md, c->backoff_ns = two_backoff; c->nbackoff = 2; c->max_deliver = 1)
MUT(m_filter_both, c->filter_subject = "a"; c->filter_subjects = subset_filters + 1;
    c->nfilter_subjects = 1)
MUT(m_filter_empty, c->filter_subjects = empty_filter; c->nfilter_subjects = 2)
MUT(m_filter_nullentry, c->filter_subjects = null_filter; c->nfilter_subjects = 2)
MUT(m_filter_nulllist, c->filter_subjects = NULL; c->nfilter_subjects = 2)
MUT(m_filter_invalid, c->filter_subject = "a..b")
MUT(m_filter_invalid_gt, c->filter_subject = "a.>.b")
MUT(m_filters_invalid, c->filter_subjects = bad_filters; c->nfilter_subjects = 2)
MUT(m_filters_subset, c->filter_subjects = subset_filters; c->nfilter_subjects = 2)
MUT(m_filters_dup, c->filter_subjects = dup_filters; c->nfilter_subjects = 2)
MUT(m_push_wildcard, c->deliver_subject = "d.*")
MUT(m_push_wildcard_gt, c->deliver_subject = "d.>")
MUT(m_push_invalid, c->deliver_subject = "d..x")
MUT(m_push_space, c->deliver_subject = "d x")
MUT(m_push_max_waiting, c->deliver_subject = "d"; c->max_waiting = 1)
MUT(m_push_max_waiting_neg, c->deliver_subject = "d"; c->max_waiting = -1)
MUT(m_push_map_acknone, c->deliver_subject = "d"; c->ack_policy = JR_ACK_NONE;
    c->max_ack_pending = 1)
MUT(m_push_hb_small, c->deliver_subject = "d"; c->idle_heartbeat_ns = 99 * MS)
MUT(m_pull_rate, c->rate_limit_bps = 1)
MUT(m_pull_max_waiting_neg, c->max_waiting = -1)
MUT(m_pull_hb, c->idle_heartbeat_ns = 1)
MUT(m_pull_fc, c->flow_control = 1)
MUT(m_pull_batch_neg, c->max_batch = -1)
MUT(m_pull_expires_small, c->max_expires_ns = MS - 1)
MUT(m_pull_expires_neg, c->max_expires_ns = -1)
MUT(m_fc_no_hb, c->deliver_subject = "d"; c->flow_control = 1)
MUT(m_fc_neg_hb, c->deliver_subject = "d"; c->flow_control = 1; c->idle_heartbeat_ns = -5)
MUT(m_sample_word, c->sample_freq = "abc")
MUT(m_sample_pct_only, c->sample_freq = "%")
MUT(m_sample_double_pct, c->sample_freq = "5%%")
MUT(m_sample_space, c->sample_freq = " 5")
MUT(m_sample_quote, c->sample_freq = "a\"b\\c\n")
MUT(m_sample_range, c->sample_freq = "9223372036854775808")
MUT(m_sample_range_x, c->sample_freq = "99999999999999999999x")
MUT(m_sample_neg, c->sample_freq = "-1%")
MUT(m_sample_sign, c->sample_freq = "-")
MUT(m_replicas_neg, c->num_replicas = -1)
MUT(m_replicas_6, c->num_replicas = 6)
MUT(m_replicas_4, c->num_replicas = 4)
MUT(m_replicas_2, c->num_replicas = 2)
MUT(m_wq_ack_all, c->ack_policy = JR_ACK_ALL)
MUT(m_wq_push_ack_none, c->ack_policy = JR_ACK_NONE; c->deliver_subject = "d")
MUT(m_wq_pull_ack_none, c->ack_policy = JR_ACK_NONE)
MUT(m_wq_deliver_new, c->deliver_policy = JR_DELIVER_NEW)
static const char *one_group[] = {"g"};
static const char *empty_group[] = {"g", ""};
static const char *null_group[] = {NULL};
static const char *long_group[] = {"0123456789abcdefg"};
static const char *dot_group[] = {"a.b"};
static const char *paren_group[] = {"a)"};
MUT(m_prio_push, c->deliver_subject = "d"; c->priority_policy = JR_PRIORITY_OVERFLOW;
    c->priority_groups = one_group; c->npriority_groups = 1)
MUT(m_prio_nogroups, c->priority_policy = JR_PRIORITY_PRIORITIZED)
MUT(m_prio_nulllist, c->priority_policy = JR_PRIORITY_OVERFLOW; c->npriority_groups = 1)
MUT(m_prio_empty, c->priority_policy = JR_PRIORITY_OVERFLOW; c->priority_groups = empty_group;
    c->npriority_groups = 2)
MUT(m_prio_nullentry, c->priority_policy = JR_PRIORITY_PINNED_CLIENT;
    c->priority_groups = null_group; c->npriority_groups = 1)
MUT(m_prio_long, c->priority_policy = JR_PRIORITY_OVERFLOW; c->priority_groups = long_group;
    c->npriority_groups = 1)
MUT(m_prio_dot, c->priority_policy = JR_PRIORITY_OVERFLOW; c->priority_groups = dot_group;
    c->npriority_groups = 1)
MUT(m_prio_paren, c->priority_policy = JR_PRIORITY_OVERFLOW; c->priority_groups = paren_group;
    c->npriority_groups = 1)
MUT(m_prio_none_groups, c->priority_groups = one_group; c->npriority_groups = 1)
MUT(m_prio_none_timeout, c->priority_timeout_ns = 1)
MUT(m_prio_unknown, c->priority_policy = 4; c->priority_groups = one_group; c->npriority_groups = 1)

static const struct bad {
    const char *what;
    void (*mut)(jr_consumer_config *);
    const jr__cstream_facts *stream;
    int http, code;
    const char *msg;
} bad[] = {
    {"size", m_small_size, NULL, 500, 10052, NULL /* "size: <sizeof - 1>, expected ..." */},
    {"name .", m_name_dot, NULL, 500, 10052,
     "consumer name can not contain '.', '*', '>', '\\', '/'"},
    {"name *", m_name_star, NULL, 500, 10052,
     "consumer name can not contain '.', '*', '>', '\\', '/'"},
    {"name >", m_name_gt, NULL, 500, 10052,
     "consumer name can not contain '.', '*', '>', '\\', '/'"},
    {"name \\", m_name_bslash, NULL, 500, 10052,
     "consumer name can not contain '.', '*', '>', '\\', '/'"},
    {"name /", m_name_slash, NULL, 500, 10052,
     "consumer name can not contain '.', '*', '>', '\\', '/'"},
    {"name space", m_name_space, NULL, 500, 10052,
     "consumer name can not contain '.', '*', '>', '\\', '/'"},
    {"name tab", m_name_tab, NULL, 500, 10052,
     "consumer name can not contain '.', '*', '>', '\\', '/'"},
    {"durable .", m_durable_dot, NULL, 500, 10052,
     "consumer durable name can not contain '.', '*', '>', '\\', '/'"},
    {"durable \\n", m_durable_nl, NULL, 500, 10052,
     "consumer durable name can not contain '.', '*', '>', '\\', '/'"},
    {"name long", m_name_long, NULL, 400, 10102,
     "consumer name is too long, maximum allowed is 255"},
    {"durable long", m_durable_long, NULL, 400, 10102,
     "consumer name is too long, maximum allowed is 255"},
    {"name != durable", m_name_mismatch, NULL, 400, 10132,
     "Consumer Durable and Name have to be equal if both are provided"},
    {"description", m_desc_long, NULL, 400, 10107,
     "consumer description is too long, maximum allowed is 4096"},
    {"metadata size", m_meta_big, NULL, 400, 10135,
     "consumer metadata exceeds maximum size of 128KB"},
    {"metadata NULL", m_meta_null, NULL, 500, 10052, "metadata: NULL with nmetadata 1"},
    {"metadata NULL value", m_meta_nullval, NULL, 500, 10052, "metadata[0]: NULL value"},
    {"metadata duplicate", m_meta_dup, NULL, 500, 10052, "metadata[1]: duplicate key \"k\""},
    {"all+seq", m_all_seq, NULL, 400, 10094,
     "consumer delivery policy is deliver all, but optional start sequence is also set"},
    {"all+time", m_all_time, NULL, 400, 10094,
     "consumer delivery policy is deliver all, but optional start time is also set"},
    {"last+seq", m_last_seq, NULL, 400, 10094,
     "consumer delivery policy is deliver last, but optional start sequence is also set"},
    {"last+time", m_last_time, NULL, 400, 10094,
     "consumer delivery policy is deliver last, but optional start time is also set"},
    {"new+seq", m_new_seq, NULL, 400, 10094,
     "consumer delivery policy is deliver new, but optional start sequence is also set"},
    {"new+time", m_new_time, NULL, 400, 10094,
     "consumer delivery policy is deliver new, but optional start time is also set"},
    {"lps+seq", m_lps_seq, NULL, 400, 10094,
     "consumer delivery policy is deliver last per subject, but optional start sequence is also "
     "set"},
    {"lps+time", m_lps_time, NULL, 400, 10094,
     "consumer delivery policy is deliver last per subject, but optional start time is also set"},
    {"lps no filter", m_lps_nofilter, NULL, 400, 10094,
     "consumer delivery policy is deliver last per subject, but optional filter subject is not "
     "set"},
    {"lps empty filter", m_lps_emptyfilter, NULL, 400, 10094,
     "consumer delivery policy is deliver last per subject, but optional filter subject is not "
     "set"},
    {"by seq unset", m_seq_unset, NULL, 400, 10094,
     "consumer delivery policy is deliver by start sequence, but optional start sequence is not "
     "set"},
    {"by seq+time", m_seq_time, NULL, 400, 10094,
     "consumer delivery policy is deliver by start sequence, but optional start time is also "
     "set"},
    {"by time unset", m_time_unset, NULL, 400, 10094,
     "consumer delivery policy is deliver by start time, but optional start time is not set"},
    {"by time+seq", m_time_seq, NULL, 400, 10094,
     "consumer delivery policy is deliver by start time, but optional start start sequence is "
     "also set"},
    {"deliver unknown", m_deliver_unknown, NULL, 400, 10094, "consumer delivery policy invalid"},
    {"ack unknown", m_ack_unknown, NULL, 400, 10181, "consumer ack policy invalid"},
    {"ack negative", m_ack_negative, NULL, 400, 10181, "consumer ack policy invalid"},
    {"replay unknown", m_replay_unknown, NULL, 400, 10182, "consumer replay policy invalid"},
    {"ack_wait < 0", m_ack_wait_neg, NULL, 400, 10183, "consumer ack wait needs to be positive"},
    {"backoff < 0", m_backoff_neg, NULL, 400, 10184, "consumer backoff needs to be positive"},
    {"backoff NULL", m_backoff_null, NULL, 500, 10052, "backoff: NULL with nbackoff 2"},
    {"backoff > max_deliver", m_backoff_md, NULL, 400, 10116,
     "max deliver is required to be > length of backoff values"},
    {"filter both", m_filter_both, NULL, 400, 10136,
     "consumer cannot have both FilterSubject and FilterSubjects specified"},
    {"filter empty", m_filter_empty, NULL, 400, 10139,
     "consumer filter in FilterSubjects cannot be empty"},
    {"filter NULL entry", m_filter_nullentry, NULL, 400, 10139,
     "consumer filter in FilterSubjects cannot be empty"},
    {"filters NULL", m_filter_nulllist, NULL, 500, 10052,
     "filter_subjects: NULL with nfilter_subjects 2"},
    {"filter invalid", m_filter_invalid, NULL, 500, 10052, "invalid subject"},
    {"filter > not last", m_filter_invalid_gt, NULL, 500, 10052, "invalid subject"},
    {"filters invalid", m_filters_invalid, NULL, 500, 10052, "invalid subject"},
    {"filters subset", m_filters_subset, NULL, 400, 10138,
     "consumer subject filters cannot overlap"},
    {"filters duplicate", m_filters_dup, NULL, 400, 10138,
     "consumer subject filters cannot overlap"},
    {"deliver *", m_push_wildcard, NULL, 400, 10079, "consumer deliver subject has wildcards"},
    {"deliver >", m_push_wildcard_gt, NULL, 400, 10079, "consumer deliver subject has wildcards"},
    {"deliver invalid", m_push_invalid, NULL, 400, 10112, "invalid push consumer deliver subject"},
    {"deliver space", m_push_space, NULL, 400, 10112, "invalid push consumer deliver subject"},
    {"push max_waiting", m_push_max_waiting, NULL, 400, 10080,
     "consumer in push mode can not set max waiting"},
    {"push max_waiting < 0", m_push_max_waiting_neg, NULL, 400, 10080,
     "consumer in push mode can not set max waiting"},
    {"push max_ack_pending ack none", m_push_map_acknone, NULL, 400, 10082,
     "consumer requires ack policy for max ack pending"},
    {"push heartbeat 99ms", m_push_hb_small, NULL, 400, 10083,
     "consumer idle heartbeat needs to be >= 100ms"},
    {"pull rate limit", m_pull_rate, NULL, 400, 10086,
     "consumer in pull mode can not have rate limit set"},
    {"pull max_waiting < 0", m_pull_max_waiting_neg, NULL, 400, 10087,
     "consumer max waiting needs to be positive"},
    {"pull heartbeat", m_pull_hb, NULL, 400, 10088,
     "consumer idle heartbeat requires a push based consumer"},
    {"pull flow control", m_pull_fc, NULL, 400, 10089,
     "consumer flow control requires a push based consumer"},
    {"pull max_batch < 0", m_pull_batch_neg, NULL, 400, 10114,
     "consumer max request batch needs to be > 0"},
    {"pull max_expires < 1ms", m_pull_expires_small, NULL, 400, 10115,
     "consumer max request expires needs to be >= 1ms"},
    {"pull max_expires < 0", m_pull_expires_neg, NULL, 400, 10115,
     "consumer max request expires needs to be >= 1ms"},
    {"flow control no heartbeat", m_fc_no_hb, NULL, 400, 10108,
     "consumer with flow control also needs heartbeats"},
    {"flow control negative heartbeat", m_fc_neg_hb, NULL, 400, 10108,
     "consumer with flow control also needs heartbeats"},
    {"sample word", m_sample_word, NULL, 400, 10095,
     "failed to parse consumer sampling configuration: strconv.Atoi: parsing \"abc\": invalid "
     "syntax"},
    {"sample %", m_sample_pct_only, NULL, 400, 10095,
     "failed to parse consumer sampling configuration: strconv.Atoi: parsing \"\": invalid "
     "syntax"},
    {"sample 5%%", m_sample_double_pct, NULL, 400, 10095,
     "failed to parse consumer sampling configuration: strconv.Atoi: parsing \"5%\": invalid "
     "syntax"},
    {"sample space", m_sample_space, NULL, 400, 10095,
     "failed to parse consumer sampling configuration: strconv.Atoi: parsing \" 5\": invalid "
     "syntax"},
    {"sample quoted", m_sample_quote, NULL, 400, 10095,
     "failed to parse consumer sampling configuration: strconv.Atoi: parsing \"a\\\"b\\\\c\\n\": "
     "invalid syntax"},
    {"sample range", m_sample_range, NULL, 400, 10095,
     "failed to parse consumer sampling configuration: strconv.Atoi: parsing "
     "\"9223372036854775808\": value out of range"},
    {"sample range first", m_sample_range_x, NULL, 400, 10095,
     "failed to parse consumer sampling configuration: strconv.Atoi: parsing "
     "\"99999999999999999999x\": value out of range"},
    {"sample negative", m_sample_neg, NULL, 400, 10095,
     "failed to parse consumer sampling configuration: <nil>"},
    {"sample sign only", m_sample_sign, NULL, 400, 10095,
     "failed to parse consumer sampling configuration: strconv.Atoi: parsing \"-\": invalid "
     "syntax"},
    {"replicas < 0", m_replicas_neg, NULL, 400, 10133, "replicas count cannot be negative"},
    {"replicas 6", m_replicas_6, NULL, 400, 10126,
     "consumer config replica count exceeds parent stream"},
    {"replicas above stream", m_replicas_4, &limits3, 400, 10126,
     "consumer config replica count exceeds parent stream"},
    {"replicas interest", m_replicas_2, &interest3, 400, 10134,
     "consumer config replicas must match interest retention stream's replicas"},
    {"replicas workqueue", m_replicas_2, &wq3, 400, 10134,
     "consumer config replicas must match interest retention stream's replicas"},
    {"wq ack all", m_wq_ack_all, &wq3, 400, 10098, "workqueue stream requires explicit ack"},
    {"wq push ack none", m_wq_push_ack_none, &wq1, 400, 10098,
     "workqueue stream requires explicit ack"},
    {"wq pull ack none", m_wq_pull_ack_none, &wq1, 400, 10084,
     "consumer in pull mode requires explicit ack policy on workqueue stream"},
    {"wq deliver new", m_wq_deliver_new, &wq3, 400, 10101,
     "consumer must be deliver all on workqueue stream"},
    {"priority push", m_prio_push, NULL, 400, 10178,
     "priority groups can not be used with push consumers"},
    {"priority no groups", m_prio_nogroups, NULL, 400, 10159,
     "Setting PriorityPolicy requires at least one PriorityGroup to be set"},
    {"priority groups NULL", m_prio_nulllist, NULL, 500, 10052,
     "priority_groups: NULL with npriority_groups 1"},
    {"priority empty group", m_prio_empty, NULL, 400, 10161,
     "Group name cannot be an empty string"},
    {"priority NULL group", m_prio_nullentry, NULL, 400, 10161,
     "Group name cannot be an empty string"},
    {"priority group 17 bytes", m_prio_long, NULL, 400, 10162,
     "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 "
     "characters"},
    {"priority group .", m_prio_dot, NULL, 400, 10162,
     "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 "
     "characters"},
    {"priority group )", m_prio_paren, NULL, 400, 10162,
     "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 "
     "characters"},
    {"priority none with groups", m_prio_none_groups, NULL, 400, 10196,
     "consumer can not have priority groups when policy is none"},
    {"priority none with timeout", m_prio_none_timeout, NULL, 400, 10197,
     "PinnedTTL cannot be set when PriorityPolicy is none"},
    {"priority unknown", m_prio_unknown, NULL, 500, 10052, "unknown priority policy: 4"},
};

static void fill_buffers(void)
{
    memset(long_name, 'n', 256);
    long_name[256] = '\0';
    memset(long_desc, 'd', JR__CONSUMER_DESCRIPTION_MAX + 1);
    long_desc[JR__CONSUMER_DESCRIPTION_MAX + 1] = '\0';
    memset(big_value, 'v', sizeof big_value - 1); /* "k" + 131071 bytes: 128 KiB exactly */
    big_value[sizeof big_value - 1] = '\0';
}

START_TEST(every_refusal_has_jetstreams_code_and_text)
{
    const struct bad *b = &bad[_i];
    fill_buffers();
    big_meta[0].key = "kk"; /* one byte over */
    jr_consumer_config c = base();
    b->mut(&c);
    jr__cerr err;
    ck_assert_msg(jr__consumer_config_validate(&c, b->stream, &err) == JR_EINVAL, "%s accepted",
                  b->what);
    ck_assert_msg(err.http == b->http && err.code == b->code, "%s: %d/%d %s", b->what, err.http,
                  err.code, err.msg);
    char size_msg[128];
    snprintf(size_msg, sizeof size_msg, "size: %zu, expected %zu (use jr_consumer_config_init())",
             sizeof c - 1, sizeof c);
    const char *want = b->msg ? b->msg : size_msg;
    ck_assert_str_eq(err.msg, want);
    /* err may be NULL; the owned copy refuses the same way (stream-independent cases) */
    ck_assert_int_eq(jr__consumer_config_validate(&c, b->stream, NULL), JR_EINVAL);
    if (!b->stream) {
        jr__consumer_cfg *owned = (void *)1;
        jr__cerr e2;
        ck_assert_int_eq(jr__consumer_cfg_new(&c, NULL, &owned, &e2), JR_EINVAL);
        ck_assert_ptr_null(owned);
        ck_assert_str_eq(e2.msg, want);
        jr__buf out;
        jr__buf_init(&out, NULL);
        ck_assert_int_eq(jr__consumer_config_encode(&c, &out), JR_EINVAL);
        ck_assert_uint_eq(out.len, 0);
        jr__buf_free(&out);
    }
}
END_TEST

START_TEST(boundary_values_are_accepted)
{
    fill_buffers();
    big_meta[0].key = "k"; /* 128 KiB exactly */
    jr__cerr err;
    jr_consumer_config c = base();
#define OK(cfg, stream)                                                                            \
    ck_assert_msg(jr__consumer_config_validate(&(cfg), (stream), &err) == 0, "%d %s", __LINE__,    \
                  err.msg)
    long_name[255] = '\0';
    c.durable_name = long_name;
    OK(c, NULL);
    c = base();
    long_desc[JR__CONSUMER_DESCRIPTION_MAX] = '\0';
    c.description = long_desc;
    c.metadata = big_meta;
    c.nmetadata = 1;
    OK(c, NULL);
    c = base();
    c.deliver_subject = "d";
    c.idle_heartbeat_ns = 100 * MS;
    c.flow_control = 7; /* any non-zero is true */
    c.max_ack_pending = -5;
    c.max_batch = -1; /* push: clamped, as JetStream does */
    c.max_expires_ns = -1;
    c.ack_policy = JR_ACK_NONE;
    OK(c, NULL);
    c = base();
    c.max_expires_ns = MS;
    c.max_deliver = -7;
    c.backoff_ns = two_backoff;
    c.nbackoff = 2; /* max_deliver -1: unlimited */
    OK(c, NULL);
    c.max_deliver = 2; /* equal to the length is enough */
    OK(c, NULL);
    c = base();
    const char *sample[] = {"0", "100%", "+5", "-0", "007%", "9223372036854775807"};
    for (size_t i = 0; i < N(sample); i++) {
        c.sample_freq = sample[i];
        OK(c, NULL);
    }
    c = base();
    c.filter_subjects = (const char *[]){"a.*", "*.b"}; /* overlapping, neither a subset */
    c.nfilter_subjects = 2;
    OK(c, NULL);
    c = base();
    c.name = "dur"; /* equal to durable_name */
    c.num_replicas = 3;
    OK(c, &limits3);
    OK(c, &interest3);
    OK(c, &wq3);
    c.num_replicas = 0;
    OK(c, &wq1);
    c.num_replicas = 2;
    OK(c, &limits3);
    c = base();
    c.deliver_subject = "d";
    c.ack_policy = JR_ACK_NONE;
    OK(c, &limits3); /* a push ack-none consumer is fine off work queues */
    c.deliver_subject = NULL;
    OK(c, &interest3);
    c = base();
    c.name = "eph"; /* a named ephemeral */
    c.durable_name = "";
    OK(c, NULL);
#undef OK
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Normal form and equality
 */
START_TEST(normal_form)
{
    jr__consumer_norm n;
    jr_consumer_config c = base();
    c.name = "";
    c.description = "";
    c.sample_freq = "";
    c.deliver_subject = "";
    c.deliver_group = "";
    c.filter_subject = "";
    c.filter_subjects = full_filters;
    c.nfilter_subjects = 1;
    c.metadata = full_meta;
    c.backoff_ns = full_backoff; /* counts 0: ignored */
    ck_assert_int_eq(jr__consumer_config_validate(&c, NULL, NULL), 0);
    jr__consumer_config_normalize(&c, &n);
    ck_assert_uint_eq(n.c.size, sizeof n.c);
    ck_assert_str_eq(n.c.name, "dur");
    ck_assert_str_eq(n.c.durable_name, "dur");
    ck_assert_ptr_null(n.c.description);
    ck_assert_ptr_null(n.c.sample_freq);
    ck_assert_ptr_null(n.c.deliver_subject);
    ck_assert_ptr_null(n.c.deliver_group);
    ck_assert_ptr_null(n.c.metadata);
    ck_assert_ptr_null(n.c.backoff_ns);
    ck_assert_str_eq(n.c.filter_subject, "orders.*.eu");
    ck_assert_uint_eq(n.c.nfilter_subjects, 0);
    ck_assert_ptr_null(n.c.filter_subjects);
    ck_assert_int_eq(n.c.ack_wait_ns, 30 * SEC);
    ck_assert_int_eq(n.c.max_deliver, -1);
    ck_assert_int_eq(n.c.max_waiting, 512);
    ck_assert_int_eq(n.c.max_ack_pending, 1000);
    ck_assert_int_eq(n.c.inactive_threshold_ns, 0); /* durable: never removed */

    /* backoff[0] replaces ack_wait; ack none: no ack wait, no max ack pending */
    c = base();
    c.ack_policy = JR_ACK_NONE;
    jr__consumer_config_normalize(&c, &n);
    ck_assert_int_eq(n.c.ack_wait_ns, 0);
    ck_assert_int_eq(n.c.max_ack_pending, 0);
    c.backoff_ns = two_backoff;
    c.nbackoff = 2;
    c.ack_wait_ns = 9 * SEC;
    c.ack_policy = JR_ACK_EXPLICIT;
    jr__consumer_config_normalize(&c, &n);
    ck_assert_int_eq(n.c.ack_wait_ns, SEC);

    /* push: no max_waiting default; clamps */
    c = base();
    c.deliver_subject = "d";
    c.max_deliver = -3;
    c.max_ack_pending = -3;
    c.max_batch = -3;
    c.max_expires_ns = -3;
    c.max_bytes = -3;
    c.idle_heartbeat_ns = -3;
    c.inactive_threshold_ns = -3;
    c.headers_only = 2;
    c.mem_storage = -1;
    c.durable_name = NULL; /* ephemeral */
    ck_assert_int_eq(jr__consumer_config_validate(&c, NULL, NULL), 0);
    jr__consumer_config_normalize(&c, &n);
    ck_assert_ptr_null(n.c.name);
    ck_assert_int_eq(n.c.max_waiting, 0);
    ck_assert_int_eq(n.c.max_deliver, -1);
    ck_assert_int_eq(n.c.max_ack_pending, -1);
    ck_assert_int_eq(n.c.max_batch, 0);
    ck_assert_int_eq(n.c.max_expires_ns, 0);
    ck_assert_int_eq(n.c.max_bytes, 0);
    ck_assert_int_eq(n.c.idle_heartbeat_ns, 0);
    ck_assert_int_eq(n.c.inactive_threshold_ns, 5 * SEC);
    ck_assert_int_eq(n.c.headers_only, 1);
    ck_assert_int_eq(n.c.mem_storage, 1);

    /* priority: the pinned client's timeout defaults to 2 minutes, a negative one is none */
    c = base();
    c.priority_policy = JR_PRIORITY_PINNED_CLIENT;
    c.priority_groups = full_groups;
    c.npriority_groups = 1;
    jr__consumer_config_normalize(&c, &n);
    ck_assert_int_eq(n.c.priority_timeout_ns, 120 * SEC);
    c.priority_policy = JR_PRIORITY_OVERFLOW;
    jr__consumer_config_normalize(&c, &n);
    ck_assert_int_eq(n.c.priority_timeout_ns, 0);
    c.priority_policy = JR_PRIORITY_NONE;
    c.npriority_groups = 0;
    c.priority_timeout_ns = -5;
    ck_assert_int_eq(jr__consumer_config_validate(&c, NULL, NULL), 0);
    jr__consumer_config_normalize(&c, &n);
    ck_assert_int_eq(n.c.priority_timeout_ns, 0);
    ck_assert_ptr_null(n.c.priority_groups);

    /* two or more filters stay a list */
    c = full();
    jr__consumer_config_normalize(&c, &n);
    ck_assert_ptr_null(n.c.filter_subject);
    ck_assert_uint_eq(n.c.nfilter_subjects, 3);
    ck_assert_int_eq(n.c.ack_wait_ns, SEC);
}
END_TEST

START_TEST(equality_sees_through_defaults)
{
    jr_consumer_config a = base(), b = base();
    b.name = "dur";
    b.ack_wait_ns = 30 * SEC;
    b.max_deliver = -1;
    b.max_waiting = 512;
    b.max_ack_pending = 1000;
    b.description = "";
    b.filter_subject = "";
    b.metadata = full_meta; /* count 0 */
    ck_assert(jr__consumer_config_equal(&a, &b));
    ck_assert(jr__consumer_config_equal(&b, &a));
    b.max_deliver = -9;
    ck_assert(jr__consumer_config_equal(&a, &b));

    /* one filter either way */
    a.filter_subject = "orders.>";
    const char *one[] = {"orders.>"};
    b.filter_subjects = one;
    b.nfilter_subjects = 1;
    ck_assert(jr__consumer_config_equal(&a, &b));

    /* ephemeral inactive threshold */
    a = base();
    b = base();
    a.durable_name = b.durable_name = NULL;
    b.inactive_threshold_ns = 5 * SEC;
    ck_assert(jr__consumer_config_equal(&a, &b));

    /* metadata as a set */
    const jr_kv m1[] = {{"a", "1"}, {"b", "2"}}, m2[] = {{"b", "2"}, {"a", "1"}},
                m3[] = {{"b", "2"}, {"a", "x"}};
    a = base();
    b = base();
    a.metadata = m1;
    b.metadata = m2;
    a.nmetadata = b.nmetadata = 2;
    ck_assert(jr__consumer_config_equal(&a, &b));
    b.metadata = m3;
    ck_assert(!jr__consumer_config_equal(&a, &b));
}
END_TEST

/* Each case changes one field of full() (or full_pull()) to another valid value. */
MUT(d_name, c->name = c->durable_name = "other")
MUT(d_durable, c->durable_name = NULL)
MUT(d_description, c->description = "x")
MUT(d_metadata, c->nmetadata = 2)
MUT(d_deliver, c->deliver_policy = JR_DELIVER_ALL; c->opt_start_seq = 0)
MUT(d_start_seq, c->opt_start_seq = 43)
MUT(d_ack, c->ack_policy = JR_ACK_EXPLICIT)
MUT(d_max_deliver, c->max_deliver = 6)
MUT(d_backoff, c->nbackoff = 2)
MUT(d_filters, c->nfilter_subjects = 2)
MUT(d_replay, c->replay_policy = JR_REPLAY_INSTANT)
MUT(d_rate, c->rate_limit_bps = 1)
MUT(d_sample, c->sample_freq = "50")
MUT(d_map, c->max_ack_pending = 21)
MUT(d_headers_only, c->headers_only = 0)
MUT(d_max_batch, c->max_batch = 11)
MUT(d_max_expires, c->max_expires_ns = SEC)
MUT(d_max_bytes, c->max_bytes = 1)
MUT(d_deliver_subject, c->deliver_subject = "other")
MUT(d_deliver_group, c->deliver_group = NULL)
MUT(d_heartbeat, c->idle_heartbeat_ns = 6 * SEC)
MUT(d_flow_control, c->flow_control = 0)
MUT(d_inactive, c->inactive_threshold_ns = 0)
MUT(d_replicas, c->num_replicas = 1)
MUT(d_mem, c->mem_storage = 0)
MUT(d_pause, c->pause_until_ns = 0)
static void (*const diffs[])(jr_consumer_config *) = {
    d_name,
    d_durable,
    d_description,
    d_metadata,
    d_deliver,
    d_start_seq,
    d_ack,
    d_max_deliver,
    d_backoff,
    d_filters,
    d_replay,
    d_rate,
    d_sample,
    d_map,
    d_headers_only,
    d_max_batch,
    d_max_expires,
    d_max_bytes,
    d_deliver_subject,
    d_deliver_group,
    d_heartbeat,
    d_flow_control,
    d_inactive,
    d_replicas,
    d_mem,
    d_pause,
};

START_TEST(equality_sees_every_field)
{
    jr_consumer_config a = full(), b = full();
    ck_assert(jr__consumer_config_equal(&a, &b));
    diffs[_i](&b);
    jr__cerr err;
    ck_assert_msg(jr__consumer_config_validate(&b, NULL, &err) == 0, "case %d: %s", _i, err.msg);
    ck_assert_msg(!jr__consumer_config_equal(&a, &b), "case %d", _i);
    ck_assert_msg(!jr__consumer_config_equal(&b, &a), "case %d", _i);
}
END_TEST

START_TEST(equality_sees_priority_fields)
{
    jr_consumer_config a = full_pull(), b = full_pull();
    ck_assert(jr__consumer_config_equal(&a, &b));
    b.npriority_groups = 2;
    ck_assert(!jr__consumer_config_equal(&a, &b));
    b = full_pull();
    b.priority_policy = JR_PRIORITY_OVERFLOW;
    ck_assert(!jr__consumer_config_equal(&a, &b));
    b = full_pull();
    b.priority_timeout_ns = 0; /* the default, 2 minutes */
    ck_assert(!jr__consumer_config_equal(&a, &b));
    a.priority_timeout_ns = 120 * SEC;
    ck_assert(jr__consumer_config_equal(&a, &b));
    /* the pull consumer may change its priority settings */
    jr__cerr err;
    b.priority_policy = JR_PRIORITY_PRIORITIZED;
    b.priority_timeout_ns = 0;
    b.npriority_groups = 1;
    ck_assert_msg(jr__consumer_config_check_update(&a, &b, &err) == 0, "%s", err.msg);
    b.priority_policy = JR_PRIORITY_NONE;
    b.npriority_groups = 0;
    ck_assert_msg(jr__consumer_config_check_update(&a, &b, &err) == 0, "%s", err.msg);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Update rules
 */
MUT(u_deliver, c->deliver_policy = JR_DELIVER_ALL; c->opt_start_seq = 0)
MUT(u_start_seq, c->opt_start_seq = 7)
MUT(u_mem, c->mem_storage = 0)
MUT(u_ack, c->ack_policy = JR_ACK_EXPLICIT)
MUT(u_replay, c->replay_policy = JR_REPLAY_INSTANT)
MUT(u_hb, c->idle_heartbeat_ns = 2 * SEC)
MUT(u_fc, c->flow_control = 0)
MUT(u_to_pull, c->deliver_subject = NULL; c->deliver_group = NULL; c->rate_limit_bps = 0)
MUT(u_name, c->name = c->durable_name = "renamed")
MUT(u_backoff_md, c->max_deliver = 2)
MUT(p_start_time, c->opt_start_time_ns += 1)
MUT(p_deliver, c->deliver_policy = JR_DELIVER_ALL; c->opt_start_time_ns = 0)
MUT(p_to_push, c->deliver_subject = "d"; c->max_waiting = 0; c->priority_policy = JR_PRIORITY_NONE;
    c->npriority_groups = 0; c->priority_timeout_ns = 0)
MUT(p_max_waiting, c->max_waiting = 65)
MUT(p_max_waiting_default, c->max_waiting = 0) /* 64 to the default 512 */
MUT(p_ack_none, c->ack_policy = JR_ACK_NONE)

static const struct upd {
    const char *what;
    int from; /* starts from full() (0), full_pull() (1) or plain_push() (2) */
    void (*mut)(jr_consumer_config *);
    int http, code;
    const char *msg;
} updates[] = {
    {"deliver policy", 0, u_deliver, 500, 10012, "deliver policy can not be updated"},
    {"start sequence", 0, u_start_seq, 500, 10012, "start sequence can not be updated"},
    {"start time", 1, p_start_time, 500, 10012, "start time can not be updated"},
    {"deliver policy (pull)", 1, p_deliver, 500, 10012, "deliver policy can not be updated"},
    {"storage", 0, u_mem, 500, 10012, "storage type can not be updated"},
    {"ack policy", 0, u_ack, 500, 10012, "ack policy can not be updated"},
    {"ack policy (pull)", 1, p_ack_none, 500, 10012, "ack policy can not be updated"},
    {"replay policy", 0, u_replay, 500, 10012, "replay policy can not be updated"},
    {"heartbeat", 0, u_hb, 500, 10012, "heart beats can not be updated"},
    {"flow control", 0, u_fc, 500, 10012, "flow control can not be updated"},
    {"push to pull", 2, u_to_pull, 500, 10012, "can not update push consumer to pull based"},
    {"pull to push", 1, p_to_push, 500, 10012, "can not update pull consumer to push based"},
    {"max waiting", 1, p_max_waiting, 500, 10012, "max waiting can not be updated"},
    {"max waiting to default", 1, p_max_waiting_default, 500, 10012,
     "max waiting can not be updated"},
    {"name", 0, u_name, 500, 10012, "consumer name can not be updated"},
    {"backoff vs max_deliver", 0, u_backoff_md, 400, 10116,
     "max deliver is required to be > length of backoff values"},
};

START_TEST(update_refuses_immutable_fields)
{
    const struct upd *u = &updates[_i];
    jr_consumer_config old = u->from == 1 ? full_pull() : u->from == 2 ? plain_push() : full();
    jr_consumer_config upd = old;
    u->mut(&upd);
    jr__cerr err;
    ck_assert_int_eq(jr__consumer_config_check_update(&old, &old, &err), 0);
    ck_assert_msg(jr__consumer_config_check_update(&old, &upd, &err) == JR_EINVAL, "%s accepted",
                  u->what);
    ck_assert_msg(err.http == u->http && err.code == u->code, "%s: %d/%d %s", u->what, err.http,
                  err.code, err.msg);
    ck_assert_str_eq(err.msg, u->msg);
    ck_assert_int_eq(jr__consumer_config_check_update(&old, &upd, NULL), JR_EINVAL);
}
END_TEST

START_TEST(update_accepts_mutable_fields)
{
    jr__cerr err;
    jr_consumer_config old = full(), upd = full();
    upd.description = "changed";
    upd.nmetadata = 1;
    upd.ack_wait_ns = 9 * SEC; /* replaced by backoff[0] all the same */
    upd.max_deliver = 10;
    upd.nbackoff = 1;
    upd.filter_subjects = NULL;
    upd.nfilter_subjects = 0;
    upd.filter_subject = "other.>";
    upd.rate_limit_bps = 0;
    upd.sample_freq = NULL;
    upd.max_ack_pending = -1;
    upd.headers_only = 0;
    upd.max_batch = 0;
    upd.max_expires_ns = 0;
    upd.max_bytes = 0;
    upd.deliver_subject = "another.deliver"; /* interest in the old one is the caller's check */
    upd.deliver_group = NULL;
    upd.inactive_threshold_ns = 10 * SEC;
    upd.num_replicas = 1;
    upd.pause_until_ns = 0; /* not compared: the pause calls own it */
    ck_assert_msg(jr__consumer_config_check_update(&old, &upd, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(err.code, 0);

    /* defaults spelled out are no change */
    jr_consumer_config a = base(), b = base();
    b.max_waiting = 512;
    b.ack_wait_ns = 30 * SEC;
    b.name = "dur";
    ck_assert_int_eq(jr__consumer_config_check_update(&a, &b, &err), 0);

    /* an invalid update is refused as validate refuses it */
    b.ack_wait_ns = -1;
    ck_assert_int_eq(jr__consumer_config_check_update(&a, &b, &err), JR_EINVAL);
    ck_assert_int_eq(err.code, 10183);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Owned copies
 */
typedef struct counting {
    int allocs, live, budget;
} counting;

static void *c_malloc(void *ctx, size_t n)
{
    counting *k = ctx;
    if (k->budget-- <= 0) return NULL;
    k->allocs++, k->live++;
    return malloc(n);
}

static void *c_realloc(void *ctx, void *p, size_t n)
{
    counting *k = ctx;
    if (k->budget-- <= 0) return NULL;
    if (!p) k->allocs++, k->live++;
    return realloc(p, n);
}

static void c_free(void *ctx, void *p)
{
    counting *k = ctx;
    if (p) k->live--;
    free(p);
}

START_TEST(owned_copy_is_one_allocation)
{
    counting k = {0, 0, 1000};
    jr_allocator a = {JR_ALLOCATOR_VERSION, &k, c_malloc, c_realloc, c_free};
    char f0[] = "orders.*.eu";
    const char *filters[] = {f0, "refunds.>", "audit"};
    int64_t backoff[] = {SEC, 2 * SEC, 3 * SEC};
    jr_consumer_config src = full();
    src.filter_subjects = filters;
    src.backoff_ns = backoff;
    jr__consumer_cfg *owned = NULL;
    ck_assert_int_eq(jr__consumer_cfg_new(&src, &a, &owned, NULL), 0);
    ck_assert_int_eq(k.allocs, 1);
    ck_assert(jr__consumer_config_equal(&owned->c, &src));
    ck_assert_uint_eq(owned->refs, 1);
    ck_assert_ptr_eq(jr__consumer_cfg_ref(owned), owned);
    ck_assert_uint_eq(owned->refs, 2);
    jr__consumer_cfg_free(owned);
    ck_assert_int_eq(k.live, 1);
    /* a deep copy: the caller's strings and arrays may change afterwards */
    f0[0] = 'X';
    backoff[1] = 9;
    ck_assert_str_eq(owned->c.filter_subjects[0], "orders.*.eu");
    ck_assert_int_eq(owned->c.backoff_ns[1], 2 * SEC);
    ck_assert(!jr__consumer_config_equal(&owned->c, &src));
    /* every pointer lies inside the block */
    const char *lo = (const char *)owned, *hi = lo + owned->bytes;
#define IN(p) ck_assert((const char *)(p) >= lo && (const char *)(p) < hi)
    IN(owned->c.name);
    IN(owned->c.durable_name);
    IN(owned->c.description);
    IN(owned->c.metadata);
    IN(owned->c.metadata[2].key);
    IN(owned->c.metadata[2].value);
    IN(owned->c.backoff_ns);
    IN(owned->c.filter_subjects);
    IN(owned->c.filter_subjects[2]);
    IN(owned->c.sample_freq);
    IN(owned->c.deliver_subject);
    IN(owned->c.deliver_group);
#undef IN
    jr__consumer_cfg_free(owned);
    ck_assert_int_eq(k.live, 0);

    /* defaults are materialized in the copy */
    jr_consumer_config b = base();
    ck_assert_int_eq(jr__consumer_cfg_new(&b, &a, &owned, NULL), 0);
    ck_assert_str_eq(owned->c.name, "dur");
    ck_assert_int_eq(owned->c.max_waiting, 512);
    ck_assert_int_eq(owned->c.ack_wait_ns, 30 * SEC);
    jr__consumer_cfg_free(owned);
    jr__consumer_cfg_free(NULL);

    k.budget = 0;
    owned = (void *)1;
    ck_assert_int_eq(jr__consumer_cfg_new(&b, &a, &owned, NULL), JR_ENOMEM);
    ck_assert_ptr_null(owned);
    ck_assert_int_eq(k.live, 0);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Encoding
 */
static jr__buf encode(const jr_consumer_config *c)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__consumer_config_encode(c, &b), 0);
    return b;
}

/* Every pointer of an owned copy lies inside its block. */
static void assert_in_block(const jr__consumer_cfg *o)
{
    const char *lo = (const char *)o, *hi = lo + o->bytes;
#define IN(p) ck_assert(!(p) || ((const char *)(p) >= lo && (const char *)(p) < hi))
    const jr_consumer_config *c = &o->c;
    IN(c->name);
    IN(c->durable_name);
    IN(c->description);
    IN(c->metadata);
    for (size_t i = 0; i < c->nmetadata; i++) {
        IN(c->metadata[i].key);
        IN(c->metadata[i].value);
    }
    IN(c->backoff_ns);
    IN(c->filter_subject);
    IN(c->filter_subjects);
    for (size_t i = 0; i < c->nfilter_subjects; i++) IN(c->filter_subjects[i]);
    IN(c->sample_freq);
    IN(c->deliver_subject);
    IN(c->deliver_group);
    IN(c->priority_groups);
    for (size_t i = 0; i < c->npriority_groups; i++) IN(c->priority_groups[i]);
#undef IN
}

static void round_trip_one(const jr_consumer_config *src)
{
    jr__buf b = encode(src);
    jr__consumer_cfg *d = NULL;
    ck_assert_int_eq(jr__consumer_config_decode(b.data, b.len, NULL, &d), 0);
    ck_assert(jr__consumer_config_equal(&d->c, src));
    assert_in_block(d);
    jr__buf again = encode(&d->c);
    ck_assert_uint_eq(again.len, b.len);
    ck_assert(memcmp(again.data, b.data, b.len) == 0);
    /* the owned copy encodes the same */
    jr__consumer_cfg *o = NULL;
    ck_assert_int_eq(jr__consumer_cfg_new(src, NULL, &o, NULL), 0);
    assert_in_block(o);
    jr__buf third = encode(&o->c);
    ck_assert(third.len == b.len && memcmp(third.data, b.data, b.len) == 0);
    jr__buf_free(&third);
    jr__consumer_cfg_free(o);
    jr__buf_free(&again);
    jr__consumer_cfg_free(d);
    jr__buf_free(&b);
}

START_TEST(round_trip)
{
    jr_consumer_config c = base();
    round_trip_one(&c);
    c = full();
    round_trip_one(&c);
    c = full_pull();
    round_trip_one(&c);
    c = base();
    c.durable_name = NULL; /* ephemeral, no name */
    round_trip_one(&c);
    c.name = "eph";
    c.ack_policy = JR_ACK_NONE;
    c.max_deliver = INT64_MAX;
    c.opt_start_seq = UINT64_MAX;
    c.deliver_policy = JR_DELIVER_BY_START_SEQ;
    c.pause_until_ns = UINT64_MAX;
    c.max_bytes = INT64_MAX;
    round_trip_one(&c);

    /* defaults spelled or not: the same bytes */
    jr_consumer_config a = base(), b = base();
    b.name = "dur";
    b.ack_wait_ns = 30 * SEC;
    b.max_waiting = 512;
    b.max_ack_pending = 1000;
    b.max_deliver = -1;
    jr__buf ea = encode(&a), eb = encode(&b);
    ck_assert(ea.len == eb.len && memcmp(ea.data, eb.data, ea.len) == 0);
    jr__buf_free(&ea);
    jr__buf_free(&eb);

    /* appends: what was in the buffer stays */
    jr__buf out;
    jr__buf_init(&out, NULL);
    jr__buf_put(&out, "xy", 2);
    ck_assert_int_eq(jr__consumer_config_encode(&a, &out), 0);
    jr__consumer_cfg *d = NULL;
    ck_assert_int_eq(jr__consumer_config_decode(out.data + 1, out.len - 1, NULL, &d), JR_ECORRUPT);
    ck_assert_int_eq(jr__consumer_config_decode(out.data + 2, out.len - 2, NULL, &d), 0);
    jr__consumer_cfg_free(d);
    jr__buf_free(&out);
}
END_TEST

START_TEST(every_truncation_is_rejected)
{
    jr_consumer_config f = full();
    jr__buf b = encode(&f);
    for (size_t len = 0; len < b.len; len++) {
        uint8_t *q = malloc(len ? len : 1);
        memcpy(q, b.data, len);
        jr__consumer_cfg *d = (void *)1;
        ck_assert_msg(jr__consumer_config_decode(q, len, NULL, &d) == JR_ECORRUPT, "len %zu", len);
        ck_assert_ptr_null(d);
        free(q);
    }
    jr__consumer_cfg *d = (void *)1;
    ck_assert_int_eq(jr__consumer_config_decode(NULL, 0, NULL, &d), JR_ECORRUPT);
    jr__buf_free(&b);
}
END_TEST

/* Recomputes the checksum after a change, so the change reaches the parser. */
static void reseal(uint8_t *q, size_t len)
{
    jr__put_u64(q + len - 8, jr__xxh3(q, len - 8));
}

START_TEST(every_flipped_bit_is_rejected)
{
    jr_consumer_config f = full();
    jr__buf b = encode(&f);
    uint8_t *q = malloc(b.len);
    for (size_t i = 0; i < b.len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(q, b.data, b.len);
            q[i] ^= (uint8_t)(1u << bit);
            jr__consumer_cfg *d = (void *)1;
            ck_assert_msg(jr__consumer_config_decode(q, b.len, NULL, &d) == JR_ECORRUPT,
                          "byte %zu bit %d", i, bit);
            ck_assert_ptr_null(d);
        }
    }
    free(q);
    jr__buf_free(&b);
}
END_TEST

START_TEST(version_and_trailing_bytes)
{
    jr_consumer_config f = full_pull();
    jr__buf b = encode(&f);
    uint8_t *q = malloc(b.len + 1);
    memcpy(q, b.data, b.len);
    jr__consumer_cfg *d = (void *)1;
    for (int v = 0; v < 256; v++) {
        if (v == JR__CONSUMER_CONFIG_VERSION) continue;
        q[0] = (uint8_t)v;
        reseal(q, b.len);
        ck_assert_int_eq(jr__consumer_config_decode(q, b.len, NULL, &d), JR_EVERSION);
        ck_assert_ptr_null(d);
    }
    /* an unknown version with a bad checksum is corrupt, not a version */
    q[0] = 2;
    q[b.len - 1] ^= 1;
    ck_assert_int_eq(jr__consumer_config_decode(q, b.len, NULL, &d), JR_ECORRUPT);
    /* one trailing byte inside the sealed part */
    memcpy(q, b.data, b.len - 8);
    q[b.len - 8] = 0;
    reseal(q, b.len + 1);
    ck_assert_int_eq(jr__consumer_config_decode(q, b.len + 1, NULL, &d), JR_ECORRUPT);
    ck_assert_ptr_null(d);
    /* one byte after the checksum */
    memcpy(q, b.data, b.len);
    q[b.len] = 0;
    ck_assert_int_eq(jr__consumer_config_decode(q, b.len + 1, NULL, &d), JR_ECORRUPT);
    free(q);
    jr__buf_free(&b);
}
END_TEST

/* Every byte set to every other value with a valid checksum: refused, or decoded into a valid
 * config whose encoding is exactly those bytes (one encoding per config). */
START_TEST(resealed_mutations_are_refused_or_canonical)
{
    jr_consumer_config f = full();
    for (int round = 0; round < 2; round++) {
        if (round) f = full_pull();
        jr__buf b = encode(&f);
        uint8_t *q = malloc(b.len);
        long accepted = 0;
        for (size_t i = 1; i < b.len - 8; i++) {
            for (int v = 0; v < 256; v++) {
                if (v == b.data[i]) continue;
                memcpy(q, b.data, b.len);
                q[i] = (uint8_t)v;
                reseal(q, b.len);
                jr__consumer_cfg *d = NULL;
                int rc = jr__consumer_config_decode(q, b.len, NULL, &d);
                if (rc == 0) {
                    accepted++;
                    ck_assert_int_eq(jr__consumer_config_validate(&d->c, NULL, NULL), 0);
                    jr__buf again = encode(&d->c);
                    ck_assert_msg(again.len == b.len && memcmp(again.data, q, b.len) == 0,
                                  "byte %zu = %d accepted but not canonical", i, v);
                    jr__buf_free(&again);
                    jr__consumer_cfg_free(d);
                } else {
                    ck_assert_int_eq(rc, JR_ECORRUPT);
                    ck_assert_ptr_null(d);
                }
            }
        }
        ck_assert_int_gt(accepted, 0); /* e.g. other letters in the description */
        free(q);
        jr__buf_free(&b);
    }
}
END_TEST

/* Hand-made encodings of configs that are valid but not normal are refused. */
START_TEST(non_normal_encodings_are_refused)
{
    /* encode, decode, change a field of the decoded copy to a non-normal spelling of the same
     * config, then write it with the encoder's layout by hand: the simplest is max_waiting 0 for
     * a pull consumer, at a known place, so patch the zigzag byte of max_waiting (512 -> 0). */
    jr_consumer_config c = base();
    jr__buf b = encode(&c);
    /* find zz(512) = 1024 = varint 0x80 0x08 followed by zz(1000) = 2000 = 0xd0 0x0f */
    size_t at = 0;
    for (size_t i = 0; i + 4 <= b.len - 8; i++)
        if (b.data[i] == 0x80 && b.data[i + 1] == 0x08 && b.data[i + 2] == 0xd0 &&
            b.data[i + 3] == 0x0f)
            at = i;
    ck_assert_uint_gt(at, 0);
    uint8_t *q = malloc(b.len);
    size_t n = 0;
    memcpy(q, b.data, at);
    n = at;
    q[n++] = 0; /* max_waiting 0 */
    memcpy(q + n, b.data + at + 2, b.len - 8 - at - 2);
    n += b.len - 8 - at - 2;
    n += 8;
    reseal(q, n);
    jr__consumer_cfg *d = (void *)1;
    ck_assert_int_eq(jr__consumer_config_decode(q, n, NULL, &d), JR_ECORRUPT);
    ck_assert_ptr_null(d);
    free(q);
    jr__buf_free(&b);
}
END_TEST

START_TEST(decode_out_of_memory)
{
    jr_consumer_config f = full();
    jr__buf b = encode(&f);
    counting k = {0, 0, 0};
    jr_allocator a = {JR_ALLOCATOR_VERSION, &k, c_malloc, c_realloc, c_free};
    jr__consumer_cfg *d = (void *)1;
    ck_assert_int_eq(jr__consumer_config_decode(b.data, b.len, &a, &d), JR_ENOMEM);
    ck_assert_ptr_null(d);
    k.budget = 1;
    ck_assert_int_eq(jr__consumer_config_decode(b.data, b.len, &a, &d), 0);
    ck_assert_int_eq(k.allocs, 1);
    jr__consumer_cfg_free(d);
    ck_assert_int_eq(k.live, 0);
    jr__buf_free(&b);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Filters
 */
START_TEST(filter_matching_and_overlap)
{
    jr_consumer_config all = base(), one = base(), many = full(), other = base();
    one.filter_subject = "orders.>";
    other.filter_subject = "audit.x";
    const char *single[] = {"refunds.*"};
    jr_consumer_config listed_one = base();
    listed_one.filter_subjects = single;
    listed_one.nfilter_subjects = 1;

    ck_assert(jr__consumer_filter_matches(&all, "anything.at.all"));
    ck_assert(!jr__consumer_filter_matches(&all, "not.*.literal"));
    ck_assert(!jr__consumer_filter_matches(&all, NULL));
    ck_assert(jr__consumer_filter_matches(&one, "orders.eu"));
    ck_assert(!jr__consumer_filter_matches(&one, "orders"));
    ck_assert(jr__consumer_filter_matches(&many, "orders.x.eu"));
    ck_assert(jr__consumer_filter_matches(&many, "refunds.a.b"));
    ck_assert(jr__consumer_filter_matches(&many, "audit"));
    ck_assert(!jr__consumer_filter_matches(&many, "audit.x"));
    ck_assert(jr__consumer_filter_matches(&listed_one, "refunds.a"));
    ck_assert(!jr__consumer_filter_matches(&listed_one, "refunds.a.b"));

    /* no filter overlaps everything, itself included */
    ck_assert(jr__consumer_filters_overlap(&all, &all));
    ck_assert(jr__consumer_filters_overlap(&all, &one));
    ck_assert(jr__consumer_filters_overlap(&one, &all));
    ck_assert(jr__consumer_filters_overlap(&one, &many));    /* orders.> and orders.*.eu */
    ck_assert(!jr__consumer_filters_overlap(&one, &other));  /* orders.> and audit.x */
    ck_assert(!jr__consumer_filters_overlap(&many, &other)); /* audit is not audit.x */
    ck_assert(jr__consumer_filters_overlap(&listed_one, &many));
    other.filter_subject = "*.x";
    ck_assert(jr__consumer_filters_overlap(&one, &other)); /* orders.x */
    ck_assert(jr__consumer_filters_overlap(&other, &one));
}
END_TEST

START_TEST(replicas_follow_the_stream)
{
    jr_consumer_config c = base();
    ck_assert_int_eq(jr__consumer_replicas(&c, &limits3), 3);
    ck_assert_int_eq(jr__consumer_replicas(&c, &wq1), 1);
    c.num_replicas = 2;
    ck_assert_int_eq(jr__consumer_replicas(&c, &limits3), 2);
    c.num_replicas = 4; /* refused by validate; the stream's */
    ck_assert_int_eq(jr__consumer_replicas(&c, &limits3), 3);
    /* an R0 ephemeral on a limits stream is R1, on interest or work-queue streams the stream's */
    c = base();
    c.durable_name = "";
    ck_assert_int_eq(jr__consumer_replicas(&c, &limits3), 1);
    ck_assert_int_eq(jr__consumer_replicas(&c, &interest3), 3);
    ck_assert_int_eq(jr__consumer_replicas(&c, &wq3), 3);
    c.num_replicas = 3;
    ck_assert_int_eq(jr__consumer_replicas(&c, &limits3), 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("consumer_config");
    TCase *tc = tcase_create("config");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, init_gives_jetstream_defaults);
    tcase_add_loop_test(tc, every_refusal_has_jetstreams_code_and_text, 0, (int)N(bad));
    tcase_add_test(tc, boundary_values_are_accepted);
    tcase_add_test(tc, normal_form);
    tcase_add_test(tc, equality_sees_through_defaults);
    tcase_add_loop_test(tc, equality_sees_every_field, 0, (int)N(diffs));
    tcase_add_test(tc, equality_sees_priority_fields);
    tcase_add_loop_test(tc, update_refuses_immutable_fields, 0, (int)N(updates));
    tcase_add_test(tc, update_accepts_mutable_fields);
    tcase_add_test(tc, owned_copy_is_one_allocation);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, every_truncation_is_rejected);
    tcase_add_test(tc, every_flipped_bit_is_rejected);
    tcase_add_test(tc, version_and_trailing_bytes);
    tcase_add_test(tc, resealed_mutations_are_refused_or_canonical);
    tcase_add_test(tc, non_normal_encodings_are_refused);
    tcase_add_test(tc, decode_out_of_memory);
    tcase_add_test(tc, filter_matching_and_overlap);
    tcase_add_test(tc, replicas_follow_the_stream);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
