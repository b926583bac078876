/* Stream configuration: JetStream's defaults, every field's invalid values (JR_EINVAL naming the
 * field), the normal form and equality, owned copies, the strict encoding, the update rules. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/config.h"
#include "util/checksum.h"
#include "util/rand.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static jr_stream_config base(void)
{
    jr_stream_config c;
    jr_stream_config_init(&c);
    c.name = "ORDERS";
    return c;
}

static const char *full_subjects[] = {"orders.>", "refunds.*.eu", "audit"};
static const char *full_tags[] = {"az:1", "!slow", "ssd"};
static const jr_kv full_meta[] = {{"owner", "team-a"}, {"tier", ""}, {"ü", "ñ"}};

/* A placement of c the test may change: a copy of c's (or an empty one) that c then points to.
 * One at a time: the next call reuses it. */
static jr_placement *pl(jr_stream_config *c)
{
    static jr_placement p;
    jr_placement q;
    jr_placement_init(&q);
    if (c->placement) q = *c->placement;
    p = q;
    c->placement = &p;
    return &p;
}

/* Every field away from its default. */
static jr_stream_config full(void)
{
    jr_stream_config c = base();
    c.description = "orders of every region";
    c.subjects = full_subjects;
    c.nsubjects = N(full_subjects);
    c.retention = JR_RETAIN_INTEREST;
    c.max_consumers = 10;
    c.max_msgs = 1000000;
    c.max_bytes = (int64_t)1 << 40;
    c.max_age_ns = 86400ULL * 1000000000ULL;
    c.max_msgs_per_subject = 5;
    c.max_msg_size = 1 << 20;
    c.discard = JR_DISCARD_NEW;
    c.storage = JR_STORAGE_MEMORY;
    c.replicas = 3;
    c.duplicate_window_ns = 30ULL * 1000000000ULL;
    static jr_placement full_pl;
    jr_placement_init(&full_pl);
    full_pl.cluster = "east";
    full_pl.tags = full_tags;
    full_pl.ntags = N(full_tags);
    c.placement = &full_pl;
    c.deny_delete = 1;
    c.allow_rollup = 1;
    c.compression = JR_COMPRESS_LZ4;
    c.metadata = full_meta;
    c.nmetadata = N(full_meta);
    c.allow_direct = 1;
    return c;
}

START_TEST(init_gives_jetstream_defaults)
{
    jr_stream_config c;
    memset(&c, 0xab, sizeof c);
    jr_stream_config_init(&c);
    ck_assert_uint_eq(c.size, sizeof c);
    ck_assert_ptr_null(c.name);
    ck_assert_uint_eq(c.nsubjects, 0);
    ck_assert_int_eq(c.retention, JR_RETAIN_LIMITS);
    ck_assert_int_eq(c.max_consumers, -1);
    ck_assert_int_eq(c.max_msgs, -1);
    ck_assert_int_eq(c.max_bytes, -1);
    ck_assert_uint_eq(c.max_age_ns, 0);
    ck_assert_int_eq(c.max_msgs_per_subject, -1);
    ck_assert_int_eq(c.max_msg_size, -1);
    ck_assert_int_eq(c.discard, JR_DISCARD_OLD);
    ck_assert_int_eq(c.storage, JR_STORAGE_FILE);
    ck_assert_int_eq(c.replicas, 1);
    ck_assert_int_eq(c.sealed | c.deny_delete | c.deny_purge | c.allow_rollup, 0);
    ck_assert_int_eq(c.allow_direct, 0);
    ck_assert_int_eq(c.compression, JR_COMPRESS_NONE);
    ck_assert_ptr_null(c.placement);
    jr_stream_config_init_size(NULL, sizeof(jr_stream_config)); /* harmless */

    /* a name is all a config needs */
    c.name = "ORDERS";
    char msg[256];
    ck_assert_int_eq(jr__stream_config_validate(&c, msg, sizeof msg), 0);
    ck_assert_str_eq(msg, "");
    jr__stream_norm n;
    jr__stream_config_normalize(&c, &n);
    ck_assert_uint_eq(n.c.nsubjects, 1);
    ck_assert_str_eq(n.c.subjects[0], "ORDERS");
    ck_assert_uint_eq(n.c.duplicate_window_ns, 120ULL * 1000000000ULL);
    jr_stream_config f = full();
    ck_assert_int_eq(jr__stream_config_validate(&f, msg, sizeof msg), 0);
}
END_TEST

/* A stream of 20,000 subjects validates without comparing its subjects pairwise (that was
 * 2 * 10^8 overlap checks: minutes, beyond this test's timeout); an overlap or a duplicate at
 * the end is found and named with the earliest subject it collides with. */
START_TEST(twenty_thousand_subjects_validate_in_near_linear_time)
{
    enum { N = 20000 };
    static char buf[N + 1][40];
    static const char *subj[N + 1];
    for (size_t k = 0; k < N; k++) {
        if (k % 2)
            snprintf(buf[k], sizeof buf[k], "orders.%zu.*", k);
        else
            snprintf(buf[k], sizeof buf[k], "devices.d%zu.>", k);
        subj[k] = buf[k];
    }
    jr_stream_config c;
    jr_stream_config_init(&c);
    c.name = "MANY";
    c.subjects = subj;
    c.nsubjects = N;
    char msg[256];
    ck_assert_msg(jr__stream_config_validate(&c, msg, sizeof msg) == 0, "%s", msg);
    c.nsubjects = N + 1;
    subj[N] = "orders.*.x"; /* overlaps orders.<k>.* for every odd k */
    ck_assert_int_eq(jr__stream_config_validate(&c, msg, sizeof msg), JR_EINVAL);
    ck_assert_str_eq(msg, "subjects[20000]: \"orders.*.x\" overlaps \"orders.1.*\"");
    subj[N] = buf[4];
    ck_assert_int_eq(jr__stream_config_validate(&c, msg, sizeof msg), JR_EINVAL);
    ck_assert_str_eq(msg, "subjects[20000]: duplicate subject \"devices.d4.>\"");
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Every field's invalid values.
 */
static char long_name[JR_STREAM_NAME_MAX + 2];
static char long_desc[JR__STREAM_DESCRIPTION_MAX + 2];
static char long_tag[JR__STREAM_TAG_MAX + 2];
static char big_value[JR__STREAM_METADATA_MAX];
static const char *subj_null[] = {"ok", NULL};
static const char *subj_empty_tok[] = {"a..b"};
static const char *subj_fwc_mid[] = {"a.>.b"};
static const char *subj_space[] = {"a b"};
static const char *subj_all[] = {">"};
static const char *subj_dup[] = {"a.b", "a.b"};
static const char *subj_overlap[] = {"a.*", "x", "a.b"};
static const char *tags_null[] = {"ssd", NULL};
static const char *tags_empty[] = {""};
static const char *tags_bang[] = {"!"};
static const char *tags_space[] = {"s sd"};
static const char *tags_both[] = {"ssd", "!SSD"};
static const char *tags_long[] = {long_tag};
static const jr_kv meta_nokey[] = {{"", "v"}};
static const jr_kv meta_nullkey[] = {{NULL, "v"}};
static const jr_kv meta_nullval[] = {{"k", NULL}};
static const jr_kv meta_dup[] = {{"k", "1"}, {"k", "2"}};
static const jr_kv meta_big[] = {{"k", big_value}, {"k2", "x"}};

typedef struct bad_case {
    const char *field; /* the message must start with "<field>:" */
    void (*mutate)(jr_stream_config *);
} bad_case;

static void m_size0(jr_stream_config *c)
{
    c->size = 0;
}
static void m_size_small(jr_stream_config *c)
{
    c->size = sizeof *c - 1;
}
static void m_name_null(jr_stream_config *c)
{
    c->name = NULL;
}
static void m_name_empty(jr_stream_config *c)
{
    c->name = "";
}
static void m_name_long(jr_stream_config *c)
{
    c->name = long_name;
}
static void m_name_space(jr_stream_config *c)
{
    c->name = "OR DERS";
}
static void m_name_tab(jr_stream_config *c)
{
    c->name = "OR\tDERS";
}
static void m_name_nl(jr_stream_config *c)
{
    c->name = "ORDERS\n";
}
static void m_name_ctl(jr_stream_config *c)
{
    c->name = "OR\x01";
}
static void m_name_dot(jr_stream_config *c)
{
    c->name = "ORD.ERS";
}
static void m_name_star(jr_stream_config *c)
{
    c->name = "ORDERS*";
}
static void m_name_gt(jr_stream_config *c)
{
    c->name = ">";
}
static void m_name_slash(jr_stream_config *c)
{
    c->name = "a/b";
}
static void m_name_bslash(jr_stream_config *c)
{
    c->name = "a\\b";
}
static void m_desc_long(jr_stream_config *c)
{
    c->description = long_desc;
}
static void m_subj_nullarr(jr_stream_config *c)
{
    c->subjects = NULL, c->nsubjects = 2;
}
static void m_subj_null(jr_stream_config *c)
{
    c->subjects = subj_null, c->nsubjects = 2;
}
static void m_subj_empty(jr_stream_config *c)
{
    c->subjects = subj_empty_tok, c->nsubjects = 1;
}
static void m_subj_fwc(jr_stream_config *c)
{
    c->subjects = subj_fwc_mid, c->nsubjects = 1;
}
static void m_subj_space(jr_stream_config *c)
{
    c->subjects = subj_space, c->nsubjects = 1;
}
static void m_subj_all(jr_stream_config *c)
{
    c->subjects = subj_all, c->nsubjects = 1;
}
static void m_subj_dup(jr_stream_config *c)
{
    c->subjects = subj_dup, c->nsubjects = 2;
}
static void m_subj_overlap(jr_stream_config *c)
{
    c->subjects = subj_overlap, c->nsubjects = 3;
}
static void m_ret_neg(jr_stream_config *c)
{
    c->retention = -1;
}
static void m_ret_big(jr_stream_config *c)
{
    c->retention = 3;
}
static void m_maxcons(jr_stream_config *c)
{
    c->max_consumers = -2;
}
static void m_maxmsgs(jr_stream_config *c)
{
    c->max_msgs = -2;
}
static void m_maxbytes(jr_stream_config *c)
{
    c->max_bytes = INT64_MIN;
}
static void m_age_tiny(jr_stream_config *c)
{
    c->max_age_ns = 1;
}
static void m_age_99ms(jr_stream_config *c)
{
    c->max_age_ns = 99999999;
}
static void m_age_huge(jr_stream_config *c)
{
    c->max_age_ns = UINT64_MAX;
}
static void m_mps(jr_stream_config *c)
{
    c->max_msgs_per_subject = -5;
}
static void m_mms(jr_stream_config *c)
{
    c->max_msg_size = -2;
}
static void m_discard(jr_stream_config *c)
{
    c->discard = 2;
}
static void m_discard_neg(jr_stream_config *c)
{
    c->discard = -1;
}
static void m_storage(jr_stream_config *c)
{
    c->storage = 2;
}
static void m_repl_neg(jr_stream_config *c)
{
    c->replicas = -1;
}
static void m_repl_6(jr_stream_config *c)
{
    c->replicas = 6;
}
static void m_repl_big(jr_stream_config *c)
{
    c->replicas = 100;
}
static void m_dup_tiny(jr_stream_config *c)
{
    c->duplicate_window_ns = 1000;
}
static void m_dup_huge(jr_stream_config *c)
{
    c->duplicate_window_ns = UINT64_MAX;
}
static void m_dup_gt_age(jr_stream_config *c)
{
    c->max_age_ns = 1000000000ULL;
    c->duplicate_window_ns = 2000000000ULL;
}
static void m_cluster_space(jr_stream_config *c)
{
    pl(c)->cluster = "us east";
}
static void m_cluster_long(jr_stream_config *c)
{
    pl(c)->cluster = long_tag;
}
static void m_tags_nullarr(jr_stream_config *c)
{
    pl(c)->tags = NULL, pl(c)->ntags = 1;
}
static void m_tags_null(jr_stream_config *c)
{
    pl(c)->tags = tags_null, pl(c)->ntags = 2;
}
static void m_tags_empty(jr_stream_config *c)
{
    pl(c)->tags = tags_empty, pl(c)->ntags = 1;
}
static void m_tags_bang(jr_stream_config *c)
{
    pl(c)->tags = tags_bang, pl(c)->ntags = 1;
}
static void m_tags_space(jr_stream_config *c)
{
    pl(c)->tags = tags_space, pl(c)->ntags = 1;
}
static void m_tags_both(jr_stream_config *c)
{
    pl(c)->tags = tags_both, pl(c)->ntags = 2;
}
static void m_tags_long(jr_stream_config *c)
{
    pl(c)->tags = tags_long, pl(c)->ntags = 1;
}
static void m_sealed(jr_stream_config *c)
{
    c->sealed = 2;
}
static void m_deny_delete(jr_stream_config *c)
{
    c->deny_delete = -1;
}
static void m_deny_purge(jr_stream_config *c)
{
    c->deny_purge = 5;
}
static void m_rollup(jr_stream_config *c)
{
    c->allow_rollup = 7;
}
static void m_rollup_purge(jr_stream_config *c)
{
    c->deny_purge = 1, c->allow_rollup = 1;
}
static void m_direct(jr_stream_config *c)
{
    c->allow_direct = 3;
}
static void m_compress(jr_stream_config *c)
{
    c->compression = 2;
}
static void m_compress_neg(jr_stream_config *c)
{
    c->compression = -1;
}
static void m_meta_nullarr(jr_stream_config *c)
{
    c->metadata = NULL, c->nmetadata = 1;
}
static void m_meta_nokey(jr_stream_config *c)
{
    c->metadata = meta_nokey, c->nmetadata = 1;
}
static void m_meta_nullkey(jr_stream_config *c)
{
    c->metadata = meta_nullkey, c->nmetadata = 1;
}
static void m_meta_nullval(jr_stream_config *c)
{
    c->metadata = meta_nullval, c->nmetadata = 1;
}
static void m_meta_dup(jr_stream_config *c)
{
    c->metadata = meta_dup, c->nmetadata = 2;
}
static void m_meta_big(jr_stream_config *c)
{
    c->metadata = meta_big, c->nmetadata = 2;
}

static const bad_case bad[] = {
    {"size", m_size0},
    {"size", m_size_small},
    {"name", m_name_null},
    {"name", m_name_empty},
    {"name", m_name_long},
    {"name", m_name_space},
    {"name", m_name_tab},
    {"name", m_name_nl},
    {"name", m_name_ctl},
    {"name", m_name_dot},
    {"name", m_name_star},
    {"name", m_name_gt},
    {"name", m_name_slash},
    {"name", m_name_bslash},
    {"description", m_desc_long},
    {"subjects", m_subj_nullarr},
    {"subjects[1]", m_subj_null},
    {"subjects[0]", m_subj_empty},
    {"subjects[0]", m_subj_fwc},
    {"subjects[0]", m_subj_space},
    {"subjects[0]", m_subj_all},
    {"subjects[1]", m_subj_dup},
    {"subjects[2]", m_subj_overlap},
    {"retention", m_ret_neg},
    {"retention", m_ret_big},
    {"max_consumers", m_maxcons},
    {"max_msgs", m_maxmsgs},
    {"max_bytes", m_maxbytes},
    {"max_age_ns", m_age_tiny},
    {"max_age_ns", m_age_99ms},
    {"max_age_ns", m_age_huge},
    {"max_msgs_per_subject", m_mps},
    {"max_msg_size", m_mms},
    {"discard", m_discard},
    {"discard", m_discard_neg},
    {"storage", m_storage},
    {"replicas", m_repl_neg},
    {"replicas", m_repl_6},
    {"replicas", m_repl_big},
    {"duplicate_window_ns", m_dup_tiny},
    {"duplicate_window_ns", m_dup_huge},
    {"duplicate_window_ns", m_dup_gt_age},
    {"placement.cluster", m_cluster_space},
    {"placement.cluster", m_cluster_long},
    {"placement.tags", m_tags_nullarr},
    {"placement.tags[1]", m_tags_null},
    {"placement.tags[0]", m_tags_empty},
    {"placement.tags[0]", m_tags_bang},
    {"placement.tags[0]", m_tags_space},
    {"placement.tags[1]", m_tags_both},
    {"placement.tags[0]", m_tags_long},
    {"sealed", m_sealed},
    {"deny_delete", m_deny_delete},
    {"deny_purge", m_deny_purge},
    {"allow_rollup", m_rollup},
    {"allow_rollup", m_rollup_purge},
    {"allow_direct", m_direct},
    {"compression", m_compress},
    {"compression", m_compress_neg},
    {"metadata", m_meta_nullarr},
    {"metadata[0]", m_meta_nokey},
    {"metadata[0]", m_meta_nullkey},
    {"metadata[0]", m_meta_nullval},
    {"metadata[1]", m_meta_dup},
    {"metadata", m_meta_big},
};

static void fill_long_strings(void)
{
    memset(long_name, 'N', sizeof long_name - 1);
    memset(long_desc, 'd', sizeof long_desc - 1);
    memset(long_tag, 't', sizeof long_tag - 1);
    memset(big_value, 'v', sizeof big_value - 1);
}

START_TEST(every_invalid_field_is_named)
{
    fill_long_strings();
    const bad_case *b = &bad[_i];
    for (int variant = 0; variant < 2; variant++) {
        jr_stream_config c = variant ? full() : base();
        b->mutate(&c);
        char msg[512] = "unchanged";
        ck_assert_int_eq(jr__stream_config_validate(&c, msg, sizeof msg), JR_EINVAL);
        size_t n = strlen(b->field);
        ck_assert_msg(strncmp(msg, b->field, n) == 0 && msg[n] == ':',
                      "case %d: expected field %s, got \"%s\"", _i, b->field, msg);
        /* the same refusal everywhere a config enters */
        ck_assert_int_eq(jr__stream_config_check_add(&c, NULL, 0), JR_EINVAL);
        jr__stream_cfg *owned = (void *)1;
        ck_assert_int_eq(jr__stream_cfg_new(&c, NULL, &owned, NULL, 0), JR_EINVAL);
        ck_assert_ptr_null(owned);
        jr__buf buf;
        jr__buf_init(&buf, NULL);
        ck_assert_int_eq(jr__stream_config_encode(&c, &buf), JR_EINVAL);
        ck_assert_uint_eq(buf.len, 0);
        jr__buf_free(&buf);
        jr_stream_config ok = base();
        ck_assert_int_eq(jr__stream_config_check_update(&ok, &c, msg, sizeof msg), JR_EINVAL);
    }
}
END_TEST

START_TEST(null_config_and_tiny_message_buffers)
{
    char msg[8];
    ck_assert_int_eq(jr__stream_config_validate(NULL, msg, sizeof msg), JR_EINVAL);
    ck_assert_str_eq(msg, "config:"); /* truncated, still terminated */
    jr_stream_config c = base();
    c.replicas = 9;
    ck_assert_int_eq(jr__stream_config_validate(&c, NULL, 100), JR_EINVAL);
    ck_assert_int_eq(jr__stream_config_validate(&c, msg, 0), JR_EINVAL);
}
END_TEST

START_TEST(boundary_values_are_accepted)
{
    fill_long_strings();
    char name[JR_STREAM_NAME_MAX + 1];
    memset(name, 'n', JR_STREAM_NAME_MAX);
    name[JR_STREAM_NAME_MAX] = '\0';
    jr_stream_config c = base();
    c.name = name;
    long_desc[JR__STREAM_DESCRIPTION_MAX] = '\0';
    c.description = long_desc;
    c.max_age_ns = JR__STREAM_MIN_AGE_NS;
    c.duplicate_window_ns = JR__STREAM_MIN_AGE_NS;
    c.replicas = 5;
    c.max_msgs = 0; /* 0 means unlimited, as in JetStream */
    c.max_msg_size = 0;
    char msg[256];
    ck_assert_msg(jr__stream_config_validate(&c, msg, sizeof msg) == 0, "%s", msg);
    long_desc[JR__STREAM_DESCRIPTION_MAX] = 'd';
    c = base();
    c.name = "ÜBER-orders_2"; /* non-ASCII bytes are fine */
    c.replicas = 0;           /* means 1 */
    ck_assert_int_eq(jr__stream_config_validate(&c, NULL, 0), 0);
    jr__stream_norm n;
    jr__stream_config_normalize(&c, &n);
    ck_assert_int_eq(n.c.replicas, 1);
}
END_TEST

START_TEST(sealed_only_by_update)
{
    jr_stream_config c = base();
    c.sealed = 1;
    char msg[256];
    ck_assert_int_eq(jr__stream_config_validate(&c, msg, sizeof msg), 0);
    ck_assert_int_eq(jr__stream_config_check_add(&c, msg, sizeof msg), JR_EINVAL);
    ck_assert(strncmp(msg, "sealed:", 7) == 0);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Normal form and equality
 */
START_TEST(normal_form)
{
    jr_stream_config c = base();
    c.max_age_ns = 30ULL * 1000000000ULL; /* shorter than the 2 minute default window */
    c.max_consumers = 0;
    c.max_msgs = 0;
    c.max_bytes = 0;
    c.max_msgs_per_subject = 0;
    c.max_msg_size = 0;
    c.description = "";
    pl(&c)->cluster = "";
    jr__stream_norm n;
    jr__stream_config_normalize(&c, &n);
    ck_assert_uint_eq(n.c.duplicate_window_ns, c.max_age_ns);
    ck_assert_int_eq(n.c.max_consumers, -1);
    ck_assert_int_eq(n.c.max_msgs, -1);
    ck_assert_int_eq(n.c.max_bytes, -1);
    ck_assert_int_eq(n.c.max_msgs_per_subject, -1);
    ck_assert_int_eq(n.c.max_msg_size, -1);
    ck_assert_ptr_null(n.c.description);
    ck_assert_ptr_null(n.c.placement); /* cluster "" and no tags: no placement */
    /* sealing forces what JetStream forces */
    c = full();
    c.sealed = 1;
    jr__stream_config_normalize(&c, &n);
    ck_assert_uint_eq(n.c.max_age_ns, 0);
    ck_assert_int_eq(n.c.discard, JR_DISCARD_NEW);
    ck_assert_int_eq(n.c.deny_delete, 1);
    ck_assert_int_eq(n.c.deny_purge, 1);
    ck_assert_int_eq(n.c.allow_rollup, 0);
}
END_TEST

START_TEST(equality_sees_through_defaults)
{
    jr_stream_config a = base(), b = base();
    static const char *self[] = {"ORDERS"};
    b.subjects = self;
    b.nsubjects = 1;
    b.max_msgs = 0;
    b.replicas = 0;
    b.duplicate_window_ns = JR__STREAM_DUP_WINDOW_NS;
    b.description = "";
    ck_assert(jr__stream_config_equal(&a, &b));
    ck_assert(jr__stream_config_equal(&b, &a));
    jr_stream_config f = full(), g = full();
    ck_assert(jr__stream_config_equal(&f, &g));
    /* metadata is a map: order does not matter */
    static const jr_kv shuffled[] = {{"ü", "ñ"}, {"owner", "team-a"}, {"tier", ""}};
    g.metadata = shuffled;
    ck_assert(jr__stream_config_equal(&f, &g));
    static const jr_kv other_value[] = {{"ü", "ñ"}, {"owner", "team-b"}, {"tier", ""}};
    g.metadata = other_value;
    ck_assert(!jr__stream_config_equal(&f, &g));
    /* subjects are a list: order matters (as in JetStream) */
    static const char *reordered[] = {"audit", "orders.>", "refunds.*.eu"};
    g = full();
    g.subjects = reordered;
    ck_assert(!jr__stream_config_equal(&f, &g));
}
END_TEST

/* Changing any one field makes configs unequal. */
static void d_name(jr_stream_config *c)
{
    c->name = "OTHER";
}
static void d_desc(jr_stream_config *c)
{
    c->description = "x";
}
static void d_subj(jr_stream_config *c)
{
    c->nsubjects = 2;
}
static void d_ret(jr_stream_config *c)
{
    c->retention = JR_RETAIN_WORKQUEUE;
}
static void d_cons(jr_stream_config *c)
{
    c->max_consumers = 11;
}
static void d_msgs(jr_stream_config *c)
{
    c->max_msgs = 7;
}
static void d_bytes(jr_stream_config *c)
{
    c->max_bytes = 7;
}
static void d_age(jr_stream_config *c)
{
    c->max_age_ns += 1;
}
static void d_mps(jr_stream_config *c)
{
    c->max_msgs_per_subject = 6;
}
static void d_mms(jr_stream_config *c)
{
    c->max_msg_size = 6;
}
static void d_discard(jr_stream_config *c)
{
    c->discard = JR_DISCARD_OLD;
}
static void d_storage(jr_stream_config *c)
{
    c->storage = JR_STORAGE_FILE;
}
static void d_repl(jr_stream_config *c)
{
    c->replicas = 5;
}
static void d_dup(jr_stream_config *c)
{
    c->duplicate_window_ns += 1;
}
static void d_cluster(jr_stream_config *c)
{
    pl(c)->cluster = "west";
}
static void d_tags(jr_stream_config *c)
{
    pl(c)->ntags = 1;
}
static void d_sealed(jr_stream_config *c)
{
    c->sealed = 1;
}
static void d_ddel(jr_stream_config *c)
{
    c->deny_delete = 0;
}
static void d_dpurge(jr_stream_config *c)
{
    c->deny_purge = 1, c->allow_rollup = 0;
}
static void d_rollup(jr_stream_config *c)
{
    c->allow_rollup = 0;
}
static void d_compress(jr_stream_config *c)
{
    c->compression = JR_COMPRESS_NONE;
}
static void d_meta(jr_stream_config *c)
{
    c->nmetadata = 1;
}
static void d_direct(jr_stream_config *c)
{
    c->allow_direct = 0;
}
static void (*const diffs[])(jr_stream_config *) = {
    d_name,   d_desc, d_subj,    d_ret,     d_cons,     d_msgs, d_bytes,   d_age,
    d_mps,    d_mms,  d_discard, d_storage, d_repl,     d_dup,  d_cluster, d_tags,
    d_sealed, d_ddel, d_dpurge,  d_rollup,  d_compress, d_meta, d_direct};

START_TEST(equality_sees_every_field)
{
    jr_stream_config f = full(), g = full();
    diffs[_i](&g);
    ck_assert_int_eq(jr__stream_config_validate(&g, NULL, 0), 0);
    ck_assert_msg(!jr__stream_config_equal(&f, &g), "diff %d", _i);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Owned copies
 */
typedef struct counting {
    long allocs, live, budget;
} counting;

static void *c_malloc(void *ctx, size_t n)
{
    counting *k = ctx;
    if (k->budget-- <= 0) return NULL;
    k->allocs++;
    k->live++;
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
    char subj0[] = "orders.>";
    const char *subjects[] = {subj0, "refunds.*.eu", "audit"};
    jr_stream_config src = full();
    src.subjects = subjects;
    jr__stream_cfg *owned = NULL;
    ck_assert_int_eq(jr__stream_cfg_new(&src, &a, &owned, NULL, 0), 0);
    ck_assert_int_eq(k.allocs, 1);
    ck_assert(jr__stream_config_equal(&owned->c, &src));
    /* a deep copy: the caller's strings may change afterwards */
    subj0[0] = 'X';
    ck_assert_str_eq(owned->c.subjects[0], "orders.>");
    ck_assert(!jr__stream_config_equal(&owned->c, &src));
    ck_assert_ptr_ne(owned->c.name, src.name);
    /* every pointer lies inside the block */
    const char *lo = (const char *)owned, *hi = lo + owned->bytes;
    ck_assert(owned->c.name >= lo && owned->c.name < hi);
    ck_assert(owned->c.metadata[2].value >= lo && owned->c.metadata[2].value < hi);
    ck_assert(owned->c.placement->tags[2] >= lo && owned->c.placement->tags[2] < hi);
    ck_assert((const char *)owned->c.placement >= lo && (const char *)owned->c.placement < hi);
    jr__stream_cfg_free(owned);
    ck_assert_int_eq(k.live, 0);

    /* defaults are materialized in the copy */
    jr_stream_config b = base();
    ck_assert_int_eq(jr__stream_cfg_new(&b, &a, &owned, NULL, 0), 0);
    ck_assert_uint_eq(owned->c.nsubjects, 1);
    ck_assert_str_eq(owned->c.subjects[0], "ORDERS");
    ck_assert_uint_eq(owned->c.duplicate_window_ns, JR__STREAM_DUP_WINDOW_NS);
    jr__stream_cfg_free(owned);
    jr__stream_cfg_free(NULL);

    k.budget = 0;
    owned = (void *)1;
    ck_assert_int_eq(jr__stream_cfg_new(&b, &a, &owned, NULL, 0), JR_ENOMEM);
    ck_assert_ptr_null(owned);
    ck_assert_int_eq(k.live, 0);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Encoding
 */
static jr__buf encode(const jr_stream_config *c)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__stream_config_encode(c, &b), 0);
    return b;
}

static void reseal(uint8_t *p, size_t n)
{
    jr__put_u64(p + n - 8, jr__xxh3(p, n - 8));
}

START_TEST(round_trip)
{
    jr_stream_config cases[4];
    cases[0] = base();
    cases[1] = full();
    cases[2] = full();
    cases[2].sealed = 1;
    cases[3] = base();
    cases[3].max_age_ns = 200000000;
    for (size_t i = 0; i < N(cases); i++) {
        jr__buf b = encode(&cases[i]);
        jr__stream_cfg *d = NULL;
        ck_assert_int_eq(jr__stream_config_decode(b.data, b.len, NULL, &d), 0);
        ck_assert(jr__stream_config_equal(&d->c, &cases[i]));
        jr__buf again = encode(&d->c); /* one encoding per config */
        ck_assert_uint_eq(again.len, b.len);
        ck_assert(memcmp(again.data, b.data, b.len) == 0);
        jr__buf_free(&again);
        jr__stream_cfg_free(d);
        jr__buf_free(&b);
    }
    /* appending to a buffer that already holds bytes */
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__buf_put(&b, "prefix", 6);
    ck_assert_int_eq(jr__stream_config_encode(&cases[1], &b), 0);
    jr__stream_cfg *d = NULL;
    ck_assert_int_eq(jr__stream_config_decode(b.data + 6, b.len - 6, NULL, &d), 0);
    jr__stream_cfg_free(d);
    jr__buf_free(&b);
}
END_TEST

START_TEST(every_truncation_is_rejected)
{
    jr_stream_config f = full();
    jr__buf b = encode(&f);
    for (size_t n = 0; n < b.len; n++) {
        jr__stream_cfg *d = (void *)1;
        ck_assert_int_eq(jr__stream_config_decode(b.data, n, NULL, &d), JR_ECORRUPT);
        ck_assert_ptr_null(d);
        /* also with a valid checksum over the truncated body: the parser itself refuses (n ==
         * len - 8 is the whole body, i.e. the original encoding; longer n adds trailing bytes) */
        if (n >= 1 && n != b.len - 8) {
            size_t m = n + 8;
            uint8_t *q = malloc(m);
            memcpy(q, b.data, n);
            reseal(q, m);
            ck_assert_int_eq(jr__stream_config_decode(q, m, NULL, &d), JR_ECORRUPT);
            free(q);
        }
    }
    /* a trailing byte, resealed */
    uint8_t *q = malloc(b.len + 1);
    memcpy(q, b.data, b.len - 8);
    q[b.len - 8] = 0;
    reseal(q, b.len + 1);
    jr__stream_cfg *d = NULL;
    ck_assert_int_eq(jr__stream_config_decode(q, b.len + 1, NULL, &d), JR_ECORRUPT);
    free(q);
    jr__buf_free(&b);
}
END_TEST

START_TEST(version_and_checksum)
{
    jr_stream_config f = full();
    jr__buf b = encode(&f);
    jr__stream_cfg *d = NULL;
    ck_assert_int_eq(b.data[0], 2); /* allow_direct needs version 2 */
    b.data[0] = 3;
    ck_assert_int_eq(jr__stream_config_decode(b.data, b.len, NULL, &d), JR_ECORRUPT);
    reseal(b.data, b.len);
    ck_assert_int_eq(jr__stream_config_decode(b.data, b.len, NULL, &d), JR_EVERSION);
    b.data[0] = 0;
    reseal(b.data, b.len);
    ck_assert_int_eq(jr__stream_config_decode(b.data, b.len, NULL, &d), JR_EVERSION);
    b.data[0] = 1; /* version 1 can not carry allow_direct */
    reseal(b.data, b.len);
    ck_assert_int_eq(jr__stream_config_decode(b.data, b.len, NULL, &d), JR_ECORRUPT);
    b.data[0] = 2;
    reseal(b.data, b.len);
    ck_assert_int_eq(jr__stream_config_decode(b.data, b.len, NULL, &d), 0);
    jr__stream_cfg_free(d);
    /* every single bit flip is caught by the checksum */
    for (size_t i = 0; i < b.len * 8; i++) {
        b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
        ck_assert_int_ne(jr__stream_config_decode(b.data, b.len, NULL, &d), 0);
        b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    jr__buf_free(&b);
}
END_TEST

/* Every byte of the body set to every value, resealed so the checksum passes: the decoder either
 * refuses, or accepts exactly the one canonical encoding of a valid config. */
START_TEST(resealed_mutations_are_refused_or_canonical)
{
    jr_stream_config f = full();
    jr__buf b = encode(&f);
    uint8_t *q = malloc(b.len);
    long accepted = 0;
    for (size_t i = 1; i < b.len - 8; i++) {
        for (int v = 0; v < 256; v++) {
            if (v == b.data[i]) continue;
            memcpy(q, b.data, b.len);
            q[i] = (uint8_t)v;
            reseal(q, b.len);
            jr__stream_cfg *d = NULL;
            int rc = jr__stream_config_decode(q, b.len, NULL, &d);
            if (rc == 0) {
                accepted++;
                ck_assert_int_eq(jr__stream_config_validate(&d->c, NULL, 0), 0);
                jr__buf again = encode(&d->c);
                ck_assert_msg(again.len == b.len && memcmp(again.data, q, b.len) == 0,
                              "byte %zu = %d accepted but not canonical", i, v);
                jr__buf_free(&again);
                jr__stream_cfg_free(d);
            } else {
                ck_assert_int_eq(rc, JR_ECORRUPT);
                ck_assert_ptr_null(d);
            }
        }
    }
    ck_assert_int_gt(accepted, 0); /* e.g. other letters in the name */
    free(q);
    jr__buf_free(&b);
}
END_TEST

START_TEST(random_bytes_are_rejected)
{
    uint64_t seed = 0x5eed0000u + (uint64_t)_i;
    jr__rand r;
    jr__rand_seed(&r, seed);
    uint8_t buf[512];
    for (int k = 0; k < 2000; k++) {
        size_t n = (size_t)jr__rand_below(&r, sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)jr__rand_next(&r);
        if (k % 2 && n >= 9) {
            buf[0] = 1; /* a plausible version and a valid checksum reach the parser */
            reseal(buf, n);
        }
        jr__stream_cfg *d = NULL;
        int rc = jr__stream_config_decode(buf, n, NULL, &d);
        ck_assert_msg(rc == JR_ECORRUPT || rc == JR_EVERSION, "seed %llu k %d rc %d",
                      (unsigned long long)seed, k, rc);
        ck_assert_ptr_null(d);
    }
    jr__stream_cfg *d = (void *)1;
    ck_assert_int_eq(jr__stream_config_decode(NULL, 0, NULL, &d), JR_ECORRUPT);
}
END_TEST

START_TEST(decode_out_of_memory)
{
    jr_stream_config f = full();
    jr__buf b = encode(&f);
    counting k = {0, 0, 0};
    jr_allocator a = {JR_ALLOCATOR_VERSION, &k, c_malloc, c_realloc, c_free};
    jr__stream_cfg *d = (void *)1;
    ck_assert_int_eq(jr__stream_config_decode(b.data, b.len, &a, &d), JR_ENOMEM);
    ck_assert_ptr_null(d);
    k.budget = 1;
    ck_assert_int_eq(jr__stream_config_decode(b.data, b.len, &a, &d), 0);
    ck_assert_ptr_eq(d->alloc, &a);
    jr__stream_cfg_free(d);
    ck_assert_int_eq(k.live, 0);
    jr__buf_free(&b);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Update rules
 */
static const char *subj_new[] = {"orders.>", "returns"};
static const char *tags_new[] = {"az:2"};
static const jr_kv meta_new[] = {{"owner", "team-b"}};

static void u_desc(jr_stream_config *c)
{
    c->description = "new words";
}
static void u_subjects(jr_stream_config *c)
{
    c->subjects = subj_new, c->nsubjects = 2;
}
static void u_limits(jr_stream_config *c)
{
    c->max_msgs = 5, c->max_bytes = -1, c->max_msgs_per_subject = 1, c->max_msg_size = 100;
}
static void u_age(jr_stream_config *c)
{
    c->max_age_ns = 0;
}
static void u_discard(jr_stream_config *c)
{
    c->discard = JR_DISCARD_OLD;
}
static void u_replicas(jr_stream_config *c)
{
    c->replicas = 5;
}
static void u_dup(jr_stream_config *c)
{
    c->duplicate_window_ns = 60000000000ULL;
}
static void u_move(jr_stream_config *c)
{
    pl(c)->tags = tags_new, pl(c)->ntags = 1;
}
static void u_move_cluster(jr_stream_config *c)
{
    pl(c)->cluster = "west";
}
static void u_compress(jr_stream_config *c)
{
    c->compression = JR_COMPRESS_NONE;
}
static void u_meta(jr_stream_config *c)
{
    c->metadata = meta_new, c->nmetadata = 1;
}
static void u_rollup(jr_stream_config *c)
{
    c->allow_rollup = 0;
}
static void u_seal(jr_stream_config *c)
{
    c->sealed = 1;
}
static void u_deny_purge(jr_stream_config *c)
{
    c->deny_purge = 1, c->allow_rollup = 0;
}
static void u_to_limits(jr_stream_config *c)
{
    c->retention = JR_RETAIN_LIMITS;
}
static void u_direct_off(jr_stream_config *c)
{
    c->allow_direct = 0;
}
static void u_nothing(jr_stream_config *c)
{
    (void)c;
}

static void r_name(jr_stream_config *c)
{
    c->name = "RENAMED";
}
static void r_storage(jr_stream_config *c)
{
    c->storage = JR_STORAGE_FILE;
}
static void r_consumers(jr_stream_config *c)
{
    c->max_consumers = -1;
}
static void r_to_wq(jr_stream_config *c)
{
    c->retention = JR_RETAIN_WORKQUEUE;
}
static void r_undeny_delete(jr_stream_config *c)
{
    c->deny_delete = 0;
}
static void r_move_and_scale(jr_stream_config *c)
{
    pl(c)->cluster = "west";
    c->replicas = 1;
}
static void r_invalid(jr_stream_config *c)
{
    c->replicas = 7;
}

typedef struct update_case {
    void (*change)(jr_stream_config *);
    const char *refused_field; /* NULL: allowed */
} update_case;

static const update_case updates[] = {
    {u_desc, NULL},
    {u_subjects, NULL},
    {u_limits, NULL},
    {u_age, NULL},
    {u_discard, NULL},
    {u_replicas, NULL},
    {u_dup, NULL},
    {u_move, NULL},
    {u_move_cluster, NULL},
    {u_compress, NULL},
    {u_meta, NULL},
    {u_rollup, NULL},
    {u_seal, NULL},
    {u_deny_purge, NULL},
    {u_to_limits, NULL},
    {u_direct_off, NULL},
    {u_nothing, NULL},
    {r_name, "name"},
    {r_storage, "storage"},
    {r_consumers, "max_consumers"},
    {r_to_wq, "retention"},
    {r_undeny_delete, "deny_delete"},
    {r_move_and_scale, "placement"},
    {r_invalid, "replicas"},
};

START_TEST(update_rules)
{
    jr_stream_config old = full(), upd = full();
    updates[_i].change(&upd);
    char msg[256] = "";
    int rc = jr__stream_config_check_update(&old, &upd, msg, sizeof msg);
    if (!updates[_i].refused_field) {
        ck_assert_msg(rc == 0, "case %d refused: %s", _i, msg);
    } else {
        ck_assert_int_eq(rc, JR_EINVAL);
        size_t n = strlen(updates[_i].refused_field);
        ck_assert_msg(strncmp(msg, updates[_i].refused_field, n) == 0 && msg[n] == ':',
                      "case %d: expected %s, got \"%s\"", _i, updates[_i].refused_field, msg);
    }
}
END_TEST

/* Version 1, as written before allow_direct existed, still decodes (allow_direct 0), and a
 * config without allow_direct is still written as version 1 byte for byte, so a server of the
 * earlier release decodes it; only allow_direct needs version 2, and version 2 is accepted only
 * when it is needed (one encoding per config). */
START_TEST(version_1_still_decodes_and_is_still_written)
{
    /* base() ("ORDERS", every default) as the encoder of version 1 wrote it */
    static const uint8_t v1[] = {0x01, 0x06, 'O',  'R',  'D',  'E',  'R',  'S',  0x00, 0x01,
                                 0x06, 'O',  'R',  'D',  'E',  'R',  'S',  0x00, 0x01, 0x01,
                                 0x01, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x80, 0xe0, 0xba,
                                 0x84, 0xbf, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00};
    uint8_t buf[sizeof v1 + 8];
    memcpy(buf, v1, sizeof v1);
    reseal(buf, sizeof buf);
    jr__stream_cfg *d = NULL;
    ck_assert_int_eq(jr__stream_config_decode(buf, sizeof buf, NULL, &d), 0);
    jr_stream_config b = base();
    ck_assert(jr__stream_config_equal(&d->c, &b));
    ck_assert_int_eq(d->c.allow_direct, 0);
    jr__stream_cfg_free(d);
    jr__buf e = encode(&b);
    ck_assert_uint_eq(e.len, sizeof buf);
    ck_assert(memcmp(e.data, buf, sizeof buf) == 0);
    jr__buf_free(&e);

    /* allow_direct: version 2, the flag set; clearing the flag in it is not canonical */
    b.allow_direct = 1;
    e = encode(&b);
    ck_assert_int_eq(e.data[0], 2);
    ck_assert_int_eq(jr__stream_config_decode(e.data, e.len, NULL, &d), 0);
    ck_assert_int_eq(d->c.allow_direct, 1);
    jr__stream_cfg_free(d);
    size_t flags = e.len - 8 - 3; /* ... flags | compression | metadata count | checksum */
    ck_assert_int_eq(e.data[flags], 16);
    e.data[flags] = 0;
    reseal(e.data, e.len);
    ck_assert_int_eq(jr__stream_config_decode(e.data, e.len, NULL, &d), JR_ECORRUPT);
    e.data[0] = 1;
    reseal(e.data, e.len);
    ck_assert_int_eq(jr__stream_config_decode(e.data, e.len, NULL, &d), 0); /* = base() */
    b.allow_direct = 0;
    ck_assert(jr__stream_config_equal(&d->c, &b));
    jr__stream_cfg_free(d);
    jr__buf_free(&e);
}
END_TEST

START_TEST(one_way_flags_and_workqueue)
{
    char msg[256];
    jr_stream_config old = full(), upd = full();
    /* sealed: only false -> true */
    old.sealed = 1;
    upd.sealed = 0;
    ck_assert_int_eq(jr__stream_config_check_update(&old, &upd, msg, sizeof msg), JR_EINVAL);
    ck_assert(strncmp(msg, "sealed:", 7) == 0);
    upd.sealed = 1; /* re-sealing with other fields changed is fine */
    upd.description = "sealed for audit";
    ck_assert_int_eq(jr__stream_config_check_update(&old, &upd, msg, sizeof msg), 0);
    /* deny_purge: only false -> true */
    old = full();
    old.deny_purge = 1;
    old.allow_rollup = 0;
    upd = old;
    upd.deny_purge = 0;
    ck_assert_int_eq(jr__stream_config_check_update(&old, &upd, msg, sizeof msg), JR_EINVAL);
    ck_assert(strncmp(msg, "deny_purge:", 11) == 0);
    /* work queue streams stay work queue streams */
    old = full();
    old.retention = JR_RETAIN_WORKQUEUE;
    upd = old;
    upd.retention = JR_RETAIN_INTEREST;
    ck_assert_int_eq(jr__stream_config_check_update(&old, &upd, msg, sizeof msg), JR_EINVAL);
    ck_assert(strncmp(msg, "retention:", 10) == 0);
    /* limits <-> interest is allowed */
    old.retention = JR_RETAIN_LIMITS;
    ck_assert_int_eq(jr__stream_config_check_update(&old, &upd, msg, sizeof msg), 0);
    /* spelling a default differently is no change at all */
    old = base();
    upd = base();
    upd.max_consumers = 0;
    ck_assert_int_eq(jr__stream_config_check_update(&old, &upd, msg, sizeof msg), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_config");
    TCase *tc = tcase_create("config");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, init_gives_jetstream_defaults);
    tcase_add_test(tc, twenty_thousand_subjects_validate_in_near_linear_time);
    tcase_add_loop_test(tc, every_invalid_field_is_named, 0, (int)N(bad));
    tcase_add_test(tc, null_config_and_tiny_message_buffers);
    tcase_add_test(tc, boundary_values_are_accepted);
    tcase_add_test(tc, sealed_only_by_update);
    tcase_add_test(tc, normal_form);
    tcase_add_test(tc, equality_sees_through_defaults);
    tcase_add_loop_test(tc, equality_sees_every_field, 0, (int)N(diffs));
    tcase_add_test(tc, owned_copy_is_one_allocation);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, every_truncation_is_rejected);
    tcase_add_test(tc, version_and_checksum);
    tcase_add_test(tc, resealed_mutations_are_refused_or_canonical);
    tcase_add_loop_test(tc, random_bytes_are_rejected, 0, 4);
    tcase_add_test(tc, decode_out_of_memory);
    tcase_add_loop_test(tc, update_rules, 0, (int)N(updates));
    tcase_add_test(tc, version_1_still_decodes_and_is_still_written);
    tcase_add_test(tc, one_way_flags_and_workqueue);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
