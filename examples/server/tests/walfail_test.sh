#!/usr/bin/env bash
# jetraft-server recovers from a failed WAL by itself: three servers, each with its own
# I/O-error file (JETRAFT_TEST_IOERR_FILE, powervfs.h); an R3 stream takes publishes; the stream
# leader's fsyncs then fail (`sync`). Publishes fail or move to another leader, never an ack
# for a message that is then missing; the failed server says so once, /healthz reports it
# unhealthy and requests through it get 503 at once; once the errors stop it reopens its node
# from disk without any restart (same process), its replica catches up (stream info lists it
# current) and every acknowledged message reads back. A push consumer created through that
# server delivers again after the reopen: every acknowledged message reaches its subscriber at
# another server. The node's counters in /metrics and /jsz never go back across the reopen.
# Then the same server's WAL fails again while its wal_dir holds another server's mark: the
# reopen fails for good, which it says once, without retrying, answering 503 with /healthz
# naming the reason; restarted so, and with a data key its plaintext WAL was not written under,
# it refuses to start with exit status 78 and a line saying why.
#
#   walfail_test.sh PATH/TO/jetraft PATH/TO/jetraft-server
set -euo pipefail
cli="$1"
real_bin="$2"
. "$(cd "$(dirname "$0")" && pwd)/cluster_test.sh"
cluster_test_start walfail 170
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
metric() { # metric I NAME: server I's value of jetraft_NAME
    curl -s "http://127.0.0.1:$((JR_HTTP_PORT + $1))/metrics" | sed -n "s/^jetraft_$2{[^}]*} //p"
}
# jsreq PORT SUBJECT BODY: one request on a plain connection, its reply printed (or TIMEOUT)
jsreq() {
    python3 - "$@" <<'PY'
import socket, sys, time
port, subj, body = int(sys.argv[1]), sys.argv[2], sys.argv[3].encode()
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b'CONNECT {"verbose":false}\r\nSUB _R.x 1\r\nPUB %s _R.x %d\r\n%s\r\n'
          % (subj.encode(), len(body), body))
s.settimeout(0.5)
buf, deadline = b"", time.time() + 10
while time.time() < deadline:
    try:
        buf += s.recv(65536)
    except socket.timeout:
        continue
    i = buf.find(b"MSG _R.x ")
    j = buf.find(b"\r\n", i)
    if i >= 0 and j >= 0:
        n = int(buf[i:j].split()[-1])
        if len(buf) >= j + 2 + n:
            print(buf[j + 2:j + 2 + n].decode())
            sys.exit(0)
print("TIMEOUT")
PY
}

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
step "WF took 20 messages; its leader is $leader"

# A push consumer created through the leader (which serves it), delivering to a subscriber at
# another server: the subscriber records each body and acknowledges it.
si=$(((li + 1) % 3))
pushed="$JR_CLUSTER_DIR/pushed"
: >"$pushed"
python3 - "$((p1 + si))" push.wf "$pushed" 150 >/dev/null 2>&1 <<'PY' &
import socket, sys, time
port, subj, path, secs = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b'CONNECT {"verbose":false,"headers":true}\r\nSUB %s 1\r\nPING\r\n' % subj.encode())
s.settimeout(0.5)
out = open(path, "a", buffering=1)
buf, end = b"", time.time() + secs
while time.time() < end:
    try:
        d = s.recv(65536)
    except socket.timeout:
        continue
    if not d:
        break
    buf += d
    while True:
        i = buf.find(b"\r\n")
        if i < 0:
            break
        line = buf[:i]
        if line.startswith(b"MSG ") or line.startswith(b"HMSG "):
            p = line.split()
            hmsg = p[0] == b"HMSG"
            hl, n = (int(p[-2]), int(p[-1])) if hmsg else (0, int(p[-1]))
            if len(buf) < i + 2 + n + 2:
                break
            body = buf[i + 2 + hl:i + 2 + n]
            reply = p[3] if len(p) == (6 if hmsg else 5) else None
            buf = buf[i + 2 + n + 2:]
            if body:
                out.write(body.decode() + "\n")
            if reply:
                s.sendall(b"PUB %s 4\r\n+ACK\r\n" % reply)
        else:
            buf = buf[i + 2:]
            if line == b"PING":
                s.sendall(b"PONG\r\n")
PY
pushsub=$!
sleep 0.5
out=$(jsreq "$((p1 + li))" '$JS.API.CONSUMER.DURABLE.CREATE.WF.PUSH' \
    '{"stream_name":"WF","config":{"durable_name":"PUSH","deliver_subject":"push.wf","ack_policy":"explicit","ack_wait":2000000000,"deliver_policy":"all"}}')
grep -q '"deliver_subject":"push.wf"' <<<"$out" || fail "push consumer create through $leader: $out"
# every_pushed: every acknowledged body reached the push subscriber (waits up to $1 s)
every_pushed() {
    local missing
    for _ in $(seq $(($1 * 4))); do
        missing=$(cut -d' ' -f2 "$acked" | grep -vxF -f "$pushed" || true)
        [ -z "$missing" ] && return 0
        sleep 0.25
    done
    echo "$missing" | head -n 5
    return 1
}
missing=$(every_pushed 20) || fail "the push consumer did not deliver: missing $missing"
step "push consumer PUSH (served by $leader) delivered the 20 to a subscriber at n$((si + 1))"

step "failing $leader's fsyncs"

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
# the node counters as the monitor shows them in the gap: a reopen must not take them back
gap_syncs=$(metric $li wal_syncs_total)
gap_frames=$(metric $li frames_sent_total)
[ -n "$gap_syncs" ] && [ -n "$gap_frames" ] || fail "no node counters in $leader's /metrics"
[ "$gap_frames" -gt 0 ] || fail "$leader's /metrics counts no frame sent"
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
sleep 1.5 # the monitor's next round: the reopened node's own counters start at 0
syncs=$(metric $li wal_syncs_total)
frames=$(metric $li frames_sent_total)
jsz_frames=$(curl -s "http://127.0.0.1:$((JR_HTTP_PORT + li))/jsz" | jq .node.frames_sent)
[ "$syncs" -ge "$gap_syncs" ] && [ "$frames" -ge "$gap_frames" ] &&
    [ "$jsz_frames" -ge "$gap_frames" ] ||
    fail "$leader's counters went back: wal_syncs $gap_syncs -> $syncs, frames_sent $gap_frames -> $frames (/jsz $jsz_frames)"
[ "$(metric $li node_reopens_total)" -ge 1 ] || fail "node_reopens_total did not count the reopen"
step "$leader's counters carried across the reopen: wal_syncs $gap_syncs -> $syncs, frames_sent $gap_frames -> $frames"

for i in $(seq 5); do pub "after-$i" || fail "publish after-$i"; done
n=0
while read -r seq body; do
    out=$("${J[@]}" stream get WF "$seq" 2>&1) || fail "acknowledged seq $seq does not read back: $out"
    grep -q -- "$body" <<<"$out" || fail "seq $seq does not hold $body: $out"
    n=$((n + 1))
done <"$acked"
step "every one of the $n acknowledged messages reads back"
missing=$(every_pushed 30) ||
    fail "the push consumer served by $leader did not deliver after the reopen: missing $missing"
step "the push consumer delivered every one of them after the reopen"
kill "$pushsub" 2>/dev/null || true

# ---- a reopen that cannot succeed: the wal_dir holds another server's mark ----
other=n$(((li + 1) % 3 + 1))
wal="$JR_CLUSTER_DIR/$leader/wal"
cp "$wal/node" "$JR_CLUSTER_DIR/own-node-mark"
failures=$(metric $li wal_failures_total)
echo sync >"$JR_CLUSTER_DIR/$leader/ioerr"
cp "$JR_CLUSTER_DIR/$other/wal/node" "$wal/node"
# a reopened node reads the mark; one open now fails its next sync (publishes make it sync)
given_up=0
for i in $(seq 60); do
    grep -q "a permanent error: not retrying" "$JR_CLUSTER_DIR/$leader/server.log" &&
        { given_up=1; break; }
    "${J[@]}" --timeout 1s pub wf.x "again-$i" >/dev/null 2>&1 || true
    sleep 0.25
done
[ $given_up -eq 1 ] || fail "$leader did not give up reopening a wal_dir with $other's mark"
echo none >"$JR_CLUSTER_DIR/$leader/ioerr"
# the monitor's counters are a snapshot taken each round: wait for one taken after the failure
failed_again=0
for _ in $(seq 40); do
    [ "$(metric $li wal_failures_total)" -gt "$failures" ] && { failed_again=1; break; }
    sleep 0.25
done
[ $failed_again -eq 1 ] || fail "$leader's WAL did not fail again"
line=$(grep "a permanent error: not retrying" "$JR_CLUSTER_DIR/$leader/server.log")
grep -q "holds the WAL of another server (EINVAL" <<<"$line" || fail "$leader did not say why: $line"
# the monitor's view lags up to a round: read the count once it shows the server gave up
for _ in $(seq 40); do
    grep -q "cannot be reopened" <<<"$(healthz $li)" && break
    sleep 0.25
done
attempts=$(metric $li node_open_attempts_total)
sleep 3 # the backoff would have tried again by now
[ "$(metric $li node_open_attempts_total)" = "$attempts" ] ||
    fail "$leader keeps reopening: $attempts -> $(metric $li node_open_attempts_total) attempts"
[ "$(grep -c "a permanent error: not retrying" "$JR_CLUSTER_DIR/$leader/server.log")" -eq 1 ] ||
    fail "$leader logged its permanent error more than once"
out=$(healthz $li)
grep -q '"status":"unavailable"' <<<"$out" && grep -q "cannot be reopened" <<<"$out" &&
    grep -q "another server" <<<"$out" || fail "$leader's /healthz does not say why: $out"
out=$("${L[@]}" stream info WF 2>&1) && fail "stream info through $leader succeeded: $out"
grep -q "temporarily unavailable" <<<"$out" || fail "stream info through $leader: $out"
[ "$(cat "$JR_CLUSTER_DIR/$leader/pid")" = "$pid" ] && kill -0 "$pid" || fail "$leader exited"
step "$leader gave up once, after $attempts opens in all: $line"

# ---- the same at start: exit status 78 and the reason ----
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "$leader did not stop on SIGTERM"
start_refused() { # start_refused PATTERN: the server refuses to start, saying PATTERN
    local rc
    set +e
    timeout 20 "$real_bin" -c "$JR_CLUSTER_DIR/$leader/server.json" \
        >"$JR_CLUSTER_DIR/$leader/refused.log" 2>&1
    rc=$?
    set -e
    [ $rc -eq 78 ] || fail "$leader's start: status $rc, not 78: $(cat "$JR_CLUSTER_DIR/$leader/refused.log")"
    grep -q -- "$1" "$JR_CLUSTER_DIR/$leader/refused.log" ||
        fail "$leader's start did not say '$1': $(cat "$JR_CLUSTER_DIR/$leader/refused.log")"
    step "refused to start: $(grep "cannot open the node" "$JR_CLUSTER_DIR/$leader/refused.log")"
}
start_refused "cannot open the node: .*holds the WAL of another server (EINVAL: .*); not starting"
cp "$JR_CLUSTER_DIR/own-node-mark" "$wal/node"
"$real_bin" --keygen data "$JR_CLUSTER_DIR/$leader/data" >/dev/null
sed -i "s|^{|{\n  \"data_key\": \"$JR_CLUSTER_DIR/$leader/data.key\",|" "$JR_CLUSTER_DIR/$leader/server.json"
start_refused "cannot open the node: .*(EAUTH: the WAL and snapshot files were not written with this data key"
