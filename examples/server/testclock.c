/*
 * testclock.c — the test-only wall-clock offset (see testclock.h).
 */
#include "testclock.h"

#include <stdio.h>
#include <stdlib.h>

static const char *path;
static int64_t offset_ns;
static uv_timer_t poll_timer;

static void reread(uv_timer_t *t)
{
    (void)t;
    FILE *f = fopen(path, "r");
    if (!f) return;
    long long ms = 0;
    if (fscanf(f, "%lld", &ms) == 1 && ms > -86400000LL && ms < 86400000LL)
        offset_ns = (int64_t)ms * 1000000;
    fclose(f);
}

void testclock_open(uv_loop_t *loop)
{
    path = getenv("JETRAFT_TEST_CLOCK_FILE");
    if (!path || !*path) return;
    reread(NULL);
    if (uv_timer_init(loop, &poll_timer)) return;
    uv_timer_start(&poll_timer, reread, 100, 100);
    uv_unref((uv_handle_t *)&poll_timer);
    fprintf(stderr, "test clock: wall clock offset read from %s (now %lld ms)\n", path,
            (long long)(offset_ns / 1000000));
}

int64_t testclock_offset_ns(void)
{
    return offset_ns;
}
