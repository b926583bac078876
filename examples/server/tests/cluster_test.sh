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
# LSAN_OPTIONS for the CLI's asynchronous publishes (pub --count) in sanitizer builds: the file
# says which libnats-internal report it suppresses and why
async_pub_lsan="suppressions=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/cli/libnats-async-pub.supp"

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
    # out of time: the caller's fail (which may print the servers' logs), then the EXIT trap
    trap 'trap - TERM; fail "the test ran out of time"' TERM
    # at exit: TERM ignored (the watchdog, stopped here, may send it as its sleep ends)
    trap 'trap "" TERM
          "$cluster" stop >/dev/null 2>&1 || true; pkill -P $cluster_watchdog 2>/dev/null || true
          kill $cluster_watchdog 2>/dev/null || true; rm -rf "$JR_CLUSTER_DIR"' EXIT
    local p1 p2 p3
    read -r p1 p2 p3 < <(python3 -c '
import os, random, socket
n = int(os.environ.get("JR_CLUSTER_SERVERS", "3"))
taken = set()
def free(q):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", q))
        return True
    except OSError:
        return False
    finally:
        s.close()
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
low = max(low, 12000)
def run():
    # n ports in a row that can be bound now, below the kernel ephemeral range: no connection
    # another test opens meanwhile takes one of them, and tests running side by side pick apart
    # at random
    while True:
        p = random.randrange(10000, low - n)
        ports = set(range(p, p + n))
        if not ports & taken and all(free(q) for q in ports):
            taken.update(ports)
            return p
print(run(), run(), run())')
    export JR_CLIENT_PORT=$p1 JR_CLUSTER_PORT=$p2 JR_HTTP_PORT=$p3
}
