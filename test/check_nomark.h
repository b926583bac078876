/*
 * check_nomark.h — included ahead of every source of a test built on Check (check_dep in the
 * top meson.build adds it with -include): an assertion that passes records nothing.
 *
 * Check's assertions, when they pass, call _mark_point, which writes the assertion's file and
 * line into the test's message file — a write system call each — so that a test that crashes
 * later can be reported "after" that point. Tests that assert at every step of loops over
 * hundreds of thousands of steps spent most of their time in those writes. With the call
 * defined away, a crash is reported at the test's start; the sanitizers' reports and a debugger
 * give the place. Failing assertions are reported as before.
 */
#ifndef JR_TEST_CHECK_NOMARK_H
#define JR_TEST_CHECK_NOMARK_H

#include <check.h>

#undef _mark_point
#define _mark_point(file, line) ((void)0)

#endif
