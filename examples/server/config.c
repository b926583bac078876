/*
 * config.c — the JSON configuration file (see config.h), parsed with jansson.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

static void fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int srv_split_hostport(const char *s, char **host, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || !colon[1]) return -1;
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || *end || p < 0 || p > 65535) return -1;
    size_t hl = (size_t)(colon - s);
    const char *h = s;
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') h++, hl -= 2; /* [::1]:4222 */
    *host = strndup(h, hl);
    if (!*host) return -1;
    *port = (int)p;
    return 0;
}

static char *dup_str(json_t *v)
{
    return strdup(json_string_value(v));
}

/* Reads a non-negative integer field within [lo, hi]. */
static int get_uint(json_t *v, const char *field, uint64_t lo, uint64_t hi, uint64_t *out,
                    char *err, size_t errlen)
{
    if (!json_is_integer(v)) {
        fail(err, errlen, "%s: must be an integer", field);
        return -1;
    }
    json_int_t i = json_integer_value(v);
    if (i < 0 || (uint64_t)i < lo || (uint64_t)i > hi) {
        fail(err, errlen, "%s: must be between %" PRIu64 " and %" PRIu64, field, lo, hi);
        return -1;
    }
    *out = (uint64_t)i;
    return 0;
}

static int get_str(json_t *v, const char *field, char **out, char *err, size_t errlen)
{
    if (!json_is_string(v) || json_string_length(v) == 0) {
        fail(err, errlen, "%s: must be a non-empty string", field);
        return -1;
    }
    free(*out);
    *out = dup_str(v);
    return *out ? 0 : -1;
}

static int get_addr(json_t *v, const char *field, char **host, int *port, char *err, size_t errlen)
{
    if (!json_is_string(v) || srv_split_hostport(json_string_value(v), host, port) != 0) {
        fail(err, errlen, "%s: must be a \"host:port\" string", field);
        return -1;
    }
    return 0;
}

int srv_read_text_file(const char *path, void *bin, size_t cap, size_t *len, char *err,
                       size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    char text[JR_LINK_TEXT_MAX + 64];
    size_t n = fread(text, 1, sizeof text, f);
    int toolong = n == sizeof text;
    fclose(f);
    if (toolong || jr_link_text_decode(text, n, bin, cap, len) != 0) {
        fail(err, errlen, "%s: not a key or certificate in text form", path);
        return -1;
    }
    return 0;
}

/* A path from the configuration: relative ones are taken from the file's directory. */
static int join_path(const char *dir, const char *path, char *out, size_t cap)
{
    int n = (path[0] == '/' || !dir) ? snprintf(out, cap, "%s", path)
                                     : snprintf(out, cap, "%s/%s", dir, path);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Reads the data key file named by "data_key": 32 bytes in text form (--keygen data). */
static int get_data_key(json_t *v, const char *dir, srv_config *c, char *err, size_t errlen)
{
    char path[4096], why[4400];
    uint8_t bin[JR_NODE_KEY_BYTES + 8];
    size_t len = 0;
    if (!json_is_string(v) || json_string_length(v) == 0 ||
        join_path(dir, json_string_value(v), path, sizeof path)) {
        fail(err, errlen, "data_key: must be the path of a key file");
        return -1;
    }
    if (srv_read_text_file(path, bin, sizeof bin, &len, why, sizeof why)) {
        fail(err, errlen, "data_key: %s", why);
        return -1;
    }
    if (len != JR_NODE_KEY_BYTES) {
        sodium_memzero(bin, sizeof bin);
        fail(err, errlen, "data_key: %s holds %zu bytes, not a data key of %d", path, len,
             JR_NODE_KEY_BYTES);
        return -1;
    }
    memcpy(c->data_key, bin, JR_NODE_KEY_BYTES);
    sodium_memzero(bin, sizeof bin);
    c->has_data_key = 1;
    return 0;
}

/* Reads the key file named by field `field` and decodes it. */
static int get_key(json_t *v, const char *dir, const char *field, jr_link_key **out, char *err,
                   size_t errlen)
{
    char path[4096], why[4400];
    uint8_t bin[JR_LINK_KEY_BYTES + 8];
    size_t len = 0;
    if (!json_is_string(v) || json_string_length(v) == 0 ||
        join_path(dir, json_string_value(v), path, sizeof path)) {
        fail(err, errlen, "%s: must be the path of a key file", field);
        return -1;
    }
    if (srv_read_text_file(path, bin, sizeof bin, &len, why, sizeof why)) {
        fail(err, errlen, "%s: %s", field, why);
        return -1;
    }
    jr_link_key_free(*out);
    *out = NULL;
    if (jr_link_key_decode(bin, len, NULL, out) != 0) {
        fail(err, errlen, "%s: %s is not a jetraft key", field, path);
        return -1;
    }
    return 0;
}

static int get_cert(json_t *v, const char *dir, srv_config *c, char *err, size_t errlen)
{
    char path[4096], why[4400];
    if (!json_is_string(v) || json_string_length(v) == 0 ||
        join_path(dir, json_string_value(v), path, sizeof path)) {
        fail(err, errlen, "certificate: must be the path of a certificate file");
        return -1;
    }
    if (srv_read_text_file(path, c->cert, sizeof c->cert, &c->cert_len, why, sizeof why)) {
        fail(err, errlen, "certificate: %s", why);
        return -1;
    }
    return 0;
}

static int get_users(json_t *v, srv_config *c, char *err, size_t errlen)
{
    if (!json_is_array(v)) {
        fail(err, errlen, "users: must be an array of {\"user\", \"password\", \"system\"}");
        return -1;
    }
    c->nusers = json_array_size(v);
    c->users = calloc(c->nusers ? c->nusers : 1, sizeof *c->users);
    if (!c->users) return -1;
    for (size_t i = 0; i < c->nusers; i++) {
        json_t *u = json_array_get(v, i);
        srv_user *su = &c->users[i];
        char field[64];
        if (!json_is_object(u)) {
            fail(err, errlen, "users[%zu]: must be an object", i);
            return -1;
        }
        const char *k;
        json_t *f;
        json_object_foreach(u, k, f)
        {
            if (!strcmp(k, "user")) {
                snprintf(field, sizeof field, "users[%zu].user", i);
                if (get_str(f, field, &su->user, err, errlen)) return -1;
            } else if (!strcmp(k, "password")) {
                /* crypto_pwhash_str_needs_rehash() fails on a string that is not a hash of the
                 * algorithm libsodium verifies; a clear-text password is refused so. */
                if (!json_is_string(f) ||
                    crypto_pwhash_str_needs_rehash(json_string_value(f),
                                                   crypto_pwhash_OPSLIMIT_INTERACTIVE,
                                                   crypto_pwhash_MEMLIMIT_INTERACTIVE) < 0 ||
                    json_string_length(f) >= crypto_pwhash_STRBYTES) {
                    fail(err, errlen,
                         "users[%zu].password: must be a crypto_pwhash_str hash "
                         "(jetraft-server --hash-password prints one)",
                         i);
                    return -1;
                }
                free(su->hash);
                if (!(su->hash = dup_str(f))) return -1;
            } else if (!strcmp(k, "system")) {
                if (!json_is_boolean(f)) {
                    fail(err, errlen, "users[%zu].system: must be true or false", i);
                    return -1;
                }
                su->system = json_is_true(f);
            } else {
                fail(err, errlen, "users[%zu].%s: unknown field", i, k);
                return -1;
            }
        }
        if (!su->user || !su->hash) {
            fail(err, errlen, "users[%zu]: needs \"user\" and \"password\"", i);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->users[j].user, su->user)) {
                fail(err, errlen, "users[%zu].user: \"%s\" is listed twice", i, su->user);
                return -1;
            }
    }
    return 0;
}

/* The peer link keys together: present unless insecure_cluster, of the right roles, and a
 * certificate the library accepts for this server (signed by the authority, for this cluster,
 * this name and the identity key: a trial jr_link_new() checks the last). */
static int check_link_keys(srv_config *c, char *err, size_t errlen)
{
    if (c->insecure_cluster) {
        if (c->authority || c->identity || c->cert_len) {
            fail(err, errlen,
                 "insecure_cluster: cannot be combined with authority, identity "
                 "and certificate");
            return -1;
        }
        return 0;
    }
    const char *missing = !c->authority  ? "authority"
                          : !c->identity ? "identity"
                          : !c->cert_len ? "certificate"
                                         : NULL;
    if (missing) {
        fail(err, errlen,
             "%s: required (peer links need authority, identity and certificate files; "
             "jetraft-server --keygen and --sign make them; or \"insecure_cluster\": true)",
             missing);
        return -1;
    }
    for (size_t i = 0; i < c->npeers; i++) {
        const char *n = c->peers[i].name;
        size_t len = strlen(n), ok = len <= JR_LINK_NAME_MAX;
        for (size_t k = 0; ok && k < len; k++) ok = n[k] > 0x20 && n[k] < 0x7f;
        if (!ok) {
            fail(err, errlen,
                 "peers.%.64s: a server name in a certificate is 1 to 255 printable ASCII "
                 "characters without spaces",
                 n);
            return -1;
        }
    }
    if (jr_link_key_role(c->authority) != JR_LINK_AUTHORITY) {
        fail(err, errlen, "authority: not an authority key");
        return -1;
    }
    if (jr_link_key_role(c->identity) != JR_LINK_IDENTITY || !jr_link_key_has_secret(c->identity)) {
        fail(err, errlen, "identity: not an identity key pair (the secret key file is needed)");
        return -1;
    }
    char name[JR_LINK_NAME_MAX + 1] = "";
    int rc = jr_link_cert_name(c->cert, c->cert_len, name, sizeof name);
    if (rc == 0) rc = jr_link_cert_check(c->cert, c->cert_len, c->authority, c->cluster, NULL);
    if (rc) {
        fail(err, errlen, "certificate: %s",
             rc == JR_EAUTH ? "not signed by this authority for this cluster"
                            : "not a jetraft certificate");
        if (rc == JR_EAUTH) {
            size_t l = strlen(err);
            if (l < errlen) snprintf(err + l, errlen - l, " (\"%s\")", c->cluster);
        }
        return -1;
    }
    if (strcmp(name, c->name)) {
        fail(err, errlen, "certificate: issued to \"%s\", not to this server (\"%s\")", name,
             c->name);
        return -1;
    }
    jr_link_config lc;
    jr_link_config_init(&lc);
    lc.role = JR_LINK_ACCEPTOR;
    lc.authority = c->authority;
    lc.identity = c->identity;
    lc.cert = c->cert;
    lc.cert_len = c->cert_len;
    lc.cluster = c->cluster;
    jr_link *l = NULL;
    rc = jr_link_new(&lc, &l);
    jr_link_free(l);
    if (rc) {
        fail(err, errlen, "certificate: not issued for the identity key (%s)", jr_strerror(rc));
        return -1;
    }
    return 0;
}

static int cmp_peer(const void *a, const void *b)
{
    return strcmp(((const srv_peer_addr *)a)->name, ((const srv_peer_addr *)b)->name);
}

static int parse_obj(json_t *root, const char *dir, srv_config *c, char *err, size_t errlen)
{
    if (!json_is_object(root)) {
        fail(err, errlen, "the configuration must be a JSON object");
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        uint64_t u = 0;
        if (!strcmp(key, "name")) {
            if (get_str(v, key, &c->name, err, errlen)) return -1;
        } else if (!strcmp(key, "cluster")) {
            if (get_str(v, key, &c->cluster, err, errlen)) return -1;
        } else if (!strcmp(key, "tags")) {
            if (!json_is_array(v)) {
                fail(err, errlen, "tags: must be an array of strings");
                return -1;
            }
            c->ntags = json_array_size(v);
            c->tags = calloc(c->ntags ? c->ntags : 1, sizeof *c->tags);
            if (!c->tags) return -1;
            for (size_t i = 0; i < c->ntags; i++) {
                char field[32];
                snprintf(field, sizeof field, "tags[%zu]", i);
                if (get_str(json_array_get(v, i), field, &c->tags[i], err, errlen)) return -1;
            }
        } else if (!strcmp(key, "listen")) {
            if (get_addr(v, key, &c->client_host, &c->client_port, err, errlen)) return -1;
        } else if (!strcmp(key, "client_advertise")) {
            char *h = NULL;
            int port = 0;
            if (get_addr(v, key, &h, &port, err, errlen)) return -1;
            free(h);
            if (get_str(v, key, &c->client_advertise, err, errlen)) return -1;
        } else if (!strcmp(key, "cluster_listen")) {
            if (get_addr(v, key, &c->cluster_host, &c->cluster_port, err, errlen)) return -1;
        } else if (!strcmp(key, "http_listen")) {
            if (get_addr(v, key, &c->http_host, &c->http_port, err, errlen)) return -1;
        } else if (!strcmp(key, "peers")) {
            if (!json_is_object(v) || json_object_size(v) == 0) {
                fail(err, errlen, "peers: must be an object of server name to \"host:port\"");
                return -1;
            }
            c->npeers = json_object_size(v);
            c->peers = calloc(c->npeers, sizeof *c->peers);
            if (!c->peers) return -1;
            size_t i = 0;
            const char *pn;
            json_t *pa;
            json_object_foreach(v, pn, pa)
            {
                char field[300];
                snprintf(field, sizeof field, "peers.%s", pn);
                if (!*pn) {
                    fail(err, errlen, "peers: a server name is empty");
                    return -1;
                }
                c->peers[i].name = strdup(pn);
                if (!c->peers[i].name) return -1;
                if (get_addr(pa, field, &c->peers[i].host, &c->peers[i].port, err, errlen))
                    return -1;
                i++;
            }
            qsort(c->peers, c->npeers, sizeof *c->peers, cmp_peer);
        } else if (!strcmp(key, "wal_dir")) {
            if (get_str(v, key, &c->wal_dir, err, errlen)) return -1;
        } else if (!strcmp(key, "store_dir")) {
            if (get_str(v, key, &c->store_dir, err, errlen)) return -1;
        } else if (!strcmp(key, "unique_tag")) {
            if (get_str(v, key, &c->unique_tag, err, errlen)) return -1;
        } else if (!strcmp(key, "max_store_bytes")) {
            if (get_uint(v, key, 0, INT64_MAX, &c->max_store_bytes, err, errlen)) return -1;
        } else if (!strcmp(key, "max_assets")) {
            if (get_uint(v, key, 0, UINT32_MAX, &u, err, errlen)) return -1;
            c->max_assets = (uint32_t)u;
        } else if (!strcmp(key, "sync")) {
            if (!json_is_string(v) || (strcmp(json_string_value(v), "always") &&
                                       strcmp(json_string_value(v), "interval"))) {
                fail(err, errlen, "sync: must be \"always\" or \"interval\"");
                return -1;
            }
            c->sync_interval = !strcmp(json_string_value(v), "interval");
        } else if (!strcmp(key, "sync_offload")) {
            if (!json_is_boolean(v)) {
                fail(err, errlen, "sync_offload: must be true or false");
                return -1;
            }
            c->sync_offload = json_is_true(v);
        } else if (!strcmp(key, "sync_interval_ms")) {
            if (get_uint(v, key, 1, 60000, &u, err, errlen)) return -1;
            c->sync_interval_ms = (uint32_t)u;
        } else if (!strcmp(key, "election_timeout_ms")) {
            if (get_uint(v, key, 10, 600000, &u, err, errlen)) return -1;
            c->election_timeout_ms = (uint32_t)u;
        } else if (!strcmp(key, "heartbeat_ms")) {
            if (get_uint(v, key, 1, 600000, &u, err, errlen)) return -1;
            c->heartbeat_ms = (uint32_t)u;
        } else if (!strcmp(key, "request_timeout_ms")) {
            if (get_uint(v, key, 100, 600000, &u, err, errlen)) return -1;
            c->request_timeout_ms = (uint32_t)u;
        } else if (!strcmp(key, "max_payload")) {
            if (get_uint(v, key, 1, 8u << 20, &u, err, errlen)) return -1;
            c->max_payload = (uint32_t)u;
        } else if (!strcmp(key, "max_frame_bytes")) {
            if (get_uint(v, key, 64u << 10, 1u << 30, &u, err, errlen)) return -1;
            c->max_frame_bytes = (uint32_t)u;
        } else if (!strcmp(key, "peer_queue_bytes")) {
            if (get_uint(v, key, 1u << 16, UINT64_C(1) << 40, &c->peer_queue_bytes, err, errlen))
                return -1;
        } else if (!strcmp(key, "client_max_pending")) {
            if (get_uint(v, key, 1u << 16, UINT64_C(1) << 40, &c->client_max_pending, err, errlen))
                return -1;
        } else if (!strcmp(key, "max_control_line")) {
            if (get_uint(v, key, 256, 1u << 20, &u, err, errlen)) return -1;
            c->max_control_line = (uint32_t)u;
        } else if (!strcmp(key, "max_connections")) {
            if (get_uint(v, key, 1, 1u << 24, &u, err, errlen)) return -1;
            c->max_connections = (uint32_t)u;
        } else if (!strcmp(key, "max_inflight")) {
            if (get_uint(v, key, 16, 1u << 24, &u, err, errlen)) return -1;
            c->max_inflight = (uint32_t)u;
        } else if (!strcmp(key, "ping_interval_ms")) {
            if (get_uint(v, key, 100, 86400000, &u, err, errlen)) return -1;
            c->ping_interval_ms = (uint32_t)u;
        } else if (!strcmp(key, "huge_pages")) {
            if (!json_is_boolean(v)) {
                fail(err, errlen, "huge_pages: must be true or false");
                return -1;
            }
            c->huge_pages = json_is_true(v);
        } else if (!strcmp(key, "insecure_cluster")) {
            if (!json_is_boolean(v)) {
                fail(err, errlen, "insecure_cluster: must be true or false");
                return -1;
            }
            c->insecure_cluster = json_is_true(v);
        } else if (!strcmp(key, "authority")) {
            if (get_key(v, dir, key, &c->authority, err, errlen)) return -1;
        } else if (!strcmp(key, "data_key")) {
            if (get_data_key(v, dir, c, err, errlen)) return -1;
        } else if (!strcmp(key, "identity")) {
            if (get_key(v, dir, key, &c->identity, err, errlen)) return -1;
        } else if (!strcmp(key, "certificate")) {
            if (get_cert(v, dir, c, err, errlen)) return -1;
        } else if (!strcmp(key, "users")) {
            if (c->users) {
                fail(err, errlen, "users: given twice");
                return -1;
            }
            if (get_users(v, c, err, errlen)) return -1;
        } else {
            fail(err, errlen, "%s: unknown field", key);
            return -1;
        }
    }
    if (!c->name) {
        fail(err, errlen, "name: required");
        return -1;
    }
    if (!c->client_host) {
        fail(err, errlen, "listen: required");
        return -1;
    }
    if (!c->cluster_host) {
        fail(err, errlen, "cluster_listen: required");
        return -1;
    }
    if (!c->peers) {
        fail(err, errlen, "peers: required (every server of the cluster, this one included)");
        return -1;
    }
    int self = 0;
    for (size_t i = 0; i < c->npeers; i++) self |= !strcmp(c->peers[i].name, c->name);
    if (!self) {
        fail(err, errlen, "peers: must list this server (\"%s\")", c->name);
        return -1;
    }
    if (!c->wal_dir) {
        fail(err, errlen, "wal_dir: required");
        return -1;
    }
    if (c->heartbeat_ms >= c->election_timeout_ms) {
        fail(err, errlen, "heartbeat_ms: must be below election_timeout_ms (%u)",
             c->election_timeout_ms);
        return -1;
    }
    if (!c->cluster && !(c->cluster = strdup("jetraft"))) return -1;
    if (!c->store_dir && !(c->store_dir = strdup(c->wal_dir))) return -1;
    return check_link_keys(c, err, errlen);
}

static void defaults(srv_config *c)
{
    memset(c, 0, sizeof *c);
    c->election_timeout_ms = 1000;
    c->heartbeat_ms = 100;
    c->sync_interval_ms = 100;
    c->request_timeout_ms = 4000;
    c->max_payload = 1u << 20;
    c->max_frame_bytes = 8u << 20;
    c->peer_queue_bytes = 64u << 20;
    c->client_max_pending = 64u << 20;
    c->max_control_line = 4096;
    c->max_connections = 65536;
    c->max_inflight = 65536;
    c->ping_interval_ms = 120000;
    c->huge_pages = 1;
}

int srv_config_parse(const char *text, const char *dir, srv_config *cfg, char *err, size_t errlen)
{
    defaults(cfg);
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        fail(err, errlen, "line %d, column %d: %s", je.line, je.column, je.text);
        return -1;
    }
    int rc = parse_obj(root, dir, cfg, err, errlen);
    json_decref(root);
    if (rc) srv_config_free(cfg);
    return rc;
}

/* The line of the file's text where the field an error names (its message starts "field: ",
 * e.g. "heartbeat_ms", "tags[2]", "users[1].password", "peers.n2") is written: the line of its
 * key, the (i+1)-th occurrence of that key for an object in an array at index i. 0 when the
 * message names no field or the key is not in the text (a field required and missing). */
static int field_line(const char *text, const char *why)
{
    const char *colon = strstr(why, ": ");
    if (!colon || memchr(why, ' ', (size_t)(colon - why))) return 0;
    char field[256];
    size_t n = (size_t)(colon - why);
    if (n >= sizeof field) return 0;
    memcpy(field, why, n);
    field[n] = 0;
    /* the key: the last component; an index before it picks the occurrence */
    char *key = strrchr(field, '.');
    key = key ? key + 1 : field;
    size_t nth = 0;
    char *br = strchr(field, '[');
    if (br && br < key) nth = strtoul(br + 1, NULL, 10);
    char *kb = strchr(key, '[');
    if (kb) *kb = 0;
    if (!*key) return 0;
    char pat[260];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *at = text;
    for (size_t seen = 0;;) {
        at = strstr(at, pat);
        if (!at) return 0;
        const char *q = at + strlen(pat);
        while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n') q++;
        if (*q == ':') { /* a key, not a value that happens to match */
            if (seen == nth) break;
            seen++;
        }
        at = q;
    }
    int line = 1;
    for (const char *c = text; c < at; c++) line += *c == '\n';
    return line;
}

/* The whole file's text (NUL-terminated; free it), or NULL. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *nb = realloc(buf, cap);
            if (!nb) break;
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);
    if (buf) buf[len] = 0;
    return buf;
}

int srv_config_load(const char *path, srv_config *cfg, char *err, size_t errlen)
{
    defaults(cfg);
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        fail(err, errlen, "%s: line %d, column %d: %s", path, je.line, je.column, je.text);
        return -1;
    }
    char why[600], dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    if (slash == dir) snprintf(dir, sizeof dir, "/");
    int rc = parse_obj(root, dir, cfg, why, sizeof why);
    json_decref(root);
    if (rc) {
        char *text = read_text(path);
        int line = text ? field_line(text, why) : 0;
        free(text);
        if (line)
            fail(err, errlen, "%s: line %d: %s", path, line, why);
        else
            fail(err, errlen, "%s: %s", path, why);
        srv_config_free(cfg);
    }
    return rc;
}

void srv_config_free(srv_config *c)
{
    sodium_memzero(c->data_key, sizeof c->data_key);
    free(c->name);
    free(c->cluster);
    for (size_t i = 0; c->tags && i < c->ntags; i++) free(c->tags[i]);
    free(c->tags);
    free(c->client_host);
    free(c->client_advertise);
    free(c->cluster_host);
    free(c->http_host);
    for (size_t i = 0; c->peers && i < c->npeers; i++) {
        free(c->peers[i].name);
        free(c->peers[i].host);
    }
    free(c->peers);
    free(c->wal_dir);
    free(c->store_dir);
    free(c->unique_tag);
    jr_link_key_free(c->authority);
    jr_link_key_free(c->identity);
    for (size_t i = 0; c->users && i < c->nusers; i++) {
        free(c->users[i].user);
        if (c->users[i].hash) sodium_memzero(c->users[i].hash, strlen(c->users[i].hash));
        free(c->users[i].hash);
    }
    free(c->users);
    sodium_memzero(c, sizeof *c);
}
