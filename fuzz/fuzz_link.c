/*
 * fuzz_link — libFuzzer target for the secure link's decoders (lib/link): keys, certificates,
 * their text form, the handshake and DATA records.
 *
 * The first input byte picks what the rest is (the second byte sets the size of the pieces it
 * is fed in, 0: whole):
 *   0: what a dialer sends, fed to an acceptor; 1: what an acceptor sends, fed to a dialer;
 *   2: records fed to an open link (after a real handshake);
 *   3: a mask XORed over a real stream of sealed frames: an opened frame must be the frame
 *      sealed at that place, never anything else, and an unchanged stream must open whole.
 * Every input is also offered to jr_link_key_decode, jr_link_cert_check, jr_link_cert_name and
 * jr_link_text_decode. Nothing may crash, read out of bounds, consume more than it was given,
 * open a frame before its link is open, or queue more handshake output than two records.
 * Keys come from fixed seeds so that the seed corpus holds certificates this target trusts.
 *
 * Build: CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false
 *        ninja -C build-fuzz fuzz/fuzz_link
 * Run:   build-fuzz/fuzz/fuzz_link fuzz/corpus/fuzz_link -max_total_time=60
 * Seeds: cc -DFUZZ_LINK_WRITE_SEEDS -Iinclude -Ilib fuzz/fuzz_link.c build/lib/libjetraft.a
 * -lsodium -lxxhash -llz4 -o /tmp/seeds && /tmp/seeds fuzz/corpus/fuzz_link
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jetraft.h"
#include "util/buf.h"
#include "util/checksum.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FRAME 4096u

static void fail(void)
{
    __builtin_trap();
}

/* Keys: an authority and two identities ("a" dials, "b" accepts) from fixed seeds. */
static jr_link_key *authority, *id_a, *id_b;
static uint8_t cert_a[JR_LINK_CERT_MAX], cert_b[JR_LINK_CERT_MAX];
static size_t cert_a_len, cert_b_len;

static jr_link_key *seeded(int role, uint8_t fill)
{
    uint8_t b[JR_LINK_KEY_BYTES];
    memcpy(b, "JRK", 3);
    b[3] = 1;
    b[4] = (uint8_t)role;
    b[5] = 1; /* secret */
    memset(b + 6, fill, 32);
    jr__put_u64(b + 38, jr__xxh3(b, 38));
    jr_link_key *k;
    if (jr_link_key_decode(b, sizeof b, NULL, &k) != 0) fail();
    return k;
}

static void keys(void)
{
    if (authority) return;
    authority = seeded(JR_LINK_AUTHORITY, 1);
    id_a = seeded(JR_LINK_IDENTITY, 2);
    id_b = seeded(JR_LINK_IDENTITY, 3);
    if (jr_link_cert_sign(authority, id_a, "fuzz", "a", cert_a, sizeof cert_a, &cert_a_len) ||
        jr_link_cert_sign(authority, id_b, "fuzz", "b", cert_b, sizeof cert_b, &cert_b_len))
        fail();
}

static jr_link *make(int role)
{
    jr_link_config cfg;
    jr_link_config_init(&cfg);
    cfg.role = role;
    cfg.authority = authority;
    cfg.identity = role == JR_LINK_DIALER ? id_a : id_b;
    cfg.cert = role == JR_LINK_DIALER ? cert_a : cert_b;
    cfg.cert_len = role == JR_LINK_DIALER ? cert_a_len : cert_b_len;
    cfg.cluster = "fuzz";
    cfg.expect_name = role == JR_LINK_DIALER ? "b" : NULL;
    cfg.max_frame = MAX_FRAME;
    jr_link *l;
    if (jr_link_new(&cfg, &l) != 0) fail();
    return l;
}

/* Moves l's pending output to out (at most cap bytes; it never holds more than two records). */
static size_t take(jr_link *l, uint8_t *out, size_t cap)
{
    const void *p;
    size_t n;
    jr_link_pending_out(l, &p, &n);
    if (n > cap) fail();
    if (n) memcpy(out, p, n);
    if (jr_link_out_done(l, n) != 0) fail();
    return n;
}

/* Feeds d[0..len) in pieces; calls on_frame for each frame. Returns the link's error. */
static int feed(jr_link *l, const uint8_t *d, size_t len, size_t piece,
                int (*on_frame)(void *arg, const void *f, size_t n), void *arg)
{
    size_t off = 0;
    while (off < len) {
        size_t n = len - off;
        if (piece && n > piece) n = piece;
        int open_before = jr_link_state(l) == JR_LINK_OPEN;
        size_t used;
        const void *f;
        size_t flen;
        int rc = jr_link_feed(l, d + off, n, &used, &f, &flen);
        if (used > n) fail();
        if (rc) {
            if (f || jr_link_state(l) != JR_LINK_FAILED) fail();
            return rc;
        }
        if (f) {
            if (!open_before || flen > MAX_FRAME) fail();
            if (on_frame && on_frame(arg, f, flen)) fail();
        }
        if (used == 0) fail(); /* only a closed link takes nothing, and that is an error */
        off += used;
    }
    return 0;
}

static int open_pair(jr_link **d, jr_link **a)
{
    static uint8_t buf[4096];
    *d = make(JR_LINK_DIALER);
    *a = make(JR_LINK_ACCEPTOR);
    for (int round = 0; round < 3; round++) {
        size_t n = take(*d, buf, sizeof buf);
        if (feed(*a, buf, n, 0, NULL, NULL)) fail();
        n = take(*a, buf, sizeof buf);
        if (feed(*d, buf, n, 0, NULL, NULL)) fail();
    }
    if (jr_link_state(*d) != JR_LINK_OPEN || jr_link_state(*a) != JR_LINK_OPEN) fail();
    return 0;
}

static void side_decoders(const uint8_t *d, size_t size)
{
    jr_link_key *k;
    if (jr_link_key_decode(d, size, NULL, &k) == 0) {
        uint8_t b[JR_LINK_KEY_BYTES];
        size_t n;
        if (jr_link_key_encode(k, jr_link_key_has_secret(k), b, sizeof b, &n) != 0) fail();
        if (n != size || memcmp(b, d, n) != 0) fail(); /* the encoding is canonical */
        jr_link_key_free(k);
    } else if (k) {
        fail();
    }
    char name[JR_LINK_NAME_MAX + 1];
    int named = jr_link_cert_name(d, size, name, sizeof name);
    int checked = jr_link_cert_check(d, size, authority, "fuzz", NULL);
    if (checked == 0 && named != 0) fail();
    static uint8_t bin[65536];
    size_t n;
    if (size <= 65536) jr_link_text_decode((const char *)d, size, bin, sizeof bin, &n);
}

/* Mode 3: the frames sealed, in order. */
static const char *const frames[] = {"first frame", "", "a third, longer frame of the stream"};
typedef struct expect {
    int next;
} expect;

static int check_frame(void *arg, const void *f, size_t n)
{
    expect *e = arg;
    if (e->next >= 3) return -1;
    const char *want = frames[e->next++];
    return n != strlen(want) || memcmp(f, want, n) != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536) return 0;
    if (sodium_init() < 0) return 0;
    keys();
    /* an exactly-sized copy, so that any overread is caught */
    uint8_t *d = malloc(size ? size : 1);
    if (!d) return 0;
    if (size) memcpy(d, data, size);
    side_decoders(d, size);
    if (size < 2) {
        free(d);
        return 0;
    }
    int mode = d[0] & 3;
    size_t piece = d[1];
    const uint8_t *in = d + 2;
    size_t len = size - 2;
    static uint8_t out[4096];
    if (mode == 0 || mode == 1) {
        jr_link *l = make(mode == 0 ? JR_LINK_ACCEPTOR : JR_LINK_DIALER);
        take(l, out, sizeof out);
        feed(l, in, len, piece, NULL, NULL);
        take(l, out, sizeof out);
        jr_link_eof(l);
        jr_link_free(l);
    } else if (mode == 2) {
        jr_link *dl, *al;
        open_pair(&dl, &al);
        feed(al, in, len, piece, NULL, NULL);
        jr_link_free(dl);
        jr_link_free(al);
    } else {
        jr_link *dl, *al;
        open_pair(&dl, &al);
        static uint8_t stream[4096];
        size_t n = 0, w;
        for (int i = 0; i < 3; i++) {
            jr_iovec iov = {frames[i], strlen(frames[i])};
            if (jr_link_seal(dl, &iov, 1, stream + n, sizeof stream - n, &w)) fail();
            n += w;
        }
        if (jr_link_seal_final(dl, stream + n, sizeof stream - n, &w)) fail();
        n += w;
        int changed = 0;
        for (size_t i = 0; i < len && i < n; i++) {
            stream[i] ^= in[i];
            changed |= in[i] != 0;
        }
        expect e = {0};
        int rc = feed(al, stream, n, piece, check_frame, &e);
        if (!changed && (rc != 0 || e.next != 3 || jr_link_eof(al) != 0)) fail();
        jr_link_free(dl);
        jr_link_free(al);
    }
    free(d);
    return 0;
}

#ifdef FUZZ_LINK_WRITE_SEEDS
/* Writes the seed corpus: each mode's real bytes, and some garbage. */
static void put(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) fail();
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 2 || sodium_init() < 0) return 2;
    keys();
    static uint8_t b[8192];
    size_t n;
    /* 0: a dialer's HELLO (and nothing after), whole and in 7-byte pieces */
    jr_link *l = make(JR_LINK_DIALER);
    b[0] = 0;
    b[1] = 0;
    n = 2 + take(l, b + 2, sizeof b - 2);
    put(argv[1], "hello-dialer", b, n);
    b[1] = 7;
    put(argv[1], "hello-dialer-pieces", b, n);
    jr_link_free(l);
    /* 1: an acceptor's HELLO */
    l = make(JR_LINK_ACCEPTOR);
    b[0] = 1;
    b[1] = 0;
    n = 2 + take(l, b + 2, sizeof b - 2);
    put(argv[1], "hello-acceptor", b, n);
    jr_link_free(l);
    /* 2: sealed records of another session (they fail authentication) */
    jr_link *dl, *al;
    open_pair(&dl, &al);
    b[0] = 2;
    b[1] = 0;
    n = 2;
    jr_iovec iov = {"some frame", 10};
    size_t w;
    jr_link_seal(dl, &iov, 1, b + n, sizeof b - n, &w);
    n += w;
    put(argv[1], "records", b, n);
    jr_link_free(dl);
    jr_link_free(al);
    /* 3: no change (opens whole), one flipped bit */
    memset(b, 0, 64);
    b[0] = 3;
    put(argv[1], "mask-none", b, 2);
    b[1] = 5;
    b[2 + 30] = 0x10;
    put(argv[1], "mask-bit", b, 40);
    /* garbage, a key and a certificate */
    put(argv[1], "garbage-http", (const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18);
    jr_link_key_encode(id_a, 0, b, sizeof b, &n);
    put(argv[1], "key-public", b, n);
    put(argv[1], "cert", cert_a, cert_a_len);
    return 0;
}
#endif
