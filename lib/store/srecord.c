#include "srecord.h"

#include <string.h>

#include "jetraft.h"
#include "util/buf.h"
#include "util/checksum.h"

static inline void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

void jr__srec_encode(uint8_t *dst, const jr__srec *r)
{
    size_t len = jr__srec_size(r->subj_len, r->hdr_len, r->data_len);
    jr__put_u32(dst, (uint32_t)len);
    dst[4] = (uint8_t)r->type;
    dst[5] = 0;
    put_u16(dst + 6, (uint16_t)r->subj_len);
    jr__put_u32(dst + 8, (uint32_t)r->hdr_len);
    jr__put_u64(dst + 12, r->seq);
    jr__put_u64(dst + 20, r->ts);
    uint8_t *p = dst + JR__SREC_HDR;
    if (r->subj_len) memcpy(p, r->subj, r->subj_len);
    p += r->subj_len;
    if (r->hdr_len) memcpy(p, r->hdr, r->hdr_len);
    p += r->hdr_len;
    if (r->data_len) memcpy(p, r->data, r->data_len);
    p += r->data_len;
    jr__put_u64(p, jr__xxh3(dst, len - 8));
}

int jr__srec_decode(const uint8_t *p, size_t avail, int verify, jr__srec *out, size_t *len)
{
    if (avail < JR__SREC_MIN) return JR_ECORRUPT;
    uint32_t n = jr__get_u32(p);
    if (n < JR__SREC_MIN || n > avail || n > JR__SREC_MAX) return JR_ECORRUPT;
    int type = p[4];
    if (type < JR__SREC_MSG || type > JR__SREC_TYPE_MAX || p[5] != 0) return JR_ECORRUPT;
    size_t subj_len = (size_t)p[6] | (size_t)p[7] << 8;
    size_t hdr_len = jr__get_u32(p + 8);
    if (hdr_len > n || subj_len + hdr_len > n - JR__SREC_MIN) return JR_ECORRUPT;
    size_t data_len = n - JR__SREC_MIN - subj_len - hdr_len;
    if (verify && jr__get_u64(p + n - 8) != jr__xxh3(p, n - 8)) return JR_ECORRUPT;
    out->type = type;
    out->seq = jr__get_u64(p + 12);
    out->ts = jr__get_u64(p + 20);
    out->subj = (const char *)p + JR__SREC_HDR;
    out->subj_len = subj_len;
    out->hdr = p + JR__SREC_HDR + subj_len;
    out->hdr_len = hdr_len;
    out->data = out->hdr + hdr_len;
    out->data_len = data_len;
    switch (type) {
    case JR__SREC_MSG:
    case JR__SREC_ERASED:
        if (subj_len == 0 || out->seq == 0) return JR_ECORRUPT;
        break;
    case JR__SREC_DEL:
        if (subj_len || hdr_len || data_len || out->seq > out->ts) return JR_ECORRUPT;
        break;
    case JR__SREC_DELSUBJ:
        if (subj_len == 0 || hdr_len || data_len) return JR_ECORRUPT;
        break;
    case JR__SREC_MARK:
        if (subj_len || hdr_len != JR__SREC_MARK_HDR) return JR_ECORRUPT;
        break;
    }
    *len = n;
    return 0;
}

void jr__srec_erase(uint8_t *p, size_t len)
{
    p[4] = JR__SREC_ERASED;
    memset(p + JR__SREC_HDR, 0, len - JR__SREC_MIN);
    /* keep subj_len/hdr_len so the shape stays valid; content is zeros */
    jr__put_u64(p + len - 8, jr__xxh3(p, len - 8));
}
