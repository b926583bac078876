/* The publish hold's count rule (lib/js/hold.c jr__hold_note): a joiner's later snapshots are
 * compared within one leader term, so a leadership lost and won back between two looks, whose
 * count starts again from zero, still arms the hold for the later snapshot it sends. */
#include <check.h>
#include <string.h>

#include "js/js.h"

START_TEST(later_snapshots_count_within_one_leader_term)
{
    jr__hold_member m;
    memset(&m, 0, sizeof m);
    ck_assert_int_eq(jr__hold_note(&m, 0, 5), 0); /* none yet */
    ck_assert_int_eq(jr__hold_note(&m, 1, 5), 1); /* the group outran its copy */
    ck_assert_int_eq(jr__hold_note(&m, 1, 5), 0); /* the same one, seen again */
    ck_assert_int_eq(jr__hold_note(&m, 2, 5), 1); /* a second */
    /* the leadership lost and won back (term 7) before the next look: the new leader's count
     * starts at zero, and its first later snapshot is a new one although 1 < 2 */
    ck_assert_int_eq(jr__hold_note(&m, 1, 7), 1);
    ck_assert_uint_eq(m.term, 7);
    ck_assert_uint_eq(m.seen, 1);
    ck_assert_int_eq(jr__hold_note(&m, 1, 7), 0);
    /* a lower count in the same term (the member removed and added again) is the new base */
    ck_assert_int_eq(jr__hold_note(&m, 0, 7), 0);
    ck_assert_int_eq(jr__hold_note(&m, 1, 7), 1);
    /* a new term with no later snapshot arms nothing */
    ck_assert_int_eq(jr__hold_note(&m, 0, 9), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hold");
    TCase *tc = tcase_create("hold");
    tcase_add_test(tc, later_snapshots_count_within_one_leader_term);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
