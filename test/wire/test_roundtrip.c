/* Every Raft message type survives encode → validate → decode unchanged, at boundary values; the
 * encoder refuses what a peer would reject; encoding reuses its buffer. */
#include <string.h>

#include "wire_test.h"

static const uint64_t edge[] = {0,         1, 127, 128, 16383, 16384, UINT32_MAX, UINT64_MAX - 1,
                                UINT64_MAX};
#define NEDGE (sizeof edge / sizeof edge[0])

START_TEST(sample_frame_with_every_type_decodes_and_is_canonical)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    size_t ends[16];
    size_t n = tw_sample_frame(&b, ends, 16);
    ck_assert_uint_eq(n, 11);
    ck_assert_int_eq(tw_check_canonical(b.data, b.len), 0);
    jr__buf_free(&b);
}
END_TEST

/* Every numeric field of every type set to an edge value, with every flag combination. */
START_TEST(every_type_roundtrips_at_edge_values)
{
    uint64_t v = edge[_i];
    uint64_t group = v ? v : 1;
    static const uint8_t byte = 0xab;
    jr__entry e = {.term = v, .index = 0, .type = JR__ENTRY_CONFIG, .len = 1, .data = &byte};
    jr__msg m[12];
    static const uint8_t conf[10] = {1, 1, 0, 0, 0, 0, 0, 0, 0, 1};
    for (uint8_t flags = 0; flags <= JR__MF_PREVOTE + JR__MF_TRANSFER + JR__MF_DURABLE; flags++) {
        m[0] = tw_msg(JR__MSG_VOTE, group, v);
        m[0].u.vote.last_index = v;
        m[0].u.vote.last_term = v;
        m[1] = tw_msg(JR__MSG_VOTE_RESP, group, v);
        m[1].u.vote_resp.granted = (uint8_t)(v & 1);
        m[2] = tw_msg(JR__MSG_APPEND, group, v);
        m[2].u.append.prev_index = v;
        m[2].u.append.prev_term = v;
        m[2].u.append.commit = v;
        m[3] = tw_msg(JR__MSG_APPEND, group, v);
        m[3].u.append.prev_index = v == UINT64_MAX ? v - 1 : v; /* last index = UINT64_MAX */
        m[3].u.append.prev_term = v;
        m[3].u.append.commit = v;
        m[3].u.append.n = 1;
        e.index = m[3].u.append.prev_index + 1;
        m[3].u.append.entries = &e;
        m[4] = tw_msg(JR__MSG_APPEND_RESP, group, v);
        m[4].u.append_resp.success = 1;
        m[4].u.append_resp.index = v;
        m[4].u.append_resp.hint_index = v;
        m[4].u.append_resp.hint_term = v;
        m[5] = tw_msg(JR__MSG_HEARTBEAT, group, v);
        m[5].u.heartbeat.commit = v;
        m[6] = tw_msg(JR__MSG_HEARTBEAT_RESP, group, v);
        m[6].u.heartbeat_resp.match_hint = v;
        m[7] = tw_msg(JR__MSG_SNAP, group, v);
        m[7].u.snap.index = v;
        m[7].u.snap.sterm = v;
        m[7].u.snap.offset = v;
        m[7].u.snap.total = v;
        m[7].u.snap.done = 1;
        m[8] = tw_msg(JR__MSG_SNAP_RESP, group, v);
        m[8].u.snap_resp.index = v;
        m[8].u.snap_resp.offset = v;
        m[8].u.snap_resp.done = 1;
        m[8].u.snap_resp.reject = 1;
        m[9] = tw_msg(JR__MSG_TIMEOUT_NOW, group, v);
        m[10] = tw_msg(JR__MSG_VOUCH, group, v);
        m[10].u.vouch.last_index = v;
        m[10].u.vouch.last_term = v;
        m[11] = tw_msg(JR__MSG_VOUCH_RESP, group, v);
        m[11].u.vouch_resp.leader = 1;
        m[11].u.vouch_resp.unfloored = 1;
        m[11].u.vouch_resp.last_index = v;
        m[11].u.vouch_resp.last_term = v;
        m[11].u.vouch_resp.commit = v;
        m[11].u.vouch_resp.conf_index = v;
        m[11].u.vouch_resp.conf = conf;
        m[11].u.vouch_resp.conf_len = sizeof conf;
        if (v & 1) { /* every other one with the configuration at its commit index */
            m[11].u.vouch_resp.cconf_index = v;
            m[11].u.vouch_resp.cconf = conf;
            m[11].u.vouch_resp.cconf_len = sizeof conf;
        }
        for (int i = 0; i < 12; i++) m[i].flags = flags;
        tw_roundtrip(m, 12);
    }
}
END_TEST

START_TEST(booleans_are_sent_as_zero_or_one)
{
    jr__msg m[3];
    m[0] = tw_msg(JR__MSG_VOTE_RESP, 1, 1);
    m[0].u.vote_resp.granted = 200;
    m[1] = tw_msg(JR__MSG_APPEND_RESP, 1, 1);
    m[1].u.append_resp.success = 2;
    m[2] = tw_msg(JR__MSG_SNAP_RESP, 1, 1);
    m[2].u.snap_resp.done = 9;
    m[2].u.snap_resp.reject = 0;
    tw_roundtrip(m, 3); /* the comparison maps non-zero to 1 */
}
END_TEST

START_TEST(append_entries_empty_small_large_and_many)
{
    static uint8_t big[1 << 20];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 31 + 7);
    enum { MANY = 3000 };
    jr__entry *e = malloc(MANY * sizeof *e);
    /* empty append */
    jr__msg m = tw_msg(JR__MSG_APPEND, 9, 4);
    m.u.append.prev_index = 10;
    m.u.append.prev_term = 3;
    tw_roundtrip(&m, 1);
    /* entries with empty data, a large one, and terms jumping to UINT64_MAX */
    e[0] = (jr__entry){.term = 3, .index = 11, .type = JR__ENTRY_NOOP, .len = 0, .data = NULL};
    e[1] = (jr__entry){.term = 4, .index = 12, .type = JR__ENTRY_NORMAL, .len = 0, .data = NULL};
    e[2] = (jr__entry){
        .term = 4, .index = 13, .type = JR__ENTRY_NORMAL, .len = sizeof big, .data = big};
    e[3] = (jr__entry){
        .term = UINT64_MAX, .index = 14, .type = JR__ENTRY_CONFIG, .len = 3, .data = big};
    m.u.append.n = 4;
    m.u.append.entries = e;
    tw_roundtrip(&m, 1);
    /* many 128 B entries */
    for (uint32_t i = 0; i < MANY; i++)
        e[i] = (jr__entry){.term = 4 + i / 1000, .index = 11 + i, .len = 128, .data = big + i};
    m.u.append.n = MANY;
    tw_roundtrip(&m, 1);
    free(e);
}
END_TEST

START_TEST(snapshot_with_max_members_conf)
{
    /* the raft.h configuration encoding: varint n, then n × (u64 id, u8 voter) */
    uint8_t conf[1 + JR__MAX_MEMBERS * 9];
    size_t k = 0;
    conf[k++] = JR__MAX_MEMBERS;
    for (unsigned i = 0; i < JR__MAX_MEMBERS; i++) {
        jr__put_u64(conf + k, 0x9e3779b97f4a7c15ULL * (i + 1));
        conf[k + 8] = i % 3 != 0;
        k += 9;
    }
    ck_assert_uint_le(k, JR__FRAME_MAX_CONF);
    static uint8_t chunk[256 << 10];
    for (size_t i = 0; i < sizeof chunk; i++) chunk[i] = (uint8_t)(i ^ (i >> 8));
    jr__msg m[4];
    m[0] = tw_msg(JR__MSG_SNAP, 77, 12);
    m[0].u.snap.index = 123456789;
    m[0].u.snap.sterm = 11;
    m[0].u.snap.offset = 0;
    m[0].u.snap.total = 3 * sizeof chunk;
    m[0].u.snap.conf_len = (uint32_t)k;
    m[0].u.snap.conf = conf;
    m[0].u.snap.len = sizeof chunk;
    m[0].u.snap.data = chunk;
    m[1] = m[0];
    m[1].u.snap.offset = 2 * sizeof chunk;
    m[1].u.snap.done = 1;
    m[2] = m[0]; /* a chunk ending at UINT64_MAX */
    m[2].u.snap.total = UINT64_MAX;
    m[2].u.snap.offset = UINT64_MAX - sizeof chunk;
    m[2].u.snap.done = 1;
    m[3] = m[0]; /* as raft sends them: total unknown (0) until the last chunk */
    m[3].u.snap.total = 0;
    m[3].u.snap.offset = sizeof chunk;
    tw_roundtrip(m, 4);
}
END_TEST

START_TEST(many_groups_in_one_frame_keep_their_order)
{
    enum { N = 2000 };
    jr__msg *m = malloc(N * sizeof *m);
    static const uint8_t d[128];
    jr__entry e = {.term = 5, .index = 42, .len = sizeof d, .data = d};
    for (int i = 0; i < N; i++) {
        uint64_t g = (uint64_t)i * 7919 + 1;
        if (i % 2) {
            m[i] = tw_msg(JR__MSG_HEARTBEAT, g, 5);
            m[i].u.heartbeat.commit = (uint64_t)i;
        } else {
            m[i] = tw_msg(JR__MSG_APPEND, g, 5);
            m[i].u.append.prev_index = 41;
            m[i].u.append.prev_term = 5;
            m[i].u.append.n = 1;
            m[i].u.append.entries = &e;
        }
    }
    tw_roundtrip(m, N);
    free(m);
}
END_TEST

START_TEST(an_empty_frame_is_valid)
{
    tw_roundtrip(NULL, 0);
}
END_TEST

/* Each case breaks one rule; the encoder must refuse it (a frame peers would drop is never
 * produced). */
START_TEST(encoder_refuses_what_peers_would_reject)
{
    static const uint8_t d[4];
    jr__entry e2[2] = {{.term = 5, .index = 11, .len = 4, .data = d},
                       {.term = 5, .index = 12, .len = 4, .data = d}};
    jr__msg ok = tw_msg(JR__MSG_APPEND, 1, 5);
    ok.u.append.prev_index = 10;
    ok.u.append.prev_term = 5;
    ok.u.append.n = 2;
    ok.u.append.entries = e2;
    jr__buf b;
    jr__buf_init(&b, NULL);
    tw_encode(&b, &ok, 1);

    for (int c = 0;; c++) {
        jr__msg m = ok;
        jr__entry e[2] = {e2[0], e2[1]};
        m.u.append.entries = e;
        switch (c) {
        case 0:
            m.group = 0;
            break;
        case 1:
            m.type = 0;
            break;
        case 2:
            m.type = JR__MSG_TYPE_MAX + 1;
            break;
        case 3:
            m.type = JR__MSG_NODE_HB;
            break;
        case 4:
            m.flags = 8;
            break;
        case 5:
            m.from = 3;
            break;
        case 6:
            m.to = TW_FROM;
            break;
        case 7:
            e[1].index = 13;
            break; /* gap */
        case 8:
            e[0].index = 10;
            break;
        case 9:
            e[1].term = 4;
            break; /* term decreases */
        case 10:
            e[0].term = 4;
            break; /* below prev_term */
        case 11:
            e[0].type = 3;
            break;
        case 12:
            e[0].len = JR__FRAME_MAX_ENTRY + 1;
            break;
        case 13:
            e[0].data = NULL;
            break;
        case 14:
            m.u.append.entries = NULL;
            break;
        case 15:
            m.u.append.prev_index = UINT64_MAX - 1;
            break; /* last index overflows */
        case 16:
            m = tw_msg(JR__MSG_SNAP, 1, 1);
            m.u.snap.total = 3;
            m.u.snap.offset = 2;
            m.u.snap.len = 2; /* past total */
            m.u.snap.data = d;
            break;
        case 17:
            m = tw_msg(JR__MSG_SNAP, 1, 1);
            m.u.snap.total = 10;
            m.u.snap.len = 4;
            m.u.snap.data = d;
            m.u.snap.done = 1; /* done before the end */
            break;
        case 18:
            m = tw_msg(JR__MSG_SNAP, 1, 1);
            m.u.snap.conf_len = JR__FRAME_MAX_CONF + 1;
            m.u.snap.conf = d;
            break;
        case 19:
            m = tw_msg(JR__MSG_SNAP, 1, 1);
            m.u.snap.total = UINT64_MAX;
            m.u.snap.offset = UINT64_MAX - 1;
            m.u.snap.len = 4; /* offset + len overflows */
            m.u.snap.data = d;
            break;
        case 20:
            m = tw_msg(JR__MSG_SNAP, 1, 1);
            m.u.snap.offset = 8;
            m.u.snap.len = 4;
            m.u.snap.data = d;
            m.u.snap.done = 1; /* the last chunk must say where the snapshot ends */
            break;
        default:
            jr__buf_free(&b);
            return;
        }
        jr__frame_begin(&b, TW_FROM, TW_TO);
        jr__frame_add(&b, &m);
        ck_assert_msg(b.err == JR_EINVAL, "case %d: err %d", c, b.err);
        size_t len = b.len;
        jr__frame_add(&b, &ok); /* later writes are no-ops */
        ck_assert_uint_eq(b.len, len);
        ck_assert_int_eq(jr__frame_end(&b), JR_EINVAL);
    }
}
END_TEST

START_TEST(frame_ids_must_be_distinct_and_non_zero)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__frame_begin(&b, 0, 1);
    ck_assert_int_eq(jr__frame_end(&b), JR_EINVAL);
    jr__frame_begin(&b, 1, 0);
    ck_assert_int_eq(jr__frame_end(&b), JR_EINVAL);
    jr__frame_begin(&b, 5, 5);
    ck_assert_int_eq(jr__frame_end(&b), JR_EINVAL);
    jr__frame_begin(&b, 5, 6); /* begin resets a failed buffer */
    ck_assert_int_eq(jr__frame_end(&b), 0);
    jr__buf_free(&b);
    jr__buf_init(&b, NULL);
    ck_assert_int_eq(jr__frame_end(&b), JR_EINVAL); /* never begun */
    jr__buf_free(&b);
}
END_TEST

/* Encoding grows the buffer geometrically and then reuses it: no allocation per field, none at
 * all once warm. */
START_TEST(encoding_reuses_its_buffer)
{
    tw_counter c = {0};
    jr_allocator a = tw_counting_allocator(&c);
    jr__buf b;
    jr__buf_init(&b, &a);
    enum { N = 10000 };
    static const uint8_t d[128];
    jr__entry e[8];
    for (int i = 0; i < 8; i++)
        e[i] = (jr__entry){.term = 2, .index = 101 + i, .len = 128, .data = d};
    jr__msg m = tw_msg(JR__MSG_APPEND, 1, 2);
    m.u.append.prev_index = 100;
    m.u.append.prev_term = 2;
    m.u.append.n = 8;
    m.u.append.entries = e;
    for (int round = 0; round < 3; round++) {
        size_t before = c.mallocs + c.reallocs;
        jr__frame_begin(&b, TW_FROM, TW_TO);
        for (int i = 0; i < N; i++) {
            m.group = (uint64_t)i + 1;
            jr__frame_add(&b, &m);
        }
        ck_assert_int_eq(jr__frame_end(&b), 0);
        size_t allocs = c.mallocs + c.reallocs - before;
        if (round == 0)
            ck_assert_uint_le(allocs, 32); /* ~10 MB in doublings */
        else
            ck_assert_uint_eq(allocs, 0);
    }
    jr__buf_free(&b);
    ck_assert_uint_eq(c.frees, 1);
}
END_TEST

Suite *tw_roundtrip_suite(void)
{
    Suite *s = suite_create("wire roundtrip");
    TCase *tc = tcase_create("roundtrip");
    tcase_add_test(tc, sample_frame_with_every_type_decodes_and_is_canonical);
    tcase_add_loop_test(tc, every_type_roundtrips_at_edge_values, 0, NEDGE);
    tcase_add_test(tc, booleans_are_sent_as_zero_or_one);
    tcase_add_test(tc, append_entries_empty_small_large_and_many);
    tcase_add_test(tc, snapshot_with_max_members_conf);
    tcase_add_test(tc, many_groups_in_one_frame_keep_their_order);
    tcase_add_test(tc, an_empty_frame_is_valid);
    tcase_add_test(tc, encoder_refuses_what_peers_would_reject);
    tcase_add_test(tc, frame_ids_must_be_distinct_and_non_zero);
    tcase_add_test(tc, encoding_reuses_its_buffer);
    suite_add_tcase(s, tc);
    return s;
}
