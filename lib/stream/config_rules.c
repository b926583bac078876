/* config_rules — equality of stream configurations and JetStream's update rules (config.h).
 *
 * The update rules follow nats-server's stream update check: the name, storage type and
 * max_consumers are fixed; retention may switch between limits and interest but never to or from
 * workqueue; sealed, deny_delete and deny_purge can be set but never cleared; a placement change
 * (a move) can not be combined with a replica change in one update. Everything else may change.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "stream/config.h"
#include "util/strblock.h"

/* Placements of two normal forms. */
static int placement_eq(const jr_stream_config *a, const jr_stream_config *b)
{
    size_t na, nb;
    const char *const *ta = jr__stream_placement_tags(a, &na);
    const char *const *tb = jr__stream_placement_tags(b, &nb);
    return jr__str_eq(jr__stream_placement_cluster(a), jr__stream_placement_cluster(b)) &&
           jr__strv_eq(ta, na, tb, nb);
}

int jr__stream_config_equal(const jr_stream_config *x, const jr_stream_config *y)
{
    jr__stream_norm nx, ny;
    jr__stream_config_normalize(x, &nx);
    jr__stream_config_normalize(y, &ny);
    const jr_stream_config *a = &nx.c, *b = &ny.c;
    return jr__str_eq(a->name, b->name) && jr__str_eq(a->description, b->description) &&
           jr__strv_eq(a->subjects, a->nsubjects, b->subjects, b->nsubjects) &&
           a->retention == b->retention && a->max_consumers == b->max_consumers &&
           a->max_msgs == b->max_msgs && a->max_bytes == b->max_bytes &&
           a->max_age_ns == b->max_age_ns && a->max_msgs_per_subject == b->max_msgs_per_subject &&
           a->max_msg_size == b->max_msg_size && a->discard == b->discard &&
           a->storage == b->storage && a->replicas == b->replicas &&
           a->duplicate_window_ns == b->duplicate_window_ns && placement_eq(a, b) &&
           a->sealed == b->sealed && a->deny_delete == b->deny_delete &&
           a->deny_purge == b->deny_purge && a->allow_rollup == b->allow_rollup &&
           a->compression == b->compression &&
           jr__kvs_eq(a->metadata, a->nmetadata, b->metadata, b->nmetadata) &&
           a->allow_direct == b->allow_direct;
}

static const char *retention_name(int r)
{
    switch (r) {
    case JR_RETAIN_LIMITS:
        return "limits";
    case JR_RETAIN_INTEREST:
        return "interest";
    default:
        return "workqueue";
    }
}

int jr__stream_config_check_update(const jr_stream_config *old, const jr_stream_config *upd,
                                   char *msg, size_t msglen)
{
    int rc = jr__stream_config_validate(upd, msg, msglen);
    if (rc) return rc;
    jr__stream_norm no, nu;
    jr__stream_config_normalize(old, &no);
    jr__stream_config_normalize(upd, &nu);
    const jr_stream_config *o = &no.c, *u = &nu.c;
    if (strcmp(o->name, u->name) != 0)
        return jr__stream_config_fail(
            msg, msglen, "name: can not be changed (\"%s\" is not \"%s\")", u->name, o->name);
    if (o->storage != u->storage)
        return jr__stream_config_fail(msg, msglen, "storage: can not be changed");
    if (o->max_consumers != u->max_consumers)
        return jr__stream_config_fail(msg, msglen, "max_consumers: can not be changed");
    if (o->retention != u->retention &&
        (o->retention == JR_RETAIN_WORKQUEUE || u->retention == JR_RETAIN_WORKQUEUE))
        return jr__stream_config_fail(
            msg, msglen,
            "retention: can not change from %s to %s (only between limits "
            "and interest)",
            retention_name(o->retention), retention_name(u->retention));
    if (o->sealed && !u->sealed)
        return jr__stream_config_fail(msg, msglen, "sealed: can not unseal a sealed stream");
    if (o->deny_delete && !u->deny_delete)
        return jr__stream_config_fail(msg, msglen, "deny_delete: can not be cleared once set");
    if (o->deny_purge && !u->deny_purge)
        return jr__stream_config_fail(msg, msglen, "deny_purge: can not be cleared once set");
    if (!placement_eq(o, u) && o->replicas != u->replicas)
        return jr__stream_config_fail(msg, msglen,
                                      "placement: can not move and change replicas (%d to %d) in "
                                      "one update",
                                      o->replicas, u->replicas);
    return 0;
}
