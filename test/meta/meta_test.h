/*
 * Helpers shared by the meta state's op tests (test_meta_move.c, test_meta_consumers.c,
 * test_meta_servers.c): building and applying ops, and an allocator that fails its n-th
 * allocation, to show that no allocation failure leaves half an op applied. Header-only (static
 * inline): each test is one source file.
 */
#ifndef JR_TEST_META_TEST_H
#define JR_TEST_META_TEST_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_op.h"
#include "meta/meta_state.h"

/* Encodes op and applies it at index; the apply itself must succeed. Returns the op's status
 * (res->status). */
static inline int mt_apply(jr__meta_state *st, uint64_t index, const jr__meta_op *op,
                           jr__meta_result *res)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__meta_op_encode(op, &b), 0);
    ck_assert_int_eq(jr__meta_apply(st, index, b.data, b.len, res), 0);
    jr__buf_free(&b);
    return res->status;
}

/* A SERVER_INFO op registering server name in cluster "east". */
static inline jr__meta_op mt_server_op(const char *name)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = JR__META_SERVER_INFO;
    op.server.name = name;
    op.server.cluster = "east";
    return op;
}

/* A STREAM_ADD or STREAM_UPDATE op (type) of config c on peers[0..npeers-1]. */
static inline jr__meta_op mt_stream_op(uint8_t type, const jr_stream_config *c,
                                       const char *const *peers, size_t npeers)
{
    jr__meta_op op;
    memset(&op, 0, sizeof op);
    op.type = type;
    op.config = c;
    op.peers = peers;
    op.npeers = npeers;
    return op;
}

/* An allocator (mt_faulty_allocator) that fails the allocation countdown reaches 0 at. */
typedef struct mt_faulty {
    long countdown; /* fail the allocation when it reaches 0; -1: never */
} mt_faulty;

static inline void *mt_f_malloc(void *ctx, size_t n)
{
    mt_faulty *f = ctx;
    if (f->countdown >= 0 && f->countdown-- == 0) return NULL;
    return malloc(n);
}

static inline void *mt_f_realloc(void *ctx, void *p, size_t n)
{
    mt_faulty *f = ctx;
    if (f->countdown >= 0 && f->countdown-- == 0) return NULL;
    return realloc(p, n);
}

static inline void mt_f_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static inline jr_allocator mt_faulty_allocator(mt_faulty *f)
{
    jr_allocator a = {JR_ALLOCATOR_VERSION, f, mt_f_malloc, mt_f_realloc, mt_f_free};
    return a;
}

/* Applies the encoded op enc at index to st (whose allocator is f's), failing its 1st, 2nd, ...
 * allocation until it applies: every failed apply must be JR_ENOMEM and leave st's snapshot
 * byte for byte as it was. res is the successful apply's result; k names the op in failure
 * messages. Returns how many applies failed. */
static inline long mt_apply_failing_each_allocation(jr__meta_state *st, mt_faulty *f,
                                                    uint64_t index, const jr__buf *enc,
                                                    jr__meta_result *res, size_t k)
{
    jr__buf before, after;
    jr__buf_init(&before, NULL);
    jr__buf_init(&after, NULL);
    ck_assert_int_eq(jr__meta_snapshot(st, &before), 0);
    long failures = 0;
    for (long n = 0;; n++) {
        f->countdown = n;
        int rc = jr__meta_apply(st, index, enc->data, enc->len, res);
        f->countdown = -1;
        if (rc == 0) break;
        ck_assert_msg(rc == JR_ENOMEM, "op %zu, failing allocation %ld: %d", k, n, rc);
        failures++;
        jr__buf_reset(&after);
        ck_assert_int_eq(jr__meta_snapshot(st, &after), 0);
        ck_assert_msg(after.len == before.len && memcmp(after.data, before.data, before.len) == 0,
                      "op %zu, failing allocation %ld: state changed", k, n);
    }
    jr__buf_free(&before);
    jr__buf_free(&after);
    return failures;
}

#endif
