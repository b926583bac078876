/*
 * memfs — the simulated file system: an in-memory jr_vfs with crash semantics and fault
 * injection, deterministic from a seed. Used by the tests, the fuzz targets and the cluster
 * fixture (include/jetraft/sim.h).
 *
 * Model
 *  - Files are inodes with a current image (what reads return) and an undo log of every write
 *    and truncate since the inode's last completed sync. sync empties the undo log: what it
 *    covered is durable. writeback (a hint that starts writing a range to the medium) changes
 *    nothing: what it covered is durable only at the next sync, as on a disk.
 *  - Names: each path has a current binding (what open/list see) and a durable binding (what
 *    survives a crash). Creating a file (open with JR_O_CREATE) binds the current name only;
 *    sync_dir of its parent makes every binding in that directory durable. rename and remove
 *    are durable when they return (the jr_vfs contract). Directories (mkdir) are durable at
 *    once and are never rolled back.
 *  - jr__memfs_crash: every inode loses what its undo log holds (all writes and truncates not
 *    covered by a completed sync); with `torn`, a random prefix of those unsynced operations
 *    survives instead, and the last surviving write is cut at a random byte (the rest of its
 *    range keeps the old bytes). Every current binding reverts to the durable one. Handles open
 *    at the crash become stale: every operation on them fails with JR_EIO except close, which
 *    must still be called. Randomness comes only from the seed, so a run replays exactly.
 *  - Fault injection: bit flips, truncation and zeroing change the current image and are
 *    treated as already on the medium (apply them to synced data, e.g. after a crash, for
 *    predictable results: a later crash may roll back unsynced bytes over them); so are
 *    deleting a file and restoring a saved copy of a directory tree (jr__memfs_save: what a
 *    crash at that moment would have left). Scheduled failures make the n-th future operation
 *    of a kind fail with JR_EIO or JR_ENOSPC (or that and every later one, if sticky) and
 *    change nothing, except that a failed sync leaves the writes unsynced (they are lost at the
 *    next crash).
 *  - Paths are compared as strings: "a/b" and "a//b" are different names. A file's parent
 *    directory must exist (mkdir) before the file is created, like POSIX.
 *
 * Invariants: every operation is O(length of data) plus a hash lookup, except list, walk, save
 * and restore (O(names) plus the bytes copied); memory is only through the allocator given at
 * creation; no global state.
 */
#ifndef JR_VFS_MEMFS_H
#define JR_VFS_MEMFS_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

/* Operation kinds, for scheduled failures and counters. */
enum jr__memfs_op {
    JR__MEMFS_OPEN = 0,
    JR__MEMFS_CLOSE,
    JR__MEMFS_PREAD,
    JR__MEMFS_PWRITE,
    JR__MEMFS_SYNC,
    JR__MEMFS_SIZE,
    JR__MEMFS_TRUNCATE,
    JR__MEMFS_RENAME,
    JR__MEMFS_REMOVE,
    JR__MEMFS_MKDIR,
    JR__MEMFS_LIST,
    JR__MEMFS_SYNC_DIR,
    JR__MEMFS_WRITEBACK,
    JR__MEMFS_NOPS,
    JR__MEMFS_ANY /* jr__memfs_fail only: a call of any kind */
};

typedef struct jr__memfs_stats {
    uint64_t ops[JR__MEMFS_NOPS]; /* calls of each kind, failed ones included */
    uint64_t syncs;               /* completed file syncs */
    uint64_t dir_syncs;           /* completed sync_dir calls */
    uint64_t writes;              /* completed pwrite calls */
    uint64_t bytes_written;       /* bytes of completed pwrite calls */
    uint64_t bytes_read;
    uint64_t faults; /* scheduled failures that fired */
    uint64_t crashes;
    uint64_t files;        /* inodes currently alive */
    uint64_t bytes_stored; /* sum of the current sizes of live inodes */
    uint64_t handles;      /* handles currently open (stale ones included) */
    uint64_t bad_handles;  /* close calls on a handle that is not open (a double close) */
} jr__memfs_stats;

/* Creates an empty memfs whose randomness (crash tearing, bit flips) derives from seed only.
 * The root "/" and "." exist. alloc may be NULL. 0 or JR_ENOMEM. */
int jr__memfs_new(const jr_allocator *alloc, uint64_t seed, jr_vfs **out);
/* Frees the memfs and everything in it. Handles still open are freed too. Safe on NULL. */
void jr__memfs_free(jr_vfs *vfs);
/* True if vfs was made by jr__memfs_new (the other functions require it). */
int jr__memfs_is(const jr_vfs *vfs);

/* Simulates power loss of the whole memfs (see Model). torn: 0 loses every unsynced operation;
 * 1 keeps a random prefix of each file's unsynced operations with the last one torn. */
void jr__memfs_crash(jr_vfs *vfs, int torn);
/* Same, limited to files whose path starts with prefix (e.g. one simulated node's directory):
 * other files and their handles are untouched. */
void jr__memfs_crash_under(jr_vfs *vfs, const char *prefix, int torn);

/* Fault injection on the file at path (its current binding). JR_ENOTFOUND if absent. */
/* Flips n bits at random positions in [off, off+len) ∩ the file (len 0: to end of file). */
int jr__memfs_flip_bits(jr_vfs *vfs, const char *path, uint64_t off, uint64_t len, unsigned n);
/* Cuts the file to size bytes (or extends it with zeros). */
int jr__memfs_truncate(jr_vfs *vfs, const char *path, uint64_t size);
/* Overwrites [off, off+len) ∩ the file with zeros. */
int jr__memfs_zero(jr_vfs *vfs, const char *path, uint64_t off, uint64_t len);
/* Copies the file's current image into *data (allocated with the memfs allocator; free with
 * jr__memfs_release) — handy for tests that inspect or mutate bytes. */
int jr__memfs_read_all(jr_vfs *vfs, const char *path, uint8_t **data, size_t *len);
void jr__memfs_release(jr_vfs *vfs, void *p);

/* The file's current size. 0 or JR_ENOTFOUND. */
int jr__memfs_file_size(jr_vfs *vfs, const char *path, uint64_t *out);
/* Removes the file at path (both its current and durable name), as a disk or an operator losing
 * it would: no handle is affected beyond what remove does, nothing is counted as an operation.
 * 0 or JR_ENOTFOUND. */
int jr__memfs_delete(jr_vfs *vfs, const char *path);

/* Calls cb(arg, path, size) for every file whose path starts with prefix (NULL: every file), in
 * strcmp order of the paths, with its current size; a non-zero return from cb stops the walk and
 * is returned. Directories are not listed. cb may change the file system (the list is taken
 * first). 0, JR_ENOMEM, or cb's value. */
int jr__memfs_walk(jr_vfs *vfs, const char *prefix,
                   int (*cb)(void *arg, const char *path, uint64_t size), void *arg);

/* A copy of the files and directories under a prefix, as a crash at the moment of the copy would
 * leave them: every durable name with the bytes its file had at its last completed sync (with
 * no torn write). It owns its memory (the memfs allocator) and outlives the memfs. */
typedef struct jr__memfs_copy jr__memfs_copy;
/* Saves the durable state of everything under prefix (NULL: everything). 0 or JR_ENOMEM. */
int jr__memfs_save(jr_vfs *vfs, const char *prefix, jr__memfs_copy **out);
/* Rolls everything under prefix back to c: files and directories not in c are removed, those in
 * c get its bytes, durable at once (an older disk image put back). Handles open on replaced
 * files become stale (JR_EIO, as after a crash). 0, JR_EINVAL if c holds a path outside prefix,
 * or JR_ENOMEM with nothing changed. */
int jr__memfs_restore(jr_vfs *vfs, const char *prefix, const jr__memfs_copy *c);
void jr__memfs_copy_free(jr__memfs_copy *c);

/* Schedules a failure: the nth (1 = next) future call of kind op (JR__MEMFS_ANY: of any kind,
 * close included) whose path starts with prefix (NULL: any path; list, mkdir and sync_dir match
 * by their directory, rename by its source) fails with err (JR_EIO or JR_ENOSPC, any JR_E*
 * accepted); with sticky, that call and every later matching one fail. Several schedules may be
 * pending (up to 16); JR_EBUSY when full. A failed call has no effect (see Model for sync), except
 * a failed close, which still closes the handle (like POSIX close). */
int jr__memfs_fail(jr_vfs *vfs, int op, uint64_t nth, int err, int sticky, const char *prefix);
/* Cancels every scheduled failure. */
void jr__memfs_fail_clear(jr_vfs *vfs);

/* Limits the sum of file sizes; a pwrite or truncate that would exceed it fails with
 * JR_ENOSPC and changes nothing. Default: unlimited. */
void jr__memfs_set_capacity(jr_vfs *vfs, uint64_t bytes);

void jr__memfs_stats_get(const jr_vfs *vfs, jr__memfs_stats *out);

#endif
