/* config_codec — owned copies of stream configurations and their binary encoding (config.h).
 *
 * Encoding, versions 1 and 2 (integers little-endian; "str" = varint length + bytes, no NUL; "zz" =
 * zigzag varint; a list is a varint count then its items):
 *
 *   u8 version=1 | str name | str description ("" = none) | list<str> subjects | u8 retention
 *   | zz max_consumers | zz max_msgs | zz max_bytes | varint max_age_ns | zz max_msgs_per_subject
 *   | zz max_msg_size | u8 discard | u8 storage | u8 replicas | varint duplicate_window_ns
 *   | str placement.cluster ("" = none) | list<str> placement.tags
 *   | u8 flags (1 sealed, 2 deny_delete, 4 deny_purge, 8 allow_rollup, 16 allow_direct)
 *   | u8 compression | list<str key, str value> metadata | u64 xxh3 of every byte before it
 *
 * Version 2 differs from version 1 only in the flag allow_direct, which version 1 can not carry.
 * A config is written as version 1 unless it needs version 2 (allow_direct set), so a server of
 * an earlier release still decodes every config that does not use what it does not know, and a
 * config written by such a server (version 1) decodes here with allow_direct 0.
 *
 * Only the normal form is ever written, and the decoder accepts only the normal form of a valid
 * configuration in the lowest version that holds it, so every config has exactly one encoding.
 */
#include <string.h>

#include "stream/config.h"
#include "util/subject.h"
#include "util/alloc.h"
#include "util/checksum.h"
#include "util/strblock.h"

enum {
    F_SEALED = 1,
    F_DENY_DELETE = 2,
    F_DENY_PURGE = 4,
    F_ALLOW_ROLLUP = 8,
    F_ALL_V1 = 15,
    F_ALLOW_DIRECT = 16, /* version 2 */
    F_ALL = 31
};

/* The lowest encoding version that holds the normal form c. */
static uint8_t version_of(const jr_stream_config *c)
{
    return c->allow_direct ? 2 : 1;
}

/* ---------------------------------------------------------------------------------------------
 * The one-block owned copy: [jr__stream_cfg (its placement inside) | subjects[] | tags[] |
 * metadata[] | strings]. A builder first measures (dst NULL), then fills a block of the
 * measured size (util/strblock.h).
 */
typedef struct builder {
    jr__stream_cfg *dst;
    jr__strblock s;
} builder;

static size_t header_bytes(void)
{
    return (sizeof(jr__stream_cfg) + 15) & ~(size_t)15;
}

/* Allocates the block and points the arrays and the string area into it. */
static int block_alloc(builder *b, const jr_allocator *a, size_t nsubj, size_t ntags, size_t nmeta)
{
    size_t bytes =
        header_bytes() + (nsubj + ntags) * sizeof(const char *) + nmeta * sizeof(jr_kv) + b->s.need;
    unsigned char *p = jr__malloc(a, bytes);
    if (!p) return JR_ENOMEM;
    jr__stream_cfg *d = (jr__stream_cfg *)p;
    memset(d, 0, sizeof *d);
    d->alloc = a;
    d->refs = 1;
    d->bytes = bytes;
    unsigned char *q = p + header_bytes();
    d->c.subjects = nsubj ? (const char *const *)(void *)q : NULL;
    q += nsubj * sizeof(const char *);
    d->placement.size = sizeof d->placement;
    d->placement.tags = ntags ? (const char *const *)(void *)q : NULL;
    q += ntags * sizeof(const char *);
    d->c.metadata = nmeta ? (const jr_kv *)(void *)q : NULL;
    q += nmeta * sizeof(jr_kv);
    b->dst = d;
    b->s.at = (char *)q;
    return 0;
}

/* Copies the strings of the normal form n into b (measure or fill). */
static void copy_strings(builder *b, const jr_stream_config *n)
{
    jr__stream_cfg *d = b->dst;
    const char *name = jr__strblock_opt(&b->s, n->name);
    const char *description = jr__strblock_opt(&b->s, n->description);
    size_t ntags;
    const char *const *tags = jr__stream_placement_tags(n, &ntags);
    jr__strblock_list(&b->s, n->subjects, n->nsubjects, d ? (const char **)d->c.subjects : NULL);
    const char *cluster = jr__strblock_opt(&b->s, jr__stream_placement_cluster(n));
    jr__strblock_list(&b->s, tags, ntags, d ? (const char **)d->placement.tags : NULL);
    jr__strblock_kvs(&b->s, n->metadata, n->nmetadata, d ? (jr_kv *)d->c.metadata : NULL);
    if (d) {
        d->c.name = name;
        d->c.description = description;
        d->placement.cluster = cluster;
    }
}

int jr__stream_cfg_new(const jr_stream_config *src, const jr_allocator *a, jr__stream_cfg **out,
                       char *msg, size_t msglen)
{
    *out = NULL;
    int rc = jr__stream_config_validate(src, msg, msglen);
    if (rc) return rc;
    jr__stream_norm n;
    jr__stream_config_normalize(src, &n);
    builder b = {0};
    copy_strings(&b, &n.c);
    size_t ntags;
    jr__stream_placement_tags(&n.c, &ntags);
    if ((rc = block_alloc(&b, a, n.c.nsubjects, ntags, n.c.nmetadata))) return rc;
    /* scalars from the normal form, arrays and strings into the block */
    jr_stream_config *d = &b.dst->c;
    const char *const *subjects = d->subjects;
    const jr_kv *metadata = d->metadata;
    *d = n.c;
    d->subjects = subjects;
    d->placement = n.c.placement ? &b.dst->placement : NULL;
    b.dst->placement.ntags = ntags;
    d->metadata = metadata;
    copy_strings(&b, &n.c);
    *out = b.dst;
    return 0;
}

jr__stream_cfg *jr__stream_cfg_ref(jr__stream_cfg *cfg)
{
    cfg->refs++;
    return cfg;
}

void jr__stream_cfg_free(jr__stream_cfg *cfg)
{
    if (cfg && --cfg->refs == 0) jr__free(cfg->alloc, cfg);
}

/* ---------------------------------------------------------------------------------------------
 * Encoding
 */
int jr__stream_config_encode(const jr_stream_config *cfg, jr__buf *out)
{
    if (jr__stream_config_validate(cfg, NULL, 0)) return JR_EINVAL;
    jr__stream_norm nn;
    jr__stream_config_normalize(cfg, &nn);
    const jr_stream_config *c = &nn.c;
    size_t start = out->len;
    jr__buf_u8(out, version_of(c));
    jr__buf_str(out, c->name);
    jr__buf_str(out, c->description);
    jr__buf_varint(out, c->nsubjects);
    for (size_t i = 0; i < c->nsubjects; i++) jr__buf_str(out, c->subjects[i]);
    jr__buf_u8(out, (uint8_t)c->retention);
    jr__buf_varint(out, jr__zigzag(c->max_consumers));
    jr__buf_varint(out, jr__zigzag(c->max_msgs));
    jr__buf_varint(out, jr__zigzag(c->max_bytes));
    jr__buf_varint(out, c->max_age_ns);
    jr__buf_varint(out, jr__zigzag(c->max_msgs_per_subject));
    jr__buf_varint(out, jr__zigzag(c->max_msg_size));
    jr__buf_u8(out, (uint8_t)c->discard);
    jr__buf_u8(out, (uint8_t)c->storage);
    jr__buf_u8(out, (uint8_t)c->replicas);
    jr__buf_varint(out, c->duplicate_window_ns);
    size_t ntags;
    const char *const *tags = jr__stream_placement_tags(c, &ntags);
    jr__buf_str(out, jr__stream_placement_cluster(c));
    jr__buf_varint(out, ntags);
    for (size_t i = 0; i < ntags; i++) jr__buf_str(out, tags[i]);
    jr__buf_u8(out, (uint8_t)((c->sealed ? F_SEALED : 0) | (c->deny_delete ? F_DENY_DELETE : 0) |
                              (c->deny_purge ? F_DENY_PURGE : 0) |
                              (c->allow_rollup ? F_ALLOW_ROLLUP : 0) |
                              (c->allow_direct ? F_ALLOW_DIRECT : 0)));
    jr__buf_u8(out, (uint8_t)c->compression);
    jr__buf_varint(out, c->nmetadata);
    for (size_t i = 0; i < c->nmetadata; i++) {
        jr__buf_str(out, c->metadata[i].key);
        jr__buf_str(out, c->metadata[i].value);
    }
    if (out->err) return out->err;
    jr__buf_u64(out, jr__xxh3(out->data + start, out->len - start));
    return out->err;
}

/* ---------------------------------------------------------------------------------------------
 * Decoding: two passes over the same bytes, one to measure, one to fill the block.
 */
static const char *rd_str(jr__rd *r, builder *b, size_t max, int empty_is_null)
{
    return jr__strblock_rd(r, &b->s, max, empty_is_null);
}

static int64_t rd_zz(jr__rd *r)
{
    return jr__unzigzag(jr__rd_varint(r));
}

/* Parses the body (after the version byte) into c and its placement pl: scalars always,
 * strings and arrays into the block when b->dst is set (then c is b->dst->c and pl
 * b->dst->placement, whose arrays are in place). c->placement is pl unless the placement is
 * empty (the normal form). */
static void parse(jr__rd *r, uint8_t version, builder *b, jr_stream_config *c, jr_placement *pl)
{
    c->size = sizeof *c;
    c->name = rd_str(r, b, JR_STREAM_NAME_MAX, 0);
    c->description = rd_str(r, b, JR__STREAM_DESCRIPTION_MAX, 1);
    c->nsubjects = jr__rd_count(r, 2);
    for (size_t i = 0; i < c->nsubjects && !r->err; i++) {
        const char *s = rd_str(r, b, JR__SUBJECT_MAX, 0);
        if (b->dst) ((const char **)c->subjects)[i] = s;
    }
    c->retention = jr__rd_u8(r);
    c->max_consumers = rd_zz(r);
    c->max_msgs = rd_zz(r);
    c->max_bytes = rd_zz(r);
    c->max_age_ns = jr__rd_varint(r);
    c->max_msgs_per_subject = rd_zz(r);
    int64_t mms = rd_zz(r);
    if (mms < INT32_MIN || mms > INT32_MAX) jr__rd_fail(r);
    c->max_msg_size = (int32_t)(r->err ? 0 : mms);
    c->discard = jr__rd_u8(r);
    c->storage = jr__rd_u8(r);
    c->replicas = jr__rd_u8(r);
    c->duplicate_window_ns = jr__rd_varint(r);
    pl->size = sizeof *pl;
    pl->cluster = rd_str(r, b, JR__STREAM_TAG_MAX, 1);
    pl->ntags = jr__rd_count(r, 2);
    for (size_t i = 0; i < pl->ntags && !r->err; i++) {
        const char *s = rd_str(r, b, JR__STREAM_TAG_MAX + 1, 0); /* + a leading '!' */
        if (b->dst) ((const char **)pl->tags)[i] = s;
    }
    c->placement = pl->cluster || pl->ntags ? pl : NULL;
    uint8_t flags = jr__rd_u8(r);
    if (flags & ~(version >= 2 ? F_ALL : F_ALL_V1)) jr__rd_fail(r);
    c->sealed = !!(flags & F_SEALED);
    c->deny_delete = !!(flags & F_DENY_DELETE);
    c->deny_purge = !!(flags & F_DENY_PURGE);
    c->allow_rollup = !!(flags & F_ALLOW_ROLLUP);
    c->allow_direct = !!(flags & F_ALLOW_DIRECT);
    c->compression = jr__rd_u8(r);
    c->nmetadata = jr__rd_count(r, 3);
    for (size_t i = 0; i < c->nmetadata && !r->err; i++) {
        const char *k = rd_str(r, b, JR__STREAM_METADATA_MAX, 0);
        const char *v = rd_str(r, b, JR__STREAM_METADATA_MAX, 0);
        if (b->dst) {
            ((jr_kv *)c->metadata)[i].key = k;
            ((jr_kv *)c->metadata)[i].value = v;
        }
    }
    if (!r->err && jr__rd_left(r) != 0) jr__rd_fail(r); /* trailing bytes */
}

/* 1 if the valid config c is its own normal form (what the encoder writes). */
static int is_normal(const jr_stream_config *c)
{
    jr__stream_norm n;
    jr__stream_config_normalize(c, &n);
    const jr_stream_config *x = &n.c;
    return c->nsubjects > 0 && x->max_consumers == c->max_consumers && x->max_msgs == c->max_msgs &&
           x->max_bytes == c->max_bytes && x->max_age_ns == c->max_age_ns &&
           x->max_msgs_per_subject == c->max_msgs_per_subject &&
           x->max_msg_size == c->max_msg_size && x->discard == c->discard &&
           x->replicas == c->replicas && x->duplicate_window_ns == c->duplicate_window_ns &&
           x->deny_delete == c->deny_delete && x->deny_purge == c->deny_purge &&
           x->allow_rollup == c->allow_rollup;
}

int jr__stream_config_decode(const void *data, size_t len, const jr_allocator *a,
                             jr__stream_cfg **out)
{
    *out = NULL;
    const uint8_t *p = data;
    if (!p || len < 1 + 8) return JR_ECORRUPT;
    if (jr__xxh3(p, len - 8) != jr__get_u64(p + len - 8)) return JR_ECORRUPT;
    uint8_t version = p[0];
    if (version < 1 || version > JR__STREAM_CONFIG_VERSION) return JR_EVERSION;

    jr__rd r;
    builder b = {0};
    jr_stream_config probe;
    jr_placement probe_pl;
    memset(&probe, 0, sizeof probe);
    memset(&probe_pl, 0, sizeof probe_pl);
    jr__rd_init(&r, p + 1, len - 1 - 8);
    parse(&r, version, &b, &probe, &probe_pl);
    if (r.err) return JR_ECORRUPT;

    int rc = block_alloc(&b, a, probe.nsubjects, probe_pl.ntags, probe.nmetadata);
    if (rc) return rc;
    jr_stream_config *c = &b.dst->c;
    jr__rd_init(&r, p + 1, len - 1 - 8);
    parse(&r, version, &b, c, &b.dst->placement);
    if (r.err || jr__stream_config_validate(c, NULL, 0) || !is_normal(c) ||
        version != version_of(c)) {
        jr__stream_cfg_free(b.dst);
        return JR_ECORRUPT;
    }
    *out = b.dst;
    return 0;
}
