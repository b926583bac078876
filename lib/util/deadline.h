/*
 * deadline — the one way a deadline is computed: a time plus a timeout, saturating at
 * UINT64_MAX ("never") instead of wrapping.
 *
 * Timeouts come from users and hosts (an election timeout in a config, a host clock that may
 * start anywhere in its range); a bare sum of the two could wrap and put the deadline in the
 * past, firing at once and forever. Every deadline and every "time + timeout" comparison in the
 * node's timer code and the Raft core goes through jr__deadline.
 */
#ifndef JR_UTIL_DEADLINE_H
#define JR_UTIL_DEADLINE_H

#include <stdint.h>

/* at + timeout, or UINT64_MAX if that does not fit. */
static inline uint64_t jr__deadline(uint64_t at, uint64_t timeout)
{
    return timeout > UINT64_MAX - at ? UINT64_MAX : at + timeout;
}

#endif
