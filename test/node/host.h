/*
 * host — a scripted host for node tests: a manual clock, a record of arm() requests, and the
 * frames a node sent (kept for inspection or delivery by hand), over a memfs per node.
 */
#ifndef JR_TEST_NODE_HOST_H
#define JR_TEST_NODE_HOST_H

#include <stdint.h>

#include "jetraft.h"

#define T_MAX_FRAMES 512

typedef struct t_frame {
    char to[16];
    uint8_t *data;
    size_t len;
} t_frame;

typedef struct t_host {
    jr_host host;
    uint64_t now;
    uint64_t armed; /* last arm() value; UINT64_MAX none */
    unsigned narm;  /* arm() calls */
    unsigned sends; /* send() calls */
    t_frame frames[T_MAX_FRAMES];
    unsigned nframes;
    jr_vfs *vfs;
    jr_vfs *inner; /* the memfs under a counting vfs (t_cvfs_wrap), else NULL */
    jr_node *node;
} t_host;

/* A vfs that counts the calls that cost on a disk, passing everything to the vfs under it. */
typedef struct t_cvfs {
    jr_vfs vfs;
    jr_vfs *inner;
    uint64_t writes, syncs, dir_syncs, bytes;
    uint64_t writebacks, writeback_bytes; /* jr_vfs.writeback calls and the bytes they named */
    uint64_t wal_writes, wal_syncs;       /* of WAL segments (files named *.wal) alone */
    jr_file *wal[8];                      /* the WAL segments open now */
    /* optional: sees every successful pwrite */
    void (*on_write)(void *arg, const void *buf, size_t len, uint64_t off);
    void *arg;
} t_cvfs;
/* Puts c between h's node and its memfs (call before t_open; t_host_free undoes it). */
void t_cvfs_wrap(t_cvfs *c, t_host *h);

/* Prepares h (clock at 1 s, a fresh memfs). */
void t_host_init(t_host *h);
/* cfg for a node of h called name in a cluster of peers (names): WAL in /wal on h's vfs, h's
 * host, an election timeout of 100 ms and heartbeats of 20 ms, the given seed; the caller sets
 * the rest (streams, store, keys ...) before jr_node_open. */
void t_config(t_host *h, jr_node_config *cfg, const char *name, const char *const *peers,
              size_t npeers, uint64_t seed);
/* Opens h->node called name in a cluster of peers (names), with alloc (NULL: malloc). */
int t_open(t_host *h, const char *name, const char *const *peers, size_t npeers,
           const jr_allocator *alloc);
/* Closes the node and frees the frames and the memfs. */
void t_host_free(t_host *h);
/* Advances h's clock by ms, ticking the node whenever it asks, then drops the frames it sent.
 * ticks_succeed: every tick must return 0 (a failed flush is a failure of the test); 0 where
 * failures are what the test provokes. */
void t_run_ms(t_host *h, uint64_t ms, int ticks_succeed);
/* Drops the recorded frames. */
void t_frames_clear(t_host *h);

/* A trivial counting fsm. */
typedef struct t_fsm {
    jr_fsm ops;
    uint64_t applied;
    uint64_t last;
} t_fsm;
void t_fsm_init(t_fsm *f);
/* Opens group id on h's node with the given voters. */
int t_group(t_host *h, uint64_t id, const char *const *voters, size_t n, t_fsm *f, jr_group **g);

#endif
