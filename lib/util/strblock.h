/*
 * strblock — the strings of a configuration: copied into the one allocation that holds it, and
 * compared.
 *
 * An owned configuration (a stream's, a consumer's) is one block: the struct, its arrays, then
 * every string it points to. Its size is known only once every string has been seen, so the
 * copy runs twice over the same source in the same order: a measuring pass (at == NULL) that
 * returns "" for every string and adds up the bytes it would take, then, once a block of that
 * size exists, a filling pass that copies each string after the previous one and returns where
 * it now lives. The decoders do the same over encoded bytes (jr__strblock_rd).
 *
 * Invariant: the filling pass puts exactly the strings the measuring pass counted, so it writes
 * need bytes and never past them. NULL stays NULL in both passes (an absent optional string).
 */
#ifndef JR_UTIL_STRBLOCK_H
#define JR_UTIL_STRBLOCK_H

#include <stddef.h>
#include <string.h>

#include "jetraft/stream.h"
#include "util/buf.h"

typedef struct jr__strblock {
    char *at;    /* the next free byte of the string area; NULL while measuring */
    size_t need; /* bytes the strings take, NUL terminators included (measuring) */
} jr__strblock;

/* Puts the n bytes at s and a NUL: "" while measuring, else the copy. */
const char *jr__strblock_put(jr__strblock *b, const char *s, size_t n);

/* jr__strblock_put of a C string; NULL stays NULL. */
static inline const char *jr__strblock_opt(jr__strblock *b, const char *s)
{
    return s ? jr__strblock_put(b, s, strlen(s)) : NULL;
}

/* Puts n strings (NULL items stay NULL); when filling, dst[i] gets each copy. dst is the
 * block's own array, ignored while measuring. */
void jr__strblock_list(jr__strblock *b, const char *const *src, size_t n, const char **dst);

/* Puts n key/value pairs the same way. */
void jr__strblock_kvs(jr__strblock *b, const jr_kv *src, size_t n, jr_kv *dst);

/* Equality of two optional strings (NULL equals only NULL), of two string lists (item by item,
 * in order) and of two key/value lists whose keys are unique within each (the same pairs in any
 * order). */
int jr__str_eq(const char *a, const char *b);
int jr__strv_eq(const char *const *a, size_t na, const char *const *b, size_t nb);
int jr__kvs_eq(const jr_kv *a, size_t na, const jr_kv *b, size_t nb);

/* Reads a varint-prefixed string of at most max bytes from r and puts it. The empty string is
 * NULL when empty_is_null (the encoding's "none"); an embedded NUL fails r. NULL when r failed. */
const char *jr__strblock_rd(jr__rd *r, jr__strblock *b, size_t max, int empty_is_null);

#endif
