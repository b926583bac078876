/* segment — segment names, headers, listing and the windowed reader (see segment.h). */
#include "log/segment.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/buf.h"
#include "util/checksum.h"
#include "util/hex.h"

#define WINDOW ((size_t)4 << 20)

static const uint8_t magic[8] = {'J', 'R', 'W', 'A', 'L', 'S', 'E', 'G'};

int jr__seg_path(char *out, size_t cap, const char *dir, uint64_t seq)
{
    int n = snprintf(out, cap, "%s/%016llx.wal", dir, (unsigned long long)seq);
    return n < 0 || (size_t)n >= cap ? JR_EINVAL : 0;
}

int jr__seg_parse_name(const char *name, uint64_t *seq)
{
    uint64_t v;
    if (strlen(name) != JR__SEG_NAME_LEN || strcmp(name + 16, ".wal") != 0) return -1;
    if (jr__hex16_parse(name, &v) != 0 || v == 0) return -1;
    *seq = v;
    return 0;
}

void jr__seg_header(uint8_t out[JR__SEG_HDR], uint64_t seq, const uint32_t *keycheck)
{
    memcpy(out, magic, 8);
    jr__put_u32(out + 8, keycheck ? JR__SEG_VERSION_SEALED : JR__SEG_VERSION);
    jr__put_u32(out + 12, keycheck ? *keycheck : 0);
    jr__put_u64(out + 16, seq);
    jr__put_u64(out + 24, jr__xxh3(out, 24));
}

int jr__seg_header_check(const uint8_t *p, size_t n, uint64_t seq, const uint32_t *keycheck)
{
    if (n < JR__SEG_HDR || memcmp(p, magic, 8) != 0) return JR_ECORRUPT;
    if (jr__get_u64(p + 24) != jr__xxh3(p, 24)) return JR_ECORRUPT;
    uint32_t v = jr__get_u32(p + 8), check = jr__get_u32(p + 12);
    if (v != JR__SEG_VERSION && v != JR__SEG_VERSION_SEALED) return JR_EVERSION;
    if (v == JR__SEG_VERSION && check != 0) return JR_ECORRUPT;
    if (jr__get_u64(p + 16) != seq) return JR_ECORRUPT;
    if (v == JR__SEG_VERSION_SEALED ? !keycheck || check != *keycheck : keycheck != NULL)
        return JR_EAUTH;
    return 0;
}

typedef struct list_acc {
    const jr_allocator *a;
    uint64_t *v;
    size_t n, cap;
} list_acc;

static int list_cb(void *arg, const char *name)
{
    list_acc *acc = arg;
    uint64_t seq;
    if (jr__seg_parse_name(name, &seq) != 0) return 0;
    if (acc->n == acc->cap) {
        size_t nc = acc->cap ? acc->cap * 2 : 16;
        uint64_t *v = jr__realloc(acc->a, acc->v, nc * sizeof *v);
        if (!v) return JR_ENOMEM;
        acc->v = v;
        acc->cap = nc;
    }
    acc->v[acc->n++] = seq;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int jr__seg_list(jr_vfs *vfs, const char *dir, const jr_allocator *a, uint64_t **seqs, size_t *n)
{
    list_acc acc = {a, NULL, 0, 0};
    int rc = vfs->list(vfs->ctx, dir, list_cb, &acc);
    *seqs = NULL;
    *n = 0;
    if (rc) {
        jr__free(a, acc.v);
        return rc;
    }
    if (acc.n) qsort(acc.v, acc.n, sizeof *acc.v, cmp_u64);
    *seqs = acc.v;
    *n = acc.n;
    return 0;
}

void jr__segrd_init(jr__segrd *r, jr_vfs *vfs, jr_file *f, uint64_t size, const jr_allocator *a)
{
    memset(r, 0, sizeof *r);
    r->vfs = vfs;
    r->f = f;
    r->size = size;
    r->alloc = a;
}

void jr__segrd_free(jr__segrd *r)
{
    jr__free(r->alloc, r->buf);
    r->buf = NULL;
    r->cap = r->len = 0;
}

const uint8_t *jr__segrd_at(jr__segrd *r, uint64_t off, uint64_t n, uint64_t *avail)
{
    if (r->err || off > r->size || n > r->size - off) return NULL;
    if (off >= r->base && off + n <= r->base + r->len) {
        if (avail) *avail = r->base + r->len - off;
        return r->buf + (off - r->base);
    }
    /* refill from off: at least n bytes, a window when possible, never past end of file */
    uint64_t want = n > WINDOW ? n : WINDOW;
    if (want > r->size - off) want = r->size - off;
    if (want > SIZE_MAX / 2) {
        r->err = JR_ENOMEM;
        return NULL;
    }
    if (want > r->cap || r->cap == 0) {
        size_t nc = (size_t)(want ? want : 1);
        uint8_t *b = jr__realloc(r->alloc, r->buf, nc);
        if (!b) {
            r->err = JR_ENOMEM;
            return NULL;
        }
        r->buf = b;
        r->cap = nc;
    }
    size_t got = 0;
    int rc = r->vfs->pread(r->vfs->ctx, r->f, r->buf, (size_t)want, off, &got);
    if (rc) {
        r->err = rc;
        return NULL;
    }
    r->base = off;
    r->len = got;
    if (got < n) { /* the file shrank under us */
        r->err = JR_EIO;
        return NULL;
    }
    if (avail) *avail = got;
    return r->buf;
}
