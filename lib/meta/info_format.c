/* info_format — jr_stream_info_format(): the public face of the Cluster Information renderer. */
#include "jetraft.h"
#include "meta/cluster_info.h"


/* Replicas rendered without allocating; a stream has at most JR_MAX_REPLICAS members, and the
 * meta view of a peer-managed group a few more while observers catch up. */
#define INFO_MAX_REPLICAS 16

int jr_stream_info_format(const jr_stream_info *info, char *buf, size_t len)
{
    if (!info || info->size < sizeof(jr_stream_info) || (!buf && len) ||
        info->cluster.nreplicas > INFO_MAX_REPLICAS ||
        (info->cluster.nreplicas && !info->cluster.replicas))
        return JR_EINVAL;
    jr__replica_view reps[INFO_MAX_REPLICAS];
    for (size_t i = 0; i < info->cluster.nreplicas; i++) {
        const jr_peer_info *p = &info->cluster.replicas[i];
        reps[i] = (jr__replica_view){.name = p->name,
                                     .current = p->current,
                                     .offline = p->offline,
                                     .observer = p->observer,
                                     .pending = p->pending,
                                     .seen_ns = p->active_ns,
                                     .lag = p->lag};
    }
    jr__cluster_view v = {.cluster = info->cluster.name,
                          .group = info->cluster.group,
                          .leader = info->cluster.leader,
                          .replicas = reps,
                          .nreplicas = info->cluster.nreplicas};
    return jr__cluster_view_format(&v, 0, buf, len);
}
