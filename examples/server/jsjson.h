/*
 * jsjson.h — JetStream's JSON for streams (jansson): StreamConfig in, StreamConfig, StreamInfo
 * and error bodies out, with JetStream's field names and types (enums as strings, durations as
 * integer nanoseconds, times as RFC 3339).
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
/* {"code":..,"err_code":..,"description":..} */
json_t *js_error_json(int code, int err_code, const char *desc);
/* Maps a library status and message of a stream request to JetStream's error. `op` says which
 * request (for the codes that depend on it): 'c' create, 'u' update, 'd' delete, 'i' info,
 * 'p' purge, 'g' message get, 'x' message delete, 's' stepdown, 'n' names/list, 'P' publish. */
void js_map_error(int status, const char *msg, int op, int *code, int *err_code, char *desc,
                  size_t desclen);

#endif
