"""Three nodes driven by an asyncio loop (jetraft.aio.AsyncioHost), awaited requests and an
async fetch.

The transport is in-process: a frame sent to a peer is delivered by the loop 200 µs later. Time
is real (the loop's clock), so this test also shows a node's timers working off loop timers.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import unittest

import jetraft
from jetraft import ConsumerConfig, NodeConfig, StreamConfig, aio, open_node

NAMES = ["a", "b", "c"]


class LoopbackHost(aio.AsyncioHost):
    """An AsyncioHost whose "network" is the loop itself."""

    def __init__(self, name: str, hosts: dict[str, "LoopbackHost"]) -> None:
        super().__init__(asyncio.get_running_loop())
        self.name = name
        self.hosts = hosts

    def send(self, to: str, frame: bytes) -> bool:
        peer = self.hosts.get(to)
        if peer is None:
            return False
        self.loop.call_later(0.0002, peer.deliver, self.name, frame)
        return True


class AsyncioTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        # the test case runs its loop in debug mode; a WAL fsync is a slow callback, not a bug
        asyncio.get_running_loop().slow_callback_duration = 10.0
        # memory-backed when there is one: fsyncs on a loaded disk can take longer than a
        # heartbeat, and time here is real
        self.dir = tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm")
                                               else None)
        self.hosts: dict[str, LoopbackHost] = {}
        cfg = NodeConfig(streams=True)  # the default timers: a second's election timeout
        for n in NAMES:
            host = LoopbackHost(n, self.hosts)
            self.hosts[n] = host
            host.attach(open_node(n, NAMES, f"{self.dir.name}/{n}", host, cfg))

    async def asyncTearDown(self) -> None:
        for h in self.hosts.values():
            h.close()
        self.dir.cleanup()

    async def test_awaited_requests_and_an_async_fetch(self) -> None:
        a = self.hosts["a"].node
        assert a is not None
        await asyncio.wait_for(
            a.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3)), 30)
        acks = await asyncio.wait_for(asyncio.gather(
            *[a.publish(f"orders.{i}", b"order %d" % i, msg_id=str(i)) for i in range(20)]), 30)
        self.assertEqual(sorted(x.seq for x in acks), list(range(1, 21)))
        c = self.hosts["c"].node
        assert c is not None
        info = await asyncio.wait_for(c.stream_info("ORDERS"), 30)
        self.assertEqual(info.state.msgs, 20)
        await asyncio.wait_for(c.consumer_add("ORDERS", ConsumerConfig(durable_name="P")), 30)
        got: dict[int, bytes] = {}  # stream seq -> data (a leader change may redeliver one)
        for _ in range(10):  # a few pulls at most, should leader changes cut one short
            if len(got) == 20:
                break
            async for m in aio.fetch(c, "ORDERS", "P", batch=20 - len(got),
                                     expires_ns=5 * jetraft.SEC):
                got[m.stream_seq] = m.data
                await self.ack(c, m.ack_token)
        self.assertEqual(sorted(got.values()), sorted(b"order %d" % i for i in range(20)))
        with self.assertRaises(jetraft.NotFoundError):
            await asyncio.wait_for(c.stream_info("NOPE"), 30)

        # a push consumer, iterated; leaving the loop closes the subscription
        await asyncio.wait_for(c.consumer_add("ORDERS", ConsumerConfig(
            durable_name="PUSH", deliver_subject="deliver.push")), 30)
        pushed: dict[int, bytes] = {}
        before = jetraft._registry.live()

        async def take() -> None:
            async with contextlib.aclosing(aio.subscribe(c, "ORDERS", "PUSH")) as msgs:
                async for m in msgs:
                    pushed[m.stream_seq] = m.data
                    await self.ack(c, m.ack_token)
                    if len(pushed) == 20:
                        break

        await asyncio.wait_for(take(), 30)
        self.assertEqual(sorted(pushed), list(range(1, 21)))
        self.assertEqual(jetraft._registry.live(), before)  # the subscription was released

    async def ack(self, node: jetraft.Node, token: str) -> None:
        """A confirmed ack, asked again if a leader change left its outcome open (time is real
        here, so a busy machine may see one); NotFoundError then means the first one took."""
        for attempt in range(5):
            try:
                await asyncio.wait_for(node.ack(token), 30)  # type: ignore[arg-type]
                return
            except jetraft.LeaderLostError:
                continue
            except jetraft.NotFoundError:
                if attempt:
                    return
                raise
        self.fail(f"ack of {token} never settled")


if __name__ == "__main__":
    unittest.main()
