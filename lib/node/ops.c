/*
 * ops — completion records and the node's completion queue.
 *
 * A record tracks one asynchronous request (a proposal, a membership change, a transfer) from
 * the API call that started it to its callback. Records come from a pool that grows in chunks
 * and is never shrunk before close, so a steady stream of proposals allocates nothing. A
 * completed record moves (no allocation, so completion cannot fail) to the node's completion
 * queue; jr__node_drain runs the callbacks later, at a point where the library holds no
 * iterator or borrowed pointer, so a callback may call any API function (propose, close a
 * group, open another) without surprising the node.
 */
#include <string.h>

#include "node/node.h"
#include "util/alloc.h"

#define OPS_PER_CHUNK 256

typedef struct op_chunk {
    struct op_chunk *next;
    jr__op ops[OPS_PER_CHUNK];
} op_chunk;

jr__op *jr__op_get(jr_node *n)
{
    if (!n->op_free) {
        op_chunk *c = jr__malloc(n->alloc, sizeof *c);
        if (!c) return NULL;
        c->next = n->op_chunks;
        n->op_chunks = c;
        for (size_t i = 0; i < OPS_PER_CHUNK; i++) {
            c->ops[i].next = n->op_free;
            n->op_free = &c->ops[i];
        }
    }
    jr__op *op = n->op_free;
    n->op_free = op->next;
    memset(op, 0, sizeof *op);
    return op;
}

jr__op *jr__op_reserve(jr_node *n, jr_done_cb cb, void *arg)
{
    jr__op *op = jr__op_get(n);
    if (!op) return NULL;
    op->kind = JR__OP_DONE;
    op->cb.done = cb;
    op->arg = arg;
    return op;
}

void jr__op_put(jr_node *n, jr__op *op)
{
    op->next = n->op_free;
    n->op_free = op;
}

void jr__op_pool_free(jr_node *n)
{
    op_chunk *c = n->op_chunks;
    while (c) {
        op_chunk *next = c->next;
        jr__free(n->alloc, c);
        c = next;
    }
    n->op_chunks = NULL;
    n->op_free = NULL;
}

void jr__op_complete(jr_node *n, jr__op *op, int status, uint64_t index)
{
    op->status = status;
    op->index = index;
    jr__opq_push(&n->done, op);
}

void jr__opq_fail_all(jr_node *n, jr__opq *q, int status)
{
    jr__op *op;
    while ((op = jr__opq_pop(q)) != NULL) jr__op_complete(n, op, status, 0);
}

void jr__node_drain(jr_node *n)
{
    if (n->draining) return;
    n->draining = 1;
    jr__op *op;
    while ((op = jr__opq_pop(&n->done)) != NULL) {
        /* Copy out and recycle first: the callback may queue new ops from the same pool. */
        jr__op c = *op;
        jr__op_put(n, op);
        if (c.kind == JR__OP_PROPOSE) {
            if (c.cb.propose) c.cb.propose(c.arg, c.status, c.status == 0 ? c.index : 0);
        } else if (c.cb.done) {
            c.cb.done(c.arg, c.status);
        }
    }
    n->draining = 0;
}
