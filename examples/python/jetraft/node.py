"""Node: one libjetraft server, and Pending: a request in flight.

Every request method of Node starts the C request and returns a Pending at once; the result
arrives later, when the node's loop runs the callback (inside Node.recv/Node.tick, or inside the
sim fixture's run calls). A request the C side refuses at once raises its JetraftError right
away, with the node's errmsg. Pending.result() returns the value or raises the JetraftError the
callback reported, carrying the callback's message.

Everything a callback is handed is copied into the dataclasses of jetraft.types before the
callback returns.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Generator, Generic, Iterable, TypeVar

from . import _abi
from . import _registry as reg
from ._conv import dec, enc, from_c, str_array, to_c
from ._lib import lib
from .errors import ClosedError, JetraftError, check
from .types import (
    AckKind,
    Advisory,
    CheckOpts,
    CheckResult,
    ConsumerConfig,
    ConsumerInfo,
    ConsumerMsg,
    ConsumerPage,
    DeletedPage,
    FetchEnd,
    Fetched,
    FetchOpts,
    GroupFloor,
    GroupStatus,
    MetaInfo,
    Names,
    NodeHealth,
    NodeStats,
    PeerStatus,
    PubAck,
    PubOpts,
    PurgeOpts,
    StoredMsg,
    StreamConfig,
    StreamInfo,
    StreamPage,
    SubjectsPage,
)

T = TypeVar("T")


class Pending(Generic[T]):
    """A request in flight. Completed exactly once, by its callback (or by the node closing,
    with ClosedError)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.done = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[["Pending[T]"], None]] = []

    def __repr__(self) -> str:
        state = "pending" if not self.done else ("failed" if self._error else "done")
        return f"<Pending {self.what} {state}>"

    def _finish(self, value: Any = None, error: BaseException | None = None) -> None:
        if self.done:
            return
        self.done = True
        self._value = value
        self._error = error
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            try:
                cb(self)
            except BaseException as e:  # noqa: BLE001 - it must not unwind through C
                reg.raised.append(e)

    def _fail(self, status: int, msg: bytes | str | None, result: Any = None) -> None:
        text = msg.decode("utf-8", "replace") if isinstance(msg, bytes) else (msg or "")
        err = JetraftError.from_code(status, text)
        err.result = result
        self._finish(error=err)

    def result(self) -> T:
        """The value, or raises the error the request ended with. Raises RuntimeError while the
        request is still pending (drive the node's loop first, or use Sim.wait)."""
        if not self.done:
            raise RuntimeError(f"{self.what}: not done yet")
        if self._error is not None:
            raise self._error
        return self._value

    @property
    def error(self) -> BaseException | None:
        """The error it ended with, or None (also while pending)."""
        return self._error

    def __await__(self) -> Generator[Any, None, T]:
        """Awaits the request on the running asyncio loop, which must be the one driving its
        node (jetraft.aio.AsyncioHost): the callback resolves the future on that loop."""
        import asyncio

        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        def resolve(p: "Pending[T]") -> None:
            if fut.done():
                return
            if p._error is not None:
                fut.set_exception(p._error)
            else:
                fut.set_result(p._value)

        self.add_done_callback(resolve)
        return (yield from fut.__await__())

    def add_done_callback(self, fn: Callable[["Pending[T]"], None]) -> None:
        """Calls fn(self) when the request completes (at once if it already has): the hook an
        event-loop integration uses to resolve its own futures."""
        if self.done:
            fn(self)
        else:
            self._callbacks.append(fn)


class Subscription:
    """A push consumer's subscription: handler(msg) for each message, until close() or until
    the subscription ends (error set, e.g. NotFoundError when the consumer was deleted)."""

    def __init__(self, handler: Callable[[ConsumerMsg | None], None]) -> None:
        self.handler = handler
        self.closed = False
        self.error: JetraftError | None = None
        #: called once when the library ends the subscription (error then says why)
        self.on_end: Callable[[], None] | None = None
        self._ptr: int | None = None
        self._key = 0

    def _on_push(self, status: int, m: Any) -> bool:
        if status < 0:
            self.closed = True
            self._ptr = None
            self.error = JetraftError.from_code(status)
            if self.on_end is not None:
                self.on_end()
            return True
        self.handler(from_c(ConsumerMsg, m.contents) if m else None)  # None: idle heartbeat
        return False

    def close(self) -> None:
        """Ends the subscription: its handler is not called again."""
        if not self.closed and self._ptr:
            lib.jr_subscription_close(self._ptr)
        self.closed = True
        self._ptr = None
        reg.release(self._key)


class Node:
    """One server. A Node opened by Node.open is owned (close() closes it); a Node handed out
    by a Sim belongs to the fixture and becomes unusable when its server crashes or the Sim
    closes."""

    def __init__(self, ptr: int, *, owned: bool = False) -> None:
        self._ptr: int | None = ptr
        self._owned = owned
        self._advisory_key = 0
        self._host_key = 0
        self._keep: list[Any] = []  # what the C side points to while the node lives

    # --- lifetime ----------------------------------------------------------------------------

    @property
    def ptr(self) -> int:
        """The jr_node pointer; ClosedError once the node is closed (or crashed)."""
        if not self._ptr:
            raise ClosedError(-14, "node is closed")
        return self._ptr

    @property
    def closed(self) -> bool:
        return not self._ptr

    def _invalidate(self) -> None:
        """The node is gone (closed, or crashed in a sim): release what it kept alive."""
        self._ptr = None
        reg.release(self._advisory_key)
        self._advisory_key = 0
        reg.release(self._host_key)
        self._host_key = 0
        for g in self._keep:
            if isinstance(g, Group):
                g._forget()
        self._keep.clear()

    def close(self) -> None:
        """Closes an owned node (pending requests complete with ClosedError first). For a sim's
        node this only forgets the handle."""
        if self._ptr and self._owned:
            lib.jr_node_close(self._ptr)
        self._invalidate()

    def __enter__(self) -> "Node":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def name(self) -> str:
        return dec(lib.jr_node_name(self.ptr)) or ""

    @property
    def errmsg(self) -> str:
        """The node's message for its last error ("" if none)."""
        return (dec(lib.jr_node_errmsg(self._ptr)) or "") if self._ptr else ""

    def __repr__(self) -> str:
        return f"<Node {self.name if self._ptr else '(closed)'}>"

    # --- the loop (hosts drive these; a Sim does it itself) ----------------------------------

    def recv(self, sender: str, frame: bytes) -> None:
        """Feeds one frame received from server `sender`. What it caused is flushed (written,
        synced, answered) by the next tick(), which the node asks for at once through
        Host.arm: every frame fed before that tick shares its one write and sync."""
        check(lib.jr_node_recv(self.ptr, enc(sender), frame, len(frame)), self.errmsg)

    def tick(self) -> None:
        """Runs due timers and flushes; runs the callbacks that completed."""
        check(lib.jr_node_tick(self.ptr), self.errmsg)

    @staticmethod
    def sync_job_run(job: int) -> int:
        """Runs the WAL sync the node handed its host (jr_sync_job_run; the host's sync_start
        got the job's address): any thread, once per job. Returns 0 or a negative JR_E* for
        synced()."""
        return int(lib.jr_sync_job_run(job))

    def synced(self, job: int, rc: int) -> None:
        """On the node's thread: the job ran with result rc (jr_node_synced). What it covers
        is durable; the node lets what it vouches for leave and writes what waited."""
        check(lib.jr_node_synced(self.ptr, job, rc), self.errmsg)

    def deadline(self) -> int:
        """The now() value at which the node next needs tick(); 2**64 - 1 if none."""
        return int(lib.jr_node_deadline(self.ptr))

    def rescue(self, gone: str) -> None:
        """UNSAFE operator call (jr_node_rescue): every group of this server waiting for `gone`,
        a server lost for good, stops waiting for it; what only it and a damaged replica held
        may be lost."""
        check(lib.jr_node_rescue(self.ptr, enc(gone)), f"rescue of {gone}")

    def stats(self) -> NodeStats:
        out = _abi.jr_node_stats()
        out.size = ctypes.sizeof(out)
        check(lib.jr_node_stats_get(self.ptr, ctypes.byref(out)))
        return from_c(NodeStats, out)

    # --- plumbing ----------------------------------------------------------------------------

    def _start(
        self,
        handler: Callable[..., bool],
        call: Callable[[int], int],
        pending: Pending[Any],
    ) -> Pending[Any]:
        """Registers handler, starts the request with call(key) and returns pending; a request
        the C side refused is released and raised at once."""
        key = reg.register(handler)
        try:
            rc = call(key)
        except BaseException:
            reg.release(key)
            raise
        if rc < 0:
            reg.release(key)
            raise JetraftError.from_code(rc, self.errmsg)
        return pending

    def _simple(self, what: str, call: Callable[[int], int], value: Any = None) -> Pending[None]:
        """A request completed by a jr_stream_cb (status and message)."""
        p: Pending[None] = Pending(what)

        def done(status: int, msg: bytes | None) -> bool:
            if status < 0:
                p._fail(status, msg)
            else:
                p._finish(value)
            return True

        return self._start(done, call, p)

    def _with(self, what: str, cls: type, call: Callable[[int], int]) -> Pending[Any]:
        """A request completed by a (status, msg, const T *) callback: copies *T into cls."""
        p: Pending[Any] = Pending(what)

        def done(status: int, msg: bytes | None, ptr: Any) -> bool:
            if status < 0:
                p._fail(status, msg, from_c(cls, ptr.contents) if ptr else None)
            else:
                p._finish(from_c(cls, ptr.contents) if ptr else None)
            return True

        return self._start(done, call, p)

    # --- streams -----------------------------------------------------------------------------

    def stream_add(self, cfg: StreamConfig) -> Pending[None]:
        """Creates a stream (idempotent for an identical config; ExistsError otherwise)."""
        c = to_c(cfg)
        return self._simple(
            f"stream add {cfg.name}",
            lambda k: lib.jr_stream_add(self.ptr, ctypes.byref(c), reg.stream_cb, k),
        )

    def stream_create(self, cfg: StreamConfig) -> Pending[bool]:
        """As stream_add; the result says whether this request created the stream (False: it
        existed with an identical config)."""
        c = to_c(cfg)
        p: Pending[bool] = Pending(f"stream create {cfg.name}")

        def done(status: int, msg: bytes | None, created: int) -> bool:
            if status < 0:
                p._fail(status, msg)
            else:
                p._finish(bool(created))
            return True

        return self._start(
            done, lambda k: lib.jr_stream_create(self.ptr, ctypes.byref(c), reg.create_cb, k), p
        )

    def stream_update(self, cfg: StreamConfig) -> Pending[None]:
        """Changes stream cfg.name's config (replicas, placement, limits, ...)."""
        c = to_c(cfg)
        return self._simple(
            f"stream update {cfg.name}",
            lambda k: lib.jr_stream_update(self.ptr, ctypes.byref(c), reg.stream_cb, k),
        )

    def stream_delete(self, name: str) -> Pending[None]:
        return self._simple(
            f"stream delete {name}",
            lambda k: lib.jr_stream_delete(self.ptr, enc(name), reg.stream_cb, k),
        )

    def stream_purge(self, name: str, opts: PurgeOpts | None = None) -> Pending[int]:
        """Purges a stream (opts None: everything); the result is how many were removed."""
        c = to_c(opts) if opts is not None else None
        p: Pending[int] = Pending(f"stream purge {name}")

        def done(status: int, msg: bytes | None, purged: int) -> bool:
            if status < 0:
                p._fail(status, msg)
            else:
                p._finish(int(purged))
            return True

        return self._start(
            done,
            lambda k: lib.jr_stream_purge(
                self.ptr, enc(name), ctypes.byref(c) if c is not None else None, reg.purge_cb, k
            ),
            p,
        )

    def msg_delete(self, name: str, seq: int, erase: bool = False) -> Pending[None]:
        return self._simple(
            f"msg delete {name} {seq}",
            lambda k: lib.jr_stream_msg_delete(
                self.ptr, enc(name), seq, int(erase), reg.stream_cb, k
            ),
        )

    def msg_get(self, name: str, seq: int) -> Pending[StoredMsg]:
        """Reads message seq at the stream leader (linearizable)."""
        return self._with(
            f"msg get {name} {seq}",
            StoredMsg,
            lambda k: lib.jr_stream_msg_get(self.ptr, enc(name), seq, reg.msg_cb, k),
        )

    def get_last(self, name: str, subject: str) -> Pending[StoredMsg]:
        """Reads the newest message on subject (or pattern) at the stream leader."""
        return self._with(
            f"get last {name} {subject}",
            StoredMsg,
            lambda k: lib.jr_stream_get_last(self.ptr, enc(name), enc(subject), reg.msg_cb, k),
        )

    def get_next(self, name: str, seq: int, subject: str) -> Pending[StoredMsg]:
        """Reads the first message at or after seq on subject (or pattern) at the stream
        leader."""
        return self._with(
            f"get next {name} {seq} {subject}",
            StoredMsg,
            lambda k: lib.jr_stream_get_next(
                self.ptr, enc(name), seq, enc(subject), reg.msg_cb, k
            ),
        )

    def direct_get(
        self, name: str, seq: int = 0, subject: str | None = None
    ) -> Pending[StoredMsg]:
        """Reads at any current replica of a stream with allow_direct (not linearizable)."""
        return self._with(
            f"direct get {name}",
            StoredMsg,
            lambda k: lib.jr_stream_direct_get(
                self.ptr, enc(name), seq, enc(subject), reg.msg_cb, k
            ),
        )

    def stream_stepdown(self, name: str, peer: str | None = None) -> Pending[None]:
        """Moves the stream's leadership to peer (or the best caught-up voter)."""
        return self._simple(
            f"stream stepdown {name}",
            lambda k: lib.jr_stream_stepdown(self.ptr, enc(name), enc(peer), reg.stream_cb, k),
        )

    def stream_evacuate(self, name: str, peer: str) -> Pending[None]:
        """Moves the stream's replica off server `peer` onto another that qualifies (the
        replacement catches up first); PeerRemapError when none does, and nothing moves."""
        return self._simple(
            f"stream evacuate {name}",
            lambda k: lib.jr_stream_evacuate(self.ptr, enc(name), enc(peer), reg.stream_cb, k),
        )

    def stream_cancel_move(self, name: str) -> Pending[None]:
        """Returns a peer change in progress to where it started (NoChangeError if none)."""
        return self._simple(
            f"stream cancel move {name}",
            lambda k: lib.jr_stream_cancel_move(self.ptr, enc(name), reg.stream_cb, k),
        )

    def stream_info(self, name: str) -> Pending[StreamInfo]:
        """Config (normal form), state and cluster block, from the stream leader."""
        return self._with(
            f"stream info {name}",
            StreamInfo,
            lambda k: lib.jr_stream_info_get(self.ptr, enc(name), reg.stream_info_cb, k),
        )

    def stream_names(self, subject: str | None = None, offset: int = 0) -> Pending[Names]:
        return self._with(
            "stream names",
            Names,
            lambda k: lib.jr_stream_names(self.ptr, enc(subject), offset, reg.names_cb, k),
        )

    def stream_subjects(self, name: str, filter: str | None = None,
                        offset: int = 0) -> Pending[SubjectsPage]:
        """A page of the stream's subjects matching filter with their message counts, from
        offset in bytewise order."""
        p: Pending[SubjectsPage] = Pending(f"stream subjects {name}")

        def done(status: int, msg: bytes | None, page: Any) -> bool:
            if status < 0:
                p._fail(status, msg)
            else:
                pg = page.contents
                subjects = {dec(pg.subjects[i].subject) or "": int(pg.subjects[i].msgs)
                            for i in range(pg.nsubjects)}
                p._finish(SubjectsPage(int(pg.total), int(pg.offset), subjects))
            return True

        return self._start(
            done,
            lambda k: lib.jr_stream_subjects(self.ptr, enc(name), enc(filter), offset,
                                             reg.subjects_cb, k),
            p,
        )

    def stream_deleted(self, name: str, after: int = 0) -> Pending[DeletedPage]:
        """A page of the seqs deleted between the stream's first and last message, as
        (first, last) ranges ending above `after`."""
        p: Pending[DeletedPage] = Pending(f"stream deleted {name}")

        def done(status: int, msg: bytes | None, page: Any) -> bool:
            if status < 0:
                p._fail(status, msg)
            else:
                pg = page.contents
                ranges = [(int(pg.ranges[i].first), int(pg.ranges[i].last))
                          for i in range(pg.nranges)]
                p._finish(DeletedPage(int(pg.total), ranges))
            return True

        return self._start(
            done,
            lambda k: lib.jr_stream_deleted(self.ptr, enc(name), after, reg.deleted_cb, k),
            p,
        )

    def stream_list(self, subject: str | None = None, offset: int = 0) -> Pending[StreamPage]:
        return self._with(
            "stream list",
            StreamPage,
            lambda k: lib.jr_stream_list(self.ptr, enc(subject), offset, reg.stream_page_cb, k),
        )

    def publish(
        self,
        subject: str,
        data: bytes = b"",
        hdr: bytes = b"",
        opts: PubOpts | None = None,
        **kw: Any,
    ) -> Pending[PubAck]:
        """Publishes data (and a NATS header block) to the stream capturing subject. Options
        come as a PubOpts or as its fields (msg_id="…", expected_last_seq=…). The result is
        the PubAck once the message is committed; an error carries the ack as err.result."""
        if kw:
            opts = PubOpts(**kw) if opts is None else PubOpts(**{**opts.__dict__, **kw})
        c = to_c(opts) if opts is not None else None
        data = bytes(data)
        hdr = bytes(hdr)
        p: Pending[PubAck] = Pending(f"publish {subject}")

        def done(status: int, ack: Any) -> bool:
            a = from_c(PubAck, ack.contents) if ack else None
            if status < 0:
                p._fail(status, a.msg if a else "", a)
            else:
                p._finish(a)
            return True

        return self._start(
            done,
            lambda k: lib.jr_publish(
                self.ptr, enc(subject), hdr or None, len(hdr), data or None, len(data),
                ctypes.byref(c) if c is not None else None, reg.publish_cb, k,
            ),
            p,
        )

    # --- consumers ---------------------------------------------------------------------------

    def _consumer_call(self, fn: Any, what: str, stream: str, cfg: ConsumerConfig) -> Pending[str]:
        c = to_c(cfg)
        p: Pending[str] = Pending(what)

        def done(status: int, msg: bytes | None, name: bytes | None) -> bool:
            if status < 0:
                p._fail(status, msg)
            else:
                p._finish(dec(name))
            return True

        return self._start(
            done, lambda k: fn(self.ptr, enc(stream), ctypes.byref(c), reg.consumer_cb, k), p
        )

    def consumer_add(self, stream: str, cfg: ConsumerConfig) -> Pending[str]:
        """Creates or updates a consumer; the result is its name (generated for an ephemeral)."""
        return self._consumer_call(lib.jr_consumer_add, f"consumer add {stream}", stream, cfg)

    def consumer_create(self, stream: str, cfg: ConsumerConfig) -> Pending[str]:
        """As consumer_add, but ExistsError for an existing consumer with another config."""
        return self._consumer_call(
            lib.jr_consumer_create, f"consumer create {stream}", stream, cfg
        )

    def consumer_update(self, stream: str, cfg: ConsumerConfig) -> Pending[str]:
        """As consumer_add, but NotFoundError for a missing consumer."""
        return self._consumer_call(
            lib.jr_consumer_update, f"consumer update {stream}", stream, cfg
        )

    def consumer_pause(self, stream: str, name: str, until_ns: int) -> Pending[None]:
        return self._simple(
            f"consumer pause {stream} {name}",
            lambda k: lib.jr_consumer_pause(
                self.ptr, enc(stream), enc(name), until_ns, reg.stream_cb, k
            ),
        )

    def consumer_delete(self, stream: str, name: str) -> Pending[None]:
        return self._simple(
            f"consumer delete {stream} {name}",
            lambda k: lib.jr_consumer_delete(self.ptr, enc(stream), enc(name), reg.stream_cb, k),
        )

    def consumer_info(self, stream: str, name: str) -> Pending[ConsumerInfo]:
        return self._with(
            f"consumer info {stream} {name}",
            ConsumerInfo,
            lambda k: lib.jr_consumer_info_get(
                self.ptr, enc(stream), enc(name), reg.consumer_info_cb, k
            ),
        )

    def consumer_names(self, stream: str, offset: int = 0) -> Pending[Names]:
        return self._with(
            f"consumer names {stream}",
            Names,
            lambda k: lib.jr_consumer_names(self.ptr, enc(stream), offset, reg.names_cb, k),
        )

    def consumer_list(self, stream: str, offset: int = 0) -> Pending[ConsumerPage]:
        return self._with(
            f"consumer list {stream}",
            ConsumerPage,
            lambda k: lib.jr_consumer_list(self.ptr, enc(stream), offset, reg.consumer_page_cb, k),
        )

    def _fetch_handler(
        self, p: Pending[Fetched], on_message: Callable[[ConsumerMsg], None] | None
    ) -> Callable[..., bool]:
        got = Fetched()

        def each(status: int, msg: bytes | None, m: Any, end: Any) -> bool:
            if status < 0:
                p._fail(status, msg, got)
                return True
            if m:
                cm = from_c(ConsumerMsg, m.contents)
                got.msgs.append(cm)
                if on_message is not None:
                    on_message(cm)
                return False
            if not end:  # an idle heartbeat
                got.heartbeats += 1
                return False
            got.end = from_c(FetchEnd, end.contents)
            p._finish(got)
            return True

        return each

    def fetch(
        self,
        stream: str,
        consumer: str,
        opts: FetchOpts | None = None,
        on_message: Callable[[ConsumerMsg], None] | None = None,
        **kw: Any,
    ) -> Pending[Fetched]:
        """Fetches from a pull consumer (options as a FetchOpts or its fields, e.g. batch=10).
        on_message(msg) is called for each message as it arrives; the result is every message
        and how the fetch ended."""
        if kw:
            opts = FetchOpts(**kw) if opts is None else FetchOpts(**{**opts.__dict__, **kw})
        c = to_c(opts) if opts is not None else None
        p: Pending[Fetched] = Pending(f"fetch {stream} {consumer}")
        return self._start(
            self._fetch_handler(p, on_message),
            lambda k: lib.jr_consumer_fetch(
                self.ptr, enc(stream), enc(consumer),
                ctypes.byref(c) if c is not None else None, reg.fetch_cb, k,
            ),
            p,
        )

    def ack_next(
        self,
        ack_token: str,
        opts: FetchOpts | None = None,
        on_message: Callable[[ConsumerMsg], None] | None = None,
    ) -> Pending[Fetched]:
        """JetStream's +NXT: acknowledges ack_token and fetches from the same consumer."""
        c = to_c(opts) if opts is not None else None
        p: Pending[Fetched] = Pending("ack next")
        return self._start(
            self._fetch_handler(p, on_message),
            lambda k: lib.jr_consumer_ack_next(
                self.ptr, enc(ack_token), ctypes.byref(c) if c is not None else None,
                reg.fetch_cb, k,
            ),
            p,
        )

    def ack(
        self,
        ack_token: str,
        kind: AckKind = AckKind.ACK,
        delay_ns: int = 0,
        reason: str | None = None,
        confirm: bool = True,
    ) -> Pending[None] | None:
        """Acknowledges a delivery (ACK, NAK after delay_ns, PROGRESS, TERM). With confirm the
        result comes once the ack is replicated (NotFoundError if the message is not pending);
        without, it is fire and forget and None is returned."""
        if not confirm:
            check(
                lib.jr_consumer_ack(self.ptr, enc(ack_token), int(kind), delay_ns, enc(reason),
                                    _abi.stream_fn(), None),
                self.errmsg,
            )
            return None
        return self._simple(
            "ack",
            lambda k: lib.jr_consumer_ack(
                self.ptr, enc(ack_token), int(kind), delay_ns, enc(reason), reg.stream_cb, k
            ),
        )

    def consumer_reset(self, stream: str, name: str, seq: int = 0) -> Pending[None]:
        return self._simple(
            f"consumer reset {stream} {name}",
            lambda k: lib.jr_consumer_reset(self.ptr, enc(stream), enc(name), seq, reg.stream_cb, k),
        )

    def consumer_stepdown(self, stream: str, name: str, peer: str | None = None) -> Pending[None]:
        return self._simple(
            f"consumer stepdown {stream} {name}",
            lambda k: lib.jr_consumer_stepdown(
                self.ptr, enc(stream), enc(name), enc(peer), reg.stream_cb, k
            ),
        )

    def consumer_evacuate(self, stream: str, name: str, peer: str) -> Pending[None]:
        return self._simple(
            f"consumer evacuate {stream} {name}",
            lambda k: lib.jr_consumer_evacuate(
                self.ptr, enc(stream), enc(name), enc(peer), reg.stream_cb, k
            ),
        )

    def consumer_cancel_move(self, stream: str, name: str) -> Pending[None]:
        return self._simple(
            f"consumer cancel move {stream} {name}",
            lambda k: lib.jr_consumer_cancel_move(self.ptr, enc(stream), enc(name), reg.stream_cb,
                                                  k),
        )

    def consumer_unpin(self, stream: str, name: str, group: str) -> Pending[None]:
        return self._simple(
            f"consumer unpin {stream} {name}",
            lambda k: lib.jr_consumer_unpin(
                self.ptr, enc(stream), enc(name), enc(group), reg.stream_cb, k
            ),
        )

    def subscribe(
        self, stream: str, consumer: str, handler: Callable[[ConsumerMsg | None], None]
    ) -> Subscription:
        """Subscribes to a push consumer: handler(msg) per message, handler(None) per idle
        heartbeat, until Subscription.close() or the subscription's end."""
        sub = Subscription(handler)
        sub._key = reg.register(sub._on_push)
        out = ctypes.c_void_p()
        rc = lib.jr_consumer_subscribe(
            self.ptr, enc(stream), enc(consumer), reg.push_cb, sub._key, ctypes.byref(out)
        )
        if rc < 0:
            reg.release(sub._key)
            raise JetraftError.from_code(rc, self.errmsg)
        sub._ptr = out.value
        return sub

    def set_advisory_handler(self, handler: Callable[[Advisory], None] | None) -> None:
        """handler(advisory) for every consumer advisory this node raises (None: none)."""
        old = self._advisory_key
        if handler is None:
            check(lib.jr_consumer_advisories(self.ptr, _abi.advisory_fn(), None))
            self._advisory_key = 0
        else:

            def each(adv: Any) -> bool:
                handler(from_c(Advisory, adv.contents))
                return False

            key = reg.register(each)
            rc = lib.jr_consumer_advisories(self.ptr, reg.advisory_cb, key)
            if rc < 0:
                reg.release(key)
                raise JetraftError.from_code(rc, self.errmsg)
            self._advisory_key = key
        reg.release(old)

    # --- cluster and health ------------------------------------------------------------------

    def meta_info(self) -> Pending[MetaInfo]:
        """The cluster as the meta leader sees it. Without a meta leader it fails with
        NoLeaderError whose .result is this node's own view."""
        return self._with(
            "meta info", MetaInfo, lambda k: lib.jr_meta_info_get(self.ptr, reg.meta_info_cb, k)
        )

    def meta_stepdown(self, peer: str | None = None) -> Pending[None]:
        return self._simple(
            "meta stepdown",
            lambda k: lib.jr_meta_stepdown(self.ptr, enc(peer), reg.stream_cb, k),
        )

    def server_peer_remove(self, server: str) -> Pending[None]:
        """Removes a server that is gone for good from the cluster; done once the removal
        committed (BusyError while another one is in flight)."""
        return self._simple(
            "server peer remove",
            lambda k: lib.jr_server_peer_remove(self.ptr, enc(server), reg.stream_cb, k),
        )

    def server_evacuate(self, server: str) -> Pending[None]:
        """Drains a server: no new placement picks it and the meta leader moves its stream
        and consumer replicas off (MetaInfo servers' draining/remaining/unplaced show
        progress); done once the drain committed."""
        return self._simple(
            "server evacuate",
            lambda k: lib.jr_server_evacuate(self.ptr, enc(server), reg.stream_cb, k),
        )

    def server_evacuate_cancel(self, server: str) -> Pending[None]:
        """Ends a drain: the server takes placements again (NoChangeError if it was not
        draining)."""
        return self._simple(
            "server evacuate cancel",
            lambda k: lib.jr_server_evacuate_cancel(self.ptr, enc(server), reg.stream_cb, k),
        )

    def _check(self, what: str, call: Callable[[int], int]) -> Pending[CheckResult]:
        p: Pending[CheckResult] = Pending(what)

        def done(status: int, msg: bytes | None, res: Any) -> bool:
            r = from_c(CheckResult, res.contents) if res else None
            if r is not None:
                # an error is a critical result: it is the answer, the error says why
                r.error = JetraftError.from_code(status, dec(msg) or "") if status < 0 else None
                p._finish(r)
            else:
                p._fail(status, msg)
            return True

        return self._start(done, call, p)

    def stream_check(self, stream: str, opts: CheckOpts | None = None) -> Pending[CheckResult]:
        """Judges a stream's replicas as `nats server check stream` does."""
        c = to_c(opts) if opts is not None else None
        return self._check(
            f"stream check {stream}",
            lambda k: lib.jr_stream_check(
                self.ptr, enc(stream), ctypes.byref(c) if c is not None else None, reg.check_cb, k
            ),
        )

    def consumer_check(
        self, stream: str, consumer: str, opts: CheckOpts | None = None
    ) -> Pending[CheckResult]:
        c = to_c(opts) if opts is not None else None
        return self._check(
            f"consumer check {stream} {consumer}",
            lambda k: lib.jr_consumer_check(
                self.ptr, enc(stream), enc(consumer), ctypes.byref(c) if c is not None else None,
                reg.check_cb, k,
            ),
        )

    def health(self) -> Pending[NodeHealth]:
        """This node's health as JetStream's /healthz sees it."""
        return self._with(
            "health", NodeHealth, lambda k: lib.jr_node_health(self.ptr, reg.node_health_cb, k)
        )

    # --- raw groups --------------------------------------------------------------------------

    def group_open(
        self,
        group_id: int,
        voters: Iterable[str],
        fsm: "Fsm",
        snapshot_entries: int | None = None,
        join: GroupFloor | None = None,
    ) -> "Group":
        """Creates (or reopens after a restart) raw Raft group group_id with state machine fsm."""
        return Group._open(self, group_id, list(voters), fsm, snapshot_entries, join)

    def group(self, group_id: int) -> "Group | None":
        """The open group group_id (jr_node_group), as opened through this Node; None if the
        node has no such group open."""
        ptr = lib.jr_node_group(self.ptr, group_id)
        if not ptr:
            return None
        return next((g for g in self._keep if isinstance(g, Group) and g._ptr == ptr), None)


class Fsm:
    """A raw group's state machine. Subclass and override apply; snapshot and restore are
    optional (without snapshot the group never compacts its log)."""

    def apply(self, index: int, data: bytes) -> None:
        raise NotImplementedError

    def snapshot(self) -> bytes | None:
        """The state as of the last applied index, or None for "no snapshot support"."""
        return None

    def restore(self, index: int, data: bytes) -> None:
        raise NotImplementedError


class Group:
    """A raw Raft group replicating a Python Fsm."""

    def __init__(self, node: Node, group_id: int, fsm: Fsm) -> None:
        self.node = node
        self.id = group_id
        self.fsm = fsm
        self._ptr: int | None = None
        self._key = 0
        self._cfsm: _abi.jr_fsm | None = None

    @classmethod
    def _open(
        cls,
        node: Node,
        group_id: int,
        voters: list[str],
        fsm: Fsm,
        snapshot_entries: int | None,
        join: GroupFloor | None,
    ) -> "Group":
        g = cls(node, group_id, fsm)
        has_snapshot = type(fsm).snapshot is not Fsm.snapshot

        def call(op: str, *args: Any) -> int:
            if op == "apply":
                index, data, n = args
                fsm.apply(int(index), ctypes.string_at(data, n) if data and n else b"")
                return 0
            if op == "snapshot":
                (writer,) = args
                blob = fsm.snapshot() or b""
                return int(lib.jr_snapshot_write(writer, blob, len(blob))) if blob else 0
            index, data, n = args
            fsm.restore(int(index), ctypes.string_at(data, n) if data and n else b"")
            return 0

        g._key = reg.register(call)
        cf = _abi.jr_fsm()
        cf.version = _abi.CONSTANTS["JR_FSM_VERSION"]
        # one immortal trampoline per op; each passes its op name to the group's registry entry
        cf.apply = _FSM_APPLY
        if has_snapshot:
            cf.snapshot = _FSM_SNAPSHOT
            cf.restore = _FSM_RESTORE
        cf.ctx = g._key
        g._cfsm = cf
        cfg = _abi.jr_group_config()
        lib.jr_group_config_init_size(ctypes.byref(cfg), ctypes.sizeof(cfg))
        cfg.id = group_id
        arr = str_array(voters)
        cfg.voters = arr
        cfg.nvoters = len(voters)
        cfg.fsm = ctypes.pointer(cf)
        if snapshot_entries is not None:
            cfg.snapshot_entries = snapshot_entries
        if join is not None:
            cfg.join = ctypes.pointer(to_c(join))
        out = ctypes.c_void_p()
        rc = lib.jr_group_open(node.ptr, ctypes.byref(cfg), ctypes.byref(out))
        if rc < 0:
            reg.release(g._key)
            raise JetraftError.from_code(rc, node.errmsg)
        g._ptr = out.value
        node._keep.append(g)
        return g

    @property
    def ptr(self) -> int:
        if not self._ptr or self.node.closed:
            raise ClosedError(-14, "group is closed")
        return self._ptr

    def close(self) -> None:
        """Closes the local replica (its data stays); pending callbacks complete with
        ClosedError at the node's next tick."""
        if self._ptr and not self.node.closed:
            lib.jr_group_close(self._ptr)
        self._forget()

    def _forget(self) -> None:
        """The group is closed (or its node is gone): its fsm is not called again."""
        self._ptr = None
        reg.release(self._key)
        self._key = 0

    def propose(self, data: bytes) -> Pending[int]:
        """Proposes data; the result is the entry's index once committed and applied here."""
        p: Pending[int] = Pending(f"propose to group {self.id}")

        def done(status: int, index: int) -> bool:
            if status < 0:
                p._fail(status, "")
            else:
                p._finish(int(index))
            return True

        data = bytes(data)
        return self.node._start(
            done,
            lambda k: lib.jr_group_propose(self.ptr, data or None, len(data), reg.propose_cb, k),
            p,
        )

    def _done(self, what: str, fn: Any, peer: str | None) -> Pending[None]:
        p: Pending[None] = Pending(what)

        def done(status: int) -> bool:
            if status < 0:
                p._fail(status, "")
            else:
                p._finish(None)
            return True

        return self.node._start(done, lambda k: fn(self.ptr, enc(peer), reg.done_cb, k), p)

    def transfer(self, to: str | None = None) -> Pending[None]:
        return self._done("transfer", lib.jr_group_transfer, to)

    def add_observer(self, peer: str) -> Pending[None]:
        return self._done("add observer", lib.jr_group_add_observer, peer)

    def promote(self, peer: str) -> Pending[None]:
        return self._done("promote", lib.jr_group_promote, peer)

    def remove(self, peer: str) -> Pending[None]:
        return self._done("remove", lib.jr_group_remove, peer)

    @property
    def leader(self) -> str | None:
        return dec(lib.jr_group_leader(self.ptr))

    def rescue(self, gone: str) -> None:
        """UNSAFE operator call (jr_group_rescue) for this group alone: see Node.rescue."""
        check(lib.jr_group_rescue(self.ptr, enc(gone)), f"rescue of {gone}")

    def status(self) -> GroupStatus:
        out = _abi.jr_group_status()
        out.size = ctypes.sizeof(out)
        check(lib.jr_group_status_get(self.ptr, ctypes.byref(out)))
        return from_c(GroupStatus, out)

    def peers(self) -> list[PeerStatus]:
        res = []
        for i in range(self.status().npeers):
            out = _abi.jr_peer_status()
            out.size = ctypes.sizeof(out)
            check(lib.jr_group_peer(self.ptr, i, ctypes.byref(out)))
            res.append(from_c(PeerStatus, out))
        return res

    def floor(self) -> GroupFloor:
        out = _abi.jr_group_floor()
        out.size = ctypes.sizeof(out)
        check(lib.jr_group_floor_get(self.ptr, ctypes.byref(out)))
        return from_c(GroupFloor, out)


def _fsm_trampoline(fntype: Any, op: str) -> Any:
    def tramp(ctx: int | None, *args: Any) -> Any:
        return reg._call_value(ctx, op, *args)

    return fntype(tramp)


# immortal, like the registry's trampolines
_FSM_APPLY = _fsm_trampoline(_abi.fsm_apply_fn, "apply")
_FSM_SNAPSHOT = _fsm_trampoline(_abi.fsm_snapshot_fn, "snapshot")
_FSM_RESTORE = _fsm_trampoline(_abi.fsm_restore_fn, "restore")
