/*
 * harness — test support for lib/log: a reference model of what the WAL must recover, a
 * collector of what jr__wal_open replays, and their comparison.
 *
 * The model applies the WAL's rules directly (an entry at index i replaces the log from i on;
 * a truncation at i drops the log from i on; a compaction marker drops entries up to its
 * index; a drop forgets the group), so a test can
 * stage the same operations on the WAL and on the model and compare after recovery.
 */
#ifndef JR_TEST_LOG_HARNESS_H
#define JR_TEST_LOG_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "log/wal.h"

typedef struct h_ent {
    uint64_t term, index;
    uint8_t type;
    uint32_t len;
    uint8_t *data;
} h_ent;

typedef struct h_group {
    uint64_t id;
    int live;
    h_ent *e; /* the log after supersession, ascending, contiguous from cidx + 1 (or 1) */
    size_t n, cap;
    jr__hardstate hs;
    int has_hs;
    uint64_t cidx, cterm;
    int has_compact;
    /* collector only */
    int damaged, dropped, order_errors;
    int truncates;     /* on_truncate calls */
    int trunc_removed; /* entries an on_truncate found to drop (the WAL must leave none) */
    char why[512];
} h_group;

typedef struct h_state {
    h_group *g;
    size_t n, cap;
} h_state;

/* A logical record, as staged on the WAL and applied to a model. */
enum { H_ENTRY = 1, H_HS, H_COMPACT, H_DROP, H_TRUNCATE };
typedef struct h_op {
    int kind;
    uint64_t group;
    h_ent e;              /* H_ENTRY (data owned by the op) */
    jr__hardstate hs;     /* H_HS */
    uint64_t cidx, cterm; /* H_COMPACT */
    uint64_t from;        /* H_TRUNCATE */
} h_op;

void h_state_init(h_state *s);
void h_state_free(h_state *s);
void h_state_copy(h_state *dst, const h_state *src);
h_group *h_state_group(h_state *s, uint64_t id, int create);
/* Applies one logical record with the WAL's rules. */
void h_apply(h_state *s, const h_op *op);

/* Stages op on the WAL; returns the WAL's result. */
int h_stage(jr__wal *w, const h_op *op);
void h_op_free(h_op *op);

/* A jr__wal_replay that fills an h_state (ctx must be an h_state). */
jr__wal_replay h_collector(h_state *s);

/* Compares a model with what was recovered: 0 if equal, else writes the first difference
 * into why (cap bytes) and returns -1. Damaged groups in `got` are a difference. */
int h_compare(const h_state *want, const h_state *got, char *why, size_t cap);

/* Convenience: opens the WAL with cfg and collects its replay into *got (initialised here).
 * With the environment variable JR_WAL_KEY set (non-empty) and no cfg->key, the WAL is opened
 * encrypted under a fixed key: the fault tests then run against the sealed format. */
int h_open(const jr__wal_config *cfg, h_state *got, jr__wal **w);

#endif
