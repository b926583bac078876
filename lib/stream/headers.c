/*
 * headers.c — NATS header blocks (headers.h).
 */
#include <string.h>

#include "stream/headers.h"

static const char version[] = "NATS/1.0";
#define VERSION_LEN (sizeof version - 1)

static int key_char(uint8_t c)
{
    return c >= 33 && c <= 126 && c != ':';
}

static int value_char(uint8_t c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int ws(uint8_t c)
{
    return c == ' ' || c == '\t';
}

/* Length of a run of value characters at p (stops at end or the first other byte). */
static size_t value_run(const uint8_t *p, const uint8_t *end)
{
    const uint8_t *q = p;
    while (q < end && value_char(*q)) q++;
    return (size_t)(q - p);
}

static int crlf(const uint8_t *p, const uint8_t *end)
{
    return end - p >= 2 && p[0] == '\r' && p[1] == '\n';
}

/* Parses the status line; on success *body points at the first key line. */
static int parse_status(const uint8_t *p, const uint8_t *end, int *code, const uint8_t **desc,
                        size_t *desc_len, const uint8_t **body)
{
    *code = 0;
    *desc = NULL;
    *desc_len = 0;
    if ((size_t)(end - p) < VERSION_LEN || memcmp(p, version, VERSION_LEN)) return JR_EINVAL;
    p += VERSION_LEN;
    if (p < end && *p == ' ') {
        p++;
        if (end - p < 3) return JR_EINVAL;
        for (int i = 0; i < 3; i++) {
            if (p[i] < '0' || p[i] > '9') return JR_EINVAL;
            *code = *code * 10 + (p[i] - '0');
        }
        p += 3;
        if (p < end && *p == ' ') {
            p++;
            size_t n = value_run(p, end);
            *desc = p;
            *desc_len = n;
            p += n;
        }
    }
    if (!crlf(p, end)) return JR_EINVAL;
    *body = p + 2;
    return 0;
}

/* Parses one line at p: a key line (*key set) or the final empty line (*key NULL). *next gets
 * the following line. 0, or JR_EINVAL if malformed. */
static int parse_line(const uint8_t *p, const uint8_t *end, const uint8_t **key, size_t *klen,
                      const uint8_t **val, size_t *vlen, const uint8_t **next)
{
    *key = NULL;
    if (crlf(p, end)) {
        *next = p + 2;
        return 0;
    }
    const uint8_t *k = p;
    while (p < end && key_char(*p)) p++;
    if (p == k || p == end || *p != ':') return JR_EINVAL;
    *key = k;
    *klen = (size_t)(p - k);
    p++;
    size_t n = value_run(p, end);
    const uint8_t *v = p, *ve = p + n;
    if (!crlf(ve, end)) return JR_EINVAL;
    while (v < ve && ws(*v)) v++;
    while (ve > v && ws(ve[-1])) ve--;
    *val = v;
    *vlen = (size_t)(ve - v);
    *next = p + n + 2;
    return 0;
}

int jr__headers_iter(const void *hdr, size_t len, jr__hdr_iter *it)
{
    it->p = it->end = NULL;
    if (len == 0) return 0;
    if (!hdr) return JR_EINVAL;
    const uint8_t *p = hdr, *end = p + len, *body, *d;
    int code;
    size_t dl;
    if (parse_status(p, end, &code, &d, &dl, &body)) return JR_EINVAL;
    /* validate every line up to the final empty line, which must end the block */
    const uint8_t *q = body, *k, *v, *next;
    size_t kl, vl;
    for (;;) {
        if (parse_line(q, end, &k, &kl, &v, &vl, &next)) return JR_EINVAL;
        if (!k) {
            if (next != end) return JR_EINVAL;
            break;
        }
        q = next;
    }
    it->p = body;
    it->end = end;
    return 0;
}

int jr__headers_next(jr__hdr_iter *it, const char **key, size_t *key_len, const char **val,
                     size_t *val_len)
{
    if (!it->p || it->p >= it->end) return 0;
    const uint8_t *k, *v, *next;
    size_t kl, vl;
    if (parse_line(it->p, it->end, &k, &kl, &v, &vl, &next) || !k) {
        it->p = it->end;
        return 0;
    }
    it->p = next;
    *key = (const char *)k;
    *key_len = kl;
    *val = (const char *)v;
    *val_len = vl;
    return 1;
}

int jr__headers_validate(const void *hdr, size_t len)
{
    jr__hdr_iter it;
    return jr__headers_iter(hdr, len, &it);
}

int jr__headers_status(const void *hdr, size_t len, int *code, const char **desc, size_t *desc_len)
{
    jr__hdr_iter it;
    if (len == 0 || jr__headers_iter(hdr, len, &it)) return JR_EINVAL;
    const uint8_t *d = NULL, *body;
    int rc = parse_status(hdr, (const uint8_t *)hdr + len, code, &d, desc_len, &body);
    *desc = (const char *)d;
    return rc;
}

int jr__headers_get(const void *hdr, size_t len, const char *key, const char **val, size_t *val_len)
{
    jr__hdr_iter it;
    if (jr__headers_iter(hdr, len, &it)) return JR_EINVAL;
    size_t want = strlen(key);
    const char *k, *v;
    size_t kl, vl;
    while (jr__headers_next(&it, &k, &kl, &v, &vl)) {
        if (kl == want && memcmp(k, key, kl) == 0) {
            *val = v;
            *val_len = vl;
            return 0;
        }
    }
    return JR_ENOTFOUND;
}

/* ---------------------------------------------------------------------------------------------
 * JetStream publish headers
 */

static int parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 20) return JR_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return JR_EINVAL;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return JR_EINVAL;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int ieq(const char *s, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    if (n != m) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != lit[i]) return 0;
    }
    return 1;
}

static int keyis(const char *k, size_t kl, const char *lit)
{
    return kl == strlen(lit) && memcmp(k, lit, kl) == 0;
}

int jr__headers_pub_opts(const void *hdr, size_t len, jr__pub_opts *out)
{
    memset(out, 0, sizeof *out);
    jr__hdr_iter it;
    if (jr__headers_iter(hdr, len, &it)) return JR_EINVAL;
    const char *k, *v;
    size_t kl, vl;
    uint32_t seen = 0; /* first value wins: later repeats are ignored */
    int rc = 0;
    while (!rc && jr__headers_next(&it, &k, &kl, &v, &vl)) {
        if (kl < 5 || memcmp(k, "Nats-", 5) != 0) continue;
        uint32_t bit = 0;
        if (keyis(k, kl, JR__HDR_MSG_ID))
            bit = JR__PUB_MSG_ID;
        else if (keyis(k, kl, JR__HDR_EXPECTED_STREAM))
            bit = JR__PUB_EXPECT_STREAM;
        else if (keyis(k, kl, JR__HDR_EXPECTED_LAST_SEQ))
            bit = JR__PUB_EXPECT_LAST_SEQ;
        else if (keyis(k, kl, JR__HDR_EXPECTED_LAST_SUBJ_SEQ))
            bit = JR__PUB_EXPECT_LAST_SUBJ_SEQ;
        else if (keyis(k, kl, JR__HDR_EXPECTED_LAST_MSG_ID))
            bit = JR__PUB_EXPECT_LAST_MSG_ID;
        else if (keyis(k, kl, JR__HDR_ROLLUP))
            bit = JR__PUB_ROLLUP_SUB | JR__PUB_ROLLUP_ALL;
        if (!bit || (seen & bit)) continue;
        seen |= bit;
        if (vl == 0) continue; /* empty: as if absent */
        switch (bit) {
        case JR__PUB_MSG_ID:
            if (vl > JR__OP_MSG_ID_MAX) rc = JR_EINVAL;
            out->msg_id = v;
            out->msg_id_len = vl;
            break;
        case JR__PUB_EXPECT_STREAM:
            if (vl > JR_STREAM_NAME_MAX) rc = JR_EINVAL;
            out->expected_stream = v;
            out->expected_stream_len = vl;
            break;
        case JR__PUB_EXPECT_LAST_SEQ:
            rc = parse_u64(v, vl, &out->expected_last_seq);
            break;
        case JR__PUB_EXPECT_LAST_SUBJ_SEQ:
            rc = parse_u64(v, vl, &out->expected_last_subject_seq);
            break;
        case JR__PUB_EXPECT_LAST_MSG_ID:
            if (vl > JR__OP_MSG_ID_MAX) rc = JR_EINVAL;
            out->expected_last_msg_id = v;
            out->expected_last_msg_id_len = vl;
            break;
        default: /* rollup */
            if (ieq(v, vl, "sub"))
                bit = JR__PUB_ROLLUP_SUB;
            else if (ieq(v, vl, "all"))
                bit = JR__PUB_ROLLUP_ALL;
            else
                rc = JR_EINVAL;
            break;
        }
        out->flags |= bit;
    }
    if (rc) memset(out, 0, sizeof *out);
    return rc;
}
