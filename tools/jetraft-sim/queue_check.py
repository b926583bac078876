#!/usr/bin/env python3
"""Jepsen's queue checker over a jetraft-sim history (JSON lines, docs/testing.md).

An outside reader of the history format: it knows nothing of the simulator but the format.
For each seed of the history it forms Jepsen's sets over the publishes and the final reads:

  attempted     values some publish was invoked with
  acknowledged  values some publish of returned ok
  read          values the final reads found
  lost          acknowledged - read (minus values a delete or purge may have removed)
  unexpected    read - attempted
  recovered     read, never acknowledged

and exits 1 if any seed lost or read something unexpected.

  queue_check.py HISTORY            check a history file
  queue_check.py --run SIM ARGS...  run SIM ARGS... --history <tmp> first, then check it
"""
import json
import os
import subprocess
import sys
import tempfile


def check(path):
    seeds = []
    cur = None
    for line in open(path):
        e = json.loads(line)
        ev = e["ev"]
        if ev == "run":
            cur = {"seed": e["seed"], "attempted": set(), "acked": {}, "read": set(),
                   "deleted": set(), "purged": {}}
            seeds.append(cur)
        elif cur is None:
            continue
        elif ev == "invoke" and e["f"] == "publish":
            cur["attempted"].add(e["value"])
        elif ev == "ok" and e["f"] == "publish":
            cur["acked"][e["value"]] = (e["stream"], e["seq"])
        elif ev in ("ok", "info") and e["f"] == "msg_delete":
            cur["deleted"].add((e["stream"], e["seq"]))
        elif ev in ("ok", "info") and e["f"] == "purge":
            s = e["stream"]
            cur["purged"][s] = max(cur["purged"].get(s, 0), e["seq"])
        elif ev == "final":
            cur["read"].add(e["value"])
    bad = 0
    for s in seeds:
        acked = set(s["acked"])
        removable = {v for v, (st, q) in s["acked"].items()
                     if (st, q) in s["deleted"] or q < s["purged"].get(st, 0)}
        lost = acked - s["read"] - removable
        unexpected = s["read"] - s["attempted"]
        recovered = s["read"] - acked
        print("seed %d: attempted %d, acknowledged %d, read %d, lost %d, unexpected %d, "
              "recovered %d" % (s["seed"], len(s["attempted"]), len(acked), len(s["read"]),
                                len(lost), len(unexpected), len(recovered)))
        if lost or unexpected:
            bad += 1
            print("  lost: %s; unexpected: %s" % (sorted(lost)[:20], sorted(unexpected)[:20]))
    return 1 if bad or not seeds else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--run":
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        try:
            rc = subprocess.call(sys.argv[2:] + ["--history", path])
            if rc != 0:
                return rc
            return check(path)
        finally:
            os.unlink(path)
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    return check(sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
