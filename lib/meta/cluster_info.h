/*
 * cluster_info — renders a group's "Cluster Information" block exactly as the nats CLI prints
 * it in `nats stream info` (shared/seeds/001, 004):
 *
 *   Cluster Information:
 *
 *                    Name: east
 *           Cluster Group: S-R3F-xK2p9aLm
 *                  Leader: n1-east
 *                 Replica: n3-east, current, seen 0.00s ago
 *                 Replica: n4-east, outdated, seen 0.18s ago, 14,231 operations behind
 *                 Replica: n5-east, outdated, damaged, seen 0.02s ago
 *
 * Labels are right-aligned to the longest label of the whole `stream info` output (the CLI
 * aligns every row of the page; its stream pages have a 19-byte longest label, hence the default
 * width). Each replica line holds, in order: the name (with " (pending)" while it is in the
 * assignment but not yet in the Raft group), current or outdated (a damaged replica is always
 * outdated), damaged (its replica lost data and waits for repair; libjetraft's addition),
 * unvouched (restarted, its storage not yet vouched for by its peers; libjetraft's addition),
 * OFFLINE, observer (a non-voting member still catching up; libjetraft's addition, the CLI has
 * no such marker), "seen <d> ago" or "not seen", and "<n> operation(s) behind" when the lag is
 * not zero. Durations are printed as the CLI the seeds come from printed them: "0.12s" below a
 * minute, then "2m5s", "1h2m5s", "3d1h2m5s", "1y3d1h2m5s"; lags with thousands separators. The
 * block ends with an empty line, as in the CLI.
 *
 * One deliberate difference: the CLI shows a zero "active" duration as "not seen" (a Go zero
 * value); here a peer heard from this very instant is "seen 0.00s ago", and "not seen" is
 * seen_ns == UINT64_MAX (or anything the CLI could not hold, >= 2^63 ns).
 *
 * Pure: no allocation, no state.
 */
#ifndef JR_META_CLUSTER_INFO_H
#define JR_META_CLUSTER_INFO_H

#include <stddef.h>
#include <stdint.h>

/* Width of the label column in `nats stream info` ("Maximum Per Subject"). */
#define JR__CLUSTER_INFO_LABEL_WIDTH 19

typedef struct jr__replica_view {
    const char *name;
    int current;        /* caught up and heard from within an election timeout */
    int offline;        /* not heard from recently */
    int observer;       /* non-voting member */
    int pending;        /* in the assignment, not (yet) in the Raft group */
    uint64_t seen_ns;   /* since last contact; UINT64_MAX: never */
    uint64_t lag;       /* operations behind the leader */
    int damaged;        /* lost data, waits for repair: never shown current */
    int unvouched;      /* restarted, its storage not yet vouched for by its peers: never current */
    int fsm_failed;     /* its state machine failed or is being rebuilt (its server's word to the
                           leader; its log is whole): never shown current */
    int fsm_rebuilding; /* of fsm_failed: being rebuilt from the group's snapshot, log and peers */
} jr__replica_view;

typedef struct jr__cluster_view {
    const char *cluster; /* "Name"; NULL or "": nothing is rendered (not clustered) */
    const char *group;   /* "Cluster Group" (the Raft group's name); NULL or "": row omitted */
    const char *leader;  /* NULL or "": no leader (the row stays, empty, as in the CLI) */
    const jr__replica_view *replicas; /* the peers other than the leader, in display order */
    size_t nreplicas;
} jr__cluster_view;

/* Renders v into buf (at most len bytes including the terminating NUL; buf may be NULL when len
 * is 0). label_width 0 means JR__CLUSTER_INFO_LABEL_WIDTH; otherwise the longest label of the
 * caller's page (at least 13, "Cluster Group", and at most 64). Returns the length of the full
 * rendering (excluding the NUL), like snprintf: the output was complete iff the result < len.
 * Returns JR_EINVAL for a NULL v, a NULL buf with len > 0, a bad width, a NULL replica list with
 * a count, or a replica without a name. */
int jr__cluster_view_format(const jr__cluster_view *v, int label_width, char *buf, size_t len);

/* The primitives of the block above, shared with the other pages that mimic the CLI
 * (consumer_format.c): snprintf-style accumulation that writes what fits and counts everything. */
typedef struct jr__fmt {
    char *buf;
    size_t len;  /* capacity of buf */
    size_t need; /* bytes of the full rendering so far */
} jr__fmt;

/* Appends printf-style text. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void jr__fmt_emit(jr__fmt *o, const char *fmt, ...);
/* One aligned row: the label right-aligned to width (plus the CLI's two spaces), then ": "; the
 * caller appends the value and the newline. */
void jr__fmt_label(jr__fmt *o, int width, const char *label);
/* 1234567 -> "1,234,567" (the CLI's humanize.Comma); from 2^63 on without separators. */
void jr__fmt_commas(jr__fmt *o, uint64_t n);
/* The CLI's duration: "%.2fs" below a minute, else whole units down to seconds ("2m5s"). */
void jr__fmt_duration(jr__fmt *o, uint64_t ns);
/* Go's time.Duration.String(): "0s", "250ms", "1.5µs", "1m30s", "2h0m0s" (consumer_format.c;
 * also the server's status texts, "Exceeded MaxRequestExpires of 1m0s"). */
void jr__fmt_go_duration(jr__fmt *o, int64_t d);

#endif
