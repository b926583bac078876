#!/usr/bin/env bash
# Times two jetraft-server binaries against each other in one run: starts a 3-process cluster of
# each (examples/server/cluster.sh, fsync before every ack unless told otherwise) and runs
# bench/server_bench with the first as A and the second as B, so that the two are interleaved
# round by round and see the same machine. On a shared machine a change's effect is read from
# the "ratio" line of such a run (A over B, on the medians of the rounds) and from how many
# rounds each side won, not from two separate runs of bench/server_bench.sh.
#
#   bench/server_ab.sh BIN_A BIN_B [server_bench options: --rounds N --async N --sync N
#                      --consume 0/1 --sizes 128 --replicas 3 --window N ...]
#
# Each side's cluster takes cluster.sh's environment with an A_ or B_ prefix:
# A_JR_CLUSTER_SYNC_OFFLOAD=1 / B_JR_CLUSTER_SYNC_OFFLOAD=1 ("sync_offload"),
# A_JR_CLUSTER_SYNC=interval / B_JR_CLUSTER_SYNC=interval (no fdatasync before an ack); the same
# binary on both sides with one of these times the setting alone. The lines name the sides "a"
# and "b"; the servers' process ids are printed on stderr. Everything runs on 127.0.0.1 under a
# temporary directory (BENCH_DIR, default /var/tmp), removed at the end.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 2 ] && [ -x "$1" ] && [ -x "$2" ] || {
    echo "usage: server_ab.sh BIN_A BIN_B [server_bench options]" >&2
    exit 2
}
bins=("$1" "$2")
shift 2
sb=""
for d in build-rel build; do
    [ -x "$here/$d/bench/server_bench" ] && { sb="$here/$d/bench/server_bench"; break; }
done
[ -n "$sb" ] || { echo "server_ab.sh: no bench/server_bench in build-rel or build" >&2; exit 2; }

base="$(mktemp -d "${BENCH_DIR:-/var/tmp}/server-ab-XXXXXX")"
cleanup() {
    for x in a b; do
        JR_CLUSTER_DIR="$base/$x" "$here/examples/server/cluster.sh" stop >/dev/null 2>&1 || true
    done
    rm -rf "$base"
}
trap cleanup EXIT

# Free ports, picked by the kernel, as server_bench.sh picks them: per side a client, a cluster
# and an http base, three apart (cluster.sh uses base+0..2 of each).
ports=($(python3 - <<'PY' 2>/dev/null || true
import socket
s = []
for _ in range(18):
    x = socket.socket(); x.bind(("127.0.0.1", 0)); s.append(x)
print(" ".join(str(x.getsockname()[1]) for x in s))
PY
))
[ "${#ports[@]}" -eq 18 ] || ports=($(seq 24322 24339))

args=()
pids_msg=""
for k in 0 1; do
    x=$([ $k -eq 0 ] && echo a || echo b)
    X=$(echo "$x" | tr a-z A-Z)
    off_var="${X}_JR_CLUSTER_SYNC_OFFLOAD" sync_var="${X}_JR_CLUSTER_SYNC"
    (
        unset JR_CLUSTER_SYNC_OFFLOAD JR_CLUSTER_SYNC
        [ -n "${!off_var:-}" ] && export JR_CLUSTER_SYNC_OFFLOAD="${!off_var}"
        [ -n "${!sync_var:-}" ] && export JR_CLUSTER_SYNC="${!sync_var}"
        JR_CLUSTER_DIR="$base/$x" JR_SERVER_BIN="${bins[$k]}" JR_CLIENT_PORT=${ports[$((9 * k))]} \
            JR_CLUSTER_PORT=${ports[$((9 * k + 3))]} JR_HTTP_PORT=${ports[$((9 * k + 6))]} \
            "$here/examples/server/cluster.sh" start >/dev/null
    )
    urls="" pids=""
    for i in 0 1 2; do
        urls+="${urls:+,}nats://127.0.0.1:$((ports[9 * k] + i))"
        pids+="${pids:+,}$(cat "$base/$x/n$((i + 1))/pid")"
    done
    args+=("--$x" "$x=$urls@$pids@n1,n2,n3")
    pids_msg+="${pids_msg:+; }$x n1,n2,n3 pids $pids"
done
sleep 3 # both clusters elect their meta leaders; server_bench retries the stream creation
echo "server_ab.sh: $pids_msg" >&2

"$sb" "${args[@]}" --sync-dir "$base" "$@"
