"""jetraft: Python binding of libjetraft over its C ABI (ctypes, standard library only).

    import jetraft
    from jetraft import StreamConfig, ConsumerConfig

    with jetraft.Sim(nodes=3, seed=1) as sim:
        sim.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3))
        sim.publish("orders.new", b"order 1")
        print(sim.stream_info("ORDERS").format_cluster())

Layers:
  Node    one server; every request returns a Pending, completed when the node's loop runs
          its callback (Node.recv / Node.tick driven by a host, or a Sim's run calls).
  Sim     the deterministic cluster fixture, with synchronous methods that run the simulated
          cluster until the answer came.
  types   configs (defaults from the library's *_init functions) and results (copies of what
          the callbacks were handed).
  errors  JetraftError and a subclass per JR_E* code.
  host    Host and open_node: a node on the real file system driven by the caller's own loop.
  aio     AsyncioHost (a node's timer on an asyncio loop), awaitable requests, async fetch; a
          network host adds its transport (TCP peer links) to it.
  net     PeerHost: that network host, TCP peer links over the secure-link API, wire-compatible
          with jetraft-server; `python3 -m jetraft.server -c CONFIG.json` runs one server.
"""

from __future__ import annotations

from . import _abi
from ._lib import LibraryError, lib
from .errors import *  # noqa: F401,F403 - every error class is part of the API
from .errors import BY_NAME, JetraftError, check
from . import aio, link
from .host import Host, open_node
from .node import Fsm, Group, Node, Pending, Subscription
from .sim import MS, SEC, Sim, SimDisk
from .types import *  # noqa: F401,F403 - every config and result type is part of the API

#: The JR_VERSION_NUMBER this binding was written for.
BINDING_VERSION_NUMBER = _abi.VERSION_NUMBER


def version() -> str:
    """The loaded library's version, "MAJOR.MINOR.PATCH"."""
    return lib.jr_version().decode()


def version_number() -> int:
    """The loaded library's JR_VERSION_NUMBER."""
    return int(lib.jr_version_number())


def strerror(code: int) -> str:
    return lib.jr_strerror(code).decode()


def err_name(code: int) -> str:
    return lib.jr_err_name(code).decode()
