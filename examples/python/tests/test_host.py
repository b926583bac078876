"""A host written in Python drives real nodes: jetraft.open_node with a Host subclass.

Three nodes over the POSIX file system (a temporary directory), linked by an in-process
"network" with a fixed delay and driven by a small event loop of this file: frames handed to
send() are queued and fed to Node.recv at their arrival time; arm() records when each node wants
Node.tick(). This is the shape a network host takes (its send writes to a socket, its arm sets a
loop timer), with time and delivery under the test's control.
"""

from __future__ import annotations

import heapq
import itertools
import tempfile
import unittest
from typing import Callable

import jetraft
from jetraft import Fsm, Host, NodeConfig, StreamConfig, open_node

NAMES = ["a", "b", "c"]
DELAY_NS = 200_000  # every frame takes 200 µs


class Loop:
    """An event loop of frames in flight and per-node tick deadlines over a virtual clock."""

    def __init__(self) -> None:
        self.now = 1_000_000_000
        self.frames: list[tuple[int, int, str, str, bytes]] = []  # (at, order, to, from, frame)
        self.order = itertools.count()
        self.deadlines: dict[str, int] = {}
        self.nodes: dict[str, jetraft.Node] = {}
        self.armed = 0

    def step(self) -> bool:
        """Runs the earliest event (frames first on a tie). False if none is pending."""
        tick_at, who = min(((d, n) for n, d in self.deadlines.items()), default=(2**64 - 1, ""))
        if self.frames and self.frames[0][0] <= tick_at:
            at, _, to, sender, frame = heapq.heappop(self.frames)
            self.now = max(self.now, at)
            if to in self.nodes:
                self.nodes[to].recv(sender, frame)
            return True
        if tick_at == 2**64 - 1:
            return False
        self.now = max(self.now, tick_at)
        del self.deadlines[who]
        self.nodes[who].tick()
        return True

    def run_until(self, pred: Callable[[], bool], max_ns: int = 30 * jetraft.SEC) -> bool:
        end = self.now + max_ns
        while not pred():
            if self.now > end or not self.step():
                return pred()
        return True


class LoopHost(Host):
    def __init__(self, loop: Loop, name: str) -> None:
        self.loop = loop
        self.name = name
        self.logs: list[str] = []

    def send(self, to: str, frame: bytes) -> bool:
        heapq.heappush(self.loop.frames,
                       (self.loop.now + DELAY_NS, next(self.loop.order), to, self.name, frame))
        return True

    def now(self) -> int:
        return self.loop.now

    def arm(self, deadline: int) -> None:
        self.loop.armed += 1
        if deadline == 2**64 - 1:
            self.loop.deadlines.pop(self.name, None)
        else:
            self.loop.deadlines[self.name] = deadline

    def log(self, level: int, msg: str) -> None:
        self.logs.append(msg)

    def wall(self) -> int:
        return jetraft.SIM_WALL_START_NS + self.loop.now


class Counter(Fsm):
    def __init__(self) -> None:
        self.entries: list[tuple[int, bytes]] = []

    def apply(self, index: int, data: bytes) -> None:
        self.entries.append((index, data))


class PythonHostTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.loop = Loop()
        self.hosts = {n: LoopHost(self.loop, n) for n in NAMES}
        cfg = NodeConfig(streams=True, election_timeout_ms=150, heartbeat_ms=30)
        for n in NAMES:
            node = open_node(n, NAMES, f"{self.dir.name}/{n}", self.hosts[n], cfg, seed=7)
            self.loop.nodes[n] = node
            self.addCleanup(node.close)
            node.tick()  # a fresh node asks for its first tick through arm()

    def test_a_raw_group_replicates_through_the_python_host(self) -> None:
        fsms = {n: Counter() for n in NAMES}
        groups = {n: self.loop.nodes[n].group_open(1, NAMES, fsms[n]) for n in NAMES}
        self.assertTrue(self.loop.run_until(lambda: groups["a"].leader is not None))
        leader = groups[groups["a"].leader or ""]
        pending = [leader.propose(b"entry %d" % i) for i in range(20)]
        self.assertTrue(self.loop.run_until(
            lambda: all(p.done for p in pending)
            and all(len(f.entries) == 20 for f in fsms.values())))
        indexes = [p.result() for p in pending]
        self.assertEqual(indexes, sorted(indexes))
        for f in fsms.values():
            self.assertEqual(f.entries, fsms["a"].entries)
            self.assertEqual([d for _, d in f.entries], [b"entry %d" % i for i in range(20)])
        self.assertEqual(leader.status().role, jetraft.Role.LEADER)
        self.assertEqual(len(leader.peers()), 3)
        self.assertGreater(self.loop.armed, 0)

        # a follower's node closes; entries go on; reopened over its directory, it recovers
        # its log, and the new state machine applies everything, what it missed included
        down = next(n for n in NAMES if groups[n] is not leader)
        self.loop.nodes.pop(down).close()
        self.loop.deadlines.pop(down, None)
        more = [leader.propose(b"more %d" % i) for i in range(10)]
        self.assertTrue(self.loop.run_until(lambda: all(p.done for p in more)))
        node = open_node(down, NAMES, f"{self.dir.name}/{down}", self.hosts[down],
                         NodeConfig(streams=True, election_timeout_ms=150, heartbeat_ms=30),
                         seed=8)
        self.addCleanup(node.close)
        self.loop.nodes[down] = node
        again = Counter()
        node.group_open(1, NAMES, again)
        node.tick()
        self.assertTrue(self.loop.run_until(lambda: len(again.entries) == 30))
        self.assertEqual(again.entries, fsms[leader.node.name].entries)

    def test_streams_run_through_the_python_host(self) -> None:
        a = self.loop.nodes["a"]
        p = a.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3))
        self.assertTrue(self.loop.run_until(lambda: p.done))
        p.result()
        acks = [a.publish("orders.new", b"order %d" % i, msg_id=str(i)) for i in range(10)]
        self.assertTrue(self.loop.run_until(lambda: all(x.done for x in acks)))
        self.assertEqual(sorted(x.result().seq for x in acks), list(range(1, 11)))
        get = self.loop.nodes["c"].msg_get("ORDERS", 10)
        self.assertTrue(self.loop.run_until(lambda: get.done))
        self.assertEqual(get.result().data, b"order 9")
        self.assertGreater(a.stats().frames_sent, 0)

    def test_a_bad_config_names_the_field(self) -> None:
        with self.assertRaises(jetraft.InvalidArgumentError) as cm:
            open_node("d", ["d"], f"{self.dir.name}/d", LoopHost(self.loop, "d"),
                      NodeConfig(election_timeout_ms=10, heartbeat_ms=100))
        self.assertIn("heartbeat_ms", cm.exception.message)


if __name__ == "__main__":
    unittest.main()
