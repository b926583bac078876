#!/usr/bin/env python3
"""Where the threads of running processes spend their wall time: on a CPU, waiting for one, or
off it (blocked on I/O, or sleeping), from /proc, without perf.

    bench/sched_sample.py --pids 101,102,103[,CLIENT] [--names n1,n2,n3,client]
                          [--delay S] [--seconds S] [--every MS]

After --delay seconds (default 0) it reads each thread's /proc/PID/task/TID/schedstat, then
for --seconds (default 4) reads every thread's state from /proc/PID/task/TID/stat every --every
milliseconds (default 2), then schedstat again. One JSON line per thread that was on a CPU or
waiting for one for at least 0.5% of the interval:

  cpu_pct    time on a CPU (schedstat, exact)
  runq_pct   time runnable but waiting for a CPU (schedstat, exact): a machine whose other
             work takes the CPUs shows here, whatever the program does
  io_pct     share of the state samples in D (uninterruptible: fdatasync, a page fault's
             read), an estimate
  sleep_pct  share of the state samples in S (idle: epoll_wait, a futex), an estimate

cpu_pct + runq_pct + io_pct + sleep_pct is about 100 for a thread that lived through the
interval. Use it beside bench/server_bench.sh (which prints the servers' process ids on
stderr): start the bench with e.g. `--only jetraft --async 800000 --sync 0 --consume 0`, and
this script with those ids and a --delay that lands in the async phase. The sampling itself
costs some CPU (one /proc read per thread per --every); on a busy machine compare runs taken the
same way, not with untraced bench numbers.
"""
import argparse
import json
import os
import sys
import time


def threads(pid):
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


def schedstat(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            cpu, wait, _ = (int(x) for x in f.read().split())
        return cpu, wait
    except (OSError, ValueError):
        return None


def state_comm(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            s = f.read()
    except OSError:
        return None, None
    lp, rp = s.find("("), s.rfind(")")
    return s[rp + 2 : rp + 3], s[lp + 1 : rp]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pids", required=True)
    ap.add_argument("--names", default="")
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--every", type=float, default=2.0)
    a = ap.parse_args()
    pids = [int(p) for p in a.pids.split(",") if p]
    names = a.names.split(",") if a.names else []
    label = {p: (names[i] if i < len(names) else str(p)) for i, p in enumerate(pids)}
    time.sleep(a.delay)

    tids = [(p, t) for p in pids for t in threads(p)]
    first = {k: schedstat(*k) for k in tids}
    w0 = time.monotonic_ns()
    states = {k: {} for k in tids}
    comm = {}
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        for k in tids:
            st, c = state_comm(*k)
            if st:
                states[k][st] = states[k].get(st, 0) + 1
                comm[k] = c
        time.sleep(a.every / 1000.0)
    last = {k: schedstat(*k) for k in tids}
    wall = time.monotonic_ns() - w0

    for k in tids:
        if not first[k] or not last[k]:
            continue
        cpu = 100.0 * (last[k][0] - first[k][0]) / wall
        runq = 100.0 * (last[k][1] - first[k][1]) / wall
        if cpu < 0.5 and runq < 0.5:
            continue
        n = sum(states[k].values()) or 1
        print(json.dumps({
            "name": label[k[0]], "pid": k[0], "tid": k[1], "comm": comm.get(k, "?"),
            "wall_ms": round(wall / 1e6), "cpu_pct": round(cpu, 1), "runq_pct": round(runq, 1),
            "io_pct": round(100.0 * states[k].get("D", 0) / n, 1),
            "sleep_pct": round(100.0 * states[k].get("S", 0) / n, 1),
            "samples": n,
        }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
