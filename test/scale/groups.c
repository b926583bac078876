/* groups — helpers of the scale tests (groups.h). */
#include "groups.h"

#include <check.h>
#include <stdlib.h>

#define MAX_VOTERS 16

void sg_open(jr_sim *sim, unsigned nodes, unsigned i, uint64_t gid, jr_fsm *f, void *ctx,
             void (*apply)(void *ctx, uint64_t index, const void *data, size_t len))
{
    ck_assert_uint_le(nodes, MAX_VOTERS);
    const char *voters[MAX_VOTERS];
    for (unsigned k = 0; k < nodes; k++) voters[k] = jr_sim_name(sim, k);
    *f = (jr_fsm){.version = JR_FSM_VERSION, .ctx = ctx, .apply = apply};
    jr_group_config gc;
    jr_group_config_init(&gc);
    gc.id = gid;
    gc.voters = voters;
    gc.nvoters = nodes;
    gc.fsm = f;
    jr_group *g;
    ck_assert_int_eq(jr_group_open(jr_sim_node(sim, i), &gc, &g), 0);
}

uint64_t sg_env(const char *name, uint64_t dflt)
{
    const char *e = getenv(name);
    return e ? strtoull(e, NULL, 10) : dflt;
}

jr_sim *sg_new(unsigned nodes, uint64_t seed)
{
    jr_sim_config cfg;
    jr_sim_config_init(&cfg);
    cfg.nodes = nodes;
    cfg.seed = seed;
    jr_sim *sim;
    ck_assert_int_eq(jr_sim_new(&cfg, &sim), 0);
    return sim;
}

static void ignore(void *ctx, uint64_t index, const void *data, size_t len)
{
    (void)ctx;
    (void)index;
    (void)data;
    (void)len;
}

void sg_open_all(jr_sim *sim, unsigned nodes, uint64_t groups, jr_fsm *fsms)
{
    for (unsigned i = 0; i < nodes; i++)
        for (uint64_t gid = 1; gid <= groups; gid++)
            sg_open(sim, nodes, i, gid, &fsms[i * (groups + 1) + gid], NULL, ignore);
}

jr__raft *sg_raft(jr_sim *sim, unsigned i, uint64_t gid)
{
    jr_node *n = jr_sim_node(sim, i);
    jr_group *g = n ? jr_node_group(n, gid) : NULL;
    return g ? jr__group_raft(g) : NULL;
}

uint64_t sg_max_term(jr_sim *sim, unsigned nodes, uint64_t gid)
{
    uint64_t t = 0;
    for (unsigned i = 0; i < nodes; i++) {
        jr__raft *r = sg_raft(sim, i, gid);
        if (r && jr__raft_term(r) > t) t = jr__raft_term(r);
    }
    return t;
}

int sg_ready_leader(jr_sim *sim, unsigned nodes, uint64_t gid)
{
    for (unsigned i = 0; i < nodes; i++) {
        jr__raft *r = sg_raft(sim, i, gid);
        if (r && jr__raft_role(r) == JR_LEADER && jr__raft_ready(r)) return (int)i;
    }
    return -1;
}
