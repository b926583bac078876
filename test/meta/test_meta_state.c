/* The meta group's state machine: ops round-trip and are decoded strictly; applying add,
 * idempotent re-add, conflicting add, overlap, update and delete follows JetStream's rules and a
 * refused op changes nothing; two replicas applying the same log write byte-identical
 * snapshots; snapshot → restore → identical, with strict restore; the desired-state diff; and
 * no allocation failure ever leaves half an op applied. Randomized tests print their seed (set
 * JR_TEST_SEED to replay). */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_op.h"
#include "meta/meta_state.h"
#include "util/checksum.h"
#include "util/rand.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define FIRST_GROUP 1000

static uint64_t test_seed(void)
{
    const char *s = getenv("JR_TEST_SEED");
    return s ? strtoull(s, NULL, 0) : 20240611;
}

/* ---------------------------------------------------------------------------------------------
 * Builders
 */
static jr_stream_config scfg(const char *name, const char *const *subjects, size_t n, int replicas)
{
    jr_stream_config c;
    jr_stream_config_init(&c);
    c.name = name;
    c.subjects = subjects;
    c.nsubjects = n;
    c.replicas = replicas;
    return c;
}

static jr__meta_op op_server(const char *name, const char *const *tags, size_t ntags)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_SERVER_INFO;
    op.server.name = name;
    op.server.cluster = "east";
    op.server.tags = tags;
    op.server.ntags = ntags;
    op.server.capacity_bytes = 100ULL << 30;
    op.server.max_assets = 1000;
    return op;
}

static jr__meta_op op_stream(uint8_t type, const jr_stream_config *c, const char *const *peers,
                             size_t npeers)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = type;
    op.config = c;
    op.peers = peers;
    op.npeers = npeers;
    return op;
}

static jr__meta_op op_delete(const char *name)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_STREAM_DELETE;
    op.stream = name;
    return op;
}

static jr__meta_op op_converged(const char *name, uint64_t group, uint64_t peers_at)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_STREAM_CONVERGED;
    op.stream = name;
    op.group = group;
    op.peers_at = peers_at;
    return op;
}

static void encode(const jr__meta_op *op, jr__buf *b)
{
    jr__buf_reset(b);
    ck_assert_int_eq(jr__meta_op_encode(op, b), 0);
}

/* Encodes op and applies it at index through the byte path; returns the result status. */
static int apply(jr__meta_state *st, uint64_t index, const jr__meta_op *op, jr__meta_result *res)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    encode(op, &b);
    ck_assert_int_eq(jr__meta_apply(st, index, b.data, b.len, res), 0);
    ck_assert_uint_eq(st->applied, index);
    jr__buf_free(&b);
    return res->status;
}

static void snapshot(const jr__meta_state *st, jr__buf *b)
{
    jr__buf_reset(b);
    ck_assert_int_eq(jr__meta_snapshot(st, b), 0);
}

static const char *peers3[] = {"n1", "n2", "n3"};
static const char *peers234[] = {"n2", "n3", "n4"};
static const char *orders_subj[] = {"orders.>"};
static const char *tags_az1[] = {"az:1", "ssd"};

/* A state with servers n1..n5 known, applied up to index 5. */
static void cluster(jr__meta_state *st)
{
    static const char *names[] = {"n1", "n2", "n3", "n4", "n5"};
    jr__meta_state_init(st, NULL, FIRST_GROUP);
    jr__meta_result res;
    for (size_t i = 0; i < N(names); i++) {
        jr__meta_op op = op_server(names[i], tags_az1, N(tags_az1));
        ck_assert_int_eq(apply(st, i + 1, &op, &res), 0);
        ck_assert_int_eq(res.changed, 1);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Ops: encoding
 */
static void roundtrip(const jr__meta_op *op)
{
    jr__buf a, b;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    encode(op, &a);
    jr__meta_op d;
    ck_assert_int_eq(jr__meta_op_decode(a.data, a.len, NULL, &d), 0);
    ck_assert_uint_eq(d.type, op->type);
    ck_assert_uint_eq(d.request_id, op->request_id);
    if (op->request_id)
        ck_assert_str_eq(d.origin, op->origin);
    else
        ck_assert_ptr_null(d.origin);
    switch (op->type) {
    case JR__META_SERVER_INFO:
        ck_assert_str_eq(d.server.name, op->server.name);
        ck_assert_str_eq(d.server.cluster, op->server.cluster);
        ck_assert_uint_eq(d.server.ntags, op->server.ntags);
        for (size_t i = 0; i < d.server.ntags; i++)
            ck_assert_str_eq(d.server.tags[i], op->server.tags[i]);
        ck_assert_uint_eq(d.server.capacity_bytes, op->server.capacity_bytes);
        ck_assert_uint_eq(d.server.max_assets, op->server.max_assets);
        break;
    case JR__META_STREAM_ADD:
    case JR__META_STREAM_UPDATE:
        ck_assert(jr__stream_config_equal(d.config, op->config));
        ck_assert_ptr_eq(d.config, &d.cfg->c);
        ck_assert_uint_eq(d.npeers, op->npeers);
        for (size_t i = 0; i < d.npeers; i++) ck_assert_str_eq(d.peers[i], op->peers[i]);
        ck_assert_uint_eq(d.created_ns, op->created_ns);
        /* version 2 exactly when a creation time is carried */
        ck_assert_uint_eq(a.data[0], op->created_ns ? 2 : 1);
        break;
    case JR__META_STREAM_CONVERGED:
        ck_assert_str_eq(d.stream, op->stream);
        ck_assert_uint_eq(d.group, op->group);
        ck_assert_uint_eq(d.peers_at, op->peers_at);
        ck_assert_uint_eq(a.data[0], 1);
        break;
    default:
        ck_assert_str_eq(d.stream, op->stream);
    }
    encode(&d, &b); /* canonical: the decoded op encodes to the same bytes */
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_int_eq(memcmp(a.data, b.data, a.len), 0);
    jr__meta_op_free(&d);
    jr__meta_op_free(&d); /* idempotent */
    jr__buf_free(&a);
    jr__buf_free(&b);
}

START_TEST(every_op_round_trips_canonically)
{
    static const char *many_tags[JR__META_MAX_TAGS];
    static char tagbuf[JR__META_MAX_TAGS][16];
    for (int i = 0; i < JR__META_MAX_TAGS; i++) {
        snprintf(tagbuf[i], sizeof tagbuf[i], "t%d", i);
        many_tags[i] = tagbuf[i];
    }
    jr__meta_op op = op_server("n1", tags_az1, N(tags_az1));
    roundtrip(&op);
    op.server.ntags = 0;
    op.server.tags = NULL;
    op.server.capacity_bytes = UINT64_MAX;
    op.server.max_assets = UINT32_MAX;
    roundtrip(&op);
    op = op_server("n1", many_tags, JR__META_MAX_TAGS);
    op.request_id = UINT64_MAX;
    op.origin = "n1";
    roundtrip(&op);

    static const char *subj[] = {"orders.*", "refunds.>"};
    jr_stream_config c = scfg("ORDERS", subj, N(subj), 3);
    c.description = "all orders";
    c.max_bytes = 1 << 30;
    op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    op.request_id = 77;
    op.origin = "n5";
    roundtrip(&op);
    op.created_ns = 1704067200123456789ull; /* placed by a meta leader: its wall clock */
    roundtrip(&op);
    op.created_ns = UINT64_MAX;
    roundtrip(&op);
    op.created_ns = 0;
    op.npeers = 0; /* a request, not yet placed */
    op.peers = NULL;
    roundtrip(&op);
    op = op_stream(JR__META_STREAM_UPDATE, &c, peers234, 3);
    roundtrip(&op);
    op = op_delete("ORDERS");
    op.request_id = 1;
    op.origin = "n2";
    roundtrip(&op);
    op = op_converged("ORDERS", FIRST_GROUP, 17);
    roundtrip(&op);
    op.request_id = 9;
    op.origin = "n3";
    op.group = UINT64_MAX;
    op.peers_at = UINT64_MAX;
    roundtrip(&op);
}
END_TEST

START_TEST(the_encoder_refuses_what_the_decoder_would_reject)
{
    static const char *dup_peers[] = {"n1", "n1", "n2"};
    static const char *six[] = {"a", "b", "c", "d", "e", "f"};
    static const char *bad_name[] = {"n 1"};
    static const char *empty_name[] = {""};
    static const char *dup_tags[] = {"ssd", "ssd"};
    jr_stream_config ok = scfg("ORDERS", orders_subj, 1, 3);
    jr_stream_config bad = ok;
    bad.max_age_ns = 5; /* below 100ms */
    jr_stream_config r1 = scfg("ORDERS", orders_subj, 1, 1);
    struct {
        const char *what;
        jr__meta_op op;
    } cases[] = {
        {"invalid config", op_stream(JR__META_STREAM_ADD, &bad, peers3, 3)},
        {"no config", op_stream(JR__META_STREAM_ADD, NULL, peers3, 3)},
        {"duplicate peers", op_stream(JR__META_STREAM_ADD, &ok, dup_peers, 3)},
        {"six peers", op_stream(JR__META_STREAM_UPDATE, &ok, six, 6)},
        {"peer with a space", op_stream(JR__META_STREAM_ADD, &r1, bad_name, 1)},
        {"empty peer", op_stream(JR__META_STREAM_ADD, &r1, empty_name, 1)},
        {"server without a name", op_server(NULL, NULL, 0)},
        {"server with a space", op_server("n 1", NULL, 0)},
        {"duplicate tags", op_server("n1", dup_tags, 2)},
        {"too many tags", op_server("n1", dup_tags, JR__META_MAX_TAGS + 1)},
        {"delete a stream named a.b", op_delete("a.b")},
        {"delete without a name", op_delete(NULL)},
        {"unknown type", op_delete("X")},
        {"request id without origin", op_delete("X")},
        {"origin without request id", op_delete("X")},
        {"a creation time on an update", op_stream(JR__META_STREAM_UPDATE, &ok, peers3, 3)},
        {"converged without a group", op_converged("X", 0, 5)},
        {"converged without peers_at", op_converged("X", 9, 0)},
        {"converged for a stream named a.b", op_converged("a.b", 9, 5)},
    };
    cases[12].op.type = JR__META_OP_MAX + 1;
    cases[13].op.request_id = 5;
    cases[14].op.origin = "n1";
    cases[15].op.created_ns = 5;
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__buf_put(&b, "x", 1);
    for (size_t i = 0; i < N(cases); i++) {
        int rc = jr__meta_op_encode(&cases[i].op, &b);
        ck_assert_msg(rc == JR_EINVAL, "%s: %d", cases[i].what, rc);
        ck_assert_msg(b.len == 1 && b.err == 0, "%s appended bytes", cases[i].what);
    }
    jr__buf_free(&b);
}
END_TEST

/* Recomputes the trailing checksum of an encoded op (or snapshot) after a mutation. */
static void reseal(uint8_t *p, size_t len)
{
    jr__put_u64(p + len - 8, jr__xxh3(p, len - 8));
}

/* Encodings of one op of each kind, concatenated into list (lengths in lens). */
static size_t sample_ops(jr__buf *list, size_t *lens)
{
    static const char *subj[] = {"orders.*", "refunds.>"};
    static jr_stream_config c;
    c = scfg("ORDERS", subj, N(subj), 3);
    jr__meta_op ops[5] = {
        op_server("n1", tags_az1, N(tags_az1)),
        op_stream(JR__META_STREAM_ADD, &c, peers3, 3),
        op_stream(JR__META_STREAM_UPDATE, &c, peers234, 3),
        op_delete("ORDERS"),
        op_converged("ORDERS", 300, 12),
    };
    ops[1].request_id = 300;
    ops[1].origin = "n4";
    ops[1].created_ns = 1704067200000000000ull; /* version 2 */
    jr__buf_reset(list);
    for (size_t i = 0; i < 5; i++) {
        size_t before = list->len;
        ck_assert_int_eq(jr__meta_op_encode(&ops[i], list), 0);
        lens[i] = list->len - before;
    }
    return 5;
}

START_TEST(every_truncation_and_extension_of_an_op_is_rejected)
{
    jr__buf list;
    jr__buf_init(&list, NULL);
    size_t lens[5];
    size_t n = sample_ops(&list, lens);
    const uint8_t *p = list.data;
    for (size_t k = 0; k < n; p += lens[k], k++) {
        for (size_t len = 0; len < lens[k]; len++) {
            uint8_t *d = malloc(len ? len : 1);
            memcpy(d, p, len);
            jr__meta_op op;
            ck_assert_msg(jr__meta_op_decode(d, len, NULL, &op) == JR_ECORRUPT, "op %zu cut at %zu",
                          k, len);
            /* even with the checksum made to match what is left */
            if (len >= 10) {
                reseal(d, len);
                int rc = jr__meta_op_decode(d, len, NULL, &op);
                ck_assert_msg(rc == JR_ECORRUPT, "op %zu cut at %zu, resealed: %d", k, len, rc);
            }
            free(d);
        }
        /* a trailing byte, resealed */
        uint8_t *d = malloc(lens[k] + 1);
        memcpy(d, p, lens[k] - 8);
        d[lens[k] - 8] = 0;
        reseal(d, lens[k] + 1);
        jr__meta_op op;
        ck_assert_int_eq(jr__meta_op_decode(d, lens[k] + 1, NULL, &op), JR_ECORRUPT);
        free(d);
    }
    jr__buf_free(&list);
}
END_TEST

/* Mutates then reseals valid encodings: each either fails to decode, or decodes to an op that
 * re-encodes to the same bytes (never a crash, a leak or an out-of-bounds read under ASan). */
START_TEST(resealed_mutations_decode_canonically_or_fail)
{
    uint64_t seed = test_seed();
    jr__rand r;
    jr__rand_seed(&r, seed);
    jr__buf list, again;
    jr__buf_init(&list, NULL);
    jr__buf_init(&again, NULL);
    size_t lens[5], offs[5];
    size_t nops = sample_ops(&list, lens);
    for (size_t k = 0, at = 0; k < nops; at += lens[k], k++) offs[k] = at;
    int decoded = 0;
    for (int it = 0; it < 20000; it++) {
        size_t k = (size_t)jr__rand_below(&r, nops);
        size_t len = lens[k];
        uint8_t *d = malloc(len);
        memcpy(d, list.data + offs[k], len);
        int muts = 1 + (int)jr__rand_below(&r, 2);
        for (int m = 0; m < muts; m++) {
            size_t at = (size_t)jr__rand_below(&r, len - 8);
            if (jr__rand_below(&r, 2))
                d[at] ^= (uint8_t)(1u << jr__rand_below(&r, 8));
            else
                d[at] = (uint8_t)jr__rand_next(&r);
        }
        reseal(d, len);
        jr__meta_op op;
        int rc = jr__meta_op_decode(d, len, NULL, &op);
        ck_assert_msg(rc == 0 || rc == JR_ECORRUPT || rc == JR_EVERSION,
                      "seed %" PRIu64 " (JR_TEST_SEED) iteration %d: rc %d", seed, it, rc);
        if (rc == 0) {
            decoded++;
            jr__buf_reset(&again);
            ck_assert_int_eq(jr__meta_op_encode(&op, &again), 0);
            ck_assert_msg(again.len == len && memcmp(again.data, d, len) == 0,
                          "seed %" PRIu64 " iteration %d: not canonical", seed, it);
            jr__meta_op_free(&op);
        }
        free(d);
    }
    ck_assert_int_gt(decoded, 0);
    jr__buf_free(&list);
    jr__buf_free(&again);
}
END_TEST

START_TEST(random_bytes_are_rejected)
{
    uint64_t seed = test_seed() + 1;
    jr__rand r;
    jr__rand_seed(&r, seed);
    uint8_t d[300];
    for (int it = 0; it < 20000; it++) {
        size_t len = (size_t)jr__rand_below(&r, sizeof d);
        for (size_t i = 0; i < len; i++) d[i] = (uint8_t)jr__rand_next(&r);
        if (len > 2 && it % 2) {
            d[0] = JR__META_OP_VERSION;
            d[1] = (uint8_t)(1 + jr__rand_below(&r, JR__META_OP_MAX));
        }
        jr__meta_op op;
        int rc = jr__meta_op_decode(d, len, NULL, &op);
        ck_assert_msg(rc == JR_ECORRUPT, "seed %" PRIu64 " iteration %d: op rc %d", seed, it, rc);
        jr__meta_state st;
        jr__meta_state_init(&st, NULL, 1);
        rc = jr__meta_restore(&st, d, len);
        ck_assert_msg(rc == JR_ECORRUPT, "seed %" PRIu64 " iteration %d: snap rc %d", seed, it, rc);
        jr__meta_state_free(&st);
    }
}
END_TEST

/* Hand-made op bodies, sealed with a valid checksum. */
struct op_case {
    const char *what;
    uint8_t bytes[40];
    size_t len;
    int want;
};
#define OPB(what, want, ...)                                                                       \
    {                                                                                              \
        what, {__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__}), want                                \
    }
static const struct op_case op_cases[] = {
    OPB("delete", 0, 1, 4, 0, 0, 1, 'X'),
    OPB("delete with a reply route", 0, 1, 4, 7, 2, 'n', '1', 1, 'X'),
    OPB("version 3", JR_EVERSION, 3, 4, 0, 0, 1, 'X'),
    OPB("version 2 other than an add", JR_ECORRUPT, 2, 4, 0, 0, 1, 'X'),
    OPB("version 0", JR_EVERSION, 0, 4, 0, 0, 1, 'X'),
    OPB("type 0", JR_EVERSION, 1, 0, 0, 0, 1, 'X'),
    OPB("type 12 (reserved)", JR_EVERSION, 1, 12, 0, 0, 1, 'X'),
    OPB("consumer add, truncated", JR_ECORRUPT, 1, 6, 0, 0, 1, 'X'),
    OPB("converged", 0, 1, 5, 0, 0, 1, 'X', 9, 7, 4, 3, 30),
    OPB("converged, no floor", 0, 1, 5, 0, 0, 1, 'X', 9, 7, 0, 0, 0),
    OPB("converged, floor entry of a later term", JR_ECORRUPT, 1, 5, 0, 0, 1, 'X', 9, 7, 3, 4, 30),
    OPB("converged, group 0", JR_ECORRUPT, 1, 5, 0, 0, 1, 'X', 0, 7, 4, 3, 30),
    OPB("converged, peers_at 0", JR_ECORRUPT, 1, 5, 0, 0, 1, 'X', 9, 0, 4, 3, 30),
    OPB("converged, bad stream name", JR_ECORRUPT, 1, 5, 0, 0, 1, '*', 9, 7, 4, 3, 30),
    OPB("converged, version 2", JR_ECORRUPT, 2, 5, 0, 0, 1, 'X', 9, 7, 4, 3, 30),
    OPB("converged, without its floor", JR_ECORRUPT, 1, 5, 0, 0, 1, 'X', 9, 7),
    OPB("converged, trailing byte", JR_ECORRUPT, 1, 5, 0, 0, 1, 'X', 9, 7, 4, 3, 30, 0),
    OPB("request id without origin", JR_ECORRUPT, 1, 4, 7, 0, 1, 'X'),
    OPB("origin without request id", JR_ECORRUPT, 1, 4, 0, 2, 'n', '1', 1, 'X'),
    OPB("origin with a space", JR_ECORRUPT, 1, 4, 7, 2, 'n', ' ', 1, 'X'),
    OPB("overlong request id", JR_ECORRUPT, 1, 4, 0x87, 0x00, 2, 'n', '1', 1, 'X'),
    OPB("stream name with a dot", JR_ECORRUPT, 1, 4, 0, 0, 3, 'a', '.', 'b'),
    OPB("stream name with NUL", JR_ECORRUPT, 1, 4, 0, 0, 2, 'a', 0),
    OPB("empty stream name", JR_ECORRUPT, 1, 4, 0, 0, 0),
    OPB("trailing byte", JR_ECORRUPT, 1, 4, 0, 0, 1, 'X', 0),
    OPB("server", 0, 1, 1, 0, 0, 2, 'n', '1', 1, 'e', 1, 3, 's', 's', 'd', 0, 0),
    OPB("server, duplicate tags", JR_ECORRUPT, 1, 1, 0, 0, 2, 'n', '1', 1, 'e', 2, 1, 'a', 1, 'a',
        0, 0),
    OPB("server, empty cluster", JR_ECORRUPT, 1, 1, 0, 0, 2, 'n', '1', 0, 0, 0, 0),
    OPB("server, empty tag", JR_ECORRUPT, 1, 1, 0, 0, 2, 'n', '1', 1, 'e', 1, 0, 0, 0),
    OPB("server, tag count past the bytes", JR_ECORRUPT, 1, 1, 0, 0, 2, 'n', '1', 1, 'e', 9, 0, 0),
    OPB("server, max_assets = 2^32", JR_ECORRUPT, 1, 1, 0, 0, 2, 'n', '1', 1, 'e', 0, 0, 0x80, 0x80,
        0x80, 0x80, 0x10),
    OPB("server, max_assets = 2^32 - 1", 0, 1, 1, 0, 0, 2, 'n', '1', 1, 'e', 0, 0, 0xff, 0xff, 0xff,
        0xff, 0x0f),
    OPB("add, empty config", JR_ECORRUPT, 1, 2, 0, 0, 0, 0),
    OPB("add, config of garbage", JR_ECORRUPT, 1, 2, 0, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0),
};

START_TEST(each_op_decoding_rule_is_enforced)
{
    const struct op_case *c = &op_cases[_i];
    uint8_t d[64];
    memcpy(d, c->bytes, c->len);
    reseal(d, c->len + 8);
    jr__meta_op op;
    int rc = jr__meta_op_decode(d, c->len + 8, NULL, &op);
    ck_assert_msg(rc == c->want, "%s: got %d, want %d", c->what, rc, c->want);
    jr__meta_op_free(&op);
}
END_TEST

START_TEST(an_embedded_config_is_checked_with_its_own_checksum_and_peers_with_the_names_rule)
{
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    jr__buf b;
    jr__buf_init(&b, NULL);
    encode(&op, &b);
    /* layout: version, type, request id 0, origin "", config length, config..., peers */
    ck_assert_uint_eq(b.data[4], b.len - 8 - 5 - 1 - 9); /* one-byte length, 3 peers of 3 */
    size_t cfg_at = 5, cfg_len = b.data[4];
    /* flip a byte of the embedded config and fix only the outer checksum: the config's own
     * checksum catches it */
    b.data[cfg_at + 3] ^= 1;
    reseal(b.data, b.len);
    jr__meta_op d;
    ck_assert_int_eq(jr__meta_op_decode(b.data, b.len, NULL, &d), JR_ECORRUPT);
    b.data[cfg_at + 3] ^= 1;
    /* an embedded config of an unknown version (intact) is JR_EVERSION */
    b.data[cfg_at] = 3;
    reseal(b.data + cfg_at, cfg_len);
    reseal(b.data, b.len);
    ck_assert_int_eq(jr__meta_op_decode(b.data, b.len, NULL, &d), JR_EVERSION);
    b.data[cfg_at] = 1;
    reseal(b.data + cfg_at, cfg_len);
    /* duplicate peers: "n1","n2","n3" → "n1","n2","n1" */
    ck_assert_uint_eq(b.data[b.len - 9], '3');
    b.data[b.len - 9] = '1';
    reseal(b.data, b.len);
    ck_assert_int_eq(jr__meta_op_decode(b.data, b.len, NULL, &d), JR_ECORRUPT);
    b.data[b.len - 9] = '3';
    reseal(b.data, b.len);
    ck_assert_int_eq(jr__meta_op_decode(b.data, b.len, NULL, &d), 0);
    jr__meta_op_free(&d);
    jr__buf_free(&b);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Apply
 */
START_TEST(add_creates_an_assignment_with_a_fresh_group)
{
    jr__meta_state st;
    cluster(&st);
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    op.request_id = 42;
    op.origin = "n5";
    jr__meta_result res;
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    ck_assert_uint_eq(res.type, JR__META_STREAM_ADD);
    ck_assert_uint_eq(res.request_id, 42);
    ck_assert_str_eq(res.origin, "n5");
    ck_assert_str_eq(res.stream, "ORDERS");
    ck_assert_str_eq(res.msg, "");
    ck_assert_int_eq(res.changed, 1);
    const jr__meta_stream *s = res.assignment;
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s->name, "ORDERS");
    ck_assert_uint_eq(s->group, FIRST_GROUP);
    ck_assert_uint_eq(s->created, 10);
    ck_assert_uint_eq(s->updated, 10);
    ck_assert_uint_eq(s->npeers, 3);
    for (size_t i = 0; i < 3; i++) ck_assert_str_eq(s->peers[i], peers3[i]);
    ck_assert_int_eq(s->cfg->c.replicas, 3);
    ck_assert_ptr_eq(jr__meta_stream_find(&st, "ORDERS"), s);
    ck_assert_ptr_eq(jr__meta_stream_by_group(&st, FIRST_GROUP), s);
    ck_assert_ptr_eq(jr__meta_stream_for_subject(&st, "orders.eu.new"), s);
    ck_assert_ptr_null(jr__meta_stream_for_subject(&st, "refunds.eu"));
    ck_assert_int_eq(jr__meta_stream_has_peer(s, "n2"), 1);
    ck_assert_int_eq(jr__meta_stream_has_peer(s, "n4"), 0);
    ck_assert_uint_eq(st.next_group, FIRST_GROUP + 1);
    /* an R1 stream placed on one server */
    static const char *r1subj[] = {"audit"};
    static const char *on_n4[] = {"n4"};
    jr_stream_config c1 = scfg("AUDIT", r1subj, 1, 1);
    op = op_stream(JR__META_STREAM_ADD, &c1, on_n4, 1);
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    ck_assert_uint_eq(res.assignment->group, FIRST_GROUP + 1);
    ck_assert_uint_eq(st.nstreams, 2);
    ck_assert_str_eq(st.streams[0]->name, "AUDIT"); /* name order */
    jr__meta_state_free(&st);
}
END_TEST

/* A node converges only the stream an op changed: the result names that stream's group (for a
 * delete, the group removed), and no group when nothing changed or no stream did. */
START_TEST(the_result_names_the_group_of_the_stream_an_op_changed)
{
    jr__meta_state st;
    cluster(&st);
    jr__meta_result res;
    jr__meta_op op = op_server("n6", tags_az1, N(tags_az1));
    ck_assert_int_eq(apply(&st, 9, &op, &res), 0);
    ck_assert_int_eq(res.changed, 1);
    ck_assert_uint_eq(res.group, 0);
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    ck_assert_uint_eq(res.group, FIRST_GROUP);
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0); /* idempotent: nothing changed */
    ck_assert_int_eq(res.changed, 0);
    ck_assert_uint_eq(res.group, 0);
    c.max_msgs = 7;
    op = op_stream(JR__META_STREAM_UPDATE, &c, peers234, 3);
    ck_assert_int_eq(apply(&st, 12, &op, &res), 0);
    ck_assert_uint_eq(res.group, FIRST_GROUP);
    op = op_converged("ORDERS", FIRST_GROUP, 12);
    ck_assert_int_eq(apply(&st, 13, &op, &res), 0);
    ck_assert_uint_eq(res.group, FIRST_GROUP);
    op = op_delete("ORDERS");
    ck_assert_int_eq(apply(&st, 14, &op, &res), 0);
    ck_assert_uint_eq(res.group, FIRST_GROUP);
    ck_assert_ptr_null(jr__meta_stream_by_group(&st, FIRST_GROUP));
    ck_assert_int_eq(apply(&st, 15, &op, &res), JR_ENOTFOUND);
    ck_assert_uint_eq(res.group, 0);
    jr__meta_state_free(&st);
}
END_TEST

/* A replica shares the state's assignment version by reference: it stays intact, with its
 * config and peers, after an update replaced it and after the stream was deleted. */
START_TEST(an_assignment_version_outlives_its_replacement)
{
    jr__meta_state st;
    cluster(&st);
    jr__meta_result res;
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    jr__meta_asgn *v1 = jr__meta_asgn_ref(res.assignment->asgn);
    ck_assert_ptr_eq(res.assignment->cfg, v1->cfg);
    ck_assert_ptr_eq(res.assignment->peers, v1->peers);
    c.max_msgs = 7;
    op = op_stream(JR__META_STREAM_UPDATE, &c, peers234, 3);
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    jr__meta_asgn *v2 = jr__meta_asgn_ref(res.assignment->asgn);
    ck_assert_ptr_ne(v1, v2);
    ck_assert_int_eq(res.assignment->cfg->c.max_msgs, 7);
    op = op_delete("ORDERS");
    ck_assert_int_eq(apply(&st, 12, &op, &res), 0);
    jr__meta_state_free(&st);
    /* both versions are still whole (ASan/valgrind would see a use after free) */
    ck_assert_str_eq(v1->cfg->c.name, "ORDERS");
    ck_assert_int_eq(v1->cfg->c.max_msgs, -1);
    ck_assert_str_eq(v1->peers[2], "n3");
    ck_assert_int_eq(v2->cfg->c.max_msgs, 7);
    ck_assert_uint_eq(v2->npeers, 3);
    ck_assert_str_eq(v2->peers[0], "n2");
    jr__meta_asgn_put(v1);
    jr__meta_asgn_put(v2);
}
END_TEST

START_TEST(a_stream_keeps_the_creation_time_of_its_add)
{
    jr__meta_state st;
    cluster(&st);
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    op.created_ns = 1704067200000000000ull;
    jr__meta_result res;
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    ck_assert_uint_eq(res.assignment->created_ns, 1704067200000000000ull);
    /* an identical re-add (another leader, another clock) is the same stream, created then */
    op.created_ns = 1704067299000000000ull;
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    ck_assert_uint_eq(res.assignment->created_ns, 1704067200000000000ull);
    /* an update does not change it */
    op = op_stream(JR__META_STREAM_UPDATE, &c, peers234, 3);
    ck_assert_int_eq(apply(&st, 12, &op, &res), 0);
    ck_assert_uint_eq(jr__meta_stream_find(&st, "ORDERS")->created_ns, 1704067200000000000ull);
    /* a version-1 add (a log written before creation times) gives 0, "unknown" */
    static const char *s2[] = {"audit"};
    jr_stream_config a = scfg("AUDIT", s2, 1, 3);
    op = op_stream(JR__META_STREAM_ADD, &a, peers3, 3);
    jr__buf b;
    jr__buf_init(&b, NULL);
    encode(&op, &b);
    ck_assert_uint_eq(b.data[0], 1);
    ck_assert_int_eq(jr__meta_apply(&st, 13, b.data, b.len, &res), 0);
    ck_assert_int_eq(res.status, 0);
    ck_assert_uint_eq(res.assignment->created_ns, 0);
    /* version 2 requires the time: one with 0 in its place is malformed */
    op.created_ns = 1;
    encode(&op, &b);
    ck_assert_uint_eq(b.data[0], 2);
    ck_assert_uint_eq(b.data[b.len - 9], 1); /* the varint just before the checksum */
    b.data[b.len - 9] = 0;
    reseal(b.data, b.len);
    jr__meta_op d;
    ck_assert_int_eq(jr__meta_op_decode(b.data, b.len, NULL, &d), JR_ECORRUPT);
    jr__buf_free(&b);
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(identical_re_add_is_idempotent_and_a_different_config_is_eexist)
{
    jr__meta_state st;
    cluster(&st);
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    jr__meta_result res;
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    jr__buf before, after;
    jr__buf_init(&before, NULL);
    jr__buf_init(&after, NULL);

    /* the same config spelled with explicit defaults, other peers, another caller: the existing
     * assignment, unchanged */
    jr_stream_config same = c;
    same.max_msgs = 0; /* 0 means unlimited, as -1 */
    same.duplicate_window_ns = 120ULL * 1000000000ULL;
    op = op_stream(JR__META_STREAM_ADD, &same, peers234, 3);
    op.request_id = 9;
    op.origin = "n4";
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    ck_assert_int_eq(res.changed, 0);
    ck_assert_uint_eq(res.request_id, 9);
    ck_assert_ptr_nonnull(res.assignment);
    ck_assert_uint_eq(res.assignment->group, FIRST_GROUP);
    ck_assert_str_eq(res.assignment->peers[0], "n1");
    ck_assert_uint_eq(res.assignment->created, 10);
    ck_assert_uint_eq(st.next_group, FIRST_GROUP + 1);

    /* a different config under the same name */
    snapshot(&st, &before);
    jr_stream_config other = c;
    other.max_msgs = 5;
    op = op_stream(JR__META_STREAM_ADD, &other, peers3, 3);
    ck_assert_int_eq(apply(&st, 12, &op, &res), JR_EEXIST);
    ck_assert_ptr_null(res.assignment);
    ck_assert_int_eq(res.changed, 0);
    ck_assert_ptr_nonnull(strstr(res.msg, "already in use"));
    /* nothing changed but the applied index */
    st.applied = 11;
    snapshot(&st, &after);
    ck_assert_uint_eq(before.len, after.len);
    ck_assert_int_eq(memcmp(before.data, after.data, before.len), 0);
    jr__buf_free(&before);
    jr__buf_free(&after);
    jr__meta_state_free(&st);
}
END_TEST

/* Streams of 10,000 subjects: added, and a third refused for overlapping the second by name
 * at its last subject, with the refusal naming that pair (found without comparing the 10^8
 * pairs of subjects). */
START_TEST(overlaps_among_many_subjects_are_found_and_named)
{
    enum { NS = 10000 };
    jr__meta_state st;
    cluster(&st);
    static char buf[3][NS][24];
    static const char *subj[3][NS];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < NS; i++) {
            snprintf(buf[k][i], sizeof buf[k][i], "s%d.k%d.%d", k, i % 97, i);
            subj[k][i] = buf[k][i];
        }
    /* the third's last subject is a wildcard over one subject of the second */
    snprintf(buf[2][NS - 1], sizeof buf[2][NS - 1], "s1.*.4321");
    jr_stream_config c0 = scfg("AAA", subj[0], NS, 3), c1 = scfg("BBB", subj[1], NS, 3);
    jr_stream_config c2 = scfg("CCC", subj[2], NS, 3);
    jr__meta_result res;
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c1, peers3, 3);
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    op = op_stream(JR__META_STREAM_ADD, &c0, peers3, 3);
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    op = op_stream(JR__META_STREAM_ADD, &c2, peers3, 3);
    ck_assert_int_eq(apply(&st, 12, &op, &res), JR_EINVAL);
    char want[160];
    snprintf(want, sizeof want, "subjects: '%s' overlaps subject 's1.k%d.4321' of stream 'BBB'",
             buf[2][NS - 1], 4321 % 97);
    ck_assert_str_eq(res.msg, want);
    ck_assert_uint_eq(st.nstreams, 2);
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(overlapping_subjects_are_refused_naming_the_stream)
{
    jr__meta_state st;
    cluster(&st);
    static const char *a_subj[] = {"x.a"}, *b_subj[] = {"x.b"}, *wild[] = {"x.*"};
    static const char *eu[] = {"audit", "orders.eu.*"};
    jr_stream_config ca = scfg("ALPHA", a_subj, 1, 3), cb = scfg("BETA", b_subj, 1, 3);
    jr_stream_config co = scfg("ORDERS", orders_subj, 1, 3);
    jr__meta_result res;
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &cb, peers3, 3);
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    op = op_stream(JR__META_STREAM_ADD, &ca, peers3, 3);
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    op = op_stream(JR__META_STREAM_ADD, &co, peers3, 3);
    ck_assert_int_eq(apply(&st, 12, &op, &res), 0);

    jr__buf before, after;
    jr__buf_init(&before, NULL);
    jr__buf_init(&after, NULL);
    snapshot(&st, &before);
    jr_stream_config cw = scfg("WILD", wild, 1, 3);
    op = op_stream(JR__META_STREAM_ADD, &cw, peers3, 3);
    ck_assert_int_eq(apply(&st, 13, &op, &res), JR_EINVAL);
    /* both ALPHA and BETA overlap; the first by name is named, whatever the index met first */
    ck_assert_str_eq(res.msg, "subjects: 'x.*' overlaps subject 'x.a' of stream 'ALPHA'");
    jr_stream_config ce = scfg("EU", eu, N(eu), 3);
    op = op_stream(JR__META_STREAM_ADD, &ce, peers3, 3);
    ck_assert_int_eq(apply(&st, 14, &op, &res), JR_EINVAL);
    ck_assert_ptr_nonnull(strstr(res.msg, "stream 'ORDERS'"));
    /* the refused adds left nothing behind: "audit" is still free */
    ck_assert_ptr_null(jr__meta_stream_for_subject(&st, "audit"));
    ck_assert_ptr_null(jr__meta_stream_find(&st, "EU"));
    ck_assert_uint_eq(st.next_group, FIRST_GROUP + 3);
    st.applied = 12;
    snapshot(&st, &after);
    ck_assert_int_eq(memcmp(before.data, after.data, before.len), 0);

    /* a stream named like a subject of another is its default subject: refused too */
    static const char *xs[] = {"x.>"};
    jr_stream_config cx = scfg("x", NULL, 0, 1);
    static const char *on_n1[] = {"n1"};
    op = op_stream(JR__META_STREAM_ADD, &cx, on_n1, 1);
    ck_assert_int_eq(apply(&st, 15, &op, &res), 0); /* subject "x" overlaps nothing */
    jr_stream_config cxx = scfg("XS", xs, 1, 1);
    op = op_stream(JR__META_STREAM_ADD, &cxx, on_n1, 1);
    ck_assert_int_eq(apply(&st, 16, &op, &res), JR_EINVAL);
    jr__buf_free(&before);
    jr__buf_free(&after);
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(peers_must_be_exactly_the_replicas_on_known_servers)
{
    jr__meta_state st;
    cluster(&st);
    static const char *two[] = {"n1", "n2"};
    static const char *unknown[] = {"n1", "n2", "n9"};
    static const char *dup[] = {"n1", "n2", "n2"};
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    jr__meta_result res;
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c, two, 2);
    ck_assert_int_eq(apply(&st, 10, &op, &res), JR_EINVAL);
    ck_assert_str_eq(res.msg, "peers: 2 given for 3 replicas");
    op = op_stream(JR__META_STREAM_ADD, &c, unknown, 3);
    ck_assert_int_eq(apply(&st, 11, &op, &res), JR_EINVAL);
    ck_assert_str_eq(res.msg, "peers: unknown server 'n9'");
    op = op_stream(JR__META_STREAM_ADD, &c, NULL, 0); /* a request that was never placed */
    ck_assert_int_eq(apply(&st, 12, &op, &res), JR_EINVAL);
    ck_assert_ptr_nonnull(strstr(res.msg, "not placed"));
    /* an op built by hand (not through the codec) is validated too */
    op = op_stream(JR__META_STREAM_ADD, &c, dup, 3);
    ck_assert_int_eq(jr__meta_apply_op(&st, 13, &op, &res), 0);
    ck_assert_int_eq(res.status, JR_EINVAL);
    ck_assert_str_eq(res.msg, "peers: 'n2' given twice");
    /* a sealed stream can not be created */
    jr_stream_config sealed = c;
    sealed.sealed = 1;
    op = op_stream(JR__META_STREAM_ADD, &sealed, peers3, 3);
    ck_assert_int_eq(apply(&st, 14, &op, &res), JR_EINVAL);
    ck_assert_ptr_nonnull(strstr(res.msg, "sealed"));
    ck_assert_uint_eq(st.nstreams, 0);
    ck_assert_uint_eq(st.next_group, FIRST_GROUP);
    /* an index at or below the applied one is a caller bug: refused, nothing happens */
    ck_assert_int_eq(jr__meta_apply_op(&st, 14, &op, &res), JR_EINVAL);
    ck_assert_uint_eq(st.applied, 14);
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(update_changes_what_jetstream_allows)
{
    jr__meta_state st;
    cluster(&st);
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    jr__meta_result res;
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    const jr__meta_stream *s = res.assignment;

    /* subjects, limits, description, replicas 3 → 5 with the new peers */
    static const char *subj2[] = {"orders.>", "returns.*"};
    static const char *peers5[] = {"n1", "n2", "n3", "n4", "n5"};
    jr_stream_config u = scfg("ORDERS", subj2, 2, 5);
    u.max_msgs = 1000;
    u.description = "orders and returns";
    op = op_stream(JR__META_STREAM_UPDATE, &u, peers5, 5);
    op.request_id = 3;
    op.origin = "n2";
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    ck_assert_ptr_eq(res.assignment, s); /* same assignment, same group */
    ck_assert_int_eq(res.changed, 1);
    ck_assert_uint_eq(s->group, FIRST_GROUP);
    ck_assert_uint_eq(s->created, 10);
    ck_assert_uint_eq(s->updated, 11);
    ck_assert_uint_eq(s->npeers, 5);
    ck_assert_int_eq(s->cfg->c.max_msgs, 1000);
    ck_assert_ptr_eq(jr__meta_stream_for_subject(&st, "returns.x"), s);

    /* identical config and peers: nothing to do */
    ck_assert_int_eq(apply(&st, 12, &op, &res), 0);
    ck_assert_int_eq(res.changed, 0);
    ck_assert_uint_eq(s->updated, 11);

    /* refused: fields that can not change, unknown stream, overlap, wrong peers */
    jr_stream_config mem = u;
    mem.storage = JR_STORAGE_MEMORY;
    op = op_stream(JR__META_STREAM_UPDATE, &mem, peers5, 5);
    ck_assert_int_eq(apply(&st, 13, &op, &res), JR_EINVAL);
    ck_assert_str_eq(res.msg, "storage: can not be changed");
    jr_stream_config mc = u;
    mc.max_consumers = 3;
    op = op_stream(JR__META_STREAM_UPDATE, &mc, peers5, 5);
    ck_assert_int_eq(apply(&st, 14, &op, &res), JR_EINVAL);
    ck_assert_ptr_nonnull(strstr(res.msg, "max_consumers"));
    jr_stream_config ghost = scfg("GHOST", NULL, 0, 1);
    op = op_stream(JR__META_STREAM_UPDATE, &ghost, peers5, 1);
    ck_assert_int_eq(apply(&st, 15, &op, &res), JR_ENOTFOUND);
    ck_assert_str_eq(res.msg, "stream 'GHOST' not found");

    static const char *audit[] = {"audit.>"};
    static const char *on_n1[] = {"n1"};
    jr_stream_config ca = scfg("AUDIT", audit, 1, 1);
    op = op_stream(JR__META_STREAM_ADD, &ca, on_n1, 1);
    ck_assert_int_eq(apply(&st, 16, &op, &res), 0);
    static const char *grab[] = {"orders.>", "returns.*", "audit.eu"};
    jr_stream_config g = scfg("ORDERS", grab, 3, 5);
    op = op_stream(JR__META_STREAM_UPDATE, &g, peers5, 5);
    ck_assert_int_eq(apply(&st, 17, &op, &res), JR_EINVAL);
    ck_assert_str_eq(res.msg, "subjects: 'audit.eu' overlaps subject 'audit.>' of stream 'AUDIT'");
    ck_assert_ptr_eq(jr__meta_stream_for_subject(&st, "returns.x"), s); /* kept its subjects */
    ck_assert_ptr_eq(jr__meta_stream_for_subject(&st, "orders.x"), s);
    op = op_stream(JR__META_STREAM_UPDATE, &u, peers3, 3);
    ck_assert_int_eq(apply(&st, 18, &op, &res), JR_EINVAL);
    ck_assert_str_eq(res.msg, "peers: 3 given for 5 replicas");

    /* sealing is allowed; unsealing is not */
    jr_stream_config seal = u;
    seal.sealed = 1;
    op = op_stream(JR__META_STREAM_UPDATE, &seal, peers5, 5);
    ck_assert_int_eq(apply(&st, 19, &op, &res), 0);
    ck_assert_int_eq(s->cfg->c.sealed, 1);
    op = op_stream(JR__META_STREAM_UPDATE, &u, peers5, 5);
    ck_assert_int_eq(apply(&st, 20, &op, &res), JR_EINVAL);
    ck_assert_ptr_nonnull(strstr(res.msg, "sealed"));
    ck_assert_uint_eq(s->updated, 19);
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(a_peer_change_is_busy_until_its_group_reports_convergence)
{
    jr__meta_state st;
    cluster(&st);
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    jr__meta_result res;
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    const jr__meta_stream *s = res.assignment;
    /* a new stream's peers are the ones it was created with: converged, bootstrapping */
    ck_assert_uint_eq(s->peers_at, 10);
    ck_assert_uint_eq(s->converged_at, 10);
    ck_assert(!jr__meta_stream_busy(s));
    ck_assert(jr__meta_stream_bootstraps(s));

    /* the same set in another order and a config change are no peer change */
    static const char *reordered[] = {"n3", "n1", "n2"};
    jr_stream_config lim = c;
    lim.max_msgs = 10;
    op = op_stream(JR__META_STREAM_UPDATE, &lim, reordered, 3);
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    ck_assert_uint_eq(s->updated, 11);
    ck_assert_uint_eq(s->peers_at, 10);
    ck_assert(!jr__meta_stream_busy(s));

    /* grow to 5: a peer change begins; new servers join instead of bootstrapping */
    static const char *peers5[] = {"n1", "n2", "n3", "n4", "n5"};
    jr_stream_config c5 = lim;
    c5.replicas = 5;
    op = op_stream(JR__META_STREAM_UPDATE, &c5, peers5, 5);
    ck_assert_int_eq(apply(&st, 12, &op, &res), 0);
    ck_assert_uint_eq(s->peers_at, 12);
    ck_assert_uint_eq(s->converged_at, 10);
    ck_assert(jr__meta_stream_busy(s));
    ck_assert(!jr__meta_stream_bootstraps(s));

    /* meanwhile: config changes pass, another peer change is refused (request and placed) */
    jr_stream_config c5b = c5;
    c5b.max_msgs = 20;
    op = op_stream(JR__META_STREAM_UPDATE, &c5b, peers5, 5);
    ck_assert_int_eq(apply(&st, 13, &op, &res), 0);
    ck_assert_uint_eq(s->peers_at, 12);
    jr_stream_config c3 = c5b;
    c3.replicas = 3;
    op = op_stream(JR__META_STREAM_UPDATE, &c3, NULL, 0);
    ck_assert_int_eq(jr__meta_check(&st, &op, &res), 0);
    ck_assert_int_eq(res.status, JR_EBUSY);
    ck_assert_ptr_nonnull(strstr(res.msg, "cluster member change is in progress"));
    op = op_stream(JR__META_STREAM_UPDATE, &c3, peers3, 3);
    ck_assert_int_eq(apply(&st, 14, &op, &res), JR_EBUSY);
    ck_assert_int_eq(s->cfg->c.replicas, 5);
    ck_assert_uint_eq(s->updated, 13);

    /* reports: a stale peer set, another group, an unknown stream change nothing */
    op = op_converged("ORDERS", s->group, 10);
    ck_assert_int_eq(apply(&st, 15, &op, &res), JR_ERANGE);
    op = op_converged("ORDERS", s->group + 1, 12);
    ck_assert_int_eq(apply(&st, 16, &op, &res), JR_ENOTFOUND);
    op = op_converged("GHOST", s->group, 12);
    ck_assert_int_eq(apply(&st, 17, &op, &res), JR_ENOTFOUND);
    ck_assert(jr__meta_stream_busy(s));
    /* the group reached the peer set of 12: no longer busy; a second report is a no-op */
    op = op_converged("ORDERS", s->group, 12);
    op.request_id = 4;
    op.origin = "n4";
    op.term = 5; /* the floor a replica joining later starts from */
    op.commit_term = 4;
    op.commit = 77;
    ck_assert_int_eq(apply(&st, 18, &op, &res), 0);
    ck_assert_int_eq(res.changed, 1);
    ck_assert_str_eq(res.stream, "ORDERS");
    ck_assert_uint_eq(s->converged_at, 12);
    ck_assert_uint_eq(s->floor_term, 5);
    ck_assert_uint_eq(s->floor_commit_term, 4);
    ck_assert_uint_eq(s->floor_commit, 77);
    ck_assert(!jr__meta_stream_busy(s));
    ck_assert_uint_eq(s->updated, 13); /* nothing for replicas to converge to */
    ck_assert_int_eq(apply(&st, 19, &op, &res), 0);
    ck_assert_int_eq(res.changed, 0);

    /* now the shrink passes; snapshots keep both indexes */
    op = op_stream(JR__META_STREAM_UPDATE, &c3, peers3, 3);
    ck_assert_int_eq(apply(&st, 20, &op, &res), 0);
    ck_assert_uint_eq(s->peers_at, 20);
    ck_assert_uint_eq(s->converged_at, 12);
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__meta_snapshot(&st, &b), 0);
    jr__meta_state back;
    jr__meta_state_init(&back, NULL, 1);
    ck_assert_int_eq(jr__meta_restore(&back, b.data, b.len), 0);
    const jr__meta_stream *t = jr__meta_stream_find(&back, "ORDERS");
    ck_assert_uint_eq(t->peers_at, 20);
    ck_assert_uint_eq(t->converged_at, 12);
    jr__meta_state_free(&back);
    jr__buf_free(&b);
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(delete_removes_and_a_re_created_stream_gets_a_new_group)
{
    jr__meta_state st;
    cluster(&st);
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    jr__meta_result res;
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    op = op_delete("ORDERS");
    op.request_id = 5;
    op.origin = "n3";
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    ck_assert_int_eq(res.changed, 1);
    ck_assert_str_eq(res.stream, "ORDERS");
    ck_assert_ptr_null(jr__meta_stream_find(&st, "ORDERS"));
    ck_assert_ptr_null(jr__meta_stream_by_group(&st, FIRST_GROUP));
    ck_assert_ptr_null(jr__meta_stream_for_subject(&st, "orders.x"));
    ck_assert_int_eq(apply(&st, 12, &op, &res), JR_ENOTFOUND);
    op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    ck_assert_int_eq(apply(&st, 13, &op, &res), 0);
    ck_assert_uint_eq(res.assignment->group, FIRST_GROUP + 1); /* never reused */
    ck_assert_uint_eq(res.assignment->created, 13);
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(server_info_is_an_upsert)
{
    jr__meta_state st;
    cluster(&st);
    ck_assert_uint_eq(st.nservers, 5);
    static const char *hdd[] = {"az:2", "hdd"};
    jr__meta_op op = op_server("n3", hdd, 2);
    jr__meta_result res;
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    ck_assert_int_eq(res.changed, 1);
    const jr__meta_server *s = jr__meta_server_find(&st, "n3");
    ck_assert_str_eq(s->tags[1], "hdd");
    ck_assert_uint_eq(st.nservers, 5);
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    ck_assert_int_eq(res.changed, 0);
    op = op_server("a0", NULL, 0);
    ck_assert_int_eq(apply(&st, 12, &op, &res), 0);
    ck_assert_str_eq(st.servers[0]->name, "a0");
    ck_assert_ptr_null(jr__meta_server_find(&st, "zz"));
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(undecodable_ops_are_refused_alike_and_newer_ones_stop_the_replica)
{
    jr__meta_state st;
    cluster(&st);
    jr__meta_result res;
    static const uint8_t junk[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    ck_assert_int_eq(jr__meta_apply(&st, 10, junk, sizeof junk, &res), 0);
    ck_assert_int_eq(res.status, JR_ECORRUPT);
    ck_assert_uint_eq(st.applied, 10);
    /* an intact op of a type this server does not know: not applied, not skipped */
    uint8_t newer[] = {1, JR__META_OP_MAX + 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    reseal(newer, sizeof newer);
    ck_assert_int_eq(jr__meta_apply(&st, 11, newer, sizeof newer, &res), JR_EVERSION);
    ck_assert_int_eq(res.status, JR_EVERSION);
    ck_assert_uint_eq(st.applied, 10);
    ck_assert_int_eq(jr__meta_apply(&st, 10, junk, sizeof junk, &res), JR_EINVAL);
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(check_is_a_dry_run_of_apply)
{
    jr__meta_state st;
    cluster(&st);
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    jr__meta_result res;
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    jr__buf before, after;
    jr__buf_init(&before, NULL);
    jr__buf_init(&after, NULL);
    snapshot(&st, &before);

    static const char *subj[] = {"audit", "orders.eu"};
    static const char *subj_ok[] = {"audit", "audit.>"};
    jr_stream_config bad = scfg("AUDIT", subj, 2, 3), good = scfg("AUDIT", subj_ok, 2, 3);
    jr__meta_op req = op_stream(JR__META_STREAM_ADD, &good, NULL, 0); /* not yet placed */
    ck_assert_int_eq(jr__meta_check(&st, &req, &res), 0);
    ck_assert_int_eq(res.status, 0);
    req.config = &bad;
    ck_assert_int_eq(jr__meta_check(&st, &req, &res), 0);
    ck_assert_int_eq(res.status, JR_EINVAL);
    ck_assert_ptr_nonnull(strstr(res.msg, "'ORDERS'"));
    req = op_stream(JR__META_STREAM_ADD, &c, NULL, 0); /* idempotent re-add */
    ck_assert_int_eq(jr__meta_check(&st, &req, &res), 0);
    ck_assert_int_eq(res.status, 0);
    ck_assert_ptr_nonnull(res.assignment);
    static const char *grow[] = {"orders.>", "audit.*"};
    jr_stream_config u = scfg("ORDERS", grow, 2, 3);
    req = op_stream(JR__META_STREAM_UPDATE, &u, NULL, 0);
    ck_assert_int_eq(jr__meta_check(&st, &req, &res), 0);
    ck_assert_int_eq(res.status, 0);
    req.peers = peers3;
    req.npeers = 2; /* with peers, they are checked */
    ck_assert_int_eq(jr__meta_check(&st, &req, &res), 0);
    ck_assert_int_eq(res.status, JR_EINVAL);
    jr__meta_op del = op_delete("NOPE");
    ck_assert_int_eq(jr__meta_check(&st, &del, &res), 0);
    ck_assert_int_eq(res.status, JR_ENOTFOUND);

    /* nothing changed: the index still has exactly ORDERS's subjects */
    snapshot(&st, &after);
    ck_assert_uint_eq(before.len, after.len);
    ck_assert_int_eq(memcmp(before.data, after.data, before.len), 0);
    ck_assert_uint_eq(st.subjects.npatterns, 1);
    ck_assert_ptr_null(jr__meta_stream_for_subject(&st, "audit"));
    ck_assert_ptr_null(jr__meta_stream_for_subject(&st, "audit.x"));
    jr__buf_free(&before);
    jr__buf_free(&after);
    jr__meta_state_free(&st);
}
END_TEST

START_TEST(placement_view_counts_assets_and_reserved_bytes)
{
    jr__meta_state st;
    cluster(&st);
    jr_stream_config c = scfg("ORDERS", orders_subj, 1, 3);
    c.max_bytes = 1 << 20;
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    jr__meta_result res;
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    static const char *s2[] = {"b"};
    jr_stream_config c2 = scfg("B", s2, 1, 3);
    op = op_stream(JR__META_STREAM_ADD, &c2, peers234, 3);
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    jr__place_server ps[8];
    ck_assert_uint_eq(jr__meta_place_servers(&st, ps, 8), 5);
    uint32_t assets[] = {1, 2, 2, 1, 0};
    uint64_t used[] = {1 << 20, 1 << 20, 1 << 20, 0, 0};
    for (int i = 0; i < 5; i++) {
        ck_assert_uint_eq(ps[i].assets, assets[i]);
        ck_assert_uint_eq(ps[i].used_bytes, used[i]);
        ck_assert_int_eq(ps[i].online, 1);
        ck_assert_str_eq(ps[i].cluster, "east");
        ck_assert_uint_eq(ps[i].ntags, 2);
        ck_assert_uint_eq(ps[i].max_assets, 1000);
    }
    /* it feeds placement directly: an R3 on the least loaded servers */
    jr__place_request rq;
    memset(&rq, 0, sizeof rq);
    rq.replicas = 3;
    rq.cluster = "east";
    rq.seed = 1;
    jr__place_result out;
    ck_assert_int_eq(jr__placement_select(ps, 5, &rq, &out, NULL, NULL, 0), 0);
    int on_n5 = 0;
    for (size_t k = 0; k < out.npeers; k++) on_n5 |= strcmp(ps[out.peers[k]].name, "n5") == 0;
    ck_assert_int_eq(on_n5, 1);
    ck_assert_uint_eq(jr__meta_place_servers(&st, ps, 2), 5); /* fills only what fits */
    jr__meta_state_free(&st);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Determinism and snapshots
 */

/* A random op against a cluster of servers s0..s6: adds, updates, deletes and server infos,
 * many of them refused (overlaps, wrong peers, unknown names, forbidden changes). */
static void random_op(jr__rand *r, jr__meta_op *op, jr_stream_config *c, const char **subj,
                      const char **peers, char names[][16])
{
    static const char *pool[] = {"a.>",   "a.b",   "a.*", "b.*.c", "c",   "c.d", "d.>",
                                 "e.f.g", "e.*.g", "f",   "g.>",   "h.i", "*.z"};
    static const char *servers[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6"};
    static const char *tagsets[][2] = {{"az:1", "ssd"}, {"az:2", "hdd"}, {"az:3", "ssd"}};
    memset(op, 0, sizeof *op);
    uint64_t k = jr__rand_below(r, 10);
    snprintf(names[0], 16, "S%u", (unsigned)jr__rand_below(r, 40));
    if (k == 0) {
        *op = op_server(servers[jr__rand_below(r, 7)], tagsets[jr__rand_below(r, 3)],
                        (size_t)jr__rand_below(r, 3));
        op->server.capacity_bytes = jr__rand_below(r, 4) << 30;
        return;
    }
    if (k == 1) {
        *op = op_delete(names[0]);
        return;
    }
    size_t ns = 1 + (size_t)jr__rand_below(r, 2);
    for (size_t i = 0; i < ns; i++) {
        if (jr__rand_below(r, 3)) {
            subj[i] = pool[jr__rand_below(r, N(pool))];
        } else { /* a subject space of its own, mostly */
            snprintf(names[1 + i], 16, "p%u.%s", (unsigned)jr__rand_below(r, 60),
                     jr__rand_below(r, 2) ? ">" : "*");
            subj[i] = names[1 + i];
        }
    }
    if (ns == 2 && strcmp(subj[0], subj[1]) == 0) ns = 1;
    int replicas = 1 + (int)jr__rand_below(r, 3);
    *c = scfg(names[0], subj, ns, replicas);
    c->max_msgs = (int64_t)jr__rand_below(r, 3) * 100;
    if (jr__rand_below(r, 8) == 0) c->storage = JR_STORAGE_MEMORY;
    size_t np = (size_t)replicas;
    if (jr__rand_below(r, 10) == 0) np = (size_t)jr__rand_below(r, 4);
    size_t first = (size_t)jr__rand_below(r, 7);
    for (size_t i = 0; i < np; i++) peers[i] = servers[(first + i) % 7];
    *op = op_stream(k < 6 ? JR__META_STREAM_ADD : JR__META_STREAM_UPDATE, c, peers, np);
    if (jr__rand_below(r, 2)) {
        op->request_id = 1 + jr__rand_below(r, 1000);
        op->origin = servers[jr__rand_below(r, 7)];
    }
}

static void assert_same_bytes(const jr__buf *a, const jr__buf *b, uint64_t seed, int step)
{
    ck_assert_msg(a->len == b->len && memcmp(a->data, b->data, a->len) == 0,
                  "seed %" PRIu64 " (JR_TEST_SEED) step %d: snapshots differ", seed, step);
}

/* Placement's tallies (kept incrementally by the state) equal a count over every stream. */
static void assert_tallies(const jr__meta_state *st, uint64_t seed, int step)
{
    jr__place_server ps[16];
    size_t n = jr__meta_place_servers(st, ps, 16);
    ck_assert_uint_le(n, 16);
    for (size_t i = 0; i < n; i++) {
        uint32_t assets = 0;
        uint64_t used = 0;
        for (size_t k = 0; k < st->nstreams; k++) {
            const jr__meta_stream *t = st->streams[k];
            if (!jr__meta_stream_has_peer(t, ps[i].name)) continue;
            assets++;
            if (t->cfg->c.max_bytes > 0) used += (uint64_t)t->cfg->c.max_bytes;
        }
        ck_assert_msg(ps[i].assets == assets && ps[i].used_bytes == used,
                      "seed %" PRIu64 " step %d: server %s tallies %u/%" PRIu64
                      ", counted %u/%" PRIu64,
                      seed, step, ps[i].name, ps[i].assets, ps[i].used_bytes, assets, used);
    }
}

START_TEST(replicas_applying_the_same_log_write_identical_snapshots)
{
    uint64_t seed = test_seed() + 2;
    jr__rand r;
    jr__rand_seed(&r, seed);
    jr__meta_state a, b, c;
    jr__meta_state_init(&a, NULL, FIRST_GROUP);
    jr__meta_state_init(&b, NULL, FIRST_GROUP);
    jr__meta_state_init(&c, NULL, FIRST_GROUP);
    jr__buf log, sa, sb, sc;
    jr__buf_init(&log, NULL);
    jr__buf_init(&sa, NULL);
    jr__buf_init(&sb, NULL);
    jr__buf_init(&sc, NULL);
    /* every server known first, as after start-up */
    static const char *servers[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6"};
    uint64_t index = 0;
    jr__meta_result ra, rb, rc;
    for (size_t i = 0; i < N(servers); i++) {
        jr__meta_op op = op_server(servers[i], NULL, 0);
        apply(&a, ++index, &op, &ra);
        apply(&b, index, &op, &rb);
        apply(&c, index, &op, &rc);
    }
    int ok = 0, refused = 0;
    for (int step = 0; step < 3000; step++) {
        jr__meta_op op;
        jr_stream_config cfg;
        const char *subj[2], *peers[5];
        char names[3][16];
        random_op(&r, &op, &cfg, subj, peers, names);
        jr__buf_reset(&log);
        if (jr__meta_op_encode(&op, &log) != 0) continue; /* e.g. an invalid config */
        index += 1 + jr__rand_below(&r, 3);               /* meta entries not ours: no-ops */
        ck_assert_int_eq(jr__meta_apply(&a, index, log.data, log.len, &ra), 0);
        ck_assert_int_eq(jr__meta_apply(&b, index, log.data, log.len, &rb), 0);
        ck_assert_int_eq(jr__meta_apply(&c, index, log.data, log.len, &rc), 0);
        ck_assert_msg(ra.status == rb.status && strcmp(ra.msg, rb.msg) == 0 &&
                          ra.status == rc.status && strcmp(ra.msg, rc.msg) == 0,
                      "seed %" PRIu64 " step %d: results differ (%s / %s / %s)", seed, step, ra.msg,
                      rb.msg, rc.msg);
        ok += ra.status == 0;
        refused += ra.status != 0;
        if (step % 50 == 0) {
            snapshot(&a, &sa);
            snapshot(&b, &sb);
            assert_same_bytes(&sa, &sb, seed, step);
            /* c starts over from a's snapshot: a replica that installed it */
            jr__meta_state_free(&c);
            jr__meta_state_init(&c, NULL, 7);
            ck_assert_int_eq(jr__meta_restore(&c, sa.data, sa.len), 0);
            snapshot(&c, &sc);
            assert_same_bytes(&sa, &sc, seed, step);
            assert_tallies(&a, seed, step);
            assert_tallies(&c, seed, step);
        }
    }
    snapshot(&a, &sa);
    snapshot(&b, &sb);
    snapshot(&c, &sc);
    assert_same_bytes(&sa, &sb, seed, -1);
    assert_same_bytes(&sa, &sc, seed, -1);
    /* the restored replica answers lookups like the others */
    for (size_t i = 0; i < a.nstreams; i++) {
        const jr__meta_stream *x = a.streams[i];
        const jr__meta_stream *y = jr__meta_stream_by_group(&c, x->group);
        ck_assert_ptr_nonnull(y);
        ck_assert_str_eq(x->name, y->name);
        ck_assert_ptr_eq(jr__meta_stream_find(&c, x->name), y);
    }
    ck_assert_uint_eq(a.subjects.npatterns, c.subjects.npatterns);
    printf("meta: 3000 random ops: %d applied, %d refused; %zu streams, snapshot %zu bytes\n", ok,
           refused, a.nstreams, sa.len);
    ck_assert_int_gt(ok, 100);
    ck_assert_int_gt(refused, 100);
    jr__meta_state_free(&a);
    jr__meta_state_free(&b);
    jr__meta_state_free(&c);
    jr__buf_free(&log);
    jr__buf_free(&sa);
    jr__buf_free(&sb);
    jr__buf_free(&sc);
}
END_TEST

/* A state with a few streams, servers with tags, and some history. */
static void sample_state(jr__meta_state *st)
{
    cluster(st);
    static const char *s1[] = {"orders.>", "returns.*"}, *s2[] = {"audit"};
    static const char *on_n5[] = {"n5"};
    jr_stream_config a = scfg("ORDERS", s1, 2, 3), b = scfg("AUDIT", s2, 1, 1);
    a.description = "orders";
    a.max_bytes = 1 << 30;
    jr__meta_result res;
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &a, peers3, 3);
    op.created_ns = 1704067200000000042ull;
    ck_assert_int_eq(apply(st, 10, &op, &res), 0);
    op = op_stream(JR__META_STREAM_ADD, &b, on_n5, 1);
    ck_assert_int_eq(apply(st, 11, &op, &res), 0);
    op = op_stream(JR__META_STREAM_UPDATE, &a, peers234, 3);
    ck_assert_int_eq(apply(st, 12, &op, &res), 0);
}

START_TEST(snapshot_restore_gives_an_identical_state)
{
    jr__meta_state st, back;
    sample_state(&st);
    jr__buf a, b;
    jr__buf_init(&a, NULL);
    jr__buf_init(&b, NULL);
    snapshot(&st, &a);
    /* restore over a non-empty state replaces it entirely */
    sample_state(&back);
    jr__meta_op op = op_delete("AUDIT");
    jr__meta_result res;
    ck_assert_int_eq(apply(&back, 20, &op, &res), 0);
    ck_assert_int_eq(jr__meta_restore(&back, a.data, a.len), 0);
    snapshot(&back, &b);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_int_eq(memcmp(a.data, b.data, a.len), 0);
    ck_assert_uint_eq(back.applied, 12);
    ck_assert_uint_eq(back.next_group, FIRST_GROUP + 2);
    const jr__meta_stream *s = jr__meta_stream_find(&back, "ORDERS");
    ck_assert_uint_eq(s->created, 10);
    ck_assert_uint_eq(s->updated, 12);
    ck_assert_uint_eq(s->created_ns, 1704067200000000042ull); /* kept across the update */
    ck_assert_uint_eq(jr__meta_stream_find(&back, "AUDIT")->created_ns, 0); /* none given */
    ck_assert_str_eq(s->peers[0], "n2");
    ck_assert_str_eq(s->cfg->c.description, "orders");
    ck_assert_ptr_eq(jr__meta_stream_for_subject(&back, "returns.x"), s);
    ck_assert_ptr_eq(jr__meta_stream_by_group(&back, FIRST_GROUP), s);
    ck_assert_str_eq(jr__meta_server_find(&back, "n4")->tags[0], "az:1");
    /* and it goes on applying like the original */
    static const char *s3[] = {"x"};
    jr_stream_config c = scfg("X", s3, 1, 1);
    static const char *on_n1[] = {"n1"};
    op = op_stream(JR__META_STREAM_ADD, &c, on_n1, 1);
    ck_assert_int_eq(apply(&back, 13, &op, &res), 0);
    ck_assert_uint_eq(res.assignment->group, FIRST_GROUP + 2);
    /* an empty state round-trips too */
    jr__meta_state e;
    jr__meta_state_init(&e, NULL, 5);
    snapshot(&e, &a);
    ck_assert_int_eq(jr__meta_restore(&back, a.data, a.len), 0);
    ck_assert_uint_eq(back.nstreams, 0);
    ck_assert_uint_eq(back.nservers, 0);
    ck_assert_uint_eq(back.next_group, 5);
    jr__meta_state_free(&e);
    jr__meta_state_free(&st);
    jr__meta_state_free(&back);
    jr__buf_free(&a);
    jr__buf_free(&b);
}
END_TEST

START_TEST(every_truncation_and_resealed_mutation_of_a_snapshot_is_caught)
{
    uint64_t seed = test_seed() + 3;
    jr__rand r;
    jr__rand_seed(&r, seed);
    jr__meta_state st, tgt;
    sample_state(&st);
    jr__buf snap, orig, again;
    jr__buf_init(&snap, NULL);
    jr__buf_init(&orig, NULL);
    jr__buf_init(&again, NULL);
    snapshot(&st, &snap);
    /* the target holds something else; a failed restore must leave it exactly so */
    jr__meta_state_init(&tgt, NULL, 3);
    jr__meta_op op = op_server("zz", NULL, 0);
    jr__meta_result res;
    apply(&tgt, 1, &op, &res);
    snapshot(&tgt, &orig);
    for (size_t len = 0; len < snap.len; len++) {
        uint8_t *d = malloc(len ? len : 1);
        memcpy(d, snap.data, len);
        ck_assert_msg(jr__meta_restore(&tgt, d, len) == JR_ECORRUPT, "cut at %zu", len);
        if (len >= 13) {
            reseal(d, len);
            ck_assert_msg(jr__meta_restore(&tgt, d, len) == JR_ECORRUPT, "cut at %zu resealed",
                          len);
        }
        free(d);
    }
    int restored = 0;
    for (int it = 0; it < 5000; it++) {
        uint8_t *d = malloc(snap.len);
        memcpy(d, snap.data, snap.len);
        size_t at = 4 + (size_t)jr__rand_below(&r, snap.len - 12);
        if (jr__rand_below(&r, 2))
            d[at] ^= (uint8_t)(1u << jr__rand_below(&r, 8));
        else
            d[at] = (uint8_t)jr__rand_next(&r);
        reseal(d, snap.len);
        int rc = jr__meta_restore(&tgt, d, snap.len);
        ck_assert_msg(rc == 0 || rc == JR_ECORRUPT || rc == JR_EVERSION,
                      "seed %" PRIu64 " (JR_TEST_SEED) iteration %d: %d", seed, it, rc);
        snapshot(&tgt, &again);
        if (rc == 0) {
            /* whatever restores is canonical: it snapshots to the same bytes */
            restored++;
            ck_assert_msg(again.len == snap.len && memcmp(again.data, d, snap.len) == 0,
                          "seed %" PRIu64 " iteration %d: not canonical", seed, it);
            ck_assert_int_eq(jr__meta_restore(&tgt, orig.data, orig.len), 0);
        } else {
            ck_assert_msg(again.len == orig.len && memcmp(again.data, orig.data, orig.len) == 0,
                          "seed %" PRIu64 " iteration %d: a failed restore changed the state", seed,
                          it);
        }
        free(d);
    }
    printf("meta: snapshot of %zu bytes, 5000 resealed mutations: %d restored canonically\n",
           snap.len, restored);
    jr__meta_state_free(&st);
    jr__meta_state_free(&tgt);
    jr__buf_free(&snap);
    jr__buf_free(&orig);
    jr__buf_free(&again);
}
END_TEST

/* Snapshots written by hand, to break one invariant at a time. */
typedef struct hs_stream {
    const char *name;
    const char *subject;
    int replicas;
    const char *peers[3];
    size_t npeers;
    uint64_t group, created, updated;
    uint64_t peers_at, converged_at; /* version 3 only */
} hs_stream;

static int hs_version = 1; /* the version hand_snapshot writes (1 or 3) */

static void hand_snapshot(jr__buf *b, uint64_t applied, uint64_t next_group,
                          const char *const *servers, size_t nservers, const hs_stream *streams,
                          size_t nstreams)
{
    jr__buf_reset(b);
    jr__buf_put(b, "JRMS", 4);
    jr__buf_u8(b, (uint8_t)hs_version);
    jr__buf_varint(b, applied);
    jr__buf_varint(b, next_group);
    jr__buf_varint(b, nservers);
    for (size_t i = 0; i < nservers; i++) {
        jr__meta_put_str(b, servers[i]);
        jr__meta_put_str(b, "east");
        jr__buf_varint(b, 0);
        jr__buf_varint(b, 0);
        jr__buf_varint(b, 0);
    }
    jr__buf_varint(b, nstreams);
    jr__buf cfg;
    jr__buf_init(&cfg, NULL);
    for (size_t i = 0; i < nstreams; i++) {
        const hs_stream *s = &streams[i];
        jr_stream_config c = scfg(s->name, &s->subject, 1, s->replicas);
        jr__buf_reset(&cfg);
        ck_assert_int_eq(jr__stream_config_encode(&c, &cfg), 0);
        jr__buf_bytes(b, cfg.data, cfg.len);
        jr__buf_varint(b, s->npeers);
        for (size_t k = 0; k < s->npeers; k++) jr__meta_put_str(b, s->peers[k]);
        jr__buf_varint(b, s->group);
        jr__buf_varint(b, s->created);
        jr__buf_varint(b, s->updated);
        if (hs_version >= 3) {
            jr__buf_varint(b, 0); /* created_ns */
            jr__buf_varint(b, s->peers_at);
            jr__buf_varint(b, s->converged_at);
            jr__buf_varint(b, 3); /* floor: term, commit term, commit */
            jr__buf_varint(b, 2);
            jr__buf_varint(b, 40);
        }
    }
    jr__buf_free(&cfg);
    jr__buf_u64(b, jr__xxh3(b->data, b->len));
}

START_TEST(restore_checks_every_invariant)
{
    static const char *srv[] = {"n1", "n2", "n3"};
    static const char *unsorted[] = {"n2", "n1"};
    static const char *dup[] = {"n1", "n1"};
    const hs_stream good[2] = {
        {"A", "a.>", 1, {"n1"}, 1, 10, 5, 6, 0, 0},
        {"B", "b", 3, {"n1", "n2", "n3"}, 3, 11, 7, 9, 0, 0},
    };
    struct {
        const char *what;
        int want;
        hs_stream s[2];
        uint64_t applied, next_group;
        const char *const *servers;
        size_t nservers;
    } cases[] = {
        {"valid", 0, {good[0], good[1]}, 9, 12, srv, 3},
        {"streams out of order", JR_ECORRUPT, {good[1], good[0]}, 9, 12, srv, 3},
        {"servers out of order", JR_ECORRUPT, {good[0], good[1]}, 9, 12, unsorted, 2},
        {"duplicate servers", JR_ECORRUPT, {good[0], good[1]}, 9, 12, dup, 2},
        {"duplicate group ids", JR_ECORRUPT, {good[0], good[1]}, 9, 12, srv, 3},
        {"group id 0", JR_ECORRUPT, {good[0], good[1]}, 9, 12, srv, 3},
        {"group id not below next_group", JR_ECORRUPT, {good[0], good[1]}, 9, 11, srv, 3},
        {"next_group 0", JR_ECORRUPT, {good[0], good[1]}, 9, 0, srv, 3},
        {"updated after applied", JR_ECORRUPT, {good[0], good[1]}, 8, 12, srv, 3},
        {"created after updated", JR_ECORRUPT, {good[0], good[1]}, 9, 12, srv, 3},
        {"created 0", JR_ECORRUPT, {good[0], good[1]}, 9, 12, srv, 3},
        {"fewer peers than replicas", JR_ECORRUPT, {good[0], good[1]}, 9, 12, srv, 3},
        {"duplicate peers", JR_ECORRUPT, {good[0], good[1]}, 9, 12, srv, 3},
        {"overlapping subjects", JR_ECORRUPT, {good[0], good[1]}, 9, 12, srv, 3},
    };
    cases[4].s[1].group = 10;
    cases[5].s[0].group = 0;
    cases[9].s[1].created = 10;
    cases[9].s[1].updated = 9;
    cases[10].s[0].created = 0;
    cases[11].s[1].npeers = 2;
    cases[12].s[1].peers[2] = "n1";
    cases[13].s[1].subject = "a.b";
    jr__buf b;
    jr__buf_init(&b, NULL);
    for (size_t i = 0; i < N(cases); i++) {
        hand_snapshot(&b, cases[i].applied, cases[i].next_group, cases[i].servers,
                      cases[i].nservers, cases[i].s, 2);
        jr__meta_state st;
        jr__meta_state_init(&st, NULL, 1);
        int rc = jr__meta_restore(&st, b.data, b.len);
        ck_assert_msg(rc == cases[i].want, "%s: got %d, want %d", cases[i].what, rc, cases[i].want);
        jr__meta_state_free(&st);
    }
    /* version 3: peer change indexes, created <= converged_at <= peers_at <= updated */
    hs_version = 3;
    const hs_stream g3[2] = {
        {"A", "a.>", 1, {"n1"}, 1, 10, 5, 6, 5, 5},
        {"B", "b", 3, {"n1", "n2", "n3"}, 3, 11, 7, 9, 8, 7},
    };
    struct {
        const char *what;
        int want;
        int idx;
        uint64_t peers_at, converged_at;
    } v3[] = {
        {"v3 valid", 0, 1, 8, 7},
        {"v3 converged before created", JR_ECORRUPT, 1, 8, 6},
        {"v3 converged after peers_at", JR_ECORRUPT, 1, 8, 9},
        {"v3 peers_at after updated", JR_ECORRUPT, 1, 10, 7},
        {"v3 peers_at 0", JR_ECORRUPT, 0, 0, 0},
    };
    for (size_t i = 0; i < N(v3); i++) {
        hs_stream ss[2] = {g3[0], g3[1]};
        ss[v3[i].idx].peers_at = v3[i].peers_at;
        ss[v3[i].idx].converged_at = v3[i].converged_at;
        hand_snapshot(&b, 9, 12, srv, 3, ss, 2);
        jr__meta_state st;
        jr__meta_state_init(&st, NULL, 1);
        int rc = jr__meta_restore(&st, b.data, b.len);
        ck_assert_msg(rc == v3[i].want, "%s: got %d, want %d", v3[i].what, rc, v3[i].want);
        if (rc == 0) {
            const jr__meta_stream *x = jr__meta_stream_find(&st, "B");
            ck_assert_uint_eq(x->peers_at, 8);
            ck_assert_uint_eq(x->converged_at, 7);
            ck_assert_uint_eq(x->floor_term, 3);
            ck_assert_uint_eq(x->floor_commit_term, 2);
            ck_assert_uint_eq(x->floor_commit, 40);
            ck_assert(jr__meta_stream_busy(x));
        }
        jr__meta_state_free(&st);
    }
    hs_version = 1;
    { /* version 1 (and 2): the original peers, converged */
        hand_snapshot(&b, 9, 12, srv, 3, good, 2);
        jr__meta_state st;
        jr__meta_state_init(&st, NULL, 1);
        ck_assert_int_eq(jr__meta_restore(&st, b.data, b.len), 0);
        const jr__meta_stream *x = jr__meta_stream_find(&st, "B");
        ck_assert_uint_eq(x->peers_at, 7);
        ck_assert_uint_eq(x->converged_at, 7);
        ck_assert(jr__meta_stream_bootstraps(x));
        jr__meta_state_free(&st);
    }
    /* an unknown version (intact) and a wrong magic */
    hand_snapshot(&b, 9, 12, srv, 3, good, 2);
    b.data[4] = JR__META_SNAP_VERSION + 1;
    reseal(b.data, b.len);
    jr__meta_state st;
    jr__meta_state_init(&st, NULL, 1);
    ck_assert_int_eq(jr__meta_restore(&st, b.data, b.len), JR_EVERSION);
    b.data[4] = 1;
    b.data[0] = 'X';
    reseal(b.data, b.len);
    ck_assert_int_eq(jr__meta_restore(&st, b.data, b.len), JR_ECORRUPT);
    jr__meta_state_free(&st);
    jr__buf_free(&b);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Desired state
 */
static const jr__meta_action *find_action(const jr__meta_plan *p, int kind, uint64_t group)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->actions[i].kind == kind && p->actions[i].group == group) return &p->actions[i];
    return NULL;
}

START_TEST(desired_state_diff_lists_create_update_and_leave)
{
    jr__meta_state st;
    cluster(&st);
    static const char *sa[] = {"a"}, *sb[] = {"b"}, *sc[] = {"c"}, *sd[] = {"d"};
    static const char *on_n1[] = {"n1"};
    jr_stream_config a = scfg("A", sa, 1, 3), b = scfg("B", sb, 1, 3), c = scfg("C", sc, 1, 1),
                     d = scfg("D", sd, 1, 3);
    jr__meta_result res;
    jr__meta_op op = op_stream(JR__META_STREAM_ADD, &a, peers3, 3);
    ck_assert_int_eq(apply(&st, 10, &op, &res), 0);
    uint64_t ga = res.assignment->group;
    op = op_stream(JR__META_STREAM_ADD, &b, peers3, 3);
    ck_assert_int_eq(apply(&st, 11, &op, &res), 0);
    uint64_t gb = res.assignment->group;
    op = op_stream(JR__META_STREAM_ADD, &c, on_n1, 1);
    ck_assert_int_eq(apply(&st, 12, &op, &res), 0);
    uint64_t gc = res.assignment->group;
    op = op_stream(JR__META_STREAM_ADD, &d, peers3, 3);
    ck_assert_int_eq(apply(&st, 13, &op, &res), 0);
    uint64_t gd = res.assignment->group;

    /* n1 after a restart: it ran A (current), B, C and an old group 7 */
    jr__meta_local local[] = {{gc, 12}, {ga, 10}, {7, 3}, {gb, 11}};
    jr__meta_plan plan;
    ck_assert_int_eq(jr__meta_desired(&st, "n1", local, N(local), &plan), 0);
    ck_assert_uint_eq(plan.n, 2); /* leave 7, create D */
    ck_assert_int_eq(plan.actions[0].kind, JR__META_LEAVE);
    ck_assert_uint_eq(plan.actions[0].group, 7);
    ck_assert_ptr_null(plan.actions[0].stream);
    ck_assert_int_eq(plan.actions[1].kind, JR__META_CREATE);
    ck_assert_str_eq(plan.actions[1].stream->name, "D");
    ck_assert_uint_eq(plan.actions[1].group, gd);
    jr__meta_plan_free(&plan);

    /* meanwhile B moved off n1, C's limits changed, D was deleted and re-created */
    op = op_stream(JR__META_STREAM_UPDATE, &b, peers234, 3);
    ck_assert_int_eq(apply(&st, 20, &op, &res), 0);
    c.max_msgs = 10;
    op = op_stream(JR__META_STREAM_UPDATE, &c, on_n1, 1);
    ck_assert_int_eq(apply(&st, 21, &op, &res), 0);
    op = op_delete("D");
    ck_assert_int_eq(apply(&st, 22, &op, &res), 0);
    op = op_stream(JR__META_STREAM_ADD, &d, peers3, 3);
    ck_assert_int_eq(apply(&st, 23, &op, &res), 0);
    uint64_t gd2 = res.assignment->group;
    ck_assert_uint_ne(gd2, gd);
    jr__meta_local now[] = {{ga, 10}, {gb, 11}, {gc, 12}, {gd, 13}};
    ck_assert_int_eq(jr__meta_desired(&st, "n1", now, N(now), &plan), 0);
    ck_assert_uint_eq(plan.n, 4);
    const jr__meta_action *x = find_action(&plan, JR__META_LEAVE, gb);
    ck_assert_ptr_nonnull(x);
    ck_assert_str_eq(x->stream->name, "B"); /* still exists, not here */
    x = find_action(&plan, JR__META_LEAVE, gd);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_null(x->stream); /* gone */
    x = find_action(&plan, JR__META_UPDATE, gc);
    ck_assert_ptr_nonnull(x);
    ck_assert_int_eq(x->stream->cfg->c.max_msgs, 10);
    ck_assert_ptr_nonnull(find_action(&plan, JR__META_CREATE, gd2));
    /* leaves come first, ascending */
    ck_assert_int_eq(plan.actions[0].kind, JR__META_LEAVE);
    ck_assert_int_eq(plan.actions[1].kind, JR__META_LEAVE);
    ck_assert_uint_lt(plan.actions[0].group, plan.actions[1].group);
    jr__meta_plan_free(&plan);

    /* n4 from scratch: B and the new D; n5: nothing */
    ck_assert_int_eq(jr__meta_desired(&st, "n4", NULL, 0, &plan), 0);
    ck_assert_uint_eq(plan.n, 1);
    ck_assert_str_eq(plan.actions[0].stream->name, "B");
    jr__meta_plan_free(&plan);
    ck_assert_int_eq(jr__meta_desired(&st, "n5", NULL, 0, &plan), 0);
    ck_assert_uint_eq(plan.n, 0);
    jr__meta_plan_free(&plan);

    /* bad input */
    jr__meta_local twice[] = {{ga, 1}, {ga, 2}};
    ck_assert_int_eq(jr__meta_desired(&st, "n1", twice, 2, &plan), JR_EINVAL);
    jr__meta_plan_free(&plan);
    jr__meta_local zero[] = {{0, 1}};
    ck_assert_int_eq(jr__meta_desired(&st, "n1", zero, 1, &plan), JR_EINVAL);
    ck_assert_int_eq(jr__meta_desired(&st, NULL, NULL, 0, &plan), JR_EINVAL);
    jr__meta_plan_free(&plan);
    jr__meta_state_free(&st);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Allocation failures
 */
typedef struct faulty {
    long countdown; /* fail the allocation that brings it to 0; < 0: never */
    long calls;
} faulty;

static void *f_malloc(void *ctx, size_t n)
{
    faulty *f = ctx;
    f->calls++;
    if (f->countdown >= 0 && f->countdown-- == 0) return NULL;
    return malloc(n);
}

static void *f_realloc(void *ctx, void *p, size_t n)
{
    faulty *f = ctx;
    f->calls++;
    if (f->countdown >= 0 && f->countdown-- == 0) return NULL;
    return realloc(p, n);
}

static void f_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

/* For each op of a script, fails the 1st, 2nd, ... allocation of its apply: every failure is
 * JR_ENOMEM with the state (and applied index) exactly as before; then it applies normally. */
START_TEST(allocation_failures_never_half_apply_an_op)
{
    faulty f = {-1, 0};
    jr_allocator fa = {JR_ALLOCATOR_VERSION, &f, f_malloc, f_realloc, f_free};
    jr__meta_state st;
    jr__meta_state_init(&st, &fa, FIRST_GROUP);
    static const char *names[] = {"n1", "n2", "n3", "n4"};
    static const char *subj[] = {"orders.>", "returns.*"}, *subj2[] = {"orders.>", "x.*.y"};
    static const char *other[] = {"audit.>"};
    jr_stream_config c = scfg("ORDERS", subj, 2, 3), u = scfg("ORDERS", subj2, 2, 3);
    jr_stream_config o = scfg("AUDIT", other, 1, 3);
    u.max_msgs = 7;
    jr__meta_op script[9];
    for (int i = 0; i < 4; i++) script[i] = op_server(names[i], tags_az1, 2);
    script[4] = op_stream(JR__META_STREAM_ADD, &c, peers3, 3);
    script[5] = op_stream(JR__META_STREAM_ADD, &o, peers234, 3);
    script[6] = op_stream(JR__META_STREAM_UPDATE, &u, peers234, 3);
    script[7] = op_delete("AUDIT");
    script[8] = op_server("n2", NULL, 0);
    jr__buf enc, before, after;
    jr__buf_init(&enc, NULL);
    jr__buf_init(&before, NULL);
    jr__buf_init(&after, NULL);
    uint64_t index = 0;
    long failures = 0;
    for (size_t k = 0; k < N(script); k++) {
        encode(&script[k], &enc);
        snapshot(&st, &before);
        index++;
        jr__meta_result res;
        for (long n = 0;; n++) {
            f.countdown = n;
            int rc = jr__meta_apply(&st, index, enc.data, enc.len, &res);
            f.countdown = -1;
            if (rc == 0) break;
            ck_assert_msg(rc == JR_ENOMEM, "op %zu, failing allocation %ld: %d", k, n, rc);
            failures++;
            snapshot(&st, &after);
            ck_assert_msg(after.len == before.len &&
                              memcmp(after.data, before.data, before.len) == 0,
                          "op %zu, failing allocation %ld: state changed", k, n);
        }
        ck_assert_msg(res.status == 0, "op %zu: %s", k, res.msg);
        ck_assert_int_eq(res.changed, 1);
    }
    /* restore and the desired-state diff fail cleanly too */
    snapshot(&st, &before);
    jr__meta_state st2;
    jr__meta_state_init(&st2, &fa, 1);
    for (long n = 0;; n++) {
        f.countdown = n;
        int rc = jr__meta_restore(&st2, before.data, before.len);
        f.countdown = -1;
        if (rc == 0) break;
        ck_assert_int_eq(rc, JR_ENOMEM);
        ck_assert_uint_eq(st2.nservers, 0);
        failures++;
    }
    snapshot(&st2, &after);
    ck_assert_int_eq(memcmp(after.data, before.data, before.len), 0);
    jr__meta_local local[] = {{5, 1}};
    jr__meta_plan plan;
    for (long n = 0;; n++) {
        f.countdown = n;
        int rc = jr__meta_desired(&st, "n2", local, 1, &plan);
        f.countdown = -1;
        if (rc == 0) break;
        ck_assert_int_eq(rc, JR_ENOMEM);
        ck_assert_uint_eq(plan.n, 0);
        jr__meta_plan_free(&plan);
    }
    ck_assert_uint_eq(plan.n, 2); /* leave 5, create ORDERS */
    jr__meta_plan_free(&plan);
    ck_assert_int_gt(failures, 20);
    jr__meta_state_free(&st);
    jr__meta_state_free(&st2);
    jr__buf_free(&enc);
    jr__buf_free(&before);
    jr__buf_free(&after);
}
END_TEST

static Suite *meta_state_suite(void)
{
    Suite *s = suite_create("meta state");
    TCase *ops = tcase_create("ops");
    tcase_add_test(ops, every_op_round_trips_canonically);
    tcase_add_test(ops, the_encoder_refuses_what_the_decoder_would_reject);
    tcase_add_test(ops, every_truncation_and_extension_of_an_op_is_rejected);
    tcase_add_test(ops, resealed_mutations_decode_canonically_or_fail);
    tcase_add_test(ops, random_bytes_are_rejected);
    tcase_add_loop_test(ops, each_op_decoding_rule_is_enforced, 0, (int)N(op_cases));
    tcase_add_test(
        ops, an_embedded_config_is_checked_with_its_own_checksum_and_peers_with_the_names_rule);
    suite_add_tcase(s, ops);
    TCase *apply_tc = tcase_create("apply");
    tcase_add_test(apply_tc, add_creates_an_assignment_with_a_fresh_group);
    tcase_add_test(apply_tc, an_assignment_version_outlives_its_replacement);
    tcase_add_test(apply_tc, the_result_names_the_group_of_the_stream_an_op_changed);
    tcase_add_test(apply_tc, a_stream_keeps_the_creation_time_of_its_add);
    tcase_add_test(apply_tc, identical_re_add_is_idempotent_and_a_different_config_is_eexist);
    tcase_add_test(apply_tc, overlapping_subjects_are_refused_naming_the_stream);
    tcase_add_test(apply_tc, overlaps_among_many_subjects_are_found_and_named);
    tcase_add_test(apply_tc, peers_must_be_exactly_the_replicas_on_known_servers);
    tcase_add_test(apply_tc, update_changes_what_jetstream_allows);
    tcase_add_test(apply_tc, a_peer_change_is_busy_until_its_group_reports_convergence);
    tcase_add_test(apply_tc, delete_removes_and_a_re_created_stream_gets_a_new_group);
    tcase_add_test(apply_tc, server_info_is_an_upsert);
    tcase_add_test(apply_tc, undecodable_ops_are_refused_alike_and_newer_ones_stop_the_replica);
    tcase_add_test(apply_tc, check_is_a_dry_run_of_apply);
    tcase_add_test(apply_tc, placement_view_counts_assets_and_reserved_bytes);
    tcase_add_test(apply_tc, allocation_failures_never_half_apply_an_op);
    suite_add_tcase(s, apply_tc);
    TCase *snap = tcase_create("determinism and snapshots");
    tcase_add_test(snap, replicas_applying_the_same_log_write_identical_snapshots);
    tcase_add_test(snap, snapshot_restore_gives_an_identical_state);
    tcase_add_test(snap, every_truncation_and_resealed_mutation_of_a_snapshot_is_caught);
    tcase_add_test(snap, restore_checks_every_invariant);
    suite_add_tcase(s, snap);
    TCase *desired = tcase_create("desired state");
    tcase_add_test(desired, desired_state_diff_lists_create_update_and_leave);
    suite_add_tcase(s, desired);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(meta_state_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
