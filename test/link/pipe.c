/* link_test helpers — see link_test.h. */
#include "link_test.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

void t_keys_make(t_keys *k, const char *cluster, const char *const *names, size_t n)
{
    memset(k, 0, sizeof *k);
    k->cluster = cluster;
    ck_assert_int_eq(jr_link_key_generate(JR_LINK_AUTHORITY, NULL, &k->authority), 0);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(jr_link_key_generate(JR_LINK_IDENTITY, NULL, &k->id[i]), 0);
        ck_assert_int_eq(jr_link_cert_sign(k->authority, k->id[i], cluster, names[i], k->cert[i],
                                           sizeof k->cert[i], &k->cert_len[i]),
                         0);
    }
}

void t_keys_free(t_keys *k)
{
    jr_link_key_free(k->authority);
    for (size_t i = 0; i < T_NAMES; i++) jr_link_key_free(k->id[i]);
    memset(k, 0, sizeof *k);
}

void t_bytes_put(t_bytes *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        b->data = realloc(b->data, cap);
        ck_assert_ptr_nonnull(b->data);
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
}

void t_bytes_drop(t_bytes *b, size_t n)
{
    ck_assert_uint_le(n, b->len);
    if (n == 0) return;
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

void t_bytes_free(t_bytes *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void t_link_config(jr_link_config *cfg, const t_keys *keys, int role, size_t self,
                   const char *expect)
{
    jr_link_config_init(cfg);
    cfg->role = role;
    cfg->authority = keys->authority;
    cfg->identity = keys->id[self];
    cfg->cert = keys->cert[self];
    cfg->cert_len = keys->cert_len[self];
    cfg->cluster = keys->cluster;
    cfg->expect_name = expect;
    cfg->max_frame = 64 << 10;
}

void t_take_out(jr_link *l, t_bytes *b)
{
    const void *p;
    size_t n;
    jr_link_pending_out(l, &p, &n);
    t_bytes_put(b, p, n);
    ck_assert_int_eq(jr_link_out_done(l, n), 0);
}

int t_feed(jr_link *l, t_bytes *b, size_t piece, t_bytes *frames, int *nframes)
{
    size_t off = 0;
    int rc = 0;
    while (off < b->len) {
        size_t n = b->len - off;
        if (piece && n > piece) n = piece;
        /* a piece is fed until the link has taken all of it (one record per call) */
        size_t pos = 0;
        while (pos < n) {
            size_t used;
            const void *f;
            size_t flen;
            rc = jr_link_feed(l, b->data + off + pos, n - pos, &used, &f, &flen);
            ck_assert_uint_le(used, n - pos);
            pos += used;
            if (rc) break;
            if (f) {
                if (frames) t_bytes_put(frames, f, flen);
                if (nframes) (*nframes)++;
            }
            if (used == 0) break; /* nothing taken: only after the peer's FINAL */
        }
        off += pos;
        if (rc || pos < n) break;
    }
    t_bytes_drop(b, off);
    return rc;
}

int t_handshake(jr_link *d, jr_link *a)
{
    t_bytes to_a = {0}, to_d = {0};
    int rd = 0, ra = 0;
    for (int round = 0; round < 8 && !(rd && ra); round++) {
        t_take_out(d, &to_a);
        t_take_out(a, &to_d);
        if (!to_a.len && !to_d.len) break;
        /* each side reads what the other wrote before failing, so both report */
        if (!ra) ra = t_feed(a, &to_a, 0, NULL, NULL);
        if (!rd) rd = t_feed(d, &to_d, 0, NULL, NULL);
        to_a.len = to_d.len = 0;
    }
    t_bytes_free(&to_a);
    t_bytes_free(&to_d);
    return rd ? rd : ra;
}

int t_seal(jr_link *l, const void *frame, size_t len, t_bytes *b)
{
    size_t cap = len + JR_LINK_FRAME_OVERHEAD, n = 0;
    uint8_t *out = malloc(cap);
    jr_iovec iov = {frame, len};
    int rc = jr_link_seal(l, &iov, 1, out, cap, &n);
    if (!rc) {
        ck_assert_uint_eq(n, len + JR_LINK_FRAME_OVERHEAD);
        t_bytes_put(b, out, n);
    }
    free(out);
    return rc;
}

/* Each block is preceded by its size (16 bytes, to keep the block aligned). */
static void *ta_malloc(void *ctx, size_t n)
{
    t_alloc *t = ctx;
    t->calls++;
    size_t *p = malloc(n + 16);
    if (!p) return NULL;
    p[0] = n;
    t->live++;
    return (char *)p + 16;
}

static void *ta_realloc(void *ctx, void *ptr, size_t n)
{
    t_alloc *t = ctx;
    t->calls++;
    if (!ptr) return ta_malloc(ctx, n);
    t->calls--;
    size_t *p = realloc((char *)ptr - 16, n + 16);
    if (!p) return NULL;
    p[0] = n;
    return (char *)p + 16;
}

static void ta_free(void *ctx, void *ptr)
{
    t_alloc *t = ctx;
    if (!ptr) return;
    size_t *p = (size_t *)((char *)ptr - 16);
    int zero = 1;
    for (size_t i = 0; i < p[0]; i++)
        if (((uint8_t *)ptr)[i]) zero = 0;
    if (zero)
        t->zeroed++;
    else
        t->dirty++;
    t->live--;
    free(p);
}

void t_alloc_init(t_alloc *t)
{
    memset(t, 0, sizeof *t);
    t->a.version = JR_ALLOCATOR_VERSION;
    t->a.ctx = t;
    t->a.malloc = ta_malloc;
    t->a.realloc = ta_realloc;
    t->a.free = ta_free;
}
