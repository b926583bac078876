/*
 * timedvfs.h — a jr_vfs that forwards every call to another one and times its syncs: the
 * latency of each file sync the node asks for (the WAL's fdatasync before an ack, a store's),
 * counted into a histogram that /metrics shows as jetraft_fsync_seconds.
 *
 * The counters are atomics: with sync_offload the WAL's sync runs on libuv's threadpool while
 * the loop thread reads them for the monitor. A failed sync is timed and counted too (a failing
 * disk's latency is what an operator looks for). The wrapper adds two clock reads per sync and
 * nothing to any other call.
 */
#ifndef SRV_TIMEDVFS_H
#define SRV_TIMEDVFS_H

#include <stdatomic.h>
#include <stdint.h>

#include "jetraft.h"

/* Upper bounds of the histogram's buckets in ns; the last bucket is unbounded. */
#define FSYNC_BUCKETS 15
extern const uint64_t fsync_bounds_ns[FSYNC_BUCKETS - 1];

typedef struct timedvfs {
    jr_vfs vfs;         /* what the node is given */
    const jr_vfs *base; /* what every call goes to */
    _Atomic uint64_t bucket[FSYNC_BUCKETS];
    _Atomic uint64_t count, sum_ns;
} timedvfs;

/* A snapshot of the counters (each read once; a sync may land between two reads). */
typedef struct fsync_stats {
    uint64_t bucket[FSYNC_BUCKETS];
    uint64_t count, sum_ns;
} fsync_stats;

/* Makes t a vfs over base (jr_vfs_posix() or a test vfs) with zeroed counters; returns &t->vfs.
 * t must outlive every node opened with it. */
jr_vfs *timedvfs_init(timedvfs *t, const jr_vfs *base);
void timedvfs_stats(timedvfs *t, fsync_stats *out);

#endif
