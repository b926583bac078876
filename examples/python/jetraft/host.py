"""Hosts: what drives a node outside the sim fixture.

A host gives a node its transport, clock and timer (jr_host, include/jetraft/plugins.h) and
drives it: it feeds received frames to Node.recv, calls Node.tick at the deadline it was asked
for through arm() (or polls Node.deadline()), and delivers what send() was given to the named
server. Every callback of the node's requests runs inside those recv/tick calls.

Subclass Host and pass it to open_node. The methods are called on the node's thread, inside the
node's own calls; send must only copy or queue the frame (it must not call back into the node).
jetraft.net.PeerHost (TCP peer links over the library's secure-link API, timers on an asyncio
loop) is such a subclass; tests/test_host.py drives three nodes with an in-process one.
"""

from __future__ import annotations

import ctypes
from typing import Any, Iterable

from . import _abi
from . import _registry as reg
from ._conv import enc, str_array
from ._lib import lib
from .errors import JetraftError
from .node import Node
from .types import NodeConfig


class Host:
    """A node's host. send and now are required; arm, log and wall are optional (wall is only
    used when a subclass overrides it)."""

    def send(self, to: str, frame: bytes) -> bool:
        """Delivers (copies or queues) one frame to server `to`; False counts as dropped."""
        raise NotImplementedError

    def now(self) -> int:
        """Monotonic time in nanoseconds."""
        raise NotImplementedError

    def arm(self, deadline: int) -> None:
        """The node wants Node.tick() at or after `deadline` (a now() value; 2**64 - 1: none).
        Replaces any earlier request."""

    def log(self, level: int, msg: str) -> None:
        """A log line of the node (level: jetraft.LogLevel)."""

    def wall(self) -> int:
        """Wall-clock time, ns since the Unix epoch (override to provide one)."""
        raise NotImplementedError


def _dispatch(host: Host, op: str, *args: Any) -> Any:
    if op == "send":
        to, iov, cnt = args
        frame = b"".join(ctypes.string_at(iov[i].base, iov[i].len) for i in range(cnt))
        return 0 if host.send(to.decode(), frame) is not False else -1
    if op == "now":
        return int(host.now())
    if op == "arm":
        host.arm(int(args[0]))
        return None
    if op == "log":
        host.log(int(args[0]), (args[1] or b"").decode("utf-8", "replace"))
        return None
    return int(host.wall())


def _trampoline(fntype: Any, op: str) -> Any:
    def tramp(ctx: int | None, *args: Any) -> Any:
        return reg._call_value(ctx, op, *args)

    return fntype(tramp)


# immortal trampolines: the node's jr_host table points at these for as long as it lives
_SEND = _trampoline(_abi.host_send_fn, "send")
_NOW = _trampoline(_abi.host_now_fn, "now")
_ARM = _trampoline(_abi.host_arm_fn, "arm")
_LOG = _trampoline(_abi.host_log_fn, "log")
_WALL = _trampoline(_abi.host_wall_fn, "wall")


def open_node(
    name: str,
    peers: Iterable[str],
    wal_dir: str,
    host: Host,
    config: NodeConfig | None = None,
    seed: int = 0,
    vfs: int | None = None,
) -> Node:
    """Opens a node (jr_node_open) with `host` as its transport, clock and timer, over the
    POSIX file system or the jr_vfs pointer `vfs` (e.g. Sim.vfs(i)). The returned Node is
    owned: close it (or use `with`). A failure raises the JetraftError with the reason
    jr_node_open gave, naming the config field."""
    from ._conv import to_c

    cfg = to_c(config if config is not None else NodeConfig())
    peer_list = list(peers)
    cfg.name = enc(name)
    arr = str_array(peer_list)
    cfg.peers = arr
    cfg.npeers = len(peer_list)
    cfg.wal_dir = enc(wal_dir)
    cfg.seed = seed
    cfg.vfs = vfs if vfs is not None else lib.jr_vfs_posix()
    key = reg.register(lambda op, *args: _dispatch(host, op, *args))
    h = _abi.jr_host()
    h.version = _abi.CONSTANTS["JR_HOST_VERSION"]
    h.ctx = key
    h.send = _SEND
    h.now = _NOW
    h.arm = _ARM
    h.log = _LOG
    if type(host).wall is not Host.wall:
        h.wall = _WALL
    cfg.host = ctypes.pointer(h)
    errbuf = ctypes.create_string_buffer(512)
    cfg.errbuf = ctypes.cast(errbuf, ctypes.c_void_p)
    cfg.errbuf_len = len(errbuf)
    out = ctypes.c_void_p()
    rc = lib.jr_node_open(ctypes.byref(cfg), ctypes.byref(out))
    if rc < 0:
        reg.release(key)
        raise JetraftError.from_code(rc, errbuf.value.decode("utf-8", "replace"))
    node = Node(out.value or 0, owned=True)
    node._host_key = key
    node._keep.extend([h, cfg, arr])  # the host table must outlive the node
    return node
