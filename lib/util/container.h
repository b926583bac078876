/*
 * container — JR__CONTAINER_OF: from a pointer to a member embedded in a struct to the struct
 * (intrusive lists, timers). The one place this pointer arithmetic is written.
 */
#ifndef JR_UTIL_CONTAINER_H
#define JR_UTIL_CONTAINER_H

#include <stddef.h>

#define JR__CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#endif
