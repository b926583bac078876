#!/usr/bin/env bash
# Smoke test of examples/epoll: three epoll_node processes on loopback form a cluster; the one
# given --publish creates ORDERS R3, publishes, prints the stream's cluster block and exits 0;
# the other two shut down cleanly on SIGTERM (exit 0). Bounded: everything is killed after 60 s.
set -u
bin="$1"
dir=$(mktemp -d)
base=$((20000 + RANDOM % 20000))
peers=(--peer "n1=127.0.0.1:$base" --peer "n2=127.0.0.1:$((base + 1))" --peer "n3=127.0.0.1:$((base + 2))")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
for i in 2 3; do
    "$bin" --name "n$i" --listen "127.0.0.1:$((base + i - 1))" --dir "$dir/n$i" "${peers[@]}" \
        >"$dir/n$i.out" 2>&1 &
    pids+=($!)
done
timeout 60 "$bin" --name n1 --listen "127.0.0.1:$base" --dir "$dir/n1" "${peers[@]}" \
    --publish 2000 >"$dir/n1.out" 2>&1
rc=$?
cat "$dir/n1.out"
[ $rc -eq 0 ] || { echo "epoll_smoke: n1 exited $rc"; cat "$dir"/n2.out "$dir"/n3.out; exit 1; }
grep -q "published 2000 of 2000" "$dir/n1.out" || { echo "epoll_smoke: not every publish acked"; exit 1; }
grep -q "ORDERS holds 2000 messages" "$dir/n1.out" || { echo "epoll_smoke: stream info"; exit 1; }
for p in "${pids[@]}"; do kill -TERM "$p"; done
for p in "${pids[@]}"; do
    timeout 10 tail --pid="$p" -f /dev/null || { echo "epoll_smoke: no clean exit"; exit 1; }
    wait "$p" || { echo "epoll_smoke: a server exited non-zero on SIGTERM"; exit 1; }
done
pids=()
echo "epoll_smoke: ok"
