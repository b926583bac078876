/* cluster_info — the "Cluster Information" block of `nats stream info` (see cluster_info.h). */
#include "cluster_info.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jetraft.h"

#define NS_PER_SEC 1000000000ULL

void jr__fmt_emit(jr__fmt *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *dst = NULL;
    size_t room = 0;
    if (o->buf && o->need < o->len) {
        dst = o->buf + o->need;
        room = o->len - o->need;
    }
    int k = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (k > 0) o->need += (size_t)k;
}

void jr__fmt_label(jr__fmt *o, int width, const char *label)
{
    int pad = width - (int)strlen(label) + 2;
    jr__fmt_emit(o, "%*s%s: ", pad > 0 ? pad : 0, "", label);
}

void jr__fmt_commas(jr__fmt *o, uint64_t n)
{
    char digits[24];
    int k = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
    if (n >= (uint64_t)INT64_MAX) { /* the CLI prints these without separators */
        jr__fmt_emit(o, "%s", digits);
        return;
    }
    for (int i = 0; i < k; i++) {
        if (i > 0 && (k - i) % 3 == 0) jr__fmt_emit(o, ",");
        jr__fmt_emit(o, "%c", digits[i]);
    }
}

void jr__fmt_duration(jr__fmt *o, uint64_t ns)
{
    uint64_t s = ns / NS_PER_SEC, m = s / 60, h = m / 60, d = h / 24, y = d / 365;
    if (y > 0)
        jr__fmt_emit(o, "%lluy%llud%lluh%llum%llus", (unsigned long long)y,
                     (unsigned long long)(d % 365), (unsigned long long)(h % 24),
                     (unsigned long long)(m % 60), (unsigned long long)(s % 60));
    else if (d > 0)
        jr__fmt_emit(o, "%llud%lluh%llum%llus", (unsigned long long)d, (unsigned long long)(h % 24),
                     (unsigned long long)(m % 60), (unsigned long long)(s % 60));
    else if (h > 0)
        jr__fmt_emit(o, "%lluh%llum%llus", (unsigned long long)h, (unsigned long long)(m % 60),
                     (unsigned long long)(s % 60));
    else if (m > 0)
        jr__fmt_emit(o, "%llum%llus", (unsigned long long)m, (unsigned long long)(s % 60));
    else /* as Go's Duration.Seconds(): whole seconds plus the fraction, then rounded */
        jr__fmt_emit(o, "%.2fs", (double)s + (double)(ns % NS_PER_SEC) / 1e9);
}

static void emit_replica(jr__fmt *o, int width, const jr__replica_view *r)
{
    jr__fmt_label(o, width, "Replica");
    jr__fmt_emit(o, "%s%s, %s", r->name, r->pending ? " (pending)" : "",
                 r->current && !r->damaged && !r->unvouched && !r->fsm_failed ? "current"
                                                                              : "outdated");
    if (r->damaged) jr__fmt_emit(o, ", damaged");
    if (r->unvouched) jr__fmt_emit(o, ", unvouched");
    if (r->fsm_failed)
        jr__fmt_emit(o,
                     r->fsm_rebuilding ? ", state machine rebuilding" : ", state machine failed");
    if (r->offline) jr__fmt_emit(o, ", OFFLINE");
    if (r->observer) jr__fmt_emit(o, ", observer");
    if (r->seen_ns < (uint64_t)INT64_MAX) {
        jr__fmt_emit(o, ", seen ");
        jr__fmt_duration(o, r->seen_ns);
        jr__fmt_emit(o, " ago");
    } else {
        jr__fmt_emit(o, ", not seen");
    }
    if (r->lag > 0) {
        jr__fmt_emit(o, ", ");
        jr__fmt_commas(o, r->lag);
        jr__fmt_emit(o, r->lag == 1 ? " operation behind" : " operations behind");
    }
    jr__fmt_emit(o, "\n");
}

int jr__cluster_view_format(const jr__cluster_view *v, int label_width, char *buf, size_t len)
{
    if (!v || (!buf && len > 0)) return JR_EINVAL;
    if (label_width == 0) label_width = JR__CLUSTER_INFO_LABEL_WIDTH;
    if (label_width < 13 || label_width > 64) return JR_EINVAL;
    if (v->nreplicas && !v->replicas) return JR_EINVAL;
    for (size_t i = 0; i < v->nreplicas; i++)
        if (!v->replicas[i].name) return JR_EINVAL;
    jr__fmt o = {buf, len, 0};
    if (buf && len) buf[0] = '\0';
    if (!v->cluster || !*v->cluster) return 0;
    jr__fmt_emit(&o, "Cluster Information:\n\n");
    jr__fmt_label(&o, label_width, "Name");
    jr__fmt_emit(&o, "%s\n", v->cluster);
    if (v->group && *v->group) {
        jr__fmt_label(&o, label_width, "Cluster Group");
        jr__fmt_emit(&o, "%s\n", v->group);
    }
    jr__fmt_label(&o, label_width, "Leader");
    jr__fmt_emit(&o, "%s\n", v->leader ? v->leader : "");
    for (size_t i = 0; i < v->nreplicas; i++) emit_replica(&o, label_width, &v->replicas[i]);
    jr__fmt_emit(&o, "\n");
    if (o.need > (size_t)INT32_MAX) return JR_ERANGE;
    return (int)o.need;
}
