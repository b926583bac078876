/*
 * libFuzzer target: arbitrary bytes decoded as a message block file (lib/store/block.h), as the
 * file store does at recovery — header, frames or sealed body (lz4, XChaCha20-Poly1305), every
 * record, and the torn-tail probe — and then, through the simulated vfs, a whole store opened
 * over a directory holding those bytes as its only block (plain, or marked: rolled back to its
 * last mark, whose meta and kept marks are read). Nothing may crash, leak or read out of bounds;
 * decoding either fails cleanly or yields records that re-validate.
 *
 *   CC=clang meson setup build-fuzz -Dfuzz=true && ninja -C build-fuzz fuzz/fuzz_block
 *   build-fuzz/fuzz/fuzz_block -max_total_time=60
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "store/block.h"
#include "store/srecord.h"
#include "store/store.h"
#include "vfs/memfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t master[32] = {7};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static jr__blk_key key;
    static int have_key;
    if (!have_key) {
        if (jr__blk_derive_key(master, "F", &key)) return 0;
        have_key = 1;
    }
    int with_key = size % 7 != 3; /* mostly with the key; sometimes without */
    jr__buf buf, scratch;
    jr__buf_init(&buf, NULL);
    jr__buf_init(&scratch, NULL);
    jr__blk_info info;
    int rc = jr__blk_decode(data, size, with_key ? &key : NULL, &buf, &info);
    if (info.kind) {
        /* what decoded must be whole, valid records */
        jr__srec r;
        size_t len;
        for (size_t off = 0; off < info.plain_len; off += len)
            if (jr__srec_decode(info.plain + off, info.plain_len - off, 1, &r, &len))
                __builtin_trap();
        if (rc == JR_ECORRUPT && info.kind == JR__BLK_OPEN && info.bad_off <= size)
            (void)jr__blk_valid_after(data, size, (size_t)info.bad_off, info.id, info.flags,
                                      with_key ? &key : NULL, &scratch);
    }
    jr__buf_free(&buf);
    jr__buf_free(&scratch);

    /* the whole recovery path over a store directory holding these bytes */
    jr_vfs *vfs;
    if (jr__memfs_new(NULL, 1, &vfs)) return 0;
    vfs->mkdir(vfs->ctx, "/s/F");
    jr_file *f;
    if (vfs->open(vfs->ctx, "/s/F/0000000001.blk", JR_O_CREATE, &f) == 0) {
        vfs->pwrite(vfs->ctx, f, data, size, 0);
        vfs->sync(vfs->ctx, f);
        vfs->close(vfs->ctx, f);
    }
    jr__store_config cfg = {.kind = JR__STORE_FILE,
                            .name = "F",
                            .vfs = vfs,
                            .dir = "/s",
                            .master_key = with_key ? master : NULL,
                            .marked = size % 5 < 2};
    jr__store *st;
    char err[256];
    if (jr__store_open(&cfg, &st, err, sizeof err) == 0) {
        jr__store_msg m;
        for (uint64_t q = 1; jr__store_next(st, q, NULL, 0, &m) == 0; q = m.seq + 1)
            ;
        jr__store_mark_rec mr;
        (void)jr__store_last_mark(st, &mr);
        size_t cur = 0;
        while (jr__store_marks_next(st, &cur, &mr) == 0)
            ;
        jr__store_abandon(st);
    }
    jr__memfs_free(vfs);
    return 0;
}
