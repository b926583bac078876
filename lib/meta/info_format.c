/* info_format — jr_stream_info_format(): the public face of the Cluster Information renderer,
 * and the Migration Information section that follows it while a peer change runs
 * (info_format.h). */
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
        reps[i] =
            (jr__replica_view){.name = p.name,
                               .current = p.current && !p.damaged && !p.unvouched && !p.fsm_failed,
                               .offline = p.offline,
                               .observer = p.observer,
                               .pending = p.pending,
                               .damaged = p.damaged,
                               .unvouched = p.unvouched,
                               .fsm_failed = p.fsm_failed,
                               .fsm_rebuilding = p.fsm_failed && p.fsm_rebuilding,
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

static const char *status_word(int status)
{
    static const char *const words[] = {"meta",   "membership", "snapshot",   "catchup",
                                        "quorum", "blocked",    "unavailable"};
    return status >= JR_MOVE_META && status <= JR_MOVE_UNAVAILABLE ? words[status - 1] : "unknown";
}

static void emit_names(jr__fmt *o, const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++) jr__fmt_emit(o, "%s%s", i ? ", " : "", v[i] ? v[i] : "");
    jr__fmt_emit(o, "\n");
}

int jr__move_format(const jr_cluster_info *ci, int label_width, char *buf, size_t len)
{
    if (!buf && len) return JR_EINVAL;
    if (buf && len) buf[0] = '\0';
    if (!ci || !JR__HAS(ci->size, jr_cluster_info, move) || !ci->move) return 0;
    const jr_move_info *m = ci->move;
    if (!JR__HAS(m->size, jr_move_info, error) || (m->ntarget && !m->target) ||
        (m->norigin && !m->origin))
        return JR_EINVAL;
    if (label_width == 0) label_width = JR__CLUSTER_INFO_LABEL_WIDTH;
    jr__fmt o = {buf, len, 0};
    jr__fmt_emit(&o, "Migration Information:\n\n");
    jr__fmt_label(&o, label_width, "Status");
    jr__fmt_emit(&o, "%s\n", status_word(m->status));
    if (m->description && *m->description) {
        jr__fmt_label(&o, label_width, "Description");
        jr__fmt_emit(&o, "%s\n", m->description);
    }
    if (m->error && *m->error) {
        jr__fmt_label(&o, label_width, "Error");
        jr__fmt_emit(&o, "%s\n", m->error);
    }
    jr__fmt_label(&o, label_width, "Target Peers");
    emit_names(&o, m->target, m->ntarget);
    if (m->norigin) {
        jr__fmt_label(&o, label_width, "Origin Peers");
        emit_names(&o, m->origin, m->norigin);
    }
    jr__fmt_emit(&o, "\n");
    if (o.need > (size_t)INT32_MAX) return JR_ERANGE;
    return (int)o.need;
}

int jr_stream_info_format(const jr_stream_info *info, char *buf, size_t len)
{
    if (!info || !JR__HAS(info->size, jr_stream_info, cluster) || !info->cluster || (!buf && len))
        return JR_EINVAL;
    jr__replica_view reps[JR__INFO_MAX_REPLICAS];
    jr__cluster_view v;
    int rc = jr__cluster_view_from_info(info->cluster, reps, &v);
    if (rc < 0) return rc;
    int k = jr__cluster_view_format(&v, 0, buf, len);
    if (k < 0 || k == 0) return k; /* not clustered: no migration either */
    char *dst = buf && (size_t)k < len ? buf + k : NULL;
    int m = jr__move_format(info->cluster, 0, dst, dst ? len - (size_t)k : 0);
    if (m < 0) return m;
    if ((uint64_t)k + (uint64_t)m > (uint64_t)INT32_MAX) return JR_ERANGE;
    return k + m;
}
