/* config — defaults, validation and the normal form of stream configurations (see config.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "stream/subject_index.h"
#include "util/abi.h"
#include "util/subject.h"

void jr_stream_config_init_size(jr_stream_config *cfg, size_t size)
{
    jr_stream_config d;
    memset(&d, 0, sizeof d);
    d.retention = JR_RETAIN_LIMITS;
    d.max_consumers = -1;
    d.max_msgs = -1;
    d.max_bytes = -1;
    d.max_age_ns = 0;
    d.max_msgs_per_subject = -1;
    d.max_msg_size = -1;
    d.discard = JR_DISCARD_OLD;
    d.storage = JR_STORAGE_FILE;
    d.replicas = 1;
    d.duplicate_window_ns = 0; /* 2 minutes, or max_age when shorter: see normalize */
    d.placement = NULL;
    d.compression = JR_COMPRESS_NONE;
    jr__abi_init(cfg, size, &d, sizeof d);
}

void jr_placement_init_size(jr_placement *p, size_t size)
{
    jr_placement d;
    memset(&d, 0, sizeof d);
    jr__abi_init(p, size, &d, sizeof d);
}

int jr__stream_config_fail(char *msg, size_t msglen, const char *fmt, ...)
{
    if (msg && msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return JR_EINVAL;
}

static int is_space_or_ctl(unsigned char c)
{
    return c <= 0x20 || c == 0x7f;
}

/* Names become file names and subjects: no whitespace, control bytes, '.', '*', '>', '/', '\'. */
static const char *name_problem(const char *s)
{
    if (!s || !*s) return "required";
    size_t n = strlen(s);
    if (n > JR_STREAM_NAME_MAX) return "longer than 255 bytes";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (is_space_or_ctl(c)) return "must not contain whitespace or control characters";
        if (c == '.' || c == '*' || c == '>' || c == '/' || c == '\\')
            return "must not contain '.', '*', '>', '/' or '\\'";
    }
    return NULL;
}

/* Cluster names and tags: 1..255 bytes without whitespace or control bytes. */
static const char *word_problem(const char *s)
{
    if (!s || !*s) return "must not be empty";
    size_t n = strlen(s);
    if (n > JR__STREAM_TAG_MAX) return "longer than 255 bytes";
    for (size_t i = 0; i < n; i++)
        if (is_space_or_ctl((unsigned char)s[i]))
            return "must not contain whitespace or control characters";
    return NULL;
}

static int ascii_casecmp(const char *a, const char *b)
{
    for (;; a++, b++) {
        unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
        if (x >= 'A' && x <= 'Z') x = (unsigned char)(x + 32);
        if (y >= 'A' && y <= 'Z') y = (unsigned char)(y + 32);
        if (x != y || !x) return x - y;
    }
}

static int check_bool(const char *field, int v, char *msg, size_t msglen)
{
    if (v == 0 || v == 1) return 0;
    return jr__stream_config_fail(msg, msglen, "%s: must be 0 or 1, not %d", field, v);
}

static int check_limit(const char *field, int64_t v, char *msg, size_t msglen)
{
    if (v >= -1) return 0;
    return jr__stream_config_fail(msg, msglen, "%s: must be -1 (unlimited) or at least 0, not %lld",
                                  field, (long long)v);
}

static int check_subjects(const jr_stream_config *c, char *msg, size_t msglen)
{
    if (c->nsubjects && !c->subjects)
        return jr__stream_config_fail(msg, msglen, "subjects: NULL with nsubjects %zu",
                                      c->nsubjects);
    for (size_t i = 0; i < c->nsubjects; i++) {
        const char *s = c->subjects[i], *why = "";
        if (!s) return jr__stream_config_fail(msg, msglen, "subjects[%zu]: NULL", i);
        if (jr__subject_classify(s, &why) == JR__SUBJECT_INVALID)
            return jr__stream_config_fail(
                msg, msglen, "subjects[%zu]: invalid subject \"%.64s\": %s", i, s, why);
        if (strcmp(s, ">") == 0)
            return jr__stream_config_fail(msg, msglen,
                                          "subjects[%zu]: \">\" would capture every subject", i);
    }
    size_t i, j;
    int rc = jr__subject_first_overlap(c->subjects, c->nsubjects, NULL, &i, &j);
    if (rc && rc != JR_EEXIST) /* not after the loop above; kept for the contract */
        return jr__stream_config_fail(msg, msglen, "subjects[%zu]: invalid subject", i);
    if (rc && strcmp(c->subjects[i], c->subjects[j]) == 0)
        return jr__stream_config_fail(msg, msglen, "subjects[%zu]: duplicate subject \"%.64s\"", i,
                                      c->subjects[i]);
    if (rc)
        return jr__stream_config_fail(msg, msglen, "subjects[%zu]: \"%.64s\" overlaps \"%.64s\"", i,
                                      c->subjects[i], c->subjects[j]);
    return 0;
}

static int check_placement(const jr_placement *caller, char *msg, size_t msglen)
{
    if (!caller) return 0;
    jr_placement copy;
    jr_placement_init(&copy);
    if (jr__abi_read(&copy, sizeof copy, caller) != 0)
        return jr__stream_config_fail(msg, msglen, "placement.size: %zu is too small",
                                      jr__abi_size(caller));
    const jr_placement *p = &copy;
    const char *why;
    if (p->cluster && *p->cluster && (why = word_problem(p->cluster)))
        return jr__stream_config_fail(msg, msglen, "placement.cluster: %s", why);
    if (p->ntags && !p->tags)
        return jr__stream_config_fail(msg, msglen, "placement.tags: NULL with ntags %zu", p->ntags);
    for (size_t i = 0; i < p->ntags; i++) {
        const char *t = p->tags[i];
        if (!t) return jr__stream_config_fail(msg, msglen, "placement.tags[%zu]: NULL", i);
        const char *bare = t[0] == '!' ? t + 1 : t;
        if ((why = word_problem(bare)))
            return jr__stream_config_fail(msg, msglen, "placement.tags[%zu]: %s", i, why);
        if (t[0] == '!') {
            for (size_t j = 0; j < p->ntags; j++)
                if (p->tags[j] && ascii_casecmp(p->tags[j], bare) == 0)
                    return jr__stream_config_fail(msg, msglen,
                                                  "placement.tags[%zu]: \"%.64s\" is both required "
                                                  "and excluded",
                                                  i, bare);
        }
    }
    return 0;
}

static int check_metadata(const jr_stream_config *c, char *msg, size_t msglen)
{
    if (c->nmetadata && !c->metadata)
        return jr__stream_config_fail(msg, msglen, "metadata: NULL with nmetadata %zu",
                                      c->nmetadata);
    size_t total = 0;
    for (size_t i = 0; i < c->nmetadata; i++) {
        const jr_kv *kv = &c->metadata[i];
        if (!kv->key || !*kv->key)
            return jr__stream_config_fail(msg, msglen, "metadata[%zu]: empty key", i);
        if (!kv->value) return jr__stream_config_fail(msg, msglen, "metadata[%zu]: NULL value", i);
        total += strlen(kv->key) + strlen(kv->value);
        if (total > JR__STREAM_METADATA_MAX)
            return jr__stream_config_fail(msg, msglen, "metadata: larger than %d bytes",
                                          JR__STREAM_METADATA_MAX);
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->metadata[j].key, kv->key) == 0)
                return jr__stream_config_fail(msg, msglen, "metadata[%zu]: duplicate key \"%.64s\"",
                                              i, kv->key);
    }
    return 0;
}

int jr__stream_config_validate(const jr_stream_config *c, char *msg, size_t msglen)
{
    int rc;
    const char *why;
    if (msg && msglen) msg[0] = '\0';
    if (!c) return jr__stream_config_fail(msg, msglen, "config: NULL");
    if (c->size < sizeof *c)
        return jr__stream_config_fail(msg, msglen,
                                      "size: %zu, expected %zu (use jr_stream_config_init())",
                                      c->size, sizeof *c);
    if ((why = name_problem(c->name))) return jr__stream_config_fail(msg, msglen, "name: %s", why);
    if (c->description && strlen(c->description) > JR__STREAM_DESCRIPTION_MAX)
        return jr__stream_config_fail(msg, msglen, "description: longer than %d bytes",
                                      JR__STREAM_DESCRIPTION_MAX);
    if ((rc = check_subjects(c, msg, msglen))) return rc;
    if (c->retention < JR_RETAIN_LIMITS || c->retention > JR_RETAIN_WORKQUEUE)
        return jr__stream_config_fail(msg, msglen, "retention: unknown policy %d", c->retention);
    if ((rc = check_limit("max_consumers", c->max_consumers, msg, msglen)) ||
        (rc = check_limit("max_msgs", c->max_msgs, msg, msglen)) ||
        (rc = check_limit("max_bytes", c->max_bytes, msg, msglen)) ||
        (rc = check_limit("max_msgs_per_subject", c->max_msgs_per_subject, msg, msglen)) ||
        (rc = check_limit("max_msg_size", c->max_msg_size, msg, msglen)))
        return rc;
    if (c->max_age_ns > (uint64_t)INT64_MAX)
        return jr__stream_config_fail(msg, msglen, "max_age_ns: larger than %lld",
                                      (long long)INT64_MAX);
    if (c->max_age_ns && c->max_age_ns < JR__STREAM_MIN_AGE_NS)
        return jr__stream_config_fail(msg, msglen,
                                      "max_age_ns: must be 0 (unlimited) or at least 100ms");
    if (c->discard != JR_DISCARD_OLD && c->discard != JR_DISCARD_NEW)
        return jr__stream_config_fail(msg, msglen, "discard: unknown policy %d", c->discard);
    if (c->storage != JR_STORAGE_FILE && c->storage != JR_STORAGE_MEMORY)
        return jr__stream_config_fail(msg, msglen, "storage: unknown type %d", c->storage);
    if (c->replicas < 0 || c->replicas > JR_MAX_REPLICAS)
        return jr__stream_config_fail(msg, msglen, "replicas: must be 1..%d, not %d",
                                      JR_MAX_REPLICAS, c->replicas);
    if (c->duplicate_window_ns > (uint64_t)INT64_MAX)
        return jr__stream_config_fail(msg, msglen, "duplicate_window_ns: larger than %lld",
                                      (long long)INT64_MAX);
    if (c->duplicate_window_ns && c->duplicate_window_ns < JR__STREAM_MIN_AGE_NS)
        return jr__stream_config_fail(msg, msglen,
                                      "duplicate_window_ns: must be 0 (default) or at least 100ms");
    if (c->duplicate_window_ns && c->max_age_ns && c->duplicate_window_ns > c->max_age_ns)
        return jr__stream_config_fail(msg, msglen, "duplicate_window_ns: larger than max_age_ns");
    if ((rc = check_placement(c->placement, msg, msglen))) return rc;
    if ((rc = check_bool("sealed", c->sealed, msg, msglen)) ||
        (rc = check_bool("deny_delete", c->deny_delete, msg, msglen)) ||
        (rc = check_bool("deny_purge", c->deny_purge, msg, msglen)) ||
        (rc = check_bool("allow_rollup", c->allow_rollup, msg, msglen)) ||
        (rc = check_bool("allow_direct", c->allow_direct, msg, msglen)))
        return rc;
    if (c->deny_purge && c->allow_rollup)
        return jr__stream_config_fail(msg, msglen,
                                      "allow_rollup: roll-ups require the purge permission "
                                      "(deny_purge is set)");
    if (c->compression != JR_COMPRESS_NONE && c->compression != JR_COMPRESS_LZ4)
        return jr__stream_config_fail(msg, msglen, "compression: unknown algorithm %d",
                                      c->compression);
    return check_metadata(c, msg, msglen);
}

int jr__stream_config_check_add(const jr_stream_config *cfg, char *msg, size_t msglen)
{
    int rc = jr__stream_config_validate(cfg, msg, msglen);
    if (rc) return rc;
    if (cfg->sealed)
        return jr__stream_config_fail(
            msg, msglen, "sealed: a stream can not be created sealed (seal it by update)");
    return 0;
}

static int64_t unlimited(int64_t v)
{
    return v == 0 ? -1 : v;
}

void jr__stream_config_normalize(const jr_stream_config *in, jr__stream_norm *out)
{
    jr_stream_config *c = &out->c;
    *c = *in;
    c->size = sizeof *c;
    if (c->description && !*c->description) c->description = NULL;
    if (c->nsubjects == 0) {
        out->subject[0] = in->name;
        c->subjects = out->subject;
        c->nsubjects = 1;
    }
    c->max_consumers = unlimited(c->max_consumers);
    c->max_msgs = unlimited(c->max_msgs);
    c->max_bytes = unlimited(c->max_bytes);
    c->max_msgs_per_subject = unlimited(c->max_msgs_per_subject);
    c->max_msg_size = (int32_t)unlimited(c->max_msg_size);
    if (c->replicas == 0) c->replicas = 1;
    if (c->duplicate_window_ns == 0) {
        c->duplicate_window_ns = JR__STREAM_DUP_WINDOW_NS;
        if (c->max_age_ns && c->max_age_ns < c->duplicate_window_ns)
            c->duplicate_window_ns = c->max_age_ns;
    }
    jr_placement *p = &out->placement;
    jr_placement_init(p);
    if (in->placement) jr__abi_read(p, sizeof *p, in->placement); /* validated: size fits */
    if (p->cluster && !*p->cluster) p->cluster = NULL;
    if (p->ntags == 0) p->tags = NULL;
    c->placement = p->cluster || p->ntags ? p : NULL;
    if (c->nmetadata == 0) c->metadata = NULL;
    if (c->sealed) {
        /* what JetStream forces on a sealed stream */
        c->max_age_ns = 0;
        c->discard = JR_DISCARD_NEW;
        c->deny_delete = 1;
        c->deny_purge = 1;
        c->allow_rollup = 0;
    }
}
