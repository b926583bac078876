/*
 * state_int — what state.c shares with state_snapshot.c (not for other modules).
 */
#ifndef JR_CONSUMER_STATE_INT_H
#define JR_CONSUMER_STATE_INT_H

#include "consumer/state.h"

/* A pending message's redelivery deadline under st's policy (state.h, Leader queries). */
uint64_t jr__cstate_deadline_of(const jr__cstate *st, const jr__cpend *e);
/* Fills the min-tree (2 * cap entries) over pend[0..n) (holes and slots from n on: UINT64_MAX);
 * cap a power of two >= 1. */
void jr__cstate_tree_build(const jr__cstate *st, jr__cpend *pend, uint64_t *tree, size_t cap,
                           size_t n);

#endif
