/* placement — choosing the peers of a new or changing group (see placement.h).
 *
 * The choice is greedy: each round takes the best qualifying server whose unique tag value is
 * still free. Greedy is exact here: it fails only when fewer distinct unique values (or fewer
 * qualifying servers) exist than replicas are needed, which no other choice could avoid.
 * Nothing is allocated: rounds rescan the server list (O(n * replicas)), and a server's reason
 * is recomputed when it is needed.
 */
#include "placement.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/checksum.h"

typedef struct ctx {
    const jr__place_server *sv;
    size_t n;
    const jr__place_request *rq;
    const char *uprefix; /* unique tag prefix in force, or NULL */
    jr__place_result *res;
} ctx;

/* ---------------------------------------------------------------------------------------------
 * Message building: appends, truncating safely, always NUL-terminated.
 */
typedef struct text {
    char *p;
    size_t cap, len;
} text;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
put(text *t, const char *fmt, ...)
{
    if (!t->p || t->cap == 0 || t->len + 1 >= t->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    t->len += (size_t)k;
    if (t->len >= t->cap) t->len = t->cap - 1;
}

static int invalid(text *t, const char *what)
{
    put(t, "%s", what);
    return JR_EINVAL;
}

/* ---------------------------------------------------------------------------------------------
 * Tags and names
 */
static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static bool tag_eq(const char *a, const char *b)
{
    for (; *a && lower((unsigned char)*a) == lower((unsigned char)*b); a++, b++) continue;
    return lower((unsigned char)*a) == lower((unsigned char)*b);
}

static bool tag_prefix(const char *tag, const char *prefix)
{
    for (; *prefix; tag++, prefix++)
        if (!*tag || lower((unsigned char)*tag) != lower((unsigned char)*prefix)) return false;
    return true;
}

static bool has_tag(const jr__place_server *s, const char *t)
{
    for (size_t i = 0; i < s->ntags; i++)
        if (s->tags[i] && tag_eq(s->tags[i], t)) return true;
    return false;
}

int jr__placement_fits(const jr__place_server *s, const char *cluster, const char *const *tags,
                       size_t ntags)
{
    if (!s || !s->cluster || !cluster || strcmp(s->cluster, cluster) != 0) return 0;
    for (size_t k = 0; k < ntags; k++) {
        if (!tags[k] || !tags[k][0]) return 0;
        int excl = tags[k][0] == '!';
        if (excl != has_tag(s, tags[k] + excl)) continue;
        return 0;
    }
    return 1;
}

static const char *unique_value(const ctx *c, const jr__place_server *s)
{
    if (!c->uprefix) return NULL;
    for (size_t i = 0; i < s->ntags; i++)
        if (s->tags[i] && tag_prefix(s->tags[i], c->uprefix)) return s->tags[i];
    return NULL;
}

static bool in_list(const char *const *l, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (l[i] && strcmp(l[i], name) == 0) return true;
    return false;
}

static bool in_cluster(const ctx *c, const jr__place_server *s)
{
    return s->cluster && strcmp(s->cluster, c->rq->cluster) == 0;
}

static uint64_t free_bytes(const jr__place_server *s)
{
    if (s->capacity_bytes == 0) return UINT64_MAX;
    return s->used_bytes >= s->capacity_bytes ? 0 : s->capacity_bytes - s->used_bytes;
}

/* ---------------------------------------------------------------------------------------------
 * The decision for one server, ignoring the unique values taken by others: SPARE means it
 * qualifies. *tag gets the tag behind MISSING_TAG / EXCLUDED_TAG.
 */
static int classify(const ctx *c, size_t i, const char **tag)
{
    const jr__place_server *s = &c->sv[i];
    const jr__place_request *rq = c->rq;
    if (in_list(rq->keep, rq->nkeep, s->name)) return JR__PLACE_KEPT;
    if (!in_cluster(c, s)) return JR__PLACE_OTHER_CLUSTER;
    if (in_list(rq->avoid, rq->navoid, s->name)) return JR__PLACE_AVOIDED;
    if (s->draining) return JR__PLACE_DRAINING;
    if (!s->online) return JR__PLACE_OFFLINE;
    for (size_t k = 0; k < rq->ntags; k++) {
        if (rq->tags[k][0] == '!' && has_tag(s, rq->tags[k] + 1)) {
            if (tag) *tag = rq->tags[k] + 1;
            return JR__PLACE_EXCLUDED_TAG;
        }
    }
    for (size_t k = 0; k < rq->ntags; k++) {
        if (rq->tags[k][0] != '!' && !has_tag(s, rq->tags[k])) {
            if (tag) *tag = rq->tags[k];
            return JR__PLACE_MISSING_TAG;
        }
    }
    if (rq->max_bytes > 0 && free_bytes(s) < (uint64_t)rq->max_bytes) return JR__PLACE_NO_SPACE;
    if (s->max_assets && s->assets >= s->max_assets) return JR__PLACE_MAX_ASSETS;
    if (c->uprefix && !unique_value(c, s)) return JR__PLACE_NO_UNIQUE_TAG;
    return JR__PLACE_SPARE;
}

static bool picked(const ctx *c, size_t i)
{
    for (size_t k = 0; k < c->res->npeers; k++)
        if (c->res->peers[k] == i) return true;
    return false;
}

/* The picked peer already holding s's unique tag value, or SIZE_MAX. */
static size_t unique_holder(const ctx *c, const jr__place_server *s)
{
    const char *v = unique_value(c, s);
    if (!v) return SIZE_MAX;
    for (size_t k = 0; k < c->res->npeers; k++) {
        const char *w = unique_value(c, &c->sv[c->res->peers[k]]);
        if (w && tag_eq(v, w)) return c->res->peers[k];
    }
    return SIZE_MAX;
}

static uint64_t tiebreak(const ctx *c, const jr__place_server *s)
{
    return jr__xxh3_2(&c->rq->seed, sizeof c->rq->seed, s->name, strlen(s->name));
}

/* Is server a a better home than server b? Fewest assets, most free space, seeded hash, name. */
static bool better(const ctx *c, size_t a, size_t b)
{
    const jr__place_server *x = &c->sv[a], *y = &c->sv[b];
    if (x->assets != y->assets) return x->assets < y->assets;
    uint64_t fx = free_bytes(x), fy = free_bytes(y);
    if (fx != fy) return fx > fy;
    uint64_t hx = tiebreak(c, x), hy = tiebreak(c, y);
    if (hx != hy) return hx < hy;
    return strcmp(x->name, y->name) < 0;
}

/* ---------------------------------------------------------------------------------------------
 * Request checks
 */
static int check_request(ctx *c, text *t)
{
    const jr__place_request *rq = c->rq;
    if (rq->replicas < 1 || rq->replicas > JR_MAX_REPLICAS) {
        put(t, "replicas: must be 1..%d, not %d", JR_MAX_REPLICAS, rq->replicas);
        return JR_EINVAL;
    }
    if (!rq->cluster || !*rq->cluster) return invalid(t, "cluster: required");
    if (rq->ntags && !rq->tags) return invalid(t, "tags: NULL with ntags > 0");
    for (size_t k = 0; k < rq->ntags; k++)
        if (!rq->tags[k] || !rq->tags[k][0] || (rq->tags[k][0] == '!' && !rq->tags[k][1]))
            return invalid(t, "tags: empty tag");
    if ((rq->nkeep && !rq->keep) || (rq->navoid && !rq->avoid))
        return invalid(t, "keep/avoid: NULL list with a count");
    if (c->n && !c->sv) return invalid(t, "servers: NULL with a count");
    size_t incl = 0;
    for (size_t i = 0; i < c->n; i++) {
        const jr__place_server *s = &c->sv[i];
        if (!s->name || !*s->name) {
            put(t, "servers[%zu]: no name", i);
            return JR_EINVAL;
        }
        if (s->ntags && !s->tags) {
            put(t, "servers[%zu]: NULL tags", i);
            return JR_EINVAL;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(c->sv[j].name, s->name) == 0) {
                put(t, "servers[%zu]: duplicate name '%s'", i, s->name);
                return JR_EINVAL;
            }
        }
        if (in_cluster(c, s)) incl++;
    }
    if (incl == 0) {
        put(t, "cluster: no servers in cluster '%s'", rq->cluster);
        return JR_EINVAL;
    }
    if ((size_t)rq->replicas > incl) {
        put(t, "replicas: %d requested but cluster '%s' has %zu server%s", rq->replicas,
            rq->cluster, incl, incl == 1 ? "" : "s");
        return JR_EINVAL;
    }
    for (size_t k = 0; k < rq->nkeep; k++) {
        size_t i = 0;
        while (i < c->n && (!rq->keep[k] || strcmp(c->sv[i].name, rq->keep[k]) != 0)) i++;
        if (i == c->n) {
            put(t, "keep[%zu]: unknown server '%s'", k, rq->keep[k] ? rq->keep[k] : "(null)");
            return JR_EINVAL;
        }
        for (size_t j = 0; j < k; j++) {
            if (strcmp(rq->keep[j], rq->keep[k]) == 0) {
                put(t, "keep[%zu]: duplicate server '%s'", k, rq->keep[k]);
                return JR_EINVAL;
            }
        }
        if (k < (size_t)rq->replicas) c->res->peers[c->res->npeers++] = i;
    }
    return 0;
}

/* The unique prefix is in force unless a required tag already has it. */
static const char *unique_prefix(const jr__place_request *rq)
{
    if (!rq->unique_tag || !*rq->unique_tag) return NULL;
    for (size_t k = 0; k < rq->ntags; k++)
        if (rq->tags[k][0] != '!' && tag_prefix(rq->tags[k], rq->unique_tag)) return NULL;
    return rq->unique_tag;
}

/* ---------------------------------------------------------------------------------------------
 * Reasons and the message
 */
static int final_reason(const ctx *c, size_t i)
{
    int r = classify(c, i, NULL);
    if (r == JR__PLACE_KEPT) return picked(c, i) ? JR__PLACE_KEPT : JR__PLACE_SPARE;
    if (r != JR__PLACE_SPARE) return r;
    if (picked(c, i)) return JR__PLACE_CHOSEN;
    return unique_holder(c, &c->sv[i]) != SIZE_MAX ? JR__PLACE_UNIQUE_TAKEN : JR__PLACE_SPARE;
}

static bool any_reason(const ctx *c, int reason)
{
    for (size_t i = 0; i < c->n; i++)
        if (final_reason(c, i) == reason) return true;
    return false;
}

/* The request tags that some server of the cluster was refused for, as ['a', 'b']. */
static void put_tag_list(const ctx *c, text *t, int reason, const char *title)
{
    bool first = true;
    for (size_t k = 0; k < c->rq->ntags; k++) {
        const char *want = c->rq->tags[k][0] == '!' ? c->rq->tags[k] + 1 : c->rq->tags[k];
        bool seen = false;
        for (size_t i = 0; i < c->n && !seen; i++) {
            const char *tag = NULL;
            seen = classify(c, i, &tag) == reason && tag == want;
        }
        if (!seen) continue;
        if (first)
            put(t, ", %s ['%s'", title, want);
        else
            put(t, ", '%s'", want);
        first = false;
    }
    if (!first) put(t, "]");
}

static void put_server(const ctx *c, text *t, size_t i)
{
    const jr__place_server *s = &c->sv[i];
    const char *tag = NULL;
    int r = final_reason(c, i);
    (void)classify(c, i, &tag);
    put(t, "%s: ", s->name);
    switch (r) {
    case JR__PLACE_CHOSEN: /* only failures are explained: it qualified, nothing was placed */
        put(t, "qualifies");
        break;
    case JR__PLACE_EXCLUDED_TAG:
        put(t, "has excluded tag '%s'", tag);
        break;
    case JR__PLACE_MISSING_TAG:
        put(t, "lacks tag '%s'", tag);
        break;
    case JR__PLACE_NO_SPACE:
        put(t, "insufficient storage (needs %lld bytes, %llu free)", (long long)c->rq->max_bytes,
            (unsigned long long)free_bytes(s));
        break;
    case JR__PLACE_MAX_ASSETS:
        put(t, "asset limit reached (%u of %u)", s->assets, s->max_assets);
        break;
    case JR__PLACE_NO_UNIQUE_TAG:
        put(t, "no '%s' tag", c->uprefix);
        break;
    case JR__PLACE_UNIQUE_TAKEN:
        put(t, "'%s' already used by %s", unique_value(c, s), c->sv[unique_holder(c, s)].name);
        break;
    default:
        put(t, "%s", jr__place_reason_str(r));
    }
}

static void explain_failure(const ctx *c, text *t)
{
    put(t, "no suitable peers for placement");
    if (any_reason(c, JR__PLACE_OFFLINE)) put(t, ", peer offline");
    if (any_reason(c, JR__PLACE_DRAINING)) put(t, ", peer draining");
    if (any_reason(c, JR__PLACE_NO_SPACE)) put(t, ", insufficient storage");
    if (any_reason(c, JR__PLACE_UNIQUE_TAKEN) || any_reason(c, JR__PLACE_NO_UNIQUE_TAG))
        put(t, ", server tag not unique");
    if (any_reason(c, JR__PLACE_MAX_ASSETS)) put(t, ", asset limit reached");
    put_tag_list(c, t, JR__PLACE_MISSING_TAG, "tags not matched");
    put_tag_list(c, t, JR__PLACE_EXCLUDED_TAG, "tags excluded");
    put(t, ": cluster '%s' has %zu of the %d peers needed (", c->rq->cluster, c->res->npeers,
        c->rq->replicas);
    bool first = true;
    for (size_t i = 0; i < c->n; i++) {
        int r = final_reason(c, i);
        if (r == JR__PLACE_OTHER_CLUSTER) continue;
        if (!first) put(t, "; ");
        first = false;
        put_server(c, t, i);
    }
    put(t, ")");
}

const char *jr__place_reason_str(int reason)
{
    switch (reason) {
    case JR__PLACE_CHOSEN:
        return "chosen";
    case JR__PLACE_KEPT:
        return "kept";
    case JR__PLACE_SPARE:
        return "qualifies";
    case JR__PLACE_OTHER_CLUSTER:
        return "in another cluster";
    case JR__PLACE_AVOIDED:
        return "excluded by the request";
    case JR__PLACE_OFFLINE:
        return "offline";
    case JR__PLACE_EXCLUDED_TAG:
        return "has an excluded tag";
    case JR__PLACE_MISSING_TAG:
        return "lacks a required tag";
    case JR__PLACE_NO_SPACE:
        return "insufficient storage";
    case JR__PLACE_MAX_ASSETS:
        return "asset limit reached";
    case JR__PLACE_NO_UNIQUE_TAG:
        return "no unique tag";
    case JR__PLACE_UNIQUE_TAKEN:
        return "unique tag already used";
    case JR__PLACE_DRAINING:
        return "draining";
    default:
        return "unknown";
    }
}

int jr__placement_select(const jr__place_server *servers, size_t n, const jr__place_request *req,
                         jr__place_result *out, int *reasons, char *msg, size_t msglen)
{
    text t = {msg, msglen, 0};
    if (msg && msglen) msg[0] = '\0';
    if (!out) return invalid(&t, "result: NULL");
    out->npeers = 0;
    if (!req) return invalid(&t, "request: NULL");
    ctx c = {servers, n, req, NULL, out};
    int rc = check_request(&c, &t);
    if (rc) {
        out->npeers = 0;
        return rc;
    }
    c.uprefix = unique_prefix(req);

    while (out->npeers < (size_t)req->replicas) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < n; i++) {
            if (classify(&c, i, NULL) != JR__PLACE_SPARE || picked(&c, i)) continue;
            if (unique_holder(&c, &servers[i]) != SIZE_MAX) continue;
            if (best == SIZE_MAX || better(&c, i, best)) best = i;
        }
        if (best == SIZE_MAX) break;
        out->peers[out->npeers++] = best;
    }

    bool failed = out->npeers < (size_t)req->replicas;
    if (reasons) {
        for (size_t i = 0; i < n; i++) {
            reasons[i] = final_reason(&c, i);
            if (failed && reasons[i] == JR__PLACE_CHOSEN) reasons[i] = JR__PLACE_SPARE;
        }
    }
    if (failed) {
        explain_failure(&c, &t);
        out->npeers = 0;
        return JR_ENORESOURCES;
    }
    put(&t, "placed in cluster '%s' on ", req->cluster);
    for (size_t k = 0; k < out->npeers; k++)
        put(&t, "%s%s", k ? ", " : "", servers[out->peers[k]].name);
    return 0;
}
