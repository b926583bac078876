/* strblock — the two-pass copy of a configuration's strings into its block (strblock.h). */
#include "util/strblock.h"

const char *jr__strblock_put(jr__strblock *b, const char *s, size_t n)
{
    if (!b->at) {
        b->need += n + 1;
        return "";
    }
    char *d = b->at;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    b->at += n + 1;
    return d;
}

void jr__strblock_list(jr__strblock *b, const char *const *src, size_t n, const char **dst)
{
    for (size_t i = 0; i < n; i++) {
        const char *s = jr__strblock_opt(b, src[i]);
        if (b->at) dst[i] = s;
    }
}

void jr__strblock_kvs(jr__strblock *b, const jr_kv *src, size_t n, jr_kv *dst)
{
    for (size_t i = 0; i < n; i++) {
        const char *k = jr__strblock_opt(b, src[i].key), *v = jr__strblock_opt(b, src[i].value);
        if (b->at) dst[i] = (jr_kv){k, v};
    }
}

const char *jr__strblock_rd(jr__rd *r, jr__strblock *b, size_t max, int empty_is_null)
{
    size_t n;
    const uint8_t *p = jr__rd_bytes(r, &n, max);
    if (!p) return NULL;
    if (memchr(p, 0, n)) {
        jr__rd_fail(r);
        return NULL;
    }
    if (n == 0 && empty_is_null) return NULL;
    return jr__strblock_put(b, (const char *)p, n);
}
