/*
 * fuzz_snapshot — libFuzzer target for the decoders of replicated state: snapshot files
 * (lib/log/snapfile.h), stream ops including batches (lib/stream/op.h), meta ops
 * (lib/meta/meta_op.h), stream configs (lib/stream/config.h) and meta snapshots
 * (lib/meta/meta_state.h). Each must reject malformed input with an error, never read out of
 * bounds, never leak. The first byte picks the decoder; the rest is its input.
 *
 *   CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false
 *   ninja -C build-fuzz fuzz/fuzz_snapshot && build-fuzz/fuzz/fuzz_snapshot -max_total_time=60
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "meta/meta_op.h"
#include "meta/meta_state.h"
#include "log/snapfile.h"
#include "stream/config.h"
#include "stream/op.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    switch (data[0] % 5) {
    case 0: {
        jr__snapfile_info info;
        jr__buf out;
        jr__buf_init(&out, NULL);
        (void)jr__snapfile_decode(p, n, &info, &out);
        jr__buf_free(&out);
        break;
    }
    case 1: {
        jr__stream_op op;
        if (jr__op_decode(p, n, &op) == 0 && op.type == JR__OP_BATCH) {
            jr__op_iter it;
            jr__stream_op sub;
            jr__op_batch_iter(&op, &it);
            int got;
            while (!jr__op_batch_next(&it, &sub, &got) && got) {
            }
        }
        break;
    }
    case 2: {
        /* a decoded op re-encodes to the same bytes (one encoding per value) */
        jr__meta_op op;
        if (jr__meta_op_decode(p, n, NULL, &op) == 0) {
            jr__buf b;
            jr__buf_init(&b, NULL);
            if (jr__meta_op_encode(&op, &b) != 0 || b.len != n || memcmp(b.data, p, n) != 0)
                __builtin_trap();
            jr__buf_free(&b);
            jr__meta_op_free(&op);
        }
        break;
    }
    case 3: {
        jr__stream_cfg *cfg = NULL;
        if (jr__stream_config_decode(p, n, NULL, &cfg) == 0) jr__stream_cfg_free(cfg);
        break;
    }
    default: {
        jr__meta_state st;
        jr__meta_state_init(&st, NULL, 1000);
        /* a restored snapshot (version 6 included) writes back the same bytes */
        if (jr__meta_restore(&st, p, n) == 0 && p[4] == JR__META_SNAP_VERSION) {
            jr__buf b;
            jr__buf_init(&b, NULL);
            if (jr__meta_snapshot(&st, &b) != 0 || b.len != n || memcmp(b.data, p, n) != 0)
                __builtin_trap();
            jr__buf_free(&b);
        }
        jr__meta_state_free(&st);
        break;
    }
    }
    return 0;
}
