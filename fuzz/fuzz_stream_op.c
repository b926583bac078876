/*
 * fuzz_stream_op — libFuzzer target for the stream op decoder (lib/stream/op.h), batches
 * included.
 *
 * For any input: the decoder never reads out of bounds or crashes, refuses with JR_ECORRUPT or
 * JR_EVERSION only, and whatever it accepts re-encodes to exactly the input (one encoding per
 * op): a single op through jr__op_encode, a batch by iterating its ops (exactly count of them,
 * none a batch) and encoding them again with jr__op_encode_batch. The input is offered twice: as
 * it is, and with a valid checksum appended, so the parser behind the checksum is reached on
 * every run.
 *
 * Build: CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false
 *        ninja -C build-fuzz fuzz/fuzz_stream_op
 * Run:   build-fuzz/fuzz/fuzz_stream_op -max_total_time=60 fuzz/corpus/fuzz_stream_op
 */
#include <stdlib.h>
#include <string.h>

#include "stream/op.h"
#include "util/checksum.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *d, size_t len)
{
    jr__stream_op op;
    int rc = jr__op_decode(d, len, &op);
    if (rc != 0) {
        if (op.type != 0 || (rc != JR_ECORRUPT && rc != JR_EVERSION)) __builtin_trap();
        return;
    }
    jr__buf out;
    jr__buf_init(&out, NULL);
    if (op.type != JR__OP_BATCH) {
        rc = jr__op_encode(&op, &out);
    } else {
        /* every op of a batch takes at least two bytes, so count is bounded by len */
        uint32_t count = op.u.batch.count;
        if (count < 1 || count > JR__OP_BATCH_MAX || count > len) __builtin_trap();
        jr__stream_op *ops = malloc(count * sizeof *ops);
        if (!ops) abort();
        jr__op_iter it;
        jr__op_batch_iter(&op, &it);
        uint32_t n = 0;
        int got = 0;
        while (!jr__op_batch_next(&it, &ops[n < count ? n : count - 1], &got) && got) {
            if (n == count || ops[n].type == JR__OP_BATCH) __builtin_trap();
            n++;
        }
        if (n != count) __builtin_trap();
        rc = jr__op_encode_batch(ops, n, &out);
        free(ops);
    }
    if (rc != 0 || out.len != len || memcmp(out.data, d, len) != 0) __builtin_trap();
    jr__buf_free(&out);
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
