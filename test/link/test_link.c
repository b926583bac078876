/*
 * The secure-link API (include/jetraft/link.h): keys and certificates, the handshake and its
 * rejections (another authority, another cluster, another name, a certificate replayed without
 * its identity key, a recorded handshake replayed, a reflected connection), DATA records and
 * theirs (replayed, reordered, truncated, altered at every byte), reassembly of records split
 * at every byte, length bounds checked before anything is kept, garbage, misuse, the cost per
 * frame (bytes and allocations), and a two-server cluster whose node frames travel over links.
 */
#include <check.h>
#include <stddef.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "link_test.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/checksum.h"

static const char *const names[] = {"a", "b", "c", "m"};
enum { A, B, C, M };

/* A dialer a -> b and an acceptor b over fresh keys (or the given ones). */
typedef struct pair {
    t_keys k;
    jr_link *d, *a;
} pair;

static void pair_new(pair *p)
{
    t_keys_make(&p->k, "prod", names, 4);
    jr_link_config cfg;
    t_link_config(&cfg, &p->k, JR_LINK_DIALER, A, "b");
    ck_assert_int_eq(jr_link_new(&cfg, &p->d), 0);
    t_link_config(&cfg, &p->k, JR_LINK_ACCEPTOR, B, NULL);
    ck_assert_int_eq(jr_link_new(&cfg, &p->a), 0);
}

static void pair_open(pair *p)
{
    pair_new(p);
    ck_assert_int_eq(t_handshake(p->d, p->a), 0);
    ck_assert_int_eq(jr_link_state(p->d), JR_LINK_OPEN);
    ck_assert_int_eq(jr_link_state(p->a), JR_LINK_OPEN);
}

static void pair_free(pair *p)
{
    jr_link_free(p->d);
    jr_link_free(p->a);
    t_keys_free(&p->k);
}

/* ---------------------------------------------------------------------------------------------
 * Keys and certificates
 */
START_TEST(keys_round_trip_in_bytes_and_text_and_are_zeroed_when_freed)
{
    t_alloc ta;
    t_alloc_init(&ta);
    jr_link_key *k, *back, *pub;
    ck_assert_int_eq(jr_link_key_generate(JR_LINK_IDENTITY, &ta.a, &k), 0);
    uint8_t sec[JR_LINK_KEY_BYTES], pb[JR_LINK_KEY_BYTES];
    size_t n;
    ck_assert_int_eq(jr_link_key_encode(k, 1, sec, sizeof sec, &n), 0);
    ck_assert_uint_eq(n, JR_LINK_KEY_BYTES);
    ck_assert_int_eq(jr_link_key_encode(k, 0, pb, sizeof pb, &n), 0);
    char text[JR_LINK_TEXT_MAX];
    size_t tlen;
    ck_assert_int_eq(jr_link_text_encode(sec, sizeof sec, text, sizeof text, &tlen), 0);
    ck_assert_uint_eq(strlen(text), tlen);
    /* a config file's line: a trailing newline is skipped */
    text[tlen] = '\n';
    uint8_t bin[JR_LINK_KEY_BYTES];
    ck_assert_int_eq(jr_link_text_decode(text, tlen + 1, bin, sizeof bin, &n), 0);
    ck_assert_uint_eq(n, sizeof sec);
    ck_assert(!memcmp(bin, sec, n));
    uint8_t scratch[JR_LINK_KEY_BYTES];
    size_t bad;
    ck_assert_int_eq(jr_link_text_decode(text, tlen, scratch, 10, &bad), JR_EMSGSIZE);
    ck_assert_int_eq(jr_link_text_decode("JRK!", 4, scratch, sizeof scratch, &bad), JR_ECORRUPT);

    ck_assert_int_eq(jr_link_key_decode(bin, n, &ta.a, &back), 0);
    ck_assert_int_eq(jr_link_key_role(back), JR_LINK_IDENTITY);
    ck_assert_int_eq(jr_link_key_has_secret(back), 1);
    unsigned char p1[32], p2[32];
    jr_link_key_public(k, p1);
    jr_link_key_public(back, p2);
    ck_assert(!memcmp(p1, p2, 32));
    ck_assert_int_eq(jr_link_key_decode(pb, sizeof pb, &ta.a, &pub), 0);
    ck_assert_int_eq(jr_link_key_has_secret(pub), 0);
    ck_assert_int_eq(jr_link_key_encode(pub, 1, sec, sizeof sec, &n), JR_EINVAL);

    jr_link_key_free(k);
    jr_link_key_free(back);
    jr_link_key_free(pub);
    ck_assert_int_eq(ta.live, 0);
    ck_assert_uint_eq(ta.dirty, 0);
    ck_assert_uint_eq(ta.zeroed, 3);
}
END_TEST

START_TEST(a_key_blob_is_decoded_strictly)
{
    jr_link_key *k, *x;
    ck_assert_int_eq(jr_link_key_generate(JR_LINK_AUTHORITY, NULL, &k), 0);
    uint8_t b[JR_LINK_KEY_BYTES];
    size_t n;
    ck_assert_int_eq(jr_link_key_encode(k, 1, b, sizeof b, &n), 0);
    for (size_t i = 0; i < n; i++) {
        b[i] ^= 0x10;
        ck_assert_int_eq(jr_link_key_decode(b, n, NULL, &x), JR_ECORRUPT);
        ck_assert_ptr_null(x);
        b[i] ^= 0x10;
    }
    ck_assert_int_eq(jr_link_key_decode(b, n - 1, NULL, &x), JR_ECORRUPT);
    /* a later version with a valid checksum */
    b[3] = 2;
    jr__put_u64(b + 38, jr__xxh3(b, 38));
    ck_assert_int_eq(jr_link_key_decode(b, n, NULL, &x), JR_EVERSION);
    jr_link_key_free(k);
}
END_TEST

START_TEST(a_certificate_checks_authority_cluster_and_name)
{
    t_keys k, other;
    t_keys_make(&k, "prod", names, 2);
    t_keys_make(&other, "prod", names, 1);
    const uint8_t *c = k.cert[A];
    size_t n = k.cert_len[A];
    ck_assert_int_eq(jr_link_cert_check(c, n, k.authority, "prod", "a"), 0);
    ck_assert_int_eq(jr_link_cert_check(c, n, k.authority, "prod", NULL), 0);
    ck_assert_int_eq(jr_link_cert_check(c, n, other.authority, "prod", "a"), JR_EAUTH);
    ck_assert_int_eq(jr_link_cert_check(c, n, k.authority, "test", "a"), JR_EAUTH);
    ck_assert_int_eq(jr_link_cert_check(c, n, k.authority, "prod", "b"), JR_EAUTH);
    char name[8];
    ck_assert_int_eq(jr_link_cert_name(c, n, name, sizeof name), 0);
    ck_assert_str_eq(name, "a");
    /* the authority's public key alone checks certificates */
    uint8_t pb[JR_LINK_KEY_BYTES];
    size_t pn;
    jr_link_key *pub;
    ck_assert_int_eq(jr_link_key_encode(k.authority, 0, pb, sizeof pb, &pn), 0);
    ck_assert_int_eq(jr_link_key_decode(pb, pn, NULL, &pub), 0);
    ck_assert_int_eq(jr_link_cert_check(c, n, pub, "prod", "a"), 0);
    /* which cannot sign, nor can an identity key, nor can a name with a space be signed */
    uint8_t out[JR_LINK_CERT_MAX];
    size_t on;
    ck_assert_int_eq(jr_link_cert_sign(pub, k.id[A], "prod", "a", out, sizeof out, &on), JR_EINVAL);
    ck_assert_int_eq(jr_link_cert_sign(k.id[B], k.id[A], "prod", "a", out, sizeof out, &on),
                     JR_EINVAL);
    ck_assert_int_eq(jr_link_cert_sign(k.authority, k.id[A], "prod", "a b", out, sizeof out, &on),
                     JR_EINVAL);
    jr_link_key_free(pub);

    /* every byte is covered: any change fails, as corrupt or unauthentic */
    uint8_t m[JR_LINK_CERT_MAX];
    memcpy(m, c, n);
    for (size_t i = 0; i < n; i++) {
        m[i] ^= 0x01;
        int rc = jr_link_cert_check(m, n, k.authority, "prod", NULL);
        ck_assert_msg(rc == JR_EAUTH || rc == JR_ECORRUPT || rc == JR_EVERSION, "byte %zu: %d", i,
                      rc);
        m[i] ^= 0x01;
    }
    for (size_t len = 0; len < n; len++)
        ck_assert_int_eq(jr_link_cert_check(m, len, k.authority, "prod", NULL), JR_ECORRUPT);
    m[3] = 2;
    ck_assert_int_eq(jr_link_cert_check(m, n, k.authority, "prod", NULL), JR_EVERSION);
    t_keys_free(&k);
    t_keys_free(&other);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The handshake
 */
START_TEST(a_handshake_authenticates_both_sides_and_frames_flow_both_ways)
{
    pair p;
    pair_new(&p);
    ck_assert_int_eq(jr_link_state(p.d), JR_LINK_HANDSHAKE);
    ck_assert_ptr_null(jr_link_peer_name(p.d));
    ck_assert_int_eq(t_handshake(p.d, p.a), 0);
    ck_assert_str_eq(jr_link_peer_name(p.d), "b");
    ck_assert_str_eq(jr_link_peer_name(p.a), "a"); /* learned from a's certificate */
    t_bytes w = {0}, got = {0};
    int nf = 0;
    ck_assert_int_eq(t_seal(p.d, "hello b", 7, &w), 0);
    ck_assert_int_eq(t_seal(p.d, "", 0, &w), 0); /* an empty frame is a frame */
    ck_assert_int_eq(t_feed(p.a, &w, 0, &got, &nf), 0);
    ck_assert_int_eq(nf, 2);
    ck_assert_uint_eq(got.len, 7);
    ck_assert(!memcmp(got.data, "hello b", 7));
    got.len = 0;
    nf = 0;
    /* a frame opened stays valid while the host seals on the same link (jr_host.send called
     * while the opened frame is still in use) */
    ck_assert_int_eq(t_seal(p.d, "kept", 4, &w), 0);
    size_t used, flen;
    const void *f;
    ck_assert_int_eq(jr_link_feed(p.a, w.data, w.len, &used, &f, &flen), 0);
    ck_assert_uint_eq(used, w.len);
    w.len = 0;
    ck_assert_int_eq(t_seal(p.a, "reply", 5, &w), 0);
    ck_assert_uint_eq(flen, 4);
    ck_assert(!memcmp(f, "kept", 4));
    ck_assert_int_eq(t_feed(p.d, &w, 0, NULL, NULL), 0);
    /* a frame in pieces, as jr_host.send gives it */
    jr_iovec iov[3] = {{"he", 2}, {NULL, 0}, {"llo a", 5}};
    uint8_t out[64];
    size_t n;
    ck_assert_int_eq(jr_link_seal(p.a, iov, 3, out, sizeof out, &n), 0);
    t_bytes_put(&w, out, n);
    ck_assert_int_eq(t_feed(p.d, &w, 0, &got, &nf), 0);
    ck_assert_int_eq(nf, 1);
    ck_assert(!memcmp(got.data, "hello a", 7));
    /* a clean end */
    ck_assert_int_eq(jr_link_seal_final(p.d, out, sizeof out, &n), 0);
    ck_assert_uint_eq(n, JR_LINK_FRAME_OVERHEAD);
    ck_assert_int_eq(jr_link_seal(p.d, iov, 1, out, sizeof out, &n), JR_EMISUSE);
    ck_assert_int_eq(jr_link_seal_final(p.d, out, sizeof out, &n), JR_EMISUSE);
    t_bytes_put(&w, out, JR_LINK_FRAME_OVERHEAD);
    ck_assert_int_eq(t_feed(p.a, &w, 0, NULL, NULL), 0);
    ck_assert_int_eq(jr_link_state(p.a), JR_LINK_CLOSED);
    ck_assert_int_eq(jr_link_eof(p.a), 0);
    /* the other direction still works after a half close */
    ck_assert_int_eq(t_seal(p.a, "late", 4, &w), 0);
    ck_assert_int_eq(t_feed(p.d, &w, 0, NULL, &nf), 0);
    t_bytes_free(&w);
    t_bytes_free(&got);
    pair_free(&p);
}
END_TEST

START_TEST(a_server_without_a_signed_identity_cannot_start)
{
    t_keys k, other;
    t_keys_make(&k, "prod", names, 2);
    t_keys_make(&other, "prod", names, 2);
    jr_link_config cfg;
    jr_link *l = (jr_link *)&cfg;
    /* its certificate signed by another authority */
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, A, NULL);
    cfg.cert = other.cert[A];
    cfg.cert_len = other.cert_len[A];
    ck_assert_int_eq(jr_link_new(&cfg, &l), JR_EAUTH);
    ck_assert_ptr_null(l);
    /* another server's certificate (not for its identity key) */
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, A, NULL);
    cfg.cert = k.cert[B];
    cfg.cert_len = k.cert_len[B];
    ck_assert_int_eq(jr_link_new(&cfg, &l), JR_EAUTH);
    /* a certificate of another cluster */
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, A, NULL);
    cfg.cluster = "test";
    ck_assert_int_eq(jr_link_new(&cfg, &l), JR_EAUTH);
    /* no certificate, no secret key, no expected name to dial */
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, A, NULL);
    cfg.cert = NULL;
    ck_assert_int_eq(jr_link_new(&cfg, &l), JR_EINVAL);
    t_link_config(&cfg, &k, JR_LINK_DIALER, A, NULL);
    ck_assert_int_eq(jr_link_new(&cfg, &l), JR_EINVAL);
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, A, NULL);
    cfg.identity = k.authority;
    ck_assert_int_eq(jr_link_new(&cfg, &l), JR_EINVAL);
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, A, NULL);
    cfg.max_frame = 10;
    ck_assert_int_eq(jr_link_new(&cfg, &l), JR_EINVAL);
    t_keys_free(&k);
    t_keys_free(&other);
}
END_TEST

/* Runs a handshake of dialer a -> expect against an acceptor with identity `who` and
 * certificate cert; returns the dialer's error, and the acceptor's in *acc_rc. */
static int dial(t_keys *k, const char *expect, size_t who, const uint8_t *cert, size_t cert_len,
                const char **why)
{
    jr_link_config cfg;
    jr_link *d, *a;
    t_link_config(&cfg, k, JR_LINK_DIALER, A, expect);
    ck_assert_int_eq(jr_link_new(&cfg, &d), 0);
    t_link_config(&cfg, k, JR_LINK_ACCEPTOR, who, NULL);
    cfg.cert = cert;
    cfg.cert_len = cert_len;
    cfg.cluster = k->cluster;
    ck_assert_int_eq(jr_link_new(&cfg, &a), 0);
    t_handshake(d, a);
    int rc = jr_link_feed(d, "", 0, &(size_t){0}, &(const void *){0}, &(size_t){0});
    static char msg[128];
    snprintf(msg, sizeof msg, "%s", jr_link_errmsg(d));
    *why = msg;
    /* a failed link seals nothing and reports no peer */
    uint8_t out[64];
    size_t n;
    if (rc) {
        ck_assert_int_eq(jr_link_state(d), JR_LINK_FAILED);
        ck_assert_int_eq(jr_link_seal(d, NULL, 0, out, sizeof out, &n), rc);
        ck_assert_ptr_null(jr_link_peer_name(d));
        ck_assert_int_ne(jr_link_state(a), JR_LINK_OPEN);
    }
    jr_link_free(d);
    jr_link_free(a);
    return rc;
}

START_TEST(a_peer_certified_by_another_authority_is_refused)
{
    t_keys k, other;
    t_keys_make(&k, "prod", names, 2);
    t_keys_make(&other, "prod", names, 2);
    /* b's link trusts the other authority (a whole other cluster key set) */
    jr_link_config cfg;
    jr_link *d, *a;
    t_link_config(&cfg, &k, JR_LINK_DIALER, A, "b");
    ck_assert_int_eq(jr_link_new(&cfg, &d), 0);
    t_link_config(&cfg, &other, JR_LINK_ACCEPTOR, B, NULL);
    ck_assert_int_eq(jr_link_new(&cfg, &a), 0);
    ck_assert_int_eq(t_handshake(d, a), JR_EAUTH);
    ck_assert_int_eq(jr_link_state(d), JR_LINK_FAILED);
    ck_assert_int_eq(jr_link_state(a), JR_LINK_FAILED);
    ck_assert_str_eq(jr_link_errmsg(d), "certificate not signed by the cluster authority");
    jr_link_free(d);
    jr_link_free(a);
    t_keys_free(&k);
    t_keys_free(&other);
}
END_TEST

START_TEST(a_peer_of_another_cluster_is_refused)
{
    t_keys k, test;
    t_keys_make(&k, "prod", names, 2);
    /* the same authority signs for two clusters: a "test" certificate does not join "prod" */
    t_keys_make(&test, "test", names, 2);
    uint8_t cert[JR_LINK_CERT_MAX];
    size_t n;
    ck_assert_int_eq(jr_link_cert_sign(k.authority, k.id[B], "test", "b", cert, sizeof cert, &n),
                     0);
    jr_link_config cfg;
    jr_link *d, *a;
    t_link_config(&cfg, &k, JR_LINK_DIALER, A, "b");
    ck_assert_int_eq(jr_link_new(&cfg, &d), 0);
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, B, NULL);
    cfg.cert = cert;
    cfg.cert_len = n;
    cfg.cluster = "test";
    ck_assert_int_eq(jr_link_new(&cfg, &a), 0);
    ck_assert_int_eq(t_handshake(d, a), JR_EAUTH);
    ck_assert_str_eq(jr_link_errmsg(d), "certificate of another cluster");
    jr_link_free(d);
    jr_link_free(a);
    t_keys_free(&k);
    t_keys_free(&test);
}
END_TEST

START_TEST(a_peer_with_another_name_is_refused_by_the_dialer)
{
    t_keys k;
    t_keys_make(&k, "prod", names, 3);
    const char *why;
    /* a dials "b" and reaches c, whose certificate is valid, for "c" */
    ck_assert_int_eq(dial(&k, "b", C, k.cert[C], k.cert_len[C], &why), JR_EAUTH);
    ck_assert_str_eq(why, "certificate of another server name");
    ck_assert_int_eq(dial(&k, "c", C, k.cert[C], k.cert_len[C], &why), 0);
    /* an acceptor configured with an expected name checks it too */
    jr_link_config cfg;
    jr_link *d, *a;
    t_link_config(&cfg, &k, JR_LINK_DIALER, C, "b");
    ck_assert_int_eq(jr_link_new(&cfg, &d), 0);
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, B, "a");
    ck_assert_int_eq(jr_link_new(&cfg, &a), 0);
    ck_assert_int_eq(t_handshake(d, a), JR_EAUTH);
    ck_assert_str_eq(jr_link_errmsg(a), "certificate of another server name");
    jr_link_free(d);
    jr_link_free(a);
    /* a server that claims the dialer's own name (a reflected connection) */
    t_link_config(&cfg, &k, JR_LINK_DIALER, A, "a");
    ck_assert_int_eq(jr_link_new(&cfg, &d), 0);
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, A, NULL);
    ck_assert_int_eq(jr_link_new(&cfg, &a), 0);
    ck_assert_int_eq(t_handshake(d, a), JR_EAUTH);
    ck_assert_str_eq(jr_link_errmsg(d), "peer claims this server's name");
    jr_link_free(d);
    jr_link_free(a);
    t_keys_free(&k);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * A forger, speaking the protocol byte by byte (the layout of include/jetraft/link.h): it holds
 * b's certificate, which is public, but not b's identity secret key.
 */
typedef struct forger {
    uint8_t eph_pk[32], eph_sk[32];
    uint8_t hello[4 + 44 + JR_LINK_CERT_MAX];
    size_t hello_len;
} forger;

static void forger_hello(forger *f, int role, const uint8_t *cert, size_t cert_len)
{
    crypto_kx_keypair(f->eph_pk, f->eph_sk);
    uint8_t *b = f->hello + 4;
    memcpy(b, "JRL", 3);
    b[3] = 1;
    b[4] = (uint8_t)role;
    b[5] = 0;
    jr__put_u32(b + 6, 64 << 10);
    memcpy(b + 10, f->eph_pk, 32);
    b[42] = (uint8_t)cert_len;
    b[43] = (uint8_t)(cert_len >> 8);
    memcpy(b + 44, cert, cert_len);
    jr__put_u32(f->hello, (uint32_t)(44 + cert_len));
    f->hello_len = 4 + 44 + cert_len;
}

/* An AUTH record signed by sk over the transcript of the two HELLO records (the dialer's
 * first) for `role`. */
static void forger_auth(uint8_t rec[4 + 88], const uint8_t *dialer_hello, size_t dlen,
                        const uint8_t *acceptor_hello, size_t alen, int role, const uint8_t *sk)
{
    uint8_t t[32];
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, sizeof t);
    crypto_generichash_update(&h, (const uint8_t *)"jetraft-link-v1", 15);
    crypto_generichash_update(&h, dialer_hello, dlen);
    crypto_generichash_update(&h, acceptor_hello, alen);
    crypto_generichash_final(&h, t, sizeof t);
    uint8_t msg[20 + 1 + 32];
    memcpy(msg, "jetraft-link-auth-v1", 20);
    msg[20] = (uint8_t)role;
    memcpy(msg + 21, t, 32);
    jr__put_u32(rec, 88);
    crypto_sign_detached(rec + 4, NULL, msg, sizeof msg, sk);
    randombytes_buf(rec + 4 + 64, 24); /* a secretstream header */
}

START_TEST(a_certificate_replayed_without_its_identity_key_is_refused)
{
    t_keys k;
    t_keys_make(&k, "prod", names, 4);
    jr_link_config cfg;
    jr_link *d;
    t_link_config(&cfg, &k, JR_LINK_DIALER, A, "b");
    ck_assert_int_eq(jr_link_new(&cfg, &d), 0);
    /* m presents b's certificate and signs the transcript with its own identity key */
    forger m;
    forger_hello(&m, JR_LINK_ACCEPTOR, k.cert[B], k.cert_len[B]);
    t_bytes to_d = {0}, from_d = {0};
    t_take_out(d, &from_d);
    t_bytes_put(&to_d, m.hello, m.hello_len);
    ck_assert_int_eq(t_feed(d, &to_d, 0, NULL, NULL), 0);
    /* the certificate itself checks out, but names no one until its key is proven */
    ck_assert_int_eq(jr_link_state(d), JR_LINK_HANDSHAKE);
    ck_assert_ptr_null(jr_link_peer_name(d));
    uint8_t m_sk[64], m_pk[32], rec[4 + 88];
    crypto_sign_keypair(m_pk, m_sk);
    forger_auth(rec, from_d.data, from_d.len, m.hello, m.hello_len, JR_LINK_ACCEPTOR, m_sk);
    t_bytes_put(&to_d, rec, sizeof rec);
    ck_assert_int_eq(t_feed(d, &to_d, 0, NULL, NULL), JR_EAUTH);
    ck_assert_str_eq(jr_link_errmsg(d), "peer did not prove its identity key");
    ck_assert_int_eq(jr_link_state(d), JR_LINK_FAILED);
    jr_link_free(d);

    /* the same forger holding b's real key but signing as the other role is refused too: the
     * role is in what is signed */
    uint8_t b_sk[JR_LINK_KEY_BYTES];
    size_t n;
    ck_assert_int_eq(jr_link_key_encode(k.id[B], 1, b_sk, sizeof b_sk, &n), 0);
    uint8_t pk[32], sk[64];
    crypto_sign_seed_keypair(pk, sk, b_sk + 6);
    ck_assert_int_eq(jr_link_new(&cfg, &d), 0);
    from_d.len = 0;
    t_take_out(d, &from_d);
    forger_hello(&m, JR_LINK_ACCEPTOR, k.cert[B], k.cert_len[B]);
    t_bytes_put(&to_d, m.hello, m.hello_len);
    forger_auth(rec, from_d.data, from_d.len, m.hello, m.hello_len, JR_LINK_DIALER, sk);
    t_bytes_put(&to_d, rec, sizeof rec);
    ck_assert_int_eq(t_feed(d, &to_d, 0, NULL, NULL), JR_EAUTH);
    jr_link_free(d);
    /* and signing as the right role, with b's key, is what b does: accepted (the forger's
     * bytes follow the documented layout) */
    ck_assert_int_eq(jr_link_new(&cfg, &d), 0);
    from_d.len = 0;
    t_take_out(d, &from_d);
    t_bytes_put(&to_d, m.hello, m.hello_len);
    ck_assert_int_eq(t_feed(d, &to_d, 0, NULL, NULL), 0);
    t_bytes_put(&to_d, m.hello, 0);
    forger_auth(rec, from_d.data, from_d.len, m.hello, m.hello_len, JR_LINK_ACCEPTOR, sk);
    t_bytes_put(&to_d, rec, sizeof rec);
    ck_assert_int_eq(t_feed(d, &to_d, 0, NULL, NULL), 0);
    ck_assert_int_eq(jr_link_state(d), JR_LINK_OPEN);
    jr_link_free(d);
    sodium_memzero(sk, sizeof sk);
    t_bytes_free(&to_d);
    t_bytes_free(&from_d);
    t_keys_free(&k);
}
END_TEST

START_TEST(a_recorded_handshake_replayed_to_a_new_connection_is_refused)
{
    pair p;
    pair_new(&p);
    /* record everything b sent in a good handshake */
    t_bytes to_a = {0}, to_d = {0}, rec = {0};
    for (int round = 0; round < 4; round++) {
        t_take_out(p.d, &to_a);
        t_take_out(p.a, &to_d);
        t_bytes_put(&rec, to_d.data, to_d.len);
        ck_assert_int_eq(t_feed(p.a, &to_a, 0, NULL, NULL), 0);
        ck_assert_int_eq(t_feed(p.d, &to_d, 0, NULL, NULL), 0);
    }
    ck_assert_int_eq(jr_link_state(p.d), JR_LINK_OPEN);
    /* a new connection of a's gets b's recorded bytes: its ephemeral key differs, so the
     * recorded AUTH signs another transcript */
    jr_link_config cfg;
    jr_link *d2;
    t_link_config(&cfg, &p.k, JR_LINK_DIALER, A, "b");
    ck_assert_int_eq(jr_link_new(&cfg, &d2), 0);
    ck_assert_int_eq(t_feed(d2, &rec, 0, NULL, NULL), JR_EAUTH);
    ck_assert_str_eq(jr_link_errmsg(d2), "peer did not prove its identity key");
    jr_link_free(d2);
    t_bytes_free(&to_a);
    t_bytes_free(&to_d);
    t_bytes_free(&rec);
    pair_free(&p);
}
END_TEST

START_TEST(two_dialers_are_refused)
{
    t_keys k;
    t_keys_make(&k, "prod", names, 2);
    jr_link_config cfg;
    jr_link *x, *y;
    t_link_config(&cfg, &k, JR_LINK_DIALER, A, "b");
    ck_assert_int_eq(jr_link_new(&cfg, &x), 0);
    t_link_config(&cfg, &k, JR_LINK_DIALER, B, "a");
    ck_assert_int_eq(jr_link_new(&cfg, &y), 0);
    ck_assert_int_eq(t_handshake(x, y), JR_EAUTH);
    ck_assert_str_eq(jr_link_errmsg(x), "peer claims this side's role");
    jr_link_free(x);
    jr_link_free(y);
    t_keys_free(&k);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Records
 */
START_TEST(a_replayed_record_is_refused)
{
    pair p;
    pair_open(&p);
    t_bytes w = {0}, copy = {0};
    ck_assert_int_eq(t_seal(p.d, "one", 3, &w), 0);
    t_bytes_put(&copy, w.data, w.len);
    int nf = 0;
    ck_assert_int_eq(t_feed(p.a, &w, 0, NULL, &nf), 0);
    ck_assert_int_eq(nf, 1);
    ck_assert_int_eq(t_feed(p.a, &copy, 0, NULL, &nf), JR_EAUTH);
    ck_assert_int_eq(nf, 1);
    ck_assert_int_eq(jr_link_state(p.a), JR_LINK_FAILED);
    /* sticky: even a good record is refused now */
    ck_assert_int_eq(t_seal(p.d, "two", 3, &w), 0);
    ck_assert_int_eq(t_feed(p.a, &w, 0, NULL, &nf), JR_EAUTH);
    t_bytes_free(&w);
    t_bytes_free(&copy);
    pair_free(&p);
}
END_TEST

START_TEST(reordered_records_are_refused)
{
    pair p;
    pair_open(&p);
    t_bytes one = {0}, two = {0};
    ck_assert_int_eq(t_seal(p.d, "one", 3, &one), 0);
    ck_assert_int_eq(t_seal(p.d, "two", 3, &two), 0);
    ck_assert_int_eq(t_feed(p.a, &two, 0, NULL, NULL), JR_EAUTH);
    t_bytes_free(&one);
    t_bytes_free(&two);
    pair_free(&p);
    /* a dropped record is the same: the next one does not open */
    pair_open(&p);
    ck_assert_int_eq(t_seal(p.d, "one", 3, &one), 0);
    ck_assert_int_eq(t_seal(p.d, "two", 3, &two), 0);
    ck_assert_int_eq(t_feed(p.a, &two, 0, NULL, NULL), JR_EAUTH);
    t_bytes_free(&one);
    t_bytes_free(&two);
    pair_free(&p);
}
END_TEST

START_TEST(truncated_records_and_streams_are_refused)
{
    pair p;
    t_bytes w = {0};
    /* a record whose length was cut, with its tail dropped */
    pair_open(&p);
    ck_assert_int_eq(t_seal(p.d, "0123456789", 10, &w), 0);
    jr__put_u32(w.data, jr__get_u32(w.data) - 4);
    w.len -= 4;
    ck_assert_int_eq(t_feed(p.a, &w, 0, NULL, NULL), JR_EAUTH);
    pair_free(&p);
    /* a stream that ends inside a record */
    pair_open(&p);
    w.len = 0;
    ck_assert_int_eq(t_seal(p.d, "0123456789", 10, &w), 0);
    w.len -= 3;
    ck_assert_int_eq(t_feed(p.a, &w, 0, NULL, NULL), 0);
    ck_assert_int_eq(jr_link_eof(p.a), JR_ECORRUPT);
    ck_assert_int_eq(jr_link_state(p.a), JR_LINK_FAILED);
    pair_free(&p);
    /* a stream that ends between records, without the FINAL record */
    pair_open(&p);
    w.len = 0;
    ck_assert_int_eq(t_seal(p.d, "0123456789", 10, &w), 0);
    ck_assert_int_eq(t_feed(p.a, &w, 0, NULL, NULL), 0);
    ck_assert_int_eq(jr_link_eof(p.a), JR_ECORRUPT);
    pair_free(&p);
    /* a stream that ends in the handshake */
    pair_new(&p);
    ck_assert_int_eq(jr_link_eof(p.a), JR_ECORRUPT);
    pair_free(&p);
    /* bytes after the FINAL record */
    pair_open(&p);
    w.len = 0;
    uint8_t out[64];
    size_t n;
    ck_assert_int_eq(jr_link_seal_final(p.d, out, sizeof out, &n), 0);
    t_bytes_put(&w, out, n);
    t_bytes_put(&w, "x", 1);
    ck_assert_int_eq(t_feed(p.a, &w, 0, NULL, NULL), JR_ECORRUPT);
    pair_free(&p);
    t_bytes_free(&w);
}
END_TEST

START_TEST(a_record_altered_at_any_byte_is_refused)
{
    pair p;
    t_bytes w = {0};
    const char *frame = "a frame of the node, altered on the way";
    size_t flen = strlen(frame);
    for (size_t i = 0; i < flen + JR_LINK_FRAME_OVERHEAD; i++) {
        pair_open(&p);
        w.len = 0;
        ck_assert_int_eq(t_seal(p.d, frame, flen, &w), 0);
        w.data[i] ^= 0x20;
        int nf = 0;
        int rc = t_feed(p.a, &w, 0, NULL, &nf);
        if (i >= 4) {
            ck_assert_msg(rc == JR_EAUTH, "byte %zu: %s", i, jr_err_name(rc));
        } else {
            /* the length: a longer one waits for bytes (and the stream then ends), a shorter
             * one fails authentication, one over the bound is refused at once */
            ck_assert_msg(rc == JR_EAUTH || rc == JR_EMSGSIZE || rc == 0, "byte %zu: %d", i, rc);
            if (rc == 0) ck_assert_int_eq(jr_link_eof(p.a), JR_ECORRUPT);
        }
        ck_assert_int_eq(nf, 0);
        pair_free(&p);
    }
    t_bytes_free(&w);
}
END_TEST

/* The dialer's whole stream (HELLO and AUTH, three frames, FINAL) fed to the acceptor split in
 * two at byte `split`, each part in pieces of at most `piece` bytes (0: whole): the same frames
 * come out. Returns 0 once split is past the end of the stream. */
static int stream_split(size_t split, size_t piece)
{
    pair p;
    pair_new(&p);
    t_bytes to_a = {0}, to_d = {0}, got = {0};
    /* the dialer answers the acceptor's HELLO at once: its HELLO and AUTH are the handshake
     * part of its stream; the acceptor's AUTH (which needs the dialer's HELLO) opens it */
    t_take_out(p.a, &to_d);
    ck_assert_int_eq(t_feed(p.d, &to_d, 0, NULL, NULL), 0);
    t_take_out(p.d, &to_a);
    size_t hs = to_a.len;
    int nf = 0;
    size_t cut = split < hs ? split : hs;
    t_bytes first = {0};
    t_bytes_put(&first, to_a.data, cut);
    t_bytes_drop(&to_a, cut);
    ck_assert_int_eq(t_feed(p.a, &first, piece, NULL, &nf), 0);
    if (cut < hs) ck_assert_int_eq(jr_link_state(p.a), JR_LINK_HANDSHAKE);
    ck_assert_int_eq(t_feed(p.a, &to_a, piece, NULL, &nf), 0);
    ck_assert_int_eq(jr_link_state(p.a), JR_LINK_OPEN);
    t_take_out(p.a, &to_d);
    ck_assert_int_eq(t_feed(p.d, &to_d, 0, NULL, NULL), 0);
    ck_assert_int_eq(jr_link_state(p.d), JR_LINK_OPEN);
    split -= cut;

    t_bytes s = {0};
    ck_assert_int_eq(t_seal(p.d, "first", 5, &s), 0);
    ck_assert_int_eq(t_seal(p.d, "", 0, &s), 0);
    ck_assert_int_eq(t_seal(p.d, "third frame", 11, &s), 0);
    uint8_t out[64];
    size_t n;
    ck_assert_int_eq(jr_link_seal_final(p.d, out, sizeof out, &n), 0);
    t_bytes_put(&s, out, n);
    int more = split <= s.len;
    if (!more) split = 0;
    first.len = 0;
    t_bytes_put(&first, s.data, split);
    t_bytes_drop(&s, split);
    ck_assert_int_eq(t_feed(p.a, &first, piece, &got, &nf), 0);
    ck_assert_int_eq(t_feed(p.a, &s, piece, &got, &nf), 0);
    ck_assert_int_eq(nf, 3);
    ck_assert_uint_eq(got.len, 16);
    ck_assert(!memcmp(got.data, "firstthird frame", 16));
    ck_assert_int_eq(jr_link_state(p.a), JR_LINK_CLOSED);
    ck_assert_int_eq(jr_link_eof(p.a), 0);
    t_bytes_free(&first);
    t_bytes_free(&s);
    t_bytes_free(&to_a);
    t_bytes_free(&to_d);
    t_bytes_free(&got);
    pair_free(&p);
    return more;
}

START_TEST(a_stream_split_at_every_byte_reads_the_same)
{
    size_t splits = 0;
    while (stream_split(splits, 0)) splits++;
    ck_assert_uint_gt(splits, 300);
    stream_split(0, 1); /* one byte at a time */
    stream_split(0, 3);
    stream_split(0, 7);
}
END_TEST

START_TEST(lengths_over_their_bound_are_refused_before_anything_is_kept)
{
    t_alloc ta;
    t_alloc_init(&ta);
    t_keys k;
    t_keys_make(&k, "prod", names, 2);
    jr_link_config cfg;
    jr_link *a;
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, B, NULL);
    cfg.alloc = &ta.a;
    ck_assert_int_eq(jr_link_new(&cfg, &a), 0);
    uint64_t calls = ta.calls;
    /* a handshake record of 1 KiB + 1, and of 4 GiB - 1: refused on the length */
    uint8_t hdr[4];
    jr__put_u32(hdr, 1025);
    size_t used;
    const void *f;
    size_t flen;
    ck_assert_int_eq(jr_link_feed(a, hdr, 4, &used, &f, &flen), JR_EMSGSIZE);
    ck_assert_uint_eq(used, 4);
    ck_assert_uint_eq(ta.calls, calls);
    jr_link_free(a);
    ck_assert_int_eq(jr_link_new(&cfg, &a), 0);
    uint8_t big[8] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
    ck_assert_int_eq(jr_link_feed(a, big, sizeof big, &used, &f, &flen), JR_EMSGSIZE);
    ck_assert_uint_eq(used, 4);
    jr_link_free(a);

    /* once open, a record over max_frame + 17 */
    jr_link *d;
    t_link_config(&cfg, &k, JR_LINK_DIALER, A, "b");
    cfg.max_frame = 1000;
    ck_assert_int_eq(jr_link_new(&cfg, &d), 0);
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, B, NULL);
    cfg.max_frame = 2000;
    ck_assert_int_eq(jr_link_new(&cfg, &a), 0);
    ck_assert_int_eq(t_handshake(d, a), 0);
    jr__put_u32(hdr, 1000 + 17 + 1);
    ck_assert_int_eq(jr_link_feed(d, hdr, 4, &used, &f, &flen), JR_EMSGSIZE);
    ck_assert_str_eq(jr_link_errmsg(d), "record over the max frame");
    /* a record too short to be one */
    jr__put_u32(hdr, 16);
    ck_assert_int_eq(jr_link_feed(a, hdr, 4, &used, &f, &flen), JR_ECORRUPT);
    jr_link_free(a);
    jr_link_free(d);
    /* and the sealing side knows the peer's bound: nothing over it leaves */
    pair p;
    pair_new(&p);
    jr_link_free(p.a);
    t_link_config(&cfg, &p.k, JR_LINK_ACCEPTOR, B, NULL);
    cfg.max_frame = 100;
    ck_assert_int_eq(jr_link_new(&cfg, &p.a), 0);
    ck_assert_int_eq(t_handshake(p.d, p.a), 0);
    t_bytes w = {0};
    uint8_t frame[101] = {0};
    ck_assert_int_eq(t_seal(p.d, frame, 101, &w), JR_EMSGSIZE);
    ck_assert_int_eq(t_seal(p.d, frame, 100, &w), 0);
    uint8_t small[50];
    size_t n;
    jr_iovec iov = {frame, 40};
    ck_assert_int_eq(jr_link_seal(p.d, &iov, 1, small, sizeof small, &n), JR_EINVAL);
    ck_assert_int_eq(t_feed(p.a, &w, 0, NULL, NULL), 0); /* the refused seal cost nothing */
    t_bytes_free(&w);
    pair_free(&p);
    t_keys_free(&k);
}
END_TEST

START_TEST(garbage_is_refused)
{
    static const char *const garbage[] = {
        "GET / HTTP/1.1\r\nHost: x\r\n\r\n", /* a length of 541,410,631 */
        "\x07\x00\x00\x00JRX\x01...",        /* not a HELLO */
        "\x04\x00\x00\x00JRL\x02",           /* a later protocol version */
        "\x04\x00\x00\x00JRL\x01",           /* a HELLO too short */
        "\x00\x00\x00\x00",                  /* an empty record */
    };
    static const int want[] = {JR_EMSGSIZE, JR_ECORRUPT, JR_EVERSION, JR_ECORRUPT, JR_ECORRUPT};
    static const size_t len[] = {27, 11, 8, 8, 4};
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        pair p;
        pair_new(&p);
        t_bytes w = {0};
        t_bytes_put(&w, garbage[i], len[i]);
        ck_assert_msg(t_feed(p.a, &w, 0, NULL, NULL) == want[i], "garbage %zu", i);
        ck_assert_int_eq(jr_link_state(p.a), JR_LINK_FAILED);
        /* and nothing is left to write once failed */
        const void *out;
        size_t n;
        jr_link_pending_out(p.a, &out, &n);
        ck_assert_uint_eq(n, 0);
        t_bytes_free(&w);
        pair_free(&p);
    }
    /* random bytes, in the handshake and once open: an error, never a frame */
    uint32_t seed = 1;
    for (int round = 0; round < 200; round++) {
        pair p;
        if (round % 2)
            pair_open(&p);
        else
            pair_new(&p);
        t_bytes w = {0};
        size_t n = 1 + (size_t)(round * 37 % 3000);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245 + 12345;
            uint8_t byte = (uint8_t)(seed >> 16);
            t_bytes_put(&w, &byte, 1);
        }
        /* small lengths so that garbage reaches the decoders */
        if (n >= 4) jr__put_u32(w.data, (uint32_t)(n - 4));
        int nf = 0;
        int rc = t_feed(p.a, &w, 0, NULL, &nf);
        ck_assert_int_eq(nf, 0);
        ck_assert_msg(rc == JR_EAUTH || rc == JR_ECORRUPT || rc == JR_EMSGSIZE ||
                          rc == JR_EVERSION || (rc == 0 && n < 4 + 17),
                      "round %d: %d", round, rc);
        t_bytes_free(&w);
        pair_free(&p);
    }
}
END_TEST

START_TEST(calls_in_the_wrong_state_are_misuse)
{
    pair p;
    pair_new(&p);
    t_bytes w = {0};
    ck_assert_int_eq(t_seal(p.d, "early", 5, &w), JR_EMISUSE);
    uint8_t out[64];
    size_t n;
    ck_assert_int_eq(jr_link_seal_final(p.d, out, sizeof out, &n), JR_EMISUSE);
    ck_assert_int_eq(jr_link_out_done(p.d, 100000), JR_EINVAL);
    /* half way: a has b's HELLO, b has not a's AUTH; a cannot seal before b's AUTH */
    t_take_out(p.a, &w);
    ck_assert_int_eq(t_feed(p.d, &w, 0, NULL, NULL), 0);
    ck_assert_int_eq(jr_link_state(p.d), JR_LINK_HANDSHAKE);
    ck_assert_int_eq(t_seal(p.d, "early", 5, &w), JR_EMISUSE);
    t_bytes_free(&w);
    pair_free(&p);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Cost
 */
START_TEST(a_frame_costs_21_bytes_and_no_allocation)
{
    t_alloc ta;
    t_alloc_init(&ta);
    t_keys k;
    t_keys_make(&k, "prod", names, 2);
    jr_link_config cfg;
    jr_link *d, *a;
    t_link_config(&cfg, &k, JR_LINK_DIALER, A, "b");
    cfg.alloc = &ta.a;
    ck_assert_int_eq(jr_link_new(&cfg, &d), 0);
    t_link_config(&cfg, &k, JR_LINK_ACCEPTOR, B, NULL);
    cfg.alloc = &ta.a;
    ck_assert_int_eq(jr_link_new(&cfg, &a), 0);
    ck_assert_int_eq(t_handshake(d, a), 0);
    uint64_t setup = ta.calls; /* two links and their receive buffers */
    ck_assert_uint_eq(setup, 4);
    enum { FRAMES = 20000, SIZE = 1024 };
    static uint8_t frame[SIZE], rec[SIZE + JR_LINK_FRAME_OVERHEAD];
    uint64_t bytes = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < FRAMES; i++) {
        frame[0] = (uint8_t)i;
        jr_iovec iov = {frame, SIZE};
        size_t n, used, flen;
        const void *f;
        ck_assert_int_eq(jr_link_seal(d, &iov, 1, rec, sizeof rec, &n), 0);
        ck_assert_uint_eq(n, SIZE + 21);
        bytes += n;
        /* half of them arrive in two pieces, which go through the receive buffer */
        if (i % 2) {
            ck_assert_int_eq(jr_link_feed(a, rec, n, &used, &f, &flen), 0);
        } else {
            ck_assert_int_eq(jr_link_feed(a, rec, 100, &used, &f, &flen), 0);
            ck_assert_ptr_null(f);
            ck_assert_int_eq(jr_link_feed(a, rec + 100, n - 100, &used, &f, &flen), 0);
        }
        ck_assert_uint_eq(flen, SIZE);
        ck_assert_uint_eq(((const uint8_t *)f)[0], (uint8_t)i);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_uint_eq(ta.calls, setup);
    ck_assert_uint_eq(bytes, (uint64_t)FRAMES * (SIZE + JR_LINK_FRAME_OVERHEAD));
    double ns =
        ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / FRAMES;
    printf("{\"bench\":\"link_frame\",\"frame_bytes\":%d,\"overhead_bytes\":%d,"
           "\"allocs_per_frame\":%.1f,\"ns_per_seal_and_open\":%.0f}\n",
           SIZE, JR_LINK_FRAME_OVERHEAD, (double)(ta.calls - setup) / FRAMES, ns);
    jr_link_free(d);
    jr_link_free(a);
    ck_assert_int_eq(ta.live, 0);
    ck_assert_uint_eq(ta.dirty, 0); /* links and receive buffers are wiped before they go */
    t_keys_free(&k);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Faults and old callers
 */

/* Keys, certificates, two links, their handshake and a frame each way, with allocator f. */
static int whole_flow(jr__falloc *f)
{
    jr_link_key *auth = NULL, *ida = NULL, *idb = NULL;
    jr_link *d = NULL, *a = NULL;
    uint8_t ca[JR_LINK_CERT_MAX], cb[JR_LINK_CERT_MAX];
    size_t cal, cbl;
    int rc = jr_link_key_generate(JR_LINK_AUTHORITY, &f->a, &auth);
    if (!rc) rc = jr_link_key_generate(JR_LINK_IDENTITY, &f->a, &ida);
    if (!rc) rc = jr_link_key_generate(JR_LINK_IDENTITY, &f->a, &idb);
    if (!rc) rc = jr_link_cert_sign(auth, ida, "prod", "a", ca, sizeof ca, &cal);
    if (!rc) rc = jr_link_cert_sign(auth, idb, "prod", "b", cb, sizeof cb, &cbl);
    jr_link_config cfg;
    jr_link_config_init(&cfg);
    cfg.authority = auth;
    cfg.cluster = "prod";
    cfg.max_frame = 4096;
    cfg.alloc = &f->a;
    if (!rc) {
        cfg.role = JR_LINK_DIALER;
        cfg.identity = ida;
        cfg.cert = ca;
        cfg.cert_len = cal;
        cfg.expect_name = "b";
        rc = jr_link_new(&cfg, &d);
    }
    if (!rc) {
        cfg.role = JR_LINK_ACCEPTOR;
        cfg.identity = idb;
        cfg.cert = cb;
        cfg.cert_len = cbl;
        cfg.expect_name = NULL;
        rc = jr_link_new(&cfg, &a);
        if (rc) ck_assert_ptr_null(a);
    }
    if (!rc) rc = t_handshake(d, a);
    t_bytes w = {0};
    int nf = 0;
    if (!rc) rc = t_seal(d, "ping", 4, &w);
    if (!rc) rc = t_feed(a, &w, 0, NULL, &nf);
    if (!rc) rc = t_seal(a, "pong", 4, &w);
    if (!rc) rc = t_feed(d, &w, 0, NULL, &nf);
    if (!rc) ck_assert_int_eq(nf, 2);
    t_bytes_free(&w);
    jr_link_free(d);
    jr_link_free(a);
    jr_link_key_free(auth);
    jr_link_key_free(ida);
    jr_link_key_free(idb);
    return rc;
}

START_TEST(every_failed_allocation_ends_in_a_clean_error)
{
    jr__falloc f;
    jr__falloc_init(&f);
    ck_assert_int_eq(whole_flow(&f), 0);
    uint64_t calls = f.calls; /* three keys, two links, two receive buffers */
    ck_assert_uint_eq(calls, 7);
    ck_assert_int_eq(f.live, 0);
    for (uint64_t n = 1; n <= calls; n++) {
        for (int sticky = 0; sticky < 2; sticky++) {
            jr__falloc_init(&f);
            jr__falloc_arm(&f, n, sticky);
            ck_assert_msg(whole_flow(&f) == JR_ENOMEM, "allocation %llu", (unsigned long long)n);
            ck_assert_int_eq(f.live, 0);
        }
    }
}
END_TEST

START_TEST(an_older_caller_config_gets_the_defaults)
{
    pair p;
    pair_new(&p);
    /* a caller that knew the fields up to expect_name: the bytes after are not its */
    jr_link_config cfg;
    t_link_config(&cfg, &p.k, JR_LINK_ACCEPTOR, B, NULL);
    cfg.size = offsetof(jr_link_config, max_frame);
    cfg.max_frame = 1; /* garbage the library must not read */
    cfg.alloc = (const jr_allocator *)&cfg;
    jr_link *old;
    ck_assert_int_eq(jr_link_new(&cfg, &old), 0);
    jr_link_free(p.a);
    p.a = old;
    ck_assert_int_eq(t_handshake(p.d, p.a), 0);
    /* the acceptor announced the default max frame */
    t_bytes w = {0};
    static uint8_t big[65 << 10];
    ck_assert_int_eq(t_seal(p.d, big, sizeof big, &w), 0);
    ck_assert_int_eq(t_feed(p.a, &w, 0, NULL, NULL), 0);
    t_bytes_free(&w);
    /* and init writes no byte past the size it is given */
    uint8_t raw[sizeof(jr_link_config) + 8];
    memset(raw, 0xee, sizeof raw);
    jr_link_config_init_size((jr_link_config *)raw, offsetof(jr_link_config, cluster));
    for (size_t i = offsetof(jr_link_config, cluster); i < sizeof raw; i++)
        ck_assert_uint_eq(raw[i], 0xee);
    pair_free(&p);
}
END_TEST

Suite *link_node_suite(void);

int main(void)
{
    Suite *s = suite_create("link");
    TCase *tc = tcase_create("keys");
    tcase_add_test(tc, keys_round_trip_in_bytes_and_text_and_are_zeroed_when_freed);
    tcase_add_test(tc, a_key_blob_is_decoded_strictly);
    tcase_add_test(tc, a_certificate_checks_authority_cluster_and_name);
    suite_add_tcase(s, tc);
    tc = tcase_create("handshake");
    tcase_add_test(tc, a_handshake_authenticates_both_sides_and_frames_flow_both_ways);
    tcase_add_test(tc, a_server_without_a_signed_identity_cannot_start);
    tcase_add_test(tc, a_peer_certified_by_another_authority_is_refused);
    tcase_add_test(tc, a_peer_of_another_cluster_is_refused);
    tcase_add_test(tc, a_peer_with_another_name_is_refused_by_the_dialer);
    tcase_add_test(tc, a_certificate_replayed_without_its_identity_key_is_refused);
    tcase_add_test(tc, a_recorded_handshake_replayed_to_a_new_connection_is_refused);
    tcase_add_test(tc, two_dialers_are_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("records");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_replayed_record_is_refused);
    tcase_add_test(tc, reordered_records_are_refused);
    tcase_add_test(tc, truncated_records_and_streams_are_refused);
    tcase_add_test(tc, a_record_altered_at_any_byte_is_refused);
    tcase_add_test(tc, a_stream_split_at_every_byte_reads_the_same);
    tcase_add_test(tc, lengths_over_their_bound_are_refused_before_anything_is_kept);
    tcase_add_test(tc, garbage_is_refused);
    tcase_add_test(tc, calls_in_the_wrong_state_are_misuse);
    tcase_add_test(tc, a_frame_costs_21_bytes_and_no_allocation);
    suite_add_tcase(s, tc);
    tc = tcase_create("faults");
    tcase_add_test(tc, every_failed_allocation_ends_in_a_clean_error);
    tcase_add_test(tc, an_older_caller_config_gets_the_defaults);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_add_suite(sr, link_node_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
