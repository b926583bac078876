/*
 * vouch — protocol-aware recovery: what a replica restarted from storage that may have lost
 * records may do, and how it learns from its peers that it is whole again (Alagappan et al.,
 * "Protocol-Aware Recovery for Consensus-Based Storage", FAST 2018: the information that tells
 * a torn write from a lost tail exists only at the peers).
 *
 * Raft's safety rests on every server keeping what it acknowledged: its vote (§3.4: "each
 * server will vote for at most one candidate in a given term") and the entries it acknowledged,
 * which commits count on (§3.6). Locally a replica cannot tell a torn write (unsynced data,
 * harmless) from a cut tail of synced records or all its files rolled back to an older copy, so
 * after any restart from disk it is unvouched (jr__raft_load_unvouched): its term, vote and log
 * may be older than what its peers saw from it. Until its peers vouch for it:
 *  - it grants no vote or pre-vote and does not campaign (a vote from a replica that forgot
 *    entries it acknowledged could elect a leader without them; one that forgot its vote could
 *    elect two leaders in a term);
 *  - it asks every other member for its last entry and term (VOUCH; answered by any replica,
 *    after the answerer's state is durable) at start and again at each election timeout while
 *    unvouched, and every leader of a new term it hears from, whether it drops its messages
 *    (below) or not: that leader learns it restarted;
 *  - it drops every leader message (APPEND, HEARTBEAT, SNAP, TIMEOUT_NOW, a node-level quiet
 *    listing) until answers from w = n - q + 1 other voters arrived (n voters, quorum q): any
 *    term it had before, it had learned from a leader elected by a quorum or from a candidate it
 *    voted for (which, if it won, a quorum of voters followed), and w answers meet every such
 *    quorum in a server other than itself. It then raises its term to the highest term
 *    answered (its term floor) without a vote in it, so a leader deposed before the restart can
 *    no longer use its acknowledgements, and it cannot grant a second vote in a term it voted
 *    in. After that its acknowledgements are truthful about its disk (the append consistency
 *    check) and count like anyone's.
 * It becomes whole (vouch freed, damaged cleared) by:
 *  (a) a leader's word: the leader of its term answered VOUCH with its last entry (li, lt), and
 *      its log holds (li, lt) (by log matching it then holds the leader's log up to li). Not the
 *      commit index: an entry it acknowledged before the restart that the leader had not yet
 *      counted may still commit by that late acknowledgement, and the leader's log at the time of
 *      the answer (sent after the restart) holds every entry it ever acknowledged to it;
 *  (b) every other member's word: once every other member of its configuration answered
 *      (observers too: the lost tail may have held the configuration entries that made them
 *      voters, and a commit counted by such a configuration is held by them, not by the voters
 *      the replica still knows; with a single voter, by nobody else it knows), the most
 *      up-to-date of those last entries and its own is its log floor (§3.6.1 order): it
 *      grants (pre-)votes only to candidates at least as up to date as the floor and campaigns
 *      only if its own log reaches it. An entry committed with its lost acknowledgement is held
 *      by every other voter of that commit's quorum, so a candidate at or above the floor holds
 *      it (Leader Completeness, §3.6.3). Winning the election makes it whole. This is what lets
 *      a whole cluster restarted after a power loss (everyone unvouched) elect its most
 *      up-to-date server; (a) lets one restarted replica rejoin while some voter is down.
 * Cost: a replica that restarts while fewer than w other voters are reachable takes no appends
 * (three voters: it needs both others); one that restarts while its leader is down waits for
 * all the other voters' answers before it votes. Unavailability while a fault is pending,
 * never a lost acknowledged entry. A VOUCH answer the previous life's vote sent that is still
 * in flight when the floor is taken is the one case these rules do not cover.
 *
 * The leader's side: a VOUCH from a member means it restarted; an answer below what it had
 * acknowledged (a rejection showing a shorter or conflicting log at or below its match) means
 * it lost storage. Either way its progress is marked unvouched (damaged if it lost what we
 * counted), its match drops to what log matching proves it holds, it is probed from there, and
 * it is not a transfer target and not current until it acknowledges our log up to where it was
 * then. A term conflict above its match is ordinary backtracking and never lowers the match.
 */
#include "impl.h"
#include "util/alloc.h"

struct jr__vouch {
    uint64_t answered;    /* bit i: voter conf->m[i] answered */
    uint64_t conf_index;  /* the configuration the bits refer to */
    const jr__conf *conf; /* (compared, not referenced) */
    uint64_t (*last)[2];  /* [i]: the last entry (term, index) conf->m[i] answered latest */
    uint32_t cap;         /* entries of last[] */
    uint64_t t_max;       /* highest term answered */
    jr__id lead;          /* a leader that answered, in term lead_term, ... */
    uint64_t lead_term, lead_index, lead_lterm; /* ... with this last entry */
    jr__id asked;                               /* the leader last asked, in asked_term */
    uint64_t asked_term;
    uint8_t floored;  /* w answers: the term floor is taken */
    uint8_t confless; /* started without a configuration; none has arrived yet */
};

int jr__raft_load_unvouched(jr__raft *r, int damaged)
{
    if (r->started) return JR_EMISUSE;
    if (!r->vouch) {
        r->vouch = jr__calloc(r->alloc, 1, sizeof *r->vouch);
        if (!r->vouch) return JR_ENOMEM;
    }
    if (damaged) r->damaged = 1;
    return 0;
}

int jr__raft_unvouched(const jr__raft *r)
{
    return r->vouch != NULL;
}

int jr__raft_damaged(const jr__raft *r)
{
    return r->damaged;
}

int jr__raft_diverged(const jr__raft *r)
{
    return r->diverged;
}

void jr__vouch_free(jr__raft *r)
{
    if (!r->vouch) return;
    jr__free(r->alloc, r->vouch->last);
    jr__free(r->alloc, r->vouch);
    r->vouch = NULL;
}

void jr__vouch_done(jr__raft *r)
{
    if (!r->vouch) return;
    jr__vouch_free(r);
    /* vouched after a divergence: its log holds the leader's (a), or it won an election at or
     * above every voter's floor (b); the append that conflicted was no leader's of its log */
    r->damaged = r->diverged = 0;
    jr__raft_notify(r);
}

void jr__vouch_diverged(jr__raft *r)
{
    r->diverged = r->damaged = 1;
    if (r->vouch) return; /* unvouched already: it asks again at its election timeout */
    r->vouch = jr__calloc(r->alloc, 1, sizeof *r->vouch);
    if (!r->vouch) return; /* out of memory: stopped until its next election timeout */
    jr__vouch_ask(r);
}

/* Voters other than us in the latest configuration, and the answers needed for the term floor;
 * members other than us (observers included), all of whom must answer for the log floor. */
static uint32_t others(const jr__raft *r)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < r->conf->n; i++)
        if (r->conf->m[i].voter && r->conf->m[i].id != r->cfg.self) k++;
    return k;
}

static uint32_t members(const jr__raft *r)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < r->conf->n; i++)
        if (r->conf->m[i].id != r->cfg.self) k++;
    return k;
}

static uint32_t needed(const jr__raft *r)
{
    uint32_t n = jr__conf_voters(r->conf), q = n / 2 + 1, k = others(r);
    uint32_t w = n - q + 1;
    return w < k ? w : k;
}

static uint32_t popcount(uint64_t x)
{
    uint32_t n = 0;
    for (; x; x &= x - 1) n++;
    return n;
}

/* The answers follow the latest configuration: a new one starts them again (the term floor
 * learned stays; it only ever makes the replica more careful). 0 or JR_ENOMEM (no answers
 * are kept then: it stays unvouched and asks again later). */
static int sync_conf(jr__raft *r)
{
    struct jr__vouch *v = r->vouch;
    if (v->conf == r->conf && v->conf_index == r->conf_index && v->cap >= r->conf->n) return 0;
    v->conf = r->conf;
    v->conf_index = r->conf_index;
    v->answered = 0;
    if (v->cap < r->conf->n) {
        void *p = jr__realloc(r->alloc, v->last, r->conf->n * sizeof *v->last);
        if (!p) {
            v->conf = NULL;
            return JR_ENOMEM;
        }
        v->last = p;
        v->cap = r->conf->n;
    }
    return 0;
}

/* The log floor: the most up-to-date of the latest answers (§3.6.1 order). Only the latest
 * answer of each voter counts: a voter's log may lose an uncommitted suffix (replaced by a
 * newer leader's), and an entry committed with our lost acknowledgement is never among what it
 * loses. */
static void log_floor(const jr__raft *r, uint64_t *ft, uint64_t *fi)
{
    const struct jr__vouch *v = r->vouch;
    *ft = *fi = 0;
    for (uint32_t i = 0; i < r->conf->n && i < v->cap; i++) {
        if (!(v->answered >> i & 1)) continue;
        uint64_t lt = v->last[i][0], li = v->last[i][1];
        if (lt > *ft || (lt == *ft && li > *fi)) {
            *ft = lt;
            *fi = li;
        }
    }
}

static int all_answered(const jr__raft *r)
{
    const struct jr__vouch *v = r->vouch;
    return v->floored && v->conf == r->conf && v->conf_index == r->conf_index &&
           popcount(v->answered) >= members(r);
}

/* Answers from voters of the latest configuration. */
static uint32_t voters_answered(const jr__raft *r)
{
    const struct jr__vouch *v = r->vouch;
    uint32_t k = 0;
    for (uint32_t i = 0; i < r->conf->n && i < 64; i++)
        if ((v->answered >> i & 1) && r->conf->m[i].voter) k++;
    return k;
}

void jr__vouch_ask(jr__raft *r)
{
    struct jr__vouch *v = r->vouch;
    if (!v) return;
    (void)sync_conf(r); /* out of memory: it asks everyone */
    /* Before the floor, those that have not answered (the floor needs more answers). From the
     * floor on, everyone: the word that vouches for it (a) is the answer of the leader of its
     * term, which may have answered before it led, and a quiet leader sends nothing that would
     * make it ask (jr__vouch_heard_leader); the log floor (b) counts only the latest answers. */
    int all = v->floored;
    for (uint32_t i = 0; i < r->conf->n; i++) {
        const jr__member *m = &r->conf->m[i];
        if (m->id == r->cfg.self || (!all && (v->answered >> i & 1))) continue;
        jr__msg q = {.type = JR__MSG_VOUCH, .to = m->id, .term = r->term ? r->term : 1};
        q.u.vouch.last_index = r->log.last;
        q.u.vouch.last_term = jr__memlog_term(&r->log, r->log.last);
        jr__raft_send(r, &q);
    }
}

/* (a): the leader of our term answered and our log holds its last entry of then. */
static int leader_vouches(const jr__raft *r)
{
    const struct jr__vouch *v = r->vouch;
    if (!v->floored || !v->lead || v->lead_term < v->t_max || v->lead_term != r->term) return 0;
    if (v->lead_index <= r->snap_index) return 1; /* committed: in our snapshot */
    return v->lead_index <= r->log.last && jr__memlog_term(&r->log, v->lead_index) == v->lead_lterm;
}

void jr__vouch_check(jr__raft *r, uint64_t now)
{
    (void)now;
    if (!r->vouch) return;
    if (r->vouch->confless && r->conf->n) {
        /* A leader's repair brought the configuration its recovery lost. It asks the members
         * at once, and drops the leader's messages from now until its term floor. The VOUCH
         * leaves after the acknowledgement of that repair (same step, same frame), so the
         * leader, which may take that acknowledgement for one of its whole log, marks it
         * unvouched again, and only an acknowledgement after the floor clears the mark. */
        r->vouch->confless = 0;
        jr__vouch_ask(r);
    }
    if (leader_vouches(r)) jr__vouch_done(r);
}

/* w answers: take the term floor (no vote in it: we may have granted one there before). */
static void take_floor(jr__raft *r, uint64_t now)
{
    struct jr__vouch *v = r->vouch;
    v->floored = 1;
    if (r->term < v->t_max) {
        jr__elect_become_follower(r, now, v->t_max, 0);
        r->vote = r->cfg.self;
    } else if (r->term == v->t_max && r->vote == 0) {
        r->vote = r->cfg.self;
    }
}

void jr__vouch_on_resp(jr__raft *r, uint64_t now, const jr__msg *m)
{
    struct jr__vouch *v = r->vouch;
    if (!v) return; /* whole: a late answer */
    if (sync_conf(r) != 0) return;
    int pos = -1;
    for (uint32_t i = 0; i < r->conf->n; i++)
        if (r->conf->m[i].id == m->from) pos = (int)i;
    if (pos < 0) return;
    v->answered |= 1ULL << pos;
    if (m->term > v->t_max) v->t_max = m->term;
    uint64_t li = m->u.vouch_resp.last_index, lt = m->u.vouch_resp.last_term;
    v->last[pos][0] = lt;
    v->last[pos][1] = li;
    if (m->u.vouch_resp.leader && m->term >= v->lead_term) {
        v->lead = m->from;
        v->lead_term = m->term;
        v->lead_index = li;
        v->lead_lterm = lt;
    }
    if (!v->floored && voters_answered(r) >= needed(r)) take_floor(r, now);
    jr__vouch_check(r, now);
}

int jr__vouch_drops(const jr__raft *r, const jr__msg *m)
{
    /* unvouched: until its term floor; diverged without vouch state (out of memory): all;
     * without a configuration it has no one to ask for a floor and takes a leader's repair */
    if (r->vouch ? r->vouch->floored || (r->conf->n == 0 && r->damaged) : !r->diverged) return 0;
    return m->type == JR__MSG_APPEND || m->type == JR__MSG_HEARTBEAT || m->type == JR__MSG_SNAP ||
           m->type == JR__MSG_TIMEOUT_NOW || m->type == JR__MSG_VOTE;
}

/* Asks `from`, a leader of `term`, unless it was asked in that term already. 1 if it asked. */
static int ask_leader(jr__raft *r, jr__id from, uint64_t term)
{
    struct jr__vouch *v = r->vouch;
    if (!v || (v->asked == from && v->asked_term == term)) return 0;
    v->asked = from;
    v->asked_term = term;
    jr__msg q = {.type = JR__MSG_VOUCH, .to = from, .term = r->term ? r->term : 1};
    q.u.vouch.last_index = r->log.last;
    q.u.vouch.last_term = jr__memlog_term(&r->log, r->log.last);
    jr__raft_send(r, &q);
    return 1;
}

void jr__vouch_heard_leader(jr__raft *r, jr__id from)
{
    (void)ask_leader(r, from, r->term);
}

void jr__vouch_dropped(jr__raft *r, const jr__msg *m)
{
    /* A leader elected after our VOUCHes went out (or one that answered while it was not yet
     * leading, which we do not ask again before the floor) never heard that we restarted: it
     * would count us current by what we acknowledged before, and its messages, dropped here,
     * tell it nothing. A VOUCH tells it, and its answer is the leader's word (a) once we have
     * our floor. A VOTE is no leader's. */
    if (m->type == JR__MSG_VOTE || !m->from || m->from == r->cfg.self) return;
    if (ask_leader(r, m->from, m->term)) jr__raft_notify(r);
}

int jr__vouch_may_grant(const jr__raft *r, uint64_t li, uint64_t lt)
{
    if (!r->vouch) return !r->diverged;
    if (!all_answered(r)) return 0;
    uint64_t ft, fi;
    log_floor(r, &ft, &fi);
    return lt > ft || (lt == ft && li >= fi);
}

int jr__vouch_may_campaign(const jr__raft *r)
{
    if (!r->vouch) return !r->diverged;
    return jr__vouch_may_grant(r, r->log.last, jr__memlog_term(&r->log, r->log.last));
}

/* Leader side ------------------------------------------------------------------------------*/

void jr__vouch_lost(jr__raft *r, jr__prog *p, uint64_t holds)
{
    if (holds < p->match) {
        p->match = holds;
        p->damaged = 1;
    }
    if (p->sent_commit > p->match) p->sent_commit = p->match;
    /* Only an acknowledgement clears this (jr__vouch_progress), even when what it holds
     * already reaches our whole log (a VOUCH from a replica whose log survived its restart, say
     * with a damaged store): a restarted replica drops our messages until its term floor and
     * reports itself unvouched (or damaged, by what its own recovery found) until it is vouched
     * for, so it is not current before it acknowledges an APPEND or snapshot of ours. */
    p->unvouched = 1;
    p->vouch_at = r->log.last;
}

void jr__vouch_on_request(jr__raft *r, uint64_t now, const jr__msg *m)
{
    /* a replica that never saw a term answers with term 1 (no message has term 0) */
    jr__msg a = {.type = JR__MSG_VOUCH_RESP, .to = m->from, .term = r->term ? r->term : 1};
    /* what it reports must survive our crash: sent after the sync of our pending state */
    a.flags = JR__MF_DURABLE;
    a.u.vouch_resp.leader = r->role == ROLE_LEADER;
    /* A replica that is no voter of its latest configuration (entry conf_index, committed or
     * not) answers with the later of its commit entry and the entry before that configuration.
     * Its acknowledgements beyond conf_index count in no commit quorum: a leader counting one
     * holds the same entry, hence (log matching) our entry at conf_index and a configuration at
     * least that new, and a newer one naming us a voter would be in our log too. So nothing
     * committed with the asker's lost acknowledgement lies only beyond that point, while the
     * uncommitted tail a removed leader kept would set a floor no remaining voter reaches (an
     * asker whose configuration predates the removal still counts it among the voters). */
    uint64_t li = r->log.last;
    if (!jr__raft_is_voter(r)) {
        uint64_t keep = r->conf_index ? r->conf_index - 1 : 0;
        if (r->commit > keep) keep = r->commit;
        if (keep < li) li = keep;
        if (li < r->log.base_index) li = r->log.base_index;
    }
    a.u.vouch_resp.last_index = li;
    a.u.vouch_resp.last_term = jr__memlog_term(&r->log, li);
    jr__raft_send(r, &a);
    if (r->role != ROLE_LEADER) return;
    jr__prog *p = jr__prog_find(r, m->from);
    if (!p || p->id == r->cfg.self) return;
    jr__prog_heard(p, now);
    /* it holds our log up to its last entry if we hold that entry (log matching), else nothing
     * it can be credited with */
    li = m->u.vouch.last_index;
    uint64_t lt = m->u.vouch.last_term, holds = 0;
    if (li <= r->log.last && li >= r->log.base_index && jr__memlog_term(&r->log, li) == lt)
        holds = li;
    jr__vouch_lost(r, p, holds);
    uint64_t from = li < r->log.last ? li : r->log.last;
    jr__prog_probe(p, from + 1);
    jr__repl_send_append(r, p, now);
}

void jr__vouch_start(jr__raft *r)
{
    if (!r->vouch) return;
    if (r->conf->n == 0 && r->damaged) {
        /* Recovery lost what held its configuration (an unreadable snapshot, damaged first
         * records): it knows no peer to ask, which is not being alone. It stays unvouched and
         * damaged (no vote, no campaign), takes what a leader sends (jr__vouch_drops) until a
         * configuration arrives, then asks its members at once (jr__vouch_check). (Without
         * damage, no configuration means none was ever durable here: a member that never
         * acknowledged an entry, as whole as a new one.) */
        r->vouch->confless = 1;
        return;
    }
    if (members(r) == 0) { /* no peer could know more than we do; damage found locally stays */
        uint8_t damaged = r->damaged;
        jr__vouch_done(r);
        r->damaged = damaged;
        return;
    }
    jr__vouch_ask(r);
}

int jr__vouch_tick(jr__raft *r, uint64_t now)
{
    if (r->role == ROLE_LEADER || r->quiet || now < r->election_deadline) return 0;
    if (!r->vouch) {
        if (!r->diverged) return 0;
        jr__vouch_diverged(r); /* diverged while out of memory: it tries again */
        jr__elect_reset_timer(r, now);
        return 1;
    }
    if (jr__elect_can_campaign(r)) return 0; /* it campaigns */
    jr__vouch_ask(r);
    jr__elect_reset_timer(r, now);
    return 1;
}
