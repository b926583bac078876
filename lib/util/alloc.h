/*
 * alloc — the library's one path to heap memory.
 *
 * Every allocation goes through a jr_allocator (the host's, or the C library's when NULL), so a
 * host can account, limit or fault-inject memory. Failure is always reported (NULL), never fatal.
 */
#ifndef JR_UTIL_ALLOC_H
#define JR_UTIL_ALLOC_H

#include "jetraft.h"

void *jr__malloc(const jr_allocator *a, size_t n);
void *jr__calloc(const jr_allocator *a, size_t n, size_t size); /* overflow-checked, zeroed */
void *jr__realloc(const jr_allocator *a, void *p, size_t n);    /* n == 0 frees, returns NULL */
void jr__free(const jr_allocator *a, void *p);
char *jr__strdup(const jr_allocator *a, const char *s);

#endif
