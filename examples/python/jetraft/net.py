"""TCP peer links on asyncio: a networked host for one node per process, wire-compatible with
jetraft-server (examples/server/README.md, "Peer links").

    keys = LinkKeys.load("auth.pub", "n2.key", "n2.cert")
    host = PeerHost("n2", "C1", {"n1": ("127.0.0.1", 6222), "n2": ("127.0.0.1", 6223), ...},
                    listen=("127.0.0.1", 6223), keys=keys)
    node = host.attach(open_node("n2", host.peer_names, "/var/lib/n2/wal", host, cfg))
    await host.start()
    ack = await node.publish("orders.new", b"...")
    ...
    await host.close()                  # closes the node first (it flushes), then the links

The rules are jetraft-server's (peer.c, session_link.c):
- One TCP connection per pair of servers: the server whose name sorts first (bytewise) dials,
  the other accepts. An accepted connection is kept only if its peer is in `peers` and sorts
  before this server; a dialled one only if it proves to be the server dialled. A newer
  connection from a peer replaces its older one.
- With keys the connection's bytes are exactly one jr_link stream each way (jetraft.link.Link:
  the dialer's link has role DIALER and expect_name, the acceptor's role ACCEPTOR): the
  handshake is written as soon as the connection is up and after every feed, and each frame of
  the node's send() is one sealed record. Without keys (insecure) each side sends a hello
  frame, `jetraft-hello/1\\n<cluster>\\n<name>\\n`, then the node's frames, each behind a 4-byte
  big-endian length.
- A handshake not done within 5 s, a feed error (bad certificate, another cluster, a record that
  does not authenticate, a length over max_frame), or the end of the connection closes it; the
  dialer redials with jittered exponential backoff (50 ms doubling to 2 s, each wait drawn from
  its upper half), starting over once a link was up.
- send() never blocks and never calls back into the node: it seals the frame and hands it to
  the connection's transport, unless the transport already holds queue_bytes unsent, when the
  frame is dropped and counted (Raft retransmits what matters). No link to the peer: dropped.

Everything runs on the loop's thread; frames received are fed to Node.recv from the read path.
A jetraft-server also sends its core NATS routing frames (those starting with b"JN") on the
link; this host routes no client messages, so it counts and skips them.
"""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

from .aio import AsyncioHost
from .errors import JetraftError
from .link import Key, Link, cert_name, check_cert, from_text

HELLO_TIMEOUT = 5.0
BACKOFF_MIN_MS = 50
BACKOFF_MAX_MS = 2000
MAX_PENDING_ACCEPTS = 64
READ_SIZE = 256 << 10
PLAIN_MAGIC = b"jetraft-hello/1\n"
ROUTE_MAGIC = b"JN"  # jetraft-server's route frames (examples/server/README.md, "Routing")


class LinkRefused(Exception):
    """A peer connection was refused or ended; the message says why."""


@dataclass
class LinkKeys:
    """What a secure link proves itself with: the cluster authority's public key, this server's
    identity key pair and the certificate the authority signed for its name."""

    authority: Key
    identity: Key
    cert: bytes

    @classmethod
    def load(cls, authority: str, identity: str, certificate: str) -> "LinkKeys":
        """Reads the key tool's files (one base64 line each, `jetraft-server --keygen/--sign`),
        checking roles as jetraft-server does; ValueError names the file and the reason."""

        def read(path: str, what: str) -> bytes:
            try:
                with open(path, encoding="ascii") as f:
                    return from_text(f.read())
            except (OSError, UnicodeDecodeError, JetraftError) as e:
                raise ValueError(f"{what}: {path}: {e}") from None

        try:
            auth = Key.decode(read(authority, "authority"))
        except JetraftError as e:
            raise ValueError(f"authority: {authority}: {e}") from None
        if auth.role != Key.AUTHORITY:
            raise ValueError("authority: not an authority key")
        try:
            ident = Key.decode(read(identity, "identity"))
        except JetraftError as e:
            raise ValueError(f"identity: {identity}: {e}") from None
        if ident.role != Key.IDENTITY or not ident.has_secret:
            raise ValueError("identity: not an identity key pair (the secret key file is needed)")
        return cls(auth, ident, read(certificate, "certificate"))

    def check(self, cluster: str, name: str) -> None:
        """ValueError unless the certificate is the authority's for cluster, name and the
        identity key (what jetraft-server checks before it starts)."""
        try:
            issued = cert_name(self.cert)
            check_cert(self.cert, self.authority, cluster)
        except JetraftError:
            raise ValueError(f'certificate: not signed by this authority for this cluster '
                             f'("{cluster}")') from None
        if issued != name:
            raise ValueError(f'certificate: issued to "{issued}", not to this server ("{name}")')
        try:
            Link(Link.ACCEPTOR, self.authority, self.identity, self.cert, cluster).close()
        except JetraftError as e:
            raise ValueError(f"certificate: not issued for the identity key ({e})") from None


class SecureSession:
    """A connection's bytes as one jr_link stream each way (jetraft.link.Link)."""

    def __init__(self, keys: LinkKeys, cluster: str, expect: Optional[str], max_frame: int):
        role = Link.DIALER if expect is not None else Link.ACCEPTOR
        self.link = Link(role, keys.authority, keys.identity, keys.cert, cluster,
                         expect_name=expect, max_frame=max_frame)

    def pending_out(self) -> bytes:
        return self.link.pending_out()

    def feed(self, data: bytes) -> list[bytes]:
        try:
            frames = self.link.feed_all(data)
        except JetraftError:
            raise LinkRefused(self.link.errmsg) from None
        if self.link.state == Link.CLOSED:
            raise LinkRefused("the peer ended its stream")
        return frames

    @property
    def peer_name(self) -> Optional[str]:
        return self.link.peer_name if self.link.state == Link.OPEN else None

    def seal(self, frame: bytes) -> bytes:
        return self.link.seal(frame)

    def close(self) -> None:
        self.link.close()


class PlainSession:
    """The insecure wire: a hello frame, then frames, each behind a 4-byte big-endian length.
    Nothing is authenticated: for tests on one trusted host only."""

    def __init__(self, cluster: str, name: str, expect: Optional[str], max_frame: int):
        hello = PLAIN_MAGIC + cluster.encode() + b"\n" + name.encode() + b"\n"
        self._out = struct.pack(">I", len(hello)) + hello
        self._cluster = cluster.encode()
        self._name = name.encode()
        self._expect = expect.encode() if expect is not None else None
        self._max = max_frame
        self._buf = bytearray()
        self.peer_name: Optional[str] = None

    def pending_out(self) -> bytes:
        out, self._out = self._out, b""
        return out

    def _hello(self, f: bytes) -> None:
        if not f.startswith(PLAIN_MAGIC):
            raise LinkRefused(f"not a hello: {f[:64]!r}")
        parts = f[len(PLAIN_MAGIC):].split(b"\n")
        if len(parts) != 3 or parts[2] != b"" or not parts[1] or len(parts[1]) > 255:
            raise LinkRefused(f"malformed hello: {f[:64]!r}")
        cluster, name = parts[0], parts[1]
        if cluster != self._cluster:
            raise LinkRefused(f"a server of another cluster: {cluster[:64]!r}")
        if name == self._name:
            raise LinkRefused(f"a server with this server's name: {name!r}")
        if self._expect is not None and name != self._expect:
            raise LinkRefused(f"not the server dialled: {name[:64]!r}")
        self.peer_name = name.decode("utf-8", "replace")

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        frames, off, buf = [], 0, self._buf
        while len(buf) - off >= 4:
            (n,) = struct.unpack_from(">I", buf, off)
            if n == 0 or n > self._max:
                raise LinkRefused("bad frame length")
            if len(buf) - off - 4 < n:
                break
            f = bytes(buf[off + 4: off + 4 + n])
            off += 4 + n
            if self.peer_name is None:
                self._hello(f)
            else:
                frames.append(f)
        del buf[:off]
        return frames

    def seal(self, frame: bytes) -> bytes:
        return struct.pack(">I", len(frame)) + frame

    def close(self) -> None:
        pass


@dataclass
class PeerStats:
    """Counters of one peer's link (or of all of them)."""

    frames_sent: int = 0
    bytes_sent: int = 0
    frames_dropped: int = 0
    frames_received: int = 0
    frames_rejected: int = 0
    route_frames_ignored: int = 0
    connects: int = 0


class _Conn:
    """One TCP connection to a peer and its session."""

    def __init__(self, host: "PeerHost", reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, expect: Optional[str]) -> None:
        self.host = host
        self.reader = reader
        self.writer = writer
        self.expect = expect  # the server dialled; None for an accepted connection
        self.peer: Optional[str] = expect
        self.established = False
        self.session = host._session(expect)
        peer = writer.get_extra_info("peername")
        self.addr = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "?"

    def write(self, data: bytes) -> None:
        if data and not self.writer.is_closing():
            self.writer.write(data)

    def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()


@dataclass
class _Peer:
    name: str
    addr: tuple[str, int]
    dialer: bool  # this server dials it
    conn: Optional[_Conn] = None
    task: Optional[asyncio.Task] = None
    backoff_ms: int = 0
    stats: PeerStats = field(default_factory=PeerStats)


async def _closed(writer: asyncio.StreamWriter) -> None:
    try:
        await writer.wait_closed()
    except (ConnectionError, OSError):
        pass


class PeerHost(AsyncioHost):
    """A node's host on an asyncio loop with TCP peer links (secure with `keys`, plain with
    keys=None). attach() the node opened with this host, then `await start()`; `await close()`
    closes the node, then the links and the listener."""

    def __init__(
        self,
        name: str,
        cluster: str,
        peers: dict[str, tuple[str, int]],
        listen: tuple[str, int],
        keys: Optional[LinkKeys] = None,
        max_frame: int = 8 << 20,
        queue_bytes: int = 64 << 20,
        loop: Optional[asyncio.AbstractEventLoop] = None,
        log: Optional[Callable[[str], None]] = None,
    ) -> None:
        super().__init__(loop or asyncio.get_running_loop())
        if name not in peers:
            raise ValueError(f'peers: must list this server ("{name}")')
        self.name = name
        self.cluster = cluster
        self.listen = listen
        self.keys = keys
        self.max_frame = max_frame
        self.queue_bytes = queue_bytes
        self._log_line = log or (lambda s: print(s, file=sys.stderr, flush=True))
        me = name.encode()
        self.peers = {n: _Peer(n, a, me < n.encode()) for n, a in sorted(peers.items())
                      if n != name}
        self.peer_names = sorted(peers)
        self._server: Optional[asyncio.base_events.Server] = None
        self._pending: set[_Conn] = set()  # accepted, handshake not done
        self._conns: set[_Conn] = set()
        self._tasks: set[asyncio.Task] = set()
        self._stopping = False

    # --- the node's transport ------------------------------------------------------------

    def send(self, to: str, frame: bytes) -> bool:
        p = self.peers.get(to)
        c = p.conn if p is not None else None
        if c is None or len(frame) > self.max_frame or c.writer.is_closing():
            if p is not None:
                p.stats.frames_dropped += 1
            return False
        # the bound: what the transport holds unsent plus this record
        if c.writer.transport.get_write_buffer_size() + len(frame) > self.queue_bytes:
            p.stats.frames_dropped += 1
            return False
        try:
            c.writer.write(c.session.seal(frame))
        except (JetraftError, OSError, RuntimeError):
            p.stats.frames_dropped += 1
            return False
        p.stats.frames_sent += 1
        p.stats.bytes_sent += len(frame)
        return True

    def log(self, level: int, msg: str) -> None:
        if level <= 2:  # ERROR, WARN, INFO
            self._log_line(f"[{self.name}] {('ERROR', 'WARN', 'INFO')[level]} {msg}")

    # --- lifetime ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Listens on `listen` and starts dialling the peers that sort after this server."""
        host, port = self.listen
        self._server = await asyncio.start_server(self._accepted, host, port,
                                                  limit=READ_SIZE, reuse_address=True)
        for p in self.peers.values():
            if p.dialer:
                p.task = self._spawn(self._dial_loop(p))

    async def close(self) -> None:  # type: ignore[override]
        """Closes the node (what it still owes is written to the links), then the links and
        the listener; waits (bounded) for the connections to flush and close."""
        super().close()
        self._stopping = True
        if self._server is not None:
            self._server.close()
        # closing a transport writes what it holds first; its reader then sees the end
        conns = list(self._conns)
        for c in conns:
            c.close()
        if conns:
            await asyncio.wait([self.loop.create_task(_closed(c.writer)) for c in conns],
                               timeout=2)
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2)

    def stats(self) -> PeerStats:
        """The counters summed over the peers."""
        s = PeerStats()
        for p in self.peers.values():
            for k in s.__dataclass_fields__:
                setattr(s, k, getattr(s, k) + getattr(p.stats, k))
        return s

    def connected(self) -> list[str]:
        """The peers with a link up."""
        return [p.name for p in self.peers.values() if p.conn is not None]

    # --- connections ---------------------------------------------------------------------------

    def _session(self, expect: Optional[str]) -> "SecureSession | PlainSession":
        if self.keys is not None:
            return SecureSession(self.keys, self.cluster, expect, self.max_frame)
        return PlainSession(self.cluster, self.name, expect, self.max_frame)

    def _spawn(self, coro) -> asyncio.Task:  # type: ignore[no-untyped-def]
        t = self.loop.create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        return t

    def _say(self, msg: str) -> None:
        self._log_line(f"[{self.name}] {msg}")

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._stopping or len(self._pending) >= MAX_PENDING_ACCEPTS:
            writer.close()
            return
        t = asyncio.current_task()
        if t is not None:
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)
        await self._run(_Conn(self, reader, writer, None))

    async def _dial_loop(self, p: _Peer) -> None:
        """Dials p for as long as the host runs: a link that ends or a dial that fails is
        redialled after the jittered backoff (which starts over once a link was up)."""
        while not self._stopping:
            try:
                # the connect counts against the handshake's bound, as in jetraft-server
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(p.addr[0], p.addr[1], limit=READ_SIZE),
                    HELLO_TIMEOUT)
            except (OSError, asyncio.TimeoutError):
                pass
            else:
                await self._run(_Conn(self, reader, writer, p.name))
            if self._stopping:
                return
            b = min(BACKOFF_MAX_MS, p.backoff_ms * 2 if p.backoff_ms else BACKOFF_MIN_MS)
            p.backoff_ms = b
            await asyncio.sleep(random.uniform(b / 2, b) / 1000)

    def _establish(self, c: _Conn, name: str) -> None:
        """The session named its peer: make c the peer's link, or refuse it."""
        p = self.peers.get(name)
        if p is None:
            raise LinkRefused(f'an unknown server "{name}"')
        if c.expect is None and p.dialer:
            raise LinkRefused(f"{name} must be dialled by this server, not dial it")
        c.peer = name
        self._pending.discard(c)
        if p.conn is not None and p.conn is not c:
            old, p.conn = p.conn, None
            old.close()
        c.established = True
        p.conn = c
        p.backoff_ms = 0
        p.stats.connects += 1
        self._say(f"link to {name} up")

    async def _run(self, c: _Conn) -> None:
        """Runs one connection: handshake (bounded by HELLO_TIMEOUT), then frames to the node,
        until the connection ends or fails."""
        self._conns.add(c)
        if c.expect is None:
            self._pending.add(c)
        sock = c.writer.get_extra_info("socket")
        if sock is not None:
            # frames go out at once; a peer that vanished without a FIN is noticed
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            if hasattr(socket, "TCP_KEEPIDLE"):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 10)
        timer = self.loop.call_later(HELLO_TIMEOUT, self._hello_timeout, c)
        why = ""
        try:
            c.write(c.session.pending_out())
            while not self._stopping:
                data = await c.reader.read(READ_SIZE)
                if not data:
                    break
                frames = c.session.feed(data)
                c.write(c.session.pending_out())
                name = c.session.peer_name
                if not c.established and name is not None:
                    self._establish(c, name)
                    timer.cancel()
                if not c.established:
                    continue
                p = self.peers[c.peer or ""]
                for f in frames:
                    if p.conn is not c:  # replaced meanwhile
                        break
                    if f[:2] == ROUTE_MAGIC:  # a server's core NATS routing: not for the node
                        p.stats.route_frames_ignored += 1
                        continue
                    p.stats.frames_received += 1
                    try:
                        self.deliver(p.name, f)
                    except JetraftError:
                        p.stats.frames_rejected += 1
                    except Exception as e:  # noqa: BLE001 - a request's handler raised
                        self.loop.call_exception_handler(
                            {"message": "exception in a node callback", "exception": e})
        except LinkRefused as e:
            why = str(e)
        except (ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            timer.cancel()
            self._drop(c, why)

    def _hello_timeout(self, c: _Conn) -> None:
        if not c.established:
            self._say(f"refused a cluster connection {self._dirn(c)}: no handshake within "
                      f"{int(HELLO_TIMEOUT * 1000)} ms")
            c.close()

    def _dirn(self, c: _Conn) -> str:
        return f"to {c.expect}" if c.expect is not None else f"from {c.peer or c.addr}"

    def _drop(self, c: _Conn, why: str) -> None:
        if why:
            verb = "closed the" if c.established else "refused a"
            self._say(f"{verb} cluster connection {self._dirn(c)}: {why}")
            if c.peer in self.peers:
                self.peers[c.peer].stats.frames_rejected += 1
        self._pending.discard(c)
        self._conns.discard(c)
        p = self.peers.get(c.peer or "")
        if p is not None and p.conn is c:
            p.conn = None
            self._say(f"link to {p.name} closed")
        c.close()
        c.session.close()


__all__ = ["PeerHost", "LinkKeys", "SecureSession", "PlainSession", "LinkRefused", "PeerStats"]
