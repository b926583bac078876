/*
 * calls — a request to a node made and awaited by a test: the completion callbacks of the
 * stream API record into a t_call (done, status, and what the answer carried), which the test
 * then waits on by running its host until done is set.
 */
#ifndef JR_TEST_NODE_CALLS_H
#define JR_TEST_NODE_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

typedef struct t_call {
    int done, status;
    uint64_t seq;   /* a publish's acknowledged seq, or a read message's */
    char data[128]; /* a read message's first bytes */
    size_t len;     /* how many of them */
} t_call;

/* An admin request's completion (stream add, update, delete ...): done and status. */
void t_on_done(void *arg, int status, const char *msg);
/* A publish's: done, status and the seq it was stored at. */
void t_on_pub(void *arg, int status, const jr_pub_ack *ack);
/* A message read's: done, status, its seq and its first sizeof data bytes. */
void t_on_msg(void *arg, int status, const char *msg, const jr_stored_msg *m);

#endif
