/*
 * test_proto.c — the server's pure parts: the NATS protocol parser (split and pipelined reads,
 * the byte patterns clients send, oversized and malformed input), subject routing, the peer
 * link framing, plain and secure peer sessions, and the configuration file's errors (key files,
 * certificates, users).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "config.h"
#include "frame.h"
#include "proto.h"
#include "session.h"
#include "sublist.h"

/* ---- recording parsed operations as text ----------------------------------------------------- */

typedef struct rec {
    char buf[1 << 16];
    size_t len;
    int ops;
} rec;

static int record(void *arg, const np_op *op)
{
    rec *r = arg;
    static const char *const names[] = {"?",     "CONNECT", "PUB",  "HPUB", "SUB",
                                        "UNSUB", "PING",    "PONG", "INFO"};
    int n = snprintf(r->buf + r->len, sizeof r->buf - r->len, "%s", names[op->kind]);
    r->len += (size_t)n;
    switch (op->kind) {
    case NP_PUB:
    case NP_HPUB:
        n = snprintf(r->buf + r->len, sizeof r->buf - r->len, " %s %s %zu [%.*s] [%.*s]",
                     op->subject, op->reply ? op->reply : "-", op->hdr_len, (int)op->hdr_len,
                     (const char *)op->hdr, (int)op->data_len, (const char *)op->data);
        break;
    case NP_SUB:
        n = snprintf(r->buf + r->len, sizeof r->buf - r->len, " %s %s %s", op->subject,
                     op->queue ? op->queue : "-", op->sid);
        break;
    case NP_UNSUB:
        n = snprintf(r->buf + r->len, sizeof r->buf - r->len, " %s %lld", op->sid,
                     (long long)op->max);
        break;
    case NP_CONNECT:
    case NP_INFO:
        n = snprintf(r->buf + r->len, sizeof r->buf - r->len, " %.*s", (int)op->arg_len, op->arg);
        break;
    default:
        n = 0;
    }
    r->len += (size_t)n;
    r->buf[r->len++] = '\n';
    r->buf[r->len] = 0;
    r->ops++;
    return 0;
}

/* Feeds text in chunks of the given sizes (0-terminated list; the rest at once). */
static int feed_chunks(np_parser *p, const char *text, size_t len, const size_t *chunks, rec *r,
                       const char **err)
{
    size_t off = 0;
    for (int i = 0; off < len; i++) {
        size_t k = chunks && chunks[i] ? chunks[i] : len - off;
        if (k > len - off) k = len - off;
        int rc = np_feed(p, (const uint8_t *)text + off, k, record, r, err);
        if (rc) return rc;
        off += k;
    }
    return 0;
}

static const char script[] = "CONNECT {\"verbose\":false,\"headers\":true}\r\n"
                             "PING\r\n"
                             "SUB _INBOX.X52.*  1\r\n"
                             "SUB foo.> q1 2\r\n"
                             "UNSUB 3 \r\n"
                             "UNSUB 1 1\r\n"
                             "PUB foo.bar 5\r\nhello\r\n"
                             "PUB foo.bar _INBOX.X52.7 0\r\n\r\n"
                             "HPUB s r 0 5\r\nhello\r\n"
                             "HPUB orders.1 _INBOX.RD.7 29 32\r\nNATS/1.0\r\nNats-Msg-Id: m1\r\n"
                             "\r\none\r\n"
                             "pub\tlow.case\t\t3\r\nabc\r\n"
                             "PONG\r\n"
                             "PUB crlf.in.payload 4\r\n\r\n\r\n\r\n"
                             "PING\n";

static const char expected[] =
    "CONNECT {\"verbose\":false,\"headers\":true}\n"
    "PING\n"
    "SUB _INBOX.X52.* - 1\n"
    "SUB foo.> q1 2\n"
    "UNSUB 3 -1\n"
    "UNSUB 1 1\n"
    "PUB foo.bar - 0 [] [hello]\n"
    "PUB foo.bar _INBOX.X52.7 0 [] []\n"
    "HPUB s r 0 [] [hello]\n"
    "HPUB orders.1 _INBOX.RD.7 29 [NATS/1.0\r\nNats-Msg-Id: m1\r\n\r\n] [one]\n"
    "PUB low.case - 0 [] [abc]\n"
    "PONG\n"
    "PUB crlf.in.payload - 0 [] [\r\n\r\n]\n"
    "PING\n";

START_TEST(pipelined_commands_in_one_read)
{
    np_parser p;
    ck_assert_int_eq(np_init(&p, 4096, 1 << 20), 0);
    rec r = {0};
    const char *err;
    ck_assert_int_eq(feed_chunks(&p, script, sizeof script - 1, NULL, &r, &err), 0);
    ck_assert_str_eq(r.buf, expected);
    ck_assert_uint_eq(np_buffered(&p), 0);
    np_free(&p);
}
END_TEST

/* A read that completes a command, or ends inside one, reports no error text: *err is set only
 * with NP_EPROTO. */
START_TEST(a_good_read_leaves_no_error_text)
{
    static const char *const reads[] = {"PING\r\n", "SUB a 1\r\n", "PUB a 2\r\nhi\r\n",
                                        "HPUB s 12 12\r\nNATS/1.0\r\n\r\n\r\n", "PUB a 5\r\nhe"};
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
        np_parser p;
        ck_assert_int_eq(np_init(&p, 4096, 1 << 20), 0);
        rec r = {0};
        const char *err = "not set";
        ck_assert_int_eq(np_feed(&p, (const uint8_t *)reads[i], strlen(reads[i]), record, &r, &err),
                         0);
        ck_assert_msg(err == NULL, "read %zu left error text \"%s\"", i, err);
        np_free(&p);
    }
}
END_TEST

START_TEST(split_at_every_byte_gives_the_same_operations)
{
    size_t len = sizeof script - 1;
    for (size_t cut = 1; cut < len; cut++) {
        np_parser p;
        ck_assert_int_eq(np_init(&p, 4096, 1 << 20), 0);
        rec r = {0};
        const char *err;
        size_t chunks[] = {cut, 0};
        ck_assert_int_eq(feed_chunks(&p, script, len, chunks, &r, &err), 0);
        ck_assert_msg(!strcmp(r.buf, expected), "split at byte %zu: got\n%s", cut, r.buf);
        np_free(&p);
    }
    /* one byte per read */
    np_parser p;
    ck_assert_int_eq(np_init(&p, 4096, 1 << 20), 0);
    rec r = {0};
    const char *err;
    for (size_t i = 0; i < len; i++)
        ck_assert_int_eq(np_feed(&p, (const uint8_t *)script + i, 1, record, &r, &err), 0);
    ck_assert_str_eq(r.buf, expected);
    np_free(&p);
}
END_TEST

/* Feeds text and expects the parser to refuse it with the given -ERR text. */
static void expect_error(const char *text, size_t len, size_t max_line, size_t max_payload,
                         const char *want)
{
    np_parser p;
    ck_assert_int_eq(np_init(&p, max_line, max_payload), 0);
    rec r = {0};
    const char *err = NULL;
    int rc = np_feed(&p, (const uint8_t *)text, len, record, &r, &err);
    ck_assert_msg(rc == NP_EPROTO, "accepted: %.*s", (int)len, text);
    ck_assert_ptr_nonnull(err);
    ck_assert_str_eq(err, want);
    np_free(&p);
}

START_TEST(malformed_input_is_refused)
{
    const char *unknown = "Unknown Protocol Operation";
    expect_error("FOO bar\r\n", 9, 4096, 1024, unknown);
    expect_error("\r\n", 2, 4096, 1024, unknown);
    expect_error("PUB foo -1\r\n", 12, 4096, 1024, unknown);
    expect_error("PUB foo 1x\r\n", 12, 4096, 1024, unknown);
    expect_error("PUB foo\r\n", 9, 4096, 1024, unknown);
    expect_error("PUB a b c 1\r\n", 13, 4096, 1024, unknown);
    expect_error("PUB foo 3\r\nabcd\r\n", 17, 4096, 1024, unknown); /* payload longer */
    expect_error("PUB foo 3\r\nab\r\n\r\n", 17, 4096, 1024, unknown);
    expect_error("HPUB foo 6 5\r\nhello\r\n", 21, 4096, 1024, unknown); /* hdr > total */
    expect_error("SUB\r\n", 5, 4096, 1024, unknown);
    expect_error("SUB a b c d\r\n", 13, 4096, 1024, unknown);
    expect_error("UNSUB\r\n", 7, 4096, 1024, unknown);
    expect_error("UNSUB 1 x\r\n", 11, 4096, 1024, unknown);
    expect_error("PING x\r\n", 8, 4096, 1024, unknown);
    expect_error("PI\0G\r\n", 6, 4096, 1024, unknown);
    expect_error("PUB foo 99999999999\r\n", 21, 4096, 1024, unknown);
}
END_TEST

START_TEST(oversized_payload_and_line_are_refused_without_buffering_them)
{
    expect_error("PUB foo 1025\r\n", 14, 4096, 1024, "Maximum Payload Violation");
    expect_error("HPUB foo 10 1025\r\n", 18, 4096, 1024, "Maximum Payload Violation");
    /* exactly max_payload is fine */
    np_parser p;
    ck_assert_int_eq(np_init(&p, 4096, 4), 0);
    rec r = {0};
    const char *err;
    ck_assert_int_eq(np_feed(&p, (const uint8_t *)"PUB f 4\r\nabcd\r\n", 15, record, &r, &err), 0);
    ck_assert_int_eq(r.ops, 1);
    np_free(&p);
    /* a control line one byte over the bound, fed in pieces without its end */
    char line[300];
    memset(line, 'A', sizeof line);
    ck_assert_int_eq(np_init(&p, 256, 1024), 0);
    int rc = 0;
    for (size_t i = 0; i < sizeof line && rc == 0; i += 10)
        rc = np_feed(&p, (const uint8_t *)line + i, 10, record, &r, &err);
    ck_assert_int_eq(rc, NP_EPROTO);
    ck_assert_str_eq(err, "Maximum Control Line Exceeded");
    ck_assert_uint_le(np_buffered(&p), 257);
    np_free(&p);
}
END_TEST

START_TEST(random_garbage_never_crashes_and_stays_bounded)
{
    srand(7);
    for (int round = 0; round < 2000; round++) {
        np_parser p;
        ck_assert_int_eq(np_init(&p, 128, 512), 0);
        rec r = {0};
        const char *err;
        uint8_t buf[700];
        size_t n = (size_t)(rand() % (int)sizeof buf);
        /* mostly protocol-looking bytes, so the parser gets past the first line often */
        static const char alpha[] = "PUB HPUB SUB UNSUB PING PONG 0123456789 \r\n\t.*>abc";
        for (size_t i = 0; i < n; i++)
            buf[i] =
                rand() % 4 ? (uint8_t)alpha[rand() % (int)(sizeof alpha - 1)] : (uint8_t)rand();
        size_t off = 0;
        while (off < n) {
            size_t k = 1 + (size_t)(rand() % 64);
            if (k > n - off) k = n - off;
            r.len = 0;
            int rc = np_feed(&p, buf + off, k, record, &r, &err);
            ck_assert_uint_le(np_buffered(&p), 128 + 1 + 512 + 2);
            if (rc) {
                ck_assert_int_eq(rc, NP_EPROTO);
                ck_assert_ptr_nonnull(err);
                break;
            }
            off += k;
        }
        np_free(&p);
    }
}
END_TEST

/* ---- subject routing ------------------------------------------------------------------------ */

/* The token-by-token definition of a match, for subject_matches's single pass to agree with. */
static int ref_matches(const char *p, const char *s)
{
    for (;;) {
        const char *pe = strchr(p, '.'), *se = strchr(s, '.');
        size_t pl = pe ? (size_t)(pe - p) : strlen(p);
        size_t sl = se ? (size_t)(se - s) : strlen(s);
        if (pl == 1 && *p == '>') return 1;
        if (!(pl == 1 && *p == '*') && (pl != sl || memcmp(p, s, pl))) return 0;
        if (!pe || !se) return !pe && !se;
        p = pe + 1;
        s = se + 1;
    }
}

START_TEST(subject_matches_agrees_with_the_token_definition)
{
    static const char alpha[] = "ab.*>";
    char p[12], s[12];
    unsigned x = 12345;
    for (int i = 0; i < 200000; i++) {
        size_t pl = (x = x * 1103515245u + 12345u) >> 16 & 7,
               sl = (x = x * 1103515245u + 12345u) >> 16 & 7;
        for (size_t k = 0; k < pl; k++) p[k] = alpha[((x = x * 1103515245u + 12345u) >> 16) % 5];
        for (size_t k = 0; k < sl; k++) s[k] = alpha[((x = x * 1103515245u + 12345u) >> 16) % 3];
        p[pl] = s[sl] = 0;
        ck_assert_msg(subject_matches(p, s) == ref_matches(p, s), "'%s' against '%s'", p, s);
    }
}
END_TEST

START_TEST(subjects_match_with_wildcards)
{
    ck_assert(subject_matches("foo.bar", "foo.bar"));
    ck_assert(!subject_matches("foo.bar", "foo.baz"));
    ck_assert(subject_matches("foo.*", "foo.bar"));
    ck_assert(!subject_matches("foo.*", "foo.bar.baz"));
    ck_assert(!subject_matches("foo.*", "foo"));
    ck_assert(subject_matches("foo.>", "foo.bar.baz"));
    ck_assert(!subject_matches("foo.>", "foo"));
    ck_assert(subject_matches(">", "a"));
    ck_assert(subject_matches("*.b.>", "a.b.c.d"));
    ck_assert(subject_matches("_INBOX.X52.*", "_INBOX.X52.7"));
    ck_assert(!subject_matches("foo.bar", "foo.bar.baz"));
    ck_assert(!subject_matches("foo.bar.baz", "foo.bar"));
    ck_assert(subject_valid("foo.*.>", 0));
    ck_assert(!subject_valid("foo.*.>", 1));
    ck_assert(!subject_valid("foo..bar", 0));
    ck_assert(!subject_valid("foo.>.bar", 0));
    ck_assert(!subject_valid("foo.b*", 0));
    ck_assert(!subject_valid("", 0));
    ck_assert(!subject_valid("foo.", 0));
    ck_assert(!subject_valid(".foo", 0));
}
END_TEST

START_TEST(a_queue_group_gets_one_copy)
{
    sublist *sl = sublist_new();
    sub a = {.subject = "orders.*", .sid = "1", .max = -1};
    sub b = {.subject = "orders.*", .queue = "workers", .sid = "2", .max = -1};
    sub c = {.subject = "orders.>", .queue = "workers", .sid = "3", .max = -1};
    sub d = {.subject = "other", .sid = "4", .max = -1};
    sublist_insert(sl, &a);
    sublist_insert(sl, &b);
    sublist_insert(sl, &c);
    sublist_insert(sl, &d);
    sub **v;
    for (int i = 0; i < 50; i++) {
        size_t n = sublist_match(sl, "orders.1", &v);
        ck_assert_uint_eq(n, 2);
        int plain = 0, queue = 0;
        for (size_t k = 0; k < n; k++) {
            plain += v[k] == &a;
            queue += v[k] == &b || v[k] == &c;
        }
        ck_assert_int_eq(plain, 1);
        ck_assert_int_eq(queue, 1);
    }
    ck_assert_uint_eq(sublist_match(sl, "nothing", &v), 0);
    sublist_remove(sl, &a);
    sublist_remove(sl, &d);
    ck_assert_uint_eq(sublist_count(sl), 2);
    sublist_free(sl);
}
END_TEST

/* ---- peer link framing ---------------------------------------------------------------------- */

typedef struct frames {
    char got[4096];
    size_t len;
    int n;
} frames;

static int on_frame(void *arg, const uint8_t *f, size_t len)
{
    frames *fr = arg;
    memcpy(fr->got + fr->len, f, len);
    fr->len += len;
    fr->got[fr->len++] = '|';
    fr->n++;
    return 0;
}

START_TEST(frames_split_at_every_byte)
{
    uint8_t wire[256];
    size_t w = 0;
    const char *msgs[] = {"a", "hello", "0123456789abcdef", "z"};
    for (int i = 0; i < 4; i++) {
        size_t l = strlen(msgs[i]);
        frame_hdr(wire + w, (uint32_t)l);
        memcpy(wire + w + FRAME_HDR, msgs[i], l);
        w += FRAME_HDR + l;
    }
    for (size_t cut = 0; cut <= w; cut++) {
        frame_rd rd;
        frame_rd_init(&rd, 64);
        frames fr = {{0}, 0, 0};
        ck_assert_int_eq(frame_rd_feed(&rd, wire, cut, on_frame, &fr), 0);
        ck_assert_int_eq(frame_rd_feed(&rd, wire + cut, w - cut, on_frame, &fr), 0);
        fr.got[fr.len] = 0;
        ck_assert_str_eq(fr.got, "a|hello|0123456789abcdef|z|");
        frame_rd_free(&rd);
    }
}
END_TEST

START_TEST(an_oversized_or_empty_frame_length_closes_the_link)
{
    frame_rd rd;
    frame_rd_init(&rd, 64);
    frames fr = {{0}, 0, 0};
    uint8_t h[FRAME_HDR];
    frame_hdr(h, 65);
    ck_assert_int_eq(frame_rd_feed(&rd, h, 2, on_frame, &fr), 0);
    ck_assert_int_eq(frame_rd_feed(&rd, h + 2, 2, on_frame, &fr), -1);
    frame_rd_free(&rd);
    frame_rd_init(&rd, 64);
    frame_hdr(h, 0);
    ck_assert_int_eq(frame_rd_feed(&rd, h, 4, on_frame, &fr), -1);
    frame_rd_free(&rd);
    ck_assert_int_eq(fr.n, 0);
}
END_TEST

/* ---- peer sessions -------------------------------------------------------------------------- */

/* Moves a's pending handshake bytes into b, one byte per feed. */
static int pass_hello(session *a, session *b, frames *fr)
{
    const void *d;
    size_t len;
    session_pending_out(a, &d, &len);
    for (size_t i = 0; i < len; i++) {
        int rc = session_feed(b, (const uint8_t *)d + i, 1, on_frame, fr);
        if (rc) return rc;
    }
    session_out_done(a, len);
    return 0;
}

/* A plain session's configuration (no keys). */
#define PLAIN(c, n, e, m)                                                                          \
    ((session_config){.cluster = (c), .name = (n), .expect_name = (e), .max_frame = (m)})

START_TEST(sessions_name_each_other_then_carry_frames)
{
    session_config ca = PLAIN("C1", "n1", "n2", 1024), cb = PLAIN("C1", "n2", NULL, 1024);
    session *a = session_new(&ca), *b = session_new(&cb);
    frames fr = {{0}, 0, 0};
    ck_assert_ptr_null(session_peer_name(a));
    uint8_t out[64];
    size_t n;
    jr_iovec iov[2] = {{"hel", 3}, {"lo", 2}};
    ck_assert_int_eq(session_seal(a, iov, 2, out, sizeof out, &n), -1); /* not open yet */
    ck_assert_int_eq(pass_hello(a, b, &fr), 0);
    ck_assert_int_eq(pass_hello(b, a, &fr), 0);
    ck_assert_str_eq(session_peer_name(a), "n2");
    ck_assert_str_eq(session_peer_name(b), "n1");
    ck_assert_int_eq(session_seal(a, iov, 2, out, sizeof out, &n), 0);
    ck_assert_uint_eq(n, session_sealed_size(a, 5));
    ck_assert_int_eq(session_feed(b, out, n, on_frame, &fr), 0);
    ck_assert_int_eq(fr.n, 1);
    ck_assert_int_eq(memcmp(fr.got, "hello|", 6), 0);
    session_free(a);
    session_free(b);
}
END_TEST

/* b refuses a's hello; the error says why. */
static void expect_refused(session_config ca, session_config cb, const char *why)
{
    session *a = session_new(&ca), *b = session_new(&cb);
    frames fr = {{0}, 0, 0};
    ck_assert_int_eq(pass_hello(a, b, &fr), -1);
    ck_assert_ptr_null(session_peer_name(b));
    ck_assert_msg(strstr(session_errmsg(b), why), "\"%s\" does not say \"%s\"", session_errmsg(b),
                  why);
    uint8_t junk[8] = {0, 0, 0, 1, 'x'};
    ck_assert_int_eq(session_feed(b, junk, 5, on_frame, &fr), -1); /* sticky */
    session_free(a);
    session_free(b);
}

START_TEST(sessions_refuse_other_clusters_impostors_and_garbage)
{
    session_config me = PLAIN("C1", "n2", NULL, 1024);
    expect_refused(PLAIN("C2", "n1", NULL, 1024), me, "another cluster");
    expect_refused(PLAIN("C1", "n2", NULL, 1024), me, "this server's name");
    expect_refused(PLAIN("C1", "n3", NULL, 1024), PLAIN("C1", "n2", "n1", 1024),
                   "not the server dialled");
    session *b = session_new(&me);
    frames fr = {{0}, 0, 0};
    const char http[] = "GET / HTTP/1.1\r\n\r\n";
    ck_assert_int_eq(session_feed(b, (const uint8_t *)http, sizeof http - 1, on_frame, &fr), -1);
    session_free(b);
    b = session_new(&me);
    uint8_t bad[] = {0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'};
    ck_assert_int_eq(session_feed(b, bad, sizeof bad, on_frame, &fr), -1);
    ck_assert(strstr(session_errmsg(b), "not a hello"));
    session_free(b);
}
END_TEST

/* ---- secure peer sessions ------------------------------------------------------------------- */

/* An identity of cluster "C1": its key pair and a certificate for `name` from `authority`. */
typedef struct ident {
    jr_link_key *id;
    uint8_t cert[JR_LINK_CERT_MAX];
    size_t cert_len;
} ident;

static void make_ident(ident *d, jr_link_key *authority, const char *name)
{
    ck_assert_int_eq(jr_link_key_generate(JR_LINK_IDENTITY, NULL, &d->id), 0);
    ck_assert_int_eq(
        jr_link_cert_sign(authority, d->id, "C1", name, d->cert, sizeof d->cert, &d->cert_len), 0);
}

static session_config secure(const char *name, const char *expect, jr_link_key *authority,
                             const ident *d)
{
    session_config c = PLAIN("C1", name, expect, 1024);
    c.authority = authority;
    c.identity = d->id;
    c.cert = d->cert;
    c.cert_len = d->cert_len;
    return c;
}

START_TEST(secure_sessions_prove_their_names_then_carry_sealed_frames)
{
    jr_link_key *auth;
    ck_assert_int_eq(jr_link_key_generate(JR_LINK_AUTHORITY, NULL, &auth), 0);
    ident d1, d2;
    make_ident(&d1, auth, "n1");
    make_ident(&d2, auth, "n2");
    session_config ca = secure("n1", "n2", auth, &d1), cb = secure("n2", NULL, auth, &d2);
    session *a = session_new(&ca), *b = session_new(&cb);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    frames fr = {{0}, 0, 0};
    uint8_t out[128];
    size_t n;
    jr_iovec iov[2] = {{"hel", 3}, {"lo", 2}};
    ck_assert_int_eq(session_seal(a, iov, 2, out, sizeof out, &n), -1); /* not open yet */
    /* HELLOs cross, then each side's AUTH answers the other's HELLO. */
    ck_assert_int_eq(pass_hello(a, b, &fr), 0);
    ck_assert_int_eq(pass_hello(b, a, &fr), 0);
    ck_assert_int_eq(pass_hello(a, b, &fr), 0);
    ck_assert_ptr_nonnull(session_peer_name(a));
    ck_assert_str_eq(session_peer_name(a), "n2");
    ck_assert_ptr_nonnull(session_peer_name(b));
    ck_assert_str_eq(session_peer_name(b), "n1");
    ck_assert_int_eq(session_seal(a, iov, 2, out, sizeof out, &n), 0);
    ck_assert_uint_eq(n, session_sealed_size(a, 5));
    ck_assert_ptr_null(memmem(out, n, "hello", 5)); /* sealed: the frame is not in clear */
    for (size_t i = 0; i < n; i++) ck_assert_int_eq(session_feed(b, out + i, 1, on_frame, &fr), 0);
    ck_assert_int_eq(fr.n, 1);
    ck_assert_int_eq(memcmp(fr.got, "hello|", 6), 0);
    /* b's sending side, tampered on the way: a refuses it. */
    uint8_t back[128];
    size_t bn;
    ck_assert_int_eq(session_seal(b, iov, 2, back, sizeof back, &bn), 0);
    back[bn - 1] ^= 1;
    ck_assert_int_eq(session_feed(a, back, bn, on_frame, &fr), -1);
    ck_assert_str_ne(session_errmsg(a), "");
    /* The same record again (a replay) fails authentication, and the session stays failed. */
    ck_assert_int_eq(session_feed(b, out, n, on_frame, &fr), -1);
    ck_assert_str_ne(session_errmsg(b), "");
    ck_assert_int_eq(session_seal(b, iov, 2, back, sizeof back, &bn), -1);
    ck_assert_int_eq(fr.n, 1);
    session_free(a);
    session_free(b);
    jr_link_key_free(d1.id);
    jr_link_key_free(d2.id);
    jr_link_key_free(auth);
}
END_TEST

/* b refuses a's handshake; the error says why. */
static void expect_secure_refused(session_config ca, session_config cb, const char *why)
{
    session *a = session_new(&ca), *b = session_new(&cb);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    frames fr = {{0}, 0, 0};
    ck_assert_int_eq(pass_hello(a, b, &fr), -1);
    ck_assert_ptr_null(session_peer_name(b));
    ck_assert_msg(strstr(session_errmsg(b), why), "\"%s\" does not say \"%s\"", session_errmsg(b),
                  why);
    session_free(a);
    session_free(b);
}

START_TEST(secure_sessions_refuse_other_authorities_names_and_plain_peers)
{
    jr_link_key *auth, *rogue;
    ck_assert_int_eq(jr_link_key_generate(JR_LINK_AUTHORITY, NULL, &auth), 0);
    ck_assert_int_eq(jr_link_key_generate(JR_LINK_AUTHORITY, NULL, &rogue), 0);
    ident d1, d2, r1, d3;
    make_ident(&d1, auth, "n1");
    make_ident(&d2, auth, "n2");
    make_ident(&r1, rogue, "n1");
    make_ident(&d3, auth, "n3");
    session_config me = secure("n2", NULL, auth, &d2);
    /* a certificate of another authority */
    expect_secure_refused(secure("n1", "n2", rogue, &r1), me,
                          "not signed by the cluster authority");
    /* n3, properly signed, dials n2 but n1 was dialled: n1's side refuses n3's name */
    expect_secure_refused(secure("n2", NULL, auth, &d3), secure("n1", "n3x", auth, &d1),
                          "another server name");
    /* a peer with this server's own name */
    ident d2b;
    make_ident(&d2b, auth, "n2");
    expect_secure_refused(secure("n2", "n2", auth, &d2b), me, "this server's name");
    /* a plain hello on a secure port */
    expect_secure_refused(PLAIN("C1", "n1", "n2", 1024), me, "");
    /* a certificate that is not for the identity key cannot even start a link */
    session_config forged = secure("n1", "n2", auth, &d1);
    forged.identity = d3.id;
    ck_assert_ptr_null(session_new(&forged));
    jr_link_key_free(d1.id);
    jr_link_key_free(d2.id);
    jr_link_key_free(d2b.id);
    jr_link_key_free(d3.id);
    jr_link_key_free(r1.id);
    jr_link_key_free(auth);
    jr_link_key_free(rogue);
}
END_TEST

/* ---- configuration -------------------------------------------------------------------------- */

static void expect_config_error(const char *json, const char *want)
{
    srv_config c;
    char err[400] = "";
    ck_assert_int_eq(srv_config_parse(json, NULL, &c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, want) != NULL, "error \"%s\" does not say \"%s\"", err, want);
}

#define BASE                                                                                       \
    "\"name\":\"n1\",\"listen\":\"127.0.0.1:4222\",\"cluster_listen\":\"127.0.0.1:6222\","         \
    "\"peers\":{\"n1\":\"127.0.0.1:6222\",\"n2\":\"127.0.0.1:6223\"},\"wal_dir\":\"/tmp/w\","      \
    "\"insecure_cluster\":true"

START_TEST(config_errors_name_the_field)
{
    srv_config c;
    char err[400];
    ck_assert_int_eq(srv_config_parse("{" BASE ",\"tags\":[\"az:1\"],\"sync\":\"interval\"}", NULL,
                                      &c, err, sizeof err),
                     0);
    ck_assert_str_eq(c.name, "n1");
    ck_assert_str_eq(c.store_dir, "/tmp/w");
    ck_assert_uint_eq(c.npeers, 2);
    ck_assert_str_eq(c.peers[1].name, "n2");
    ck_assert_int_eq(c.peers[1].port, 6223);
    ck_assert_int_eq(c.sync_interval, 1);
    ck_assert_int_eq(c.huge_pages, 1);
    srv_config_free(&c);
    ck_assert_int_eq(srv_config_parse("{" BASE ",\"huge_pages\":false}", NULL, &c, err, sizeof err),
                     0);
    ck_assert_int_eq(c.huge_pages, 0);
    srv_config_free(&c);
    expect_config_error("{" BASE ",\"huge_pages\":1}", "huge_pages: must be true or false");
    expect_config_error("{" BASE ",\"max_payload\":\"big\"}", "max_payload: must be an integer");
    expect_config_error("{" BASE ",\"max_payload\":0}", "max_payload: must be between");
    expect_config_error("{\"listen\":\"nohost\"}", "listen: must be a \"host:port\"");
    expect_config_error("{" BASE ",\"colour\":1}", "colour: unknown field");
    expect_config_error("{" BASE ",\"sync\":\"never\"}", "sync: must be");
    expect_config_error("{" BASE ",\"heartbeat_ms\":2000}", "heartbeat_ms: must be below");
    expect_config_error("{\"name\":\"n1\"}", "listen: required");
    expect_config_error("{" BASE ",\"name\":\"n9\"}", "duplicate");
    expect_config_error("{\n\"name\": \"n1\",\n  oops\n}", "line 3");
    expect_config_error("{\"name\":\"x\",\"listen\":\"a:1\",\"cluster_listen\":\"a:2\","
                        "\"peers\":{\"n1\":\"a:3\"},\"wal_dir\":\"/w\"}",
                        "peers: must list this server");
    expect_config_error("{\"name\":\"n1\",\"listen\":\"a:1\",\"cluster_listen\":\"a:2\","
                        "\"peers\":{\"n1\":\"a:3\"},\"wal_dir\":\"/w\"}",
                        "authority: required");
}
END_TEST

/* Writes bin's text form to dir/file. */
static void write_key_file(const char *dir, const char *file, const void *bin, size_t len)
{
    char path[512], text[JR_LINK_TEXT_MAX];
    size_t tl;
    ck_assert_int_eq(jr_link_text_encode(bin, len, text, sizeof text, &tl), 0);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", text);
    fclose(f);
}

static void write_key(const char *dir, const char *file, const jr_link_key *k, int secret)
{
    uint8_t b[JR_LINK_KEY_BYTES];
    size_t len;
    ck_assert_int_eq(jr_link_key_encode(k, secret, b, sizeof b, &len), 0);
    write_key_file(dir, file, b, len);
}

#define KEYS_BASE                                                                                  \
    "\"name\":\"n1\",\"cluster\":\"C1\",\"listen\":\"127.0.0.1:4222\","                            \
    "\"cluster_listen\":\"127.0.0.1:6222\",\"peers\":{\"n1\":\"127.0.0.1:6222\"},"                 \
    "\"wal_dir\":\"/tmp/w\""

static void expect_keys_error(const char *dir, const char *fields, const char *want)
{
    char json[1024], err[600] = "";
    srv_config c;
    snprintf(json, sizeof json, "{" KEYS_BASE ",%s}", fields);
    ck_assert_int_eq(srv_config_parse(json, dir, &c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, want) != NULL, "error \"%s\" does not say \"%s\"", err, want);
}

START_TEST(config_reads_and_checks_the_key_files)
{
    char dir[] = "/tmp/jetraft-proto-keys-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    jr_link_key *auth, *rogue, *id, *other;
    ck_assert_int_eq(jr_link_key_generate(JR_LINK_AUTHORITY, NULL, &auth), 0);
    ck_assert_int_eq(jr_link_key_generate(JR_LINK_AUTHORITY, NULL, &rogue), 0);
    ck_assert_int_eq(jr_link_key_generate(JR_LINK_IDENTITY, NULL, &id), 0);
    ck_assert_int_eq(jr_link_key_generate(JR_LINK_IDENTITY, NULL, &other), 0);
    write_key(dir, "auth.pub", auth, 0);
    write_key(dir, "n1.key", id, 1);
    write_key(dir, "n1.pub", id, 0);
    uint8_t cert[JR_LINK_CERT_MAX];
    size_t cl;
    ck_assert_int_eq(jr_link_cert_sign(auth, id, "C1", "n1", cert, sizeof cert, &cl), 0);
    write_key_file(dir, "n1.cert", cert, cl);
    ck_assert_int_eq(jr_link_cert_sign(auth, id, "C1", "n2", cert, sizeof cert, &cl), 0);
    write_key_file(dir, "n2.cert", cert, cl);
    ck_assert_int_eq(jr_link_cert_sign(rogue, id, "C1", "n1", cert, sizeof cert, &cl), 0);
    write_key_file(dir, "rogue.cert", cert, cl);
    ck_assert_int_eq(jr_link_cert_sign(auth, other, "C1", "n1", cert, sizeof cert, &cl), 0);
    write_key_file(dir, "other.cert", cert, cl);
    ck_assert_int_eq(jr_link_cert_sign(auth, id, "C2", "n1", cert, sizeof cert, &cl), 0);
    write_key_file(dir, "c2.cert", cert, cl);

    /* Relative paths are taken from the configuration's directory. */
    srv_config c;
    char err[600] = "";
    ck_assert_int_eq(srv_config_parse("{" KEYS_BASE ",\"authority\":\"auth.pub\",\"identity\":"
                                      "\"n1.key\",\"certificate\":\"n1.cert\"}",
                                      dir, &c, err, sizeof err),
                     0);
    ck_assert_ptr_nonnull(c.authority);
    ck_assert_int_eq(jr_link_key_has_secret(c.identity), 1);
    ck_assert_uint_gt(c.cert_len, 0);
    srv_config_free(&c);

#define K(a, i, ce) "\"authority\":\"" a "\",\"identity\":\"" i "\",\"certificate\":\"" ce "\""
    expect_keys_error(dir, K("auth.pub", "n1.key", "n2.cert"),
                      "certificate: issued to \"n2\", not to this server (\"n1\")");
    expect_keys_error(dir, K("auth.pub", "n1.key", "rogue.cert"),
                      "certificate: not signed by this authority");
    expect_keys_error(dir, K("auth.pub", "n1.key", "c2.cert"),
                      "certificate: not signed by this authority for this cluster");
    expect_keys_error(dir, K("auth.pub", "n1.key", "other.cert"),
                      "certificate: not issued for the identity key");
    expect_keys_error(dir, K("auth.pub", "n1.pub", "n1.cert"),
                      "identity: not an identity key pair");
    expect_keys_error(dir, K("n1.pub", "n1.key", "n1.cert"), "authority: not an authority key");
    expect_keys_error(dir, K("missing.pub", "n1.key", "n1.cert"), "authority: cannot read");
    expect_keys_error(dir, K("auth.pub", "n1.cert", "n1.cert"), "identity: ");
    ck_assert_int_eq(
        srv_config_parse("{\"name\":\"n1\",\"cluster\":\"C1\",\"listen\":\"a:1\","
                         "\"cluster_listen\":\"a:2\",\"wal_dir\":\"/w\",\"peers\":{"
                         "\"n1\":\"a:2\",\"n 2\":\"a:3\"}," K("auth.pub", "n1.key", "n1.cert") "}",
                         dir, &c, err, sizeof err),
        -1);
    ck_assert_msg(strstr(err, "peers.n 2: a server name in a certificate"), "%s", err);
    expect_keys_error(dir, "\"authority\":\"auth.pub\",\"identity\":\"n1.key\"",
                      "certificate: required");
    expect_keys_error(dir, K("auth.pub", "n1.key", "n1.cert") ",\"insecure_cluster\":true",
                      "insecure_cluster: cannot be combined");
#undef K
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    jr_link_key_free(auth);
    jr_link_key_free(rogue);
    jr_link_key_free(id);
    jr_link_key_free(other);
}
END_TEST

START_TEST(config_users_need_password_hashes)
{
    char hash[crypto_pwhash_STRBYTES], json[1024], err[600] = "";
    ck_assert_int_eq(sodium_init() >= 0, 1);
    ck_assert_int_eq(crypto_pwhash_str(hash, "s3cret", 6, crypto_pwhash_OPSLIMIT_INTERACTIVE,
                                       crypto_pwhash_MEMLIMIT_INTERACTIVE),
                     0);
    srv_config c;
    snprintf(json, sizeof json,
             "{" BASE ",\"users\":[{\"user\":\"app\",\"password\":\"%s\"},"
             "{\"user\":\"sys\",\"password\":\"%s\",\"system\":true}]}",
             hash, hash);
    ck_assert_int_eq(srv_config_parse(json, NULL, &c, err, sizeof err), 0);
    ck_assert_uint_eq(c.nusers, 2);
    ck_assert_str_eq(c.users[0].user, "app");
    ck_assert_int_eq(c.users[0].system, 0);
    ck_assert_int_eq(c.users[1].system, 1);
    ck_assert_int_eq(crypto_pwhash_str_verify(c.users[1].hash, "s3cret", 6), 0);
    srv_config_free(&c);
    expect_config_error("{" BASE ",\"users\":[{\"user\":\"app\",\"password\":\"s3cret\"}]}",
                        "users[0].password: must be a crypto_pwhash_str hash");
    expect_config_error("{" BASE ",\"users\":[{\"user\":\"app\"}]}", "users[0]: needs");
    expect_config_error("{" BASE ",\"users\":[{\"user\":\"app\",\"role\":1}]}",
                        "users[0].role: unknown field");
    expect_config_error("{" BASE ",\"users\":{}}", "users: must be an array");
    snprintf(json, sizeof json,
             "{" BASE ",\"users\":[{\"user\":\"a\",\"password\":\"%s\"},"
             "{\"user\":\"a\",\"password\":\"%s\"}]}",
             hash, hash);
    expect_config_error(json, "users[1].user: \"a\" is listed twice");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("server");
    TCase *tc = tcase_create("proto");
    tcase_add_test(tc, pipelined_commands_in_one_read);
    tcase_add_test(tc, a_good_read_leaves_no_error_text);
    tcase_add_test(tc, split_at_every_byte_gives_the_same_operations);
    tcase_add_test(tc, malformed_input_is_refused);
    tcase_add_test(tc, oversized_payload_and_line_are_refused_without_buffering_them);
    tcase_add_test(tc, random_garbage_never_crashes_and_stays_bounded);
    tcase_add_test(tc, subjects_match_with_wildcards);
    tcase_add_test(tc, subject_matches_agrees_with_the_token_definition);
    tcase_add_test(tc, a_queue_group_gets_one_copy);
    tcase_add_test(tc, frames_split_at_every_byte);
    tcase_add_test(tc, an_oversized_or_empty_frame_length_closes_the_link);
    tcase_add_test(tc, sessions_name_each_other_then_carry_frames);
    tcase_add_test(tc, sessions_refuse_other_clusters_impostors_and_garbage);
    tcase_add_test(tc, secure_sessions_prove_their_names_then_carry_sealed_frames);
    tcase_add_test(tc, secure_sessions_refuse_other_authorities_names_and_plain_peers);
    tcase_add_test(tc, config_errors_name_the_field);
    tcase_add_test(tc, config_reads_and_checks_the_key_files);
    tcase_add_test(tc, config_users_need_password_hashes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
