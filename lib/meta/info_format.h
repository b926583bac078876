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

/* The "Migration Information" section of a cluster block with a move in progress (nothing
 * when ci->move is NULL or ci's size predates it): status type, description, error (only when
 * set), target and origin peers (origin only when recorded), labels right-aligned as in the
 * Cluster Information block (label_width 0: its default), then an empty line:
 *
 *   Migration Information:
 *
 *                  Status: catchup
 *             Description: waiting for peers to catch up (n5-east is 14231 operations behind)
 *            Target Peers: n1-east, n2-east, n5-east
 *            Origin Peers: n1-east, n2-east, n4-east
 *
 * snprintf-like: returns the full length; JR_EINVAL for a malformed move. */
int jr__move_format(const jr_cluster_info *ci, int label_width, char *buf, size_t len);

#endif
