#!/usr/bin/env bash
# The jetraft CLI against a 3-process jetraft-server cluster (examples/server/cluster.sh on free
# loopback ports, under a temporary directory): every verb once, its output and exit status
# checked, then the stream leader's process killed (SIGKILL) and the health check reporting
# CRITICAL until it is back. Bounded in time; everything it starts is stopped at the end.
#
#   cli_test.sh PATH/TO/jetraft PATH/TO/jetraft-server
set -euo pipefail
cli="$1"
export JR_SERVER_BIN="$2"
. "$(cd "$(dirname "$0")" && pwd)/../server/tests/cluster_test.sh"
cluster_test_start cli 240
p1=$JR_CLIENT_PORT
"$cluster" start >/dev/null
J=("$cli" -s "nats://127.0.0.1:$p1,nats://127.0.0.1:$((p1 + 1)),nats://127.0.0.1:$((p1 + 2))")

t0=$(date +%s)
step() { echo "[$(($(date +%s) - t0)) s] $*"; }
fail() { echo "FAIL: $*" >&2; for n in n1 n2 n3; do tail -n 20 "$JR_CLUSTER_DIR/$n/server.log" >&2 || true; done; exit 1; }
# A command that fails outside expect() ends the script (set -e): say which, with what it printed
# (a verb run as out=$(... 2>&1) holds its stderr, e.g. a sanitizer's report, in $out).
trap 'echo "FAIL: line $LINENO exited $?; its output: ${out:-}" >&2' ERR
expect() { # expect WHAT PATTERN OUTPUT
    grep -q -- "$2" <<<"$3" || fail "$1: no '$2' in:
$3"
}

step "cluster started"
# the cluster elects a meta leader: stream add is retried until it answers
for _ in $(seq 60); do
    out=$("${J[@]}" stream add ORDERS --subjects "orders.>" --replicas=3 --defaults 2>&1) && break
    sleep 0.5
done
expect "stream add" "Stream ORDERS was created" "$out"
expect "stream add" "Replicas: 3" "$out"

step "ORDERS created"
out=$("${J[@]}" pub orders.new '{"order":1}')
expect "pub" 'stored in ORDERS as seq 1' "$out"
out=$(LSAN_OPTIONS="$async_pub_lsan" "${J[@]}" pub orders.new --count 500 --size 64 2>&1)
expect "pub --count" "500 / 500 acknowledged" "$out"

out=$("${J[@]}" stream info ORDERS)
expect "stream info" "Cluster Information:" "$out"
expect "stream info" "Messages: 501" "$out"
expect "stream info" "Replica: n., current, seen" "$out"
leader=$(sed -n 's/^ *Leader: //p' <<<"$out")
[ -n "$leader" ] || fail "stream info names no leader"

out=$("${J[@]}" --json stream info ORDERS)
expect "stream info --json" '"num_replicas": 3' "$out"

out=$("${J[@]}" stream ls)
expect "stream ls" "ORDERS" "$out"
out=$("${J[@]}" stream find --replicas 3)
expect "stream find" "ORDERS" "$out"
out=$("${J[@]}" stream find --replicas 1)
expect "stream find (none)" "No streams match" "$out"

out=$("${J[@]}" stream get ORDERS 1)
expect "stream get" '{"order":1}' "$out"
expect "stream get" "on Subject orders.new" "$out"

out=$("${J[@]}" pub orders.old '{"order":0}')
expect "pub" 'stored in ORDERS as seq 502' "$out"
out=$("${J[@]}" stream subjects ORDERS)
expect "stream subjects" "2 subjects in stream ORDERS" "$out"
expect "stream subjects" "^orders.new: 501$" "$out"
expect "stream subjects" "^orders.old: 1$" "$out"
out=$("${J[@]}" --json stream subjects ORDERS '*.old')
expect "stream subjects --json" '"orders.old": 1' "$out"
[ "$(jq length <<<"$out")" = 1 ] || fail "stream subjects with a filter: $out"

out=$("${J[@]}" stream edit ORDERS --max-msgs 1000)
expect "stream edit" "Maximum Messages: 1,000" "$out"

out=$("${J[@]}" server list)
for n in n1 n2 n3; do expect "server list" "^$n  *C1  *az:" "$out"; done
expect "server list" "3 servers, meta leader n" "$out"
out=$("${J[@]}" --json server list --expect 3)
expect "server list --json" '"meta_role": "leader"' "$out"
out=$("${J[@]}" server report jetstream)
expect "server report" "Streams: 1" "$out"
expect "server report" "RAFT Meta Group Information" "$out"

step "stream verbs done"
out=$("${J[@]}" consumer add ORDERS NEW --filter orders.new --replicas 3)
expect "consumer add" "Information for Consumer ORDERS > NEW" "$out"
out=$("${J[@]}" consumer next ORDERS NEW --count 3)
expect "consumer next" "Acknowledged message 3" "$out"
out=$("${J[@]}" consumer info ORDERS NEW)
expect "consumer info" "Acknowledgment Floor: Consumer sequence: 3 Stream sequence: 3" "$out"
out=$("${J[@]}" consumer ls ORDERS)
expect "consumer ls" "NEW" "$out"

out=$("${J[@]}" server check stream --stream ORDERS --peer-expect 3)
expect "server check" "^OK ORDERS OK:3 peers" "$out"
set +e
out=$("${J[@]}" server check stream --stream ORDERS --peer-expect 5)
rc=$?
set -e
[ $rc -eq 2 ] || fail "server check with the wrong peer count exited $rc, not 2"
expect "server check (critical)" "Expected 5 replicas got 3" "$out"
out=$("${J[@]}" --json server check stream --stream ORDERS --peer-expect 3)
jq -e '.status == "OK" and .ok == ["3 peers"] and .perf_data[0].value == 3' <<<"$out" >/dev/null ||
    fail "server check --json: $out"
set +e
out=$("${J[@]}" --json server check stream --stream ORDERS --peer-expect 5)
rc=$?
set -e
[ $rc -eq 2 ] || fail "server check --json with the wrong peer count exited $rc, not 2"
jq -e '.status == "CRITICAL" and .criticals == ["Expected 5 replicas got 3"]' <<<"$out" >/dev/null ||
    fail "server check --json (critical): $out"

# errors: a clear message and a non-zero exit, never a crash
set +e
out=$("${J[@]}" stream info NOPE 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] || fail "stream info of an unknown stream exited $rc"
expect "unknown stream" "stream not found" "$out"
set +e
out=$("${J[@]}" stream add 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] || fail "stream add without a name exited $rc"

# the leader's process killed: the check is critical, publishes go on, then it is healthy again
step "killing the stream leader $leader"
"$cluster" kill "$leader" >/dev/null
set +e
crit=0
for _ in $(seq 40); do
    out=$("${J[@]}" server check stream --stream ORDERS --peer-expect 3 2>&1)
    [ $? -eq 2 ] && { crit=1; break; }
    sleep 0.25
done
set -e
[ $crit -eq 1 ] || fail "the check never turned critical with $leader killed"
for _ in $(seq 60); do "${J[@]}" pub orders.new after-kill >/dev/null 2>&1 && break; sleep 0.5; done
step "published after the kill; restarting $leader"
"$cluster" restart "$leader" >/dev/null
ok=0
for _ in $(seq 120); do
    "${J[@]}" server check stream --stream ORDERS --peer-expect 3 >/dev/null 2>&1 && { ok=1; break; }
    sleep 0.5
done
[ $ok -eq 1 ] || fail "the stream was not healthy again after $leader restarted"

step "healthy again"
out=$("${J[@]}" stream cluster step-down ORDERS)
expect "step-down" "Requested a leader change" "$out"
out=$("${J[@]}" consumer rm ORDERS NEW)
expect "consumer rm" "Deleted consumer ORDERS > NEW" "$out"
out=$("${J[@]}" stream purge ORDERS)
expect "stream purge" "Purged" "$out"
out=$("${J[@]}" stream rm ORDERS)
expect "stream rm" "Deleted stream ORDERS" "$out"
echo "ok: the jetraft CLI against three jetraft-server processes"
