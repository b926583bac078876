/* info_format — jr_stream_info_format(): the public face of the Cluster Information renderer. */
#include "meta/info_format.h"

#include <string.h>

int jr__cluster_view_from_info(const jr_cluster_info *ci,
                               jr__replica_view reps[JR__INFO_MAX_REPLICAS], jr__cluster_view *v)
{
    if (!ci || !JR__HAS(ci->size, jr_cluster_info, nreplicas) ||
        ci->nreplicas > JR__INFO_MAX_REPLICAS || (ci->nreplicas && !ci->replicas))
        return JR_EINVAL;
    for (size_t i = 0; i < ci->nreplicas; i++) {
        /* a replica line as its size says; fields it does not have read as 0 */
        jr_peer_info p;
        memset(&p, 0, sizeof p);
        const jr_peer_info *in = ci->replicas[i];
        if (!in || !JR__HAS(in->size, jr_peer_info, name)) return JR_EINVAL;
        memcpy(&p, in, in->size < sizeof p ? in->size : sizeof p);
        if (!JR__HAS(in->size, jr_peer_info, active_ns)) p.active_ns = UINT64_MAX;
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
    *v = (jr__cluster_view){.cluster = ci->name,
                            .group = ci->group,
                            .leader = ci->leader,
                            .replicas = reps,
                            .nreplicas = ci->nreplicas};
    return 0;
}

int jr_stream_info_format(const jr_stream_info *info, char *buf, size_t len)
{
    if (!info || !JR__HAS(info->size, jr_stream_info, cluster) || !info->cluster || (!buf && len))
        return JR_EINVAL;
    jr__replica_view reps[JR__INFO_MAX_REPLICAS];
    jr__cluster_view v;
    int rc = jr__cluster_view_from_info(info->cluster, reps, &v);
    if (rc < 0) return rc;
    return jr__cluster_view_format(&v, 0, buf, len);
}
