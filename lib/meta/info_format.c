/* info_format — jr_stream_info_format(): the public face of the Cluster Information renderer. */
#include <stddef.h>
#include <string.h>

#include "jetraft.h"
#include "meta/cluster_info.h"

/* Replicas rendered without allocating; a stream has at most JR_MAX_REPLICAS members, and the
 * meta view of a peer-managed group a few more while observers catch up. */
#define INFO_MAX_REPLICAS 16

/* 1 if a struct of `size` bytes holds the field that ends at `end`. */
#define HAS(size, type, field) ((size) >= offsetof(type, field) + sizeof(((type *)0)->field))

int jr_stream_info_format(const jr_stream_info *info, char *buf, size_t len)
{
    if (!info || !HAS(info->size, jr_stream_info, cluster) || !info->cluster || (!buf && len))
        return JR_EINVAL;
    const jr_cluster_info *ci = info->cluster;
    if (!HAS(ci->size, jr_cluster_info, nreplicas) || ci->nreplicas > INFO_MAX_REPLICAS ||
        (ci->nreplicas && !ci->replicas))
        return JR_EINVAL;
    jr__replica_view reps[INFO_MAX_REPLICAS];
    for (size_t i = 0; i < ci->nreplicas; i++) {
        /* a replica line as its size says; fields it does not have read as 0 */
        jr_peer_info p;
        memset(&p, 0, sizeof p);
        const jr_peer_info *in = ci->replicas[i];
        if (!in || !HAS(in->size, jr_peer_info, name)) return JR_EINVAL;
        memcpy(&p, in, in->size < sizeof p ? in->size : sizeof p);
        if (!HAS(in->size, jr_peer_info, active_ns)) p.active_ns = UINT64_MAX;
        reps[i] = (jr__replica_view){.name = p.name,
                                     .current = p.current && !p.damaged && !p.unvouched,
                                     .offline = p.offline,
                                     .observer = p.observer,
                                     .pending = p.pending,
                                     .damaged = p.damaged,
                                     .unvouched = p.unvouched,
                                     .seen_ns = p.active_ns,
                                     .lag = p.lag};
    }
    jr__cluster_view v = {.cluster = ci->name,
                          .group = ci->group,
                          .leader = ci->leader,
                          .replicas = reps,
                          .nreplicas = ci->nreplicas};
    return jr__cluster_view_format(&v, 0, buf, len);
}
