/*
 * fuzz_stream_config — libFuzzer target for the stream config decoder
 * (lib/stream/config_codec.c).
 *
 * For any input: the decoder never reads out of bounds or crashes, refuses with JR_ECORRUPT,
 * JR_EVERSION or JR_ENOMEM only (leaving no config behind), and whatever it accepts is a valid
 * config in normal form that re-encodes to exactly the input (one encoding per config). The
 * input is offered twice: as it is, and with a valid checksum appended, so the parser behind the
 * checksum is reached on every run.
 *
 * Build: CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false
 *        ninja -C build-fuzz fuzz/fuzz_stream_config
 * Run:   build-fuzz/fuzz/fuzz_stream_config -max_total_time=60 fuzz/corpus/fuzz_stream_config
 */
#include <stdlib.h>
#include <string.h>

#include "stream/config.h"
#include "util/checksum.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *d, size_t len)
{
    jr__stream_cfg *cfg = NULL;
    int rc = jr__stream_config_decode(d, len, NULL, &cfg);
    if (rc != 0) {
        if (cfg || (rc != JR_ECORRUPT && rc != JR_EVERSION && rc != JR_ENOMEM)) __builtin_trap();
        return;
    }
    if (jr__stream_config_validate(&cfg->c, NULL, 0) != 0) __builtin_trap();
    jr__buf out;
    jr__buf_init(&out, NULL);
    if (jr__stream_config_encode(&cfg->c, &out) != 0 || out.len != len ||
        memcmp(out.data, d, len) != 0)
        __builtin_trap();
    jr__buf_free(&out);
    jr__stream_cfg_free(cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size);
    uint8_t *sealed = malloc(size + 8);
    if (!sealed) return 0;
    memcpy(sealed, data, size);
    jr__put_u64(sealed + size, jr__xxh3(data, size));
    check(sealed, size + 8);
    free(sealed);
    return 0;
}
