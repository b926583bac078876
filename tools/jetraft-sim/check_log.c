/*
 * check_log.c — state-machine safety, as the fixture's on_apply hook shows it: every node that
 * applies index i of a group applies the same entry there (same term, same bytes). It sees
 * every group — the meta group, every stream and consumer replica — without knowing what their
 * entries mean, so replicas that diverge (a damaged replica that kept applying, a split brain,
 * two leaders of one term) are caught on the step they diverge, not only at the end.
 *
 * Group ids are never reused (the meta group allocates them from one counter), so an index of a
 * group names one entry for the whole run. One exception is outside the fault model: a group
 * with a single voter (a churn stream of R1) can be vouched for by nobody and trusts its own
 * disk, so a disk fault on its server may cost it entries it applied, and it then logs others
 * at those indexes (also a replica whose lost records held the change that gave it peers: it
 * then believes itself alone). A conflict on a replica whose group has one member is therefore
 * noted rather than reported, and the group is left out of this check from then on.
 */
#include <stdlib.h>
#include <string.h>

#include "jsim.h"

struct applied {
    uint64_t group, index; /* group 0: an empty slot (group ids start at 1) */
    uint64_t hash;         /* of the term and the bytes */
    unsigned node;         /* the first node that applied it */
};

static uint64_t mix(uint64_t h, uint64_t x);

void applied_on_restore(void *arg, unsigned node, uint64_t group, uint64_t index)
{
    world *w = arg;
    const char *t = getenv("JSIM_TRACE_GROUP");
    if (t && strtoull(t, NULL, 10) == group && w->sim)
        fprintf(stderr, "[%9.3f] restore n%u group %llu snapshot at %llu\n", rel_s(w, now_ns(w)),
                node, (unsigned long long)group, (unsigned long long)index);
}

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static uint64_t entry_hash(uint64_t term, const void *data, size_t len)
{
    uint64_t h = mix(0xcbf29ce484222325ull, term);
    const unsigned char *p = data;
    uint64_t acc = 0;
    for (size_t i = 0; i < len; i++) {
        acc = (acc << 8) | p[i];
        if ((i & 7) == 7) h = mix(h, acc), acc = 0;
    }
    return mix(mix(h, acc), len);
}

static struct applied *slot(struct applied *t, size_t cap, uint64_t group, uint64_t index)
{
    size_t i = (size_t)mix(group, index) & (cap - 1);
    while (t[i].group && (t[i].group != group || t[i].index != index)) i = (i + 1) & (cap - 1);
    return &t[i];
}

void applied_each_group(world *w, void (*fn)(world *w, uint64_t group, void *arg), void *arg)
{
    uint64_t seen[64];
    size_t nseen = 0;
    for (size_t i = 0; i < w->capapplied; i++) {
        uint64_t g = w->applied[i].group;
        int dup = 0;
        for (size_t k = 0; k < nseen && !dup; k++) dup = seen[k] == g;
        if (!g || dup) continue;
        if (nseen < sizeof seen / sizeof seen[0]) seen[nseen++] = g;
        fn(w, g, arg);
    }
}

static void grow(world *w)
{
    size_t cap = w->capapplied ? w->capapplied * 2 : 1u << 14;
    struct applied *t = calloc(cap, sizeof *t);
    if (!t) exit(3);
    for (size_t i = 0; i < w->capapplied; i++)
        if (w->applied[i].group)
            *slot(t, cap, w->applied[i].group, w->applied[i].index) = w->applied[i];
    free(w->applied);
    w->applied = t;
    w->capapplied = cap;
}

void applied_record(void *arg, unsigned node, uint64_t group, uint64_t index, uint64_t term,
                    const void *data, size_t len)
{
    world *w = arg;
    if (w->napplied * 2 >= w->capapplied) grow(w);
    uint64_t h = entry_hash(term, data, len);
    /* JSIM_TRACE_GROUP=<id>: every entry that group applies, on every node (debugging) */
    static int trace_read;
    static uint64_t trace_group;
    if (!trace_read) {
        const char *t = getenv("JSIM_TRACE_GROUP");
        trace_group = t ? strtoull(t, NULL, 10) : 0;
        trace_read = 1;
    }
    if (trace_group == group && w->sim)
        fprintf(stderr, "[%9.3f] apply n%u group %llu index %llu term %llu len %zu hash %016llx\n",
                rel_s(w, now_ns(w)), node, (unsigned long long)group, (unsigned long long)index,
                (unsigned long long)term, len, (unsigned long long)h);
    struct applied *s = slot(w->applied, w->capapplied, group, index);
    if (!s->group) {
        s->group = group;
        s->index = index;
        s->hash = h;
        s->node = node;
        w->napplied++;
        return;
    }
    if (s->hash != h) {
        /* a group a single voter relogged: the entries other members still hold from before
         * differ from its new ones, for as long as they are re-applied */
        for (unsigned k = 0; k < w->nlone; k++)
            if (w->lone_groups[k] == group) return;
        /* a group one of whose one or two voters the disk nemesis damaged, noted as beyond the
         * fault model (faults.c only_replicas_lost): its victim then reports healthy, so the
         * nemesis may damage the other voter before the first is repaired, and an entry both
         * had applied is then lost to both */
        for (size_t k = 0; k < w->nlost_alone; k++)
            if (w->lost_alone[k] == group) return;
        jr_node *nd = w->sim ? jr_sim_node(w->sim, node) : NULL;
        jr_group *g = nd ? jr_node_group(nd, group) : NULL;
        jr_group_status st;
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        if (g && jr_group_status_get(g, &st) == 0 && st.npeers == 1) {
            nem_note(w,
                     "group %llu index %llu: n%u, its only replica, logged another entry "
                     "after losing the first to a disk fault",
                     (unsigned long long)group, (unsigned long long)index, node);
            s->hash = h;
            s->node = node;
            if (w->nlone < sizeof w->lone_groups / sizeof w->lone_groups[0])
                w->lone_groups[w->nlone++] = group;
            return;
        }
        w->apply_conflicts++;
        violation(w, "applied-log", "", -1, 0, -1,
                  "group %llu index %llu: n%u applied an entry (term %llu, %zu bytes) other "
                  "than the one n%u applied there",
                  (unsigned long long)group, (unsigned long long)index, node,
                  (unsigned long long)term, len, s->node);
    }
}

void applied_free(world *w)
{
    free(w->applied);
    w->applied = NULL;
    w->napplied = w->capapplied = 0;
}
