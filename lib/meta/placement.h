/*
 * placement — where the meta leader puts the replicas of a stream (or consumer): a pure function
 * of the servers it knows and the request, with a seed for ties. No allocation, no state.
 *
 * A server qualifies when it is in the requested cluster, online, not in the request's avoid
 * list, not draining, carries every required placement tag and none of the "!tag" exclusions (tags
 * compare case-insensitively, as JetStream's do), has max_bytes of free capacity (when max_bytes >
 * 0 and its capacity is known), is below its limit of replicated assets, and — when a unique tag
 * prefix such as "az:" is in force — carries a tag with that prefix. Among qualifying servers the
 * replicas go to the fewest assets first, then the most free capacity, then a seeded hash of
 * the name (so equal servers are spread, reproducibly), never two on the same unique tag value.
 * The unique prefix is not in force when a required placement tag itself has that prefix (the
 * caller pinned the replicas to one value), as in JetStream.
 *
 * Peers in `keep` (a group being grown or having one peer replaced) stay, count toward the
 * replicas and hold their unique tag values; servers in `avoid` are never chosen.
 *
 * Refusals:
 *  - JR_EINVAL: replicas outside 1..5 or above the number of servers in the cluster, no
 *    cluster, malformed server or keep lists; msg says which ("replicas: ...").
 *  - JR_ENORESOURCES: not enough servers qualify. msg reads like JetStream's error — a summary
 *    ("no suitable peers for placement, peer offline, insufficient storage, server tag not
 *    unique, tags not matched ['ssd']") followed by one reason per server of the cluster.
 */
#ifndef JR_META_PLACEMENT_H
#define JR_META_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

typedef struct jr__place_server {
    const char *name;    /* unique, non-empty */
    const char *cluster; /* NULL or "" matches no requested cluster */
    const char *const *tags;
    size_t ntags;
    int online;
    uint64_t capacity_bytes; /* 0: unknown (never short of space) */
    uint64_t used_bytes;     /* used or reserved */
    uint32_t assets;         /* replicated assets (stream and consumer replicas) it holds */
    uint32_t max_assets;     /* 0: no limit */
    int draining;            /* evacuated (jr_server_evacuate): never chosen, may be kept */
} jr__place_server;

typedef struct jr__place_request {
    int replicas;            /* 1..JR_MAX_REPLICAS */
    const char *cluster;     /* required */
    const char *const *tags; /* required tags; "!tag" excludes servers carrying tag */
    size_t ntags;
    int64_t max_bytes;       /* <= 0: no capacity requirement */
    const char *unique_tag;  /* tag prefix such as "az:"; NULL or "": none */
    uint64_t seed;           /* tie-break among equally loaded servers */
    const char *const *keep; /* current peers that stay (server names) */
    size_t nkeep;
    const char *const *avoid; /* servers never chosen (server names) */
    size_t navoid;
} jr__place_request;

/* Why each server was or was not chosen (one per input server). */
enum jr__place_reason {
    JR__PLACE_CHOSEN = 0,        /* newly chosen */
    JR__PLACE_KEPT = 1,          /* in keep, and stays */
    JR__PLACE_SPARE = 2,         /* qualified, not needed */
    JR__PLACE_OTHER_CLUSTER = 3, /* not in the requested cluster */
    JR__PLACE_AVOIDED = 4,       /* in avoid */
    JR__PLACE_OFFLINE = 5,
    JR__PLACE_EXCLUDED_TAG = 6,   /* carries a "!tag" of the request */
    JR__PLACE_MISSING_TAG = 7,    /* lacks a required tag */
    JR__PLACE_NO_SPACE = 8,       /* less free capacity than max_bytes */
    JR__PLACE_MAX_ASSETS = 9,     /* at its asset limit */
    JR__PLACE_NO_UNIQUE_TAG = 10, /* no tag with the unique prefix */
    JR__PLACE_UNIQUE_TAKEN = 11,  /* its unique tag value is held by another replica */
    JR__PLACE_DRAINING = 12,      /* draining (evacuated): takes no new replica */
};

typedef struct jr__place_result {
    size_t npeers;                 /* = replicas on success */
    size_t peers[JR_MAX_REPLICAS]; /* indexes into servers[]: kept peers, then new ones */
} jr__place_result;

/* Chooses req->replicas peers among servers[0..n). On success returns 0 and fills out (kept
 * peers first, in keep order; then new peers, best first). Returns JR_EINVAL or
 * JR_ENORESOURCES as described above, with out->npeers 0. Whenever the request is well formed
 * (0 or JR_ENORESOURCES), reasons (if not NULL, n entries) gets an enum jr__place_reason per
 * server (after JR_ENORESOURCES nothing is CHOSEN: servers that qualified are SPARE). msg (if
 * not NULL) always gets a NUL-terminated explanation truncated to msglen. */
int jr__placement_select(const jr__place_server *servers, size_t n, const jr__place_request *req,
                         jr__place_result *out, int *reasons, char *msg, size_t msglen);

/* 1 if server s is in `cluster`, carries every required tag of tags[0..ntags) and none of its
 * "!tag" exclusions (the tag rules above, case-insensitive), else 0. Online state, capacity,
 * asset limits and unique tags are not looked at: this is whether a server already holding a
 * replica may keep it under a new placement (a move). */
int jr__placement_fits(const jr__place_server *s, const char *cluster, const char *const *tags,
                       size_t ntags);

/* A short English phrase for a reason ("offline", "lacks a required tag", ...). */
const char *jr__place_reason_str(int reason);

#endif
