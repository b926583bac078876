#!/usr/bin/env python3
"""Where one synchronous publish spends its time, from a `perf trace` of the three servers.

Reads the output of

    perf trace -e read,write,pwrite64,fdatasync,epoll_wait -p PID1,PID2,PID3 -o FILE

taken while bench/server_bench runs its sync phase against a 3-server jetraft-server cluster on
this machine (bench/server_bench.sh prints the servers' process ids on stderr), and prints, for
the publishes in it, the median time of each step after the stream leader read the publish:
its APPENDs to the followers, its WAL write and sync, each follower's read, write, sync and
acknowledgement, and the answer to the client. The leader is the server that answers the
client (the only one writing 75..80-byte frames, the publish acks); its client connection is
the descriptor they go to. Steps of the followers are listed by arrival order (first, second),
not by server. Tracing slows every syscall by some microseconds: compare traces with each
other, not with the bench's untraced numbers.

    bench/sync_trace.py FILE
"""
import re
import statistics
import sys
from collections import Counter, defaultdict

LINE = re.compile(r"\s*([\d.]+) \(\s*([\d.]*)\s*(?:ms)?\): [\w.-]+/(\d+)\s+(.*)$")


def parse(path):
    """Per process, the completed calls: (start ms, end ms, name, fd, return value)."""
    calls = defaultdict(list)
    open_calls = {}
    for line in open(path, errors="replace"):
        m = LINE.match(line)
        if not m:
            continue
        start, dur, pid, rest = float(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
        if rest.startswith("..."):
            c = re.search(r"continued\]: (\w+)\(\)\)\s+= (-?\d+)", rest)
            if c and dur:
                k = (pid, c.group(1), start)
                if k in open_calls:
                    name, fd = open_calls.pop(k)
                    calls[pid].append((start, start + float(dur), name, fd, int(c.group(2))))
            continue
        c = re.match(r"(\w+)\(", rest)
        if not c:
            continue
        fd = re.search(r"fd: (\d+)", rest)
        fd = int(fd.group(1)) if fd else None
        ret = re.search(r"\)\s+= (-?\d+)\s*$", rest)
        if ret and dur:
            calls[pid].append((start, start + float(dur), c.group(1), fd, int(ret.group(1))))
        else:
            open_calls[(pid, c.group(1), start)] = (c.group(1), fd)
    for v in calls.values():
        v.sort()
    return calls


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    calls = parse(sys.argv[1])

    def acks(pid):
        return Counter(c[3] for c in calls[pid] if c[2] == "write" and 75 <= c[4] <= 80)

    leader = max(calls, key=lambda p: sum(acks(p).values()))
    client_fd = acks(leader).most_common(1)[0][0]
    L = calls[leader]
    reads = [c for c in L if c[2] == "read" and c[3] == client_fd and c[4] > 0]
    followers = [p for p in calls if p != leader]
    steps = defaultdict(list)
    for a, b in zip(reads, reads[1:]):
        t0, t1 = a[0], b[0]
        answer = next((c for c in L if t0 <= c[0] < t1 and c[2] == "write" and c[3] == client_fd),
                      None)
        sync = next((c for c in L if t0 <= c[0] < t1 and c[2] == "fdatasync"), None)
        if not answer or not sync:
            continue
        sends = [c for c in L if t0 <= c[0] < sync[0] and c[2] == "write" and c[3] != client_fd]
        fl = []
        for p in followers:
            w = [c for c in calls[p] if t0 <= c[0] < t1]
            rd = next((c for c in w if c[2] == "read" and c[4] > 100), None)
            fs = next((c for c in w if c[2] == "fdatasync" and rd and c[0] > rd[0]), None)
            ack = next((c for c in w if c[2] == "write" and fs and c[0] >= fs[1]), None)
            if rd and fs and ack:
                fl.append((rd[0], fs[0], fs[1], ack[0]))
        if len(fl) != 2:
            continue
        fl.sort(key=lambda f: f[3])  # by acknowledgement: the first one commits with the leader
        row = {
            "leader: APPEND to the 1st peer": sends[0][0] if sends else None,
            "leader: APPEND to the 2nd peer": sends[1][0] if len(sends) > 1 else None,
            "leader: fdatasync starts": sync[0],
            "leader: fdatasync ends": sync[1],
        }
        for i, f in enumerate(fl):
            n = ("1st", "2nd")[i]
            row["%s follower to ack: reads the APPEND" % n] = f[0]
            row["%s follower to ack: fdatasync starts" % n] = f[1]
            row["%s follower to ack: fdatasync ends" % n] = f[2]
            row["%s follower to ack: sends its ack" % n] = f[3]
        row["leader: answers the client"] = answer[0]
        for k, v in row.items():
            if v is not None:
                steps[k].append((v - t0) * 1000)
        steps["answer after the 1st ack was sent"].append((answer[0] - fl[0][3]) * 1000)
        steps["answer after the leader's own sync"].append((answer[0] - sync[1]) * 1000)
        steps["publish to publish"].append((t1 - t0) * 1000)
    n = len(steps["publish to publish"])
    print("leader pid %d, client fd %d, %d publishes; medians in microseconds after the leader "
          "read the publish" % (leader, client_fd, n))
    order = sorted((k for k in steps if not k.startswith(("answer after", "publish to"))),
                   key=lambda k: statistics.median(steps[k]))
    for k in order + ["answer after the 1st ack was sent", "answer after the leader's own sync",
                      "publish to publish"]:
        v = sorted(steps[k])
        if v:
            print("  %-44s p50 %6.0f   (p25 %6.0f, p75 %6.0f)" %
                  (k, statistics.median(v), v[len(v) // 4], v[3 * len(v) // 4]))


if __name__ == "__main__":
    main()
