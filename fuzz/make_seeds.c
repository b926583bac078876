/*
 * make_seeds — writes the seed inputs of the fuzz targets whose inputs the library's encoders
 * produce: peer frames, store blocks, stream configs, stream ops, consumer configs, consumer
 * entries and snapshots, and meta ops; for fuzz_snapshot (whose first byte picks the decoder)
 * the stream config, stream op and meta op seeds again, the meta snapshot of the state those
 * meta ops build, and that snapshot in a snapshot file; and released-replica files
 * (fuzz_released: none, one, three records). Every seed is the real encoder's output
 * for a meaningful value, so the fuzzer starts from inputs the decoders accept.
 *
 * Build: with the fuzz targets (meson setup build-fuzz -Dfuzz=true).
 * Run:   build-fuzz/fuzz/make_seeds fuzz/corpus   (writes fuzz/corpus/<target>/<name>)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "consumer/config.h"
#include "consumer/op.h"
#include "consumer/state.h"
#include "log/snapfile.h"
#include "meta/meta_op.h"
#include "meta/meta_state.h"
#include "node/node.h"
#include "store/block.h"
#include "store/srecord.h"
#include "stream/config.h"
#include "stream/op.h"
#include "wire/frame.h"

static const char *root;

static void write_seed(const char *target, const char *name, const uint8_t *p, size_t n, int prefix)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, target);
    if (mkdir(path, 0755) && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    if (prefix >= 0) fputc(prefix, f);
    if (fwrite(p, 1, n, f) != n || fclose(f)) {
        perror(path);
        exit(1);
    }
}

static void must(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "make_seeds: encoding %s failed: %d\n", what, rc);
        exit(1);
    }
}

/* fuzz_snapshot's selectors: 1 stream op, 2 meta op, 3 stream config */
static void seed(const char *target, int snap_sel, const char *name, jr__buf *b)
{
    if (b->err) must(JR_ENOMEM, name);
    write_seed(target, name, b->data, b->len, -1);
    if (snap_sel >= 0) {
        char n2[128];
        snprintf(n2, sizeof n2, "%s-%s", target + 5, name);
        write_seed("fuzz_snapshot", n2, b->data, b->len, snap_sel);
    }
    jr__buf_free(b);
    jr__buf_init(b, NULL);
}

static const char *subjects[] = {"orders.*", "returns.>", "ship.eu"};
static const char *tags[] = {"ssd", "eu-west"};
static const jr_kv meta[] = {{"owner", "team-a"}, {"tier", "gold"}};

static void stream_configs(jr_stream_config *full)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr_stream_config c;
    jr_stream_config_init(&c);
    c.name = "ORDERS";
    must(jr__stream_config_encode(&c, &b), "minimal");
    seed("fuzz_stream_config", 3, "minimal", &b);

    static jr_placement pl;
    jr_placement_init(&pl);
    pl.cluster = "east";
    pl.tags = tags;
    pl.ntags = 2;
    c.description = "all the orders";
    c.subjects = subjects;
    c.nsubjects = 3;
    c.retention = JR_RETAIN_WORKQUEUE;
    c.max_consumers = 10;
    c.max_msgs = 1000000;
    c.max_bytes = 1 << 30;
    c.max_age_ns = 86400000000000ull;
    c.max_msgs_per_subject = 5;
    c.max_msg_size = 65536;
    c.discard = JR_DISCARD_NEW;
    c.storage = JR_STORAGE_MEMORY;
    c.replicas = 3;
    c.duplicate_window_ns = 60000000000ull;
    c.placement = &pl;
    c.deny_delete = 1;
    c.allow_rollup = 1;
    c.compression = JR_COMPRESS_LZ4;
    c.metadata = meta;
    c.nmetadata = 2;
    must(jr__stream_config_encode(&c, &b), "full");
    seed("fuzz_stream_config", 3, "full-v1", &b);
    *full = c;

    c.allow_direct = 1; /* version 2 */
    c.allow_rollup = 0;
    c.deny_purge = 1;
    c.sealed = 1;
    must(jr__stream_config_encode(&c, &b), "v2");
    seed("fuzz_stream_config", 3, "sealed-direct-v2", &b);

    jr_stream_config_init(&c);
    c.name = "KV_x";
    c.retention = JR_RETAIN_INTEREST;
    c.max_msgs_per_subject = 1;
    c.allow_direct = 1;
    must(jr__stream_config_encode(&c, &b), "interest");
    seed("fuzz_stream_config", 3, "interest-kv", &b);
}

static void stream_ops(const jr_stream_config *full)
{
    jr__buf b, cfg;
    jr__buf_init(&b, NULL);
    jr__buf_init(&cfg, NULL);
    jr__stream_op ops[6];
    memset(ops, 0, sizeof ops);

    jr__stream_op *o = &ops[0];
    o->type = JR__OP_PUBLISH;
    o->ts = 1700000000000000000;
    o->u.pub.subject = "orders.new";
    o->u.pub.subject_len = 10;
    o->u.pub.data = (const uint8_t *)"hello";
    o->u.pub.data_len = 5;
    must(jr__op_encode(o, &b), "publish");
    seed("fuzz_stream_op", 1, "publish", &b);

    jr__stream_op p = *o;
    static const char hdr[] = "NATS/1.0\r\nNats-Msg-Id: m1\r\n\r\n";
    p.u.pub.hdr = (const uint8_t *)hdr;
    p.u.pub.hdr_len = sizeof hdr - 1;
    p.u.pub.opts.flags = JR__PUB_MSG_ID | JR__PUB_EXPECT_STREAM | JR__PUB_EXPECT_LAST_SEQ |
                         JR__PUB_EXPECT_LAST_SUBJ_SEQ | JR__PUB_EXPECT_LAST_MSG_ID |
                         JR__PUB_ROLLUP_SUB | JR__PUB_TOKEN;
    p.u.pub.opts.msg_id = "m1";
    p.u.pub.opts.msg_id_len = 2;
    p.u.pub.opts.expected_stream = "ORDERS";
    p.u.pub.opts.expected_stream_len = 6;
    p.u.pub.opts.expected_last_seq = 41;
    p.u.pub.opts.expected_last_subject_seq = 7;
    p.u.pub.opts.expected_last_msg_id = "m0";
    p.u.pub.opts.expected_last_msg_id_len = 2;
    p.u.pub.opts.token = 0x1234567890abcdefull;
    must(jr__op_encode(&p, &b), "publish-opts");
    seed("fuzz_stream_op", 1, "publish-options", &b);
    p.u.pub.opts.flags = JR__PUB_ROLLUP_ALL | JR__PUB_NO_INTEREST;
    must(jr__op_encode(&p, &b), "publish-rollup");
    seed("fuzz_stream_op", 1, "publish-rollup-all", &b);

    o = &ops[1];
    o->type = JR__OP_DELETE;
    o->ts = 1700000000000000001;
    o->u.del.seq = 42;
    o->u.del.erase = 1;
    must(jr__op_encode(o, &b), "delete");
    seed("fuzz_stream_op", 1, "delete-erase", &b);

    o = &ops[2];
    o->type = JR__OP_PURGE;
    o->ts = 1700000000000000002;
    o->u.purge.filter = "orders.*";
    o->u.purge.filter_len = 8;
    o->u.purge.keep = 10;
    must(jr__op_encode(o, &b), "purge");
    seed("fuzz_stream_op", 1, "purge-filter-keep", &b);
    p = *o;
    p.u.purge.filter = NULL;
    p.u.purge.filter_len = 0;
    p.u.purge.keep = 0;
    p.u.purge.seq = 100;
    must(jr__op_encode(&p, &b), "purge-seq");
    seed("fuzz_stream_op", 1, "purge-seq", &b);

    o = &ops[3];
    o->type = JR__OP_TICK;
    o->ts = 1700000000000000003;
    must(jr__op_encode(o, &b), "tick");
    seed("fuzz_stream_op", 1, "tick", &b);

    o = &ops[4];
    o->type = JR__OP_REMOVE;
    o->ts = 1700000000000000004;
    o->u.remove.from = 3;
    o->u.remove.to = 9;
    must(jr__op_encode(o, &b), "remove");
    seed("fuzz_stream_op", 1, "remove", &b);

    o = &ops[5];
    must(jr__stream_config_encode(full, &cfg), "config");
    o->type = JR__OP_CONFIG;
    o->ts = 1700000000000000005;
    o->u.config.cfg = cfg.data;
    o->u.config.len = cfg.len;
    must(jr__op_encode(o, &b), "config-op");
    seed("fuzz_stream_op", 1, "config", &b);

    must(jr__op_encode_batch(ops, 6, &b), "batch");
    seed("fuzz_stream_op", 1, "batch-of-each", &b);
    must(jr__op_encode_batch(ops, 1, &b), "batch1");
    seed("fuzz_stream_op", 1, "batch-of-one", &b);
    jr__buf_free(&cfg);
}

static void consumer_configs(jr__buf *pull_out)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr_consumer_config c;
    jr_consumer_config_init(&c);
    c.durable_name = c.name = "worker";
    must(jr__consumer_config_encode(&c, &b), "pull");
    *pull_out = b;
    write_seed("fuzz_consumer_config", "durable-pull", b.data, b.len, -1);
    jr__buf_init(&b, NULL);

    static const int64_t backoff[] = {1000000000, 5000000000, 30000000000};
    static const char *filters[] = {"orders.eu.*", "orders.us.>"};
    static const char *groups[] = {"jobs"};
    jr_consumer_config_init(&c);
    c.name = "prio";
    c.description = "pinned pull consumer";
    c.metadata = meta;
    c.nmetadata = 2;
    c.deliver_policy = JR_DELIVER_BY_START_SEQ;
    c.opt_start_seq = 100;
    c.ack_wait_ns = 1000000000;
    c.max_deliver = 5;
    c.backoff_ns = backoff;
    c.nbackoff = 3;
    c.filter_subjects = filters;
    c.nfilter_subjects = 2;
    c.max_ack_pending = 50;
    c.max_batch = 10;
    c.max_expires_ns = 30000000000;
    c.max_bytes = 1 << 20;
    c.priority_groups = groups;
    c.npriority_groups = 1;
    c.priority_policy = JR_PRIORITY_PINNED_CLIENT;
    c.priority_timeout_ns = 60000000000;
    c.pause_until_ns = 1800000000000000000ull;
    must(jr__consumer_config_encode(&c, &b), "pinned");
    seed("fuzz_consumer_config", -1, "pinned-pull", &b);

    jr_consumer_config_init(&c);
    c.deliver_subject = "deliver.here";
    c.deliver_group = "q";
    c.deliver_policy = JR_DELIVER_BY_START_TIME;
    c.opt_start_time_ns = 1700000000000000000ull;
    c.ack_policy = JR_ACK_ALL;
    c.replay_policy = JR_REPLAY_ORIGINAL;
    c.rate_limit_bps = 1000000;
    c.sample_freq = "50%";
    c.max_waiting = 0;
    c.idle_heartbeat_ns = 5000000000;
    c.flow_control = 1;
    c.headers_only = 1;
    c.filter_subject = "orders.>";
    c.mem_storage = 1;
    c.num_replicas = 1;
    must(jr__consumer_config_encode(&c, &b), "push");
    seed("fuzz_consumer_config", -1, "ephemeral-push", &b);
}

/* Applies the encoded meta op in b to st (the next index), then writes it as a seed. */
static void apply_seed(jr__meta_state *st, const char *name, jr__buf *b)
{
    jr__meta_result res;
    must(jr__meta_apply(st, st->applied + 1, b->data, b->len, &res), name);
    seed("fuzz_meta_op", 2, name, b);
}

static void meta_ops(const jr_stream_config *full, const jr__buf *pull)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__consumer_cfg *cc = NULL;
    must(jr__consumer_config_decode(pull->data, pull->len, NULL, &cc), "consumer decode");
    static const char *peers[] = {"n1", "n2", "n3"};
    jr__meta_op op;
    jr__meta_state st;
    jr__meta_state_init(&st, NULL, 1000);
    for (size_t i = 0; i < 3; i++) {
        memset(&op, 0, sizeof op);
        op.type = JR__META_SERVER_INFO;
        op.server.name = peers[i];
        op.server.cluster = "east";
        op.server.tags = tags;
        op.server.ntags = i == 0 ? 2 : 0;
        must(jr__meta_op_encode(&op, &b), "server info");
        char name[32];
        snprintf(name, sizeof name, "server-info-%s", peers[i]);
        apply_seed(&st, name, &b);
    }

    memset(&op, 0, sizeof op);
    op.type = JR__META_STREAM_ADD;
    op.request_id = 7;
    op.origin = "n1";
    op.config = full;
    op.peers = peers;
    op.npeers = 3;
    op.created_ns = 1700000000000000000ull;
    must(jr__meta_op_encode(&op, &b), "stream add");
    apply_seed(&st, "stream-add", &b);

    op.type = JR__META_STREAM_UPDATE;
    op.created_ns = 0;
    must(jr__meta_op_encode(&op, &b), "stream update");
    apply_seed(&st, "stream-update", &b);

    memset(&op, 0, sizeof op);
    op.type = JR__META_CONSUMER_ADD;
    op.request_id = 9;
    op.origin = "n2";
    op.stream = "ORDERS";
    op.consumer_config = &cc->c;
    must(jr__meta_op_encode(&op, &b), "consumer add");
    apply_seed(&st, "consumer-add", &b);

    memset(&op, 0, sizeof op);
    op.type = JR__META_STREAM_CONVERGED;
    op.stream = "ORDERS";
    op.group = 1000;
    op.peers_at = 3;
    op.term = 2;
    op.commit_term = 2;
    op.commit = 40;
    must(jr__meta_op_encode(&op, &b), "converged");
    apply_seed(&st, "stream-converged", &b);

    /* the meta snapshot of the state so far (fuzz_snapshot 4), and it in a snapshot file
     * (fuzz_snapshot 0) */
    jr__buf snap;
    jr__buf_init(&snap, NULL);
    must(jr__meta_snapshot(&st, &snap), "meta snapshot");
    write_seed("fuzz_snapshot", "meta-state", snap.data, snap.len, 4);
    static const uint8_t conf[] = {1, 2, 3, 4};
    must(jr__snapfile_encode(&b, 1, st.applied, 2, conf, sizeof conf, snap.data, snap.len),
         "snapshot file");
    write_seed("fuzz_snapshot", "snapfile-meta-state", b.data, b.len, 0);
    jr__buf_free(&snap);
    jr__buf_reset(&b);

    memset(&op, 0, sizeof op);
    op.type = JR__META_CONSUMER_DELETE;
    op.stream = "ORDERS";
    op.consumer = "worker";
    must(jr__meta_op_encode(&op, &b), "consumer delete");
    apply_seed(&st, "consumer-delete", &b);

    memset(&op, 0, sizeof op);
    op.type = JR__META_STREAM_DELETE;
    op.stream = "ORDERS";
    must(jr__meta_op_encode(&op, &b), "stream delete");
    apply_seed(&st, "stream-delete", &b);
    jr__consumer_cfg_free(cc);
    jr__buf_free(&b);
    jr__meta_state_free(&st);
}

static void frame_seed(const char *name, jr__buf *b)
{
    must(jr__frame_end(b), name);
    seed("fuzz_frame", -1, name, b);
}

static void frames(void)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    const jr__id a = 0x1111, z = 0x2222;
    jr__msg m;

    jr__frame_begin(&b, a, z);
    memset(&m, 0, sizeof m);
    m.type = JR__MSG_VOTE;
    m.group = 5;
    m.from = a;
    m.to = z;
    m.term = 3;
    m.u.vote.last_index = 10;
    m.u.vote.last_term = 2;
    jr__frame_add(&b, &m);
    frame_seed("vote", &b);

    static const uint8_t d1[] = "first entry", d2[] = "second";
    const jr__entry ents[] = {
        {.term = 3, .index = 11, .type = JR__ENTRY_NORMAL, .len = 11, .data = d1},
        {.term = 3, .index = 12, .type = JR__ENTRY_NOOP, .len = 0, .data = NULL},
        {.term = 4, .index = 13, .type = JR__ENTRY_NORMAL, .len = 6, .data = d2}};
    jr__frame_begin(&b, a, z);
    memset(&m, 0, sizeof m);
    m.type = JR__MSG_APPEND;
    m.group = 5;
    m.from = a;
    m.to = z;
    m.term = 4;
    m.u.append.prev_index = 10;
    m.u.append.prev_term = 2;
    m.u.append.commit = 9;
    m.u.append.n = 3;
    m.u.append.entries = ents;
    jr__frame_add(&b, &m);
    memset(&m, 0, sizeof m);
    m.type = JR__MSG_HEARTBEAT;
    m.group = 6;
    m.from = a;
    m.to = z;
    m.term = 4;
    m.u.heartbeat.commit = 12;
    jr__frame_add(&b, &m);
    frame_seed("append-and-heartbeat", &b);

    const jr__hb_item items[] = {{1, 4, 12}, {2, 4, 0}, {9, 0, 0}};
    jr__frame_begin(&b, a, z);
    jr__frame_add_hb(&b, JR__MSG_NODE_HB, 77, items, 3);
    frame_seed("node-heartbeat", &b);

    static const uint8_t life[JR__EXT_LIFE_LEN] = {1, 2, 3, 4, 5, 6, 7, 8};
    jr__frame_begin(&b, a, z);
    jr__frame_add_ext(&b, JR__EXT_LIFE, 0, life, sizeof life);
    jr__frame_add_request(&b, 42, 1, "publish payload", 15);
    frame_seed("life-and-request", &b);

    jr__frame_begin(&b, z, a);
    jr__frame_add_response(&b, 42, JR_ENOTFOUND, "no such stream", 14);
    jr__frame_add_response(&b, 43, 0, NULL, 0);
    frame_seed("responses", &b);

    /* a follower's word on its state machines (FSM extension) beside its heartbeat answer */
    const jr__hb_item resp[] = {{1, 4, 12}};
    const jr__fsm_item fsm[] = {
        {5, 4, JR__FSM_FAILED}, {6, 4, JR__FSM_REBUILDING}, {300, 2, JR__FSM_WHOLE}};
    jr__frame_begin(&b, z, a);
    jr__frame_add_hb(&b, JR__MSG_NODE_HB_RESP, 77, resp, 1);
    jr__frame_add_fsm(&b, fsm, 3);
    frame_seed("fsm-report", &b);

    /* a restarted replica's VOUCH, and answers: one whose latest configuration (index 10) lies
     * above its commit (9), with the configuration in effect there (index 6), and one from a
     * server holding nothing of the group */
    const jr__conf k3 = {3, {{1, 1}, {2, 1}, {3, 0}}}, k2 = {2, {{1, 1}, {2, 1}}};
    uint8_t c3[64], c2[64];
    size_t c3_len = jr__conf_encode(&k3, c3), c2_len = jr__conf_encode(&k2, c2);
    static const uint8_t none[] = {0};
    jr__frame_begin(&b, a, z);
    memset(&m, 0, sizeof m);
    m.type = JR__MSG_VOUCH;
    m.group = 5;
    m.from = a;
    m.to = z;
    m.term = 2;
    m.u.vouch.last_index = 0;
    jr__frame_add(&b, &m);
    frame_seed("vouch", &b);
    jr__frame_begin(&b, z, a);
    memset(&m, 0, sizeof m);
    m.type = JR__MSG_VOUCH_RESP;
    m.group = 5;
    m.from = z;
    m.to = a;
    m.term = 3;
    m.flags = JR__MF_DURABLE;
    m.u.vouch_resp.last_index = 12;
    m.u.vouch_resp.last_term = 3;
    m.u.vouch_resp.commit = 9;
    m.u.vouch_resp.conf_index = 10;
    m.u.vouch_resp.conf = c3;
    m.u.vouch_resp.conf_len = (uint32_t)c3_len;
    m.u.vouch_resp.cconf_index = 6;
    m.u.vouch_resp.cconf = c2;
    m.u.vouch_resp.cconf_len = (uint32_t)c2_len;
    jr__frame_add(&b, &m);
    memset(&m, 0, sizeof m);
    m.type = JR__MSG_VOUCH_RESP;
    m.group = 6;
    m.from = z;
    m.to = a;
    m.term = 1;
    m.u.vouch_resp.unfloored = 1;
    m.u.vouch_resp.conf = none;
    m.u.vouch_resp.conf_len = sizeof none;
    jr__frame_add(&b, &m);
    frame_seed("vouch-answers", &b);
    jr__buf_free(&b);
}

/* fuzz_block decodes with the key of master {7} and stream "F" (fuzz_block.c). */
static void blocks(void)
{
    static const uint8_t master[32] = {7};
    jr__blk_key key;
    must(jr__blk_derive_key(master, "F", &key), "block key");
    static const uint8_t hdr[] = "NATS/1.0\r\nA: b\r\n\r\n";
    const jr__srec recs[] = {
        {.type = JR__SREC_MSG,
         .seq = 1,
         .ts = 1700000000000000000,
         .subj = "orders.new",
         .subj_len = 10,
         .data = (const uint8_t *)"first",
         .data_len = 5},
        {.type = JR__SREC_MSG,
         .seq = 2,
         .ts = 1700000000000000001,
         .subj = "orders.eu",
         .subj_len = 9,
         .hdr = hdr,
         .hdr_len = sizeof hdr - 1,
         .data = (const uint8_t *)"second message, long enough for lz4 to find a match: "
                                  "second message, long enough for lz4 to find a match",
         .data_len = 104},
        {.type = JR__SREC_DEL, .seq = 1, .ts = 1},
        {.type = JR__SREC_MSG,
         .seq = 3,
         .ts = 1700000000000000002,
         .subj = "orders.new",
         .subj_len = 10,
         .data = (const uint8_t *)"third",
         .data_len = 5},
        {.type = JR__SREC_DELSUBJ, .seq = 3, .subj = "orders.eu", .subj_len = 9},
    };
    jr__buf plain, b;
    jr__buf_init(&plain, NULL);
    jr__buf_init(&b, NULL);
    for (size_t i = 0; i < sizeof recs / sizeof *recs; i++) {
        size_t n = jr__srec_size(recs[i].subj_len, recs[i].hdr_len, recs[i].data_len);
        must(jr__buf_reserve(&plain, n), "records");
        jr__srec_encode(plain.data + plain.len, &recs[i]);
        plain.len += n;
    }
    static const struct {
        const char *name;
        int sealed, flags;
    } kinds[] = {{"open-plain", 0, 0},
                 {"open-encrypted", 0, JR__BLKF_ENC},
                 {"sealed-plain", 1, 0},
                 {"sealed-lz4", 1, JR__BLKF_LZ4},
                 {"sealed-lz4-encrypted", 1, JR__BLKF_LZ4 | JR__BLKF_ENC}};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        int rc = kinds[i].sealed
                     ? jr__blk_seal(plain.data, plain.len, 1, kinds[i].flags, &key, &b)
                     : jr__blk_write_open(plain.data, plain.len, 1, kinds[i].flags, &key, &b);
        must(rc, kinds[i].name);
        seed("fuzz_block", -1, kinds[i].name, &b);
    }
    jr__buf_free(&plain);
    jr__buf_free(&b);
}

/* fuzz_consumer's input: mode byte (0 entry, 1 snapshot), policy byte (its policy_from; 0x0a:
 * explicit acks, ack wait 2 us, max_deliver -1), then the body without its checksum, which the
 * target appends. */
static void consumer_seed(const char *name, uint8_t mode, const jr__buf *b)
{
    uint8_t *p = malloc(b->len + 1);
    if (!p) exit(1);
    p[0] = 0x0a;
    memcpy(p + 1, b->data, b->len - 8);
    write_seed("fuzz_consumer", name, p, b->len - 8 + 1, mode);
    free(p);
}

static void consumer_state(void)
{
    const jr__crec recs[] = {
        {.type = JR__COP_DELIVERED, .sseq = 1, .dseq = 1, .dc = 1, .ts = 1000},
        {.type = JR__COP_DELIVERED, .sseq = 2, .dseq = 2, .dc = 1, .ts = 1001},
        {.type = JR__COP_DELIVERED, .sseq = 4, .dseq = 3, .dc = 1, .ts = 1002},
        {.type = JR__COP_ACK, .sseq = 1, .dseq = 1, .ts = 1003},
        {.type = JR__COP_NAK, .sseq = 2, .delay_ns = 500, .ts = 1004},
        {.type = JR__COP_PROGRESS, .sseq = 4, .ts = 1005},
        {.type = JR__COP_DELIVERED, .sseq = 2, .dseq = 4, .dc = 2, .ts = 1600},
    };
    jr__buf b;
    jr__buf_init(&b, NULL);
    must(jr__cop_encode(recs, sizeof recs / sizeof *recs, &b), "consumer entry");
    consumer_seed("entry-deliveries-acks", 0, &b);
    jr__buf_reset(&b);
    const jr__crec tail[] = {{.type = JR__COP_TERM, .sseq = 4, .ts = 1700},
                             {.type = JR__COP_SKIP, .sseq = 9},
                             {.type = JR__COP_MAXDELIV, .sseq = 2}};
    must(jr__cop_encode(tail, sizeof tail / sizeof *tail, &b), "consumer entry 2");
    consumer_seed("entry-term-skip-maxdeliver", 0, &b);

    jr__cpolicy p;
    memset(&p, 0, sizeof p);
    p.ack_policy = JR_ACK_EXPLICIT;
    p.ack_wait_ns = 2000;
    p.max_deliver = -1;
    jr__cstate st;
    must(jr__cstate_init(&st, NULL, &p), "consumer state");
    jr__capply out;
    for (size_t i = 0; i < sizeof recs / sizeof *recs; i++)
        must(jr__cstate_apply(&st, &recs[i], &out), "consumer apply");
    jr__buf_reset(&b);
    must(jr__cstate_snapshot(&st, &b), "consumer snapshot");
    consumer_seed("snapshot-pending-redelivered", 1, &b);
    jr__cstate_free(&st);
    jr__buf_free(&b);
}

/* wal_dir/released (lib/node/released.c) with no record, one, and three of several sizes */
static void released(void)
{
    static const char *const names[] = {"n0", "n1", "n2", "n3", "n4"};
    jr__map m;
    jr__map_init(&m, NULL);
    jr__buf b;
    jr__buf_init(&b, NULL);
    static const char *const seeds[] = {"none", "one", "three"};
    /* none; then group 7; then groups 8 and 9 besides */
    for (unsigned k = 0, id = 7; k < 3; k++) {
        for (; id < 6 + 2 * k; id++) {
            jr__conf c = {.n = 0};
            for (unsigned i = 0; i < 2 + id % 4; i++)
                c.m[c.n++] = (jr__member){.id = jr__peer_id(names[i]), .voter = i != 3};
            jr__released *r = malloc(sizeof *r + JR__RELEASED_CONF_MAX);
            if (!r) must(JR_ENOMEM, "released");
            r->commit = 1000 + id;
            r->conf_index = 900 + id;
            r->conf_len = (uint32_t)jr__conf_encode(&c, r->conf);
            must(jr__map_put(&m, id, r), "released");
        }
        must(jr__released_encode(&m, &b), "released");
        write_seed("fuzz_released", seeds[k], b.data, b.len, -1);
        jr__buf_reset(&b);
    }
    for (size_t i = 0; i < m.cap; i++)
        if (m.slots[i].key) free(m.slots[i].val);
    jr__map_free(&m);
    jr__buf_free(&b);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds <corpus root>\n");
        return 2;
    }
    root = argv[1];
    jr_stream_config full;
    jr__buf pull;
    frames();
    blocks();
    consumer_state();
    stream_configs(&full);
    stream_ops(&full);
    consumer_configs(&pull);
    meta_ops(&full, &pull);
    jr__buf_free(&pull);
    released();
    return 0;
}
