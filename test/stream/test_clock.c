/* Stream time on the leader (lib/stream/clock.h): follows the wall clock, never goes backwards,
 * absorbs wall-clock jumps (forwards and backwards) at 1/16 of real time instead of all at once,
 * and followers keep an anchor across a jump so that a failover keeps absorbing it. */
#include <check.h>
#include <stdint.h>

#include "stream/clock.h"

#define MS 1000000ll
#define SEC (1000 * MS)
#define HOUR (3600 * SEC)
#define EPOCH 1704067200000000000ll /* 2024-01-01 */

/* A leader that stamps one op every `step` of real time for `span`, with a wall clock that is
 * `skew` away from real time, checking that stamps never decrease and never advance by more
 * than 17/16 of real time (plus the tolerance followed at once). */
typedef struct leader {
    jr__sclock c;
    uint64_t mono; /* real time */
    int64_t last;
} leader;

static int64_t stamp(leader *l, int64_t wall, int64_t floor)
{
    int64_t t = jr__sclock_stamp(&l->c, (uint64_t)wall, l->mono, floor);
    ck_assert_int_ge(t, l->last);
    ck_assert_int_ge(t, floor);
    l->last = t;
    return t;
}

static void run(leader *l, int64_t skew, int64_t step, int64_t span)
{
    for (int64_t t = 0; t < span; t += step) {
        int64_t before = l->last;
        l->mono += (uint64_t)step;
        int64_t s = stamp(l, EPOCH + (int64_t)l->mono + skew, 0);
        /* 17/16 of real time, plus a last step within the tolerance when it meets the wall */
        if (before) ck_assert_int_le(s - before, step + step / 16 + 1 + JR__SCLOCK_TOLERANCE_NS);
    }
}

START_TEST(without_an_anchor_the_wall_clock_is_taken_but_never_below_the_floor)
{
    leader l = {.mono = 5 * SEC};
    jr__sclock_init(&l.c);
    ck_assert_int_eq(stamp(&l, EPOCH, 0), EPOCH);
    jr__sclock_init(&l.c);
    l.last = 0;
    /* a new leader whose clock is behind the stream's time: the stream's time */
    ck_assert_int_eq(stamp(&l, EPOCH - HOUR, EPOCH), EPOCH);
    /* a wall clock beyond INT64_MAX saturates */
    jr__sclock_init(&l.c);
    ck_assert_int_eq(jr__sclock_stamp(&l.c, UINT64_MAX, l.mono, 0), INT64_MAX);
}
END_TEST

START_TEST(a_steady_wall_clock_is_followed_exactly)
{
    leader l = {.mono = 5 * SEC};
    jr__sclock_init(&l.c);
    stamp(&l, EPOCH, 0);
    for (int i = 0; i < 1000; i++) {
        l.mono += 3 * MS;
        int64_t wall = EPOCH + (int64_t)(l.mono - 5 * SEC);
        ck_assert_int_eq(stamp(&l, wall, 0), wall);
    }
    /* several ops in one instant share the time */
    int64_t t = l.last;
    ck_assert_int_eq(stamp(&l, t, 0), t);
    /* a correction within the tolerance is followed at once, both ways */
    l.mono += MS;
    ck_assert_int_eq(stamp(&l, t + MS + 900 * MS, 0), t + 901 * MS);
    l.mono += MS;
    ck_assert_int_eq(stamp(&l, t + 902 * MS - 500 * MS, 0), t + 901 * MS); /* not backwards */
    l.mono += SEC;
    ck_assert_int_eq(stamp(&l, t + 402 * MS + SEC, 0), t + 402 * MS + SEC);
}
END_TEST

START_TEST(a_forward_jump_is_absorbed_at_a_sixteenth_of_real_time)
{
    leader l = {.mono = 0};
    jr__sclock_init(&l.c);
    run(&l, 0, 10 * MS, 10 * SEC);
    /* the wall clock jumps an hour ahead: a minute later stream time gained about 1/16 minute */
    int64_t real = EPOCH + (int64_t)l.mono;
    run(&l, HOUR, 10 * MS, 60 * SEC);
    real += 60 * SEC;
    ck_assert_int_ge(l.last, real + 60 * SEC / 16 - SEC);
    ck_assert_int_le(l.last, real + 60 * SEC / 16 + SEC);
    /* after 16 hours (and a bit), stream time met the wall clock and follows it again */
    run(&l, HOUR, 10 * SEC, 17 * HOUR);
    ck_assert_int_eq(l.last, EPOCH + (int64_t)l.mono + HOUR);
    run(&l, HOUR, 10 * MS, SEC);
    ck_assert_int_eq(l.last, EPOCH + (int64_t)l.mono + HOUR);
}
END_TEST

START_TEST(a_backward_jump_keeps_time_going_forwards_slower)
{
    leader l = {.mono = 0};
    jr__sclock_init(&l.c);
    run(&l, 0, 10 * MS, 10 * SEC);
    int64_t at = l.last;
    /* the wall clock jumps an hour back: stream time keeps going, at 15/16 of real time */
    for (int i = 0; i < 6000; i++) {
        int64_t before = l.last;
        l.mono += 10 * MS;
        stamp(&l, EPOCH + (int64_t)l.mono - HOUR, 0);
        ck_assert_int_ge(l.last - before, 10 * MS - 10 * MS / 16 - 1);
    }
    ck_assert_int_ge(l.last, at + 60 * SEC - 60 * SEC / 16 - 1);
    ck_assert_int_le(l.last, at + 60 * SEC);
    /* and meets the wall clock again after about 16 hours */
    for (int i = 0; i < 17 * 360; i++) {
        l.mono += 10 * SEC;
        stamp(&l, EPOCH + (int64_t)l.mono - HOUR, 0);
    }
    ck_assert_int_eq(l.last, EPOCH + (int64_t)l.mono - HOUR);
}
END_TEST

START_TEST(an_idle_leader_is_not_mistaken_for_a_jump)
{
    leader l = {.mono = 0};
    jr__sclock_init(&l.c);
    run(&l, 0, 10 * MS, SEC);
    /* a week without an op (or led by others meanwhile): real time passed, so did the wall */
    l.mono += 7 * 24 * (uint64_t)HOUR;
    int64_t wall = EPOCH + (int64_t)l.mono;
    ck_assert_int_eq(stamp(&l, wall, 0), wall);
    /* others moved the stream's time ahead meanwhile: the floor wins */
    l.mono += SEC;
    ck_assert_int_eq(stamp(&l, wall + SEC, wall + 5 * SEC), wall + 5 * SEC);
}
END_TEST

START_TEST(followers_anchor_on_applied_times_that_agree_with_their_wall_clock)
{
    leader f = {.mono = 100 * SEC};
    jr__sclock_init(&f.c);
    /* replayed after a restart: an hour old, no anchor taken */
    jr__sclock_observe(&f.c, EPOCH - HOUR, (uint64_t)EPOCH, f.mono);
    ck_assert_int_eq(f.c.anchored, 0);
    /* live entries of the leader: anchored */
    jr__sclock_observe(&f.c, EPOCH + 10 * MS, (uint64_t)EPOCH + 12 * MS, f.mono);
    ck_assert_int_eq(f.c.anchored, 1);
    ck_assert_int_eq(f.c.stamp, EPOCH + 10 * MS);
    /* the whole cluster's wall clocks jump an hour ahead; the old leader absorbs it slowly, and
     * its stamps no longer agree with this follower's wall clock: the anchor stays */
    f.mono += 10 * SEC;
    jr__sclock_observe(&f.c, EPOCH + 10 * SEC + 700 * MS, (uint64_t)(EPOCH + HOUR + 10 * SEC),
                       f.mono);
    ck_assert_int_eq(f.c.stamp, EPOCH + 10 * MS);
    /* it takes over: still absorbing, not jumping */
    f.mono += SEC;
    int64_t t = stamp(&f, EPOCH + HOUR + 11 * SEC, EPOCH + 10 * SEC + 700 * MS);
    ck_assert_int_lt(t, EPOCH + 13 * SEC);
    ck_assert_int_ge(t, EPOCH + 11 * SEC);
    /* an older time changes nothing */
    jr__sclock_observe(&f.c, EPOCH, (uint64_t)EPOCH, f.mono);
    ck_assert_int_eq(f.c.stamp, t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("clock");
    TCase *tc = tcase_create("clock");
    tcase_add_test(tc, without_an_anchor_the_wall_clock_is_taken_but_never_below_the_floor);
    tcase_add_test(tc, a_steady_wall_clock_is_followed_exactly);
    tcase_add_test(tc, a_forward_jump_is_absorbed_at_a_sixteenth_of_real_time);
    tcase_add_test(tc, a_backward_jump_keeps_time_going_forwards_slower);
    tcase_add_test(tc, an_idle_leader_is_not_mistaken_for_a_jump);
    tcase_add_test(tc, followers_anchor_on_applied_times_that_agree_with_their_wall_clock);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
