/*
 * info_format — what the public info renderers (jr_stream_info_format, jr_consumer_info_format)
 * share: reading a caller's jr_cluster_info, up to each struct's `size`, into the view the
 * Cluster Information renderer (cluster_info.h) takes.
 */
#ifndef JR_META_INFO_FORMAT_H
#define JR_META_INFO_FORMAT_H

#include <stddef.h>

#include "jetraft.h"
#include "meta/cluster_info.h"

/* Replicas rendered without allocating; a group has at most JR_MAX_REPLICAS members, and the
 * meta view of a peer-managed group a few more while observers catch up. */
#define JR__INFO_MAX_REPLICAS 16

/* 1 if a struct of `size` bytes holds the field that ends at `end`. */
#define JR__HAS(size, type, field) ((size) >= offsetof(type, field) + sizeof(((type *)0)->field))

/* Fills *v and reps (which v then points into; its strings are ci's) from ci. Fields a replica
 * line's `size` does not hold read as 0, a missing active_ns as "not seen". JR_EINVAL for a
 * cluster info too small to hold nreplicas, more than JR__INFO_MAX_REPLICAS replicas, a NULL
 * replica array with a count, or a replica that is NULL or has no name field. */
int jr__cluster_view_from_info(const jr_cluster_info *ci,
                               jr__replica_view reps[JR__INFO_MAX_REPLICAS], jr__cluster_view *v);

#endif
