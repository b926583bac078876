#!/usr/bin/env bash
# Runs a 3-server jetraft-server cluster on 127.0.0.1, each server with its own directory under
# a base directory (default /tmp/jetraft-cluster; set JR_CLUSTER_DIR to change it).
# JR_CLUSTER_SERVERS=N runs n1..nN instead; JR_CLUSTER_USERS (a JSON array of users, as the
# configuration's "users") is written into every server's configuration, and so is
# JR_CLUSTER_SYNC ("always", the default, or "interval": the configuration's "sync"; a bench's
# way to time the cluster with no fdatasync before any acknowledgement); JR_CLUSTER_SYNC_OFFLOAD=1
# sets "sync_offload": true (the fdatasync runs on libuv's threadpool).
#
#   cluster.sh start            make the keys and write the configs (first time), start n1, n2, n3
#   cluster.sh stop             SIGTERM every server (clean shutdown) and wait for it
#   cluster.sh kill NAME        SIGKILL one server (e.g. the stream leader)
#   cluster.sh restart NAME     start one server again (after kill or stop)
#   cluster.sh status           which servers run
#
# Ports: clients 4222+i, cluster 6222+i, HTTP monitoring 8222+i for server n(i+1) (override the
# bases with JR_CLIENT_PORT, JR_CLUSTER_PORT, JR_HTTP_PORT). The binary is found next to this
# script's build (build/examples/server/jetraft-server) unless JR_SERVER_BIN says otherwise.
#
# Keys (made once with the server's key tool, kept under the base directory): the cluster
# authority in keys/authority.key (secret; only --sign needs it) and keys/authority.pub, and for
# each server its identity key pair and its certificate in <name>/identity.key, identity.pub and
# <name>.cert. The peer links are authenticated and encrypted with them.
#
# The servers run with malloc's heap on transparent huge pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1,
# glibc 2.35 or later; a GLIBC_TUNABLES in the environment is passed as it is instead): fewer
# page faults as a store's index grows (the server's README, huge_pages).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
base="${JR_CLUSTER_DIR:-/tmp/jetraft-cluster}"
bin="${JR_SERVER_BIN:-$here/../../build/examples/server/jetraft-server}"
cport="${JR_CLIENT_PORT:-4222}"
rport="${JR_CLUSTER_PORT:-6222}"
hport="${JR_HTTP_PORT:-8222}"
names=()
for ((k = 1; k <= ${JR_CLUSTER_SERVERS:-3}; k++)); do names+=("n$k"); done

make_keys() {
    local name=$1 dir="$base/$1"
    mkdir -p "$base/keys" "$dir"
    if [ ! -f "$base/keys/authority.key" ]; then
        "$bin" --keygen authority "$base/keys/authority" >/dev/null
    fi
    if [ ! -f "$dir/$name.cert" ]; then
        [ -f "$dir/identity.key" ] || "$bin" --keygen identity "$dir/identity" >/dev/null
        "$bin" --sign --authority "$base/keys/authority.key" --identity "$dir/identity.pub" \
            --cluster C1 --name "$name" --out "$dir/$name.cert" >/dev/null
    fi
}

write_config() {
    local i=$1 name=${names[$1]} dir="$base/${names[$1]}"
    mkdir -p "$dir/wal" "$dir/store"
    make_keys "$name"
    [ -f "$dir/server.json" ] && return 0
    local peers="" j extra=""
    [ -n "${JR_CLUSTER_USERS:-}" ] && extra=$',\n  "users": '"$JR_CLUSTER_USERS"
    [ -n "${JR_CLUSTER_SYNC:-}" ] && extra+=$',\n  "sync": "'"$JR_CLUSTER_SYNC"'"'
    [ -n "${JR_CLUSTER_SYNC_OFFLOAD:-}" ] && extra+=$',\n  "sync_offload": true'
    for j in "${!names[@]}"; do
        peers+="${peers:+, }\"${names[$j]}\": \"127.0.0.1:$((rport + j))\""
    done
    cat >"$dir/server.json" <<JSON
{
  "name": "$name",
  "cluster": "C1",
  "tags": ["az:$((i + 1))"],
  "listen": "127.0.0.1:$((cport + i))",
  "cluster_listen": "127.0.0.1:$((rport + i))",
  "http_listen": "127.0.0.1:$((hport + i))",
  "peers": { $peers },
  "wal_dir": "$dir/wal",
  "store_dir": "$dir/store",
  "authority": "$base/keys/authority.pub",
  "identity": "$dir/identity.key",
  "certificate": "$dir/$name.cert"$extra
}
JSON
}

index_of() {
    local j
    for j in "${!names[@]}"; do [ "${names[$j]}" = "$1" ] && { echo "$j"; return 0; }; done
    echo "cluster.sh: unknown server '$1' (${names[*]})" >&2
    exit 2
}

running() {
    local pidf="$base/$1/pid"
    [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null
}

start_one() {
    local name=$1 i
    i=$(index_of "$name")
    write_config "$i"
    if running "$name"; then echo "$name already runs (pid $(cat "$base/$name/pid"))"; return 0; fi
    GLIBC_TUNABLES="${GLIBC_TUNABLES:-glibc.malloc.hugetlb=1}" \
        "$bin" -c "$base/$name/server.json" >>"$base/$name/server.log" 2>&1 &
    echo $! >"$base/$name/pid"
    echo "$name started (pid $!, clients on 127.0.0.1:$((cport + i)), log $base/$name/server.log)"
}

stop_one() {
    local name=$1 sig=$2
    if ! running "$name"; then echo "$name is not running"; return 0; fi
    local pid
    pid=$(cat "$base/$name/pid")
    kill "-$sig" "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$base/$name/pid"
    echo "$name stopped ($sig)"
}

case "${1:-}" in
start) for n in "${names[@]}"; do start_one "$n"; done ;;
stop) for n in "${names[@]}"; do stop_one "$n" TERM; done ;;
kill) [ $# -eq 2 ] || { echo "usage: $0 kill NAME" >&2; exit 2; }; index_of "$2" >/dev/null; stop_one "$2" KILL ;;
restart) [ $# -eq 2 ] || { echo "usage: $0 restart NAME" >&2; exit 2; }; stop_one "$2" TERM; start_one "$2" ;;
status) for n in "${names[@]}"; do if running "$n"; then echo "$n: running (pid $(cat "$base/$n/pid"))"; else echo "$n: stopped"; fi; done ;;
*) echo "usage: $0 start|stop|kill NAME|restart NAME|status" >&2; exit 2 ;;
esac
