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

/* A fault-injecting jr_allocator for tests and fuzzing, over the C library's malloc family.
 * It counts allocation calls (malloc, and realloc, which may move) and can make the nth one
 * from now fail (return NULL), or that one and every later one (sticky). It also counts the
 * blocks currently allocated through it, so a test can check that everything was freed. */
typedef struct jr__falloc {
    jr_allocator a;    /* hand &f->a to the code under test; ctx points back here */
    uint64_t calls;    /* malloc and realloc calls so far */
    uint64_t fail_at;  /* the value of calls that fails; 0: none armed */
    int sticky;        /* with fail_at: every later call fails too */
    uint64_t failures; /* calls that returned NULL */
    int64_t live;      /* blocks allocated and not yet freed */
} jr__falloc;

void jr__falloc_init(jr__falloc *f);
/* Arms a failure of the nth (1 = next) allocation call from now; nth 0 disarms. */
void jr__falloc_arm(jr__falloc *f, uint64_t nth, int sticky);

#endif
