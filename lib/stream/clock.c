/*
 * clock — stream time on the leader (rules in clock.h).
 */
#include "stream/clock.h"

void jr__sclock_init(jr__sclock *c)
{
    c->stamp = 0;
    c->mono = 0;
    c->anchored = 0;
}

void jr__sclock_observe(jr__sclock *c, int64_t clock, uint64_t wall, uint64_t mono)
{
    if (clock <= c->stamp) return; /* not newer (e.g. this leader's own stamps applied) */
    int64_t w = wall > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)wall;
    int64_t dev = w > clock ? w - clock : clock - w;
    if (dev > JR__SCLOCK_TOLERANCE_NS) return; /* old, or one of the two clocks jumped */
    c->stamp = clock;
    c->mono = mono;
    c->anchored = 1;
}

/* a + b, saturating at INT64_MAX (a >= 0). */
static int64_t add_sat(int64_t a, uint64_t b)
{
    if (b > (uint64_t)(INT64_MAX - a)) return INT64_MAX;
    return a + (int64_t)b;
}

int64_t jr__sclock_stamp(jr__sclock *c, uint64_t wall, uint64_t mono, int64_t floor)
{
    int64_t w = wall > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)wall;
    int64_t lo = c->stamp > floor ? c->stamp : floor;
    if (lo < 0) lo = 0;
    int64_t t = w;
    if (c->anchored) {
        uint64_t elapsed = mono > c->mono ? mono - c->mono : 0;
        int64_t expect = add_sat(c->stamp, elapsed);
        int64_t slew = (int64_t)(elapsed / JR__SCLOCK_SLEW_DIV);
        if (w > expect && w - expect > JR__SCLOCK_TOLERANCE_NS) {
            /* the wall clock is ahead (a forward jump): gain 1/16 of the elapsed time */
            t = add_sat(expect, (uint64_t)slew);
            if (t > w) t = w;
        } else if (w < expect && expect - w > JR__SCLOCK_TOLERANCE_NS) {
            /* behind (a backward jump): lose 1/16 of the elapsed time */
            t = expect - slew;
            if (t < w) t = w;
        }
    }
    if (t < lo) t = lo;
    c->stamp = t;
    c->mono = mono;
    c->anchored = 1;
    return t;
}
