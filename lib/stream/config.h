/*
 * config — stream configuration: JetStream's defaults, validation, normal form, owned copies,
 * the binary encoding used in the meta log, equality and the update rules.
 *
 * A caller's jr_stream_config is validated by jr__stream_config_validate(): every refusal is
 * JR_EINVAL with a message that starts with the field's name ("max_age_ns: must be 0 or at
 * least 100ms"). A valid config has one normal form — the config JetStream would store:
 *   - subjects: { name } when none are given; description "" is no description;
 *   - max_consumers, max_msgs, max_bytes, max_msgs_per_subject, max_msg_size: 0 means -1
 *     (unlimited); replicas 0 means 1;
 *   - duplicate_window_ns 0 means 2 minutes, or max_age_ns when that is shorter;
 *   - a sealed stream has max_age_ns 0, discard new, deny_delete and deny_purge set and
 *     allow_rollup clear (JetStream forces these when it seals);
 *   - placement.cluster "" is none; empty tag and metadata lists are NULL; a placement with
 *     neither cluster nor tags is no placement (NULL), any other is a full-size jr_placement
 *     (size = sizeof) whatever size the caller's had.
 * Equality, the owned copy and the encoding all work on the normal form, so "add with an
 * identical config" is recognised however the caller spelled the defaults.
 *
 * jr__stream_cfg is an owned, normalized deep copy in ONE allocation: every pointer of its
 * jr_stream_config points into the same block, so it is freed with one call and can be handed
 * around as a unit (the meta state holds one per stream).
 *
 * The encoding (version 1, or 2 for a config with allow_direct: config_codec.c) is strict: the
 * decoder bounds-checks every read, requires the trailing xxh3 checksum to match, rejects
 * unknown versions (JR_EVERSION), trailing bytes, strings with NUL bytes, unknown flag bits,
 * invalid or non-normal configs, and a version higher than the config needs (JR_ECORRUPT).
 */
#ifndef JR_STREAM_CONFIG_H
#define JR_STREAM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "util/buf.h"

/* JetStream's limits. */
#define JR__STREAM_DESCRIPTION_MAX 4096          /* bytes */
#define JR__STREAM_METADATA_MAX (128 * 1024)     /* bytes of all keys and values together */
#define JR__STREAM_TAG_MAX 255                   /* bytes of a placement tag or cluster name */
#define JR__STREAM_MIN_AGE_NS 100000000ULL       /* 100ms: shortest max_age and dup window */
#define JR__STREAM_DUP_WINDOW_NS 120000000000ULL /* 2 minutes */
#define JR__STREAM_CONFIG_VERSION 2              /* the latest encoding version (config_codec.c) */

/* Checks every field of cfg (cfg itself must be full size: callers copy a caller's config with
 * its size first; its placement is read up to placement->size). 0 if valid; otherwise JR_EINVAL
 * and, if msg is not NULL, a NUL-terminated message naming the field (truncated to msglen). Never
 * allocates. */
int jr__stream_config_validate(const jr_stream_config *cfg, char *msg, size_t msglen);

/* Validation for adding a stream: jr__stream_config_validate() plus the rules that apply only
 * at creation (a stream can not be created sealed). */
int jr__stream_config_check_add(const jr_stream_config *cfg, char *msg, size_t msglen);

/* A shallow normal form of a valid config: `c` borrows every string and array of the input,
 * except that default subjects point at `subject` and the placement at `placement` (so a
 * jr__stream_norm must not be copied by value once filled). */
typedef struct jr__stream_norm {
    jr_stream_config c;
    const char *subject[1];
    jr_placement placement;
} jr__stream_norm;

/* Fills out with the normal form of cfg, which must be valid. */
void jr__stream_config_normalize(const jr_stream_config *cfg, jr__stream_norm *out);

/* 1 if the valid configs a and b have the same normal form, else 0. Subjects and placement tags
 * compare in order (as JetStream compares them); metadata compares as a set of key/values. */
int jr__stream_config_equal(const jr_stream_config *a, const jr_stream_config *b);

/* Checks that a stream with the valid config `old` may be updated to `upd`: upd must be valid
 * and may change description, subjects, limits, discard, replicas, duplicate window,
 * placement (a move; not together with a replica change), compression, metadata,
 * allow_rollup and allow_direct; sealed/deny_delete/deny_purge only from 0 to 1; retention only
 * between limits and interest. Name, storage and max_consumers can not change. 0, or JR_EINVAL with
 * a message naming the field. Overlap of the new subjects with other streams is the subject index's
 * business, not this check's. */
int jr__stream_config_check_update(const jr_stream_config *old, const jr_stream_config *upd,
                                   char *msg, size_t msglen);

/* An owned, normalized copy (one allocation). Immutable once made, so holders share it by
 * reference: the meta state and the replica's state machine hold the same block while their
 * configs are equal. */
typedef struct jr__stream_cfg {
    jr_stream_config c;     /* normal form; all pointers into this block */
    jr_placement placement; /* c.placement points here when it is not NULL */
    const jr_allocator *alloc;
    uint32_t refs; /* holders; the last jr__stream_cfg_free frees it */
    size_t bytes;  /* size of the block */
} jr__stream_cfg;

/* Validates src and makes an owned normalized copy. 0 with *out set; JR_EINVAL (message as for
 * validate; *out NULL) or JR_ENOMEM. */
int jr__stream_cfg_new(const jr_stream_config *src, const jr_allocator *a, jr__stream_cfg **out,
                       char *msg, size_t msglen);

/* Takes another reference to cfg; returns cfg. */
jr__stream_cfg *jr__stream_cfg_ref(jr__stream_cfg *cfg);

/* Drops a reference; the last one frees the copy. NULL is a no-op. */
void jr__stream_cfg_free(jr__stream_cfg *cfg);

/* Appends the encoding of cfg's normal form to out. 0, JR_EINVAL (cfg invalid; nothing
 * appended) or JR_ENOMEM (out->err set). */
int jr__stream_config_encode(const jr_stream_config *cfg, jr__buf *out);

/* Decodes exactly len bytes into an owned copy. 0 with *out set; JR_ECORRUPT for any malformed,
 * truncated, checksum-failing, invalid or non-normal input; JR_EVERSION for an intact encoding
 * of an unknown version; JR_ENOMEM. On failure *out is NULL. */
int jr__stream_config_decode(const void *data, size_t len, const jr_allocator *a,
                             jr__stream_cfg **out);

/* The placement of a normal form: its cluster (NULL: none) and its tags. */
static inline const char *jr__stream_placement_cluster(const jr_stream_config *c)
{
    return c->placement ? c->placement->cluster : NULL;
}
static inline const char *const *jr__stream_placement_tags(const jr_stream_config *c, size_t *n)
{
    *n = c->placement ? c->placement->ntags : 0;
    return c->placement ? c->placement->tags : NULL;
}

/* Writes a message (printf-style) into msg[0..msglen) if msg is not NULL and returns JR_EINVAL:
 * the one way the config modules report an invalid field. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int jr__stream_config_fail(char *msg, size_t msglen, const char *fmt, ...);

#endif
