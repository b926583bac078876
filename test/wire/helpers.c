/* Helpers shared by the lib/wire tests (see wire_test.h). */
#include <string.h>

#include "wire_test.h"

jr__msg tw_msg(uint8_t type, uint64_t group, uint64_t term)
{
    jr__msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.group = group;
    m.term = term;
    m.from = TW_FROM;
    m.to = TW_TO;
    return m;
}

static void assert_bytes_eq(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    ck_assert_uint_eq(alen, blen);
    if (alen) ck_assert_int_eq(memcmp(a, b, alen), 0);
}

void tw_assert_msg_eq(const jr__msg *w, const jr__msg *g)
{
    ck_assert_uint_eq(g->type, w->type);
    ck_assert_uint_eq(g->flags, w->flags);
    ck_assert_uint_eq(g->group, w->group);
    ck_assert_uint_eq(g->from, w->from);
    ck_assert_uint_eq(g->to, w->to);
    ck_assert_uint_eq(g->term, w->term);
    switch (w->type) {
    case JR__MSG_VOTE:
        ck_assert_uint_eq(g->u.vote.last_index, w->u.vote.last_index);
        ck_assert_uint_eq(g->u.vote.last_term, w->u.vote.last_term);
        break;
    case JR__MSG_VOTE_RESP:
        ck_assert_uint_eq(g->u.vote_resp.granted, w->u.vote_resp.granted != 0);
        break;
    case JR__MSG_APPEND:
        ck_assert_uint_eq(g->u.append.prev_index, w->u.append.prev_index);
        ck_assert_uint_eq(g->u.append.prev_term, w->u.append.prev_term);
        ck_assert_uint_eq(g->u.append.commit, w->u.append.commit);
        ck_assert_uint_eq(g->u.append.n, w->u.append.n);
        for (uint32_t i = 0; i < w->u.append.n; i++) {
            const jr__entry *a = &w->u.append.entries[i], *b = &g->u.append.entries[i];
            ck_assert_uint_eq(b->index, a->index);
            ck_assert_uint_eq(b->term, a->term);
            ck_assert_uint_eq(b->type, a->type);
            assert_bytes_eq(a->data, a->len, b->data, b->len);
        }
        break;
    case JR__MSG_APPEND_RESP:
        ck_assert_uint_eq(g->u.append_resp.success, w->u.append_resp.success != 0);
        ck_assert_uint_eq(g->u.append_resp.index, w->u.append_resp.index);
        ck_assert_uint_eq(g->u.append_resp.hint_index, w->u.append_resp.hint_index);
        ck_assert_uint_eq(g->u.append_resp.hint_term, w->u.append_resp.hint_term);
        break;
    case JR__MSG_HEARTBEAT:
        ck_assert_uint_eq(g->u.heartbeat.commit, w->u.heartbeat.commit);
        break;
    case JR__MSG_HEARTBEAT_RESP:
        ck_assert_uint_eq(g->u.heartbeat_resp.match_hint, w->u.heartbeat_resp.match_hint);
        break;
    case JR__MSG_SNAP:
        ck_assert_uint_eq(g->u.snap.index, w->u.snap.index);
        ck_assert_uint_eq(g->u.snap.sterm, w->u.snap.sterm);
        ck_assert_uint_eq(g->u.snap.offset, w->u.snap.offset);
        ck_assert_uint_eq(g->u.snap.total, w->u.snap.total);
        ck_assert_uint_eq(g->u.snap.done, w->u.snap.done != 0);
        assert_bytes_eq(w->u.snap.conf, w->u.snap.conf_len, g->u.snap.conf, g->u.snap.conf_len);
        assert_bytes_eq(w->u.snap.data, w->u.snap.len, g->u.snap.data, g->u.snap.len);
        break;
    case JR__MSG_SNAP_RESP:
        ck_assert_uint_eq(g->u.snap_resp.index, w->u.snap_resp.index);
        ck_assert_uint_eq(g->u.snap_resp.offset, w->u.snap_resp.offset);
        ck_assert_uint_eq(g->u.snap_resp.done, w->u.snap_resp.done != 0);
        ck_assert_uint_eq(g->u.snap_resp.reject, w->u.snap_resp.reject != 0);
        break;
    case JR__MSG_VOUCH:
        ck_assert_uint_eq(g->u.vouch.last_index, w->u.vouch.last_index);
        ck_assert_uint_eq(g->u.vouch.last_term, w->u.vouch.last_term);
        break;
    case JR__MSG_VOUCH_RESP:
        ck_assert_uint_eq(g->u.vouch_resp.leader, w->u.vouch_resp.leader != 0);
        ck_assert_uint_eq(g->u.vouch_resp.unfloored, w->u.vouch_resp.unfloored != 0);
        ck_assert_uint_eq(g->u.vouch_resp.last_index, w->u.vouch_resp.last_index);
        ck_assert_uint_eq(g->u.vouch_resp.last_term, w->u.vouch_resp.last_term);
        ck_assert_uint_eq(g->u.vouch_resp.commit, w->u.vouch_resp.commit);
        ck_assert_uint_eq(g->u.vouch_resp.conf_index, w->u.vouch_resp.conf_index);
        assert_bytes_eq(w->u.vouch_resp.conf, w->u.vouch_resp.conf_len, g->u.vouch_resp.conf,
                        g->u.vouch_resp.conf_len);
        ck_assert_uint_eq(g->u.vouch_resp.cconf_index, w->u.vouch_resp.cconf_index);
        assert_bytes_eq(w->u.vouch_resp.cconf, w->u.vouch_resp.cconf_len, g->u.vouch_resp.cconf,
                        g->u.vouch_resp.cconf_len);
        break;
    default:
        break;
    }
}

void tw_encode(jr__buf *b, const jr__msg *msgs, size_t n)
{
    jr__frame_begin(b, TW_FROM, TW_TO);
    for (size_t i = 0; i < n; i++) {
        size_t before = b->len;
        jr__frame_add(b, &msgs[i]);
        ck_assert_int_eq(b->err, 0);
        ck_assert_uint_eq(b->len - before, jr__frame_msg_len(&msgs[i]));
    }
    ck_assert_int_eq(jr__frame_end(b), 0);
}

void tw_roundtrip(const jr__msg *msgs, size_t n)
{
    jr__buf b;
    jr__buf_init(&b, NULL);
    tw_encode(&b, msgs, n);
    ck_assert_int_eq(jr__frame_validate(b.data, b.len, TW_MAX, TW_CAP), 0);
    jr__frame f;
    ck_assert_int_eq(jr__frame_open(&f, b.data, b.len, TW_MAX), 0);
    ck_assert_uint_eq(f.from, TW_FROM);
    ck_assert_uint_eq(f.to, TW_TO);
    ck_assert_uint_eq(f.flags, 0);
    ck_assert_int_eq(jr__frame_check(&f, TW_CAP), 0);
    jr__entry *scratch = malloc(TW_CAP * sizeof *scratch);
    jr__msg m;
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(tw_next(&f, &m, scratch, TW_CAP), 1);
        tw_assert_msg_eq(&msgs[i], &m);
        if (m.type == JR__MSG_APPEND && m.u.append.n) {
            /* zero copy: entry data points into the frame */
            const uint8_t *d = m.u.append.entries[0].data;
            ck_assert(d >= b.data && d < b.data + b.len);
        }
    }
    ck_assert_int_eq(tw_next(&f, &m, scratch, TW_CAP), 0);
    ck_assert_int_eq(tw_next(&f, &m, scratch, TW_CAP), 0);
    ck_assert_int_eq(tw_check_canonical(b.data, b.len), 0);
    free(scratch);
    jr__buf_free(&b);
}

void tw_raw_frame(jr__buf *b, const void *body, size_t n)
{
    jr__frame_begin(b, TW_FROM, TW_TO);
    jr__buf_put(b, body, n);
    ck_assert_int_eq(jr__frame_end(b), 0);
}

int tw_check_canonical(const uint8_t *data, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (len) memcpy(copy, data, len);
    size_t cap = len / 3 + 1;
    int rc = jr__frame_validate(copy, len, TW_MAX, cap);
    if (rc == 0) {
        jr__entry *scratch = malloc(cap * sizeof *scratch);
        jr__hb_item *items = malloc(cap * sizeof *items);
        jr__frame f;
        ck_assert_int_eq(jr__frame_open(&f, copy, len, TW_MAX), 0);
        jr__buf out;
        jr__buf_init(&out, NULL);
        jr__frame_begin(&out, f.from, f.to);
        jr__msg m;
        int r;
        while ((r = tw_next(&f, &m, scratch, cap)) == 1) {
            if (m.type == JR__MSG_NODE_REQUEST) {
                jr__frame_add_request(&out, f.rpc.id, f.rpc.kind, f.rpc.payload, f.rpc.len);
            } else if (m.type == JR__MSG_NODE_RESPONSE) {
                jr__frame_add_response(&out, f.rpc.id, f.rpc.status, f.rpc.payload, f.rpc.len);
            } else if (m.type >= JR__MSG_EXT_FIRST) {
                ck_assert_uint_eq(m.group, 0);
                ck_assert_uint_eq(f.ext.type, m.type);
                jr__frame_add_ext(&out, f.ext.type, f.ext.flags, f.ext.payload, f.ext.len);
            } else if (m.type >= JR__MSG_NODE_FIRST) {
                ck_assert_uint_eq(m.group, 0);
                jr__hb_view v = f.hb;
                size_t n = 0;
                while (jr__hb_next(&v, &items[n])) n++;
                ck_assert_uint_eq(n, f.hb.n);
                jr__frame_add_hb(&out, m.type, f.hb.seq, items, n);
            } else {
                jr__frame_add(&out, &m);
            }
            ck_assert_int_eq(out.err, 0);
        }
        ck_assert_int_eq(r, 0);
        ck_assert_int_eq(jr__frame_end(&out), 0);
        ck_assert_uint_eq(out.len, len);
        ck_assert_int_eq(memcmp(out.data, copy, len), 0);
        jr__buf_free(&out);
        free(items);
        free(scratch);
    }
    free(copy);
    return rc;
}

size_t tw_sample_frame(jr__buf *b, size_t *msg_end, size_t cap)
{
    static const uint8_t conf[] = {2, 1, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t d1[] = "hello", d2[] = "world!";
    jr__entry e[3] = {
        {.term = 7, .index = 101, .type = JR__ENTRY_NORMAL, .len = 5, .data = d1},
        {.term = 8, .index = 102, .type = JR__ENTRY_NOOP, .len = 0, .data = NULL},
        {.term = 8, .index = 103, .type = JR__ENTRY_CONFIG, .len = 6, .data = d2},
    };
    jr__msg m[9];
    m[0] = tw_msg(JR__MSG_VOTE, 3, 9);
    m[0].flags = JR__MF_PREVOTE;
    m[0].u.vote.last_index = 300;
    m[0].u.vote.last_term = 8;
    m[1] = tw_msg(JR__MSG_VOTE_RESP, 3, 9);
    m[1].u.vote_resp.granted = 1;
    m[2] = tw_msg(JR__MSG_APPEND, 500, 8);
    m[2].u.append.prev_index = 100;
    m[2].u.append.prev_term = 7;
    m[2].u.append.commit = 99;
    m[2].u.append.n = 3;
    m[2].u.append.entries = e;
    m[3] = tw_msg(JR__MSG_APPEND_RESP, 500, 8);
    m[3].flags = JR__MF_DURABLE;
    m[3].u.append_resp.index = 50;
    m[3].u.append_resp.hint_index = 40;
    m[3].u.append_resp.hint_term = 6;
    m[4] = tw_msg(JR__MSG_HEARTBEAT, 1, 8);
    m[4].u.heartbeat.commit = 1000;
    m[5] = tw_msg(JR__MSG_HEARTBEAT_RESP, 1, 8);
    m[5].u.heartbeat_resp.match_hint = 998;
    m[6] = tw_msg(JR__MSG_SNAP, 70000, 8);
    m[6].u.snap.index = 5000;
    m[6].u.snap.sterm = 8;
    m[6].u.snap.offset = 10;
    m[6].u.snap.total = 16;
    m[6].u.snap.done = 1;
    m[6].u.snap.conf_len = sizeof conf;
    m[6].u.snap.conf = conf;
    m[6].u.snap.len = 6;
    m[6].u.snap.data = d2;
    m[7] = tw_msg(JR__MSG_SNAP_RESP, 70000, 8);
    m[7].u.snap_resp.index = 5000;
    m[7].u.snap_resp.offset = 16;
    m[7].u.snap_resp.done = 1;
    m[8] = tw_msg(JR__MSG_TIMEOUT_NOW, 2, 8);
    jr__hb_item items[3] = {{1, 8, 1000}, {2, 3, 4}, {900, 1, 0}};

    size_t k = 0;
    jr__frame_begin(b, TW_FROM, TW_TO);
    for (size_t i = 0; i < 9; i++) {
        jr__frame_add(b, &m[i]);
        if (k < cap) msg_end[k] = b->len - JR__FRAME_HEADER;
        k++;
    }
    jr__frame_add_hb(b, JR__MSG_NODE_HB, 77, items, 3);
    if (k < cap) msg_end[k] = b->len - JR__FRAME_HEADER;
    k++;
    jr__frame_add_hb(b, JR__MSG_NODE_HB_RESP, 77, items, 2);
    if (k < cap) msg_end[k] = b->len - JR__FRAME_HEADER;
    k++;
    ck_assert_int_eq(jr__frame_end(b), 0);
    return k;
}

static void *c_malloc(void *ctx, size_t n)
{
    ((tw_counter *)ctx)->mallocs++;
    return malloc(n);
}

static void *c_realloc(void *ctx, void *p, size_t n)
{
    ((tw_counter *)ctx)->reallocs++;
    return realloc(p, n);
}

static void c_free(void *ctx, void *p)
{
    if (p) ((tw_counter *)ctx)->frees++;
    free(p);
}

jr_allocator tw_counting_allocator(tw_counter *c)
{
    jr_allocator a = {JR_ALLOCATOR_VERSION, c, c_malloc, c_realloc, c_free};
    return a;
}

int tw_next(jr__frame *f, jr__msg *m, jr__entry *scratch, size_t cap)
{
    int got, rc = jr__frame_next(f, m, scratch, cap, &got);
    ck_assert(!rc || !got);
    return rc ? rc : got;
}
