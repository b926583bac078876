/*
 * invariant — debug-only checks of the invariants a module documents about its own state.
 *
 * JR__INVARIANT(cond) reports the file, line and condition on stderr and aborts when cond is
 * false, in builds that define JR_CHECK_INVARIANTS (meson defines it for the sanitizer builds
 * and -Dinvariants=true); elsewhere it compiles to nothing and cond is not evaluated, so a check
 * may cost what it likes. Only for what the code itself guarantees: input from outside (frames,
 * files, API arguments) is validated and answered with an error code, never asserted.
 */
#ifndef JR_UTIL_INVARIANT_H
#define JR_UTIL_INVARIANT_H

#ifdef JR_CHECK_INVARIANTS
#include <stdio.h>
#include <stdlib.h>
#define JR__INVARIANT(cond)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #cond);         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)
#define JR__INVARIANTS_ON 1
#else
#define JR__INVARIANT(cond) ((void)0)
#define JR__INVARIANTS_ON 0
#endif

#endif /* JR_UTIL_INVARIANT_H */
