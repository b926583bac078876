/*
 * proto.c — the NATS client protocol parser (see proto.h).
 */
#include "proto.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ERR_PARSER "Unknown Protocol Operation"
#define ERR_LINE "Maximum Control Line Exceeded"
#define ERR_PAYLOAD "Maximum Payload Violation"

int np_init(np_parser *p, size_t max_line, size_t max_payload)
{
    memset(p, 0, sizeof *p);
    p->max_line = max_line;
    p->max_payload = max_payload;
    p->line = malloc(max_line + 1);
    return p->line ? 0 : -1;
}

void np_free(np_parser *p)
{
    free(p->line);
    free(p->pl);
    memset(p, 0, sizeof *p);
}

size_t np_buffered(const np_parser *p)
{
    return p->line_len + p->pl_len;
}

static int is_sp(char c)
{
    return c == ' ' || c == '\t';
}

/* Splits s in place on runs of spaces and tabs; at most max tokens (a further one is an error,
 * returned as max + 1). */
static int split(char *s, char **tok, int max)
{
    int n = 0;
    while (*s) {
        while (is_sp(*s)) *s++ = 0;
        if (!*s) break;
        if (n == max) return max + 1;
        tok[n++] = s;
        while (*s && !is_sp(*s)) s++;
    }
    return n;
}

/* A size: 1 to 10 decimal digits, no sign. */
static int parse_size(const char *s, size_t *out)
{
    size_t n = 0, len = strlen(s);
    if (len == 0 || len > 10) return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        n = n * 10 + (size_t)(s[i] - '0');
    }
    *out = n;
    return 0;
}

/* Parses one control line (NUL-terminated, CRLF removed). Returns 0 with p->op filled (kind 0:
 * nothing to report), or NP_EPROTO with *err. */
static int parse_line(np_parser *p, const char **err)
{
    char *line = p->line;
    np_op *op = &p->op;
    memset(op, 0, sizeof *op);
    op->max = -1;
    while (is_sp(*line)) line++;
    char *name = line;
    while (*line && !is_sp(*line)) line++;
    size_t nlen = (size_t)(line - name);
    char *args = line;
    if (*args) *args++ = 0;
    char *tok[5];
    *err = ERR_PARSER;
    if (!strcasecmp(name, "PUB") || !strcasecmp(name, "HPUB")) {
        int h = nlen == 4;
        int n = split(args, tok, 5);
        if (n < 2 + h || n > 3 + h) return NP_EPROTO;
        op->kind = h ? NP_HPUB : NP_PUB;
        op->subject = tok[0];
        op->reply = n == 3 + h ? tok[1] : NULL;
        size_t hl = 0, total;
        if (parse_size(tok[n - 1], &total)) return NP_EPROTO;
        if (h && (parse_size(tok[n - 2], &hl) || hl > total)) return NP_EPROTO;
        if (total > p->max_payload) {
            *err = ERR_PAYLOAD;
            return NP_EPROTO;
        }
        op->hdr_len = hl;
        p->total = total;
        return 0;
    }
    if (!strcasecmp(name, "SUB")) {
        int n = split(args, tok, 3);
        if (n < 2 || n > 3) return NP_EPROTO;
        op->kind = NP_SUB;
        op->subject = tok[0];
        op->queue = n == 3 ? tok[1] : NULL;
        op->sid = tok[n - 1];
        return 0;
    }
    if (!strcasecmp(name, "UNSUB")) {
        int n = split(args, tok, 2);
        if (n < 1 || n > 2) return NP_EPROTO;
        op->kind = NP_UNSUB;
        op->sid = tok[0];
        if (n == 2) {
            size_t m;
            if (parse_size(tok[1], &m)) return NP_EPROTO;
            op->max = (int64_t)m;
        }
        return 0;
    }
    if (!strcasecmp(name, "PING") || !strcasecmp(name, "PONG")) {
        if (split(args, tok, 0) != 0) return NP_EPROTO;
        op->kind = name[1] == 'I' || name[1] == 'i' ? NP_PING : NP_PONG;
        return 0;
    }
    if (!strcasecmp(name, "CONNECT") || !strcasecmp(name, "INFO")) {
        while (is_sp(*args)) args++;
        size_t al = strlen(args);
        while (al && is_sp(args[al - 1])) args[--al] = 0;
        op->kind = name[0] == 'C' || name[0] == 'c' ? NP_CONNECT : NP_INFO;
        op->arg = args;
        op->arg_len = al;
        return 0;
    }
    if (!strcmp(name, "+OK") || !strcmp(name, "-ERR")) return 0; /* a client's echo: ignored */
    return NP_EPROTO;
}

/* Hands out the PUB/HPUB in p->op with its payload at pl (total bytes followed by CRLF). */
static int finish_pub(np_parser *p, const uint8_t *pl, np_cb cb, void *arg, const char **err)
{
    if (pl[p->total] != '\r' || pl[p->total + 1] != '\n') {
        *err = ERR_PARSER;
        return NP_EPROTO;
    }
    np_op *op = &p->op;
    op->hdr = pl;
    op->data = pl + op->hdr_len;
    op->data_len = p->total - op->hdr_len;
    p->in_payload = 0;
    p->line_len = 0;
    return cb(arg, op);
}

int np_feed(np_parser *p, const uint8_t *data, size_t n, np_cb cb, void *arg, const char **err)
{
    *err = NULL;
    while (n > 0) {
        if (p->in_payload) {
            size_t want = p->total + 2;
            if (p->pl_len == 0 && n >= want) { /* whole payload in this read: no copy */
                const uint8_t *pl = data;
                data += want;
                n -= want;
                int rc = finish_pub(p, pl, cb, arg, err);
                if (rc) return rc;
                continue;
            }
            if (p->pl_cap < want) {
                uint8_t *nb = realloc(p->pl, want);
                if (!nb) {
                    *err = "Out of Memory";
                    return NP_EPROTO;
                }
                p->pl = nb;
                p->pl_cap = want;
            }
            size_t k = want - p->pl_len;
            if (k > n) k = n;
            memcpy(p->pl + p->pl_len, data, k);
            p->pl_len += k;
            data += k;
            n -= k;
            if (p->pl_len < want) return 0;
            p->pl_len = 0;
            int rc = finish_pub(p, p->pl, cb, arg, err);
            /* A large payload's buffer is not kept for the connection's lifetime. */
            if (p->pl_cap > (64u << 10)) {
                free(p->pl);
                p->pl = NULL;
                p->pl_cap = 0;
            }
            if (rc) return rc;
            continue;
        }
        const uint8_t *nl = memchr(data, '\n', n);
        size_t k = nl ? (size_t)(nl - data) + 1 : n;
        /* The line without its LF must fit (its CR included, as nats-server counts it). */
        if (p->line_len + k - (nl ? 1 : 0) > p->max_line) {
            *err = ERR_LINE;
            return NP_EPROTO;
        }
        memcpy(p->line + p->line_len, data, k);
        p->line_len += k;
        data += k;
        n -= k;
        if (!nl) return 0;
        size_t ll = p->line_len - 1; /* drop LF, then CR */
        if (ll && p->line[ll - 1] == '\r') ll--;
        p->line[ll] = 0;
        if (memchr(p->line, 0, ll)) {
            *err = ERR_PARSER;
            return NP_EPROTO;
        }
        int rc = parse_line(p, err);
        if (rc) return rc;
        *err = NULL; /* parse_line sets its error text before it knows the line is good */
        if (p->op.kind == NP_PUB || p->op.kind == NP_HPUB) {
            p->in_payload = 1; /* p->line keeps the op's strings until the payload is done */
            continue;
        }
        p->line_len = 0;
        if (p->op.kind) {
            rc = cb(arg, &p->op);
            if (rc) return rc;
        }
    }
    return 0;
}
