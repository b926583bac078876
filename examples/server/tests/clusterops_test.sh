#!/usr/bin/env bash
# The cluster operations end to end on four jetraft-server processes with users (one system
# user, one not), through the jetraft CLI and a raw NATS client: `server list` shows every
# server; a stream peer and a consumer peer are removed and a replacement takes each replica; a
# server is evacuated and its replicas move off it; bad input (unknown stream, peer or server, malformed JSON) is
# answered with JetStream's error and changes nothing; a non-system user is refused the system
# operations; of two server removals sent at once the second is refused as a member change in
# progress, and the monitoring then counts three servers; META.RESCUE is answered on the server
# that takes it; ACCOUNT.PURGE deletes every stream and consumer; a server left alone answers
# JetStream's 10008 at once. Bounded in time; everything it starts is stopped at the end.
#
#   clusterops_test.sh PATH/TO/jetraft PATH/TO/jetraft-server
set -euo pipefail
cli="$1"
export JR_SERVER_BIN="$2"
export JR_CLUSTER_SERVERS=4
. "$(cd "$(dirname "$0")" && pwd)/cluster_test.sh"
cluster_test_start clusterops 150
p1=$JR_CLIENT_PORT

pwhash() { printf '%s\n' "$1" | "$JR_SERVER_BIN" --hash-password; }
JR_CLUSTER_USERS="[{\"user\": \"app\", \"password\": \"$(pwhash app-pw)\"},
  {\"user\": \"admin\", \"password\": \"$(pwhash admin-pw)\", \"system\": true}]"
export JR_CLUSTER_USERS
"$cluster" start >/dev/null
urls="nats://127.0.0.1:$p1,nats://127.0.0.1:$((p1 + 1)),nats://127.0.0.1:$((p1 + 2)),nats://127.0.0.1:$((p1 + 3))"
APP=("$cli" -s "$urls" --user app --password app-pw)
ADM=("$cli" -s "$urls" --user admin --password admin-pw)

t0=$(date +%s)
step() { echo "[$(($(date +%s) - t0)) s] $*"; }
fail() {
    echo "FAIL: $*" >&2
    for n in n1 n2 n3 n4; do tail -n 15 "$JR_CLUSTER_DIR/$n/server.log" >&2 || true; done
    exit 1
}
expect() { # expect WHAT PATTERN OUTPUT
    grep -q -- "$2" <<<"$3" || fail "$1: no '$2' in:
$3"
}
# refused WHAT PATTERN CMD...: the command exits non-zero and says PATTERN
refused() {
    local what=$1 pat=$2 out rc
    shift 2
    set +e
    out=$("$@" 2>&1)
    rc=$?
    set -e
    [ $rc -ne 0 ] || fail "$what: exited 0:
$out"
    expect "$what" "$pat" "$out"
}
# raw PORT USER PASS SUBJECT BODY [SUBJECT BODY ...]: the requests sent in one write on one
# connection (so they reach the server together), each reply printed on a line, in order
# (TIMEOUT for one not answered within RAW_WAIT seconds, 15 by default).
raw() {
    python3 - "$@" <<'PY'
import json, os, socket, sys, time
port, user, pw = int(sys.argv[1]), sys.argv[2], sys.argv[3]
reqs = list(zip(sys.argv[4::2], sys.argv[5::2]))
s = socket.create_connection(("127.0.0.1", port), timeout=15)
out = "CONNECT %s\r\nSUB _R.> 1\r\n" % json.dumps({"user": user, "pass": pw, "verbose": False})
for i, (subj, body) in enumerate(reqs):
    b = body.encode()
    out += "PUB %s _R.%d %d\r\n" % (subj, i, len(b)) + body + "\r\n"
s.sendall((out + "PING\r\n").encode())
s.settimeout(0.5)
buf, got = b"", {}
deadline = time.time() + float(os.environ.get("RAW_WAIT", "15"))
while len(got) < len(reqs) and time.time() < deadline:
    try:
        buf += s.recv(65536)
    except socket.timeout:
        continue
    while b"\r\n" in buf:
        line, rest = buf.split(b"\r\n", 1)
        if line.startswith(b"MSG "):
            parts = line.split()
            n = int(parts[-1])
            if len(rest) < n + 2:
                break
            got[int(parts[1].split(b".")[1])] = rest[:n].decode()
            buf = rest[n + 2:]
        elif line.startswith(b"-ERR"):
            print(line.decode(), file=sys.stderr)
            buf = rest
        else:
            buf = rest
for i in range(len(reqs)):
    print(got.get(i, "TIMEOUT"))
PY
}
# the stream's peers (leader first) as the stream info says, on one line
peers() {
    "${APP[@]}" --json stream info "$1" 2>/dev/null |
        jq -r '[.cluster.leader] + [.cluster.replicas[]?.name] | map(select(. != null)) | join(" ")'
}
# until STREAM has N peers, none of them $3, none pending, no move in flight
wait_peers() {
    local s=$1 n=$2 gone=$3 info
    for _ in $(seq 120); do
        info=$("${APP[@]}" --json stream info "$s" 2>/dev/null || true)
        if [ -n "$info" ] && jq -e --arg g "$gone" --argjson n "$n" '
            ([.cluster.leader] + [.cluster.replicas[]?.name] | map(select(. != null))) as $p |
            ($p | length) == $n and ($p | index($g)) == null and
            ([.cluster.replicas[]? | select(.pending == true)] | length) == 0 and
            (.cluster.desired == null)' <<<"$info" >/dev/null; then
            return 0
        fi
        sleep 0.25
    done
    fail "$s never settled on $n peers without $gone: $info"
}

step "cluster of four started"
for _ in $(seq 80); do
    out=$("${APP[@]}" stream add ORDERS --subjects "orders.>" --replicas=2 --defaults 2>&1) && break
    sleep 0.5
done
expect "stream add" "Stream ORDERS was created" "$out"
out=$(LSAN_OPTIONS="$async_pub_lsan" "${APP[@]}" pub orders.new --count 20 --size 32 2>&1)
expect "pub" "20 / 20 acknowledged" "$out"

# ---- server list ----
step "server list"
for _ in $(seq 40); do
    out=$("${ADM[@]}" server list 2>&1) && grep -q " leader " <<<"$out" && break
    sleep 0.25
done
for n in n1 n2 n3 n4; do expect "server list" "^$n  *C1  *az:" "$out"; done
expect "server list" "4 servers, meta leader n" "$out"
[ "$(grep -c '^n[0-9].* leader ' <<<"$out")" -eq 1 ] || fail "server list: not one meta leader:
$out"
out=$("${ADM[@]}" --json server list --expect 4)
[ "$(jq length <<<"$out")" -eq 4 ] || fail "server list --json: not four servers: $out"
[ "$(jq '[.[] | select(.jetraft.meta_role == "leader")] | length' <<<"$out")" -eq 1 ] ||
    fail "server list --json: not one leader: $out"

# ---- a non-system user ----
step "a non-system user is refused"
refused "server list as app" "Permissions Violation" "${APP[@]}" --timeout 1s server list
refused "peer-remove as app" "Permissions Violation" \
    "${APP[@]}" --timeout 1s server cluster peer-remove n4
refused "evacuate as app" "Permissions Violation" "${APP[@]}" --timeout 1s server evacuate n4
refused "move as app" "Permissions Violation" \
    "${APP[@]}" --timeout 1s stream cluster move ORDERS --from n1

# ---- bad input: an error, nothing changes ----
step "bad input"
before=$(peers ORDERS)
[ "$(wc -w <<<"$before")" -eq 2 ] || fail "ORDERS does not have two peers: $before"
notpeer=""
for n in n1 n2 n3 n4; do grep -qw "$n" <<<"$before" || { notpeer=$n; break; }; done
refused "peer-remove of an unknown stream" "stream not found (code 404, err_code 10059)" \
    "${APP[@]}" stream cluster peer-remove NOPE n1
refused "peer-remove of a non-member" "peer not a member (code 400, err_code 10040)" \
    "${APP[@]}" stream cluster peer-remove ORDERS "$notpeer"
refused "removal of an unknown server" \
    "server is not a member of the cluster (code 400, err_code 10044)" \
    "${ADM[@]}" server cluster peer-remove nobody
refused "evacuation of an unknown server" "err_code 10044" "${ADM[@]}" server evacuate nobody
refused "cancel of no move" "stream reconfiguration not in progress" \
    "${ADM[@]}" stream cluster cancel-move ORDERS
out=$("${APP[@]}" --json stream cluster peer-remove NOPE n1 2>/dev/null || true)
[ "$(jq -r .error.err_code <<<"$out")" = 10059 ] || fail "--json error: $out"
out=$(raw "$p1" app app-pw '$JS.API.STREAM.PEER.REMOVE.ORDERS' '{"peer":' \
    '$JS.API.STREAM.PEER.REMOVE.ORDERS' '' \
    '$JS.API.STREAM.PEER.REMOVE.ORDERS' '{"peer":7}')
expect "malformed JSON" '"err_code":10025' "$(sed -n 1p <<<"$out")"
expect "empty request" '"code":400,"err_code":10003,"description":"bad request"' "$(sed -n 2p <<<"$out")"
expect "peer of the wrong type" '"err_code":10003' "$(sed -n 3p <<<"$out")"
out=$(raw "$p1" admin admin-pw '$JS.API.SERVER.REMOVE' '[1' '$JS.API.SERVER.REMOVE' '{}')
expect "malformed SERVER.REMOVE" '"err_code":10025' "$(sed -n 1p <<<"$out")"
expect "empty SERVER.REMOVE" '"type":"io.nats.jetstream.api.v1.meta_server_remove_response"' \
    "$(sed -n 2p <<<"$out")"
[ "$(peers ORDERS)" = "$before" ] || fail "bad input changed ORDERS' peers: $before -> $(peers ORDERS)"
out=$("${ADM[@]}" server list)
expect "bad input changed the servers" "4 servers" "$out"

# ---- stream peer-remove ----
follower=$(cut -d' ' -f2 <<<"$before")
step "peer-remove $follower from ORDERS ($before)"
out=$("${APP[@]}" stream cluster peer-remove ORDERS "$follower")
expect "peer-remove" "Removing peer $follower from stream ORDERS" "$out"
wait_peers ORDERS 2 "$follower"
step "ORDERS now on $(peers ORDERS)"
out=$("${APP[@]}" stream info ORDERS)
expect "after peer-remove" "Messages: 20" "$out"

# ---- consumer peer-remove ----
out=$("${APP[@]}" consumer add ORDERS C1 --replicas 1)
expect "consumer add" "Information for Consumer ORDERS > C1" "$out"
cpeer() { "${APP[@]}" --json consumer info ORDERS C1 2>/dev/null | jq -r '.cluster.leader // empty'; }
for _ in $(seq 40); do c1=$(cpeer) && [ -n "$c1" ] && break; sleep 0.25; done
[ -n "$c1" ] || fail "consumer C1 has no leader"
step "peer-remove $c1 from consumer C1 (stream on $(peers ORDERS))"
out=$("${APP[@]}" consumer cluster peer-remove ORDERS C1 "$c1")
expect "consumer peer-remove" "Moving consumer ORDERS > C1 off $c1" "$out"
for _ in $(seq 80); do
    now=$(cpeer) && [ -n "$now" ] && [ "$now" != "$c1" ] && grep -qw "$now" <<<"$(peers ORDERS)" &&
        break
    sleep 0.25
done
[ -n "$now" ] && [ "$now" != "$c1" ] || fail "consumer C1 is still on $c1"
refused "consumer peer-remove of a non-member" "peer not a member (code 400, err_code 10040)" \
    "${APP[@]}" consumer cluster peer-remove ORDERS C1 "$c1"
refused "consumer peer-remove of an unknown consumer" "err_code 10014" \
    "${APP[@]}" consumer cluster peer-remove ORDERS NOPE "$now"
for _ in $(seq 40); do
    "${APP[@]}" --json consumer info ORDERS C1 2>/dev/null | jq -e '.cluster.desired == null' \
        >/dev/null && break
    sleep 0.25
done
out=$("${APP[@]}" consumer rm ORDERS C1)
expect "consumer rm" "Deleted consumer ORDERS > C1" "$out"

# ---- server evacuate ----
evac=$(cut -d' ' -f1 <<<"$(peers ORDERS)")
step "evacuate $evac"
out=$("${ADM[@]}" server evacuate "$evac")
expect "evacuate" "Evacuating $evac" "$out"
out=$("${ADM[@]}" --json server list --expect 4)
[ "$(jq --arg e "$evac" '.[] | select(.server.name == $e) | .jetraft.draining' <<<"$out")" = true ] ||
    fail "server list does not show $evac draining: $out"
wait_peers ORDERS 2 "$evac"
step "ORDERS moved off $evac: $(peers ORDERS)"
for _ in $(seq 40); do
    out=$("${ADM[@]}" --json server list --expect 4)
    [ "$(jq --arg e "$evac" '.[] | select(.server.name == $e) | .jetraft.assets' <<<"$out")" = 0 ] &&
        break
    sleep 0.25
done
[ "$(jq --arg e "$evac" '.[] | select(.server.name == $e) | .jetraft | .assets + (.remaining | length)' \
    <<<"$out")" = 0 ] || fail "server list: $evac still holds replicas: $out"
out=$("${APP[@]}" stream info ORDERS)
expect "after evacuate" "Messages: 20" "$out"
out=$("${ADM[@]}" server evacuate "$evac" --cancel)
expect "evacuate --cancel" "Ended the evacuation of $evac" "$out"
refused "second cancel" "is not draining" "${ADM[@]}" server evacuate "$evac" --cancel

# ---- ACCOUNT.STREAM.MOVE off one server ----
off=$(cut -d' ' -f2 <<<"$(peers ORDERS)")
step "move ORDERS off $off ($(peers ORDERS))"
out=$("${ADM[@]}" stream cluster move ORDERS --from "$off")
expect "stream cluster move" "Moving stream ORDERS" "$out"
wait_peers ORDERS 2 "$off"
refused "move of an unknown stream" "stream not found" \
    "${ADM[@]}" stream cluster move NOPE --from "$off"

# ---- two server removals at once ----
meta=$("${ADM[@]}" --json server list --expect 4 |
    jq -r '.[] | select(.jetraft.meta_role == "leader") | .server.name')
[ -n "$meta" ] || fail "no meta leader before the removals"
others=()
for n in n1 n2 n3 n4; do [ "$n" != "$meta" ] && others+=("$n"); done
victim=${others[0]} second=${others[1]}
i=$((${meta#n} - 1))
step "$victim killed; removing $victim and $second at once through $meta"
"$cluster" kill "$victim" >/dev/null
out=$(raw "$((p1 + i))" admin admin-pw '$JS.API.SERVER.REMOVE' "{\"peer\":\"$victim\"}" \
    '$JS.API.SERVER.REMOVE' "{\"peer\":\"$second\"}")
ok=$(grep -c '"success":true' <<<"$out" || true)
busy=$(grep -c '"code":400,"err_code":10202,"description":"cluster member change is in progress"' \
    <<<"$out" || true)
[ "$ok" -eq 1 ] && [ "$busy" -eq 1 ] || fail "two removals at once: not one success and one refusal:
$out"
removed=$victim
grep -q success <<<"$(sed -n 2p <<<"$out")" && removed=$second
for _ in $(seq 40); do
    out=$("${ADM[@]}" -s "nats://127.0.0.1:$((p1 + i))" server list 2>&1) &&
        grep -q "3 servers" <<<"$out" && break
    sleep 0.25
done
expect "server list after the removal" "3 servers" "$out"
grep -q "^$removed " <<<"$out" && fail "server list still shows $removed:
$out"
step "removed $removed"

# ---- monitoring: the committed membership ----
http=$((JR_HTTP_PORT + i))
# (the monitor's view is refreshed once its round's requests are answered: a stream check of a
# stream without a leader holds it until the request times out)
for _ in $(seq 100); do
    jsz=$(curl -s "http://127.0.0.1:$http/jsz" || true)
    [ "$(jq -r '.meta_cluster.cluster_size' <<<"$jsz" 2>/dev/null)" = 3 ] && break
    sleep 0.25
done
[ "$(jq -r '.meta_cluster.cluster_size' <<<"$jsz")" = 3 ] || fail "/jsz cluster_size after the removal: $jsz"
[ "$(jq -r '[.meta_cluster.replicas[].name] | length' <<<"$jsz")" = 2 ] ||
    fail "/jsz lists other than the leader's two peers: $jsz"
out=$(curl -s "http://127.0.0.1:$http/healthz")
[ "$(jq -r .peers <<<"$out")" = 2 ] || fail "/healthz peers after the removal: $out"
out=$(curl -s "http://127.0.0.1:$http/metrics")
expect "/metrics cluster size" "^jetraft_cluster_size{server=\"$meta\"} 3$" "$out"
step "/jsz cluster_size 3, /healthz peers 2 on $meta"

# ---- META.RESCUE: jr_node_rescue on the server that takes it ----
out=$(raw "$((p1 + i))" admin admin-pw '$JS.API.META.RESCUE' '{"peer":"nobody"}' \
    '$JS.API.META.RESCUE' "{\"peer\":\"$meta\"}" '$JS.API.META.RESCUE' '{}' \
    '$JS.API.META.RESCUE' "{\"peer\":\"$removed\"}")
expect "rescue of an unknown server" '"code":400,"err_code":10044' "$(sed -n 1p <<<"$out")"
expect "rescue of an unknown server" "not a known server" "$(sed -n 1p <<<"$out")"
expect "rescue of the server itself" '"err_code":10003,"description":"rescue:' "$(sed -n 2p <<<"$out")"
expect "rescue without a peer" '"code":400,"err_code":10003' "$(sed -n 3p <<<"$out")"
expect "rescue of $removed" '"type":"io.nats.jetstream.api.v1.meta_rescue_response"' \
    "$(sed -n 4p <<<"$out")"
expect "rescue of $removed" "\"success\":true,\"server\":\"$meta\"" "$(sed -n 4p <<<"$out")"
grep -q "RESCUE: server '$removed' is taken to hold nothing" "$JR_CLUSTER_DIR/$meta/server.log" ||
    fail "$meta did not log the rescue"
out=$(RAW_WAIT=2 raw "$((p1 + i))" app app-pw '$JS.API.META.RESCUE' "{\"peer\":\"$removed\"}" 2>&1)
expect "rescue as app" "Permissions Violation" "$out"
expect "rescue as app" "TIMEOUT" "$out"
step "META.RESCUE answered on $meta, refused to app"

# ---- ACCOUNT.PURGE: every stream and consumer gone ----
out=$("${APP[@]}" stream add PURGED --subjects "purged.>" --replicas=1 --defaults 2>&1)
expect "stream add PURGED" "Stream PURGED was created" "$out"
out=$("${APP[@]}" consumer add PURGED PC --replicas 1)
expect "consumer add PC" "Information for Consumer PURGED > PC" "$out"
out=$(LSAN_OPTIONS="$async_pub_lsan" "${APP[@]}" pub purged.x --count 5 2>&1)
expect "pub PURGED" "5 / 5 acknowledged" "$out"
out=$(RAW_WAIT=2 raw "$((p1 + i))" app app-pw '$JS.API.ACCOUNT.PURGE.$G' '' 2>&1)
expect "purge as app" "Permissions Violation" "$out"
[ "$("${APP[@]}" stream ls)" != "No streams defined" ] || fail "the refused purge deleted streams"
out=$(raw "$((p1 + i))" admin admin-pw '$JS.API.ACCOUNT.PURGE.$G' '' '$JS.API.ACCOUNT.PURGE' '')
jq -e '.initiated == true and .type == "io.nats.jetstream.api.v1.account_purge_response"' \
    <<<"$(sed -n 1p <<<"$out")" >/dev/null || fail "purge as admin: $out"
expect "purge without its account" '"code":501' "$(sed -n 2p <<<"$out")"
grep -q "purge request for account \$G (streams: 2" "$JR_CLUSTER_DIR/$meta/server.log" ||
    fail "$meta did not log the purge of two streams"
for _ in $(seq 80); do
    out=$("${APP[@]}" stream ls 2>&1) && grep -q "No streams defined" <<<"$out" && break
    sleep 0.25
done
expect "stream ls after the purge" "No streams defined" "$out"
refused "consumer info after the purge" "stream not found" "${APP[@]}" consumer info PURGED PC
step "ACCOUNT.PURGE deleted every stream, refused to app"

# ---- a meta group left without a quorum answers 10008 at once ----
for n in n1 n2 n3 n4; do [ "$n" = "$meta" ] || "$cluster" kill "$n" >/dev/null 2>&1 || true; done
sleep 3.5 # the meta leader steps down within an election timeout, and one more passes
t1=$(date +%s%N)
out=$(RAW_WAIT=3 raw "$((p1 + i))" app app-pw '$JS.API.STREAM.NAMES' '' \
    '$JS.API.STREAM.CREATE.LATE' '{"name":"LATE","subjects":["late.>"]}')
ms=$((($(date +%s%N) - t1) / 1000000))
expect "names without a meta quorum" '"code":503,"err_code":10008' "$(sed -n 1p <<<"$out")"
expect "create without a meta quorum" '"code":503,"err_code":10008' "$(sed -n 2p <<<"$out")"
[ "$ms" -lt 1500 ] || fail "without a meta quorum the answers took $ms ms"
step "alone, $meta answered 10008 at once ($ms ms)"
echo "ok: cluster operations on four jetraft-server processes"
