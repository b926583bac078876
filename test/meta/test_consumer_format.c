/* jr_consumer_info_format(): a consumer's info laid out as `nats consumer info` prints it. */
#include <check.h>
#include <stddef.h>
#include <string.h>

#include "jetraft.h"

#define SEC 1000000000ULL
/* 2026-12-05T16:00:00Z */
#define NOW (1796486400ULL * SEC)

/* A pull consumer with most of the pull settings, on a three-replica group. */
typedef struct pull_fixture {
    jr_consumer_config cfg;
    int64_t backoff[3];
    jr_peer_info peers[2];
    const jr_peer_info *peer_ptrs[2];
    jr_cluster_info cluster;
    jr_consumer_info info;
} pull_fixture;

static void pull_fixture_init(pull_fixture *f)
{
    memset(f, 0, sizeof *f);
    jr_consumer_config *c = &f->cfg;
    jr_consumer_config_init(c);
    c->name = "NEW";
    c->durable_name = "NEW";
    c->description = "new orders";
    c->filter_subject = "ORDERS.received";
    c->ack_policy = JR_ACK_EXPLICIT;
    c->ack_wait_ns = 30 * (int64_t)SEC;
    c->max_deliver = 5;
    c->max_ack_pending = 1000;
    c->max_waiting = 512;
    c->max_batch = 100;
    c->max_expires_ns = 60 * (int64_t)SEC;
    c->max_bytes = 1048576;
    c->inactive_threshold_ns = 300 * (int64_t)SEC;
    f->backoff[0] = (int64_t)SEC;
    f->backoff[1] = 60 * (int64_t)SEC;
    f->backoff[2] = 1500000000;
    c->backoff_ns = f->backoff;
    c->nbackoff = 3;
    c->num_replicas = 3;
    f->peers[0] = (jr_peer_info){
        .size = sizeof f->peers[0], .name = "n2", .current = 1, .active_ns = 120000000};
    f->peers[1] = (jr_peer_info){
        .size = sizeof f->peers[1], .name = "n3", .active_ns = 2500000000ULL, .lag = 1234};
    f->peer_ptrs[0] = &f->peers[0];
    f->peer_ptrs[1] = &f->peers[1];
    f->cluster = (jr_cluster_info){.size = sizeof f->cluster,
                                   .name = "east",
                                   .group = "C-R3F-abc",
                                   .leader = "n1",
                                   .replicas = f->peer_ptrs,
                                   .nreplicas = 2};
    f->info = (jr_consumer_info){.size = sizeof f->info,
                                 .stream = "ORDERS",
                                 .name = "NEW",
                                 .created_ns = NOW - 3600 * SEC,
                                 .config = c,
                                 .delivered = {1500, 1520, NOW - 2500000000ULL},
                                 .ack_floor = {1400, 1410, NOW - 3 * SEC},
                                 .num_ack_pending = 100,
                                 .num_redelivered = 3,
                                 .num_waiting = 2,
                                 .num_pending = 12345,
                                 .cluster = &f->cluster};
}

static const char pull_page[] =
    "Information for Consumer ORDERS > NEW created 2026-12-05T15:00:00Z\n"
    "\n"
    "Configuration:\n"
    "\n"
    "                    Name: NEW\n"
    "             Description: new orders\n"
    "               Pull Mode: true\n"
    "          Filter Subject: ORDERS.received\n"
    "          Deliver Policy: All\n"
    "              Ack Policy: Explicit\n"
    "                Ack Wait: 30.00s\n"
    "           Replay Policy: Instant\n"
    "      Maximum Deliveries: 5\n"
    "         Max Ack Pending: 1,000\n"
    "       Max Waiting Pulls: 512\n"
    "      Inactive Threshold: 5m0s\n"
    "         Max Pull Expire: 1m0s\n"
    "          Max Pull Batch: 100\n"
    "       Max Pull MaxBytes: 1,048,576\n"
    "                 Backoff: 1s, 1m0s, 1.5s\n"
    "                Replicas: 3\n"
    "\n"
    "Cluster Information:\n"
    "\n"
    "                    Name: east\n"
    "           Cluster Group: C-R3F-abc\n"
    "                  Leader: n1\n"
    "                 Replica: n2, current, seen 0.12s ago\n"
    "                 Replica: n3, outdated, seen 2.50s ago, 1,234 operations behind\n"
    "\n"
    "State:\n"
    "\n"
    "  Last Delivered Message: Consumer sequence: 1,500 Stream sequence: 1,520 Last delivery: "
    "2.50s ago\n"
    "    Acknowledgment Floor: Consumer sequence: 1,400 Stream sequence: 1,410 Last Ack: 3.00s "
    "ago\n"
    "        Outstanding Acks: 100 out of maximum 1,000\n"
    "    Redelivered Messages: 3\n"
    "    Unprocessed Messages: 12,345\n"
    "           Waiting Pulls: 2 of maximum 512\n";

START_TEST(pull_consumer_page)
{
    pull_fixture f;
    pull_fixture_init(&f);
    char buf[4096];
    int n = jr_consumer_info_format(&f.info, NOW, buf, sizeof buf);
    ck_assert_str_eq(buf, pull_page);
    ck_assert_int_eq(n, (int)strlen(pull_page));
}
END_TEST

/* A consumer mid move: the Migration Information section follows the cluster block, at the
 * page's label width. */
START_TEST(migration_section)
{
    pull_fixture f;
    pull_fixture_init(&f);
    const char *target[] = {"n1", "n2", "n4"}, *origin[] = {"n1", "n2", "n3"};
    jr_move_info m = {.size = sizeof m,
                      .target = target,
                      .ntarget = 3,
                      .origin = origin,
                      .norigin = 3,
                      .status = JR_MOVE_MEMBERSHIP,
                      .description = "adding peer n4"};
    f.cluster.move = &m;
    f.peers[1].pending = 1;
    char buf[4096];
    int n = jr_consumer_info_format(&f.info, NOW, buf, sizeof buf);
    ck_assert_int_eq(n, (int)strlen(buf));
    ck_assert_ptr_nonnull(strstr(buf, "                 Replica: n3 (pending), outdated"));
    ck_assert_ptr_nonnull(strstr(buf, "1,234 operations behind\n"
                                      "\n"
                                      "Migration Information:\n"
                                      "\n"
                                      "                  Status: membership\n"
                                      "             Description: adding peer n4\n"
                                      "            Target Peers: n1, n2, n4\n"
                                      "            Origin Peers: n1, n2, n3\n"
                                      "\n"
                                      "State:\n"));
    /* truncated output still counts everything */
    char small[64];
    ck_assert_int_eq(jr_consumer_info_format(&f.info, NOW, small, sizeof small), n);
}
END_TEST

/* A push consumer, not clustered, without acks, starting at a time, paused, with the push-only
 * rows (queue group, heartbeat, flow control) and no pull rows. */
START_TEST(push_consumer_page)
{
    jr_consumer_config c;
    jr_consumer_config_init(&c);
    c.durable_name = "MONITOR";
    c.name = "MONITOR";
    c.deliver_subject = "monitor.orders";
    c.deliver_group = "watchers";
    c.filter_subjects = (const char *const[]){"ORDERS.received", "ORDERS.shipped"};
    c.nfilter_subjects = 2;
    c.deliver_policy = JR_DELIVER_BY_START_TIME;
    c.opt_start_time_ns = NOW - 86400 * SEC + 500000000;
    c.ack_policy = JR_ACK_NONE;
    c.replay_policy = JR_REPLAY_ORIGINAL;
    c.max_deliver = -1;
    c.max_ack_pending = 0;
    c.max_waiting = 0;
    c.sample_freq = "50%";
    c.rate_limit_bps = 1000000;
    c.idle_heartbeat_ns = 5 * (int64_t)SEC;
    c.flow_control = 1;
    c.headers_only = 1;
    c.mem_storage = 1;
    c.pause_until_ns = NOW + 90 * SEC;
    jr_consumer_info info = {.size = sizeof info,
                             .stream = "ORDERS",
                             .name = "MONITOR",
                             .created_ns = NOW - 2 * 86400 * SEC,
                             .config = &c,
                             .delivered = {10, 42, NOW - 75 * SEC},
                             .num_pending = 1000000};
    static const char want[] =
        "Information for Consumer ORDERS > MONITOR created 2026-12-03T16:00:00Z\n"
        "\n"
        "Configuration:\n"
        "\n"
        "                    Name: MONITOR\n"
        "        Delivery Subject: monitor.orders\n"
        "         Filter Subjects: ORDERS.received, ORDERS.shipped\n"
        "          Deliver Policy: Since 2026-12-04 16:00:00.5 +0000 UTC\n"
        "     Deliver Queue Group: watchers\n"
        "              Ack Policy: None\n"
        "           Replay Policy: Original\n"
        "           Sampling Rate: 50%\n"
        "              Rate Limit: 122 KiB / second\n"
        "          Idle Heartbeat: 5.00s\n"
        "            Flow Control: true\n"
        "            Headers Only: true\n"
        "          Memory Storage: true\n"
        "   Paused Until Deadline: 2026-12-05 16:01:30 +0000 UTC (1m30s remaining)\n"
        "\n"
        "State:\n"
        "\n"
        "  Last Delivered Message: Consumer sequence: 10 Stream sequence: 42 Last delivery: "
        "1m15s ago\n"
        "    Unprocessed Messages: 1,000,000\n"
        "            Paused Until: 2026-12-05 16:01:30 (1m30s remaining)\n";
    char buf[4096];
    int n = jr_consumer_info_format(&info, NOW, buf, sizeof buf);
    ck_assert_str_eq(buf, want);
    ck_assert_int_eq(n, (int)strlen(want));

    /* once the pause is over the deadline says so, and the State block no longer shows it */
    n = jr_consumer_info_format(&info, NOW + 100 * SEC, buf, sizeof buf);
    ck_assert_int_gt(n, 0);
    ck_assert_ptr_nonnull(strstr(buf, "Paused Until Deadline: 2026-12-05 16:01:30 +0000 UTC "
                                      "(passed)\n"));
    ck_assert_ptr_null(strstr(buf, "  Paused Until:"));
}
END_TEST

/* Without a clock (now_ns 0) nothing is dated: no "ago", no time left. */
START_TEST(no_clock_no_ago)
{
    pull_fixture f;
    pull_fixture_init(&f);
    f.cfg.pause_until_ns = NOW + 90 * SEC;
    char buf[4096];
    int n = jr_consumer_info_format(&f.info, 0, buf, sizeof buf);
    ck_assert_int_gt(n, 0);
    ck_assert_ptr_nonnull(strstr(buf, "  Last Delivered Message: Consumer sequence: 1,500 Stream "
                                      "sequence: 1,520\n"));
    ck_assert_ptr_nonnull(strstr(buf, "    Acknowledgment Floor: Consumer sequence: 1,400 Stream "
                                      "sequence: 1,410\n"));
    ck_assert_ptr_nonnull(strstr(buf, "   Paused Until Deadline: 2026-12-05 16:01:30 +0000 UTC\n"));
    ck_assert_ptr_null(strstr(buf, "Paused Until:"));
    /* the replicas' "seen" is their own duration, not the caller's clock */
    ck_assert_ptr_nonnull(strstr(buf, "Replica: n2, current, seen 0.12s ago\n"));
}
END_TEST

/* snprintf semantics for every buffer size: the full length, a terminated prefix. */
START_TEST(truncation)
{
    pull_fixture f;
    pull_fixture_init(&f);
    const size_t full = strlen(pull_page);
    ck_assert_int_eq(jr_consumer_info_format(&f.info, NOW, NULL, 0), (int)full);
    char buf[4096];
    for (size_t len = 1; len <= full + 1; len++) {
        memset(buf, 'x', sizeof buf);
        int n = jr_consumer_info_format(&f.info, NOW, buf, len);
        ck_assert_int_eq(n, (int)full);
        size_t got = strlen(buf);
        ck_assert_uint_eq(got, len - 1 < full ? len - 1 : full);
        ck_assert_int_eq(memcmp(buf, pull_page, got), 0);
        ck_assert_int_eq(buf[len], 'x'); /* nothing written past len */
    }
    /* len 0 with a buffer: nothing written at all */
    buf[0] = 'x';
    ck_assert_int_eq(jr_consumer_info_format(&f.info, NOW, buf, 0), (int)full);
    ck_assert_int_eq(buf[0], 'x');
}
END_TEST

START_TEST(refusals)
{
    pull_fixture f;
    pull_fixture_init(&f);
    char buf[256];
    ck_assert_int_eq(jr_consumer_info_format(NULL, NOW, buf, sizeof buf), JR_EINVAL);
    ck_assert_int_eq(jr_consumer_info_format(&f.info, NOW, NULL, 10), JR_EINVAL);
    jr_consumer_info small = f.info;
    small.size = 0;
    ck_assert_int_eq(jr_consumer_info_format(&small, NOW, buf, sizeof buf), JR_EINVAL);
    small.size = offsetof(jr_consumer_info, name); /* the name does not fit */
    ck_assert_int_eq(jr_consumer_info_format(&small, NOW, buf, sizeof buf), JR_EINVAL);
    /* a malformed cluster block: a count without replicas, a NULL replica line */
    f.cluster.replicas = NULL;
    ck_assert_int_eq(jr_consumer_info_format(&f.info, NOW, buf, sizeof buf), JR_EINVAL);
    const jr_peer_info *none[2] = {NULL, NULL};
    f.cluster.replicas = none;
    ck_assert_int_eq(jr_consumer_info_format(&f.info, NOW, buf, sizeof buf), JR_EINVAL);
}
END_TEST

/* An older caller's structs: only what their `size` holds is read. */
START_TEST(old_caller_sizes)
{
    pull_fixture f;
    pull_fixture_init(&f);
    /* an info from before the cluster field: the pointer there is not looked at */
    f.info.size = offsetof(jr_consumer_info, cluster);
    f.info.cluster = (const jr_cluster_info *)(uintptr_t)1;
    /* a config from before priority groups: the fields past its size read as 0 */
    f.cfg.size = offsetof(jr_consumer_config, priority_groups);
    f.cfg.priority_policy = JR_PRIORITY_PINNED_CLIENT;
    f.cfg.priority_groups = (const char *const *)(uintptr_t)1;
    f.cfg.npriority_groups = 3;
    char buf[4096];
    int n = jr_consumer_info_format(&f.info, NOW, buf, sizeof buf);
    ck_assert_int_gt(n, 0);
    ck_assert_ptr_null(strstr(buf, "Cluster Information"));
    ck_assert_ptr_null(strstr(buf, "Priority"));
    /* the page is the full one without its cluster block */
    const char *cut = strstr(pull_page, "Cluster Information:");
    const char *resume = strstr(pull_page, "State:");
    ck_assert_int_eq(n, (int)(strlen(pull_page) - (size_t)(resume - cut)));
    ck_assert_int_eq(strncmp(buf, pull_page, (size_t)(cut - pull_page)), 0);
    ck_assert_str_eq(buf + (cut - pull_page), resume);

    /* an info that ends after its name: a header and an empty State block */
    jr_consumer_info tiny = {.size = offsetof(jr_consumer_info, name) + sizeof(const char *),
                             .stream = "S",
                             .name = "C"};
    ck_assert_int_gt(jr_consumer_info_format(&tiny, NOW, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "Information for Consumer S > C\n"
                          "\n"
                          "State:\n"
                          "\n"
                          "  Last Delivered Message: Consumer sequence: 0 Stream sequence: 0\n"
                          "    Acknowledgment Floor: Consumer sequence: 0 Stream sequence: 0\n"
                          "        Outstanding Acks: 0\n"
                          "    Redelivered Messages: 0\n"
                          "    Unprocessed Messages: 0\n");
}
END_TEST

/* NULL strings and lists are rendered as empty or left out, never dereferenced. */
START_TEST(null_fields)
{
    jr_consumer_config c;
    memset(&c, 0, sizeof c);
    c.size = sizeof c;
    c.ack_policy = JR_ACK_EXPLICIT;
    c.nfilter_subjects = 2; /* without the list */
    c.nbackoff = 4;         /* without the list */
    c.deliver_policy = 99;  /* not a policy */
    c.priority_policy = JR_PRIORITY_OVERFLOW;
    c.npriority_groups = 2; /* without the list */
    jr_consumer_info info = {.size = sizeof info, .config = &c};
    char buf[2048];
    int n = jr_consumer_info_format(&info, NOW, buf, sizeof buf);
    ck_assert_int_gt(n, 0);
    ck_assert_int_lt(n, (int)sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "Information for Consumer  > \n"));
    ck_assert_ptr_null(strstr(buf, "Filter"));
    ck_assert_ptr_null(strstr(buf, "Backoff"));
    ck_assert_ptr_nonnull(strstr(buf, "Deliver Policy: Unknown Deliver Policy\n"));
    ck_assert_ptr_nonnull(strstr(buf, "Priority Policy: Overflow\n"));
    ck_assert_ptr_nonnull(strstr(buf, "Priority Groups: \n"));
    ck_assert_ptr_nonnull(strstr(buf, "Waiting Pulls: 0 of unlimited\n"));
    /* a cluster without a name (not clustered): no block */
    jr_cluster_info ci = {.size = sizeof ci};
    info.cluster = &ci;
    ck_assert_int_eq(jr_consumer_info_format(&info, NOW, buf, sizeof buf), n);
    ck_assert_ptr_null(strstr(buf, "Cluster Information"));
}
END_TEST

/* A long backoff list shows its first and last five steps and the count, as the CLI does. */
START_TEST(long_backoff)
{
    pull_fixture f;
    pull_fixture_init(&f);
    int64_t steps[20];
    for (int i = 0; i < 20; i++) steps[i] = (int64_t)(i + 1) * 250000000;
    f.cfg.backoff_ns = steps;
    f.cfg.nbackoff = 20;
    char buf[4096];
    ck_assert_int_gt(jr_consumer_info_format(&f.info, NOW, buf, sizeof buf), 0);
    ck_assert_ptr_nonnull(strstr(buf, "                 Backoff: 250ms, 500ms, 750ms, 1s, 1.25s, "
                                      "..., 4s, 4.25s, 4.5s, 4.75s, 5s (20 total)\n"));
}
END_TEST

/* Rows that depend on other settings: the start sequence (without separators, as the CLI), a
 * durable name that differs from the name, pinned-client priority groups with their TTL. */
START_TEST(dependent_rows)
{
    pull_fixture f;
    pull_fixture_init(&f);
    f.cfg.name = "worker-1";
    f.cfg.durable_name = "WORKERS";
    f.cfg.deliver_policy = JR_DELIVER_BY_START_SEQ;
    f.cfg.opt_start_seq = 12345;
    f.cfg.priority_policy = JR_PRIORITY_PINNED_CLIENT;
    f.cfg.priority_groups = (const char *const[]){"jobs", "batch"};
    f.cfg.npriority_groups = 2;
    f.cfg.priority_timeout_ns = 120 * (int64_t)SEC;
    char buf[4096];
    ck_assert_int_gt(jr_consumer_info_format(&f.info, NOW, buf, sizeof buf), 0);
    ck_assert_ptr_nonnull(strstr(buf, "                    Name: worker-1\n"
                                      "            Durable Name: WORKERS\n"));
    ck_assert_ptr_nonnull(strstr(buf, "          Deliver Policy: From Sequence 12345\n"));
    ck_assert_ptr_nonnull(strstr(buf, "                Replicas: 3\n"
                                      "         Priority Policy: Pinned Client\n"
                                      "         Priority Groups: jobs, batch\n"
                                      "              Pinned TTL: 2m0s\n"
                                      "\n"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("consumer_format");
    TCase *tc = tcase_create("consumer_format");
    tcase_add_test(tc, pull_consumer_page);
    tcase_add_test(tc, migration_section);
    tcase_add_test(tc, push_consumer_page);
    tcase_add_test(tc, no_clock_no_ago);
    tcase_add_test(tc, truncation);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, old_caller_sizes);
    tcase_add_test(tc, null_fields);
    tcase_add_test(tc, long_backoff);
    tcase_add_test(tc, dependent_rows);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
