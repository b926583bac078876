/*
 * sim_int — the deterministic cluster fixture's internals (public contract: jetraft/sim.h).
 *
 * Files: sim.c (lifecycle, nodes as hosts, crash/restart, the event loop, digest), net.c (the
 * simulated network: links, cuts, frames in flight) and disk.c (disk faults on crashed nodes).
 *
 * Invariants:
 *  - all randomness is drawn from sim->rand, in event order, so a seed replays exactly;
 *  - frames in flight form a min-heap on (at, seq); seq is unique and increasing, so the order
 *    is total and independent of the heap's shape;
 *  - a frame buffer, once allocated, is reused through the free list (steady state allocates
 *    nothing);
 *  - nodes[i].node is NULL exactly while node i is crashed;
 *  - nothing is delivered to, and no tick runs on, a node before its paused_until.
 */
#ifndef JR_SIM_SIM_INT_H
#define JR_SIM_SIM_INT_H

#include "jetraft.h"
#include "jetraft/sim.h"
#include "util/rand.h"

typedef struct jr__sim_frame {
    uint64_t at;  /* delivery time */
    uint64_t seq; /* tie-break: send order */
    unsigned from, to;
    size_t len, cap;
    uint8_t *data;
    struct jr__sim_frame *next_free;
} jr__sim_frame;

typedef struct jr__sim_node {
    jr_sim *sim;
    unsigned idx;
    char name[16];
    jr_node *node;         /* NULL while crashed */
    uint64_t armed;        /* deadline the node asked for; UINT64_MAX none */
    unsigned same_instant; /* consecutive ticks at one instant (storm guard) */
    uint64_t last_tick;
    jr_vfs *vfs;
    jr_host host;
    uint64_t wall_off;     /* wall clock = sim->now + wall_off (mod 2^64; survives crashes) */
    uint64_t paused_until; /* no ticks or frames before then (jr_sim_pause); 0 not paused */
    unsigned npeers;       /* its config's peers: names[0..npeers) (a node added later: the
                              nodes before it and itself) */
    int join;              /* its config's join (jr_sim_add_node) */
    jr_sync_job *job;      /* its WAL sync in flight (jr_sim_config.sync_delay_ns), or NULL */
    uint64_t sync_at;      /* when that job completes */
} jr__sim_node;

struct jr_sim {
    jr_sim_config cfg;
    const jr_allocator *alloc;
    unsigned n;
    uint64_t now;
    jr__rand rand;
    uint64_t digest;
    jr__sim_node nodes[JR_SIM_MAX_NODES];
    const char *names[JR_SIM_MAX_NODES];
    jr_sim_link link0; /* every link starts like this (a node added later's too) */
    jr_sim_link links[JR_SIM_MAX_NODES][JR_SIM_MAX_NODES];
    uint8_t cut[JR_SIM_MAX_NODES][JR_SIM_MAX_NODES];
    uint64_t busy_until[JR_SIM_MAX_NODES][JR_SIM_MAX_NODES]; /* a link's sending ends (ns) */
    /* network */
    jr__sim_frame **heap;
    size_t hlen, hcap;
    uint64_t seq;
    jr__sim_frame *free_frames;
    jr_sim_stats stats;
};

/* net.c */
/* host->send of node `from`: applies the link's behaviour and queues copies. */
int jr__sim_net_send(jr_sim *s, unsigned from, unsigned to, const jr_iovec *iov, int iovcnt);
/* The earliest frame in flight, or NULL. */
jr__sim_frame *jr__sim_net_top(const jr_sim *s);
/* Removes the earliest frame (the caller recycles it with jr__sim_net_recycle). */
jr__sim_frame *jr__sim_net_pop(jr_sim *s);
/* Puts a popped frame back in flight, to be delivered at `at` after every frame already due
 * then (frames put back in the order they were popped keep that order). 0, or JR_ENOMEM (the
 * frame is then recycled: lost, as on a crashed receiver). */
int jr__sim_net_requeue(jr_sim *s, jr__sim_frame *f, uint64_t at);
void jr__sim_net_recycle(jr_sim *s, jr__sim_frame *f);
void jr__sim_net_free(jr_sim *s);
/* Uniform double in [0, 1) from the fixture's PRNG. */
double jr__sim_uniform(jr_sim *s);

#endif
