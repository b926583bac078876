/* Unit tests of lib/util: varints and the bounds-checked reader, the timer heap, the id map. */
#include <check.h>
#include <stdlib.h>

#include "util/buf.h"
#include "util/heap.h"
#include "util/map.h"
#include "util/rand.h"

START_TEST(varint_roundtrip)
{
    uint64_t vals[] = {0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX, (uint64_t)1 << 63, UINT64_MAX};
    jr__buf b;
    jr__buf_init(&b, NULL);
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) jr__buf_varint(&b, vals[i]);
    ck_assert_int_eq(b.err, 0);
    jr__rd r;
    jr__rd_init(&r, b.data, b.len);
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        ck_assert_uint_eq(jr__rd_varint(&r), vals[i]);
    ck_assert_int_eq(r.err, 0);
    ck_assert_uint_eq(jr__rd_left(&r), 0);
    jr__buf_free(&b);
}
END_TEST

START_TEST(varint_rejects_malformed)
{
    static const uint8_t overlong[] = {0x80, 0x00};
    static const uint8_t truncated[] = {0x80, 0x80};
    static const uint8_t overflow[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    const struct { const uint8_t *p; size_t n; } cases[] = {
        {overlong, sizeof overlong}, {truncated, sizeof truncated}, {overflow, sizeof overflow}};
    for (size_t i = 0; i < 3; i++) {
        jr__rd r;
        jr__rd_init(&r, cases[i].p, cases[i].n);
        ck_assert_uint_eq(jr__rd_varint(&r), 0);
        ck_assert_int_eq(r.err, JR_ECORRUPT);
        /* once failed, every read is zero and stays in bounds */
        ck_assert_uint_eq(jr__rd_u64(&r), 0);
        ck_assert_ptr_null(jr__rd_take(&r, 1));
    }
}
END_TEST

START_TEST(reader_bounds)
{
    uint8_t data[5] = {1, 2, 3, 4, 5};
    jr__rd r;
    jr__rd_init(&r, data, sizeof data);
    ck_assert_uint_eq(jr__rd_u32(&r), 0x04030201u);
    ck_assert_uint_eq(jr__rd_u32(&r), 0);
    ck_assert_int_eq(r.err, JR_ECORRUPT);
    size_t n;
    uint8_t lenbig[] = {10, 1, 2};
    jr__rd_init(&r, lenbig, sizeof lenbig);
    ck_assert_ptr_null(jr__rd_bytes(&r, &n, 100));
    ck_assert_int_eq(r.err, JR_ECORRUPT);
}
END_TEST

typedef struct item {
    jr__timer t;
    int id;
} item;

/* The heap's invariants (heap.h): slots and deadlines agree with the owners, parents first. */
static void check_heap(const jr__heap *h)
{
    for (size_t i = 0; i < h->len; i++) {
        ck_assert_uint_eq(h->items[i].t->slot, i);
        ck_assert_uint_eq(h->items[i].t->deadline, h->items[i].deadline);
        if (i) ck_assert_uint_le(h->items[(i - 1) / 4].deadline, h->items[i].deadline);
    }
}

START_TEST(heap_orders_and_rekeys)
{
    enum { N = 20000 };
    item *items = calloc(N, sizeof *items);
    jr__heap h;
    jr__heap_init(&h, NULL);
    jr__rand rng;
    jr__rand_seed(&rng, 42);
    for (int i = 0; i < N; i++) {
        jr__timer_init(&items[i].t, NULL);
        items[i].id = i;
        ck_assert_int_eq(jr__heap_arm(&h, &items[i].t, jr__rand_below(&rng, 1000000)), 0);
    }
    check_heap(&h);
    /* re-key half (earlier, later or the same), cancel a quarter */
    for (int i = 0; i < N; i += 2) {
        uint64_t d = items[i].t.deadline, r = jr__rand_below(&rng, 3);
        d = r == 0 ? jr__rand_below(&rng, d + 1) : r == 1 ? d + jr__rand_below(&rng, 1000) : d;
        ck_assert_int_eq(jr__heap_arm(&h, &items[i].t, d), 0);
    }
    check_heap(&h);
    for (int i = 1; i < N; i += 4) jr__heap_cancel(&h, &items[i].t);
    jr__heap_cancel(&h, &items[1].t); /* cancelled already: a no-op */
    check_heap(&h);
    size_t expect = h.len, got = 0;
    uint64_t last = 0;
    jr__timer *t;
    while ((t = jr__heap_pop_due(&h, UINT64_MAX))) {
        ck_assert_uint_ge(t->deadline, last);
        ck_assert(!jr__timer_armed(t));
        last = t->deadline;
        got++;
    }
    ck_assert_uint_eq(got, expect);
    ck_assert_uint_eq(got, N - N / 4);
    jr__heap_free(&h);
    free(items);
}
END_TEST

START_TEST(heap_pop_due_respects_now)
{
    jr__heap h;
    jr__heap_init(&h, NULL);
    jr__timer a, b;
    jr__timer_init(&a, NULL);
    jr__timer_init(&b, NULL);
    jr__heap_arm(&h, &a, 10);
    jr__heap_arm(&h, &b, 20);
    ck_assert_ptr_null(jr__heap_pop_due(&h, 9));
    ck_assert_ptr_eq(jr__heap_pop_due(&h, 15), &a);
    ck_assert_ptr_null(jr__heap_pop_due(&h, 15));
    ck_assert_ptr_eq(jr__heap_pop_due(&h, 20), &b);
    jr__heap_free(&h);
}
END_TEST

START_TEST(map_put_get_del)
{
    enum { N = 50000 };
    jr__map m;
    jr__map_init(&m, NULL);
    ck_assert_int_eq(jr__map_put(&m, 0, &m), JR_EINVAL);
    for (uintptr_t k = 1; k <= N; k++) ck_assert_int_eq(jr__map_put(&m, k * 7919, (void *)k), 0);
    ck_assert_uint_eq(m.len, N);
    for (uintptr_t k = 1; k <= N; k += 3) ck_assert_ptr_eq(jr__map_del(&m, k * 7919), (void *)k);
    for (uintptr_t k = 1; k <= N; k++) {
        void *v = jr__map_get(&m, k * 7919);
        if ((k - 1) % 3 == 0)
            ck_assert_ptr_null(v);
        else
            ck_assert_ptr_eq(v, (void *)k);
    }
    ck_assert_ptr_null(jr__map_del(&m, 123456789));
    jr__map_free(&m);
}
END_TEST

START_TEST(error_table)
{
    ck_assert_str_eq(jr_strerror(JR_EBUSY), "cluster member change is in progress");
    ck_assert_str_eq(jr_err_name(JR_ENOQUORUM), "ENOQUORUM");
    ck_assert_str_eq(jr_strerror(-9999), "unknown error");
    ck_assert_str_eq(jr_err_name(0), "OK");
    ck_assert_int_eq(jr_version_number(), JR_VERSION_NUMBER);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("util");
    tcase_add_test(tc, varint_roundtrip);
    tcase_add_test(tc, varint_rejects_malformed);
    tcase_add_test(tc, reader_bounds);
    tcase_add_test(tc, heap_orders_and_rekeys);
    tcase_add_test(tc, heap_pop_due_respects_now);
    tcase_add_test(tc, map_put_get_del);
    tcase_add_test(tc, error_table);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
