# cluster_test.sh — sourced by the shell tests that run a jetraft-server cluster through
# examples/server/cluster.sh (examples/cli/cli_test.sh, atrest_test.sh): one call sets up a
# temporary directory, free loopback ports and a watchdog, and stops everything at exit.
#
#   cluster_test_start NAME SECONDS   (JR_SERVER_BIN set by the caller)
#
# Afterwards: $cluster is cluster.sh, JR_CLUSTER_DIR the directory (removed at exit),
# JR_CLIENT_PORT/JR_CLUSTER_PORT/JR_HTTP_PORT three runs of free ports, one a server (three, or
# JR_CLUSTER_SERVERS; exported for cluster.sh), and `fail MSG` ends the test. After SECONDS the
# test fails as out of time; the watchdog's output is not on the test's, so that the test's end
# does not wait for it.
cluster="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/cluster.sh"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

cluster_test_start() {
    export JR_CLUSTER_DIR
    JR_CLUSTER_DIR="$(mktemp -d "/tmp/jetraft-$1-XXXXXX")"
    (
        sleep "$2"
        kill -TERM $$
    ) >/dev/null 2>&1 &
    cluster_watchdog=$!
    trap 'echo "FAIL: the test ran out of time" >&2; exit 1' TERM
    trap '"$cluster" stop >/dev/null 2>&1 || true; pkill -P $cluster_watchdog 2>/dev/null || true
          kill $cluster_watchdog 2>/dev/null || true; rm -rf "$JR_CLUSTER_DIR"' EXIT
    local p1 p2 p3
    read -r p1 p2 p3 < <(python3 -c '
import os, socket
n = int(os.environ.get("JR_CLUSTER_SERVERS", "3"))
taken = set()
def run():
    # n free ports in a row, apart from the runs picked before (the kernel hands out
    # neighbouring ports one after the other)
    while True:
        s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
        ports = set(range(p, p + n))
        if p < 60000 and not ports & taken and all(
                socket.socket().connect_ex(("127.0.0.1", q)) != 0 for q in ports):
            taken.update(ports)
            return p
print(run(), run(), run())')
    export JR_CLIENT_PORT=$p1 JR_CLUSTER_PORT=$p2 JR_HTTP_PORT=$p3
}
