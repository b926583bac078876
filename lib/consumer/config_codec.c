/* config_codec — owned copies of consumer configurations and their binary encoding (config.h).
 *
 * Encoding, version 1 (integers little-endian; "str" = varint length + bytes, no NUL, "" for
 * none; "zz" = zigzag varint; a list is a varint count then its items):
 *
 *   u8 version=1 | str name | str durable_name | str description
 *   | list<str key, str value> metadata | u8 deliver_policy | varint opt_start_seq
 *   | varint opt_start_time_ns | u8 ack_policy | zz ack_wait_ns | zz max_deliver
 *   | list<zz> backoff_ns | str filter_subject | list<str> filter_subjects | u8 replay_policy
 *   | varint rate_limit_bps | str sample_freq | zz max_waiting | zz max_ack_pending
 *   | u8 flags (1 headers_only, 2 flow_control, 4 mem_storage) | zz max_batch
 *   | zz max_expires_ns | zz max_bytes | str deliver_subject | str deliver_group
 *   | zz idle_heartbeat_ns | zz inactive_threshold_ns | u8 num_replicas | varint pause_until_ns
 *   | list<str> priority_groups | u8 priority_policy | zz priority_timeout_ns
 *   | u64 xxh3 of every byte before it
 *
 * Only the normal form is ever written, and the decoder accepts only the normal form of a valid
 * configuration, so every config has exactly one encoding.
 */
#include <string.h>

#include "consumer/config.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "util/strblock.h"
#include "util/subject.h"

enum { F_HEADERS_ONLY = 1, F_FLOW_CONTROL = 2, F_MEM_STORAGE = 4, F_ALL = 7 };

/* ---------------------------------------------------------------------------------------------
 * The one-block owned copy: [jr__consumer_cfg | metadata[] | backoff_ns[] | filter_subjects[] |
 * priority_groups[] | strings]. A builder first measures (dst NULL), then fills a block of the
 * measured size (util/strblock.h).
 */
typedef struct builder {
    jr__consumer_cfg *dst;
    jr__strblock s;
} builder;

static size_t header_bytes(void)
{
    return (sizeof(jr__consumer_cfg) + 15) & ~(size_t)15;
}

/* Allocates the block and points the arrays and the string area into it. */
static int block_alloc(builder *b, const jr_allocator *a, const jr_consumer_config *n)
{
    size_t nmeta = n->nmetadata, nbackoff = n->nbackoff, nfilters = n->nfilter_subjects,
           ngroups = n->npriority_groups;
    size_t bytes = header_bytes() + nmeta * sizeof(jr_kv) + nbackoff * sizeof(int64_t) +
                   (nfilters + ngroups) * sizeof(const char *) + b->s.need;
    unsigned char *p = jr__malloc(a, bytes);
    if (!p) return JR_ENOMEM;
    jr__consumer_cfg *d = (jr__consumer_cfg *)p;
    memset(d, 0, sizeof *d);
    d->alloc = a;
    d->refs = 1;
    d->bytes = bytes;
    unsigned char *q = p + header_bytes();
    d->c.metadata = nmeta ? (const jr_kv *)(void *)q : NULL;
    q += nmeta * sizeof(jr_kv);
    d->c.backoff_ns = nbackoff ? (const int64_t *)(void *)q : NULL;
    q += nbackoff * sizeof(int64_t);
    d->c.filter_subjects = nfilters ? (const char *const *)(void *)q : NULL;
    q += nfilters * sizeof(const char *);
    d->c.priority_groups = ngroups ? (const char *const *)(void *)q : NULL;
    q += ngroups * sizeof(const char *);
    b->dst = d;
    b->s.at = (char *)q;
    return 0;
}

/* Copies the strings of the normal form n into b (measure or fill). */
static void copy_strings(builder *b, const jr_consumer_config *n)
{
    jr_consumer_config *d = b->dst ? &b->dst->c : NULL;
#define COPY(field)                                                                                \
    do {                                                                                           \
        const char *s_ = jr__strblock_opt(&b->s, n->field);                                        \
        if (d) d->field = s_;                                                                      \
    } while (0)
    COPY(name);
    COPY(durable_name);
    COPY(description);
    COPY(filter_subject);
    COPY(sample_freq);
    COPY(deliver_subject);
    COPY(deliver_group);
#undef COPY
    jr__strblock_kvs(&b->s, n->metadata, n->nmetadata, d ? (jr_kv *)d->metadata : NULL);
    jr__strblock_list(&b->s, n->filter_subjects, n->nfilter_subjects,
                      d ? (const char **)d->filter_subjects : NULL);
    jr__strblock_list(&b->s, n->priority_groups, n->npriority_groups,
                      d ? (const char **)d->priority_groups : NULL);
}

int jr__consumer_cfg_new(const jr_consumer_config *src, const jr_allocator *a,
                         jr__consumer_cfg **out, jr__cerr *err)
{
    *out = NULL;
    int rc = jr__consumer_config_validate(src, NULL, err);
    if (rc) return rc;
    jr__consumer_norm n;
    jr__consumer_config_normalize(src, &n);
    builder b = {0};
    copy_strings(&b, &n.c);
    if ((rc = block_alloc(&b, a, &n.c))) return rc;
    /* scalars from the normal form, arrays and strings into the block */
    jr_consumer_config *d = &b.dst->c;
    const jr_kv *metadata = d->metadata;
    const int64_t *backoff = d->backoff_ns;
    const char *const *filters = d->filter_subjects, *const *groups = d->priority_groups;
    *d = n.c;
    d->metadata = metadata;
    d->backoff_ns = backoff;
    if (n.c.nbackoff) memcpy((int64_t *)backoff, n.c.backoff_ns, n.c.nbackoff * sizeof *backoff);
    d->filter_subjects = filters;
    d->priority_groups = groups;
    copy_strings(&b, &n.c);
    *out = b.dst;
    return 0;
}

jr__consumer_cfg *jr__consumer_cfg_ref(jr__consumer_cfg *cfg)
{
    cfg->refs++;
    return cfg;
}

void jr__consumer_cfg_free(jr__consumer_cfg *cfg)
{
    if (cfg && --cfg->refs == 0) jr__free(cfg->alloc, cfg);
}

/* ---------------------------------------------------------------------------------------------
 * Encoding
 */
int jr__consumer_config_encode(const jr_consumer_config *cfg, jr__buf *out)
{
    if (jr__consumer_config_validate(cfg, NULL, NULL)) return JR_EINVAL;
    jr__consumer_norm nn;
    jr__consumer_config_normalize(cfg, &nn);
    const jr_consumer_config *c = &nn.c;
    size_t start = out->len;
    jr__buf_u8(out, JR__CONSUMER_CONFIG_VERSION);
    jr__buf_str(out, c->name);
    jr__buf_str(out, c->durable_name);
    jr__buf_str(out, c->description);
    jr__buf_varint(out, c->nmetadata);
    for (size_t i = 0; i < c->nmetadata; i++) {
        jr__buf_str(out, c->metadata[i].key);
        jr__buf_str(out, c->metadata[i].value);
    }
    jr__buf_u8(out, (uint8_t)c->deliver_policy);
    jr__buf_varint(out, c->opt_start_seq);
    jr__buf_varint(out, c->opt_start_time_ns);
    jr__buf_u8(out, (uint8_t)c->ack_policy);
    jr__buf_varint(out, jr__zigzag(c->ack_wait_ns));
    jr__buf_varint(out, jr__zigzag(c->max_deliver));
    jr__buf_varint(out, c->nbackoff);
    for (size_t i = 0; i < c->nbackoff; i++) jr__buf_varint(out, jr__zigzag(c->backoff_ns[i]));
    jr__buf_str(out, c->filter_subject);
    jr__buf_varint(out, c->nfilter_subjects);
    for (size_t i = 0; i < c->nfilter_subjects; i++) jr__buf_str(out, c->filter_subjects[i]);
    jr__buf_u8(out, (uint8_t)c->replay_policy);
    jr__buf_varint(out, c->rate_limit_bps);
    jr__buf_str(out, c->sample_freq);
    jr__buf_varint(out, jr__zigzag(c->max_waiting));
    jr__buf_varint(out, jr__zigzag(c->max_ack_pending));
    jr__buf_u8(out, (uint8_t)((c->headers_only ? F_HEADERS_ONLY : 0) |
                              (c->flow_control ? F_FLOW_CONTROL : 0) |
                              (c->mem_storage ? F_MEM_STORAGE : 0)));
    jr__buf_varint(out, jr__zigzag(c->max_batch));
    jr__buf_varint(out, jr__zigzag(c->max_expires_ns));
    jr__buf_varint(out, jr__zigzag(c->max_bytes));
    jr__buf_str(out, c->deliver_subject);
    jr__buf_str(out, c->deliver_group);
    jr__buf_varint(out, jr__zigzag(c->idle_heartbeat_ns));
    jr__buf_varint(out, jr__zigzag(c->inactive_threshold_ns));
    jr__buf_u8(out, (uint8_t)c->num_replicas);
    jr__buf_varint(out, c->pause_until_ns);
    jr__buf_varint(out, c->npriority_groups);
    for (size_t i = 0; i < c->npriority_groups; i++) jr__buf_str(out, c->priority_groups[i]);
    jr__buf_u8(out, (uint8_t)c->priority_policy);
    jr__buf_varint(out, jr__zigzag(c->priority_timeout_ns));
    if (out->err) return out->err;
    jr__buf_u64(out, jr__xxh3(out->data + start, out->len - start));
    return out->err;
}

/* ---------------------------------------------------------------------------------------------
 * Decoding: two passes over the same bytes, one to measure, one to fill the block.
 */
/* A string field: "" is none (NULL). */
static const char *rd_str(jr__rd *r, builder *b, size_t max)
{
    return jr__strblock_rd(r, &b->s, max, 1);
}

static int64_t rd_zz(jr__rd *r)
{
    return jr__unzigzag(jr__rd_varint(r));
}

/* Parses the body (after the version byte) into c: scalars always, strings and arrays into the
 * block when b->dst is set (then c is b->dst->c, whose arrays are in place). */
static void parse(jr__rd *r, builder *b, jr_consumer_config *c)
{
    c->size = sizeof *c;
    c->name = rd_str(r, b, JR_CONSUMER_NAME_MAX);
    c->durable_name = rd_str(r, b, JR_CONSUMER_NAME_MAX);
    c->description = rd_str(r, b, JR__CONSUMER_DESCRIPTION_MAX);
    c->nmetadata = jr__rd_count(r, 2);
    for (size_t i = 0; i < c->nmetadata && !r->err; i++) {
        const char *k = jr__strblock_rd(r, &b->s, JR__CONSUMER_METADATA_MAX, 0);
        const char *v = jr__strblock_rd(r, &b->s, JR__CONSUMER_METADATA_MAX, 0);
        if (b->dst) {
            ((jr_kv *)c->metadata)[i].key = k;
            ((jr_kv *)c->metadata)[i].value = v;
        }
    }
    c->deliver_policy = jr__rd_u8(r);
    c->opt_start_seq = jr__rd_varint(r);
    c->opt_start_time_ns = jr__rd_varint(r);
    c->ack_policy = jr__rd_u8(r);
    c->ack_wait_ns = rd_zz(r);
    c->max_deliver = rd_zz(r);
    c->nbackoff = jr__rd_count(r, 1);
    for (size_t i = 0; i < c->nbackoff && !r->err; i++) {
        int64_t v = rd_zz(r);
        if (b->dst) ((int64_t *)c->backoff_ns)[i] = v;
    }
    c->filter_subject = rd_str(r, b, JR__SUBJECT_MAX);
    c->nfilter_subjects = jr__rd_count(r, 2);
    for (size_t i = 0; i < c->nfilter_subjects && !r->err; i++) {
        const char *s = rd_str(r, b, JR__SUBJECT_MAX);
        if (!s) jr__rd_fail(r); /* an empty filter is never written */
        if (b->dst) ((const char **)c->filter_subjects)[i] = s;
    }
    c->replay_policy = jr__rd_u8(r);
    c->rate_limit_bps = jr__rd_varint(r);
    c->sample_freq = rd_str(r, b, JR__SUBJECT_MAX);
    c->max_waiting = rd_zz(r);
    c->max_ack_pending = rd_zz(r);
    uint8_t flags = jr__rd_u8(r);
    if (flags & ~F_ALL) jr__rd_fail(r);
    c->headers_only = !!(flags & F_HEADERS_ONLY);
    c->flow_control = !!(flags & F_FLOW_CONTROL);
    c->mem_storage = !!(flags & F_MEM_STORAGE);
    c->max_batch = rd_zz(r);
    c->max_expires_ns = rd_zz(r);
    c->max_bytes = rd_zz(r);
    c->deliver_subject = rd_str(r, b, JR__SUBJECT_MAX);
    c->deliver_group = rd_str(r, b, JR__SUBJECT_MAX);
    c->idle_heartbeat_ns = rd_zz(r);
    c->inactive_threshold_ns = rd_zz(r);
    c->num_replicas = jr__rd_u8(r);
    c->pause_until_ns = jr__rd_varint(r);
    c->npriority_groups = jr__rd_count(r, 2);
    for (size_t i = 0; i < c->npriority_groups && !r->err; i++) {
        const char *s = rd_str(r, b, JR__CONSUMER_GROUP_MAX);
        if (!s) jr__rd_fail(r); /* an empty group is never written */
        if (b->dst) ((const char **)c->priority_groups)[i] = s;
    }
    c->priority_policy = jr__rd_u8(r);
    c->priority_timeout_ns = rd_zz(r);
    if (!r->err && jr__rd_left(r) != 0) jr__rd_fail(r); /* trailing bytes */
}

int jr__consumer_config_decode(const void *data, size_t len, const jr_allocator *a,
                               jr__consumer_cfg **out)
{
    *out = NULL;
    const uint8_t *p = data;
    if (!p || len < 1 + 8) return JR_ECORRUPT;
    if (jr__xxh3(p, len - 8) != jr__get_u64(p + len - 8)) return JR_ECORRUPT;
    if (p[0] != JR__CONSUMER_CONFIG_VERSION) return JR_EVERSION;

    jr__rd r;
    builder b = {0};
    jr_consumer_config probe;
    memset(&probe, 0, sizeof probe);
    jr__rd_init(&r, p + 1, len - 1 - 8);
    parse(&r, &b, &probe);
    if (r.err) return JR_ECORRUPT;

    int rc = block_alloc(&b, a, &probe);
    if (rc) return rc;
    jr_consumer_config *c = &b.dst->c;
    jr__rd_init(&r, p + 1, len - 1 - 8);
    parse(&r, &b, c);
    int ok = !r.err && jr__consumer_config_validate(c, NULL, NULL) == 0;
    if (ok) {
        /* only the normal form: normalizing changes nothing */
        jr__consumer_norm n;
        jr__consumer_config_normalize(c, &n);
        ok = c->name == n.c.name && c->filter_subject == n.c.filter_subject &&
             c->nfilter_subjects == n.c.nfilter_subjects && c->ack_wait_ns == n.c.ack_wait_ns &&
             c->max_deliver == n.c.max_deliver && c->max_waiting == n.c.max_waiting &&
             c->max_ack_pending == n.c.max_ack_pending && c->max_batch == n.c.max_batch &&
             c->max_expires_ns == n.c.max_expires_ns && c->max_bytes == n.c.max_bytes &&
             c->idle_heartbeat_ns == n.c.idle_heartbeat_ns &&
             c->inactive_threshold_ns == n.c.inactive_threshold_ns &&
             c->priority_timeout_ns == n.c.priority_timeout_ns;
    }
    if (!ok) {
        jr__consumer_cfg_free(b.dst);
        return JR_ECORRUPT;
    }
    *out = b.dst;
    return 0;
}
