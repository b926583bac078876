"""Callbacks: the C side only ever calls immortal trampolines, the Python handlers live in the
registry until their last call, and what a callback is handed is copied before it returns.

The tests collect garbage at the worst moments — between starting a request and its callback,
inside the callbacks, on every simulated event — and check that every request still completes,
that a fetch's handler survives its many calls and is released after its end, that a crash
completes what was pending with ClosedError, and that nothing stays registered afterwards.
"""

from __future__ import annotations

import gc
import unittest
import weakref

import jetraft
from jetraft import (
    AckKind,
    AdvisoryKind,
    ClosedError,
    ConsumerConfig,
    ConsumerMsg,
    Sim,
    StreamConfig,
    _registry,
)


class CallbackLifetimeTest(unittest.TestCase):
    def setUp(self) -> None:
        self.sim = Sim(nodes=3, seed=11)
        self.addCleanup(self.sim.close)
        self.sim.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3))
        self.sim.consumer_add("ORDERS", ConsumerConfig(durable_name="C"))
        self.base = _registry.live()

    def run_collecting(self, *pending: jetraft.Pending) -> None:
        """Runs the sim until every request is done, collecting garbage after every event."""
        ok = self.sim.run_until(lambda: gc.collect() >= 0 and all(p.done for p in pending),
                                max_ns=60 * jetraft.SEC)
        self.assertTrue(ok, [p for p in pending if not p.done])

    def test_requests_complete_across_garbage_collections(self) -> None:
        node = self.sim.node(1)
        pending = [node.publish(f"orders.{i}", b"payload %d" % i) for i in range(50)]
        pending.append(node.meta_info())
        pending.append(node.stream_check("ORDERS"))
        pending.append(node.health())
        gc.collect()
        self.assertGreaterEqual(_registry.live(), self.base + len(pending))
        self.run_collecting(*pending)
        seqs = sorted(p.result().seq for p in pending[:50])
        self.assertEqual(seqs, list(range(1, 51)))
        self.assertEqual(pending[50].result().nstreams, 1)
        self.assertEqual(pending[51].result().stream, "ORDERS")
        self.assertEqual(pending[52].result().nstreams, 1)
        self.assertEqual(_registry.live(), self.base, "finished requests were not released")

    def test_a_request_nobody_holds_still_completes_and_is_released(self) -> None:
        done: list[int] = []
        node = self.sim.node(0)
        for i in range(10):
            node.publish("orders.x", b"%d" % i).add_done_callback(
                lambda p: done.append(p.result().seq))
        gc.collect()  # no Pending is referenced from Python any more, only from the registry
        self.assertEqual(_registry.live(), self.base + 10)
        self.assertTrue(self.sim.run_until(lambda: gc.collect() >= 0 and len(done) == 10))
        self.assertEqual(sorted(done), list(range(1, 11)))
        self.assertEqual(_registry.live(), self.base)

    def test_a_fetch_handler_lives_through_its_calls_and_is_released_after_its_end(self) -> None:
        self.sim.publish_many([(f"orders.{i}", b"m%d" % i) for i in range(30)])
        calls: list[ConsumerMsg] = []
        live_during: set[int] = set()

        def on_message(m: ConsumerMsg) -> None:
            calls.append(m)
            gc.collect()  # inside the callback, with C frames below
            live_during.add(_registry.live())

        p = self.sim.node(2).fetch("ORDERS", "C", batch=30, on_message=on_message)
        del on_message  # only the registry keeps the handler now
        gc.collect()
        self.run_collecting(p)
        f = p.result()
        self.assertEqual(len(calls), 30)
        # while it ran, the fetch (and the run's predicate) stayed registered, every call alike
        self.assertEqual(live_during, {self.base + 2})
        self.assertEqual([m.stream_seq for m in f.msgs], list(range(1, 31)))
        self.assertEqual(f.end.code if f.end else None, 0)
        self.assertEqual(_registry.live(), self.base)
        # the copies are the callback's data, still intact after the C memory is long gone
        self.sim.publish_many([(f"orders.{i}", b"other") for i in range(30)])
        self.assertEqual([m.data for m in calls], [b"m%d" % i for i in range(30)])
        self.sim.ack_all(m.ack_token for m in f.msgs)
        self.assertEqual(self.sim.consumer_info("ORDERS", "C").ack_floor.stream_seq, 30)

    def test_an_ended_fetch_with_nothing_to_deliver(self) -> None:
        f = self.sim.fetch("ORDERS", "C", batch=5, no_wait=True)
        self.assertEqual(f.msgs, [])
        assert f.end is not None
        self.assertEqual(f.end.code, 404)
        self.assertEqual(_registry.live(), self.base)

    def test_pending_requests_of_a_crashed_node_complete_with_closed(self) -> None:
        node = self.sim.node(0)
        held = weakref.ref(node)
        pending = [node.publish("orders.x", b"x") for _ in range(5)]
        pending.append(node.fetch("ORDERS", "C", batch=100, expires_ns=10 * jetraft.SEC))
        self.sim.crash(0)
        self.assertTrue(all(p.done for p in pending))
        for p in pending:
            self.assertIsInstance(p.error, ClosedError)
        self.assertEqual(_registry.live(), self.base)
        self.assertTrue(node.closed)
        with self.assertRaises(ClosedError):
            node.stream_info("ORDERS")
        del node
        gc.collect()
        self.assertIsNone(held())
        self.sim.restart(0)
        self.sim.run_for(2 * jetraft.SEC)  # its meta replica catches up before it is asked
        self.assertEqual(self.sim.stream_info("ORDERS", node=0).config.name, "ORDERS")

    def test_an_exception_in_a_handler_surfaces_from_the_run(self) -> None:
        self.sim.publish("orders.1", b"x")

        def boom(m: ConsumerMsg) -> None:
            raise KeyError("from the handler")

        p = self.sim.node(0).fetch("ORDERS", "C", batch=1, on_message=boom)
        with self.assertRaises(KeyError):
            self.sim.wait(p)
        # the sim is still usable and nothing is left registered
        self.assertEqual(self.sim.stream_info("ORDERS").state.msgs, 1)
        self.assertEqual(_registry.live(), self.base)

    def test_a_sync_call_from_inside_a_callback_is_refused(self) -> None:
        self.sim.publish("orders.1", b"x")
        seen: list[BaseException] = []

        def reenter(m: ConsumerMsg) -> None:
            try:
                self.sim.stream_info("ORDERS")
            except RuntimeError as e:
                seen.append(e)

        self.sim.wait(self.sim.node(0).fetch("ORDERS", "C", batch=1, on_message=reenter))
        self.assertEqual(len(seen), 1)

    def test_a_push_subscription_delivers_until_closed(self) -> None:
        self.sim.consumer_add("ORDERS", ConsumerConfig(durable_name="P",
                                                       deliver_subject="deliver.p"))
        got: list[ConsumerMsg] = []
        sub = self.sim.node(1).subscribe("ORDERS", "P", lambda m: m and got.append(m))
        gc.collect()
        self.sim.publish_many([(f"orders.{i}", b"p%d" % i) for i in range(10)])
        self.assertTrue(self.sim.run_until(lambda: gc.collect() >= 0 and len(got) >= 10))
        self.assertEqual([m.data for m in got], [b"p%d" % i for i in range(10)])
        self.sim.ack_all(m.ack_token for m in got)
        sub.close()
        self.assertEqual(_registry.live(), self.base)
        self.sim.publish("orders.late", b"late")
        self.sim.run_for(1 * jetraft.SEC)
        self.assertEqual(len(got), 10)

    def test_advisories_reach_the_handler(self) -> None:
        self.sim.publish("orders.1", b"nak me")
        advisories: list[jetraft.Advisory] = []
        for i in range(3):
            self.sim.node(i).set_advisory_handler(advisories.append)
        f = self.sim.fetch("ORDERS", "C", batch=1)
        self.sim.node(2).ack(f.msgs[0].ack_token, AckKind.NAK, confirm=False)
        self.assertTrue(self.sim.run_until(lambda: bool(advisories)))
        self.assertEqual(advisories[0].kind, AdvisoryKind.NAKED)
        self.assertEqual((advisories[0].stream, advisories[0].consumer), ("ORDERS", "C"))
        for i in range(3):
            self.sim.node(i).set_advisory_handler(None)
        self.assertEqual(_registry.live(), self.base)


if __name__ == "__main__":
    unittest.main()
