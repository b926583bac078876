/*
 * jsjson.h — JetStream's JSON (jansson): StreamConfig in, StreamConfig, StreamInfo and error
 * bodies out (jsjson.c); ConsumerConfig in, ConsumerConfig and ConsumerInfo out, and the text a
 * consumer's clients send: pull requests, ack payloads and ack subjects (jsjson_consumer.c).
 * JetStream's field names and types throughout (enums as strings, durations as integer
 * nanoseconds, times as RFC 3339). Every parser bounds-checks its input and reports JetStream's
 * error instead of failing on what a client can send.
 */
#ifndef SRV_JSJSON_H
#define SRV_JSJSON_H

#include <jansson.h>

#include "jetraft.h"

/* A parsed StreamConfig; its strings are borrowed from the JSON document it was parsed from,
 * which must outlive it. */
typedef struct js_stream_cfg {
    jr_stream_config c;
    jr_placement placement;
    const char **subjects;
    const char **tags;
    jr_kv *metadata;
} js_stream_cfg;

/* Parses a StreamConfig object. Returns 0, or -1 with JetStream's error (code, err_code,
 * description) in the out parameters. */
int js_stream_cfg_parse(json_t *j, js_stream_cfg *out, int *code, int *err_code, char *desc,
                        size_t desclen);
void js_stream_cfg_free(js_stream_cfg *cfg);

json_t *js_stream_config_json(const jr_stream_config *c);
json_t *js_stream_info_json(const jr_stream_info *info, uint64_t now_ns);
/* RFC 3339 UTC with nanoseconds; "0001-01-01T00:00:00Z" for 0. */
void js_time(char *buf, size_t len, uint64_t ns);
json_t *js_time_json(uint64_t ns);
/* The "cluster" object of a stream's or consumer's info; replicas exclude the leader. */
json_t *js_cluster_json(const jr_cluster_info *ci);
/* {"code":..,"err_code":..,"description":..} */
json_t *js_error_json(int code, int err_code, const char *desc);
/* Maps a library status and message of a stream request to JetStream's error. `op` says which
 * request (for the codes that depend on it): 'c' create, 'u' update, 'd' delete, 'i' info,
 * 'p' purge, 'g' message get, 'x' message delete, 's' stepdown, 'n' names/list, 'P' publish. */
void js_map_error(int status, const char *msg, int op, int *code, int *err_code, char *desc,
                  size_t desclen);

/* ---- consumers ------------------------------------------------------------------------------ */

/* A parsed ConsumerConfig; its strings are borrowed from the JSON document it was parsed from,
 * which must outlive it. As in JetStream a missing ack_policy is "none" (Go's zero value). */
typedef struct js_consumer_cfg {
    jr_consumer_config c;
    const char **filters;
    int64_t *backoff;
    jr_kv *metadata;
    const char **groups;
} js_consumer_cfg;

/* Parses a ConsumerConfig object: 0, or -1 with JetStream's error in the out parameters. */
int js_consumer_cfg_parse(json_t *j, js_consumer_cfg *out, int *code, int *err_code, char *desc,
                          size_t desclen);
void js_consumer_cfg_free(js_consumer_cfg *cfg);
/* ConsumerConfig as nats-server writes it (its omitempty fields left out when zero). */
json_t *js_consumer_config_json(const jr_consumer_config *c);
json_t *js_consumer_info_json(const jr_consumer_info *info, uint64_t now_ns);
/* Maps a library status of a consumer request to JetStream's error. op: 'c' create or update,
 * 'u' update only (a missing consumer is 10149), 's' stepdown, anything else a read. */
void js_map_consumer_error(int status, const char *msg, int op, int *code, int *err_code,
                           char *desc, size_t desclen);

/* Parses an RFC 3339 time into ns since the Unix epoch: 0, or -1 if it is not one. The zero
 * time "0001-01-01T00:00:00Z" is 0. */
int js_parse_time(const char *s, uint64_t *ns);
/* Parses a Go duration ("500ms", "1m30s", "1.5s") into ns: 0, or -1. */
int js_parse_duration(const char *s, size_t len, int64_t *ns);

/* A pull request (JSApiConsumerGetNextRequest) on CONSUMER.MSG.NEXT or after +NXT. */
typedef struct js_pull {
    int64_t batch;        /* at least 1 */
    int64_t max_bytes;    /* 0: no cap */
    int64_t expires_ns;   /* 0: no expiry */
    int64_t heartbeat_ns; /* 0: none */
    int no_wait;
    int64_t min_pending, min_ack_pending;
    int priority;
    char group[17];
    char id[64];
} js_pull;
/* Parses a pull request body: empty is batch 1 without expiry, a bare integer is that batch,
 * else the JSON object. 0, or -1 with the text nats-server puts after "400 Bad Request - " in
 * err (the body is not valid, or heartbeat value too large). */
int js_pull_parse(const void *data, size_t len, js_pull *out, char *err, size_t errlen);

/* What an ack payload says. kind: an enum jr_ack_kind, or -1 for a payload JetStream ignores;
 * next: +NXT (an ACK followed by the pull request in rest). rest/rest_len: the text after the
 * verb and its space (the +TERM reason, the +NXT request), borrowed from the payload. */
typedef struct js_ack {
    int kind;
    int next;
    int64_t delay_ns;
    const char *rest;
    size_t rest_len;
} js_ack;
void js_ack_parse(const void *data, size_t len, js_ack *out);

/* The stream and consumer an ack subject names (v1: "$JS.ACK.<s>.<c>.<5 numbers>", v2:
 * "$JS.ACK.<domain>.<account>.<s>.<c>.<5 numbers>[.<more>]"): 0, or -1 if it is not one. */
int js_ack_subject_parse(const char *subject, char *stream, size_t stream_len, char *consumer,
                         size_t consumer_len);

#endif
