/*
 * raft — lifecycle, recovery, input dispatch with the term rules, the ready cycle, queries.
 *
 * Everything here is the glue: the protocol itself lives in election.c, replication.c,
 * membership.c, transfer.c and snapshot.c.
 */
#include <string.h>

#include "impl.h"
#include "util/alloc.h"

#define MS 1000000ULL

static void apply_defaults(jr__raft_config *c)
{
    if (!c->election_timeout) c->election_timeout = 1000 * MS;
    if (!c->heartbeat_interval) c->heartbeat_interval = 100 * MS;
    if (!c->max_inflight) c->max_inflight = 64;
    if (!c->max_inflight_bytes) c->max_inflight_bytes = 8u << 20;
    if (!c->max_msg_bytes) c->max_msg_bytes = 1u << 20;
    if (!c->max_entry_bytes) c->max_entry_bytes = 1u << 20;
    if (!c->snap_chunk_bytes) c->snap_chunk_bytes = 256u << 10;
}

int jr__raft_new(const jr__raft_config *cfg, const jr__raft_io *io, jr__raft **out)
{
    *out = NULL;
    if (!cfg || !io || !io->send || !io->notify || cfg->self == 0) return JR_EINVAL;
    jr__raft *r = jr__calloc(cfg->alloc, 1, sizeof *r);
    if (!r) return JR_ENOMEM;
    r->cfg = *cfg;
    apply_defaults(&r->cfg);
    if (r->cfg.heartbeat_interval >= r->cfg.election_timeout) {
        jr__free(cfg->alloc, r);
        return JR_EINVAL;
    }
    r->io = *io;
    r->alloc = cfg->alloc;
    /* distinct streams per (seed, self, group), however the caller derived its seeds */
    uint64_t x = cfg->seed;
    uint64_t s = jr__splitmix64(&x) ^ (cfg->self * 0x9e3779b97f4a7c15ULL);
    s = jr__splitmix64(&s) ^ (cfg->group * 0xbf58476d1ce4e5b9ULL);
    jr__rand_seed(&r->rng, s);
    jr__memlog_init(&r->log, r->alloc);
    r->confs = cfg->confs;
    if (!r->confs) {
        if (jr__confs_new(r->alloc, &r->confs)) {
            jr__free(cfg->alloc, r);
            return JR_ENOMEM;
        }
        r->own_confs = 1;
    }
    static const jr__conf none; /* no members until bootstrap, a snapshot or a CONFIG entry */
    r->conf = jr__confs_get(r->confs, &none);
    if (!r->conf) {
        if (r->own_confs) jr__confs_free(r->confs);
        jr__free(cfg->alloc, r);
        return JR_ENOMEM;
    }
    r->snap_conf = jr__confs_ref(r->conf);
    r->role = ROLE_FOLLOWER;
    r->election_deadline = UINT64_MAX;
    r->commit_hb_at = UINT64_MAX;
    *out = r;
    return 0;
}

size_t jr__raft_sizeof(void)
{
    return sizeof(jr__raft);
}

void jr__raft_free_send_buffers(jr__raft *r)
{
    jr__free(r->alloc, r->scratch);
    r->scratch = NULL;
    r->scratch_cap = 0;
    jr__free(r->alloc, r->chunk);
    r->chunk = NULL;
}

void jr__raft_free(jr__raft *r)
{
    if (!r) return;
    jr__prog_free(r);
    jr__vouch_free(r); /* returns its references to interned configurations */
    jr__memlog_free(&r->log);
    while (r->ncidx) jr__confs_put(r->confs, r->cidx[--r->ncidx].c);
    jr__free(r->alloc, r->cidx);
    jr__confs_put(r->confs, r->conf);
    jr__confs_put(r->confs, r->snap_conf);
    if (r->own_confs) jr__confs_free(r->confs);
    jr__free(r->alloc, r->scratch);
    jr__free(r->alloc, r->chunk);
    jr__free(r->alloc, r);
}

/* Recovery ------------------------------------------------------------------------------------*/

int jr__raft_load_hardstate(jr__raft *r, uint64_t term, jr__id vote, uint64_t commit)
{
    if (r->started) return JR_EMISUSE;
    r->term = term;
    r->vote = vote;
    r->commit = commit > r->commit ? commit : r->commit;
    r->hs_durable = (jr__hardstate){term, vote, r->commit};
    return 0;
}

int jr__raft_load_snapshot(jr__raft *r, uint64_t index, uint64_t term, const jr__conf *conf)
{
    if (r->started) return JR_EMISUSE;
    if (!conf || index == 0 || term == 0 || index < r->snap_index) return JR_EINVAL;
    const jr__conf *ic = jr__confs_get(r->confs, conf);
    if (!ic) return JR_ENOMEM;
    jr__snap_restore(r, index, term, ic);
    jr__confs_put(r->confs, ic);
    return 0;
}

int jr__raft_load_entry(jr__raft *r, const jr__entry *e)
{
    if (r->started) return JR_EMISUSE;
    if (!e || e->index != r->log.last + 1 || e->term == 0 || e->type > JR__ENTRY_CONFIG ||
        e->term < jr__memlog_term(&r->log, r->log.last) || (e->len && !e->data))
        return JR_EINVAL;
    int rc = jr__repl_append_local(r, e->term, e->type, e->data, e->len);
    if (rc) return rc;
    r->durable = r->log.last; /* it was read back from durable storage */
    return 0;
}

int jr__raft_bootstrap(jr__raft *r, const jr__conf *conf)
{
    if (r->started) return JR_EMISUSE;
    if (!conf || r->log.last != 0 || r->snap_index != 0 || jr__conf_voters(conf) == 0)
        return JR_EINVAL;
    uint8_t buf[16 + JR__MAX_MEMBERS * 9];
    size_t n = jr__conf_encode(conf, buf);
    /* identical on every initial voter: index 1, term 1 */
    int rc = jr__repl_append_local(r, 1, JR__ENTRY_CONFIG, buf, (uint32_t)n);
    if (rc) return rc;
    if (r->term < 1) r->term = 1;
    return 0;
}

int jr__raft_start(jr__raft *r, uint64_t now)
{
    if (r->started) return JR_EMISUSE;
    r->started = 1;
    r->now = now;
    r->leaderless_at = now;
    /* an empty joiner starts at its floor term: no leader from before it can use it (raft.h);
     * the node writes the term with the next hard state */
    if (r->log.last == 0 && r->term < r->cfg.join_term) {
        r->term = r->cfg.join_term;
        r->vote = 0;
    }
    /* A log entry of a term newer than the hard state's (the hard state record was lost, or
     * is older than the log's): this replica was at that term, and may have voted in it, so
     * it takes the term without a vote for anyone else. */
    uint64_t lt = jr__memlog_term(&r->log, r->log.last);
    if (r->term < lt) {
        r->term = lt;
        r->vote = r->cfg.self;
    }
    if (r->commit > r->log.last) r->commit = r->log.last;
    if (r->commit < r->snap_index) r->commit = r->snap_index;
    if (r->applied < r->snap_index) r->applied = r->snap_index;
    jr__elect_become_follower(r, now, r->term, 0);
    jr__vouch_start(r); /* an unvouched replica asks its peers (vouch.c) */
    /* A group whose only voter is this server needs nobody's vote: lead at once. */
    if (jr__raft_is_voter(r) && jr__conf_voters(r->conf) == 1) jr__elect_campaign(r, now, 1, 0);
    jr__raft_notify(r);
    return 0;
}

/* Output helpers ------------------------------------------------------------------------------*/

void jr__raft_notify(jr__raft *r)
{
    if (r->notified || !r->started) return;
    r->notified = 1;
    r->io.notify(r->io.ctx, r);
}

void jr__raft_send(jr__raft *r, jr__msg *m)
{
    m->group = r->cfg.group;
    m->from = r->cfg.self;
    if (!m->term) m->term = r->term;
    r->io.send(r->io.ctx, r, m);
}

/* Inputs --------------------------------------------------------------------------------------*/

int jr__raft_wire_ok(const jr__raft *r, uint64_t term, uint64_t index)
{
    return term <= JR__TERM_MAX && (term <= r->term || term - r->term <= JR__TERM_LEAP) &&
           index <= JR__INDEX_MAX;
}

/* The indexes and terms a message carries besides its own term, within the wire bounds: no term
 * above the message's (a candidate's last entry, a follower's conflicting entry and a snapshot
 * are never newer than their sender's term), no index above JR__INDEX_MAX. */
static int fields_ok(const jr__msg *m)
{
    const uint64_t X = JR__INDEX_MAX;
    switch (m->type) {
    case JR__MSG_VOTE:
        return m->u.vote.last_index <= X && m->u.vote.last_term <= m->term;
    case JR__MSG_APPEND:
        return m->u.append.prev_index <= X - JR__MAX_APPEND_ENTRIES && m->u.append.commit <= X;
    case JR__MSG_APPEND_RESP:
        return m->u.append_resp.index <= X && m->u.append_resp.hint_index <= X &&
               m->u.append_resp.hint_term <= m->term;
    case JR__MSG_HEARTBEAT:
        return m->u.heartbeat.commit <= X;
    case JR__MSG_HEARTBEAT_RESP:
        return m->u.heartbeat_resp.match_hint <= X;
    case JR__MSG_SNAP:
        return m->u.snap.index <= X;
    case JR__MSG_SNAP_RESP:
        return m->u.snap_resp.index <= X;
    case JR__MSG_VOUCH_RESP:
        return m->u.vouch_resp.last_index <= X && m->u.vouch_resp.commit <= X &&
               m->u.vouch_resp.conf_index <= X &&
               (m->u.vouch_resp.conf || !m->u.vouch_resp.conf_len) &&
               m->u.vouch_resp.cconf_index <= m->u.vouch_resp.commit &&
               (m->u.vouch_resp.cconf || !m->u.vouch_resp.cconf_len);
    default:
        return 1;
    }
}

/* Structural checks: a message that fails them is dropped before it can change anything. */
static int check(const jr__raft *r, const jr__msg *m)
{
    if (!m || m->group != r->cfg.group || m->to != r->cfg.self || m->from == 0 ||
        m->from == r->cfg.self || m->type < 1 || m->type > JR__MSG_TYPE_MAX || m->term == 0 ||
        !jr__raft_wire_ok(r, m->term, 0) || !fields_ok(m))
        return JR_EINVAL;
    if (m->type == JR__MSG_APPEND) return jr__repl_check_append(r, m);
    if (m->type == JR__MSG_SNAP) return jr__snap_check(m);
    return 0;
}

static int from_leader(const jr__msg *m)
{
    return m->type == JR__MSG_APPEND || m->type == JR__MSG_HEARTBEAT || m->type == JR__MSG_SNAP;
}

/* Term rules (§3.3: "If a server receives a request with a stale term number, it rejects the
 * request"; "if one server's current term is smaller than the other's, then it updates its
 * current term to the larger value"), with the exceptions of pre-vote (§9.6: a pre-vote changes
 * no term) and of the leader lease (§4.2.3: "if a server receives a RequestVote request within
 * the minimum election timeout of hearing from a current leader, it does not update its term or
 * grant its vote"). Returns 1 if the message needs nothing more. */
static int step_term(jr__raft *r, uint64_t now, const jr__msg *m)
{
    int prevote = (m->flags & JR__MF_PREVOTE) != 0;
    if (m->term > r->term) {
        if (m->type == JR__MSG_VOTE) {
            int lease =
                !(m->flags & JR__MF_TRANSFER) && m->from != r->leader && jr__elect_in_lease(r, now);
            if (!prevote && !lease) jr__elect_become_follower(r, now, m->term, 0);
            return 0; /* the vote code answers (and refuses if our term did not move) */
        }
        if (m->type == JR__MSG_VOTE_RESP && prevote && m->u.vote_resp.granted) return 0;
        jr__elect_become_follower(r, now, m->term, from_leader(m) ? m->from : 0);
        return 0;
    }
    if (m->term < r->term) {
        /* Answer a deposed leader or a lagging pre-candidate so it learns the newer term
         * (otherwise a node with a higher term but a shorter log could stall the group). */
        if (m->type == JR__MSG_APPEND || m->type == JR__MSG_HEARTBEAT ||
            (m->type == JR__MSG_VOTE && prevote))
            jr__repl_reply_stale(r, m);
        return 1;
    }
    return 0;
}

static int step_unchecked(jr__raft *r, uint64_t now, const jr__msg *m)
{
    if (!r->started) return JR_EMISUSE;
    int rc = check(r, m);
    if (rc) return rc;
    if (now > r->now) r->now = now;
    now = r->now;
    if (jr__vouch_drops(r, m)) { /* an unvouched replica without its term floor */
        jr__vouch_dropped(r, m); /* tells the leader it restarted (vouch.c) */
        return 0;
    }
    /* VOUCH traffic follows no term rules (the terms are what it asks about) and wakes only a
     * leader, which must bring the asker up to date (vouch.c) */
    if (m->type == JR__MSG_VOUCH_RESP) {
        jr__vouch_on_resp(r, now, m);
        jr__raft_notify(r);
        return 0;
    }
    if (m->type == JR__MSG_VOUCH && r->role != ROLE_LEADER) {
        jr__vouch_on_request(r, now, m);
        jr__raft_notify(r);
        return 0;
    }
    if (r->quiet) {
        if (r->role == ROLE_LEADER && m->type == JR__MSG_HEARTBEAT_RESP && m->term == r->term) {
            /* A late answer to a heartbeat from before the leader went quiet: taken as an answer
             * to the node's listing (contact; it wakes the group only if the member lacks
             * entries). As any other message it would wake the group, which heartbeats, goes
             * quiet again and is woken by the next late answer: on a node too busy to answer
             * within an interval, idle groups would never stay quiet. */
            jr__raft_hb_resp(r, now, m->from, m->term, m->u.heartbeat_resp.match_hint);
            r->echoes++;
            return 0;
        }
        jr__quiet_leave(r, now); /* any other message wakes a quiet group */
        jr__raft_notify(r);
    }
    if (m->type == JR__MSG_VOUCH) {
        jr__vouch_on_request(r, now, m);
        jr__raft_notify(r);
        return 0;
    }
    if (step_term(r, now, m)) return 0;
    switch (m->type) {
    case JR__MSG_VOTE:
        jr__elect_on_vote(r, now, m);
        break;
    case JR__MSG_VOTE_RESP:
        jr__elect_on_vote_resp(r, now, m);
        break;
    case JR__MSG_APPEND:
        rc = jr__repl_on_append(r, now, m);
        break;
    case JR__MSG_APPEND_RESP:
        jr__repl_on_append_resp(r, now, m);
        break;
    case JR__MSG_HEARTBEAT:
        jr__repl_on_heartbeat(r, now, m);
        break;
    case JR__MSG_HEARTBEAT_RESP:
        jr__repl_on_heartbeat_resp(r, now, m);
        break;
    case JR__MSG_SNAP:
        jr__snap_on_snap(r, now, m);
        break;
    case JR__MSG_SNAP_RESP:
        jr__snap_on_resp(r, now, m);
        break;
    case JR__MSG_TIMEOUT_NOW:
        jr__elect_on_timeout_now(r, now, m);
        break;
    }
    /* an unvouched follower whose log now reaches its leader's word is whole (vouch.c) */
    if (m->type == JR__MSG_APPEND || m->type == JR__MSG_SNAP) jr__vouch_check(r, now);
    jr__raft_notify(r);
    return rc;
}

int jr__raft_step(jr__raft *r, uint64_t now, const jr__msg *m)
{
    int rc = step_unchecked(r, now, m);
    jr__raft_check(r);
    return rc;
}

static void tick_unchecked(jr__raft *r, uint64_t now)
{
    if (!r->started) return;
    if (now > r->now) r->now = now;
    now = r->now;
    uint64_t deadline = jr__raft_deadline(r), term = r->term;
    int role = r->role;
    if (r->role == ROLE_LEADER) {
        jr__xfer_tick(r, now);
        /* a quiet leader's contact is node-level: its check-quorum runs on peer_lost */
        if (!r->quiet && now >= r->cq_deadline) jr__elect_check_quorum(r, now);
        if (r->role == ROLE_LEADER && jr__repl_heartbeat_due(r, now)) jr__repl_heartbeat(r, now);
        if (r->role == ROLE_LEADER && !r->quiet && now >= r->commit_hb_at) {
            /* the commit waited its cfg.commit_delay: the next flush sends it */
            r->send_pending = 1;
            jr__raft_notify(r);
        }
    } else {
        jr__elect_tick(r, now);
    }
    /* a tick that found nothing due (an early or shared timer) costs the node no flush */
    if (jr__raft_deadline(r) != deadline || r->role != role || r->term != term) jr__raft_notify(r);
}

void jr__raft_tick(jr__raft *r, uint64_t now)
{
    tick_unchecked(r, now);
    jr__raft_check(r);
}

uint64_t jr__raft_deadline(const jr__raft *r)
{
    if (!r->started) return UINT64_MAX;
    if (r->role == ROLE_LEADER) {
        /* a quiet leader's check-quorum runs on the node's reports of lost members (raft.h) */
        if (r->quiet) return UINT64_MAX;
        uint64_t d = r->hb_deadline < r->cq_deadline ? r->hb_deadline : r->cq_deadline;
        if (r->transfer_to && r->transfer_deadline < d) d = r->transfer_deadline;
        if (r->commit_hb_at < d) d = r->commit_hb_at;
        return d;
    }
    /* the election timer of a replica that may campaign (a diverged one without vouch state
     * tries to get it again there), and an unvouched replica's own timer, quiet or not, that
     * asks its peers again (vouch.c) */
    uint64_t d = (jr__elect_can_campaign(r) || (r->diverged && !r->vouch)) && !r->quiet
                     ? r->election_deadline
                     : UINT64_MAX;
    uint64_t a = jr__vouch_deadline(r);
    return a < d ? a : d;
}

static int propose_unchecked(jr__raft *r, uint64_t now, const void *data, size_t len,
                             uint64_t *index)
{
    if (!r->started || r->role != ROLE_LEADER) return JR_ENOTLEADER;
    if (r->transfer_to) return JR_ETRANSFER;
    if (len > r->cfg.max_entry_bytes) return JR_EMSGSIZE;
    if (len && !data) return JR_EINVAL;
    if (now > r->now) r->now = now;
    int rc = jr__repl_append_local(r, r->term, JR__ENTRY_NORMAL, data, (uint32_t)len);
    if (rc) return rc;
    jr__quiet_leave(r, r->now);
    r->idle_ticks = 0;
    if (index) *index = r->log.last;
    r->send_pending = 1;
    jr__raft_notify(r);
    return 0;
}

void jr__raft_commit_now(jr__raft *r)
{
    if (!r->started || r->role != ROLE_LEADER || r->quiet) return;
    r->commit_hb_at = r->now;
    r->commit_tell = r->commit;
    jr__raft_check(r);
}

int jr__raft_propose(jr__raft *r, uint64_t now, const void *data, size_t len, uint64_t *index)
{
    int rc = propose_unchecked(r, now, data, len, index);
    jr__raft_check(r);
    return rc;
}

void jr__raft_stepdown(jr__raft *r, uint64_t now)
{
    if (!r->started || r->role != ROLE_LEADER) return;
    if (now > r->now) r->now = now;
    jr__quiet_leave(r, r->now);
    /* Hand over to a caught-up voter if there is one, so the group is not leaderless for an
     * election timeout (§3.10); then step down regardless. */
    jr__prog *best = NULL;
    for (uint32_t i = 0; i < r->conf->n; i++) {
        jr__prog *p = &r->prog[i];
        if (p->id != r->cfg.self && p->voter && !p->unvouched && p->match == r->log.last) best = p;
    }
    if (best) jr__xfer_timeout_now(r, best);
    jr__elect_become_follower(r, r->now, r->term, 0);
    jr__raft_notify(r);
}

/* The ready cycle -----------------------------------------------------------------------------*/

static int hs_changed(const jr__raft *r)
{
    if (r->term != r->hs_durable.term || r->vote != r->hs_durable.vote) return 2;
    return r->commit != r->hs_durable.commit;
}

int jr__raft_unpersisted(const jr__raft *r, uint64_t *from, uint64_t *to, jr__hardstate *hs)
{
    *from = r->durable + 1;
    *to = r->log.last;
    hs->term = r->term;
    hs->vote = r->vote;
    hs->commit = r->commit;
    return hs_changed(r);
}

void jr__raft_flush(jr__raft *r, uint64_t now)
{
    if (!r->started) return;
    if (now > r->now) r->now = now;
    if (r->role == ROLE_LEADER && r->send_pending) jr__repl_flush(r, r->now);
}

void jr__raft_persisted(jr__raft *r, uint64_t now, uint64_t index, int hs_written)
{
    jr__hardstate hs = {r->term, r->vote, r->commit};
    jr__raft_persisted_as(r, now, index, hs_written ? &hs : NULL);
}

void jr__raft_persisted_as(jr__raft *r, uint64_t now, uint64_t index, const jr__hardstate *hs)
{
    if (now > r->now) r->now = now;
    if (index > r->log.last) index = r->log.last;
    uint64_t told = jr__repl_told(r, UINT64_MAX);
    if (index > r->durable) r->durable = index;
    if (hs) r->hs_durable = *hs;
    if (r->role == ROLE_LEADER) {
        jr__repl_maybe_commit(r, r->now);
        /* a commit held back until this write may now be told (jr__repl_told) */
        if (jr__repl_told(r, UINT64_MAX) > told) r->send_pending = 1;
    }
    jr__raft_flush(r, r->now);
}

int jr__raft_entry(const jr__raft *r, uint64_t index, jr__entry *out)
{
    if (index < r->log.first) return JR_ECOMPACTED;
    if (index > r->log.last) return JR_ENOTFOUND;
    const jr__memlog_ent *e = jr__memlog_at(&r->log, index);
    out->term = e->term;
    out->index = index;
    out->type = e->type;
    out->len = e->len;
    out->data = jr__memlog_data(&r->log, e);
    return 0;
}

void jr__raft_applied(jr__raft *r, uint64_t index)
{
    if (index > r->commit) index = r->commit;
    if (index > r->applied) r->applied = index;
}

void jr__raft_ready_done(jr__raft *r)
{
    r->notified = 0;
    /* Work that arrived during the node's flush gets a new notification. A commit-only change
     * of the hard state does not: it rides along with the next write. */
    if (r->durable < r->log.last || hs_changed(r) == 2) jr__raft_notify(r);
}

/* Queries -------------------------------------------------------------------------------------*/

int jr__raft_role(const jr__raft *r)
{
    switch (r->role) {
    case ROLE_LEADER:
        return JR_LEADER;
    case ROLE_CANDIDATE:
    case ROLE_PRECANDIDATE:
        return JR_CANDIDATE;
    default:
        return jr__raft_is_voter(r) ? JR_FOLLOWER : JR_OBSERVER;
    }
}

uint64_t jr__raft_echoes(const jr__raft *r)
{
    return r->echoes;
}

uint64_t jr__raft_term(const jr__raft *r)
{
    return r->term;
}
jr__id jr__raft_leader(const jr__raft *r)
{
    return r->leader;
}
uint64_t jr__raft_leaderless_ns(const jr__raft *r, uint64_t now, int *since_start)
{
    *since_start = !r->lost_leader;
    if (r->leader) return 0;
    return now > r->leaderless_at ? now - r->leaderless_at : 0;
}
jr__id jr__raft_self(const jr__raft *r)
{
    return r->cfg.self;
}
uint64_t jr__raft_group(const jr__raft *r)
{
    return r->cfg.group;
}
uint64_t jr__raft_commit_index(const jr__raft *r)
{
    return r->commit;
}
uint64_t jr__raft_durable_commit(const jr__raft *r)
{
    return r->hs_durable.commit;
}
void jr__raft_tell_durable_commit(jr__raft *r)
{
    r->tell_durable_commit = 1;
}
uint64_t jr__raft_applied_index(const jr__raft *r)
{
    return r->applied;
}
uint64_t jr__raft_last_index(const jr__raft *r)
{
    return r->log.last;
}
uint64_t jr__raft_last_term(const jr__raft *r)
{
    return jr__memlog_term(&r->log, r->log.last);
}
uint64_t jr__raft_first_index(const jr__raft *r)
{
    return r->log.first;
}
uint64_t jr__raft_log_bytes(const jr__raft *r, uint64_t lo, uint64_t hi)
{
    return jr__memlog_bytes(&r->log, lo, hi);
}
uint64_t jr__raft_snapshot_index(const jr__raft *r)
{
    return r->snap_index;
}
uint64_t jr__raft_snapshot_term(const jr__raft *r)
{
    return r->snap_term;
}
const jr__conf *jr__raft_conf(const jr__raft *r)
{
    return r->conf;
}
uint64_t jr__raft_conf_index(const jr__raft *r)
{
    return r->conf_index;
}
void jr__raft_snapshot_conf(const jr__raft *r, jr__conf *out)
{
    out->n = r->snap_conf->n;
    memcpy(out->m, r->snap_conf->m, out->n * sizeof out->m[0]);
}
int jr__raft_ready(const jr__raft *r)
{
    return r->role == ROLE_LEADER && r->commit >= r->term_start;
}
void jr__raft_cap_log(jr__raft *r, uint64_t bytes)
{
    r->log_cap = bytes;
}
int jr__raft_log_full(const jr__raft *r)
{
    return r->log_cap && r->log.tail - r->log.head >= r->log_cap && !jr__raft_is_voter(r);
}
uint64_t jr__raft_capped_peak(const jr__raft *r)
{
    return r->cap_peak;
}
uint64_t jr__raft_capped_drops(const jr__raft *r)
{
    return r->cap_drops;
}
uint64_t jr__raft_lost_commits(const jr__raft *r)
{
    return r->lost_commits;
}
int jr__raft_transferring(const jr__raft *r)
{
    return r->role == ROLE_LEADER && r->transfer_to != 0;
}

int jr__raft_progress(const jr__raft *r, uint32_t i, jr__progress *out)
{
    if (r->role != ROLE_LEADER) return JR_ENOTLEADER;
    if (i >= r->conf->n) return JR_ENOTFOUND;
    const jr__prog *p = &r->prog[i];
    out->id = p->id;
    out->voter = p->voter;
    if (p->id == r->cfg.self) {
        out->state = JR__REPLICATE;
        out->match = r->durable;
        out->next = r->log.last + 1;
        out->snap_from = 0;
        out->later_snaps = 0;
        out->last_contact = out->heard = r->now;
        out->unvouched = out->unconfirmed = out->damaged = 0; /* a leader is whole */
        out->by_node = 0;
        out->fsm = 0; /* its own state machine is its node's to tell (jr_group_peer) */
        out->fsm_at = 0;
        return 0;
    }
    out->unvouched = p->unvouched && p->restarted;
    out->unconfirmed = p->unvouched && !p->restarted;
    out->damaged = p->damaged;
    out->state = p->state;
    out->match = p->match;
    out->next = p->next;
    out->snap_from = p->state == JR__SNAPSHOT ? p->snap_from : 0;
    out->later_snaps = p->later_snaps;
    out->last_contact = p->last_contact;
    out->heard = p->heard;
    out->by_node = p->by_node;
    out->fsm = p->fsm;
    out->fsm_at = p->fsm_at;
    return 0;
}

void jr__raft_fsm_report(jr__raft *r, uint64_t now, jr__id from, uint64_t term, uint8_t state)
{
    if (!r->started || r->role != ROLE_LEADER || term != r->term || from == r->cfg.self ||
        state > JR__FSM_REBUILDING)
        return;
    if (now > r->now) r->now = now;
    jr__prog *p = jr__prog_find(r, from);
    if (!p) return;
    p->fsm = state;
    p->fsm_at = r->now;
}
