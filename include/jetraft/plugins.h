/*
 * jetraft/plugins.h — the plug-in tables a host supplies: allocator hooks (jr_allocator),
 * file system (jr_vfs) and the host interface (jr_host: transport, clock, timer, log).
 *
 * Each table carries a `version`; fields are only ever appended, and the library reads only the
 * fields the version declares.
 * Part of the public ABI; users include <jetraft.h>, which includes every part.
 */
#ifndef JETRAFT_PLUGINS_H
#define JETRAFT_PLUGINS_H

#include "jetraft/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------------------------------
 * Allocator hooks (optional). All three functions must be given. realloc(ptr, 0) is never called;
 * free(NULL) may be. A NULL jr_allocator pointer anywhere means the C library's malloc family.
 */
#define JR_ALLOCATOR_VERSION 1
typedef struct jr_allocator {
    int version; /* JR_ALLOCATOR_VERSION */
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*realloc)(void *ctx, void *ptr, size_t size);
    void (*free)(void *ctx, void *ptr);
} jr_allocator;

/* ----------------------------------------------------------------------------------------------
 * Virtual file system. The only way the library touches files. jr_vfs_posix() gives the POSIX
 * implementation; include/jetraft/sim.h gives a simulated one. A host may supply its own.
 *
 * All functions return 0 or a negative JR_E* code (JR_EIO, JR_ENOSPC, JR_ENOTFOUND, ...).
 * Paths are '/'-separated strings, as given by the library (prefixed with wal_dir/store_dir).
 */
typedef struct jr_file jr_file; /* defined by each vfs implementation */

#define JR_VFS_VERSION 2
enum jr_open_flags {
    JR_O_READ = 0,     /* open an existing file for reading and writing */
    JR_O_CREATE = 1,   /* create if missing */
    JR_O_EXCL = 2,     /* with JR_O_CREATE: fail with JR_EEXIST if it exists */
    JR_O_TRUNCATE = 4, /* truncate to zero length on open */
};

typedef struct jr_vfs {
    int version; /* JR_VFS_VERSION (1: the fields up to `sync_dir`; 2: `writeback` too) */
    void *ctx;
    int (*open)(void *ctx, const char *path, int flags, jr_file **out);
    int (*close)(void *ctx, jr_file *f);
    /* Reads up to len bytes at off; *nread < len only at end of file. */
    int (*pread)(void *ctx, jr_file *f, void *buf, size_t len, uint64_t off, size_t *nread);
    /* Writes all of buf at off (extending the file as needed). Durable only after sync. */
    int (*pwrite)(void *ctx, jr_file *f, const void *buf, size_t len, uint64_t off);
    /* Makes every completed write to f durable (fdatasync). */
    int (*sync)(void *ctx, jr_file *f);
    int (*size)(void *ctx, jr_file *f, uint64_t *out);
    int (*truncate)(void *ctx, jr_file *f, uint64_t size);
    /* Atomically replaces `to` with `from`; durable once it returns (directory synced). */
    int (*rename)(void *ctx, const char *from, const char *to);
    /* Removes a file; durable once it returns. JR_ENOTFOUND if missing. */
    int (*remove)(void *ctx, const char *path);
    /* Creates a directory and any missing parents; 0 if it already exists, JR_EEXIST if it or
     * one of its parents exists as something other than a directory. */
    int (*mkdir)(void *ctx, const char *path);
    /* Calls cb once per entry of dir (not "." or ".."), in no defined order. A non-zero return
     * from cb stops the listing and is returned. */
    int (*list)(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg);
    /* Makes the creation, removal and renaming of entries in dir durable. */
    int (*sync_dir)(void *ctx, const char *dir);
    /* Version 2, optional (NULL: none). Starts writing the completed writes to [off, off+len)
     * of f to the medium and returns without waiting for them (Linux: sync_file_range with
     * SYNC_FILE_RANGE_WRITE), so that the sync that follows has less left to do. A hint: it
     * makes nothing durable, and the library goes on whatever it returns (the sync reports a
     * failing medium). */
    int (*writeback)(void *ctx, jr_file *f, uint64_t off, uint64_t len);
} jr_vfs;

/* Returns the process-wide POSIX vfs (stateless, never freed). */
JR_API jr_vfs *jr_vfs_posix(void);

/* ----------------------------------------------------------------------------------------------
 * Host interface: how a node reaches the outside world. ARCHITECTURE §3.
 */
/* A piece of a frame. Frozen: it never grows, so arrays of it are safe across versions. */
typedef struct jr_iovec {
    const void *base;
    size_t len;
} jr_iovec;

enum jr_log_level { JR_LOG_ERROR = 0, JR_LOG_WARN = 1, JR_LOG_INFO = 2, JR_LOG_DEBUG = 3 };

/* The WAL sync a node hands its host (jr_host.sync_start); opaque, owned by the node. */
typedef struct jr_sync_job jr_sync_job;

#define JR_HOST_VERSION 3
typedef struct jr_host {
    int version; /* JR_HOST_VERSION (1: the fields up to `log`; 2: `wall` too; 3: `sync_start`) */
    void *ctx;
    /* Delivers one frame (the concatenation of iov) to server `to`. May copy or queue it; must
     * not call back into the node. A non-zero return counts as a dropped frame (Raft retries). */
    int (*send)(void *ctx, const char *to, const jr_iovec *iov, int iovcnt);
    /* Monotonic time in nanoseconds. */
    uint64_t (*now)(void *ctx);
    /* Asks the host to call jr_node_tick() at or after `deadline` (a now() value; one at or
     * before now means "as soon as possible", UINT64_MAX means "no tick needed"). Replaces any
     * earlier request: the node needs one timer, whatever its number of groups. Called on the
     * node's thread at the end of a node or group API call, never re-entrantly. Optional: hosts
     * that poll use jr_node_deadline() instead. */
    void (*arm)(void *ctx, uint64_t deadline);
    /* Optional log sink; msg is borrowed for the call. */
    void (*log)(void *ctx, int level, const char *msg);
    /* Version 2. Optional: wall-clock time in nanoseconds since the Unix epoch (e.g.
     * CLOCK_REALTIME). Stream leaders stamp messages with it and the meta leader stamps a
     * stream's creation time; it may jump (forwards or backwards), and stream time follows it
     * without ever going backwards and without mass expiry (see "Stream time" below). Without
     * it (NULL, or a version-1 host) the node uses now() instead: timestamps then count from
     * the host's monotonic epoch, are consistent within a cluster only if every server's now()
     * shares that epoch, and say nothing about the calendar. */
    uint64_t (*wall)(void *ctx);
    /* Version 3. Optional: takes the WAL's sync off the node's thread (with JR_SYNC_ALWAYS;
     * ignored with JR_SYNC_INTERVAL). A flush then writes its batch to the WAL and, instead of
     * syncing it, calls sync_start(ctx, job) on the node's thread; the host runs
     * jr_sync_job_run(job) on any thread (it syncs the WAL's file through the vfs and touches
     * nothing else of the node, so the vfs's sync must be callable from another thread while
     * the node runs; the POSIX vfs's is), then calls jr_node_synced(node, job, rc) on the
     * node's thread with its result. Meanwhile the node goes on: it reads frames, sends
     * entries to followers, counts acknowledgements and applies what is durable, but writes
     * nothing and lets nothing leave that vouches for what that sync covers or for anything
     * newer (a vote, an append acknowledgement); its leaders count themselves toward a quorum
     * only for entries the sync covers. One sync is in flight at a time; jr_node_synced writes
     * everything staged meanwhile and starts the next. A failed sync is the WAL's end, as
     * with the sync inside the flush. The host must not close the node while a job runs:
     * wait for it, then report it or close (jr_node_close syncs a job never reported in
     * place before its own flush). */
    void (*sync_start)(void *ctx, jr_sync_job *job);
} jr_host;

#ifdef __cplusplus
}
#endif
#endif /* JETRAFT_PLUGINS_H */
