/*
 * keytool.c — jetraft-server's key tool modes (see keytool.h).
 */
#include "keytool.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "config.h"
#include "jetraft.h"

enum { M_NONE, M_KEYGEN, M_SIGN, M_VERIFY, M_HASH };

/* Writes bin's text form to path, creating it (never replacing a file) with mode `mode`. */
static int write_text(const char *path, const void *bin, size_t len, int mode)
{
    char text[JR_LINK_TEXT_MAX];
    size_t tl;
    if (jr_link_text_encode(bin, len, text, sizeof text - 1, &tl) != 0) return -1;
    text[tl++] = '\n';
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
    if (fd < 0) {
        fprintf(stderr, "jetraft-server: %s: %s\n", path, strerror(errno));
        return -1;
    }
    ssize_t w = write(fd, text, tl);
    int rc = (w == (ssize_t)tl && fsync(fd) == 0) ? 0 : -1;
    if (close(fd) != 0) rc = -1;
    sodium_memzero(text, sizeof text);
    if (rc) fprintf(stderr, "jetraft-server: %s: write failed\n", path);
    return rc;
}

static jr_link_key *read_key(const char *path, const char *what)
{
    uint8_t bin[JR_LINK_KEY_BYTES + 8];
    size_t len = 0;
    char err[600];
    jr_link_key *k = NULL;
    if (!path) {
        fprintf(stderr, "jetraft-server: --%s is required\n", what);
        return NULL;
    }
    if (srv_read_text_file(path, bin, sizeof bin, &len, err, sizeof err)) {
        fprintf(stderr, "jetraft-server: --%s: %s\n", what, err);
        return NULL;
    }
    if (jr_link_key_decode(bin, len, NULL, &k) != 0)
        fprintf(stderr, "jetraft-server: --%s: %s is not a jetraft key\n", what, path);
    sodium_memzero(bin, sizeof bin);
    return k;
}

/* A data key (the node key of encryption at rest): 32 random bytes in PREFIX.key. */
static int keygen_data(const char *prefix)
{
    uint8_t key[JR_NODE_KEY_BYTES];
    char path[4096];
    snprintf(path, sizeof path, "%s.key", prefix);
    randombytes_buf(key, sizeof key);
    int rc = write_text(path, key, sizeof key, 0600);
    sodium_memzero(key, sizeof key);
    if (rc) return 1;
    printf("data key: %s (secret; the server cannot read its files without it)\n", path);
    return 0;
}

static int keygen(const char *role_name, const char *prefix)
{
    if (prefix && !strcmp(role_name, "data")) return keygen_data(prefix);
    int role = !strcmp(role_name, "authority")  ? JR_LINK_AUTHORITY
               : !strcmp(role_name, "identity") ? JR_LINK_IDENTITY
                                                : 0;
    if (!role || !prefix) {
        fprintf(stderr, "usage: jetraft-server --keygen authority|identity|data PREFIX\n");
        return 2;
    }
    jr_link_key *k = NULL;
    if (jr_link_key_generate(role, NULL, &k) != 0) return 1;
    uint8_t sec[JR_LINK_KEY_BYTES], pub[JR_LINK_KEY_BYTES];
    size_t sl, pl;
    char kpath[4096], ppath[4096];
    snprintf(kpath, sizeof kpath, "%s.key", prefix);
    snprintf(ppath, sizeof ppath, "%s.pub", prefix);
    int rc = jr_link_key_encode(k, 1, sec, sizeof sec, &sl) ||
             jr_link_key_encode(k, 0, pub, sizeof pub, &pl);
    jr_link_key_free(k);
    if (!rc) rc = write_text(kpath, sec, sl, 0600);
    if (!rc) rc = write_text(ppath, pub, pl, 0644);
    sodium_memzero(sec, sizeof sec);
    if (rc) return 1;
    printf("%s key pair: %s (secret), %s (public)\n", role_name, kpath, ppath);
    return 0;
}

static int sign(const char *auth_path, const char *id_path, const char *cluster, const char *name,
                const char *out)
{
    if (!name || !out) {
        fprintf(stderr, "usage: jetraft-server --sign --authority A.key --identity ID.pub "
                        "--name NAME [--cluster C] --out CERT\n");
        return 2;
    }
    jr_link_key *a = read_key(auth_path, "authority");
    jr_link_key *id = a ? read_key(id_path, "identity") : NULL;
    int rc = 1;
    if (a && id) {
        uint8_t cert[JR_LINK_CERT_MAX];
        size_t len;
        if (jr_link_key_role(a) != JR_LINK_AUTHORITY || !jr_link_key_has_secret(a))
            fprintf(stderr, "jetraft-server: --authority: not an authority secret key\n");
        else if (jr_link_key_role(id) != JR_LINK_IDENTITY)
            fprintf(stderr, "jetraft-server: --identity: not an identity key\n");
        else if (jr_link_cert_sign(a, id, cluster, name, cert, sizeof cert, &len) != 0)
            fprintf(stderr, "jetraft-server: --name/--cluster: names must be 1..255 printable "
                            "characters without spaces\n");
        else if (write_text(out, cert, len, 0644) == 0) {
            printf("certificate for server %s of cluster %s: %s\n", name, cluster, out);
            rc = 0;
        }
    }
    jr_link_key_free(a);
    jr_link_key_free(id);
    return rc;
}

static int verify(const char *auth_path, const char *cert_path, const char *cluster,
                  const char *name)
{
    if (!cert_path) {
        fprintf(stderr, "usage: jetraft-server --verify --authority A.pub --certificate CERT "
                        "[--cluster C] [--name NAME]\n");
        return 2;
    }
    jr_link_key *a = read_key(auth_path, "authority");
    if (!a) return 1;
    uint8_t cert[JR_LINK_CERT_MAX];
    size_t len = 0;
    char err[600], who[JR_LINK_NAME_MAX + 1] = "";
    int rc = 1;
    if (srv_read_text_file(cert_path, cert, sizeof cert, &len, err, sizeof err))
        fprintf(stderr, "jetraft-server: --certificate: %s\n", err);
    else if (jr_link_cert_name(cert, len, who, sizeof who) != 0)
        fprintf(stderr, "jetraft-server: %s: not a jetraft certificate\n", cert_path);
    else if (jr_link_cert_check(cert, len, a, cluster, NULL) != 0)
        fprintf(stderr, "jetraft-server: %s: not signed by this authority for cluster %s\n",
                cert_path, cluster);
    else if (name && strcmp(name, who))
        fprintf(stderr, "jetraft-server: %s: issued to %s, not to %s\n", cert_path, who, name);
    else {
        printf("certificate for server %s of cluster %s, signed by this authority\n", who, cluster);
        rc = 0;
    }
    jr_link_key_free(a);
    return rc;
}

static int hash_password(void)
{
    char pw[1024], out[crypto_pwhash_STRBYTES];
    if (isatty(0)) fprintf(stderr, "password: ");
    if (!fgets(pw, sizeof pw, stdin)) {
        fprintf(stderr, "jetraft-server: no password on standard input\n");
        return 1;
    }
    size_t n = strcspn(pw, "\r\n");
    pw[n] = 0;
    int rc = 1;
    if (n == 0)
        fprintf(stderr, "jetraft-server: empty password\n");
    else if (sodium_init() < 0 || crypto_pwhash_str(out, pw, n, crypto_pwhash_OPSLIMIT_INTERACTIVE,
                                                    crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
        fprintf(stderr, "jetraft-server: hashing failed (out of memory?)\n");
    else {
        printf("%s\n", out);
        rc = 0;
    }
    sodium_memzero(pw, sizeof pw);
    return rc;
}

int keytool_main(int argc, char **argv)
{
    static const struct option opts[] = {{"keygen", required_argument, NULL, 'k'},
                                         {"sign", no_argument, NULL, 's'},
                                         {"verify", no_argument, NULL, 'v'},
                                         {"hash-password", no_argument, NULL, 'p'},
                                         {"authority", required_argument, NULL, 'a'},
                                         {"identity", required_argument, NULL, 'i'},
                                         {"certificate", required_argument, NULL, 'C'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"cluster", required_argument, NULL, 'u'},
                                         {"out", required_argument, NULL, 'o'},
                                         {NULL, 0, NULL, 0}};
    int mode = M_NONE, opt;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--keygen") || !strcmp(argv[i], "--sign") ||
            !strcmp(argv[i], "--verify") || !strcmp(argv[i], "--hash-password"))
            mode = 1;
    if (mode == M_NONE) return -1;
    mode = M_NONE;
    const char *role = NULL, *auth = NULL, *id = NULL, *cert = NULL, *name = NULL, *out = NULL;
    const char *cluster = "jetraft";
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int m = M_NONE;
        switch (opt) {
        case 'k':
            m = M_KEYGEN, role = optarg;
            break;
        case 's':
            m = M_SIGN;
            break;
        case 'v':
            m = M_VERIFY;
            break;
        case 'p':
            m = M_HASH;
            break;
        case 'a':
            auth = optarg;
            break;
        case 'i':
            id = optarg;
            break;
        case 'C':
            cert = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 'u':
            cluster = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        default:
            return 2;
        }
        if (m != M_NONE) {
            if (mode != M_NONE) {
                fprintf(stderr, "jetraft-server: one of --keygen, --sign, --verify, "
                                "--hash-password at a time\n");
                return 2;
            }
            mode = m;
        }
    }
    if (sodium_init() < 0) return 1;
    switch (mode) {
    case M_KEYGEN:
        return keygen(role, optind < argc ? argv[optind] : NULL);
    case M_SIGN:
        return sign(auth, id, cluster, name, out);
    case M_VERIFY:
        return verify(auth, cert, cluster, name);
    default:
        return hash_password();
    }
}
