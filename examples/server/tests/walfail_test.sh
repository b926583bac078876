#!/usr/bin/env bash
# jetraft-server recovers from a failed WAL by itself: three servers, each with its own
# I/O-error file (JETRAFT_TEST_IOERR_FILE, powervfs.h); an R3 stream takes publishes; the stream
# leader's fsyncs then fail (`sync`). Publishes fail or move to another leader, never an ack
# for a message that is then missing; the failed server says so once, /healthz reports it
# unhealthy and requests through it get 503 at once; once the errors stop it reopens its node
# from disk without any restart (same process), its replica catches up (stream info lists it
# current) and every acknowledged message reads back.
#
#   walfail_test.sh PATH/TO/jetraft PATH/TO/jetraft-server
set -euo pipefail
cli="$1"
real_bin="$2"
. "$(cd "$(dirname "$0")" && pwd)/cluster_test.sh"
cluster_test_start walfail 90
p1=$JR_CLIENT_PORT
# Each server reads its own error file, next to its configuration.
cat >"$JR_CLUSTER_DIR/server-wrap.sh" <<WRAP
#!/usr/bin/env bash
[ "\${1:-}" = -c ] && export JETRAFT_TEST_IOERR_FILE="\$(dirname "\$2")/ioerr"
exec "$real_bin" "\$@"
WRAP
chmod +x "$JR_CLUSTER_DIR/server-wrap.sh"
export JR_SERVER_BIN="$JR_CLUSTER_DIR/server-wrap.sh"
"$cluster" start >/dev/null
J=("$cli" -s "nats://127.0.0.1:$p1,nats://127.0.0.1:$((p1 + 1)),nats://127.0.0.1:$((p1 + 2))")

t0=$(date +%s)
step() { echo "[$(($(date +%s) - t0)) s] $*"; }
fail() {
    echo "FAIL: $*" >&2
    for n in n1 n2 n3; do echo "--- $n" >&2; tail -n 25 "$JR_CLUSTER_DIR/$n/server.log" >&2 || true; done
    exit 1
}
healthz() { curl -s "http://127.0.0.1:$((JR_HTTP_PORT + $1))/healthz" || true; }

for _ in $(seq 60); do
    "${J[@]}" stream add WF --subjects "wf.>" --replicas 3 --defaults >/dev/null 2>&1 && break
    sleep 0.5
done
acked="$JR_CLUSTER_DIR/acked" # "SEQ BODY" of every acknowledged publish
: >"$acked"
pub() { # pub BODY: records it when acknowledged
    local out
    if out=$("${J[@]}" --timeout 2s pub wf.x "$1" 2>&1); then
        local seq
        seq=$(sed -n 's/.*stored in WF as seq \([0-9]*\).*/\1/p' <<<"$out")
        [ -n "$seq" ] || fail "an acknowledgement without a sequence: $out"
        echo "$seq $1" >>"$acked"
        return 0
    fi
    return 1
}
for i in $(seq 20); do pub "before-$i" || fail "publish before-$i: the cluster is healthy"; done
leader=$(sed -n 's/^ *Leader: //p' <<<"$("${J[@]}" stream info WF)")
[ -n "$leader" ] || fail "WF has no leader"
li=$((${leader#n} - 1))
step "WF took 20 messages; its leader is $leader: failing its fsyncs"

echo sync >"$JR_CLUSTER_DIR/$leader/ioerr"
# its vfs reads the file every 100 ms: publish once the errors are on
for _ in $(seq 40); do
    grep -q "injected I/O errors: sync" "$JR_CLUSTER_DIR/$leader/server.log" && break
    sleep 0.1
done
grep -q "injected I/O errors: sync" "$JR_CLUSTER_DIR/$leader/server.log" ||
    fail "$leader's vfs did not take up the sync errors"
ok=0 bad=0
for i in $(seq 40); do
    if pub "during-$i"; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
    [ $ok -ge 10 ] && break
done
step "while $leader fails: $ok publishes acknowledged, $bad refused or timed out"
[ $ok -ge 10 ] || fail "the stream did not move to another leader"
grep -q "the WAL failed" "$JR_CLUSTER_DIR/$leader/server.log" || fail "$leader did not say its WAL failed"
nlines=$(grep -c "the WAL failed (" "$JR_CLUSTER_DIR/$leader/server.log")
[ "$nlines" -eq 1 ] || fail "$leader logged its WAL failure $nlines times"
grep -q "cannot stage WAL records" "$JR_CLUSTER_DIR/$leader/server.log" &&
    fail "$leader logs the failed flush at its ticks"
unhealthy=0
for _ in $(seq 20); do
    grep -q '"status":"unavailable"' <<<"$(healthz $li)" && { unhealthy=1; break; }
    sleep 0.25
done
[ $unhealthy -eq 1 ] || fail "$leader's /healthz did not report the failure: $(healthz $li)"
step "$leader logged the failure once and /healthz reports it: $(healthz $li)"
# still failing, the node is closed: requests to that server get JetStream's 503 at once
L=("$cli" -s "nats://127.0.0.1:$((p1 + li))" --timeout 2s)
out=$("${L[@]}" stream info WF 2>&1) && fail "stream info through $leader succeeded in the gap: $out"
grep -q "temporarily unavailable" <<<"$out" || fail "stream info through $leader in the gap: $out"
out=$("${L[@]}" pub wf.x gap 2>&1) && fail "a publish through $leader was acknowledged in the gap: $out"
grep -q "temporarily unavailable" <<<"$out" || fail "a publish through $leader in the gap: $out"
step "through $leader meanwhile: $(head -n 1 <<<"$out")"

pid=$(cat "$JR_CLUSTER_DIR/$leader/pid")
echo none >"$JR_CLUSTER_DIR/$leader/ioerr"
ok=0
for _ in $(seq 80); do
    if grep -q "reopened from disk" "$JR_CLUSTER_DIR/$leader/server.log" &&
        "${J[@]}" stream info WF 2>/dev/null | grep -q "Replica: $leader, current" &&
        grep -q '"status":"ok"' <<<"$(healthz $li)"; then
        ok=1
        break
    fi
    sleep 0.25
done
[ $ok -eq 1 ] || fail "$leader did not reopen and catch up: $("${J[@]}" stream info WF 2>&1)"
[ "$(cat "$JR_CLUSTER_DIR/$leader/pid")" = "$pid" ] && kill -0 "$pid" || fail "$leader was restarted"
step "$leader reopened its node by itself: $(grep "reopened from disk" "$JR_CLUSTER_DIR/$leader/server.log")"

for i in $(seq 5); do pub "after-$i" || fail "publish after-$i"; done
n=0
while read -r seq body; do
    out=$("${J[@]}" stream get WF "$seq" 2>&1) || fail "acknowledged seq $seq does not read back: $out"
    grep -q -- "$body" <<<"$out" || fail "seq $seq does not hold $body: $out"
    n=$((n + 1))
done <"$acked"
step "every one of the $n acknowledged messages reads back"
