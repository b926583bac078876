/*
 * fuzz_jsjson — libFuzzer target for jetraft-server's JetStream API JSON and the text consumers'
 * clients send (examples/server/jsjson.h). The first byte picks the parser; the rest is what a
 * client sends:
 *
 *   0  a StreamConfig (the body of STREAM.CREATE / STREAM.UPDATE)
 *   1  a ConsumerConfig (the "config" of CONSUMER.CREATE)
 *   2  a pull request (CONSUMER.MSG.NEXT's body, or what follows +NXT)
 *   3  an ack payload
 *   4  an ack subject
 *   5  an RFC 3339 time
 *   6  a Go duration
 *
 * For any input: no parser reads out of bounds, crashes, leaks or fails other than with
 * JetStream's error; what a parser accepts satisfies its documented bounds (a pull's batch at
 * least 1 and no negative limit, a priority in 0..9, an ack subject's names non-empty and
 * without dots). Round trips: a StreamConfig or ConsumerConfig the library accepts, written back
 * as the server writes it (StreamInfo's and ConsumerInfo's "config") and parsed again, is
 * accepted again and has the same normal form; an accepted time written back by js_time parses
 * to the same instant.
 *
 * Build: CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false
 *        ninja -C build-fuzz fuzz/fuzz_jsjson
 * Run:   build-fuzz/fuzz/fuzz_jsjson -max_total_time=60 fuzz/corpus/fuzz_jsjson
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "consumer/config.h"
#include "jsjson.h"
#include "stream/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A JetStream error: a code and err_code set, a NUL-terminated description. */
static void check_err(int code, int err_code, const char *desc, size_t dl)
{
    if (code < 400 || code > 599 || err_code < 10000 || !memchr(desc, 0, dl)) __builtin_trap();
}

/* Writes out the JSON the server wrote back, parses the text again as a StreamConfig and
 * returns its validated normal form (consumer_again: the same for a ConsumerConfig); either
 * step failing is a finding. */
static jr__stream_cfg *stream_again(json_t *written)
{
    char *text = json_dumps(written, JSON_COMPACT);
    if (!text) __builtin_trap();
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    free(text);
    js_stream_cfg cfg;
    int code, err_code;
    char desc[400];
    jr__stream_cfg *n = NULL;
    if (!j || js_stream_cfg_parse(j, &cfg, &code, &err_code, desc, sizeof desc) ||
        jr__stream_cfg_new(&cfg.c, NULL, &n, desc, sizeof desc))
        __builtin_trap();
    js_stream_cfg_free(&cfg);
    json_decref(j);
    return n;
}

static void stream_config(json_t *j)
{
    js_stream_cfg cfg;
    int code = 0, err_code = 0;
    char desc[400];
    if (js_stream_cfg_parse(j, &cfg, &code, &err_code, desc, sizeof desc)) {
        check_err(code, err_code, desc, sizeof desc);
        js_stream_cfg_free(&cfg);
        return;
    }
    /* the server names the stream from the request's subject when the body does not */
    if (!cfg.c.name) cfg.c.name = "S";
    /* STREAM.UPDATE writes back the parsed config before the library validates it */
    json_decref(js_stream_config_json(&cfg.c));
    jr__stream_cfg *a = NULL;
    int rc = jr__stream_cfg_new(&cfg.c, NULL, &a, desc, sizeof desc);
    if (rc == 0) {
        json_t *w = js_stream_config_json(&a->c);
        jr__stream_cfg *b = stream_again(w);
        if (!jr__stream_config_equal(&a->c, &b->c)) __builtin_trap();
        json_decref(w);
        jr__stream_cfg_free(b);
        jr__stream_cfg_free(a);
    } else {
        if (rc != JR_EINVAL || a) __builtin_trap();
        js_map_error(rc, desc, 'c', &code, &err_code, desc, sizeof desc);
        check_err(code, err_code, desc, sizeof desc);
    }
    js_stream_cfg_free(&cfg);
}

static jr__consumer_cfg *consumer_again(json_t *written)
{
    char *text = json_dumps(written, JSON_COMPACT);
    if (!text) __builtin_trap();
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    free(text);
    js_consumer_cfg cfg;
    int code, err_code;
    char desc[400];
    jr__consumer_cfg *n = NULL;
    if (!j || js_consumer_cfg_parse(j, &cfg, &code, &err_code, desc, sizeof desc) ||
        jr__consumer_cfg_new(&cfg.c, NULL, &n, NULL))
        __builtin_trap();
    js_consumer_cfg_free(&cfg);
    json_decref(j);
    return n;
}

static void consumer_config(json_t *j)
{
    js_consumer_cfg cfg;
    int code = 0, err_code = 0;
    char desc[400];
    if (js_consumer_cfg_parse(j, &cfg, &code, &err_code, desc, sizeof desc)) {
        check_err(code, err_code, desc, sizeof desc);
        js_consumer_cfg_free(&cfg);
        return;
    }
    jr__consumer_cfg *a = NULL;
    jr__cerr cerr;
    int rc = jr__consumer_cfg_new(&cfg.c, NULL, &a, &cerr);
    if (rc == 0) {
        json_t *w = js_consumer_config_json(&a->c);
        jr__consumer_cfg *b = consumer_again(w);
        if (!jr__consumer_config_equal(&a->c, &b->c)) __builtin_trap();
        json_decref(w);
        jr__consumer_cfg_free(b);
        jr__consumer_cfg_free(a);
    } else {
        if (rc != JR_EINVAL || a) __builtin_trap();
        js_map_consumer_error(rc, cerr.msg, 'c', &code, &err_code, desc, sizeof desc);
        check_err(code, err_code, desc, sizeof desc);
    }
    js_consumer_cfg_free(&cfg);
}

static void pull(const uint8_t *p, size_t n)
{
    js_pull o;
    char err[200];
    if (js_pull_parse(p, n, &o, err, sizeof err)) {
        if (!memchr(err, 0, sizeof err)) __builtin_trap();
        return;
    }
    if (o.batch < 1 || o.max_bytes < 0 || o.expires_ns < 0 || o.heartbeat_ns < 0 ||
        o.min_pending < 0 || o.min_ack_pending < 0 || o.priority < 0 || o.priority > 9 ||
        !memchr(o.group, 0, sizeof o.group) || !memchr(o.id, 0, sizeof o.id) ||
        (o.heartbeat_ns && o.heartbeat_ns > o.expires_ns / 2))
        __builtin_trap();
}

static void ack(const uint8_t *p, size_t n)
{
    js_ack o;
    js_ack_parse(p, n, &o);
    if (o.kind != -1 && o.kind != JR_ACK_ACK && o.kind != JR_ACK_NAK && o.kind != JR_ACK_PROGRESS &&
        o.kind != JR_ACK_TERM)
        __builtin_trap();
    if (o.delay_ns < 0 || (o.next && o.kind != JR_ACK_ACK)) __builtin_trap();
    if (o.rest && ((const uint8_t *)o.rest < p || (const uint8_t *)o.rest + o.rest_len > p + n))
        __builtin_trap();
    if (o.next && o.rest) pull((const uint8_t *)o.rest, o.rest_len);
}

static void ack_subject(const char *s)
{
    char stream[32], consumer[32];
    if (js_ack_subject_parse(s, stream, sizeof stream, consumer, sizeof consumer)) return;
    if (!stream[0] || !consumer[0] || strchr(stream, '.') || strchr(consumer, '.') ||
        strlen(stream) >= sizeof stream || strlen(consumer) >= sizeof consumer)
        __builtin_trap();
}

static void time_text(const char *s)
{
    uint64_t ns;
    if (js_parse_time(s, &ns)) return;
    char buf[48];
    js_time(buf, sizeof buf, ns);
    uint64_t again;
    if (js_parse_time(buf, &again) || again != ns) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536) return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    int which = data[0] % 7;
    if (which <= 1) {
        json_error_t je;
        json_t *j = json_loadb((const char *)p, n, 0, &je);
        if (!j) return 0;
        if (which == 0)
            stream_config(j);
        else
            consumer_config(j);
        json_decref(j);
        return 0;
    }
    if (which == 2) {
        pull(p, n);
        return 0;
    }
    if (which == 3) {
        ack(p, n);
        return 0;
    }
    if (which == 6) {
        int64_t ns;
        if (js_parse_duration((const char *)p, n, &ns) == 0 && ns < 0) __builtin_trap();
        return 0;
    }
    char *s = malloc(n + 1);
    if (!s) return 0;
    memcpy(s, p, n);
    s[n] = 0;
    if (which == 4)
        ack_subject(s);
    else
        time_text(s);
    free(s);
    return 0;
}
