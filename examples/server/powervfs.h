/*
 * powervfs.h — a test-only jr_vfs over POSIX that can simulate a power cut of the server's own
 * files: every write not covered by a completed sync is thrown away, as lazyfs does for Jepsen.
 *
 * Enabled only when the environment variable JETRAFT_TEST_POWERLOSS (its value, a number, seeds
 * the choice of torn writes) or JETRAFT_TEST_IOERR_FILE (below) is set; otherwise powervfs_open
 * returns NULL and the server uses jr_vfs_posix() unchanged. Writes go through to the files at once
 * (reads see them, a plain SIGKILL keeps them, as the OS page cache would), and the vfs keeps in
 * memory, per file, what a power cut would restore: the file's size at its last completed sync and
 * the old bytes of every range below that size overwritten or cut since. SIGUSR1 arms the power
 * cut; it happens just before one of the next four syncs (chosen at random) reaches the disk, so
 * that the writes that sync would have covered are lost (with JR_SYNC_ALWAYS nothing is unsynced
 * between two loop turns), or 1 s after the signal if no sync comes. Every file is then put
 * back to its synced image — the saved ranges written back newest first, the file cut to its
 * synced size — except that, for about half the files, a random prefix of the newest write
 * survives (a torn write); then the process exits at once with status 86 without closing
 * anything.
 *
 * I/O errors: with JETRAFT_TEST_IOERR_FILE naming a file, the vfs reads its first word at open
 * and every 100 ms after, and injects errors while it says so: `eio` (every write, truncate,
 * sync, directory sync, creation, rename and remove fails with JR_EIO; reads succeed), `enospc`
 * (a write or truncate that would grow a file, and mkdir, fail with JR_ENOSPC: a full disk), or
 * `sync` (only syncs fail, with JR_EIO: the fsync of a failing disk). `none`, another word or
 * no file: no errors. A failed call changes nothing on the disk, and a failed sync covers
 * nothing: a later power cut still loses what it would have covered. Either variable enables
 * the vfs; SIGUSR1 is taken only with JETRAFT_TEST_POWERLOSS.
 *
 * Invariants: a created file, a rename and a remove are durable when they return (the POSIX
 * vfs syncs the directory), so only data and sizes are ever rolled back; a rename carries the
 * file's unsynced state to its new name, a remove drops it. Single-threaded: every call comes
 * from the node on the loop's thread, as does the SIGUSR1 callback.
 */
#ifndef SRV_POWERVFS_H
#define SRV_POWERVFS_H

#include <uv.h>

#include "jetraft.h"

/* The exit status of a process after a simulated power cut. */
#define POWERVFS_EXIT 86

/* With JETRAFT_TEST_POWERLOSS or JETRAFT_TEST_IOERR_FILE set: a vfs over jr_vfs_posix() whose
 * power cut SIGUSR1 triggers and whose I/O errors the file selects (the signal handle and the
 * file's timer are unreferenced, so they never keep the loop alive). Without either, or if
 * memory runs out: NULL. name prefixes the power cut's report on stderr. */
jr_vfs *powervfs_open(uv_loop_t *loop, const char *name);
/* What the power cut does to the files, without exiting (for the vfs's own tests): every file
 * with unsynced changes is put back to its synced image (maybe keeping a torn prefix of its
 * newest write), and the vfs then treats it as synced. Returns the number of such files. */
int powervfs_roll_back(jr_vfs *vfs);

/* Reads the I/O-error file now (the vfs's timer does so every 100 ms); returns the mode it
 * selects: 0 none, 1 eio, 2 enospc, 3 sync. */
int powervfs_poll_ioerr(jr_vfs *vfs);

#endif
