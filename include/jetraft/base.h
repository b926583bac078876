/*
 * jetraft/base.h — visibility of public symbols and the library version.
 *
 * Every part header includes this one.
 * Part of the public ABI; users include <jetraft.h>, which includes every part.
 */
#ifndef JETRAFT_BASE_H
#define JETRAFT_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define JR_API
#elif defined(__GNUC__) && __GNUC__ >= 4
#define JR_API __attribute__((visibility("default")))
#else
#define JR_API
#endif

/* ----------------------------------------------------------------------------------------------
 * Version
 */
#define JR_VERSION_MAJOR 0
#define JR_VERSION_MINOR 1
#define JR_VERSION_PATCH 0
#define JR_VERSION_NUMBER (JR_VERSION_MAJOR * 10000 + JR_VERSION_MINOR * 100 + JR_VERSION_PATCH)

/* Returns the library's version as "MAJOR.MINOR.PATCH"; never NULL. */
JR_API const char *jr_version(void);
/* Returns JR_VERSION_NUMBER of the library actually linked. */
JR_API int jr_version_number(void);

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_BASE_H */
