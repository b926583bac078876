#!/usr/bin/env bash
# jetraft-server's encryption at rest, end to end: three servers, each with its own data key
# (`--keygen data`), take an R3 stream and 300 publishes carrying a distinctive marker through
# the jetraft CLI; after a clean stop no file under any server's directories holds the marker;
# a server started with another key refuses to start and changes no file; with its own key it
# starts again and every replica serves the messages.
#
#   atrest_test.sh PATH/TO/jetraft PATH/TO/jetraft-server
set -euo pipefail
cli="$1"
export JR_SERVER_BIN="$2"
. "$(cd "$(dirname "$0")" && pwd)/cluster_test.sh"
cluster_test_start atrest 200
p1=$JR_CLIENT_PORT

# cluster.sh writes each configuration on the first start: add a data key to each.
"$cluster" start >/dev/null
"$cluster" stop >/dev/null
for n in n1 n2 n3; do
    "$JR_SERVER_BIN" --keygen data "$JR_CLUSTER_DIR/$n/data" >/dev/null
    "$JR_SERVER_BIN" --keygen data "$JR_CLUSTER_DIR/$n/other" >/dev/null
    rm -rf "$JR_CLUSTER_DIR/$n/wal" "$JR_CLUSTER_DIR/$n/store"
    mkdir -p "$JR_CLUSTER_DIR/$n/wal" "$JR_CLUSTER_DIR/$n/store"
    sed -i "s|^{|{\n  \"data_key\": \"$JR_CLUSTER_DIR/$n/data.key\",|" "$JR_CLUSTER_DIR/$n/server.json"
done
"$cluster" start >/dev/null
J=("$cli" -s "nats://127.0.0.1:$p1,nats://127.0.0.1:$((p1 + 1)),nats://127.0.0.1:$((p1 + 2))")
for _ in $(seq 60); do
    "${J[@]}" stream add SECRET --subjects "secret.>" --replicas 3 >/dev/null 2>&1 && break
    sleep 0.5
done
marker="JRATREST-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# one CLI run for 299 of them (a process per publish takes minutes on a loaded machine)
LSAN_OPTIONS="$async_pub_lsan" "${J[@]}" pub secret.x "$marker-x" --count 299 >/dev/null || fail "publishes 1-299"
"${J[@]}" pub secret.x "$marker-300" >/dev/null || fail "publish 300"
out=$("${J[@]}" stream info SECRET)
grep -q "Messages: 300" <<<"$out" || fail "the stream does not hold 300 messages: $out"
"$cluster" stop >/dev/null

for n in n1 n2 n3; do
    [ -n "$(find "$JR_CLUSTER_DIR/$n/wal" -type f)" ] || fail "$n wrote no WAL"
    if grep -rqa "JRATREST-" "$JR_CLUSTER_DIR/$n/wal" "$JR_CLUSTER_DIR/$n/store"; then
        fail "a payload is in clear text in $n's files: $(grep -rla "JRATREST-" "$JR_CLUSTER_DIR/$n")"
    fi
done
echo "ok: no published payload in any server's WAL, stores or snapshots"

# n2 with another server's key: refused, and not one file changed
sum() { find "$JR_CLUSTER_DIR/n2/wal" "$JR_CLUSTER_DIR/n2/store" -type f -exec sha256sum {} + | sort; }
before=$(sum)
sed -i "s|/n2/data.key|/n2/other.key|" "$JR_CLUSTER_DIR/n2/server.json"
set +e
timeout 20 "$JR_SERVER_BIN" -c "$JR_CLUSTER_DIR/n2/server.json" >"$JR_CLUSTER_DIR/n2/wrong.log" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "n2 started with another data key (status $rc)"
grep -q "not encrypted under this key" "$JR_CLUSTER_DIR/n2/wrong.log" || fail "n2 did not say why: $(cat "$JR_CLUSTER_DIR/n2/wrong.log")"
[ "$before" = "$(sum)" ] || fail "n2's refused start changed its files"
echo "ok: another key is refused ($(tail -n 1 "$JR_CLUSTER_DIR/n2/wrong.log"))"

# with its own key again: every replica serves the messages
sed -i "s|/n2/other.key|/n2/data.key|" "$JR_CLUSTER_DIR/n2/server.json"
"$cluster" start >/dev/null
ok=0
for _ in $(seq 120); do
    "${J[@]}" server check stream --stream SECRET --peer-expect 3 >/dev/null 2>&1 && { ok=1; break; }
    sleep 0.5
done
[ $ok -eq 1 ] || fail "SECRET was not healthy after the restart"
out=$("${J[@]}" stream get SECRET 300)
grep -q "$marker-300" <<<"$out" || fail "seq 300 does not read back: $out"
echo "ok: the servers start with their keys and serve every message"
