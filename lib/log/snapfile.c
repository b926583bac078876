/* snapfile — encode and strictly decode the snapshot file format (layout in snapfile.h). */
#include "log/snapfile.h"

#include <lz4.h>
#include <string.h>

#include "util/checksum.h"

static const uint8_t magic[4] = {'J', 'R', 'S', 'N'};
#define STORED_RAW 0x80000000u

int jr__snapfile_encode(jr__buf *out, uint64_t group, uint64_t index, uint64_t term,
                        const uint8_t *conf, uint32_t conf_len, const uint8_t *raw, size_t raw_len)
{
    if (conf_len > JR__SNAPFILE_MAX_CONF) return JR_EINVAL;
    jr__buf_reset(out);
    size_t nblocks = (raw_len + JR__SNAPFILE_BLOCK - 1) / JR__SNAPFILE_BLOCK;
    if (nblocks > UINT32_MAX) return JR_EINVAL;
    /* Worst case: every block stored raw, plus the room lz4 may need beyond a block's size while
     * it compresses it (the largest block's room covers any: each block before takes at most 8 +
     * its size once written). Reserved once and sized by the snapshot, not by the largest block
     * possible, so that a small snapshot needs a small buffer, which the node keeps between
     * snapshots (node/snapshot.c release_bufs). */
    size_t first = raw_len < JR__SNAPFILE_BLOCK ? raw_len : JR__SNAPFILE_BLOCK;
    size_t slack = (size_t)LZ4_compressBound((int)first) - first;
    size_t bound = JR__SNAPFILE_HEADER + conf_len + nblocks * 8 + raw_len + slack + 8;
    if (jr__buf_reserve(out, bound) != 0) return JR_ENOMEM;
    out->len = JR__SNAPFILE_HEADER;
    jr__buf_put(out, conf, conf_len);
    size_t body_start = out->len;
    for (size_t off = 0; off < raw_len; off += JR__SNAPFILE_BLOCK) {
        uint32_t n =
            (uint32_t)(raw_len - off < JR__SNAPFILE_BLOCK ? raw_len - off : JR__SNAPFILE_BLOCK);
        int cap = LZ4_compressBound((int)n);
        if (jr__buf_reserve(out, 8 + (size_t)cap) != 0) return JR_ENOMEM; /* (reserved above) */
        uint8_t *h = out->data + out->len;
        int c = LZ4_compress_default((const char *)raw + off, (char *)h + 8, (int)n, cap);
        jr__put_u32(h, n);
        if (c > 0 && (uint32_t)c < n) {
            jr__put_u32(h + 4, (uint32_t)c);
            out->len += 8 + (size_t)c;
        } else {
            jr__put_u32(h + 4, n | STORED_RAW);
            memcpy(h + 8, raw + off, n);
            out->len += 8 + n;
        }
    }
    size_t body_len = out->len - body_start;
    uint8_t *h = out->data;
    memset(h, 0, JR__SNAPFILE_HEADER);
    memcpy(h, magic, 4);
    h[4] = JR__SNAPFILE_VERSION;
    jr__put_u64(h + 8, group);
    jr__put_u64(h + 16, index);
    jr__put_u64(h + 24, term);
    jr__put_u32(h + 32, conf_len);
    jr__put_u32(h + 36, (uint32_t)nblocks);
    jr__put_u64(h + 40, raw_len);
    jr__put_u64(h + 48, body_len);
    uint64_t sum = jr__xxh3(out->data, out->len);
    jr__buf_u64(out, sum);
    return out->err;
}

/* Walks the blocks; with `out`, decompresses them. */
static int walk(const uint8_t *body, uint64_t body_len, uint32_t nblocks, uint64_t raw_len,
                uint8_t *out)
{
    jr__rd r;
    jr__rd_init(&r, body, (size_t)body_len);
    uint64_t total = 0;
    for (uint32_t i = 0; i < nblocks; i++) {
        uint32_t raw = jr__rd_u32(&r);
        uint32_t stored = jr__rd_u32(&r);
        if (r.err || raw == 0 || raw > JR__SNAPFILE_BLOCK) return JR_ECORRUPT;
        uint32_t len = stored & ~STORED_RAW;
        if (stored & STORED_RAW) {
            if (len != raw) return JR_ECORRUPT;
        } else if (len == 0 || len >= raw || (uint64_t)raw > (uint64_t)len * 255u + 16u) {
            return JR_ECORRUPT;
        }
        const uint8_t *p = jr__rd_take(&r, len);
        if (!p || total + raw > raw_len) return JR_ECORRUPT;
        if (out) {
            if (stored & STORED_RAW) {
                memcpy(out + total, p, raw);
            } else {
                int got =
                    LZ4_decompress_safe((const char *)p, (char *)out + total, (int)len, (int)raw);
                if (got < 0 || (uint32_t)got != raw) return JR_ECORRUPT;
            }
        }
        total += raw;
    }
    if (jr__rd_left(&r) != 0 || total != raw_len) return JR_ECORRUPT;
    return 0;
}

int jr__snapfile_check(const uint8_t *p, size_t n, jr__snapfile_info *info)
{
    if (n < JR__SNAPFILE_HEADER + 8 || memcmp(p, magic, 4) != 0) return JR_ECORRUPT;
    if (p[4] != JR__SNAPFILE_VERSION) return JR_EVERSION;
    if (p[5] != 0 || p[6] != 0 || p[7] != 0) return JR_ECORRUPT;
    info->group = jr__get_u64(p + 8);
    info->index = jr__get_u64(p + 16);
    info->term = jr__get_u64(p + 24);
    info->conf_len = jr__get_u32(p + 32);
    uint32_t nblocks = jr__get_u32(p + 36);
    info->raw_len = jr__get_u64(p + 40);
    uint64_t body_len = jr__get_u64(p + 48);
    if (info->conf_len > JR__SNAPFILE_MAX_CONF) return JR_ECORRUPT;
    uint64_t avail = n - JR__SNAPFILE_HEADER - 8;
    if (info->conf_len > avail || body_len != avail - info->conf_len) return JR_ECORRUPT;
    if (jr__get_u64(p + n - 8) != jr__xxh3(p, n - 8)) return JR_ECORRUPT;
    info->conf = p + JR__SNAPFILE_HEADER;
    return walk(p + JR__SNAPFILE_HEADER + info->conf_len, body_len, nblocks, info->raw_len, NULL);
}

int jr__snapfile_decode(const uint8_t *p, size_t n, jr__snapfile_info *info, jr__buf *out)
{
    int rc = jr__snapfile_check(p, n, info);
    if (rc != 0) return rc;
    jr__buf_reset(out);
    if (info->raw_len > SIZE_MAX - 1 || jr__buf_reserve(out, (size_t)info->raw_len) != 0)
        return JR_ENOMEM;
    rc = walk(p + JR__SNAPFILE_HEADER + info->conf_len, jr__get_u64(p + 48), jr__get_u32(p + 36),
              info->raw_len, out->data);
    if (rc != 0) return rc;
    out->len = (size_t)info->raw_len;
    return 0;
}
