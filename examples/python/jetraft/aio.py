"""asyncio: a node driven by an asyncio event loop, and awaitable requests.

AsyncioHost is the loop half of a host: the node's timer request (arm) becomes a loop timer
that calls Node.tick, and frames a transport received are fed to Node.recv with deliver(). The
transport half — send() to a peer, and calling deliver() for what a peer sent — is the
subclass's: over TCP peer links for a networked cluster (jetraft.net.PeerHost), or in-process
queues in the tests.

Every Pending is awaitable once a loop drives its node (`ack = await node.publish(...)`), and
`fetch` iterates a pull request's messages as they arrive, `subscribe` a push consumer's:

    async for msg in aio.fetch(node, "ORDERS", "PROC", batch=100):
        ...

Everything runs on the loop's thread: the node's callbacks run inside the tick and recv calls
the loop makes, so resolving futures from them is safe.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator

from . import _registry as reg
from .host import Host
from .node import Node
from .types import ConsumerMsg, FetchOpts

NEVER = 2**64 - 1


class AsyncioHost(Host):
    """The loop half of a host; subclasses implement send() (and may override now/wall)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop or asyncio.get_event_loop()
        self.node: Node | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._due = NEVER

    def attach(self, node: Node) -> Node:
        """Starts driving node (opened with this host): its first tick is scheduled now."""
        self.node = node
        self.loop.call_soon(self._tick)
        return node

    def now(self) -> int:
        return time.monotonic_ns()

    def wall(self) -> int:
        return time.time_ns()

    def arm(self, deadline: int) -> None:
        if deadline == self._due and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._due = deadline
        if deadline != NEVER:
            delay = max(0, deadline - self.now()) / 1e9
            self._timer = self.loop.call_later(delay, self._tick)

    def _tick(self) -> None:
        self._timer = None
        self._due = NEVER
        if self.node is not None and not self.node.closed:
            self.node.tick()
            _raise_from_handlers()

    def deliver(self, sender: str, frame: bytes) -> None:
        """Feeds a frame received from server `sender` (call it on the loop's thread)."""
        if self.node is not None and not self.node.closed:
            self.node.recv(sender, frame)
            _raise_from_handlers()

    def close(self) -> None:
        """Stops the timer and closes the node."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.node is not None:
            self.node.close()


def _raise_from_handlers() -> None:
    """Re-raises, on the loop, an exception a callback handler raised inside the C call."""
    e = reg.take_raised()
    if e is not None:
        raise e


async def fetch(
    node: Node, stream: str, consumer: str, opts: FetchOpts | None = None, **kw: Any
) -> AsyncIterator[ConsumerMsg]:
    """Yields a pull request's messages as the consumer's leader hands them out; ends when the
    request ends (batch filled, expired, no messages) and raises the error it ended with."""
    queue: asyncio.Queue[ConsumerMsg | None] = asyncio.Queue()
    pending = node.fetch(stream, consumer, opts, on_message=queue.put_nowait, **kw)
    pending.add_done_callback(lambda _p: queue.put_nowait(None))
    while True:
        msg = await queue.get()
        if msg is None:
            break
        yield msg
    pending.result()  # raises what the fetch ended with, if it failed


async def subscribe(node: Node, stream: str, consumer: str) -> AsyncIterator[ConsumerMsg]:
    """Yields a push consumer's messages as they are delivered (idle heartbeats left out),
    until the subscription ends (raising its error, e.g. NotFoundError when the consumer was
    deleted) or the generator is closed, which closes the subscription: leave it inside
    `async with contextlib.aclosing(aio.subscribe(...)) as msgs` to close it at once (a generator
    left by break is otherwise closed only when the loop finalizes it)."""
    queue: asyncio.Queue[ConsumerMsg | None] = asyncio.Queue()

    def each(m: ConsumerMsg | None) -> None:
        if m is not None:
            queue.put_nowait(m)

    sub = node.subscribe(stream, consumer, each)
    sub.on_end = lambda: queue.put_nowait(None)
    try:
        while True:
            msg = await queue.get()
            if msg is None:
                break
            yield msg
        if sub.error is not None:
            raise sub.error
    finally:
        sub.close()
