/* Listing streams and consumers end to end (names and lists from the meta leader, infos from
 * each leader; paging and subject filters) and direct get at any current replica, from every
 * server, with allow_direct set, cleared and never set. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "js/js.h"
#include "node/node.h"
#include "util/buf.h"

#define MAXN 1100

/* What a names, list or direct get callback gave. */
typedef struct lres {
    int done;
    int status;
    char msg[512];
    int page; /* a page was given */
    uint64_t total, offset, limit;
    size_t n;
    char names[MAXN][32];
    uint64_t msgs[MAXN];    /* lists: state.msgs, or num_pending of a consumer */
    int allow_direct[MAXN]; /* stream lists */
    char leader[MAXN][16];  /* lists: cluster leader */
    size_t nmissing;
    char missing[8][32];
    /* direct get */
    uint64_t seq;
    char subject[64];
    char data[64];
} lres;

static lres res; /* one call at a time */

static int lres_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((lres *)arg)->done;
}

static void wait_done(e2e *c, lres *r)
{
    ck_assert_int_eq(jr_sim_run_until(c->sim, lres_done, r, 60 * SEC), 0);
}

static void begin(lres *r, int status, const char *msg)
{
    ck_assert_msg(!r->done, "a callback ran twice");
    r->done = 1;
    r->status = status;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "(null)");
}

static void names_cb(void *arg, int status, const char *msg, const jr_names *pg)
{
    lres *r = arg;
    begin(r, status, msg);
    if (status) {
        ck_assert_ptr_null(pg);
        return;
    }
    ck_assert_uint_eq(pg->size, sizeof *pg);
    r->page = 1;
    r->total = pg->total;
    r->offset = pg->offset;
    r->limit = pg->limit;
    r->n = pg->nnames;
    ck_assert(pg->nnames <= MAXN);
    if (!pg->nnames) ck_assert_ptr_null(pg->names);
    for (size_t i = 0; i < pg->nnames; i++)
        snprintf(r->names[i], sizeof r->names[i], "%s", pg->names[i]);
}

static void take_missing(lres *r, const char *const *missing, size_t n)
{
    r->nmissing = n;
    for (size_t i = 0; i < n && i < 8; i++)
        snprintf(r->missing[i], sizeof r->missing[i], "%s", missing[i]);
}

static void slist_cb(void *arg, int status, const char *msg, const jr_stream_page *pg)
{
    lres *r = arg;
    begin(r, status, msg);
    if (status) {
        ck_assert_ptr_null(pg);
        return;
    }
    ck_assert_uint_eq(pg->size, sizeof *pg);
    r->page = 1;
    r->total = pg->total;
    r->offset = pg->offset;
    r->limit = pg->limit;
    r->n = pg->nstreams;
    ck_assert(pg->nstreams <= MAXN);
    for (size_t i = 0; i < pg->nstreams; i++) {
        const jr_stream_info *in = pg->streams[i];
        snprintf(r->names[i], sizeof r->names[i], "%s", in->config->name);
        r->msgs[i] = in->state->msgs;
        r->allow_direct[i] = in->config->allow_direct;
        snprintf(r->leader[i], sizeof r->leader[i], "%s",
                 in->cluster->leader ? in->cluster->leader : "");
    }
    take_missing(r, pg->missing, pg->nmissing);
}

static void clist_cb(void *arg, int status, const char *msg, const jr_consumer_page *pg)
{
    lres *r = arg;
    begin(r, status, msg);
    if (status) {
        ck_assert_ptr_null(pg);
        return;
    }
    ck_assert_uint_eq(pg->size, sizeof *pg);
    r->page = 1;
    r->total = pg->total;
    r->offset = pg->offset;
    r->limit = pg->limit;
    r->n = pg->nconsumers;
    for (size_t i = 0; i < pg->nconsumers; i++) {
        const jr_consumer_info *in = pg->consumers[i];
        snprintf(r->names[i], sizeof r->names[i], "%s", in->name);
        ck_assert_str_eq(in->stream, "ORDERS");
        ck_assert_str_eq(in->config->durable_name, in->name);
        r->msgs[i] = in->num_pending;
        snprintf(r->leader[i], sizeof r->leader[i], "%s",
                 in->cluster->leader ? in->cluster->leader : "");
    }
    take_missing(r, pg->missing, pg->nmissing);
}

static void msg_cb(void *arg, int status, const char *msg, const jr_stored_msg *m)
{
    lres *r = arg;
    begin(r, status, msg);
    if (status) {
        ck_assert_ptr_null(m);
        return;
    }
    r->seq = m->seq;
    snprintf(r->subject, sizeof r->subject, "%s", m->subject);
    snprintf(r->data, sizeof r->data, "%.*s", (int)m->len, (const char *)m->data);
    ck_assert_str_eq(m->stream, "ORDERS");
}

static lres *stream_names(e2e *c, unsigned node, const char *filter, uint64_t offset)
{
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(jr_stream_names(e2e_node(c, node), filter, offset, names_cb, &res), 0);
    ck_assert(!res.done); /* never inside the call */
    wait_done(c, &res);
    return &res;
}

static lres *stream_list(e2e *c, unsigned node, const char *filter, uint64_t offset)
{
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(jr_stream_list(e2e_node(c, node), filter, offset, slist_cb, &res), 0);
    ck_assert(!res.done);
    wait_done(c, &res);
    return &res;
}

static lres *consumer_names(e2e *c, unsigned node, const char *stream, uint64_t offset)
{
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(jr_consumer_names(e2e_node(c, node), stream, offset, names_cb, &res), 0);
    wait_done(c, &res);
    return &res;
}

static lres *consumer_list(e2e *c, unsigned node, const char *stream, uint64_t offset)
{
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(jr_consumer_list(e2e_node(c, node), stream, offset, clist_cb, &res), 0);
    wait_done(c, &res);
    return &res;
}

static lres *direct(e2e *c, unsigned node, uint64_t seq, const char *subject)
{
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(jr_stream_direct_get(e2e_node(c, node), "ORDERS", seq, subject, msg_cb, &res),
                     0);
    ck_assert(!res.done);
    wait_done(c, &res);
    return &res;
}

static void stream_name(char *buf, size_t cap, int i)
{
    snprintf(buf, cap, "S%04d", i);
}

/* ---------------------------------------------------------------------------------------------
 * Stream names and lists
 */

START_TEST(stream_names_are_sorted_paged_and_filtered)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 21, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(&c, 3, 10 * SEC), 0);
    /* none yet: an empty page */
    lres *r = stream_names(&c, 1, NULL, 0);
    ck_assert_msg(r->status == 0, "%s", r->msg);
    ck_assert_uint_eq(r->total, 0);
    ck_assert_uint_eq(r->n, 0);
    ck_assert_uint_eq(r->limit, JR_NAMES_LIMIT);
    /* 1,100 streams (more than a page of names), added in an order that is not theirs (R1 in
     * memory: cheap) */
    enum { NS = 1100 };
    static char names[NS][8], subj[NS][24];
    for (int k = 0; k < NS; k++) {
        int i = (k * 7) % NS; /* 7 is prime to 1,100: every i once */
        stream_name(names[i], sizeof names[i], i);
        snprintf(subj[i], sizeof subj[i], "s.%d.%s", i, i % 2 ? "odd" : "even");
        const char *sp[] = {subj[i]};
        jr_stream_config cfg;
        e2e_config(&cfg, names[i], sp, 1, 1);
        cfg.storage = JR_STORAGE_MEMORY;
        e2e_res ar;
        ck_assert_msg(e2e_add(&c, (unsigned)k % 3, &cfg, &ar) == 0, "add %s: %s", names[i], ar.msg);
    }
    for (unsigned node = 0; node < 3; node++) {
        r = stream_names(&c, node, NULL, 0);
        ck_assert_msg(r->status == 0, "%s", r->msg);
        ck_assert_uint_eq(r->total, NS);
        ck_assert_uint_eq(r->offset, 0);
        ck_assert_uint_eq(r->n, JR_NAMES_LIMIT); /* a full page */
        for (int i = 0; i < JR_NAMES_LIMIT; i++) ck_assert_str_eq(r->names[i], names[i]);
    }
    /* the next page, and offsets */
    r = stream_names(&c, 2, NULL, JR_NAMES_LIMIT);
    ck_assert_uint_eq(r->total, NS);
    ck_assert_uint_eq(r->offset, JR_NAMES_LIMIT);
    ck_assert_uint_eq(r->n, NS - JR_NAMES_LIMIT);
    for (int i = JR_NAMES_LIMIT; i < NS; i++)
        ck_assert_str_eq(r->names[i - JR_NAMES_LIMIT], names[i]);
    r = stream_names(&c, 2, NULL, NS - 10);
    ck_assert_uint_eq(r->offset, NS - 10);
    ck_assert_uint_eq(r->n, 10);
    ck_assert_str_eq(r->names[0], "S1090");
    ck_assert_str_eq(r->names[9], "S1099");
    r = stream_names(&c, 2, NULL, 5000); /* past the end */
    ck_assert_int_eq(r->status, 0);
    ck_assert_uint_eq(r->total, NS);
    ck_assert_uint_eq(r->offset, NS);
    ck_assert_uint_eq(r->n, 0);
    /* filters: streams with a subject that overlaps */
    r = stream_names(&c, 0, "s.7.>", 0);
    ck_assert_uint_eq(r->total, 1);
    ck_assert_str_eq(r->names[0], "S0007");
    r = stream_names(&c, 0, "s.*.odd", 0);
    ck_assert_uint_eq(r->total, NS / 2);
    ck_assert_uint_eq(r->n, NS / 2);
    ck_assert_str_eq(r->names[0], "S0001");
    ck_assert_str_eq(r->names[1], "S0003");
    r = stream_names(&c, 0, "s.*.odd", 100);
    ck_assert_uint_eq(r->total, NS / 2);
    ck_assert_uint_eq(r->n, NS / 2 - 100);
    ck_assert_str_eq(r->names[0], "S0201");
    r = stream_names(&c, 1, "s.12.even", 0);
    ck_assert_uint_eq(r->n, 1);
    ck_assert_str_eq(r->names[0], "S0012");
    r = stream_names(&c, 1, ">", 0);
    ck_assert_uint_eq(r->total, NS);
    r = stream_names(&c, 1, "t.>", 0);
    ck_assert_int_eq(r->status, 0);
    ck_assert_uint_eq(r->total, 0);
    ck_assert_uint_eq(r->n, 0);
    r = stream_names(&c, 1, "s..x", 0);
    ck_assert_int_eq(r->status, JR_EINVAL);
    /* a deleted stream is gone from the names at once, asked anywhere */
    e2e_res dr;
    ck_assert_int_eq(e2e_delete(&c, 0, "S0150", &dr), 0);
    for (unsigned node = 0; node < 3; node++) {
        r = stream_names(&c, node, NULL, 149);
        ck_assert_uint_eq(r->total, NS - 1);
        ck_assert_str_eq(r->names[0], "S0149");
        ck_assert_str_eq(r->names[1], "S0151");
    }
    /* lists page by 256 */
    r = stream_list(&c, 1, NULL, 0);
    ck_assert_msg(r->status == 0, "%s", r->msg);
    ck_assert_uint_eq(r->total, NS - 1);
    ck_assert_uint_eq(r->limit, JR_LIST_LIMIT);
    ck_assert_uint_eq(r->n, JR_LIST_LIMIT);
    ck_assert_uint_eq(r->nmissing, 0);
    ck_assert_str_eq(r->names[0], "S0000");
    ck_assert_str_eq(r->names[255], "S0256"); /* S0150 is gone */
    r = stream_list(&c, 2, NULL, NS - 1 - 10);
    ck_assert_uint_eq(r->n, 10);
    ck_assert_str_eq(r->names[0], "S1090");
    r = stream_list(&c, 0, "s.*.even", 400);
    ck_assert_uint_eq(r->total, NS / 2 - 1);
    ck_assert_uint_eq(r->n, NS / 2 - 1 - 400);
    ck_assert_str_eq(r->names[0], "S0802");
    e2e_free(&c);
}
END_TEST

START_TEST(stream_list_gives_each_leaders_info_and_names_the_missing)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 5, 22, 2000), 0);
    int ml = e2e_wait_meta(&c, 5, 10 * SEC);
    ck_assert_int_ge(ml, 0);
    const char *subj_a[] = {"a.>"}, *subj_b[] = {"b.>"};
    jr_stream_config cfg;
    e2e_res er;
    e2e_config(&cfg, "A3", subj_a, 1, 3);
    cfg.allow_direct = 1;
    ck_assert_msg(e2e_add(&c, 0, &cfg, &er) == 0, "%s", er.msg);
    e2e_config(&cfg, "B3", subj_b, 1, 3);
    ck_assert_msg(e2e_add(&c, 1, &cfg, &er) == 0, "%s", er.msg);
    /* R1 streams: one of them lives off the meta leader, to be crashed */
    char r1[8][8], r1subj[8][8];
    int victim = -1;
    unsigned victim_node = 0;
    for (int i = 0; i < 8 && victim < 0; i++) {
        snprintf(r1[i], sizeof r1[i], "R1_%d", i);
        snprintf(r1subj[i], sizeof r1subj[i], "r.%d", i);
        const char *sp[] = {r1subj[i]};
        e2e_config(&cfg, r1[i], sp, 1, 1);
        ck_assert_msg(e2e_add(&c, 2, &cfg, &er) == 0, "%s", er.msg);
        unsigned peer;
        ck_assert_int_eq(e2e_meta_peers(&c, 2, r1[i], &peer, 1), 1);
        if ((int)peer != ml) victim = i, victim_node = peer;
    }
    ck_assert_int_ge(victim, 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(e2e_publish(&c, (unsigned)i, "a.x", "m", 1, NULL, &er), 0);
    ck_assert_int_eq(e2e_publish(&c, 3, "b.y", "m", 1, NULL, &er), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "A3", 2, 10 * SEC), 0);
    ck_assert_int_ge(e2e_wait_stream(&c, 0, "B3", 2, 10 * SEC), 0);
    size_t nstreams = 2 + (size_t)victim + 1;
    for (unsigned node = 0; node < 5; node++) {
        lres *r = stream_list(&c, node, NULL, 0);
        ck_assert_msg(r->status == 0, "node %u: %s", node, r->msg);
        ck_assert_uint_eq(r->total, nstreams);
        ck_assert_uint_eq(r->n, nstreams);
        ck_assert_uint_eq(r->nmissing, 0);
        ck_assert_str_eq(r->names[0], "A3");
        ck_assert_uint_eq(r->msgs[0], 3);
        ck_assert_int_eq(r->allow_direct[0], 1);
        ck_assert_str_eq(r->names[1], "B3");
        ck_assert_uint_eq(r->msgs[1], 1);
        ck_assert_int_eq(r->allow_direct[1], 0);
        for (size_t i = 0; i < nstreams; i++) ck_assert_str_ne(r->leader[i], "");
    }
    /* filter */
    lres *r = stream_list(&c, 4, "a.b", 0);
    ck_assert_uint_eq(r->total, 1);
    ck_assert_str_eq(r->names[0], "A3");
    /* the server of an R1 stream is down: that stream is missing, the others are listed */
    ck_assert_int_eq(jr_sim_crash(c.sim, victim_node), 0);
    unsigned via = (victim_node + 1) % 5;
    r = stream_list(&c, via, NULL, 0);
    ck_assert_msg(r->status == 0, "%s", r->msg);
    ck_assert_uint_eq(r->total, nstreams);
    ck_assert_uint_eq(r->nmissing, 1);
    ck_assert_str_eq(r->missing[0], r1[victim]);
    ck_assert_uint_eq(r->n, nstreams - 1);
    /* names still have it: the meta state does */
    r = stream_names(&c, via, NULL, 0);
    ck_assert_uint_eq(r->total, nstreams);
    e2e_free(&c);
}
END_TEST

START_TEST(lists_need_a_meta_leader)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 23, 1000), 0);
    int ml = e2e_wait_meta(&c, 3, 10 * SEC);
    ck_assert_int_ge(ml, 0);
    unsigned a = (unsigned)(ml + 1) % 3, b = (unsigned)(ml + 2) % 3;
    ck_assert_int_eq(jr_sim_crash(c.sim, a), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, b), 0);
    lres *r = stream_names(&c, (unsigned)ml, NULL, 0);
    /* the lone server may still believe it leads for a while, then it has no quorum: either it
     * answers from the state it has, or no meta leader answers in time */
    ck_assert_msg(r->status == 0 || r->status == JR_ENOLEADER, "%d %s", r->status, r->msg);
    ck_assert_int_eq(jr_sim_restart(c.sim, a), 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, (unsigned)ml), 0);
    r = stream_names(&c, a, NULL, 0); /* a alone: no meta leader */
    ck_assert_int_eq(r->status, JR_ENOLEADER);
    ck_assert_int_eq(jr_stream_names(NULL, NULL, 0, names_cb, &res), JR_EINVAL);
    ck_assert_int_eq(jr_stream_names(e2e_node(&c, a), NULL, 0, NULL, &res), JR_EINVAL);
    ck_assert_int_eq(jr_consumer_names(e2e_node(&c, a), NULL, 0, names_cb, &res), JR_EINVAL);
    e2e_free(&c);
}
END_TEST

/* What a server answers to a raw names request (JR__RPC_LISTS). */
typedef struct raw {
    int done, status;
    char text[64];
} raw;

static void on_raw(jr_node *n, void *arg, int status, int answered, const uint8_t *p, size_t len)
{
    raw *a = arg;
    (void)n;
    (void)answered;
    a->done = 1;
    a->status = status;
    snprintf(a->text, sizeof a->text, "%.*s", (int)(len < 63 ? len : 63), (const char *)p);
}

static int raw_done(void *arg, jr_sim *sim)
{
    (void)sim;
    return ((raw *)arg)->done;
}

static int raw_call(e2e *c, unsigned from, unsigned to, const void *p, size_t len, raw *a)
{
    memset(a, 0, sizeof *a);
    jr_iovec iov = {p, len};
    jr_node *fn = e2e_node(c, from), *tn = e2e_node(c, to);
    ck_assert_int_eq(jr__rpc_call(fn, tn->self, JR__RPC_LISTS, &iov, 1, 5 * SEC, on_raw, a, NULL),
                     0);
    ck_assert_int_eq(jr_sim_run_until(c->sim, raw_done, a, 10 * SEC), 0);
    return a->status;
}

START_TEST(a_names_request_is_checked_and_answered_by_the_meta_leader_only)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 24, 2000), 0);
    int ml = e2e_wait_meta(&c, 3, 10 * SEC);
    ck_assert_int_ge(ml, 0);
    unsigned f = (unsigned)(ml + 1) % 3, g = (unsigned)(ml + 2) % 3;
    jr__buf b;
    jr__buf_init(&b, NULL);
    jr__buf_u8(&b, 1);
    jr__buf_bytes(&b, "", 0);
    jr__buf_varint(&b, 0);
    jr__buf_varint(&b, 10);
    raw a;
    ck_assert_int_eq(raw_call(&c, f, (unsigned)ml, b.data, b.len, &a), 0);
    /* a follower names the leader */
    ck_assert_int_eq(raw_call(&c, f, g, b.data, b.len, &a), JR_ENOTLEADER);
    ck_assert_str_eq(a.text, jr_sim_name(c.sim, (unsigned)ml));
    /* malformed: trailing byte, truncated, unknown what, limit 0 or over the page, bad filter */
    jr__buf_u8(&b, 0);
    ck_assert_int_eq(raw_call(&c, f, (unsigned)ml, b.data, b.len, &a), JR_EINVAL);
    ck_assert_int_eq(raw_call(&c, f, (unsigned)ml, b.data, 2, &a), JR_EINVAL);
    static const uint8_t bad_what[] = {3, 0, 0, 1};
    ck_assert_int_eq(raw_call(&c, f, (unsigned)ml, bad_what, sizeof bad_what, &a), JR_EINVAL);
    static const uint8_t zero_limit[] = {1, 0, 0, 0};
    ck_assert_int_eq(raw_call(&c, f, (unsigned)ml, zero_limit, sizeof zero_limit, &a), JR_EINVAL);
    static const uint8_t big_limit[] = {1, 0, 0, 0x81, 0x08}; /* 1,025 */
    ck_assert_int_eq(raw_call(&c, f, (unsigned)ml, big_limit, sizeof big_limit, &a), JR_EINVAL);
    static const uint8_t bad_filter[] = {1, 3, 'a', '.', '.', 0, 1};
    ck_assert_int_eq(raw_call(&c, f, (unsigned)ml, bad_filter, sizeof bad_filter, &a), JR_EINVAL);
    static const uint8_t no_stream[] = {2, 1, 'X', 0, 1};
    ck_assert_int_eq(raw_call(&c, f, (unsigned)ml, no_stream, sizeof no_stream, &a), JR_ENOSTREAM);
    jr__buf_free(&b);
    e2e_free(&c);
}
END_TEST

/* A server whose meta state is behind (it was cut off while streams were added) lists what
 * the meta leader has: the streams it does not know yet are not taken for deleted ones. */
START_TEST(a_server_behind_the_meta_leader_lists_every_stream)
{
    e2e c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(e2e_new(&c, 3, 25, 2000), 0);
    int ml = e2e_wait_meta(&c, 3, 10 * SEC);
    ck_assert_int_ge(ml, 0);
    unsigned f = (unsigned)(ml + 1) % 3, g = (unsigned)(ml + 2) % 3;
    unsigned side[] = {f};
    ck_assert_int_eq(jr_sim_partition(c.sim, side, 1), 0);
    static char names[40][8], subj[40][8];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "L%02d", i);
        snprintf(subj[i], sizeof subj[i], "l.%d", i);
        const char *sp[] = {subj[i]};
        jr_stream_config cfg;
        e2e_config(&cfg, names[i], sp, 1, 1);
        cfg.storage = JR_STORAGE_MEMORY;
        e2e_res er;
        ck_assert_msg(e2e_add(&c, g, &cfg, &er) == 0, "%s", er.msg);
    }
    ck_assert_uint_eq(e2e_meta_streams(&c, f), 0);
    jr_sim_heal(c.sim);
    lres *r = stream_list(&c, f, NULL, 0);
    ck_assert_msg(r->status == 0, "%s", r->msg);
    ck_assert_uint_eq(r->total, 40);
    ck_assert_uint_eq(r->nmissing, 0);
    ck_assert_uint_eq(r->n, 40);
    for (int i = 0; i < 40; i++) ck_assert_str_eq(r->names[i], names[i]);
    e2e_free(&c);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Consumers
 */

static void admin_cb(void *arg, int status, const char *msg)
{
    begin(arg, status, msg);
}

static void consumer_cb(void *arg, int status, const char *msg, const char *name)
{
    (void)name;
    begin(arg, status, msg);
}

static void setup_orders(e2e *c, unsigned nodes, uint64_t seed, int replicas, int allow_direct)
{
    memset(c, 0, sizeof *c);
    ck_assert_int_eq(e2e_new(c, nodes, seed, 2000), 0);
    ck_assert_int_ge(e2e_wait_meta(c, nodes, 10 * SEC), 0);
    const char *subj[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, replicas);
    cfg.allow_direct = allow_direct;
    e2e_res r;
    ck_assert_msg(e2e_add(c, 0, &cfg, &r) == 0, "add: %s", r.msg);
    ck_assert_int_ge(e2e_wait_stream(c, 0, "ORDERS", (size_t)replicas - 1, 10 * SEC), 0);
}

static void add_durable(e2e *c, unsigned node, const char *name, const char *filter)
{
    jr_consumer_config cfg;
    jr_consumer_config_init(&cfg);
    cfg.durable_name = name;
    cfg.filter_subject = filter;
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(jr_consumer_add(e2e_node(c, node), "ORDERS", &cfg, consumer_cb, &res), 0);
    wait_done(c, &res);
    ck_assert_msg(res.status == 0, "consumer %s: %s", name, res.msg);
}

START_TEST(consumers_listed_after_create_and_gone_after_delete)
{
    e2e c;
    setup_orders(&c, 3, 31, 3, 0);
    for (int i = 0; i < 4; i++) {
        e2e_res er;
        ck_assert_int_eq(
            e2e_publish(&c, (unsigned)i % 3, i % 2 ? "orders.eu" : "orders.us", "x", 1, NULL, &er),
            0);
    }
    for (unsigned node = 0; node < 3; node++) {
        lres *r = consumer_names(&c, node, "ORDERS", 0);
        ck_assert_msg(r->status == 0, "%s", r->msg);
        ck_assert_uint_eq(r->total, 0);
        ck_assert_uint_eq(r->n, 0);
    }
    add_durable(&c, 2, "dur_c", "orders.eu");
    add_durable(&c, 1, "dur_a", NULL);
    add_durable(&c, 0, "dur_b", "orders.us");
    for (unsigned node = 0; node < 3; node++) {
        lres *r = consumer_names(&c, node, "ORDERS", 0);
        ck_assert_msg(r->status == 0, "%s", r->msg);
        ck_assert_uint_eq(r->total, 3);
        ck_assert_uint_eq(r->limit, JR_NAMES_LIMIT);
        ck_assert_uint_eq(r->n, 3);
        ck_assert_str_eq(r->names[0], "dur_a");
        ck_assert_str_eq(r->names[1], "dur_b");
        ck_assert_str_eq(r->names[2], "dur_c");
        r = consumer_list(&c, node, "ORDERS", 0);
        ck_assert_msg(r->status == 0, "%s", r->msg);
        ck_assert_uint_eq(r->total, 3);
        ck_assert_uint_eq(r->limit, JR_LIST_LIMIT);
        ck_assert_uint_eq(r->n, 3);
        ck_assert_uint_eq(r->nmissing, 0);
        ck_assert_str_eq(r->names[0], "dur_a");
        ck_assert_uint_eq(r->msgs[0], 4); /* num_pending */
        ck_assert_str_eq(r->names[1], "dur_b");
        ck_assert_uint_eq(r->msgs[1], 2);
        ck_assert_str_eq(r->names[2], "dur_c");
        ck_assert_uint_eq(r->msgs[2], 2);
        ck_assert_str_ne(r->leader[0], "");
    }
    lres *r = consumer_names(&c, 1, "ORDERS", 1);
    ck_assert_uint_eq(r->offset, 1);
    ck_assert_uint_eq(r->n, 2);
    ck_assert_str_eq(r->names[0], "dur_b");
    r = consumer_list(&c, 1, "ORDERS", 9);
    ck_assert_uint_eq(r->offset, 3);
    ck_assert_uint_eq(r->n, 0);
    /* delete one: gone at once, asked anywhere */
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(jr_consumer_delete(e2e_node(&c, 1), "ORDERS", "dur_b", admin_cb, &res), 0);
    wait_done(&c, &res);
    ck_assert_int_eq(res.status, 0);
    for (unsigned node = 0; node < 3; node++) {
        r = consumer_names(&c, node, "ORDERS", 0);
        ck_assert_uint_eq(r->total, 2);
        ck_assert_str_eq(r->names[0], "dur_a");
        ck_assert_str_eq(r->names[1], "dur_c");
        r = consumer_list(&c, node, "ORDERS", 0);
        ck_assert_uint_eq(r->n, 2);
        ck_assert_str_eq(r->names[1], "dur_c");
    }
    /* unknown stream, and a stream deleted with its consumers */
    r = consumer_names(&c, 0, "NOPE", 0);
    ck_assert_int_eq(r->status, JR_ENOSTREAM);
    e2e_res er;
    ck_assert_int_eq(e2e_delete(&c, 2, "ORDERS", &er), 0);
    r = consumer_list(&c, 0, "ORDERS", 0);
    ck_assert_int_eq(r->status, JR_ENOSTREAM);
    r = stream_names(&c, 1, NULL, 0);
    ck_assert_uint_eq(r->total, 0);
    e2e_free(&c);
}
END_TEST

/* A consumer whose only replica's server is down is named missing in the list; its name is still
 * listed (the meta state has it). */
START_TEST(consumer_list_names_the_missing)
{
    e2e c;
    setup_orders(&c, 5, 32, 3, 0);
    int ml = e2e_meta_leader(&c);
    ck_assert_int_ge(ml, 0);
    static char names[8][8];
    int victim = -1;
    unsigned victim_node = 0;
    for (int i = 0; i < 8 && victim < 0; i++) {
        snprintf(names[i], sizeof names[i], "c%d", i);
        jr_consumer_config cfg;
        jr_consumer_config_init(&cfg);
        cfg.durable_name = names[i];
        cfg.num_replicas = 1;
        memset(&res, 0, sizeof res);
        ck_assert_int_eq(jr_consumer_add(e2e_node(&c, 1), "ORDERS", &cfg, consumer_cb, &res), 0);
        wait_done(&c, &res);
        ck_assert_msg(res.status == 0, "%s", res.msg);
        const jr__meta_stream *s = jr__meta_stream_find(&jr__js_of(e2e_node(&c, 1))->st, "ORDERS");
        ck_assert_ptr_nonnull(s);
        for (size_t k = 0; k < s->nconsumers; k++) {
            if (strcmp(s->consumers[k]->name, names[i]) != 0) continue;
            ck_assert_uint_eq(s->consumers[k]->npeers, 1);
            int idx = jr_sim_index(c.sim, s->consumers[k]->peers[0]);
            ck_assert_int_ge(idx, 0);
            if (idx != ml) victim = i, victim_node = (unsigned)idx;
        }
    }
    ck_assert_int_ge(victim, 0);
    size_t n = (size_t)victim + 1;
    lres *r = consumer_list(&c, 0, "ORDERS", 0);
    ck_assert_msg(r->status == 0, "%s", r->msg);
    ck_assert_uint_eq(r->n, n);
    ck_assert_uint_eq(r->nmissing, 0);
    ck_assert_int_eq(jr_sim_crash(c.sim, victim_node), 0);
    unsigned via = (unsigned)ml;
    r = consumer_list(&c, via, "ORDERS", 0);
    ck_assert_msg(r->status == 0, "%s", r->msg);
    ck_assert_uint_eq(r->total, n);
    ck_assert_uint_eq(r->n, n - 1);
    ck_assert_uint_eq(r->nmissing, 1);
    ck_assert_str_eq(r->missing[0], names[victim]);
    r = consumer_names(&c, via, "ORDERS", 0);
    ck_assert_uint_eq(r->n, n);
    e2e_free(&c);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Direct get
 */

static void publish_orders(e2e *c, int n)
{
    for (int i = 0; i < n; i++) {
        char data[32];
        snprintf(data, sizeof data, "order %d", i + 1);
        e2e_res er;
        ck_assert_int_eq(e2e_publish(c, (unsigned)i % 3, i % 2 ? "orders.eu" : "orders.us", data,
                                     strlen(data), NULL, &er),
                         0);
    }
    jr_sim_run_for(c->sim, 2 * SEC); /* the followers apply what they were sent */
}

START_TEST(direct_get_from_every_node)
{
    e2e c;
    setup_orders(&c, 4, 41, 3, 1);
    publish_orders(&c, 10);
    unsigned peers[3];
    ck_assert_int_eq(e2e_meta_peers(&c, 0, "ORDERS", peers, 3), 3);
    int outsider = -1;
    for (unsigned i = 0; i < 4; i++)
        if (!e2e_has_replica(&c, i, "ORDERS")) outsider = (int)i;
    ck_assert_int_ge(outsider, 0); /* one server holds no replica, and asks the others */
    for (unsigned node = 0; node < 4; node++) {
        for (uint64_t seq = 1; seq <= 10; seq++) {
            lres *r = direct(&c, node, seq, NULL);
            ck_assert_msg(r->status == 0, "node %u seq %llu: %s", node, (unsigned long long)seq,
                          r->msg);
            ck_assert_uint_eq(r->seq, seq);
            char want[32];
            snprintf(want, sizeof want, "order %llu", (unsigned long long)seq);
            ck_assert_str_eq(r->data, want);
            ck_assert_str_eq(r->subject, seq % 2 ? "orders.us" : "orders.eu");
        }
        lres *r = direct(&c, node, 0, "orders.eu"); /* last by subject */
        ck_assert_int_eq(r->status, 0);
        ck_assert_uint_eq(r->seq, 10);
        r = direct(&c, node, 0, "orders.*");
        ck_assert_uint_eq(r->seq, 10);
        r = direct(&c, node, 4, "orders.us"); /* next by subject from seq */
        ck_assert_int_eq(r->status, 0);
        ck_assert_uint_eq(r->seq, 5);
        r = direct(&c, node, 11, NULL);
        ck_assert_int_eq(r->status, JR_ENOTFOUND);
        r = direct(&c, node, 0, "orders.none");
        ck_assert_int_eq(r->status, JR_ENOTFOUND);
        r = direct(&c, node, 0, NULL);
        ck_assert_int_eq(r->status, JR_EINVAL);
    }
    /* a deleted message is gone from every replica once applied */
    e2e_res er;
    ck_assert_int_eq(e2e_msg_delete(&c, 1, "ORDERS", 3, &er), 0);
    jr_sim_run_for(c.sim, 2 * SEC);
    for (unsigned node = 0; node < 4; node++)
        ck_assert_int_eq(direct(&c, node, 3, NULL)->status, JR_ENOTFOUND);
    /* with one follower down, every other server still answers */
    int leader = e2e_wait_stream(&c, 0, "ORDERS", 2, 10 * SEC);
    ck_assert_int_ge(leader, 0);
    unsigned down = peers[0] == (unsigned)leader ? peers[1] : peers[0];
    ck_assert_int_eq(jr_sim_crash(c.sim, down), 0);
    for (unsigned node = 0; node < 4; node++) {
        if (node == down) continue;
        lres *r = direct(&c, node, 7, NULL);
        ck_assert_msg(r->status == 0, "node %u: %s", node, r->msg);
        ck_assert_str_eq(r->data, "order 7");
    }
    e2e_free(&c);
}
END_TEST

/* A replica cut off from its leader stops answering direct gets once it can no longer tell it is
 * current (two election timeouts without its leader): asked there, the request goes to the
 * other replicas, and with none reachable it times out instead of answering from a stale
 * store. Healed, it catches up and answers with what it missed. */
START_TEST(direct_get_skips_a_replica_cut_off_from_its_leader)
{
    e2e c;
    setup_orders(&c, 3, 43, 3, 1);
    publish_orders(&c, 5);
    int leader = e2e_wait_stream(&c, 0, "ORDERS", 2, 10 * SEC);
    ck_assert_int_ge(leader, 0);
    unsigned f = (unsigned)(leader + 1) % 3;
    unsigned side[] = {f};
    ck_assert_int_eq(jr_sim_partition(c.sim, side, 1), 0);
    e2e_res er;
    unsigned other = (unsigned)(leader + 2) % 3;
    ck_assert_int_eq(e2e_publish(&c, other, "orders.eu", "order 6", 7, NULL, &er), 0);
    jr_sim_run_for(c.sim, 5 * SEC);
    lres *r = direct(&c, f, 6, NULL);
    ck_assert_msg(r->status == JR_ETIMEDOUT, "%d %s", r->status, r->msg);
    r = direct(&c, f, 2, NULL); /* what it holds is not served either: it may be stale */
    ck_assert_int_eq(r->status, JR_ETIMEDOUT);
    r = direct(&c, other, 6, NULL); /* the connected side answers */
    ck_assert_msg(r->status == 0, "%s", r->msg);
    ck_assert_str_eq(r->data, "order 6");
    jr_sim_heal(c.sim);
    jr_sim_run_for(c.sim, 5 * SEC);
    r = direct(&c, f, 6, NULL);
    ck_assert_msg(r->status == 0, "%s", r->msg);
    ck_assert_str_eq(r->data, "order 6");
    e2e_free(&c);
}
END_TEST

static void update_direct(e2e *c, unsigned node, int allow_direct)
{
    const char *subj[] = {"orders.>"};
    jr_stream_config cfg;
    e2e_config(&cfg, "ORDERS", subj, 1, 3);
    cfg.allow_direct = allow_direct;
    e2e_res r;
    ck_assert_msg(e2e_update(c, node, &cfg, &r) == 0, "update: %s", r.msg);
    jr_sim_run_for(c->sim, SEC); /* every server's meta state applied it */
}

START_TEST(direct_get_needs_allow_direct_which_update_changes)
{
    e2e c;
    setup_orders(&c, 4, 42, 3, 0);
    publish_orders(&c, 3);
    e2e_res ir;
    ck_assert_int_eq(e2e_info(&c, 3, "ORDERS", &ir), 0);
    for (unsigned node = 0; node < 4; node++) {
        lres *r = direct(&c, node, 1, NULL);
        ck_assert_int_eq(r->status, JR_EDENIED);
        ck_assert_msg(strstr(r->msg, "allow_direct") != NULL, "%s", r->msg);
    }
    /* the leader read still works */
    e2e_res mr;
    ck_assert_int_eq(e2e_msg_get(&c, 3, "ORDERS", 2, &mr), 0);
    update_direct(&c, 1, 1);
    lres *l = stream_list(&c, 2, NULL, 0);
    ck_assert_uint_eq(l->n, 1);
    ck_assert_int_eq(l->allow_direct[0], 1);
    for (unsigned node = 0; node < 4; node++) {
        lres *r = direct(&c, node, 2, NULL);
        ck_assert_msg(r->status == 0, "node %u: %s", node, r->msg);
        ck_assert_str_eq(r->data, "order 2");
    }
    update_direct(&c, 2, 0);
    l = stream_list(&c, 0, NULL, 0);
    ck_assert_int_eq(l->allow_direct[0], 0);
    for (unsigned node = 0; node < 4; node++)
        ck_assert_int_eq(direct(&c, node, 2, NULL)->status, JR_EDENIED);
    /* unknown stream */
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(jr_stream_direct_get(e2e_node(&c, 0), "NOPE", 1, NULL, msg_cb, &res), 0);
    wait_done(&c, &res);
    ck_assert_int_eq(res.status, JR_ENOTFOUND);
    e2e_free(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lists");
    TCase *tc = tcase_create("lists");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, stream_names_are_sorted_paged_and_filtered);
    tcase_add_test(tc, stream_list_gives_each_leaders_info_and_names_the_missing);
    tcase_add_test(tc, lists_need_a_meta_leader);
    tcase_add_test(tc, a_server_behind_the_meta_leader_lists_every_stream);
    tcase_add_test(tc, a_names_request_is_checked_and_answered_by_the_meta_leader_only);
    tcase_add_test(tc, consumers_listed_after_create_and_gone_after_delete);
    tcase_add_test(tc, consumer_list_names_the_missing);
    tcase_add_test(tc, direct_get_from_every_node);
    tcase_add_test(tc, direct_get_skips_a_replica_cut_off_from_its_leader);
    tcase_add_test(tc, direct_get_needs_allow_direct_which_update_changes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
