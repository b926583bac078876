/*
 * msg — the payloads of per-group Raft messages (types 1..JR__MSG_TYPE_MAX), see frame.h for
 * the layout. The type and flags bytes, and the frame around them, are frame.c's.
 */
#include "wire/codec.h"

/* A new Raft message type or entry type needs its encoding here (and in frame.h's table). */
_Static_assert(JR__MSG_TYPE_MAX == 11, "update lib/wire/msg.c for the new message type");
_Static_assert(JR__MSG_TYPE_MAX <= JR__MSG_GROUP_LAST, "Raft types must stay below 64");
_Static_assert(JR__ENTRY_CONFIG == 2, "update lib/wire/msg.c for the new entry type");
_Static_assert((JR__MF_PREVOTE | JR__MF_TRANSFER | JR__MF_DURABLE) == 7, "new message flag");

/* Fixed part of any message: type, flags, group, term, plus the largest fixed field set
 * (SNAP: 4 varints, done, two length varints). */
#define MSG_FIXED_BOUND (2 + 2 * JR__VARINT_MAX + 7 * JR__VARINT_MAX + 1)
/* Per entry besides its data: etype, dterm, len. */
#define ENTRY_BOUND (1 + 2 * JR__VARINT_MAX)
/* An encoded entry is at least etype + dterm + len, one byte each. */
#define ENTRY_MIN 3

static int check_append(const jr__msg *m, size_t *bound)
{
    uint32_t n = m->u.append.n;
    const jr__entry *e = m->u.append.entries;
    if (n && !e) return JR_EINVAL;
    if (n > UINT64_MAX - m->u.append.prev_index) return JR_EINVAL; /* last index overflows */
    uint64_t term = m->u.append.prev_term;
    size_t b = MSG_FIXED_BOUND;
    for (uint32_t i = 0; i < n; i++) {
        if (e[i].index != m->u.append.prev_index + 1 + i) return JR_EINVAL;
        if (e[i].term < term) return JR_EINVAL;
        if (e[i].type > JR__ENTRY_CONFIG) return JR_EINVAL;
        if (e[i].len > JR__FRAME_MAX_ENTRY || (e[i].len && !e[i].data)) return JR_EINVAL;
        term = e[i].term;
        b += ENTRY_BOUND + e[i].len;
    }
    *bound = b;
    return 0;
}

/* Snapshot chunk rules, shared by the encoder and the decoder: the chunk's end does not
 * overflow; the last chunk ends at total; an earlier chunk ends within total unless total is
 * still unknown (0: the leader learns the size only when it reads the last chunk). */
static int snap_ok(uint64_t offset, uint64_t len, uint64_t total, uint8_t done)
{
    if (offset > UINT64_MAX - len) return 0;
    if (done) return offset + len == total;
    return total == 0 || offset + len <= total;
}

int jr__wire_msg_check(const jr__msg *m, size_t *bound)
{
    if (m->type < 1 || m->type > JR__MSG_TYPE_MAX) return JR_EINVAL;
    if (m->flags & ~JR__MF_ALL) return JR_EINVAL;
    if (m->group == 0) return JR_EINVAL;
    *bound = MSG_FIXED_BOUND;
    switch (m->type) {
    case JR__MSG_APPEND:
        return check_append(m, bound);
    case JR__MSG_SNAP:
        if (m->u.snap.conf_len > JR__FRAME_MAX_CONF) return JR_EINVAL;
        if ((m->u.snap.conf_len && !m->u.snap.conf) || (m->u.snap.len && !m->u.snap.data))
            return JR_EINVAL;
        if (!snap_ok(m->u.snap.offset, m->u.snap.len, m->u.snap.total, m->u.snap.done != 0))
            return JR_EINVAL;
        *bound += (size_t)m->u.snap.conf_len + m->u.snap.len;
        return 0;
    case JR__MSG_VOUCH_RESP:
        if (m->u.vouch_resp.conf_len > JR__FRAME_MAX_CONF) return JR_EINVAL;
        if (m->u.vouch_resp.conf_len && !m->u.vouch_resp.conf) return JR_EINVAL;
        if (m->u.vouch_resp.cconf_len > JR__FRAME_MAX_CONF) return JR_EINVAL;
        if (m->u.vouch_resp.cconf_len && !m->u.vouch_resp.cconf) return JR_EINVAL;
        /* without the committed configuration (bit 2 clear) nothing carries its index */
        if (!m->u.vouch_resp.cconf_len && m->u.vouch_resp.cconf_index) return JR_EINVAL;
        *bound += (size_t)m->u.vouch_resp.conf_len + m->u.vouch_resp.cconf_len;
        return 0;
    default:
        return 0;
    }
}

uint8_t *jr__wire_msg_put(uint8_t *p, const jr__msg *m)
{
    *p++ = m->type;
    *p++ = m->flags;
    p = jr__wput_varint(p, m->group);
    p = jr__wput_varint(p, m->term);
    switch (m->type) {
    case JR__MSG_VOTE:
        p = jr__wput_varint(p, m->u.vote.last_index);
        p = jr__wput_varint(p, m->u.vote.last_term);
        break;
    case JR__MSG_VOTE_RESP:
        *p++ = m->u.vote_resp.granted != 0;
        break;
    case JR__MSG_APPEND: {
        p = jr__wput_varint(p, m->u.append.prev_index);
        p = jr__wput_varint(p, m->u.append.prev_term);
        p = jr__wput_varint(p, m->u.append.commit);
        p = jr__wput_varint(p, m->u.append.n);
        uint64_t term = m->u.append.prev_term;
        const jr__entry *e = m->u.append.entries;
        for (uint32_t i = 0; i < m->u.append.n; i++) {
            *p++ = e[i].type;
            p = jr__wput_varint(p, e[i].term - term);
            term = e[i].term;
            p = jr__wput_bytes(p, e[i].data, e[i].len);
        }
        break;
    }
    case JR__MSG_APPEND_RESP:
        *p++ = m->u.append_resp.success != 0;
        p = jr__wput_varint(p, m->u.append_resp.index);
        p = jr__wput_varint(p, m->u.append_resp.hint_index);
        p = jr__wput_varint(p, m->u.append_resp.hint_term);
        break;
    case JR__MSG_HEARTBEAT:
        p = jr__wput_varint(p, m->u.heartbeat.commit);
        break;
    case JR__MSG_HEARTBEAT_RESP:
        p = jr__wput_varint(p, m->u.heartbeat_resp.match_hint);
        break;
    case JR__MSG_SNAP:
        p = jr__wput_varint(p, m->u.snap.index);
        p = jr__wput_varint(p, m->u.snap.sterm);
        p = jr__wput_varint(p, m->u.snap.offset);
        p = jr__wput_varint(p, m->u.snap.total);
        *p++ = m->u.snap.done != 0;
        p = jr__wput_bytes(p, m->u.snap.conf, m->u.snap.conf_len);
        p = jr__wput_bytes(p, m->u.snap.data, m->u.snap.len);
        break;
    case JR__MSG_SNAP_RESP:
        *p++ = (uint8_t)((m->u.snap_resp.done != 0) | (m->u.snap_resp.reject != 0) << 1);
        p = jr__wput_varint(p, m->u.snap_resp.index);
        p = jr__wput_varint(p, m->u.snap_resp.offset);
        break;
    case JR__MSG_VOUCH:
        p = jr__wput_varint(p, m->u.vouch.last_index);
        p = jr__wput_varint(p, m->u.vouch.last_term);
        break;
    case JR__MSG_VOUCH_RESP:
        *p++ = (uint8_t)((m->u.vouch_resp.leader != 0) | (m->u.vouch_resp.unfloored != 0) << 1 |
                         (m->u.vouch_resp.cconf_len != 0) << 2);
        p = jr__wput_varint(p, m->u.vouch_resp.last_index);
        p = jr__wput_varint(p, m->u.vouch_resp.last_term);
        p = jr__wput_varint(p, m->u.vouch_resp.commit);
        p = jr__wput_varint(p, m->u.vouch_resp.conf_index);
        p = jr__wput_bytes(p, m->u.vouch_resp.conf, m->u.vouch_resp.conf_len);
        if (m->u.vouch_resp.cconf_len) {
            p = jr__wput_varint(p, m->u.vouch_resp.cconf_index);
            p = jr__wput_bytes(p, m->u.vouch_resp.cconf, m->u.vouch_resp.cconf_len);
        }
        break;
    default: /* JR__MSG_TIMEOUT_NOW: the term says it all */
        break;
    }
    return p;
}

size_t jr__frame_msg_len(const jr__msg *m)
{
    size_t n = 2 + jr__varint_len(m->group) + jr__varint_len(m->term);
    switch (m->type) {
    case JR__MSG_VOTE:
        return n + jr__varint_len(m->u.vote.last_index) + jr__varint_len(m->u.vote.last_term);
    case JR__MSG_VOTE_RESP:
        return n + 1;
    case JR__MSG_APPEND: {
        n += jr__varint_len(m->u.append.prev_index) + jr__varint_len(m->u.append.prev_term) +
             jr__varint_len(m->u.append.commit) + jr__varint_len(m->u.append.n);
        uint64_t term = m->u.append.prev_term;
        for (uint32_t i = 0; m->u.append.entries && i < m->u.append.n; i++) {
            const jr__entry *e = &m->u.append.entries[i];
            n += 1 + jr__varint_len(e->term - term) + jr__varint_len(e->len) + e->len;
            term = e->term;
        }
        return n;
    }
    case JR__MSG_APPEND_RESP:
        return n + 1 + jr__varint_len(m->u.append_resp.index) +
               jr__varint_len(m->u.append_resp.hint_index) +
               jr__varint_len(m->u.append_resp.hint_term);
    case JR__MSG_HEARTBEAT:
        return n + jr__varint_len(m->u.heartbeat.commit);
    case JR__MSG_HEARTBEAT_RESP:
        return n + jr__varint_len(m->u.heartbeat_resp.match_hint);
    case JR__MSG_SNAP:
        return n + jr__varint_len(m->u.snap.index) + jr__varint_len(m->u.snap.sterm) +
               jr__varint_len(m->u.snap.offset) + jr__varint_len(m->u.snap.total) + 1 +
               jr__varint_len(m->u.snap.conf_len) + m->u.snap.conf_len +
               jr__varint_len(m->u.snap.len) + m->u.snap.len;
    case JR__MSG_SNAP_RESP:
        return n + 1 + jr__varint_len(m->u.snap_resp.index) + jr__varint_len(m->u.snap_resp.offset);
    case JR__MSG_VOUCH:
        return n + jr__varint_len(m->u.vouch.last_index) + jr__varint_len(m->u.vouch.last_term);
    case JR__MSG_VOUCH_RESP:
        return n + 1 + jr__varint_len(m->u.vouch_resp.last_index) +
               jr__varint_len(m->u.vouch_resp.last_term) + jr__varint_len(m->u.vouch_resp.commit) +
               jr__varint_len(m->u.vouch_resp.conf_index) +
               jr__varint_len(m->u.vouch_resp.conf_len) + m->u.vouch_resp.conf_len +
               (m->u.vouch_resp.cconf_len
                    ? jr__varint_len(m->u.vouch_resp.cconf_index) +
                          jr__varint_len(m->u.vouch_resp.cconf_len) + m->u.vouch_resp.cconf_len
                    : 0);
    default:
        return n;
    }
}

static int get_append(jr__rd *r, jr__msg *m, jr__entry *scratch, size_t cap, uint32_t max_entry)
{
    uint64_t prev_index = jr__wget_varint(r);
    uint64_t term = jr__wget_varint(r);
    m->u.append.prev_index = prev_index;
    m->u.append.prev_term = term;
    m->u.append.commit = jr__wget_varint(r);
    uint64_t n = jr__wget_varint(r);
    if (r->err) return JR_ECORRUPT;
    if (n > jr__rd_left(r) / ENTRY_MIN) return jr__rd_fail(r);
    if (n > cap) return JR_EMSGSIZE;
    if (n > UINT64_MAX - prev_index) return jr__rd_fail(r); /* last index overflows */
    for (uint64_t i = 0; i < n; i++) {
        uint8_t type = jr__wget_u8(r);
        uint64_t dterm = jr__wget_varint(r);
        uint64_t len = jr__wget_varint(r);
        if (r->err || type > JR__ENTRY_CONFIG || dterm > UINT64_MAX - term || len > max_entry ||
            len > jr__rd_left(r))
            return jr__rd_fail(r);
        term += dterm;
        if (scratch) {
            scratch[i].index = prev_index + 1 + i;
            scratch[i].term = term;
            scratch[i].type = type;
            scratch[i].len = (uint32_t)len;
            scratch[i].data = r->p;
        }
        r->p += len;
    }
    m->u.append.n = (uint32_t)n;
    m->u.append.entries = scratch;
    return 0;
}

static int get_snap(jr__rd *r, jr__msg *m)
{
    m->u.snap.index = jr__wget_varint(r);
    m->u.snap.sterm = jr__wget_varint(r);
    m->u.snap.offset = jr__wget_varint(r);
    m->u.snap.total = jr__wget_varint(r);
    m->u.snap.done = jr__wget_bool(r);
    size_t conf_len, len;
    m->u.snap.conf = jr__rd_bytes(r, &conf_len, JR__FRAME_MAX_CONF);
    m->u.snap.data = jr__rd_bytes(r, &len, UINT32_MAX);
    if (r->err) return JR_ECORRUPT;
    m->u.snap.conf_len = (uint32_t)conf_len;
    m->u.snap.len = (uint32_t)len;
    if (!snap_ok(m->u.snap.offset, len, m->u.snap.total, m->u.snap.done)) return jr__rd_fail(r);
    return 0;
}

int jr__wire_msg_get(jr__rd *r, jr__msg *m, jr__entry *scratch, size_t cap, uint32_t max_entry)
{
    m->group = jr__wget_varint(r);
    m->term = jr__wget_varint(r);
    if (r->err) return JR_ECORRUPT;
    if (m->group == 0) return jr__rd_fail(r);
    switch (m->type) {
    case JR__MSG_VOTE:
        m->u.vote.last_index = jr__wget_varint(r);
        m->u.vote.last_term = jr__wget_varint(r);
        break;
    case JR__MSG_VOTE_RESP:
        m->u.vote_resp.granted = jr__wget_bool(r);
        break;
    case JR__MSG_APPEND:
        return get_append(r, m, scratch, cap, max_entry);
    case JR__MSG_APPEND_RESP:
        m->u.append_resp.success = jr__wget_bool(r);
        m->u.append_resp.index = jr__wget_varint(r);
        m->u.append_resp.hint_index = jr__wget_varint(r);
        m->u.append_resp.hint_term = jr__wget_varint(r);
        break;
    case JR__MSG_HEARTBEAT:
        m->u.heartbeat.commit = jr__wget_varint(r);
        break;
    case JR__MSG_HEARTBEAT_RESP:
        m->u.heartbeat_resp.match_hint = jr__wget_varint(r);
        break;
    case JR__MSG_SNAP:
        return get_snap(r, m);
    case JR__MSG_SNAP_RESP: {
        uint8_t bits = jr__wget_u8(r);
        if (bits & ~3u) return jr__rd_fail(r);
        m->u.snap_resp.done = bits & 1;
        m->u.snap_resp.reject = (bits >> 1) & 1;
        m->u.snap_resp.index = jr__wget_varint(r);
        m->u.snap_resp.offset = jr__wget_varint(r);
        break;
    }
    case JR__MSG_TIMEOUT_NOW:
        break;
    case JR__MSG_VOUCH:
        m->u.vouch.last_index = jr__wget_varint(r);
        m->u.vouch.last_term = jr__wget_varint(r);
        break;
    case JR__MSG_VOUCH_RESP: {
        uint8_t bits = jr__wget_u8(r);
        if (bits & ~7u) return jr__rd_fail(r);
        m->u.vouch_resp.leader = bits & 1;
        m->u.vouch_resp.unfloored = (bits >> 1) & 1;
        m->u.vouch_resp.last_index = jr__wget_varint(r);
        m->u.vouch_resp.last_term = jr__wget_varint(r);
        m->u.vouch_resp.commit = jr__wget_varint(r);
        m->u.vouch_resp.conf_index = jr__wget_varint(r);
        size_t conf_len;
        m->u.vouch_resp.conf = jr__rd_bytes(r, &conf_len, JR__FRAME_MAX_CONF);
        m->u.vouch_resp.conf_len = (uint32_t)conf_len;
        m->u.vouch_resp.cconf_index = 0;
        m->u.vouch_resp.cconf = NULL;
        m->u.vouch_resp.cconf_len = 0;
        if (bits & 4u) { /* the configuration at its commit index follows, never empty */
            m->u.vouch_resp.cconf_index = jr__wget_varint(r);
            m->u.vouch_resp.cconf = jr__rd_bytes(r, &conf_len, JR__FRAME_MAX_CONF);
            m->u.vouch_resp.cconf_len = (uint32_t)conf_len;
            if (!r->err && !conf_len) return jr__rd_fail(r);
        }
        break;
    }
    default:
        return jr__rd_fail(r);
    }
    return r->err ? JR_ECORRUPT : 0;
}
