"""Sim: the deterministic cluster fixture (include/jetraft/sim.h), with a synchronous layer.

    with jetraft.Sim(nodes=3, seed=1) as sim:
        sim.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3))
        ack = sim.publish("orders.new", b"hello")
        info = sim.stream_info("ORDERS")

Every synchronous method starts the request on a node (node=i, default: the lowest-numbered
running node), runs the simulated cluster until its callback came (jr_sim_run_until) and returns
the result or raises its JetraftError. The asynchronous form is the node's own method plus
Sim.wait: `p = sim.node(0).publish(...); sim.wait(p)`, so many requests can be in flight
together (publish_many does that).

Nodes run streams (jr_node_config.streams = 1) with their stores under "/store" unless told
otherwise; `configure(i, NodeConfig)` may change any node's config before each open.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Iterable, Sequence

from . import _abi
from . import _registry as reg
from ._conv import dec, enc, from_c, str_array, to_c
from ._lib import lib
from .errors import ClosedError, InvalidArgumentError, JetraftError, TimedOutError, check
from .node import Node, Pending
from .types import (
    AckKind,
    CheckOpts,
    CheckResult,
    ConsumerConfig,
    ConsumerInfo,
    ConsumerPage,
    Fetched,
    FetchOpts,
    MetaInfo,
    Names,
    NodeConfig,
    NodeHealth,
    PubAck,
    PubOpts,
    PurgeOpts,
    SimLink,
    SimStats,
    StoredMsg,
    StreamConfig,
    StreamInfo,
    StreamPage,
)

SEC = 1_000_000_000
MS = 1_000_000


def _fixture_trampoline(fntype: Any, op: str) -> Any:
    def tramp(arg: int | None, *args: Any) -> Any:
        return reg._call_value(arg, op, *args)

    return fntype(tramp)


# immortal trampolines of the fixture's callbacks (jr_sim_config), told apart by their op
_CONFIGURE = _fixture_trampoline(_abi.sim_configure_fn, "configure")
_LOG = _fixture_trampoline(_abi.sim_log_fn, "log")
_APPLY = _fixture_trampoline(_abi.sim_apply_fn, "apply")
_RESTORE = _fixture_trampoline(_abi.sim_restore_fn, "restore")
_STEP = _fixture_trampoline(_abi.sim_step_fn, "step")


class SimDisk:
    """A saved copy of one node's disk (jr_sim_disk_save); freed by close() or when collected."""

    def __init__(self, ptr: int) -> None:
        self._ptr: int | None = ptr

    def close(self) -> None:
        if self._ptr:
            lib.jr_sim_disk_free(self._ptr)
        self._ptr = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit the library may be gone
            pass


class Sim:
    """N libjetraft nodes over a simulated clock, network and disks, reproducible by seed.

    nodes, seed, link (every directed link's start), election_timeout_ms, heartbeat_ms and
    torn_writes are jr_sim_config's. Each node's config is then adjusted before each open
    (first open and every restart): streams on (unless streams=False), the given cluster name,
    tags[i], store_dir and request_timeout_ms, and last configure(i, NodeConfig) which may change
    any field of it. on_log(i, level, msg), on_apply(i, group, index, term, data),
    on_restore(i, group, index) and on_step(sim) are the fixture's observers. timeout_ns is how
    much simulated time the synchronous calls wait for an answer.
    """

    def __init__(
        self,
        nodes: int = 3,
        seed: int = 1,
        *,
        streams: bool = True,
        cluster: str | None = None,
        tags: Sequence[Sequence[str]] | None = None,
        store_dir: str = "/store",
        request_timeout_ms: int | None = None,
        configure: Callable[[int, NodeConfig], None] | None = None,
        link: SimLink | None = None,
        election_timeout_ms: int | None = None,
        heartbeat_ms: int | None = None,
        torn_writes: bool = False,
        on_log: Callable[[int, int, str], None] | None = None,
        on_apply: Callable[[int, int, int, int, bytes], None] | None = None,
        on_restore: Callable[[int, int, int], None] | None = None,
        on_step: Callable[["Sim"], None] | None = None,
        timeout_ns: int = 120 * SEC,
    ) -> None:
        self.timeout_ns = timeout_ns
        self.seed = seed
        self._streams = streams
        self._cluster = cluster
        self._tags = [list(t) for t in tags] if tags else None
        self._store_dir = store_dir
        self._request_timeout_ms = request_timeout_ms
        self._configure_user = configure
        self._keep_cfg: dict[int, list[Any]] = {}  # what node i's config points to
        self._nodes: dict[int, Node] = {}
        self._ptr: int | None = None
        self._keys: list[int] = []
        self._running = False
        self._errbufs: dict[int, ctypes.Array] = {}  # where node i's open says why it failed

        cfg = _abi.jr_sim_config()
        lib.jr_sim_config_init_size(ctypes.byref(cfg), ctypes.sizeof(cfg))
        cfg.nodes = nodes
        cfg.seed = seed
        if link is not None:
            clink = to_c(link)
            cfg.link = ctypes.pointer(clink)
        if election_timeout_ms is not None:
            cfg.election_timeout_ms = election_timeout_ms
        if heartbeat_ms is not None:
            cfg.heartbeat_ms = heartbeat_ms
        cfg.torn_writes = int(torn_writes)
        # One registry entry serves every fixture callback; the trampolines below pass it the
        # name of the callback first.
        key = reg.register(self._fixture_callback)
        self._keys.append(key)
        self._on_log = on_log
        self._on_apply = on_apply
        self._on_restore = on_restore
        self._on_step = on_step
        cfg.arg = key
        cfg.configure = _CONFIGURE
        if on_log is not None:
            cfg.on_log = _LOG
        if on_apply is not None:
            cfg.on_apply = _APPLY
        if on_restore is not None:
            cfg.on_restore = _RESTORE
        if on_step is not None:
            cfg.on_step = _STEP
        out = ctypes.c_void_p()
        rc = lib.jr_sim_new(ctypes.byref(cfg), ctypes.byref(out))
        if rc < 0:
            why = next((b.value.decode("utf-8", "replace") for b in self._errbufs.values()
                        if b.value), "")
            self._release()
            raise JetraftError.from_code(rc, why or "jr_sim_new failed")
        self._ptr = out.value
        self._raise_pending()

    # --- fixture callbacks -------------------------------------------------------------------

    def _fixture_callback(self, op: str, *args: Any) -> None:
        if op == "configure":
            self._configure_node(*args)
        elif op == "log" and self._on_log is not None:
            i, level, msg = args
            self._on_log(int(i), int(level), dec(msg) or "")
        elif op == "apply" and self._on_apply is not None:
            i, group, index, term, data, n = args
            self._on_apply(int(i), int(group), int(index), int(term),
                           ctypes.string_at(data, n) if data and n else b"")
        elif op == "restore" and self._on_restore is not None:
            i, group, index = args
            self._on_restore(int(i), int(group), int(index))
        elif op == "step" and self._on_step is not None:
            self._on_step(self)

    def _configure_node(self, i: int, cptr: Any) -> None:
        c = cptr.contents
        nc = from_c(NodeConfig, c)
        nc.streams = self._streams
        if self._cluster is not None:
            nc.cluster = self._cluster
        if self._tags is not None and i < len(self._tags):
            nc.tags = list(self._tags[i])
        if nc.store_dir is None:
            nc.store_dir = self._store_dir
        if self._request_timeout_ms is not None:
            nc.request_timeout_ms = self._request_timeout_ms
        if self._configure_user is not None:
            self._configure_user(int(i), nc)
        keep: list[Any] = []
        for name in ("cluster", "store_dir", "unique_tag"):
            b = enc(getattr(nc, name))
            keep.append(b)
            setattr(c, name, b)
        key = bytes(nc.key or b"")
        keep.append(key)
        c.key = ctypes.cast(ctypes.c_char_p(key), ctypes.c_void_p) if key else None
        c.key_len = len(key)
        arr = str_array(nc.tags)
        keep.append(arr)
        c.tags = arr
        c.ntags = len(nc.tags)
        errbuf = self._errbufs.setdefault(int(i), ctypes.create_string_buffer(512))
        errbuf.value = b""
        c.errbuf = ctypes.cast(errbuf, ctypes.c_void_p)
        c.errbuf_len = len(errbuf)
        for name in (
            "election_timeout_ms", "heartbeat_ms", "sync_policy", "sync_interval_ms",
            "max_frame_bytes", "wal_segment_bytes", "max_store_bytes", "max_assets", "streams",
            "request_timeout_ms", "max_payload", "store_block_bytes",
        ):
            setattr(c, name, int(getattr(nc, name)))
        self._keep_cfg[int(i)] = keep

    # --- lifetime ----------------------------------------------------------------------------

    @property
    def ptr(self) -> int:
        if not self._ptr:
            raise ClosedError(-14, "sim is closed")
        return self._ptr

    def _release(self) -> None:
        for k in self._keys:
            reg.release(k)
        self._keys.clear()

    def close(self) -> None:
        """Closes every node (pending requests complete with ClosedError) and frees the
        fixture."""
        if getattr(self, "_ptr", None):
            lib.jr_sim_free(self._ptr)
            self._ptr = None
        for n in self._nodes.values():
            n._invalidate()
        self._nodes.clear()
        self._release()
        self._keep_cfg.clear()

    def __enter__(self) -> "Sim":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if hasattr(self, "_keys"):  # not when __init__ failed before setting anything up
            try:
                self.close()
            except Exception:  # noqa: BLE001 - at interpreter exit the library may be gone
                pass

    def __repr__(self) -> str:
        if not self._ptr:
            return f"<Sim seed={self.seed} closed>"
        return f"<Sim {self.size} nodes seed={self.seed} at {self.now / SEC:.6f} s>"

    # --- nodes -------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return int(lib.jr_sim_size(self.ptr))

    def name(self, i: int) -> str:
        n = lib.jr_sim_name(self.ptr, i)
        if n is None:
            raise InvalidArgumentError(-1, f"no node {i}")
        return n.decode()

    def index(self, name: str) -> int:
        i = lib.jr_sim_index(self.ptr, enc(name))
        if i < 0:
            raise InvalidArgumentError(-1, f"no node called {name!r}")
        return int(i)

    def running(self, i: int) -> bool:
        return bool(lib.jr_sim_node(self.ptr, i))

    def node(self, i: int | str | None = None) -> Node:
        """Node i (an index or a name; None: the lowest-numbered running node). ClosedError if
        it is crashed."""
        if i is None:
            for j in range(self.size):
                if self.running(j):
                    return self.node(j)
            raise ClosedError(-14, "every node is down")
        if isinstance(i, str):
            i = self.index(i)
        ptr = lib.jr_sim_node(self.ptr, i)
        if not ptr:
            raise ClosedError(-14, f"node {self.name(i)} is down")
        cur = self._nodes.get(i)
        if cur is None or cur._ptr != ptr:
            if cur is not None:
                cur._invalidate()
            cur = Node(ptr)
            self._nodes[i] = cur
        return cur

    def crash(self, i: int | str) -> None:
        """Power loss of node i: its pending requests complete with ClosedError."""
        i = self.index(i) if isinstance(i, str) else i
        check(lib.jr_sim_crash(self.ptr, i), f"crash {i}")
        n = self._nodes.pop(i, None)
        if n is not None:
            n._invalidate()
        self._raise_pending()

    def restart(self, i: int | str) -> Node:
        """Reopens crashed node i over what its disk kept."""
        i = self.index(i) if isinstance(i, str) else i
        rc = lib.jr_sim_restart(self.ptr, i)
        if rc < 0:
            buf = self._errbufs.get(i)
            why = buf.value.decode("utf-8", "replace") if buf is not None else ""
            raise JetraftError.from_code(rc, why or f"restart of {self.name(i)} failed")
        self._raise_pending()
        return self.node(i)

    def add_node(self, join: bool = True) -> Node:
        """Adds a server to the running cluster (named "n<size>", an empty disk); with join it
        joins the running meta group through the servers before it."""
        index = ctypes.c_uint()
        rc = lib.jr_sim_add_node(self.ptr, int(join), ctypes.byref(index))
        if rc < 0:
            buf = self._errbufs.get(self.size())
            why = buf.value.decode("utf-8", "replace") if buf is not None else ""
            raise JetraftError.from_code(rc, why or "adding a node failed")
        self._raise_pending()
        return self.node(int(index.value))

    def pause(self, i: int, ns: int) -> None:
        check(lib.jr_sim_pause(self.ptr, i, ns))

    # --- time --------------------------------------------------------------------------------

    @property
    def now(self) -> int:
        """The simulated clock (ns; starts at 1 s)."""
        return int(lib.jr_sim_now(self.ptr))

    def wall(self, i: int) -> int:
        return int(lib.jr_sim_wall(self.ptr, i))

    def set_wall(self, i: int, wall_ns: int) -> None:
        check(lib.jr_sim_set_wall(self.ptr, i, wall_ns))

    def _raise_pending(self) -> None:
        e = reg.take_raised()
        if e is not None:
            raise e

    def _enter(self) -> None:
        """Refuses to run the fixture from inside its own run (a callback or predicate calling a
        synchronous method): the C fixture is not re-entrant."""
        if self._running:
            raise RuntimeError("the sim is already running: a callback or predicate must not "
                               "run it (use the nodes' asynchronous methods there)")
        self._running = True

    def step(self) -> bool:
        """Runs the earliest pending event; False if none."""
        self._enter()
        try:
            r = bool(lib.jr_sim_step(self.ptr))
        finally:
            self._running = False
        self._raise_pending()
        return r

    def run_for(self, ns: int) -> None:
        """Runs every event due in the next ns nanoseconds of simulated time."""
        self._enter()
        try:
            lib.jr_sim_run_for(self.ptr, ns)
        finally:
            self._running = False
        self._raise_pending()

    def run_until(self, pred: Callable[[], bool], max_ns: int | None = None) -> bool:
        """Runs events until pred() is true (True) or max_ns passed (False). pred must not
        drive the fixture itself (no synchronous calls, no run or step)."""
        key = reg.register(lambda _sim: 1 if pred() else 0)
        self._enter()
        try:
            rc = lib.jr_sim_run_until(
                self.ptr, reg.sim_pred, key, self.timeout_ns if max_ns is None else max_ns
            )
        finally:
            self._running = False
            reg.release(key)
        self._raise_pending()
        return rc == 0

    def wait(self, *pending: Pending[Any], max_ns: int | None = None) -> Any:
        """Runs until every request is done; returns the result of the one request (or a list
        of them), raising the first error. TimedOutError if they did not finish in max_ns of
        simulated time (default: the Sim's timeout_ns)."""
        if not self.run_until(lambda: all(p.done for p in pending), max_ns):
            late = [p.what for p in pending if not p.done]
            raise TimedOutError(-12, f"sim (seed {self.seed}, at {self.now / SEC:.6f} s): no answer "
                                     f"within {(max_ns or self.timeout_ns) / SEC:g} s of simulated "
                                     f"time for {', '.join(late)}")
        results = [p.result() for p in pending]
        return results[0] if len(pending) == 1 else results

    # --- network and disks -------------------------------------------------------------------

    def set_link(self, a: int, b: int, link: SimLink) -> None:
        c = to_c(link)
        check(lib.jr_sim_set_link(self.ptr, a, b, ctypes.byref(c)))

    def cut(self, a: int, b: int) -> None:
        check(lib.jr_sim_cut(self.ptr, a, b))

    def partition(self, side: Iterable[int]) -> None:
        s = list(side)
        arr = (ctypes.c_uint * len(s))(*s)
        check(lib.jr_sim_partition(self.ptr, arr, len(s)))

    def heal(self) -> None:
        lib.jr_sim_heal(self.ptr)

    def files(self, i: int) -> list[tuple[str, int]]:
        """Node i's files with their sizes, in path order."""
        out: list[tuple[str, int]] = []
        key = reg.register(lambda path, size: out.append((dec(path) or "", int(size))) or 0)
        try:
            check(lib.jr_sim_files(self.ptr, i, reg.sim_files, key))
        finally:
            reg.release(key)
        return out

    def vfs(self, i: int) -> int:
        """Node i's simulated file system (a jr_vfs pointer; it survives crashes)."""
        ptr = lib.jr_sim_vfs(self.ptr, i)
        if not ptr:
            raise InvalidArgumentError(-1, f"no node {i}")
        return int(ptr)

    def cut_tail(self, i: int, path: str, n: int) -> None:
        check(lib.jr_sim_cut_tail(self.ptr, i, enc(path), n))

    def flip_bits(self, i: int, path: str, off: int = 0, length: int = 0, nbits: int = 1) -> None:
        check(lib.jr_sim_flip_bits(self.ptr, i, enc(path), off, length, nbits))

    def zero(self, i: int, path: str, off: int, length: int) -> None:
        check(lib.jr_sim_zero(self.ptr, i, enc(path), off, length))

    def remove_file(self, i: int, path: str) -> None:
        check(lib.jr_sim_remove_file(self.ptr, i, enc(path)))

    def disk_save(self, i: int) -> SimDisk:
        out = ctypes.c_void_p()
        check(lib.jr_sim_disk_save(self.ptr, i, ctypes.byref(out)))
        return SimDisk(out.value or 0)

    def disk_restore(self, i: int, disk: SimDisk) -> None:
        check(lib.jr_sim_disk_restore(self.ptr, i, disk._ptr))

    def digest(self) -> int:
        return int(lib.jr_sim_digest(self.ptr))

    def stats(self) -> SimStats:
        out = _abi.jr_sim_stats()
        out.size = ctypes.sizeof(out)
        check(lib.jr_sim_stats_get(self.ptr, ctypes.byref(out)))
        return from_c(SimStats, out)

    # --- synchronous streams -----------------------------------------------------------------

    def stream_add(self, cfg: StreamConfig, node: int | None = None) -> None:
        self.wait(self.node(node).stream_add(cfg))

    def stream_update(self, cfg: StreamConfig, node: int | None = None) -> None:
        self.wait(self.node(node).stream_update(cfg))

    def stream_delete(self, name: str, node: int | None = None) -> None:
        self.wait(self.node(node).stream_delete(name))

    def stream_purge(self, name: str, opts: PurgeOpts | None = None,
                     node: int | None = None) -> int:
        return self.wait(self.node(node).stream_purge(name, opts))

    def msg_delete(self, name: str, seq: int, erase: bool = False,
                   node: int | None = None) -> None:
        self.wait(self.node(node).msg_delete(name, seq, erase))

    def msg_get(self, name: str, seq: int, node: int | None = None) -> StoredMsg:
        return self.wait(self.node(node).msg_get(name, seq))

    def get_last(self, name: str, subject: str, node: int | None = None) -> StoredMsg:
        return self.wait(self.node(node).get_last(name, subject))

    def get_next(self, name: str, seq: int, subject: str, node: int | None = None) -> StoredMsg:
        return self.wait(self.node(node).get_next(name, seq, subject))

    def direct_get(self, name: str, seq: int = 0, subject: str | None = None,
                   node: int | None = None) -> StoredMsg:
        return self.wait(self.node(node).direct_get(name, seq, subject))

    def stream_stepdown(self, name: str, peer: str | None = None,
                        node: int | None = None) -> None:
        self.wait(self.node(node).stream_stepdown(name, peer))

    def stream_evacuate(self, name: str, peer: str, node: int | None = None) -> None:
        self.wait(self.node(node).stream_evacuate(name, peer))

    def stream_cancel_move(self, name: str, node: int | None = None) -> None:
        self.wait(self.node(node).stream_cancel_move(name))

    def stream_info(self, name: str, node: int | None = None) -> StreamInfo:
        return self.wait(self.node(node).stream_info(name))

    def stream_names(self, subject: str | None = None, offset: int = 0,
                     node: int | None = None) -> Names:
        return self.wait(self.node(node).stream_names(subject, offset))

    def stream_list(self, subject: str | None = None, offset: int = 0,
                    node: int | None = None) -> StreamPage:
        return self.wait(self.node(node).stream_list(subject, offset))

    def stream_leader(self, name: str, node: int | None = None) -> int:
        """The index of the node leading stream name (from its info's cluster block)."""
        info = self.stream_info(name, node)
        if info.cluster is None or info.cluster.leader is None:
            raise JetraftError.from_code(-8, f"stream {name!r} has no leader")
        return self.index(info.cluster.leader)

    def publish(self, subject: str, data: bytes = b"", hdr: bytes = b"",
                opts: PubOpts | None = None, node: int | None = None, **kw: Any) -> PubAck:
        return self.wait(self.node(node).publish(subject, data, hdr, opts, **kw))

    def publish_many(self, msgs: Iterable[tuple[str, bytes]], node: int | None = None,
                     **kw: Any) -> list[PubAck]:
        """Publishes every (subject, data) at once, all in flight together; returns the acks
        in order, raising the first error."""
        n = self.node(node)
        pending = [n.publish(s, d, **kw) for s, d in msgs]
        if not pending:
            return []
        res = self.wait(*pending)
        return res if len(pending) > 1 else [res]

    # --- synchronous consumers ---------------------------------------------------------------

    def consumer_add(self, stream: str, cfg: ConsumerConfig, node: int | None = None) -> str:
        return self.wait(self.node(node).consumer_add(stream, cfg))

    def consumer_create(self, stream: str, cfg: ConsumerConfig, node: int | None = None) -> str:
        return self.wait(self.node(node).consumer_create(stream, cfg))

    def consumer_update(self, stream: str, cfg: ConsumerConfig, node: int | None = None) -> str:
        return self.wait(self.node(node).consumer_update(stream, cfg))

    def consumer_pause(self, stream: str, name: str, until_ns: int,
                       node: int | None = None) -> None:
        self.wait(self.node(node).consumer_pause(stream, name, until_ns))

    def consumer_delete(self, stream: str, name: str, node: int | None = None) -> None:
        self.wait(self.node(node).consumer_delete(stream, name))

    def consumer_info(self, stream: str, name: str, node: int | None = None) -> ConsumerInfo:
        return self.wait(self.node(node).consumer_info(stream, name))

    def consumer_names(self, stream: str, offset: int = 0, node: int | None = None) -> Names:
        return self.wait(self.node(node).consumer_names(stream, offset))

    def consumer_list(self, stream: str, offset: int = 0,
                      node: int | None = None) -> ConsumerPage:
        return self.wait(self.node(node).consumer_list(stream, offset))

    def fetch(self, stream: str, consumer: str, opts: FetchOpts | None = None,
              node: int | None = None, **kw: Any) -> Fetched:
        return self.wait(self.node(node).fetch(stream, consumer, opts, **kw))

    def ack(self, ack_token: str, kind: AckKind = AckKind.ACK, delay_ns: int = 0,
            reason: str | None = None, node: int | None = None) -> None:
        """A confirmed acknowledgement: returns once it is replicated."""
        p = self.node(node).ack(ack_token, kind, delay_ns, reason, confirm=True)
        assert p is not None
        self.wait(p)

    def ack_all(self, tokens: Iterable[str], node: int | None = None) -> None:
        """Confirmed acknowledgements of every token, all in flight together."""
        n = self.node(node)
        pending = [n.ack(t) for t in tokens]
        if pending:
            self.wait(*[p for p in pending if p is not None])

    def consumer_reset(self, stream: str, name: str, seq: int = 0,
                       node: int | None = None) -> None:
        self.wait(self.node(node).consumer_reset(stream, name, seq))

    def consumer_stepdown(self, stream: str, name: str, peer: str | None = None,
                          node: int | None = None) -> None:
        self.wait(self.node(node).consumer_stepdown(stream, name, peer))

    def consumer_unpin(self, stream: str, name: str, group: str, node: int | None = None) -> None:
        self.wait(self.node(node).consumer_unpin(stream, name, group))

    # --- synchronous cluster and health ------------------------------------------------------

    def meta_info(self, node: int | None = None) -> MetaInfo:
        return self.wait(self.node(node).meta_info())

    def meta_stepdown(self, peer: str | None = None, node: int | None = None) -> None:
        self.wait(self.node(node).meta_stepdown(peer))

    def server_peer_remove(self, server: str, node: int | None = None) -> None:
        self.wait(self.node(node).server_peer_remove(server))

    def server_evacuate(self, server: str, node: int | None = None) -> None:
        self.wait(self.node(node).server_evacuate(server))

    def server_evacuate_cancel(self, server: str, node: int | None = None) -> None:
        self.wait(self.node(node).server_evacuate_cancel(server))

    def meta_leader(self, node: int | None = None) -> int:
        """The index of the meta leader."""
        info = self.meta_info(node)
        if info.leader is None:
            raise JetraftError.from_code(-8, "no meta leader")
        return self.index(info.leader)

    def wait_meta(self, max_ns: int | None = None) -> int:
        """Runs until a meta leader knows every running server as current; returns its index."""
        deadline = self.now + (self.timeout_ns if max_ns is None else max_ns)
        while self.now < deadline:
            try:
                info = self.meta_info()
                up = sum(1 for i in range(self.size) if self.running(i))
                if info.leader and sum(1 for s in info.servers if s.current) >= up:
                    return self.index(info.leader)
            except JetraftError:
                pass
            self.run_for(50 * MS)
        raise TimedOutError(-12, "sim: no meta leader with every server current")

    def stream_check(self, stream: str, opts: CheckOpts | None = None,
                     node: int | None = None) -> CheckResult:
        return self.wait(self.node(node).stream_check(stream, opts))

    def consumer_check(self, stream: str, consumer: str, opts: CheckOpts | None = None,
                       node: int | None = None) -> CheckResult:
        return self.wait(self.node(node).consumer_check(stream, consumer, opts))

    def health(self, node: int | None = None) -> NodeHealth:
        return self.wait(self.node(node).health())
