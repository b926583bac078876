/* strblock — a configuration's strings: the two-pass copy into its block, equality (strblock.h). */
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

int jr__str_eq(const char *a, const char *b)
{
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

int jr__strv_eq(const char *const *a, size_t na, const char *const *b, size_t nb)
{
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (!jr__str_eq(a[i], b[i])) return 0;
    return 1;
}

/* The keys are unique, so equal sizes and every pair of a found in b suffice. */
int jr__kvs_eq(const jr_kv *a, size_t na, const jr_kv *b, size_t nb)
{
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++) {
        size_t j = 0;
        while (j < nb && strcmp(a[i].key, b[j].key) != 0) j++;
        if (j == nb || strcmp(a[i].value, b[j].value) != 0) return 0;
    }
    return 1;
}
