#!/usr/bin/env bash
# Times jetraft-server against nats-server on this machine, side by side in one run: starts a
# 3-process jetraft-server cluster (examples/server/cluster.sh; fsync before every ack, the
# default) and a 3-process nats-server cluster with JetStream (Debian's nats-server, installed
# if missing; it syncs on its own interval, never before an ack), then runs bench/server_bench
# against both, interleaved, and prints its JSON lines. Everything runs on 127.0.0.1 under a
# temporary directory (on the disk the servers would use; BENCH_DIR overrides it) and is
# stopped and removed at the end. The servers' names go with their URLs, so that server_bench
# publishes to the stream's leader; their process ids are printed on stderr (to attach a
# profiler: `--only jetraft` runs one system alone, and the JSON lines name each case's leader).
#
#   bench/server_bench.sh [BUILD_DIR] [server_bench options: --rounds N --async N --sync N
#                          (--sync 0: no sync phase) --consume 0/1 --sizes 128,4096
#                          --replicas 1,3 --window N --only NAME
#                          --pin 0/1]
#
# The jetraft-server cluster takes cluster.sh's environment: JR_CLUSTER_SYNC_OFFLOAD=1 runs its
# fdatasync on libuv's threadpool ("sync_offload"), JR_CLUSTER_SYNC=interval times it with no
# fdatasync before an ack (the ceiling of what moving the sync can give); bench/sched_sample.py
# says where the servers' threads spend their time meanwhile.
#
# BUILD_DIR (default build-rel, then build) must hold examples/server/jetraft-server and
# bench/server_bench; a release build (meson setup build-rel --buildtype=release) is what the
# numbers are meant for.
#
# Run it on an otherwise idle machine. Where the kernel preempts lazily (seen on a Linux 6.18
# guest), a thread woken by its disk or socket can wait for the next scheduler tick (4 ms at
# HZ=250) whenever every CPU runs something else, whatever that something's nice value: one
# busy process per CPU at nice 19 turned the disk probe's fdatasync from 150 µs into 4 ms at
# p50, and it slows every wakeup of the servers and the client alike.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-}"
if [ -n "$build" ] && [ "${build#--}" = "$build" ]; then shift; else build=""; fi
if [ -z "$build" ]; then
    for d in build-rel build; do
        [ -x "$here/$d/bench/server_bench" ] && { build="$here/$d"; break; }
    done
fi
[ -n "$build" ] && [ -x "$build/bench/server_bench" ] && [ -x "$build/examples/server/jetraft-server" ] || {
    echo "server_bench.sh: no build with bench/server_bench and jetraft-server (pass BUILD_DIR)" >&2
    exit 2
}
command -v nats-server >/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server
}

base="$(mktemp -d "${BENCH_DIR:-/var/tmp}/server-bench-XXXXXX")"
npids=()
cleanup() {
    JR_CLUSTER_DIR="$base/jr" "$here/examples/server/cluster.sh" stop >/dev/null 2>&1 || true
    for p in "${npids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$base"
}
trap cleanup EXIT

# Free ports, picked by the kernel: 3 client + 3 cluster + 3 http for jetraft, 3 + 3 for nats.
ports=($(python3 - <<'PY' 2>/dev/null || true
import socket
s = []
for _ in range(15):
    x = socket.socket(); x.bind(("127.0.0.1", 0)); s.append(x)
print(" ".join(str(x.getsockname()[1]) for x in s))
PY
))
[ "${#ports[@]}" -eq 15 ] || ports=($(seq 24222 24236))

# jetraft-server: three servers, keys made by cluster.sh.
export JR_CLUSTER_DIR="$base/jr" JR_SERVER_BIN="$build/examples/server/jetraft-server"
export JR_CLIENT_PORT=${ports[0]} JR_CLUSTER_PORT=${ports[3]} JR_HTTP_PORT=${ports[6]}
"$here/examples/server/cluster.sh" start >/dev/null
jr_urls="" jr_pids=""
for i in 0 1 2; do
    jr_urls+="${jr_urls:+,}nats://127.0.0.1:$((JR_CLIENT_PORT + i))"
    jr_pids+="${jr_pids:+,}$(cat "$base/jr/n$((i + 1))/pid")"
done

# nats-server: three servers with JetStream, routed to each other.
routes=""
for i in 0 1 2; do routes+="${routes:+, }nats-route://127.0.0.1:${ports[$((12 + i))]}"; done
n_urls="" n_pids=""
for i in 0 1 2; do
    d="$base/nats/s$i"
    mkdir -p "$d"
    cat >"$d/nats.conf" <<CONF
server_name: s$i
listen: 127.0.0.1:${ports[$((9 + i))]}
jetstream { store_dir: "$d/js" }
cluster { name: C1, listen: 127.0.0.1:${ports[$((12 + i))]}, routes: [ $routes ] }
CONF
    nats-server -c "$d/nats.conf" >"$d/log" 2>&1 &
    npids+=($!)
    n_urls+="${n_urls:+,}nats://127.0.0.1:${ports[$((9 + i))]}"
    n_pids+="${n_pids:+,}$!"
done
sleep 3 # both clusters elect their meta leaders; server_bench retries the stream creation
echo "server_bench.sh: jetraft n1,n2,n3 pids $jr_pids; nats s0,s1,s2 pids $n_pids" >&2

"$build/bench/server_bench" --a "jetraft=$jr_urls@$jr_pids@n1,n2,n3" \
    --b "nats=$n_urls@$n_pids@s0,s1,s2" --sync-dir "$base" "$@"
