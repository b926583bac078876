/*
 * fuzz_meta_op — libFuzzer target for the meta op decoder (lib/meta/meta_op.h), SERVER_REMOVE's
 * variable list of re-placements included.
 *
 * For any input: the decoder never reads out of bounds or crashes, refuses with JR_ECORRUPT,
 * JR_EVERSION or JR_ENOMEM only, and whatever it accepts re-encodes to exactly the input (one
 * encoding per op). The input is offered twice: as it is, and with a valid checksum appended,
 * so the parser behind the checksum is reached on every run.
 *
 * Build: CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false
 *        ninja -C build-fuzz fuzz/fuzz_meta_op
 * Run:   build-fuzz/fuzz/fuzz_meta_op -max_total_time=60
 */
#include <stdlib.h>
#include <string.h>

#include "meta/meta_op.h"
#include "util/checksum.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *d, size_t len)
{
    jr__meta_op op;
    int rc = jr__meta_op_decode(d, len, NULL, &op);
    if (rc != 0) {
        if (op.block || op.cfg || op.ccfg ||
            (rc != JR_ECORRUPT && rc != JR_EVERSION && rc != JR_ENOMEM))
            __builtin_trap();
        return;
    }
    jr__buf out;
    jr__buf_init(&out, NULL);
    if (jr__meta_op_encode(&op, &out) != 0 || out.len != len || memcmp(out.data, d, len) != 0)
        __builtin_trap();
    jr__buf_free(&out);
    jr__meta_op_free(&op);
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
