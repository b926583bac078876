/*
 * testclock.h — a test-only offset of the server's wall clock, for clock faults.
 *
 * With the environment variable JETRAFT_TEST_CLOCK_FILE naming a file, the server reads a
 * signed number of milliseconds from it at start and every 100 ms after, and adds it to the
 * wall clock it gives the node (jr_host.wall): a test moves one server's clock forwards or
 * backwards by rewriting the file. Without the variable the offset is 0 and nothing runs. The
 * monotonic clock (jr_host.now) is never offset. A file that cannot be read or does not hold a
 * number leaves the offset as it was.
 */
#ifndef SRV_TESTCLOCK_H
#define SRV_TESTCLOCK_H

#include <stdint.h>

#include <uv.h>

/* Starts following the file (an unreferenced timer: it never keeps the loop alive). */
void testclock_open(uv_loop_t *loop);
/* The current offset in nanoseconds (0 unless a test set one). */
int64_t testclock_offset_ns(void);

#endif
