/*
 * Crash consistency of the file store through the simulated vfs (memfs).
 *
 * For each seed: a store (plain, lz4, encrypted or both; small blocks so that rotation, sealing
 * and block removal happen all the time) lives through several "lives". In each life random
 * appends, deletes, erasures, purges and syncs run; sometimes an I/O operation fails (sticky, as
 * if the machine died right there: in the middle of a rotation, a seal, a purge, a block
 * removal...); then the machine crashes (unsynced writes lost, sometimes torn) and the store is
 * reopened. After every reopen:
 *  - opening succeeds (a crash is never corruption);
 *  - every message that was live at the last completed sync and not deleted since is present;
 *  - no message deleted before the last completed sync is back;
 *  - every message present has exactly the content of its append, seqs strictly increase;
 *  - last_seq >= the last seq covered by a completed sync;
 *  - the state counters agree with the messages.
 *
 * Between steps the store is sometimes trimmed (jr__store_trim, from a random stream of its own so
 * the seeds' operations are the same with and without it): reading the active block back then
 * meets the same crashes and injected failures.
 *
 * Seeds: STORE_CRASH_SEEDS (default 1000) starting at STORE_CRASH_FIRST (default 1). The 'soak'
 * suite runs the same binary with many more. A failure names the seed and life; replay with
 * STORE_CRASH_FIRST=<seed> STORE_CRASH_SEEDS=1 (add STORE_CRASH_DEBUG=1 to print the syncs and
 * the records of every block after each crash).
 */
#include <stdlib.h>

#include "fixture.h"
#include "store/block.h"
#include "store/srecord.h"
#include "util/checksum.h"
#include "util/rand.h"

#define MAXSEQ 4096

typedef struct model {
    uint32_t nonce[MAXSEQ]; /* content of the latest append attempt of each seq */
    uint16_t len[MAXSEQ];
    uint8_t subj[MAXSEQ];
    uint8_t attempted[MAXSEQ];
    uint8_t live_sync[MAXSEQ]; /* live at the last completed sync */
    uint8_t gone[MAXSEQ];      /* seen not live (or maybe deleted) since the last completed sync */
    uint64_t sync_last;        /* last_seq at the last completed sync */
    uint64_t max_attempt;
} model;

static void make_data(uint8_t *d, size_t len, uint64_t seq, uint32_t nonce)
{
    uint64_t x = seq * 0x9e3779b97f4a7c15ULL ^ nonce;
    for (size_t i = 0; i < len; i++) d[i] = (uint8_t)(jr__splitmix64(&x) >> 56);
}

/* Live seqs according to the store's own state and delete ranges. */
static void live_set(jr__store *st, uint8_t *live)
{
    jr__store_state s;
    jr__store_state_get(st, &s);
    memset(live, 0, MAXSEQ);
    if (!s.msgs) return;
    for (uint64_t q = s.first_seq; q <= s.last_seq && q < MAXSEQ; q++) live[q] = 1;
    size_t n;
    const jr__seq_range *r = jr__store_deleted(st, &n);
    for (size_t i = 0; i < n; i++)
        for (uint64_t q = r[i].lo; q <= r[i].hi && q < MAXSEQ; q++) live[q] = 0;
}

/* After an operation: whatever is not live now counts as gone since the last sync. */
static void observe(model *m, jr__store *st)
{
    static uint8_t live[MAXSEQ];
    live_set(st, live);
    for (uint64_t q = 1; q < MAXSEQ; q++)
        if (!live[q]) m->gone[q] = 1;
}

static void synced(model *m, jr__store *st)
{
    live_set(st, m->live_sync);
    memset(m->gone, 0, sizeof m->gone);
    jr__store_state s;
    jr__store_state_get(st, &s);
    m->sync_last = s.last_seq;
}

#define CHECK(cond, ...) ck_assert_msg(cond, "seed %llu life %d: " __VA_ARGS__)

static void verify(model *m, jr__store *st, unsigned long long seed, int life)
{
    jr__store_state s;
    jr__store_state_get(st, &s);
    CHECK(s.last_seq >= m->sync_last, "last_seq %llu < synced %llu", seed, life,
          (unsigned long long)s.last_seq, (unsigned long long)m->sync_last);
    CHECK(s.last_seq <= m->max_attempt, "last_seq %llu beyond any append", seed, life,
          (unsigned long long)s.last_seq);
    static uint8_t present[MAXSEQ];
    memset(present, 0, sizeof present);
    uint64_t prev = 0, n = 0, bytes = 0;
    jr__store_msg msg;
    uint8_t buf[4096];
    int rc;
    for (uint64_t q = 1; (rc = jr__store_next(st, q, NULL, 0, &msg)) == 0; q = msg.seq + 1) {
        uint64_t seq = msg.seq;
        CHECK(seq > prev && seq < MAXSEQ, "seq %llu after %llu", seed, life,
              (unsigned long long)seq, (unsigned long long)prev);
        CHECK(m->attempted[seq], "seq %llu was never appended", seed, life,
              (unsigned long long)seq);
        CHECK(!(seq <= m->sync_last && !m->live_sync[seq]),
              "seq %llu deleted before the last sync is back", seed, life, (unsigned long long)seq);
        char subj[8];
        snprintf(subj, sizeof subj, "c.%u", m->subj[seq]);
        CHECK(msg.subject_len == strlen(subj) && memcmp(msg.subject, subj, msg.subject_len) == 0,
              "seq %llu: wrong subject", seed, life, (unsigned long long)seq);
        make_data(buf, m->len[seq], seq, m->nonce[seq]);
        CHECK(msg.data_len == m->len[seq] && memcmp(msg.data, buf, msg.data_len) == 0,
              "seq %llu: wrong content", seed, life, (unsigned long long)seq);
        present[seq] = 1;
        prev = seq;
        n++;
        bytes += 36 + msg.subject_len + msg.data_len;
    }
    CHECK(rc == JR_ENOTFOUND, "iteration failed: %s (%s)", seed, life, jr_strerror(rc),
          jr__store_errmsg(st));
    for (uint64_t q = 1; q <= m->sync_last && q < MAXSEQ; q++)
        CHECK(present[q] || !m->live_sync[q] || m->gone[q], "synced seq %llu lost", seed, life,
              (unsigned long long)q);
    CHECK(s.msgs == n && s.bytes == bytes, "counters %llu/%llu vs %llu/%llu", seed, life,
          (unsigned long long)s.msgs, (unsigned long long)s.bytes, (unsigned long long)n,
          (unsigned long long)bytes);
    if (n) CHECK(s.num_deleted == s.last_seq - s.first_seq + 1 - n, "num_deleted", seed, life);
}

static const int fail_ops[] = {JR__MEMFS_PWRITE,   JR__MEMFS_SYNC, JR__MEMFS_RENAME,
                               JR__MEMFS_REMOVE,   JR__MEMFS_OPEN, JR__MEMFS_SYNC_DIR,
                               JR__MEMFS_TRUNCATE, JR__MEMFS_PREAD};

static int dbg_list(void *arg, const char *name)
{
    (void)arg;
    fprintf(stderr, "    file %s\n", name);
    return 0;
}

/* Prints the records of every block file (STORE_CRASH_DEBUG). */
static void dump_blocks(jr_vfs *vfs)
{
    for (uint32_t id = 1; id < 400; id++) {
        char path[64];
        snprintf(path, sizeof path, "/store/ORDERS/%010u.blk", id);
        uint8_t *d;
        size_t l;
        if (jr__memfs_read_all(vfs, path, &d, &l) == 0) {
            fprintf(stderr, "  after crash: %s %zu bytes:", path, l);
            jr__blk_info info;
            jr__buf b;
            jr__buf_init(&b, NULL);
            jr__blk_key k;
            jr__blk_derive_key(test_master_key, "ORDERS", &k);
            int drc = jr__blk_decode(d, l, &k, &b, &info);
            jr__srec rr;
            size_t rl;
            for (size_t o = 0; o < info.plain_len; o += rl) {
                if (jr__srec_decode(info.plain + o, info.plain_len - o, 0, &rr, &rl)) break;
                fprintf(stderr, " %c%llu", "?MDSEK"[rr.type], (unsigned long long)rr.seq);
                if (rr.type == JR__SREC_DEL) fprintf(stderr, "-%llu", (unsigned long long)rr.ts);
                if (rr.type == JR__SREC_MARK) fprintf(stderr, "@%llu", (unsigned long long)rr.ts);
            }
            fprintf(stderr, " (rc %d)\n", drc);
            jr__buf_free(&b);
            jr__memfs_release(vfs, d);
        }
    }
}

static void run_seed(uint64_t seed)
{
    static model m;
    memset(&m, 0, sizeof m);
    jr__rand r, tr;
    jr__rand_seed(&r, seed);
    jr__rand_seed(&tr, seed ^ 0x7472696dULL);
    fx f;
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(jr__memfs_new(NULL, seed, &f.vfs), 0);
    ck_assert_int_eq(f.vfs->mkdir(f.vfs->ctx, "/store"), 0);
    fx_config(&f, CONF_FILE + (int)(seed % 4), 512 + jr__rand_below(&r, 3000));
    if (jr__rand_below(&r, 4) == 0) f.cfg.limits.max_msgs = 20 + jr__rand_below(&r, 60);
    if (jr__rand_below(&r, 5) == 0) f.cfg.limits.max_msgs_per_subject = 1 + jr__rand_below(&r, 8);
    int rc = fx_open(&f);
    ck_assert_msg(rc == 0, "seed %llu: open: %s", (unsigned long long)seed, f.err);
    uint8_t data[2100];
    for (int life = 0; life < 4; life++) {
        int steps = 10 + (int)jr__rand_below(&r, 120);
        int fail_at = jr__rand_below(&r, 2) ? (int)jr__rand_below(&r, (uint64_t)steps) : -1;
        for (int step = 0; step < steps; step++) {
            if (step == fail_at)
                jr__memfs_fail(f.vfs, fail_ops[jr__rand_below(&r, 8)], 1 + jr__rand_below(&r, 6),
                               JR_EIO, 1, NULL);
            jr__store_state s;
            jr__store_state_get(f.st, &s);
            uint64_t op = jr__rand_below(&r, 100);
            if (op < 62) {
                uint64_t seq = s.last_seq + 1;
                if (seq >= MAXSEQ - 1) break;
                size_t len = jr__rand_below(&r, 10) == 0 ? 1000 + jr__rand_below(&r, 1000)
                                                         : jr__rand_below(&r, 300);
                m.subj[seq] = (uint8_t)jr__rand_below(&r, 6);
                m.len[seq] = (uint16_t)len;
                m.nonce[seq] = (uint32_t)jr__rand_next(&r);
                m.attempted[seq] = 1;
                if (seq > m.max_attempt) m.max_attempt = seq;
                make_data(data, len, seq, m.nonce[seq]);
                char subj[8];
                snprintf(subj, sizeof subj, "c.%u", m.subj[seq]);
                rc = jr__store_append(f.st, seq, subj, strlen(subj), NULL, 0, data, len,
                                      (int64_t)seq, NULL);
                if (rc) m.gone[seq] = 1;
            } else if (op < 75) {
                uint64_t q = s.first_seq + jr__rand_below(&r, s.last_seq - s.first_seq + 2);
                rc = jr__store_delete(f.st, q, jr__rand_below(&r, 6) == 0);
                if (rc == JR_ENOTFOUND) rc = 0;
                if (rc && q < MAXSEQ) m.gone[q] = 1;
            } else if (op < 80) {
                jr__purge p = {0};
                char subj[8];
                snprintf(subj, sizeof subj, "c.%u", (unsigned)jr__rand_below(&r, 6));
                switch (jr__rand_below(&r, 4)) {
                case 0:
                    break;
                case 1:
                    p.filter = subj;
                    p.filter_len = strlen(subj);
                    break;
                case 2:
                    p.seq = s.first_seq + jr__rand_below(&r, 30);
                    break;
                case 3:
                    p.keep = jr__rand_below(&r, 30);
                    break;
                }
                rc = jr__store_purge(f.st, &p, NULL);
                if (rc) memset(m.gone, 1, sizeof m.gone); /* anything may be gone */
            } else {
                rc = jr__store_sync(f.st);
                if (!rc) synced(&m, f.st);
                if (getenv("STORE_CRASH_DEBUG"))
                    fprintf(stderr, "  sync rc %d last %llu\n", rc,
                            (unsigned long long)m.sync_last);
            }
            observe(&m, f.st);
            if (rc) break; /* the machine dies with its first I/O error */
            if (jr__rand_below(&tr, 4) == 0) ck_assert_int_eq(jr__store_trim(f.st), 0);
        }
        /* crash: power loss, the process is gone */
        if (getenv("STORE_CRASH_DEBUG")) {
            jr__memfs_stats ms;
            jr__memfs_stats_get(f.vfs, &ms);
            fprintf(stderr, "  before crash: files %llu dirsyncs %llu syncs %llu\n",
                    (unsigned long long)ms.files, (unsigned long long)ms.dir_syncs,
                    (unsigned long long)ms.syncs);
            f.vfs->list(f.vfs->ctx, "/store/ORDERS", dbg_list, NULL);
        }
        jr__memfs_crash(f.vfs, (int)jr__rand_below(&r, 2));
        jr__memfs_fail_clear(f.vfs);
        jr__store_abandon(f.st);
        f.st = NULL;
        if (getenv("STORE_CRASH_DEBUG")) dump_blocks(f.vfs);
        rc = fx_open(&f);
        ck_assert_msg(rc == 0, "seed %llu life %d: reopen failed: %s: %s", (unsigned long long)seed,
                      life, jr_strerror(rc), f.err);
        verify(&m, f.st, (unsigned long long)seed, life);
        /* the recovered store is the new baseline */
        synced(&m, f.st);
        jr__store_state s;
        jr__store_state_get(f.st, &s);
        CHECK(jr__store_durable_seq(f.st) == s.last_seq, "durable seq after open",
              (unsigned long long)seed, life);
    }
    fx_done(&f);
}

/* Regression (followups store #1): a discard-old removal of the front is recorded lazily; a
 * later delete must not reach the disk without it. Block 1 holds seqs 1-6 and is synced when
 * seq 7 rotates it; block 2 (seq 7) is lost at the crash. Before the fix seq 1 came back (its
 * removal was never written) and, under the limit, was never removed again. */
START_TEST(front_removal_is_never_overtaken_by_a_later_delete)
{
    for (int conf = CONF_FILE; conf < NCONF; conf++) {
        jr__store_limits lim = {.max_msgs = 5, .discard = JR__DISCARD_OLD};
        fx f;
        fx_init(&f, conf, &lim, 7);
        for (uint64_t q = 1; q <= 5; q++)
            ck_assert_int_eq(jr__store_append(f.st, q, "a", 1, NULL, 0, "x", 1, (int64_t)q, NULL),
                             0);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_append(f.st, 6, "a", 1, NULL, 0, "x", 1, 6, NULL), 0);
        for (uint64_t q = 3; q <= 6; q++) ck_assert_int_eq(jr__store_delete(f.st, q, 0), 0);
        static char big[4000];
        memset(big, 'y', sizeof big);
        ck_assert_int_eq(jr__store_append(f.st, 7, "a", 1, NULL, 0, big, sizeof big, 7, NULL), 0);
        jr__store_abandon(f.st);
        f.st = NULL;
        jr__memfs_crash(f.vfs, 0);
        int rc = fx_open(&f);
        ck_assert_msg(rc == 0, "%s: reopen: %s", conf_names[conf], f.err);
        jr__store_msg m;
        ck_assert_msg(jr__store_get(f.st, 1, &m) == JR_ENOTFOUND, "%s: seq 1 is back",
                      conf_names[conf]);
        ck_assert_int_eq(jr__store_get(f.st, 2, &m), 0);
        for (uint64_t q = 3; q <= 6; q++)
            ck_assert_int_eq(jr__store_get(f.st, q, &m), JR_ENOTFOUND);
        jr__store_state st;
        jr__store_state_get(f.st, &st);
        ck_assert_uint_eq(st.first_seq, 2);
        ck_assert_uint_ge(st.last_seq, 6);
        fx_done(&f);
    }
}
END_TEST

/* A delete of the first message is recorded at once (not lazily like a discard-old removal):
 * a later append made durable by a rotation never comes back with it. */
START_TEST(front_delete_is_recorded_before_later_writes)
{
    for (int conf = CONF_FILE; conf < NCONF; conf++) {
        fx f;
        fx_init(&f, conf, NULL, 8);
        for (uint64_t q = 1; q <= 3; q++)
            ck_assert_int_eq(jr__store_append(f.st, q, "a", 1, NULL, 0, "x", 1, (int64_t)q, NULL),
                             0);
        ck_assert_int_eq(jr__store_sync(f.st), 0);
        ck_assert_int_eq(jr__store_delete(f.st, 1, 0), 0);
        static char big[4000];
        memset(big, 'y', sizeof big);
        ck_assert_int_eq(jr__store_append(f.st, 4, "a", 1, NULL, 0, big, sizeof big, 4, NULL), 0);
        ck_assert_int_eq(jr__store_append(f.st, 5, "a", 1, NULL, 0, big, sizeof big, 5, NULL), 0);
        jr__store_abandon(f.st);
        f.st = NULL;
        jr__memfs_crash(f.vfs, 0);
        ck_assert_int_eq(fx_open(&f), 0);
        jr__store_msg m;
        ck_assert_int_eq(jr__store_get(f.st, 4, &m), 0); /* synced by the rotation */
        ck_assert_msg(jr__store_get(f.st, 1, &m) == JR_ENOTFOUND, "%s: seq 1 is back",
                      conf_names[conf]);
        fx_done(&f);
    }
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Marked stores: after any crash the store is exactly the one of its last durable mark.
 *
 * Same random lives as above, plus marks (with keys and floors, store.h "Marks") and limits set
 * after each open. At every mark the test records an image of what a reader sees (state, and a
 * checksum per live seq); after each crash the reopened store must equal the image of the last
 * completed mark — or of the mark that was being written when the machine died, if that one
 * reached the disk — and the kept marks must be exactly the completed marks whose key reaches
 * the floor of the last one, in order, with their meta.
 */

typedef struct image {
    uint64_t index; /* of the mark (0: none yet) */
    jr__store_state st;
    uint64_t sum[MAXSEQ]; /* 0: not live */
} image;

typedef struct mmark {
    uint64_t index, key, floor;
} mmark;

static uint64_t msum(const jr__store_msg *m)
{
    uint64_t h = jr__xxh3(m->subject, m->subject_len);
    return jr__xxh3_2(&h, sizeof h, m->data, m->data_len) | 1;
}

/* The image of the store now: its live seqs from its state and delete ranges (no reads: a
 * scheduled I/O failure may be pending), their content from what was appended (sums). */
static void take_image(jr__store *st, image *im, uint64_t index, const uint64_t *sums)
{
    static uint8_t live[MAXSEQ];
    live_set(st, live);
    im->index = index;
    jr__store_state_get(st, &im->st);
    for (uint64_t q = 0; q < MAXSEQ; q++) im->sum[q] = live[q] ? sums[q] : 0;
}

static void mark_meta(uint64_t index, uint8_t *meta, size_t *len)
{
    uint64_t x = index;
    *len = (size_t)(index * 37 % 150);
    for (size_t i = 0; i < *len; i++) meta[i] = (uint8_t)(jr__splitmix64(&x) >> 40);
}

static void verify_image(jr__store *st, const image *im, unsigned long long seed, int life)
{
    jr__store_state s;
    jr__store_state_get(st, &s);
    CHECK(s.msgs == im->st.msgs && s.bytes == im->st.bytes && s.first_seq == im->st.first_seq &&
              s.last_seq == im->st.last_seq && s.num_deleted == im->st.num_deleted &&
              s.num_subjects == im->st.num_subjects,
          "state differs from mark %llu: msgs %llu/%llu last %llu/%llu first %llu/%llu", seed, life,
          (unsigned long long)im->index, (unsigned long long)s.msgs,
          (unsigned long long)im->st.msgs, (unsigned long long)s.last_seq,
          (unsigned long long)im->st.last_seq, (unsigned long long)s.first_seq,
          (unsigned long long)im->st.first_seq);
    jr__store_msg m;
    uint64_t n = 0;
    if (getenv("STORE_CRASH_DEBUG")) {
        fprintf(stderr, "  image of mark %llu:", (unsigned long long)im->index);
        for (uint64_t q = 1; q < MAXSEQ; q++)
            if (im->sum[q]) fprintf(stderr, " %llu", (unsigned long long)q);
        fprintf(stderr, "\n  store:");
        for (uint64_t q = 1; jr__store_next(st, q, NULL, 0, &m) == 0; q = m.seq + 1)
            fprintf(stderr, " %llu%s", (unsigned long long)m.seq,
                    m.seq < MAXSEQ && im->sum[m.seq] == msum(&m) ? "" : "!");
        fprintf(stderr, "\n");
    }
    for (uint64_t q = 1; jr__store_next(st, q, NULL, 0, &m) == 0; q = m.seq + 1) {
        CHECK(m.seq < MAXSEQ && im->sum[m.seq] == msum(&m), "seq %llu differs from mark %llu", seed,
              life, (unsigned long long)m.seq, (unsigned long long)im->index);
        n++;
    }
    CHECK(n == im->st.msgs, "%llu messages, mark %llu had %llu", seed, life, (unsigned long long)n,
          (unsigned long long)im->index, (unsigned long long)im->st.msgs);
}

static void run_marked_seed(uint64_t seed)
{
    static image last, attempt;
    static mmark marks[4096];
    static uint64_t sums[MAXSEQ];
    size_t nmarks = 0;
    memset(&last, 0, sizeof last);
    jr__rand r, tr;
    jr__rand_seed(&r, seed ^ 0x6d61726bULL);
    jr__rand_seed(&tr, seed ^ 0x7472696dULL);
    fx f;
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(jr__memfs_new(NULL, seed, &f.vfs), 0);
    ck_assert_int_eq(f.vfs->mkdir(f.vfs->ctx, "/store"), 0);
    fx_config(&f, CONF_FILE + (int)(seed % 4), 512 + jr__rand_below(&r, 3000));
    f.cfg.marked = 1;
    jr__store_limits lim = {0};
    if (jr__rand_below(&r, 3) == 0) lim.max_msgs = 10 + jr__rand_below(&r, 60);
    if (jr__rand_below(&r, 5) == 0) lim.max_msgs_per_subject = 1 + jr__rand_below(&r, 8);
    int rc = fx_open(&f);
    ck_assert_msg(rc == 0, "seed %llu: open: %s", (unsigned long long)seed, f.err);
    memset(sums, 0, sizeof sums);
    take_image(f.st, &last, 0, sums); /* no mark yet: reopens empty */
    uint8_t data[2100], meta[160];
    uint64_t next_index = 1, keys = 0, floor = 0;
    for (int life = 0; life < 5; life++) {
        ck_assert_int_eq(jr__store_set_limits(f.st, &lim), 0);
        int attempting = 0;
        int steps = 10 + (int)jr__rand_below(&r, 150);
        int fail_at = jr__rand_below(&r, 2) ? (int)jr__rand_below(&r, (uint64_t)steps) : -1;
        for (int step = 0; step < steps; step++) {
            if (step == fail_at)
                jr__memfs_fail(f.vfs, fail_ops[jr__rand_below(&r, 8)], 1 + jr__rand_below(&r, 6),
                               JR_EIO, 1, NULL);
            jr__store_state s;
            jr__store_state_get(f.st, &s);
            uint64_t op = jr__rand_below(&r, 100);
            if (op < 55) {
                uint64_t seq = s.last_seq + 1;
                if (seq >= MAXSEQ - 1) break;
                size_t len = jr__rand_below(&r, 10) == 0 ? 1000 + jr__rand_below(&r, 1000)
                                                         : jr__rand_below(&r, 300);
                make_data(data, len, seq, (uint32_t)jr__rand_next(&r));
                char subj[8];
                snprintf(subj, sizeof subj, "c.%u", (unsigned)jr__rand_below(&r, 6));
                rc = jr__store_append(f.st, seq, subj, strlen(subj), NULL, 0, data, len,
                                      (int64_t)seq, NULL);
                jr__store_msg m = {
                    .subject = subj, .subject_len = strlen(subj), .data = data, .data_len = len};
                sums[seq] = msum(&m);
            } else if (op < 68) {
                uint64_t q = s.first_seq + jr__rand_below(&r, s.last_seq - s.first_seq + 2);
                rc = jr__store_delete(f.st, q, jr__rand_below(&r, 5) == 0);
                if (rc == JR_ENOTFOUND) rc = 0;
            } else if (op < 73) {
                jr__purge p = {0};
                char subj[8];
                snprintf(subj, sizeof subj, "c.%u", (unsigned)jr__rand_below(&r, 6));
                switch (jr__rand_below(&r, 4)) {
                case 0:
                    break;
                case 1:
                    p.filter = subj;
                    p.filter_len = strlen(subj);
                    break;
                case 2:
                    p.seq = s.first_seq + jr__rand_below(&r, 30);
                    break;
                case 3:
                    p.keep = jr__rand_below(&r, 30);
                    break;
                }
                rc = jr__store_purge(f.st, &p, NULL);
            } else if (op < 80) {
                rc = jr__store_sync(f.st);
            } else {
                uint64_t index = next_index++;
                uint64_t key = jr__rand_below(&r, 3) == 0 ? 0 : ++keys;
                floor += jr__rand_below(&r, keys + 2 - floor);
                size_t ml;
                mark_meta(index, meta, &ml);
                take_image(f.st, &attempt, index, sums);
                rc = jr__store_mark(f.st, index, meta, ml, key, floor);
                if (rc) {
                    attempting = 1;
                    marks[nmarks] = (mmark){index, key, floor}; /* if it reached the disk */
                } else {
                    memcpy(&last, &attempt, sizeof last);
                    marks[nmarks++] = (mmark){index, key, floor};
                }
            }
            if (getenv("STORE_CRASH_DEBUG"))
                fprintf(stderr, "  life %d step %d op %llu rc %d last %llu msgs %llu\n", life, step,
                        (unsigned long long)op, rc, (unsigned long long)s.last_seq,
                        (unsigned long long)s.msgs);
            if (rc) break; /* the machine dies with its first I/O error */
            if (jr__rand_below(&tr, 4) == 0) ck_assert_int_eq(jr__store_trim(f.st), 0);
        }
        jr__memfs_crash(f.vfs, (int)jr__rand_below(&r, 2));
        jr__memfs_fail_clear(f.vfs);
        jr__store_abandon(f.st);
        f.st = NULL;
        if (getenv("STORE_CRASH_DEBUG")) dump_blocks(f.vfs);
        rc = fx_open(&f);
        ck_assert_msg(rc == 0, "seed %llu life %d: reopen failed: %s: %s", (unsigned long long)seed,
                      life, jr_strerror(rc), f.err);
        uint64_t at = jr__store_mark_index(f.st);
        if (attempting && at == attempt.index) {
            memcpy(&last, &attempt, sizeof last);
            nmarks++;
        }
        CHECK(at == last.index, "reopened at mark %llu, the last durable one is %llu",
              (unsigned long long)seed, life, (unsigned long long)at,
              (unsigned long long)last.index);
        verify_image(f.st, &last, (unsigned long long)seed, life);
        jr__store_state s;
        jr__store_state_get(f.st, &s);
        CHECK(jr__store_durable_seq(f.st) == s.last_seq, "durable seq after open",
              (unsigned long long)seed, life);
        /* the marks kept: exactly the completed ones whose key reaches the last floor */
        jr__store_mark_rec mr;
        if (!last.index) {
            CHECK(jr__store_last_mark(f.st, &mr) == JR_ENOTFOUND, "a mark without marks",
                  (unsigned long long)seed, life);
            continue;
        }
        CHECK(jr__store_last_mark(f.st, &mr) == 0 && mr.index == last.index, "last mark",
              (unsigned long long)seed, life);
        floor = marks[nmarks - 1].floor;
        size_t cur = 0, k = 0;
        while ((rc = jr__store_marks_next(f.st, &cur, &mr)) == 0) {
            while (k < nmarks && !(marks[k].key && marks[k].key >= floor)) k++;
            CHECK(k < nmarks && mr.index == marks[k].index && mr.key == marks[k].key,
                  "kept mark %llu unexpected", (unsigned long long)seed, life,
                  (unsigned long long)mr.index);
            size_t ml;
            mark_meta(mr.index, meta, &ml);
            CHECK(mr.meta_len == ml && memcmp(mr.meta, meta, ml) == 0, "meta of mark %llu",
                  (unsigned long long)seed, life, (unsigned long long)mr.index);
            k++;
        }
        CHECK(rc == JR_ENOTFOUND, "reading kept marks: %s", (unsigned long long)seed, life,
              jr_strerror(rc));
        while (k < nmarks && !(marks[k].key && marks[k].key >= floor)) k++;
        CHECK(k == nmarks, "kept mark %llu missing", (unsigned long long)seed, life,
              (unsigned long long)marks[k].index);
    }
    fx_done(&f);
}

START_TEST(marked_crash_consistency)
{
    const char *e = getenv("STORE_CRASH_SEEDS");
    const char *fs = getenv("STORE_CRASH_FIRST");
    uint64_t n = e ? strtoull(e, NULL, 10) : 1000;
    uint64_t first = fs ? strtoull(fs, NULL, 10) : 1;
    for (uint64_t seed = first; seed < first + n; seed++) run_marked_seed(seed);
}
END_TEST

START_TEST(crash_consistency)
{
    const char *e = getenv("STORE_CRASH_SEEDS");
    const char *fs = getenv("STORE_CRASH_FIRST");
    uint64_t n = e ? strtoull(e, NULL, 10) : 1000;
    uint64_t first = fs ? strtoull(fs, NULL, 10) : 1;
    for (uint64_t seed = first; seed < first + n; seed++) run_seed(seed);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc > 1) setenv("STORE_CRASH_SEEDS", argv[1], 0);
    Suite *s = suite_create("store-crash");
    TCase *tc = tcase_create("crash");
    tcase_set_timeout(tc, 3600);
    tcase_add_test(tc, front_removal_is_never_overtaken_by_a_later_delete);
    tcase_add_test(tc, front_delete_is_recorded_before_later_writes);
    tcase_add_test(tc, crash_consistency);
    tcase_add_test(tc, marked_crash_consistency);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
