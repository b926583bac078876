/*
 * test_route.c — the routing layer's pure parts: route frames (route_wire.h) encoded and
 * decoded back, every malformed shape refused, damaged and random frames rejected without
 * reading outside them; and the interest table (interest.h): counts, removal at zero, literal
 * and wildcard matching, growth.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interest.h"
#include "route_wire.h"

/* ---- helpers ------------------------------------------------------------------------------- */

/* A route frame of `type` around body (n bytes) with a correct checksum, in out. */
static size_t sealed(uint8_t *out, int version, int type, const void *body, size_t n)
{
    memcpy(out, "JN", 2);
    out[2] = (uint8_t)version;
    out[3] = (uint8_t)type;
    memcpy(out + RW_HDR, body, n);
    rw_seal(out, RW_HDR + n);
    return RW_HDR + n;
}

/* A whole MSG frame (head, hdr, data) in out; returns its length. */
static size_t msg_frame(uint8_t *out, size_t cap, unsigned flags, const char *to,
                        const char *subject, const char *reply, const char *const *queues,
                        size_t nq, const char *hdr, const char *data)
{
    size_t hl = 0, hdl = strlen(hdr), dl = strlen(data);
    ck_assert_int_eq(
        rw_msg_head(out, cap, &hl, flags, to, subject, reply, queues, nq, hdr, hdl, data, dl), 0);
    ck_assert_uint_le(hl + hdl + dl, cap);
    memcpy(out + hl, hdr, hdl);
    memcpy(out + hl + hdl, data, dl);
    return hl + hdl + dl;
}

static int str_is(rw_str s, const char *want)
{
    return s.len == strlen(want) && !memcmp(s.p, want, s.len);
}

static int frame_ok(const uint8_t *f, size_t len)
{
    int type;
    if (rw_open(f, len, &type)) return 0;
    if (type == RW_INTEREST) return rw_interest_check(f, len) == 0;
    if (type == RW_URL) {
        rw_str url;
        return rw_url_decode(f, len, &url) == 0;
    }
    rw_msg m;
    return rw_msg_decode(f, len, &m) == 0;
}

/* ---- frames -------------------------------------------------------------------------------- */

START_TEST(interest_frames_round_trip)
{
    rw_build b;
    rw_build_init(&b);
    ck_assert_int_eq(rw_build_start(&b, RW_INTEREST), 0);
    ck_assert_int_eq(rw_build_op(&b, "orders.*", NULL, 1), 0);
    ck_assert_int_eq(rw_build_op(&b, "_INBOX.abc.>", "", 0), 0);
    ck_assert_int_eq(rw_build_op(&b, "work", "workers", 7), 0);
    rw_build_finish(&b);
    ck_assert(rw_is_route(b.buf, b.len));
    int type = 0;
    ck_assert_int_eq(rw_open(b.buf, b.len, &type), 0);
    ck_assert_int_eq(type, RW_INTEREST);
    ck_assert_int_eq(rw_interest_check(b.buf, b.len), 0);
    size_t off = 0;
    rw_op op;
    ck_assert_int_eq(rw_interest_next(b.buf, b.len, &off, &op), 1);
    ck_assert(str_is(op.subject, "orders.*") && op.queue.len == 0 && op.count == 1);
    ck_assert_int_eq(rw_interest_next(b.buf, b.len, &off, &op), 1);
    ck_assert(str_is(op.subject, "_INBOX.abc.>") && op.queue.len == 0 && op.count == 0);
    ck_assert_int_eq(rw_interest_next(b.buf, b.len, &off, &op), 1);
    ck_assert(str_is(op.subject, "work") && str_is(op.queue, "workers") && op.count == 7);
    ck_assert_int_eq(rw_interest_next(b.buf, b.len, &off, &op), 0);
    /* a name too long is refused by the builder, not sent */
    char longname[ROUTE_NAME_MAX + 2];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    ck_assert_int_eq(rw_build_op(&b, longname, NULL, 1), -1);
    rw_build_free(&b);
}
END_TEST

START_TEST(url_frames_round_trip_and_refuse_what_is_not_a_url)
{
    rw_build b;
    rw_build_init(&b);
    ck_assert_int_eq(rw_build_url(&b, "10.0.0.7:4222"), 0);
    int type = 0;
    ck_assert_int_eq(rw_open(b.buf, b.len, &type), 0);
    ck_assert_int_eq(type, RW_URL);
    rw_str url;
    ck_assert_int_eq(rw_url_decode(b.buf, b.len, &url), 0);
    ck_assert(str_is(url, "10.0.0.7:4222"));
    /* empty, a space, a control byte, too long: not built */
    ck_assert_int_eq(rw_build_url(&b, ""), -1);
    ck_assert_int_eq(rw_build_url(&b, "a b:1"), -1);
    ck_assert_int_eq(rw_build_url(&b, "a\tb:1"), -1);
    char longurl[ROUTE_URL_MAX + 2];
    memset(longurl, 'h', sizeof longurl - 1);
    longurl[sizeof longurl - 1] = 0;
    ck_assert_int_eq(rw_build_url(&b, longurl), -1);
    /* and not decoded, however sealed: a space inside, bytes after the string */
    uint8_t f[RW_HDR + 8] = {'J', 'N', 1, RW_URL};
    memcpy(f + RW_HDR, "\005a b:1", 6);
    rw_seal(f, RW_HDR + 6);
    ck_assert_int_eq(rw_open(f, RW_HDR + 6, &type), 0);
    ck_assert_int_eq(rw_url_decode(f, RW_HDR + 6, &url), -1);
    memcpy(f + RW_HDR, "\005ab:12x", 7);
    rw_seal(f, RW_HDR + 7);
    ck_assert_int_eq(rw_url_decode(f, RW_HDR + 7, &url), -1);
    rw_build_free(&b);
}
END_TEST

START_TEST(msg_frames_round_trip)
{
    static uint8_t f[4096];
    const char *queues[] = {"workers", "audit"};
    size_t len = msg_frame(f, sizeof f, RW_PLAIN, "deliver.x", "orders.1", "$JS.ACK.S.C.1.1.1.0.0",
                           queues, 2, "NATS/1.0\r\nX-Id: 3\r\n\r\n", "payload");
    int type = 0;
    ck_assert_int_eq(rw_open(f, len, &type), 0);
    ck_assert_int_eq(type, RW_MSG);
    rw_msg m;
    ck_assert_int_eq(rw_msg_decode(f, len, &m), 0);
    ck_assert_uint_eq(m.flags, RW_PLAIN);
    ck_assert(str_is(m.to, "deliver.x") && str_is(m.subject, "orders.1"));
    ck_assert(str_is(m.reply, "$JS.ACK.S.C.1.1.1.0.0"));
    ck_assert_uint_eq(m.nq, 2);
    ck_assert(str_is(m.queues[0], "workers") && str_is(m.queues[1], "audit"));
    ck_assert_uint_eq(m.hdr_len, strlen("NATS/1.0\r\nX-Id: 3\r\n\r\n"));
    ck_assert(!memcmp(m.hdr, "NATS/1.0\r\nX-Id: 3\r\n\r\n", m.hdr_len));
    ck_assert(m.len == 7 && !memcmp(m.data, "payload", 7));
    /* the same subject as `to` is sent once; no reply, no header, no data */
    len = msg_frame(f, sizeof f, RW_PLAIN, "a.b", "a.b", NULL, NULL, 0, "", "");
    ck_assert_int_eq(rw_open(f, len, &type), 0);
    ck_assert_int_eq(rw_msg_decode(f, len, &m), 0);
    ck_assert(str_is(m.to, "a.b") && m.subject.len == 0 && m.reply.len == 0);
    ck_assert(m.nq == 0 && m.hdr_len == 0 && m.len == 0);
}
END_TEST

START_TEST(every_damaged_byte_and_every_truncation_is_rejected)
{
    static uint8_t f[4096], g[4096];
    const char *queues[] = {"q1"};
    size_t len = msg_frame(f, sizeof f, RW_PLAIN, "a.b.c", "x.y", "_INBOX.1", queues, 1,
                           "NATS/1.0\r\n\r\n", "data");
    ck_assert(frame_ok(f, len));
    for (size_t i = 0; i < len; i++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(g, f, len);
            g[i] ^= (uint8_t)(1u << bit);
            int type;
            /* the magic is the route/node split: a damaged one is no route frame at all */
            ck_assert_msg(rw_open(g, len, &type) != 0, "byte %zu bit %d", i, bit);
        }
    for (size_t n = 0; n < len; n++) {
        int type;
        ck_assert_msg(rw_open(f, n, &type) != 0, "truncated to %zu", n);
    }
}
END_TEST

/* Bodies with a correct checksum that the decoders must still refuse. */
START_TEST(malformed_bodies_are_refused)
{
    static uint8_t f[70000];
    struct {
        int type;
        const char *body;
        size_t len;
        const char *why;
    } bad[] = {
        {RW_INTEREST, "", 0, "an empty INTEREST"},
        {RW_INTEREST, "\001", 1, "an op cut after its count"},
        {RW_INTEREST, "\001\005ab", 4, "a subject longer than the frame"},
        {RW_INTEREST, "\200\000\001a\000", 5, "a non-canonical count"},
        {RW_INTEREST, "\001\201\000a\000", 5, "a non-canonical length"},
        {RW_INTEREST, "\377\377\377\377\017\001a\000", 8, "a count past the maximum"},
        {RW_INTEREST, "\001\000\000", 3, "an empty subject"},
        {RW_INTEREST, "\001\004a..b\000", 7, "an empty token"},
        {RW_INTEREST, "\001\003a b\000", 6, "a space in a subject"},
        {RW_INTEREST, "\001\003a\000b\000", 6, "a NUL in a subject"},
        {RW_INTEREST, "\001\005a.>.b\000", 8, "> not last"},
        {RW_INTEREST, "\001\002a*\000", 5, "* inside a token"},
        {RW_INTEREST, "\001\002a.\000", 5, "a trailing dot"},
        {RW_INTEREST, "\001\001a\001*", 5, "a wildcard queue"},
        {RW_INTEREST, "\001\001a\000\007", 5, "bytes after the last op"},
        {RW_MSG, "", 0, "an empty MSG"},
        {RW_MSG, "\002\001a\000\000\000\000", 7, "an unknown flag"},
        {RW_MSG, "\000\001a\000\000\000\000", 7, "no plain flag and no queue"},
        {RW_MSG, "\001\001*\000\000\000\000", 7, "a wildcard `to`"},
        {RW_MSG, "\001\001a\001>\000\000\000", 8, "a wildcard subject"},
        {RW_MSG, "\001\001a\000\002a \000\000", 9, "a reply with a space"},
        {RW_MSG, "\001\001a\000\000A", 6, "too many queues"},
        {RW_MSG, "\001\001a\000\000\002\001q\001q\000", 11, "a queue named twice"},
        {RW_MSG, "\001\001a\000\000\001\000\000", 8, "an empty queue name"},
        {RW_MSG, "\001\001a\000\000\000\005abc", 10, "a header past the end"},
        {RW_MSG, "\001\001a\000\000\000", 6, "no header length"},
        {RW_MSG, "\001\377\377\003a", 5, "a subject longer than the bound"},
        {RW_MSG, "\001\001a\001a\000\000\000", 8, "a subject repeating `to`"},
        {RW_URL, "", 0, "an empty URL frame"},
        {RW_URL, "\000", 1, "an empty URL"},
        {RW_URL, "\003a\nb", 4, "a control byte in a URL"},
        {RW_URL, "\002ab\000", 4, "bytes after the URL"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t len = sealed(f, 1, bad[i].type, bad[i].body, bad[i].len);
        int type = 0;
        ck_assert_msg(rw_open(f, len, &type) == 0, "%s: the header", bad[i].why);
        ck_assert_msg(!frame_ok(f, len), "%s: accepted", bad[i].why);
    }
    /* a valid body under an unknown version or type */
    size_t len = sealed(f, 2, RW_MSG, "\001\001a\000\000\000\000", 7);
    ck_assert(!frame_ok(f, len));
    len = sealed(f, 1, 4, "\001\001a\000\000\000\000", 7);
    ck_assert(!frame_ok(f, len));
    len = sealed(f, 1, RW_MSG, "\001\001a\000\000\000\000", 7);
    ck_assert(frame_ok(f, len));
    /* a node frame ("JR") is not a route frame */
    ck_assert(!rw_is_route((const uint8_t *)"JR\x01", 3));
    ck_assert(!rw_is_route((const uint8_t *)"J", 1));
}
END_TEST

/* Random bodies and every truncation of valid ones, resealed so that they pass the checksum:
 * the decoders accept or refuse, and never read outside (the sanitizer build checks that). */
START_TEST(random_sealed_bodies_never_crash)
{
    static uint8_t f[4096], body[4096], g[4096];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int accepted = 0;
    for (int round = 0; round < 100000; round++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t n = (size_t)(x % 48);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            /* mostly small bytes and letters, so that lengths and names are often plausible */
            uint8_t v = (uint8_t)x;
            body[i] = (x >> 8) & 1 ? (uint8_t)(v % 6) : (uint8_t)('a' + v % 4);
        }
        size_t len = sealed(f, 1, round & 1 ? RW_MSG : RW_INTEREST, body, n);
        /* copy to an exactly sized heap buffer so that an over-read is caught */
        uint8_t *h = malloc(len);
        memcpy(h, f, len);
        accepted += frame_ok(h, len);
        free(h);
    }
    ck_assert_int_gt(accepted, 0); /* the generator reached the accepting paths too */
    const char *queues[] = {"q"};
    size_t len = msg_frame(f, sizeof f, 0, "to.x", "s.y", "r.z", queues, 1, "HDR", "DATA");
    for (size_t n = RW_HDR; n <= len; n++) {
        size_t l = sealed(g, 1, RW_MSG, f + RW_HDR, n - RW_HDR);
        uint8_t *h = malloc(l);
        memcpy(h, g, l);
        /* cutting into the data leaves a valid, shorter message; cutting earlier does not */
        int ok = frame_ok(h, l);
        ck_assert_int_eq(ok, n >= len - 4);
        free(h);
    }
}
END_TEST

/* ---- the interest table -------------------------------------------------------------------- */

typedef struct seen {
    char buf[4096];
    int n;
} seen;

static int collect(void *arg, const char *subject, const char *queue, uint32_t count)
{
    seen *s = arg;
    size_t used = strlen(s->buf);
    snprintf(s->buf + used, sizeof s->buf - used, "[%s %s %u]", subject, queue ? queue : "-",
             count);
    s->n++;
    return 0;
}

static int has(const seen *s, const char *item)
{
    return strstr(s->buf, item) != NULL;
}

START_TEST(interest_counts_and_matches)
{
    interest *t = interest_new();
    uint32_t n = 0;
    ck_assert_int_eq(interest_add(t, "a.b", NULL, 1, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(interest_add(t, "a.b", "", 1, &n), 0); /* "" is no queue */
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(interest_add(t, "a.b", "q", 1, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(interest_add(t, "a.*", NULL, 1, &n), 0);
    ck_assert_int_eq(interest_add(t, "a.>", "q", 1, &n), 0);
    ck_assert_int_eq(interest_add(t, "b.>", NULL, 1, &n), 0);
    ck_assert_uint_eq(interest_size(t), 5);
    seen s = {{0}, 0};
    interest_match(t, "a.b", collect, &s);
    ck_assert_int_eq(s.n, 4);
    ck_assert(has(&s, "[a.b - 2]") && has(&s, "[a.b q 1]") && has(&s, "[a.* - 1]") &&
              has(&s, "[a.> q 1]"));
    memset(&s, 0, sizeof s);
    interest_match(t, "a.b.c", collect, &s);
    ck_assert_int_eq(s.n, 1);
    ck_assert(has(&s, "[a.> q 1]"));
    memset(&s, 0, sizeof s);
    interest_match(t, "c", collect, &s);
    ck_assert_int_eq(s.n, 0);
    /* down to zero removes; below zero is refused and changes nothing */
    ck_assert_int_eq(interest_add(t, "a.b", NULL, -1, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(interest_add(t, "a.b", NULL, -1, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(interest_add(t, "a.b", NULL, -1, &n), -1);
    ck_assert_int_eq(interest_add(t, "b.>", NULL, -1, &n), 0);
    ck_assert_uint_eq(interest_size(t), 3);
    /* set: absolute, 0 removes, repeating it is harmless */
    ck_assert_int_eq(interest_set(t, "w", "q", 5), 0);
    ck_assert_int_eq(interest_set(t, "w", "q", 5), 0);
    ck_assert_int_eq(interest_add(t, "w", "q", 0, &n), 0);
    ck_assert_uint_eq(n, 5);
    ck_assert_int_eq(interest_set(t, "w", "q", 0), 0);
    ck_assert_int_eq(interest_set(t, "w", "q", 0), 0);
    ck_assert_uint_eq(interest_size(t), 3);
    memset(&s, 0, sizeof s);
    interest_each(t, collect, &s);
    ck_assert_int_eq(s.n, 3);
    interest_clear(t);
    ck_assert_uint_eq(interest_size(t), 0);
    memset(&s, 0, sizeof s);
    interest_match(t, "a.b", collect, &s);
    ck_assert_int_eq(s.n, 0);
    interest_free(t);
}
END_TEST

START_TEST(interest_wildcards_match_by_first_token_and_leading_wildcards_always)
{
    interest *t = interest_new();
    ck_assert_int_eq(interest_set(t, "_INBOX.abc.*", NULL, 1), 0);
    ck_assert_int_eq(interest_set(t, "_INBOX.def.*", NULL, 1), 0);
    ck_assert_int_eq(interest_set(t, "_INBOX.>", "q", 2), 0);
    ck_assert_int_eq(interest_set(t, "*.abc.1", NULL, 1), 0);
    ck_assert_int_eq(interest_set(t, ">", "all", 3), 0);
    ck_assert_int_eq(interest_set(t, "orders.>", NULL, 1), 0);
    ck_assert_uint_eq(interest_size(t), 6);
    ck_assert_uint_gt(interest_bytes(t), 0);
    seen s = {{0}, 0};
    interest_match(t, "_INBOX.abc.1", collect, &s);
    ck_assert_int_eq(s.n, 4);
    ck_assert(has(&s, "[_INBOX.abc.* - 1]") && has(&s, "[_INBOX.> q 2]") &&
              has(&s, "[*.abc.1 - 1]") && has(&s, "[> all 3]"));
    memset(&s, 0, sizeof s);
    interest_match(t, "orders", collect, &s); /* `orders.>` needs a token more */
    ck_assert_int_eq(s.n, 1);
    ck_assert(has(&s, "[> all 3]"));
    memset(&s, 0, sizeof s);
    interest_match(t, "orders.1.2", collect, &s);
    ck_assert_int_eq(s.n, 2);
    ck_assert(has(&s, "[orders.> - 1]") && has(&s, "[> all 3]"));
    memset(&s, 0, sizeof s);
    interest_each(t, collect, &s);
    ck_assert_int_eq(s.n, 6);
    interest_clear(t);
    ck_assert_uint_eq(interest_bytes(t), 0);
    interest_free(t);
}
END_TEST

START_TEST(interest_grows_and_finds_every_entry)
{
    interest *t = interest_new();
    char subj[64];
    for (int i = 0; i < 20000; i++) {
        snprintf(subj, sizeof subj, "_INBOX.%d", i);
        ck_assert_int_eq(interest_set(t, subj, i % 3 ? NULL : "g", (uint32_t)(i + 1)), 0);
    }
    ck_assert_uint_eq(interest_size(t), 20000);
    for (int i = 0; i < 20000; i++) {
        snprintf(subj, sizeof subj, "_INBOX.%d", i);
        seen s = {{0}, 0};
        interest_match(t, subj, collect, &s);
        ck_assert_int_eq(s.n, 1);
        char want[80];
        snprintf(want, sizeof want, "[%s %s %d]", subj, i % 3 ? "-" : "g", i + 1);
        ck_assert_msg(has(&s, want), "%s: %s", want, s.buf);
    }
    for (int i = 0; i < 20000; i += 2) {
        snprintf(subj, sizeof subj, "_INBOX.%d", i);
        ck_assert_int_eq(interest_set(t, subj, i % 3 ? NULL : "g", 0), 0);
    }
    ck_assert_uint_eq(interest_size(t), 10000);
    /* as many inbox wildcards: each publish to an inbox finds its own */
    for (int i = 0; i < 20000; i++) {
        snprintf(subj, sizeof subj, "_I%d.x.*", i % 100);
        ck_assert_int_eq(interest_add(t, subj, NULL, 1, NULL), 0);
    }
    seen s = {{0}, 0};
    interest_match(t, "_I7.x.y", collect, &s);
    ck_assert_int_eq(s.n, 1);
    ck_assert(has(&s, "[_I7.x.* - 200]"));
    interest_free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("server-route");
    TCase *tc = tcase_create("route");
    tcase_add_test(tc, interest_frames_round_trip);
    tcase_add_test(tc, url_frames_round_trip_and_refuse_what_is_not_a_url);
    tcase_add_test(tc, msg_frames_round_trip);
    tcase_add_test(tc, every_damaged_byte_and_every_truncation_is_rejected);
    tcase_add_test(tc, malformed_bodies_are_refused);
    tcase_add_test(tc, random_sealed_bodies_never_crash);
    tcase_add_test(tc, interest_counts_and_matches);
    tcase_add_test(tc, interest_wildcards_match_by_first_token_and_leading_wildcards_always);
    tcase_add_test(tc, interest_grows_and_finds_every_entry);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
