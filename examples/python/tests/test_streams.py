"""The binding end to end on a simulated three-server cluster.

ORDERS is created with three replicas, takes 1,000 messages, and a durable consumer fetches and
acknowledges all of them; then the server leading the stream loses power while publishing goes
on, comes back, and every message that was ever acknowledged is read back by sequence, from the
restarted server too once it leads the stream.
"""

from __future__ import annotations

import unittest
from typing import Callable

import jetraft
from jetraft import (
    AckPolicy,
    CheckStatus,
    ConsumerConfig,
    JetraftError,
    NotFoundError,
    Sim,
    StreamConfig,
)

SEED = 1


def data_of(i: int) -> bytes:
    return b"order %06d" % i


class OrdersTest(unittest.TestCase):
    def setUp(self) -> None:
        self.sim = Sim(nodes=3, seed=SEED)
        self.addCleanup(self.sim.close)
        self.sim.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3))
        self.acked: dict[int, tuple[str, bytes]] = {}  # seq -> (subject, data) acknowledged

    def publish_range(self, first: int, n: int, node: int | None = None) -> None:
        """Publishes messages first..first+n-1, all in flight together, each with a msg_id
        (so a publish whose leader is lost is re-sent safely), recording the acks."""
        n_ = self.sim.node(node)
        pending = []
        for i in range(first, first + n):
            subject = f"orders.{i % 7}"
            pending.append((subject, data_of(i), n_.publish(subject, data_of(i),
                                                            msg_id=f"m{i}")))
        self.sim.wait(*[p for _, _, p in pending])
        for subject, data, p in pending:
            ack = p.result()
            self.assertEqual(ack.stream, "ORDERS")
            self.assertFalse(ack.duplicate)
            self.assertNotIn(ack.seq, self.acked, f"seq {ack.seq} acknowledged twice")
            self.acked[ack.seq] = (subject, data)

    def check_every_acked_message(self, node: int | None = None) -> None:
        n = self.sim.node(node)
        pending = {seq: n.msg_get("ORDERS", seq) for seq in sorted(self.acked)}
        self.sim.wait(*pending.values())
        for seq, p in pending.items():
            m = p.result()
            self.assertEqual((m.seq, m.stream), (seq, "ORDERS"))
            self.assertEqual((m.subject, m.data), self.acked[seq], f"message {seq}")

    def consume(self, durable: str, want: int) -> list[jetraft.ConsumerMsg]:
        """Fetches in batches of 100 and acknowledges (confirmed) until `want` messages came."""
        got: list[jetraft.ConsumerMsg] = []
        while len(got) < want:
            f = self.sim.fetch("ORDERS", durable, batch=100, expires_ns=2 * jetraft.SEC)
            self.assertIsNotNone(f.end)
            self.assertTrue(f.msgs, f"fetch ended with {f.end} after {len(got)} messages")
            self.sim.ack_all(m.ack_token for m in f.msgs)
            got += f.msgs
        return got

    def test_orders_survive_the_loss_of_the_stream_leader(self) -> None:
        with self.subTest(seed=SEED):  # a failure names the run's seed
            self.orders_survive_the_loss_of_the_stream_leader()

    def orders_survive_the_loss_of_the_stream_leader(self) -> None:
        sim = self.sim
        self.publish_range(1, 1000)
        self.assertEqual(sorted(self.acked), list(range(1, 1001)))

        info = sim.stream_info("ORDERS")
        self.assertEqual(info.config.name, "ORDERS")
        self.assertEqual(info.config.subjects, ["orders.>"])
        self.assertEqual(info.config.replicas, 3)
        self.assertEqual((info.state.msgs, info.state.first_seq, info.state.last_seq),
                         (1000, 1, 1000))
        self.assertEqual(info.state.num_subjects, 7)
        self.assertGreater(info.created_ns, 0)
        assert info.cluster is not None
        self.assertIsNotNone(info.cluster.leader)
        self.assertEqual(len(info.cluster.replicas), 2)
        self.assertEqual({info.cluster.leader, *[r.name for r in info.cluster.replicas]},
                         {"n0", "n1", "n2"})
        block = info.format_cluster()
        self.assertIn("Cluster Information:", block)
        self.assertIn(f"Leader: {info.cluster.leader}", block)

        # a durable consumer takes and acknowledges everything
        name = sim.consumer_add("ORDERS", ConsumerConfig(durable_name="PROC"))
        self.assertEqual(name, "PROC")
        msgs = self.consume("PROC", 1000)
        self.assertEqual([m.stream_seq for m in msgs], list(range(1, 1001)))
        self.assertTrue(all(m.data == self.acked[m.stream_seq][1] for m in msgs))
        self.assertTrue(all(m.delivered == 1 for m in msgs))
        ci = sim.consumer_info("ORDERS", "PROC")
        self.assertEqual((ci.num_ack_pending, ci.num_pending), (0, 0))
        self.assertEqual(ci.ack_floor.stream_seq, 1000)
        assert ci.config is not None
        self.assertEqual(ci.config.ack_policy, AckPolicy.EXPLICIT)
        self.assertIn("Information for Consumer ORDERS > PROC", ci.format())

        # the stream leader's server loses power with 100 publishes in flight (each with a
        # msg_id, so each is re-sent to the next leader); publishing goes on meanwhile
        leader = sim.stream_leader("ORDERS")
        other = next(i for i in range(3) if i != leader)
        in_flight = [(i, sim.node(other).publish(f"orders.{i % 7}", data_of(i), msg_id=f"m{i}"))
                     for i in range(1001, 1101)]
        sim.run_for(1 * jetraft.MS)
        self.assertFalse(all(p.done for _, p in in_flight), "nothing was in flight")
        sim.crash(leader)
        sim.wait(*[p for _, p in in_flight])
        for i, p in in_flight:
            self.acked[p.result().seq] = (f"orders.{i % 7}", data_of(i))
        self.publish_range(1101, 100, node=other)
        self.assertEqual(len(self.acked), 1200)
        self.assertEqual(sorted(self.acked), list(range(1, 1201)))
        info = sim.stream_info("ORDERS", node=other)
        assert info.cluster is not None
        self.assertNotEqual(info.cluster.leader, sim.name(leader))
        self.assertEqual(info.state.last_seq, 1200)
        self.check_every_acked_message(node=other)

        # it comes back and catches up; the stream is whole again
        sim.restart(leader)
        self.assertTrue(
            eventually(sim, lambda: sim.stream_check("ORDERS", node=other).status
                       == CheckStatus.OK),
            "the restarted replica never became current")
        self.publish_range(1201, 100, node=leader)

        # with the restarted server leading, it serves every acknowledged message itself
        sim.stream_stepdown("ORDERS", peer=sim.name(leader))
        self.assertEqual(sim.stream_leader("ORDERS"), leader)
        self.check_every_acked_message(node=leader)
        self.assertEqual(sim.stream_info("ORDERS").state.msgs, 1300)

        # the consumer picks up where it was and gets the rest exactly once
        rest = self.consume("PROC", 300)
        self.assertEqual([m.stream_seq for m in rest], list(range(1001, 1301)))
        ci = sim.consumer_info("ORDERS", "PROC")
        self.assertEqual((ci.ack_floor.stream_seq, ci.num_ack_pending), (1300, 0))

    def test_reads_purge_and_delete(self) -> None:
        sim = self.sim
        self.publish_range(1, 20)
        last = sim.get_last("ORDERS", "orders.3")
        self.assertEqual(last.subject, "orders.3")
        self.assertEqual(last.data, data_of(17))
        self.assertEqual(sim.get_next("ORDERS", 4, "orders.3").seq, 10)
        sim.msg_delete("ORDERS", 17)
        with self.assertRaises(NotFoundError):
            sim.msg_get("ORDERS", 17)
        self.assertEqual(sim.get_last("ORDERS", "orders.3").data, data_of(10))
        purged = sim.stream_purge("ORDERS", jetraft.PurgeOpts(subject="orders.1"))
        self.assertEqual(purged, 3)  # 1, 8, 15
        self.assertEqual(sim.stream_purge("ORDERS"), 20 - 1 - 3)
        self.assertEqual(sim.stream_info("ORDERS").state.msgs, 0)

    def test_names_lists_and_delete(self) -> None:
        sim = self.sim
        sim.stream_add(StreamConfig(name="AUDIT", subjects=["audit.*"], replicas=1))
        self.assertEqual(sim.stream_names().names, ["AUDIT", "ORDERS"])
        self.assertEqual(sim.stream_names(subject="orders.x").names, ["ORDERS"])
        page = sim.stream_list()
        self.assertEqual([s.config.name for s in page.streams], ["AUDIT", "ORDERS"])
        self.assertEqual(page.total, 2)
        sim.consumer_add("ORDERS", ConsumerConfig(durable_name="A"))
        sim.consumer_add("ORDERS", ConsumerConfig(durable_name="B", filter_subject="orders.1"))
        self.assertEqual(sim.consumer_names("ORDERS").names, ["A", "B"])
        cl = sim.consumer_list("ORDERS")
        self.assertEqual([c.name for c in cl.consumers], ["A", "B"])
        assert cl.consumers[1].config is not None
        self.assertEqual(cl.consumers[1].config.filter_subject, "orders.1")
        sim.consumer_delete("ORDERS", "A")
        self.assertEqual(sim.consumer_names("ORDERS").names, ["B"])
        sim.stream_delete("AUDIT")
        self.assertEqual(sim.stream_names().names, ["ORDERS"])

    def test_stepdowns_move_leadership(self) -> None:
        sim = self.sim
        before = sim.stream_leader("ORDERS")
        sim.stream_stepdown("ORDERS")
        self.assertNotEqual(sim.stream_leader("ORDERS"), before)
        meta = sim.meta_leader()
        sim.meta_stepdown()
        self.assertTrue(eventually(sim, lambda: _meta_leader_or_none(sim) not in (None, meta)))
        sim.consumer_add("ORDERS", ConsumerConfig(durable_name="C"))
        cinfo = sim.consumer_info("ORDERS", "C")
        assert cinfo.cluster is not None
        sim.consumer_stepdown("ORDERS", "C")
        after = sim.consumer_info("ORDERS", "C").cluster
        assert after is not None
        self.assertNotEqual(after.leader, cinfo.cluster.leader)

    def test_cluster_and_health(self) -> None:
        sim = self.sim
        meta = sim.meta_info()
        self.assertEqual([s.name for s in meta.servers], ["n0", "n1", "n2"])
        self.assertEqual(sum(s.leader for s in meta.servers), 1)
        self.assertEqual(meta.nstreams, 1)
        res = sim.stream_check("ORDERS")
        self.assertEqual(res.status, CheckStatus.OK, res.problems)
        self.assertEqual(res.format(), "OK ORDERS OK:3 peers OK:0 sources | sources=0")
        health = sim.health(node=0)
        self.assertTrue(health.healthy)
        self.assertEqual(health.nstreams, 1)
        # a replica down: the check says so
        victim = next(i for i in range(3) if i != sim.stream_leader("ORDERS"))
        sim.crash(victim)
        sim.run_for(5 * jetraft.SEC)
        res = sim.stream_check("ORDERS", jetraft.CheckOpts(peer_expect=3))
        self.assertEqual(res.status, CheckStatus.CRITICAL)
        self.assertIn("1 replicas offline", res.format())

    def test_runs_are_reproducible(self) -> None:
        """The same seed and the same calls give the same run, bit for bit."""
        digests = []
        for _ in range(2):
            with Sim(nodes=3, seed=7) as sim:
                sim.stream_add(StreamConfig(name="S", replicas=3))
                sim.publish_many([("S", b"x%d" % i) for i in range(50)])
                digests.append(sim.digest())
        self.assertEqual(digests[0], digests[1])
        self.assertNotEqual(digests[0], 0)


def eventually(sim: Sim, cond: Callable[[], bool], max_ns: int = 60 * jetraft.SEC) -> bool:
    """Checks cond every 100 ms of simulated time until it holds (True) or max_ns passed."""
    deadline = sim.now + max_ns
    while sim.now < deadline:
        if cond():
            return True
        sim.run_for(100 * jetraft.MS)
    return False


def _meta_leader_or_none(sim: Sim) -> str | None:
    try:
        return sim.meta_info().leader
    except JetraftError:
        return None


if __name__ == "__main__":
    unittest.main()
