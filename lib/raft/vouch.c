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
 *  - it asks every other member of the configurations it must hear from (below, "Which
 *    configurations") for its last entry and term (VOUCH; answered by any replica, after the
 *    answerer's state is durable) at start and again an election timeout after each time it
 *    asked them (before its term floor those that have not answered, from it on all of them),
 *    on a timer of its own (jr__vouch_tick): a leader's messages push its election timer back
 *    and a quiet follower runs none, and a VOUCH or answer lost in the network must not leave
 *    it unvouched for as long as a leader leads. It also asks every leader it hears from, as
 *    that leader's messages come, at most once an election timeout, whether it drops them
 *    (below) or not: a leader elected after its VOUCHes went out learns it restarted;
 *  - it drops every leader message (APPEND, HEARTBEAT, SNAP, TIMEOUT_NOW, a node-level quiet
 *    listing) until answers from w = n - q + 1 other voters (n voters, quorum q) of each of
 *    those configurations arrived: any term it had before, it had learned from a leader elected
 *    by a quorum or from a candidate it voted for (which, if it won, a quorum of voters
 *    followed), and w answers meet every such quorum in a server other than itself. It then
 *    raises its term to the highest term answered (its term floor) without a vote in it, so a
 *    leader deposed before the restart can no longer use its acknowledgements, and it cannot
 *    grant a second vote in a term it voted in. After that its acknowledgements are truthful
 *    about its disk (the append consistency check) and count like anyone's.
 * It becomes whole (vouch freed, damaged cleared) by:
 *  (a) a leader's word: the leader of its term answered VOUCH with its last entry (li, lt), and
 *      its log holds (li, lt) (by log matching it then holds the leader's log up to li). Not the
 *      commit index: an entry it acknowledged before the restart that the leader had not yet
 *      counted may still commit by that late acknowledgement, and the leader's log at the time of
 *      the answer (sent after the restart) holds every entry it ever acknowledged to it;
 *  (b) every other member's word: once every member of the configurations it must hear from
 *      (below) answered, the most up-to-date of those last entries and its own is its log floor
 *      (§3.6.1 order): it grants (pre-)votes only to candidates at least as up to date as the
 *      floor and campaigns only if its own log reaches it. An entry committed with its lost
 *      acknowledgement is held by another voter of that commit's quorum, so a candidate at or
 *      above the floor holds it (Leader Completeness, §3.6.3). Winning the election makes it
 *      whole. This is what lets a whole cluster restarted after a power loss (everyone
 *      unvouched) elect its most up-to-date server; (a) lets one restarted replica rejoin while
 *      some voter is down.
 * Which configurations. Its own may be old (files rolled back to a copy from before the group
 * changed) or a dead branch (an uncommitted change the copy kept), so every answer carries the
 * answerer's commit index and latest configuration (entry index and members). Of everything it
 * knows — its own commit index and the configuration in effect there, its latest configuration,
 * and each answer — it takes the highest known commit index h and the configuration K in effect
 * at h (from an answer whose latest configuration is at or below its commit, or its own; an
 * answer whose latest configuration lies above its commit also carries the configuration in
 * effect at its commit, below), and
 * must hear from every member of K and of every known latest configuration whose entry lies
 * above h (its own, and those answered, learned as answers arrive). Configurations at or below h
 * other than K are left out (superseded, or a dead branch: h's entry is committed), and with
 * them the members they alone name: servers removed since, which may no longer host the group.
 * The term floor needs w of the voters of each configuration of that set, the log floor every
 * member (observers too: a configuration entry it lost may have promoted them).
 * The configuration in effect at an answerer's commit index c is one of the group's committed
 * history whether its latest configuration is at or below c or not: c is committed, so by log
 * matching the answerer's log up to c is the prefix every later leader holds, and the entry
 * naming that configuration, at or below c, is in it (never a dead branch). That is all the
 * argument below asks of K, so an answer carries it when its latest configuration lies above c
 * (an uncommitted change: a leader appends one only once the one before it committed, so what it
 * carries is that one or an earlier committed one still in effect at c) and it counts as a
 * committed latest configuration would, for h and K and to start a chain (chain_known). A
 * replica without a configuration otherwise hears, from the only servers holding the group while
 * such a change is pending, no configuration any sender committed, takes no floor and grants no
 * vote, and the leader that appended the change may need that vote (jetraft-sim seed 4230). An
 * answer without it (a build that does not send it) is taken as before. A faulty answerer's
 * files are older, not false: its commit index was committed when it wrote it, and the
 * configuration in effect there is of that history too.
 * Why the answers then include a holder of every entry E committed with its lost
 * acknowledgement. Changes go one at a time (a leader appends a configuration only once the one
 * before it in its log committed, and a new voter was an observer, a member, of the one before),
 * so a commit counted under a configuration C was counted by a majority of voters that are all
 * members of the configuration in effect before C. One replica is faulty at a time: this one;
 * every answer is truthful, and its own files are older, not false.
 *  - E at or below h: the commit of h was counted under K or the configuration appended right
 *    after K, whose voters are members of K; that majority held h, hence E (log matching), and
 *    keeps it. All members of K answer, and a majority of two or more voters has a member other
 *    than this replica, so the log floor is at or above E.
 *  - E above h: E committed under the configuration in effect at E's index or the one appended
 *    right after it. If no change committed between h and E, that is K or its successor, whose
 *    voters are members of K: as above. A change committed above h was acknowledged by a majority
 *    of its voters, members of the configuration before it, who answer with it or a later
 *    latest configuration, above h: its members are asked in turn. A configuration at or below
 *    h other than K counts for no commit above h (those are counted under K or later ones), so
 *    the set covers at least what its own latest configuration alone would.
 *  - A member may answer that it holds nothing (lib/node answers so for a group it does not host,
 *    also after a restart that lost its WAL or every record of the group: then unfloored, below),
 *    and that counts like any answer. A voter holds nothing only if it lost its storage (a faulty
 *    replica: with this one, at most f of the configuration, so a commit's majority of q > f voters
 *    keeps a holder that is neither, whose answer is at or above the entry, and "nothing", the
 *    lowest answer, lowers no maximum; with one faulty replica it is not this one, whose own log
 *    then holds what it acknowledged) or released its replica, which a server does only after a
 *    committed configuration left it out (lib/js/stream_peers.c): that configuration was
 *    acknowledged by a majority of its voters, members of the configuration before it, which named
 *    the released one; so while that one is among the configurations asked, an answer names the
 *    removal (or a later configuration) and its members, who hold what the released one
 *    acknowledged, are asked too. Counting the answer only once a configuration without it is known
 *    would add nothing to that, and would stop a group whose faulty voter lost everything: its
 *    answer would never count. For the same reason a node that lost its WAL answers (unfloored)
 *    rather than stay silent: silent, it stopped for ever every group whose restarted replicas must
 *    hear from it, as when all of a group's voters restarted while the configuration at the highest
 *    commit index they knew still named it (its removal held above that index, uncommitted as far
 *    as anyone knew; jetraft-sim seed 571). Its answer says it may be faulty, and the term floor
 *    counts it only past the f - 1 faulty answerers allowed besides this one (below): counted as
 *    truthful, "term 1" from a voter that had voted in a later term could complete the w answers
 *    that miss every voter remembering that term (test/raft/test_lost.c, raft-lost-floored). A
 *    server also releases its replica when the group is deleted; then every answer may be
 *    "nothing", and a replica opened from a record older than the deletion would be whole with no
 *    one to follow. Its host holds its vote (jr__raft_hold) until it knows the group was not
 *    deleted (lib/js: its meta state caught up), so such replicas elect nobody.
 * Two faulty replicas. A configuration of n voters has a minority of n - q that may be faulty at
 * once (two of five): this replica and up to f - 1 = n - q - 1 others, f = max(1, n - q). The
 * term floor above assumes every answer truthful about the terms its sender took part in; a
 * faulty answerer restarted from a disk that lost its vote and term is not, so the w answers
 * could meet the quorum that elected a leader with this replica only in it (five voters: 1
 * elected in term 6 by {1, 2, 3}, 2 and 3 lose term 6; 2 hears 3, 4 and 5, of a leader of term
 * 5 deposed but still leading: floored at 5 and vouched for by 5's word, it would vote in term
 * 6 again and acknowledge the deposed leader). A faulty replica is a restarted one, unvouched
 * (or, for a group it holds nothing of, its node after a restart: lib/node answers unfloored
 * then); before its own floor its term may be old, from it on it is at least every term it
 * took part in. So an answer says whether its sender is unfloored, and of each configuration
 * the floor counts the answers of floored (or never restarted) voters and the unfloored ones
 * past f - 1: at least w truthful answers, which meet every quorum in a server that remembers.
 * Three voters (f = 1) count every answer; five count all but one unfloored answer: after a
 * power loss of all five a replica floors once all four others answered (the log floor (b)
 * waits for them anyway), and two restarted with a third voter down wait for it. The rest
 * holds for f faulty replicas as argued for one: the log floor (b) hears every member, and a
 * commit's majority (q > f voters) keeps a holder that is not faulty, whose answer is at or
 * above the entry; a faulty answer, lower, does not lower the maximum. (a) needs the floor
 * only: the leader of a term at or above it was elected by voters at or above their own sound
 * floors. Beyond f (two faulty of three voters, or a commit counted under an earlier
 * configuration of three) no rule can recover what both lost.
 * With a single voter (K's only voter is itself) nobody else holds what it acknowledged.
 * A lone voter's damage. A replica whose configuration names no other member vouches for itself
 * (jr__vouch_start: no peer could know more) and keeps the damage its recovery found: it may
 * have lost entries it alone committed, which nobody can give back, and its host cannot always
 * tell that it never held the group (a stream placed on its server while it was down with its
 * WAL lost), so it keeps reporting the possible loss and leads damaged (proposals refused above
 * the core). Once its configuration names another voter (the group grew) that damage would
 * never clear, since only a completed vouch clears it, so (jr__vouch_regrow): a leader, once the
 * configuration naming the other voter committed (the change must reach that voter first), steps
 * down; a follower as soon as it is one (jr__elect_become_follower, jr__vouch_tick). Either way it
 * becomes unvouched again (regrown), asks its members as a restarted replica does, and never
 * campaigns: it is whole only by (a), the word of a leader of its term whose last entry its log
 * holds. Its votes follow the rules above (term floor, log floor from every member's answer);
 * that is safe for any replica, whatever it lost, as argued above. Why it never leads or counts
 * as whole before a leader's word: from the moment its configuration has another voter it leads
 * only until that change commits (it cannot campaign while regrown, and a leader's step-down is
 * the first thing it does once it may), and it is damaged until (a). That leader is not itself
 * one such damaged replica: a regrown replica never campaigns, and a damaged lone voter leads
 * only a configuration without other voters, of which this replica is then no voter either. What
 * the flag means after growth: the loss, if any, happened on the lone voter before the group
 * grew; the voters it added learnt its log as it then was, so they hold no less than it does and
 * are not flagged, and once it holds a whole leader's log it is as whole as they are. Nothing
 * that loss took is recovered by this (no rule can); the flag no longer stands for it.
 * Cost: a replica that restarts while fewer than w other voters are reachable takes no appends
 * (three voters: it needs both others); one that restarts while its leader is down waits for
 * all the other voters' answers before it votes. Unavailability while a fault is pending,
 * never a lost acknowledged entry. A VOUCH answer the previous life's vote sent that is still
 * in flight when the floor is taken is the one case these rules do not cover.
 *
 * The leader's side: a VOUCH from a member means it restarted; an answer below what it had
 * acknowledged (a heartbeat answer or a rejection showing a shorter log than its match) means it
 * lost storage, or is a late answer that an acknowledgement overtook in the network (nothing
 * tells the two apart). Either way its match drops to what log matching proves it holds, it is
 * probed from there, and it is not a transfer target and not current until it acknowledges our
 * log up to where it was then; only the VOUCH, which every restart sends (and which a member
 * that does not win an election needs its leader to answer to be whole, (a) above), marks it
 * restarted (unvouched) and, if it holds less than it had acknowledged, damaged. A term conflict
 * above its match is ordinary backtracking and never lowers the match.
 */
#include <string.h>

#include "impl.h"
#include "util/alloc.h"
#include "util/deadline.h"

/* One server's latest answer. */
typedef struct vouch_ans {
    jr__id id;
    uint64_t term;
    uint64_t lt, li;       /* its last entry (term, index) */
    uint64_t commit;       /* its commit index */
    uint64_t conf_index;   /* its latest configuration: the entry's index ... */
    const jr__conf *conf;  /* ... and the configuration (a reference in r->confs) */
    uint64_t cconf_index;  /* the configuration in effect at its commit index, sent when its */
    const jr__conf *cconf; /* latest lies above the commit (a reference; NULL: not sent) */
    uint8_t unfloored;     /* it had restarted and taken no term floor yet */
    uint8_t gone; /* declared gone (jr__raft_vouch_gone): held at "nothing"; its answers ignored */
} vouch_ans;

/* Answers kept: the members of the configurations it must hear from are at most a few
 * configurations' worth; an answer beyond this from a server outside them is not kept. */
#define ANS_MAX (2 * JR__MAX_MEMBERS)

struct jr__vouch {
    vouch_ans *ans; /* one per server that answered, latest answer */
    uint32_t nans, cap;
    uint64_t t_max;                             /* highest term answered */
    jr__id lead;                                /* a leader that answered, in term lead_term, ... */
    uint64_t lead_term, lead_index, lead_lterm; /* ... with this last entry */
    jr__id asked;                               /* the leader last asked, in asked_term, */
    uint64_t asked_term, asked_at;              /* ... at asked_at (now()) */
    uint64_t ask_due; /* when it asks the members again (jr__vouch_tick; UINT64_MAX: never) */
    uint8_t floored;  /* w answers: the term floor is taken */
    uint8_t confless; /* started without a configuration; none has arrived yet */
    uint8_t regrown;  /* a damaged lone voter's group grew: whole only by a leader's word (a) */
    jr__id *hint;     /* confless: the servers it asks (jr__raft_vouch_hint) */
    uint32_t nhint;
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

uint64_t jr__raft_vouched_last(const jr__raft *r)
{
    return r->vouched_last;
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
    for (uint32_t i = 0; i < r->vouch->nans; i++) {
        jr__confs_put(r->confs, r->vouch->ans[i].conf);
        if (r->vouch->ans[i].cconf) jr__confs_put(r->confs, r->vouch->ans[i].cconf);
    }
    jr__free(r->alloc, r->vouch->hint);
    jr__free(r->alloc, r->vouch->ans);
    jr__free(r->alloc, r->vouch);
    r->vouch = NULL;
}

void jr__vouch_done(jr__raft *r)
{
    if (!r->vouch) return;
    jr__vouch_free(r);
    r->vouched_last = r->log.last;
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

/* The configurations an unvouched replica must hear from (the file's comment, "Which
 * configurations"): the one in effect at the highest known commit index h, and every known
 * latest configuration whose entry lies above h. Interned, so equal ones are the same pointer. */
typedef struct fam {
    const jr__conf *c[ANS_MAX + 2];
    uint32_t n;
} fam;

static void fam_add(fam *f, const jr__conf *c)
{
    for (uint32_t i = 0; i < f->n; i++)
        if (f->c[i] == c) return;
    f->c[f->n++] = c;
}

/* The configuration in effect at index `at` (at least snap_index) and its entry's index in
 * *ci (snap_index when it came from the snapshot). */
static const jr__conf *conf_at(const jr__raft *r, uint64_t at, uint64_t *ci)
{
    for (uint32_t i = r->ncidx; i > 0; i--)
        if (r->cidx[i - 1].index <= at) {
            *ci = r->cidx[i - 1].index;
            return r->cidx[i - 1].c;
        }
    *ci = r->snap_index;
    return r->snap_conf;
}

/* The configuration in effect at our commit index (start() keeps commit <= last). */
static const jr__conf *own_committed(const jr__raft *r)
{
    uint64_t ci;
    return conf_at(r, r->commit, &ci);
}

static void family(const jr__raft *r, fam *f)
{
    const struct jr__vouch *v = r->vouch;
    uint64_t h = r->commit;
    const jr__conf *k = own_committed(r);
    for (uint32_t i = 0; i < v->nans; i++) {
        const vouch_ans *a = &v->ans[i];
        if (a->commit > h && (a->conf_index <= a->commit || a->cconf)) {
            h = a->commit;
            k = a->conf_index <= a->commit ? a->conf : a->cconf;
        }
    }
    f->n = 0;
    fam_add(f, k);
    if (r->conf_index > h) fam_add(f, r->conf);
    for (uint32_t i = 0; i < v->nans; i++)
        if (v->ans[i].conf_index > h) fam_add(f, v->ans[i].conf);
}

/* 1 if id is a member of one of f's configurations (this server never counts). */
static int fam_member(const jr__raft *r, const fam *f, jr__id id)
{
    if (id == r->cfg.self) return 0;
    for (uint32_t i = 0; i < f->n; i++)
        if (jr__conf_find(f->c[i], id)) return 1;
    return 0;
}

static const vouch_ans *answer_of(const struct jr__vouch *v, jr__id id)
{
    for (uint32_t i = 0; i < v->nans; i++)
        if (v->ans[i].id == id) return &v->ans[i];
    return NULL;
}

/* A replica that started without a configuration knows whom it must hear from only once an
 * answer names a configuration of the group's history, from which the answers' chain reaches
 * every later one (the file's comment, "Which configurations"): one its sender had committed,
 * or the group's first, at index 1. That entry is the bootstrap configuration, written
 * identically by every initial voter (jr__raft_bootstrap) before any leader existed, so it is
 * in every log of the group and never a dead branch, committed or not (a group whose original
 * peers have not elected anyone yet has no other configuration: waiting for a committed one
 * would wait for a leader that needs this replica's vote). Answers that name none (servers
 * holding nothing of the group) start no chain: until one does it takes no floor and grants
 * nothing. */
static int chain_known(const jr__raft *r)
{
    const struct jr__vouch *v = r->vouch;
    if (!v->confless) return 1;
    for (uint32_t i = 0; i < v->nans; i++) {
        const vouch_ans *a = &v->ans[i];
        if (a->conf->n && a->conf_index && (a->conf_index <= a->commit || a->conf_index == 1))
            return 1;
        if (a->cconf && a->cconf->n) return 1; /* the one in effect at its commit index */
    }
    return 0;
}

/* The term floor's answers: of each configuration, w = n - q + 1 of its voters other than us
 * (all of them when fewer are others) whose terms are truthful, so each quorum of it meets them
 * in another server that remembers the terms it took part in (the file's comment, "Two faulty
 * replicas"). An answer from a voter that restarted and has no floor yet (unfloored) may come
 * from a faulty replica: of a configuration of n voters, up to f = max(1, n - q) may be faulty at
 * once, this one among them, so f - 1 of its unfloored answers are not counted. */
static int floor_answers(const jr__raft *r, const fam *f)
{
    for (uint32_t i = 0; i < f->n; i++) {
        const jr__conf *c = f->c[i];
        uint32_t n = jr__conf_voters(c), q = n / 2 + 1, w = n - q + 1, others = 0, sure = 0,
                 unsure = 0;
        uint32_t extra = n - q > 1 ? n - q - 1 : 0; /* faulty voters besides this one */
        for (uint32_t k = 0; k < c->n; k++) {
            if (!c->m[k].voter || c->m[k].id == r->cfg.self) continue;
            others++;
            const vouch_ans *a = answer_of(r->vouch, c->m[k].id);
            if (a && a->unfloored)
                unsure++;
            else if (a)
                sure++;
        }
        uint32_t got = sure + (unsure > extra ? unsure - extra : 0);
        if (got < (w < others ? w : others)) return 0;
    }
    return 1;
}

/* Every member of f's configurations other than us answered (after the term floor). */
static int fam_answered(const jr__raft *r, const fam *f)
{
    if (!r->vouch->floored) return 0;
    for (uint32_t i = 0; i < f->n; i++)
        for (uint32_t k = 0; k < f->c[i]->n; k++) {
            jr__id id = f->c[i]->m[k].id;
            if (id != r->cfg.self && !answer_of(r->vouch, id)) return 0;
        }
    return 1;
}

static int all_answered(const jr__raft *r)
{
    fam f;
    family(r, &f);
    return fam_answered(r, &f);
}

/* The log floor: the most up-to-date of the latest answers of f's members (§3.6.1 order). Only
 * the latest answer of each counts: a voter's log may lose an uncommitted suffix (replaced by a
 * newer leader's), and an entry committed with our lost acknowledgement is never among what it
 * loses. Answers of servers outside f are left out: a removed server may keep an uncommitted
 * tail no remaining voter holds. */
static void log_floor(const jr__raft *r, uint64_t *ft, uint64_t *fi)
{
    const struct jr__vouch *v = r->vouch;
    fam f;
    family(r, &f);
    *ft = *fi = 0;
    for (uint32_t i = 0; i < v->nans; i++) {
        if (!fam_member(r, &f, v->ans[i].id)) continue;
        uint64_t lt = v->ans[i].lt, li = v->ans[i].li;
        if (lt > *ft || (lt == *ft && li > *fi)) {
            *ft = lt;
            *fi = li;
        }
    }
}

static void ask(jr__raft *r, jr__id id)
{
    jr__msg q = {.type = JR__MSG_VOUCH, .to = id, .term = r->term ? r->term : 1};
    q.u.vouch.last_index = r->log.last;
    q.u.vouch.last_term = jr__memlog_term(&r->log, r->log.last);
    jr__raft_send(r, &q);
    if (id == r->leader) { /* its messages need not ask it again within a timeout (ask_leader) */
        r->vouch->asked = id;
        r->vouch->asked_term = r->term;
        r->vouch->asked_at = r->now;
    }
}

/* Asks the members of g's configurations, leaving out those of `before` (asked already; NULL:
 * none): with `all` every one, else those that have not answered. */
static void ask_members(jr__raft *r, const fam *g, const fam *before, int all)
{
    for (uint32_t i = 0; i < g->n; i++)
        for (uint32_t k = 0; k < g->c[i]->n; k++) {
            jr__id id = g->c[i]->m[k].id;
            const vouch_ans *a = answer_of(r->vouch, id);
            /* (an unfloored answer counts for less toward the floor: it is asked again, for
             * one its sender gives once it took its own floor) */
            if (id == r->cfg.self || (!all && a && !a->unfloored)) continue;
            if (before && fam_member(r, before, id)) continue;
            int dup = 0; /* a member of an earlier configuration of g */
            for (uint32_t j = 0; j < i && !dup; j++) dup = jr__conf_find(g->c[j], id) != NULL;
            if (!dup) ask(r, id);
        }
}

void jr__vouch_ask(jr__raft *r)
{
    if (!r->vouch) return;
    fam f;
    family(r, &f);
    /* Before the term floor those that have not answered (the floor needs more answers); from
     * the floor on, all of them: the word that vouches for it (a) is the answer of the leader
     * of its term, which may have answered before it led, and a quiet leader sends nothing that
     * would make it ask (jr__vouch_heard_leader); the log floor (b) counts only the latest
     * answers. */
    ask_members(r, &f, NULL, r->vouch->floored);
    if (r->vouch->confless) /* whom it knows of: the servers it was told of */
        for (uint32_t i = 0; i < r->vouch->nhint; i++)
            if (!answer_of(r->vouch, r->vouch->hint[i])) ask(r, r->vouch->hint[i]);
    r->vouch->ask_due = jr__deadline(r->now, r->cfg.election_timeout);
}

int jr__raft_vouch_hint(jr__raft *r, const jr__id *ids, uint32_t n)
{
    struct jr__vouch *v = r->vouch;
    if (!r->started || !v || !v->confless) return JR_ENOCHANGE;
    jr__id *h = jr__calloc(r->alloc, n ? n : 1, sizeof *h);
    if (!h) return JR_ENOMEM;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] && ids[i] != r->cfg.self) h[k++] = ids[i];
    jr__free(r->alloc, v->hint);
    v->hint = h;
    v->nhint = k;
    jr__vouch_ask(r);
    jr__raft_notify(r);
    return 0;
}

uint64_t jr__vouch_deadline(const jr__raft *r)
{
    return r->vouch ? r->vouch->ask_due : UINT64_MAX;
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
         * unvouched again, and only an acknowledgement after the floor clears the mark. All of
         * them, those that answered too: the leader it asked on first hearing from it answered
         * before the repair, and must hear of it after. */
        r->vouch->confless = 0;
        fam f;
        family(r, &f);
        ask_members(r, &f, NULL, 1);
        r->vouch->ask_due = jr__deadline(r->now, r->cfg.election_timeout);
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

/* Configurations whose references record() gave up, put only once nothing points at them any
 * more: a family computed before the answer (f) may still name them. */
typedef struct dead_confs {
    const jr__conf *c[2 * (ANS_MAX + 1)];
    uint32_t n;
} dead_confs;

/* Records m as the latest answer of its sender: 0, or JR_ENOMEM / JR_ECORRUPT (a configuration
 * that does not decode) with nothing recorded. The references it drops go to *dead. */
static int record(jr__raft *r, const jr__msg *m, const fam *f, dead_confs *dead)
{
    struct jr__vouch *v = r->vouch;
    jr__conf c, cc;
    c.n = 0; /* no configuration bytes: none, as a count of no member says */
    if (m->u.vouch_resp.conf_len &&
        jr__conf_decode(&c, m->u.vouch_resp.conf, m->u.vouch_resp.conf_len) != 0)
        return JR_ECORRUPT;
    /* the configuration at its commit index, from a sender whose latest lies above it (an
     * answer without it, as an older build sends, is taken as before) */
    int has_cc = m->u.vouch_resp.cconf_len && m->u.vouch_resp.conf_index > m->u.vouch_resp.commit;
    if (has_cc && jr__conf_decode(&cc, m->u.vouch_resp.cconf, m->u.vouch_resp.cconf_len) != 0)
        return JR_ECORRUPT;
    vouch_ans *a = (vouch_ans *)answer_of(v, m->from);
    if (!a) {
        /* make room: answers of servers no longer among f's members are dropped first */
        for (uint32_t i = 0; i < v->nans && v->nans == v->cap && v->cap == ANS_MAX;) {
            if (fam_member(r, f, v->ans[i].id)) {
                i++;
                continue;
            }
            dead->c[dead->n++] = v->ans[i].conf;
            if (v->ans[i].cconf) dead->c[dead->n++] = v->ans[i].cconf;
            v->ans[i] = v->ans[--v->nans];
        }
        if (v->nans == v->cap) {
            if (v->cap == ANS_MAX) return JR_ENOMEM;
            uint32_t cap = v->cap ? 2 * v->cap : 4;
            if (cap > ANS_MAX) cap = ANS_MAX;
            vouch_ans *p = jr__realloc(r->alloc, v->ans, cap * sizeof *p);
            if (!p) return JR_ENOMEM;
            v->ans = p;
            v->cap = cap;
        }
        a = &v->ans[v->nans];
        *a = (vouch_ans){.id = m->from};
    }
    const jr__conf *ic = jr__confs_get(r->confs, &c);
    if (!ic) return JR_ENOMEM;
    const jr__conf *icc = NULL;
    if (has_cc && !(icc = jr__confs_get(r->confs, &cc))) {
        jr__confs_put(r->confs, ic);
        return JR_ENOMEM;
    }
    if (a == &v->ans[v->nans]) {
        v->nans++;
    } else {
        dead->c[dead->n++] = a->conf;
        if (a->cconf) dead->c[dead->n++] = a->cconf;
    }
    a->conf = ic;
    a->cconf = icc;
    a->cconf_index = icc ? m->u.vouch_resp.cconf_index : 0;
    a->term = m->term;
    a->lt = m->u.vouch_resp.last_term;
    a->li = m->u.vouch_resp.last_index;
    a->commit = m->u.vouch_resp.commit;
    a->conf_index = m->u.vouch_resp.conf_index;
    a->unfloored = m->u.vouch_resp.unfloored != 0;
    return 0;
}

static void on_resp(jr__raft *r, uint64_t now, const jr__msg *m, int declare)
{
    struct jr__vouch *v = r->vouch;
    if (!v) return; /* whole: a late answer */
    const vouch_ans *pin = answer_of(v, m->from);
    if (pin && pin->gone) return; /* declared gone: it holds nothing, whatever it says */
    /* Any server's answer is kept, asked or not (a leader it heard from, a member of a
     * configuration it no longer needs): what it tells of the group's commit index and
     * configuration is true. Only the members of the configurations it must hear from set
     * its log floor (log_floor()). */
    fam f;
    family(r, &f);
    dead_confs dead = {.n = 0};
    int rc = record(r, m, &f, &dead);
    for (uint32_t i = 0; i < dead.n && rc; i++) jr__confs_put(r->confs, dead.c[i]);
    if (rc) return; /* it asks again at its election timeout */
    if (declare) ((vouch_ans *)answer_of(v, m->from))->gone = 1;
    if (m->term > v->t_max) v->t_max = m->term;
    if (m->u.vouch_resp.leader && m->term >= v->lead_term) {
        v->lead = m->from;
        v->lead_term = m->term;
        v->lead_index = m->u.vouch_resp.last_index;
        v->lead_lterm = m->u.vouch_resp.last_term;
    }
    /* the answer may name configurations it must also hear from: their members are asked now */
    fam g;
    family(r, &g);
    if (!fam_answered(r, &g)) ask_members(r, &g, &f, v->floored);
    for (uint32_t i = 0; i < dead.n; i++) jr__confs_put(r->confs, dead.c[i]);
    if (!v->floored && chain_known(r) && floor_answers(r, &g)) take_floor(r, now);
    jr__vouch_check(r, now);
}

void jr__vouch_on_resp(jr__raft *r, uint64_t now, const jr__msg *m)
{
    on_resp(r, now, m, 0);
}

/* Rescue. A member that never answers (its server gone for good) keeps an unvouched replica
 * from its term floor or its log floor forever: in R3 with one server gone and one replica
 * damaged, the damaged one cannot be vouched for and the whole one cannot be elected without
 * its vote. The operator may declare the silent member gone: it is taken to hold nothing of the
 * group, as its node answers once it released its replica (no entry, no configuration), and the
 * replica goes on from there. An answer it gave before is replaced, and any it gives later is
 * ignored: a removed server that is still alive answers with the log it kept, which no member
 * left may reach, and a log floor at it would keep the group from electing anyone (jetraft-sim
 * seed 30269: its last entry, which it alone held, above both remaining voters' logs). That is
 * safe only if the member is truly gone and stays so:
 *  - an entry committed with this replica's lost acknowledgement may be held by nobody else
 *    (the quorum was {this replica, the gone one}): the log floor no longer requires it, so it
 *    is lost, and if the gone member comes back it gives it up for the new leader's log;
 *  - a vote this replica forgot may have gone to the gone member in a term above every term the
 *    others answered: if that member is alive (partitioned, paused) it may lead in the term the
 *    rescued group elects in, two leaders in one term.
 * So it is an explicit operator call (jr_group_rescue), never automatic. */
int jr__raft_vouch_gone(jr__raft *r, jr__id peer, uint64_t now)
{
    struct jr__vouch *v = r->vouch;
    if (!v) return JR_ENOCHANGE; /* whole: nothing waits */
    if (peer == r->cfg.self) return JR_EINVAL;
    fam f;
    family(r, &f);
    if (!fam_member(r, &f, peer)) return JR_ENOTMEMBER;
    const vouch_ans *had = answer_of(v, peer);
    if (had && had->gone) return JR_ENOCHANGE;
    static const uint8_t none[1] = {0}; /* jr__conf_encode() of no member */
    jr__msg m;
    memset(&m, 0, sizeof m);
    m.type = JR__MSG_VOUCH_RESP;
    m.group = r->cfg.group;
    m.from = peer;
    m.to = r->cfg.self;
    m.term = 1; /* no message has term 0 */
    m.u.vouch_resp.conf = none;
    m.u.vouch_resp.conf_len = sizeof none;
    on_resp(r, now, &m, 1);
    /* (r->vouch may be gone: the answer can make it whole at once) */
    if (r->vouch && !(answer_of(r->vouch, peer) && answer_of(r->vouch, peer)->gone))
        return JR_ENOMEM;
    jr__raft_notify(r);
    return 0;
}

int jr__vouch_drops(const jr__raft *r, const jr__msg *m)
{
    /* unvouched: until its term floor; diverged without vouch state (out of memory): all;
     * without a configuration it has no one to ask for a floor and takes a leader's repair */
    if (r->vouch ? r->vouch->floored || (r->conf->n == 0 && r->damaged) : !r->diverged) return 0;
    return m->type == JR__MSG_APPEND || m->type == JR__MSG_HEARTBEAT || m->type == JR__MSG_SNAP ||
           m->type == JR__MSG_TIMEOUT_NOW || m->type == JR__MSG_VOTE;
}

/* Asks `from`, a leader of `term`, unless it was asked in that term within an election
 * timeout (here or by the timer's asking, ask()). 1 if it asked. A leader heard from is asked
 * at once, not at the next asking of every member: a leader elected after the VOUCHes went out
 * learns the replica restarted before it counts the replica's acknowledgements. */
static int ask_leader(jr__raft *r, jr__id from, uint64_t term)
{
    struct jr__vouch *v = r->vouch;
    if (!v || (v->asked == from && v->asked_term == term &&
               r->now - v->asked_at < r->cfg.election_timeout))
        return 0;
    v->asked = from;
    v->asked_term = term;
    v->asked_at = r->now;
    ask(r, from);
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
    if (!chain_known(r) || !all_answered(r)) return 0;
    uint64_t ft, fi;
    log_floor(r, &ft, &fi);
    return lt > ft || (lt == ft && li >= fi);
}

int jr__vouch_may_campaign(const jr__raft *r)
{
    if (!r->vouch) return !r->diverged;
    if (r->vouch->regrown) return 0; /* it waits for a whole leader's word */
    return jr__vouch_may_grant(r, r->log.last, jr__memlog_term(&r->log, r->log.last));
}

/* Leader side ------------------------------------------------------------------------------*/

void jr__vouch_lost(jr__raft *r, jr__prog *p, uint64_t holds, int restarted)
{
    if (p->match > p->acked) p->acked = p->match;
    if (holds < p->match) p->match = holds;
    /* a need for a snapshot counts as a later one once the match moved past this (progress.c) */
    if (p->later_match > p->match) p->later_match = p->match;
    /* An answer below the match is no proof of a loss: under reordering it may be one sent
     * before the acknowledgement that raised the match (a heartbeat answered just before the
     * APPEND arrived). The match drops all the same, so that an acknowledgement the member may
     * have lost counts toward no commit, and it is probed; only its VOUCH, which every restart
     * sends (a follower is whole only once its leader answered one: (a) in the file's comment),
     * says it restarted, and what it holds there below what it acknowledged is damage. */
    if (restarted) {
        p->restarted = 1;
        if (holds < p->acked) p->damaged = 1;
        /* its state machine is a new one, whose server speaks for it afresh (the word of its
         * earlier life on a failed one no longer holds) */
        p->fsm = 0;
        p->fsm_at = 0;
    }
    if (p->sent_commit > p->match) p->sent_commit = p->match;
    /* Only an acknowledgement clears this (jr__vouch_progress), even when what it holds
     * already reaches our whole log (a VOUCH from a replica whose log survived its restart, say
     * with a damaged store): a restarted replica drops our messages until its term floor and
     * reports itself unvouched (or damaged, by what its own recovery found) until it is vouched
     * for, so it is not current before it acknowledges an APPEND or snapshot of ours. */
    if (!p->unvouched || p->vouch_at < r->log.last) p->vouch_new = 0;
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
    /* restarted without a term floor yet: our term may be older than terms we took part in,
     * so the asker counts this answer toward its own floor only as far as the number of faulty
     * replicas its configuration allows besides the asker (floor_answers()) */
    a.u.vouch_resp.unfloored = r->vouch && !r->vouch->floored;
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
    /* our latest configuration and commit index: the asker learns from them which
     * configurations it must hear from (the file's comment) */
    uint8_t conf[16 + JR__MAX_MEMBERS * 9];
    a.u.vouch_resp.commit = r->commit < r->log.last ? r->commit : r->log.last;
    a.u.vouch_resp.conf_index = r->conf_index;
    a.u.vouch_resp.conf_len = (uint32_t)jr__conf_encode(r->conf, conf);
    a.u.vouch_resp.conf = conf;
    /* An uncommitted change above our commit index: the configuration in effect there too,
     * which starts the asker's chain as a committed latest configuration would (the file's
     * comment, "Which configurations"). */
    uint8_t cconf[16 + JR__MAX_MEMBERS * 9];
    if (r->conf_index > a.u.vouch_resp.commit) {
        uint64_t ci;
        const jr__conf *cc = conf_at(r, a.u.vouch_resp.commit, &ci);
        if (cc->n && ci <= a.u.vouch_resp.commit) {
            a.u.vouch_resp.cconf_index = ci;
            a.u.vouch_resp.cconf_len = (uint32_t)jr__conf_encode(cc, cconf);
            a.u.vouch_resp.cconf = cconf;
        }
    }
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
    int fresh = p->unvouched && p->vouch_new;
    jr__vouch_lost(r, p, holds, 1);
    /* An acknowledgement the member sent before its restart may still be on its way and reach
     * our last index of now, which would clear the mark it has not earned. A blank entry
     * appended now is one no acknowledgement of its earlier life can cover: the mark waits for
     * that entry's acknowledgement, which the member sends only after its term floor. Once per
     * restart (its later VOUCHes find the mark on such an entry); not during a transfer, whose
     * target must not be given more to catch up. */
    if (!fresh && !r->transfer_to &&
        jr__repl_append_local(r, r->term, JR__ENTRY_NOOP, NULL, 0) == 0) {
        jr__quiet_leave(r, now);
        r->idle_ticks = 0;
        r->send_pending = 1;
        jr__raft_notify(r);
        p->vouch_at = r->log.last;
        fresh = 1;
    }
    p->vouch_new = (uint8_t)fresh;
    uint64_t from = li < r->log.last ? li : r->log.last;
    jr__prog_probe(p, from + 1);
    jr__repl_send_append(r, p, now);
}

void jr__vouch_start(jr__raft *r)
{
    if (!r->vouch) return;
    if (r->conf->n == 0 && r->damaged) {
        /* Recovery lost what held its configuration (an unreadable snapshot, damaged first
         * records): it knows no member to ask, which is not being alone. It stays unvouched and
         * damaged (no campaign), takes what a leader sends (jr__vouch_drops) until a
         * configuration arrives, then asks its members at once (jr__vouch_check). Its node may
         * name servers to ask meanwhile (jr__raft_vouch_hint): once one answers with a
         * configuration it had committed or the bootstrap one (chain_known), the members are asked
         * as from any answer, and with every one's word it may grant its vote — the group has no
         * leader to repair it while the voters left are no quorum without it. (Without damage, no
         * configuration means none was ever durable here: a member that never acknowledged an
         * entry, as whole as a new one.) */
        r->vouch->confless = 1;
        r->vouch->ask_due = UINT64_MAX; /* nobody to ask yet */
        return;
    }
    fam f;
    family(r, &f);
    int peers = 0;
    for (uint32_t i = 0; i < f.n && !peers; i++)
        for (uint32_t k = 0; k < f.c[i]->n && !peers; k++) peers = f.c[i]->m[k].id != r->cfg.self;
    if (!peers) { /* no peer could know more than we do; damage found locally stays */
        uint8_t damaged = r->damaged;
        jr__vouch_done(r);
        r->damaged = damaged;
        return;
    }
    jr__vouch_ask(r);
}

/* 1 if its latest configuration names a voter other than itself. */
static int other_voter(const jr__raft *r)
{
    for (uint32_t i = 0; i < r->conf->n; i++)
        if (r->conf->m[i].voter && r->conf->m[i].id != r->cfg.self) return 1;
    return 0;
}

void jr__vouch_regrow(jr__raft *r, uint64_t now)
{
    if (!r->started || r->vouch || !r->damaged || r->diverged || !other_voter(r)) return;
    if (r->role == ROLE_LEADER) {
        if (r->conf_index > r->commit) return; /* the change that added the voter first commits */
        jr__elect_become_follower(r, now, r->term, 0);
        if (r->vouch) return; /* the step down regrew it already (it calls this too) */
    }
    r->vouch = jr__calloc(r->alloc, 1, sizeof *r->vouch);
    if (!r->vouch) return; /* out of memory: tried again at its next election timeout */
    r->vouch->regrown = 1;
    jr__vouch_ask(r);
    jr__raft_notify(r);
}

int jr__vouch_tick(jr__raft *r, uint64_t now)
{
    if (r->role == ROLE_LEADER) return 0;
    if (!r->vouch && r->damaged && !r->diverged) {
        jr__vouch_regrow(r, now); /* a damaged lone voter that follows in a grown group */
        if (r->vouch) return 1;
    }
    if (!r->vouch) {
        if (!r->diverged || r->quiet || now < r->election_deadline) return 0;
        jr__vouch_diverged(r); /* diverged while out of memory: it tries again */
        jr__elect_reset_timer(r, now);
        return 1;
    }
    if (now < r->vouch->ask_due) return 0;
    /* Its own timer, quiet or not, whatever its leader sends: the members' answers, the
     * leader's among them, are what it waits for, and one lost must be asked for again. */
    jr__vouch_ask(r);
    if (jr__elect_can_campaign(r)) return 0; /* it campaigns at its election timeout */
    /* While it may not campaign its election timer is not reported (jr__raft_deadline); it
     * restarts here so that once it may, it campaigns a randomized timeout later, as a replica
     * whose timer ran would, rather than at once alongside every other replica restarted with
     * it. */
    jr__elect_reset_timer(r, now);
    return 1;
}
