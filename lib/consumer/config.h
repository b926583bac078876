/*
 * config — consumer configuration: JetStream's defaults, validation with JetStream's refusals
 * (HTTP-like code, err_code and description), the normal form, owned copies, the binary
 * encoding used in the logs, equality, the update rules and filter matching.
 *
 * Refusals. jr__consumer_config_validate() runs the checks of nats-server's checkConsumerCfg in
 * its order, then the work-queue checks (addConsumerWithAssignment) and the name length, and
 * fills a jr__cerr with the code and text JetStream answers ("400/10083 consumer idle heartbeat
 * needs to be >= 100ms"). JetStream runs setConsumerConfigDefaults first, which silently clamps
 * some negative values; here:
 *   - max_waiting < 0 (10087 pull, 10080 push), max_batch < 0 on a pull consumer (10114) and
 *     max_expires_ns < 0 on a pull consumer (10115) are refused as the checks would refuse the
 *     raw value: a C caller passing a negative limit has a bug;
 *   - the other clamps are kept in the normal form: max_deliver 0 or < -1 is -1, max_ack_pending
 *     < -1 is -1, negative max_bytes, idle_heartbeat_ns, inactive_threshold_ns (and max_batch,
 *     max_expires_ns of a push consumer) are 0 — and the checks see the clamped values (a
 *     negative heartbeat with flow control is 10108, as in JetStream).
 * Values JetStream's JSON decoder would refuse before any check (a policy outside its enum) are
 * 400/10094 "consumer delivery policy invalid", 400/10181 "consumer ack policy invalid",
 * 400/10182 "consumer replay policy invalid" and 500/10052 "unknown priority policy: N" (the
 * text of its JSON encoder). A malformed C argument JetStream cannot receive (a size too small,
 * a NULL array with a count, a NULL or duplicate metadata key) is 500/10052 with a text naming
 * the field.
 * Deliberate differences: both name and durable_name are held to 255 bytes (JetStream measures
 * the durable name); filters refused as overlapping are those of which one is a subset of
 * another (what nats-server tests, despite the text: "a.*" and "*.b" are allowed together); the
 * sample frequency parses as Go's strconv.Atoi after one trailing '%' is removed, and its error
 * text quotes the input as Go does for ASCII. The cycle check of a deliver subject against the
 * stream's subjects (10081), server and account limits (10121, 10125, 10153) and the
 * work-queue checks that need the other consumers (10099, 10100: see
 * jr__consumer_filters_overlap) are the caller's.
 *
 * Normal form (what JetStream would store and report in ConsumerInfo.config):
 *   - empty strings are NULL (name, durable_name, description, filter_subject, sample_freq,
 *     deliver_subject, deliver_group); empty lists are NULL with count 0;
 *   - name is durable_name when only durable_name is set;
 *   - filters: one filter is always filter_subject (a one-entry filter_subjects becomes it),
 *     two or more are filter_subjects in the caller's order with filter_subject NULL;
 *   - ack_wait_ns: backoff_ns[0] when a backoff is set, else 30 s when 0 and ack != none;
 *   - max_deliver -1 for 0 or < -1; max_waiting 512 for a pull consumer left at 0;
 *     max_ack_pending -1 for < -1, 1000 for 0 when ack != none;
 *   - the clamps above (priority_timeout_ns too); inactive_threshold_ns 5 s for an ephemeral (no
 *     durable_name) left at 0; priority_timeout_ns 2 min for a pinned-client policy left at 0;
 *   - headers_only, flow_control, mem_storage are 0 or 1 (any non-zero value is 1);
 *   - num_replicas stays 0 for "the stream's" (the stream is not part of the config).
 * Equality, the owned copy and the encoding all work on the normal form, so "create with an
 * identical config" is recognised however the caller spelled the defaults.
 *
 * jr__consumer_cfg is an owned, normalized deep copy in ONE allocation (every pointer of its
 * jr_consumer_config points into the same block), immutable once made and shared by reference.
 *
 * The encoding (version 1, config_codec.c) is strict: the decoder bounds-checks every read,
 * requires the trailing xxh3 checksum to match, rejects unknown versions (JR_EVERSION),
 * trailing bytes, strings with NUL bytes, unknown flag bits, invalid or non-normal configs
 * (JR_ECORRUPT), so every config has exactly one encoding.
 */
#ifndef JR_CONSUMER_CONFIG_H
#define JR_CONSUMER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"
#include "util/buf.h"

/* JetStream's limits and defaults (nats-server consumer.go, jetstream_api.go). */
#define JR__CONSUMER_DESCRIPTION_MAX 4096         /* JSMaxDescriptionLen */
#define JR__CONSUMER_METADATA_MAX (128 * 1024)    /* JSMaxMetadataLen, keys plus values */
#define JR__CONSUMER_ACK_WAIT_NS 30000000000LL    /* JsAckWaitDefault */
#define JR__CONSUMER_INACTIVE_NS 5000000000LL     /* JsDeleteWaitTimeDefault (ephemerals) */
#define JR__CONSUMER_MAX_WAITING 512              /* JSWaitQueueDefaultMax */
#define JR__CONSUMER_MAX_ACK_PENDING 1000         /* JsDefaultMaxAckPending */
#define JR__CONSUMER_MIN_HEARTBEAT_NS 100000000LL /* 100 ms */
#define JR__CONSUMER_MIN_EXPIRES_NS 1000000LL     /* 1 ms */
#define JR__CONSUMER_PINNED_TTL_NS 120000000000LL /* JsDefaultPinnedTTL */
#define JR__CONSUMER_GROUP_MAX 16                 /* bytes of a priority group name */
#define JR__CONSUMER_CONFIG_VERSION 1

/* A refusal, JetStream's way: the HTTP-like code, JetStream's err_code and its description. */
typedef struct jr__cerr {
    int http;
    int code;
    char msg[256];
} jr__cerr;

/* The stream facts a consumer config is checked against: enum jr_retention, the stream's
 * replicas (its normal form: at least 1), enum jr_storage (no check reads it: a consumer keeps
 * its state where its stream does unless mem_storage is set, and JetStream refuses neither). */
typedef struct jr__cstream_facts {
    int retention;
    int replicas;
    int storage;
} jr__cstream_facts;

/* Checks every field of cfg, which must be full size (a caller's config is copied with its size
 * first; a smaller size is refused). stream NULL: only the stream-independent checks; otherwise
 * also num_replicas against the stream (10126, 10134) and the work-queue rules (10084, 10098,
 * 10101). 0, or JR_EINVAL with *err filled (err may be NULL; on success err->code is 0 and its
 * message empty). Never allocates. */
int jr__consumer_config_validate(const jr_consumer_config *cfg, const jr__cstream_facts *stream,
                                 jr__cerr *err);

/* A shallow normal form of a valid config: `c` borrows every string and array of the input (a
 * one-entry filter_subjects becomes filter_subject pointing at that entry). */
typedef struct jr__consumer_norm {
    jr_consumer_config c;
} jr__consumer_norm;

/* Fills out with the normal form of cfg, which must be valid (stream-independently). */
void jr__consumer_config_normalize(const jr_consumer_config *cfg, jr__consumer_norm *out);

/* 1 if the valid configs a and b have the same normal form, else 0. Backoff and filters compare
 * in order (as JetStream compares them); metadata compares as a set of key/values. */
int jr__consumer_config_equal(const jr_consumer_config *a, const jr_consumer_config *b);

/* Checks that a consumer with the valid config `old` may be updated to `upd` (nats-server's
 * checkNewConsumerConfig): upd must be valid (stream-independently) and name the same consumer;
 * deliver policy, opt_start_seq, opt_start_time_ns, mem_storage, ack and replay policy,
 * idle_heartbeat_ns, flow_control, max_waiting and the pull/push mode can not change: 500/10012
 * with JetStream's text ("deliver policy can not be updated"); a backoff longer than max_deliver
 * is 400/10116. Everything else may change (priority groups, policy and timeout too: JetStream
 * does not restrict them). A push consumer may change its deliver_subject here: JetStream refuses
 * that only while the old subject has interest (400/10013), which is the caller's to know.
 * pause_until_ns is not compared (an update keeps the running pause; the pause calls change
 * it). The checks of upd against its stream (num_replicas, work queues) are
 * jr__consumer_config_validate's with the stream's facts. 0 or JR_EINVAL with *err filled (err
 * may be NULL). */
int jr__consumer_config_check_update(const jr_consumer_config *old, const jr_consumer_config *upd,
                                     jr__cerr *err);

/* An owned, normalized copy (one allocation). Immutable once made, so holders share it by
 * reference. */
typedef struct jr__consumer_cfg {
    jr_consumer_config c; /* normal form; all pointers into this block */
    const jr_allocator *alloc;
    uint32_t refs; /* holders; the last jr__consumer_cfg_free frees it */
    size_t bytes;  /* size of the block */
} jr__consumer_cfg;

/* Validates src (stream-independently) and makes an owned normalized copy. 0 with *out set;
 * JR_EINVAL (*err filled as by validate; err may be NULL) or JR_ENOMEM; on failure *out is
 * NULL. */
int jr__consumer_cfg_new(const jr_consumer_config *src, const jr_allocator *a,
                         jr__consumer_cfg **out, jr__cerr *err);

/* Takes another reference to cfg; returns cfg. */
jr__consumer_cfg *jr__consumer_cfg_ref(jr__consumer_cfg *cfg);

/* Drops a reference; the last one frees the copy. NULL is a no-op. */
void jr__consumer_cfg_free(jr__consumer_cfg *cfg);

/* Appends the encoding of cfg's normal form to out. 0, JR_EINVAL (cfg invalid; nothing
 * appended) or JR_ENOMEM (out->err set). */
int jr__consumer_config_encode(const jr_consumer_config *cfg, jr__buf *out);

/* Decodes exactly len bytes into an owned copy. 0 with *out set; JR_ECORRUPT for any malformed,
 * truncated, checksum-failing, invalid or non-normal input; JR_EVERSION for an intact encoding
 * of an unknown version; JR_ENOMEM. On failure *out is NULL. */
int jr__consumer_config_decode(const void *data, size_t len, const jr_allocator *a,
                               jr__consumer_cfg **out);

/* 1 if the filter sets of the valid configs a and b (none = every subject) can match a common
 * literal subject, else 0: the work-queue collision test (10099 when either has no filter,
 * 10100 otherwise). Never allocates. */
int jr__consumer_filters_overlap(const jr_consumer_config *a, const jr_consumer_config *b);

/* 1 if the literal subject matches one of the valid cfg's filters (no filter: every valid
 * subject), else 0. Never allocates. */
int jr__consumer_filter_matches(const jr_consumer_config *cfg, const char *subject);

/* The replica count of a consumer with the valid cfg on a stream (nats-server's replicas()):
 * num_replicas, or the stream's when it is 0 or above it, except that an ephemeral (no
 * durable_name) left at 0 on a limits stream has 1. */
int jr__consumer_replicas(const jr_consumer_config *cfg, const jr__cstream_facts *stream);

/* The filters of a valid config as one list: *n of them (0: no filter, every subject). `one`
 * is scratch space for the single-filter case; the result borrows cfg's strings. */
const char *const *jr__consumer_filters(const jr_consumer_config *cfg, const char **one, size_t *n);

/* Fills err (if not NULL) with http, code and the printf-style message, and returns JR_EINVAL:
 * the one way the consumer config modules refuse. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
int jr__consumer_config_fail(jr__cerr *err, int http, int code, const char *fmt, ...);

#endif
