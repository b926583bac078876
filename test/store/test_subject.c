/* Subject validation and wildcard matching (lib/store/subject.c). */
#include <check.h>
#include <string.h>

#include "store/subject.h"

#define M(f, s) jr__subject_match(f, strlen(f), s, strlen(s))
#define V(s, w) jr__subject_valid(s, strlen(s), w)

START_TEST(literal_and_wildcards)
{
    ck_assert(M("a.b.c", "a.b.c"));
    ck_assert(!M("a.b.c", "a.b"));
    ck_assert(!M("a.b", "a.b.c"));
    ck_assert(!M("a.b.c", "a.b.cd"));
    ck_assert(M("a.*.c", "a.b.c"));
    ck_assert(!M("a.*.c", "a.c"));
    ck_assert(!M("a.*.c", "a.b.b.c"));
    ck_assert(M("*", "a"));
    ck_assert(!M("*", "a.b"));
    ck_assert(M(">", "a"));
    ck_assert(M(">", "a.b.c"));
    ck_assert(M("a.>", "a.b"));
    ck_assert(M("a.>", "a.b.c"));
    ck_assert(!M("a.>", "a"));
    ck_assert(!M("a.>", "b.c"));
    ck_assert(M("*.>", "a.b"));
    ck_assert(!M("*.>", "a"));
    ck_assert(M("*.*", "a.b"));
    ck_assert(M("a*.b", "a*.b")); /* not a wildcard: a literal token */
    ck_assert(!M("a*.b", "ax.b"));
    ck_assert(!M("a.b", ""));
}
END_TEST

START_TEST(validity)
{
    ck_assert(V("orders.new", 0));
    ck_assert(V("a", 0));
    ck_assert(!V("", 0));
    ck_assert(!V(".a", 0));
    ck_assert(!V("a.", 0));
    ck_assert(!V("a..b", 0));
    ck_assert(!V("a b", 0));
    ck_assert(!V("a\tb", 0));
    ck_assert(!V("a.*", 0));
    ck_assert(V("a.*", 1));
    ck_assert(V("a.>", 1));
    ck_assert(V(">", 1));
    ck_assert(!V("a.>.b", 1));
    ck_assert(V("a*b.c", 0));
    ck_assert(jr__subject_literal("a.b", 3));
    ck_assert(!jr__subject_literal("a.*", 3));
    ck_assert(!jr__subject_literal(">", 1));
    ck_assert(jr__subject_literal("a>", 2));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("subject");
    TCase *tc = tcase_create("subject");
    tcase_add_test(tc, literal_and_wildcards);
    tcase_add_test(tc, validity);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
